//! The agent's self-check: does coscheduling make the managed jobs faster *on this machine, now*?
//!
//! ## Why
//! The seeds measured their coscheduling against the scheduler it replaced and reported gains; on today's kernel
//! the same rule can lose. Watching messages costs every message of the job (two BPF hooks on the critical path:
//! a spin-block ping-pong at K = 1 ran at 0.85–0.90 of its no-agent rate with the hooks attached and boosts
//! turned off, 0.95–1.03 with them detached; `docs/lab-selfcheck.md`), and where the kernel's own wake-up
//! preemption already runs a woken receiver at once, boosts have nothing to add. SPEC's promise is that the
//! agent never makes a job slower, so the agent measures, instead of assuming, whether its coscheduling pays.
//!
//! ## Rule
//! Time is cut into epochs (`epoch_ns`, 100 ms by default). In each epoch the agent either **coschedules**
//! (message hooks attached, boosts allowed) or **stands aside** (hooks detached, no boost; the budget's
//! repayment goes on). At each epoch's end it is told the jobs' progress rate in that epoch (the agent uses
//! bytes received on the jobs' TCP sockets per second) and picks the next epoch's mode:
//!
//! - In the *chosen* mode (coscheduling at first) the last [`BASELINE`] rates are kept. After `probe_gap`
//!   epochs in it, one epoch runs the other mode: a **probe**. Its gain is paired with the chosen mode's
//!   epochs just before it (up to [`BASELINE`]), so the machine's slow drifts cancel:
//!   `d = rate / mean(baseline) − 1`.
//! - The last `window` gains are a sample of what the other mode is worth. With `n` gains, mean `d̄` and
//!   standard deviation `s` (`prior_sd` while `n < 3`: one probe says little about the noise),
//!   the other mode **wins** when `n >= 3`, `d̄ > margin` and `d̄ − z s / √n > 0`: it becomes the chosen one
//!   and the gains are forgotten (fewer probes never switch: one probe whose baseline epochs fell on the
//!   budget's repayments read +30 % and stood a spin-only ping-pong aside at half its rate). It **loses** when
//!   `d̄ + z s / √n < 0`: the probe gap doubles, and is at least `|d̄ + z s / √n| / probe_cost` (a probe costs
//!   about `|d|` of an epoch: at that gap probes cost at most `probe_cost`, 1 %, of the run, `d` taken at the
//!   end of its interval nearest to zero), up to `max_probe_gap`. Otherwise the evidence is
//!   **inconclusive**. If the other mode's mean gain is above `-margin` the modes look close, so probing costs
//!   little, and the next probe comes after `inconclusive_probe_gap` epochs. If it is below, the other mode
//!   looks slower — just not surely, the epochs being noisy — and each probe costs about `|d̄|` of an epoch: the
//!   gap grows as for a loss (at least to `2 first_probe_gap`). (Shortening it there stood a coscheduled
//!   spin-only ping-pong aside for up to 11 of 20 epochs, keeping it 4 to 9 of 30: its 100 ms epochs alias with
//!   the budget's burst-and-repay cycle, so the gains of a mode that halves the rate spread from −90 % to
//!   +10 %.)
//! - An epoch with no measurable progress (`None`: no TCP traffic seen) teaches nothing: it is not recorded.
//! - Standing aside is probed only while the jobs **wait by blocking**: their threads gave up spinning for a
//!   message and slept at least `min_blocks_per_s` times (10) over the last second of epochs
//!   ([`note_blocks`](SelfCheck::note_blocks); a spin-block ping-pong at K = 1 blocks ~70 times a second, a
//!   spin-only one 1–3 times, stray sleeps: one sleep is not a habit). A job that spins while it waits makes
//!   progress only while its peers run at the same moment: without coscheduling it spends its slices spinning
//!   for answers that cannot come (seed `000`'s spin-only job, two orders of magnitude), so standing aside
//!   cannot speed it up, and a probe costs it the epoch and the time to get back in step (a spin-only ping-pong
//!   at K = 1, its boosts kept through local tasks' wake-ups: 0.85 of the fair bound with probes, 0.90 without,
//!   2 s runs). Its due probe waits, and comes at the first epoch's end at which the jobs block again. Probes
//!   of coscheduling (after a switch to standing aside) are never held.
//!
//! So a job that coscheduling speeds up and that blocks pays one probe epoch in `first_probe_gap`, then
//! exponentially fewer (a spin-block ping-pong at K = 4 loses most of its rate in a probe: the first probe is
//! conclusive), one that spins pays none, and a job
//! that it slows down stands aside once the paired gains say so with confidence `z`. Per-epoch rates of the
//! ping-pong vary by ±15 % here (100 ms epochs), so a 10–15 % difference takes a few seconds to settle:
//! the self-check is for jobs that run for seconds or more.
//! Pure logic: the agent feeds it rates and applies the mode; the unit tests below give the arithmetic.

