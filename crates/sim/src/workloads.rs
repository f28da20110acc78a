//! The seed's workloads as programs placed on CPUs.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.2.
//!
//! ## Approach
//! Every workload becomes a list of jobs, each a set of processes placed on CPUs and running a program
//! ([`crate::process::Program`]), in this order (the pids follow it): the workload's parallel job, Mixed's
//! sequential jobs, the CPU-bound competitors (one job with role `Competitor`, if any), seed `004`'s `local`
//! benchmark (one job `local`, one process on each of its nodes), then the scenario's arriving parallel jobs
//! ([`crate::scenario::ArrivingJob`]). Every parallel job is measured ([`Job::work_expected`]); none is assumed
//! to be job 0. Each job says when it starts ([`JobStart`]).
//!
//! ## Placement
//! Node `n` has CPUs `n × cpus_per_node ..`. The parallel process of node `n` and the sequential jobs placed
//! on `n` run on the node's first CPU; the node's `k`-th competitor runs on CPU `k mod cpus_per_node`; rank
//! `r` of an arriving job runs on node `nodes[r]`, on that node's CPU holding the fewest processes so far
//! (the lowest on a tie). A process starts allowed only on its CPU; hooks may move it (see [`crate::hook`]).
//!
//! ## Algorithm (one body each; `repeat` times)
//! ```text
//! Latency (ranks 0, 1; N round trips):  p0: send(p1) recv iteration     p1: recv send(p0)
//! Barrier (all nodes, root 0):          root: send "passed" to 1..n-1, compute c, recv n-1 "at barrier",
//!                                             iteration
//!                                       others: recv "passed", compute c, send "at barrier" to root
//! Mixed SOR (all nodes, G×G grid):      rank i owns rows_i = G/n (+1 for the first G mod n ranks):
//!                                       compute rows_i × G × cell_ns, send a row (8 G bytes) to i-1 and i+1,
//!                                       recv from i-1 (port 0) and i+1 (port 1); rank 0: iteration
//! Sequential job:                       repeat { compute Exp(mean_burst) ; io-wait Exp(mean_io) } until it
//!                                       has computed total_cpu
//! IS (all ranks; seed 003):             compute c; send count_bytes to every other rank (port 0), recv n-1;
//!                                       send key_bytes to every other rank (port 1), recv n-1; rank 0: iteration
//!                                       (each rank sends to rank+1, rank+2, ... in turn, so the links stay busy)
//! MG (all ranks, ring; seed 003):       for l in 0, 1, .., L-1, L-2, .., 0: compute c / 8^l; send halo / 4^l to
//!                                       the right neighbour (its port 0) and the left (its port 1); recv port 0,
//!                                       recv port 1; rank 0: iteration after the V-cycle
//! Master–slave (seed 003):              master: send m to every slave; recv one reply per rs_slave; iteration
//!                                       r_slave: recv; compute c      rs_slave: recv; compute c; send m to master
//! Local (seed 004, node n < z):          repeat { compute b = Exp(share × interval); system call moving
//!                                       U[min, max] bytes; sleep b (1 − share) / share } until it has
//!                                       computed its CPU budget (the system calls' CPU counts too)
//! SP, BT (seed 004):                    MG's finest level alone: compute c; halo to both ring neighbours; recv
//! Competitor:                           compute forever
//! ```
//! The Latency iteration time is the round-trip time seen by p0; the Barrier and SOR iteration times are the
//! time between consecutive iterations of the root / rank 0.

use crate::process::{Op, Process, Program};
use crate::scenario::{ParallelProgram, Scenario, Workload};
use cosched_policy::Nanos;
use cosched_report::JobRole;

/// When a job starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStart {
    /// At time 0.
    AtStart,
    /// When job `j` has finished (Mixed in batch mode: one after another).
    AfterJob(u32),
    /// At this time (an arriving job); it does not exist before.
    At(Nanos),
}

/// A job: named processes with a role.
#[derive(Clone, Debug)]
pub struct Job {
    pub name: String,
    pub role: JobRole,
    pub processes: Vec<u32>,
    pub start: JobStart,
    /// A measured (parallel) job: the units of work it must complete (`Iteration`s of its root); `None` for
    /// sequential jobs and competitors.
    pub work_expected: Option<u64>,
    /// Its processes are interactive users (seed `004`'s `local` benchmark).
    pub interactive: bool,
}

/// Everything a run starts from.
#[derive(Clone, Debug)]
pub struct Setup {
    pub programs: Vec<Program>,
    pub processes: Vec<Process>,
    pub jobs: Vec<Job>,
}

/// Bytes of one SOR boundary row: `grid` doubles.
pub fn sor_row_bytes(grid: u32) -> u32 {
    grid.saturating_mul(8)
}

