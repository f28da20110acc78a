//! Coscheduling policy hooks: where a policy sees the simulated cluster and acts on it.
//!
//! Seeds: `000_e8004e1596fde6a5.txt` §3.3 and Figure 2 (DCS acts on message arrival); the next seeds act at
//! the same places (see `/work/shared/notes/seeds-001-004.md`): periodic boost (`001`) on its own timer,
//! predictive coscheduling (`003`) through a goodness bonus, DYNAMICQ (`004`) through a per-process quantum,
//! Self Co-Scheduling (`001`) by moving processes between CPUs when jobs arrive.
//!
//! ## Approach
//! The world calls a [`CoschedHook`] at six moments — a job starts, a message arrives, a process wakes up,
//! the OS model's periodic tick, the hook's own timer, and after a command was carried out — and gives it a
//! read-only [`WorldView`] of the cluster. The hook never touches the scheduler: it pushes [`Command`]s into a
//! [`Commands`] buffer, which the world carries out in order right after the call, through the OS model's
//! operations ([`crate::os::OsScheduler`]). A hook owns only its own state (for DCS: `Tp` per process, in
//! `cosched_policy::dcs::DcsState`), so its decisions are unit-tested with a made-up view and no world. The
//! rule itself is not written here: [`Dcs`] calls `cosched_policy::dcs`.
//!
//! One function builds the hook a scenario names: [`build`].
//!
//! ## Commands (what a hook can ask for)
//! | command | the world does | OS operation |
//! |---|---|---|
//! | [`Command::BoostToMax`] | top priority, front of the queue, preempt the running process (counted in `boosts_granted`) | [`crate::os::OsScheduler::boost_to_max`] |
//! | [`Command::RefuseBoost`] | nothing but count it (`boosts_refused`) | — |
//! | [`Command::SetPriorityBonus`] | the bonus, then preempt if the model now says so | `set_priority_bonus` |
//! | [`Command::SetQuantum`] | every fresh quantum of the process is this one | `set_quantum` |
//! | [`Command::Migrate`] | move the process to that CPU of its node and keep it there | `migrate` |
//! | [`Command::RestrictToCpus`] | its allowed CPU set; moved at once if its CPU is outside it | `migrate` |
//! | [`Command::ArmTimer`] | [`CoschedHook::on_timer`] on that node at that time, with the token | — |
//! | [`Command::SetGoodnessFreq`] | the PRED/DYN patch for the process; the world then reports its socket bytes | `set_goodness_freq` |
//!
//! A command whose process cannot take it (finished, not started, a boost of a running or sleeping process, a
//! CPU of another node) is *moot*: it is dropped and counted (`hook_commands_moot` in the measurement's
//! extras, present when not zero). [`CoschedHook::on_carried_out`] tells the hook which commands happened, so
//! DCS moves `Tp` only when its boost was carried out (the rule of `cosched_policy::dcs`).
//!
//! ## Timers
//! [`CoschedHook::periodic_timer`] declares a period of the hook's own, independent of the OS model's update
//! period ([`CoschedHook::on_tick`]): the engine calls [`CoschedHook::on_timer`] with [`Timer::Periodic`] on
//! every node, each `period` — from `period` on ([`TimerPhase::Aligned`]) or from a random phase per node in
//! `[0, period)` ([`TimerPhase::RandomPerNode`], drawn after the OS model's phases). A hook arms one-shot
//! timers with [`Command::ArmTimer`] and gets them back as [`Timer::Armed`].
//!
//! ## Terminology (what the world passes on an arrival)
//! - `now` — `Tc`; `receiver` — the pid the message is for; `receiver_running` — it is on its CPU now.
//! - `receiver_running_as_sampled` — whether the network interface *believes* the receiver is running: the
//!   seed's firmware reads the host's current LWP by DMA only once per [`RUNNING_SAMPLE_PERIOD`] (§3.3.1,
//!   "the firmware has only an approximation of the currently running thread"), and interrupts the host only
//!   when that sample is not the receiver (Figure 1). A receiver that lost its CPU less than a sample period
//!   ago therefore gets no DCS decision for this message. This is the literal Figure 1; the seed says cases
//!   of inaccurate information were dealt with by mechanisms described only in its reference \[15\] (§3.3.1),
//!   so none is modelled. It matters: a receiver whose quantum expires while it spins for a message due
//!   within ~100 µs is passed over by the interface and waits a whole competitor quantum (40–200 ms). In
//!   Barrier under `<DCS, spin-block>` this is the main reason the job gets less than its fair share
//!   (measured: with an exact view of the running process F rises from 0.58 to 0.75 at 1 competitor and
//!   from 0.86 to 1.27 at 8, 20,000 iterations). Re-examining the arrival at the interface's next sample
//!   was also measured: Barrier F 0.77 and 1.02, but Latency F 1.9–6.5 (the ping-pong pair then holds both
//!   CPUs), far from the seed's near-fair Latency — so that guess at \[15\] is not adopted either.
//! - `run_queue_len` — `R`: the processes on the receiver's CPU run queue (runnable, not running) at the
//!   instant the message arrives, *before* any wake-up it causes. A spinning (runnable, preempted) receiver
//!   therefore counts itself, a blocked one does not; the running process is never counted. This is the
//!   Solaris dispatcher's own count of the run queue, which is what the seed's driver could read. With a
//!   shared run queue (`[os] run_queue = "shared"`) it is the node's queue: every process of the node that
//!   waits for any of its CPUs.
//! - `min_quantum` — `Tq`, from the OS model (20 ms on Solaris 2.4).
//!
//! ## Algorithm
//! ```text
//! on arrival:  DCS: if the NIC's sample says the receiver runs: no interrupt, nothing
//!                   else consider(E, C, receiver_running, Tc, Tp[receiver], Tq, R)   (the driver knows exactly)
//!                   Boost  → push BoostToMax(receiver); the world raises the receiver to the maximum user
//!                            priority, puts it first in its queue and preempts the running process (seed
//!                            §3.3.2); carried out → Tp[receiver] = Tc
//!                   Refuse → push RefuseBoost(receiver): counted; the receiver waits for its turn; Tp stays
//! ```