use std::collections::VecDeque;

use crate::Nanos;

/// Rates of the chosen mode a probe is compared with: the epochs since the previous probe, at most this many
/// (coscheduling's own rates vary most: a demotion, a burst of boosts).
pub const BASELINE: usize = 4;
/// Rates of the chosen mode needed before a probe.
pub const MIN_BASELINE: usize = 2;

/// What the agent does during an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Message hooks attached, boosts allowed: the policy decides.
    Coschedule,
    /// Message hooks detached, no boost: the kernel alone schedules the job (the budget still repays).
    StandAside,
}

impl Mode {
    /// Its name in statistics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Coschedule => "coschedule",
            Mode::StandAside => "stand-aside",
        }
    }

    /// The other mode.
    pub fn other(self) -> Mode {
        match self {
            Mode::Coschedule => Mode::StandAside,
            Mode::StandAside => Mode::Coschedule,
        }
    }
}

/// The self-check's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Length of one epoch.
    pub epoch_ns: Nanos,
    /// The other mode must be faster by more than this fraction to be chosen.
    pub margin: f64,
    /// Confidence of a verdict, in standard errors of the mean gain.
    pub z: f64,
    /// The relative noise of one probe's gain assumed while fewer than 3 gains are known.
    pub prior_sd: f64,
    /// Gains kept (the most recent probes).
    pub window: usize,
    /// Epochs in the chosen mode before the first probe (and after a switch).
    pub first_probe_gap: u32,
    /// Epochs in the chosen mode before the next probe while the evidence is inconclusive: the two modes are
    /// close then, so probing often costs little and settles the question sooner.
    pub inconclusive_probe_gap: u32,
    /// The most epochs between two probes (the gap doubles after each probe that the other mode loses).
    pub max_probe_gap: u32,
    /// What probes may cost while the other mode looks slower, as a fraction of the run: a probe costs about
    /// `|d|` of an epoch, so the gap is then at least `|d| / probe_cost` epochs, `d` taken at the end of its
    /// confidence interval nearest to zero.
    pub probe_cost: f64,
    /// How often the jobs' threads must fall asleep waiting for a message (per second, over the last second's
    /// epochs, at least one) for standing aside to be probed.
    pub min_blocks_per_s: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            epoch_ns: 100 * crate::MILLIS,
            margin: 0.03,
            z: 2.0,
            prior_sd: 0.15,
            window: 16,
            first_probe_gap: 4,
            inconclusive_probe_gap: 2,
            max_probe_gap: 64,
            probe_cost: 0.01,
            min_blocks_per_s: 10.0,
        }
    }
}

