//! The guardian: whatever happens to the agent (SIGTERM, panic, `kill -9`, SIGSTOP, a wedge), no managed task
//! stays boosted.
//!
//! ## Problem
//! A boost is a `SCHED_FIFO` policy left on a task that the agent must take back. If the agent dies between the
//! two, a spin-waiting task would keep its CPU (up to the kernel's 950 ms/s RT throttle) for good; if the agent
//! is stopped or wedged, the same for as long as it is. If the guardian itself runs below the boosted spinners
//! it must restore, it can be starved; if agent and guardian die together, nobody restores.
//!
//! ## Approach
//! Before it loads anything, the agent creates a *slot table* in a file under [`TABLE_DIR`] (tmpfs, so it
//! outlives both processes but not a reboot, which ends every boost anyway), maps it shared, and forks a small
//! guardian process. Before each `sched_setattr` (or `sched_setaffinity`) that changes a task, the agent writes
//! a slot (tid, start time, the leader's start time, the attributes and CPU mask it sets, the task's own) and
//! marks it live; after restoring, it marks the slot free.
//!
//! The guardian runs `SCHED_FIFO` at a priority above every boost and the agent's own ([`Guardian::start`]'s
//! `priority`), so boosted spinners on every CPU cannot starve it. It waits on a pidfd of the agent and on a
//! *doorbell* (an eventfd the agent rings):
//! - the agent exited (however): restore every live slot, remove the table file, exit;
//! - the agent is alive but its heartbeat (CLOCK_MONOTONIC ns, written by the agent at every pass of its event
//!   loop and every slot write) is older than the *lease* while a slot holds a real-time policy: the agent is
//!   stopped or wedged, so restore every live slot now (the watchdog), and again every [`WATCH_PERIOD_MS`]
//!   while it stays so. The slots stay live: the agent still owns them, and a restore is a no-op on a task that
//!   no longer has what the slot says. A stopped agent thus costs the machine at most the lease (and a
//!   millisecond) of boosted time, however long it stays stopped.
//!
//! The guardian wakes only when there is something to check ([`next_look_ms`]): while a slot holds a real-time
//! policy, when the lease of the agent's last heartbeat would run out; while none does, never — it says so in
//! the header (`guardian_asleep`) and the agent rings the doorbell when it records a boost. Every wake-up at
//! real-time priority takes the CPU from whatever runs there, most often a rank of the job: a guardian that
//! looked every 50 ms and an agent that ticked every 100 ms, boosting nothing, cost a spin-block ping-pong
//! beside two competitors per CPU 7 % of its coscheduled time (docs/lab-selfcheck.md, "The agent's wake-ups").
//!
//! A new agent (and `cosched lab --cleanup`) runs [`sweep_stale`]: every table whose agent and guardian are
//! both gone (pid + start time) is restored and removed — the case of both killed together.
//!
//! Restoring a slot re-reads the task first and writes `orig` back only if the task still has exactly what
//! the agent set (a renice or policy change by anyone else since is left alone). A task is known by tid +
//! start time; if that thread is gone but its process's leader has the recorded leader start time and the
//! boost's policy, a non-leader thread exec'd (`de_thread` gives it the leader's pid and start time), and the
//! leader is restored instead.
//!
//! If the guardian dies first, the agent sees its pidfd, restores everything itself and stops.
//!
//! ## Terminology
//! - slot state: `FREE`, `LIVE` (the task may hold `set`; restore to `orig`).
//! - `start_time`: field 22 of `/proc/<tgid>/task/<tid>/stat`; with the tid it identifies the task across pid
//!   reuse.
//! - heartbeat, lease: the agent's last sign of life, and how old it may get while a boost is live.

use crate::sched::{self, CpuMask, SchedAttr};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots in the shared table (boosted or demoted threads at one time).
pub const SLOTS: usize = 1024;

/// Where the slot tables live: one file per agent, `agent-<pid>.slots`.
pub const TABLE_DIR: &str = "/run/cosched/guardian";

/// How often the guardian restores again while a stopped agent's heartbeat stays older than the lease.
pub const WATCH_PERIOD_MS: i32 = 50;

/// The default lease: how old the agent's heartbeat may get while it holds a boost. The agent's loop wakes at
/// every boost window's end (sub-millisecond to a few ms), so only a stopped or wedged agent misses it.
pub const DEFAULT_LEASE_MS: u64 = 200;

const MAGIC: u64 = u64::from_le_bytes(*b"CSGUARD4");
const FREE: u32 = 0;
const LIVE: u32 = 1;
/// Slot kinds: a thread's scheduling attributes, an autogroup's nice ([`crate::autogroup`]), or a cpu cgroup's
/// weight ([`crate::cpu_cgroup`]).
const TASK: u32 = 0;
const AUTOGROUP: u32 = 1;
const CGROUP: u32 = 2;

