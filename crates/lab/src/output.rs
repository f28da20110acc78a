//! Results of a lab experiment: the common summary table and files of `cosched-report` (`runs.json`,
//! `runs.csv`, `summary.csv`, SVG plots) plus the lab's own comparison table (`lab.md`): for each receive mode
//! and K, every configuration's rate against the baseline (the first configuration without the agent) and
//! against the fair-coscheduling bound, its fairness, the agent's CPU use and reaction time, and the foreign
//! CPU load measured beside it.
//!
//! Fair-coscheduling bound (SPEC targets): a job that shares each CPU fairly with K competitors and is always
//! coscheduled would run at `dedicated rate / (K + 1)`, the dedicated rate being the baseline's rate at K = 0
//! in the same receive mode.
//!
//! Ratios are paired: repetition `i` of a configuration is divided by repetition `i` of the baseline (the
//! runner runs them back to back), and the table gives the geometric mean of those ratios with a 90 %
//! Student-t interval on their logarithms. A shared machine drifts by tens of percent over minutes; pairing
//! cancels the drift that a ratio of two means would keep.

use crate::experiment::LabExperiment;
use crate::runner::{series_label, LabRun};
use anyhow::{Context, Result};
use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::{CellAlignment, Table};
use cosched_report::plot::{plot_histograms, plot_sweep, Metric, Scale};
use cosched_report::stats::{mean, mean_ci90, Estimate};
use cosched_report::table::significant;
use cosched_report::{Histogram, RunRecord};
use std::path::{Path, PathBuf};

/// One line of the lab table: a configuration in a receive mode at K competitors.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonRow {
    pub configuration: String,
    pub mode: String,
    pub competitors: u32,
    pub runs: usize,
    pub rate: Estimate,
    /// `rate / baseline rate` at the same mode, K and repetition.
    pub vs_baseline: Option<Ratio>,
    /// `rate / (baseline rate at K=0 / (K + 1))`, same mode and repetition.
    pub vs_fair_bound: Option<Ratio>,
    pub job_fairness: Estimate,
    pub competitor_fairness: Option<Estimate>,
    pub agent_cpu_fraction: Option<f64>,
    pub reaction_p50_us: Option<f64>,
    pub reaction_p99_us: Option<f64>,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    /// Share of the run in round trips under 100 µs (the ranks coscheduled) and their mean round trip.
    pub coscheduled_fraction: Option<f64>,
    pub coscheduled_rtt_us: Option<f64>,
    pub foreign_cpus: Estimate,
}

/// The geometric mean of paired ratios and its 90 % interval (`low`, `high`; `None` with one pair).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    pub mean: f64,
    pub interval: Option<(f64, f64)>,
    pub pairs: u32,
}

impl Ratio {
    /// From the ratios of each pair; `None` if there is none (or one is not a positive number).
    pub fn of_pairs(ratios: &[f64]) -> Option<Ratio> {
        if ratios.is_empty() || ratios.iter().any(|r| !(*r > 0.0 && r.is_finite())) {
            return None;
        }
        let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
        let e = mean_ci90(&logs)?;
        Some(Ratio {
            mean: e.mean.exp(),
            interval: e
                .half_width
                .map(|h| ((e.mean - h).exp(), (e.mean + h).exp())),
            pairs: e.n,
        })
    }

    /// `2.31 (1.90–2.81)`, or `2.31` for one pair.
    pub fn display(&self) -> String {
        match self.interval {
            Some((lo, hi)) => format!("{:.2} ({lo:.2}–{hi:.2})", self.mean),
            None => format!("{:.2}", self.mean),
        }
    }
}

fn estimate(values: &[f64]) -> Estimate {
    mean_ci90(values).unwrap_or(Estimate {
        mean: f64::NAN,
        half_width: None,
        n: 0,
    })
}

