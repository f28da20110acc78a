//! Statistics: the mechanism's counters, the policy's section, and the per-job figures the agent serves live
//! ([`crate::proto::AgentStats`], `cosched agent --stats` / `--monitor`).
//!
//! ## Terminology
//! - `cpu_s`: a process's utime + stime while managed, from `/proc/<pid>/stat`; `booked_cpu_s`: the same as
//!   BPF booked it from the kernel's `se.sum_exec_runtime` at every context switch (what a budget is charged).
//! - `F = N Tcpu / Twall` (seed `000_e8004e1596fde6a5.txt` §4.1.1): a process's fairness, `N` the mean
//!   run-queue length at its arrivals (1 without arrivals); 1 is fair.

use crate::intf;
use crate::proto::{JobStats, Latency, PolicyStats};
use crate::tracker::{Process, Tracker};
use cosched_policy::Nanos;
use std::collections::BTreeMap;

/// The mechanism's counters, and the policy's by name.
#[derive(Clone, Debug)]
pub struct Counters {
    /// BPF events read.
    pub events: u64,
    /// Boosts carried out.
    pub boosts_granted: u64,
    /// Threads put back to their own attributes.
    pub restores: u64,
    /// Boosts ended early because a local task woke on the boosted thread's CPU.
    pub boosts_yielded: u64,
    /// Pauses for a local task ended as soon as its turn was over (BPF `COSCHED_EV_LOCAL_DONE`).
    pub pauses_ended_by_local: u64,
    /// Boosts and extensions not given because a local task waited on the thread's CPU.
    pub boosts_held_for_local: u64,
    /// CPUs nudged because the fair class left a local task waiting there (`crate::nudge`).
    pub local_nudges: u64,
    /// Changes not made because the thread had exited.
    pub refused_gone: u64,
    /// Threads left unmanaged because their job already had the most threads a job may have.
    pub threads_refused: u64,
    /// Processes that left management alive: they exec'd a setuid or setgid program.
    pub released_setuid: u64,
    /// Flagged arrivals the engine could not hand to the policy: their thread or process was not (or no longer)
    /// tracked.
    pub arrivals_unattributed: u64,
    /// Changes the kernel refused (the last one is `last_error`).
    pub boost_errors: u64,
    /// Times the watch gate was closed.
    pub watch_closes: u64,
    /// Changes (boosts, demotions) not made because the self-check stood aside.
    pub actions_stood_aside: u64,
    /// Flagged arrival → the agent's `sched_setattr` returned (log2 µs buckets).
    pub decision_hist: Vec<u64>,
    /// Flagged arrival → the agent read it (log2 µs buckets).
    pub wakeup_hist: Vec<u64>,
    /// The policy's counters ([`crate::policy::Counter`] names).
    pub policy: BTreeMap<&'static str, u64>,
    pub last_error: Option<String>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            events: 0,
            boosts_granted: 0,
            restores: 0,
            boosts_yielded: 0,
            pauses_ended_by_local: 0,
            boosts_held_for_local: 0,
            local_nudges: 0,
            refused_gone: 0,
            threads_refused: 0,
            released_setuid: 0,
            arrivals_unattributed: 0,
            boost_errors: 0,
            watch_closes: 0,
            actions_stood_aside: 0,
            decision_hist: vec![0; intf::COSCHED_HIST_BUCKETS as usize],
            wakeup_hist: vec![0; intf::COSCHED_HIST_BUCKETS as usize],
            policy: BTreeMap::new(),
            last_error: None,
        }
    }
}

/// One counter of a policy's statistics section (a policy lists its own, [`crate::policy::Policy::counters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Its key in the statistics (and the word in `--log-actions` lines).
    pub name: &'static str,
    /// Whether it counts arrivals the policy refused (summed into the shared schema's `boosts_refused`).
    pub refusal: bool,
    pub description: &'static str,
}

