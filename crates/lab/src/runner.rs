//! Runs a [`LabExperiment`]: every configuration × receive mode × K × repetition on one emulated cluster, each
//! run measured into a `cosched_report::RunRecord` with source `Real`.
//!
//! One run:
//! ```text
//! place K competitors per node (pinned to the node's CPU, in the competitors' cpu cgroup: the experiment's,
//!     or their own with lab.competitors_cgroup = "own"), held at a gate
//! lab.local_probe: place one cosched-local wake-up probe per node CPU (pinned, the probes' own cpu cgroup),
//!     held at a gate
//! start the agent (agent configurations)
//! place the job's processes held at their gates (lab.job_session = "own": each in a new session)
//! release the competitors; settle
//! sample: competitor CPU, /proc/stat busy, cgroup CPU, agent CPU, lab CPU, wall clock
//! release the job's processes (servers first; under `cosched run` with the agent), then the probes; wait for
//!     the job's processes
//! sample again; SIGINT the probes and read their lines; read the job's result line, the agent's statistics;
//!     stop agent and competitors
//! F(process) = N × Tc / Te, N = processes pinned to its CPU (job processes + competitors)
//! ```
//! Where every process was (cpu cgroup, session) is read from `/proc` once the job is placed and kept with the
//! run ([`LabRun::placement`], in `raw.jsonl`).
//!
//! [`run_once`] spawns (`spawn_competitors`, `settle`, `spawn_job`) and samples (`sample_cpu`, `job_result`);
//! the figures are computed from the samples by the pure [`crate::measure::measure`].

use crate::agent::AgentHandle;
use crate::binaries::Binaries;
use crate::cluster::Cluster;
use crate::experiment::{
    CompetitorsCgroup, Configuration, JobSession, LabExperiment, ProgramKind, RunLength,
    LOCAL_PROBE_BINARY,
};
use crate::kernlog::{self, KernelLog};
use crate::measure::{self, CompetitorCpu, CpuTimes, LocalFigures, LocalReading, RunSetting};
use crate::mpi::MpiLauncher;
use crate::process::{cpu_time_s, Exit, ManagedProcess};
use crate::programs::{self, NodeProcess, COMPETITOR_BINARY};
use crate::{cpustat, signals};
use anyhow::{bail, Context, Result};
use cosched_agent::proto::AgentStats;
use cosched_bench::result::ResultLine;
use cosched_policy::spin::ReceiveMode;
use cosched_report::RunRecord;
use serde::Serialize;
use std::process::Command;
use std::time::{Duration, Instant};

/// One run to do.
#[derive(Clone, Debug)]
pub struct RunSpec<'a> {
    pub configuration: &'a Configuration,
    pub mode: ReceiveMode,
    pub competitors: u32,
    pub repetition: u32,
}

/// The label of a (configuration, receive mode) series: `agent, spin-block:1600`.
pub fn series_label(configuration: &str, mode: &ReceiveMode) -> String {
    format!("{configuration}, {}", mode.as_arg())
}

/// Every run of the experiment, in execution order: repetition, mode, K, configuration. The configurations of
/// one point run back to back, so that drift in the machine's speed (a shared VM's noise is ±20–50 % over
/// minutes) falls on all of them alike and the ratios between them stay meaningful; their order flips every
/// repetition (file order in even ones, reversed in odd ones), so that no configuration always runs first: with
/// the baseline always first, LAMMPS at K = 0 read the agent 0.92× no agent's speed, and 1.04× with the order
/// rotated (docs/lab-local.md, notebook 2026-11-29).
pub fn plan(experiment: &LabExperiment) -> Vec<RunSpec<'_>> {
    let mut runs = Vec::new();
    for repetition in 0..experiment.repetitions {
        for mode in &experiment.receive_modes {
            for &competitors in &experiment.competitors {
                let mut configurations: Vec<_> = experiment.configurations.iter().collect();
                if repetition % 2 == 1 {
                    configurations.reverse();
                }
                for configuration in configurations {
                    runs.push(RunSpec {
                        configuration,
                        mode: *mode,
                        competitors,
                        repetition,
                    });
                }
            }
        }
    }
    runs
}

