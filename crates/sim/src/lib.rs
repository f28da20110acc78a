//! # cosched-sim — a deterministic discrete-event simulator of clusters of timesharing nodes
//!
//! Seed: `000_e8004e1596fde6a5.txt` (dynamic coscheduling on Solaris 2.4 and Myrinet). The simulator rebuilds
//! the seed's experimental platform in software — nodes with CPUs, each CPU run by a table-driven timesharing
//! scheduler (Solaris 2.4 TS, Table 1), a low-latency network (FM over Myrinet, ~40 µs user to user), parallel
//! programs that compute, send and receive with spin-only / spin-block / block receive, CPU-bound competitors
//! and sequential jobs — and applies the coscheduling rules of `cosched-policy` on message arrival.
//!
//! | module | what |
//! |---|---|
//! | [`engine`] | integer-nanosecond event queue (ties broken by insertion order), the one seeded RNG |
//! | [`os`] | the node OS scheduler seam ([`os::OsScheduler`]) and its Solaris 2.4 TS model ([`os::solaris_ts`]) |
//! | [`network`] | message latency + bandwidth, per-sender serialisation, send/delivery counts |
//! | [`process`] | programs (instruction lists) and process state |
//! | [`workloads`] | Latency, Barrier, Mixed (SOR + sequential jobs) as programs placed on CPUs |
//! | [`hook`] | coscheduling policy hooks on arrival / wake-up / periodic tick (DCS) |
//! | [`metrics`] | response time, CPU time, fairness, round-trip histograms, reaction times → `Measurement` |
//! | [`world`] | the simulation loop that ties them together |
//! | [`scenario`] | the resolved configuration (`Scenario`) and its validation |
//! | [`speed`] | speed measurements against the SPEC targets (`cosched sim-bench`) |
//!
//! Entry point: [`simulate`] — one scenario, one seed, one [`cosched_report::Measurement`]. The same scenario
//! and seed always give the identical measurement.

pub mod cli;
pub mod engine;
pub mod experiment;
pub mod hook;
pub mod metrics;
pub mod network;
pub mod os;
pub mod process;
pub mod scenario;
pub mod speed;
pub mod workloads;
pub mod world;

#[cfg(test)]
mod tests;

pub use scenario::{Scenario, ScenarioError};
pub use world::{RunInterval, Trace};

/// What one simulated run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutput {
    /// The run's measurement, in the schema shared with real runs.
    pub measurement: cosched_report::Measurement,
    /// Events the engine processed (stale timers excluded).
    pub events: u64,
    /// Simulated time at the end of the run (ns).
    pub sim_time_ns: u64,
    /// Messages sent and messages delivered (equal in a finished run: the network never loses one).
    pub messages_sent: u64,
    pub messages_delivered: u64,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    #[error("invalid scenario: {0}")]
    InvalidScenario(#[from] ScenarioError),
}

/// Runs one scenario with one RNG seed. Validates the scenario first.
pub fn simulate(scenario: &Scenario, seed: u64) -> Result<SimOutput, SimError> {
    scenario.validate()?;
    Ok(world::run(scenario, seed, false).0)
}

/// Like [`simulate`], and also returns the full trace: every interval a process ran on a CPU and every
/// message delivery (for per-CPU timelines and invariant tests; costs memory proportional to the run).
pub fn simulate_with_trace(scenario: &Scenario, seed: u64) -> Result<(SimOutput, Trace), SimError> {
    scenario.validate()?;
    let (out, trace) = world::run(scenario, seed, true);
    Ok((out, trace.expect("trace requested")))
}
