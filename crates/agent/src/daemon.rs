//! The agent's main loop: read BPF events, decide with the DCS rule and the boost budget, act, restore.
//!
//! ## Problem
//! A message arrives for a managed thread that is waiting for its CPU behind CPU-bound local work (seed
//! `000_e8004e1596fde6a5.txt` §3.3; `002_53dfbd94bd660dc4.txt` §2.2). Run it now if that is fair; otherwise let it
//! wait its turn.
//!
//! ## Approach
//! BPF flags only arrivals whose receiver is off its CPU and has not run for the grace time (one pending flag per
//! thread). For each flagged arrival the agent applies, in order:
//! (a thread that is demoted or parked is treated the same: the budget decides)
//! 1. [`cosched_policy::dcs::decide`] with `Tc` = now, `Tp` = the process's previous boost attempt, `Tq` = the
//!    kernel tick (or `--quantum-us`), `R` = the receiver CPU's `nr_running` at the arrival (read in BPF);
//! 2. [`cosched_policy::budget::Budget`]: the process's CPU time (measured in BPF at every context switch) may not
//!    exceed its fair share `slack/R` of wall time plus a burst.
//!
//! If both allow it, the receiving thread gets `SCHED_FIFO` (low priority, reset-on-fork) for `--boost-us`; at the
//! end of the window the boost is extended while arrivals keep coming and the budget allows, else the original
//! attributes come back. Unless `--no-demote`, a boost that ends because the budget ran out hands the CPU back:
//! the process is lowered to nice 19 until its balance is back to `resume` (spin-waiting ranks never give
//! their CPU back by themselves, so without this a boosted job keeps its full CFS share on top of its boosts).
//! A boost that ends because the peer stopped answering (no arrival within the window) while the thread
//! spin-waits (BPF saw its last receive find nothing) *parks* the process at nice 19 too: its peer is off its
//! CPU, so spinning on in CFS would spend this side's share on nothing and leave the two sides' budgets out of
//! step, and the next coscheduled burst would end early on whichever side ran out first. A demoted or parked
//! thread is boosted again by the next arrival its budget allows, or, holding an unread message, as soon as it
//! has repaid (`resume`) — so both sides spend their CPU while coscheduled, and burst together.
//! A "fairness monitor" tick (seed `002` §2.2.1) updates every budget each `--tick-ms`, lifts repaid
//! processes, and lowers processes overdrawn by their CFS time alone.
//!
//! ## Terminology
//! - thread state: `Normal`, `Boosted { until }`, `Demoted` (nice 19: overdrawn or parked); `orig` =
//!   attributes read just before leaving `Normal`, written back on return.
//! - `Tp`: per process, the time of the last boost attempt (DCS), in CLOCK_MONOTONIC ns (= `bpf_ktime_get_ns`).
//!
//! ## Algorithm
//! ```text
//! on flagged arrival (tid, R, t):
//!     if tid boosted: extend until = max(until, t + window); done
//!     if R <= 1: nothing to preempt; done
//!     d = dcs::decide(E, C, running = false, Tc = now, Tp, Tq, R);  Tp = now if d == Boost
//!     budget.update(now, cpu_ns, R)
//!     if d == Boost and budget.may_boost(): boost(tid, now + window) else count refusal
//! on timer: for each boosted tid with until <= now:
//!     if arrivals since the boost, the last within a window, R > 1 and budget.may_boost():
//!         ext = min(2 ext, max_extend); until = now + ext
//!     elif demote and not budget.may_boost(): demote(process)   (nice 19 until repaid)
//!     elif demote and R > 1 and spin_waiting(tid): park(process) (nice 19 until an arrival)
//!     else restore(tid)
//! every tick: for each process: budget.update(...)
//!     for each demoted tid: if R <= 1: restore
//!                           elif repaid and unread message: boost (the next coscheduled burst)
//!                           elif repaid and not spin_waiting: restore
//!     demote if overdrawn and not boosted
//!     close the watch gate (detach the message hooks) if no managed thread shared its CPU within the hold and
//!     none is boosted or demoted
//! on BPF's "gate opened" (it saw a managed thread share its CPU): attach the message hooks
//! spin_waiting(tid) = its last receive found nothing (within 2 ms of its last time on a CPU) and nothing
//!                     arrived since its last successful receive
//! ```
//!
//! ## Parameters
//! `--boost-us` 500, `--max-extend-us` 4000, `--grace-us` 100, `--renotify-us` 1000, `--rt-prio` 1,
//! `--exponent` 2 and `--constant-ms` 0 (the budget holds fairness, so DCS only spaces boost starts; the seed's
//! spin-only setting is `--exponent -1`), `--quantum-us` = the kernel tick (4000 at HZ=250), `--tick-ms` 10,
//! `--watch-hold-ms` 200 (0: the message hooks stay attached), and
//! the budget's defaults ([`cosched_policy::budget::BudgetParams::DEFAULT`]): `--slack-ppm` 1000000,
//! `--burst-ms` 160, `--floor-ms` 160, `--demote-ms` 10, `--resume-ms` 60.

use crate::bpf::{BpfOptions, Observer};
use crate::guardian::{Guardian, SlotId};
use crate::intf::{self, Event};
use crate::proto::{AgentStats, JobStats, Latency, Reply, Request};
use crate::sched::{self, SchedAttr, SchedError, Target};
use cosched_policy::budget::{Budget, BudgetParams};
use cosched_policy::dcs::{self, DcsDecision, DcsInputs, DcsParams};
use cosched_policy::Nanos;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// The agent's resolved configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub socket: PathBuf,
    pub boost_ns: Nanos,
    /// Longest single extension of a boost while arrivals keep coming.
    pub max_extend_ns: Nanos,
    pub grace_ns: Nanos,
    /// A refused arrival still waiting after this long is reconsidered.
    pub renotify_ns: Nanos,
    pub rt_prio: u32,
    pub dcs: DcsParams,
    pub quantum_ns: Nanos,
    pub budget: BudgetParams,
    pub demote: bool,
    pub tick_ns: Nanos,
    /// Close the BPF watch gate once no managed thread has shared its CPU for this long (`None`: never).
    pub watch_hold_ns: Option<Nanos>,
    /// The agent's own SCHED_FIFO priority (0 = stay SCHED_OTHER).
    pub agent_prio: u32,
    /// Print one line per action (boost, extend, restore, demote, refusals) on stderr.
    pub log_actions: bool,
    /// Stop after this long (tests), `None` = until SIGINT/SIGTERM.
    pub run_for: Option<Duration>,
    /// Fault injection (safety tests): panic right after this many boosts, with the last one still in place.
    pub panic_after_boosts: Option<u64>,
}

