//! Solaris 2.4 timesharing (TS) dispatcher model.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §3.2.4 and Table 1 ("Default Solaris 2.4 dispatch table").
//!
//! ## Problem
//! DCS and implicit scheduling both work *through* the node's own priority-decay scheduler: implicit
//! scheduling coschedules only because SVR4 gives a woken sleeper the `ts_slpret` priority (seed §5.2), and DCS
//! raises a receiver to the maximum user priority (§3.3.2). Reproducing the seed needs that scheduler.
//!
//! ## Approach
//! A table-driven priority-decay scheduler with 60 user levels, one FIFO queue per level per CPU, as the seed
//! describes it (§3.2.4): "The scheduler schedules the job at the head of the highest-priority queue that is
//! occupied. Timeslice expiration leads to demotion to a lower-priority queue; preemption without timeslice
//! expiration causes the job to be placed at the end of the queue. Once per second, a routine called
//! `ts_update` increases the priorities of processes that are on run queues, but not running. The routine also
//! sets a flag (`dispwait`) on processes that are on sleep queues; if the flag is set when the process returns
//! to a run queue, it experiences a substantial priority boost, to the value called `ts_slpret`."
//!
//! Table 1 prints only the quantum and `ts_slpret` columns. The other columns are the standard Solaris
//! `ts_dptbl` defaults (not printed in the seed): `ts_tqexp[n] = max(0, n - 10)`; `ts_lwait[n]` = the same band
//! value as `ts_slpret[n]`; `ts_maxwait[n] = 0`, except 32000 at level 59.
//!
//! Simplifications, stated: quanta are charged by exact CPU time (Solaris samples the running thread every
//! 10 ms clock tick); `dispwait` is reset whenever the process is dispatched; a new process starts at level
//! [`INITIAL_LEVEL`]; a process moves to another CPU only when told to ([`OsScheduler::migrate`]: no load
//! balancing of its own).
//!
//! Optional operations ([`super::OsOperation`]): a per-process quantum (`set_quantum`: every fresh quantum is
//! the given one instead of `quantum[level]`, as `priocntl` can set `ts_quantum` per process) and migration are
//! carried out; a priority bonus is not (the TS class has no goodness to add it to; a policy that needs one
//! runs on a model that has it, e.g. Linux 2.2 for seed `003`).
//!
//! ## Terminology
//! - `level` — the process's TS priority, 0 (lowest) ..= 59 (highest, [`MAX_USER_LEVEL`]).
//! - `time_left` — CPU time left in the current quantum (`ts_timeleft`).
//! - `dispwait` — number of `ts_update` passes the process spent waiting (queued or asleep) since it last ran.
//! - `quantum[n]`, `tqexp[n]`, `slpret[n]`, `maxwait[n]`, `lwait[n]` — the dispatch-table columns.
//!
//! ## Algorithm
//! ```text
//! pick_next(cpu):        head of the highest non-empty queue; dispwait = 0
//! quantum expiry:        level = tqexp[level]; time_left = quantum[level]; to the END of the new queue
//! preempted (no expiry): time_left -= ran; to the END of its queue
//! block:                 time_left -= ran; asleep (level unchanged)
//! wake-up:               if dispwait > maxwait[level]: level = slpret[level]; time_left = quantum[level]
//!                        to the END of its queue
//! ts_update (1/s):       queued:  dispwait += 1; if dispwait > maxwait[level]:
//!                                   level = lwait[level]; time_left = quantum[level]; dispwait = 0; to the END
//!                        asleep:  dispwait += 1   (the flag that the wake-up boost reads)
//! boost_to_max (DCS):    boosted = true (dispatch level 59); to the FRONT of queue 59; level and
//!                        time_left untouched
//! boosted ends:          at quantum expiry, on blocking, and when ts_update recomputes its level
//! fresh quantum:         quantum_override if set, else quantum[level]
//! migrate(p, cpu):       queued: out of its queue, to the END of its level on cpu; asleep: wakes on cpu
//! preempt running r?:    best queued dispatch level > dispatch level of r  (strictly higher)
//! dispatch level:        59 while boosted, else level
//! ```
//!
//! ## The DCS boost and the TS class state
//! The seed's driver acts from the network interrupt handler (§3.3.2, Figure 2): each thread "has its priority
//! raised to the maximum allowable priority for user-mode timesharing processes and is placed at the front of
//! the dispatcher queue. Flags are set to ensure that the Solaris 2.4 scheduler runs on exit from the interrupt
//! routine". That is dispatcher-level work (the thread's dispatch priority, `setfrontdq`, the run-run flags),
//! not a change of the TS class parameters: the thread's TS level (`ts_cpupri`) and `ts_timeleft` are not
//! touched, so the next time the TS class recomputes the thread's priority — quantum expiry (`ts_tick`, which
//! demotes from `ts_cpupri`), return from a sleep, or `ts_update` — the boost is gone. The model keeps a
//! `boosted` flag with exactly that lifetime. The seed's own account of DCS with spinning supports this
//! reading (§5.1): the varying quanta of Table 1 "can cause even processes that start their timeslices in
//! synchrony to suffer long spinning phases when one ends its timeslice before others" — processes that DCS
//! started together end at different times only if each keeps the quantum of its own TS level; a boost that
//! handed every receiver level 59 and its 20 ms quantum would end them all together.
//!
//! Two other readings were measured (Barrier and Latency at 1 and 8 competitors, Mixed) and rejected:
//! - TS level 59 with a fresh 20 ms quantum, demoted to 49, 39, ... afterwards: `<DCS, spin-block>` Barrier
//!   fairness becomes ≈ 0.94, but `<DCS, spin only>` takes 1.4–1.9× its share in Barrier and up to 1.9× in
//!   Latency, where the seed reports "up to 30% more" (§4.3), and the Mixed sequential jobs still get F ≈ 0.2;
//! - the dispatcher-level boost cut to one `Tq` (20 ms) of CPU, the budget that the fairness rule assumes
//!   (§3.3.3): Mixed becomes fair, but `<DCS, spin only>` Mixed SOR is then nearly as slow as without DCS
//!   (103 s vs 116 s, 635 CPU s vs 267 in Batch), against the seed's "reduce this CPU time significantly",
//!   and `<DCS, spin-block>` Barrier fairness falls further (0.42 at 1 competitor).
//!
//! Neither is supported by the text, so the model keeps the reading above (see `docs/sim-dcs.md`).
//!
//! ## Parameters (Table 1)
//! | levels | quantum | `ts_slpret` |
//! |---|---|---|
//! | 0–9 | 200 ms | 50 |
//! | 10–19 | 160 ms | 51 |
//! | 20–29 | 120 ms | 52 |
//! | 30–34 | 80 ms | 53 |
//! | 35–39 | 80 ms | 54 |
//! | 40–44 | 40 ms | 55 |
//! | 45–49 | 40 ms | 56 |
//! | 50–54 | 40 ms | 57 |
//! | 55–58 | 40 ms | 58 |
//! | 59 | 20 ms | 59 |
//!
//! Ablation (seed §5.2, Figure 9): `ts_slpret[n] = n`, "giving reawakened processes the same priority they had
//! when they blocked".

