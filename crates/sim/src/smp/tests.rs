//! The machine's behaviour, end to end (seed `001_cc73854eda2a0ea6.txt`).

use super::apps::App;
use super::jobs::{iterations_for, JobSpec};
use super::machine::{run, MachineParams, SmpError, SmpPolicy};
use cosched_policy::config::{CsConfig, PolicyConfig, ScsConfig};
use cosched_policy::predictive::PbParams;
use cosched_policy::scs::ScsError;
use cosched_policy::{MILLIS, SECONDS};

fn job(i: usize, app: App, procs: u32, iterations: u32) -> JobSpec {
    JobSpec {
        name: format!("j{i:03} {}", app.name()),
        app,
        procs,
        arrival_ns: 0,
        iterations,
    }
}

fn scs(mpl: u32) -> SmpPolicy {
    super::smp_policy(&PolicyConfig::Scs(ScsConfig {
        mpl,
        ..ScsConfig::default()
    }))
    .unwrap()
}

fn cs(mpl: u32) -> SmpPolicy {
    super::smp_policy(&PolicyConfig::Cs(CsConfig {
        mpl,
        ..CsConfig::default()
    }))
    .unwrap()
}

#[test]
fn dedicated_blocked_fraction_is_in_each_apps_band() {
    let machine = MachineParams::default();
    for app in App::ALL {
        let jobs = [job(0, app, 64, iterations_for(app, 2 * SECONDS))];
        let out = run(&machine, SmpPolicy::Fifo, &jobs, 1).unwrap();
        assert!(out.finished);
        let blocked = out.jobs[0].blocked_fraction();
        let (low, high) = app.degree().band();
        assert!(
            (low..high).contains(&blocked),
            "{}: dedicated blocked fraction {blocked:.3} outside {low}..{high}",
            app.name()
        );
    }
}

#[test]
fn fifo_runs_64_process_jobs_one_after_another() {
    let machine = MachineParams::default();
    let jobs = [job(0, App::Cg, 64, 20), job(1, App::Cg, 64, 20)];
    let out = run(&machine, SmpPolicy::Fifo, &jobs, 3).unwrap();
    let (a, b) = (&out.jobs[0], &out.jobs[1]);
    assert!(b.start_ns.unwrap() >= a.end_ns.unwrap(), "{a:?} {b:?}");
    // The CPU manager notices the end at its next quantum.
    assert!(b.start_ns.unwrap() - a.end_ns.unwrap() <= machine.cpum_quantum_ns);
}

#[test]
fn scs_starts_four_64_process_jobs_at_mpl_4_and_beats_fifo_on_high_communication() {
    let machine = MachineParams::default();
    let jobs: Vec<JobSpec> = (0..8).map(|i| job(i, App::Cg, 64, 30)).collect();
    let fifo = run(&machine, SmpPolicy::Fifo, &jobs, 5).unwrap();
    let out = run(&machine, scs(4), &jobs, 5).unwrap();
    assert!(out.finished);
    let started_at_zero = out.jobs.iter().filter(|j| j.start_ns == Some(0)).count();
    assert_eq!(started_at_zero, 4);
    assert!(
        out.makespan_s < 0.9 * fifo.makespan_s,
        "SCS {} s vs FIFO {} s",
        out.makespan_s,
        fifo.makespan_s
    );
}

#[test]
fn time_sharing_with_spinning_receives_is_far_slower_than_fifo() {
    let machine = MachineParams::default();
    let jobs: Vec<JobSpec> = (0..4).map(|i| job(i, App::Cg, 64, 10)).collect();
    let fifo = run(&machine, SmpPolicy::Fifo, &jobs, 9).unwrap();
    let irix = run(&machine, SmpPolicy::Irix, &jobs, 9).unwrap();
    let pb = run(
        &machine,
        SmpPolicy::PeriodicBoost(PbParams::DEFAULT),
        &jobs,
        9,
    )
    .unwrap();
    assert!(irix.finished && pb.finished);
    assert!(
        irix.makespan_s > 2.0 * fifo.makespan_s,
        "{} vs {}",
        irix.makespan_s,
        fifo.makespan_s
    );
    assert!(pb.boosts > 0);
    // Polling only 1 ms before yielding takes most of the loss away (docs/sim-scs.md).
    let yielding = MachineParams {
        native_spin_ns: MILLIS,
        ..machine
    };
    let irix_yielding = run(&yielding, SmpPolicy::Irix, &jobs, 9).unwrap();
    assert!(irix_yielding.makespan_s < irix.makespan_s / 2.0);
}

