//! The programs, one module each; `src/bin/cosched-*.rs` only call [`crate::main_with`] on them.

pub mod alltoall;
pub mod barrier;
pub mod calcula;
pub mod local;
pub mod masterslave;
pub mod multigrid;
pub mod pingpong;
pub mod stencil;
