//! SIGINT in the middle of a run: `cosched lab` stops, kills its processes and removes its namespaces and
//! cgroups — driven from outside, as a user's Ctrl-C or a harness's stop reaches it.

mod common;

use common::{cosched_binary, fake_bench, leftovers_of, pingpong_experiment_text, root_or_skip};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
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
    let Some(cosched) = cosched_binary() else {
        cosched_testkit::cannot_run(
            "sigint_during_a_run_cleans_up_everything",
            "the `cosched` binary is not built; run `cargo build --release` first",
        );
        return;
    };
    // A run that would take 60 s; the signal comes after 1.5 s.
    let binaries = fake_bench("interrupt", 60.0, 0);
    let dir = binaries.bench_dir.clone();
    let experiment = dir.join("interrupt.toml");
    std::fs::write(
        &experiment,
        pingpong_experiment_text(&[1], "block", "duration_s = 60.0", r#"name = "no-agent""#),
    )
    .unwrap();
    let mut lab = Command::new(&cosched);
    lab.arg("lab")
        .arg("--bench-dir")
        .arg(&dir)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .arg(&experiment)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // As a harness may start it: SIGINT blocked (the mask survives exec). The lab must unblock it, or the signal
    // stays pending and the run sits out its 60 s (a CI run did).
    // SAFETY: the closure runs in the child between fork and exec and only calls sigprocmask, which is
    // async-signal-safe, on a set built there.
    unsafe {
        lab.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = lab.spawn().unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(1500));
    let signalled = Instant::now();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
    let deadline = signalled + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: as above; the run failed the test, its processes must not outlive it.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            child.wait().unwrap();
            let _ = Command::new(&cosched).args(["lab", "--cleanup"]).status();
            panic!("`cosched lab` was still running 10 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        !status.success(),
        "an interrupted lab exits nonzero; stderr:\n{stderr}"
    );
    assert!(stderr.contains("interrupted"), "stderr:\n{stderr}");
    assert!(
        leftovers_of(pid).is_empty(),
        "left behind: {:?}",
        leftovers_of(pid)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
