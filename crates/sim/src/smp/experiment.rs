//! `kind = "smp"` experiment files: seed `001_cc73854eda2a0ea6.txt`'s experiments on the shared-memory machine.
//!
//! ```toml
//! kind = "smp"                           # marks the file for this model (`cosched sim` routes it here)
//! name = "scs-e1"                        # results/<name>/
//! description = "..."
//! reproduces = "001_cc73854eda2a0ea6.txt §5.1"
//! seed = 2004
//! repetitions = 3
//! procs = 64                             # E1-style lists: processes per job ...
//! dedicated_s = 20                       # ... and each job's run time alone (sets its iterations)
//! policies = [{ kind = "fifo" }, { kind = "none" }, { kind = "pb" }, { kind = "scs", mpl = 4 }]
//!
//! [machine]                              # every field optional; these are the defaults
//! cpus = 64
//! slice_ms = 100                         # IRIX time slice
//! native_spin_us = 100000                # IRIX / PB: a receive polls this long (the slice), then yields
//! context_switch_us = 20
//! cpum_quantum_ms = 100                  # the CPU manager's quantum
//! transport = { latency_us = 5, bandwidth_mb_s = 150 }
//!
//! [[workloads]]                          # one x value each; exactly one of apps / generator / swf
//! name = "w1"
//! apps = ["cg", "bt", "sweep3d", "cg"]   # one job each, all at t = 0
//! # generator = { load = 0.6, apps = ["cg", "bt", "sweep3d"] }     (jobs::Generator)
//! # swf = "trace.swf", swf_apps = ["cg"]  (path relative to the experiment file)
//! ```
//!
//! Every repetition of a workload has its own seed, shared by all policies (the same job stream, the same
//! compute draws in the same order where the schedule allows), so a policy's figures divide by FIFO's run by
//! run. A run becomes a [`RunRecord`]: configuration = the policy's label with its MPL, competitors = the
//! workload's number (1-based), the "parallel job" = the whole workload (response = makespan), then one
//! sequential-role entry per job; `extra` holds the machine figures and per-app means (`run_s.<APP>`,
//! `blocked.<APP>`). Fairness F is not defined here and is written as 0.

use super::apps::{App, Transport};
use super::jobs::{self, Generator, JobSpec};
use super::machine::{self, MachineParams, SmpOutcome, SmpPolicy};
use super::measures;
use anyhow::{bail, Context};
use cosched_policy::config::PolicyConfig;
use cosched_policy::{Nanos, MICROS, MILLIS, SECONDS};
use cosched_report::{JobResult, JobRole, Measurement, RunRecord, Source};
use indicatif::ProgressBar;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The most repetitions of a workload.
pub const MAX_REPETITIONS: u32 = 10_000;
/// The longest machine time a file may give (slice, spin, context switch, CPU-manager quantum, latency): an hour.
pub const MAX_MACHINE_TIME_NS: Nanos = 3_600 * SECONDS;
/// The slowest transport a file may give, MB/s (1 KB/s: a 200 KB halo then takes 200 s, not centuries).
pub const MIN_BANDWIDTH_MB_S: f64 = 0.001;

/// The file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmpFile {
    pub kind: String,
    pub name: String,
    pub description: String,
    pub reproduces: String,
    pub seed: u64,
    pub repetitions: u32,
    #[serde(default)]
    pub procs: Option<u32>,
    #[serde(default)]
    pub dedicated_s: Option<f64>,
    pub policies: Vec<PolicyConfig>,
    #[serde(default)]
    pub machine: MachineFile,
    pub workloads: Vec<WorkloadFile>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MachineFile {
    pub cpus: u32,
    pub slice_ms: f64,
    pub native_spin_us: f64,
    pub context_switch_us: f64,
    pub cpum_quantum_ms: f64,
    pub transport: Transport,
}

