//! Scenario-level tests of the policy seams (issue 20 item 2): hook timers, commands that act (quantum,
//! migration), several measured jobs, a job-arrival stream, and a run refused for an operation its OS model
//! lacks. Each test drives a small hook written here through [`crate::simulate_with_hook`].

use crate::hook::{Command, Commands, CoschedHook, PeriodicTimer, Timer, TimerPhase, WorldView};
use crate::os::{CpuSet, OsOperation};
use crate::scenario::{ArrivingJob, ParallelProgram, Scenario, SeedConfig, Workload};
use crate::{simulate, simulate_with_hook, SimError, Trace};
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
use cosched_report::JobRole;
use std::cell::RefCell;
use std::rc::Rc;

/// One node with `cpus` CPUs: a one-rank Barrier whose root computes 1 ms per iteration for ever (pid 0, a CPU
/// hog on the node's first CPU), beside `competitors` spinning competitors (pids 1.., CPU `k mod cpus`); no
/// context-switch cost; the run stops at `limit`.
fn hogs(cpus: u32, competitors: u32, limit: Nanos) -> Scenario {
    let mut s = Scenario::seed_barrier(1_000_000, competitors, SeedConfig::NoDcsSpinOnly);
    s.nodes = 1;
    s.cpus_per_node = cpus;
    s.context_switch_ns = 0;
    s.time_limit_ns = limit;
    if let Workload::Parallel(ParallelProgram::Barrier { compute_ns, .. }) = &mut s.workload {
        *compute_ns = MILLIS;
    }
    s
}

/// `(start, end)` of every interval `pid` held a CPU, in time order, with the CPU.
fn intervals_of(trace: &Trace, pid: u32) -> Vec<(Nanos, Nanos, u32)> {
    let mut v: Vec<_> = trace
        .intervals
        .iter()
        .filter(|i| i.pid == pid)
        .map(|i| (i.start_ns, i.end_ns, i.cpu))
        .collect();
    v.sort_unstable();
    v
}

/// Records every timer call: (now, node, timer).
struct TimerProbe {
    calls: Rc<RefCell<Vec<(Nanos, u32, Timer)>>>,
    phase: TimerPhase,
}

impl CoschedHook for TimerProbe {
    fn name(&self) -> &'static str {
        "timer-probe"
    }
    fn periodic_timer(&self) -> Option<PeriodicTimer> {
        Some(PeriodicTimer {
            period: 10 * MILLIS,
            phase: self.phase,
        })
    }
    fn on_job_start(&mut self, _world: &dyn WorldView, _job: u32, out: &mut Commands) {
        out.arm_timer(1, 25 * MILLIS, 7);
    }
    fn on_timer(&mut self, world: &dyn WorldView, node: u32, timer: Timer, _out: &mut Commands) {
        self.calls.borrow_mut().push((world.now(), node, timer));
    }
}

#[test]
fn a_hook_gets_its_periodic_ticks_and_its_armed_timer_at_the_right_times() {
    // Latency, 1,000 round trips (≈ 80 ms): ticks every 10 ms on both nodes from 10 ms on (aligned), and the
    // timer armed at the job's start for 25 ms on node 1, with its token — exactly at those instants.
    let calls = Rc::new(RefCell::new(Vec::new()));
    let scenario = Scenario::seed_latency(1_000, 0, SeedConfig::NoDcsSpinOnly);
    let hook = TimerProbe {
        calls: calls.clone(),
        phase: TimerPhase::Aligned,
    };
    let (out, _) = simulate_with_hook(&scenario, 1, Box::new(hook)).unwrap();
    assert_eq!(out.measurement.work_done, 1_000);
    let calls = calls.borrow();
    for node in 0..2 {
        let ticks: Vec<Nanos> = calls
            .iter()
            .filter(|&&(_, n, t)| n == node && t == Timer::Periodic)
            .map(|&(at, _, _)| at)
            .collect();
        let expected: Vec<Nanos> = (1..=ticks.len() as u64).map(|k| k * 10 * MILLIS).collect();
        assert_eq!(ticks, expected, "node {node}");
        assert!(
            ticks.len() >= 7,
            "the run lasts ≈ 80 ms: {} ticks",
            ticks.len()
        );
    }
    let armed: Vec<_> = calls
        .iter()
        .filter(|&&(_, _, t)| t != Timer::Periodic)
        .collect();
    assert_eq!(armed, vec![&(25 * MILLIS, 1, Timer::Armed { token: 7 })]);
}

