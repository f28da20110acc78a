//! `cosched lab <experiment file>`: check the machine, print the resolved configuration, run every
//! configuration × receive mode × K × repetition on an emulated cluster with a progress bar, print the tables
//! and write `results/<experiment>/`.
use crate::binaries::Binaries;
use crate::experiment::LabExperiment;
use crate::runner::{LabRun, Progress, RunSpec};
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct LabArgs {
    /// Experiment file (TOML), e.g. experiments/lab/pingpong-dcs.toml.
    #[arg(required_unless_present = "cleanup")]
    pub file: Option<PathBuf>,
    /// Only remove what killed labs left behind (processes in their cgroups, their agents, cgroups, network
    /// namespaces, sockets, boosts of agents that died with their guardian), say what, and exit. Also done at
    /// every lab start.
    #[arg(long, conflicts_with_all = ["check", "bench_dir", "mpi_dir"])]
    pub cleanup: bool,
    /// With --cleanup: first wait until process PID has exited (the reaper a lab starts for itself).
    #[arg(long, value_name = "PID", requires = "cleanup", hide = true)]
    pub after_exit_of: Option<u32>,
    /// Directory holding the benchmark binaries (cosched-pingpong, cosched-calcula, ...); default: the
    /// directory of this `cosched` binary.
    #[arg(long)]
    pub bench_dir: Option<PathBuf>,
    /// Directory holding the MPI ping-pong binary `mpi_pingpong`; default: the bench directory.
    #[arg(long)]
    pub mpi_dir: Option<PathBuf>,
    /// Where results go: `<results-dir>/<experiment name>/`.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Only check the file and the machine, print the resolved configuration, run nothing.
    #[arg(long)]
    pub check: bool,
    /// Also write the comparison table for the docs as `<DIR>/lab-<experiment name>.json`, stamped with this
    /// command, the commit and the machine (`--doc-data docs/data`, then `cosched docs tables` re-renders the
    /// pages that show it).
    #[arg(long, value_name = "DIR", conflicts_with = "check")]
    pub doc_data: Option<PathBuf>,
}

struct Bar {
    bar: ProgressBar,
}

impl Progress for Bar {
    fn start(&mut self, total: usize) {
        self.bar.set_length(total as u64);
    }
    fn run_done(&mut self, spec: &RunSpec, run: &LabRun) {
        let record = &run.record;
        let m = &record.measurement;
        self.bar.set_message(format!(
            "{} K={} rep {}: {:.0}/s, job F {:.2}",
            record.config,
            spec.competitors,
            spec.repetition,
            m.rate_per_s,
            m.parallel_job().map_or(0.0, |j| j.fairness)
        ));
        self.bar.inc(1);
    }
    fn finish(&mut self) {
        self.bar.finish();
    }
}

/// The progress bar of a lab over `total` runs.
fn runs_bar(total: usize) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ~{eta} left  {msg}",
        )
        .context("progress bar template")?,
    );
    Ok(bar)
}

/// `--doc-data DIR`: the comparison table for the docs, stamped with the command that measured it.
fn write_doc_table(
    table: cosched_report::docdata::DocTable,
    dir: &std::path::Path,
    file: &std::path::Path,
) -> anyhow::Result<()> {
    let stamp = cosched_report::docdata::Stamp::here(&format!("cosched lab {}", file.display()));
    let path = table.stamped(&stamp).write(dir)?;
    println!(
        "wrote {} (`cosched docs tables` puts it in every page that shows it)",
        path.display()
    );
    Ok(())
}

/// `cosched lab --cleanup [--after-exit-of PID]`.
fn cleanup(after_exit_of: Option<u32>) -> anyhow::Result<()> {
    anyhow::ensure!(
        crate::preflight::is_root(),
        "cosched lab --cleanup needs root (it kills processes in lab cgroups and removes cgroups and namespaces); \
         run it with sudo"
    );
    let removed = match after_exit_of {
        Some(pid) => crate::cleanup::reap_after(pid)?,
        None => crate::cleanup::sweep()?,
    };
    let who = after_exit_of.map_or(String::new(), |p| format!(" (after lab pid {p})"));
    if removed.is_empty() && after_exit_of.is_none() {
        println!("cosched lab --cleanup: nothing left over");
    }
    for what in &removed {
        // The reaper's stdout is closed; stderr reaches the terminal the lab ran in, if any.
        eprintln!("cosched lab --cleanup{who}: removed {what}");
    }
    Ok(())
}

