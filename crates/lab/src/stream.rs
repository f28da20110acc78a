//! # A stream of jobs on this machine: space sharing against time sharing (seed 001, scaled down)
//!
//! Seed `001_cc73854eda2a0ea6.txt` (§5, experiment E1) submits a workload of parallel jobs at t = 0 to a
//! 64-CPU machine and compares schedulers by the jobs' response times, as a slowdown against FIFO static space
//! sharing, and by the coefficient of variation (CV) of each application's execution times. This module runs
//! the same comparison for real, scaled to fit this machine (2 CPUs, jobs of 2–4 ranks on loopback, MPL 2):
//!
//! | scheduler | what runs the jobs |
//! |---|---|
//! | `fifo` | `cosched manager` with each job's MPL = ⌈ranks / CPUs⌉: a job gets the whole machine, one at a time, FCFS |
//! | `scs` | `cosched manager --mpl M`: partitions of ⌈ranks / M⌉ CPUs, re-partitioned each quantum (seed 001's CPUM) |
//! | `scs-rr` | `scs` with strict round robin on each CPU (`--in-cpu rr`: a job's ranks at one SCHED_FIFO priority, each runs until it blocks) |
//! | `scs-msg` | `scs-rr`, and the rank with the most unread bytes on its sockets runs first (`--in-cpu msg`, seed 001's Msg) |
//! | `scs-agent` | the same, each job under `cosched run` beside a `cosched agent` (the in-partition choice by messages) |
//! | `time-sharing` | every job started at t = 0, the kernel's fair scheduler alone (the seed's IRIX baseline) |
//! | `time-sharing-agent` | every job at t = 0 under `cosched run` beside a `cosched agent` (coscheduling, no partitions: the seed's CS) |
//!
//! Per job: wait = start − t0, run time = end − start, response = end − t0, all read from the clock by the
//! job's own launcher script (`date +%s.%N` before its first rank starts and after its last one ends), so every
//! scheduler is timed by the same code. Per run: mean response time and makespan (last end − t0). Per
//! scheduler over the repetitions: the mean response time with its 90 % interval, the slowdown
//! `mean response(s, r) / mean response(fifo, r)` paired by repetition r, and per program kind the CV of its
//! run times, `σ / μ` over every instance of every repetition (seed 001 §5.1).
//!
//! Every process of a run (manager, jobs, agent-wrapped jobs; not the short `cosched submit`s) is in one experiment cgroup
//! (cpu, cpuacct, cpuset: [`crate::cgroup::ExperimentCgroup`]) with `cpu_shares` against foreign load; a
//! manager's partitions are cpusets under `cosched-<run id>-scs`, so a killed lab's leftovers are swept like
//! any other run's ([`crate::cleanup`]).

use crate::agent::AgentHandle;
use crate::binaries::Binaries;
use crate::cgroup::ExperimentCgroup;
use crate::experiment::{AgentSettings, ProgramKind};
use crate::process::{ManagedProcess, Placement};
use crate::programs;
use crate::signals;
use anyhow::{bail, Context, Result};
use cosched_manager::incpu::Rule as InCpuRule;
use cosched_policy::spin::ReceiveMode;
use cosched_report::docdata::DocTable;
use cosched_report::stats::mean_ci90;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How a stream's jobs are scheduled (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    Fifo,
    Scs,
    ScsRr,
    ScsMsg,
    ScsAgent,
    TimeSharing,
    TimeSharingAgent,
}

impl Scheduler {
    pub const ALL: [Scheduler; 7] = [
        Scheduler::Fifo,
        Scheduler::Scs,
        Scheduler::ScsRr,
        Scheduler::ScsMsg,
        Scheduler::ScsAgent,
        Scheduler::TimeSharing,
        Scheduler::TimeSharingAgent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Fifo => "fifo",
            Scheduler::Scs => "scs",
            Scheduler::ScsRr => "scs-rr",
            Scheduler::ScsMsg => "scs-msg",
            Scheduler::ScsAgent => "scs-agent",
            Scheduler::TimeSharing => "time-sharing",
            Scheduler::TimeSharingAgent => "time-sharing-agent",
        }
    }

    fn parse(name: &str) -> Option<Scheduler> {
        Scheduler::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether `cosched manager` runs the jobs (else they all start at t = 0).
    pub fn uses_manager(self) -> bool {
        self == Scheduler::Fifo || self.partitions()
    }

    /// Whether jobs share the machine in MPL-sized partitions (every `scs` scheduler).
    pub fn partitions(self) -> bool {
        matches!(
            self,
            Scheduler::Scs | Scheduler::ScsRr | Scheduler::ScsMsg | Scheduler::ScsAgent
        )
    }

    /// The manager's in-CPU rule (`cosched manager --in-cpu`): who runs next on a partition's CPU.
    pub fn in_cpu(self) -> InCpuRule {
        match self {
            Scheduler::ScsRr => InCpuRule::Rr,
            Scheduler::ScsMsg => InCpuRule::Msg,
            _ => InCpuRule::Fair,
        }
    }

    /// Whether its processes take real-time priorities (the agent's boosts, the in-CPU rules' queues), so the
    /// experiment cgroup needs `cpu.rt_runtime_us`.
    pub fn uses_realtime(self) -> bool {
        self.uses_agent() || self.in_cpu() != InCpuRule::Fair
    }

    pub fn uses_agent(self) -> bool {
        matches!(self, Scheduler::ScsAgent | Scheduler::TimeSharingAgent)
    }
}

/// One kind of job in the stream, `copies` times.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamJob {
    pub kind: ProgramKind,
    pub ranks: u32,
    /// Units of work (round trips, iterations; LAMMPS: timesteps).
    pub count: u64,
    /// Receive mode of our programs (`None` for LAMMPS, whose MPI library decides).
    pub receive: Option<ReceiveMode>,
    pub copies: u32,
    pub extra_args: Vec<String>,
}

