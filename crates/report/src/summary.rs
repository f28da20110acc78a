//! Repeated runs → one summary row per (configuration, competitors): the points of the seed's figures.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.1 (metrics) and §4.2 (Figures 3–8). Each point of a figure is the mean
//! of the repetitions with a 90 % Student-t interval ([`crate::stats`]). The same function summarises simulated
//! (`Source::Simulated`) and real (`Source::Real`) runs.

use crate::stats::{mean_ci90, Estimate};
use crate::{JobRole, RunRecord, Source};
use serde::{Deserialize, Serialize};

/// One job's statistics over the repetitions of one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    pub name: String,
    pub role: JobRole,
    pub response_s: Estimate,
    pub cpu_s: Estimate,
    pub fairness: Estimate,
}

/// One point: a configuration at one number of competitors, over all its repetitions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub experiment: String,
    pub source: Source,
    pub config: String,
    pub competitors: u32,
    /// Repetitions summarised.
    pub runs: u32,
    /// The parallel job's response time (seconds), CPU time (seconds) and fairness F.
    pub response_s: Estimate,
    pub cpu_s: Estimate,
    pub job_fairness: Estimate,
    /// The competitors' fairness F, when the point had competitors.
    pub competitor_fairness: Option<Estimate>,
    /// Work units per second of job response time (round trips/s, barriers/s, iterations/s).
    pub rate_per_s: Estimate,
    /// Correctness count: work done and asked for, summed over the repetitions.
    pub work_done: u64,
    pub work_expected: u64,
    /// Repetitions that stopped before the job finished (`work_done < work_expected`).
    pub incomplete_runs: u32,
    pub boosts_granted: Estimate,
    pub boosts_refused: Estimate,
    /// Every job of the point (parallel, sequential, competitors), in the order the runs reported them.
    pub jobs: Vec<JobSummary>,
    /// Each of the measurements' extras that every repetition reported (a simulator counter, a job's figure such
    /// as `is.comm_wait_s`), over the repetitions.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, Estimate>,
}

/// Groups `records` by (experiment, configuration, competitors) and summarises each group. Configurations keep
/// the order in which they first appear; competitors are ascending. Fails if a run has no parallel job.
pub fn summarize(records: &[RunRecord]) -> anyhow::Result<Vec<SummaryRow>> {
    let mut order: Vec<(&str, &str)> = Vec::new();
    for r in records {
        if !order.contains(&(r.experiment.as_str(), r.config.as_str())) {
            order.push((r.experiment.as_str(), r.config.as_str()));
        }
    }
    let mut rows = Vec::new();
    for (experiment, config) in order {
        let mut competitor_counts: Vec<u32> = records
            .iter()
            .filter(|r| r.experiment == experiment && r.config == config)
            .map(|r| r.competitors)
            .collect();
        competitor_counts.sort_unstable();
        competitor_counts.dedup();
        for competitors in competitor_counts {
            let group: Vec<&RunRecord> = records
                .iter()
                .filter(|r| {
                    r.experiment == experiment && r.config == config && r.competitors == competitors
                })
                .collect();
            rows.push(summarize_point(&group)?);
        }
    }
    Ok(rows)
}

/// Summarises the repetitions of one point (all the same experiment, configuration and competitors).
fn summarize_point(group: &[&RunRecord]) -> anyhow::Result<SummaryRow> {
    let first = group[0];
    let mut response = Vec::new();
    let mut cpu = Vec::new();
    let mut fairness = Vec::new();
    let mut competitor_fairness = Vec::new();
    for r in group {
        let job = r.measurement.parallel_job().ok_or_else(|| {
            anyhow::anyhow!(
                "run {} / {} / {} competitors / repetition {} has no parallel job; every run must report its \
                 parallel job (role = parallel) to be summarised",
                r.experiment,
                r.config,
                r.competitors,
                r.repetition
            )
        })?;
        response.push(job.response_s);
        cpu.push(job.cpu_s);
        fairness.push(job.fairness);
        if let Some(c) = r.measurement.competitors() {
            competitor_fairness.push(c.fairness);
        }
    }
    let of = |values: Vec<f64>| mean_ci90(&values).expect("a point has at least one run");
    let measured = |f: fn(&RunRecord) -> f64| of(group.iter().map(|r| f(r)).collect());
    Ok(SummaryRow {
        experiment: first.experiment.clone(),
        source: first.source,
        config: first.config.clone(),
        competitors: first.competitors,
        runs: group.len() as u32,
        response_s: of(response),
        cpu_s: of(cpu),
        job_fairness: of(fairness),
        competitor_fairness: mean_ci90(&competitor_fairness),
        rate_per_s: measured(|r| r.measurement.rate_per_s),
        work_done: group.iter().map(|r| r.measurement.work_done).sum(),
        work_expected: group.iter().map(|r| r.measurement.work_expected).sum(),
        incomplete_runs: group
            .iter()
            .filter(|r| r.measurement.work_done < r.measurement.work_expected)
            .count() as u32,
        boosts_granted: measured(|r| r.measurement.boosts_granted as f64),
        boosts_refused: measured(|r| r.measurement.boosts_refused as f64),
        jobs: summarize_jobs(group),
        extra: summarize_extras(group),
    })
}

