//! `cosched reproduce [SEED...]` — the main job: each seed paper's experiments in the simulator and, where the
//! machine allows it (root, a BPF build of the agent, cgroup v1), on the real kernel through the lab; then each
//! seed's headline claims computed from the results this run just wrote, into `<out>/headlines.json` (see
//! [`cosched_report::headlines`]) and printed as a table.
//!
//! Seeds built so far: `000` (`000_e8004e1596fde6a5.txt`, dynamic coscheduling: the Latency, Barrier, Mixed and
//! `ts_slpret` ablation experiments in the simulator, and a TCP ping-pong between two network namespaces with
//! and without `cosched agent` on this kernel), `001` (`001_cc73854eda2a0ea6.txt`, Self Co-Scheduling: E1 and
//! E2 on a simulated 64-CPU shared-memory machine; no real experiment yet), `003` (`003_d5c4b72e5fa91aa6.txt`,
//! predictive coscheduling on Linux 2.2: IS, MG and master–slave against local calcula tasks in the simulator;
//! no real experiment yet), `004` (`004_3903357666129396.txt`, DYNAMICQ: its Figures 1–2 in the simulator) and
//! `002` (`002_53dfbd94bd660dc4.txt`, DCS on Windows NT 4.0: its Figures 2–3 in the simulator). 001, 002 and
//! 004 run only when named.
//!
//! Adding a seed: one module `reproduce/seed_NNN.rs` with its claims as data (`cosched_report::claims::Claim`),
//! one short function per claim that reads its values through the shared readers of `reproduce/claims.rs`, a
//! `claims` function (`claims::judge_all` over the two lists) and its experiment names; and one row of [`SEEDS`].

mod claims;
mod seed_000;
mod seed_001;
mod seed_002;
mod seed_003;
mod seed_004;

use anyhow::Context;
use claims::{RealClaim, SimCheck};
use clap::Args;
use cosched_lab::output::ComparisonRow;
use cosched_report::claims::Claim;
use cosched_report::docdata::{self, DocTable, Stamp};
use cosched_report::headlines::{self, Headline, Scale};
use cosched_report::summary::{summarize, SummaryRow};
use cosched_report::table::Style;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Seeds to reproduce, by number (e.g. 000); default: 000 and 003 (001, 002 and 004 run when named: 001's
    /// full-scale simulations take minutes; 002's about 7 s).
    #[arg(value_name = "SEED")]
    pub seeds: Vec<String>,
    /// Where the experiment files are: DIR/sim/<experiment>.toml and DIR/lab/<experiment>.toml.
    #[arg(long, value_name = "DIR", default_value = "experiments")]
    pub experiments: PathBuf,
    /// Run only the simulator (the real claims are written as "not run").
    #[arg(long)]
    pub sim_only: bool,
    /// Scale the simulated runs down 100× (a first look; the real run is unchanged). Some claims need the full
    /// scale; they are computed all the same and marked `"scale": "quick"`.
    #[arg(long)]
    pub quick: bool,
    /// Results go to DIR/<experiment>/, DIR/headlines.json and each seed's comparison file
    /// (DIR/sim-vs-real.md for seed 000).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
    /// Also write each seed's measured tables for the docs, built from this run's results, as DIR/<name>.json
    /// (`--doc-data docs/data`, then `cosched docs tables` to re-render the pages); with the real half, the lab's
    /// comparison too (`lab-<experiment>.json`). Full scale only.
    #[arg(long, value_name = "DIR")]
    pub doc_data: Option<PathBuf>,
}

/// What one seed's claims are computed from: this run's summaries.
pub struct SeedResults {
    /// `quick` when the simulated runs were scaled down.
    pub scale: Scale,
    /// Each simulated experiment's summary rows, by experiment name.
    pub sim: BTreeMap<String, Vec<SummaryRow>>,
    /// Each simulated experiment's run records, by experiment name (for measures paired run by run, such as
    /// seed 001's slowdowns against FIFO).
    pub sim_runs: BTreeMap<String, Vec<cosched_report::RunRecord>>,
    /// The real experiment's results, or why there are none (`--sim-only`, the machine, a failed run, or a seed
    /// without a real experiment).
    pub real: Result<RealResults, String>,
}