/// A CPU-bound competitor and the node it is pinned with.
struct Competitor {
    /// Declared before `process`, so dropped before it is reaped (see [`signals::KillFirst`]).
    _killed_first_on_a_signal: Option<signals::KillFirst>,
    process: ManagedProcess,
    node: u32,
}

/// The local user's wake-up probe on one CPU.
struct Probe {
    process: ManagedProcess,
    cpu: u32,
}

/// Where one process of a run was once the job was placed: its cpu cgroup and session, from `/proc/<pid>`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartyPlacement {
    /// `n0 competitor 0`, `probe cpu 1`, `n1 /path/to/cosched-pingpong`.
    pub label: String,
    /// `competitor`, `probe` or `job`.
    pub role: &'static str,
    pub pid: u32,
    /// Its path in the cpu controller's (v1) hierarchy, e.g. `/cosched-l42x0/n1/competitors`.
    pub cpu_cgroup: Option<String>,
    /// Its session id.
    pub session: u32,
}

/// One real run: its record in the shared schema, and the raw material it was made from.
#[derive(Clone, Debug)]
pub struct LabRun {
    pub record: RunRecord,
    /// The job's result line (the reporting process's).
    pub program_line: ResultLine,
    /// The agent's statistics at the end of the run (agent configurations).
    pub agent: Option<AgentStats>,
    /// What the agent printed on stderr during the run (agent configurations).
    pub agent_log: Option<String>,
    /// Each local probe's line (`lab.local_probe`), by CPU.
    pub local: Vec<(u32, ResultLine)>,
    /// Where the competitors, probes and job processes were (read once the job was placed).
    pub placement: Vec<PartyPlacement>,
    /// The kernel's starvation warnings logged during the run ([`crate::kernlog`]): its figures are suspect.
    pub kernel_warnings: Vec<String>,
}

/// The records of some runs.
pub fn records(runs: &[LabRun]) -> Vec<RunRecord> {
    runs.iter().map(|r| r.record.clone()).collect()
}