use crate::os::{CpuSet, OsOperation};
use crate::process::Status;
use cosched_policy::config::PolicyConfig;
use cosched_policy::dcs::{DcsDecision, DcsParams, DcsState, NodeNow};
use cosched_policy::predictive::{next_to_boost, FreqParams, PbCandidate, PbParams};
use cosched_policy::{Nanos, MILLIS};

/// How often the seed's network-interface firmware reads the host's currently running LWP (§3.3.1).
pub const RUNNING_SAMPLE_PERIOD: Nanos = MILLIS;

/// What the world tells a hook when a message arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrivalView {
    pub now: Nanos,
    pub receiver: u32,
    pub receiver_running: bool,
    pub receiver_running_as_sampled: bool,
    pub run_queue_len: u32,
    pub min_quantum: Nanos,
}

/// One process as a hook sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessView {
    pub node: u32,
    /// The CPU it is on (running) or queued / asleep for (global index).
    pub cpu: u32,
    pub job: u32,
    pub status: Status,
    /// On its CPU now.
    pub running: bool,
    /// Messages delivered to it and not yet consumed by a receive (all ports).
    pub unconsumed_messages: u32,
    /// The CPUs of its node it may run on.
    pub allowed_cpus: CpuSet,
}

/// A read-only view of the simulated cluster, for hooks. The world implements it; a test implements it with
/// made-up processes.
pub trait WorldView {
    /// The current simulated time.
    fn now(&self) -> Nanos;
    /// Nodes in the cluster.
    fn nodes(&self) -> u32;
    /// CPUs of each node; node `n` has CPUs `n × cpus_per_node ..`.
    fn cpus_per_node(&self) -> u32;
    /// Processes in the run (pids `0..processes`), started or not.
    fn processes(&self) -> u32;
    /// One process.
    fn process(&self, pid: u32) -> ProcessView;
    /// The pids of job `job` (its ranks in order).
    fn job_processes(&self, job: u32) -> &[u32];
    /// The process running on `cpu`, if any.
    fn running_on(&self, cpu: u32) -> Option<u32>;
    /// `R`: processes on `cpu`'s run queue.
    fn run_queue_len(&self, cpu: u32) -> u32;
    /// `Tq` of the OS model.
    fn min_quantum(&self) -> Nanos;
}

/// Which timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The hook's own period ([`CoschedHook::periodic_timer`]).
    Periodic,
    /// A timer the hook armed with [`Command::ArmTimer`], with its token.
    Armed { token: u64 },
}

