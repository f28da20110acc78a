//! Scenario-level tests of the whole simulator: determinism, one discriminating scenario, the `ts_slpret`
//! ablation, and invariants over random small scenarios (proptest).

use crate::scenario::{
    NetworkParams, OsModel, ParallelProgram, RunQueue, Scenario, SeedConfig, SequentialJob,
    SorParams, Workload,
};
use crate::{simulate, simulate_with_trace};
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
use cosched_report::{JobRole, Measurement};
use proptest::prelude::*;

fn run(scenario: &Scenario, seed: u64) -> Measurement {
    simulate(scenario, seed)
        .expect("valid scenario")
        .measurement
}

#[test]
fn same_seed_gives_the_identical_measurement_and_another_seed_does_not() {
    // Latency with 2 competitors under DCS spin-block: the RNG decides the initial queue order, each node's
    // ts_update phase and every context-switch cost, so a different seed changes the outcome.
    let s = Scenario::seed_latency(3_000, 2, SeedConfig::DcsSpinBlock);
    let a = serde_json::to_string(&run(&s, 11)).unwrap();
    let b = serde_json::to_string(&run(&s, 11)).unwrap();
    let c = serde_json::to_string(&run(&s, 12)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn an_idle_cluster_gives_the_network_round_trip() {
    // No competitors, 1000 round trips of 128 B: each one-way trip is 30 µs + ceil(128 B / 13 MB/s) = 9,847 ns,
    // the first dispatch of each process costs one context switch (750 µs mean, drawn in [375, 1125] µs), after
    // that nothing else runs. Round trip = 2 × 39,847 ns = 79.694 µs; p50 within the 1.6 % bucket precision.
    let m = run(
        &Scenario::seed_latency(1_000, 0, SeedConfig::NoDcsSpinOnly),
        1,
    );
    assert_eq!((m.work_done, m.work_expected), (1_000, 1_000));
    let p50 = m.rtt_p50_us.unwrap();
    assert!((p50 - 79.694).abs() / 79.694 < 0.016, "p50 {p50}");
    // Response: 999 steady round trips + the first (which waits for both switches) ≈ 79.7 ms + < 2.3 ms.
    let response = m.jobs[0].response_s;
    assert!((0.0797..0.0821).contains(&response), "response {response}");
    // Alone on its CPU a process has N = 1 and holds the CPU from start to exit: p0 until the job ends (F = 1),
    // p1 until it sends the last reply, one 39.8 µs trip before the end: F = 1 - 39.8 µs / ~80 ms ≈ 0.9995.
    assert!((m.jobs[0].fairness_max - 1.0).abs() < 1e-9);
    assert!(
        (0.999..1.0).contains(&m.jobs[0].fairness_min),
        "{}",
        m.jobs[0].fairness_min
    );
    assert_eq!(m.extra["messages_sent"], 2_000.0);
    assert_eq!(m.extra["messages_delivered"], 2_000.0);
}

/// The discriminating scenario: Latency, 20,000 round trips, 2 competitors per node (N = 3 on each CPU), under
/// the seed's four schedulers. Dedicated, the job needs 20,000 × 79.7 µs = 1.59 s and 2 × 1.59 = 3.19 s of CPU
/// (both processes spin while the token is away). Each scheduler leaves a different, mechanism-specific mark:
///
/// - No DCS, spin only: a receiver whose partner is off its CPU spins away its whole quantum (40–200 ms), so
///   the job is by far the slowest and burns the most CPU; nothing blocks, nothing is boosted.
/// - No DCS, spin-block: a receiver gives up its CPU after 1.6 ms, so the job's CPU stays near the dedicated
///   3.19 s; no DCS boosts; the woken receiver runs first only when its level is higher (implicit scheduling).
/// - DCS, spin only: arrivals boost the receiver, so the job is much faster than without DCS, but it still
///   spins through every uncoordinated stretch: more CPU than spin-block.
/// - DCS, spin-block: boosts *and* blocking: CPU near dedicated, and faster than uncoordinated spinning.
#[test]
fn the_four_schedulers_leave_different_marks() {
    for seed in 1..=3 {
        let m: Vec<Measurement> = SeedConfig::ALL
            .iter()
            .map(|&c| run(&Scenario::seed_latency(20_000, 2, c), seed))
            .collect();
        let [no_spin, no_block, dcs_spin, dcs_block] = [&m[0], &m[1], &m[2], &m[3]];
        let resp = |m: &Measurement| m.jobs[0].response_s;
        let cpu = |m: &Measurement| m.jobs[0].cpu_s;
        for x in &m {
            assert_eq!(x.work_done, 20_000, "seed {seed}");
        }
        // Boosts only with DCS.
        assert_eq!(
            no_spin.boosts_granted + no_block.boosts_granted,
            0,
            "seed {seed}"
        );
        assert!(
            dcs_spin.boosts_granted > 0 && dcs_block.boosts_granted > 0,
            "seed {seed}"
        );
        // Uncoordinated spinning is the slowest by a wide margin (1.8×: seeds 1–3 measure 2.0–3.1×).
        for other in [no_block, dcs_spin, dcs_block] {
            assert!(
                resp(no_spin) > 1.8 * resp(other),
                "seed {seed}: {} vs {}",
                resp(no_spin),
                resp(other)
            );
        }
        // Blocking keeps the CPU near the dedicated 3.19 s (+ context switches); spinning does not.
        for blocking in [no_block, dcs_block] {
            assert!(
                (3.1..3.5).contains(&cpu(blocking)),
                "seed {seed}: cpu {}",
                cpu(blocking)
            );
        }
        assert!(cpu(dcs_spin) > 1.15 * cpu(no_block), "seed {seed}");
        assert!(cpu(no_spin) > 2.5 * cpu(no_block), "seed {seed}");
        // Only spin-block receivers ever sleep, so only they can get the ts_slpret wake-up boost.
        assert_eq!(
            no_spin.extra["slpret_boosts"] + dcs_spin.extra["slpret_boosts"],
            0.0,
            "seed {seed}"
        );
    }
}

/// Seed `000` Figure 9: with `ts_slpret[n] = n` a woken spin-block receiver keeps its level, loses the wake-up
/// boost that coschedules it, and the Barrier job (7 nodes, 4 competitors each) falls back to the uncoordinated
/// behaviour: orders of magnitude slower.
#[test]
fn slpret_ablation_loses_implicit_coscheduling() {
    let mut normal = Scenario::seed_barrier(5_000, 4, SeedConfig::NoDcsSpinBlock);
    let mut ablated = normal.clone();
    ablated.os = OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
        slpret_ablation: true,
        run_queue: RunQueue::PerCpu,
    });
    normal.os = OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
        slpret_ablation: false,
        run_queue: RunQueue::PerCpu,
    });
    let (n, a) = (run(&normal, 1), run(&ablated, 1));
    assert_eq!((n.work_done, a.work_done), (5_000, 5_000));
    assert!(n.extra["slpret_boosts"] > 0.0);
    assert!(
        a.jobs[0].response_s > 10.0 * n.jobs[0].response_s,
        "ablated {} s vs normal {} s",
        a.jobs[0].response_s,
        n.jobs[0].response_s
    );
}