#[test]
fn random_phase_ticks_start_below_the_period_and_keep_it() {
    // Each node's first tick is at its own phase in [0, 10 ms); the next ones every 10 ms after it.
    let calls = Rc::new(RefCell::new(Vec::new()));
    let scenario = Scenario::seed_latency(1_000, 0, SeedConfig::NoDcsSpinOnly);
    let hook = TimerProbe {
        calls: calls.clone(),
        phase: TimerPhase::RandomPerNode,
    };
    simulate_with_hook(&scenario, 1, Box::new(hook)).unwrap();
    let calls = calls.borrow();
    let mut firsts = Vec::new();
    for node in 0..2 {
        let ticks: Vec<Nanos> = calls
            .iter()
            .filter(|&&(_, n, t)| n == node && t == Timer::Periodic)
            .map(|&(at, _, _)| at)
            .collect();
        assert!(ticks[0] < 10 * MILLIS, "node {node}: {ticks:?}");
        assert!(
            ticks.windows(2).all(|w| w[1] - w[0] == 10 * MILLIS),
            "{ticks:?}"
        );
        firsts.push(ticks[0]);
    }
    assert_ne!(
        firsts[0], firsts[1],
        "the nodes' phases are drawn independently"
    );
}

/// At 100 ms moves pid 0 to CPU 1 (through a timer it arms when job 0 starts).
struct MoveAt100Ms;

impl CoschedHook for MoveAt100Ms {
    fn name(&self) -> &'static str {
        "move-at-100-ms"
    }
    fn operations(&self) -> &'static [OsOperation] {
        &[OsOperation::Migrate]
    }
    fn on_job_start(&mut self, _world: &dyn WorldView, job: u32, out: &mut Commands) {
        if job == 0 {
            out.arm_timer(0, 100 * MILLIS, 0);
        }
    }
    fn on_timer(&mut self, world: &dyn WorldView, _node: u32, _timer: Timer, out: &mut Commands) {
        assert_eq!(world.process(0).allowed_cpus, CpuSet::single(0));
        out.migrate(0, 1);
    }
}

#[test]
fn a_migrate_command_moves_a_process_to_the_other_cpu_of_its_node() {
    // One node, 2 CPUs: the hog (pid 0) and competitor 1 share CPU 0, competitor 2 has CPU 1. At 100 ms the
    // hook moves pid 0 to CPU 1: every interval it starts before then is on CPU 0, every one after on CPU 1,
    // and it does run there (CPU 1's competitor, alone since 0, ends its 120 ms level-29 quantum at 120 ms).
    let scenario = hogs(2, 2, 400 * MILLIS);
    let (out, trace) = simulate_with_hook(&scenario, 3, Box::new(MoveAt100Ms)).unwrap();
    let runs = intervals_of(&trace, 0);
    assert!(runs.iter().filter(|r| r.0 < 100 * MILLIS).all(|r| r.2 == 0));
    let after: Vec<_> = runs.iter().filter(|r| r.0 >= 100 * MILLIS).collect();
    assert!(!after.is_empty(), "pid 0 runs after the move: {runs:?}");
    assert!(after.iter().all(|r| r.2 == 1), "{runs:?}");
    assert!(after[0].0 <= 120 * MILLIS, "{:?}", after[0]);
    assert!(!out.measurement.extra.contains_key("hook_commands_moot"));
}

