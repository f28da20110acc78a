//! The seam between mechanism and policy: [`Ctx`], what a policy sees and does for one event.
//!
//! A policy reads the tracked tasks through it (per-thread [`Mode`], per-process CPU time and `R`, BPF's
//! per-thread state) and acts through it: [`Ctx::boost`] for a window, [`Ctx::restore`], [`Ctx::nice`],
//! [`Ctx::slice`], [`Ctx::affinity`], [`Ctx::arm`] a deadline, [`Ctx::note`] a counted decision. Each action
//! is carried out at once through the [`Actuate`] (the kernel's guarded path, or a test double), its result
//! written into the tracker and the counters, and its success returned. What BPF knows comes through a
//! [`Probe`] (its maps, or a test double). The mechanism's own rules hold whatever the policy asks: a thread
//! real-time by its own choice is never boosted, only time-sharing threads get another nice level or slice,
//! and a boost the policy makes on its own (not for the arrival being decided) is told to BPF ("kicked") so the
//! reaction is measured from it.

use crate::actuator::{self, ActError, Actuate};
use crate::intf;
use crate::stats::Counters;
use crate::tracker::{Mode, Tracker};
use cosched_policy::predictive::SocketQueue;
use cosched_policy::Nanos;
use std::collections::{HashMap, HashSet};

/// What the engine reads from (and tells) the BPF side.
pub trait Probe {
    /// A managed thread's BPF state.
    fn task(&self, tid: u32) -> Option<intf::Task>;
    /// A managed process's CPU time as BPF booked it at its threads' switch-outs, ns.
    fn proc_runtime(&self, tgid: u32) -> Option<Nanos>;
    /// A job's CPU time as BPF booked it (every thread it ever had, exited ones included), ns.
    fn job_runtime(&self, job: u64) -> Option<Nanos>;
    /// The agent is about to boost `tid` at `when` on its own initiative, not for the arrival BPF last handed
    /// over (the reaction is measured from then).
    fn kicked(&self, tid: u32, when: Nanos);
    /// Stops watching a thread (its entry may go a moment later: an exiting thread's final stint is booked by
    /// BPF at its last switch-out).
    fn forget_task(&self, tid: u32);
    /// When a local task that woke on `cpu` and has not blocked since woke, if one is having its turn there.
    fn local_waiting_since(&self, _cpu: u32) -> Option<Nanos> {
        None
    }
    /// The queues of every socket each of `tgids` holds, bytes ([`crate::sockets::SocketTable::sample`]).
    fn socket_queues(&self, tgids: &[u32]) -> HashMap<u32, Vec<SocketQueue>>;
    /// The CPU time the agent's own threads ran on `cpu` so far, ns (`None`: not counted).
    fn agent_cpu_ns(&self, _cpu: u32) -> Option<Nanos> {
        None
    }
    /// BPF's reading of `R` counts cpu cgroup `cgroup` at `shares` (its own weight while the agent holds it
    /// lowered, [`crate::cpu_cgroup`]), or at its weight now again with `None`.
    fn hold_group_shares(&self, _cgroup: u64, _shares: Option<u64>) {}
    /// Tasks runnable on the machine now, the agent left out ([`crate::stats::runnable_tasks`]), per online
    /// CPU, in thousandths (the unit of `R`, [`intf::COSCHED_R_ONE_MILLI`]).
    fn runnable_milli_per_cpu(&self) -> Option<u32>;
}

/// The mechanism's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How a boost is carried out.
    pub mechanism: crate::actuator::Mechanism,
    /// `SCHED_FIFO` priority of a boosted thread ([`Mechanism::Fifo`](crate::actuator::Mechanism::Fifo)).
    pub rt_prio: u32,
    /// Print one line per action and per noted decision on stderr.
    pub log_actions: bool,
    /// Fault injection (safety tests): panic right after this many boosts, with the last one in place.
    pub panic_after_boosts: Option<u64>,
    /// When the agent started (the log's time origin).
    pub started_ns: Nanos,
    /// How long a boost pauses for a local task that woke on its CPU (0: it ends).
    pub yield_ns: Nanos,
    /// The self-check's epoch stands aside: the job runs as if there were no agent — no boost, no demotion, no
    /// group lowered (a job's debt waits for the next epoch that coschedules).
    pub stand_aside: bool,
}

/// A process's CPU time while managed (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// What BPF booked at its threads' switch-outs, plus the running part of every thread on a CPU now (a
    /// thread that spins alone is never switched out, so its booked time lags).
    pub cpu_ns: Nanos,
}

