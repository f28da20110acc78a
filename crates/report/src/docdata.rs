//! Figures from data: every measured table in the docs is generated from a small committed summary, so that a
//! number on a page can be traced to the run that measured it and re-checked.
//!
//! A [`DocTable`] is one such table: its cells as the command that measured it formatted them, with that command,
//! the commit it ran at, the machine and the date. It is stored as `docs/data/<name>.json` and appears in a page
//! between two markers, generated whole — the opening marker, the Markdown table, a notes line, a stamp line and
//! the closing marker:
//!
//! ```text
//! <!-- table: NAME (generated from docs/data/NAME.json by `COMMAND`; do not edit) -->
//! | ... the table ... |
//!
//! _Measured by `COMMAND` at commit `abc123def456` on MACHINE, 2025-01-31 (docs/data/NAME.json)._
//! <!-- /table -->
//! ```
//!
//! The producers (e.g. `cosched reproduce NNN --sim-only --doc-data docs/data`) build the tables from the
//! results they just computed and write the JSON; [`update_docs`] (`cosched docs tables`) splices every marked
//! block from its JSON, and with `write = false` (`--check`) only reports the blocks that differ. A test runs
//! the check on the repository, so a number edited by hand in a page, a JSON without a page, or a page naming a
//! JSON that does not exist fails it. Nothing here knows what a table measures: the simulator's and the lab's
//! tables use the same mechanism.
//!
//! A table measured before its producer wrote data (a dated notebook's, whose raw runs were not kept) is
//! *transcribed*: its cells copied by hand into the JSON, which says where from in `transcribed` (e.g. "the session
//! notes of 2026-11-26; the raw runs were not kept"), with `unknown` for a commit or machine nobody recorded. It
//! cannot be regenerated, but it is checked like any other, and its stamp says what it is:
//!
//! ```text
//! _Measured by `COMMAND` at commit `abc123d` on MACHINE, 2025-01-31; transcribed into docs/data/NAME.json from SOURCE._
//! ```
//!
//! A page may also draw a table as a figure: a one-line marker names the table, the column on x and the columns
//! drawn as lines, and the SVG file (relative to the page, inside `docs/`), which the page shows as an image:
//!
//! ```text
//! <!-- plot: NAME x="q (s)" y="Wrk1 slowdown" y="Wrk2 slowdown" svg="figures/data/NAME-slowdown.svg" log-x
//!      title="..." ylabel="..." -->
//! ![what it shows](figures/data/NAME-slowdown.svg)
//! ```
//!
//! (one line in the page). A long table — one row per configuration × K, as the lab's — is drawn with
//! `where=COLUMN=VALUE` (repeatable: only the rows with that cell) and `by=COLUMN` (each `y` column split into one
//! line per distinct value of that column, named by the value, in the order the rows first show it):
//!
//! ```text
//! <!-- plot: lab-pingpong-dcs x="K" y="of fair bound" by="configuration" where="mode=spin-only" svg="..." -->
//! ```
//!
//! `where` given twice for one column keeps the rows with either value (the two spin-block configurations of a
//! sweep). A cell is read by its leading number (`90 %` is 90, `240,000 (2 of 3 runs)` is 240000);
//! a row without one in x or in a line's column leaves that point out — unless no row has a number in x: then x
//! is a list of categories (a configuration, a job, a workload), drawn at 1, 2, … in the order the rows first
//! show them and labelled with their names. [`update_docs`] renders every figure
//! ([`crate::plot::render_lines`], deterministic) and, like a table, reports one whose SVG is missing or differs.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the tables' data live, relative to the repository root.
pub const DATA_DIR: &str = "docs/data";

const OPEN: &str = "<!-- table: ";
const CLOSE: &str = "<!-- /table -->";
const PLOT: &str = "<!-- plot: ";

/// One line of a figure: its name and its points (x, y).
pub type NamedLine = (String, Vec<(f64, f64)>);

/// A figure a page draws from a table (its marker, parsed).
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    /// The table (`docs/data/<table>.json`).
    pub table: String,
    /// The column on x.
    pub x: String,
    /// The columns drawn as lines.
    pub ys: Vec<String>,
    /// The SVG, relative to the page's folder.
    pub svg: String,
    pub title: String,
    /// The y axis's label (default: the first line's column).
    pub y_label: String,
    pub x_axis: crate::plot::Axis,
    pub y_axis: crate::plot::Axis,
    /// Only the rows whose cell in each column equals the value.
    pub filters: Vec<(String, String)>,
    /// Each line split by the values of this column.
    pub by: Option<String>,
}