/// The policy's section: each of its `declared` counters (zero until noted) and the sum of its refusals.
pub fn policy_section(name: &str, declared: &[Counter], counters: &Counters) -> PolicyStats {
    let mut out = PolicyStats {
        name: name.to_string(),
        ..Default::default()
    };
    for c in declared {
        let n = counters.policy.get(c.name).copied().unwrap_or(0);
        out.counters.insert(c.name.to_string(), n);
        if c.refusal {
            out.refused += n;
        }
    }
    // A counter noted without being declared is shown too (never dropped silently).
    for (&k, &v) in &counters.policy {
        out.counters.entry(k.to_string()).or_insert(v);
    }
    out
}

/// Books a process that ended into its job (CPU time, share, fairness), and marks the job finished when it
/// was the last one.
pub fn retire_process(tracker: &mut Tracker, p: &Process, booked_ns: Nanos, now: Nanos) {
    // What BPF booked, to the exit of its last thread. Not `/proc/<pid>/stat`: read while the parent reaps the
    // process, it left the reaper spinning in the kernel (`shrink_dcache_parent` under `release_task`) for
    // tens of seconds — Open MPI's mpirun hung after its ranks ended in 13 of 39 agent runs here, and in none
    // of 15 once this read was gone (docs/lab-local.md).
    let cpu_s = booked_ns as f64 / 1e9;
    let wall = now.saturating_sub(p.registered_ns) as f64 / 1e9;
    let alive = tracker.job_alive(p.job);
    if let Some(j) = tracker.job_mut(p.job) {
        j.done_cpu_s += cpu_s;
        j.done_booked_s += booked_ns as f64 / 1e9;
        if wall > 0.0 {
            j.done_shares
                .push((cpu_s / wall, p.mean_r() * cpu_s / wall));
        }
        if !alive {
            j.ended_ns = Some(now);
        }
    }
}

/// Every job's figures now. `booked` gives a live process's CPU time as BPF booked it, `job_booked` a live
/// job's (every thread it ever had, the budget's figure).
pub fn job_stats(
    tracker: &Tracker,
    now: Nanos,
    booked: impl Fn(u32) -> Option<Nanos>,
    job_booked: impl Fn(u64) -> Option<Nanos>,
) -> Vec<JobStats> {
    tracker
        .jobs()
        .map(|j| {
            let mut cpu_s = j.done_cpu_s;
            let mut booked_s = j.done_booked_s;
            let mut shares = j.done_shares.clone();
            let mut live_threads = 0;
            let mut live_processes = 0;
            for p in tracker.processes_of(j.id) {
                live_processes += 1;
                live_threads += tracker.threads_of(p.tgid).count();
                let booked_ns = booked(p.tgid).or(p.cpu_ns);
                let c = process_cpu_s(p, booked_ns);
                let wall = now.saturating_sub(p.registered_ns) as f64 / 1e9;
                cpu_s += c;
                booked_s += booked_ns.unwrap_or(0) as f64 / 1e9;
                if wall > 0.0 {
                    shares.push((c / wall, p.mean_r() * c / wall));
                }
            }
            let k = shares.len().max(1) as f64;
            JobStats {
                job: j.id,
                name: j.name.clone(),
                root_pid: j.root,
                owner_uid: j.owner_uid,
                live_processes,
                live_threads,
                wall_s: j.ended_ns.unwrap_or(now).saturating_sub(j.registered_ns) as f64 / 1e9,
                cpu_s,
                // The job's own counter where BPF still has it: processes that exited between two samples
                // are in it to their last switch-out, not only to the last sample.
                booked_cpu_s: job_booked(j.id).map_or(booked_s, |ns| ns as f64 / 1e9),
                cpu_share: shares.iter().map(|s| s.0).sum::<f64>() / k,
                fairness: shares.iter().map(|s| s.1).sum::<f64>() / k,
                boosts_granted: j.counters.boosts,
                policy: j
                    .counters
                    .policy
                    .iter()
                    .map(|(&k, &v)| (k.to_string(), v))
                    .collect(),
                finished: j.ended_ns.is_some(),
            }
        })
        .collect()
}