/// One look at a process in BPF (one lookup per thread, through the tracker's index).
pub fn sample(probe: &dyn Probe, tracker: &Tracker, tgid: u32, now: Nanos) -> Option<Sample> {
    let booked = probe.proc_runtime(tgid)?;
    let mut running = 0;
    for task in tracker.threads_of(tgid).filter_map(|t| probe.task(t.tid)) {
        if task.on_cpu != 0 {
            running += now.saturating_sub(task.switched_in_ns);
        }
    }
    Some(Sample {
        cpu_ns: booked + running,
    })
}

/// A job's CPU time now: what BPF booked for it (exited threads included), plus the running part of every
/// thread of it on a CPU now.
pub fn job_cpu(probe: &dyn Probe, tracker: &Tracker, job: u64, now: Nanos) -> Option<Nanos> {
    let booked = probe.job_runtime(job)?;
    let running: Nanos = tracker
        .processes_of(job)
        .flat_map(|p| tracker.threads_of(p.tgid))
        .filter_map(|t| probe.task(t.tid))
        .filter(|task| task.on_cpu != 0)
        .map(|task| now.saturating_sub(task.switched_in_ns))
        .sum();
    Some(booked + running)
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
    pub(crate) now: Nanos,
    pub(crate) tracker: &'a mut Tracker,
    pub(crate) act: &'a mut dyn Actuate,
    pub(crate) probe: &'a dyn Probe,
    pub(crate) counters: &'a mut Counters,
    pub(crate) settings: &'a Settings,
    /// The deadline the policy armed, if any.
    pub(crate) deadline: &'a mut Option<Nanos>,
    /// Some window end or deadline moved earlier: the loop must arm its timer again.
    pub(crate) timer_stale: &'a mut bool,
    /// The thread whose arrival is being decided (its boost answers that arrival).
    pub(crate) arrival_tid: Option<u32>,
    /// Whether that thread was boosted.
    pub(crate) answered: bool,
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

    /// BPF's state of a managed thread (`on_cpu`, `pending`, `r_milli`, arrival and poll times, ...).
    pub fn task(&self, tid: u32) -> Option<intf::Task> {
        self.probe.task(tid)
    }

    pub fn process(&self, tgid: u32) -> Option<ProcessView> {
        self.tracker.process(tgid).map(|p| ProcessView {
            tgid: p.tgid,
            job: p.job,
            sampled: p.cpu_ns.map(|cpu_ns| Sample { cpu_ns }),
        })
    }

    /// A job's CPU time now, exited processes and threads included ([`job_cpu`]).
    pub fn job_cpu(&self, job: u64) -> Option<Nanos> {
        job_cpu(self.probe, self.tracker, job, self.now)
    }

    /// The real uid of a job's root process at registration.
    pub fn job_owner(&self, job: u64) -> Option<u32> {
        self.tracker.job(job).map(|j| j.owner_uid)
    }

    /// The jobs with a live process.
    pub fn live_jobs(&self) -> Vec<u64> {
        self.tracker.live_job_ids()
    }

    /// Every tracked thread of a job, ascending by process then thread.
    pub fn tids_of_job(&self, job: u64) -> Vec<u32> {
        self.tracker
            .processes_of(job)
            .flat_map(|p| self.tracker.tids_of(p.tgid))
            .collect()
    }

    /// The queues of every socket each of `tgids` holds, bytes: a few `/proc` reads per process, once a tick
    /// at most.
    pub fn socket_queues(&self, tgids: &[u32]) -> HashMap<u32, Vec<SocketQueue>> {
        self.probe.socket_queues(tgids)
    }

    /// The CPU time the agent's own threads ran on `cpu` so far, ns (`None`: not counted).
    pub fn agent_cpu_ns(&self, cpu: u32) -> Option<Nanos> {
        self.probe.agent_cpu_ns(cpu)
    }

    /// Tasks runnable on the machine now per CPU, the agent left out, in thousandths (seed 002's monitor
    /// samples this).
    pub fn runnable_milli_per_cpu(&self) -> Option<u32> {
        self.probe.runnable_milli_per_cpu()
    }

    /// The tracked processes, ascending.
    pub fn tgids(&self) -> Vec<u32> {
        self.tracker.tgids()
    }

    /// A process's tracked threads, ascending.
    pub fn tids_of(&self, tgid: u32) -> Vec<u32> {
        self.tracker.tids_of(tgid)
    }

    /// Whether the agent holds job `job`'s autogroup lowered ([`lower_job_group`](Self::lower_job_group)).
    pub fn job_group_lowered(&self, job: u64) -> bool {
        self.tracker.job(job).is_some_and(|j| j.group_lowered)
    }

    /// Lowers the group job `job` owns — its session (autogroup) or its cpu cgroup, where nothing else is
    /// ([`crate::autogroup`], [`crate::cpu_cgroup`]) — as nice 19 lowers a task: the demotion that acts where a
    /// job alone in its group competes, against the other groups. Returns whether the group is lowered now
    /// (`false`: the job owns no group, or the change failed).
    pub fn lower_job_group(&mut self, job: u64) -> bool {
        if self.job_group_lowered(job) {
            return true;
        }
        if self.standing_aside() {
            return false;
        }
        let mut job_pids: Vec<u32> = self.tracker.processes_of(job).map(|p| p.tgid).collect();
        job_pids.sort_unstable();
        let Some(&pid) = job_pids.first() else {
            return false;
        };
        let mut members: HashSet<u32> = job_pids.iter().copied().collect();
        members.extend(self.tracker.job(job).map_or(&[][..], |j| &j.launchers[..]));
        match self.act.job_group(job, &job_pids, &members, true) {
            Ok(true) => {
                if let Some(j) = self.tracker.job_mut(job) {
                    j.group_lowered = true;
                }
                for (cgroup, shares) in self.act.lowered_cgroups(job) {
                    self.probe.hold_group_shares(cgroup, Some(shares));
                }
                self.log_process(pid, pid, "group-lower", format_args!("job={job}"));
                true
            }
            Ok(false) => false,
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    /// Gives job `job`'s group its own weight back, if the agent lowered it. Returns whether it had.
    pub fn restore_job_group(&mut self, job: u64) -> bool {
        if !self.job_group_lowered(job) {
            return false;
        }
        if let Some(j) = self.tracker.job_mut(job) {
            j.group_lowered = false;
        }
        let cgroups = self.act.lowered_cgroups(job);
        if let Err(err) = self.act.job_group(job, &[], &HashSet::new(), false) {
            self.fail(err);
        }
        for (cgroup, _) in cgroups {
            self.probe.hold_group_shares(cgroup, None);
        }
        self.log_process(0, 0, "group-restore", format_args!("job={job}"));
        true
    }

    /// Whether a local task is having its turn on `tid`'s CPU (woken there, neither blocked nor run a slice
    /// since): [`Ctx::boost`] refuses then.
    pub fn local_task_waits_for(&self, tid: u32) -> bool {
        local_task_waits_for(self.probe, tid, self.now)
    }

    /// How long a boost pauses for a local task (`--yield-us`; 0: it ends instead).
    pub fn yield_ns(&self) -> Nanos {
        self.settings.yield_ns
    }

    /// Whether the self-check stands aside ([`Settings::stand_aside`]): then no thread or group is changed (a
    /// change asked for is counted and refused), only given back.
    fn standing_aside(&mut self) -> bool {
        if self.settings.stand_aside {
            self.counters.actions_stood_aside += 1;
        }
        self.settings.stand_aside
    }

    /// Boosts `tid` to `SCHED_FIFO` until `until`; for a boosted thread, moves its window end to `until`.
    /// Returns whether the thread is boosted now.
    pub fn boost(&mut self, tid: u32, until: Nanos) -> bool {
        if self.standing_aside() {
            return false;
        }
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !actuator::boostable(&t.orig) {
            return false;
        }
        // A local task that woke on the thread's CPU and has since neither blocked nor run a slice is having its
        // turn there (BPF records it until then): a boost — a new one, or a longer window for one that holds the CPU — would
        // keep it waiting with no wake-up left to end the boost (the lab's probe waited 25-50 ms behind
        // extensions at K = 0).
        if self.local_task_waits_for(tid) {
            self.counters.boosts_held_for_local += 1;
            return false;
        }
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
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
        let answers_arrival = self.arrival_tid == Some(tid);
        if !answers_arrival {
            // Told BEFORE the boost: the boosted thread may be switched in (and its reaction measured in BPF)
            // before sched_setattr even returns; told after, BPF would measure from an arrival it waited behind
            // long ago.
            self.probe.kicked(tid, self.now);
        }
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
        self.answered |= answers_arrival;
        if self.settings.log_actions {
            // Where it runs and whether a local task waits there, as BPF recorded it: what the boost was checked
            // against (a local task kept waiting behind a boost whose wake-up BPF did not see shows here as
            // `local=none` or as a record older than `COSCHED_LOCAL_WAIT_STALE_NS`).
            let cpu = self.probe.task(tid).map(|t| t.last_cpu);
            let local = cpu
                .and_then(|c| self.probe.local_waiting_since(c))
                .map(|woke| format!("{}us", self.now.saturating_sub(woke) / 1000));
            self.log(
                tid,
                "boost",
                format_args!(
                    "cpu={} local={}",
                    cpu.map_or("?".to_string(), |c| c.to_string()),
                    local.as_deref().unwrap_or("none")
                ),
            );
        }
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
        if let Ok(Some(own)) = res {
            t.orig = own; // its owner changed it meanwhile: that is its own from now on
        }
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

    /// Pauses a boost ([`Mode::Paused`]): the thread goes to its own policy at
    /// [`actuator::PAUSE_NICE`] until a boost resumes it or [`restore`](Self::restore) ends the pause (whoever
    /// pauses must do one or the other). A thread whose own policy is not time-sharing, or any thread while the
    /// self-check stands aside, gets its own attributes instead. Returns whether the boost ended.
    pub fn pause(&mut self, tid: u32) -> bool {
        let Some(t) = self.tracker.thread(tid) else {
            return false;
        };
        if !matches!(t.mode, Mode::Boosted { .. }) {
            return false;
        }
        if self.settings.stand_aside || !actuator::time_sharing(&t.orig) {
            return self.restore(tid);
        }
        *self.timer_stale = true;
        let slice_ns = t.slice_ns;
        if !self.carry_out(tid, Mode::Paused, slice_ns) {
            // Not carried out (the thread is gone, or refused): its own attributes, as after any failed change.
            return self.restore(tid);
        }
        self.log(tid, "pause", format_args!(""));
        true
    }

    /// Gives a time-sharing thread (its own policy `SCHED_OTHER` or `SCHED_BATCH`) nice level `nice`; ends a
    /// boost. Returns whether it has that level now.
    pub fn nice(&mut self, tid: u32, nice: i32) -> bool {
        if self.standing_aside() {
            return false;
        }
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
        if slice_ns.is_some() && self.standing_aside() {
            return false;
        }
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
        if cpus.is_some() && self.standing_aside() {
            return false;
        }
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

    /// Asks for a call to [`crate::policy::Policy::on_deadline`] at `at` (the earliest of the deadlines asked for wins).
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
        let res = match actuator::attributes(
            &orig,
            mode,
            slice_ns,
            self.settings.mechanism,
            self.settings.rt_prio,
        ) {
            // Its own attributes, but the agent's CPU affinity stays: keep the guard.
            None if pinned => self.act.change(tid, &orig.restorable(), &orig),
            None => self.act.restore(tid, &orig).map(|_| ()),
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
            action_line(format_args!(
                "[{:>12.6}] (job{job}:pid{tgid}) {what} tid={tid} {detail}",
                self.now.saturating_sub(self.settings.started_ns) as f64 / 1e9
            ));
        }
    }
}

/// The file `--log-file` names, once opened: where the `--log-actions` lines go instead of stderr.
static ACTION_LOG: std::sync::OnceLock<std::sync::Mutex<std::fs::File>> =
    std::sync::OnceLock::new();

/// Sends the `--log-actions` lines to `path` (appended) from now on.
pub fn log_actions_to(path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("--log-file: opening {}", path.display()))?;
    let _ = ACTION_LOG.set(std::sync::Mutex::new(file));
    Ok(())
}

/// One `--log-actions` line: to the `--log-file` if one was given (one write per line: nothing else wakes for
/// it), else to stderr.
pub(crate) fn action_line(line: std::fmt::Arguments) {
    use std::io::Write;
    match ACTION_LOG.get() {
        Some(file) => {
            let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(file, "{line}");
        }
        None => eprintln!("{line}"),
    }
}

/// Whether a local task woke on the CPU managed thread `tid` last ran on and waits there still at `now` (within
/// [`intf::COSCHED_LOCAL_WAIT_STALE_NS`]: one that waited longer was missed, not waiting).
pub fn local_task_waits_for(probe: &dyn Probe, tid: u32, now: Nanos) -> bool {
    probe
        .task(tid)
        .and_then(|t| probe.local_waiting_since(t.last_cpu))
        .is_some_and(|woke| now.saturating_sub(woke) < intf::COSCHED_LOCAL_WAIT_STALE_NS)
}

/// Counts a failed action: a thread that exited is no error; anything else is kept as the last error.
pub(crate) fn fail(counters: &mut Counters, err: ActError) {
    if err.gone() {
        counters.refused_gone += 1;
    } else {
        counters.boost_errors += 1;
        counters.last_error = Some(err.to_string());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn action_lines_go_to_the_log_file_once_one_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        super::log_actions_to(&path).unwrap();
        super::action_line(format_args!("[{:>12.6}] (agent) watch", 0.5));
        super::action_line(format_args!("second {}", 2));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "[    0.500000] (agent) watch\nsecond 2\n");
    }
}
