//! Seed 002 (`002_53dfbd94bd660dc4.txt`, demand-based coscheduling on Windows NT 4.0): its headline claims as
//! data, and one short function each that reads their values from this run's simulated summaries.
//!
//! The paper prints no numbers but one (Figure 3's caption: ≈ 996,000 of 1,000,000 round trips in the 20 µs
//! bin), so the claims are ordinal (`/work/shared/notes/seeds-001-004.md`, "Ordinal checks", NT DCS). One
//! experiment, `nt-fig02-latency`, stands for Figure 2 (time to completion against 0, 1, 2, 4, 8 competitors per
//! node) and Figure 3 (the round-trip histogram at 8 competitors: the extras `iterations_fastest_bin_fraction`
//! and `iterations_over_2ms_fraction`).

use super::claims::{per_experiment, response, times, two, Experiment, RealClaim, SimCheck};
use super::SeedResults;
use cosched_report::claims::{Claim, Measured, Part, Test, Threshold, Value};
use cosched_report::docdata::DocTable;
use cosched_report::headlines::Backend;
use cosched_report::summary::SummaryRow;
use cosched_report::RunRecord;

pub const SEED: &str = "002";

pub const LATENCY: &str = "nt-fig02-latency";
/// The same test with DCS boosting by NT's network-completion boost (+2) instead of to level 15: the boost's size
/// is the part of NT DCS the seed does not give (notes 002 §5.4).
pub const LATENCY_PLUS2: &str = "nt-fig02-latency-plus2";
/// The simulated experiments `cosched reproduce 002` runs.
pub const SIM_EXPERIMENTS: &[&str] = &[LATENCY, LATENCY_PLUS2];

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
pub const REAL_CLAIMS: &[RealClaim] = &[];

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

// ---- Figure 2's table for docs/sim-nt.md, run by run ----

/// The extra that Figure 3's tail is read from (the claims' too).
const OVER_2MS: &str = "iterations_over_2ms_fraction";

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// A time to completion in s: 16.5, 82.5, 1,837, 240,000.
pub(super) fn seconds(x: f64) -> String {
    if x < 100.0 {
        return format!("{x:.1}");
    }
    grouped(&format!("{x:.0}"))
}

/// Digits with a comma every three: 240,000.
fn grouped(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A fraction as a percentage to two significant digits: 0, 0.014 %, 0.31 %, 100 %.
fn percent(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    let pct = 100.0 * x;
    let decimals = (1 - pct.log10().floor() as i32).max(0) as usize;
    format!("{pct:.decimals$} %")
}

/// The median of the runs' times; where some runs are more than 1 % off it, how many agree and what the others
/// took: `240,000 (2 of 3 runs; 33.0 in one)`.
fn median_cell(times: &[f64]) -> String {
    let Some(m) = median(times) else {
        return "—".to_string();
    };
    let off: Vec<f64> = times
        .iter()
        .copied()
        .filter(|t| (t - m).abs() > 0.01 * m)
        .collect();
    if off.is_empty() {
        return seconds(m);
    }
    let others = off
        .iter()
        .map(|t| seconds(*t))
        .collect::<Vec<_>>()
        .join(", ");
    let in_which = if off.len() == 1 { "one" } else { "the others" };
    format!(
        "{} ({} of {} runs; {others} in {in_which})",
        seconds(m),
        times.len() - off.len(),
        times.len()
    )
}

/// The table of Figure 2 (and Figure 3's tail) from this run's records: per K, each configuration's median
/// time to completion, the median fraction of round trips over 2 ms, and the boosts granted under E = 0.
pub fn doc_tables(results: &SeedResults) -> Result<Vec<DocTable>, String> {
    let records: &[RunRecord] = results
        .sim_runs
        .get(LATENCY)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| format!("no {LATENCY} results"))?;
    let runs = |config: &str, k: u32| -> Vec<&RunRecord> {
        records
            .iter()
            .filter(|r| r.config == config && r.competitors == k)
            .collect()
    };
    let shown = [NO_DCS, PASSIVE, AGGRESSIVE];
    let mut ks: Vec<u32> = records.iter().map(|r| r.competitors).collect();
    ks.sort_unstable();
    ks.dedup();
    let repetitions = runs(NO_DCS, ks[0]).len();
    let mut table = DocTable::new(
        "nt-fig2",
        [
            "K",
            "no DCS",
            "DCS E = −5",
            "DCS E = 0",
            "round trips over 2 ms (no DCS / E = −5 / E = 0)",
            "boosts granted (E = 0)",
        ],
    )
    .with_notes(&format!(
        "Time to completion in s, the median of {repetitions} runs (they differ only by the nodes' random \
         phases), with the runs more than 1 % off it; round trips over 2 ms: the median over the runs; boosts: \
         the least and the most in a run; simulated."
    ));
    for k in ks {
        let mut row = vec![k.to_string()];
        let mut tails = Vec::new();
        for config in shown {
            let of = runs(config, k);
            let times = of
                .iter()
                .map(|r| {
                    r.measurement
                        .parallel_job()
                        .map(|j| j.response_s)
                        .ok_or_else(|| format!("{config} K={k}: a run without its parallel job"))
                })
                .collect::<Result<Vec<f64>, String>>()?;
            row.push(median_cell(&times));
            let over: Vec<f64> = of
                .iter()
                .filter_map(|r| r.measurement.extra.get(OVER_2MS).copied())
                .collect();
            tails.push(median(&over).map_or("—".to_string(), percent));
        }
        row.push(tails.join(" / "));
        let boosts: Vec<u64> = runs(AGGRESSIVE, k)
            .iter()
            .map(|r| r.measurement.boosts_granted)
            .collect();
        let (lo, hi) = (
            boosts.iter().min().copied().unwrap_or(0),
            boosts.iter().max().copied().unwrap_or(0),
        );
        row.push(if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        });
        table.push(row);
    }
    Ok(vec![
        table,
        fig3_table(records)?,
        boost_size_table(results)?,
    ])
}

