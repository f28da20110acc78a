//! Seed `001_cc73854eda2a0ea6.txt`'s measures, from run records (the one copy: the experiment's table, its
//! plots and the seed's claims all call these).
//!
//! ```text
//! makespan slowdown (E1)  = makespan(policy) / makespan(FIFO)                      same workload and repetition
//! job slowdown (E2)       = mean over jobs j of response_j(policy) / response_j(FIFO)   jobs matched by name
//! CV of an app (E1, %)    = 100 · stdev / mean, over the workloads that run it, of the app's mean run time
//!                           (start to end) in each workload under one policy (population stdev)
//! ```
//! Each slowdown is one value per repetition; a point is their mean with its 90 % Student-t interval
//! (`cosched_report::stats::mean_ci90`). Notes §001.5.7: E1's slowdown is probably the makespan ratio and E2's
//! the mean per-job ratio; both are reported.

use cosched_report::stats::{mean_ci90, Estimate};
use cosched_report::{JobRole, RunRecord};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `extra` key prefix of an app's mean run time (s) in a run: `run_s.MG`.
pub const RUN_S: &str = "run_s.";
/// `extra` key prefix of an app's mean fraction of time blocked in receives: `blocked.MG`.
pub const BLOCKED: &str = "blocked.";
/// The reference policy's label.
pub const FIFO: &str = "FIFO";

/// The configurations of `records`, in first-seen order.
pub fn configs(records: &[RunRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.config) {
            out.push(r.config.clone());
        }
    }
    out
}

fn runs<'a>(
    records: &'a [RunRecord],
    workload: u32,
    config: &'a str,
) -> impl Iterator<Item = &'a RunRecord> + 'a {
    records
        .iter()
        .filter(move |r| r.competitors == workload && r.config == config)
}

fn fifo_run(records: &[RunRecord], workload: u32, repetition: u32) -> Option<&RunRecord> {
    runs(records, workload, FIFO).find(|r| r.repetition == repetition)
}

fn makespan(r: &RunRecord) -> f64 {
    r.measurement
        .extra
        .get("makespan_s")
        .copied()
        .unwrap_or(f64::NAN)
}

/// Per repetition, `config`'s makespan over FIFO's on workload `workload`.
pub fn makespan_slowdowns(records: &[RunRecord], workload: u32, config: &str) -> Vec<f64> {
    runs(records, workload, config)
        .filter_map(|r| {
            fifo_run(records, workload, r.repetition).map(|f| makespan(r) / makespan(f))
        })
        .collect()
}

/// Per repetition, the mean over jobs of `config`'s response time over FIFO's for the same job.
pub fn job_slowdowns(records: &[RunRecord], workload: u32, config: &str) -> Vec<f64> {
    runs(records, workload, config)
        .filter_map(|r| {
            let fifo = fifo_run(records, workload, r.repetition)?;
            let reference: BTreeMap<&str, f64> = fifo
                .measurement
                .jobs
                .iter()
                .filter(|j| j.role == JobRole::Sequential)
                .map(|j| (j.name.as_str(), j.response_s))
                .collect();
            let ratios: Vec<f64> = r
                .measurement
                .jobs
                .iter()
                .filter(|j| j.role == JobRole::Sequential)
                .filter_map(|j| reference.get(j.name.as_str()).map(|f| j.response_s / f))
                .collect();
            (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64)
        })
        .collect()
}

/// The mean over repetitions of an `extra` figure of `config` on `workload`.
pub fn extra_estimate(
    records: &[RunRecord],
    workload: u32,
    config: &str,
    key: &str,
) -> Option<Estimate> {
    let values: Vec<f64> = runs(records, workload, config)
        .filter_map(|r| r.measurement.extra.get(key).copied())
        .collect();
    mean_ci90(&values)
}

/// The coefficient of variation (%) of `app`'s mean run time across the workloads that run it, under `config`;
/// `None` if fewer than two workloads run it.
pub fn app_cv(records: &[RunRecord], config: &str, app: &str) -> Option<f64> {
    let key = format!("{RUN_S}{app}");
    let mut workloads: Vec<u32> = records.iter().map(|r| r.competitors).collect();
    workloads.sort_unstable();
    workloads.dedup();
    let means: Vec<f64> = workloads
        .iter()
        .filter_map(|&w| extra_estimate(records, w, config, &key).map(|e| e.mean))
        .collect();
    if means.len() < 2 {
        return None;
    }
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let variance = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n;
    Some(100.0 * variance.sqrt() / mean)
}

fn shown(e: Option<Estimate>) -> String {
    e.map_or("—".into(), |e| e.display(2))
}

