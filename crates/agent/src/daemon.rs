//! The agent's event loop: one thread, one epoll set — BPF's ring buffer, the boost timer, the policy's tick,
//! signals, the control socket, a pidfd per managed process and one for the guardian.
//!
//! The loop owns every file descriptor and the clock; what it reads becomes calls on the [`Engine`], which
//! hands them to the policy and carries out its actions ([`crate::engine`]). Besides, the loop registers jobs
//! (`cosched run`), follows processes in and out (BPF fork events, pidfds), serves statistics, and keeps the
//! BPF *watch gate*: the message hooks stay detached while no managed thread shares its CPU.
//!
//! ## Algorithm
//! ```text
//! loop: wait on epoll
//!     ring buffer: for each event: arrival → engine.on_arrival | fork → track | exit → engine.on_thread_exit
//!                  | gate opened → attach the message hooks, next tick in --tick-ms
//!     timer (earliest window end or policy deadline) → engine.on_timer
//!     tick (while any process is managed: --tick-ms while something is lowered or paused or the policy needs
//!         it, else --idle-tick-ms, or if shorter the self-check's epoch, the policy's, the watch hold while the
//!         gate is open, half the guardian's lease while a boost is live; the gate's opening brings the next
//!         tick in --tick-ms) → close the watch gate if no managed thread shared its CPU within --watch-hold-ms
//!         and none is boosted or niced; engine.on_tick
//!     pidfd of a process readable → it exited: engine.remove_process, job statistics
//!     control socket → register / stats / ping
//!     signal, run_for over → restore everything, remove the socket, exit; guardian died → the same, with an error
//! ```

use crate::actuator::SchedActuator;
use crate::bpf::{BpfOptions, Observer};
use crate::config::Config;
use crate::control::{self, Control};
use crate::engine::{self, Engine, Settings};
use crate::guardian::Guardian;
use crate::intf::{self, Event};
use crate::nudge::Nudgers;
use crate::policy::Policy;
use crate::proto::{AgentStats, Latency, Reply, Request, SelfCheckStats};
use crate::sched::{self, SchedAttr};
use crate::sockets::ReceivedBytes;
use crate::stats;
use crate::tracker;
use cosched_policy::selfcheck::{Mode, SelfCheck};
use cosched_policy::Nanos;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

