//! Linux coscheduling agent (under construction).
pub mod cli;
