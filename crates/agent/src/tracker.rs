//! The tracker: what the agent manages — threads, processes and jobs — with an index from each process to its
//! threads, so that "every thread of process P" is one lookup instead of a scan of every thread.
//!
//! Plain tables, no I/O: the event loop fills them (registration, BPF fork and exit events, pidfd exits), the
//! actuator's results update a thread's [`Mode`], the statistics read them, and a policy sees them read-only
//! through [`crate::engine::Ctx`].
//!
//! ## Terminology
//! - thread mode: `Normal` (its own attributes), `Boosted { since, until }` (`SCHED_FIFO` for a window that
//!   ends at `until`), `Niced { nice }` (its own policy at another nice level); `orig` = the attributes read
//!   when the agent adopted the thread, written back when it returns to `Normal`.
//! - `slice_ns` / `affinity`: overrides of the thread's custom slice (`sched_runtime`) and CPU affinity that
//!   hold in every mode until the thread is restored.
//! - `R`: how many tasks share a process's CPU (weighted, BPF's `r_milli`); `r_sum / r_count` (thousandths)
//!   average it over the process's arrivals
//!   for the fairness statistic `F = N Tcpu / Twall` (seed `000_e8004e1596fde6a5.txt` §4.1.1).

use crate::sched::SchedAttr;
use cosched_policy::Nanos;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the agent has done to a thread's scheduling attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Its own attributes (`orig`), apart from any slice or affinity override.
    Normal,
    /// `SCHED_FIFO` since `since`, for a window that ends at `until` (then the policy decides what next).
    Boosted { since: Nanos, until: Nanos },
    /// Its own policy at nice `nice` (the DCS policy uses 19: overdrawn, or parked).
    Niced { nice: i32 },
    /// A boost paused (for a local task's turn, or at the boost's length limit): its own policy at
    /// [`PAUSE_NICE`](crate::actuator::PAUSE_NICE), so that the CPU's other tasks go first, until the boost
    /// resumes or the pause ends with its own attributes. Not a demotion: policies do not read it as one.
    Paused,
}

/// One managed thread.
#[derive(Clone, Debug)]
pub struct Thread {
    pub tid: u32,
    pub tgid: u32,
    pub mode: Mode,
    /// Its own attributes, read when the agent adopted it (the agent is the only one that changes them while
    /// it is managed, so they are not read again before each change).
    pub orig: SchedAttr,
    /// Custom slice (`sched_runtime`, ns) set by the policy, if any.
    pub slice_ns: Option<Nanos>,
    /// CPU affinity set by the policy, if any (CPU numbers, ascending).
    pub affinity: Option<Vec<u32>>,
}

impl Thread {
    /// A thread in its own attributes.
    pub fn new(tid: u32, tgid: u32, orig: SchedAttr) -> Thread {
        Thread {
            tid,
            tgid,
            mode: Mode::Normal,
            orig,
            slice_ns: None,
            affinity: None,
        }
    }

    /// Whether the agent has changed anything about it (it must be restored before the agent leaves).
    pub fn changed(&self) -> bool {
        self.mode != Mode::Normal || self.slice_ns.is_some() || self.affinity.is_some()
    }
}

/// One managed process.
#[derive(Clone, Debug)]
pub struct Process {
    pub tgid: u32,
    pub job: u64,
    pub registered_ns: Nanos,
    /// utime + stime (clock ticks) when it became managed.
    pub cpu_at_start_ticks: u64,
    /// Its CPU time while managed (ns), as last sampled from BPF; `None` before the first sample.
    pub cpu_ns: Option<Nanos>,
    /// Sum (thousandths) and count of `R` over its arrivals (for the fairness statistic).
    pub r_sum: u64,
    pub r_count: u64,
}

impl Process {
    /// The mean `R` over its arrivals, 1 when it had none.
    pub fn mean_r(&self) -> f64 {
        if self.r_count > 0 {
            self.r_sum as f64 / self.r_count as f64 / crate::intf::COSCHED_R_ONE_MILLI as f64
        } else {
            1.0
        }
    }
}

/// The mechanism's counters of one job (the policy's own counters live beside them, by name).
#[derive(Clone, Debug, Default)]
pub struct JobCounters {
    /// Boosts carried out (a thread went to `SCHED_FIFO`).
    pub boosts: u64,
    /// The policy's counters (its [`crate::policy::Counter`] names).
    pub policy: BTreeMap<&'static str, u64>,
}

