//! The agent's control socket: one JSON request per connection, one JSON reply, then close.
//!
//! The socket (default [`DEFAULT_SOCKET`]) is created mode 0666 in a 0755 directory: any local user may ping
//! the agent, read its statistics and register their own processes (the agent checks the peer's uid from
//! `SO_PEERCRED` against the process's, [`crate::sched::owned_by`]); root may register any process.
//! [`Client`] is the library API the lab and `cosched run` use.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest reply line a client reads: far above any real one (the stats of thousands of jobs), and a bound
/// on what a wrong or hostile listener at the socket path can make the client hold.
pub const MAX_REPLY_BYTES: u64 = 16 << 20;

/// Where `cosched agent` listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/cosched/agent.sock";

/// A request to the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    /// Manage process `pid` and every descendant it creates from now on, as one job.
    Register { pid: u32, name: String },
    /// The live statistics.
    Stats,
    /// Liveness check.
    Ping,
}

/// The agent's reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    Registered { job: u64 },
    Stats(Box<AgentStats>),
    Pong { pid: u32 },
    Error { message: String },
}

/// Percentiles of a latency distribution, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
// A field one side does not know reads as its default, so an agent and a client of different versions still
// talk (unknown fields are ignored).
#[serde(default)]
pub struct Latency {
    pub count: u64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// log2 histogram: bucket `b` holds `[2^(b-1), 2^b)` µs, bucket 0 holds `< 1 µs`.
    pub log2_us_counts: Vec<u64>,
}

/// What one job got.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
// A field one side does not know reads as its default, so an agent and a client of different versions still
// talk (unknown fields are ignored).
#[serde(default)]
pub struct JobStats {
    pub job: u64,
    pub name: String,
    pub root_pid: u32,
    /// The real uid of its root process at registration: every job of one user spends that user's one budget
    /// (root's jobs each their own).
    pub owner_uid: u32,
    pub live_processes: usize,
    pub live_threads: usize,
    /// Seconds since registration (until the last process ended, for a finished job).
    pub wall_s: f64,
    /// CPU time of all its processes while managed, from `/proc/<pid>/stat` (utime + stime).
    pub cpu_s: f64,
    /// The CPU time the budget charged its processes: the kernel's own `se.sum_exec_runtime`, read by BPF at
    /// every context switch (it should agree with `cpu_s`; the budget is only as fair as this is right).
    pub booked_cpu_s: f64,
    /// Mean over its processes of `Tcpu / Twall` (share of one CPU).
    pub cpu_share: f64,
    /// Mean over its processes of `F = N × Tcpu / Twall`, `N` the mean run-queue length seen at its arrivals
    /// (1 when it had none): the seed's fairness fraction, 1 is fair.
    pub fairness: f64,
    /// Boosts carried out for its threads.
    pub boosts_granted: u64,
    /// The policy's counters for this job (see [`PolicyStats`]).
    pub policy: BTreeMap<String, u64>,
    pub finished: bool,
}

/// The policy's own section of the statistics (`cosched agent --policy NAME`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyStats {
    /// The policy's name.
    pub name: String,
    /// Arrivals it refused to act on: the sum of its refusal counters.
    pub refused: u64,
    /// Each of its counters by name (the DCS policy's: `refused_dcs`, `refused_budget`, `boosts_extended`,
    /// `demotions`, `parks`, ... — `crate::policy::dcs::COUNTERS`).
    pub counters: BTreeMap<String, u64>,
}

