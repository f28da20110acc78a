//! The per-node OS scheduler seam.
//!
//! Every CPU of every node is run by a timesharing scheduler that the simulator does not own: it only tells the
//! scheduler what happened (a process was admitted, woke up, blocked, was preempted, used up its quantum, a
//! second passed) and asks it who runs next. Coscheduling policies act through the same interface, exactly as
//! the seed's DCS driver acted through Solaris kernel interfaces (`000_e8004e1596fde6a5.txt` §3.3.2): the world
//! carries out a hook's commands ([`crate::hook::Command`]) by calling the operations below.
//!
//! Models: [`solaris_ts`] (Solaris 2.4 TS, seed `000` Table 1) and [`linux22`] (Linux 2.2 counters, goodness
//! and epochs, seed `003` §2) and [`nt4`] (Windows NT 4.0 Server, seed `002`), and [`round_robin_example`]
//! (an example: plain round robin, the template of a new model).
//!
//! ## Adding a model (issue 31)
//! Three files: the model's own file here (its scheduler, an [`OsScheduler`]; its `[os]` parameters, which
//! implement [`OsModelParameters`] and [`NewScheduler`]), its row in the model table ([`every_os_model`]) below,
//! and an experiment file under `experiments/sim/`. The `[os]` table's `model` names, [`OsModel`], its labels,
//! validation and the world's choice of scheduler all follow from the table; what the world asks of a model
//! beyond its scheduler (the NIC's scan period, the system's own threads) goes through [`OsModelParameters`].
//!
//! ## Operations a policy needs (seeds `000`–`004`, `/work/shared/notes/seeds-001-004.md`)
//! | operation | seeds | every model? |
//! |---|---|---|
//! | [`OsScheduler::boost_to_max`]: top priority, front of the queue | DCS (`000`, `002`), periodic boost (`001`) | yes (required) |
//! | [`OsScheduler::set_quantum`]: a per-process quantum | DYNAMICQ / STATICQ (`004`) | optional ([`OsOperation::SetQuantum`]) |
//! | [`OsScheduler::set_priority_bonus`]: a bonus added to the priority (Linux 2.2 `goodness += freq`) | predictive coscheduling (`003`), DYNAMICQ on top of it (`004`) | optional ([`OsOperation::SetPriorityBonus`]) |
//! | [`OsScheduler::migrate`]: move a process to another CPU of its node | SCS partitions (`001`) | optional ([`OsOperation::Migrate`]) |
//! | [`OsScheduler::set_goodness_freq`]: the PRED/DYN patch inside `goodness()`, fed by [`OsScheduler::socket_bytes`] | predictive coscheduling (`003`) | optional ([`OsOperation::GoodnessFreq`]) |
//! | [`OsScheduler::share_run_queue`]: one run queue per node, every CPU of it picks from it (`[os] run_queue = "shared"`) | Linux 2.2 on SMP nodes (`003` §2; the seed's were uniprocessors) | optional ([`OsOperation::SharedRunQueue`]) |
//!
//! A model says which optional operations it carries out ([`OsScheduler::supports`]); a hook says which it
//! needs ([`crate::hook::CoschedHook::operations`]); a run whose hook needs what its model lacks is refused
//! before it starts ([`crate::SimError::Unsupported`]). The default implementations answer
//! [`Unsupported`].
//!
//! ## Terminology
//! - `pid` — index of a simulated process (0..processes), `cpu` — global CPU index (node × cpus_per_node + k).
//! - run queue — the processes of a CPU that are runnable but not running (the running one is not in it).
//!   By default every CPU has its own run queue (Solaris 2.4 keeps one dispatch queue per CPU); a node with
//!   several CPUs therefore has several queues, and a process is on exactly one of them. It stays on that CPU
//!   until it is moved ([`OsScheduler::migrate`]); which CPU of its allowed set ([`CpuSet`]) a waking process
//!   goes to is the world's placement rule (see [`crate::world`]), the same for every model.
//! - shared run queue — with [`OsScheduler::share_run_queue`] (the scenario's `run_queue = "shared"`), one queue
//!   per node instead: [`OsScheduler::pick_next`] for any CPU of the node chooses among all of the node's
//!   runnable processes that are not running, and the process's CPU becomes the CPU that picked it (its *last
//!   CPU*, which the model may favour). Which CPU a woken or boosted process takes is then the model's rule, not
//!   the world's placement: an idle CPU of the node picks it up, else the model marks the CPU to preempt
//!   ([`OsScheduler::should_preempt`]). [`OsScheduler::run_queue_len`] of a CPU counts the node's queue.
//! - quantum — the CPU time a process may use before the scheduler demotes it.

