//! `cosched agent` and `cosched run`: flags (units in their names) validated into a resolved
//! [`crate::config::Config`] and policy before anything runs.
//!
//! `cosched agent`'s flags are the mechanism's ([`CoreArgs`]) plus every registered policy's own
//! ([`crate::policy::registry()`]); `--policy NAME` picks the policy, and a flag of another policy is an error.

use crate::config::{ms, us, Config};
use crate::policy::{self, Host, Policy};
use crate::proto::{AgentStats, Client, DEFAULT_SOCKET};
use clap::{ArgMatches, Args, FromArgMatches};
use std::path::PathBuf;
use std::time::Duration;

/// The mechanism's flags of `cosched agent`.
#[derive(Args, Debug, Clone)]
pub struct CoreArgs {
    /// Control socket (mode 0666: any user may register their own processes, root any process).
    #[arg(long, default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Print the running agent's statistics as JSON and exit.
    #[arg(long, conflicts_with = "monitor")]
    pub stats: bool,
    /// Show the running agent's statistics, refreshed every --interval-ms, until interrupted.
    #[arg(long)]
    pub monitor: bool,
    /// Refresh period of --monitor.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
    /// The scheduling policy (its flags follow below).
    #[arg(long, default_value = policy::DEFAULT_POLICY)]
    pub policy: String,
    /// An arrival for a receiver that blocked less than this long ago is left alone (the arrival wakes it and it
    /// usually preempts by itself); a receiver that was preempted while runnable is always considered.
    #[arg(long, default_value_t = 100)]
    pub grace_us: u64,
    /// A refused arrival whose receiver still waits after this long is reconsidered.
    #[arg(long, default_value_t = 1000)]
    pub renotify_us: u64,
    /// Whether a receiver is running, for an arrival, is read from a view sampled every this many µs instead of
    /// at the arrival itself: seed 002's design (Windows NT: the NIC scans the current thread about once a
    /// millisecond, 1000), to measure what a stale view costs. 0 = exact.
    #[arg(long, default_value_t = 0)]
    pub running_view_us: u64,
    /// Keep a boost when a local task (a user task in the fair class that the agent does not manage) wakes on
    /// the boosted thread's CPU. By default the boost ends at once, so the local user waits one agent reaction
    /// for its CPU, not the rest of a window and its extensions.
    #[arg(long)]
    pub no_yield_to_local: bool,
    /// Leave a local task the fair class keeps waiting on a job's CPU to the next tick. By default BPF sees
    /// such a wake-up (refused while the current task finishes its protected slice) and a real-time thread of
    /// the agent's pinned to that CPU runs for a moment, so the fair class picks again at once (the local user
    /// waits one agent reaction, not up to a tick: 4 ms at HZ = 250). Off with --no-yield-to-local too.
    #[arg(long)]
    pub no_nudge_local: bool,
    /// How long a boost steps aside for a local task that woke on its CPU before it resumes for the rest of
    /// its window (0: the boost ends there); also how long a boost at --max-boost-ms steps aside before it goes
    /// on.
    #[arg(long, default_value_t = 500)]
    pub yield_us: u64,
    /// How a boost is carried out: `fifo` (SCHED_FIFO for the window: preempts at once, fairness held by the
    /// policy's budget) or `slice` (stays in the fair class with a 0.1 ms slice and nice one step up: runs at once
    /// only when the kernel owes it CPU, and is charged for it). Measured side by side in docs/lab-local.md.
    #[arg(long, value_enum, default_value_t = crate::actuator::Mechanism::Fifo)]
    pub mechanism: crate::actuator::Mechanism,
    /// SCHED_FIFO priority of a boosted task (1..=98; low, so the kernel's own RT threads stay above).
    #[arg(long, default_value_t = 1)]
    pub rt_prio: u32,
    /// The policy's tick (the DCS policy's fairness monitor: budgets are updated and demotions decided this
    /// often).
    #[arg(long, default_value_t = 10.0)]
    pub tick_ms: f64,
    /// The tick while there is nothing for it to decide (no managed thread lowered, no paused boost, the policy
    /// idle — for DCS: no job in debt; a live boost's own window end decides for it): a tick wakes the agent,
    /// and every wake-up at real-time
    /// priority takes the CPU from whatever runs there (a rank of the job, most often; a spin-block ping-pong
    /// beside two competitors per CPU lost 7 % of its coscheduled time to 30 such wake-ups a second). At least
    /// --tick-ms. The self-check's epochs and a policy's own epochs (DYNAMICQ) tick at their pace regardless, and
    /// while a boost is live the agent ticks at least twice a guardian lease (its heartbeat).
    #[arg(long, default_value_t = 1000.0)]
    pub idle_tick_ms: f64,
    /// Watch messages only while some managed thread has shared its CPU within this time (the BPF message
    /// hooks return at once otherwise, so a job with its CPUs to itself pays nothing for them); 0 = always.
    #[arg(long, default_value_t = 200.0)]
    pub watch_hold_ms: f64,
    /// Coschedule without checking that it pays. By default the agent measures it while jobs share their CPUs:
    /// it alternates epochs coscheduling and epochs standing aside (message hooks detached, nothing boosted or
    /// demoted) by the rule of `cosched_policy::selfcheck`, with the jobs' TCP bytes received per second as the
    /// measure of progress, and stands aside while that is measurably faster (docs/lab-selfcheck.md).
    #[arg(long)]
    pub no_self_check: bool,
    /// The self-check's epoch: how long each mode runs before its progress is judged.
    #[arg(long, default_value_t = 100.0)]
    pub self_check_epoch_ms: f64,
    /// The agent's own SCHED_FIFO priority, so it reacts promptly on a busy CPU (0 = stay SCHED_OTHER).
    /// Must be above --rt-prio.
    #[arg(long, default_value_t = 2)]
    pub agent_prio: u32,
    /// The guardian's lease: if the agent's loop has not run for this long while it holds a boost (it was
    /// stopped or wedged), the guardian restores every boosted task. 0 = only when the agent dies.
    #[arg(long, default_value_t = crate::guardian::DEFAULT_LEASE_MS)]
    pub guard_lease_ms: u64,
    /// Print one line per action (boost, nice, restore) and per decision the policy notes, on stderr (or in
    /// --log-file).
    #[arg(long)]
    pub log_actions: bool,
    /// With --log-actions: append the lines to this file instead of stderr. A process reading the agent's
    /// stderr through a pipe (the lab does) wakes at every line, on the job's CPUs, and the boosts yield to it.
    #[arg(long, value_name = "PATH", requires = "log_actions")]
    pub log_file: Option<std::path::PathBuf>,
    /// Stop after this many seconds (for tests and scripted runs); default: until SIGINT/SIGTERM.
    #[arg(long)]
    pub run_for_s: Option<f64>,
    /// Fault injection for the safety tests: panic right after the N-th boost, leaving it in place (the
    /// guardian must undo it).
    #[arg(long, hide = true, value_name = "N")]
    pub panic_after_boosts: Option<u64>,
}

