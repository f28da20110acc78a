//! Experiment files: every shipped file resolves; malformed files give errors naming the field.

use super::*;
use crate::scenario::{OsModel, ParallelProgram, PolicyConfig, RunQueue, Workload};
use cosched_policy::config::NoneConfig;
use cosched_policy::dcs::DcsParams;
use cosched_policy::registry;
use cosched_policy::spin::ReceiveMode;
use std::path::Path;

fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sim")
}

fn smoke_text() -> String {
    std::fs::read_to_string(shipped_dir().join("smoke.toml")).unwrap()
}

/// Parses the smoke file with `from` replaced by `to` and returns the error text.
fn error_after(from: &str, to: &str) -> String {
    let text = smoke_text();
    assert!(
        text.contains(from),
        "smoke.toml no longer contains {from:?}"
    );
    let edited = text.replacen(from, to, 1);
    match parse(
        Path::new("experiments/x.toml"),
        &edited,
        &Overrides::default(),
    ) {
        Ok(_) => panic!("replacing {from:?} by {to:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_shipped_file_parses_and_validates() {
    // Seed 001's `kind = "smp"` files have their own reader (crate::smp::experiment, tested there).
    let files: Vec<_> = discover(&shipped_dir())
        .unwrap()
        .into_iter()
        .filter(|f| !crate::smp::experiment::is_smp_file(f))
        .collect();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let e = load(&f, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        // Runs = configurations × competitor counts × repetitions.
        assert_eq!(
            e.runs.len(),
            e.configs.len() * e.competitors.len() * e.repetitions as usize,
            "{}",
            e.name
        );
        assert_eq!(
            f.file_stem().unwrap().to_str().unwrap(),
            e.name,
            "file name and experiment name differ"
        );
    }
}

#[test]
fn latency_file_has_the_seeds_parameters() {
    let e = load(
        &shipped_dir().join("fig03-latency.toml"),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(e.competitors, (0..=8).collect::<Vec<_>>());
    let by_label = |l: &str| {
        &e.configs
            .iter()
            .find(|c| c.label.starts_with(l))
            .unwrap()
            .scenario
    };
    assert_eq!(
        by_label("DCS, spin only").coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_ONLY.into())
    );
    assert_eq!(
        by_label("DCS, spin-block").coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into())
    );
    assert_eq!(
        by_label("No DCS, spin-block").receive,
        ReceiveMode::SpinBlock { spin_ns: 1_600_000 }
    );
    assert_eq!(
        by_label("No DCS, spin only").coscheduling,
        PolicyConfig::None(NoneConfig {})
    );
    // 128 bytes, 30 µs fixed + 128 B / 13 MB/s = 9.85 µs → the seed's 40 µs one way.
    assert_eq!(by_label("No DCS").network.latency_ns, 30_000);
    assert_eq!(
        by_label("No DCS").workload,
        Workload::Parallel(ParallelProgram::Latency {
            round_trips: 1_000_000,
            message_bytes: 128
        })
    );
}

#[test]
fn smoke_file_gives_the_seeds_four_schedulers() {
    let e = parse(
        Path::new("smoke.toml"),
        &smoke_text(),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        e.configs[0].scenario.coscheduling,
        PolicyConfig::None(NoneConfig {})
    );
    assert_eq!(
        e.configs[2].scenario.coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_ONLY.into())
    );
    assert_eq!(
        e.configs[3].scenario.coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into())
    );
    // spin_us left out: the seed's 1600 µs.
    assert_eq!(
        e.configs[1].scenario.receive,
        ReceiveMode::spin_block_default()
    );
}

#[test]
fn a_policy_parameter_left_out_takes_the_registrys_default_whatever_the_receive_mode() {
    // The DCS spin-block line with only its kind: E and C are the registry's defaults (the seed's spin-only
    // E = -1, C = 0), not the spin-block values the line's name asks for. (Before the policy table, a left-out
    // E and C followed the receive mode; a default now has one value, the one `cosched policies` prints.)
    let text = smoke_text().replacen(
        "policy = { kind = \"dcs\", exponent = 2, constant_ms = 100 }",
        "policy = { kind = \"dcs\" }",
        1,
    );
    let e = parse(Path::new("x.toml"), &text, &Overrides::default()).unwrap();
    assert_eq!(
        e.configs[3].scenario.receive,
        ReceiveMode::spin_block_default()
    );
    assert_eq!(
        e.configs[3].scenario.coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_ONLY.into())
    );
}

#[test]
fn a_policy_sub_table_is_the_same_as_an_inline_table() {
    let text = smoke_text().replacen(
        "policy = { kind = \"dcs\", exponent = 2, constant_ms = 100 }\nreceive = \"spin-block\"\n",
        "receive = \"spin-block\"\n[configurations.policy]\nkind = \"dcs\"\nexponent = 2\nconstant_ms = 100\n",
        1,
    );
    assert!(text.contains("[configurations.policy]"), "{text}");
    let sub = parse(Path::new("x.toml"), &text, &Overrides::default()).unwrap();
    let inline = parse(Path::new("x.toml"), &smoke_text(), &Overrides::default()).unwrap();
    assert_eq!(sub.configs[3].scenario, inline.configs[3].scenario);
}