use cosched_policy::predictive::FreqParams;
use cosched_policy::Nanos;
use serde::{Deserialize, Serialize};

/// The OS model table: one row per model — its name in experiment files (`[os] model = "..."`), its
/// [`OsModel`] variant, and its module with the type of its `[os]` parameters. Expanded here into the `pub mod`
/// lines and [`OsModel`], and in [`crate::world`] into the choice of scheduler; adding a model is a row here,
/// its own file and an experiment file (ARCHITECTURE.md, "Adding an OS model (simulator)").
macro_rules! every_os_model {
    ($then:ident) => {
        $then! {
            /// Solaris 2.4 TS dispatcher, seed `000` Table 1.
            "solaris-ts" SolarisTs(solaris_ts::SolarisTsParameters),
            /// Linux 2.2 counters, goodness and epochs, seed `003` §2.
            "linux-2.2" Linux22(linux22::Linux22Parameters),
            /// Windows NT 4.0 Server, seed `002`.
            "nt-4.0" Nt4(nt4::Nt4Parameters),
            /// An example: plain round robin, the template of a new model.
            "round-robin-example" RoundRobinExample(round_robin_example::RoundRobinExampleParameters),
        }
    };
}

/// Expands the model table ([`every_os_model`]) into the models' modules and [`OsModel`].
macro_rules! os_models {
    ($($(#[doc = $doc:literal])* $name:literal $variant:ident($module:ident::$parameters:ident),)*) => {
        $(pub mod $module;)*

        /// The node's own timesharing scheduler: one variant per row of the model table ([`every_os_model`]).
        ///
        /// In an experiment file it is the `[os]` table (or a configuration's `os = { model = "...", ... }`),
        /// tagged by `model`; each model's parameters reject unknown fields. Every model has the field
        /// `run_queue` ([`RunQueue`]; default `per-cpu`); a model that cannot share one queue among a node's CPUs
        /// refuses `shared` before the run starts.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "model")]
        pub enum OsModel {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant($module::$parameters),)*
        }

        impl OsModel {
            /// Its parameters, as the world and the scenario ask about them.
            pub fn parameters(&self) -> &dyn OsModelParameters {
                match self {
                    $(OsModel::$variant(parameters) => parameters,)*
                }
            }
        }
    };
}

every_os_model!(os_models);
// For the world's choice of scheduler (`crate::world`), by path: `crate::os::every_os_model!`.
pub(crate) use every_os_model;

impl OsModel {
    /// How the model's nodes share out their runnable processes among their CPUs.
    pub fn run_queue(&self) -> RunQueue {
        self.parameters().run_queue()
    }

    /// One line for run headers: the model and any change to its defaults; a shared run queue adds
    /// `, shared run queue`.
    pub fn label(&self) -> String {
        let mut label = self.parameters().label();
        if self.run_queue() == RunQueue::Shared {
            label += ", shared run queue";
        }
        label
    }
}

/// What the simulator asks of a model's `[os]` parameters, besides building its scheduler ([`NewScheduler`]).
pub trait OsModelParameters {
    /// How the model's nodes share out their runnable processes among their CPUs (the `run_queue` field).
    fn run_queue(&self) -> RunQueue;
    /// The model and any change to its defaults, for run headers, e.g. `solaris-ts, ts_slpret[n]=n`.
    fn label(&self) -> String;
    /// A bad parameter as (its field, what is wrong); checked before a run.
    fn validate(&self) -> Result<(), (String, String)> {
        Ok(())
    }
    /// How often the network interface reads the running thread, when the platform sets it (`None`: the
    /// world's default, seed `000`'s firmware).
    fn nic_scan(&self) -> Option<Nanos> {
        None
    }
    /// The system's own threads as (mean interval between bursts, mean burst) per CPU; `None` without them.
    fn system_activity(&self) -> Option<(Nanos, Nanos)> {
        None
    }
    /// Whether runs report the share of round trips in the fastest bin and above 2 ms (seed `002` Figure 3).
    fn reports_round_trip_tail(&self) -> bool {
        false
    }
}

/// How a model's `[os]` parameters build its scheduler for a cluster shape (validated parameters).
pub trait NewScheduler {
    type Scheduler: OsScheduler;
    fn new_scheduler(&self, nodes: u32, cpus_per_node: u32) -> Self::Scheduler;
}

/// [`OsScheduler::time_left`] of a model that ends quanta itself, at its clock ticks ([`nt4`]: NT charges a
/// quantum by ticks, not by the time run): the world then never expires the quantum on its own, and the model
/// asks for the switch through [`OsScheduler::should_preempt`] after [`OsScheduler::periodic_update`]. Far
/// enough away never to be reached, near enough that adding it to any simulated time cannot overflow.
pub const UNTIMED: Nanos = Nanos::MAX / 4;

/// The most CPUs one node may have: a [`CpuSet`] is a 64-bit mask.
pub const MAX_CPUS_PER_NODE: u32 = 64;

/// A set of CPUs of one node, by index within the node (bit `k` = the node's `k`-th CPU): a process's
/// affinity, as `sched_setaffinity` / a cpuset gives it on Linux.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(pub u64);

impl CpuSet {
    /// Only the node's `k`-th CPU.
    pub fn single(k: u32) -> Self {
        debug_assert!(k < MAX_CPUS_PER_NODE);
        CpuSet(1 << k)
    }

    /// The node's first `n` CPUs.
    pub fn first(n: u32) -> Self {
        if n >= MAX_CPUS_PER_NODE {
            CpuSet(u64::MAX)
        } else {
            CpuSet((1u64 << n) - 1)
        }
    }

    /// Whether the node's `k`-th CPU is in the set.
    pub fn contains(self, k: u32) -> bool {
        k < MAX_CPUS_PER_NODE && self.0 >> k & 1 == 1
    }

    /// The set holds exactly one CPU.
    pub fn is_single(self) -> bool {
        self.0.is_power_of_two()
    }

    /// No CPU at all.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The node-local CPU indices in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..MAX_CPUS_PER_NODE).filter(move |&k| self.contains(k))
    }
}

