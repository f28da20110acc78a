//! Seed 001 (`001_cc73854eda2a0ea6.txt`, Self Co-Scheduling on a 64-CPU Origin 2000): its headline claims as
//! data, and one short function each that reads their values from this run's records.
//!
//! The paper prints a few numbers in its prose (slowdowns vs FIFO: IRIX ≈ 10, PB ≈ 7, best CS 0.86 / 0.72, best
//! SCS 0.76 / 0.58 for high / low communication; MG's coefficient of variation 5.5 under SCS, > 26.9 under CS;
//! SCS ≈ 20 % ahead of CS at MPL 4, high communication) and no plotted data
//! (`/work/shared/notes/seeds-001-004.md` §001). Each threshold is the ordering the paper states, and a test whose
//! threshold is not the paper's own figure says why. The experiments: `scs-e1` (all jobs at t = 0, MPL 4,
//! workloads w1–w4, every policy) and `scs-e2` (arrivals at ~20 % and ~60 % load, MPL 2 / 4 / 6, SCS vs CS). The
//! measures (slowdown vs FIFO, CV) are `cosched_sim::smp::measures`, the one copy the tables and plots use.
//! There is no real experiment for this seed yet (issue 23, items 2 and 5).

use super::claims::{shown, times, RealClaim, SimCheck};
use super::SeedResults;
use cosched_report::claims::{Claim, Measured, Part, Test, Threshold, Value};
use cosched_report::docdata::DocTable;
use cosched_report::headlines::Backend;
use cosched_report::stats::{mean_ci90, Estimate};
use cosched_report::RunRecord;
use cosched_sim::smp::measures::{self, app_cv, job_slowdowns, makespan_slowdowns};

pub const SEED: &str = "001";

pub const E1: &str = "scs-e1";
pub const E2: &str = "scs-e2";
/// The simulated experiments `cosched reproduce 001` runs.
pub const SIM_EXPERIMENTS: &[&str] = &[E1, E2];

// E1's workloads (1-based, as the experiment file lists them): w1 is all high communication, w4 half low.
const W1: u32 = 1;
const W4: u32 = 4;
const E1_PARTS: [(&str, u32); 2] = [("w1 (high)", W1), ("w4 (low)", W4)];
// E2's workloads: high / low communication at 20 % and 60 % load.
const E2_WORKLOADS: [(&str, u32); 4] = [
    ("high, 20 %", 1),
    ("high, 60 %", 2),
    ("low, 20 %", 3),
    ("low, 60 %", 4),
];
const E2_HIGH: [(&str, u32); 2] = [("high, 20 %", 1), ("high, 60 %", 2)];
const E2_LOADED: [(&str, u32); 2] = [("high, 60 %", 2), ("low, 60 %", 4)];

const IRIX: &str = "IRIX";
const PB: &str = "PB";
const SCS_BI_RR_4: &str = "SCS BI RR MPL 4";
const CS_BI_RR_4: &str = "CS BI RR MPL 4";

const ORDER: Threshold = Threshold::Above(1.0);

// ---- the claims, as data ----

const TIME_SHARING_DISASTROUS: Claim = Claim {
    claim: "Time sharing is disastrous for communicating MPI jobs: on the high-communication workload the slowdown \
            vs FIFO is about 10 under IRIX and about 7 under Periodic Boost",
    paper: "\"IRIX ... slowdown of 10 ... PB ... 7\" for the high-communication workloads (§5.1, Fig. 1)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "on w1, IRIX's makespan / FIFO's",
            threshold: Threshold::Within(5.0, 20.0),
            paper: None,
            why: Some(
                "the paper's ≈ 10 is one measurement on one machine: a factor 2 either way; the simulated IRIX \
                 models its scheduler only, not the Origin's caches and memory",
            ),
        },
        Test {
            statistic: "on w1, PB's makespan / FIFO's",
            threshold: Threshold::Within(3.5, 14.0),
            paper: None,
            why: Some("the paper's ≈ 7: a factor 2 either way, as for IRIX"),
        },
        Test {
            statistic: "on w1, IRIX's makespan / PB's",
            threshold: ORDER,
            paper: Some(ORDER),
            why: None,
        },
    ],
};

const SCS_BEATS_FIFO: Claim = Claim {
    claim: "The best SCS variant beats FIFO static space sharing: slowdown 0.76 on high-communication and 0.58 on \
            low-communication workloads",
    paper: "\"SCS ... 0.76 ... 0.58\" (§5.1, Fig. 1); \"SCS improves on FIFO by 20-40 % on average\" (§6)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "the best SCS variant's makespan / FIFO's",
        threshold: Threshold::Below(1.0),
        paper: None,
        why: Some(
            "the ordering; the paper's 0.76 and 0.58 are single measurements whose size depends on the Origin's \
             memory system and the unpublished job sizes",
        ),
    }],
};

