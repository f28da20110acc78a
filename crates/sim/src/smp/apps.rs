//! MPI skeletons by communication degree — seed `001_cc73854eda2a0ea6.txt` §5 (CG, BT, Sweep3D, MG, FT, EP),
//! shapes and bands from `/work/shared/notes/seeds-001-004.md` §001.5.6 (all [A]: the paper gives no sizes).
//!
//! A skeleton is one iteration of every rank as a list of [`Step`]s: compute, send, and receive a number of
//! messages of one *phase* (a send and the receive it completes carry the same phase; the tag of a message is
//! `iteration · phases + phase`, so a message of the next iteration never completes this one's receive).
//!
//! | app | degree | one iteration |
//! |---|---|---|
//! | CG | high | compute; halo with ranks r ± 1; two allreduces (recursive doubling: ⌈log₂ P⌉ pairwise rounds) |
//! | BT | high | compute; exchange with the four neighbours of a 2-D grid, large faces (ADI) |
//! | Sweep3D | high | two sweeps from opposite corners of a 2-D grid, each a pipeline of 20 blocks: receive from the upstream neighbours, compute a block, send downstream |
//! | MG | medium | four levels down, each compute (÷8 per level) and halo ± 1 (÷4); an allreduce (the norm) |
//! | FT | medium | compute; an all-to-all transpose |
//! | EP | low | a long compute; an allreduce of the tallies |
//!
//! Compute steps draw their length uniformly in `mean · [1 − J, 1 + J]`, independently per rank and step: `J`
//! stands for the load imbalance and system noise that make ranks wait for each other, and is what calibrates
//! each app to its band of *dedicated* time blocked in MPI (64 ranks on 64 CPUs, FIFO): high 30–50 %, medium
//! 15–30 %, low < 5 % (measured by `tests::dedicated_blocked_fraction_is_in_each_apps_band`; the figures are in
//! `docs/sim-scs.md`).

use cosched_policy::{Nanos, MICROS, MILLIS};
use serde::{Deserialize, Serialize};

/// One step of a rank's iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Use `mean_ns · (1 ± jitter)` of CPU.
    Compute { mean_ns: Nanos },
    /// Send `bytes` to rank `to`, tagged with `phase`.
    Send { to: u32, bytes: u32, phase: u16 },
    /// Wait until `count` messages of `phase` (this iteration) have arrived, then consume them.
    Recv { count: u32, phase: u16 },
}

/// How much of its dedicated time an application spends blocked in MPI (§5: "communication degree").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Degree {
    High,
    Medium,
    Low,
}

impl Degree {
    /// The band of dedicated blocked fraction an app of this degree is calibrated to (notes §001.5.6).
    pub fn band(self) -> (f64, f64) {
        match self {
            Degree::High => (0.30, 0.50),
            Degree::Medium => (0.15, 0.30),
            Degree::Low => (0.0, 0.05),
        }
    }
}

/// The seed's applications.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum App {
    Cg,
    Bt,
    Sweep3d,
    Mg,
    Ft,
    Ep,
}

impl App {
    pub const ALL: [App; 6] = [App::Cg, App::Bt, App::Sweep3d, App::Mg, App::Ft, App::Ep];

    pub fn name(self) -> &'static str {
        match self {
            App::Cg => "CG",
            App::Bt => "BT",
            App::Sweep3d => "Sweep3D",
            App::Mg => "MG",
            App::Ft => "FT",
            App::Ep => "EP",
        }
    }

    pub fn degree(self) -> Degree {
        match self {
            App::Cg | App::Bt | App::Sweep3d => Degree::High,
            App::Mg | App::Ft => Degree::Medium,
            App::Ep => Degree::Low,
        }
    }

    /// The relative spread `J` of each compute step.
    pub fn jitter(self) -> f64 {
        match self {
            App::Cg => 0.6,
            App::Bt => 0.7,
            App::Sweep3d => 0.15,
            App::Mg => 0.3,
            App::Ft => 0.2,
            App::Ep => 0.03,
        }
    }

    /// Total mean compute of one rank's iteration (the sum of its compute steps), for sizing jobs.
    pub fn compute_per_iteration(self) -> Nanos {
        match self {
            App::Cg => 20 * MILLIS,
            App::Bt => 40 * MILLIS,
            App::Sweep3d => 40 * MILLIS,
            App::Mg => 30 * MILLIS,
            App::Ft => 40 * MILLIS,
            App::Ep => 500 * MILLIS,
        }
    }

    /// Rough dedicated length of one iteration (compute stretched by the wait it causes), used only to size a
    /// job's number of iterations for a wanted dedicated run time; the measured one is in `docs/sim-scs.md`.
    pub fn nominal_iteration(self) -> Nanos {
        let (low, high) = self.degree().band();
        let blocked = (low + high) / 2.0;
        (self.compute_per_iteration() as f64 / (1.0 - blocked)) as Nanos
    }

    /// One iteration of every rank of a `procs`-process job: `skeleton[rank]`, and the number of phases.
    pub fn skeleton(self, procs: u32) -> Skeleton {
        let mut s = Skeleton::new(procs);
        let c = self.compute_per_iteration();
        match self {
            App::Cg => {
                s.compute(c);
                s.ring_halo(16 * 1024);
                s.allreduce(8);
                s.allreduce(8);
            }
            App::Bt => {
                s.compute(c);
                s.grid_halo(200 * 1024);
            }
            App::Sweep3d => {
                const BLOCKS: u32 = 20;
                for corner in [false, true] {
                    for _ in 0..BLOCKS {
                        s.wavefront_block(c / (2 * Nanos::from(BLOCKS)), corner, 4 * 1024);
                    }
                }
            }
            App::Mg => {
                let mut compute = c * 7 / 8;
                let mut halo = 64 * 1024;
                for _ in 0..4 {
                    s.compute(compute);
                    s.ring_halo(halo);
                    compute /= 8;
                    halo /= 4;
                }
                s.allreduce(8);
            }
            App::Ft => {
                s.compute(c);
                s.all_to_all(16 * 1024);
            }
            App::Ep => {
                s.compute(c);
                s.allreduce(64);
            }
        }
        s
    }
}

