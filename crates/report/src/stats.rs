//! Mean and Student-t confidence interval of repeated runs.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.1 — "In all graphs, the mean of several runs is shown along with 90%
//! confidence intervals computed using Student's T-distribution."
//!
//! ## Terminology
//! - `x_i` — one run's value (response time, CPU time, F, ...), `n` the number of runs.
//! - `mean = Σ x_i / n`.
//! - `s` — sample standard deviation, `s² = Σ (x_i - mean)² / (n - 1)`.
//! - `t` — the two-sided Student-t quantile `t(1 - α/2, n - 1)`; for a 90 % interval `α = 0.10`, so `t(0.95, n-1)`.
//! - `half_width = t × s / √n`; the interval is `mean ± half_width`.
//!
//! With one run there is no spread to estimate: the half width is `None`, never a made-up zero.
//!
//! Also the plain summaries of per-process values in one run: [`mean`], and [`mean_min_max`] (a job's F over its
//! processes, `JobResult::fairness`, `fairness_min`, `fairness_max`).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level the seed used for every figure.
pub const SEED_CONFIDENCE: f64 = 0.90;

/// A mean with its Student-t confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub mean: f64,
    /// Half width of the confidence interval; `None` with fewer than two samples.
    pub half_width: Option<f64>,
    /// Samples the estimate is made of.
    pub n: u32,
}

impl Estimate {
    /// `mean ± half_width` as text with `digits` significant-looking decimals, e.g. `12.34 ± 0.56`.
    pub fn display(&self, decimals: usize) -> String {
        match self.half_width {
            Some(h) => format!("{:.*} ± {:.*}", decimals, self.mean, decimals, h),
            None => format!("{:.*}", decimals, self.mean),
        }
    }

    /// Lower and upper end of the interval (the mean itself when there is no interval).
    pub fn bounds(&self) -> (f64, f64) {
        let h = self.half_width.unwrap_or(0.0);
        (self.mean - h, self.mean + h)
    }
}

/// The two-sided Student-t quantile for `confidence` (e.g. 0.90) and `degrees_of_freedom` (n - 1).
pub fn student_t_quantile(confidence: f64, degrees_of_freedom: u32) -> f64 {
    assert!(
        confidence > 0.0 && confidence < 1.0,
        "confidence must be in (0, 1), got {confidence}"
    );
    assert!(
        degrees_of_freedom > 0,
        "Student-t needs at least one degree of freedom"
    );
    let t = StudentsT::new(0.0, 1.0, degrees_of_freedom as f64)
        .expect("location 0, scale 1 and a positive number of degrees of freedom are valid");
    t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
}

/// `Σ x_i / n`; `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Mean, minimum and maximum of `values`; zeros for an empty slice (a job with no process to measure).
pub fn mean_min_max(values: &[f64]) -> (f64, f64, f64) {
    let Some(mean) = mean(values) else {
        return (0.0, 0.0, 0.0);
    };
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Mean and `confidence` Student-t interval of `samples`; `None` for an empty slice.
pub fn mean_with_interval(samples: &[f64], confidence: f64) -> Option<Estimate> {
    let n = samples.len();
    let mean = mean(samples)?;
    let half_width = (n >= 2).then(|| {
        let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        student_t_quantile(confidence, (n - 1) as u32) * variance.sqrt() / (n as f64).sqrt()
    });
    Some(Estimate {
        mean,
        half_width,
        n: n as u32,
    })
}

/// The seed's statistic: mean and 90 % Student-t interval.
pub fn mean_ci90(samples: &[f64]) -> Option<Estimate> {
    mean_with_interval(samples, SEED_CONFIDENCE)
}

/// A value with four significant digits and no exponent below 10⁶ (seconds, rates, F).
pub fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if magnitude >= 6 {
        return format!("{x:.3e}");
    }
    let decimals = (3 - magnitude).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn mean_min_max_by_hand() {
        // 1, 2, 3: sum 6 / 3 = 2, smallest 1, largest 3.
        assert_eq!(mean_min_max(&[1.0, 2.0, 3.0]), (2.0, 1.0, 3.0));
        assert_eq!(mean_min_max(&[0.5]), (0.5, 0.5, 0.5));
        assert_eq!(mean_min_max(&[]), (0.0, 0.0, 0.0));
        // 0.25 + 1.75 = 2 / 2 = 1.
        assert_eq!(mean(&[0.25, 1.75]), Some(1.0));
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn t_quantiles_match_the_printed_tables() {
        // Printed tables: t(0.95, 4) = 2.132, t(0.95, 1) = 6.314, t(0.975, 10) = 2.228.
        assert!(close(student_t_quantile(0.90, 4), 2.132, 5e-4));
        assert!(close(student_t_quantile(0.90, 1), 6.314, 5e-4));
        assert!(close(student_t_quantile(0.95, 10), 2.228, 5e-4));
    }

    #[test]
    fn ninety_percent_interval_by_hand() {
        // Samples 10, 12, 14, 16, 18: n = 5, mean = 70 / 5 = 14.
        // Squared deviations 16 + 4 + 0 + 4 + 16 = 40; s² = 40 / 4 = 10; s = 3.1623.
        // Half width = t(0.95, 4) × s / √5 = 2.1318 × 3.1623 / 2.2361 = 3.0149.
        let e = mean_ci90(&[10.0, 12.0, 14.0, 16.0, 18.0]).unwrap();
        assert_eq!(e.n, 5);
        assert!(close(e.mean, 14.0, 1e-12));
        assert!(close(e.half_width.unwrap(), 3.0149, 1e-3), "{e:?}");
        assert_eq!(e.display(1), "14.0 ± 3.0");
    }

    #[test]
    fn identical_samples_have_a_zero_width_interval() {
        // s = 0, so t × s / √n = 0 whatever t is.
        let e = mean_ci90(&[2.5, 2.5, 2.5]).unwrap();
        assert_eq!(e.half_width, Some(0.0));
        assert_eq!(e.bounds(), (2.5, 2.5));
    }

    #[test]
    fn one_sample_has_no_interval_and_none_has_no_mean() {
        let e = mean_ci90(&[7.0]).unwrap();
        assert_eq!(e.half_width, None);
        assert_eq!(e.display(2), "7.00");
        assert_eq!(mean_ci90(&[]), None);
    }

    #[test]
    fn two_samples_use_the_wide_one_degree_quantile() {
        // 1 and 3: mean 2, s² = (1 + 1) / 1 = 2, s = 1.4142; half width = 6.3138 × 1.4142 / 1.4142 = 6.3138.
        let e = mean_ci90(&[1.0, 3.0]).unwrap();
        assert!(close(e.half_width.unwrap(), 6.3138, 1e-3));
    }
}