/// The experiment schema and the registry agree: for every policy kind a simulated experiment accepts, its
/// table takes exactly the registry's parameters, each at the registry's default gives the same run as leaving
/// it out, and each is read (another value gives another scenario).
#[test]
fn every_simulated_policys_table_takes_exactly_the_registrys_parameters_and_defaults() {
    let dcs_line = "policy = { kind = \"dcs\", exponent = -1, constant_ms = 0 }";
    let with_policy =
        |table: &str| smoke_text().replacen(dcs_line, &format!("policy = {{ {table} }}"), 1);
    let scenario_of = |table: &str| {
        parse(
            Path::new("x.toml"),
            &with_policy(table),
            &Overrides::default(),
        )
        .map(|e| e.configs[2].scenario.clone())
        .map_err(|e| e.to_string())
    };
    let simulated = crate::scenario::simulated_kinds();
    // The seeds' kinds first; a kind added to the policy table later may follow.
    assert_eq!(simulated[..5], ["none", "dcs", "pred", "dyn", "pb"]);
    for kind in simulated {
        let info = registry::find(kind).unwrap();
        let bare = scenario_of(&format!("kind = \"{kind}\"")).unwrap();
        // serde lists the accepted fields when one is unknown: exactly the registry's parameters.
        let err = scenario_of(&format!("kind = \"{kind}\", no_such_field = 1")).unwrap_err();
        assert!(
            err.contains("configurations[2].policy: no_such_field: unknown field"),
            "{err}"
        );
        let accepted: Vec<&str> = if err.contains("there are no fields") {
            Vec::new()
        } else {
            err.split_once("expected")
                .unwrap()
                .1
                .split('`')
                .skip(1)
                .step_by(2)
                .collect()
        };
        let registered: Vec<&str> = info.params.iter().map(|p| p.name).collect();
        assert_eq!(accepted, registered, "{kind}: {err}");
        for p in &info.params {
            let at_default = scenario_of(&format!("kind = \"{kind}\", {} = {}", p.name, p.default));
            assert_eq!(
                at_default.as_ref(),
                Ok(&bare),
                "{kind}.{} = {}",
                p.name,
                p.default
            );
            let other = match p.default.parse::<bool>() {
                Ok(flag) => (!flag).to_string(),
                Err(_) => (p.default.parse::<f64>().unwrap() + 1.0).to_string(),
            };
            let changed = scenario_of(&format!("kind = \"{kind}\", {} = {other}", p.name)).unwrap();
            assert_ne!(changed, bare, "{kind}.{} = {other} was ignored", p.name);
        }
    }
}

#[test]
fn a_policy_the_simulator_does_not_model_is_refused_with_the_ones_it_does() {
    let err = error_after(
        "policy = { kind = \"dcs\", exponent = -1, constant_ms = 0 }",
        "policy = { kind = \"budget\", burst_ms = 80 }",
    );
    assert!(
        err.contains(
            "experiments/x.toml: configurations[2].policy.kind: the simulator does not model the 'budget' \
             policy (yet); use one of: none, dcs, pred, dyn, pb"
        ),
        "{err}"
    );
}

#[test]
fn an_unknown_policy_field_names_the_field_the_kind_and_the_valid_fields() {
    let err = error_after("exponent = -1", "exponant = -1");
    assert!(
        err.contains(
            "experiments/x.toml: configurations[2].policy: exponant: unknown field `exponant`, expected \
             `exponent` or `constant_ms` (in a kind = \"dcs\" policy)"
        ),
        "{err}"
    );
}

#[test]
fn unknown_field_is_named() {
    let err = error_after("round_trips = 2_000", "round_trip = 2_000");
    assert!(
        err.starts_with("experiments/x.toml: workload.latency"),
        "{err}"
    );
    assert!(err.contains("unknown field `round_trip`"), "{err}");
}

#[test]
fn misspelt_section_is_named() {
    let err = error_after("[cluster]", "[clutser]");
    assert!(err.contains("unknown field `clutser`"), "{err}");
}

#[test]
fn wrong_type_is_named() {
    let err = error_after("repetitions = 2", "repetitions = \"two\"");
    assert!(
        err.contains("repetitions: invalid type: string \"two\""),
        "{err}"
    );
}

#[test]
fn negative_competitors_are_named_with_their_index() {
    let err = error_after(
        "competitors_per_node = [0, 1, 2]",
        "competitors_per_node = [0, -1, 2]",
    );
    assert!(err.contains("sweep.competitors_per_node[1]"), "{err}");
    assert!(err.contains("-1"), "{err}");
}

#[test]
fn unknown_policy_kind_lists_the_valid_ones() {
    let err = error_after("kind = \"dcs\"", "kind = \"gang\"");
    assert!(
        err.contains(
            "experiments/x.toml: configurations[2].policy.kind: unknown variant `gang`, expected one of `none`, \
             `dcs`, `budget`"
        ),
        "{err}"
    );
}

#[test]
fn a_policy_given_by_name_alone_is_shown_the_table_form() {
    let err = error_after("policy = { kind = \"none\" }", "policy = \"none\"");
    assert!(
        err.contains("configurations[0].policy: invalid type: string \"none\", expected a policy table with its kind"),
        "{err}"
    );
}

#[test]
fn spin_us_on_spin_only_is_refused() {
    let err = error_after(
        "receive = \"spin-only\"\n",
        "receive = \"spin-only\"\nspin_us = 1600\n",
    );
    assert!(
        err.contains("configurations[0].spin_us: only applies to receive = \"spin-block\""),
        "{err}"
    );
}

#[test]
fn exponent_out_of_range_is_named() {
    let err = error_after("exponent = -1", "exponent = 99");
    assert!(
        err.contains(
            "experiments/x.toml: configurations[2].policy.exponent: 99 is out of range -40..=40"
        ),
        "{err}"
    );
}

#[test]
fn a_negative_constant_is_named() {
    let err = error_after("constant_ms = 0", "constant_ms = -5");
    assert!(
        err.contains("configurations[2].policy.constant_ms: -5 ms is out of range"),
        "{err}"
    );
}

#[test]
fn dcs_parameters_on_no_dcs_are_refused() {
    let err = error_after(
        "policy = { kind = \"none\" }",
        "policy = { kind = \"none\", constant_ms = 100 }",
    );
    assert!(
        err.contains(
            "configurations[0].policy: constant_ms: unknown field `constant_ms`, there are no fields (in a \
             kind = \"none\" policy)"
        ),
        "{err}"
    );
}

#[test]
fn unknown_receive_mode_lists_the_valid_ones() {
    let err = error_after("receive = \"spin-only\"", "receive = \"poll\"");
    assert!(err.contains("configurations[0].receive"), "{err}");
    assert!(
        err.contains("spin-only") && err.contains("spin-block") && err.contains("block"),
        "{err}"
    );
}

#[test]
fn missing_field_is_named() {
    let err = error_after("repetitions = 2\n", "");
    assert!(err.contains("missing field `repetitions`"), "{err}");
}