/// Where a periodic timer's ticks fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerPhase {
    /// On every node at `period`, `2 period`, ...
    Aligned,
    /// On each node from its own uniform random phase in `[0, period)`: the nodes' clocks are not aligned.
    RandomPerNode,
}

/// A hook's own periodic timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodicTimer {
    pub period: Nanos,
    pub phase: TimerPhase,
}

/// What a hook asks the world to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Raise the runnable, not running `pid` to the model's maximum priority, first in its queue, and preempt
    /// the running process of its CPU.
    BoostToMax { pid: u32 },
    /// The policy considered a boost of `pid` and refused it (counted in `boosts_refused`).
    RefuseBoost { pid: u32 },
    /// The model adds `bonus` to `pid`'s priority from now on (replacing the previous bonus).
    SetPriorityBonus { pid: u32, bonus: i32 },
    /// Every fresh quantum of `pid` is `quantum` (`None`: the model's own again).
    SetQuantum { pid: u32, quantum: Option<Nanos> },
    /// Move `pid` to `cpu` (global index, a CPU of its node) and keep it there (its allowed set becomes that
    /// CPU). A running process is preempted first.
    Migrate { pid: u32, cpu: u32 },
    /// `pid` may run only on `cpus` of its node; if its CPU is outside the set it moves at once (placement
    /// rule of [`crate::world`]).
    RestrictToCpus { pid: u32, cpus: CpuSet },
    /// Call [`CoschedHook::on_timer`] with [`Timer::Armed`]`{ token }` on `node` at `at` (now if `at` is past).
    ArmTimer { node: u32, at: Nanos, token: u64 },
    /// Install the PRED/DYN patch in `goodness()` for `pid` (seed `003`).
    SetGoodnessFreq { pid: u32, params: FreqParams },
}

impl Command {
    /// The optional OS operation carrying it out needs, if any.
    pub fn operation(&self) -> Option<OsOperation> {
        match self {
            Command::SetPriorityBonus { .. } => Some(OsOperation::SetPriorityBonus),
            Command::SetQuantum { .. } => Some(OsOperation::SetQuantum),
            Command::Migrate { .. } | Command::RestrictToCpus { .. } => Some(OsOperation::Migrate),
            Command::SetGoodnessFreq { .. } => Some(OsOperation::GoodnessFreq),
            Command::BoostToMax { .. } | Command::RefuseBoost { .. } | Command::ArmTimer { .. } => {
                None
            }
        }
    }
}

/// The command buffer a hook writes into; the world carries the commands out in order after the call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Commands {
    list: Vec<Command>,
}

impl Commands {
    /// Adds a command.
    pub fn push(&mut self, command: Command) {
        self.list.push(command);
    }
    /// [`Command::BoostToMax`].
    pub fn boost_to_max(&mut self, pid: u32) {
        self.push(Command::BoostToMax { pid });
    }
    /// [`Command::RefuseBoost`].
    pub fn refuse_boost(&mut self, pid: u32) {
        self.push(Command::RefuseBoost { pid });
    }
    /// [`Command::SetPriorityBonus`].
    pub fn set_priority_bonus(&mut self, pid: u32, bonus: i32) {
        self.push(Command::SetPriorityBonus { pid, bonus });
    }
    /// [`Command::SetQuantum`].
    pub fn set_quantum(&mut self, pid: u32, quantum: Option<Nanos>) {
        self.push(Command::SetQuantum { pid, quantum });
    }
    /// [`Command::Migrate`].
    pub fn migrate(&mut self, pid: u32, cpu: u32) {
        self.push(Command::Migrate { pid, cpu });
    }
    /// [`Command::RestrictToCpus`].
    pub fn restrict_to_cpus(&mut self, pid: u32, cpus: CpuSet) {
        self.push(Command::RestrictToCpus { pid, cpus });
    }
    /// [`Command::ArmTimer`].
    pub fn arm_timer(&mut self, node: u32, at: Nanos, token: u64) {
        self.push(Command::ArmTimer { node, at, token });
    }
    /// The commands so far, in order.
    pub fn as_slice(&self) -> &[Command] {
        &self.list
    }
    /// No command.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Takes every command out, keeping the buffer's capacity for the next call.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<Command>) {
        out.append(&mut self.list);
    }
}

