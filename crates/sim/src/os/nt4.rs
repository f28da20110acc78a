//! Windows NT 4.0 scheduler model (Server), with the user-level fairness monitor of seed `002`.
//!
//! Seed: `002_53dfbd94bd660dc4.txt` (Buchanan & Chien, USENIX Windows NT Workshop 1997) §2.2.2 (Tq = 120 ms,
//! "the CPU quantum under NT Server"; the Fairness monitor writes the average run-queue length to the NIC) and
//! §3 (dual-CPU nodes). The scheduler's rules are not in the seed; they are the NT internals the notes collect
//! (`/work/shared/notes/seeds-001-004.md`, 002 §2 [K], and the assumptions of 002 §5).
//!
//! ## Approach
//! 32 priority levels, one FIFO queue per level per CPU. The highest-priority ready thread runs; a thread made
//! ready above the running one preempts it at once; a preempted thread goes to the *head* of its level and
//! keeps the rest of its quantum; at quantum end it goes to the tail of its level. Dynamic threads (levels
//! 1–15) get boosts that decay by one level per quantum end, down to their base. Once a second the balance-set
//! manager lifts threads ready for ≥ 300 ticks to level 15 with a doubled quantum, for one quantum. The
//! fairness monitor samples the node's Processor Queue Length (ready threads over both CPUs) every tick and
//! publishes the mean of the last `monitor_window` every `monitor_window`; the NIC's `R` is that published
//! value, rounded ([`OsScheduler::published_run_queue_len`]).
//!
//! NT carries out none of the optional operations (the trait's defaults refuse them).
//!
//! Simplifications, stated: quanta are charged by exact CPU time (NT charges 3 units a clock tick, a quantum is
//! 36 units); threads stay on the CPU they were placed on (NT's soft affinity to the ideal and last processor,
//! with no load balancing: notes 002 §5.5 places competitors on both CPUs); all threads are NORMAL class
//! (base 8); a thread that wakes from a wait gets +1 (event satisfied), capped at 15; no real-time threads.
//!
//! ## Algorithm
//! ```text
//! pick(cpu):          the head of the highest non-empty level
//! ready(p) (wake):    p.priority = min(15, base + 1); tail of its level; preempt if above the running one
//! preempted(p):       head of its level, rest of its quantum kept
//! quantum end(p):     starvation-boosted: priority = base; else priority = max(base, priority - 1);
//!                     fresh quantum; tail of its level
//! boost (DCS):        priority 15, head of level 15, preempt (notes 002 §5.4 [A])
//! every second:       scan ≤ 16 ready threads, lift ≤ 10 ready ≥ 300 ticks: priority 15, quantum × 2 once
//! every tick (10 ms): the monitor samples Σ ready threads of the node; every window it publishes the mean
//! ```
//!
//! ## Parameters
//! | parameter | value | source |
//! |---|---|---|
//! | quantum | 120 ms (variant 180 ms: the MP HAL's 15 ms tick) | seed §2.2.2; notes 002 §2, §5.3 |
//! | tick | 10 ms | [K] x86 uniprocessor clock |
//! | base priority | 8 (NORMAL) | [K] |
//! | boost cap, DCS boost | 15 | [K]; notes 002 §5.4 [A] |
//! | starvation | ready ≥ 300 ticks, checked every 1 s, ≤ 16 scanned, ≤ 10 lifted, 2 quanta | [K] balance-set manager |
//! | monitor | a sample every tick, the mean of 100 ms published every 100 ms | notes 002 §5.2 [A] |

use super::OsScheduler;
use cosched_policy::dcs::QueueLengthMonitor;
use cosched_policy::{Nanos, MILLIS};
use std::collections::VecDeque;

/// The clock tick.
pub const TICK: Nanos = 10 * MILLIS;
/// NORMAL class base priority.
pub const BASE_PRIORITY: u8 = 8;
/// The highest dynamic priority (a boost's cap; DCS boosts to it).
pub const MAX_DYNAMIC: u8 = 15;
const LEVELS: usize = 32;
/// The balance-set manager runs every this many ticks (1 s).
const BALANCE_EVERY_TICKS: u64 = 100;
/// A thread ready this many ticks is starving.
const STARVING_TICKS: u64 = 300;
const BALANCE_SCAN: usize = 16;
const BALANCE_LIFT: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ready,
    Running,
    Waiting,
    Exited,
}

