//! Every program on loopback (127.0.0.1, ephemeral ports), in every receive mode, with small counts: the
//! result line parses (every line is read with `ResultLine::parse`, the lab's reader), the correctness count is
//! exact, bad flags fail clearly.
//!
//! The machine may be loaded and have 2 CPUs, so counts are small, timeouts generous (a run is killed after
//! [`RUN_TIMEOUT`]), and the tests take turns (one multi-process run at a time).

use cosched_bench::result::{last_json_line, ResultLine};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const MODES: [&str; 3] = ["spin-only", "spin-block:1600", "block"];
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn binary(program: &str) -> &'static str {
    match program {
        "pingpong" => env!("CARGO_BIN_EXE_cosched-pingpong"),
        "barrier" => env!("CARGO_BIN_EXE_cosched-barrier"),
        "stencil" => env!("CARGO_BIN_EXE_cosched-stencil"),
        "masterslave" => env!("CARGO_BIN_EXE_cosched-masterslave"),
        "alltoall" => env!("CARGO_BIN_EXE_cosched-alltoall"),
        "multigrid" => env!("CARGO_BIN_EXE_cosched-multigrid"),
        "calcula" => env!("CARGO_BIN_EXE_cosched-calcula"),
        "local" => env!("CARGO_BIN_EXE_cosched-local"),
        other => panic!("no program {other}"),
    }
}

