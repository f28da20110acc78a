//! Acting on tasks: `sched_getattr` / `sched_setattr`, and pidfd-guarded targets so that a reused pid can never
//! make the agent touch a stranger.
//!
//! ## The boost (seed `000_e8004e1596fde6a5.txt` §3.3.2, `002_53dfbd94bd660dc4.txt` §2.2.3)
//! The seeds raise the receiver to the maximum time-sharing priority and preempt. On Linux (EEVDF) a temporary
//! nice -20 does not preempt promptly (`notes/linux-mechanisms.md`), so a boost is `SCHED_FIFO` at a low real-time
//! priority with `SCHED_FLAG_RESET_ON_FORK` (children start back in `SCHED_OTHER`), held for a short window and
//! then replaced by the task's ORIGINAL attributes (policy, nice, priority, custom slice `sched_runtime` — 0,
//! the kernel's default, when it reads as the default: [`default_slice_as_zero`] — reset-on-fork flag) as read
//! just before the boost.
//!
//! ## Pid reuse
//! Every [`Target`] holds a pidfd of the thread (`PIDFD_THREAD`, Linux 6.9+) opened while the agent knew the
//! thread was managed. Before touching the tid the agent checks the pidfd still names a live task; after the
//! `sched_setattr` it checks again and, if the task died in between (so the tid may already be a stranger's),
//! it puts back the attributes it read a moment before — the stranger's own.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Linux `struct sched_attr` (the 56-byte version with utilisation clamps).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
    pub sched_util_min: u32,
    pub sched_util_max: u32,
}

pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
/// `PIDFD_THREAD` (= `O_EXCL`): a pidfd for one thread rather than a thread-group leader.
pub const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

impl SchedAttr {
    /// The boost: `SCHED_FIFO` at `priority`, reset on fork.
    pub fn fifo(priority: u32) -> Self {
        SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_policy: SCHED_FIFO,
            sched_flags: SCHED_FLAG_RESET_ON_FORK,
            sched_priority: priority,
            ..Default::default()
        }
    }

    /// The attributes to write back to restore `self` as read by `sched_getattr`: only the policy, nice or
    /// priority, custom slice and reset-on-fork flag (utilisation clamps are left alone).
    pub fn restorable(&self) -> Self {
        SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_policy: self.sched_policy,
            sched_flags: self.sched_flags & SCHED_FLAG_RESET_ON_FORK,
            sched_nice: self.sched_nice,
            sched_priority: self.sched_priority,
            sched_runtime: self.sched_runtime,
            sched_deadline: self.sched_deadline,
            sched_period: self.sched_period,
            ..Default::default()
        }
    }

    /// Whether this is real-time (the state a boost leaves behind).
    pub fn is_realtime(&self) -> bool {
        self.sched_policy == SCHED_FIFO || self.sched_policy == SCHED_RR
    }

    /// A short policy name for messages.
    pub fn policy_name(&self) -> &'static str {
        match self.sched_policy {
            SCHED_OTHER => "SCHED_OTHER",
            SCHED_FIFO => "SCHED_FIFO",
            SCHED_RR => "SCHED_RR",
            SCHED_BATCH => "SCHED_BATCH",
            SCHED_IDLE => "SCHED_IDLE",
            SCHED_DEADLINE => "SCHED_DEADLINE",
            _ => "unknown",
        }
    }
}

/// Errors acting on a task.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error("task {tid} is gone (exited); nothing was changed")]
    Gone { tid: u32 },
    #[error("sched_getattr({tid}) failed: {source}")]
    Get { tid: u32, source: std::io::Error },
    #[error("sched_setattr({tid}, {policy}) failed: {source}{hint}")]
    Set {
        tid: u32,
        policy: &'static str,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("pidfd_open({tid}) failed: {source}")]
    Pidfd { tid: u32, source: std::io::Error },
    #[error("sched_{op}affinity({tid}) failed: {source}")]
    Affinity {
        tid: u32,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("CPU {cpu} is beyond the {CPU_MASK_BITS} CPUs an affinity mask of the agent holds")]
    CpuOutOfRange { cpu: u32 },
}

/// CPUs an affinity mask holds.
pub const CPU_MASK_BITS: usize = 1024;

/// A CPU affinity mask, as `sched_setaffinity` takes it (bit `c` of word `c / 64` = CPU `c`).
pub type CpuMask = [u64; CPU_MASK_BITS / 64];

