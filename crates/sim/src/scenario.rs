//! A fully resolved simulation scenario: what one simulated run needs, with every default filled in and every
//! value checked. Experiment files (TOML) are parsed and validated into these structs before anything runs;
//! the engine never sees a raw file.

use cosched_policy::config::NoneConfig;
pub use cosched_policy::config::PolicyConfig;
use cosched_policy::dcs::DcsParams;
use cosched_policy::spin::ReceiveMode;
use cosched_policy::{Nanos, MICROS};
use serde::{Deserialize, Serialize};

/// One simulated run's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Nodes in the cluster (the seed used 7 SPARCstation-2s; Latency uses 2).
    pub nodes: u32,
    /// CPUs per node (the seed's nodes had 1).
    pub cpus_per_node: u32,
    /// The per-node OS scheduler model.
    pub os: OsModel,
    /// Cost of one context switch.
    pub context_switch_ns: Nanos,
    pub network: NetworkParams,
    /// The coscheduling policy on message arrival; one the simulator models ([`simulates`]).
    pub coscheduling: PolicyConfig,
    /// How the parallel job's processes wait for a message.
    pub receive: ReceiveMode,
    pub workload: Workload,
    /// CPU-bound spin-loop competitors on every node.
    pub competitors_per_node: u32,
    /// Stop the run after this much simulated time even if the job has not finished (a safety net; the
    /// result then reports `work_done < work_expected`).
    pub time_limit_ns: Nanos,
    /// Parallel jobs beside the workload's own, each measured like it and each started at its own arrival
    /// time (a job-arrival stream). None in seed `000`'s experiments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<ArrivingJob>,
    /// A two-level cache per CPU (seed `004`, [`crate::cache`]): refill stalls after switches and miss counts
    /// for the OS model. None: caches are not modelled (every seed before `004`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheConfig>,
    /// Seed `004`'s `local` benchmark on the first `nodes` nodes, one instance each. None: no local user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalBenchmark>,
}

/// The cache model: the hardware, and how the parallel jobs' and the `local` benchmark's processes use it
/// (every other process uses the parallel profile).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    pub hardware: crate::cache::CacheParams,
    pub parallel: crate::cache::CacheProfile,
    pub local: crate::cache::CacheProfile,
}

/// Seed `004`'s `local` benchmark (§3): a floating-point loop that loads the CPU `cpu_percent` of the time,
/// plus system calls at exponential intervals (mean `mean_syscall_interval_ns`, 500 ms in the seed) that each
/// move U[`syscall_min_bytes`, `syscall_max_bytes`] (1–10 MB) to memory. It ends after `cpu_ns` of CPU; one
/// instance on each of the first `nodes` nodes, the node's interactive user.
///
/// Program (one cycle; notes 004 §5.9): compute `b` = Exp(share × interval); a system call; sleep
/// `b (1 − share) / share`. Alone, a cycle takes `interval` on average (plus the system call) and the loop holds
/// exactly `share` of it, so its dedicated time varies only with the system calls.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalBenchmark {
    pub nodes: u32,
    pub cpu_percent: f64,
    pub cpu_ns: Nanos,
    pub mean_syscall_interval_ns: Nanos,
    pub syscall_min_bytes: u64,
    pub syscall_max_bytes: u64,
}

/// A parallel job that arrives at `arrival_ns` (it does not exist before): rank `r` runs on node `nodes[r]`,
/// on the CPU of that node holding the fewest processes when the run is built (the lowest on a tie).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrivingJob {
    /// Its name in the results (`<name>.work_done`, ...); unique in the scenario.
    pub name: String,
    pub arrival_ns: Nanos,
    pub nodes: Vec<u32>,
    pub program: ParallelProgram,
}