/// Seed `000` §4.2.1 and Figures 4–6 (Barrier, 7 nodes, 78 µs between barriers, 8 competitors per node): a
/// barrier needs all 7 processes on their CPUs at once.
/// - Uncoordinated spinning: each process spins its whole quantum while the others are off their CPUs; the
///   job crawls (seeds 1–4: 2,000–3,000 s for 3,000 barriers, ~0.67 s a barrier).
/// - DCS spin-only: every arrival may boost the receiver, so the seven come together: "up to two decimal
///   orders of magnitude" faster (seeds 1–4: 110–250×), at more than a fair share (F 1.3–1.6, seed: "up to
///   30% more").
/// - Spin-block without DCS coschedules through the wake-up boost but is a weak competitor: F < 1 (0.56–0.68).
/// - DCS spin-block is the fastest and closer to a fair share than plain spin-block (F 0.78–0.90).
#[test]
fn barrier_reproduces_the_seed_ordering() {
    let m: Vec<Measurement> = SeedConfig::ALL
        .iter()
        .map(|&c| run(&Scenario::seed_barrier(3_000, 8, c), 2))
        .collect();
    let resp = |i: usize| m[i].jobs[0].response_s;
    let fair = |i: usize| m[i].jobs[0].fairness;
    let (no_spin, no_block, dcs_spin, dcs_block) = (0, 1, 2, 3);
    assert!(m.iter().all(|x| x.work_done == 3_000));
    assert!(
        resp(no_spin) > 50.0 * resp(dcs_spin),
        "{} vs {}",
        resp(no_spin),
        resp(dcs_spin)
    );
    assert!(resp(dcs_block) < resp(no_block) && resp(dcs_block) < resp(dcs_spin));
    assert!(
        fair(no_block) < 0.8,
        "plain spin-block gets less than its share: F = {}",
        fair(no_block)
    );
    assert!(fair(dcs_block) > fair(no_block));
    assert!(fair(dcs_spin) > 1.0);
}

#[test]
fn a_time_limit_stops_the_run_and_reports_unfinished_work() {
    // 1,000,000 round trips need ~80 s; a 1 s limit stops after ~12,500 of them (1 s / 79.7 µs ≈ 12,548).
    let mut s = Scenario::seed_latency(1_000_000, 0, SeedConfig::DcsSpinBlock);
    s.time_limit_ns = SECONDS;
    let out = simulate(&s, 1).unwrap();
    assert_eq!(out.sim_time_ns, SECONDS);
    assert!(
        (12_400..12_560).contains(&out.measurement.work_done),
        "{}",
        out.measurement.work_done
    );
}

#[test]
fn mixed_batch_runs_the_jobs_one_after_another() {
    // SOR (3 nodes, 24 rows, 50 iterations) then one sequential job of 200 ms CPU; in batch the sequential job
    // starts only when SOR has finished.
    let mut s = Scenario::seed_latency(1, 0, SeedConfig::NoDcsSpinBlock);
    s.nodes = 3;
    s.workload = Workload::Mixed {
        sor: SorParams {
            grid: 24,
            iterations: 50,
            cell_compute_ns: MICROS,
        },
        sequential: vec![SequentialJob {
            name: "gs".into(),
            node: 1,
            total_cpu_ns: 200 * MILLIS,
            mean_burst_ns: 10 * MILLIS,
            mean_io_ns: 2 * MILLIS,
        }],
        batch: true,
    };
    let m = run(&s, 3);
    assert_eq!(m.work_done, 50);
    let sor_end = m.jobs[0].response_s;
    assert!(
        m.extra["gs.start_s"] >= sor_end - 1e-9,
        "gs started before SOR ended"
    );
    let gs = m
        .jobs
        .iter()
        .find(|j| j.role == JobRole::Sequential)
        .unwrap();
    // 200 ms of CPU (+ its one context switch) with I/O waits in between.
    assert!(
        gs.cpu_s >= 0.2 && gs.cpu_s < 0.2 + 0.0012,
        "gs cpu {}",
        gs.cpu_s
    );
    assert!(gs.response_s > gs.cpu_s);
}

