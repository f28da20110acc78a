//! Privileged lab tests (root, namespaces, cgroups): they run in CI, which is root, and skip with a message
//! elsewhere. Each checks that nothing is left behind: no namespace, no cgroup of this test process.

mod common;

use common::{fake_bench, leftovers, pingpong_experiment, root_or_skip};
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
    // Fake the leftovers of a lab whose process no longer exists: pid 1 is alive, so find a dead pid.
    let dead = (4_000_000u32..4_100_000)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let ns = format!("cosched-l{dead}x0-n0");
    let cg = Path::new("/sys/fs/cgroup/cpu").join(format!("cosched-l{dead}x0"));
    cosched_lab::netns::ip(&["netns", "add", &ns]).unwrap();
    std::fs::create_dir(&cg).unwrap();
    let removed = cosched_lab::cluster::remove_stale().unwrap();
    assert!(removed.iter().any(|r| r.contains(&ns)), "{removed:?}");
    assert!(!cg.exists());
    assert!(!cosched_lab::netns::list_namespaces().unwrap().contains(&ns));
}