/// A stream experiment file, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamExperiment {
    pub name: String,
    pub description: String,
    pub repetitions: u32,
    pub schedulers: Vec<Scheduler>,
    /// The multiprogramming level of the `scs` schedulers.
    pub mpl: u32,
    pub quantum_ms: u64,
    /// Longest a whole stream may take before the run is stopped as failed.
    pub timeout_s: f64,
    pub cpu_shares: u64,
    pub rt_runtime_us: u64,
    /// Extra `cosched agent` arguments for the agent schedulers.
    pub agent_args: Vec<String>,
    /// Extra `cosched manager` arguments for fifo and the scs schedulers (e.g. `--no-pin-ranks`).
    pub manager_args: Vec<String>,
    pub jobs: Vec<StreamJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTop {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default = "default_repetitions")]
    repetitions: u32,
    schedulers: Vec<String>,
    stream: FileStream,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStream {
    #[serde(default = "default_mpl")]
    mpl: u32,
    #[serde(default = "default_quantum_ms")]
    quantum_ms: u64,
    #[serde(default = "default_timeout_s")]
    timeout_s: f64,
    #[serde(default = "default_stream_cpu_shares")]
    cpu_shares: u64,
    #[serde(default = "default_rt_runtime_us")]
    rt_runtime_us: u64,
    #[serde(default)]
    agent_args: Vec<String>,
    #[serde(default)]
    manager_args: Vec<String>,
    job: Vec<FileJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJob {
    kind: ProgramKind,
    #[serde(default = "default_ranks")]
    ranks: u32,
    count: u64,
    recv: Option<String>,
    #[serde(default = "default_copies")]
    copies: u32,
    #[serde(default)]
    args: Vec<String>,
}

fn default_repetitions() -> u32 {
    3
}
fn default_mpl() -> u32 {
    2
}
fn default_quantum_ms() -> u64 {
    100
}
fn default_timeout_s() -> f64 {
    600.0
}
/// Against foreign load, but low enough that the lab (in the root cgroup) still gets ~10 % of a CPU beside
/// a spinning stream, to notice ends and to clean up.
fn default_stream_cpu_shares() -> u64 {
    8192
}
fn default_rt_runtime_us() -> u64 {
    900_000
}
fn default_ranks() -> u32 {
    2
}
fn default_copies() -> u32 {
    1
}

/// Whether an experiment file is a stream experiment (it has a `[stream]` table); `cosched lab` then runs it
/// with this module.
pub fn is_stream_file(text: &str) -> bool {
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.get("stream").is_some_and(toml::Value::is_table))
}

