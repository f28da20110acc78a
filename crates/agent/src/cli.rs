//! `cosched agent` and `cosched run`: flags (units in their names) validated into a resolved `daemon::Config`
//! before anything runs.

use crate::proto::{AgentStats, Client, DEFAULT_SOCKET};
use clap::Args;
use cosched_policy::budget::BudgetParams;
use std::path::PathBuf;
use std::time::Duration;

/// `cosched agent`: run the coscheduling agent on this node (root, BPF), or query a running one.
#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    /// Control socket (root-only, mode 0600).
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
    /// Length of a boost window; further arrivals extend it.
    #[arg(long, default_value_t = 500)]
    pub boost_us: u64,
    /// Longest single extension of a boost while arrivals keep coming (the step doubles from --boost-us up to
    /// this; the budget is checked at every step).
    #[arg(long, default_value_t = 4000)]
    pub max_extend_us: u64,
    /// An arrival for a receiver that blocked less than this long ago is left alone (the arrival wakes it and it
    /// usually preempts by itself); a receiver that was preempted while runnable is always considered.
    #[arg(long, default_value_t = 100)]
    pub grace_us: u64,
    /// A refused arrival whose receiver still waits after this long is reconsidered.
    #[arg(long, default_value_t = 1000)]
    pub renotify_us: u64,
    /// SCHED_FIFO priority of a boosted task (1..=99; low, so the kernel's own RT threads stay above).
    #[arg(long, default_value_t = 1)]
    pub rt_prio: u32,
    /// DCS exponent E in `2^E (Tc - Tp) + C >= Tq R` (seed: -1 spin-only, 2 spin-block). The default 2 (with
    /// C = 0) only spaces boost starts Tq R / 4 apart: the CPU-time budget, not E and C, holds fairness here.
    #[arg(long, default_value_t = 2, allow_hyphen_values = true)]
    pub exponent: i32,
    /// DCS constant C (seed: 0 spin-only, 100 spin-block).
    #[arg(long, default_value_t = 0.0)]
    pub constant_ms: f64,
    /// DCS minimum quantum Tq; default: the kernel tick (CONFIG_HZ from /boot/config-*, else 4000).
    #[arg(long)]
    pub quantum_us: Option<u64>,
    /// Budget: multiplier of the fair CPU share 1/R, in ppm (1000000 = exactly fair).
    #[arg(long, default_value_t = BudgetParams::DEFAULT.slack_ppm)]
    pub slack_ppm: u64,
    /// Budget: largest CPU credit a process may bank (also its starting credit).
    #[arg(long, default_value_t = BudgetParams::DEFAULT.burst_ns as f64 / 1e6)]
    pub burst_ms: f64,
    /// Budget: oldest debt kept.
    #[arg(long, default_value_t = BudgetParams::DEFAULT.floor_ns as f64 / 1e6)]
    pub floor_ms: f64,
    /// Budget: debt beyond which a process is demoted to nice 19 until repaid.
    #[arg(long, default_value_t = BudgetParams::DEFAULT.demote_ns as f64 / 1e6)]
    pub demote_ms: f64,
    /// Budget: credit at which a demoted process runs normally again (at most --burst-ms).
    #[arg(long, default_value_t = BudgetParams::DEFAULT.resume_ns as f64 / 1e6)]
    pub resume_ms: f64,
    /// Never demote an overdrawn process (only refuse its boosts).
    #[arg(long)]
    pub no_demote: bool,
    /// Fairness-monitor period: budgets are updated (and demotions decided) this often.
    #[arg(long, default_value_t = 10.0)]
    pub tick_ms: f64,
    /// Watch messages only while some managed thread has shared its CPU within this time (the BPF message
    /// hooks return at once otherwise, so a job with its CPUs to itself pays nothing for them); 0 = always.
    #[arg(long, default_value_t = 200.0)]
    pub watch_hold_ms: f64,
    /// The agent's own SCHED_FIFO priority, so it reacts promptly on a busy CPU (0 = stay SCHED_OTHER).
    /// Must be above --rt-prio.
    #[arg(long, default_value_t = 2)]
    pub agent_prio: u32,
    /// Print one line per action (boost, extend, restore, demote, refusals) on stderr.
    #[arg(long)]
    pub log_actions: bool,
    /// Stop after this many seconds (for tests and scripted runs); default: until SIGINT/SIGTERM.
    #[arg(long)]
    pub run_for_s: Option<f64>,
    /// Fault injection for the safety tests: panic right after the N-th boost, leaving it in place (the
    /// guardian must undo it).
    #[arg(long, hide = true, value_name = "N")]
    pub panic_after_boosts: Option<u64>,
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
    /// The command to run as a managed job.
    #[arg(trailing_var_arg = true, required_unless_present = "pid")]
    pub command: Vec<String>,
}