impl Default for MachineFile {
    fn default() -> Self {
        let d = MachineParams::default();
        MachineFile {
            cpus: d.cpus,
            slice_ms: d.slice_ns as f64 / MILLIS as f64,
            native_spin_us: d.native_spin_ns as f64 / MICROS as f64,
            context_switch_us: d.context_switch_ns as f64 / MICROS as f64,
            cpum_quantum_ms: d.cpum_quantum_ns as f64 / MILLIS as f64,
            transport: d.transport,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub name: String,
    #[serde(default)]
    pub apps: Option<Vec<App>>,
    #[serde(default)]
    pub generator: Option<Generator>,
    #[serde(default)]
    pub swf: Option<PathBuf>,
    #[serde(default)]
    pub swf_apps: Option<Vec<App>>,
}

/// Where a workload's jobs come from, resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Stream {
    /// One job per app, all at t = 0.
    AtZero {
        apps: Vec<App>,
        procs: u32,
        dedicated_s: f64,
    },
    Generated(Generator),
    /// Parsed SWF jobs and the apps they map to.
    Swf {
        jobs: Vec<jobs::SwfJob>,
        apps: Vec<App>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub stream: Stream,
}

impl Workload {
    /// The jobs of one repetition, scaled by `scale` (the quick mode's 1/100).
    pub fn jobs(&self, cpus: u32, seed: u64, scale: f64) -> Result<Vec<JobSpec>, String> {
        match &self.stream {
            Stream::AtZero {
                apps,
                procs,
                dedicated_s,
            } => Ok(apps
                .iter()
                .enumerate()
                .map(|(i, &app)| JobSpec {
                    name: format!("j{i:03} {}", app.name()),
                    app,
                    procs: *procs,
                    arrival_ns: 0,
                    iterations: jobs::iterations_for(
                        app,
                        (dedicated_s * scale * SECONDS as f64) as Nanos,
                    ),
                })
                .collect()),
            Stream::Generated(g) => Ok(g.generate(cpus, seed, scale)),
            Stream::Swf { jobs, apps } => jobs::swf_stream(jobs, apps, cpus, scale),
        }
    }
}

/// A validated experiment.
#[derive(Clone, Debug)]
pub struct SmpExperiment {
    pub name: String,
    pub description: String,
    pub reproduces: String,
    pub seed: u64,
    pub repetitions: u32,
    pub machine: MachineParams,
    pub policies: Vec<SmpPolicy>,
    pub workloads: Vec<Workload>,
    /// 1 at full scale, 0.01 in quick mode.
    pub scale: f64,
}

/// Whether `path` is a `kind = "smp"` experiment file (read as TOML; any other file is not).
pub fn is_smp_file(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .is_some_and(|t| t.get("kind").and_then(|k| k.as_str()) == Some("smp"))
}

/// Reads and validates an experiment file; `quick` scales every job down 100× and runs at most 2 repetitions.
/// Errors name the file and the field.
pub fn load(path: &Path, quick: bool, repetitions: Option<u32>) -> anyhow::Result<SmpExperiment> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: SmpFile = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    resolve(file, path, quick, repetitions).with_context(|| format!("{}", path.display()))
}

fn resolve(
    file: SmpFile,
    path: &Path,
    quick: bool,
    repetitions: Option<u32>,
) -> anyhow::Result<SmpExperiment> {
    if file.kind != "smp" {
        bail!(
            "kind = \"{}\": this reader takes kind = \"smp\" files",
            file.kind
        );
    }
    if file.name.is_empty()
        || !file
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!("name = \"{}\": use letters, digits, '-' and '_'", file.name);
    }
    let mut repetitions = repetitions.unwrap_or(file.repetitions);
    if repetitions == 0 {
        bail!("repetitions = 0: run at least one");
    }
    if repetitions > MAX_REPETITIONS {
        bail!("repetitions = {repetitions}: more than the limit of {MAX_REPETITIONS}");
    }
    if quick {
        repetitions = repetitions.min(2);
    }
    let m = &file.machine;
    if m.cpus == 0 || m.cpus > 4096 {
        bail!("machine.cpus = {}: give 1..=4096", m.cpus);
    }
    // Every machine time is at most an hour, so the machine's clock arithmetic (`now + slice`, ...) stays far
    // from u64::MAX ns whatever the file says.
    let duration = |field: &str, value: f64, unit: Nanos| -> anyhow::Result<Nanos> {
        let limit = MAX_MACHINE_TIME_NS as f64 / unit as f64;
        if !(value.is_finite() && value >= 0.0) {
            bail!("machine.{field} = {value}: must be a non-negative number");
        }
        if value > limit {
            bail!("machine.{field} = {value}: more than the limit of {limit} (an hour)");
        }
        Ok((value * unit as f64).round() as Nanos)
    };
    let transport = m.transport;
    let latency_ok = transport.latency_us.is_finite() && transport.latency_us >= 0.0;
    let bandwidth_ok = transport.bandwidth_mb_s.is_finite() && transport.bandwidth_mb_s > 0.0;
    if !(latency_ok && bandwidth_ok) {
        bail!("machine.transport: latency_us must be >= 0 and bandwidth_mb_s > 0");
    }
    duration("transport.latency_us", transport.latency_us, MICROS)?;
    if transport.bandwidth_mb_s < MIN_BANDWIDTH_MB_S {
        bail!(
            "machine.transport.bandwidth_mb_s = {}: less than the limit of {MIN_BANDWIDTH_MB_S} (1 KB/s)",
            transport.bandwidth_mb_s
        );
    }
    let machine = MachineParams {
        cpus: m.cpus,
        slice_ns: duration("slice_ms", m.slice_ms, MILLIS)?.max(1),
        native_spin_ns: duration("native_spin_us", m.native_spin_us, MICROS)?,
        context_switch_ns: duration("context_switch_us", m.context_switch_us, MICROS)?,
        cpum_quantum_ns: duration("cpum_quantum_ms", m.cpum_quantum_ms, MILLIS)?.max(1),
        transport,
        ..MachineParams::default()
    };
    if file.policies.is_empty() {
        bail!("policies is empty: name at least one (fifo, none, pb, cs, scs)");
    }
    let policies = file
        .policies
        .iter()
        .map(super::smp_policy)
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let mut labels: Vec<String> = policies.iter().map(label).collect();
    labels.sort();
    if let Some(w) = labels.windows(2).find(|w| w[0] == w[1]) {
        bail!("policies: '{}' is listed twice", w[0]);
    }
    if file.workloads.is_empty() {
        bail!("workloads is empty: give at least one [[workloads]]");
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut workloads = Vec::new();
    for w in &file.workloads {
        let stream = match (&w.apps, &w.generator, &w.swf) {
            (Some(apps), None, None) => {
                let procs = file.procs.ok_or_else(|| {
                    anyhow::anyhow!("workload '{}' lists apps: give procs", w.name)
                })?;
                let dedicated_s = file.dedicated_s.ok_or_else(|| {
                    anyhow::anyhow!("workload '{}' lists apps: give dedicated_s", w.name)
                })?;
                if apps.is_empty() {
                    bail!("workload '{}': apps is empty", w.name);
                }
                if procs == 0 || procs > m.cpus {
                    bail!(
                        "procs = {procs}: a job needs 1..={} processes on this machine",
                        m.cpus
                    );
                }
                if !(dedicated_s.is_finite() && dedicated_s > 0.0) {
                    bail!("dedicated_s = {dedicated_s}: must be positive");
                }
                if dedicated_s > jobs::MAX_RUN_S as f64 {
                    bail!(
                        "dedicated_s = {dedicated_s}: more than the limit of {} s",
                        jobs::MAX_RUN_S
                    );
                }
                Stream::AtZero {
                    apps: apps.clone(),
                    procs,
                    dedicated_s,
                }
            }
            (None, Some(g), None) => {
                g.validate(m.cpus)
                    .map_err(|e| anyhow::anyhow!("workload '{}': generator.{e}", w.name))?;
                Stream::Generated(g.clone())
            }
            (None, None, Some(swf)) => {
                let swf_path = dir.join(swf);
                let text = std::fs::read_to_string(&swf_path).with_context(|| {
                    format!("workload '{}': reading {}", w.name, swf_path.display())
                })?;
                let parsed = jobs::parse_swf(&text, &swf_path.display().to_string())?;
                let apps = w.swf_apps.clone().unwrap_or_else(|| vec![App::Cg]);
                jobs::swf_stream(&parsed, &apps, m.cpus, 1.0).map_err(anyhow::Error::msg)?;
                Stream::Swf { jobs: parsed, apps }
            }
            _ => bail!(
                "workload '{}': give exactly one of apps, generator, swf",
                w.name
            ),
        };
        workloads.push(Workload {
            name: w.name.clone(),
            stream,
        });
    }
    Ok(SmpExperiment {
        name: file.name,
        description: file.description,
        reproduces: file.reproduces,
        seed: file.seed,
        repetitions,
        machine,
        policies,
        workloads,
        scale: if quick { 0.01 } else { 1.0 },
    })
}

/// A policy's configuration label: its own label, with the MPL for CS and SCS (`SCS BI RR MPL 4`).
pub fn label(policy: &SmpPolicy) -> String {
    match policy {
        SmpPolicy::Cs(p) | SmpPolicy::Scs(p) => format!("{} MPL {}", policy.label(), p.mpl),
        _ => policy.label(),
    }
}

/// One run: a workload (1-based), a repetition, a policy.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub workload: usize,
    pub repetition: u32,
    pub policy: usize,
    pub seed: u64,
}