/// CLOCK_MONOTONIC in ns, the clock of `bpf_ktime_get_ns`.
pub fn now_ns() -> Nanos {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
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
/// How long the loop blocks, after serving a local task that waits on the loop's own CPU, before it handles the
/// rest of its batch: the local task's switch-in takes 4-16 us once the loop blocks (bpftrace, K = 1).
const LOCAL_TURN_NS: u64 = 25_000;

/// The running agent.
pub struct Agent {
    cfg: Config,
    engine: Engine<SchedActuator, Observer>,
    guardian_pid: u32,
    /// Kept open: epoll watches it (the guardian died when it turns readable).
    _guardian_fd: OwnedFd,
    epoll: Epoll,
    timer: TimerFd,
    tick: TimerFd,
    signals: SignalFd,
    control: Control,
    /// A pidfd per managed process: readable when it exits.
    proc_fds: HashMap<u32, OwnedFd>,
    started_ns: Nanos,
    scratch: Vec<Event>,
    /// The tick's period as armed (`None`: disarmed).
    tick_period: Option<Nanos>,
    /// Boosts carried out when the tick was last armed: a new one while it runs at its idle period brings it
    /// back to `--tick-ms`.
    boosts_at_tick_arm: u64,
    /// The deadline the boost timer is armed for (`None`: disarmed or fired).
    timer_armed: Option<Nanos>,
    /// Whether coscheduling pays, measured (`None`: `--no-self-check`).
    self_check: Option<SelfCheck>,
    /// The self-check's measure of progress: the jobs' TCP bytes received.
    received: ReceivedBytes,
    /// When the self-check's running epoch began (`None`: no epoch runs — nothing is contended).
    epoch_started: Option<Nanos>,
    /// Each managed thread's sleeps after an empty poll at the last epoch's end (the self-check's "waits by
    /// blocking").
    blocks_seen: HashMap<u32, u64>,
    /// Nudgers for the CPUs where the fair class left a local task waiting (`--no-nudge-local`: none).
    nudgers: Option<Nudgers>,
}

/// A task's name for the action log (empty once it is gone).
fn comm_of(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_default()
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
    pub fn start(cfg: Config, policy: Box<dyn Policy>) -> anyhow::Result<Agent> {
        preflight()?;
        // Block the signals we handle before anything else, so the guardian (forked next) inherits the mask
        // harmlessly (it ignores them) and the agent reads them through a signalfd.
        let mut mask = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            mask.add(s);
        }
        mask.thread_block()?;
        // Boosts left by an earlier agent that died together with its guardian: nobody else restores them.
        for line in crate::guardian::sweep_stale() {
            eprintln!("cosched agent: {line}");
        }
        let guardian = Guardian::start(cfg.guardian_prio(), cfg.guard_lease_ms)?;
        let guardian_pid = guardian.pid();
        let guardian_fd = sched::pidfd_open(guardian_pid, 0).map_err(|e| {
            anyhow::anyhow!("pidfd_open of the guardian failed: {e} (the agent needs Linux 5.3+)")
        })?;
        let mut obs = Observer::load(BpfOptions {
            grace_ns: cfg.grace_ns,
            running_view_ns: cfg.running_view_ns,
            renotify_ns: cfg.renotify_ns,
            yield_to_local: cfg.yield_to_local,
            nudge_local: cfg.nudge_local,
        })?;
        // One nudger per online CPU, started now, before any boost can stand in their way (`nudge.rs`); at the
        // boosts' priority: a nudge preempts the fair class, never a boost (FIFO waits behind it).
        let nudgers = cfg.nudge_local.then(|| {
            Nudgers::start(
                cfg.rt_prio,
                &(0..crate::bpf::online_cpus()).collect::<Vec<_>>(),
            )
        });
        let control = Control::bind(&cfg.socket, TOK_CONN)?;

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
        let watch = |token| EpollEvent::new(EpollFlags::EPOLLIN, token);
        epoll.add(obs.ring_fd(), watch(TOK_RING))?;
        epoll.add(timer.as_fd(), watch(TOK_TIMER))?;
        epoll.add(tick.as_fd(), watch(TOK_TICK))?;
        epoll.add(signals.as_fd(), watch(TOK_SIGNAL))?;
        epoll.add(control.listener_fd(), watch(TOK_LISTEN))?;
        epoll.add(guardian_fd.as_fd(), watch(TOK_GUARD))?;

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
        let started_ns = now_ns();
        let settings = Settings {
            mechanism: cfg.mechanism,
            rt_prio: cfg.rt_prio,
            log_actions: cfg.log_actions,
            panic_after_boosts: cfg.panic_after_boosts,
            started_ns,
            yield_ns: cfg.yield_ns,
            stand_aside: false,
        };
        let engine = Engine::new(policy, SchedActuator::new(guardian), obs, settings, now_ns);
        let self_check = cfg.self_check.map(SelfCheck::new);
        Ok(Agent {
            cfg,
            engine,
            guardian_pid,
            _guardian_fd: guardian_fd,
            epoll,
            timer,
            tick,
            signals,
            control,
            proc_fds: HashMap::new(),
            started_ns,
            scratch: Vec::with_capacity(256),
            tick_period: None,
            boosts_at_tick_arm: 0,
            timer_armed: None,
            self_check,
            received: ReceivedBytes::default(),
            epoch_started: None,
            blocks_seen: HashMap::new(),
            nudgers,
        })
    }

    /// The guardian's pid.
    pub fn guardian_pid(&self) -> u32 {
        self.guardian_pid
    }

    /// When it started, CLOCK_MONOTONIC ns: the origin of its action log's times.
    pub fn started_ns(&self) -> Nanos {
        self.engine.settings.started_ns
    }

    /// Runs until SIGINT/SIGTERM/SIGHUP (or `run_for`), then restores every task it changed.
    pub fn run(mut self) -> anyhow::Result<()> {
        let deadline = self.cfg.run_for.map(|d| now_ns() + d.as_nanos() as u64);
        let result = self.event_loop(deadline);
        self.engine.restore_everything(now_ns());
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
            // Alive and running: the guardian leaves our boosts alone for another lease.
            self.engine.act.heartbeat();
            for ev in &evs[..n] {
                match ev.data() {
                    TOK_RING => self.on_ring()?,
                    TOK_TIMER => {
                        let _ = self.timer.wait();
                        self.timer_armed = None;
                        self.engine.on_timer(now_ns());
                    }
                    TOK_TICK => {
                        let _ = self.tick.wait();
                        let now = now_ns();
                        self.update_gate(now);
                        self.self_check_epoch(now);
                        self.engine.on_tick(now);
                        self.engine.probe.reap_forgotten();
                        self.arm_tick();
                    }
                    TOK_SIGNAL => {
                        if let Ok(Some(sig)) = self.signals.read_signal() {
                            // Who sent it, so an unexpected stop can be traced to its sender.
                            let sender = std::fs::read(format!("/proc/{}/cmdline", sig.ssi_pid))
                                .map(|c| {
                                    String::from_utf8_lossy(&c)
                                        .replace('\0', " ")
                                        .trim()
                                        .to_string()
                                })
                                .unwrap_or_else(|_| "gone".into());
                            eprintln!(
                                "cosched agent: signal {} from pid {} ({sender}), restoring and exiting",
                                sig.ssi_signo, sig.ssi_pid
                            );
                            return Ok(());
                        }
                    }
                    TOK_LISTEN => {
                        if let Err(e) = self.control.on_listen(&self.epoll) {
                            self.engine.counters.last_error = Some(e);
                        }
                    }
                    TOK_GUARD => {
                        anyhow::bail!(
                            "the guardian process (pid {}) died; stopping so that no boost outlives a guard",
                            self.guardian_pid
                        )
                    }
                    t if t >= TOK_CONN => self.on_conn(t),
                    t if t >= TOK_PROC => self.on_proc_exit((t - TOK_PROC) as u32),
                    _ => {}
                }
            }
            // Armed after the batch of events (a timer syscall on the way to a boost would delay the boosted
            // receiver whenever the agent shares its CPU).
            if self.engine.timer_stale {
                self.arm_timer();
            }
            if self.tick_period.is_some_and(|p| p > self.cfg.tick_ns)
                && self.engine.counters.boosts_granted != self.boosts_at_tick_arm
            {
                self.arm_tick();
            }
        }
    }

    fn on_ring(&mut self) -> anyhow::Result<()> {
        let mut events = std::mem::take(&mut self.scratch);
        self.engine.probe.drain(&mut events)?;
        let now = now_ns();
        let hist = &mut self.engine.counters.wakeup_hist;
        for e in events
            .iter()
            .filter(|e| u64::from(e.kind) == intf::COSCHED_EV_ARRIVAL)
        {
            let b = Latency::bucket(now.saturating_sub(e.time_ns) / 1000, hist.len());
            hist[b] += 1;
        }
        // A local task's wake-up first: it waits on its CPU until the boost there is paused (or the CPU nudged),
        // and every arrival handled before the pause (a boost is a sched_setattr, 2-32 us here) lengthened that
        // wait (docs/lab-local.md, "The yield's path"). An arrival for a thread paused here finds the local
        // task's record and is not boosted over it.
        let local = |e: &Event| {
            matches!(
                u64::from(e.kind),
                intf::COSCHED_EV_LOCAL_WAKE | intf::COSCHED_EV_LOCAL_REFUSED
            )
        };
        events.sort_by_key(|e| !local(e));
        let locals = events.iter().take_while(|e| local(e)).count();
        // SAFETY: no arguments; returns the CPU this thread runs on (or -1).
        let here = unsafe { libc::sched_getcpu() };
        let served_here = events[..locals].iter().any(|e| e.cpu as i32 == here);
        for (i, e) in events.drain(..).enumerate() {
            if i == locals && served_here {
                // The local task served waits on this very CPU for the agent, real-time above it, to block: the
                // rest of the batch (16-64 us when arrivals remain) waits instead.
                std::thread::sleep(Duration::from_nanos(LOCAL_TURN_NS));
            }
            self.engine.counters.events += 1;
            match u64::from(e.kind) {
                intf::COSCHED_EV_ARRIVAL => self.engine.on_arrival(&e, now_ns()),
                intf::COSCHED_EV_FORK => self.on_fork(&e),
                intf::COSCHED_EV_EXIT => self.engine.on_thread_exit(e.tid),
                intf::COSCHED_EV_WATCH => {
                    self.attach_message_hooks();
                    self.tick_soon();
                }
                intf::COSCHED_EV_CRED_CHANGE => self.on_cred_change(&e),
                intf::COSCHED_EV_LOCAL_WAKE => {
                    let seen = now_ns();
                    self.engine.on_local_wake(e.tid, seen);
                    if self.cfg.log_actions {
                        // Where the local task's wait goes: the event's way to this loop, then the pause.
                        self.log(&format!(
                            "local task {} ({}) woke on CPU {}: boosted tid {} yields (event {} us old, pause {} us)",
                            e.arg,
                            comm_of(e.arg),
                            e.cpu,
                            e.tid,
                            seen.saturating_sub(e.time_ns) / 1000,
                            now_ns().saturating_sub(seen) / 1000
                        ));
                    }
                }
                intf::COSCHED_EV_LOCAL_REFUSED => self.nudge(&e),
                intf::COSCHED_EV_LOCAL_DONE => self.engine.on_local_done(e.tid, now_ns()),
                _ => {}
            }
        }
        self.scratch = events;
        Ok(())
    }

    /// A managed task created a thread or a process (`e.cpu` carries the creating thread).
    fn on_fork(&mut self, e: &Event) {
        let (tid, tgid) = (e.tid, e.tgid);
        if tid == tgid && self.engine.tracker.process(tgid).is_none() {
            // A new process of a managed job: not even tracked once its job is full.
            if self.engine.refuse_if_full(e.job, tgid, tid) {
                self.engine.probe.remove_proc(tgid);
                return;
            }
            let Ok(pidfd) = sched::pidfd_open(tgid, 0) else {
                self.engine.probe.remove_task(tid);
                self.engine.probe.remove_proc(tgid);
                return;
            };
            if self.engine.probe.task(tid).is_none_or(|t| t.tgid != tgid) {
                return; // exited before we looked; the pidfd may name a stranger
            }
            if self.add_process(tgid, e.job, pidfd).is_err() {
                return;
            }
        }
        self.engine.on_thread_start(tgid, tid, e.cpu);
    }

    fn add_process(&mut self, tgid: u32, job: u64, pidfd: OwnedFd) -> anyhow::Result<()> {
        self.epoll.add(
            pidfd.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOK_PROC + u64::from(tgid)),
        )?;
        self.proc_fds.insert(tgid, pidfd);
        self.engine.add_process(
            tgid,
            job,
            stats::proc_cpu_ticks(tgid).unwrap_or(0),
            now_ns(),
        );
        self.arm_tick();
        Ok(())
    }

    /// A managed process exec'd a setuid or setgid program: it runs with privileges its owner does not have,
    /// so it leaves management alive — what the agent changed is restored, and it is forgotten (BPF already
    /// dropped its entries, so nothing it creates is adopted). BPF reports only a managed task's exec, so the
    /// release counts even for a process user space never tracked: one forked and exec'd before its fork
    /// event was handled (its entry was gone by then, taken for an exit), which the agent never changed.
    fn on_cred_change(&mut self, e: &Event) {
        self.engine.counters.released_setuid += 1;
        self.log(&format!(
            "pid {} exec'd a setuid/setgid program (effective uid {}): no longer managed",
            e.tgid, e.arg
        ));
        if self.engine.tracker.process(e.tgid).is_some() {
            self.engine.restore_process(e.tgid, now_ns());
            self.on_proc_exit(e.tgid);
        }
    }

    fn on_proc_exit(&mut self, tgid: u32) {
        if let Some(fd) = self.proc_fds.remove(&tgid) {
            let _ = self.epoll.delete(fd.as_fd());
        }
        let Some((p, booked)) = self.engine.remove_process(tgid) else {
            return;
        };
        self.engine.probe.forget_proc(tgid);
        if !self.engine.tracker.job_alive(p.job) {
            self.engine.probe.remove_job(p.job);
            self.sync_managing();
        }
        let now = now_ns();
        stats::retire_process(&mut self.engine.tracker, &p, booked, now);
        self.arm_tick();
        self.update_gate(now);
    }

    fn on_conn(&mut self, token: u64) {
        let Some(control::Incoming {
            stream,
            uid,
            request,
        }) = self.control.on_readable(token, &self.epoll)
        else {
            return;
        };
        let reply = match request {
            Ok(Request::Ping) => Reply::Pong {
                pid: std::process::id(),
            },
            Ok(Request::Stats) => Reply::Stats(Box::new(self.stats())),
            Ok(Request::Register { pid, name }) => {
                let registered = sched::owned_by(pid, uid).and_then(|()| self.register(pid, name));
                // A registration that failed half-way may have turned the scheduler hooks on for nothing.
                self.sync_managing();
                match registered {
                    Ok(job) => Reply::Registered { job },
                    Err(e) => Reply::Error {
                        message: format!("{e:#}"),
                    },
                }
            }
            Err(message) => Reply::Error { message },
        };
        if let Err(e) = control::reply_to(stream, &reply) {
            self.engine.counters.last_error = Some(format!("control socket: {e}"));
        }
    }

    /// The scheduler hooks work while some job is managed and return at once otherwise (`gate.managing`).
    fn sync_managing(&mut self) {
        let managing = self.engine.tracker.live_jobs() > 0;
        self.engine.probe.set_managing(managing);
    }

    /// Manages `pid` and all its current threads (and, through BPF, every task it creates from now on).
    fn register(&mut self, pid: u32, name: String) -> anyhow::Result<u64> {
        let me = std::process::id();
        if pid <= 1 || pid == me || pid == self.guardian_pid {
            anyhow::bail!("pid {pid} cannot be managed (init, the agent or its guardian)");
        }
        if self.engine.tracker.process(pid).is_some() {
            anyhow::bail!("pid {pid} is already managed");
        }
        match sched::is_kernel_thread(pid) {
            Ok(true) => anyhow::bail!(
                "pid {pid} is a kernel thread: the agent manages user processes only (and kthreadd's \
                 descendants are every new kernel thread)"
            ),
            Ok(false) => {}
            Err(e) => anyhow::bail!("pid {pid} is not a live process ({e})"),
        }
        if self.engine.tracker.live_jobs() >= tracker::MAX_LIVE_JOBS {
            anyhow::bail!(
                "the agent already manages {} jobs, the most it manages at once; start this one when another \
                 has ended",
                tracker::MAX_LIVE_JOBS
            );
        }
        let pidfd = sched::pidfd_open(pid, 0)
            .map_err(|e| anyhow::anyhow!("pid {pid} is not a live process (pidfd_open: {e})"))?;
        // Read after the pidfd: the uid is the process's that the pidfd holds (checked alive below).
        let owner_uid = sched::real_uid(pid)?;
        let list_threads = || -> anyhow::Result<Vec<u32>> {
            Ok(std::fs::read_dir(format!("/proc/{pid}/task"))
                .map_err(|e| anyhow::anyhow!("cannot list the threads of pid {pid}: {e}"))?
                .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
                .collect())
        };
        let threads = list_threads()?.len();
        if threads > tracker::MAX_THREADS_PER_JOB {
            anyhow::bail!(
                "pid {pid} has {threads} threads; a job may have at most {} managed threads",
                tracker::MAX_THREADS_PER_JOB
            );
        }
        let job = self.engine.tracker.new_job_id();
        // The scheduler hooks book every stint of the job's threads from their first switch: on before the map
        // entries go in.
        self.engine.probe.set_managing(true);
        let obs = &self.engine.probe;
        obs.add_job(job)?;
        if let Err(e) = obs.add_proc(pid, job) {
            obs.remove_job(job);
            return Err(e);
        }
        // Listed again after BPF follows the process: a thread it makes from now on is seen by BPF's fork hook.
        let tids = list_threads()?;
        for &tid in &tids {
            obs.add_task(tid, pid)?;
        }
        // The pidfd was opened before the map entries; if the process died in between, drop it again.
        if !sched::pidfd_alive(&pidfd) {
            for &tid in &tids {
                obs.remove_task(tid);
            }
            obs.remove_proc(pid);
            obs.remove_job(job);
            anyhow::bail!("pid {pid} exited while being registered");
        }
        self.engine.tracker.add_job(job, name, pid, now_ns());
        if let Some(j) = self.engine.tracker.job_mut(job) {
            j.launchers = crate::autogroup::launchers(pid);
            j.owner_uid = owner_uid;
        }
        self.add_process(pid, job, pidfd)?;
        for tid in tids {
            self.engine.adopt_thread(pid, tid);
        }
        Ok(job)
    }

    /// Closes the BPF watch gate once no managed thread has shared its CPU for `--watch-hold-ms` (BPF opens it
    /// again the moment one does), or when no job is left. Never while a thread is boosted or niced: those wait
    /// for arrivals or for the tick, which reads what the message hooks write.
    fn update_gate(&mut self, now: Nanos) {
        let Some(hold) = self.cfg.watch_hold_ns else {
            return;
        };
        let gate = self.engine.probe.gate();
        if gate.watching == 0 {
            return;
        }
        let idle = self.engine.tracker.processes().next().is_none()
            || now.saturating_sub(gate.contended_ns) > hold;
        if idle && !self.engine.tracker.steering() {
            self.engine.probe.set_watching(false);
            let _ = self.engine.probe.set_message_hooks(false);
            self.engine.counters.watch_closes += 1;
            self.log("unwatch");
        } else {
            // Open, and the event that said so was lost (ring buffer full): attach now.
            self.attach_message_hooks();
        }
    }

    /// The self-check ([`cosched_policy::selfcheck`]), at each tick: while the gate is open (a managed thread
    /// shares its CPU: what coscheduling is for), epochs run; at an epoch's end its progress rate — the jobs'
    /// TCP bytes received per second — is judged and the next epoch's mode applied. With the gate closed no
    /// epoch runs and what was learnt is forgotten: the contention it judged is gone.
    fn self_check_epoch(&mut self, now: Nanos) {
        let Some(check) = self.self_check.as_mut() else {
            return;
        };
        let contended = self.engine.probe.gate().watching != 0;
        let tgids: Vec<u32> = self.engine.tracker.tgids();
        let Some(started) = self.epoch_started.filter(|_| contended) else {
            if contended {
                // The first epoch starts: this look only sets the baseline.
                self.received.since_last(&tgids);
                self.blocks_seen = self.engine.thread_blocks().into_iter().collect();
                self.epoch_started = Some(now);
            } else if self.epoch_started.take().is_some() {
                check.reset();
                self.received.forget();
                self.apply_mode(Mode::Coschedule, now);
            }
            return;
        };
        // Ticks are not exact: an epoch ends at the first tick within a tenth of its length of its end.
        let epoch = check.params().epoch_ns;
        if now.saturating_sub(started) + epoch / 10 < epoch {
            return;
        }
        let rate = self
            .received
            .since_last(&tgids)
            .map(|bytes| bytes as f64 * 1e9 / now.saturating_sub(started).max(1) as f64);
        let ran = check.mode();
        // Sleeps after an empty poll in this epoch, over the threads managed now (one that left took its own).
        let counts = self.engine.thread_blocks();
        let blocks = counts
            .iter()
            .map(|(tid, n)| n.saturating_sub(self.blocks_seen.get(tid).copied().unwrap_or(0)))
            .sum();
        self.blocks_seen = counts.into_iter().collect();
        check.note_blocks(blocks);
        let next = check.end_epoch(rate);
        if self.cfg.log_actions {
            let line = format!(
                "self-check: {} epoch of {:.1} ms: {} B/s; next {} (favoured {}, probe gap {}, the other's gain {})",
                ran.name(),
                now.saturating_sub(started) as f64 / 1e6,
                rate.map_or("-".into(), |r| format!("{r:.0}")),
                next.name(),
                check.chosen().name(),
                check.probe_gap(),
                check.mean_gain().map_or("-".into(), |g| format!(
                    "{:+.1} % over {} probes",
                    g * 100.0,
                    check.gains_kept()
                ))
            );
            self.log(&line);
        }
        self.epoch_started = Some(now);
        self.apply_mode(next, now);
    }

    /// The self-check's state for the statistics (`None`: `--no-self-check`).
    fn self_check_stats(&self) -> Option<SelfCheckStats> {
        let check = self.self_check.as_ref()?;
        let tally = check.tally();
        Some(SelfCheckStats {
            mode: check.mode().name().into(),
            chosen: check.chosen().name().into(),
            epochs_coscheduling: tally.epochs_coscheduling,
            epochs_standing_aside: tally.epochs_standing_aside,
            probes: tally.probes,
            switches: tally.switches,
            blind_epochs: tally.blind_epochs,
            probes_held: tally.probes_held,
            mean_gain: check.mean_gain(),
            actions_stood_aside: self.engine.counters.actions_stood_aside,
        })
    }

    /// Carries out a self-check mode: standing aside detaches the message hooks (their cost on every message
    /// is most of what coscheduling costs a job that does not need it) and ends every boost.
    fn apply_mode(&mut self, mode: Mode, now: Nanos) {
        let aside = mode == Mode::StandAside;
        if aside == self.engine.settings.stand_aside {
            return;
        }
        self.engine.stand_aside(aside, now);
        if aside {
            let _ = self.engine.probe.set_message_hooks(false);
            self.log("self-check: stand aside");
        } else {
            self.log("self-check: coschedule");
            if self.engine.probe.gate().watching != 0 {
                self.attach_message_hooks();
            }
        }
    }

    /// The gate is open: the message hooks must run (unless the self-check stands aside). A failure is kept as
    /// the last error and retried at the next tick; the gate stays open, so nothing is decided on stale state.
    fn attach_message_hooks(&mut self) {
        if self.engine.settings.stand_aside || self.engine.probe.message_hooks_attached() {
            return;
        }
        match self.engine.probe.set_message_hooks(true) {
            Ok(()) => self.log("watch"),
            Err(e) => self.engine.counters.last_error = Some(e.to_string()),
        }
    }

    /// The fair class left local task `e.arg` waiting on CPU `e.cpu` (where `e.tid` runs): nudge that CPU.
    fn nudge(&mut self, e: &Event) {
        let Some(nudgers) = self.nudgers.as_mut() else {
            return;
        };
        match nudgers.nudge(e.cpu) {
            Ok(()) => self.engine.counters.local_nudges += 1,
            Err(why) => {
                eprintln!("cosched agent: {why}: CPU {} is not nudged", e.cpu);
                self.engine.counters.last_error = Some(why);
            }
        }
        if self.cfg.log_actions {
            self.log(&format!(
                "local task {} ({}) left waiting on CPU {} by the fair class ({} {} runs): CPU nudged",
                e.arg,
                comm_of(e.arg),
                e.cpu,
                e.tid,
                comm_of(e.tid)
            ));
        }
    }

    /// `--log-actions`: the loop's own lines (the engine prints the actions).
    fn log(&self, what: &str) {
        if self.cfg.log_actions {
            crate::ctx::action_line(format_args!(
                "[{:>12.6}] (agent) {what}",
                now_ns().saturating_sub(self.started_ns) as f64 / 1e9
            ));
        }
    }

    fn arm_timer(&mut self) {
        self.engine.timer_stale = false;
        let next = self.engine.next_deadline();
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
            self.engine.counters.last_error = Some(format!("timerfd: {e}"));
        }
    }

    /// Arms the tick while any process is managed (and until the map entries of exited ones are deleted): every
    /// `--tick-ms` while it has something to decide ([`Engine::tick_needed`]), else every `--idle-tick-ms` — or
    /// sooner where a periodic duty needs it: the self-check's epoch while it runs, the policy's own epoch
    /// ([`Policy::idle_tick_at_most`]), the watch hold while the gate is open, half the guardian's lease while a
    /// boost is live. An
    /// agent that woke at real-time priority 100 times a second took its CPU from a rank of the job as often:
    /// a spin-block ping-pong beside one competitor per CPU ran at 0.73 of its rate without the agent with no
    /// boost at all (docs/lab-local.md).
    fn arm_tick(&mut self) {
        let want = !self.proc_fds.is_empty() || self.engine.probe.forgetting();
        // While the self-check runs epochs, the tick ends them on time.
        let epoch = self
            .self_check
            .as_ref()
            .filter(|_| self.epoch_started.is_some())
            .map_or(Nanos::MAX, |c| c.params().epoch_ns);
        let policy_epoch = self
            .engine
            .policy()
            .idle_tick_at_most()
            .unwrap_or(Nanos::MAX);
        // While the gate is open, the tick closes it once no managed thread has shared its CPU for the hold.
        let gate_hold = match self.cfg.watch_hold_ns {
            Some(hold) if self.engine.probe.gate().watching != 0 => hold,
            _ => Nanos::MAX,
        };
        // While a boost is live the guardian revokes it once the agent's heartbeat is a lease old: the loop
        // passes (and renews it) at least twice a lease, however long the boost's window.
        let heartbeat = if self.cfg.guard_lease_ms > 0 && self.engine.tracker.boosted() > 0 {
            self.cfg.guard_lease_ms * 1_000_000 / 2
        } else {
            Nanos::MAX
        };
        let period = want.then(|| {
            if self.engine.tick_needed() {
                self.cfg.tick_ns
            } else {
                let idle = self
                    .cfg
                    .idle_tick_ns
                    .min(epoch)
                    .min(policy_epoch)
                    .min(gate_hold)
                    .min(heartbeat);
                idle.max(self.cfg.tick_ns)
            }
        });
        self.boosts_at_tick_arm = self.engine.counters.boosts_granted;
        if period == self.tick_period {
            return;
        }
        let res = match period {
            Some(p) => {
                let d = TimeSpec::from_duration(Duration::from_nanos(p));
                self.tick
                    .set(Expiration::Interval(d), TimerSetTimeFlags::empty())
            }
            None => self.tick.unset(),
        };
        match res {
            Ok(()) => self.tick_period = period,
            Err(e) => self.engine.counters.last_error = Some(format!("tick timerfd: {e}")),
        }
    }

    /// The gate opened (a managed thread shares its CPU): the next tick comes in `--tick-ms`, not at the idle
    /// period, so that what starts with contention — a policy that ticks while contended (the predictive rule),
    /// the self-check's epochs — starts now. That tick arms the period it needs.
    fn tick_soon(&mut self) {
        if self.tick_period.is_none_or(|p| p <= self.cfg.tick_ns) {
            return;
        }
        let d = TimeSpec::from_duration(Duration::from_nanos(self.cfg.tick_ns));
        match self
            .tick
            .set(Expiration::OneShot(d), TimerSetTimeFlags::empty())
        {
            // Disarmed after it fires until the tick re-arms it: `arm_tick` must not take it for the period.
            Ok(()) => self.tick_period = None,
            Err(e) => self.engine.counters.last_error = Some(format!("tick timerfd: {e}")),
        }
    }

    /// The live statistics.
    pub fn stats(&self) -> AgentStats {
        let now = now_ns();
        let obs = &self.engine.probe;
        let mut config = self.cfg.describe();
        config.extend(self.engine.policy().describe());
        let bpf = stats::BpfReadings {
            counters: obs.stats(),
            histogram: obs.histogram(),
            watching: obs.gate().watching != 0,
            message_hooks_attached: obs.message_hooks_attached(),
            malformed_events: obs.malformed,
            programs: obs
                .program_costs()
                .into_iter()
                .filter(|p| p.calls > 0)
                .collect(),
        };
        let jobs = stats::job_stats(
            &self.engine.tracker,
            now,
            |tgid| engine::sample(obs, &self.engine.tracker, tgid, now).map(|s| s.cpu_ns),
            |job| crate::ctx::job_cpu(obs, &self.engine.tracker, job, now),
        );
        stats::agent_stats(stats::Snapshot {
            uptime_s: now.saturating_sub(self.started_ns) as f64 / 1e9,
            guardian_pid: self.guardian_pid,
            guardian_revocations: self.engine.act.guardian_revocations(),
            config,
            bpf,
            counters: &self.engine.counters,
            boosted_now: self.engine.tracker.boosted(),
            jobs,
            policy: stats::policy_section(
                &self.cfg.policy,
                self.engine.policy().counters(),
                &self.engine.counters,
            ),
            self_check: self.self_check_stats(),
        })
    }
}
