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

use crate::agent::AgentHandle;
use crate::cluster::Cluster;
use crate::experiment::{Configuration, LabExperiment, ProgramKind, RunLength};
use crate::mpi::MpiLauncher;
use crate::process::{cpu_time_s, Exit, ManagedProcess};
use crate::programs::{self, COMPETITOR_BINARY};
use crate::{cpustat, signals};
use anyhow::{bail, Context, Result};
use cosched_agent::proto::AgentStats;
use cosched_policy::spin::ReceiveMode;
use cosched_report::{JobResult, JobRole, Measurement, RunRecord, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where the lab finds the programs it starts.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// Directory of the `cosched-*` bench binaries.
    pub bench_dir: PathBuf,
    /// The `cosched` binary (for `cosched agent` and `cosched run`).
    pub cosched: PathBuf,
    /// Directory of the MPI ping-pong binary (`mpi_pingpong`), if MPI runs are wanted.
    pub mpi_dir: Option<PathBuf>,
}

impl Binaries {
    /// Everything beside the running `cosched` binary, where `cargo build` puts the bench binaries too.
    pub fn beside_current_exe() -> Result<Binaries> {
        let cosched = std::env::current_exe().context("finding the cosched binary")?;
        let dir = cosched.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Binaries {
            bench_dir: dir.clone(),
            cosched,
            mpi_dir: Some(dir),
        })
    }

    pub fn bench(&self, name: &str) -> PathBuf {
        if name == "mpi_pingpong" {
            if let Some(dir) = &self.mpi_dir {
                return dir.join(name);
            }
        }
        self.bench_dir.join(name)
    }

    /// How to start benchmark program `name`: its own binary (`cosched-pingpong`) where it is built, else the
    /// same code through `cosched bench pingpong` (so `cargo run -p cosched` alone is enough for the lab).
    /// Returns the program and the arguments that go before the program's own.
    pub fn bench_invocation(&self, name: &str) -> (PathBuf, Vec<String>) {
        let own = self.bench(name);
        match name.strip_prefix("cosched-") {
            Some(program) if !own.is_file() && self.cosched.is_file() => (
                self.cosched.clone(),
                vec!["bench".to_string(), program.to_string()],
            ),
            _ => (own, Vec::new()),
        }
    }
}

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

/// Fairness `F = N × Tc / Te` (seed `000` §4.1.1, Equation 2): `n` processes sharing the CPU, `cpu_s` the
/// process's CPU time, `wall_s` its response time. 1 is a fair share.
pub fn fairness(n: u32, cpu_s: f64, wall_s: f64) -> f64 {
    if wall_s <= 0.0 {
        return 0.0;
    }
    n as f64 * cpu_s / wall_s
}