/// What a parallel job runs: the scenario's own job ([`Workload::parallel`]) and every arriving job alike, built
/// into per-rank programs by one builder ([`crate::workloads`]) and checked by one check
/// ([`ParallelProgram::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ParallelProgram {
    /// A ping-pong between its two ranks.
    Latency {
        round_trips: u64,
        message_bytes: u32,
    },
    /// Rank 0 broadcasts "passed", every rank computes `compute_ns` and reports "at barrier" to rank 0.
    Barrier {
        iterations: u64,
        compute_ns: Nanos,
        message_bytes: u32,
    },
    /// An SOR-like nearest-neighbour stencil over its ranks.
    Sor(SorParams),
    /// A NAS IS-like skeleton (seed `003`): each iteration computes `compute_ns`, then every rank sends
    /// `count_bytes` (the bucket sizes) and then `key_bytes` (its keys for that rank) to every other rank and
    /// waits for theirs: two all-to-all exchanges.
    Is {
        iterations: u64,
        compute_ns: Nanos,
        count_bytes: u32,
        key_bytes: u32,
    },
    /// A NAS MG-like skeleton (seed `003`): each iteration is a V-cycle over `levels` grid levels, down and
    /// back up (level 0 twice, the coarsest once); at level `l` a rank computes `compute_ns / 8^l` and
    /// exchanges a halo of `halo_bytes / 4^l` with each ring neighbour.
    Mg {
        iterations: u64,
        levels: u32,
        compute_ns: Nanos,
        halo_bytes: u32,
    },
    /// A NAS SP-like skeleton (seed `004` Table 1: 78 % computation): a ring stencil; each iteration computes
    /// `compute_ns` and exchanges `face_bytes` with each ring neighbour (MG's finest level alone).
    Sp {
        iterations: u64,
        compute_ns: Nanos,
        face_bytes: u32,
    },
    /// A NAS BT-like skeleton (seed `004` Table 1: 87 % computation), built as [`ParallelProgram::Sp`].
    Bt {
        iterations: u64,
        compute_ns: Nanos,
        face_bytes: u32,
    },
    /// Seed `003`'s master–slave program (§4.2): rank 0 the master, on node 0; on each other node one r_slave
    /// (receives only) and one rs_slave (receives and replies). Each iteration the master sends `message_bytes`
    /// to every slave, every slave computes `compute_ns`, the rs_slaves reply and the master waits for all
    /// replies.
    MasterSlave {
        iterations: u64,
        compute_ns: Nanos,
        message_bytes: u32,
    },
}

impl ParallelProgram {
    /// The same program with each message `bytes` long, for a program with one message size (`latency`,
    /// `barrier`, `master-slave`); `None` for one whose sizes differ by message or level.
    pub fn with_message_bytes(self, bytes: u32) -> Option<ParallelProgram> {
        match self {
            ParallelProgram::Latency { round_trips, .. } => Some(ParallelProgram::Latency {
                round_trips,
                message_bytes: bytes,
            }),
            ParallelProgram::Barrier {
                iterations,
                compute_ns,
                ..
            } => Some(ParallelProgram::Barrier {
                iterations,
                compute_ns,
                message_bytes: bytes,
            }),
            ParallelProgram::MasterSlave {
                iterations,
                compute_ns,
                ..
            } => Some(ParallelProgram::MasterSlave {
                iterations,
                compute_ns,
                message_bytes: bytes,
            }),
            ParallelProgram::Sor(_)
            | ParallelProgram::Is { .. }
            | ParallelProgram::Mg { .. }
            | ParallelProgram::Sp { .. }
            | ParallelProgram::Bt { .. } => None,
        }
    }

