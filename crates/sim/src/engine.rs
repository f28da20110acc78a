//! The discrete-event engine: simulated time, the event queue and the one RNG.
//!
//! ## Problem
//! A simulation must be fast (tens of millions of events per second) and exactly repeatable: the same scenario
//! and seed must give the identical result on every machine.
//!
//! ## Approach
//! Time is an integer number of nanoseconds. Pending events sit in a binary min-heap keyed by
//! `(time, sequence number)`: the sequence number is the insertion order, so events due at the same instant run
//! in the order they were scheduled. Keys are unique, so any correct heap pops the same sequence; this one is
//! written out (a `Vec` with hole-based sifting that stops as soon as the order holds) because the queue is
//! small — a few timers and messages per CPU — and the standard library's `pop` always sifts to the bottom. Events are small `Copy` values (indices, never boxes), so scheduling one
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
//! schedule(t, e): push (t, seq++, e)            requires t >= now; sift up
//! next():         take the root; move the last entry into its place; sift down; now = t; return e
//! ```

use cosched_policy::Nanos;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One pending event, ordered by `(time, seq)` — smallest first — packed into one `u128` key
/// (`time << 64 | seq`) so an ordering is a single integer comparison.
#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    key: u128,
    event: E,
}

/// A binary min-heap of entries: `heap[i] <= heap[2i + 1], heap[2i + 2]` by key.
struct MinHeap<E> {
    heap: Vec<Entry<E>>,
}

impl<E: Copy> MinHeap<E> {
    fn with_capacity(capacity: usize) -> Self {
        MinHeap {
            heap: Vec::with_capacity(capacity),
        }
    }

    #[inline]
    fn peek_key(&self) -> Option<u128> {
        self.heap.first().map(|e| e.key)
    }

    #[inline]
    fn push(&mut self, entry: Entry<E>) {
        let mut hole = self.heap.len();
        self.heap.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.heap[parent].key <= entry.key {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.heap.pop()?;
        let Some(&top) = self.heap.first() else {
            return Some(last);
        };
        let len = self.heap.len();
        let mut hole = 0;
        loop {
            let left = 2 * hole + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].key < self.heap[left].key {
                right
            } else {
                left
            };
            if last.key <= self.heap[child].key {
                break;
            }
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        self.heap[hole] = last;
        Some(top)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// The event queue, the clock and the RNG of one run.
pub struct Engine<E> {
    now: Nanos,
    seq: u64,
    heap: MinHeap<E>,
    rng: ChaCha8Rng,
}

impl<E: Copy> Engine<E> {
    /// A fresh engine at time 0 whose RNG is seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Engine {
            now: 0,
            seq: 0,
            heap: MinHeap::with_capacity(1024),
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
    #[allow(clippy::should_implement_trait)] // the engine is not an iterator: `next` also advances the clock
    pub fn next(&mut self) -> Option<E> {
        let entry = self.heap.pop()?;
        self.now = (entry.key >> 64) as Nanos;
        Some(entry.event)
    }

    /// Like [`Engine::next`], but only an event due at or before `limit`; later ones stay pending.
    #[inline]
    pub fn next_until(&mut self, limit: Nanos) -> Option<E> {
        match self.heap.peek_key() {
            Some(key) if (key >> 64) as Nanos <= limit => self.next(),
            _ => None,
        }
    }

    /// The time of the next pending event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek_key().map(|key| (key >> 64) as Nanos)
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

    #[test]
    fn the_heap_pops_every_key_in_order() {
        // Pseudo-random times with many ties, pops interleaved with pushes as in a run: every pop must be the
        // smallest pending (time, insertion order), as a sorted reference list says.
        let mut e: Engine<u32> = Engine::new(5);
        let mut rng = Engine::<()>::new(9);
        let mut pending: Vec<(u64, u32)> = Vec::new();
        for i in 0..3000u32 {
            let t = e.now() + rng.uniform_below(300);
            e.schedule(t, i);
            pending.push((t, i));
            if i % 3 != 0 {
                pending.sort_unstable();
                let expected = pending.remove(0);
                let popped = e.next().expect("pending");
                assert_eq!((e.now(), popped), expected);
            }
        }
        pending.sort_unstable();
        for expected in pending {
            let popped = e.next().expect("pending");
            assert_eq!((e.now(), popped), expected);
        }
        assert_eq!(e.next(), None);
    }
}