impl Config {
    /// `key=value` lines for the stats header.
    pub fn describe(&self) -> Vec<String> {
        vec![
            format!("socket={}", self.socket.display()),
            format!("boost_us={}", self.boost_ns / 1000),
            format!("max_extend_us={}", self.max_extend_ns / 1000),
            format!("grace_us={}", self.grace_ns / 1000),
            format!("renotify_us={}", self.renotify_ns / 1000),
            format!("rt_prio={}", self.rt_prio),
            format!("exponent={}", self.dcs.exponent),
            format!("constant_ms={}", self.dcs.constant_ns as f64 / 1e6),
            format!("quantum_us={}", self.quantum_ns / 1000),
            format!("slack_ppm={}", self.budget.slack_ppm),
            format!("burst_ms={}", self.budget.burst_ns as f64 / 1e6),
            format!("floor_ms={}", self.budget.floor_ns as f64 / 1e6),
            format!("demote_ms={}", self.budget.demote_ns as f64 / 1e6),
            format!("resume_ms={}", self.budget.resume_ns as f64 / 1e6),
            format!("demote={}", self.demote),
            format!("tick_ms={}", self.tick_ns as f64 / 1e6),
            format!(
                "watch_hold_ms={}",
                self.watch_hold_ns.map_or(0.0, |h| h as f64 / 1e6)
            ),
            format!("agent_prio={}", self.agent_prio),
            format!("log_actions={}", self.log_actions),
        ]
    }
}

/// The kernel tick, from `CONFIG_HZ` in `/boot/config-$(uname -r)`; 4 ms (HZ=250) when unreadable.
pub fn kernel_tick_ns() -> Nanos {
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::read_to_string(format!("/boot/config-{release}"))
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.trim().parse::<u64>().ok())
        })
        .filter(|hz| *hz > 0)
        .map(|hz| 1_000_000_000 / hz)
        .unwrap_or(4_000_000)
}

/// CLOCK_MONOTONIC in ns, the clock of `bpf_ktime_get_ns`.
pub fn now_ns() -> Nanos {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Normal,
    Boosted {
        until: Nanos,
        since: Nanos,
        ext: Nanos,
    },
    /// Nice 19: overdrawn (paying back) or parked (spin-waiting for a peer that stopped answering).
    Demoted,
}

struct Thread {
    target: Target,
    mode: Mode,
    orig: SchedAttr,
    slot: Option<SlotId>,
}

struct Process {
    tgid: u32,
    job: u64,
    pidfd: OwnedFd,
    tp: Option<Nanos>,
    budget: Budget,
    last_r: u32,
    r_sum: u64,
    r_count: u64,
    registered_ns: Nanos,
    cpu_at_start_ticks: u64,
    /// The CPU time the budget was last charged with (BPF's kernel-booked runtime, ns), kept for the job's
    /// statistics after the process is gone.
    booked_ns: Nanos,
}

impl Process {
    /// Brings the budget up to `now` with the process's CPU time `cpu` (ns since it became managed).
    fn charge(&mut self, now: Nanos, cpu: Nanos) {
        self.booked_ns = cpu;
        self.budget.update(now, cpu, self.last_r);
    }
}

struct Job {
    id: u64,
    name: String,
    root: u32,
    registered_ns: Nanos,
    ended_ns: Option<Nanos>,
    /// CPU seconds and per-process shares of processes that already ended.
    done_cpu_s: f64,
    /// The same, as the budget charged it.
    done_booked_s: f64,
    done_shares: Vec<(f64, f64)>,
    counters: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    granted: u64,
    extended: u64,
    refused_dcs: u64,
    refused_budget: u64,
    demotions: u64,
}

const TOK_RING: u64 = 1;
const TOK_TIMER: u64 = 2;
const TOK_TICK: u64 = 3;
const TOK_SIGNAL: u64 = 4;
const TOK_LISTEN: u64 = 5;
const TOK_GUARD: u64 = 6;
const TOK_PROC: u64 = 1 << 32;
/// Control connections waiting for their request line: `TOK_CONN + n`, above every `TOK_PROC + tgid`.
const TOK_CONN: u64 = 1 << 33;
/// A connection that has not sent its request line within this long is dropped.
const CONN_PATIENCE: Duration = Duration::from_secs(5);
/// The most connections kept waiting at once (the oldest goes first).
const MAX_PENDING_CONNS: usize = 64;

/// The running agent.
pub struct Agent {
    cfg: Config,
    obs: Observer,
    guardian: Guardian,
    /// Kept open: epoll watches it (the guardian died when it turns readable).
    _guardian_fd: OwnedFd,
    epoll: Epoll,
    timer: TimerFd,
    tick: TimerFd,
    signals: SignalFd,
    listener: UnixListener,
    /// Accepted control connections whose request line has not fully arrived: read as it comes, so that a
    /// slow client (kept off its CPU by the very load the agent steers) never stalls the event loop.
    conns: BTreeMap<u64, PendingConn>,
    next_conn: u64,
    threads: HashMap<u32, Thread>,
    procs: HashMap<u32, Process>,
    jobs: BTreeMap<u64, Job>,
    next_job: u64,
    boosted: usize,
    started_ns: Nanos,
    counters: Counters,
    events: u64,
    refused_gone: u64,
    not_needed: u64,
    boost_errors: u64,
    restores: u64,
    /// Times the watch gate was closed (see `update_gate`).
    watch_closes: u64,
    decision_hist: Vec<u64>,
    wakeup_hist: Vec<u64>,
    last_error: Option<String>,
    scratch: Vec<Event>,
    tick_armed: bool,
    /// The deadline the boost timer is armed for (`None`: disarmed or fired).
    timer_armed: Option<Nanos>,
    /// A boost window changed since the timer was last armed: re-arm once the current batch of events is done.
    timer_stale: bool,
}

/// Checks what the agent needs before it changes anything.
pub fn preflight() -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        anyhow::bail!(
            "cosched agent must run as root (it loads BPF programs and sets SCHED_FIFO on other users' \
             processes); run it with sudo"
        );
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        anyhow::bail!("this kernel has no BTF (/sys/kernel/btf/vmlinux); the agent needs CONFIG_DEBUG_INFO_BTF=y");
    }
    Ok(())
}