use super::{NewScheduler, OsModelParameters, OsOperation, OsScheduler, Unsupported};
use crate::os::RunQueue;
use serde::{Deserialize, Serialize};

/// The `[os]` table of `model = "solaris-ts"`. `slpret_ablation` sets `ts_slpret[n] = n` (Figure 9).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolarisTsParameters {
    #[serde(default)]
    pub slpret_ablation: bool,
    #[serde(default, skip_serializing_if = "RunQueue::is_per_cpu")]
    pub run_queue: RunQueue,
}

impl OsModelParameters for SolarisTsParameters {
    fn run_queue(&self) -> RunQueue {
        self.run_queue
    }
    fn label(&self) -> String {
        if self.slpret_ablation {
            "solaris-ts, ts_slpret[n]=n".to_string()
        } else {
            "solaris-ts".to_string()
        }
    }
}

impl NewScheduler for SolarisTsParameters {
    type Scheduler = SolarisTs;
    fn new_scheduler(&self, nodes: u32, cpus_per_node: u32) -> SolarisTs {
        SolarisTs::new(nodes * cpus_per_node, self.slpret_ablation)
    }
}
use cosched_policy::{Nanos, MILLIS, SECONDS};
use std::collections::VecDeque;

/// Number of TS priority levels.
pub const LEVELS: usize = 60;
/// The maximum user-mode TS priority, the level a DCS boost gives (seed footnote 5).
pub const MAX_USER_LEVEL: u8 = 59;
/// Level of a newly admitted process (the middle of the table; Solaris inherits the parent's level).
pub const INITIAL_LEVEL: u8 = 29;
/// `ts_update` runs once a second.
pub const UPDATE_PERIOD: Nanos = SECONDS;

