//! DYNAMICQ: each task's quantum adapted at every epoch from the node's cache miss rate (seed `004`).
//!
//! Seed: `004_3903357666129396.txt` (Giné, Solsona, Hernández, Luque, Euro-Par 2002) §2, Algorithm 1, and §3.1
//! (MAX_MISS = 9 %, MAX_SLICE = 6.4 s; footnote 1: DEFAULT_QUANTUM = 200 ms, Linux's base quantum). The
//! ambiguities and the assumptions taken here are in `/work/shared/notes/seeds-001-004.md` (004 §1, §5).
//!
//! ## Problem
//! A quantum too short makes every task refill its cache after each switch (the L2 miss rate rises); a quantum
//! too long lets predictive coscheduling's requests wait behind whole slices of other jobs. Interactive users
//! want short quanta whatever the cache says.
//!
//! ## Approach
//! One pure function, [`next_quantum`], is Algorithm 1's body for one task; the OS model calls it for every
//! task of a CPU when it starts a new epoch (Linux 2.2's `counter/2 + priority` recalculation), with the miss
//! rate of the epoch that just ended and of the one before. The miss rate is per node (the hardware counters
//! count per CPU; notes 004 §5.1), so every task of a CPU sees the same `mr`.
//!
//! ## Terminology
//! - `mr[n]` — `L2 misses / L1 misses` during epoch `n` (a fraction, 0..=1).
//! - "rose" — `mr[n-1] < mr[n]`, a *strict* test on noisy values: the quantum drifts upwards even while the
//!   miss rate stays under MAX_MISS, one doubling per epoch whose miss rate is higher than the last.
//! - INTERACTIVE_USER — an interactive user is present on the node (here: a `local` benchmark process lives on
//!   it; notes 004 §5.2).
//!
//! ## Algorithm (Algorithm 1, for each active task)
//! ```text
//! if INTERACTIVE_USER:                                       q[n+1] = DEFAULT_QUANTUM
//! elif (mr[n] > MAX_MISS or mr[n-1] < mr[n]) and q[n] <= MAX_SLICE:  q[n+1] = 2 q[n]
//! elif q[n] > MAX_SLICE:                                     q[n+1] = q[n] / 2
//! else:                                                      q[n+1] = q[n]
//! ```
//! Under a miss rate that stays high, 0.2 s doubles to 0.4, 0.8, 1.6, 3.2, 6.4 and **12.8** s (6.4 ≤ MAX_SLICE
//! still doubles), then oscillates 6.4 ↔ 12.8 s: 12.8 > MAX_SLICE halves, 6.4 doubles again. With no
//! previous epoch (`mr[n-1]` unknown) only the MAX_MISS test can double.
//!
//! ## Parameters
//! | parameter | unit | default | source |
//! |---|---|---|---|
//! | `max_miss` | fraction | 0.09 | §3.1: "a MAX_MISS threshold equal to 9 %" |
//! | `max_slice_ns` | ns | 6.4 s | §3.1: "MAX_SLICE equal to 6.4 s" |
//! | `default_quantum_ns` | ns | 200 ms | §2 footnote 1 |

use crate::{Nanos, MILLIS};

/// Algorithm 1's constants.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DynamicqParams {
    /// MAX_MISS, a fraction of L1 misses (0.09 = 9 %).
    pub max_miss: f64,
    /// MAX_SLICE.
    pub max_slice_ns: Nanos,
    /// DEFAULT_QUANTUM: the quantum while an interactive user is present, and every task's first quantum.
    pub default_quantum_ns: Nanos,
}

impl Default for DynamicqParams {
    fn default() -> Self {
        DynamicqParams {
            max_miss: 0.09,
            max_slice_ns: 6_400 * MILLIS,
            default_quantum_ns: 200 * MILLIS,
        }
    }
}

impl DynamicqParams {
    /// Checks the constants; a problem comes back as the parameter at fault and what is wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.max_miss.is_finite() && (0.0..=1.0).contains(&self.max_miss)) {
            return Err((
                "max_miss",
                format!(
                    "{} is not a fraction in 0..=1 (the seed: 0.09)",
                    self.max_miss
                ),
            ));
        }
        if self.default_quantum_ns < 10 * MILLIS {
            return Err((
                "default_quantum",
                format!(
                    "{} ns is shorter than one 10 ms tick (the seed: 200 ms)",
                    self.default_quantum_ns
                ),
            ));
        }
        if self.max_slice_ns < self.default_quantum_ns {
            return Err((
                "max_slice",
                format!(
                    "{} ns is below the default quantum {} ns (the seed: 6.4 s over 200 ms)",
                    self.max_slice_ns, self.default_quantum_ns
                ),
            ));
        }
        Ok(())
    }
}

