//! Headline claims as data: `results/headlines.json`, written by `cosched reproduce`.
//!
//! Each seed paper makes a few headline claims (SPEC.md §"The seed systems", "Headlines"; seed
//! `000_e8004e1596fde6a5.txt`'s abstract and §4.3: "DCS reduces job response times by up to two decimal orders
//! of magnitude over uncoordinated scheduling", "by up to 20 % over implicit scheduling while maintaining
//! fairness", ...). A [`Headline`] is one such claim checked against one run: the claim in a sentence, what the
//! paper reports, what this run measured, and whether the claim holds by an explicit test whose threshold is
//! stated in [`Headline::test`]. The values are computed from the run's own `runs.json`; nothing here is typed
//! in. The per-seed computations live in the `cosched` binary (`crates/cli/src/reproduce/seed_NNN.rs`, one
//! function per seed); this module holds the record, its JSON file and its table.
//!
//! JSON: an array of objects, in the order the claims were computed (seed by seed, the simulated claims of a
//! seed first):
//!
//! ```json
//! {"seed": "000", "claim": "...", "paper": "...", "backend": "sim", "scale": "full",
//!  "ours": "...", "holds": true, "test": "..."}
//! ```
//!
//! `holds` is `null` when the claim could not be checked in this run: its backend did not run (`ours` then
//! reads `not run: <why>`, e.g. `cosched reproduce --sim-only`) or the results lack the series it needs
//! (`ours` reads `missing: <what>`).

use crate::table::Style;
use anyhow::Context;
use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{ContentArrangement, Table};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where a claim was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// The discrete-event simulator (`cosched sim`), at the seed's own platform.
    Sim,
    /// The real kernel, through the lab (`cosched lab`) and the agent.
    Real,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Real => "real",
        }
    }
}

/// The size of the runs a claim was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// The experiment files as written (the seed's own scale).
    Full,
    /// `--quick`: the simulated work scaled down 100× and at most 2 repetitions. Claims about large
    /// competitor counts may not hold at this size; they are computed all the same.
    Quick,
}

impl Scale {
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Full => "full",
            Scale::Quick => "quick",
        }
    }
}

/// One headline claim of a seed paper, checked against one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The seed paper's number, `000` for `000_e8004e1596fde6a5.txt`.
    pub seed: String,
    /// The claim, as one sentence.
    pub claim: String,
    /// What the paper reports for it, with the figure or section.
    pub paper: String,
    pub backend: Backend,
    pub scale: Scale,
    /// What this run measured, computed from its results.
    pub ours: String,
    /// Whether the claim holds by [`Headline::test`]; `None` when it could not be checked (see the module doc).
    pub holds: Option<bool>,
    /// The test that decides `holds`, with its threshold.
    pub test: String,
}

/// The outcome of checking one claim: what was measured and whether it passes, or why there is no value.
pub type Checked = Result<(String, bool), String>;

/// The parts of a claim that do not depend on the run: the sentence, the paper's value and the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub claim: &'static str,
    pub paper: &'static str,
    pub backend: Backend,
    pub test: &'static str,
}

impl Claim {
    /// The headline of this claim in one run. `checked` is `Ok((ours, holds))`, or `Err(why)` when the run lacks
    /// what the claim needs (`ours` becomes `missing: why`, `holds` null).
    pub fn checked(&self, seed: &str, scale: Scale, checked: Checked) -> Headline {
        let (ours, holds) = match checked {
            Ok((ours, holds)) => (ours, Some(holds)),
            Err(why) => (format!("missing: {why}"), None),
        };
        self.headline(seed, scale, ours, holds)
    }

    /// The headline of this claim when its backend did not run: `ours` is `not run: why`, `holds` null.
    pub fn not_run(&self, seed: &str, scale: Scale, why: &str) -> Headline {
        self.headline(seed, scale, format!("not run: {why}"), None)
    }

    fn headline(&self, seed: &str, scale: Scale, ours: String, holds: Option<bool>) -> Headline {
        Headline {
            seed: seed.to_string(),
            claim: self.claim.to_string(),
            paper: self.paper.to_string(),
            backend: self.backend,
            scale,
            ours,
            holds,
            test: self.test.to_string(),
        }
    }
}