const FIFO_CS_SCS_ORDER: Claim = Claim {
    claim: "FIFO > CS > SCS in slowdown: the best CS variant beats FIFO (0.86 / 0.72) and the best SCS variant beats \
            the best CS variant (0.76 / 0.58)",
    paper: "best CS 0.86 (high) / 0.72 (low), best SCS 0.76 / 0.58 (§5.1, Fig. 1)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "FIFO's makespan / the best CS variant's",
            threshold: ORDER,
            paper: Some(ORDER),
            why: None,
        },
        Test {
            statistic: "the best CS variant's makespan / the best SCS variant's",
            threshold: ORDER,
            paper: Some(ORDER),
            why: None,
        },
    ],
};

const SCS_BI_RR_BEST: Claim = Claim {
    claim: "Blocking immediately is the best wait on shared memory, and SCS BI+RR the best policy overall",
    paper: "\"the best results are obtained with BI ... SCS BI RR\" (§5.1)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "per workload, the lowest makespan of every other policy / `SCS BI RR MPL 4`'s",
        threshold: Threshold::AtLeast(0.98),
        paper: Some(Threshold::AtLeast(1.0)),
        why: Some(
            "best or within 2 %: the SB and Msg variants differ from BI RR by a few context switches, inside \
             the spread of the repetitions",
        ),
    }],
};

const SCS_MORE_PREDICTABLE: Claim = Claim {
    claim: "SCS is more predictable than CS: MG's execution time varies less across the workloads (CV 5.5 vs > 26.9)",
    paper: "\"the coefficient of variation of MG ... 5.5 ... SCS ... 26.9 ... CS\" (§5.1)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "MG's CV across w2–w4 under `CS BI RR MPL 4` / under `SCS BI RR MPL 4`",
        threshold: ORDER,
        paper: None,
        why: Some("the ordering; the paper's ratio is above 26.9 / 5.5 = 4.9"),
    }],
};

const SCS_AHEAD_OF_CS_DYNAMIC: Claim = Claim {
    claim: "Under dynamic load SCS beats CS, most of all at MPL 4 with high communication, by about 20 %",
    paper: "\"SCS outperforms CS ... especially for high communication at MPL = 4 ... about 20 %\" (§5.2, Fig. 4)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "at MPL 4, high communication, CS's mean job slowdown vs FIFO / SCS's",
        threshold: ORDER,
        paper: None,
        why: Some("the ordering; the paper's \"about 20 %\" is read off one figure"),
    }],
};

const FRAGMENTATION_FALLS_WITH_MPL: Claim = Claim {
    claim: "SCS loses CPUs to fragmentation because its MPL is fixed, less as the MPL rises (24 % at MPL 2 to 9 % \
            at MPL 6)",
    paper: "\"fragmentation ... from 24 % with MPL = 2 to 9 % with MPL = 6\" (§5.2)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "at 60 % load, SCS's fragmentation at MPL 2 / at MPL 6",
        threshold: ORDER,
        paper: None,
        why: Some(
            "the direction; the paper does not define its fragmentation figure (here: CPUs left unallocated \
             while a job waits, as a share of the machine's time), nor its load; at 20 % load a job seldom \
             waits, so there is next to nothing to fragment at any MPL",
        ),
    }],
};

/// The simulated claims, in the order of `headlines.json`.
pub const SIM_CLAIMS: &[(&Claim, SimCheck)] = &[
    (&TIME_SHARING_DISASTROUS, time_sharing_disastrous),
    (&SCS_BEATS_FIFO, scs_beats_fifo),
    (&FIFO_CS_SCS_ORDER, fifo_cs_scs_order),
    (&SCS_BI_RR_BEST, scs_bi_rr_best),
    (&SCS_MORE_PREDICTABLE, scs_more_predictable),
    (&SCS_AHEAD_OF_CS_DYNAMIC, scs_ahead_of_cs_dynamic),
    (&FRAGMENTATION_FALLS_WITH_MPL, fragmentation_falls_with_mpl),
];

/// No real experiment yet.
pub const REAL_CLAIMS: &[RealClaim] = &[];

// ---- reading the records ----

fn records<'a>(results: &'a SeedResults, name: &str) -> Result<&'a [RunRecord], String> {
    results
        .sim_runs
        .get(name)
        .map(Vec::as_slice)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| format!("no {name} results"))
}

