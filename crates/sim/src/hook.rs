//! Coscheduling policy hooks: where a policy sees the simulated node and acts on it.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §3.3 and Figure 2 (DCS acts on message arrival). Other policies plug in
//! at the same places: predictive coscheduling (seed `003`) on every tick, periodic boost (seed `001`) on a
//! periodic tick, a wake-up hook for policies that watch blocking receivers.
//!
//! ## Approach
//! The world calls a [`CoschedHook`] at three moments and carries out what it answers; the hook owns only its
//! own state (for DCS: `Tp` per process) and never touches the scheduler directly. The rule itself is not
//! written here: [`Dcs`] calls `cosched_policy::dcs::decide`.
//!
//! ## Terminology (what the world passes on an arrival)
//! - `now` — `Tc`; `receiver` — the pid the message is for; `receiver_running` — it is on its CPU now.
//! - `receiver_running_as_sampled` — whether the network interface *believes* the receiver is running: the
//!   seed's firmware reads the host's current LWP by DMA only once per [`RUNNING_SAMPLE_PERIOD`] (§3.3.1,
//!   "the firmware has only an approximation of the currently running thread"), and interrupts the host only
//!   when that sample is not the receiver (Figure 1). A receiver that lost its CPU less than a sample period
//!   ago therefore gets no DCS decision for this message. This is the literal Figure 1; the seed says cases
//!   of inaccurate information were dealt with by mechanisms described only in its reference [15] (§3.3.1),
//!   so none is modelled. It matters: a receiver whose quantum expires while it spins for a message due
//!   within ~100 µs is passed over by the interface and waits a whole competitor quantum (40–200 ms). In
//!   Barrier under `<DCS, spin-block>` this is the main reason the job gets less than its fair share
//!   (measured: with an exact view of the running process F rises from 0.58 to 0.75 at 1 competitor and
//!   from 0.86 to 1.27 at 8, 20,000 iterations). Re-examining the arrival at the interface's next sample
//!   was also measured: Barrier F 0.77 and 1.02, but Latency F 1.9–6.5 (the ping-pong pair then holds both
//!   CPUs), far from the seed's near-fair Latency — so that guess at [15] is not adopted either.
//! - `run_queue_len` — `R`: the processes on the receiver's CPU run queue (runnable, not running) at the
//!   instant the message arrives, *before* any wake-up it causes. A spinning (runnable, preempted) receiver
//!   therefore counts itself, a blocked one does not; the running process is never counted. This is the
//!   Solaris dispatcher's own count of the run queue, which is what the seed's driver could read.
//! - `min_quantum` — `Tq`, from the OS model (20 ms on Solaris 2.4).
//!
//! ## Algorithm
//! ```text
//! on arrival:  DCS: if the NIC's sample says the receiver runs: no interrupt, nothing
//!                   else decide(E, C, receiver_running, Tc, Tp[receiver], Tq, R)   (the driver knows exactly)
//!                   Boost  → Tp[receiver] = Tc; world raises the receiver to the maximum user priority, puts
//!                            it first in its queue and preempts the running process (seed §3.3.2)
//!                   Refuse → counted; the receiver waits for its turn
//! ```

use cosched_policy::dcs::{decide, DcsDecision, DcsInputs, DcsParams};
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

/// What a hook asks the world to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAction {
    /// Nothing to do (no policy, or the receiver is already running).
    Nothing,
    /// Boost the receiver to the maximum user priority and preempt the running process.
    BoostToMax,
    /// The policy considered a boost and refused it (counted in `boosts_refused`).
    Refused,
}

/// A coscheduling policy seen from the simulator.
pub trait CoschedHook {
    /// A message arrived for `view.receiver`, which is not on its CPU (a running receiver sees its message
    /// without help; the seed's interface does not even interrupt the host for it, Figure 1).
    fn on_arrival(&mut self, _view: &ArrivalView) -> HookAction {
        HookAction::Nothing
    }
    /// A blocked process became runnable again (after the OS model's own wake-up rule).
    fn on_wakeup(&mut self, _now: Nanos, _pid: u32) {}
    /// The node's periodic tick (the OS model's update period).
    fn on_tick(&mut self, _now: Nanos, _node: u32) {}
}

