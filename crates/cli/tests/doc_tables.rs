//! Every measured table of the docs matches its committed data: each `<!-- table: NAME -->` block of README.md
//! and docs/*.md is exactly the rendering of docs/data/NAME.json, and every docs/data/*.json is shown on some
//! page. A number edited by hand in a page, or data re-measured without re-rendering the page, fails here; the
//! fix is `cosched docs tables` after re-running the table's producer (its `source_command`).

use cosched_report::docdata;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn every_table_block_of_the_docs_is_the_rendering_of_its_data() {
    let report = docdata::update_docs(root(), false).expect("the docs and docs/data/ are readable");
    assert!(
        report.stale.is_empty(),
        "these table blocks differ from their data (never edit a generated table; re-run its producer, then \
         `cosched docs tables`):\n{}",
        report.stale.join("\n")
    );
    assert!(
        report.unused.is_empty(),
        "these data are shown on no page:\n{}",
        report.unused.join("\n")
    );
}

/// A table its producer wrote names the `cosched` command that measured it. A transcribed one (a notebook's,
/// whose raw runs were not kept) names what its page says measured it — a probe, a script, a test run — and says
/// where its figures were copied from.
#[test]
fn every_table_names_the_cosched_command_that_measured_it() {
    let tables = docdata::read_all(root()).unwrap();
    for table in tables.values() {
        match &table.transcribed {
            None => assert!(
                table.source_command.starts_with("cosched "),
                "{}: {}",
                table.name,
                table.source_command
            ),
            Some(source) => assert!(
                !table.source_command.trim().is_empty() && !source.trim().is_empty(),
                "{}: a transcribed table names what measured it and where it was copied from",
                table.name
            ),
        }
    }
}