impl Params {
    /// Checks the parameters; the error names the one that is out of range.
    pub fn validate(&self) -> Result<(), String> {
        if self.epoch_ns < crate::MILLIS || self.epoch_ns > 60 * crate::SECONDS {
            return Err(format!(
                "self-check epoch {} ms must be between 1 ms and 60 s",
                self.epoch_ns as f64 / 1e6
            ));
        }
        if !(self.margin.is_finite() && (0.0..1.0).contains(&self.margin)) {
            return Err(format!(
                "self-check margin {} must be in [0, 1)",
                self.margin
            ));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !(positive(self.z) && positive(self.prior_sd)) {
            return Err(format!(
                "self-check z ({}) and prior_sd ({}) must be positive",
                self.z, self.prior_sd
            ));
        }
        if !(self.probe_cost.is_finite() && self.probe_cost > 0.0 && self.probe_cost <= 1.0) {
            return Err(format!(
                "self-check probe cost {} must be in (0, 1]",
                self.probe_cost
            ));
        }
        if !(self.min_blocks_per_s.is_finite() && self.min_blocks_per_s >= 0.0) {
            return Err(format!(
                "self-check min_blocks_per_s {} must be a number >= 0",
                self.min_blocks_per_s
            ));
        }
        if self.window < 3 {
            return Err(format!(
                "self-check window {} must be at least 3",
                self.window
            ));
        }
        if self.first_probe_gap == 0
            || self.inconclusive_probe_gap == 0
            || self.max_probe_gap < self.first_probe_gap.max(self.inconclusive_probe_gap)
        {
            return Err(format!(
                "self-check probe gaps must satisfy 1 <= first ({}), inconclusive ({}) <= max ({})",
                self.first_probe_gap, self.inconclusive_probe_gap, self.max_probe_gap
            ));
        }
        Ok(())
    }
}

/// What the probes so far say about the other mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Faster by more than the margin, with confidence.
    Wins,
    /// Slower, with confidence.
    Loses,
    /// Not known yet.
    Inconclusive,
}

/// Counts of what the self-check did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Epochs spent coscheduling.
    pub epochs_coscheduling: u64,
    /// Epochs spent standing aside.
    pub epochs_standing_aside: u64,
    /// Probe epochs (either mode).
    pub probes: u64,
    /// Changes of the chosen mode.
    pub switches: u64,
    /// Epochs with no measurable progress.
    pub blind_epochs: u64,
    /// Epoch ends at which a probe of standing aside was due and held: the jobs spin while they wait.
    pub probes_held: u64,
}

/// The self-check's state.
#[derive(Clone, Debug)]
pub struct SelfCheck {
    params: Params,
    chosen: Mode,
    current: Mode,
    /// The chosen mode's last rates (a probe's baseline).
    baseline: VecDeque<f64>,
    /// The other mode's relative gains, one per probe, newest last.
    gains: VecDeque<f64>,
    since_probe: u32,
    probe_gap: u32,
    /// How many times the jobs' threads fell asleep waiting, per epoch, over the last second of epochs (`None`:
    /// never told; taken to block).
    blocks: Option<VecDeque<u64>>,
    tally: Tally,
}

impl SelfCheck {
    /// Starts coscheduling, the first probe `first_probe_gap` epochs away.
    pub fn new(params: Params) -> SelfCheck {
        SelfCheck {
            params,
            chosen: Mode::Coschedule,
            current: Mode::Coschedule,
            baseline: VecDeque::with_capacity(BASELINE),
            gains: VecDeque::with_capacity(params.window),
            since_probe: 0,
            probe_gap: params.first_probe_gap,
            blocks: None,
            tally: Tally::default(),
        }
    }

    /// How many times the jobs' threads fell asleep waiting for a message (after an empty poll) in the epoch
    /// that is ending; told before [`end_epoch`](Self::end_epoch). Never told, they are taken to block (every
    /// probe runs).
    pub fn note_blocks(&mut self, blocks: u64) {
        let window = self.block_window();
        let kept = self.blocks.get_or_insert_with(VecDeque::new);
        if kept.len() >= window {
            kept.pop_front();
        }
        kept.push_back(blocks);
    }

    /// The epochs whose sleeps are counted: a second's worth, at least one.
    fn block_window(&self) -> usize {
        (crate::SECONDS / self.params.epoch_ns.max(1)).max(1) as usize
    }