/// The boost's size against the claim "E = −5 behaves like NT alone": per K, the median time to completion
/// without DCS and under each DCS setting with each boost, and E = −5's over no DCS's.
fn boost_size_table(results: &SeedResults) -> Result<DocTable, String> {
    let of = |experiment: &str| -> Result<&[RunRecord], String> {
        results
            .sim_runs
            .get(experiment)
            .map(Vec::as_slice)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("no {experiment} results"))
    };
    let (to15, plus2) = (of(LATENCY)?, of(LATENCY_PLUS2)?);
    let median_of = |records: &[RunRecord], config: &str, k: u32| -> Option<f64> {
        let times: Vec<f64> = records
            .iter()
            .filter(|r| r.config == config && r.competitors == k)
            .filter_map(|r| r.measurement.parallel_job().map(|j| j.response_s))
            .collect();
        median(&times)
    };
    let mut table = DocTable::new(
        "nt-boost-size",
        [
            "K",
            "no DCS",
            "E = −5, boost to 15",
            "E = −5, boost +2",
            "E = 0, boost to 15",
            "E = 0, boost +2",
            "E = −5 / no DCS (to 15 / +2)",
        ],
    )
    .with_notes(
        "Time to completion in s, the median of the runs (both files: same seed, same runs but for the boost); \
         boost to 15: the default, 7 quanta above a NORMAL thread's base; +2: NT's network-completion boost, 2 \
         quanta (`[os] dcs_boost`, experiments/sim/nt-fig02-latency-plus2.toml); simulated.",
    );
    let mut ks: Vec<u32> = to15.iter().map(|r| r.competitors).collect();
    ks.sort_unstable();
    ks.dedup();
    let cell = |x: Option<f64>| x.map_or("—".to_string(), seconds);
    for k in ks.into_iter().filter(|&k| k > 0) {
        let alone = median_of(to15, NO_DCS, k);
        let ratio = |x: Option<f64>| match (x, alone) {
            (Some(x), Some(a)) if a > 0.0 => format!("{:.2}", x / a),
            _ => "—".to_string(),
        };
        let passive = (median_of(to15, PASSIVE, k), median_of(plus2, PASSIVE, k));
        table.push(vec![
            k.to_string(),
            cell(alone),
            cell(passive.0),
            cell(passive.1),
            cell(median_of(to15, AGGRESSIVE, k)),
            cell(median_of(plus2, AGGRESSIVE, k)),
            format!("{} / {}", ratio(passive.0), ratio(passive.1)),
        ]);
    }
    Ok(table)
}

/// A count of round trips: 996,000, 41, 0.3 (a mean over runs), 0.
pub(super) fn count(x: f64) -> String {
    if x > 0.0 && x < 10.0 {
        format!("{x:.1}")
    } else {
        grouped(&format!("{x:.0}"))
    }
}

/// Each configuration's round-trip histogram at the most competitors, averaged over its runs.
pub(super) struct MeanHistograms<'a> {
    /// The most competitors per node in the runs, where the histograms are taken.
    pub k: u32,
    /// The bins' upper edges, µs (one more bin, open-ended, after the last).
    pub edges: Vec<f64>,
    pub repetitions: usize,
    /// The configurations with a histogram, in the order asked, and their mean counts per bin.
    pub configs: Vec<&'a str>,
    pub means: Vec<Vec<f64>>,
}