/// One row of the dispatch table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchEntry {
    /// `ts_quantum`.
    pub quantum: Nanos,
    /// `ts_tqexp`: the level after a quantum expiry.
    pub tqexp: u8,
    /// `ts_slpret`: the level of a flagged sleeper when it returns to a run queue.
    pub slpret: u8,
    /// `ts_maxwait`: `ts_update` passes a process may wait before `ts_lwait` applies.
    pub maxwait: u32,
    /// `ts_lwait`: the level of a process that waited longer than `ts_maxwait` on a run queue.
    pub lwait: u8,
}

/// The Solaris 2.4 default dispatch table (Table 1 plus the standard defaults of the unprinted columns);
/// `slpret_ablation` sets `ts_slpret[n] = n` (Figure 9).
pub fn dispatch_table(slpret_ablation: bool) -> [DispatchEntry; LEVELS] {
    let mut table = [DispatchEntry {
        quantum: 0,
        tqexp: 0,
        slpret: 0,
        maxwait: 0,
        lwait: 0,
    }; LEVELS];
    for (n, entry) in table.iter_mut().enumerate() {
        let quantum_ms = match n {
            0..=9 => 200,
            10..=19 => 160,
            20..=29 => 120,
            30..=39 => 80,
            40..=58 => 40,
            _ => 20,
        };
        let band: u8 = match n {
            0..=9 => 50,
            10..=19 => 51,
            20..=29 => 52,
            30..=34 => 53,
            35..=39 => 54,
            40..=44 => 55,
            45..=49 => 56,
            50..=54 => 57,
            55..=58 => 58,
            _ => 59,
        };
        *entry = DispatchEntry {
            quantum: quantum_ms * MILLIS,
            tqexp: n.saturating_sub(10) as u8,
            slpret: if slpret_ablation { n as u8 } else { band },
            maxwait: if n == LEVELS - 1 { 32000 } else { 0 },
            lwait: band,
        };
    }
    table
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Queued,
    Running,
    Asleep,
    Exited,
    /// Inside `ts_update` only: queued and about to be raised to `ts_lwait`.
    Raising,
}

#[derive(Clone, Copy, Debug)]
struct TsProcess {
    cpu: u32,
    level: u8,
    time_left: Nanos,
    dispwait: u32,
    state: State,
    /// Raised to [`MAX_USER_LEVEL`] by a DCS boost until the TS class next recomputes its priority.
    boosted: bool,
    /// A quantum set for this process ([`OsScheduler::set_quantum`]), used instead of `quantum[level]`.
    quantum_override: Option<Nanos>,
}

impl TsProcess {
    /// The level the dispatcher queues it at.
    fn dispatch_level(&self) -> u8 {
        if self.boosted {
            MAX_USER_LEVEL
        } else {
            self.level
        }
    }
}

/// One CPU's dispatcher queues.
#[derive(Clone, Debug)]
struct TsCpu {
    queues: Vec<VecDeque<u32>>,
    /// Bit n set ⇔ queue n is non-empty.
    occupied: u64,
    queued: u32,
    /// Processes bound to this CPU, in admission order (for `ts_update`).
    members: Vec<u32>,
}

