//! The shared-memory multiprocessor and its schedulers — seed `001_cc73854eda2a0ea6.txt` §3–§4, assumptions in
//! `/work/shared/notes/seeds-001-004.md` §001.
//!
//! ## The machine
//! `cpus` identical CPUs (64 for the seed: an SGI Origin 2000, modelled flat, notes §5.9). Processes of MPI
//! jobs run their skeleton ([`super::apps`]); a message arrives `latency + bytes / bandwidth` after its send
//! ("latency null": shared memory). Switching a CPU to another process than the one it ran last costs
//! `context_switch_us` (a switch plus the cache refill) during which nothing progresses.
//!
//! ## The policies ([`SmpPolicy`])
//! | policy | admission | where a process runs | a receive that cannot complete |
//! |---|---|---|---|
//! | FIFO (static space sharing) | CPU manager quantum, strict FCFS, one CPU per process | its own CPU, to the end | blocks (the CPU is its own anyway) |
//! | IRIX (native time sharing) | at arrival, every job, each process at a random place in the queue | any CPU: one global FIFO queue, `slice_ms` slices, no binding | polls (SGI MPI busy-waits) for `native_spin_us`, by default the whole 100 ms slice; a shorter poll yields to the queue's next process and polls again when it next runs [A] |
//! | PB | as IRIX | as IRIX; every period the next process (round robin) that holds unconsumed messages and waits goes to the queue's front and takes a CPU whose process is spinning, if any | as IRIX |
//! | CS | quantum, FCFS, up to MPL processes per CPU ([`cosched_policy::scs::cs_placement`]) | a fixed CPU, beside processes of other jobs | BI or SB, then RR / Msg among the CPU's processes |
//! | SCS | quantum, FCFS on `ceil(P / MPL)` CPUs ([`cosched_policy::scs::admit_fcfs`]) | its rank's CPU of the job's partition ([`cosched_policy::scs::rank_slot`]); partitions shrink-all / equipartition at each quantum | BI or SB, then RR / Msg among the CPU's processes (all of its own job) |
//!
//! In CS and SCS one process per CPU is eligible at a time and runs until it blocks (notes §5.5): there is no
//! slice. The CPU manager (`cpum_quantum_ms`, 100 ms [A]) sees arrivals and completions only at its quantum.
//!
//! ## Measured
//! Per job: arrival, start, end, CPU time, time waiting in receives. Per run: makespan (first arrival to last
//! end), utilisation (CPU busy time / CPUs · makespan), fragmentation (∫ unallocated CPUs while a job waits /
//! CPUs · makespan; for CS, unused process slots / MPL), context switches, boosts, events.

use super::apps::{Skeleton, Step, Transport};
use super::jobs::JobSpec;
use crate::engine::Engine;
use cosched_policy::config::InCpuParams;
use cosched_policy::predictive::{next_to_boost, PbCandidate, PbParams};
use cosched_policy::scs::{
    admit_fcfs, assign_cpus, choose_next, cs_placement, initial_allocation, partition, rank_slot,
    Demand, LocalProcess, ScsError, Wait,
};
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
use std::collections::VecDeque;

/// The scheduler of the machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SmpPolicy {
    /// FIFO static space sharing.
    Fifo,
    /// IRIX-like native time sharing.
    Irix,
    /// IRIX plus Periodic Boost.
    PeriodicBoost(PbParams),
    /// SCS's in-CPU rules without partitions.
    Cs(InCpuParams),
    /// Self Co-Scheduling.
    Scs(InCpuParams),
}

impl SmpPolicy {
    /// The label used in tables, plots and claims: `FIFO`, `IRIX`, `PB`, `CS BI RR`, `SCS SB800 Msg`.
    pub fn label(&self) -> String {
        let in_cpu = |name: &str, p: &InCpuParams| {
            let wait = match p.wait {
                Wait::BlockImmediately => "BI".to_string(),
                Wait::SpinBlock { spin_ns } => format!("SB{}", spin_ns / MICROS),
            };
            let next = match p.next {
                cosched_policy::scs::Next::RoundRobin => "RR",
                cosched_policy::scs::Next::MostMessages => "Msg",
            };
            format!("{name} {wait} {next}")
        };
        match self {
            SmpPolicy::Fifo => "FIFO".into(),
            SmpPolicy::Irix => "IRIX".into(),
            SmpPolicy::PeriodicBoost(_) => "PB".into(),
            SmpPolicy::Cs(p) => in_cpu("CS", p),
            SmpPolicy::Scs(p) => in_cpu("SCS", p),
        }
    }

