//! The seed's workloads as programs placed on CPUs.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.2.
//!
//! ## Approach
//! Every workload becomes a list of jobs, each a set of processes bound to CPUs and running a program
//! ([`crate::process::Program`]). The parallel job is job 0; CPU-bound competitors (if any) are one job with
//! role `Competitor`; Mixed adds one job per sequential program.
//!
//! ## Placement
//! Node `n` has CPUs `n × cpus_per_node ..`. The parallel process of node `n` and the sequential jobs placed
//! on `n` run on the node's first CPU; the node's `k`-th competitor runs on CPU `k mod cpus_per_node`.
//!
//! ## Algorithm (one body each; `repeat` times)
//! ```text
//! Latency (nodes 0, 1; N round trips):  p0: send(p1) recv iteration     p1: recv send(p0)
//! Barrier (all nodes, root 0):          root: send "passed" to 1..n-1, compute c, recv n-1 "at barrier",
//!                                             iteration
//!                                       others: recv "passed", compute c, send "at barrier" to root
//! Mixed SOR (all nodes, G×G grid):      rank i owns rows_i = G/n (+1 for the first G mod n ranks):
//!                                       compute rows_i × G × cell_ns, send a row (8 G bytes) to i-1 and i+1,
//!                                       recv from i-1 (port 0) and i+1 (port 1); rank 0: iteration
//! Sequential job:                       repeat { compute Exp(mean_burst) ; io-wait Exp(mean_io) } until it
//!                                       has computed total_cpu
//! Competitor:                           compute forever
//! ```
//! The Latency iteration time is the round-trip time seen by p0; the Barrier and SOR iteration times are the
//! time between consecutive iterations of the root / rank 0.

use crate::process::{Op, Process, Program};
use crate::scenario::{Scenario, Workload};
use cosched_report::JobRole;

/// A job: named processes with a role.
#[derive(Clone, Debug)]
pub struct Job {
    pub name: String,
    pub role: JobRole,
    pub processes: Vec<u32>,
}

/// Everything a run starts from.
#[derive(Clone, Debug)]
pub struct Setup {
    pub programs: Vec<Program>,
    pub processes: Vec<Process>,
    pub jobs: Vec<Job>,
    /// Units of work the parallel job must complete.
    pub work_expected: u64,
    /// Batch mode: jobs (other than competitors) start one after another, in job order.
    pub batch: bool,
}

/// Bytes of one SOR boundary row: `grid` doubles.
pub fn sor_row_bytes(grid: u32) -> u32 {
    grid.saturating_mul(8)
}

/// Rows of a `grid`-row matrix owned by rank `rank` of `ranks` (the first `grid mod ranks` ranks get one more).
pub fn sor_rows(grid: u32, ranks: u32, rank: u32) -> u32 {
    grid / ranks + u32::from(rank < grid % ranks)
}

