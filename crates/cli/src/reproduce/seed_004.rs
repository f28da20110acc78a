//! Seed 004 (`004_3903357666129396.txt`, DYNAMICQ: adjusting time slices on top of predictive coscheduling):
//! its headline claims as data, one short function each that reads their values from this run's simulated
//! summaries, and the tables of its Figures 1 and 2 (`results/dynamicq-figures.md`).
//!
//! The paper's figures carry no numbers in its text, so every claim is ordinal (`/work/shared/notes/
//! seeds-001-004.md`, "Ordinal checks", DYNAMICQ). The experiments: `dq-fig01-wrk1` and `dq-fig01-wrk2`
//! (Figure 1: the STATICQ quantum sweep, 0.2–12.8 s), `dq-fig02-users-wrk3`, `-wrk4` (Figure 2 left: parallel
//! slowdown against z = 2..8 local users), `dq-fig02-local-wrk3`, `-wrk4` (Figure 2 right: local slowdown
//! against the local benchmark's CPU demand, 90 % → 10 %), and the dedicated references every slowdown divides
//! by: `dq-alone-is`, `-sp`, `-bt`, `-mg` (each job alone) and `dq-alone-local` (the local benchmark alone at
//! each demand).
//!
//! Statistics, per configuration point (one summary row):
//! - MMR — the OS model's `linux_mmr_ppm` extra (the mean over nodes of each node's mean epoch L2/L1 miss
//!   ratio, §3), in %;
//! - parallel slowdown — the mean over the row's parallel jobs of (its response time / its dedicated response
//!   time);
//! - MWT — the mean over the row's parallel jobs of `<job>.comm_wait_s` (a rank's time waiting in receives);
//! - local slowdown — `local.mean_response_s` / the same in `dq-alone-local` at the same demand.

use super::claims::{per_experiment, times, two, Experiment, RealClaim, SimCheck};
use super::SeedResults;
use cosched_report::claims::{Claim, Measured, Test, Threshold, Value};
use cosched_report::docdata::{self, DocTable};
use cosched_report::headlines::Backend;
use cosched_report::summary::SummaryRow;
use cosched_report::JobRole;

pub const SEED: &str = "004";

pub const FIG01_WRK1: &str = "dq-fig01-wrk1";
pub const FIG01_WRK2: &str = "dq-fig01-wrk2";
pub const USERS_WRK3: &str = "dq-fig02-users-wrk3";
pub const USERS_WRK4: &str = "dq-fig02-users-wrk4";
pub const LOCAL_WRK3: &str = "dq-fig02-local-wrk3";
pub const LOCAL_WRK4: &str = "dq-fig02-local-wrk4";
pub const ALONE_LOCAL: &str = "dq-alone-local";
/// The dedicated run of each parallel job, by job name.
const ALONE: [(&str, &str); 4] = [
    ("is", "dq-alone-is"),
    ("sp", "dq-alone-sp"),
    ("bt", "dq-alone-bt"),
    ("mg", "dq-alone-mg"),
];
/// The simulated experiments `cosched reproduce 004` runs: the dedicated references first.
pub const SIM_EXPERIMENTS: &[&str] = &[
    "dq-alone-is",
    "dq-alone-sp",
    "dq-alone-bt",
    "dq-alone-mg",
    ALONE_LOCAL,
    FIG01_WRK1,
    FIG01_WRK2,
    USERS_WRK3,
    USERS_WRK4,
    LOCAL_WRK3,
    LOCAL_WRK4,
];

/// The STATICQ quanta of Figure 1, in ms, as the experiment files label them (`STATICQ q=0.2`).
const QUANTA_MS: [u64; 7] = [200, 400, 800, 1600, 3200, 6400, 12800];
/// Figure 2 left's local users.
const USERS: [u32; 7] = [2, 3, 4, 5, 6, 7, 8];
/// Figure 2 right's local CPU demands, %.
const DEMANDS: [u32; 5] = [90, 70, 50, 30, 10];
const ENVIRONMENTS: [&str; 3] = ["LINUX", "STATICQ", "DYNAMICQ"];

const FIG01: &[(&str, &str)] = &[("Wrk1", FIG01_WRK1), ("Wrk2", FIG01_WRK2)];
const USERS_PARTS: &[(&str, &str)] = &[("Wrk3", USERS_WRK3), ("Wrk4", USERS_WRK4)];
const LOCAL_PARTS: &[(&str, &str)] = &[("Wrk3", LOCAL_WRK3), ("Wrk4", LOCAL_WRK4)];

