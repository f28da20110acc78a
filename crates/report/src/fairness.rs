//! Fairness `F = N × Tc / Te` of one process: how much of its fair CPU share it got.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.1, Equation 2.
//!
//! ## Terminology
//! - `N` (`sharing`) — processes sharing the process's CPU, itself included (a rank and K competitors: K + 1).
//! - `Tc` (`cpu`) — the process's CPU time over the window.
//! - `Te` (`wall`) — the window: the job's response time, or the time a competitor was measured over.
//!
//! `Tc` and `Te` are in one time unit, whichever (seconds in the lab, nanoseconds in the simulator): F has none.
//! `F = 1` is exactly a fair share, `F > 1` more than it, `F < 1` less. An empty window (`Te <= 0`) gives 0.
//!
//! A job's F is summarised over its processes with [`crate::stats::mean_min_max`].

/// `F = N × Tc / Te`; 0 for an empty window.
pub fn fairness(sharing: u32, cpu: f64, wall: f64) -> f64 {
    if wall <= 0.0 {
        return 0.0;
    }
    sharing as f64 * cpu / wall
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_is_n_times_cpu_over_wall() {
        // 1 job process + 2 competitors on a CPU (N = 3); the job got 1 s of CPU in 3 s: exactly its share.
        assert_eq!(fairness(3, 1.0, 3.0), 1.0);
        // Same CPU, 2 s of CPU in 3 s: twice its share.
        assert_eq!(fairness(3, 2.0, 3.0), 2.0);
        // The unit does not matter: 4 processes, 2.5e9 ns in 10e9 ns = 4 × 0.25 = 1.
        assert_eq!(fairness(4, 2.5e9, 10e9), 1.0);
    }

    #[test]
    fn an_empty_window_has_zero_fairness() {
        assert_eq!(fairness(3, 2.0, 0.0), 0.0);
        assert_eq!(fairness(3, 2.0, -1.0), 0.0);
    }
}
