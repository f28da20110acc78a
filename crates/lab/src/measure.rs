//! One run's measurement from what was sampled: the pure step of a run (no process, no file, no clock), so that
//! every figure of a `RunRecord` can be checked by hand from made-up inputs.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.1 (response time, CPU time, fairness `F = N × Tc / Te`).
//!
//! ## Terminology
//! - `window` — seconds from releasing the job's processes to the last one's exit: the job's response time `Te`,
//!   and the time the competitors are measured over.
//! - `N` — processes pinned to a node's CPU: the job's ranks and the competitors of every node on that CPU
//!   (several nodes may share a CPU).
//! - node CPU — what a node's cpuacct group used over the window: its ranks and its competitors.
//! - rank CPU `Tc` — `(node CPU − the node's competitors' CPU) / ranks per node`, never below 0.
//! - rate time — the job's own elapsed time from its result line (`wall_s`), or the window if it gave none.
//!
//! ## Algorithm
//! ```text
//! competitor c on node n:  F_c = fairness(N(n), cpu_c, window)
//! rank on node n:          Tc_n = max(0, (node_cpu_n − Σ cpu_c of n) / ranks per node)
//!                          F_n = fairness(N(n), Tc_n, window)
//! parallel job:            response = window, CPU = Σ Tc_n × ranks per node, F = mean/min/max of F_n
//! competitors (if any):    response = window, CPU = mean cpu_c, F = mean/min/max of F_c
//! rate                     = work_done / rate time
//! coscheduled_fraction     = the line's time in round trips under 100 µs / rate time
//! foreign_cpus             = (busy − (experiment cgroup + lab + agent)) / window   (`cpustat::foreign_cpus`)
//! experiment_cpus          = experiment cgroup / window
//! agent_cpu_fraction       = agent CPU / window
//! local (lab.local_probe): local_p50_us = max over the node CPUs' probes of wake_delay_p50_us
//!                          local_p99_us = max of wake_delay_p99_us,  local_max_us = max of wake_delay_max_us
//! ```
//! The local figures are the worse CPU's (the local user is as late as its latest CPU lets it be), kept in
//! `extra` under [`LOCAL_P50`], [`LOCAL_P99`], [`LOCAL_MAX`] (absent when the experiment has no probe).

use crate::cpustat;
use crate::programs::RANKS_PER_NODE;
use cosched_agent::proto::AgentStats;
use cosched_bench::result::ResultLine;
use cosched_report::fairness::fairness;
use cosched_report::stats::mean_min_max;
use cosched_report::{JobResult, JobRole, Measurement, RunRecord, Source};
use std::collections::BTreeMap;

/// `extra` keys of a run's local figures (microseconds).
pub const LOCAL_P50: &str = "local_p50_us";
pub const LOCAL_P99: &str = "local_p99_us";
pub const LOCAL_MAX: &str = "local_max_us";

/// One local probe's wake-up delays, microseconds: how late `cosched-local --period-ms 1` woke after its
/// 1 ms sleeps on `cpu` (the `wake_delay_*` fields of its result line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalReading {
    pub cpu: u32,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl LocalReading {
    /// From the probe's result line; an error names the field that is missing, `null` (no wake-up recorded)
    /// or not a non-negative number.
    pub fn from_line(cpu: u32, line: &ResultLine) -> anyhow::Result<LocalReading> {
        let field = |name: &str| -> anyhow::Result<f64> {
            match line.extra.get(name).and_then(|v| v.as_f64()) {
                Some(v) if v >= 0.0 && v.is_finite() => Ok(v),
                Some(v) => {
                    anyhow::bail!("the local probe on CPU {cpu}: {name} = {v} is not a delay")
                }
                None => anyhow::bail!(
                    "the local probe on CPU {cpu} gave no {name} ({}): it recorded no wake-up",
                    line.extra
                        .get(name)
                        .map_or("missing".to_string(), |v| v.to_string())
                ),
            }
        };
        Ok(LocalReading {
            cpu,
            p50_us: field("wake_delay_p50_us")?,
            p99_us: field("wake_delay_p99_us")?,
            max_us: field("wake_delay_max_us")?,
        })
    }
}