pub fn run(args: LabArgs) -> anyhow::Result<()> {
    if args.cleanup {
        return cleanup(args.after_exit_of);
    }
    let file = args.file.clone().context("an experiment file is needed")?;
    if std::fs::read_to_string(&file).is_ok_and(|text| crate::stream::is_stream_file(&text)) {
        return run_stream(args, &file);
    }
    let experiment = LabExperiment::load(&file)?;
    if args.doc_data.is_some() {
        // Checked before hours of runs, not after.
        let name = crate::output::doc_table_name(&experiment);
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            anyhow::bail!(
                "--doc-data: the docs table would be named `{name}`, but a table name may hold only lower-case \
                 letters, digits and `-`: rename the experiment (`name = ...` in {})",
                file.display()
            );
        }
    }
    print!("{}", experiment.describe());
    let mut binaries = Binaries::beside_current_exe()?;
    if let Some(dir) = args.bench_dir {
        binaries.mpi_dir = Some(dir.clone());
        binaries.bench_dir = dir;
    }
    if let Some(dir) = args.mpi_dir {
        binaries.mpi_dir = Some(dir);
    }
    println!("binaries        {}", binaries.bench_dir.display());
    if crate::preflight::is_root() {
        for leftover in crate::cleanup::sweep()? {
            println!("removed leftover of a killed lab: {leftover}");
        }
    }
    crate::preflight::check(&experiment, &binaries)?;
    if args.check {
        println!("check passed: the machine can run this experiment");
        return Ok(());
    }
    let bar = runs_bar(experiment.total_runs())?;
    let runs = crate::runner::run_experiment(&experiment, &binaries, &mut Bar { bar })?;
    let dir = args.results_dir.join(&experiment.name);
    let written = crate::output::write_results(&experiment, &runs, &dir)?;
    println!("\n{}", written.summary);
    println!("{}", written.comparison);
    for file in &written.files {
        println!("wrote {}", file.display());
    }
    if let (Some(dir), Some(table)) = (&args.doc_data, written.doc_table) {
        write_doc_table(table, dir, &file)?;
    }
    Ok(())
}

/// `cosched lab FILE` for a stream experiment (a `[stream]` table): seed 001's comparison of schedulers over a
/// stream of jobs ([`crate::stream`]).
fn run_stream(args: LabArgs, file: &std::path::Path) -> anyhow::Result<()> {
    use crate::stream::{self, StreamExperiment};
    let experiment = StreamExperiment::load(file)?;
    let cpus = crate::cluster::available_cpus()?;
    experiment.check_fits(cpus.len() as u32)?;
    print!("{}", experiment.describe(cpus.len() as u32));
    let mut binaries = Binaries::beside_current_exe()?;
    if let Some(dir) = args.bench_dir {
        binaries.bench_dir = dir;
    }
    println!("binaries        {}", binaries.bench_dir.display());
    let mut problems = crate::preflight::machine_problems();
    if !crate::preflight::is_root() {
        anyhow::bail!("the lab cannot run here:\n  - {}", problems.join("\n  - "));
    }
    for leftover in crate::cleanup::sweep()? {
        println!("removed leftover of a killed lab: {leftover}");
    }
    problems.extend(stream_problems(&experiment, &binaries));
    if !problems.is_empty() {
        anyhow::bail!("the lab cannot run here:\n  - {}", problems.join("\n  - "));
    }
    if args.check {
        println!("check passed: the machine can run this experiment");
        return Ok(());
    }
    let bar = runs_bar(experiment.total_runs())?;
    let runs = stream::run_experiment(&experiment, &binaries, &cpus, |run| {
        bar.set_message(format!(
            "{} rep {}: mean response {:.2} s, makespan {:.2} s",
            run.scheduler.name(),
            run.repetition,
            run.mean_response_s(),
            run.makespan_s()
        ));
        bar.inc(1);
    })?;
    bar.finish();
    let table = stream::comparison(&experiment, &runs);
    let dir = args.results_dir.join(&experiment.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let runs_path = dir.join("runs.json");
    std::fs::write(&runs_path, serde_json::to_string_pretty(&runs)?)
        .with_context(|| format!("writing {}", runs_path.display()))?;
    let rendered = cosched_report::docdata::render_markdown(&table);
    let table_path = dir.join("comparison.md");
    std::fs::write(&table_path, &rendered)
        .with_context(|| format!("writing {}", table_path.display()))?;
    println!("\n{rendered}");
    println!(
        "wrote {}\nwrote {}",
        runs_path.display(),
        table_path.display()
    );
    if let Some(data) = &args.doc_data {
        write_doc_table(table, data, file)?;
    }
    Ok(())
}

/// What a stream needs beyond the machine checks: the programs of its jobs, `mpirun` and LAMMPS for LAMMPS
/// jobs, `cosched` itself (manager, submit, agent).
fn stream_problems(
    experiment: &crate::stream::StreamExperiment,
    binaries: &Binaries,
) -> Vec<String> {
    let mut problems = Vec::new();
    if !binaries.cosched.is_file() {
        problems.push(format!(
            "{} (cosched, for the manager and the agent) is not there",
            binaries.cosched.display()
        ));
    }
    for job in &experiment.jobs {
        for problem in crate::preflight::program_problems(job.kind, binaries) {
            if !problems.contains(&problem) {
                problems.push(problem);
            }
        }
    }
    problems
}
