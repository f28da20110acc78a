//! Predictive coscheduling (PRED), its receive-only variant (DYN), and Periodic Boost (PB).
//!
//! Seeds: `003_d5c4b72e5fa91aa6.txt` (Solsona, Giné, Hernández, Luque — predictive coscheduling on Linux 2.2)
//! §3, eq. 1–2, Algorithms 2–3, and §4 ("DYN is a particular case of PRED, where only receiving frequency is
//! taken into account"); Periodic Boost is the baseline of `001_cc73854eda2a0ea6.txt` §3.2 (Nagar, Banerjee,
//! Sivasubramaniam, Das). What the papers leave out, and the assumptions made here, are in
//! `/work/shared/notes/seeds-001-004.md` (003 §1, §5; 001 §2).
//!
//! ## Problem
//! A task of a parallel job that has data queued on its sockets — received and not yet read, or sent and not
//! yet acknowledged — is likely to be one whose correspondents are running now; running it soon coschedules it
//! with them. Seed `003` does this without any message hook: the scheduler's `goodness()` favours a task in
//! proportion to a moving average of its socket-queue occupancy. Periodic Boost does it from outside the
//! scheduler: a monitor wakes every `period` and boosts one process that holds unconsumed messages.
//!
//! ## Approach
//! PRED and DYN are one rule, [`Freq::evaluate`]: called each time the kernel's `goodness()` runs for a task
//! whose `counter` is positive, it samples the task's queues (`cur_freq`), folds the sample into the task's
//! moving average `freq` and returns the bonus that `goodness()` adds. A task whose counter is 0 gets no bonus
//! and its average does not move (Algorithm 2 calls `freq()` inside `if (weight)`), which is what keeps local
//! tasks from starving: a parallel task that used up its slice waits for the epoch like everyone else.
//! PB is [`next_to_boost`]: a round-robin scan from the process after the last one boosted.
//!
//! ## Terminology
//! - `rq`, `sq` — Σ over the task's sockets of `[rmem_alloc / 4096]` and `[wmem_alloc / 4096]`: bytes queued
//!   to be read by the task, and bytes sent and not yet acknowledged, in 4 KB "packets" ([`PACKET_BYTES`]).
//! - `[x]` — [`Rounding::Floor`] (C integer division, the faithful default: a socket with less than 4 KB
//!   queued counts 0) or [`Rounding::Ceiling`] (any queued byte counts 1: the variant for small-message
//!   programs such as master–slave).
//! - `cur_freq` — `rq + sq` (PRED, [`Counted::SendAndReceive`]) or `rq` (DYN, [`Counted::ReceiveOnly`]).
//! - `P` — the weight of the past, as a percentage `p_percent` in `0..=100` (the kernel has no floating point;
//!   the paper's "P ≈ 0" and "P ≈ 1" are taken as 10 and 90).
//! - `freq` — the task's moving average, an integer (`task->freq`, initially 0).
//! - warm-up — "the first four values of task->freq are the mean of the obtained cur_freq values"
//!   ([`WARM_UP_SAMPLES`]).
//!
//! ## Algorithm
//! ```text
//! goodness(task):                              (Linux 2.2, the patch's lines marked +)
//!     weight = counter
//!     if weight > 0:
//!         weight += priority (+1 if it is the task that ran last)
//! +       cur = Σ [rmem/4096] + Σ [wmem/4096]          DYN: Σ [rmem/4096] only
//! +       n += 1
//! +       if n <= 4: freq = (cur_1 + ... + cur_n) / n  (integer division)
//! +       else:      freq = (P × freq + (100 − P) × cur) / 100
//! +       weight += freq
//!     return weight
//!
//! periodic boost, every period on each node:
//!     scan the node's processes round-robin, starting after the one boosted last;
//!     boost the first that holds unconsumed messages and waits on a run queue (at most one per period)
//! ```
//!
//! ## Parameters
//! | parameter | unit | default | meaning |
//! |---|---|---|---|
//! | `p_percent` | % | 90 | `P`, the weight of the past average (`003`: P ≈ 1 best for IS and MG, P ≈ 0 for master–slave) |
//! | `ceiling` | — | false | `[x/4096]` rounds up instead of down |
//! | PB `period` | ns | 10 ms | how often the monitor scans (`001` gives no value; the notes assume 10 ms) |

use crate::{Nanos, MILLIS};
use serde::{Deserialize, Serialize};

