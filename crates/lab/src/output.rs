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
//!
//! With `lab.local_probe` every run carries the local user's wake-up delays (`local_p50_us`, `local_p99_us`,
//! `local_max_us` in `runs.json`'s `measurement.extra`), and only then `runs.csv` gets those three columns,
//! `summary.csv` `local_p50_us_mean`, `local_p99_us_mean` and `local_max_us` (the largest of the point's runs),
//! and the lab table a column `local p50/p99/max µs` (the same figures, [`LocalCell`]) and one with each
//! configuration's local p99 over the baseline's, paired by repetition: the median and range of those ratios
//! ([`MedianRatio`]), the SPEC's measure of the local user (within 2× of no agent, on medians of runs).

use crate::experiment::{CompetitorsCgroup, LabExperiment};
use crate::measure::LocalFigures;
use crate::runner::{series_label, LabRun};
use anyhow::{Context, Result};
use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::{CellAlignment, Table};
use cosched_report::docdata::DocTable;
use cosched_report::plot::{plot_histograms, plot_sweep, Metric, Scale};
use cosched_report::stats::{mean, mean_ci90, Estimate};
use cosched_report::table::significant;
use cosched_report::{Histogram, RunRecord};
use std::path::{Path, PathBuf};

/// One line of the lab table: a configuration in a receive mode at K competitors.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonRow {
    /// The experiment's name.
    pub experiment: String,
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
    /// The local user's lateness (`lab.local_probe`), its p99 paired against the baseline's.
    pub local: Option<LocalCell>,
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

/// One value per repetition of a series point.
type ByRepetition = std::collections::BTreeMap<u32, f64>;

/// `value` of each repetition of series `label` at K = `competitors` (runs without it left out).
fn by_repetition(
    records: &[RunRecord],
    label: &str,
    competitors: u32,
    value: impl Fn(&RunRecord) -> Option<f64>,
) -> ByRepetition {
    records
        .iter()
        .filter(|r| r.config == label && r.competitors == competitors)
        .filter_map(|r| value(r).map(|v| (r.repetition, v)))
        .collect()
}

/// `own / (base · scale)` for each repetition both have: the runner runs a repetition's configurations back to
/// back, so pairing cancels the machine's drift.
fn paired_ratios(own: &ByRepetition, base: &ByRepetition, scale: f64) -> Vec<f64> {
    own.iter()
        .filter_map(|(rep, v)| base.get(rep).map(|b| v / (b * scale)))
        .collect()
}

/// Build the comparison rows, in the experiment's order (configuration, mode, K).
pub fn compare(experiment: &LabExperiment, records: &[RunRecord]) -> Vec<ComparisonRow> {
    let baseline = baseline_of(experiment);
    // Rate of each repetition of one series point.
    let rates_by_repetition = |config: &str, mode: &cosched_policy::spin::ReceiveMode, k: u32| {
        by_repetition(records, &series_label(config, mode), k, |r| {
            Some(r.measurement.rate_per_s)
        })
    };
    let paired = |rates: &ByRepetition, base: &ByRepetition, scale: f64| {
        Ratio::of_pairs(&paired_ratios(rates, base, scale))
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
                    experiment: experiment.name.clone(),
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
                    local: None,
                });
            }
        }
    }
    if experiment.lab.local_probe {
        let cells = local_cells(&rows, records, baseline);
        for (row, cell) in rows.iter_mut().zip(cells) {
            row.local = cell;
        }
    }
    rows
}

/// The local user's lateness at one point (configuration, mode, K): the mean of its runs' local p50 and p99
/// (each the worse CPU's) and the largest local max of any of them, microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalCell {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Runs that had local figures.
    pub runs: usize,
    /// The local p99 against the baseline's, paired by repetition ([`local_p99_vs_baseline`]); `None` for the
    /// baseline itself or without pairs.
    pub p99_vs_baseline: Option<MedianRatio>,
}