/// A coscheduling policy seen from the simulator. Every method has a do-nothing default, so a policy writes
/// only the moments it acts on.
pub trait CoschedHook {
    /// The policy's short name, for messages.
    fn name(&self) -> &'static str;
    /// The optional OS operations its commands need; a run on a model lacking one is refused before it starts.
    fn operations(&self) -> &'static [OsOperation] {
        &[]
    }
    /// A period of its own, if it wants [`CoschedHook::on_timer`] called periodically on every node.
    fn periodic_timer(&self) -> Option<PeriodicTimer> {
        None
    }
    /// Job `job` started: its processes are admitted and runnable.
    fn on_job_start(&mut self, _world: &dyn WorldView, _job: u32, _out: &mut Commands) {}
    /// A message arrived for `arrival.receiver`, which is not on its CPU (a running receiver sees its message
    /// without help; the seed's interface does not even interrupt the host for it, Figure 1). Called before
    /// the wake-up the arrival may cause.
    fn on_arrival(&mut self, _world: &dyn WorldView, _arrival: &ArrivalView, _out: &mut Commands) {}
    /// The blocked `pid` became runnable again (after the OS model's own wake-up rule).
    fn on_wakeup(&mut self, _world: &dyn WorldView, _pid: u32, _out: &mut Commands) {}
    /// The OS model's periodic update ran on `node` (its update period).
    fn on_tick(&mut self, _world: &dyn WorldView, _node: u32, _out: &mut Commands) {}
    /// One of the hook's own timers fired on `node`.
    fn on_timer(&mut self, _world: &dyn WorldView, _node: u32, _timer: Timer, _out: &mut Commands) {
    }
    /// The world carried out `command` at `now` (moot commands are not reported).
    fn on_carried_out(&mut self, _now: Nanos, _command: &Command) {}
}

/// Whether the simulator runs `policy`: the kinds [`build`] has a hook for — `none`, `dcs`, `pred`, `dyn` and
/// `pb` (`pred` and `dyn` need an OS model with a `goodness()`, Linux 2.2) — and any kind that does nothing
/// (`cosched_policy::config::PolicyParameters::does_nothing`), run as [`NoCoscheduling`]. Others, such as the
/// agent's `budget`, are refused before a run ([`crate::scenario::Scenario::validate`], the experiment files)
/// until a hook models them. With [`build`], the one place that says what the simulator runs and how.
pub fn simulates(policy: &PolicyConfig) -> bool {
    matches!(
        policy,
        PolicyConfig::None(_)
            | PolicyConfig::Dcs(_)
            | PolicyConfig::Pred(_)
            | PolicyConfig::Dyn(_)
            | PolicyConfig::Pb(_)
    ) || policy.parameters().does_nothing()
}

/// The hook a scenario's coscheduling names: the one place where a policy is chosen.
///
/// Only policies [`crate::scenario::simulates`] are ever passed here: `Scenario::validate` refuses the others
/// (with the list of those it models) before a run starts.
pub fn build(policy: &PolicyConfig) -> Box<dyn CoschedHook> {
    match policy {
        PolicyConfig::None(_) => Box::new(NoCoscheduling),
        PolicyConfig::Dcs(dcs) => Box::new(Dcs::new(
            dcs.to_params()
                .expect("Scenario::validate checked the DCS parameters"),
        )),
        PolicyConfig::Pred(c) => Box::new(Predictive::new(
            "pred",
            c.to_params()
                .expect("Scenario::validate checked the PRED parameters"),
        )),
        PolicyConfig::Dyn(c) => Box::new(Predictive::new(
            "dyn",
            c.to_params()
                .expect("Scenario::validate checked the DYN parameters"),
        )),
        PolicyConfig::Pb(c) => Box::new(PeriodicBoost::new(
            c.to_params()
                .expect("Scenario::validate checked the PB parameters"),
        )),
        // A kind that never acts needs no hook of its own (the policy core's example).
        other if other.parameters().does_nothing() => Box::new(NoCoscheduling),
        other => unreachable!("Scenario::validate refuses the '{}' policy", other.kind()),
    }
}

