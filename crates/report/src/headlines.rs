//! Headline claims as data: `results/headlines.json`, written by `cosched reproduce`.
//!
//! Each seed paper makes a few headline claims (SPEC.md §"The seed systems", "Headlines"; seed
//! `000_e8004e1596fde6a5.txt`'s abstract and §4.3: "DCS reduces job response times by up to two decimal orders
//! of magnitude over uncoordinated scheduling", "by up to 20 % over implicit scheduling while maintaining
//! fairness", ...). A [`Headline`] is one such claim checked against one run: the claim in a sentence, what the
//! paper reports, what this run measured, and the verdict of an explicit test whose threshold is stated in
//! [`Headline::test`]. The values are computed from the run's own `runs.json`; nothing here is typed in. The
//! claims themselves are data ([`crate::claims`]: words, statistics, thresholds and their verdicts); each seed's
//! claims live in the `cosched` binary (`crates/cli/src/reproduce/seed_NNN.rs`, the row readers they share in
//! `reproduce/claims.rs`); this module holds the record, its JSON file and its table.
//!
//! JSON: an array of objects, in the order the claims were computed (seed by seed, the simulated claims of a
//! seed first):
//!
//! ```json
//! {"seed": "000", "claim": "...", "paper": "...", "backend": "sim", "scale": "full",
//!  "ours": "...", "holds": true, "verdict": "within noise", "test": "...", "why": "..."}
//! ```
//!
//! `holds` is the point estimates' verdict (as before intervals were used); `verdict` is the intervals': `holds`,
//! `within noise` or `fails` ([`Verdict`]). `why` says why a threshold is not the paper's figure (`null` when
//! every threshold is). `holds` and `verdict` are `null` when the claim could not be checked in this run: its
//! backend did not run (`ours` then reads `not run: <why>`, e.g. `cosched reproduce --sim-only`) or the results
//! lack the series it needs (`ours` reads `missing: <what>`).

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
    /// Whether the point estimates pass [`Headline::test`]; `None` when it could not be checked (see the module
    /// doc).
    pub holds: Option<bool>,
    /// The verdict by the intervals: `holds`, `within noise` or `fails` (`None` when not checked, and in files
    /// written before verdicts had intervals).
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// The test that decides, with its threshold (generated from the threshold's value) and, where it is another,
    /// the paper's figure.
    pub test: String,
    /// Why a threshold is not the paper's figure; `None` when every threshold is.
    #[serde(default)]
    pub why: Option<String>,
}

/// A claim's verdict by the 90 % intervals of its statistics (see [`crate::claims`]), weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// Some statistic's whole interval is on the wrong side of its threshold.
    #[serde(rename = "fails")]
    Fails,
    /// No interval wholly on the wrong side, but some straddles its threshold.
    #[serde(rename = "within noise")]
    WithinNoise,
    /// Every statistic's whole interval is on the right side (its point estimate, where it has no interval).
    #[serde(rename = "holds")]
    Holds,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Fails => "fails",
            Verdict::WithinNoise => "within noise",
            Verdict::Holds => "holds",
        }
    }

    /// Both must hold: the weaker of the two.
    pub fn and(self, other: Verdict) -> Verdict {
        self.min(other)
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

/// The verdict column: `yes`, `NO`, or the point estimates' answer `(within noise)`, or `-` (not checked).
pub fn verdict_cell(holds: Option<bool>, verdict: Option<Verdict>) -> String {
    match (holds, verdict) {
        (None, _) => "-".to_string(),
        (Some(_), Some(Verdict::WithinNoise)) => {
            format!(
                "{} (within noise)",
                if holds == Some(true) { "yes" } else { "no" }
            )
        }
        (Some(_), Some(Verdict::Holds)) => "yes".to_string(),
        (Some(_), Some(Verdict::Fails)) => "NO".to_string(),
        (Some(_), None) => holds_cell(holds).to_string(),
    }
}

/// Width the terminal table is wrapped to (columns).
const TERMINAL_WIDTH: u16 = 160;

/// One line per claim: seed, backend, scale, claim, paper, ours, holds (with `(within noise)` where the
/// intervals straddle a threshold). The terminal style wraps the text
/// columns to [`TERMINAL_WIDTH`]; the Markdown style keeps each claim on one line. The test of each claim, and
/// why its threshold is not the paper's figure, are in the JSON file, not in the table.
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
            &verdict_cell(h.holds, h.verdict),
        ]);
    }
    table.to_string()
}