/// The unit of `rq` and `sq`: one socket-buffer "packet" of the seed, 4 KB.
pub const PACKET_BYTES: u64 = 4096;
/// How many first samples are averaged instead of weighted by `P`.
pub const WARM_UP_SAMPLES: u32 = 4;
/// The largest `P`: 100 % keeps the average where the warm-up left it.
pub const MAX_P_PERCENT: u32 = 100;

/// Which socket queues count: PRED both, DYN only what was received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Counted {
    /// PRED: `cur_freq = rq + sq`.
    SendAndReceive,
    /// DYN: `cur_freq = rq`.
    ReceiveOnly,
}

/// How `[bytes / 4096]` rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rounding {
    /// C integer division: under 4 KB counts 0 (the seed's kernel code).
    Floor,
    /// Any queued byte counts one packet.
    Ceiling,
}

/// The parameters of the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreqParams {
    /// `P` in percent, `0..=100`.
    pub p_percent: u32,
    pub counted: Counted,
    pub rounding: Rounding,
}

impl FreqParams {
    /// PRED with `P` = `p_percent` %, floor rounding.
    pub const fn pred(p_percent: u32) -> Self {
        FreqParams {
            p_percent,
            counted: Counted::SendAndReceive,
            rounding: Rounding::Floor,
        }
    }

    /// DYN with `P` = `p_percent` %, floor rounding.
    pub const fn dyn_(p_percent: u32) -> Self {
        FreqParams {
            p_percent,
            counted: Counted::ReceiveOnly,
            rounding: Rounding::Floor,
        }
    }

    /// Checks `P`.
    pub fn validate(&self) -> Result<(), String> {
        if self.p_percent > MAX_P_PERCENT {
            return Err(format!(
                "{} is not a percentage in 0..={MAX_P_PERCENT} (the seed's P ≈ 0 and P ≈ 1: 10 and 90)",
                self.p_percent
            ));
        }
        Ok(())
    }
}

/// One socket's occupancy, in bytes: `sk->rmem_alloc` and `sk->wmem_alloc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketQueue {
    /// Bytes received and not yet read by the task.
    pub rmem: u64,
    /// Bytes sent and not yet acknowledged.
    pub wmem: u64,
}

/// `[bytes / 4096]` under `rounding`.
pub fn packets(bytes: u64, rounding: Rounding) -> u64 {
    match rounding {
        Rounding::Floor => bytes / PACKET_BYTES,
        Rounding::Ceiling => bytes.div_ceil(PACKET_BYTES),
    }
}

/// `cur_freq` of a task whose sockets are `sockets` (Algorithm 3: the rounding is per socket, then summed).
pub fn cur_freq(sockets: &[SocketQueue], params: FreqParams) -> u64 {
    sockets
        .iter()
        .map(|s| {
            let rq = packets(s.rmem, params.rounding);
            match params.counted {
                Counted::SendAndReceive => rq + packets(s.wmem, params.rounding),
                Counted::ReceiveOnly => rq,
            }
        })
        .sum()
}

/// A task's moving average (`task->freq`) and its warm-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Freq {
    /// `freq`, the value `goodness()` adds.
    pub value: u64,
    /// Samples folded in so far (counted up to the end of the warm-up).
    samples: u32,
    /// Sum of the warm-up samples.
    warm_up_sum: u64,
}

impl Freq {
    /// Folds one sample `cur` into the average and returns the new `freq` (eq. 1, with the warm-up).
    pub fn advance(&mut self, cur: u64, params: FreqParams) -> u64 {
        if self.samples < WARM_UP_SAMPLES {
            self.samples += 1;
            self.warm_up_sum += cur;
            self.value = self.warm_up_sum / self.samples as u64;
        } else {
            let p = params.p_percent.min(MAX_P_PERCENT) as u64;
            self.value = (p * self.value + (100 - p) * cur) / 100;
        }
        self.value
    }

    /// The patch's part of one `goodness()` evaluation for a task with `counter` ticks left: nothing (and no
    /// sample) when `counter` is 0, else the task's queues are sampled and the new `freq` is the bonus.
    pub fn evaluate(&mut self, counter: u32, sockets: &[SocketQueue], params: FreqParams) -> u64 {
        if counter == 0 {
            return 0;
        }
        self.advance(cur_freq(sockets, params), params)
    }
}

