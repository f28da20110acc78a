//! `cosched sim` and `cosched sim-bench`.
//!
//! `cosched sim experiments/sim` reproduces seed `000_e8004e1596fde6a5.txt` §4 (Figures 3–9): every experiment
//! file is read and validated first (nothing runs if any file is bad), then each experiment prints its resolved
//! configuration and seed, runs on all cores with a progress bar, prints its table and writes
//! `results/<name>/` (see [`crate::experiment::output`]).

use crate::experiment::{self, output, runner, Experiment, Overrides};
use crate::scenario::{ParallelProgram, Workload};
use crate::smp::{self, experiment::SmpExperiment};
use crate::speed::{TARGET_EVENTS_PER_S, TARGET_LATENCY_WALL_S};
use anyhow::Context;
use clap::Args;
use cosched_report::table::significant;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// An experiment file (TOML), or a directory whose *.toml files are all run in name order
    /// (e.g. experiments/sim for the whole seed-000 suite).
    pub path: PathBuf,
    /// Results go to DIR/<experiment name>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
    /// Repetitions per point, replacing each file's `repetitions`.
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u32>,
    /// Scale every run's work down 100× and run at most 2 repetitions (for CI and a first look).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads; the results do not depend on it. Default: all cores.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// Reads and validates every file first, then runs them one after another.
