//! Foreign CPU: how busy the experiment's CPUs were with work that was not the experiment's. Busy time comes
//! from `/proc/stat` (user + nice + system + irq + softirq + steal, per CPU); the experiment's own time is its
//! cpuacct cgroup plus the lab process and the agent. The difference, divided by the wall time, is the number
//! of CPUs' worth of foreign load during the run (0.3 = 30 % of one CPU).

use anyhow::{Context, Result};

/// Cumulative busy time of some CPUs, seconds.
pub fn busy_s(cpus: &[u32]) -> Result<f64> {
    let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    busy_s_from(&text, cpus, clock_ticks_per_s())
}

fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn busy_s_from(text: &str, cpus: &[u32], ticks_per_s: f64) -> Result<f64> {
    let mut total_ticks = 0u64;
    for &cpu in cpus {
        let label = format!("cpu{cpu}");
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(label.as_str()))
            .with_context(|| format!("/proc/stat has no line for {label}"))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        // user nice system idle iowait irq softirq steal guest guest_nice; guest time is inside user already.
        let field = |i: usize| fields.get(i).copied().unwrap_or(0);
        total_ticks += field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    }
    Ok(total_ticks as f64 / ticks_per_s)
}

/// CPU time of the calling process (all threads), seconds.
pub fn own_cpu_s() -> f64 {
    // SAFETY: rusage is plain data filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Foreign load in CPUs: `(busy − ours) / wall`, never below 0.
pub fn foreign_cpus(busy_delta_s: f64, ours_delta_s: f64, wall_s: f64) -> f64 {
    if wall_s <= 0.0 {
        return 0.0;
    }
    ((busy_delta_s - ours_delta_s) / wall_s).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 1000 0 0 0 0 0 0\n\
                        cpu0 60 0 30 500 7 1 2 3 0 0\n\
                        cpu1 40 0 20 500 0 0 0 0 0 0\n\
                        intr 1\n";

    #[test]
    fn busy_counts_user_nice_system_irq_softirq_steal_not_idle_or_iowait() {
        // cpu0: 60 + 0 + 30 + 1 + 2 + 3 = 96 ticks = 0.96 s at 100 ticks/s.
        assert!((busy_s_from(STAT, &[0], 100.0).unwrap() - 0.96).abs() < 1e-9);
        // cpu0 + cpu1: 96 + 60 = 156 ticks.
        assert!((busy_s_from(STAT, &[0, 1], 100.0).unwrap() - 1.56).abs() < 1e-9);
        assert!(busy_s_from(STAT, &[7], 100.0).is_err());
    }

    #[test]
    fn foreign_is_busy_minus_ours_per_second() {
        // 3 s busy on the CPUs over 2 s, 2 s of it ours: 0.5 CPUs of foreign load.
        assert_eq!(foreign_cpus(3.0, 2.0, 2.0), 0.5);
        // Accounting noise never gives negative load.
        assert_eq!(foreign_cpus(1.9, 2.0, 2.0), 0.0);
    }

    #[test]
    fn this_machine_has_a_readable_proc_stat() {
        assert!(busy_s(&[0]).unwrap() > 0.0);
    }
}
