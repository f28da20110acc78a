//! The coscheduling agent in a lab run: `cosched agent` started for the run (in the host's namespaces: its
//! BPF tracepoints see every namespace), the job's processes wrapped in `cosched run --`, the agent's live
//! statistics read at the end of the run, its own CPU use from `/proc/<pid>`.
//!
//! This file is the lab's whole contract with `cosched-agent`.

use crate::experiment::AgentSettings;
use crate::process::{cpu_time_s, ManagedProcess, Placement};
use anyhow::{bail, Context, Result};
use cosched_report::Measurement;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A running agent; stopped (and reaped) on drop.
pub struct AgentHandle {
    process: ManagedProcess,
    cosched: PathBuf,
    socket: PathBuf,
}

/// The agent's statistics at the end of a run.
#[derive(Clone, Debug, Default)]
pub struct AgentSnapshot {
    pub raw: Value,
}

fn number(v: &Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_f64))
}

impl AgentSnapshot {
    /// Copy boosts and reaction latency into a measurement.
    pub fn fill(&self, m: &mut Measurement) {
        m.boosts_granted = number(&self.raw, &["boosts_granted", "boosts"]).unwrap_or(0.0) as u64;
        m.boosts_refused = number(&self.raw, &["boosts_refused", "refused"]).unwrap_or(0.0) as u64;
        m.reaction_p50_us = number(&self.raw, &["reaction_p50_us"]);
        m.reaction_p99_us = number(&self.raw, &["reaction_p99_us"]);
    }
}

impl AgentHandle {
    /// Start `cosched agent` with the configuration's settings and wait until its stats socket answers.
    pub fn start(cosched: &Path, settings: &AgentSettings, _cpus: &[u32]) -> Result<AgentHandle> {
        let socket = std::env::temp_dir().join(format!(
            "cosched-lab-agent-{}-{}.sock",
            std::process::id(),
            crate::cluster::new_run_id()
        ));
        let mut command = Command::new(cosched);
        command.arg("agent").arg("--socket").arg(&socket);
        if let Some(e) = settings.dcs_exponent {
            command.arg(format!("--dcs-exponent={e}"));
        }
        if let Some(c) = settings.dcs_constant_ms {
            command.arg(format!("--dcs-constant-ms={c}"));
        }
        if let Some(w) = settings.boost_window_us {
            command.arg(format!("--boost-window-us={w}"));
        }
        command.args(&settings.extra_args);
        let mut process = ManagedProcess::spawn("agent", command, &Placement::default())?;
        let deadline = Instant::now() + Duration::from_secs(15);
        while !socket.exists() {
            if let Some(exit) = process.try_reap()? {
                bail!("`cosched agent` exited at start: {}", exit.describe());
            }
            crate::signals::check()?;
            if Instant::now() > deadline {
                bail!(
                    "`cosched agent` did not open its socket {} within 15 s",
                    socket.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(AgentHandle {
            process,
            cosched: cosched.to_path_buf(),
            socket,
        })
    }

    /// `cosched run --socket <agent> -- <program> <args>`.
    pub fn wrap_job(&self, program: &Path, args: &[String]) -> Command {
        let mut command = Command::new(&self.cosched);
        command
            .arg("run")
            .arg("--socket")
            .arg(&self.socket)
            .arg("--")
            .arg(program)
            .args(args);
        command
    }

    /// The agent's CPU time so far, seconds.
    pub fn cpu_s(&self) -> Result<f64> {
        cpu_time_s(self.process.pid())
    }

    /// The agent's statistics now.
    pub fn snapshot(&self) -> Result<AgentSnapshot> {
        use std::io::{Read, Write};
        let mut stream =
            std::os::unix::net::UnixStream::connect(&self.socket).with_context(|| {
                format!(
                    "connecting to the agent's stats socket {}",
                    self.socket.display()
                )
            })?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"stats\n")?;
        let mut text = String::new();
        stream.read_to_string(&mut text)?;
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with('{'))
            .context("the agent sent no JSON statistics")?;
        Ok(AgentSnapshot {
            raw: serde_json::from_str(line).context("parsing the agent's statistics")?,
        })
    }

    /// Stop the agent (SIGTERM, then SIGKILL after 3 s) and check it ended cleanly.
    pub fn stop(mut self) -> Result<()> {
        let exit = self.process.terminate(Duration::from_secs(3))?;
        let _ = std::fs::remove_file(&self.socket);
        if exit.signal.is_some() || exit.code.is_some_and(|c| c != 0) {
            bail!("`cosched agent` did not stop cleanly: {}", exit.describe());
        }
        Ok(())
    }
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}
