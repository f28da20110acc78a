//! SIGINT / SIGTERM / SIGHUP turn into a flag that every waiting loop of the lab checks, so an interrupted
//! experiment unwinds through its guards (processes, cgroups, namespaces) instead of dying with them in place.

use nix::sys::signal::{SigSet, Signal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Install the handlers (once per process) and return the flag they set.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(flag) = INTERRUPTED.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    let mut stop_signals = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signal_hook::flag::register(signal as i32, flag.clone())?;
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