/// Every task's `freq`, keyed by `K` (the agent: a process id), as [`crate::dcs::DcsState`] keeps every
/// process's `Tp`.
#[derive(Clone, Debug)]
pub struct FreqTable<K> {
    pub params: FreqParams,
    freq: std::collections::HashMap<K, Freq>,
}

impl<K: std::hash::Hash + Eq + Copy> FreqTable<K> {
    pub fn new(params: FreqParams) -> Self {
        FreqTable {
            params,
            freq: std::collections::HashMap::new(),
        }
    }

    /// `freq` of `task` (0 before its first sample).
    pub fn freq(&self, task: K) -> u64 {
        self.freq.get(&task).map_or(0, |f| f.value)
    }

    /// One evaluation of `task`, whose sockets hold `sockets`, with `counter` ticks left ([`Freq::evaluate`]:
    /// no sample and no change at 0). Returns its `freq`.
    pub fn evaluate(&mut self, task: K, counter: u32, sockets: &[SocketQueue]) -> u64 {
        let params = self.params;
        let f = self.freq.entry(task).or_default();
        f.evaluate(counter, sockets, params);
        f.value
    }

    /// Drops a task that exited.
    pub fn forget(&mut self, task: K) {
        self.freq.remove(&task);
    }
}

/// Periodic Boost's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PbParams {
    /// How often the monitor scans each node.
    pub period_ns: Nanos,
}

impl PbParams {
    /// The assumed default: every 10 ms (seed `001` gives no value).
    pub const DEFAULT: PbParams = PbParams {
        period_ns: 10 * MILLIS,
    };
}

impl Default for PbParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What the periodic-boost monitor sees of one process of its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PbCandidate {
    /// Messages delivered to it and not yet consumed.
    pub unconsumed: u32,
    /// Runnable and waiting on a run queue (not on a CPU, not asleep): a boost would make it run.
    pub waiting: bool,
}

