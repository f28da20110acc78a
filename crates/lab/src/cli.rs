//! `cosched lab`.
use clap::Args;

#[derive(Args, Debug)]
pub struct LabArgs {
    /// Experiment file (TOML).
    pub file: std::path::PathBuf,
}

pub fn run(_args: LabArgs) -> anyhow::Result<()> {
    anyhow::bail!("the lab is not built yet")
}