/// The table's header. The agent writes `agent_*`, `lease_ns` and `heartbeat_ns`; the guardian `guardian_*`
/// and `revoked`.
#[repr(C)]
struct Header {
    magic: u64,
    agent_pid: u32,
    guardian_pid: AtomicU32,
    agent_start: u64,
    guardian_start: AtomicU64,
    lease_ns: u64,
    heartbeat_ns: AtomicU64,
    /// How many times the watchdog restored the boosts of a stopped or wedged agent.
    revoked: AtomicU64,
    /// 1 while the guardian waits with no timeout (no live slot held a real-time policy when it last looked):
    /// a boost recorded then must ring the doorbell, or a stopped agent could keep it unrevoked.
    guardian_asleep: AtomicU32,
    _pad: u32,
}

/// One shared slot. `state` is the only field read concurrently; the others are written while the slot is
/// `FREE` (by the agent alone) and read by the guardian only while it is `LIVE`.
#[repr(C)]
struct Slot {
    state: AtomicU32,
    tid: u32,
    tgid: u32,
    /// 1 when the agent also changed the task's CPU affinity (`set_mask`; its own is `orig_mask`).
    affinity: u32,
    /// [`TASK`], or [`AUTOGROUP`]: `tgid` is then a process of the autogroup `group` when it was lowered (started
    /// at `start_time`), `group_set` the nice the agent gave the group, `group_orig` its own. [`CGROUP`]:
    /// `group` is the cpu cgroup's id, `group_set` the weight the agent gave it, `group_orig` its own.
    kind: u32,
    group_set: i32,
    group_orig: i32,
    _pad: u32,
    group: u64,
    start_time: u64,
    /// The start time of the process's leader (tid = tgid) when the slot was written: after a non-leader
    /// thread's exec, the leader is that thread.
    leader_start: u64,
    set: SchedAttr,
    orig: SchedAttr,
    set_mask: CpuMask,
    orig_mask: CpuMask,
}

/// The mapped table: a header and [`SLOTS`] slots.
#[repr(C)]
struct Table {
    header: Header,
    slots: [Slot; SLOTS],
}

/// The agent's handle on the guardian and the shared table.
pub struct Guardian {
    table: *mut Table,
    pid: u32,
    free: Vec<usize>,
    /// The eventfd that wakes a guardian waiting with no timeout.
    doorbell: std::os::fd::OwnedFd,
}

/// A reserved slot, handed back to [`Guardian::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotId(usize);

/// CLOCK_MONOTONIC in ns (the heartbeat's clock, shared by agent and guardian).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec; CLOCK_MONOTONIC cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether process `pid` is alive — running, not a zombie waiting to be reaped — and still the one that started
/// at `start` (not a reused pid).
fn same_process(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    pid != 0
        && !matches!(state, Some("Z" | "X" | "x"))
        && sched::parse_stat_field(&stat, 22) == Some(start)
}

/// Creates the table file `path`, sized and zeroed, and maps it shared.
fn map_table(path: &Path) -> anyhow::Result<*mut Table> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| anyhow::anyhow!("creating the guardian's directory {}: {e}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| anyhow::anyhow!("creating the guardian table {}: {e}", path.display()))?;
    let size = std::mem::size_of::<Table>();
    file.set_len(size as u64)
        .map_err(|e| anyhow::anyhow!("sizing the guardian table {}: {e}", path.display()))?;
    map_file(&file, size)
}

