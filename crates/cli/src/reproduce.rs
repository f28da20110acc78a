//! `cosched reproduce` — the main job: seed `000_e8004e1596fde6a5.txt`'s experiments in the simulator and,
//! where the machine allows it (root, a BPF build of the agent, cgroup v1), the same question asked of the real
//! kernel by the lab, then one table that puts the two side by side.
//!
//! The question both answer: at K competitors per node, how much faster does a ping-pong run with dynamic
//! coscheduling than without it, and what share of the CPU does the job take for it (fairness
//! `F = N Tcpu / Twall`, seed `000` §4.1.1)? The simulator answers with the seed's Latency experiment (Solaris
//! 2.4 TS dispatcher, `No DCS` vs `DCS` configurations); the lab with a TCP ping-pong between two network
//! namespaces on this kernel, without and with `cosched agent`.

use anyhow::Context;
use clap::Args;
use cosched_report::summary::{summarize, SummaryRow};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Simulated experiments: a file or a directory of them.
    #[arg(long, default_value = "experiments/sim")]
    pub sim: PathBuf,
    /// The real experiment run beside them when the machine allows it.
    #[arg(long, default_value = "experiments/lab/headline.toml")]
    pub lab: PathBuf,
    /// Run only the simulator.
    #[arg(long)]
    pub sim_only: bool,
    /// Scale the simulated runs down 100× (a first look; the real run is unchanged).
    #[arg(long)]
    pub quick: bool,
    /// Results go to DIR/<experiment>/ and DIR/sim-vs-real.md.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
}

/// The simulated experiment the comparison reads (seed `000` Figure 3).
const SIM_LATENCY: &str = "fig03-latency";

/// Which simulated and real series answer the same question: (receive mode, simulated without / with DCS,
/// real without / with the agent). Simulated names are prefixes (the DCS ones carry their E and C).
const PAIRS: [(&str, [&str; 2], [&str; 2]); 2] = [
    (
        "spin-only",
        ["No DCS, spin only", "DCS, spin only"],
        ["no-agent, spin-only", "agent, spin-only"],
    ),
    (
        "spin-block",
        ["No DCS, spin-block", "DCS, spin-block"],
        ["no-agent, spin-block", "agent, spin-block"],
    ),
];

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    cosched_sim::cli::run(cosched_sim::cli::SimArgs {
        path: args.sim.clone(),
        out: args.out.clone(),
        repetitions: None,
        quick: args.quick,
        threads: None,
    })?;

    let lab_name = if args.sim_only {
        println!("real run: skipped (--sim-only)");
        None
    } else {
        match why_no_lab() {
            Some(why) => {
                println!("real run: skipped — this machine cannot run the lab: {why}");
                None
            }
            None => {
                let experiment = cosched_lab::LabExperiment::load(&args.lab)?;
                cosched_lab::cli::run(cosched_lab::cli::LabArgs {
                    file: args.lab.clone(),
                    bench_dir: None,
                    mpi_dir: None,
                    results_dir: args.out.clone(),
                    check: false,
                })?;
                Some(experiment.name)
            }
        }
    };

    let sim = load_summary(&args.out.join(SIM_LATENCY))?;
    let real = match &lab_name {
        Some(name) => load_summary(&args.out.join(name))?,
        None => None,
    };
    let Some(sim) = sim else {
        println!(
            "(no {SIM_LATENCY} results under {}: nothing to compare)",
            args.out.display()
        );
        return Ok(());
    };
    let table = side_by_side(&sim, real.as_deref().unwrap_or(&[]));
    println!("\n{table}");
    let path = args.out.join("sim-vs-real.md");
    std::fs::write(&path, &table).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Why the lab cannot run here, if it cannot.
fn why_no_lab() -> Option<String> {
    let mut problems = cosched_lab::preflight::machine_problems();
    if !cosched_agent::HAS_BPF {
        problems.push(cosched_agent::BPF_MISSING_MESSAGE.to_string());
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn load_summary(dir: &Path) -> anyhow::Result<Option<Vec<SummaryRow>>> {
    let path = dir.join("runs.json");
    if !path.exists() {
        return Ok(None);
    }
    let records = cosched_report::write::read_runs_json(&path)?;
    Ok(Some(summarize(&records)?))
}

fn find<'a>(rows: &'a [SummaryRow], prefix: &str, k: u32) -> Option<&'a SummaryRow> {
    rows.iter()
        .find(|r| r.competitors == k && r.config.starts_with(prefix))
}

