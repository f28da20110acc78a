//! Emulated-cluster lab (under construction).
pub mod cli;
