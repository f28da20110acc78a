//! The engine: hands the events the loop reads to the policy, and carries out what the policy decides.
//!
//! ## Problem
//! A policy must decide from the tracked tasks and act on them without doing I/O, and every action must go
//! through the same guarded path ([`crate::actuator`]) whatever policy asked for it.
//!
//! ## Approach
//! [`Engine`] owns the [`Tracker`], an [`Actuate`] (the kernel, or a test double), a [`Probe`] (BPF's maps, or
//! a test double) and the policy. For each event it builds a [`Ctx`] — the policy's view of the tasks and its
//! actions — and calls the policy. An action is carried out at once, its result written into the tracker and
//! the counters, and its success returned, so the policy's state follows what happened (DCS records `Tp` only
//! for a boost carried out). The engine has no file descriptors and reads no clock: the loop
//! ([`crate::daemon`]) passes `now`, so the whole path from event to action runs in unit tests without root.
//!
//! ## Algorithm
//! ```text
//! arrival(tid, R, t):   adopt tid if new; R statistics; policy.on_arrival
//! timer(now):           for each thread boosted with until <= now + 1 ms: policy.on_window_end(tid);
//!                           still boosted with until <= now: restore
//!                       if the policy's deadline <= now: policy.on_deadline
//! tick(now):            for each process: sample (CPU time, R) from BPF; policy.on_tick
//! boost(tid, until):    never a thread real-time by its own choice; FIFO via the actuator (a boosted thread:
//!                       only its window end moves); a boost the policy made on its own, not for the arrival
//!                       being decided, is told to BPF ("kicked") so the reaction is measured from it
//! ```

use crate::actuator::{self, ActError, Actuate};
use crate::intf::{self, Event};
use crate::policy::{Arrival, Policy};
use crate::proto::Latency;
use crate::stats::Counters;
use crate::tracker::{Mode, Process, Thread, Tracker};
use cosched_policy::Nanos;

/// Boost windows ending this close together are decided at one timer wake-up: the ranks of a coscheduled job
/// then share one deadline, and the agent, which preempts a rank whenever it wakes, wakes once for all.
pub const TIMER_COALESCE_NS: Nanos = 1_000_000;

/// What the engine reads from (and tells) the BPF side.
pub trait Probe {
    /// A managed thread's BPF state.
    fn task(&self, tid: u32) -> Option<intf::Task>;
    /// A managed process's CPU time as BPF booked it at its threads' switch-outs, ns.
    fn proc_runtime(&self, tgid: u32) -> Option<Nanos>;
    /// The agent boosted `tid` at `when` on its own initiative (the reaction is measured from then).
    fn kicked(&self, tid: u32, when: Nanos);
    /// Stops watching a thread.
    fn forget_task(&self, tid: u32);
}

/// The mechanism's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `SCHED_FIFO` priority of a boosted thread.
    pub rt_prio: u32,
    /// Print one line per action and per noted decision on stderr.
    pub log_actions: bool,
    /// Fault injection (safety tests): panic right after this many boosts, with the last one in place.
    pub panic_after_boosts: Option<u64>,
    /// When the agent started (the log's time origin).
    pub started_ns: Nanos,
}

/// A process's CPU time while managed (ns) and its current `R`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// What BPF booked at its threads' switch-outs, plus the running part of every thread on a CPU now (a
    /// thread that spins alone is never switched out, so its booked time lags).
    pub cpu_ns: Nanos,
    /// The largest run-queue length its threads saw at their last switch-in or arrival (`None`: none seen).
    pub rq_len: Option<u32>,
}

/// One look at a process in BPF (one lookup per thread, through the tracker's index).
pub fn sample(probe: &dyn Probe, tracker: &Tracker, tgid: u32, now: Nanos) -> Option<Sample> {
    let booked = probe.proc_runtime(tgid)?;
    let mut running = 0;
    let mut rq_len = None;
    for task in tracker.threads_of(tgid).filter_map(|t| probe.task(t.tid)) {
        if task.on_cpu != 0 {
            running += now.saturating_sub(task.switched_in_ns);
        }
        if task.rq_len > 0 {
            rq_len = Some(rq_len.unwrap_or(0).max(task.rq_len));
        }
    }
    Some(Sample {
        cpu_ns: booked + running,
        rq_len,
    })
}

/// A policy's view of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadView {
    pub tid: u32,
    pub tgid: u32,
    pub mode: Mode,
}

/// A policy's view of one process, as sampled at the last tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessView {
    pub tgid: u32,
    pub job: u64,
    /// CPU time while managed and `R` at the last tick (`None` when BPF had no entry for it then).
    pub sampled: Option<Sample>,
}