/// The real experiment's results: the common summary and the lab's paired comparison (agent against its
/// baseline and against the fair-coscheduling bound), and the experiments skipped, with why.
pub struct RealResults {
    pub summary: Vec<SummaryRow>,
    pub comparison: Vec<ComparisonRow>,
    /// Experiments on a program that is not ours (the system's LAMMPS) that this machine lacks: their claims
    /// are `not run`, the others are judged.
    pub skipped: BTreeMap<String, String>,
}

/// A seed that `cosched reproduce` runs.
pub struct Seed {
    /// The seed paper's number (`000`).
    pub id: &'static str,
    /// The seed file under `seeds/`.
    pub paper: &'static str,
    /// Simulated experiments: `<experiments>/sim/<name>.toml`, whose `name` is `<name>`.
    pub sim: &'static [&'static str],
    /// The real experiments, run in this order (none: the seed has no real half): each
    /// `<experiments>/lab/<name>.toml`, whose `name` is `<name>`.
    pub lab: &'static [&'static str],
    /// The seed's headline claims checked on the simulation, each with the function that reads its statistic.
    pub sim_claims: &'static [(&'static Claim, SimCheck)],
    /// Those checked on the real run.
    pub real_claims: &'static [RealClaim],
    /// An extra comparison file of the seed, if any.
    pub comparison: Option<Comparison>,
    /// The seed's measured tables in the docs (`docs/data/<name>.json`), built from this run's results, if it
    /// has any; an `Err` says what the run lacks.
    pub doc_tables: Option<DocTables>,
    /// Whether `cosched reproduce` with no seed named runs it: a seed whose full-scale simulation takes minutes
    /// (001, 002) runs only when named, so that the default stays a few minutes.
    pub by_default: bool,
}

impl Seed {
    /// The seed's headlines in this run.
    pub fn judge(&self, results: &SeedResults) -> Vec<Headline> {
        claims::judge_all(self.id, results, self.sim_claims, self.real_claims)
    }
}

/// A seed's tables for the docs, from this run's results (not yet stamped).
pub type DocTables = fn(&SeedResults) -> Result<Vec<DocTable>, String>;

/// A seed's extra comparison file: its name under the results directory and its text in this run (`None` when
/// the run lacks what it needs).
pub struct Comparison {
    pub file: &'static str,
    pub render: fn(&SeedResults) -> Option<String>,
}

/// Every seed built so far, in the order they run and appear in `headlines.json`.
pub const SEEDS: &[Seed] = &[
    Seed {
        id: seed_000::SEED,
        paper: "000_e8004e1596fde6a5.txt",
        sim: seed_000::SIM_EXPERIMENTS,
        lab: seed_000::LAB_EXPERIMENTS,
        sim_claims: seed_000::SIM_CLAIMS,
        real_claims: seed_000::REAL_CLAIMS,
        comparison: Some(Comparison {
            file: "sim-vs-real.md",
            render: seed_000::sim_vs_real,
        }),
        doc_tables: Some(seed_000::doc_tables),
        by_default: true,
    },
    Seed {
        id: seed_001::SEED,
        paper: "001_cc73854eda2a0ea6.txt",
        sim: seed_001::SIM_EXPERIMENTS,
        lab: &[],
        sim_claims: seed_001::SIM_CLAIMS,
        real_claims: seed_001::REAL_CLAIMS,
        comparison: None,
        // Several minutes at full scale on two cores (docs/sim-scs.md): `cosched reproduce 001`.
        doc_tables: Some(seed_001::doc_tables),
        by_default: false,
    },
    Seed {
        id: seed_002::SEED,
        paper: "002_53dfbd94bd660dc4.txt",
        sim: seed_002::SIM_EXPERIMENTS,
        lab: &[],
        sim_claims: seed_002::SIM_CLAIMS,
        real_claims: seed_002::REAL_CLAIMS,
        comparison: None,
        // About 7 s (13 CPU-seconds) at full scale here: `cosched reproduce 002`.
        doc_tables: Some(seed_002::doc_tables),
        by_default: false,
    },
    Seed {
        id: seed_003::SEED,
        paper: "003_d5c4b72e5fa91aa6.txt",
        sim: seed_003::SIM_EXPERIMENTS,
        lab: &[],
        sim_claims: seed_003::SIM_CLAIMS,
        real_claims: seed_003::REAL_CLAIMS,
        comparison: None,
        doc_tables: Some(seed_003::doc_tables),
        by_default: true,
    },
    Seed {
        id: seed_004::SEED,
        paper: "004_3903357666129396.txt",
        sim: seed_004::SIM_EXPERIMENTS,
        lab: &[],
        sim_claims: seed_004::SIM_CLAIMS,
        real_claims: seed_004::REAL_CLAIMS,
        comparison: Some(Comparison {
            file: "dynamicq-figures.md",
            render: seed_004::figures,
        }),
        doc_tables: Some(seed_004::doc_tables),
        by_default: false,
    },
];

