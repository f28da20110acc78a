//! Adding an OS model to the simulator touches at most three files (issue 31): the model's own file in
//! `crates/sim/src/os/`, its row in the model table (`every_os_model!` in `os/mod.rs`), and an experiment file.
//! The example model `round-robin-example`, plain round robin, is that proof: from those three files alone an
//! experiment file's `[os] model = "round-robin-example"` is read, validated and run by the simulator.

mod common;

use common::root;

const MODEL: &str = "round-robin-example";

#[test]
fn the_example_experiment_runs_on_the_example_model() {
    let out = tempfile::tempdir().unwrap();
    cosched_sim::cli::run(cosched_sim::cli::SimArgs {
        path: root().join("experiments/sim/examples/round-robin-example.toml"),
        out: out.path().to_path_buf(),
        repetitions: None,
        quick: true,
        threads: Some(1),
    })
    .expect("the example experiment runs");
    let runs: Vec<serde_json::Value> = serde_json::from_slice(
        &std::fs::read(out.path().join("example-round-robin-example/runs.json")).unwrap(),
    )
    .unwrap();
    let at = |competitors: u64| -> Vec<&serde_json::Value> {
        runs.iter()
            .filter(|r| r["competitors"] == competitors)
            .map(|r| &r["measurement"])
            .collect()
    };
    let (alone, shared) = (at(0), at(1));
    assert!(!alone.is_empty() && alone.len() == shared.len(), "{runs:?}");
    for m in alone.iter().chain(&shared) {
        // The job completes all its round trips.
        assert_eq!(m["work_done"], m["work_expected"], "{m}");
        assert!(m["work_done"].as_u64().unwrap() > 0, "{m}");
    }
    for (a, s) in alone.iter().zip(&shared) {
        let p99 = |m: &serde_json::Value| m["rtt_p99_us"].as_f64().unwrap();
        // Beside a competitor, round robin makes a round trip wait out the competitor's 10 ms quantum.
        assert!(
            p99(a) < 10_000.0 && p99(s) > 10_000.0,
            "alone {a} beside a competitor {s}"
        );
        // The competitor gets its turns: it ran for at least one quantum.
        assert!(s["jobs"][1]["cpu_s"].as_f64().unwrap() >= 0.010, "{s}");
    }
}

#[test]
fn adding_the_example_model_touched_three_files() {
    let found = common::files_naming(
        &[MODEL, "round_robin_example", "RoundRobinExample"],
        "cli/tests/adding_an_os_model.rs",
    );
    assert_eq!(
        found,
        [
            // Its row in the model table, which also declares its module.
            "crates/sim/src/os/mod.rs",
            // Its scheduler, its `[os]` parameters and how they build it.
            "crates/sim/src/os/round_robin_example.rs",
            // An experiment that runs it.
            "experiments/sim/examples/round-robin-example.toml",
        ],
        "a model that needs a change elsewhere is not added in three files"
    );
}
