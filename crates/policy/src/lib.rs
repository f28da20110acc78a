//! # cosched-policy — the coscheduling rules, and nothing else
//!
//! Every rule of the seed papers lives here exactly once, as a plain function over plain data: no I/O, no
//! clock, no globals. The simulator (`cosched-sim`) and the Linux agent (`cosched-agent`) call the very same
//! functions, so a decision can be checked in both.
//!
//! | module | rule | seed |
//! |---|---|---|
//! | [`dcs`] | dynamic coscheduling fairness: `2^E (Tc - Tp) + C >= Tq R` | `000_e8004e1596fde6a5.txt` §3.3.3 |
//! | [`budget`] | boost budget: CPU-time token bucket, `tokens += s Δwall - Δcpu`, `s = slack / R` | `000` §3.3.3 fn. 6, `002` §2.2.1 |
//! | [`predictive`] | PRED / DYN goodness bonus `freq = P freq + (1 - P) (rq + sq)` in 4 KB packets (DYN: `rq`), and Periodic Boost's round-robin scan | `003_d5c4b72e5fa91aa6.txt` §3; PB: `001_cc73854eda2a0ea6.txt` §3.2 |
//! | [`scs`] | Self Co-Scheduling: `initial = ceil(P / MPL)`, strict FCFS admission, shrink-all / equipartition, rank-order placement, BI / SB × RR / Msg in a CPU; CS placement | `001_cc73854eda2a0ea6.txt` §3.1 eq. 1 |
//! | [`selfcheck`] | the agent's self-check: epochs coscheduling or standing aside, probes of the other mode, switch after `wins_to_switch` probes beat the recent mean by `margin` | — (SPEC: the agent never makes a job slower) |
//! | [`spin`] | spin-block receive: spin time ≈ 2 context switches + a round trip (1600 µs) | `000` §3.2.2 |
//! | [`noop_example`] | none: an example policy that does nothing, the template of a new one | — |
//! | [`parameters`] | what a policy's parameter struct tells about itself: kind, summary, seed, parameters, validation | — |
//! | [`config`] | one policy configuration: `kind` + that policy's parameters, defaults, validation, conversion | — |
//! | [`registry`] | names, parameters, defaults and seeds of all policies (`cosched policies`), generated from [`config`] | — |
//!
//! Time is an integer number of nanoseconds ([`Nanos`]) everywhere, so the simulator stays deterministic and
//! the agent can feed kernel timestamps straight in.

/// The policy table: one row per coscheduling policy, in the order `cosched policies` lists them — its
/// [`config::PolicyConfig`] variant (whose kebab-case name is its `kind`), then the module and the type of its
/// parameters ([`parameters::PolicyParameters`]). `config.rs` expands it into the enum, [`config::PolicyConfig::every_kind`]
/// and [`config::PolicyConfig::parameters`]; the registry, the experiment files' policy tables, the
/// simulator's and the agent's lists of kinds all follow. Adding a policy is a row here, its `pub mod` line
/// below, and its own file (ARCHITECTURE.md, "Adding a policy").
#[macro_export]
macro_rules! every_policy {
    ($then:ident) => {
        $then! {
            /// No coscheduling: the node's own scheduler alone.
            None(config, NoneConfig),
            /// Dynamic coscheduling.
            Dcs(config, DcsConfig),
            /// The agent's CPU-time budget on boosts.
            Budget(config, BudgetConfig),
            /// Predictive coscheduling: goodness += moving average of the socket queues, sent and received.
            Pred(config, PredConfig),
            /// PRED counting received data only.
            Dyn(config, DynConfig),
            /// Periodic Boost: a monitor boosts one process holding unconsumed messages every period.
            Pb(config, PbConfig),
            /// FIFO static space sharing: FCFS, one CPU per process, one job per CPU (seed `001`'s reference).
            Fifo(config, FifoConfig),
            /// Self Co-Scheduling: a partition per job sized by the MPL, one job per CPU, run until block.
            Scs(config, ScsConfig),
            /// SCS's in-CPU rules without partitions: each CPU holds processes of up to MPL jobs.
            Cs(config, CsConfig),
            /// An example that does nothing: the template of a new policy.
            NoopExample(noop_example, NoopExampleConfig),
        }
    };
}

pub mod budget;
pub mod config;
pub mod dcs;
pub mod dynamicq;
pub mod noop_example;
pub mod parameters;
pub mod predictive;
pub mod registry;
pub mod scs;
pub mod selfcheck;
pub mod spin;

/// Time and durations, in integer nanoseconds.
pub type Nanos = u64;

/// Nanoseconds in one microsecond.
pub const MICROS: Nanos = 1_000;
/// Nanoseconds in one millisecond.
pub const MILLIS: Nanos = 1_000_000;
/// Nanoseconds in one second.
pub const SECONDS: Nanos = 1_000_000_000;
