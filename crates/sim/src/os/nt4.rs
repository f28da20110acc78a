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
//! keeps the rest of its quantum; at quantum end it goes to the tail of its level. Quanta are counted in units
//! as NT counts them (notes 002 §2 [K]): every clock tick charges 3 units to the thread running on the CPU at
//! that tick, a wait charges 1, and a quantum is 3 units a tick of `quantum` (36 for 120 ms). A quantum
//! therefore ends only at a tick, and a tick at which the CPU runs no thread of the model (idle, or held by the
//! system's own threads: [`crate::world`]'s `[os] system_load_percent`) is charged to nobody: the turn of the
//! thread that was running then lasts one tick longer. Dynamic threads (levels
//! 1–15) get boosts that decay by one level per quantum end, down to their base. Once a second the balance-set
//! manager lifts threads ready for ≥ 300 ticks to level 15 with a doubled quantum, for one quantum. The
//! fairness monitor samples the node's Processor Queue Length (ready threads over both CPUs) every tick and
//! publishes the mean of the last `monitor_window` every `monitor_window`; the NIC's `R` is that published
//! value, rounded ([`OsScheduler::published_run_queue_len`]).
//!
//! NT carries out none of the optional operations (the trait's defaults refuse them).
//!
//! Simplifications, stated: threads stay on the CPU they were placed on (NT's soft affinity to the ideal and last processor,
//! with no load balancing: notes 002 §5.5 places competitors on both CPUs); all threads are NORMAL class
//! (base 8); a thread that wakes from a wait gets +1 (event satisfied), capped at 15; no real-time threads.
//!
//! ## Algorithm
//! ```text
//! pick(cpu):          the head of the highest non-empty level
//! ready(p) (wake):    p.priority = min(15, base + 1); tail of its level; preempt if above the running one
//! preempted(p):       head of its level, rest of its quantum kept (tail if its quantum ended at this tick)
//! every tick, each CPU: the running thread r (none: charge nobody) loses 3 units; at 0 its quantum ends:
//!                     starvation-boosted: priority = base; else priority = max(base, priority - 1);
//!                     fresh quantum; it yields (tail of its level) if a ready thread is at its priority or above,
//!                     else it runs on
//! wait (block):       1 unit
//! boost (DCS):        priority 15, head of level 15, preempt (notes 002 §5.4 [A]); `[os] dcs_boost = "plus-2"`:
//!                     max(priority, base + 2) instead, NT's network-completion boost (2 quanta above base)
//! every second:       scan ≤ 16 ready threads, lift ≤ 10 ready ≥ 300 ticks: priority 15, quantum × 2 once
//! every tick (10 ms): the monitor samples Σ ready threads of the node; every window it publishes the mean
//! ```
//!
//! ## Parameters
//! | parameter | value | source |
//! |---|---|---|
//! | quantum | 120 ms = 36 units (variant 180 ms: the MP HAL's 15 ms tick) | seed §2.2.2; notes 002 §2, §5.3 |
//! | tick | 10 ms, charging 3 units; a wait charges 1 | [K] x86 uniprocessor clock; notes 002 §2 |
//! | base priority | 8 (NORMAL) | [K] |
//! | boost cap, DCS boost | 15 | [K]; notes 002 §5.4 [A] |
//! | starvation | ready ≥ 300 ticks, checked every 1 s, ≤ 16 scanned, ≤ 10 lifted, 2 quanta | [K] balance-set manager |
//! | monitor | a sample every tick, the mean of 100 ms published every 100 ms | notes 002 §5.2 [A] |
//! | the system's own threads | 1 % of each CPU in 100 µs bursts (the world's, `[os] system_load_percent`, `system_burst_us`) | [A] `docs/sim-nt.md`, "Phase drift" |

use super::{NewScheduler, OsModelParameters, OsScheduler, UNTIMED};
use crate::os::RunQueue;
use cosched_policy::MICROS;
use serde::{Deserialize, Serialize};

