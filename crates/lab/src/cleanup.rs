//! Nothing left behind: what a lab run leaves when it is killed outright, found and removed.
//!
//! ## Problem
//! A lab's guards (processes, cgroups, namespaces) run on every exit path but one: a `kill -9` of the lab (or a
//! timeout, an OOM kill, a lost machine). Its CPU-bound competitors then spin on in cgroups with
//! `cpu.shares = 262144` (everything else on the machine gets ~0.4 % of a CPU), its agent stays at SCHED_FIFO,
//! its namespaces and cgroups (holding RT runtime) stay.
//!
//! ## Approach
//! Three layers, each enough for most of it:
//! 1. every process the lab starts gets a signal from the kernel when the lab dies (`PR_SET_PDEATHSIG`,
//!    [`crate::process`]; the agent SIGTERM, so it restores what it boosted) and a competitor carries its own
//!    deadline;
//! 2. a *reaper*: `cosched lab --cleanup --after-exit-of <lab pid>`, started once per lab process in its own
//!    session ([`spawn_reaper`]); it waits on a pidfd of the lab (no wake-ups while the lab lives) and runs
//!    [`sweep`] the moment it is gone — which catches what the lab's children started in turn (MPI ranks,
//!    `cosched run`'s command), since those are in the experiment cgroups;
//! 3. [`sweep`] at every lab start and on `cosched lab --cleanup`.
//!
//! [`sweep`] touches only what a lab made and whose lab is dead: names carry the lab's pid (`cosched-l<pid>x<n>`
//! cgroups and namespaces, agent sockets `/run/cosched/lab-l<pid>x<n>.sock`), so a live lab's are never touched.
//! It also restores the boosts of agents that died with their guardian ([`cosched_agent::guardian::sweep_stale`]).

use crate::cluster::{alive, owner_pid, remove_stale};
use anyhow::{Context, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where the lab's agents put their control sockets.
pub const SOCKET_DIR: &str = "/run/cosched";

/// The control socket of the agent of lab run `run_id`.
pub fn agent_socket(run_id: &str) -> PathBuf {
    Path::new(SOCKET_DIR).join(format!("lab-{run_id}.sock"))
}

/// The lab pid in an agent socket's path (`.../lab-l<pid>x<n>.sock`), if it is one.
fn socket_owner(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let run_id = name.strip_prefix("lab-")?.strip_suffix(".sock")?;
    owner_pid(&format!("cosched-{run_id}"))
}

/// `cosched agent --socket /run/cosched/lab-l<pid>x<n>.sock` processes whose lab is dead: (pid, socket).
fn orphaned_agents() -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            if !args.iter().any(|a| *a == b"agent") {
                return None;
            }
            let at = args.iter().position(|a| *a == b"--socket")?;
            let socket = PathBuf::from(std::str::from_utf8(args.get(at + 1)?).ok()?);
            let owner = socket_owner(&socket)?;
            (!alive(owner)).then_some((pid, socket))
        })
        .collect()
}

/// Remove everything left by lab runs whose lab process is gone; returns what was removed, one line each.
///
/// Processes in their cgroups are killed, their agents stopped (SIGTERM: an agent restores what it changed;
/// SIGKILL after a second, and then its guardian restores), their cgroups, namespaces and sockets removed, and
/// boosts left by agents that died together with their guardians put back.
pub fn sweep() -> Result<Vec<String>> {
    let mut removed = remove_stale()?;
    let agents = orphaned_agents();
    for (pid, _) in &agents {
        // SAFETY: an agent started for a lab run whose lab is gone (its socket names the dead lab).
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while agents.iter().any(|(pid, _)| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for (pid, socket) in &agents {
        if alive(*pid) {
            // SAFETY: as above; its guardian restores what it boosted.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
            removed.push(format!(
                "agent pid {pid} of a dead lab ({}), killed",
                socket.display()
            ));
        } else {
            removed.push(format!(
                "agent pid {pid} of a dead lab ({}), stopped",
                socket.display()
            ));
        }
    }
    if let Ok(entries) = std::fs::read_dir(SOCKET_DIR) {
        for path in entries.flatten().map(|e| e.path()) {
            if socket_owner(&path).is_some_and(|owner| !alive(owner))
                && std::fs::remove_file(&path).is_ok()
            {
                removed.push(format!("socket {}", path.display()));
            }
        }
    }
    for restored in cosched_agent::guardian::sweep_stale() {
        removed.push(restored);
    }
    Ok(removed)
}

/// Starts the reaper for this process (once per process; later calls do nothing): `cosched lab --cleanup
/// --after-exit-of <our pid>` in a session of its own, so the terminal's signals to the lab do not reach it.
pub fn spawn_reaper(cosched: &Path) -> Result<()> {
    static STARTED: OnceLock<()> = OnceLock::new();
    if STARTED.get().is_some() {
        return Ok(());
    }
    let mut command = Command::new(cosched);
    command
        .args(["lab", "--cleanup", "--after-exit-of"])
        .arg(std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: setsid is async-signal-safe and runs in the child before exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting the lab's reaper ({})", cosched.display()))?;
    // It outlives us by design: it is reaped by whoever inherits it once we are gone.
    std::mem::forget(child);
    let _ = STARTED.set(());
    Ok(())
}

/// How long the reaper waits for the exited lab's parent to reap it before it sweeps.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// The reaper's whole life: wait until process `lab` is gone (exited and reaped), then [`sweep`].
pub fn reap_after(lab: u32) -> Result<Vec<String>> {
    if let Ok(fd) = cosched_agent::sched::pidfd_open(lab, 0) {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; an interrupted poll is retried.
        while unsafe { libc::poll(&mut p, 1, -1) } <= 0 {}
    } // else: already gone
      // Exited is not yet gone: until its parent reaps it the lab is a zombie whose /proc entry still exists, and
      // the sweep takes a lab with a /proc entry for a live one and leaves its run alone (a test that kill -9'd
      // the lab found everything still there 5 s later, once in five CI runs). Its parent reaps it at once, as a
      // rule; a parent that does not within REAP_WAIT leaves the rest to the next `--cleanup`.
    let deadline = Instant::now() + REAP_WAIT;
    while alive(lab) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    sweep()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_socket_names_its_lab() {
        assert_eq!(socket_owner(&agent_socket("l4242x3")), Some(4242));
        assert_eq!(socket_owner(Path::new("/run/cosched/lab-probe.sock")), None);
        assert_eq!(socket_owner(Path::new("/run/cosched/agent.sock")), None);
        assert_eq!(
            socket_owner(Path::new("/run/cosched/lab-l12x0.sock.tmp")),
            None
        );
    }
}
