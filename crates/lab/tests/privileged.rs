//! Privileged lab tests (root, namespaces, cgroups): they run in CI, which is root, and skip with a message
//! elsewhere. Each checks that nothing is left behind: no namespace, no cgroup of this test process.

mod common;

use common::{experiment, fake_bench, leftovers, pingpong_experiment, root_or_skip};
use cosched_lab::cluster::Cluster;
use cosched_lab::process::{ManagedProcess, Placement};
use cosched_lab::{run_experiment, LabExperiment};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// The tests share the machine's two CPUs and the namespace list: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Ping-pong for 0.3 s on two nodes, with and without a competitor per node.
fn two_nodes() -> LabExperiment {
    pingpong_experiment(
        &[0, 1],
        "spin-only",
        "duration_s = 0.3\ntimeout_s = 20.0",
        r#"name = "no-agent""#,
    )
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn nodes_reach_each_other_through_the_bridge_and_everything_is_removed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip("nodes_reach_each_other_through_the_bridge_and_everything_is_removed") {
        return;
    }
    let cluster = Cluster::create(3, &[0, 1], 1024, 10_000).unwrap();
    assert_eq!(cluster.node_cpu(2), 0, "node 2 wraps around to CPU 0");
    // The kernel's threads keep 2 % of the two CPUs (cosched_lab::cgroup::KERNEL_HEADROOM_PERCENT).
    let period: u64 = std::fs::read_to_string(cluster.cgroup.cpu_dir.join("cpu.cfs_period_us"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let quota = std::fs::read_to_string(cluster.cgroup.cpu_dir.join("cpu.cfs_quota_us")).unwrap();
    assert_eq!(quota.trim(), (period * 2 * 98 / 100).to_string());
    // Node 0 listens; node 2 connects across the LAN namespace's bridge, pinned to node 2's CPU.
    let mut server = Command::new("perl");
    server.args(["-e", common::PERL_ECHO_SERVER, "7100"]);
    let mut server =
        ManagedProcess::spawn("server", server, &cluster.placement(0).unwrap()).unwrap();
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        &format!("perl -e '{}' 10.213.0.1 7100 && grep Cpus_allowed_list /proc/self/status && cat /proc/self/cgroup", common::PERL_ECHO_CLIENT),
    ]);
    let mut p = ManagedProcess::spawn("client", cmd, &cluster.placement(2).unwrap()).unwrap();
    let exit = p.wait(Duration::from_secs(10)).unwrap();
    assert!(exit.success(), "{}", exit.describe());
    assert!(server.wait(Duration::from_secs(5)).unwrap().success());
    assert!(
        exit.stdout.contains("Cpus_allowed_list:\t0"),
        "{}",
        exit.stdout
    );
    assert!(
        exit.stdout
            .contains(&format!("cpuset:/cosched-{}/n2", cluster.run_id)),
        "{}",
        exit.stdout
    );
    // The host's namespace cannot reach the lab's addresses: the lab's network exists only inside it.
    let mut outside = Command::new("perl");
    outside.args(["-e", common::PERL_ECHO_CLIENT, "10.213.0.1", "7100"]);
    let mut outside = ManagedProcess::spawn("outside", outside, &Placement::default()).unwrap();
    assert!(!outside.wait(Duration::from_secs(10)).unwrap().success());
    // Traffic stays inside: the host namespace has no route to the lab's addresses through any lab device.
    assert!(!leftovers().is_empty());
    cluster.remove().unwrap();
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_whole_experiment_runs_and_cleans_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip("a_whole_experiment_runs_and_cleans_up") {
        return;
    }
    let binaries = fake_bench("ok", 0.3, 0);
    let e = two_nodes();
    let runs = run_experiment(&e, &binaries, &mut cosched_lab::runner::Quiet).unwrap();
    let records = cosched_lab::runner::records(&runs);
    assert_eq!(records.len(), 2);
    for r in &records {
        let job = r.measurement.parallel_job().unwrap();
        assert!(r.measurement.work_done > 0);
        assert!(job.response_s >= 0.3, "{job:?}");
        // Each node's script spins (root) or sleeps in ping: F is finite and positive.
        assert!(job.fairness > 0.0 && job.fairness.is_finite(), "{job:?}");
        assert!(r.measurement.extra.contains_key("foreign_cpus"));
    }
    // K = 1: N = 2 processes share each CPU, so a competitor's F lies in (0, 2]: 2 if it got the whole CPU.
    let comp = records[1]
        .measurement
        .competitors()
        .expect("K=1 has competitors");
    assert!(comp.fairness > 0.0 && comp.fairness <= 2.05, "{comp:?}");
    assert!(records[0].measurement.competitors().is_none());
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());

    let out = std::env::temp_dir().join(format!("cosched-lab-test-out-{}", std::process::id()));
    let written = cosched_lab::output::write_results(&e, &runs, &out).unwrap();
    for f in [
        "runs.json",
        "runs.csv",
        "summary.csv",
        "lab.md",
        "rate.svg",
        "job-fairness.svg",
    ] {
        assert!(
            out.join(f).is_file(),
            "{f} missing; wrote {:?}",
            written.files
        );
    }
    assert!(written.comparison.contains("no-agent"));
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_failing_program_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip("a_failing_program_leaves_nothing_behind") {
        return;
    }
    let binaries = fake_bench("fail", 0.3, 3);
    let err = run_experiment(&two_nodes(), &binaries, &mut cosched_lab::runner::Quiet).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("exit code 3"), "{text}");
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
    // No competitor survived either.
    let calcula = binaries
        .bench_dir
        .join("cosched-calcula")
        .display()
        .to_string();
    let ps = String::from_utf8(
        Command::new("ps")
            .args(["-eo", "args"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(!ps.contains(&calcula), "a competitor survived: {ps}");
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_panic_inside_the_lab_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip("a_panic_inside_the_lab_leaves_nothing_behind") {
        return;
    }
    let result = std::panic::catch_unwind(|| {
        let cluster = Cluster::create(2, &[0, 1], 1024, 10_000).unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("60");
        let _sleeper =
            ManagedProcess::spawn("sleeper", cmd, &cluster.placement(1).unwrap()).unwrap();
        panic!("a step failed while the cluster and a process were up");
    });
    assert!(result.is_err());
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}

/// Waits (at most 20 s) until no lab reaper (`cosched lab --cleanup --after-exit-of PID`) runs for a lab
/// process other than this one.
fn wait_for_reapers_of_other_processes() {
    let me = std::process::id().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let others = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|cmdline| {
                let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                args.windows(2)
                    .any(|w| w[0] == b"--after-exit-of" && w[1] != me.as_bytes())
            })
            .count()
    };
    while others() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_lab_killed_outright_is_cleaned_at_the_next_start() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip("a_lab_killed_outright_is_cleaned_at_the_next_start") {
        return;
    }
    // The reapers of labs that ran in earlier test processes sweep every stale leftover once their lab exits:
    // one still running would remove the fakes below before `remove_stale` sees them (a loaded CI machine
    // did). Let them finish first.
    wait_for_reapers_of_other_processes();
    // Fake the leftovers of a lab whose process no longer exists: pid 1 is alive, so find a dead pid.
    let dead = (4_000_000u32..4_100_000)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let ns = format!("cosched-l{dead}x0-n0");
    let cg = Path::new("/sys/fs/cgroup/cpu").join(format!("cosched-l{dead}x0"));
    // A node's competitors' cpu cgroup two levels down (`competitors_cgroup = "own"`), with a process in it,
    // and the local probes' (`local_probe = true`).
    let competitors_cg = cg.join("n0/competitors");
    let local_cg = Path::new("/sys/fs/cgroup/cpu").join(format!("cosched-l{dead}x0-local"));
    cosched_lab::netns::ip(&["netns", "add", &ns]).unwrap();
    std::fs::create_dir(&cg).unwrap();
    std::fs::create_dir_all(&competitors_cg).unwrap();
    std::fs::create_dir(&local_cg).unwrap();
    let mut sleeper = Command::new("sleep");
    sleeper.arg("60");
    let sleeper = ManagedProcess::spawn(
        "sleeper",
        sleeper,
        &Placement::default().cgroup(&competitors_cg).unwrap(),
    )
    .unwrap();
    let removed = cosched_lab::cluster::remove_stale().unwrap();
    assert!(removed.iter().any(|r| r.contains(&ns)), "{removed:?}");
    assert!(
        removed
            .iter()
            .any(|r| r.ends_with(&format!("cosched-l{dead}x0"))),
        "{removed:?}"
    );
    assert!(removed.iter().any(|r| r.ends_with("-local")), "{removed:?}");
    assert!(!cg.exists());
    assert!(!competitors_cg.exists());
    assert!(!local_cg.exists());
    // Its process was killed (the drop reaps it; it would block 60 s otherwise).
    let pid = sleeper.pid();
    drop(sleeper);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert!(!cosched_lab::netns::list_namespaces().unwrap().contains(&ns));
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn competitors_in_their_own_cgroup_a_job_in_its_own_session_and_the_local_probe() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let test = "competitors_in_their_own_cgroup_a_job_in_its_own_session_and_the_local_probe";
    if !root_or_skip(test) {
        return;
    }
    // The stand-in ping-pong and competitor; the probe is the real one: `cosched-local` where built, else the
    // same code as `cosched bench local`.
    let binaries = fake_bench("local", 1.0, 0);
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    if let Some(local) = ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("cosched-local"))
        .find(|p| p.is_file())
    {
        let link = binaries.bench_dir.join("cosched-local");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(local, link).unwrap();
    } else if !binaries.cosched.is_file() {
        cosched_testkit::cannot_run(
            test,
            "neither cosched-local nor cosched is built: cargo build --release -p cosched -p cosched-bench",
        );
        return;
    }
    let e = experiment(
        r#"
name = "t"
nodes = 2
competitors = [1]
receive_modes = ["spin-only"]
[program]
kind = "pingpong"
duration_s = 1.0
timeout_s = 30.0
[[configurations]]
name = "no-agent"
[lab]
settle_ms = 50
rt_runtime_us = 10000
competitors_cgroup = "own"
job_session = "own"
local_probe = true
"#,
    );
    let runs = run_experiment(&e, &binaries, &mut cosched_lab::runner::Quiet).unwrap();
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
    assert_eq!(runs.len(), 1);
    let run = &runs[0];

    // The local figures: present, positive, ordered; one probe per node CPU.
    let m = &run.record.measurement;
    let local = cosched_lab::measure::LocalFigures::of_record(m).expect("local figures");
    assert!(
        0.0 < local.p50_us && local.p50_us <= local.p99_us && local.p99_us <= local.max_us,
        "{local:?}"
    );
    let mut cpus: Vec<u32> = run.local.iter().map(|(cpu, _)| *cpu).collect();
    cpus.dedup();
    assert_eq!(cpus.len(), run.local.len());
    assert!(!cpus.is_empty());
    for (cpu, line) in &run.local {
        assert_eq!(line.program, "local");
        // 1 ms sleeps over more than a second: hundreds of wake-ups at least.
        assert!(line.work_done > 200, "CPU {cpu}: {line:?}");
    }

    // Where everything was: each node's competitors in their own cgroup, beside the node's job group; probes in
    // theirs; both in the lab's session; each of the job's processes in its node's job group, leading a session
    // of its own.
    // SAFETY: getsid(0) reads our own session id.
    let ours = unsafe { libc::getsid(0) } as u32;
    let of = |role: &str| -> Vec<&cosched_lab::runner::PartyPlacement> {
        run.placement.iter().filter(|p| p.role == role).collect()
    };
    let (competitors, probes, job) = (of("competitor"), of("probe"), of("job"));
    assert_eq!(competitors.len(), 2, "{:?}", run.placement);
    assert_eq!(probes.len(), run.local.len(), "{:?}", run.placement);
    assert_eq!(job.len(), 2, "{:?}", run.placement);
    let experiment_cgroup = job[0]
        .cpu_cgroup
        .as_deref()
        .unwrap()
        .strip_suffix("/n0/job")
        .or_else(|| {
            job[0]
                .cpu_cgroup
                .as_deref()
                .unwrap()
                .strip_suffix("/n1/job")
        })
        .unwrap_or_else(|| panic!("a rank outside its node's job group: {:?}", job[0]))
        .to_string();
    assert!(
        experiment_cgroup.starts_with(&format!("/cosched-l{}x", std::process::id())),
        "{experiment_cgroup}"
    );
    let node_group = |p: &cosched_lab::runner::PartyPlacement, what: &str| {
        format!(
            "{experiment_cgroup}/n{}/{what}",
            p.label.trim_start_matches('n').split(' ').next().unwrap()
        )
    };
    for p in &competitors {
        assert_eq!(p.cpu_cgroup, Some(node_group(p, "competitors")), "{p:?}");
        assert_eq!(p.session, ours, "{p:?}");
    }
    for p in &probes {
        assert_eq!(
            p.cpu_cgroup,
            Some(format!("{experiment_cgroup}-local")),
            "{p:?}"
        );
        assert_eq!(p.session, ours, "{p:?}");
    }
    for p in &job {
        assert_eq!(p.cpu_cgroup, Some(node_group(p, "job")), "{p:?}");
        assert_eq!(p.session, p.pid, "{p:?} leads its own session");
    }

    // The files: the local columns are there.
    let out = std::env::temp_dir().join(format!("cosched-lab-test-local-{}", std::process::id()));
    let written = cosched_lab::output::write_results(&e, &runs, &out).unwrap();
    let runs_csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert!(
        runs_csv
            .lines()
            .next()
            .unwrap()
            .ends_with("local_p50_us,local_p99_us,local_max_us"),
        "{runs_csv}"
    );
    let summary_csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary_csv.contains("local_p50_us_mean"), "{summary_csv}");
    assert!(
        written.comparison.contains("local p50/p99/max µs"),
        "{}",
        written.comparison
    );
    let raw = std::fs::read_to_string(out.join("raw.jsonl")).unwrap();
    assert!(
        raw.contains("\"placement\"") && raw.contains("wake_delay_p99_us"),
        "{raw}"
    );
    std::fs::remove_dir_all(out).unwrap();
}