/// `cosched agent`: run the coscheduling agent on this node (root, BPF), or query a running one. The
/// mechanism's flags, and the parsed command line for the chosen policy's own.
#[derive(Debug, Clone)]
pub struct AgentArgs {
    pub core: CoreArgs,
    matches: ArgMatches,
}

impl FromArgMatches for AgentArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(AgentArgs {
            core: CoreArgs::from_arg_matches(matches)?,
            matches: matches.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.core.update_from_arg_matches(matches)?;
        self.matches = matches.clone();
        Ok(())
    }
}

impl Args for AgentArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // Policies share flag groups (`dcs`, `pred` and `dyn` have the same boost and budget flags): each flag is
        // added once, under the heading of the first policy that has it; every policy reads it by its id.
        policy::registry()
            .iter()
            .fold(CoreArgs::augment_args(cmd), |cmd, entry| {
                let flags = (entry.flags)(clap::Command::new(entry.name));
                let new: Vec<clap::Arg> = flags
                    .get_arguments()
                    .filter(|a| cmd.get_arguments().all(|b| b.get_id() != a.get_id()))
                    .cloned()
                    .collect();
                cmd.args(new)
            })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// `cosched run`: run a command as a managed parallel job.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Control socket of the running agent.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Job name shown in the statistics (default: the command's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Register an already running process (and its future descendants) instead of starting a command.
    #[arg(long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Run the command as root even when `cosched run` itself was started through sudo (by default it runs as
    /// the user who invoked sudo: `SUDO_UID`, `SUDO_GID` and that user's groups).
    #[arg(long, conflicts_with = "pid")]
    pub as_root: bool,
    /// The command to run as a managed job.
    #[arg(trailing_var_arg = true, required_unless_present = "pid")]
    pub command: Vec<String>,
}

/// Who a managed command runs as, when not as the caller: the user behind `sudo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: nix::unistd::Uid,
    pub gid: nix::unistd::Gid,
    pub groups: Vec<nix::unistd::Gid>,
}

