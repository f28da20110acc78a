//! The in-CPU rules on real jobs — seed `001_cc73854eda2a0ea6.txt` §3.1: inside a partition each CPU holds a
//! local queue of one job's ranks; the one on the CPU runs until it blocks (BI) or its spin expires (SB), and
//! then the seed's "Context Switching routine" picks who runs next: **RR**, the next in the local queue, or
//! **Msg**, the process with the most unconsumed messages (ties in RR order).
//!
//! ## Approach (notes §001.6)
//! - **`rr`**: every thread of a job's ranked processes (the ones [`crate::pin`] pins, rank order) runs at one
//!   `SCHED_FIFO` priority, [`QUEUE_PRIORITY`]. A FIFO task runs until it blocks, a woken one goes to the tail of
//!   its priority's queue, and the head runs next: "run until it blocks, then the next in RR order", with no
//!   time slice inside the partition. Threads are given the policy in rank order, so a CPU's queue starts in
//!   rank order.
//! - **`msg`**: `rr`, and every tick ([`Settings::tick`]) the process of each CPU's queue with the most bytes
//!   received and not read on its sockets (`SIOCINQ`, [`cosched_agent::sockets::SocketTable`]) is raised to
//!   [`FAVOURED_PRIORITY`]: when the running rank blocks, the kernel runs it first (and it preempts a lower
//!   rank that spins). The choice is the policy core's [`choose_next`] (`Next::MostMessages`, a process with
//!   nothing unread counts as not ready, ties in RR order after the last one favoured); no process with
//!   unread data → nobody favoured, plain `rr`. Bytes stand for messages (a stream socket does not count
//!   messages), and the view is the tick's, not the instant of the block: the seed's routine ran inside the
//!   MPI library at the block.
//! - **`fair`** (the default): nothing; the kernel's fair scheduler time-slices a job's ranks (the seed's RR in
//!   its looser form).
//!
//! ## Safety: never a process left real-time, never a CPU held
//! - **A rank that never blocks** would hold its CPU at real-time priority — from its partition mates, and from
//!   everything else of the machine on that CPU (kernel threads, a local user). Every tenth of
//!   [`Settings::max_run`] (5 ms) the in-CPU thread reads each held
//!   thread's run time (`/proc/…/schedstat`) and voluntary context switches (`/proc/…/status`); a thread that
//!   ran [`Settings::max_run`] without one ([`never_blocks`]) ends the rule for its whole job: every thread of
//!   it goes back to what it had, and the job runs under the fair scheduler to its end (logged). A poller that
//!   yields (`sched_yield`, Open MPI's progress loop) counts as never blocking: a yield is not a voluntary switch.
//! - **The manager's death** (`kill -9` included): every policy change is recorded first in a guardian's slot
//!   table ([`cosched_agent::guardian`], the agent's own, forked before the manager starts any thread, running
//!   `SCHED_FIFO` above every rank): when the manager is gone, or its in-CPU thread's heartbeat is older than
//!   the lease, the guardian gives every thread back what it had. The jobs run on under the fair scheduler, and
//!   a restarted manager re-adopts them and applies the rule again.
//! - **The job's end, a cancel, a stop** (SIGTERM): every thread is given back what it had first.
//! - **No real-time bandwidth** (a cpu cgroup with `cpu.rt_runtime_us` 0): the `sched_setattr` fails; the job
//!   is logged and left to the fair scheduler. The kernel's own real-time throttle (950 ms/s) stays as it is.
//!
//! The in-CPU thread runs at `SCHED_FIFO` [`THREAD_PRIORITY`] (above the ranks, below the guardian), reset on
//! fork, so that spinning ranks cannot keep it from its watchdog.

use cosched_agent::guardian::{Guardian, SlotId};
use cosched_agent::sched::{self, SchedAttr, Target};
use cosched_agent::sockets::SocketTable;
use cosched_policy::scs::{choose_next, LocalProcess, Next};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `SCHED_FIFO` priority of every thread of a job's local queues under `rr` and `msg`.
pub const QUEUE_PRIORITY: u32 = 1;
/// The priority of the process `msg` favours on its CPU.
pub const FAVOURED_PRIORITY: u32 = 2;
/// The in-CPU thread's own priority: above the ranks, so that they cannot starve its watchdog.
pub const THREAD_PRIORITY: u32 = 3;
/// The guardian's priority: above everything the manager sets.
pub const GUARDIAN_PRIORITY: u32 = 4;
/// How old the in-CPU thread's heartbeat may get while a thread holds a real-time policy.
pub const GUARD_LEASE_MS: u64 = 250;
/// How often the running jobs' threads are looked up again (new ranks, new threads, ended ones).
pub const RESCAN: Duration = Duration::from_millis(20);

