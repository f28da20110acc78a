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

use super::file::{ConfigSection, ExperimentFile, LocalSection, ReceiveName, WorkloadSection};
use crate::scenario::{
    simulated_kinds, simulates, LocalBenchmark, NetworkParams, ParallelProgram, PolicyConfig,
    Scenario, SequentialJob, SorParams, Workload,
};
use cosched_policy::spin::{ReceiveMode, DEFAULT_SPIN};
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
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
}

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
    if overrides.repetitions == Some(0) {
        p.add("--repetitions", "0 repetitions; use at least 1");
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
        c.cpus_per_node >= 1,
        "cluster.cpus_per_node",
        "0 CPUs; use at least 1 (the seed's nodes had 1)",
    );
    p.check(
        c.context_switch_us <= 1_000_000,
        "cluster.context_switch_us",
        format!(
            "{} µs is more than a second; give the context-switch cost in microseconds",
            c.context_switch_us
        ),
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
    p.check(
        n.latency_us <= 10_000_000,
        "network.latency_us",
        format!(
            "{} µs is more than 10 s; give the one-way latency in microseconds",
            n.latency_us
        ),
    );
    let network = NetworkParams {
        latency_ns: n.latency_us.saturating_mul(MICROS),
        bandwidth_bytes_per_s: (n.bandwidth_mb_per_s * 1e6).round() as u64,
    };

    let workload = resolve_workload(&raw.workload, c.nodes, quick, &mut p);
    let is_mixed = matches!(raw.workload, WorkloadSection::Mixed(_));
    let mut arrivals = Vec::new();
    for (i, a) in raw.arrivals.iter().enumerate() {
        let field = format!("arrivals[{i}]");
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
        match resolve_workload(&a.workload, a.nodes.len() as u32, quick, &mut p) {
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
        let Some(workload) = workload else { continue };
        let scenario = Scenario {
            nodes: c.nodes,
            cpus_per_node: c.cpus_per_node,
            os: section.os.clone().unwrap_or_else(|| raw.os.clone()),
            context_switch_ns: c.context_switch_us * MICROS,
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

    // The engine's own checks too (a safety net behind the ones above), at the largest competitor count, so
    // that no run fails on its scenario once the runs have started.
    if p.0.is_empty() {
        for (i, config) in configs.iter().enumerate() {
            let mut scenario = config.scenario.clone();
            scenario.competitors_per_node = competitors.last().copied().unwrap_or(0);
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
                runs.push(PlannedRun {
                    config: index,
                    competitors: count,
                    repetition,
                    seed: run_seed(raw.seed, count, repetition),
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

fn resolve_workload(
    section: &WorkloadSection,
    nodes: u32,
    quick: bool,
    p: &mut Problems,
) -> Option<Workload> {
    match section {
        WorkloadSection::Latency(l) => {
            p.check(
                nodes == 2,
                "cluster.nodes",
                format!(
                    "{nodes} nodes; the latency workload is a ping-pong between exactly 2 nodes"
                ),
            );
            p.check(
                l.round_trips >= 1,
                "workload.latency.round_trips",
                "0 round trips; use at least 1 (the seed: 1000000)",
            );
            p.check(
                l.message_bytes >= 1,
                "workload.latency.message_bytes",
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
                "cluster.nodes",
                format!("{nodes} node; a barrier needs at least 2 nodes (the seed: 7)"),
            );
            p.check(
                b.iterations >= 1,
                "workload.barrier.iterations",
                "0 iterations; use at least 1 (the seed: 100000)",
            );
            p.check(
                b.message_bytes >= 1,
                "workload.barrier.message_bytes",
                "0 bytes; use at least 1",
            );
            p.check(
                b.compute_us <= 60_000_000,
                "workload.barrier.compute_us",
                format!(
                    "{} µs is more than a minute per iteration; give microseconds (the seed: 78)",
                    b.compute_us
                ),
            );
            Some(Workload::Parallel(ParallelProgram::Barrier {
                iterations: scaled(b.iterations, quick),
                compute_ns: b.compute_us * MICROS,
                message_bytes: b.message_bytes,
            }))
        }
        WorkloadSection::Is(w) => {
            let compute_ns = millis_field(w.compute_ms, "workload.is.compute_ms", p);
            let program = ParallelProgram::Is {
                iterations: scaled(w.iterations, quick),
                compute_ns,
                count_bytes: w.count_bytes,
                key_bytes: w.key_bytes,
            };
            check_program(&program, nodes, "workload.is", p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Mg(w) => {
            let compute_ns = millis_field(w.compute_ms, "workload.mg.compute_ms", p);
            let program = ParallelProgram::Mg {
                iterations: scaled(w.iterations, quick),
                levels: w.levels,
                compute_ns,
                halo_bytes: w.halo_bytes,
            };
            check_program(&program, nodes, "workload.mg", p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Sp(w) | WorkloadSection::Bt(w) => {
            let is_sp = matches!(section, WorkloadSection::Sp(_));
            let name = if is_sp { "sp" } else { "bt" };
            let compute_ns = millis_field(w.compute_ms, &format!("workload.{name}.compute_ms"), p);
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
            check_program(&program, nodes, &format!("workload.{name}"), p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::MasterSlave(w) => {
            let program = ParallelProgram::MasterSlave {
                iterations: scaled(w.iterations, quick),
                compute_ns: w.compute_us.saturating_mul(MICROS),
                message_bytes: w.message_bytes,
            };
            check_program(&program, nodes, "workload.master-slave", p);
            Some(Workload::Parallel(program))
        }
        WorkloadSection::Mixed(m) => {
            p.check(m.sor.grid >= nodes, "workload.mixed.sor.grid", format!("a {0}×{0} grid cannot give each of {nodes} nodes a row; use a grid of at least {nodes}", m.sor.grid));
            p.check(
                m.sor.iterations >= 1,
                "workload.mixed.sor.iterations",
                "0 iterations; use at least 1",
            );
            p.check(
                m.sor.cell_compute_ns >= 1,
                "workload.mixed.sor.cell_compute_ns",
                "0 ns per cell; use at least 1",
            );
            let mut sequential = Vec::new();
            for (i, s) in m.sequential.iter().enumerate() {
                let field = |f: &str| format!("workload.mixed.sequential[{i}].{f}");
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
                sequential.push(SequentialJob {
                    name: s.name.clone(),
                    node: s.node,
                    total_cpu_ns: scaled(s.total_cpu_ms * MILLIS, quick),
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
                (1..=10_000_000).contains(&spin_us),
                field("spin_us"),
                format!("{spin_us} is out of range 1..=10000000 µs (the seed: 1600)"),
            );
            ReceiveMode::SpinBlock {
                spin_ns: spin_us * MICROS,
            }
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
