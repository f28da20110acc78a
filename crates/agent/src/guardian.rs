//! The guardian: whatever happens to the agent (SIGTERM, panic, `kill -9`), no managed task stays boosted.
//!
//! ## Problem
//! A boost is a `SCHED_FIFO` policy left on a task that the agent must take back. If the agent dies between the
//! two, a spin-waiting task would keep its CPU (up to the kernel's 950 ms/s RT throttle) for good.
//!
//! ## Approach
//! Before it loads anything, the agent forks a small guardian process and shares with it an anonymous
//! `MAP_SHARED` table of slots. Before each `sched_setattr` (or `sched_setaffinity`) that changes a task, the
//! agent writes the slot (tid, start time, the attributes and CPU mask it sets, the task's own) and marks it
//! live; after
//! restoring, it marks the slot free. The guardian does nothing but wait on a pidfd of the agent (no wake-ups
//! while the agent runs, so it costs nothing); when that pidfd becomes readable (the agent exited, however), it
//! restores every live slot whose task is still the same task (tid + start time) and still has exactly the
//! attributes (and CPU mask) the agent set, then exits. It runs in its own session and ignores SIGINT/SIGTERM/SIGHUP, so a
//! signal to the agent's process group does not take it down with the agent. If the guardian dies first, the
//! agent sees its pidfd, restores everything itself and stops.
//!
//! ## Terminology
//! - slot state: `FREE`, `LIVE` (the task may hold `set`; restore to `orig`).
//! - `start_time`: field 22 of `/proc/<tgid>/task/<tid>/stat`; with the tid it identifies the task across pid
//!   reuse.

use crate::sched::{self, CpuMask, SchedAttr};
use std::sync::atomic::{AtomicU32, Ordering};

/// Slots in the shared table (boosted or demoted threads at one time).
pub const SLOTS: usize = 1024;

const FREE: u32 = 0;
const LIVE: u32 = 1;

/// One shared slot. `state` is the only field read concurrently; the others are written while the slot is
/// `FREE` (by the agent alone) and read by the guardian only after the agent is dead.
#[repr(C)]
struct Slot {
    state: AtomicU32,
    tid: u32,
    tgid: u32,
    /// 1 when the agent also changed the task's CPU affinity (`set_mask`; its own is `orig_mask`).
    affinity: u32,
    start_time: u64,
    set: SchedAttr,
    orig: SchedAttr,
    set_mask: CpuMask,
    orig_mask: CpuMask,
}

/// The agent's handle on the guardian and the shared table.
pub struct Guardian {
    table: *mut Slot,
    pid: u32,
    free: Vec<usize>,
}

/// A reserved slot, handed back to [`Guardian::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotId(usize);

