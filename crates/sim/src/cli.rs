//! `cosched sim` and `cosched sim-bench`.
use clap::Args;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Experiment file (TOML).
    pub file: std::path::PathBuf,
}

#[derive(Args, Debug)]
pub struct SimBenchArgs {}

pub fn run(_args: SimArgs) -> anyhow::Result<()> {
    anyhow::bail!("the simulator is not built yet")
}

pub fn bench(_args: SimBenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("the simulator is not built yet")
}