impl PlotSpec {
    /// Parses what follows `<!-- plot: ` on a marker line; an error says what is wrong.
    pub fn parse(marker: &str) -> anyhow::Result<PlotSpec> {
        use crate::plot::Axis;
        let body = marker
            .trim()
            .strip_suffix("-->")
            .context("a plot marker ends with `-->` on the same line")?;
        let words = shlex::split(body).context("unbalanced quotes in a plot marker")?;
        let (table, options) = words
            .split_first()
            .context("a plot marker names its table first")?;
        let mut spec = PlotSpec {
            table: table.clone(),
            x: String::new(),
            ys: Vec::new(),
            svg: String::new(),
            title: table.clone(),
            y_label: String::new(),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            filters: Vec::new(),
            by: None,
        };
        for option in options {
            match option.split_once('=') {
                Some(("x", v)) => spec.x = v.to_string(),
                Some(("y", v)) => spec.ys.push(v.to_string()),
                Some(("svg", v)) => spec.svg = v.to_string(),
                Some(("title", v)) => spec.title = v.to_string(),
                Some(("ylabel", v)) => spec.y_label = v.to_string(),
                Some(("by", v)) => spec.by = Some(v.to_string()),
                Some(("where", v)) => {
                    let (column, value) = v.split_once('=').with_context(|| {
                        format!("where={v:?}: give where=\"COLUMN=VALUE\"")
                    })?;
                    spec.filters.push((column.to_string(), value.to_string()));
                }
                None if option == "log-x" => spec.x_axis = Axis::Log,
                None if option == "log-y" => spec.y_axis = Axis::Log,
                _ => bail!(
                    "`{option}` is not a plot option: x=COLUMN, y=COLUMN (repeatable), by=COLUMN, \
                     where=COLUMN=VALUE (repeatable), svg=PATH, title=TEXT, ylabel=TEXT, log-x, log-y"
                ),
            }
        }
        if spec.x.is_empty() || spec.ys.is_empty() {
            bail!("a plot needs x=COLUMN and at least one y=COLUMN");
        }
        let inside = Path::new(&spec.svg)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !spec.svg.ends_with(".svg") || !inside {
            bail!(
                "svg={:?}: give a relative path ending in .svg, inside the page's folder (no `..`)",
                spec.svg
            );
        }
        if spec.y_label.is_empty() {
            spec.y_label = spec.ys[0].clone();
        }
        Ok(spec)
    }

    /// The figure drawn from `table`; a column the table lacks is an error naming it.
    pub fn render(&self, table: &DocTable) -> anyhow::Result<String> {
        let (series, categories) = self.lines(table)?;
        crate::plot::render_lines_named_x(
            &self.title,
            (&self.x, self.x_axis, &self.y_label, self.y_axis),
            &series,
            categories.as_deref(),
        )
    }

    /// The lines the figure draws, each (name, points (x, y)).
    pub fn series(&self, table: &DocTable) -> anyhow::Result<Vec<NamedLine>> {
        Ok(self.lines(table)?.0)
    }

    /// The lines the figure draws and, when no selected row has a number in the x column, the x column's
    /// distinct cells in the order the rows first show them: the categories drawn at x = 1, 2, ….
    pub fn lines(&self, table: &DocTable) -> anyhow::Result<(Vec<NamedLine>, Option<Vec<String>>)> {
        let column = |name: &str| {
            table
                .columns
                .iter()
                .position(|c| c == name)
                .with_context(|| {
                    format!(
                        "table `{}` has no column {name:?} (its columns: {:?})",
                        table.name, table.columns
                    )
                })
        };
        let xi = column(&self.x)?;
        let filters = self
            .filters
            .iter()
            .map(|(c, v)| Ok((column(c)?, v.as_str())))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let rows: Vec<&Vec<String>> = table
            .rows
            .iter()
            // Every column named by a `where` holds one of the values given for it.
            .filter(|row| {
                filters
                    .iter()
                    .all(|(i, _)| filters.iter().any(|(j, v)| j == i && row[*j] == *v))
            })
            .collect();
        if rows.is_empty() {
            bail!("no row of table `{}` has {:?}", table.name, self.filters);
        }
        let categories: Option<Vec<String>> = rows
            .iter()
            .all(|row| leading_number(&row[xi]).is_none())
            .then(|| {
                let mut seen: Vec<String> = Vec::new();
                for row in &rows {
                    if !seen.contains(&row[xi]) {
                        seen.push(row[xi].clone());
                    }
                }
                seen
            });
        let x_of = |cell: &String| match &categories {
            Some(names) => names.iter().position(|n| n == cell).map(|i| (i + 1) as f64),
            None => leading_number(cell),
        };
        // The lines: (name, the rows it draws), one per `by` value in the order of first appearance, or one.
        let groups: Vec<(Option<&str>, Vec<&Vec<String>>)> = match &self.by {
            None => vec![(None, rows)],
            Some(by) => {
                let bi = column(by)?;
                let mut groups: Vec<(Option<&str>, Vec<&Vec<String>>)> = Vec::new();
                for row in rows {
                    match groups
                        .iter_mut()
                        .find(|(v, _)| *v == Some(row[bi].as_str()))
                    {
                        Some((_, g)) => g.push(row),
                        None => groups.push((Some(row[bi].as_str()), vec![row])),
                    }
                }
                groups
            }
        };
        let mut series = Vec::new();
        for y in &self.ys {
            let yi = column(y)?;
            for (value, rows) in &groups {
                let points = rows
                    .iter()
                    .filter_map(|row| Some((x_of(&row[xi])?, leading_number(&row[yi])?)))
                    .collect();
                let name = match (value, self.ys.len()) {
                    (None, _) => y.clone(),
                    (Some(v), 1) => v.to_string(),
                    (Some(v), _) => format!("{v}: {y}"),
                };
                series.push((name, points));
            }
        }
        Ok((series, categories))
    }
}