/// The ordering itself: a ratio above 1.
const HIGHER: Threshold = Threshold::Above(1.0);

// ---- the claims, as data ----

const MMR_HIGH_BELOW_0_8_S: Claim = Claim {
    claim: "Under STATICQ the mean cache miss rate is higher with quanta below 0.8 s than from 0.8 s up",
    paper: "\"for a quantum smaller than 0.8s, the cache performance is degraded because the time slice is not \
            long enough to compensate the misses caused by the context switches\" (§3.1, Figure 1 left)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "per workload (Wrk1, Wrk2), the mean MMR over q = 0.2, 0.4 s / the mean MMR over q = 0.8–12.8 s",
        threshold: HIGHER,
        paper: Some(HIGHER),
        why: None,
    }],
};

const SLOWDOWN_RISES_BELOW_1_S: Claim = Claim {
    claim: "Under STATICQ the parallel slowdown rises for quanta below 1 s",
    paper: "\"The rise in slowdown for a quantum smaller than 1s reveals the narrow relationship between the cache \
            behavior and the distributed job performance\" (§3.1, Figure 1 centre)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "per workload, the mean slowdown over q = 0.2, 0.4 s / the lowest slowdown over q = 0.8–6.4 s",
        threshold: HIGHER,
        paper: Some(HIGHER),
        why: None,
    }],
};

const WAITING_GROWS_ABOVE_6_4_S: Claim = Claim {
    claim: "Under STATICQ the mean time waiting on communication grows with quanta above 6.4 s (Wrk1)",
    paper: "\"For a quantum greater than 6.4s, the performance of Wrk1 is hardly affected by the coscheduling \
            policy, as we can see in the analysis of the MWT metric\" (§3.1, Figure 1 right)",
    backend: Backend::Sim,
    tests: &[Test {
        statistic: "Wrk1, MWT at q = 12.8 s / MWT at q = 6.4 s",
        threshold: HIGHER,
        paper: Some(HIGHER),
        why: None,
    }],
};

const PARALLEL_LINUX_WORST: Claim = Claim {
    claim: "Parallel jobs are slowest under plain Linux; DYNAMICQ is at most ~9 % slower than STATICQ (3.2 s), at \
            the most local users",
    paper: "\"LINUX obtained the worst performance due to the effect of uncoordinated scheduling ... a slight \
            difference (≈ 9%) appeared between both modes due to the heterogeneous quantum\" (§3.1, Figure 2 left)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "per workload (Wrk3, Wrk4), at z = 8 local users, LINUX / DYNAMICQ parallel slowdown",
            threshold: HIGHER,
            paper: Some(HIGHER),
            why: None,
        },
        Test {
            statistic: "per workload, at z = 8, LINUX / STATICQ parallel slowdown",
            threshold: HIGHER,
            paper: Some(HIGHER),
            why: None,
        },
        Test {
            statistic: "per workload, at z = 8, DYNAMICQ / STATICQ parallel slowdown",
            threshold: Threshold::AtMost(1.09),
            paper: Some(Threshold::AtMost(1.09)),
            why: None,
        },
    ],
};

const LOCAL_STATICQ_WORST: Claim = Claim {
    claim: "Local tasks are slowed most by STATICQ, DYNAMICQ stays close to Linux, and the gap is largest at 10 % \
            CPU demand",
    paper: "\"the results obtained for Linux are slightly better than those for DYNAMICQ, whereas STATICQ obtains \
            the worst results ... the high slowdown in STATICQ mode when local tasks have low CPU requirements \
            (10%)\" (§3.1, Figure 2 right)",
    backend: Backend::Sim,
    tests: &[
        Test {
            statistic: "per workload, at 10 % demand, STATICQ / DYNAMICQ local slowdown",
            threshold: HIGHER,
            paper: Some(HIGHER),
            why: None,
        },
        Test {
            statistic: "per workload, at 10 % demand, DYNAMICQ / LINUX local slowdown",
            threshold: Threshold::AtLeast(1.0),
            paper: Some(Threshold::AtLeast(1.0)),
            why: None,
        },
        Test {
            statistic: "per workload, STATICQ / LINUX local slowdown at 10 % demand / its largest value at 30–90 %",
            threshold: HIGHER,
            paper: Some(HIGHER),
            why: None,
        },
    ],
};

