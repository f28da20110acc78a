//! Linux 2.2 scheduler model: `counter`, `priority`, `goodness()` and epochs.
//!
//! Seed: `003_d5c4b72e5fa91aa6.txt` §2 (Algorithm 1, the fields `priority`, `counter`, "the maximum time slice
//! for a normal task with a default static priority is 210 ms") and §3 (Algorithm 2, the PRED patch), with the
//! rules checked against the 2.2 kernel's `kernel/sched.c` in `/work/shared/notes/seeds-001-004.md` (003 §2).
//!
//! ## Problem
//! Predictive coscheduling (seed `003`) is a few lines inside Linux 2.2's `goodness()`; whether it helps
//! depends on that scheduler's own rules — the epoch that makes a task whose counter ran out wait for every
//! other runnable task, the `counter/2 + priority` refill that favours sleepers, and a wake-up preemption
//! test on counters that the patch does not touch. Reproducing the seed needs that scheduler.
//!
//! ## Approach
//! One run-queue list per CPU (on the seed's uniprocessor nodes the kernel's one list is the CPU's; the
//! shared list of an SMP node is below): every runnable task, the running one included, woken
//! and new tasks inserted at the **front**; a task that is preempted keeps its place. `schedule()` scans the
//! list from the front and takes the largest goodness (strict `>`: the first found wins a tie), the task that
//! ran last evaluated first (`prev_goodness`), so it wins ties. The clock ticks every 10 ms per node (the
//! world's periodic update, at a random phase per node), and each tick charges the task running at that
//! instant — a task that blocks between two ticks is charged nothing, as on the real kernel.
//!
//! Simplifications, stated: uniprocessor nodes are the seed's (4 × Pentium II), so by default a CPU's tasks are
//! its own (no SMP `can_schedule`, no `PROC_CHANGE_PENALTY`) and the epoch refill runs over the tasks bound to
//! that CPU; no real-time tasks and no `sched_yield`; a new task starts with `counter = priority` (the paper, §2)
//! rather than half its parent's; no migration.
//!
//! ## The SMP run queue (`[os] run_queue = "shared"`)
//! An SMP 2.2 kernel keeps one list for all its CPUs. With [`OsScheduler::share_run_queue`] the model does too,
//! one list per node: `schedule()` on any CPU of the node scans the node's list, skipping tasks running on the
//! other CPUs (`can_schedule`), and goodness adds `PROC_CHANGE_PENALTY` (15) for the CPU the task last ran on
//! (`p->processor`), so a task returns to its last CPU unless another waits with 15 or more goodness to spare;
//! the picked task's CPU becomes the picking one. The epoch refills every task of the node (2.2's `for_each_task`,
//! the tasks running on the other CPUs included). A woken (or boosted) task: if a CPU of the node is idle, it is
//! left to the idle CPU (the world has an idle CPU pick at once, its last CPU first: 2.2's
//! `reschedule_idle_slow`, which prefers `p->processor` and else takes any idle CPU); else the counter test
//! `counter > current + 3` is made against the running task with the **smallest counter** on the node (its last
//! CPU first on a tie, then the lowest), and that CPU gets `need_resched`. Stated: 2.2.x makes the counter test
//! against the task running on the CPU that executes the wake-up — for a message, the CPU that takes the
//! interrupt, which the simulator does not model — and looks for an idle CPU only after that test fails; the
//! model looks for an idle CPU first (an idle CPU is never left idle while a woken task preempts a busy one)
//! and tests the CPU where the test is most likely to pass (2.4's `reschedule_idle` also searches every CPU).
//! The test is on counters and the pick on goodness, as in the kernel, so a marked CPU may pick its own task
//! again (it gets `+15 + 1`). The `related()` / `avg_slice` heuristics are left out. On a one-CPU node the
//! shared queue is the CPU's: the same model, decision for decision.
//!
//! ## Terminology
//! - `counter` — ticks left in the task's slice (0..); `priority` — its static priority, 1..=40, default 20.
//! - tick — 10 ms (`HZ = 100`): `counter -= 1`; when it would go below 0 it stays 0 and `need_resched` is set,
//!   so a fresh counter of 20 runs 21 ticks = 210 ms.
//! - `need_resched` — the CPU's flag: `schedule()` runs at the next opportunity (here: at once).
//! - `prev` — the task that left the CPU last, when it is still runnable (preempted); `schedule()` evaluates it
//!   first, and its goodness gets the kernel's `+1` for "same `mm` as prev".
//! - last CPU — `p->processor`: the CPU a task last ran on (with a queue per CPU, always its own).
//! - epoch — when the best goodness on the run queue is 0 (every runnable counter is 0), *every* task of the
//!   CPU, sleepers included, gets `counter = counter/2 + priority`; a sleeper climbs 20 → 30 → 35 → … → 39.
//! - `freq` — the PRED/DYN patch's moving average (`cosched_policy::predictive`), per task, when installed.
//! - boost — a coscheduling policy's `boost_to_max` (DCS, periodic boost): goodness 1000 (as a real-time task's,
//!   above every normal task) until the task is next picked, and `need_resched` on its CPU.
//!
//! ## Algorithm
//! ```text
//! goodness(p, prev, cpu): boosted: 1000
//!                      counter == 0: 0
//!                      else counter + priority + (1 if p is prev) + bonus + freq(p)   (freq: the PRED patch,
//!                           which samples p's socket queues: one step of its moving average per evaluation)
//!                           + 15 if the queue is shared and cpu is p's last CPU
//! schedule(cpu):       c = -1; next = none
//!                      if prev runnable: c = goodness(prev, prev, cpu); next = prev
//!                      for p in the list, front to back, not running on another CPU:
//!                          if goodness(p, prev, cpu) > c: c, next = that, p
//!                      if next and c == 0: every task of the queue: counter = counter/2 + priority; again
//!                      need_resched = false; next's last CPU = cpu
//! tick (10 ms):        running p: if counter == 0: need_resched else counter -= 1
//! wake-up(p):          p to the FRONT of the list; target = p's CPU (per-CPU queue), or with a shared
//!                      queue none if a CPU of the node is idle, else the CPU whose running task has the
//!                      smallest counter; if p.counter > target's current.counter + 3: need_resched on target
//! new task:            counter = priority; to the FRONT; the same preemption test
//! boost:               goodness 1000, to the FRONT; need_resched on the same target
//! preempt:             the world asks should_preempt = need_resched
//! ```
//!
//! ## Parameters
//! | parameter | value | source |
//! |---|---|---|
//! | tick | 10 ms (`HZ = 100`) | seed §2 fn. 1 |
//! | `priority` | 20 (`DEF_PRIORITY`), 1..=40 | seed §2 |
//! | fresh slice | (20 + 1) ticks = 210 ms | seed §2 |
//! | wake-up preemption margin | `counter > current + 3` | 2.2 `reschedule_idle` (notes, 003 §2) |
//! | last-CPU bonus, shared queue only | `PROC_CHANGE_PENALTY` = 15 | 2.2 `goodness()` on SMP, the i386 value |
//!
//! ## Quanta other than 210 ms (seed `004`, [`QuantumRule`])
//! Seed `004_3903357666129396.txt` gives tasks quanta of 0.2–12.8 s on Linux 2.2.15. A quantum `q` is the
//! counter refill: `priority = q / 10 ms` (notes 004 §2, [A]), so a 6.4 s quantum is `priority = 640` and a
//! fresh slice runs 641 ticks. STATICQ ([`QuantumRule::Static`], the seed's new system call) gives every task the
//! same `q`; DYNAMICQ ([`QuantumRule::Dynamicq`]) sets each task's `q` at every epoch of its CPU, before the
//! `counter/2 + priority` refill, by `cosched_policy::dynamicq::next_quantum` from the CPU's L2/L1 miss ratio
//! over the epoch that ended (the world's cache model reports the misses, [`OsScheduler::cache_misses`]) and
//! whether an interactive user's process lives on the CPU ([`OsScheduler::interactive_user`]). Every epoch with
//! misses counted adds its ratio to the CPU's mean, for the seed's MMR (`linux_mmr_ppm`: the mean over CPUs of
//! each CPU's mean epoch miss ratio, in parts per million).

