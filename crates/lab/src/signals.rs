//! SIGINT / SIGTERM / SIGHUP turn into a flag that every waiting loop of the lab checks, so an interrupted
//! experiment unwinds through its guards (processes, cgroups, namespaces) instead of dying with them in place.

//!
//! The competitors are the exception: a stop signal SIGKILLs their process groups in the handler itself. They
//! hold the experiment CPUs at `cpu.shares` 262144 against the lab's 1024, so an interrupted lab that ended them
//! last would crawl through the rest of its cleanup at ~0.4 % of a CPU (a CI run's lab was still cleaning up
//! 10 s after its SIGINT).

use nix::sys::signal::{SigSet, Signal};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// How many process groups [`KillFirst`] can hold at once (K competitors per node, well above any lab's).
const KILL_FIRST_SLOTS: usize = 1024;

/// The process groups a stop signal kills at once; 0 = a free slot.
static KILL_FIRST: [AtomicI32; KILL_FIRST_SLOTS] = [const { AtomicI32::new(0) }; KILL_FIRST_SLOTS];

/// A process group that a stop signal SIGKILLs at once, from the handler, until this is dropped.
///
/// Drop it before the group's leader is reaped: while the leader is an unreaped child its pid, and so the group
/// id, cannot be reused, which is what makes the kill from the handler safe.
#[derive(Debug)]
pub struct KillFirst {
    slot: usize,
}

impl KillFirst {
    /// Register the group led by `pgid` (one of our unreaped children); `None` when every slot is taken.
    pub fn register(pgid: u32) -> Option<KillFirst> {
        let pgid = i32::try_from(pgid).ok().filter(|&p| p > 0)?;
        (0..KILL_FIRST_SLOTS)
            .find(|&slot| {
                KILL_FIRST[slot]
                    .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            })
            .map(|slot| KillFirst { slot })
    }
}

impl Drop for KillFirst {
    fn drop(&mut self) {
        KILL_FIRST[self.slot].store(0, Ordering::SeqCst);
    }
}

/// The stop signals' own action besides setting the flag: SIGKILL every registered group (async-signal-safe:
/// atomic loads and kill(2) only).
fn kill_registered_groups() {
    for slot in &KILL_FIRST {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe; the group's leader is an unreaped child of ours (`KillFirst`).
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

/// Install the handlers (once per process) and return the flag they set.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(flag) = INTERRUPTED.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    let mut stop_signals = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signal_hook::flag::register(signal as i32, flag.clone())?;
        // SAFETY: the action only loads atomics and calls kill(2), both async-signal-safe.
        unsafe { signal_hook::low_level::register(signal as i32, kill_registered_groups)? };
        stop_signals.add(signal);
    }
    // A blocked signal stays pending and its handler never runs; the mask survives exec, so a lab started by a
    // harness that blocks SIGINT could not be stopped (a CI run sat out a 60 s experiment so). Unblocked in
    // this thread, which the lab's later threads inherit; a kill to the process reaches it here.
    stop_signals.thread_unblock()?;
    Ok(INTERRUPTED.get_or_init(|| flag).clone())
}

/// Whether a signal asked the lab to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// The error an interrupted step returns: the caller's guards clean up as it propagates.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by a signal; the lab cleaned up its processes, cgroups and namespaces")]
pub struct Interrupted;

/// Fail with [`Interrupted`] if a signal arrived.
pub fn check() -> Result<(), Interrupted> {
    if interrupted() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_registered_group_is_killed_by_the_stop_action_and_a_released_one_is_not() {
        let spawn = || {
            use std::os::unix::process::CommandExt;
            Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut killed, mut spared) = (spawn(), spawn());
        let registered = KillFirst::register(killed.id()).unwrap();
        let released = KillFirst::register(spared.id()).unwrap();
        drop(released);
        kill_registered_groups();
        let status = killed.wait().unwrap();
        drop(registered);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(
            spared.try_wait().unwrap().is_none(),
            "a released group was killed"
        );
        spared.kill().unwrap();
        spared.wait().unwrap();
    }
}