/// The in-CPU rule (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Rule {
    /// The kernel's fair scheduler time-slices a job's ranks (nothing is changed).
    Fair,
    /// Strict round robin: one SCHED_FIFO priority per local queue; run until blocked, then the next.
    Rr,
    /// `rr`, plus the rank with the most unread bytes on its sockets runs first when its CPU frees.
    Msg,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Fair => "fair",
            Rule::Rr => "rr",
            Rule::Msg => "msg",
        }
    }
}

/// The in-CPU rule's settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub rule: Rule,
    /// How often `msg` looks at the unread bytes (the watchdog: [`Settings::watch_period`]).
    pub tick: Duration,
    /// How long a thread may run without blocking before its job is left to the fair scheduler.
    pub max_run: Duration,
}

impl Settings {
    /// The defaults for `rule`: a 1 ms tick, a 50 ms run without a block.
    pub fn new(rule: Rule) -> Settings {
        Settings {
            rule,
            tick: Duration::from_millis(1),
            max_run: Duration::from_millis(50),
        }
    }

    /// How often the watchdog looks: a tenth of the longest run allowed (5 ms by default), at most every tick.
    pub fn watch_period(&self) -> Duration {
        (self.max_run / 10).max(self.tick)
    }

    /// Checks the settings against the manager's: the rules act on the local queues that pinning makes.
    pub fn check(&self, pin_ranks: bool) -> anyhow::Result<()> {
        if self.rule != Rule::Fair && !pin_ranks {
            anyhow::bail!(
                "--in-cpu {} acts on each CPU's local queue of ranks, which rank-order pinning makes: drop \
                 --no-pin-ranks, or use --in-cpu fair",
                self.rule.name()
            );
        }
        if self.tick.is_zero() || self.tick > Duration::from_secs(1) {
            anyhow::bail!(
                "--in-cpu-tick-us must be between 1 and 1000000, got {}",
                self.tick.as_micros()
            );
        }
        if self.max_run < Duration::from_millis(1) || self.max_run > Duration::from_secs(10) {
            anyhow::bail!(
                "--in-cpu-max-run-ms must be between 1 and 10000, got {}",
                self.max_run.as_millis()
            );
        }
        Ok(())
    }
}

/// A running job as the quantum loop last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    pub id: i64,
    /// Its partition's cgroup directory.
    pub dir: PathBuf,
    pub procs: u32,
    pub partition: Vec<u32>,
}

/// One look at a thread: its run time on a CPU and its voluntary context switches (blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSample {
    pub run_ns: u64,
    pub blocks: u64,
}

/// The watchdog's rule: a thread whose voluntary switches did not change since `since_block` (the sample taken
/// when they last did) and that ran at least `max_run_ns` since, never blocks.
pub fn never_blocks(since_block: RunSample, now: RunSample, max_run_ns: u64) -> bool {
    now.blocks == since_block.blocks && now.run_ns.saturating_sub(since_block.run_ns) >= max_run_ns
}

/// Reads a thread's [`RunSample`]: field 1 of `/proc/<tgid>/task/<tid>/schedstat` and
/// `voluntary_ctxt_switches` of its `status`. `None` when it is gone.
pub fn run_sample(tgid: u32, tid: u32) -> Option<RunSample> {
    let dir = format!("/proc/{tgid}/task/{tid}");
    let schedstat = std::fs::read_to_string(format!("{dir}/schedstat")).ok()?;
    let run_ns = schedstat.split_whitespace().next()?.parse().ok()?;
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let blocks = status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()?;
    Some(RunSample { run_ns, blocks })
}

/// A thread the rule holds at a real-time priority.
struct Held {
    target: Target,
    slot: SlotId,
    job: i64,
    rank: u32,
    cpu: u32,
    orig: SchedAttr,
    set: SchedAttr,
    since_block: RunSample,
}

/// What the rule did, for the manager's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Threads given the queue's priority.
    pub held: u64,
    /// Changes of the favoured process (`msg`).
    pub favours: u64,
    /// Jobs left to the fair scheduler (a rank never blocked, or no real-time bandwidth).
    pub released_jobs: u64,
    pub ticks: u64,
}

/// The shared state between the quantum loop and the in-CPU thread.
pub struct Shared {
    jobs: Mutex<Vec<JobView>>,
    stop: AtomicBool,
}

