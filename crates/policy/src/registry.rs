//! The registry of policies: what `cosched policies` prints, and the one place that turns a policy name into
//! a resolved policy. An unknown name is an error that lists the valid ones.

use crate::budget::BudgetParams;
use crate::dcs::DcsParams;
use crate::spin::DEFAULT_SPIN;
use crate::MILLIS;

/// One tunable parameter of a policy.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: &'static str,
    pub unit: &'static str,
    pub default: String,
    pub description: &'static str,
}

/// One policy: its name, what it does, where it comes from, and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub seed: &'static str,
    pub params: Vec<ParamInfo>,
}

/// All policies cosched knows, in the order `cosched policies` prints them.
pub fn all() -> Vec<PolicyInfo> {
    vec![
        PolicyInfo {
            name: "none",
            summary: "uncoordinated: the node's own scheduler alone (the seeds' 'No DCS' baseline)",
            seed: "000_e8004e1596fde6a5.txt",
            params: vec![],
        },
        PolicyInfo {
            name: "dcs",
            summary: "dynamic coscheduling: boost a receiver that is not running when 2^E (Tc - Tp) + C >= Tq R",
            seed: "000_e8004e1596fde6a5.txt",
            params: vec![
                ParamInfo {
                    name: "exponent",
                    unit: "",
                    default: DcsParams::SPIN_ONLY.exponent.to_string(),
                    description: "E; the paper used -1 for spin-only and 2 for spin-block",
                },
                ParamInfo {
                    name: "constant_ms",
                    unit: "ms",
                    default: (DcsParams::SPIN_ONLY.constant_ns / MILLIS).to_string(),
                    description: "C; the paper used 0 for spin-only and 100 for spin-block",
                },
            ],
        },
        PolicyInfo {
            name: "budget",
            summary: "boost budget: a process's CPU time may not exceed its fair share slack/R of wall time plus a burst",
            seed: "000_e8004e1596fde6a5.txt",
            params: vec![
                ParamInfo {
                    name: "slack_ppm",
                    unit: "ppm",
                    default: BudgetParams::DEFAULT.slack_ppm.to_string(),
                    description: "multiplier of the fair share 1/R; 1000000 is exactly fair",
                },
                ParamInfo {
                    name: "burst_ms",
                    unit: "ms",
                    default: (BudgetParams::DEFAULT.burst_ns / MILLIS).to_string(),
                    description: "largest CPU credit a process may bank (also its starting credit)",
                },
                ParamInfo {
                    name: "demote_ms",
                    unit: "ms",
                    default: (BudgetParams::DEFAULT.demote_ns / MILLIS).to_string(),
                    description: "debt beyond which the process is overdrawn and yields (nice 19) until repaid",
                },
                ParamInfo {
                    name: "resume_ms",
                    unit: "ms",
                    default: (BudgetParams::DEFAULT.resume_ns / MILLIS).to_string(),
                    description: "credit at which a process that yielded runs normally again",
                },
            ],
        },
        PolicyInfo {
            name: "spin-block",
            summary: "receive rule: spin up to a limit, then block (implicit scheduling when paired with 'none')",
            seed: "000_e8004e1596fde6a5.txt",
            params: vec![ParamInfo {
                name: "spin_us",
                unit: "us",
                default: (DEFAULT_SPIN / crate::MICROS).to_string(),
                description: "spin time before blocking, about 2 context switches + a round trip",
            }],
        },
    ]
}

/// Looks a policy up by name.
pub fn find(name: &str) -> Result<PolicyInfo, UnknownPolicy> {
    all()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| UnknownPolicy {
            name: name.to_string(),
            valid: all().iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
        })
}

/// A policy name nobody registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown policy '{name}'; valid policies are: {valid} (see `cosched policies`)")]
pub struct UnknownPolicy {
    pub name: String,
    pub valid: String,
}

/// The registry as an aligned text table.
pub fn render_table() -> String {
    let mut out = String::new();
    for p in all() {
        out.push_str(&format!("{:<12} {}\n", p.name, p.summary));
        out.push_str(&format!("{:<12}   seed: {}\n", "", p.seed));
        for param in &p.params {
            let unit = if param.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", param.unit)
            };
            out.push_str(&format!(
                "{:<12}   --{:<14} default {}{}  {}\n",
                "", param.name, param.default, unit, param.description
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_name_lists_valid_ones() {
        let err = find("gang").unwrap_err();
        assert!(err.to_string().contains("unknown policy 'gang'"));
        assert!(err.to_string().contains("dcs"));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = all().iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
    }

    #[test]
    fn table_lists_dcs_defaults() {
        let t = render_table();
        assert!(t.contains("dcs"));
        assert!(t.contains("--exponent"));
        assert!(t.contains("default 1600 us"));
    }
}
