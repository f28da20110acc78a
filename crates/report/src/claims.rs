//! Claims as data: a seed paper's headline claim, the statistics it is judged by, and the interval-aware verdict.
//!
//! A [`Claim`] states the paper's words (with the section and figure they come from) and one or more [`Test`]s.
//! A test names the statistic read from the run's rows, its [`Threshold`] — given once, as a value: the `test`
//! text of `results/headlines.json` is generated from it ([`Threshold::text`]) — and the paper's own figure for
//! the same statistic ([`Test::paper`]). A threshold that is not the paper's figure (or where the paper gives no
//! number) carries its reason ([`Test::why`]), and the reason goes into the row.
//!
//! The run gives each test a [`Value`]: the point estimate and, where the run has one, its 90 % interval (the
//! seed's statistic, [`crate::stats`]). A threshold judges a value three ways ([`Verdict`]):
//!
//! - `holds`: the whole interval is on the right side of the threshold (with no interval: the point estimate is);
//! - `within noise`: the interval straddles the threshold, whichever side the point estimate is on;
//! - `fails`: the whole interval is on the wrong side (with no interval: the point estimate is).
//!
//! A claim is often checked on several parts (each benchmark, each competitor count): each part gives one value
//! per test ([`Part`]). The claim's verdict is the weakest over its parts and tests (`fails` < `within noise` <
//! `holds`); `holds` in the row stays the point estimates' verdict, as before the intervals were used.
//!
//! Values derived from several estimates (a ratio of two means, the largest over K, a mean of end times) get
//! their interval by interval arithmetic over the ends of the estimates' intervals ([`Value::ratio`],
//! [`Value::max_of`], ...): conservative (it assumes nothing about how the estimates covary), and never narrower
//! than the intervals it is made of.

use crate::docdata::DocTable;
use crate::headlines::{Backend, Headline, Scale, Verdict};
use crate::stats::Estimate;

/// A statistic of a run: its point estimate and its 90 % interval (`low`, `high`), when the run has one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    pub mean: f64,
    pub interval: Option<(f64, f64)>,
}

impl Value {
    /// A value without an interval (one run, or a quantity with no spread).
    pub fn point(mean: f64) -> Value {
        Value {
            mean,
            interval: None,
        }
    }

    /// A value with its interval.
    pub fn with_interval(mean: f64, low: f64, high: f64) -> Value {
        Value {
            mean,
            interval: Some((low, high)),
        }
    }

    /// A mean of repetitions and its Student-t interval.
    pub fn of(estimate: &Estimate) -> Value {
        Value {
            mean: estimate.mean,
            interval: estimate
                .half_width
                .map(|h| (estimate.mean - h, estimate.mean + h)),
        }
    }

    /// The interval's ends, or the point estimate twice.
    pub fn bounds(&self) -> (f64, f64) {
        self.interval.unwrap_or((self.mean, self.mean))
    }

    /// Combines two values: `f` of the means, and the smallest and largest of `f` over the ends of the two
    /// intervals (exact for a function monotonic in each argument); no interval when neither has one.
    fn combine(self, other: Value, f: impl Fn(f64, f64) -> f64) -> Value {
        let mean = f(self.mean, other.mean);
        if self.interval.is_none() && other.interval.is_none() {
            return Value::point(mean);
        }
        let (a, b) = (self.bounds(), other.bounds());
        let ends = [f(a.0, b.0), f(a.0, b.1), f(a.1, b.0), f(a.1, b.1)];
        let low = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Value::with_interval(mean, low, high)
    }

    /// A quantity that cannot be negative (a time, an F): the interval's low end raised to 0 where the Student-t
    /// interval of a few noisy repetitions reaches below it.
    pub fn non_negative(self) -> Value {
        Value {
            mean: self.mean,
            interval: self.interval.map(|(low, high)| (low.max(0.0), high)),
        }
    }