impl Shared {
    /// The quantum loop's view of the running jobs, handed to the in-CPU thread.
    pub fn set_jobs(&self, jobs: Vec<JobView>) {
        *self.jobs.lock().unwrap_or_else(|e| e.into_inner()) = jobs;
    }
}

/// The in-CPU thread's handle: stops it (every thread restored) when dropped.
pub struct InCpuThread {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<Counts>>,
}

impl InCpuThread {
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the thread after it restored every thread it holds; what it did.
    pub fn stop(mut self) -> Counts {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for InCpuThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The guardian handle moved into the in-CPU thread, its only user from then on.
struct OwnedGuardian(Guardian);
// SAFETY: the guardian's mapped table is written by one thread at a time: the handle is created on the
// manager's main thread and moved, whole, into the in-CPU thread, which alone uses it afterwards.
unsafe impl Send for OwnedGuardian {}

/// Forks the guardian (call before the manager starts any other thread) and starts the in-CPU thread.
pub fn start(settings: Settings, log: fn(String)) -> anyhow::Result<InCpuThread> {
    let guardian = OwnedGuardian(Guardian::start(GUARDIAN_PRIORITY, GUARD_LEASE_MS)?);
    let shared = Arc::new(Shared {
        jobs: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
    });
    let for_thread = Arc::clone(&shared);
    let handle = std::thread::Builder::new()
        .name("in-cpu".into())
        .spawn(move || {
            let guardian = guardian;
            let mut rule = InCpu {
                settings,
                guardian: guardian.0,
                held: HashMap::new(),
                released: HashSet::new(),
                favoured: HashMap::new(),
                sockets: SocketTable::default(),
                counts: Counts::default(),
                log,
            };
            rule.run(&for_thread);
            rule.counts
        })?;
    Ok(InCpuThread {
        shared,
        handle: Some(handle),
    })
}

struct InCpu {
    settings: Settings,
    guardian: Guardian,
    /// By tid.
    held: HashMap<u32, Held>,
    /// Jobs left to the fair scheduler.
    released: HashSet<i64>,
    /// The pid last favoured on each CPU (`msg`).
    favoured: HashMap<u32, u32>,
    /// The held processes' sockets, for their unread bytes.
    sockets: SocketTable,
    counts: Counts,
    log: fn(String),
}

impl InCpu {
    fn run(&mut self, shared: &Shared) {
        let own = SchedAttr {
            sched_flags: sched::SCHED_FLAG_RESET_ON_FORK,
            ..SchedAttr::fifo(THREAD_PRIORITY)
        };
        // SAFETY: gettid has no failure mode.
        let me = unsafe { libc::gettid() } as u32;
        if let Err(e) = sched::set_attr(me, &own) {
            (self.log)(format!(
                "in-CPU rule {}: could not run the watchdog at SCHED_FIFO {THREAD_PRIORITY} ({e}); it runs \
                 in the fair class, where spinning ranks may delay it",
                self.settings.rule.name()
            ));
        }
        let mut last_scan: Option<Instant> = None;
        let mut last_watch: Option<Instant> = None;
        let watch_period = self.settings.watch_period();
        let sleep = match self.settings.rule {
            Rule::Msg => self.settings.tick.min(watch_period),
            _ => watch_period,
        };
        while !shared.stop.load(Ordering::SeqCst) {
            self.guardian.heartbeat();
            if last_scan.map_or(true, |t| t.elapsed() >= RESCAN) {
                let jobs = shared
                    .jobs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                self.sync(&jobs);
                last_scan = Some(Instant::now());
            }
            if last_watch.map_or(true, |t| t.elapsed() >= watch_period) {
                self.watchdog();
                last_watch = Some(Instant::now());
            }
            if self.settings.rule == Rule::Msg {
                self.favour();
            }
            self.counts.ticks += 1;
            std::thread::sleep(sleep);
        }
        let tids: Vec<u32> = self.held.keys().copied().collect();
        for tid in tids {
            self.restore(tid);
        }
    }

    /// Takes on the ranked threads of `jobs` not yet held, and gives back those whose job or thread is gone.
    fn sync(&mut self, jobs: &[JobView]) {
        let running: HashSet<i64> = jobs.iter().map(|j| j.id).collect();
        self.released.retain(|id| running.contains(id));
        let stale: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, h)| !running.contains(&h.job) || !h.target.alive())
            .map(|(&tid, _)| tid)
            .collect();
        for tid in stale {
            self.restore(tid);
        }
        for job in jobs {
            if self.released.contains(&job.id) {
                continue;
            }
            // Rank order, so that each CPU's FIFO queue starts in rank order.
            let ranked = crate::pin::ranked_processes(
                &crate::cgroup::procs(&job.dir),
                job.procs,
                &job.partition,
            );
            for (rank, pid, cpu) in ranked {
                for tid in crate::pin::threads_of(pid) {
                    if let Some(h) = self.held.get_mut(&tid) {
                        h.cpu = cpu;
                        continue;
                    }
                    if let Err(why) = self.hold(job.id, rank, pid, tid, cpu) {
                        self.release_job(job.id, &why);
                        break;
                    }
                }
                if self.released.contains(&job.id) {
                    break;
                }
            }
        }
    }