    /// Its name, which names the job when it is the scenario's own: `latency`, `barrier` or `sor`.
    pub fn name(&self) -> &'static str {
        match self {
            ParallelProgram::Latency { .. } => "latency",
            ParallelProgram::Barrier { .. } => "barrier",
            ParallelProgram::Sor(_) => "sor",
            ParallelProgram::Is { .. } => "is",
            ParallelProgram::Mg { .. } => "mg",
            ParallelProgram::Sp { .. } => "sp",
            ParallelProgram::Bt { .. } => "bt",
            ParallelProgram::MasterSlave { .. } => "master-slave",
        }
    }

    /// The node of rank `rank` when it is the scenario's own job on `nodes` nodes: rank `r` on node `r`, except
    /// master–slave's slaves, two to a node (ranks 1, 2 on node 1; 3, 4 on node 2; ...).
    pub fn own_node(&self, rank: u32) -> u32 {
        match self {
            ParallelProgram::MasterSlave { .. } if rank > 0 => 1 + (rank - 1) / 2,
            _ => rank,
        }
    }

    /// Its ranks as the scenario's own job on `nodes` nodes, rank `r` on node `r`: a latency job's 2, any other
    /// job one on every node.
    pub fn own_ranks(&self, nodes: u32) -> u32 {
        match self {
            ParallelProgram::Latency { .. } => 2,
            ParallelProgram::Barrier { .. }
            | ParallelProgram::Sor(_)
            | ParallelProgram::Is { .. }
            | ParallelProgram::Mg { .. }
            | ParallelProgram::Sp { .. }
            | ParallelProgram::Bt { .. } => nodes,
            ParallelProgram::MasterSlave { .. } => 1 + 2 * nodes.saturating_sub(1),
        }
    }

    /// Checks it for a job of `ranks` ranks; a problem comes back as the parameter at fault and what is wrong.
    pub fn check(&self, ranks: u64) -> Result<(), (&'static str, String)> {
        let problem = |param, text: &str| Err((param, text.to_string()));
        match *self {
            ParallelProgram::Latency { .. } if ranks != 2 => {
                Err(("ranks", format!("a latency job has 2 ranks, got {ranks}")))
            }
            ParallelProgram::Latency { round_trips: 0, .. } => {
                problem("round_trips", "must be at least 1 (the seed ran 1,000,000)")
            }
            ParallelProgram::Barrier { .. } if ranks == 0 => {
                problem("ranks", "a barrier job needs at least 1 rank")
            }
            ParallelProgram::Barrier { iterations: 0, .. } => {
                problem("iterations", "must be at least 1 (the seed ran 100,000)")
            }
            ParallelProgram::Sor(sor) if ranks == 0 || (sor.grid as u64) < ranks => Err((
                "grid",
                format!(
                    "{} rows cannot be split over {ranks} ranks; every rank needs at least one row",
                    sor.grid
                ),
            )),
            ParallelProgram::Sor(sor) if sor.iterations == 0 => {
                problem("iterations", "must be at least 1")
            }
            ParallelProgram::Is { iterations: 0, .. }
            | ParallelProgram::Mg { iterations: 0, .. }
            | ParallelProgram::Sp { iterations: 0, .. }
            | ParallelProgram::Bt { iterations: 0, .. }
            | ParallelProgram::MasterSlave { iterations: 0, .. } => {
                problem("iterations", "must be at least 1")
            }
            ParallelProgram::Is { .. }
            | ParallelProgram::Mg { .. }
            | ParallelProgram::Sp { .. }
            | ParallelProgram::Bt { .. }
                if ranks == 0 =>
            {
                problem("ranks", "needs at least 1 rank")
            }
            ParallelProgram::Mg { levels: 0, .. } => {
                problem("levels", "must be at least 1 (class A's 256^3 grid has 8)")
            }
            ParallelProgram::MasterSlave { .. } if ranks < 3 || ranks.is_multiple_of(2) => Err((
                "ranks",
                format!("a master-slave job has a master and pairs of slaves (3, 5, 7, ... ranks), got {ranks}"),
            )),
            ParallelProgram::Latency {
                message_bytes: 0, ..
            }
            | ParallelProgram::Barrier {
                message_bytes: 0, ..
            } => problem("message_bytes", "must be at least 1 (the seed used 128)"),
            _ => Ok(()),
        }
    }
}

pub use crate::os::{OsModel, RunQueue};

/// Network between nodes: a message of `b` bytes arrives `latency + b / bandwidth` after it is sent
/// (user-to-user; FM over Myrinet in the seed: ~40 µs for 128 bytes, 13 MB/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkParams {
    pub latency_ns: Nanos,
    pub bandwidth_bytes_per_s: u64,
}

