//! Seed 002 (`002_53dfbd94bd660dc4.txt`, demand-based coscheduling on Windows NT 4.0): its headline claims as
//! data, and one short function each that reads their values from this run's simulated summaries.
//!
//! The paper prints no numbers but one (Figure 3's caption: ≈ 996,000 of 1,000,000 round trips in the 20 µs
//! bin), so the claims are ordinal (`/work/shared/notes/seeds-001-004.md`, "Ordinal checks", NT DCS). One
//! experiment, `nt-fig02-latency`, stands for Figure 2 (time to completion against 0, 1, 2, 4, 8 competitors per
//! node) and Figure 3 (the round-trip histogram at 8 competitors: the extras `iterations_fastest_bin_fraction`
//! and `iterations_over_2ms_fraction`).

use super::claims::{per_experiment, response, times, two, Experiment, RealCheck, SimCheck};
use super::SeedResults;
use cosched_report::claims::{Claim, Measured, Part, Test, Threshold, Value};
use cosched_report::headlines::Backend;
use cosched_report::summary::SummaryRow;

pub const SEED: &str = "002";

pub const LATENCY: &str = "nt-fig02-latency";
/// The simulated experiments `cosched reproduce 002` runs.
pub const SIM_EXPERIMENTS: &[&str] = &[LATENCY];

const LATENCY_PART: &[(&str, &str)] = &[("latency", LATENCY)];

// The configurations, as the experiment file names them.
const NO_DCS: &str = "no DCS";
const AGGRESSIVE: &str = "DCS E=0";
const PASSIVE: &str = "DCS E=-5";
const CONFIGS: [&str; 3] = [NO_DCS, AGGRESSIVE, PASSIVE];

// ---- the claims, as data ----

const FASTEST_BIN: Claim = Claim {
    claim: "At least 99 % of the round trips are fast (at most 1 % over 2 ms), in every configuration",
    paper: "\"the bin at x = 20 µs holds ≈ 996,000 round trips\" in every configuration (§3, Figure 3 caption)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "the largest fraction of round trips over 2 ms, over the three configurations and every K",
        threshold: Threshold::AtMost(0.01),
        paper: None,
        why: Some(
            "the paper counts its 20 µs bin (≥ 99 %); the simulator's bins differ, so the complement is read: the \
             round trips over 2 ms, the paper's own tail",
        ),
    }],
};

const TAIL_SMALLEST_AGGRESSIVE: Claim = Claim {
    claim: "With 8 competitors the tail of round trips over 2 ms is smallest under aggressive DCS (E = 0)",
    paper: "\"with E = 0 the tail stays mostly on the left; with no DCS and with E = −5 there are substantial \
            numbers of round trips > 2 ms\" (§3, Figure 3)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "at K = 8, the smaller fraction of round trips over 2 ms of `no DCS` and `DCS E=-5` minus that \
                    of `DCS E=0`",
        threshold: Threshold::Above(0.0),
        paper: Some(Threshold::Above(0.0)),
        why: None,
    }],
};

const COMPLETION_ORDER: Claim = Claim {
    claim: "With 2 or more competitors the test completes no faster without DCS than with passive DCS, and no \
            faster with passive than with aggressive DCS",
    paper: "\"DCS helps\"; the notes' ordinal reading: noDCS ≥ E=−5 ≥ E=0 at K ≥ 2 (§3, Figure 2)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "per K >= 2, `no DCS` / `DCS E=-5` time to completion",
            threshold: Threshold::AtLeast(1.0),
            paper: Some(Threshold::AtLeast(1.0)),
            why: None,
        },
        Test {
            statistic: "per K >= 2, `DCS E=-5` / `DCS E=0` time to completion",
            threshold: Threshold::AtLeast(1.0),
            paper: Some(Threshold::AtLeast(1.0)),
            why: None,
        },
    ],
};

const PASSIVE_LIKE_NT: Claim = Claim {
    claim: "With 4 or more competitors passive DCS (E = −5) behaves like NT alone",
    paper: "\"For four or more competitors, E = −5 behaves like NT alone\" (§3, Figure 2)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "per K >= 4, |`DCS E=-5` / `no DCS` time to completion − 1|",
        threshold: Threshold::AtMost(0.05),
        paper: None,
        why: Some("\"behaves like\" has no number: within 5 %"),
    }],
};