/// The mask of `cpus`.
pub fn cpu_mask(cpus: &[u32]) -> Result<CpuMask, SchedError> {
    let mut mask = [0u64; CPU_MASK_BITS / 64];
    for &cpu in cpus {
        if cpu as usize >= CPU_MASK_BITS {
            return Err(SchedError::CpuOutOfRange { cpu });
        }
        mask[cpu as usize / 64] |= 1 << (cpu % 64);
    }
    Ok(mask)
}

/// `sched_getaffinity(tid)`.
pub fn get_affinity(tid: u32) -> Result<CpuMask, SchedError> {
    let mut mask = [0u64; CPU_MASK_BITS / 64];
    // SAFETY: the kernel writes at most the given size into `mask`, which is exactly that large.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            tid as libc::pid_t,
            std::mem::size_of::<CpuMask>(),
            mask.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(affinity_error(tid, "get"));
    }
    Ok(mask)
}

/// `sched_setaffinity(tid, mask)`.
pub fn set_affinity(tid: u32, mask: &CpuMask) -> Result<(), SchedError> {
    // SAFETY: `mask` is a fully initialised buffer of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as libc::pid_t,
            std::mem::size_of::<CpuMask>(),
            mask.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(affinity_error(tid, "set"));
    }
    Ok(())
}

fn affinity_error(tid: u32, op: &'static str) -> SchedError {
    let source = std::io::Error::last_os_error();
    if source.raw_os_error() == Some(libc::ESRCH) {
        SchedError::Gone { tid }
    } else {
        SchedError::Affinity { tid, op, source }
    }
}

/// `sched_getattr(tid)`, with a time-sharing thread's slice at the kernel's default read as 0 (see
/// [`default_slice_as_zero`]).
pub fn get_attr(tid: u32) -> Result<SchedAttr, SchedError> {
    raw_attr(tid).map(|attr| default_slice_as_zero(attr, base_slice_ns()))
}

/// Whether `policy` is one of the fair class's, the ones with a slice (SCHED_IDLE included: not the set the
/// agent boosts, `actuator::time_sharing`).
fn fair_class_policy(policy: u32) -> bool {
    matches!(policy, SCHED_OTHER | SCHED_BATCH | SCHED_IDLE)
}

/// `sched_getattr` reports a time-sharing thread's slice (`se.slice`) in `sched_runtime` whether the slice is
/// the kernel's default or one set with `sched_setattr`, and writing that number back makes it a custom slice
/// (`se.custom_slice = 1`) that no longer follows the default. So the value equal to the default `base_slice`
/// is read as 0, which is what restores it as the default. A custom slice set to exactly the default becomes the
/// default on restore: the same slice either way.
pub fn default_slice_as_zero(mut attr: SchedAttr, base_slice: Option<u64>) -> SchedAttr {
    if fair_class_policy(attr.sched_policy) && Some(attr.sched_runtime) == base_slice {
        attr.sched_runtime = 0;
    }
    attr
}

/// The kernel's default slice for time-sharing threads (`sysctl_sched_base_slice`, ns; its debugfs file is not
/// always readable): what a thread of the agent's own reads back after asking for the default (`sched_runtime` 0)
/// with `sched_setattr`. Learned once; `None` if that failed (then slices are read as reported). Learn it before
/// going real-time with reset-on-fork ([`crate::guardian::Guardian::start`] does, for agent and guardian): the
/// thread would start in the fair class and wait there behind any real-time spinners.
pub fn base_slice_ns() -> Option<u64> {
    static BASE_SLICE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *BASE_SLICE.get_or_init(|| {
        // A thread of its own, so the agent's threads keep their attributes.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let me = nix::unistd::gettid().as_raw() as u32;
                    let own = raw_attr(me).ok()?;
                    let default_slice = SchedAttr {
                        sched_policy: SCHED_OTHER,
                        sched_nice: own.sched_nice,
                        ..Default::default()
                    };
                    set_attr(me, &default_slice).ok()?;
                    raw_attr(me)
                        .ok()
                        .map(|a| a.sched_runtime)
                        .filter(|&ns| ns > 0)
                })
                .join()
                .ok()
                .flatten()
        })
    })
}

