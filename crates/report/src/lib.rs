//! # cosched-report — one result schema for the simulator and the lab
//!
//! A [`Measurement`] is what one run of one configuration measured, whether the run was simulated
//! (`cosched sim`) or real (`cosched lab`); a [`RunRecord`] adds the labels that place it in an experiment.
//! Both halves emit the same structs, so a simulated and a real run compare field by field.
//!
//! Metrics (seed `000_e8004e1596fde6a5.txt` §4.1.1):
//! - job response time — wall-clock time from job start to completion;
//! - CPU time — user + system CPU time of the job's processes;
//! - fairness `F = N × Tc / Te` per process — `Tc` its CPU time, `Te` its response time, `N` the number of
//!   processes sharing its CPU; `F = 1` is a fair share.
//!
//! | module | what |
//! |---|---|
//! | [`schema`] | `Measurement`, `RunRecord`, `JobResult`, `Histogram` |
//! | [`claims`] | a headline claim as data: the paper's words, statistics, thresholds given once, interval-aware verdicts |
//! | [`docdata`] | figures from data: a measured table of the docs as `docs/data/<name>.json`, rendered between markers in the pages and checked against them |
//! | [`fairness`] | `F = N × Tc / Te` of one process |
//! | [`headlines`] | a seed paper's headline claims against this run's results (`results/headlines.json`) |
//! | [`stats`] | mean and 90 % Student-t confidence interval (the seed's statistic); mean, min, max of a run's values |
//! | [`summary`] | repetitions → one row per (configuration, competitors), per job too |
//! | [`table`] | text tables of summary rows |
//! | [`write`] | `runs.json`, `runs.csv`, `summary.csv`, `summary_jobs.csv` |
//! | [`plot`] | SVG plots: metric vs competitors (log or linear), job bars, round-trip histograms |

pub mod buckets;
pub mod claims;
pub mod docdata;
pub mod fairness;
pub mod headlines;
pub mod plot;
pub mod schema;
pub mod stats;
pub mod summary;
pub mod table;
pub mod write;

pub use schema::*;