use super::{NewScheduler, OsModelParameters, OsOperation, OsScheduler, Unsupported};
use crate::os::RunQueue;
use serde::{Deserialize, Serialize};

/// The `[os]` table of `model = "linux-2.2"`: every task's static `priority` (default 20, a 210 ms slice) and
/// how tasks get their quantum (seed `004`): 2.2's own `priority`, STATICQ or DYNAMICQ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linux22Parameters {
    #[serde(default = "default_priority")]
    pub priority: u32,
    #[serde(default, skip_serializing_if = "QuantumConfig::is_priority")]
    pub quantum: QuantumConfig,
    #[serde(default, skip_serializing_if = "RunQueue::is_per_cpu")]
    pub run_queue: RunQueue,
}

impl OsModelParameters for Linux22Parameters {
    fn run_queue(&self) -> RunQueue {
        self.run_queue
    }

    fn label(&self) -> String {
        let mut label = "linux-2.2".to_string();
        if self.priority != default_priority() {
            label += &format!(", priority={}", self.priority);
        }
        match self.quantum {
            QuantumConfig::Priority => {}
            QuantumConfig::Static { ms } => label += &format!(", STATICQ {ms} ms"),
            QuantumConfig::Dynamicq { .. } => label += ", DYNAMICQ",
        }
        label
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if let Err((param, problem)) = self.quantum.to_rule() {
            return Err((format!("quantum.{param}"), problem));
        }
        if !(1..=MAX_PRIORITY).contains(&self.priority) {
            return Err((
                "priority".into(),
                format!(
                    "{} is outside Linux 2.2's static priorities 1..=40 (default 20)",
                    self.priority
                ),
            ));
        }
        Ok(())
    }
}

impl NewScheduler for Linux22Parameters {
    type Scheduler = Linux22;
    fn new_scheduler(&self, nodes: u32, cpus_per_node: u32) -> Linux22 {
        let rule = self
            .quantum
            .to_rule()
            .expect("Scenario::validate checked the quantum rule");
        Linux22::new(nodes * cpus_per_node, self.priority).with_quantum_rule(rule)
    }
}

/// Linux 2.2's quantum rule (seed `004`; [`QuantumRule`]); the `[os]` table's `quantum = {
/// rule = "static", ms = 3200 }` or `{ rule = "dynamicq" }` (Algorithm 1's constants default to the seed's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum QuantumConfig {
    /// Every task's quantum is its static `priority` (2.2's own).
    #[default]
    Priority,
    /// STATICQ: every task's quantum is `ms`.
    Static { ms: u64 },
    /// DYNAMICQ (Algorithm 1).
    Dynamicq {
        #[serde(default = "default_max_miss_percent")]
        max_miss_percent: f64,
        #[serde(default = "default_max_slice_ms")]
        max_slice_ms: u64,
        #[serde(default = "default_quantum_ms")]
        default_quantum_ms: u64,
    },
}

fn default_max_miss_percent() -> f64 {
    9.0
}
fn default_max_slice_ms() -> u64 {
    6_400
}
fn default_quantum_ms() -> u64 {
    200
}

impl QuantumConfig {
    fn is_priority(&self) -> bool {
        *self == QuantumConfig::Priority
    }

    /// The model's rule; a bad constant comes back as the field at fault and what is wrong.
    pub fn to_rule(&self) -> Result<QuantumRule, (&'static str, String)> {
        Ok(match *self {
            QuantumConfig::Priority => QuantumRule::Priority,
            QuantumConfig::Static { ms } => {
                // An hour at most, checked before the product is formed (`ms` is the file's number).
                match ms.checked_mul(cosched_policy::MILLIS) {
                    Some(ns) if (TICK..=3_600 * cosched_policy::SECONDS).contains(&ns) => {
                        QuantumRule::Static(ns)
                    }
                    _ => {
                        return Err((
                            "ms",
                            format!(
                            "{ms} ms is outside one 10 ms tick .. an hour (the seed: 0.2–12.8 s)"
                        ),
                        ))
                    }
                }
            }
            QuantumConfig::Dynamicq {
                max_miss_percent,
                max_slice_ms,
                default_quantum_ms,
            } => {
                let params = cosched_policy::dynamicq::DynamicqParams {
                    max_miss: max_miss_percent / 100.0,
                    max_slice_ns: max_slice_ms.saturating_mul(cosched_policy::MILLIS),
                    default_quantum_ns: default_quantum_ms.saturating_mul(cosched_policy::MILLIS),
                };
                params.validate()?;
                QuantumRule::Dynamicq(params)
            }
        })
    }
}

fn default_priority() -> u32 {
    DEF_PRIORITY
}

use cosched_policy::dynamicq::{next_quantum, DynamicqParams, MissRates};
use cosched_policy::predictive::{Freq, FreqParams, SocketQueue};
use cosched_policy::{Nanos, MILLIS};

