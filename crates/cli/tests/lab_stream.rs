//! A stream of real jobs through `cosched lab` (seed 001's comparison, `cosched_lab::stream`): FIFO space
//! sharing runs the jobs one after another, SCS at MPL 2 runs two side by side on one CPU each, time sharing
//! with the agent starts them all at once; every job's launcher times it, and nothing of the lab is left.
//!
//! Needs root (cgroups, the manager's cpusets, the agent); elsewhere it says `SKIP` (or fails under
//! `COSCHED_REQUIRE_PRIVILEGED=1`, as in CI).

use cosched_lab::stream::{Scheduler, StreamRun};
use std::path::Path;
use std::process::Command;

const COSCHED: &str = env!("CARGO_BIN_EXE_cosched");

/// The tests share the machine's CPUs and time their jobs: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const STREAM: &str = r#"
name = "stream-test"
repetitions = 1
schedulers = ["fifo", "scs", "time-sharing-agent"]
[stream]
mpl = 2
quantum_ms = 20
timeout_s = 120
[[stream.job]]
kind = "pingpong"
count = 30000
recv = "block"
copies = 2
[[stream.job]]
kind = "stencil"
count = 3000
recv = "block"
"#;

/// `cosched lab --results-dir DIR FILE`, its output in `DIR/lab.log`.
fn start_lab(dir: &Path, file: &Path) -> std::process::Child {
    let log = std::fs::File::create(dir.join("lab.log")).unwrap();
    Command::new(COSCHED)
        .arg("lab")
        .arg("--results-dir")
        .arg(dir)
        .arg(file)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Whether two jobs' [start, end] intervals overlap by more than `slack_s`.
fn overlap(a: (f64, f64), b: (f64, f64), slack_s: f64) -> bool {
    a.0.max(b.0) + slack_s < a.1.min(b.1)
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cgroups, cpusets, the agent); run the tests as root, as CI does"
)]
fn fifo_runs_jobs_one_at_a_time_scs_two_side_by_side_and_the_lab_leaves_nothing() {
    const TEST: &str =
        "fifo_runs_jobs_one_at_a_time_scs_two_side_by_side_and_the_lab_leaves_nothing";
    if !nix::unistd::geteuid().is_root() {
        cosched_testkit::cannot_run(
            TEST,
            "needs root (cgroups, the manager's cpusets, the agent)",
        );
        return;
    }
    let problems = cosched_lab::preflight::machine_problems();
    if !problems.is_empty() {
        cosched_testkit::cannot_run(TEST, &problems.join("; "));
        return;
    }
    let cpus = cosched_lab::cluster::available_cpus().unwrap();
    if cpus.len() < 2 {
        cosched_testkit::cannot_run(TEST, "needs 2 CPUs (two jobs side by side at MPL 2)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream-test.toml");
    std::fs::write(&file, STREAM).unwrap();
    let mut child = start_lab(dir.path(), &file);
    let lab_pid = child.id();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(200) {
            // SIGTERM: the lab cleans up as on Ctrl-C.
            // SAFETY: the lab this test started, by pid.
            unsafe { libc::kill(lab_pid as libc::pid_t, libc::SIGTERM) };
            let status = child.wait().unwrap();
            panic!("cosched lab ran past 200 s ({status:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(dir.path().join("lab.log")).unwrap();
    assert!(status.success(), "cosched lab failed:\n{text}");
    let runs: Vec<StreamRun> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("stream-test/runs.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(runs.len(), 3, "{text}");
    let spans = |s: Scheduler| -> Vec<(f64, f64)> {
        let run = runs.iter().find(|r| r.scheduler == s).unwrap();
        assert_eq!(run.jobs.len(), 3, "{s:?}: {text}");
        assert!(run
            .jobs
            .iter()
            .all(|j| j.exit_code == 0 && j.end_s >= j.start_s));
        run.jobs.iter().map(|j| (j.start_s, j.end_s)).collect()
    };
    // fifo: each job holds the whole machine, so no two run at once (a job starts after the one before ended).
    let fifo = spans(Scheduler::Fifo);
    for (i, a) in fifo.iter().enumerate() {
        for b in &fifo[i + 1..] {
            assert!(!overlap(*a, *b, 0.0), "fifo ran two jobs at once: {fifo:?}");
        }
    }
    // scs at MPL 2: the first two jobs (one CPU each) start together and run side by side; the third waits.
    let scs = spans(Scheduler::Scs);
    assert!(
        overlap(scs[0], scs[1], 0.0),
        "scs did not run the first two jobs side by side: {scs:?}"
    );
    assert!(
        scs[2].0 >= scs[0].1.min(scs[1].1) - 0.01,
        "scs started a third job of 2 ranks while two held both CPUs: {scs:?}"
    );
    // time sharing: everything starts at once.
    let shared = spans(Scheduler::TimeSharingAgent);
    assert!(
        shared.iter().all(|(start, _)| *start < 2.0),
        "time sharing did not start every job at t0: {shared:?}"
    );
    assert!(
        text.contains("| fifo |") && text.contains("× fifo"),
        "{text}"
    );
    assert_nothing_left(lab_pid);
}

/// No cgroup and no run directory named after lab process `lab_pid` (`cosched-l<pid>x...`).
fn assert_nothing_left(lab_pid: u32) {
    let prefix = format!("cosched-l{lab_pid}x");
    let mut left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| p.contains(&prefix))
        .collect();
    for controller in ["cpu", "cpuacct", "cpuset"] {
        for entry in std::fs::read_dir(Path::new("/sys/fs/cgroup").join(controller))
            .unwrap()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                left.push(entry.path().display().to_string());
            }
        }
    }
    assert!(left.is_empty(), "the lab left {left:?}");
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cgroups, cpusets, the agent); run the tests as root, as CI does"
)]
fn a_stream_interrupted_in_the_middle_of_scs_cleans_up_its_jobs_and_partitions() {
    const TEST: &str =
        "a_stream_interrupted_in_the_middle_of_scs_cleans_up_its_jobs_and_partitions";
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !nix::unistd::geteuid().is_root() || !cosched_lab::preflight::machine_problems().is_empty() {
        cosched_testkit::cannot_run(
            TEST,
            "needs root and cgroup v1 (cgroups, the manager's cpusets)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream-test.toml");
    // Long jobs under scs only: the signal comes while the manager's partitions hold running jobs.
    std::fs::write(
        &file,
        STREAM
            .replace(r#"["fifo", "scs", "time-sharing-agent"]"#, r#"["scs"]"#)
            .replace("count = 30000\n", "count = 3000000\n"),
    )
    .unwrap();
    let mut child = start_lab(dir.path(), &file);
    let lab_pid = child.id();
    // Wait until a job runs in a partition of the manager (`cpuset/cosched-l<pid>x<n>-scs/cosched-scs-<id>`).
    let prefix = format!("cosched-l{lab_pid}x");
    let started = std::time::Instant::now();
    let job_running = || {
        std::fs::read_dir("/sys/fs/cgroup/cpuset")
            .unwrap()
            .flatten()
            .any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(&prefix)
                    && name.ends_with("-scs")
                    && std::fs::read_dir(e.path()).unwrap().flatten().any(|j| {
                        j.path().is_dir()
                            && !std::fs::read_to_string(j.path().join("tasks"))
                                .unwrap_or_default()
                                .trim()
                                .is_empty()
                    })
            })
    };
    while !job_running() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the lab ended before a job ran: {}",
            std::fs::read_to_string(dir.path().join("lab.log")).unwrap()
        );
        assert!(started.elapsed().as_secs() < 60, "no job ran within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: the lab this test started, by pid.
    unsafe { libc::kill(lab_pid as libc::pid_t, libc::SIGINT) };
    let signalled = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed().as_secs() > 20 {
            child.kill().unwrap();
            panic!("the lab was still running 20 s after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(dir.path().join("lab.log")).unwrap();
    assert!(
        !status.success(),
        "an interrupted lab exits with an error:\n{text}"
    );
    assert!(text.contains("interrupted"), "{text}");
    assert_nothing_left(lab_pid);
}
