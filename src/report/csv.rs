//! CSV: one line per result row. The figures of a row are in its `unit` column (`ns`, `bytes`
//! or `count`); the fit's columns name their own units (a fit is made of timed rows only). A sweep's fit row gives the chosen
//! model's fixed cost and its cost per byte at the largest sizes (beyond `fit_breakpoint_bytes`
//! when two segments were chosen, else empty), and the single line's R².

use crate::model::RunFile;

/// The rows of `run` as CSV text.
pub fn render(run: &RunFile) -> String {
    render_csv(run).expect("CSV into memory cannot fail")
}

fn render_csv(run: &RunFile) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "id",
        "params",
        "unit",
        "status",
        "verdict",
        "flags",
        "n",
        "iterations_per_sample",
        "median",
        "median_ci95_lo",
        "median_ci95_hi",
        "mean",
        "mean_ci95_lo",
        "mean_ci95_hi",
        "rounds",
        "dropped",
        "min",
        "p99",
        "stddev",
        "cycles_median",
        "fit_fixed_ns",
        "fit_ns_per_byte",
        "fit_r_squared",
        "fit_breakpoint_bytes",
        "derived",
        "derived_ci95_lo",
        "derived_ci95_hi",
        "reason",
        "run_partial",
    ])?;
    for r in &run.results {
        let s = r.summary.as_ref();
        let num = |f: fn(&crate::model::Summary) -> f64| s.map(|s| f(s).to_string()).unwrap_or_default();
        let flags: Vec<&str> = r.flags.iter().map(|f| f.label()).collect();
        w.write_record([
            r.id.clone(),
            serde_json::to_string(&r.params).unwrap_or_default(),
            r.unit.symbol().to_string(),
            format!("{:?}", r.status).to_lowercase(),
            format!("{:?}", r.validation.verdict).to_lowercase(),
            flags.join(" "),
            s.map(|s| s.n.to_string()).unwrap_or_default(),
            r.iterations_per_sample.to_string(),
            num(|s| s.median),
            num(|s| s.median_ci95[0]),
            num(|s| s.median_ci95[1]),
            num(|s| s.mean),
            num(|s| s.mean_ci95[0]),
            num(|s| s.mean_ci95[1]),
            r.samples_per_round.len().to_string(),
            s.and_then(|s| s.structure.as_ref()).map(|st| st.dropped.to_string()).unwrap_or_default(),
            num(|s| s.min),
            num(|s| s.p99),
            num(|s| s.stddev),
            r.cycles.as_ref().map(|c| c.median.to_string()).unwrap_or_default(),
            r.fit.as_ref().map(|f| f.fixed_ns().0.to_string()).unwrap_or_default(),
            r.fit.as_ref().map(|f| f.per_byte_ns().0.to_string()).unwrap_or_default(),
            r.fit.as_ref().map(|f| f.line.r_squared.to_string()).unwrap_or_default(),
            r.fit
                .as_ref()
                .and_then(|f| f.chosen_segments())
                .map(|s| s.breakpoint_bytes.to_string())
                .unwrap_or_default(),
            r.derived.as_ref().map(|d| d.estimate.point.to_string()).unwrap_or_default(),
            r.derived.as_ref().map(|d| d.estimate.ci95[0].to_string()).unwrap_or_default(),
            r.derived.as_ref().map(|d| d.estimate.ci95[1].to_string()).unwrap_or_default(),
            r.reason.clone().unwrap_or_default(),
            run.partial.to_string(),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