/// The `[os]` table of `model = "nt-4.0"`: a fixed `quantum_ms` (120; 180 for the MP HAL), the fairness monitor
/// publishing the mean ready count every `monitor_window_ms` (100), and the NIC's scan of the running-thread
/// table every `nic_scan_us` (1000: "about once per millisecond", §2.2.2), so DCS decides on data up to that
/// stale. The system's own threads (above NORMAL priority) take each CPU for bursts of `system_burst_us` on
/// average (100), `system_load_percent` of its time (1.0; 0 turns them off), at random (Poisson) times drawn
/// from the run's RNG, each CPU on its own ([`crate::world`]); a clock tick inside a burst charges no thread's
/// quantum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nt4Parameters {
    #[serde(default = "default_quantum_ms")]
    pub quantum_ms: u64,
    #[serde(default = "default_monitor_window_ms")]
    pub monitor_window_ms: u64,
    #[serde(default = "default_nic_scan_us")]
    pub nic_scan_us: u64,
    #[serde(default = "default_system_load_percent")]
    pub system_load_percent: f64,
    #[serde(default = "default_system_burst_us")]
    pub system_burst_us: u64,
    #[serde(default, skip_serializing_if = "RunQueue::is_per_cpu")]
    pub run_queue: RunQueue,
    /// How far a DCS boost raises a thread ([`DcsBoost`]; the seed does not say, notes 002 §5.4).
    #[serde(default, skip_serializing_if = "DcsBoost::is_default")]
    pub dcs_boost: DcsBoost,
}

/// How far DCS raises the receiver it boosts (seed 002 says only that it "raises the priority"; notes 002 §5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DcsBoost {
    /// To the top dynamic level, 15, at the head of its queue: with NT's decay of one level a quantum end, a
    /// NORMAL thread (base 8) stays above its base for 7 quanta (840 ms at 120 ms).
    #[default]
    #[serde(rename = "to-15")]
    To15,
    /// NT's own network-completion boost: base + 2, at the head of that level, decaying back to base in 2 quanta.
    #[serde(rename = "plus-2")]
    Plus2,
}

impl DcsBoost {
    fn is_default(&self) -> bool {
        *self == DcsBoost::default()
    }

    /// The level a boosted thread at `priority` (base `base`) is raised to.
    pub fn level(self, base: u8, priority: u8) -> u8 {
        match self {
            DcsBoost::To15 => MAX_DYNAMIC,
            DcsBoost::Plus2 => priority.max((base + 2).min(MAX_DYNAMIC)),
        }
    }
}

fn default_quantum_ms() -> u64 {
    120
}
fn default_monitor_window_ms() -> u64 {
    100
}
fn default_nic_scan_us() -> u64 {
    1_000
}
/// NT 4.0's own threads take about 1 % of a CPU (docs/sim-nt.md, "Phase drift" [A]).
pub const DEFAULT_SYSTEM_LOAD_PERCENT: f64 = 1.0;
/// A burst of NT 4.0's own threads takes 100 µs on average (docs/sim-nt.md, "Phase drift" [A]).
pub const DEFAULT_SYSTEM_BURST_US: u64 = 100;
fn default_system_load_percent() -> f64 {
    DEFAULT_SYSTEM_LOAD_PERCENT
}
fn default_system_burst_us() -> u64 {
    DEFAULT_SYSTEM_BURST_US
}

impl OsModelParameters for Nt4Parameters {
    fn run_queue(&self) -> RunQueue {
        self.run_queue
    }

