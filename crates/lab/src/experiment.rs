//! Lab experiment files (`experiments/lab/*.toml`): typed, `deny_unknown_fields`, validated into a
//! [`LabExperiment`] before anything runs.
//!
//! ```toml
//! name = "pingpong-dcs"
//! nodes = 2
//! competitors = [0, 1, 2, 4]          # K CPU-bound competitors per node (the seed's x-axis)
//! receive_modes = ["spin-only", "spin-block:1600", "block"]
//! repetitions = 3
//!
//! [program]
//! kind = "pingpong"                   # pingpong | barrier | stencil | masterslave | alltoall | multigrid
//!                                     # | mpi-pingpong | lammps
//! duration_s = 5.0                    # or: count = 100000 (round trips / iterations / V-cycles)
//! message_bytes = 128                 # alltoall: each block; multigrid: a finest-level halo
//! args = ["--compute-us", "500"]      # appended to every rank's command line (e.g. multigrid's --levels)
//!
//! [[configurations]]
//! name = "no-agent"
//!
//! [[configurations]]
//! name = "agent"
//! agent = true
//! dcs_exponent = -1
//! dcs_constant_ms = 0.0
//! boost_window_us = 500
//!
//! [lab]                               # every field optional; the defaults below
//! cpu_shares = 262144                 # cpu.shares of the experiment's cpu cgroup (and of the competitors' own)
//! rt_runtime_us = 900000              # its cpu.rt_runtime_us: room for the agent's SCHED_FIFO boosts
//! settle_ms = 300                     # pause after the competitors start, before the job
//! cpus = [0, 1]                       # node i on cpus[i mod len] (default: every CPU the lab may use)
//! competitors_cgroup = "job"          # "job" | "own"
//! job_session = "shared"              # "shared" | "own"
//! competitors_managed = false         # true: in agent configurations each competitor is registered with the
//!                                     # agent (`cosched run --pid`), a job of its own: the seeds that adapt
//!                                     # every task of a node (004's quanta) act on them too
//! local_probe = false                 # true: one wake-up probe (the local user) per node CPU
//! local_probe_args = [...]            # its arguments (default: the 1 ms wake-up probe below; the lab adds
//!                                     # --duration-s); ["--mean-interval-ms", "500"] is seed 004's `local`
//! ```
//!
//! Every error names the file, the field and the problem.
//!
//! ## Where the competitors, the job and the local user run (`[lab]`)
//!
//! - `competitors_cgroup = "job"` (default): the competitors run in the experiment's cpu cgroup
//!   `cpu/cosched-<run id>`, beside the job's ranks: one CFS group, so on a CPU a rank and K competitors each get
//!   1/(K+1) of it. `"own"`: each node is a machine of its own inside the experiment's cpu cgroup,
//!   `cpu/cosched-<run id>/n<i>`, whose two groups `job` (the node's rank, with RT runtime) and `competitors`
//!   get equal `cpu.shares`: on each CPU the job's group and the competitors' each get half whatever K, the
//!   kernel's own fair share between groups, which is what an agent that reads R across cgroups has to respect,
//!   and the rank is alone in its group, as on a real node (one group for both nodes' ranks would be no rank's
//!   own, so no agent could lower it for one rank's debt). The experiment's cgroup keeps `cpu_shares` (262144 by
//!   default) and its 98 % cap (`cpu.cfs_quota_us`, [`crate::cgroup::KERNEL_HEADROOM_PERCENT`]: the kernel's own
//!   threads need the rest), so both groups stay as well protected against foreign load as with `"job"`; its RT
//!   runtime is split evenly over the nodes. Made and removed with the lab's cgroups (and by the reaper and
//!   `cosched lab --cleanup`, which recognise the run id in the name). Each competitor still counts in its node's
//!   cpuacct group (`cpuacct/cosched-<run id>/n<i>`),
//!   so the measure step (`Tc` = node CPU − competitors' CPU) is the same either way. In `F = N·Tc/Te`, `N` is
//!   the inverse of the part of the CPU the kernel's fair scheduler gives the party: ranks + competitors in one
//!   cgroup; with `"own"`, 2 × the ranks for a rank and 2 × K for a competitor (the two groups halve the CPU), so
//!   a rank at its group's half reads `F = 1` whatever K (`crate::measure::RunSetting`).
//! - `job_session = "shared"` (default): every process the lab starts is in the lab's session. `"own"`: the job's
//!   processes (each rank, or `cosched run` wrapping it when the agent is on) are started in a new session
//!   (`setsid(2)` before `exec`, after `PR_SET_PDEATHSIG`, which `setsid` keeps: they still die with the lab), so
//!   in a session — and, with `kernel.sched_autogroup_enabled = 1`, an autogroup — of their own; competitors,
//!   probes and the agent stay in the lab's. The kernel schedules by autogroup only tasks of the *root* cpu
//!   cgroup, and the lab's job is in `cpu/cosched-<run id>`, so here the new session changes what the session
//!   holds (what an agent reads of it), not CFS's hierarchy.
//! - `local_probe = true`: the *local user* — one `cosched-local --period-ms 1 --min-mb 0 --max-mb 0
//!   --burst-us 0` per distinct node CPU, pinned to it: SCHED_OTHER, sleeps 1 ms and records how late it wakes.
//!   **Rule: the probes run in a cpu cgroup of their own**, the sibling `cpu/cosched-<run id>-local`, at
//!   `cpu_shares` like the others: another user of the machine, with a session/autogroup of its own as an
//!   interactive user has, at the experiment's weight (in the root cpu cgroup, beside 262144-share groups, it
//!   would only measure that weight: p99 353 ms measured). Not beside the competitors, nor beside the job's
//!   ranks: on this kernel (6.18, EEVDF) a cgroup that spans the CPUs and holds a CPU hog *and* a task that
//!   sleeps and wakes every millisecond starves the root cpu cgroup — whatever its shares, 1024 included — and
//!   with it the kernel's own threads: 10 fork+exec from the root cgroup took 4.4–14 s instead of 0.02–2.2 s,
//!   the kernel reported `rcu_preempt kthread starved` for 59 s and workqueue lockups of 100 s, and the lab
//!   (its cgroup attaches wait for RCU grace periods) stalled until the probes exited; hogs in one cgroup and
//!   the probes in a sibling did none of that (0.05–2.1 s, the hogs' own weight, probe p99 0.1–0.2 ms). The
//!   probes are in the experiment's cpuacct group but in no node's (their CPU is the experiment's, not a
//!   rank's), in the lab's session and the host's network namespace, never under `cosched run`: the agent
//!   does not manage them. Placed after the competitors and held at a gate, let go right after the job's
//!   processes, stopped with SIGINT once the job has ended; their result lines give each run `local_p50_us`,
//!   `local_p99_us` (the worse of the CPUs' wake-up delay percentiles) and `local_max_us` (the largest of their
//!   maxima), in the record's `measurement.extra`.

