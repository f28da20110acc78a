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
//! [workload.latency]                     # or [workload.barrier] / [workload.mixed]
//! round_trips = 1000000
//! message_bytes = 128
//!
//! [sweep]
//! competitors_per_node = [0, 1, 2, 3, 4, 5, 6, 7, 8]
//!
//! [[config]]
//! label = "DCS, spin-block, E=2, C=100"
//! policy = "dcs"                          # a name from `cosched policies`
//! exponent = 2                            # E (dcs only)
//! constant_ms = 100                       # C (dcs only)
//! receive = "spin-block"                  # spin-only | spin-block | block
//! spin_us = 1600                          # spin-block only
//! ```

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
    pub os: OsSection,
    pub workload: WorkloadSection,
    pub sweep: SweepSection,
    pub config: Vec<ConfigSection>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OsModelName {
    SolarisTs,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSection {
    pub model: OsModelName,
    #[serde(default)]
    pub slpret_ablation: bool,
}

/// Exactly one of the workloads, as a sub-table: `[workload.latency]`, `[workload.barrier]` or `[workload.mixed]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSection {
    Latency(LatencySection),
    Barrier(BarrierSection),
    Mixed(MixedSection),
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
    pub label: String,
    /// A coscheduling policy name from the registry (`cosched policies`).
    pub policy: String,
    /// DCS `E`; defaults to the seed's value for the receive mode (-1 spin-only, 2 otherwise).
    pub exponent: Option<i32>,
    /// DCS `C` in milliseconds; defaults to the seed's value for the receive mode (0 spin-only, 100 otherwise).
    pub constant_ms: Option<u64>,
    pub receive: ReceiveName,
    /// Spin time before blocking (spin-block only); defaults to the seed's 1600 µs.
    pub spin_us: Option<u64>,
    /// Mixed workload only: run the jobs one after another instead of together (the seed's Batch baseline).
    #[serde(default)]
    pub batch: bool,
    /// Overrides `[os] slpret_ablation` for this configuration (seed 000 Figure 9 puts both in one plot).
    pub slpret_ablation: Option<bool>,
}
