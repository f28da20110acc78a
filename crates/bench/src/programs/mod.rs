//! The programs, one module each; `src/bin/cosched-*.rs` only call [`crate::main_with`] on them.

pub mod calcula;
pub mod pingpong;
