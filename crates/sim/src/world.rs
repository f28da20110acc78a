//! The simulation loop: CPUs, processes, the network, the OS model and the coscheduling hook together.
//!
//! Seed: `000_e8004e1596fde6a5.txt` — §3.2.2 (spin-block receive woken by the arrival interrupt), §3.2.4 (the
//! Solaris dispatcher), §3.3.2 (DCS boost: maximum user priority, front of the queue, preempt the running
//! process), §4.1 (workloads and metrics).
//!
//! ## Approach
//! Each CPU runs at most one process (`Cpu::running`); everything else is on the OS model's run queues (one
//! per CPU, or one per node with a shared run queue) or asleep. A CPU is *serviced* whenever something may
//! have changed for it: its own timer (the running process's next deadline: end of a computation, end of its
//! spin limit, quantum expiry, end of a context switch), a message for its running process, or a process
//! becoming runnable there. Servicing accounts CPU time up to now, then runs the process's program until it
//! must wait.
//!
//! ## Terminology
//! - `dispatched_at` — when the running process got the CPU; `exec_from` — when its context switch is over and
//!   it executes (`dispatched_at + context_switch` if a different process ran last, else `dispatched_at`);
//!   `quantum_end` — `dispatched_at + time_left` from the OS model. Context-switch time is charged to the
//!   incoming process (CPU time and quantum), as the dispatcher's work on its behalf; each switch costs a
//!   uniform draw in `[mean / 2, 3 mean / 2]` around the scenario's (mean) `context_switch_ns`.
//! - `R` for DCS: see [`crate::hook`].
//! - system burst — a time during which a CPU runs none of the simulated processes: the OS's own threads hold
//!   it (`system_until`). The OS model sees the CPU run no thread, so its ticks then charge no quantum
//!   ([`crate::os::nt4`]); the network interface's sample sees no process running. Drawn only when the scenario
//!   asks for it (the NT model's default), so the other models' runs draw nothing more.
//! - measured job — a parallel job (the workload's own and every arriving one); each has its own work count,
//!   iteration times and CPU split ([`crate::metrics::MeasuredJob`]). The measurement's top-level figures are
//!   the first measured job's, the others' are `<name>.<figure>` extras; no job is assumed to be job 0.
//! - placement — where a process whose allowed CPU set ([`crate::os::CpuSet`]) holds several CPUs goes when it
//!   becomes runnable or is moved out of its set: its own CPU if allowed and idle (nothing running or queued),
//!   else the lowest idle allowed CPU, else the allowed CPU with the fewest processes (running + queued), its
//!   own CPU on a tie, then the lowest. A process allowed on one CPU (every process, unless a hook says
//!   otherwise) stays on it: that is the seed `000` model, bit for bit.
//! - shared run queue — the scenario's `[os] run_queue = "shared"` ([`crate::scenario::RunQueue`]; refused
//!   before the run by a model without [`crate::os::OsOperation::SharedRunQueue`]): no placement. Every
//!   process may run on any CPU of its node (its allowed set is the node), the OS model picks for a CPU among
//!   all of the node's runnable processes, and a process's CPU becomes the CPU that picked it. Wherever one CPU
//!   is re-examined after a process became runnable or more urgent (arrival, I/O completion, job start, boost,
//!   priority bonus), every CPU of the node is, the process's own first: an idle one picks it up, or the CPU
//!   the OS model marked is preempted (a boost is not forced onto the process's last CPU: the model says
//!   where). The `N` of fairness is then the node's live processes, sharing its CPUs (at most one each).
//!
//! ## Algorithm
//! ```text
//! service(cpu):  loop
//!     if idle: run = os.pick_next(cpu) or stay idle; pay the switch if run is not the last process
//!     account CPU time and progress up to now
//!     if now >= quantum_end:  os.on_quantum_expiry(run); pick again
//!     elif now < exec_from:    timer at min(exec_from, quantum_end)
//!     else step(run): execute ops until it computes / spins (timer at min(deadline, quantum_end)),
//!                     blocks (os.on_block, pick again) or exits (os.on_exit, pick again)
//! arrival(msg → p):  mailbox += 1
//!     p running: service its CPU now (a spinning receiver sees the message at once)
//!     else: R = os.run_queue_len(cpu of p); hook.on_arrival(...) → commands
//!           if p blocked on a receive: place p; os.on_wakeup(p) (ts_slpret applies); hook.on_wakeup → commands
//!           carry out the commands (BoostToMax: os.boost_to_max(p); preempt the running process)
//!           preempt the running process of p's CPU only if os.should_preempt (strictly higher priority)
//!           (shared run queue: each CPU of p's node, p's own first; an idle one picks)
//! ts_update (per node, once per OS update period, at a random phase per node): os.periodic_update;
//!     hook.on_tick → commands, carried out; preempt where a raised process now has a strictly higher priority
//! hook timer (its own period per node, or armed by a command): hook.on_timer → commands, carried out
//! system burst (NT model with `[os] system_load_percent` > 0; each CPU on its own, Poisson, mean interval
//!     system_burst_us × 100 / system_load_percent): hold the CPU for an exponential draw of mean
//!     system_burst_us (the system's own threads, above NORMAL): the running process is preempted
//!     (os.on_preempt), nothing is dispatched there until the burst ends, then the CPU is serviced
//! job start (at 0, after the job it waits for, or at its arrival time): admit its processes in a random
//!     order; hook.on_job_start → commands, carried out
//! ```
//! Commands are carried out in the order the hook pushed them, right after the call (see [`crate::hook`] for
//! what each does); one the process cannot take is dropped and counted (`hook_commands_moot`).
//! Timers are lazy: a CPU keeps one live timer; an earlier deadline replaces it (the old entry becomes stale
//! through a generation counter), a later one waits for the live timer to fire and re-arm.

use crate::cache::{CacheProfile, Caches};
use crate::engine::Engine;
use crate::hook::{
    ArrivalView, Command, Commands, CoschedHook, ProcessView, Timer, TimerPhase, WorldView,
    RUNNING_SAMPLE_PERIOD,
};
use crate::metrics::{DurationHistogram, MeasuredJob};
use crate::network::Network;
use crate::os::{CpuSet, NewScheduler, OsScheduler, Unsupported};
use crate::outcome::{SimError, SimOutput};
use crate::process::{Op, Phase, Process, Program, Status, PORTS};
use crate::scenario::{OsModel, RunQueue, Scenario, Workload};
use crate::workloads::{self, Job, JobStart};
use cosched_policy::spin::{ReceiveMode, WaitAction};
use cosched_policy::Nanos;
use cosched_report::fairness::fairness;
use cosched_report::stats::mean_min_max;
use cosched_report::{JobResult, JobRole, Measurement};
use std::collections::{BTreeMap, VecDeque};

const NEVER: Nanos = Nanos::MAX;

/// One interval during which a process held a CPU (context-switch time included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunInterval {
    pub cpu: u32,
    pub pid: u32,
    pub start_ns: Nanos,
    pub end_ns: Nanos,
}

