//! SIGINT / SIGTERM / SIGHUP turn into a flag that every waiting loop of the lab checks, so an interrupted
//! experiment unwinds through its guards (processes, cgroups, namespaces) instead of dying with them in place.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Install the handlers (once per process) and return the flag they set.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(flag) = INTERRUPTED.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, flag.clone())?;
    }
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