#[test]
fn latency_needs_two_nodes_and_batch_needs_mixed() {
    let err = error_after("nodes = 2", "nodes = 3");
    assert!(
        err.contains(
            "cluster.nodes: 3 nodes; the latency workload is a ping-pong between exactly 2 nodes"
        ),
        "{err}"
    );
    let err = error_after(
        "receive = \"spin-only\"\n",
        "receive = \"spin-only\"\nbatch = true\n",
    );
    assert!(err.contains("configurations[0].batch"), "{err}");
}

#[test]
fn all_problems_of_a_file_are_listed_at_once() {
    let text = smoke_text().replacen("nodes = 2", "nodes = 3", 1).replacen(
        "repetitions = 2",
        "repetitions = 0",
        1,
    );
    let err = parse(Path::new("x.toml"), &text, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.contains("x.toml: repetitions: 0 repetitions"), "{err}");
}

#[test]
fn toml_syntax_errors_give_the_line() {
    let err = error_after("seed = 7", "seed = = 7");
    assert!(err.contains("experiments/x.toml"), "{err}");
    assert!(err.contains("line"), "{err}");
}

#[test]
fn quick_divides_work_and_caps_repetitions() {
    let quick = Overrides {
        repetitions: Some(5),
        quick: true,
    };
    let e = parse(Path::new("smoke.toml"), &smoke_text(), &quick).unwrap();
    // 2,000 round trips / 100 = 20; 5 repetitions capped at 2.
    assert_eq!(
        e.configs[0].scenario.workload,
        Workload::Parallel(ParallelProgram::Latency {
            round_trips: 20,
            message_bytes: 128
        })
    );
    assert_eq!(e.repetitions, 2);
    let more = Overrides {
        repetitions: Some(4),
        quick: false,
    };
    assert_eq!(
        parse(Path::new("smoke.toml"), &smoke_text(), &more)
            .unwrap()
            .repetitions,
        4
    );
}

#[test]
fn run_seeds_are_shared_across_configurations_and_distinct_otherwise() {
    let e = parse(
        Path::new("smoke.toml"),
        &smoke_text(),
        &Overrides::default(),
    )
    .unwrap();
    let seed_of = |config: usize, c: u32, r: u32| {
        e.runs
            .iter()
            .find(|x| x.config == config && x.competitors == c && x.repetition == r)
            .unwrap()
            .seed
    };
    assert_eq!(seed_of(0, 1, 1), seed_of(3, 1, 1));
    let mut seeds: Vec<u64> = e
        .runs
        .iter()
        .filter(|r| r.config == 0)
        .map(|r| r.seed)
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    // 3 competitor counts × 2 repetitions = 6 distinct seeds.
    assert_eq!(seeds.len(), 6);
    assert_ne!(run_seed(1, 0, 0), run_seed(0, 0, 1));
}