/// One registered job: a root process and its descendants.
#[derive(Clone, Debug)]
pub struct Job {
    pub id: u64,
    pub name: String,
    pub root: u32,
    pub registered_ns: Nanos,
    pub ended_ns: Option<Nanos>,
    /// CPU seconds of processes that already ended.
    pub done_cpu_s: f64,
    /// The same, as BPF booked it.
    pub done_booked_s: f64,
    /// `(Tcpu / Twall, F)` of each process that already ended.
    pub done_shares: Vec<(f64, f64)>,
    pub counters: JobCounters,
    /// The processes that started its root (`cosched run`, `sudo`, a shell), read at registration: they may
    /// share the job's autogroup without making it anyone else's ([`crate::autogroup`]).
    pub launchers: Vec<u32>,
    /// Whether the agent lowered the autogroup the job owns (the budget's demotion at the group level).
    pub group_lowered: bool,
    /// The real uid of its root process at registration: whose budget it spends (0, root: its own).
    pub owner_uid: u32,
}

/// The most jobs kept: the oldest finished ones are dropped beyond it.
pub const MAX_JOBS: usize = 256;

/// The most threads one job may have managed at once. A changed thread holds one guardian slot, so one job can
/// hold at most a quarter of the table ([`crate::guardian::SLOTS`]), and the agent's per-tick work for a job is
/// bounded by it.
pub const MAX_THREADS_PER_JOB: usize = crate::guardian::SLOTS / 4;

/// The most jobs managed at once (the per-tick work is bounded by this × [`MAX_THREADS_PER_JOB`]).
pub const MAX_LIVE_JOBS: usize = 32;

