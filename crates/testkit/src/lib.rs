//! What cosched's tests share, so that a safety test can neither pass unseen nor leave anything behind.
//!
//! - [`cannot_run`]: a privileged test (root, BPF, namespaces, cgroup v1, Open MPI) that cannot run here says
//!   `SKIP <test>: <why>` and returns — unless [`REQUIRE_PRIVILEGED`] is set (CI sets it: `.ci/run`), where it
//!   fails instead, so a machine that lost a capability cannot turn a safety test into a silent pass.
//! - [`die_with_parent`]: a helper process a test starts gets `SIGKILL` from the kernel when the test process
//!   dies (`PR_SET_PDEATHSIG`), however it dies — a `Drop` guard does not run on `kill -9` or a timeout.
//! - [`BOUND_S`]: how long a helper that spins may live at most, so a failing test cannot hold a CPU for good.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The environment variable under which a privileged test that cannot run fails instead of skipping.
pub const REQUIRE_PRIVILEGED: &str = "COSCHED_REQUIRE_PRIVILEGED";

/// Seconds a spinning test helper lives at most, whatever the test does.
pub const BOUND_S: u64 = 120;

/// Whether [`REQUIRE_PRIVILEGED`] is set to something other than empty or `0`.
pub fn privileged_required() -> bool {
    std::env::var(REQUIRE_PRIVILEGED).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Test `test` cannot run because of `why`: print `SKIP` and let the caller return, or — with
/// [`REQUIRE_PRIVILEGED`] set — fail the test, naming what is missing.
#[track_caller]
pub fn cannot_run(test: &str, why: &str) {
    if privileged_required() {
        panic!(
            "{test} could not run: {why} — and {REQUIRE_PRIVILEGED} is set, so a privileged test that cannot run \
             fails (unset it to let such tests skip)"
        );
    }
    eprintln!("SKIP {test}: {why}");
}

/// Makes the process `command` starts get `signal` when the thread that starts it exits (`PR_SET_PDEATHSIG`,
/// kept across `exec`), and exit at once if that happened before the call took effect.
pub fn die_with_parent(command: &mut Command, signal: i32) -> &mut Command {
    // SAFETY: getpid is async-signal-safe; read here, before the fork, so the child can compare.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and only makes async-signal-safe calls
    // (prctl, getppid, _exit) on values copied before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1); // the parent died before the prctl
            }
            Ok(())
        })
    }
}

/// The committed fuzz corpus of `target` (`fuzz/corpus/<target>/`: the seeds and every input the fuzzer kept),
/// for replay as ordinary tests on stable: each file's name and bytes, in name order. Panics when the directory
/// is missing or empty, so a renamed target cannot turn its replay into a pass over nothing.
pub fn fuzz_corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("fuzz corpus file {}: {e}", path.display()));
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                bytes,
            )
        })
        .collect();
    assert!(!inputs.is_empty(), "fuzz corpus {} is empty", dir.display());
    inputs.sort();
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_dies_when_the_process_that_started_it_dies() {
        // PR_SET_PDEATHSIG fires when the forking *thread* exits: start the helper from a thread that then ends.
        let (tx, rx) = std::sync::mpsc::channel();
        let starter = std::thread::spawn(move || {
            let child = die_with_parent(Command::new("sleep").arg("30"), libc::SIGKILL)
                .spawn()
                .unwrap();
            tx.send(child).unwrap();
        });
        let mut child = rx.recv().unwrap();
        starter.join().unwrap();
        let t0 = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(5),
                "the helper outlived the thread that started it"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn cannot_run_fails_only_when_privileged_tests_are_required() {
        // Runs in one test so the variable is not changed under a concurrent test of this binary.
        let saved = std::env::var_os(REQUIRE_PRIVILEGED);
        // SAFETY (edition 2021: set_var is safe): no other test of this crate reads the variable.
        std::env::set_var(REQUIRE_PRIVILEGED, "1");
        let failed = std::panic::catch_unwind(|| cannot_run("t", "no root")).is_err();
        std::env::set_var(REQUIRE_PRIVILEGED, "0");
        let skipped = std::panic::catch_unwind(|| cannot_run("t", "no root")).is_ok();
        match saved {
            Some(v) => std::env::set_var(REQUIRE_PRIVILEGED, v),
            None => std::env::remove_var(REQUIRE_PRIVILEGED),
        }
        assert!(
            failed,
            "with the variable set, a test that cannot run must fail"
        );
        assert!(skipped, "with the variable 0, it skips");
    }
}