/// Predictive coscheduling (seed `003`): the PRED or DYN patch in the OS model's `goodness()`, installed for
/// every process when its job starts (the seed's patch applies to every task; a task without sockets gets
/// nothing from it). The rule is `cosched_policy::predictive::Freq::evaluate`; the OS model runs it at each
/// goodness evaluation, which no hook could do from outside the scheduler.
#[derive(Clone, Copy, Debug)]
pub struct Predictive {
    name: &'static str,
    params: FreqParams,
}

impl Predictive {
    /// The patch with `params`, named `pred` or `dyn` in messages.
    pub fn new(name: &'static str, params: FreqParams) -> Self {
        Predictive { name, params }
    }
}

impl CoschedHook for Predictive {
    fn name(&self) -> &'static str {
        self.name
    }

    fn operations(&self) -> &'static [OsOperation] {
        &[OsOperation::GoodnessFreq]
    }

    fn on_job_start(&mut self, world: &dyn WorldView, job: u32, out: &mut Commands) {
        for &pid in world.job_processes(job) {
            out.push(Command::SetGoodnessFreq {
                pid,
                params: self.params,
            });
        }
    }
}

/// Periodic Boost (seed `001` §3.2, after Nagar et al.): every `period`, on each node, the monitor scans the
/// node's processes in pid order, round-robin from the one after the last it boosted, and boosts the first that
/// holds unconsumed messages and waits on a run queue (`cosched_policy::predictive::next_to_boost`): at most
/// one boost per node per period, to the OS model's maximum priority.
#[derive(Clone, Debug)]
pub struct PeriodicBoost {
    params: PbParams,
    /// Per node: the pid boosted last.
    last: Vec<Option<u32>>,
}

impl PeriodicBoost {
    /// The monitor with `params`, nothing boosted yet.
    pub fn new(params: PbParams) -> Self {
        PeriodicBoost {
            params,
            last: Vec::new(),
        }
    }
}

impl CoschedHook for PeriodicBoost {
    fn name(&self) -> &'static str {
        "pb"
    }

    fn periodic_timer(&self) -> Option<PeriodicTimer> {
        Some(PeriodicTimer {
            period: self.params.period_ns,
            phase: TimerPhase::RandomPerNode,
        })
    }

    fn on_timer(&mut self, world: &dyn WorldView, node: u32, timer: Timer, out: &mut Commands) {
        if timer != Timer::Periodic {
            return;
        }
        if self.last.len() < world.nodes() as usize {
            self.last.resize(world.nodes() as usize, None);
        }
        let pids: Vec<u32> = (0..world.processes())
            .filter(|&pid| world.process(pid).node == node)
            .collect();
        let candidates: Vec<PbCandidate> = pids
            .iter()
            .map(|&pid| {
                let p = world.process(pid);
                PbCandidate {
                    unconsumed: p.unconsumed_messages,
                    waiting: p.status == Status::Runnable && !p.running,
                }
            })
            .collect();
        let last = self.last[node as usize].and_then(|last| pids.iter().position(|&p| p == last));
        if let Some(i) = next_to_boost(&candidates, last) {
            // A waiting process takes the boost at once (the world carries it out right after this call).
            self.last[node as usize] = Some(pids[i]);
            out.boost_to_max(pids[i]);
        }
    }
}

/// No coscheduling: the node scheduler alone (the seed's "No DCS").
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCoscheduling;

impl CoschedHook for NoCoscheduling {
    fn name(&self) -> &'static str {
        "none"
    }
}

/// Dynamic coscheduling (seed `000` §3.3): boost on arrival when the fairness rule allows it.
#[derive(Clone, Debug)]
pub struct Dcs {
    /// `E`, `C` and `Tp` per process (keyed by pid).
    state: DcsState<u32>,
}

impl Dcs {
    /// DCS with fairness constants `params`, no process boosted yet.
    pub fn new(params: DcsParams) -> Self {
        Dcs {
            state: DcsState::new(params),
        }
    }

    /// `Tp` of `pid`: when its last boost was carried out.
    pub fn previous_boost(&self, pid: u32) -> Option<Nanos> {
        self.state.previous_boost(pid)
    }
}