use cosched_policy::spin::ReceiveMode;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The parallel programs the lab knows how to place on its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramKind {
    /// `cosched-pingpong`: two nodes exchange a token (seed `000` Latency).
    Pingpong,
    /// `cosched-barrier`: root broadcasts, all compute, all report back (seed `000` Barrier).
    Barrier,
    /// `cosched-stencil`: SOR / halo exchange between neighbours (seed `000` Mixed's SOR).
    Stencil,
    /// `cosched-masterslave`: one master, slaves that receive or receive and reply (seed `003`).
    Masterslave,
    /// `cosched-alltoall`: compute, all-to-all personalized exchange of key blocks, reduction (seed `003`'s
    /// NAS IS).
    Alltoall,
    /// `cosched-multigrid`: V-cycles of compute and ring halo exchanges, halving per level (seed `003`'s NAS MG).
    Multigrid,
    /// `mpi_pingpong` (Open MPI, TCP) launched by `mpirun` across the node namespaces.
    MpiPingpong,
    /// LAMMPS (the system's `lmp`, Debian `lammps`) on its `melt` example for `count` timesteps, launched by
    /// `mpirun` across the node namespaces like `mpi-pingpong`: a program nobody here wrote ([`crate::programs`]).
    Lammps,
}

impl ProgramKind {
    pub const ALL: [ProgramKind; 8] = [
        ProgramKind::Pingpong,
        ProgramKind::Barrier,
        ProgramKind::Stencil,
        ProgramKind::Masterslave,
        ProgramKind::Alltoall,
        ProgramKind::Multigrid,
        ProgramKind::MpiPingpong,
        ProgramKind::Lammps,
    ];

    /// The name used in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            ProgramKind::Pingpong => "pingpong",
            ProgramKind::Barrier => "barrier",
            ProgramKind::Stencil => "stencil",
            ProgramKind::Masterslave => "masterslave",
            ProgramKind::Alltoall => "alltoall",
            ProgramKind::Multigrid => "multigrid",
            ProgramKind::MpiPingpong => "mpi-pingpong",
            ProgramKind::Lammps => "lammps",
        }
    }

    /// Whether `mpirun` starts it across the nodes (through the cluster's MPI launcher).
    pub fn is_mpi(self) -> bool {
        matches!(self, ProgramKind::MpiPingpong | ProgramKind::Lammps)
    }

    /// The fewest nodes the program can run on.
    pub fn min_nodes(self) -> u32 {
        2
    }

    /// The most nodes the program can run on (`None`: any number).
    pub fn max_nodes(self) -> Option<u32> {
        match self {
            ProgramKind::Pingpong | ProgramKind::MpiPingpong => Some(2),
            _ => None,
        }
    }
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    name: String,
    #[serde(default)]
    description: String,
    nodes: u32,
    competitors: Vec<u32>,
    receive_modes: Vec<String>,
    #[serde(default = "default_repetitions")]
    repetitions: u32,
    program: ProgramSection,
    configurations: Vec<ConfigurationSection>,
    #[serde(default)]
    lab: LabSection,
}

