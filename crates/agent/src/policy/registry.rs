//! The registry of the agent's policies: one line per policy, the one place `--policy NAME` is looked up.
//! An unknown name is an error that lists the valid ones.

use crate::policy::{dcs, pb, Host, Policy, PolicyFlags};

/// One row of the registry.
pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Adds the policy's flags to `cosched agent`.
    pub flags: fn(clap::Command) -> clap::Command,
    /// Builds the policy from the parsed flags.
    pub build: fn(&clap::ArgMatches, &Host) -> anyhow::Result<Box<dyn Policy>>,
}

impl Entry {
    /// The row of a policy whose flags are `F`.
    pub fn of<F: PolicyFlags>(name: &'static str, summary: &'static str) -> Entry {
        Entry {
            name,
            summary,
            flags: F::augment_args,
            build: |matches, host| F::from_arg_matches(matches)?.build(host),
        }
    }

    /// The ids of this policy's flags.
    pub fn flag_ids(&self) -> Vec<String> {
        (self.flags)(clap::Command::new("flags"))
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect()
    }
}

/// The policy `cosched agent` runs unless told otherwise.
pub const DEFAULT_POLICY: &str = "dcs";

/// Every policy the agent knows: one line each.
pub fn registry() -> Vec<Entry> {
    vec![
        Entry::of::<dcs::DcsFlags>("dcs", dcs::SUMMARY),
        Entry::of::<pb::PbFlags>("pb", pb::SUMMARY),
        #[cfg(test)]
        Entry::of::<super::idle::IdleFlags>("idle", "does nothing (a test of the seam)"),
    ]
}

/// Looks a policy up by name; an unknown name is an error that lists the valid ones.
pub fn find(name: &str) -> anyhow::Result<Entry> {
    let all = registry();
    let valid: Vec<&str> = all.iter().map(|e| e.name).collect();
    let valid = valid.join(", ");
    all.into_iter()
        .find(|e| e.name == name)
        .ok_or_else(|| anyhow::anyhow!("unknown policy '{name}'; valid policies are: {valid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_policy_lists_the_valid_ones() {
        let err = find("gang").err().unwrap().to_string();
        assert!(err.contains("unknown policy 'gang'"), "{err}");
        assert!(err.contains("dcs"), "{err}");
        assert_eq!(find("dcs").unwrap().name, "dcs");
    }

    #[test]
    fn policy_names_are_unique() {
        let mut names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
