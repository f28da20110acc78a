//! SIGINT in the middle of a run: `cosched lab` stops, kills its processes and removes its namespaces and
//! cgroups — driven from outside, as a user's Ctrl-C or a harness's stop reaches it.

mod common;

use common::{cosched_binary, fake_bench, leftovers_of, pingpong_experiment_text, root_or_skip};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
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
    // A run that would take 60 s; the signal comes while its job runs.
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
    // Read as it is written, so that a lab that hangs still shows what it said (reading after a kill waits for
    // every process that holds the pipe, the lab's reaper among them).
    let stderr = StderrTail::start(&mut child);
    // Signalled once its job runs (the pingpong's root has passed its gate), not after a fixed time: a CI run's
    // setup once took longer than the 1.5 s this test used to allow, and the signal then measured the setup.
    let setup_deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "`cosched lab` ended ({status}) before its job started; stderr:\n{}",
                stderr.finish()
            );
        }
        if descendants(pid).iter().any(|p| p.runs_pingpong()) {
            break;
        }
        if Instant::now() > setup_deadline {
            let state = cosched_lab::process::process_tree_report(pid);
            kill_and_clean(&mut child, &cosched);
            panic!("`cosched lab` had not started its job 60 s after it began; its processes:\n{state}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
    let deadline = signalled + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let state = cosched_lab::process::process_tree_report(pid);
            let said = stderr.so_far();
            kill_and_clean(&mut child, &cosched);
            // The processes last: a CI log keeps the end of a long failure message.
            panic!(
                "`cosched lab` was still running 10 s after SIGINT; its stderr until then:\n{said}\nits processes then:\n{state}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!(
        "the lab exited {:.2} s after SIGINT",
        signalled.elapsed().as_secs_f64()
    );
    let stderr = stderr.finish();
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

/// A process under the lab, as `/proc` shows it.
struct ProcessView {
    pid: u32,
    parent: u32,
    args: Vec<String>,
}

impl ProcessView {
    fn read(pid: u32) -> Option<ProcessView> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command name in parentheses: state, ppid.
        let parent = stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let args = std::fs::read(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        Some(ProcessView { pid, parent, args })
    }

    /// The stand-in pingpong program itself (`/bin/sh .../cosched-pingpong ...`), not its gate (`sh -c ...`).
    fn runs_pingpong(&self) -> bool {
        self.args
            .get(1)
            .is_some_and(|a| a.ends_with("/cosched-pingpong"))
    }
}

/// `root` and every process below it.
fn descendants(root: u32) -> Vec<ProcessView> {
    let all: Vec<ProcessView> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter_map(ProcessView::read)
        .collect();
    let mut found: Vec<u32> = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(all.iter().filter(|p| p.parent == parent).map(|p| p.pid));
        i += 1;
    }
    all.into_iter().filter(|p| found.contains(&p.pid)).collect()
}

/// End a lab run that failed the test: its processes must not outlive it.
fn kill_and_clean(child: &mut std::process::Child, cosched: &std::path::Path) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    child.wait().unwrap();
    let _ = Command::new(cosched).args(["lab", "--cleanup"]).status();
}

/// The lab's stderr, read by a thread as it comes.
struct StderrTail {
    text: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl StderrTail {
    fn start(child: &mut std::process::Child) -> StderrTail {
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let text = Arc::new(Mutex::new(String::new()));
        let sink = text.clone();
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        StderrTail { text, reader }
    }

    /// What it has written so far, without waiting.
    fn so_far(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// Everything it wrote (after it has exited; its reaper holds the pipe until it is done).
    fn finish(self) -> String {
        let StderrTail { text, reader } = self;
        reader.join().unwrap();
        let text = text.lock().unwrap().clone();
        text
    }
}
