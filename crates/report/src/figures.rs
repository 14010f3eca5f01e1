//! The figures every text view shares: a percentage with the decimals it needs, a 95 % CI
//! relative to its point (`± 4.2 %`, `−0.1/+502 %`), the estimate a method shows (median, or
//! the seed method's mean), and whether a row only rescales another.

use model::{Row, Summary, Unit};

/// A percentage with as many decimals as it needs: `12`, `4.2`, `0.42`.
pub fn pct(v: f64) -> String {
    match v.abs() {
        _ if !v.is_finite() => "-".into(),
        0.0 => "0".into(),
        a if a >= 10.0 => format!("{v:.0}"),
        a if a >= 1.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// How unequal the two sides of an interval may be and still print as `± x %`: the shorter
/// side at least 90 % of the longer.
const SYMMETRIC: f64 = 0.9;

/// Below this distance from the point (percent) neither side of an interval is worth telling
/// apart: `−0.04/+0.08 %` says nothing `± 0.08 %` does not.
const TIGHT_PCT: f64 = 1.0;

/// The 95 % CI `ci` around `point`, relative to it. `± x %` when neither end lies over x % from
/// the point and the ends lie at about the same distance ([`SYMMETRIC`]) or both within
/// [`TIGHT_PCT`]; else each end's signed distance, `−0.1/+502 %` (an interval such as
/// [91.1, 548.8] around 91.2 never reads as a half-width, `± 251 %`). Around a point of 0 the
/// same in the row's unit (`± 1.2 ns`, `[0, 0.4 ns]`); `-` when there is no interval.
pub fn plus_minus(point: f64, ci: [f64; 2], unit: Unit) -> String {
    let (below, above) = (point - ci[0], ci[1] - point);
    if !below.is_finite() || !above.is_finite() || !point.is_finite() {
        return "-".into();
    }
    if below == 0.0 && above == 0.0 {
        return "± 0 %".into();
    }
    let (near, far) = (below.min(above), below.max(above));
    let even = near >= 0.0 && near >= SYMMETRIC * far;
    if point == 0.0 {
        return if even {
            format!("± {}", unit.format(far))
        } else {
            format!("[{}, {}]", unit.format(ci[0]), unit.format(ci[1]))
        };
    }
    let rel = |d: f64| 100.0 * d / point.abs();
    if even || (near >= 0.0 && rel(far) < TIGHT_PCT) {
        return format!("± {} %", pct(rel(far)));
    }
    let signed = |d: f64| {
        let sign = if d < 0.0 { "−" } else { "+" };
        format!("{sign}{}", pct(rel(d).abs()))
    };
    format!("{}/{} %", signed(-below), signed(above))
}

/// The estimate the table shows and its 95 % CI: the median, or for the seed method the
/// papers' mean.
pub fn location(s: &Summary, seed: bool) -> (f64, [f64; 2]) {
    if seed { (s.mean, s.mean_ci95) } else { (s.median, s.median_ci95) }
}

/// Whether a row only rescales another (`rpc.<t>` = 2 × `ipc.<t>`).
pub fn is_scaled(r: &Row) -> bool {
    r.derived.as_ref().is_some_and(|d| d.scaled_source().is_some())
}
