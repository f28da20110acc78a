//! What every seed's claims share: reading the run's rows (a simulated scheduler's point at K, a per-K series, a
//! ratio of two series, the lab's row of a configuration in a receive mode at K), formatting ratios, and judging
//! a seed's claims into headlines. The claims themselves are data ([`cosched_report::claims::Claim`]); a seed's
//! file lists them with one short function each that reads its values through what is here.
//!
//! Conventions: K = competitors per node; "the largest K" is the largest competitor count of the experiment; a
//! simulated scheduler is named by its configuration label without DCS's constants
//! (`DCS, spin only, E=-1, C=0` → `DCS, spin only`); a lab mode is matched by prefix (`spin-block` matches
//! `spin-block:1600`).

use super::SeedResults;
use cosched_lab::output::{ComparisonRow, Ratio};
use cosched_report::claims::{Claim, Measured, Part, Value};
use cosched_report::headlines::{Headline, Scale};
use cosched_report::stats::Estimate;
use cosched_report::summary::SummaryRow;

/// A simulated claim's measurement, from the run's summaries.
pub type SimCheck = fn(&SeedResults) -> Measured;
/// A real claim's measurement, from the lab's comparison rows.
pub type RealCheck = fn(&[ComparisonRow]) -> Measured;
/// A real claim: what it says, the real experiment whose rows it reads (a skipped one makes it `not run`), and
/// how it reads them.
pub type RealClaim = (&'static Claim, &'static str, RealCheck);

/// Every headline of a seed in this run: the simulated claims (at the run's scale), then the real ones (`not
/// run: <why>` when the lab did not run, or skipped the claim's experiment; the lab is never scaled down, so
/// they are `full`).
pub fn judge_all(
    seed: &str,
    results: &SeedResults,
    sim: &[(&Claim, SimCheck)],
    real: &[RealClaim],
) -> Vec<Headline> {
    let mut out: Vec<Headline> = sim
        .iter()
        .map(|(claim, check)| claim.judge(seed, results.scale, check(results)))
        .collect();
    out.extend(
        real.iter()
            .map(|(claim, experiment, check)| match &results.real {
                Ok(real) => match real.skipped.get(*experiment) {
                    Some(why) => claim.not_run(seed, Scale::Full, why),
                    None => claim.judge(seed, Scale::Full, check(&real.comparison)),
                },
                Err(why) => claim.not_run(seed, Scale::Full, why),
            }),
    );
    out
}

// ---- the simulated summaries ----

/// The scheduler a configuration label names, without DCS's constants.
pub fn scheduler(label: &str) -> String {
    label
        .split(", ")
        .filter(|part| !part.starts_with("E=") && !part.starts_with("C="))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A statistic of a summary row, with its interval.
pub type Metric = fn(&SummaryRow) -> Value;

/// A mean of repetitions of a quantity that cannot be negative (a time, an F), with its interval.
pub fn non_negative(estimate: &Estimate) -> Value {
    Value::of(estimate).non_negative()
}

/// The parallel job's mean response time.
pub fn response(r: &SummaryRow) -> Value {
    non_negative(&r.response_s)
}

/// The parallel job's mean CPU time.
pub fn cpu(r: &SummaryRow) -> Value {
    non_negative(&r.cpu_s)
}

/// The parallel job's mean F.
pub fn fairness(r: &SummaryRow) -> Value {
    non_negative(&r.job_fairness)
}

/// One simulated experiment's summary rows.
pub struct Experiment<'a> {
    pub name: &'a str,
    pub rows: &'a [SummaryRow],
}

impl<'a> Experiment<'a> {
    pub fn of(results: &'a SeedResults, name: &'a str) -> Result<Self, String> {
        let rows = results
            .sim
            .get(name)
            .filter(|rows| !rows.is_empty())
            .ok_or_else(|| format!("no {name} results"))?;
        Ok(Experiment { name, rows })
    }

