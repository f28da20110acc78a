//! Privileged tests of the agent's safety properties: they start a real agent process (root, BPF), real managed
//! processes, and check what the kernel says about their scheduling policy.
//!
//! Each test skips with a message when not root or when the crate was built without BPF. Every process a test
//! starts is killed and reaped by pid (guards below), and every file it creates is removed.
//!
//! Helper processes are this same test binary re-executed to run only `helper_entry`, with the role in the
//! environment (`COSCHED_TEST_HELPER`), so no extra programs are needed.

use cosched_agent::intf;
use cosched_agent::proto::{AgentStats, Client, SelfCheckStats};
use cosched_agent::sched::{self, SchedAttr, Target};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Privileged tests share the CPUs and the kernel: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if !cosched_agent::HAS_BPF {
        return Some(format!(
            "built without BPF: {}",
            cosched_agent::BPF_MISSING_MESSAGE
        ));
    }
    None
}

/// The running test's name (libtest names each test's thread after it).
fn this_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a privileged agent test")
        .to_string()
}

macro_rules! privileged {
    () => {{
        if let Some(why) = skip_reason() {
            cosched_testkit::cannot_run(
                &this_test(),
                &format!("needs root and a BPF build: {why}"),
            );
            return;
        }
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }};
}

/// Whether this machine has two CPUs for a test that needs them; if not, says why through
/// [`cosched_testkit::cannot_run`] (a failure under COSCHED_REQUIRE_PRIVILEGED) and the test returns.
fn two_cpus(why: &str) -> bool {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cpus < 2 {
        cosched_testkit::cannot_run(&this_test(), why);
    }
    cpus >= 2
}

/// A child process killed (SIGKILL) and reaped on drop.
struct Kid(Child);
impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
impl Kid {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// A running agent on a private socket; killed and its directory removed on drop.
struct AgentProc {
    kid: Kid,
    dir: PathBuf,
    socket: PathBuf,
}

impl AgentProc {
    /// An agent that boosts on every arrival for windows of `boost_us`: it acts on arrivals however recently
    /// the receiver ran (`--grace-us 0`) and watches messages without waiting to see sharing
    /// (`--watch-hold-ms 0`), as [`provoke_boost`] needs, and keeps its boosts when this test's own threads (local
    /// tasks to it) wake on the receiver's CPU (`--no-yield-to-local`), so that a boost the test looks at is
    /// still there; `extra` flags follow.
    fn for_boosts(boost_us: &str, extra: &[&str]) -> AgentProc {
        let mut args = vec![
            "--boost-us",
            boost_us,
            "--grace-us",
            "0",
            "--watch-hold-ms",
            "0",
            "--no-yield-to-local",
        ];
        args.extend_from_slice(extra);
        AgentProc::start(&args)
    }

