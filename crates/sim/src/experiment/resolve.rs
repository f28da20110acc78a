//! Experiment file → validated [`Experiment`] with its full list of planned runs, before anything runs.
//!
//! Every problem is reported with the file, the field path as written in the file
//! (`configurations[2].policy.exponent`) and what to do about it; all problems of a file are listed at once.
//!
//! ## Run seeds
//! Run `(configuration, competitors c, repetition r)` gets the seed `splitmix64(splitmix64(base) ^ (c << 32 | r))`.
//! The configuration is deliberately not part of it: every configuration sees the same random streams at the
//! same point (common random numbers), so differences between lines of a figure come from the policies, not
//! from the dice. The seed depends on nothing else (not the thread count, not the run order).
//!
//! ## Checked arithmetic (issue 33)
//! Every number read from the file is bounded before it is used: a duration becomes nanoseconds only through
//! [`duration_ns`] (`checked_mul` against its unit and the field's limit, at most [`MAX_DURATION_NS`]), a count
//! only after its range check, a product of counts (SOR cells × ns a cell, configurations × competitor counts
//! × repetitions) through `checked_mul`. A value out of range is a [`Problem`] naming the field, the value and
//! the limit; it never reaches a product, so nothing panics (debug builds) or wraps (release builds), and the
//! run's clock — a sum of a few such durations — stays far from `u64::MAX` ns (584 years).

use super::file::{
    ConfigSection, ExperimentFile, LocalSection, ReceiveName, StreamSection, WorkloadSection,
};
use crate::scenario::{
    simulated_kinds, simulates, ArrivingJob, LocalBenchmark, NetworkParams, ParallelProgram,
    PolicyConfig, Scenario, SequentialJob, SorParams, Workload,
};
use crate::smp::jobs;
use cosched_policy::spin::{ReceiveMode, DEFAULT_SPIN};
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// `--quick` divides the work of every run (round trips, iterations, sequential CPU) by this.
pub const QUICK_WORK_DIVISOR: u64 = 100;
/// `--quick` runs at most this many repetitions.
pub const QUICK_MAX_REPETITIONS: u32 = 2;
/// Default simulated-time safety net per run: 10^6 s (11.6 simulated days).
pub const DEFAULT_TIME_LIMIT_S: u64 = 1_000_000;
/// More competitors per node than this is a typo, not an experiment.
pub const MAX_COMPETITORS_PER_NODE: u32 = 1024;
/// The most nodes a cluster may have (the seeds' clusters had 2 to 16).
pub const MAX_NODES: u32 = 65_536;
/// The most repetitions of a point (the seeds' figures use 3 to 10).
pub const MAX_REPETITIONS: u32 = 10_000;
/// The most runs one experiment may plan (configurations × competitor counts × repetitions): each holds its
/// scenario in memory before anything runs.
pub const MAX_PLANNED_RUNS: u64 = 100_000;
/// The longest duration any one field may give, 10^9 s (about 32 years): the simulated clock and sums of a few
/// such durations then stay far from `u64::MAX` ns (about 584 years).
pub const MAX_DURATION_NS: Nanos = 1_000_000_000 * SECONDS;

/// Command-line overrides applied while resolving.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Replace the file's `repetitions`.
    pub repetitions: Option<u32>,
    /// Scale the work down by [`QUICK_WORK_DIVISOR`] and cap repetitions at [`QUICK_MAX_REPETITIONS`] (CI).
    pub quick: bool,
}

/// A fully resolved experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub title: String,
    pub description: String,
    pub reproduces: String,
    pub base_seed: u64,
    pub repetitions: u32,
    pub quick: bool,
    pub competitors: Vec<u32>,
    pub configs: Vec<Configuration>,
    pub runs: Vec<PlannedRun>,
    /// The `[stream]` its runs draw their arriving jobs from (each run's scenario holds its own draw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<JobStream>,
}

/// The most jobs one run's `[stream]` may hold: a listed stream at most this many, a generated one expecting at
/// most half of it.
pub const MAX_STREAM_JOBS: usize = 1_000;
/// The most stream jobs all planned runs together may hold (runs × jobs a run): each is built before anything
/// runs.
pub const MAX_PLANNED_STREAM_JOBS: u64 = 1_000_000;

/// A resolved `[stream]`: every job runs `program` on `nodes_per_job` nodes, job `k`'s rank `r` on node
/// `(k × nodes_per_job + r) mod nodes`, named `stream-<k>` (three digits at least), measured like the workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobStream {
    pub nodes_per_job: u32,
    pub program: ParallelProgram,
    pub arrivals: StreamArrivals,
}

/// When a stream's jobs arrive (already scaled under `--quick`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum StreamArrivals {
    /// At these times, in order.
    Listed { arrivals_ns: Vec<Nanos> },
    /// A Poisson process (seed 001 §5's E2 generator, [`jobs::exponential_gap`]): mean gap `mean_gap_ns`,
    /// drawn until `horizon_ns` from each run's seed, so every configuration of a (competitors, repetition)
    /// point sees the same stream. A draw is cut at `max_jobs`, three times the expected number plus 30 (at
    /// most [`MAX_STREAM_JOBS`]): many standard deviations above the mean, and a bound on the memory of a plan.
    Generated {
        mean_gap_ns: f64,
        horizon_ns: Nanos,
        max_jobs: usize,
    },
}