/// Rows of a `grid`-row matrix owned by rank `rank` of `ranks` (the first `grid mod ranks` ranks get one more).
pub fn sor_rows(grid: u32, ranks: u32, rank: u32) -> u32 {
    grid / ranks + u32::from(rank < grid % ranks)
}

/// The programs of a parallel job's ranks, whose pids are `pids` (rank r is `pids[r]`), with the units of
/// work the job must complete.
fn parallel_programs(program: &ParallelProgram, pids: &[u32]) -> (Vec<Program>, u64) {
    let ranks = pids.len() as u32;
    let program_of = |body, repeat| Program {
        body,
        repeat,
        cpu_budget_ns: None,
    };
    match *program {
        ParallelProgram::Latency {
            round_trips,
            message_bytes: bytes,
        } => {
            let ping = vec![
                Op::Send {
                    to: pids[1],
                    port: 0,
                    bytes,
                },
                Op::Recv { port: 0, count: 1 },
                Op::Iteration,
            ];
            let pong = vec![
                Op::Recv { port: 0, count: 1 },
                Op::Send {
                    to: pids[0],
                    port: 0,
                    bytes,
                },
            ];
            (
                vec![program_of(ping, round_trips), program_of(pong, round_trips)],
                round_trips,
            )
        }
        ParallelProgram::Barrier {
            iterations,
            compute_ns,
            message_bytes: bytes,
        } => {
            let mut root: Vec<Op> = pids[1..]
                .iter()
                .map(|&to| Op::Send { to, port: 0, bytes })
                .collect();
            root.push(Op::Compute(compute_ns));
            if ranks > 1 {
                root.push(Op::Recv {
                    port: 0,
                    count: ranks - 1,
                });
            }
            root.push(Op::Iteration);
            let mut programs = vec![program_of(root, iterations)];
            for _ in 1..ranks {
                let body = vec![
                    Op::Recv { port: 0, count: 1 },
                    Op::Compute(compute_ns),
                    Op::Send {
                        to: pids[0],
                        port: 0,
                        bytes,
                    },
                ];
                programs.push(program_of(body, iterations));
            }
            (programs, iterations)
        }
        ParallelProgram::Sor(sor) => {
            let bytes = sor_row_bytes(sor.grid);
            let programs = (0..ranks)
                .map(|rank| {
                    let cells = sor_rows(sor.grid, ranks, rank) as u64 * sor.grid as u64;
                    let mut body = vec![Op::Compute(cells * sor.cell_compute_ns)];
                    if rank > 0 {
                        body.push(Op::Send {
                            to: pids[rank as usize - 1],
                            port: 1,
                            bytes,
                        });
                    }
                    if rank + 1 < ranks {
                        body.push(Op::Send {
                            to: pids[rank as usize + 1],
                            port: 0,
                            bytes,
                        });
                    }
                    if rank > 0 {
                        body.push(Op::Recv { port: 0, count: 1 });
                    }
                    if rank + 1 < ranks {
                        body.push(Op::Recv { port: 1, count: 1 });
                    }
                    if rank == 0 {
                        body.push(Op::Iteration);
                    }
                    program_of(body, sor.iterations)
                })
                .collect();
            (programs, sor.iterations)
        }
        ParallelProgram::Is {
            iterations,
            compute_ns,
            count_bytes,
            key_bytes,
        } => {
            let programs = (0..ranks)
                .map(|rank| {
                    let others = || (1..ranks).map(move |k| pids[((rank + k) % ranks) as usize]);
                    let mut body = vec![Op::Compute(compute_ns)];
                    for (port, bytes) in [(0u8, count_bytes), (1, key_bytes)] {
                        body.extend(others().map(|to| Op::Send { to, port, bytes }));
                        if ranks > 1 {
                            body.push(Op::Recv {
                                port,
                                count: ranks - 1,
                            });
                        }
                    }
                    if rank == 0 {
                        body.push(Op::Iteration);
                    }
                    program_of(body, iterations)
                })
                .collect();
            (programs, iterations)
        }
        ParallelProgram::Mg {
            iterations,
            levels,
            compute_ns,
            halo_bytes,
        } => {
            let visits: Vec<u32> = (0..levels)
                .chain((0..levels.saturating_sub(1)).rev())
                .collect();
            let programs = (0..ranks)
                .map(|rank| {
                    let right = pids[((rank + 1) % ranks) as usize];
                    let left = pids[((rank + ranks - 1) % ranks) as usize];
                    let mut body = Vec::new();
                    for &l in &visits {
                        body.push(Op::Compute((compute_ns >> (3 * l.min(20))).max(1)));
                        if ranks > 1 {
                            let bytes = (halo_bytes >> (2 * l.min(15))).max(8);
                            body.push(Op::Send {
                                to: right,
                                port: 0,
                                bytes,
                            });
                            body.push(Op::Send {
                                to: left,
                                port: 1,
                                bytes,
                            });
                            body.push(Op::Recv { port: 0, count: 1 });
                            body.push(Op::Recv { port: 1, count: 1 });
                        }
                    }
                    if rank == 0 {
                        body.push(Op::Iteration);
                    }
                    program_of(body, iterations)
                })
                .collect();
            (programs, iterations)
        }
        ParallelProgram::Sp {
            iterations,
            compute_ns,
            face_bytes,
        }
        | ParallelProgram::Bt {
            iterations,
            compute_ns,
            face_bytes,
        } => parallel_programs(
            &ParallelProgram::Mg {
                iterations,
                levels: 1,
                compute_ns,
                halo_bytes: face_bytes,
            },
            pids,
        ),
        ParallelProgram::MasterSlave {
            iterations,
            compute_ns,
            message_bytes: bytes,
        } => {
            // Slaves 1, 3, 5, ... receive only (r_slave); 2, 4, 6, ... also reply (rs_slave).
            let master = pids[0];
            let mut body: Vec<Op> = pids[1..]
                .iter()
                .map(|&to| Op::Send { to, port: 0, bytes })
                .collect();
            body.push(Op::Recv {
                port: 0,
                count: (ranks - 1) / 2,
            });
            body.push(Op::Iteration);
            let mut programs = vec![program_of(body, iterations)];
            for rank in 1..ranks {
                let mut body = vec![Op::Recv { port: 0, count: 1 }, Op::Compute(compute_ns)];
                if rank % 2 == 0 {
                    body.push(Op::Send {
                        to: master,
                        port: 0,
                        bytes,
                    });
                }
                programs.push(program_of(body, iterations));
            }
            (programs, iterations)
        }
    }
}