    fn start(extra: &[&str]) -> AgentProc {
        let dir = std::env::temp_dir().join(format!(
            "cosched-agent-test-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("agent.sock");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosched-agent"));
        cmd.arg("agent").arg("--socket").arg(&socket);
        // Each test checks one mechanism (a boost, the budget, the gate) and must see it act whenever it
        // would: the self-check, which may stand aside from all of them, is tested on its own.
        if !extra.contains(&SELF_CHECK) {
            cmd.arg("--no-self-check");
        }
        cmd.args(extra.iter().filter(|a| **a != SELF_CHECK))
            .stdout(Stdio::null());
        // A test killed outright takes its agent with it; SIGTERM, so the agent restores what it changed.
        cosched_testkit::die_with_parent(&mut cmd, libc::SIGTERM);
        let kid = Kid(cmd.spawn().expect("start cosched-agent"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while Client::connect(&socket).is_err() {
            assert!(
                Instant::now() < deadline,
                "the agent did not come up within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        AgentProc { kid, dir, socket }
    }

    fn client(&self) -> Client {
        Client::connect(&self.socket).unwrap()
    }

    fn stats(&self) -> AgentStats {
        self.client().stats().unwrap()
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.kid.0.kill();
        let _ = self.kid.0.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Starts this test binary as a helper with `role`.
fn helper(role: &str) -> Kid {
    helper_with(role, false)
}

/// [`helper`], in a session of its own when `own_session` (its own autogroup: another CFS task group than this
/// test's).
fn helper_with(role: &str, own_session: bool) -> Kid {
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    if own_session {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
    }
    // Dies with the test binary however it dies (kill -9, a timeout), not only through `Kid`'s drop.
    cosched_testkit::die_with_parent(&mut command, libc::SIGKILL);
    let kid = command
        .args([
            "--exact",
            "helper_entry",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COSCHED_TEST_HELPER", role)
        .stdout(Stdio::null())
        .spawn()
        .expect("start helper");
    Kid(kid)
}

/// The scheduling policy of a thread, without the SCHED_RESET_ON_FORK bit that sched_getscheduler ORs in.
fn policy(pid: u32) -> i32 {
    // SAFETY: plain syscall.
    unsafe { libc::sched_getscheduler(pid as libc::pid_t) & !libc::SCHED_RESET_ON_FORK }
}

fn nice(pid: u32) -> i32 {
    sched::get_attr(pid)
        .map(|a| a.sched_nice)
        .unwrap_or(i32::MIN)
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    t0.elapsed()
}

/// Starts a helper with `role:PORT{args}` (in a session of its own with `own_session`) that connects to a
/// listener of this test, and returns it with the accepted stream.
fn connected_helper(role: &str, args: &str, own_session: bool) -> (Kid, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let kid = helper_with(&format!("{role}:{port}{args}"), own_session);
    let (s, _) = l.accept().unwrap();
    (kid, s)
}

/// A managed receiver that blocks in `read`, connected to a listener of the test. Returns (helper, the tid of
/// its receiving thread, stream).
fn managed_receiver(agent: &AgentProc) -> (Kid, u32, TcpStream) {
    managed_helper(agent, "receiver")
}

/// [`managed_receiver`] with another helper role that speaks the same protocol (its tid first, a policy byte
/// for every 'p').
fn managed_helper(agent: &AgentProc, role: &str) -> (Kid, u32, TcpStream) {
    let (kid, mut s) = connected_helper(role, "", false);
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tid = [0u8; 4];
    s.read_exact(&mut tid).unwrap();
    let tid = u32::from_le_bytes(tid);
    agent.client().register(kid.pid(), "receiver").unwrap();
    // Warm-up: the receiver's first recv after registration teaches BPF that the socket is its own.
    let mut b = [0u8; 1];
    s.write_all(b"p").unwrap();
    s.read_exact(&mut b).unwrap();
    (kid, tid, s)
}

/// Sends messages until the agent boosts the receiver (SCHED_FIFO), or fails after 5 s. The receiver blocks and
/// never waits long for its CPU, so the agent must be one of [`AgentProc::for_boosts`]; R > 1 comes from this
/// test's own thread on the receiver's CPU.
fn provoke_boost(agent: &AgentProc, pid: u32, s: &mut TcpStream) {
    let _together = SharedCpu::with(pid);
    let mut b = [0u8; 1];
    let t0 = Instant::now();
    while policy(pid) != libc::SCHED_FIFO {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the agent never boosted pid {pid}: {:#?}",
            agent.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
        send_and_hold(s);
        s.read_exact(&mut b).unwrap();
    }
}

/// Sends one message to a receiver that shares this thread's CPU ([`SharedCpu`]) and keeps that CPU for up to
/// 1 ms before waiting for the answer, so that the receiver waits runnable until the agent has looked. Blocking at
/// once instead handed the receiver its CPU within microseconds, before the agent — woken on the other CPU, tens
/// of microseconds away — saw the arrival: every arrival was flagged and every one `not_needed` (961 of 961 in
/// one run here).
fn send_and_hold(s: &mut TcpStream) {
    s.write_all(b"p").unwrap();
    let until = Instant::now() + Duration::from_millis(1);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// This test thread and a receiver pinned to one CPU (the first this thread may use) while it lives, so that
/// the receiver's arrivals see R = 2 (the sender is still on that CPU when it wakes the receiver). Left to
/// itself, the kernel may keep the two on different CPUs for a whole run: every arrival then reads R = 1 and no
/// boost is ever needed (a 2-core CI machine once gave 952 arrivals, all `not_needed`). Dropping it gives this
/// thread its mask back; the receiver keeps the pin until it exits.
struct SharedCpu(nix::sched::CpuSet);

impl SharedCpu {
    fn with(tid: u32) -> SharedCpu {
        let own = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        // The first CPU this thread may run on (CPU 0 may be outside a restricted cpuset).
        let first = (0..nix::sched::CpuSet::count())
            .find(|&cpu| own.is_set(cpu).unwrap_or(false))
            .expect("a thread runs on at least one CPU");
        let mut one = nix::sched::CpuSet::new();
        one.set(first).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid as i32), &one).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &one).unwrap();
        SharedCpu(own)
    }
}

impl Drop for SharedCpu {
    fn drop(&mut self) {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &self.0);
    }
}

// ------------------------------------------------------------------------------------------------ helpers

#[test]
#[ignore = "helper process for the privileged tests; runs only when re-executed by them"]
fn helper_entry() {
    let Ok(role) = std::env::var("COSCHED_TEST_HELPER") else {
        return;
    };
    let (kind, arg) = role.split_once(':').unwrap_or((role.as_str(), ""));
    match kind {
        // Blocking receiver: 'p' -> reply own policy; 'f' -> fork a child that replies its policy, then reply own.
        "receiver" => {
            let mut s = TcpStream::connect(("127.0.0.1", arg.parse::<u16>().unwrap())).unwrap();
            s.set_nodelay(true).unwrap();
            s.write_all(&(nix::unistd::gettid().as_raw() as u32).to_le_bytes())
                .unwrap();
            let mut b = [0u8; 1];
            while s.read_exact(&mut b).is_ok() {
                if b[0] == b'f' {
                    // SAFETY: the helper is single-threaded; the child only calls getscheduler, write, _exit.
                    match unsafe { libc::fork() } {
                        0 => unsafe {
                            let p = [
                                (libc::sched_getscheduler(0) & !libc::SCHED_RESET_ON_FORK) as u8
                            ];
                            libc::write(std::os::fd::AsRawFd::as_raw_fd(&s), p.as_ptr().cast(), 1);
                            libc::_exit(0);
                        },
                        child => {
                            let mut st = 0;
                            // SAFETY: reaping our own child.
                            unsafe { libc::waitpid(child, &mut st, 0) };
                        }
                    }
                }
                // SAFETY: plain syscall.
                let p =
                    [(unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK) as u8];
                if s.write_all(&p).is_err() {
                    break;
                }
            }
        }
        // A blocking receiver on a thread that is not the leader: its tid first, its policy for every 'p'; on
        // 'e' that thread execs `sleep 10` (the process keeps its pid, the thread becomes the leader).
        "execthread" => {
            let port: u16 = arg.parse().unwrap();
            let thread = std::thread::spawn(move || {
                use std::os::unix::process::CommandExt;
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_nodelay(true).unwrap();
                s.write_all(&(nix::unistd::gettid().as_raw() as u32).to_le_bytes())
                    .unwrap();
                let mut b = [0u8; 1];
                while s.read_exact(&mut b).is_ok() {
                    if b[0] == b'e' {
                        let err = Command::new("sleep").arg("10").exec();
                        panic!("exec failed: {err}");
                    }
                    let p = [policy(0) as u8];
                    if s.write_all(&p).is_err() {
                        break;
                    }
                }
            });
            let _ = thread.join();
        }
        // `threads:N,DELAY_MS`: after DELAY_MS, N threads that sleep (for BOUND_S at most).
        "threads" => {
            let (n, delay) = arg.split_once(',').unwrap();
            std::thread::sleep(Duration::from_millis(delay.parse().unwrap()));
            let sleepers: Vec<_> = (0..n.parse::<usize>().unwrap())
                .map(|_| {
                    std::thread::Builder::new()
                        .stack_size(64 * 1024)
                        .spawn(|| std::thread::sleep(Duration::from_secs(cosched_testkit::BOUND_S)))
                        .unwrap()
                })
                .collect();
            for s in sleepers {
                let _ = s.join();
            }
        }
        // A job that forks a fresh receiver every 10 ms, pinned to CPU `cpu`: each child drains the inherited
        // socket without blocking for 10 ms and exits; the parent waits for it, then forks the next.
        "forker" => {
            let s = connect_pinned(arg);
            s.set_nonblocking(true).unwrap();
            let end = Instant::now() + Duration::from_secs(cosched_testkit::BOUND_S);
            while Instant::now() < end {
                // SAFETY: the child only reads its socket, reads the clock and leaves with _exit.
                match unsafe { nix::unistd::fork() }.unwrap() {
                    nix::unistd::ForkResult::Child => {
                        let mut buf = [0u8; 4096];
                        let until = Instant::now() + Duration::from_millis(10);
                        while Instant::now() < until {
                            match (&s).read(&mut buf) {
                                Ok(0) => unsafe { libc::_exit(0) },
                                Ok(_) => {}
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                    std::hint::spin_loop()
                                }
                                Err(_) => unsafe { libc::_exit(0) },
                            }
                        }
                        unsafe { libc::_exit(0) }
                    }
                    nix::unistd::ForkResult::Parent { child } => {
                        let _ = nix::sys::wait::waitpid(child, None);
                    }
                }
            }
        }
        // Spinning receiver pinned to CPU `cpu`: drains its socket without ever blocking.
        "spinrecv" => {
            let mut s = connect_pinned(arg);
            s.set_nonblocking(true).unwrap();
            let mut buf = [0u8; 4096];
            let end = Instant::now() + Duration::from_secs(cosched_testkit::BOUND_S);
            while Instant::now() < end {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                    Err(_) => break,
                }
            }
        }
        // Spin-block receiver pinned to CPU `cpu`: polls its socket for up to 1 ms, then blocks in `read` until
        // data comes (the seed's spin-block wait, with a shorter spin).
        "spinblockrecv" => {
            let mut s = connect_pinned(arg);
            s.set_nonblocking(true).unwrap();
            let mut buf = [0u8; 4096];
            let end = Instant::now() + Duration::from_secs(cosched_testkit::BOUND_S);
            let mut spin_since = Instant::now();
            while Instant::now() < end {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => spin_since = Instant::now(),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if spin_since.elapsed() < Duration::from_millis(1) {
                            std::hint::spin_loop();
                            continue;
                        }
                        s.set_nonblocking(false).unwrap();
                        let got = s.read(&mut buf);
                        s.set_nonblocking(true).unwrap();
                        match got {
                            Ok(n) if n > 0 => spin_since = Instant::now(),
                            _ => break,
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        // Blocking echo pinned to CPU `cpu`: reads one byte, writes it back, blocks again (a blocking receiver
        // of a ping-pong).
        "echo" => {
            let mut s = connect_pinned(arg);
            s.set_nodelay(true).unwrap();
            let mut b = [0u8; 1];
            while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
        }
        // CPU-bound competitor pinned to CPU `arg`, for BOUND_S seconds at most.
        "spin" => {
            pin(arg.parse().unwrap());
            let end = Instant::now() + Duration::from_secs(cosched_testkit::BOUND_S);
            while Instant::now() < end {
                for _ in 0..10_000 {
                    std::hint::spin_loop();
                }
            }
        }
        other => panic!("unknown helper role {other}"),
    }
}

/// A helper role's `port,cpu` argument: pins this process to `cpu`, then connects to the test on `port`.
fn connect_pinned(arg: &str) -> TcpStream {
    let (port, cpu) = arg.split_once(',').unwrap();
    pin(cpu.parse().unwrap());
    TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap()
}

fn pin(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
}

/// A process's CPU time as the scheduler booked it: the sum of `/proc/<pid>/task/*/schedstat`, ns (a helper's
/// work runs on the test harness's thread, not its main thread).
fn cpu_ns(pid: u32) -> u64 {
    schedstat_sum(pid, 0)
}

/// How long a process's threads were runnable but waited for a CPU (the kernel's run delay), ns: whether
/// something else shared the CPU of a thread that should have had it alone.
fn run_delay_ns(pid: u32) -> u64 {
    schedstat_sum(pid, 1)
}

/// Field `field` of `/proc/<pid>/task/*/schedstat` (0: time on CPU, 1: time waiting to run), summed over threads.
fn schedstat_sum(pid: u32, field: usize) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let s = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
            s.split_whitespace().nth(field)?.parse::<u64>().ok()
        })
        .sum()
}

/// CPU time of process `pid` and of the children it waited for (utime + stime + cutime + cstime), in ticks.
fn cpu_ticks_with_children(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    (14..=17)
        .map(|n| sched::parse_stat_field(&s, n).unwrap())
        .sum()
}

fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    sched::parse_stat_field(&s, 14).unwrap() + sched::parse_stat_field(&s, 15).unwrap()
}

// ------------------------------------------------------------------------------------------------ tests

#[test]
fn agent_refuses_to_start_without_root() {
    if !nix::unistd::geteuid().is_root() {
        // Not root already: the agent itself must refuse.
        let out = Command::new(env!("CARGO_BIN_EXE_cosched-agent"))
            .args(["agent", "--socket", "/tmp/x.sock"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("root"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    use std::os::unix::process::CommandExt;
    let dir =
        std::env::temp_dir().join(format!("cosched-agent-test-nobody-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_cosched-agent"))
        .args(["agent", "--socket"])
        .arg(dir.join("a.sock"))
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the agent started as nobody: {err}");
    let expected = if cosched_agent::HAS_BPF {
        "must run as root"
    } else {
        "built without its BPF program"
    };
    assert!(err.contains(expected), "unclear refusal: {err}");
}

#[test]
fn run_refuses_without_a_running_agent() {
    let out = Command::new(env!("CARGO_BIN_EXE_cosched-agent"))
        .args([
            "run",
            "--socket",
            "/nonexistent/cosched/agent.sock",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no cosched agent is running"),
        "unclear refusal: {err}"
    );
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn kill_9_of_the_agent_restores_boosted_tasks_within_a_second() {
    let _serial = privileged!();
    // A 5 s boost window: without the guardian the receiver would stay SCHED_FIFO long after the kill.
    let agent = AgentProc::for_boosts("5000000", &[]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    let nice_before = nice(tid);
    provoke_boost(&agent, tid, &mut s);
    let guardian = agent.stats().guardian_pid;
    assert!(guardian > 0);
    assert_eq!(
        policy(tid),
        libc::SCHED_FIFO,
        "the boost ended before the kill; the test proves nothing"
    );
    let killed = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    wait_until("restore after kill -9", Duration::from_secs(1), || {
        policy(tid) == libc::SCHED_OTHER
    });
    eprintln!("restored {:?} after kill -9", killed.elapsed());
    let nice_after = nice(tid);
    assert_eq!(nice_after, nice_before, "nice not restored");
    // The guardian leaves once its work is done.
    wait_until("guardian exit", Duration::from_secs(2), || {
        !std::path::Path::new(&format!("/proc/{guardian}")).exists()
            || std::fs::read_to_string(format!("/proc/{guardian}/stat"))
                .map(|s| s.contains(") Z"))
                .unwrap_or(true)
    });
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_panic_in_the_agent_restores_boosted_tasks_within_a_second() {
    let _serial = privileged!();
    // The agent panics right after its first boost, with the 5 s window still open: only the guardian can
    // put the receiver back.
    let agent = AgentProc::for_boosts("5000000", &["--panic-after-boosts", "1"]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    let nice_before = nice(tid);
    let mut agent = agent;
    // Provoke arrivals as `provoke_boost` does (a request and its reply: this thread waits on the receiver's
    // CPU, so the receiver waits for it) until the agent dies of its injected panic. Writing without reading the
    // reply let the receiver run at once on an idle CPU, and CI once saw no boost for 10 s.
    let started = Instant::now();
    let mut reply = [0u8; 1];
    let status = loop {
        s.write_all(b"p").unwrap();
        s.read_exact(&mut reply).unwrap();
        if let Some(status) = agent.kid.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the agent never boosted (so never panicked) within 30 s: {:#?}",
            agent.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(
        status.code(),
        Some(101),
        "the agent did not end in a panic: {status:?}"
    );
    wait_until("restore after a panic", Duration::from_secs(1), || {
        policy(tid) == libc::SCHED_OTHER
    });
    assert_eq!(nice(tid), nice_before, "nice not restored");
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn sigterm_restores_and_boosts_are_not_inherited() {
    let _serial = privileged!();
    let agent = AgentProc::for_boosts("5000000", &[]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    provoke_boost(&agent, tid, &mut s);
    // 'f': the boosted receiver forks; the child reports its policy first, then the parent its own.
    s.write_all(b"f").unwrap();
    let mut b = [0u8; 2];
    s.read_exact(&mut b).unwrap();
    assert_eq!(
        b[0] as i32,
        libc::SCHED_OTHER,
        "the child of a boosted task inherited SCHED_FIFO"
    );
    assert_eq!(
        b[1] as i32,
        libc::SCHED_FIFO,
        "the receiver was not boosted while it forked"
    );
    let st = agent.stats();
    assert!(st.boosts_granted >= 1 && st.forks >= 1, "{st:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    wait_until("restore after SIGTERM", Duration::from_secs(1), || {
        policy(tid) == libc::SCHED_OTHER
    });
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_slice_boost_stays_in_the_fair_class_and_sigterm_restores_it() {
    let _serial = privileged!();
    let agent = AgentProc::for_boosts("5000000", &["--mechanism", "slice"]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    let own = sched::get_attr(tid).unwrap();
    // A slice boost is one nice step up with a 0.1 ms slice; send until the agent gives it.
    let together = SharedCpu::with(tid);
    let mut b = [0u8; 1];
    let t0 = Instant::now();
    while nice(tid) != own.sched_nice - 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the agent never boosted tid {tid}: {:#?}",
            agent.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
        send_and_hold(&mut s);
        s.read_exact(&mut b).unwrap();
    }
    drop(together);
    let boosted = sched::get_attr(tid).unwrap();
    assert_eq!(
        (policy(tid), boosted.sched_runtime),
        (libc::SCHED_OTHER, 100_000),
        "a slice boost left the fair class or kept another slice: {boosted:?}"
    );
    assert!(agent.stats().boosts_granted >= 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    wait_until("restore after SIGTERM", Duration::from_secs(1), || {
        sched::get_attr(tid)
            .is_ok_and(|a| a.sched_nice == own.sched_nice && a.sched_runtime == own.sched_runtime)
    });
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn dynamicq_lengthens_a_managed_threads_slice_under_misses_and_shortens_it_for_an_interactive_user()
{
    let _serial = privileged!();
    // The miss rate comes from a file (the injected source; this VM has no cache counters), the interactive
    // user is a program of a name no one else runs: a copy of `sleep`.
    let dir = std::env::temp_dir().join(format!("cosched-dq-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let miss = dir.join("mr");
    std::fs::write(&miss, "0.30").unwrap();
    let user_program = dir.join("cosched-dq-user");
    std::fs::copy("/bin/sleep", &user_program).unwrap();
    let source = format!("file:{}", miss.display());
    let agent = AgentProc::start(&[
        "--policy",
        "dynamicq",
        "--miss-rate-source",
        &source,
        "--quantum-epoch-ms",
        "20",
        "--interactive-idle-s",
        "0",
        "--interactive-comm",
        "cosched-dq-user",
    ]);
    let (_rx, tid, _s) = managed_receiver(&agent);
    let own = sched::get_attr(tid).unwrap().sched_runtime;
    let slice = || sched::get_attr(tid).unwrap().sched_runtime;
    // 3.125 ms doubling at every epoch (the idle tick's pace, 100 ms) to the kernel's 100 ms ceiling.
    wait_until("the slice at its ceiling", Duration::from_secs(5), || {
        slice() == 100_000_000
    });
    let user = Kid(Command::new(&user_program).arg("30").spawn().unwrap());
    // The default quantum: the thread's own slice back (no custom slice, so EEVDF treats it as any other task).
    wait_until(
        "the thread's own slice for an interactive user",
        Duration::from_secs(5),
        || slice() == own,
    );
    let policy_counters = agent.stats().policy.counters;
    assert!(
        policy_counters["quantum_doubled"] >= 5 && policy_counters["quantum_reset"] >= 1,
        "{policy_counters:?}"
    );
    drop(user);
    // The user gone, the slice grows again; SIGTERM puts the thread's own back.
    wait_until("the slice growing again", Duration::from_secs(5), || {
        slice() != own
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    wait_until(
        "the thread's own slice back",
        Duration::from_secs(1),
        || slice() == own,
    );
    drop(agent);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_reused_pid_is_never_touched() {
    let _serial = privileged!();
    let mut a = Kid(Command::new("sleep").arg("30").spawn().unwrap());
    let pid = a.pid();
    let target = Target::open(pid, pid).unwrap();
    let before = target.get().unwrap();
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    // Try to make a stranger get the same pid (ns_last_pid is root-only); other processes may race us.
    let mut stranger = None;
    for _ in 0..50 {
        let _ = std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string());
        let b = Kid(Command::new("sleep").arg("30").spawn().unwrap());
        if b.pid() == pid {
            stranger = Some(b);
            break;
        }
    }
    let res = target.set(&SchedAttr::fifo(1), &before);
    assert!(
        matches!(res, Err(sched::SchedError::Gone { .. })),
        "acted on a dead target: {res:?}"
    );
    match &stranger {
        Some(b) => {
            assert_eq!(
                policy(b.pid()),
                libc::SCHED_OTHER,
                "the stranger with the reused pid was boosted"
            );
            eprintln!("pid {pid} was reused by a stranger and left alone");
        }
        None => eprintln!("could not force reuse of pid {pid}; checked the dead target only"),
    }
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_flooding_process_gets_no_more_than_its_fair_share() {
    let _serial = privileged!();
    // One CPU, two tasks: a managed receiver that spins draining its socket, and a CPU-bound competitor. A peer
    // floods the receiver. Fair share: 1/2 each. Without a budget, every arrival would boost the receiver and it
    // would take nearly the whole CPU.
    let cpu = if std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        > 1
    {
        1
    } else {
        0
    };
    let agent = AgentProc::start(&["--grace-us", "0", "--exponent", "10"]);
    let (rx, mut s) = connected_helper("spinrecv", &format!(",{cpu}"), false);
    // The receiver's own nice (the test may itself run under `nice`): what the guardian must put back.
    let own_nice = nice(rx.pid());
    agent.client().register(rx.pid(), "flooded").unwrap();
    let comp = helper(&format!("spin:{cpu}"));
    std::thread::sleep(Duration::from_millis(300));
    let (r0, c0, t0) = (cpu_ticks(rx.pid()), cpu_ticks(comp.pid()), Instant::now());
    let mut sent = 0u64;
    while t0.elapsed() < Duration::from_secs(3) {
        s.write_all(&[0u8; 64]).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    let (r1, c1) = (cpu_ticks(rx.pid()), cpu_ticks(comp.pid()));
    let st = agent.stats();
    let (r, c) = ((r1 - r0) as f64, (c1 - c0) as f64);
    let share = r / (r + c).max(1.0);
    eprintln!(
        "flood: {sent} messages, receiver share {share:.3}, boosts {} (refused budget {}, demotions {})",
        st.boosts_granted,
        st.policy.get("refused_budget"),
        st.policy.get("demotions")
    );
    assert!(
        st.boosts_granted > 0,
        "the flood never triggered a boost, so the budget was not exercised: {st:?}"
    );
    // Fair share 0.5 plus the burst (80 ms per 3 s ≈ 0.027) and tick-granular accounting noise.
    assert!(
        share <= 0.6,
        "the flooded receiver took {share:.3} of the CPU (fair share 0.5)"
    );
    // The flood leaves the receiver boosted or demoted (nice 19) at any moment: kill -9 the agent and check
    // that the guardian puts every thread of it back to SCHED_OTHER at its own nice.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    let tids = || -> Vec<u32> {
        std::fs::read_dir(format!("/proc/{}/task", rx.pid()))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    wait_until(
        "restore of boosted and demoted threads after kill -9",
        Duration::from_secs(1),
        || {
            tids()
                .iter()
                .all(|&t| policy(t) == libc::SCHED_OTHER && nice(t) == own_nice)
        },
    );
    drop((rx, comp));
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_job_that_forks_a_fresh_receiver_every_10_ms_gets_no_more_than_its_fair_share() {
    let _serial = privileged!();
    // One CPU, a CPU-bound competitor and a job whose receiver is a new process every 10 ms (each spins on the
    // inherited socket, then exits). A peer floods it. A budget per process would hand every child a fresh
    // burst (160 ms, longer than the child lives) and the job would run boosted throughout; the job's one
    // budget, charged for every process it has or had, holds it to its share.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = usize::from(cpus > 1);
    let agent = AgentProc::start(&["--grace-us", "0", "--exponent", "10"]);
    let (job, mut s) = connected_helper("forker", &format!(",{cpu}"), false);
    let comp = helper(&format!("spin:{cpu}"));
    // The job's share of the CPU (against the competitor's) while this thread floods it for `d`.
    let mut flooded_share = |d: Duration| -> f64 {
        let (j0, c0, t0) = (
            cpu_ticks_with_children(job.pid()),
            cpu_ticks(comp.pid()),
            Instant::now(),
        );
        while t0.elapsed() < d {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
        let (j1, c1) = (cpu_ticks_with_children(job.pid()), cpu_ticks(comp.pid()));
        let (j, c) = ((j1 - j0) as f64, (c1 - c0) as f64);
        j / (j + c).max(1.0)
    };
    // Without the agent first: what the fair class alone gives this job (0.51-0.53 here) is the kernel's doing,
    // not debt of the agent's making, and the bound below is measured from it.
    std::thread::sleep(Duration::from_millis(300));
    let plain = flooded_share(Duration::from_secs(2));
    agent.client().register(job.pid(), "forker").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let booked_s = || agent.stats().jobs.first().map_or(0.0, |j| j.booked_cpu_s);
    let (booked0, ticks0) = (booked_s(), cpu_ticks_with_children(job.pid()));
    let share = flooded_share(Duration::from_secs(3));
    let (booked, ticks) = (
        booked_s() - booked0,
        // SAFETY: sysconf reads a system constant.
        (cpu_ticks_with_children(job.pid()) - ticks0) as f64
            / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64,
    );
    let st = agent.stats();
    // What the budget is charged: every child to its last switch-out. Booked at the exit hook instead, each
    // child's last stint since the kernel's last update (up to a tick) and its exit (address space teardown)
    // went missing: 78-80 % of the job's CPU time booked (100 % at the final switch-out).
    eprintln!("forker: {booked:.3} s booked, {ticks:.3} s by the kernel's own count");
    assert!(
        (booked - ticks).abs() <= 0.1 * ticks + 0.05,
        "the job was charged {booked:.3} s of CPU time for {ticks:.3} s used"
    );
    let forks = st.forks;
    eprintln!(
        "forker: job share {share:.3} with the agent, {plain:.3} without; {forks} processes forked, boosts {} \
         (refused budget {}, demotions {})",
        st.boosts_granted,
        st.policy.get("refused_budget"),
        st.policy.get("demotions")
    );
    assert!(
        forks >= 100,
        "the job forked only {forks} receivers in 3.3 s: {st:?}"
    );
    assert!(
        st.boosts_granted > 0,
        "the flood never triggered a boost, so the budget was not exercised: {st:?}"
    );
    // The larger of the fair share 0.5 and what the kernel gave it alone, plus one burst (160 ms per 3 s ≈ 0.05)
    // and tick-granular accounting noise (0.58-0.61 against 0.52 without, beside two compilers). A budget per
    // process would give the job nearly all of the CPU; children that escaped their creator's demotion gave it
    // 0.70.
    let bound = plain.max(0.5) + 0.12;
    assert!(
        share <= bound,
        "the job that forks a fresh receiver every 10 ms took {share:.3} of the CPU with the agent, {plain:.3} \
         without (at most {bound:.3})"
    );
    drop((job, comp));
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_blocking_receiver_gets_no_more_than_its_fair_share() {
    let _serial = privileged!();
    // A managed echo that blocks for every message, beside a CPU-bound competitor on its CPU, answering a peer
    // (this test) that sends the next message as soon as the reply is in: it wakes, runs some 20 us and blocks
    // again, tens of thousands of times a second. Once boosted, its boosts are extended while the messages keep
    // coming (grace 0: every arrival that finds it off its CPU counts), so only the budget holds it to its share;
    // that needs its CPU time counted the way the kernel books it (the time between the switch tracepoints missed
    // about 1.5 us a switch: the echo took 0.64 of the CPU while the agent saw 0.52).
    if !two_cpus("needs 2 CPUs (the echo and its competitor on one, the peer on the other)") {
        return;
    }
    let agent = AgentProc::start(&["--grace-us", "0"]);
    let (echo, mut s) = connected_helper("echo", ",1", false);
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    agent.client().register(echo.pid(), "echo").unwrap();
    let comp = helper("spin:1");
    pin(0);
    std::thread::sleep(Duration::from_millis(300));
    let booked = |st: &AgentStats| -> f64 {
        st.jobs
            .iter()
            .find(|j| j.root_pid == echo.pid())
            .map_or(0.0, |j| j.booked_cpu_s)
    };
    // Longer than the budget's starting burst (160 ms) by far, so the burst adds at most a few percent.
    let b0 = booked(&agent.stats());
    let (e0, c0, t0) = (cpu_ns(echo.pid()), cpu_ns(comp.pid()), Instant::now());
    let mut b = [0u8; 1];
    let mut round_trips = 0u64;
    while t0.elapsed() < Duration::from_secs(4) {
        s.write_all(b"p").unwrap();
        s.read_exact(&mut b).unwrap();
        round_trips += 1;
    }
    let (e1, c1) = (cpu_ns(echo.pid()), cpu_ns(comp.pid()));
    let st = agent.stats();
    let (e, c) = ((e1 - e0) as f64, (c1 - c0) as f64);
    let share = e / (e + c).max(1.0);
    let seen = (booked(&st) - b0) * 1e9 / e.max(1.0);
    eprintln!(
        "blocking echo: {round_trips} round trips, echo share {share:.3}, CPU charged / booked by the kernel \
         {seen:.3}, boosts {} extended {} (refused budget {}, demotions {})",
        st.boosts_granted,
        st.policy.get("boosts_extended"),
        st.policy.get("refused_budget"),
        st.policy.get("demotions")
    );
    // Whether the echo needs boosts at all depends on how promptly the kernel's own wake-up preemption runs it
    // (with grace 0 it was boosted 10-21 times in 4 s on one machine of this kind; with the default grace, CI's
    // machine never boosted it), so the test asserts what holds either way: the accounting the budget rests on,
    // and the share.
    assert!(
        st.switches > 10_000 && booked(&st) > b0,
        "the agent did not follow the echo's context switches: {st:?}"
    );
    // The stats are sampled a moment apart from schedstat: a few percent either way.
    assert!(
        (0.95..=1.05).contains(&seen),
        "the budget charged the echo {seen:.3} × the CPU time the kernel booked for it"
    );
    // Fair share 0.5, plus the 160 ms burst over 4 s (0.04) and the 10 ms tick's lag.
    assert!(
        share <= 0.58,
        "the blocking echo took {share:.3} of its CPU (fair share 0.5): the budget missed some of its CPU time"
    );
    drop((echo, comp));
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn cosched_run_manages_the_command_and_its_descendants() {
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    // sh forks two children; all three must be managed while they live, and the exit code must come back.
    let mut run = Kid(Command::new(env!("CARGO_BIN_EXE_cosched-agent"))
        .args(["run", "--socket"])
        .arg(&agent.socket)
        .args([
            "--name",
            "family",
            "--",
            "sh",
            "-c",
            "sleep 3 & sleep 3 & wait; exit 7",
        ])
        .spawn()
        .unwrap());
    let mut most = 0;
    let t0 = Instant::now();
    // Well within the children's 3 s, however long a busy machine takes to start them.
    while most < 3 && t0.elapsed() < Duration::from_millis(2500) {
        if let Some(j) = agent.stats().jobs.iter().find(|j| j.name == "family") {
            most = most.max(j.live_processes);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = run.0.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "cosched run must return the command's exit code"
    );
    assert!(
        most >= 3,
        "sh and its two children should all be managed; saw at most {most} processes"
    );
    let st = agent.stats();
    let job = st.jobs.iter().find(|j| j.name == "family").unwrap();
    wait_until("job end", Duration::from_secs(2), || {
        agent
            .stats()
            .jobs
            .iter()
            .any(|j| j.name == "family" && j.finished)
    });
    assert!(st.forks >= 2, "{st:?}");
    // The job is the command (forked by `cosched run`, held until registered), not the waiting wrapper.
    assert_ne!(
        job.root_pid,
        run.pid(),
        "the cosched run wrapper itself must not be managed"
    );
    assert!(job.root_pid > 0);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn sudo_cosched_run_runs_the_command_as_the_invoking_user() {
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    // As `sudo` leaves it for user nobody (65534): the command runs as that user, unless --as-root.
    let id = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cosched-agent"))
            .args(["run", "--socket"])
            .arg(&agent.socket)
            .args(extra)
            .args(["--", "sh", "-c", "echo $(id -u) $(id -g)"])
            .env("SUDO_UID", "65534")
            .env("SUDO_GID", "65534")
            .env("SUDO_USER", "nobody")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert_eq!(id(&[]), "65534 65534");
    assert_eq!(id(&["--as-root"]), "0 0");
}

/// User nobody, whom the tests run `cosched run` as: an ordinary user without sudo.
const NOBODY: u32 = 65534;

/// `cosched-agent` copied where user nobody may run it (the build tree may sit in a directory only root can
/// enter), in the agent's own test directory, made world-readable.
fn agent_binary_for_nobody(agent: &AgentProc) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = agent.dir.join("cosched-agent");
    std::fs::copy(env!("CARGO_BIN_EXE_cosched-agent"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// `cosched run --socket <agent's> ARGS` as user nobody (no sudo), with its output.
fn run_as_nobody(agent: &AgentProc, binary: &Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    Command::new(binary)
        .args(["run", "--socket"])
        .arg(&agent.socket)
        .args(args)
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .env_remove("SUDO_UID")
        .env_remove("SUDO_GID")
        .env_remove("SUDO_USER")
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn an_ordinary_user_runs_their_own_job_and_cannot_register_another_users_process() {
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    let binary = agent_binary_for_nobody(&agent);
    // Their own command: managed, as them, and its exit code comes back.
    let out = run_as_nobody(
        &agent,
        &binary,
        &["--name", "nobodys", "--", "sh", "-c", "sleep 0.3; exit 3"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let st = agent.stats();
    let job = st
        .jobs
        .iter()
        .find(|j| j.name == "nobodys")
        .unwrap_or_else(|| panic!("nobody's job was not registered: {st:#?}"));
    assert!(job.wall_s > 0.2, "{job:?}");
    // It spends nobody's budget (one per user, across their jobs).
    assert_eq!(job.owner_uid, NOBODY, "{job:?}");
    // Another user's process (root's: this test's helper) is refused, with a reason, and left alone.
    let victim = helper("spin:0");
    let victim_pid = victim.pid().to_string();
    let out = run_as_nobody(&agent, &binary, &["--pid", &victim_pid]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("not yours"),
        "nobody registered root's process: {out:?}"
    );
    assert!(
        agent
            .stats()
            .jobs
            .iter()
            .all(|j| j.root_pid != victim.pid()),
        "the refused process is managed all the same"
    );
    // Root may register it; it is root's job.
    agent.client().register(victim.pid(), "roots").unwrap();
    let st = agent.stats();
    let roots = st.jobs.iter().find(|j| j.name == "roots").unwrap();
    assert_eq!(roots.owner_uid, 0, "{roots:?}");
    drop(victim);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_process_that_execs_a_setuid_program_leaves_management() {
    use std::os::unix::fs::PermissionsExt;
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    let binary = agent_binary_for_nobody(&agent);
    // A setuid-root copy of sleep, which nobody's job runs as its child: that child runs as root and must not be
    // managed (nor anything it creates), while the job's own shell stays managed.
    let suid = agent.dir.join("suid-sleep");
    std::fs::copy(which("sleep").expect("sleep on PATH (coreutils)"), &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let script = format!("sleep 0.5; {} 1.5; exit 0", suid.display());
    use std::os::unix::process::CommandExt;
    let mut run = Kid(Command::new(&binary)
        .args(["run", "--socket"])
        .arg(&agent.socket)
        .args(["--name", "setuid", "--", "sh", "-c", &script])
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .spawn()
        .unwrap());
    let job = |st: &AgentStats| st.jobs.iter().find(|j| j.name == "setuid").cloned();
    // Managed while the shell's first child (plain sleep) runs: the shell and it.
    wait_until(
        "the job's shell and its plain child managed",
        Duration::from_secs(5),
        || job(&agent.stats()).is_some_and(|j| j.live_processes == 2),
    );
    // Once the setuid program runs: released, and only the shell left.
    wait_until("the setuid child released", Duration::from_secs(5), || {
        agent.stats().released_setuid == 1
    });
    let st = agent.stats();
    assert_eq!(
        job(&st).map(|j| j.live_processes),
        Some(1),
        "the setuid child is still managed: {st:#?}"
    );
    let status = run.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// The first `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn kernel_threads_and_the_agent_itself_are_refused() {
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    // kthreadd (pid 2): managing it would make every kernel thread it starts managed (issue 21, item 3).
    let err = agent
        .client()
        .register(2, "kthreadd")
        .unwrap_err()
        .to_string();
    assert!(err.contains("kernel thread"), "{err}");
    let err = agent.client().register(1, "init").unwrap_err().to_string();
    assert!(err.contains("cannot be managed"), "{err}");
    let err = agent
        .client()
        .register(agent.stats().agent_pid, "agent")
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be managed"), "{err}");
    assert_eq!(agent.stats().jobs.len(), 0);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_slow_client_does_not_stall_the_agent() {
    let _serial = privileged!();
    let agent = AgentProc::start(&[]);
    // Connected, request not sent yet: the agent must keep serving others (and its boosts) meanwhile.
    let mut slow = std::os::unix::net::UnixStream::connect(&agent.socket).unwrap();
    let t0 = Instant::now();
    let stats = agent.stats();
    assert!(stats.agent_pid > 0);
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "a stats call waited {:?} behind a silent client",
        t0.elapsed()
    );
    // Longer than the agent's write patience for replies: a request that trickles in late still gets its answer.
    std::thread::sleep(Duration::from_millis(400));
    slow.write_all(b"{\"op\":\"ping\"}\n").unwrap();
    let mut reply = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(slow), &mut reply).unwrap();
    assert!(reply.contains("pong"), "{reply:?}");
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn messages_are_watched_only_while_a_managed_thread_shares_its_cpu() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (a receiver alone on one, the sender on another)") {
        return;
    }
    // A managed spinning receiver alone on CPU 1, fed from this thread on CPU 0: nothing to coschedule, so after
    // the hold the BPF message hooks must stop looking at its arrivals. A competitor on CPU 1 must open the gate
    // again and get the receiver boosted.
    let agent = AgentProc::start(&["--watch-hold-ms", "50", "--grace-us", "0"]);
    let (rx, mut s) = connected_helper("spinrecv", ",1", false);
    s.set_nodelay(true).unwrap();
    agent.client().register(rx.pid(), "alone").unwrap();
    let all_cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    pin(0);
    // Sends a message every 500 µs for `d`; returns how many.
    let mut send_for = |d: Duration| -> u64 {
        let (t0, mut sent) = (Instant::now(), 0);
        while t0.elapsed() < d {
            s.write_all(&[0u8; 64]).unwrap();
            sent += 1;
            std::thread::sleep(Duration::from_micros(500));
        }
        sent
    };
    let rx_pid = rx.pid();
    let gate_closed =
        |st: &AgentStats| !st.watching && !st.message_hooks_attached && st.boosted_now == 0;
    // Alone on its CPU (registration and the helper's start may share CPU 1 for a moment; then nothing does):
    // the gate closes, and arrivals go unwatched while it stays closed. A moment of this machine's own work on
    // CPU 1 is sharing too and may open it again: then the 300 ms are tried anew.
    let t0 = Instant::now();
    let alone = loop {
        if let Err(busy) = feed_until(
            &agent,
            rx_pid,
            Duration::from_secs(10),
            &mut send_for,
            gate_closed,
        ) {
            eprintln!("SKIP the rest of this test: {busy}");
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
            return;
        }
        let (before, delay_before) = (agent.stats(), run_delay_ns(rx_pid));
        let sent = send_for(Duration::from_millis(300));
        let (after, waited) = (agent.stats(), run_delay_ns(rx_pid) - delay_before);
        let watched = after.arrivals - before.arrivals;
        eprintln!(
            "alone: {watched} of {sent} arrivals watched (the receiver waited {:.2} ms for its CPU)",
            waited as f64 / 1e6
        );
        let starved = sent < 100; // this thread, the sender, hardly ran: the window proves nothing
        if !starved && watched * 4 <= sent && !after.message_hooks_attached {
            break after;
        }
        // Watched, or the hooks attached again: only a CPU that was shared excuses it.
        assert!(
            starved || waited >= SHARING_WAIT.as_nanos() as u64,
            "alone on its CPU, the receiver's arrivals were still watched ({watched} of {sent}) or the message \
             hooks attached: {after:#?}"
        );
        if t0.elapsed() > Duration::from_secs(15) {
            eprintln!(
                "SKIP the rest of this test: for 15 s, CPU 1 was shared or the sender starved whenever the gate \
                 was looked at"
            );
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
            return;
        }
    };

    let comp = helper("spin:1");
    let t0 = Instant::now();
    while agent.stats().boosts_granted == alone.boosts_granted {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "a competitor on the receiver's CPU did not get it boosted: {:#?}",
            agent.stats()
        );
        send_for(Duration::from_millis(20));
    }
    let shared = agent.stats();
    assert!(
        shared.watching && shared.message_hooks_attached,
        "boosted, yet the gate is closed or the message hooks detached: {shared:#?}"
    );
    assert!(shared.arrivals > alone.arrivals);
    drop(comp);
    // Sharing over: the receiver is put back and the gate closes again.
    match feed_until(
        &agent,
        rx_pid,
        Duration::from_secs(10),
        &mut send_for,
        gate_closed,
    ) {
        Ok(st) => assert!(st.watch_closes > shared.watch_closes, "{st:#?}"),
        Err(busy) => eprintln!("SKIP the last step of this test: {busy}"),
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
    drop(rx);
}

/// In [`AgentProc::start`]'s flags: keep the self-check on (every other test turns it off).
const SELF_CHECK: &str = "<self-check>";

/// Runs a managed receiver of helper role `role` on CPU 1 beside a competitor, fed over TCP from this thread on
/// CPU 0 every 500 µs in bursts of 25 ms with 5 ms pauses (where a spin-block receiver blocks: about 30 times a
/// second, above the self-check's 10), under an agent with the self-check on (20 ms epochs), until `done` holds
/// for its self-check's state (at most 15 s); returns that state.
fn self_check_of(role: &str, done: impl Fn(&SelfCheckStats) -> bool) -> SelfCheckStats {
    let agent = AgentProc::start(&[SELF_CHECK, "--self-check-epoch-ms", "20", "--grace-us", "0"]);
    let (rx, mut s) = connected_helper(role, ",1", false);
    s.set_nodelay(true).unwrap();
    agent.client().register(rx.pid(), "judged").unwrap();
    let comp = helper("spin:1");
    let all_cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    pin(0);
    let t0 = Instant::now();
    let judged = loop {
        for _ in 0..50 {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
        std::thread::sleep(Duration::from_millis(5));
        let st = agent.stats();
        if let Some(c) = st.self_check.as_ref().filter(|c| done(c)) {
            break c.clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "after 15 s the self-check of a {role} job had not got where the test waits for: {st:#?}"
        );
    };
    eprintln!("{role}: {judged:?}");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
    drop(comp);
    drop(rx);
    judged
}

#[test]
fn the_self_check_measures_a_tcp_jobs_progress_and_probes_standing_aside_for_a_job_that_blocks() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (a receiver and its competitor on one, the sender on another)") {
        return;
    }
    // A spin-block receiver sharing CPU 1 with a competitor (the gate opens: there is something to judge): it
    // gives its CPU back when it waits, so standing aside may be faster, and is probed.
    let judged = self_check_of("spinblockrecv", |c| {
        c.probes >= 1 && c.epochs_coscheduling + c.epochs_standing_aside >= 20
    });
    // It ran both modes, and the receiver's TCP bytes were a measure: most epochs were judged, not blind.
    assert!(judged.epochs_standing_aside >= 1, "{judged:?}");
    assert!(
        judged.blind_epochs * 2 < judged.epochs_coscheduling + judged.epochs_standing_aside,
        "{judged:?}"
    );
}

#[test]
fn the_self_check_never_stands_aside_for_a_job_that_spins_while_it_waits() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (a receiver and its competitor on one, the sender on another)") {
        return;
    }
    // The same, with a receiver that never blocks: its first probe falls due after 4 epochs, and is held at
    // every epoch's end after that.
    let judged = self_check_of("spinrecv", |c| {
        c.probes_held >= 10 && c.epochs_coscheduling >= 20
    });
    assert_eq!(judged.probes, 0, "{judged:?}");
    assert_eq!(judged.epochs_standing_aside, 0, "{judged:?}");
    assert_eq!(judged.chosen, "coschedule", "{judged:?}");
}

/// A thread that waited this long for its CPU shared it (the agent's BPF side counts 1 ms the same way).
const SHARING_WAIT: Duration = Duration::from_millis(1);

/// Feeds a receiver (`send`) in 50 ms windows until `done` holds for the agent's stats, and returns them. The
/// watch gate may stay open only while the receiver's CPU is shared: a window in which it waited
/// [`SHARING_WAIT`] or more for its CPU (this machine's own daemons, another session's work) is busy. Four quiet
/// windows in a row (200 ms: four times the 50 ms hold, ticks included) without `done` fail the test; `Err`
/// says the CPU never stayed quiet that long within `limit`, so the machine is too busy to tell.
fn feed_until(
    agent: &AgentProc,
    rx_pid: u32,
    limit: Duration,
    send: &mut impl FnMut(Duration) -> u64,
    done: impl Fn(&AgentStats) -> bool,
) -> Result<AgentStats, String> {
    let t0 = Instant::now();
    let (mut quiet_in_a_row, mut busy_windows) = (0, 0);
    let mut delay = run_delay_ns(rx_pid);
    loop {
        send(Duration::from_millis(50));
        let st = agent.stats();
        if done(&st) {
            return Ok(st);
        }
        let now = run_delay_ns(rx_pid);
        if now - delay >= SHARING_WAIT.as_nanos() as u64 {
            quiet_in_a_row = 0;
            busy_windows += 1;
        } else {
            quiet_in_a_row += 1;
        }
        delay = now;
        assert!(
            quiet_in_a_row < 4,
            "the watch gate stayed open with the receiver alone on its CPU for 200 ms: {st:#?}"
        );
        if t0.elapsed() >= limit {
            return Err(format!(
                "the receiver's CPU was shared in {busy_windows} of the 50 ms windows of {limit:?} \
                 (it waited 1 ms or more for it): this machine is too busy to see the gate close"
            ));
        }
    }
}

#[test]
fn a_job_in_its_own_session_is_coscheduled_against_competitors_of_another() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the receiver and its competitor on one, the sender on another)") {
        return;
    }
    // A managed spinning receiver in a session of its own (its own autogroup where autogroups are on, as here)
    // shares CPU 1 with a competitor of this test's session. Its own cfs_rq holds it alone, so an R read there
    // is 1 and the agent never acted (0 boosts, measured 2026-11-25); R weighted across groups is 2.
    let agent = AgentProc::start(&["--grace-us", "0"]);
    let (rx, mut s) = connected_helper("spinrecv", ",1", true);
    s.set_nodelay(true).unwrap();
    let own_session = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    assert_ne!(
        own_session(rx.pid()).split_whitespace().nth(5),
        own_session(std::process::id()).split_whitespace().nth(5),
        "the receiver is not in a session of its own"
    );
    agent.client().register(rx.pid(), "own-session").unwrap();
    let comp = helper("spin:1");
    let all_cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    pin(0);
    let t0 = Instant::now();
    while agent.stats().boosts_granted == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "a job in its own session sharing its CPU with another session's competitor was not boosted: {:#?}",
            agent.stats()
        );
        for _ in 0..40 {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let st = agent.stats();
    assert!(
        st.flagged > 0 && st.arrivals_alone * 4 < st.arrivals,
        "its arrivals were taken for a receiver alone on its CPU: {st:#?}"
    );
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
    drop(comp);
    drop(rx);
}

#[test]
fn a_job_alone_in_its_session_pays_back_through_its_session_and_a_dead_agent_leaves_it_as_it_was() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the receiver and its competitor on one, the sender on another)") {
        return;
    }
    let autogroup = |pid: u32| {
        cosched_agent::autogroup::of(pid)
            .expect("autogroups are on here (sched_autogroup_enabled = 1)")
    };
    if !cosched_agent::autogroup::enabled() {
        eprintln!("SKIP {}: autogroups are off on this kernel", this_test());
        return;
    }
    // A flooded spinning receiver alone in its session (autogroup) shares CPU 1 with a competitor of this test's
    // session. Its threads' nice 19 does nothing against another session; only its session's nice makes it pay
    // back a boosted burst. Without that lever its budget stayed overdrawn and refused every boost after the
    // first burst (528 refusals in 4 s, measured 2026-11-25).
    let agent = AgentProc::start(&["--grace-us", "0"]);
    let (rx, mut s) = connected_helper("spinrecv", ",1", true);
    let own = autogroup(rx.pid());
    agent.client().register(rx.pid(), "own-session").unwrap();
    let comp = helper("spin:1");
    let all_cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    pin(0);
    let flood = |d: Duration, s: &mut TcpStream| {
        let t0 = Instant::now();
        while t0.elapsed() < d {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    flood(Duration::from_millis(1500), &mut s);
    let first = agent.stats();
    flood(Duration::from_millis(1500), &mut s);
    let second = agent.stats();
    let count = |st: &AgentStats, name: &str| st.policy.get(name);
    eprintln!(
        "own session: boosts {} then {}, group demotions {}, lifted {}, refused by the budget {}",
        first.boosts_granted,
        second.boosts_granted - first.boosts_granted,
        count(&second, "group_demotions"),
        count(&second, "group_lifted"),
        count(&second, "refused_budget")
    );
    assert!(
        count(&second, "group_demotions") > 0,
        "the overdrawn job's session was never lowered: {second:#?}"
    );
    assert!(
        second.boosts_granted > first.boosts_granted,
        "after paying back, the job was boosted no more: {second:#?}"
    );
    // kill -9 the agent while it holds the session lowered: the guardian gives it its own nice back.
    wait_until("the session lowered", Duration::from_secs(5), || {
        s.write_all(&[0u8; 64]).unwrap();
        std::thread::sleep(Duration::from_micros(200));
        autogroup(rx.pid()).nice == 19
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.kid.pid() as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    let back = wait_until(
        "the session's own nice back after kill -9",
        Duration::from_secs(1),
        || autogroup(rx.pid()).nice == own.nice,
    );
    eprintln!("own session: its nice back {back:?} after the agent's kill -9");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
    drop((comp, rx));
}

/// A cpu cgroup (v1) this test made, `cosched-l<pid>x9<n>-<what>` (so `machine-check --fix` and the lab's
/// sweep remove it if the test is killed), at `shares` and with real-time runtime for the agent's boosts.
/// Dropping it moves what is left in it to the root and removes it.
struct TestCgroup(std::path::PathBuf);
impl TestCgroup {
    fn new(n: u32, what: &str, shares: u64, rt_runtime_us: u64) -> TestCgroup {
        let dir = std::path::PathBuf::from(format!(
            "/sys/fs/cgroup/cpu/cosched-l{}x9{n}-{what}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).unwrap();
        let group = TestCgroup(dir);
        std::fs::write(group.0.join("cpu.shares"), shares.to_string()).unwrap();
        if rt_runtime_us > 0 {
            std::fs::write(group.0.join("cpu.rt_runtime_us"), rt_runtime_us.to_string()).unwrap();
        }
        group
    }
    fn add(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
    }
    /// A thread of this test in this group, pinned to `cpu`, sleeps 1 ms `times` times (a local task that wakes
    /// often), then goes back to the root group so the group can go.
    fn sleep_on(&self, cpu: usize, times: u32) {
        let tasks = self.0.join("tasks");
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    pin(cpu);
                    let me = nix::unistd::gettid().as_raw();
                    std::fs::write(&tasks, me.to_string()).unwrap();
                    for _ in 0..times {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    std::fs::write("/sys/fs/cgroup/cpu/tasks", me.to_string()).unwrap();
                })
                .join()
                .unwrap()
        })
    }
    fn shares(&self) -> u64 {
        std::fs::read_to_string(self.0.join("cpu.shares"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}
impl Drop for TestCgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write("/sys/fs/cgroup/cpu/cgroup.procs", pid);
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_job_alone_in_its_cgroup_pays_back_through_its_cgroup_and_a_dead_agent_leaves_it_as_it_was() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the receiver and its competitor on one, the sender on another)") {
        return;
    }
    if !std::path::Path::new("/sys/fs/cgroup/cpu/cpu.rt_runtime_us").exists() {
        cosched_testkit::cannot_run(
            &this_test(),
            "needs the cgroup v1 cpu controller with real-time group scheduling at /sys/fs/cgroup/cpu",
        );
        return;
    }
    // A flooded spinning receiver alone in a cpu cgroup of its own, its competitor in a sibling of the same
    // shares (the lab's `competitors_cgroup = "own"`). Nice 19 on the job's threads does nothing against the
    // other group; only its group's weight makes it pay back a boosted burst (before this lever: job F up to
    // 1.88, competitors' 0.51, docs/lab-local.md).
    let job_group = TestCgroup::new(1, "job", 1024, 500_000);
    let comp_group = TestCgroup::new(2, "comp", 1024, 0);
    let agent = AgentProc::start(&["--grace-us", "0"]);
    let (rx, mut s) = connected_helper("spinrecv", ",1", false);
    job_group.add(rx.pid());
    let comp = helper("spin:1");
    comp_group.add(comp.pid());
    agent.client().register(rx.pid(), "own-cgroup").unwrap();
    let all_cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    pin(0);
    let flood = |d: Duration, s: &mut TcpStream| {
        let t0 = Instant::now();
        let mut lowest = u64::MAX;
        while t0.elapsed() < d {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
            lowest = lowest.min(job_group.shares());
        }
        lowest
    };
    let lowest = flood(Duration::from_millis(1500), &mut s);
    let first = agent.stats();
    flood(Duration::from_millis(1500), &mut s);
    let second = agent.stats();
    let count = |st: &AgentStats, name: &str| st.policy.get(name);
    eprintln!(
        "own cgroup: boosts {} then {}, group demotions {}, lowest cpu.shares {lowest}, refused by the budget {}",
        first.boosts_granted,
        second.boosts_granted - first.boosts_granted,
        count(&second, "group_demotions"),
        count(&second, "refused_budget")
    );
    assert!(
        count(&second, "group_demotions") > 0,
        "the overdrawn job's cgroup was never lowered: {second:#?}"
    );
    assert_eq!(
        lowest, 15,
        "lowered as nice 19 lowers a task: 1024 × 15 / 1024"
    );
    assert!(
        second.boosts_granted > first.boosts_granted,
        "after paying back, the job was boosted no more (its R inflated by its own lowered weight?): {second:#?}"
    );
    assert_eq!(
        comp_group.shares(),
        1024,
        "the competitors' group is not the job's"
    );
    // kill -9 the agent while it holds the group lowered: the guardian gives it its own weight back. Stopped
    // first, so the lowering seen is the one the agent holds at its death (not one it was lifting just then).
    let agent_pid = nix::unistd::Pid::from_raw(agent.kid.pid() as i32);
    wait_until(
        "the agent stopped with the cgroup lowered",
        Duration::from_secs(5),
        || {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
            nix::sys::signal::kill(agent_pid, nix::sys::signal::SIGSTOP).unwrap();
            std::thread::sleep(Duration::from_millis(1));
            let lowered = job_group.shares() == 15;
            if !lowered {
                nix::sys::signal::kill(agent_pid, nix::sys::signal::SIGCONT).unwrap();
            }
            lowered
        },
    );
    nix::sys::signal::kill(agent_pid, nix::sys::signal::SIGKILL).unwrap();
    let back = wait_until(
        "the cgroup's own weight back after kill -9",
        Duration::from_secs(1),
        || job_group.shares() == 1024,
    );
    eprintln!("own cgroup: its weight back {back:?} after the agent's kill -9");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &all_cpus).unwrap();
    drop((comp, rx));
    drop((job_group, comp_group));
}

// ------------------------------------------------------------------------------------ nothing left behind

/// The threads of process `pid` that are SCHED_FIFO now.
fn fifo_threads(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&tid| policy(tid) == libc::SCHED_FIFO)
        .collect()
}

fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

/// Gone or a zombie (a killed process not yet reaped is harmless).
fn dead(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z") || s.contains(") X"))
        .unwrap_or(true)
}

/// A spinning receiver managed by `agent`, pinned to `cpu` beside a CPU-bound competitor, fed messages from this
/// thread until the agent has boosted it (still boosted on return where the agent's windows are long). Returns
/// (receiver, competitor, stream).
fn boosted_spinner(agent: &AgentProc, cpu: usize) -> (Kid, Kid, TcpStream) {
    let hog = helper(&format!("spin:{cpu}"));
    let (rx, mut s) = connected_helper("spinrecv", &format!(",{cpu}"), false);
    s.set_nodelay(true).unwrap();
    agent.client().register(rx.pid(), "spinner").unwrap();
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the agent never boosted the spinner on CPU {cpu}: {:#?}",
            agent.stats()
        );
        s.write_all(&[0u8; 64]).unwrap();
        // Looked for 0.2 ms after each message, not just before the next: a boost that ends at its window
        // (500 us) when no message follows (a park) is over by then, and a look in step with the messages
        // never saw one (every arrival boosted and parked, thousands in 10 s, with `--exponent 10`). One look
        // per message: a caller at real-time priority that looked every 50 us took the CPU from the spinner
        // so often that its agent never saw it wait behind its competitor (1 of 6 runs).
        std::thread::sleep(Duration::from_micros(200));
        if !fifo_threads(rx.pid()).is_empty() {
            return (rx, hog, s);
        }
        std::thread::sleep(Duration::from_micros(800));
    }
}

/// This thread at SCHED_FIFO `prio` until dropped, so a test can watch and measure while boosted spinners hold
/// every CPU (it sleeps between looks, so it takes next to nothing).
struct RealTimeWatcher;
impl RealTimeWatcher {
    fn new(prio: u32) -> RealTimeWatcher {
        let me = nix::unistd::gettid().as_raw() as u32;
        sched::set_attr(me, &SchedAttr::fifo(prio)).unwrap();
        RealTimeWatcher
    }
}
impl Drop for RealTimeWatcher {
    fn drop(&mut self) {
        let me = nix::unistd::gettid().as_raw() as u32;
        let other = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            ..Default::default()
        };
        sched::set_attr(me, &other).unwrap();
    }
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn agent_and_guardian_killed_together_are_restored_by_the_next_agent() {
    let _serial = privileged!();
    // A 5 s window and no lease: only a sweep of the dead pair's slot table can put the receiver back soon.
    let agent = AgentProc::for_boosts("5000000", &["--guard-lease-ms", "0"]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    provoke_boost(&agent, tid, &mut s);
    let guardian = agent.stats().guardian_pid;
    let mut agent = agent;
    // Stop both first, so neither sees the other die and restores; then kill both.
    use nix::sys::signal::Signal::{SIGKILL, SIGSTOP};
    signal(guardian, SIGSTOP);
    signal(agent.kid.pid(), SIGSTOP);
    signal(agent.kid.pid(), SIGKILL);
    signal(guardian, SIGKILL);
    let _ = agent.kid.0.wait();
    wait_until("the guardian's death", Duration::from_secs(2), || {
        dead(guardian)
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        policy(tid),
        libc::SCHED_FIFO,
        "the boost was undone before the next agent started; the test proves nothing"
    );
    // Watch from the moment the next agent is started.
    let started = Instant::now();
    let watcher = std::thread::spawn(move || {
        while policy(tid) == libc::SCHED_FIFO && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        started.elapsed()
    });
    let next = AgentProc::start(&[]);
    let restored_after = watcher.join().unwrap();
    eprintln!("the next agent restored the receiver {restored_after:?} after its start");
    assert!(
        restored_after < Duration::from_secs(1),
        "the next agent left the dead pair's boost in place for {restored_after:?}"
    );
    assert_eq!(policy(tid), libc::SCHED_OTHER);
    drop(next);
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn the_guardian_outranks_every_boost_and_restores_spinners_on_every_cpu_within_300_ms() {
    let _serial = privileged!();
    // A 5 s window and a 20 s budget burst: each spinner stays boosted however long the next CPU's setup takes
    // (with the default 160 ms burst the first spinner's budget ran out while a busy machine set up the second).
    let agent = AgentProc::start(&[
        "--boost-us",
        "5000000",
        "--grace-us",
        "0",
        "--burst-ms",
        "20000",
        "--no-yield-to-local",
    ]);
    let guardian = agent.stats().guardian_pid;
    let g = sched::get_attr(guardian).unwrap();
    assert!(
        g.sched_policy == sched::SCHED_FIFO && g.sched_priority > 2,
        "the guardian runs below the boosts (rt-prio 1) or the agent (2): policy {} priority {}",
        g.sched_policy,
        g.sched_priority
    );
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // Every CPU: a boosted spinning receiver (bounded: helpers live BOUND_S at most) beside a hog.
    let _watch = RealTimeWatcher::new(50);
    let mut spinners: Vec<_> = (0..cpus).map(|cpu| boosted_spinner(&agent, cpu)).collect();
    // A boost set up first may have ended meanwhile (its spinner's CPU had nothing else waiting for a moment):
    // feed them all until every one is boosted at once.
    let t0 = Instant::now();
    let boosted = loop {
        let boosted: Vec<u32> = spinners
            .iter()
            .flat_map(|(rx, _, _)| fifo_threads(rx.pid()))
            .collect();
        if boosted.len() == cpus {
            break boosted;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not every CPU holds a boosted spinner ({} of {cpus}): {:#?}",
            boosted.len(),
            agent.stats()
        );
        for (_, _, s) in spinners.iter_mut() {
            s.write_all(&[0u8; 64]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let killed = Instant::now();
    signal(agent.kid.pid(), nix::sys::signal::Signal::SIGKILL);
    // At once, not a second later: a fair-class thread of the guardian's (it once spawned one to learn the
    // default slice) waited for the kernel's fair server behind the spinners, 0.83-1.0 s.
    let took = wait_until(
        "the guardian's restore with every CPU held by a boosted spinner",
        Duration::from_millis(300),
        || boosted.iter().all(|&tid| policy(tid) != libc::SCHED_FIFO),
    );
    eprintln!(
        "restored {} spinners {took:?} after kill -9 ({:?})",
        cpus,
        killed.elapsed()
    );
    drop(spinners);
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_stopped_agent_keeps_no_boost_beyond_its_lease() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the spinner and its hog on one)") {
        return;
    }
    // A 5 s window: were the lease not enforced, a stopped agent would leave the spinner ahead of its hog for 5 s.
    let agent = AgentProc::start(&[
        "--boost-us",
        "5000000",
        "--grace-us",
        "0",
        "--guard-lease-ms",
        "200",
    ]);
    let _watch = RealTimeWatcher::new(50);
    let (rx, _hog, _s) = boosted_spinner(&agent, 1);
    let stopped = Instant::now();
    use nix::sys::signal::Signal::{SIGCONT, SIGSTOP};
    signal(agent.kid.pid(), SIGSTOP);
    // The guardian slept until the boost (nothing to revoke before it), woken by the agent's doorbell: it
    // revokes when the lease of the agent's last heartbeat runs out.
    let took = wait_until(
        "the guardian's revocation of a stopped agent's boost",
        Duration::from_secs(1),
        || fifo_threads(rx.pid()).is_empty(),
    );
    // Its share from then on, against the hog it shares CPU 1 with: about a half, not a boosted spinner's all.
    let cpu0 = cpu_ns(rx.pid());
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let share = (cpu_ns(rx.pid()) - cpu0) as f64 / t0.elapsed().as_nanos() as f64;
    eprintln!(
        "stopped agent: boost revoked {took:?} after SIGSTOP; the spinner's share over the next second {share:.2}"
    );
    signal(agent.kid.pid(), SIGCONT);
    assert!(
        share < 0.75,
        "with the agent stopped the spinner still took {share:.2} of its CPU"
    );
    let st = agent.stats();
    assert!(st.guardian_revocations >= 1, "{st:#?}");
    let _ = stopped;
    drop(rx);
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn the_guardian_sleeps_while_no_boost_is_live_and_looks_once_a_lease_while_one_is() {
    let _serial = privileged!();
    // Every wake-up of the guardian (SCHED_FIFO) takes its CPU from whatever runs there: it looked 20 times a
    // second, boost or none. A 2 s window keeps a boost live while its looks are counted.
    let agent = AgentProc::for_boosts("2000000", &["--guard-lease-ms", "200"]);
    let (_kid, tid, mut s) = managed_receiver(&agent);
    let guardian = agent.stats().guardian_pid;
    // Sleeps after which each ran again: its wake-ups.
    let wakes = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    let (guardian_before, agent_before) = (wakes(guardian), wakes(agent.kid.pid()));
    std::thread::sleep(Duration::from_secs(2));
    let idle = wakes(guardian) - guardian_before;
    // The agent's main thread: with a job and nothing to decide, it ticks at --idle-tick-ms (1 s).
    let agent_idle = wakes(agent.kid.pid()) - agent_before;
    provoke_boost(&agent, tid, &mut s);
    let before = wakes(guardian);
    std::thread::sleep(Duration::from_secs(1));
    let boosted = wakes(guardian) - before;
    eprintln!(
        "guardian wake-ups: {idle} in 2 s with a job and no boost, {boosted} in 1 s with one boost live; the \
         agent's {agent_idle} in those 2 s"
    );
    assert!(
        idle <= 2,
        "the guardian woke {idle} times in 2 s with nothing to revoke"
    );
    assert!(
        agent_idle <= 4,
        "the agent woke {agent_idle} times in 2 s with a job and nothing to decide"
    );
    // One look when each 200 ms lease of the agent's last heartbeat would run out (the agent renews it at its
    // ticks): about five, not the twenty of a 50 ms period.
    assert!(
        (2..=10).contains(&boosted),
        "the guardian woke {boosted} times in a second of a live boost"
    );
    assert_eq!(
        policy(tid),
        libc::SCHED_FIFO,
        "the boost ended early; the count proves nothing"
    );
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_boosted_thread_that_execs_is_restored() {
    let _serial = privileged!();
    // A 1 s window: the boost ends at its end, after the exec, on a thread id that no longer exists.
    let agent = AgentProc::for_boosts("1000000", &[]);
    let (kid, tid, mut s) = managed_helper(&agent, "execthread");
    let pid = kid.pid();
    assert_ne!(tid, pid, "the receiving thread must not be the leader");
    provoke_boost(&agent, tid, &mut s);
    s.write_all(b"e").unwrap();
    wait_until("the exec", Duration::from_secs(2), || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    assert_eq!(
        policy(pid),
        libc::SCHED_FIFO,
        "the exec'd process did not keep the boost; the test proves nothing"
    );
    let took = wait_until(
        "the restore of a thread that exec'd while boosted",
        Duration::from_secs(3),
        || policy(pid) == libc::SCHED_OTHER,
    );
    eprintln!("the exec'd process was restored {took:?} after its exec");
    drop(kid);
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_renice_during_a_boost_is_kept() {
    let _serial = privileged!();
    let agent = AgentProc::for_boosts("1000000", &[]);
    let (_rx, tid, mut s) = managed_receiver(&agent);
    assert_eq!(nice(tid), 0);
    provoke_boost(&agent, tid, &mut s);
    // Its owner renices it while it is boosted: the kernel keeps the level for when it is time-sharing again.
    // SAFETY: plain syscall on our helper's thread.
    assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 7) }, 0);
    assert_eq!(
        policy(tid),
        libc::SCHED_FIFO,
        "the boost ended before the renice; the test proves nothing"
    );
    wait_until("the end of the boost", Duration::from_secs(3), || {
        policy(tid) == libc::SCHED_OTHER
    });
    assert_eq!(nice(tid), 7, "the restore undid its owner's renice");
    drop(agent);
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn one_job_gets_at_most_its_share_of_managed_threads_and_jobs_are_capped() {
    let _serial = privileged!();
    use cosched_agent::tracker::{MAX_LIVE_JOBS, MAX_THREADS_PER_JOB};
    let agent = AgentProc::start(&[]);
    let over = MAX_THREADS_PER_JOB + 40;
    let count_threads =
        |pid: u32| std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    // Too many threads at registration: a clear refusal.
    let crowd = helper(&format!("threads:{over},0"));
    wait_until("the crowd's threads", Duration::from_secs(5), || {
        count_threads(crowd.pid()) > MAX_THREADS_PER_JOB
    });
    let err = agent
        .client()
        .register(crowd.pid(), "crowd")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("at most {MAX_THREADS_PER_JOB} managed threads")),
        "unclear refusal: {err}"
    );
    drop(crowd);
    // Growing past the cap after registration: the job keeps its share, the rest is counted and reported.
    let grower = helper(&format!("threads:{over},300"));
    agent.client().register(grower.pid(), "grower").unwrap();
    wait_until(
        "the threads beyond the cap refused",
        Duration::from_secs(10),
        || agent.stats().threads_refused as usize > over - MAX_THREADS_PER_JOB,
    );
    let st = agent.stats();
    let job = st.jobs.iter().find(|j| j.name == "grower").unwrap();
    assert_eq!(job.live_threads, MAX_THREADS_PER_JOB, "{job:#?}");
    assert!(
        st.last_error
            .as_deref()
            .is_some_and(|e| e.contains("the most one job may have")),
        "{:?}",
        st.last_error
    );
    drop(grower);
    wait_until("the grower's end", Duration::from_secs(5), || {
        agent.stats().jobs.iter().all(|j| j.live_processes == 0)
    });
    // Jobs: the one beyond the cap is refused, saying why.
    let sleepers: Vec<Kid> = (0..MAX_LIVE_JOBS + 1)
        .map(|_| Kid(Command::new("sleep").arg("30").spawn().unwrap()))
        .collect();
    for (i, s) in sleepers.iter().enumerate().take(MAX_LIVE_JOBS) {
        agent
            .client()
            .register(s.pid(), &format!("sleeper{i}"))
            .unwrap();
    }
    let err = agent
        .client()
        .register(sleepers[MAX_LIVE_JOBS].pid(), "one too many")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("already manages {MAX_LIVE_JOBS} jobs")),
        "{err}"
    );
    drop(sleepers);
    drop(agent);
}

/// Agent arguments for the local-task tests: boost windows of 2 s (only a yield, the length limit or the budget
/// ends one), reacting to every arrival, the watch gate open at once.
const LONG_WINDOWS: [&str; 8] = [
    "--boost-us",
    "2000000",
    "--max-extend-us",
    "2000000",
    "--grace-us",
    "0",
    "--watch-hold-ms",
    "0",
];

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_boost_steps_aside_for_a_local_task_that_wakes_on_its_cpu() {
    let _serial = privileged!();
    if !two_cpus(
        "needs two CPUs (the boosted receiver and a local sleeper on one, the sender on the other)",
    ) {
        return;
    }
    // A managed spinning receiver on CPU 1 beside a competitor, boosted for windows of 2 s; then a local task
    // of this test on CPU 1 sleeps 1 ms 200 times. Without the yield rule each of its wake-ups would wait for
    // the rest of a 2 s window (or the real-time throttle's 50 ms); with it, one agent reaction.
    let agent = AgentProc::start(&LONG_WINDOWS);
    pin(0);
    let (_rx, _comp, _s) = boosted_spinner(&agent, 1);
    let before = agent.stats();
    let sleeper = std::thread::spawn(|| {
        pin(1);
        let mut worst = Duration::ZERO;
        for _ in 0..200 {
            let start = Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            worst = worst.max(start.elapsed().saturating_sub(Duration::from_millis(1)));
        }
        worst
    });
    let worst = sleeper.join().unwrap();
    let after = agent.stats();
    eprintln!(
        "local sleeper's worst lateness {worst:?}; yielded {}",
        after.boosts_yielded - before.boosts_yielded
    );
    assert!(
        after.boosts_yielded > before.boosts_yielded,
        "no boost yielded to the local task: {after:#?}"
    );
    assert!(
        worst < Duration::from_millis(20),
        "a local task on a boosted CPU waited {worst:?} to run (limit 20 ms)"
    );
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_pause_for_a_local_task_ends_when_its_turn_is_over() {
    let _serial = privileged!();
    if !two_cpus(
        "needs two CPUs (the boosted receiver and a local sleeper on one, the sender on the other)",
    ) {
        return;
    }
    // As above, with pauses of 20 ms: a local task of this test on CPU 1 sleeps 1 ms 100 times. Each wake-up
    // pauses the boost; its turn over (it sleeps again), the boost comes back at once, so the next wake-up meets
    // a boost again. Were the pause to last its 20 ms, about 5 of the 100 wake-ups would find a boost to pause.
    let agent = AgentProc::start(&[&LONG_WINDOWS[..], &["--yield-us", "20000"]].concat());
    pin(0);
    let (_rx, _comp, _s) = boosted_spinner(&agent, 1);
    let before = agent.stats();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                pin(1);
                for _ in 0..100 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .join()
            .unwrap()
    });
    let after = agent.stats();
    let yields = after.boosts_yielded - before.boosts_yielded;
    let ended = after.pauses_ended_by_local - before.pauses_ended_by_local;
    eprintln!("100 wake-ups: {yields} yields, {ended} pauses ended by the local task's turn");
    assert!(
        yields >= 30,
        "only {yields} of 100 wake-ups met a boost: pauses of 20 ms lasted their length ({after:#?})"
    );
    assert!(
        ended * 2 >= yields,
        "{ended} of {yields} pauses ended with the local task's turn ({after:#?})"
    );
}

/// A local thread of this test pinned to `cpu` that computes 3 ms and sleeps 1 ms, `times` times: beside a
/// CPU-bound task it takes more than its half of the CPU, so it wakes behind in the fair class (negative lag)
/// and EEVDF leaves it waiting at most of its wake-ups — refused wake-ups the agent can see.
fn greedy_sleeper(cpu: usize, times: u32) {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                pin(cpu);
                for _ in 0..times {
                    let busy = Instant::now();
                    while busy.elapsed() < Duration::from_millis(3) {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .join()
            .unwrap()
    })
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_local_task_the_fair_class_leaves_waiting_on_a_jobs_cpu_gets_that_cpu_nudged() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (a job's CPU and one without a job)") {
        return;
    }
    for nudging in [true, false] {
        let agent = if nudging {
            AgentProc::start(&LONG_WINDOWS)
        } else {
            AgentProc::start(&[&LONG_WINDOWS[..], &["--no-nudge-local"]].concat())
        };
        // The nudgers are there from the start, one per CPU, before any job or boost (started later, from the
        // event loop, one waited for its set-up behind boosted ranks while the loop waited for it: no boost could
        // end meanwhile).
        // The agent's threads: (tid, name).
        let threads = || -> Vec<(u32, String)> {
            std::fs::read_dir(format!("/proc/{}/task", agent.kid.pid()))
                .unwrap()
                .flatten()
                .filter_map(|t| {
                    let tid = t.file_name().to_str()?.parse().ok()?;
                    let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
                    Some((tid, comm.trim().to_string()))
                })
                .collect()
        };
        let cpus = std::thread::available_parallelism().unwrap().get();
        let nudgers = threads()
            .iter()
            .filter(|(_, c)| c.starts_with("cosched-nudge"))
            .count();
        assert_eq!(
            nudgers,
            if nudging { cpus } else { 0 },
            "nudger threads at the start: {:?}",
            threads()
        );
        // A managed spinning receiver on CPU 1, no messages (so no boosts: it runs in the fair class), and an
        // unmanaged CPU hog on CPU 0.
        // (Its stream stays open for the whole test: the receiver ends when it closes.)
        let (job, _stream) = connected_helper("spinrecv", ",1", false);
        agent.client().register(job.pid(), "spinner").unwrap();
        // Every thread of the job on CPU 1 (the helper pins only its receiving thread).
        for t in std::fs::read_dir(format!("/proc/{}/task", job.pid()))
            .unwrap()
            .flatten()
        {
            let tid = t.file_name().to_string_lossy().parse::<u32>().unwrap();
            sched::set_affinity(tid, &sched::cpu_mask(&[1]).unwrap()).unwrap();
        }
        let _hog = helper("spin:0");
        // Longer than a CPU stays the job's after a managed thread's last switch there (the receiver may have
        // run on CPU 0 before it pinned itself).
        std::thread::sleep(Duration::from_nanos(2 * intf::COSCHED_JOB_CPU_NS));
        // CPU 0 runs no job: whatever the fair class does to a local task there is none of the agent's business.
        let before = agent.stats();
        greedy_sleeper(0, 60);
        let off_job = agent.stats();
        let refused =
            |a: &AgentStats, b: &AgentStats| b.local_wakes_refused - a.local_wakes_refused;
        let nudges = |a: &AgentStats, b: &AgentStats| b.local_nudges - a.local_nudges;
        // CPU 1 is the job's. Whether the fair class refuses the sleeper's wake-ups there at all is the kernel's
        // state, not the agent's: on this VM some runs saw none of 300 refused (2026-11-29: 0 in 2 of 3 runs of
        // this test alone, then 9 passes in a row), so with nudging on, up to three tries of 300 wake-ups, the
        // first with refusals to count judged.
        let mut tries = 0;
        let (start, on_job) = loop {
            let start = agent.stats();
            greedy_sleeper(1, 300);
            let on_job = agent.stats();
            tries += 1;
            if !nudging || refused(&start, &on_job) >= 10 || tries == 3 {
                break (start, on_job);
            }
            eprintln!(
                "try {tries}: the fair class refused {} of the sleeper's wake-ups on the job's CPU; again",
                refused(&start, &on_job)
            );
        };
        eprintln!(
            "nudging {nudging}: CPU without a job {} refused, {} nudges; the job's CPU {} refused, {} nudges ({} boosts)",
            refused(&before, &off_job),
            nudges(&before, &off_job),
            refused(&start, &on_job),
            nudges(&start, &on_job),
            on_job.boosts_granted
        );
        // The counts are the machine's: this sandbox's own tasks waking on the job's CPU meanwhile may add one
        // or two. Watched like the job's CPU, the sleeper's 60 wake-ups would add a dozen or more.
        assert!(
            refused(&before, &off_job) <= 3,
            "a CPU without a job was watched: {off_job:#?}"
        );
        if nudging {
            let (r, n) = (refused(&start, &on_job), nudges(&start, &on_job));
            assert!(
                r >= 10,
                "in {tries} tries, at most {r} of 300 wake-ups of a sleeper over its share were seen refused beside \
                 the job: {on_job:#?}"
            );
            // Wake-ups 4 ms apart, nudges at most one per 100 us per CPU: every refused one is nudged (one of
            // another task at the same moment may go without). BPF counts a refusal at once and the agent its
            // nudge once it has read the event, so one refused just before a window's first snapshot may have its
            // nudge counted in the window (CI: 34 refused, 35 nudges).
            assert!(
                n + 2 >= r && n <= r + 1,
                "refused wake-ups without their nudge: {on_job:#?}"
            );
            // The nudger is a thread of the agent's, pinned to CPU 1 at SCHED_FIFO.
            let (nudger, _) = threads()
                .into_iter()
                .find(|(_, c)| c == "cosched-nudge1")
                .expect("the agent's nudger for CPU 1");
            assert_eq!(policy(nudger), libc::SCHED_FIFO);
            assert_eq!(
                sched::get_affinity(nudger).unwrap(),
                sched::cpu_mask(&[1]).unwrap()
            );
        } else {
            assert_eq!(
                (on_job.local_wakes_refused, on_job.local_nudges),
                (0, 0),
                "--no-nudge-local still watched or nudged: {on_job:#?}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn an_agent_without_a_job_leaves_every_other_tasks_wake_ups_alone() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (a competitor and a light local sleeper on one)") {
        return;
    }
    // The scheduler hooks run on every context switch of the machine; without a job they have nothing to book
    // and no boost to pause, so they must return at once (`gate.managing`). What shows it: a local thread on
    // CPU 1 that sleeps 1 ms 40 times from a cpu cgroup at `cpu.shares` 2 beside a nice-0 competitor is light
    // in the fair class, which the wake-up hook counts (`local_wakes_light`) whenever it does its work — never
    // before the first job, always while one is managed, never again once the last has ended.
    let agent = AgentProc::start(&[]);
    let _competitor = helper("spin:1");
    let light = TestCgroup::new(1, "light", 2, 0);
    let light_wakes = |sleeps: u32| {
        let before = agent.stats().local_wakes_light;
        light.sleep_on(1, sleeps);
        agent.stats().local_wakes_light - before
    };
    let idle = light_wakes(40);
    let job = Kid(Command::new("sleep").arg("30").spawn().unwrap());
    agent.client().register(job.pid(), "idle").unwrap();
    let managing = light_wakes(40);
    drop(job);
    wait_until("the job's end", Duration::from_secs(5), || {
        agent.stats().jobs.iter().all(|j| j.finished)
    });
    let ended = light_wakes(40);
    eprintln!(
        "light wake-ups judged: {idle} before any job, {managing} with one, {ended} after it ended"
    );
    assert_eq!(
        idle, 0,
        "the wake-up hook judged a local task's wake-ups before the agent managed any job"
    );
    assert!(
        managing >= 30,
        "with a job managed, the wake-up hook judged only {managing} of 40 wake-ups of a light sleeper"
    );
    assert_eq!(
        ended, 0,
        "the wake-up hook still judged local wake-ups after the agent's last job ended"
    );
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_boost_yields_only_to_a_local_task_with_weight_in_the_fair_class() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the boosted receiver, a competitor and a local sleeper on one, the sender on the other)")
    {
        return;
    }
    // A managed spinning receiver on CPU 1 beside a competitor (nice 0, this test's cgroup), boosted while
    // messages come. A local thread of this test on CPU 1 sleeps 1 ms, 40 times from a cpu cgroup at
    // `cpu.shares` 2, where the fair class gives it about 2/1026 of the CPU beside the competitor whether or not
    // a boost runs (light: not yielded to, counted), then 150 times from one at 1024, the competitor's weight
    // (yielded to). Its first wake-ups, before it joins the light cgroup, may be yielded to.
    // Credit for the whole test: boosts refused by the budget would leave nothing to yield.
    let agent = AgentProc::start(
        &[
            &LONG_WINDOWS[..],
            &["--open-ms", "5000", "--burst-ms", "5000"],
        ]
        .concat(),
    );
    pin(0);
    let (_rx, _comp, mut s) = boosted_spinner(&agent, 1);
    // Messages every millisecond from CPU 0 keep the exchange, and so the boosts, going (a boost without
    // traffic ends at `--max-boost-ms`).
    let feeding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let feed = feeding.clone();
    let feeder = std::thread::spawn(move || {
        pin(0);
        while feed.load(std::sync::atomic::Ordering::SeqCst) {
            s.write_all(&[0u8; 64]).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let light = TestCgroup::new(1, "light", 2, 0);
    let even = TestCgroup::new(2, "even", 1024, 0);
    let before = agent.stats();
    // 40 wake-ups: at 2/1026 of the CPU beside the competitor, each waits tens of ms for its turn.
    light.sleep_on(1, 40);
    let after_light = agent.stats();
    even.sleep_on(1, 150);
    let after_even = agent.stats();
    feeding.store(false, std::sync::atomic::Ordering::SeqCst);
    feeder.join().unwrap();
    let (light_wakes, light_yields) = (
        after_light.local_wakes_light - before.local_wakes_light,
        after_light.boosts_yielded - before.boosts_yielded,
    );
    let even_yields = after_even.boosts_yielded - after_light.boosts_yielded;
    eprintln!(
        "light sleeper: {light_wakes} wake-ups judged light, {} boosts, {light_yields} yields; even sleeper: {even_yields} yields, \
         {} judged light, {} local wake-ups on a boosted CPU, {} boosts granted, {} held for local",
        after_light.boosts_granted - before.boosts_granted,
        after_even.local_wakes_light - after_light.local_wakes_light,
        after_even.local_wakes - after_light.local_wakes,
        after_even.boosts_granted - after_light.boosts_granted,
        after_even.boosts_held_for_local - after_light.boosts_held_for_local,
    );
    assert!(
        light_wakes >= 30,
        "a sleeper at cpu.shares 2 beside a nice-0 competitor was not judged light: {after_light:#?}"
    );
    let light_boosts = after_light.boosts_granted - before.boosts_granted;
    assert!(
        light_boosts >= 3,
        "too few boosts ({light_boosts}) while the light sleeper slept for its yields to say anything"
    );
    assert!(
        light_yields <= 3,
        "boosts yielded {light_yields} times to a sleeper the fair class gives ~0.2 % of the CPU"
    );
    // Whether boosts then met its wake-ups depends on the exchange's timing; what must not happen is that a
    // sleeper as heavy as the competitor is taken for light.
    assert!(
        after_even.local_wakes_light - after_light.local_wakes_light <= 5,
        "a sleeper at the competitor's weight was judged light: {after_even:#?}"
    );
    // Every reported wake-up is yielded to, but for the few whose boost ended in user space (its window) while
    // the report was on its way: BPF saw the thread still real-time, the agent finds it no longer boosted.
    let even_wakes = after_even.local_wakes - after_light.local_wakes;
    assert!(
        even_yields + 3.max(even_wakes / 50) >= even_wakes && even_yields <= even_wakes,
        "{even_yields} yields for {even_wakes} wake-ups of the sleeper at the competitor's weight on a boosted CPU"
    );
    drop((light, even));
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn a_local_task_that_computes_past_its_slice_holds_boosts_back_no_longer() {
    let _serial = privileged!();
    if !two_cpus("needs two CPUs (the receiver, a competitor and a local task on one, the sender on the other)")
    {
        return;
    }
    // A managed spinning receiver on CPU 1 beside a competitor, fed a message every 2 ms from CPU 0. A local task
    // of this test wakes on CPU 1 and then computes for 45 ms without blocking. Its turn (no boost over it) ends
    // once it has run one slice of the fair class and is switched out; before, it lasted until it blocked (or
    // went stale at 50 ms), so no boost was given on CPU 1 in all that time.
    let agent = AgentProc::start(&["--grace-us", "0", "--watch-hold-ms", "0"]);
    pin(0);
    let (_rx, _comp, mut s) = boosted_spinner(&agent, 1);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let computing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let busy = computing.clone();
    let local = std::thread::spawn(move || {
        pin(1);
        std::thread::sleep(Duration::from_millis(5)); // a fresh wake-up on CPU 1
        started_tx.send(Instant::now()).unwrap();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(45) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        busy.store(false, std::sync::atomic::Ordering::SeqCst);
        x
    });
    let started = started_rx.recv().unwrap();
    // Its first 10 ms: a slice or more on CPU 1 by now; then count what the agent does until it is done.
    while started.elapsed() < Duration::from_millis(10) {
        s.write_all(&[0u8; 64]).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let before = agent.stats();
    while computing.load(std::sync::atomic::Ordering::SeqCst) {
        s.write_all(&[0u8; 64]).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let after = agent.stats();
    local.join().unwrap();
    let granted = after.boosts_granted - before.boosts_granted;
    eprintln!(
        "while the local task computed: {granted} boosts granted, {} held for it",
        after.boosts_held_for_local - before.boosts_held_for_local
    );
    assert!(
        granted > 0,
        "a local task that had run its slice still held every boost back: {after:#?}"
    );
}
