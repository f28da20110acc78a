//! Local computation: a floating-point loop, and a calibrated delay built from it.
//!
//! Seed `000_e8004e1596fde6a5.txt` §4.1.2 (Barrier: "all nodes enter a spin loop (local computation)", 78 µs
//! in the seed's runs) and seed `003_d5c4b72e5fa91aa6.txt` (`calcula`: floating-point operations without end;
//! the master-slave slaves' "simple floating-point computation"). The delay is a fixed amount of *work*, not a
//! clock wait: a preempted process takes longer, exactly as the seeds' loops did.
//!
//! ## Calibration
//! Run [`CALIBRATION_ITERATIONS`] iterations [`CALIBRATION_ROUNDS`] times and keep the fastest round: on a
//! loaded machine at least one round usually runs undisturbed, and a disturbed round is only ever slower.

use std::hint::black_box;
use std::time::Instant;

pub const CALIBRATION_ITERATIONS: u64 = 200_000;
pub const CALIBRATION_ROUNDS: u32 = 15;

/// `iterations` steps of a dependent floating-point recurrence starting at `seed`; returns the final value
/// (so the work cannot be optimised away).
#[inline(never)]
pub fn flops(iterations: u64, seed: f64) -> f64 {
    let mut x = black_box(seed);
    let mut y = 1.0f64;
    for _ in 0..iterations {
        // Both stay bounded (x → 3, y → x), so the result is always a finite number.
        x = x * 0.999_999_9 + 0.000_000_3;
        y = (y + x) * 0.5;
    }
    black_box(x + y)
}

/// A calibrated delay loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayLoop {
    /// Iterations of [`flops`] per microsecond of dedicated CPU.
    pub iterations_per_us: f64,
}

impl DelayLoop {
    /// Measure this CPU.
    pub fn calibrate() -> DelayLoop {
        let mut best = f64::INFINITY;
        for round in 0..CALIBRATION_ROUNDS {
            let start = Instant::now();
            black_box(flops(CALIBRATION_ITERATIONS, round as f64));
            best = best.min(start.elapsed().as_secs_f64());
        }
        DelayLoop {
            iterations_per_us: CALIBRATION_ITERATIONS as f64 / (best * 1e6).max(1e-3),
        }
    }

    /// Iterations for `us` microseconds of dedicated CPU.
    pub fn iterations_for_us(&self, us: f64) -> u64 {
        (us * self.iterations_per_us).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_plausible_and_the_loop_is_deterministic() {
        let delay = DelayLoop::calibrate();
        // Any CPU of the last 20 years does between 10 and 10 000 of these iterations per microsecond.
        assert!(
            (10.0..10_000.0).contains(&delay.iterations_per_us),
            "{delay:?}"
        );
        assert_eq!(flops(1000, 3.0), flops(1000, 3.0));
        assert_ne!(flops(1000, 3.0), flops(1000, 4.0));
        assert!(flops(100_000_000, 1e300).is_finite());
        assert_eq!(delay.iterations_for_us(0.0), 0);
    }
}