/// The number a cell starts with: `90 %` → 90, `240,000 (2 of 3 runs)` → 240000, `−5` → −5; `-` or text → none.
pub fn leading_number(cell: &str) -> Option<f64> {
    let prefix: String = cell
        .trim()
        .replace('−', "-")
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+' | 'e' | 'E'))
        .filter(|c| *c != ',')
        .collect();
    prefix.parse().ok()
}

/// One measured table of the docs, with what stands behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocTable {
    /// The file name without `.json` and the marker's name: lower-case letters, digits and `-`.
    pub name: String,
    /// The command that measured it, as a reader would type it to measure it again.
    pub source_command: String,
    /// The commit the command ran at (`git rev-parse --short=12 HEAD`, `+dirty` with uncommitted changes outside
    /// `docs/`).
    pub commit: String,
    /// The machine it ran on (CPU model and count, kernel).
    pub machine: String,
    /// The day it ran, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// The header.
    pub columns: Vec<String>,
    /// The cells, formatted by the producer; every row as wide as `columns`.
    pub rows: Vec<Vec<String>>,
    /// What a reader needs to read the numbers (units, repetitions, which statistic); may be empty.
    #[serde(default)]
    pub notes: String,
    /// Where the figures were copied from when the raw runs were not kept (e.g. "the session notes of 2026-11-26;
    /// the raw runs were not kept"): such a table cannot be regenerated by its producer, and its stamp says so.
    /// `None` for a table its producer wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcribed: Option<String>,
}

/// Where and when a table was measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub source_command: String,
    pub commit: String,
    pub machine: String,
    pub date: String,
}

impl Stamp {
    /// This checkout's commit, this machine and today, for tables measured by `command` now. A checkout without
    /// git is stamped `unknown` rather than refused: the figures are still real.
    pub fn here(command: &str) -> Stamp {
        Stamp {
            source_command: command.to_string(),
            commit: this_commit().unwrap_or_else(|| "unknown".to_string()),
            machine: this_machine(),
            date: today_utc(),
        }
    }
}

impl DocTable {
    /// A table with its header and no rows, not yet stamped.
    pub fn new<S: ToString>(name: &str, columns: impl IntoIterator<Item = S>) -> DocTable {
        DocTable {
            name: name.to_string(),
            source_command: String::new(),
            commit: String::new(),
            machine: String::new(),
            date: String::new(),
            columns: columns.into_iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            notes: String::new(),
            transcribed: None,
        }
    }

    pub fn with_notes(mut self, notes: &str) -> DocTable {
        self.notes = notes.to_string();
        self
    }

    /// Marks the table as transcribed from `source` (its raw runs were not kept).
    pub fn transcribed_from(mut self, source: &str) -> DocTable {
        self.transcribed = Some(source.to_string());
        self
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    pub fn stamped(mut self, stamp: &Stamp) -> DocTable {
        self.source_command = stamp.source_command.clone();
        self.commit = stamp.commit.clone();
        self.machine = stamp.machine.clone();
        self.date = stamp.date.clone();
        self
    }

    /// What is wrong with the table, if anything: a name that is not a file name, an unstamped table, a row of the
    /// wrong width, or a cell that would break the Markdown (a line break).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            problems.push(format!(
                "name {:?}: use lower-case letters, digits and `-`",
                self.name
            ));
        }
        for (field, value) in [
            ("source_command", &self.source_command),
            ("commit", &self.commit),
            ("machine", &self.machine),
            ("date", &self.date),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("`{field}` is empty: the table is not stamped"));
            }
        }
        if self
            .transcribed
            .as_ref()
            .is_some_and(|source| source.trim().is_empty())
        {
            problems.push(
                "`transcribed` is empty: say where the figures were copied from, or leave the field out"
                    .to_string(),
            );
        }
        if self.columns.is_empty() {
            problems.push("no columns".to_string());
        }
        for (i, row) in self.rows.iter().enumerate() {
            if row.len() != self.columns.len() {
                problems.push(format!(
                    "rows[{i}] has {} cells, the header {}",
                    row.len(),
                    self.columns.len()
                ));
            }
        }
        let cells = self.columns.iter().chain(self.rows.iter().flatten());
        if let Some(cell) = cells
            .chain([&self.notes, &self.source_command, &self.machine])
            .chain(self.transcribed.as_ref())
            .find(|c| c.contains('\n'))
        {
            problems.push(format!("a line break in {cell:?}"));
        }
        problems
    }

    fn path_in(&self, data_dir: &Path) -> PathBuf {
        data_dir.join(format!("{}.json", self.name))
    }

    /// Writes `<data_dir>/<name>.json` (pretty-printed, one trailing newline, so diffs read cell by cell).
    pub fn write(&self, data_dir: &Path) -> anyhow::Result<PathBuf> {
        let problems = self.problems();
        if !problems.is_empty() {
            bail!("table `{}`: {}", self.name, problems.join("; "));
        }
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let path = self.path_in(data_dir);
        let text = serde_json::to_string_pretty(self)? + "\n";
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Reads one table; a malformed file, a table whose `name` is not its file's, or a table with problems is
    /// an error naming the file and what is wrong.
    pub fn read(path: &Path) -> anyhow::Result<DocTable> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let table: DocTable = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a docs table (fields: name, source_command, commit, machine, date, columns, rows, notes, \
                 transcribed)",
                path.display()
            )
        })?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let mut problems = table.problems();
        if table.name != stem {
            problems.push(format!(
                "`name` is {:?} but the file is {stem}.json",
                table.name
            ));
        }
        if !problems.is_empty() {
            bail!("{}: {}", path.display(), problems.join("; "));
        }
        Ok(table)
    }

    /// The block a page holds for this table, markers included, ending with a newline.
    pub fn render_block(&self) -> String {
        let data = format!("{DATA_DIR}/{}.json", self.name);
        let mut out = format!(
            "{OPEN}{} (generated from {data} by `{}`; do not edit) -->\n\n",
            self.name, self.source_command
        );
        out += &render_markdown(self);
        out += "\n";
        if !self.notes.is_empty() {
            out += &format!("{}\n", self.notes);
        }
        out += &match &self.transcribed {
            None => format!(
                "_Measured by `{}` at commit `{}` on {}, {} ({data})._\n{CLOSE}\n",
                self.source_command, self.commit, self.machine, self.date
            ),
            Some(source) => format!(
                "_Measured by `{}` at commit `{}` on {}, {}; transcribed into {data} from {source}._\n{CLOSE}\n",
                self.source_command, self.commit, self.machine, self.date
            ),
        };
        out
    }
}