#[test]
fn invalid_scenarios_name_the_field() {
    let mut s = Scenario::seed_latency(10, 0, SeedConfig::NoDcsSpinOnly);
    s.nodes = 1;
    let err = simulate(&s, 1).unwrap_err().to_string();
    assert!(
        err.contains("nodes") && err.contains("latency job needs 2 nodes"),
        "{err}"
    );
    let mut s = Scenario::seed_latency(0, 0, SeedConfig::NoDcsSpinOnly);
    assert!(simulate(&s, 1)
        .unwrap_err()
        .to_string()
        .contains("workload.round_trips"));
    s.workload = Workload::Parallel(ParallelProgram::Latency {
        round_trips: 1,
        message_bytes: 1,
    });
    s.network.bandwidth_bytes_per_s = 0;
    assert!(simulate(&s, 1)
        .unwrap_err()
        .to_string()
        .contains("network.bandwidth_bytes_per_s"));
}

#[test]
fn a_workload_serialises_tagged_by_its_program_and_round_trips() {
    // A job alone is its program's own table (`kind` = latency, barrier or sor), Mixed is `kind = "mixed"`.
    let sor = SorParams {
        grid: 24,
        iterations: 5,
        cell_compute_ns: MICROS,
    };
    let mixed = Scenario::seed_mixed(false, SeedConfig::NoDcsSpinOnly).workload;
    for (workload, kind) in [
        (
            Scenario::seed_latency(3, 0, SeedConfig::NoDcsSpinOnly).workload,
            "latency",
        ),
        (
            Scenario::seed_barrier(3, 0, SeedConfig::NoDcsSpinOnly).workload,
            "barrier",
        ),
        (Workload::Parallel(ParallelProgram::Sor(sor)), "sor"),
        (mixed, "mixed"),
    ] {
        let json = serde_json::to_string(&workload).unwrap();
        assert!(
            json.starts_with(&format!("{{\"kind\":\"{kind}\",")),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Workload>(&json).unwrap(), workload);
    }
    assert_eq!(
        serde_json::to_string(&Scenario::seed_latency(3, 0, SeedConfig::NoDcsSpinOnly).workload)
            .unwrap(),
        r#"{"kind":"latency","round_trips":3,"message_bytes":128}"#
    );
    // A lone SOR runs as the job `sor` over every node.
    let mut s = Scenario::seed_latency(1, 0, SeedConfig::NoDcsSpinBlock);
    s.nodes = 3;
    s.workload = Workload::Parallel(ParallelProgram::Sor(sor));
    let m = run(&s, 1);
    assert_eq!((m.work_done, m.jobs.len()), (5, 1));
}

fn arbitrary_scenario() -> impl Strategy<Value = Scenario> {
    let workload = prop_oneof![
        (1u64..150).prop_map(|round_trips| (
            2u32,
            Workload::Parallel(ParallelProgram::Latency {
                round_trips,
                message_bytes: 128
            })
        )),
        (2u32..5, 1u64..40, 0u64..300).prop_map(|(nodes, iterations, compute_us)| (
            nodes,
            Workload::Parallel(ParallelProgram::Barrier {
                iterations,
                compute_ns: compute_us * MICROS,
                message_bytes: 64
            })
        )),
        (2u32..4, 1u64..15, any::<bool>()).prop_map(|(nodes, iterations, batch)| (
            nodes,
            Workload::Mixed {
                sor: SorParams {
                    grid: 16,
                    iterations,
                    cell_compute_ns: 2 * MICROS
                },
                sequential: vec![SequentialJob {
                    name: "seq".into(),
                    node: nodes - 1,
                    total_cpu_ns: 30 * MILLIS,
                    mean_burst_ns: 5 * MILLIS,
                    mean_io_ns: MILLIS,
                }],
                batch,
            }
        )),
    ];
    (
        workload,
        0u32..3,
        1u32..3,
        0usize..4,
        0u64..800,
        any::<bool>(),
    )
        .prop_map(
            |((nodes, workload), competitors, cpus, config, switch_us, ablation)| {
                let mut s = Scenario::seed_latency(1, competitors, SeedConfig::ALL[config]);
                s.nodes = nodes;
                s.cpus_per_node = cpus;
                s.workload = workload;
                s.context_switch_ns = switch_us * MICROS;
                s.os = OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
                    slpret_ablation: ablation,
                    run_queue: RunQueue::PerCpu,
                });
                s.network = NetworkParams::default();
                s
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// No CPU runs two processes at once; a process is only ever on its own CPU; total CPU time ≤ CPUs × wall;
    /// every message sent is delivered exactly once; the job finishes its work.
    #[test]
    fn invariants_hold(scenario in arbitrary_scenario(), seed in 0u64..1000) {
        let (out, trace) = simulate_with_trace(&scenario, seed).unwrap();
        let m = &out.measurement;
        prop_assert_eq!(m.work_done, m.work_expected);
        // One process at a time per CPU: intervals of a CPU, ordered by start, never overlap.
        let mut by_cpu: Vec<Vec<(u64, u64, u32)>> = vec![Vec::new(); trace.cpus as usize];
        let mut cpu_of = std::collections::BTreeMap::new();
        for i in &trace.intervals {
            prop_assert!(i.start_ns <= i.end_ns && i.end_ns <= trace.end_ns);
            by_cpu[i.cpu as usize].push((i.start_ns, i.end_ns, i.pid));
            prop_assert_eq!(*cpu_of.entry(i.pid).or_insert(i.cpu), i.cpu, "process {} migrated", i.pid);
        }
        let mut busy_total = 0u64;
        for intervals in &mut by_cpu {
            intervals.sort_unstable();
            for pair in intervals.windows(2) {
                prop_assert!(pair[0].1 <= pair[1].0, "overlap on a CPU: {:?} and {:?}", pair[0], pair[1]);
            }
            let busy: u64 = intervals.iter().map(|(s, e, _)| e - s).sum();
            prop_assert!(busy <= trace.end_ns);
            busy_total += busy;
        }
        // CPU time reported for the jobs ≤ CPUs × wall (competitors are reported per process: × count).
        let competitors = scenario.competitors_per_node as f64 * scenario.nodes as f64;
        let reported: f64 = m.jobs.iter().map(|j| match j.role {
            JobRole::Competitor => j.cpu_s * competitors,
            _ => j.cpu_s,
        }).sum();
        prop_assert!(reported <= trace.cpus as f64 * trace.end_ns as f64 / 1e9 + 1e-6);
        prop_assert!((reported - busy_total as f64 / 1e9).abs() < 1e-6, "CPU time {} vs trace {}", reported, busy_total);
        // Every message delivered exactly once.
        let mut ids = trace.delivered_ids.clone();
        ids.sort_unstable();
        prop_assert_eq!(ids, (0..trace.sent).collect::<Vec<u64>>());
        prop_assert_eq!(out.messages_sent, out.messages_delivered);
    }
}

