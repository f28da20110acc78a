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

/// A table its producer wrote names the command that measured it: a `cosched` command, or a script of this
/// repository (after any `NAME=value` settings), so that a reader can run it again. A transcribed one (a
/// notebook's, whose raw runs were not kept) names what its page says measured it — a probe, a script, a test
/// run — and says where its figures were copied from.
#[test]
fn every_table_names_the_command_that_measured_it() {
    let tables = docdata::read_all(root()).unwrap();
    for table in tables.values() {
        match &table.transcribed {
            None => assert!(
                table.source_command.starts_with("cosched ")
                    || repository_script(&table.source_command).is_some(),
                "{}: `{}` is neither a cosched command nor a script of this repository",
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

/// `path` with its `.` and `..` taken out, lexically.
fn normal(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Every `.svg` a line names (in a Markdown image, a link or an HTML attribute).
fn svg_references(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (end, _) in line.match_indices(".svg") {
        let end = end + ".svg".len();
        let start = line[..end]
            .rfind(|c: char| c.is_whitespace() || "(\"'<>[]=".contains(c))
            .map_or(0, |i| i + 1);
        if start < end && !line[start..].starts_with("http") {
            found.push(&line[start..end]);
        }
    }
    found
}

/// No figure in docs/ without committed data behind it: every SVG under docs/figures/ that README.md or a
/// docs/*.md page shows is drawn by a `<!-- plot: -->` marker from docs/data/ (which the test above checks
/// against its data), and every SVG under docs/figures/ is drawn by one. An SVG copied by hand from a run's
/// output fails here; draw it from a table instead (`cosched docs tables`).
#[test]
fn every_figure_of_the_docs_is_drawn_from_committed_data() {
    let root = normal(root());
    let figures = root.join("docs").join("figures");
    let mut drawn = std::collections::BTreeSet::new();
    let mut shown = Vec::new();
    for page in docdata::pages(&root).unwrap() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(marker) = line.trim().strip_prefix("<!-- plot: ") {
                let spec = docdata::PlotSpec::parse(marker)
                    .unwrap_or_else(|e| panic!("{}:{}: {e:#}", page.display(), n + 1));
                drawn.insert(normal(&dir.join(&spec.svg)));
                continue;
            }
            for svg in svg_references(line) {
                let path = normal(&dir.join(svg));
                if path.starts_with(&figures) {
                    shown.push((format!("{}:{}", page.display(), n + 1), path));
                }
            }
        }
    }
    let not_drawn: Vec<String> = shown
        .iter()
        .filter(|(_, path)| !drawn.contains(path))
        .map(|(at, path)| format!("{at}: {}", path.display()))
        .collect();
    assert!(
        not_drawn.is_empty(),
        "these figures are not drawn by a `<!-- plot: TABLE ... svg=\"...\" -->` marker from docs/data/ (commit \
         the data as a table and draw the figure from it):\n{}",
        not_drawn.join("\n")
    );
    let mut files = Vec::new();
    let mut dirs = vec![figures.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "svg") {
                files.push(path);
            }
        }
    }
    files.sort();
    let loose: Vec<String> = files
        .iter()
        .filter(|path| !drawn.contains(&normal(path)))
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        loose.is_empty(),
        "these SVGs under docs/figures/ are drawn by no plot marker (remove them, or draw them from data):\n{}",
        loose.join("\n")
    );
}

#[test]
fn svg_references_are_found_in_images_links_and_attributes() {
    assert_eq!(
        svg_references(
            "![a](figures/data/x.svg) and <img src=\"figures/y.svg\"> [b](../docs/z.svg)"
        ),
        ["figures/data/x.svg", "figures/y.svg", "../docs/z.svg"]
    );
    assert!(svg_references("no figure here").is_empty());
}

/// The script of this repository that `command` runs (its first word after `NAME=value` settings), if any.
fn repository_script(command: &str) -> Option<std::path::PathBuf> {
    let program = command
        .split_whitespace()
        .find(|word| !word.contains('='))?;
    let path = root().join(program);
    (program.contains('/') && path.is_file()).then_some(path)
}

#[test]
fn a_script_of_the_repository_counts_as_a_producer_and_a_missing_one_does_not() {
    assert!(repository_script("experiments/local/lammps-local.sh 4 0 1 2").is_some());
    assert!(repository_script("AGENT_ARGS=x experiments/local/lammps-local.sh 2 1").is_some());
    assert!(repository_script("experiments/local/no-such-script.sh 2").is_none());
    assert!(repository_script("python3 -c 1").is_none());
}