/// One clock tick (`HZ = 100`).
pub const TICK: Nanos = 10 * MILLIS;
/// `DEF_PRIORITY`: the static priority (and fresh counter) of a normal task.
pub const DEF_PRIORITY: u32 = 20;
/// The highest static priority of a normal task.
pub const MAX_PRIORITY: u32 = 40;
/// A woken task preempts the running one only if its counter is larger by more than this.
pub const WAKEUP_MARGIN: u32 = 3;
/// With a shared run queue, the goodness bonus of a task on the CPU it last ran on (2.2's `PROC_CHANGE_PENALTY`
/// on i386 SMP: "a largish advantage to the same processor").
pub const PROC_CHANGE_PENALTY: i64 = 15;
/// Goodness of a boosted task: a real-time task's `1000 + rt_priority`, above every normal task.
pub const BOOSTED_GOODNESS: i64 = 1000;
/// What [`OsScheduler::time_left`] answers: the slice ends by the tick, never by a deadline of its own.
const UNTIL_THE_TICK_SAYS: Nanos = Nanos::MAX / 4;

/// A quantum as a counter refill: `q / TICK` ticks (at least 1).
fn ticks_of(q: Nanos) -> u32 {
    (q / TICK).clamp(1, u32::MAX as Nanos / 4) as u32
}

/// How tasks get their quantum (the counter refill `priority`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QuantumRule {
    /// The static `priority` every task is created with (2.2's own rule).
    Priority,
    /// STATICQ: every task's quantum is this (`priority = q / TICK`).
    Static(Nanos),
    /// DYNAMICQ: every task starts at the default quantum, then Algorithm 1 at each epoch of its CPU.
    Dynamicq(DynamicqParams),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Queued,
    Running,
    Asleep,
    Exited,
}

#[derive(Clone, Debug)]
struct Task {
    cpu: u32,
    counter: u32,
    priority: u32,
    state: State,
    boosted: bool,
    /// A policy's static goodness bonus ([`OsScheduler::set_priority_bonus`]).
    bonus: i32,
    /// The PRED/DYN patch, when installed for this task.
    freq: Option<(FreqParams, Freq)>,
    /// The task's sockets, by peer process: bytes received and not read, bytes sent and not acknowledged.
    sockets: Vec<(u32, SocketQueue)>,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    running: Option<u32>,
    /// The last task to leave the CPU, while it is still runnable.
    prev: Option<u32>,
    need_resched: bool,
}

/// One run queue: a CPU's own, or with a shared run queue a whole node's.
#[derive(Clone, Debug, Default)]
struct Queue {
    /// The run-queue list, front first: every runnable task, the running ones included.
    list: Vec<u32>,
    /// Every task of this queue that has not exited (the epoch refills them all).
    members: Vec<u32>,
    /// L1 and L2 misses counted since the epoch began.
    epoch_l1: f64,
    epoch_l2: f64,
    /// The miss ratio of the last epoch with misses counted (`mr[n-1]` at the next epoch).
    last_miss_ratio: Option<f64>,
    /// Σ of the epochs' miss ratios and how many (the CPU's mean, for MMR).
    miss_ratio_sum: f64,
    miss_ratio_epochs: u64,
}

/// The Linux 2.2 scheduler for all CPUs of a simulated cluster.
#[derive(Clone, Debug)]
pub struct Linux22 {
    priority: u32,
    tasks: Vec<Task>,
    cpus: Vec<Cpu>,
    /// The run queues: CPU `c` picks from queue `c / cpus_per_queue`.
    queues: Vec<Queue>,
    /// 1: a run queue per CPU; a node's CPU count: one per node ([`OsScheduler::share_run_queue`]).
    cpus_per_queue: u32,
    /// The largest socket buffer one socket's `rmem` / `wmem` may hold (`SK_RMEM_MAX`, `SK_WMEM_MAX`).
    socket_buffer: u64,
    epochs: u64,
    wakeup_preemptions: u64,
    slices_used_up: u64,
    freq_evaluations: u64,
    quantum_rule: QuantumRule,
    /// Tasks that are an interactive user's (seed `004`'s INTERACTIVE_USER).
    interactive: Vec<u32>,
    quanta_doubled: u64,
    quanta_halved: u64,
    quanta_reset: u64,
}

/// The 2.2 default socket buffer (`SK_RMEM_MAX` = `SK_WMEM_MAX` = 65535 bytes): the most a socket holds, so
/// a larger message counts at most this much on each side (the rest is still in flight, held back by TCP's
/// window).
pub const SOCKET_BUFFER_BYTES: u64 = 65_535;

impl Linux22 {
    /// A scheduler for `cpus` CPUs whose tasks have static priority `priority` (1..=40).
    pub fn new(cpus: u32, priority: u32) -> Self {
        Linux22 {
            priority: priority.clamp(1, MAX_PRIORITY),
            tasks: Vec::new(),
            cpus: (0..cpus).map(|_| Cpu::default()).collect(),
            queues: (0..cpus).map(|_| Queue::default()).collect(),
            cpus_per_queue: 1,
            socket_buffer: SOCKET_BUFFER_BYTES,
            epochs: 0,
            wakeup_preemptions: 0,
            slices_used_up: 0,
            freq_evaluations: 0,
            quantum_rule: QuantumRule::Priority,
            interactive: Vec::new(),
            quanta_doubled: 0,
            quanta_halved: 0,
            quanta_reset: 0,
        }
    }

    /// The same scheduler whose tasks get their quanta by `rule` (seed `004`).
    pub fn with_quantum_rule(mut self, rule: QuantumRule) -> Self {
        self.quantum_rule = rule;
        self
    }

    /// A new task's `priority` under the quantum rule.
    fn initial_priority(&self) -> u32 {
        match self.quantum_rule {
            QuantumRule::Priority => self.priority,
            QuantumRule::Static(q) => ticks_of(q),
            QuantumRule::Dynamicq(p) => ticks_of(p.default_quantum_ns),
        }
    }

    /// The quantum `pid` gets at its next refill (`priority` ticks).
    pub fn quantum(&self, pid: u32) -> Nanos {
        self.tasks[pid as usize].priority as Nanos * TICK
    }

    /// MMR: the mean over run queues (CPUs; nodes with a shared run queue) that counted misses of each one's
    /// mean epoch miss ratio; the epoch in progress counts as one (a run ends inside it: a short run may have no
    /// completed epoch).
    pub fn mean_miss_ratio(&self) -> Option<f64> {
        let per_cpu: Vec<f64> = self
            .queues
            .iter()
            .filter_map(|c| {
                let open = (c.epoch_l1 > 0.0).then(|| c.epoch_l2 / c.epoch_l1);
                let epochs = c.miss_ratio_epochs + u64::from(open.is_some());
                (epochs > 0).then(|| (c.miss_ratio_sum + open.unwrap_or(0.0)) / epochs as f64)
            })
            .collect();
        (!per_cpu.is_empty()).then(|| per_cpu.iter().sum::<f64>() / per_cpu.len() as f64)
    }