impl PolicyStats {
    /// One counter, 0 when the policy has none of that name.
    pub fn get(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// Everything the agent serves live (`cosched agent --stats`, `--monitor`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
// A field one side does not know reads as its default, so an agent and a client of different versions still
// talk (unknown fields are ignored).
#[serde(default)]
pub struct AgentStats {
    pub agent_pid: u32,
    pub guardian_pid: u32,
    /// Times the guardian revoked every boost because the agent had not run for its lease (stopped, wedged).
    pub guardian_revocations: u64,
    pub uptime_s: f64,
    /// The agent's own CPU time (user + system) and its share of one CPU since start (this includes loading and
    /// verifying the BPF program; for one run, take the difference of two snapshots).
    pub agent_cpu_s: f64,
    pub agent_cpu_fraction: f64,
    /// The resolved configuration, as `key=value` strings.
    pub config: Vec<String>,
    /// BPF counters (`COSCHED_STAT_*` in intf.h).
    pub arrivals: u64,
    pub flagged: u64,
    pub arrivals_on_cpu: u64,
    pub arrivals_recent: u64,
    /// Arrivals for a receiver alone on its CPU (R <= 1), left to the kernel.
    pub arrivals_alone: u64,
    /// Arrivals for a boosted receiver that a higher real-time task (the agent, a kernel thread) had preempted:
    /// it runs again as soon as that one is done, so they are not handed over.
    pub arrivals_boosted: u64,
    /// Arrivals for a receiver that was preempted while boosted and whose boost has ended since (its entry still
    /// said real-time): handed over as any other arrival, not taken for [`AgentStats::arrivals_boosted`].
    pub arrivals_boost_ended: u64,
    pub arrivals_pending: u64,
    /// Arrivals the sampled running view (`--running-view-us`) took for a running receiver that was off its CPU:
    /// left to wait, the cost of a stale view.
    #[serde(default)]
    pub arrivals_stale_missed: u64,
    pub ringbuf_drops: u64,
    pub sock_misses: u64,
    pub task_misses: u64,
    pub map_full: u64,
    pub forks: u64,
    pub switches: u64,
    /// BPF events the agent read.
    pub events: u64,
    /// Boosts carried out (a thread went to `SCHED_FIFO`).
    pub boosts_granted: u64,
    /// Changes not made because the thread had exited.
    pub refused_gone: u64,
    /// Changes the kernel refused (see `last_error`).
    pub boost_errors: u64,
    /// Boosts ended early because a local task woke on the boosted thread's CPU (`--no-yield-to-local` keeps
    /// them), and the local wake-ups BPF reported.
    pub boosts_yielded: u64,
    pub local_wakes: u64,
    /// Pauses for a local task ended as soon as BPF saw every local task waiting on that CPU have its turn
    /// (`COSCHED_EV_LOCAL_DONE`), before `--yield-us`.
    #[serde(default)]
    pub pauses_ended_by_local: u64,
    /// Local wake-ups, on any CPU, of tasks that weighed under 1/64 of their CPU's fair class (BPF
    /// `light_in_fair_class`): never yielded to nor recorded, as a pause would not let them run sooner.
    #[serde(default)]
    pub local_wakes_light: u64,
    /// Local wake-ups on a job's CPU that the fair class left waiting (no reschedule after the kernel's
    /// decision: BPF `nudge_if_refused`), and the nudges the agent gave their CPUs for them (`crate::nudge`; at
    /// most one per CPU per 100 µs, none with `--no-nudge-local`).
    #[serde(default)]
    pub local_wakes_refused: u64,
    #[serde(default)]
    pub local_nudges: u64,
    /// Local tasks found runnable and waiting on a job's CPU after a wake-up no hook saw (BPF
    /// `unseen_waiting_local`: on this sandbox nothing is traced while its own daemon runs), each then answered
    /// like a seen one.
    #[serde(default)]
    pub local_wakes_unseen: u64,
    /// Boosts and extensions not given because a local task woke on the thread's CPU and waited there.
    pub boosts_held_for_local: u64,
    /// Threads left unmanaged because their job already had the most managed threads a job may have.
    pub threads_refused: u64,
    /// Processes that left management alive: they exec'd a setuid or setgid program.
    pub released_setuid: u64,
    /// Flagged arrivals the engine could not hand to the policy (thread or process not tracked).
    pub arrivals_unattributed: u64,
    pub restores: u64,
    /// The watch gate: whether it is open now (some managed thread shared its CPU within --watch-hold-ms),
    /// whether the BPF message hooks are attached (they are while it is open), and how often it was closed.
    pub watching: bool,
    pub message_hooks_attached: bool,
    pub watch_closes: u64,
    /// The self-check (`None`: `--no-self-check`): is coscheduling measurably faster than standing aside?
    pub self_check: Option<SelfCheckStats>,
    pub malformed_events: u64,
    pub boosted_now: usize,
    /// Arrival → receiver on a CPU, measured in BPF at the receiver's switch-in. `reaction_boosted`: it was boosted
    /// then, measured from the arrival that was handed to the agent last (the one the boost answered);
    /// `reaction_unboosted`: it was not, measured from the first flagged arrival it waited behind.
    pub reaction_boosted: Latency,
    pub reaction_unboosted: Latency,
    /// Flagged arrival → the agent's `sched_setattr` returned.
    pub decision: Latency,
    /// Flagged arrival → the agent read it from the ring buffer (its wake-up).
    pub wakeup: Latency,
    pub jobs: Vec<JobStats>,
    /// Each BPF program's calls and run time as the kernel counts them: empty unless `kernel.bpf_stats_enabled`
    /// is 1 (the kernel counts only then; `sysctl -w kernel.bpf_stats_enabled=1` for a measurement, it costs
    /// two clock reads per call).
    pub bpf_programs: Vec<ProgramCost>,
    /// What the policy decided (its own counters).
    pub policy: PolicyStats,
    /// The last error the agent met acting on a task (with the pid and the cause).
    pub last_error: Option<String>,
}

/// The self-check's state and counts ([`cosched_policy::selfcheck`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SelfCheckStats {
    /// The running epoch's mode and the one the measurements favour: `coschedule` or `stand-aside`.
    pub mode: String,
    pub chosen: String,
    pub epochs_coscheduling: u64,
    pub epochs_standing_aside: u64,
    /// Epochs that ran the other mode to compare, and changes of the favoured mode.
    pub probes: u64,
    pub switches: u64,
    /// Epochs with no TCP progress to measure (not judged).
    pub blind_epochs: u64,
    /// Epoch ends at which a probe of standing aside was due and held: the jobs spun while they waited.
    pub probes_held: u64,
    /// The other mode's mean relative gain over the probes since the last switch (`None`: none yet).
    pub mean_gain: Option<f64>,
    /// Changes (boosts, demotions) the policy asked for while standing aside (not made).
    pub actions_stood_aside: u64,
}

impl SelfCheckStats {
    /// Of the epochs run, the fraction spent standing aside.
    pub fn aside_fraction(&self) -> Option<f64> {
        let all = self.epochs_coscheduling + self.epochs_standing_aside;
        (all > 0).then(|| self.epochs_standing_aside as f64 / all as f64)
    }
}

/// One BPF program's cost while the kernel counted it (`kernel.bpf_stats_enabled`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProgramCost {
    /// The program (`cosched_switch`, ...).
    pub name: String,
    pub calls: u64,
    /// Total run time, ns.
    pub run_ns: u64,
}

