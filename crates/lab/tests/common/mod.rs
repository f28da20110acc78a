//! Helpers shared by the privileged lab tests.
#![allow(dead_code)]

use cosched_lab::cgroup::CGROUP_ROOT;
use cosched_lab::Binaries;
use cosched_lab::LabExperiment;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Privileged tests skip (and say so) when not root.
pub fn root_or_skip(test: &str) -> bool {
    if cosched_lab::preflight::is_root() {
        let problems = cosched_lab::preflight::machine_problems();
        if problems.is_empty() {
            return true;
        }
        cosched_testkit::cannot_run(test, &problems.join("; "));
        return false;
    }
    cosched_testkit::cannot_run(
        test,
        "needs root (network namespaces, cgroups); run `sudo cargo test -p cosched-lab`",
    );
    false
}

/// Namespaces and cgroups this test process created that still exist.
pub fn leftovers() -> Vec<String> {
    leftovers_of(std::process::id())
}

/// What a lab run by process `lab_pid` left: its network namespaces and cgroups.
pub fn leftovers_of(lab_pid: u32) -> Vec<String> {
    let prefix = format!("cosched-l{lab_pid}x");
    let mut found: Vec<String> = cosched_lab::netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    for controller in ["cpu", "cpuacct", "cpuset"] {
        for entry in std::fs::read_dir(Path::new(CGROUP_ROOT).join(controller))
            .unwrap()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found
}

/// Perl one-liner: accept one TCP connection on `port`, echo one line back.
pub const PERL_ECHO_SERVER: &str = r#"use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => $ARGV[0], Listen => 1, ReuseAddr => 1) or exit 5; my $c = $s->accept or exit 6; my $l = <$c>; print $c $l; close $c;"#;

/// Perl one-liner: connect to `$ARGV[0]:$ARGV[1]` (retrying for 3 s), send a line, expect it back; exit 7 if not.
pub const PERL_ECHO_CLIENT: &str = r#"use IO::Socket::INET; for (1..60) { my $c = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1]); if ($c) { print $c "hello\n"; my $l = <$c>; exit($l eq "hello\n" ? 0 : 8); } select(undef, undef, undef, 0.05); } exit 7;"#;

/// A directory of stand-in benchmark programs (shell scripts) that speak the lab's contract:
/// `cosched-calcula` spins; `cosched-pingpong` on the root accepts one TCP connection through the emulated
/// network, echoes a line, spins for `root_s` seconds and prints a result line (the fields of
/// `cosched_bench::result::ResultLine` that every line has, with round-trip percentiles); on the other node it connects
/// to the root's address (exit 7 if unreachable). A nonzero `pingpong_exit` makes it fail at once. The directory
/// goes when the returned value is dropped.
pub fn fake_bench(tag: &str, root_s: f64, pingpong_exit: i32) -> FakeBench {
    let temp = tempfile::Builder::new()
        .prefix(&format!("cosched-lab-test-{tag}-"))
        .tempdir()
        .unwrap();
    // Readable by whoever the lab runs a program as, like any bench directory.
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = temp.path().to_path_buf();
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("cosched-calcula", "while :; do :; done");
    write(
        "cosched-pingpong",
        &format!(
            r#"[ {pingpong_exit} -ne 0 ] && exit {pingpong_exit}
while [ $# -gt 0 ]; do case "$1" in --listen) role=root; port="${{2##*:}}";; --connect) peer="${{2%:*}}"; port="${{2##*:}}";; esac; shift; done
if [ "$role" = root ]; then
  perl -e '{server}' "$port" || exit $?
  end=$(( $(date +%s%N) + {ns} )); n=0
  while [ $(date +%s%N) -lt $end ]; do n=$((n+1)); done
  echo "{{\"program\":\"pingpong\",\"rank\":0,\"ranks\":2,\"status\":\"complete\",\"work_done\":$n,\"wall_s\":{root_s},\"cpu_s\":{root_s},\"cpu_user_s\":{root_s},\"cpu_sys_s\":0.0,\"cpu_share\":1.0,\"rate_per_s\":$(( n * 1000000000 / {ns} )),\"rtt_p50_us\":10.0,\"rtt_p99_us\":20.0}}"
else
  perl -e '{client}' "$peer" "$port"
fi"#,
            ns = (root_s * 1e9) as u64,
            server = PERL_ECHO_SERVER,
            client = PERL_ECHO_CLIENT,
        ),
    );
    FakeBench {
        binaries: Binaries {
            bench_dir: dir,
            // The real `cosched`, where built, for the lab's reaper: a test binary killed mid-test leaves nothing.
            cosched: cosched_binary().unwrap_or_else(|| PathBuf::from("/nonexistent/cosched")),
            mpi_dir: None,
        },
        _dir: temp,
    }
}

/// [`fake_bench`]'s programs: the [`Binaries`] to run them with, and their directory, removed on drop (the tests
/// left one in /tmp per run before).
pub struct FakeBench {
    binaries: Binaries,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for FakeBench {
    type Target = Binaries;
    fn deref(&self) -> &Binaries {
        &self.binaries
    }
}

impl std::ops::DerefMut for FakeBench {
    fn deref_mut(&mut self) -> &mut Binaries {
        &mut self.binaries
    }
}

/// The built `cosched` binary (target/release or target/debug, or $COSCHED_BIN), if any.
pub fn cosched_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("COSCHED_BIN") {
        return Some(PathBuf::from(p));
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("cosched"))
        .find(|p| p.is_file())
}

/// Parse an experiment written in a test.
pub fn experiment(text: &str) -> LabExperiment {
    LabExperiment::parse(text, Path::new("test.toml")).unwrap()
}

/// A two-node experiment of the stand-in ping-pong of [`fake_bench`], one configuration, under the lab settings
/// the tests run with (50 ms settle, 10 ms of real-time budget). `program`: the `[program]` lines after its
/// kind (run length, timeout); `configuration`: the lines of its one `[[configurations]]` table.
pub fn pingpong_experiment(
    competitors: &[u32],
    receive_mode: &str,
    program: &str,
    configuration: &str,
) -> LabExperiment {
    experiment(&pingpong_experiment_text(
        competitors,
        receive_mode,
        program,
        configuration,
    ))
}

/// The text of [`pingpong_experiment`], for a test that hands the file to the `cosched lab` command.
pub fn pingpong_experiment_text(
    competitors: &[u32],
    receive_mode: &str,
    program: &str,
    configuration: &str,
) -> String {
    format!(
        r#"
name = "t"
nodes = 2
competitors = {competitors:?}
receive_modes = ["{receive_mode}"]
[program]
kind = "pingpong"
{program}
[[configurations]]
{configuration}
[lab]
settle_ms = 50
rt_runtime_us = 10000
"#
    )
}
