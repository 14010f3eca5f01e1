//! `osprim crosscheck`: per primitive, the peer tool's figure before and after osprim's,
//! osprim's figure of the same statistic, the ratio and its flags. Formats only.

use super::layout::{Align, Cell, Grid, Line, Style, flow};
use super::{Format, View};
use crate::model::Unit;
use crate::model::crosscheck::{Comparison, CrossRow, Crosscheck, Outcome, TOLERANCE};

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

/// The flags of a comparison, as words.
fn flags(c: &Comparison) -> Vec<&'static str> {
    let mut out = Vec::new();
    if c.ratio_flagged {
        out.push("beyond ±10 %");
    }
    if c.peer_disagrees {
        out.push("peer drifted");
    }
    out
}

fn pct(t: f64) -> String {
    format!("{:.0}", t * 100.0)
}

fn legend(c: &Crosscheck) -> Vec<String> {
    let mut out = vec![format!(
        "ratio = osprim ÷ the mean of the peer's two runs (before and after osprim's, CPU {}); \
         'beyond ±{} %': the two disagree by more; 'peer drifted': the peer's two runs differ by over {} % \
         of their mean, the machine changed level between them and the ratio is unreliable",
        c.cpu,
        pct(TOLERANCE),
        pct(TOLERANCE)
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
                    Cell::plain(format!("{:.3}", m.ratio)),
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

fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(c: &Crosscheck) -> String {
    let mut out = vec![
        "| primitive | statistic | peer before | osprim | peer after | ratio | flags | peer | osprim's result |"
            .to_string(),
        "|---|---|---:|---:|---:|---:|---|---|---|".to_string(),
    ];
    for r in &c.rows {
        let (before, ours, after, ratio, f) = match &r.outcome {
            Outcome::Compared(m) => (
                ns(m.peer_before_ns),
                ns(m.osprim_ns),
                ns(m.peer_after_ns),
                format!("{:.3}", m.ratio),
                flags(m).join(", "),
            ),
            Outcome::NotCompared { reason } => {
                ("-".into(), "-".into(), "-".into(), "-".into(), format!("not compared: {reason}"))
            }
        };
        out.push(format!(
            "| {} | {} | {before} | {ours} | {after} | {ratio} | {} | `{}` | `{}` |",
            markdown_cell(&r.primitive),
            r.statistic.name(),
            markdown_cell(&f),
            markdown_cell(&r.peer),
            markdown_cell(&r.osprim)
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
        "ratio_flagged",
        "peer_disagrees",
        "not_compared",
        "peer",
        "osprim_result",
        "cpu",
    ]);
    for r in &c.rows {
        let figures = match &r.outcome {
            Outcome::Compared(m) => [
                m.peer_before_ns.to_string(),
                m.osprim_ns.to_string(),
                m.peer_after_ns.to_string(),
                m.ratio.to_string(),
                m.ratio_flagged.to_string(),
                m.peer_disagrees.to_string(),
                String::new(),
            ],
            Outcome::NotCompared { reason } => [
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                reason.clone(),
            ],
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
    use crate::model::crosscheck::Statistic;

    fn sample() -> Crosscheck {
        let compared = |ratio_flagged, peer_disagrees| Comparison {
            peer_before_ns: 195.3,
            peer_after_ns: 201.0,
            osprim_ns: 150.0,
            ratio: 150.0 / 198.15,
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
        assert!(t.contains("0.757") && t.contains("beyond ±10 %, peer drifted"), "{t}");
        assert!(t.contains("not compared: perf 6.1 has no 'syscall fork' (perf ≥ 6.7)"), "{t}");
        let md = render(&c, Format::Markdown, &view()).unwrap();
        assert!(md.contains("| 0.757 |") && md.contains("| - | - |"), "{md}");
        let csv = render(&c, Format::Csv, &view()).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(2).unwrap().contains("perf 6.1 has no"));
        let json: Crosscheck = serde_json::from_str(&render(&c, Format::Json, &view()).unwrap()).unwrap();
        assert_eq!(json, c);
    }
}