impl Setup {
    /// Adds a job with no process yet; returns its index.
    fn add_job(&mut self, name: &str, role: JobRole, start: JobStart) -> u32 {
        self.jobs.push(Job {
            name: name.into(),
            role,
            processes: Vec::new(),
            start,
            work_expected: None,
            interactive: false,
        });
        self.jobs.len() as u32 - 1
    }

    /// Adds a process of `job` on `cpu` (of `node`) running `program`; returns its pid.
    fn add_process(
        &mut self,
        node: u32,
        cpu: u32,
        cpus_per_node: u32,
        job: u32,
        program: Program,
    ) -> u32 {
        let index = self.programs.len() as u32;
        self.programs.push(program);
        let pid = self.processes.len() as u32;
        self.processes
            .push(Process::new(node, cpu, cpus_per_node, job, index));
        self.jobs[job as usize].processes.push(pid);
        pid
    }

    /// Adds the parallel job `job` running `program`, rank r on `placement[r]` = (node, cpu).
    fn add_parallel(
        &mut self,
        job: u32,
        program: &ParallelProgram,
        placement: &[(u32, u32)],
        cpus_per_node: u32,
    ) {
        let first = self.processes.len() as u32;
        let pids: Vec<u32> = (first..first + placement.len() as u32).collect();
        let (programs, work) = parallel_programs(program, &pids);
        for (program, &(node, cpu)) in programs.into_iter().zip(placement) {
            self.add_process(node, cpu, cpus_per_node, job, program);
        }
        self.jobs[job as usize].work_expected = Some(work);
    }

    /// The CPU of `node` holding the fewest processes so far, counting `pending` placements too (the lowest
    /// on a tie).
    fn least_loaded_cpu_with(&self, node: u32, cpus_per_node: u32, pending: &[(u32, u32)]) -> u32 {
        let first = node * cpus_per_node;
        (first..first + cpus_per_node)
            .min_by_key(|&cpu| {
                let held = self.processes.iter().filter(|p| p.cpu == cpu).count()
                    + pending.iter().filter(|&&(_, c)| c == cpu).count();
                (held, cpu)
            })
            .expect("a node has at least one CPU")
    }
}