    fn is_time_sharing(&self) -> bool {
        matches!(self, SmpPolicy::Irix | SmpPolicy::PeriodicBoost(_))
    }

    /// The most processes a CPU holds under this policy, where there is one.
    pub fn mpl(&self) -> Option<u32> {
        match self {
            SmpPolicy::Fifo => Some(1),
            SmpPolicy::Cs(p) | SmpPolicy::Scs(p) => Some(p.mpl),
            SmpPolicy::Irix | SmpPolicy::PeriodicBoost(_) => None,
        }
    }
}

/// The machine's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineParams {
    pub cpus: u32,
    /// IRIX's time slice.
    pub slice_ns: Nanos,
    /// Under IRIX and PB, how long a receive polls before it yields the CPU to the global queue's next
    /// process (it stays runnable and polls again when it next runs).
    pub native_spin_ns: Nanos,
    pub context_switch_ns: Nanos,
    /// The CPU manager's quantum.
    pub cpum_quantum_ns: Nanos,
    pub transport: Transport,
    /// A run still going at this simulated time is stopped and reported as unfinished.
    pub limit_ns: Nanos,
}

impl Default for MachineParams {
    fn default() -> Self {
        MachineParams {
            cpus: 64,
            slice_ns: 100 * MILLIS,
            native_spin_ns: 100 * MILLIS,
            context_switch_ns: 20 * MICROS,
            cpum_quantum_ns: 100 * MILLIS,
            transport: Transport::default(),
            limit_ns: 100_000 * SECONDS,
        }
    }
}

/// Why a run could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    #[error("job '{job}': {source}")]
    Job { job: String, source: ScsError },
    #[error("the machine needs at least one CPU")]
    NoCpus,
}

/// One job's result.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutcome {
    pub spec: JobSpec,
    pub start_ns: Option<Nanos>,
    pub end_ns: Option<Nanos>,
    pub cpu_ns: Nanos,
    /// Σ over its processes of the time from a receive's start to its completion.
    pub blocked_ns: Nanos,
}

impl JobOutcome {
    /// Arrival to end, seconds (NaN if unfinished).
    pub fn response_s(&self) -> f64 {
        self.end_ns
            .map_or(f64::NAN, |e| (e - self.spec.arrival_ns) as f64 / 1e9)
    }

    /// Start to end, seconds (NaN if unfinished).
    pub fn run_s(&self) -> f64 {
        match (self.start_ns, self.end_ns) {
            (Some(s), Some(e)) => (e - s) as f64 / 1e9,
            _ => f64::NAN,
        }
    }

    /// The share of its processes' time from start to end spent waiting in receives.
    pub fn blocked_fraction(&self) -> f64 {
        let run = self.run_s() * 1e9 * f64::from(self.spec.procs);
        self.blocked_ns as f64 / run
    }
}

/// What one run gives back.
#[derive(Clone, Debug, PartialEq)]
pub struct SmpOutcome {
    pub jobs: Vec<JobOutcome>,
    pub makespan_s: f64,
    pub utilisation: f64,
    pub fragmentation: f64,
    pub context_switches: u64,
    pub boosts: u64,
    pub events: u64,
    /// Every job ended before the limit.
    pub finished: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    NotStarted,
    Ready,
    Running,
    Blocked,
    Finished,
}

struct Proc {
    job: u32,
    rank: u32,
    state: State,
    iteration: u32,
    step: u32,
    compute_left: Option<Nanos>,
    waiting_since: Option<Nanos>,
    mailbox: Vec<(u64, u32)>,
    unconsumed: u32,
    /// Its CPU under FIFO, CS and SCS.
    home: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    Idle,
    Switching,
    Computing { end_of_step: Nanos },
    Spinning,
}

struct Cpu {
    running: Option<u32>,
    last_ran: Option<u32>,
    activity: Activity,
    since: Nanos,
    generation: u64,
    slice_end: Nanos,
    /// Processes homed here, in the order RR walks them.
    local: Vec<u32>,
    /// Index in `local` of the process that ran last.
    cursor: usize,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    CpuTimer { cpu: u32, generation: u64 },
    Deliver { pid: u32, tag: u64 },
    Arrive { job: u32 },
    CpumTick,
    PbTick,
}

