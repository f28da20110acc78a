//! Results of a lab experiment: the common summary table and files of `cosched-report` (`runs.json`,
//! `runs.csv`, `summary.csv`, SVG plots) plus the lab's own comparison table (`lab.md`): for each receive mode
//! and K, every configuration's rate against the baseline (the first configuration without the agent) and
//! against the fair-coscheduling bound, its fairness, the agent's CPU use and reaction time, and the foreign
//! CPU load measured beside it.
//!
//! Fair-coscheduling bound (SPEC targets): a job that shares each CPU fairly with K competitors and is always
//! coscheduled would run at `dedicated rate / (K + 1)`, the dedicated rate being the baseline's rate at K = 0
//! in the same receive mode.

use crate::experiment::LabExperiment;
use crate::runner::{series_label, LabRun};
use anyhow::{Context, Result};
use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::{CellAlignment, Table};
use cosched_report::plot::{plot_histograms, plot_sweep, Metric, Scale};
use cosched_report::stats::{mean_ci90, Estimate};
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
    /// `rate / baseline rate` at the same mode and K.
    pub vs_baseline: Option<f64>,
    /// `rate / (baseline rate at K=0 / (K + 1))`.
    pub vs_fair_bound: Option<f64>,
    pub job_fairness: Estimate,
    pub competitor_fairness: Option<Estimate>,
    pub agent_cpu_fraction: Option<f64>,
    pub reaction_p50_us: Option<f64>,
    pub reaction_p99_us: Option<f64>,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    pub foreign_cpus: Estimate,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
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
    let rate_of = |config: &str, mode: &cosched_policy::spin::ReceiveMode, k: u32| -> Option<f64> {
        let label = series_label(config, mode);
        mean(
            records
                .iter()
                .filter(|r| r.config == label && r.competitors == k)
                .map(|r| r.measurement.rate_per_s),
        )
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
                let m =
                    |f: &dyn Fn(&RunRecord) -> Option<f64>| mean(group.iter().filter_map(|r| f(r)));
                let rates: Vec<f64> = group.iter().map(|r| r.measurement.rate_per_s).collect();
                let rate = estimate(&rates);
                let base = baseline.and_then(|b| rate_of(b, mode, k));
                let dedicated = baseline.and_then(|b| rate_of(b, mode, 0));
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
                    vs_baseline: base.filter(|b| *b > 0.0).map(|b| rate.mean / b),
                    vs_fair_bound: dedicated
                        .filter(|d| *d > 0.0)
                        .map(|d| rate.mean / (d / (k as f64 + 1.0))),
                    job_fairness: estimate(&job_f),
                    competitor_fairness: (!comp_f.is_empty()).then(|| estimate(&comp_f)),
                    agent_cpu_fraction: m(&|r| r.measurement.agent_cpu_fraction),
                    reaction_p50_us: m(&|r| r.measurement.reaction_p50_us),
                    reaction_p99_us: m(&|r| r.measurement.reaction_p99_us),
                    rtt_p50_us: m(&|r| r.measurement.rtt_p50_us),
                    rtt_p99_us: m(&|r| r.measurement.rtt_p99_us),
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
        "foreign CPUs",
    ]);
    for r in rows {
        table.add_row(vec![
            r.configuration.clone(),
            r.mode.clone(),
            r.competitors.to_string(),
            r.runs.to_string(),
            cosched_report::table::with_interval(&r.rate),
            opt(r.vs_baseline, |v| format!("{v:.2}")),
            opt(r.vs_fair_bound, |v| format!("{v:.2}")),
            format!("{:.2}", r.job_fairness.mean),
            r.competitor_fairness
                .map_or("-".into(), |f| format!("{:.2}", f.mean)),
            opt(r.agent_cpu_fraction, |v| format!("{:.2}", 100.0 * v)),
            match (r.reaction_p50_us, r.reaction_p99_us) {
                (None, None) => "-".into(),
                (a, b) => format!("{} / {}", opt(a, significant), opt(b, significant)),
            },
            match (r.rtt_p50_us, r.rtt_p99_us) {
                (None, None) => "-".into(),
                (a, b) => format!("{} / {}", opt(a, significant), opt(b, significant)),
            },
            format!("{:.2}", r.foreign_cpus.mean),
        ]);
    }
    for i in 2..13 {
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
        "# {} (real, emulated cluster)\n\n```text\n{}```\n\n{}\n\nRate × baseline: against `{}` in the same mode and K. \
         Of fair bound: rate / (baseline rate at K=0 / (K+1)). F = N·Tc/Te with N the processes sharing the CPU. \
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