/// Everything a traced run recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Every interval a process held a CPU, in the order they ended.
    pub intervals: Vec<RunInterval>,
    /// Ids of delivered messages, in delivery order (ids are 0.. in sending order).
    pub delivered_ids: Vec<u64>,
    /// Messages sent.
    pub sent: u64,
    /// CPUs in the cluster.
    pub cpus: u32,
    /// Simulated end of the run.
    pub end_ns: Nanos,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// Re-examine a CPU (valid only if `generation` is the CPU's current one).
    CpuTimer { cpu: u32, generation: u32 },
    /// A message of `bytes` from process `from` reaches process `to`, port `port`.
    Arrival {
        to: u32,
        port: u8,
        id: u64,
        from: u32,
        bytes: u32,
    },
    /// The sender's kernel has the acknowledgement of a message: its bytes leave the send queue (tracked only
    /// while a hook needs the socket queues).
    Acked { from: u32, to: u32, bytes: u32 },
    /// A sequential job's I/O wait is over.
    IoDone { pid: u32 },
    /// The OS model's periodic update on one node.
    Update { node: u32 },
    /// A job starts (batch mode: the one it waited for finished; an arriving job: its arrival time).
    StartJob { job: u32 },
    /// The hook's own periodic timer on one node.
    HookTick { node: u32 },
    /// A timer the hook armed.
    HookTimer { node: u32, token: u64 },
    /// The system's own threads take `cpu` (see the module doc, "system burst").
    SystemBurst { cpu: u32 },
    /// A system burst on `cpu` may be over (valid only if it is: a later burst may have extended it).
    SystemEnd { cpu: u32 },
}

/// Switch records kept per CPU to answer "who ran at the NIC's last sample" (within one sample period).
const SWITCH_HISTORY: usize = 8;
/// `pid` of an idle CPU in the switch history.
const IDLE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Cpu {
    /// The last switches as (time, pid or IDLE), a ring; `history_next` is the slot written next.
    history: [(Nanos, u32); SWITCH_HISTORY],
    history_next: usize,
    running: Option<u32>,
    last_ran: Option<u32>,
    dispatched_at: Nanos,
    accounted_to: Nanos,
    exec_from: Nanos,
    quantum_end: Nanos,
    timer_generation: u32,
    timer_at: Nanos,
    /// The system's own threads hold the CPU until then (nothing is dispatched before).
    system_until: Nanos,
}

#[derive(Clone, Copy, Debug)]
enum Leave {
    Preempted,
    Expired,
    Blocked,
    Exited,
}

enum Step {
    BusyUntil(Nanos),
    Blocked,
    Exited,
}

#[derive(Clone, Copy, Debug, Default)]
struct JobState {
    started_at: Option<Nanos>,
    finished_at: Option<Nanos>,
    live: u32,
}

/// The work count and iteration times of a measured job.
#[derive(Clone, Debug, Default)]
struct JobWork {
    done: u64,
    iterations: DurationHistogram,
}

struct World<'a, S: OsScheduler> {
    scenario: &'a Scenario,
    engine: Engine<Event>,
    os: S,
    hook: Box<dyn CoschedHook>,
    /// What the hook pushed during its current call, and the batch being carried out.
    commands: Commands,
    carrying_out: Vec<Command>,
    commands_moot: u64,
    net: Network,
    cpus: Vec<Cpu>,
    programs: Vec<Program>,
    procs: Vec<Process>,
    jobs: Vec<Job>,
    job_state: Vec<JobState>,
    /// Per job: its work and iteration times if it is measured.
    job_work: Vec<Option<JobWork>>,
    receive: ReceiveMode,
    min_quantum: Nanos,
    unfinished_jobs: u32,
    stop: bool,
    first_job_end: Option<Nanos>,
    cpu_at_first_job_end: Vec<Nanos>,
    reactions: DurationHistogram,
    boosts_granted: u64,
    boosts_refused: u64,
    events: u64,
    stale_timers: u64,
    updates: u64,
    context_switches: u64,
    sampled_running_suppressed: u64,
    /// The system's own threads: (mean interval between bursts, mean burst) per CPU, when the model has them.
    system: Option<(Nanos, Nanos)>,
    system_bursts: u64,
    system_ns: Nanos,
    /// Phase of each node's network-interface sampling of the running process.
    sample_phase: Vec<Nanos>,
    /// The OS model keeps one run queue per node ([`RunQueue::Shared`]): after a change to a process's queue
    /// every CPU of its node is examined, and a CPU that picks a process makes it that process's CPU.
    shared_run_queue: bool,
    /// Whether the OS model is told the bytes on each socket (a hook needs
    /// [`crate::os::OsOperation::GoodnessFreq`]); off, nothing of it costs a thing.
    track_sockets: bool,
    /// Per process and port, the (sender, bytes) of each message delivered and not yet consumed, in order
    /// (kept only while `track_sockets`).
    inboxes: Vec<[VecDeque<(u32, u32)>; PORTS]>,
    /// The cache model and each process's profile, when the scenario has one (seed `004`).
    caches: Option<Caches>,
    profiles: Vec<CacheProfile>,
    trace: Option<Trace>,
}

/// Where an iteration time counts as seed `002`'s tail ("substantial numbers of round trips > 2 ms").
const TAIL_FROM: Nanos = 2 * cosched_policy::MILLIS;

/// Runs a validated scenario under `hook`; the trace only when asked. Refused before it starts when the hook
/// needs an operation the OS model lacks.
pub(crate) fn run(
    scenario: &Scenario,
    seed: u64,
    hook: Box<dyn CoschedHook>,
    traced: bool,
) -> Result<(SimOutput, Option<Trace>), SimError> {
    // The one place an OS model is chosen: one arm per row of the model table (the world is generic over the
    // scheduler, so each model gets its own monomorphised loop).
    macro_rules! run_on_the_scenarios_model {
        ($($(#[doc = $doc:literal])* $name:literal $variant:ident($module:ident::$parameters:ident),)*) => {
            match &scenario.os {
                $(OsModel::$variant(parameters) => run_on(
                    parameters.new_scheduler(scenario.nodes, scenario.cpus_per_node),
                    scenario,
                    seed,
                    hook,
                    traced,
                ),)*
            }
        };
    }
    crate::os::every_os_model!(run_on_the_scenarios_model)
}

/// [`run`] on a constructed OS model; refused before it starts when the model lacks an operation the hook
/// needs, or cannot share a run queue the scenario asks to share.
fn run_on<S: OsScheduler>(
    mut os: S,
    scenario: &Scenario,
    seed: u64,
    hook: Box<dyn CoschedHook>,
    traced: bool,
) -> Result<(SimOutput, Option<Trace>), SimError> {
    if let Some(&operation) = hook.operations().iter().find(|&&op| !os.supports(op)) {
        return Err(SimError::Unsupported {
            policy: hook.name(),
            source: Unsupported {
                model: os.name(),
                operation,
            },
        });
    }
    if scenario.os.run_queue() == RunQueue::Shared {
        os.share_run_queue(scenario.cpus_per_node)
            .map_err(|source| SimError::SharedRunQueue { source })?;
    }
    Ok(World::new(scenario, seed, os, hook, traced).run())
}

/// What a hook sees of the world (see [`WorldView`]).
struct View<'w> {
    now: Nanos,
    scenario: &'w Scenario,
    procs: &'w [Process],
    cpus: &'w [Cpu],
    jobs: &'w [Job],
    os: &'w dyn OsScheduler,
    min_quantum: Nanos,
}

impl WorldView for View<'_> {
    fn now(&self) -> Nanos {
        self.now
    }
    fn nodes(&self) -> u32 {
        self.scenario.nodes
    }
    fn cpus_per_node(&self) -> u32 {
        self.scenario.cpus_per_node
    }
    fn processes(&self) -> u32 {
        self.procs.len() as u32
    }
    fn process(&self, pid: u32) -> ProcessView {
        let p = &self.procs[pid as usize];
        ProcessView {
            node: p.node,
            cpu: p.cpu,
            job: p.job,
            status: p.status,
            running: self.cpus[p.cpu as usize].running == Some(pid),
            unconsumed_messages: p.mailbox.iter().sum(),
            allowed_cpus: p.allowed_cpus,
        }
    }
    fn job_processes(&self, job: u32) -> &[u32] {
        &self.jobs[job as usize].processes
    }
    fn running_on(&self, cpu: u32) -> Option<u32> {
        self.cpus[cpu as usize].running
    }
    fn run_queue_len(&self, cpu: u32) -> u32 {
        self.os.run_queue_len(cpu)
    }
    fn min_quantum(&self) -> Nanos {
        self.min_quantum
    }
}