/// Far beyond the seed's 7 nodes (SPEC: the simulator scales): a 10,000-node Barrier, one competitor per node,
/// passes every barrier under both spin-block schedulers.
#[test]
fn a_ten_thousand_node_barrier_passes_every_barrier() {
    for config in [SeedConfig::NoDcsSpinBlock, SeedConfig::DcsSpinBlock] {
        let mut s = Scenario::seed_barrier(20, 1, config);
        s.nodes = 10_000;
        let out = simulate(&s, 1).unwrap();
        assert_eq!(
            out.measurement.work_done,
            out.measurement.work_expected,
            "{}: barriers passed / expected on 10,000 nodes",
            config.label()
        );
        assert!(out.measurement.work_expected >= 20, "{}", config.label());
    }
}

// ---- seed 003: the Linux 2.2 model, PRED / DYN, periodic boost and the seed-003 workloads ----

/// Seed 003's platform (4 single-CPU nodes, 100 Mb/s Ethernet with ~0.1 ms latency, Linux 2.2, blocking
/// receives) running `program` beside `k` calcula (CPU-bound) tasks per node under `policy`.
fn seed_003(program: ParallelProgram, k: u32, policy: crate::scenario::PolicyConfig) -> Scenario {
    let mut s = Scenario::seed_latency(1, k, SeedConfig::NoDcsSpinOnly);
    s.nodes = 4;
    s.os = OsModel::Linux22(crate::os::linux22::Linux22Parameters {
        priority: 20,
        quantum: Default::default(),
        run_queue: RunQueue::PerCpu,
    });
    s.context_switch_ns = 10 * MICROS;
    s.network = NetworkParams {
        latency_ns: 90 * MICROS,
        bandwidth_bytes_per_s: 12_500_000,
    };
    s.receive = cosched_policy::spin::ReceiveMode::Block;
    s.workload = Workload::Parallel(program);
    s.coscheduling = policy;
    s
}

fn small_is() -> ParallelProgram {
    ParallelProgram::Is {
        iterations: 3,
        compute_ns: 100 * MILLIS,
        count_bytes: 4096,
        key_bytes: 256 * 1024,
    }
}

fn pred(p_percent: u32) -> crate::scenario::PolicyConfig {
    crate::scenario::PolicyConfig::Pred(cosched_policy::config::PredConfig {
        p_percent,
        ceiling: false,
    })
}

fn linux() -> crate::scenario::PolicyConfig {
    crate::scenario::PolicyConfig::None(cosched_policy::config::NoneConfig {})
}

#[test]
fn linux22_alone_shares_a_cpu_fairly_in_210_ms_slices() {
    // IS dedicated: 3 iterations of 100 ms compute + two all-to-alls (3 × 256 KB on a 12.5 MB/s link = 63 ms
    // of sending) ≈ 3 × (100 + 63 + latencies) ≈ 0.5 s. Beside 2 calcula per node it must take longer, all
    // work done, and the calcula tasks keep at least their share (F >= 0.9: the epoch gives them their slices).
    let alone = run(&seed_003(small_is(), 0, linux()), 1);
    assert_eq!((alone.work_done, alone.work_expected), (3, 3));
    let r = alone.jobs[0].response_s;
    assert!((0.45..0.60).contains(&r), "dedicated IS {r} s");
    let shared = run(&seed_003(small_is(), 2, linux()), 1);
    assert_eq!(shared.work_done, 3);
    assert!(shared.jobs[0].response_s > 1.5 * r);
    let competitors = shared
        .jobs
        .iter()
        .find(|j| j.role == JobRole::Competitor)
        .unwrap();
    assert!(competitors.fairness >= 0.9, "{}", competitors.fairness);
    // Epochs happened (every counter ran out) and ticks used slices up.
    assert!(shared.extra["linux_epochs"] > 0.0);
    assert!(shared.extra["linux_slices_used_up"] > 0.0);
    assert_eq!(shared.extra["linux_freq_evaluations"], 0.0);
}