#[derive(Clone, Debug)]
struct Thread {
    cpu: u32,
    base: u8,
    priority: u8,
    quantum_left: Nanos,
    state: State,
    /// Lifted by the balance-set manager: back to base at the end of this quantum.
    starvation_boost: bool,
    /// The tick count when it last became ready.
    ready_since: u64,
}

#[derive(Clone, Debug)]
struct Cpu {
    levels: Vec<VecDeque<u32>>,
    running: Option<u32>,
}

impl Cpu {
    fn best(&self) -> Option<u8> {
        (0..LEVELS)
            .rev()
            .find(|&l| !self.levels[l].is_empty())
            .map(|l| l as u8)
    }
    fn ready(&self) -> u32 {
        self.levels.iter().map(|q| q.len() as u32).sum()
    }
}

/// NT 4.0 Server for every CPU of the cluster.
#[derive(Clone, Debug)]
pub struct Nt4 {
    quantum: Nanos,
    cpus_per_node: u32,
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    /// The fairness monitor of each node (the policy core's, shared with the agent's `--r-average-ms`).
    monitors: Vec<QueueLengthMonitor>,
    /// Ticks seen by each node.
    ticks: Vec<u64>,
    boosts: u64,
    starvation_lifts: u64,
    quantum_ends: u64,
}

impl Nt4 {
    /// `nodes` nodes of `cpus_per_node` CPUs, quantum `quantum`, the monitor publishing every `monitor_window`.
    pub fn new(nodes: u32, cpus_per_node: u32, quantum: Nanos, monitor_window: Nanos) -> Self {
        Nt4 {
            quantum,
            cpus_per_node,
            threads: Vec::new(),
            cpus: (0..nodes * cpus_per_node)
                .map(|_| Cpu {
                    levels: vec![VecDeque::new(); LEVELS],
                    running: None,
                })
                .collect(),
            monitors: vec![
                QueueLengthMonitor::new((monitor_window / TICK).max(1) * TICK, 0);
                nodes as usize
            ],
            ticks: vec![0; nodes as usize],
            boosts: 0,
            starvation_lifts: 0,
            quantum_ends: 0,
        }
    }

    fn node_of(&self, cpu: u32) -> usize {
        (cpu / self.cpus_per_node) as usize
    }

    fn enqueue(&mut self, pid: u32, front: bool) {
        let t = &mut self.threads[pid as usize];
        t.state = State::Ready;
        let node = (t.cpu / self.cpus_per_node) as usize;
        t.ready_since = self.ticks[node];
        let q = &mut self.cpus[t.cpu as usize].levels[t.priority as usize];
        if front {
            q.push_front(pid);
        } else {
            q.push_back(pid);
        }
    }

    fn dequeue(&mut self, pid: u32) {
        let t = &self.threads[pid as usize];
        let q = &mut self.cpus[t.cpu as usize].levels[t.priority as usize];
        if let Some(at) = q.iter().position(|&p| p == pid) {
            q.remove(at);
        }
    }

    fn left_cpu(&mut self, pid: u32) {
        let cpu = self.threads[pid as usize].cpu as usize;
        self.cpus[cpu].running = None;
    }

    /// The quantum ended: decay (or drop a starvation lift), a fresh quantum, the tail of its level.
    fn quantum_end(&mut self, pid: u32) {
        self.quantum_ends += 1;
        let t = &mut self.threads[pid as usize];
        if t.starvation_boost {
            t.starvation_boost = false;
            t.priority = t.base;
        } else if t.priority > t.base {
            t.priority -= 1;
        }
        t.quantum_left = self.quantum;
        self.left_cpu(pid);
        self.enqueue(pid, false);
    }