    /// Whether the jobs wait by blocking: at least `min_blocks_per_s` sleeps a second over the window's span
    /// (counted over the epochs told so far in the first second: one stray sleep early on is not a habit either).
    pub fn waits_block(&self) -> bool {
        let span_s =
            (self.block_window() as u64 * self.params.epoch_ns) as f64 / crate::SECONDS as f64;
        self.blocks.as_ref().is_none_or(|kept| {
            kept.iter().sum::<u64>() as f64 >= self.params.min_blocks_per_s * span_s
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The mode of the running epoch.
    pub fn mode(&self) -> Mode {
        self.current
    }

    /// The mode the measurements favour.
    pub fn chosen(&self) -> Mode {
        self.chosen
    }

    /// Epochs in the chosen mode between probes, as things stand.
    pub fn probe_gap(&self) -> u32 {
        self.probe_gap
    }

    /// What it did so far.
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// Probes whose gains are kept (since the last switch, at most `window`).
    pub fn gains_kept(&self) -> usize {
        self.gains.len()
    }

    /// The mean relative gain of the other mode over the probes kept (`None` before the first probe).
    pub fn mean_gain(&self) -> Option<f64> {
        (!self.gains.is_empty()).then(|| self.gains.iter().sum::<f64>() / self.gains.len() as f64)
    }

    /// Forgets what it measured and coschedules again (the contention it judged is gone).
    pub fn reset(&mut self) {
        let tally = self.tally;
        *self = SelfCheck::new(self.params);
        self.tally = tally;
    }

    /// The mean gain kept and the half width of its confidence interval, `z s / √n` (`None` before the first
    /// probe).
    fn interval(&self) -> Option<(f64, f64)> {
        let n = self.gains.len();
        let mean = self.mean_gain()?;
        let sd = if n >= 3 {
            let var = self.gains.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            var.sqrt()
        } else {
            self.params.prior_sd
        };
        Some((mean, self.params.z * sd / (n as f64).sqrt()))
    }

    /// What the gains kept say: `d̄ ± z s / √n` against 0 and the margin.
    pub fn verdict(&self) -> Verdict {
        let n = self.gains.len();
        let Some((mean, half_width)) = self.interval() else {
            return Verdict::Inconclusive;
        };
        // Switching needs the gains' own spread (n >= 3): a single probe against a few coscheduled epochs that
        // fell on the budget's repayments read +30 % and stood a spin-only ping-pong aside, at half its rate.
        if n >= 3 && mean > self.params.margin && mean - half_width > 0.0 {
            Verdict::Wins
        } else if mean + half_width < 0.0 {
            Verdict::Loses
        } else {
            Verdict::Inconclusive
        }
    }

    /// The epoch that ran in [`mode`](Self::mode) ended with progress `rate` (per second; `None`: nothing
    /// measurable). Returns the mode of the next epoch.
    pub fn end_epoch(&mut self, rate: Option<f64>) -> Mode {
        match self.current {
            Mode::Coschedule => self.tally.epochs_coscheduling += 1,
            Mode::StandAside => self.tally.epochs_standing_aside += 1,
        }
        let probing = self.current != self.chosen;
        self.current = self.chosen;
        let Some(rate) = rate.filter(|r| r.is_finite() && *r >= 0.0) else {
            // Nothing learned: a probe without a measurement is dropped, not judged.
            self.tally.blind_epochs += 1;
            return self.current;
        };
        if probing {
            self.tally.probes += 1;
            self.judge_probe(rate);
            return self.current;
        }
        if self.baseline.len() == BASELINE {
            self.baseline.pop_front();
        }
        self.baseline.push_back(rate);
        self.since_probe += 1;
        if self.since_probe >= self.probe_gap && self.baseline.len() >= MIN_BASELINE {
            if self.chosen == Mode::Coschedule && !self.waits_block() {
                // Spinning waiters: standing aside cannot be faster. The probe stays due.
                self.tally.probes_held += 1;
                return self.current;
            }
            self.since_probe = 0;
            self.current = self.chosen.other();
        }
        self.current
    }

    fn judge_probe(&mut self, rate: f64) {
        let base = self.baseline.iter().sum::<f64>() / self.baseline.len().max(1) as f64;
        if base <= 0.0 {
            return; // the chosen mode made no progress: nothing to compare with
        }
        if self.gains.len() == self.params.window {
            self.gains.pop_front();
        }
        self.gains.push_back(rate / base - 1.0);
        match self.verdict() {
            Verdict::Wins => {
                self.chosen = self.chosen.other();
                self.current = self.chosen;
                self.tally.switches += 1;
                self.gains.clear();
                self.baseline.clear();
                self.baseline.push_back(rate);
                self.probe_gap = self.params.first_probe_gap;
            }
            Verdict::Loses => self.space_probes(self.probe_gap),
            Verdict::Inconclusive => {
                if self.mean_gain().is_some_and(|d| d > -self.params.margin) {
                    self.probe_gap = self.params.inconclusive_probe_gap;
                } else {
                    // Leaning towards the chosen mode: as for a loss, only not for sure.
                    self.space_probes(self.probe_gap.max(self.params.first_probe_gap));
                }
            }
        }
        self.since_probe = 0;
    }

    /// After a probe the other mode lost (or leant to lose): the gap doubles from `gap`, and is at least what
    /// keeps the probes' cost within `probe_cost` of the run, `|d̄ + z s / √n| / probe_cost` epochs (the likely
    /// loss nearest to zero; nothing when that end is above zero), up to `max_probe_gap`. A spin-only
    /// ping-pong loses half its rate in a probe at K = 1 (`d̄` −0.5, 0.2 at that end after one probe: 20 epochs)
    /// and 85 % at K = 4; doubling alone probed it twice in a 2 s run.
    fn space_probes(&mut self, gap: u32) {
        let likely_loss = self
            .interval()
            .map_or(0.0, |(mean, hw)| -(mean + hw))
            .max(0.0);
        // Less a hair: −0.9 + 0.3 over 1 % is 60.000000001 in floating point, not 61.
        let for_cost = (likely_loss / self.params.probe_cost - 1e-9).ceil() as u32;
        self.probe_gap = gap
            .saturating_mul(2)
            .max(for_cost)
            .min(self.params.max_probe_gap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `epochs` epochs where coscheduling yields `on` and standing aside `off`; returns the modes run.
    fn run(check: &mut SelfCheck, epochs: usize, on: f64, off: f64) -> Vec<Mode> {
        let mut modes = Vec::new();
        for _ in 0..epochs {
            let mode = check.mode();
            modes.push(mode);
            check.end_epoch(Some(match mode {
                Mode::Coschedule => on,
                Mode::StandAside => off,
            }));
        }
        modes
    }

    fn aside(modes: &[Mode]) -> usize {
        modes.iter().filter(|m| **m == Mode::StandAside).count()
    }

    #[test]
    fn it_starts_coscheduling_and_probes_after_the_first_gap() {
        let mut c = SelfCheck::new(Params::default());
        let modes = run(&mut c, 5, 100.0, 50.0);
        assert_eq!(
            modes,
            vec![
                Mode::Coschedule,
                Mode::Coschedule,
                Mode::Coschedule,
                Mode::Coschedule,
                Mode::StandAside
            ]
        );
        assert_eq!(c.tally().probes, 1);
        // One probe at half the rate: −0.5 + 2 × 0.15 = −0.2 < 0, a conclusive loss. Doubling gives 8 epochs;
        // keeping the probes within 1 % of the run at a likely loss of 0.2 of an epoch each needs 20.
        assert_eq!(c.verdict(), Verdict::Loses);
        assert_eq!(c.probe_gap(), 20);
        assert_eq!(c.chosen(), Mode::Coschedule);
    }

    #[test]
    fn a_job_coscheduling_speeds_up_pays_fewer_and_fewer_probes() {
        let mut c = SelfCheck::new(Params::default());
        let modes = run(&mut c, 20, 100.0, 50.0);
        // One probe, at epoch 4 (the next 20 epochs later, at 25): 1 of 20.
        assert_eq!(aside(&modes), 1);
        let modes = run(&mut c, 1000, 100.0, 50.0);
        // Gaps 40 (doubled: the cost bound, 0.29 / 1 %, asks less), then 64 for good: about one epoch in 65.
        assert!(aside(&modes) <= 1000 / 64 + 2, "{} probes", aside(&modes));
        assert_eq!(c.probe_gap(), 64);
        assert_eq!(c.tally().switches, 0);
    }

    #[test]
    fn a_job_coscheduling_slows_down_stands_aside_once_the_gains_are_sure() {
        let mut c = SelfCheck::new(Params::default());
        // Standing aside is 15 % faster (the spin-block ping-pong at K = 1), noise-free: one probe (+0.176)
        // is not sure under the prior noise (0.176 − 2 × 0.15 < 0); the second (n = 2: 0.176 − 0.21 < 0) neither,
        // each 2 epochs after the last; the third has its own spread (0) and is.
        let modes = run(&mut c, 11, 85.0, 100.0);
        assert_eq!(modes[4], Mode::StandAside);
        assert_eq!(modes[7], Mode::StandAside);
        assert_eq!(modes[10], Mode::StandAside);
        assert_eq!(c.chosen(), Mode::StandAside);
        assert_eq!(c.tally().switches, 1);
        // From now on it coschedules only in probes, which lose, fewer and fewer.
        let modes = run(&mut c, 200, 85.0, 100.0);
        assert!(
            200 - aside(&modes) <= 8,
            "{} coscheduled epochs",
            200 - aside(&modes)
        );
        assert_eq!(c.chosen(), Mode::StandAside);
    }

    #[test]
    fn noisy_rates_settle_on_the_faster_mode() {
        // ±20 % noise on every epoch (deterministic, spread like a uniform variate), standing aside 12 % faster.
        let mut c = SelfCheck::new(Params::default());
        let mut x: u64 = 12345;
        let mut noisy = |mean: f64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            mean * (1.0 + 0.4 * ((x >> 33) as f64 / (1u64 << 31) as f64 - 0.5))
        };
        for _ in 0..600 {
            let r = match c.mode() {
                Mode::Coschedule => noisy(88.0),
                Mode::StandAside => noisy(100.0),
            };
            c.end_epoch(Some(r));
        }
        assert_eq!(c.chosen(), Mode::StandAside, "{:?}", c.tally());
        assert!(c.tally().switches <= 3, "{:?}", c.tally());
    }

    #[test]
    fn a_tie_keeps_coscheduling() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 100, 100.0, 102.0);
        assert_eq!(c.chosen(), Mode::Coschedule, "2 % is within the margin");
        assert_eq!(c.tally().switches, 0);
    }

    #[test]
    fn a_single_lucky_probe_does_not_switch() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 4, 100.0, 50.0);
        assert_eq!(c.mode(), Mode::StandAside);
        c.end_epoch(Some(125.0)); // one noisy +25 %
        assert_eq!(c.chosen(), Mode::Coschedule);
        assert_eq!(c.verdict(), Verdict::Inconclusive);
        assert_eq!(c.probe_gap(), 2, "inconclusive: probe again soon");
        run(&mut c, 2, 100.0, 50.0);
        assert_eq!(c.mode(), Mode::StandAside);
        c.end_epoch(Some(50.0)); // refuted
        assert_eq!(c.chosen(), Mode::Coschedule);
        assert_eq!(c.tally().switches, 0);
    }

