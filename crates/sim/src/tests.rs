//! Scenario-level tests of the whole simulator: determinism, one discriminating scenario, invariants.

use crate::scenario::{Scenario, SeedConfig};
use crate::simulate;

/// Prints the Latency shape (`cargo test --release -p cosched-sim shape -- --ignored --nocapture`).
#[test]
#[ignore]
fn shape_latency_report() {
    let env = |name: &str, default: u64| -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (rt, seed) = (env("RT", 20_000), env("SEED", 1));
    let barrier = std::env::var("W").is_ok_and(|w| w == "barrier");
    let ablation = std::env::var("ABL").is_ok();
    for k in [0u32, 1, 2, 4, 8] {
        for config in SeedConfig::ALL {
            let mut s = if barrier {
                Scenario::seed_barrier(rt, k, config)
            } else {
                Scenario::seed_latency(rt, k, config)
            };
            s.os = crate::scenario::OsModel::SolarisTs {
                slpret_ablation: ablation,
            };
            let t = std::time::Instant::now();
            let out = simulate(&s, seed).unwrap();
            let m = &out.measurement;
            let j = &m.jobs[0];
            println!(
                "K={k} {:<28} resp {:>10.3} s cpu {:>9.3} F {:.2} [{:.2},{:.2}] comp F {:.2} p50 {:>9.1} us p99 {:>10.1} boosts {}/{} react p50 {:?} ev {} wall {:.3}s slpret {:?}",
                config.label(),
                j.response_s,
                j.cpu_s,
                j.fairness,
                j.fairness_min,
                j.fairness_max,
                m.competitors().map_or(0.0, |c| c.fairness),
                m.rtt_p50_us.unwrap_or(0.0),
                m.rtt_p99_us.unwrap_or(0.0),
                m.boosts_granted,
                m.boosts_refused,
                m.reaction_p50_us,
                out.events,
                t.elapsed().as_secs_f64(),
                m.extra.get("slpret_boosts"),
            );
        }
    }
}