impl CoschedHook for Dcs {
    fn name(&self) -> &'static str {
        "dcs"
    }

    fn on_arrival(&mut self, _world: &dyn WorldView, arrival: &ArrivalView, out: &mut Commands) {
        if arrival.receiver_running_as_sampled {
            // Figure 1: "if current_LWP != FM_LWP: interrupt" — the firmware's sample says it runs: no interrupt.
            return;
        }
        let node = NodeNow {
            now: arrival.now,
            min_quantum: arrival.min_quantum,
            run_queue_len: arrival.run_queue_len,
        };
        match self
            .state
            .consider(arrival.receiver, arrival.receiver_running, node)
        {
            DcsDecision::AlreadyRunning => {}
            DcsDecision::Boost => out.boost_to_max(arrival.receiver),
            DcsDecision::Refuse => out.refuse_boost(arrival.receiver),
        }
    }

    fn on_carried_out(&mut self, now: Nanos, command: &Command) {
        if let Command::BoostToMax { pid } = *command {
            self.state.record_boost(pid, now);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use cosched_policy::MILLIS;

    /// A cluster with no process: enough for hooks that read only the arrival.
    pub(crate) struct EmptyView;

    impl WorldView for EmptyView {
        fn now(&self) -> Nanos {
            0
        }
        fn nodes(&self) -> u32 {
            1
        }
        fn cpus_per_node(&self) -> u32 {
            1
        }
        fn processes(&self) -> u32 {
            0
        }
        fn process(&self, pid: u32) -> ProcessView {
            panic!("no process {pid} in the empty view")
        }
        fn job_processes(&self, _job: u32) -> &[u32] {
            &[]
        }
        fn running_on(&self, _cpu: u32) -> Option<u32> {
            None
        }
        fn run_queue_len(&self, _cpu: u32) -> u32 {
            0
        }
        fn min_quantum(&self) -> Nanos {
            20 * MILLIS
        }
    }

    fn view(now_ms: u64, running: bool, r: u32) -> ArrivalView {
        ArrivalView {
            now: now_ms * MILLIS,
            receiver: 0,
            receiver_running: running,
            receiver_running_as_sampled: running,
            run_queue_len: r,
            min_quantum: 20 * MILLIS,
        }
    }

    /// One arrival: the commands the hook pushed, each boost carried out at once (as the world does for a
    /// runnable receiver).
    fn arrive(hook: &mut dyn CoschedHook, arrival: ArrivalView) -> Vec<Command> {
        let mut out = Commands::default();
        hook.on_arrival(&EmptyView, &arrival, &mut out);
        for command in out.as_slice() {
            hook.on_carried_out(arrival.now, command);
        }
        out.as_slice().to_vec()
    }

    const BOOST: Command = Command::BoostToMax { pid: 0 };
    const REFUSED: Command = Command::RefuseBoost { pid: 0 };

    #[test]
    fn dcs_remembers_its_previous_boost() {
        // E = -1, C = 0, Tq = 20 ms, R = 2: a boost needs gap / 2 >= 40 ms, i.e. 80 ms since the last one.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY);
        assert_eq!(arrive(&mut dcs, view(10, false, 2)), vec![BOOST]); // never boosted: fair
        assert_eq!(arrive(&mut dcs, view(89, false, 2)), vec![REFUSED]); // 79 ms after: refused
        assert_eq!(arrive(&mut dcs, view(90, false, 2)), vec![BOOST]); // 80 ms after: boosted
        assert_eq!(arrive(&mut dcs, view(500, true, 2)), vec![]); // running: nothing to do
    }

    #[test]
    fn a_refusal_does_not_move_tp() {
        // Refused at 50 ms does not restart the clock: at 90 ms the gap is still 80 ms from the boost at 10.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY);
        arrive(&mut dcs, view(10, false, 2));
        assert_eq!(arrive(&mut dcs, view(50, false, 2)), vec![REFUSED]);
        assert_eq!(dcs.previous_boost(0), Some(10 * MILLIS));
        assert_eq!(arrive(&mut dcs, view(90, false, 2)), vec![BOOST]);
    }

    #[test]
    fn tp_moves_only_when_the_boost_is_carried_out() {
        // The boost at 10 ms is pushed but never carried out (the world found it moot): Tp stays unset, so an
        // arrival at 20 ms (only 10 ms later) is still the first boost, hence fair.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY);
        let mut out = Commands::default();
        dcs.on_arrival(&EmptyView, &view(10, false, 2), &mut out);
        assert_eq!(out.as_slice(), &[BOOST]);
        assert_eq!(dcs.previous_boost(0), None);
        assert_eq!(arrive(&mut dcs, view(20, false, 2)), vec![BOOST]);
        assert_eq!(dcs.previous_boost(0), Some(20 * MILLIS));
    }

    #[test]
    fn a_stale_running_sample_suppresses_the_interrupt() {
        // The receiver lost its CPU, but the firmware's last sample (< 1 ms old) still shows it running: no
        // interrupt, no decision, Tp unchanged — the next arrival at 10 ms is still the first, hence fair.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY);
        let mut stale = view(5, false, 2);
        stale.receiver_running_as_sampled = true;
        assert_eq!(arrive(&mut dcs, stale), vec![]);
        assert_eq!(arrive(&mut dcs, view(10, false, 2)), vec![BOOST]);
    }

    #[test]
    fn no_coscheduling_never_acts() {
        assert_eq!(arrive(&mut NoCoscheduling, view(0, false, 5)), vec![]);
    }

    #[test]
    fn build_picks_the_scenario_policy() {
        use cosched_policy::config::NoneConfig;
        assert_eq!(build(&PolicyConfig::None(NoneConfig {})).name(), "none");
        assert_eq!(
            build(&PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into())).name(),
            "dcs"
        );
    }

    #[test]
    fn build_has_a_hook_for_every_kind_the_simulator_runs() {
        let simulated: Vec<PolicyConfig> = PolicyConfig::every_kind()
            .into_iter()
            .filter(simulates)
            .collect();
        for policy in &simulated {
            let hook = build(policy);
            // A kind without a hook of its own runs as no coscheduling; it does nothing.
            if policy.parameters().does_nothing() {
                assert_eq!(hook.name(), "none", "{}", policy.kind());
            }
        }
        assert!(!simulates(&PolicyConfig::Budget(Default::default())));
    }

    /// Processes on nodes of one CPU each: (node, status, running, unconsumed messages).
    struct Procs(Vec<(u32, Status, bool, u32)>);

    impl WorldView for Procs {
        fn now(&self) -> Nanos {
            0
        }
        fn nodes(&self) -> u32 {
            2
        }
        fn cpus_per_node(&self) -> u32 {
            1
        }
        fn processes(&self) -> u32 {
            self.0.len() as u32
        }
        fn process(&self, pid: u32) -> ProcessView {
            let (node, status, running, unconsumed_messages) = self.0[pid as usize];
            ProcessView {
                node,
                cpu: node,
                job: 0,
                status,
                running,
                unconsumed_messages,
                allowed_cpus: CpuSet::single(0),
            }
        }
        fn job_processes(&self, _job: u32) -> &[u32] {
            &[]
        }
        fn running_on(&self, _cpu: u32) -> Option<u32> {
            None
        }
        fn run_queue_len(&self, _cpu: u32) -> u32 {
            0
        }
        fn min_quantum(&self) -> Nanos {
            20 * MILLIS
        }
    }

    #[test]
    fn periodic_boost_takes_the_next_waiting_process_with_messages_on_its_node() {
        // Node 0: pids 0 (waiting, 1 message), 1 (running, 2 messages: needs no boost), 3 (waiting, 1 message),
        // 4 (asleep). Node 1: pid 2 (waiting, 5 messages). Scans on node 0 go 0, 3, 0, ... (round robin after
        // the last boosted); node 1's scan boosts only its own pid 2.
        use crate::process::Status::{BlockedOnReceive, Runnable};
        let world = Procs(vec![
            (0, Runnable, false, 1),
            (0, Runnable, true, 2),
            (1, Runnable, false, 5),
            (0, Runnable, false, 1),
            (0, BlockedOnReceive, false, 0),
        ]);
        let mut pb = PeriodicBoost::new(PbParams::DEFAULT);
        let mut scan = |node: u32| {
            let mut out = Commands::default();
            pb.on_timer(&world, node, Timer::Periodic, &mut out);
            out.as_slice().to_vec()
        };
        assert_eq!(scan(0), vec![Command::BoostToMax { pid: 0 }]);
        assert_eq!(scan(0), vec![Command::BoostToMax { pid: 3 }]);
        assert_eq!(scan(0), vec![Command::BoostToMax { pid: 0 }]);
        assert_eq!(scan(1), vec![Command::BoostToMax { pid: 2 }]);
        assert_eq!(scan(1), vec![Command::BoostToMax { pid: 2 }]);
    }
}