/// `sched_getattr(tid)` as the kernel reports it.
fn raw_attr(tid: u32) -> Result<SchedAttr, SchedError> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most `size` bytes into `attr`, which is exactly that large.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        let source = std::io::Error::last_os_error();
        return Err(if source.raw_os_error() == Some(libc::ESRCH) {
            SchedError::Gone { tid }
        } else {
            SchedError::Get { tid, source }
        });
    }
    Ok(attr)
}

/// `sched_setattr(tid, attr)`.
pub fn set_attr(tid: u32, attr: &SchedAttr) -> Result<(), SchedError> {
    let mut a = *attr;
    a.size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `a` is a valid, fully initialised sched_attr of the size it declares.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid as libc::pid_t,
            &a as *const SchedAttr,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        let source = std::io::Error::last_os_error();
        if source.raw_os_error() == Some(libc::ESRCH) {
            return Err(SchedError::Gone { tid });
        }
        let hint = match source.raw_os_error() {
            Some(libc::EPERM) if a.is_realtime() => {
                " (not root, or the task's cpu cgroup has cpu.rt_runtime_us = 0: with RT group scheduling a \
                 cgroup needs an RT budget before SCHED_FIFO works inside it)"
            }
            Some(libc::EPERM) => " (the agent must run as root)",
            _ => "",
        };
        return Err(SchedError::Set {
            tid,
            policy: a.policy_name(),
            source,
            hint,
        });
    }
    Ok(())
}

/// `PF_KTHREAD` in the flags of `/proc/PID/stat` (`include/linux/sched.h`).
const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether a `/proc/PID/stat` line is a kernel thread's (`PF_KTHREAD` in its flags, field 9); `None` if the
/// line is not one. The command name (field 2) may hold spaces and parentheses, so fields are counted after
/// its last `)`.
pub fn kernel_thread_in_stat(stat: &str) -> Option<bool> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state (3), ppid, pgrp, session, tty_nr, tpgid, flags (9).
    let flags: u64 = rest.split_whitespace().nth(6)?.parse().ok()?;
    Some(flags & PF_KTHREAD != 0)
}

/// Whether `pid` is a kernel thread (kthreadd, a worker): never managed, since the agent would then manage
/// every kernel thread kthreadd starts.
pub fn is_kernel_thread(pid: u32) -> std::io::Result<bool> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    kernel_thread_in_stat(&stat).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unreadable /proc/{pid}/stat"),
        )
    })
}

/// Whether user `uid` may have process `pid` managed: root may have any process managed; anyone else only a
/// process that is theirs through and through — real, effective, saved and filesystem uid all `uid` (a setuid
/// program they started runs as its owner, not as them). The error says why not, for the requester.
pub fn owned_by(pid: u32, uid: u32) -> anyhow::Result<()> {
    if uid == 0 {
        return Ok(());
    }
    let ids = uids(pid)?;
    if !ids
        .iter()
        .all(|&id| cosched_localsock::may_act_for(uid, id))
    {
        anyhow::bail!(
            "pid {pid} is not yours (its real, effective, saved and filesystem uids are {ids:?}; you are uid \
             {uid}): a user may have only their own processes managed; root may have any"
        );
    }
    Ok(())
}

/// The real uid of a process.
pub fn real_uid(pid: u32) -> anyhow::Result<u32> {
    Ok(uids(pid)?[0])
}

/// A process's real, effective, saved and filesystem uids (`/proc/<pid>/status`).
fn uids(pid: u32) -> anyhow::Result<[u32; 4]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| anyhow::anyhow!("pid {pid} is not a live process ({e})"))?;
    uids_in_status(&status)
        .ok_or_else(|| anyhow::anyhow!("pid {pid}: no Uid line in /proc/{pid}/status"))
}

/// The four uids of a `/proc/<pid>/status` text's `Uid:` line (real, effective, saved, filesystem).
pub fn uids_in_status(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|f| f.parse::<u32>().ok());
    let mut out = [0; 4];
    for slot in &mut out {
        *slot = ids.next()??;
    }
    Some(out)
}