#[test]
fn cs_shares_every_cpu_among_mpl_jobs() {
    let machine = MachineParams::default();
    let jobs: Vec<JobSpec> = (0..6).map(|i| job(i, App::Ep, 64, 2)).collect();
    let out = run(&machine, cs(4), &jobs, 2).unwrap();
    assert!(out.finished);
    assert_eq!(out.jobs.iter().filter(|j| j.start_ns == Some(0)).count(), 4);
}

#[test]
fn same_seed_same_outcome() {
    let machine = MachineParams::default();
    let jobs: Vec<JobSpec> = (0..3).map(|i| job(i, App::Mg, 40, 10)).collect();
    for policy in [SmpPolicy::Fifo, SmpPolicy::Irix, scs(2), cs(2)] {
        assert_eq!(
            run(&machine, policy, &jobs, 11),
            run(&machine, policy, &jobs, 11)
        );
    }
}

#[test]
fn a_job_larger_than_the_machine_is_an_error_naming_it() {
    let machine = MachineParams {
        cpus: 16,
        ..MachineParams::default()
    };
    let err = run(&machine, scs(4), &[job(0, App::Cg, 32, 1)], 1).unwrap_err();
    assert_eq!(
        err,
        SmpError::Job {
            job: "j000 CG".into(),
            source: ScsError::JobTooLarge {
                procs: 32,
                mpl: 1,
                needed: 32,
                cpus: 16
            }
        }
    );
    assert!(err
        .to_string()
        .starts_with("job 'j000 CG': a job of 32 processes needs 32 CPUs"));
}

#[test]
fn a_bad_mpl_or_a_cluster_policy_is_refused() {
    let err = super::smp_policy(&PolicyConfig::Scs(ScsConfig {
        mpl: 0,
        ..ScsConfig::default()
    }))
    .unwrap_err();
    assert!(err.contains("mpl"), "{err}");
    let err = super::smp_policy(&PolicyConfig::Dcs(Default::default())).unwrap_err();
    assert!(
        err.contains("not modelled on the shared-memory machine"),
        "{err}"
    );
}

#[test]
fn scs_spin_block_spins_before_it_blocks() {
    let machine = MachineParams::default();
    let jobs: Vec<JobSpec> = (0..4).map(|i| job(i, App::Cg, 64, 10)).collect();
    let bi = run(&machine, scs(4), &jobs, 4).unwrap();
    let sb = run(
        &machine,
        super::smp_policy(&PolicyConfig::Scs(ScsConfig {
            spin_us: 800.0,
            ..ScsConfig::default()
        }))
        .unwrap(),
        &jobs,
        4,
    )
    .unwrap();
    // A spin that outlasts the wait saves the switch to another process.
    assert!(
        sb.context_switches < bi.context_switches,
        "{} vs {}",
        sb.context_switches,
        bi.context_switches
    );
}

fn shipped_smp_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sim");
    crate::experiment::discover(&dir)
        .unwrap()
        .into_iter()
        .filter(|f| super::experiment::is_smp_file(f))
        .collect()
}

#[test]
fn every_shipped_smp_experiment_runs_quick_and_finishes_every_job() {
    let files = shipped_smp_files();
    assert!(files.len() >= 2, "{files:?}");
    let hidden = indicatif::ProgressBar::hidden();
    for file in files {
        let e = super::experiment::load(&file, true, Some(1)).unwrap_or_else(|e| panic!("{e:#}"));
        let records = e.run_all(2, &hidden).unwrap();
        assert_eq!(records.len(), e.policies.len() * e.workloads.len());
        for r in &records {
            let m = &r.measurement;
            assert_eq!(
                m.work_done, m.work_expected,
                "{}: {} on workload {}",
                e.name, r.config, r.competitors
            );
            assert!(m.work_expected > 0);
        }
        // FIFO is every slowdown's reference: its own is 1.
        let fifo = super::measures::makespan_slowdowns(&records, 1, super::measures::FIFO);
        assert_eq!(fifo, vec![1.0]);
    }
}

