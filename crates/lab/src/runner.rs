//! Runs a [`LabExperiment`]: every configuration × receive mode × K × repetition on one emulated cluster, each
//! run measured into a `cosched_report::RunRecord` with source `Real`.
//!
//! One run:
//! ```text
//! start K competitors per node (pinned to the node's CPU, inside the experiment cgroups); settle
//! start the agent (agent configurations)
//! sample: competitor CPU, /proc/stat busy, cgroup CPU, agent CPU, lab CPU, wall clock
//! start the job's processes (servers first; under `cosched run` with the agent); wait for all of them
//! sample again; read the job's result line, the agent's statistics; stop agent and competitors
//! F(process) = N × Tc / Te, N = processes pinned to its CPU (job processes + competitors)
//! ```
//!
//! [`run_once`] spawns (`spawn_competitors`, `settle`, `spawn_job`) and samples (`sample_cpu`, `job_result`);
//! the figures are computed from the samples by the pure [`crate::measure::measure`].

use crate::agent::AgentHandle;
use crate::binaries::Binaries;
use crate::cluster::Cluster;
use crate::experiment::{Configuration, LabExperiment, ProgramKind, RunLength};
use crate::measure::{self, CompetitorCpu, CpuTimes, RunSetting};
use crate::mpi::MpiLauncher;
use crate::process::{cpu_time_s, Exit, ManagedProcess};
use crate::programs::{self, NodeProcess, COMPETITOR_BINARY};
use crate::{cpustat, signals};
use anyhow::{bail, Context, Result};
use cosched_agent::proto::AgentStats;
use cosched_bench::result::ResultLine;
use cosched_policy::spin::ReceiveMode;
use cosched_report::RunRecord;
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
/// minutes) falls on all of them alike and the ratios between them stay meaningful.
pub fn plan(experiment: &LabExperiment) -> Vec<RunSpec<'_>> {
    let mut runs = Vec::new();
    for repetition in 0..experiment.repetitions {
        for mode in &experiment.receive_modes {
            for &competitors in &experiment.competitors {
                for configuration in &experiment.configurations {
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
    process: ManagedProcess,
    node: u32,
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

    let mut competitors = spawn_competitors(
        cluster,
        binaries,
        spec.competitors,
        competitor_bound_s(experiment),
    )?;
    settle(&mut competitors, experiment.lab.settle_ms)?;

    let agent = match &spec.configuration.agent {
        Some(settings) => Some(AgentHandle::start(
            &binaries.cosched,
            settings,
            &cluster.run_id,
        )?),
        None => None,
    };

    let job = programs::plan(
        &experiment.program,
        &spec.mode,
        &cluster.network,
        binaries,
        mpi,
    )?;
    let mut processes = spawn_job(experiment, cluster, &job, agent.as_ref())?;

    // Baseline samples, right before the job starts.
    let cpu_at_start = sample_cpu(cluster, &cpus, &competitors, agent.as_ref())?;
    let started = Instant::now();
    // Root first; the others retry their connection until it listens.
    for p in &mut processes {
        p.release()?;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(experiment.program.timeout_s);
    let mut exits: Vec<Exit> = Vec::new();
    for p in &mut processes {
        let left = deadline.saturating_duration_since(Instant::now());
        exits.push(p.wait(left)?);
    }
    let window_s = started.elapsed().as_secs_f64();
    let used = sample_cpu(cluster, &cpus, &competitors, agent.as_ref())?.since(&cpu_at_start);

    let agent_stats = agent.as_ref().map(AgentHandle::stats).transpose()?;
    let agent_log = agent.map(AgentHandle::stop).transpose()?;
    drop(competitors);

    let line = job_result(&job, &exits)?;
    let setting = run_setting(experiment, cluster, spec);
    let record = measure::measure(&setting, &used, window_s, &line, agent_stats.as_ref());
    if let Some(error) = agent_stats.as_ref().and_then(|s| s.last_error.as_ref()) {
        eprintln!("cosched lab: the agent reported an error during the run: {error}");
    }
    Ok(LabRun {
        record,
        program_line: line,
        agent: agent_stats,
        agent_log,
    })
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

/// K competitors per node, pinned with the node, each with its own deadline (`--duration-s bound_s`).
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
            let process = ManagedProcess::spawn(
                format!("n{node} competitor {k}"),
                command,
                &cluster.placement(node)?,
            )?;
            competitors.push(Competitor { process, node });
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
        processes.push(ManagedProcess::spawn_gated(
            label,
            command,
            &cluster.placement(p.node)?,
        )?);
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
fn job_result(job: &[NodeProcess], exits: &[Exit]) -> Result<ResultLine> {
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
    programs::read_result(&exits[reporter].stdout).with_context(|| {
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
    let cluster = Cluster::create(
        experiment.nodes,
        &cpus,
        experiment.lab.cpu_shares,
        experiment.lab.rt_runtime_us,
    )
    .context("building the emulated cluster")?;
    let mpi = match experiment.program.kind {
        ProgramKind::MpiPingpong => Some(MpiLauncher::create(&cluster)?),
        _ => None,
    };
    let runs = plan(experiment);
    progress.start(runs.len());
    let mut runs_done = Vec::with_capacity(runs.len());
    for spec in &runs {
        let run =
            run_once(experiment, &cluster, mpi.as_ref(), binaries, spec).with_context(|| {
                format!(
                    "run {} K={} repetition {}",
                    series_label(&spec.configuration.name, &spec.mode),
                    spec.competitors,
                    spec.repetition
                )
            })?;
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
    fn series_labels_name_configuration_and_mode() {
        assert_eq!(
            series_label("agent", &ReceiveMode::SpinBlock { spin_ns: 1_600_000 }),
            "agent, spin-block:1600"
        );
    }
}