#[cfg(cosched_bpf)]
fn ms(v: f64, flag: &str) -> anyhow::Result<u64> {
    if !(v.is_finite() && v >= 0.0) {
        anyhow::bail!("--{flag} must be a non-negative number of milliseconds, got {v}");
    }
    Ok((v * 1e6).round() as u64)
}

#[cfg(cosched_bpf)]
impl AgentArgs {
    /// Validates the flags into a resolved configuration.
    pub fn resolve(&self) -> anyhow::Result<crate::daemon::Config> {
        use cosched_policy::dcs::DcsParams;
        if !(10..=10_000_000).contains(&self.boost_us) {
            anyhow::bail!(
                "--boost-us must be in 10..=10000000 (10 µs to 10 s), got {}",
                self.boost_us
            );
        }
        if !(1..=98).contains(&self.rt_prio) {
            anyhow::bail!("--rt-prio must be in 1..=98, got {}", self.rt_prio);
        }
        if self.agent_prio != 0 && (self.agent_prio <= self.rt_prio || self.agent_prio > 99) {
            anyhow::bail!(
                "--agent-prio must be 0 or above --rt-prio ({}) and at most 99, got {}",
                self.rt_prio,
                self.agent_prio
            );
        }
        let tick_ns = ms(self.tick_ms, "tick-ms")?;
        if tick_ns < 1_000_000 {
            anyhow::bail!("--tick-ms must be at least 1");
        }
        let quantum_ns = match self.quantum_us {
            Some(0) => anyhow::bail!("--quantum-us must be positive"),
            Some(q) => q * 1000,
            None => crate::daemon::kernel_tick_ns(),
        };
        let dcs = DcsParams {
            exponent: self.exponent,
            constant_ns: ms(self.constant_ms, "constant-ms")?,
        };
        dcs.validate()?;
        let budget = BudgetParams {
            slack_ppm: self.slack_ppm,
            burst_ns: ms(self.burst_ms, "burst-ms")?,
            floor_ns: ms(self.floor_ms, "floor-ms")?,
            demote_ns: ms(self.demote_ms, "demote-ms")?,
            resume_ns: ms(self.resume_ms, "resume-ms")?,
        };
        budget.validate()?;
        let run_for = match self.run_for_s {
            Some(s) if !(s.is_finite() && s > 0.0) => {
                anyhow::bail!("--run-for-s must be positive, got {s}")
            }
            Some(s) => Some(Duration::from_secs_f64(s)),
            None => None,
        };
        Ok(crate::daemon::Config {
            socket: self.socket.clone(),
            boost_ns: self.boost_us * 1000,
            max_extend_ns: self.max_extend_us.max(self.boost_us) * 1000,
            grace_ns: self.grace_us * 1000,
            renotify_ns: self.renotify_us.max(1) * 1000,
            rt_prio: self.rt_prio,
            dcs,
            quantum_ns,
            budget,
            demote: !self.no_demote,
            tick_ns,
            watch_hold_ns: match ms(self.watch_hold_ms, "watch-hold-ms")? {
                0 => None,
                hold => Some(hold),
            },
            agent_prio: self.agent_prio,
            log_actions: self.log_actions,
            run_for,
            panic_after_boosts: self.panic_after_boosts,
        })
    }
}