/// The miss rates a task's next quantum depends on: the epoch that just ended and the one before it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MissRates {
    /// `mr[n-1]`, `None` before the second measured epoch.
    pub previous: Option<f64>,
    /// `mr[n]`.
    pub current: f64,
}

/// Algorithm 1 for one task: its quantum for epoch `n + 1` from its quantum `quantum_ns` in epoch `n`.
pub fn next_quantum(
    quantum_ns: Nanos,
    miss: MissRates,
    interactive_user: bool,
    params: &DynamicqParams,
) -> Nanos {
    if interactive_user {
        return params.default_quantum_ns;
    }
    let rose = miss
        .previous
        .is_some_and(|previous| previous < miss.current);
    if (miss.current > params.max_miss || rose) && quantum_ns <= params.max_slice_ns {
        quantum_ns.saturating_mul(2)
    } else if quantum_ns > params.max_slice_ns {
        quantum_ns / 2
    } else {
        quantum_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: DynamicqParams = DynamicqParams {
        max_miss: 0.09,
        max_slice_ns: 6_400 * MILLIS,
        default_quantum_ns: 200 * MILLIS,
    };

    fn steady(current: f64) -> MissRates {
        MissRates {
            previous: Some(current),
            current,
        }
    }

    #[test]
    fn a_high_miss_rate_doubles_up_to_12_8_s_then_oscillates_with_6_4_s() {
        // 0.2 → 0.4 → 0.8 → 1.6 → 3.2 → 6.4 → 12.8 (6.4 ≤ MAX_SLICE still doubles) → 6.4 → 12.8 → ...
        let mut q = P.default_quantum_ns;
        let mut seen = vec![q];
        for _ in 0..9 {
            q = next_quantum(q, steady(0.20), false, &P);
            seen.push(q / MILLIS);
        }
        seen[0] /= MILLIS;
        assert_eq!(
            seen,
            vec![200, 400, 800, 1600, 3200, 6400, 12800, 6400, 12800, 6400]
        );
    }

    #[test]
    fn rose_is_strict_and_doubles_below_max_miss() {
        // mr 3 % after 2 %: it rose, so 1.6 s doubles although 3 % < 9 %.
        let rose = MissRates {
            previous: Some(0.02),
            current: 0.03,
        };
        assert_eq!(
            next_quantum(1_600 * MILLIS, rose, false, &P),
            3_200 * MILLIS
        );
        // Equal is not "rose": the quantum stays.
        assert_eq!(
            next_quantum(1_600 * MILLIS, steady(0.03), false, &P),
            1_600 * MILLIS
        );
        // Fell: stays.
        let fell = MissRates {
            previous: Some(0.04),
            current: 0.03,
        };
        assert_eq!(
            next_quantum(1_600 * MILLIS, fell, false, &P),
            1_600 * MILLIS
        );
        // No previous epoch: only MAX_MISS can double.
        let first = MissRates {
            previous: None,
            current: 0.03,
        };
        assert_eq!(next_quantum(200 * MILLIS, first, false, &P), 200 * MILLIS);
        // Exactly MAX_MISS is not above it.
        assert_eq!(
            next_quantum(200 * MILLIS, steady(0.09), false, &P),
            200 * MILLIS
        );
    }

    #[test]
    fn above_max_slice_halves_even_with_a_low_miss_rate() {
        assert_eq!(
            next_quantum(12_800 * MILLIS, steady(0.01), false, &P),
            6_400 * MILLIS
        );
    }

    #[test]
    fn an_interactive_user_resets_to_the_default_at_once() {
        assert_eq!(
            next_quantum(12_800 * MILLIS, steady(0.5), true, &P),
            200 * MILLIS
        );
    }

    #[test]
    fn bad_constants_are_refused_by_name() {
        let mut p = P;
        p.max_miss = 9.0;
        assert_eq!(p.validate().unwrap_err().0, "max_miss");
        let mut p = P;
        p.max_slice_ns = 100 * MILLIS;
        assert_eq!(p.validate().unwrap_err().0, "max_slice");
        assert!(P.validate().is_ok());
    }
}
