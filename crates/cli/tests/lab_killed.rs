//! A lab killed outright leaves nothing behind (issue 29): `cosched lab` is SIGKILLed mid-run, with the agent
//! boosting a spin-only ping-pong beside CPU-bound competitors; within 5 s no process it started is alive, no task
//! it touched is real-time, and its cgroups, namespaces and agent socket are gone.
//!
//! Privileged (root, BPF, cgroup v1, namespaces): skips with a message elsewhere, fails under
//! `COSCHED_REQUIRE_PRIVILEGED` (CI).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TEST: &str = "a_lab_killed_outright_leaves_nothing_behind";

/// The two tests one at a time: a sweep by one must not do the other's reaper's work.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cosched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
}

/// Field `n` (1-based, proc(5)) of `/proc/<pid>/stat`, as text; the name in parentheses may hold spaces.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n - 3).map(str::to_string)
}

/// Every process now: pid → (parent, start time).
fn processes() -> BTreeMap<u32, (u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let ppid = stat_field(pid, 4)?.parse().ok()?;
            Some((pid, (ppid, stat_field(pid, 22)?)))
        })
        .collect()
}

/// `pid` and all its descendants now, with their start times.
fn family(pid: u32) -> BTreeMap<u32, String> {
    let all = processes();
    let mut found: BTreeMap<u32, String> = BTreeMap::new();
    if let Some((_, start)) = all.get(&pid) {
        found.insert(pid, start.clone());
    }
    loop {
        let before = found.len();
        for (p, (ppid, start)) in &all {
            if found.contains_key(ppid) {
                found.insert(*p, start.clone());
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// Alive: there, the same process (start time), and not a zombie.
fn alive(pid: u32, start: &str) -> bool {
    stat_field(pid, 22).as_deref() == Some(start)
        && !matches!(stat_field(pid, 3).as_deref(), Some("Z" | "X"))
}

/// User-space tasks (threads) that are SCHED_FIFO or SCHED_RR now: (tid, name).
fn realtime_tasks() -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // Kernel threads have an empty command line.
        if std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |c| c.is_empty()) {
            continue;
        }
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            // SAFETY: plain syscall on a tid.
            let policy = unsafe { libc::sched_getscheduler(tid as libc::pid_t) }
                & !libc::SCHED_RESET_ON_FORK;
            if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
                let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                found.push((tid, name.trim().to_string()));
            }
        }
    }
    found
}

/// The paths of the entries of `dir` whose name starts with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path().display().to_string())
        .collect()
}

/// What the lab with pid `lab` made that still exists: cgroups, namespaces, the agent socket.
fn lab_resources(lab: u32) -> Vec<String> {
    let prefix = format!("cosched-l{lab}x");
    let mut found: Vec<String> = ["cpu", "cpuacct", "cpuset"]
        .iter()
        .flat_map(|c| named(&Path::new("/sys/fs/cgroup").join(c), &prefix))
        .collect();
    found.extend(named(Path::new("/run/netns"), &prefix));
    found.extend(named(Path::new("/run/cosched"), &format!("lab-l{lab}x")));
    found
}

