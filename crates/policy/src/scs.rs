//! Self Co-Scheduling (SCS) and the rules it shares with its baselines — seed `001_cc73854eda2a0ea6.txt`
//! (Utrera, Corbalán, Labarta), §3.1 and eq. 1; assumptions from `/work/shared/notes/seeds-001-004.md` §001.5.
//!
//! SCS shares a multiprocessor by *space*: each parallel job gets a partition of CPUs sized by the
//! multiprogramming level (MPL, the most processes a CPU holds), its processes are placed in rank order, and
//! inside a partition a CPU only ever holds processes of that one job, so a job competes only with itself.
//!
//! ## The rules (each one function here)
//! ```text
//! initial(P, MPL)   = ceil(P / MPL)                                   eq. 1, rounded up (notes §5.1)
//! admission         : strict FCFS — the head of the queue starts iff Σ initial(running) + initial(head) <= CPUs;
//!                     nothing behind a head that does not fit starts (no backfilling)          [T] + notes §5.3
//! partition         : a job waits  → every running job shrinks to initial                      [T] §3.1
//!                     none waits   → re_allocation = initial + free / running, the remainder
//!                                    one CPU each in ascending job order, never more CPUs than
//!                                    processes (water-filling)                                  [T] eq. 1, notes §5.1
//! placement         : rank r of P on A CPUs → the partition's CPU floor(r · A / P) (block)      [T] + notes §5.4
//! in-CPU wait       : BI (block at once) or SB (spin `spin`, then block)                        [T] §3.1
//! in-CPU next       : RR (the next runnable in the local queue) or Msg (the runnable process
//!                     with the most unconsumed messages, ties in RR order)                      [T] + notes §5.5
//! ```
//! The CS baseline (§3.2) uses the same in-CPU rules with no partitions: [`cs_placement`] puts a job's ranks
//! one per CPU on the least-loaded CPUs, so every local queue holds processes of up to MPL different jobs.
//! FIFO static space sharing is [`admit_fcfs`] with one CPU per process (MPL 1) and no re-allocation.
//!
//! Everything is a pure function of plain data; the simulator (`cosched-sim`, `smp`) calls them at each CPU
//! manager quantum and at each context switch.

use crate::Nanos;

/// The MPL the seed's first experiment uses (§5.1).
pub const DEFAULT_MPL: u32 = 4;
/// The largest MPL accepted: the seed stops at 6 because "MPL > 6 ≈ infinite" (Moreira et al.); 64 is a
/// generous bound that still catches a typo.
pub const MAX_MPL: u32 = 64;
/// The seed's spin-block times, "measured empirically" (§3.1): 800 and 1200 µs; 0 µs is BI.
pub const SEED_SPIN_TIMES_US: [u64; 2] = [800, 1200];

/// A job's request that cannot be met.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScsError {
    #[error("MPL 0: the multiprogramming level is the most processes per CPU, at least 1 (the seed uses 2, 4, 6)")]
    ZeroMpl,
    #[error("MPL {mpl} is above {max}; the seed uses 2, 4 and 6")]
    MplTooLarge { mpl: u32, max: u32 },
    #[error("a job needs at least one process")]
    NoProcesses,
    #[error(
        "a job of {procs} processes needs {needed} CPUs at MPL {mpl} (ceil({procs} / {mpl})), but the machine has \
         {cpus}: it could never start"
    )]
    JobTooLarge {
        procs: u32,
        mpl: u32,
        needed: u32,
        cpus: u32,
    },
}

/// Checks an MPL.
pub fn check_mpl(mpl: u32) -> Result<(), ScsError> {
    match mpl {
        0 => Err(ScsError::ZeroMpl),
        m if m > MAX_MPL => Err(ScsError::MplTooLarge { mpl, max: MAX_MPL }),
        _ => Ok(()),
    }
}

/// Eq. 1, rounded up: the CPUs a job of `procs` processes starts with, `ceil(procs / mpl)`, so that no CPU
/// holds more than `mpl` of its processes. An error if the MPL is bad or the job could never fit on `cpus`.
pub fn initial_allocation(procs: u32, mpl: u32, cpus: u32) -> Result<u32, ScsError> {
    check_mpl(mpl)?;
    if procs == 0 {
        return Err(ScsError::NoProcesses);
    }
    let needed = procs.div_ceil(mpl);
    if needed > cpus {
        return Err(ScsError::JobTooLarge {
            procs,
            mpl,
            needed,
            cpus,
        });
    }
    Ok(needed)
}

/// What the CPU manager knows of a job: its initial allocation and its number of processes (the most CPUs it
/// can use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    pub initial: u32,
    pub procs: u32,
}