struct Job {
    spec: JobSpec,
    skeleton: Skeleton,
    first_pid: u32,
    initial: u32,
    start_ns: Option<Nanos>,
    end_ns: Option<Nanos>,
    procs_left: u32,
    cpu_ns: Nanos,
    blocked_ns: Nanos,
    /// Its partition (FIFO, SCS) or its ranks' CPUs (CS).
    cpus: Vec<u32>,
}

struct Machine<'a> {
    params: &'a MachineParams,
    policy: SmpPolicy,
    engine: Engine<Event>,
    jobs: Vec<Job>,
    procs: Vec<Proc>,
    cpus: Vec<Cpu>,
    global_queue: VecDeque<u32>,
    /// Arrived jobs waiting for the CPU manager, in arrival order.
    waiting: VecDeque<u32>,
    /// Started jobs not yet retired by the CPU manager, in start order.
    running: Vec<u32>,
    jobs_left: usize,
    busy_ns: Nanos,
    fragmentation_area: f64,
    last_tick: Nanos,
    context_switches: u64,
    boosts: u64,
    last_boosted: Option<usize>,
    events: u64,
}

/// Runs `jobs` on the machine under `policy`. The same inputs and seed always give the same outcome.
pub fn run(
    params: &MachineParams,
    policy: SmpPolicy,
    jobs: &[JobSpec],
    seed: u64,
) -> Result<SmpOutcome, SmpError> {
    if params.cpus == 0 {
        return Err(SmpError::NoCpus);
    }
    let mpl = policy.mpl().unwrap_or(1);
    let mut machine_jobs = Vec::with_capacity(jobs.len());
    let mut procs = Vec::new();
    for (index, spec) in jobs.iter().enumerate() {
        // Every job must fit the machine at one CPU per process (FIFO, the reference, needs it; CS places one
        // rank per CPU); SCS then starts it on ceil(P / MPL) CPUs.
        let job_error = |source| SmpError::Job {
            job: spec.name.clone(),
            source,
        };
        let dedicated = initial_allocation(spec.procs, 1, params.cpus).map_err(job_error)?;
        let initial = match policy {
            SmpPolicy::Scs(_) => {
                initial_allocation(spec.procs, mpl, params.cpus).map_err(job_error)?
            }
            _ => dedicated,
        };
        let first_pid = procs.len() as u32;
        for rank in 0..spec.procs {
            procs.push(Proc {
                job: index as u32,
                rank,
                state: State::NotStarted,
                iteration: 0,
                step: 0,
                compute_left: None,
                waiting_since: None,
                mailbox: Vec::new(),
                unconsumed: 0,
                home: None,
            });
        }
        machine_jobs.push(Job {
            spec: spec.clone(),
            skeleton: spec.app.skeleton(spec.procs),
            first_pid,
            initial,
            start_ns: None,
            end_ns: None,
            procs_left: spec.procs,
            cpu_ns: 0,
            blocked_ns: 0,
            cpus: Vec::new(),
        });
    }
    let cpus = (0..params.cpus)
        .map(|_| Cpu {
            running: None,
            last_ran: None,
            activity: Activity::Idle,
            since: 0,
            generation: 0,
            slice_end: 0,
            local: Vec::new(),
            cursor: 0,
        })
        .collect();
    let mut m = Machine {
        params,
        policy,
        engine: Engine::new(seed),
        jobs_left: machine_jobs.len(),
        jobs: machine_jobs,
        procs,
        cpus,
        global_queue: VecDeque::new(),
        waiting: VecDeque::new(),
        running: Vec::new(),
        busy_ns: 0,
        fragmentation_area: 0.0,
        last_tick: 0,
        context_switches: 0,
        boosts: 0,
        last_boosted: None,
        events: 0,
    };
    Ok(m.simulate())
}