    #[test]
    fn no_switch_before_three_probes_however_large_the_gain() {
        // +40 % and +35 %: beyond the prior noise (0.40 − 2 × 0.15 > 0), but two probes say nothing of the
        // epochs' own spread; the third, at −50 %, shows it.
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 4, 100.0, 50.0);
        c.end_epoch(Some(140.0));
        assert_eq!(
            (c.verdict(), c.chosen()),
            (Verdict::Inconclusive, Mode::Coschedule)
        );
        run(&mut c, 2, 100.0, 50.0);
        c.end_epoch(Some(135.0));
        assert_eq!(
            (c.verdict(), c.chosen()),
            (Verdict::Inconclusive, Mode::Coschedule)
        );
        run(&mut c, 2, 100.0, 50.0);
        c.end_epoch(Some(50.0));
        assert_eq!(c.chosen(), Mode::Coschedule);
        assert_eq!(c.tally().switches, 0);
    }

    #[test]
    fn noisy_probes_that_lean_towards_the_chosen_mode_do_not_hasten_the_next() {
        let params = Params {
            max_probe_gap: 200,
            ..Params::default()
        };
        let mut c = SelfCheck::new(params);
        // Probes at −90 % and +10 %: each a loss under the prior noise. The first, −0.9 + 0.3 = −0.6: 60 epochs
        // keep the probes within 1 % of the run; the second (n = 2: −0.4 + 0.21 = −0.19, 19 epochs) doubles it.
        for (gap, probe, next) in [(4, 10.0, 60), (60, 110.0, 120)] {
            run(&mut c, gap, 100.0, 50.0);
            assert_eq!(c.mode(), Mode::StandAside);
            c.end_epoch(Some(probe));
            assert_eq!(c.verdict(), Verdict::Loses);
            assert_eq!(c.probe_gap(), next);
        }
        // A third at −50 %: gains −0.9, +0.1, −0.5 have their own spread (0.50): −0.43 ± 0.58, not sure.
        run(&mut c, 120, 100.0, 50.0);
        c.end_epoch(Some(50.0));
        assert_eq!(c.verdict(), Verdict::Inconclusive);
        assert_eq!(
            c.probe_gap(),
            200,
            "the other mode still looks slower: spaced as after a loss"
        );
        assert_eq!(c.chosen(), Mode::Coschedule);
    }

    #[test]
    fn after_close_probes_a_lean_towards_the_chosen_mode_spaces_them_again() {
        let mut c = SelfCheck::new(Params::default());
        // +1 %: inconclusive and close (above −3 %): the next probe in 2 epochs.
        run(&mut c, 4, 100.0, 50.0);
        c.end_epoch(Some(101.0));
        assert_eq!((c.verdict(), c.probe_gap()), (Verdict::Inconclusive, 2));
        // −20 %: gains +0.01, −0.2, mean −0.095 ± 0.21: still inconclusive, but leaning towards coscheduling:
        // spaced as after a loss from the first gap, not every third epoch.
        run(&mut c, 2, 100.0, 50.0);
        c.end_epoch(Some(80.0));
        assert_eq!(c.verdict(), Verdict::Inconclusive);
        assert_eq!(c.probe_gap(), 8);
    }

    #[test]
    fn when_the_situation_changes_it_comes_back() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 50, 85.0, 100.0);
        assert_eq!(c.chosen(), Mode::StandAside);
        // Competitors arrive: coscheduling now doubles the rate; the next probes find it.
        let modes = run(&mut c, 200, 200.0, 100.0);
        assert_eq!(c.chosen(), Mode::Coschedule);
        assert!(aside(&modes) < 100);
    }

    #[test]
    fn an_epoch_with_no_progress_teaches_nothing() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 4, 100.0, 50.0);
        assert_eq!(c.mode(), Mode::StandAside);
        // The probe saw no traffic: dropped, back to the chosen mode, gap unchanged.
        assert_eq!(c.end_epoch(None), Mode::Coschedule);
        assert_eq!(c.probe_gap(), 4);
        assert_eq!(c.tally().probes, 0);
        assert_eq!(c.tally().blind_epochs, 1);
        // Blind epochs never start a probe.
        for _ in 0..20 {
            assert_eq!(c.end_epoch(None), Mode::Coschedule);
        }
        assert_eq!(c.end_epoch(Some(f64::NAN)), Mode::Coschedule);
    }

    /// [`run`], the jobs' threads falling asleep `blocks(epoch)` times in each epoch.
    fn run_blocking(
        check: &mut SelfCheck,
        epochs: usize,
        on: f64,
        off: f64,
        blocks: impl Fn(usize) -> u64,
    ) -> Vec<Mode> {
        let mut modes = Vec::new();
        for epoch in 0..epochs {
            check.note_blocks(blocks(epoch));
            modes.extend(run(check, 1, on, off));
        }
        modes
    }

    #[test]
    fn jobs_that_spin_while_they_wait_are_never_stood_aside() {
        let mut c = SelfCheck::new(Params::default());
        // Even where standing aside would read faster: a spinning job's rates in a probe say nothing it could
        // gain, and the probe costs it. A stray sleep now and then (one in 5 epochs: 2 a second) is not waiting
        // by blocking.
        let stray = |epoch: usize| u64::from(epoch.is_multiple_of(5));
        let modes = run_blocking(&mut c, 200, 85.0, 100.0, stray);
        assert_eq!(aside(&modes), 0);
        assert_eq!(c.tally().probes, 0);
        assert_eq!(c.tally().probes_held, 200 - 4 + 1);
        assert_eq!(c.chosen(), Mode::Coschedule);
    }

    #[test]
    fn jobs_that_block_while_they_wait_are_probed_as_ever() {
        let mut blocking = SelfCheck::new(Params::default());
        let mut untold = SelfCheck::new(Params::default());
        // A spin-block ping-pong at K = 1 blocks about 70 times a second: 7 an epoch.
        let with_blocks = run_blocking(&mut blocking, 30, 85.0, 100.0, |_| 7);
        assert_eq!(with_blocks, run(&mut untold, 30, 85.0, 100.0));
        assert_eq!(blocking.chosen(), Mode::StandAside);
        assert_eq!(blocking.tally().probes_held, 0);
    }

    #[test]
    fn a_held_probe_runs_at_the_first_epoch_end_at_which_the_jobs_block_again() {
        let mut c = SelfCheck::new(Params::default());
        run_blocking(&mut c, 10, 100.0, 50.0, |_| 0);
        assert_eq!(c.mode(), Mode::Coschedule);
        // The blocks of the last second of epochs count (10 epochs): nine of none and one of 11 is 11 a second.
        let modes = run_blocking(&mut c, 2, 100.0, 50.0, |_| 11);
        assert_eq!(modes, vec![Mode::Coschedule, Mode::StandAside]);
        assert_eq!(c.tally().probes, 1);
    }

    #[test]
    fn with_epochs_longer_than_a_second_the_sleeps_are_counted_per_second() {
        let mut c = SelfCheck::new(Params {
            epoch_ns: 5 * crate::SECONDS,
            ..Params::default()
        });
        // 40 sleeps in a 5 s epoch is 8 a second: below 10.
        c.note_blocks(40);
        assert!(!c.waits_block());
        c.note_blocks(50);
        assert!(c.waits_block());
    }

    #[test]
    fn probes_of_coscheduling_are_never_held() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 11, 85.0, 100.0);
        assert_eq!(c.chosen(), Mode::StandAside);
        // Standing aside, the jobs' waits are not watched: whatever the agent counts, coscheduling is probed.
        let modes = run_blocking(&mut c, 10, 85.0, 100.0, |_| 0);
        let coscheduling = modes.iter().filter(|m| **m == Mode::Coschedule).count();
        assert!(coscheduling >= 1, "{modes:?}");
        assert_eq!(c.tally().probes_held, 0);
    }

    #[test]
    fn reset_coschedules_again_and_keeps_the_counts() {
        let mut c = SelfCheck::new(Params::default());
        run(&mut c, 50, 85.0, 100.0);
        let before = c.tally();
        c.reset();
        assert_eq!(c.mode(), Mode::Coschedule);
        assert_eq!(c.chosen(), Mode::Coschedule);
        assert_eq!(c.tally(), before);
    }

    #[test]
    fn bad_parameters_are_named() {
        for (p, word) in [
            (
                Params {
                    margin: 1.5,
                    ..Params::default()
                },
                "margin",
            ),
            (
                Params {
                    first_probe_gap: 10,
                    max_probe_gap: 5,
                    ..Params::default()
                },
                "probe gaps",
            ),
            (
                Params {
                    epoch_ns: 10,
                    ..Params::default()
                },
                "epoch",
            ),
            (
                Params {
                    z: 0.0,
                    ..Params::default()
                },
                "z",
            ),
            (
                Params {
                    min_blocks_per_s: f64::NAN,
                    ..Params::default()
                },
                "min_blocks_per_s",
            ),
            (
                Params {
                    window: 2,
                    ..Params::default()
                },
                "window",
            ),
        ] {
            assert!(p.validate().unwrap_err().contains(word), "{p:?}");
        }
        assert!(Params::default().validate().is_ok());
    }
}