/// Strict FCFS admission: how many jobs at the head of `queue` (in arrival order) start now, given the
/// running jobs' demands. Running jobs count at their initial allocation (they shrink back to it when a job
/// waits); the head starts iff its initial allocation fits in what is left, and nothing behind a head that does
/// not fit starts.
pub fn admit_fcfs(running: &[Demand], queue: &[Demand], cpus: u32) -> usize {
    let mut used: u32 = running.iter().map(|d| d.initial).sum();
    let mut admitted = 0;
    for job in queue {
        if used + job.initial > cpus {
            break;
        }
        used += job.initial;
        admitted += 1;
    }
    admitted
}

/// The partition sizes of the running jobs (same order as `running`). With a job waiting, every job shrinks
/// to its initial allocation. With none waiting, the free CPUs are shared out by `Re_allocation = Initial +
/// Free / Running`: one CPU at a time to each job in ascending order (so `free / running` each and the
/// remainder to the first jobs), skipping a job that already has a CPU per process.
pub fn partition(running: &[Demand], cpus: u32, job_waiting: bool) -> Vec<u32> {
    let mut sizes: Vec<u32> = running.iter().map(|d| d.initial).collect();
    if job_waiting {
        return sizes;
    }
    let used: u32 = sizes.iter().sum();
    let mut free = cpus.saturating_sub(used);
    while free > 0 {
        let mut gave = false;
        for (size, demand) in sizes.iter_mut().zip(running) {
            if free == 0 {
                break;
            }
            if *size < demand.procs {
                *size += 1;
                free -= 1;
                gave = true;
            }
        }
        if !gave {
            break;
        }
    }
    sizes
}

/// The CPUs of each partition after a re-partition: each job keeps the lowest `min(now, target)` of its
/// current CPUs (a shrinking job gives up its highest ones), then jobs that grow or start, in order, take the
/// lowest free CPUs. `current[j]` is job `j`'s CPUs now (empty for a job that starts), `targets[j]` its new
/// size; the targets must fit on `cpus`. Each returned set is sorted.
pub fn assign_cpus(current: &[Vec<u32>], targets: &[u32], cpus: u32) -> Vec<Vec<u32>> {
    assert_eq!(current.len(), targets.len());
    assert!(
        targets.iter().sum::<u32>() <= cpus,
        "partitions larger than the machine"
    );
    let mut taken = vec![false; cpus as usize];
    let mut out: Vec<Vec<u32>> = current
        .iter()
        .zip(targets)
        .map(|(have, &target)| {
            let mut keep = have.clone();
            keep.sort_unstable();
            keep.truncate(target as usize);
            for &c in &keep {
                taken[c as usize] = true;
            }
            keep
        })
        .collect();
    let mut free = (0..cpus).filter(|&c| !taken[c as usize]);
    for (set, &target) in out.iter_mut().zip(targets) {
        while (set.len() as u32) < target {
            set.push(free.next().expect("the targets fit on the machine"));
        }
        set.sort_unstable();
    }
    out
}

/// Rank-order (block) placement: the index, in a partition of `partition_cpus` CPUs, of rank `rank` of a job
/// of `procs` processes: `floor(rank · A / P)`. Consecutive ranks share a CPU, and no CPU gets more than
/// `ceil(P / A)` of them.
pub fn rank_slot(rank: u32, procs: u32, partition_cpus: u32) -> u32 {
    debug_assert!(rank < procs && partition_cpus > 0);
    (u64::from(rank) * u64::from(partition_cpus) / u64::from(procs)) as u32
}

/// CS placement (no partitions): the CPUs a job of `procs` processes runs on, rank `r` on the `r`-th, one rank
/// per CPU, taken as the `procs` least-loaded CPUs (ties: lowest CPU first) and listed in CPU order; `None`
/// when that would put more than `mpl` processes on a CPU (the job waits). `load[c]` is the processes CPU `c`
/// holds. With equal loads, rank `r` of every job goes to CPU `r` (notes §001.2).
pub fn cs_placement(load: &[u32], procs: u32, mpl: u32) -> Option<Vec<u32>> {
    if procs as usize > load.len() {
        return None;
    }
    let mut order: Vec<u32> = (0..load.len() as u32).collect();
    order.sort_by_key(|&c| (load[c as usize], c));
    let mut chosen: Vec<u32> = order[..procs as usize].to_vec();
    if chosen.iter().any(|&c| load[c as usize] + 1 > mpl) {
        return None;
    }
    chosen.sort_unstable();
    Some(chosen)
}

/// What a process does when its MPI receive cannot complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// BI: block at once.
    BlockImmediately,
    /// SB: spin this long on the CPU, then block.
    SpinBlock { spin_ns: Nanos },
}

impl Wait {
    /// BI for a spin time of 0, SB otherwise.
    pub fn from_spin(spin_ns: Nanos) -> Self {
        if spin_ns == 0 {
            Wait::BlockImmediately
        } else {
            Wait::SpinBlock { spin_ns }
        }
    }