/// The seed papers (SPEC.md), so that a seed not built yet gets a clearer message than an unknown one.
const SEED_PAPERS: [(&str, &str); 5] = [
    ("000", "dynamic coscheduling (DCS), Solaris 2.4 + Myrinet"),
    ("001", "Self Co-Scheduling (SCS)"),
    ("002", "demand-based coscheduling on Windows NT"),
    ("003", "predictive coscheduling, Linux 2.2"),
    ("004", "DYNAMICQ, dynamic quantum"),
];

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    let seeds = select_seeds(&args.seeds)?;
    check_files(&seeds, &args.experiments)?;
    let scale = if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    if args.doc_data.is_some() && args.quick {
        anyhow::bail!(
            "--doc-data writes the docs' measured tables, which are full scale: leave out --quick"
        );
    }
    let lab_unavailable = if args.sim_only {
        Some("--sim-only".to_string())
    } else {
        why_no_lab().map(|why| format!("this machine cannot run the lab: {why}"))
    };
    if let Some(why) = &lab_unavailable {
        println!("real run: skipped ({why})");
    }

    let started = std::time::Instant::now();
    // (part, wall seconds, what it gave) for the run's own timing table.
    let mut parts: Vec<(String, f64, String)> = Vec::new();
    let mut all = Vec::new();
    let mut lab_failures = Vec::new();
    for seed in seeds {
        println!("== seed {} ({}) ==", seed.id, seed.paper);
        let mut sim = BTreeMap::new();
        let mut sim_runs = BTreeMap::new();
        let sim_started = std::time::Instant::now();
        for name in seed.sim {
            let records = run_sim(&args, name)?;
            sim.insert(name.to_string(), summarize(&records)?);
            sim_runs.insert(name.to_string(), records);
        }
        parts.push((
            format!("seed {}, simulated", seed.id),
            sim_started.elapsed().as_secs_f64(),
            format!("{} experiment(s)", seed.sim.len()),
        ));
        let lab_started = std::time::Instant::now();
        let real = match (seed.lab, &lab_unavailable) {
            ([], _) => Err("this seed has no real experiment".to_string()),
            (_, Some(why)) => Err(why.clone()),
            (names, None) => run_labs(&args, names).map_err(|e| {
                let why = format!("the lab failed: {e:#}");
                lab_failures.push(format!("seed {}: {why}", seed.id));
                why
            }),
        };
        if !seed.lab.is_empty() {
            let files: Vec<String> = seed
                .lab
                .iter()
                .map(|name| format!("`experiments/lab/{name}.toml`"))
                .collect();
            parts.push((
                format!("seed {}, real", seed.id),
                lab_started.elapsed().as_secs_f64(),
                match &real {
                    Ok(_) => files.join(", "),
                    Err(why) => format!("not run: {why}"),
                },
            ));
        }
        let results = SeedResults {
            scale,
            sim,
            sim_runs,
            real,
        };
        if let Some(comparison) = &seed.comparison {
            if let Some(text) = (comparison.render)(&results) {
                let path = args.out.join(comparison.file);
                std::fs::write(&path, &text)
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("\n{text}\nwrote {}", path.display());
            }
        }
        if let Some(dir) = &args.doc_data {
            write_doc_tables(seed, &results, dir)?;
        }
        all.extend(seed.judge(&results));
    }

    let path = args.out.join("headlines.json");
    headlines::write_json(&path, &all)?;
    if let (Some(dir), true) = (&args.doc_data, args.seeds.is_empty()) {
        // The README's quick start is this command with the default seeds: its own cost, measured.
        parts.push((
            "the whole command".to_string(),
            started.elapsed().as_secs_f64(),
            headlines::tally(&all),
        ));
        let table = run_timing_table(&parts).stamped(&Stamp::here(&format!(
            "cosched reproduce --doc-data {}",
            docdata::DATA_DIR
        )));
        let written = table.write(dir)?;
        println!("wrote {} (then `cosched docs tables`)", written.display());
    }
    println!(
        "\nHeadline claims of the seed papers, computed from this run's results:\n{}\n{}; the test behind each \
         verdict, and why a threshold is not the paper's figure, are in {}",
        headlines::render_table(&all, Style::Terminal),
        headlines::tally(&all),
        path.display()
    );
    if !lab_failures.is_empty() {
        anyhow::bail!(
            "the real run failed (its claims are marked not run in {}):\n{}",
            path.display(),
            lab_failures.join("\n")
        );
    }
    Ok(())
}

