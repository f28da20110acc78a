//! The registry of policies: what `cosched policies` prints. An unknown name is an error that lists the valid
//! ones.
//!
//! Generated, not written: every coscheduling policy is one kind of [`PolicyConfig`], and its entry here is
//! what that kind's parameter struct says about itself ([`PolicyParameters`]: name, summary, seed, and each
//! field's name, unit, default and meaning), so the registry, the experiment files' policy tables and the
//! rule's defaults cannot drift apart. The one row that is not a policy is the `spin-block` receive rule, whose
//! spin time an experiment gives beside the policy (`receive = "spin-block"`, `spin_us`).

pub use crate::config::ParamInfo;
use crate::config::{PolicyConfig, PolicyParameters};
use crate::spin::DEFAULT_SPIN;
use crate::MICROS;

/// One policy: its name, what it does, where it comes from, and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub seed: &'static str,
    pub params: Vec<ParamInfo>,
}

/// The registry entry of a policy's parameter struct, its fields at their defaults.
pub fn info(policy: &dyn PolicyParameters) -> PolicyInfo {
    PolicyInfo {
        name: policy.kind(),
        summary: policy.summary(),
        seed: policy.seed(),
        params: policy.params(),
    }
}

/// The registry name of the spin-block receive rule, listed after the policies.
pub const SPIN_BLOCK: &str = "spin-block";

/// All policies cosched knows, in the order `cosched policies` prints them: every kind of [`PolicyConfig`],
/// then the spin-block receive rule.
pub fn all() -> Vec<PolicyInfo> {
    let mut all: Vec<PolicyInfo> = PolicyConfig::every_kind()
        .iter()
        .map(|policy| info(policy.parameters()))
        .collect();
    all.push(PolicyInfo {
        name: SPIN_BLOCK,
        summary: "receive rule: spin up to a limit, then block (implicit scheduling when paired with 'none')",
        seed: "000_e8004e1596fde6a5.txt",
        params: vec![ParamInfo {
            name: "spin_us",
            unit: "us",
            default: (DEFAULT_SPIN / MICROS).to_string(),
            description: "spin time before blocking, about 2 context switches + a round trip",
        }],
    });
    all
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

/// The registry as an aligned text table: each policy, its seed, and each parameter as it is written in an
/// experiment's policy table and as the agent's flag.
pub fn render_table() -> String {
    let mut out = String::from(
        "A policy is a table in an experiment file, policy = { kind = \"dcs\", exponent = 2 }; its parameters are\n\
         also the agent's flags, with '-' for '_' (--constant-ms). spin-block is a receive rule, written beside\n\
         the policy: receive = \"spin-block\", spin_us = 1600.\n\n",
    );
    for p in all() {
        out.push_str(&format!("{:<12} {}\n", p.name, p.summary));
        out.push_str(&format!("{:<12}   seed: {}\n", "", p.seed));
        for param in &p.params {
            let value = if param.unit.is_empty() {
                param.default.clone()
            } else {
                format!("{} {}", param.default, param.unit)
            };
            out.push_str(&format!(
                "{:<12}   {:<12} default {:<12} {}\n",
                "", param.name, value, param.description
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
        // The table's kinds in order (a policy added later comes before spin-block), then spin-block.
        let message = err.to_string();
        assert!(
            message.starts_with(
                "unknown policy 'gang'; valid policies are: none, dcs, budget, pred, dyn, pb, fifo, scs, cs, "
            ),
            "{message}"
        );
        assert!(
            message.ends_with(", spin-block (see `cosched policies`)"),
            "{message}"
        );
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = all().iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
    }

    #[test]
    fn table_lists_every_parameter_with_its_default() {
        let t = render_table();
        // DCS: the seed's spin-only setting E = -1, C = 0.
        assert!(t.contains("exponent     default -1           E;"), "{t}");
        assert!(t.contains("constant_ms  default 0 ms         C;"), "{t}");
        // The budget's floor, which the hand-written registry had lost: 160 ms.
        assert!(
            t.contains("floor_ms     default 160 ms       most debt"),
            "{t}"
        );
        assert!(
            t.contains("spin_us      default 1600 us      spin time"),
            "{t}"
        );
    }

    #[test]
    fn budget_lists_every_field_of_its_parameters() {
        // BudgetParams has six fields (slack, burst, floor, demote, resume, open); the registry lists all six.
        let budget = find("budget").unwrap();
        let names: Vec<_> = budget.params.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "slack_ppm",
                "burst_ms",
                "floor_ms",
                "demote_ms",
                "resume_ms",
                "open_ms"
            ]
        );
        let defaults: Vec<_> = budget.params.iter().map(|p| p.default.as_str()).collect();
        // BudgetParams::DEFAULT: exactly fair, 160 ms burst and floor, 10 ms demote, 60 ms resume and opening.
        assert_eq!(defaults, ["1000000", "160", "160", "10", "60", "60"]);
    }
}
