//! Adding a coscheduling policy touches at most three files (issue 31, item 1): the policy's own file in the
//! policy core, its row in the policy table, and an experiment file. The example policy `noop-example`, which does
//! nothing, is that proof: from those three files alone it is listed by `cosched policies`, accepted by
//! `cosched agent --policy`, and read from an experiment file's policy table and run by the simulator.

use clap::{Args, FromArgMatches};
use cosched_agent::cli::AgentArgs;
use cosched_agent::policy::Host;
mod common;

use common::root;

const KIND: &str = "noop-example";

#[test]
fn the_example_policy_is_listed_by_cosched_policies() {
    assert!(cosched_policy::registry::find(KIND).is_ok());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosched"))
        .arg("policies")
        .output()
        .expect("cosched policies runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Once in the policy core's table and once among what the agent runs.
    let listed = text
        .lines()
        .filter(|l| l.starts_with(&format!("{KIND} ")))
        .count();
    assert_eq!(listed, 2, "{text}");
}

#[test]
fn the_agent_accepts_the_example_policy_and_refuses_another_policys_flag() {
    let agent = |args: &[&str]| {
        let matches = AgentArgs::augment_args(clap::Command::new("agent"))
            .try_get_matches_from(args)
            .unwrap();
        AgentArgs::from_arg_matches(&matches)
            .unwrap()
            .policy(&Host {
                kernel_tick_ns: 4_000_000,
            })
    };
    let policy = agent(&["agent", "--policy", KIND]).unwrap();
    // It does nothing: no parameters, no counters, no tick of its own.
    assert!(policy.describe().is_empty() && policy.counters().is_empty());
    assert!(!policy.tick_needed());
    let err = agent(&["agent", "--policy", KIND, "--boost-us", "500"])
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--boost-us belongs to policy 'dcs'"), "{err}");
}

#[test]
fn the_example_experiment_runs_the_policy_as_no_coscheduling() {
    let out = tempfile::tempdir().unwrap();
    cosched_sim::cli::run(cosched_sim::cli::SimArgs {
        path: root().join("experiments/sim/examples/noop-example.toml"),
        out: out.path().to_path_buf(),
        repetitions: None,
        quick: true,
        threads: Some(1),
    })
    .expect("the example experiment runs");
    let runs: Vec<serde_json::Value> = serde_json::from_slice(
        &std::fs::read(out.path().join("example-noop-example/runs.json")).unwrap(),
    )
    .unwrap();
    let of = |config: &str| -> Vec<&serde_json::Value> {
        runs.iter().filter(|r| r["config"] == config).collect()
    };
    let (none, example) = (of("No coscheduling"), of(KIND));
    assert!(
        !example.is_empty() && example.len() == none.len(),
        "{runs:?}"
    );
    // Each run of the example measures what no coscheduling measures at the same point and seed.
    for (a, b) in none.iter().zip(&example) {
        for key in ["competitors", "repetition", "seed", "measurement"] {
            assert_eq!(a[key], b[key], "{key}");
        }
    }
}

#[test]
fn adding_the_example_policy_touched_three_files() {
    let found = common::files_naming(
        &["noop-example", "noop_example", "NoopExample"],
        "cli/tests/adding_a_policy.rs",
    );
    assert_eq!(
        found,
        [
            // Its table row and `pub mod` line.
            "crates/policy/src/lib.rs",
            // Its parameters, what it does, and that it does nothing.
            "crates/policy/src/noop_example.rs",
            // An experiment that runs it.
            "experiments/sim/examples/noop-example.toml",
        ],
        "a policy that needs a change elsewhere is not added in three files"
    );
}