    /// `counter` of `pid` (for tests and logs).
    pub fn counter(&self, pid: u32) -> u32 {
        self.tasks[pid as usize].counter
    }

    /// The PRED/DYN moving average of `pid`, if the patch is installed for it.
    pub fn freq(&self, pid: u32) -> Option<u64> {
        self.tasks[pid as usize].freq.map(|(_, f)| f.value)
    }

    /// The run queue `cpu` picks from.
    fn queue_of(&self, cpu: usize) -> usize {
        cpu / self.cpus_per_queue as usize
    }

    /// The CPUs that pick from queue `queue`.
    fn cpus_of(&self, queue: usize) -> std::ops::Range<usize> {
        let per = self.cpus_per_queue as usize;
        queue * per..(queue + 1) * per
    }

    /// `goodness(p, prev, cpu)` for a pick on `cpu`; advances `p`'s moving average when the patch is installed
    /// and its counter is > 0.
    fn goodness(&mut self, pid: u32, prev: Option<u32>, cpu: usize) -> i64 {
        let buffer = self.socket_buffer;
        let shared = self.cpus_per_queue > 1;
        let t = &mut self.tasks[pid as usize];
        if t.boosted {
            return BOOSTED_GOODNESS;
        }
        if t.counter == 0 {
            return 0;
        }
        let mut weight = t.counter as i64 + t.priority as i64 + t.bonus as i64;
        if shared && t.cpu as usize == cpu {
            weight += PROC_CHANGE_PENALTY;
        }
        if prev == Some(pid) {
            weight += 1;
        }
        if let Some((params, freq)) = &mut t.freq {
            // The kernel's socket buffers hold at most `buffer` bytes each way.
            let sockets: Vec<SocketQueue> = t
                .sockets
                .iter()
                .map(|(_, s)| SocketQueue {
                    rmem: s.rmem.min(buffer),
                    wmem: s.wmem.min(buffer),
                })
                .collect();
            weight += freq.evaluate(t.counter, &sockets, *params) as i64;
            self.freq_evaluations += 1;
        }
        weight
    }

    /// The CPU whose running task the runnable `pid` is weighed against (`reschedule_idle`): its own CPU with a
    /// run queue per CPU. With a shared run queue, `None` while a CPU of the node is idle (the world gives an
    /// idle CPU its next task at once, and the pick favours `pid` on its last CPU); else the CPU running the task
    /// with the smallest counter, `pid`'s last CPU first on a tie, then the lowest.
    fn preemption_target(&self, pid: u32) -> Option<usize> {
        let own = self.tasks[pid as usize].cpu as usize;
        if self.cpus_per_queue == 1 {
            return Some(own);
        }
        let counter_running = |cpu: usize| {
            self.cpus[cpu]
                .running
                .map(|current| self.tasks[current as usize].counter)
        };
        let cpus = self.cpus_of(self.queue_of(own));
        if cpus.clone().any(|cpu| counter_running(cpu).is_none()) {
            return None;
        }
        cpus.min_by_key(|&cpu| (counter_running(cpu), cpu != own, cpu))
    }

    /// `reschedule_idle` for the task `pid` just put on its queue's list.
    fn reschedule_idle(&mut self, pid: u32) {
        let Some(cpu) = self.preemption_target(pid) else {
            return;
        };
        if let Some(current) = self.cpus[cpu].running {
            let woken = &self.tasks[pid as usize];
            if woken.boosted || woken.counter > self.tasks[current as usize].counter + WAKEUP_MARGIN
            {
                if !self.cpus[cpu].need_resched {
                    self.wakeup_preemptions += 1;
                }
                self.cpus[cpu].need_resched = true;
            }
        }
    }

    fn remove_from_list(&mut self, pid: u32) {
        let queue = self.queue_of(self.tasks[pid as usize].cpu as usize);
        let list = &mut self.queues[queue].list;
        if let Some(at) = list.iter().position(|&p| p == pid) {
            list.remove(at);
        }
    }

    /// The task left its CPU and stays runnable: it keeps its place on the list and is `prev`.
    fn left_runnable(&mut self, pid: u32) {
        let t = &mut self.tasks[pid as usize];
        t.state = State::Queued;
        let cpu = t.cpu as usize;
        self.cpus[cpu].running = None;
        self.cpus[cpu].prev = Some(pid);
    }

    /// The epoch of run queue `queue`: the epoch's miss ratio is recorded and, under DYNAMICQ, every task's
    /// quantum set by Algorithm 1; then every task of the queue, sleepers (and, on a shared queue, the tasks
    /// running on the node's other CPUs) included, gets `counter = counter/2 + priority`.
    fn recalculate(&mut self, queue: usize) {
        let c = &mut self.queues[queue];
        let miss = (c.epoch_l1 > 0.0).then(|| {
            let current = c.epoch_l2 / c.epoch_l1;
            let rates = MissRates {
                previous: c.last_miss_ratio,
                current,
            };
            c.last_miss_ratio = Some(current);
            c.miss_ratio_sum += current;
            c.miss_ratio_epochs += 1;
            rates
        });
        c.epoch_l1 = 0.0;
        c.epoch_l2 = 0.0;
        if let (QuantumRule::Dynamicq(params), Some(miss)) = (self.quantum_rule, miss) {
            let interactive_user = self.queues[queue]
                .members
                .iter()
                .any(|pid| self.interactive.contains(pid));
            for &pid in &self.queues[queue].members {
                let t = &mut self.tasks[pid as usize];
                let q = t.priority as Nanos * TICK;
                let next = next_quantum(q, miss, interactive_user, &params);
                match next.cmp(&q) {
                    _ if interactive_user && next != q => self.quanta_reset += 1,
                    std::cmp::Ordering::Greater => self.quanta_doubled += 1,
                    std::cmp::Ordering::Less => self.quanta_halved += 1,
                    std::cmp::Ordering::Equal => {}
                }
                t.priority = ticks_of(next);
            }
        }
        for &pid in &self.queues[queue].members {
            let t = &mut self.tasks[pid as usize];
            t.counter = t.counter / 2 + t.priority;
        }
        self.epochs += 1;
    }
}