/// How long each part of a `cosched reproduce` took and what it gave, as the docs table `reproduce-run`.
fn run_timing_table(parts: &[(String, f64, String)]) -> DocTable {
    let mut table = DocTable::new("reproduce-run", ["part", "wall time", "result"]).with_notes(
        "`cosched reproduce` with the default seeds (the README's quick start), timed by the command itself; the \
         release build already made.",
    );
    for (part, seconds, result) in parts {
        let wall = if *seconds >= 90.0 {
            format!("{} min {:.0} s", (*seconds / 60.0).floor(), seconds % 60.0)
        } else {
            format!("{seconds:.1} s")
        };
        table.push(vec![part.clone(), wall, result.clone()]);
    }
    table
}

/// Writes the seed's docs tables from this run into `dir` — its own (if it has any) and its simulated claims
/// ([`claims_doc_table`]) — each stamped with the command that re-measures it alone, this commit and this machine.
fn write_doc_tables(seed: &Seed, results: &SeedResults, dir: &Path) -> anyhow::Result<()> {
    let mut tables = match seed.doc_tables {
        Some(build) => {
            build(results).map_err(|e| anyhow::anyhow!("seed {}: its docs tables: {e}", seed.id))?
        }
        None => Vec::new(),
    };
    tables.push(claims_doc_table(seed, results));
    let stamp = Stamp::here(&format!(
        "cosched reproduce {} --sim-only --doc-data {}",
        seed.id,
        docdata::DATA_DIR
    ));
    for table in tables {
        let path = table.stamped(&stamp).write(dir)?;
        println!("wrote {} (then `cosched docs tables`)", path.display());
    }
    Ok(())
}

/// The seed's simulated claims in this run as a docs table, `sim-<seed>-claims`: the same claims, values and
/// verdicts as its rows of `headlines.json` ([`cosched_report::claims::doc_table`], one builder for every seed).
fn claims_doc_table(seed: &Seed, results: &SeedResults) -> DocTable {
    cosched_report::claims::doc_table(
        &format!("sim-{}-claims", seed.id),
        seed.id,
        results.scale,
        seed.sim_claims
            .iter()
            .map(|(claim, check)| (*claim, check(results))),
    )
}