/// One iteration of every rank, built phase by phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skeleton {
    pub ranks: Vec<Vec<Step>>,
    pub phases: u16,
}

impl Skeleton {
    fn new(procs: u32) -> Self {
        Skeleton {
            ranks: vec![Vec::new(); procs as usize],
            phases: 0,
        }
    }

    fn procs(&self) -> u32 {
        self.ranks.len() as u32
    }

    fn next_phase(&mut self) -> u16 {
        let phase = self.phases;
        self.phases += 1;
        phase
    }

    /// Every rank computes `mean_ns`.
    fn compute(&mut self, mean_ns: Nanos) {
        for steps in &mut self.ranks {
            steps.push(Step::Compute { mean_ns });
        }
    }

    /// One phase: every rank sends `bytes` to each of `peers(rank)` and then receives one message from each rank
    /// that names it (the patterns here are symmetric, so that is `peers(rank).len()`).
    fn exchange(&mut self, bytes: u32, peers: impl Fn(u32, u32) -> Vec<u32>) {
        let phase = self.next_phase();
        let procs = self.procs();
        for rank in 0..procs {
            let to = peers(rank, procs);
            let steps = &mut self.ranks[rank as usize];
            for &peer in &to {
                steps.push(Step::Send {
                    to: peer,
                    bytes,
                    phase,
                });
            }
            if !to.is_empty() {
                steps.push(Step::Recv {
                    count: to.len() as u32,
                    phase,
                });
            }
        }
    }

    /// Halo exchange with the ranks `r − 1` and `r + 1` (no wrap).
    fn ring_halo(&mut self, bytes: u32) {
        self.exchange(bytes, |r, p| {
            let mut peers = Vec::with_capacity(2);
            if r > 0 {
                peers.push(r - 1);
            }
            if r + 1 < p {
                peers.push(r + 1);
            }
            peers
        });
    }

    /// Halo exchange with the four neighbours on a `px × py` grid (no wrap).
    fn grid_halo(&mut self, bytes: u32) {
        let (px, _) = grid(self.procs());
        self.exchange(bytes, move |r, p| {
            let (x, y) = (r % px, r / px);
            let mut peers = Vec::with_capacity(4);
            if x > 0 {
                peers.push(r - 1);
            }
            if x + 1 < px && r + 1 < p {
                peers.push(r + 1);
            }
            if y > 0 {
                peers.push(r - px);
            }
            if r + px < p {
                peers.push(r + px);
            }
            peers
        });
    }

    /// An allreduce by recursive doubling: in round `k` rank `r` exchanges with `r XOR 2^k` (when that rank
    /// exists).
    fn allreduce(&mut self, bytes: u32) {
        let procs = self.procs();
        let mut distance = 1;
        while distance < procs {
            self.exchange(bytes, move |r, p| {
                let partner = r ^ distance;
                if partner < p {
                    vec![partner]
                } else {
                    Vec::new()
                }
            });
            distance *= 2;
        }
    }

    /// Every rank sends `bytes` to every other.
    fn all_to_all(&mut self, bytes: u32) {
        self.exchange(bytes, |r, p| (0..p).filter(|&q| q != r).collect());
    }