/// A run's local figures: the worse p50 and p99 of the node CPUs' probes, the largest of their maxima.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalFigures {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl LocalFigures {
    /// The figures of the probes of one run; `None` without probes.
    pub fn of(readings: &[LocalReading]) -> Option<LocalFigures> {
        let worst = |f: fn(&LocalReading) -> f64| readings.iter().map(f).fold(f64::NAN, f64::max);
        (!readings.is_empty()).then(|| LocalFigures {
            p50_us: worst(|r| r.p50_us),
            p99_us: worst(|r| r.p99_us),
            max_us: worst(|r| r.max_us),
        })
    }

    /// The figures a record carries in `extra`, if it has all three.
    pub fn of_record(measurement: &Measurement) -> Option<LocalFigures> {
        let get = |k: &str| measurement.extra.get(k).copied();
        Some(LocalFigures {
            p50_us: get(LOCAL_P50)?,
            p99_us: get(LOCAL_P99)?,
            max_us: get(LOCAL_MAX)?,
        })
    }

    fn insert_into(&self, extra: &mut BTreeMap<String, f64>) {
        extra.insert(LOCAL_P50.into(), self.p50_us);
        extra.insert(LOCAL_P99.into(), self.p99_us);
        extra.insert(LOCAL_MAX.into(), self.max_us);
    }
}

/// What the run was: the labels of its record and the layout its figures are computed against.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSetting {
    pub experiment: String,
    /// The series label, `configuration, mode` (`runner::series_label`).
    pub series: String,
    /// Competitors per node (K).
    pub competitors: u32,
    pub repetition: u32,
    /// The parallel job's name (the program kind).
    pub job: String,
    /// Units of work asked for; 0 for a duration-bound run.
    pub work_expected: u64,
    /// The CPU each node is pinned to, by node index.
    pub node_cpus: Vec<u32>,
    /// The competitors run in a cpu cgroup of their own (`competitors_cgroup = "own"`), beside the job's of the
    /// same weight.
    pub competitors_apart: bool,
}

impl RunSetting {
    /// `N` of each node's rank in `F = N·Tc/Te`: the inverse of the part of its CPU the kernel's fair scheduler
    /// gives it ([`fair_n`](Self::fair_n)).
    pub fn sharing_per_node(&self) -> Vec<u32> {
        self.per_node(|ranks, competitors| self.fair_n(ranks, competitors))
    }

    /// `N` of each node's competitors, likewise.
    pub fn competitor_sharing_per_node(&self) -> Vec<u32> {
        self.per_node(|ranks, competitors| self.fair_n(competitors, ranks))
    }

    /// `N` of one party (`own` tasks) on a CPU beside another (`other` tasks): in one cgroup, every task there;
    /// with the competitors in a cgroup of their own, the two groups halve the CPU (where both have tasks) and the
    /// party's tasks share its half.
    fn fair_n(&self, own: u32, other: u32) -> u32 {
        if self.competitors_apart && other > 0 {
            2 * own
        } else {
            own + other
        }
    }

    /// `sharing(ranks, competitors)` of each node's CPU, counted over every node pinned there.
    fn per_node(&self, sharing: impl Fn(u32, u32) -> u32) -> Vec<u32> {
        let mut per_cpu: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        for &cpu in &self.node_cpus {
            let (ranks, competitors) = per_cpu.entry(cpu).or_insert((0, 0));
            *ranks += RANKS_PER_NODE;
            *competitors += self.competitors;
        }
        self.node_cpus
            .iter()
            .map(|cpu| {
                let (ranks, competitors) = per_cpu[cpu];
                sharing(ranks, competitors)
            })
            .collect()
    }
}

/// One competitor's CPU time, seconds, and the node it runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompetitorCpu {
    pub node: u32,
    pub cpu_s: f64,
}

