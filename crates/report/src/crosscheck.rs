//! `osprim crosscheck`: per primitive, the peer tool's figure before and after osprim's,
//! osprim's figure of the same statistic, the ratio with its 95 % interval (`1.05 [0.99,
//! 1.12]`) and what it says (within ±10 %, beyond, inconclusive), and its flags. Formats only.

use super::escape::Md;
use super::layout::{Align, Cell, Grid, Line, Style, flow};
use super::{Format, View};
use model::Unit;
use model::crosscheck::{Agreement, Comparison, CrossRow, Crosscheck, Outcome, TOLERANCE};

/// The crosscheck in `format` (LaTeX falls back to Markdown).
pub fn render(c: &Crosscheck, format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(c)? + "\n",
        Format::Csv => csv_text(c),
        Format::Markdown | Format::Latex => markdown(c),
        Format::Table => table(c, view),
    })
}

fn ns(v: f64) -> String {
    Unit::Ns.format(v)
}

/// The flags of a comparison, as words: what the ratio's interval says unless it agrees, and
/// a peer that drifted.
fn flags(c: &Comparison) -> Vec<&'static str> {
    let mut out = Vec::new();
    if c.ratio_flagged && c.ratio_ci95.is_none() {
        out.push("no ratio");
    } else if c.agreement != Agreement::Within {
        out.push(c.agreement.text());
    }
    if c.peer_disagrees {
        out.push("peer drifted");
    }
    out
}

/// The ratio with its interval: `1.050 [0.990, 1.116]`.
fn ratio_text(c: &Comparison) -> String {
    match c.ratio_ci95 {
        Some([lo, hi]) if hi > lo => format!("{:.3} [{lo:.3}, {hi:.3}]", c.ratio),
        _ => format!("{:.3}", c.ratio),
    }
}

fn pct(t: f64) -> String {
    format!("{:.0}", t * 100.0)
}

fn legend(c: &Crosscheck) -> Vec<String> {
    let mut out = vec![format!(
        "ratio = osprim ÷ the mean of the peer's two runs (before and after osprim's, CPU {}), with its \
         95 % interval: osprim's interval over the range of the peer's two runs; 'beyond ±{t} %': the whole \
         interval lies beyond, the two disagree; 'inconclusive': the interval straddles ±{t} % and cannot \
         tell; no flag: the whole interval lies within ±{t} %; 'peer drifted': the peer's two runs differ \
         by over {t} % of their mean, the machine changed level between them and the ratio is unreliable",
        c.cpu,
        t = pct(TOLERANCE),
    )];
    if c.interrupted {
        out.push("interrupted by Ctrl-C: the primitives after the last row were not compared".into());
    }
    out
}

fn table(c: &Crosscheck, view: &View) -> String {
    let head = ["primitive", "stat", "peer before", "osprim", "peer after", "ratio", "flags"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left];
    let mut grid = Grid::new(vec![head], align);
    for r in &c.rows {
        let cells = match &r.outcome {
            Outcome::Compared(m) => {
                let f = flags(m);
                vec![
                    Cell::plain(r.primitive.clone()),
                    Cell::plain(r.statistic.name()),
                    Cell::plain(ns(m.peer_before_ns)),
                    Cell::plain(ns(m.osprim_ns)),
                    Cell::plain(ns(m.peer_after_ns)),
                    Cell::plain(ratio_text(m)),
                    Cell::styled(f.join(", "), if f.is_empty() { Style::Plain } else { Style::Warn }),
                ]
            }
            Outcome::NotCompared { .. } => {
                let mut v = vec![Cell::plain(r.primitive.clone()), Cell::plain(r.statistic.name())];
                v.extend((0..4).map(|_| Cell::plain("-")));
                v.push(Cell::styled("not compared", Style::Warn));
                v
            }
        };
        grid.push(Line::Cells(cells));
        for sub in sub_lines(r) {
            grid.push(Line::Span { indent: 2, cell: Cell::styled(sub, Style::Dim) });
        }
    }
    grid.fit(view.width, &[1], 0);
    let mut out: Vec<String> = grid.render(view.width, view.color).into_iter().flatten().collect();
    out.push(String::new());
    for l in legend(c) {
        out.extend(flow(&l, super::WIDTH.min(view.width), "", "  "));
    }
    out.join("\n") + "\n"
}

/// The lines under a row: the two commands, why it was not compared, its notes.
fn sub_lines(r: &CrossRow) -> Vec<String> {
    let mut out = vec![format!("peer: {}", r.peer), format!("osprim: {}", r.osprim)];
    if let Outcome::NotCompared { reason } = &r.outcome {
        out.push(format!("not compared: {reason}"));
    }
    out.extend(r.notes.iter().map(|n| format!("· {n}")));
    out
}