impl Default for NetworkParams {
    fn default() -> Self {
        // 40 µs one-way user-to-user for a 128-byte message at 13 MB/s: 128 B / 13 MB/s ≈ 9.8 µs of it is
        // serialisation, so the fixed part is ≈ 30 µs.
        NetworkParams {
            latency_ns: 30 * MICROS,
            bandwidth_bytes_per_s: 13_000_000,
        }
    }
}

/// Whether the simulator models `policy` (decided beside the hooks, in [`crate::hook`]).
pub use crate::hook::simulates;

/// The scenario's own jobs: one parallel job, alone or beside sequential jobs. The parallel job is a
/// [`ParallelProgram`] ([`Workload::parallel`]), the type an arriving job runs too, so one builder and one check
/// serve both; it runs rank `r` on node `r` ([`ParallelProgram::own_ranks`]: a latency job on nodes 0 and 1,
/// the others on every node) and is named after its program.
///
/// Serialised (`experiment.json`) with the tag `kind`: a job alone as its program (`latency`, `barrier`,
/// `sor`), the Mixed workload as `mixed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    /// An SOR over every node beside sequential jobs (seed `000` Mixed workload), all started together, or one
    /// after another (the SOR first) when `batch`.
    Mixed {
        sor: SorParams,
        sequential: Vec<SequentialJob>,
        batch: bool,
    },
    /// A parallel job alone (seed `000` Latency and Barrier).
    #[serde(untagged)]
    Parallel(ParallelProgram),
}

impl Workload {
    /// The parallel job's program.
    pub fn parallel(&self) -> ParallelProgram {
        match self {
            Workload::Mixed { sor, .. } => ParallelProgram::Sor(*sor),
            Workload::Parallel(program) => *program,
        }
    }

    /// The sequential jobs beside it (Mixed's; none otherwise).
    pub fn sequential(&self) -> &[SequentialJob] {
        match self {
            Workload::Mixed { sequential, .. } => sequential,
            Workload::Parallel(_) => &[],
        }
    }
}

/// An SOR-like stencil: a `grid × grid` matrix split in row blocks over all nodes; each iteration computes its
/// block and exchanges one boundary row with each neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SorParams {
    pub grid: u32,
    pub iterations: u64,
    /// Compute time per grid cell per iteration.
    pub cell_compute_ns: Nanos,
}

/// A sequential job with CPU bursts and I/O waits (a stand-in for gtar+gzip or Ghostscript). It runs on
/// `node` and ends after `total_cpu_ns` of CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialJob {
    pub name: String,
    pub node: u32,
    pub total_cpu_ns: Nanos,
    /// Mean CPU burst between I/O waits (exponentially distributed).
    pub mean_burst_ns: Nanos,
    /// Mean I/O wait (exponentially distributed).
    pub mean_io_ns: Nanos,
}

/// A problem with a [`Scenario`]: which field, what is wrong, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ScenarioError {
    /// The field, as a path from the scenario (`workload.round_trips`).
    pub field: String,
    /// What is wrong and what to do about it.
    pub problem: String,
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Result<(), ScenarioError> {
    Err(ScenarioError {
        field: field.into(),
        problem: problem.into(),
    })
}

/// The most processes one simulated CPU may hold (the run-queue bookkeeping uses 32-bit indices).
pub const MAX_PROCESSES: u64 = 1 << 30;

/// The kinds of policy the simulator models, in registry order.
pub fn simulated_kinds() -> Vec<&'static str> {
    PolicyConfig::every_kind()
        .iter()
        .filter(|p| simulates(p))
        .map(PolicyConfig::kind)
        .collect()
}