/// CPU seconds of each party of a run. Read at one instant ([`crate::runner`]'s sample step) they are
/// cumulative counters; [`CpuTimes::since`] turns two readings into what each party used in between.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuTimes {
    /// Each competitor (in start order).
    pub competitors: Vec<CompetitorCpu>,
    /// Each node's cpuacct group (its ranks and its competitors), by node index.
    pub nodes: Vec<f64>,
    /// Busy time of the experiment's CPUs in `/proc/stat`, whoever was busy.
    pub busy: f64,
    /// The experiment's cgroup (every node).
    pub experiment: f64,
    /// The lab process itself.
    pub lab: f64,
    /// The agent, in agent configurations.
    pub agent: Option<f64>,
}

impl CpuTimes {
    /// What each party used from `start` to `self` (the same parties, read in the same order).
    pub fn since(&self, start: &CpuTimes) -> CpuTimes {
        CpuTimes {
            competitors: self
                .competitors
                .iter()
                .zip(&start.competitors)
                .map(|(end, start)| CompetitorCpu {
                    node: end.node,
                    cpu_s: end.cpu_s - start.cpu_s,
                })
                .collect(),
            nodes: self
                .nodes
                .iter()
                .zip(&start.nodes)
                .map(|(end, start)| end - start)
                .collect(),
            busy: self.busy - start.busy,
            experiment: self.experiment - start.experiment,
            lab: self.lab - start.lab,
            agent: self.agent.map(|a| a - start.agent.unwrap_or(0.0)),
        }
    }
}

