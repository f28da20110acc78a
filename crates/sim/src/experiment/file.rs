//! The experiment file as written (TOML), before validation. Every struct denies unknown fields, so a typo is an
//! error naming the field instead of a silently ignored setting. Units are in the field names.
//!
//! ```toml
//! name = "fig03-latency"                 # results/<name>/; letters, digits, '-' and '_'
//! title = "Latency, 1,000,000 round trips"
//! description = "..."
//! reproduces = "000_e8004e1596fde6a5.txt Figure 3"
//! seed = 1996                            # base RNG seed; each run derives its own
//! repetitions = 3
//! time_limit_s = 1000000                 # optional safety net in simulated seconds
//!
//! [cluster]
//! nodes = 2
//! cpus_per_node = 1
//! context_switch_us = 200
//!
//! [network]
//! latency_us = 30
//! bandwidth_mb_per_s = 13                # 10^6 bytes per second
//!
//! [os]
//! model = "solaris-ts"
//! slpret_ablation = false                # true: ts_slpret[n] = n (seed 000 Figure 9)
//!
//! [workload.latency]                     # or [workload.barrier] / [workload.mixed] / [workload.is] /
//!                                        #    [workload.mg] / [workload.master-slave] (seed 003)
//! round_trips = 1000000
//! message_bytes = 128
//!
//! [[arrivals]]                           # optional: more measured jobs, each from its arrival time
//! name = "mg"
//! arrival_s = 0.2
//! nodes = [0, 1]                          # the node of each rank
//! [arrivals.workload.mg]                  # any parallel kind
//! iterations = 100
//! levels = 5
//! compute_ms = 3.9
//! halo_bytes = 32_768
//!
//! [stream]                                # optional: a job stream, every job measured (`stream-000`, ...)
//! nodes_per_job = 2
//! generator = { load = 0.3, dedicated_s = 0.5, horizon_s = 4 }   # or: submit_s = [0.1, 0.6, 1.5]
//! [stream.workload.sp]                    # the program every stream job runs (any parallel kind)
//! iterations = 50
//! compute_ms = 10
//! face_bytes = 4_096
//!
//! [sweep]
//! competitors_per_node = [0, 1, 2, 3, 4, 5, 6, 7, 8]
//!
//! [[configurations]]
//! name = "DCS, spin-block, E=2, C=100"  # a line of the figure; unique
//! policy = { kind = "dcs", exponent = 2, constant_ms = 100 }   # a kind from `cosched policies` + its parameters
//! receive = "spin-block"                  # spin-only | spin-block | block
//! spin_us = 1600                          # spin-block only
//! message_bytes = 4_096                   # optional: replaces a one-size workload's message size
//! ```
//!
//! The policy table is [`cosched_policy::config::PolicyConfig`], the type the registry is generated from: its
//! fields, defaults and checks are the policy crate's, not this file's.

use crate::scenario::OsModel;
use cosched_policy::config::PolicyConfig;
use serde::Deserialize;

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub name: String,
    /// Plot titles; defaults to `name`.
    pub title: Option<String>,
    pub description: String,
    /// The seed paper and figure(s) this experiment reproduces.
    pub reproduces: String,
    /// Base RNG seed; run seeds are derived from it, the competitors and the repetition.
    pub seed: u64,
    pub repetitions: u32,
    /// Simulated-time safety net per run, seconds.
    pub time_limit_s: Option<u64>,
    pub cluster: ClusterSection,
    pub network: NetworkSection,
    /// The OS model of every node: the scenario's own [`OsModel`] (tagged by `model`).
    pub os: OsModel,
    /// The cache model (seed `004`): `[cache]`, with `hardware`, `parallel` and `local` sub-tables, each field
    /// defaulting to the values in `crate::cache`.
    pub cache: Option<crate::scenario::CacheConfig>,
    pub workload: WorkloadSection,
    /// Parallel jobs run beside the workload's own, each measured like it (`[[arrivals]]`; seed 003 Figure 3
    /// runs IS and MG together).
    #[serde(default)]
    pub arrivals: Vec<ArrivalSection>,
    /// A stream of parallel jobs arriving over time beside the workload (`[stream]`; seed 001 §5's E2 arrival
    /// process), each measured like the workload's own job.
    pub stream: Option<StreamSection>,
    pub sweep: SweepSection,
    pub configurations: Vec<ConfigSection>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    pub nodes: u32,
    pub cpus_per_node: u32,
    pub context_switch_us: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Fixed one-way user-to-user latency, microseconds.
    pub latency_us: u64,
    /// Bandwidth in 10^6 bytes per second.
    pub bandwidth_mb_per_s: f64,
}

/// Exactly one of the workloads, as a sub-table: `[workload.latency]`, `[workload.barrier]` or `[workload.mixed]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSection {
    Latency(LatencySection),
    Barrier(BarrierSection),
    Mixed(MixedSection),
    /// Seed `003`'s NAS IS-like skeleton, `[workload.is]`.
    Is(IsSection),
    /// Seed `003`'s NAS MG-like skeleton, `[workload.mg]`.
    Mg(MgSection),
    /// Seed `004`'s NAS SP-like ring stencil, `[workload.sp]`.
    Sp(StencilSection),
    /// Seed `004`'s NAS BT-like ring stencil, `[workload.bt]`.
    Bt(StencilSection),
    /// Seed `003`'s master–slave program, `[workload.master-slave]`.
    MasterSlave(MasterSlaveSection),
}

