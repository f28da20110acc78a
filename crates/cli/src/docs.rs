//! `cosched docs tables [--check]` — re-renders every measured table of the docs from its committed data
//! (`docs/data/<name>.json`, written by the command that measured it) into the blocks that name it in
//! `README.md` and `docs/*.md`, and draws every figure a page's `<!-- plot: NAME ... -->` marker asks of a table
//! (SVG); `--check` changes nothing and fails if a block or a figure differs from its data or a datum is shown
//! nowhere. The mechanism is `cosched_report::docdata`.

use clap::{Args, Subcommand};
use cosched_report::docdata;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DocsArgs {
    #[command(subcommand)]
    pub command: DocsCommand,
}

#[derive(Subcommand, Debug)]
pub enum DocsCommand {
    /// Splice every `<!-- table: NAME -->` block of README.md and docs/*.md from docs/data/NAME.json, and draw
    /// every `<!-- plot: NAME ... -->` figure (SVG) from it.
    Tables(TablesArgs),
}

#[derive(Args, Debug)]
pub struct TablesArgs {
    /// Change nothing: list the blocks that differ from their data and the data no page shows, and exit
    /// non-zero if there are any.
    #[arg(long)]
    pub check: bool,
    /// The repository root (holding README.md, docs/ and docs/data/).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
}

pub fn run(args: DocsArgs) -> anyhow::Result<()> {
    match args.command {
        DocsCommand::Tables(args) => tables(args),
    }
}

fn tables(args: TablesArgs) -> anyhow::Result<()> {
    let report = docdata::update_docs(&args.root, !args.check)?;
    for unused in &report.unused {
        println!("shown on no page: {unused}");
    }
    if args.check {
        for stale in &report.stale {
            println!("differs from its data: {stale}");
        }
        if !report.clean() {
            anyhow::bail!(
                "{} table block(s) or figure(s) differ from their data and {} datum(s) are shown nowhere: run \
                 `cosched docs tables` to re-render them (never edit a generated table by hand; re-run its producer)",
                report.stale.len(),
                report.unused.len()
            );
        }
        println!("{} table block(s) match their data", report.current.len());
    } else {
        for stale in &report.stale {
            println!("re-rendered: {stale}");
        }
        println!(
            "{} table block(s) re-rendered, {} already current",
            report.stale.len(),
            report.current.len()
        );
        if !report.unused.is_empty() {
            anyhow::bail!(
                "{} datum(s) under {} are shown on no page: add a `<!-- table: NAME -->` ... `<!-- /table -->` \
                 block where it belongs, or remove the file",
                report.unused.len(),
                docdata::DATA_DIR
            );
        }
    }
    Ok(())
}
