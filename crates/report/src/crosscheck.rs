//! `osprim crosscheck`: per primitive, the peer tool's figure before and after osprim's,
//! osprim's figure of the same statistic, the ratio with its 95 % interval (`1.05 [0.99,
//! 1.12]`) and what it says (within ±10 %, beyond, inconclusive), and its flags. Formats only.

use super::View;
use super::layout::{Align, Cell, Grid, Line, Style, flow};
use model::Unit;
use model::crosscheck::{Agreement, Comparison, CrossRow, Crosscheck, Outcome, TOLERANCE};

pub(crate) fn ns(v: f64) -> String {
    Unit::Ns.format(v)
}

/// The flags of a comparison, as words: what the ratio's interval says unless it agrees, and
/// a peer that drifted.
pub(crate) fn flags(c: &Comparison) -> Vec<&'static str> {
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
pub(crate) fn ratio_text(c: &Comparison) -> String {
    match c.ratio_ci95 {
        Some([lo, hi]) if hi > lo => format!("{:.3} [{lo:.3}, {hi:.3}]", c.ratio),
        _ => format!("{:.3}", c.ratio),
    }
}

fn pct(t: f64) -> String {
    format!("{:.0}", t * 100.0)
}

pub(crate) fn legend(c: &Crosscheck) -> Vec<String> {
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

pub(crate) fn table(c: &Crosscheck, view: &View) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;
    use model::crosscheck::Statistic;

    fn render(c: &Crosscheck, format: Format, view: &View) -> Result<String, serde_json::Error> {
        crate::writer(format).crosscheck(c, view)
    }

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