/// The median of paired ratios and their range: the SPEC's local-user target is judged on medians of
/// alternating runs (a p99 within 2x of its value without the agent), and one bad run should not hide in a
/// mean nor decide it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MedianRatio {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub pairs: usize,
}

impl MedianRatio {
    /// From the ratios of each pair; `None` if there is none or one is not a positive finite number.
    pub fn of_pairs(ratios: &[f64]) -> Option<MedianRatio> {
        if ratios.is_empty() || ratios.iter().any(|r| !(*r > 0.0 && r.is_finite())) {
            return None;
        }
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(MedianRatio {
            median,
            low: sorted[0],
            high: sorted[n - 1],
            pairs: n,
        })
    }

    /// `1.84 (1.23–2.08)`, or `1.84` for one pair.
    pub fn display(&self) -> String {
        if self.pairs > 1 {
            format!("{:.2} ({:.2}–{:.2})", self.median, self.low, self.high)
        } else {
            format!("{:.2}", self.median)
        }
    }
}

/// The local p99 of series `label` against series `baseline`'s at the same K, repetition by repetition (the
/// runner runs a repetition's configurations back to back): the median of `p99 / baseline p99` and its range.
pub fn local_p99_vs_baseline(
    records: &[RunRecord],
    label: &str,
    baseline: &str,
    competitors: u32,
) -> Option<MedianRatio> {
    let p99_by_repetition = |series: &str| {
        by_repetition(records, series, competitors, |r| {
            LocalFigures::of_record(&r.measurement).map(|f| f.p99_us)
        })
    };
    MedianRatio::of_pairs(&paired_ratios(
        &p99_by_repetition(label),
        &p99_by_repetition(baseline),
        1.0,
    ))
}

/// The [`LocalCell`] of the runs of series `label` (`configuration, mode`) at K = `competitors`; `None` if
/// none of them has local figures.
pub fn local_cell(records: &[RunRecord], label: &str, competitors: u32) -> Option<LocalCell> {
    let figures: Vec<LocalFigures> = records
        .iter()
        .filter(|r| r.config == label && r.competitors == competitors)
        .filter_map(|r| LocalFigures::of_record(&r.measurement))
        .collect();
    let p50: Vec<f64> = figures.iter().map(|f| f.p50_us).collect();
    let p99: Vec<f64> = figures.iter().map(|f| f.p99_us).collect();
    Some(LocalCell {
        p50_us: mean(&p50)?,
        p99_us: mean(&p99)?,
        max_us: figures.iter().map(|f| f.max_us).fold(f64::NAN, f64::max),
        runs: figures.len(),
        p99_vs_baseline: None,
    })
}

/// The [`LocalCell`] of each comparison row, with its p99 against the `baseline` configuration's in the same
/// mode (none for the baseline's own rows).
pub fn local_cells(
    rows: &[ComparisonRow],
    records: &[RunRecord],
    baseline: Option<&str>,
) -> Vec<Option<LocalCell>> {
    rows.iter()
        .map(|r| {
            let label = format!("{}, {}", r.configuration, r.mode);
            let mut cell = local_cell(records, &label, r.competitors)?;
            cell.p99_vs_baseline = baseline.filter(|b| *b != r.configuration).and_then(|b| {
                local_p99_vs_baseline(records, &label, &format!("{b}, {}", r.mode), r.competitors)
            });
            Some(cell)
        })
        .collect()
}

/// Append columns to a CSV file written with a header line: `headers`, and for each data line (in order) its
/// values (`rows[i]`, one per header; empty for a missing value).
pub fn append_csv_columns(path: &Path, headers: &[&str], rows: &[Vec<String>]) -> Result<()> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let mut header = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?
        .clone();
    let lines = reader
        .records()
        .collect::<std::result::Result<Vec<_>, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        lines.len() == rows.len(),
        "{}: {} lines, but {} rows of values to add",
        path.display(),
        lines.len(),
        rows.len()
    );
    for h in headers {
        header.push_field(h);
    }
    let mut writer =
        csv::Writer::from_path(path).with_context(|| format!("rewriting {}", path.display()))?;
    writer.write_record(&header)?;
    for (mut line, values) in lines.into_iter().zip(rows) {
        anyhow::ensure!(
            values.len() == headers.len(),
            "{} values for {} new columns",
            values.len(),
            headers.len()
        );
        for v in values {
            line.push_field(v);
        }
        writer.write_record(&line)?;
    }
    writer
        .flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// A CSV cell: the number, or empty.