#[test]
fn pred_runs_only_on_a_model_with_goodness_and_samples_the_sockets() {
    // On Solaris TS the PRED hook's operation is missing: refused before the run starts.
    let mut solaris = seed_003(small_is(), 1, pred(90));
    solaris.os = OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
        slpret_ablation: false,
        run_queue: RunQueue::PerCpu,
    });
    let err = simulate(&solaris, 1).unwrap_err().to_string();
    assert!(err.contains("linux") || err.contains("goodness"), "{err}");
    // On Linux 2.2 it runs, samples the queues at each goodness evaluation, and the run is deterministic.
    let s = seed_003(small_is(), 2, pred(90));
    let a = run(&s, 3);
    assert_eq!(a.work_done, 3);
    assert!(a.extra["linux_freq_evaluations"] > 0.0);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&run(&s, 3)).unwrap()
    );
}

#[test]
fn the_seed_003_workloads_finish_their_work_and_send_what_they_should() {
    // IS, 4 ranks: per iteration each rank sends 3 + 3 messages: 3 × 4 × 6 = 72.
    let is = run(&seed_003(small_is(), 0, linux()), 1);
    assert_eq!(is.extra["messages_sent"], 72.0);
    // MG, 4 ranks, 3 levels: a V-cycle visits levels 0, 1, 2, 1, 0 (5 visits), 2 halos each: 2 × 5 × 4 = 40 a
    // cycle, 2 cycles = 80.
    let mg = ParallelProgram::Mg {
        iterations: 2,
        levels: 3,
        compute_ns: 10 * MILLIS,
        halo_bytes: 64 * 1024,
    };
    let m = run(&seed_003(mg, 1, linux()), 1);
    assert_eq!((m.work_done, m.extra["messages_sent"]), (2, 80.0));
    // Master–slave on 4 nodes: 7 ranks (master + 3 × 2 slaves); per iteration 6 sends + 3 replies: 10 × 9 = 90.
    let ms = ParallelProgram::MasterSlave {
        iterations: 10,
        compute_ns: MILLIS,
        message_bytes: 1024,
    };
    let m = run(&seed_003(ms, 1, pred(10)), 1);
    assert_eq!((m.work_done, m.extra["messages_sent"]), (10, 90.0));
    assert_eq!(m.extra["messages_delivered"], 90.0);
}

#[test]
fn periodic_boost_boosts_only_processes_holding_messages() {
    // Latency, spin only, 2 competitors on Solaris TS: a receiver preempted with its token waiting is boosted
    // by the 10 ms monitor; with no competitor nothing ever waits on a run queue, so nothing is boosted.
    let pb = crate::scenario::PolicyConfig::Pb(cosched_policy::config::PbConfig::default());
    let mut s = Scenario::seed_latency(2_000, 2, SeedConfig::NoDcsSpinOnly);
    s.coscheduling = pb;
    let with = run(&s, 1);
    assert!(with.boosts_granted > 0);
    let plain = run(
        &Scenario::seed_latency(2_000, 2, SeedConfig::NoDcsSpinOnly),
        1,
    );
    assert!(with.jobs[0].response_s < plain.jobs[0].response_s);
    s.competitors_per_node = 0;
    assert_eq!(run(&s, 1).boosts_granted, 0);
}

// ---- seed 004: quanta, the cache model and the local benchmark ----

/// Seed 004's platform on 4 nodes: a small SP-like ring stencil with the cache model, under `quantum`, beside
/// the local benchmark on the first `local_nodes` nodes (none when 0).
fn seed_004(quantum: crate::os::linux22::QuantumConfig, local_nodes: u32) -> Scenario {
    let mut s = seed_003(
        ParallelProgram::Sp {
            iterations: 40,
            compute_ns: 50 * MILLIS,
            face_bytes: 32 * 1024,
        },
        0,
        pred(90),
    );
    s.os = OsModel::Linux22(crate::os::linux22::Linux22Parameters {
        priority: 20,
        quantum,
        run_queue: RunQueue::PerCpu,
    });
    s.cache = Some(crate::scenario::CacheConfig::default());
    s.arrivals.push(crate::scenario::ArrivingJob {
        name: "bt".into(),
        arrival_ns: 0,
        nodes: vec![0, 1, 2, 3],
        program: ParallelProgram::Bt {
            iterations: 20,
            compute_ns: 100 * MILLIS,
            face_bytes: 32 * 1024,
        },
    });
    if local_nodes > 0 {
        s.local = Some(crate::scenario::LocalBenchmark {
            nodes: local_nodes,
            cpu_percent: 30.0,
            cpu_ns: SECONDS,
            mean_syscall_interval_ns: 500 * MILLIS,
            syscall_min_bytes: 1_000_000,
            syscall_max_bytes: 10_000_000,
        });
    }
    s
}