#[test]
fn a_bad_smp_file_names_the_field() {
    let dir = std::env::temp_dir().join(format!("cosched-smp-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read_to_string(
        shipped_smp_files()
            .into_iter()
            .find(|f| f.ends_with("scs-e1.toml"))
            .unwrap(),
    )
    .unwrap();
    let cases = [
        (
            "{ kind = \"scs\", mpl = 4, spin_us = 0, by_messages = false }",
            "{ kind = \"scs\", mpl = 0 }",
            "mpl",
        ),
        (
            "{ kind = \"pb\" }",
            "{ kind = \"dcs\" }",
            "not modelled on the shared-memory machine",
        ),
        ("procs = 64", "procs = 65", "procs = 65"),
        (
            "name = \"w1: 100% high\"",
            "name = \"w1\"\nswf = \"missing.swf\"",
            "give exactly one of apps, generator, swf",
        ),
        (
            "cpus = 64",
            "cpus = 64\nslices_ms = 3",
            "unknown field `slices_ms`",
        ),
        // Issue 33: times a file gives are bounded before the machine adds them to its clock.
        (
            "slice_ms = 100",
            "slice_ms = 3600001",
            "machine.slice_ms = 3600001: more than the limit of 3600000 (an hour)",
        ),
        (
            "cpum_quantum_ms = 100",
            "cpum_quantum_ms = 1e10",
            "machine.cpum_quantum_ms = 10000000000: more than the limit of 3600000 (an hour)",
        ),
        (
            "bandwidth_mb_s = 150",
            "bandwidth_mb_s = 0.0005",
            "machine.transport.bandwidth_mb_s = 0.0005: less than the limit of 0.001 (1 KB/s)",
        ),
        (
            "latency_us = 5,",
            "latency_us = 3600000001,",
            "machine.transport.latency_us = 3600000001: more than the limit of 3600000000 (an hour)",
        ),
        (
            "repetitions = 3",
            "repetitions = 4294967295",
            "repetitions = 4294967295: more than the limit of 10000",
        ),
        (
            "dedicated_s = 20",
            "dedicated_s = 10000001",
            "dedicated_s = 10000001: more than the limit of 10000000 s",
        ),
    ];
    for (from, to, expected) in cases {
        assert!(good.contains(from), "{from}");
        let path = dir.join("bad.toml");
        std::fs::write(&path, good.replacen(from, to, 1)).unwrap();
        let err = format!(
            "{:#}",
            super::experiment::load(&path, true, None).unwrap_err()
        );
        assert!(err.contains(expected), "{to}: {err}");
        assert!(err.contains("bad.toml"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_swf_workload_runs_and_a_malformed_trace_names_its_line() {
    let dir = std::env::temp_dir().join(format!("cosched-smp-swf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let experiment = "kind = \"smp\"\nname = \"swf\"\ndescription = \"d\"\nreproduces = \"r\"\nseed = 1\n\
                      repetitions = 1\npolicies = [{ kind = \"fifo\" }, { kind = \"scs\", mpl = 2 }]\n\
                      [[workloads]]\nname = \"trace\"\nswf = \"t.swf\"\nswf_apps = [\"mg\", \"ep\"]\n";
    std::fs::write(dir.join("e.toml"), experiment).unwrap();
    std::fs::write(
        dir.join("t.swf"),
        "; a trace\n1 0 0 100 16 -1 -1 16 100 -1 1 1 1 -1 1 -1 -1 -1\n\
         2 50 0 200 32 -1 -1 32 200 -1 1 1 1 -1 1 -1 -1 -1\n",
    )
    .unwrap();
    let e = super::experiment::load(&dir.join("e.toml"), true, None).unwrap();
    let records = e.run_all(1, &indicatif::ProgressBar::hidden()).unwrap();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.measurement.work_done == 2));
    std::fs::write(
        dir.join("t.swf"),
        "; a trace\n1 0 0 100 16 -1 -1 16 100 -1 1 1 1 -1 1 -1 -1 -1\n2 50 0 2x0 32\n",
    )
    .unwrap();
    let err = format!(
        "{:#}",
        super::experiment::load(&dir.join("e.toml"), true, None).unwrap_err()
    );
    assert!(
        err.contains("t.swf:3: field 6 (average CPU time): a job line has 18 fields, this one 5"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_configuration_label_reads_back_as_its_policy_and_mpl() {
    let label = super::experiment::label(&scs(6));
    assert_eq!(label, "SCS BI RR MPL 6");
    assert_eq!(
        super::measures::policy_and_mpl(&label),
        Some(("SCS BI RR", 6))
    );
    assert_eq!(super::experiment::label(&SmpPolicy::Fifo), "FIFO");
}