/// The pids in the lab's cgroups.
fn in_lab_cgroups(lab: u32) -> Vec<u32> {
    named(Path::new("/sys/fs/cgroup/cpu"), &format!("cosched-l{lab}x"))
        .iter()
        .flat_map(|dir| {
            std::fs::read_to_string(Path::new(dir).join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn why_not_here() -> Option<String> {
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (namespaces, cgroups, the agent)".into());
    }
    if !Path::new("/sys/fs/cgroup/cpu/cpu.shares").exists() {
        return Some("needs cgroup v1's cpu controller".into());
    }
    let probe = cosched()
        .args([
            "agent",
            "--socket",
            "/run/cosched/lab-killed-probe.sock",
            "--run-for-s",
            "0.2",
        ])
        .output()
        .ok()?;
    (!probe.status.success()).then(|| {
        format!(
            "the agent cannot start here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        )
    })
}

/// How long after a lab's kill -9 everything it started must be gone.
const VERDICT_AFTER: Duration = Duration::from_secs(5);

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_lab_killed_outright_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let dir: PathBuf =
        std::env::temp_dir().join(format!("cosched-lab-killed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("killed.toml");
    // A spin-only ping-pong with one competitor per node and the agent, long enough to be killed mid-run.
    std::fs::write(
        &file,
        r#"name = "lab-killed"
description = "killed outright mid-run by a test"
nodes = 2
competitors = [1]
receive_modes = ["spin-only"]
repetitions = 1

[program]
kind = "pingpong"
duration_s = 60.0
timeout_s = 90.0

[[configurations]]
name = "agent"
agent = true
"#,
    )
    .unwrap();
    let realtime_before = realtime_tasks();
    let mut command = cosched();
    command
        .arg("lab")
        .arg(&file)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .stdout(Stdio::null());
    // If this test is killed itself, the lab goes too (and its reaper cleans up after it).
    cosched_testkit::die_with_parent(&mut command, libc::SIGKILL);
    let mut lab = command.spawn().unwrap();
    let lab_pid = lab.id();

    // Mid-run: the agent up, two competitors and two ranks in the lab's cgroups, and a rank boosted by now.
    let t0 = Instant::now();
    loop {
        let running = in_lab_cgroups(lab_pid).len();
        let agent_up = family(lab_pid).keys().any(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.windows(6).any(|w| w == b"agent\0"))
        });
        if running >= 4 && agent_up && t0.elapsed() > Duration::from_secs(2) {
            break;
        }
        if let Some(status) = lab.try_wait().unwrap() {
            panic!("the lab ended before it could be killed: {status:?}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the lab did not get its job running within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let started: BTreeMap<u32, String> = family(lab_pid)
        .into_iter()
        .chain(
            in_lab_cgroups(lab_pid)
                .into_iter()
                .filter_map(|p| Some((p, stat_field(p, 22)?))),
        )
        .filter(|(p, _)| *p != lab_pid)
        .collect();
    eprintln!(
        "killing lab pid {lab_pid} with {} processes of its own running",
        started.len()
    );
    let killed = Instant::now();
    lab.kill().unwrap(); // SIGKILL
    let _ = lab.wait();
    // How soon everything is gone (polled), the verdict at 5 s at the latest (typically well under 1 s; a
    // cgroup can only be removed once the kernel has reaped its last task, which took over 2 s once on CI's
    // busy 2-CPU machine).
    let mut gone_after = None;
    while gone_after.is_none() && killed.elapsed() < VERDICT_AFTER {
        if started.iter().all(|(p, s)| !alive(*p, s)) && lab_resources(lab_pid).is_empty() {
            gone_after = Some(killed.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!("after the lab's kill -9, its processes and resources were gone in {gone_after:?}");

    let survivors: Vec<String> = started
        .iter()
        .filter(|(p, s)| alive(**p, s))
        .map(|(p, _)| {
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            format!("{p} ({})", comm.trim())
        })
        .collect();
    let new_realtime: Vec<(u32, String)> = realtime_tasks()
        .into_iter()
        .filter(|t| !realtime_before.contains(t))
        .collect();
    let resources = lab_resources(lab_pid);
    // Whatever failed, remove what is left before asserting.
    if !survivors.is_empty() || !resources.is_empty() {
        let _ = cosched().args(["lab", "--cleanup"]).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        survivors.is_empty(),
        "{VERDICT_AFTER:?} after the lab's kill -9 these still run: {survivors:?}"
    );
    assert!(
        new_realtime.is_empty(),
        "{VERDICT_AFTER:?} after the lab's kill -9 these are real-time: {new_realtime:?}"
    );
    assert!(
        resources.is_empty(),
        "{VERDICT_AFTER:?} after the lab's kill -9 these remain: {resources:?}"
    );
}

#[test]
fn cleanup_says_what_it_removed_or_that_nothing_was_left() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if why_not_here().is_some() {
        // Without root `--cleanup` must refuse clearly.
        // SAFETY: plain syscall.
        if unsafe { libc::geteuid() } != 0 {
            let out = cosched().args(["lab", "--cleanup"]).output().unwrap();
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("root"));
        }
        return;
    }
    let out = cosched().args(["lab", "--cleanup"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("nothing left over") || said.contains("removed"),
        "{said}"
    );
}