/// What one process printed and how it exited.
#[derive(Debug)]
struct Exit {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Exit {
    fn json(&self) -> Value {
        if last_json_line(&self.stdout).is_none() {
            panic!("no result line; stderr: {}", self.stderr);
        }
        result_line(self.stdout.as_bytes())
    }
}

/// The result line in a program's stdout, read as the lab reads it ([`ResultLine::parse`]: a missing or
/// mistyped field fails the test), then as plain JSON for the program's own fields.
fn result_line(stdout: &[u8]) -> Value {
    let stdout = String::from_utf8_lossy(stdout);
    let line = last_json_line(&stdout).unwrap_or_else(|| panic!("no result line in {stdout:?}"));
    ResultLine::parse(line).unwrap_or_else(|e| panic!("{e:#}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
}

/// Wait for `child` until `deadline`; kill it (by its pid) if it runs past.
fn finish(mut child: Child, deadline: Instant, stderr_prefix: String) -> Exit {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stdout = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut stdout)
                .unwrap();
            let mut stderr = stderr_prefix;
            if let Some(mut e) = child.stderr.take() {
                e.read_to_string(&mut stderr).unwrap();
            }
            return Exit {
                code: status.code(),
                stdout,
                stderr,
            };
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("a process ran past {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn spawn(program: &str, args: &[String]) -> Child {
    let mut command = Command::new(binary(program));
    // A rank whose test is killed outright must not spin on waiting for its peer.
    cosched_testkit::die_with_parent(&mut command, libc::SIGKILL);
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Run `ranks` ranks of `program` with `args` each (plus `per_rank(rank)`); returns their exits in rank order.
fn run_ranks(
    program: &str,
    ranks: usize,
    args: &[&str],
    per_rank: impl Fn(usize) -> Vec<String>,
) -> Vec<Exit> {
    let deadline = Instant::now() + RUN_TIMEOUT;
    let common: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut root_args = vec![
        "--rank".into(),
        "0".into(),
        "--ranks".into(),
        ranks.to_string(),
    ];
    root_args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    root_args.extend(common.clone());
    root_args.extend(per_rank(0));
    let mut root = spawn(program, &root_args);
    // Rank 0 names its port on stderr: "<program> rank 0 listening on 127.0.0.1:PORT".
    let mut root_err = BufReader::new(root.stderr.take().unwrap());
    let mut first = String::new();
    root_err.read_line(&mut first).unwrap();
    let address = first
        .trim()
        .rsplit(' ')
        .next()
        .filter(|_| first.contains("listening on"))
        .unwrap_or_else(|| panic!("rank 0 did not say where it listens: {first:?}"))
        .to_string();
    let members: Vec<Child> = (1..ranks)
        .map(|r| {
            let mut a = vec![
                "--rank".into(),
                r.to_string(),
                "--ranks".into(),
                ranks.to_string(),
            ];
            a.extend(["--connect".into(), address.clone()]);
            a.extend(common.clone());
            a.extend(per_rank(r));
            spawn(program, &a)
        })
        .collect();
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        root_err.read_to_string(&mut rest).unwrap();
        rest
    });
    let mut exits = vec![finish(root, deadline, first)];
    exits.extend(
        members
            .into_iter()
            .map(|c| finish(c, deadline, String::new())),
    );
    exits[0].stderr.push_str(&drain.join().unwrap());
    for (rank, e) in exits.iter().enumerate() {
        assert_eq!(
            e.code,
            Some(0),
            "{program} rank {rank} failed: {}",
            e.stderr
        );
    }
    exits
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no integer {key} in {v}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

#[test]
fn pingpong_in_every_mode_checks_every_round_trip() {
    let _turn = take_turn();
    for mode in MODES {
        let exits = run_ranks(
            "pingpong",
            2,
            &["--count", "200", "--recv", mode],
            |_| vec![],
        );
        let (root, echo) = (exits[0].json(), exits[1].json());
        for v in [&root, &echo] {
            assert_eq!(v["program"], "pingpong");
            assert_eq!(v["mode"], mode);
            assert_eq!(v["status"], "complete");
            assert_eq!(u(v, "work_done"), 200, "{v}");
            assert_eq!(u(v, "work_expected"), 200);
            assert!(f(v, "wall_s") > 0.0 && f(v, "cpu_s") >= 0.0 && f(v, "rate_per_s") > 0.0);
        }
        // Rank 1 received 200 pings and the stop message.
        assert_eq!(u(&echo, "receives"), 201);
        match mode {
            "spin-only" => assert_eq!(u(&echo, "blocked_waits"), 0),
            "block" => assert_eq!(u(&echo, "blocked_waits"), 201),
            _ => assert!(u(&echo, "blocked_waits") <= 201),
        }
        let (p50, p90, p99) = (
            f(&root, "rtt_p50_us"),
            f(&root, "rtt_p90_us"),
            f(&root, "rtt_p99_us"),
        );
        assert!(0.0 < p50 && p50 <= p90 && p90 <= p99, "{root}");
        let counts: u64 = root["rtt_histogram"]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(counts, 200);
    }
}

#[test]
fn pingpong_by_duration_ends_both_ranks_together() {
    let _turn = take_turn();
    let exits = run_ranks(
        "pingpong",
        2,
        &["--duration-s", "0.3", "--recv", "spin-block"],
        |_| vec![],
    );
    let (root, echo) = (exits[0].json(), exits[1].json());
    assert!(u(&root, "work_done") > 0);
    assert_eq!(u(&root, "work_done"), u(&echo, "work_done"));
    assert!(root.get("work_expected").is_none());
    assert!(f(&root, "wall_s") >= 0.3);
}

#[test]
fn barrier_in_every_mode_passes_every_barrier() {
    let _turn = take_turn();
    for mode in MODES {
        let exits = run_ranks(
            "barrier",
            3,
            &["--count", "50", "--compute-us", "20", "--recv", mode],
            |_| vec![],
        );
        for e in &exits {
            let v = e.json();
            assert_eq!(u(&v, "work_done"), 50, "{v}");
            assert_eq!(v["mode"], mode);
        }
        // The root got 2 "at barrier" messages per barrier.
        let root = exits[0].json();
        assert_eq!(u(&root, "receives"), 100);
        assert_eq!(root["latency_of"], "barrier iteration");
        assert!(f(&root, "compute_iterations") > 0.0);
    }
}

#[test]
fn masterslave_in_every_mode_verifies_every_reply() {
    let _turn = take_turn();
    for mode in MODES {
        // Ranks 1 and 3 are rs_slaves by default, rank 2 an r_slave.
        let exits = run_ranks(
            "masterslave",
            4,
            &["--count", "30", "--compute-us", "20", "--recv", mode],
            |_| vec![],
        );
        let master = exits[0].json();
        assert_eq!(u(&master, "work_done"), 30);
        assert_eq!(u(&master, "rs_slaves"), 2);
        assert_eq!(u(&master, "r_slaves"), 1);
        assert_eq!(u(&master, "replies_verified"), 60);
        assert_eq!(u(&master, "messages_sent"), 90);
        let roles: Vec<Value> = exits[1..]
            .iter()
            .map(|e| e.json()["role"].clone())
            .collect();
        assert_eq!(roles, ["rs", "r", "rs"]);
        assert_eq!(
            u(&exits[2].json(), "messages_sent"),
            0,
            "an r_slave never replies"
        );
    }
}

#[test]
fn masterslave_roles_can_be_chosen() {
    let _turn = take_turn();
    let exits = run_ranks(
        "masterslave",
        3,
        &["--count", "10", "--compute-us", "5"],
        |r| match r {
            0 => vec![],
            _ => vec!["--role".into(), "rs".into()],
        },
    );
    assert_eq!(u(&exits[0].json(), "replies_verified"), 20);
}

#[test]
fn stencil_checksum_is_the_same_for_any_rank_count() {
    let _turn = take_turn();
    let serial = Command::new(binary("stencil"))
        .args(["--ranks", "1", "--grid", "40", "--count", "30"])
        .output()
        .unwrap();
    assert!(
        serial.status.success(),
        "{}",
        String::from_utf8_lossy(&serial.stderr)
    );
    let serial: Value = result_line(&serial.stdout);
    let expected = serial["checksum"].as_str().unwrap().to_string();
    for (ranks, mode) in [(2, "spin-only"), (3, "spin-block:1600"), (4, "block")] {
        let exits = run_ranks(
            "stencil",
            ranks,
            &["--grid", "40", "--count", "30", "--recv", mode],
            |_| vec![],
        );
        let root = exits[0].json();
        assert_eq!(root["checksum"], expected.as_str(), "{ranks} ranks, {mode}");
        for e in &exits {
            assert_eq!(u(&e.json(), "work_done"), 30);
        }
    }
}

#[test]
fn stencil_by_duration_runs_the_same_iterations_on_every_rank() {
    let _turn = take_turn();
    let exits = run_ranks(
        "stencil",
        3,
        &["--grid", "40", "--duration-s", "0.3", "--recv", "block"],
        |_| vec![],
    );
    let done: Vec<u64> = exits.iter().map(|e| u(&e.json(), "work_done")).collect();
    assert!(
        done[0] > 0 && done.iter().all(|&d| d == done[0]),
        "{done:?}"
    );
    // The checksum of that many iterations is the serial one.
    let serial = Command::new(binary("stencil"))
        .args([
            "--ranks",
            "1",
            "--grid",
            "40",
            "--count",
            &done[0].to_string(),
        ])
        .output()
        .unwrap();
    let serial: Value = result_line(&serial.stdout);
    assert_eq!(exits[0].json()["checksum"], serial["checksum"]);
}

#[test]
fn alltoall_in_every_mode_verifies_every_block_and_the_reduction() {
    let _turn = take_turn();
    for mode in MODES {
        let exits = run_ranks(
            "alltoall",
            4,
            &[
                "--count",
                "20",
                "--compute-us",
                "20",
                "--bytes",
                "256",
                "--recv",
                mode,
            ],
            |_| vec![],
        );
        for (rank, e) in exits.iter().enumerate() {
            let v = e.json();
            assert_eq!(v["program"], "alltoall");
            assert_eq!(v["mode"], mode);
            assert_eq!(v["status"], "complete");
            assert_eq!(u(&v, "work_done"), 20, "{v}");
            assert_eq!(u(&v, "work_expected"), 20);
            // 3 blocks in, 3 out, each iteration.
            assert_eq!(u(&v, "blocks_verified"), 60, "{v}");
            assert_eq!(u(&v, "bytes_sent"), 20 * 3 * 256, "{v}");
            // Blocks plus the reduction: rank 0 gathers 3 partials, a member gets 1 total, per iteration.
            let reduction = if rank == 0 { 60 } else { 20 };
            assert_eq!(u(&v, "receives"), 60 + reduction, "{v}");
            if mode == "spin-only" {
                assert_eq!(u(&v, "blocked_waits"), 0);
            }
            assert_eq!(v["latency_of"], "iteration");
        }
    }
}

#[test]
fn alltoall_blocks_larger_than_the_socket_buffers_go_through() {
    let _turn = take_turn();
    // 4 MiB to each of 2 others, every rank sending before it receives.
    let exits = run_ranks(
        "alltoall",
        3,
        &[
            "--count",
            "2",
            "--compute-us",
            "10",
            "--bytes",
            "4194304",
            "--recv",
            "block",
        ],
        |_| vec![],
    );
    for e in &exits {
        let v = e.json();
        assert_eq!(u(&v, "work_done"), 2, "{v}");
        assert_eq!(u(&v, "blocks_verified"), 4, "{v}");
    }
}

#[test]
fn alltoall_by_duration_ends_every_rank_on_the_same_iteration() {
    let _turn = take_turn();
    let exits = run_ranks(
        "alltoall",
        3,
        &[
            "--duration-s",
            "0.3",
            "--compute-us",
            "20",
            "--recv",
            "spin-block:1600",
        ],
        |_| vec![],
    );
    let done: Vec<u64> = exits.iter().map(|e| u(&e.json(), "work_done")).collect();
    assert!(
        done[0] > 0 && done.iter().all(|&d| d == done[0]),
        "{done:?}"
    );
    let root = exits[0].json();
    assert!(root.get("work_expected").is_none());
    assert!(f(&root, "wall_s") >= 0.3);
}

#[test]
fn multigrid_in_every_mode_checks_every_halo_around_the_ring() {
    let _turn = take_turn();
    // 2 ranks (left and right neighbour the same rank), 3 and 4.
    for (ranks, mode) in [(2, "spin-only"), (3, "spin-block:1600"), (4, "block")] {
        let exits = run_ranks(
            "multigrid",
            ranks,
            &[
                "--count",
                "10",
                "--levels",
                "3",
                "--compute-us",
                "20",
                "--bytes",
                "4096",
                "--recv",
                mode,
            ],
            |_| vec![],
        );
        for (rank, e) in exits.iter().enumerate() {
            let v = e.json();
            assert_eq!(v["program"], "multigrid");
            assert_eq!(v["mode"], mode);
            assert_eq!(v["status"], "complete");
            assert_eq!(u(&v, "work_done"), 10, "{v}");
            assert_eq!(u(&v, "levels"), 3);
            // 5 level visits a V-cycle (0 1 2 1 0), 2 halos each.
            assert_eq!(u(&v, "halos_verified"), 100, "{ranks} ranks: {v}");
            assert_eq!(u(&v, "left"), ((rank + ranks - 1) % ranks) as u64);
            assert_eq!(u(&v, "right"), ((rank + 1) % ranks) as u64);
            assert_eq!(v["latency_of"], "V-cycle");
        }
    }
}

#[test]
fn multigrid_halos_larger_than_the_socket_buffers_go_through() {
    let _turn = take_turn();
    for ranks in [2, 3] {
        let exits = run_ranks(
            "multigrid",
            ranks,
            &[
                "--count",
                "2",
                "--levels",
                "2",
                "--compute-us",
                "10",
                "--bytes",
                "4194304",
                "--recv",
                "block",
            ],
            |_| vec![],
        );
        for e in &exits {
            assert_eq!(u(&e.json(), "work_done"), 2);
        }
    }
}

#[test]
fn multigrid_by_duration_runs_the_same_v_cycles_on_every_rank() {
    let _turn = take_turn();
    let exits = run_ranks(
        "multigrid",
        4,
        &[
            "--duration-s",
            "0.3",
            "--compute-us",
            "20",
            "--recv",
            "block",
        ],
        |_| vec![],
    );
    let done: Vec<u64> = exits.iter().map(|e| u(&e.json(), "work_done")).collect();
    assert!(
        done[0] > 0 && done.iter().all(|&d| d == done[0]),
        "{done:?}"
    );
}

#[test]
fn calcula_reports_its_cpu_share_and_stops_on_sigterm() {
    let _turn = take_turn();
    let out = Command::new(binary("calcula"))
        .args(["--duration-s", "0.2"])
        .output()
        .unwrap();
    let v: Value = result_line(&out.stdout);
    assert_eq!(v["status"], "complete");
    assert!(u(&v, "work_done") > 0);
    let share = f(&v, "cpu_share");
    assert!(share > 0.0 && share <= 1.2, "{v}");

    let child = spawn("calcula", &[]);
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let exit = finish(child, Instant::now() + RUN_TIMEOUT, String::new());
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    let v = exit.json();
    assert_eq!(v["status"], "stopped");
    assert!(u(&v, "loops") > 0);
}

#[test]
fn a_signalled_root_ends_the_whole_run_cleanly() {
    let _turn = take_turn();
    // Start a long ping-pong, then SIGTERM rank 0 only: it tells rank 1, both print their lines and exit 0.
    let mut root = spawn(
        "pingpong",
        &[
            "--listen",
            "127.0.0.1:0",
            "--recv",
            "block",
            "--duration-s",
            "100",
        ]
        .map(String::from),
    );
    let mut err = BufReader::new(root.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let address = first.trim().rsplit(' ').next().unwrap().to_string();
    let echo = spawn(
        "pingpong",
        &[
            "--rank".into(),
            "1".into(),
            "--connect".into(),
            address,
            "--recv".into(),
            "block".into(),
            "--duration-s".into(),
            "100".into(),
        ],
    );
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(root.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    let (root, echo) = (
        finish(root, deadline, first),
        finish(echo, deadline, String::new()),
    );
    assert_eq!(
        (root.code, echo.code),
        (Some(0), Some(0)),
        "{} / {}",
        root.stderr,
        echo.stderr
    );
    assert_eq!(root.json()["status"], "stopped");
    assert_eq!(echo.json()["status"], "complete");
    // The signal may land while rank 0 waits for a pong that rank 1 already sent: rank 0 counts only round
    // trips it completed, so rank 1 may be one ahead.
    let (done, echoed) = (u(&root.json(), "work_done"), u(&echo.json(), "work_done"));
    assert!(
        done > 0 && (echoed == done || echoed == done + 1),
        "rank 0 {done}, rank 1 {echoed}"
    );
}

#[test]
fn local_measures_each_burst() {
    let _turn = take_turn();
    let out = Command::new(binary("local"))
        .args([
            "--count",
            "4",
            "--mean-interval-ms",
            "20",
            "--burst-us",
            "1000",
            "--min-mb",
            "1",
            "--max-mb",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = result_line(&out.stdout);
    assert_eq!(u(&v, "work_done"), 4);
    // 4 bursts of 1..2 MB: 4..8 MiB read in 64 KiB calls = 64..128 calls.
    let (bytes, calls) = (u(&v, "bytes_touched"), u(&v, "read_calls"));
    assert!((4 << 20..=8 << 20).contains(&bytes), "{v}");
    assert!((64..=128).contains(&calls), "{v}");
    // A burst's response includes its own CPU time, so the slowdown is at least about 1.
    assert!(f(&v, "slowdown_p50") >= 0.9, "{v}");
    assert!(f(&v, "response_p99_us") >= f(&v, "response_p50_us"));
}

fn fails_with(program: &str, args: &[&str], code: i32, needle: &str) {
    let out = Command::new(binary(program)).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{program} {args:?}: {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "{program} {args:?}: expected {needle:?} in: {stderr}"
    );
    assert!(out.stdout.is_empty(), "no result line on failure");
}

#[test]
fn bad_flags_fail_clearly() {
    fails_with(
        "pingpong",
        &["--recv", "spinblock", "--listen", "127.0.0.1:0"],
        2,
        "spin-block:<microseconds>",
    );
    fails_with(
        "pingpong",
        &["--ranks", "3", "--listen", "127.0.0.1:0"],
        1,
        "exactly 2 ranks",
    );
    fails_with("pingpong", &["--rank", "1"], 1, "needs --connect");
    fails_with(
        "pingpong",
        &["--listen", "127.0.0.1:0", "--bytes", "8"],
        1,
        "16-byte header",
    );
    fails_with(
        "pingpong",
        &["--listen", "127.0.0.1:0", "--count", "0"],
        1,
        "--count 0",
    );
    fails_with(
        "pingpong",
        &[
            "--listen",
            "127.0.0.1:0",
            "--count",
            "5",
            "--duration-s",
            "1",
        ],
        2,
        "cannot be used with",
    );
    fails_with("barrier", &["--listen", "nowhere"], 2, "ADDR:PORT");
    fails_with(
        "stencil",
        &["--ranks", "1", "--grid", "2", "--count", "1"],
        1,
        "--grid 2",
    );
    fails_with(
        "stencil",
        &["--ranks", "1", "--omega", "2.5", "--count", "1"],
        1,
        "--omega",
    );
    fails_with(
        "masterslave",
        &["--listen", "127.0.0.1:0", "--role", "rs"],
        1,
        "rank 0 is the master",
    );
    fails_with(
        "alltoall",
        &["--listen", "127.0.0.1:0", "--compute-us=-1"],
        1,
        "--compute-us",
    );
    fails_with(
        "multigrid",
        &["--listen", "127.0.0.1:0", "--levels", "0"],
        1,
        "--levels 0",
    );
    fails_with(
        "multigrid",
        &["--listen", "127.0.0.1:0", "--bytes", "20"],
        1,
        "8-byte stop mark",
    );
    fails_with("local", &["--min-mb", "5", "--max-mb", "1"], 1, "--min-mb");
    // Nobody listens on a just-closed port: a clear timeout.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    fails_with(
        "pingpong",
        &[
            "--rank",
            "1",
            "--connect",
            &address,
            "--connect-timeout-s",
            "0.5",
        ],
        1,
        "could not connect to rank 0",
    );
}

#[test]
fn open_mpi_pingpong_runs_when_mpi_is_installed() {
    let has = |cmd: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {cmd}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !(has("mpicc") && has("mpirun")) {
        cosched_testkit::cannot_run(
            "open_mpi_pingpong_runs_when_mpi_is_installed",
            "mpicc / mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)",
        );
        return;
    }
    let _turn = take_turn();
    let dir = std::env::temp_dir().join(format!("cosched-bench-mpi-{}", std::process::id()));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mpi/build.sh");
    let built = Command::new("sh").arg(script).arg(&dir).output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "2",
            "--mca",
            "btl",
            "tcp,self",
        ])
        .arg(dir.join("mpi_pingpong"))
        .args(["--count", "300", "--recv", "spin-only", "--bytes", "128"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = result_line(&out.stdout);
    assert_eq!(u(&v, "work_done"), 300);
    assert_eq!(v["requested_mode"], "spin-only");
    assert!(f(&v, "rtt_p50_us") > 0.0);
    let counts: u64 = v["rtt_histogram"]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(counts, 300);
}