/// One Markdown table: per receive mode and K, the speed-up from coscheduling (rate with / rate without) and
/// the job's and the competitors' F with it, simulated and real.
pub fn side_by_side(sim: &[SummaryRow], real: &[SummaryRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Dynamic coscheduling, simulated (seed 000, Solaris 2.4 model) and real (this kernel, cosched agent)\n"
    );
    let _ = writeln!(
        out,
        "Speed-up = ping-pong rate with coscheduling / without, at K CPU-bound competitors per node; F = N Tcpu / \
         Twall of the job and of the competitors with coscheduling (1 = fair share).{}\n",
        if real.is_empty() {
            " The real columns are empty: the lab did not run on this machine."
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "| mode | K | simulated speed-up | simulated job F | simulated comp. F | real speed-up | real job F | real comp. F |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut ks: Vec<u32> = sim
        .iter()
        .chain(real)
        .map(|r| r.competitors)
        .filter(|&k| k > 0)
        .collect();
    ks.sort_unstable();
    ks.dedup();
    for (mode, sim_names, real_names) in PAIRS {
        for &k in &ks {
            let s = cells(sim, sim_names, k);
            let r = cells(real, real_names, k);
            if s.is_none() && r.is_none() {
                continue;
            }
            let dash = || ["-".to_string(), "-".to_string(), "-".to_string()];
            let [s1, s2, s3] = s.unwrap_or_else(dash);
            let [r1, r2, r3] = r.unwrap_or_else(dash);
            let _ = writeln!(
                out,
                "| {mode} | {k} | {s1} | {s2} | {s3} | {r1} | {r2} | {r3} |"
            );
        }
    }
    out
}

/// Speed-up, job F and competitor F for one pair of series at K, formatted.
fn cells(rows: &[SummaryRow], names: [&str; 2], k: u32) -> Option<[String; 3]> {
    let without = find(rows, names[0], k)?;
    let with = find(rows, names[1], k)?;
    let speedup = with.rate_per_s.mean / without.rate_per_s.mean;
    let comp = with
        .competitor_fairness
        .as_ref()
        .map_or("-".to_string(), |f| format!("{:.2}", f.mean));
    Some([
        format!("{speedup:.2}×"),
        format!("{:.2}", with.job_fairness.mean),
        comp,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_report::stats::Estimate;
    use cosched_report::Source;

    fn row(config: &str, k: u32, rate: f64, f: f64) -> SummaryRow {
        let e = |mean| Estimate {
            mean,
            half_width: None,
            n: 1,
        };
        SummaryRow {
            experiment: "x".into(),
            source: Source::Simulated,
            config: config.into(),
            competitors: k,
            runs: 1,
            response_s: e(1.0),
            cpu_s: e(1.0),
            job_fairness: e(f),
            competitor_fairness: (k > 0).then(|| e(1.0)),
            rate_per_s: e(rate),
            work_done: 1,
            work_expected: 1,
            incomplete_runs: 0,
            boosts_granted: e(0.0),
            boosts_refused: e(0.0),
            jobs: vec![],
        }
    }

    #[test]
    fn pairs_the_series_by_mode_and_competitors() {
        let sim = vec![
            row("No DCS, spin only", 2, 100.0, 0.9),
            row("DCS, spin only, E=-1, C=0", 2, 1000.0, 1.2),
        ];
        let real = vec![
            row("no-agent, spin-only", 2, 10_000.0, 0.95),
            row("agent, spin-only", 2, 30_000.0, 1.01),
        ];
        let t = side_by_side(&sim, &real);
        // 1000 / 100 = 10× simulated; 30000 / 10000 = 3× real; F of the coscheduled series.
        assert!(
            t.contains("| spin-only | 2 | 10.00× | 1.20 | 1.00 | 3.00× | 1.01 | 1.00 |"),
            "{t}"
        );
        // No spin-block series anywhere: no spin-block line.
        assert!(!t.contains("| spin-block |"), "{t}");
    }

    #[test]
    fn without_a_real_run_the_real_columns_are_dashes() {
        let sim = vec![
            row("No DCS, spin-block", 1, 50.0, 0.8),
            row("DCS, spin-block, E=2, C=100", 1, 60.0, 0.95),
        ];
        let t = side_by_side(&sim, &[]);
        // 60 / 50 = 1.2×.
        assert!(
            t.contains("| spin-block | 1 | 1.20× | 0.95 | 1.00 | - | - | - |"),
            "{t}"
        );
        assert!(t.contains("the lab did not run"), "{t}");
    }
}