/// The table alone, as GitHub-flavoured Markdown (a `|` in a cell is escaped).
pub fn render_markdown(table: &DocTable) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(&table.columns);
    out += &format!("|{}\n", "---|".repeat(table.columns.len()));
    for row in &table.rows {
        out += &line(row);
    }
    out
}

/// A marked block of a page.
#[derive(Debug)]
struct Block {
    name: String,
    /// Byte range of the whole block in the page, from the opening marker's line to the closing one's newline.
    range: std::ops::Range<usize>,
}

/// The marked blocks of one page, in order; an opening marker without a name, a block never closed or one
/// opened inside another is an error that names the page and line.
fn blocks(text: &str, page: &Path) -> anyhow::Result<Vec<Block>> {
    let mut found = Vec::new();
    let mut open: Option<(String, usize, usize)> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix(OPEN) {
            if let Some((name, _, at)) = &open {
                bail!(
                    "{}:{}: a table block opened inside `{name}` (line {at}); close it with `{CLOSE}` first",
                    page.display(),
                    i + 1
                );
            }
            let name: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '(')
                .collect();
            if name.is_empty() || name == "-->" {
                bail!(
                    "{}:{}: a table marker without a name",
                    page.display(),
                    i + 1
                );
            }
            open = Some((name, offset, i + 1));
        } else if trimmed == CLOSE {
            let Some((name, start, _)) = open.take() else {
                bail!(
                    "{}:{}: `{CLOSE}` without an opening `{OPEN}NAME ... -->`",
                    page.display(),
                    i + 1
                );
            };
            found.push(Block {
                name,
                range: start..offset + line.len(),
            });
        }
        offset += line.len();
    }
    if let Some((name, _, at)) = open {
        bail!(
            "{}:{at}: table block `{name}` is never closed with `{CLOSE}`",
            page.display()
        );
    }
    Ok(found)
}