/// Sets pid 0's quantum to 50 ms when job 0 starts, and records when the OS model's tick first comes.
struct FiftyMsQuantum {
    first_tick: Rc<RefCell<Option<Nanos>>>,
}

impl CoschedHook for FiftyMsQuantum {
    fn name(&self) -> &'static str {
        "fifty-ms-quantum"
    }
    fn operations(&self) -> &'static [OsOperation] {
        &[OsOperation::SetQuantum]
    }
    fn on_job_start(&mut self, _world: &dyn WorldView, job: u32, out: &mut Commands) {
        if job == 0 {
            out.set_quantum(0, Some(50 * MILLIS));
        }
    }
    fn on_tick(&mut self, world: &dyn WorldView, _node: u32, _out: &mut Commands) {
        self.first_tick.borrow_mut().get_or_insert(world.now());
    }
}

#[test]
fn set_quantum_changes_how_long_a_cpu_hog_runs_before_the_next_one() {
    // One CPU, two hogs (pid 0 and a competitor, pid 1), both admitted at TS level 29 (120 ms), no switch
    // cost. pid 0's quantum is set to 50 ms as the job starts; the quantum in progress (120 ms) is kept.
    // Table 1: expiry demotes 29 → 19 → 9 → 0, with quanta 160 ms, 200 ms, 200 ms for pid 1, and 50 ms
    // for pid 0 every time. If pid 0 runs first:
    //   0–120 pid 0 | 120–240 pid 1 | 240–290 pid 0 | 290–450 pid 1 | 450–500 pid 0 | 500–700 pid 1 | 700–750 pid 0
    // If pid 1 runs first (the initial queue order is random):
    //   0–120 pid 1 | 120–240 pid 0 | 240–400 pid 1 | 400–450 pid 0 | 450–650 pid 1 | 650–700 pid 0 | 700–900 pid 1
    // Checked up to the first ts_update (at a random phase; it raises the waiting process and preempts), on
    // the first seed whose ts_update comes after 760 ms. Without the hook pid 0 runs 120, 160, 200, 200 ms.
    let ms = |v: u64| v * MILLIS;
    let pid0_first = [
        (0, 120, 0),
        (120, 240, 1),
        (240, 290, 0),
        (290, 450, 1),
        (450, 500, 0),
        (500, 700, 1),
        (700, 750, 0),
    ];
    let pid1_first = [
        (0, 120, 1),
        (120, 240, 0),
        (240, 400, 1),
        (400, 450, 0),
        (450, 650, 1),
        (650, 700, 0),
        (700, 900, 1),
    ];
    for seed in 1..50 {
        let first_tick = Rc::new(RefCell::new(None));
        let hook = FiftyMsQuantum {
            first_tick: first_tick.clone(),
        };
        let (_, trace) = simulate_with_hook(&hogs(1, 1, SECONDS), seed, Box::new(hook)).unwrap();
        let tick = first_tick.borrow().expect("a ts_update within 1 s");
        if tick <= ms(760) {
            continue;
        }
        let mut runs: Vec<(Nanos, Nanos, u32)> = trace
            .intervals
            .iter()
            .filter(|i| i.end_ns <= ms(750))
            .map(|i| (i.start_ns, i.end_ns, i.pid))
            .collect();
        runs.sort_unstable();
        let expected = if runs[0].2 == 0 {
            &pid0_first[..]
        } else {
            &pid1_first[..]
        };
        let expected: Vec<_> = expected
            .iter()
            .filter(|&&(_, end, _)| ms(end) <= ms(750))
            .map(|&(start, end, pid)| (ms(start), ms(end), pid))
            .collect();
        assert_eq!(runs, expected, "seed {seed}");
        // The control: without the hook, pid 0's second turn is a full 160 ms (level 19).
        let (_, control) = crate::simulate_with_trace(&hogs(1, 1, SECONDS), seed).unwrap();
        let turns: Vec<Nanos> = intervals_of(&control, 0)
            .iter()
            .map(|r| r.1 - r.0)
            .take(2)
            .collect();
        assert_eq!(turns, vec![ms(120), ms(160)], "seed {seed}");
        return;
    }
    panic!("no seed in 1..50 puts the first ts_update after 760 ms");
}

