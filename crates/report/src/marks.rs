//! The footnotes of the run table. A row carries short markers (`skipped¹`, `FAILED²`, `³ ⁴`);
//! each marker is one numbered footnote that says what it means and names every row it
//! applies to, with that row's size where there is one (`drift −12 %`, `steal 10 ms`). Notes
//! several rows share are printed once with the rows named; a row's own notes (how it was
//! measured, its rounds) are shown under it with `--detail`.

use super::layout::{self, Style, paint, superscript};
use model::{Flag, Row, Status, Tier, Verdict};

/// A row as footnotes name it: its id and what tells it apart (`thread cross`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowRef {
    /// The benchmark id.
    pub id: String,
    /// The parameters that tell it apart from the other rows of its id.
    pub qual: String,
    /// Whether it was measured (not skipped or failed).
    pub measured: bool,
}

impl RowRef {
    /// The row's name, e.g. `ipc.pipe thread cross`.
    pub fn name(&self) -> String {
        if self.qual.is_empty() { self.id.clone() } else { format!("{} {}", self.id, self.qual) }
    }
}

/// What a marker stands for: one footnote each.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// Skipped, and why.
    Skipped(String),
    /// Failed while measuring, and why.
    Failed(String),
    /// Ctrl-C arrived before the benchmark had a figure, and how far it got.
    Interrupted(String),
    /// A check (its name and expectation) failed; each row's observation is its size.
    CheckFailed(String, String),
    /// Measured, but no check could be made: why.
    Unchecked(String),
    /// A flag of the analysis.
    Flag(Flag),
    /// The second half of the samples differs from the first.
    Drift,
    /// The hypervisor took the measuring CPU away (steal time).
    Steal,
    /// Computed from other rows, by this formula.
    Computed(String),
}

impl Key {
    /// The footnote's text, before the rows it names.
    fn text(&self, ci_target: f64) -> String {
        match self {
            Key::Skipped(why) => format!("skipped: {why}"),
            Key::Failed(why) => format!("failed: {why}"),
            Key::Interrupted(why) => format!("interrupted: {why}"),
            Key::CheckFailed(name, expected) => {
                format!("check-failed (untrustworthy): {name}; expected {expected}; seen")
            }
            Key::Unchecked(why) => format!("not validated: {why}"),
            Key::Flag(Flag::CiTargetMissed) => {
                format!(
                    "ci-wide (target ± {} %): {}",
                    super::figures::pct(ci_target * 100.0),
                    Flag::CiTargetMissed.hint()
                )
            }
            Key::Flag(Flag::Unstable) => format!(
                "unstable: {}; --detail gives each row's rounds and levels",
                Flag::Unstable.hint().trim_end_matches(" (see notes)")
            ),
            Key::Flag(f) => {
                let tier = if f.tier() == Tier::Untrustworthy { " (untrustworthy)" } else { "" };
                match f.hint().strip_prefix(f.label()).and_then(|h| h.strip_prefix(": ")) {
                    Some(rest) => format!("{}{tier}: {rest}", f.label()),
                    None => format!("{}{tier}: {}", f.label(), f.hint()),
                }
            }
            Key::Drift => "drift: the median of the second half of the samples differs from the first half's, beyond \
                           both CIs; (second − first) / median"
                .into(),
            Key::Steal => "steal time: the hypervisor ran something else on the measuring CPU, so figures may be \
                           inflated; time taken"
                .into(),
            Key::Computed(formula) => format!("computed, not measured: {formula}"),
        }
    }

    /// Whether the marker warns (yellow: advisory) or says the figure is not to be used (red:
    /// a failure, an untrustworthy flag).
    pub fn style(&self) -> Style {
        match self {
            Key::Failed(_) | Key::Interrupted(_) | Key::CheckFailed(..) => Style::Bad,
            Key::Flag(f) if f.tier() == Tier::Untrustworthy => Style::Bad,
            Key::Computed(_) | Key::Unchecked(_) => Style::Plain,
            _ => Style::Warn,
        }
    }
}

/// A marker a row earns, with its size there.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// What it stands for.
    pub key: Key,
    /// How much, for this row (`−12 %`, `10 ms`, the observation of a failed check).
    pub size: Option<String>,
}

