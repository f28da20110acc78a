//! The result structs. Times are in seconds (f64) here: these are reports, not the simulator's clock.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a run happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Simulated,
    Real,
}

/// The role of a job in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobRole {
    /// The parallel job being coscheduled.
    Parallel,
    /// A sequential job that is part of the workload (Mixed: gtar+gzip, Ghostscript).
    Sequential,
    /// A CPU-bound competitor that runs for the whole experiment.
    Competitor,
}

/// What one job measured. For competitors (one per CPU slot) the values are averaged over all of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub name: String,
    pub role: JobRole,
    /// Wall-clock time from start to completion (for competitors: the time they were measured over).
    pub response_s: f64,
    /// CPU time of all the job's processes together.
    pub cpu_s: f64,
    /// Mean fairness `F = N × Tc / Te` over the job's processes.
    pub fairness: f64,
    /// Smallest and largest per-process F.
    pub fairness_min: f64,
    pub fairness_max: f64,
}

/// A histogram with explicit bucket edges (upper edges, in microseconds; the last bucket is open-ended).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub upper_edges_us: Vec<f64>,
    pub counts: Vec<u64>,
}

/// Everything one run of one configuration measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The jobs, the parallel job first.
    pub jobs: Vec<JobResult>,
    /// Units of work the parallel job completed (round trips, barriers, SOR iterations): the correctness count.
    pub work_done: u64,
    /// Units of work asked for.
    pub work_expected: u64,
    /// `work_done / job response time`.
    pub rate_per_s: f64,
    /// Round-trip (or barrier-iteration) time percentiles, microseconds.
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    pub rtt_histogram: Option<Histogram>,
    /// Coscheduling decisions.
    pub boosts_granted: u64,
    pub boosts_refused: u64,
    /// Arrival → receiver on a CPU, microseconds. Simulator: every arrival (0 when the receiver was running).
    /// Agent: the arrivals it boosted; those it refused for fairness wait their turn by design and are kept apart
    /// (`extra.refused_waits`, `extra.refused_wait_p99_us`).
    pub reaction_p50_us: Option<f64>,
    pub reaction_p99_us: Option<f64>,
    /// The agent's own CPU use, as a fraction of one CPU (real runs).
    pub agent_cpu_fraction: Option<f64>,
    /// Anything else worth keeping (simulated events, foreign CPU load, ...).
    pub extra: BTreeMap<String, f64>,
}

impl Measurement {
    /// The parallel job's result, if the run had one.
    pub fn parallel_job(&self) -> Option<&JobResult> {
        self.jobs.iter().find(|j| j.role == JobRole::Parallel)
    }

    /// The competitors' result, if the run had any.
    pub fn competitors(&self) -> Option<&JobResult> {
        self.jobs.iter().find(|j| j.role == JobRole::Competitor)
    }
}

/// One run, labelled: which experiment, configuration, x-value and repetition it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub experiment: String,
    pub source: Source,
    /// The configuration's label, e.g. `DCS, spin-block, E=2, C=100`.
    pub config: String,
    /// Competitors per node (the x-axis of the seed's figures).
    pub competitors: u32,
    pub repetition: u32,
    /// The RNG seed of a simulated run.
    pub seed: Option<u64>,
    pub measurement: Measurement,
}