/// The tables.
#[derive(Debug, Default)]
pub struct Tracker {
    threads: HashMap<u32, Thread>,
    procs: HashMap<u32, Process>,
    /// tgid → tids: the index by process.
    by_proc: HashMap<u32, BTreeSet<u32>>,
    /// job → tgids of its live processes: the index by job.
    by_job: HashMap<u64, BTreeSet<u32>>,
    jobs: BTreeMap<u64, Job>,
    next_job: u64,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker {
            next_job: 1,
            ..Default::default()
        }
    }

    /// A fresh job id (the job itself comes with [`add_job`](Self::add_job) once it is registered).
    pub fn new_job_id(&mut self) -> u64 {
        let id = self.next_job;
        self.next_job += 1;
        id
    }

    /// A new job `id` (from [`new_job_id`](Self::new_job_id)); its processes come with
    /// [`add_process`](Self::add_process).
    pub fn add_job(&mut self, id: u64, name: String, root: u32, now: Nanos) {
        self.jobs.insert(
            id,
            Job {
                id,
                name,
                root,
                registered_ns: now,
                ended_ns: None,
                done_cpu_s: 0.0,
                done_booked_s: 0.0,
                done_shares: Vec::new(),
                counters: JobCounters::default(),
                launchers: Vec::new(),
                group_lowered: false,
                owner_uid: 0,
            },
        );
        // Keep the finished-jobs list bounded.
        while self.jobs.len() > MAX_JOBS {
            let Some((&old, _)) = self.jobs.iter().find(|(_, j)| j.ended_ns.is_some()) else {
                break;
            };
            self.jobs.remove(&old);
        }
    }

    pub fn add_process(&mut self, p: Process) {
        self.by_proc.entry(p.tgid).or_default();
        self.by_job.entry(p.job).or_default().insert(p.tgid);
        self.procs.insert(p.tgid, p);
    }

    /// Removes a process (its threads must have been removed first, see [`tids_of`](Self::tids_of)).
    pub fn remove_process(&mut self, tgid: u32) -> Option<Process> {
        self.by_proc.remove(&tgid);
        let p = self.procs.remove(&tgid)?;
        if let Some(tgids) = self.by_job.get_mut(&p.job) {
            tgids.remove(&tgid);
            if tgids.is_empty() {
                self.by_job.remove(&p.job);
            }
        }
        Some(p)
    }

    /// Managed threads of job `job` now.
    pub fn threads_in_job(&self, job: u64) -> usize {
        self.by_job.get(&job).map_or(0, |tgids| {
            tgids
                .iter()
                .map(|t| self.by_proc.get(t).map_or(0, BTreeSet::len))
                .sum()
        })
    }

    /// Jobs with a live process.
    pub fn live_jobs(&self) -> usize {
        self.by_job.len()
    }

    /// Whether job `job` already has [`MAX_THREADS_PER_JOB`] managed threads.
    pub fn job_at_cap(&self, job: u64) -> bool {
        self.threads_in_job(job) >= MAX_THREADS_PER_JOB
    }

    /// The job of process `tgid` if it is at its cap ([`job_at_cap`](Self::job_at_cap)).
    pub fn job_full(&self, tgid: u32) -> Option<u64> {
        let job = self.procs.get(&tgid)?.job;
        self.job_at_cap(job).then_some(job)
    }

    /// Adds a thread of a tracked process; `false` if the process is not tracked or its job is full
    /// ([`job_full`](Self::job_full)).
    pub fn add_thread(&mut self, t: Thread) -> bool {
        if self.job_full(t.tgid).is_some() {
            return false;
        }
        let Some(index) = self.by_proc.get_mut(&t.tgid) else {
            return false;
        };
        index.insert(t.tid);
        self.threads.insert(t.tid, t);
        true
    }

    pub fn remove_thread(&mut self, tid: u32) -> Option<Thread> {
        let t = self.threads.remove(&tid)?;
        if let Some(index) = self.by_proc.get_mut(&t.tgid) {
            index.remove(&tid);
        }
        Some(t)
    }

    pub fn thread(&self, tid: u32) -> Option<&Thread> {
        self.threads.get(&tid)
    }

    pub fn thread_mut(&mut self, tid: u32) -> Option<&mut Thread> {
        self.threads.get_mut(&tid)
    }

    pub fn threads(&self) -> impl Iterator<Item = &Thread> {
        self.threads.values()
    }

    pub fn process(&self, tgid: u32) -> Option<&Process> {
        self.procs.get(&tgid)
    }

    pub fn process_mut(&mut self, tgid: u32) -> Option<&mut Process> {
        self.procs.get_mut(&tgid)
    }

    pub fn processes(&self) -> impl Iterator<Item = &Process> {
        self.procs.values()
    }

    /// The tgids of every tracked process, ascending.
    pub fn tgids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.procs.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The tids of a process's tracked threads, ascending (through the index).
    pub fn tids_of(&self, tgid: u32) -> Vec<u32> {
        self.by_proc
            .get(&tgid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// A process's tracked threads (through the index).
    pub fn threads_of(&self, tgid: u32) -> impl Iterator<Item = &Thread> {
        self.by_proc
            .get(&tgid)
            .into_iter()
            .flatten()
            .filter_map(|tid| self.threads.get(tid))
    }

    pub fn job(&self, id: u64) -> Option<&Job> {
        self.jobs.get(&id)
    }

    pub fn job_mut(&mut self, id: u64) -> Option<&mut Job> {
        self.jobs.get_mut(&id)
    }

    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// The job of a tracked process.
    pub fn job_of(&self, tgid: u32) -> Option<u64> {
        self.procs.get(&tgid).map(|p| p.job)
    }

    /// The jobs with a live process, ascending.
    pub fn live_job_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.by_job.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Whether any process of `job` is still tracked.
    pub fn job_alive(&self, job: u64) -> bool {
        self.by_job.contains_key(&job)
    }

    /// The live processes of job `job`.
    pub fn processes_of(&self, job: u64) -> impl Iterator<Item = &Process> {
        self.by_job
            .get(&job)
            .into_iter()
            .flatten()
            .filter_map(|tgid| self.procs.get(tgid))
    }

    /// Threads boosted now.
    pub fn boosted(&self) -> usize {
        self.threads
            .values()
            .filter(|t| matches!(t.mode, Mode::Boosted { .. }))
            .count()
    }

    /// The earliest end of a boost window, if any thread is boosted.
    pub fn next_window_end(&self) -> Option<Nanos> {
        self.threads
            .values()
            .filter_map(|t| match t.mode {
                Mode::Boosted { until, .. } => Some(until),
                _ => None,
            })
            .min()
    }

    /// Whether the agent holds any thread in a mode other than `Normal`.
    pub fn steering(&self) -> bool {
        self.threads.values().any(|t| t.mode != Mode::Normal)
    }

    /// Whether some managed thread is lowered or its boost paused (niced: a demotion, a park, a pause).
    pub fn lowering(&self) -> bool {
        self.threads
            .values()
            .any(|t| matches!(t.mode, Mode::Niced { .. } | Mode::Paused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(tgid: u32, job: u64) -> Process {
        Process {
            tgid,
            job,
            registered_ns: 0,
            cpu_at_start_ticks: 0,
            cpu_ns: None,
            r_sum: 0,
            r_count: 0,
        }
    }

    #[test]
    fn the_index_follows_threads_in_and_out() {
        let mut t = Tracker::new();
        let job = t.new_job_id();
        t.add_job(job, "j".into(), 10, 0);
        t.add_process(process(10, job));
        t.add_process(process(20, job));
        for (tid, tgid) in [(10, 10), (11, 10), (20, 20), (12, 10)] {
            assert!(t.add_thread(Thread::new(tid, tgid, SchedAttr::default())));
        }
        // A thread of an unknown process is not tracked.
        assert!(!t.add_thread(Thread::new(31, 30, SchedAttr::default())));
        assert_eq!(t.tids_of(10), vec![10, 11, 12]);
        assert_eq!(t.tids_of(20), vec![20]);
        t.remove_thread(11);
        assert_eq!(t.tids_of(10), vec![10, 12]);
        assert_eq!(t.threads_of(10).count(), 2);
        for tid in t.tids_of(10) {
            t.remove_thread(tid);
        }
        t.remove_process(10);
        assert!(t.tids_of(10).is_empty());
        assert_eq!(t.tgids(), vec![20]);
        assert!(t.job_alive(job));
    }

    #[test]
    fn a_job_gets_at_most_its_share_of_threads_and_its_index_follows_processes() {
        let mut t = Tracker::new();
        let (a, b) = (t.new_job_id(), t.new_job_id());
        t.add_job(a, "a".into(), 1, 0);
        t.add_job(b, "b".into(), 2, 0);
        t.add_process(process(1, a));
        t.add_process(process(5, a));
        t.add_process(process(2, b));
        assert_eq!(t.live_jobs(), 2);
        // Job a fills its share across two processes; the next thread of either is refused, job b's is not.
        for i in 0..MAX_THREADS_PER_JOB as u32 {
            let tgid = if i % 2 == 0 { 1 } else { 5 };
            assert!(t.add_thread(Thread::new(1000 + i, tgid, SchedAttr::default())));
        }
        assert_eq!(t.threads_in_job(a), MAX_THREADS_PER_JOB);
        assert_eq!(t.job_full(5), Some(a));
        assert!(!t.add_thread(Thread::new(9000, 1, SchedAttr::default())));
        assert_eq!(t.job_full(2), None);
        assert!(t.add_thread(Thread::new(9001, 2, SchedAttr::default())));
        // A thread leaving makes room again.
        t.remove_thread(1000);
        assert!(t.add_thread(Thread::new(9002, 1, SchedAttr::default())));
        // The job index: processes of a job, alive while it has one.
        let mut of_a: Vec<u32> = t.processes_of(a).map(|p| p.tgid).collect();
        of_a.sort_unstable();
        assert_eq!(of_a, vec![1, 5]);
        for tgid in [1, 5] {
            for tid in t.tids_of(tgid) {
                t.remove_thread(tid);
            }
            t.remove_process(tgid);
        }
        assert!(!t.job_alive(a) && t.job_alive(b));
        assert_eq!((t.live_jobs(), t.threads_in_job(a)), (1, 0));
    }

    #[test]
    fn window_ends_and_steering_follow_modes() {
        let mut t = Tracker::new();
        let job = t.new_job_id();
        t.add_job(job, "j".into(), 1, 0);
        t.add_process(process(1, job));
        t.add_thread(Thread::new(1, 1, SchedAttr::default()));
        t.add_thread(Thread::new(2, 1, SchedAttr::default()));
        assert!(!t.steering());
        assert_eq!(t.next_window_end(), None);
        t.thread_mut(1).unwrap().mode = Mode::Boosted {
            since: 0,
            until: 700,
        };
        t.thread_mut(2).unwrap().mode = Mode::Boosted {
            since: 0,
            until: 500,
        };
        assert_eq!(t.next_window_end(), Some(500));
        assert_eq!(t.boosted(), 2);
        assert!(
            t.steering() && !t.lowering(),
            "boosted is steered, not lowered"
        );
        t.thread_mut(2).unwrap().mode = Mode::Niced { nice: 19 };
        assert_eq!((t.next_window_end(), t.boosted()), (Some(700), 1));
        assert!(t.steering() && t.lowering());
        t.thread_mut(2).unwrap().mode = Mode::Paused;
        assert!(t.lowering(), "a paused boost is lowered");
    }

    #[test]
    fn finished_jobs_are_dropped_oldest_first_beyond_the_limit() {
        let mut t = Tracker::new();
        let first = t.new_job_id();
        t.add_job(first, "first".into(), 1, 0);
        t.job_mut(first).unwrap().ended_ns = Some(1);
        for i in 0..MAX_JOBS {
            let id = t.new_job_id();
            t.add_job(id, format!("j{i}"), 2, 0);
        }
        assert!(t.job(first).is_none());
        assert_eq!(t.jobs().count(), MAX_JOBS);
    }
}