impl StreamExperiment {
    pub fn load(path: &Path) -> Result<StreamExperiment> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading experiment file {}", path.display()))?;
        StreamExperiment::parse(&text, path)
    }

    /// Parse and check a stream file; every error names the file and the field.
    pub fn parse(text: &str, path: &Path) -> Result<StreamExperiment> {
        let file = path.display();
        let top: FileTop = toml::from_str(text)
            .with_context(|| format!("{file}: not a valid stream experiment"))?;
        let field = |name: &str, problem: String| anyhow::anyhow!("{file}: {name}: {problem}");
        if top.name.is_empty()
            || !top
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(field(
                "name",
                format!("{:?} must be lower-case letters, digits and `-`", top.name),
            ));
        }
        if !(1..=100).contains(&top.repetitions) {
            return Err(field(
                "repetitions",
                format!("{} is not in 1..=100", top.repetitions),
            ));
        }
        let mut schedulers = Vec::new();
        for name in &top.schedulers {
            let s = Scheduler::parse(name).ok_or_else(|| {
                let known: Vec<&str> = Scheduler::ALL.iter().map(|s| s.name()).collect();
                field(
                    "schedulers",
                    format!("unknown scheduler {name:?}; known: {}", known.join(", ")),
                )
            })?;
            if schedulers.contains(&s) {
                return Err(field("schedulers", format!("{name:?} is listed twice")));
            }
            schedulers.push(s);
        }
        if schedulers.is_empty() {
            return Err(field("schedulers", "no scheduler given".into()));
        }
        let s = top.stream;
        if !(1..=64).contains(&s.mpl) {
            return Err(field("stream.mpl", format!("{} is not in 1..=64", s.mpl)));
        }
        if !(1..=10_000).contains(&s.quantum_ms) {
            return Err(field(
                "stream.quantum_ms",
                format!("{} ms is not in 1..=10000", s.quantum_ms),
            ));
        }
        if !(s.timeout_s.is_finite() && s.timeout_s > 0.0 && s.timeout_s <= 86_400.0) {
            return Err(field(
                "stream.timeout_s",
                format!("{} s is not in (0, 86400]", s.timeout_s),
            ));
        }
        if !(2..=262_144).contains(&s.cpu_shares) {
            return Err(field(
                "stream.cpu_shares",
                format!("{} is not in 2..=262144", s.cpu_shares),
            ));
        }
        if s.rt_runtime_us > 1_000_000 {
            return Err(field(
                "stream.rt_runtime_us",
                format!("{} µs is more than a second per second", s.rt_runtime_us),
            ));
        }
        if s.job.is_empty() {
            return Err(field("stream.job", "no job given ([[stream.job]])".into()));
        }
        let mut jobs = Vec::new();
        for (i, j) in s.job.into_iter().enumerate() {
            let at = |name: &str| format!("stream.job[{i}].{name}");
            if !matches!(
                j.kind,
                ProgramKind::Pingpong
                    | ProgramKind::Barrier
                    | ProgramKind::Stencil
                    | ProgramKind::Masterslave
                    | ProgramKind::Alltoall
                    | ProgramKind::Multigrid
                    | ProgramKind::Lammps
            ) {
                return Err(field(
                    &at("kind"),
                    format!(
                        "{} cannot run in a stream (it needs the emulated cluster)",
                        j.kind.name()
                    ),
                ));
            }
            let max = j.kind.max_nodes().unwrap_or(64).min(64);
            if j.ranks < j.kind.min_nodes() || j.ranks > max {
                return Err(field(
                    &at("ranks"),
                    format!(
                        "{} ranks: {} takes {}..={max}",
                        j.ranks,
                        j.kind.name(),
                        j.kind.min_nodes()
                    ),
                ));
            }
            if !(1..=1_000_000_000).contains(&j.count) {
                return Err(field(
                    &at("count"),
                    format!("{} is not in 1..=1000000000", j.count),
                ));
            }
            if !(1..=64).contains(&j.copies) {
                return Err(field(
                    &at("copies"),
                    format!("{} is not in 1..=64", j.copies),
                ));
            }
            let receive = match (j.kind, j.recv) {
                (ProgramKind::Lammps, Some(_)) => {
                    return Err(field(
                        &at("recv"),
                        "LAMMPS's receive mode is its MPI library's; leave recv out".into(),
                    ))
                }
                (ProgramKind::Lammps, None) => None,
                (_, None) => Some(ReceiveMode::spin_block_default()),
                (_, Some(r)) => Some(
                    r.parse::<ReceiveMode>()
                        .map_err(|e| field(&at("recv"), e.to_string()))?,
                ),
            };
            jobs.push(StreamJob {
                kind: j.kind,
                ranks: j.ranks,
                count: j.count,
                receive,
                copies: j.copies,
                extra_args: j.args,
            });
        }
        Ok(StreamExperiment {
            name: top.name,
            description: top.description,
            repetitions: top.repetitions,
            schedulers,
            mpl: s.mpl,
            quantum_ms: s.quantum_ms,
            timeout_s: s.timeout_s,
            cpu_shares: s.cpu_shares,
            rt_runtime_us: s.rt_runtime_us,
            agent_args: s.agent_args,
            manager_args: s.manager_args,
            jobs,
        })
    }

    /// The stream's job instances in submission order: the copies interleaved round by round (copy 1 of every
    /// job in file order, then copy 2, ...), so no kind waits behind all copies of another.
    pub fn instances(&self) -> Vec<&StreamJob> {
        let rounds = self.jobs.iter().map(|j| j.copies).max().unwrap_or(0);
        (0..rounds)
            .flat_map(|round| self.jobs.iter().filter(move |j| j.copies > round))
            .collect()
    }

    pub fn total_runs(&self) -> usize {
        self.schedulers.len() * self.repetitions as usize
    }

    /// Every job fits the machine under every scheduler listed: ⌈ranks / MPL⌉ ≤ CPUs for `scs`.
    pub fn check_fits(&self, cpus: u32) -> Result<()> {
        if self.schedulers.iter().any(|s| s.partitions()) {
            for j in &self.jobs {
                let initial = j.ranks.div_ceil(self.mpl);
                if initial > cpus {
                    bail!(
                        "a {} job of {} ranks needs {initial} CPUs at MPL {} (⌈{} / {}⌉), but this machine has {cpus}: \
                         raise stream.mpl or lower its ranks",
                        j.kind.name(),
                        j.ranks,
                        self.mpl,
                        j.ranks,
                        self.mpl
                    );
                }
            }
        }
        Ok(())
    }

    /// The resolved configuration, for the start of the output.
    pub fn describe(&self, cpus: u32) -> String {
        let mut out = format!("experiment      {} (job stream)\n", self.name);
        if !self.description.is_empty() {
            out += &format!("description     {}\n", self.description);
        }
        let names: Vec<&str> = self.schedulers.iter().map(|s| s.name()).collect();
        out += &format!("schedulers      {}\n", names.join(", "));
        out += &format!(
            "machine         {cpus} CPUs; scs at MPL {}, CPU manager quantum {} ms{}\n",
            self.mpl,
            self.quantum_ms,
            if self.manager_args.is_empty() {
                String::new()
            } else {
                format!(", manager {}", self.manager_args.join(" "))
            }
        );
        for j in &self.jobs {
            let recv = j
                .receive
                .as_ref()
                .map_or("its MPI's".into(), ReceiveMode::as_arg);
            out += &format!(
                "job             {} × {}: {} ranks, count {}, receive {recv}\n",
                j.copies,
                j.kind.name(),
                j.ranks,
                j.count
            );
        }
        out += &format!(
            "runs            {} schedulers × {} repetitions = {}, each stream stopped after {} s\n",
            self.schedulers.len(),
            self.repetitions,
            self.total_runs(),
            self.timeout_s
        );
        out
    }
}

/// One job of one run, as its launcher timed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobTimes {
    pub index: usize,
    pub kind: String,
    pub ranks: u32,
    /// Seconds since t0 (the stream's submission).
    pub start_s: f64,
    pub end_s: f64,
    pub exit_code: i32,
    /// Under `scs-rr` / `scs-msg`: the manager's watchdog ended the in-CPU rule for this job (a rank ran
    /// `--in-cpu-max-run-ms` without blocking) and the fair scheduler ran it from then on.
    #[serde(default)]
    pub left_to_fair: bool,
}

impl JobTimes {
    pub fn wait_s(&self) -> f64 {
        self.start_s
    }
    pub fn run_s(&self) -> f64 {
        self.end_s - self.start_s
    }
    pub fn response_s(&self) -> f64 {
        self.end_s
    }
}

/// One run: one scheduler, one repetition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamRun {
    pub scheduler: Scheduler,
    pub repetition: u32,
    pub jobs: Vec<JobTimes>,
    /// The agent's CPU time over the run, seconds (agent schedulers).
    pub agent_cpu_s: Option<f64>,
    /// The manager's CPU time over the run, seconds (its threads; schedulers that use it).
    #[serde(default)]
    pub manager_cpu_s: Option<f64>,
    /// The manager's log lines about its in-CPU rule (which job it ended, and why).
    #[serde(default)]
    pub in_cpu_log: Vec<String>,
}

impl StreamRun {
    pub fn mean_response_s(&self) -> f64 {
        self.jobs.iter().map(JobTimes::response_s).sum::<f64>() / self.jobs.len().max(1) as f64
    }
    pub fn makespan_s(&self) -> f64 {
        self.jobs.iter().map(|j| j.end_s).fold(0.0, f64::max)
    }
    pub fn mean_wait_s(&self) -> f64 {
        self.jobs.iter().map(JobTimes::wait_s).sum::<f64>() / self.jobs.len().max(1) as f64
    }
}