#[test]
fn the_cache_model_reports_a_miss_ratio_and_the_local_benchmark_its_time() {
    // Two jobs share each CPU, so every switch refills part of a 512 KB reused set: the mean epoch miss ratio is
    // above the 5 % steady fraction; the local benchmark (1 s of CPU at 30 %) takes at least its 3.3 s alone.
    let m = run(&seed_004(Default::default(), 2), 1);
    assert!(m.extra["linux_mmr_ppm"] > 50_000.0, "{:?}", m.extra);
    assert!(m.extra["local.mean_response_s"] >= 1.0 / 0.3);
    assert!(m.extra["sp.comm_wait_s"] > 0.0 && m.extra["bt.comm_wait_s"] > 0.0);
    // Without a cache model there is no miss ratio, and the run is otherwise the same kind of run.
    let mut plain = seed_004(Default::default(), 0);
    plain.cache = None;
    assert!(!run(&plain, 1).extra.contains_key("linux_mmr_ppm"));
}

#[test]
fn dynamicq_grows_quanta_only_where_no_interactive_user_is() {
    // With no local user Algorithm 1 doubles some quanta; with a local user on every node every task keeps the
    // 200 ms default (no doubling at all).
    let dq = crate::os::linux22::QuantumConfig::Dynamicq {
        max_miss_percent: 9.0,
        max_slice_ms: 6_400,
        default_quantum_ms: 200,
    };
    let alone = run(&seed_004(dq, 0), 1);
    assert!(alone.extra["dynamicq_doubled"] > 0.0, "{:?}", alone.extra);
    let mut everywhere = seed_004(dq, 4);
    // The local users outlive the parallel jobs, so every epoch sees one.
    everywhere.local.as_mut().unwrap().cpu_ns = 30 * SECONDS;
    let users = run(&everywhere, 1);
    assert_eq!(users.extra["dynamicq_doubled"], 0.0, "{:?}", users.extra);
}

#[test]
fn a_long_static_quantum_means_fewer_epochs() {
    // STATICQ 3.2 s against 2.2's own 210 ms: each epoch lasts ~15× longer.
    let short = run(&seed_004(Default::default(), 0), 1);
    let long = run(
        &seed_004(crate::os::linux22::QuantumConfig::Static { ms: 3_200 }, 0),
        1,
    );
    assert!(
        long.extra["linux_epochs"] * 5.0 < short.extra["linux_epochs"],
        "{} vs {}",
        long.extra["linux_epochs"],
        short.extra["linux_epochs"]
    );
}

#[test]
fn bad_seed_004_settings_are_refused_by_name() {
    let mut s = seed_004(crate::os::linux22::QuantumConfig::Static { ms: 1 }, 0);
    assert!(s.validate().unwrap_err().field.starts_with("os.quantum"));
    s = seed_004(Default::default(), 9);
    assert_eq!(s.validate().unwrap_err().field, "local.nodes");
    s = seed_004(Default::default(), 2);
    s.cache = None;
    assert_eq!(s.validate().unwrap_err().field, "local");
}

// ---- seed 002: Windows NT 4.0 and DCS with a stale fairness monitor ----

/// Seed 002's latency test on two dual-CPU NT nodes: `round_trips` spinning round trips beside `k` competitors
/// per node, under `policy`.
fn seed_002(round_trips: u64, k: u32, policy: crate::scenario::PolicyConfig) -> Scenario {
    let mut s = Scenario::seed_latency(round_trips, k, SeedConfig::NoDcsSpinOnly);
    s.cpus_per_node = 2;
    s.os = OsModel::Nt4(crate::os::nt4::Nt4Parameters {
        quantum_ms: 120,
        monitor_window_ms: 100,
        nic_scan_us: 1_000,
        system_load_percent: 1.0,
        system_burst_us: 100,
        run_queue: RunQueue::PerCpu,
        dcs_boost: Default::default(),
    });
    s.context_switch_ns = 20 * MICROS;
    s.network = NetworkParams {
        latency_ns: 8 * MICROS,
        bandwidth_bytes_per_s: 60_000_000,
    };
    s.workload = Workload::Parallel(ParallelProgram::Latency {
        round_trips,
        message_bytes: 16,
    });
    s.coscheduling = policy;
    s
}

fn nt_dcs(exponent: i32) -> crate::scenario::PolicyConfig {
    crate::scenario::PolicyConfig::Dcs(cosched_policy::config::DcsConfig {
        exponent,
        constant_ms: 0.0,
    })
}

#[test]
fn nt_alone_puts_every_round_trip_in_the_fastest_bin_and_dcs_boosts_under_contention() {
    // No competitor: every round trip but the first few (the threads' first switches) takes ~2 × 8.3 µs, in one
    // bin, and none takes 2 ms.
    let alone = run(&seed_002(2_000, 0, linux()), 1);
    assert!(alone.extra["iterations_fastest_bin_fraction"] >= 0.995);
    assert_eq!(alone.extra["iterations_over_2ms_fraction"], 0.0);
    // 2 competitors a node (one shares CPU 0 with the FM thread): without DCS a round trip sometimes waits a
    // whole 120 ms quantum; DCS at E = 0 boosts the receiver and finishes sooner.
    let plain = run(&seed_002(20_000, 2, linux()), 1);
    let dcs = run(&seed_002(20_000, 2, nt_dcs(0)), 1);
    assert!(plain.extra["iterations_over_2ms_fraction"] > 0.0);
    assert!(dcs.boosts_granted > 0);
    assert!(
        dcs.jobs[0].response_s < plain.jobs[0].response_s,
        "{} vs {}",
        dcs.jobs[0].response_s,
        plain.jobs[0].response_s
    );
}