pub fn run(args: SimArgs) -> anyhow::Result<()> {
    let overrides = Overrides {
        repetitions: args.repetitions,
        quick: args.quick,
    };
    let threads = match args.threads {
        Some(0) => {
            anyhow::bail!("--threads 0: use at least 1 thread (or leave it out for all cores)")
        }
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let (experiments, smp_experiments) = load_all(&args.path, &overrides)?;
    let suite_started = Instant::now();
    let mut total_runs = 0;
    for e in &smp_experiments {
        total_runs += run_smp(e, threads, &args.out)?;
    }
    for e in &experiments {
        print!("{}", output::header(e, threads));
        let started = Instant::now();
        let progress = progress_bar(e);
        let outcomes = runner::run_all(e, threads, &progress)?;
        progress.finish_and_clear();
        let wall = started.elapsed().as_secs_f64();
        let written = output::write_all(e, &outcomes, &args.out)?;
        println!("{}", written.table);
        let events: u64 = outcomes.iter().map(|o| o.events).sum();
        let busy: f64 = outcomes.iter().map(|o| o.wall.as_secs_f64()).sum();
        println!(
            "   {} runs, {} events in {:.1} s wall ({} M events/s per busy thread); wrote {} files to {}\n",
            outcomes.len(),
            events,
            wall,
            significant(events as f64 / busy.max(1e-9) / 1e6),
            written.files.len(),
            written.dir.display()
        );
        total_runs += outcomes.len();
    }
    if experiments.len() + smp_experiments.len() > 1 {
        println!(
            "suite: {} experiments, {total_runs} runs in {:.1} s wall on {threads} thread(s)",
            experiments.len() + smp_experiments.len(),
            suite_started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Runs one seed-001 shared-memory experiment (`kind = "smp"`), prints its table and writes its files; returns
/// the number of runs.
fn run_smp(e: &SmpExperiment, threads: usize, out: &std::path::Path) -> anyhow::Result<usize> {
    println!(
        "== {} (shared-memory machine, {} CPUs): {}\n   reproduces {}; seed {}, {} repetition(s), scale {}",
        e.name,
        e.machine.cpus,
        e.description,
        e.reproduces,
        e.seed,
        e.repetitions,
        e.scale
    );
    let runs = e.runs().len();
    let started = Instant::now();
    let progress = bar(runs as u64, &e.name);
    let records = e.run_all(threads, &progress)?;
    progress.finish_and_clear();
    let written = smp::experiment::write_all(e, &records, out)?;
    println!("{}", written.table);
    println!(
        "   {runs} runs in {:.1} s wall; wrote {} files to {}\n",
        started.elapsed().as_secs_f64(),
        written.files.len(),
        written.dir.display()
    );
    Ok(runs)
}

/// Resolves every file under `path` (cluster experiments, and seed 001's `kind = "smp"` ones); all bad files
/// are reported together.
fn load_all(
    path: &std::path::Path,
    overrides: &Overrides,
) -> anyhow::Result<(Vec<Experiment>, Vec<SmpExperiment>)> {
    let mut experiments = Vec::new();
    let mut smp_experiments = Vec::new();
    let mut errors = Vec::new();
    for file in experiment::discover(path)? {
        if smp::experiment::is_smp_file(&file) {
            match smp::experiment::load(&file, overrides.quick, overrides.repetitions) {
                Ok(e) => smp_experiments.push(e),
                Err(err) => errors.push(format!("{err:#}")),
            }
            continue;
        }
        match experiment::load(&file, overrides) {
            Ok(e) => experiments.push(e),
            Err(err) => errors.push(err.to_string()),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!(
            "{}\n(nothing was run; fix the experiment files above)",
            errors.join("\n")
        );
    }
    let mut names: Vec<&str> = experiments
        .iter()
        .map(|e| e.name.as_str())
        .chain(smp_experiments.iter().map(|e| e.name.as_str()))
        .collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!(
            "two experiment files are both named '{}'; their results would overwrite each other",
            w[0]
        );
    }
    Ok((experiments, smp_experiments))
}

fn progress_bar(e: &Experiment) -> ProgressBar {
    bar(e.runs.len() as u64, &e.name)
}

/// A progress bar of `runs` runs on stderr (hidden when stderr is not a terminal).
fn bar(runs: u64, name: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "   {prefix} [{bar:40}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}",
        )
        .expect("a fixed, valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar
}

/// The experiment `cosched sim-bench` measures unless told otherwise: the seed's Figure 3.
const FIG3_LATENCY: &str = include_str!("../../../experiments/sim/fig03-latency.toml");

#[derive(Args, Debug)]
pub struct SimBenchArgs {
    /// Competitors per node in the measured run.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub competitors: u32,
    /// Round trips in the measured run.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub round_trips: u64,
    /// A latency experiment file whose configurations are measured (default: the built-in copy of
    /// experiments/sim/fig03-latency.toml).
    #[arg(long, value_name = "FILE")]
    pub experiment: Option<PathBuf>,
    /// Also write the table as docs data, DIR/sim-bench.json, stamped with this command, commit and machine
    /// (`--doc-data docs/data`, then `cosched docs tables`).
    #[arg(long, value_name = "DIR")]
    pub doc_data: Option<PathBuf>,
}

/// Runs each configuration's Latency run once, on one thread, and prints speed against the SPEC targets.
pub fn bench(args: SimBenchArgs) -> anyhow::Result<()> {
    let e = match &args.experiment {
        Some(file) => experiment::load(file, &Overrides::default())?,
        None => experiment::parse(
            std::path::Path::new("experiments/sim/fig03-latency.toml (built in)"),
            FIG3_LATENCY,
            &Overrides::default(),
        )
        .context("the built-in Figure 3 experiment")?,
    };
    println!(
        "sim-bench: {} — {} round trips, {} competitors per node, one run per configuration on one thread, seed {}",
        e.name,
        args.round_trips,
        args.competitors,
        experiment::run_seed(e.base_seed, args.competitors, 0)
    );
    let load_before = load_average();
    let mut lines = Vec::new();
    let mut all_events = 0u64;
    let mut all_wall = 0.0;
    for config in &e.configs {
        let mut scenario = config.scenario.clone();
        scenario.competitors_per_node = args.competitors;
        match &mut scenario.workload {
            Workload::Parallel(ParallelProgram::Latency { round_trips, .. }) => {
                *round_trips = args.round_trips
            }
            other => anyhow::bail!(
                "{}: sim-bench measures the latency workload; this file's workload is {other:?}",
                e.file.display()
            ),
        }
        let seed = experiment::run_seed(e.base_seed, args.competitors, 0);
        let started = Instant::now();
        let out = crate::simulate(&scenario, seed)
            .map_err(|err| anyhow::anyhow!("{}: '{}': {err}", e.file.display(), config.label))?;
        let wall = started.elapsed().as_secs_f64();
        all_events += out.events;
        all_wall += wall;
        lines.push((
            config.label.clone(),
            out.measurement.work_done,
            out.events,
            out.sim_time_ns,
            wall,
        ));
    }
    let rows = bench_rows(&lines, all_events, all_wall);
    let width = rows
        .iter()
        .map(|r| r[0].chars().count())
        .max()
        .unwrap_or(0)
        .max(13);
    let print = |r: &[String]| {
        println!(
            "{:<width$}  {:>11}  {:>12}  {:>12}  {:>9}  {:>12}  {:>22}  {:>18}",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
        )
    };
    print(&BENCH_HEADER.map(String::from));
    for row in &rows {
        print(row);
    }
    println!("{BENCH_NOTE}");
    if let Some(dir) = &args.doc_data {
        let mut command = "cosched sim-bench".to_string();
        if args.competitors != 8 {
            command += &format!(" --competitors {}", args.competitors);
        }
        if args.round_trips != 1_000_000 {
            command += &format!(" --round-trips {}", args.round_trips);
        }
        if let Some(file) = &args.experiment {
            command += &format!(" --experiment {}", file.display());
        }
        command += &format!(" --doc-data {}", cosched_report::docdata::DATA_DIR);
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        let load = match (load_before, load_average()) {
            (Some(before), Some(after)) => format!(
                " The machine's one-minute load average was {before} before and {after} after, on {cpus} CPUs \
                 (a wall time measured on a busy machine is longer than the simulator needs)."
            ),
            _ => String::new(),
        };
        let mut table = cosched_report::docdata::DocTable::new("sim-bench", BENCH_HEADER)
            .with_notes(&format!(
                "{}: {} round trips, {} competitors per node, one run per configuration on one thread. \
                 {BENCH_NOTE}{load}",
                e.name, args.round_trips, args.competitors
            ));
        for row in rows {
            table.push(row.to_vec());
        }
        let stamp = cosched_report::docdata::Stamp::here(&command);
        let path = table.stamped(&stamp).write(dir)?;
        println!(
            "wrote {} (`cosched docs tables` puts it in every page that shows it)",
            path.display()
        );
    }
    Ok(())
}

/// The one-minute load average (`/proc/loadavg`'s first field), where the system has one: a speed measured on
/// a busy machine says so.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// The columns of `cosched sim-bench`'s table, printed and in the docs.
const BENCH_HEADER: [&str; 8] = [
    "configuration",
    "round trips",
    "events",
    "simulated s",
    "wall s",
    "M events/s",
    "events/s vs >= 20 M",
    "wall vs <= 2 s",
];

const BENCH_NOTE: &str =
    "(ratios are measured / target; events/s needs >= 1.00×, wall needs <= 1.00×)";

/// One measured run: its configuration, round trips done, events, simulated ns, wall s.
type BenchLine = (String, u64, u64, u64, f64);

/// The cells of `cosched sim-bench`'s table: one row per configuration, then `all` (its events over its wall
/// time). The printed table and the docs' `sim-bench` table are both these cells.
fn bench_rows(lines: &[BenchLine], all_events: u64, all_wall: f64) -> Vec<[String; 8]> {
    let mut rows: Vec<[String; 8]> = lines
        .iter()
        .map(|(label, done, events, sim_ns, wall)| {
            let rate = *events as f64 / wall.max(1e-9);
            [
                label.clone(),
                done.to_string(),
                events.to_string(),
                significant(*sim_ns as f64 / 1e9),
                format!("{wall:.3}"),
                significant(rate / 1e6),
                verdict(rate / TARGET_EVENTS_PER_S, rate >= TARGET_EVENTS_PER_S),
                verdict(wall / TARGET_LATENCY_WALL_S, *wall <= TARGET_LATENCY_WALL_S),
            ]
        })
        .collect();
    let rate = all_events as f64 / all_wall.max(1e-9);
    rows.push([
        "all".to_string(),
        String::new(),
        all_events.to_string(),
        String::new(),
        format!("{all_wall:.3}"),
        significant(rate / 1e6),
        verdict(rate / TARGET_EVENTS_PER_S, rate >= TARGET_EVENTS_PER_S),
        String::new(),
    ]);
    rows
}

fn verdict(ratio: f64, met: bool) -> String {
    format!("{ratio:.2}× {}", if met { "met" } else { "MISSED" })
}