impl SmpExperiment {
    /// Every run, workload by workload, repetition by repetition, policy by policy.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        for workload in 1..=self.workloads.len() {
            for repetition in 0..self.repetitions {
                let seed = self
                    .seed
                    .wrapping_mul(1_000_003)
                    .wrapping_add(workload as u64 * 7_919)
                    .wrapping_add(u64::from(repetition) * 104_729);
                for policy in 0..self.policies.len() {
                    runs.push(Run {
                        workload,
                        repetition,
                        policy,
                        seed,
                    });
                }
            }
        }
        runs
    }

    /// Runs one.
    pub fn run_one(&self, run: &Run) -> anyhow::Result<SmpOutcome> {
        let workload = &self.workloads[run.workload - 1];
        let jobs = workload
            .jobs(self.machine.cpus, run.seed, self.scale)
            .map_err(anyhow::Error::msg)?;
        if jobs.is_empty() {
            bail!(
                "workload '{}' has no jobs in repetition {} (seed {}): raise the load or the horizon",
                workload.name,
                run.repetition,
                run.seed
            );
        }
        Ok(machine::run(
            &self.machine,
            self.policies[run.policy],
            &jobs,
            run.seed,
        )?)
    }

    /// The run's record.
    pub fn record(&self, run: &Run, outcome: &SmpOutcome) -> RunRecord {
        let policy = &self.policies[run.policy];
        let mut extra = BTreeMap::new();
        extra.insert("makespan_s".into(), outcome.makespan_s);
        extra.insert("utilisation".into(), outcome.utilisation);
        extra.insert("fragmentation".into(), outcome.fragmentation);
        extra.insert("context_switches".into(), outcome.context_switches as f64);
        extra.insert("boosts".into(), outcome.boosts as f64);
        extra.insert("events".into(), outcome.events as f64);
        extra.insert(
            "unfinished_jobs".into(),
            outcome.jobs.iter().filter(|j| j.end_ns.is_none()).count() as f64,
        );
        if let Some(mpl) = policy.mpl() {
            extra.insert("mpl".into(), f64::from(mpl));
        }
        for app in App::ALL {
            let of_app: Vec<_> = outcome.jobs.iter().filter(|j| j.spec.app == app).collect();
            if of_app.is_empty() {
                continue;
            }
            let n = of_app.len() as f64;
            extra.insert(
                format!("{}{}", measures::RUN_S, app.name()),
                of_app.iter().map(|j| j.run_s()).sum::<f64>() / n,
            );
            extra.insert(
                format!("{}{}", measures::BLOCKED, app.name()),
                of_app.iter().map(|j| j.blocked_fraction()).sum::<f64>() / n,
            );
        }
        let cpu_s: f64 = outcome.jobs.iter().map(|j| j.cpu_ns as f64 / 1e9).sum();
        let mut jobs = vec![JobResult {
            name: "workload".into(),
            role: JobRole::Parallel,
            response_s: outcome.makespan_s,
            cpu_s,
            fairness: 0.0,
            fairness_min: 0.0,
            fairness_max: 0.0,
        }];
        jobs.extend(outcome.jobs.iter().map(|j| JobResult {
            name: j.spec.name.clone(),
            role: JobRole::Sequential,
            response_s: j.response_s(),
            cpu_s: j.cpu_ns as f64 / 1e9,
            fairness: 0.0,
            fairness_min: 0.0,
            fairness_max: 0.0,
        }));
        let done = outcome.jobs.iter().filter(|j| j.end_ns.is_some()).count() as u64;
        RunRecord {
            experiment: self.name.clone(),
            source: Source::Simulated,
            config: label(policy),
            competitors: run.workload as u32,
            repetition: run.repetition,
            seed: Some(run.seed),
            measurement: Measurement {
                jobs,
                work_done: done,
                work_expected: outcome.jobs.len() as u64,
                rate_per_s: done as f64 / outcome.makespan_s.max(1e-9),
                extra,
                ..Measurement::default()
            },
        }
    }

    /// Runs everything on `threads` threads, ticking `progress` per run; records in [`SmpExperiment::runs`]
    /// order (the results do not depend on the threads).
    pub fn run_all(
        &self,
        threads: usize,
        progress: &ProgressBar,
    ) -> anyhow::Result<Vec<RunRecord>> {
        let runs = self.runs();
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<anyhow::Result<RunRecord>>>> =
            Mutex::new((0..runs.len()).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { break };
                    let result = self.run_one(run).map(|o| self.record(run, &o));
                    results.lock().expect("no worker panicked")[i] = Some(result);
                    progress.inc(1);
                });
            }
        });
        results
            .into_inner()
            .expect("no worker panicked")
            .into_iter()
            .map(|r| r.expect("every run ran"))
            .collect()
    }
}

/// What [`write_all`] wrote.
pub struct Written {
    pub table: String,
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
}

/// `runs.json`, `runs.csv` and `table.md` (per workload and policy: makespan, its slowdown vs FIFO, the mean
/// per-job slowdown vs FIFO, utilisation, fragmentation) under `<out>/<name>/`, and the plots.
pub fn write_all(e: &SmpExperiment, records: &[RunRecord], out: &Path) -> anyhow::Result<Written> {
    let dir = out.join(&e.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = Vec::new();
    let json = dir.join("runs.json");
    cosched_report::write::write_runs_json(&json, records)?;
    files.push(json);
    let csv = dir.join("runs.csv");
    cosched_report::write::write_runs_csv(&csv, records)?;
    files.push(csv);
    let workload_names: Vec<String> = e.workloads.iter().map(|w| w.name.clone()).collect();
    let table = measures::render_table(records, &workload_names);
    let md = dir.join("table.md");
    std::fs::write(&md, &table).with_context(|| format!("writing {}", md.display()))?;
    files.push(md);
    files.extend(measures::plot_all(records, &e.name, &workload_names, &dir)?);
    Ok(Written { table, dir, files })
}