impl TsCpu {
    fn new() -> Self {
        TsCpu {
            queues: vec![VecDeque::new(); LEVELS],
            occupied: 0,
            queued: 0,
            members: Vec::new(),
        }
    }
    fn push_back(&mut self, level: u8, pid: u32) {
        self.queues[level as usize].push_back(pid);
        self.occupied |= 1 << level;
        self.queued += 1;
    }
    fn push_front(&mut self, level: u8, pid: u32) {
        self.queues[level as usize].push_front(pid);
        self.occupied |= 1 << level;
        self.queued += 1;
    }
    fn remove(&mut self, level: u8, pid: u32) {
        let q = &mut self.queues[level as usize];
        let at = q
            .iter()
            .position(|&p| p == pid)
            .expect("a queued process is in the queue of its level");
        q.remove(at);
        if q.is_empty() {
            self.occupied &= !(1 << level);
        }
        self.queued -= 1;
    }
    /// Removes from queue `level` every process for which `doomed` holds, keeping the others' order.
    fn remove_where(&mut self, level: u8, doomed: impl Fn(u32) -> bool) {
        let q = &mut self.queues[level as usize];
        let before = q.len();
        q.retain(|&pid| !doomed(pid));
        self.queued -= (before - q.len()) as u32;
        if q.is_empty() {
            self.occupied &= !(1 << level);
        }
    }
    fn best_level(&self) -> Option<u8> {
        (self.occupied != 0).then(|| 63 - self.occupied.leading_zeros() as u8)
    }
    fn pop_best(&mut self) -> Option<u32> {
        let level = self.best_level()?;
        let q = &mut self.queues[level as usize];
        let pid = q
            .pop_front()
            .expect("occupied bit matches a non-empty queue");
        if q.is_empty() {
            self.occupied &= !(1 << level);
        }
        self.queued -= 1;
        Some(pid)
    }
}

/// The Solaris 2.4 TS scheduler for all CPUs of a simulated cluster.
#[derive(Clone, Debug)]
pub struct SolarisTs {
    table: [DispatchEntry; LEVELS],
    processes: Vec<TsProcess>,
    cpus: Vec<TsCpu>,
    slpret_boosts: u64,
    lwait_raises: u64,
    /// Scratch list for `ts_update` (kept to avoid an allocation per update).
    raised: Vec<u32>,
}

impl SolarisTs {
    /// A scheduler for `cpus` CPUs with the default table, or the `ts_slpret[n] = n` ablation.
    pub fn new(cpus: u32, slpret_ablation: bool) -> Self {
        SolarisTs {
            table: dispatch_table(slpret_ablation),
            processes: Vec::new(),
            cpus: (0..cpus).map(|_| TsCpu::new()).collect(),
            slpret_boosts: 0,
            lwait_raises: 0,
            raised: Vec::new(),
        }
    }

    /// The dispatch table in use.
    pub fn table(&self) -> &[DispatchEntry; LEVELS] {
        &self.table
    }

    fn charge(&mut self, pid: u32, ran: Nanos) {
        let p = &mut self.processes[pid as usize];
        p.time_left = p.time_left.saturating_sub(ran);
    }

    fn set_level(&mut self, pid: u32, level: u8) {
        let p = &mut self.processes[pid as usize];
        p.level = level;
        p.boosted = false;
        p.time_left = p
            .quantum_override
            .unwrap_or(self.table[level as usize].quantum);
    }

    /// Demotes a process whose quantum is used up: `level = tqexp[level]`, a fresh quantum.
    fn demote(&mut self, pid: u32) {
        let level = self.processes[pid as usize].level;
        self.set_level(pid, self.table[level as usize].tqexp);
        self.processes[pid as usize].dispwait = 0;
    }

    fn enqueue_back(&mut self, pid: u32) {
        let p = &mut self.processes[pid as usize];
        p.state = State::Queued;
        let (cpu, level) = (p.cpu, p.dispatch_level());
        self.cpus[cpu as usize].push_back(level, pid);
    }
}