/// Run one configuration × mode × K × repetition on `cluster`: spawn, sample, measure.
pub fn run_once(
    experiment: &LabExperiment,
    cluster: &Cluster,
    mpi: Option<&MpiLauncher>,
    binaries: &Binaries,
    spec: &RunSpec,
) -> Result<LabRun> {
    signals::check()?;
    let cpus: Vec<u32> = {
        let mut c: Vec<u32> = (0..cluster.nodes()).map(|n| cluster.node_cpu(n)).collect();
        c.sort_unstable();
        c.dedup();
        c
    };

    // Every process of the run is placed (forked, moved into its cgroups) before any competitor runs: beside
    // competitors at cpu.shares 262144 the lab and the kernel's threads in the root cpu cgroup get 1/257 of a
    // CPU, and each cgroup attach waits for an RCU grace period, so a CI run's setup under running competitors
    // had not placed a 2-rank job after 60 s. Competitors and probes are held at a gate like the job.
    let mut competitors = spawn_competitors(
        cluster,
        binaries,
        spec.competitors,
        competitor_bound_s(experiment),
    )?;
    // Let go with the job (see `spawn_probes`).
    let mut probes = if experiment.lab.local_probe {
        spawn_probes(
            cluster,
            binaries,
            &cpus,
            &experiment.lab.local_probe_args,
            competitor_bound_s(experiment),
        )?
    } else {
        Vec::new()
    };

    let agent = match &spec.configuration.agent {
        Some(settings) => Some(AgentHandle::start(
            &binaries.cosched,
            settings,
            &cluster.run_id,
        )?),
        None => None,
    };
    if let (Some(agent), true) = (&agent, experiment.lab.competitors_managed) {
        for c in &competitors {
            agent.register(c.process.pid(), "competitor")?;
        }
    }

    let job = programs::plan(
        &experiment.program,
        &spec.mode,
        &cluster.network,
        binaries,
        mpi,
    )?;
    let mut processes = spawn_job(experiment, cluster, &job, agent.as_ref())?;
    check_probes(&mut probes)?;
    for c in &mut competitors {
        c.process.release()?;
    }
    settle(&mut competitors, experiment.lab.settle_ms)?;
    let placement = placements(&competitors, &probes, &processes);

    // Baseline samples, right before the job starts.
    let cpu_at_start = sample_cpu(cluster, &cpus, &competitors, agent.as_ref())?;
    let started = Instant::now();
    // Root first; the others retry their connection until it listens. Then the local probes.
    for p in &mut processes {
        p.release()?;
    }
    for p in &mut probes {
        p.process.release()?;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(experiment.program.timeout_s);
    let mut exits: Vec<Exit> = Vec::new();
    for p in &mut processes {
        let left = deadline.saturating_duration_since(Instant::now());
        exits.push(p.wait(left)?);
    }
    let window_s = started.elapsed().as_secs_f64();
    let used = sample_cpu(cluster, &cpus, &competitors, agent.as_ref())?.since(&cpu_at_start);
    let local = stop_probes(probes)?;

    let agent_stats = agent.as_ref().map(AgentHandle::stats).transpose()?;
    let agent_log = agent.map(AgentHandle::stop).transpose()?;
    drop(competitors);

    let line = job_result(experiment.program.kind, &job, &exits)?;
    let setting = run_setting(experiment, cluster, spec);
    let readings = local
        .iter()
        .map(|(cpu, line)| LocalReading::from_line(*cpu, line))
        .collect::<Result<Vec<_>>>()?;
    let record = measure::measure(
        &setting,
        &used,
        window_s,
        &line,
        agent_stats.as_ref(),
        LocalFigures::of(&readings).as_ref(),
    );
    if let Some(error) = agent_stats.as_ref().and_then(|s| s.last_error.as_ref()) {
        eprintln!("cosched lab: the agent reported an error during the run: {error}");
    }
    Ok(LabRun {
        record,
        program_line: line,
        agent: agent_stats,
        agent_log,
        local,
        placement,
        kernel_warnings: Vec::new(),
    })
}

/// One local probe per CPU in `cpus` (the node CPUs, each once): `cosched-local --period-ms 1 --min-mb 0
/// --max-mb 0 --burst-us 0`, SCHED_OTHER, pinned, in the probes' own cpu cgroup (`cosched-<run id>-local`;
/// why not beside the competitors: `crate::experiment`), the lab's session, not under `cosched run`; bounded by
/// `--duration-s bound_s` like a competitor.
///
/// They are placed right after the competitors and held at a gate until the job's processes are let go, so
/// that the probes measure the job's run, not the competitors' settling.
fn spawn_probes(
    cluster: &Cluster,
    binaries: &Binaries,
    cpus: &[u32],
    args: &[String],
    bound_s: f64,
) -> Result<Vec<Probe>> {
    let mut probes = Vec::new();
    for &cpu in cpus {
        let (program, prefix) = binaries.bench_invocation(LOCAL_PROBE_BINARY);
        let mut command = Command::new(program);
        command
            .args(prefix)
            .args(args)
            .args(["--duration-s", &format!("{bound_s:.0}")]);
        let process = ManagedProcess::spawn_gated(
            format!("local probe on CPU {cpu}"),
            command,
            &cluster.probe_placement(cpu)?,
        )?;
        probes.push(Probe { process, cpu });
    }
    Ok(probes)
}

/// Fail if a probe (held at its gate) has exited already.
fn check_probes(probes: &mut [Probe]) -> Result<()> {
    for p in probes {
        if let Some(exit) = p.process.try_reap()? {
            bail!(
                "{} exited before the job started: {}",
                p.process.label,
                exit.describe()
            );
        }
    }
    Ok(())
}

/// Stop the probes with SIGINT (each prints its result line and exits; killed after 5 s) and read their lines.
fn stop_probes(probes: Vec<Probe>) -> Result<Vec<(u32, ResultLine)>> {
    let mut lines = Vec::new();
    for mut p in probes {
        let exit = p.process.stop_with(libc::SIGINT, Duration::from_secs(5))?;
        if !exit.success() {
            bail!(
                "{} did not stop cleanly on SIGINT: {}",
                p.process.label,
                exit.describe()
            );
        }
        let line = programs::read_result(&exit.stdout).with_context(|| p.process.label.clone())?;
        lines.push((p.cpu, line));
    }
    Ok(lines)
}

/// A process's cpu cgroup (`/proc/<pid>/cgroup`, the v1 line whose controllers include `cpu`; `None` without
/// one) and session (`/proc/<pid>/stat`); `None` if the process is gone.
pub fn cpu_cgroup_and_session(pid: u32) -> Option<(Option<String>, u32)> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let cpu_cgroup = cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers
            .split(',')
            .any(|c| c == "cpu")
            .then(|| path.to_string())
    });
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: state, ppid, pgrp, session.
    let session = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some((cpu_cgroup, session))
}