    /// `self / denominator`. A denominator's interval across zero makes the quotient's unbounded; one that starts
    /// at zero (a [`Value::non_negative`] one) makes it unbounded on the numerator's side.
    pub fn ratio(self, denominator: Value) -> Value {
        let mean = self.mean / denominator.mean;
        let (d_low, d_high) = denominator.bounds();
        if denominator.interval.is_none() || d_low > 0.0 || d_high < 0.0 {
            return self.combine(denominator, |a, b| a / b);
        }
        if d_low < 0.0 && d_high > 0.0 || d_high == 0.0 {
            return Value::with_interval(mean, f64::NEG_INFINITY, f64::INFINITY);
        }
        // [0, d_high]: the quotient's ends are a / d_high and a / 0+ = ±∞ for each end a of the numerator.
        let (a_low, a_high) = self.bounds();
        let toward_zero = |a: f64| {
            if a > 0.0 {
                f64::INFINITY
            } else if a < 0.0 {
                f64::NEG_INFINITY
            } else {
                0.0
            }
        };
        let ends = [
            a_low / d_high,
            a_high / d_high,
            toward_zero(a_low),
            toward_zero(a_high),
        ];
        let low = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Value::with_interval(mean, low, high)
    }

    /// `self - other`.
    pub fn minus(self, other: Value) -> Value {
        self.combine(other, |a, b| a - b)
    }

    /// `self + other`.
    pub fn plus(self, other: Value) -> Value {
        self.combine(other, |a, b| a + b)
    }

    /// `|self - target|`: an interval that contains the target starts at 0.
    pub fn distance_from(self, target: f64) -> Value {
        let mean = (self.mean - target).abs();
        let Some((low, high)) = self.interval else {
            return Value::point(mean);
        };
        let (near, far) = ((low - target).abs(), (high - target).abs());
        let low_end = if low <= target && target <= high {
            0.0
        } else {
            near.min(far)
        };
        Value::with_interval(mean, low_end, near.max(far))
    }

    /// The largest of `values` (by point estimate), its interval from the largest low end to the largest high
    /// end; `None` for none.
    pub fn max_of(values: impl IntoIterator<Item = Value>) -> Option<Value> {
        values.into_iter().reduce(|a, b| a.combine(b, f64::max))
    }

    /// The smallest of `values`, its interval from the smallest low end to the smallest high end.
    pub fn min_of(values: impl IntoIterator<Item = Value>) -> Option<Value> {
        values.into_iter().reduce(|a, b| a.combine(b, f64::min))
    }

    /// The mean of `values`; `None` for none.
    pub fn mean_of(values: &[Value]) -> Option<Value> {
        let sum = values.iter().copied().reduce(Value::plus)?;
        let n = values.len() as f64;
        Some(Value {
            mean: sum.mean / n,
            interval: sum.interval.map(|(low, high)| (low / n, high / n)),
        })
    }
}

/// Where a statistic must lie for a claim to hold. The value is given once; the test's text is made from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// `>= x`.
    AtLeast(f64),
    /// `> x`.
    Above(f64),
    /// `<= x`.
    AtMost(f64),
    /// `< x`.
    Below(f64),
    /// `in [low, high]`, both ends included.
    Within(f64, f64),
}

impl Threshold {
    /// Whether `x` is on the right side.
    pub fn passes(self, x: f64) -> bool {
        match self {
            Threshold::AtLeast(t) => x >= t,
            Threshold::Above(t) => x > t,
            Threshold::AtMost(t) => x <= t,
            Threshold::Below(t) => x < t,
            Threshold::Within(low, high) => low <= x && x <= high,
        }
    }

    /// Whether every value of `[low, high]` is on the wrong side.
    fn wholly_fails(self, low: f64, high: f64) -> bool {
        match self {
            Threshold::AtLeast(t) => high < t,
            Threshold::Above(t) => high <= t,
            Threshold::AtMost(t) => low > t,
            Threshold::Below(t) => low >= t,
            Threshold::Within(a, b) => high < a || low > b,
        }
    }

    /// The verdict on `value`: by its interval where it has one (see the module doc), else by its point estimate.
    /// A value that is not a number fails.
    pub fn verdict(self, value: Value) -> Verdict {
        let point = if self.passes(value.mean) {
            Verdict::Holds
        } else {
            Verdict::Fails
        };
        match value.interval {
            Some((low, high)) if !low.is_nan() && !high.is_nan() && !value.mean.is_nan() => {
                if self.passes(low) && self.passes(high) {
                    Verdict::Holds
                } else if self.wholly_fails(low, high) {
                    Verdict::Fails
                } else {
                    Verdict::WithinNoise
                }
            }
            _ => point,
        }
    }

