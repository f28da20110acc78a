//! A two-level cache per CPU that is not flushed on a context switch: what DYNAMICQ's miss rate is made of.
//!
//! Seed: `004_3903357666129396.txt` §2 ("every node has a two level cache memory (L1 and L2), which is not
//! flushed at a context switch"; `mr = L2 misses / L1 misses`; a slice "long enough to pollute the memory but
//! not enough to compensate for the misses caused by context switches") and §3 (Pentium III, L2 512 KB 4-way).
//! The model is the notes' proposal (`/work/shared/notes/seeds-001-004.md`, 004 §6): per-process working set,
//! refill misses after each switch set by what the others touched since, plus a steady-state rate.
//!
//! ## Approach
//! Each CPU's L2 holds some bytes of each process's *reused* set (`hot_bytes`, at most the L2), kept in
//! least-recently-run order. When a process is dispatched after others ran, the part of its reused set that
//! they evicted must come back: `refill = min(hot, L2) − resident` bytes, `refill / line` misses in L2 (and in
//! L1 on the way), each stalling the process for `miss_penalty` before it computes (the refill cost after each
//! switch). Bringing them in evicts the least recently run processes' bytes first (LRU across processes).
//! While it executes, a process misses L1 at its own steady rate (`l1_misses_per_ms`), and a fixed fraction of
//! those miss L2 too (`l2_steady_percent`: the capacity misses of a working set larger than the L2, which no
//! quantum changes). A `local` process's system call moves `bytes` through memory: every line misses both
//! levels, and the bytes it brings in evict the others'.
//!
//! So the miss rate over an epoch is `(Σ refill lines + Σ steady L2) / (Σ L1 steady + Σ refill lines)`: it
//! falls as the quantum grows (fewer refills per second of work) towards the steady fraction, and rises with
//! the footprint of what ran in between.
//!
//! ## Parameters (hardware: [`CacheParams`]; per process: [`CacheProfile`])
//! | parameter | default | source |
//! |---|---|---|
//! | `l2_bytes` | 512 KB | seed §3 |
//! | `line_bytes` | 32 B | [K] Pentium III cache line |
//! | `miss_penalty_ns` | 120 ns | [A] PIII + PC100 SDRAM memory latency (no figure in the seed) |
//! | `memory_mb_per_s` | 200 MB/s | [A] a PIII's copy bandwidth, for the `local` system call's CPU time |
//! | `hot_bytes` | 512 KB | [A] a NAS class A rank's arrays exceed the L2; its reused set fills it |
//! | `l1_misses_per_ms` | 4,000 | [A] one L1 miss every ~125 cycles at ~500 MHz |
//! | `l2_steady_percent` | 5 % | [A] streaming capacity misses of a working set ≫ 512 KB |

use cosched_policy::Nanos;
use serde::{Deserialize, Serialize};

/// The hardware: one L2 per CPU and the cost of a line fetched from memory.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheParams {
    pub l2_bytes: u64,
    pub line_bytes: u64,
    pub miss_penalty_ns: Nanos,
    /// Bytes per second a system call moves to memory (its CPU time is `bytes / this`).
    pub memory_bytes_per_s: u64,
}

impl Default for CacheParams {
    fn default() -> Self {
        CacheParams {
            l2_bytes: 512 * 1024,
            line_bytes: 32,
            miss_penalty_ns: 120,
            memory_bytes_per_s: 200_000_000,
        }
    }
}

/// How a process uses the cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheProfile {
    /// The bytes it reuses (capped at the L2 when resident).
    pub hot_bytes: u64,
    /// L1 misses per millisecond of execution, steady state.
    pub l1_misses_per_ms: f64,
    /// The percentage of those that miss L2 too, steady state.
    pub l2_steady_percent: f64,
}

impl Default for CacheProfile {
    fn default() -> Self {
        CacheProfile {
            hot_bytes: 512 * 1024,
            l1_misses_per_ms: 4_000.0,
            l2_steady_percent: 5.0,
        }
    }
}

