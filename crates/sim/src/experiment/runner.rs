//! Runs the planned runs of an experiment on all cores.
//!
//! Each run is independent: its scenario and seed are fixed in the plan ([`super::resolve`]), the engine owns
//! its one RNG, and results are stored by plan index. So the records — and every file written from them — are
//! the same whatever the thread count or the order in which threads pick runs.

use super::resolve::{Experiment, PlannedRun};
use cosched_report::{RunRecord, Source};
use indicatif::ProgressBar;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `Measurement::extra` key: events the engine processed in the run.
pub const EXTRA_EVENTS: &str = "sim_events";
/// `Measurement::extra` key: simulated time at the end of the run, seconds.
pub const EXTRA_SIMULATED_S: &str = "sim_time_s";

/// One finished run: its record and the engine's counters.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub record: RunRecord,
    pub events: u64,
    pub sim_time_ns: u64,
    /// Wall-clock time of the run (not written to the records: it would make them irreproducible).
    pub wall: Duration,
}

/// Simulates one planned run and labels its measurement.
pub fn run_one(experiment: &Experiment, run: &PlannedRun) -> anyhow::Result<RunOutcome> {
    let label = &experiment.configs[run.config].label;
    let started = Instant::now();
    let output = crate::simulate(&run.scenario, run.seed).map_err(|e| {
        anyhow::anyhow!(
            "{}: run '{label}' at {} competitors, repetition {} (seed {}): {e}",
            experiment.file.display(),
            run.competitors,
            run.repetition,
            run.seed
        )
    })?;
    let wall = started.elapsed();
    let mut measurement = output.measurement;
    measurement
        .extra
        .insert(EXTRA_EVENTS.into(), output.events as f64);
    measurement
        .extra
        .insert(EXTRA_SIMULATED_S.into(), output.sim_time_ns as f64 / 1e9);
    Ok(RunOutcome {
        record: RunRecord {
            experiment: experiment.name.clone(),
            source: Source::Simulated,
            config: label.clone(),
            competitors: run.competitors,
            repetition: run.repetition,
            seed: Some(run.seed),
            measurement,
        },
        events: output.events,
        sim_time_ns: output.sim_time_ns,
        wall,
    })
}

/// Runs every planned run of `experiment` on `threads` threads, ticking `progress` once per run. The outcomes
/// are in plan order. The first failing run stops the others from starting and is returned as the error.
pub fn run_all(
    experiment: &Experiment,
    threads: usize,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<RunOutcome>> {
    let runs = &experiment.runs;
    let slots: Vec<Mutex<Option<anyhow::Result<RunOutcome>>>> =
        runs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // The most expensive runs (most competitors) first, so the last thread to finish is not stuck with one.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(runs[i].competitors));
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, runs.len().max(1)) {
            scope.spawn(|| loop {
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = order.get(k) else { break };
                let outcome = run_one(experiment, &runs[index]);
                if outcome.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                *slots[index].lock().expect("a run thread panicked") = Some(outcome);
                progress.inc(1);
            });
        }
    });
    let mut outcomes = Vec::with_capacity(runs.len());
    for slot in slots {
        match slot.into_inner().expect("a run thread panicked") {
            Some(Ok(outcome)) => outcomes.push(outcome),
            Some(Err(e)) => return Err(e),
            None => {} // not started because another run failed; that failure is returned below
        }
    }
    if outcomes.len() != runs.len() {
        anyhow::bail!(
            "{}: a run failed, the others were stopped",
            experiment.file.display()
        );
    }
    Ok(outcomes)
}
