//! Text tables of summary rows, as `cosched sim` and `cosched lab` print them.
//!
//! The main table is one line per (configuration, competitors) with the metrics of seed
//! `000_e8004e1596fde6a5.txt` §4.1.1: the parallel job's mean response time with its 90 % Student-t interval,
//! its CPU time, its fairness `F = N × Tc / Te`, the competitors' F, the work rate and the correctness count.
//! The job table (Mixed workload, Figures 7–8) has one line per job.

use crate::docdata::DocTable;
use crate::stats::Estimate;
use crate::summary::SummaryRow;
use comfy_table::presets::{ASCII_MARKDOWN, UTF8_BORDERS_ONLY};
use comfy_table::{CellAlignment, Table};

/// Kept here too, where the tables' callers have always found it.
pub use crate::stats::significant;

/// `mean ± half width`, both with the mean's precision.
pub fn with_interval(e: &Estimate) -> String {
    let mean = significant(e.mean);
    match e.half_width {
        Some(h) => {
            let decimals = mean.split('.').nth(1).map_or(0, |d| d.len());
            format!("{mean} ± {h:.decimals$}")
        }
        None => mean,
    }
}

/// How a table is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Box-drawing borders, for the terminal.
    Terminal,
    /// A GitHub-flavoured Markdown table, for docs.
    Markdown,
}

fn new_table(style: Style, header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(match style {
            Style::Terminal => UTF8_BORDERS_ONLY,
            Style::Markdown => ASCII_MARKDOWN,
        })
        .set_header(header.to_vec());
    table
}

fn right_align_from(table: &mut Table, first: usize) {
    let columns = table.column_count();
    for i in first..columns {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// The main table: one line per point.
pub fn render_summary(rows: &[SummaryRow]) -> String {
    render_summary_styled(rows, Style::Terminal)
}

/// The main table's header.
const SUMMARY_HEADER: [&str; 9] = [
    "configuration",
    "competitors",
    "runs",
    "response s (90% CI)",
    "CPU s",
    "job F",
    "competitor F",
    "rate /s",
    "work done",
];

/// The main table's cells, one row per point.
pub fn summary_cells(rows: &[SummaryRow]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            let work = if r.incomplete_runs == 0 {
                format!("{}", r.work_done)
            } else {
                format!(
                    "{}/{} ({} incomplete)",
                    r.work_done, r.work_expected, r.incomplete_runs
                )
            };
            vec![
                r.config.clone(),
                r.competitors.to_string(),
                r.runs.to_string(),
                with_interval(&r.response_s),
                significant(r.cpu_s.mean),
                format!("{:.3}", r.job_fairness.mean),
                r.competitor_fairness
                    .map_or("-".into(), |f| format!("{:.3}", f.mean)),
                significant(r.rate_per_s.mean),
                work,
            ]
        })
        .collect()
}

/// The main table drawn in `style`.
pub fn render_summary_styled(rows: &[SummaryRow], style: Style) -> String {
    let mut table = new_table(style, &SUMMARY_HEADER);
    for cells in summary_cells(rows) {
        table.add_row(cells);
    }
    right_align_from(&mut table, 1);
    table.to_string()
}

/// The main table as a docs table (`docs/data/<name>.json`), not yet stamped.
pub fn summary_doc_table(name: &str, rows: &[SummaryRow]) -> DocTable {
    let mut table = DocTable::new(name, SUMMARY_HEADER);
    for cells in summary_cells(rows) {
        table.push(cells);
    }
    table
}

/// One line per job per point (for workloads with sequential jobs, e.g. the seed's Mixed workload).
pub fn render_jobs(rows: &[SummaryRow]) -> String {
    render_jobs_styled(rows, Style::Terminal)
}

/// The job table's header.
const JOBS_HEADER: [&str; 7] = [
    "configuration",
    "competitors",
    "job",
    "role",
    "response s (90% CI)",
    "CPU s",
    "F",
];