fn cell(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// `runs.csv` and `summary.csv` (as cosched-report wrote them) get the local user's columns.
fn add_local_columns(
    dir: &Path,
    records: &[RunRecord],
    summary: &[cosched_report::summary::SummaryRow],
) -> Result<()> {
    // runs.csv: one line per run and job (cosched_report::write::write_runs_csv's order).
    let rows: Vec<Vec<String>> = records
        .iter()
        .flat_map(|r| {
            let f = LocalFigures::of_record(&r.measurement);
            let values = vec![
                cell(f.map(|f| f.p50_us)),
                cell(f.map(|f| f.p99_us)),
                cell(f.map(|f| f.max_us)),
            ];
            std::iter::repeat_n(values, r.measurement.jobs.len())
        })
        .collect();
    append_csv_columns(
        &dir.join("runs.csv"),
        &[
            crate::measure::LOCAL_P50,
            crate::measure::LOCAL_P99,
            crate::measure::LOCAL_MAX,
        ],
        &rows,
    )?;
    // summary.csv: one line per point.
    let rows: Vec<Vec<String>> = summary
        .iter()
        .map(|s| {
            let c = local_cell(records, &s.config, s.competitors);
            vec![
                cell(c.map(|c| c.p50_us)),
                cell(c.map(|c| c.p99_us)),
                cell(c.map(|c| c.max_us)),
            ]
        })
        .collect();
    append_csv_columns(
        &dir.join("summary.csv"),
        &["local_p50_us_mean", "local_p99_us_mean", "local_max_us"],
        &rows,
    )
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

/// The comparison's header and cells; with `local` (one cell per row: experiments with `lab.local_probe`) a
/// column of the local user's wake-up delays, before the foreign CPUs. Printed by [`render_comparison`] and
/// stored for the docs by [`comparison_doc_table`].
pub fn comparison_cells(
    rows: &[ComparisonRow],
    baseline: Option<&str>,
    local: Option<&[Option<LocalCell>]>,
) -> (Vec<String>, Vec<Vec<String>>) {
    let vs = format!("× {}", baseline.unwrap_or("baseline"));
    let mut header: Vec<String> = [
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
    ]
    .map(String::from)
    .to_vec();
    if local.is_some() {
        header.push("local p50/p99/max µs".into());
        header.push(format!("local p99 {vs} (median, range)"));
    }
    header.push("foreign CPUs".into());
    let cells = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut line = vec![
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
            ];
            if let Some(local) = local {
                let cell = local.get(i).copied().flatten();
                line.push(cell.map_or("-".into(), |c| {
                    format!(
                        "{} / {} / {}",
                        significant(c.p50_us),
                        significant(c.p99_us),
                        significant(c.max_us)
                    )
                }));
                line.push(
                    cell.and_then(|c| c.p99_vs_baseline)
                        .map_or("-".into(), |v| v.display()),
                );
            }
            line.push(format!("{:.2}", r.foreign_cpus.mean));
            line
        })
        .collect();
    (header, cells)
}