/// Builds the jobs, processes and programs of a (validated) scenario.
pub fn build(scenario: &Scenario) -> Setup {
    let cpus = scenario.cpus_per_node;
    let first_cpu = |node: u32| node * cpus;
    let mut s = Setup {
        programs: Vec::new(),
        processes: Vec::new(),
        jobs: Vec::new(),
    };
    let program = scenario.workload.parallel();
    let parallel = s.add_job(program.name(), JobRole::Parallel, JobStart::AtStart);
    let ranks = program.own_ranks(scenario.nodes);
    let placement: Vec<(u32, u32)> = (0..ranks)
        .map(|rank| {
            let node = program.own_node(rank);
            (node, first_cpu(node))
        })
        .collect();
    s.add_parallel(parallel, &program, &placement, cpus);
    if let Workload::Mixed {
        sequential, batch, ..
    } = &scenario.workload
    {
        for job in sequential {
            // Batch: each job starts when the one before it (the SOR for the first) has finished.
            let start = if *batch {
                JobStart::AfterJob(s.jobs.len() as u32 - 1)
            } else {
                JobStart::AtStart
            };
            let index = s.add_job(&job.name, JobRole::Sequential, start);
            let mut body = vec![Op::ComputeExp {
                mean_ns: job.mean_burst_ns,
            }];
            if job.mean_io_ns > 0 {
                body.push(Op::IoWait {
                    mean_ns: job.mean_io_ns,
                });
            }
            let program = Program {
                body,
                repeat: u64::MAX,
                cpu_budget_ns: Some(job.total_cpu_ns),
            };
            s.add_process(job.node, first_cpu(job.node), cpus, index, program);
        }
    }
    if scenario.competitors_per_node > 0 {
        let index = s.add_job("competitors", JobRole::Competitor, JobStart::AtStart);
        for node in 0..scenario.nodes {
            for k in 0..scenario.competitors_per_node {
                let program = Program {
                    body: vec![Op::SpinForever],
                    repeat: 1,
                    cpu_budget_ns: None,
                };
                s.add_process(node, first_cpu(node) + k % cpus, cpus, index, program);
            }
        }
    }
    if let Some(local) = &scenario.local {
        let index = s.add_job("local", JobRole::Sequential, JobStart::AtStart);
        s.jobs[index as usize].interactive = true;
        let share = local.cpu_percent / 100.0;
        let interval = local.mean_syscall_interval_ns as f64;
        for node in 0..local.nodes {
            let program = Program {
                body: vec![
                    Op::ComputeExp {
                        mean_ns: (share * interval).round().max(1.0) as Nanos,
                    },
                    Op::Syscall {
                        min_bytes: local.syscall_min_bytes,
                        max_bytes: local.syscall_max_bytes,
                    },
                    Op::DutySleep {
                        cpu_permille: (local.cpu_percent * 10.0).round() as u32,
                    },
                ],
                repeat: u64::MAX,
                cpu_budget_ns: Some(local.cpu_ns),
            };
            s.add_process(node, first_cpu(node), cpus, index, program);
        }
    }
    for job in &scenario.arrivals {
        let index = s.add_job(&job.name, JobRole::Parallel, JobStart::At(job.arrival_ns));
        let mut placement = Vec::new();
        for &node in &job.nodes {
            // Count the ranks placed so far too, so two ranks on one node spread over its CPUs.
            let cpu = s.least_loaded_cpu_with(node, cpus, &placement);
            placement.push((node, cpu));
        }
        s.add_parallel(index, &job.program, &placement, cpus);
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
        assert_eq!(s.jobs[0].work_expected, Some(10));
        assert_eq!(s.jobs[1].work_expected, None);
    }

    #[test]
    fn an_arriving_job_comes_last_and_spreads_over_a_nodes_cpus() {
        // 2 nodes × 2 CPUs, no competitor; the latency ranks sit on CPUs 0 and 2 (each node's first). An
        // arriving 2-rank barrier on nodes [1, 1]: rank 0 goes to node 1's emptier CPU 3 (0 processes against
        // 1), rank 1 then to CPU 2 (1 each: the lowest wins). Its pids follow the latency's (2, 3) and its
        // messages go to its own pids.
        let mut scenario = Scenario::seed_latency(10, 0, SeedConfig::NoDcsSpinOnly);
        scenario.cpus_per_node = 2;
        scenario.arrivals.push(crate::scenario::ArrivingJob {
            name: "late".into(),
            arrival_ns: 1_000,
            nodes: vec![1, 1],
            program: ParallelProgram::Barrier {
                iterations: 3,
                compute_ns: 10,
                message_bytes: 8,
            },
        });
        let s = build(&scenario);
        let late = &s.jobs[1];
        assert_eq!(
            (late.start, late.work_expected),
            (JobStart::At(1_000), Some(3))
        );
        assert_eq!(late.processes, vec![2, 3]);
        assert_eq!((s.processes[2].cpu, s.processes[3].cpu), (3, 2));
        assert_eq!(
            s.programs[s.processes[2].program as usize].body[0],
            Op::Send {
                to: 3,
                port: 0,
                bytes: 8
            }
        );
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