fn default_repetitions() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramSection {
    kind: ProgramKind,
    duration_s: Option<f64>,
    count: Option<u64>,
    message_bytes: Option<u32>,
    /// Extra arguments appended to every node's command line.
    #[serde(default)]
    args: Vec<String>,
    /// Kill a run that has not finished after this long (default: 4 × duration + 30 s, or 300 s for counts).
    timeout_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigurationSection {
    name: String,
    #[serde(default)]
    agent: bool,
    dcs_exponent: Option<i32>,
    dcs_constant_ms: Option<f64>,
    boost_window_us: Option<u64>,
    /// Extra arguments for `cosched agent`, verbatim.
    #[serde(default)]
    agent_args: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabSection {
    #[serde(default = "default_cpu_shares")]
    cpu_shares: u64,
    #[serde(default = "default_rt_runtime_us")]
    rt_runtime_us: u64,
    #[serde(default = "default_settle_ms")]
    settle_ms: u64,
    /// CPUs to place nodes on, node i on `cpus[i mod len]` (default: every online CPU).
    cpus: Option<Vec<u32>>,
    /// `job` or `own` ([`CompetitorsCgroup`]).
    competitors_cgroup: Option<String>,
    /// `shared` or `own` ([`JobSession`]).
    job_session: Option<String>,
    /// Register each competitor with the agent as a job of its own (agent configurations).
    #[serde(default)]
    competitors_managed: bool,
    #[serde(default)]
    local_probe: bool,
    /// The probe's arguments instead of [`LOCAL_PROBE_ARGS`] (needs `local_probe = true`).
    local_probe_args: Option<Vec<String>>,
}

impl Default for LabSection {
    fn default() -> Self {
        LabSection {
            cpu_shares: default_cpu_shares(),
            rt_runtime_us: default_rt_runtime_us(),
            settle_ms: default_settle_ms(),
            cpus: None,
            competitors_cgroup: None,
            job_session: None,
            competitors_managed: false,
            local_probe: false,
            local_probe_args: None,
        }
    }
}

/// cgroup v1 `cpu.shares` of the experiment cgroup: 256 × the default 1024, so foreign load barely touches it.
fn default_cpu_shares() -> u64 {
    262_144
}

/// `cpu.rt_runtime_us` of the experiment cgroup (per 1 s period): room for the agent's SCHED_FIFO boosts. The
/// agent's budget, not this, keeps boosts to the job's fair share; the throttle only has to stay out of the way
/// (with one competitor the fair share is half of each CPU, and 400 ms/s throttled the job below it).
fn default_rt_runtime_us() -> u64 {
    900_000
}

/// Pause after the competitors start, before the job starts.
fn default_settle_ms() -> u64 {
    300
}

/// How much work one run of the program does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunLength {
    /// Run for this many seconds and count the work done.
    Duration { seconds: f64 },
    /// Do this many round trips / iterations.
    Count { units: u64 },
}

/// The program part of a resolved experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramSpec {
    pub kind: ProgramKind,
    pub length: RunLength,
    pub message_bytes: u32,
    pub extra_args: Vec<String>,
    pub timeout_s: f64,
}

/// The agent's settings for one configuration; `None` fields keep the agent's own defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentSettings {
    pub dcs_exponent: Option<i32>,
    pub dcs_constant_ms: Option<f64>,
    pub boost_window_us: Option<u64>,
    pub extra_args: Vec<String>,
}

/// One scheduling configuration: without the agent, or with it and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    pub name: String,
    pub agent: Option<AgentSettings>,
}

/// Which cpu cgroup the competitors (and the local probes) run in (`lab.competitors_cgroup`; module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompetitorsCgroup {
    /// The experiment's cpu cgroup, beside the job (the default).
    #[default]
    Job,
    /// A cpu cgroup of their own on each node, `cosched-<run id>/n<i>/competitors`, beside the node's job group
    /// at the same shares.
    Own,
}

impl CompetitorsCgroup {
    pub const NAMES: &'static str =
        "\"job\" (beside the job, the default) or \"own\" (a cpu cgroup of their own)";

    pub fn name(self) -> &'static str {
        match self {
            CompetitorsCgroup::Job => "job",
            CompetitorsCgroup::Own => "own",
        }
    }

    fn parse(text: &str) -> Option<CompetitorsCgroup> {
        match text {
            "job" => Some(CompetitorsCgroup::Job),
            "own" => Some(CompetitorsCgroup::Own),
            _ => None,
        }
    }
}

/// Which session the job's processes start in (`lab.job_session`; module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JobSession {
    /// The lab's session, like everything else it starts (the default).
    #[default]
    Shared,
    /// A new session (`setsid`) for each of the job's processes: their own autogroup.
    Own,
}

impl JobSession {
    pub const NAMES: &'static str =
        "\"shared\" (the lab's session, the default) or \"own\" (setsid: a session and autogroup of its own)";

    pub fn name(self) -> &'static str {
        match self {
            JobSession::Shared => "shared",
            JobSession::Own => "own",
        }
    }

    fn parse(text: &str) -> Option<JobSession> {
        match text {
            "shared" => Some(JobSession::Shared),
            "own" => Some(JobSession::Own),
            _ => None,
        }
    }
}

/// The local user's wake-up probe: its program and arguments (before the lab's `--duration-s` bound).
pub const LOCAL_PROBE_BINARY: &str = "cosched-local";
pub const LOCAL_PROBE_ARGS: [&str; 8] = [
    "--period-ms",
    "1",
    "--min-mb",
    "0",
    "--max-mb",
    "0",
    "--burst-us",
    "0",
];

