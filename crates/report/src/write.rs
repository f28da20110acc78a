//! Result files: `runs.json` (every [`RunRecord`], lossless), `runs.csv` (one line per run and job),
//! `summary.csv` (one line per point) and `summary_jobs.csv` (one line per point and job).
//!
//! The files are byte-for-byte reproducible: records are written in the order given (the caller sorts them),
//! numbers with Rust's shortest round-trip formatting, maps in key order.

use crate::summary::SummaryRow;
use crate::{JobRole, RunRecord, Source};
use anyhow::Context;
use serde::Serialize;
use std::path::Path;

/// Writes all records as pretty JSON (an array of [`RunRecord`]).
pub fn write_runs_json(path: &Path, records: &[RunRecord]) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(records).context("serialising run records to JSON")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Reads records written by [`write_runs_json`].
pub fn read_runs_json(path: &Path) -> anyhow::Result<Vec<RunRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a JSON array of run records", path.display()))
}

#[derive(Serialize)]
struct RunJobLine<'a> {
    experiment: &'a str,
    source: Source,
    config: &'a str,
    competitors: u32,
    repetition: u32,
    seed: Option<u64>,
    job: &'a str,
    role: JobRole,
    response_s: f64,
    cpu_s: f64,
    fairness: f64,
    fairness_min: f64,
    fairness_max: f64,
    work_done: u64,
    work_expected: u64,
    rate_per_s: f64,
    rtt_p50_us: Option<f64>,
    rtt_p99_us: Option<f64>,
    boosts_granted: u64,
    boosts_refused: u64,
    reaction_p50_us: Option<f64>,
    reaction_p99_us: Option<f64>,
    agent_cpu_fraction: Option<f64>,
}

/// One CSV line per run and job (a long table: filter on `role = parallel` for the job's own values).
pub fn write_runs_csv(path: &Path, records: &[RunRecord]) -> anyhow::Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    for r in records {
        let m = &r.measurement;
        for j in &m.jobs {
            w.serialize(RunJobLine {
                experiment: &r.experiment,
                source: r.source,
                config: &r.config,
                competitors: r.competitors,
                repetition: r.repetition,
                seed: r.seed,
                job: &j.name,
                role: j.role,
                response_s: j.response_s,
                cpu_s: j.cpu_s,
                fairness: j.fairness,
                fairness_min: j.fairness_min,
                fairness_max: j.fairness_max,
                work_done: m.work_done,
                work_expected: m.work_expected,
                rate_per_s: m.rate_per_s,
                rtt_p50_us: m.rtt_p50_us,
                rtt_p99_us: m.rtt_p99_us,
                boosts_granted: m.boosts_granted,
                boosts_refused: m.boosts_refused,
                reaction_p50_us: m.reaction_p50_us,
                reaction_p99_us: m.reaction_p99_us,
                agent_cpu_fraction: m.agent_cpu_fraction,
            })?;
        }
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))
}

#[derive(Serialize)]
struct SummaryLine<'a> {
    experiment: &'a str,
    source: Source,
    config: &'a str,
    competitors: u32,
    runs: u32,
    response_s_mean: f64,
    response_s_ci90: Option<f64>,
    cpu_s_mean: f64,
    cpu_s_ci90: Option<f64>,
    job_fairness_mean: f64,
    job_fairness_ci90: Option<f64>,
    competitor_fairness_mean: Option<f64>,
    competitor_fairness_ci90: Option<f64>,
    rate_per_s_mean: f64,
    rate_per_s_ci90: Option<f64>,
    work_done: u64,
    work_expected: u64,
    incomplete_runs: u32,
    boosts_granted_mean: f64,
    boosts_refused_mean: f64,
}

/// One CSV line per point: the parallel job's statistics (mean and 90 % half width) and the competitors' F.
pub fn write_summary_csv(path: &Path, rows: &[SummaryRow]) -> anyhow::Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    for r in rows {
        w.serialize(SummaryLine {
            experiment: &r.experiment,
            source: r.source,
            config: &r.config,
            competitors: r.competitors,
            runs: r.runs,
            response_s_mean: r.response_s.mean,
            response_s_ci90: r.response_s.half_width,
            cpu_s_mean: r.cpu_s.mean,
            cpu_s_ci90: r.cpu_s.half_width,
            job_fairness_mean: r.job_fairness.mean,
            job_fairness_ci90: r.job_fairness.half_width,
            competitor_fairness_mean: r.competitor_fairness.map(|f| f.mean),
            competitor_fairness_ci90: r.competitor_fairness.and_then(|f| f.half_width),
            rate_per_s_mean: r.rate_per_s.mean,
            rate_per_s_ci90: r.rate_per_s.half_width,
            work_done: r.work_done,
            work_expected: r.work_expected,
            incomplete_runs: r.incomplete_runs,
            boosts_granted_mean: r.boosts_granted.mean,
            boosts_refused_mean: r.boosts_refused.mean,
        })?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))
}

#[derive(Serialize)]
struct JobSummaryLine<'a> {
    experiment: &'a str,
    source: Source,
    config: &'a str,
    competitors: u32,
    job: &'a str,
    role: JobRole,
    runs: u32,
    response_s_mean: f64,
    response_s_ci90: Option<f64>,
    cpu_s_mean: f64,
    cpu_s_ci90: Option<f64>,
    fairness_mean: f64,
    fairness_ci90: Option<f64>,
}

/// One CSV line per point and job (the seed's Figures 7 and 8 are drawn from these).
pub fn write_job_summary_csv(path: &Path, rows: &[SummaryRow]) -> anyhow::Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    for r in rows {
        for j in &r.jobs {
            w.serialize(JobSummaryLine {
                experiment: &r.experiment,
                source: r.source,
                config: &r.config,
                competitors: r.competitors,
                job: &j.name,
                role: j.role,
                runs: j.response_s.n,
                response_s_mean: j.response_s.mean,
                response_s_ci90: j.response_s.half_width,
                cpu_s_mean: j.cpu_s.mean,
                cpu_s_ci90: j.cpu_s.half_width,
                fairness_mean: j.fairness.mean,
                fairness_ci90: j.fairness.half_width,
            })?;
        }
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::summarize;
    use crate::summary::tests::record;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cosched-report-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn json_round_trips_and_csv_has_a_line_per_job() {
        let dir = temp_dir("write");
        let records = vec![
            record("DCS, spin-only", 1, 0, 2.0),
            record("DCS, spin-only", 0, 0, 1.0),
        ];
        write_runs_json(&dir.join("runs.json"), &records).unwrap();
        assert_eq!(read_runs_json(&dir.join("runs.json")).unwrap(), records);

        write_runs_csv(&dir.join("runs.csv"), &records).unwrap();
        let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
        // Header + 2 jobs (1 competitor) + 1 job (0 competitors) = 4 lines; the label's comma is quoted.
        assert_eq!(csv.lines().count(), 4, "{csv}");
        assert!(csv
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("test,simulated,\"DCS, spin-only\",1,0,0,latency,parallel"));

        let rows = summarize(&records).unwrap();
        write_summary_csv(&dir.join("summary.csv"), &rows).unwrap();
        let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
        assert!(summary.starts_with(
            "experiment,source,config,competitors,runs,response_s_mean,response_s_ci90"
        ));
        // One run per point: no interval, written as an empty field.
        assert!(summary.contains(",0,1,1.0,,"), "{summary}");
        write_job_summary_csv(&dir.join("summary_jobs.csv"), &rows).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("summary_jobs.csv"))
                .unwrap()
                .lines()
                .count(),
            4
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