impl Scenario {
    /// Checks every field, so a bad value is reported once, by name, before anything runs.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.nodes == 0 {
            return invalid(
                "nodes",
                "must be at least 1 (Latency needs 2, the seed's Barrier used 7)",
            );
        }
        if self.cpus_per_node == 0 {
            return invalid(
                "cpus_per_node",
                "must be at least 1 (the seed's SPARCstation-2s had 1)",
            );
        }
        if self.cpus_per_node > crate::os::MAX_CPUS_PER_NODE {
            return invalid(
                "cpus_per_node",
                format!(
                    "{} is more than the {} CPUs a node may have (a CPU set is a 64-bit mask)",
                    self.cpus_per_node,
                    crate::os::MAX_CPUS_PER_NODE
                ),
            );
        }
        if self.context_switch_ns >= cosched_policy::SECONDS {
            return invalid(
                "context_switch_ns",
                format!("{} ns is a second or more; a context switch costs microseconds (seed: ~750 us)", self.context_switch_ns),
            );
        }
        if let Err((param, problem)) = self.os.parameters().validate() {
            return invalid(format!("os.{param}"), problem);
        }
        if let Some(cache) = &self.cache {
            if let Err((param, problem)) = cache.hardware.validate() {
                return invalid(format!("cache.hardware.{param}"), problem);
            }
            for (which, profile) in [("parallel", &cache.parallel), ("local", &cache.local)] {
                if let Err((param, problem)) = profile.validate() {
                    return invalid(format!("cache.{which}.{param}"), problem);
                }
            }
        }
        if let Some(local) = &self.local {
            if local.nodes == 0 || local.nodes > self.nodes {
                return invalid(
                    "local.nodes",
                    format!(
                        "{} is outside 1..={} (one instance per node)",
                        local.nodes, self.nodes
                    ),
                );
            }
            if !(local.cpu_percent > 0.0 && local.cpu_percent < 100.0) {
                return invalid(
                    "local.cpu_percent",
                    format!(
                        "{} is outside (0, 100) (the seed: 90 down to 10)",
                        local.cpu_percent
                    ),
                );
            }
            if local.cpu_ns == 0 || local.mean_syscall_interval_ns == 0 {
                return invalid(
                    "local",
                    "cpu and the mean system-call interval must be positive",
                );
            }
            if local.syscall_min_bytes > local.syscall_max_bytes {
                return invalid(
                    "local.syscall_min_bytes",
                    "is above syscall_max_bytes (the seed: 1 MB to 10 MB)",
                );
            }
            if self.cache.is_none() {
                return invalid(
                    "local",
                    "the local benchmark's system calls move memory: add a [cache] section",
                );
            }
        }
        if self.network.bandwidth_bytes_per_s == 0 {
            return invalid(
                "network.bandwidth_bytes_per_s",
                "must be positive (the seed's FM reached 13 MB/s)",
            );
        }
        if let Err(e) = self.coscheduling.validate() {
            return invalid("coscheduling", format!("{} policy: {e}", e.kind));
        }
        if !simulates(&self.coscheduling) {
            return invalid(
                "coscheduling",
                format!(
                    "the simulator does not model the '{}' policy (yet); it models: {}",
                    self.coscheduling.kind(),
                    simulated_kinds().join(", ")
                ),
            );
        }
        if self.time_limit_ns == 0 {
            return invalid(
                "time_limit_ns",
                "must be positive: it is the simulated-time safety net of the run",
            );
        }
        let cpus = self.nodes as u64 * self.cpus_per_node as u64;
        let per_node = self.competitors_per_node as u64 + 1;
        if cpus.checked_mul(per_node).is_none_or(|n| n > MAX_PROCESSES) {
            return invalid(
                "competitors_per_node",
                format!(
                    "{} nodes x {} processes is too many processes",
                    self.nodes, per_node
                ),
            );
        }
        let program = self.workload.parallel();
        let ranks = program.own_ranks(self.nodes);
        let nodes_needed = program.own_node(ranks.saturating_sub(1)) + 1;
        if nodes_needed > self.nodes || ranks == 0 {
            return invalid(
                "nodes",
                format!(
                    "the {} job needs {ranks} nodes (one rank on each), got {}",
                    program.name(),
                    self.nodes
                ),
            );
        }
        let prefix = match self.workload {
            Workload::Mixed { .. } => "workload.sor",
            Workload::Parallel(_) => "workload",
        };
        if let Err((param, problem)) = program.check(ranks as u64) {
            return invalid(format!("{prefix}.{param}"), problem);
        }
        for job in self.workload.sequential() {
            if job.node >= self.nodes {
                return invalid(
                    "workload.sequential.node",
                    format!(
                        "job '{}' is placed on node {}, but nodes are numbered 0..{}",
                        job.name, job.node, self.nodes
                    ),
                );
            }
            if job.total_cpu_ns == 0 {
                return invalid(
                    "workload.sequential.total_cpu_ns",
                    format!("job '{}' needs some CPU time", job.name),
                );
            }
            if job.mean_burst_ns == 0 {
                return invalid(
                    "workload.sequential.mean_burst_ns",
                    format!("job '{}': the mean CPU burst must be positive", job.name),
                );
            }
        }
        self.validate_arrivals()
    }

    fn validate_arrivals(&self) -> Result<(), ScenarioError> {
        let mut names: Vec<&str> = std::iter::once(self.workload.parallel().name())
            .chain(self.workload.sequential().iter().map(|j| j.name.as_str()))
            .collect();
        names.push("competitors");
        for job in &self.arrivals {
            if job.name.is_empty() || names.contains(&job.name.as_str()) {
                return invalid(
                    "arrivals.name",
                    format!(
                        "'{}' is empty or already taken; job names must be unique (taken: {})",
                        job.name,
                        names.join(", ")
                    ),
                );
            }
            names.push(&job.name);
            if let Some(&node) = job.nodes.iter().find(|&&n| n >= self.nodes) {
                return invalid(
                    "arrivals.nodes",
                    format!(
                        "job '{}' places a rank on node {node}, but nodes are numbered 0..{}",
                        job.name, self.nodes
                    ),
                );
            }
            if let Err((param, problem)) = job.program.check(job.nodes.len() as u64) {
                return invalid(
                    "arrivals.program",
                    format!("job '{}': {param}: {problem}", job.name),
                );
            }
        }
        Ok(())
    }
}

