//! Seed 003 (`003_d5c4b72e5fa91aa6.txt`, predictive coscheduling on Linux 2.2): its headline claims as data,
//! and one short function each that reads their values from this run's simulated summaries.
//!
//! The paper's figures are 3-D bar charts with no numbers in its text, so every claim is ordinal (a ranking or a
//! direction; `/work/shared/notes/seeds-001-004.md`, "Ordinal checks", PRED). Each threshold is the ordering
//! itself (a ratio above 1) unless the claim's words give a size ("a few %"), and then it says why. The
//! experiments: `fig02-is-pred`, `fig02-mg-pred` (Figure 2: IS and MG against 0–5 local calcula tasks per node;
//! calcula's own share in the same runs stands for Figure 4 left), `fig03-is-mg-pred` (Figure 3: IS beside MG
//! class T), `fig04-master-slave-pred` (Figure 4 right, 5 local tasks) and `master-slave-sweep-pred` (Figure 4
//! right swept over P and the message size, which the paper does not give: a table for `docs/sim-pred.md`, no
//! claim). The agent's `pred` and `dyn` are measured by the lab (`docs/lab-pred.md`), not by claims here.

use super::claims::{
    per_experiment, response, shown, span, times, Experiment, Metric, RealClaim, SimCheck,
};
use super::SeedResults;
use cosched_report::claims::{Claim, Measured, Test, Threshold, Value};
use cosched_report::docdata::DocTable;
use cosched_report::headlines::Backend;
use cosched_report::summary::SummaryRow;

pub const SEED: &str = "003";

pub const IS: &str = "fig02-is-pred";
pub const MG: &str = "fig02-mg-pred";
pub const TOGETHER: &str = "fig03-is-mg-pred";
pub const MASTER_SLAVE: &str = "fig04-master-slave-pred";
/// Figure 4 (right) swept over P and the message size, which the paper does not give (a table, no claim).
pub const MASTER_SLAVE_SWEEP: &str = "master-slave-sweep-pred";
/// The simulated experiments `cosched reproduce 003` runs.
pub const SIM_EXPERIMENTS: &[&str] = &[IS, MG, TOGETHER, MASTER_SLAVE, MASTER_SLAVE_SWEEP];

const NAS: &[(&str, &str)] = &[("IS", IS), ("MG", MG)];
const MASTER_SLAVE_PART: &[(&str, &str)] = &[("master-slave", MASTER_SLAVE)];
const TOGETHER_PART: &[(&str, &str)] = &[("IS beside MG", TOGETHER)];

// The configurations, as the experiment files name them ("P ≈ 0" and "P ≈ 1" are P = 10 % and 90 %).
const LINUX: &str = "LINUX";
const DYN_0: &str = "DYN P=0.1";
const DYN_1: &str = "DYN P=0.9";
const PRED_0: &str = "PRED P=0.1";
const PRED_1: &str = "PRED P=0.9";
const MODELS: [&str; 5] = [LINUX, DYN_0, DYN_1, PRED_0, PRED_1];

/// "Faster": the ordering itself, a time ratio above 1.
const FASTER: Threshold = Threshold::Above(1.0);

// ---- the claims, as data ----

const PRED_FASTEST_NAS: Claim = Claim {
    claim: "At the highest local load, PRED with P ≈ 1 gives the shortest execution time of the five models, for \
            IS and for MG",
    paper: "\"In both benchmarks, the best results were obtained with the predictive model (and more precisely \
            when P ≈ 1)\" (§4.1, Figure 2)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "per benchmark, at the largest K, the lowest mean response time of the four other models / \
                    that of `PRED P=0.9`",
        threshold: FASTER,
        paper: Some(FASTER),
        why: None,
    }],
};

/// The models the paper's "both coscheduling models [beat] LINUX (except for the case DYN and P ≈ 1)" covers:
/// PRED at both values of P and DYN at P ≈ 0, one test each, in this order (a test checks that each test's
/// statistic names its model).
const BEAT_LINUX: [&str; 3] = [PRED_0, PRED_1, DYN_0];

const COSCHEDULING_BEATS_LINUX: Claim = Claim {
    claim: "At the highest local load, PRED (with P ≈ 0 and with P ≈ 1) and DYN with P ≈ 0 are each faster than \
            plain Linux, for IS and for MG",
    paper: "\"the performance of both coscheduling models was better than the LINUX one as the multiprogramming \
            level increased (except for the case DYN and P ≈ 1)\" (§4.1, Figure 2)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "per benchmark, at the largest K, `LINUX` / `PRED P=0.1` mean response time",
            threshold: FASTER,
            paper: Some(FASTER),
            why: None,
        },
        Test {
            statistic: "per benchmark, at the largest K, `LINUX` / `PRED P=0.9` mean response time",
            threshold: FASTER,
            paper: Some(FASTER),
            why: None,
        },
        Test {
            statistic: "per benchmark, at the largest K, `LINUX` / `DYN P=0.1` mean response time",
            threshold: FASTER,
            paper: Some(FASTER),
            why: None,
        },
    ],
};