    /// The scheduler's point at K competitors.
    pub fn at(&self, scheduler_name: &str, k: u32) -> Result<&'a SummaryRow, String> {
        self.rows
            .iter()
            .find(|r| r.competitors == k && scheduler(&r.config) == scheduler_name)
            .ok_or_else(|| format!("no `{scheduler_name}` at K={k} in {}", self.name))
    }

    /// `metric` of the scheduler's point at K.
    pub fn value(&self, scheduler_name: &str, k: u32, metric: Metric) -> Result<Value, String> {
        self.at(scheduler_name, k).map(metric)
    }

    /// The largest competitor count of the experiment.
    pub fn largest_k(&self) -> u32 {
        self.rows.iter().map(|r| r.competitors).max().unwrap_or(0)
    }

    /// `metric(numerator) / metric(denominator)` at each K >= 1 where both schedulers have a point, ascending K.
    pub fn ratios(
        &self,
        numerator: &str,
        denominator: &str,
        metric: Metric,
    ) -> Result<Series, String> {
        let ratios: Series = self
            .rows
            .iter()
            .filter(|r| r.competitors >= 1 && scheduler(&r.config) == numerator)
            .filter_map(|n| {
                let d = self.at(denominator, n.competitors).ok()?;
                Some((n.competitors, metric(n).ratio(metric(d))))
            })
            .collect();
        if ratios.is_empty() {
            return Err(format!(
                "no K >= 1 with both `{numerator}` and `{denominator}` in {}",
                self.name
            ));
        }
        Ok(ratios)
    }

    /// `metric` of the scheduler at each K >= 1, ascending K.
    pub fn series(&self, scheduler_name: &str, metric: Metric) -> Result<Series, String> {
        let series: Series = self
            .rows
            .iter()
            .filter(|r| r.competitors >= 1 && scheduler(&r.config) == scheduler_name)
            .map(|r| (r.competitors, metric(r)))
            .collect();
        if series.is_empty() {
            return Err(format!(
                "no `{scheduler_name}` with competitors in {}",
                self.name
            ));
        }
        Ok(series)
    }
}

/// A statistic at each K.
pub type Series = Vec<(u32, Value)>;

/// The K of the largest point estimate, and the largest value: its interval from the largest low end to the
/// largest high end over K ([`Value::max_of`]), so "up to x" holds when some K's whole interval passes.
pub fn largest(series: &[(u32, Value)]) -> (u32, Value) {
    let k = series
        .iter()
        .fold((0, f64::NEG_INFINITY), |best, (k, v)| {
            if v.mean > best.1 {
                (*k, v.mean)
            } else {
                best
            }
        })
        .0;
    let value = Value::max_of(series.iter().map(|(_, v)| *v)).unwrap_or(Value::point(f64::NAN));
    (k, value)
}

/// `lo–hi over K=a–b`, the span of a per-K series' point estimates.
pub fn span(series: &[(u32, Value)], show: fn(f64) -> String) -> String {
    let lo = series
        .iter()
        .map(|v| v.1.mean)
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .map(|v| v.1.mean)
        .fold(f64::NEG_INFINITY, f64::max);
    let (first, last) = (series[0].0, series[series.len() - 1].0);
    format!("{}–{} over K={first}–{last}", show(lo), show(hi))
}

/// A ratio for reading: `172×`, `10.4×`, `1.16×`. A ratio whose denominator is 0 has no size, and the row says
/// why instead of printing `inf×`: `— (baseline 0)` (`x / 0`), `— (0 / 0)`.
pub fn times(x: f64) -> String {
    if x.is_nan() {
        "— (0 / 0)".to_string()
    } else if x.is_infinite() {
        "— (baseline 0)".to_string()
    } else if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

/// Two decimals: an F.
pub fn two(x: f64) -> String {
    format!("{x:.2}")
}

/// A value for reading: `show(mean)`, then its interval in brackets where it has one: `172× [95.1×–300×]`. An
/// unbounded end (a ratio whose denominator's interval reaches 0, [`Value::ratio`]) reads `∞`: `268× [190×–∞]`,
/// as the statistic column writes it.
pub fn shown(value: Value, show: fn(f64) -> String) -> String {
    let end = |x: f64| {
        if x == f64::INFINITY {
            "∞".to_string()
        } else if x == f64::NEG_INFINITY {
            "−∞".to_string()
        } else {
            show(x)
        }
    };
    match value.interval {
        Some((lo, hi)) => format!("{} [{}–{}]", show(value.mean), end(lo), end(hi)),
        None => show(value.mean),
    }
}

/// One check on each of a seed's benchmarks (`(label, experiment)`), a part each: `Latency: ...; Barrier: ...`.
pub fn per_experiment(
    results: &SeedResults,
    experiments: &[(&str, &str)],
    check: impl Fn(&Experiment) -> Result<(String, Vec<Value>), String>,
) -> Measured {
    experiments
        .iter()
        .map(|(label, name)| {
            let (ours, values) = check(&Experiment::of(results, name)?)?;
            Ok(Part::new(format!("{label}: "), ours, values))
        })
        .collect()
}

// ---- the lab's comparison rows ----

/// The lab's row of `configuration` in a receive mode (a prefix: `spin-block` matches `spin-block:1600`) at K
/// competitors, from `experiment`.
pub fn lab_row<'a>(
    rows: &'a [ComparisonRow],
    experiment: &str,
    configuration: &str,
    mode: &str,
    k: u32,
) -> Result<&'a ComparisonRow, String> {
    rows.iter()
        .find(|r| {
            r.experiment == experiment
                && r.configuration == configuration
                && r.mode.starts_with(mode)
                && r.competitors == k
        })
        .ok_or_else(|| format!("no `{configuration}, {mode}` run at K={k} in {experiment}"))
}