/// The seeds named on the command line (the default ones when none is), in [`SEEDS`] order, each once. An
/// unknown seed is an error that lists the papers and the built seeds; nothing runs.
fn select_seeds(asked: &[String]) -> anyhow::Result<Vec<&'static Seed>> {
    if asked.is_empty() {
        return Ok(SEEDS.iter().filter(|s| s.by_default).collect());
    }
    let built = SEEDS.iter().map(|s| s.id).collect::<Vec<_>>().join(", ");
    for id in asked {
        if SEEDS.iter().any(|s| s.id == id) {
            continue;
        }
        anyhow::bail!(
            "unknown seed '{id}': the seed papers are {}; the seeds built so far: {built}",
            SEED_PAPERS
                .iter()
                .map(|(paper, title)| format!("{paper} ({title})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(SEEDS
        .iter()
        .filter(|s| asked.iter().any(|id| id == s.id))
        .collect())
}

fn sim_file(experiments: &Path, name: &str) -> PathBuf {
    experiments.join("sim").join(format!("{name}.toml"))
}

fn lab_file(experiments: &Path, name: &str) -> PathBuf {
    experiments.join("lab").join(format!("{name}.toml"))
}

/// Every experiment file the seeds need exists, before anything runs.
fn check_files(seeds: &[&Seed], experiments: &Path) -> anyhow::Result<()> {
    let missing: Vec<String> = seeds
        .iter()
        .flat_map(|s| {
            s.sim
                .iter()
                .map(|n| sim_file(experiments, n))
                .chain(s.lab.iter().map(|n| lab_file(experiments, n)))
        })
        .filter(|f| !f.is_file())
        .map(|f| f.display().to_string())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "missing experiment files (run from the repository root, or pass --experiments DIR):\n{}",
            missing.join("\n")
        );
    }
    Ok(())
}