fn markdown(c: &Crosscheck) -> String {
    let mut out = vec![
        "| primitive | statistic | peer before | osprim | peer after | ratio | flags | peer | osprim's result |"
            .to_string(),
        "|---|---|---:|---:|---:|---:|---|---|---|".to_string(),
    ];
    for r in &c.rows {
        let (before, ours, after, ratio, f) = match &r.outcome {
            Outcome::Compared(m) => {
                (ns(m.peer_before_ns), ns(m.osprim_ns), ns(m.peer_after_ns), ratio_text(m), flags(m).join(", "))
            }
            Outcome::NotCompared { reason } => {
                ("-".into(), "-".into(), "-".into(), "-".into(), format!("not compared: {reason}"))
            }
        };
        out.push(format!(
            "| {} | {} | {before} | {ours} | {after} | {ratio} | {} | `{}` | `{}` |",
            Md::Pipe.escape(&r.primitive),
            r.statistic.name(),
            Md::Pipe.escape(&f),
            Md::Pipe.escape(&r.peer),
            Md::Pipe.escape(&r.osprim)
        ));
    }
    out.push(String::new());
    out.extend(legend(c));
    out.join("\n") + "\n"
}

fn csv_text(c: &Crosscheck) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "primitive",
        "statistic",
        "unit",
        "peer_before",
        "osprim",
        "peer_after",
        "ratio",
        "ratio_ci95_lo",
        "ratio_ci95_hi",
        "agreement",
        "ratio_flagged",
        "peer_disagrees",
        "not_compared",
        "peer",
        "osprim_result",
        "cpu",
    ]);
    for r in &c.rows {
        let figures = match &r.outcome {
            Outcome::Compared(m) => vec![
                m.peer_before_ns.to_string(),
                m.osprim_ns.to_string(),
                m.peer_after_ns.to_string(),
                m.ratio.to_string(),
                m.ratio_ci95.map(|c| c[0].to_string()).unwrap_or_default(),
                m.ratio_ci95.map(|c| c[1].to_string()).unwrap_or_default(),
                serde_json::to_value(m.agreement).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                m.ratio_flagged.to_string(),
                m.peer_disagrees.to_string(),
                String::new(),
            ],
            Outcome::NotCompared { reason } => {
                let mut v = vec![String::new(); 9];
                v.push(reason.clone());
                v
            }
        };
        let mut rec = vec![r.primitive.clone(), r.statistic.name().into(), "ns".into()];
        rec.extend(figures);
        rec.extend([r.peer.clone(), r.osprim.clone(), c.cpu.to_string()]);
        let _ = w.write_record(rec);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::crosscheck::Statistic;

    fn sample() -> Crosscheck {
        let compared = |ratio_flagged, peer_disagrees| Comparison {
            peer_before_ns: 195.3,
            peer_after_ns: 201.0,
            osprim_ns: 150.0,
            osprim_ci95_ns: Some([148.0, 152.0]),
            ratio: 150.0 / 198.15,
            ratio_ci95: Some([148.0 / 201.0, 152.0 / 195.3]),
            agreement: if ratio_flagged { Agreement::Beyond } else { Agreement::Within },
            ratio_flagged,
            peer_disagrees,
        };
        Crosscheck {
            cpu: 1,
            quick: true,
            realtime: true,
            interrupted: false,
            rows: vec![
                CrossRow {
                    primitive: "getppid system call".into(),
                    peer: "taskset -c 1 perf bench syscall basic -l 1000000".into(),
                    osprim: "syscall.null --cpu 1".into(),
                    statistic: Statistic::Mean,
                    outcome: Outcome::Compared(compared(true, true)),
                    notes: vec!["a note | with a bar".into()],
                },
                CrossRow {
                    primitive: "fork + exit + wait".into(),
                    peer: "taskset -c 1 perf bench syscall fork".into(),
                    osprim: "process.fork_exit touched=4MiB --cpu 1".into(),
                    statistic: Statistic::Mean,
                    outcome: Outcome::NotCompared { reason: "perf 6.1 has no 'syscall fork' (perf ≥ 6.7)".into() },
                    notes: vec![],
                },
            ],
        }
    }

    fn view() -> View {
        View { width: 100, wide: false, detail: false, color: false, all_rows: false }
    }

    #[test]
    fn every_format_shows_the_ratio_flags_and_reasons() {
        let c = sample();
        let t = render(&c, Format::Table, &view()).unwrap();
        assert!(t.contains("0.757 [0.736, 0.778]") && t.contains("beyond ±10 %, peer drifted"), "{t}");
        assert!(t.contains("not compared: perf 6.1 has no 'syscall fork' (perf ≥ 6.7)"), "{t}");
        let md = render(&c, Format::Markdown, &view()).unwrap();
        assert!(md.contains("| 0.757 [0.736, 0.778] |") && md.contains("| - | - |"), "{md}");
        let csv = render(&c, Format::Csv, &view()).unwrap();
        assert_eq!(csv.lines().count(), 3);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let head = reader.headers().unwrap().clone();
        let first = reader.records().next().unwrap().unwrap();
        let col = |name: &str| &first[head.iter().position(|h| h == name).unwrap()];
        assert_eq!((col("agreement"), col("ratio_flagged")), ("beyond", "true"));
        assert!(col("ratio_ci95_lo").parse::<f64>().unwrap() < col("ratio").parse::<f64>().unwrap());
        assert!(csv.lines().nth(2).unwrap().contains("perf 6.1 has no"));
        let json: Crosscheck = serde_json::from_str(&render(&c, Format::Json, &view()).unwrap()).unwrap();
        assert_eq!(json, c);
    }
}