/// Machine-side settings of the lab.
#[derive(Clone, Debug, PartialEq)]
pub struct LabSettings {
    pub cpu_shares: u64,
    pub rt_runtime_us: u64,
    pub settle_ms: u64,
    pub cpus: Option<Vec<u32>>,
    pub competitors_cgroup: CompetitorsCgroup,
    pub job_session: JobSession,
    /// In agent configurations, each competitor is registered with the agent (`lab.competitors_managed`).
    pub competitors_managed: bool,
    /// One wake-up probe per node CPU (`lab.local_probe`).
    pub local_probe: bool,
    /// Its arguments (`lab.local_probe_args`, default [`LOCAL_PROBE_ARGS`]); the lab adds `--duration-s`.
    pub local_probe_args: Vec<String>,
}

/// A validated experiment: everything needed to run it, nothing left to check.
#[derive(Clone, Debug, PartialEq)]
pub struct LabExperiment {
    pub name: String,
    pub description: String,
    pub nodes: u32,
    pub competitors: Vec<u32>,
    pub receive_modes: Vec<ReceiveMode>,
    pub repetitions: u32,
    pub program: ProgramSpec,
    pub configurations: Vec<Configuration>,
    pub lab: LabSettings,
    /// The file it came from (if any).
    pub source: Option<PathBuf>,
}

/// A bad experiment file.
#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error("cannot read experiment file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("experiment file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("experiment file {path}: field `{field}`: {problem}")]
    Invalid {
        path: PathBuf,
        field: String,
        problem: String,
    },
}