impl OsScheduler for Linux22 {
    fn name(&self) -> &'static str {
        "linux-2.2"
    }

    fn min_quantum(&self) -> Nanos {
        // A fresh slice: counter = priority runs priority + 1 ticks.
        (self.priority as Nanos + 1) * TICK
    }

    fn update_period(&self) -> Option<Nanos> {
        Some(TICK)
    }

    fn admit(&mut self, pid: u32, cpu: u32) {
        let priority = self.initial_priority();
        let task = Task {
            cpu,
            counter: priority,
            priority,
            state: State::Queued,
            boosted: false,
            bonus: 0,
            freq: None,
            sockets: Vec::new(),
        };
        if pid as usize >= self.tasks.len() {
            let mut placeholder = task.clone();
            placeholder.state = State::Exited;
            self.tasks.resize(pid as usize + 1, placeholder);
        }
        self.tasks[pid as usize] = task;
        let queue = self.queue_of(cpu as usize);
        let q = &mut self.queues[queue];
        q.members.push(pid);
        q.list.insert(0, pid);
        self.reschedule_idle(pid);
    }

    fn pick_next(&mut self, cpu: u32) -> Option<u32> {
        let cpu = cpu as usize;
        let queue = self.queue_of(cpu);
        // prev: still runnable, and not picked by another CPU of a shared queue since.
        let prev = self.cpus[cpu].prev.filter(|&p| {
            let t = &self.tasks[p as usize];
            t.state == State::Queued && t.cpu as usize == cpu
        });
        loop {
            let mut best: Option<(i64, u32)> = None;
            if let Some(p) = prev {
                best = Some((self.goodness(p, prev, cpu), p));
            }
            for i in 0..self.queues[queue].list.len() {
                let p = self.queues[queue].list[i];
                // `can_schedule`: a task running on another CPU of a shared queue is no candidate.
                if self.tasks[p as usize].state != State::Queued {
                    continue;
                }
                let w = self.goodness(p, prev, cpu);
                match best {
                    Some((c, _)) if w <= c => {}
                    _ => best = Some((w, p)),
                }
            }
            let (c, next) = best?;
            if c == 0 {
                self.recalculate(queue);
                continue;
            }
            let t = &mut self.tasks[next as usize];
            t.state = State::Running;
            t.boosted = false;
            t.cpu = cpu as u32;
            let c = &mut self.cpus[cpu];
            c.running = Some(next);
            c.prev = None;
            c.need_resched = false;
            return Some(next);
        }
    }

    fn time_left(&self, _pid: u32) -> Nanos {
        UNTIL_THE_TICK_SAYS
    }

    fn on_preempt(&mut self, pid: u32, _ran: Nanos) {
        self.left_runnable(pid);
    }

    fn on_quantum_expiry(&mut self, pid: u32) {
        self.left_runnable(pid);
    }

    fn on_block(&mut self, pid: u32, _ran: Nanos) {
        self.remove_from_list(pid);
        let t = &mut self.tasks[pid as usize];
        t.state = State::Asleep;
        t.boosted = false;
        let c = &mut self.cpus[t.cpu as usize];
        c.running = None;
        c.prev = None;
    }

    fn on_exit(&mut self, pid: u32, _ran: Nanos) {
        self.remove_from_list(pid);
        let t = &mut self.tasks[pid as usize];
        t.state = State::Exited;
        let cpu = t.cpu as usize;
        let c = &mut self.cpus[cpu];
        c.running = None;
        c.prev = None;
        let queue = self.queue_of(cpu);
        self.queues[queue].members.retain(|&p| p != pid);
    }

    fn on_wakeup(&mut self, pid: u32) {
        debug_assert_eq!(
            self.tasks[pid as usize].state,
            State::Asleep,
            "only a sleeper wakes up"
        );
        self.tasks[pid as usize].state = State::Queued;
        let queue = self.queue_of(self.tasks[pid as usize].cpu as usize);
        self.queues[queue].list.insert(0, pid);
        self.reschedule_idle(pid);
    }

    fn boost_to_max(&mut self, pid: u32) {
        debug_assert_eq!(self.tasks[pid as usize].state, State::Queued);
        self.remove_from_list(pid);
        let t = &mut self.tasks[pid as usize];
        t.boosted = true;
        let cpu = t.cpu as usize;
        let queue = self.queue_of(cpu);
        self.queues[queue].list.insert(0, pid);
        if let Some(cpu) = self.preemption_target(pid) {
            self.cpus[cpu].need_resched = true;
        }
    }

    fn periodic_update(&mut self, cpus: std::ops::Range<u32>) {
        for cpu in cpus {
            let c = &mut self.cpus[cpu as usize];
            let Some(pid) = c.running else { continue };
            let t = &mut self.tasks[pid as usize];
            if t.counter == 0 {
                if !c.need_resched {
                    self.slices_used_up += 1;
                }
                c.need_resched = true;
            } else {
                t.counter -= 1;
            }
        }
    }

    fn should_preempt(&self, cpu: u32, _running: u32) -> bool {
        self.cpus[cpu as usize].need_resched
    }

    fn run_queue_len(&self, cpu: u32) -> u32 {
        let queue = self.queue_of(cpu as usize);
        let list = &self.queues[queue].list;
        let running = self
            .cpus_of(queue)
            .filter(|&c| self.cpus[c].running.is_some_and(|r| list.contains(&r)))
            .count();
        (list.len() - running) as u32
    }

    fn priority(&self, pid: u32) -> u32 {
        let t = &self.tasks[pid as usize];
        if t.counter == 0 {
            0
        } else {
            t.counter + t.priority
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut counters = vec![
            ("linux_epochs", self.epochs),
            ("linux_wakeup_preemptions", self.wakeup_preemptions),
            ("linux_slices_used_up", self.slices_used_up),
            ("linux_freq_evaluations", self.freq_evaluations),
        ];
        if let Some(mmr) = self.mean_miss_ratio() {
            counters.push(("linux_mmr_ppm", (mmr * 1e6).round() as u64));
        }
        if let QuantumRule::Dynamicq(_) = self.quantum_rule {
            counters.push(("dynamicq_doubled", self.quanta_doubled));
            counters.push(("dynamicq_halved", self.quanta_halved));
            counters.push(("dynamicq_reset", self.quanta_reset));
        }
        counters
    }

    fn cache_misses(&mut self, cpu: u32, l1: f64, l2: f64) {
        let queue = self.queue_of(cpu as usize);
        let c = &mut self.queues[queue];
        c.epoch_l1 += l1;
        c.epoch_l2 += l2;
    }

    fn interactive_user(&mut self, pid: u32) {
        if !self.interactive.contains(&pid) {
            self.interactive.push(pid);
        }
    }

    fn supports(&self, operation: OsOperation) -> bool {
        matches!(
            operation,
            OsOperation::SetPriorityBonus | OsOperation::GoodnessFreq | OsOperation::SharedRunQueue
        )
    }

    fn share_run_queue(&mut self, cpus_per_node: u32) -> Result<(), Unsupported> {
        let cpus = self.cpus.len() as u32;
        assert!(
            self.tasks.is_empty() && cpus_per_node >= 1 && cpus.is_multiple_of(cpus_per_node),
            "share_run_queue: before any task, with {cpus} CPUs in whole nodes of {cpus_per_node}"
        );
        self.cpus_per_queue = cpus_per_node;
        self.queues = (0..cpus / cpus_per_node)
            .map(|_| Queue::default())
            .collect();
        Ok(())
    }

    fn set_priority_bonus(&mut self, pid: u32, bonus: i32) -> Result<(), Unsupported> {
        self.tasks[pid as usize].bonus = bonus;
        Ok(())
    }

    fn set_goodness_freq(&mut self, pid: u32, params: FreqParams) -> Result<(), Unsupported> {
        self.tasks[pid as usize].freq = Some((params, Freq::default()));
        Ok(())
    }

    fn socket_bytes(&mut self, pid: u32, peer: u32, rmem_delta: i64, wmem_delta: i64) {
        let Some(t) = self.tasks.get_mut(pid as usize) else {
            return;
        };
        let at = match t.sockets.iter().position(|&(p, _)| p == peer) {
            Some(at) => at,
            None => {
                t.sockets.push((peer, SocketQueue::default()));
                t.sockets.len() - 1
            }
        };
        let s = &mut t.sockets[at].1;
        s.rmem = s.rmem.saturating_add_signed(rmem_delta);
        s.wmem = s.wmem.saturating_add_signed(wmem_delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_policy::predictive::FreqParams;

    /// One CPU with tasks 0..n admitted in order (so the list is n-1, ..., 0, front first).
    fn cpu_with(n: u32) -> Linux22 {
        let mut os = Linux22::new(1, DEF_PRIORITY);
        for pid in 0..n {
            os.admit(pid, 0);
        }
        os
    }

    /// Runs the current task for `ticks` ticks.
    fn ticks(os: &mut Linux22, ticks: u32) {
        for _ in 0..ticks {
            os.periodic_update(0..1);
        }
    }

    #[test]
    fn a_fresh_slice_runs_21_ticks() {
        // counter 20: ticks 1..20 take it to 0, still running; tick 21 finds 0 → need_resched. 21 × 10 = 210 ms.
        let mut os = cpu_with(2);
        let first = os.pick_next(0).unwrap();
        ticks(&mut os, 20);
        assert_eq!(os.counter(first), 0);
        assert!(!os.should_preempt(0, first));
        ticks(&mut os, 1);
        assert!(os.should_preempt(0, first));
        assert_eq!(os.min_quantum(), 210 * MILLIS);
    }

    #[test]
    fn the_front_of_the_list_wins_a_tie_and_prev_wins_its_own() {
        // Admitted 0, 1, 2 → list [2, 1, 0]; all goodness 20 + 20 = 40: the front, 2, runs.
        let mut os = cpu_with(3);
        assert_eq!(os.pick_next(0), Some(2));
        // 2 runs 5 ticks (counter 15, goodness 35 + 1 as prev = 36) and is preempted: 1 and 0 have 40 → 1
        // (ahead of 0 on the list).
        ticks(&mut os, 5);
        os.on_preempt(2, 50 * MILLIS);
        assert_eq!(os.pick_next(0), Some(1));
        // 1 is preempted at once (counter 20, goodness 40 + 1 as prev = 41 > 0's 40): 1 again.
        os.on_preempt(1, 0);
        assert_eq!(os.pick_next(0), Some(1));
    }

    #[test]
    fn the_epoch_refills_every_task_sleepers_included() {
        // Task 0 asleep with counter 20; task 1 runnable and out of slice (counter 0). schedule(): the best
        // goodness is 0 → epoch: 1 gets 0/2 + 20 = 20, the sleeper 20/2 + 20 = 30; 1 runs. Each time 1 uses
        // its slice up again the sleeper climbs: 30/2 + 20 = 35, then 37, 38, 39, and stays at 39.
        let mut os = cpu_with(2);
        os.tasks[0].state = State::Asleep;
        os.remove_from_list(0);
        os.tasks[1].counter = 0;
        let mut climb = Vec::new();
        for _ in 0..6 {
            assert_eq!(os.pick_next(0), Some(1));
            assert_eq!(os.counter(1), 20);
            climb.push(os.counter(0));
            os.tasks[1].counter = 0;
            os.on_preempt(1, 0);
        }
        assert_eq!(climb, vec![30, 35, 37, 38, 39, 39]);
        assert_eq!(os.epochs, 6);
    }

    #[test]
    fn a_woken_task_preempts_only_with_a_counter_larger_by_more_than_3() {
        // Running task 0 with counter 16 (4 ticks used). A sleeper waking with 20: 20 > 16 + 3 → preempt.
        // With 19 it would not be: 19 > 19 is false.
        let mut os = cpu_with(2);
        // Make 0 run: 1 sleeps first.
        os.tasks[1].state = State::Asleep;
        os.remove_from_list(1);
        assert_eq!(os.pick_next(0), Some(0));
        ticks(&mut os, 4);
        assert_eq!(os.counter(0), 16);
        os.tasks[1].counter = 19;
        os.on_wakeup(1);
        assert!(!os.should_preempt(0, 0));
        // Back to sleep, and wake with 20.
        os.tasks[1].state = State::Asleep;
        os.remove_from_list(1);
        os.tasks[1].counter = 20;
        os.on_wakeup(1);
        assert!(os.should_preempt(0, 0));
        assert_eq!(os.run_queue_len(0), 1);
        // schedule(): 1 (front, 20 + 20 = 40) beats prev 0 (16 + 20 + 1 = 37).
        os.on_preempt(0, 0);
        assert_eq!(os.pick_next(0), Some(1));
        assert!(!os.should_preempt(0, 1));
    }

    #[test]
    fn pred_adds_freq_only_while_the_counter_is_positive() {
        // Tasks 0 (a PVM task, 12 KB received → cur 3) and 1 (calcula), both counter 20. PRED P = 90:
        // 0's goodness 20 + 20 + 3 = 43 beats 1's 40 though 1 is at the front of the list.
        let mut os = cpu_with(2);
        os.set_goodness_freq(0, FreqParams::pred(90)).unwrap();
        os.socket_bytes(0, 7, 12 * 1024, 0);
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.freq(0), Some(3));
        // 0 uses up its slice: counter 0, so goodness 0 — no freq sample, 1 runs.
        ticks(&mut os, 21);
        os.on_preempt(0, 0);
        let evaluations = os.freq_evaluations;
        assert_eq!(os.pick_next(0), Some(1));
        assert_eq!(os.freq_evaluations, evaluations, "counter 0: no sample");
        // Without the patch the list order decides: a fresh CPU runs 1 (the front).
        let mut plain = cpu_with(2);
        plain.socket_bytes(0, 7, 12 * 1024, 0);
        assert_eq!(plain.pick_next(0), Some(1));
    }

    #[test]
    fn dyn_ignores_what_was_sent_and_buffers_cap_a_socket() {
        // 40 KB sent, nothing received: DYN sees 0, task 1 (front) runs; PRED sees [40/4] = 10 → 0 runs.
        // A 1 MB message counts as the 64 KB buffer: [65535/4096] = 15.
        let mut os = cpu_with(2);
        os.set_goodness_freq(0, FreqParams::dyn_(90)).unwrap();
        os.socket_bytes(0, 7, 0, 40 * 1024);
        assert_eq!(os.pick_next(0), Some(1));
        let mut os = cpu_with(2);
        os.set_goodness_freq(0, FreqParams::pred(90)).unwrap();
        os.socket_bytes(0, 7, 1 << 20, 0);
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.freq(0), Some(15));
        // The bytes leave: rmem back to 0.
        os.socket_bytes(0, 7, -(1 << 20), 0);
        assert_eq!(os.tasks[0].sockets[0].1, SocketQueue::default());
    }

    #[test]
    fn a_boost_wins_the_next_schedule_once() {
        // 0 runs; 1 is boosted: need_resched, goodness 1000 → 1 runs; the boost is gone once it is picked.
        let mut os = cpu_with(2);
        os.tasks[1].state = State::Asleep;
        os.remove_from_list(1);
        assert_eq!(os.pick_next(0), Some(0));
        os.on_wakeup(1); // 20 > 20 + 3 is false: no preemption
        assert!(!os.should_preempt(0, 0));
        os.boost_to_max(1);
        assert!(os.should_preempt(0, 0));
        os.on_preempt(0, 0);
        assert_eq!(os.pick_next(0), Some(1));
        assert!(!os.tasks[1].boosted);
    }

    #[test]
    fn a_static_quantum_is_the_counter_refill() {
        // STATICQ 3.2 s: priority = 320 ticks, a fresh slice runs 321 ticks.
        let mut os =
            Linux22::new(1, DEF_PRIORITY).with_quantum_rule(QuantumRule::Static(3_200 * MILLIS));
        os.admit(0, 0);
        assert_eq!(os.counter(0), 320);
        assert_eq!(os.quantum(0), 3_200 * MILLIS);
    }

    /// One epoch on CPU 0 after `l1`, `l2` misses were counted: the only task used up its slice.
    fn epoch(os: &mut Linux22, l1: f64, l2: f64) {
        os.cache_misses(0, l1, l2);
        os.tasks[0].counter = 0;
        if os.cpus[0].running == Some(0) {
            os.on_preempt(0, 0);
        }
        assert_eq!(os.pick_next(0), Some(0));
    }

    #[test]
    fn dynamicq_doubles_to_12_8_s_then_oscillates_and_an_interactive_user_resets() {
        // A miss ratio of 20 % (> MAX_MISS) every epoch: 0.2 → 0.4 → ... → 12.8 → 6.4 → 12.8 s.
        let rule = QuantumRule::Dynamicq(DynamicqParams::default());
        let mut os = Linux22::new(1, DEF_PRIORITY).with_quantum_rule(rule);
        os.admit(0, 0);
        assert_eq!(os.quantum(0), 200 * MILLIS);
        let mut seen = Vec::new();
        for _ in 0..8 {
            epoch(&mut os, 1000.0, 200.0);
            seen.push(os.quantum(0) / MILLIS);
        }
        assert_eq!(seen, vec![400, 800, 1600, 3200, 6400, 12800, 6400, 12800]);
        // MMR: every epoch 20 %.
        assert!((os.mean_miss_ratio().unwrap() - 0.2).abs() < 1e-12);
        // An interactive user on the CPU: back to 200 ms at the next epoch.
        os.admit(1, 0);
        os.interactive_user(1);
        os.tasks[1].counter = 0;
        epoch(&mut os, 1000.0, 200.0);
        assert_eq!(os.quantum(0), 200 * MILLIS);
        assert_eq!(os.quanta_reset, 1);
    }

    #[test]
    fn dynamicq_rose_is_strict_on_the_epoch_miss_ratio() {
        // 2 %, then 3 % (rose: doubles though < 9 %), then 3 % again (equal: stays).
        let rule = QuantumRule::Dynamicq(DynamicqParams::default());
        let mut os = Linux22::new(1, DEF_PRIORITY).with_quantum_rule(rule);
        os.admit(0, 0);
        epoch(&mut os, 1000.0, 20.0);
        assert_eq!(
            os.quantum(0),
            200 * MILLIS,
            "first epoch: no previous ratio"
        );
        epoch(&mut os, 1000.0, 30.0);
        assert_eq!(os.quantum(0), 400 * MILLIS);
        epoch(&mut os, 1000.0, 30.0);
        assert_eq!(os.quantum(0), 400 * MILLIS);
    }

    /// Two CPUs, tasks 0 and 2 placed on CPU 0 and 1 on CPU 1, admitted 0, 1, 2 (list [2, 1, 0], front
    /// first); one run queue for both CPUs when `shared`.
    fn two_cpus_three_tasks(shared: bool) -> Linux22 {
        let mut os = Linux22::new(2, DEF_PRIORITY);
        if shared {
            os.share_run_queue(2).unwrap();
        }
        os.admit(0, 0);
        os.admit(1, 1);
        os.admit(2, 0);
        os
    }

    #[test]
    fn a_shared_queue_lets_a_task_wait_for_whichever_cpu_frees_first() {
        // Shared: CPU 0 scans [2, 1, 0]: 2 = 20 + 20 + 15 (last CPU 0) = 55, 1 = 40, 0 = 55 (not > 55) → 2.
        // CPU 1: 1 = 20 + 20 + 15 = 55, 0 = 40 → 1. Task 0 waits, counted on both CPUs' queue.
        let mut os = two_cpus_three_tasks(true);
        assert_eq!(os.pick_next(0), Some(2));
        assert_eq!(os.pick_next(1), Some(1));
        assert_eq!((os.run_queue_len(0), os.run_queue_len(1)), (1, 1));
        // 1 blocks: CPU 1 frees first and takes 0 (goodness 40, no bonus: it was placed on CPU 0).
        os.on_block(1, 0);
        assert_eq!(os.pick_next(1), Some(0));
        assert_eq!(os.tasks[0].cpu, 1, "its CPU is now the one that picked it");
        assert_eq!((os.run_queue_len(0), os.run_queue_len(1)), (0, 0));
        // Per-CPU queues: CPU 0's list is [2, 0], CPU 1's [1]. When 1 blocks, CPU 1 has nothing to run and 0
        // waits for CPU 0.
        let mut os = two_cpus_three_tasks(false);
        assert_eq!(os.pick_next(0), Some(2));
        assert_eq!(os.pick_next(1), Some(1));
        assert_eq!((os.run_queue_len(0), os.run_queue_len(1)), (1, 0));
        os.on_block(1, 0);
        assert_eq!(os.pick_next(1), None);
        assert_eq!(os.tasks[0].cpu, 0);
    }

    /// Two CPUs sharing a queue; A (pid 0) last ran on CPU 0, B (pid 1) on CPU 1, both queued (list [B, A]);
    /// which one CPU 0 picks with these counters.
    fn cpu_0_picks(counter_a: u32, counter_b: u32) -> u32 {
        let mut os = Linux22::new(2, DEF_PRIORITY);
        os.share_run_queue(2).unwrap();
        os.admit(0, 0);
        os.admit(1, 1);
        os.tasks[0].counter = counter_a;
        os.tasks[1].counter = counter_b;
        os.pick_next(0).unwrap()
    }

    #[test]
    fn the_affinity_bonus_brings_a_task_back_to_its_last_cpu_unless_the_gap_is_over_15() {
        // On CPU 0, A gets PROC_CHANGE_PENALTY = 15. Gap 14: B = 24 + 20 = 44, A = 10 + 20 + 15 = 45 → A,
        // though B is first on the list and has 14 ticks more.
        assert_eq!(cpu_0_picks(10, 24), 0);
        // Gap 15: B = 45, A = 45: a tie, and the first on the list (B) wins it (strict >).
        assert_eq!(cpu_0_picks(10, 25), 1);
        // Gap 16: B = 46 > A = 45 → B moves to CPU 0.
        assert_eq!(cpu_0_picks(10, 26), 1);
    }

    /// The shared-queue node of [`two_cpus_three_tasks`] with 0 running on CPU 0 (counter 18), 1 on CPU 1
    /// (counter 10) and 2 asleep (last CPU 0).
    fn two_running_one_asleep() -> Linux22 {
        let mut os = two_cpus_three_tasks(true);
        assert_eq!(os.pick_next(0), Some(2));
        assert_eq!(os.pick_next(1), Some(1));
        os.on_block(2, 0);
        assert_eq!(os.pick_next(0), Some(0));
        os.tasks[0].counter = 18;
        os.tasks[1].counter = 10;
        os
    }

    #[test]
    fn a_woken_task_takes_an_idle_cpu_else_preempts_the_smallest_counter_by_more_than_3() {
        // No CPU idle: 2 is weighed against the running task with the smallest counter, 1 on CPU 1 (10), not
        // against 0 on its own last CPU (18). Woken with 13: 13 > 10 + 3 is false → nobody is preempted.
        let mut os = two_running_one_asleep();
        os.tasks[2].counter = 13;
        os.on_wakeup(2);
        assert!(!os.should_preempt(0, 0) && !os.should_preempt(1, 1));
        assert_eq!((os.run_queue_len(0), os.run_queue_len(1)), (1, 1));
        // Woken with 14: 14 > 13 → CPU 1 must reschedule; CPU 0 keeps 0.
        let mut os = two_running_one_asleep();
        os.tasks[2].counter = 14;
        os.on_wakeup(2);
        assert!(!os.should_preempt(0, 0) && os.should_preempt(1, 1));
        os.on_preempt(1, 0);
        // The test is on counters, the pick on goodness (2.2's two rules): CPU 1 scans 2 = 14 + 20 = 34 and
        // prev 1 = 10 + 20 + 15 (its CPU) + 1 (prev) = 46, so 1 runs on.
        assert_eq!(os.pick_next(1), Some(1));
        // CPU 1 idle (1 blocked): a woken 2 marks nobody; the idle CPU picks it and it moves there.
        let mut os = two_running_one_asleep();
        os.on_block(1, 0);
        os.on_wakeup(2);
        assert!(!os.should_preempt(0, 0));
        assert_eq!(os.pick_next(1), Some(2));
        assert_eq!(os.tasks[2].cpu, 1);
    }

    #[test]
    fn a_boost_on_a_shared_queue_preempts_the_cpu_with_the_smallest_counter() {
        // 2 woken (20 > 10 + 3: CPU 1 marked), picked by nobody yet; the boost marks CPU 1 (counter 10 < 18)
        // and the next pick there takes 2 (goodness 1000), which moves to CPU 1.
        let mut os = two_running_one_asleep();
        os.on_wakeup(2);
        os.cpus[1].need_resched = false;
        os.boost_to_max(2);
        assert!(!os.should_preempt(0, 0) && os.should_preempt(1, 1));
        os.on_preempt(1, 0);
        assert_eq!(os.pick_next(1), Some(2));
        assert_eq!(os.tasks[2].cpu, 1);
        assert!(!os.tasks[2].boosted);
    }

    #[test]
    fn a_shared_epoch_refills_every_task_of_the_node() {
        // CPU 1 runs 1 (counter 5), 2 sleeps (20), 0 is queued with counter 0 and CPU 0 picks: the best
        // goodness is 0 → the node's epoch: 0 → 0/2 + 20 = 20, 1 (running on the other CPU) → 5/2 + 20 = 22,
        // 2 → 20/2 + 20 = 30; then 0 runs (20 + 20 + 15 = 55).
        let mut os = two_cpus_three_tasks(true);
        assert_eq!(os.pick_next(0), Some(2));
        assert_eq!(os.pick_next(1), Some(1));
        os.on_block(2, 0);
        os.tasks[0].counter = 0;
        os.tasks[1].counter = 5;
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!([os.counter(0), os.counter(1), os.counter(2)], [20, 22, 30]);
        assert_eq!(os.epochs, 1);
    }
}