/// The run's record: `used` is the CPU each party used over the `window_s` seconds of the job, `line` the
/// reporting process's result line, `agent` the agent's statistics at the end (agent configurations), `local`
/// the local probes' figures (`lab.local_probe`).
pub fn measure(
    setting: &RunSetting,
    used: &CpuTimes,
    window_s: f64,
    line: &ResultLine,
    agent: Option<&AgentStats>,
    local: Option<&LocalFigures>,
) -> RunRecord {
    let nodes = setting.node_cpus.len();
    let sharing = setting.sharing_per_node();
    let competitor_sharing = setting.competitor_sharing_per_node();

    let mut competitor_fairness = Vec::new();
    let mut competitor_cpu = Vec::new();
    let mut node_competitor_cpu = vec![0.0; nodes];
    for c in &used.competitors {
        node_competitor_cpu[c.node as usize] += c.cpu_s;
        competitor_cpu.push(c.cpu_s);
        competitor_fairness.push(fairness(
            competitor_sharing[c.node as usize],
            c.cpu_s,
            window_s,
        ));
    }

    // Per rank (one per node): F = N × (node CPU − competitors' CPU) / job response time.
    let job_response = window_s;
    let rank_cpu: Vec<f64> = (0..nodes)
        .map(|n| ((used.nodes[n] - node_competitor_cpu[n]) / RANKS_PER_NODE as f64).max(0.0))
        .collect();
    let job_fairness: Vec<f64> = (0..nodes)
        .map(|n| fairness(sharing[n], rank_cpu[n], job_response))
        .collect();
    let (f_mean, f_min, f_max) = mean_min_max(&job_fairness);
    let mut jobs = vec![JobResult {
        name: setting.job.clone(),
        role: JobRole::Parallel,
        response_s: job_response,
        cpu_s: rank_cpu.iter().sum::<f64>() * RANKS_PER_NODE as f64,
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

    let rate_time = Some(line.wall_s)
        .filter(|&t| t > 0.0)
        .unwrap_or(job_response);
    let ours = used.experiment + used.lab + used.agent.unwrap_or(0.0);
    let mut extra = BTreeMap::new();
    extra.insert(
        "foreign_cpus".into(),
        cpustat::foreign_cpus(used.busy, ours, window_s),
    );
    extra.insert("experiment_cpus".into(), used.experiment / window_s);
    extra.insert("lab_cpu_s".into(), used.lab);
    extra.insert("window_s".into(), window_s);
    if let Some(s) = line.rtt_under_100us_s.filter(|_| rate_time > 0.0) {
        // The share of the run the job's ranks were coscheduled (round trips that lost no time slice).
        extra.insert("coscheduled_fraction".into(), s / rate_time);
    }
    if let Some(us) = line.rtt_under_100us_mean_us {
        extra.insert("coscheduled_rtt_us".into(), us);
    }
    if let Some(local) = local {
        local.insert_into(&mut extra);
    }
    let mut measurement = Measurement {
        jobs,
        work_done: line.work_done,
        work_expected: setting.work_expected,
        rate_per_s: line.work_done as f64 / rate_time,
        rtt_p50_us: line.rtt_p50_us,
        rtt_p99_us: line.rtt_p99_us,
        rtt_histogram: line.rtt_histogram.clone(),
        agent_cpu_fraction: used.agent.map(|a| a / window_s),
        extra,
        ..Measurement::default()
    };
    if let Some(stats) = agent {
        stats.fill_measurement(&mut measurement);
        // Over the job's window, not the agent's whole life (which includes its start-up).
        measurement.agent_cpu_fraction = used.agent.map(|a| a / window_s);
    }
    RunRecord {
        experiment: setting.experiment.clone(),
        source: Source::Real,
        config: setting.series.clone(),
        competitors: setting.competitors,
        repetition: setting.repetition,
        seed: None,
        measurement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_bench::result::Status;
    use cosched_bench::stats::CpuTimes as ProgramCpu;
    use std::time::Duration;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Two nodes on CPUs 0 and 1, K = 1 competitor each.
    fn setting(competitors: u32, node_cpus: Vec<u32>) -> RunSetting {
        RunSetting {
            experiment: "t".into(),
            series: "no-agent, spin-only".into(),
            competitors,
            repetition: 3,
            job: "pingpong".into(),
            work_expected: 0,
            node_cpus,
            competitors_apart: false,
        }
    }

    /// The pingpong root's line: `work_done` round trips in `wall_s`.
    fn line(work_done: u64, wall_s: f64) -> ResultLine {
        ResultLine::new(
            "pingpong",
            0,
            2,
            Status::Complete,
            work_done,
            Duration::from_secs_f64(wall_s),
            ProgramCpu {
                user_s: 0.5,
                sys_s: 0.0,
            },
        )
    }

    #[test]
    fn sharing_counts_ranks_and_competitors_of_every_node_on_a_cpu() {
        // K = 2: 1 rank + 2 competitors per node. Nodes 0 and 2 share CPU 0: N = 6 there; node 1 alone: N = 3.
        assert_eq!(setting(2, vec![0, 1, 0]).sharing_per_node(), [6, 3, 6]);
        assert_eq!(setting(0, vec![0, 1]).sharing_per_node(), [1, 1]);
        assert_eq!(
            setting(2, vec![0, 1, 0]).competitor_sharing_per_node(),
            [6, 3, 6]
        );
    }

    #[test]
    fn competitors_in_a_cgroup_of_their_own_halve_the_cpu_with_the_job() {
        // K = 2 apart: the job's group and the competitors' each get half of a CPU; a rank alone in its half
        // (N = 2), each competitor a quarter (N = 4). Two nodes on CPU 0: two ranks share the job's half.
        let apart = |k, cpus| RunSetting {
            competitors_apart: true,
            ..setting(k, cpus)
        };
        assert_eq!(apart(2, vec![0, 1]).sharing_per_node(), [2, 2]);
        assert_eq!(apart(2, vec![0, 1]).competitor_sharing_per_node(), [4, 4]);
        assert_eq!(apart(1, vec![0, 1, 0]).sharing_per_node(), [4, 2, 4]);
        assert_eq!(
            apart(1, vec![0, 1, 0]).competitor_sharing_per_node(),
            [4, 2, 4]
        );
        // No competitors: the job has its CPU to itself.
        assert_eq!(apart(0, vec![0, 1]).sharing_per_node(), [1, 1]);
    }

    #[test]
    fn cpu_used_is_end_minus_start_party_by_party() {
        let start = CpuTimes {
            competitors: vec![CompetitorCpu {
                node: 1,
                cpu_s: 10.0,
            }],
            nodes: vec![100.0, 200.0],
            busy: 1000.0,
            experiment: 300.0,
            lab: 5.0,
            agent: Some(0.5),
        };
        let end = CpuTimes {
            competitors: vec![CompetitorCpu {
                node: 1,
                cpu_s: 11.5,
            }],
            nodes: vec![101.0, 203.0],
            busy: 1004.0,
            experiment: 304.0,
            lab: 5.25,
            agent: Some(0.75),
        };
        assert_eq!(
            end.since(&start),
            CpuTimes {
                competitors: vec![CompetitorCpu {
                    node: 1,
                    cpu_s: 1.5,
                }],
                nodes: vec![1.0, 3.0],
                busy: 4.0,
                experiment: 4.0,
                lab: 0.25,
                agent: Some(0.25),
            }
        );
    }

    #[test]
    fn a_run_without_competitors_has_a_dedicated_cpu_per_rank() {
        // 2 nodes, K = 0: N = 1. Window 2 s; node 0's group used 1.8 s, node 1's 1.6 s.
        // Tc = 1.8 and 1.6; F = 1 × 1.8 / 2 = 0.9 and 0.8; mean 0.85. Job CPU 3.4 s.
        // 4000 round trips in the program's own 1.6 s: 2500/s.
        let used = CpuTimes {
            nodes: vec![1.8, 1.6],
            busy: 3.6,
            experiment: 3.4,
            lab: 0.1,
            ..CpuTimes::default()
        };
        let record = measure(
            &setting(0, vec![0, 1]),
            &used,
            2.0,
            &line(4000, 1.6),
            None,
            None,
        );
        assert_eq!(record.config, "no-agent, spin-only");
        assert_eq!((record.competitors, record.repetition), (0, 3));
        assert_eq!(record.source, Source::Real);
        let m = &record.measurement;
        assert_eq!(m.jobs.len(), 1, "no competitor job without competitors");
        let job = m.parallel_job().unwrap();
        assert_eq!(job.name, "pingpong");
        assert!(close(job.response_s, 2.0));
        assert!(close(job.cpu_s, 3.4));
        assert!(close(job.fairness, 0.85));
        assert!(close(job.fairness_min, 0.8) && close(job.fairness_max, 0.9));
        assert_eq!(m.work_done, 4000);
        assert!(close(m.rate_per_s, 2500.0));
        // Foreign: busy 3.6 − ours (3.4 + 0.1) = 0.1 s over 2 s = 0.05 CPUs. Experiment: 3.4 / 2 = 1.7 CPUs.
        assert!(close(m.extra["foreign_cpus"], 0.05));
        assert!(close(m.extra["experiment_cpus"], 1.7));
        assert!(close(m.extra["lab_cpu_s"], 0.1));
        assert!(close(m.extra["window_s"], 2.0));
        assert!(!m.extra.contains_key("coscheduled_fraction"));
        assert_eq!(m.agent_cpu_fraction, None);
        assert_eq!(m.rtt_p50_us, None);
    }

    #[test]
    fn competitors_take_their_cpu_out_of_the_node_and_get_their_own_fairness() {
        // K = 1 on 2 nodes: N = 2 on each CPU. Window 4 s.
        // Node 0: group 4.0 s, its competitor 2.4 s → rank Tc = 1.6, F = 2 × 1.6 / 4 = 0.8.
        // Node 1: group 3.8 s, its competitor 1.8 s → rank Tc = 2.0, F = 2 × 2.0 / 4 = 1.0.
        // Job: CPU 3.6 s, F mean 0.9, min 0.8, max 1.0.
        // Competitors: F = 2 × 2.4 / 4 = 1.2 and 2 × 1.8 / 4 = 0.9: mean 1.05; CPU mean (2.4 + 1.8) / 2 = 2.1 s.
        let used = CpuTimes {
            competitors: vec![
                CompetitorCpu {
                    node: 0,
                    cpu_s: 2.4,
                },
                CompetitorCpu {
                    node: 1,
                    cpu_s: 1.8,
                },
            ],
            nodes: vec![4.0, 3.8],
            busy: 7.8,
            experiment: 7.8,
            lab: 0.0,
            agent: None,
        };
        let mut line = line(1000, 4.0);
        // 1.0 s of round trips under 100 µs, mean 12.5 µs: coscheduled a quarter of the 4 s.
        line.rtt_under_100us_s = Some(1.0);
        line.rtt_under_100us_mean_us = Some(12.5);
        line.rtt_p50_us = Some(40.0);
        line.rtt_p99_us = Some(900.0);
        let record = measure(&setting(1, vec![0, 1]), &used, 4.0, &line, None, None);
        let m = &record.measurement;
        let job = m.parallel_job().unwrap();
        assert!(close(job.cpu_s, 3.6));
        assert!(close(job.fairness, 0.9));
        assert!(close(job.fairness_min, 0.8) && close(job.fairness_max, 1.0));
        let comp = m.competitors().unwrap();
        assert_eq!(comp.name, "calcula");
        assert!(close(comp.response_s, 4.0));
        assert!(close(comp.cpu_s, 2.1));
        assert!(close(comp.fairness, 1.05));
        assert!(close(comp.fairness_min, 0.9) && close(comp.fairness_max, 1.2));
        assert!(close(m.rate_per_s, 250.0));
        assert!(close(m.extra["coscheduled_fraction"], 0.25));
        assert!(close(m.extra["coscheduled_rtt_us"], 12.5));
        assert_eq!((m.rtt_p50_us, m.rtt_p99_us), (Some(40.0), Some(900.0)));
        assert!(close(m.extra["foreign_cpus"], 0.0));
    }

    #[test]
    fn a_rank_never_gets_negative_cpu_and_a_line_without_elapsed_time_uses_the_window() {
        // Accounting noise: the competitor's own clock saw 2.1 s, its node's group 2.0 s → rank Tc = 0, not −0.1.
        // The line's wall time is 0 (a program that did nothing timed): the rate is over the 2 s window.
        let used = CpuTimes {
            competitors: vec![CompetitorCpu {
                node: 0,
                cpu_s: 2.1,
            }],
            nodes: vec![2.0],
            ..CpuTimes::default()
        };
        let record = measure(&setting(1, vec![0]), &used, 2.0, &line(10, 0.0), None, None);
        let job = record.measurement.parallel_job().unwrap();
        assert_eq!((job.cpu_s, job.fairness), (0.0, 0.0));
        assert!(close(record.measurement.rate_per_s, 5.0));
    }

    #[test]
    fn nodes_sharing_a_cpu_count_each_others_processes() {
        // 3 nodes on CPUs 0, 1, 0, K = 1: N = 4 on CPU 0 (two ranks, two competitors), 2 on CPU 1. Window 2 s.
        // Node 0: group 1.0, competitor 0.5 → Tc 0.5, F = 4 × 0.5 / 2 = 1.0.
        // Node 1: group 2.0, competitor 1.0 → Tc 1.0, F = 2 × 1.0 / 2 = 1.0.
        // Node 2: group 1.0, competitor 0.6 → Tc 0.4, F = 4 × 0.4 / 2 = 0.8.
        let used = CpuTimes {
            competitors: [(0, 0.5), (1, 1.0), (2, 0.6)]
                .map(|(node, cpu_s)| CompetitorCpu { node, cpu_s })
                .to_vec(),
            nodes: vec![1.0, 2.0, 1.0],
            ..CpuTimes::default()
        };
        let record = measure(
            &setting(1, vec![0, 1, 0]),
            &used,
            2.0,
            &line(1, 1.0),
            None,
            None,
        );
        let job = record.measurement.parallel_job().unwrap();
        assert!(close(job.fairness_min, 0.8) && close(job.fairness_max, 1.0));
        assert!(close(job.fairness, 2.8 / 3.0));
        // Competitors: 4 × 0.5 / 2 = 1.0, 2 × 1.0 / 2 = 1.0, 4 × 0.6 / 2 = 1.2.
        let comp = record.measurement.competitors().unwrap();
        assert!(close(comp.fairness_max, 1.2) && close(comp.fairness_min, 1.0));
    }

    #[test]
    fn the_agents_cpu_counts_as_ours_and_over_the_window() {
        // Agent used 0.2 s of a 4 s window: 5 % of a CPU, whatever its own statistics say over its whole life.
        // Busy 8.0 − (7.5 + 0.1 + 0.2) = 0.2 s foreign over 4 s = 0.05 CPUs.
        let used = CpuTimes {
            nodes: vec![3.75, 3.75],
            busy: 8.0,
            experiment: 7.5,
            lab: 0.1,
            agent: Some(0.2),
            ..CpuTimes::default()
        };
        let stats = AgentStats {
            boosts_granted: 7,
            agent_cpu_fraction: 0.5,
            ..AgentStats::default()
        };
        let record = measure(
            &setting(0, vec![0, 1]),
            &used,
            4.0,
            &line(1, 4.0),
            Some(&stats),
            None,
        );
        let m = &record.measurement;
        assert_eq!(m.boosts_granted, 7);
        assert!(close(m.agent_cpu_fraction.unwrap(), 0.05));
        assert!(close(m.extra["foreign_cpus"], 0.05));
        assert_eq!(
            LocalFigures::of_record(m),
            None,
            "no probe, no local figures"
        );
        assert!(!m.extra.contains_key(LOCAL_P50));
    }

    /// A probe's result line as `cosched-local` prints it at SIGINT (the fields the lab reads).
    fn probe_line(p50: Option<f64>, p99: Option<f64>, max: Option<f64>) -> ResultLine {
        ResultLine::new(
            "local",
            0,
            1,
            Status::Stopped,
            2000,
            Duration::from_secs(2),
            ProgramCpu {
                user_s: 0.01,
                sys_s: 0.02,
            },
        )
        .with("period_ms", 1.0)
        .with("wake_delay_p50_us", p50)
        .with("wake_delay_p99_us", p99)
        .with("wake_delay_max_us", max)
    }

    #[test]
    fn local_figures_are_the_worse_cpus_percentiles_and_the_largest_maximum() {
        // CPU 0: p50 60, p99 900, max 4000. CPU 1: p50 75, p99 400, max 12000.
        // Worse p50 = 75 (CPU 1), worse p99 = 900 (CPU 0), max = 12000 (CPU 1): the figures mix CPUs.
        let readings = [
            LocalReading::from_line(0, &probe_line(Some(60.0), Some(900.0), Some(4000.0))).unwrap(),
            LocalReading::from_line(1, &probe_line(Some(75.0), Some(400.0), Some(12000.0)))
                .unwrap(),
        ];
        assert_eq!(
            readings[1],
            LocalReading {
                cpu: 1,
                p50_us: 75.0,
                p99_us: 400.0,
                max_us: 12000.0
            }
        );
        let figures = LocalFigures::of(&readings).unwrap();
        assert_eq!(
            figures,
            LocalFigures {
                p50_us: 75.0,
                p99_us: 900.0,
                max_us: 12000.0
            }
        );
        assert_eq!(LocalFigures::of(&readings[..1]).unwrap().max_us, 4000.0);
        assert_eq!(LocalFigures::of(&[]), None);

        // Into the record's extra, and back.
        let used = CpuTimes {
            nodes: vec![1.0, 1.0],
            ..CpuTimes::default()
        };
        let record = measure(
            &setting(0, vec![0, 1]),
            &used,
            2.0,
            &line(10, 2.0),
            None,
            Some(&figures),
        );
        let m = &record.measurement;
        assert_eq!(
            (m.extra[LOCAL_P50], m.extra[LOCAL_P99], m.extra[LOCAL_MAX]),
            (75.0, 900.0, 12000.0)
        );
        assert_eq!(LocalFigures::of_record(m), Some(figures));
    }

    #[test]
    fn a_probe_line_without_wake_ups_or_with_a_bad_delay_is_an_error_naming_the_field() {
        // A probe stopped before its first wake-up prints null percentiles.
        let err = LocalReading::from_line(1, &probe_line(None, None, None))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("CPU 1")
                && err.contains("wake_delay_p50_us")
                && err.contains("no wake-up"),
            "{err}"
        );
        let err = LocalReading::from_line(0, &probe_line(Some(1.0), Some(-3.0), Some(5.0)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("wake_delay_p99_us = -3"), "{err}");
        // A line that is not a probe's at all.
        let err = LocalReading::from_line(0, &line(1, 1.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    }
}