    fn label(&self) -> String {
        let Nt4Parameters {
            quantum_ms,
            monitor_window_ms,
            nic_scan_us,
            system_load_percent,
            system_burst_us,
            dcs_boost,
            ..
        } = self;
        let mut label = format!(
            "nt-4.0, quantum {quantum_ms} ms, monitor {monitor_window_ms} ms, NIC scan {nic_scan_us} µs"
        );
        if *system_load_percent > 0.0 {
            label += &format!(", system threads {system_load_percent} % in {system_burst_us} µs bursts");
        }
        if *dcs_boost == DcsBoost::Plus2 {
            label += ", DCS boost +2";
        }
        label
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let Nt4Parameters {
            quantum_ms,
            monitor_window_ms,
            nic_scan_us,
            system_load_percent,
            system_burst_us,
            ..
        } = *self;
        if !(0.0..=50.0).contains(&system_load_percent) {
            return Err((
                "system_load_percent".into(),
                format!(
                    "{system_load_percent} is outside 0..=50 % of a CPU (default {DEFAULT_SYSTEM_LOAD_PERCENT}; \
                     0 turns the system's own threads off)"
                ),
            ));
        }
        if !(1..=100_000).contains(&system_burst_us) {
            return Err((
                "system_burst_us".into(),
                format!(
                    "{system_burst_us} is outside 1..=100000 µs (default {DEFAULT_SYSTEM_BURST_US}: a burst of \
                     the system's own threads, well under a 10 ms tick)"
                ),
            ));
        }
        if !(1..=1_000_000).contains(&nic_scan_us) {
            return Err((
                "nic_scan_us".into(),
                format!("{nic_scan_us} is outside 1..=1000000 µs (the seed: about 1000)"),
            ));
        }
        if !(10..=10_000).contains(&quantum_ms) {
            return Err((
                "quantum_ms".into(),
                format!("{quantum_ms} is outside 10..=10000 ms (NT Server: 120; 180 on the MP HAL)"),
            ));
        }
        if !(10..=60_000).contains(&monitor_window_ms) {
            return Err((
                "monitor_window_ms".into(),
                format!("{monitor_window_ms} is outside one 10 ms tick .. a minute (default 100)"),
            ));
        }
        Ok(())
    }

    /// Seed `002`'s LCP scans "about once per millisecond".
    fn nic_scan(&self) -> Option<Nanos> {
        Some((self.nic_scan_us * MICROS).max(1))
    }

    fn system_activity(&self) -> Option<(Nanos, Nanos)> {
        if self.system_load_percent <= 0.0 {
            return None;
        }
        let burst = self.system_burst_us * MICROS;
        let interval = (burst as f64 * 100.0 / self.system_load_percent).round() as Nanos;
        Some((interval.max(1), burst))
    }

    /// Only on NT, so the earlier seeds' results stay byte for byte.
    fn reports_round_trip_tail(&self) -> bool {
        true
    }
}

impl NewScheduler for Nt4Parameters {
    type Scheduler = Nt4;
    fn new_scheduler(&self, nodes: u32, cpus_per_node: u32) -> Nt4 {
        Nt4::new(
            nodes,
            cpus_per_node,
            self.quantum_ms * MILLIS,
            self.monitor_window_ms * MILLIS,
        )
        .with_dcs_boost(self.dcs_boost)
    }
}
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
/// Quantum units a clock tick charges to the running thread (NT's `CLOCK_QUANTUM_DECREMENT`).
pub const UNITS_PER_TICK: u32 = 3;
/// Quantum units a wait charges (NT's `WAIT_QUANTUM_DECREMENT`).
const UNITS_PER_WAIT: u32 = 1;

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
    /// Quantum units left.
    units: u32,
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
    /// The running thread's quantum ended at the last tick and a ready thread is at its priority or above: it
    /// yields (the world preempts it, [`OsScheduler::should_preempt`]) and goes to the tail of its level.
    quantum_over: bool,
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
    /// A fresh quantum in units: 3 a tick of `quantum`.
    quantum_units: u32,
    cpus_per_node: u32,
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    /// The fairness monitor of each node (the policy core's, shared with the agent's `--r-average-ms`).
    monitors: Vec<QueueLengthMonitor>,
    /// Ticks seen by each node.
    ticks: Vec<u64>,
    boosts: u64,
    /// How far a DCS boost raises a thread.
    dcs_boost: DcsBoost,
    starvation_lifts: u64,
    quantum_ends: u64,
    /// Ticks that found a CPU running no thread of the model (idle, or the system's own threads).
    uncharged_ticks: u64,
}

