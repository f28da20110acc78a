//! What every policy's parameter struct tells about itself ([`PolicyParameters`]), apart from the enum of all
//! policies ([`crate::config::PolicyConfig`]): a policy's own file implements this and needs nothing of the enum,
//! which is generated from the policy table and names every policy's file.

/// One tunable parameter of a policy.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// As written in a policy table; the agent's flag is `--` and this with `-` for `_`.
    pub name: &'static str,
    /// `ms`, `us`, `ppm`, or empty for a plain number.
    pub unit: &'static str,
    /// The default, as it would be written in a file.
    pub default: String,
    pub description: &'static str,
}

/// What every policy's parameter struct tells about itself. The registry (`cosched policies`) is these methods
/// called on each kind's [`Default`].
pub trait PolicyParameters {
    /// The registry name and `kind` tag, e.g. `dcs`.
    fn kind(&self) -> &'static str;
    /// One line: what the policy does.
    fn summary(&self) -> &'static str;
    /// The seed paper it comes from (a file in the seeds folder).
    fn seed(&self) -> &'static str;
    /// Every field, in declaration order: its name as written (TOML key; agent flag with `-` for `_`), its
    /// unit, its value in `self` (on `Self::default()`, the default) and its meaning.
    fn params(&self) -> Vec<ParamInfo>;
    /// Checks every field, naming the first bad one.
    fn validate(&self) -> Result<(), PolicyConfigError>;
    /// Whether the policy never acts (an example, a placeholder). A half (the simulator, the agent) that has no
    /// adapter of its own for such a kind runs it as no coscheduling instead of refusing it, so it needs no
    /// glue there. Such a kind has no parameters: nothing could read them (a test checks).
    fn does_nothing(&self) -> bool {
        false
    }
}

/// A parameter value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct PolicyConfigError {
    /// The policy's kind.
    pub kind: &'static str,
    /// The parameter, as written.
    pub field: &'static str,
    /// What is wrong and what to do about it.
    pub message: String,
}