impl OsScheduler for SolarisTs {
    fn name(&self) -> &'static str {
        "solaris-ts"
    }

    fn min_quantum(&self) -> Nanos {
        self.table
            .iter()
            .map(|e| e.quantum)
            .min()
            .expect("the table has 60 rows")
    }

    fn update_period(&self) -> Option<Nanos> {
        Some(UPDATE_PERIOD)
    }

    fn admit(&mut self, pid: u32, cpu: u32) {
        let placeholder = TsProcess {
            cpu,
            level: 0,
            time_left: 0,
            dispwait: 0,
            state: State::Exited,
            boosted: false,
            quantum_override: None,
        };
        if pid as usize >= self.processes.len() {
            self.processes.resize(pid as usize + 1, placeholder);
        }
        self.processes[pid as usize] = TsProcess {
            cpu,
            level: INITIAL_LEVEL,
            time_left: self.table[INITIAL_LEVEL as usize].quantum,
            dispwait: 0,
            state: State::Queued,
            boosted: false,
            quantum_override: None,
        };
        self.cpus[cpu as usize].members.push(pid);
        self.cpus[cpu as usize].push_back(INITIAL_LEVEL, pid);
    }

    fn pick_next(&mut self, cpu: u32) -> Option<u32> {
        let pid = self.cpus[cpu as usize].pop_best()?;
        let p = &mut self.processes[pid as usize];
        p.state = State::Running;
        p.dispwait = 0;
        if p.time_left == 0 {
            p.time_left = p
                .quantum_override
                .unwrap_or(self.table[p.level as usize].quantum);
        }
        Some(pid)
    }

    fn time_left(&self, pid: u32) -> Nanos {
        self.processes[pid as usize].time_left
    }

    fn on_preempt(&mut self, pid: u32, ran: Nanos) {
        self.charge(pid, ran);
        if self.processes[pid as usize].time_left == 0 {
            self.demote(pid);
        }
        self.enqueue_back(pid);
    }

    fn on_quantum_expiry(&mut self, pid: u32) {
        self.demote(pid);
        self.enqueue_back(pid);
    }

    fn on_block(&mut self, pid: u32, ran: Nanos) {
        self.charge(pid, ran);
        self.processes[pid as usize].boosted = false;
        if self.processes[pid as usize].time_left == 0 {
            self.demote(pid);
        }
        self.processes[pid as usize].state = State::Asleep;
    }

    fn on_exit(&mut self, pid: u32, ran: Nanos) {
        self.charge(pid, ran);
        self.processes[pid as usize].state = State::Exited;
    }

    fn on_wakeup(&mut self, pid: u32) {
        let p = self.processes[pid as usize];
        debug_assert_eq!(p.state, State::Asleep, "only a sleeper wakes up");
        let row = self.table[p.level as usize];
        if p.dispwait > row.maxwait {
            self.set_level(pid, row.slpret);
            self.processes[pid as usize].dispwait = 0;
            self.slpret_boosts += 1;
        }
        self.enqueue_back(pid);
    }

    fn boost_to_max(&mut self, pid: u32) {
        let p = self.processes[pid as usize];
        debug_assert_eq!(
            p.state,
            State::Queued,
            "DCS boosts a runnable process that is not running"
        );
        self.cpus[p.cpu as usize].remove(p.dispatch_level(), pid);
        self.processes[pid as usize].boosted = true;
        self.cpus[p.cpu as usize].push_front(MAX_USER_LEVEL, pid);
    }

    fn periodic_update(&mut self, cpus: std::ops::Range<u32>) {
        // The same result as taking each raised process out of its queue and appending it to its new one, in
        // admission order; done in two passes so each queue is filtered once instead of searched per process.
        let mut raised = std::mem::take(&mut self.raised);
        for cpu in cpus {
            let c = &mut self.cpus[cpu as usize];
            raised.clear();
            let mut old_levels = 0u64;
            for &pid in &c.members {
                let p = &mut self.processes[pid as usize];
                match p.state {
                    State::Queued => {
                        let dispwait = p.dispwait + 1;
                        if dispwait > self.table[p.level as usize].maxwait {
                            old_levels |= 1 << p.dispatch_level();
                            p.state = State::Raising;
                            raised.push(pid);
                        } else {
                            p.dispwait = dispwait;
                        }
                    }
                    State::Asleep => p.dispwait += 1,
                    State::Running | State::Exited | State::Raising => {}
                }
            }
            while old_levels != 0 {
                let level = old_levels.trailing_zeros() as u8;
                old_levels &= old_levels - 1;
                let processes = &self.processes;
                c.remove_where(level, |pid| processes[pid as usize].state == State::Raising);
            }
            for &pid in &raised {
                let lwait = self.table[self.processes[pid as usize].level as usize].lwait;
                self.set_level(pid, lwait);
                self.processes[pid as usize].dispwait = 0;
                self.enqueue_back(pid);
                self.lwait_raises += 1;
            }
        }
        self.raised = raised;
    }

    fn should_preempt(&self, cpu: u32, running: u32) -> bool {
        match self.cpus[cpu as usize].best_level() {
            Some(best) => best > self.processes[running as usize].dispatch_level(),
            None => false,
        }
    }

    fn run_queue_len(&self, cpu: u32) -> u32 {
        self.cpus[cpu as usize].queued
    }

    fn priority(&self, pid: u32) -> u32 {
        self.processes[pid as usize].dispatch_level() as u32
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("slpret_boosts", self.slpret_boosts),
            ("lwait_raises", self.lwait_raises),
        ]
    }

    fn supports(&self, operation: OsOperation) -> bool {
        match operation {
            OsOperation::SetQuantum | OsOperation::Migrate => true,
            // Solaris 2.4 keeps one dispatch queue per CPU.
            OsOperation::SetPriorityBonus
            | OsOperation::GoodnessFreq
            | OsOperation::SharedRunQueue => false,
        }
    }

    fn set_quantum(&mut self, pid: u32, quantum: Option<Nanos>) -> Result<(), Unsupported> {
        self.processes[pid as usize].quantum_override = quantum.map(|q| q.max(1));
        Ok(())
    }

    fn migrate(&mut self, pid: u32, cpu: u32) -> Result<(), Unsupported> {
        let p = self.processes[pid as usize];
        if p.cpu == cpu {
            return Ok(());
        }
        debug_assert!(
            matches!(p.state, State::Queued | State::Asleep),
            "only a queued or sleeping process migrates, not a {:?} one",
            p.state
        );
        let members = &mut self.cpus[p.cpu as usize].members;
        if let Some(at) = members.iter().position(|&m| m == pid) {
            members.remove(at);
        }
        self.cpus[cpu as usize].members.push(pid);
        if p.state == State::Queued {
            self.cpus[p.cpu as usize].remove(p.dispatch_level(), pid);
            self.processes[pid as usize].cpu = cpu;
            self.enqueue_back(pid);
        } else {
            self.processes[pid as usize].cpu = cpu;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One CPU with `n` processes admitted (pids 0..n, all at level 29, queued in pid order).
    fn one_cpu(n: u32, ablation: bool) -> SolarisTs {
        let mut ts = SolarisTs::new(1, ablation);
        for pid in 0..n {
            ts.admit(pid, 0);
        }
        ts
    }

    #[test]
    fn table_one_quanta_and_slpret() {
        let t = dispatch_table(false);
        // Table 1: 200 ms at 0–9, ..., 40 ms at 40–58, 20 ms at 59.
        assert_eq!(t[0].quantum, 200 * MILLIS);
        assert_eq!(t[19].quantum, 160 * MILLIS);
        assert_eq!(t[25].quantum, 120 * MILLIS);
        assert_eq!(t[35].quantum, 80 * MILLIS);
        assert_eq!(t[58].quantum, 40 * MILLIS);
        assert_eq!(t[59].quantum, 20 * MILLIS);
        // ts_slpret by band: 0–9 → 50, 30–34 → 53, 35–39 → 54, 55–58 → 58, 59 → 59.
        assert_eq!(
            (
                t[3].slpret,
                t[33].slpret,
                t[37].slpret,
                t[57].slpret,
                t[59].slpret
            ),
            (50, 53, 54, 58, 59)
        );
        // The unprinted defaults: lwait = slpret band, maxwait 0 except 32000 at 59, tqexp = n - 10.
        assert_eq!((t[12].lwait, t[12].maxwait, t[59].maxwait), (51, 0, 32000));
        assert_eq!((t[35].tqexp, t[5].tqexp), (25, 0));
    }

    #[test]
    fn minimum_quantum_is_twenty_ms() {
        assert_eq!(SolarisTs::new(1, false).min_quantum(), 20 * MILLIS);
    }

    #[test]
    fn a_process_at_level_59_gets_20_ms() {
        // A waiting process raised by ts_update from level 55 gets lwait[55] = 58; one at 59 (reached through
        // lwait[59] = 59 or slpret[59] = 59) gets quantum[59] = 20 ms.
        let mut ts = one_cpu(1, false);
        ts.cpus[0].remove(29, 0);
        ts.set_level(0, 59);
        ts.enqueue_back(0);
        assert_eq!(ts.pick_next(0), Some(0));
        assert_eq!((ts.priority(0), ts.time_left(0)), (59, 20 * MILLIS));
    }

    #[test]
    fn a_dcs_boost_lasts_until_the_quantum_expires() {
        // pid 1 at level 29 with 120 ms boosted: dispatched first at 59, keeps its own 120 ms quantum; at
        // expiry it is demoted from its TS level: tqexp[29] = 19 (not tqexp[59] = 49), quantum[19] = 160 ms.
        let mut ts = one_cpu(2, false);
        ts.boost_to_max(1);
        assert_eq!(ts.pick_next(0), Some(1));
        assert_eq!((ts.priority(1), ts.time_left(1)), (59, 120 * MILLIS));
        ts.on_quantum_expiry(1);
        assert_eq!((ts.priority(1), ts.time_left(1)), (19, 160 * MILLIS));
    }

    #[test]
    fn a_dcs_boost_ends_when_the_process_blocks_but_survives_preemption() {
        // Boosted pid 0 preempted (ran 1 ms): still queued at 59, ahead of pid 1 at 29. Then it blocks: its
        // priority is back to its TS level 29.
        let mut ts = one_cpu(2, false);
        ts.boost_to_max(0);
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_preempt(0, MILLIS);
        assert_eq!(ts.priority(0), 59);
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_block(0, MILLIS);
        assert_eq!(ts.priority(0), 29);
    }

    #[test]
    fn quantum_expiry_at_35_demotes_to_25_and_the_end_of_its_queue() {
        let mut ts = one_cpu(2, false);
        // Put both at 35 by hand (lwait/slpret cannot reach 35): expiry → tqexp[35] = 25, quantum 120 ms.
        for pid in 0..2 {
            ts.cpus[0].remove(29, pid);
            ts.set_level(pid, 35);
            ts.enqueue_back(pid);
        }
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_quantum_expiry(0);
        assert_eq!(ts.priority(0), 25);
        assert_eq!(ts.time_left(0), 120 * MILLIS);
        // pid 1 (still at 35) runs before the demoted pid 0.
        assert_eq!(ts.pick_next(0), Some(1));
    }

    #[test]
    fn preemption_without_expiry_goes_to_the_end_keeping_its_level_and_remaining_quantum() {
        let mut ts = one_cpu(3, false);
        assert_eq!(ts.pick_next(0), Some(0));
        // Ran 50 ms of its 120 ms quantum at level 29: 70 ms left, level unchanged, behind 1 and 2.
        ts.on_preempt(0, 50 * MILLIS);
        assert_eq!((ts.priority(0), ts.time_left(0)), (29, 70 * MILLIS));
        assert_eq!(ts.pick_next(0), Some(1));
        assert_eq!(ts.pick_next(0), Some(2));
        assert_eq!(ts.pick_next(0), Some(0));
    }

    #[test]
    fn a_flagged_sleeper_wakes_at_ts_slpret() {
        let mut ts = one_cpu(1, false);
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_block(0, MILLIS);
        ts.periodic_update(0..1); // asleep during ts_update: dispwait 1 > maxwait[29] = 0 → flagged
        ts.on_wakeup(0);
        // slpret[29] = 52, with a fresh quantum[52] = 40 ms.
        assert_eq!((ts.priority(0), ts.time_left(0)), (52, 40 * MILLIS));
        assert_eq!(ts.counters()[0], ("slpret_boosts", 1));
    }

    #[test]
    fn an_unflagged_sleeper_keeps_its_level() {
        let mut ts = one_cpu(1, false);
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_block(0, MILLIS);
        ts.on_wakeup(0); // no ts_update while asleep: dispwait 0, not > 0 → no boost
        assert_eq!((ts.priority(0), ts.time_left(0)), (29, 119 * MILLIS));
    }

    #[test]
    fn ablation_keeps_the_sleepers_level() {
        let mut ts = one_cpu(1, true);
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_block(0, MILLIS);
        ts.periodic_update(0..1);
        ts.on_wakeup(0);
        // ts_slpret[29] = 29 under the ablation: same level, a fresh 120 ms quantum.
        assert_eq!((ts.priority(0), ts.time_left(0)), (29, 120 * MILLIS));
    }

    #[test]
    fn ts_update_raises_waiting_processes_to_lwait_but_not_the_running_one() {
        let mut ts = one_cpu(2, false);
        assert_eq!(ts.pick_next(0), Some(0)); // 0 runs, 1 waits at 29
        ts.periodic_update(0..1);
        // 1: dispwait 1 > maxwait[29] = 0 → lwait[29] = 52. 0 is running: untouched at 29.
        assert_eq!((ts.priority(0), ts.priority(1)), (29, 52));
        assert!(
            ts.should_preempt(0, 0),
            "52 > 29: the raised process preempts"
        );
    }

    #[test]
    fn preemption_needs_a_strictly_higher_level() {
        let mut ts = one_cpu(2, false);
        assert_eq!(ts.pick_next(0), Some(0));
        assert!(
            !ts.should_preempt(0, 0),
            "1 waits at 29 = running 0's level: no preemption"
        );
        assert_eq!(ts.run_queue_len(0), 1);
    }

    #[test]
    fn a_set_quantum_applies_from_the_next_fresh_quantum() {
        // pid 0 at level 29 holds its 120 ms quantum; set to 50 ms, it keeps the 120 ms in progress; at expiry it
        // goes to tqexp[29] = 19 with 50 ms (not quantum[19] = 160 ms), and again 50 ms at level 9 after that.
        let mut ts = one_cpu(2, false);
        ts.set_quantum(0, Some(50 * MILLIS)).unwrap();
        assert_eq!(ts.pick_next(0), Some(0));
        assert_eq!(ts.time_left(0), 120 * MILLIS);
        ts.on_quantum_expiry(0);
        assert_eq!((ts.priority(0), ts.time_left(0)), (19, 50 * MILLIS));
        // Back to the table: the next fresh quantum is quantum[9] = 200 ms.
        ts.set_quantum(0, None).unwrap();
        assert_eq!(ts.pick_next(0), Some(1));
        assert_eq!(ts.pick_next(0), Some(0));
        ts.on_quantum_expiry(0);
        assert_eq!((ts.priority(0), ts.time_left(0)), (9, 200 * MILLIS));
        assert!(!ts.supports(OsOperation::SetPriorityBonus));
        assert!(ts.set_priority_bonus(0, 3).is_err());
    }

    #[test]
    fn migration_moves_a_queued_process_to_the_end_of_its_level_on_the_other_cpu() {
        // CPU 0 holds 0 and 1, CPU 1 holds 2 (all at 29). Migrating 0 to CPU 1 queues it behind 2; CPU 0 keeps 1.
        let mut ts = SolarisTs::new(2, false);
        ts.admit(0, 0);
        ts.admit(1, 0);
        ts.admit(2, 1);
        ts.migrate(0, 1).unwrap();
        assert_eq!((ts.run_queue_len(0), ts.run_queue_len(1)), (1, 2));
        assert_eq!(ts.pick_next(1), Some(2));
        assert_eq!(ts.pick_next(1), Some(0));
        assert_eq!(ts.pick_next(0), Some(1));
        // A sleeper migrates too and wakes on its new CPU; ts_update now counts it with CPU 0's members.
        ts.on_block(0, MILLIS);
        ts.migrate(0, 0).unwrap();
        ts.on_wakeup(0);
        assert_eq!((ts.run_queue_len(0), ts.run_queue_len(1)), (1, 0));
        assert_eq!(ts.cpus[0].members, vec![1, 0]);
    }

    #[test]
    fn dcs_boost_goes_to_the_front_of_queue_59() {
        let mut ts = one_cpu(3, false);
        // Raise 1 to 59 by boosting, then boost 2: 2 is at the FRONT of queue 59, ahead of 1.
        ts.boost_to_max(1);
        ts.boost_to_max(2);
        assert_eq!(ts.pick_next(0), Some(2));
        assert_eq!(ts.pick_next(0), Some(1));
        assert_eq!(ts.pick_next(0), Some(0));
        assert_eq!(ts.pick_next(0), None);
    }
}
