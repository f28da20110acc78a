//! A lab run with the real agent: `cosched agent` per run, every rank under `cosched run`, the agent's
//! statistics in the record, nothing left behind (namespaces, cgroups, the agent's socket). Needs root and a
//! `cosched` binary built with BPF (target/release or target/debug, or $COSCHED_BIN); skips otherwise.

mod common;

use common::{cosched_binary, fake_bench, leftovers, pingpong_experiment, root_or_skip};
use cosched_lab::run_experiment;
use std::process::Command;

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn agent_runs_beside_the_job_and_leaves_nothing_behind() {
    if !root_or_skip("agent_runs_beside_the_job_and_leaves_nothing_behind") {
        return;
    }
    let Some(cosched) = cosched_binary() else {
        cosched_testkit::cannot_run(
            "agent_runs_beside_the_job_and_leaves_nothing_behind",
            "no cosched binary; cargo build -p cosched",
        );
        return;
    };
    // Can this build start an agent at all (BPF compiled in, BTF present)?
    let probe = Command::new(&cosched)
        .args([
            "agent",
            "--socket",
            "/run/cosched/lab-probe.sock",
            "--run-for-s",
            "0.2",
        ])
        .output()
        .unwrap();
    if !probe.status.success() {
        cosched_testkit::cannot_run(
            "agent_runs_beside_the_job_and_leaves_nothing_behind",
            &format!(
                "the agent cannot start here: {}",
                String::from_utf8_lossy(&probe.stderr).trim()
            ),
        );
        return;
    }
    let mut binaries = fake_bench("agent", 0.5, 0);
    binaries.cosched = cosched;
    let e = pingpong_experiment(
        &[1],
        "block",
        "duration_s = 0.5\ntimeout_s = 30.0",
        r#"name = "agent"
agent = true
boost_window_us = 300"#,
    );
    let runs = run_experiment(&e, &binaries, &mut cosched_lab::runner::Quiet).unwrap();
    let records = cosched_lab::runner::records(&runs);
    let m = &records[0].measurement;
    assert!(m.work_done > 0);
    let agent_cpu = m.agent_cpu_fraction.expect("agent CPU measured");
    assert!((0.0..1.0).contains(&agent_cpu), "{agent_cpu}");
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
    let sockets: Vec<_> = std::fs::read_dir("/run/cosched")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("lab-l{}x", std::process::id())))
                .collect()
        })
        .unwrap_or_default();
    assert!(sockets.is_empty(), "agent sockets left: {sockets:?}");
}