/// The mean of per-repetition samples with its 90 % interval.
fn value(samples: &[f64], what: &str) -> Result<Value, String> {
    mean_ci90(samples)
        .map(|e| Value::of(&e).non_negative())
        .ok_or_else(|| format!("no runs of {what}"))
}

/// Per repetition, `a`'s sample over `b`'s.
fn paired(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

type Measure = fn(&[RunRecord], u32, &str) -> Vec<f64>;

/// The variant of `prefix` (`SCS `, `CS `) with the lowest mean `measure` on `workload`, and its samples.
fn best(
    records: &[RunRecord],
    workload: u32,
    prefix: &str,
    measure: Measure,
) -> Result<(String, Vec<f64>), String> {
    measures::configs(records)
        .into_iter()
        .filter(|c| c.starts_with(prefix))
        .map(|c| {
            let samples = measure(records, workload, &c);
            (c, samples)
        })
        .filter(|(_, s)| !s.is_empty())
        .min_by(|a, b| mean(&a.1).total_cmp(&mean(&b.1)))
        .ok_or_else(|| format!("no `{prefix}` variant on workload {workload}"))
}

fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len().max(1) as f64
}

fn per_workload(
    parts: &[(&str, u32)],
    check: impl Fn(u32) -> Result<(String, Vec<Value>), String>,
) -> Measured {
    parts
        .iter()
        .map(|(label, w)| {
            let (ours, values) = check(*w)?;
            Ok(Part::new(format!("{label}: "), ours, values))
        })
        .collect()
}

fn time_sharing_disastrous(results: &SeedResults) -> Measured {
    let r = records(results, E1)?;
    let irix = makespan_slowdowns(r, W1, IRIX);
    let pb = makespan_slowdowns(r, W1, PB);
    let (irix_v, pb_v) = (value(&irix, IRIX)?, value(&pb, PB)?);
    let irix_over_pb = value(&paired(&irix, &pb), "IRIX / PB")?;
    Ok(vec![Part::whole(
        format!(
            "w1: IRIX {}, PB {} × FIFO's makespan; IRIX / PB {}",
            shown(irix_v, times),
            shown(pb_v, times),
            shown(irix_over_pb, times)
        ),
        vec![irix_v, pb_v, irix_over_pb],
    )])
}

fn scs_beats_fifo(results: &SeedResults) -> Measured {
    let r = records(results, E1)?;
    per_workload(&E1_PARTS, |w| {
        let (name, samples) = best(r, w, "SCS ", makespan_slowdowns)?;
        let v = value(&samples, &name)?;
        Ok((format!("`{name}` {}", shown(v, times)), vec![v]))
    })
}

fn fifo_cs_scs_order(results: &SeedResults) -> Measured {
    let r = records(results, E1)?;
    per_workload(&E1_PARTS, |w| {
        let (cs_name, cs) = best(r, w, "CS ", makespan_slowdowns)?;
        let (scs_name, scs) = best(r, w, "SCS ", makespan_slowdowns)?;
        let fifo_over_cs = value(&cs.iter().map(|x| 1.0 / x).collect::<Vec<_>>(), &cs_name)?;
        let cs_over_scs = value(&paired(&cs, &scs), "CS / SCS")?;
        Ok((
            format!(
                "best CS `{cs_name}` {} × FIFO, best SCS `{scs_name}` {} × FIFO (CS / SCS {})",
                shown(value(&cs, &cs_name)?, times),
                shown(value(&scs, &scs_name)?, times),
                shown(cs_over_scs, times)
            ),
            vec![fifo_over_cs, cs_over_scs],
        ))
    })
}

fn scs_bi_rr_best(results: &SeedResults) -> Measured {
    let r = records(results, E1)?;
    let parts: Vec<(String, u32)> = {
        let mut w: Vec<u32> = r.iter().map(|x| x.competitors).collect();
        w.sort_unstable();
        w.dedup();
        w.into_iter().map(|w| (format!("w{w}"), w)).collect()
    };
    let parts: Vec<(&str, u32)> = parts.iter().map(|(l, w)| (l.as_str(), *w)).collect();
    per_workload(&parts, |w| {
        let own = makespan_slowdowns(r, w, SCS_BI_RR_4);
        let (other, samples) = measures::configs(r)
            .into_iter()
            .filter(|c| c != SCS_BI_RR_4 && c != measures::FIFO)
            .map(|c| {
                let s = makespan_slowdowns(r, w, &c);
                (c, s)
            })
            .min_by(|a, b| mean(&a.1).total_cmp(&mean(&b.1)))
            .ok_or("no other policy")?;
        let lead = value(&paired(&samples, &own), "lead")?;
        Ok((
            format!(
                "the best other, `{other}`, / SCS BI RR {}",
                shown(lead, times)
            ),
            vec![lead],
        ))
    })
}