/// A live process's CPU time while managed (s): the larger of what `/proc` says (utime + stime since it became
/// managed, whole ticks) and what BPF booked (`sum_exec_runtime`, exact, but as of the last sample for a process
/// whose BPF entry went first). Each can only fall short of the truth.
fn process_cpu_s(p: &Process, booked_ns: Option<Nanos>) -> f64 {
    let from_proc = proc_cpu_ticks(p.tgid).map_or(0, |t| t.saturating_sub(p.cpu_at_start_ticks))
        as f64
        / ticks_per_s();
    from_proc.max(booked_ns.unwrap_or(0) as f64 / 1e9)
}

/// utime + stime of a process in clock ticks (`/proc/<pid>/stat` fields 14 and 15).
pub fn proc_cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(crate::sched::parse_stat_field(&s, 14)? + crate::sched::parse_stat_field(&s, 15)?)
}

pub fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The agent's own CPU time (this process; the guardian sleeps).
pub fn self_cpu_s() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

/// The tasks runnable on the whole machine right now, the reader (this agent) left out: the kernel's
/// `nr_running()`, the fourth field's numerator of `/proc/loadavg` (one small read; every class counted).
pub fn runnable_tasks() -> Option<u32> {
    runnable_from_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// [`runnable_tasks`] from the text of `/proc/loadavg` (`0.52 0.58 0.59 3/467 12345`).
fn runnable_from_loadavg(text: &str) -> Option<u32> {
    let running: u32 = text
        .split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()?;
    Some(running.saturating_sub(1))
}

/// What the loop read from BPF for a statistics reply.
pub struct BpfReadings {
    /// `COSCHED_STAT_*`, summed over CPUs.
    pub counters: [u64; intf::COSCHED_NR_STATS as usize],
    /// The reaction histogram, `[row][bucket]`.
    pub histogram: Vec<Vec<u64>>,
    pub watching: bool,
    pub message_hooks_attached: bool,
    pub malformed_events: u64,
    pub programs: Vec<crate::proto::ProgramCost>,
}

/// Everything a statistics reply is made of.
pub struct Snapshot<'a> {
    pub uptime_s: f64,
    pub guardian_pid: u32,
    pub guardian_revocations: u64,
    /// The mechanism's and the policy's `key=value` settings.
    pub config: Vec<String>,
    pub bpf: BpfReadings,
    pub counters: &'a Counters,
    pub boosted_now: usize,
    pub jobs: Vec<JobStats>,
    pub policy: PolicyStats,
    /// The self-check's state (`None`: `--no-self-check`).
    pub self_check: Option<crate::proto::SelfCheckStats>,
}