/// Periodic Boost's scan: the index (in `processes`, the node's processes in a fixed order) of the first process
/// after `last_boosted` (wrapping round; from the start when `None`) that holds unconsumed messages and waits
/// on a run queue; `None` when no process qualifies.
pub fn next_to_boost(processes: &[PbCandidate], last_boosted: Option<usize>) -> Option<usize> {
    let n = processes.len();
    if n == 0 {
        return None;
    }
    let start = last_boosted.map_or(0, |i| (i + 1) % n);
    (0..n)
        .map(|k| (start + k) % n)
        .find(|&i| processes[i].unconsumed > 0 && processes[i].waiting)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: u64 = 1024;

    fn socket(rmem: u64, wmem: u64) -> SocketQueue {
        SocketQueue { rmem, wmem }
    }

    #[test]
    fn packets_floor_and_ceiling() {
        // 4095 B: floor 0, ceiling 1; 4096 B: 1 either way; 10 KB = 2.5 packets: floor 2, ceiling 3.
        assert_eq!(packets(4095, Rounding::Floor), 0);
        assert_eq!(packets(4095, Rounding::Ceiling), 1);
        assert_eq!(packets(4096, Rounding::Floor), 1);
        assert_eq!(packets(4096, Rounding::Ceiling), 1);
        assert_eq!(packets(10 * KB, Rounding::Floor), 2);
        assert_eq!(packets(10 * KB, Rounding::Ceiling), 3);
        assert_eq!(packets(0, Rounding::Ceiling), 0);
    }

    #[test]
    fn cur_freq_rounds_per_socket_and_dyn_counts_only_receives() {
        // Two sockets: (rmem 6 KB, wmem 9 KB) and (rmem 3 KB, wmem 0).
        // PRED floor: [6/4] + [9/4] + [3/4] + 0 = 1 + 2 + 0 = 3 (not [9/4] = 2 for the summed 9 KB received).
        // DYN floor: 1 + 0 = 1. PRED ceiling: 2 + 3 + 1 = 6. DYN ceiling: 2 + 1 = 3.
        let s = [socket(6 * KB, 9 * KB), socket(3 * KB, 0)];
        assert_eq!(cur_freq(&s, FreqParams::pred(50)), 3);
        assert_eq!(cur_freq(&s, FreqParams::dyn_(50)), 1);
        let ceil = |mut p: FreqParams| {
            p.rounding = Rounding::Ceiling;
            p
        };
        assert_eq!(cur_freq(&s, ceil(FreqParams::pred(50))), 6);
        assert_eq!(cur_freq(&s, ceil(FreqParams::dyn_(50))), 3);
    }

    #[test]
    fn the_first_four_values_are_the_mean_then_p_weighs_the_past() {
        // P = 90 %. Samples 8, 4, 0, 6: means 8, 12/2 = 6, 12/3 = 4, 18/4 = 4 (integer division).
        // 5th sample 14: (90 × 4 + 10 × 14) / 100 = (360 + 140) / 100 = 5.
        // 6th sample 0:  (90 × 5 + 0) / 100 = 4 (4.5 truncated).
        let p = FreqParams::pred(90);
        let mut f = Freq::default();
        let got: Vec<u64> = [8, 4, 0, 6, 14, 0]
            .iter()
            .map(|&c| f.advance(c, p))
            .collect();
        assert_eq!(got, vec![8, 6, 4, 4, 5, 4]);
    }

    #[test]
    fn p_near_zero_follows_the_current_sample() {
        // P = 10 %: after the warm-up (four 0s: freq 0), sample 10 gives (10 × 0 + 90 × 10) / 100 = 9, then
        // sample 0 gives (10 × 9) / 100 = 0 (0.9 truncated).
        let p = FreqParams::pred(10);
        let mut f = Freq::default();
        for _ in 0..4 {
            f.advance(0, p);
        }
        assert_eq!(f.advance(10, p), 9);
        assert_eq!(f.advance(0, p), 0);
    }

    #[test]
    fn integer_truncation_keeps_a_high_p_average_at_zero_under_small_samples() {
        // P = 90 % and freq 0 after the warm-up: a sample of 9 gives (0 + 10 × 9) / 100 = 0 — the kernel's
        // integer arithmetic cannot climb out of 0 on samples under 10; a sample of 10 gives 1.
        let p = FreqParams::pred(90);
        let mut f = Freq::default();
        for _ in 0..4 {
            f.advance(0, p);
        }
        assert_eq!(f.advance(9, p), 0);
        assert_eq!(f.advance(10, p), 1);
    }

    #[test]
    fn a_task_whose_counter_is_zero_gets_no_bonus_and_its_average_does_not_move() {
        // 8 KB received: cur = 2. With counter 0, goodness() never calls freq(): bonus 0, no sample taken. With
        // counter 5 the first sample is taken: freq = 2 (warm-up mean of one value).
        let p = FreqParams::pred(90);
        let mut f = Freq::default();
        let s = [socket(8 * KB, 0)];
        assert_eq!(f.evaluate(0, &s, p), 0);
        assert_eq!(f, Freq::default());
        assert_eq!(f.evaluate(5, &s, p), 2);
        // P = 100 % freezes the average once the warm-up is over: (100 × 2 + 0 × cur) / 100 = 2.
        let frozen = FreqParams::pred(100);
        for _ in 0..3 {
            f.evaluate(5, &s, frozen);
        }
        assert_eq!(f.evaluate(5, &[socket(100 * KB, 0)], frozen), 2);
    }

    #[test]
    fn p_is_a_percentage() {
        assert!(FreqParams::pred(100).validate().is_ok());
        assert!(FreqParams::pred(101).validate().is_err());
    }

    fn c(unconsumed: u32, waiting: bool) -> PbCandidate {
        PbCandidate {
            unconsumed,
            waiting,
        }
    }

    #[test]
    fn periodic_boost_scans_round_robin_after_the_last_boosted() {
        // Processes 0..4: 1 and 3 hold messages and wait; 2 holds messages but is running (not waiting); 0 waits
        // with none. First scan (no previous boost) from 0: 1. After boosting 1: from 2 → 3. After 3: wraps
        // from 0 → 1.
        let ps = [c(0, true), c(2, true), c(5, false), c(1, true)];
        assert_eq!(next_to_boost(&ps, None), Some(1));
        assert_eq!(next_to_boost(&ps, Some(1)), Some(3));
        assert_eq!(next_to_boost(&ps, Some(3)), Some(1));
        // The last boosted is itself the only candidate: found again after a full turn.
        assert_eq!(next_to_boost(&[c(0, true), c(1, true)], Some(1)), Some(1));
        assert_eq!(next_to_boost(&[c(0, true), c(3, false)], None), None);
        assert_eq!(next_to_boost(&[], None), None);
    }
}