    /// Gives thread `tid` the queue's priority. `Err` (why) when the job cannot run under the rule.
    fn hold(&mut self, job: i64, rank: u32, tgid: u32, tid: u32, cpu: u32) -> Result<(), String> {
        let Ok(target) = Target::open(tgid, tid) else {
            return Ok(()); // gone meanwhile
        };
        let Ok(orig) = target.get() else {
            return Ok(());
        };
        if orig.is_realtime() {
            return Err(format!(
                "rank {rank} (thread {tid}) already runs at {} priority {}, set by someone else: left alone",
                orig.policy_name(),
                orig.sched_priority
            ));
        }
        let Some(since_block) = run_sample(tgid, tid) else {
            return Ok(());
        };
        let leader_start = sched::start_time(tgid, tgid).unwrap_or(target.start_time);
        let set = SchedAttr::fifo(QUEUE_PRIORITY);
        let Some(slot) =
            self.guardian
                .record((tgid, tid), (target.start_time, leader_start), &set, &orig)
        else {
            return Err("the guardian's table is full".into());
        };
        match target.set(&set, &orig) {
            Ok(()) => {
                self.counts.held += 1;
                self.held.insert(
                    tid,
                    Held {
                        target,
                        slot,
                        job,
                        rank,
                        cpu,
                        orig,
                        set,
                        since_block,
                    },
                );
                Ok(())
            }
            Err(sched::SchedError::Gone { .. }) => {
                self.guardian.release(slot);
                Ok(())
            }
            Err(e) => {
                self.guardian.release(slot);
                Err(e.to_string())
            }
        }
    }

    /// Gives thread `tid` back what it had (unless someone else changed it since) and frees its slot.
    fn restore(&mut self, tid: u32) {
        let Some(h) = self.held.remove(&tid) else {
            return;
        };
        if let Ok(now) = h.target.get() {
            if let Some(back) = sched::write_back(&h.orig, &h.set, &now, sched::nice_of(tid)) {
                let _ = h.target.switch(&back, &now, &now);
            }
        }
        self.guardian.release(h.slot);
    }

