//! SIGINT in the middle of a run: the lab stops, kills its processes and removes its namespaces and cgroups.
//! A test binary of its own, because the signal flag is process-wide.

mod common;

use common::{fake_bench, leftovers, pingpong_experiment, root_or_skip};
use cosched_lab::run_experiment;
use std::time::{Duration, Instant};

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn sigint_during_a_run_cleans_up_everything() {
    if !root_or_skip("sigint_during_a_run_cleans_up_everything") {
        return;
    }
    // A run that would take 60 s; the signal comes after 1.5 s.
    let binaries = fake_bench("interrupt", 60.0, 0);
    let e = pingpong_experiment(&[1], "block", "duration_s = 60.0", r#"name = "no-agent""#);
    // As a harness may start the lab: SIGINT blocked (the mask survives exec). The lab must unblock it, or the
    // signal stays pending and the run sits out its 60 s (a CI run did). The signal goes to this thread, the
    // one that blocked it, as a process-wide one does when every thread blocks it.
    let mut sigint = nix::sys::signal::SigSet::empty();
    sigint.add(nix::sys::signal::SIGINT);
    sigint.thread_block().unwrap();
    cosched_lab::signals::install().unwrap();
    // SAFETY: pthread_self has no preconditions.
    let this_thread = unsafe { libc::pthread_self() };
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: the target thread runs the whole test (it joins this one); the lab's handler only sets a flag.
        unsafe { libc::pthread_kill(this_thread, libc::SIGINT) };
    });
    let started = Instant::now();
    let err = run_experiment(&e, &binaries, &mut cosched_lab::runner::Quiet).unwrap_err();
    killer.join().unwrap();
    assert!(
        err.downcast_ref::<cosched_lab::signals::Interrupted>()
            .is_some()
            || format!("{err:#}").contains("interrupted"),
        "{err:#}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        started.elapsed()
    );
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}