impl ProgramCost {
    /// Mean run time per call, ns (`None` before any call).
    pub fn ns_per_call(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.run_ns as f64 / self.calls as f64)
    }
}

impl AgentStats {
    /// Copies the agent's part of a result into the shared schema (`cosched_report::schema::Measurement`).
    pub fn fill_measurement(&self, m: &mut cosched_report::schema::Measurement) {
        m.boosts_granted = self.boosts_granted;
        m.boosts_refused = self.policy.refused;
        // The reaction is the agent's: arrival → receiver on its CPU for the arrivals it boosted. An arrival it
        // refused (the receiver has had its share) waits its turn by design, up to a budget burst: kept apart.
        m.reaction_p50_us = self.reaction_boosted.p50_us;
        m.reaction_p99_us = self.reaction_boosted.p99_us;
        let waited = &self.reaction_unboosted;
        m.extra.insert("refused_waits".into(), waited.count as f64);
        if let Some(p99) = waited.p99_us {
            m.extra.insert("refused_wait_p99_us".into(), p99);
        }
        m.agent_cpu_fraction = Some(self.agent_cpu_fraction);
        for p in &self.bpf_programs {
            if let Some(ns) = p.ns_per_call() {
                let hook = p.name.trim_start_matches("cosched_");
                m.extra.insert(format!("bpf_{hook}_ns_per_call"), ns);
                m.extra.insert(format!("bpf_{hook}_calls"), p.calls as f64);
            }
        }
        m.extra
            .insert("agent_ringbuf_drops".into(), self.ringbuf_drops as f64);
        m.extra
            .insert("agent_map_full".into(), self.map_full as f64);
        // The policy's counters, each as `agent_<name>` (the DCS policy's `agent_boosts_extended`,
        // `agent_refused_budget`, `agent_demotions`, ...).
        for (name, &n) in &self.policy.counters {
            m.extra.insert(format!("agent_{name}"), n as f64);
        }
        m.extra
            .insert("agent_watch_closes".into(), self.watch_closes as f64);
        if let Some(c) = &self.self_check {
            for (name, n) in [
                ("selfcheck_epochs_coscheduling", c.epochs_coscheduling),
                ("selfcheck_epochs_standing_aside", c.epochs_standing_aside),
                ("selfcheck_probes", c.probes),
                ("selfcheck_probes_held", c.probes_held),
                ("selfcheck_switches", c.switches),
                ("selfcheck_actions_stood_aside", c.actions_stood_aside),
            ] {
                m.extra.insert(format!("agent_{name}"), n as f64);
            }
            if let Some(f) = c.aside_fraction() {
                m.extra.insert("agent_selfcheck_aside_fraction".into(), f);
            }
        }
        // How the arrivals went: flagged to user space, or left alone and why (the sampled running view's
        // misses among them); and the local user's turns: boosts that yielded, local wake-ups BPF reported,
        // boosts held back for a local task waiting.
        for (name, n) in [
            ("arrivals", self.arrivals),
            ("flagged", self.flagged),
            ("arrivals_on_cpu", self.arrivals_on_cpu),
            ("arrivals_stale_missed", self.arrivals_stale_missed),
            ("boosts_yielded", self.boosts_yielded),
            ("pauses_ended_by_local", self.pauses_ended_by_local),
            ("local_wakes", self.local_wakes),
            ("local_wakes_light", self.local_wakes_light),
            ("local_wakes_refused", self.local_wakes_refused),
            ("local_nudges", self.local_nudges),
            ("local_wakes_unseen", self.local_wakes_unseen),
            ("boosts_held_for_local", self.boosts_held_for_local),
        ] {
            m.extra.insert(format!("agent_{name}"), n as f64);
        }
    }
}