fn scs_more_predictable(results: &SeedResults) -> Measured {
    let r = records(results, E1)?;
    let cv = |config: &str| {
        app_cv(r, config, "MG")
            .ok_or_else(|| format!("MG runs in fewer than two workloads under {config}"))
    };
    let (cs, scs) = (cv(CS_BI_RR_4)?, cv(SCS_BI_RR_4)?);
    let ratio = Value::point(cs / scs);
    Ok(vec![Part::whole(
        format!(
            "MG's CV: CS {cs:.1} %, SCS {scs:.1} % (ratio {})",
            shown(ratio, times)
        ),
        vec![ratio],
    )])
}

fn scs_ahead_of_cs_dynamic(results: &SeedResults) -> Measured {
    let r = records(results, E2)?;
    per_workload(&E2_HIGH, |w| {
        let cs = job_slowdowns(r, w, CS_BI_RR_4);
        let scs = job_slowdowns(r, w, SCS_BI_RR_4);
        let ahead = value(&paired(&cs, &scs), "CS / SCS")?;
        Ok((
            format!(
                "mean job slowdown vs FIFO: CS {}, SCS {} (CS / SCS {})",
                shown(value(&cs, "CS")?, times),
                shown(value(&scs, "SCS")?, times),
                shown(ahead, times)
            ),
            vec![ahead],
        ))
    })
}

fn fragmentation_falls_with_mpl(results: &SeedResults) -> Measured {
    let r = records(results, E2)?;
    per_workload(&E2_LOADED, |w| {
        let at = |mpl: u32| -> Vec<f64> {
            let config = format!("SCS BI RR MPL {mpl}");
            r.iter()
                .filter(|x| x.competitors == w && x.config == config)
                .filter_map(|x| x.measurement.extra.get("fragmentation").copied())
                .collect()
        };
        let (two, six) = (at(2), at(6));
        let falls = value(&paired(&two, &six), "MPL 2 / MPL 6")?;
        Ok((
            format!(
                "fragmentation MPL 2 {:.1} %, MPL 6 {:.1} % (ratio {})",
                100.0 * mean(&two),
                100.0 * mean(&six),
                shown(falls, times)
            ),
            vec![falls],
        ))
    })
}

// ---- the docs' tables (docs/sim-scs.md), from the same measures ----

/// E1's workloads as the docs' header names them.
const E1_HEADERS: [&str; 4] = ["w1 (high)", "w2", "w3", "w4 (half low)"];
/// E2's policies, one column per MPL.
const E2_POLICIES: [&str; 2] = ["CS BI RR", "SCS BI RR"];
const E2_MPLS: [u32; 3] = [2, 4, 6];

/// The paper's figure for a policy of E1, from its prose (§5.1).
fn paper_e1(config: &str) -> &'static str {
    match config {
        measures::FIFO => "1",
        IRIX => "≈ 10 (high)",
        PB => "≈ 7 (high)",
        CS_BI_RR_4 => "best CS 0.86 / 0.72",
        SCS_BI_RR_4 => "best SCS 0.76 / 0.58",
        _ => "",
    }
}

/// A ratio to two decimals, with its 90 % interval where that shows at two decimals.
fn ratio_cell(e: Option<Estimate>) -> String {
    match e {
        None => "—".to_string(),
        Some(e) => match e.half_width.filter(|h| *h >= 0.005) {
            Some(h) => format!("{:.2} ± {h:.2}", e.mean),
            None => format!("{:.2}", e.mean),
        },
    }
}

fn runs_of(records: &[RunRecord]) -> u32 {
    records.iter().map(|r| r.repetition + 1).max().unwrap_or(0)
}

