//! One CPU manager quantum's decision, a pure function of the running jobs (with their partitions now) and
//! the queue — seed 001 §3.1, eq. 1, applied through the policy core's rules (`cosched_policy::scs`):
//!
//! ```text
//! start     = admit_fcfs(running, queue)                 strict FCFS: the head starts iff it fits at its
//!                                                        initial allocation; nothing passes it
//! sizes     = partition(running + started, waiting)      a job waits → all at initial; none → equipartition
//! CPUs      = assign_cpus(now, sizes)                    shrinking jobs keep their lowest CPUs, growing and
//!                                                        new ones take the lowest free ones
//! ```
//! The writes come out ordered so that two partitions never share a CPU at any moment: every shrink first
//! (its new set is a subset of its old one), then the grows and the starts (which take only CPUs no job holds
//! after the shrinks).
//!
//! CPUs here are indices into the machine's CPU list (`crate::cgroup::Hierarchy::machine_cpus`).

use cosched_policy::scs::{admit_fcfs, assign_cpus, partition, Demand};

/// A running job as the plan sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    pub id: i64,
    pub demand: Demand,
    /// Its partition now (CPU indices).
    pub cpus: Vec<u32>,
}

/// A queued job, in FCFS order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub id: i64,
    pub demand: Demand,
}

/// A partition rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resize {
    pub id: i64,
    pub from: Vec<u32>,
    pub to: Vec<u32>,
}

/// What to do this quantum, in this order: `shrink`, then `grow`, then `start`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub shrink: Vec<Resize>,
    pub grow: Vec<Resize>,
    /// Jobs to start (FCFS order) with their partitions and initial allocations.
    pub start: Vec<(i64, u32, Vec<u32>)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.shrink.is_empty() && self.grow.is_empty() && self.start.is_empty()
    }
}

