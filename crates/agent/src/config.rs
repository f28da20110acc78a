//! The agent's resolved configuration: what `cosched agent`'s mechanism flags became ([`crate::cli`] validates
//! them), apart from the policy's own (see [`crate::policy`]).

use cosched_policy::Nanos;
use std::path::PathBuf;
use std::time::Duration;

/// The mechanism's settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub socket: PathBuf,
    /// The policy's name (`--policy`).
    pub policy: String,
    /// An arrival for a receiver that ran within this long is not flagged (BPF).
    pub grace_ns: Nanos,
    /// A refused arrival still waiting after this long is reconsidered (BPF).
    pub renotify_ns: Nanos,
    /// Whether a receiver runs is read from a view sampled this often (seed 002's NIC); 0 = at the arrival (BPF).
    pub running_view_ns: Nanos,
    /// How a boost is carried out (`--mechanism`).
    pub mechanism: crate::actuator::Mechanism,
    /// `SCHED_FIFO` priority of a boosted thread.
    pub rt_prio: u32,
    /// A boost ends as soon as a local task (a user task in the fair class that the agent does not manage)
    /// wakes on the boosted thread's CPU.
    pub yield_to_local: bool,
    /// A local task the fair class leaves waiting on a job's CPU gets that CPU nudged (`src/nudge.rs`).
    pub nudge_local: bool,
    /// How long such a boost pauses before it resumes for the rest of its window (0: it ends); also how long a
    /// DCS boost at `--max-boost-ms` steps aside before it goes on.
    pub yield_ns: Nanos,
    /// The policy's tick period.
    pub tick_ns: Nanos,
    /// The tick's period while it has nothing to decide ([`crate::engine::Engine::tick_needed`]).
    pub idle_tick_ns: Nanos,
    /// Close the BPF watch gate once no managed thread has shared its CPU for this long (`None`: never).
    pub watch_hold_ns: Option<Nanos>,
    /// The self-check's parameters (`None`: `--no-self-check`, always coschedule).
    pub self_check: Option<cosched_policy::selfcheck::Params>,
    /// The agent's own SCHED_FIFO priority (0 = stay SCHED_OTHER).
    pub agent_prio: u32,
    /// How old the agent's heartbeat may get while it holds a boost before the guardian revokes its boosts
    /// (0 = never; only at the agent's death).
    pub guard_lease_ms: u64,
    /// Print one line per action and per decision the policy notes, on stderr.
    pub log_actions: bool,
    /// Stop after this long (tests), `None` = until SIGINT/SIGTERM.
    pub run_for: Option<Duration>,
    /// Fault injection (safety tests): panic right after this many boosts, with the last one still in place.
    pub panic_after_boosts: Option<u64>,
}

impl Config {
    /// The guardian's SCHED_FIFO priority: above every boost and the agent's own, so neither boosted spinners
    /// nor the agent can keep it from restoring.
    pub fn guardian_prio(&self) -> u32 {
        (self.rt_prio.max(self.agent_prio) + 1).min(99)
    }

    /// `key=value` lines for the statistics header (the policy's own follow them).
    pub fn describe(&self) -> Vec<String> {
        vec![
            format!("socket={}", self.socket.display()),
            format!("policy={}", self.policy),
            format!("grace_us={}", self.grace_ns / 1000),
            format!("renotify_us={}", self.renotify_ns / 1000),
            format!("running_view_us={}", self.running_view_ns / 1000),
            format!("mechanism={}", self.mechanism.name()),
            format!("rt_prio={}", self.rt_prio),
            format!("yield_to_local={}", self.yield_to_local),
            format!("nudge_local={}", self.nudge_local),
            format!("yield_us={}", self.yield_ns / 1000),
            format!("tick_ms={}", self.tick_ns as f64 / 1e6),
            format!("idle_tick_ms={}", self.idle_tick_ns as f64 / 1e6),
            format!(
                "watch_hold_ms={}",
                self.watch_hold_ns.map_or(0.0, |h| h as f64 / 1e6)
            ),
            format!(
                "self_check_epoch_ms={}",
                self.self_check.map_or(0.0, |p| p.epoch_ns as f64 / 1e6)
            ),
            format!("agent_prio={}", self.agent_prio),
            format!("guard_lease_ms={}", self.guard_lease_ms),
            format!("log_actions={}", self.log_actions),
        ]
    }
}

/// A flag's number of milliseconds, in ns ([`cosched_policy::config::parse_millis`]); anything else is an error
/// that names `--flag`.
pub fn ms(v: f64, flag: &str) -> anyhow::Result<Nanos> {
    cosched_policy::config::parse_millis(v).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

/// A flag's number of microseconds, in ns ([`cosched_policy::config::parse_micros`], checked); anything else is
/// an error that names `--flag`.
pub fn us(v: u64, flag: &str) -> anyhow::Result<Nanos> {
    cosched_policy::config::parse_micros(v).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

/// The kernel tick, from `CONFIG_HZ` in `/boot/config-$(uname -r)`; 4 ms (HZ=250) when unreadable.
pub fn kernel_tick_ns() -> Nanos {
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::read_to_string(format!("/boot/config-{release}"))
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.trim().parse::<u64>().ok())
        })
        .filter(|hz| *hz > 0)
        .map(|hz| 1_000_000_000 / hz)
        .unwrap_or(4_000_000)
}