/// The pages that may hold tables: `README.md` and `docs/*.md`, sorted.
pub fn pages(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut pages = vec![root.join("README.md")];
    let docs = root.join("docs");
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(&docs)
        .with_context(|| format!("reading {}", docs.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    in_docs.retain(|p| p.extension().is_some_and(|e| e == "md"));
    in_docs.sort();
    pages.extend(in_docs);
    pages.retain(|p| p.is_file());
    Ok(pages)
}

/// Every table under `<root>/docs/data/`, by name.
pub fn read_all(root: &Path) -> anyhow::Result<BTreeMap<String, DocTable>> {
    let dir = root.join(DATA_DIR);
    let mut tables = BTreeMap::new();
    if !dir.is_dir() {
        return Ok(tables);
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    for path in paths
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let table = DocTable::read(&path)?;
        tables.insert(table.name.clone(), table);
    }
    Ok(tables)
}

/// What [`update_docs`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DocsReport {
    /// `page: name` of every block that differed from its JSON's rendering (rewritten when writing).
    pub stale: Vec<String>,
    /// `page: name` of every block that is up to date.
    pub current: Vec<String>,
    /// Tables under `docs/data/` that no page shows.
    pub unused: Vec<String>,
}

impl DocsReport {
    /// Whether every page matches its data and every datum is shown.
    pub fn clean(&self) -> bool {
        self.stale.is_empty() && self.unused.is_empty()
    }
}

/// Renders every marked block of `README.md` and `docs/*.md` under `root` from `docs/data/<name>.json`; with
/// `write`, rewrites the pages whose blocks differ. A block naming a table that has no JSON, or a malformed
/// JSON, is an error (nothing is written).
pub fn update_docs(root: &Path, write: bool) -> anyhow::Result<DocsReport> {
    let tables = read_all(root)?;
    let mut report = DocsReport::default();
    let mut shown = std::collections::BTreeSet::new();
    let mut rewrites = Vec::new();
    let mut figures: Vec<(PathBuf, String)> = Vec::new();
    for page in pages(root)? {
        let text = std::fs::read_to_string(&page)
            .with_context(|| format!("reading {}", page.display()))?;
        let shown_as = page
            .strip_prefix(root)
            .unwrap_or(&page)
            .display()
            .to_string();
        let mut new_text = String::with_capacity(text.len());
        let mut last = 0;
        for block in blocks(&text, &page)? {
            let Some(table) = tables.get(&block.name) else {
                bail!(
                    "{shown_as}: table `{}` has no data: {DATA_DIR}/{}.json does not exist (its producer writes it, \
                     e.g. `cosched reproduce NNN --sim-only --doc-data {DATA_DIR}`)",
                    block.name,
                    block.name
                );
            };
            shown.insert(block.name.clone());
            let rendered = table.render_block();
            let entry = format!("{shown_as}: {}", block.name);
            if text[block.range.clone()] == rendered {
                report.current.push(entry);
            } else {
                report.stale.push(entry);
            }
            new_text += &text[last..block.range.start];
            new_text += &rendered;
            last = block.range.end;
        }
        new_text += &text[last..];
        for (line_no, line) in text.lines().enumerate() {
            let Some(marker) = line.trim().strip_prefix(PLOT) else {
                continue;
            };
            let where_ = format!("{shown_as}:{}", line_no + 1);
            let spec = PlotSpec::parse(marker).with_context(|| where_.clone())?;
            let Some(table) = tables.get(&spec.table) else {
                bail!(
                    "{where_}: the plot's table `{}` has no data: {DATA_DIR}/{}.json does not exist",
                    spec.table,
                    spec.table
                );
            };
            let svg = spec.render(table).with_context(|| where_.clone())?;
            let path = page.parent().unwrap_or(root).join(&spec.svg);
            let entry = format!("{shown_as}: plot {}", spec.svg);
            if std::fs::read_to_string(&path).is_ok_and(|old| old == svg) {
                report.current.push(entry);
            } else {
                report.stale.push(entry);
                figures.push((path, svg));
            }
        }
        if new_text != text {
            rewrites.push((page, new_text));
        }
    }
    report.unused = tables
        .keys()
        .filter(|name| !shown.contains(*name))
        .map(|name| format!("{DATA_DIR}/{name}.json"))
        .collect();
    if write {
        for (page, text) in rewrites {
            std::fs::write(&page, text).with_context(|| format!("writing {}", page.display()))?;
        }
        for (path, svg) in figures {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(report)
}

fn this_commit() -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // The pages and their data change when a producer writes them; they do not change what is measured.
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":!docs",
    ])
    .is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}+dirty")
    } else {
        commit
    })
}

/// `N × CPU model, Linux RELEASE` (what decides a measured time), or what can be read of it.
fn this_machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| format!(", Linux {}", r.trim()))
        .unwrap_or_default();
    format!("{cpus} × {model}{kernel}")
}

fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    use chrono::Datelike;
    let date = chrono::DateTime::from_timestamp(days.saturating_mul(86_400), 0)
        .unwrap_or_default()
        .date_naive();
    (i64::from(date.year()), date.month(), date.day())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> Stamp {
        Stamp {
            source_command: "cosched reproduce 004 --sim-only --doc-data docs/data".into(),
            commit: "0123456789ab".into(),
            machine: "2 × Test CPU, Linux 6.1".into(),
            date: "2025-01-31".into(),
        }
    }

    fn table() -> DocTable {
        let mut t = DocTable::new("demo-fig1", ["q (s)", "MMR | %"]).with_notes("Mean of 3.");
        t.push(vec!["0.2".into(), "9.42".into()]);
        t.push(vec!["0.4".into(), "9.07".into()]);
        t.stamped(&stamp())
    }

    fn repo(pages: &[(&str, &str)], tables: &[DocTable]) -> tempfile_dir::Dir {
        let dir = tempfile_dir::Dir::new();
        std::fs::create_dir_all(dir.path().join(DATA_DIR)).unwrap();
        for (name, text) in pages {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        for t in tables {
            t.write(&dir.path().join(DATA_DIR)).unwrap();
        }
        dir
    }

    /// A scratch directory removed on drop (the report crate has no tempfile dependency).
    mod tempfile_dir {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let path = std::env::temp_dir().join(format!(
                    "cosched-docdata-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(path.join("docs")).unwrap();
                Dir(path)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn the_markdown_escapes_pipes_and_has_one_line_per_row() {
        assert_eq!(
            render_markdown(&table()),
            "| q (s) | MMR \\| % |\n|---|---|\n| 0.2 | 9.42 |\n| 0.4 | 9.07 |\n"
        );
    }

    #[test]
    fn the_block_carries_the_markers_the_notes_and_the_stamp() {
        let block = table().render_block();
        assert!(block.starts_with(
            "<!-- table: demo-fig1 (generated from docs/data/demo-fig1.json by `cosched reproduce 004 --sim-only \
             --doc-data docs/data`; do not edit) -->\n\n| q (s)"
        ));
        assert!(
            block.contains("\nMean of 3.\n_Measured by `cosched reproduce 004"),
            "{block}"
        );
        assert!(block.contains("at commit `0123456789ab` on 2 × Test CPU, Linux 6.1, 2025-01-31"));
        assert!(block.ends_with("(docs/data/demo-fig1.json)._\n<!-- /table -->\n"));
    }

    #[test]
    fn a_transcribed_table_says_where_its_figures_were_copied_from() {
        let source = "the session notes of 2026-11-26; the raw runs were not kept";
        let t = table().transcribed_from(source);
        let block = t.render_block();
        assert!(
            block.ends_with(
                "\nMean of 3.\n_Measured by `cosched reproduce 004 --sim-only --doc-data docs/data` at commit \
                 `0123456789ab` on 2 × Test CPU, Linux 6.1, 2025-01-31; transcribed into docs/data/demo-fig1.json \
                 from the session notes of 2026-11-26; the raw runs were not kept._\n<!-- /table -->\n"
            ),
            "{block}"
        );
        // The table itself is rendered as any other; only the stamp differs.
        assert_eq!(
            block.split("_Measured by").next(),
            table().render_block().split("_Measured by").next()
        );
        // The field round-trips, and a table without it has no `transcribed` key in its JSON.
        let mut untranscribed = table();
        untranscribed.name = "plain".into();
        let dir = repo(&[], &[t.clone(), untranscribed]);
        let data = dir.path().join(DATA_DIR);
        assert_eq!(DocTable::read(&data.join("demo-fig1.json")).unwrap(), t);
        let plain = std::fs::read_to_string(data.join("plain.json")).unwrap();
        assert!(!plain.contains("transcribed"), "{plain}");
        // An empty source is refused; so is an unknown field, still.
        let mut empty = table().transcribed_from(" ");
        assert!(empty
            .problems()
            .iter()
            .any(|p| p.contains("`transcribed` is empty")));
        empty.transcribed = None;
        assert!(empty.problems().is_empty());
        let json = serde_json::to_string(&t)
            .unwrap()
            .replace("\"transcribed\"", "\"transcribed_from\"");
        assert!(serde_json::from_str::<DocTable>(&json).is_err());
    }

    #[test]
    fn a_table_round_trips_through_its_json() {
        let dir = repo(&[], &[table()]);
        let read = DocTable::read(&dir.path().join(DATA_DIR).join("demo-fig1.json")).unwrap();
        assert_eq!(read, table());
    }

    #[test]
    fn a_bad_json_names_the_file_and_what_is_wrong() {
        let dir = repo(&[], &[]);
        let data = dir.path().join(DATA_DIR);
        std::fs::write(data.join("broken.json"), "{ \"name\": ").unwrap();
        let err = format!(
            "{:#}",
            DocTable::read(&data.join("broken.json")).unwrap_err()
        );
        assert!(err.contains("broken.json: not a docs table"), "{err}");

        let mut wrong = table();
        wrong.rows[1].pop();
        wrong.name = "other".into();
        std::fs::write(
            data.join("renamed.json"),
            serde_json::to_string(&wrong).unwrap(),
        )
        .unwrap();
        let err = format!(
            "{:#}",
            DocTable::read(&data.join("renamed.json")).unwrap_err()
        );
        assert!(
            err.contains("renamed.json: rows[1] has 1 cells, the header 2"),
            "{err}"
        );
        assert!(
            err.contains("`name` is \"other\" but the file is renamed.json"),
            "{err}"
        );
    }

    #[test]
    fn an_unstamped_table_is_not_written() {
        let dir = repo(&[], &[]);
        let err = DocTable::new("x", ["a"])
            .write(&dir.path().join(DATA_DIR))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`commit` is empty: the table is not stamped"),
            "{err}"
        );
    }

    #[test]
    fn update_splices_the_block_and_check_then_finds_it_current() {
        let page = "# Page\n\nBefore.\n\n<!-- table: demo-fig1 (old) -->\n| old |\n<!-- /table -->\n\nAfter.\n";
        let dir = repo(&[("docs/page.md", page)], &[table()]);
        let report = update_docs(dir.path(), false).unwrap();
        assert_eq!(report.stale, ["docs/page.md: demo-fig1"]);
        // The check wrote nothing.
        let text = std::fs::read_to_string(dir.path().join("docs/page.md")).unwrap();
        assert_eq!(text, page);

        update_docs(dir.path(), true).unwrap();
        let text = std::fs::read_to_string(dir.path().join("docs/page.md")).unwrap();
        assert_eq!(
            text,
            format!("# Page\n\nBefore.\n\n{}\nAfter.\n", table().render_block())
        );
        let report = update_docs(dir.path(), false).unwrap();
        assert!(report.clean(), "{report:?}");
        assert_eq!(report.current, ["docs/page.md: demo-fig1"]);
    }

    #[test]
    fn a_plot_marker_draws_its_table_and_check_finds_a_missing_or_changed_figure() {
        // The table is shown as a table too (otherwise it would be unused) and drawn as a figure.
        let marker = "<!-- plot: demo-fig1 x=\"q (s)\" y=\"MMR | %\" svg=\"figures/data/demo.svg\" log-x title=\"MMR\" -->\n";
        let page = format!(
            "{}{marker}![MMR](figures/data/demo.svg)\n",
            table().render_block()
        );
        let dir = repo(&[("docs/page.md", &page)], &[table()]);
        let svg = dir.path().join("docs/figures/data/demo.svg");
        let report = update_docs(dir.path(), false).unwrap();
        assert_eq!(report.stale, ["docs/page.md: plot figures/data/demo.svg"]);
        assert!(!svg.exists(), "the check writes nothing");
        update_docs(dir.path(), true).unwrap();
        let drawn = std::fs::read_to_string(&svg).unwrap();
        assert!(
            drawn.starts_with("<svg") && drawn.contains("MMR | %"),
            "{drawn}"
        );
        assert!(update_docs(dir.path(), false).unwrap().clean());
        std::fs::write(&svg, drawn.replace("MMR | %", "edited")).unwrap();
        assert_eq!(
            update_docs(dir.path(), false).unwrap().stale,
            ["docs/page.md: plot figures/data/demo.svg"]
        );
        // A column the table lacks is an error naming the page's line and the column.
        let bad = page.replace("y=\"MMR | %\"", "y=\"MWT\"");
        std::fs::write(dir.path().join("docs/page.md"), bad).unwrap();
        let err = format!("{:#}", update_docs(dir.path(), false).unwrap_err());
        assert!(
            err.contains("docs/page.md:") && err.contains("no column \"MWT\""),
            "{err}"
        );
    }

    #[test]
    fn a_long_table_is_drawn_one_line_per_value_of_by_among_the_rows_where_selects() {
        let mut t = DocTable::new("lab", ["configuration", "mode", "K", "rate"]);
        for (configuration, mode, k, rate) in [
            ("no-agent", "spin-only", "0", "100"),
            ("no-agent", "spin-only", "1", "20"),
            ("no-agent", "block", "1", "7"),
            ("agent", "spin-only", "0", "101"),
            ("agent", "spin-only", "1", "45 ± 3"),
        ] {
            t.push(vec![
                configuration.into(),
                mode.into(),
                k.into(),
                rate.into(),
            ]);
        }
        let spec = PlotSpec::parse(
            "lab x=K y=rate by=configuration where=\"mode=spin-only\" svg=\"f.svg\" -->",
        )
        .unwrap();
        assert_eq!(
            spec.series(&t).unwrap(),
            [
                ("no-agent".to_string(), vec![(0.0, 100.0), (1.0, 20.0)]),
                ("agent".to_string(), vec![(0.0, 101.0), (1.0, 45.0)]),
            ]
        );
        // Two y columns: each line is named by value and column.
        let two = PlotSpec::parse("lab x=K y=rate y=K by=mode svg=\"f.svg\" -->").unwrap();
        let names: Vec<String> = two.series(&t).unwrap().into_iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            ["spin-only: rate", "block: rate", "spin-only: K", "block: K"]
        );
        // A filter that keeps nothing, or names no column, says so.
        let none = PlotSpec::parse("lab x=K y=rate where=\"mode=spin\" svg=\"f.svg\" -->").unwrap();
        assert!(none.series(&t).unwrap_err().to_string().contains("no row"));
        let bad = PlotSpec::parse("lab x=K y=rate where=\"moed=block\" svg=\"f.svg\" -->").unwrap();
        assert!(bad
            .series(&t)
            .unwrap_err()
            .to_string()
            .contains("no column \"moed\""));
        assert!(PlotSpec::parse("lab x=K y=rate where=mode svg=\"f.svg\" -->").is_err());
        // `where` twice for one column keeps either value; with another column, both must hold.
        let either = PlotSpec::parse(
            "lab x=K y=rate by=mode where=\"mode=block\" where=\"mode=spin-only\" \
             where=\"configuration=no-agent\" svg=\"f.svg\" -->",
        )
        .unwrap();
        assert_eq!(
            either.series(&t).unwrap(),
            [
                ("spin-only".to_string(), vec![(0.0, 100.0), (1.0, 20.0)]),
                ("block".to_string(), vec![(1.0, 7.0)]),
            ]
        );
    }

    #[test]
    fn an_x_column_without_numbers_is_drawn_as_categories_in_the_order_of_the_rows() {
        let mut t = DocTable::new("mixed", ["configuration", "job", "response"]);
        for (configuration, job, response) in [
            ("Batch", "sor", "38.1 ± 0.0"),
            ("Batch", "gtar", "60.2"),
            ("DCS", "sor", "42.1"),
            ("DCS", "gtar", "99.6"),
            ("DCS", "gs", "125.7"),
        ] {
            t.push(vec![configuration.into(), job.into(), response.into()]);
        }
        let spec =
            PlotSpec::parse("mixed x=job y=response by=configuration svg=\"f.svg\" log-x -->")
                .unwrap();
        let (lines, categories) = spec.lines(&t).unwrap();
        assert_eq!(categories.unwrap(), ["sor", "gtar", "gs"]);
        assert_eq!(
            lines,
            [
                ("Batch".to_string(), vec![(1.0, 38.1), (2.0, 60.2)]),
                (
                    "DCS".to_string(),
                    vec![(1.0, 42.1), (2.0, 99.6), (3.0, 125.7)]
                ),
            ]
        );
        // Drawn with the names on x (a log x is ignored: categories are evenly spaced).
        let svg = spec.render(&t).unwrap();
        assert!(svg.contains("gtar"), "{svg}");
        // A numeric x stays numeric.
        let mut numeric = DocTable::new("n", ["K", "y"]);
        numeric.push(vec!["1".into(), "2".into()]);
        let k = PlotSpec::parse("n x=K y=y svg=\"f.svg\" -->").unwrap();
        assert_eq!(k.lines(&numeric).unwrap().1, None);
    }

    #[test]
    fn plot_markers_are_parsed_or_refused_with_what_is_wrong() {
        let spec = PlotSpec::parse(
            "t x=K y=\"IS LINUX\" y=\"IS PRED .9\" svg=\"figures/t.svg\" log-y ylabel=\"time, s\" -->",
        )
        .unwrap();
        assert_eq!(spec.table, "t");
        assert_eq!(spec.ys, ["IS LINUX", "IS PRED .9"]);
        assert_eq!(spec.y_axis, crate::plot::Axis::Log);
        assert_eq!(spec.x_axis, crate::plot::Axis::Linear);
        assert_eq!(
            (spec.title.as_str(), spec.y_label.as_str()),
            ("t", "time, s")
        );
        for (marker, says) in [
            (
                "t x=K y=A svg=\"../out.svg\" -->",
                "inside the page's folder",
            ),
            ("t x=K y=A svg=out.png -->", "ending in .svg"),
            ("t y=A svg=a.svg -->", "x=COLUMN"),
            (
                "t x=K y=A svg=a.svg wide -->",
                "`wide` is not a plot option",
            ),
            ("t x=K y=A svg=a.svg", "ends with `-->`"),
        ] {
            let err = PlotSpec::parse(marker).unwrap_err().to_string();
            assert!(err.contains(says), "{marker}: {err}");
        }
    }

    #[test]
    fn a_cell_is_read_by_its_leading_number() {
        assert_eq!(leading_number("90 %"), Some(90.0));
        assert_eq!(leading_number("240,000 (2 of 3 runs)"), Some(240_000.0));
        assert_eq!(leading_number("−5"), Some(-5.0));
        assert_eq!(leading_number("2.284"), Some(2.284));
        assert_eq!(leading_number("-"), None);
        assert_eq!(leading_number("no DCS"), None);
    }

    #[test]
    fn a_number_edited_by_hand_is_found() {
        let page = table().render_block();
        let dir = repo(
            &[("docs/page.md", &page.replace("9.42", "9.43"))],
            &[table()],
        );
        let report = update_docs(dir.path(), false).unwrap();
        assert_eq!(report.stale, ["docs/page.md: demo-fig1"]);
    }

    #[test]
    fn unused_data_and_missing_data_are_reported() {
        let dir = repo(&[("README.md", "nothing marked\n")], &[table()]);
        let report = update_docs(dir.path(), false).unwrap();
        assert_eq!(report.unused, ["docs/data/demo-fig1.json"]);
        assert!(!report.clean());

        let dir = repo(
            &[("docs/a.md", "<!-- table: nowhere -->\n<!-- /table -->\n")],
            &[],
        );
        let err = update_docs(dir.path(), false).unwrap_err().to_string();
        assert!(
            err.contains(
                "docs/a.md: table `nowhere` has no data: docs/data/nowhere.json does not exist"
            ),
            "{err}"
        );
    }

    #[test]
    fn broken_markers_name_the_page_and_line() {
        for (text, expected) in [
            (
                "x\n<!-- table: a -->\n",
                "x.md:2: table block `a` is never closed",
            ),
            (
                "<!-- table: a -->\n<!-- table: b -->\n",
                "x.md:2: a table block opened inside `a` (line 1)",
            ),
            (
                "<!-- /table -->\n",
                "x.md:1: `<!-- /table -->` without an opening",
            ),
            (
                "<!-- table: -->\n<!-- /table -->\n",
                "x.md:1: a table marker without a name",
            ),
        ] {
            let err = blocks(text, Path::new("x.md")).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_753), (2024, 1, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