    /// One block of a wavefront over the `px × py` grid, from the corner (0, 0) or, when `reverse`, the
    /// opposite one: receive from the upstream neighbours, compute `mean_ns`, send downstream.
    fn wavefront_block(&mut self, mean_ns: Nanos, reverse: bool, bytes: u32) {
        let phase = self.next_phase();
        let procs = self.procs();
        let (px, py) = grid(procs);
        for rank in 0..procs {
            let (x, y) = (rank % px, rank / px);
            // In the reversed sweep, upstream is +x / +y.
            let (ux, uy) = if reverse {
                (x + 1 < px, y + 1 < py)
            } else {
                (x > 0, y > 0)
            };
            let (dx, dy) = if reverse {
                (x > 0, y > 0)
            } else {
                (x + 1 < px, y + 1 < py)
            };
            let step = |forward: bool, along_x: bool| -> u32 {
                match (forward, along_x) {
                    (true, true) => rank + 1,
                    (false, true) => rank - 1,
                    (true, false) => rank + px,
                    (false, false) => rank - px,
                }
            };
            let steps = &mut self.ranks[rank as usize];
            let upstream = u32::from(ux) + u32::from(uy);
            if upstream > 0 {
                steps.push(Step::Recv {
                    count: upstream,
                    phase,
                });
            }
            steps.push(Step::Compute { mean_ns });
            if dx {
                steps.push(Step::Send {
                    to: step(!reverse, true),
                    bytes,
                    phase,
                });
            }
            if dy {
                steps.push(Step::Send {
                    to: step(!reverse, false),
                    bytes,
                    phase,
                });
            }
        }
    }
}

/// The 2-D grid `px × py` a job's ranks form, rank `r` at `(r mod px, r div px)`: `py` is the largest divisor
/// of `procs` not above its square root and `px = procs / py` (a prime count is one row).
pub fn grid(procs: u32) -> (u32, u32) {
    let mut py = (procs as f64).sqrt() as u32;
    while py > 1 && !procs.is_multiple_of(py) {
        py -= 1;
    }
    let py = py.max(1);
    (procs / py, py)
}

/// The shared-memory transport: a message of `bytes` arrives `latency + bytes / bandwidth` after it is sent
/// (the seed's native SGI MPI over shared memory: "latency null").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transport {
    pub latency_us: f64,
    pub bandwidth_mb_s: f64,
}

impl Default for Transport {
    fn default() -> Self {
        // [A] a few µs and ~150 MB/s per copy on a 250 MHz R10000 Origin 2000.
        Transport {
            latency_us: 5.0,
            bandwidth_mb_s: 150.0,
        }
    }
}

impl Transport {
    pub fn delay(&self, bytes: u32) -> Nanos {
        let latency = self.latency_us * MICROS as f64;
        let transfer = f64::from(bytes) / (self.bandwidth_mb_s * 1e6) * 1e9;
        (latency + transfer).round() as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message sent in a phase is received in that phase: per phase, the messages sent to each rank equal
    /// the count its receive waits for.
    fn balanced(s: &Skeleton) {
        let procs = s.ranks.len();
        for phase in 0..s.phases {
            let mut sent = vec![0u32; procs];
            let mut expected = vec![0u32; procs];
            for (rank, steps) in s.ranks.iter().enumerate() {
                for step in steps {
                    match *step {
                        Step::Send { to, phase: p, .. } if p == phase => sent[to as usize] += 1,
                        Step::Recv { count, phase: p } if p == phase => expected[rank] += count,
                        _ => {}
                    }
                }
            }
            assert_eq!(sent, expected, "phase {phase}");
        }
    }

    #[test]
    fn every_skeleton_receives_exactly_what_it_sends() {
        for app in App::ALL {
            for procs in [1, 2, 7, 16, 60, 64] {
                let s = app.skeleton(procs);
                assert_eq!(s.ranks.len(), procs as usize);
                balanced(&s);
            }
        }
    }

    #[test]
    fn allreduce_over_64_ranks_takes_six_rounds() {
        let mut s = Skeleton::new(64);
        s.allreduce(8);
        assert_eq!(s.phases, 6);
        assert_eq!(
            s.ranks[5][0],
            Step::Send {
                to: 4,
                bytes: 8,
                phase: 0
            }
        );
    }

    #[test]
    fn grids_are_as_square_as_the_count_allows() {
        assert_eq!(grid(64), (8, 8));
        assert_eq!(grid(60), (10, 6));
        assert_eq!(grid(7), (7, 1));
    }

    #[test]
    fn transport_delay_is_latency_plus_size_over_bandwidth() {
        let t = Transport::default();
        // 5 µs + 150 KB at 150 MB/s (1 ms).
        assert_eq!(t.delay(150_000), 1_005_000);
    }
}
