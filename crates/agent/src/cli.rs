//! `cosched agent` and `cosched run`.
use clap::Args;

#[derive(Args, Debug)]
pub struct AgentArgs {}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The command to run as a managed job.
    #[arg(trailing_var_arg = true, required = true)]
    pub command: Vec<String>,
}

pub fn run_agent(_args: AgentArgs) -> anyhow::Result<()> {
    anyhow::bail!("the agent is not built yet")
}

pub fn run_job(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("the agent is not built yet")
}