/// The four schedulers of seed `000` §4.1.3, as they set [`Scenario::coscheduling`] and [`Scenario::receive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedConfig {
    /// `<No DCS, spin only>`: uncoordinated scheduling.
    NoDcsSpinOnly,
    /// `<No DCS, spin-block>`: implicit scheduling (the `ts_slpret` wake-up boost), 1600 µs spin.
    NoDcsSpinBlock,
    /// `<DCS, spin only>`, E = -1, C = 0.
    DcsSpinOnly,
    /// `<DCS, spin-block>`, E = 2, C = 100 ms, 1600 µs spin.
    DcsSpinBlock,
}

impl SeedConfig {
    /// All four, in the order of the seed's figures.
    pub const ALL: [SeedConfig; 4] = [
        SeedConfig::NoDcsSpinOnly,
        SeedConfig::NoDcsSpinBlock,
        SeedConfig::DcsSpinOnly,
        SeedConfig::DcsSpinBlock,
    ];

    /// The seed's label for the configuration.
    pub fn label(self) -> &'static str {
        match self {
            SeedConfig::NoDcsSpinOnly => "No DCS, spin only",
            SeedConfig::NoDcsSpinBlock => "No DCS, spin-block",
            SeedConfig::DcsSpinOnly => "DCS, spin only, E=-1, C=0",
            SeedConfig::DcsSpinBlock => "DCS, spin-block, E=2, C=100",
        }
    }

    /// Sets the scenario's coscheduling policy and receive mode.
    pub fn apply(self, scenario: &mut Scenario) {
        let (coscheduling, receive) = match self {
            SeedConfig::NoDcsSpinOnly => (PolicyConfig::None(NoneConfig {}), ReceiveMode::SpinOnly),
            SeedConfig::NoDcsSpinBlock => (
                PolicyConfig::None(NoneConfig {}),
                ReceiveMode::spin_block_default(),
            ),
            SeedConfig::DcsSpinOnly => (
                PolicyConfig::Dcs(DcsParams::SPIN_ONLY.into()),
                ReceiveMode::SpinOnly,
            ),
            SeedConfig::DcsSpinBlock => (
                PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into()),
                ReceiveMode::spin_block_default(),
            ),
        };
        scenario.coscheduling = coscheduling;
        scenario.receive = receive;
    }
}