impl JobStream {
    /// The most jobs one run's draw may hold.
    pub fn max_jobs(&self) -> usize {
        match &self.arrivals {
            StreamArrivals::Listed { arrivals_ns } => arrivals_ns.len(),
            StreamArrivals::Generated { max_jobs, .. } => *max_jobs,
        }
    }

    /// The jobs of the run with seed `seed` on a cluster of `nodes` nodes.
    pub fn jobs(&self, nodes: u32, seed: u64) -> Vec<ArrivingJob> {
        let times = match &self.arrivals {
            StreamArrivals::Listed { arrivals_ns } => arrivals_ns.clone(),
            StreamArrivals::Generated {
                mean_gap_ns,
                horizon_ns,
                max_jobs,
            } => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5_7e4a);
                let mut times = Vec::new();
                let mut t = 0.0;
                while times.len() < *max_jobs {
                    t += jobs::exponential_gap(&mut rng, *mean_gap_ns);
                    if t > *horizon_ns as f64 {
                        break;
                    }
                    times.push(t.round() as Nanos);
                }
                times
            }
        };
        let per_job = u64::from(self.nodes_per_job);
        times
            .into_iter()
            .enumerate()
            .map(|(k, arrival_ns)| ArrivingJob {
                name: format!("{STREAM_PREFIX}{k:03}"),
                arrival_ns,
                nodes: (0..per_job)
                    .map(|r| ((k as u64 * per_job + r) % u64::from(nodes.max(1))) as u32)
                    .collect(),
                program: self.program,
            })
            .collect()
    }
}

/// Stream jobs are named `stream-000`, `stream-001`, ...; no `[[arrivals]]` name may start with it.
const STREAM_PREFIX: &str = "stream-";

/// One configuration (a line of a figure) with its scenario at zero competitors.
#[derive(Clone, Debug, Serialize)]
pub struct Configuration {
    /// The `name` of its `[[configurations]]` table: the line's label in tables, plots and `runs.json`.
    pub label: String,
    pub scenario: Scenario,
}

impl Configuration {
    /// Whether this configuration's receivers spin and then block (the lines of the seed's Figure 5).
    pub fn is_spin_block(&self) -> bool {
        matches!(self.scenario.receive, ReceiveMode::SpinBlock { .. })
    }
}

/// One run to do.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedRun {
    /// Index into [`Experiment::configs`].
    pub config: usize,
    pub competitors: u32,
    pub repetition: u32,
    pub seed: u64,
    pub scenario: Scenario,
}

/// An experiment file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("{}: cannot read the experiment file: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not valid TOML: {message}", file.display())]
    Syntax { file: PathBuf, message: String },
    #[error("{}", problems.iter().map(|p| format!("{}: {p}", file.display())).collect::<Vec<_>>().join("\n"))]
    Invalid {
        file: PathBuf,
        problems: Vec<Problem>,
    },
}

/// One bad field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The field as written in the file, e.g. `configurations[2].policy.exponent`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Reads, parses and resolves one experiment file.
pub fn load(file: &Path, overrides: &Overrides) -> Result<Experiment, ExperimentError> {
    let text = std::fs::read_to_string(file).map_err(|source| ExperimentError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    parse(file, &text, overrides)
}

/// Parses and resolves experiment text; `file` is only used in messages and the result.
pub fn parse(
    file: &Path,
    text: &str,
    overrides: &Overrides,
) -> Result<Experiment, ExperimentError> {
    let raw = parse_raw(file, text)?;
    resolve(file, raw, overrides)
}

fn parse_raw(file: &Path, text: &str) -> Result<ExperimentFile, ExperimentError> {
    let deserializer = toml::Deserializer::parse(text).map_err(|e| ExperimentError::Syntax {
        file: file.to_path_buf(),
        message: one_line(&e.to_string()),
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "(top level)".to_string()
        } else {
            path
        };
        let message = one_line(&e.into_inner().to_string());
        ExperimentError::Invalid {
            file: file.to_path_buf(),
            problems: vec![Problem { field, message }],
        }
    })
}

/// toml's messages carry a multi-line source excerpt; keep the location line and the message.
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let location = lines.iter().find(|l| l.starts_with("TOML parse error at"));
    let last = lines.last().copied().unwrap_or("");
    match location {
        Some(loc) if *loc != last => format!(
            "{last} ({})",
            loc.trim_start_matches("TOML parse error at ")
        ),
        _ => last.to_string(),
    }
}

/// `splitmix64(splitmix64(base) ^ (competitors << 32 | repetition))` — see the module doc.
pub fn run_seed(base: u64, competitors: u32, repetition: u32) -> u64 {
    splitmix64(splitmix64(base) ^ ((competitors as u64) << 32 | repetition as u64))
}

/// Steele, Lea and Flood's SplitMix64 finaliser: a bijection that scrambles every input bit.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Collects problems while resolving.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem {
            field: field.into(),
            message: message.into(),
        });
    }
    fn check(&mut self, ok: bool, field: impl Into<String>, message: impl Into<String>) {
        if !ok {
            self.add(field, message);
        }
    }
}