/// The ids of the jobs whose in-CPU rule the manager ended, from its log (`job N: in-CPU rule rr ended, …`).
pub fn in_cpu_ended(manager_log: &str) -> Vec<i64> {
    manager_log
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("cosched manager: job ")?;
            let (id, tail) = rest.split_once(':')?;
            tail.trim_start()
                .starts_with("in-CPU rule")
                .then(|| id.parse().ok())
                .flatten()
        })
        .collect()
}

/// `σ / μ` of `values` (population σ, as a CV of observed times); `None` for fewer than two values.
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean > 0.0).then(|| var.sqrt() / mean)
}

/// The comparison: one row per scheduler (the experiment's order).
pub fn comparison(experiment: &StreamExperiment, runs: &[StreamRun]) -> DocTable {
    let mut table = DocTable::new(
        &format!("lab-{}", experiment.name),
        [
            "scheduler",
            "runs",
            "mean response s (90% CI)",
            "× fifo (paired)",
            "makespan s",
            "mean wait s",
            "run time s by kind (CV)",
            "left to fair (in-CPU)",
            "manager CPU %",
            "agent CPU %",
        ],
    )
    .with_notes(
        "Seed 001's E1 on this machine: every job submitted at t0; response = end − t0, wait = start − t0, run time = \
         end − start, as each job's launcher timed them. × fifo: each repetition's mean response over fifo's in the same \
         repetition, then the mean of those ratios. CV: σ/μ of a kind's run times over all its instances and repetitions. \
         Left to fair: under scs-rr / scs-msg, a kind's jobs whose in-CPU rule the manager ended because a rank ran \
         50 ms without blocking, of all its jobs. Manager, agent CPU: its CPU time over the makespan, % of one CPU.",
    );
    let fifo: BTreeMap<u32, f64> = runs
        .iter()
        .filter(|r| r.scheduler == Scheduler::Fifo)
        .map(|r| (r.repetition, r.mean_response_s()))
        .collect();
    for &s in &experiment.schedulers {
        let mine: Vec<&StreamRun> = runs.iter().filter(|r| r.scheduler == s).collect();
        if mine.is_empty() {
            continue;
        }
        let responses: Vec<f64> = mine.iter().map(|r| r.mean_response_s()).collect();
        let ratios: Vec<f64> = mine
            .iter()
            .filter_map(|r| fifo.get(&r.repetition).map(|f| r.mean_response_s() / f))
            .collect();
        let estimate = |v: &[f64]| mean_ci90(v).map_or("-".to_string(), |e| e.display(2));
        let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let mut kinds: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &mine {
            for j in &r.jobs {
                kinds.entry(j.kind.clone()).or_default().push(j.run_s());
            }
        }
        let by_kind: Vec<String> = kinds
            .iter()
            .map(|(k, v)| {
                let cv = coefficient_of_variation(v).map_or("-".into(), |c| format!("{c:.2}"));
                format!("{k} {:.2} ({cv})", mean(v.clone()))
            })
            .collect();
        table.push(vec![
            s.name().to_string(),
            mine.len().to_string(),
            estimate(&responses),
            if ratios.is_empty() {
                "-".into()
            } else {
                estimate(&ratios)
            },
            format!("{:.2}", mean(mine.iter().map(|r| r.makespan_s()).collect())),
            format!(
                "{:.2}",
                mean(mine.iter().map(|r| r.mean_wait_s()).collect())
            ),
            by_kind.join("; "),
            if s.in_cpu() == InCpuRule::Fair {
                "-".into()
            } else {
                let mut left: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
                for j in mine.iter().flat_map(|r| &r.jobs) {
                    let e = left.entry(j.kind.as_str()).or_default();
                    e.0 += usize::from(j.left_to_fair);
                    e.1 += 1;
                }
                let named: Vec<String> = left
                    .iter()
                    .filter(|(_, (l, _))| *l > 0)
                    .map(|(k, (l, n))| format!("{k} {l}/{n}"))
                    .collect();
                if named.is_empty() {
                    "none".into()
                } else {
                    named.join("; ")
                }
            },
            cpu_share(&mine, |r| r.manager_cpu_s),
            cpu_share(&mine, |r| r.agent_cpu_s),
        ]);
    }
    table
}

/// The mean over `runs` of a process's CPU time (`cpu_s` of a run) over the run's makespan, % of one CPU;
/// `-` where no run has it.
fn cpu_share(runs: &[&StreamRun], cpu_s: impl Fn(&StreamRun) -> Option<f64>) -> String {
    let shares: Vec<f64> = runs
        .iter()
        .filter_map(|r| cpu_s(r).map(|cpu| 100.0 * cpu / r.makespan_s().max(1e-9)))
        .collect();
    if shares.is_empty() {
        "-".into()
    } else {
        format!("{:.1}", shares.iter().sum::<f64>() / shares.len() as f64)
    }
}