    /// The threshold in words, from its value: `>= 31.6`, `in [0.9, 1.15]`.
    pub fn text(self) -> String {
        match self {
            Threshold::AtLeast(t) => format!(">= {}", number(t)),
            Threshold::Above(t) => format!("> {}", number(t)),
            Threshold::AtMost(t) => format!("<= {}", number(t)),
            Threshold::Below(t) => format!("< {}", number(t)),
            Threshold::Within(low, high) => format!("in [{}, {}]", number(low), number(high)),
        }
    }
}

/// A threshold's number as written: exactly, with at most three decimals, where that is the value (`0.9`,
/// `1.15`, `10`); else three significant digits (`10^1.5` → `31.6`, `1 / 1.15` → `0.870`).
pub fn number(x: f64) -> String {
    for decimals in 0..=3 {
        let text = format!("{x:.decimals$}");
        if text.parse::<f64>() == Ok(x) {
            return text;
        }
    }
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// One statistic of a claim and where it must lie.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Test {
    /// What is read from the run, in words, so that "`statistic` is `threshold`" reads as the test: e.g.
    /// "per benchmark, the largest `No DCS, spin only` / `DCS, spin only` response-time ratio over K >= 1".
    pub statistic: &'static str,
    pub threshold: Threshold,
    /// The paper's (or, for the real agent, the SPEC target's) own figure for the statistic, as a threshold of
    /// the same kind; `None` where it states no bound (a size such as "up to 20 %", or words such as "no
    /// coscheduling is achieved" read off a plot).
    pub paper: Option<Threshold>,
    /// Why [`Test::threshold`] is not [`Test::paper`]: required when they differ or the paper states no bound.
    pub why: Option<&'static str>,
}

impl Test {
    /// `<statistic> is <threshold>`, and the paper's figure where it is another.
    pub fn text(&self) -> String {
        let mut text = format!("{} is {}", self.statistic, self.threshold.text());
        match self.paper {
            Some(paper) if paper == self.threshold => {}
            Some(paper) => text.push_str(&format!(" (the paper: {})", paper.text())),
            None => text.push_str(" (the paper states no bound)"),
        }
        text
    }

    /// Whether the threshold is the paper's figure, or says why not.
    pub fn is_explained(&self) -> bool {
        self.paper == Some(self.threshold) || self.why.is_some_and(|w| !w.trim().is_empty())
    }
}

/// One part of a claim in one run (a benchmark, a competitor count): a label (`Latency: `, `K=1 `), what was
/// measured in words, and one value per test of the claim, in the claim's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub label: String,
    pub ours: String,
    pub values: Vec<Value>,
}

impl Part {
    pub fn new(label: impl Into<String>, ours: impl Into<String>, values: Vec<Value>) -> Part {
        Part {
            label: label.into(),
            ours: ours.into(),
            values,
        }
    }

    /// A part without a label (a claim checked once).
    pub fn whole(ours: impl Into<String>, values: Vec<Value>) -> Part {
        Part::new("", ours, values)
    }
}

/// A claim's parts in one run, or why the run lacks what the claim needs.
pub type Measured = Result<Vec<Part>, String>;

/// A headline claim of a seed paper: the part that does not depend on the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Claim {
    /// The claim, as one sentence.
    pub claim: &'static str,
    /// The paper's words, with the section and figure (or, for the real agent, the SPEC target).
    pub paper: &'static str,
    pub backend: Backend,
    /// What decides it; every test must hold.
    pub tests: &'static [Test],
}

impl Claim {
    /// The `test` field: each test's text, joined by `; and `.
    pub fn test_text(&self) -> String {
        self.tests
            .iter()
            .map(Test::text)
            .collect::<Vec<_>>()
            .join("; and ")
    }

