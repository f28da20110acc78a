//! Processes the lab starts: placed in a node (network namespace, cgroups, CPU) before `exec`, each in its own
//! process group, reaped with their resource usage, and killed — by process group, only our own — when their
//! guard is dropped on any exit path. Each also gets a signal from the kernel if the lab dies outright
//! (`PR_SET_PDEATHSIG`: SIGKILL, or the placement's [`Placement::death_signal`]), so nothing it started
//! outlives a `kill -9` of the lab; what they started in turn is in the experiment cgroups, which the lab's
//! reaper ([`crate::cleanup`]) empties. A placement may also start the process in a session of its own
//! ([`Placement::new_session`], `setsid` after the death signal is set: it keeps it).

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`ManagedProcess::wait`] sleeps between its checks for SIGINT/SIGTERM (a signal delivered to the
/// waiting thread ends the sleep at once). The harness shares the job's CPUs: each of its wake-ups is a local
/// task there, which a boost steps aside for — at 50 ms, 20 pauses a second of the job's coscheduled bursts.
const WAIT_SLICE: Duration = Duration::from_millis(500);

/// Where a process runs: which network namespace, which cgroups, which CPU. Opened once, applied in the child
/// between `fork` and `exec` with plain system calls.
#[derive(Default)]
pub struct Placement {
    netns: Option<File>,
    /// Open `cgroup.procs` files; the child writes `0` (itself) into each.
    cgroup_procs: Vec<File>,
    cpu: Option<u32>,
    /// The signal the process gets when the lab dies (`PR_SET_PDEATHSIG`); `None` means SIGKILL.
    death_signal: Option<i32>,
    /// Start it in a new session (`setsid`) instead of a new process group of the lab's session.
    new_session: bool,
}

impl Placement {
    /// Run inside the network namespace `name` (`/run/netns/<name>`, as made by `ip netns add`).
    pub fn netns(mut self, name: &str) -> Result<Self> {
        let path = Path::new("/run/netns").join(name);
        self.netns = Some(
            File::open(&path)
                .with_context(|| format!("opening network namespace {}", path.display()))?,
        );
        Ok(self)
    }

    /// Join the cgroup (v1) whose directory is `dir`.
    pub fn cgroup(mut self, dir: &Path) -> Result<Self> {
        let path = dir.join("cgroup.procs");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        self.cgroup_procs.push(file);
        Ok(self)
    }

    /// Pin to one CPU.
    pub fn cpu(mut self, cpu: u32) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// Get `signal` instead of SIGKILL when the lab dies (the agent: SIGTERM, so it restores what it changed).
    pub fn death_signal(mut self, signal: i32) -> Self {
        self.death_signal = Some(signal);
        self
    }

    /// Start in a session of its own (`setsid(2)` before `exec`; with autogroups on, its own autogroup too),
    /// not in the lab's. It is still its own process group (a session leader leads one, pgid = pid), so it is
    /// killed by group as every other process is, and it still dies with the lab (`PR_SET_PDEATHSIG` is set
    /// first, and `setsid` keeps it).
    pub fn new_session(mut self) -> Self {
        self.new_session = true;
        self
    }

    /// Install the placement into `command` (applied in the child before `exec`).
    fn apply(&self, command: &mut Command) {
        let netns: Option<RawFd> = self.netns.as_ref().map(|f| f.as_raw_fd());
        let cgroups: Vec<RawFd> = self.cgroup_procs.iter().map(|f| f.as_raw_fd()).collect();
        let cpu = self.cpu;
        let death_signal = self.death_signal.unwrap_or(libc::SIGKILL);
        let lab = std::process::id() as libc::pid_t;
        let new_session = self.new_session;
        if !new_session {
            // (std sets the group before the pre_exec hook runs; a group leader could not call setsid.)
            command.process_group(0);
        }
        // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe system
        // calls (prctl, getppid, signal, setsid, setns, write, sched_setaffinity) on values prepared before the fork; it
        // allocates nothing.
        unsafe {
            command.pre_exec(move || {
                // Whatever kills the lab (SIGKILL, a timeout, a lost terminal), the kernel ends what it started:
                // PR_SET_PDEATHSIG survives exec (the lab's programs are not set-user-ID).
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    death_signal as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != lab {
                    libc::_exit(1); // the lab died before the prctl
                }
                // The lab stops its programs with SIGINT (`stop_with`): a lab started in the background of a
                // script inherits SIGINT ignored, and an ignored signal stays ignored across exec (a shell may
                // not even trap it), so the programs would ignore the stop and be killed 5 s later. Every
                // program starts with the default action, whatever the lab inherited.
                if libc::signal(libc::SIGINT, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                // After the prctl: the death signal belongs to the process and survives setsid (and exec).
                if new_session && libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(fd) = netns {
                    if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for &fd in &cgroups {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(cpu) = cpu {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu as usize, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

/// How a process ended.
#[derive(Clone, Debug)]
pub struct Exit {
    /// Exit code, or `None` if a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// User + system CPU time of the process and its reaped descendants, seconds.
    pub cpu_s: f64,
    /// Wall-clock time from spawn to exit, seconds.
    pub wall_s: f64,
    pub stdout: String,
    pub stderr: String,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// A one-line description for error messages: status and the last lines of stderr.
    pub fn describe(&self) -> String {
        let status = match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "unknown status".into(),
        };
        let tail: Vec<&str> = self
            .stderr
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if tail.is_empty() {
            status
        } else {
            format!("{status}; stderr: {}", tail.join(" | "))
        }
    }
}

/// The gate of [`ManagedProcess::spawn_gated`]: `sh -c GATE_SCRIPT program args...`.
const GATE_SCRIPT: &str = "read -r _ || exit 125; exec \"$0\" \"$@\"";

/// A running process the lab started. Dropping it kills its whole process group and reaps it.
pub struct ManagedProcess {
    pub label: String,
    pid: libc::pid_t,
    pidfd: Option<std::os::fd::OwnedFd>,
    started: Instant,
    /// The write end of a gated process's stdin, until released.
    gate: Option<std::process::ChildStdin>,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
    reaped: bool,
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl ManagedProcess {
    /// Start `command` placed as `placement` says, capturing its output.
    pub fn spawn(
        label: impl Into<String>,
        command: Command,
        placement: &Placement,
    ) -> Result<ManagedProcess> {
        Self::spawn_with_stdin(label, command, placement, Stdio::null())
    }

    /// Like [`spawn`](Self::spawn), but the program is held at a gate — placed (namespace, cgroups, CPU) and
    /// waiting — until [`release`](Self::release), so slow placement (cgroup v1 attaches wait for RCU grace
    /// periods, tens of ms each) happens before a measurement window, not inside it. The gate is a shell that
    /// reads one line from a pipe and then `exec`s the program; dropping the process unreleased ends it.
    pub fn spawn_gated(
        label: impl Into<String>,
        command: Command,
        placement: &Placement,
    ) -> Result<ManagedProcess> {
        let mut gated = Command::new("/bin/sh");
        gated
            .arg("-c")
            .arg(GATE_SCRIPT)
            .arg(command.get_program())
            .args(command.get_args());
        Self::spawn_with_stdin(label, gated, placement, Stdio::piped())
    }

    /// Let a gated process run its program.
    pub fn release(&mut self) -> Result<()> {
        use std::io::Write;
        let mut gate = self
            .gate
            .take()
            .with_context(|| format!("{}: not held at a gate", self.label))?;
        gate.write_all(b"go\n")
            .with_context(|| format!("{}: opening the gate", self.label))?;
        self.started = Instant::now();
        Ok(())
    }

    fn spawn_with_stdin(
        label: impl Into<String>,
        mut command: Command,
        placement: &Placement,
        stdin: Stdio,
    ) -> Result<ManagedProcess> {
        let label = label.into();
        placement.apply(&mut command);
        command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .spawn()
            .with_context(|| format!("{label}: starting {program}"))?;
        let pid = child.id() as libc::pid_t;
        // SAFETY: pidfd_open on our own, not yet reaped child; the result is checked before use.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
        let pidfd = (raw >= 0).then(|| {
            // SAFETY: `raw` is a fresh descriptor that nothing else owns.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) }
        });
        let gate = child.stdin.take();
        let stdout = child.stdout.take().map(collect);
        let stderr = child.stderr.take().map(collect);
        // We reap by pid with wait4 (to get the rusage); std's Child is not used again.
        std::mem::forget(child);
        Ok(ManagedProcess {
            label,
            pid,
            pidfd,
            started: Instant::now(),
            gate,
            stdout,
            stderr,
            reaped: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Whether the process has exited and been reaped (its [`Exit`] taken).
    pub fn is_reaped(&self) -> bool {
        self.reaped
    }

    /// Wait until the process exits, at most `timeout`, checking for SIGINT/SIGTERM at least every
    /// [`WAIT_SLICE`].
    /// On timeout or interruption the process is killed and an error returned.
    pub fn wait(&mut self, timeout: Duration) -> Result<Exit> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(exit) = self.try_reap()? {
                return Ok(exit);
            }
            if crate::signals::interrupted() {
                self.kill();
                return Err(crate::signals::Interrupted.into());
            }
            let now = Instant::now();
            if now >= deadline {
                // What it waited on, read before the kill: a hang beside competitors (an `mpirun` stalled twice
                // in a day's labs) is otherwise gone without a trace.
                let tree = process_tree_report(self.pid as u32);
                self.kill();
                bail!(
                    "{}: did not finish within {:.1} s; killed it. Its processes then:\n{tree}",
                    self.label,
                    timeout.as_secs_f64()
                );
            }
            let slice = (deadline - now).min(WAIT_SLICE);
            self.sleep_until_exit(slice);
        }
    }

    /// Block for at most `slice` or until the process exits.
    fn sleep_until_exit(&self, slice: Duration) {
        match &self.pidfd {
            Some(fd) => {
                let mut poll = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd for the duration of the call.
                unsafe { libc::poll(&mut poll, 1, slice.as_millis().max(1) as i32) };
            }
            None => std::thread::sleep(slice.min(Duration::from_millis(5))),
        }
    }

    /// Reap the process if it has exited.
    pub fn try_reap(&mut self) -> Result<Option<Exit>> {
        if self.reaped {
            bail!("{}: already reaped", self.label);
        }
        // Peek first (WNOWAIT): while the exited leader is a zombie its process-group id cannot be reused, so
        // the group can be ended safely before the reap.
        // SAFETY: siginfo is plain data filled by the kernel.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child's pid with a valid out-pointer.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("{}: waitid({})", self.label, self.pid));
        }
        // SAFETY: si_pid is valid for the SIGCHLD-style info waitid fills.
        if unsafe { info.si_pid() } == 0 {
            return Ok(None);
        }
        let wall_s = self.started.elapsed().as_secs_f64();
        // Any descendant still holding the pipes open would block the readers: end the group first.
        self.kill_group();
        let mut status = 0;
        // SAFETY: rusage is plain data filled by the kernel.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own exited child's pid with valid out-pointers.
        let r = unsafe { libc::wait4(self.pid, &mut status, 0, &mut usage) };
        if r < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("{}: wait4({})", self.label, self.pid));
        }
        self.reaped = true;
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        let cpu_s = tv(usage.ru_utime) + tv(usage.ru_stime);
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        let (code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else if libc::WIFSIGNALED(status) {
            (None, Some(libc::WTERMSIG(status)))
        } else {
            (None, None)
        };
        Ok(Some(Exit {
            code,
            signal,
            cpu_s,
            wall_s,
            stdout,
            stderr,
        }))
    }

    /// Ask the process group to stop (SIGTERM), then kill it if it has not exited within `grace`.
    pub fn terminate(&mut self, grace: Duration) -> Result<Exit> {
        self.stop_with(libc::SIGTERM, grace)
    }

    /// Send `signal` to the process group (e.g. SIGINT, on which a bench program prints its result line and
    /// exits), then kill it if it has not exited within `grace`.
    pub fn stop_with(&mut self, signal: i32, grace: Duration) -> Result<Exit> {
        if self.reaped {
            bail!("{}: already reaped", self.label);
        }
        // SAFETY: signalling our own process group (its leader is our unreaped child, so the id is not reused).
        unsafe { libc::kill(-self.pid, signal) };
        let deadline = Instant::now() + grace;
        loop {
            if let Some(exit) = self.try_reap()? {
                return Ok(exit);
            }
            if Instant::now() >= deadline {
                self.kill();
                return self
                    .try_reap_blocking()
                    .with_context(|| format!("{}: reaping after SIGKILL", self.label));
            }
            self.sleep_until_exit(Duration::from_millis(20));
        }
    }

    fn try_reap_blocking(&mut self) -> Result<Exit> {
        loop {
            if let Some(exit) = self.try_reap()? {
                return Ok(exit);
            }
            self.sleep_until_exit(Duration::from_millis(20));
        }
    }

    fn kill_group(&self) {
        // SAFETY: the group id is our child's pid (process_group(0)); only our own processes are in it.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
    }

    /// SIGKILL the process and its group (it stays to be reaped).
    pub fn kill(&mut self) {
        if !self.reaped {
            self.kill_group();
        }
    }
}

/// One line per process of the tree under `root` (itself included): pid, state, the kernel function it waits in,
/// its threads' states, waits and real-time policies when it has several, and its command line; then the kernel
/// stack of every thread in uninterruptible sleep (`D`), which is what a hang beside competitors waits on.
pub fn process_tree_report(root: u32) -> String {
    let stat_of = |dir: &Path| -> Option<(char, u32)> {
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
        let state = rest.next()?.chars().next()?;
        Some((state, rest.next()?.parse().ok()?))
    };
    // `FIFO 1` for a real-time thread (policy and priority, fields 41 and 40 of stat), empty otherwise.
    let realtime_of = |dir: &Path| -> String {
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            return String::new();
        };
        let Some(close) = stat.rfind(')') else {
            return String::new();
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        match (fields.get(37), fields.get(38)) {
            (Some(prio), Some(&"1")) => format!(" FIFO {prio}"),
            (Some(prio), Some(&"2")) => format!(" RR {prio}"),
            (_, Some(&"6")) => " DEADLINE".into(),
            _ => String::new(),
        }
    };
    let wchan_of = |dir: &Path| -> String {
        match std::fs::read_to_string(dir.join("wchan")) {
            Ok(w) if !w.is_empty() && w != "0" => w,
            _ => "-".into(),
        }
    };
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((pid, stat_of(&e.path())?.1))
        })
        .collect();
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        next += 1;
    }
    let mut lines = Vec::new();
    let mut stacks = Vec::new();
    for pid in tree {
        let dir = Path::new("/proc").join(pid.to_string());
        let Some((state, _)) = stat_of(&dir) else {
            continue;
        };
        let args: Vec<String> = std::fs::read(dir.join("cmdline"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // Threads grouped by (state, wait): "S ep_poll x3, R - x1".
        let mut threads: Vec<(String, usize)> = Vec::new();
        for task in std::fs::read_dir(dir.join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Some((t_state, _)) = stat_of(&task.path()) {
                if t_state == 'D' {
                    let stack =
                        std::fs::read_to_string(task.path().join("stack")).unwrap_or_default();
                    let frames: Vec<&str> = stack
                        .lines()
                        .filter_map(|l| l.split_whitespace().nth(1))
                        .take(12)
                        .collect();
                    stacks.push(format!(
                        "  thread {} of pid {pid}, kernel stack: {}",
                        task.file_name().to_string_lossy(),
                        frames.join(" < ")
                    ));
                }
                let key = format!(
                    "{t_state} {}{}",
                    wchan_of(&task.path()),
                    realtime_of(&task.path())
                );
                match threads.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => threads.push((key, 1)),
                }
            }
        }
        let threads = if threads.iter().map(|(_, n)| n).sum::<usize>() > 1 {
            let parts: Vec<String> = threads.iter().map(|(k, n)| format!("{k} x{n}")).collect();
            format!(" threads [{}]", parts.join(", "))
        } else {
            String::new()
        };
        let mut command = args.join(" ");
        if command.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|&i| command.is_char_boundary(i))
                .unwrap_or(0);
            command.truncate(cut);
            command.push('…');
        }
        lines.push(format!(
            "  pid {pid} {state} in {}{}{threads}: {command}",
            wchan_of(&dir),
            realtime_of(&dir)
        ));
    }
    lines.extend(stacks);
    lines.join("\n")
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
            let mut status = 0;
            // SAFETY: blocking reap of our own child after SIGKILL.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
            self.reaped = true;
        }
    }
}

/// CPU time a live process (all its threads) has used so far, seconds, from `/proc/<pid>/task/*/schedstat`
/// (nanosecond precision).
pub fn cpu_time_s(pid: u32) -> Result<f64> {
    let dir = format!("/proc/{pid}/task");
    let mut total_ns: u64 = 0;
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        let path = entry?.path().join("schedstat");
        // A thread may exit between the listing and the read.
        if let Ok(text) = std::fs::read_to_string(&path) {
            total_ns += text
                .split_whitespace()
                .next()
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(total_ns as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaps_exit_code_output_and_cpu_time() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done; echo oops >&2; exit 3",
        ]);
        let mut p = ManagedProcess::spawn("t", cmd, &Placement::default()).unwrap();
        let exit = p.wait(Duration::from_secs(30)).unwrap();
        assert_eq!(exit.code, Some(3));
        assert_eq!(exit.stdout.trim(), "done");
        assert!(exit.describe().contains("oops"));
        assert!(
            exit.cpu_s > 0.0 && exit.cpu_s <= exit.wall_s + 0.05,
            "{exit:?}"
        );
    }

    /// A child of the child must die with it on a timeout (same process group), however it was placed.
    fn assert_timeout_kills_the_whole_group(placement: &Placement) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"]);
        let mut p = ManagedProcess::spawn("t", cmd, placement).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let err = p.wait(Duration::from_millis(100)).unwrap_err().to_string();
        assert!(err.contains("did not finish"), "{err}");
        // The error shows the tree as it was: the shell waiting for its child, the child sleeping.
        assert!(
            err.contains(&format!("pid {} S in ", p.pid())) && err.contains(": sleep 30"),
            "{err}"
        );
        let exit = p.try_reap_blocking().unwrap();
        let grandchild: u32 = exit.stdout.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let alive = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "grandchild {grandchild} survived");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        assert_timeout_kills_the_whole_group(&Placement::default());
    }

    #[test]
    fn dropping_a_running_process_kills_it() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let p = ManagedProcess::spawn("t", cmd, &Placement::default()).unwrap();
        let pid = p.pid();
        drop(p);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} still there"
        );
    }

    #[test]
    fn a_gated_process_waits_for_its_release_and_an_unreleased_one_never_runs() {
        let mut cmd = Command::new("echo");
        cmd.args(["ran", "with args"]);
        let mut p = ManagedProcess::spawn_gated("t", cmd, &Placement::default()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(p.try_reap().unwrap().is_none(), "ran before its release");
        p.release().unwrap();
        let exit = p.wait(Duration::from_secs(10)).unwrap();
        assert_eq!(exit.stdout, "ran with args\n");

        let mut cmd = Command::new("touch");
        let marker = std::env::temp_dir().join(format!("cosched-lab-gate-{}", std::process::id()));
        cmd.arg(&marker);
        let p = ManagedProcess::spawn_gated("t", cmd, &Placement::default()).unwrap();
        drop(p);
        assert!(!marker.exists());
    }

    /// `[death signal, session id, pid, autogroup]` as the process itself sees them (perl: `prctl` has no
    /// /proc view).
    fn session_and_death_signal(placement: &Placement) -> (i32, i32, i32, String) {
        let mut cmd = Command::new("perl");
        cmd.args([
            "-e",
            r#"my $s = pack("i", 0); syscall($ARGV[0], 2, $s) == 0 or die "prctl: $!";
               open(my $f, "<", "/proc/self/stat") or die; my @f = split / /, <$f>;
               my ($g, $ag); $ag = open($g, "<", "/proc/self/autogroup") ? <$g> : "none\n";
               print unpack("i", $s), " $f[5] $$ $ag";"#,
            &libc::SYS_prctl.to_string(),
        ]);
        let mut p = ManagedProcess::spawn("t", cmd, placement).unwrap();
        let exit = p.wait(Duration::from_secs(10)).unwrap();
        assert!(exit.success(), "{}", exit.describe());
        let mut f = exit.stdout.splitn(4, ' ');
        let mut int = || f.next().unwrap().trim().parse::<i32>().unwrap();
        let (signal, sid, pid) = (int(), int(), int());
        (signal, sid, pid, f.next().unwrap().trim().to_string())
    }

    #[test]
    fn a_new_session_keeps_the_death_signal_and_gets_its_own_autogroup() {
        // SAFETY: getsid(0) reads our own session id.
        let ours = unsafe { libc::getsid(0) };
        let own_autogroup = std::fs::read_to_string("/proc/self/autogroup")
            .map(|t| t.trim().to_string())
            .unwrap_or_else(|_| "none".into());
        // Default: the lab's session, its autogroup, SIGKILL when the lab dies.
        let (signal, sid, _, autogroup) = session_and_death_signal(&Placement::default());
        assert_eq!((signal, sid), (libc::SIGKILL, ours));
        assert_eq!(autogroup, own_autogroup);
        // A session of its own: it leads it, the death signal is still set, and (autogroups on) a new autogroup.
        let (signal, sid, pid, autogroup) =
            session_and_death_signal(&Placement::default().new_session());
        assert_eq!((signal, sid), (libc::SIGKILL, pid));
        assert_ne!(sid, ours);
        if std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
            .is_ok_and(|t| t.trim() == "1")
        {
            assert_ne!(autogroup, own_autogroup);
        }
        // The agent's SIGTERM survives setsid as well.
        let (signal, ..) = session_and_death_signal(
            &Placement::default()
                .death_signal(libc::SIGTERM)
                .new_session(),
        );
        assert_eq!(signal, libc::SIGTERM);
    }

    #[test]
    fn a_process_in_a_new_session_is_still_killed_with_its_group() {
        assert_timeout_kills_the_whole_group(&Placement::default().new_session());
    }

    #[test]
    fn stop_with_sigint_lets_the_program_answer() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "trap 'echo stopped; exit 0' INT; while :; do sleep 0.01; done",
        ]);
        let mut p = ManagedProcess::spawn("t", cmd, &Placement::default()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let exit = p.stop_with(libc::SIGINT, Duration::from_secs(5)).unwrap();
        assert!(exit.success(), "{}", exit.describe());
        assert_eq!(exit.stdout.trim(), "stopped");
    }

    #[test]
    fn a_program_answers_sigint_even_when_the_lab_inherited_it_ignored() {
        // `sh -c` with SIGINT ignored on entry cannot trap it (POSIX): the program reports the disposition it
        // got instead. Ignored in this test process for the spawn only (tests share the process: restored at once).
        // SAFETY: plain signal(2) calls; the previous disposition is put back.
        let previous = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let mut cmd = Command::new("grep");
        cmd.args(["SigIgn", "/proc/self/status"]);
        let spawned = ManagedProcess::spawn("t", cmd, &Placement::default());
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGINT, previous) };
        let exit = spawned.unwrap().wait(Duration::from_secs(10)).unwrap();
        // SigIgn is a hex mask; SIGINT (2) is bit 1.
        let mask = u64::from_str_radix(exit.stdout.trim().trim_start_matches("SigIgn:").trim(), 16)
            .unwrap();
        assert_eq!(mask & (1 << (libc::SIGINT - 1)), 0, "{}", exit.stdout);
    }

    #[test]
    fn cpu_pinning_applies_before_exec() {
        let mut cmd = Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"]);
        let mut p = ManagedProcess::spawn("t", cmd, &Placement::default().cpu(0)).unwrap();
        let exit = p.wait(Duration::from_secs(10)).unwrap();
        assert!(exit.stdout.trim().ends_with("\t0"), "{}", exit.stdout);
    }
}