    /// Ends the rule for job `id`: every thread of it back to what it had, and no more taken on.
    fn release_job(&mut self, id: i64, why: &str) {
        if !self.released.insert(id) {
            return;
        }
        self.counts.released_jobs += 1;
        let tids: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, h)| h.job == id)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in tids {
            self.restore(tid);
        }
        (self.log)(format!(
            "job {id}: in-CPU rule {} ended, the fair scheduler runs it from now on: {why}",
            self.settings.rule.name()
        ));
    }

    /// Ends the rule for every job with a thread that ran [`Settings::max_run`] without blocking.
    fn watchdog(&mut self) {
        let max_run_ns = self.settings.max_run.as_nanos() as u64;
        let mut offenders: Vec<(i64, String)> = Vec::new();
        for (&tid, h) in self.held.iter_mut() {
            let Some(now) = run_sample(h.target.tgid, tid) else {
                continue; // gone: the next scan gives its slot back
            };
            if now.blocks != h.since_block.blocks {
                h.since_block = now;
            } else if never_blocks(h.since_block, now, max_run_ns) {
                offenders.push((
                    h.job,
                    format!(
                        "rank {} (thread {tid}) ran {:.1} ms without blocking (limit {} ms)",
                        h.rank,
                        now.run_ns.saturating_sub(h.since_block.run_ns) as f64 / 1e6,
                        self.settings.max_run.as_millis()
                    ),
                ));
            }
        }
        for (job, why) in offenders {
            self.release_job(job, &why);
        }
    }

    /// `msg`: on each CPU, the process with the most unread bytes at [`FAVOURED_PRIORITY`], the others at the
    /// queue's priority.
    fn favour(&mut self) {
        // Each CPU's local queue: its processes in rank order.
        let mut queues: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new(); // cpu → (rank, pid)
        for h in self.held.values() {
            let queue = queues.entry(h.cpu).or_default();
            if !queue.iter().any(|&(_, pid)| pid == h.target.tgid) {
                queue.push((h.rank, h.target.tgid));
            }
        }
        let mut want: HashMap<u32, u32> = HashMap::new(); // pid → priority
        let pids: Vec<u32> = queues.values().flatten().map(|&(_, pid)| pid).collect();
        let sampled = self.sockets.sample(&pids);
        for (cpu, mut queue) in queues {
            queue.sort();
            let local: Vec<LocalProcess> = queue
                .iter()
                .map(|&(_, pid)| {
                    let unread: u64 = sampled
                        .get(&pid)
                        .map_or(0, |q| q.iter().map(|q| q.rmem).sum());
                    LocalProcess {
                        runnable: unread > 0,
                        unconsumed: unread.min(u32::MAX as u64) as u32,
                    }
                })
                .collect();
            let previous = self
                .favoured
                .get(&cpu)
                .and_then(|p| queue.iter().position(|&(_, pid)| pid == *p))
                .unwrap_or(queue.len().saturating_sub(1));
            let chosen = choose_next(&local, previous, Next::MostMessages);
            for (i, &(_, pid)) in queue.iter().enumerate() {
                want.insert(
                    pid,
                    if Some(i) == chosen {
                        FAVOURED_PRIORITY
                    } else {
                        QUEUE_PRIORITY
                    },
                );
            }
            if let Some(i) = chosen {
                if self.favoured.insert(cpu, queue[i].1) != Some(queue[i].1) {
                    self.counts.favours += 1;
                }
            }
        }
        for h in self.held.values_mut() {
            let priority = want.get(&h.target.tgid).copied().unwrap_or(QUEUE_PRIORITY);
            if h.set.sched_priority == priority {
                continue;
            }
            let set = SchedAttr::fifo(priority);
            let prior = h.set;
            self.guardian.update(h.slot, &set);
            if h.target.set(&set, &prior).is_ok() {
                h.set = set;
            } else {
                self.guardian.update(h.slot, &prior);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_ran_the_limit_without_a_voluntary_switch_never_blocks() {
        let at = |run_ms: u64, blocks: u64| RunSample {
            run_ns: run_ms * 1_000_000,
            blocks,
        };
        let limit = 50_000_000;
        assert!(
            !never_blocks(at(100, 7), at(149, 7), limit),
            "49 ms: not yet"
        );
        assert!(
            never_blocks(at(100, 7), at(150, 7), limit),
            "50 ms, no block"
        );
        assert!(
            !never_blocks(at(100, 7), at(400, 8), limit),
            "it blocked once: the count starts again"
        );
    }

    #[test]
    fn this_process_reads_as_running_and_blocking() {
        let me = std::process::id();
        // SAFETY: gettid has no failure mode. The test runs on a thread of its own, not the leader.
        let thread = unsafe { libc::gettid() } as u32;
        let a = run_sample(me, thread).expect("our own thread");
        std::thread::sleep(Duration::from_millis(2));
        let after_sleep = run_sample(me, thread).unwrap();
        assert!(
            after_sleep.blocks > a.blocks,
            "the sleep was a voluntary switch"
        );
        // Spin until the thread's own run time grew 4 ms (the wall time it takes depends on the machine's load).
        let t0 = Instant::now();
        let mut b = after_sleep;
        while b.run_ns < after_sleep.run_ns + 4_000_000 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "run time stuck: {b:?}"
            );
            std::hint::spin_loop();
            b = run_sample(me, thread).unwrap();
        }
        assert!(b.run_ns > a.run_ns);
        assert_eq!(run_sample(me, u32::MAX - 1), None, "no such thread");
    }

    #[test]
    fn the_rules_need_pinned_ranks_and_sane_periods() {
        assert!(Settings::new(Rule::Fair).check(false).is_ok());
        let e = Settings::new(Rule::Rr)
            .check(false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--no-pin-ranks"), "{e}");
        assert!(Settings::new(Rule::Msg).check(true).is_ok());
        let mut s = Settings::new(Rule::Msg);
        s.tick = Duration::ZERO;
        assert!(s.check(true).unwrap_err().to_string().contains("tick"));
        s = Settings::new(Rule::Rr);
        s.max_run = Duration::from_micros(10);
        assert!(s.check(true).unwrap_err().to_string().contains("max-run"));
    }
}
