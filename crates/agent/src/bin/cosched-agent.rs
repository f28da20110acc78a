//! `cosched-agent`: the agent's two subcommands without the rest of the workspace — `cosched-agent agent ...` is
//! `cosched agent ...`, `cosched-agent run ...` is `cosched run ...` (same code). The crate's privileged tests
//! use it to start, register with and kill a real agent process.
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cosched-agent",
    about = "cosched node agent (same as `cosched agent` / `cosched run`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the coscheduling agent (root, BPF), or query a running one.
    Agent(cosched_agent::cli::AgentArgs),
    /// Run a command as a managed parallel job.
    Run(cosched_agent::cli::RunArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Agent(a) => cosched_agent::cli::run_agent(a),
        Command::Run(a) => cosched_agent::cli::run_job(a),
    }
}
