//! `cosched` — the one binary. Each subcommand's arguments and behaviour live in the crate that owns it; this
//! file only dispatches.

use clap::{Parser, Subcommand};

mod docs;
mod reproduce;

/// Coscheduling for parallel jobs on shared Linux machines and clusters.
#[derive(Parser)]
#[command(name = "cosched", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The main job: seed 000's experiments in the simulator and, where the machine allows it (root, BPF), the
    /// real ping-pong with and without the agent, then both side by side.
    Reproduce(reproduce::ReproduceArgs),
    /// The docs' measured tables: `docs tables` re-renders each from its committed data (docs/data/*.json);
    /// `--check` only verifies them.
    Docs(docs::DocsArgs),
    /// Run a simulated experiment file (TOML) and write its table, CSV/JSON and plots.
    Sim(cosched_sim::cli::SimArgs),
    /// Measure the simulator's speed: events per second and the 1,000,000-round-trip Latency run.
    SimBench(cosched_sim::cli::SimBenchArgs),
    /// Run one of the real benchmark programs (the same code as the `cosched-<program>` binaries).
    Bench(cosched_bench::cli::BenchArgs),
    /// List the coscheduling policies, their parameters, defaults and seed papers.
    Policies,
    /// Run a real experiment on an emulated cluster of network namespaces on this machine (root).
    Lab(cosched_lab::cli::LabArgs),
    /// Run the coscheduling agent on this node (root, BPF).
    Agent(cosched_agent::cli::AgentArgs),
    /// Run a command as a managed parallel job: the agent coschedules it and all its descendants.
    Run(cosched_agent::cli::RunArgs),
    /// Queue a parallel job for the Self Co-Scheduling manager (seed 001); prints its id.
    Submit(cosched_manager::cli::SubmitArgs),
    /// List the Self Co-Scheduling queue: each job's state, partition, times and exit.
    Queue(cosched_manager::cli::QueueArgs),
    /// Cancel a queued or running job of the Self Co-Scheduling queue.
    Cancel(cosched_manager::cli::CancelArgs),
    /// The Self Co-Scheduling manager (root): partitions the CPUs into cpusets by the MPL, re-partitioning at
    /// each quantum, and runs the queue FCFS.
    Manager(cosched_manager::cli::ManagerArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Reproduce(args) => reproduce::run(args),
        Command::Docs(args) => docs::run(args),
        Command::Sim(args) => cosched_sim::cli::run(args),
        Command::SimBench(args) => cosched_sim::cli::bench(args),
        Command::Bench(args) => cosched_bench::cli::run(args),
        Command::Policies => {
            print!(
                "{}{}",
                cosched_policy::registry::render_table(),
                cosched_agent::policy::registry::render_table()
            );
            Ok(())
        }
        Command::Lab(args) => cosched_lab::cli::run(args),
        Command::Agent(args) => cosched_agent::cli::run_agent(args),
        Command::Run(args) => cosched_agent::cli::run_job(args),
        Command::Submit(args) => cosched_manager::cli::submit(args),
        Command::Queue(args) => cosched_manager::cli::queue(args),
        Command::Cancel(args) => cosched_manager::cli::cancel(args),
        Command::Manager(args) => cosched_manager::cli::manager(args),
    }
}
