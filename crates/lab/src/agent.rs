//! The coscheduling agent in a lab run: `cosched agent` started for the run in the host's namespaces and root
//! cgroups (its BPF tracepoints see every namespace; it boosts with SCHED_FIFO, which the experiment cgroup
//! allows through its `cpu.rt_runtime_us`), the job's processes wrapped in `cosched run --`, the agent's
//! statistics ([`cosched_agent::proto::AgentStats`]) read at the end of the run, its CPU use over the run from
//! `/proc/<pid>`.

use crate::experiment::AgentSettings;
use crate::process::{cpu_time_s, ManagedProcess, Placement};
use anyhow::{bail, Context, Result};
use cosched_agent::proto::{AgentStats, Client};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long the lab waits for a new agent to answer on its socket.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);

/// A running agent; killed (and reaped) on drop if not stopped.
pub struct AgentHandle {
    process: ManagedProcess,
    cosched: PathBuf,
    socket: PathBuf,
    client: Client,
}

/// The `cosched agent` arguments for a configuration.
pub fn agent_args(socket: &Path, settings: &AgentSettings) -> Vec<String> {
    let mut args = vec![
        "agent".to_string(),
        "--socket".into(),
        socket.display().to_string(),
    ];
    if let Some(e) = settings.dcs_exponent {
        args.push(format!("--exponent={e}"));
    }
    if let Some(c) = settings.dcs_constant_ms {
        args.push(format!("--constant-ms={c}"));
    }
    if let Some(w) = settings.boost_window_us {
        args.push(format!("--boost-us={w}"));
    }
    args.extend(settings.extra_args.iter().cloned());
    args
}

impl AgentHandle {
    /// Start `cosched agent` with the configuration's settings; wait (15 s at most) until it answers.
    pub fn start(cosched: &Path, settings: &AgentSettings, run_id: &str) -> Result<AgentHandle> {
        let socket = crate::cleanup::agent_socket(run_id);
        let mut command = Command::new(cosched);
        command.args(agent_args(&socket, settings));
        // If the lab dies outright the agent gets SIGTERM, so it restores every task it changed and exits.
        let placement = Placement::default().death_signal(libc::SIGTERM);
        let mut process = ManagedProcess::spawn("agent", command, &placement)?;
        let client = match wait_until_it_answers(&mut process, &socket) {
            Ok(client) => client,
            Err(e) => {
                // Interrupted or failed while starting: stopped as a running one is (see `Drop`).
                stop_quietly(&mut process, &socket);
                return Err(e);
            }
        };
        Ok(AgentHandle {
            process,
            cosched: cosched.to_path_buf(),
            socket,
            client,
        })
    }

    /// `cosched run --socket <agent> --name <name> --as-root -- <program> <args>`: the lab's jobs join cgroups
    /// and namespaces, so they stay root even when the lab was started through sudo.
    pub fn wrap_job(&self, name: &str, program: &Path, args: &[String]) -> Command {
        let mut command = Command::new(&self.cosched);
        command
            .arg("run")
            .arg("--socket")
            .arg(&self.socket)
            .arg("--name")
            .arg(name)
            .arg("--as-root")
            .arg("--");
        command.arg(program).args(args);
        command
    }

    /// The agent's CPU time so far (all its threads), seconds.
    pub fn cpu_s(&self) -> Result<f64> {
        cpu_time_s(self.process.pid())
    }

    /// Registers a running process (and its future descendants) as a job of its own named `name`.
    pub fn register(&self, pid: u32, name: &str) -> Result<()> {
        self.client
            .register(pid, name)
            .map(|_| ())
            .with_context(|| format!("registering pid {pid} ({name}) with the agent"))
    }

    /// The agent's statistics now.
    pub fn stats(&self) -> Result<AgentStats> {
        self.client.stats()
    }

    /// Stop the agent (SIGTERM; SIGKILL after 5 s) and check it ended cleanly: it restores every task it
    /// changed on the way out. Returns what it printed on stderr (its settings, and with `--log-actions` one
    /// line per action).
    pub fn stop(mut self) -> Result<String> {
        let exit = self.process.terminate(Duration::from_secs(5))?;
        if exit.signal.is_some_and(|s| s != libc::SIGTERM) || exit.code.is_some_and(|c| c != 0) {
            bail!("`cosched agent` did not stop cleanly: {}", exit.describe());
        }
        Ok(exit.stderr)
    }
}

/// Wait (at most [`START_TIMEOUT`]) until the agent answers on `socket`.
fn wait_until_it_answers(process: &mut ManagedProcess, socket: &Path) -> Result<Client> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(exit) = process.try_reap()? {
            bail!("`cosched agent` exited at start: {}", exit.describe());
        }
        crate::signals::check()?;
        if socket.exists() {
            if let Ok(client) = Client::connect(socket) {
                return Ok(client);
            }
        }
        if Instant::now() > deadline {
            bail!(
                "`cosched agent` did not answer on {} within {:?}",
                socket.display(),
                START_TIMEOUT
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long an agent dropped while running (an interrupted or failed run) has to restore what it changed.
const DROP_GRACE: Duration = Duration::from_secs(2);

/// SIGTERM an agent still running, so that it restores every task it changed and removes its socket (SIGKILL
/// after [`DROP_GRACE`]; its guardian restores then), and remove the socket if it stayed behind.
fn stop_quietly(process: &mut ManagedProcess, socket: &Path) {
    if !process.is_reaped() {
        let _ = process.terminate(DROP_GRACE);
    }
    let _ = std::fs::remove_file(socket);
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        stop_quietly(&mut self.process, &self.socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_map_to_agent_flags() {
        let s = AgentSettings {
            dcs_exponent: Some(2),
            dcs_constant_ms: Some(100.0),
            boost_window_us: Some(500),
            extra_args: vec!["--grace-us=50".into()],
        };
        let args = agent_args(Path::new("/run/cosched/x.sock"), &s);
        assert_eq!(
            args,
            [
                "agent",
                "--socket",
                "/run/cosched/x.sock",
                "--exponent=2",
                "--constant-ms=100",
                "--boost-us=500",
                "--grace-us=50"
            ]
        );
    }
}