/// The job table's cells, one row per job per point.
pub fn jobs_cells(rows: &[SummaryRow]) -> Vec<Vec<String>> {
    rows.iter()
        .flat_map(|r| {
            r.jobs.iter().map(|j| {
                vec![
                    r.config.clone(),
                    r.competitors.to_string(),
                    j.name.clone(),
                    format!("{:?}", j.role).to_lowercase(),
                    with_interval(&j.response_s),
                    significant(j.cpu_s.mean),
                    format!("{:.3}", j.fairness.mean),
                ]
            })
        })
        .collect()
}

/// The job table drawn in `style`.
pub fn render_jobs_styled(rows: &[SummaryRow], style: Style) -> String {
    let mut table = new_table(style, &JOBS_HEADER);
    for cells in jobs_cells(rows) {
        table.add_row(cells);
    }
    right_align_from(&mut table, 4);
    table.to_string()
}

/// The job table as a docs table, not yet stamped.
pub fn jobs_doc_table(name: &str, rows: &[SummaryRow]) -> DocTable {
    let mut table = DocTable::new(name, JOBS_HEADER);
    for cells in jobs_cells(rows) {
        table.push(cells);
    }
    table
}

/// At the largest competitor count, each configuration's mean response time as a multiple of the fastest
/// configuration's, and its job F: `(competitors, [(configuration, ratio, F)])`, `None` without rows.
pub fn ratios_at_most_competitors(rows: &[SummaryRow]) -> Option<(u32, Vec<[String; 3]>)> {
    let most = rows.iter().map(|r| r.competitors).max()?;
    let at: Vec<&SummaryRow> = rows.iter().filter(|r| r.competitors == most).collect();
    let best = at
        .iter()
        .map(|r| r.response_s.mean)
        .fold(f64::INFINITY, f64::min);
    let lines = at
        .iter()
        .map(|r| {
            [
                r.config.clone(),
                significant(r.response_s.mean / best),
                format!("{:.3}", r.job_fairness.mean),
            ]
        })
        .collect();
    Some((most, lines))
}

/// [`ratios_at_most_competitors`] as a docs table, not yet stamped.
pub fn ratios_doc_table(name: &str, rows: &[SummaryRow]) -> DocTable {
    let (most, lines) = ratios_at_most_competitors(rows).unwrap_or((0, Vec::new()));
    let mut table = DocTable::new(
        name,
        [
            "configuration".to_string(),
            format!("response time / fastest at {most} competitors"),
            "job F".to_string(),
        ],
    );
    for line in lines {
        table.push(line.to_vec());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::summarize;
    use crate::summary::tests::record;

    #[test]
    fn four_significant_digits() {
        assert_eq!(significant(1234.5678), "1235");
        assert_eq!(significant(12.345678), "12.35");
        assert_eq!(significant(0.00123456), "0.001235");
        assert_eq!(significant(12_345_678.0), "1.235e7");
        assert_eq!(significant(0.0), "0");
    }

    #[test]
    fn interval_uses_the_means_precision() {
        let e = Estimate {
            mean: 12.3456,
            half_width: Some(0.04321),
            n: 3,
        };
        assert_eq!(with_interval(&e), "12.35 ± 0.04");
    }

    #[test]
    fn summary_table_has_one_line_per_point() {
        // Two repetitions at 2 competitors: responses 2 and 4 s → mean 3 s, s = 1.414, t(0.95,1) = 6.314,
        // half width = 6.314 × 1.414 / 1.414 = 6.314 → "3.000 ± 6.314".
        let rows = summarize(&[record("DCS", 2, 0, 2.0), record("DCS", 2, 1, 4.0)]).unwrap();
        let text = render_summary(&rows);
        assert!(text.contains("DCS"), "{text}");
        assert!(text.contains("3.000 ± 6.314"), "{text}");
        assert!(text.contains("0.900"), "{text}");
        let jobs = render_jobs(&rows);
        assert!(jobs.contains("competitor"), "{jobs}");
        let markdown = render_summary_styled(&rows, Style::Markdown);
        assert!(
            markdown.lines().nth(1).unwrap().starts_with("|--"),
            "{markdown}"
        );
    }
}