/// A markdown table per workload: each policy's makespan, makespan and mean job slowdown vs FIFO,
/// utilisation, fragmentation and context switches.
pub fn render_table(records: &[RunRecord], workload_names: &[String]) -> String {
    let mut out = String::new();
    for (i, name) in workload_names.iter().enumerate() {
        let w = i as u32 + 1;
        out.push_str(&format!(
            "\n### workload {w}: {name}\n\n| policy | makespan s | makespan / FIFO | mean job response / FIFO | utilisation | fragmentation | context switches |\n|---|---|---|---|---|---|---|\n"
        ));
        for config in configs(records) {
            if runs(records, w, &config).next().is_none() {
                continue;
            }
            out.push_str(&format!(
                "| {config} | {} | {} | {} | {} | {} | {} |\n",
                shown(extra_estimate(records, w, &config, "makespan_s")),
                shown(mean_ci90(&makespan_slowdowns(records, w, &config))),
                shown(mean_ci90(&job_slowdowns(records, w, &config))),
                shown(extra_estimate(records, w, &config, "utilisation")),
                shown(extra_estimate(records, w, &config, "fragmentation")),
                extra_estimate(records, w, &config, "context_switches")
                    .map_or("—".into(), |e| format!("{:.0}", e.mean)),
            ));
        }
    }
    out
}

/// A configuration label split into its policy and its MPL: `SCS BI RR MPL 4` → (`SCS BI RR`, 4).
pub fn policy_and_mpl(config: &str) -> Option<(&str, u32)> {
    let (policy, mpl) = config.rsplit_once(" MPL ")?;
    Some((policy, mpl.parse().ok()?))
}

/// The paper's Figure 4: mean job slowdown vs FIFO against the MPL, one line per policy and workload; `None`
/// when no policy runs at two MPLs or more (E1).
fn plot_against_mpl(
    records: &[RunRecord],
    name: &str,
    workload_names: &[String],
    dir: &Path,
) -> anyhow::Result<Option<PathBuf>> {
    let mut families: Vec<&str> = Vec::new();
    let configs = configs(records);
    for config in &configs {
        if let Some((policy, _)) = policy_and_mpl(config) {
            if !families.contains(&policy) {
                families.push(policy);
            }
        }
    }
    let mut series: Vec<(String, Vec<(f64, Estimate)>)> = Vec::new();
    for (i, workload) in workload_names.iter().enumerate() {
        for &family in &families {
            let points: Vec<(f64, Estimate)> = configs
                .iter()
                .filter_map(|c| {
                    policy_and_mpl(c)
                        .filter(|(p, _)| *p == family)
                        .map(|(_, m)| (c, m))
                })
                .filter_map(|(c, mpl)| {
                    mean_ci90(&job_slowdowns(records, i as u32 + 1, c)).map(|e| (f64::from(mpl), e))
                })
                .collect();
            if points.len() >= 2 {
                series.push((format!("{family}, {workload}"), points));
            }
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    let path = dir.join("job-slowdown-vs-mpl.svg");
    cosched_report::plot::plot_series(
        &path,
        &format!("{name}: mean job response / FIFO's against the MPL"),
        "MPL (processes per CPU)",
        "mean job response / FIFO's",
        &series,
        cosched_report::plot::Scale::Linear,
    )?;
    Ok(Some(path))
}

/// The experiment's plots: makespan and mean job slowdown vs FIFO, one line per policy against the workload
/// number, and, where policies run at several MPLs, the job slowdown against the MPL (none when the experiment
/// does not run FIFO).
pub fn plot_all(
    records: &[RunRecord],
    name: &str,
    workload_names: &[String],
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut workloads: Vec<u32> = records.iter().map(|r| r.competitors).collect();
    workloads.sort_unstable();
    workloads.dedup();
    let mut files = Vec::new();
    for (file, y_label, measure) in [
        (
            "makespan-slowdown.svg",
            "makespan / FIFO's",
            makespan_slowdowns as fn(&[RunRecord], u32, &str) -> Vec<f64>,
        ),
        (
            "job-slowdown.svg",
            "mean job response / FIFO's",
            job_slowdowns,
        ),
    ] {
        let series: Vec<(String, Vec<(f64, Estimate)>)> = configs(records)
            .into_iter()
            .map(|config| {
                let points = workloads
                    .iter()
                    .filter_map(|&w| {
                        mean_ci90(&measure(records, w, &config)).map(|e| (f64::from(w), e))
                    })
                    .collect();
                (config, points)
            })
            .collect();
        // Without FIFO in the experiment there is no slowdown to plot.
        if series.iter().all(|(_, points)| points.is_empty()) {
            continue;
        }
        let path = dir.join(file);
        cosched_report::plot::plot_series(
            &path,
            &format!("{name}: {y_label}"),
            "workload",
            y_label,
            &series,
            cosched_report::plot::Scale::Log,
        )?;
        files.push(path);
    }
    files.extend(plot_against_mpl(records, name, workload_names, dir)?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_splits_into_policy_and_mpl() {
        assert_eq!(policy_and_mpl("SCS BI RR MPL 4"), Some(("SCS BI RR", 4)));
        assert_eq!(
            policy_and_mpl("CS SB800 Msg MPL 6"),
            Some(("CS SB800 Msg", 6))
        );
        assert_eq!(policy_and_mpl("FIFO"), None);
    }
}
