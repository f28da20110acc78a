//! Experiment files: TOML → validated runs → results, tables and plots.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4 (Figures 3–9). An experiment is a set of scheduling configurations (the
//! lines of a figure: `No DCS, spin only`, `DCS, spin-block, E=2, C=100`, ...) swept over the number of CPU-bound
//! competitors per node (the x-axis), each point repeated with its own seed. Every point is reported as the mean
//! and 90 % Student-t interval of its repetitions, with the seed's metrics (§4.1.1): job response time, CPU
//! time and fairness `F = N × Tc / Te`.
//!
//! | module | what |
//! |---|---|
//! | [`file`](mod@file) | the file as written (serde, unknown fields rejected, units in field names; a policy is the policy crate's `PolicyConfig` table) |
//! | [`resolve`] | validation with field-naming errors; the list of (configuration, competitors, repetition, seed, scenario) runs |
//! | [`runner`] | runs on all cores, results in plan order (independent of the thread count) |
//! | [`output`] | header, table, `runs.json` / `runs.csv` / `summary.csv`, plots of Figures 3–9 |
//!
//! The shipped files are in `experiments/sim/`; `cosched sim <file or directory>` runs them.

pub mod file;
pub mod output;
pub mod resolve;
pub mod runner;

pub use resolve::{
    load, parse, run_seed, Configuration, Experiment, ExperimentError, JobStream, Overrides,
    PlannedRun, Problem, StreamArrivals,
};

use std::path::{Path, PathBuf};

/// The experiment files named by `path`: the file itself, or every `*.toml` in the directory, sorted by name.
pub fn discover(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("listing {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        if files.is_empty() {
            anyhow::bail!(
                "{}: no *.toml experiment files in this directory",
                path.display()
            );
        }
        Ok(files)
    } else if path.is_file() {
        Ok(vec![path.to_path_buf()])
    } else {
        anyhow::bail!(
            "{}: no such experiment file or directory (try experiments/sim)",
            path.display()
        )
    }
}

#[cfg(test)]
mod tests;