    /// The `why` field: the reasons of the thresholds that are not the paper's figures, joined; `None` when every
    /// threshold is the paper's figure.
    pub fn why(&self) -> Option<String> {
        let reasons: Vec<&str> = self
            .tests
            .iter()
            .filter(|t| t.paper != Some(t.threshold))
            .filter_map(|t| t.why)
            .collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// The headline of this claim in one run: each part judged by each test (a part that does not hold is
    /// marked `(within noise)` or `(fails)` in `ours`), the verdict the weakest of them, `holds` the point
    /// estimates'. `Err(why)` (the run lacks a series, or a part has the wrong number of values) leaves the claim
    /// unchecked: `ours` is `missing: why`.
    pub fn judge(&self, seed: &str, scale: Scale, measured: Measured) -> Headline {
        match self.judge_parts(measured) {
            Ok((ours, holds, verdict)) => {
                self.headline(seed, scale, ours, Some(holds), Some(verdict))
            }
            Err(why) => self.headline(seed, scale, format!("missing: {why}"), None, None),
        }
    }

    fn judge_parts(&self, measured: Measured) -> Result<(String, bool, Verdict), String> {
        let parts = measured?;
        if parts.is_empty() {
            return Err("nothing to judge".to_string());
        }
        let mut texts = Vec::new();
        let mut holds = true;
        let mut verdict = Verdict::Holds;
        for part in parts {
            if part.values.len() != self.tests.len() {
                return Err(format!(
                    "{} values for {} tests in `{}{}`",
                    part.values.len(),
                    self.tests.len(),
                    part.label,
                    part.ours
                ));
            }
            let mut part_verdict = Verdict::Holds;
            for (test, value) in self.tests.iter().zip(&part.values) {
                holds &= test.threshold.passes(value.mean);
                part_verdict = part_verdict.and(test.threshold.verdict(*value));
            }
            let mark = match part_verdict {
                Verdict::Holds => "",
                Verdict::WithinNoise => " (within noise)",
                Verdict::Fails => " (fails)",
            };
            texts.push(format!("{}{}{mark}", part.label, part.ours));
            verdict = verdict.and(part_verdict);
        }
        Ok((texts.join("; "), holds, verdict))
    }

    /// The headline of this claim when its backend did not run: `ours` is `not run: why`, no verdict.
    pub fn not_run(&self, seed: &str, scale: Scale, why: &str) -> Headline {
        self.headline(seed, scale, format!("not run: {why}"), None, None)
    }

    fn headline(
        &self,
        seed: &str,
        scale: Scale,
        ours: String,
        holds: Option<bool>,
        verdict: Option<Verdict>,
    ) -> Headline {
        Headline {
            seed: seed.to_string(),
            claim: self.claim.to_string(),
            paper: self.paper.to_string(),
            backend: self.backend,
            scale,
            ours,
            holds,
            verdict,
            test: self.test_text(),
            why: self.why(),
        }
    }
}

/// The header of a seed's claims table in the docs ([`doc_table`]).
pub const DOC_TABLE_COLUMNS: [&str; 8] = [
    "claim",
    "the paper's words",
    "the paper's figure",
    "test",
    "simulator",
    "statistic (90 % interval)",
    "verdict",
    "why the test differs from the paper",
];

/// What a claims table says under its rows.
const DOC_TABLE_NOTES: &str = "Each claim is judged as `results/headlines.json` judges it (the same code, \
     `cosched_report::claims`). *test*: the statistic read from the run and its threshold, one per test, joined by \
     *and*; *the paper's figure*: the paper's own bound for each test (*none stated* where it gives no number). \
     *statistic*: each part's point estimate and [low, high] 90 % interval (interval arithmetic over the \
     repetitions' Student-t intervals; none where the value has no spread), one per test in the test column's \
     order. *verdict*: `holds` when every interval is on the right side of its threshold, `within noise` when one \
     straddles it (the point estimates' answer in brackets), `fails` when one is wholly on the wrong side; a part \
     that does not hold is marked in the simulator column.";

/// A seed's claims checked in one run, as a table for the docs (`sim-NNN-claims`): one row per claim, in the
/// given order, with the paper's words and figure, the test with its threshold, what the run measured with each
/// statistic's interval, the verdict and, where a threshold is not the paper's figure, why. Each claim is
/// judged by [`Claim::judge`], so a row says what the claim's row of `results/headlines.json` says. The table is
/// not stamped.
pub fn doc_table<'a>(
    name: &str,
    seed: &str,
    scale: Scale,
    claims: impl IntoIterator<Item = (&'a Claim, Measured)>,
) -> DocTable {
    let mut table = DocTable::new(name, DOC_TABLE_COLUMNS).with_notes(DOC_TABLE_NOTES);
    for (claim, measured) in claims {
        let statistics = match &measured {
            Ok(parts) => parts
                .iter()
                .map(|part| {
                    let values: Vec<String> = part.values.iter().map(|v| value_text(*v)).collect();
                    format!("{}{}", part.label, values.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; "),
            Err(_) => "-".to_string(),
        };
        let headline = claim.judge(seed, scale, measured);
        let verdict = match (headline.verdict, headline.holds) {
            (Some(Verdict::WithinNoise), Some(holds)) => {
                format!("within noise ({})", if holds { "holds" } else { "fails" })
            }
            (Some(verdict), _) => verdict.as_str().to_string(),
            (None, _) => "not checked".to_string(),
        };
        let papers: Vec<String> = claim
            .tests
            .iter()
            .map(|t| t.paper.map_or("none stated".to_string(), Threshold::text))
            .collect();
        let tests: Vec<String> = claim
            .tests
            .iter()
            .map(|t| format!("{} is {}", t.statistic, t.threshold.text()))
            .collect();
        table.push(vec![
            claim.claim.to_string(),
            claim.paper.to_string(),
            papers.join("; and "),
            tests.join("; and "),
            headline.ours,
            statistics,
            verdict,
            headline.why.unwrap_or_else(|| "-".to_string()),
        ]);
    }
    table
}

/// A statistic for reading: three significant digits (whole numbers from 1000 up, powers of ten below 0.001),
/// then its interval where it has one: `172 [95.1, 300]`, `0.000120 [0, 0.000310]`.
pub fn value_text(value: Value) -> String {
    match value.interval {
        Some((low, high)) => format!(
            "{} [{}, {}]",
            significant(value.mean),
            significant(low),
            significant(high)
        ),
        None => significant(value.mean),
    }
}

/// Three significant digits: `172`, `1.16`, `0.0500`, `1.20e-5`, `225831`, `∞`.
fn significant(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "∞" } else { "−∞" }.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if magnitude >= 3 {
        return format!("{x:.0}");
    }
    if magnitude < -3 {
        return format!("{x:.2e}");
    }
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAP: Test = Test {
        statistic: "the ratio",
        threshold: Threshold::AtLeast(31.622_776_601_683_793),
        paper: Some(Threshold::AtLeast(100.0)),
        why: Some("two orders on a log scale"),
    };

    const FAIR: Test = Test {
        statistic: "F",
        threshold: Threshold::Within(0.9, 1.15),
        paper: Some(Threshold::Within(0.9, 1.15)),
        why: None,
    };

    const CLAIM: Claim = Claim {
        claim: "DCS is faster and fair",
        paper: "up to 100× (Figure 3)",
        backend: Backend::Sim,
        tests: &[GAP, FAIR],
    };

    #[test]
    fn a_thresholds_text_is_made_from_its_value() {
        assert_eq!(Threshold::AtLeast(31.622_776_601_683_793).text(), ">= 31.6");
        assert_eq!(Threshold::AtLeast(1.0 / 1.15).text(), ">= 0.870");
        assert_eq!(Threshold::Within(0.9, 1.15).text(), "in [0.9, 1.15]");
        assert_eq!(Threshold::Above(1.05).text(), "> 1.05");
        assert_eq!(Threshold::Below(1.0).text(), "< 1");
        assert_eq!(Threshold::AtMost(2.5).text(), "<= 2.5");
        // Change the value and the text follows: nothing is typed twice.
        for t in [0.95, 1.5, 2.0, 10.0, 0.1, 123.456] {
            let text = Threshold::AtLeast(t).text();
            assert_eq!(text.trim_start_matches(">= ").parse::<f64>().unwrap(), t);
        }
        assert_eq!(
            GAP.text(),
            "the ratio is >= 31.6 (the paper: >= 100)",
            "the paper's figure follows where it is another"
        );
        assert_eq!(FAIR.text(), "F is in [0.9, 1.15]");
        assert_eq!(
            CLAIM.test_text(),
            "the ratio is >= 31.6 (the paper: >= 100); and F is in [0.9, 1.15]"
        );
    }

    #[test]
    fn the_three_verdicts_on_synthetic_intervals() {
        let t = Threshold::AtLeast(10.0);
        // Whole interval above: holds; straddling: within noise, whichever side the mean is on; whole below: fails.
        assert_eq!(
            t.verdict(Value::with_interval(12.0, 11.0, 13.0)),
            Verdict::Holds
        );
        assert_eq!(
            t.verdict(Value::with_interval(11.0, 9.0, 13.0)),
            Verdict::WithinNoise
        );
        assert_eq!(
            t.verdict(Value::with_interval(9.5, 8.0, 11.0)),
            Verdict::WithinNoise
        );
        assert_eq!(
            t.verdict(Value::with_interval(8.0, 7.0, 9.0)),
            Verdict::Fails
        );
        // No interval: the point estimate decides.
        assert_eq!(t.verdict(Value::point(10.0)), Verdict::Holds);
        assert_eq!(t.verdict(Value::point(9.99)), Verdict::Fails);
        // A window: inside, across an edge, beside it.
        let w = Threshold::Within(0.9, 1.15);
        assert_eq!(
            w.verdict(Value::with_interval(1.0, 0.95, 1.05)),
            Verdict::Holds
        );
        assert_eq!(
            w.verdict(Value::with_interval(1.1, 1.0, 1.2)),
            Verdict::WithinNoise
        );
        assert_eq!(
            w.verdict(Value::with_interval(0.8, 0.7, 0.85)),
            Verdict::Fails
        );
        // Strict thresholds: an interval ending on the threshold is not wholly on either side.
        assert_eq!(
            Threshold::Below(1.0).verdict(Value::with_interval(0.9, 0.8, 1.0)),
            Verdict::WithinNoise
        );
        assert_eq!(
            Threshold::Above(1.0).verdict(Value::with_interval(0.9, 0.8, 1.0)),
            Verdict::Fails
        );
        assert_eq!(
            Threshold::AtMost(1.1).verdict(Value::with_interval(1.0, 0.9, 1.1)),
            Verdict::Holds
        );
        assert_eq!(t.verdict(Value::point(f64::NAN)), Verdict::Fails);
    }

    #[test]
    fn a_claims_verdict_is_its_weakest_part_and_holds_the_point_estimates() {
        let part = |label: &str, gap: Value, f: Value| Part::new(label, "x", vec![gap, f]);
        let h = CLAIM.judge(
            "000",
            Scale::Full,
            Ok(vec![
                part(
                    "A: ",
                    Value::with_interval(40.0, 35.0, 45.0),
                    Value::point(1.0),
                ),
                part(
                    "B: ",
                    Value::with_interval(40.0, 20.0, 60.0),
                    Value::point(1.0),
                ),
            ]),
        );
        assert_eq!(h.verdict, Some(Verdict::WithinNoise));
        assert_eq!(h.holds, Some(true));
        assert_eq!(h.ours, "A: x; B: x (within noise)");
        assert_eq!(h.why.as_deref(), Some("two orders on a log scale"));
        let h = CLAIM.judge(
            "000",
            Scale::Full,
            Ok(vec![
                part(
                    "A: ",
                    Value::with_interval(40.0, 20.0, 60.0),
                    Value::point(1.0),
                ),
                part(
                    "B: ",
                    Value::point(40.0),
                    Value::with_interval(0.8, 0.7, 0.85),
                ),
            ]),
        );
        assert_eq!(h.verdict, Some(Verdict::Fails));
        assert_eq!(h.holds, Some(false));
        assert_eq!(h.ours, "A: x (within noise); B: x (fails)");
        // A part with a value missing is a programming error reported as missing, not a verdict.
        let h = CLAIM.judge(
            "000",
            Scale::Full,
            Ok(vec![Part::whole("x", vec![Value::point(40.0)])]),
        );
        assert_eq!(h.holds, None);
        assert!(
            h.ours.starts_with("missing: 1 values for 2 tests"),
            "{}",
            h.ours
        );
    }

    #[test]
    fn the_rows_carry_the_generated_test_and_the_reason() {
        let h = CLAIM.judge(
            "000",
            Scale::Quick,
            Ok(vec![Part::whole(
                "x",
                vec![Value::point(40.0), Value::point(1.0)],
            )]),
        );
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["test"], CLAIM.test_text());
        assert_eq!(v["why"], "two orders on a log scale");
        assert_eq!(v["verdict"], "holds");
        assert_eq!(v["holds"], true);
        assert_eq!(v["scale"], "quick");
        let h = CLAIM.not_run("000", Scale::Full, "--sim-only");
        assert_eq!(
            (h.ours.as_str(), h.holds, h.verdict),
            ("not run: --sim-only", None, None)
        );
        assert_eq!(h.test, CLAIM.test_text());
    }

    #[test]
    fn a_threshold_other_than_the_papers_needs_a_reason() {
        assert!(GAP.is_explained());
        assert!(FAIR.is_explained());
        let unexplained = Test { why: None, ..GAP };
        assert!(!unexplained.is_explained());
        let no_number = Test {
            paper: None,
            why: Some(" "),
            ..GAP
        };
        assert!(!no_number.is_explained());
        assert_eq!(
            Test { paper: None, ..GAP }.text(),
            "the ratio is >= 31.6 (the paper states no bound)"
        );
        // Only the tests that differ contribute their reason to the row.
        assert_eq!(
            Claim {
                tests: &[FAIR],
                ..CLAIM
            }
            .why(),
            None
        );
    }

    #[test]
    fn the_claims_table_shows_each_claims_verdict_threshold_interval_and_why() {
        const ORDER: Claim = Claim {
            claim: "B is no faster than A",
            paper: "\"A beats B\" (§3, Figure 2)",
            backend: Backend::Sim,
            tests: &[Test {
                statistic: "B / A time",
                threshold: Threshold::AtLeast(1.0),
                paper: Some(Threshold::AtLeast(1.0)),
                why: None,
            }],
        };
        let table = doc_table(
            "sim-000-claims",
            "000",
            Scale::Full,
            [
                (
                    &CLAIM,
                    Ok(vec![
                        Part::new(
                            "A: ",
                            "172×",
                            vec![Value::with_interval(172.0, 95.1, 300.0), Value::point(1.0)],
                        ),
                        Part::new(
                            "B: ",
                            "40×",
                            vec![Value::with_interval(40.0, 20.0, 60.0), Value::point(1.0)],
                        ),
                    ]),
                ),
                (
                    &ORDER,
                    Ok(vec![Part::whole(
                        "1.02×",
                        vec![Value::with_interval(1.02, 0.97, 1.07)],
                    )]),
                ),
                (&ORDER, Err("no `A` at K=8".to_string())),
            ],
        );
        assert_eq!(table.columns, DOC_TABLE_COLUMNS);
        assert!(table
            .rows
            .iter()
            .all(|r| r.len() == DOC_TABLE_COLUMNS.len()));
        let cell = |row: usize, column: &str| {
            let i = DOC_TABLE_COLUMNS.iter().position(|c| *c == column).unwrap();
            table.rows[row][i].as_str()
        };
        // A claim whose threshold is not the paper's: the paper's figure, the threshold made from its value, each
        // part's values with their intervals, the verdict of the weakest part and the reason it differs.
        assert_eq!(cell(0, "claim"), "DCS is faster and fair");
        assert_eq!(cell(0, "the paper's words"), "up to 100× (Figure 3)");
        assert_eq!(cell(0, "the paper's figure"), ">= 100; and in [0.9, 1.15]");
        assert_eq!(
            cell(0, "test"),
            "the ratio is >= 31.6; and F is in [0.9, 1.15]"
        );
        assert_eq!(cell(0, "simulator"), "A: 172×; B: 40× (within noise)");
        assert_eq!(
            cell(0, "statistic (90 % interval)"),
            "A: 172 [95.1, 300], 1.00; B: 40.0 [20.0, 60.0], 1.00"
        );
        assert_eq!(cell(0, "verdict"), "within noise (holds)");
        assert_eq!(
            cell(0, "why the test differs from the paper"),
            "two orders on a log scale"
        );
        // The paper's own threshold: no reason to give.
        assert_eq!(cell(1, "the paper's figure"), ">= 1");
        assert_eq!(cell(1, "test"), "B / A time is >= 1");
        assert_eq!(cell(1, "statistic (90 % interval)"), "1.02 [0.970, 1.07]");
        assert_eq!(cell(1, "verdict"), "within noise (holds)");
        assert_eq!(cell(1, "why the test differs from the paper"), "-");
        // A run that lacks what the claim needs says so, with no verdict.
        assert_eq!(cell(2, "simulator"), "missing: no `A` at K=8");
        assert_eq!(cell(2, "verdict"), "not checked");
        // Each row says what the claim's headline says.
        let h = ORDER.judge(
            "000",
            Scale::Full,
            Ok(vec![Part::whole(
                "1.02×",
                vec![Value::with_interval(1.02, 1.01, 1.07)],
            )]),
        );
        assert_eq!(h.verdict, Some(Verdict::Holds));
        let t = doc_table(
            "t",
            "000",
            Scale::Full,
            [(
                &ORDER,
                Ok(vec![Part::whole(
                    "1.02×",
                    vec![Value::with_interval(1.02, 1.01, 1.07)],
                )]),
            )],
        );
        assert_eq!(t.rows[0][6], "holds");
        assert_eq!(t.rows[0][4], h.ours);
        assert_eq!(value_text(Value::point(0.000_012)), "1.20e-5");
        assert_eq!(
            value_text(Value::with_interval(225_831.4, 0.0, f64::INFINITY)),
            "225831 [0, ∞]"
        );
    }

    #[test]
    fn interval_arithmetic_of_derived_values() {
        let a = Value::with_interval(10.0, 8.0, 12.0);
        let b = Value::with_interval(2.0, 1.0, 4.0);
        // 10 / 2 = 5; the quotient's ends: 8 / 4 = 2 and 12 / 1 = 12.
        assert_eq!(a.ratio(b), Value::with_interval(5.0, 2.0, 12.0));
        // Without any interval, none.
        assert_eq!(
            Value::point(6.0).ratio(Value::point(3.0)),
            Value::point(2.0)
        );
        // One interval: the point stands for both ends of the other. 10 / [1, 4] → [2.5, 10].
        assert_eq!(
            Value::point(10.0).ratio(b),
            Value::with_interval(5.0, 2.5, 10.0)
        );
        // A denominator that may be zero: unbounded.
        let q = a.ratio(Value::with_interval(1.0, -1.0, 3.0));
        assert_eq!(q.interval, Some((f64::NEG_INFINITY, f64::INFINITY)));
        // A time whose interval reaches below 0 starts at 0; dividing by it is unbounded above only:
        // 10 / [0, 3] → [8 / 3, ∞).
        let t = Value::with_interval(1.0, -1.0, 3.0).non_negative();
        assert_eq!(t, Value::with_interval(1.0, 0.0, 3.0));
        assert_eq!(
            a.ratio(t),
            Value::with_interval(10.0, 8.0 / 3.0, f64::INFINITY)
        );
        // 10 - 2 = 8 in [8 - 4, 12 - 1] = [4, 11].
        assert_eq!(a.minus(b), Value::with_interval(8.0, 4.0, 11.0));
        // The largest of [8, 12] and [9, 10] by mean is 10 (the first); its ends: max(8, 9), max(12, 10).
        let c = Value::with_interval(9.5, 9.0, 10.0);
        assert_eq!(
            Value::max_of([a, c]),
            Some(Value::with_interval(10.0, 9.0, 12.0))
        );
        assert_eq!(
            Value::min_of([a, c]),
            Some(Value::with_interval(9.5, 8.0, 10.0))
        );
        assert_eq!(Value::max_of([]), None);
        // (10 + 2) / 2 = 6 in [(8 + 1) / 2, (12 + 4) / 2] = [4.5, 8].
        assert_eq!(
            Value::mean_of(&[a, b]),
            Some(Value::with_interval(6.0, 4.5, 8.0))
        );
        // |F - 1|: 1.2 in [0.9, 1.3] → 0.2 in [0, 0.3]; 0.5 in [0.4, 0.6] → 0.5 in [0.4, 0.6].
        let d = Value::with_interval(1.2, 0.9, 1.3).distance_from(1.0);
        assert!((d.mean - 0.2).abs() < 1e-12 && d.interval.unwrap().0 == 0.0);
        assert!((d.interval.unwrap().1 - 0.3).abs() < 1e-12);
        let d = Value::with_interval(0.5, 0.4, 0.6).distance_from(1.0);
        assert!((d.interval.unwrap().0 - 0.4).abs() < 1e-12);
        // From an estimate: mean ± half width.
        let e = Estimate {
            mean: 3.0,
            half_width: Some(0.5),
            n: 3,
        };
        assert_eq!(Value::of(&e), Value::with_interval(3.0, 2.5, 3.5));
    }
}