/// [`seed_002`] without DCS at `k` competitors, `system_load_percent` of the system's own threads, cut at 30 s.
fn seed_002_drift(k: u32, system_load_percent: f64) -> Scenario {
    let mut s = seed_002(100_000_000, k, linux());
    if let OsModel::Nt4(crate::os::nt4::Nt4Parameters {
        system_load_percent: load,
        ..
    }) = &mut s.os
    {
        *load = system_load_percent;
    }
    s.time_limit_ns = 30 * cosched_policy::SECONDS;
    s
}

/// How far the two FM threads' turns (pids 0 and 1, on CPU 0 of each node) drift from their first relative
/// phase, in ns, at most over the run: each turn of pid 0 (a run on the CPU starting more than 50 ms after its
/// last ended: a competitor's turn is 120 ms, a system burst ~100 µs) against the first turn of pid 1, modulo
/// the rotation `period`, as a change from the first such offset in (−period/2, period/2].
fn largest_phase_drift(trace: &crate::world::Trace, period: Nanos) -> Nanos {
    let turns = |pid: u32| -> Vec<Nanos> {
        let mut runs: Vec<_> = trace.intervals.iter().filter(|r| r.pid == pid).collect();
        runs.sort_by_key(|r| r.start_ns);
        let mut starts = vec![runs[0].start_ns];
        for pair in runs.windows(2) {
            if pair[1].start_ns > pair[0].end_ns + 50 * MILLIS {
                starts.push(pair[1].start_ns);
            }
        }
        starts
    };
    let (a, b) = (turns(0), turns(1));
    assert!(a.len() > 50, "{} turns", a.len());
    let offset = |t: Nanos| (t as i128 - b[0] as i128).rem_euclid(period as i128);
    let first = offset(a[0]);
    a.iter()
        .map(|&t| {
            let d = (offset(t) - first).rem_euclid(period as i128);
            (if d > period as i128 / 2 {
                period as i128 - d
            } else {
                d
            }) as Nanos
        })
        .max()
        .unwrap()
}

#[test]
fn without_the_systems_own_threads_the_two_nodes_rotations_keep_their_phase_and_with_them_they_drift(
) {
    // K = 1 without DCS: CPU 0 of each node rotates the FM thread and one competitor, 12 ticks (120 ms) each, a
    // 240 ms rotation. Quanta are charged by ticks and both nodes tick every 10 ms, so without the system's own
    // threads the FM threads' relative phase never changes (the no-DCS phase lock). With them (1 % of a CPU in
    // ~100 µs bursts) a tick falls in a burst with probability 1 %, and that turn lasts a tick longer: each
    // node's turns shift by 10 ms at random, ~2.4 times a second, independently, and the relative phase
    // wanders (a random walk of ~7 ms a rotation: ~77 ms after the 125 rotations of 30 s).
    let period = 240 * MILLIS;
    for seed in [1, 2] {
        let (out, trace) = simulate_with_trace(&seed_002_drift(1, 0.0), seed).unwrap();
        assert!(!out.measurement.extra.contains_key("os_system_bursts"));
        let drift = largest_phase_drift(&trace, period);
        assert!(
            drift < MILLIS,
            "seed {seed}: drifted {drift} ns without noise"
        );
        let (out, trace) = simulate_with_trace(&seed_002_drift(1, 1.0), seed).unwrap();
        let extra = &out.measurement.extra;
        assert!(
            (extra["os_system_cpu_fraction"] - 0.01).abs() < 0.002,
            "{extra:?}"
        );
        assert!(extra["nt_uncharged_ticks"] > 0.0);
        let drift = largest_phase_drift(&trace, period);
        assert!(
            drift > 20 * MILLIS,
            "seed {seed}: drifted only {drift} ns with noise"
        );
    }
}

#[test]
fn bad_system_activity_settings_are_refused_by_name() {
    let with = |load: f64, burst: u64| {
        let mut s = seed_002(10, 1, linux());
        if let OsModel::Nt4(crate::os::nt4::Nt4Parameters {
            system_load_percent,
            system_burst_us,
            ..
        }) = &mut s.os
        {
            *system_load_percent = load;
            *system_burst_us = burst;
        }
        s.validate().err().map(|e| e.field)
    };
    assert_eq!(with(1.0, 100), None);
    assert_eq!(with(0.0, 100), None, "0 turns them off");
    for load in [-1.0, 51.0, f64::NAN] {
        assert_eq!(with(load, 100).as_deref(), Some("os.system_load_percent"));
    }
    assert_eq!(with(1.0, 0).as_deref(), Some("os.system_burst_us"));
}

// ---- the shared run queue (`[os] run_queue = "shared"`) ----

/// [`seed_003`]'s IS beside `k` calcula tasks per node, on nodes of `cpus_per_node` CPUs, with `run_queue`.
fn seed_003_smp(k: u32, cpus_per_node: u32, run_queue: RunQueue) -> Scenario {
    let mut s = seed_003(small_is(), k, linux());
    s.cpus_per_node = cpus_per_node;
    s.os = OsModel::Linux22(crate::os::linux22::Linux22Parameters {
        priority: 20,
        quantum: Default::default(),
        run_queue,
    });
    s
}