/// Removes `<out>/<name>/runs.json` before its experiment runs, so that what is read afterwards can only be
/// this run's.
fn clear_runs_json(out: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = out.join(name).join("runs.json");
    if path.exists() {
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(path)
}

/// Reads the `runs.json` an experiment just wrote.
fn read_fresh(
    path: &Path,
    file: &Path,
    name: &str,
) -> anyhow::Result<Vec<cosched_report::RunRecord>> {
    if !path.exists() {
        anyhow::bail!(
            "{} did not write {}: its `name` must be '{name}'",
            file.display(),
            path.display()
        );
    }
    cosched_report::write::read_runs_json(path)
}

/// Runs one simulated experiment and returns its run records.
fn run_sim(args: &ReproduceArgs, name: &str) -> anyhow::Result<Vec<cosched_report::RunRecord>> {
    let file = sim_file(&args.experiments, name);
    let runs = clear_runs_json(&args.out, name)?;
    cosched_sim::cli::run(cosched_sim::cli::SimArgs {
        path: file.clone(),
        out: args.out.clone(),
        repetitions: None,
        quick: args.quick,
        threads: None,
    })?;
    read_fresh(&runs, &file, name)
}

/// Runs the real experiment and returns its summary and the lab's comparison.
/// Runs each of a seed's real experiments, in order; their rows together (each row names its experiment).
fn run_labs(args: &ReproduceArgs, names: &[&str]) -> anyhow::Result<RealResults> {
    let mut all = RealResults {
        summary: Vec::new(),
        comparison: Vec::new(),
        skipped: BTreeMap::new(),
    };
    for name in names {
        if let Some(why) = missing_system_program(args, name)? {
            println!("real experiment {name}: skipped ({why})");
            all.skipped.insert(name.to_string(), why);
            continue;
        }
        let one = run_lab(args, name)?;
        all.summary.extend(one.summary);
        all.comparison.extend(one.comparison);
    }
    Ok(all)
}

fn run_lab(args: &ReproduceArgs, name: &str) -> anyhow::Result<RealResults> {
    let file = lab_file(&args.experiments, name);
    let experiment = cosched_lab::LabExperiment::load(&file)?;
    let runs = clear_runs_json(&args.out, &experiment.name)?;
    cosched_lab::cli::run(cosched_lab::cli::LabArgs {
        file: Some(file.clone()),
        cleanup: false,
        after_exit_of: None,
        bench_dir: None,
        mpi_dir: None,
        results_dir: args.out.clone(),
        check: false,
        // The lab's comparison for docs/lab-*.md, when the docs' tables are asked for.
        doc_data: args.doc_data.clone(),
    })?;
    let records = read_fresh(&runs, &file, name)?;
    Ok(RealResults {
        summary: summarize(&records)?,
        comparison: cosched_lab::output::compare(&experiment, &records),
        skipped: BTreeMap::new(),
    })
}

/// What experiment `name` lacks on this machine when its program is not ours (the system's LAMMPS, which the
/// quick start does not install): such an experiment is skipped, not failed. Our own programs come with the
/// build, and a missing one fails the run as before.
fn missing_system_program(args: &ReproduceArgs, name: &str) -> anyhow::Result<Option<String>> {
    let experiment = cosched_lab::LabExperiment::load(&lab_file(&args.experiments, name))?;
    if experiment.program.kind != cosched_lab::experiment::ProgramKind::Lammps {
        return Ok(None);
    }
    let binaries = cosched_lab::binaries::Binaries::beside_current_exe()?;
    let problems = cosched_lab::preflight::program_problems(experiment.program.kind, &binaries);
    Ok((!problems.is_empty()).then(|| problems.join("; ")))
}

/// Why the lab cannot run here, if it cannot.
fn why_no_lab() -> Option<String> {
    let mut problems = cosched_lab::preflight::machine_problems();
    if !cosched_agent::HAS_BPF {
        problems.push(cosched_agent::BPF_MISSING_MESSAGE.to_string());
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_timing_table_gives_each_part_in_seconds_or_minutes() {
        let t = run_timing_table(&[
            (
                "seed 000, simulated".into(),
                42.04,
                "6 experiment(s)".into(),
            ),
            (
                "the whole command".into(),
                125.3,
                "14 of 21 checked claims hold".into(),
            ),
        ]);
        assert_eq!(t.name, "reproduce-run");
        assert_eq!(
            t.rows[0],
            ["seed 000, simulated", "42.0 s", "6 experiment(s)"]
        );
        assert_eq!(t.rows[1][1], "2 min 5 s");
        assert_eq!(t.rows[1][2], "14 of 21 checked claims hold");
    }

    /// Every claim of every seed: a threshold, the paper's words with their source, a threshold other than the
    /// paper's figure only with a why, and a row whose `test` and `why` are made from those values.
    #[test]
    fn every_claim_of_every_seed_has_a_threshold_and_the_papers_figure_or_a_reason() {
        let nothing = SeedResults {
            scale: Scale::Quick,
            sim: BTreeMap::new(),
            sim_runs: BTreeMap::new(),
            real: Err("not run in this test".into()),
        };
        for seed in SEEDS {
            let claims: Vec<&Claim> = seed
                .sim_claims
                .iter()
                .map(|(c, _)| *c)
                .chain(seed.real_claims.iter().map(|(c, _, _)| *c))
                .collect();
            assert!(!claims.is_empty(), "seed {} has no claims", seed.id);
            let rows = seed.judge(&nothing);
            assert_eq!(rows.len(), claims.len(), "seed {}", seed.id);
            for (claim, row) in claims.into_iter().zip(&rows) {
                let name = format!("seed {}: {}", seed.id, claim.claim);
                assert_eq!(row.seed, seed.id, "{name}");
                assert_eq!(row.claim, claim.claim, "{name}");
                assert!(!claim.tests.is_empty(), "{name}");
                // The paper's words say where they come from: a section, a figure, or the SPEC's target.
                assert!(
                    ["§", "Figure", "SPEC"]
                        .iter()
                        .any(|w| claim.paper.contains(w)),
                    "{name}: {}",
                    claim.paper
                );
                for test in claim.tests {
                    assert!(
                        test.is_explained(),
                        "{name}: `{}`: a threshold other than the paper's needs a why",
                        test.statistic
                    );
                    // The row's test text is made from the threshold's value.
                    assert!(
                        row.test.contains(&test.threshold.text()),
                        "{name}: {}",
                        row.test
                    );
                }
                assert_eq!(row.test, claim.test_text(), "{name}");
                let differs = claim.tests.iter().any(|t| t.paper != Some(t.threshold));
                assert_eq!(row.why.is_some(), differs, "{name}");
            }
        }
    }

    /// Each seed's claims table has one row per simulated claim, in the order of `headlines.json`, saying what
    /// the claim's headline says.
    #[test]
    fn each_seeds_claims_table_follows_its_simulated_headlines() {
        let nothing = SeedResults {
            scale: Scale::Full,
            sim: BTreeMap::new(),
            sim_runs: BTreeMap::new(),
            real: Err("not run in this test".into()),
        };
        for seed in SEEDS {
            let table = claims_doc_table(seed, &nothing);
            assert_eq!(table.name, format!("sim-{}-claims", seed.id));
            let headlines: Vec<Headline> = seed
                .judge(&nothing)
                .into_iter()
                .filter(|h| h.backend == headlines::Backend::Sim)
                .collect();
            assert_eq!(table.rows.len(), headlines.len(), "seed {}", seed.id);
            for (row, h) in table.rows.iter().zip(&headlines) {
                assert_eq!(
                    (row[0].as_str(), row[4].as_str()),
                    (h.claim.as_str(), h.ours.as_str())
                );
                assert!(h.ours.starts_with("missing: "), "{}", h.ours);
                assert_eq!(row[6], "not checked");
            }
        }
    }

    #[test]
    fn no_seed_named_means_every_built_seed_run_by_default() {
        let ids: Vec<&str> = select_seeds(&[]).unwrap().iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            SEEDS
                .iter()
                .filter(|s| s.by_default)
                .map(|s| s.id)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_seed_named_twice_runs_once() {
        let ids: Vec<&str> = select_seeds(&["000".into(), "000".into()])
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["000"]);
    }

    #[test]
    fn a_seed_outside_the_default_runs_only_when_named() {
        let default: Vec<&str> = select_seeds(&[]).unwrap().iter().map(|s| s.id).collect();
        assert!(
            !default.contains(&"004") && !default.contains(&"002") && !default.contains(&"001"),
            "{default:?}"
        );
        for seed in ["001", "002", "004"] {
            let named: Vec<&str> = select_seeds(&[seed.into()])
                .unwrap()
                .iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(named, [seed]);
        }
    }

    #[test]
    fn an_unknown_seed_is_an_error_listing_the_papers_and_the_built_ones() {
        let err = select_seeds(&["7".into()]).err().unwrap().to_string();
        assert!(err.contains("unknown seed '7'"), "{err}");
        assert!(err.contains("004 (DYNAMICQ"), "{err}");
        assert!(
            err.contains("built so far: 000, 001, 002, 003, 004"),
            "{err}"
        );
    }

    #[test]
    fn every_built_seed_is_a_known_paper_and_its_files_exist() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        for seed in SEEDS {
            assert!(SEED_PAPERS.iter().any(|(id, _)| *id == seed.id));
            assert!(seed.paper.starts_with(seed.id));
        }
        check_files(&SEEDS.iter().collect::<Vec<_>>(), &root).unwrap();
    }

    #[test]
    fn a_missing_experiment_file_is_reported_before_anything_runs() {
        let err = check_files(&SEEDS.iter().collect::<Vec<_>>(), Path::new("/nonexistent"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/nonexistent/sim/fig03-latency.toml"), "{err}");
        assert!(err.contains("--experiments DIR"), "{err}");
    }
}