/// The simulated claims, in the order of `headlines.json`.
pub const SIM_CLAIMS: &[(&Claim, SimCheck)] = &[
    (&MMR_HIGH_BELOW_0_8_S, mmr_high_below_0_8_s),
    (&SLOWDOWN_RISES_BELOW_1_S, slowdown_rises_below_1_s),
    (&WAITING_GROWS_ABOVE_6_4_S, waiting_grows_above_6_4_s),
    (&PARALLEL_LINUX_WORST, parallel_linux_worst),
    (&LOCAL_STATICQ_WORST, local_staticq_worst),
];

/// No real experiment yet (issue 32, items 4 and 5).
pub const REAL_CLAIMS: &[RealClaim] = &[];

// ---- the statistics of one summary row ----

fn staticq(quantum_ms: u64) -> String {
    format!("STATICQ q={}", quantum_ms as f64 / 1000.0)
}

fn extra(row: &SummaryRow, name: &str) -> Result<Value, String> {
    row.extra
        .get(name)
        .map(|e| Value::of(e).non_negative())
        .ok_or_else(|| format!("no `{name}` in {} / {}", row.experiment, row.config))
}

/// MMR in %.
fn mmr(row: &SummaryRow) -> Result<Value, String> {
    let ppm = extra(row, "linux_mmr_ppm")?;
    Ok(ppm.ratio(Value::point(1e4)))
}

fn parallel_jobs(row: &SummaryRow) -> Vec<&str> {
    row.jobs
        .iter()
        .filter(|j| j.role == JobRole::Parallel)
        .map(|j| j.name.as_str())
        .collect()
}

fn mean(values: Vec<Value>, what: &str) -> Result<Value, String> {
    Value::mean_of(&values).ok_or_else(|| format!("no {what}"))
}

/// The mean over the row's parallel jobs of their time waiting in receives, s.
fn mwt(row: &SummaryRow) -> Result<Value, String> {
    let waits = parallel_jobs(row)
        .iter()
        .map(|job| extra(row, &format!("{job}.comm_wait_s")))
        .collect::<Result<Vec<_>, _>>()?;
    mean(waits, "parallel job")
}

/// The mean over the row's parallel jobs of their response time over their dedicated one.
fn parallel_slowdown(results: &SeedResults, row: &SummaryRow) -> Result<Value, String> {
    let slowdowns = row
        .jobs
        .iter()
        .filter(|j| j.role == JobRole::Parallel)
        .map(|job| {
            let (_, alone) = ALONE
                .iter()
                .find(|(name, _)| *name == job.name)
                .ok_or_else(|| format!("no dedicated run for job `{}`", job.name))?;
            let dedicated =
                Experiment::of(results, alone)?.value("LINUX", 0, super::claims::response)?;
            Ok(Value::of(&job.response_s).non_negative().ratio(dedicated))
        })
        .collect::<Result<Vec<_>, String>>()?;
    mean(slowdowns, "parallel job")
}

/// The local benchmark's mean instance time over its dedicated one at `demand` %.
fn local_slowdown(results: &SeedResults, row: &SummaryRow, demand: u32) -> Result<Value, String> {
    let alone = Experiment::of(results, ALONE_LOCAL)?;
    let dedicated = extra(
        alone.at(&format!("LINUX cpu={demand}"), 0)?,
        "local.mean_response_s",
    )?;
    Ok(extra(row, "local.mean_response_s")?.ratio(dedicated))
}

// ---- reading each claim's statistics: one value per test of the claim, in its order ----

/// `statistic` of each STATICQ quantum of a Figure 1 experiment, in quantum order.
fn by_quantum(
    e: &Experiment,
    statistic: impl Fn(&SummaryRow) -> Result<Value, String>,
) -> Result<Vec<(u64, Value)>, String> {
    QUANTA_MS
        .iter()
        .map(|&q| Ok((q, statistic(e.at(&staticq(q), 0)?)?)))
        .collect()
}

fn mean_over(points: &[(u64, Value)], keep: impl Fn(u64) -> bool) -> Result<Value, String> {
    mean(
        points
            .iter()
            .filter(|(q, _)| keep(*q))
            .map(|(_, v)| *v)
            .collect(),
        "quantum in range",
    )
}

fn mmr_high_below_0_8_s(results: &SeedResults) -> Measured {
    per_experiment(results, FIG01, |e| {
        let points = by_quantum(e, mmr)?;
        let (short, long) = (
            mean_over(&points, |q| q < 800)?,
            mean_over(&points, |q| q >= 800)?,
        );
        let ratio = short.ratio(long);
        Ok((
            format!(
                "MMR {:.2} % below 0.8 s, {:.2} % from 0.8 s (× {})",
                short.mean,
                long.mean,
                two(ratio.mean)
            ),
            vec![ratio],
        ))
    })
}