/// The user who ran `sudo cosched run`, from sudo's `SUDO_UID` / `SUDO_GID` / `SUDO_USER`; `None` when this
/// process is not root or was not started by sudo on behalf of another user. The control socket is root's,
/// so users reach it through sudo; without this, every job they start would run as root (issue 21, item 3).
pub fn invoking_user(env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<Identity>> {
    use nix::unistd::{Gid, Uid};
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let Some(uid) = env("SUDO_UID") else {
        return Ok(None);
    };
    let number = |name: &str, text: &str| -> anyhow::Result<u32> {
        text.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "{name}={text:?} is not a number; unset it, or pass --as-root to run as root"
            )
        })
    };
    let uid = number("SUDO_UID", &uid)?;
    if uid == 0 {
        return Ok(None);
    }
    let gid = match env("SUDO_GID") {
        Some(g) => number("SUDO_GID", &g)?,
        None => anyhow::bail!("SUDO_UID is set but SUDO_GID is not; pass --as-root to run as root"),
    };
    let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(gid));
    // Supplementary groups are looked up here, before the fork: the child may only make async-signal-safe calls.
    let groups = match env("SUDO_USER").and_then(|u| std::ffi::CString::new(u).ok()) {
        Some(user) => nix::unistd::getgrouplist(&user, gid).unwrap_or_else(|_| vec![gid]),
        None => vec![gid],
    };
    Ok(Some(Identity { uid, gid, groups }))
}

impl AgentArgs {
    /// The chosen policy, built from its flags. An unknown name lists the valid ones; a flag given on the
    /// command line that belongs to another policy is an error.
    pub fn policy(&self, host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        let chosen = policy::find(&self.core.policy)?;
        for other in policy::registry().iter().filter(|e| e.name != chosen.name) {
            for id in other.flag_ids() {
                if chosen.flag_ids().contains(&id) {
                    continue;
                }
                if self.matches.value_source(&id) == Some(clap::parser::ValueSource::CommandLine) {
                    anyhow::bail!(
                        "--{} belongs to policy '{}', not to '{}' (--policy)",
                        id.replace('_', "-"),
                        other.name,
                        chosen.name
                    );
                }
            }
        }
        (chosen.build)(&self.matches, host)
    }

    /// Validates the flags into the mechanism's configuration and the policy.
    pub fn resolve(&self) -> anyhow::Result<(Config, Box<dyn Policy>)> {
        let a = &self.core;
        if !(1..=98).contains(&a.rt_prio) {
            anyhow::bail!("--rt-prio must be in 1..=98, got {}", a.rt_prio);
        }
        if a.agent_prio != 0 && (a.agent_prio <= a.rt_prio || a.agent_prio > 99) {
            anyhow::bail!(
                "--agent-prio must be 0 or above --rt-prio ({}) and at most 99, got {}",
                a.rt_prio,
                a.agent_prio
            );
        }
        let tick_ns = ms(a.tick_ms, "tick-ms")?;
        // Checked here once: the guardian turns it into ns.
        ms(a.guard_lease_ms as f64, "guard-lease-ms")?;
        if tick_ns < 1_000_000 {
            anyhow::bail!("--tick-ms must be at least 1");
        }
        let idle_tick_ns = ms(a.idle_tick_ms, "idle-tick-ms")?;
        if idle_tick_ns < tick_ns {
            anyhow::bail!(
                "--idle-tick-ms must be at least --tick-ms ({}), got {}",
                a.tick_ms,
                a.idle_tick_ms
            );
        }
        let run_for = match a.run_for_s {
            Some(s) if !(s.is_finite() && s > 0.0) => {
                anyhow::bail!("--run-for-s must be positive, got {s}")
            }
            Some(s) => Some(Duration::from_secs_f64(s)),
            None => None,
        };
        let policy = self.policy(&Host {
            kernel_tick_ns: crate::config::kernel_tick_ns(),
        })?;
        let cfg = Config {
            socket: a.socket.clone(),
            policy: a.policy.clone(),
            grace_ns: us(a.grace_us, "grace-us")?,
            renotify_ns: us(a.renotify_us.max(1), "renotify-us")?,
            running_view_ns: match us(a.running_view_us, "running-view-us")? {
                ns if ns <= 1_000_000_000 => ns,
                _ => anyhow::bail!(
                    "--running-view-us must be at most 1000000 (1 s; seed 002's NIC sampled about every 1000), got {}",
                    a.running_view_us
                ),
            },
            mechanism: a.mechanism,
            rt_prio: a.rt_prio,
            yield_to_local: !a.no_yield_to_local,
            nudge_local: !a.no_yield_to_local && !a.no_nudge_local,
            yield_ns: match us(a.yield_us, "yield-us")? {
                ns if ns <= 1_000_000_000 => ns,
                _ => anyhow::bail!(
                    "--yield-us must be at most 1000000 (1 s), got {}",
                    a.yield_us
                ),
            },
            tick_ns,
            idle_tick_ns,
            watch_hold_ns: match ms(a.watch_hold_ms, "watch-hold-ms")? {
                0 => None,
                hold => Some(hold),
            },
            self_check: if a.no_self_check {
                None
            } else {
                let params = cosched_policy::selfcheck::Params {
                    epoch_ns: ms(a.self_check_epoch_ms, "self-check-epoch-ms")?,
                    ..Default::default()
                };
                params
                    .validate()
                    .map_err(|e| anyhow::anyhow!("--self-check-epoch-ms: {e}"))?;
                Some(params)
            },
            agent_prio: a.agent_prio,
            guard_lease_ms: a.guard_lease_ms,
            log_actions: a.log_actions,
            run_for,
            panic_after_boosts: a.panic_after_boosts,
        };
        Ok((cfg, policy))
    }
}