/// `[workload.sp]` / `[workload.bt]` (seed `004`): a ring stencil.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilSection {
    pub iterations: u64,
    pub compute_ms: f64,
    pub face_bytes: u32,
}

/// A configuration's `local = { nodes = 4, cpu_percent = 50, cpu_s = 20 }` (seed `004`'s `local` benchmark);
/// the system calls default to the seed's: every 500 ms on average, 1 to 10 MB each.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    pub nodes: u32,
    pub cpu_percent: f64,
    pub cpu_s: f64,
    #[serde(default = "default_syscall_interval_ms")]
    pub mean_syscall_interval_ms: f64,
    #[serde(default = "default_syscall_min_mb")]
    pub syscall_min_mb: f64,
    #[serde(default = "default_syscall_max_mb")]
    pub syscall_max_mb: f64,
}

fn default_syscall_interval_ms() -> f64 {
    500.0
}
fn default_syscall_min_mb() -> f64 {
    1.0
}
fn default_syscall_max_mb() -> f64 {
    10.0
}

/// A parallel job beside the workload's own: `name`, when it starts, the node of each rank, and its program as a
/// `[arrivals.workload.<kind>]` table (a parallel kind: not `mixed`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalSection {
    pub name: String,
    #[serde(default)]
    pub arrival_s: f64,
    pub nodes: Vec<u32>,
    pub workload: WorkloadSection,
}

/// `[stream]`: jobs that all run one program (`[stream.workload.<kind>]`, a parallel kind) on `nodes_per_job`
/// nodes each (job `k`'s rank `r` on node `(k × nodes_per_job + r) mod nodes`), arriving either at the listed
/// `submit_s` times or as a generated stream (`generator`). Exactly one of the two.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSection {
    pub nodes_per_job: u32,
    /// Listed arrivals: one job per entry, seconds from the start.
    pub submit_s: Option<Vec<f64>>,
    /// Generated arrivals: exponential inter-arrival times at a target offered load.
    pub generator: Option<StreamGenerator>,
    pub workload: WorkloadSection,
}

/// `generator = { load = 0.5, dedicated_s = 2, horizon_s = 60 }`: the offered load of seed 001 §5
/// (`Σ ranks × dedicated_s / (CPUs × horizon_s)`), so the mean inter-arrival time is
/// `nodes_per_job × dedicated_s / (load × nodes × cpus_per_node)`. `dedicated_s` is the job's run time alone (the
/// simulator cannot know it before running it: measure it with a run of the program alone); arrivals are drawn
/// until `horizon_s`, from each run's seed.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamGenerator {
    pub load: f64,
    pub dedicated_s: f64,
    pub horizon_s: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsSection {
    pub iterations: u64,
    pub compute_ms: f64,
    pub count_bytes: u32,
    pub key_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MgSection {
    pub iterations: u64,
    pub levels: u32,
    pub compute_ms: f64,
    pub halo_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MasterSlaveSection {
    pub iterations: u64,
    pub compute_us: u64,
    pub message_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySection {
    pub round_trips: u64,
    pub message_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BarrierSection {
    pub iterations: u64,
    pub compute_us: u64,
    pub message_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixedSection {
    pub sor: SorSection,
    #[serde(default)]
    pub sequential: Vec<SequentialSection>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SorSection {
    pub grid: u32,
    pub iterations: u64,
    pub cell_compute_ns: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialSection {
    pub name: String,
    pub node: u32,
    pub total_cpu_ms: u64,
    pub mean_burst_ms: f64,
    pub mean_io_ms: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    pub competitors_per_node: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiveName {
    SpinOnly,
    SpinBlock,
    Block,
}

/// One scheduling configuration: a line of the seed's figures.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSection {
    /// The line's label in tables, plots and `runs.json`.
    pub name: String,
    /// The coscheduling policy: `{ kind = "...", <its parameters> }`; a missing parameter takes its default.
    pub policy: PolicyConfig,
    pub receive: ReceiveName,
    /// Spin time before blocking (spin-block only); defaults to the seed's 1600 µs.
    pub spin_us: Option<u64>,
    /// Mixed workload only: run the jobs one after another instead of together (the seed's Batch baseline).
    #[serde(default)]
    pub batch: bool,
    /// Replaces `[os]` for this configuration (seed 000 Figure 9 puts both dispatch tables in one plot).
    pub os: Option<OsModel>,
    /// Seed `004`'s `local` benchmark for this configuration.
    pub local: Option<LocalSection>,
    /// Replaces the workload's message size for this configuration, so that one file sweeps it (seed 003's
    /// master–slave against the kernel's 4 KB packet floor); only for a workload with one message size
    /// (`latency`, `barrier`, `master-slave`).
    pub message_bytes: Option<u32>,
}
