//! Clean termination: SIGTERM and SIGINT set a stop flag that every loop of every program reads.
//!
//! The handlers are installed *without* `SA_RESTART`, so a rank sleeping in a blocking `recv`, `poll` or
//! `clock_nanosleep` is woken with `EINTR`, sees the flag and prints its result line instead of sleeping on.
//! Spinning receivers read the flag with one relaxed atomic load per poll (no system call).

use anyhow::{Context, Result};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Install the SIGTERM / SIGINT handlers (idempotent).
pub fn install() -> Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_stop_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    let mut stop_signals = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }
            .with_context(|| format!("installing the {signal} handler"))?;
        stop_signals.add(signal);
    }
    // A program started with them blocked (the mask survives fork and exec: a harness that blocks SIGTERM
    // passes it on) would never see its stop and run its whole duration.
    stop_signals
        .thread_unblock()
        .context("unblocking SIGTERM / SIGINT")?;
    Ok(())
}

/// Whether SIGTERM or SIGINT has arrived.
#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