/// Builds the jobs, processes and programs of a (validated) scenario.
pub fn build(scenario: &Scenario) -> Setup {
    let cpus = scenario.cpus_per_node;
    let first_cpu = |node: u32| node * cpus;
    let mut s = Setup {
        programs: Vec::new(),
        processes: Vec::new(),
        jobs: Vec::new(),
        work_expected: 0,
        batch: false,
    };
    let add_process =
        |s: &mut Setup, node: u32, cpu: u32, job: u32, body: Vec<Op>, repeat: u64, budget| {
            let program = s.programs.len() as u32;
            s.programs.push(Program {
                body,
                repeat,
                cpu_budget_ns: budget,
            });
            let pid = s.processes.len() as u32;
            s.processes.push(Process::new(node, cpu, job, program));
            s.jobs[job as usize].processes.push(pid);
            pid
        };

    let parallel_name = match &scenario.workload {
        Workload::Latency { .. } => "latency",
        Workload::Barrier { .. } => "barrier",
        Workload::Mixed { .. } => "sor",
    };
    s.jobs.push(Job {
        name: parallel_name.into(),
        role: JobRole::Parallel,
        processes: Vec::new(),
    });
    match &scenario.workload {
        Workload::Latency {
            round_trips,
            message_bytes,
        } => {
            let bytes = *message_bytes;
            s.work_expected = *round_trips;
            add_process(
                &mut s,
                0,
                first_cpu(0),
                0,
                vec![
                    Op::Send {
                        to: 1,
                        port: 0,
                        bytes,
                    },
                    Op::Recv { port: 0, count: 1 },
                    Op::Iteration,
                ],
                *round_trips,
                None,
            );
            add_process(
                &mut s,
                1,
                first_cpu(1),
                0,
                vec![
                    Op::Recv { port: 0, count: 1 },
                    Op::Send {
                        to: 0,
                        port: 0,
                        bytes,
                    },
                ],
                *round_trips,
                None,
            );
        }
        Workload::Barrier {
            iterations,
            compute_ns,
            message_bytes,
        } => {
            let n = scenario.nodes;
            let bytes = *message_bytes;
            s.work_expected = *iterations;
            // Root is pid 0, node i is pid i.
            let mut root: Vec<Op> = (1..n).map(|to| Op::Send { to, port: 0, bytes }).collect();
            root.push(Op::Compute(*compute_ns));
            if n > 1 {
                root.push(Op::Recv {
                    port: 0,
                    count: n - 1,
                });
            }
            root.push(Op::Iteration);
            add_process(&mut s, 0, first_cpu(0), 0, root, *iterations, None);
            for node in 1..n {
                let body = vec![
                    Op::Recv { port: 0, count: 1 },
                    Op::Compute(*compute_ns),
                    Op::Send {
                        to: 0,
                        port: 0,
                        bytes,
                    },
                ];
                add_process(&mut s, node, first_cpu(node), 0, body, *iterations, None);
            }
        }
        Workload::Mixed {
            sor,
            sequential,
            batch,
        } => {
            let n = scenario.nodes;
            let bytes = sor_row_bytes(sor.grid);
            s.work_expected = sor.iterations;
            s.batch = *batch;
            for rank in 0..n {
                let cells = sor_rows(sor.grid, n, rank) as u64 * sor.grid as u64;
                let mut body = vec![Op::Compute(cells * sor.cell_compute_ns)];
                if rank > 0 {
                    body.push(Op::Send {
                        to: rank - 1,
                        port: 1,
                        bytes,
                    });
                }
                if rank + 1 < n {
                    body.push(Op::Send {
                        to: rank + 1,
                        port: 0,
                        bytes,
                    });
                }
                if rank > 0 {
                    body.push(Op::Recv { port: 0, count: 1 });
                }
                if rank + 1 < n {
                    body.push(Op::Recv { port: 1, count: 1 });
                }
                if rank == 0 {
                    body.push(Op::Iteration);
                }
                add_process(&mut s, rank, first_cpu(rank), 0, body, sor.iterations, None);
            }
            for job in sequential {
                let index = s.jobs.len() as u32;
                s.jobs.push(Job {
                    name: job.name.clone(),
                    role: JobRole::Sequential,
                    processes: Vec::new(),
                });
                let mut body = vec![Op::ComputeExp {
                    mean_ns: job.mean_burst_ns,
                }];
                if job.mean_io_ns > 0 {
                    body.push(Op::IoWait {
                        mean_ns: job.mean_io_ns,
                    });
                }
                add_process(
                    &mut s,
                    job.node,
                    first_cpu(job.node),
                    index,
                    body,
                    u64::MAX,
                    Some(job.total_cpu_ns),
                );
            }
        }
    }
    if scenario.competitors_per_node > 0 {
        let index = s.jobs.len() as u32;
        s.jobs.push(Job {
            name: "competitors".into(),
            role: JobRole::Competitor,
            processes: Vec::new(),
        });
        for node in 0..scenario.nodes {
            for k in 0..scenario.competitors_per_node {
                add_process(
                    &mut s,
                    node,
                    first_cpu(node) + k % cpus,
                    index,
                    vec![Op::SpinForever],
                    1,
                    None,
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::SeedConfig;

    #[test]
    fn sor_rows_cover_the_grid() {
        // 128 rows over 7 ranks: 128 = 7 × 18 + 2, so ranks 0 and 1 get 19 rows, the other five 18.
        let rows: Vec<u32> = (0..7).map(|r| sor_rows(128, 7, r)).collect();
        assert_eq!(rows, vec![19, 19, 18, 18, 18, 18, 18]);
        assert_eq!(rows.iter().sum::<u32>(), 128);
    }

    #[test]
    fn latency_places_one_process_per_node_and_competitors_on_both() {
        // 2 job processes + 2 nodes × 3 competitors = 8 processes; competitors are the last job.
        let s = build(&Scenario::seed_latency(10, 3, SeedConfig::NoDcsSpinOnly));
        assert_eq!(s.processes.len(), 8);
        assert_eq!(s.jobs.len(), 2);
        assert_eq!(s.jobs[1].role, JobRole::Competitor);
        assert_eq!((s.processes[0].cpu, s.processes[1].cpu), (0, 1));
        assert_eq!(s.work_expected, 10);
    }

    #[test]
    fn barrier_root_broadcasts_then_waits_for_all_others() {
        // 7 nodes: root sends 6 "passed", computes, waits for 6 "at barrier".
        let s = build(&Scenario::seed_barrier(5, 0, SeedConfig::DcsSpinBlock));
        let root = &s.programs[0].body;
        assert_eq!(
            root.iter()
                .filter(|op| matches!(op, Op::Send { .. }))
                .count(),
            6
        );
        assert!(root.contains(&Op::Recv { port: 0, count: 6 }));
    }
}