/// The largest L2 a file may give (1 GiB).
pub const MAX_L2_BYTES: u64 = 1 << 30;
/// The largest cost of a line fetched from memory a file may give (1 ms).
pub const MAX_MISS_PENALTY_NS: Nanos = 1_000_000;

impl CacheParams {
    /// Checks the values; a problem comes back as the field at fault and what is wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.line_bytes == 0 || self.l2_bytes < self.line_bytes {
            return Err((
                "l2_bytes",
                format!(
                    "an L2 of {} bytes with {}-byte lines holds no line (the seed: 512 KB, 32-byte lines)",
                    self.l2_bytes, self.line_bytes
                ),
            ));
        }
        if self.memory_bytes_per_s == 0 {
            return Err(("memory_bytes_per_s", "must be positive".into()));
        }
        // A refill stall is (lines refilled) × miss_penalty_ns, at most (l2_bytes / line_bytes) × the penalty:
        // both bounded so the product stays far from u64::MAX ns.
        if self.l2_bytes > MAX_L2_BYTES {
            return Err((
                "l2_bytes",
                format!(
                    "{} is more than the limit of {MAX_L2_BYTES} bytes (1 GiB; the seed: 512 KB)",
                    self.l2_bytes
                ),
            ));
        }
        if self.miss_penalty_ns > MAX_MISS_PENALTY_NS {
            return Err((
                "miss_penalty_ns",
                format!(
                    "{} is more than the limit of {MAX_MISS_PENALTY_NS} ns (1 ms; the seed's memory: about 120 ns)",
                    self.miss_penalty_ns
                ),
            ));
        }
        Ok(())
    }
}

impl CacheProfile {
    /// Checks the values; a problem comes back as the field at fault and what is wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.l1_misses_per_ms.is_finite() && self.l1_misses_per_ms >= 0.0) {
            return Err(("l1_misses_per_ms", "must be a number ≥ 0".into()));
        }
        if !(self.l2_steady_percent.is_finite() && (0.0..=100.0).contains(&self.l2_steady_percent))
        {
            return Err((
                "l2_steady_percent",
                "must be a percentage in 0..=100".into(),
            ));
        }
        Ok(())
    }
}

/// Misses counted by one CPU's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Misses {
    pub l1: f64,
    pub l2: f64,
}

/// One CPU's L2: bytes resident per process, least recently run first.
#[derive(Clone, Debug, Default)]
struct CpuCache {
    resident: Vec<(u32, u64)>,
}

impl CpuCache {
    fn resident_of(&self, pid: u32) -> u64 {
        self.resident
            .iter()
            .find(|&&(p, _)| p == pid)
            .map_or(0, |&(_, b)| b)
    }

    /// `pid` brings in `bytes` more (its own total becomes `total`), evicting the least recently run others
    /// first when the L2 is full; `pid` becomes the most recently run.
    fn bring_in(&mut self, pid: u32, total: u64, capacity: u64) {
        self.resident.retain(|&(p, _)| p != pid);
        let mut used: u64 = self.resident.iter().map(|&(_, b)| b).sum();
        let mut at = 0;
        while used + total > capacity && at < self.resident.len() {
            let over = used + total - capacity;
            let evicted = over.min(self.resident[at].1);
            self.resident[at].1 -= evicted;
            used -= evicted;
            at += 1;
        }
        self.resident.retain(|&(_, b)| b > 0);
        self.resident.push((pid, total.min(capacity)));
    }
}

/// The caches of every CPU of the cluster.
#[derive(Clone, Debug)]
pub struct Caches {
    params: CacheParams,
    cpus: Vec<CpuCache>,
}

impl Caches {
    pub fn new(params: CacheParams, cpus: u32) -> Self {
        Caches {
            params,
            cpus: vec![CpuCache::default(); cpus as usize],
        }
    }

    /// `pid` is dispatched on `cpu`: the misses of refilling its reused set, and how long that stalls it.
    pub fn dispatch(&mut self, cpu: u32, pid: u32, profile: &CacheProfile) -> (Misses, Nanos) {
        let p = self.params;
        let cache = &mut self.cpus[cpu as usize];
        let want = profile.hot_bytes.min(p.l2_bytes);
        let missing = want.saturating_sub(cache.resident_of(pid));
        cache.bring_in(pid, want, p.l2_bytes);
        let lines = missing.div_ceil(p.line_bytes);
        (
            Misses {
                l1: lines as f64,
                l2: lines as f64,
            },
            lines * p.miss_penalty_ns,
        )
    }