/// The statistics reply.
pub fn agent_stats(s: Snapshot) -> crate::proto::AgentStats {
    let cpu = self_cpu_s();
    let b = &s.bpf.counters;
    let stat = |i: u64| b[i as usize];
    let h = &s.bpf.histogram;
    crate::proto::AgentStats {
        agent_pid: std::process::id(),
        guardian_pid: s.guardian_pid,
        guardian_revocations: s.guardian_revocations,
        uptime_s: s.uptime_s,
        agent_cpu_s: cpu,
        agent_cpu_fraction: if s.uptime_s > 0.0 {
            cpu / s.uptime_s
        } else {
            0.0
        },
        config: s.config,
        arrivals: stat(intf::COSCHED_STAT_ARRIVALS),
        flagged: stat(intf::COSCHED_STAT_FLAGGED),
        arrivals_on_cpu: stat(intf::COSCHED_STAT_ON_CPU),
        arrivals_recent: stat(intf::COSCHED_STAT_RECENT),
        arrivals_alone: stat(intf::COSCHED_STAT_ALONE),
        arrivals_boosted: stat(intf::COSCHED_STAT_BOOSTED),
        arrivals_boost_ended: stat(intf::COSCHED_STAT_BOOST_ENDED),
        arrivals_pending: stat(intf::COSCHED_STAT_PENDING),
        arrivals_stale_missed: stat(intf::COSCHED_STAT_STALE_MISSES),
        ringbuf_drops: stat(intf::COSCHED_STAT_RINGBUF_DROPS),
        sock_misses: stat(intf::COSCHED_STAT_SOCK_MISSES),
        task_misses: stat(intf::COSCHED_STAT_TASK_MISSES),
        map_full: stat(intf::COSCHED_STAT_MAP_FULL),
        forks: stat(intf::COSCHED_STAT_FORKS),
        switches: stat(intf::COSCHED_STAT_SWITCHES),
        events: s.counters.events,
        boosts_granted: s.counters.boosts_granted,
        refused_gone: s.counters.refused_gone,
        boost_errors: s.counters.boost_errors,
        restores: s.counters.restores,
        boosts_yielded: s.counters.boosts_yielded,
        pauses_ended_by_local: s.counters.pauses_ended_by_local,
        boosts_held_for_local: s.counters.boosts_held_for_local,
        local_wakes: stat(intf::COSCHED_STAT_LOCAL_WAKES),
        local_wakes_light: stat(intf::COSCHED_STAT_LOCAL_LIGHT),
        local_wakes_refused: stat(intf::COSCHED_STAT_LOCAL_REFUSED),
        local_nudges: s.counters.local_nudges,
        local_wakes_unseen: stat(intf::COSCHED_STAT_LOCAL_UNSEEN),
        threads_refused: s.counters.threads_refused,
        released_setuid: s.counters.released_setuid,
        arrivals_unattributed: s.counters.arrivals_unattributed,
        watching: s.bpf.watching,
        message_hooks_attached: s.bpf.message_hooks_attached,
        bpf_programs: s.bpf.programs.clone(),
        watch_closes: s.counters.watch_closes,
        self_check: s.self_check,
        malformed_events: s.bpf.malformed_events,
        boosted_now: s.boosted_now,
        reaction_boosted: Latency::from_log2(h[intf::COSCHED_HIST_BOOSTED as usize].clone()),
        reaction_unboosted: Latency::from_log2(h[intf::COSCHED_HIST_UNBOOSTED as usize].clone()),
        decision: Latency::from_log2(s.counters.decision_hist.clone()),
        wakeup: Latency::from_log2(s.counters.wakeup_hist.clone()),
        jobs: s.jobs,
        policy: s.policy,
        last_error: s.counters.last_error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_reaped_before_the_agent_heard_of_its_exit_keeps_its_booked_cpu_time() {
        // A pid that cannot exist (pids are below pid_max): /proc has nothing, as for a process its parent reaped.
        let gone = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(4_194_304);
        let mut t = Tracker::new();
        let job = t.new_job_id();
        t.add_job(job, "j".into(), gone, 0);
        let p = Process {
            tgid: gone,
            job,
            registered_ns: 0,
            cpu_at_start_ticks: 0,
            cpu_ns: Some(1_500_000_000),
            r_sum: 4000,
            r_count: 2,
        };
        // Booked 2 s in 4 s of wall at R = 2: CPU share 0.5, F = 1.
        retire_process(&mut t, &p, 2_000_000_000, 4_000_000_000);
        let j = t.job(job).unwrap();
        assert_eq!(j.done_cpu_s, 2.0);
        assert_eq!(j.done_shares, vec![(0.5, 1.0)]);
    }

    #[test]
    fn the_runnable_count_is_read_from_loadavg_without_the_reader() {
        assert_eq!(
            runnable_from_loadavg("0.52 0.58 0.59 3/467 12345\n"),
            Some(2)
        );
        assert_eq!(runnable_from_loadavg("0.00 0.00 0.00 1/80 1"), Some(0));
        assert_eq!(runnable_from_loadavg("0.00 0.00"), None);
        assert_eq!(runnable_from_loadavg("a b c x/y z"), None);
        // This machine's own file parses (the agent itself at least is running while it reads).
        assert!(runnable_tasks().is_some());
    }
}