/// Mean, minimum and maximum of per-process values (0s for none).
fn mean_min_max(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Processes sharing each CPU in a run: on each node, its job ranks and its competitors.
fn processes_per_cpu(cluster: &Cluster, competitors_per_node: u32) -> BTreeMap<u32, u32> {
    let mut per_cpu = BTreeMap::new();
    for node in 0..cluster.nodes() {
        *per_cpu.entry(cluster.node_cpu(node)).or_insert(0) +=
            competitors_per_node + programs::RANKS_PER_NODE;
    }
    per_cpu
}

struct Competitor {
    process: ManagedProcess,
    node: u32,
    cpu_at_start: f64,
}

/// One real run: its record in the shared schema, and the raw material it was made from.
#[derive(Clone, Debug)]
pub struct LabRun {
    pub record: RunRecord,
    /// The job's result line as the program printed it.
    pub program_line: serde_json::Value,
    /// The agent's statistics at the end of the run (agent configurations).
    pub agent: Option<AgentStats>,
    /// What the agent printed on stderr during the run (agent configurations).
    pub agent_log: Option<String>,
}

/// The records of some runs.
pub fn records(runs: &[LabRun]) -> Vec<RunRecord> {
    runs.iter().map(|r| r.record.clone()).collect()
}

/// Run one configuration × mode × K × repetition on `cluster`.
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

    // Competitors: K per node, pinned with the node.
    let mut competitors = Vec::new();
    for node in 0..cluster.nodes() {
        for k in 0..spec.competitors {
            let (program, prefix) = binaries.bench_invocation(COMPETITOR_BINARY);
            let mut command = Command::new(program);
            command.args(prefix);
            let process = ManagedProcess::spawn(
                format!("n{node} competitor {k}"),
                command,
                &cluster.placement(node)?,
            )?;
            competitors.push(Competitor {
                process,
                node,
                cpu_at_start: 0.0,
            });
        }
    }
    std::thread::sleep(Duration::from_millis(experiment.lab.settle_ms));
    for c in &mut competitors {
        if let Some(exit) = c.process.try_reap()? {
            bail!(
                "{} exited before the job started: {}",
                c.process.label,
                exit.describe()
            );
        }
    }
    signals::check()?;

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
    let per_cpu = processes_per_cpu(cluster, spec.competitors);
    let nodes = cluster.nodes() as usize;

    // The ranks, placed and held at their gates, so that placement is not timed.
    let mut processes = Vec::new();
    for p in &job {
        let command = match &agent {
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

    // Baseline samples, right before the job starts.
    for c in &mut competitors {
        c.cpu_at_start = cpu_time_s(c.process.pid())?;
    }
    let node_start: Vec<f64> = (0..nodes)
        .map(|n| cluster.cgroup.node_cpu_usage_s(n))
        .collect::<Result<_>>()?;
    let busy_start = cpustat::busy_s(&cpus)?;
    let cgroup_start = cluster.cgroup.cpu_usage_s()?;
    let lab_start = cpustat::own_cpu_s();
    let agent_start = agent.as_ref().map(|a| a.cpu_s()).transpose()?;
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

    // End samples. A node's job CPU time is everything its cpuacct group used minus its competitors.
    let node_delta: Vec<f64> = (0..nodes)
        .map(|n| Ok(cluster.cgroup.node_cpu_usage_s(n)? - node_start[n]))
        .collect::<Result<_>>()?;
    let mut competitor_fairness = Vec::new();
    let mut competitor_cpu = Vec::new();
    let mut node_competitor_cpu = vec![0.0; nodes];
    for c in &competitors {
        let used = cpu_time_s(c.process.pid())? - c.cpu_at_start;
        let n = per_cpu[&cluster.node_cpu(c.node)];
        node_competitor_cpu[c.node as usize] += used;
        competitor_cpu.push(used);
        competitor_fairness.push(fairness(n, used, window_s));
    }
    let busy_delta = cpustat::busy_s(&cpus)? - busy_start;
    let cgroup_delta = cluster.cgroup.cpu_usage_s()? - cgroup_start;
    let lab_delta = cpustat::own_cpu_s() - lab_start;
    let (agent_delta, agent_snapshot): (Option<f64>, Option<AgentStats>) = match &agent {
        Some(a) => (
            Some(a.cpu_s()? - agent_start.unwrap_or(0.0)),
            Some(a.stats()?),
        ),
        None => (None, None),
    };
    let agent_log = agent.map(AgentHandle::stop).transpose()?;
    drop(competitors);

    for (p, exit) in job.iter().zip(&exits) {
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
    let result = programs::parse_result(&exits[reporter].stdout).with_context(|| {
        format!(
            "n{} {}",
            job[reporter].node,
            job[reporter].program.display()
        )
    })?;

    // Per rank (one per node): F = N × (node CPU − competitors' CPU) / job response time.
    let job_response = window_s;
    let rank_cpu: Vec<f64> = (0..nodes)
        .map(|n| {
            ((node_delta[n] - node_competitor_cpu[n]) / programs::RANKS_PER_NODE as f64).max(0.0)
        })
        .collect();
    let job_fairness: Vec<f64> = (0..nodes)
        .map(|n| {
            fairness(
                per_cpu[&cluster.node_cpu(n as u32)],
                rank_cpu[n],
                job_response,
            )
        })
        .collect();
    let (f_mean, f_min, f_max) = mean_min_max(&job_fairness);
    let mut jobs = vec![JobResult {
        name: experiment.program.kind.name().to_string(),
        role: JobRole::Parallel,
        response_s: job_response,
        cpu_s: rank_cpu.iter().sum::<f64>() * programs::RANKS_PER_NODE as f64,
        fairness: f_mean,
        fairness_min: f_min,
        fairness_max: f_max,
    }];
    if !competitor_fairness.is_empty() {
        let (c_mean, c_min, c_max) = mean_min_max(&competitor_fairness);
        jobs.push(JobResult {
            name: "calcula".into(),
            role: JobRole::Competitor,
            response_s: window_s,
            cpu_s: competitor_cpu.iter().sum::<f64>() / competitor_cpu.len() as f64,
            fairness: c_mean,
            fairness_min: c_min,
            fairness_max: c_max,
        });
    }

    let rate_time = result
        .elapsed_s
        .filter(|&t| t > 0.0)
        .unwrap_or(job_response);
    let ours = cgroup_delta + lab_delta + agent_delta.unwrap_or(0.0);
    let mut extra = BTreeMap::new();
    extra.insert(
        "foreign_cpus".into(),
        cpustat::foreign_cpus(busy_delta, ours, window_s),
    );
    extra.insert("experiment_cpus".into(), cgroup_delta / window_s);
    extra.insert("lab_cpu_s".into(), lab_delta);
    extra.insert("window_s".into(), window_s);
    if let Some(s) = result.under_100us_s.filter(|_| rate_time > 0.0) {
        // The share of the run the job's ranks were coscheduled (round trips that lost no time slice).
        extra.insert("coscheduled_fraction".into(), s / rate_time);
    }
    if let Some(us) = result.under_100us_mean_us {
        extra.insert("coscheduled_rtt_us".into(), us);
    }
    let mut measurement = Measurement {
        jobs,
        work_done: result.work_done,
        work_expected: match experiment.program.length {
            RunLength::Count { units } => units,
            // A duration-bound run asks for no particular amount of work.
            RunLength::Duration { .. } => 0,
        },
        rate_per_s: result.work_done as f64 / rate_time,
        rtt_p50_us: result.rtt_p50_us,
        rtt_p99_us: result.rtt_p99_us,
        rtt_histogram: result.histogram.clone(),
        agent_cpu_fraction: agent_delta.map(|a| a / window_s),
        extra,
        ..Measurement::default()
    };
    if let Some(stats) = &agent_snapshot {
        stats.fill_measurement(&mut measurement);
        // Over the job's window, not the agent's whole life (which includes its start-up).
        measurement.agent_cpu_fraction = agent_delta.map(|a| a / window_s);
        if let Some(error) = &stats.last_error {
            eprintln!("cosched lab: the agent reported an error during the run: {error}");
        }
    }
    let record = RunRecord {
        experiment: experiment.name.clone(),
        source: Source::Real,
        config: series_label(&spec.configuration.name, &spec.mode),
        competitors: spec.competitors,
        repetition: spec.repetition,
        seed: None,
        measurement,
    };
    Ok(LabRun {
        record,
        program_line: result.raw,
        agent: agent_snapshot,
        agent_log,
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
    fn fairness_is_n_times_cpu_over_wall() {
        // 1 job process + 2 competitors on a CPU; the job got 1 s of CPU in 3 s: exactly its share, F = 1.
        assert_eq!(fairness(3, 1.0, 3.0), 1.0);
        // Same CPU, the job got 2 s of 3 s: twice its share.
        assert_eq!(fairness(3, 2.0, 3.0), 2.0);
        assert_eq!(fairness(3, 2.0, 0.0), 0.0);
    }

    #[test]
    fn mean_min_max_of_values() {
        assert_eq!(mean_min_max(&[1.0, 2.0, 3.0]), (2.0, 1.0, 3.0));
        assert_eq!(mean_min_max(&[]), (0.0, 0.0, 0.0));
    }

    #[test]
    fn series_labels_name_configuration_and_mode() {
        assert_eq!(
            series_label("agent", &ReceiveMode::SpinBlock { spin_ns: 1_600_000 }),
            "agent, spin-block:1600"
        );
    }
}