/// Latency (1,000 round trips), beside an arriving 2-rank Barrier named `late` (50 iterations of 100 µs).
fn latency_and_late_barrier(arrival_ns: Nanos) -> Scenario {
    let mut s = Scenario::seed_latency(1_000, 1, SeedConfig::DcsSpinBlock);
    s.arrivals.push(ArrivingJob {
        name: "late".into(),
        arrival_ns,
        nodes: vec![0, 1],
        program: ParallelProgram::Barrier {
            iterations: 50,
            compute_ns: 100 * MICROS,
            message_bytes: 64,
        },
    });
    s
}

#[test]
fn two_measured_jobs_are_both_reported() {
    // Both jobs start at 0 and finish their work; the first (latency) fills the measurement's own figures,
    // the second has its own `late.*` figures and its own job result.
    let out = simulate(&latency_and_late_barrier(0), 1).unwrap();
    let m = &out.measurement;
    assert_eq!(out.measured_jobs.len(), 2);
    let (latency, late) = (&out.measured_jobs[0], &out.measured_jobs[1]);
    assert_eq!(
        (
            latency.name.as_str(),
            latency.work_done,
            latency.work_expected
        ),
        ("latency", 1_000, 1_000)
    );
    assert_eq!(
        (late.name.as_str(), late.work_done, late.work_expected),
        ("late", 50, 50)
    );
    assert_eq!((m.work_done, m.work_expected), (1_000, 1_000));
    assert_eq!(m.extra["late.work_done"], 50.0);
    assert_eq!(m.extra["late.work_expected"], 50.0);
    assert!(
        m.extra["late.iteration_p50_us"] > 100.0,
        "a barrier takes its 100 µs compute and more"
    );
    let parallel: Vec<&str> = m
        .jobs
        .iter()
        .filter(|j| j.role == JobRole::Parallel)
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(parallel, vec!["latency", "late"]);
    assert!(m
        .jobs
        .iter()
        .all(|j| j.role == JobRole::Competitor || j.response_s > 0.0));
}

#[test]
fn a_job_arriving_at_one_second_starts_then() {
    // `late` arrives at 1 s (the run goes on until it finishes, whenever the latency job ends): none of its
    // processes holds a CPU before, its start is 1 s, and its response time is counted from then.
    let (out, trace) = crate::simulate_with_trace(&latency_and_late_barrier(SECONDS), 1).unwrap();
    let late = &out.measured_jobs[1];
    assert_eq!(late.started_ns, Some(SECONDS));
    assert_eq!(late.work_done, 50);
    let finished = late.finished_ns.expect("it finishes");
    // pids: latency 0, 1; competitors 2, 3; late 4, 5.
    for pid in [4, 5] {
        let runs = intervals_of(&trace, pid);
        assert!(!runs.is_empty());
        assert!(runs.iter().all(|r| r.0 >= SECONDS), "pid {pid}: {runs:?}");
    }
    let m = &out.measurement;
    assert_eq!(m.extra["late.start_s"], 1.0);
    let result = m.jobs.iter().find(|j| j.name == "late").unwrap();
    assert!((result.response_s - (finished - SECONDS) as f64 / 1e9).abs() < 1e-12);
}

/// Declares a priority bonus, which the Solaris TS model has no goodness for.
struct NeedsABonus;

impl CoschedHook for NeedsABonus {
    fn name(&self) -> &'static str {
        "needs-a-bonus"
    }
    fn operations(&self) -> &'static [OsOperation] {
        &[OsOperation::SetPriorityBonus]
    }
}