impl Latency {
    /// Percentiles from a log2 histogram, interpolating linearly inside a bucket.
    pub fn from_log2(counts: Vec<u64>) -> Latency {
        let count: u64 = counts.iter().sum();
        let pct = |q: f64| -> Option<f64> {
            if count == 0 {
                return None;
            }
            let rank = q * count as f64;
            let mut seen = 0.0;
            for (b, &c) in counts.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                if seen + c as f64 >= rank {
                    let (lo, hi) = if b == 0 {
                        (0.0, 1.0)
                    } else {
                        ((1u64 << (b - 1)) as f64, (1u64 << b) as f64)
                    };
                    return Some(lo + (hi - lo) * ((rank - seen) / c as f64).clamp(0.0, 1.0));
                }
                seen += c as f64;
            }
            None
        };
        Latency {
            count,
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            log2_us_counts: counts,
        }
    }

    /// The log2 bucket of `us` microseconds (same rule as the BPF side).
    pub fn bucket(us: u64, buckets: usize) -> usize {
        ((64 - us.leading_zeros()) as usize).min(buckets - 1)
    }
}

/// How long the agent waits for a connected client's request line before it hangs up.
pub const SERVE_TIMEOUT: Duration = Duration::from_millis(200);

/// Attempts of one [`Client::call`] whose request the agent did not read.
pub const CALL_ATTEMPTS: u32 = 5;

/// Why one attempt failed: before the request went out (safe to send again), or otherwise.
enum CallError {
    NotSent(std::io::Error),
    Other(anyhow::Error),
}

/// Talks to a running agent.
#[derive(Clone, Debug)]
pub struct Client {
    path: PathBuf,
}

impl Client {
    /// A client for the agent listening at `path`; checks that one answers.
    pub fn connect(path: impl AsRef<Path>) -> anyhow::Result<Client> {
        let c = Client {
            path: path.as_ref().to_path_buf(),
        };
        match c.call(&Request::Ping)? {
            Reply::Pong { .. } => Ok(c),
            other => anyhow::bail!(
                "unexpected reply to ping from {}: {other:?}",
                c.path.display()
            ),
        }
    }

