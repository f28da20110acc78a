//! The engine: hands the events the loop reads to the policy, and carries out what the policy decides.
//!
//! ## Problem
//! A policy must decide from the tracked tasks and act on them without doing I/O, and every action must go
//! through the same guarded path ([`crate::actuator`]) whatever policy asked for it.
//!
//! ## Approach
//! [`Engine`] owns the [`Tracker`], an [`Actuate`] (the kernel, or a test double), a [`Probe`] (BPF's maps, or
//! a test double) and the policy. For each event it builds a [`Ctx`] ([`crate::ctx`]) — the policy's view of
//! the tasks and its actions — and calls the policy. An action is carried out at once and its success
//! returned, so the policy's state follows what happened (DCS records `Tp` only for a boost carried out). The engine has no file descriptors and reads no clock: the loop
//! ([`crate::daemon`]) passes `now`, so the whole path from event to action runs in unit tests without root.
//!
//! ## Algorithm
//! ```text
//! arrival(tid, R, t):   adopt tid if new; R statistics; policy.on_arrival
//! timer(now):           for each thread boosted with until <= now + 1 ms: policy.on_window_end(tid);
//!                           still boosted with until <= now: restore
//!                       if the policy's deadline <= now: policy.on_deadline
//! tick(now):            for each process: sample (CPU time, R) from BPF; policy.on_tick
//! ```

use crate::actuator::Actuate;
use crate::ctx::fail;
pub use crate::ctx::{sample, Ctx, Probe, ProcessView, Sample, Settings, ThreadView};
use crate::intf::{self, Event};
use crate::policy::{Arrival, Policy};
use crate::proto::Latency;
use crate::stats::Counters;
use crate::tracker::{Mode, Process, Thread, Tracker};
use cosched_policy::Nanos;
use std::collections::BTreeMap;

/// Boost windows ending this close together are decided at one timer wake-up: the ranks of a coscheduled job
/// then share one deadline, and the agent, which preempts a rank whenever it wakes, wakes once for all.
pub const TIMER_COALESCE_NS: Nanos = 1_000_000;

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
    /// Boosts paused for a local task: tid → (resume at, the window's end, the last moment to resume).
    yielded: BTreeMap<u32, (Nanos, Nanos, Nanos)>,
}