/// The comparison as a Markdown table ([`comparison_cells`]).
pub fn render_comparison(
    rows: &[ComparisonRow],
    baseline: Option<&str>,
    local: Option<&[Option<LocalCell>]>,
) -> String {
    let (header, cells) = comparison_cells(rows, baseline, local);
    let columns = header.len();
    let mut table = Table::new();
    table.load_preset(ASCII_MARKDOWN);
    table.set_header(header);
    for line in cells {
        table.add_row(line);
    }
    for i in 2..columns {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

/// The name of an experiment's table in the docs' data (`docs/data/lab-<name>.json`).
pub fn doc_table_name(experiment: &LabExperiment) -> String {
    format!("lab-{}", experiment.name)
}

/// The comparison as a table of the docs (`cosched lab FILE --doc-data docs/data`), with the reading notes the
/// results' README gives, not yet stamped.
pub fn comparison_doc_table(
    experiment: &LabExperiment,
    rows: &[ComparisonRow],
    local: Option<&[Option<LocalCell>]>,
) -> DocTable {
    let baseline = baseline_of(experiment);
    let (header, cells) = comparison_cells(rows, baseline, local);
    let apart = if experiment.lab.competitors_cgroup == CompetitorsCgroup::Own {
        " (N: the inverse of the kernel-fair part of the CPU; the job's and the competitors' cgroups halve it)"
    } else {
        ""
    };
    let mut table = DocTable::new(&doc_table_name(experiment), header).with_notes(&format!(
        "{} repetition(s) per row. Rate × {}: the paired ratio against it in the same mode, K and repetition \
         (geometric mean, 90 % interval); of fair bound: rate / (its rate at K = 0 / (K + 1)). \
         F = N·Tc/Te{apart}. Foreign CPUs: load on the experiment's CPUs that was not the experiment's.",
        experiment.repetitions,
        baseline.unwrap_or("the baseline"),
    ));
    for line in cells {
        table.push(line);
    }
    table
}

/// The configuration without an agent that every other is compared against, if any.
fn baseline_of(experiment: &LabExperiment) -> Option<&str> {
    experiment
        .configurations
        .iter()
        .find(|c| c.agent.is_none())
        .map(|c| c.name.as_str())
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
    /// The comparison as a docs table, not yet stamped (`--doc-data`).
    pub doc_table: Option<DocTable>,
}

/// `lab.md`'s note of the runs during which the kernel logged starvation warnings ([`crate::kernlog`]); empty
/// when there were none.
fn kernel_warnings_note(runs: &[LabRun]) -> String {
    let suspect: Vec<String> = runs
        .iter()
        .filter(|r| !r.kernel_warnings.is_empty())
        .map(|r| {
            format!(
                "- {} K={} repetition {}: {}\n",
                r.record.config,
                r.record.competitors,
                r.record.repetition,
                crate::kernlog::summary(&r.kernel_warnings)
            )
        })
        .collect();
    if suspect.is_empty() {
        return String::new();
    }
    format!(
        "\n**The kernel logged starvation warnings during {} run(s)**: its own threads waited for their CPU, so \
         these runs' figures are suspect (`raw.jsonl` has every warning):\n\n{}",
        suspect.len(),
        suspect.concat()
    )
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
        let mut line = serde_json::json!({
            "config": run.record.config,
            "competitors": run.record.competitors,
            "repetition": run.record.repetition,
            "program": run.program_line,
            "agent": run.agent,
            "placement": run.placement,
        });
        if !run.kernel_warnings.is_empty() {
            line["kernel_warnings"] = serde_json::json!(run.kernel_warnings);
        }
        if experiment.lab.local_probe {
            line["local"] = run
                .local
                .iter()
                .map(|(cpu, l)| serde_json::json!({"cpu": cpu, "line": l}))
                .collect();
        }
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
    if experiment.lab.local_probe {
        add_local_columns(dir, records, &summary)?;
    }
    written.summary = cosched_report::table::render_summary(&summary);
    written
        .files
        .extend(["runs.json", "runs.csv", "summary.csv"].map(path));

    let baseline = baseline_of(experiment);
    let rows = compare(experiment, records);
    let local: Option<Vec<Option<LocalCell>>> = experiment
        .lab
        .local_probe
        .then(|| rows.iter().map(|r| r.local).collect());
    written.comparison = render_comparison(&rows, baseline, local.as_deref());
    written.doc_table = Some(comparison_doc_table(experiment, &rows, local.as_deref()));
    let doc = format!(
        "# {} (real, emulated cluster)\n\n```text\n{}```\n\n{}\n\nRate × baseline: against `{}` in the same mode, K and repetition (runs back to back); \
         geometric mean of the paired ratios with its 90 % interval. \
         Of fair bound: rate / (baseline rate at K=0 / (K+1)), paired the same way. F = N·Tc/Te with N the inverse of the party's kernel-fair part of the CPU. \
         Foreign CPUs: load on the experiment's CPUs that was not the experiment's (1.0 = one whole CPU).{}\n",
        experiment.name,
        experiment.describe(),
        written.comparison,
        baseline.unwrap_or("-"),
        if experiment.lab.local_probe {
            " Local: the local user's wake-up delay, how late it got its CPU after each of its sleeps (one \
             `cosched-local` per node CPU, in a cpu cgroup of its own, run with the arguments above), the worse \
             CPU's p50 and p99 averaged over the runs, and the largest maximum of any run; its p99 against the \
             baseline's in the same repetition, the median of those paired ratios and their range (the SPEC's \
             target: within 2x, worst case under 20 ms)."
        } else {
            ""
        }
    );
    let doc = doc + &kernel_warnings_note(runs);
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

    /// A record of `config` at K with the local figures (p50, p99, max) in its extra.
    fn local_record(config: &str, k: u32, repetition: u32, local: Option<[f64; 3]>) -> RunRecord {
        let mut r = record(config, k, repetition, 100.0);
        r.measurement.jobs = vec![cosched_report::JobResult {
            name: "pingpong".into(),
            role: cosched_report::JobRole::Parallel,
            response_s: 1.0,
            cpu_s: 1.0,
            fairness: 1.0,
            fairness_min: 1.0,
            fairness_max: 1.0,
        }];
        if let Some([p50, p99, max]) = local {
            for (key, v) in [
                (crate::measure::LOCAL_P50, p50),
                (crate::measure::LOCAL_P99, p99),
                (crate::measure::LOCAL_MAX, max),
            ] {
                r.measurement.extra.insert(key.into(), v);
            }
        }
        r
    }

    #[test]
    fn a_points_local_cell_averages_the_percentiles_and_keeps_the_largest_maximum() {
        let records = vec![
            local_record("agent, spin-only", 1, 0, Some([50.0, 800.0, 3000.0])),
            local_record("agent, spin-only", 1, 1, Some([70.0, 1200.0, 9000.0])),
            local_record("agent, spin-only", 2, 0, Some([1.0, 2.0, 3.0])),
            local_record("no-agent, spin-only", 1, 0, None),
        ];
        // p50 (50 + 70) / 2 = 60, p99 (800 + 1200) / 2 = 1000, max max(3000, 9000) = 9000.
        assert_eq!(
            local_cell(&records, "agent, spin-only", 1),
            Some(LocalCell {
                p50_us: 60.0,
                p99_us: 1000.0,
                max_us: 9000.0,
                runs: 2,
                p99_vs_baseline: None,
            })
        );
        assert_eq!(local_cell(&records, "no-agent, spin-only", 1), None);
        assert_eq!(local_cell(&records, "agent, spin-only", 0), None);
    }

    #[test]
    fn the_local_p99_ratio_is_the_median_of_the_pairs_by_repetition() {
        let records = vec![
            local_record("no-agent, spin-only", 1, 0, Some([50.0, 100.0, 3000.0])),
            local_record("no-agent, spin-only", 1, 1, Some([50.0, 80.0, 3000.0])),
            local_record("no-agent, spin-only", 1, 2, Some([50.0, 50.0, 3000.0])),
            local_record("agent, spin-only", 1, 0, Some([50.0, 150.0, 3000.0])),
            local_record("agent, spin-only", 1, 1, Some([50.0, 400.0, 3000.0])),
            local_record("agent, spin-only", 1, 2, Some([50.0, 100.0, 3000.0])),
            // No baseline at repetition 3: no pair.
            local_record("agent, spin-only", 1, 3, Some([50.0, 9999.0, 3000.0])),
        ];
        // Pairs 150/100 = 1.5, 400/80 = 5, 100/50 = 2: median 2 (a mean would say 2.83, a pooled ratio 2.8).
        let r =
            local_p99_vs_baseline(&records, "agent, spin-only", "no-agent, spin-only", 1).unwrap();
        assert_eq!((r.median, r.low, r.high, r.pairs), (2.0, 1.5, 5.0, 3));
        assert_eq!(r.display(), "2.00 (1.50–5.00)");
        let even = MedianRatio::of_pairs(&[1.0, 3.0]).unwrap();
        assert_eq!(even.median, 2.0);
        assert_eq!(MedianRatio::of_pairs(&[]), None);
        assert_eq!(MedianRatio::of_pairs(&[1.0, f64::NAN]), None);
        assert_eq!(
            local_p99_vs_baseline(&records, "agent, spin-only", "no-agent, spin-only", 2),
            None
        );
    }

    #[test]
    fn the_local_column_is_there_only_when_asked_for() {
        let experiment = LabExperiment::parse(
            "name = \"t\"\nnodes = 2\ncompetitors = [1]\nreceive_modes = [\"spin-only\"]\n\
             [program]\nkind = \"pingpong\"\nduration_s = 1.0\n\
             [[configurations]]\nname = \"no-agent\"\n[[configurations]]\nname = \"agent\"\nagent = true\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let records = vec![
            local_record("no-agent, spin-only", 1, 0, Some([55.0, 610.0, 8100.0])),
            local_record("agent, spin-only", 1, 0, None),
        ];
        let rows = compare(&experiment, &records);
        let plain = render_comparison(&rows, Some("no-agent"), None);
        assert!(!plain.contains("local"), "{plain}");
        let cells = local_cells(&rows, &records, Some("no-agent"));
        assert_eq!(cells.len(), 2);
        let text = render_comparison(&rows, Some("no-agent"), Some(&cells));
        assert!(text.contains("local p50/p99/max µs"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let no_agent = lines.iter().find(|l| l.contains("| no-agent ")).unwrap();
        assert!(no_agent.contains("55.00 / 610.0 / 8100"), "{no_agent}");
        let agent = lines.iter().find(|l| l.contains("| agent ")).unwrap();
        // Every line has the same number of cells as the header.
        assert_eq!(agent.matches('|').count(), lines[0].matches('|').count());
        // The docs' copy holds the same cells, named after the experiment, and is a valid table once stamped.
        let doc = comparison_doc_table(&experiment, &rows, Some(&cells));
        assert_eq!(doc.name, "lab-t");
        assert_eq!(doc.columns.len(), 16);
        assert_eq!(doc.columns[14], "local p99 × no-agent (median, range)");
        assert_eq!(doc.columns[5], "× no-agent");
        assert_eq!(doc.rows.len(), 2);
        assert!(doc
            .rows
            .iter()
            .any(|r| r.contains(&"55.00 / 610.0 / 8100".to_string())));
        let stamp = cosched_report::docdata::Stamp {
            source_command: "cosched lab t.toml".into(),
            commit: "abc".into(),
            machine: "m".into(),
            date: "2026-11-26".into(),
        };
        assert_eq!(doc.stamped(&stamp).problems(), Vec::<String>::new());
    }

    #[test]
    fn csv_columns_are_appended_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        std::fs::write(
            &path,
            "config,k\n\"agent, spin-only\",1\n\"no-agent, block\",2\n",
        )
        .unwrap();
        append_csv_columns(
            &path,
            &["local_p50_us", "local_max_us"],
            &[
                vec!["12.5".into(), "900".into()],
                vec![String::new(), String::new()],
            ],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "config,k,local_p50_us,local_max_us\n\"agent, spin-only\",1,12.5,900\n\"no-agent, block\",2,,\n"
        );
        // One row of values too few is an error, and the file is left as it was.
        let err = append_csv_columns(&path, &["x"], &[vec!["1".into()]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 lines, but 1 rows"), "{err}");
    }
}
