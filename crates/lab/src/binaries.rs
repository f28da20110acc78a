//! Where the lab finds the programs it starts: the `cosched-*` bench binaries, the `cosched` binary (for
//! `cosched agent`, `cosched run` and `cosched bench`) and the MPI ping-pong.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Where the lab finds the programs it starts.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// Directory of the `cosched-*` bench binaries.
    pub bench_dir: PathBuf,
    /// The `cosched` binary (for `cosched agent` and `cosched run`).
    pub cosched: PathBuf,
    /// Directory of the MPI ping-pong binary (`mpi_pingpong`), if MPI runs are wanted.
    pub mpi_dir: Option<PathBuf>,
}

impl Binaries {
    /// Everything beside the running `cosched` binary, where `cargo build` puts the bench binaries too.
    pub fn beside_current_exe() -> Result<Binaries> {
        let cosched = std::env::current_exe().context("finding the cosched binary")?;
        let dir = cosched.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Binaries {
            bench_dir: dir.clone(),
            cosched,
            mpi_dir: Some(dir),
        })
    }

    pub fn bench(&self, name: &str) -> PathBuf {
        if name == "mpi_pingpong" {
            if let Some(dir) = &self.mpi_dir {
                return dir.join(name);
            }
        }
        self.bench_dir.join(name)
    }

    /// How to start benchmark program `name`: its own binary (`cosched-pingpong`) where it is built, else the
    /// same code through `cosched bench pingpong` (so `cargo run -p cosched` alone is enough for the lab).
    /// Returns the program and the arguments that go before the program's own.
    pub fn bench_invocation(&self, name: &str) -> (PathBuf, Vec<String>) {
        let own = self.bench(name);
        match name.strip_prefix("cosched-") {
            Some(program) if !own.is_file() && self.cosched.is_file() => (
                self.cosched.clone(),
                vec!["bench".to_string(), program.to_string()],
            ),
            _ => (own, Vec::new()),
        }
    }
}
