//! `cosched reproduce` end to end: the quick simulated suite of seed 000 writes `headlines.json` with the
//! seed's claims computed from that run, and bad seed names fail before anything runs.

use cosched_report::headlines::{read_json, Backend, Scale};
use std::path::{Path, PathBuf};
use std::process::Command;

fn experiments() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

fn cosched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
}

#[test]
fn quick_sim_only_writes_the_seed_000_headlines() {
    let out = std::env::temp_dir().join(format!("cosched-reproduce-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = cosched()
        .args(["reproduce", "000", "--sim-only", "--quick", "--experiments"])
        .arg(experiments())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let headlines = read_json(&out.join("headlines.json")).unwrap();
    // Seed 000: 11 simulated claims, then 8 real ones (4 of the job, 2 of the local user, 2 of LAMMPS).
    assert_eq!(headlines.len(), 19, "{headlines:#?}");
    assert!(headlines.iter().all(|h| h.seed == "000"));
    let (sim, real): (Vec<_>, Vec<_>) = headlines.iter().partition(|h| h.backend == Backend::Sim);
    assert_eq!(sim.len(), 11);
    assert!(headlines[..11].iter().all(|h| h.backend == Backend::Sim));
    for h in sim {
        // Computed from this run: every series was there, and a verdict was reached.
        assert_eq!(h.scale, Scale::Quick, "{h:?}");
        assert!(h.holds.is_some(), "{h:?}");
        assert!(!h.ours.starts_with("missing"), "{h:?}");
    }
    for h in real {
        assert_eq!(h.ours, "not run: --sim-only");
        assert_eq!(h.holds, None);
    }
    // The table is printed at the end, with the tally.
    assert!(
        stdout.contains("Headline claims of the seed papers"),
        "{stdout}"
    );
    assert!(
        stdout.contains("checked claims hold (8 not checked)"),
        "{stdout}"
    );
    // The simulated runs themselves are where the claims were read from.
    for name in [
        "fig03-latency",
        "fig04-barrier",
        "fig07-mixed",
        "fig09-slpret-ablation",
    ] {
        assert!(out.join(name).join("runs.json").is_file(), "{name}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_unknown_seed_fails_before_running_anything() {
    let out = std::env::temp_dir().join(format!("cosched-reproduce-bad-{}", std::process::id()));
    let run = cosched()
        .args(["reproduce", "--sim-only", "--quick", "005", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("unknown seed '005'")
            && stderr.contains("the seeds built so far: 000, 001, 002, 003, 004"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing may run for a bad seed");
}

#[test]
fn quick_sim_only_writes_the_seed_003_headlines() {
    let out = std::env::temp_dir().join(format!("cosched-reproduce-003-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = cosched()
        .args(["reproduce", "003", "--sim-only", "--quick", "--experiments"])
        .arg(experiments())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let headlines = read_json(&out.join("headlines.json")).unwrap();
    // Seed 003: 6 simulated claims, no real experiment yet; each computed from this run.
    assert_eq!(headlines.len(), 6, "{headlines:#?}");
    for h in &headlines {
        assert_eq!(
            (h.seed.as_str(), h.backend, h.scale),
            ("003", Backend::Sim, Scale::Quick)
        );
        assert!(h.holds.is_some(), "{h:?}");
        assert!(!h.ours.starts_with("missing"), "{h:?}");
    }
    for name in [
        "fig02-is-pred",
        "fig02-mg-pred",
        "fig03-is-mg-pred",
        "fig04-master-slave-pred",
    ] {
        assert!(out.join(name).join("runs.json").is_file(), "{name}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// `cosched reproduce SEED --sim-only --quick` into a fresh directory: every headline of the seed is simulated,
/// at the quick scale, and computed from this run; the experiments' results and `extra_files` are written.
fn quick_seed_writes_its_headlines(seed: &str, claims: usize, extra_files: &[&str]) {
    let out = std::env::temp_dir().join(format!("cosched-reproduce-{seed}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = cosched()
        .args(["reproduce", seed, "--sim-only", "--quick", "--experiments"])
        .arg(experiments())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let headlines = read_json(&out.join("headlines.json")).unwrap();
    assert_eq!(headlines.len(), claims, "{headlines:#?}");
    for h in &headlines {
        assert_eq!(
            (h.seed.as_str(), h.backend, h.scale),
            (seed, Backend::Sim, Scale::Quick)
        );
        assert!(h.holds.is_some(), "{h:?}");
        assert!(!h.ours.starts_with("missing"), "{h:?}");
    }
    for file in extra_files {
        assert!(out.join(file).is_file(), "{file}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn quick_sim_only_writes_the_seed_004_headlines_and_figures() {
    quick_seed_writes_its_headlines(
        "004",
        5,
        &[
            "dynamicq-figures.md",
            "dq-fig01-wrk1/runs.json",
            "dq-alone-local/runs.json",
        ],
    );
}

#[test]
fn quick_sim_only_writes_the_seed_002_headlines() {
    quick_seed_writes_its_headlines("002", 4, &["nt-fig02-latency/runs.json"]);
}

#[test]
fn quick_sim_only_writes_the_seed_001_headlines() {
    // Seed 001: 7 simulated claims, no real experiment yet.
    quick_seed_writes_its_headlines(
        "001",
        7,
        &[
            "scs-e1/runs.json",
            "scs-e1/table.md",
            "scs-e1/makespan-slowdown.svg",
            "scs-e2/runs.json",
            "scs-e2/table.md",
            "scs-e2/makespan-slowdown.svg",
        ],
    );
}