/// Build the comparison rows, in the experiment's order (configuration, mode, K).
pub fn compare(experiment: &LabExperiment, records: &[RunRecord]) -> Vec<ComparisonRow> {
    let baseline = experiment
        .configurations
        .iter()
        .find(|c| c.agent.is_none())
        .map(|c| c.name.as_str());
    // Rate of each repetition of one series point.
    let rates_by_repetition = |config: &str, mode: &cosched_policy::spin::ReceiveMode, k: u32| {
        let label = series_label(config, mode);
        records
            .iter()
            .filter(|r| r.config == label && r.competitors == k)
            .map(|r| (r.repetition, r.measurement.rate_per_s))
            .collect::<std::collections::BTreeMap<u32, f64>>()
    };
    // Paired ratios of `rates` to `base` (the divisor scaled by `scale`), repetition by repetition.
    let paired = |rates: &std::collections::BTreeMap<u32, f64>,
                  base: &std::collections::BTreeMap<u32, f64>,
                  scale: f64| {
        let ratios: Vec<f64> = rates
            .iter()
            .filter_map(|(rep, rate)| base.get(rep).map(|b| rate / (b * scale)))
            .collect();
        Ratio::of_pairs(&ratios)
    };
    let mut rows = Vec::new();
    for configuration in &experiment.configurations {
        for mode in &experiment.receive_modes {
            let label = series_label(&configuration.name, mode);
            for &k in &experiment.competitors {
                let group: Vec<&RunRecord> = records
                    .iter()
                    .filter(|r| r.config == label && r.competitors == k)
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let m = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
                    mean(&group.iter().filter_map(|r| f(r)).collect::<Vec<f64>>())
                };
                let rates: Vec<f64> = group.iter().map(|r| r.measurement.rate_per_s).collect();
                let rate = estimate(&rates);
                let own = rates_by_repetition(&configuration.name, mode, k);
                let base = baseline.map(|b| rates_by_repetition(b, mode, k));
                let dedicated = baseline.map(|b| rates_by_repetition(b, mode, 0));
                let job_f: Vec<f64> = group
                    .iter()
                    .filter_map(|r| r.measurement.parallel_job().map(|j| j.fairness))
                    .collect();
                let comp_f: Vec<f64> = group
                    .iter()
                    .filter_map(|r| r.measurement.competitors().map(|j| j.fairness))
                    .collect();
                let foreign: Vec<f64> = group
                    .iter()
                    .filter_map(|r| r.measurement.extra.get("foreign_cpus").copied())
                    .collect();
                rows.push(ComparisonRow {
                    configuration: configuration.name.clone(),
                    mode: mode.as_arg(),
                    competitors: k,
                    runs: group.len(),
                    rate,
                    vs_baseline: base.and_then(|b| paired(&own, &b, 1.0)),
                    vs_fair_bound: dedicated.and_then(|d| paired(&own, &d, 1.0 / (k as f64 + 1.0))),
                    job_fairness: estimate(&job_f),
                    competitor_fairness: (!comp_f.is_empty()).then(|| estimate(&comp_f)),
                    agent_cpu_fraction: m(&|r| r.measurement.agent_cpu_fraction),
                    reaction_p50_us: m(&|r| r.measurement.reaction_p50_us),
                    reaction_p99_us: m(&|r| r.measurement.reaction_p99_us),
                    rtt_p50_us: m(&|r| r.measurement.rtt_p50_us),
                    rtt_p99_us: m(&|r| r.measurement.rtt_p99_us),
                    coscheduled_fraction: m(&|r| {
                        r.measurement.extra.get("coscheduled_fraction").copied()
                    }),
                    coscheduled_rtt_us: m(&|r| {
                        r.measurement.extra.get("coscheduled_rtt_us").copied()
                    }),
                    foreign_cpus: estimate(&foreign),
                });
            }
        }
    }
    rows
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or("-".into(), f)
}

/// Two optional figures as one cell, `a / b` (`-` for a missing one, `-` alone when both are).
fn pair(
    a: Option<f64>,
    b: Option<f64>,
    fa: impl Fn(f64) -> String,
    fb: impl Fn(f64) -> String,
) -> String {
    match (a, b) {
        (None, None) => "-".into(),
        (a, b) => format!("{} / {}", opt(a, fa), opt(b, fb)),
    }
}