/// Every row of `configuration` in a receive mode, ascending K as the lab wrote them.
pub fn lab_rows<'a>(
    rows: &'a [ComparisonRow],
    experiment: &str,
    configuration: &str,
    mode: &str,
) -> Result<Vec<&'a ComparisonRow>, String> {
    let found: Vec<&ComparisonRow> = rows
        .iter()
        .filter(|r| {
            r.experiment == experiment
                && r.configuration == configuration
                && r.mode.starts_with(mode)
        })
        .collect();
    if found.is_empty() {
        return Err(format!("no `{configuration}, {mode}` runs in {experiment}"));
    }
    Ok(found)
}

/// One check on each of `rows`, a part each labelled by its K: `K=1 ...; K=2 ...`.
pub fn per_row(
    rows: &[&ComparisonRow],
    check: impl Fn(&ComparisonRow) -> Result<(String, Vec<Value>), String>,
) -> Measured {
    rows.iter()
        .map(|r| {
            let (ours, values) = check(r)?;
            Ok(Part::new(format!("K={} ", r.competitors), ours, values))
        })
        .collect()
}

/// A paired ratio (geometric mean of the pairs and its 90 % interval) as a value.
pub fn ratio_value(ratio: &Ratio) -> Value {
    Value {
        mean: ratio.mean,
        interval: ratio.interval,
    }
}

/// A paired ratio for reading, the unit after the mean: `2.63× (0.38–18.09)`, or `2.63×` for one pair.
pub fn ratio_text(ratio: &Ratio, unit: &str) -> String {
    match ratio.interval {
        Some((lo, hi)) => format!("{:.2}{unit} ({lo:.2}–{hi:.2})", ratio.mean),
        None => format!("{:.2}{unit}", ratio.mean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_drops_only_the_dcs_constants() {
        assert_eq!(scheduler("DCS, spin only, E=-1, C=0"), "DCS, spin only");
        assert_eq!(
            scheduler("DCS, spin-block, E=2, C=100, ts_slpret[n]=n"),
            "DCS, spin-block, ts_slpret[n]=n"
        );
        assert_eq!(scheduler("No DCS, spin-block"), "No DCS, spin-block");
    }

    #[test]
    fn a_ratio_shows_its_interval_after_the_unit() {
        let r = Ratio {
            mean: 2.634,
            interval: Some((0.381, 18.09)),
            pairs: 2,
        };
        assert_eq!(ratio_text(&r, "×"), "2.63× (0.38–18.09)");
        assert_eq!(
            ratio_text(&r, " of the bound"),
            "2.63 of the bound (0.38–18.09)"
        );
        assert_eq!(ratio_value(&r), Value::with_interval(2.634, 0.381, 18.09));
    }

    #[test]
    fn the_largest_of_a_series_takes_the_largest_ends() {
        let s = vec![
            (1, Value::with_interval(2.0, 1.0, 3.0)),
            (4, Value::with_interval(5.0, 1.5, 9.0)),
            (8, Value::point(4.0)),
        ];
        // Point estimates: the largest is 5 at K = 4; its ends: max(1, 1.5, 4) = 4, max(3, 9, 4) = 9.
        assert_eq!(largest(&s), (4, Value::with_interval(5.0, 4.0, 9.0)));
        assert_eq!(span(&s, times), "2.00×–5.00× over K=1–8");
        assert_eq!(
            shown(Value::with_interval(5.0, 4.0, 9.0), times),
            "5.00× [4.00×–9.00×]"
        );
        assert_eq!(shown(Value::point(0.5), two), "0.50");
    }

    #[test]
    fn a_ratio_over_a_zero_baseline_says_so_instead_of_inf() {
        // 3 / 0 = ∞: no size to print; 0 / 0 = NaN.
        let (three, zero) = (Value::point(3.0), Value::point(0.0));
        assert_eq!(times(three.ratio(zero).mean), "— (baseline 0)");
        assert_eq!(times(f64::NEG_INFINITY), "— (baseline 0)");
        assert_eq!(times(zero.ratio(zero).mean), "— (0 / 0)");
        assert_eq!(times(268.4), "268×");
        assert_eq!(times(31.64), "31.6×");
        assert_eq!(times(1.155), "1.16×");
        // A finite ratio whose denominator's interval reaches 0 ([0, 2]): 10 / [0, 2] is [5, ∞) (seed 000's
        // Barrier row printed `[190×–inf×]`).
        let ratio = Value::point(10.0).ratio(Value::with_interval(1.0, 0.0, 2.0));
        assert_eq!(shown(ratio, times), "10.0× [5.00×–∞]");
        assert_eq!(
            shown(
                Value::with_interval(1.0, f64::NEG_INFINITY, f64::INFINITY),
                times
            ),
            "1.00× [−∞–∞]"
        );
        // A zero baseline's mean says so.
        assert_eq!(shown(Value::point(f64::INFINITY), times), "— (baseline 0)");
    }
}