fn slowdown_rises_below_1_s(results: &SeedResults) -> Measured {
    per_experiment(results, FIG01, |e| {
        let points = by_quantum(e, |row| parallel_slowdown(results, row))?;
        let short = mean_over(&points, |q| q < 800)?;
        let lowest = Value::min_of(
            points
                .iter()
                .filter(|(q, _)| (800..=6400).contains(q))
                .map(|(_, v)| *v),
        )
        .ok_or("no quantum in 0.8–6.4 s")?;
        let ratio = short.ratio(lowest);
        Ok((
            format!(
                "slowdown {} below 0.8 s, lowest {} in 0.8–6.4 s ({})",
                two(short.mean),
                two(lowest.mean),
                times(ratio.mean)
            ),
            vec![ratio],
        ))
    })
}

fn waiting_grows_above_6_4_s(results: &SeedResults) -> Measured {
    per_experiment(results, &FIG01[..1], |e| {
        let (at_6_4, at_12_8) = (
            mwt(e.at(&staticq(6400), 0)?)?,
            mwt(e.at(&staticq(12800), 0)?)?,
        );
        let ratio = at_12_8.ratio(at_6_4);
        Ok((
            format!(
                "MWT {:.2} s at 6.4 s, {:.2} s at 12.8 s ({})",
                at_6_4.mean,
                at_12_8.mean,
                times(ratio.mean)
            ),
            vec![ratio],
        ))
    })
}

fn parallel_linux_worst(results: &SeedResults) -> Measured {
    per_experiment(results, USERS_PARTS, |e| {
        let z = USERS[USERS.len() - 1];
        let at = |env: &str| parallel_slowdown(results, e.at(&format!("{env} z={z}"), 0)?);
        let (linux, staticq, dynamicq) = (at("LINUX")?, at("STATICQ")?, at("DYNAMICQ")?);
        Ok((
            format!(
                "slowdown at z={z}: LINUX {}, STATICQ {}, DYNAMICQ {}",
                two(linux.mean),
                two(staticq.mean),
                two(dynamicq.mean)
            ),
            vec![
                linux.ratio(dynamicq),
                linux.ratio(staticq),
                dynamicq.ratio(staticq),
            ],
        ))
    })
}

fn local_staticq_worst(results: &SeedResults) -> Measured {
    per_experiment(results, LOCAL_PARTS, |e| {
        let at = |env: &str, demand: u32| {
            local_slowdown(results, e.at(&format!("{env} cpu={demand}"), 0)?, demand)
        };
        let (linux, staticq, dynamicq) =
            (at("LINUX", 10)?, at("STATICQ", 10)?, at("DYNAMICQ", 10)?);
        let gap_at_10 = staticq.ratio(linux);
        let gaps_elsewhere = DEMANDS
            .iter()
            .filter(|&&d| d != 10)
            .map(|&d| Ok(at("STATICQ", d)?.ratio(at("LINUX", d)?)))
            .collect::<Result<Vec<_>, String>>()?;
        let widest_elsewhere = Value::max_of(gaps_elsewhere).ok_or("no other demand")?;
        Ok((
            format!(
                "local slowdown at 10 %: LINUX {}, STATICQ {}, DYNAMICQ {}; STATICQ / LINUX {} at 10 %, at most {} \
                 at 30–90 %",
                two(linux.mean),
                two(staticq.mean),
                two(dynamicq.mean),
                two(gap_at_10.mean),
                two(widest_elsewhere.mean)
            ),
            vec![
                staticq.ratio(dynamicq),
                dynamicq.ratio(linux),
                gap_at_10.ratio(widest_elsewhere),
            ],
        ))
    })
}

// ---- the figures' tables ----