/// No coscheduling: the node scheduler alone (the seed's "No DCS").
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCoscheduling;

impl CoschedHook for NoCoscheduling {}

/// Dynamic coscheduling (seed `000` §3.3): boost on arrival when the fairness rule allows it.
#[derive(Clone, Debug)]
pub struct Dcs {
    params: DcsParams,
    /// `Tp` per process: when it was last boosted.
    previous_boost: Vec<Option<Nanos>>,
}

impl Dcs {
    /// DCS for `processes` processes with fairness constants `params`.
    pub fn new(params: DcsParams, processes: usize) -> Self {
        Dcs {
            params,
            previous_boost: vec![None; processes],
        }
    }
}

impl CoschedHook for Dcs {
    fn on_arrival(&mut self, view: &ArrivalView) -> HookAction {
        if view.receiver_running_as_sampled {
            // Figure 1: "if current_LWP != FM_LWP: interrupt" — the firmware's sample says it runs: no interrupt.
            return HookAction::Nothing;
        }
        let tp = &mut self.previous_boost[view.receiver as usize];
        let inputs = DcsInputs {
            now: view.now,
            previous_boost: *tp,
            min_quantum: view.min_quantum,
            run_queue_len: view.run_queue_len,
        };
        match decide(&self.params, view.receiver_running, &inputs) {
            DcsDecision::AlreadyRunning => HookAction::Nothing,
            DcsDecision::Boost => {
                *tp = Some(view.now);
                HookAction::BoostToMax
            }
            DcsDecision::Refuse => HookAction::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_policy::MILLIS;

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

    #[test]
    fn dcs_remembers_its_previous_boost() {
        // E = -1, C = 0, Tq = 20 ms, R = 2: a boost needs gap / 2 >= 40 ms, i.e. 80 ms since the last one.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY, 1);
        assert_eq!(dcs.on_arrival(&view(10, false, 2)), HookAction::BoostToMax); // never boosted: fair
        assert_eq!(dcs.on_arrival(&view(89, false, 2)), HookAction::Refused); // 79 ms after: refused
        assert_eq!(dcs.on_arrival(&view(90, false, 2)), HookAction::BoostToMax); // 80 ms after: boosted
        assert_eq!(dcs.on_arrival(&view(500, true, 2)), HookAction::Nothing); // running: nothing to do
    }

    #[test]
    fn a_refusal_does_not_move_tp() {
        // Refused at 50 ms does not restart the clock: at 90 ms the gap is still 80 ms from the boost at 10.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY, 1);
        dcs.on_arrival(&view(10, false, 2));
        assert_eq!(dcs.on_arrival(&view(50, false, 2)), HookAction::Refused);
        assert_eq!(dcs.on_arrival(&view(90, false, 2)), HookAction::BoostToMax);
    }

    #[test]
    fn a_stale_running_sample_suppresses_the_interrupt() {
        // The receiver lost its CPU, but the firmware's last sample (< 1 ms old) still shows it running: no
        // interrupt, no decision, Tp unchanged — the next arrival at 10 ms is still the first, hence fair.
        let mut dcs = Dcs::new(DcsParams::SPIN_ONLY, 1);
        let mut stale = view(5, false, 2);
        stale.receiver_running_as_sampled = true;
        assert_eq!(dcs.on_arrival(&stale), HookAction::Nothing);
        assert_eq!(dcs.on_arrival(&view(10, false, 2)), HookAction::BoostToMax);
    }

    #[test]
    fn no_coscheduling_never_acts() {
        assert_eq!(
            NoCoscheduling.on_arrival(&view(0, false, 5)),
            HookAction::Nothing
        );
    }
}