/// How many pauses past its window's end a boost paused for a local task may still be resumed (while the local
/// task waits, or the fair class gave the thread its CPU back): about one slice of the fair class at the default
/// `--yield-us`, the longest a thread that got its CPU back keeps it beside a competitor.
pub(crate) const RESUME_CHECKS: u64 = 4;

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
            yielded: BTreeMap::new(),
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

    /// The earliest moment the timer must fire: a window end, a paused boost's resumption, or the policy's
    /// deadline.
    pub fn next_deadline(&self) -> Option<Nanos> {
        let resume = self.yielded.values().map(|&(at, _, _)| at).min();
        [self.tracker.next_window_end(), self.deadline, resume]
            .into_iter()
            .flatten()
            .min()
    }

    /// Starts tracking a process of `job` (its threads come with [`adopt_thread`](Self::adopt_thread)).
    pub fn add_process(&mut self, tgid: u32, job: u64, cpu_at_start_ticks: u64, now: Nanos) {
        self.tracker.add_process(Process {
            tgid,
            job,
            registered_ns: now,
            cpu_at_start_ticks,
            cpu_ns: None,
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
        if let Some(job) = self.tracker.job_full(tgid) {
            self.refuse_thread(job, tgid, tid);
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

    /// Whether job `job` already has [`MAX_THREADS_PER_JOB`](crate::tracker::MAX_THREADS_PER_JOB) managed
    /// threads, so its new thread `tid` of `tgid` is left unmanaged: counted, reported as the last error, and
    /// forgotten by BPF. One job may not take the guardian's table or the agent's ticks from the others.
    pub fn refuse_if_full(&mut self, job: u64, tgid: u32, tid: u32) -> bool {
        let full = self.tracker.job_at_cap(job);
        if full {
            self.refuse_thread(job, tgid, tid);
        }
        full
    }

    fn refuse_thread(&mut self, job: u64, tgid: u32, tid: u32) {
        self.counters.threads_refused += 1;
        self.counters.last_error = Some(format!(
            "job {job} already has {} managed threads, the most one job may have; thread {tid} of pid {tgid} is \
             left unmanaged",
            crate::tracker::MAX_THREADS_PER_JOB
        ));
        self.probe.forget_task(tid);
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
        let (porig, changed, pin, creator_mode) = (
            p.orig,
            matches!(p.mode, Mode::Niced { .. } | Mode::Paused) || p.slice_ns.is_some(),
            p.affinity.clone(),
            p.mode,
        );
        if changed {
            let child = self.tracker.thread_mut(tid).expect("adopted above");
            let inherited = child.orig;
            child.orig = porig;
            if inherited.restorable() != porig.restorable() {
                // Its own attributes from now on (the parent's): no guard, nothing to undo.
                if let Err(err) = self.act.restore(tid, &porig).map(|_| ()) {
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
        let now = (self.clock)();
        self.with_policy(now, None, |p, ctx| {
            p.on_thread_start(ctx, tid, creator_mode)
        });
    }

    /// A flagged arrival.
    pub fn on_arrival(&mut self, e: &Event, now: Nanos) {
        let (tid, tgid) = (e.tid, e.tgid);
        if self.tracker.thread(tid).is_none() && !self.adopt_thread(tgid, tid) {
            self.counters.arrivals_unattributed += 1;
            return;
        }
        let Some(p) = self.tracker.process_mut(tgid) else {
            self.counters.arrivals_unattributed += 1;
            return;
        };
        p.r_sum += u64::from(e.arg).max(intf::COSCHED_R_ONE_MILLI);
        p.r_count += 1;
        let arrival = Arrival {
            tid,
            tgid,
            r_milli: e.arg,
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
        self.resume_yielded(now);
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

    /// The periodic tick: every process's CPU time is sampled, then the policy looks.
    pub fn on_tick(&mut self, now: Nanos) {
        for tgid in self.tracker.tgids() {
            let s = sample(&self.probe, &self.tracker, tgid, now);
            let p = self.tracker.process_mut(tgid).expect("listed above");
            p.cpu_ns = s.map(|s| s.cpu_ns);
        }
        self.with_policy(now, None, |p, ctx| p.on_tick(ctx));
    }

    /// How many times each managed thread fell asleep after an empty poll (gave up spinning for a message),
    /// as BPF counted since the thread became managed: (tid, count).
    pub fn thread_blocks(&self) -> Vec<(u32, u64)> {
        self.tracker
            .threads()
            .filter_map(|t| self.probe.task(t.tid).map(|task| (t.tid, task.blocks)))
            .collect()
    }

    /// Whether the tick has anything to decide: a managed thread is lowered, a boost is paused, or the policy says
    /// so ([`Policy::tick_needed`]). A live boost alone is not: its window's end (at most `--max-boost-ms` away)
    /// wakes the agent and the policy decides there, so ticking beside it only adds real-time wake-ups, each of
    /// which takes its CPU from a rank (a spin-block ping-pong beside two competitors per CPU kept more of its
    /// coscheduled time with the tick at 50 ms than at 10 ms, docs/lab-selfcheck.md).
    pub fn tick_needed(&self) -> bool {
        self.tracker.lowering() || !self.yielded.is_empty() || self.policy.tick_needed()
    }

    /// A local task woke on the CPU that boosted thread `tid` holds: the boost pauses now (the mechanism's rule,
    /// whatever the policy: coscheduling must not take the local user's interactive response) and resumes
    /// after `--yield-us` (with `--yield-us 0` it ends: the thread gets its own attributes back, and the
    /// policy's next decision, an arrival or the tick, may boost it again).
    pub fn on_local_wake(&mut self, tid: u32, now: Nanos) {
        let Some(Mode::Boosted { until, .. }) = self.tracker.thread(tid).map(|t| t.mode) else {
            return;
        };
        // The local task's turn is a pause, not the end of the burst: a waking interactive task usually needs
        // its CPU for microseconds, while a ping-pong that drops out of its coscheduled burst needs its peer to
        // drop out too before it is back in step. The thread is paused ([`Mode::Paused`]: nice 19, so that the
        // local task goes first, as it did not always at the thread's own nice; a mode of its own, as the policy
        // took a thread at `Niced` for a demoted one and kept it there: LAMMPS ran 3× slower) and the boost
        // resumes for the rest of its window after it — at least one pause long, and resumable for
        // `RESUME_CHECKS` pauses beyond the window: a pause that outlasted the window used to end the boost,
        // leaving the rank in the fair class behind its competitors while its boosted peer spun for its answer
        // and was parked (a spin-only ping-pong at K = 1 spent 13 ms in the fair class after each yield).
        let resume = now + self.settings.yield_ns;
        let pause = self.settings.yield_ns > 0;
        let yielded = self.with_policy_changes(now, |ctx| {
            if pause {
                ctx.pause(tid)
            } else {
                ctx.restore(tid)
            }
        });
        if !yielded {
            return;
        }
        self.counters.boosts_yielded += 1;
        // Paused (not ended: `--yield-us 0`, or the self-check stands aside): its resumption is due.
        if self
            .tracker
            .thread(tid)
            .is_some_and(|t| t.mode == Mode::Paused)
        {
            let last = until.max(resume + RESUME_CHECKS * self.settings.yield_ns);
            self.yielded.insert(tid, (resume, until, last));
            self.timer_stale = true;
        }
    }

    /// The local tasks that boosted thread `tid` was paused for have had their turn on its CPU (BPF
    /// `COSCHED_EV_LOCAL_DONE`): its pause is over now, not at `--yield-us` — a 1 ms sleeper needs its CPU for
    /// microseconds, and for the rest of a 500 µs pause the thread sat at nice 19 behind the CPU's other tasks
    /// while its peer waited for it. What comes next is the pause's own end ([`Self::resume_yielded`]).
    pub fn on_local_done(&mut self, tid: u32, now: Nanos) {
        let Some(entry) = self.yielded.get_mut(&tid) else {
            return;
        };
        if entry.0 <= now {
            return; // due anyway
        }
        entry.0 = now;
        self.resume_yielded(now);
        if self
            .tracker
            .thread(tid)
            .is_some_and(|t| t.mode != Mode::Paused)
        {
            self.counters.pauses_ended_by_local += 1;
        }
    }

    /// Paused boosts whose pause is over come back for the rest of their window, unless the policy or the
    /// owner changed the thread meanwhile; one that cannot come back ends (its own attributes).
    fn resume_yielded(&mut self, now: Nanos) {
        // Exact, not coalesced like window ends: the pause is what the local task gets.
        let due: Vec<(u32, Nanos, Nanos)> = self
            .yielded
            .iter()
            .filter(|(_, &(at, _, _))| at <= now)
            .map(|(&tid, &(_, until, last))| (tid, until, last))
            .collect();
        for (tid, until, last) in due {
            self.yielded.remove(&tid);
            let paused = self
                .tracker
                .thread(tid)
                .is_some_and(|t| t.mode == Mode::Paused);
            if !paused {
                continue; // the policy decided otherwise meanwhile
            }
            // The local task has not had its CPU yet: a boost now would take it from under it again, with no
            // wake-up left to report it. Wait another pause, while the window lasts.
            let waiting = crate::ctx::local_task_waits_for(&self.probe, tid, now);
            // A thread that has its CPU again (the kernel picked it during the pause) needs no boost to run, and
            // a boost now would hold that CPU over any local task queued there that the probe does not record
            // (each CPU remembers `COSCHED_LOCAL_SLOTS`): a local sleeper waited 948 ms under the real-time
            // throttle that way. It stays in the fair class while it runs, and is looked at again a pause later:
            // once the fair class gives its CPU to another task, the boost resumes for the rest of its window.
            // Left in the fair class for good, it lost its CPU to a competitor at the next slice and the rest of
            // its window went uncoscheduled (for gang scheduling, whose slot only the clock renews, the rest of
            // the slot).
            let running = self.probe.task(tid).is_some_and(|t| t.on_cpu != 0);
            let resume = now + self.settings.yield_ns;
            if waiting || running {
                if resume <= last {
                    self.yielded.insert(tid, (resume, until, last));
                    self.timer_stale = true;
                } else {
                    self.with_policy_changes(now, |ctx| ctx.restore(tid));
                }
            } else {
                // The rest of its window, or one pause: a window that ended during the pause leaves the policy
                // a window end to decide at (extend while the exchange goes on), not a boost dropped unseen.
                // Refused (a local task woke meanwhile, the self-check stands aside): the pause ends.
                let until = until.max(resume);
                self.with_policy_changes(now, |ctx| ctx.boost(tid, until) || ctx.restore(tid));
            }
        }
    }

    /// Runs a mechanism action with a [`Ctx`] outside any policy call; returns what it returned.
    fn with_policy_changes(&mut self, now: Nanos, f: impl FnOnce(&mut Ctx) -> bool) -> bool {
        let mut done = false;
        self.with_policy(now, None, |_, ctx| done = f(ctx));
        done
    }

    /// A managed thread exited.
    pub fn on_thread_exit(&mut self, tid: u32) {
        self.yielded.remove(&tid);
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
        if !self.tracker.job_alive(p.job) {
            self.policy.on_job_end(p.job);
            // Its launchers (`cosched run`) may outlive it in the session a moment: give it its own nice back.
            let job = p.job;
            self.with_policy((self.clock)(), None, |_, ctx| {
                ctx.restore_job_group(job);
            });
        }
        let booked = booked.unwrap_or(0).max(p.cpu_ns.unwrap_or(0));
        Some((p, booked))
    }

    /// Restores every thread of process `tgid` the agent changed: it leaves management alive.
    pub fn restore_process(&mut self, tgid: u32, now: Nanos) {
        let tids: Vec<u32> = self
            .tracker
            .tids_of(tgid)
            .into_iter()
            .filter(|&tid| self.tracker.thread(tid).is_some_and(|t| t.changed()))
            .collect();
        self.with_policy(now, None, |_, ctx| {
            for tid in tids {
                ctx.restore(tid);
            }
        });
    }

    /// The self-check stands aside from now on (`true`) or coschedules again. Standing aside, the jobs run as if
    /// there were no agent: every thread and group it changed gets its own attributes back now (boosts end,
    /// paused ones are dropped, demoted and parked threads are lifted) and no change is made until it
    /// coschedules again ([`Ctx`] refuses them). A job's debt is kept: it is repaid in the epochs that
    /// coschedule, which alone can run it up — so standing aside is never a way to escape it, and a probe that
    /// stands aside measures the job without the agent, not a job being repaid.
    pub fn stand_aside(&mut self, aside: bool, now: Nanos) {
        if aside {
            self.yielded.clear();
            self.restore_everything(now);
            // Windows ended and pauses dropped: the timer's deadline moved.
            self.timer_stale = true;
        }
        self.settings.stand_aside = aside;
    }

    /// Restores every thread the agent changed (shutdown; the guardian covers the other ways to end).
    pub fn restore_everything(&mut self, now: Nanos) {
        let tids: Vec<u32> = self
            .tracker
            .threads()
            .filter(|t| t.changed())
            .map(|t| t.tid)
            .collect();
        let jobs: Vec<u64> = self
            .tracker
            .jobs()
            .filter(|j| j.group_lowered)
            .map(|j| j.id)
            .collect();
        self.with_policy(now, None, |_, ctx| {
            for tid in tids {
                ctx.restore(tid);
            }
            for job in jobs {
                ctx.restore_job_group(job);
            }
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Test doubles of the kernel side ([`FakeActuator`], [`FakeProbe`]) for the policies' unit tests, and the
    //! mechanism's own rules.
    use super::*;
    use crate::actuator::ActError;
    use crate::intf;
    use crate::policy::Counter;
    use crate::sched::{self, SchedAttr};
    use cosched_policy::predictive::SocketQueue;
    use std::cell::RefCell;
    use std::collections::{HashMap, HashSet};

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
        /// Every job owns its autogroup (its group's nice is a lever).
        pub owns_group: bool,
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
        fn restore(&mut self, tid: u32, _orig: &SchedAttr) -> Result<Option<SchedAttr>, ActError> {
            self.calls.push(format!("restore {tid}"));
            self.applied.remove(&tid);
            Ok(None)
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
        fn job_group(
            &mut self,
            job: u64,
            _job_pids: &[u32],
            _job_or_launcher: &HashSet<u32>,
            lower: bool,
        ) -> Result<bool, ActError> {
            if !self.owns_group {
                return Ok(false);
            }
            let what = if lower { "lower" } else { "restore" };
            self.calls.push(format!("group {job} {what}"));
            Ok(true)
        }
    }

    /// BPF's maps, made up: tasks and booked CPU time per process.
    #[derive(Default)]
    pub struct FakeProbe {
        pub tasks: RefCell<HashMap<u32, intf::Task>>,
        pub runtime: RefCell<HashMap<u32, Nanos>>,
        /// CPU time of processes that exited (still the job's).
        pub exited_cpu: RefCell<Nanos>,
        /// When the local task waiting on every CPU woke, if one is.
        pub waiting: RefCell<Option<Nanos>>,
        pub kicked: RefCell<Vec<(u32, Nanos)>>,
        /// The processes of each job ([`add_job`]).
        pub job_tgids: RefCell<HashMap<u64, Vec<u32>>>,
        /// The socket queues of each process (none: no sockets).
        pub sockets: RefCell<HashMap<u32, Vec<SocketQueue>>>,
        /// Tasks runnable on the machine per CPU, thousandths (none: unreadable).
        pub runnable_milli: RefCell<Option<u32>>,
        /// The agent's own CPU time on every CPU so far.
        pub agent_cpu: RefCell<Nanos>,
    }

    impl Probe for FakeProbe {
        fn agent_cpu_ns(&self, _cpu: u32) -> Option<Nanos> {
            Some(*self.agent_cpu.borrow())
        }
        fn task(&self, tid: u32) -> Option<intf::Task> {
            self.tasks.borrow().get(&tid).copied()
        }
        fn proc_runtime(&self, tgid: u32) -> Option<Nanos> {
            self.runtime.borrow().get(&tgid).copied()
        }
        /// The CPU time of a job's processes ([`add_job`]), plus what exited ones used for the first job.
        fn job_runtime(&self, job: u64) -> Option<Nanos> {
            let runtime = self.runtime.borrow();
            let jobs = self.job_tgids.borrow();
            let exited = if jobs.keys().min().is_none_or(|&first| first == job) {
                *self.exited_cpu.borrow()
            } else {
                0
            };
            let used: Nanos = match jobs.get(&job) {
                Some(tgids) => tgids.iter().filter_map(|t| runtime.get(t)).sum(),
                None => runtime.values().sum(),
            };
            Some(used + exited)
        }
        fn kicked(&self, tid: u32, when: Nanos) {
            self.kicked.borrow_mut().push((tid, when));
        }
        fn forget_task(&self, tid: u32) {
            self.tasks.borrow_mut().remove(&tid);
        }
        fn local_waiting_since(&self, _cpu: u32) -> Option<Nanos> {
            *self.waiting.borrow()
        }
        fn socket_queues(&self, tgids: &[u32]) -> HashMap<u32, Vec<SocketQueue>> {
            let sockets = self.sockets.borrow();
            tgids
                .iter()
                .map(|t| (*t, sockets.get(t).cloned().unwrap_or_default()))
                .collect()
        }
        fn runnable_milli_per_cpu(&self) -> Option<u32> {
            *self.runnable_milli.borrow()
        }
    }

    fn clock() -> Nanos {
        0
    }

    /// An engine around `policy` with test doubles, and processes `tgids` (one thread each, tid = tgid, off
    /// its CPU, an arrival pending) in job 1, root's.
    pub fn engine(policy: Box<dyn Policy>, tgids: &[u32]) -> Engine<FakeActuator, FakeProbe> {
        engine_of(policy, tgids, 0)
    }

    /// [`engine`] with job 1 owned by `owner_uid`.
    pub fn engine_of(
        policy: Box<dyn Policy>,
        tgids: &[u32],
        owner_uid: u32,
    ) -> Engine<FakeActuator, FakeProbe> {
        let settings = Settings {
            mechanism: crate::actuator::Mechanism::Fifo,
            rt_prio: 1,
            log_actions: false,
            panic_after_boosts: None,
            started_ns: 0,
            yield_ns: 500_000,
            stand_aside: false,
        };
        let mut e = Engine::new(
            policy,
            FakeActuator::default(),
            FakeProbe::default(),
            settings,
            clock,
        );
        add_job(&mut e, tgids, owner_uid, 0);
        e
    }

    /// A job of `owner_uid` in `e` with processes `tgids` (one thread each, tid = tgid, off its CPU, an arrival
    /// pending), registered at `now`.
    pub fn add_job(
        e: &mut Engine<FakeActuator, FakeProbe>,
        tgids: &[u32],
        owner_uid: u32,
        now: Nanos,
    ) -> u64 {
        let job = e.tracker.new_job_id();
        e.tracker.add_job(job, "test".into(), tgids[0], now);
        e.tracker.job_mut(job).unwrap().owner_uid = owner_uid;
        e.probe.job_tgids.borrow_mut().insert(job, tgids.to_vec());
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
            e.add_process(tgid, job, 0, now);
            assert!(e.adopt_thread(tgid, tgid));
        }
        job
    }

    /// A flagged arrival for `tid` with `R` = `r` at `t`.
    pub fn arrival(tid: u32, r: u32, t: Nanos) -> Event {
        Event {
            kind: intf::COSCHED_EV_ARRIVAL as u32,
            tid,
            tgid: tid,
            arg: r * intf::COSCHED_R_ONE_MILLI as u32,
            time_ns: t,
            ..Default::default()
        }
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
    fn standing_aside_ends_every_boost_and_starts_none_until_it_coschedules_again() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted { .. }
        ));
        e.stand_aside(true, 100_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        e.on_arrival(&arrival(10, 2, 200_000), 200_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Normal,
            "no boost while standing aside"
        );
        assert_eq!(e.counters.actions_stood_aside, 1);
        // Nor any other change.
        e.with_policy(300_000, None, |_, ctx| assert!(!ctx.nice(10, 19)));
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!(e.counters.actions_stood_aside, 2);
        assert_eq!(e.counters.boosts_granted, 1);
        e.stand_aside(false, 300_000);
        e.with_policy(300_000, None, |_, ctx| assert!(ctx.nice(10, 19)));
        e.stand_aside(true, 310_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Normal,
            "a demotion is lifted too"
        );
        e.stand_aside(false, 320_000);
        e.on_arrival(&arrival(10, 2, 400_000), 400_000);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted { .. }
        ));
        assert_eq!(e.counters.boosts_granted, 2);
    }

    #[test]
    fn a_pause_ends_as_soon_as_the_local_tasks_turn_is_over() {
        let mut e = engine(Box::new(Eager), &[10, 11]);
        e.on_arrival(&arrival(10, 2, 0), 0); // boosted until 1 ms
        e.on_local_wake(10, 100_000); // paused until 0.6 ms
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        // The local task blocked again at 0.12 ms (BPF's report): the rest of the window at once, not at 0.6 ms.
        e.on_local_done(10, 120_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                since: 120_000,
                until: 1_000_000
            }
        );
        assert_eq!(e.counters.pauses_ended_by_local, 1);
        // A report for a thread that is not paused (11, never boosted; 10, boosted again) changes nothing.
        let calls = e.act.calls.len();
        e.on_local_done(11, 130_000);
        e.on_local_done(10, 130_000);
        assert_eq!(e.act.calls.len(), calls);
        assert_eq!(e.counters.pauses_ended_by_local, 1);
        // Another local task still waiting on that CPU (the probe's record): the pause goes on, looked at again a
        // pause later, as at the pause's own end.
        e.on_local_wake(10, 200_000);
        e.probe.waiting.borrow_mut().replace(190_000);
        e.on_local_done(10, 210_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        assert_eq!(e.next_deadline(), Some(710_000));
        assert_eq!(e.counters.pauses_ended_by_local, 1);
    }

    #[test]
    fn an_arrival_for_a_thread_nobody_tracks_is_counted_not_lost_silently() {
        let mut e = engine(Box::new(Eager), &[10]);
        // Thread 99 of process 98: neither is managed (BPF has no entry either), so the policy never sees it.
        e.on_arrival(&arrival(99, 2, 0), 0);
        assert!(e.act.calls.is_empty());
        assert_eq!(e.counters.arrivals_unattributed, 1);
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert_eq!(e.counters.arrivals_unattributed, 1);
        assert_eq!(e.counters.boosts_granted, 1);
    }

    #[test]
    fn a_boost_steps_aside_at_once_for_a_local_task_waking_on_its_cpu() {
        let mut e = engine(Box::new(Eager), &[10, 11]);
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted { .. }
        ));
        // A local task woke on 10's CPU at 0.1 ms, long before the window's end (1 ms): it steps aside now,
        // paused at nice 19 so that the local task goes first.
        e.on_local_wake(10, 100_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        assert_eq!(
            e.act.calls.last().unwrap(),
            &format!(
                "change 10 policy=0 nice={} runtime=0",
                crate::actuator::PAUSE_NICE
            )
        );
        assert_eq!(e.counters.boosts_yielded, 1);
        // A report for a thread that is not boosted (11), or no longer (10), changes nothing.
        let calls = e.act.calls.len();
        e.on_local_wake(11, 200_000);
        e.on_local_wake(10, 200_000);
        assert_eq!(e.act.calls.len(), calls);
        assert_eq!(e.counters.boosts_yielded, 1);
        // The pause (0.5 ms) is over at 0.6 ms and the window (until 1 ms) has time left: the boost resumes
        // for the rest of it, and at least one pause (to 1.1 ms).
        assert_eq!(e.next_deadline(), Some(600_000));
        e.on_timer(600_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                since: 600_000,
                until: 1_100_000
            }
        );
        // A pause that outlasts the window (0.7 + 0.5 > 1.1 ms) still resumes, for one pause: the window's end
        // is then the policy's to decide at.
        e.on_local_wake(10, 700_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        assert_eq!(e.next_deadline(), Some(1_200_000));
        e.on_timer(1_200_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                since: 1_200_000,
                until: 1_700_000
            }
        );
        e.on_timer(1_700_000); // Eager lets the window end
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        // While a local task still waits for its CPU at the pause's end, the pause goes on; once the window is
        // over, the thread gets its own attributes back (never left at nice 19).
        e.settings.yield_ns = 200_000;
        e.on_arrival(&arrival(10, 2, 2_000_000), 2_000_000); // boosted until 3 ms
        e.on_local_wake(10, 2_100_000); // paused until 2.3 ms
        e.probe.waiting.borrow_mut().replace(2_100_000);
        e.on_timer(2_300_000); // still waiting: paused until 2.5 ms
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        assert_eq!(e.next_deadline(), Some(2_500_000));
        e.probe.waiting.borrow_mut().take(); // it ran
        e.on_timer(2_500_000); // the rest of the window
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                since: 2_500_000,
                until: 3_000_000
            }
        );
        // Paused again at 2.7 ms with the local task waiting on: looked at every pause until RESUME_CHECKS
        // pauses past the first resume (2.9 + 4 × 0.2 = 3.7 ms), then the boost is over: its own attributes.
        e.on_local_wake(10, 2_700_000);
        e.probe.waiting.borrow_mut().replace(2_700_000);
        for at in [2_900_000, 3_100_000, 3_300_000, 3_500_000] {
            e.on_timer(at);
            assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
            assert_eq!(e.next_deadline(), Some(at + 200_000));
        }
        e.on_timer(3_700_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!(e.act.calls.last().unwrap(), "restore 10");
        assert_eq!(e.next_deadline(), None);
        // A thread the kernel gave its CPU back during the pause is not boosted over it again: it is looked at
        // again a pause later.
        e.probe.waiting.borrow_mut().take();
        e.on_arrival(&arrival(10, 2, 4_000_000), 4_000_000); // boosted until 5 ms
        e.on_local_wake(10, 4_100_000); // paused until 4.3 ms
        e.probe.tasks.borrow_mut().get_mut(&10).unwrap().on_cpu = 1;
        let calls = e.act.calls.len();
        e.on_timer(4_300_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        assert_eq!(e.act.calls.len(), calls, "no boost over a running thread");
        assert_eq!(e.next_deadline(), Some(4_500_000));
        // Still running at 4.5 ms; at 4.7 ms the fair class has given its CPU to another task: the boost resumes
        // for the rest of its window.
        e.on_timer(4_500_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        e.probe.tasks.borrow_mut().get_mut(&10).unwrap().on_cpu = 0;
        e.on_timer(4_700_000);
        assert_eq!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                since: 4_700_000,
                until: 5_000_000
            }
        );
        // Running on past the window's end and the re-checks after it (4.95 + 4 × 0.2 = 5.75 ms), it is left in
        // the fair class, at its own attributes.
        e.on_local_wake(10, 4_750_000); // paused until 4.95 ms
        e.probe.tasks.borrow_mut().get_mut(&10).unwrap().on_cpu = 1;
        for at in [4_950_000, 5_150_000, 5_350_000, 5_550_000] {
            e.on_timer(at);
            assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        }
        e.on_timer(5_750_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!(e.next_deadline(), None);
    }

    #[test]
    fn no_boost_is_given_or_lengthened_over_a_local_task_waiting_on_the_cpu() {
        // A local task woke on 10's CPU at 0.1 ms and has not run (it woke while 10 ran in the fair class, so
        // no boost was there to step aside): the boost is not given.
        let mut e = engine(Box::new(Eager), &[10]);
        e.probe.waiting.borrow_mut().replace(100_000);
        e.on_arrival(&arrival(10, 2, 200_000), 200_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert!(e.act.calls.is_empty());
        assert_eq!(e.counters.boosts_held_for_local, 1);
        // It ran: the next arrival boosts (until 2 + 1 ms).
        e.probe.waiting.borrow_mut().take();
        e.on_arrival(&arrival(10, 2, 2_000_000), 2_000_000);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                until: 3_000_000,
                ..
            }
        ));
        // Another woke during the boost and its report is still on the way: an arrival does not lengthen the
        // window over it.
        e.probe.waiting.borrow_mut().replace(2_500_000);
        e.on_arrival(&arrival(10, 2, 2_600_000), 2_600_000);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted {
                until: 3_000_000,
                ..
            }
        ));
        assert_eq!(e.counters.boosts_held_for_local, 2);
        // One that waited longer than the stale bound was missed, not waiting: it holds nothing back.
        let later = 2_500_000 + intf::COSCHED_LOCAL_WAIT_STALE_NS;
        e.on_arrival(&arrival(10, 2, later), later);
        assert!(matches!(
            e.tracker.thread(10).unwrap().mode,
            Mode::Boosted { .. }
        ));
    }

    #[test]
    fn a_window_the_policy_does_not_renew_ends_and_real_time_and_idle_threads_are_left_alone() {
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
        // Nor is a SCHED_IDLE thread: it asked to run only when nothing else wants the CPU (issue 21, item 8).
        e.act.own.insert(
            12,
            SchedAttr {
                sched_policy: crate::sched::SCHED_IDLE,
                ..Default::default()
            },
        );
        e.probe.runtime.borrow_mut().insert(12, 0);
        e.probe.tasks.borrow_mut().insert(
            12,
            intf::Task {
                tgid: 12,
                pending: 1,
                ..Default::default()
            },
        );
        e.add_process(12, 1, 0, 0);
        e.on_arrival(&arrival(12, 2, 3_000_000), 3_000_000);
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
        new_thread_of_10(
            &mut e,
            SchedAttr {
                sched_nice: 5,
                sched_runtime: 700_000,
                ..Default::default()
            },
        );
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

    /// Thread 10 creates thread 11 of its process, which starts with attributes `own` (what it inherited).
    fn new_thread_of_10(e: &mut Engine<FakeActuator, FakeProbe>, own: SchedAttr) {
        e.probe.tasks.borrow_mut().insert(
            11,
            intf::Task {
                tgid: 10,
                ..Default::default()
            },
        );
        e.act.own.insert(11, own);
        e.on_thread_start(10, 11, 10);
    }

    #[test]
    fn a_failed_change_leaves_the_thread_as_it_was() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.act.refuse = true;
        e.on_arrival(&arrival(10, 2, 0), 0);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!((e.counters.boosts_granted, e.counters.refused_gone), (0, 1));
    }

    #[test]
    fn a_thread_created_during_a_pause_starts_at_its_parents_own_nice() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.on_arrival(&arrival(10, 2, 0), 0);
        e.on_local_wake(10, 100_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Paused);
        // The kernel gave the child its creator's nice 19: the pause is the parent's, not the child's.
        new_thread_of_10(
            &mut e,
            SchedAttr {
                sched_nice: crate::actuator::PAUSE_NICE,
                ..Default::default()
            },
        );
        assert_eq!(e.act.calls.last().unwrap(), "restore 11");
        assert_eq!(e.tracker.thread(11).unwrap().mode, Mode::Normal);
        assert!(!e.tracker.thread(11).unwrap().changed());
    }

    #[test]
    fn without_pauses_a_local_task_ends_the_boost() {
        let mut e = engine(Box::new(Eager), &[10]);
        e.settings.yield_ns = 0;
        e.on_arrival(&arrival(10, 2, 0), 0);
        e.on_local_wake(10, 100_000);
        assert_eq!(e.tracker.thread(10).unwrap().mode, Mode::Normal);
        assert_eq!(e.act.calls.last().unwrap(), "restore 10");
        assert_eq!(e.counters.boosts_yielded, 1);
        // Nothing to resume.
        assert_eq!(e.next_deadline(), None);
    }
}
