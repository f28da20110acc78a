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
//! | [`os`] | the node OS scheduler seam ([`os::OsScheduler`], one run queue per CPU, or per node with `[os] run_queue = "shared"`) and its Solaris 2.4 TS model ([`os::solaris_ts`]) |
//! | [`network`] | message latency + bandwidth, per-sender serialisation, send/delivery counts |
//! | [`process`] | programs (instruction lists) and process state |
//! | [`workloads`] | Latency, Barrier, Mixed (SOR + sequential jobs) and arriving parallel jobs as programs placed on CPUs |
//! | [`hook`] | the policy seam: hooks see the world and push commands (DCS, no coscheduling) |
//! | [`outcome`] | `SimOutput` (what a run gives back) and `SimError` (why it could not start) |
//! | [`metrics`] | response time, CPU time, fairness, round-trip histograms, reaction times, per measured job → `Measurement` |
//! | [`world`] | the simulation loop that ties them together |
//! | [`scenario`] | the resolved configuration (`Scenario`) and its validation |
//! | [`smp`] | seed `001`'s shared-memory multiprocessor: MPI skeletons, job streams (list, generator, SWF), FIFO / IRIX / PB / CS / SCS, `kind = "smp"` experiments |
//! | [`speed`] | speed measurements against the SPEC targets (`cosched sim-bench`) |
//!
//! ## Model decisions (where the seed leaves room, or where we read it)
//! - Solaris 2.4 TS: Table 1 plus the standard `ts_dptbl` defaults for the unprinted columns; the wake-up
//!   boost (`ts_slpret`) only for sleepers flagged by the once-a-second `ts_update`, as §3.2.4 describes;
//!   quanta charged by exact CPU time (not 10 ms ticks). See [`os::solaris_ts`].
//! - The DCS boost is dispatcher-level (§3.3.2: priority 59, front of the queue, run-run flags): it lasts
//!   until the TS class next recomputes the priority (quantum expiry, blocking, `ts_update`); the TS level and
//!   quantum left are untouched. See [`os::solaris_ts`] for why (the TS-level-59 reading gives F ≈ 2).
//! - The network interface samples the running process once per millisecond (§3.3.1) and interrupts the host
//!   only if the sample is not the receiver; `R` is the receiver CPU's run-queue length before the wake-up.
//!   See [`hook`].
//! - Randomness (one ChaCha8 stream per run): the initial run-queue order, each node's `ts_update` phase and
//!   network-interface sampling phase, every context-switch cost (uniform in `[mean/2, 3 mean/2]`, §3.2.2
//!   speaks of a mean), and the sequential jobs' bursts and I/O waits.
//!
//! ## The seams (issue 20)
//! - **Policy** ([`hook`]): a [`hook::CoschedHook`] is called when a job starts, a message arrives, a process
//!   wakes up, at the OS model's periodic tick, and at its own timers (a period it declares, and one-shot
//!   timers it arms); it reads a [`hook::WorldView`] and pushes [`hook::Command`]s — boost to max (or a
//!   counted refusal), priority bonus, quantum, migrate, restrict to a CPU set, arm a timer — which the world
//!   carries out in order and reports back ([`hook::CoschedHook::on_carried_out`]). The rules live in
//!   `cosched-policy` (DCS: `cosched_policy::dcs::DcsState`); [`hook::build`] is the one place a scenario's
//!   policy becomes a hook; [`simulate_with_hook`] runs any hook.
//! - **OS model** ([`os`]): [`os::OsScheduler`] has the life-cycle calls every model answers, plus optional
//!   operations ([`os::OsOperation`]: per-process quantum, priority bonus, migration) a model says it
//!   supports; a hook declares the ones it needs, and a run that cannot have them fails before it starts
//!   ([`SimError::Unsupported`]). Each CPU has its own run queue; a process may move between its node's
//!   CPUs (placement rule in [`world`]). With `[os] run_queue = "shared"` each node has one, every CPU of the
//!   node picks from it ([`os::OsScheduler::share_run_queue`]; a model without it refuses the run before it
//!   starts, [`SimError::SharedRunQueue`]).
//! - **Jobs** ([`workloads`], [`scenario::ArrivingJob`]): every parallel job is measured, none is assumed to
//!   be job 0, and a job may arrive at a given time ([`SimOutput::measured_jobs`]; the first measured job's
//!   figures are the measurement's own, the others' are `<name>.<figure>` extras).
//!
//! Entry point: [`simulate`] — one scenario, one seed, one [`cosched_report::Measurement`]. The same scenario
//! and seed always give the identical measurement.

pub mod cache;
pub mod cli;
pub mod engine;
pub mod experiment;
pub mod hook;
pub mod metrics;
pub mod network;
pub mod os;
pub mod outcome;
pub mod process;
pub mod scenario;
pub mod smp;
pub mod speed;
pub mod workloads;
pub mod world;

#[cfg(test)]
mod seam_tests;
#[cfg(test)]
mod tests;

pub use outcome::{SimError, SimOutput};
pub use scenario::{Scenario, ScenarioError};
pub use world::{RunInterval, Trace};

/// Runs one scenario with one RNG seed. Validates the scenario first.
pub fn simulate(scenario: &Scenario, seed: u64) -> Result<SimOutput, SimError> {
    scenario.validate()?;
    let hook = hook::build(&scenario.coscheduling);
    Ok(world::run(scenario, seed, hook, false)?.0)
}

/// Like [`simulate`], and also returns the full trace: every interval a process ran on a CPU and every
/// message delivery (for per-CPU timelines and invariant tests; costs memory proportional to the run).
pub fn simulate_with_trace(scenario: &Scenario, seed: u64) -> Result<(SimOutput, Trace), SimError> {
    simulate_with_hook(scenario, seed, hook::build(&scenario.coscheduling))
}

/// Like [`simulate_with_trace`], under a policy hook of the caller's instead of the one the scenario names
/// (`scenario.coscheduling` is then ignored): for a policy written outside this crate, or in a test.
pub fn simulate_with_hook(
    scenario: &Scenario,
    seed: u64,
    hook: Box<dyn hook::CoschedHook>,
) -> Result<(SimOutput, Trace), SimError> {
    scenario.validate()?;
    let (out, trace) = world::run(scenario, seed, hook, true)?;
    Ok((out, trace.expect("trace requested")))
}