    /// Sends one request and reads the reply (one JSON line of at most [`MAX_REPLY_BYTES`]). The agent gives a slow client [`SERVE_TIMEOUT`] to send its line
    /// (its one thread must get back to its boosts) and then hangs up; a client that was itself kept off its
    /// CPU that long finds the connection closed before its request went out, which says the request was not
    /// seen, so it is sent again on a fresh connection (at most [`CALL_ATTEMPTS`] times in all).
    pub fn call(&self, req: &Request) -> anyhow::Result<Reply> {
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        let mut attempt = 1;
        loop {
            match self.call_once(&line) {
                Err(CallError::NotSent(_)) if attempt < CALL_ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(20 * attempt as u64));
                }
                Err(CallError::NotSent(e)) => {
                    return Err(anyhow::anyhow!(
                        "the agent at {} hung up before reading the request, {CALL_ATTEMPTS} times: {e}",
                        self.path.display()
                    ))
                }
                Err(CallError::Other(e)) => return Err(e),
                Ok(reply) => return Ok(reply),
            }
        }
    }

    fn call_once(&self, line: &str) -> Result<Reply, CallError> {
        let mut s = UnixStream::connect(&self.path).map_err(|e| {
            CallError::Other(anyhow::anyhow!(
                "no cosched agent is running at {} ({e}); start one first with `sudo cosched agent` (or pass \
                 --socket to both)",
                self.path.display()
            ))
        })?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| CallError::Other(e.into()))?;
        // A hang-up shows as a broken pipe on the write, or as a reset on the read when the agent closed with
        // the request unread in its buffer: either way the request was not acted on.
        let hung_up = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                CallError::NotSent(e)
            }
            _ => CallError::Other(e.into()),
        };
        s.write_all(line.as_bytes()).map_err(hung_up)?;
        let mut reply = String::new();
        // Whatever answers on the socket, the client keeps at most MAX_REPLY_BYTES of it (one line).
        BufReader::new(s.take(MAX_REPLY_BYTES + 1))
            .read_line(&mut reply)
            .map_err(hung_up)?;
        if reply.len() as u64 > MAX_REPLY_BYTES {
            return Err(CallError::Other(anyhow::anyhow!(
                "the reply from {} is longer than {MAX_REPLY_BYTES} bytes; is that a cosched agent?",
                self.path.display()
            )));
        }
        if reply.is_empty() {
            // Hung up at its read timeout just as the request went out: it did not act on it.
            return Err(CallError::NotSent(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed the connection without a reply",
            )));
        }
        serde_json::from_str(&reply).map_err(|e| CallError::Other(e.into()))
    }

    /// Registers `pid` (and its future descendants) as job `name`; returns the job id.
    pub fn register(&self, pid: u32, name: &str) -> anyhow::Result<u64> {
        match self.call(&Request::Register {
            pid,
            name: name.to_string(),
        })? {
            Reply::Registered { job } => Ok(job),
            Reply::Error { message } => {
                anyhow::bail!("the agent refused to manage pid {pid}: {message}")
            }
            other => anyhow::bail!("unexpected reply to register: {other:?}"),
        }
    }

    /// The agent's live statistics.
    pub fn stats(&self) -> anyhow::Result<AgentStats> {
        match self.call(&Request::Stats)? {
            Reply::Stats(s) => Ok(*s),
            Reply::Error { message } => {
                anyhow::bail!("the agent could not give statistics: {message}")
            }
            other => anyhow::bail!("unexpected reply to stats: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_tagged_json() {
        let r = Request::Register {
            pid: 42,
            name: "pp".into(),
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(s, r#"{"op":"register","pid":42,"name":"pp"}"#);
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
    }

    /// A stand-in agent that hangs up on the first `hang_ups` connections without reading, then answers pings.
    fn flaky_agent(hang_ups: usize) -> (tempfile_dir::Dir, std::thread::JoinHandle<()>) {
        let dir = tempfile_dir::Dir::new();
        let listener = std::os::unix::net::UnixListener::bind(dir.path.join("a.sock")).unwrap();
        let server = std::thread::spawn(move || {
            for (i, stream) in listener.incoming().enumerate() {
                let stream = stream.unwrap();
                if i < hang_ups {
                    drop(stream);
                    continue;
                }
                let mut line = String::new();
                BufReader::new(stream.try_clone().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                let mut w = stream;
                w.write_all(b"{\"reply\":\"pong\",\"pid\":7}\n").unwrap();
                return;
            }
        });
        (dir, server)
    }

    mod tempfile_dir {
        pub struct Dir {
            pub path: std::path::PathBuf,
        }
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "cosched-proto-test-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir { path }
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.path);
            }
        }
    }

    #[test]
    fn a_reply_longer_than_the_bound_is_an_error_not_an_allocation() {
        // A listener that answers with MAX_REPLY_BYTES + 1 bytes and no newline (issue 21, item 9): the client
        // stops reading at the bound and says so, instead of reading whatever comes until memory runs out.
        let dir = tempfile_dir::Dir::new();
        let listener = std::os::unix::net::UnixListener::bind(dir.path.join("a.sock")).unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(stream.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..=(MAX_REPLY_BYTES >> 20) {
                if stream.write_all(&chunk).is_err() {
                    return; // the client stopped reading: as it should
                }
            }
        });
        let client = Client {
            path: dir.path.join("a.sock"),
        };
        let err = client.call(&Request::Ping).unwrap_err().to_string();
        assert!(err.contains("longer than 16777216 bytes"), "{err}");
        server.join().unwrap();
    }

    #[test]
    fn a_request_the_agent_hung_up_on_is_sent_again() {
        let (dir, server) = flaky_agent(2);
        let client = Client {
            path: dir.path.join("a.sock"),
        };
        assert_eq!(client.call(&Request::Ping).unwrap(), Reply::Pong { pid: 7 });
        server.join().unwrap();
    }

    #[test]
    fn an_agent_that_always_hangs_up_gets_a_clear_error() {
        let (dir, _server) = flaky_agent(CALL_ATTEMPTS as usize);
        let client = Client {
            path: dir.path.join("a.sock"),
        };
        let err = client.call(&Request::Ping).unwrap_err().to_string();
        assert!(
            err.contains("hung up before reading the request, 5 times"),
            "{err}"
        );
    }

    #[test]
    fn statistics_from_another_version_still_parse() {
        // An older agent that lacks most fields, and a newer one with a field this client does not know.
        let older: AgentStats = serde_json::from_str(r#"{"events": 7}"#).unwrap();
        assert_eq!(older.events, 7);
        assert_eq!(older.jobs, Vec::new());
        let newer: AgentStats =
            serde_json::from_str(r#"{"events": 3, "a_field_from_the_future": [1, 2]}"#).unwrap();
        assert_eq!(newer.events, 3);
    }

    #[test]
    fn log2_buckets_match_the_bpf_rule() {
        // BPF: 0 us -> 0; [1,2) -> 1; [2,4) -> 2; [4,8) -> 3; capped at the last bucket.
        assert_eq!(Latency::bucket(0, 32), 0);
        assert_eq!(Latency::bucket(1, 32), 1);
        assert_eq!(Latency::bucket(3, 32), 2);
        assert_eq!(Latency::bucket(4, 32), 3);
        assert_eq!(Latency::bucket(u64::MAX, 32), 31);
    }

    #[test]
    fn percentiles_interpolate_inside_buckets() {
        // 100 samples: 50 in bucket 5 ([16,32) us), 49 in bucket 6 ([32,64)), 1 in bucket 10 ([512,1024)).
        // p50: rank 50 ends bucket 5 exactly -> 16 + 16 × 50/50 = 32 us.
        // p99: rank 99 = 50 + 49 ends bucket 6 -> 32 + 32 × 49/49 = 64 us.
        let mut c = vec![0; 32];
        c[5] = 50;
        c[6] = 49;
        c[10] = 1;
        let l = Latency::from_log2(c);
        assert_eq!(l.count, 100);
        assert_eq!(l.p50_us, Some(32.0));
        assert_eq!(l.p99_us, Some(64.0));
        assert_eq!(Latency::from_log2(vec![0; 32]).p50_us, None);
    }
}