/// Writes the headlines as a pretty JSON array (one object per claim, in order).
pub fn write_json(path: &Path, headlines: &[Headline]) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(headlines).context("serialising the headlines")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Reads a file written by [`write_json`].
pub fn read_json(path: &Path) -> anyhow::Result<Vec<Headline>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a JSON array of headlines", path.display()))
}

/// `yes`, `NO` (upper case, to stand out) or `-` (not checked).
pub fn holds_cell(holds: Option<bool>) -> &'static str {
    match holds {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// Width the terminal table is wrapped to (columns).
const TERMINAL_WIDTH: u16 = 160;

/// One line per claim: seed, backend, scale, claim, paper, ours, holds. The terminal style wraps the text
/// columns to [`TERMINAL_WIDTH`]; the Markdown style keeps each claim on one line. The test of each claim is in
/// the JSON file, not in the table.
pub fn render_table(headlines: &[Headline], style: Style) -> String {
    let mut table = Table::new();
    match style {
        Style::Terminal => {
            table
                .load_preset(UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(TERMINAL_WIDTH);
        }
        Style::Markdown => {
            table.load_preset(ASCII_MARKDOWN);
        }
    }
    table.set_header(vec![
        "seed", "backend", "scale", "claim", "paper", "ours", "holds",
    ]);
    for h in headlines {
        table.add_row(vec![
            h.seed.as_str(),
            h.backend.as_str(),
            h.scale.as_str(),
            h.claim.as_str(),
            h.paper.as_str(),
            h.ours.as_str(),
            holds_cell(h.holds),
        ]);
    }
    table.to_string()
}

/// `7 of 9 checked claims hold (2 not checked)`.
pub fn tally(headlines: &[Headline]) -> String {
    let checked = headlines.iter().filter(|h| h.holds.is_some()).count();
    let hold = headlines.iter().filter(|h| h.holds == Some(true)).count();
    let unchecked = headlines.len() - checked;
    let mut s = format!("{hold} of {checked} checked claims hold");
    if unchecked > 0 {
        s.push_str(&format!(" ({unchecked} not checked)"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEED: Claim = Claim {
        claim: "DCS is faster",
        paper: "up to 100× (Fig. 3)",
        backend: Backend::Sim,
        test: "ratio >= 31.6",
    };

    #[test]
    fn json_has_the_issue_field_names_and_null_for_unchecked() {
        let rows = vec![
            SPEED.checked("000", Scale::Full, Ok(("172×".into(), true))),
            SPEED.not_run("000", Scale::Quick, "--sim-only"),
        ];
        let v: serde_json::Value = serde_json::to_value(&rows).unwrap();
        assert_eq!(v[0]["seed"], "000");
        assert_eq!(v[0]["backend"], "sim");
        assert_eq!(v[0]["scale"], "full");
        assert_eq!(v[0]["ours"], "172×");
        assert_eq!(v[0]["holds"], true);
        assert_eq!(v[1]["scale"], "quick");
        assert_eq!(v[1]["ours"], "not run: --sim-only");
        assert!(v[1]["holds"].is_null());
    }

    #[test]
    fn a_missing_series_is_unchecked_and_says_what_is_missing() {
        let h = SPEED.checked("000", Scale::Full, Err("no DCS rows".into()));
        assert_eq!(h.ours, "missing: no DCS rows");
        assert_eq!(h.holds, None);
    }

    #[test]
    fn json_round_trips_through_the_file() {
        let dir = std::env::temp_dir().join(format!("cosched-headlines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("headlines.json");
        let rows = vec![SPEED.checked("000", Scale::Full, Ok(("2×".into(), false)))];
        write_json(&path, &rows).unwrap();
        assert_eq!(read_json(&path).unwrap(), rows);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn table_shows_every_claim_with_its_verdict() {
        let rows = vec![
            SPEED.checked("000", Scale::Full, Ok(("172×".into(), true))),
            SPEED.checked("000", Scale::Quick, Ok(("3×".into(), false))),
            SPEED.not_run("000", Scale::Full, "not root"),
        ];
        let t = render_table(&rows, Style::Markdown);
        assert!(
            t.contains("| 000  | sim     | full  | DCS is faster | up to 100× (Fig. 3) | 172×"),
            "{t}"
        );
        assert!(t.contains("| NO "), "{t}");
        assert!(t.contains("not run: not root"), "{t}");
        // 1 holds, 1 does not, 1 unchecked.
        assert_eq!(tally(&rows), "1 of 2 checked claims hold (1 not checked)");
    }
}
