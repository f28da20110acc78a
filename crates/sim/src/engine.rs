//! The discrete-event engine: simulated time, the event queue and the one RNG.
//!
//! ## Problem
//! A simulation must be fast (tens of millions of events per second) and exactly repeatable: the same scenario
//! and seed must give the identical result on every machine.
//!
//! ## Approach
//! Time is an integer number of nanoseconds. Pending events sit in a binary min-heap keyed by
//! `(time, sequence number)`: the sequence number is the insertion order, so events due at the same instant run
//! in the order they were scheduled. Events are small `Copy` values (indices, never boxes), so scheduling one
//! allocates nothing once the heap has grown. A timer that becomes stale is not removed from the heap: its
//! owner bumps a generation counter and ignores the old entry when it pops. All randomness comes from one
//! ChaCha8 generator seeded from the run's seed and owned here.
//!
//! ## Terminology
//! - `now` — the current simulated time (ns); never decreases.
//! - `seq` — insertion counter; the tie-breaker.
//!
//! ## Algorithm
//! ```text
//! schedule(t, e): push (t, seq++, e)            requires t >= now
//! next():         pop the smallest (t, seq); now = t; return e
//! ```

use cosched_policy::Nanos;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One pending event, ordered by `(time, seq)` — smallest first — packed into one `u128` key
/// (`time << 64 | seq`) so an ordering is a single integer comparison.
#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (then first-inserted) entry is on top.
        other.key.cmp(&self.key)
    }
}

/// The event queue, the clock and the RNG of one run.
pub struct Engine<E> {
    now: Nanos,
    seq: u64,
    heap: BinaryHeap<Entry<E>>,
    rng: ChaCha8Rng,
}

impl<E: Copy> Engine<E> {
    /// A fresh engine at time 0 whose RNG is seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Engine {
            now: 0,
            seq: 0,
            heap: BinaryHeap::with_capacity(1024),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The current simulated time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `time` (not before now).
    #[inline]
    pub fn schedule(&mut self, time: Nanos, event: E) {
        debug_assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry {
            key: (time as u128) << 64 | seq as u128,
            event,
        });
    }

    /// Removes and returns the next event, advancing the clock to its time; `None` when nothing is pending.
    #[inline]
    pub fn next(&mut self) -> Option<E> {
        let entry = self.heap.pop()?;
        self.now = (entry.key >> 64) as Nanos;
        Some(entry.event)
    }

    /// The time of the next pending event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| (e.key >> 64) as Nanos)
    }

    /// Moves the clock forward to `time` without running anything (the end of a time-limited run).
    pub fn advance_to(&mut self, time: Nanos) {
        self.now = self.now.max(time);
    }

    /// Events still pending (stale timers included).
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// A uniform draw in `[0, bound)`; 0 when `bound` is 0.
    pub fn uniform_below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.rng.random_range(0..bound)
        }
    }

    /// An exponentially distributed duration with the given mean (inverse CDF: `-mean ln(1 - u)`), at least 1 ns
    /// when the mean is positive.
    pub fn exponential(&mut self, mean: Nanos) -> Nanos {
        if mean == 0 {
            return 0;
        }
        let u: f64 = self.rng.random::<f64>();
        let x = -(mean as f64) * (1.0 - u).ln();
        (x.round() as Nanos).max(1)
    }

    /// Shuffles a slice with the engine's RNG (Fisher–Yates), for randomised initial queue orders.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.rng.random_range(0..=i);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_events_come_first_and_ties_keep_insertion_order() {
        let mut e = Engine::new(1);
        e.schedule(20, 'c');
        e.schedule(10, 'a');
        e.schedule(10, 'b'); // same time as 'a', inserted later: comes after it
        e.schedule(5, 'z');
        let order: Vec<char> = std::iter::from_fn(|| e.next()).collect();
        assert_eq!(order, vec!['z', 'a', 'b', 'c']);
        assert_eq!(e.now(), 20);
    }

    #[test]
    fn same_seed_same_draws_different_seed_different_draws() {
        let draws = |seed| {
            let mut e: Engine<()> = Engine::new(seed);
            (0..8)
                .map(|_| e.uniform_below(1_000_000))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
    }

    #[test]
    fn exponential_mean_is_close_to_the_asked_mean() {
        // 20,000 draws of mean 1000 ns: the sample mean's standard error is 1000 / sqrt(20000) ≈ 7 ns, so
        // ±50 ns is over 7 standard errors.
        let mut e: Engine<()> = Engine::new(3);
        let n = 20_000u64;
        let sum: u64 = (0..n).map(|_| e.exponential(1000)).sum();
        let mean = sum / n;
        assert!((950..=1050).contains(&mean), "mean {mean}");
    }
}
