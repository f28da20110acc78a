//! The real Self Co-Scheduling manager — seed `001_cc73854eda2a0ea6.txt` (Utrera, Corbalán, Labarta), §3.1
//! and §4.2: a FCFS launcher and a user-level CPU manager (CPUM) that share a machine by *space*. Each job
//! gets a partition of CPUs — here a cpuset cgroup — and the CPUM re-partitions at every quantum:
//!
//! ```text
//! initial(P, MPL) = ceil(P / MPL)                       a job starts on this many CPUs (eq. 1, rounded up)
//! admission       : strict FCFS — the queue's head starts iff Σ initial(running) + initial(head) <= CPUs
//! a job waits     → every running job shrinks back to its initial allocation
//! none waits      → the free CPUs are shared out equally (Re_allocation = Initial + Free / Running),
//!                   never more CPUs than processes
//! placement       : rank r of P on a partition of A CPUs → its CPU floor(r · A / P) (block, rank order)
//! ```
//! The rules are the policy core's (`cosched_policy::scs`); this crate applies them to a real machine:
//!
//! - [`db`]: the queue and the manager's state in SQLite, every transition one transaction with its history;
//! - [`plan`]: one quantum's decision (who starts, each partition's CPUs, shrinks before grows), pure;
//! - [`cgroup`]: cpuset cgroups on v1 or v2 (`<parent>/cosched-scs-<id>`);
//! - [`spawn`]: a job's command started as its submitter, born in its partition, with a start marker;
//! - [`pin`]: rank-order placement — each ranked process (MPI environment or `--rank`) pinned to its CPU;
//! - [`incpu`]: the in-CPU rules on each CPU's local queue (`--in-cpu rr|msg`: one SCHED_FIFO priority, the
//!   rank with the most unread bytes first), under a guardian and a watchdog;
//! - [`daemon`]: the quantum loop and the crash rules (a `kill -9` loses no job and runs none twice);
//! - [`socket`]: the submit socket — users submit, list and cancel without sudo, as the kernel says they are
//!   (`SO_PEERCRED`), never as the request says;
//! - [`cli`]: `cosched submit`, `queue`, `cancel` and `manager`.
//!
//! A job's command is started once, in its partition, with `COSCHED_SCS_PROCS` (its processes),
//! `COSCHED_SCS_CPUS` (its partition when it started), `COSCHED_SCS_JOB` and `COSCHED_SCS_CGROUP` (whose
//! `cpuset.cpus` holds its partition as it changes); an `mpirun` under it places its ranks inside the
//! partition; at every quantum the manager pins each process that carries a rank (Open MPI's, PMIx's or PMI's
//! rank variable, or `--rank N`) to its rank's CPU (`cosched_policy::scs::rank_slot`), again after each rewrite
//! of the partition (which resets every task's affinity); `--no-pin-ranks` leaves them free in the partition.

pub mod cgroup;
pub mod cli;
pub mod daemon;
pub mod db;
pub mod incpu;
pub mod pin;
pub mod plan;
pub mod socket;
pub mod spawn;