/// E1: each policy's makespan / FIFO's per workload (`makespan_slowdowns`, the claims' and plots' measure).
fn e1_table(r: &[RunRecord]) -> DocTable {
    let columns = std::iter::once("policy")
        .chain(E1_HEADERS)
        .chain(["paper (high / low)"]);
    let mut table = DocTable::new("scs-e1", columns).with_notes(&format!(
        "Makespan / FIFO's makespan (FIFO: its makespan), paired repetition by repetition, mean of {} \
         repetitions ± the 90 % interval where it is 0.01 or more; every policy at MPL 4; simulated. The paper's \
         figures are from its prose (§5.1).",
        runs_of(r)
    ));
    for config in measures::configs(r) {
        let mut row = vec![config.trim_end_matches(" MPL 4").to_string()];
        for w in 1..=E1_HEADERS.len() as u32 {
            row.push(if config == measures::FIFO {
                measures::extra_estimate(r, w, &config, "makespan_s")
                    .map_or("—".into(), |e| format!("1 ({:.1} s)", e.mean))
            } else {
                ratio_cell(mean_ci90(&makespan_slowdowns(r, w, &config)))
            });
        }
        row.push(paper_e1(&config).to_string());
        table.push(row);
    }
    table
}

/// E2: the mean job response / FIFO's (`job_slowdowns`) per workload and MPL.
fn e2_table(r: &[RunRecord]) -> DocTable {
    let configs: Vec<(String, String)> = E2_POLICIES
        .iter()
        .flat_map(|p| {
            E2_MPLS.iter().map(move |m| {
                let short = p.split(' ').next().unwrap_or(p);
                (format!("{p} MPL {m}"), format!("{short} MPL {m}"))
            })
        })
        .collect();
    let columns =
        std::iter::once("workload".to_string()).chain(configs.iter().map(|(_, h)| h.clone()));
    let mut table = DocTable::new("scs-e2", columns).with_notes(&format!(
        "Mean over jobs of response / FIFO's response for the same job, mean of {} repetitions (each its own \
         job stream) ± the 90 % interval where it is 0.01 or more; CS and SCS with BI RR; simulated.",
        runs_of(r)
    ));
    for (label, w) in E2_WORKLOADS {
        let mut row = vec![label.to_string()];
        for (config, _) in &configs {
            row.push(ratio_cell(mean_ci90(&job_slowdowns(r, w, config))));
        }
        table.push(row);
    }
    table
}

/// E2: SCS's fragmentation per workload and MPL.
fn fragmentation_table(r: &[RunRecord]) -> DocTable {
    let columns = std::iter::once("workload".to_string())
        .chain(E2_MPLS.iter().map(|m| format!("SCS MPL {m}")));
    let mut table = DocTable::new("scs-e2-fragmentation", columns).with_notes(&format!(
        "SCS BI RR's fragmentation: CPUs left unallocated while a job waits, as a share of the machine's time \
         (%), mean of {} repetitions; simulated.",
        runs_of(r)
    ));
    for (label, w) in E2_WORKLOADS {
        let mut row = vec![label.to_string()];
        for m in E2_MPLS {
            row.push(
                measures::extra_estimate(r, w, &format!("SCS BI RR MPL {m}"), "fragmentation")
                    .map_or("—".into(), |e| format!("{:.1} %", 100.0 * e.mean)),
            );
        }
        table.push(row);
    }
    table
}

/// E1's and E2's tables from this run, for `docs/sim-scs.md` (`--doc-data`).
pub fn doc_tables(results: &SeedResults) -> Result<Vec<DocTable>, String> {
    let (e1, e2) = (records(results, E1)?, records(results, E2)?);
    Ok(vec![e1_table(e1), e2_table(e2), fragmentation_table(e2)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratios_divide_repetition_by_repetition() {
        assert_eq!(paired(&[2.0, 9.0], &[1.0, 3.0]), vec![2.0, 3.0]);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
    }

    #[test]
    fn a_ratio_shows_its_interval_only_where_two_decimals_see_it() {
        let e = |mean, half_width| {
            Some(Estimate {
                mean,
                half_width,
                n: 3,
            })
        };
        assert_eq!(ratio_cell(e(0.912, Some(0.004))), "0.91");
        assert_eq!(ratio_cell(e(9.79, Some(0.41))), "9.79 ± 0.41");
        assert_eq!(ratio_cell(e(1.0, None)), "1.00");
        assert_eq!(ratio_cell(None), "—");
        assert_eq!(paper_e1(SCS_BI_RR_4), "best SCS 0.76 / 0.58");
    }

    #[test]
    fn a_claim_without_its_experiment_says_what_is_missing() {
        let results = SeedResults {
            scale: cosched_report::headlines::Scale::Quick,
            sim: Default::default(),
            sim_runs: Default::default(),
            real: Err("none".into()),
        };
        assert_eq!(
            time_sharing_disastrous(&results).unwrap_err(),
            "no scs-e1 results"
        );
        assert_eq!(doc_tables(&results).unwrap_err(), "no scs-e1 results");
    }
}