/// `pidfd_open(pid, flags)`.
pub fn pidfd_open(pid: u32, flags: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall; on success it returns a new file descriptor that we own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_pidfd_open,
            pid as libc::pid_t,
            flags as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the task behind a pidfd is still alive (`pidfd_send_signal(fd, 0)`).
pub fn pidfd_alive(fd: &OwnedFd) -> bool {
    // SAFETY: signal 0 only checks existence and permission; null siginfo is allowed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    rc == 0
}

/// The start time of a thread (field 22 of `/proc/<tgid>/task/<tid>/stat`, clock ticks since boot): with the
/// tid it names a task uniquely, which the guardian uses to recognise the tasks the agent boosted.
pub fn start_time(tgid: u32, tid: u32) -> std::io::Result<u64> {
    let mut s = String::new();
    File::open(format!("/proc/{tgid}/task/{tid}/stat"))?.read_to_string(&mut s)?;
    parse_stat_field(&s, 22).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad /proc/{tid}/stat"),
        )
    })
}

/// A thread's nice level as the kernel keeps it, whatever its policy (`getpriority`, one system call):
/// `sched_getattr` reports no nice for a real-time task, but a renice of a boosted task is kept.
pub fn nice_of(tid: u32) -> Option<i32> {
    // SAFETY: errno is cleared first, since -1 is also a valid nice level.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        (*libc::__errno_location() == 0).then_some(nice)
    }
}

/// What to write back to a thread the agent gave `set` (its own attributes were `orig`), re-read just now
/// (`now`, and `nice_now` from [`nice_of`]): `None` when someone else changed its policy, priority or (for a
/// time-sharing `set`) nice level since — theirs stands; otherwise `orig`. For a boost, `set.sched_nice` is the
/// nice level the kernel held when the agent boosted (it ignores the field for a real-time policy and keeps the
/// level): if the level is another now, the task was reniced during the boost and keeps the new level.
pub fn write_back(
    orig: &SchedAttr,
    set: &SchedAttr,
    now: &SchedAttr,
    nice_now: Option<i32>,
) -> Option<SchedAttr> {
    let unchanged = now.sched_policy == set.sched_policy
        && now.sched_priority == set.sched_priority
        && (set.is_realtime() || now.sched_nice == set.sched_nice);
    if !unchanged {
        return None;
    }
    let mut back = orig.restorable();
    if set.is_realtime() && !orig.is_realtime() {
        if let Some(reniced) = nice_now.filter(|&n| n != set.sched_nice) {
            back.sched_nice = reniced;
        }
    }
    Some(back)
}

/// The writes that take a thread from a real-time policy to `attr`, in order. A real-time task's nice level
/// is only a number to the kernel: leaving the real-time class with another nice level sets the fair-class
/// weight without rescaling the lag the thread saved when it entered the class (`set_load_weight` finds the
/// real-time class, which has no `reweight_task`), so a lag saved at nice 19's weight (15) comes back 68 times
/// too large at nice 0's (1024). Such a thread lands far from the run queue's average and drags it, and the
/// other tasks of that queue — the local user's included — can find nothing eligible while the current task
/// runs on (measured: a local 1 ms sleeper waited 79 ms behind a hog after a nice-19 thread was boosted and
/// then restored at nice 0; docs/lab-local.md). So the class changes first at the level the kernel holds
/// (`held_nice`, from [`nice_of`]), and the level changes second, inside the fair class, where the kernel
/// rescales the lag. From a time-sharing policy, or to a real-time one, one write is right.
pub fn writes_from_realtime(attr: &SchedAttr, held_nice: Option<i32>) -> Vec<SchedAttr> {
    match held_nice {
        Some(held) if !attr.is_realtime() && held != attr.sched_nice => {
            vec![
                SchedAttr {
                    sched_nice: held,
                    ..*attr
                },
                *attr,
            ]
        }
        _ => vec![*attr],
    }
}

/// The writes that take thread `tid`, now under `now`, to `attr`: [`writes_from_realtime`] when it is real-time
/// now (the level it holds read with [`nice_of`]), else the one write.
pub fn writes_to(tid: u32, now: &SchedAttr, attr: &SchedAttr) -> Vec<SchedAttr> {
    if now.is_realtime() {
        writes_from_realtime(attr, nice_of(tid))
    } else {
        vec![*attr]
    }
}

/// Field `n` (1-based, as in proc(5)) of a `/proc/.../stat` line; the command name in parentheses may hold
/// spaces, so counting starts after the last `)`.
pub fn parse_stat_field(stat: &str, n: usize) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ')' comes field 3 (state).
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

/// A thread the agent may act on, pinned by a pidfd.
#[derive(Debug)]
pub struct Target {
    pub tid: u32,
    pub tgid: u32,
    pub start_time: u64,
    pidfd: OwnedFd,
}