/// `cosched agent`.
pub fn run_agent(args: AgentArgs) -> anyhow::Result<()> {
    if args.stats {
        let s = Client::connect(&args.socket)?.stats()?;
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    if args.monitor {
        return monitor(&args);
    }
    start_agent(args)
}

#[cfg(cosched_bpf)]
fn start_agent(args: AgentArgs) -> anyhow::Result<()> {
    let cfg = args.resolve()?;
    crate::daemon::preflight()?;
    eprintln!("cosched agent: {}", cfg.describe().join(" "));
    let agent = crate::daemon::Agent::start(cfg)?;
    eprintln!(
        "cosched agent: running, pid {} (guardian {})",
        std::process::id(),
        agent.guardian_pid()
    );
    agent.run()
}

#[cfg(not(cosched_bpf))]
fn start_agent(_args: AgentArgs) -> anyhow::Result<()> {
    anyhow::bail!("{}", crate::BPF_MISSING_MESSAGE)
}

fn monitor(args: &AgentArgs) -> anyhow::Result<()> {
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
        "arrivals {:>10} ({:>8.0}/s)  flagged {:>8} ({:>7.0}/s)  on-cpu {:>10}  alone {:>8}  boosted {:>8}  recent {:>8}  pending {:>8}\n",
        s.arrivals,
        rate(s.arrivals, |p| p.arrivals),
        s.flagged,
        rate(s.flagged, |p| p.flagged),
        s.arrivals_on_cpu,
        s.arrivals_alone,
        s.arrivals_boosted,
        s.arrivals_recent,
        s.arrivals_pending
    );
    out += &format!(
        "watching {:<5}  message hooks {}  (gate closed {} times: no managed thread shared its CPU)\n",
        s.watching,
        if s.message_hooks_attached { "attached" } else { "detached" },
        s.watch_closes
    );
    out += &format!(
        "boosts   {:>10} ({:>8.0}/s)  extended {:>7}  refused dcs {:>7}  budget {:>7}  gone {:>5}  demotions {:>6}  boosted now {}\n",
        s.boosts_granted,
        rate(s.boosts_granted, |p| p.boosts_granted),
        s.boosts_extended,
        s.refused_dcs,
        s.refused_budget,
        s.refused_gone,
        s.demotions,
        s.boosted_now
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
    out += "job  name             root    procs thr   wall s   cpu s  share     F  boosts  extended  ref.dcs  ref.bud  demot\n";
    for j in &s.jobs {
        out += &format!(
            "{:<4} {:<16} {:<7} {:>5} {:>3} {:>8.1} {:>7.2} {:>6.3} {:>5.2} {:>7} {:>9} {:>8} {:>8} {:>6}{}\n",
            j.job,
            j.name,
            j.root_pid,
            j.live_processes,
            j.live_threads,
            j.wall_s,
            j.cpu_s,
            j.cpu_share,
            j.fairness,
            j.boosts_granted,
            j.boosts_extended,
            j.refused_dcs,
            j.refused_budget,
            j.demotions,
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
    let code = run_managed(&client, &args.command, &name)?;
    std::process::exit(code);
}

/// Starts `command` held before `exec`, registers it with the agent, then lets it run and waits for it.
/// Returns its exit code (128 + signal if it was killed). The library form of `cosched run`; call it from a
/// single-threaded process (it forks).
pub fn run_managed(client: &Client, command: &[String], name: &str) -> anyhow::Result<i32> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};
    use std::ffi::CString;
    let argv: Vec<CString> = command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("the command contains a NUL byte"))?;
    let (gate_r, gate_w) = nix::unistd::pipe()?;
    // SAFETY: the child only makes async-signal-safe calls (close, read, signal, execvp, write, _exit) on data
    // prepared before the fork.
    match unsafe { fork() }? {
        ForkResult::Child => {
            drop(gate_w);
            let mut b = [0u8; 1];
            // Wait until the parent has registered us; EOF without a byte means registration failed.
            if nix::unistd::read(&gate_r, &mut b) != Ok(1) {
                unsafe { libc::_exit(125) };
            }
            drop(gate_r);
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
    use crate::proto::JobStats;

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