impl Guardian {
    /// Maps the table and forks the guardian. Call before creating threads or loading BPF.
    pub fn start() -> anyhow::Result<Guardian> {
        let size = SLOTS * std::mem::size_of::<Slot>();
        // SAFETY: anonymous shared mapping, checked for failure; zeroed by the kernel (= all slots FREE).
        let table = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if table == libc::MAP_FAILED {
            anyhow::bail!(
                "mmap of the guardian table failed: {}",
                std::io::Error::last_os_error()
            );
        }
        let table = table.cast::<Slot>();
        let agent = std::process::id();
        // SAFETY: fork; the child only runs `guard`, which uses plain syscalls and /proc reads, and never
        // returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            anyhow::bail!(
                "fork of the guardian failed: {}",
                std::io::Error::last_os_error()
            );
        }
        if pid == 0 {
            guard(table, agent);
        }
        Ok(Guardian {
            table,
            pid: pid as u32,
            free: (0..SLOTS).rev().collect(),
        })
    }

    /// The guardian's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Records that `target` is about to be given `set` (its attributes before were `orig`). Must be called
    /// BEFORE the `sched_setattr`. `None` if the table is full (then do not change the task).
    pub fn record(
        &mut self,
        tgid: u32,
        tid: u32,
        start_time: u64,
        set: &SchedAttr,
        orig: &SchedAttr,
    ) -> Option<SlotId> {
        let i = self.free.pop()?;
        // SAFETY: i < SLOTS; the slot is FREE, so the guardian does not read it, and only this thread writes.
        unsafe {
            let s = self.table.add(i);
            (*s).tid = tid;
            (*s).tgid = tgid;
            (*s).start_time = start_time;
            (*s).set = *set;
            (*s).orig = *orig;
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
        unsafe {
            let s = self.table.add(slot.0);
            (*s).state.store(FREE, Ordering::SeqCst);
            (*s).set = *set;
            (*s).state.store(LIVE, Ordering::SeqCst);
        }
    }

    /// Records in a live slot that the task is about to get CPU affinity `set` (its own is `orig`), or with
    /// `None` that its own affinity is back. Call BEFORE the `sched_setaffinity`, like [`record`](Self::record).
    pub fn update_affinity(&mut self, slot: SlotId, masks: Option<(&CpuMask, &CpuMask)>) {
        // SAFETY: as in `update`.
        unsafe {
            let s = self.table.add(slot.0);
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
        unsafe {
            (*self.table.add(slot.0))
                .state
                .store(FREE, Ordering::SeqCst)
        };
        self.free.push(slot.0);
    }

    /// Live slots (for statistics and tests).
    pub fn live(&self) -> usize {
        SLOTS - self.free.len()
    }
}

/// The guardian's whole life: wait for the agent to go, restore, exit.
fn guard(table: *mut Slot, agent: u32) -> ! {
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
    if let Ok(fd) = sched::pidfd_open(agent, 0) {
        // The agent may have died before pidfd_open; then getppid() is no longer the agent.
        // SAFETY: getppid cannot fail.
        if unsafe { libc::getppid() } as u32 == agent {
            use std::os::fd::AsRawFd;
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            while unsafe { libc::poll(&mut p, 1, -1) } <= 0 {}
        }
    }
    let restored = restore_all(table);
    if restored > 0 {
        eprintln!("cosched-guard: the agent is gone; restored {restored} task(s) to their original policy");
    }
    // SAFETY: leave without running the agent's atexit handlers or destructors.
    unsafe { libc::_exit(0) }
}

/// Restores every live slot whose task is unchanged since the agent wrote it. Returns how many it restored.
fn restore_all(table: *mut Slot) -> usize {
    let mut n = 0;
    for i in 0..SLOTS {
        // SAFETY: i < SLOTS; the agent is dead, nobody else writes.
        let s = unsafe { &*table.add(i) };
        if s.state.load(Ordering::SeqCst) != LIVE {
            continue;
        }
        if sched::start_time(s.tgid, s.tid).ok() != Some(s.start_time) {
            continue; // exited, or the tid now belongs to another task
        }
        let Ok(now) = sched::get_attr(s.tid) else {
            continue;
        };
        let same = now.sched_policy == s.set.sched_policy
            && now.sched_priority == s.set.sched_priority
            && (now.is_realtime() || now.sched_nice == s.set.sched_nice);
        let mut restored = same && sched::set_attr(s.tid, &s.orig.restorable()).is_ok();
        if s.affinity != 0 && sched::get_affinity(s.tid).ok() == Some(s.set_mask) {
            restored |= sched::set_affinity(s.tid, &s.orig_mask).is_ok();
        }
        if restored {
            n += 1;
        }
        s.state.store(FREE, Ordering::SeqCst);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guardian_puts_back_a_cpu_mask_the_agent_set() {
        // Unprivileged: a thread of our own, pinned to its first allowed CPU as the agent would pin it, and a
        // table slot that says so; the guardian's restore gives it its own mask back.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let helper = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            let _ = rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        let tgid = std::process::id();
        let own = sched::get_affinity(tid).unwrap();
        let first = (0..sched::CPU_MASK_BITS)
            .find(|&c| own[c / 64] & (1 << (c % 64)) != 0)
            .unwrap();
        let pinned = sched::cpu_mask(&[first as u32]).unwrap();
        let attr = sched::get_attr(tid).unwrap();
        // SAFETY: all-integer fields and an AtomicU32: all zeroes is every slot FREE.
        let mut table: Vec<Slot> = (0..SLOTS).map(|_| unsafe { std::mem::zeroed() }).collect();
        {
            let s = &mut table[3];
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
        assert_eq!(restore_all(table.as_mut_ptr()), 1);
        assert_eq!(sched::get_affinity(tid).unwrap(), own);
        assert_eq!(table[3].state.load(Ordering::SeqCst), FREE);
        drop(tx);
        helper.join().unwrap();
    }
}