    /// How long the process spins before it blocks.
    pub fn spin_ns(self) -> Nanos {
        match self {
            Wait::BlockImmediately => 0,
            Wait::SpinBlock { spin_ns } => spin_ns,
        }
    }
}

/// Who runs next on a CPU after its process blocked (the seed's "Context Switching routine").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// RR: the next runnable process in the local queue.
    RoundRobin,
    /// Msg: the runnable process with the most unconsumed messages.
    MostMessages,
}

/// One process of a CPU's local queue, as the in-CPU choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalProcess {
    /// Ready to run (not blocked, not finished).
    pub runnable: bool,
    /// Messages delivered to it and not yet received.
    pub unconsumed: u32,
}

/// The index in `queue` (a CPU's local queue, in its fixed order) of the process to run after the one at
/// `previous` left the CPU; `None` if none is runnable. RR scans `previous + 1, previous + 2, …` round the
/// queue, `previous` itself last; Msg takes the most unconsumed messages, ties broken in that same RR order.
pub fn choose_next(queue: &[LocalProcess], previous: usize, next: Next) -> Option<usize> {
    let n = queue.len();
    let rr_order = (1..=n).map(|k| (previous + k) % n);
    match next {
        Next::RoundRobin => rr_order.clone().find(|&i| queue[i].runnable),
        Next::MostMessages => {
            let mut best: Option<usize> = None;
            for i in rr_order {
                if !queue[i].runnable {
                    continue;
                }
                if best.is_none_or(|b| queue[i].unconsumed > queue[b].unconsumed) {
                    best = Some(i);
                }
            }
            best
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MICROS;

    fn demand(initial: u32, procs: u32) -> Demand {
        Demand { initial, procs }
    }

    #[test]
    fn initial_allocation_rounds_up() {
        // 64 processes at MPL 4: 16 CPUs (the seed's E1); at MPL 6: ceil(10.67) = 11.
        assert_eq!(initial_allocation(64, 4, 64), Ok(16));
        assert_eq!(initial_allocation(64, 6, 64), Ok(11));
        assert_eq!(initial_allocation(60, 2, 64), Ok(30));
        assert_eq!(initial_allocation(1, 4, 64), Ok(1));
        assert_eq!(initial_allocation(5, 4, 64), Ok(2));
    }

    #[test]
    fn bad_requests_are_errors_that_say_why() {
        assert_eq!(initial_allocation(8, 0, 64), Err(ScsError::ZeroMpl));
        assert_eq!(
            initial_allocation(8, 65, 64),
            Err(ScsError::MplTooLarge { mpl: 65, max: 64 })
        );
        assert_eq!(initial_allocation(0, 4, 64), Err(ScsError::NoProcesses));
        let err = initial_allocation(300, 4, 64).unwrap_err();
        assert_eq!(
            err,
            ScsError::JobTooLarge {
                procs: 300,
                mpl: 4,
                needed: 75,
                cpus: 64
            }
        );
        assert!(err.to_string().contains("needs 75 CPUs at MPL 4"), "{err}");
    }

    #[test]
    fn fcfs_admits_while_the_head_fits_and_never_backfills() {
        // 64 CPUs, 3 running at 16 each: 16 left. Head needs 16: starts; the next (1 CPU) does not fit after it.
        let running = [demand(16, 64); 3];
        assert_eq!(admit_fcfs(&running, &[demand(16, 64), demand(1, 4)], 64), 1);
        // Head needs 20 > 16: nothing starts, not even the small job behind it.
        assert_eq!(admit_fcfs(&running, &[demand(20, 60), demand(1, 4)], 64), 0);
        // Empty machine, E1: four 16-CPU jobs start, the fifth waits.
        assert_eq!(admit_fcfs(&[], &[demand(16, 64); 8], 64), 4);
    }

    #[test]
    fn partition_shrinks_all_when_a_job_waits() {
        let running = [demand(11, 64), demand(5, 20)];
        assert_eq!(partition(&running, 64, true), vec![11, 5]);
    }

    #[test]
    fn partition_shares_the_free_cpus_equally_remainder_to_the_first_jobs() {
        // 64 - (11 + 11 + 11) = 31 free over 3 jobs: 10 each, one more for the first: 22, 21, 21.
        let running = [demand(11, 64); 3];
        assert_eq!(partition(&running, 64, false), vec![22, 21, 21]);
        assert_eq!(partition(&running, 64, false).iter().sum::<u32>(), 64);
    }

    #[test]
    fn partition_never_gives_a_job_more_cpus_than_processes() {
        // A 6-process job (initial 2 at MPL 4) stops at 6 CPUs; the rest goes to the 64-process job.
        let running = [demand(2, 6), demand(16, 64)];
        assert_eq!(partition(&running, 64, false), vec![6, 58]);
        // All capped: CPUs stay free.
        assert_eq!(partition(&[demand(1, 3)], 64, false), vec![3]);
    }

    #[test]
    fn assign_keeps_cpus_shrinks_from_the_top_and_fills_from_the_bottom() {
        // Job 0 held 0..22, job 1 held 22..43; a third job arrives: both shrink to 16, the new one takes 16.
        let current = vec![(0..22).collect::<Vec<u32>>(), (22..43).collect(), vec![]];
        let sets = assign_cpus(&current, &[16, 16, 16], 64);
        assert_eq!(sets[0], (0..16).collect::<Vec<u32>>());
        assert_eq!(sets[1], (22..38).collect::<Vec<u32>>());
        let expected_new: Vec<u32> = (16..22).chain(38..48).collect();
        assert_eq!(sets[2], expected_new);
        // No CPU in two partitions.
        let mut all: Vec<u32> = sets.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 48);
    }

    #[test]
    fn block_placement_puts_consecutive_ranks_together() {
        // 64 ranks on 16 CPUs: 4 each, ranks 0-3 on slot 0, 60-63 on slot 15.
        assert_eq!(rank_slot(0, 64, 16), 0);
        assert_eq!(rank_slot(3, 64, 16), 0);
        assert_eq!(rank_slot(4, 64, 16), 1);
        assert_eq!(rank_slot(63, 64, 16), 15);
        // 10 ranks on 3 CPUs: floor(r · 3 / 10) gives 4, 3, 3.
        let slots: Vec<u32> = (0..10).map(|r| rank_slot(r, 10, 3)).collect();
        assert_eq!(slots, [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        // More CPUs than ranks (a grown partition is capped, but the formula still spreads them).
        assert_eq!(rank_slot(1, 2, 4), 2);
    }

    #[test]
    fn cs_places_one_rank_per_cpu_on_the_least_loaded_up_to_mpl() {
        // Equal loads: rank r on CPU r.
        assert_eq!(cs_placement(&[0; 8], 4, 2), Some(vec![0, 1, 2, 3]));
        // CPUs 0 and 1 hold 2 each: a 3-rank job goes to 2, 3 and then 0 (ties by id).
        assert_eq!(cs_placement(&[2, 2, 1, 1], 3, 3), Some(vec![0, 2, 3]));
        // At MPL 2 that would put a third process on CPU 0: the job waits.
        assert_eq!(cs_placement(&[2, 2, 1, 1], 3, 2), None);
        // More ranks than CPUs: never fits.
        assert_eq!(cs_placement(&[0; 4], 5, 6), None);
    }

    #[test]
    fn wait_rule_from_spin_time() {
        assert_eq!(Wait::from_spin(0), Wait::BlockImmediately);
        let sb = Wait::from_spin(SEED_SPIN_TIMES_US[0] * MICROS);
        assert_eq!(sb, Wait::SpinBlock { spin_ns: 800_000 });
        assert_eq!(sb.spin_ns(), 800_000);
    }

    fn p(runnable: bool, unconsumed: u32) -> LocalProcess {
        LocalProcess {
            runnable,
            unconsumed,
        }
    }

    #[test]
    fn round_robin_takes_the_next_runnable_after_the_previous_one() {
        let q = [p(true, 0), p(false, 3), p(true, 0), p(true, 5)];
        assert_eq!(choose_next(&q, 0, Next::RoundRobin), Some(2));
        assert_eq!(choose_next(&q, 2, Next::RoundRobin), Some(3));
        assert_eq!(choose_next(&q, 3, Next::RoundRobin), Some(0));
        // Only the previous one is runnable: it runs again.
        let alone = [p(true, 0), p(false, 0)];
        assert_eq!(choose_next(&alone, 0, Next::RoundRobin), Some(0));
        assert_eq!(choose_next(&[p(false, 1)], 0, Next::RoundRobin), None);
    }

    #[test]
    fn msg_takes_the_most_unconsumed_ties_in_round_robin_order() {
        let q = [p(true, 2), p(false, 9), p(true, 5), p(true, 5)];
        // The blocked process with 9 is skipped; 2 and 3 tie at 5: from previous = 2, RR order is 3, 0, 1, 2.
        assert_eq!(choose_next(&q, 2, Next::MostMessages), Some(3));
        assert_eq!(choose_next(&q, 3, Next::MostMessages), Some(2));
        assert_eq!(choose_next(&q, 0, Next::MostMessages), Some(2));
        // No messages anywhere: Msg falls back to RR.
        let idle = [p(true, 0), p(true, 0), p(true, 0)];
        assert_eq!(choose_next(&idle, 1, Next::MostMessages), Some(2));
    }
}
