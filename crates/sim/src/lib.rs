//! Discrete-event cluster simulator (under construction).
pub mod cli;
pub mod experiment;
pub mod scenario;