/// How a row came out, as the check column says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Measured and validated.
    Ok,
    /// Measured; a check failed.
    CheckFailed,
    /// Measured; nothing could be checked.
    Unchecked,
    /// Not run here.
    Skipped,
    /// An error while measuring.
    Failed,
    /// Cut off by Ctrl-C before it had a figure.
    Interrupted,
}

/// A row's markers: its outcome's (skip reason, failed checks) and the rest (flags, drift,
/// steal, derivation).
#[derive(Clone, Debug)]
pub struct RowMarks {
    /// How the row came out.
    pub outcome: Outcome,
    /// The markers of the outcome.
    pub check: Vec<Mark>,
    /// Every other marker.
    pub flags: Vec<Mark>,
}

/// What kind of remark a note is: some are a marker's size, some are the row's own detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// Steal time, with the time taken (`10 ms`).
    Steal(String),
    /// The rounds' spread of an unstable row.
    Unstable,
    /// Start-up samples dropped.
    Transient,
    /// The batch-size check's difference: the size of `batch-dependent`.
    Batch,
    /// The note of a rescaled row (the row's source says everything).
    Scaled,
    /// Which round failed: the size of `round-failed`.
    RoundFailed,
    /// Anything else: how the row was measured.
    Other,
}

/// The kind of a note, from the wording `analyse`, `derive` and `runner` give it.
pub fn note_kind(note: &str) -> NoteKind {
    if let Some(rest) = note.strip_prefix("the hypervisor took ")
        && note.contains("(steal time)")
    {
        return NoteKind::Steal(rest.split(" from ").next().unwrap_or(rest).to_string());
    }
    match note {
        n if n.starts_with("unstable: ") => NoteKind::Unstable,
        n if n.starts_with("start-up transient: ") => NoteKind::Transient,
        n if n.starts_with("batch-size check: ") => NoteKind::Batch,
        n if n.starts_with("the same measurement as ") => NoteKind::Scaled,
        n if n.starts_with("round ") && n.contains(" failed (") => NoteKind::RoundFailed,
        _ => NoteKind::Other,
    }
}

/// The markers of `row`.
pub fn of(row: &Row) -> RowMarks {
    let mark = |key, size| Mark { key, size };
    let why = || row.reason.clone().unwrap_or_else(|| "no reason recorded".into());
    match row.status {
        Status::Skipped => {
            return RowMarks { outcome: Outcome::Skipped, check: vec![mark(Key::Skipped(why()), None)], flags: vec![] };
        }
        Status::Failed => {
            return RowMarks { outcome: Outcome::Failed, check: vec![mark(Key::Failed(why()), None)], flags: vec![] };
        }
        Status::Interrupted => {
            let check = vec![mark(Key::Interrupted(why()), None)];
            return RowMarks { outcome: Outcome::Interrupted, check, flags: vec![] };
        }
        _ => {}
    }
    let v = &row.validation;
    let (outcome, check) = match v.verdict {
        Verdict::Validated => (Outcome::Ok, vec![]),
        Verdict::Failed => (
            Outcome::CheckFailed,
            (v.checks.iter().filter(|c| c.ok == Some(false)))
                .map(|c| mark(Key::CheckFailed(c.name.clone(), c.expected.clone()), Some(c.observed.clone())))
                .collect(),
        ),
        Verdict::NotValidated => {
            let reasons: Vec<String> = v.checks.iter().map(|c| format!("{}: {}", c.name, c.observed)).collect();
            let why = if reasons.is_empty() { "the benchmark makes no check".into() } else { reasons.join("; ") };
            (Outcome::Unchecked, vec![mark(Key::Unchecked(why), None)])
        }
    };
    RowMarks { outcome, check, flags: flag_marks(row) }
}