/// The quantum's plan on a machine of `cpus` CPUs. Running jobs whose initial allocations no longer fit (the
/// machine lost CPUs) are left as they are, and nothing starts.
pub fn plan(running: &[Running], queue: &[Queued], cpus: u32) -> Plan {
    let running_demand: Vec<Demand> = running.iter().map(|r| r.demand).collect();
    if running_demand.iter().map(|d| d.initial).sum::<u32>() > cpus {
        return Plan::default();
    }
    let queue_demand: Vec<Demand> = queue.iter().map(|q| q.demand).collect();
    let admitted = admit_fcfs(&running_demand, &queue_demand, cpus);
    let waiting = admitted < queue.len();
    let all: Vec<Demand> = running_demand
        .iter()
        .chain(&queue_demand[..admitted])
        .copied()
        .collect();
    let sizes = partition(&all, cpus, waiting);
    let current: Vec<Vec<u32>> = running
        .iter()
        .map(|r| r.cpus.iter().copied().filter(|&c| c < cpus).collect())
        .chain(std::iter::repeat(Vec::new()).take(admitted))
        .collect();
    let sets = assign_cpus(&current, &sizes, cpus);
    let mut out = Plan::default();
    for (r, to) in running.iter().zip(&sets) {
        let mut from = r.cpus.clone();
        from.sort_unstable();
        if &from == to {
            continue;
        }
        let resize = Resize {
            id: r.id,
            from: from.clone(),
            to: to.clone(),
        };
        if to.iter().all(|c| from.contains(c)) {
            out.shrink.push(resize);
        } else {
            out.grow.push(resize);
        }
    }
    for (q, to) in queue[..admitted].iter().zip(&sets[running.len()..]) {
        out.start.push((q.id, q.demand.initial, to.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(initial: u32, procs: u32) -> Demand {
        Demand { initial, procs }
    }

    fn run(id: i64, demand: Demand, cpus: &[u32]) -> Running {
        Running {
            id,
            demand,
            cpus: cpus.to_vec(),
        }
    }

    /// Applies a plan step by step and checks that no two partitions share a CPU after any single write.
    fn apply_checking_overlap(running: &[Running], p: &Plan) {
        let mut now: Vec<(i64, Vec<u32>)> =
            running.iter().map(|r| (r.id, r.cpus.clone())).collect();
        let check = |now: &Vec<(i64, Vec<u32>)>| {
            let mut all: Vec<u32> = now.iter().flat_map(|(_, c)| c.clone()).collect();
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n, "partitions overlap: {now:?}");
        };
        for r in p.shrink.iter().chain(&p.grow) {
            now.iter_mut().find(|(id, _)| *id == r.id).unwrap().1 = r.to.clone();
            check(&now);
        }
        for (id, _, cpus) in &p.start {
            now.push((*id, cpus.clone()));
            check(&now);
        }
    }

    #[test]
    fn a_lone_job_starts_at_initial_and_grows_to_one_cpu_per_process() {
        // 2 CPUs, MPL 2: a 2-process job starts on ceil(2/2) = 1 CPU; nothing waits, so equipartition gives it
        // the free CPU too (2 processes: at most 2 CPUs).
        let p = plan(
            &[],
            &[Queued {
                id: 1,
                demand: d(1, 2),
            }],
            2,
        );
        assert_eq!(p.start, vec![(1, 1, vec![0, 1])]);
        // Next quantum, nothing changes.
        assert!(plan(&[run(1, d(1, 2), &[0, 1])], &[], 2).is_empty());
    }

    #[test]
    fn an_arrival_that_fits_shrinks_the_others_first_then_starts() {
        let running = [run(1, d(1, 2), &[0, 1])];
        let p = plan(
            &running,
            &[Queued {
                id: 2,
                demand: d(1, 2),
            }],
            2,
        );
        assert_eq!(
            p.shrink,
            vec![Resize {
                id: 1,
                from: vec![0, 1],
                to: vec![0]
            }]
        );
        assert!(p.grow.is_empty());
        assert_eq!(p.start, vec![(2, 1, vec![1])]);
        apply_checking_overlap(&running, &p);
    }

    #[test]
    fn a_waiting_job_shrinks_everyone_to_initial_and_blocks_those_behind_it() {
        // 8 CPUs: job 1 (initial 2, 8 procs) holds 0-4, job 2 (initial 2) holds 5-7. The head needs 6: it waits
        // and both shrink to 2; a 1-CPU job behind it does not start (no backfilling).
        let running = [
            run(1, d(2, 8), &[0, 1, 2, 3, 4]),
            run(2, d(2, 8), &[5, 6, 7]),
        ];
        let queue = [
            Queued {
                id: 3,
                demand: d(6, 12),
            },
            Queued {
                id: 4,
                demand: d(1, 1),
            },
        ];
        let p = plan(&running, &queue, 8);
        assert!(p.start.is_empty());
        assert_eq!(p.shrink.len(), 2);
        assert_eq!(p.shrink[0].to, vec![0, 1]);
        assert_eq!(p.shrink[1].to, vec![5, 6]);
        apply_checking_overlap(&running, &p);
    }

    #[test]
    fn when_a_job_ends_the_free_cpus_are_shared_out_again() {
        // 8 CPUs, jobs of 8 processes at initial 2: job 2 ended, jobs 1 and 3 hold 2 each; 4 free → 2 each.
        let running = [run(1, d(2, 8), &[0, 1]), run(3, d(2, 8), &[4, 5])];
        let p = plan(&running, &[], 8);
        assert!(p.shrink.is_empty());
        assert_eq!(p.grow[0].to, vec![0, 1, 2, 3]);
        assert_eq!(p.grow[1].to, vec![4, 5, 6, 7]);
        apply_checking_overlap(&running, &p);
    }

    #[test]
    fn a_mixed_quantum_never_overlaps_at_any_step() {
        // Job 1 shrinks from 0-5 to 0-2 while job 2 (on 6-7) grows and job 3 starts: shrink first.
        let running = [
            run(1, d(2, 12), &[0, 1, 2, 3, 4, 5]),
            run(2, d(2, 12), &[6, 7]),
        ];
        let p = plan(
            &running,
            &[Queued {
                id: 3,
                demand: d(2, 12),
            }],
            8,
        );
        assert_eq!(p.shrink.len(), 1);
        assert_eq!(p.shrink[0].to, vec![0, 1, 2]);
        assert_eq!(p.grow.len(), 1);
        assert_eq!(p.grow[0].to, vec![3, 6, 7]);
        assert_eq!(p.start, vec![(3, 2, vec![4, 5])]);
        apply_checking_overlap(&running, &p);
    }

    #[test]
    fn running_jobs_too_big_for_the_machine_are_left_alone() {
        let running = [run(1, d(2, 4), &[0, 1]), run(2, d(2, 4), &[2, 3])];
        assert!(plan(
            &running,
            &[Queued {
                id: 3,
                demand: d(1, 1)
            }],
            2
        )
        .is_empty());
    }
}
