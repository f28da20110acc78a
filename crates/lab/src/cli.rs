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
    pub file: PathBuf,
    /// Directory holding the benchmark binaries (cosched-pingpong, cosched-calcula, ...); default: the
    /// directory of this `cosched` binary.
    #[arg(long)]
    pub bench_dir: Option<PathBuf>,
    /// Directory holding the MPI ping-pong binary `mpi_pingpong`; default: the bench directory.
    #[arg(long)]
    pub mpi_dir: Option<PathBuf>,
    /// Where results go: <results-dir>/<experiment name>/.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Only check the file and the machine, print the resolved configuration, run nothing.
    #[arg(long)]
    pub check: bool,
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

pub fn run(args: LabArgs) -> anyhow::Result<()> {
    let experiment = LabExperiment::load(&args.file)?;
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
        for leftover in crate::cluster::remove_stale()? {
            println!("removed leftover of a killed lab: {leftover}");
        }
    }
    crate::preflight::check(&experiment, &binaries)?;
    if args.check {
        println!("check passed: the machine can run this experiment");
        return Ok(());
    }
    let bar = ProgressBar::new(experiment.total_runs() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ~{eta} left  {msg}",
        )
        .context("progress bar template")?,
    );
    let runs = crate::runner::run_experiment(&experiment, &binaries, &mut Bar { bar })?;
    let dir = args.results_dir.join(&experiment.name);
    let written = crate::output::write_results(&experiment, &runs, &dir)?;
    println!("\n{}", written.summary);
    println!("{}", written.comparison);
    for file in &written.files {
        println!("wrote {}", file.display());
    }
    Ok(())
}