impl Target {
    /// Opens a thread pidfd for `tid` (falls back to a process pidfd when `tid == tgid` on kernels without
    /// `PIDFD_THREAD`).
    pub fn open(tgid: u32, tid: u32) -> Result<Target, SchedError> {
        let pidfd = match pidfd_open(tid, PIDFD_THREAD) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && tid == tgid => {
                pidfd_open(tid, 0).map_err(|source| SchedError::Pidfd { tid, source })?
            }
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return Err(SchedError::Gone { tid })
            }
            Err(source) => return Err(SchedError::Pidfd { tid, source }),
        };
        let start_time = start_time(tgid, tid).map_err(|_| SchedError::Gone { tid })?;
        Ok(Target {
            tid,
            tgid,
            start_time,
            pidfd,
        })
    }

    /// Whether the thread still lives.
    pub fn alive(&self) -> bool {
        pidfd_alive(&self.pidfd)
    }

    /// Reads the thread's attributes, if it is alive.
    pub fn get(&self) -> Result<SchedAttr, SchedError> {
        if !self.alive() {
            return Err(SchedError::Gone { tid: self.tid });
        }
        get_attr(self.tid)
    }

    /// Reads the thread's CPU affinity, if it is alive.
    pub fn get_affinity(&self) -> Result<CpuMask, SchedError> {
        if !self.alive() {
            return Err(SchedError::Gone { tid: self.tid });
        }
        get_affinity(self.tid)
    }

    /// Writes a CPU affinity, guarded by the pidfd on both sides like [`set`](Self::set): if the thread died
    /// meanwhile, `prior` is written back and `Gone` returned.
    pub fn set_affinity(&self, mask: &CpuMask, prior: &CpuMask) -> Result<(), SchedError> {
        if !self.alive() {
            return Err(SchedError::Gone { tid: self.tid });
        }
        set_affinity(self.tid, mask)?;
        if !self.alive() {
            let _ = set_affinity(self.tid, prior);
            return Err(SchedError::Gone { tid: self.tid });
        }
        Ok(())
    }

    /// Writes `attr` to a thread now under `now` (re-read, or what the agent gave it): from a real-time policy
    /// the class changes at the nice level the kernel holds and the level after ([`writes_from_realtime`]).
    /// `prior` as in [`set`](Self::set).
    pub fn switch(
        &self,
        attr: &SchedAttr,
        now: &SchedAttr,
        prior: &SchedAttr,
    ) -> Result<(), SchedError> {
        for step in writes_to(self.tid, now, attr) {
            self.set(&step, prior)?;
        }
        Ok(())
    }

    /// Writes `attr`, guarded by the pidfd on both sides. `prior` is what `get` returned just before: if the
    /// thread died meanwhile, `prior` (whoever's it was) is written back and `Gone` returned.
    pub fn set(&self, attr: &SchedAttr, prior: &SchedAttr) -> Result<(), SchedError> {
        if !self.alive() {
            return Err(SchedError::Gone { tid: self.tid });
        }
        set_attr(self.tid, attr)?;
        if !self.alive() {
            let _ = set_attr(self.tid, &prior.restorable());
            return Err(SchedError::Gone { tid: self.tid });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn leaving_the_realtime_class_changes_class_at_the_held_nice_then_the_nice() {
        let own = SchedAttr {
            sched_nice: 0,
            ..Default::default()
        };
        // Boosted while demoted (the kernel holds 19), restored to its own 0: the class first, at 19.
        let writes = writes_from_realtime(&own, Some(19));
        assert_eq!(
            writes
                .iter()
                .map(|w| (w.sched_policy, w.sched_nice))
                .collect::<Vec<_>>(),
            vec![(SCHED_OTHER, 19), (SCHED_OTHER, 0)]
        );
        // Held level equal to the target's, unknown, or another real-time policy: one write.
        assert_eq!(writes_from_realtime(&own, Some(0)), vec![own]);
        assert_eq!(writes_from_realtime(&own, None), vec![own]);
        let fifo = SchedAttr::fifo(1);
        assert_eq!(writes_from_realtime(&fifo, Some(19)), vec![fifo]);
    }

    #[test]
    fn a_write_back_keeps_what_others_changed_since() {
        let own = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_nice: 3,
            ..Default::default()
        };
        // Boosted at its own nice 3 (the kernel's level then, recorded in the boost's sched_nice).
        let boost = SchedAttr {
            sched_nice: 3,
            ..SchedAttr::fifo(1)
        };
        // Still boosted as the agent left it: its own attributes back; reniced to 7 during the boost: kept.
        assert_eq!(
            write_back(&own, &boost, &boost, Some(3)),
            Some(own.restorable())
        );
        let reniced = write_back(&own, &boost, &boost, Some(7)).unwrap();
        assert_eq!((reniced.sched_policy, reniced.sched_nice), (SCHED_OTHER, 7));
        // Demoted by the agent to 19, then boosted: the kernel still holds 19, which is the agent's, not a
        // renice: its own 3 comes back.
        let boost_from_demoted = SchedAttr {
            sched_nice: 19,
            ..SchedAttr::fifo(1)
        };
        assert_eq!(
            write_back(&own, &boost_from_demoted, &SchedAttr::fifo(1), Some(19)),
            Some(own.restorable())
        );
        // Someone made it SCHED_FIFO 50 meanwhile, or back to SCHED_OTHER: left as they set it.
        assert_eq!(
            write_back(&own, &boost, &SchedAttr::fifo(50), Some(3)),
            None
        );
        assert_eq!(write_back(&own, &boost, &own, Some(3)), None);
        // Demoted to nice 19 by the agent, reniced to 5 by its owner since: left at 5; still 19: back to 3.
        let demoted = SchedAttr {
            sched_nice: 19,
            ..own
        };
        let by_owner = SchedAttr {
            sched_nice: 5,
            ..own
        };
        assert_eq!(write_back(&own, &demoted, &by_owner, Some(5)), None);
        assert_eq!(
            write_back(&own, &demoted, &demoted, Some(19)),
            Some(own.restorable())
        );
    }

    #[test]
    fn a_slice_at_the_default_reads_as_zero_and_a_custom_one_as_set() {
        let base = base_slice_ns().expect("the default slice is learned from a thread of our own");
        // In a thread of its own: this one's attributes are the test harness's.
        std::thread::spawn(move || {
            let me = nix::unistd::gettid().as_raw() as u32;
            let own = get_attr(me).unwrap();
            assert_eq!(own.sched_runtime, 0, "a fresh thread has the default slice");
            let custom = SchedAttr {
                sched_policy: SCHED_OTHER,
                sched_nice: own.sched_nice,
                sched_runtime: base + 100_000,
                ..Default::default()
            };
            match set_attr(me, &custom) {
                Ok(()) => {
                    assert_eq!(get_attr(me).unwrap().sched_runtime, base + 100_000);
                    assert_eq!(raw_attr(me).unwrap().sched_runtime, base + 100_000);
                }
                Err(e) => eprintln!("skipping the custom-slice half: {e}"),
            }
        })
        .join()
        .unwrap();
        // The rule itself: only a time-sharing policy's slice at the default is read as 0.
        let other = SchedAttr {
            sched_runtime: base,
            ..Default::default()
        };
        assert_eq!(default_slice_as_zero(other, Some(base)).sched_runtime, 0);
        assert_eq!(
            default_slice_as_zero(other, Some(base + 1)).sched_runtime,
            base
        );
        assert_eq!(default_slice_as_zero(other, None).sched_runtime, base);
        let deadline = SchedAttr {
            sched_policy: SCHED_DEADLINE,
            ..other
        };
        assert_eq!(
            default_slice_as_zero(deadline, Some(base)).sched_runtime,
            base
        );
    }

    #[test]
    fn the_nice_level_is_read_whatever_the_policy() {
        let me = nix::unistd::gettid().as_raw() as u32;
        assert_eq!(nice_of(me), Some(get_attr(me).unwrap().sched_nice));
    }

    #[test]
    fn kernel_threads_are_told_by_their_stat_flags() {
        // kthreadd on this kernel: flags 2129984 = 0x208040, PF_KTHREAD (0x200000) set.
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 22 0 0";
        assert_eq!(kernel_thread_in_stat(kthreadd), Some(true));
        // A user process whose name holds ") S 0 0 0 0 -1 2129984": counted after the last ')', flags 4194560.
        let tricky = "77 (a) S 0 0 0 0 -1 2129984 x) S 1 77 77 0 -1 4194560 120 0 0 0";
        assert_eq!(kernel_thread_in_stat(tricky), Some(false));
        assert_eq!(kernel_thread_in_stat("garbage"), None);
        // And on this machine: pid 2 is kthreadd, this test is not a kernel thread.
        assert!(is_kernel_thread(2).unwrap());
        assert!(!is_kernel_thread(std::process::id()).unwrap());
    }
    use super::*;

    #[test]
    fn the_uid_line_gives_real_effective_saved_and_filesystem_uids() {
        let status = "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(uids_in_status(status), Some([1000, 0, 0, 0]));
        assert_eq!(uids_in_status("Name:\tx\nUid:\t1 2\n"), None);
        assert_eq!(uids_in_status("Name:\tx\n"), None);
    }

    #[test]
    fn a_user_may_have_only_their_own_processes_managed() {
        let me = std::process::id();
        let my_uid = nix::unistd::getuid().as_raw();
        owned_by(me, my_uid).unwrap();
        // Root may have anything managed; anyone else not a process of another uid.
        owned_by(me, 0).unwrap();
        let stranger = my_uid.wrapping_add(4242);
        let err = owned_by(me, stranger).unwrap_err().to_string();
        assert!(
            err.contains("not yours") && err.contains(&stranger.to_string()),
            "{err}"
        );
        let err = owned_by(u32::MAX - 1, stranger).unwrap_err().to_string();
        assert!(err.contains("not a live process"), "{err}");
    }

    #[test]
    fn stat_fields_survive_spaces_in_comm() {
        // Fields: 1 pid, 2 comm, 3 state, 4 ppid, ..., 14 utime, 15 stime, ..., 22 starttime.
        let line = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 12345 1000 10";
        assert_eq!(parse_stat_field(line, 3), None); // 'S' is not a number
        assert_eq!(parse_stat_field(line, 4), Some(1));
        assert_eq!(parse_stat_field(line, 14), Some(7));
        assert_eq!(parse_stat_field(line, 15), Some(3));
        assert_eq!(parse_stat_field(line, 22), Some(12345));
        assert_eq!(parse_stat_field(line, 99), None);
    }

    #[test]
    fn restorable_keeps_policy_nice_slice_and_reset_flag_only() {
        let read = SchedAttr {
            size: 56,
            sched_policy: SCHED_OTHER,
            sched_flags: SCHED_FLAG_RESET_ON_FORK | 0x60, // reset-on-fork + util-clamp flags
            sched_nice: 5,
            sched_runtime: 3_000_000,
            sched_util_min: 10,
            ..Default::default()
        };
        let r = read.restorable();
        assert_eq!(r.sched_flags, SCHED_FLAG_RESET_ON_FORK);
        assert_eq!(
            (r.sched_nice, r.sched_runtime, r.sched_util_min),
            (5, 3_000_000, 0)
        );
    }

    #[test]
    fn cpu_masks_set_one_bit_per_cpu_and_reject_cpus_beyond_the_mask() {
        let m = cpu_mask(&[0, 3, 64, 1023]).unwrap();
        assert_eq!((m[0], m[1], m[15]), (0b1001, 1, 1 << 63));
        assert!(matches!(
            cpu_mask(&[1024]),
            Err(SchedError::CpuOutOfRange { cpu: 1024 })
        ));
    }

    #[test]
    fn own_affinity_reads_back_and_is_written_unchanged() {
        // Unprivileged: our own thread's mask, written back as it was.
        let tid = nix::unistd::gettid().as_raw() as u32;
        let t = Target::open(std::process::id(), tid).unwrap();
        let mask = t.get_affinity().unwrap();
        assert!(mask.iter().any(|w| *w != 0));
        t.set_affinity(&mask, &mask).unwrap();
        assert_eq!(t.get_affinity().unwrap(), mask);
    }

    #[test]
    fn own_thread_attributes_read_back() {
        // Reading is unprivileged: our own thread is SCHED_OTHER (or whatever the test runner has) and alive.
        let tid = nix::unistd::gettid().as_raw() as u32;
        let pid = std::process::id();
        let t = Target::open(pid, tid).expect("pidfd of our own thread");
        assert!(t.alive());
        let a = t.get().unwrap();
        assert!(a.sched_policy <= SCHED_DEADLINE);
        assert!(t.start_time > 0);
    }
}