const CALCULA_BARELY_SLOWED: Claim = Claim {
    claim: "The local calcula tasks are barely slowed by coscheduling: their CPU share beside IS and MG is within \
            a few % across the models, plain Linux's the largest",
    paper: "\"the results are very similar in the three cases (with a slightly better result obtained for the \
            LINUX model)\" (§4.2, Figure 4 left)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "per benchmark, at the largest K, the largest calcula F of the five models / the smallest",
            threshold: Threshold::AtMost(1.05),
            paper: None,
            why: Some(
                "\"very similar\" has no number: 5 % (\"a few %\", the notes' reading); calcula's time for a fixed \
                 count is inversely proportional to its CPU share, so the ratio of F is the ratio of its times",
            ),
        },
        Test {
            statistic: "per benchmark, at the largest K, `LINUX`'s calcula F / the largest of the four others",
            threshold: Threshold::AtLeast(0.99),
            paper: Some(Threshold::AtLeast(1.0)),
            why: Some(
                "\"slightly better\" for LINUX: its calcula share at least that of every other model, less 1 % for \
                 the simulator's run-to-run noise",
            ),
        },
    ],
};

const PRED_BEST_IS_BESIDE_MG: Claim = Claim {
    claim: "With IS and MG running together, PRED gives the best IS times",
    paper: "\"In general, better IS results were even obtained for the PRED case\" (§4.1, Figure 3)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "at the largest K, the lowest mean IS response time of LINUX and DYN (P = 0.1, 0.9) / the \
                    lowest of PRED (P = 0.1, 0.9)",
        threshold: FASTER,
        paper: Some(FASTER),
        why: None,
    }],
};

const MASTER_SLAVE_PRED_P0: Claim = Claim {
    claim: "Master–slave beside 5 local tasks per node runs fastest under PRED with P ≈ 0",
    paper: "\"PRED promoted the rs_slave tasks earlier than DYN and LINUX ... P ≈ 0 obtained the best results\" \
            (§4.2, Figure 4 right)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "the lowest mean response time of the four other models / that of `PRED P=0.1`",
        threshold: FASTER,
        paper: Some(FASTER),
        why: None,
    }],
};

const MASTER_SLAVE_DYN_P: Claim = Claim {
    claim: "Master–slave under DYN slows down as P grows",
    paper: "\"P has more influence in the DYN case: performance decreases strongly by increasing P\" (§4.2, \
            Figure 4 right)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "`DYN P=0.9` / `DYN P=0.1` mean response time",
        threshold: FASTER,
        paper: Some(FASTER),
        why: None,
    }],
};

/// The simulated claims, in the order of `headlines.json`.
pub const SIM_CLAIMS: &[(&Claim, SimCheck)] = &[
    (&PRED_FASTEST_NAS, pred_fastest_nas),
    (&COSCHEDULING_BEATS_LINUX, coscheduling_beats_linux),
    (&CALCULA_BARELY_SLOWED, calcula_barely_slowed),
    (&PRED_BEST_IS_BESIDE_MG, pred_best_is_beside_mg),
    (&MASTER_SLAVE_PRED_P0, master_slave_pred_p0),
    (&MASTER_SLAVE_DYN_P, master_slave_dyn_p),
];

/// No real experiment yet.
pub const REAL_CLAIMS: &[RealClaim] = &[];

// ---- reading each claim's statistics: one value per test of the claim, in its order ----

/// The lowest `metric` of every model but `model` at K, over the same value of `model`: how much faster
/// `model` is than the best of the others; with the fastest model named.
fn lead(e: &Experiment, model: &str, k: u32) -> Result<(String, Value), String> {
    let points = MODELS
        .iter()
        .map(|m| e.value(m, k, response).map(|v| (*m, v)))
        .collect::<Result<Vec<_>, _>>()?;
    let own = e.value(model, k, response)?;
    let others = Value::min_of(points.iter().filter(|(m, _)| *m != model).map(|(_, v)| *v))
        .unwrap_or(Value::point(f64::NAN));
    let margin = others.ratio(own);
    let fastest = points
        .iter()
        .min_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
        .map(|(m, _)| *m)
        .unwrap_or(model);
    Ok((
        format!(
            "fastest at K={k}: `{fastest}`; the best other / `{model}` {}",
            shown(margin, times)
        ),
        margin,
    ))
}