impl Agent {
    /// Starts the guardian, loads BPF, opens the socket. Nothing is boosted yet.
    pub fn start(cfg: Config) -> anyhow::Result<Agent> {
        preflight()?;
        cfg.dcs.validate()?;
        cfg.budget.validate()?;
        // Block the signals we handle before anything else, so the guardian (forked next) inherits the mask
        // harmlessly (it ignores them) and the agent reads them through a signalfd.
        let mut mask = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block()?;
        let guardian = Guardian::start()?;
        let guardian_fd = sched::pidfd_open(guardian.pid(), 0).map_err(|e| {
            anyhow::anyhow!("pidfd_open of the guardian failed: {e} (the agent needs Linux 5.3+)")
        })?;
        let obs = Observer::load(BpfOptions {
            grace_ns: cfg.grace_ns,
            renotify_ns: cfg.renotify_ns,
        })?;

        if let Some(dir) = cfg.socket.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                anyhow::anyhow!("cannot create the socket directory {}: {e}", dir.display())
            })?;
            if dir.starts_with("/run/cosched") {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
        if UnixStream::connect(&cfg.socket).is_ok() {
            anyhow::bail!(
                "another agent already answers at {}; stop it first or pass a different --socket",
                cfg.socket.display()
            );
        }
        let _ = std::fs::remove_file(&cfg.socket);
        // SAFETY: umask only affects file creation of this process; set so the socket is born 0600.
        let old = unsafe { libc::umask(0o177) };
        let listener = UnixListener::bind(&cfg.socket);
        // SAFETY: restore the previous mask.
        unsafe { libc::umask(old) };
        let listener = listener
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", cfg.socket.display()))?;
        listener.set_nonblocking(true)?;

        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        let tick = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
        epoll.add(
            obs.ring_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_RING),
        )?;
        epoll.add(
            timer.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_TIMER),
        )?;
        epoll.add(tick.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, TOK_TICK))?;
        epoll.add(
            signals.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_SIGNAL),
        )?;
        epoll.add(
            listener.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_LISTEN),
        )?;
        epoll.add(
            guardian_fd.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_GUARD),
        )?;

        let mut obs = obs;
        if cfg.watch_hold_ns.is_none() {
            obs.set_watching(true);
        } else {
            // The gate starts closed (no job yet): the message hooks wait for its first opening.
            obs.set_message_hooks(false)?;
        }
        if cfg.agent_prio > 0 {
            let me = nix::unistd::gettid().as_raw() as u32;
            sched::set_attr(me, &SchedAttr::fifo(cfg.agent_prio))?;
        }
        Ok(Agent {
            cfg,
            obs,
            guardian,
            _guardian_fd: guardian_fd,
            epoll,
            timer,
            tick,
            signals,
            listener,
            conns: BTreeMap::new(),
            next_conn: 0,
            threads: HashMap::new(),
            procs: HashMap::new(),
            jobs: BTreeMap::new(),
            next_job: 1,
            boosted: 0,
            started_ns: now_ns(),
            counters: Counters::default(),
            events: 0,
            refused_gone: 0,
            not_needed: 0,
            boost_errors: 0,
            restores: 0,
            watch_closes: 0,
            decision_hist: vec![0; intf::COSCHED_HIST_BUCKETS as usize],
            wakeup_hist: vec![0; intf::COSCHED_HIST_BUCKETS as usize],
            last_error: None,
            scratch: Vec::with_capacity(256),
            tick_armed: false,
            timer_armed: None,
            timer_stale: false,
        })
    }

    /// The guardian's pid (tests).
    pub fn guardian_pid(&self) -> u32 {
        self.guardian.pid()
    }

    /// Runs until SIGINT/SIGTERM/SIGHUP (or `run_for`), then restores every task it changed.
    pub fn run(mut self) -> anyhow::Result<()> {
        let deadline = self.cfg.run_for.map(|d| now_ns() + d.as_nanos() as u64);
        let result = self.event_loop(deadline);
        self.restore_everything();
        let _ = std::fs::remove_file(&self.cfg.socket);
        result
    }

    fn event_loop(&mut self, deadline: Option<Nanos>) -> anyhow::Result<()> {
        let mut evs = [EpollEvent::empty(); 64];
        loop {
            let timeout = match deadline {
                Some(d) => {
                    let now = now_ns();
                    if now >= d {
                        return Ok(());
                    }
                    EpollTimeout::try_from(
                        Duration::from_nanos(d - now).min(Duration::from_secs(1)),
                    )
                    .unwrap_or(EpollTimeout::NONE)
                }
                None => EpollTimeout::NONE,
            };
            let n = match self.epoll.wait(&mut evs, timeout) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            for ev in &evs[..n] {
                match ev.data() {
                    TOK_RING => self.on_ring()?,
                    TOK_TIMER => {
                        let _ = self.timer.wait();
                        self.timer_armed = None;
                        self.on_timer();
                    }
                    TOK_TICK => {
                        let _ = self.tick.wait();
                        self.on_tick();
                    }
                    TOK_SIGNAL => {
                        if let Ok(Some(sig)) = self.signals.read_signal() {
                            eprintln!(
                                "cosched agent: signal {}, restoring and exiting",
                                sig.ssi_signo
                            );
                            return Ok(());
                        }
                    }
                    TOK_LISTEN => self.on_listen(),
                    TOK_GUARD => {
                        anyhow::bail!(
                            "the guardian process (pid {}) died; stopping so that no boost outlives a guard",
                            self.guardian.pid()
                        )
                    }
                    t if t >= TOK_CONN => self.on_conn(t),
                    t if t >= TOK_PROC => self.on_proc_exit((t - TOK_PROC) as u32),
                    _ => {}
                }
            }
            if self.timer_stale {
                self.arm_timer();
            }
        }
    }

    fn on_ring(&mut self) -> anyhow::Result<()> {
        let mut events = std::mem::take(&mut self.scratch);
        self.obs.drain(&mut events)?;
        let now = now_ns();
        for e in events
            .iter()
            .filter(|e| u64::from(e.kind) == intf::COSCHED_EV_ARRIVAL)
        {
            let b = Latency::bucket(now.saturating_sub(e.time_ns) / 1000, self.wakeup_hist.len());
            self.wakeup_hist[b] += 1;
        }
        for e in events.drain(..) {
            self.events += 1;
            match u64::from(e.kind) {
                intf::COSCHED_EV_ARRIVAL => self.on_arrival(&e),
                intf::COSCHED_EV_FORK => self.on_fork(&e),
                intf::COSCHED_EV_EXIT => self.on_thread_exit(e.tid),
                intf::COSCHED_EV_WATCH => self.attach_message_hooks(),
                _ => {}
            }
        }
        self.scratch = events;
        Ok(())
    }

    fn on_arrival(&mut self, e: &Event) {
        let now = now_ns();
        let tid = e.tid;
        if !self.threads.contains_key(&tid) && !self.adopt_thread(e.tgid, tid) {
            return;
        }
        let r = e.nr_running.max(1);
        let window = self.cfg.boost_ns;
        let mode = self.threads[&tid].mode;
        let Some(p) = self.procs.get_mut(&e.tgid) else {
            return;
        };
        p.last_r = r;
        p.r_sum += u64::from(r);
        p.r_count += 1;
        if let Mode::Boosted { until, since, ext } = mode {
            // Boosted yet off-CPU beyond grace: the window is still ours; push its end.
            let t = self.threads.get_mut(&tid).unwrap();
            t.mode = Mode::Boosted {
                until: until.max(now + window),
                since,
                ext,
            };
            return;
        }
        if self
            .obs
            .task(tid)
            .is_some_and(|t| t.pending == 0 || t.on_cpu != 0)
        {
            // The receiver got its CPU by itself while the event travelled (a woken receiver usually preempts
            // at once; a preempted one gets it back at once when what preempted it was short, a kernel thread
            // or the agent itself): a boost now would only start a burst the kernel's own scheduling did not
            // need.
            self.not_needed += 1;
            return;
        }
        if r <= 1 {
            // Nobody else wants this CPU at the receiver's level: it runs as soon as it can without help, and a
            // boost would only meet the RT throttle (950 ms/s) later.
            self.not_needed += 1;
            return;
        }
        let inputs = DcsInputs {
            now,
            previous_boost: p.tp,
            min_quantum: self.cfg.quantum_ns,
            run_queue_len: r,
        };
        let decision = dcs::decide(&self.cfg.dcs, false, &inputs);
        if decision != DcsDecision::Boost {
            let (tgid, job) = (p.tgid, p.job);
            self.counters.refused_dcs += 1;
            bump(&mut self.jobs, job, |c| c.refused_dcs += 1);
            self.log(tgid, tid, "refuse-dcs");
            return;
        }
        p.tp = Some(now);
        // The budget as of the last fairness-monitor tick (at most --tick-ms old): updating it here would put
        // two map lookups on every reaction's path.
        if !p.budget.may_boost() {
            let (tgid, job) = (p.tgid, p.job);
            self.counters.refused_budget += 1;
            bump(&mut self.jobs, job, |c| c.refused_budget += 1);
            self.log(tgid, tid, "refuse-budget");
            return;
        }
        let (job, tgid) = (p.job, p.tgid);
        if self.boost(tid, now, now + window) {
            self.log(tgid, tid, "boost");
            self.counters.granted += 1;
            bump(&mut self.jobs, job, |c| c.granted += 1);
            let done = now_ns();
            let us = done.saturating_sub(e.time_ns) / 1000;
            let b = Latency::bucket(us, self.decision_hist.len());
            self.decision_hist[b] += 1;
        }
    }

    /// Applies DCS (the budget is known to allow it) and boosts.
    fn boost_if_fair(&mut self, tgid: u32, tid: u32, now: Nanos, what: &str) {
        let Some(p) = self.procs.get_mut(&tgid) else {
            return;
        };
        let inputs = DcsInputs {
            now,
            previous_boost: p.tp,
            min_quantum: self.cfg.quantum_ns,
            run_queue_len: p.last_r,
        };
        if dcs::decide(&self.cfg.dcs, false, &inputs) != DcsDecision::Boost {
            return;
        }
        p.tp = Some(now);
        let job = p.job;
        self.obs.kicked(tid, now);
        if self.boost(tid, now, now + self.cfg.boost_ns) {
            self.counters.granted += 1;
            bump(&mut self.jobs, job, |c| c.granted += 1);
            self.log(tgid, tid, what);
        }
    }

    /// Boosts a thread (Normal → Boosted). Returns whether it happened.
    fn boost(&mut self, tid: u32, now: Nanos, until: Nanos) -> bool {
        let Some(t) = self.threads.get_mut(&tid) else {
            return false;
        };
        // The thread's own attributes, read when the agent adopted it and kept since (the agent is the only one
        // that changes them while it is managed; reading them here would add a syscall to every reaction).
        let prior = t.orig;
        if prior.is_realtime() || prior.sched_policy == sched::SCHED_DEADLINE {
            // Real-time by its own choice: nothing to add, and never lower it.
            return false;
        }
        let set = SchedAttr::fifo(self.cfg.rt_prio);
        // A demoted thread already has its guardian slot (holding nice 19): the slot now records the boost.
        let demoted = matches!(t.mode, Mode::Demoted);
        let slot = match t.slot {
            Some(slot) => {
                self.guardian.update(slot, &set);
                slot
            }
            None => {
                match self
                    .guardian
                    .record(t.target.tgid, tid, t.target.start_time, &set, &prior)
                {
                    Some(slot) => slot,
                    None => {
                        self.last_error = Some("guardian table full; boost skipped".into());
                        return false;
                    }
                }
            }
        };
        match t.target.set(&set, &prior) {
            Ok(()) => {
                t.orig = prior;
                t.slot = Some(slot);
                t.mode = Mode::Boosted {
                    until,
                    since: now,
                    ext: self.cfg.boost_ns,
                };
                self.boosted += 1;
                // Armed after the batch of events (a timer syscall here would delay the boosted receiver
                // whenever the agent shares its CPU).
                self.timer_stale = true;
                if self
                    .cfg
                    .panic_after_boosts
                    .is_some_and(|n| self.counters.granted + 1 >= n)
                {
                    panic!("--panic-after-boosts: injected panic with tid {tid} boosted");
                }
                true
            }
            Err(err) => {
                if demoted {
                    // Still at nice 19: the slot goes back to saying so.
                    self.guardian.update(slot, &demoted_attr(&prior));
                } else {
                    self.guardian.release(slot);
                    t.slot = None;
                }
                self.fail(err);
                false
            }
        }
    }

    fn fail(&mut self, err: SchedError) {
        match err {
            SchedError::Gone { .. } => self.refused_gone += 1,
            other => {
                self.boost_errors += 1;
                self.last_error = Some(other.to_string());
            }
        }
    }

    /// Puts a thread back to its original attributes (from Boosted or Demoted).
    fn restore(&mut self, tid: u32) {
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        if t.mode == Mode::Normal {
            return;
        }
        if matches!(t.mode, Mode::Boosted { .. }) {
            self.boosted -= 1;
        }
        let res = t.target.set(&t.orig.restorable(), &t.orig);
        t.mode = Mode::Normal;
        if let Some(slot) = t.slot.take() {
            self.guardian.release(slot);
        }
        self.restores += 1;
        if let Err(err) = res {
            self.fail(err);
        }
    }

    /// Demotes one thread to nice 19 (from Normal or Boosted).
    fn demote_thread(&mut self, tid: u32) {
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        let prior = match t.mode {
            Mode::Demoted => return,
            Mode::Normal if !t.orig.is_realtime() && t.orig.sched_policy <= sched::SCHED_BATCH => {
                t.orig
            }
            Mode::Normal => return,
            Mode::Boosted { .. } => t.orig,
        };
        let set = demoted_attr(&prior);
        let slot = match t.slot {
            Some(s) => {
                self.guardian.update(s, &set);
                s
            }
            None => {
                match self
                    .guardian
                    .record(t.target.tgid, tid, t.target.start_time, &set, &prior)
                {
                    Some(s) => s,
                    None => return,
                }
            }
        };
        if matches!(t.mode, Mode::Boosted { .. }) {
            self.boosted -= 1;
        }
        match t.target.set(&set, &prior) {
            Ok(()) => {
                t.orig = prior;
                t.slot = Some(slot);
                t.mode = Mode::Demoted;
            }
            Err(err) => {
                self.guardian.release(slot);
                t.slot = None;
                t.mode = Mode::Normal;
                self.fail(err);
            }
        }
    }

    fn on_timer(&mut self) {
        let now = now_ns();
        let window = self.cfg.boost_ns;
        // Windows ending within TIMER_COALESCE_NS are decided now, together: the ranks of a coscheduled job
        // then share one deadline (each is extended from this same `now`), and the agent, which preempts a rank
        // whenever it wakes, wakes once for all of them instead of once each.
        let due: Vec<u32> = self
            .threads
            .iter()
            .filter_map(|(&tid, t)| match t.mode {
                Mode::Boosted { until, .. } if until <= now + TIMER_COALESCE_NS => Some(tid),
                _ => None,
            })
            .collect();
        for tid in due {
            let (tgid, since, ext) = match self.threads[&tid].mode {
                Mode::Boosted { since, ext, .. } => (self.threads[&tid].target.tgid, since, ext),
                _ => continue,
            };
            let task = self.obs.task(tid).unwrap_or_default();
            let (may, over, job): (bool, bool, u64) = match self.procs.get_mut(&tgid) {
                Some(p) => {
                    if task.rq_len > 0 {
                        p.last_r = task.rq_len;
                    }
                    let cpu = cpu_of(&self.obs, &self.threads, tgid, now).unwrap_or(0);
                    p.charge(now, cpu);
                    (p.budget.may_boost(), p.budget.overdrawn(), p.job)
                }
                None => (false, false, 0),
            };
            let last_arrival = task.last_arrival_ns;
            let contested = task.rq_len == 0 || task.rq_len > 1;
            if may && contested && last_arrival > since && last_arrival + window > now {
                // Arrivals keep coming: extend, doubling the step up to --max-extend-us so that a long
                // exchange costs the agent a few wake-ups, not one per window.
                let ext = (ext * 2).min(self.cfg.max_extend_ns).max(window);
                let t = self.threads.get_mut(&tid).unwrap();
                t.mode = Mode::Boosted {
                    until: now + ext,
                    since,
                    ext,
                };
                self.counters.extended += 1;
                bump(&mut self.jobs, job, |c| c.extended += 1);
                self.log(tgid, tid, "extend");
            } else if self.cfg.demote && (over || !may) {
                // The boost ended because the budget ran out: yield now and pay back, so that the job's next
                // coscheduled burst is paid for by time it does not run, not by its competitors' share.
                self.demote_process(tgid);
            } else if self.cfg.demote && contested && spin_waiting(&task, now) {
                // Its peer stopped answering (off its CPU: out of budget, or preempted). Spinning on in CFS
                // would spend this process's share while nothing can arrive, and leave the two sides' budgets
                // out of step; park it at nice 19 until the next arrival boosts it.
                self.log(tgid, tid, "park");
                self.demote_process(tgid);
            } else {
                self.log(tgid, tid, "restore");
                self.restore(tid);
            }
        }
        self.arm_timer();
    }

    fn demote_process(&mut self, tgid: u32) {
        self.log(tgid, tgid, "demote");
        let tids: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, t)| t.target.tgid == tgid)
            .map(|(&k, _)| k)
            .collect();
        let mut any = false;
        for tid in tids {
            if !matches!(self.threads[&tid].mode, Mode::Demoted) {
                self.demote_thread(tid);
                any |= self
                    .threads
                    .get(&tid)
                    .is_some_and(|t| matches!(t.mode, Mode::Demoted));
            }
        }
        if any {
            self.counters.demotions += 1;
            if let Some(p) = self.procs.get(&tgid) {
                bump(&mut self.jobs, p.job, |c| c.demotions += 1);
            }
        }
    }

    fn arm_timer(&mut self) {
        self.timer_stale = false;
        let next = self
            .threads
            .values()
            .filter_map(|t| match t.mode {
                Mode::Boosted { until, .. } => Some(until),
                _ => None,
            })
            .min();
        if next == self.timer_armed {
            return;
        }
        self.timer_armed = next;
        let res = match next {
            Some(at) => self.timer.set(
                Expiration::OneShot(TimeSpec::from_duration(Duration::from_nanos(at.max(1)))),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            ),
            None => self.timer.unset(),
        };
        if let Err(e) = res {
            self.last_error = Some(format!("timerfd: {e}"));
        }
    }

    fn on_tick(&mut self) {
        let now = now_ns();
        self.update_gate(now);
        let tgids: Vec<u32> = self.procs.keys().copied().collect();
        for tgid in tgids {
            let Some((cpu, r)) = sample(&self.obs, &self.threads, tgid, now) else {
                continue;
            };
            let p = self.procs.get_mut(&tgid).unwrap();
            if let Some(r) = r {
                p.last_r = r;
            }
            p.charge(now, cpu);
            let (over, repaid) = (p.budget.overdrawn(), p.budget.repaid());
            if !self.cfg.demote {
                continue;
            }
            let demoted: Vec<u32> = self
                .threads
                .iter()
                .filter(|(_, t)| t.mode == Mode::Demoted && t.target.tgid == tgid)
                .map(|(&k, _)| k)
                .collect();
            let contested = p.last_r > 1;
            if repaid || !contested {
                for tid in demoted {
                    let task = self.obs.task(tid).unwrap_or_default();
                    if !contested {
                        // Nobody left to yield to.
                        self.log(tgid, tid, "restore-alone");
                        self.restore(tid);
                    } else if has_unread(&task) && task.on_cpu == 0 {
                        // A peer sent while this thread was demoted and waits for the reply: start the next
                        // coscheduled burst now instead of waiting for the next flagged arrival.
                        self.boost_if_fair(tgid, tid, now, "boost-repaid");
                    } else if !spin_waiting(&task, now) {
                        // Computing (or blocked): its share is its own to use.
                        self.log(tgid, tid, "repaid");
                        self.restore(tid);
                    }
                    // Else it spins for a message that has not come: stay parked; an arrival boosts it.
                }
            } else if over {
                let boosted_now = self
                    .threads
                    .values()
                    .any(|t| t.target.tgid == tgid && matches!(t.mode, Mode::Boosted { .. }));
                if !boosted_now {
                    self.demote_process(tgid);
                }
            }
        }
    }

    /// Closes the BPF watch gate once no managed thread has shared its CPU for `--watch-hold-ms` (BPF opens it
    /// again the moment one does), or when no job is left. Never while a thread is boosted or demoted: those wait
    /// for arrivals or for the tick, which reads what the message hooks write.
    fn update_gate(&mut self, now: Nanos) {
        let Some(hold) = self.cfg.watch_hold_ns else {
            return;
        };
        let gate = self.obs.gate();
        if gate.watching == 0 {
            return;
        }
        let idle = self.procs.is_empty() || now.saturating_sub(gate.contended_ns) > hold;
        let steering = self.threads.values().any(|t| t.mode != Mode::Normal);
        if idle && !steering {
            self.obs.set_watching(false);
            let _ = self.obs.set_message_hooks(false);
            self.watch_closes += 1;
            self.log(0, 0, "unwatch");
        } else {
            // Open, and the event that said so was lost (ring buffer full): attach now.
            self.attach_message_hooks();
        }
    }

    /// The gate is open: the message hooks must run. A failure is kept as the last error and retried at the
    /// next tick; the gate stays open, so nothing is decided on stale state.
    fn attach_message_hooks(&mut self) {
        if self.obs.message_hooks_attached() {
            return;
        }
        match self.obs.set_message_hooks(true) {
            Ok(()) => self.log(0, 0, "watch"),
            Err(e) => self.last_error = Some(e.to_string()),
        }
    }

    /// `--log-actions`: one line per action, prefixed with the agent's uptime and the job and process.
    fn log(&self, tgid: u32, tid: u32, what: &str) {
        if !self.cfg.log_actions {
            return;
        }
        let now = now_ns();
        let (job, r, tokens) = self
            .procs
            .get(&tgid)
            .map(|p| (p.job, p.last_r, p.budget.tokens()))
            .unwrap_or((0, 0, 0));
        eprintln!(
            "[{:>12.6}] (job{job}:pid{tgid}) {what} tid={tid} R={r} tokens_ms={:.3}",
            (now - self.started_ns) as f64 / 1e9,
            tokens as f64 / 1e6
        );
    }

    fn arm_tick(&mut self) {
        let want = !self.procs.is_empty();
        if want == self.tick_armed {
            return;
        }
        let res = if want {
            let d = TimeSpec::from_duration(Duration::from_nanos(self.cfg.tick_ns));
            self.tick
                .set(Expiration::Interval(d), TimerSetTimeFlags::empty())
        } else {
            self.tick.unset()
        };
        match res {
            Ok(()) => self.tick_armed = want,
            Err(e) => self.last_error = Some(format!("tick timerfd: {e}")),
        }
    }

    /// A thread the BPF side manages but the agent has not met (a thread that existed at registration, or
    /// whose fork event was lost): open its pidfd, then check BPF still has it — entries vanish at exit and
    /// are only created for tasks of managed processes, so a present entry proves the pidfd is the right task.
    fn adopt_thread(&mut self, tgid: u32, tid: u32) -> bool {
        if !self.procs.contains_key(&tgid) {
            return false;
        }
        let Ok(target) = Target::open(tgid, tid) else {
            self.obs.remove_task(tid);
            return false;
        };
        if self.obs.task(tid).is_none_or(|t| t.tgid != tgid) {
            return false;
        }
        let Ok(orig) = target.get() else { return false };
        self.threads.insert(
            tid,
            Thread {
                target,
                mode: Mode::Normal,
                orig,
                slot: None,
            },
        );
        true
    }

    fn on_fork(&mut self, e: &Event) {
        let (tid, tgid) = (e.tid, e.tgid);
        if tid == tgid && !self.procs.contains_key(&tgid) {
            // A new process of a managed job.
            let Ok(pidfd) = sched::pidfd_open(tgid, 0) else {
                self.obs.remove_task(tid);
                self.obs.remove_proc(tgid);
                return;
            };
            if self.obs.task(tid).is_none_or(|t| t.tgid != tgid) {
                return; // exited before we looked; the pidfd may name a stranger
            }
            if self.add_process(tgid, e.job, pidfd).is_err() {
                return;
            }
        }
        if !self.adopt_thread(tgid, tid) {
            return;
        }
        // A child of a demoted parent inherited nice 19 (a boosted parent's child starts in SCHED_OTHER with the
        // parent's own nice, thanks to reset-on-fork): give it the parent's original attributes.
        let parent = e.cpu;
        let Some(porig) = self.threads.get(&parent).and_then(|p| match p.mode {
            Mode::Demoted => Some(p.orig),
            _ => None,
        }) else {
            return;
        };
        if let Some(child) = self.threads.get_mut(&tid) {
            let inherited = child.orig;
            child.orig = porig;
            if inherited.sched_nice != porig.sched_nice {
                if let Err(err) = child.target.set(&porig.restorable(), &inherited) {
                    self.fail(err);
                }
            }
        }
    }

    fn add_process(&mut self, tgid: u32, job: u64, pidfd: OwnedFd) -> anyhow::Result<()> {
        self.epoll.add(
            pidfd.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_PROC + u64::from(tgid)),
        )?;
        let now = now_ns();
        let cpu = cpu_of(&self.obs, &self.threads, tgid, now).unwrap_or(0);
        self.procs.insert(
            tgid,
            Process {
                tgid,
                job,
                pidfd,
                tp: None,
                budget: Budget::new(self.cfg.budget, now, cpu),
                last_r: 1,
                r_sum: 0,
                r_count: 0,
                registered_ns: now,
                cpu_at_start_ticks: proc_cpu_ticks(tgid).unwrap_or(0),
                booked_ns: cpu,
            },
        );
        self.arm_tick();
        Ok(())
    }

    fn on_thread_exit(&mut self, tid: u32) {
        if let Some(t) = self.threads.remove(&tid) {
            if matches!(t.mode, Mode::Boosted { .. }) {
                self.boosted -= 1;
            }
            if let Some(slot) = t.slot {
                self.guardian.release(slot);
            }
        }
        self.obs.remove_task(tid);
    }

    fn on_proc_exit(&mut self, tgid: u32) {
        let Some(p) = self.procs.remove(&tgid) else {
            return;
        };
        let _ = self.epoll.delete(p.pidfd.as_fd());
        let tids: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, t)| t.target.tgid == tgid)
            .map(|(&k, _)| k)
            .collect();
        for tid in tids {
            self.on_thread_exit(tid);
        }
        self.obs.remove_proc(tgid);
        let now = now_ns();
        // The process is a zombie or gone: its final CPU time is readable while it is a zombie.
        let cpu_s = proc_cpu_ticks(tgid)
            .map(|t| t.saturating_sub(p.cpu_at_start_ticks))
            .unwrap_or(0) as f64
            / ticks_per_s();
        let wall = (now - p.registered_ns) as f64 / 1e9;
        let n = if p.r_count > 0 {
            p.r_sum as f64 / p.r_count as f64
        } else {
            1.0
        };
        if let Some(j) = self.jobs.get_mut(&p.job) {
            j.done_cpu_s += cpu_s;
            j.done_booked_s += p.booked_ns as f64 / 1e9;
            if wall > 0.0 {
                j.done_shares.push((cpu_s / wall, n * cpu_s / wall));
            }
            if !self.procs.values().any(|q| q.job == p.job) {
                j.ended_ns = Some(now);
            }
        }
        self.arm_tick();
        self.update_gate(now);
    }

    fn on_listen(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Err(e) = self.accept_conn(stream) {
                        self.last_error = Some(format!("control socket: {e}"));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    self.last_error = Some(format!("accept: {e}"));
                    return;
                }
            }
        }
    }

    /// Checks the peer (root only) and waits for its request line without blocking.
    fn accept_conn(&mut self, stream: UnixStream) -> anyhow::Result<()> {
        let cred =
            nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)?;
        if cred.uid() != 0 {
            return reply_to(
                stream,
                &Reply::Error {
                    message: format!("only root may talk to the agent (peer uid {})", cred.uid()),
                },
            );
        }
        let now = std::time::Instant::now();
        let stale: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| now.duration_since(c.since) > CONN_PATIENCE)
            .map(|(&t, _)| t)
            .chain(
                self.conns
                    .keys()
                    .copied()
                    .take((self.conns.len() + 1).saturating_sub(MAX_PENDING_CONNS)),
            )
            .collect();
        for token in stale {
            self.drop_conn(token);
        }
        stream.set_nonblocking(true)?;
        let token = TOK_CONN + self.next_conn;
        self.next_conn += 1;
        self.epoll
            .add(&stream, EpollEvent::new(EpollFlags::EPOLLIN, token))?;
        self.conns.insert(
            token,
            PendingConn {
                stream,
                line: Vec::new(),
                since: now,
            },
        );
        Ok(())
    }

    fn drop_conn(&mut self, token: u64) {
        if let Some(c) = self.conns.remove(&token) {
            let _ = self.epoll.delete(&c.stream);
        }
    }

    /// More of a request line arrived (or the client hung up): answer once the line is whole.
    fn on_conn(&mut self, token: u64) {
        use std::io::Read;
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        let mut buf = [0u8; 4096];
        let complete = loop {
            match conn.stream.read(&mut buf) {
                Ok(0) => break None, // hung up before a whole line
                Ok(n) => {
                    conn.line.extend_from_slice(&buf[..n]);
                    if let Some(end) = conn.line.iter().position(|&b| b == b'\n') {
                        break Some(conn.line[..end].to_vec());
                    }
                    if conn.line.len() > 64 * 1024 {
                        break None; // not a request of ours
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break None,
            }
        };
        let conn = self.conns.remove(&token).expect("looked up above");
        let _ = self.epoll.delete(&conn.stream);
        let Some(line) = complete else {
            return;
        };
        let line = String::from_utf8_lossy(&line).into_owned();
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(Request::Ping) => Reply::Pong {
                pid: std::process::id(),
            },
            Ok(Request::Stats) => Reply::Stats(Box::new(self.stats())),
            Ok(Request::Register { pid, name }) => match self.register(pid, name) {
                Ok(job) => Reply::Registered { job },
                Err(e) => Reply::Error {
                    message: format!("{e:#}"),
                },
            },
            Err(e) => Reply::Error {
                message: format!("bad request {line:?}: {e}"),
            },
        };
        if let Err(e) = reply_to(conn.stream, &reply) {
            self.last_error = Some(format!("control socket: {e}"));
        }
    }

    /// Manages `pid` and all its current threads (and, through BPF, every task it creates from now on).
    fn register(&mut self, pid: u32, name: String) -> anyhow::Result<u64> {
        let me = std::process::id();
        if pid <= 1 || pid == me || pid == self.guardian.pid() {
            anyhow::bail!("pid {pid} cannot be managed (init, the agent or its guardian)");
        }
        if self.procs.contains_key(&pid) {
            anyhow::bail!("pid {pid} is already managed");
        }
        let pidfd = sched::pidfd_open(pid, 0)
            .map_err(|e| anyhow::anyhow!("pid {pid} is not a live process (pidfd_open: {e})"))?;
        let job = self.next_job;
        self.next_job += 1;
        self.obs.add_proc(pid, job)?;
        let tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map_err(|e| anyhow::anyhow!("cannot list the threads of pid {pid}: {e}"))?
            .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        for &tid in &tids {
            self.obs.add_task(tid, pid)?;
        }
        // The pidfd was opened before the map entries; if the process died in between, drop it again.
        if !sched::pidfd_alive(&pidfd) {
            for &tid in &tids {
                self.obs.remove_task(tid);
            }
            self.obs.remove_proc(pid);
            anyhow::bail!("pid {pid} exited while being registered");
        }
        let now = now_ns();
        self.jobs.insert(
            job,
            Job {
                id: job,
                name,
                root: pid,
                registered_ns: now,
                ended_ns: None,
                done_cpu_s: 0.0,
                done_booked_s: 0.0,
                done_shares: Vec::new(),
                counters: Counters::default(),
            },
        );
        self.add_process(pid, job, pidfd)?;
        for tid in tids {
            self.adopt_thread(pid, tid);
        }
        // Keep the finished-jobs list bounded.
        while self.jobs.len() > 256 {
            let Some((&old, _)) = self.jobs.iter().find(|(_, j)| j.ended_ns.is_some()) else {
                break;
            };
            self.jobs.remove(&old);
        }
        Ok(job)
    }

    /// The live statistics.
    pub fn stats(&self) -> AgentStats {
        let now = now_ns();
        let uptime = (now - self.started_ns) as f64 / 1e9;
        let cpu = self_cpu_s();
        let s = self.obs.stats();
        let h = self.obs.histogram();
        let jobs = self
            .jobs
            .values()
            .map(|j| {
                let mut cpu_s = j.done_cpu_s;
                let mut booked_s = j.done_booked_s;
                let mut shares = j.done_shares.clone();
                let mut live_threads = 0;
                let mut live_processes = 0;
                for p in self.procs.values().filter(|p| p.job == j.id) {
                    live_processes += 1;
                    live_threads += self
                        .threads
                        .values()
                        .filter(|t| t.target.tgid == p.tgid)
                        .count();
                    let c = proc_cpu_ticks(p.tgid)
                        .unwrap_or(0)
                        .saturating_sub(p.cpu_at_start_ticks) as f64
                        / ticks_per_s();
                    let wall = (now - p.registered_ns) as f64 / 1e9;
                    let n = if p.r_count > 0 {
                        p.r_sum as f64 / p.r_count as f64
                    } else {
                        1.0
                    };
                    cpu_s += c;
                    booked_s += cpu_of(&self.obs, &self.threads, p.tgid, now).unwrap_or(p.booked_ns)
                        as f64
                        / 1e9;
                    if wall > 0.0 {
                        shares.push((c / wall, n * c / wall));
                    }
                }
                let k = shares.len().max(1) as f64;
                JobStats {
                    job: j.id,
                    name: j.name.clone(),
                    root_pid: j.root,
                    live_processes,
                    live_threads,
                    wall_s: (j.ended_ns.unwrap_or(now) - j.registered_ns) as f64 / 1e9,
                    cpu_s,
                    booked_cpu_s: booked_s,
                    cpu_share: shares.iter().map(|s| s.0).sum::<f64>() / k,
                    fairness: shares.iter().map(|s| s.1).sum::<f64>() / k,
                    boosts_granted: j.counters.granted,
                    boosts_extended: j.counters.extended,
                    refused_dcs: j.counters.refused_dcs,
                    refused_budget: j.counters.refused_budget,
                    demotions: j.counters.demotions,
                    finished: j.ended_ns.is_some(),
                }
            })
            .collect();
        AgentStats {
            agent_pid: std::process::id(),
            guardian_pid: self.guardian.pid(),
            uptime_s: uptime,
            agent_cpu_s: cpu,
            agent_cpu_fraction: if uptime > 0.0 { cpu / uptime } else { 0.0 },
            config: self.cfg.describe(),
            arrivals: s[intf::COSCHED_STAT_ARRIVALS as usize],
            flagged: s[intf::COSCHED_STAT_FLAGGED as usize],
            arrivals_on_cpu: s[intf::COSCHED_STAT_ON_CPU as usize],
            arrivals_recent: s[intf::COSCHED_STAT_RECENT as usize],
            arrivals_alone: s[intf::COSCHED_STAT_ALONE as usize],
            arrivals_boosted: s[intf::COSCHED_STAT_BOOSTED as usize],
            arrivals_pending: s[intf::COSCHED_STAT_PENDING as usize],
            ringbuf_drops: s[intf::COSCHED_STAT_RINGBUF_DROPS as usize],
            sock_misses: s[intf::COSCHED_STAT_SOCK_MISSES as usize],
            task_misses: s[intf::COSCHED_STAT_TASK_MISSES as usize],
            map_full: s[intf::COSCHED_STAT_MAP_FULL as usize],
            forks: s[intf::COSCHED_STAT_FORKS as usize],
            switches: s[intf::COSCHED_STAT_SWITCHES as usize],
            events: self.events,
            boosts_granted: self.counters.granted,
            boosts_extended: self.counters.extended,
            refused_dcs: self.counters.refused_dcs,
            refused_budget: self.counters.refused_budget,
            refused_gone: self.refused_gone,
            not_needed: self.not_needed,
            boost_errors: self.boost_errors,
            restores: self.restores,
            watching: self.obs.gate().watching != 0,
            message_hooks_attached: self.obs.message_hooks_attached(),
            watch_closes: self.watch_closes,
            demotions: self.counters.demotions,
            malformed_events: self.obs.malformed,
            boosted_now: self.boosted,
            reaction_boosted: Latency::from_log2(h[intf::COSCHED_HIST_BOOSTED as usize].clone()),
            reaction_unboosted: Latency::from_log2(
                h[intf::COSCHED_HIST_UNBOOSTED as usize].clone(),
            ),
            decision: Latency::from_log2(self.decision_hist.clone()),
            wakeup: Latency::from_log2(self.wakeup_hist.clone()),
            jobs,
            last_error: self.last_error.clone(),
        }
    }

    /// Restores every thread the agent changed (shutdown path; the guardian covers the others).
    fn restore_everything(&mut self) {
        let tids: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, t)| t.mode != Mode::Normal)
            .map(|(&k, _)| k)
            .collect();
        for tid in tids {
            self.restore(tid);
        }
    }
}