    /// The balance-set manager on the CPUs of `node`.
    fn balance(&mut self, node: usize) {
        let now = self.ticks[node];
        let first = node as u32 * self.cpus_per_node;
        let mut starving = Vec::new();
        let mut scanned = 0;
        'scan: for cpu in first..first + self.cpus_per_node {
            for level in (1..=MAX_DYNAMIC as usize).rev() {
                for &pid in &self.cpus[cpu as usize].levels[level] {
                    if scanned == BALANCE_SCAN {
                        break 'scan;
                    }
                    scanned += 1;
                    if now - self.threads[pid as usize].ready_since >= STARVING_TICKS {
                        starving.push(pid);
                    }
                }
            }
        }
        for pid in starving.into_iter().take(BALANCE_LIFT) {
            self.dequeue(pid);
            let t = &mut self.threads[pid as usize];
            t.priority = MAX_DYNAMIC;
            t.quantum_left = 2 * self.quantum;
            t.starvation_boost = true;
            self.enqueue(pid, false);
            self.starvation_lifts += 1;
        }
    }

    /// The priority of `pid` now (for tests).
    pub fn thread_priority(&self, pid: u32) -> u8 {
        self.threads[pid as usize].priority
    }
}

impl OsScheduler for Nt4 {
    fn name(&self) -> &'static str {
        "nt-4.0"
    }

    fn min_quantum(&self) -> Nanos {
        self.quantum
    }

    fn update_period(&self) -> Option<Nanos> {
        Some(TICK)
    }

    fn admit(&mut self, pid: u32, cpu: u32) {
        let thread = Thread {
            cpu,
            base: BASE_PRIORITY,
            priority: BASE_PRIORITY,
            quantum_left: self.quantum,
            state: State::Ready,
            starvation_boost: false,
            ready_since: 0,
        };
        if pid as usize >= self.threads.len() {
            let mut placeholder = thread.clone();
            placeholder.state = State::Exited;
            self.threads.resize(pid as usize + 1, placeholder);
        }
        self.threads[pid as usize] = thread;
        self.enqueue(pid, false);
    }

    fn pick_next(&mut self, cpu: u32) -> Option<u32> {
        let level = self.cpus[cpu as usize].best()?;
        let pid = self.cpus[cpu as usize].levels[level as usize].pop_front()?;
        self.threads[pid as usize].state = State::Running;
        self.cpus[cpu as usize].running = Some(pid);
        Some(pid)
    }

    fn time_left(&self, pid: u32) -> Nanos {
        self.threads[pid as usize].quantum_left
    }

    fn on_preempt(&mut self, pid: u32, ran: Nanos) {
        let t = &mut self.threads[pid as usize];
        t.quantum_left = t.quantum_left.saturating_sub(ran);
        if t.quantum_left == 0 {
            self.quantum_end(pid);
        } else {
            self.left_cpu(pid);
            self.enqueue(pid, true);
        }
    }

    fn on_quantum_expiry(&mut self, pid: u32) {
        self.quantum_end(pid);
    }

    fn on_block(&mut self, pid: u32, ran: Nanos) {
        let t = &mut self.threads[pid as usize];
        t.quantum_left = t.quantum_left.saturating_sub(ran).max(1);
        t.state = State::Waiting;
        self.left_cpu(pid);
    }

    fn on_exit(&mut self, pid: u32, _ran: Nanos) {
        self.threads[pid as usize].state = State::Exited;
        self.left_cpu(pid);
    }

    fn on_wakeup(&mut self, pid: u32) {
        let t = &mut self.threads[pid as usize];
        t.priority = t.priority.max((t.base + 1).min(MAX_DYNAMIC));
        self.enqueue(pid, false);
    }

    fn boost_to_max(&mut self, pid: u32) {
        debug_assert_eq!(self.threads[pid as usize].state, State::Ready);
        self.dequeue(pid);
        self.threads[pid as usize].priority = MAX_DYNAMIC;
        self.enqueue(pid, true);
        self.boosts += 1;
    }

    fn periodic_update(&mut self, cpus: std::ops::Range<u32>) {
        let node = self.node_of(cpus.start);
        self.ticks[node] += 1;
        let ready: u32 = cpus.clone().map(|c| self.cpus[c as usize].ready()).sum();
        self.monitors[node].sample(self.ticks[node] * TICK, u64::from(ready));
        if self.ticks[node].is_multiple_of(BALANCE_EVERY_TICKS) {
            self.balance(node);
        }
    }

    fn should_preempt(&self, cpu: u32, running: u32) -> bool {
        match self.cpus[cpu as usize].best() {
            Some(best) => best > self.threads[running as usize].priority,
            None => false,
        }
    }

    fn run_queue_len(&self, cpu: u32) -> u32 {
        self.cpus[cpu as usize].ready()
    }

    fn priority(&self, pid: u32) -> u32 {
        self.threads[pid as usize].priority as u32
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("nt_boosts", self.boosts),
            ("nt_starvation_lifts", self.starvation_lifts),
            ("nt_quantum_ends", self.quantum_ends),
        ]
    }

    fn published_run_queue_len(&self, cpu: u32) -> Option<u32> {
        // Nothing published yet reads as an empty queue, as the NIC's zeroed memory would.
        Some(self.monitors[self.node_of(cpu)].published().unwrap_or(0) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_cpu(threads: u32) -> Nt4 {
        let mut os = Nt4::new(1, 1, 120 * MILLIS, 100 * MILLIS);
        for pid in 0..threads {
            os.admit(pid, 0);
        }
        os
    }

    #[test]
    fn equal_threads_take_turns_by_whole_quanta() {
        // 0 and 1 at base 8: 0 runs its 120 ms, goes to the tail, 1 runs.
        let mut os = one_cpu(2);
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.time_left(0), 120 * MILLIS);
        os.on_quantum_expiry(0);
        assert_eq!(os.pick_next(0), Some(1));
    }

    #[test]
    fn a_boost_preempts_and_decays_one_level_a_quantum() {
        // 0 runs; 1 is boosted to 15 → preempts; 0 goes back to the head of level 8 with its quantum left.
        let mut os = one_cpu(2);
        assert_eq!(os.pick_next(0), Some(0));
        os.boost_to_max(1);
        assert!(os.should_preempt(0, 0));
        os.on_preempt(0, 30 * MILLIS);
        assert_eq!(os.pick_next(0), Some(1));
        // 1 at 15 holds the CPU for 7 quanta (15 → 14 → ... → 9 all above 8), then shares at 8.
        for expected in (8..15).rev() {
            os.on_quantum_expiry(1);
            assert_eq!(os.thread_priority(1), expected);
            let next = os.pick_next(0).unwrap();
            if expected > BASE_PRIORITY {
                assert_eq!(next, 1);
            } else {
                assert_eq!(next, 0, "back at base 8: 0 is at the head of level 8");
                assert_eq!(os.time_left(0), 90 * MILLIS);
            }
        }
    }

    #[test]
    fn the_balance_set_manager_lifts_a_thread_ready_for_3_s() {
        // 0 at priority 15 (boosted) holds the CPU; 1 waits. After 300 ticks the once-a-second scan lifts 1 to
        // 15 with a doubled quantum, and it drops back to base at the end of that quantum.
        let mut os = one_cpu(2);
        os.boost_to_max(0);
        assert_eq!(os.pick_next(0), Some(0));
        for _ in 0..300 {
            os.periodic_update(0..1);
        }
        assert_eq!(os.thread_priority(1), MAX_DYNAMIC);
        assert_eq!(os.time_left(1), 240 * MILLIS);
        assert_eq!(os.counters()[1], ("nt_starvation_lifts", 1));
        os.on_quantum_expiry(0);
        // 0 decayed to 14; 1 at 15 runs.
        assert_eq!(os.pick_next(0), Some(1));
        os.on_quantum_expiry(1);
        assert_eq!(os.thread_priority(1), BASE_PRIORITY);
    }

    #[test]
    fn the_monitor_publishes_the_mean_ready_count_once_a_window() {
        // 2 CPUs; CPU 0 has 3 threads (1 runs, 2 ready), CPU 1 has 1 running: the node's queue length is 2.
        let mut os = Nt4::new(1, 2, 120 * MILLIS, 100 * MILLIS);
        for pid in 0..3 {
            os.admit(pid, 0);
        }
        os.admit(3, 1);
        os.pick_next(0);
        os.pick_next(1);
        assert_eq!(os.published_run_queue_len(0), Some(0));
        for _ in 0..9 {
            os.periodic_update(0..2);
        }
        assert_eq!(
            os.published_run_queue_len(1),
            Some(0),
            "not yet a whole window"
        );
        os.periodic_update(0..2);
        assert_eq!(os.published_run_queue_len(1), Some(2));
    }
}