/// Where every process of the run is now.
fn placements(
    competitors: &[Competitor],
    probes: &[Probe],
    job: &[ManagedProcess],
) -> Vec<PartyPlacement> {
    let parties = competitors
        .iter()
        .map(|c| (&c.process, "competitor"))
        .chain(probes.iter().map(|p| (&p.process, "probe")))
        .chain(job.iter().map(|p| (p, "job")));
    parties
        .filter_map(|(p, role)| {
            let (cpu_cgroup, session) = cpu_cgroup_and_session(p.pid())?;
            Some(PartyPlacement {
                label: p.label.clone(),
                role,
                pid: p.pid(),
                cpu_cgroup,
                session,
            })
        })
        .collect()
}

/// Let the competitors settle on their CPUs for `settle_ms`; fail if one has exited meanwhile.
fn settle(competitors: &mut [Competitor], settle_ms: u64) -> Result<()> {
    std::thread::sleep(Duration::from_millis(settle_ms));
    for c in competitors {
        if let Some(exit) = c.process.try_reap()? {
            bail!(
                "{} exited before the job started: {}",
                c.process.label,
                exit.describe()
            );
        }
    }
    signals::check()?;
    Ok(())
}

/// What the measure step needs to know of the run besides its samples.
fn run_setting(experiment: &LabExperiment, cluster: &Cluster, spec: &RunSpec) -> RunSetting {
    RunSetting {
        experiment: experiment.name.clone(),
        series: series_label(&spec.configuration.name, &spec.mode),
        competitors: spec.competitors,
        repetition: spec.repetition,
        job: experiment.program.kind.name().to_string(),
        work_expected: match experiment.program.length {
            RunLength::Count { units } => units,
            // A duration-bound run asks for no particular amount of work.
            RunLength::Duration { .. } => 0,
        },
        node_cpus: (0..cluster.nodes()).map(|n| cluster.node_cpu(n)).collect(),
        competitors_apart: experiment.lab.competitors_cgroup == CompetitorsCgroup::Own,
    }
}

/// How long a competitor may run at most: the longest a run can keep it (settling, the agent's start, the job's
/// timeout) and a minute more. The lab stops it long before; the bound is for a lab that cannot.
pub fn competitor_bound_s(experiment: &LabExperiment) -> f64 {
    experiment.lab.settle_ms as f64 / 1e3
        + crate::agent::START_TIMEOUT.as_secs_f64()
        + experiment.program.timeout_s
        + 60.0
}

/// K competitors per node, pinned with the node, each with its own deadline (`--duration-s bound_s`), held at
/// their gates (released by `run_once` once the job is placed).
fn spawn_competitors(
    cluster: &Cluster,
    binaries: &Binaries,
    per_node: u32,
    bound_s: f64,
) -> Result<Vec<Competitor>> {
    let mut competitors = Vec::new();
    for node in 0..cluster.nodes() {
        for k in 0..per_node {
            let (program, prefix) = binaries.bench_invocation(COMPETITOR_BINARY);
            let mut command = Command::new(program);
            command
                .args(prefix)
                .args(["--duration-s", &format!("{bound_s:.0}")]);
            let process = ManagedProcess::spawn_gated(
                format!("n{node} competitor {k}"),
                command,
                &cluster.competitor_placement(node)?,
            )?;
            competitors.push(Competitor {
                _killed_first_on_a_signal: signals::KillFirst::register(process.pid()),
                process,
                node,
            });
        }
    }
    Ok(competitors)
}