/// The comparison as a Markdown table.
pub fn render_comparison(rows: &[ComparisonRow], baseline: Option<&str>) -> String {
    let mut table = Table::new();
    table.load_preset(ASCII_MARKDOWN);
    let vs = format!("× {}", baseline.unwrap_or("baseline"));
    table.set_header(vec![
        "configuration",
        "mode",
        "K",
        "runs",
        "rate /s (90% CI)",
        &vs,
        "of fair bound",
        "job F",
        "comp. F",
        "agent CPU %",
        "reaction p50/p99 µs",
        "RTT p50/p99 µs",
        "coscheduled: share / RTT µs",
        "foreign CPUs",
    ]);
    for r in rows {
        table.add_row(vec![
            r.configuration.clone(),
            r.mode.clone(),
            r.competitors.to_string(),
            r.runs.to_string(),
            cosched_report::table::with_interval(&r.rate),
            r.vs_baseline.map_or("-".into(), |v| v.display()),
            r.vs_fair_bound.map_or("-".into(), |v| v.display()),
            format!("{:.2}", r.job_fairness.mean),
            r.competitor_fairness
                .map_or("-".into(), |f| format!("{:.2}", f.mean)),
            opt(r.agent_cpu_fraction, |v| format!("{:.2}", 100.0 * v)),
            pair(
                r.reaction_p50_us,
                r.reaction_p99_us,
                significant,
                significant,
            ),
            pair(r.rtt_p50_us, r.rtt_p99_us, significant, significant),
            pair(
                r.coscheduled_fraction,
                r.coscheduled_rtt_us,
                |v| format!("{v:.2}"),
                |v| format!("{v:.1}"),
            ),
            format!("{:.2}", r.foreign_cpus.mean),
        ]);
    }
    for i in 2..14 {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

/// Files written for one experiment.
#[derive(Debug, Default)]
pub struct Written {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    /// The lab's comparison table (Markdown).
    pub comparison: String,
    /// The common summary table of `cosched-report`.
    pub summary: String,
}

/// Write everything under `dir` (normally `results/<experiment>/`).
pub fn write_results(experiment: &LabExperiment, runs: &[LabRun], dir: &Path) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Written {
        dir: dir.to_path_buf(),
        ..Written::default()
    };
    let path = |name: &str| dir.join(name);
    let records = &crate::runner::records(runs)[..];

    // The raw material: each run's program line and agent statistics, one JSON object per line.
    let mut raw = String::new();
    for run in runs {
        let line = serde_json::json!({
            "config": run.record.config,
            "competitors": run.record.competitors,
            "repetition": run.record.repetition,
            "program": run.program_line,
            "agent": run.agent,
        });
        raw.push_str(&line.to_string());
        raw.push('\n');
    }
    std::fs::write(path("raw.jsonl"), raw)
        .with_context(|| format!("writing {}", path("raw.jsonl").display()))?;
    written.files.push(path("raw.jsonl"));

    // The agent's own words (its settings; with `--log-actions` in `agent_args`, every action), run by run.
    let mut agent_log = String::new();
    for run in runs {
        if let Some(log) = &run.agent_log {
            agent_log.push_str(&format!(
                "=== {} K={} repetition {}\n{log}",
                run.record.config, run.record.competitors, run.record.repetition
            ));
        }
    }
    if !agent_log.is_empty() {
        std::fs::write(path("agent.log"), agent_log)
            .with_context(|| format!("writing {}", path("agent.log").display()))?;
        written.files.push(path("agent.log"));
    }

    cosched_report::write::write_runs_json(&path("runs.json"), records)?;
    cosched_report::write::write_runs_csv(&path("runs.csv"), records)?;
    let summary = cosched_report::summary::summarize(records)?;
    cosched_report::write::write_summary_csv(&path("summary.csv"), &summary)?;
    written.summary = cosched_report::table::render_summary(&summary);
    written
        .files
        .extend(["runs.json", "runs.csv", "summary.csv"].map(path));

    let baseline = experiment
        .configurations
        .iter()
        .find(|c| c.agent.is_none())
        .map(|c| c.name.as_str());
    let rows = compare(experiment, records);
    written.comparison = render_comparison(&rows, baseline);
    let doc = format!(
        "# {} (real, emulated cluster)\n\n```text\n{}```\n\n{}\n\nRate × baseline: against `{}` in the same mode, K and repetition (runs back to back); \
         geometric mean of the paired ratios with its 90 % interval. \
         Of fair bound: rate / (baseline rate at K=0 / (K+1)), paired the same way. F = N·Tc/Te with N the processes sharing the CPU. \
         Foreign CPUs: load on the experiment's CPUs that was not the experiment's (1.0 = one whole CPU).\n",
        experiment.name,
        experiment.describe(),
        written.comparison,
        baseline.unwrap_or("-")
    );
    std::fs::write(path("lab.md"), doc)
        .with_context(|| format!("writing {}", path("lab.md").display()))?;
    written.files.push(path("lab.md"));

    let multi_k = experiment.competitors.len() > 1;
    if multi_k {
        let title = |what: &str| {
            format!(
                "{}: {what} (real, {} nodes)",
                experiment.name, experiment.nodes
            )
        };
        let plots: [(&str, Metric, Scale, String); 4] = [
            ("rate.svg", Metric::Rate, Scale::Log, title("work rate")),
            (
                "response.svg",
                Metric::ResponseTime,
                Scale::Log,
                title("job response time"),
            ),
            (
                "job-fairness.svg",
                Metric::JobFairness,
                Scale::Linear,
                title("job fairness F"),
            ),
            (
                "competitor-fairness.svg",
                Metric::CompetitorFairness,
                Scale::Linear,
                title("competitor fairness F"),
            ),
        ];
        for (file, metric, scale, title) in plots {
            if metric == Metric::CompetitorFairness
                && summary.iter().all(|r| r.competitor_fairness.is_none())
            {
                continue;
            }
            plot_sweep(&path(file), &title, &summary, metric, scale, None)?;
            written.files.push(path(file));
        }
    }
    // Round-trip histograms at the largest K, one panel per series (first repetition), when programs gave them.
    if let Some(&k) = experiment.competitors.iter().max() {
        let panels: Vec<(String, Histogram)> = records
            .iter()
            .filter(|r| r.competitors == k && r.repetition == 0)
            .filter_map(|r| {
                r.measurement
                    .rtt_histogram
                    .clone()
                    .map(|h| (r.config.clone(), h))
            })
            .collect();
        if !panels.is_empty() {
            let file = path("rtt-histograms.svg");
            plot_histograms(
                &file,
                &format!("{}: round-trip times at K={k}", experiment.name),
                &panels,
            )?;
            written.files.push(file);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_report::schema::{Measurement, Source};

    #[test]
    fn paired_ratio_is_the_geometric_mean_of_the_pairs() {
        // Pairs 2× and 8×: logs ln 2 and ln 8 = 3 ln 2, mean 2 ln 2 → 4×.
        let r = Ratio::of_pairs(&[2.0, 8.0]).unwrap();
        assert!((r.mean - 4.0).abs() < 1e-12);
        assert_eq!(r.pairs, 2);
        let (lo, hi) = r.interval.unwrap();
        assert!(
            lo < 4.0 && hi > 4.0 && (lo * hi - 16.0).abs() < 1e-9,
            "symmetric in logs"
        );
        assert_eq!(Ratio::of_pairs(&[3.0]).unwrap().interval, None);
        assert_eq!(Ratio::of_pairs(&[]), None);
        assert_eq!(Ratio::of_pairs(&[1.0, 0.0]), None);
    }

    fn record(config: &str, k: u32, repetition: u32, rate: f64) -> RunRecord {
        RunRecord {
            experiment: "t".into(),
            source: Source::Real,
            config: config.into(),
            competitors: k,
            repetition,
            seed: None,
            measurement: Measurement {
                rate_per_s: rate,
                ..Measurement::default()
            },
        }
    }

    #[test]
    fn ratios_pair_runs_of_the_same_repetition() {
        let experiment = LabExperiment::parse(
            "name = \"t\"\nnodes = 2\ncompetitors = [0, 1]\nreceive_modes = [\"spin-only\"]\nrepetitions = 2\n\
             [program]\nkind = \"pingpong\"\nduration_s = 1.0\n\
             [[configurations]]\nname = \"no-agent\"\n[[configurations]]\nname = \"agent\"\nagent = true\n",
            Path::new("t.toml"),
        )
        .unwrap();
        // The machine ran twice as fast in repetition 1; the agent doubled the rate in both.
        let records = vec![
            record("no-agent, spin-only", 0, 0, 100.0),
            record("no-agent, spin-only", 1, 0, 10.0),
            record("agent, spin-only", 0, 0, 100.0),
            record("agent, spin-only", 1, 0, 20.0),
            record("no-agent, spin-only", 0, 1, 200.0),
            record("no-agent, spin-only", 1, 1, 20.0),
            record("agent, spin-only", 0, 1, 200.0),
            record("agent, spin-only", 1, 1, 40.0),
        ];
        let rows = compare(&experiment, &records);
        let agent_k1 = rows
            .iter()
            .find(|r| r.configuration == "agent" && r.competitors == 1)
            .unwrap();
        // Paired: 20/10 and 40/20 are both exactly 2, so the interval closes on 2 (a ratio of means would
        // also give 30/15 = 2, but with the drift in its spread).
        let vs = agent_k1.vs_baseline.unwrap();
        assert!((vs.mean - 2.0).abs() < 1e-12);
        let (lo, hi) = vs.interval.unwrap();
        assert!((lo - 2.0).abs() < 1e-9 && (hi - 2.0).abs() < 1e-9);
        // Fair bound at K=1: 20 / (100 / 2) = 0.4 and 40 / (200 / 2) = 0.4.
        assert!((agent_k1.vs_fair_bound.unwrap().mean - 0.4).abs() < 1e-12);
    }
}
