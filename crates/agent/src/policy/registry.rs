//! The registry of the agent's policies, the one place `--policy NAME` is looked up: the rows of `policy/mod.rs`
//! (one per policy, beside its `mod` line) and the policy core's kinds that do nothing. An unknown name is an
//! error that lists the valid ones.
//!
//! A policy-core kind that does nothing (`PolicyParameters::does_nothing`, e.g. the core's example) needs no line:
//! unless a line names it, it is registered under its kind, with no flags, and runs as [`NoCoscheduling`].

use crate::policy::{Arrival, Counter, Ctx, Host, Policy, PolicyFlags};
use cosched_policy::config::PolicyConfig;

/// One row of the registry.
pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    /// The policy core's kinds (`cosched policies`, experiment files) whose parameters are this policy's flags,
    /// with `-` for `_` and the same defaults (checked by a test).
    pub kinds: Vec<&'static str>,
    /// Its flags that no kind has: the mechanism's own knobs, each with why it is the agent's alone.
    pub agent_only: &'static [(&'static str, &'static str)],
    /// Adds the policy's flags to `cosched agent`.
    pub flags: fn(clap::Command) -> clap::Command,
    /// Builds the policy from the parsed flags.
    pub build: fn(&clap::ArgMatches, &Host) -> anyhow::Result<Box<dyn Policy>>,
}

impl Entry {
    /// The row of a policy whose flags are `F`.
    pub fn of<F: PolicyFlags>(
        name: &'static str,
        summary: &'static str,
        kinds: &'static [&'static str],
        agent_only: &'static [(&'static str, &'static str)],
    ) -> Entry {
        Entry {
            name,
            summary,
            kinds: kinds.to_vec(),
            agent_only,
            flags: F::augment_args,
            build: |matches, host| {
                F::check_given(matches)?;
                F::from_arg_matches(matches)?.build(host)
            },
        }
    }

    /// The row of a policy-core kind that does nothing and has no line of its own: no flags (such a kind has
    /// no parameters), run as [`NoCoscheduling`].
    fn doing_nothing(kind: &'static str, summary: &'static str) -> Entry {
        Entry {
            name: kind,
            summary,
            kinds: vec![kind],
            agent_only: &[],
            flags: |cmd| cmd,
            build: |_, _| Ok(Box::new(NoCoscheduling)),
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

/// Every policy the agent knows: its own, one row each ([`super::rows`], beside their `mod` lines), then the
/// policy core's kinds that do nothing.
pub fn registry() -> Vec<Entry> {
    let mut all = super::rows();
    for kind in PolicyConfig::every_kind() {
        let parameters = kind.parameters();
        if parameters.does_nothing() && all.iter().all(|e| e.name != kind.kind()) {
            all.push(Entry::doing_nothing(kind.kind(), parameters.summary()));
        }
    }
    all
}

/// The agent's policy for a kind that does nothing: it never acts, so the threads keep the kernel's own
/// scheduling (what the machine does without the agent).
struct NoCoscheduling;

impl Policy for NoCoscheduling {
    fn describe(&self) -> Vec<String> {
        Vec::new()
    }
    fn counters(&self) -> &'static [Counter] {
        &[]
    }
    fn on_arrival(&mut self, _ctx: &mut Ctx, _arrival: &Arrival) {}
    fn on_window_end(&mut self, _ctx: &mut Ctx, _tid: u32) {}
    fn tick_needed(&self) -> bool {
        false
    }
}

/// The agent's part of `cosched policies`: what `cosched agent --policy NAME` runs, the kinds whose parameters
/// are its flags, its own flags, and the kinds only the simulator has.
pub fn render_table() -> String {
    let mut out =
        format!("\nThe agent (cosched agent --policy NAME, default {DEFAULT_POLICY}) runs:\n\n");
    let all = registry();
    for e in &all {
        out.push_str(&format!("{:<12} {}\n", e.name, e.summary));
        // A kind that does nothing has no parameters to list.
        if !e.kinds.is_empty() && !e.flag_ids().is_empty() {
            out.push_str(&format!(
                "{:<12}   the parameters of {} above, as flags (`cosched agent --help`: the agent's defaults)\n",
                "",
                e.kinds.join(" and ")
            ));
        }
        for (flag, why) in e.agent_only {
            out.push_str(&format!(
                "{:<12}   --{:<16} {why}\n",
                "",
                flag.replace('_', "-")
            ));
        }
    }
    let simulated: Vec<&str> = cosched_policy::registry::all()
        .iter()
        .map(|p| p.name)
        // `none` is the real machine without the agent; spin-block is a receive rule, not a policy.
        .filter(|kind| {
            !["none", cosched_policy::registry::SPIN_BLOCK].contains(kind)
                && !all.iter().any(|e| e.kinds.contains(kind))
        })
        .collect();
    out.push_str(&format!(
        "\nIn the simulator only (no agent policy yet): {}\n",
        simulated.join(", ")
    ));
    out
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
        let err = find("lottery").err().unwrap().to_string();
        assert!(err.contains("unknown policy 'lottery'"), "{err}");
        assert!(err.contains("dcs"), "{err}");
        assert_eq!(find("dcs").unwrap().name, "dcs");
    }

    /// Both directions: every flag of an agent policy is a parameter of one of its kinds or says why it is the
    /// agent's alone, and every parameter of its kinds is one of its flags (the defaults: `cli.rs`).
    #[test]
    fn every_flag_of_an_agent_policy_is_a_parameter_of_its_kinds_or_says_why_not() {
        for e in registry() {
            let params: Vec<String> = e
                .kinds
                .iter()
                .flat_map(|k| {
                    let info = cosched_policy::registry::find(k)
                        .unwrap_or_else(|_| panic!("{}: kind {k} is not in the registry", e.name));
                    info.params.into_iter().map(|p| p.name.to_string())
                })
                .collect();
            let flags = e.flag_ids();
            for flag in &flags {
                let theirs = params.contains(flag);
                let own = e
                    .agent_only
                    .iter()
                    .any(|(f, why)| f == flag && !why.is_empty());
                assert!(
                    theirs != own,
                    "{}: --{flag} must be a parameter of {:?} or an agent-only flag with a reason, not both",
                    e.name,
                    e.kinds
                );
            }
            for p in &params {
                assert!(flags.contains(p), "{}: parameter {p} has no flag", e.name);
            }
            for (f, _) in e.agent_only {
                assert!(
                    flags.iter().any(|x| x == f),
                    "{}: agent_only lists --{f}, no such flag",
                    e.name
                );
            }
        }
    }

    #[test]
    fn policies_lists_what_the_agent_runs_and_what_only_the_simulator_has() {
        let t = render_table();
        assert!(t.contains("dcs ") && t.contains("pb "), "{t}");
        assert!(t.contains("the parameters of dcs and budget above"), "{t}");
        assert!(t.contains("--boost-us"), "{t}");
        let line = t
            .lines()
            .find(|l| l.starts_with("In the simulator only"))
            .unwrap();
        assert!(line.contains("scs") && line.contains("fifo"), "{line}");
        for agent_kind in ["pb", "pred", "dyn", "budget", "none"] {
            assert!(
                !line.contains(&format!(" {agent_kind},"))
                    && !line.ends_with(&format!(" {agent_kind}")),
                "{line}"
            );
        }
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
