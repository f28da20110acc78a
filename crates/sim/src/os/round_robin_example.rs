//! An example OS model, not a seed's: plain round robin, the template of a new model (issue 31).
//!
//! Adding a model takes three files (ARCHITECTURE.md, "Adding an OS model (simulator)"): this one — the
//! scheduler ([`RoundRobinExample`], an [`OsScheduler`]), its `[os]` parameters ([`RoundRobinExampleParameters`])
//! and how they build it ([`NewScheduler`]) —, its row in the model table ([`crate::os::every_os_model`]), and an
//! experiment file (`experiments/sim/examples/round-robin-example.toml`).
//!
//! ## Rule
//! One FIFO run queue per CPU and one fixed quantum (`quantum_ms`, default 10). The process at the front runs;
//! at the end of its quantum, when it is preempted, or when it wakes up, it goes to the back. No priorities, so
//! no process ever preempts another on its own; [`OsScheduler::boost_to_max`], which every model must carry
//! out, moves a process to the front. It carries out none of the optional operations.

use super::{NewScheduler, OsModelParameters, OsScheduler};
use crate::os::RunQueue;
use cosched_policy::{Nanos, MILLIS};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The `[os]` table of `model = "round-robin-example"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundRobinExampleParameters {
    /// Every process's quantum, in milliseconds (default 10).
    #[serde(default = "default_quantum_ms")]
    pub quantum_ms: u64,
    #[serde(default, skip_serializing_if = "RunQueue::is_per_cpu")]
    pub run_queue: RunQueue,
}

fn default_quantum_ms() -> u64 {
    10
}

impl OsModelParameters for RoundRobinExampleParameters {
    fn run_queue(&self) -> RunQueue {
        self.run_queue
    }

    fn label(&self) -> String {
        format!("round-robin-example, quantum {} ms", self.quantum_ms)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if !(1..=10_000).contains(&self.quantum_ms) {
            return Err((
                "quantum_ms".into(),
                format!("{} is outside 1..=10000 ms (default 10)", self.quantum_ms),
            ));
        }
        Ok(())
    }
}

impl NewScheduler for RoundRobinExampleParameters {
    type Scheduler = RoundRobinExample;
    fn new_scheduler(&self, nodes: u32, cpus_per_node: u32) -> RoundRobinExample {
        RoundRobinExample::new(nodes * cpus_per_node, self.quantum_ms * MILLIS)
    }
}

/// Round robin over one FIFO queue per CPU.
#[derive(Clone, Debug)]
pub struct RoundRobinExample {
    quantum: Nanos,
    /// Each CPU's runnable, not running processes, the next to run first.
    queues: Vec<VecDeque<u32>>,
    /// Each process's CPU, by pid (a process stays where it was admitted).
    cpu_of: Vec<u32>,
}

impl RoundRobinExample {
    pub fn new(cpus: u32, quantum: Nanos) -> Self {
        RoundRobinExample {
            quantum,
            queues: vec![VecDeque::new(); cpus as usize],
            cpu_of: Vec::new(),
        }
    }

    fn enqueue_back(&mut self, pid: u32) {
        let cpu = self.cpu_of[pid as usize];
        self.queues[cpu as usize].push_back(pid);
    }
}

impl OsScheduler for RoundRobinExample {
    fn name(&self) -> &'static str {
        "round-robin-example"
    }
    fn min_quantum(&self) -> Nanos {
        self.quantum
    }
    fn update_period(&self) -> Option<Nanos> {
        None
    }
    fn admit(&mut self, pid: u32, cpu: u32) {
        if self.cpu_of.len() <= pid as usize {
            self.cpu_of.resize(pid as usize + 1, 0);
        }
        self.cpu_of[pid as usize] = cpu;
        self.enqueue_back(pid);
    }
    fn pick_next(&mut self, cpu: u32) -> Option<u32> {
        self.queues[cpu as usize].pop_front()
    }
    fn time_left(&self, _pid: u32) -> Nanos {
        self.quantum
    }
    fn on_preempt(&mut self, pid: u32, _ran: Nanos) {
        self.enqueue_back(pid);
    }
    fn on_quantum_expiry(&mut self, pid: u32) {
        self.enqueue_back(pid);
    }
    fn on_block(&mut self, _pid: u32, _ran: Nanos) {}
    fn on_exit(&mut self, _pid: u32, _ran: Nanos) {}
    fn on_wakeup(&mut self, pid: u32) {
        self.enqueue_back(pid);
    }
    fn boost_to_max(&mut self, pid: u32) {
        let queue = &mut self.queues[self.cpu_of[pid as usize] as usize];
        queue.retain(|&queued| queued != pid);
        queue.push_front(pid);
    }
    fn periodic_update(&mut self, _cpus: std::ops::Range<u32>) {}
    fn should_preempt(&self, _cpu: u32, _running: u32) -> bool {
        false
    }
    fn run_queue_len(&self, cpu: u32) -> u32 {
        self.queues[cpu as usize].len() as u32
    }
    fn priority(&self, _pid: u32) -> u32 {
        0
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_runs_its_queue_in_turn_and_a_boost_goes_first() {
        let mut os = RoundRobinExample::new(2, 10 * MILLIS);
        for (pid, cpu) in [(0, 0), (1, 0), (2, 0), (3, 1)] {
            os.admit(pid, cpu);
        }
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.time_left(0), 10 * MILLIS);
        os.on_quantum_expiry(0);
        assert_eq!(os.pick_next(0), Some(1));
        os.on_preempt(1, MILLIS);
        // Queue of CPU 0: 2, 0, 1; CPU 1 is apart.
        assert_eq!(os.run_queue_len(0), 3);
        assert_eq!(os.run_queue_len(1), 1);
        os.boost_to_max(1);
        assert_eq!(os.pick_next(0), Some(1));
        assert!(!os.should_preempt(0, 1));
        assert_eq!(os.pick_next(0), Some(2));
        assert_eq!(os.pick_next(0), Some(0));
        assert_eq!(os.pick_next(0), None);
        assert_eq!(os.pick_next(1), Some(3));
    }
}