#[test]
fn discover_sorts_and_rejects_missing_paths() {
    let files = discover(&shipped_dir()).unwrap();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    let err = discover(Path::new("/nonexistent/exp"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no such experiment file or directory"),
        "{err}"
    );
}

fn temp_out(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cosched-sim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn smoke_runs_end_to_end_through_the_command() {
    let out = temp_out("smoke");
    crate::cli::run(crate::cli::SimArgs {
        path: shipped_dir().join("smoke.toml"),
        out: out.clone(),
        repetitions: None,
        quick: false,
        threads: Some(2),
    })
    .unwrap();
    let dir = out.join("smoke");
    for f in [
        "experiment.json",
        "runs.json",
        "runs.csv",
        "summary.csv",
        "summary_jobs.csv",
        "table.txt",
        "response_time_log.svg",
        "cpu_time_log.svg",
        "response_time_spin_block_linear.svg",
        "fairness.svg",
        "competitor_fairness.svg",
    ] {
        assert!(dir.join(f).is_file(), "{f} was not written");
    }
    let records = cosched_report::write::read_runs_json(&dir.join("runs.json")).unwrap();
    // 4 configurations × 3 competitor counts × 2 repetitions = 24 runs, each finished: 2,000 round trips.
    assert_eq!(records.len(), 24);
    for r in &records {
        assert_eq!(
            r.measurement.work_done, 2_000,
            "{} at {} competitors did not finish",
            r.config, r.competitors
        );
        assert!(r.measurement.parallel_job().is_some());
    }
    // summary.csv: a header and one line per (configuration, competitors) = 1 + 12.
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.csv"))
            .unwrap()
            .lines()
            .count(),
        13
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn same_seed_gives_byte_identical_runs_json_whatever_the_thread_count() {
    let e = load(
        &shipped_dir().join("smoke.toml"),
        &Overrides {
            repetitions: Some(2),
            quick: true,
        },
    )
    .unwrap();
    let hidden = indicatif::ProgressBar::hidden();
    let mut texts = Vec::new();
    for (i, threads) in [1, 2, 2, 3].into_iter().enumerate() {
        let outcomes = runner::run_all(&e, threads, &hidden).unwrap();
        let out = temp_out(&format!("determinism-{i}"));
        output::write_all(&e, &outcomes, &out).unwrap();
        texts.push(std::fs::read(out.join("smoke/runs.json")).unwrap());
        std::fs::remove_dir_all(out).unwrap();
    }
    assert!(
        texts.iter().all(|t| *t == texts[0]),
        "runs.json differs between runs or thread counts"
    );
}

#[test]
fn a_different_seed_changes_the_results() {
    // Guards the test above against passing because nothing depends on the seed at all.
    let text = smoke_text();
    let a = parse(
        Path::new("a.toml"),
        &text,
        &Overrides {
            repetitions: Some(1),
            quick: true,
        },
    )
    .unwrap();
    let b = parse(
        Path::new("b.toml"),
        &text.replacen("seed = 7", "seed = 8", 1),
        &Overrides {
            repetitions: Some(1),
            quick: true,
        },
    )
    .unwrap();
    let hidden = indicatif::ProgressBar::hidden();
    let ra: Vec<_> = runner::run_all(&a, 2, &hidden)
        .unwrap()
        .into_iter()
        .map(|o| o.record.measurement)
        .collect();
    let rb: Vec<_> = runner::run_all(&b, 2, &hidden)
        .unwrap()
        .into_iter()
        .map(|o| o.record.measurement)
        .collect();
    assert_ne!(ra, rb);
}

#[test]
fn every_shipped_experiment_runs_quick_under_every_configuration_it_names() {
    // Examples are tests: each file at 1/100 of its work, one repetition, every configuration and competitor
    // count; every run must finish its work (a hang would show as work_done < work_expected at the time limit).
    let hidden = indicatif::ProgressBar::hidden();
    for file in discover(&shipped_dir()).unwrap() {
        if crate::smp::experiment::is_smp_file(&file) {
            continue;
        }
        let e = load(
            &file,
            &Overrides {
                repetitions: Some(1),
                quick: true,
            },
        )
        .unwrap();
        let outcomes = runner::run_all(&e, 2, &hidden).unwrap();
        assert_eq!(outcomes.len(), e.configs.len() * e.competitors.len());
        for o in &outcomes {
            let m = &o.record.measurement;
            assert_eq!(
                m.work_done, m.work_expected,
                "{}: '{}' at {} competitors",
                e.name, o.record.config, o.record.competitors
            );
        }
        let out = temp_out(&format!("quick-{}", e.name));
        let written = output::write_all(&e, &outcomes, &out).unwrap();
        assert!(written.files.iter().all(|f| f.is_file()));
        std::fs::remove_dir_all(out).unwrap();
    }
}

#[test]
fn sim_bench_runs_the_built_in_figure_3_file_and_refuses_other_workloads() {
    // Not a speed test (speed targets are printed by `cosched sim-bench`, never asserted): the command path.
    let data = temp_out("sim-bench-doc-data");
    let small = crate::cli::SimBenchArgs {
        competitors: 1,
        round_trips: 200,
        experiment: None,
        doc_data: Some(data.clone()),
    };
    crate::cli::bench(small).unwrap();
    // `--doc-data`: the printed table as docs data, one row per configuration of the file (4) and `all`,
    // stamped with the command that re-measures it.
    let table = cosched_report::docdata::DocTable::read(&data.join("sim-bench.json")).unwrap();
    assert_eq!(table.columns[0], "configuration");
    assert_eq!(table.columns.len(), 8);
    assert_eq!(table.rows.len(), 5);
    assert_eq!(table.rows[4][0], "all");
    assert!(
        table.rows[..4].iter().all(|r| r[1] == "200"),
        "{:?}",
        table.rows
    );
    assert_eq!(
        table.source_command,
        "cosched sim-bench --competitors 1 --round-trips 200 --doc-data docs/data"
    );
    let _ = std::fs::remove_dir_all(&data);
    let barrier = crate::cli::SimBenchArgs {
        competitors: 1,
        round_trips: 200,
        experiment: Some(shipped_dir().join("fig04-barrier.toml")),
        doc_data: None,
    };
    let err = crate::cli::bench(barrier).unwrap_err().to_string();
    assert!(
        err.contains("sim-bench measures the latency workload"),
        "{err}"
    );
}

#[test]
fn the_policy_table_example_in_the_docs_parses() {
    // docs/sim-experiments.md shows the same DCS line as an inline table and as a sub-table, then a No DCS
    // line; put them in place of smoke.toml's configurations and check they mean what the docs say.
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sim-experiments.md"),
    )
    .unwrap();
    let example = docs
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```toml block in docs/sim-experiments.md");
    let smoke = smoke_text();
    let head = &smoke[..smoke.find("[[configurations]]").unwrap()];
    let e = parse(
        Path::new("docs.toml"),
        &format!("{head}{example}"),
        &Overrides::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.configs.len(), 3);
    assert_eq!(e.configs[0].scenario, e.configs[1].scenario);
    assert_eq!(
        e.configs[0].scenario.coscheduling,
        PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into())
    );
    assert_eq!(
        e.configs[2].scenario.coscheduling,
        PolicyConfig::None(NoneConfig {})
    );
}

#[test]
fn the_engine_refuses_a_policy_it_does_not_model_and_bad_parameters() {
    // The safety net behind the file checks: simulate() validates the scenario before the world is built.
    use crate::scenario::{Scenario, SeedConfig};
    use cosched_policy::config::{BudgetConfig, DcsConfig};
    let mut s = Scenario::seed_latency(10, 0, SeedConfig::NoDcsSpinOnly);
    s.coscheduling = PolicyConfig::Budget(BudgetConfig::default());
    let err = crate::simulate(&s, 1).unwrap_err().to_string();
    assert!(
        err.contains(
            "the simulator does not model the 'budget' policy (yet); it models: none, dcs, pred, dyn, pb"
        ),
        "{err}"
    );
    s.coscheduling = PolicyConfig::Dcs(DcsConfig {
        exponent: 41,
        constant_ms: 0.0,
    });
    let err = crate::simulate(&s, 1).unwrap_err().to_string();
    assert!(
        err.contains("coscheduling: dcs policy: exponent: 41 is out of range -40..=40"),
        "{err}"
    );
}

#[test]
fn the_os_table_is_the_scenarios_model_tagged_and_strict() {
    // `[os]` deserialises straight into `scenario::OsModel`: an unknown model lists the known ones, an unknown
    // field names itself and the valid ones.
    let err = error_after("model = \"solaris-ts\"", "model = \"linux-22\"");
    assert!(
        err.contains(
            "os.model: unknown variant `linux-22`, expected one of `solaris-ts`, `linux-2.2`, `nt-4.0`"
        ),
        "{err}"
    );
    let err = error_after(
        "model = \"solaris-ts\"",
        "model = \"solaris-ts\"\nts_quantum_ms = 5",
    );
    assert!(
        err.contains("os: unknown field `ts_quantum_ms`, expected `slpret_ablation`"),
        "{err}"
    );
}

#[test]
fn the_run_queue_is_read_from_the_os_table_and_checked_by_the_model() {
    // Default: a queue per CPU, and the serialised scenario does not mention it (experiment.json as before).
    let e = parse(Path::new("x.toml"), &smoke_text(), &Overrides::default()).unwrap();
    assert!(e
        .configs
        .iter()
        .all(|c| c.scenario.os.run_queue() == RunQueue::PerCpu));
    assert!(!serde_json::to_string(&e.configs[0].scenario)
        .unwrap()
        .contains("run_queue"));
    // An unknown value names the field and the allowed values.
    let err = error_after(
        "model = \"solaris-ts\"",
        "model = \"solaris-ts\"\nrun_queue = \"global\"",
    );
    assert!(
        err.contains(
            "os: run_queue = \"global\" is not a run queue; use \"per-cpu\" or \"shared\""
        ),
        "{err}"
    );
    let err = error_after(
        "model = \"solaris-ts\"",
        "model = \"solaris-ts\"\nrun_queue = 2",
    );
    assert!(
        err.contains("expected run_queue = \"per-cpu\" or \"shared\""),
        "{err}"
    );
    // `shared` parses for every model (it is the model's to refuse): Solaris 2.4's dispatch queues are per CPU,
    // so its first run is refused before it starts, by the model, naming the field.
    let text = smoke_text().replacen(
        "model = \"solaris-ts\"",
        "model = \"solaris-ts\"\nrun_queue = \"shared\"",
        1,
    );
    let e = parse(Path::new("x.toml"), &text, &Overrides::default()).unwrap();
    assert_eq!(e.configs[0].scenario.os.run_queue(), RunQueue::Shared);
    assert_eq!(
        e.configs[0].scenario.os.label(),
        "solaris-ts, shared run queue"
    );
    let err = runner::run_one(&e, &e.runs[0]).unwrap_err().to_string();
    assert!(
        err.contains(
            "os.run_queue = \"shared\" cannot run here: the OS model 'solaris-ts' cannot keep one run queue \
             per node"
        ),
        "{err}"
    );
    // A configuration's `os` may set it: the shipped Linux 2.2 file compares both organisations in one figure.
    let e = load(
        &shipped_dir().join("linux-smp-run-queue.toml"),
        &Overrides::default(),
    )
    .unwrap();
    let queues: Vec<RunQueue> = e
        .configs
        .iter()
        .map(|c| c.scenario.os.run_queue())
        .collect();
    assert!(queues.contains(&RunQueue::PerCpu) && queues.contains(&RunQueue::Shared));
    for c in &e.configs {
        assert_eq!(
            c.scenario.os.run_queue() == RunQueue::Shared,
            c.label.contains("shared"),
            "{}",
            c.label
        );
    }
}

#[test]
fn a_configuration_may_replace_the_os_model() {
    // Figure 9 puts both dispatch tables in one experiment: the ablated configurations say so themselves.
    let e = load(
        &shipped_dir().join("fig09-slpret-ablation.toml"),
        &Overrides::default(),
    )
    .unwrap();
    let ablated: Vec<bool> = e
        .configs
        .iter()
        .map(|c| {
            c.scenario.os
                == OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
                    slpret_ablation: true,
                    run_queue: RunQueue::PerCpu,
                })
        })
        .collect();
    let labels: Vec<&str> = e.configs.iter().map(|c| c.label.as_str()).collect();
    for (label, ablated) in labels.iter().zip(&ablated) {
        assert_eq!(*ablated, label.contains("ts_slpret[n]=n"), "{label}");
    }
    assert!(ablated.iter().any(|a| *a) && ablated.iter().any(|a| !*a));
}

#[test]
fn a_configuration_may_replace_the_message_size_of_a_one_size_workload_and_only_of_one() {
    // Seed 003's master–slave sweep: each configuration names its size; the rest keep the workload's 1 KB.
    let e = load(
        &shipped_dir().join("master-slave-sweep-pred.toml"),
        &Overrides::default(),
    )
    .unwrap();
    for c in &e.configs {
        let ParallelProgram::MasterSlave { message_bytes, .. } = c.scenario.workload.parallel()
        else {
            panic!("{}: not master-slave", c.label);
        };
        let named = c
            .label
            .split_whitespace()
            .find_map(|w| w.strip_suffix('K')?.parse::<u32>().ok())
            .unwrap();
        assert_eq!(message_bytes, named * 1024, "{}", c.label);
    }
    // The smoke file's latency workload takes it; zero bytes and a workload of many sizes are refused by name.
    let smoke = |extra: &str| {
        smoke_text().replacen(
            "receive = \"spin-only\"",
            &format!("receive = \"spin-only\"\n{extra}"),
            1,
        )
    };
    let e = parse(
        Path::new("experiments/x.toml"),
        &smoke("message_bytes = 4096"),
        &Overrides::default(),
    )
    .unwrap();
    assert!(matches!(
        e.configs[0].scenario.workload.parallel(),
        ParallelProgram::Latency {
            message_bytes: 4096,
            ..
        }
    ));
    let [err, _] = errors_of(&smoke("message_bytes = 0"));
    assert!(
        err.contains("configurations[0].message_bytes: 0 bytes"),
        "{err}"
    );
    let is = std::fs::read_to_string(shipped_dir().join("fig02-is-pred.toml"))
        .unwrap()
        .replacen(
            "receive = \"block\"",
            "receive = \"block\"\nmessage_bytes = 4096",
            1,
        );
    let [err, _] = errors_of(&is);
    assert!(
        err.contains("configurations[0].message_bytes: the is workload has no one message size"),
        "{err}"
    );
}

#[test]
fn an_arriving_job_in_the_file_runs_beside_the_workload_in_every_configuration() {
    // Seed 003 Figure 3: IS is the workload, MG class T arrives at 0 s on nodes 0-3; --quick divides its 600
    // V-cycles by 100 like the workload's own iterations (10 → 1).
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sim/fig03-is-mg-pred.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let quick = Overrides {
        quick: true,
        ..Overrides::default()
    };
    let e = parse(&path, &text, &quick).unwrap();
    for config in &e.configs {
        let arrivals = &config.scenario.arrivals;
        assert_eq!(arrivals.len(), 1);
        assert_eq!(
            (arrivals[0].name.as_str(), arrivals[0].arrival_ns),
            ("mg", 0)
        );
        assert_eq!(arrivals[0].nodes, vec![0, 1, 2, 3]);
        assert!(matches!(
            arrivals[0].program,
            ParallelProgram::Mg {
                iterations: 6,
                levels: 5,
                ..
            }
        ));
    }
    // A mixed workload cannot arrive.
    let bad = text.replace("[arrivals.workload.mg]", "[arrivals.workload.mixed.sor]");
    assert!(parse(&path, &bad, &quick).is_err());
}

/// Parses `text` (at full scale and under `--quick`) and returns both error texts; a file that is accepted, or a
/// panic (an overflow in a debug build), fails the test.
fn errors_of(text: &str) -> [String; 2] {
    let quick = Overrides {
        quick: true,
        ..Overrides::default()
    };
    [Overrides::default(), quick].map(|o| match parse(Path::new("x.toml"), text, &o) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    })
}

fn mixed_text() -> String {
    std::fs::read_to_string(shipped_dir().join("fig07-mixed.toml")).unwrap()
}

#[test]
fn an_overflowing_sequential_cpu_total_is_named_with_its_value_and_limit() {
    // total_cpu_ms × 10^6 ns: u64::MAX ms would wrap in release and panic in debug before issue 33.
    // u64::MAX; the first value whose product overflows; the first one past the limit.
    for value in [u64::MAX, u64::MAX / 1_000_000 + 1, 1_000_000_000_001] {
        let text = mixed_text().replacen(
            "total_cpu_ms = 40_000",
            &format!("total_cpu_ms = {value}"),
            1,
        );
        for err in errors_of(&text) {
            assert!(
                err.contains(&format!(
                    "workload.mixed.sequential[0].total_cpu_ms: {value} ms is more than the limit of \
                     1000000000000 ms"
                )),
                "{err}"
            );
        }
    }
    // The limit itself is accepted.
    let at_limit = mixed_text().replacen(
        "total_cpu_ms = 40_000",
        "total_cpu_ms = 1_000_000_000_000",
        1,
    );
    parse(Path::new("x.toml"), &at_limit, &Overrides::default()).unwrap();
}

#[test]
fn microsecond_fields_beyond_their_limit_are_named_not_multiplied() {
    // Each was checked but its product still computed (a panic in debug builds) before issue 33.
    let barrier = std::fs::read_to_string(shipped_dir().join("fig04-barrier.toml")).unwrap();
    let ms = std::fs::read_to_string(shipped_dir().join("fig04-master-slave-pred.toml")).unwrap();
    let max = u64::MAX;
    let cases: [(String, &str, &str, String); 5] = [
        (
            smoke_text(),
            "context_switch_us = 750",
            "cluster.context_switch_us",
            format!("{max} µs is more than the limit of 999999 µs"),
        ),
        (
            smoke_text(),
            "latency_us = 30",
            "network.latency_us",
            format!("{max} µs is more than the limit of 10000000 µs"),
        ),
        (
            smoke_text(),
            "receive = \"spin-block\"",
            "configurations[1].spin_us",
            format!("{max} µs is more than the limit of 10000000 µs"),
        ),
        (
            barrier,
            "compute_us = 78",
            "workload.barrier.compute_us",
            format!("{max} µs is more than the limit of 60000000 µs"),
        ),
        (
            ms,
            "compute_us = 1000",
            "workload.master-slave.compute_us",
            format!("{max} µs is more than the limit of 3600000000 µs"),
        ),
    ];
    for (text, from, field, message) in cases {
        assert!(text.contains(from), "{from}");
        let to = match from.split_once(" = ") {
            Some(("receive", _)) => format!("{from}\nspin_us = {max}"),
            Some((key, _)) => format!("{key} = {max}"),
            None => unreachable!(),
        };
        for err in errors_of(&text.replacen(from, &to, 1)) {
            assert!(
                err.contains(&format!("{field}: {message}")),
                "{field}: {err}"
            );
        }
    }
}

#[test]
fn a_huge_cluster_or_run_count_is_named_not_allocated() {
    // Node counts, CPUs a node and repetitions are bounded before anything is built from them.
    let err = error_after("nodes = 2", "nodes = 4294967295");
    assert!(
        err.contains("cluster.nodes: 4294967295 is more than the limit of 65536 nodes"),
        "{err}"
    );
    let err = error_after("cpus_per_node = 1", "cpus_per_node = 4294967295");
    assert!(
        err.contains("cluster.cpus_per_node: 4294967295 is more than the limit of 64 CPUs a node"),
        "{err}"
    );
    let err = error_after("repetitions = 2", "repetitions = 4294967295");
    assert!(
        err.contains("repetitions: 4294967295 is more than the limit of 10000"),
        "{err}"
    );
    // 4 configurations × 3 counts × 10,000 repetitions = 120,000 runs.
    let err = error_after("repetitions = 2", "repetitions = 10000");
    assert!(
        err.contains(
            "repetitions: 4 configurations × 3 competitor counts × 10000 repetitions is more than the limit \
             of 100000 runs"
        ),
        "{err}"
    );
    let too_many = Overrides {
        repetitions: Some(u32::MAX),
        quick: false,
    };
    let err = parse(Path::new("x.toml"), &smoke_text(), &too_many)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--repetitions: 4294967295 is more than the limit of 10000"),
        "{err}"
    );
}

#[test]
fn an_sor_iteration_too_long_for_the_clock_is_named_with_its_product() {
    // ceil(128 / 7) = 19 rows × 128 cells × u64::MAX ns overflows; 19 × 128 × 2 × 10^9 ns is over an hour.
    for cell in [u64::MAX, 2_000_000_000] {
        let text = mixed_text().replacen(
            "cell_compute_ns = 1_000",
            &format!("cell_compute_ns = {cell}"),
            1,
        );
        for err in errors_of(&text) {
            assert!(
                err.contains(&format!(
                    "workload.mixed.sor.cell_compute_ns: {cell} ns a cell × 19 rows × 128 cells a row (a \
                     128×128 grid over 7 nodes) is more than the limit of 3600000000000 ns"
                )),
                "{err}"
            );
        }
    }
    let text = mixed_text().replacen("grid = 128", "grid = 4294967295", 1);
    for err in errors_of(&text) {
        assert!(err.contains("workload.mixed.sor.cell_compute_ns: 1000 ns a cell × 613566757 rows × 4294967295 cells a row"), "{err}");
    }
}

#[test]
fn a_static_quantum_of_u64_max_ms_is_refused_by_name() {
    let text = std::fs::read_to_string(shipped_dir().join("dq-fig01-wrk1.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("rule = \"static\""))
        .expect("dq-fig01-wrk1.toml has a STATICQ configuration");
    let start = line.find("ms = ").unwrap() + 5;
    let end = start
        + line[start..]
            .find(|c: char| !c.is_ascii_digit() && c != '_')
            .unwrap();
    let edited_line = format!("{}{}{}", &line[..start], u64::MAX, &line[end..]);
    let text = text.replacen(line, &edited_line, 1);
    for err in errors_of(&text) {
        assert!(
            err.contains(&format!(
                "os.quantum.ms: {} ms is outside one 10 ms tick .. an hour",
                u64::MAX
            )),
            "{err}"
        );
    }
}

fn example_path() -> PathBuf {
    shipped_dir().join("examples/stream-two-jobs.toml")
}

/// The example file with its `[stream]` arrivals replaced by `arrivals` (a `submit_s = [...]` or `generator =
/// {...}` line).
fn example_with_stream(arrivals: &str) -> String {
    let text = std::fs::read_to_string(example_path()).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("generator = "))
        .expect("the example's [stream] has a generator line");
    text.replacen(line, arrivals, 1)
}

#[test]
fn the_stream_example_runs_through_the_command_and_measures_every_job() {
    let out = temp_out("stream-example");
    crate::cli::run(crate::cli::SimArgs {
        path: example_path(),
        out: out.clone(),
        repetitions: None,
        quick: true,
        threads: Some(2),
    })
    .unwrap();
    let records = cosched_report::write::read_runs_json(
        &out.join("example-stream-two-jobs").join("runs.json"),
    )
    .unwrap();
    // 2 configurations × 2 competitor counts × 2 repetitions.
    assert_eq!(records.len(), 8);
    for r in &records {
        let m = &r.measurement;
        let extra = |key: &str| *m.extra.get(key).unwrap_or_else(|| panic!("{key} missing"));
        // The barrier job (the workload's) and MG (the arrival) both finished their work.
        assert_eq!(m.work_done, 20, "{}", r.config);
        assert_eq!(extra("mg.work_done"), extra("mg.work_expected"));
        assert_eq!(extra("mg.start_s"), 0.2);
        // And the stream's jobs: at least one a run, every one finished.
        let stream_jobs: Vec<&String> = m
            .extra
            .keys()
            .filter(|k| k.starts_with("stream-") && k.ends_with(".work_done"))
            .collect();
        assert!(!stream_jobs.is_empty(), "{}: no stream job", r.config);
        for key in stream_jobs {
            let name = key.trim_end_matches(".work_done");
            assert_eq!(
                extra(key),
                extra(&format!("{name}.work_expected")),
                "{name} unfinished"
            );
        }
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn two_measured_jobs_both_get_results() {
    // The workload's barrier job and the MG arrival, no stream, at full scale.
    let text = std::fs::read_to_string(example_path()).unwrap();
    let start = text.find("\n[stream]\n").unwrap();
    let end = text.find("\n[sweep]\n").unwrap();
    let text = format!("{}{}", &text[..start], &text[end..]);
    let e = parse(&example_path(), &text, &Overrides::default()).unwrap();
    assert!(e.stream.is_none());
    let run = &e.runs[0];
    assert_eq!(run.scenario.arrivals.len(), 1);
    let out = crate::simulate(&run.scenario, run.seed).unwrap();
    let names: Vec<&str> = out.measured_jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["barrier", "mg"]);
    for job in &out.measured_jobs {
        assert!(job.work_expected > 0, "{}", job.name);
        assert_eq!(job.work_done, job.work_expected, "{} unfinished", job.name);
        assert!(job.finished_ns.is_some(), "{}", job.name);
    }
    assert_eq!(out.measured_jobs[0].work_expected, 2_000);
    assert_eq!(out.measured_jobs[1].work_expected, 100);
    assert_eq!(out.measured_jobs[1].started_ns, Some(200_000_000));
    let m = &out.measurement;
    assert_eq!(m.work_done, 2_000);
    assert_eq!(m.extra["mg.work_done"], 100.0);
}

#[test]
fn a_listed_streams_jobs_arrive_at_their_submit_times() {
    let text = example_with_stream("submit_s = [0.1, 0.25, 0.25, 1.5]");
    let e = parse(&example_path(), &text, &Overrides::default()).unwrap();
    let run = &e.runs[0];
    let stream: Vec<_> = run.scenario.arrivals[1..].iter().collect();
    assert_eq!(
        stream
            .iter()
            .map(|j| (j.name.as_str(), j.arrival_ns, j.nodes.clone()))
            .collect::<Vec<_>>(),
        [
            ("stream-000", 100_000_000, vec![0, 1]),
            ("stream-001", 250_000_000, vec![2, 3]),
            ("stream-002", 250_000_000, vec![0, 1]),
            ("stream-003", 1_500_000_000, vec![2, 3]),
        ]
    );
    let out = crate::simulate(&run.scenario, run.seed).unwrap();
    let started: Vec<(&str, Option<u64>)> = out
        .measured_jobs
        .iter()
        .filter(|j| j.name.starts_with("stream-"))
        .map(|j| (j.name.as_str(), j.started_ns))
        .collect();
    assert_eq!(
        started,
        [
            ("stream-000", Some(100_000_000)),
            ("stream-001", Some(250_000_000)),
            ("stream-002", Some(250_000_000)),
            ("stream-003", Some(1_500_000_000)),
        ]
    );
    assert!(out
        .measured_jobs
        .iter()
        .all(|j| j.work_done == j.work_expected));
    // --quick divides the submit times by 100 with the work.
    let quick = Overrides {
        quick: true,
        ..Overrides::default()
    };
    let e = parse(&example_path(), &text, &quick).unwrap();
    let times: Vec<u64> = e.runs[0].scenario.arrivals[1..]
        .iter()
        .map(|j| j.arrival_ns)
        .collect();
    assert_eq!(times, [1_000_000, 2_500_000, 2_500_000, 15_000_000]);
}

#[test]
fn a_generated_stream_is_shared_by_configurations_and_drawn_anew_per_repetition() {
    let e = parse(
        &example_path(),
        &std::fs::read_to_string(example_path()).unwrap(),
        &Overrides::default(),
    )
    .unwrap();
    let Some(JobStream {
        arrivals:
            StreamArrivals::Generated {
                mean_gap_ns,
                horizon_ns,
                max_jobs,
            },
        ..
    }) = &e.stream
    else {
        panic!("{:?}", e.stream)
    };
    // 2 nodes × 0.5 s / (0.3 × 4 CPUs) = 0.8333 s; drawn until 4 s.
    assert!((mean_gap_ns - 0.5e9 / 0.6).abs() < 1.0, "{mean_gap_ns}");
    assert_eq!(*horizon_ns, 4_000_000_000);
    // 4 s / 0.8333 s = 4.8 expected: cut at ceil(3 × 4.8) + 30 = 45.
    assert_eq!(*max_jobs, 45);
    let stream_of = |run: &PlannedRun| -> Vec<u64> {
        run.scenario.arrivals[1..]
            .iter()
            .map(|j| j.arrival_ns)
            .collect()
    };
    let same_point = |a: &PlannedRun, b: &PlannedRun| {
        a.competitors == b.competitors && a.repetition == b.repetition
    };
    let mut counts = Vec::new();
    for a in &e.runs {
        let arrivals = stream_of(a);
        assert!(arrivals.windows(2).all(|w| w[0] <= w[1]));
        assert!(arrivals.iter().all(|&t| t <= 4_000_000_000));
        counts.push(arrivals.len());
        for b in &e.runs {
            if same_point(a, b) {
                assert_eq!(arrivals, stream_of(b), "configurations share the stream");
            } else if a.config == b.config {
                assert_ne!(arrivals, stream_of(b), "each point draws its own");
            }
        }
    }
    // Four points' draws average near the expected 4.8 jobs (Poisson: between 1 and 12 each, surely).
    assert!(counts.iter().all(|&n| (1..=12).contains(&n)), "{counts:?}");
}

#[test]
fn a_bad_stream_is_named_by_field() {
    let cases = [
        (
            "submit_s = [0.5, 0.1]",
            "stream.submit_s[1]: 0.1 s is before the previous job's 0.5 s",
        ),
        (
            "submit_s = [-1.0]",
            "stream.submit_s[0]: -1 is outside 0..=1000000000 seconds",
        ),
        (
            "submit_s = []",
            "stream.submit_s: 0 jobs; list 1..=1000 submit times",
        ),
        (
            "generator = { load = 1.5, dedicated_s = 0.5, horizon_s = 4 }",
            "stream.generator.load: 1.5: give the offered load as a fraction in (0, 1]",
        ),
        (
            "generator = { load = 0.3, dedicated_s = 0, horizon_s = 4 }",
            "stream.generator.dedicated_s: 0 s: give the job's run time alone",
        ),
        (
            "generator = { load = 0.3, dedicated_s = 10000001, horizon_s = 4 }",
            "stream.generator.dedicated_s: 10000001 is outside 0..=10000000 seconds",
        ),
        (
            "generator = { load = 1, dedicated_s = 0.001, horizon_s = 1e9 }",
            "stream.generator.horizon_s: 1000000000 s at load 1 holds about 2000000000000 jobs",
        ),
        (
            "submit_s = [1]\ngenerator = { load = 0.3, dedicated_s = 0.5, horizon_s = 4 }",
            "stream: give exactly one of submit_s = [...] (listed arrivals) and generator",
        ),
    ];
    for (arrivals, expected) in cases {
        let [full, quick] = errors_of(&example_with_stream(arrivals));
        assert!(full.contains(expected), "{arrivals}: {full}");
        assert!(quick.contains(expected), "{arrivals}: {quick}");
    }
    let text = std::fs::read_to_string(example_path()).unwrap();
    for (from, to, expected) in [
        (
            "nodes_per_job = 2",
            "nodes_per_job = 5",
            "stream.nodes_per_job: 5 is outside 1..=4",
        ),
        (
            "[stream.workload.sp]\niterations = 50",
            "[stream.workload.sp]\niterations = 0",
            "stream.workload.sp.iterations: must be at least 1",
        ),
        (
            "[stream.workload.sp]\niterations = 50\ncompute_ms = 10\nface_bytes = 4_096",
            "[stream.workload.latency]\nround_trips = 10\nmessage_bytes = 8",
            "",
        ),
        (
            "repetitions = 2",
            "repetitions = 10000",
            "stream: 40000 runs × up to 45 stream jobs each is more than the limit of 1000000 stream jobs in all",
        ),
        (
            "name = \"mg\"",
            "name = \"stream-007\"",
            "arrivals[0].name: 'stream-007': names starting with 'stream-' are the [stream]'s jobs'",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let edited = text.replacen(from, to, 1);
        if expected.is_empty() {
            // A 2-node latency job is a valid stream job.
            parse(&example_path(), &edited, &Overrides::default()).unwrap();
            continue;
        }
        // (At full scale: `--quick` makes at least one iteration of every program, as for the workload's own.)
        let err = parse(&example_path(), &edited, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{to}: {err}");
    }
    // A 3-node latency job is not: the ping-pong has 2 ranks.
    let three = text
        .replacen("nodes_per_job = 2", "nodes_per_job = 3", 1)
        .replacen(
            "[stream.workload.sp]\niterations = 50\ncompute_ms = 10\nface_bytes = 4_096",
            "[stream.workload.latency]\nround_trips = 10\nmessage_bytes = 8",
            1,
        );
    for err in errors_of(&three) {
        assert!(
            err.contains("stream.nodes_per_job: a latency job has 2 ranks, got 3"),
            "{err}"
        );
    }
}

#[test]
fn the_header_names_the_arriving_jobs_and_the_stream() {
    let e = load(&example_path(), &Overrides::default()).unwrap();
    let header = super::output::header(&e, 2);
    assert!(
        header.contains("   arriving job 'mg' at 0.2 s on nodes [0, 1, 2, 3]: "),
        "{header}"
    );
    assert!(
        header.contains(
            "   stream: jobs of 2 node(s) (exponential arrivals, mean gap 0.833 s, until 4 s, drawn per run): "
        ),
        "{header}"
    );
    let listed = parse(
        &example_path(),
        &example_with_stream("submit_s = [0.1, 1.5]"),
        &Overrides::default(),
    )
    .unwrap();
    assert!(super::output::header(&listed, 2)
        .contains("   stream: jobs of 2 node(s) (2 listed arrival(s), 0.100 s to 1.500 s): "));
}