/// Maps `size` bytes of `file` shared, read-write.
fn map_file(file: &std::fs::File, size: usize) -> anyhow::Result<*mut Table> {
    // SAFETY: a shared mapping of a regular file at least `size` bytes long, checked for failure. A new file
    // reads as zeroes (every slot FREE).
    let table = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if table == libc::MAP_FAILED {
        anyhow::bail!(
            "mmap of the guardian table failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(table.cast::<Table>())
}

impl Guardian {
    /// Creates the table and forks the guardian, which runs `SCHED_FIFO` at `priority` (above every boost and
    /// the agent's own) and revokes boosts when the agent's heartbeat is older than `lease_ms` (0: never).
    /// Call before creating threads or loading BPF.
    pub fn start(priority: u32, lease_ms: u64) -> anyhow::Result<Guardian> {
        let agent = std::process::id();
        let path = Path::new(TABLE_DIR).join(format!("agent-{agent}.slots"));
        let table = map_table(&path)?;
        // SAFETY: freshly mapped and zeroed; nobody else has it yet.
        unsafe {
            let h = &mut (*table).header;
            h.magic = MAGIC;
            h.agent_pid = agent;
            h.agent_start = sched::start_time(agent, agent)?;
            h.lease_ns = lease_ms.saturating_mul(1_000_000);
            h.heartbeat_ns.store(monotonic_ns(), Ordering::SeqCst);
        }
        // The kernel's default slice, learned now — single-threaded, in the fair class — so that both processes
        // have it: every restore reads it (`sched::get_attr`), and learning it spawns a thread, which the guardian
        // (SCHED_FIFO with reset-on-fork) would start in the fair class, where boosted spinners on every CPU kept
        // it waiting until the kernel's fair server ran it: restores came 0.83-1.0 s after a kill -9, not at once.
        let _ = sched::base_slice_ns();
        let doorbell = nix::sys::eventfd::EventFd::from_value_and_flags(
            0,
            nix::sys::eventfd::EfdFlags::EFD_CLOEXEC | nix::sys::eventfd::EfdFlags::EFD_NONBLOCK,
        )
        .map_err(|e| {
            let _ = std::fs::remove_file(&path);
            anyhow::anyhow!("eventfd for the guardian's doorbell: {e}")
        })?;
        let doorbell = std::os::fd::OwnedFd::from(doorbell);
        // SAFETY: fork; the child only runs `guard`, which uses plain syscalls and /proc reads, and never
        // returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let _ = std::fs::remove_file(&path);
            anyhow::bail!(
                "fork of the guardian failed: {}",
                std::io::Error::last_os_error()
            );
        }
        if pid == 0 {
            guard(table, agent, priority, &path, doorbell.as_raw_fd());
        }
        Ok(Guardian {
            table,
            pid: pid as u32,
            free: (0..SLOTS).rev().collect(),
            doorbell,
        })
    }

    fn slot(&self, i: usize) -> *mut Slot {
        // SAFETY: i < SLOTS (every SlotId and free index is); the table is mapped for our lifetime.
        unsafe { std::ptr::addr_of_mut!((*self.table).slots[i]) }
    }

    /// The agent is alive and running its loop: renews the lease on its boosts.
    pub fn heartbeat(&self) {
        // SAFETY: the header is mapped for our lifetime; an atomic store.
        unsafe {
            (*self.table)
                .header
                .heartbeat_ns
                .store(monotonic_ns(), Ordering::SeqCst)
        };
    }

    /// How many times the guardian revoked this agent's boosts because its heartbeat was too old.
    pub fn revoked(&self) -> u64 {
        // SAFETY: as above.
        unsafe { (*self.table).header.revoked.load(Ordering::SeqCst) }
    }

    /// The guardian's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Records that thread `tid` of `tgid` (started at `start_time`; its process's leader at `leader_start`)
    /// is about to be given `set` (its attributes before were `orig`). Must be called BEFORE the
    /// `sched_setattr`. `None` if the table is full (then do not change the task).
    pub fn record(
        &mut self,
        (tgid, tid): (u32, u32),
        (start_time, leader_start): (u64, u64),
        set: &SchedAttr,
        orig: &SchedAttr,
    ) -> Option<SlotId> {
        let i = self.free.pop()?;
        self.heartbeat();
        // SAFETY: i < SLOTS; the slot is FREE, so the guardian does not read it, and only this thread writes.
        unsafe {
            let s = self.slot(i);
            (*s).tid = tid;
            (*s).tgid = tgid;
            (*s).start_time = start_time;
            (*s).leader_start = leader_start;
            (*s).set = *set;
            (*s).orig = *orig;
            (*s).affinity = 0;
            (*s).kind = TASK;
            (*s).state.store(LIVE, Ordering::SeqCst);
        }
        self.wake_for(set);
        Some(SlotId(i))
    }

    /// Records that autogroup `group` (its own nice `group.nice`), reached through process `pid` (started at
    /// `start_time`), is about to be given nice `set`. Call BEFORE writing it. `None` if the table is full.
    pub fn record_autogroup(
        &mut self,
        pid: u32,
        start_time: u64,
        group: crate::autogroup::Autogroup,
        set: i32,
    ) -> Option<SlotId> {
        self.record_group(AUTOGROUP, pid, start_time, group.id, group.nice, set)
    }

    /// Records that cpu cgroup `group` (its own weight `orig`) is about to be given weight `set`. Call BEFORE
    /// writing it. `None` if the table is full.
    pub fn record_cgroup(
        &mut self,
        group: &crate::cpu_cgroup::CpuCgroup,
        orig: u64,
        set: u64,
    ) -> Option<SlotId> {
        // Both knobs' ranges (shares up to 262144, weight up to 10000) fit an i32.
        self.record_group(CGROUP, 0, 0, group.id, orig as i32, set as i32)
    }

    /// A group's slot: `kind`, the group's id, its own value and the one about to be set; `pid` (started at
    /// `start_time`) the process it is reached through, if any.
    fn record_group(
        &mut self,
        kind: u32,
        pid: u32,
        start_time: u64,
        group: u64,
        orig: i32,
        set: i32,
    ) -> Option<SlotId> {
        let i = self.free.pop()?;
        self.heartbeat();
        // SAFETY: as in `record`.
        unsafe {
            let s = self.slot(i);
            (*s).kind = kind;
            (*s).tid = pid;
            (*s).tgid = pid;
            (*s).start_time = start_time;
            (*s).leader_start = start_time;
            (*s).group = group;
            (*s).group_orig = orig;
            (*s).group_set = set;
            (*s).affinity = 0;
            (*s).state.store(LIVE, Ordering::SeqCst);
        }
        Some(SlotId(i))
    }

    /// Updates what the agent set in a live slot (a boost that became a demotion or the reverse).
    pub fn update(&mut self, slot: SlotId, set: &SchedAttr) {
        // SAFETY: the slot is ours; mark it FREE while rewriting so the guardian never reads a torn value, then
        // LIVE again. The task holds either the old or the new `set` while FREE for a few ns; if the agent
        // dies exactly there, the guardian skips it — acceptable because both are written right after.
        self.heartbeat();
        unsafe {
            let s = self.slot(slot.0);
            (*s).state.store(FREE, Ordering::SeqCst);
            (*s).set = *set;
            (*s).state.store(LIVE, Ordering::SeqCst);
        }
        self.wake_for(set);
    }

    /// A live slot now says `set`: if that is a boost and the guardian waits with no timeout, ring the doorbell
    /// so that it watches the lease again. Read after the slot's store, as the guardian reads the slots after
    /// saying it waits (both `SeqCst`): either this sees it asleep or the guardian sees the boost.
    fn wake_for(&self, set: &SchedAttr) {
        // SAFETY: the header is mapped for our lifetime; an atomic load.
        let asleep = unsafe { (*self.table).header.guardian_asleep.load(Ordering::SeqCst) } != 0;
        if set.is_realtime() && asleep {
            let one = 1u64.to_ne_bytes();
            // SAFETY: an 8-byte write to our eventfd; it cannot block (EFD_NONBLOCK) and a failure (the counter
            // full, which takes 2^64 rings) leaves it readable anyway.
            unsafe { libc::write(self.doorbell.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        }
    }

    /// Records in a live slot that the task is about to get CPU affinity `set` (its own is `orig`), or with
    /// `None` that its own affinity is back. Call BEFORE the `sched_setaffinity`, like [`record`](Self::record).
    pub fn update_affinity(&mut self, slot: SlotId, masks: Option<(&CpuMask, &CpuMask)>) {
        // SAFETY: as in `update`.
        unsafe {
            let s = self.slot(slot.0);
            (*s).state.store(FREE, Ordering::SeqCst);
            match masks {
                Some((set, orig)) => {
                    (*s).set_mask = *set;
                    (*s).orig_mask = *orig;
                    (*s).affinity = 1;
                }
                None => (*s).affinity = 0,
            }
            (*s).state.store(LIVE, Ordering::SeqCst);
        }
    }

    /// Frees a slot after the task was restored (or died).
    pub fn release(&mut self, slot: SlotId) {
        // SAFETY: the slot is ours.
        unsafe { (*self.slot(slot.0)).state.store(FREE, Ordering::SeqCst) };
        self.free.push(slot.0);
    }

    /// Live slots (for statistics and tests).
    pub fn live(&self) -> usize {
        SLOTS - self.free.len()
    }
}

/// The guardian's whole life: watch the agent, revoke a stopped agent's boosts, restore everything when the
/// agent is gone, remove the table, exit.
fn guard(table: *mut Table, agent: u32, priority: u32, path: &Path, doorbell: i32) -> ! {
    // SAFETY: plain syscalls in the freshly forked child.
    unsafe {
        libc::setsid();
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let name = b"cosched-guard\0";
        libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if devnull >= 0 {
            libc::dup2(devnull, 0);
            libc::dup2(devnull, 1);
        }
    }
    let me = std::process::id();
    // SAFETY: the header is mapped; atomics.
    let header = unsafe { &(*table).header };
    header.guardian_pid.store(me, Ordering::SeqCst);
    header
        .guardian_start
        .store(sched::start_time(me, me).unwrap_or(0), Ordering::SeqCst);
    if priority > 0 {
        // Above every boost: boosted spinners on every CPU cannot keep the guardian from restoring them.
        if let Err(e) = sched::set_attr(me, &SchedAttr::fifo(priority)) {
            eprintln!(
                "cosched-guard: cannot run SCHED_FIFO at priority {priority} ({e}); boosted spinners may delay it"
            );
        }
    }
    if let Ok(fd) = sched::pidfd_open(agent, 0) {
        // The agent may have died before pidfd_open; then getppid() is no longer the agent.
        // SAFETY: getppid cannot fail.
        if unsafe { libc::getppid() } as u32 == agent {
            let pollfd = |fd: i32| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let mut p = [pollfd(fd.as_raw_fd()), pollfd(doorbell)];
            let mut revoked_this_stop = false;
            loop {
                // SAFETY: the table is mapped.
                let timeout = unsafe { next_look_ms(table, monotonic_ns()) };
                // SAFETY: two valid pollfds.
                unsafe { libc::poll(p.as_mut_ptr(), 2, timeout) };
                header.guardian_asleep.store(0, Ordering::SeqCst);
                if p[0].revents != 0 {
                    break; // the agent is gone
                }
                if p[1].revents != 0 {
                    let mut rang = [0u8; 8];
                    // SAFETY: an 8-byte read from the eventfd (non-blocking), which resets it.
                    unsafe { libc::read(doorbell, rang.as_mut_ptr().cast(), rang.len()) };
                }
                let age = monotonic_ns().saturating_sub(header.heartbeat_ns.load(Ordering::SeqCst));
                if header.lease_ns == 0 || age <= header.lease_ns {
                    revoked_this_stop = false;
                    continue;
                }
                // SAFETY: the table is mapped; slots are read through their atomic state.
                if !unsafe { holds_realtime(table) } {
                    continue;
                }
                let restored = unsafe { restore_all(table, false) };
                if !revoked_this_stop {
                    header.revoked.fetch_add(1, Ordering::SeqCst);
                    eprintln!(
                        "cosched-guard: the agent (pid {agent}) has not run for {} ms while holding boosts; \
                         restored {restored} task(s)",
                        age / 1_000_000
                    );
                    revoked_this_stop = true;
                }
            }
        }
    }
    // SAFETY: the agent is dead; nobody else writes the table.
    let restored = unsafe { restore_all(table, true) };
    if restored > 0 {
        eprintln!("cosched-guard: the agent is gone; restored {restored} task(s) to their original policy");
    }
    let _ = std::fs::remove_file(path);
    // SAFETY: leave without running the agent's atexit handlers or destructors.
    unsafe { libc::_exit(0) }
}

/// How long the guardian may wait before it looks at the agent's heartbeat again, in ms for `poll` (-1: until
/// the agent rings or exits), at CLOCK_MONOTONIC `now`. With no lease, or no live slot holding a real-time
/// policy, there is nothing to revoke: no timeout, and `guardian_asleep` says so (re-checked after: a boost
/// recorded in between either sees the flag and rings, or is seen here). Else until the lease of the last
/// heartbeat runs out (a millisecond past it), or [`WATCH_PERIOD_MS`] once it has.
///
/// # Safety
/// `table` must point to a mapped table.
unsafe fn next_look_ms(table: *mut Table, now: u64) -> i32 {
    let header = &(*table).header;
    let nothing_to_revoke = || header.lease_ns == 0 || !holds_realtime(table);
    if nothing_to_revoke() {
        header.guardian_asleep.store(1, Ordering::SeqCst);
        if nothing_to_revoke() {
            return -1;
        }
    }
    header.guardian_asleep.store(0, Ordering::SeqCst);
    let age = now.saturating_sub(header.heartbeat_ns.load(Ordering::SeqCst));
    match header.lease_ns.checked_sub(age) {
        Some(left) if left > 0 => (left.div_ceil(1_000_000) + 1).min(i32::MAX as u64) as i32,
        _ => WATCH_PERIOD_MS,
    }
}

/// Whether some live slot holds a real-time policy (a boost).
///
/// # Safety
/// `table` must point to a mapped table.
unsafe fn holds_realtime(table: *mut Table) -> bool {
    (0..SLOTS).any(|i| {
        let s = &(*table).slots[i];
        s.state.load(Ordering::SeqCst) == LIVE && s.kind == TASK && s.set.is_realtime()
    })
}

/// The task a slot names now: its own thread, or — if that thread is gone because it exec'd from a non-leader
/// thread — the leader it became. `None` if neither is there.
fn slot_task(s: &Slot) -> Option<u32> {
    if sched::start_time(s.tgid, s.tid).ok() == Some(s.start_time) {
        return Some(s.tid);
    }
    let became_leader = s.tid != s.tgid
        && s.leader_start != 0
        && sched::start_time(s.tgid, s.tgid).ok() == Some(s.leader_start);
    became_leader.then_some(s.tgid)
}

/// Restores one live slot if its task (or autogroup) still has exactly what the agent set (re-read now). Returns
/// whether it wrote anything back.
fn restore_slot(s: &Slot) -> bool {
    if s.kind == AUTOGROUP {
        return restore_autogroup(s);
    }
    if s.kind == CGROUP {
        return restore_cgroup(s);
    }
    let Some(tid) = slot_task(s) else {
        return false; // exited, or the tid now belongs to another task
    };
    let Ok(now) = sched::get_attr(tid) else {
        return false;
    };
    let mut restored =
        sched::write_back(&s.orig, &s.set, &now, sched::nice_of(tid)).is_some_and(|back| {
            sched::writes_to(tid, &now, &back)
                .iter()
                .all(|w| sched::set_attr(tid, w).is_ok())
        });
    if s.affinity != 0 && sched::get_affinity(tid).ok() == Some(s.set_mask) {
        restored |= sched::set_affinity(tid, &s.orig_mask).is_ok();
    }
    restored
}

/// Puts an autogroup's own nice back if it still has the agent's: reached through the process recorded, or, if
/// that one is gone, any process still in the group (its id is never reused while the machine is up).
fn restore_autogroup(s: &Slot) -> bool {
    use crate::autogroup;
    let in_group = |pid: u32| {
        autogroup::of(pid)
            .filter(|g| g.id == s.group)
            .map(|g| (pid, g))
    };
    let recorded = (sched::start_time(s.tgid, s.tgid).ok() == Some(s.start_time))
        .then(|| in_group(s.tgid))
        .flatten();
    let member = recorded.or_else(|| autogroup::members(s.group).into_iter().find_map(in_group));
    match member {
        Some((pid, g)) if g.nice == s.group_set => autogroup::set_nice(pid, s.group_orig).is_ok(),
        _ => false,
    }
}

/// Puts a cpu cgroup's own weight back if it still has the agent's (found by its id; gone: nothing to do).
fn restore_cgroup(s: &Slot) -> bool {
    crate::cpu_cgroup::find(s.group).is_some_and(|group| {
        crate::cpu_cgroup::give_back(&group, s.group_set as u64, s.group_orig as u64)
            .unwrap_or(false)
    })
}

/// Restores every live slot whose task is unchanged since the agent wrote it; with `free`, marks every slot
/// FREE after (the agent is gone). Returns how many it restored.
///
/// # Safety
/// `table` must point to a mapped table. With `free`, no agent may be writing it.
unsafe fn restore_all(table: *mut Table, free: bool) -> usize {
    let mut n = 0;
    for i in 0..SLOTS {
        let s = &(*table).slots[i];
        if s.state.load(Ordering::SeqCst) != LIVE {
            continue;
        }
        if restore_slot(s) {
            n += 1;
        }
        if free {
            s.state.store(FREE, Ordering::SeqCst);
        }
    }
    n
}

/// Restores and removes every slot table under [`TABLE_DIR`] whose agent and guardian are both gone (killed
/// together: nobody restored their boosts). Returns one line per table it restored; a table it cannot read is
/// reported and left.
pub fn sweep_stale() -> Vec<String> {
    sweep_stale_in(Path::new(TABLE_DIR))
}

fn sweep_stale_in(dir: &Path) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return done;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.extension().is_none_or(|x| x != "slots") {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        else {
            continue;
        };
        let size = std::mem::size_of::<Table>();
        if file.metadata().map(|m| m.len()).unwrap_or(0) < size as u64 {
            done.push(format!(
                "guardian table {} is too short; left alone",
                path.display()
            ));
            continue;
        }
        let Ok(table) = map_file(&file, size) else {
            continue;
        };
        // SAFETY: mapped above, `size` bytes; unmapped below.
        let header = unsafe { &(*table).header };
        let alive = same_process(header.agent_pid, header.agent_start)
            || same_process(
                header.guardian_pid.load(Ordering::SeqCst),
                header.guardian_start.load(Ordering::SeqCst),
            );
        if header.magic == MAGIC && !alive {
            // SAFETY: both writers are gone.
            let restored = unsafe { restore_all(table, true) };
            let _ = std::fs::remove_file(&path);
            done.push(format!(
                "guardian table of dead agent pid {} ({}): restored {restored} task(s)",
                header.agent_pid,
                path.display()
            ));
        } else if header.magic != MAGIC {
            done.push(format!(
                "{} is not a guardian table; left alone",
                path.display()
            ));
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(table.cast(), size) };
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zeroed table on the heap (every slot FREE), as a fresh file maps.
    struct HeapTable(*mut Table);
    impl HeapTable {
        fn new() -> HeapTable {
            // SAFETY: Table is all integers and atomics; all zeroes is valid.
            HeapTable(
                unsafe { std::alloc::alloc_zeroed(std::alloc::Layout::new::<Table>()) }.cast(),
            )
        }
        // The table stands for the shared mapping the agent writes while the guardian reads: as there, a slot
        // is written through a shared handle.
        #[allow(clippy::mut_from_ref)]
        fn slot(&self, i: usize) -> &mut Slot {
            // SAFETY: i < SLOTS in the tests; the allocation lives as long as self.
            unsafe { &mut (*self.0).slots[i] }
        }
    }
    impl Drop for HeapTable {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.0.cast(), std::alloc::Layout::new::<Table>()) }
        }
    }

    /// A thread of our own that waits until the returned sender is dropped; its tid.
    fn helper_thread() -> (
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
        u32,
    ) {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let helper = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            let _ = rx.recv();
        });
        (tx, helper, tid_rx.recv().unwrap())
    }

    #[test]
    fn the_guardian_waits_for_nothing_while_no_boost_is_live_and_for_the_lease_while_one_is() {
        let table = HeapTable::new();
        // SAFETY: our own table; a header field written before anyone reads it.
        let header = unsafe { &mut (*table.0).header };
        header.lease_ns = 200_000_000;
        let now = monotonic_ns();
        header.heartbeat_ns.store(now, Ordering::SeqCst);
        // A demotion (nice 19) is nothing to revoke: no timeout, and the flag says the guardian sleeps.
        let s = table.slot(7);
        s.kind = TASK;
        s.set = SchedAttr {
            sched_nice: 19,
            ..SchedAttr::default()
        };
        s.state.store(LIVE, Ordering::SeqCst);
        // SAFETY: a table of our own.
        assert_eq!(unsafe { next_look_ms(table.0, now) }, -1);
        assert_eq!(header.guardian_asleep.load(Ordering::SeqCst), 1);
        // A boost: the guardian looks again when the lease of the last heartbeat runs out, awake.
        table.slot(7).state.store(FREE, Ordering::SeqCst);
        table.slot(7).set = SchedAttr::fifo(1);
        table.slot(7).state.store(LIVE, Ordering::SeqCst);
        let wait = unsafe { next_look_ms(table.0, now + 50_000_000) };
        assert!((150..=152).contains(&wait), "{wait} ms");
        assert_eq!(header.guardian_asleep.load(Ordering::SeqCst), 0);
        // The lease ran out (the agent is stopped): look again every WATCH_PERIOD_MS while it stays so.
        assert_eq!(
            unsafe { next_look_ms(table.0, now + 250_000_000) },
            WATCH_PERIOD_MS
        );
        // No lease: nothing is ever revoked, so nothing to wake for.
        header.lease_ns = 0;
        assert_eq!(unsafe { next_look_ms(table.0, now) }, -1);
    }

    #[test]
    fn recording_a_boost_rings_the_doorbell_only_of_a_guardian_that_waits_with_no_timeout() {
        let table = HeapTable::new();
        let doorbell = nix::sys::eventfd::EventFd::from_value_and_flags(
            0,
            nix::sys::eventfd::EfdFlags::EFD_NONBLOCK,
        )
        .unwrap();
        let mut guardian = Guardian {
            table: table.0,
            pid: 0,
            free: (0..SLOTS).rev().collect(),
            doorbell: std::os::fd::OwnedFd::from(doorbell),
        };
        let rang = |g: &Guardian| {
            let mut count = [0u8; 8];
            // SAFETY: an 8-byte read from a non-blocking eventfd of our own.
            unsafe { libc::read(g.doorbell.as_raw_fd(), count.as_mut_ptr().cast(), 8) == 8 }
        };
        let me = std::process::id();
        let niced = SchedAttr {
            sched_nice: 19,
            ..SchedAttr::default()
        };
        let boost = SchedAttr::fifo(1);
        // SAFETY: the header of our own table.
        let asleep = unsafe { &(*table.0).header.guardian_asleep };
        // Awake (it watches the lease already): no ring for a boost.
        let slot = guardian.record((me, me), (0, 0), &boost, &niced).unwrap();
        assert!(!rang(&guardian));
        guardian.release(slot);
        // Asleep: a demotion does not wake it, a boost does — recorded or updated into.
        asleep.store(1, Ordering::SeqCst);
        let slot = guardian.record((me, me), (0, 0), &niced, &niced).unwrap();
        assert!(!rang(&guardian));
        guardian.update(slot, &boost);
        assert!(rang(&guardian));
        guardian.release(slot);
        let slot = guardian.record((me, me), (0, 0), &boost, &niced).unwrap();
        assert!(rang(&guardian));
        guardian.release(slot);
    }

    #[test]
    fn the_guardian_puts_back_a_cpu_mask_the_agent_set() {
        // Unprivileged: a thread of our own, pinned to its first allowed CPU as the agent would pin it, and a
        // table slot that says so; the guardian's restore gives it its own mask back.
        let (tx, helper, tid) = helper_thread();
        let tgid = std::process::id();
        let own = sched::get_affinity(tid).unwrap();
        let first = (0..sched::CPU_MASK_BITS)
            .find(|&c| own[c / 64] & (1 << (c % 64)) != 0)
            .unwrap();
        let pinned = sched::cpu_mask(&[first as u32]).unwrap();
        let attr = sched::get_attr(tid).unwrap();
        let table = HeapTable::new();
        {
            let s = table.slot(3);
            s.tid = tid;
            s.tgid = tgid;
            s.start_time = sched::start_time(tgid, tid).unwrap();
            s.set = attr;
            s.orig = attr;
            s.affinity = 1;
            s.set_mask = pinned;
            s.orig_mask = own;
            s.state.store(LIVE, Ordering::SeqCst);
        }
        sched::set_affinity(tid, &pinned).unwrap();
        assert_eq!(sched::get_affinity(tid).unwrap(), pinned);
        // SAFETY: our own table, no other writer.
        assert_eq!(unsafe { restore_all(table.0, true) }, 1);
        assert_eq!(sched::get_affinity(tid).unwrap(), own);
        assert_eq!(table.slot(3).state.load(Ordering::SeqCst), FREE);
        drop(tx);
        helper.join().unwrap();
    }

    #[test]
    fn a_slot_whose_thread_exec_d_names_the_leader_it_became() {
        // The thread is gone (a tid that never existed with that start time), but the leader has the recorded
        // leader start time: a non-leader thread exec'd, and the leader is the task to restore.
        let tgid = std::process::id();
        let table = HeapTable::new();
        let s = table.slot(0);
        s.tgid = tgid;
        s.tid = u32::MAX - 1;
        s.start_time = 1;
        s.leader_start = sched::start_time(tgid, tgid).unwrap();
        assert_eq!(slot_task(s), Some(tgid));
        // A leader that started at another time is another process: nothing to restore.
        s.leader_start += 1;
        assert_eq!(slot_task(s), None);
        // A live thread is itself, whatever the leader.
        let (tx, helper, tid) = helper_thread();
        s.tid = tid;
        s.start_time = sched::start_time(tgid, tid).unwrap();
        assert_eq!(slot_task(s), Some(tid));
        drop(tx);
        helper.join().unwrap();
    }

    #[test]
    fn only_a_table_whose_agent_and_guardian_are_both_gone_is_swept() {
        // Unprivileged: tables in a directory of our own. One names this process as its agent (alive: left),
        // one names pids that are gone (swept and removed), one is not a table (reported, left).
        let dir =
            std::env::temp_dir().join(format!("cosched-guardian-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let me = std::process::id();
        let write = |name: &str, agent: u32, start: u64| {
            let path = dir.join(name);
            let table = map_table(&path).unwrap();
            // SAFETY: freshly mapped.
            unsafe {
                (*table).header.magic = MAGIC;
                (*table).header.agent_pid = agent;
                (*table).header.agent_start = start;
                libc::munmap(table.cast(), std::mem::size_of::<Table>());
            }
            path
        };
        let live = write("agent-live.slots", me, sched::start_time(me, me).unwrap());
        let dead = write("agent-dead.slots", me, 1); // our pid, another start time: a reused pid
        std::fs::write(dir.join("junk.slots"), b"x").unwrap();
        let report = sweep_stale_in(&dir);
        assert!(live.exists(), "a live agent's table was swept: {report:?}");
        assert!(!dead.exists(), "a dead agent's table was left: {report:?}");
        assert_eq!(report.len(), 2, "{report:?}");
        assert!(
            report.iter().any(|l| l.contains("restored 0 task(s)")),
            "{report:?}"
        );
        assert!(report.iter().any(|l| l.contains("too short")), "{report:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
