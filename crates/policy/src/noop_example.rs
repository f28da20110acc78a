//! # `kind = "noop-example"`: an example policy that does nothing
//!
//! The template of a new policy, and the proof that adding one touches three files: this one, its row in the
//! policy table (`lib.rs`, with its `pub mod` line) and an experiment file
//! (`experiments/sim/examples/noop-example.toml`). From the row alone it is listed by `cosched policies`, read
//! from an experiment's `policy = { kind = "noop-example" }` table, run by the simulator and accepted by
//! `cosched agent --policy noop-example` — both halves as no coscheduling, because it says it does nothing
//! ([`PolicyParameters::does_nothing`]) and neither half has an adapter for it. A policy that acts adds one
//! adapter per half (ARCHITECTURE.md, "Adding a policy").
//!
//! A real policy puts its rule here too, as plain functions over plain data (style: `dcs.rs`), and its
//! parameters in its config struct: `#[serde(default, deny_unknown_fields)]`, one field per parameter in user
//! units (`_ms`, `_us`, `_ppm`), each described by [`PolicyParameters::params`] and checked by
//! [`PolicyParameters::validate`].

use crate::parameters::{ParamInfo, PolicyConfigError, PolicyParameters};
use serde::{Deserialize, Serialize};

/// `kind = "noop-example"`: no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoopExampleConfig {}

impl PolicyParameters for NoopExampleConfig {
    fn kind(&self) -> &'static str {
        "noop-example"
    }
    fn summary(&self) -> &'static str {
        "EXAMPLE, does nothing: the template of a new policy (ARCHITECTURE.md); runs as no coscheduling"
    }
    fn seed(&self) -> &'static str {
        "none (an example)"
    }
    fn params(&self) -> Vec<ParamInfo> {
        Vec::new()
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        Ok(())
    }
    fn does_nothing(&self) -> bool {
        true
    }
}
