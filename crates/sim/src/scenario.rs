//! A fully resolved simulation scenario: what one simulated run needs, with every default filled in and every
//! value checked. Experiment files (TOML) are parsed and validated into these structs before anything runs;
//! the engine never sees a raw file.

use cosched_policy::dcs::DcsParams;
use cosched_policy::spin::ReceiveMode;
use cosched_policy::{Nanos, MICROS};
use serde::{Deserialize, Serialize};

/// One simulated run's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Nodes in the cluster (the seed used 7 SPARCstation-2s; Latency uses 2).
    pub nodes: u32,
    /// CPUs per node (the seed's nodes had 1).
    pub cpus_per_node: u32,
    /// The per-node OS scheduler model.
    pub os: OsModel,
    /// Cost of one context switch.
    pub context_switch_ns: Nanos,
    pub network: NetworkParams,
    /// The coscheduling policy on message arrival.
    pub coscheduling: Coscheduling,
    /// How the parallel job's processes wait for a message.
    pub receive: ReceiveMode,
    pub workload: Workload,
    /// CPU-bound spin-loop competitors on every node.
    pub competitors_per_node: u32,
    /// Stop the run after this much simulated time even if the job has not finished (a safety net; the
    /// result then reports `work_done < work_expected`).
    pub time_limit_ns: Nanos,
}

/// The node's own timesharing scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OsModel {
    /// Solaris 2.4 TS dispatcher, seed `000` Table 1. `slpret_ablation` sets `ts_slpret[n] = n` (Figure 9).
    SolarisTs { slpret_ablation: bool },
}

/// Network between nodes: a message of `b` bytes arrives `latency + b / bandwidth` after it is sent
/// (user-to-user; FM over Myrinet in the seed: ~40 µs for 128 bytes, 13 MB/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkParams {
    pub latency_ns: Nanos,
    pub bandwidth_bytes_per_s: u64,
}

impl Default for NetworkParams {
    fn default() -> Self {
        // 40 µs one-way user-to-user for a 128-byte message at 13 MB/s: 128 B / 13 MB/s ≈ 9.8 µs of it is
        // serialisation, so the fixed part is ≈ 30 µs.
        NetworkParams { latency_ns: 30 * MICROS, bandwidth_bytes_per_s: 13_000_000 }
    }
}

/// The coscheduling policy applied on message arrival.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum Coscheduling {
    /// No DCS: the node scheduler alone.
    None,
    /// Dynamic coscheduling with the given fairness constants.
    Dcs(DcsParams),
}

/// The parallel job and what runs beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    /// Two processes on two nodes exchange a token `round_trips` times.
    Latency { round_trips: u64, message_bytes: u32 },
    /// Root broadcasts "passed", every node computes `compute_ns`, sends "at barrier" to root; `iterations` times.
    Barrier { iterations: u64, compute_ns: Nanos, message_bytes: u32 },
    /// An SOR-like nearest-neighbour exchange beside sequential jobs (seed `000` Mixed workload).
    Mixed { sor: SorParams, sequential: Vec<SequentialJob>, batch: bool },
}

/// An SOR-like stencil: a `grid × grid` matrix split in row blocks over all nodes; each iteration computes its
/// block and exchanges one boundary row with each neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SorParams {
    pub grid: u32,
    pub iterations: u64,
    /// Compute time per grid cell per iteration.
    pub cell_compute_ns: Nanos,
}

/// A sequential job with CPU bursts and I/O waits (a stand-in for gtar+gzip or Ghostscript). It runs on
/// `node` and ends after `total_cpu_ns` of CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialJob {
    pub name: String,
    pub node: u32,
    pub total_cpu_ns: Nanos,
    /// Mean CPU burst between I/O waits (exponentially distributed).
    pub mean_burst_ns: Nanos,
    /// Mean I/O wait (exponentially distributed).
    pub mean_io_ns: Nanos,
}