/// The extras every run of the group reported, each over the runs.
fn summarize_extras(group: &[&RunRecord]) -> std::collections::BTreeMap<String, Estimate> {
    group[0]
        .measurement
        .extra
        .keys()
        .filter_map(|name| {
            let values: Option<Vec<f64>> = group
                .iter()
                .map(|r| r.measurement.extra.get(name).copied())
                .collect();
            Some((name.clone(), mean_ci90(&values?)?))
        })
        .collect()
}

/// Per-job statistics, matching jobs across repetitions by name.
fn summarize_jobs(group: &[&RunRecord]) -> Vec<JobSummary> {
    let mut names: Vec<(&str, JobRole)> = Vec::new();
    for r in group {
        for j in &r.measurement.jobs {
            if !names.iter().any(|(n, _)| *n == j.name) {
                names.push((j.name.as_str(), j.role));
            }
        }
    }
    names
        .into_iter()
        .map(|(name, role)| {
            let jobs: Vec<_> = group
                .iter()
                .flat_map(|r| r.measurement.jobs.iter().filter(|j| j.name == name))
                .collect();
            let of = |f: fn(&crate::JobResult) -> f64| {
                mean_ci90(&jobs.iter().map(|j| f(j)).collect::<Vec<_>>())
                    .expect("the job appeared at least once")
            };
            JobSummary {
                name: name.to_string(),
                role,
                response_s: of(|j| j.response_s),
                cpu_s: of(|j| j.cpu_s),
                fairness: of(|j| j.fairness),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{JobResult, Measurement};

    pub(crate) fn job(
        name: &str,
        role: JobRole,
        response_s: f64,
        cpu_s: f64,
        fairness: f64,
    ) -> JobResult {
        JobResult {
            name: name.into(),
            role,
            response_s,
            cpu_s,
            fairness,
            fairness_min: fairness,
            fairness_max: fairness,
        }
    }

    pub(crate) fn record(
        config: &str,
        competitors: u32,
        repetition: u32,
        response_s: f64,
    ) -> RunRecord {
        // A latency-like run: 1000 round trips; the job uses half its wall time on the CPU.
        let mut jobs = vec![job(
            "latency",
            JobRole::Parallel,
            response_s,
            response_s / 2.0,
            1.0,
        )];
        if competitors > 0 {
            jobs.push(job(
                "competitor",
                JobRole::Competitor,
                response_s,
                response_s / 2.0,
                0.9,
            ));
        }
        RunRecord {
            experiment: "test".into(),
            source: Source::Simulated,
            config: config.into(),
            competitors,
            repetition,
            seed: Some(repetition as u64),
            measurement: Measurement {
                jobs,
                work_done: 1000,
                work_expected: 1000,
                rate_per_s: 1000.0 / response_s,
                boosts_granted: 3,
                ..Default::default()
            },
        }
    }

    #[test]
    fn groups_by_config_in_first_seen_order_and_competitors_ascending() {
        let records = vec![
            record("b", 2, 0, 1.0),
            record("a", 0, 0, 1.0),
            record("b", 0, 0, 2.0),
            record("b", 0, 1, 4.0),
        ];
        let rows = summarize(&records).unwrap();
        let keys: Vec<_> = rows
            .iter()
            .map(|r| (r.config.as_str(), r.competitors, r.runs))
            .collect();
        assert_eq!(keys, vec![("b", 0, 2), ("b", 2, 1), ("a", 0, 1)]);
        // b at 0 competitors: responses 2 and 4 → mean 3; rates 500 and 250 → mean 375.
        assert_eq!(rows[0].response_s.mean, 3.0);
        assert_eq!(rows[0].rate_per_s.mean, 375.0);
        assert_eq!(rows[0].work_done, 2000);
        assert_eq!(rows[0].competitor_fairness, None);
        assert_eq!(rows[1].competitor_fairness.unwrap().mean, 0.9);
    }

    #[test]
    fn incomplete_runs_are_counted_not_hidden() {
        let mut r = record("a", 1, 0, 1.0);
        r.measurement.work_done = 10;
        let rows = summarize(&[r, record("a", 1, 1, 1.0)]).unwrap();
        assert_eq!(rows[0].incomplete_runs, 1);
        assert_eq!((rows[0].work_done, rows[0].work_expected), (1010, 2000));
    }

    #[test]
    fn a_run_without_a_parallel_job_is_an_error_naming_it() {
        let mut r = record("a", 1, 4, 1.0);
        r.measurement.jobs.retain(|j| j.role != JobRole::Parallel);
        let err = summarize(&[r]).unwrap_err().to_string();
        assert!(err.contains("repetition 4 has no parallel job"), "{err}");
    }

    #[test]
    fn every_job_is_summarised_by_name() {
        let rows = summarize(&[record("a", 1, 0, 2.0), record("a", 1, 1, 4.0)]).unwrap();
        let names: Vec<_> = rows[0].jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["latency", "competitor"]);
        // CPU = response / 2: (1 + 2) / 2 = 1.5.
        assert_eq!(rows[0].jobs[0].cpu_s.mean, 1.5);
    }
}
