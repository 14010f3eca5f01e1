//! Units of measured values and how each is written for people. Every result row carries its
//! [`Unit`]; the unit, never a field name or a parameter, says what a value means.

use serde::{Deserialize, Serialize};

/// The unit of a row's samples and of every figure computed from them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nanoseconds per operation.
    #[default]
    Ns,
    /// Bytes per object (e.g. `space.*`, memory per thread).
    Bytes,
    /// A plain count per operation.
    Count,
}

impl Unit {
    /// The value written for people: a time, a size or a number.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Ns => fmt_ns(v),
            Unit::Bytes => fmt_bytes(v),
            Unit::Count => {
                if v.is_finite() {
                    sig4(v)
                } else {
                    "-".into()
                }
            }
        }
    }

    /// The symbol used in column names and notes: `ns`, `bytes`, `count`.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
        }
    }
}

/// A plain number with at most three decimals and no trailing zeros: `1`, `0.543`, `2.5`;
/// `-` when it is not finite.
pub fn short_number(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
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

/// A size in bytes: `440 B`, `2.42 KiB`, `32.2 KiB`, `1.35 MiB`; a whole number of bytes
/// below 1 KiB as that number (`0 B`, `36 B`), a mean with its decimals (`648.9 B`).
pub fn fmt_bytes(b: f64) -> String {
    if !b.is_finite() {
        return "-".into();
    }
    match b.abs() {
        a if a < 1024.0 && b.fract() == 0.0 => format!("{b:.0} B"),
        a if a < 1024.0 => format!("{} B", sig4(b)),
        a if a < 1024.0 * 1024.0 => format!("{} KiB", sig4(b / 1024.0)),
        _ => format!("{} MiB", sig4(b / 1024.0 / 1024.0)),
    }
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

/// A message size: exact in B, KiB or MiB when it is a whole number of them (`0 B`, `4 KiB`,
/// `1 MiB`), else as [`fmt_bytes`] (`1.953 KiB`).
pub fn fmt_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b % (1024 * 1024) == 0 => format!("{} MiB", b / (1024 * 1024)),
        b if b % 1024 == 0 && b < 1024 * 1024 => format!("{} KiB", b / 1024),
        b => fmt_bytes(b as f64),
    }
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

    #[test]
    fn the_unit_decides_the_format() {
        assert_eq!(Unit::Ns.format(2812.0), "2.812 µs");
        assert_eq!(Unit::Bytes.format(2812.0), "2.746 KiB");
        // A whole number of bytes is that number; a mean keeps its decimals.
        assert_eq!(Unit::Bytes.format(0.0), "0 B");
        assert_eq!(Unit::Bytes.format(36.0), "36 B");
        assert_eq!(Unit::Bytes.format(648.9), "648.9 B");
        assert_eq!(Unit::Count.format(2812.0), "2812");
        assert_eq!(serde_json::to_string(&Unit::Bytes).unwrap(), "\"bytes\"");
    }

    #[test]
    fn sizes_are_named_exactly() {
        assert_eq!(fmt_size(0), "0 B");
        assert_eq!(fmt_size(512), "512 B");
        assert_eq!(fmt_size(4096), "4 KiB");
        assert_eq!(fmt_size(65536), "64 KiB");
        assert_eq!(fmt_size(1_048_576), "1 MiB");
        assert_eq!(fmt_size(1000 * 1024 + 1), "1000 KiB");
        assert_eq!(fmt_size(3000), "2.930 KiB");
    }
}