/// `value` (in the unit `unit_ns` nanoseconds, written `unit` in messages) as nanoseconds, if it is at most
/// `max_ns`; otherwise a problem naming `field`, the value and the limit in the field's own unit, and `None`.
/// The product is `checked_mul`: it is never formed when it would overflow.
fn duration_ns(
    value: u64,
    unit_ns: Nanos,
    unit: &str,
    max_ns: Nanos,
    field: &str,
    p: &mut Problems,
) -> Option<Nanos> {
    match value.checked_mul(unit_ns) {
        Some(ns) if ns <= max_ns => Some(ns),
        _ => {
            p.add(
                field,
                format!(
                    "{value} {unit} is more than the limit of {} {unit}",
                    max_ns / unit_ns
                ),
            );
            None
        }
    }
}

fn scaled(work: u64, quick: bool) -> u64 {
    if quick {
        (work / QUICK_WORK_DIVISOR).max(1)
    } else {
        work
    }
}

fn resolve(
    file: &Path,
    raw: ExperimentFile,
    overrides: &Overrides,
) -> Result<Experiment, ExperimentError> {
    let mut p = Problems::default();
    let quick = overrides.quick;

    p.check(
        !raw.name.is_empty() && raw.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "name",
        format!("'{}' must be non-empty and use only letters, digits, '-' and '_' (it names the results folder)", raw.name),
    );
    p.check(
        raw.repetitions >= 1,
        "repetitions",
        "0 repetitions; use at least 1 (the seed's figures use several)",
    );
    p.check(
        raw.repetitions <= MAX_REPETITIONS,
        "repetitions",
        format!(
            "{} is more than the limit of {MAX_REPETITIONS}",
            raw.repetitions
        ),
    );
    match overrides.repetitions {
        Some(0) => p.add("--repetitions", "0 repetitions; use at least 1"),
        Some(r) if r > MAX_REPETITIONS => p.add(
            "--repetitions",
            format!("{r} is more than the limit of {MAX_REPETITIONS}"),
        ),
        _ => {}
    }
    let mut repetitions = overrides.repetitions.unwrap_or(raw.repetitions);
    if quick {
        repetitions = repetitions.min(QUICK_MAX_REPETITIONS);
    }
    let time_limit_s = raw.time_limit_s.unwrap_or(DEFAULT_TIME_LIMIT_S);
    p.check(
        (1..=u64::MAX / SECONDS).contains(&time_limit_s),
        "time_limit_s",
        format!("{time_limit_s} is out of range 1..={}", u64::MAX / SECONDS),
    );

    let c = &raw.cluster;
    p.check(c.nodes >= 1, "cluster.nodes", "0 nodes; use at least 1");
    p.check(
        c.nodes <= MAX_NODES,
        "cluster.nodes",
        format!("{} is more than the limit of {MAX_NODES} nodes", c.nodes),
    );
    p.check(
        c.cpus_per_node >= 1,
        "cluster.cpus_per_node",
        "0 CPUs; use at least 1 (the seed's nodes had 1)",
    );
    p.check(
        c.cpus_per_node <= crate::os::MAX_CPUS_PER_NODE,
        "cluster.cpus_per_node",
        format!(
            "{} is more than the limit of {} CPUs a node (a CPU set is a 64-bit mask)",
            c.cpus_per_node,
            crate::os::MAX_CPUS_PER_NODE
        ),
    );
    // Below a second: the scenario's own bound (a context switch costs microseconds; the seed's ~750 µs).
    let context_switch_ns = duration_ns(
        c.context_switch_us,
        MICROS,
        "µs",
        SECONDS - MICROS,
        "cluster.context_switch_us",
        &mut p,
    );
    let n = &raw.network;
    p.check(
        n.bandwidth_mb_per_s.is_finite() && n.bandwidth_mb_per_s > 0.0,
        "network.bandwidth_mb_per_s",
        format!(
            "{} must be a positive number of 10^6 bytes per second (the seed's FM: 13)",
            n.bandwidth_mb_per_s
        ),
    );
    let network = NetworkParams {
        latency_ns: duration_ns(
            n.latency_us,
            MICROS,
            "µs",
            10 * SECONDS,
            "network.latency_us",
            &mut p,
        )
        .unwrap_or(0),
        bandwidth_bytes_per_s: (n.bandwidth_mb_per_s * 1e6).round() as u64,
    };

    let workload = resolve_workload(
        &raw.workload,
        c.nodes,
        "workload",
        "cluster.nodes",
        quick,
        &mut p,
    );
    let is_mixed = matches!(raw.workload, WorkloadSection::Mixed(_));
    let mut arrivals = Vec::new();
    for (i, a) in raw.arrivals.iter().enumerate() {
        let field = format!("arrivals[{i}]");
        if raw.stream.is_some() && a.name.starts_with(STREAM_PREFIX) {
            p.add(
                format!("{field}.name"),
                format!(
                    "'{}': names starting with '{STREAM_PREFIX}' are the [stream]'s jobs'; rename it",
                    a.name
                ),
            );
        }
        p.check(
            a.arrival_s.is_finite() && (0.0..=1e9).contains(&a.arrival_s),
            format!("{field}.arrival_s"),
            format!("{} must be a number of seconds from 0", a.arrival_s),
        );
        p.check(
            !a.nodes.is_empty(),
            format!("{field}.nodes"),
            "no node; list the node of each rank, e.g. [0, 1, 2, 3]",
        );
        p.check(
            a.nodes.len() <= MAX_NODES as usize,
            format!("{field}.nodes"),
            format!(
                "{} ranks is more than the limit of {MAX_NODES}",
                a.nodes.len()
            ),
        );
        let ranks = u32::try_from(a.nodes.len()).unwrap_or(u32::MAX);
        match resolve_workload(
            &a.workload,
            ranks,
            &format!("{field}.workload"),
            &format!("{field}.nodes"),
            quick,
            &mut p,
        ) {
            Some(Workload::Parallel(program)) => arrivals.push(crate::scenario::ArrivingJob {
                name: a.name.clone(),
                arrival_ns: (a.arrival_s.clamp(0.0, 1e9) * SECONDS as f64).round() as Nanos,
                nodes: a.nodes.clone(),
                program,
            }),
            Some(Workload::Mixed { .. }) => p.add(
                format!("{field}.workload"),
                "an arriving job is a parallel program (latency, barrier, is, mg, master-slave), not mixed",
            ),
            None => {}
        }
    }

    let stream = raw
        .stream
        .as_ref()
        .and_then(|s| resolve_stream(s, c.nodes, c.cpus_per_node, quick, &mut p));

    let sweep = &raw.sweep.competitors_per_node;
    p.check(
        !sweep.is_empty(),
        "sweep.competitors_per_node",
        "empty; list at least one count, e.g. [0, 1, 2, 4, 8]",
    );
    for (i, count) in sweep.iter().enumerate() {
        p.check(
            *count <= MAX_COMPETITORS_PER_NODE,
            format!("sweep.competitors_per_node[{i}]"),
            format!("{count} is out of range 0..={MAX_COMPETITORS_PER_NODE}"),
        );
        if sweep[..i].contains(count) {
            p.add(
                format!("sweep.competitors_per_node[{i}]"),
                format!("{count} is listed twice; list each count once"),
            );
        }
    }
    let mut competitors = sweep.clone();
    competitors.sort_unstable();
    competitors.dedup();

    p.check(
        !raw.configurations.is_empty(),
        "configurations",
        "no configurations; add at least one [[configurations]] table",
    );
    let mut configs = Vec::new();
    for (i, section) in raw.configurations.iter().enumerate() {
        if raw.configurations[..i]
            .iter()
            .any(|other| other.name == section.name)
        {
            p.add(
                format!("configurations[{i}].name"),
                format!(
                    "'{}' is used twice; names label lines and must be unique",
                    section.name
                ),
            );
        }
        let Some((coscheduling, receive)) = resolve_config(i, section, is_mixed, &mut p) else {
            continue;
        };
        let workload = match (&workload, section.batch) {
            (
                Some(Workload::Mixed {
                    sor, sequential, ..
                }),
                batch,
            ) => Some(Workload::Mixed {
                sor: *sor,
                sequential: sequential.clone(),
                batch,
            }),
            (w, _) => w.clone(),
        };
        let workload = match (workload, section.message_bytes) {
            (Some(w), Some(bytes)) => with_message_bytes(w, bytes, i, &mut p),
            (w, _) => w,
        };
        let (Some(workload), Some(context_switch_ns)) = (workload, context_switch_ns) else {
            continue;
        };
        let scenario = Scenario {
            nodes: c.nodes,
            cpus_per_node: c.cpus_per_node,
            os: section.os.clone().unwrap_or_else(|| raw.os.clone()),
            context_switch_ns,
            network,
            coscheduling,
            receive,
            workload,
            competitors_per_node: 0,
            time_limit_ns: time_limit_s.saturating_mul(SECONDS),
            arrivals: arrivals.clone(),
            cache: raw.cache,
            local: section
                .local
                .as_ref()
                .map(|l| resolve_local(l, &format!("configurations[{i}].local"), quick, &mut p)),
        };
        configs.push(Configuration {
            label: section.name.clone(),
            scenario,
        });
    }

    // Configurations × competitor counts × repetitions, each run a scenario held in memory.
    let planned = (raw.configurations.len() as u64)
        .checked_mul(competitors.len() as u64)
        .and_then(|n| n.checked_mul(u64::from(repetitions)));
    if let (Some(runs), Some(stream)) = (planned, &stream) {
        let jobs = runs.saturating_mul(stream.max_jobs() as u64);
        p.check(
            jobs <= MAX_PLANNED_STREAM_JOBS,
            "stream",
            format!(
                "{runs} runs × up to {} stream jobs each is more than the limit of {MAX_PLANNED_STREAM_JOBS} \
                 stream jobs in all (fewer repetitions, competitor counts or jobs)",
                stream.max_jobs()
            ),
        );
    }
    if planned.is_none_or(|n| n > MAX_PLANNED_RUNS) {
        p.add(
            "repetitions",
            format!(
                "{} configurations × {} competitor counts × {repetitions} repetitions is more than the limit of \
                 {MAX_PLANNED_RUNS} runs",
                raw.configurations.len(),
                competitors.len()
            ),
        );
    }

    // The engine's own checks too (a safety net behind the ones above), at the largest competitor count, so
    // that no run fails on its scenario once the runs have started.
    if p.0.is_empty() {
        for (i, config) in configs.iter().enumerate() {
            let mut scenario = config.scenario.clone();
            scenario.competitors_per_node = competitors.last().copied().unwrap_or(0);
            if let Some(stream) = &stream {
                scenario.arrivals.extend(stream.jobs(c.nodes, raw.seed));
            }
            if let Err(e) = scenario.validate() {
                p.add(
                    format!("configurations[{i}]"),
                    format!("the simulator refuses this scenario: {e}"),
                );
            }
        }
    }
    if !p.0.is_empty() {
        return Err(ExperimentError::Invalid {
            file: file.to_path_buf(),
            problems: p.0,
        });
    }

    let mut runs = Vec::new();
    for (index, config) in configs.iter().enumerate() {
        for &count in &competitors {
            for repetition in 0..repetitions {
                let mut scenario = config.scenario.clone();
                scenario.competitors_per_node = count;
                let seed = run_seed(raw.seed, count, repetition);
                if let Some(stream) = &stream {
                    scenario.arrivals.extend(stream.jobs(c.nodes, seed));
                }
                runs.push(PlannedRun {
                    config: index,
                    competitors: count,
                    repetition,
                    seed,
                    scenario,
                });
            }
        }
    }
    Ok(Experiment {
        file: file.to_path_buf(),
        title: raw.title.clone().unwrap_or_else(|| raw.name.clone()),
        name: raw.name,
        description: raw.description,
        reproduces: raw.reproduces,
        base_seed: raw.seed,
        repetitions,
        quick,
        competitors,
        configs,
        runs,
        stream,
    })
}