fn pred_fastest_nas(results: &SeedResults) -> Measured {
    per_experiment(results, NAS, |e| {
        let (text, margin) = lead(e, PRED_1, e.largest_k())?;
        Ok((text, vec![margin]))
    })
}

fn coscheduling_beats_linux(results: &SeedResults) -> Measured {
    per_experiment(results, NAS, |e| {
        let k = e.largest_k();
        let linux = e.value(LINUX, k, response)?;
        let values = BEAT_LINUX
            .iter()
            .map(|model| Ok(linux.ratio(e.value(model, k, response)?)))
            .collect::<Result<Vec<Value>, String>>()?;
        let each = BEAT_LINUX
            .iter()
            .zip(&values)
            .map(|(model, v)| format!("LINUX / {model} {}", shown(*v, times)))
            .collect::<Vec<_>>()
            .join(", ");
        let series = e.ratios(LINUX, PRED_1, response)?;
        Ok((
            format!(
                "at K={k}: {each} (LINUX / {PRED_1} {})",
                span(&series, times)
            ),
            values,
        ))
    })
}

/// calcula's mean F (the competitors' F) in a summary row.
fn calcula(r: &SummaryRow) -> Value {
    r.competitor_fairness
        .as_ref()
        .map(|f| Value::of(f).non_negative())
        .unwrap_or(Value::point(f64::NAN))
}

fn calcula_barely_slowed(results: &SeedResults) -> Measured {
    per_experiment(results, NAS, |e| {
        let k = e.largest_k();
        let metric: Metric = calcula;
        let points = MODELS
            .iter()
            .map(|m| e.value(m, k, metric))
            .collect::<Result<Vec<_>, _>>()?;
        let top = Value::max_of(points.iter().copied()).unwrap_or(Value::point(f64::NAN));
        let bottom = Value::min_of(points.iter().copied()).unwrap_or(Value::point(f64::NAN));
        let linux = points[0];
        let best_other =
            Value::max_of(points[1..].iter().copied()).unwrap_or(Value::point(f64::NAN));
        let spread = top.ratio(bottom);
        let linux_lead = linux.ratio(best_other);
        Ok((
            format!(
                "calcula F at K={k}: {:.3}–{:.3} over the models (max / min {}), LINUX / best other {}",
                bottom.mean,
                top.mean,
                shown(spread, times),
                shown(linux_lead, times)
            ),
            vec![spread, linux_lead],
        ))
    })
}

fn pred_best_is_beside_mg(results: &SeedResults) -> Measured {
    per_experiment(results, TOGETHER_PART, |e| {
        let k = e.largest_k();
        let lowest = |models: &[&str]| -> Result<Value, String> {
            let values = models
                .iter()
                .map(|m| e.value(m, k, response))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::min_of(values).unwrap_or(Value::point(f64::NAN)))
        };
        let (others, pred) = (lowest(&[LINUX, DYN_0, DYN_1])?, lowest(&[PRED_0, PRED_1])?);
        let margin = others.ratio(pred);
        Ok((
            format!(
                "at K={k}: IS {:.2} s under the best PRED, {:.2} s under the best of LINUX and DYN ({})",
                pred.mean,
                others.mean,
                shown(margin, times)
            ),
            vec![margin],
        ))
    })
}

fn master_slave_pred_p0(results: &SeedResults) -> Measured {
    per_experiment(results, MASTER_SLAVE_PART, |e| {
        let (text, margin) = lead(e, PRED_0, e.largest_k())?;
        Ok((text, vec![margin]))
    })
}

fn master_slave_dyn_p(results: &SeedResults) -> Measured {
    per_experiment(results, MASTER_SLAVE_PART, |e| {
        let k = e.largest_k();
        let slowdown = e
            .value(DYN_1, k, response)?
            .ratio(e.value(DYN_0, k, response)?);
        Ok((
            format!("at K={k}: DYN P=0.9 / DYN P=0.1 {}", shown(slowdown, times)),
            vec![slowdown],
        ))
    })
}

// ---- the figures' tables ----

/// A model as the docs' tables head it: `DYN .1` for `DYN P=0.1`.
fn short(model: &str) -> String {
    model.replace(" P=0", " ")
}