impl<'a, S: OsScheduler> World<'a, S> {
    fn new(
        scenario: &'a Scenario,
        seed: u64,
        os: S,
        hook: Box<dyn CoschedHook>,
        traced: bool,
    ) -> Self {
        let setup = workloads::build(scenario);
        let cpus = scenario.nodes * scenario.cpus_per_node;
        let unfinished_jobs = setup
            .jobs
            .iter()
            .filter(|j| j.role != JobRole::Competitor)
            .count() as u32;
        let min_quantum = os.min_quantum();
        let track_sockets = hook
            .operations()
            .contains(&crate::os::OsOperation::GoodnessFreq);
        let inboxes = if track_sockets {
            vec![Default::default(); setup.processes.len()]
        } else {
            Vec::new()
        };
        let shared_run_queue = scenario.os.run_queue() == RunQueue::Shared;
        let mut processes = setup.processes;
        if shared_run_queue {
            // One queue for the node's CPUs (Linux 2.2 has no affinity mask): any CPU of its node may run it.
            for p in &mut processes {
                p.allowed_cpus = CpuSet::first(scenario.cpus_per_node);
            }
        }
        let caches = scenario
            .cache
            .map(|config| Caches::new(config.hardware, cpus));
        let profiles = match scenario.cache {
            Some(config) => processes
                .iter()
                .map(|p| {
                    if setup.jobs[p.job as usize].interactive {
                        config.local
                    } else {
                        config.parallel
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        World {
            scenario,
            engine: Engine::new(seed),
            os,
            hook,
            commands: Commands::default(),
            carrying_out: Vec::new(),
            commands_moot: 0,
            net: Network::new(scenario.network, scenario.nodes),
            cpus: vec![
                Cpu {
                    history: [(0, IDLE); SWITCH_HISTORY],
                    history_next: 0,
                    running: None,
                    last_ran: None,
                    dispatched_at: 0,
                    accounted_to: 0,
                    exec_from: 0,
                    quantum_end: 0,
                    timer_generation: 0,
                    timer_at: NEVER,
                    system_until: 0,
                };
                cpus as usize
            ],
            job_state: vec![JobState::default(); setup.jobs.len()],
            job_work: setup
                .jobs
                .iter()
                .map(|job| job.work_expected.map(|_| JobWork::default()))
                .collect(),
            programs: setup.programs,
            procs: processes,
            jobs: setup.jobs,
            receive: scenario.receive,
            min_quantum,
            unfinished_jobs,
            stop: false,
            first_job_end: None,
            cpu_at_first_job_end: Vec::new(),
            reactions: DurationHistogram::default(),
            boosts_granted: 0,
            boosts_refused: 0,
            events: 0,
            stale_timers: 0,
            updates: 0,
            context_switches: 0,
            sampled_running_suppressed: 0,
            system: scenario.os.parameters().system_activity(),
            system_bursts: 0,
            system_ns: 0,
            sample_phase: Vec::new(),
            shared_run_queue,
            track_sockets,
            inboxes,
            caches,
            profiles,
            trace: traced.then(|| Trace {
                cpus,
                ..Trace::default()
            }),
        }
    }

    fn run(mut self) -> (SimOutput, Option<Trace>) {
        // Start the jobs that start at 0; the others wait for their job or their arrival time.
        let starting: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| self.jobs[j as usize].start == JobStart::AtStart)
            .collect();
        self.sample_phase = (0..self.scenario.nodes)
            .map(|_| self.engine.uniform_below(self.running_sample_period()))
            .collect();
        self.start_jobs(&starting);
        // Each node's periodic update runs at its own random phase: the nodes' clocks are not aligned.
        if let Some(period) = self.os.update_period() {
            for node in 0..self.scenario.nodes {
                let phase = self.engine.uniform_below(period);
                self.engine.schedule(phase, Event::Update { node });
            }
        }
        // Each CPU's system bursts come at their own random times (Poisson).
        if let Some((interval, _)) = self.system {
            for cpu in 0..self.cpus.len() as u32 {
                let first = self.engine.exponential(interval);
                self.engine.schedule(first, Event::SystemBurst { cpu });
            }
        }
        if let Some(timer) = self.hook.periodic_timer() {
            let period = timer.period.max(1);
            for node in 0..self.scenario.nodes {
                let first = match timer.phase {
                    TimerPhase::Aligned => period,
                    TimerPhase::RandomPerNode => self.engine.uniform_below(period),
                };
                self.engine.schedule(first, Event::HookTick { node });
            }
        }
        for job in 0..self.jobs.len() as u32 {
            if let JobStart::At(at) = self.jobs[job as usize].start {
                self.engine.schedule(at, Event::StartJob { job });
            }
        }
        let limit = self.scenario.time_limit_ns;
        while !self.stop {
            let Some(event) = self.engine.next_until(limit) else {
                self.engine.advance_to(limit);
                break;
            };
            match event {
                Event::CpuTimer { cpu, generation } => {
                    let c = &mut self.cpus[cpu as usize];
                    if c.timer_generation != generation {
                        self.stale_timers += 1;
                        continue;
                    }
                    c.timer_at = NEVER;
                    self.service(cpu);
                }
                Event::Arrival {
                    to,
                    port,
                    id,
                    from,
                    bytes,
                } => self.arrival(to, port, id, from, bytes),
                Event::Acked { from, to, bytes } => {
                    self.os.socket_bytes(from, to, 0, -(bytes as i64));
                }
                Event::IoDone { pid } => self.io_done(pid),
                Event::Update { node } => self.update(node),
                Event::StartJob { job } => self.start_jobs(&[job]),
                Event::HookTick { node } => self.hook_timer(node, Timer::Periodic),
                Event::HookTimer { node, token } => self.hook_timer(node, Timer::Armed { token }),
                Event::SystemBurst { cpu } => self.system_burst(cpu),
                Event::SystemEnd { cpu } => {
                    if self.engine.now() >= self.cpus[cpu as usize].system_until {
                        self.service(cpu);
                    }
                }
            }
            self.events += 1;
        }
        self.finish()
    }

    // ----- jobs -----

    fn start_jobs(&mut self, jobs: &[u32]) {
        let now = self.engine.now();
        let mut pids: Vec<u32> = jobs
            .iter()
            .flat_map(|&j| self.jobs[j as usize].processes.clone())
            .collect();
        for &j in jobs {
            let state = &mut self.job_state[j as usize];
            state.started_at = Some(now);
            state.live = self.jobs[j as usize].processes.len() as u32;
        }
        for &pid in &pids {
            let p = &mut self.procs[pid as usize];
            p.status = Status::Runnable;
            p.started_at = now;
            p.last_iteration = now;
        }
        // N of fairness: the live processes sharing each started process's CPU, itself included; with a shared
        // run queue, those sharing its node's CPUs, of which they can use at most one each.
        let shared = self.shared_run_queue;
        let pool = |q: &Process| if shared { q.node } else { q.cpu } as usize;
        let mut live_in_pool = vec![0u32; self.cpus.len()];
        for q in &self.procs {
            if !matches!(q.status, Status::NotStarted | Status::Done) {
                live_in_pool[pool(q)] += 1;
            }
        }
        for &pid in &pids {
            let p = &mut self.procs[pid as usize];
            p.sharing = live_in_pool[pool(p)];
            if shared {
                p.sharing_cpus = self.scenario.cpus_per_node.min(p.sharing);
            }
        }
        // The initial run-queue order is random.
        self.engine.shuffle(&mut pids);
        let mut cpus: Vec<u32> = Vec::new();
        for &pid in &pids {
            let cpu = self.procs[pid as usize].cpu;
            self.os.admit(pid, cpu);
            if self.jobs[self.procs[pid as usize].job as usize].interactive {
                self.os.interactive_user(pid);
            }
            cpus.extend(self.queue_cpus(cpu));
        }
        cpus.sort_unstable();
        cpus.dedup();
        for cpu in cpus {
            self.preempt_if_needed(cpu, false);
        }
        for &job in jobs {
            self.call_hook(|hook, world, out| hook.on_job_start(world, job, out));
            self.carry_out_commands();
        }
    }

    fn process_exited(&mut self, pid: u32) {
        let now = self.engine.now();
        let p = &mut self.procs[pid as usize];
        p.status = Status::Done;
        p.finished_at = Some(now);
        let job = p.job as usize;
        self.job_state[job].live -= 1;
        if self.job_state[job].live > 0 {
            return;
        }
        self.job_state[job].finished_at = Some(now);
        if self.jobs[job].role == JobRole::Competitor {
            return;
        }
        self.unfinished_jobs -= 1;
        if self.first_job_end.is_none() {
            self.first_job_end = Some(now);
            for cpu in 0..self.cpus.len() as u32 {
                self.account(cpu);
            }
            self.cpu_at_first_job_end = self.procs.iter().map(|p| p.cpu_ns).collect();
        }
        if self.unfinished_jobs == 0 {
            self.stop = true;
            return;
        }
        for next in 0..self.jobs.len() as u32 {
            if self.jobs[next as usize].start == JobStart::AfterJob(job as u32) {
                self.engine.schedule(now, Event::StartJob { job: next });
            }
        }
    }

    // ----- CPUs -----

    /// Runs whatever should run on `cpu` now, until the running process must wait for time to pass.
    fn service(&mut self, cpu: u32) {
        let now = self.engine.now();
        loop {
            let pid = match self.cpus[cpu as usize].running {
                Some(pid) => {
                    self.account(cpu);
                    pid
                }
                // Just dispatched: accounted up to now already, and its switch has not even started to pass.
                None => match self.dispatch(cpu) {
                    Some(pid) => pid,
                    None => return,
                },
            };
            let c = &self.cpus[cpu as usize];
            let (quantum_end, exec_from) = (c.quantum_end, c.exec_from);
            if now >= quantum_end {
                self.leave(cpu, Leave::Expired);
                continue;
            }
            if now < exec_from {
                // A computation resumes by itself after the switch: wake at its end, not at the switch's.
                let p = &self.procs[pid as usize];
                let wake = match p.phase {
                    Phase::Computing => exec_from.saturating_add(p.left),
                    Phase::Start | Phase::Spinning => exec_from,
                };
                self.arm(cpu, wake.min(quantum_end));
                return;
            }
            match self.step(pid) {
                Step::BusyUntil(t) => {
                    self.arm(cpu, t.min(quantum_end));
                    return;
                }
                Step::Blocked => self.leave(cpu, Leave::Blocked),
                Step::Exited => self.leave(cpu, Leave::Exited),
            }
        }
    }

    /// Gives an idle CPU its next process; `None` if nothing is runnable there, or the system holds it.
    fn dispatch(&mut self, cpu: u32) -> Option<u32> {
        if self.engine.now() < self.cpus[cpu as usize].system_until {
            return None;
        }
        let pid = self.os.pick_next(cpu)?;
        // A shared run queue hands out its node's processes to whichever CPU picks (else this is their CPU).
        self.procs[pid as usize].cpu = cpu;
        let now = self.engine.now();
        // The cache refill after a switch stalls the process before it executes (seed `004`).
        let refill = match &mut self.caches {
            Some(caches) => {
                let (misses, stall) = caches.dispatch(cpu, pid, &self.profiles[pid as usize]);
                self.os.cache_misses(cpu, misses.l1, misses.l2);
                stall
            }
            None => 0,
        };
        let c = &mut self.cpus[cpu as usize];
        let switch = if c.last_ran == Some(pid) {
            0
        } else {
            self.context_switches += 1;
            // The seed speaks of the *mean* context-switch time (§3.2.2): each switch costs a uniform draw in
            // [mean / 2, 3 mean / 2]. The jitter also keeps the nodes' otherwise perfectly periodic schedules
            // from phase-locking for the whole run.
            let mean = self.scenario.context_switch_ns;
            mean / 2 + self.engine.uniform_below(mean + 1)
        };
        c.running = Some(pid);
        c.history[c.history_next] = (now, pid);
        c.history_next = (c.history_next + 1) % SWITCH_HISTORY;
        c.dispatched_at = now;
        c.accounted_to = now;
        c.exec_from = now + switch + refill;
        c.quantum_end = now + self.os.time_left(pid).max(1);
        let exec_from = c.exec_from;
        let p = &mut self.procs[pid as usize];
        p.progress_from = exec_from;
        if let Some(arrived) = p.waiting_since.take() {
            self.reactions.record(exec_from - arrived);
        }
        Some(pid)
    }

    /// Charges the running process for CPU time and advances its computation or spin up to now.
    fn account(&mut self, cpu: u32) {
        let now = self.engine.now();
        let c = &mut self.cpus[cpu as usize];
        let Some(pid) = c.running else { return };
        let p = &mut self.procs[pid as usize];
        p.cpu_ns += now - c.accounted_to;
        c.accounted_to = now;
        if now > p.progress_from {
            let d = now - p.progress_from;
            p.progress_from = now;
            match p.phase {
                Phase::Computing => {
                    let used = d.min(p.left);
                    p.left -= used;
                    p.compute_ns += used;
                }
                Phase::Spinning => {
                    p.left += d;
                    p.spin_ns += d;
                }
                Phase::Start => {}
            }
        }
    }

    /// Takes the running process off `cpu` (already accounted) and tells the OS model why.
    fn leave(&mut self, cpu: u32, why: Leave) {
        let now = self.engine.now();
        let c = &mut self.cpus[cpu as usize];
        let pid = c.running.take().expect("leave() needs a running process");
        c.history[c.history_next] = (now, IDLE);
        c.history_next = (c.history_next + 1) % SWITCH_HISTORY;
        c.last_ran = Some(pid);
        let ran = now - c.dispatched_at;
        let expired = now >= c.quantum_end;
        if let Some(caches) = &self.caches {
            let executed = now.saturating_sub(c.exec_from);
            let misses = caches.steady(executed, &self.profiles[pid as usize]);
            self.os.cache_misses(cpu, misses.l1, misses.l2);
        }
        if let Some(trace) = &mut self.trace {
            trace.intervals.push(RunInterval {
                cpu,
                pid,
                start_ns: c.dispatched_at,
                end_ns: now,
            });
        }
        match why {
            Leave::Preempted if expired => self.os.on_quantum_expiry(pid),
            Leave::Preempted => self.os.on_preempt(pid, ran),
            Leave::Expired => self.os.on_quantum_expiry(pid),
            Leave::Blocked => self.os.on_block(pid, ran),
            Leave::Exited => {
                self.os.on_exit(pid, ran);
                self.process_exited(pid);
            }
        }
    }

    /// Makes sure `cpu` is re-examined at `at` (lazy: an earlier live timer will re-arm when it fires).
    fn arm(&mut self, cpu: u32, at: Nanos) {
        let c = &mut self.cpus[cpu as usize];
        if c.timer_at <= at {
            return;
        }
        c.timer_generation = c.timer_generation.wrapping_add(1);
        c.timer_at = at;
        let generation = c.timer_generation;
        self.engine
            .schedule(at, Event::CpuTimer { cpu, generation });
    }

    /// Preempts the running process of `cpu` if the OS model says a waiting one should run (or `force`), and
    /// gives an idle CPU its next process.
    fn preempt_if_needed(&mut self, cpu: u32, force: bool) {
        match self.cpus[cpu as usize].running {
            None => self.service(cpu),
            Some(running) => {
                if force || self.os.should_preempt(cpu, running) {
                    self.account(cpu);
                    self.leave(cpu, Leave::Preempted);
                    self.service(cpu);
                }
            }
        }
    }

    /// The CPUs that pick from `cpu`'s run queue: `cpu` alone, or with a shared run queue every CPU of its node.
    fn queue_cpus(&self, cpu: u32) -> std::ops::Range<u32> {
        if self.shared_run_queue {
            let per_node = self.scenario.cpus_per_node;
            let first = cpu / per_node * per_node;
            first..first + per_node
        } else {
            cpu..cpu + 1
        }
    }

    /// [`World::preempt_if_needed`] (not forced) on every CPU that picks from `cpu`'s run queue, `cpu` first:
    /// after a process of that queue became runnable or more urgent. With a shared run queue an idle CPU of the
    /// node picks it up, or the OS model has marked the CPU to preempt.
    fn preempt_where_needed(&mut self, cpu: u32) {
        self.preempt_if_needed(cpu, false);
        for other in self.queue_cpus(cpu) {
            if other != cpu {
                self.preempt_if_needed(other, false);
            }
        }
    }

    // ----- programs -----

    /// Executes `pid`'s program at now (it is on its CPU, past its context switch, accounted).
    fn step(&mut self, pid: u32) -> Step {
        let now = self.engine.now();
        loop {
            let p = &mut self.procs[pid as usize];
            let program = &self.programs[p.program as usize];
            match program.body[p.pc as usize] {
                Op::Compute(ns) => {
                    if p.phase == Phase::Start {
                        p.phase = Phase::Computing;
                        p.left = ns;
                        p.progress_from = now;
                    }
                    if p.left > 0 {
                        return Step::BusyUntil(now + p.left);
                    }
                }
                Op::ComputeExp { mean_ns } => {
                    if p.phase == Phase::Start {
                        let budget_left = program
                            .cpu_budget_ns
                            .map_or(NEVER, |budget| budget.saturating_sub(p.compute_ns));
                        if budget_left == 0 {
                            return Step::Exited;
                        }
                        let burst = self.engine.exponential(mean_ns).min(budget_left);
                        let p = &mut self.procs[pid as usize];
                        p.phase = Phase::Computing;
                        p.left = burst;
                        p.last_burst_ns = burst;
                        p.progress_from = now;
                    }
                    let p = &self.procs[pid as usize];
                    if p.left > 0 {
                        return Step::BusyUntil(now + p.left);
                    }
                }
                Op::IoWait { .. } | Op::DutySleep { .. } => {
                    let wait = match program.body[p.pc as usize] {
                        Op::DutySleep { cpu_permille } => {
                            let share = cpu_permille.clamp(1, 1000) as u128;
                            (p.last_burst_ns as u128 * (1000 - share) / share) as Nanos
                        }
                        Op::IoWait { mean_ns } => self.engine.exponential(mean_ns),
                        _ => unreachable!("matched above"),
                    };
                    self.engine.schedule(now + wait, Event::IoDone { pid });
                    self.procs[pid as usize].status = Status::BlockedOnIo;
                    if self.advance(pid) {
                        // The I/O was the program's last step: it ends when it would have woken.
                        return Step::Exited;
                    }
                    return Step::Blocked;
                }
                Op::Send { to, port, bytes } => {
                    let arrival = self.net.send(p.node, bytes, now);
                    let id = self.net.sent - 1;
                    self.engine.schedule(
                        arrival,
                        Event::Arrival {
                            to,
                            port,
                            id,
                            from: pid,
                            bytes,
                        },
                    );
                    if self.track_sockets {
                        // Held in the send queue until acknowledged: one latency after it arrives.
                        self.os.socket_bytes(pid, to, 0, bytes as i64);
                        let acked = arrival + self.net.latency();
                        self.engine.schedule(
                            acked,
                            Event::Acked {
                                from: pid,
                                to,
                                bytes,
                            },
                        );
                    }
                }
                Op::Recv { port, count } => {
                    let slot = &mut p.mailbox[port as usize];
                    if *slot >= count {
                        *slot -= count;
                        if let Some(since) = p.recv_since.take() {
                            p.comm_wait_ns += now - since;
                        }
                        if self.track_sockets {
                            for _ in 0..count {
                                let (from, bytes) = self.inboxes[pid as usize][port as usize]
                                    .pop_front()
                                    .expect("a message counted in the mailbox is in the inbox");
                                self.os.socket_bytes(pid, from, -(bytes as i64), 0);
                            }
                        }
                    } else {
                        if p.phase == Phase::Start {
                            p.phase = Phase::Spinning;
                            p.left = 0;
                            p.progress_from = now;
                        }
                        p.recv_since.get_or_insert(now);
                        match self.receive.after_spinning(p.left) {
                            WaitAction::Block => {
                                p.status = Status::BlockedOnReceive;
                                p.phase = Phase::Start;
                                return Step::Blocked;
                            }
                            WaitAction::KeepSpinning => {
                                let deadline = self
                                    .receive
                                    .spin_limit()
                                    .map_or(NEVER, |limit| now + (limit - p.left));
                                return Step::BusyUntil(deadline);
                            }
                        }
                    }
                }
                Op::Iteration => {
                    let took = now - p.last_iteration;
                    p.last_iteration = now;
                    if let Some(work) = &mut self.job_work[p.job as usize] {
                        work.done += 1;
                        work.iterations.record(took);
                    }
                }
                Op::Syscall {
                    min_bytes,
                    max_bytes,
                } => {
                    if p.phase == Phase::Start {
                        let bytes =
                            min_bytes + self.engine.uniform_below(max_bytes - min_bytes + 1);
                        let cpu = self.procs[pid as usize].cpu;
                        let caches = self
                            .caches
                            .as_mut()
                            .expect("Scenario::validate: a system call needs the cache model");
                        let (misses, ns) = caches.stream(cpu, pid, bytes);
                        self.os.cache_misses(cpu, misses.l1, misses.l2);
                        let p = &mut self.procs[pid as usize];
                        p.phase = Phase::Computing;
                        p.left = ns;
                        p.progress_from = now;
                    }
                    let p = &self.procs[pid as usize];
                    if p.left > 0 {
                        return Step::BusyUntil(now + p.left);
                    }
                }
                Op::SpinForever => {
                    p.phase = Phase::Computing;
                    p.left = NEVER;
                    p.progress_from = now;
                    return Step::BusyUntil(NEVER);
                }
            }
            if self.advance(pid) {
                return Step::Exited;
            }
        }
    }

    /// Moves past the current instruction; `true` when the program is finished.
    fn advance(&mut self, pid: u32) -> bool {
        let p = &mut self.procs[pid as usize];
        let program = &self.programs[p.program as usize];
        p.phase = Phase::Start;
        p.pc += 1;
        if p.pc as usize == program.body.len() {
            p.pc = 0;
            p.rounds_done += 1;
            let budget_spent = program
                .cpu_budget_ns
                .is_some_and(|budget| p.compute_ns >= budget);
            if p.rounds_done >= program.repeat || budget_spent {
                return true;
            }
        }
        false
    }

    // ----- events -----

    fn arrival(&mut self, to: u32, port: u8, id: u64, from: u32, bytes: u32) {
        let now = self.engine.now();
        self.net.deliver();
        if self.track_sockets {
            self.inboxes[to as usize][port as usize].push_back((from, bytes));
            self.os.socket_bytes(to, from, bytes as i64, 0);
        }
        if let Some(trace) = &mut self.trace {
            trace.delivered_ids.push(id);
        }
        let p = &mut self.procs[to as usize];
        p.mailbox[port as usize] += 1;
        let (cpu, node) = (p.cpu, p.node);
        let running = self.cpus[cpu as usize].running == Some(to);
        if running {
            let exec_from = self.cpus[cpu as usize].exec_from;
            self.reactions.record(exec_from.saturating_sub(now));
            if now >= exec_from {
                self.service(cpu);
            } else {
                // Still switching in: it looks at the message as soon as it executes.
                self.arm(cpu, exec_from);
            }
            return;
        }
        let p = &mut self.procs[to as usize];
        if matches!(p.status, Status::Done | Status::NotStarted) {
            return;
        }
        // R is read before the wake-up this arrival may cause (see `crate::hook`).
        let arrival = ArrivalView {
            now,
            receiver: to,
            receiver_running: false,
            receiver_running_as_sampled: self.sampled_running(node, cpu) == Some(to),
            run_queue_len: self
                .os
                .published_run_queue_len(cpu)
                .unwrap_or_else(|| self.os.run_queue_len(cpu)),
            min_quantum: self.min_quantum,
        };
        self.call_hook(|hook, world, out| hook.on_arrival(world, &arrival, out));
        if arrival.receiver_running_as_sampled {
            self.sampled_running_suppressed += 1;
        }
        let p = &mut self.procs[to as usize];
        p.waiting_since.get_or_insert(now);
        if p.status == Status::BlockedOnReceive {
            p.status = Status::Runnable;
            self.wake(to);
        }
        self.carry_out_commands();
        let cpu = self.procs[to as usize].cpu;
        self.preempt_where_needed(cpu);
    }

    /// The blocked `pid`, already marked runnable, goes back to a run queue: placed (if it may run on several
    /// CPUs), woken by the OS model, then shown to the hook.
    fn wake(&mut self, pid: u32) {
        // With a shared run queue the OS model places it (it is on its node's queue, whatever its CPU).
        if !self.shared_run_queue && !self.procs[pid as usize].allowed_cpus.is_single() {
            let cpu = self.placement(pid);
            self.relocate(pid, cpu);
        }
        self.os.on_wakeup(pid);
        self.call_hook(|hook, world, out| hook.on_wakeup(world, pid, out));
    }

    /// Who the node's network interface saw running on `cpu` at its last sample (once per
    /// [`World::running_sample_period`], at the node's own phase); `None` for idle, or when more switches than the
    /// history holds happened since (then the interface is taken to see someone else and interrupts).
    fn sampled_running(&self, node: u32, cpu: u32) -> Option<u32> {
        let now = self.engine.now();
        let phase = self.sample_phase[node as usize];
        if now < phase {
            return None;
        }
        let sample_at = now - (now - phase) % self.running_sample_period();
        let c = &self.cpus[cpu as usize];
        // Newest first: the latest switch at or before the sample is who the sample saw.
        (1..=SWITCH_HISTORY)
            .map(|back| c.history[(c.history_next + SWITCH_HISTORY - back) % SWITCH_HISTORY])
            .find(|&(at, _)| at <= sample_at)
            .and_then(|(_, pid)| (pid != IDLE).then_some(pid))
    }

    /// How often the network interface reads the running thread: [`RUNNING_SAMPLE_PERIOD`] (seed `000`'s
    /// firmware), or the platform's own ([`crate::os::OsModelParameters::nic_scan`]: NT's `nic_scan_us`).
    fn running_sample_period(&self) -> Nanos {
        self.scenario
            .os
            .parameters()
            .nic_scan()
            .unwrap_or(RUNNING_SAMPLE_PERIOD)
    }

    fn io_done(&mut self, pid: u32) {
        let p = &mut self.procs[pid as usize];
        if p.status != Status::BlockedOnIo {
            return; // it finished: its last I/O ends with it
        }
        p.status = Status::Runnable;
        self.wake(pid);
        self.carry_out_commands();
        let cpu = self.procs[pid as usize].cpu;
        self.preempt_where_needed(cpu);
    }

    fn update(&mut self, node: u32) {
        let per_node = self.scenario.cpus_per_node;
        let cpus = node * per_node..(node + 1) * per_node;
        // Running processes are accounted first, so a quantum that ended exactly now is seen as expired.
        self.os.periodic_update(cpus.clone());
        self.call_hook(|hook, world, out| hook.on_tick(world, node, out));
        self.carry_out_commands();
        self.updates += 1;
        for cpu in cpus {
            self.preempt_if_needed(cpu, false);
        }
        if let Some(period) = self.os.update_period() {
            self.engine
                .schedule(self.engine.now() + period, Event::Update { node });
        }
    }

    /// The system's own threads take `cpu` for an exponential draw of the mean burst (a burst that starts while
    /// one lasts extends it): the running process is preempted, the CPU serviced again when the burst is over;
    /// the next burst is drawn.
    fn system_burst(&mut self, cpu: u32) {
        let (interval, burst) = self
            .system
            .expect("bursts are scheduled only with system activity");
        let now = self.engine.now();
        let held_until = self.cpus[cpu as usize].system_until.max(now);
        let until = held_until + self.engine.exponential(burst).max(1);
        self.system_bursts += 1;
        self.system_ns += until - held_until;
        self.cpus[cpu as usize].system_until = until;
        if self.cpus[cpu as usize].running.is_some() {
            self.account(cpu);
            self.leave(cpu, Leave::Preempted);
        }
        self.engine.schedule(until, Event::SystemEnd { cpu });
        let next = now + self.engine.exponential(interval).max(1);
        self.engine.schedule(next, Event::SystemBurst { cpu });
    }

    fn hook_timer(&mut self, node: u32, timer: Timer) {
        self.call_hook(|hook, world, out| hook.on_timer(world, node, timer, out));
        self.carry_out_commands();
        if timer == Timer::Periodic {
            if let Some(periodic) = self.hook.periodic_timer() {
                let next = self.engine.now() + periodic.period.max(1);
                self.engine.schedule(next, Event::HookTick { node });
            }
        }
    }

    // ----- the hook and its commands -----

    /// Calls the hook with a view of the world; what it pushes waits in `self.commands`.
    fn call_hook(
        &mut self,
        call: impl FnOnce(&mut dyn CoschedHook, &dyn WorldView, &mut Commands),
    ) {
        let view = View {
            now: self.engine.now(),
            scenario: self.scenario,
            procs: &self.procs,
            cpus: &self.cpus,
            jobs: &self.jobs,
            os: &self.os,
            min_quantum: self.min_quantum,
        };
        call(self.hook.as_mut(), &view, &mut self.commands);
    }

    /// Carries out the hook's commands in order (and any a job start pushes meanwhile).
    fn carry_out_commands(&mut self) {
        while !self.commands.is_empty() {
            let mut batch = std::mem::take(&mut self.carrying_out);
            self.commands.drain_into(&mut batch);
            for &command in &batch {
                if self.carry_out(command) {
                    self.hook.on_carried_out(self.engine.now(), &command);
                } else {
                    self.commands_moot += 1;
                }
            }
            batch.clear();
            self.carrying_out = batch;
        }
    }

    /// Carries out one command; `false` when it is moot (see [`crate::hook`]).
    fn carry_out(&mut self, command: Command) -> bool {
        let now = self.engine.now();
        let live = |procs: &[Process], pid: u32| {
            procs
                .get(pid as usize)
                .is_some_and(|p| !matches!(p.status, Status::NotStarted | Status::Done))
        };
        match command {
            Command::BoostToMax { pid } => {
                let Some(p) = self.procs.get(pid as usize) else {
                    return false;
                };
                let cpu = p.cpu;
                if p.status != Status::Runnable || self.cpus[cpu as usize].running == Some(pid) {
                    return false;
                }
                self.boosts_granted += 1;
                self.os.boost_to_max(pid);
                if self.shared_run_queue {
                    // The model marked the CPU to preempt, unless an idle CPU of the node picks it up.
                    self.preempt_where_needed(cpu);
                } else {
                    self.preempt_if_needed(cpu, true);
                }
            }
            Command::RefuseBoost { .. } => self.boosts_refused += 1,
            Command::SetPriorityBonus { pid, bonus } => {
                if !live(&self.procs, pid) {
                    return false;
                }
                let done = self.os.set_priority_bonus(pid, bonus);
                self.expect_supported(done);
                if self.procs[pid as usize].status == Status::Runnable {
                    self.preempt_where_needed(self.procs[pid as usize].cpu);
                }
            }
            Command::SetQuantum { pid, quantum } => {
                if !live(&self.procs, pid) {
                    return false;
                }
                let done = self.os.set_quantum(pid, quantum);
                self.expect_supported(done);
            }
            Command::Migrate { pid, cpu } => {
                let per_node = self.scenario.cpus_per_node;
                if !live(&self.procs, pid) || cpu / per_node != self.procs[pid as usize].node {
                    return false;
                }
                self.procs[pid as usize].allowed_cpus = CpuSet::single(cpu % per_node);
                self.move_to(pid, cpu);
            }
            Command::RestrictToCpus { pid, cpus } => {
                let per_node = self.scenario.cpus_per_node;
                if !live(&self.procs, pid) || cpus.is_empty() || cpus.iter().any(|k| k >= per_node)
                {
                    return false;
                }
                let p = &mut self.procs[pid as usize];
                p.allowed_cpus = cpus;
                if !cpus.contains(p.cpu % per_node) {
                    let cpu = self.placement(pid);
                    self.move_to(pid, cpu);
                }
            }
            Command::SetGoodnessFreq { pid, params } => {
                if !live(&self.procs, pid) {
                    return false;
                }
                let done = self.os.set_goodness_freq(pid, params);
                self.expect_supported(done);
            }
            Command::ArmTimer { node, at, token } => {
                if node >= self.scenario.nodes {
                    return false;
                }
                self.engine
                    .schedule(at.max(now), Event::HookTimer { node, token });
            }
        }
        true
    }

    /// An OS operation the hook needed but did not declare ([`CoschedHook::operations`]) is a bug in the hook.
    fn expect_supported(&self, done: Result<(), Unsupported>) {
        if let Err(e) = done {
            panic!(
                "policy '{}' used an operation it does not declare in CoschedHook::operations: {e}",
                self.hook.name()
            );
        }
    }

    /// The CPU a process allowed on several CPUs goes to (the placement rule of the module doc).
    fn placement(&self, pid: u32) -> u32 {
        let p = &self.procs[pid as usize];
        let first = p.node * self.scenario.cpus_per_node;
        let load = |cpu: u32| {
            self.os.run_queue_len(cpu) + u32::from(self.cpus[cpu as usize].running.is_some())
        };
        p.allowed_cpus
            .iter()
            .map(|k| first + k)
            .min_by_key(|&cpu| (load(cpu), cpu != p.cpu, cpu))
            .expect("an allowed set is never empty")
    }

    /// Moves the queued or sleeping `pid` to `cpu`, in the OS model and in the world.
    fn relocate(&mut self, pid: u32, cpu: u32) {
        if self.procs[pid as usize].cpu != cpu {
            let done = self.os.migrate(pid, cpu);
            self.expect_supported(done);
            self.procs[pid as usize].cpu = cpu;
        }
    }

    /// Moves the live `pid` to `cpu` of its node: a running process leaves its CPU first (preempted), a
    /// queued one goes to `cpu`'s run queue, a sleeping one will wake there.
    fn move_to(&mut self, pid: u32, cpu: u32) {
        let from = self.procs[pid as usize].cpu;
        if from == cpu {
            return;
        }
        let was_running = self.cpus[from as usize].running == Some(pid);
        if was_running {
            self.account(from);
            self.leave(from, Leave::Preempted);
        }
        self.relocate(pid, cpu);
        if was_running {
            self.service(from);
        }
        if self.procs[pid as usize].status == Status::Runnable {
            self.preempt_if_needed(cpu, false);
        }
    }

    // ----- results -----

    fn finish(mut self) -> (SimOutput, Option<Trace>) {
        let end = self.engine.now();
        for cpu in 0..self.cpus.len() as u32 {
            self.account(cpu);
            let c = self.cpus[cpu as usize];
            if let (Some(pid), Some(trace)) = (c.running, &mut self.trace) {
                trace.intervals.push(RunInterval {
                    cpu,
                    pid,
                    start_ns: c.dispatched_at,
                    end_ns: end,
                });
            }
        }
        let mixed_window = match &self.scenario.workload {
            Workload::Mixed { batch: false, .. } => self.first_job_end,
            _ => None,
        };
        let mut jobs = Vec::new();
        let mut extra = BTreeMap::new();
        for (index, job) in self.jobs.iter().enumerate() {
            let state = self.job_state[index];
            let start = state.started_at.unwrap_or(end);
            let finish = state.finished_at.unwrap_or(end);
            let response = finish.saturating_sub(start);
            let per_process: Vec<f64> = job
                .processes
                .iter()
                .map(|&pid| {
                    let p = &self.procs[pid as usize];
                    // N processes share C CPUs: over a window Te they share C × Te of CPU time.
                    let f = |cpu: Nanos, window: Nanos| {
                        fairness(
                            p.sharing,
                            cpu as f64,
                            window as f64 * f64::from(p.sharing_cpus),
                        )
                    };
                    match mixed_window {
                        Some(window) => f(self.cpu_at_first_job_end[pid as usize], window),
                        None if job.role == JobRole::Competitor => f(p.cpu_ns, end),
                        None => f(p.cpu_ns, response),
                    }
                })
                .collect();
            let (mean, min, max) = mean_min_max(&per_process);
            let cpu_total: Nanos = job
                .processes
                .iter()
                .map(|&pid| self.procs[pid as usize].cpu_ns)
                .sum();
            let (response_s, cpu_s) = if job.role == JobRole::Competitor {
                (
                    end as f64 / 1e9,
                    cpu_total as f64 / 1e9 / job.processes.len().max(1) as f64,
                )
            } else {
                (response as f64 / 1e9, cpu_total as f64 / 1e9)
            };
            if job.role == JobRole::Sequential {
                extra.insert(format!("{}.start_s", job.name), start as f64 / 1e9);
                extra.insert(format!("{}.end_s", job.name), finish as f64 / 1e9);
            }
            if job.interactive {
                // Each instance's own time, from the job's start to its end (seed `004`'s local slowdown).
                let times: Vec<f64> = job
                    .processes
                    .iter()
                    .map(|&pid| {
                        let end = self.procs[pid as usize].finished_at.unwrap_or(end);
                        end.saturating_sub(start) as f64 / 1e9
                    })
                    .collect();
                extra.insert(
                    format!("{}.mean_response_s", job.name),
                    times.iter().sum::<f64>() / times.len().max(1) as f64,
                );
            }
            if job.work_expected.is_some() && self.scenario.cache.is_some() {
                // Seed `004`'s MWT (reported with seed 004's cache model only, so the earlier seeds' results
                // stay byte for byte): the mean over the job's processes of their time waiting in receives.
                let waits: Vec<f64> = job
                    .processes
                    .iter()
                    .map(|&pid| self.procs[pid as usize].comm_wait_ns as f64 / 1e9)
                    .collect();
                extra.insert(
                    format!("{}.comm_wait_s", job.name),
                    waits.iter().sum::<f64>() / waits.len().max(1) as f64,
                );
            }
            jobs.push(JobResult {
                name: job.name.clone(),
                role: job.role,
                response_s,
                cpu_s,
                fairness: mean,
                fairness_min: min,
                fairness_max: max,
            });
        }
        let measured: Vec<MeasuredJob> = self
            .jobs
            .iter()
            .enumerate()
            .filter_map(|(index, job)| {
                let work = self.job_work[index].as_ref()?;
                let state = self.job_state[index];
                let sum = |of: fn(&Process) -> Nanos| -> Nanos {
                    job.processes
                        .iter()
                        .map(|&pid| of(&self.procs[pid as usize]))
                        .sum()
                };
                Some(MeasuredJob {
                    job: index as u32,
                    name: job.name.clone(),
                    started_ns: state.started_at,
                    finished_ns: state.finished_at,
                    work_done: work.done,
                    work_expected: job.work_expected.unwrap_or(0),
                    iteration_p50_us: work.iterations.quantile_us(0.5),
                    iteration_p99_us: work.iterations.quantile_us(0.99),
                    spin_ns: sum(|p| p.spin_ns),
                    compute_ns: sum(|p| p.compute_ns),
                })
            })
            .collect();
        // The first measured job's figures are the measurement's own; the others' go to the extras.
        let primary = measured
            .first()
            .expect("every workload has a measured parallel job");
        let primary_work = self.job_work[primary.job as usize]
            .as_ref()
            .expect("measured");
        let parallel_response = jobs[primary.job as usize].response_s;
        for other in &measured[1..] {
            other.add_to_extra(&mut extra);
        }
        extra.insert("events".into(), self.events as f64);
        extra.insert("stale_timers".into(), self.stale_timers as f64);
        extra.insert("sim_time_s".into(), end as f64 / 1e9);
        extra.insert("messages_sent".into(), self.net.sent as f64);
        extra.insert("messages_delivered".into(), self.net.delivered as f64);
        extra.insert("context_switches".into(), self.context_switches as f64);
        extra.insert("os_updates".into(), self.updates as f64);
        extra.insert(
            "dcs_no_interrupt_stale_sample".into(),
            self.sampled_running_suppressed as f64,
        );
        extra.insert("parallel_spin_s".into(), primary.spin_ns as f64 / 1e9);
        extra.insert("parallel_compute_s".into(), primary.compute_ns as f64 / 1e9);
        if self.commands_moot > 0 {
            extra.insert("hook_commands_moot".into(), self.commands_moot as f64);
        }
        if let Some(window) = mixed_window {
            extra.insert("fairness_window_s".into(), window as f64 / 1e9);
        }
        for (name, value) in self.os.counters() {
            extra.insert(name.into(), value as f64);
        }
        let iterations = &primary_work.iterations;
        // Seed 002 Figure 3: the share of round trips in the fastest bin and in the tail above 2 ms (reported on
        // the NT model only, so the earlier seeds' results stay byte for byte).
        if self.scenario.os.parameters().reports_round_trip_tail() {
            if let Some(fastest) = iterations.fraction_in_fastest_bucket() {
                extra.insert("iterations_fastest_bin_fraction".into(), fastest);
            }
            if let Some(tail) = iterations.fraction_above(TAIL_FROM) {
                extra.insert("iterations_over_2ms_fraction".into(), tail);
            }
        }
        if self.system.is_some() {
            extra.insert("os_system_bursts".into(), self.system_bursts as f64);
            extra.insert(
                "os_system_cpu_fraction".into(),
                self.system_ns as f64 / (end.max(1) as f64 * self.cpus.len() as f64),
            );
        }
        let measurement = Measurement {
            jobs,
            work_done: primary.work_done,
            work_expected: primary.work_expected,
            rate_per_s: if parallel_response > 0.0 {
                primary.work_done as f64 / parallel_response
            } else {
                0.0
            },
            rtt_p50_us: primary.iteration_p50_us,
            rtt_p99_us: primary.iteration_p99_us,
            rtt_histogram: (iterations.count() > 0).then(|| iterations.to_report()),
            boosts_granted: self.boosts_granted,
            boosts_refused: self.boosts_refused,
            reaction_p50_us: self.reactions.quantile_us(0.5),
            reaction_p99_us: self.reactions.quantile_us(0.99),
            agent_cpu_fraction: None,
            extra,
        };
        let output = SimOutput {
            measurement,
            events: self.events,
            sim_time_ns: end,
            messages_sent: self.net.sent,
            messages_delivered: self.net.delivered,
            measured_jobs: measured,
        };
        let trace = self.trace.map(|mut t| {
            t.sent = self.net.sent;
            t.end_ns = end;
            t
        });
        (output, trace)
    }
}