/// The tables of Figures 1 and 2 from this run, for `docs/sim-dynamicq.md` (`--doc-data`) and
/// `results/dynamicq-figures.md`: one copy of the numbers for both.
pub fn doc_tables(results: &SeedResults) -> Result<Vec<DocTable>, String> {
    let runs = Experiment::of(results, FIG01_WRK1)?.rows[0].runs;
    let mean_of = format!("Mean of {runs} repetitions; simulated.");

    let mut columns = vec!["q (s)".to_string()];
    for (label, _) in FIG01 {
        for what in ["MMR (%)", "slowdown", "MWT (s)"] {
            columns.push(format!("{label} {what}"));
        }
    }
    let mut fig1 = DocTable::new("dynamicq-fig1", columns).with_notes(&format!(
        "MMR: mean L2/L1 miss ratio; slowdown: mean over the parallel jobs of response / dedicated response; MWT: \
         mean time a rank waits in receives. {mean_of}"
    ));
    let experiments = FIG01
        .iter()
        .map(|(_, name)| Experiment::of(results, name))
        .collect::<Result<Vec<_>, _>>()?;
    for q in QUANTA_MS {
        let mut cells = vec![format!("{}", q as f64 / 1000.0)];
        for e in &experiments {
            let row = e.at(&staticq(q), 0)?;
            cells.push(format!("{:.2}", mmr(row)?.mean));
            cells.push(format!("{:.3}", parallel_slowdown(results, row)?.mean));
            cells.push(format!("{:.1}", mwt(row)?.mean));
        }
        fig1.push(cells);
    }

    let by_environment = |name: &str,
                          parts: &[(&str, &str)],
                          first: &str,
                          points: &[(u32, String)],
                          value: &dyn Fn(&SummaryRow, u32) -> Result<Value, String>,
                          label: &dyn Fn(&str, u32) -> String,
                          notes: &str|
     -> Result<DocTable, String> {
        let mut columns = vec![first.to_string()];
        for (part, _) in parts {
            for env in ENVIRONMENTS {
                columns.push(format!("{part} {env}"));
            }
        }
        let mut table = DocTable::new(name, columns).with_notes(notes);
        let experiments = parts
            .iter()
            .map(|(_, name)| Experiment::of(results, name))
            .collect::<Result<Vec<_>, _>>()?;
        for (point, shown) in points {
            let mut cells = vec![shown.clone()];
            for e in &experiments {
                for env in ENVIRONMENTS {
                    let row = e.at(&label(env, *point), 0)?;
                    cells.push(format!("{:.3}", value(row, *point)?.mean));
                }
            }
            table.push(cells);
        }
        Ok(table)
    };
    let users: Vec<(u32, String)> = USERS.iter().map(|&z| (z, z.to_string())).collect();
    let fig2_users = by_environment(
        "dynamicq-fig2-users",
        USERS_PARTS,
        "z",
        &users,
        &|row, _| parallel_slowdown(results, row),
        &|env, z| format!("{env} z={z}"),
        &format!("Mean parallel slowdown against z local users (50 % CPU each). {mean_of}"),
    )?;
    let demands: Vec<(u32, String)> = DEMANDS.iter().map(|&d| (d, format!("{d} %"))).collect();
    let fig2_local = by_environment(
        "dynamicq-fig2-local",
        LOCAL_PARTS,
        "demand",
        &demands,
        &|row, d| local_slowdown(results, row, d),
        &|env, d| format!("{env} cpu={d}"),
        &format!(
            "The local benchmark's slowdown against its CPU demand (4 local users). {mean_of}"
        ),
    )?;
    Ok(vec![fig1, fig2_users, fig2_local])
}

/// `results/dynamicq-figures.md`: the tables of [`doc_tables`] under their figures' titles; `None` when a
/// series is missing.
pub fn figures(results: &SeedResults) -> Option<String> {
    let tables = doc_tables(results).ok()?;
    let titles = [
        "Figure 1: STATICQ quantum sweep",
        "Figure 2 left: parallel slowdown against local users",
        "Figure 2 right: local slowdown against its CPU demand",
    ];
    let mut out = String::from(
        "# Seed 004 (DYNAMICQ) in the simulator: Figures 1 and 2\n\nGenerated by `cosched reproduce 004`; \
         every figure is simulated. See docs/sim-dynamicq.md.\n",
    );
    for (title, table) in titles.iter().zip(&tables) {
        out += &format!(
            "\n## {title}\n\n{}\n{}\n",
            docdata::render_markdown(table),
            table.notes
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_the_orderings() {
        assert_eq!(MMR_HIGH_BELOW_0_8_S.tests[0].threshold.text(), "> 1");
        assert_eq!(PARALLEL_LINUX_WORST.tests[2].threshold.text(), "<= 1.09");
    }

    #[test]
    fn the_quantum_labels_are_the_files() {
        assert_eq!(staticq(200), "STATICQ q=0.2");
        assert_eq!(staticq(12800), "STATICQ q=12.8");
        let file = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../experiments/sim/dq-fig01-wrk1.toml"),
        )
        .unwrap();
        for q in QUANTA_MS {
            assert!(file.contains(&format!("name = \"{}\"", staticq(q))), "{q}");
        }
    }
}