/// `[stream]` resolved, or `None` after recording its problems. `--quick` shortens the jobs' work and the
/// arrival times alike (÷ [`QUICK_WORK_DIVISOR`]), so a quick run keeps the number of jobs and their overlap.
fn resolve_stream(
    s: &StreamSection,
    nodes: u32,
    cpus_per_node: u32,
    quick: bool,
    p: &mut Problems,
) -> Option<JobStream> {
    let before = p.0.len();
    p.check(
        (1..=nodes).contains(&s.nodes_per_job),
        "stream.nodes_per_job",
        format!(
            "{} is outside 1..={nodes}: a job has one rank on each of nodes_per_job different nodes",
            s.nodes_per_job
        ),
    );
    let program = match resolve_workload(
        &s.workload,
        s.nodes_per_job,
        "stream.workload",
        "stream.nodes_per_job",
        quick,
        p,
    ) {
        Some(Workload::Parallel(program)) => {
            // The program's own check for a job of nodes_per_job ranks (one a node), as the world will run it.
            if let Err((param, problem)) = program.check(u64::from(s.nodes_per_job)) {
                let field = match param {
                    "ranks" => "stream.nodes_per_job".to_string(),
                    _ => format!("stream.workload.{}.{param}", program.name()),
                };
                p.add(field, problem);
            }
            Some(program)
        }
        Some(Workload::Mixed { .. }) => {
            p.add(
                "stream.workload",
                "a stream's job is a parallel program (latency, barrier, is, mg, sp, bt, master-slave), not mixed",
            );
            None
        }
        None => None,
    };
    let divisor = if quick {
        QUICK_WORK_DIVISOR as f64
    } else {
        1.0
    };
    let seconds = |field: &str, value: f64, max_s: f64, p: &mut Problems| -> Option<f64> {
        if value.is_finite() && (0.0..=max_s).contains(&value) {
            Some(value)
        } else {
            p.add(field, format!("{value} is outside 0..={max_s} seconds"));
            None
        }
    };
    let arrivals = match (&s.submit_s, &s.generator) {
        (Some(times), None) => {
            if times.is_empty() || times.len() > MAX_STREAM_JOBS {
                p.add(
                    "stream.submit_s",
                    format!(
                        "{} jobs; list 1..={MAX_STREAM_JOBS} submit times",
                        times.len()
                    ),
                );
            }
            let mut arrivals_ns = Vec::with_capacity(times.len().min(MAX_STREAM_JOBS));
            for (i, &t) in times.iter().enumerate().take(MAX_STREAM_JOBS) {
                let field = format!("stream.submit_s[{i}]");
                if let Some(t) = seconds(&field, t, jobs::MAX_SUBMIT_S as f64, p) {
                    if i > 0 && t < times[i - 1] {
                        p.add(
                            field,
                            format!("{t} s is before the previous job's {} s; list submit times in order", times[i - 1]),
                        );
                    }
                    arrivals_ns.push((t / divisor * SECONDS as f64).round() as Nanos);
                }
            }
            Some(StreamArrivals::Listed { arrivals_ns })
        }
        (None, Some(g)) => {
            let load_ok = g.load.is_finite() && g.load > 0.0 && g.load <= 1.0;
            p.check(
                load_ok,
                "stream.generator.load",
                format!(
                    "{}: give the offered load as a fraction in (0, 1] (seed 001 used about 0.2 and 0.6)",
                    g.load
                ),
            );
            let dedicated = seconds(
                "stream.generator.dedicated_s",
                g.dedicated_s,
                jobs::MAX_RUN_S as f64,
                p,
            )
            .filter(|&d| {
                let positive = d > 0.0;
                p.check(
                    positive,
                    "stream.generator.dedicated_s",
                    "0 s: give the job's run time alone (positive)",
                );
                positive
            });
            let horizon = seconds(
                "stream.generator.horizon_s",
                g.horizon_s,
                jobs::MAX_SUBMIT_S as f64,
                p,
            );
            match (load_ok, dedicated, horizon) {
                (true, Some(dedicated_s), Some(horizon_s)) => {
                    let cpus = f64::from(nodes) * f64::from(cpus_per_node);
                    let mean_gap_s = f64::from(s.nodes_per_job) * dedicated_s / (g.load * cpus);
                    let expected = horizon_s / mean_gap_s;
                    if expected.is_nan() || expected > (MAX_STREAM_JOBS / 2) as f64 {
                        p.add(
                            "stream.generator.horizon_s",
                            format!(
                                "{horizon_s} s at load {} holds about {expected:.0} jobs of {} nodes × {dedicated_s} s                                  on {nodes} × {cpus_per_node} CPUs, more than the limit of {}",
                                g.load,
                                s.nodes_per_job,
                                MAX_STREAM_JOBS / 2
                            ),
                        );
                    }
                    Some(StreamArrivals::Generated {
                        mean_gap_ns: mean_gap_s / divisor * SECONDS as f64,
                        horizon_ns: (horizon_s / divisor * SECONDS as f64).round() as Nanos,
                        max_jobs: ((3.0 * expected).ceil() as usize + 30).min(MAX_STREAM_JOBS),
                    })
                }
                _ => None,
            }
        }
        _ => {
            p.add(
                "stream",
                "give exactly one of submit_s = [...] (listed arrivals) and generator = { load, dedicated_s, horizon_s }",
            );
            None
        }
    };
    if p.0.len() > before {
        return None;
    }
    Some(JobStream {
        nodes_per_job: s.nodes_per_job,
        program: program?,
        arrivals: arrivals?,
    })
}