/// The job's processes (under `cosched run` in agent configurations), placed and held at their gates, so
/// that placement is not timed.
fn spawn_job(
    experiment: &LabExperiment,
    cluster: &Cluster,
    job: &[NodeProcess],
    agent: Option<&AgentHandle>,
) -> Result<Vec<ManagedProcess>> {
    let mut processes = Vec::new();
    for p in job {
        let command = match agent {
            Some(a) => a.wrap_job(experiment.program.kind.name(), &p.program, &p.args),
            None => {
                let mut c = Command::new(&p.program);
                c.args(&p.args);
                c
            }
        };
        let label = format!("n{} {}", p.node, p.program.display());
        let placement = match experiment.lab.job_session {
            JobSession::Shared => cluster.placement(p.node)?,
            // The gate's shell leads the new session and execs the program (or `cosched run`) in it.
            JobSession::Own => cluster.placement(p.node)?.new_session(),
        };
        processes.push(ManagedProcess::spawn_gated(label, command, &placement)?);
    }
    Ok(processes)
}

/// The CPU-time counters of every party of the run, now: each competitor, each node's cpuacct group, the
/// experiment CPUs' busy time in `/proc/stat`, the experiment cgroup, the lab process, the agent.
fn sample_cpu(
    cluster: &Cluster,
    cpus: &[u32],
    competitors: &[Competitor],
    agent: Option<&AgentHandle>,
) -> Result<CpuTimes> {
    Ok(CpuTimes {
        competitors: competitors
            .iter()
            .map(|c| {
                Ok(CompetitorCpu {
                    node: c.node,
                    cpu_s: cpu_time_s(c.process.pid())?,
                })
            })
            .collect::<Result<_>>()?,
        nodes: (0..cluster.nodes() as usize)
            .map(|n| cluster.cgroup.node_cpu_usage_s(n))
            .collect::<Result<_>>()?,
        busy: cpustat::busy_s(cpus)?,
        experiment: cluster.cgroup.cpu_usage_s()?,
        lab: cpustat::own_cpu_s(),
        agent: agent.map(AgentHandle::cpu_s).transpose()?,
    })
}

/// The job's result line, once every process of it succeeded: the reporting process's last JSON line.
fn job_result(kind: ProgramKind, job: &[NodeProcess], exits: &[Exit]) -> Result<ResultLine> {
    for (p, exit) in job.iter().zip(exits) {
        if !exit.success() {
            bail!(
                "n{} {} failed: {}",
                p.node,
                p.program.display(),
                exit.describe()
            );
        }
    }
    let reporter = job
        .iter()
        .position(|p| p.reports)
        .context("the job has no reporting process")?;
    programs::read_job_result(kind, &exits[reporter].stdout).with_context(|| {
        format!(
            "n{} {}",
            job[reporter].node,
            job[reporter].program.display()
        )
    })
}

/// What to do around each run (the CLI shows a progress bar; tests and the main job may not).
pub trait Progress {
    fn start(&mut self, _total: usize) {}
    fn run_done(&mut self, _spec: &RunSpec, _run: &LabRun) {}
    fn finish(&mut self) {}
}

/// No progress display.
pub struct Quiet;
impl Progress for Quiet {}

/// The CPUs the experiment's nodes use: the file's `lab.cpus`, or every CPU this process may run on.
pub fn experiment_cpus(experiment: &LabExperiment) -> Result<Vec<u32>> {
    match &experiment.lab.cpus {
        Some(cpus) => {
            let available = crate::cluster::available_cpus()?;
            if let Some(c) = cpus.iter().find(|c| !available.contains(c)) {
                bail!("lab.cpus names CPU {c}, but this machine offers only {available:?}");
            }
            Ok(cpus.clone())
        }
        None => crate::cluster::available_cpus(),
    }
}