/// `cosched agent`.
pub fn run_agent(args: AgentArgs) -> anyhow::Result<()> {
    if args.core.stats {
        let s = Client::connect(&args.core.socket)?.stats()?;
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    if args.core.monitor {
        return monitor(&args.core);
    }
    start_agent(args)
}

#[cfg(cosched_bpf)]
fn start_agent(args: AgentArgs) -> anyhow::Result<()> {
    let (cfg, policy) = args.resolve()?;
    if let Some(path) = &args.core.log_file {
        crate::ctx::log_actions_to(path)?;
    }
    crate::daemon::preflight()?;
    let mut settings = cfg.describe();
    settings.extend(policy.describe());
    eprintln!("cosched agent: {}", settings.join(" "));
    let agent = crate::daemon::Agent::start(cfg, policy)?;
    eprintln!(
        "cosched agent: running, pid {} (guardian {}); log times count from CLOCK_MONOTONIC {:.6} s",
        std::process::id(),
        agent.guardian_pid(),
        agent.started_ns() as f64 / 1e9
    );
    agent.run()
}

#[cfg(not(cosched_bpf))]
fn start_agent(args: AgentArgs) -> anyhow::Result<()> {
    // Bad flags are reported first, so they can be checked on any build.
    args.resolve()?;
    anyhow::bail!("{}", crate::BPF_MISSING_MESSAGE)
}

fn monitor(args: &CoreArgs) -> anyhow::Result<()> {
    let client = Client::connect(&args.socket)?;
    let period = Duration::from_millis(args.interval_ms.max(100));
    let mut prev: Option<AgentStats> = None;
    loop {
        let s = client.stats()?;
        print!("\x1b[2J\x1b[H{}", render(&s, prev.as_ref(), period));
        use std::io::Write;
        std::io::stdout().flush()?;
        prev = Some(s);
        std::thread::sleep(period);
    }
}

/// `k v  k v ...` of a policy's counters.
fn counters_line(counters: &std::collections::BTreeMap<String, u64>) -> String {
    counters
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join("  ")
}

/// The `--monitor` screen.
pub fn render(s: &AgentStats, prev: Option<&AgentStats>, period: Duration) -> String {
    let rate = |now: u64, f: fn(&AgentStats) -> u64| -> f64 {
        prev.map(|p| now.saturating_sub(f(p)) as f64 / period.as_secs_f64())
            .unwrap_or(0.0)
    };
    let cpu_now = prev
        .map(|p| (s.agent_cpu_s - p.agent_cpu_s) / (s.uptime_s - p.uptime_s).max(1e-9))
        .unwrap_or(s.agent_cpu_fraction);
    let fmt = |v: Option<f64>| v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into());
    let mut out = format!(
        "cosched agent pid {} (guardian {})  up {:.0} s  cpu {:.2} % now, {:.2} % overall\n{}\n\n",
        s.agent_pid,
        s.guardian_pid,
        s.uptime_s,
        100.0 * cpu_now,
        100.0 * s.agent_cpu_fraction,
        s.config.join(" ")
    );
    out += &format!(
        "arrivals {:>10} ({:>8.0}/s)  flagged {:>8} ({:>7.0}/s)  on-cpu {:>10}  alone {:>8}  boosted {:>8} (ended since {})  recent {:>8}  pending {:>8}  stale-missed {:>8}\n",
        s.arrivals,
        rate(s.arrivals, |p| p.arrivals),
        s.flagged,
        rate(s.flagged, |p| p.flagged),
        s.arrivals_on_cpu,
        s.arrivals_alone,
        s.arrivals_boosted,
        s.arrivals_boost_ended,
        s.arrivals_recent,
        s.arrivals_pending,
        s.arrivals_stale_missed
    );
    out += &format!(
        "watching {:<5}  message hooks {}  (gate closed {} times: no managed thread shared its CPU)\n",
        s.watching,
        if s.message_hooks_attached { "attached" } else { "detached" },
        s.watch_closes
    );
    if let Some(c) = &s.self_check {
        out += &format!(
            "self-check {:<11} (favours {}; epochs coscheduling {}, standing aside {}; probes {} (held {}), switches {}, blind {}; the other mode's gain {}; changes not made {})\n",
            c.mode,
            c.chosen,
            c.epochs_coscheduling,
            c.epochs_standing_aside,
            c.probes,
            c.probes_held,
            c.switches,
            c.blind_epochs,
            c.mean_gain.map_or("-".into(), |g| format!("{:+.1} %", g * 100.0)),
            c.actions_stood_aside
        );
    }
    out += &format!(
        "boosts   {:>10} ({:>8.0}/s)  restores {:>7}  refused {:>7}  gone {:>5}  boosted now {}\n",
        s.boosts_granted,
        rate(s.boosts_granted, |p| p.boosts_granted),
        s.restores,
        s.policy.refused,
        s.refused_gone,
        s.boosted_now
    );
    out += &format!(
        "policy {}: {}\n",
        s.policy.name,
        counters_line(&s.policy.counters)
    );
    out += &format!(
        "LOST     ringbuf drops {}  map full {}  sock misses {}  task misses {}  malformed {}  errors {}\n",
        s.ringbuf_drops, s.map_full, s.sock_misses, s.task_misses, s.malformed_events, s.boost_errors
    );
    out += &format!(
        "reaction boosted p50 {} us p99 {} us (n {})   unboosted p50 {} us p99 {} us (n {})   decision p50 {} us p99 {} us\n\n",
        fmt(s.reaction_boosted.p50_us),
        fmt(s.reaction_boosted.p99_us),
        s.reaction_boosted.count,
        fmt(s.reaction_unboosted.p50_us),
        fmt(s.reaction_unboosted.p99_us),
        s.reaction_unboosted.count,
        fmt(s.decision.p50_us),
        fmt(s.decision.p99_us)
    );
    out +=
        "job  name             root    uid    procs thr   wall s   cpu s  share     F  boosts  policy\n";
    for j in &s.jobs {
        out += &format!(
            "{:<4} {:<16} {:<7} {:<6} {:>5} {:>3} {:>8.1} {:>7.2} {:>6.3} {:>5.2} {:>7}  {}{}\n",
            j.job,
            j.name,
            j.root_pid,
            j.owner_uid,
            j.live_processes,
            j.live_threads,
            j.wall_s,
            j.cpu_s,
            j.cpu_share,
            j.fairness,
            j.boosts_granted,
            counters_line(&j.policy),
            if j.finished { "  (done)" } else { "" }
        );
    }
    if let Some(e) = &s.last_error {
        out += &format!("\nlast error: {e}\n");
    }
    out
}