impl Machine<'_> {
    fn simulate(&mut self) -> SmpOutcome {
        for (index, job) in self.jobs.iter().enumerate() {
            self.engine
                .schedule(job.spec.arrival_ns, Event::Arrive { job: index as u32 });
        }
        if !self.policy.is_time_sharing() {
            self.engine.schedule(0, Event::CpumTick);
        }
        if let SmpPolicy::PeriodicBoost(pb) = self.policy {
            self.engine.schedule(pb.period_ns, Event::PbTick);
        }
        while self.jobs_left > 0 {
            let Some(event) = self.engine.next_until(self.params.limit_ns) else {
                break;
            };
            self.events += 1;
            match event {
                Event::CpuTimer { cpu, generation } => {
                    if self.cpus[cpu as usize].generation == generation {
                        self.on_timer(cpu);
                    }
                }
                Event::Deliver { pid, tag } => self.on_deliver(pid, tag),
                Event::Arrive { job } => self.on_arrive(job),
                Event::CpumTick => self.on_cpum_tick(),
                Event::PbTick => self.on_pb_tick(),
            }
        }
        self.outcome()
    }

    fn now(&self) -> Nanos {
        self.engine.now()
    }

    // ---- dispatching and running a process ----

    /// Puts `pid` on the idle `cpu`.
    fn dispatch(&mut self, cpu: u32, pid: u32) {
        let now = self.now();
        let c = &mut self.cpus[cpu as usize];
        debug_assert!(c.running.is_none());
        c.running = Some(pid);
        self.procs[pid as usize].state = State::Running;
        if let Some(i) = c.local.iter().position(|&p| p == pid) {
            c.cursor = i;
        }
        if c.last_ran != Some(pid) && self.params.context_switch_ns > 0 {
            c.last_ran = Some(pid);
            self.context_switches += 1;
            c.slice_end = now + self.params.context_switch_ns + self.params.slice_ns;
            self.set_activity(
                cpu,
                Activity::Switching,
                now + self.params.context_switch_ns,
            );
        } else {
            c.last_ran = Some(pid);
            c.slice_end = now + self.params.slice_ns;
            self.resume(cpu);
        }
    }

    /// Charges the CPU's current activity up to now to its process, and arms the next timer.
    fn set_activity(&mut self, cpu: u32, activity: Activity, timer_at: Nanos) {
        self.charge(cpu);
        let c = &mut self.cpus[cpu as usize];
        c.activity = activity;
        c.generation += 1;
        let generation = c.generation;
        if activity != Activity::Idle {
            self.engine
                .schedule(timer_at, Event::CpuTimer { cpu, generation });
        }
    }

    /// The busy time since the activity began, charged to the machine and the running process's job.
    fn charge(&mut self, cpu: u32) {
        let now = self.now();
        let c = &mut self.cpus[cpu as usize];
        let spent = now - c.since;
        c.since = now;
        if c.activity == Activity::Idle {
            return;
        }
        self.busy_ns += spent;
        if let Some(pid) = c.running {
            let job = self.procs[pid as usize].job as usize;
            self.jobs[job].cpu_ns += spent;
        }
    }

    /// Runs the process on `cpu` from where it is until a step takes time.
    fn resume(&mut self, cpu: u32) {
        let pid = self.cpus[cpu as usize]
            .running
            .expect("resume a running CPU");
        loop {
            let now = self.now();
            let (job_index, rank) = {
                let p = &self.procs[pid as usize];
                (p.job as usize, p.rank)
            };
            let job = &self.jobs[job_index];
            let body = &job.skeleton.ranks[rank as usize];
            let p = &self.procs[pid as usize];
            if p.iteration >= job.spec.iterations || body.is_empty() {
                self.finish(cpu, pid);
                return;
            }
            let step = body[p.step as usize];
            let phases = u64::from(job.skeleton.phases);
            match step {
                Step::Compute { mean_ns } => {
                    let left = match p.compute_left {
                        Some(left) => left,
                        None => {
                            let jitter = job.spec.app.jitter();
                            let u = self.engine.uniform_below(1 << 53) as f64 / (1u64 << 53) as f64;
                            (mean_ns as f64 * (1.0 + jitter * (2.0 * u - 1.0))).round() as Nanos
                        }
                    };
                    self.procs[pid as usize].compute_left = Some(left);
                    let end = now + left;
                    let timer = if self.policy.is_time_sharing() {
                        end.min(self.cpus[cpu as usize].slice_end.max(now))
                    } else {
                        end
                    };
                    self.set_activity(cpu, Activity::Computing { end_of_step: end }, timer);
                    return;
                }
                Step::Send { to, bytes, phase } => {
                    let tag = u64::from(p.iteration) * phases + u64::from(phase);
                    let to_pid = job.first_pid + to;
                    let at = now + self.params.transport.delay(bytes);
                    self.engine
                        .schedule(at, Event::Deliver { pid: to_pid, tag });
                    self.advance(pid);
                }
                Step::Recv { count, phase } => {
                    let tag = u64::from(p.iteration) * phases + u64::from(phase);
                    if self.try_consume(pid, tag, count) {
                        self.advance(pid);
                        continue;
                    }
                    if self.procs[pid as usize].waiting_since.is_none() {
                        self.procs[pid as usize].waiting_since = Some(now);
                    }
                    let spin_until = match self.policy {
                        SmpPolicy::Irix | SmpPolicy::PeriodicBoost(_) => {
                            let slice_end = self.cpus[cpu as usize].slice_end;
                            slice_end.min(now + self.params.native_spin_ns).max(now + 1)
                        }
                        SmpPolicy::Fifo => now,
                        SmpPolicy::Cs(p) | SmpPolicy::Scs(p) => now + p.wait.spin_ns(),
                    };
                    if spin_until > now {
                        self.set_activity(cpu, Activity::Spinning, spin_until);
                    } else {
                        self.block(cpu, pid);
                    }
                    return;
                }
            }
        }
    }

    /// Moves `pid` past its current step (and into its next iteration after the last).
    fn advance(&mut self, pid: u32) {
        let p = &mut self.procs[pid as usize];
        let len = self.jobs[p.job as usize].skeleton.ranks[p.rank as usize].len() as u32;
        p.compute_left = None;
        p.step += 1;
        if p.step >= len {
            p.step = 0;
            p.iteration += 1;
        }
    }

    /// Whether `count` messages tagged `tag` are in the mailbox; if so they are consumed and the wait ends.
    fn try_consume(&mut self, pid: u32, tag: u64, count: u32) -> bool {
        let now = self.now();
        let p = &mut self.procs[pid as usize];
        let Some(slot) = p.mailbox.iter().position(|&(t, n)| t == tag && n >= count) else {
            return false;
        };
        p.mailbox[slot].1 -= count;
        if p.mailbox[slot].1 == 0 {
            p.mailbox.swap_remove(slot);
        }
        p.unconsumed -= count;
        if let Some(since) = p.waiting_since.take() {
            let job = p.job as usize;
            self.jobs[job].blocked_ns += now - since;
        }
        true
    }

    /// Whether `pid` waits in a receive that its mailbox now completes.
    fn receive_ready(&self, pid: u32) -> bool {
        let p = &self.procs[pid as usize];
        let job = &self.jobs[p.job as usize];
        match job.skeleton.ranks[p.rank as usize].get(p.step as usize) {
            Some(&Step::Recv { count, phase }) => {
                let tag =
                    u64::from(p.iteration) * u64::from(job.skeleton.phases) + u64::from(phase);
                p.mailbox.iter().any(|&(t, n)| t == tag && n >= count)
            }
            _ => false,
        }
    }

    /// `pid` sleeps until its receive completes; `cpu` picks another.
    fn block(&mut self, cpu: u32, pid: u32) {
        self.procs[pid as usize].state = State::Blocked;
        self.release(cpu);
    }

    /// The running process leaves `cpu` (blocked, finished or preempted, its state already set); the CPU picks
    /// the next one.
    fn release(&mut self, cpu: u32) {
        self.set_activity(cpu, Activity::Idle, 0);
        self.cpus[cpu as usize].running = None;
        self.pick(cpu);
    }

    /// Takes the running process off `cpu`, runnable; under time sharing it joins the global queue's tail.
    fn preempt(&mut self, cpu: u32) {
        let pid = self.cpus[cpu as usize]
            .running
            .expect("preempt a running CPU");
        self.charge(cpu);
        if let Activity::Computing { end_of_step } = self.cpus[cpu as usize].activity {
            let left = end_of_step.saturating_sub(self.now());
            self.procs[pid as usize].compute_left = Some(left);
        }
        self.procs[pid as usize].state = State::Ready;
        if self.policy.is_time_sharing() {
            self.global_queue.push_back(pid);
        }
        self.set_activity(cpu, Activity::Idle, 0);
        self.cpus[cpu as usize].running = None;
    }

    /// The idle `cpu` takes its next process, if any.
    fn pick(&mut self, cpu: u32) {
        debug_assert!(self.cpus[cpu as usize].running.is_none());
        let next = if self.policy.is_time_sharing() {
            self.global_queue.pop_front()
        } else {
            let rule = match self.policy {
                SmpPolicy::Cs(p) | SmpPolicy::Scs(p) => p.next,
                _ => cosched_policy::scs::Next::RoundRobin,
            };
            let c = &self.cpus[cpu as usize];
            let view: Vec<LocalProcess> = c
                .local
                .iter()
                .map(|&pid| {
                    let p = &self.procs[pid as usize];
                    LocalProcess {
                        runnable: p.state == State::Ready,
                        unconsumed: p.unconsumed,
                    }
                })
                .collect();
            if view.is_empty() {
                None
            } else {
                choose_next(&view, c.cursor.min(view.len() - 1), rule).map(|i| c.local[i])
            }
        };
        if let Some(pid) = next {
            self.dispatch(cpu, pid);
        }
    }

    fn on_timer(&mut self, cpu: u32) {
        let now = self.now();
        let pid = self.cpus[cpu as usize]
            .running
            .expect("a timer on a running CPU");
        match self.cpus[cpu as usize].activity {
            Activity::Idle => {}
            Activity::Switching => {
                self.charge(cpu);
                self.resume(cpu);
            }
            Activity::Computing { end_of_step } if end_of_step <= now => {
                self.charge(cpu);
                self.advance(pid);
                self.resume(cpu);
            }
            Activity::Computing { .. } | Activity::Spinning => {
                if self.policy.is_time_sharing() {
                    // The slice ended, or a receive spun `native_spin` and yields: the next process in the
                    // global queue gets the CPU, if one waits.
                    if self.global_queue.is_empty() {
                        // A computing process goes on, a spinning one spins on, for a fresh slice.
                        self.charge(cpu);
                        if let Activity::Computing { end_of_step } =
                            self.cpus[cpu as usize].activity
                        {
                            self.procs[pid as usize].compute_left = Some(end_of_step - now);
                        }
                        self.cpus[cpu as usize].slice_end = now + self.params.slice_ns;
                        self.resume(cpu);
                    } else {
                        self.preempt(cpu);
                        self.pick(cpu);
                    }
                } else {
                    // SB: the spin ran out.
                    self.block(cpu, pid);
                }
            }
        }
    }

    fn on_deliver(&mut self, pid: u32, tag: u64) {
        let p = &mut self.procs[pid as usize];
        match p.mailbox.iter_mut().find(|(t, _)| *t == tag) {
            Some(slot) => slot.1 += 1,
            None => p.mailbox.push((tag, 1)),
        }
        p.unconsumed += 1;
        if !self.receive_ready(pid) {
            return;
        }
        match self.procs[pid as usize].state {
            State::Running => {
                let cpu = self
                    .cpus
                    .iter()
                    .position(|c| c.running == Some(pid))
                    .expect("a running process is on a CPU") as u32;
                if self.cpus[cpu as usize].activity == Activity::Spinning {
                    self.charge(cpu);
                    self.resume(cpu);
                }
            }
            State::Blocked => self.wake(pid),
            _ => {}
        }
    }

    /// The blocked `pid` becomes runnable: under time sharing it queues for any CPU, otherwise for its own.
    fn wake(&mut self, pid: u32) {
        self.procs[pid as usize].state = State::Ready;
        if self.policy.is_time_sharing() {
            self.global_queue.push_back(pid);
            if let Some(cpu) = self.cpus.iter().position(|c| c.running.is_none()) {
                self.pick(cpu as u32);
            }
        } else if let Some(home) = self.procs[pid as usize].home {
            if self.cpus[home as usize].running.is_none() {
                self.pick(home);
            }
        }
    }

    /// `pid` ran its last step on `cpu`.
    fn finish(&mut self, cpu: u32, pid: u32) {
        self.procs[pid as usize].state = State::Finished;
        let job = self.procs[pid as usize].job as usize;
        let now = self.now();
        let j = &mut self.jobs[job];
        j.procs_left -= 1;
        if j.procs_left == 0 {
            j.end_ns = Some(now);
            self.jobs_left -= 1;
        }
        self.release(cpu);
    }

    // ---- jobs: arrival, the CPU manager, periodic boost ----

    fn on_arrive(&mut self, job: u32) {
        if self.policy.is_time_sharing() {
            self.start_job(job as usize);
            // Each process joins the global queue at a random place: IRIX's queue is no gang, and jobs that
            // arrive together interleave.
            let first = self.jobs[job as usize].first_pid;
            for pid in first..first + self.jobs[job as usize].spec.procs {
                let at = self
                    .engine
                    .uniform_below(self.global_queue.len() as u64 + 1)
                    as usize;
                self.global_queue.insert(at, pid);
            }
            for cpu in 0..self.params.cpus {
                if self.cpus[cpu as usize].running.is_none() {
                    self.pick(cpu);
                }
            }
        } else {
            self.waiting.push_back(job);
        }
    }

    fn start_job(&mut self, job: usize) {
        let now = self.now();
        let j = &mut self.jobs[job];
        j.start_ns = Some(now);
        for pid in j.first_pid..j.first_pid + j.spec.procs {
            self.procs[pid as usize].state = State::Ready;
        }
    }

    /// The CPU manager's quantum: retire ended jobs, admit (strict FCFS), re-partition, place.
    fn on_cpum_tick(&mut self) {
        let now = self.now();
        // Fragmentation since the last tick: CPUs (CS: process slots / MPL) left unallocated while a job waited.
        if !self.waiting.is_empty() {
            let unallocated = match self.policy {
                SmpPolicy::Cs(p) => {
                    let slots = self.params.cpus * p.mpl;
                    let used: u32 = self
                        .running
                        .iter()
                        .map(|&j| self.jobs[j as usize].spec.procs)
                        .sum();
                    f64::from(slots.saturating_sub(used)) / f64::from(p.mpl)
                }
                _ => {
                    let used: usize = self
                        .running
                        .iter()
                        .map(|&j| self.jobs[j as usize].cpus.len())
                        .sum();
                    f64::from(self.params.cpus) - used as f64
                }
            };
            self.fragmentation_area += unallocated * (now - self.last_tick) as f64;
        }
        self.last_tick = now;
        let jobs = &self.jobs;
        self.running.retain(|&j| jobs[j as usize].end_ns.is_none());
        match self.policy {
            SmpPolicy::Cs(p) => self.admit_cs(p.mpl),
            _ => self.admit_and_partition(),
        }
        if self.jobs_left > 0 {
            self.engine
                .schedule(now + self.params.cpum_quantum_ns, Event::CpumTick);
        }
    }

    fn demand(&self, job: u32) -> Demand {
        let j = &self.jobs[job as usize];
        Demand {
            initial: j.initial,
            procs: j.spec.procs,
        }
    }

    /// FIFO and SCS: admit by [`admit_fcfs`]; FIFO keeps a CPU per process, SCS re-partitions by [`partition`].
    fn admit_and_partition(&mut self) {
        let running: Vec<Demand> = self.running.iter().map(|&j| self.demand(j)).collect();
        let queue: Vec<Demand> = self.waiting.iter().map(|&j| self.demand(j)).collect();
        let admitted = admit_fcfs(&running, &queue, self.params.cpus);
        for _ in 0..admitted {
            let job = self.waiting.pop_front().expect("admitted from the queue");
            self.start_job(job as usize);
            self.running.push(job);
        }
        let demands: Vec<Demand> = self.running.iter().map(|&j| self.demand(j)).collect();
        let targets = match self.policy {
            SmpPolicy::Fifo => demands.iter().map(|d| d.initial).collect(),
            _ => partition(&demands, self.params.cpus, !self.waiting.is_empty()),
        };
        let current: Vec<Vec<u32>> = self
            .running
            .iter()
            .map(|&j| self.jobs[j as usize].cpus.clone())
            .collect();
        let sets = assign_cpus(&current, &targets, self.params.cpus);
        let mut touched = Vec::new();
        for (&job, set) in self.running.clone().iter().zip(sets) {
            if self.jobs[job as usize].cpus == set {
                continue;
            }
            touched.extend_from_slice(&self.jobs[job as usize].cpus);
            touched.extend_from_slice(&set);
            let j = &self.jobs[job as usize];
            let homes: Vec<(u32, u32)> = (0..j.spec.procs)
                .map(|rank| {
                    let slot = rank_slot(rank, j.spec.procs, set.len() as u32);
                    (j.first_pid + rank, set[slot as usize])
                })
                .collect();
            self.jobs[job as usize].cpus = set;
            for (pid, home) in homes {
                self.rehome(pid, home);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        self.rebuild_local_queues(&touched);
    }

    /// CS: the queue's head starts while [`cs_placement`] finds it room; ranks join their CPUs' queues.
    fn admit_cs(&mut self, mpl: u32) {
        while let Some(&job) = self.waiting.front() {
            let mut load = vec![0u32; self.params.cpus as usize];
            for &j in &self.running {
                for &c in &self.jobs[j as usize].cpus {
                    load[c as usize] += 1;
                }
            }
            let Some(cpus) = cs_placement(&load, self.jobs[job as usize].spec.procs, mpl) else {
                break;
            };
            self.waiting.pop_front();
            self.start_job(job as usize);
            self.running.push(job);
            let first = self.jobs[job as usize].first_pid;
            for (rank, &cpu) in cpus.iter().enumerate() {
                self.rehome(first + rank as u32, cpu);
            }
            self.jobs[job as usize].cpus = cpus.clone();
            self.rebuild_local_queues(&cpus);
        }
    }

    /// Gives `pid` a new home CPU; a process running elsewhere is taken off its CPU.
    fn rehome(&mut self, pid: u32, home: u32) {
        let p = &mut self.procs[pid as usize];
        if p.home == Some(home) {
            return;
        }
        let old = p.home.replace(home);
        if p.state == State::Running {
            let cpu = old.expect("a running process has a home");
            self.preempt(cpu);
        }
    }

    /// Each CPU in `cpus` gets the unfinished processes homed on it, in pid order (rank order within a job),
    /// keeps its cursor on the process it runs, and picks one if idle.
    fn rebuild_local_queues(&mut self, cpus: &[u32]) {
        for &cpu in cpus {
            let local: Vec<u32> = self
                .procs
                .iter()
                .enumerate()
                .filter(|(_, p)| p.home == Some(cpu) && p.state != State::Finished)
                .map(|(pid, _)| pid as u32)
                .collect();
            let c = &mut self.cpus[cpu as usize];
            c.cursor = c
                .running
                .and_then(|r| local.iter().position(|&p| p == r))
                .unwrap_or(local.len().saturating_sub(1));
            c.local = local;
        }
        for &cpu in cpus {
            if self.cpus[cpu as usize].running.is_none() {
                self.pick(cpu);
            }
        }
    }

    /// Periodic Boost: the next waiting process (round robin over pids) with unconsumed messages goes to the
    /// global queue's front and takes a CPU whose process spins in a receive, if there is one.
    fn on_pb_tick(&mut self) {
        let SmpPolicy::PeriodicBoost(pb) = self.policy else {
            return;
        };
        let candidates: Vec<PbCandidate> = self
            .procs
            .iter()
            .map(|p| PbCandidate {
                unconsumed: p.unconsumed,
                waiting: p.state == State::Ready,
            })
            .collect();
        if let Some(index) = next_to_boost(&candidates, self.last_boosted) {
            self.last_boosted = Some(index);
            self.boosts += 1;
            let pid = index as u32;
            self.global_queue.retain(|&p| p != pid);
            self.global_queue.push_front(pid);
            let spinning = self
                .cpus
                .iter()
                .position(|c| c.activity == Activity::Spinning)
                .or_else(|| self.cpus.iter().position(|c| c.running.is_none()));
            if let Some(cpu) = spinning {
                if self.cpus[cpu].running.is_some() {
                    self.preempt(cpu as u32);
                }
                self.pick(cpu as u32);
            }
        }
        if self.jobs_left > 0 {
            self.engine
                .schedule(self.now() + pb.period_ns, Event::PbTick);
        }
    }

    fn outcome(&mut self) -> SmpOutcome {
        for cpu in 0..self.params.cpus {
            self.charge(cpu);
        }
        let first_arrival = self
            .jobs
            .iter()
            .map(|j| j.spec.arrival_ns)
            .min()
            .unwrap_or(0);
        let last_end = self.jobs.iter().filter_map(|j| j.end_ns).max().unwrap_or(0);
        let finished = self.jobs.iter().all(|j| j.end_ns.is_some());
        let end = if finished { last_end } else { self.now() };
        let makespan = end.saturating_sub(first_arrival) as f64;
        let capacity = f64::from(self.params.cpus) * makespan;
        SmpOutcome {
            jobs: self
                .jobs
                .iter()
                .map(|j| JobOutcome {
                    spec: j.spec.clone(),
                    start_ns: j.start_ns,
                    end_ns: j.end_ns,
                    cpu_ns: j.cpu_ns,
                    blocked_ns: j.blocked_ns,
                })
                .collect(),
            makespan_s: makespan / 1e9,
            utilisation: self.busy_ns as f64 / capacity.max(1.0),
            fragmentation: self.fragmentation_area / capacity.max(1.0),
            context_switches: self.context_switches,
            boosts: self.boosts,
            events: self.events,
            finished,
        }
    }
}
