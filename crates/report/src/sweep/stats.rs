//! The statistics of one metric over a configuration's runs: mean, sample
//! standard deviation (n − 1), min, quartiles, max and the 95 % interval
//! of the mean, mean ± t(0.975, n − 1) · sd / √n, with Student's t
//! quantile computed here (no table). Quartiles interpolate linearly
//! between order statistics (Hyndman and Fan's type 7, the default of R
//! and NumPy). Values are summed in the order given, so the same values in
//! the same order give the same bits; results are rounded to six
//! decimals.

use crate::schema::sweep::Statistics;

/// Decimals kept in `sweep.json`.
const DECIMALS: i32 = 6;

fn round(value: f64) -> f64 {
    crate::schema::summary::round(value, DECIMALS)
}

/// The statistics of `values` (in run order); `None` when there are none.
pub fn statistics(values: &[f64]) -> Option<Statistics> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = (n > 1).then(|| {
        let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        (squares / (n - 1) as f64).sqrt()
    });
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let half_width = sd.map(|sd| t_quantile_975((n - 1) as f64) * sd / (n as f64).sqrt());
    Some(Statistics {
        n: n as u64,
        mean: round(mean),
        sd: sd.map(round),
        min: round(sorted[0]),
        q1: round(quantile(&sorted, 0.25)),
        median: round(quantile(&sorted, 0.5)),
        q3: round(quantile(&sorted, 0.75)),
        max: round(sorted[n - 1]),
        ci95_low: half_width.map(|h| round(mean - h)),
        ci95_high: half_width.map(|h| round(mean + h)),
    })
}

/// The `p` quantile of sorted values, interpolating linearly between the
/// order statistics at (n − 1)·p (type 7).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let last = sorted.len() - 1;
    let h = last as f64 * p;
    let below = h.floor() as usize;
    let above = (below + 1).min(last);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

/// Student's t quantile at 0.975 for `df` degrees of freedom (≥ 1): the
/// `t` with P(T ≤ t) = 0.975, found by bisection on the distribution
/// function to well below the six decimals written.
pub fn t_quantile_975(df: f64) -> f64 {
    let (mut low, mut high) = (0.0f64, 1.0e3f64);
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if t_cdf(mid, df) < 0.975 {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// P(T ≤ t) for t ≥ 0: 1 − ½·I_x(df/2, ½) with x = df / (df + t²).
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * incomplete_beta(x, df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b), by its continued
/// fraction (evaluated with the modified Lentz method), using the symmetry
/// I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let log_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        log_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - log_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPSILON: f64 = 1e-15;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut result = d;
    for m in 1..1000 {
        let m = f64::from(m);
        // The even step, then the odd one.
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        result *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let step = d * c;
        result *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    result
}

/// ln Γ(x) for x > 0 (Lanczos' approximation, g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published two-sided 95 % critical values of Student's t (any
    /// statistics table; df = 1 is tan(0.475π)).
    #[test]
    fn t_quantiles_match_the_published_table() {
        let table = [
            (1.0, 12.706205),
            (2.0, 4.302653),
            (4.0, 2.776445),
            (9.0, 2.262157),
            (19.0, 2.093024),
            (29.0, 2.045230),
            (99.0, 1.984217),
            (1000.0, 1.962339),
        ];
        for (df, expected) in table {
            let t = t_quantile_975(df);
            assert!((t - expected).abs() < 5e-6, "df {df}: {t} vs {expected}");
        }
        let exact = (0.475 * std::f64::consts::PI).tan();
        assert!((t_quantile_975(1.0) - exact).abs() < 1e-9);
    }

    #[test]
    fn ln_gamma_is_exact_on_factorials_and_at_a_half() {
        for (x, factorial) in [(1.0, 1.0), (2.0, 1.0), (5.0, 24.0), (11.0, 3_628_800.0f64)] {
            assert!((ln_gamma(x) - factorial.ln()).abs() < 1e-10, "{x}");
        }
        let root_pi = std::f64::consts::PI.sqrt().ln();
        assert!((ln_gamma(0.5) - root_pi).abs() < 1e-10);
    }

    /// Four costs worked by hand: mean 5, squares 9 + 1 + 1 + 9 = 20,
    /// sd = √(20 / 3) = 2.581989; half-width t(0.975, 3) = 3.182446 times
    /// 2.581989 / 2 = 4.108521; quartiles at (n − 1)·p = 0.75, 1.5, 2.25.
    #[test]
    fn statistics_of_four_values_match_the_hand_computation() {
        let s = statistics(&[8.0, 2.0, 6.0, 4.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.sd, Some(2.581989));
        assert_eq!((s.min, s.max), (2.0, 8.0));
        // Sorted 2, 4, 6, 8: 2 + 0.75·2, 4 + 0.5·2, 6 + 0.25·2.
        assert_eq!((s.q1, s.median, s.q3), (3.5, 5.0, 6.5));
        assert_eq!(s.ci95_low, Some(0.891479));
        assert_eq!(s.ci95_high, Some(9.108521));
    }

    #[test]
    fn one_value_has_no_spread_and_none_has_no_statistics() {
        let s = statistics(&[3.25]).unwrap();
        assert_eq!(
            (s.mean, s.sd, s.ci95_low, s.ci95_high),
            (3.25, None, None, None)
        );
        assert_eq!((s.q1, s.median, s.q3), (3.25, 3.25, 3.25));
        assert_eq!(statistics(&[]), None);
    }
}