impl Nt4 {
    /// `nodes` nodes of `cpus_per_node` CPUs, quantum `quantum`, the monitor publishing every `monitor_window`.
    pub fn new(nodes: u32, cpus_per_node: u32, quantum: Nanos, monitor_window: Nanos) -> Self {
        Nt4 {
            quantum,
            quantum_units: UNITS_PER_TICK * quantum.div_ceil(TICK).max(1) as u32,
            cpus_per_node,
            threads: Vec::new(),
            cpus: (0..nodes * cpus_per_node)
                .map(|_| Cpu {
                    levels: vec![VecDeque::new(); LEVELS],
                    running: None,
                    quantum_over: false,
                })
                .collect(),
            monitors: vec![
                QueueLengthMonitor::new((monitor_window / TICK).max(1) * TICK, 0);
                nodes as usize
            ],
            ticks: vec![0; nodes as usize],
            boosts: 0,
            dcs_boost: DcsBoost::default(),
            starvation_lifts: 0,
            quantum_ends: 0,
            uncharged_ticks: 0,
        }
    }

    /// DCS boosts raise a thread as `boost` says (default: to 15).
    pub fn with_dcs_boost(mut self, boost: DcsBoost) -> Self {
        self.dcs_boost = boost;
        self
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

    /// `pid` leaves its CPU; whether its quantum had ended at the last tick (see [`Cpu::quantum_over`]).
    fn left_cpu(&mut self, pid: u32) -> bool {
        let cpu = &mut self.cpus[self.threads[pid as usize].cpu as usize];
        cpu.running = None;
        std::mem::take(&mut cpu.quantum_over)
    }

    /// The quantum ended: decay (or drop a starvation lift) and a fresh quantum.
    fn expire(&mut self, pid: u32) {
        self.quantum_ends += 1;
        let t = &mut self.threads[pid as usize];
        if t.starvation_boost {
            t.starvation_boost = false;
            t.priority = t.base;
        } else if t.priority > t.base {
            t.priority -= 1;
        }
        t.units = self.quantum_units;
    }

    /// A clock tick on `cpu`: 3 units off the running thread's quantum; at its end, NT's quantum end (the
    /// thread yields only to a ready thread at its new priority or above). A CPU without a running thread
    /// charges nobody.
    fn charge_tick(&mut self, cpu: u32) {
        let Some(pid) = self.cpus[cpu as usize].running else {
            self.uncharged_ticks += 1;
            return;
        };
        let t = &mut self.threads[pid as usize];
        t.units = t.units.saturating_sub(UNITS_PER_TICK);
        if t.units > 0 {
            return;
        }
        self.expire(pid);
        let priority = self.threads[pid as usize].priority;
        let c = &mut self.cpus[cpu as usize];
        c.quantum_over = c.best().is_some_and(|best| best >= priority);
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
            t.units = 2 * self.quantum_units;
            t.starvation_boost = true;
            self.enqueue(pid, false);
            self.starvation_lifts += 1;
        }
    }

    /// The priority of `pid` now (for tests).
    pub fn thread_priority(&self, pid: u32) -> u8 {
        self.threads[pid as usize].priority
    }