/// `7 of 9 checked claims hold (2 not checked); by their intervals: 5 hold, 3 within noise, 1 fails` — the
/// first count by the point estimates (`holds`), the second by [`Verdict`].
pub fn tally(headlines: &[Headline]) -> String {
    let checked = headlines.iter().filter(|h| h.holds.is_some()).count();
    let hold = headlines.iter().filter(|h| h.holds == Some(true)).count();
    let unchecked = headlines.len() - checked;
    let mut s = format!("{hold} of {checked} checked claims hold");
    if unchecked > 0 {
        s.push_str(&format!(" ({unchecked} not checked)"));
    }
    let count = |v: Verdict| headlines.iter().filter(|h| h.verdict == Some(v)).count();
    if headlines.iter().any(|h| h.verdict.is_some()) {
        s.push_str(&format!(
            "; by their intervals: {} hold, {} within noise, {} fail",
            count(Verdict::Holds),
            count(Verdict::WithinNoise),
            count(Verdict::Fails)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of the claim "DCS is faster" (claims are built in `crate::claims`, whose tests check the rows they
    /// make; here only the record, its file and its table).
    fn row(scale: Scale, ours: &str, holds: Option<bool>, verdict: Option<Verdict>) -> Headline {
        Headline {
            seed: "000".into(),
            claim: "DCS is faster".into(),
            paper: "up to 100× (Fig. 3)".into(),
            backend: Backend::Sim,
            scale,
            ours: ours.into(),
            holds,
            verdict,
            test: "the ratio is >= 31.6 (the paper: >= 100)".into(),
            why: Some("two orders, rounded on a log scale".into()),
        }
    }

    #[test]
    fn json_has_the_issue_field_names_and_null_for_unchecked() {
        let rows = vec![
            row(Scale::Full, "172×", Some(true), Some(Verdict::Holds)),
            row(Scale::Quick, "not run: --sim-only", None, None),
        ];
        let v: serde_json::Value = serde_json::to_value(&rows).unwrap();
        assert_eq!(v[0]["seed"], "000");
        assert_eq!(v[0]["backend"], "sim");
        assert_eq!(v[0]["scale"], "full");
        assert_eq!(v[0]["ours"], "172×");
        assert_eq!(v[0]["holds"], true);
        assert_eq!(v[0]["verdict"], "holds");
        assert_eq!(v[0]["test"], "the ratio is >= 31.6 (the paper: >= 100)");
        assert_eq!(v[0]["why"], "two orders, rounded on a log scale");
        assert_eq!(v[1]["scale"], "quick");
        assert_eq!(v[1]["ours"], "not run: --sim-only");
        assert!(v[1]["holds"].is_null());
        assert!(v[1]["verdict"].is_null());
        let noise = serde_json::to_value(Verdict::WithinNoise).unwrap();
        assert_eq!(noise, "within noise");
        assert_eq!(Verdict::WithinNoise.as_str(), "within noise");
    }

    #[test]
    fn verdicts_combine_to_the_weakest() {
        assert_eq!(
            Verdict::Holds.and(Verdict::WithinNoise),
            Verdict::WithinNoise
        );
        assert_eq!(Verdict::WithinNoise.and(Verdict::Fails), Verdict::Fails);
        assert_eq!(Verdict::Holds.and(Verdict::Holds), Verdict::Holds);
    }

    #[test]
    fn json_round_trips_through_the_file_and_older_files_still_read() {
        let dir = std::env::temp_dir().join(format!("cosched-headlines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("headlines.json");
        let rows = vec![row(
            Scale::Full,
            "2×",
            Some(false),
            Some(Verdict::WithinNoise),
        )];
        write_json(&path, &rows).unwrap();
        assert_eq!(read_json(&path).unwrap(), rows);
        // A file from before verdicts and reasons: read, with neither.
        std::fs::write(
            &path,
            r#"[{"seed": "000", "claim": "c", "paper": "p", "backend": "real", "scale": "full",
                "ours": "o", "holds": false, "test": "t"}]"#,
        )
        .unwrap();
        let old = read_json(&path).unwrap();
        assert_eq!(
            (old[0].holds, old[0].verdict, old[0].why.clone()),
            (Some(false), None, None)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn table_shows_every_claim_with_its_verdict() {
        let rows = vec![
            row(Scale::Full, "172×", Some(true), Some(Verdict::Holds)),
            row(Scale::Quick, "3×", Some(false), Some(Verdict::Fails)),
            row(Scale::Quick, "40×", Some(true), Some(Verdict::WithinNoise)),
            row(Scale::Full, "not run: not root", None, None),
        ];
        let t = render_table(&rows, Style::Markdown);
        assert!(
            t.contains("| 000  | sim     | full  | DCS is faster | up to 100× (Fig. 3) | 172×"),
            "{t}"
        );
        assert!(t.contains("| NO "), "{t}");
        assert!(t.contains("| yes (within noise) "), "{t}");
        assert!(t.contains("not run: not root"), "{t}");
        // 2 hold by their point estimates, 1 does not, 1 unchecked; by the intervals one of the two is noise.
        assert_eq!(
            tally(&rows),
            "2 of 3 checked claims hold (1 not checked); by their intervals: 1 hold, 1 within noise, 1 fail"
        );
        // Rows from before verdicts: the holds column alone.
        assert_eq!(verdict_cell(Some(true), None), "yes");
        assert_eq!(
            verdict_cell(Some(false), Some(Verdict::WithinNoise)),
            "no (within noise)"
        );
        assert_eq!(
            tally(&rows[3..]),
            "0 of 0 checked claims hold (1 not checked)"
        );
    }
}