/// Flags (but check-failed, which the check column says), drift, steal and derivation.
fn flag_marks(row: &Row) -> Vec<Mark> {
    let note = |kind: NoteKind| row.notes.iter().find(|n| note_kind(n) == kind).cloned();
    let mut out: Vec<Mark> = (row.flags.iter().filter(|f| **f != Flag::CheckFailed))
        .map(|&f| {
            let size = match f {
                Flag::ManyOutliers => row.summary.as_ref().map(|s| {
                    let severe = s.outliers.low_severe + s.outliers.high_severe;
                    format!("{} % beyond 3 IQR", super::figures::pct(100.0 * severe as f64 / s.n.max(1) as f64))
                }),
                Flag::BatchDependent => note(NoteKind::Batch).and_then(|n| batch_size(&n)),
                Flag::RoundFailed => note(NoteKind::RoundFailed),
                _ => None,
            };
            Mark { key: Key::Flag(f), size }
        })
        .collect();
    if let Some(s) = row.summary.as_ref().filter(|s| s.drift && s.drift_rel.is_finite()) {
        out.push(Mark { key: Key::Drift, size: Some(signed_percent(s.drift_rel)) });
    }
    for n in &row.notes {
        if let NoteKind::Steal(took) = note_kind(n) {
            out.push(Mark { key: Key::Steal, size: Some(took) });
        }
    }
    if let Some(d) = &row.derived {
        out.push(Mark { key: Key::Computed(d.formula.clone()), size: None });
    }
    out
}

/// `+12 %`, `−3.4 %`.
pub fn signed_percent(rel: f64) -> String {
    let sign = if rel < 0.0 { "−" } else { "+" };
    format!("{sign}{} %", super::figures::pct((rel * 100.0).abs()))
}

/// `+294.4 ns` of "batch-size check: batches of 8m operations cost +294.4 ns per operation …".
fn batch_size(note: &str) -> Option<String> {
    let after = note.split_once(" cost ")?.1;
    Some(after.split_once(" per operation")?.0.to_string())
}

/// The rows a footnote names, each with its size there.
type Named = Vec<(RowRef, Option<String>)>;

/// Every footnote of a table, numbered in the order the table first refers to them.
#[derive(Debug, Default)]
pub struct Marks {
    entries: Vec<(Key, Named)>,
    notes: Vec<(String, Vec<RowRef>)>,
    universe: Vec<RowRef>,
    /// Rows whose own notes the table does not show.
    pub unshown_notes: usize,
}

impl Marks {
    /// A row the table shows: footnotes may name it, or every row but it.
    pub fn see(&mut self, r: &RowRef) {
        if !self.universe.contains(r) {
            self.universe.push(r.clone());
        }
    }

    /// The number of `mark`'s footnote, which now names `at`.
    pub fn number(&mut self, mark: &Mark, at: &RowRef) -> usize {
        let i = match self.entries.iter().position(|(k, _)| *k == mark.key) {
            Some(i) => i,
            None => {
                self.entries.push((mark.key.clone(), Vec::new()));
                self.entries.len() - 1
            }
        };
        let rows = &mut self.entries[i].1;
        if !rows.iter().any(|(r, _)| r == at) {
            rows.push((at.clone(), mark.size.clone()));
        }
        i + 1
    }

    /// The numbers of `marks` at `at`.
    pub fn numbers(&mut self, marks: &[Mark], at: &RowRef) -> Vec<usize> {
        marks.iter().map(|m| self.number(m, at)).collect()
    }

    /// A note several rows share, printed once under the table with the rows named.
    pub fn note(&mut self, text: &str, at: &RowRef) {
        match self.notes.iter_mut().find(|(t, _)| t == text) {
            Some((_, rows)) => rows.push(at.clone()),
            None => self.notes.push((text.to_string(), vec![at.clone()])),
        }
    }

    /// The footnotes: numbered markers, then the shared notes, then `extra` lines; each
    /// flowed to `width` with a hanging indent.
    pub fn render(&self, ci_target: f64, extra: &[String], width: usize, color: bool) -> Vec<String> {
        let mut out = Vec::new();
        for (i, (key, rows)) in self.entries.iter().enumerate() {
            let text = format!("{} — {}", key.text(ci_target), self.list(key, rows));
            let num = superscript(i + 1);
            let indent = " ".repeat(layout::width(&num) + 1);
            for (j, line) in layout::flow(&text, width, &format!("{num} "), &indent).into_iter().enumerate() {
                out.push(if j == 0 {
                    format!("{}{}", paint(&num, key.style(), color), &line[num.len()..])
                } else {
                    line
                });
            }
        }
        let notes = self.notes.iter().map(|(text, rows)| {
            let named: Vec<&RowRef> = rows.iter().collect();
            format!("{text} — {}", self.describe(&named))
        });
        for text in notes.chain(extra.iter().cloned()) {
            out.extend(layout::flow(&text, width, "· ", "  "));
        }
        out
    }