impl Scenario {
    /// The seed's Latency benchmark (§4.1.2) on its platform: 2 single-CPU nodes, Solaris 2.4 TS, FM network,
    /// 128-byte token, 750 µs context switch (§3.2.2: 1600 µs ≈ 2 switches + an 80 µs round trip), under `config`.
    pub fn seed_latency(
        round_trips: u64,
        competitors_per_node: u32,
        config: SeedConfig,
    ) -> Scenario {
        let mut s = Scenario {
            nodes: 2,
            cpus_per_node: 1,
            os: OsModel::SolarisTs(Default::default()),
            context_switch_ns: 750 * MICROS,
            network: NetworkParams::default(),
            coscheduling: PolicyConfig::None(NoneConfig {}),
            receive: ReceiveMode::SpinOnly,
            workload: Workload::Parallel(ParallelProgram::Latency {
                round_trips,
                message_bytes: 128,
            }),
            competitors_per_node,
            time_limit_ns: 1_000_000 * cosched_policy::SECONDS,
            arrivals: Vec::new(),
            cache: None,
            local: None,
        };
        config.apply(&mut s);
        s
    }

    /// The seed's Mixed workload (§4.1.2, Figure 7) on 7 nodes: an SOR on a 128×128 grid beside gtar+gzip (node 0)
    /// and Ghostscript (node 1), all started together, or one after another when `batch`.
    ///
    /// Calibration (the seed gives no sizes, only Figure 7's scale — batch jobs of tens to ~100 s): a 40 MHz
    /// SPARCstation-2 doing a 5-point update takes ~1 µs a cell, so a rank's 18–19 rows × 128 cells take
    /// ~2.4 ms an iteration and 15,000 iterations ≈ 38 s alone; gtar+gzip is 40 s of CPU in 20 ms bursts
    /// between 10 ms I/O waits (97 files read over NFS), ≈ 60 s alone; Ghostscript is 80 s of CPU in 60 ms bursts
    /// between 5 ms waits, ≈ 86 s alone. Measured in batch (seed 1): SOR 38.1 s, gtar+gzip 59.5 s, Ghostscript
    /// 85.9 s — 184 s in all. The same sizes are in `experiments/sim/fig07-mixed.toml`.
    pub fn seed_mixed(batch: bool, config: SeedConfig) -> Scenario {
        let mut s = Scenario::seed_latency(1, 0, config);
        s.nodes = 7;
        let job = |name: &str, node, cpu_s, burst_ms, io_ms| SequentialJob {
            name: name.into(),
            node,
            total_cpu_ns: cpu_s * cosched_policy::SECONDS,
            mean_burst_ns: burst_ms * cosched_policy::MILLIS,
            mean_io_ns: io_ms * cosched_policy::MILLIS,
        };
        s.workload = Workload::Mixed {
            sor: SorParams {
                grid: 128,
                iterations: 15_000,
                cell_compute_ns: MICROS,
            },
            sequential: vec![
                job("gtar+gzip", 0, 40, 20, 10),
                job("ghostscript", 1, 80, 60, 5),
            ],
            batch,
        };
        s
    }

    /// The seed's Barrier benchmark (§4.1.2): 7 nodes, 78 µs of computation between barriers, under `config`.
    pub fn seed_barrier(
        iterations: u64,
        competitors_per_node: u32,
        config: SeedConfig,
    ) -> Scenario {
        let mut s = Scenario::seed_latency(1, competitors_per_node, config);
        s.nodes = 7;
        s.workload = Workload::Parallel(ParallelProgram::Barrier {
            iterations,
            compute_ns: 78 * MICROS,
            message_bytes: 128,
        });
        s
    }
}
