//! # The shared-memory multiprocessor — seed `001_cc73854eda2a0ea6.txt` (Self Co-Scheduling, SCS)
//!
//! Seed 001 shares one 64-CPU SGI Origin 2000 between MPI jobs. Its world is not the cluster of
//! [`crate::world`] (nodes, a network, a node OS scheduler that a hook steers) but one machine whose CPUs a
//! user-level CPU manager partitions among jobs, with messages over shared memory; so it has its own compact
//! model here, on the same event engine ([`crate::engine`]) and the same policy rules (`cosched_policy::scs`,
//! `cosched_policy::predictive::next_to_boost`).
//!
//! | module | what |
//! |---|---|
//! | [`apps`] | MPI skeletons by communication degree (CG, BT, Sweep3D; MG, FT; EP), the shared-memory transport |
//! | [`jobs`] | job streams: a list at t = 0 (E1), a generator at a target load (E2), an SWF trace |
//! | [`machine`] | the machine and its schedulers: FIFO, IRIX time sharing, PB, CS, SCS |
//! | [`experiment`] | `kind = "smp"` experiment files → runs → `runs.json` / `runs.csv` / `table.md` and plots |
//! | [`measures`] | slowdown vs FIFO (makespan and mean per job), coefficient of variation per app, from run records |
//!
//! What the paper leaves out and the model assumes is listed where it is used and in `docs/sim-scs.md`.

pub mod apps;
pub mod experiment;
pub mod jobs;
pub mod machine;
pub mod measures;

#[cfg(test)]
mod tests;

use cosched_policy::config::PolicyConfig;
use machine::SmpPolicy;

/// The machine's scheduler a policy table names: `fifo`, `none` (IRIX time sharing), `pb`, `cs`, `scs`. Any
/// other kind is an error that lists these.
pub fn smp_policy(config: &PolicyConfig) -> Result<SmpPolicy, String> {
    config
        .validate()
        .map_err(|e| format!("policy {}: {e}", config.kind()))?;
    let checked = "validated above";
    Ok(match config {
        PolicyConfig::Fifo(_) => SmpPolicy::Fifo,
        PolicyConfig::None(_) => SmpPolicy::Irix,
        PolicyConfig::Pb(c) => SmpPolicy::PeriodicBoost(c.to_params().expect(checked)),
        PolicyConfig::Cs(c) => SmpPolicy::Cs(c.to_params().expect(checked)),
        PolicyConfig::Scs(c) => SmpPolicy::Scs(c.to_params().expect(checked)),
        // A kind that never acts runs as the machine's own scheduler (the policy core's example).
        other if other.parameters().does_nothing() => SmpPolicy::Irix,
        other => {
            return Err(format!(
                "policy '{}' is not modelled on the shared-memory machine; use one of fifo, none (IRIX time \
                 sharing), pb, cs, scs",
                other.kind()
            ))
        }
    })
}