    /// The rows of a footnote: those with a size one by one (grouped by id), the others as
    /// compactly as their set allows (`ipc.* (thread cross, process cross)`, `every measured
    /// row but harness.empty, space.*`).
    fn list(&self, key: &Key, rows: &Named) -> String {
        let plain: Vec<&RowRef> = rows.iter().filter(|(_, s)| s.is_none()).map(|(r, _)| r).collect();
        let mut parts = Vec::new();
        if !plain.is_empty() {
            parts.push(self.describe(&plain));
        }
        let mut ids: Vec<&str> = rows.iter().filter(|(_, s)| s.is_some()).map(|(r, _)| r.id.as_str()).collect();
        dedup_keep_order(&mut ids);
        // A long size (a check's observation) after a colon; a short one (`−12 %`) after a space.
        let sep = if matches!(key, Key::CheckFailed(..) | Key::Flag(Flag::RoundFailed)) { ": " } else { " " };
        for id in ids {
            let alone = self.universe.iter().filter(|u| u.id == id).count() <= 1;
            let sized: Vec<String> = (rows.iter().filter(|(r, s)| r.id == id && s.is_some()))
                .map(|(r, s)| {
                    let size = s.as_deref().unwrap_or("");
                    if alone || r.qual.is_empty() { size.to_string() } else { format!("{}{sep}{size}", r.qual) }
                })
                .collect();
            parts.push(if alone {
                format!("{id}{sep}{}", sized.join(", "))
            } else {
                format!("{id} ({})", sized.join(", "))
            });
        }
        parts.join("; ")
    }

    /// A set of rows in the fewest words: the set itself, or every (measured) row but the
    /// rest, whichever is shorter.
    fn describe(&self, set: &[&RowRef]) -> String {
        let direct = self.items(set);
        if set.len() * 2 <= self.universe.len() {
            return direct;
        }
        let measured = set.iter().all(|r| r.measured);
        let base: Vec<&RowRef> = self.universe.iter().filter(|u| !measured || u.measured).collect();
        let rest: Vec<&RowRef> = base.into_iter().filter(|u| !set.contains(u)).collect();
        let every = if measured { "every measured row" } else { "every row" };
        if rest.is_empty() {
            return every.into();
        }
        let but = format!("{every} but {}", self.items(&rest));
        if but.chars().count() < direct.chars().count() { but } else { direct }
    }

    /// Rows grouped by id (an id alone when all its rows are in), ids with the same rows
    /// grouped, and a whole family as `family.*`.
    fn items(&self, set: &[&RowRef]) -> String {
        let mut ids: Vec<&str> = set.iter().map(|r| r.id.as_str()).collect();
        dedup_keep_order(&mut ids);
        // (qualifier, ids) in order of first appearance.
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for id in ids {
            let have: Vec<&str> = set.iter().filter(|r| r.id == id).map(|r| r.qual.as_str()).collect();
            let all: Vec<&str> = self.universe.iter().filter(|r| r.id == id).map(|r| r.qual.as_str()).collect();
            let q = if have.len() >= all.len() && all.iter().all(|a| have.contains(a)) {
                String::new()
            } else {
                have.join(", ")
            };
            match groups.iter_mut().find(|(g, _)| *g == q) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((q, vec![id])),
            }
        }
        let text = |(q, ids): &(String, Vec<&str>)| {
            let names = self.families(ids).join(", ");
            if q.is_empty() { names } else { format!("{names} ({q})") }
        };
        groups.iter().map(text).collect::<Vec<_>>().join("; ")
    }

    /// `ids` with each family that is wholly in them (and has more than one id) as
    /// `family.*`, and families that have the same operations as `{ipc, xfer}.{pipe, tcp}`.
    fn families(&self, ids: &[&str]) -> Vec<String> {
        // (where in `ids`, text), sorted at the end so that the names keep the rows' order.
        let mut out: Vec<(usize, String)> = Vec::new();
        // (first position, families, operations) of the ids not said as `family.*`.
        let mut ops: Vec<(usize, Vec<&str>, Vec<&str>)> = Vec::new();
        for (at, id) in ids.iter().enumerate() {
            let fam = super::names::family(id);
            let mut members: Vec<&str> =
                self.universe.iter().filter(|u| super::names::family(&u.id) == fam).map(|u| u.id.as_str()).collect();
            dedup_keep_order(&mut members);
            if members.len() > 1 && members.iter().all(|m| ids.contains(m)) {
                let name = format!("{fam}.*");
                if !out.iter().any(|(_, n)| *n == name) {
                    out.push((at, name));
                }
                continue;
            }
            let op = id.strip_prefix(fam).map_or("", |o| o.trim_start_matches('.'));
            match ops.iter_mut().find(|(_, f, _)| f[0] == fam) {
                Some((_, _, o)) => o.push(op),
                None => ops.push((at, vec![fam], vec![op])),
            }
        }
        // Families with the same operations, said together.
        let mut merged: Vec<(usize, Vec<&str>, Vec<&str>)> = Vec::new();
        for (at, f, o) in ops {
            match merged.iter_mut().find(|(_, _, mo)| *mo == o && o.len() > 1) {
                Some((_, mf, _)) => mf.extend(f),
                None => merged.push((at, f, o)),
            }
        }
        for (at, f, o) in merged {
            if f.len() > 1 {
                out.push((at, format!("{{{}}}.{{{}}}", f.join(", "), o.join(", "))));
            } else {
                let name = |op: &&str| if op.is_empty() { f[0].to_string() } else { format!("{}.{op}", f[0]) };
                out.extend(o.iter().map(|op| (at, name(op))));
            }
        }
        out.sort_by_key(|(at, _)| *at);
        out.into_iter().map(|(_, n)| n).collect()
    }
}