#[test]
fn a_shared_run_queue_on_one_cpu_nodes_is_the_per_cpu_model_bit_for_bit() {
    // One CPU a node: the node's queue is the CPU's, no affinity bonus applies (every task's last CPU is the
    // only one), so every decision and every figure is the same.
    for policy in [linux(), pred(90)] {
        let per_cpu = seed_003(small_is(), 2, policy);
        let mut shared = per_cpu.clone();
        shared.os = OsModel::Linux22(crate::os::linux22::Linux22Parameters {
            priority: 20,
            quantum: Default::default(),
            run_queue: RunQueue::Shared,
        });
        assert_eq!(
            simulate(&per_cpu, 3).unwrap(),
            simulate(&shared, 3).unwrap()
        );
    }
}

#[test]
fn a_shared_run_queue_lets_a_rank_use_the_cpu_its_node_leaves_idle() {
    // Two CPUs a node, one calcula task a node. The workloads place the IS rank and the node's first calcula
    // task both on CPU 0 (competitor k goes to CPU k mod 2), so with a queue per CPU they share CPU 0 and CPU 1
    // idles: IS takes ~2 × its dedicated 0.49 s. With one queue per node, the second CPU picks whichever of the
    // two CPU 0 did not: IS runs as if alone (within 1 %), and each calcula task has a CPU to itself — F = N Tc
    // / (C Te) with N = 2 processes over C = 2 CPUs, = 1.
    let alone = run(&seed_003_smp(0, 2, RunQueue::PerCpu), 1).jobs[0].response_s;
    let per_cpu = run(&seed_003_smp(1, 2, RunQueue::PerCpu), 1);
    let shared = run(&seed_003_smp(1, 2, RunQueue::Shared), 1);
    assert_eq!((shared.work_done, shared.work_expected), (3, 3));
    assert!(per_cpu.jobs[0].response_s > 1.8 * alone, "{per_cpu:?}");
    assert!(
        (shared.jobs[0].response_s / alone - 1.0).abs() < 0.01,
        "{alone} {shared:?}"
    );
    let competitors = |m: &Measurement| {
        m.jobs
            .iter()
            .find(|j| j.role == JobRole::Competitor)
            .unwrap()
            .fairness
    };
    assert!((competitors(&shared) - 1.0).abs() < 1e-9, "{shared:?}");
    assert!(competitors(&per_cpu) > 1.3, "{per_cpu:?}");
}

#[test]
fn with_a_shared_run_queue_processes_move_between_their_nodes_cpus_one_cpu_at_a_time() {
    // Two CPUs a node, three processes a node (the IS rank and calcula 0 placed on CPU 0, calcula 1 on CPU 1):
    // the node's CPUs pick from one queue, so processes run on both CPUs of their node, never on another
    // node's, and never on two CPUs at once.
    let (out, trace) = simulate_with_trace(&seed_003_smp(2, 2, RunQueue::Shared), 1).unwrap();
    assert_eq!(out.measurement.work_done, 3);
    let mut moved = 0;
    for pid in 0..12 {
        let mut runs: Vec<_> = trace.intervals.iter().filter(|r| r.pid == pid).collect();
        assert!(!runs.is_empty());
        let node = runs[0].cpu / 2;
        assert!(
            runs.iter().all(|r| r.cpu / 2 == node),
            "pid {pid}: {runs:?}"
        );
        moved += usize::from(runs.iter().any(|r| r.cpu != runs[0].cpu));
        runs.sort_by_key(|r| r.start_ns);
        for pair in runs.windows(2) {
            assert!(pair[0].end_ns <= pair[1].start_ns, "pid {pid}: {pair:?}");
        }
    }
    assert!(moved >= 4, "{moved} processes changed CPU");
    // The same file with a queue per CPU: nobody moves.
    let (_, trace) = simulate_with_trace(&seed_003_smp(2, 2, RunQueue::PerCpu), 1).unwrap();
    for r in &trace.intervals {
        assert!(trace
            .intervals
            .iter()
            .all(|o| o.pid != r.pid || o.cpu == r.cpu));
    }
}

#[test]
fn a_model_without_a_shared_run_queue_refuses_it_before_the_run() {
    // Solaris 2.4 keeps a dispatch queue per CPU, and the NT model places threads on CPUs: both refuse.
    let mut solaris = Scenario::seed_latency(10, 0, SeedConfig::NoDcsSpinOnly);
    solaris.cpus_per_node = 2;
    solaris.os = OsModel::SolarisTs(crate::os::solaris_ts::SolarisTsParameters {
        slpret_ablation: false,
        run_queue: RunQueue::Shared,
    });
    let err = simulate(&solaris, 1).unwrap_err();
    assert!(matches!(err, crate::SimError::SharedRunQueue { .. }));
    assert_eq!(
        err.to_string(),
        "os.run_queue = \"shared\" cannot run here: the OS model 'solaris-ts' cannot keep one run queue per \
         node that every CPU of the node picks from; use run_queue = \"per-cpu\""
    );
    let mut nt = solaris.clone();
    nt.os = OsModel::Nt4(crate::os::nt4::Nt4Parameters {
        quantum_ms: 120,
        monitor_window_ms: 100,
        nic_scan_us: 1_000,
        system_load_percent: 1.0,
        system_burst_us: 100,
        run_queue: RunQueue::Shared,
        dcs_boost: Default::default(),
    });
    let err = simulate(&nt, 1).unwrap_err().to_string();
    assert!(
        err.contains("the OS model 'nt-4.0' cannot keep one run queue per node"),
        "{err}"
    );
}