    /// The steady-state misses of `ran` ns of execution with `profile`.
    pub fn steady(&self, ran: Nanos, profile: &CacheProfile) -> Misses {
        let l1 = profile.l1_misses_per_ms * ran as f64 / 1e6;
        Misses {
            l1,
            l2: l1 * profile.l2_steady_percent / 100.0,
        }
    }

    /// `pid` on `cpu` moves `bytes` through memory (a system call): every line misses both levels, the bytes
    /// evict the others'. Returns the misses and the CPU time it takes.
    pub fn stream(&mut self, cpu: u32, pid: u32, bytes: u64) -> (Misses, Nanos) {
        let p = self.params;
        let cache = &mut self.cpus[cpu as usize];
        cache.bring_in(pid, bytes, p.l2_bytes);
        let lines = bytes.div_ceil(p.line_bytes) as f64;
        let ns = (bytes as u128 * 1_000_000_000 / p.memory_bytes_per_s as u128) as Nanos;
        (
            Misses {
                l1: lines,
                l2: lines,
            },
            ns,
        )
    }

    /// Bytes of `pid` resident in `cpu`'s L2 (for tests).
    pub fn resident(&self, cpu: u32, pid: u32) -> u64 {
        self.cpus[cpu as usize].resident_of(pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: u64 = 1024;

    fn profile(hot_kb: u64) -> CacheProfile {
        CacheProfile {
            hot_bytes: hot_kb * KB,
            ..CacheProfile::default()
        }
    }

    #[test]
    fn a_process_refills_only_what_the_others_evicted() {
        // L2 512 KB, 32 B lines, 120 ns a miss. A (384 KB) runs first: 12,288 lines, 1.47 ms stall.
        let mut c = Caches::new(CacheParams::default(), 1);
        let (m, stall) = c.dispatch(0, 0, &profile(384));
        assert_eq!(m.l2, 12_288.0);
        assert_eq!(stall, 12_288 * 120);
        // B (256 KB) next: 384 + 256 > 512 → 128 KB of A evicted (A was least recently run).
        c.dispatch(0, 1, &profile(256));
        assert_eq!(c.resident(0, 0), 256 * KB);
        // A again: refills 128 KB = 4,096 lines, and evicts 128 KB of B.
        let (m, _) = c.dispatch(0, 0, &profile(384));
        assert_eq!(m.l2, 4_096.0);
        assert_eq!(c.resident(0, 1), 128 * KB);
        // A right after itself: nothing to refill (not flushed on a switch, and nobody ran in between).
        let (m, stall) = c.dispatch(0, 0, &profile(384));
        assert_eq!((m.l2, stall), (0.0, 0));
    }

    #[test]
    fn a_system_call_moving_megabytes_flushes_the_others_and_misses_every_line() {
        let mut c = Caches::new(CacheParams::default(), 1);
        c.dispatch(0, 0, &profile(512));
        let (m, ns) = c.stream(0, 1, 2 * 1024 * KB);
        assert_eq!(m.l1, 65_536.0);
        assert_eq!(m.l2, 65_536.0);
        // 2 MiB at 200 MB/s ≈ 10.5 ms.
        assert_eq!(ns, 2 * 1024 * KB * 1_000_000_000 / 200_000_000);
        assert_eq!(c.resident(0, 0), 0);
        let (m, _) = c.dispatch(0, 0, &profile(512));
        assert_eq!(m.l2, 16_384.0);
    }

    #[test]
    fn the_steady_state_rate_is_a_fixed_fraction() {
        let c = Caches::new(CacheParams::default(), 1);
        let m = c.steady(100 * 1_000_000, &CacheProfile::default());
        assert_eq!(m.l1, 400_000.0);
        assert!((m.l2 - 20_000.0).abs() < 1e-6);
    }
}