/// `cosched run`.
pub fn run_job(args: RunArgs) -> anyhow::Result<()> {
    let client = Client::connect(&args.socket)?;
    if let Some(pid) = args.pid {
        let name = args.name.unwrap_or_else(|| format!("pid{pid}"));
        let job = client.register(pid, &name)?;
        println!("{job}");
        return Ok(());
    }
    let name = args.name.clone().unwrap_or_else(|| {
        std::path::Path::new(&args.command[0])
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let identity = if args.as_root {
        None
    } else {
        invoking_user(|k| std::env::var(k).ok())?
    };
    let code = run_managed(&client, &args.command, &name, identity.as_ref())?;
    std::process::exit(code);
}

/// Starts `command` held before `exec`, registers it with the agent, then lets it run and waits for it.
/// Returns its exit code (128 + signal if it was killed). The library form of `cosched run`; call it from a
/// single-threaded process (it forks). With `identity`, the command drops to that user and its groups just
/// before `exec` (after it was registered: what it and its descendants do is managed either way).
pub fn run_managed(
    client: &Client,
    command: &[String],
    name: &str,
    identity: Option<&Identity>,
) -> anyhow::Result<i32> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};
    use std::ffi::CString;
    let argv: Vec<CString> = command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("the command contains a NUL byte"))?;
    let (gate_r, gate_w) = nix::unistd::pipe()?;
    let runner = std::process::id() as libc::pid_t;
    // SAFETY: the child only makes async-signal-safe calls (close, read, setgroups, setgid, setuid, prctl,
    // getppid, execvp, write, _exit) on data prepared before the fork.
    match unsafe { fork() }? {
        ForkResult::Child => {
            drop(gate_w);
            let mut b = [0u8; 1];
            // Wait until the parent has registered us; EOF without a byte means registration failed.
            if nix::unistd::read(&gate_r, &mut b) != Ok(1) {
                unsafe { libc::_exit(125) };
            }
            drop(gate_r);
            if let Some(who) = identity {
                // Groups first, then the group, then the user: once the uid is dropped nothing else may change.
                let dropped = nix::unistd::setgroups(&who.groups)
                    .and_then(|_| nix::unistd::setgid(who.gid))
                    .and_then(|_| nix::unistd::setuid(who.uid));
                if dropped.is_err() {
                    let msg = b"cosched run: cannot become the invoking user\n";
                    // SAFETY: write to stderr and leave without running the parent's destructors.
                    unsafe {
                        libc::write(2, msg.as_ptr().cast(), msg.len());
                        libc::_exit(126)
                    }
                }
            }
            // The job ends with `cosched run`, however that ends (kill -9 included): a lab or a test killed
            // outright leaves no job running. Set after the identity change, which clears it.
            // SAFETY: plain syscalls; _exit leaves without running the parent's destructors.
            unsafe {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                    || libc::getppid() != runner
                {
                    libc::_exit(125);
                }
            }
            let _ = nix::unistd::execvp(&argv[0], &argv);
            let msg = b"cosched run: cannot execute the command\n";
            // SAFETY: write to stderr and leave without running the parent's destructors.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(127)
            }
        }
        ForkResult::Parent { child } => {
            drop(gate_r);
            let pid = child.as_raw() as u32;
            if let Err(e) = client.register(pid, name) {
                drop(gate_w); // the child sees EOF and exits before exec
                let _ = waitpid(child, None);
                return Err(e);
            }
            nix::unistd::write(&gate_w, b"g")?;
            drop(gate_w);
            // Like system(3): while the job runs, the terminal's SIGINT/SIGQUIT go to it, not to us.
            // SAFETY: changing our own signal dispositions.
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGQUIT, libc::SIG_IGN);
            }
            loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, code)) => return Ok(code),
                    Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(128 + sig as i32),
                    Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invoking_user_comes_from_sudos_variables_when_root() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        if !nix::unistd::geteuid().is_root() {
            // Not root: nothing to drop, whatever the variables say.
            assert_eq!(
                invoking_user(env(&[("SUDO_UID", "1000"), ("SUDO_GID", "1000")])).unwrap(),
                None
            );
            return;
        }
        let who = invoking_user(env(&[("SUDO_UID", "1000"), ("SUDO_GID", "1001")]))
            .unwrap()
            .unwrap();
        assert_eq!((who.uid.as_raw(), who.gid.as_raw()), (1000, 1001));
        assert_eq!(who.groups, vec![nix::unistd::Gid::from_raw(1001)]); // no SUDO_USER: its own group only
                                                                        // Root behind sudo, or no sudo at all: stay root.
        assert_eq!(
            invoking_user(env(&[("SUDO_UID", "0"), ("SUDO_GID", "0")])).unwrap(),
            None
        );
        assert_eq!(invoking_user(env(&[])).unwrap(), None);
        // Malformed: an error that says what to do, never a silent root.
        let err = invoking_user(env(&[("SUDO_UID", "bob"), ("SUDO_GID", "1")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SUDO_UID") && err.contains("--as-root"),
            "{err}"
        );
        assert!(invoking_user(env(&[("SUDO_UID", "1000")])).is_err());
    }
    use crate::policy::idle::IDLE_SEEN;
    use crate::proto::JobStats;

    #[test]
    fn a_do_nothing_policy_is_registered_chosen_by_flag_and_driven() {
        // Chosen and configured from the command line like any policy: one registry line made it known.
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        let m = cmd
            .try_get_matches_from(["agent", "--policy", "idle", "--idle-every-ms", "3"])
            .unwrap();
        let args = AgentArgs::from_arg_matches(&m).unwrap();
        let policy = args
            .policy(&Host {
                kernel_tick_ns: 4_000_000,
            })
            .unwrap();
        assert_eq!(policy.describe(), vec!["idle_every_ms=3"]);
        IDLE_SEEN.with(|s| s.borrow_mut().clear());
        let mut e = crate::engine::tests::engine(policy, &[10]);
        e.on_arrival(&crate::engine::tests::arrival(10, 3, 1_000_000), 1_000_000);
        // It armed a deadline 3 ms later; the timer brings it.
        assert_eq!(e.next_deadline(), Some(4_000_000));
        e.on_timer(4_000_000);
        e.on_tick(10_000_000);
        e.remove_process(10);
        let seen = IDLE_SEEN.with(|s| s.borrow().clone());
        assert_eq!(
            seen,
            vec![
                "process 10",
                "arrival 10",
                "deadline 4000000",
                "tick 10000000",
                "exit 10"
            ]
        );
        // It did nothing, and its counter is in its statistics section.
        assert!(e.act.calls.is_empty());
        assert_eq!(e.counters.policy.get("ignored"), Some(&1));
        let stats = crate::stats::policy_section("idle", e.policy().counters(), &e.counters);
        assert_eq!((stats.refused, stats.counters["ignored"]), (1, 1));
    }

    #[test]
    fn a_microsecond_flag_that_would_overflow_is_an_error_naming_it() {
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        let huge = u64::MAX.to_string();
        for flag in ["--boost-us", "--max-extend-us", "--quantum-us"] {
            let m = cmd
                .clone()
                .try_get_matches_from(["agent", flag, huge.as_str()])
                .unwrap();
            let args = AgentArgs::from_arg_matches(&m).unwrap();
            let err = args
                .policy(&Host {
                    kernel_tick_ns: 4_000_000,
                })
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            // --boost-us has its own range check first; the others reach the checked conversion.
            let named = err.contains(&flag[2..]);
            let why = err.contains("out of range") || err.contains("must be in");
            assert!(named && why, "{flag}: {err}");
        }
    }

    #[test]
    fn a_flag_of_another_policy_is_an_error() {
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        let m = cmd
            .try_get_matches_from(["agent", "--policy", "idle", "--exponent", "3"])
            .unwrap();
        let args = AgentArgs::from_arg_matches(&m).unwrap();
        let err = args
            .policy(&Host {
                kernel_tick_ns: 4_000_000,
            })
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--exponent") && err.contains("'dcs'"), "{err}");
    }

    /// Registry parameters whose agent default differs on purpose, and why. An entry that no longer differs
    /// fails the test below, so the list cannot outlive the difference.
    const AGENT_DEFAULT_DIFFERS: &[(&str, &str, &str)] = &[(
        "dcs",
        "exponent",
        "the registry gives the seed's spin-only E = -1 (the simulator's); the agent's 2 (with C = 0) only \
         spaces boost starts, because its CPU-time budget holds fairness (docs/lab-dcs.md)",
    )];

    /// A default as written: a number (compared as one: 500 = 500.0) or a word (`false`).
    #[derive(Debug, PartialEq)]
    enum FlagDefault {
        Number(f64),
        Word(String),
    }

    impl FlagDefault {
        fn of(text: &str) -> FlagDefault {
            text.parse()
                .map_or_else(|_| FlagDefault::Word(text.to_string()), FlagDefault::Number)
        }
    }

    #[test]
    fn every_registry_parameter_of_the_agents_policies_is_an_agent_flag_with_the_same_default() {
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        let mut checked = 0;
        let kinds: Vec<&str> = crate::policy::registry()
            .iter()
            .flat_map(|e| e.kinds.iter().copied())
            .collect();
        assert!(
            kinds.contains(&"budget") && kinds.contains(&"pb"),
            "{kinds:?}"
        );
        for policy in kinds {
            let info = cosched_policy::registry::find(policy).unwrap();
            for param in &info.params {
                // constant_ms -> --constant-ms
                let long = param.name.replace('_', "-");
                let arg = cmd
                    .get_arguments()
                    .find(|a| a.get_long() == Some(long.as_str()))
                    .unwrap_or_else(|| {
                        panic!(
                            "registry parameter {policy}.{} has no agent flag --{long}",
                            param.name
                        )
                    });
                // Numbers compare as numbers (500 = 500.0), switches as words (false).
                let agent = arg
                    .get_default_values()
                    .first()
                    .and_then(|v| v.to_str())
                    .map(FlagDefault::of)
                    .or_else(|| {
                        // A switch: off unless given.
                        matches!(arg.get_action(), clap::ArgAction::SetTrue)
                            .then(|| FlagDefault::of("false"))
                    })
                    .unwrap_or_else(|| panic!("--{long} has no default"));
                let registry = FlagDefault::of(&param.default);
                let excused = AGENT_DEFAULT_DIFFERS
                    .iter()
                    .any(|(p, n, _)| *p == policy && *n == param.name);
                if excused {
                    assert_ne!(
                        agent, registry,
                        "--{long} now agrees with the registry: drop it from AGENT_DEFAULT_DIFFERS"
                    );
                } else {
                    assert_eq!(
                        agent, registry,
                        "--{long} defaults to {agent:?}, the registry's {policy}.{} to {registry:?}",
                        param.name
                    );
                }
                checked += 1;
            }
        }
        // exponent, constant_ms, slack_ppm, burst_ms, demote_ms, resume_ms at least (floor_ms once listed).
        assert!(checked >= 6, "only {checked} parameters in the registry");
    }

    #[test]
    fn the_agent_command_is_well_formed_and_keeps_its_flag_names() {
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        cmd.clone().debug_assert();
        // The flags the lab, the docs and the tests pass.
        for long in [
            "socket",
            "stats",
            "monitor",
            "policy",
            "boost-us",
            "max-extend-us",
            "grace-us",
            "renotify-us",
            "running-view-us",
            "r-average-ms",
            "rt-prio",
            "exponent",
            "constant-ms",
            "quantum-us",
            "slack-ppm",
            "burst-ms",
            "floor-ms",
            "demote-ms",
            "resume-ms",
            "open-ms",
            "no-demote",
            "tick-ms",
            "watch-hold-ms",
            "agent-prio",
            "log-actions",
            "log-file",
            "run-for-s",
            "panic-after-boosts",
        ] {
            assert!(
                cmd.get_arguments().any(|a| a.get_long() == Some(long)),
                "--{long} is gone"
            );
        }
        let m = cmd
            .try_get_matches_from(["agent", "--exponent=-1", "--slack-ppm", "1100000"])
            .unwrap();
        let args = AgentArgs::from_arg_matches(&m).unwrap();
        let (cfg, policy) = args.resolve().unwrap();
        assert_eq!(cfg.policy, "dcs");
        let described = policy.describe();
        assert!(
            described.contains(&"exponent=-1".to_string()),
            "{described:?}"
        );
        assert!(described.contains(&"slack_ppm=1100000".to_string()));
    }

    #[test]
    fn the_self_check_is_on_by_default_and_its_epoch_is_checked() {
        let resolve = |extra: &[&str]| {
            let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
            let m = cmd
                .try_get_matches_from(std::iter::once("agent").chain(extra.iter().copied()))
                .unwrap();
            AgentArgs::from_arg_matches(&m)
                .unwrap()
                .resolve()
                .map(|(cfg, _)| cfg)
        };
        let cfg = resolve(&[]).unwrap();
        assert_eq!(cfg.self_check.unwrap().epoch_ns, 100_000_000);
        assert!(cfg
            .describe()
            .contains(&"self_check_epoch_ms=100".to_string()));
        assert!(resolve(&["--no-self-check"]).unwrap().self_check.is_none());
        assert_eq!(
            resolve(&["--self-check-epoch-ms", "250"])
                .unwrap()
                .self_check
                .unwrap()
                .epoch_ns,
            250_000_000
        );
        for bad in ["0.5", "100000", "-1", "NaN"] {
            let flag = format!("--self-check-epoch-ms={bad}");
            let err = resolve(&[flag.as_str()]).err().unwrap().to_string();
            assert!(err.contains("--self-check-epoch-ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn an_unknown_policy_is_a_clear_error() {
        let cmd = AgentArgs::augment_args(clap::Command::new("agent"));
        let m = cmd
            .try_get_matches_from(["agent", "--policy", "lottery"])
            .unwrap();
        let err = AgentArgs::from_arg_matches(&m)
            .unwrap()
            .resolve()
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("unknown policy 'lottery'") && err.contains("dcs"),
            "{err}"
        );
    }

    #[test]
    fn monitor_screen_shows_losses_rates_and_jobs() {
        let prev = AgentStats {
            uptime_s: 1.0,
            agent_cpu_s: 0.01,
            arrivals: 1000,
            ..Default::default()
        };
        let now = AgentStats {
            uptime_s: 2.0,
            agent_cpu_s: 0.03,
            arrivals: 3000,
            ringbuf_drops: 7,
            jobs: vec![JobStats {
                job: 1,
                name: "pingpong".into(),
                fairness: 1.05,
                ..Default::default()
            }],
            ..Default::default()
        };
        let screen = render(&now, Some(&prev), Duration::from_secs(1));
        // 2000 arrivals in the 1 s period; (0.03 - 0.01) / (2 - 1) = 2 % CPU now.
        assert!(screen.contains("(    2000/s)"), "{screen}");
        assert!(screen.contains("cpu 2.00 % now"), "{screen}");
        assert!(screen.contains("ringbuf drops 7"), "{screen}");
        assert!(
            screen.contains("pingpong") && screen.contains("1.05"),
            "{screen}"
        );
    }
}