impl LabExperiment {
    /// Read and validate an experiment file.
    pub fn load(path: &Path) -> Result<LabExperiment, ExperimentError> {
        let text = std::fs::read_to_string(path).map_err(|source| ExperimentError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut experiment = Self::parse(&text, path)?;
        experiment.source = Some(path.to_path_buf());
        Ok(experiment)
    }

    /// Parse and validate experiment text; `path` only labels the errors.
    pub fn parse(text: &str, path: &Path) -> Result<LabExperiment, ExperimentError> {
        let file: ExperimentFile = toml::from_str(text).map_err(|e| ExperimentError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        resolve(file, path)
    }

    /// Total number of runs: configurations × receive modes × competitor counts × repetitions.
    pub fn total_runs(&self) -> usize {
        self.configurations.len()
            * self.receive_modes.len()
            * self.competitors.len()
            * self.repetitions as usize
    }

    /// The resolved configuration, printed before a run so the output records exactly what ran.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let length = match self.program.length {
            RunLength::Duration { seconds } => format!("{seconds} s per run"),
            RunLength::Count { units } => format!("{units} units per run"),
        };
        out.push_str(&format!("experiment      {}\n", self.name));
        if !self.description.is_empty() {
            out.push_str(&format!("description     {}\n", self.description));
        }
        out.push_str(&format!(
            "program         {} ({}, {} B messages, timeout {} s{})\n",
            self.program.kind.name(),
            length,
            self.program.message_bytes,
            self.program.timeout_s,
            if self.program.extra_args.is_empty() {
                String::new()
            } else {
                format!(", extra args {:?}", self.program.extra_args)
            }
        ));
        out.push_str(&format!("nodes           {}\n", self.nodes));
        out.push_str(&format!(
            "competitors K   {:?} per node\n",
            self.competitors
        ));
        let modes: Vec<String> = self.receive_modes.iter().map(ReceiveMode::as_arg).collect();
        out.push_str(&format!("receive modes   {}\n", modes.join(", ")));
        for c in &self.configurations {
            match &c.agent {
                None => out.push_str(&format!("configuration   {} (no agent)\n", c.name)),
                Some(a) => {
                    // Only what the file sets: DCS's E and C mean nothing to another policy's agent.
                    let mut set: Vec<String> = [
                        a.dcs_exponent.map(|v| format!("E={v}")),
                        a.dcs_constant_ms.map(|v| format!("C={v} ms")),
                        a.boost_window_us.map(|v| format!("boost window={v} us")),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    if !a.extra_args.is_empty() {
                        set.push(format!("args {:?}", a.extra_args));
                    }
                    if set.is_empty() {
                        set.push("its defaults".into());
                    }
                    out.push_str(&format!(
                        "configuration   {} (agent: {})\n",
                        c.name,
                        set.join(", ")
                    ))
                }
            }
        }
        out.push_str(&format!("repetitions     {}\n", self.repetitions));
        out.push_str(&format!(
            "cgroup          cpu.shares={} cpu.rt_runtime_us={} cpu.cfs_quota_us={} % of its CPUs settle={} ms\n",
            self.lab.cpu_shares,
            self.lab.rt_runtime_us,
            100 - crate::cgroup::KERNEL_HEADROOM_PERCENT,
            self.lab.settle_ms
        ));
        out.push_str(&format!(
            "competitors in  {}\n",
            match self.lab.competitors_cgroup {
                CompetitorsCgroup::Job =>
                    "job: the experiment's cpu cgroup, beside the job".to_string(),
                CompetitorsCgroup::Own => format!(
                    "own: on each node cpu cgroups cosched-<run id>/n<i>/{{job,competitors}}, equal shares, \
                     under the experiment's (cpu.shares={})",
                    self.lab.cpu_shares
                ),
            }
        ));
        out.push_str(&format!(
            "job session     {}\n",
            match self.lab.job_session {
                JobSession::Shared => "shared: the lab's session",
                JobSession::Own => "own: setsid before exec (a session and autogroup of its own)",
            }
        ));
        if self.lab.competitors_managed {
            out.push_str(
                "competitors     managed: in agent configurations each is registered with the agent, a job of its own\n",
            );
        }
        out.push_str(&format!(
            "local probe     {}\n",
            if self.lab.local_probe {
                format!(
                    "on: {LOCAL_PROBE_BINARY} {} per node CPU, cpu cgroup cosched-<run id>-local, cpu.shares={}",
                    self.lab.local_probe_args.join(" "),
                    self.lab.cpu_shares
                )
            } else {
                "off".to_string()
            }
        ));
        out.push_str(&format!("runs            {}\n", self.total_runs()));
        out
    }
}

/// The longest run or timeout a file may ask for: a day. Anything longer is a typo, and a huge value would
/// overflow the deadline (`Instant + Duration` panics) instead of being refused.
const MAX_RUN_SECONDS: f64 = 86_400.0;

fn seconds_in_range(seconds: f64) -> bool {
    seconds > 0.0 && seconds <= MAX_RUN_SECONDS
}
fn resolve(file: ExperimentFile, path: &Path) -> Result<LabExperiment, ExperimentError> {
    let invalid = |field: &str, problem: String| ExperimentError::Invalid {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem,
    };

    if file.name.is_empty()
        || !file
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid("name", format!("`{}` must be non-empty and use only letters, digits, - and _ (it names results/<name>/)", file.name)));
    }
    let kind = file.program.kind;
    if file.nodes < kind.min_nodes() {
        return Err(invalid(
            "nodes",
            format!(
                "{} needs at least {} nodes, got {}",
                kind.name(),
                kind.min_nodes(),
                file.nodes
            ),
        ));
    }
    if let Some(max) = kind.max_nodes() {
        if file.nodes > max {
            return Err(invalid(
                "nodes",
                format!(
                    "{} runs on exactly {max} nodes, got {}",
                    kind.name(),
                    file.nodes
                ),
            ));
        }
    }
    if file.nodes > 64 {
        return Err(invalid(
            "nodes",
            format!("{} nodes is more than the lab's limit of 64", file.nodes),
        ));
    }
    if file.competitors.is_empty() {
        return Err(invalid(
            "competitors",
            "give at least one competitor count, e.g. [0, 1, 2, 4]".into(),
        ));
    }
    if let Some(k) = file.competitors.iter().find(|&&k| k > 64) {
        return Err(invalid(
            "competitors",
            format!("{k} competitors per node is more than the limit of 64"),
        ));
    }
    if file.receive_modes.is_empty() {
        return Err(invalid(
            "receive_modes",
            "give at least one of spin-only, spin-block:<us>, block".into(),
        ));
    }
    let receive_modes = file
        .receive_modes
        .iter()
        .map(|m| m.parse::<ReceiveMode>().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid("receive_modes", e))?;
    if file.repetitions == 0 {
        return Err(invalid("repetitions", "must be at least 1".into()));
    }

    if file.program.kind == ProgramKind::Lammps {
        // Open MPI's progress engine polls while a rank waits: that is the only way LAMMPS receives, and no
        // flag of ours changes it, so the file must say so rather than name a mode that is not run.
        if receive_modes != [ReceiveMode::SpinOnly] {
            return Err(invalid(
                "receive_modes",
                "lammps receives as Open MPI does (its progress engine polls): give [\"spin-only\"]".into(),
            ));
        }
        if file.program.count.is_none() {
            return Err(invalid(
                "program",
                "lammps runs a number of timesteps: give count (e.g. 2000), not duration_s".into(),
            ));
        }
    }
    let length = match (file.program.duration_s, file.program.count) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "program",
                "give either duration_s or count, not both".into(),
            ))
        }
        (None, None) => {
            return Err(invalid(
                "program",
                "give duration_s (seconds per run) or count (units per run)".into(),
            ))
        }
        (Some(seconds), None) if !seconds_in_range(seconds) => {
            return Err(invalid(
                "program.duration_s",
                format!(
                    "{seconds} must be a positive number of seconds, at most {MAX_RUN_SECONDS}"
                ),
            ))
        }
        (Some(seconds), None) => RunLength::Duration { seconds },
        (None, Some(0)) => return Err(invalid("program.count", "must be at least 1".into())),
        (None, Some(units)) => RunLength::Count { units },
    };
    let message_bytes = file.program.message_bytes.unwrap_or(128);
    if message_bytes == 0 || message_bytes > 1 << 20 {
        return Err(invalid(
            "program.message_bytes",
            format!("{message_bytes} must be in 1..=1048576"),
        ));
    }
    let timeout_s = match file.program.timeout_s {
        Some(t) if !seconds_in_range(t) => {
            return Err(invalid(
                "program.timeout_s",
                format!("{t} must be a positive number of seconds, at most {MAX_RUN_SECONDS}"),
            ))
        }
        Some(t) => t,
        None => match length {
            RunLength::Duration { seconds } => 4.0 * seconds + 30.0,
            RunLength::Count { .. } => 300.0,
        },
    };

    if file.configurations.is_empty() {
        return Err(invalid(
            "configurations",
            "give at least one [[configurations]] (e.g. name = \"no-agent\")".into(),
        ));
    }
    let mut configurations = Vec::new();
    for (i, c) in file.configurations.into_iter().enumerate() {
        let field = |f: &str| format!("configurations[{i}].{f}");
        if c.name.is_empty() {
            return Err(invalid(&field("name"), "must not be empty".into()));
        }
        if configurations
            .iter()
            .any(|p: &Configuration| p.name == c.name)
        {
            return Err(invalid(
                &field("name"),
                format!("`{}` is used twice", c.name),
            ));
        }
        let agent = if c.agent {
            if let Some(ms) = c.dcs_constant_ms {
                if !(ms >= 0.0 && ms.is_finite()) {
                    return Err(invalid(
                        &field("dcs_constant_ms"),
                        format!("{ms} must be ≥ 0"),
                    ));
                }
            }
            if let Some(e) = c.dcs_exponent {
                if e.abs() > cosched_policy::dcs::DcsParams::MAX_ABS_EXPONENT {
                    return Err(invalid(
                        &field("dcs_exponent"),
                        format!(
                            "{e} is outside ±{}",
                            cosched_policy::dcs::DcsParams::MAX_ABS_EXPONENT
                        ),
                    ));
                }
            }
            if c.boost_window_us == Some(0) {
                return Err(invalid(
                    &field("boost_window_us"),
                    "must be at least 1 µs".into(),
                ));
            }
            Some(AgentSettings {
                dcs_exponent: c.dcs_exponent,
                dcs_constant_ms: c.dcs_constant_ms,
                boost_window_us: c.boost_window_us,
                extra_args: c.agent_args,
            })
        } else {
            let stray = [
                ("dcs_exponent", c.dcs_exponent.is_some()),
                ("dcs_constant_ms", c.dcs_constant_ms.is_some()),
                ("boost_window_us", c.boost_window_us.is_some()),
                ("agent_args", !c.agent_args.is_empty()),
            ];
            if let Some((name, _)) = stray.iter().find(|(_, set)| *set) {
                return Err(invalid(
                    &field(name),
                    "is an agent parameter, but this configuration has no `agent = true`".into(),
                ));
            }
            None
        };
        configurations.push(Configuration {
            name: c.name,
            agent,
        });
    }

    if file.lab.cpu_shares < 2 || file.lab.cpu_shares > 262_144 {
        return Err(invalid(
            "lab.cpu_shares",
            format!(
                "{} must be in 2..=262144 (cgroup v1 limits)",
                file.lab.cpu_shares
            ),
        ));
    }
    if file.lab.rt_runtime_us == 0 || file.lab.rt_runtime_us > 950_000 {
        return Err(invalid(
            "lab.rt_runtime_us",
            format!(
                "{} must be in 1..=950000 (SCHED_FIFO inside the cgroup needs > 0)",
                file.lab.rt_runtime_us
            ),
        ));
    }
    if let Some(cpus) = &file.lab.cpus {
        if cpus.is_empty() {
            return Err(invalid(
                "lab.cpus",
                "must not be empty (leave it out to use every online CPU)".into(),
            ));
        }
    }
    let competitors_cgroup = match &file.lab.competitors_cgroup {
        None => CompetitorsCgroup::default(),
        Some(text) => CompetitorsCgroup::parse(text).ok_or_else(|| {
            invalid(
                "lab.competitors_cgroup",
                format!("`{text}` must be {}", CompetitorsCgroup::NAMES),
            )
        })?,
    };
    let job_session = match &file.lab.job_session {
        None => JobSession::default(),
        Some(text) => JobSession::parse(text).ok_or_else(|| {
            invalid(
                "lab.job_session",
                format!("`{text}` must be {}", JobSession::NAMES),
            )
        })?,
    };
    let local_probe_args = match &file.lab.local_probe_args {
        None => LOCAL_PROBE_ARGS.iter().map(|a| a.to_string()).collect(),
        Some(_) if !file.lab.local_probe => {
            return Err(invalid(
                "lab.local_probe_args",
                "needs local_probe = true (there is no probe to pass them to)".into(),
            ))
        }
        Some(args) if args.iter().any(|a| a == "--duration-s" || a == "--count") => {
            return Err(invalid(
                "lab.local_probe_args",
                "must not bound the probe (--duration-s, --count): the lab runs it for the job's length".into(),
            ))
        }
        Some(args) => args.clone(),
    };

    Ok(LabExperiment {
        name: file.name,
        description: file.description,
        nodes: file.nodes,
        competitors: file.competitors,
        receive_modes,
        repetitions: file.repetitions,
        program: ProgramSpec {
            kind,
            length,
            message_bytes,
            extra_args: file.program.args,
            timeout_s,
        },
        configurations,
        lab: LabSettings {
            cpu_shares: file.lab.cpu_shares,
            rt_runtime_us: file.lab.rt_runtime_us,
            settle_ms: file.lab.settle_ms,
            cpus: file.lab.cpus,
            competitors_cgroup,
            job_session,
            competitors_managed: file.lab.competitors_managed,
            local_probe: file.lab.local_probe,
            local_probe_args,
        },
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
nodes = 2
competitors = [0, 1]
receive_modes = ["spin-only", "spin-block:1600", "block"]
[program]
kind = "pingpong"
duration_s = 1.0
[[configurations]]
name = "no-agent"
[[configurations]]
name = "agent"
agent = true
dcs_exponent = -1
"#;

    fn parse(text: &str) -> Result<LabExperiment, ExperimentError> {
        LabExperiment::parse(text, Path::new("t.toml"))
    }

    #[test]
    fn minimal_file_resolves_with_defaults() {
        let e = parse(MINIMAL).unwrap();
        assert_eq!(e.repetitions, 1);
        assert_eq!(e.program.message_bytes, 128);
        // Default timeout for a 1 s run: 4 × 1 + 30 = 34 s.
        assert_eq!(e.program.timeout_s, 34.0);
        assert_eq!(
            e.receive_modes[1],
            ReceiveMode::SpinBlock { spin_ns: 1_600_000 }
        );
        assert!(e.configurations[0].agent.is_none());
        assert_eq!(
            e.configurations[1].agent.as_ref().unwrap().dcs_exponent,
            Some(-1)
        );
        // 2 configurations × 3 modes × 2 K × 1 repetition.
        assert_eq!(e.total_runs(), 12);
    }

    #[test]
    fn the_description_names_only_the_agent_settings_the_file_sets() {
        let text = format!(
            "{MINIMAL}[[configurations]]\nname = \"pred\"\nagent = true\nagent_args = [\"--policy\", \"pred\"]\n\
             [[configurations]]\nname = \"plain\"\nagent = true\n"
        );
        let d = parse(&text).unwrap().describe();
        assert!(d.contains("configuration   agent (agent: E=-1)\n"), "{d}");
        assert!(
            d.contains("configuration   pred (agent: args [\"--policy\", \"pred\"])\n"),
            "{d}"
        );
        assert!(
            d.contains("configuration   plain (agent: its defaults)\n"),
            "{d}"
        );
        assert!(!d.contains("C=default"), "{d}");
    }

    #[test]
    fn unknown_field_is_named() {
        let err = parse(&MINIMAL.replace("nodes = 2", "nodes = 2\nnodez = 3"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nodez"), "{err}");
    }

    #[test]
    fn bad_receive_mode_lists_valid_ones() {
        let err = parse(&MINIMAL.replace("\"block\"]", "\"spin\"]"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("receive_modes") && err.contains("spin-block:<microseconds>"),
            "{err}"
        );
        let err = parse(&MINIMAL.replace("spin-block:1600", "spin-block:x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("whole microseconds"), "{err}");
    }

    #[test]
    fn agent_parameter_without_agent_is_refused() {
        let text = MINIMAL.replace(
            "name = \"no-agent\"",
            "name = \"no-agent\"\nboost_window_us = 5",
        );
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("configurations[0].boost_window_us"), "{err}");
    }

    #[test]
    fn pingpong_needs_exactly_two_nodes() {
        let err = parse(&MINIMAL.replace("nodes = 2", "nodes = 3"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`nodes`") && err.contains("exactly 2"),
            "{err}"
        );
    }

    #[test]
    fn a_huge_duration_or_timeout_is_refused_not_a_panic() {
        // 1e30 s is finite and positive; as a deadline (`Instant::now() + Duration::from_secs_f64`) it panicked
        // (issue 21, item 9). Both fields are refused by name; a day is the most either may be.
        for (field, text) in [
            ("program.timeout_s", "duration_s = 1.0\ntimeout_s = 1e30"),
            ("program.duration_s", "duration_s = 1e30"),
            ("program.timeout_s", "duration_s = 1.0\ntimeout_s = 86400.5"),
        ] {
            let err = parse(&MINIMAL.replace("duration_s = 1.0", text))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(field) && err.contains("at most 86400"),
                "{err}"
            );
        }
        assert!(
            parse(&MINIMAL.replace("duration_s = 1.0", "duration_s = 1.0\ntimeout_s = 86400"))
                .is_ok()
        );
    }

    #[test]
    fn duration_and_count_are_exclusive() {
        let err = parse(&MINIMAL.replace("duration_s = 1.0", "duration_s = 1.0\ncount = 5"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("either duration_s or count"), "{err}");
    }

    /// MINIMAL with a `[lab]` table holding `lines`.
    fn with_lab(lines: &str) -> String {
        format!("{MINIMAL}[lab]\n{lines}\n")
    }

    #[test]
    fn the_placement_options_default_to_todays_layout() {
        let e = parse(MINIMAL).unwrap();
        assert_eq!(e.lab.competitors_cgroup, CompetitorsCgroup::Job);
        assert_eq!(e.lab.job_session, JobSession::Shared);
        assert!(!e.lab.local_probe);
        let text = e.describe();
        assert!(
            text.contains("competitors in  job: the experiment's cpu cgroup"),
            "{text}"
        );
        assert!(text.contains("job session     shared"), "{text}");
        assert!(text.contains("local probe     off"), "{text}");
        // An empty [lab] table is the same.
        assert_eq!(parse(&with_lab("")).unwrap().lab, e.lab);
    }

    #[test]
    fn the_local_probe_takes_its_arguments_from_the_file_or_says_why_not() {
        let e = parse(&with_lab(
            "local_probe = true\nlocal_probe_args = [\"--mean-interval-ms\", \"500\"]",
        ))
        .unwrap();
        assert_eq!(e.lab.local_probe_args, ["--mean-interval-ms", "500"]);
        assert!(
            e.describe()
                .contains("local probe     on: cosched-local --mean-interval-ms 500 per node CPU"),
            "{}",
            e.describe()
        );
        assert_eq!(
            parse(&with_lab("local_probe = true"))
                .unwrap()
                .lab
                .local_probe_args,
            LOCAL_PROBE_ARGS
        );
        let err = parse(&with_lab("local_probe_args = [\"--seed\", \"2\"]"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("lab.local_probe_args") && err.contains("local_probe = true"),
            "{err}"
        );
        let err = parse(&with_lab(
            "local_probe = true\nlocal_probe_args = [\"--duration-s\", \"9\"]",
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("must not bound the probe"), "{err}");
    }

    #[test]
    fn the_placement_options_parse_and_are_described() {
        let e = parse(&with_lab(
            "cpu_shares = 4096\ncompetitors_cgroup = \"own\"\njob_session = \"own\"\nlocal_probe = true",
        ))
        .unwrap();
        assert_eq!(e.lab.competitors_cgroup, CompetitorsCgroup::Own);
        assert_eq!(e.lab.job_session, JobSession::Own);
        assert!(e.lab.local_probe);
        let text = e.describe();
        assert!(
            text.contains(
                "competitors in  own: on each node cpu cgroups cosched-<run id>/n<i>/{job,competitors}, equal \
                 shares, under the experiment's (cpu.shares=4096)"
            ),
            "{text}"
        );
        assert!(text.contains("job session     own: setsid"), "{text}");
        assert!(
            text.contains(
                "local probe     on: cosched-local --period-ms 1 --min-mb 0 --max-mb 0 --burst-us 0 per node CPU, \
                 cpu cgroup cosched-<run id>-local, cpu.shares=4096"
            ),
            "{text}"
        );
        // The explicit defaults.
        let e = parse(&with_lab(
            "competitors_cgroup = \"job\"\njob_session = \"shared\"\nlocal_probe = false",
        ))
        .unwrap();
        assert_eq!(
            (
                e.lab.competitors_cgroup,
                e.lab.job_session,
                e.lab.local_probe
            ),
            (CompetitorsCgroup::Job, JobSession::Shared, false)
        );
    }

    #[test]
    fn bad_placement_options_are_refused_by_name() {
        let err = parse(&with_lab("competitors_cgroup = \"mine\""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("field `lab.competitors_cgroup`")
                && err.contains("`mine` must be \"job\"")
                && err.contains("or \"own\""),
            "{err}"
        );
        let err = parse(&with_lab("job_session = \"setsid\""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("field `lab.job_session`")
                && err.contains("`setsid` must be \"shared\"")
                && err.contains("or \"own\""),
            "{err}"
        );
        // Values are case-sensitive, like every other name in the file.
        let err = parse(&with_lab("job_session = \"Own\""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("lab.job_session"), "{err}");
        // Wrong types: the parser's error shows the line, field name included.
        let err = parse(&with_lab("local_probe = \"yes\""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("local_probe") && err.contains("boolean"),
            "{err}"
        );
        let err = parse(&with_lab("competitors_cgroup = 1"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("competitors_cgroup"), "{err}");
        // A misspelt option is an unknown field, named.
        let err = parse(&with_lab("local_probes = true"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("local_probes"), "{err}");
    }

    #[test]
    fn every_program_kind_is_read_by_its_name() {
        for kind in ProgramKind::ALL {
            let nodes = kind.max_nodes().unwrap_or(4);
            let mut text = MINIMAL
                .replace(
                    "kind = \"pingpong\"",
                    &format!("kind = \"{}\"", kind.name()),
                )
                .replace("nodes = 2", &format!("nodes = {nodes}"));
            if kind == ProgramKind::Lammps {
                text = text
                    .replace(
                        r#"["spin-only", "spin-block:1600", "block"]"#,
                        r#"["spin-only"]"#,
                    )
                    .replace("duration_s = 1.0", "count = 100");
            }
            let e = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
            assert_eq!(e.program.kind, kind);
            assert!(e
                .describe()
                .contains(&format!("program         {} (", kind.name())));
        }
        // LAMMPS receives only as Open MPI does and runs a number of timesteps: the file must say so.
        let lammps = MINIMAL.replace("kind = \"pingpong\"", "kind = \"lammps\"");
        let err = parse(&lammps).unwrap_err().to_string();
        assert!(
            err.contains("`receive_modes`") && err.contains("[\"spin-only\"]"),
            "{err}"
        );
        let err = parse(&lammps.replace(
            r#"["spin-only", "spin-block:1600", "block"]"#,
            r#"["spin-only"]"#,
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("give count"), "{err}");
        // The seed-003 NAS programs run on any number of nodes from 2.
        for kind in [ProgramKind::Alltoall, ProgramKind::Multigrid] {
            assert_eq!((kind.min_nodes(), kind.max_nodes()), (2, None));
        }
    }

    #[test]
    fn receive_mode_round_trips_through_its_argument_form() {
        for text in ["spin-only", "spin-block:800", "block"] {
            assert_eq!(text.parse::<ReceiveMode>().unwrap().as_arg(), text);
        }
    }
}