/// `ms` as nanoseconds, or a problem named `field` (at most an hour).
fn millis_field(ms: f64, field: &str, p: &mut Problems) -> Nanos {
    let ok = ms.is_finite() && (0.0..=3_600_000.0).contains(&ms);
    p.check(
        ok,
        field,
        format!("{ms} ms is out of range; give milliseconds in 0..=3600000"),
    );
    if ok {
        (ms * MILLIS as f64).round() as Nanos
    } else {
        0
    }
}

/// The program's own check, for a job of one rank per node (master–slave: a master and two slaves a node).
fn check_program(program: &ParallelProgram, nodes: u32, section: &str, p: &mut Problems) {
    if let Err((param, problem)) = program.check(program.own_ranks(nodes) as u64) {
        p.add(format!("{section}.{param}"), problem);
    }
}

/// `section`, a job on `nodes` nodes (`nodes_field` names where that count comes from); problems name its fields
/// under `at` (`workload`, `arrivals[1].workload`, `stream.workload`).
fn resolve_workload(
    section: &WorkloadSection,
    nodes: u32,
    at: &str,
    nodes_field: &str,
    quick: bool,
    p: &mut Problems,
) -> Option<Workload> {
    match section {
        WorkloadSection::Latency(l) => {
            p.check(
                nodes == 2,
                nodes_field,
                format!(
                    "{nodes} nodes; the latency workload is a ping-pong between exactly 2 nodes"
                ),
            );
            p.check(
                l.round_trips >= 1,
                format!("{at}.latency.round_trips"),
                "0 round trips; use at least 1 (the seed: 1000000)",
            );
            p.check(
                l.message_bytes >= 1,
                format!("{at}.latency.message_bytes"),
                "0 bytes; use at least 1 (the seed: 128)",
            );
            Some(Workload::Parallel(ParallelProgram::Latency {
                round_trips: scaled(l.round_trips, quick),
                message_bytes: l.message_bytes,
            }))
        }
        WorkloadSection::Barrier(b) => {
            p.check(
                nodes >= 2,
                nodes_field,
                format!("{nodes} node; a barrier needs at least 2 nodes (the seed: 7)"),
            );
            p.check(
                b.iterations >= 1,
                format!("{at}.barrier.iterations"),
                "0 iterations; use at least 1 (the seed: 100000)",
            );
            p.check(
                b.message_bytes >= 1,
                format!("{at}.barrier.message_bytes"),
                "0 bytes; use at least 1",
            );
            // At most a minute per iteration (the seed: 78 µs).
            let compute_ns = duration_ns(
                b.compute_us,
                MICROS,
                "µs",
                60 * SECONDS,
                &format!("{at}.barrier.compute_us"),
                p,
            )?;
            Some(Workload::Parallel(ParallelProgram::Barrier {
                iterations: scaled(b.iterations, quick),
                compute_ns,
                message_bytes: b.message_bytes,
            }))
        }
        WorkloadSection::Is(w) => {
            let compute_ns = millis_field(w.compute_ms, &format!("{at}.is.compute_ms"), p);
            let program = ParallelProgram::Is {
                iterations: scaled(w.iterations, quick),
                compute_ns,
                count_bytes: w.count_bytes,
                key_bytes: w.key_bytes,
            };
            check_program(&program, nodes, &format!("{at}.is"), p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Mg(w) => {
            let compute_ns = millis_field(w.compute_ms, &format!("{at}.mg.compute_ms"), p);
            let program = ParallelProgram::Mg {
                iterations: scaled(w.iterations, quick),
                levels: w.levels,
                compute_ns,
                halo_bytes: w.halo_bytes,
            };
            check_program(&program, nodes, &format!("{at}.mg"), p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Sp(w) | WorkloadSection::Bt(w) => {
            let is_sp = matches!(section, WorkloadSection::Sp(_));
            let name = if is_sp { "sp" } else { "bt" };
            let compute_ns = millis_field(w.compute_ms, &format!("{at}.{name}.compute_ms"), p);
            let (iterations, face_bytes) = (scaled(w.iterations, quick), w.face_bytes);
            let program = if is_sp {
                ParallelProgram::Sp {
                    iterations,
                    compute_ns,
                    face_bytes,
                }
            } else {
                ParallelProgram::Bt {
                    iterations,
                    compute_ns,
                    face_bytes,
                }
            };
            check_program(&program, nodes, &format!("{at}.{name}"), p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::MasterSlave(w) => {
            let compute_ns = duration_ns(
                w.compute_us,
                MICROS,
                "µs",
                HOUR,
                &format!("{at}.master-slave.compute_us"),
                p,
            )?;
            let program = ParallelProgram::MasterSlave {
                iterations: scaled(w.iterations, quick),
                compute_ns,
                message_bytes: w.message_bytes,
            };
            check_program(&program, nodes, &format!("{at}.master-slave"), p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Mixed(m) => {
            p.check(m.sor.grid >= nodes, format!("{at}.mixed.sor.grid"), format!("a {0}×{0} grid cannot give each of {nodes} nodes a row; use a grid of at least {nodes}", m.sor.grid));
            p.check(
                m.sor.iterations >= 1,
                format!("{at}.mixed.sor.iterations"),
                "0 iterations; use at least 1",
            );
            p.check(
                m.sor.cell_compute_ns >= 1,
                format!("{at}.mixed.sor.cell_compute_ns"),
                "0 ns per cell; use at least 1",
            );
            // The widest rank computes ceil(grid / nodes) rows × grid cells × ns a cell each iteration: at most
            // an hour, the product checked.
            let widest_rows = u64::from(m.sor.grid.div_ceil(nodes.max(1)));
            let per_iteration = widest_rows
                .checked_mul(u64::from(m.sor.grid))
                .and_then(|cells| cells.checked_mul(m.sor.cell_compute_ns));
            if per_iteration.is_none_or(|ns| ns > HOUR) {
                let grid = m.sor.grid;
                p.add(
                    format!("{at}.mixed.sor.cell_compute_ns"),
                    format!(
                        "{} ns a cell × {widest_rows} rows × {grid} cells a row (a {grid}×{grid} grid over \
                         {nodes} nodes) is more than the limit of {HOUR} ns (an hour) an iteration",
                        m.sor.cell_compute_ns
                    ),
                );
            }
            let mut sequential = Vec::new();
            for (i, s) in m.sequential.iter().enumerate() {
                let field = |f: &str| format!("{at}.mixed.sequential[{i}].{f}");
                p.check(
                    !s.name.is_empty(),
                    field("name"),
                    "empty; give the job a name (it labels bars)",
                );
                if m.sequential[..i].iter().any(|o| o.name == s.name) {
                    p.add(
                        field("name"),
                        format!("'{}' is used twice; job names must be unique", s.name),
                    );
                }
                p.check(
                    s.node < nodes,
                    field("node"),
                    format!(
                        "node {} does not exist; nodes are numbered 0..{nodes}",
                        s.node
                    ),
                );
                p.check(
                    s.total_cpu_ms >= 1,
                    field("total_cpu_ms"),
                    "0 ms; a job needs some CPU work",
                );
                let total_cpu_ns = duration_ns(
                    s.total_cpu_ms,
                    MILLIS,
                    "ms",
                    MAX_DURATION_NS,
                    &field("total_cpu_ms"),
                    p,
                );
                for (name, value) in [
                    ("mean_burst_ms", s.mean_burst_ms),
                    ("mean_io_ms", s.mean_io_ms),
                ] {
                    p.check(
                        (0.0..=3.6e6).contains(&value),
                        field(name),
                        format!("{value} must be a number of milliseconds in 0..=3600000"),
                    );
                }
                p.check(
                    s.mean_burst_ms > 0.0,
                    field("mean_burst_ms"),
                    "0 ms; CPU bursts must have a positive mean",
                );
                let Some(total_cpu_ns) = total_cpu_ns else {
                    continue;
                };
                sequential.push(SequentialJob {
                    name: s.name.clone(),
                    node: s.node,
                    total_cpu_ns: scaled(total_cpu_ns, quick),
                    mean_burst_ns: ms_to_ns(s.mean_burst_ms),
                    mean_io_ns: ms_to_ns(s.mean_io_ms),
                });
            }
            Some(Workload::Mixed {
                sor: SorParams {
                    grid: m.sor.grid,
                    iterations: scaled(m.sor.iterations, quick),
                    cell_compute_ns: m.sor.cell_compute_ns,
                },
                sequential,
                batch: false,
            })
        }
    }
}

/// Configuration `i`'s `message_bytes` applied to the workload, or `None` after recording why it cannot be.
fn with_message_bytes(w: Workload, bytes: u32, i: usize, p: &mut Problems) -> Option<Workload> {
    let field = format!("configurations[{i}].message_bytes");
    if bytes == 0 {
        p.add(field, "0 bytes; a message has at least 1");
        return None;
    }
    let Workload::Parallel(program) = w else {
        p.add(
            field,
            "the mixed workload has no one message size; set the sizes in its [workload] section",
        );
        return None;
    };
    match program.with_message_bytes(bytes) {
        Some(program) => Some(Workload::Parallel(program)),
        None => {
            p.add(
                field,
                format!(
                    "the {} workload has no one message size (only latency, barrier and master-slave do); set \
                     its sizes in its [workload] section",
                    program.name()
                ),
            );
            None
        }
    }
}

/// A configuration's `local` table as the scenario's [`LocalBenchmark`] (its CPU scaled down under `--quick`);
/// what is wrong goes to `p` under `field` (the scenario's own check covers the rest).
fn resolve_local(l: &LocalSection, field: &str, quick: bool, p: &mut Problems) -> LocalBenchmark {
    let mb = |v: f64, name: &str, p: &mut Problems| {
        p.check(
            v.is_finite() && (0.0..=4096.0).contains(&v),
            format!("{field}.{name}"),
            format!("{v} is outside 0..=4096 MB (the seed: 1 to 10)"),
        );
        (v.clamp(0.0, 4096.0) * 1e6).round() as u64
    };
    LocalBenchmark {
        nodes: l.nodes,
        cpu_percent: l.cpu_percent,
        cpu_ns: scaled(
            millis_field(l.cpu_s * 1000.0, &format!("{field}.cpu_s"), p),
            quick,
        ),
        mean_syscall_interval_ns: millis_field(
            l.mean_syscall_interval_ms,
            &format!("{field}.mean_syscall_interval_ms"),
            p,
        ),
        syscall_min_bytes: mb(l.syscall_min_mb, "syscall_min_mb", p),
        syscall_max_bytes: mb(l.syscall_max_mb, "syscall_max_mb", p),
    }
}

/// An hour: the limit of a per-iteration compute time.
const HOUR: Nanos = 3_600 * SECONDS;

fn ms_to_ns(ms: f64) -> Nanos {
    (ms.clamp(0.0, 3.6e6) * MILLIS as f64).round() as Nanos
}

/// The coscheduling and receive mode of `configurations[i]`, or `None` after recording its problems.
fn resolve_config(
    i: usize,
    c: &ConfigSection,
    is_mixed: bool,
    p: &mut Problems,
) -> Option<(PolicyConfig, ReceiveMode)> {
    let field = |f: &str| format!("configurations[{i}].{f}");
    let before = p.0.len();
    p.check(
        !c.name.trim().is_empty(),
        field("name"),
        "empty; give the configuration a name (it labels a line)",
    );
    p.check(
        !c.batch || is_mixed,
        field("batch"),
        "batch = true only applies to the mixed workload (jobs in sequence); remove it",
    );

    let receive = match c.receive {
        ReceiveName::SpinOnly => ReceiveMode::SpinOnly,
        ReceiveName::Block => ReceiveMode::Block,
        ReceiveName::SpinBlock => {
            let spin_us = c.spin_us.unwrap_or(DEFAULT_SPIN / MICROS);
            p.check(
                spin_us >= 1,
                field("spin_us"),
                "0 µs; spin at least 1 µs before blocking (the seed: 1600), or use receive = \"block\"",
            );
            let spin_ns =
                duration_ns(spin_us, MICROS, "µs", 10 * SECONDS, &field("spin_us"), p).unwrap_or(0);
            ReceiveMode::SpinBlock { spin_ns }
        }
    };
    if c.spin_us.is_some() && c.receive != ReceiveName::SpinBlock {
        p.add(
            field("spin_us"),
            format!(
                "only applies to receive = \"spin-block\", not \"{}\"; remove it",
                receive.label()
            ),
        );
    }

    if let Err(e) = c.policy.validate() {
        p.add(field(&format!("policy.{}", e.field)), e.message);
    }
    p.check(
        simulates(&c.policy),
        field("policy.kind"),
        format!(
            "the simulator does not model the '{}' policy (yet); use one of: {} (see `cosched policies`)",
            c.policy.kind(),
            simulated_kinds().join(", ")
        ),
    );
    if p.0.len() > before {
        return None;
    }
    Some((c.policy, receive))
}
