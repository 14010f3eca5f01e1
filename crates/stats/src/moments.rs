//! Moments of a sample, the leaf the other statistics build on: the [`mean`], the
//! [`sample_stddev`] around it, and the raw median absolute deviation ([`mad`], with
//! [`MAD_TO_SIGMA`] to scale it). Imports only the order statistics.

use super::order::median_in_place;

/// Factor turning the raw MAD into a consistent estimate of the standard
/// deviation for normally distributed data: `1 / Φ⁻¹(3/4)` (Hampel, "The
/// influence curve and its role in robust estimation", JASA 69, 1974;
/// Rousseeuw & Croux, JASA 88, 1993).
pub const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;

/// Arithmetic mean; NaN if empty.
///
/// Computed as `x₀ + Σ(xᵢ − x₀)/n`: shifting by a sample avoids losing
/// digits when the values share a large offset (e.g. 1e9 ± 10 ns), and
/// makes the mean of equal values exactly that value.
pub fn mean(values: &[f64]) -> f64 {
    let Some(&first) = values.first() else {
        return f64::NAN;
    };
    let n = values.len() as f64;
    let m = first + values.iter().map(|&x| x - first).sum::<f64>() / n;
    if m.is_finite() {
        m
    } else {
        // Differences overflowed (values near ±f64::MAX): scale first.
        values.iter().map(|&x| x / n).sum()
    }
}

/// Sample standard deviation (divisor `n − 1`) around a precomputed
/// `mean`, by the two-pass formula. NaN for fewer than 2 values.
pub fn sample_stddev(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let ss: f64 = values.iter().map(|&x| (x - mean) * (x - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// Raw median absolute deviation `median |xᵢ − center|` (unscaled; see
/// [`MAD_TO_SIGMA`]). NaN if empty.
pub fn mad(values: &[f64], center: f64) -> f64 {
    let mut dev: Vec<f64> = values.iter().map(|&x| (x - center).abs()).collect();
    median_in_place(&mut dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_keeps_digits_under_a_large_offset() {
        let v = [1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0];
        assert_eq!(mean(&v), 1e9 + 2.0);
        assert!(mean(&[]).is_nan());
        assert_eq!(mean(&[f64::MAX, f64::MAX, -f64::MAX]), f64::MAX / 3.0);
        assert!(sample_stddev(&[1.0], 1.0).is_nan());
        assert!(mad(&[], 0.0).is_nan());
    }
}