/// The mean histogram per bin of each of `configs` at the most competitors in `records`. A configuration whose
/// runs there recorded none is left out; one with a histogram in some runs only, or histograms with other bins,
/// is an error (not a mean over fewer runs).
pub(super) fn mean_histograms<'a>(
    records: &[RunRecord],
    configs: &[&'a str],
) -> Result<MeanHistograms<'a>, String> {
    let k = records
        .iter()
        .map(|r| r.competitors)
        .max()
        .ok_or("no runs")?;
    let mut out = MeanHistograms {
        k,
        edges: Vec::new(),
        repetitions: 0,
        configs: Vec::new(),
        means: Vec::new(),
    };
    for &config in configs {
        let at_k: Vec<&RunRecord> = records
            .iter()
            .filter(|r| r.config == config && r.competitors == k)
            .collect();
        let histograms: Vec<_> = at_k
            .iter()
            .filter_map(|r| r.measurement.rtt_histogram.as_ref())
            .collect();
        if histograms.is_empty() {
            continue;
        }
        if histograms.len() != at_k.len() {
            return Err(format!("{config} K={k}: a run without its histogram"));
        }
        if out.edges.is_empty() {
            out.edges = histograms[0].upper_edges_us.clone();
        }
        let edges = &out.edges;
        if histograms
            .iter()
            .any(|h| h.upper_edges_us != *edges || h.counts.len() != edges.len() + 1)
        {
            return Err(format!("{config} K={k}: histograms with other bins"));
        }
        out.repetitions = histograms.len();
        out.configs.push(config);
        out.means.push(
            (0..=edges.len())
                .map(|bin| {
                    histograms.iter().map(|h| h.counts[bin] as f64).sum::<f64>()
                        / histograms.len() as f64
                })
                .collect(),
        );
    }
    Ok(out)
}

/// `h` as the docs table `name`: a first column `first` (each bin's upper edge; the last "more than …"), then one
/// column per configuration (`columns`, named as the page names them) with its mean count; bins that no
/// configuration reached are left out.
pub(super) fn histogram_table(
    name: &str,
    first: &str,
    columns: &[&str],
    notes: &str,
    h: &MeanHistograms,
) -> DocTable {
    let mut table = DocTable::new(name, std::iter::once(first).chain(columns.iter().copied()))
        .with_notes(notes);
    let edges = &h.edges;
    for bin in 0..=edges.len() {
        if h.means.iter().all(|m| m[bin] == 0.0) {
            continue;
        }
        let edge = match edges.get(bin) {
            Some(&us) if us < 100.0 => format!("{us:.1}"),
            Some(&us) => seconds(us),
            None => format!("more than {}", seconds(edges[edges.len() - 1])),
        };
        let mut row = vec![edge];
        row.extend(h.means.iter().map(|m| count(m[bin])));
        table.push(row);
    }
    table
}

/// Figure 3 (the round-trip histogram at the largest K): per quarter-decade bin that any configuration
/// reached, the mean count over the runs of each configuration.
fn fig3_table(records: &[RunRecord]) -> Result<DocTable, String> {
    let shown = [NO_DCS, PASSIVE, AGGRESSIVE];
    let h = mean_histograms(records, &shown)?;
    if let Some(missing) = shown.iter().find(|c| !h.configs.contains(c)) {
        return Err(format!(
            "no {missing} K={} runs with a round-trip histogram",
            h.k
        ));
    }
    Ok(histogram_table(
        "nt-fig3",
        "round trip up to (µs)",
        &["no DCS", "DCS E = −5", "DCS E = 0"],
        &format!(
            "Round trips per quarter-decade bin (upper edge 10^(k/4) µs) at K = {}, the mean over {} runs \
             of 1,000,000 round trips; bins that no configuration reached are left out; simulated.",
            h.k, h.repetitions
        ),
        &h,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_cells_read_as_the_page_wrote_them() {
        assert_eq!(seconds(16.49), "16.5");
        assert_eq!(seconds(1837.2), "1,837");
        assert_eq!(seconds(240_000.0), "240,000");
        assert_eq!(percent(0.0), "0");
        assert_eq!(percent(0.000_14), "0.014 %");
        assert_eq!(percent(0.0031), "0.31 %");
        assert_eq!(percent(1.0), "100 %");
        assert_eq!(median_cell(&[33.0, 33.0, 33.0]), "33.0");
        assert_eq!(
            median_cell(&[240_000.0, 33.0, 240_000.0]),
            "240,000 (2 of 3 runs; 33.0 in one)"
        );
        assert_eq!(median(&[1.0, 4.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(count(995_912.33), "995,912");
        assert_eq!(count(41.0), "41");
        assert_eq!(count(1.0 / 3.0), "0.3");
        assert_eq!(count(0.0), "0");
    }

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
