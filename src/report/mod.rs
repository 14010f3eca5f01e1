//! Reporters: format a result document for people (table), programs (JSON, CSV) and the seed
//! view. Reporters only format; every number they print was computed by `stats`/`analyse`.

pub mod csv;
pub mod seeds;
pub mod table;

/// A size in bytes: `440 B`, `2.42 KiB`, `32.2 KiB`, `1.35 MiB`.
pub fn fmt_bytes(b: f64) -> String {
    if !b.is_finite() {
        return "-".into();
    }
    match b.abs() {
        a if a < 1024.0 => format!("{} B", sig4(b)),
        a if a < 1024.0 * 1024.0 => format!("{} KiB", sig4(b / 1024.0)),
        _ => format!("{} MiB", sig4(b / 1024.0 / 1024.0)),
    }
}

/// A table in osprim's style: a rule under the header, no vertical lines, never wrapped.
pub fn new_table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    let rule = comfy_table::LineStyle::none().fill('─').junction('─');
    let style = comfy_table::TableStyle::new().header_separator(rule).bottom_border(rule);
    t.load_style(style).set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    t
}

/// A duration in human units: `104.3 ns`, `2.81 µs`, `1.40 ms`, `1.2 s` (4 significant digits).
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let (v, unit) = match ns.abs() {
        a if a < 1e3 => (ns, "ns"),
        a if a < 1e6 => (ns / 1e3, "µs"),
        a if a < 1e9 => (ns / 1e6, "ms"),
        _ => (ns / 1e9, "s"),
    };
    format!("{} {unit}", sig4(v))
}

/// A number with 4 significant digits and no exponent.
pub fn sig4(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// A count with thousands separators: `10,000`.
pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(fmt_ns(104.26), "104.3 ns");
        assert_eq!(fmt_ns(2812.0), "2.812 µs");
        assert_eq!(fmt_ns(1_401_000.0), "1.401 ms");
        assert_eq!(fmt_ns(0.42), "0.420 ns");
        assert_eq!(fmt_ns(-0.3), "-0.300 ns");
        assert_eq!(fmt_ns(f64::NAN), "-");
        assert_eq!(fmt_count(10_000), "10,000");
        assert_eq!(fmt_count(999), "999");
    }
}