    /// The quantum units `pid` has left (for tests).
    pub fn units_left(&self, pid: u32) -> u32 {
        self.threads[pid as usize].units
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
            units: self.quantum_units,
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

    /// Quanta end at ticks ([`OsScheduler::periodic_update`]), never at a time the world could compute.
    fn time_left(&self, _pid: u32) -> Nanos {
        UNTIMED
    }

    fn on_preempt(&mut self, pid: u32, _ran: Nanos) {
        // Ticks charge the quantum, not the time run: a preempted thread keeps its units, at the head of its
        // level, unless its quantum ended at the last tick (then it yields to the tail).
        let over = self.left_cpu(pid);
        self.enqueue(pid, !over);
    }

    fn on_quantum_expiry(&mut self, pid: u32) {
        // The world never expires a quantum of this model (time_left is UNTIMED); kept for the trait's life cycle.
        self.expire(pid);
        self.left_cpu(pid);
        self.enqueue(pid, false);
    }

    fn on_block(&mut self, pid: u32, _ran: Nanos) {
        let t = &mut self.threads[pid as usize];
        t.units = t.units.saturating_sub(UNITS_PER_WAIT).max(1);
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
        let t = &mut self.threads[pid as usize];
        t.priority = self.dcs_boost.level(t.base, t.priority);
        self.enqueue(pid, true);
        self.boosts += 1;
    }

    fn periodic_update(&mut self, cpus: std::ops::Range<u32>) {
        let node = self.node_of(cpus.start);
        self.ticks[node] += 1;
        for cpu in cpus.clone() {
            self.charge_tick(cpu);
        }
        let ready: u32 = cpus.clone().map(|c| self.cpus[c as usize].ready()).sum();
        self.monitors[node].sample(self.ticks[node] * TICK, u64::from(ready));
        if self.ticks[node].is_multiple_of(BALANCE_EVERY_TICKS) {
            self.balance(node);
        }
    }

    fn should_preempt(&self, cpu: u32, running: u32) -> bool {
        if self.cpus[cpu as usize].quantum_over {
            return true;
        }
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
            ("nt_uncharged_ticks", self.uncharged_ticks),
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

    /// One clock tick on a one-CPU node, and what the world does after it: a thread the model asks to switch
    /// out is preempted and the CPU picks again; an empty CPU picks. Returns who runs after the tick.
    fn tick(os: &mut Nt4) -> Option<u32> {
        os.periodic_update(0..1);
        match os.cpus[0].running {
            Some(running) if os.should_preempt(0, running) => {
                os.on_preempt(running, 0);
                os.pick_next(0)
            }
            Some(running) => Some(running),
            None => os.pick_next(0),
        }
    }

    #[test]
    fn equal_threads_take_turns_by_whole_quanta_of_12_ticks() {
        // 0 and 1 at base 8, 120 ms = 36 units: 0 runs 11 ticks (33 units charged, 3 left), at the 12th its
        // quantum ends and 1 is ready at its priority: 0 goes to the tail, 1 runs 12 ticks, then 0 again.
        let mut os = one_cpu(2);
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.units_left(0), 36);
        assert_eq!(
            os.time_left(0),
            UNTIMED,
            "the world never ends an NT quantum"
        );
        for _ in 0..11 {
            assert_eq!(tick(&mut os), Some(0));
        }
        assert_eq!(os.units_left(0), 3);
        assert_eq!(tick(&mut os), Some(1));
        assert_eq!(os.units_left(0), 36, "a fresh quantum at the tail");
        for _ in 0..11 {
            assert_eq!(tick(&mut os), Some(1));
        }
        assert_eq!(tick(&mut os), Some(0));
        // A thread alone on its CPU runs on past its quantum end with a fresh one.
        let mut alone = one_cpu(1);
        alone.pick_next(0);
        for _ in 0..30 {
            assert_eq!(tick(&mut alone), Some(0));
        }
        assert_eq!(alone.counters()[2], ("nt_quantum_ends", 2));
    }

    #[test]
    fn a_tick_while_the_system_holds_the_cpu_is_charged_to_nobody() {
        // 0 runs 5 ticks (15 units, 21 left); the system's own thread takes the CPU (the world preempts 0: the
        // head of level 8, its units kept) for 2 ticks, which charge nobody; 0 runs again and its quantum ends
        // 7 ticks later: 12 ticks charged, 14 ticks from its start to its end. 1 waited 2 ticks longer.
        let mut os = one_cpu(2);
        assert_eq!(os.pick_next(0), Some(0));
        for _ in 0..5 {
            tick(&mut os);
        }
        os.on_preempt(0, 50 * MILLIS);
        for _ in 0..2 {
            os.periodic_update(0..1);
        }
        assert_eq!(os.units_left(0), 21, "no share of the held ticks");
        assert_eq!(os.counters()[3], ("nt_uncharged_ticks", 2));
        assert_eq!(os.pick_next(0), Some(0), "the head of its level");
        for _ in 0..6 {
            assert_eq!(tick(&mut os), Some(0));
        }
        assert_eq!(tick(&mut os), Some(1));
    }

    #[test]
    fn a_boost_preempts_and_decays_one_level_a_quantum() {
        // 0 runs 3 ticks (27 units left); 1 is boosted to 15 → preempts; 0 goes back to the head of level 8
        // with its 27 units.
        let mut os = one_cpu(2);
        assert_eq!(os.pick_next(0), Some(0));
        for _ in 0..3 {
            tick(&mut os);
        }
        os.boost_to_max(1);
        assert!(os.should_preempt(0, 0));
        os.on_preempt(0, 30 * MILLIS);
        assert_eq!(os.units_left(0), 27);
        assert_eq!(os.pick_next(0), Some(1));
        // 1 at 15 holds the CPU for 7 quanta of 12 ticks (15 → 14 → ... → 9 all above 8); at the 7th end it is
        // back at 8 with 0 ready at 8, and yields: 0 runs its 27 units (9 ticks).
        for expected in (8..15).rev() {
            for _ in 0..11 {
                assert_eq!(tick(&mut os), Some(1));
            }
            let next = tick(&mut os);
            assert_eq!(os.thread_priority(1), expected);
            if expected > BASE_PRIORITY {
                assert_eq!(next, Some(1));
            } else {
                assert_eq!(next, Some(0), "back at base 8: 0 is at the head of level 8");
            }
        }
        for _ in 0..8 {
            assert_eq!(tick(&mut os), Some(0));
        }
        assert_eq!(tick(&mut os), Some(1));
    }

    #[test]
    fn a_plus_2_boost_preempts_and_holds_the_cpu_two_quanta() {
        // As above with NT's network-completion boost: 1 goes to 8 + 2 = 10, preempts 0, and its priority
        // decays 10 → 9 → 8 over two quantum ends; at base again it yields to 0.
        let mut os = one_cpu(2).with_dcs_boost(DcsBoost::Plus2);
        assert_eq!(os.pick_next(0), Some(0));
        tick(&mut os);
        os.boost_to_max(1);
        assert_eq!(os.thread_priority(1), BASE_PRIORITY + 2);
        assert!(os.should_preempt(0, 0));
        os.on_preempt(0, 10 * MILLIS);
        assert_eq!(os.pick_next(0), Some(1));
        for expected in [9, 8] {
            for _ in 0..11 {
                assert_eq!(tick(&mut os), Some(1));
            }
            let next = tick(&mut os);
            assert_eq!(os.thread_priority(1), expected);
            assert_eq!(next, if expected > BASE_PRIORITY { Some(1) } else { Some(0) });
        }
        assert_eq!(DcsBoost::Plus2.level(8, 12), 12, "never lowers a higher level");
        assert_eq!(DcsBoost::Plus2.level(14, 14), MAX_DYNAMIC, "capped at 15");
        assert_eq!(DcsBoost::To15.level(8, 8), MAX_DYNAMIC);
    }

    #[test]
    fn the_balance_set_manager_lifts_a_thread_ready_for_3_s() {
        // 0 and 1 ready while the system holds the CPU (no thread of the model runs): after 300 ticks the
        // once-a-second scan lifts both to 15 with a doubled quantum (72 units), and each drops back to base at
        // the end of that quantum (24 ticks).
        let mut os = one_cpu(2);
        for _ in 0..300 {
            os.periodic_update(0..1);
        }
        assert_eq!(os.thread_priority(1), MAX_DYNAMIC);
        assert_eq!(os.units_left(1), 72);
        assert_eq!(os.counters()[1], ("nt_starvation_lifts", 2));
        assert_eq!(os.pick_next(0), Some(0));
        for _ in 0..23 {
            assert_eq!(tick(&mut os), Some(0));
        }
        // 0 back at base 8, 1 at 15 ready: 0 yields to 1.
        assert_eq!(tick(&mut os), Some(1));
        assert_eq!(os.thread_priority(0), BASE_PRIORITY);
        for _ in 0..24 {
            tick(&mut os);
        }
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