/// Every K of an experiment, ascending.
fn ks(e: &Experiment) -> Vec<u32> {
    let mut ks: Vec<u32> = e.rows.iter().map(|r| r.competitors).collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// The mean execution time (s) of each model at each K, one column per (part, model).
fn times_table(
    results: &SeedResults,
    name: &str,
    parts: &[(&str, &str)],
    notes: &str,
) -> Result<DocTable, String> {
    let experiments = parts
        .iter()
        .map(|(_, e)| Experiment::of(results, e))
        .collect::<Result<Vec<_>, _>>()?;
    let mut columns = vec!["K".to_string()];
    for (part, _) in parts {
        for model in MODELS {
            columns.push(format!("{part}{}", short(model)));
        }
    }
    let runs = experiments[0].rows[0].runs;
    let mut table = DocTable::new(name, columns)
        .with_notes(&format!("{notes} Mean of {runs} repetitions; simulated."));
    for k in ks(&experiments[0]) {
        let mut cells = vec![k.to_string()];
        for e in &experiments {
            for model in MODELS {
                cells.push(format!("{:.2}", e.value(model, k, response)?.mean));
            }
        }
        table.push(cells);
    }
    Ok(table)
}

/// The message size a sweep configuration names: its last word that ends in K (`PRED P=90% 16K` -> `16K`).
fn sweep_size(config: &str) -> Option<&str> {
    config
        .split_whitespace()
        .rev()
        .find(|word| word.ends_with('K'))
}

/// The master–slave sweep: each configuration's mean execution time and job F, and its time against LINUX's
/// at the same message size.
fn sweep_table(results: &SeedResults) -> Result<DocTable, String> {
    let e = Experiment::of(results, MASTER_SLAVE_SWEEP)?;
    let k = e.largest_k();
    let runs = e.rows[0].runs;
    let mut table = DocTable::new(
        "pred-master-slave-sweep",
        ["configuration", "message", "time s", "× LINUX", "job F"]
            .map(String::from)
            .to_vec(),
    )
    .with_notes(&format!(
        "Master–slave beside {k} local calcula tasks per node. `ceil`: a queued byte counts as one 4 KB packet; \
         otherwise the kernel's floor. × LINUX: the configuration's time / LINUX's at the same message size \
         (above 1: slower). Mean of {runs} repetitions; simulated."
    ));
    for row in e.rows.iter().filter(|r| r.competitors == k) {
        let size = sweep_size(&row.config)
            .ok_or_else(|| format!("{}: no message size in '{}'", e.name, row.config))?;
        let own = e.value(&row.config, k, response)?;
        let linux = e.value(&format!("LINUX {size}"), k, response)?;
        table.push(vec![
            row.config.clone(),
            format!("{size}B"),
            format!("{:.2}", own.mean),
            format!("{:.3}", own.ratio(linux).mean),
            format!("{:.3}", row.job_fairness.mean),
        ]);
    }
    Ok(table)
}

/// The tables of Figures 2 and 3 and of the master–slave sweep from this run, for `docs/sim-pred.md`
/// (`--doc-data`).
pub fn doc_tables(results: &SeedResults) -> Result<Vec<DocTable>, String> {
    Ok(vec![
        sweep_table(results)?,
        times_table(
            results,
            "pred-fig2",
            &[("IS ", IS), ("MG ", MG)],
            "Execution time (s) against K local calcula tasks per node.",
        )?,
        times_table(
            results,
            "pred-fig3",
            &[("", TOGETHER)],
            "IS execution time (s) beside MG class T, against K local tasks per node.",
        )?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_the_orderings() {
        assert_eq!(PRED_FASTEST_NAS.tests[0].threshold.text(), "> 1");
        assert_eq!(CALCULA_BARELY_SLOWED.tests[0].threshold.text(), "<= 1.05");
        assert!(CALCULA_BARELY_SLOWED.why().unwrap().contains("a few %"));
        assert_eq!(MASTER_SLAVE_PRED_P0.why(), None);
    }

    #[test]
    fn beating_linux_tests_each_model_the_paper_names_and_only_those() {
        // The paper: both models beat LINUX "except for the case DYN and P ≈ 1": PRED at both P, DYN at P ≈ 0.
        assert_eq!(COSCHEDULING_BEATS_LINUX.tests.len(), BEAT_LINUX.len());
        for (test, model) in COSCHEDULING_BEATS_LINUX.tests.iter().zip(BEAT_LINUX) {
            assert!(
                test.statistic
                    .ends_with(&format!("`LINUX` / `{model}` mean response time")),
                "{}",
                test.statistic
            );
            assert_eq!(test.threshold.text(), "> 1");
        }
        assert!(!BEAT_LINUX.contains(&DYN_1));
        let claim = COSCHEDULING_BEATS_LINUX.claim;
        assert!(claim.contains("PRED (with P ≈ 0 and with P ≈ 1) and DYN with P ≈ 0"));
    }
}