/// The policy's window on the world for one event: a read-only view of the tracked tasks, and the actions.
pub struct Ctx<'a> {
    now: Nanos,
    tracker: &'a mut Tracker,
    act: &'a mut dyn Actuate,
    probe: &'a dyn Probe,
    counters: &'a mut Counters,
    settings: &'a Settings,
    deadline: &'a mut Option<Nanos>,
    timer_stale: &'a mut bool,
    /// The thread whose arrival is being decided (its boost answers that arrival).
    arrival_tid: Option<u32>,
    /// Whether that thread was boosted.
    answered: bool,
}

impl Ctx<'_> {
    /// The time of the event, CLOCK_MONOTONIC ns (the clock of BPF's times).
    pub fn now(&self) -> Nanos {
        self.now
    }

    pub fn thread(&self, tid: u32) -> Option<ThreadView> {
        self.tracker.thread(tid).map(|t| ThreadView {
            tid: t.tid,
            tgid: t.tgid,
            mode: t.mode,
        })
    }

    /// BPF's state of a managed thread (`on_cpu`, `pending`, `rq_len`, arrival and poll times, ...).
    pub fn task(&self, tid: u32) -> Option<intf::Task> {
        self.probe.task(tid)
    }

    pub fn process(&self, tgid: u32) -> Option<ProcessView> {
        self.tracker.process(tgid).map(|p| ProcessView {
            tgid: p.tgid,
            job: p.job,
            sampled: p.cpu_ns.map(|cpu_ns| Sample {
                cpu_ns,
                rq_len: p.rq_len,
            }),
        })
    }

    /// A process's CPU time and `R` now (fresh from BPF).
    pub fn sample(&self, tgid: u32) -> Option<Sample> {
        sample(self.probe, self.tracker, tgid, self.now)
    }

    /// The tracked processes, ascending.
    pub fn tgids(&self) -> Vec<u32> {
        self.tracker.tgids()
    }

    /// A process's tracked threads, ascending.
    pub fn tids_of(&self, tgid: u32) -> Vec<u32> {
        self.tracker.tids_of(tgid)
    }

    /// Boosts `tid` to `SCHED_FIFO` until `until`; for a boosted thread, moves its window end to `until`.
    /// Returns whether the thread is boosted now.
    pub fn boost(&mut self, tid: u32, until: Nanos) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !actuator::boostable(&t.orig) {
            return false;
        }
        if let Mode::Boosted {
            since,
            until: before,
        } = t.mode
        {
            if until < before {
                *self.timer_stale = true;
            }
            self.tracker.thread_mut(tid).expect("looked up above").mode =
                Mode::Boosted { since, until };
            return true;
        }
        let (tgid, slice_ns) = (t.tgid, t.slice_ns);
        let mode = Mode::Boosted {
            since: self.now,
            until,
        };
        if !self.carry_out(tid, mode, slice_ns) {
            return false;
        }
        *self.timer_stale = true;
        self.counters.boosts_granted += 1;
        if let Some(job) = self
            .tracker
            .job_of(tgid)
            .and_then(|j| self.tracker.job_mut(j))
        {
            job.counters.boosts += 1;
        }
        if self.arrival_tid == Some(tid) {
            self.answered = true;
        } else {
            self.probe.kicked(tid, self.now);
        }
        self.log(tid, "boost", format_args!(""));
        if self
            .settings
            .panic_after_boosts
            .is_some_and(|n| self.counters.boosts_granted >= n)
        {
            panic!("--panic-after-boosts: injected panic with tid {tid} boosted");
        }
        true
    }

    /// Puts `tid` back to its own attributes (ending a boost, a nice level, a slice, a pin). Returns whether it was
    /// changed (a thread already in its own attributes needs nothing).
    pub fn restore(&mut self, tid: u32) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !t.changed() {
            return false;
        }
        let orig = t.orig;
        let res = self.act.restore(tid, &orig);
        // Whatever the result, the guard is gone: the thread counts as restored (a failure is counted).
        let t = self.tracker.thread_mut(tid).expect("looked up above");
        t.mode = Mode::Normal;
        t.slice_ns = None;
        t.affinity = None;
        self.counters.restores += 1;
        if let Err(err) = res {
            self.fail(err);
        }
        self.log(tid, "restore", format_args!(""));
        true
    }

    /// Gives a time-sharing thread (its own policy `SCHED_OTHER` or `SCHED_BATCH`) nice level `nice`; ends a
    /// boost. Returns whether it has that level now.
    pub fn nice(&mut self, tid: u32, nice: i32) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !actuator::time_sharing(&t.orig) || !(-20..=19).contains(&nice) {
            return false;
        }
        if t.mode == (Mode::Niced { nice }) {
            return true;
        }
        let (was_boosted, slice_ns) = (matches!(t.mode, Mode::Boosted { .. }), t.slice_ns);
        if was_boosted {
            *self.timer_stale = true;
        }
        let ok = self.carry_out(tid, Mode::Niced { nice }, slice_ns);
        if ok {
            self.log(tid, "nice", format_args!("nice={nice}"));
        }
        ok
    }

    /// Sets (or with `None` removes) a time-sharing thread's custom slice (`sched_runtime`, ns; the kernel
    /// keeps it within 0.1–100 ms). It holds until the thread is restored, under any nice level; a boosted
    /// thread gets it when its boost ends. Returns whether it was carried out.
    pub fn slice(&mut self, tid: u32, slice_ns: Option<Nanos>) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !actuator::time_sharing(&t.orig) {
            return false;
        }
        if t.slice_ns == slice_ns {
            return true;
        }
        let mode = t.mode;
        let ok = self.carry_out(tid, mode, slice_ns);
        if ok {
            self.log(tid, "slice", format_args!("slice_ns={slice_ns:?}"));
        }
        ok
    }

    /// Pins a thread to `cpus` (or with `None` gives it its own CPU affinity back); it holds in every mode until
    /// the thread is restored. Returns whether it was carried out (an empty set is refused).
    pub fn affinity(&mut self, tid: u32, cpus: Option<Vec<u32>>) -> bool {
        let cpus = cpus.map(|mut c| {
            c.sort_unstable();
            c.dedup();
            c
        });
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if cpus.as_ref().is_some_and(|c| c.is_empty()) {
            return false;
        }
        if t.affinity == cpus {
            return true;
        }
        let orig = t.orig;
        match self.act.set_affinity(tid, cpus.as_deref(), &orig) {
            Ok(()) => {
                self.log(tid, "affinity", format_args!("cpus={cpus:?}"));
                self.tracker
                    .thread_mut(tid)
                    .expect("looked up above")
                    .affinity = cpus;
                true
            }
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    /// Asks for a call to [`Policy::on_deadline`] at `at` (the earliest of the deadlines asked for wins).
    pub fn arm(&mut self, at: Nanos) {
        if self.deadline.is_none_or(|d| at < d) {
            *self.deadline = Some(at);
            *self.timer_stale = true;
        }
    }

    /// Counts a decision under one of the policy's [`crate::policy::Counter`]s (for the whole agent and for
    /// the process's job) and, with `--log-actions`, prints it with `detail`.
    pub fn note(
        &mut self,
        tgid: u32,
        tid: u32,
        counter: &'static str,
        detail: std::fmt::Arguments,
    ) {
        *self.counters.policy.entry(counter).or_default() += 1;
        if let Some(job) = self
            .tracker
            .job_of(tgid)
            .and_then(|j| self.tracker.job_mut(j))
        {
            *job.counters.policy.entry(counter).or_default() += 1;
        }
        self.log_process(tgid, tid, counter, detail);
    }

    /// Gives `tid` the attributes of `mode` with `slice_ns` through the actuator; on success records them.
    fn carry_out(&mut self, tid: u32, mode: Mode, slice_ns: Option<Nanos>) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        let (orig, pinned) = (t.orig, t.affinity.is_some());
        let res = match actuator::attributes(&orig, mode, slice_ns, self.settings.rt_prio) {
            // Its own attributes, but the agent's CPU affinity stays: keep the guard.
            None if pinned => self.act.change(tid, &orig.restorable(), &orig),
            None => self.act.restore(tid, &orig),
            Some(want) => self.act.change(tid, &want, &orig),
        };
        match res {
            Ok(()) => {
                let t = self.tracker.thread_mut(tid).expect("looked up above");
                t.mode = mode;
                t.slice_ns = slice_ns;
                true
            }
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    fn fail(&mut self, err: ActError) {
        fail(self.counters, err);
    }

    fn log(&self, tid: u32, what: &str, detail: std::fmt::Arguments) {
        let tgid = self.tracker.thread(tid).map_or(0, |t| t.tgid);
        self.log_process(tgid, tid, what, detail);
    }

    fn log_process(&self, tgid: u32, tid: u32, what: &str, detail: std::fmt::Arguments) {
        if self.settings.log_actions {
            let job = self.tracker.job_of(tgid).unwrap_or(0);
            eprintln!(
                "[{:>12.6}] (job{job}:pid{tgid}) {what} tid={tid} {detail}",
                self.now.saturating_sub(self.settings.started_ns) as f64 / 1e9
            );
        }
    }
}

/// Counts a failed action: a thread that exited is no error; anything else is kept as the last error.
fn fail(counters: &mut Counters, err: ActError) {
    if err.gone() {
        counters.refused_gone += 1;
    } else {
        counters.boost_errors += 1;
        counters.last_error = Some(err.to_string());
    }
}

/// The mechanism around one policy.
pub struct Engine<A: Actuate, P: Probe> {
    pub tracker: Tracker,
    pub act: A,
    pub probe: P,
    pub counters: Counters,
    pub settings: Settings,
    policy: Box<dyn Policy>,
    /// The deadline the policy armed, if any.
    deadline: Option<Nanos>,
    /// Some window end or deadline moved earlier since the loop last armed its timer.
    pub timer_stale: bool,
    /// The clock for the decision latency (arrival → boost carried out).
    clock: fn() -> Nanos,
}

impl<A: Actuate, P: Probe> Engine<A, P> {
    pub fn new(
        policy: Box<dyn Policy>,
        act: A,
        probe: P,
        settings: Settings,
        clock: fn() -> Nanos,
    ) -> Self {
        Engine {
            tracker: Tracker::new(),
            act,
            probe,
            counters: Counters::default(),
            settings,
            policy,
            deadline: None,
            timer_stale: false,
            clock,
        }
    }

    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// Runs `f` with the policy and a [`Ctx`] at `now`; returns whether the arrival's thread was boosted.
    fn with_policy(
        &mut self,
        now: Nanos,
        arrival_tid: Option<u32>,
        f: impl FnOnce(&mut dyn Policy, &mut Ctx),
    ) -> bool {
        let mut ctx = Ctx {
            now,
            tracker: &mut self.tracker,
            act: &mut self.act,
            probe: &self.probe,
            counters: &mut self.counters,
            settings: &self.settings,
            deadline: &mut self.deadline,
            timer_stale: &mut self.timer_stale,
            arrival_tid,
            answered: false,
        };
        f(self.policy.as_mut(), &mut ctx);
        ctx.answered
    }

    /// The earliest moment the timer must fire: a window end or the policy's deadline.
    pub fn next_deadline(&self) -> Option<Nanos> {
        match (self.tracker.next_window_end(), self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Starts tracking a process of `job` (its threads come with [`adopt_thread`](Self::adopt_thread)).
    pub fn add_process(&mut self, tgid: u32, job: u64, cpu_at_start_ticks: u64, now: Nanos) {
        self.tracker.add_process(Process {
            tgid,
            job,
            registered_ns: now,
            cpu_at_start_ticks,
            cpu_ns: None,
            rq_len: None,
            r_sum: 0,
            r_count: 0,
        });
        self.with_policy(now, None, |p, ctx| p.on_process_arrival(ctx, tgid));
    }

    /// A thread BPF manages but the engine has not met (one that existed at registration, or whose fork event
    /// was lost): open its handle, then check BPF still has it — entries vanish at exit and are only created for
    /// tasks of managed processes, so a present entry proves the handle names the right task.
    pub fn adopt_thread(&mut self, tgid: u32, tid: u32) -> bool {
        if self.tracker.process(tgid).is_none() {
            return false;
        }
        let orig = match self.act.adopt(tgid, tid) {
            Ok(orig) => orig,
            Err(_) => {
                self.probe.forget_task(tid);
                return false;
            }
        };
        if self.probe.task(tid).is_none_or(|t| t.tgid != tgid) {
            self.act.forget(tid);
            return false;
        }
        self.tracker.add_thread(Thread::new(tid, tgid, orig))
    }

    /// A managed task created thread `tid` of `tgid` (`parent`: the creating thread). A child of a thread the
    /// agent had niced or given a slice inherited that: it gets the parent's own attributes (a boosted
    /// parent's child starts in `SCHED_OTHER` at the parent's own nice, thanks to reset-on-fork). A child of a
    /// thread the agent had pinned keeps the pin, undone with the parent's.
    pub fn on_thread_start(&mut self, tgid: u32, tid: u32, parent: u32) {
        if !self.adopt_thread(tgid, tid) {
            return;
        }
        let Some(p) = self.tracker.thread(parent) else {
            return;
        };
        let (porig, changed, pin) = (
            p.orig,
            matches!(p.mode, Mode::Niced { .. }) || p.slice_ns.is_some(),
            p.affinity.clone(),
        );
        if changed {
            let child = self.tracker.thread_mut(tid).expect("adopted above");
            let inherited = child.orig;
            child.orig = porig;
            if inherited.restorable() != porig.restorable() {
                // Its own attributes from now on (the parent's): no guard, nothing to undo.
                if let Err(err) = self.act.restore(tid, &porig) {
                    fail(&mut self.counters, err);
                }
            }
        }
        if pin.is_some() {
            let orig = self.tracker.thread(tid).expect("adopted above").orig;
            match self.act.inherit_affinity(tid, parent, &orig) {
                Ok(()) => {
                    self.tracker
                        .thread_mut(tid)
                        .expect("adopted above")
                        .affinity = pin
                }
                Err(err) => fail(&mut self.counters, err),
            }
        }
    }

    /// A flagged arrival.
    pub fn on_arrival(&mut self, e: &Event, now: Nanos) {
        let (tid, tgid) = (e.tid, e.tgid);
        if self.tracker.thread(tid).is_none() && !self.adopt_thread(tgid, tid) {
            return;
        }
        let Some(p) = self.tracker.process_mut(tgid) else {
            return;
        };
        p.r_sum += u64::from(e.nr_running.max(1));
        p.r_count += 1;
        let arrival = Arrival {
            tid,
            tgid,
            run_queue_len: e.nr_running,
            time_ns: e.time_ns,
        };
        let answered = self.with_policy(now, Some(tid), |p, ctx| p.on_arrival(ctx, &arrival));
        if answered {
            let us = (self.clock)().saturating_sub(e.time_ns) / 1000;
            let b = Latency::bucket(us, self.counters.decision_hist.len());
            self.counters.decision_hist[b] += 1;
        }
    }

    /// The timer fired: the boost windows that ended, and the policy's deadline.
    pub fn on_timer(&mut self, now: Nanos) {
        let mut due: Vec<u32> = self
            .tracker
            .threads()
            .filter_map(|t| match t.mode {
                Mode::Boosted { until, .. } if until <= now + TIMER_COALESCE_NS => Some(t.tid),
                _ => None,
            })
            .collect();
        due.sort_unstable();
        for tid in due {
            // An earlier decision of this batch (a whole process demoted) may have changed it already.
            if !matches!(
                self.tracker.thread(tid).map(|t| t.mode),
                Some(Mode::Boosted { .. })
            ) {
                continue;
            }
            self.with_policy(now, None, |p, ctx| {
                p.on_window_end(ctx, tid);
                if let Some(ThreadView {
                    mode: Mode::Boosted { until, .. },
                    ..
                }) = ctx.thread(tid)
                {
                    if until <= now {
                        // A window is a window: the policy did not renew it.
                        ctx.restore(tid);
                    }
                }
            });
        }
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            self.with_policy(now, None, |p, ctx| p.on_deadline(ctx));
        }
        self.timer_stale = true;
    }

    /// The periodic tick: every process's CPU time and `R` are sampled, then the policy looks.
    pub fn on_tick(&mut self, now: Nanos) {
        for tgid in self.tracker.tgids() {
            let s = sample(&self.probe, &self.tracker, tgid, now);
            let p = self.tracker.process_mut(tgid).expect("listed above");
            p.cpu_ns = s.map(|s| s.cpu_ns);
            p.rq_len = s.and_then(|s| s.rq_len);
        }
        self.with_policy(now, None, |p, ctx| p.on_tick(ctx));
    }

    /// A managed thread exited.
    pub fn on_thread_exit(&mut self, tid: u32) {
        if self.tracker.remove_thread(tid).is_some() {
            self.policy.on_thread_exit(tid);
        }
        self.act.forget(tid);
        self.probe.forget_task(tid);
    }

    /// A managed process exited: its threads go, then the process. Returns it, with its CPU time as BPF
    /// booked it (read before its entry goes).
    pub fn remove_process(&mut self, tgid: u32) -> Option<(Process, Nanos)> {
        let booked = self.probe.proc_runtime(tgid);
        for tid in self.tracker.tids_of(tgid) {
            self.on_thread_exit(tid);
        }
        let p = self.tracker.remove_process(tgid)?;
        self.policy.on_process_exit(tgid);
        let booked = booked.unwrap_or(0).max(p.cpu_ns.unwrap_or(0));
        Some((p, booked))
    }

    /// Restores every thread the agent changed (shutdown; the guardian covers the other ways to end).
    pub fn restore_everything(&mut self, now: Nanos) {
        let tids: Vec<u32> = self
            .tracker
            .threads()
            .filter(|t| t.changed())
            .map(|t| t.tid)
            .collect();
        self.with_policy(now, None, |_, ctx| {
            for tid in tids {
                ctx.restore(tid);
            }
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Test doubles of the kernel side ([`FakeActuator`], [`FakeProbe`]) and the do-nothing policy that proves
    //! the seam: it is registered with one line in [`crate::policy::registry`] and driven below.
    use super::*;
    use crate::policy::{Counter, Host, PolicyFlags};
    use crate::sched::{self, SchedAttr};
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// Records every change instead of making it; `refuse` makes every change fail as if the thread had exited.
    #[derive(Default)]
    pub struct FakeActuator {
        /// tid → the attributes it has now (absent: its own).
        pub applied: HashMap<u32, SchedAttr>,
        /// One line per call: "change 7 policy=1 nice=0", "restore 7".
        pub calls: Vec<String>,
        /// tid → its own attributes (adopt returns these; default SCHED_OTHER nice 0).
        pub own: HashMap<u32, SchedAttr>,
        pub refuse: bool,
    }

    impl Actuate for FakeActuator {
        fn adopt(&mut self, _tgid: u32, tid: u32) -> Result<SchedAttr, ActError> {
            Ok(self.own.get(&tid).copied().unwrap_or_else(|| SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                ..Default::default()
            }))
        }
        fn change(
            &mut self,
            tid: u32,
            want: &SchedAttr,
            _orig: &SchedAttr,
        ) -> Result<(), ActError> {
            if self.refuse {
                return Err(sched::SchedError::Gone { tid }.into());
            }
            self.calls.push(format!(
                "change {tid} policy={} nice={} runtime={}",
                want.sched_policy, want.sched_nice, want.sched_runtime
            ));
            self.applied.insert(tid, *want);
            Ok(())
        }
        fn restore(&mut self, tid: u32, _orig: &SchedAttr) -> Result<(), ActError> {
            self.calls.push(format!("restore {tid}"));
            self.applied.remove(&tid);
            Ok(())
        }
        fn set_affinity(
            &mut self,
            tid: u32,
            cpus: Option<&[u32]>,
            _orig: &SchedAttr,
        ) -> Result<(), ActError> {
            if self.refuse {
                return Err(sched::SchedError::Gone { tid }.into());
            }
            self.calls.push(format!("affinity {tid} {cpus:?}"));
            Ok(())
        }
        fn inherit_affinity(
            &mut self,
            child: u32,
            parent: u32,
            _orig: &SchedAttr,
        ) -> Result<(), ActError> {
            self.calls
                .push(format!("inherit-affinity {child} from {parent}"));
            Ok(())
        }
        fn forget(&mut self, tid: u32) {
            self.applied.remove(&tid);
        }
    }

    /// BPF's maps, made up: tasks and booked CPU time per process.
    #[derive(Default)]
    pub struct FakeProbe {
        pub tasks: RefCell<HashMap<u32, intf::Task>>,
        pub runtime: RefCell<HashMap<u32, Nanos>>,
        pub kicked: RefCell<Vec<(u32, Nanos)>>,
    }

    impl Probe for FakeProbe {
        fn task(&self, tid: u32) -> Option<intf::Task> {
            self.tasks.borrow().get(&tid).copied()
        }
        fn proc_runtime(&self, tgid: u32) -> Option<Nanos> {
            self.runtime.borrow().get(&tgid).copied()
        }
        fn kicked(&self, tid: u32, when: Nanos) {
            self.kicked.borrow_mut().push((tid, when));
        }
        fn forget_task(&self, tid: u32) {
            self.tasks.borrow_mut().remove(&tid);
        }
    }

    fn clock() -> Nanos {
        0
    }

    /// An engine around `policy` with test doubles, and processes `tgids` (one thread each, tid = tgid, off
    /// its CPU, an arrival pending) in job 1.
    pub fn engine(policy: Box<dyn Policy>, tgids: &[u32]) -> Engine<FakeActuator, FakeProbe> {
        let settings = Settings {
            rt_prio: 1,
            log_actions: false,
            panic_after_boosts: None,
            started_ns: 0,
        };
        let mut e = Engine::new(
            policy,
            FakeActuator::default(),
            FakeProbe::default(),
            settings,
            clock,
        );
        let job = e.tracker.new_job_id();
        e.tracker.add_job(job, "test".into(), tgids[0], 0);
        for &tgid in tgids {
            e.probe.runtime.borrow_mut().insert(tgid, 0);
            e.probe.tasks.borrow_mut().insert(
                tgid,
                intf::Task {
                    tgid,
                    pending: 1,
                    ..Default::default()
                },
            );
            e.add_process(tgid, job, 0, 0);
            assert!(e.adopt_thread(tgid, tgid));
        }
        e
    }

    /// A flagged arrival for `tid` with `R` = `r` at `t`.
    pub fn arrival(tid: u32, r: u32, t: Nanos) -> Event {
        Event {
            kind: intf::COSCHED_EV_ARRIVAL as u32,
            tid,
            tgid: tid,
            nr_running: r,
            time_ns: t,
            ..Default::default()
        }
    }

    /// The do-nothing policy: it acts on nothing, but counts what it is told and arms one deadline, so the test
    /// can see every event reach it.
    pub struct Idle {
        every_ms: u64,
        seen: std::rc::Rc<RefCell<Vec<String>>>,
    }

    thread_local! {
        /// What the last `Idle` built on this thread saw (tests run on their own threads).
        pub static IDLE_SEEN: std::rc::Rc<RefCell<Vec<String>>> = std::rc::Rc::default();
    }

    /// `--policy idle`'s flags.
    #[derive(clap::Args, Debug, Clone)]
    pub struct IdleFlags {
        /// Deadline period of the do-nothing policy.
        #[arg(long, default_value_t = 5)]
        pub idle_every_ms: u64,
    }

    impl PolicyFlags for IdleFlags {
        fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
            Ok(Box::new(Idle {
                every_ms: self.idle_every_ms,
                seen: IDLE_SEEN.with(|s| s.clone()),
            }))
        }
    }

    const IDLE_COUNTERS: &[Counter] = &[Counter {
        name: "ignored",
        refusal: true,
        description: "arrivals it let be",
    }];

    impl Policy for Idle {
        fn describe(&self) -> Vec<String> {
            vec![format!("idle_every_ms={}", self.every_ms)]
        }
        fn counters(&self) -> &'static [Counter] {
            IDLE_COUNTERS
        }
        fn on_process_arrival(&mut self, _ctx: &mut Ctx, tgid: u32) {
            self.seen.borrow_mut().push(format!("process {tgid}"));
        }
        fn on_process_exit(&mut self, tgid: u32) {
            self.seen.borrow_mut().push(format!("exit {tgid}"));
        }
        fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
            self.seen.borrow_mut().push(format!("arrival {}", a.tid));
            ctx.note(a.tgid, a.tid, "ignored", format_args!(""));
            ctx.arm(ctx.now() + self.every_ms * 1_000_000);
        }
        fn on_window_end(&mut self, _ctx: &mut Ctx, tid: u32) {
            self.seen.borrow_mut().push(format!("window {tid}"));
        }
        fn on_deadline(&mut self, ctx: &mut Ctx) {
            self.seen
                .borrow_mut()
                .push(format!("deadline {}", ctx.now()));
        }
        fn on_tick(&mut self, ctx: &mut Ctx) {
            self.seen.borrow_mut().push(format!("tick {}", ctx.now()));
        }
    }

    #[test]
    fn a_do_nothing_policy_is_registered_chosen_by_flag_and_driven() {
        use clap::{Args, FromArgMatches};
        // Chosen and configured from the command line like any policy: one registry line made it known.
        let cmd = crate::cli::AgentArgs::augment_args(clap::Command::new("agent"));
        let m = cmd
            .try_get_matches_from(["agent", "--policy", "idle", "--idle-every-ms", "3"])
            .unwrap();
        let args = crate::cli::AgentArgs::from_arg_matches(&m).unwrap();
        let policy = args
            .policy(&Host {
                kernel_tick_ns: 4_000_000,
            })
            .unwrap();
        assert_eq!(policy.describe(), vec!["idle_every_ms=3"]);
        IDLE_SEEN.with(|s| s.borrow_mut().clear());
        let mut e = engine(policy, &[10]);
        e.on_arrival(&arrival(10, 3, 1_000_000), 1_000_000);
        // It armed a deadline 3 ms later; the timer brings it.
        assert_eq!(e.next_deadline(), Some(4_000_000));
        e.on_timer(4_000_000);
        e.on_tick(10_000_000);
        e.remove_process(10);
        let seen = IDLE_SEEN.with(|s| s.borrow().clone());
        assert_eq!(
            seen,
            vec![
                "process 10",
                "arrival 10",
                "deadline 4000000",
                "tick 10000000",
                "exit 10"
            ]
        );
        // It did nothing, and its counter is in its statistics section.
        assert!(e.act.calls.is_empty());
        assert_eq!(e.counters.policy.get("ignored"), Some(&1));
        let stats = crate::stats::policy_section("idle", e.policy(), &e.counters);
        assert_eq!((stats.refused, stats.counters["ignored"]), (1, 1));
    }

    #[test]
    fn a_flag_of_another_policy_is_an_error() {
        use clap::{Args, FromArgMatches};
        let cmd = crate::cli::AgentArgs::augment_args(clap::Command::new("agent"));
        let m = cmd
            .try_get_matches_from(["agent", "--policy", "idle", "--exponent", "3"])
            .unwrap();
        let args = crate::cli::AgentArgs::from_arg_matches(&m).unwrap();
        let err = args
            .policy(&Host {
                kernel_tick_ns: 4_000_000,
            })
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--exponent") && err.contains("'dcs'"), "{err}");
    }

    /// A policy that boosts every arrival for 1 ms and does nothing else: for the mechanism's own rules.
    struct Eager;

    impl Policy for Eager {
        fn describe(&self) -> Vec<String> {
            vec![]
        }
        fn counters(&self) -> &'static [Counter] {
            &[]
        }
        fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
            ctx.boost(a.tid, ctx.now() + 1_000_000);
        }
        fn on_window_end(&mut self, _ctx: &mut Ctx, _tid: u32) {}
    }

    #[test]
    fn a_window_the_policy_does_not_renew_ends_and_real_time_threads_are_left_alone() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert_eq!(e.act.calls, vec!["change 10 policy=1 nice=0 runtime=0"]);
        assert_eq!(e.tracker.next_window_end(), Some(1_000_000));
        // The policy says nothing at the window end: the mechanism restores.
        e.on_timer(1_000_000);
        assert_eq!(e.act.calls.last().unwrap(), "restore 10");
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        // A thread real-time by its own choice is never boosted (nor lowered).
        e.act.own.insert(11, SchedAttr::fifo(50));
        e.probe.runtime.borrow_mut().insert(11, 0);
        e.probe.tasks.borrow_mut().insert(
            11,
            intf::Task {
                tgid: 11,
                ..Default::default()
            },
        );
        e.add_process(11, 1, 0, 0);
        e.on_arrival(&arrival(11, 2, 2_000_000), 2_000_000);
        assert_eq!(e.act.calls.len(), 2);
        assert_eq!(e.counters.boosts_granted, 1);
    }

    /// A policy that nices, slices and pins the receiver of each arrival: the other actions of the seam.
    struct Shaper;

    impl Policy for Shaper {
        fn describe(&self) -> Vec<String> {
            vec![]
        }
        fn counters(&self) -> &'static [Counter] {
            &[]
        }
        fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
            assert!(ctx.nice(a.tid, 5));
            assert!(ctx.slice(a.tid, Some(700_000)));
            assert!(ctx.affinity(a.tid, Some(vec![1, 0, 1])));
            assert!(!ctx.affinity(a.tid, Some(vec![])));
        }
        fn on_window_end(&mut self, _ctx: &mut Ctx, _tid: u32) {}
        fn on_tick(&mut self, ctx: &mut Ctx) {
            for tgid in ctx.tgids() {
                for tid in ctx.tids_of(tgid) {
                    ctx.restore(tid);
                }
            }
        }
    }

    #[test]
    fn nice_slice_and_affinity_are_carried_out_kept_on_fork_and_restored_together() {
        let mut e = engine(Box::new(Shaper), &[10]);
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert_eq!(
            e.act.calls,
            vec![
                "change 10 policy=0 nice=5 runtime=0",
                "change 10 policy=0 nice=5 runtime=700000",
                "affinity 10 Some([0, 1])",
            ]
        );
        let t = e.tracker.thread(10).unwrap();
        assert_eq!(
            (t.mode, t.slice_ns, t.affinity.clone()),
            (Mode::Niced { nice: 5 }, Some(700_000), Some(vec![0, 1]))
        );
        // A thread it creates inherited nice 5 and the slice: it gets its parent's own attributes back, and
        // keeps the pin, which is undone like the parent's.
        e.probe.tasks.borrow_mut().insert(
            11,
            intf::Task {
                tgid: 10,
                ..Default::default()
            },
        );
        e.act.own.insert(
            11,
            SchedAttr {
                sched_nice: 5,
                sched_runtime: 700_000,
                ..Default::default()
            },
        );
        e.on_thread_start(10, 11, 10);
        assert_eq!(
            &e.act.calls[3..],
            ["restore 11", "inherit-affinity 11 from 10"]
        );
        assert_eq!(e.tracker.thread(11).unwrap().affinity, Some(vec![0, 1]));
        // One restore puts everything back.
        e.on_tick(1_000_000);
        assert_eq!(&e.act.calls[5..], ["restore 10", "restore 11"]);
        assert!(!e.tracker.thread(10).unwrap().changed());
        assert!(!e.tracker.thread(11).unwrap().changed());
    }

    #[test]
    fn a_failed_change_leaves_the_thread_as_it_was() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.act.refuse = true;
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!((e.counters.boosts_granted, e.counters.refused_gone), (0, 1));
    }
}