/// Run every run of `experiment` on a fresh cluster, which is torn down on every exit path.
pub fn run_experiment(
    experiment: &LabExperiment,
    binaries: &Binaries,
    progress: &mut dyn Progress,
) -> Result<Vec<LabRun>> {
    signals::install().context("installing the SIGINT/SIGTERM handler")?;
    if binaries.cosched.is_file() {
        crate::cleanup::spawn_reaper(&binaries.cosched)?;
    } else {
        eprintln!(
            "cosched lab: no reaper ({} is not there): if this lab is killed outright, `cosched lab --cleanup` \
             removes what it leaves",
            binaries.cosched.display()
        );
    }
    let cpus = experiment_cpus(experiment)?;
    let cluster = Cluster::create_with(
        experiment.nodes,
        &cpus,
        experiment.lab.cpu_shares,
        experiment.lab.rt_runtime_us,
        experiment.lab.competitors_cgroup,
        experiment.lab.local_probe,
    )
    .context("building the emulated cluster")?;
    let mpi = match (experiment.program.kind, experiment.program.length) {
        (ProgramKind::Lammps, RunLength::Count { units }) => {
            let example = std::fs::read_to_string(programs::LAMMPS_EXAMPLE).with_context(|| {
                format!(
                    "reading LAMMPS's example input {} (apt-get install lammps)",
                    programs::LAMMPS_EXAMPLE
                )
            })?;
            let deck = programs::lammps_deck(&example, units)
                .with_context(|| format!("in {}", programs::LAMMPS_EXAMPLE))?;
            Some(MpiLauncher::create(&cluster)?.with_lammps_deck(&deck)?)
        }
        (kind, _) if kind.is_mpi() => Some(MpiLauncher::create(&cluster)?),
        _ => None,
    };
    let runs = plan(experiment);
    let mut kernel_log = KernelLog::open();
    progress.start(runs.len());
    let mut runs_done = Vec::with_capacity(runs.len());
    for spec in &runs {
        let label = format!(
            "run {} K={} repetition {}",
            series_label(&spec.configuration.name, &spec.mode),
            spec.competitors,
            spec.repetition
        );
        let result = run_once(experiment, &cluster, mpi.as_ref(), binaries, spec);
        let warnings = kernel_log.new_warnings();
        let mut run = match result {
            Ok(run) => run,
            // A run that failed while the kernel starved its own threads most likely failed for that.
            Err(e) if !warnings.is_empty() => {
                return Err(e.context(format!(
                    "{label}; meanwhile the kernel logged {}",
                    kernlog::summary(&warnings)
                )))
            }
            Err(e) => return Err(e.context(label)),
        };
        if !warnings.is_empty() {
            eprintln!(
                "cosched lab: warning: during {label} the kernel logged {} (its own threads waited for their \
                 CPU: this run's figures are suspect)",
                kernlog::summary(&warnings)
            );
        }
        run.kernel_warnings = warnings;
        progress.run_done(spec, &run);
        runs_done.push(run);
    }
    progress.finish();
    drop(mpi);
    cluster.remove()?;
    Ok(runs_done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_cpu_cgroup_and_session_are_read_from_proc() {
        let (cgroup, session) = cpu_cgroup_and_session(std::process::id()).unwrap();
        if let Some(cgroup) = cgroup {
            assert!(cgroup.starts_with('/'), "{cgroup}");
        }
        // SAFETY: getsid(0) reads our own session id.
        assert_eq!(session as i32, unsafe { libc::getsid(0) });
        assert_eq!(cpu_cgroup_and_session(u32::MAX), None);
    }

    #[test]
    fn the_configurations_of_a_point_run_back_to_back_in_an_order_that_flips_every_repetition() {
        let experiment = LabExperiment::parse(
            r#"
name = "order"
description = "d"
nodes = 2
competitors = [0, 1]
receive_modes = ["spin-only"]
repetitions = 3
[program]
kind = "pingpong"
duration_s = 1.0
[[configurations]]
name = "no-agent"
[[configurations]]
name = "agent"
agent = true
"#,
            std::path::Path::new("order.toml"),
        )
        .unwrap();
        let order: Vec<(u32, u32, &str)> = plan(&experiment)
            .iter()
            .map(|r| (r.repetition, r.competitors, r.configuration.name.as_str()))
            .collect();
        assert_eq!(
            order,
            vec![
                (0, 0, "no-agent"),
                (0, 0, "agent"),
                (0, 1, "no-agent"),
                (0, 1, "agent"),
                (1, 0, "agent"),
                (1, 0, "no-agent"),
                (1, 1, "agent"),
                (1, 1, "no-agent"),
                (2, 0, "no-agent"),
                (2, 0, "agent"),
                (2, 1, "no-agent"),
                (2, 1, "agent"),
            ]
        );
    }

    #[test]
    fn series_labels_name_configuration_and_mode() {
        assert_eq!(
            series_label("agent", &ReceiveMode::SpinBlock { spin_ns: 1_600_000 }),
            "agent, spin-block:1600"
        );
    }
}
