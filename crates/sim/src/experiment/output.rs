//! What `cosched sim` prints and writes for one experiment.
//!
//! Under `<out>/<experiment name>/`:
//! - `experiment.json` — the resolved experiment: every configuration's scenario and every run's seed;
//! - `runs.json`, `runs.csv` — every run ([`cosched_report::RunRecord`]), in plan order;
//! - `summary.csv`, `summary_jobs.csv`, `table.txt`, `table.md` — mean and 90 % Student-t interval per point;
//! - plots in the style of seed `000_e8004e1596fde6a5.txt` §4.2 (SVG):
//!   - sweeps (more than one competitor count): `response_time_log.svg` (Figures 3, 4, 9),
//!     `cpu_time_log.svg`, `response_time_spin_block_linear.svg` (Figure 5), `fairness.svg` (Figure 6),
//!     `competitor_fairness.svg`, `rtt_histogram.svg` (repetition 0 at the most competitors, when the engine
//!     recorded histograms);
//!   - workloads with sequential jobs (Mixed): `mixed_response.svg`, `mixed_cpu.svg` (Figure 7) and
//!     `mixed_fairness.svg` (Figure 8), per competitor count.

use super::resolve::{Experiment, StreamArrivals};
use super::runner::RunOutcome;
use crate::scenario::{ParallelProgram, Workload};
use anyhow::Context;
use cosched_report::plot::{plot_histograms, plot_job_bars, plot_sweep, JobMetric, Metric, Scale};
use cosched_report::summary::{summarize, SummaryRow};
use cosched_report::table::Style;
use cosched_report::{table, write, JobRole, RunRecord};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The header printed before an experiment runs: the resolved configuration and the seed.
pub fn header(e: &Experiment, threads: usize) -> String {
    let mut s = String::new();
    let first = &e.configs[0].scenario;
    let _ = writeln!(s, "== experiment {} ({})", e.name, e.file.display());
    let _ = writeln!(s, "   {}", e.description.replace('\n', " "));
    let _ = writeln!(s, "   reproduces: {}", e.reproduces);
    let _ = writeln!(
        s,
        "   seed {} (run seeds derived per competitors × repetition), {} repetition(s){}, competitors per node {:?}",
        e.base_seed,
        e.repetitions,
        if e.quick { " [--quick: work / 100]" } else { "" },
        e.competitors
    );
    let _ = writeln!(
        s,
        "   cluster: {} node(s) × {} CPU, context switch {} µs; network {} µs + bytes / {} MB/s; time limit {} s",
        first.nodes,
        first.cpus_per_node,
        first.context_switch_ns / 1_000,
        first.network.latency_ns / 1_000,
        first.network.bandwidth_bytes_per_s as f64 / 1e6,
        first.time_limit_ns / 1_000_000_000
    );
    let _ = writeln!(s, "   workload: {}", describe_workload(&first.workload));
    for job in &first.arrivals {
        let _ = writeln!(
            s,
            "   arriving job '{}' at {} s on nodes {:?}: {}",
            job.name,
            job.arrival_ns as f64 / 1e9,
            job.nodes,
            describe_program(&job.program)
        );
    }
    if let Some(stream) = &e.stream {
        let arrivals = match &stream.arrivals {
            StreamArrivals::Listed { arrivals_ns } => format!(
                "{} listed arrival(s), {:.3} s to {:.3} s",
                arrivals_ns.len(),
                arrivals_ns.first().copied().unwrap_or(0) as f64 / 1e9,
                arrivals_ns.last().copied().unwrap_or(0) as f64 / 1e9
            ),
            StreamArrivals::Generated {
                mean_gap_ns,
                horizon_ns,
                ..
            } => format!(
                "exponential arrivals, mean gap {:.3} s, until {} s, drawn per run",
                mean_gap_ns / 1e9,
                *horizon_ns as f64 / 1e9
            ),
        };
        let _ = writeln!(
            s,
            "   stream: jobs of {} node(s) ({arrivals}): {}",
            stream.nodes_per_job,
            describe_program(&stream.program)
        );
    }
    let _ = writeln!(s, "   configurations:");
    let width = e
        .configs
        .iter()
        .map(|c| c.label.chars().count())
        .max()
        .unwrap_or(0);
    for (i, c) in e.configs.iter().enumerate() {
        let sc = &c.scenario;
        let batch = matches!(sc.workload, Workload::Mixed { batch: true, .. });
        let _ = writeln!(
            s,
            "     [{i}] {:<width$}  policy {}, receive {}, os {}{}",
            c.label,
            sc.coscheduling.label(),
            sc.receive.label(),
            sc.os.label(),
            if batch {
                ", batch (jobs in sequence)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        s,
        "   {} runs on {} thread(s)",
        e.runs.len(),
        threads.min(e.runs.len())
    );
    s
}

fn describe_program(program: &ParallelProgram) -> String {
    match *program {
        ParallelProgram::Latency {
            round_trips,
            message_bytes,
        } => format!("latency, {round_trips} round trips of {message_bytes} B"),
        ParallelProgram::Barrier {
            iterations,
            compute_ns,
            message_bytes,
        } => format!(
            "barrier, {iterations} iterations of {} µs compute, {message_bytes} B messages",
            compute_ns as f64 / 1e3
        ),
        ParallelProgram::Sor(sor) => format!(
            "SOR {0}×{0} × {1} iterations at {2} ns a cell",
            sor.grid, sor.iterations, sor.cell_compute_ns
        ),
        ParallelProgram::Is {
            iterations,
            compute_ns,
            count_bytes,
            key_bytes,
        } => format!(
            "IS-like, {iterations} iterations of {} ms compute + all-to-all of {count_bytes} B and {key_bytes} B",
            compute_ns as f64 / 1e6
        ),
        ParallelProgram::Mg {
            iterations,
            levels,
            compute_ns,
            halo_bytes,
        } => format!(
            "MG-like, {iterations} V-cycles over {levels} levels, {} ms compute and {halo_bytes} B halos at the finest",
            compute_ns as f64 / 1e6
        ),
        ParallelProgram::Sp {
            iterations,
            compute_ns,
            face_bytes,
        }
        | ParallelProgram::Bt {
            iterations,
            compute_ns,
            face_bytes,
        } => format!(
            "{}-like ring stencil, {iterations} iterations of {} ms compute, {face_bytes} B faces",
            program.name().to_uppercase(),
            compute_ns as f64 / 1e6
        ),
        ParallelProgram::MasterSlave {
            iterations,
            compute_ns,
            message_bytes,
        } => format!(
            "master-slave, {iterations} iterations of {} ms slave compute, {message_bytes} B messages",
            compute_ns as f64 / 1e6
        ),
    }
}

fn describe_workload(w: &Workload) -> String {
    match w {
        Workload::Parallel(program) => describe_program(program),
        Workload::Mixed {
            sor, sequential, ..
        } => format!(
            "mixed: {}, beside {}",
            describe_program(&ParallelProgram::Sor(*sor)),
            sequential
                .iter()
                .map(|j| format!(
                    "{} (node {}, {} s CPU)",
                    j.name,
                    j.node,
                    j.total_cpu_ns as f64 / 1e9
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Everything written for one experiment.
pub struct Written {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub table: String,
}

/// Summarises the outcomes, writes the files and plots under `out_root/<name>/` and returns the table text.
pub fn write_all(
    e: &Experiment,
    outcomes: &[RunOutcome],
    out_root: &Path,
) -> anyhow::Result<Written> {
    let dir = out_root.join(&e.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let records: Vec<RunRecord> = outcomes.iter().map(|o| o.record.clone()).collect();
    let rows = summarize(&records)?;
    let mut files = Vec::new();
    let mut file = |name: &str| {
        let p = dir.join(name);
        files.push(p.clone());
        p
    };

    let experiment_json =
        serde_json::to_string_pretty(e).context("serialising the resolved experiment")?;
    let path = file("experiment.json");
    std::fs::write(&path, experiment_json + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    write::write_runs_json(&file("runs.json"), &records)?;
    write::write_runs_csv(&file("runs.csv"), &records)?;
    write::write_summary_csv(&file("summary.csv"), &rows)?;
    write::write_job_summary_csv(&file("summary_jobs.csv"), &rows)?;

    let has_sequential_jobs = rows
        .iter()
        .any(|r| r.jobs.iter().any(|j| j.role == JobRole::Sequential));
    let render = |style: Style| {
        let mut text = table::render_summary_styled(&rows, style);
        if has_sequential_jobs {
            text.push_str("\n\n");
            text.push_str(&table::render_jobs_styled(&rows, style));
        }
        text
    };
    let table_text = render(Style::Terminal) + "\n" + &ratios_at_most_competitors(&rows);
    let path = file("table.txt");
    std::fs::write(&path, format!("{}\n{table_text}\n", e.title))
        .with_context(|| format!("writing {}", path.display()))?;
    let path = file("table.md");
    std::fs::write(&path, render(Style::Markdown) + "\n")
        .with_context(|| format!("writing {}", path.display()))?;

    if e.competitors.len() > 1 {
        plot_sweeps(e, &rows, &mut file)?;
        if let Some(panels) = histogram_panels(e, &records) {
            let max = e.competitors.last().copied().unwrap_or(0);
            let what = match e.configs[0].scenario.workload {
                Workload::Parallel(ParallelProgram::Barrier { .. }) => "barrier iteration times",
                _ => "round-trip times",
            };
            let title = format!("{}: {what} at {max} competitors (repetition 0)", e.title);
            plot_histograms(&file("rtt_histogram.svg"), &title, &panels)?;
        }
    }
    if has_sequential_jobs || e.competitors.len() == 1 {
        for &c in &e.competitors {
            let suffix = if e.competitors.len() > 1 {
                format!("_c{c}")
            } else {
                String::new()
            };
            let at = if c > 0 {
                format!(", {c} competitors per node")
            } else {
                String::new()
            };
            let plots = [
                (
                    "mixed_response",
                    JobMetric::ResponseTime,
                    "job response time",
                ),
                ("mixed_cpu", JobMetric::CpuTime, "CPU time"),
                ("mixed_fairness", JobMetric::Fairness, "fairness"),
            ];
            for (name, metric, what) in plots {
                let path = file(&format!("{name}{suffix}.svg"));
                plot_job_bars(&path, &format!("{}: {what}{at}", e.title), &rows, c, metric)?;
            }
        }
    }
    Ok(Written {
        dir,
        files,
        table: table_text,
    })
}

/// One line per configuration at the largest competitor count: its mean response time as a multiple of the
/// fastest configuration's, and its job F — the seed's headline comparisons as ratios from one run.
pub fn ratios_at_most_competitors(rows: &[SummaryRow]) -> String {
    let Some((most, lines)) = table::ratios_at_most_competitors(rows) else {
        return String::new();
    };
    let width = lines
        .iter()
        .map(|[config, ..]| config.chars().count())
        .max()
        .unwrap_or(0);
    let mut s =
        format!("   at {most} competitors per node, response time / fastest configuration:\n");
    for [config, ratio, fairness] in lines {
        let _ = writeln!(s, "     {config:<width$}  {ratio:>9}×   job F {fairness}");
    }
    s
}

fn plot_sweeps(
    e: &Experiment,
    rows: &[SummaryRow],
    file: &mut impl FnMut(&str) -> PathBuf,
) -> anyhow::Result<()> {
    let t = &e.title;
    plot_sweep(
        &file("response_time_log.svg"),
        &format!("{t}: job response time"),
        rows,
        Metric::ResponseTime,
        Scale::Log,
        None,
    )?;
    plot_sweep(
        &file("cpu_time_log.svg"),
        &format!("{t}: job CPU time"),
        rows,
        Metric::CpuTime,
        Scale::Log,
        None,
    )?;
    let spin_block: Vec<String> = e
        .configs
        .iter()
        .filter(|c| c.is_spin_block())
        .map(|c| c.label.clone())
        .collect();
    if !spin_block.is_empty() {
        plot_sweep(
            &file("response_time_spin_block_linear.svg"),
            &format!("{t}: spin-block detail (linear scale)"),
            rows,
            Metric::ResponseTime,
            Scale::Linear,
            Some(&spin_block),
        )?;
    }
    plot_sweep(
        &file("fairness.svg"),
        &format!("{t}: parallel job fairness"),
        rows,
        Metric::JobFairness,
        Scale::Linear,
        None,
    )?;
    if rows.iter().any(|r| r.competitor_fairness.is_some()) {
        plot_sweep(
            &file("competitor_fairness.svg"),
            &format!("{t}: competitor fairness"),
            rows,
            Metric::CompetitorFairness,
            Scale::Linear,
            None,
        )?;
    }
    Ok(())
}

/// Repetition 0 at the largest competitor count, one panel per configuration that recorded a histogram.
fn histogram_panels(
    e: &Experiment,
    records: &[RunRecord],
) -> Option<Vec<(String, cosched_report::Histogram)>> {
    let max = *e.competitors.last()?;
    let panels: Vec<_> = e
        .configs
        .iter()
        .filter_map(|c| {
            let r = records
                .iter()
                .find(|r| r.config == c.label && r.competitors == max && r.repetition == 0)?;
            Some((c.label.clone(), r.measurement.rtt_histogram.clone()?))
        })
        .collect();
    (!panels.is_empty()).then_some(panels)
}