#[test]
fn a_policy_needing_an_operation_the_model_lacks_is_refused_before_the_run() {
    let scenario = Scenario::seed_latency(10, 0, SeedConfig::NoDcsSpinOnly);
    let err = simulate_with_hook(&scenario, 1, Box::new(NeedsABonus)).unwrap_err();
    assert!(matches!(
        err,
        SimError::Unsupported {
            policy: "needs-a-bonus",
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "policy 'needs-a-bonus' cannot run here: the OS model 'solaris-ts' cannot add a priority (goodness) bonus"
    );
}

/// Lets pid 0 run on both CPUs of its node when job 0 starts.
struct BothCpus;

impl CoschedHook for BothCpus {
    fn name(&self) -> &'static str {
        "both-cpus"
    }
    fn operations(&self) -> &'static [OsOperation] {
        &[OsOperation::Migrate]
    }
    fn on_job_start(&mut self, _world: &dyn WorldView, job: u32, out: &mut Commands) {
        if job == 0 {
            out.push(Command::RestrictToCpus {
                pid: 0,
                cpus: CpuSet::first(2),
            });
            // Moot: CPU 5 is not on the node, and pid 99 does not exist.
            out.migrate(0, 5);
            out.boost_to_max(99);
        }
    }
}

#[test]
fn a_process_allowed_on_both_cpus_wakes_on_the_idle_one() {
    // Latency on 2 nodes × 2 CPUs, 1 competitor per node on each node's CPU 0 (beside the latency ranks), so
    // CPU 1 of node 0 is idle. pid 0 (the pinger) may use both CPUs of node 0: it blocks for each reply
    // (block receive) and wakes where the placement rule says — its own CPU 0 is busy with the competitor,
    // CPU 1 is idle — so after its first block it runs on CPU 1 and stays there (its own CPU, idle, first).
    let mut scenario = Scenario::seed_latency(200, 1, SeedConfig::NoDcsSpinOnly);
    scenario.cpus_per_node = 2;
    scenario.receive = cosched_policy::spin::ReceiveMode::Block;
    let (out, trace) = simulate_with_hook(&scenario, 1, Box::new(BothCpus)).unwrap();
    assert_eq!(out.measurement.work_done, 200);
    assert_eq!(out.measurement.extra["hook_commands_moot"], 2.0);
    let runs = intervals_of(&trace, 0);
    assert!(runs.iter().skip(1).all(|r| r.2 == 1), "{runs:?}");
    assert!(runs.len() > 100);
}

#[test]
fn a_bad_arriving_job_is_refused_by_field() {
    // A rank on node 2 of a 2-node cluster; a latency job with 3 ranks; a name the workload already uses.
    let mut s = latency_and_late_barrier(0);
    s.arrivals[0].nodes = vec![0, 2];
    let err = simulate(&s, 1).unwrap_err().to_string();
    assert!(
        err.contains("arrivals.nodes") && err.contains("node 2"),
        "{err}"
    );
    let mut s = latency_and_late_barrier(0);
    s.arrivals[0].nodes = vec![0, 1, 1];
    s.arrivals[0].program = ParallelProgram::Latency {
        round_trips: 5,
        message_bytes: 8,
    };
    let err = simulate(&s, 1).unwrap_err().to_string();
    assert!(
        err.contains("arrivals.program") && err.contains("2 ranks"),
        "{err}"
    );
    let mut s = latency_and_late_barrier(0);
    s.arrivals[0].name = "competitors".into();
    let err = simulate(&s, 1).unwrap_err().to_string();
    assert!(err.contains("arrivals.name"), "{err}");
    // And it round-trips through serde; a scenario without arrivals serialises as before (no `arrivals` key).
    let s = latency_and_late_barrier(SECONDS);
    let back: Scenario = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let plain =
        serde_json::to_string(&Scenario::seed_latency(1, 0, SeedConfig::DcsSpinOnly)).unwrap();
    assert!(!plain.contains("arrivals"));
}