/// A process's CPU time while managed, ns: what BPF booked at its threads' switch-outs, plus the running part of
/// every thread on a CPU now (a thread that spins alone is never switched out, so its booked time lags).
/// A control connection whose request line is still arriving.
struct PendingConn {
    stream: UnixStream,
    line: Vec<u8>,
    since: std::time::Instant,
}

/// Writes one reply line. The client waits for it with an empty receive buffer, so a reply (a few kB of
/// statistics at most) fits at once; the timeout only bounds a client that stopped reading.
fn reply_to(stream: UnixStream, reply: &Reply) -> anyhow::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(crate::proto::SERVE_TIMEOUT))?;
    let mut out = serde_json::to_string(reply)?;
    out.push('\n');
    (&stream).write_all(out.as_bytes())?;
    Ok(())
}

/// What a demoted thread runs with: its own policy at nice 19.
fn demoted_attr(prior: &SchedAttr) -> SchedAttr {
    SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: prior.sched_policy,
        sched_flags: prior.sched_flags & sched::SCHED_FLAG_RESET_ON_FORK,
        sched_nice: 19,
        sched_runtime: prior.sched_runtime,
        ..Default::default()
    }
}

/// Boost windows ending this close together are decided at one timer wake-up (see `on_timer`).
const TIMER_COALESCE_NS: Nanos = 1_000_000;