/// The simulated claims, in the order of `headlines.json`.
pub const SIM_CLAIMS: &[(&Claim, SimCheck)] = &[
    (&FASTEST_BIN, fastest_bin),
    (&TAIL_SMALLEST_AGGRESSIVE, tail_smallest_aggressive),
    (&COMPLETION_ORDER, completion_order),
    (&PASSIVE_LIKE_NT, passive_like_nt),
];

/// No real experiment yet (issue 32, items 4 and 5).
pub const REAL_CLAIMS: &[(&Claim, RealCheck)] = &[];

// ---- reading each claim's statistics: one value per test of the claim, in its order ----

fn extra(row: &SummaryRow, name: &str) -> Result<Value, String> {
    row.extra
        .get(name)
        .map(|e| Value::of(e).non_negative())
        .ok_or_else(|| {
            format!(
                "no `{name}` in {} / {} K={}",
                row.experiment, row.config, row.competitors
            )
        })
}

/// The competitor counts of the experiment from `from` up.
fn ks_from(e: &Experiment, from: u32) -> Vec<u32> {
    let mut ks: Vec<u32> = e
        .rows
        .iter()
        .map(|r| r.competitors)
        .filter(|&k| k >= from)
        .collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

fn fastest_bin(results: &SeedResults) -> Measured {
    per_experiment(results, LATENCY_PART, |e| {
        let mut largest: Option<(String, u32, Value)> = None;
        for config in CONFIGS {
            for k in ks_from(e, 0) {
                let v = extra(e.at(config, k)?, "iterations_over_2ms_fraction")?;
                if largest.as_ref().is_none_or(|(_, _, l)| v.mean > l.mean) {
                    largest = Some((config.to_string(), k, v));
                }
            }
        }
        let (config, k, v) = largest.ok_or("no row")?;
        Ok((
            format!(
                "at most {:.4} % over 2 ms (largest: `{config}` at K={k})",
                v.mean * 100.0
            ),
            vec![v],
        ))
    })
}

fn tail_smallest_aggressive(results: &SeedResults) -> Measured {
    per_experiment(results, LATENCY_PART, |e| {
        let k = e.largest_k();
        let tail = |config: &str| extra(e.at(config, k)?, "iterations_over_2ms_fraction");
        let (none, aggressive, passive) = (tail(NO_DCS)?, tail(AGGRESSIVE)?, tail(PASSIVE)?);
        let others = Value::min_of([none, passive]).ok_or("no tail")?;
        Ok((
            format!(
                "round trips over 2 ms at K={k}: no DCS {:.4} %, E=-5 {:.4} %, E=0 {:.4} %",
                none.mean * 100.0,
                passive.mean * 100.0,
                aggressive.mean * 100.0
            ),
            vec![others.minus(aggressive)],
        ))
    })
}

fn completion_order(results: &SeedResults) -> Measured {
    let e = Experiment::of(results, LATENCY)?;
    ks_from(&e, 2)
        .into_iter()
        .map(|k| {
            let time = |config: &str| e.value(config, k, response);
            let (none, aggressive, passive) = (time(NO_DCS)?, time(AGGRESSIVE)?, time(PASSIVE)?);
            let (a, b) = (none.ratio(passive), passive.ratio(aggressive));
            Ok(Part::new(
                format!("K={k}: "),
                format!(
                    "no DCS {} s, E=-5 {} s, E=0 {} s ({}, {})",
                    two(none.mean),
                    two(passive.mean),
                    two(aggressive.mean),
                    times(a.mean),
                    times(b.mean)
                ),
                vec![a, b],
            ))
        })
        .collect()
}

fn passive_like_nt(results: &SeedResults) -> Measured {
    let e = Experiment::of(results, LATENCY)?;
    ks_from(&e, 4)
        .into_iter()
        .map(|k| {
            let ratio = e
                .value(PASSIVE, k, response)?
                .ratio(e.value(NO_DCS, k, response)?);
            Ok(Part::new(
                format!("K={k}: "),
                format!("E=-5 / no DCS {}", times(ratio.mean)),
                vec![ratio.distance_from(1.0)],
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passive_threshold_says_why_it_is_not_the_papers() {
        assert!(PASSIVE_LIKE_NT.why().unwrap().contains("5 %"));
    }

    #[test]
    fn the_configuration_names_are_the_files() {
        let file = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../experiments/sim/nt-fig02-latency.toml"),
        )
        .unwrap();
        for config in CONFIGS {
            assert!(file.contains(&format!("name = \"{config}\"")), "{config}");
        }
    }
}