/// An optional operation of the OS model (the required ones are in every model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OsOperation {
    SetQuantum,
    SetPriorityBonus,
    Migrate,
    GoodnessFreq,
    SharedRunQueue,
}

impl OsOperation {
    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            OsOperation::SetQuantum => "set a per-process quantum",
            OsOperation::SetPriorityBonus => "add a priority (goodness) bonus",
            OsOperation::Migrate => "move a process to another CPU",
            OsOperation::GoodnessFreq => {
                "add the socket-queue frequency to goodness (the Linux 2.2 PRED/DYN patch)"
            }
            OsOperation::SharedRunQueue => {
                "keep one run queue per node that every CPU of the node picks from"
            }
        }
    }
}

/// A model was asked for an optional operation it does not carry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the OS model '{model}' cannot {}", operation.name())]
pub struct Unsupported {
    pub model: &'static str,
    pub operation: OsOperation,
}

/// A node OS scheduler model. The world calls these in a strict life cycle:
/// `admit` → (`pick_next` → running → one of `on_preempt` / `on_quantum_expiry` / `on_block` / `on_exit`)*,
/// with `on_wakeup` taking a blocked process back to its run queue.
pub trait OsScheduler {
    /// The model's short name, for logs.
    fn name(&self) -> &'static str;
    /// `Tq`: the shortest quantum any process can get (DCS fairness uses it).
    fn min_quantum(&self) -> Nanos;
    /// How often [`OsScheduler::periodic_update`] must run on each node, if at all.
    fn update_period(&self) -> Option<Nanos>;
    /// A new runnable process on `cpu`, put at the end of its run queue.
    fn admit(&mut self, pid: u32, cpu: u32);
    /// Removes the next process to run from `cpu`'s run queue (its node's, when shared: the process's CPU is then
    /// `cpu`) and marks it running; `None` if the queue is empty.
    fn pick_next(&mut self, cpu: u32) -> Option<u32>;
    /// CPU time the running process `pid` may still use before its quantum expires ([`UNTIMED`] when the model
    /// ends quanta at its own ticks).
    fn time_left(&self, pid: u32) -> Nanos;
    /// `pid` was taken off its CPU after running `ran` without using up its quantum; it stays runnable.
    fn on_preempt(&mut self, pid: u32, ran: Nanos);
    /// The running `pid` used up its quantum; it stays runnable (usually demoted).
    fn on_quantum_expiry(&mut self, pid: u32);
    /// The running `pid` blocked (sleeps) after running `ran`.
    fn on_block(&mut self, pid: u32, ran: Nanos);
    /// The running `pid` finished after running `ran`; it never runs again.
    fn on_exit(&mut self, pid: u32, ran: Nanos);
    /// The blocked `pid` becomes runnable again (message arrival, I/O completion).
    fn on_wakeup(&mut self, pid: u32);
    /// Raises the runnable, not running `pid` to the model's highest priority for a timesharing process, first
    /// in its queue (seed `000` §3.3.2; periodic boost, seed `001`). The caller then preempts the running
    /// process.
    fn boost_to_max(&mut self, pid: u32);
    /// The periodic housekeeping (Solaris `ts_update`) for the processes on `cpus`.
    fn periodic_update(&mut self, cpus: std::ops::Range<u32>);
    /// Whether the best process waiting on `cpu`'s run queue should preempt the running `running`.
    fn should_preempt(&self, cpu: u32, running: u32) -> bool;
    /// `R`: processes on `cpu`'s run queue (runnable, not running).
    fn run_queue_len(&self, cpu: u32) -> u32;
    /// The scheduling priority of `pid` (higher runs first), for logs and tests.
    fn priority(&self, pid: u32) -> u32;
    /// Counters worth reporting (name, value), e.g. wake-up boosts granted.
    fn counters(&self) -> Vec<(&'static str, u64)>;

    /// Whether the model carries out the optional `operation`.
    fn supports(&self, _operation: OsOperation) -> bool {
        false
    }
    /// From now on, every fresh quantum `pid` gets is `quantum` instead of the model's own value (`None`: the
    /// model's own again); the quantum in progress is left as it is. DYNAMICQ (seed `004`) sets it per epoch.
    fn set_quantum(&mut self, _pid: u32, _quantum: Option<Nanos>) -> Result<(), Unsupported> {
        Err(Unsupported {
            model: self.name(),
            operation: OsOperation::SetQuantum,
        })
    }
    /// Sets the bonus the model adds to `pid`'s priority when it picks the next process (Linux 2.2
    /// `goodness += freq`, seed `003`); it replaces the previous bonus. The caller then checks for preemption.
    fn set_priority_bonus(&mut self, _pid: u32, _bonus: i32) -> Result<(), Unsupported> {
        Err(Unsupported {
            model: self.name(),
            operation: OsOperation::SetPriorityBonus,
        })
    }
    /// Moves the queued or sleeping (not running) `pid` to `cpu`, a CPU of the same node: a queued process goes
    /// to the end of its level on `cpu`'s run queue (as a preempted one would), a sleeping one wakes there.
    fn migrate(&mut self, _pid: u32, _cpu: u32) -> Result<(), Unsupported> {
        Err(Unsupported {
            model: self.name(),
            operation: OsOperation::Migrate,
        })
    }

    /// From now on the CPUs of each node (`cpus_per_node` consecutive CPUs) share one run queue (see the module
    /// doc's terminology). Called once, before the first process is admitted.
    fn share_run_queue(&mut self, _cpus_per_node: u32) -> Result<(), Unsupported> {
        Err(Unsupported {
            model: self.name(),
            operation: OsOperation::SharedRunQueue,
        })
    }

    /// Installs the PRED/DYN patch (seed `003` Algorithm 2) for `pid`: each `goodness()` evaluation while its
    /// counter is positive samples its socket queues and adds the moving average `freq`
    /// (`cosched_policy::predictive::Freq::evaluate`). The queues come from [`OsScheduler::socket_bytes`].
    fn set_goodness_freq(&mut self, _pid: u32, _params: FreqParams) -> Result<(), Unsupported> {
        Err(Unsupported {
            model: self.name(),
            operation: OsOperation::GoodnessFreq,
        })
    }
    /// The bytes on `pid`'s socket to `peer` changed: `rmem_delta` received and not yet read (or, negative,
    /// read), `wmem_delta` sent and not yet acknowledged (or acknowledged). The world reports them only while
    /// a hook needs [`OsOperation::GoodnessFreq`]; a model that does not use them ignores them.
    fn socket_bytes(&mut self, _pid: u32, _peer: u32, _rmem_delta: i64, _wmem_delta: i64) {}
    /// `cpu`'s hardware counters counted `l1` L1 and `l2` L2 misses (the world's cache model,
    /// [`crate::cache`], reports them when the scenario has one); a model that does not read them ignores them.
    /// Linux 2.2 with DYNAMICQ reads their ratio at each epoch (seed `004`).
    fn cache_misses(&mut self, _cpu: u32, _l1: f64, _l2: f64) {}
    /// `pid` is an interactive user's process (seed `004`'s INTERACTIVE_USER: the node has a user at it while
    /// the process lives); a model without a use for it ignores it.
    fn interactive_user(&mut self, _pid: u32) {}
    /// `R` as a user-level fairness monitor last published it for `cpu`'s node (seed `002`: the average
    /// run-queue length, written to the NIC now and then), which DCS then reads instead of the exact
    /// [`OsScheduler::run_queue_len`]; `None` (the default): DCS reads the exact count.
    fn published_run_queue_len(&self, _cpu: u32) -> Option<u32> {
        None
    }
}

/// How a node's CPUs share out its runnable processes: the `[os]` table's `run_queue = "per-cpu" | "shared"`.
///
/// It is a field of the OS model (not of `[cluster]`) because it is the scheduler's own organisation —
/// Solaris 2.4 keeps a dispatch queue per CPU, Linux 2.2 and IRIX one run queue for the whole machine — and
/// because a configuration's `os = { ... }` may then set it, so one experiment compares both as lines of one
/// figure.
///
/// Read by hand rather than derived: `[os]` is an internally tagged enum, whose fields serde reads from a buffer
/// that loses their path, so the message itself names the field and the allowed values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunQueue {
    /// One run queue per CPU; a process stays on its CPU unless a hook moves it (every seed's experiments).
    #[default]
    PerCpu,
    /// One run queue per node: every CPU of the node picks from all of the node's runnable processes, and a
    /// woken process may run on any idle CPU of its node (Linux 2.2's single run queue; [`crate::os::linux22`]).
    /// Only a model that supports [`crate::os::OsOperation::SharedRunQueue`] runs it.
    Shared,
}

impl RunQueue {
    /// Every value, in the order messages list them.
    pub const ALL: [RunQueue; 2] = [RunQueue::PerCpu, RunQueue::Shared];

    pub(crate) fn is_per_cpu(&self) -> bool {
        *self == RunQueue::PerCpu
    }

    /// The allowed values for messages: `"per-cpu" or "shared"`.
    fn allowed() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|q| format!("\"{}\"", q.name()))
            .collect();
        names.join(" or ")
    }

    /// Its name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            RunQueue::PerCpu => "per-cpu",
            RunQueue::Shared => "shared",
        }
    }
}

impl<'de> Deserialize<'de> for RunQueue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = RunQueue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "run_queue = {}", RunQueue::allowed())
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<RunQueue, E> {
                RunQueue::ALL
                    .into_iter()
                    .find(|q| q.name() == value)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "run_queue = \"{value}\" is not a run queue; use {}",
                            RunQueue::allowed()
                        ))
                    })
            }
        }
        deserializer.deserialize_str(Name)
    }
}