/// How recently a thread must have polled an empty socket to count as spin-waiting for a message.
const POLL_RECENT_NS: Nanos = 2_000_000;

/// Whether a thread is spin-waiting for a message: its last receive found nothing, it polled within
/// [`POLL_RECENT_NS`] of its last moment on a CPU, and nothing has arrived since its last successful receive.
/// Such a thread's CPU time is wasted while its peer is off its CPU.
fn spin_waiting(task: &intf::Task, now: Nanos) -> bool {
    let last_on_cpu = if task.on_cpu != 0 {
        now
    } else {
        task.last_ran_ns
    };
    task.last_poll_ns > task.last_got_ns
        && task.last_poll_ns + POLL_RECENT_NS >= last_on_cpu
        && !has_unread(task)
}

/// Whether a message arrived for a thread after its last successful receive (it has something to read).
fn has_unread(task: &intf::Task) -> bool {
    task.last_arrival_ns > task.last_got_ns
}

fn cpu_of(obs: &Observer, threads: &HashMap<u32, Thread>, tgid: u32, now: Nanos) -> Option<Nanos> {
    sample(obs, threads, tgid, now).map(|(cpu, _)| cpu)
}

/// One look at a process in BPF (one lookup per thread): its CPU time as [`cpu_of`], and its current R, the
/// largest run-queue length its threads saw at their last switch-in or arrival (`None` if none seen yet).
fn sample(
    obs: &Observer,
    threads: &HashMap<u32, Thread>,
    tgid: u32,
    now: Nanos,
) -> Option<(Nanos, Option<u32>)> {
    let booked = obs.proc(tgid)?.runtime_ns;
    let mut running = 0;
    let mut r = None;
    for t in threads
        .iter()
        .filter(|(_, t)| t.target.tgid == tgid)
        .filter_map(|(&tid, _)| obs.task(tid))
    {
        if t.on_cpu != 0 {
            running += now.saturating_sub(t.switched_in_ns);
        }
        if t.rq_len > 0 {
            r = Some(r.unwrap_or(0).max(t.rq_len));
        }
    }
    Some((booked + running, r))
}

/// Bumps one counter of a job (a job already dropped from the list is simply not counted per job).
fn bump(jobs: &mut BTreeMap<u64, Job>, job: u64, f: impl FnOnce(&mut Counters)) {
    if let Some(j) = jobs.get_mut(&job) {
        f(&mut j.counters);
    }
}

/// utime + stime of a process in clock ticks (`/proc/<pid>/stat` fields 14 and 15).
fn proc_cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(sched::parse_stat_field(&s, 14)? + sched::parse_stat_field(&s, 15)?)
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The agent's own CPU time (this process; the guardian sleeps).
fn self_cpu_s() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}