fn dedup_keep_order(v: &mut Vec<&str>) {
    let mut seen = Vec::new();
    v.retain(|x| {
        let new = !seen.contains(x);
        seen.push(*x);
        new
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: &str, qual: &str) -> RowRef {
        RowRef { id: id.into(), qual: qual.into(), measured: true }
    }

    #[test]
    fn sets_of_rows_are_named_compactly_and_completely() {
        let mut m = Marks::default();
        let all = [
            r("harness.empty", ""),
            r("ipc.pipe", "thread same"),
            r("ipc.pipe", "thread cross"),
            r("ipc.tcp", "thread same"),
            r("ipc.tcp", "thread cross"),
            r("space.thread", ""),
            r("space.pipe", ""),
        ];
        all.iter().for_each(|x| m.see(x));
        let cross = [&all[2], &all[4]];
        assert_eq!(m.describe(&cross), "ipc.* (thread cross)");
        let ipc_and_more: Vec<&RowRef> = all[1..5].iter().chain([&all[0]]).collect();
        assert_eq!(m.describe(&ipc_and_more), "ipc.*, harness.empty");
        let but_one: Vec<&RowRef> = all[..6].iter().collect();
        assert_eq!(m.describe(&but_one), "every measured row but space.pipe");
        let mixed = [&all[0], &all[1], &all[3], &all[5], &all[6]];
        assert_eq!(m.describe(&mixed), "harness.empty, space.*; ipc.* (thread same)");
        assert_eq!(m.describe(&[&all[1]]), "ipc.pipe (thread same)");
        let mark = Mark { key: Key::Drift, size: Some("−12 %".into()) };
        m.number(&mark, &all[1]);
        assert_eq!(m.number(&Mark { key: Key::Drift, size: Some("+3.0 %".into()) }, &all[5]), 1);
        let lines = m.render(0.01, &[], 60, false);
        assert!(lines[0].starts_with("¹ drift:"), "{lines:?}");
        let text = lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains("ipc.pipe (thread same −12 %); space.thread +3.0 %"), "{text}");
    }

    #[test]
    fn notes_are_read_for_their_sizes() {
        assert_eq!(
            note_kind("the hypervisor took 10 ms from CPU 1 while this ran (steal time): figures may be inflated"),
            NoteKind::Steal("10 ms".into())
        );
        assert_eq!(
            batch_size("batch-size check: batches of 8m operations cost +294.4 ns per operation against …").as_deref(),
            Some("+294.4 ns")
        );
        assert_eq!(note_kind("file on ext4"), NoteKind::Other);
        assert_eq!(signed_percent(-0.1234), "−12 %");
        assert_eq!(signed_percent(0.034), "+3.4 %");
    }
}