/// `text` as one single-quoted shell word.
fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The launcher of one job instance: its ranks started (rank 0 last, in the foreground), its times and status
/// written into `dir` (`job<i>.start`, `.end`, `.status`; rank 0's stdout in `job<i>.out`).
pub fn job_script(index: usize, dir: &Path, ranks: &[Vec<String>]) -> String {
    let d = shell_word(&dir.display().to_string());
    let line = |argv: &Vec<String>| {
        argv.iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut s = format!(
        "#!/bin/sh\n# cosched lab stream: job {index}, {} rank process(es)\nd={d}\ndate +%s.%N > \"$d/job{index}.start\"\npids=\n",
        ranks.len()
    );
    for (r, argv) in ranks.iter().enumerate().skip(1) {
        s += &format!(
            "{} > /dev/null 2> \"$d/job{index}.rank{r}.err\" &\npids=\"$pids $!\"\n",
            line(argv)
        );
    }
    if let Some(root) = ranks.first() {
        s += &format!(
            "{} > \"$d/job{index}.out\" 2> \"$d/job{index}.rank0.err\"\nstatus=$?\n",
            line(root)
        );
    }
    s += &format!(
        "for p in $pids; do wait $p || {{ s=$?; [ $status -eq 0 ] && status=$s; }}; done\n\
         date +%s.%N > \"$d/job{index}.end\"\necho $status > \"$d/job{index}.status\"\nexit $status\n"
    );
    s
}

/// A free TCP port on loopback for a job's rank 0 (bound and released: a later bind by rank 0 may, rarely,
/// lose it to another program, which then fails that job with a clear error).
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// The rank command lines of one instance of `job` (rank 0 first).
fn rank_commands(
    job: &StreamJob,
    index: usize,
    dir: &Path,
    binaries: &Binaries,
) -> Result<Vec<Vec<String>>> {
    if job.kind == ProgramKind::Lammps {
        let example = std::fs::read_to_string(programs::LAMMPS_EXAMPLE)
            .with_context(|| format!("reading LAMMPS's example {}", programs::LAMMPS_EXAMPLE))?;
        let deck = dir.join(format!("job{index}.in"));
        std::fs::write(&deck, programs::lammps_deck(&example, job.count)?)
            .with_context(|| format!("writing {}", deck.display()))?;
        // One mpirun starts every rank on this machine; --oversubscribe because a partition may hold fewer
        // CPUs than ranks (Open MPI then yields while it polls), --bind-to none because partitions change.
        let mut argv: Vec<String> = [
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-np",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        argv.push(job.ranks.to_string());
        argv.extend([
            programs::LAMMPS_BINARY.to_string(),
            "-in".into(),
            deck.display().to_string(),
            "-log".into(),
            "none".into(),
        ]);
        argv.extend(job.extra_args.iter().cloned());
        return Ok(vec![argv]);
    }
    let (program, prefix) = binaries.bench_invocation(programs::program_binary(job.kind));
    let root = format!("127.0.0.1:{}", free_port()?);
    let receive = job
        .receive
        .as_ref()
        .map_or(String::new(), ReceiveMode::as_arg);
    Ok((0..job.ranks)
        .map(|rank| {
            let mut argv = vec![program.display().to_string()];
            argv.extend(prefix.iter().cloned());
            argv.extend([
                "--rank".into(),
                rank.to_string(),
                "--ranks".into(),
                job.ranks.to_string(),
            ]);
            argv.extend(if rank == 0 {
                ["--listen".to_string(), root.clone()]
            } else {
                ["--connect".to_string(), root.clone()]
            });
            argv.extend([
                "--recv".into(),
                receive.clone(),
                "--count".into(),
                job.count.to_string(),
            ]);
            argv.extend(job.extra_args.iter().cloned());
            argv
        })
        .collect())
}

/// The manager's cpuset parent of a run (`cpuset/cosched-<run id>-scs`): on any exit path, what is still in its
/// partitions is killed and the cgroups removed (`cosched manager --cleanup` has done it on the way that works).
struct ManagerCgroups(PathBuf);

impl Drop for ManagerCgroups {
    fn drop(&mut self) {
        if self.0.exists() {
            if let Err(e) = crate::cluster::empty_and_remove(&self.0) {
                eprintln!("cosched lab: cleanup of {}: {e:#}", self.0.display());
            }
        }
    }
}

/// The run's private directory (scripts, decks, times, the manager's database); removed on drop.
struct RunDir(PathBuf);

impl RunDir {
    fn create(run_id: &str) -> Result<RunDir> {
        use std::os::unix::fs::DirBuilderExt;
        let path = std::env::temp_dir().join(format!("cosched-{run_id}-stream"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        Ok(RunDir(path))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn read_number(path: &Path) -> Result<f64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{}: {:?} is not a number", path.display(), text.trim()))
}

/// The longest the lab waits for a submission or for a new manager to hold its lock.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// One run of the whole stream under `scheduler`.
pub fn run_once(
    experiment: &StreamExperiment,
    scheduler: Scheduler,
    repetition: u32,
    binaries: &Binaries,
    cpus: &[u32],
) -> Result<StreamRun> {
    let run_id = crate::cluster::new_run_id();
    let dir = RunDir::create(&run_id)?;
    let cgroup = ExperimentCgroup::create(
        &run_id,
        cpus,
        experiment.cpu_shares,
        if scheduler.uses_realtime() {
            experiment.rt_runtime_us
        } else {
            0
        },
        false,
        false,
    )?;
    let placed = |death_signal: Option<i32>| -> Result<Placement> {
        let p = Placement::default()
            .cgroup(&cgroup.cpu_dir)?
            .cgroup(&cgroup.cpuacct_dir)?
            .cgroup(&cgroup.cpuset_dir)?;
        Ok(match death_signal {
            Some(s) => p.death_signal(s),
            None => p,
        })
    };
    let agent = if scheduler.uses_agent() {
        let settings = AgentSettings {
            extra_args: experiment.agent_args.clone(),
            ..AgentSettings::default()
        };
        Some(AgentHandle::start(&binaries.cosched, &settings, &run_id)?)
    } else {
        None
    };
    let agent_cpu_before = agent.as_ref().map(|a| a.cpu_s()).transpose()?;
    let instances = experiment.instances();
    let mut argvs = Vec::new();
    for (i, job) in instances.iter().enumerate() {
        let script = dir.0.join(format!("job{i}.sh"));
        let ranks = rank_commands(job, i, &dir.0, binaries)?;
        std::fs::write(&script, job_script(i, &dir.0, &ranks))
            .with_context(|| format!("writing {}", script.display()))?;
        let mut argv: Vec<String> = Vec::new();
        if let Some(agent) = &agent {
            let wrapped = agent.wrap_job(
                &format!("job{i}"),
                Path::new("/bin/sh"),
                &[script.display().to_string()],
            );
            argv.push(wrapped.get_program().to_string_lossy().into_owned());
            argv.extend(wrapped.get_args().map(|a| a.to_string_lossy().into_owned()));
        } else {
            argv.extend(["/bin/sh".to_string(), script.display().to_string()]);
        }
        argvs.push(argv);
    }
    let deadline = |t0: Instant| t0 + Duration::from_secs_f64(experiment.timeout_s);
    let t0_clock;
    // Instances (by index) whose in-CPU rule the manager's watchdog ended.
    let mut left_to_fair: Vec<usize> = Vec::new();
    let mut manager_cpu_s = None;
    let mut in_cpu_log = Vec::new();
    if scheduler.uses_manager() {
        let db = dir.0.join("scs.db");
        let parent = format!("cosched-{run_id}-scs");
        let _partitions = ManagerCgroups(
            Path::new(crate::cgroup::CGROUP_ROOT)
                .join("cpuset")
                .join(&parent),
        );
        let mut manager_cmd = Command::new(&binaries.cosched);
        manager_cmd
            .args(["manager", "--db"])
            .arg(&db)
            .args(["--mpl", &experiment.mpl.to_string()])
            .args(["--quantum-ms", &experiment.quantum_ms.to_string()])
            .args(["--cgroup-parent", &parent])
            .args(["--in-cpu", scheduler.in_cpu().name()])
            .args(&experiment.manager_args);
        let mut manager =
            ManagedProcess::spawn("manager", manager_cmd, &placed(Some(libc::SIGTERM))?)?;
        let started = Instant::now();
        while !cosched_manager::daemon::manager_running(&db) {
            signals::check()?;
            if let Some(exit) = manager.try_reap()? {
                bail!("`cosched manager` ended at start: {}", exit.describe());
            }
            if started.elapsed() > STEP_TIMEOUT {
                bail!("`cosched manager` did not take its database's lock within {STEP_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let t0 = Instant::now();
        t0_clock = unix_now();
        let cpu_count = cpus.len() as u32;
        for (i, (job, argv)) in instances.iter().zip(&argvs).enumerate() {
            // fifo: a job gets the whole machine (its MPL makes ⌈ranks / MPL⌉ = min(ranks, CPUs) CPUs).
            let mpl = match scheduler {
                Scheduler::Fifo => job.ranks.div_ceil(cpu_count).max(1),
                _ => experiment.mpl,
            };
            let mut submit = Command::new(&binaries.cosched);
            submit
                .args(["submit", "--db"])
                .arg(&db)
                .args(["--procs", &job.ranks.to_string(), "--mpl", &mpl.to_string()])
                .args([
                    "--name",
                    &format!("job{i}-{}", job.kind.name()),
                    "--as-root",
                    "--",
                ])
                .args(argv);
            // Not placed in the experiment's cgroups: each cgroup v1 attach waits for an RCU grace period, which
            // would space the submissions ~60 ms apart instead of ~35 ms (the queue's fsync).
            let exit =
                ManagedProcess::spawn(format!("submit job{i}"), submit, &Placement::default())?
                    .wait(STEP_TIMEOUT)?;
            if !exit.success() {
                bail!("`cosched submit` of job {i} failed: {}", exit.describe());
            }
        }
        loop {
            signals::check()?;
            let jobs = cosched_manager::db::Db::open(&db)?.jobs(None)?;
            if jobs.len() == instances.len() && jobs.iter().all(|j| j.state.is_final()) {
                if let Some(j) = jobs.iter().find(|j| j.state.as_str() != "done") {
                    bail!(
                        "job {} ended {} under the manager: {}",
                        j.name,
                        j.state.as_str(),
                        j.note.clone().unwrap_or_default()
                    );
                }
                break;
            }
            if let Some(exit) = manager.try_reap()? {
                bail!(
                    "`cosched manager` ended during the stream: {}",
                    exit.describe()
                );
            }
            if Instant::now() > deadline(t0) {
                bail!(
                    "the stream under {} did not finish within {} s (stream.timeout_s)",
                    scheduler.name(),
                    experiment.timeout_s
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        manager_cpu_s = crate::process::cpu_time_s(manager.pid()).ok();
        let exit = manager.terminate(Duration::from_secs(5))?;
        if exit.signal.is_some_and(|s| s != libc::SIGTERM) || exit.code.is_some_and(|c| c != 0) {
            bail!(
                "`cosched manager` did not stop cleanly: {}",
                exit.describe()
            );
        }
        let names: BTreeMap<i64, String> = cosched_manager::db::Db::open(&db)?
            .jobs(None)?
            .into_iter()
            .map(|j| (j.id, j.name))
            .collect();
        in_cpu_log = exit
            .stderr
            .lines()
            .filter(|l| l.contains("in-CPU rule"))
            .map(str::to_string)
            .collect();
        for id in in_cpu_ended(&exit.stderr) {
            let index: Option<usize> = names
                .get(&id)
                .and_then(|n| n.strip_prefix("job")?.split('-').next()?.parse().ok());
            left_to_fair.extend(index);
        }
        let cleanup = Command::new(&binaries.cosched)
            .args(["manager", "--cleanup", "--db"])
            .arg(&db)
            .args(["--cgroup-parent", &parent])
            .output()
            .context("running `cosched manager --cleanup`")?;
        if !cleanup.status.success() {
            bail!(
                "`cosched manager --cleanup` failed: {}",
                String::from_utf8_lossy(&cleanup.stderr).trim()
            );
        }
    } else {
        let placement = placed(None)?;
        let t0 = Instant::now();
        t0_clock = unix_now();
        let mut running = Vec::new();
        for (i, argv) in argvs.iter().enumerate() {
            let mut command = Command::new(&argv[0]);
            command.args(&argv[1..]);
            let process = ManagedProcess::spawn(format!("job{i}"), command, &placement)?;
            let guard = signals::KillFirst::register(process.pid());
            running.push((guard, process));
        }
        for (i, (_guard, process)) in running.iter_mut().enumerate() {
            let left = deadline(t0).saturating_duration_since(Instant::now());
            let exit = process.wait(left.max(Duration::from_millis(1)))?;
            if !exit.success() {
                bail!(
                    "job {i} under {} failed: {}",
                    scheduler.name(),
                    exit.describe()
                );
            }
        }
    }
    let agent_cpu_s = match (&agent, agent_cpu_before) {
        (Some(a), Some(before)) => Some(a.cpu_s()? - before),
        _ => None,
    };
    if let Some(agent) = agent {
        agent.stop()?;
    }
    let mut jobs = Vec::new();
    for (i, job) in instances.iter().enumerate() {
        let at = |suffix: &str| dir.0.join(format!("job{i}.{suffix}"));
        let exit_code = read_number(&at("status"))? as i32;
        if exit_code != 0 {
            let err = std::fs::read_to_string(at("rank0.err")).unwrap_or_default();
            bail!(
                "job {i} ({}) exited {exit_code}: {}",
                job.kind.name(),
                err.trim()
            );
        }
        let out = std::fs::read_to_string(at("out")).unwrap_or_default();
        programs::read_job_result(job.kind, &out)
            .with_context(|| format!("job {i} ({}): its result", job.kind.name()))?;
        jobs.push(JobTimes {
            index: i,
            kind: job.kind.name().to_string(),
            ranks: job.ranks,
            start_s: read_number(&at("start"))? - t0_clock,
            end_s: read_number(&at("end"))? - t0_clock,
            exit_code,
            left_to_fair: left_to_fair.contains(&i),
        });
    }
    drop(cgroup);
    Ok(StreamRun {
        scheduler,
        repetition,
        jobs,
        agent_cpu_s,
        manager_cpu_s,
        in_cpu_log,
    })
}

/// Every run of the experiment, schedulers interleaved within each repetition (so slow drift of the machine
/// touches every scheduler alike); `progress` is told after each run.
pub fn run_experiment(
    experiment: &StreamExperiment,
    binaries: &Binaries,
    cpus: &[u32],
    mut progress: impl FnMut(&StreamRun),
) -> Result<Vec<StreamRun>> {
    signals::install().context("installing the SIGINT/SIGTERM handler")?;
    crate::cleanup::spawn_reaper(&binaries.cosched)?;
    let mut runs = Vec::new();
    for repetition in 1..=experiment.repetitions {
        for &scheduler in &experiment.schedulers {
            let run = run_once(experiment, scheduler, repetition, binaries, cpus)
                .with_context(|| format!("{} repetition {repetition}", scheduler.name()))?;
            progress(&run);
            runs.push(run);
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "scs-test"
schedulers = ["fifo", "scs", "time-sharing"]
[stream]
[[stream.job]]
kind = "pingpong"
count = 100
copies = 2
[[stream.job]]
kind = "lammps"
count = 50
"#;

    fn parse(text: &str) -> Result<StreamExperiment> {
        StreamExperiment::parse(text, Path::new("s.toml"))
    }

    #[test]
    fn a_stream_file_is_recognised_by_its_stream_table() {
        assert!(is_stream_file(MINIMAL));
        assert!(!is_stream_file(
            "name = \"x\"\n[program]\nkind = \"pingpong\"\n"
        ));
        assert!(!is_stream_file("stream = 3\n"));
    }

    #[test]
    fn defaults_and_the_interleaved_submission_order() {
        let e = parse(MINIMAL).unwrap();
        assert_eq!(e.repetitions, 3);
        assert_eq!(e.mpl, 2);
        assert_eq!(e.quantum_ms, 100);
        assert_eq!(e.jobs[0].ranks, 2);
        assert_eq!(e.jobs[0].receive, Some(ReceiveMode::spin_block_default()));
        assert_eq!(e.jobs[1].receive, None);
        assert!(e.manager_args.is_empty() && e.agent_args.is_empty());
        let e =
            parse(&MINIMAL.replace("[stream]", "[stream]\nmanager_args = [\"--no-pin-ranks\"]"))
                .unwrap();
        assert_eq!(e.manager_args, ["--no-pin-ranks"]);
        assert!(
            e.describe(2).contains("manager --no-pin-ranks"),
            "{}",
            e.describe(2)
        );
        let kinds: Vec<ProgramKind> = e.instances().iter().map(|j| j.kind).collect();
        assert_eq!(
            kinds,
            [
                ProgramKind::Pingpong,
                ProgramKind::Lammps,
                ProgramKind::Pingpong
            ]
        );
        assert_eq!(e.total_runs(), 9);
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        for (edit, named) in [
            (
                MINIMAL.replace("\"scs\",", "\"gang\","),
                "unknown scheduler \"gang\"",
            ),
            (MINIMAL.replace("\"scs\",", "\"fifo\","), "listed twice"),
            (
                MINIMAL.replace("[stream]", "[stream]\nmpl = 0"),
                "stream.mpl",
            ),
            (
                MINIMAL.replace("[stream]", "[stream]\nquantum_ms = 0"),
                "stream.quantum_ms",
            ),
            (
                MINIMAL.replace("[stream]", "[stream]\ntimeout_s = -1.0"),
                "stream.timeout_s",
            ),
            (
                MINIMAL.replace("[stream]", "[stream]\ncpu_shares = 1"),
                "stream.cpu_shares",
            ),
            (
                MINIMAL.replace("count = 100", "count = 0"),
                "stream.job[0].count",
            ),
            (
                MINIMAL.replace("copies = 2", "copies = 0"),
                "stream.job[0].copies",
            ),
            (
                MINIMAL.replace("count = 100", "count = 100\nranks = 3"),
                "stream.job[0].ranks",
            ),
            (
                MINIMAL.replace("count = 100", "count = 100\nrecv = \"nap\""),
                "stream.job[0].recv",
            ),
            (
                MINIMAL.replace("count = 50", "count = 50\nrecv = \"block\""),
                "stream.job[1].recv",
            ),
            (
                MINIMAL.replace("kind = \"lammps\"", "kind = \"mpi-pingpong\""),
                "stream.job[1].kind",
            ),
            (
                MINIMAL.replace("name = \"scs-test\"", "name = \"A b\""),
                "name",
            ),
            (
                MINIMAL.replace("copies = 2", "copies = 2\nspeed = 1"),
                "speed",
            ),
        ] {
            let err = format!("{:#}", parse(&edit).unwrap_err());
            assert!(err.contains(named), "{named}: {err}");
            assert!(err.contains("s.toml"), "the file is named: {err}");
        }
    }

    #[test]
    fn a_job_too_wide_for_the_machine_at_the_mpl_is_refused_with_the_arithmetic() {
        let e = parse(
            &MINIMAL
                .replace("count = 100", "count = 100\nranks = 2")
                .replace("[stream]", "[stream]\nmpl = 1"),
        )
        .unwrap();
        let err = e.check_fits(1).unwrap_err().to_string();
        assert!(err.contains("needs 2 CPUs at MPL 1"), "{err}");
        assert!(e.check_fits(2).is_ok());
    }

    #[test]
    fn the_launcher_starts_every_rank_and_records_times_and_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let ranks = vec![
            vec!["sh".to_string(), "-c".into(), "echo root; exit 0".into()],
            vec!["sh".to_string(), "-c".into(), "exit 3".into()],
            vec!["sh".to_string(), "-c".into(), "exit 0".into()],
        ];
        let script = job_script(7, dir.path(), &ranks);
        let status = Command::new("/bin/sh")
            .arg("-c")
            .arg(&script)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3), "a failing rank fails the job");
        let read = |s: &str| std::fs::read_to_string(dir.path().join(format!("job7.{s}"))).unwrap();
        assert_eq!(read("out"), "root\n");
        assert_eq!(read("status").trim(), "3");
        let (start, end): (f64, f64) = (
            read("start").trim().parse().unwrap(),
            read("end").trim().parse().unwrap(),
        );
        assert!(start > 1.6e9 && end >= start, "{start} {end}");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    fn run(s: Scheduler, rep: u32, times: &[(&str, f64, f64)]) -> StreamRun {
        StreamRun {
            scheduler: s,
            repetition: rep,
            jobs: times
                .iter()
                .enumerate()
                .map(|(i, (k, start, end))| JobTimes {
                    index: i,
                    kind: k.to_string(),
                    ranks: 2,
                    start_s: *start,
                    end_s: *end,
                    exit_code: 0,
                    left_to_fair: false,
                })
                .collect(),
            agent_cpu_s: None,
            manager_cpu_s: None,
            in_cpu_log: Vec::new(),
        }
    }

    #[test]
    fn the_comparison_pairs_each_repetition_with_fifo_and_gives_the_cv_by_kind() {
        let e = parse(&MINIMAL.replace("\"time-sharing\"", "\"time-sharing-agent\"")).unwrap();
        let runs = vec![
            // fifo: one after another, 1 s each; mean response (1 + 2) / 2 = 1.5, then 3.0 in repetition 2.
            run(Scheduler::Fifo, 1, &[("a", 0.0, 1.0), ("b", 1.0, 2.0)]),
            run(Scheduler::Fifo, 2, &[("a", 0.0, 2.0), ("b", 2.0, 4.0)]),
            // scs: side by side; means 1.5 and 3.0 → 1.0× fifo both times.
            run(Scheduler::Scs, 1, &[("a", 0.0, 1.5), ("b", 0.0, 1.5)]),
            run(Scheduler::Scs, 2, &[("a", 0.0, 3.0), ("b", 0.0, 3.0)]),
        ];
        let mut runs = runs;
        let mut shared = run(
            Scheduler::TimeSharingAgent,
            1,
            &[("a", 0.0, 3.0), ("b", 0.0, 2.0)],
        );
        shared.agent_cpu_s = Some(0.3);
        runs.push(shared);
        let table = comparison(&e, &runs);
        assert_eq!(table.name, "lab-scs-test");
        assert_eq!(table.rows.len(), 3, "no row for a scheduler without runs");
        let with_agent = &table.rows[2];
        assert_eq!(with_agent[0], "time-sharing-agent");
        assert!(
            with_agent[3].starts_with("1.67"),
            "(3 + 2) / 2 over fifo's 1.5: {with_agent:?}"
        );
        assert_eq!(with_agent[9], "10.0", "0.3 s of CPU over a 3 s makespan");
        assert_eq!(with_agent[7], "-", "no in-CPU rule");
        let fifo = &table.rows[0];
        assert_eq!(fifo[0], "fifo");
        assert!(fifo[3].starts_with("1.00"), "{fifo:?}");
        assert_eq!(fifo[4], "3.00", "mean makespan (2 + 4) / 2");
        assert_eq!(fifo[5], "0.75", "mean wait (0.5 + 1) / 2");
        // kind a's run times: 1, 2 → mean 1.5, σ 0.5, CV 0.33
        assert!(fifo[6].contains("a 1.50 (0.33)"), "{fifo:?}");
        let scs = &table.rows[1];
        assert!(scs[3].starts_with("1.00 ± 0.00"), "{scs:?}");
        assert_eq!(fifo[9], "-", "no agent, no agent CPU");
        assert_eq!(fifo[8], "-", "no manager CPU recorded");
        assert_eq!(coefficient_of_variation(&[2.0]), None);
        assert_eq!(coefficient_of_variation(&[1.0, 1.0]), Some(0.0));
    }

    #[test]
    fn jobs_left_to_the_fair_scheduler_are_read_from_the_managers_log_and_counted_by_kind() {
        let log = "cosched manager: managing /tmp/x.db on CPUs 0-1\n\
                   cosched manager: job 4: in-CPU rule rr ended, the fair scheduler runs it from now on: rank 1 …\n\
                   cosched manager: job 4 started: pid 7\n\
                   cosched manager: job 12: in-CPU rule msg ended, …\n";
        assert_eq!(in_cpu_ended(log), [4, 12]);
        let e = parse(&MINIMAL.replace("\"scs\"", "\"scs-rr\"")).unwrap();
        let mut rr = run(
            Scheduler::ScsRr,
            1,
            &[
                ("lammps", 0.0, 1.0),
                ("lammps", 0.0, 1.0),
                ("pingpong", 0.0, 1.0),
            ],
        );
        rr.jobs[1].left_to_fair = true;
        let table = comparison(&e, &[rr]);
        assert_eq!(table.rows[0][7], "lammps 1/2");
        let table = comparison(&e, &[run(Scheduler::ScsRr, 1, &[("pingpong", 0.0, 1.0)])]);
        assert_eq!(table.rows[0][7], "none");
    }
}
