//! `--policy dynamicq`: DYNAMICQ — each managed thread's quantum adapted every epoch from the node's cache miss
//! rate, on top of the agent's default policy (`dcs`) or predictive coscheduling (`pred`, the seed's).
//!
//! ## Problem
//! Seed `004_3903357666129396.txt` (§2, Algorithm 1) lets a parallel task keep its CPU longer when switching
//! costs it its cache: at each epoch a task's quantum doubles while the node's L2 miss rate is above MAX_MISS
//! (9 %) or rose since the epoch before, halves above MAX_SLICE (6.4 s), and falls back to the default (200 ms)
//! at once while an interactive user is present, whose response a long quantum would hurt. It runs on top of
//! predictive coscheduling, which still decides *who* runs; DYNAMICQ decides *how long*.
//!
//! ## Approach
//! - *Who* is the agent's default policy, unchanged ([`super::dcs`]: a boost at a message arrival by DCS's rule,
//!   under the CPU-time budget), or with `--over pred` the seed's predictive coscheduling ([`super::pred`]:
//!   boosts of the waiting threads of processes whose sockets held data lately). `dcs` by default because the
//!   lab measured `pred` 3–14 % slower on our MG-, IS- and SOR-like jobs, and DYNAMICQ over `dcs` at `dcs`'s
//!   speed (`docs/lab-dynamicq.md`). Every event is handed to it first.
//! - *How long* is the thread's EEVDF custom slice ([`Ctx::slice`], `sched_runtime`): the time a thread runs
//!   once picked before the kernel looks for another, its share unchanged. The kernel keeps a slice within
//!   0.1–100 ms, where Linux 2.2's quanta were 200 ms–12.8 s, so the defaults scale the seed's constants into
//!   that range keeping their ratio: MAX_SLICE = 100 ms, the kernel's ceiling, and DEFAULT_QUANTUM =
//!   100 ms / 32 = 3.125 ms (the seed's 6.4 s / 200 ms). Algorithm 1 runs on these numbers exactly
//!   ([`cosched_policy::dynamicq::next_quantum`], the simulator's rule too), so under a high miss rate a quantum
//!   goes 3.125 → 6.25 → … → 100 → 200 ms and then oscillates 100 ↔ 200 ms as the seed's 6.4 ↔ 12.8 s; a
//!   quantum above the kernel's ceiling is applied as the ceiling (counted: `quantum_capped`). That is the
//!   longest quantum this kernel lets a thread's own attributes ask for: a longer one would need other tasks'
//!   wake-ups kept from preempting it, and the agent touches no task it does not manage.
//! - *The epoch* is `--quantum-epoch-ms` (200 ms: the seed's default quantum, about one Linux 2.2 epoch with a
//!   task per CPU), taken at the agent's tick.
//! - *The node's signals* come from [`crate::node`]: the miss rate from the hardware cache counters
//!   (`--miss-rate-source auto`) or a file, the interactive user from terminals, input interrupts and named
//!   programs. They are read through [`NodeSensors`], which the tests replace.
//! - *No miss rate* (no hardware counters, as on this project's VMs, or `--miss-rate-source none`): every epoch
//!   counts as `--assume-miss-percent` (0) with no previous epoch, so without evidence that switches cost the
//!   jobs their caches every thread keeps the default quantum (STATICQ).
//! - *At the default quantum* a thread keeps the kernel's own slice (no custom slice): a custom slice of about
//!   the same length changed how EEVDF lets a woken local task preempt it — the local probe's p99 beside the
//!   MG-like job went from 4.5× / 7.8× of no agent's (3.125 ms custom slices) to 2.1× / 2.0×, `dcs`'s
//!   (`docs/lab-dynamicq.md`, "The local user"). Measured why (`docs/lab-dynamicq.md`):
//!   on EEVDF a long slice is also a late deadline, so a woken rank with one no longer preempts the task on its
//!   CPU; quanta grown without counters (`--assume-miss-percent 100`, the seed's measured miss rates: above
//!   9 % at quanta under 0.8 s, Figure 1) made a cache-bound SOR job 0.82–0.90× as fast as without the agent.
//!
//! ## Parameters
//! `--over dcs|pred` (dcs), that policy's flags (`--exponent`, `--constant-ms`, `--quantum-us`, `--r-average-ms`;
//! or `--p-percent`, `--ceiling`: the other one's are an error) with the boost and budget flags, and
//! `--max-miss-percent` 9,
//! `--default-quantum-us` 3125, `--max-slice-us` 100000, `--quantum-epoch-ms` 200, `--miss-rate-source auto`,
//! `--assume-miss-percent` 0, `--interactive-idle-s` 60 (0: terminals and input devices are not looked at),
//! `--interactive-comm NAME` (repeatable).

use crate::node::{
    InteractiveConfig, InteractiveDetector, MissRateSource, MissRateSpec, NodeSensors, Sensors,
};
use crate::policy::dcs::{BoostFlags, Dcs, DcsRuleFlags};
use crate::policy::pred::PredRuleFlags;
use crate::policy::{Arrival, Counter, Ctx, Host, Mode, Policy, PolicyFlags};
use cosched_policy::dynamicq::{next_quantum, DynamicqParams, MissRates};
use cosched_policy::{Nanos, MICROS, MILLIS};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The registry's line.
pub const SUMMARY: &str =
    "DYNAMICQ over dcs (or pred): each thread's slice adapted every epoch from the node's cache miss rate, the default while an interactive user is present";

/// The longest custom slice the kernel keeps (EEVDF clamps `sched_runtime` to 0.1–100 ms).
pub const KERNEL_MAX_SLICE_NS: Nanos = 100 * MILLIS;
/// The shortest.
pub const KERNEL_MIN_SLICE_NS: Nanos = 100 * MICROS;

/// Its flags that are the agent's alone, and why: `pred`'s and `dcs`'s, then DYNAMICQ's (the seed's constants
/// are the simulator's quantum rule, not a policy kind).
pub static AGENT_ONLY: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    let own: &[(&str, &str)] = &[
        (
            "over",
            "which policy decides who runs under the adapted quanta",
        ),
        ("max_miss_percent", "MAX_MISS, in percent (seed 004: 9)"),
        (
            "default_quantum_us",
            "DEFAULT_QUANTUM, scaled into the kernel's slice range (seed 004: 200 ms)",
        ),
        (
            "max_slice_us",
            "MAX_SLICE, scaled to the kernel's 100 ms slice ceiling (seed 004: 6.4 s)",
        ),
        ("quantum_epoch_ms", "how often the quanta are adapted"),
        ("miss_rate_source", "where the node's miss rate is read"),
        (
            "assume_miss_percent",
            "the miss rate an epoch counts as when none could be read",
        ),
        (
            "interactive_idle_s",
            "a terminal read or input interrupt this recent means an interactive user",
        ),
        (
            "interactive_comm",
            "programs whose presence means an interactive user",
        ),
    ];
    // pred's and dcs's (the boost flags in both, once), then DYNAMICQ's own.
    let mut all: Vec<(&str, &str)> = super::pred::AGENT_ONLY.to_vec();
    for &(flag, why) in super::dcs::AGENT_ONLY {
        if !all.iter().any(|(f, _)| *f == flag) {
            all.push((flag, why));
        }
    }
    all.extend(own);
    all
});

/// Epochs adapted.
pub const EPOCHS: &str = "quantum_epochs";
/// Epochs with an interactive user present (every quantum back to the default).
pub const EPOCHS_INTERACTIVE: &str = "epochs_interactive";
/// Epochs with no miss rate read (the assumed one used).
pub const EPOCHS_NO_MISS_RATE: &str = "epochs_no_miss_rate";
/// A thread's quantum doubled.
pub const DOUBLED: &str = "quantum_doubled";
/// A thread's quantum halved (above MAX_SLICE).
pub const HALVED: &str = "quantum_halved";
/// A thread's quantum set back to the default for an interactive user.
pub const RESET: &str = "quantum_reset";
/// A thread's quantum longer than the kernel's ceiling, applied as the ceiling.
pub const CAPPED: &str = "quantum_capped";

const OWN_COUNTERS: &[Counter] = &[
    Counter {
        name: EPOCHS,
        refusal: false,
        description: "epochs at which the quanta were adapted",
    },
    Counter {
        name: EPOCHS_INTERACTIVE,
        refusal: false,
        description: "epochs with an interactive user present",
    },
    Counter {
        name: EPOCHS_NO_MISS_RATE,
        refusal: false,
        description: "epochs with no miss rate read (--assume-miss-percent used)",
    },
    Counter {
        name: DOUBLED,
        refusal: false,
        description: "thread quanta doubled",
    },
    Counter {
        name: HALVED,
        refusal: false,
        description: "thread quanta halved (above MAX_SLICE)",
    },
    Counter {
        name: RESET,
        refusal: false,
        description: "thread quanta set back to the default for an interactive user",
    },
    Counter {
        name: CAPPED,
        refusal: false,
        description:
            "thread quanta above the kernel's 100 ms slice ceiling, applied as the ceiling",
    },
];

static COUNTERS: LazyLock<Vec<Counter>> = LazyLock::new(|| {
    super::dcs::COUNTERS
        .iter()
        .chain(OWN_COUNTERS)
        .copied()
        .collect()
});

/// The policy under DYNAMICQ's quanta: who runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// DCS (`--policy dcs`), the agent's default policy.
    Dcs,
    /// Predictive coscheduling (`--policy pred`), as in seed 004.
    Pred,
}

impl Over {
    fn name(self) -> &'static str {
        match self {
            Over::Pred => "pred",
            Over::Dcs => "dcs",
        }
    }
}

/// `cosched agent --policy dynamicq` flags.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policy dynamicq (DYNAMICQ quanta over dcs or pred)")]
pub struct DynamicqFlags {
    /// The policy that decides who runs while DYNAMICQ decides how long: dcs (the agent's default policy) or
    /// pred (seed 004's predictive coscheduling, slower than dcs on this kernel: docs/lab-dynamicq.md).
    #[arg(long, value_enum, default_value_t = Over::Dcs)]
    pub over: Over,
    #[command(flatten)]
    pub boost: BoostFlags,
    // With --over dcs only.
    #[command(flatten)]
    pub dcs: DcsRuleFlags,
    // With --over pred only.
    #[command(flatten)]
    pub pred: PredRuleFlags,
    /// MAX_MISS: a miss rate above this (percent of L1 misses that miss the last level too) doubles the quanta.
    #[arg(long, default_value_t = 9.0)]
    pub max_miss_percent: f64,
    /// DEFAULT_QUANTUM, µs: every thread's first quantum, and all of them while an interactive user is present
    /// (seed 004: 200 ms; here the seed's MAX_SLICE / 32 below the kernel's 100 ms slice ceiling).
    #[arg(long, default_value_t = 3125)]
    pub default_quantum_us: u64,
    /// MAX_SLICE, µs: a quantum doubles up to twice this, and halves above it (seed 004: 6.4 s).
    #[arg(long, default_value_t = 100_000)]
    pub max_slice_us: u64,
    /// How often the quanta are adapted, ms.
    #[arg(long, default_value_t = 200.0)]
    pub quantum_epoch_ms: f64,
    /// Where the node's miss rate comes from: auto (hardware counters where they open, else none), perf, none,
    /// or file:PATH (a fraction 0..1 read at every epoch).
    #[arg(long, default_value = "auto")]
    pub miss_rate_source: MissRateSpec,
    /// The miss rate (percent) an epoch counts as when none could be read: 0 keeps the quanta at the default
    /// (STATICQ); 100 lets them grow as under the seed's measured miss rates.
    #[arg(long, default_value_t = 0)]
    pub assume_miss_percent: u32,
    /// An interactive user is present while a terminal was read, or an input device interrupted, within this
    /// many seconds (0: terminals and input devices are not looked at).
    #[arg(long, default_value_t = 60)]
    pub interactive_idle_s: u64,
    /// A program (by name) whose running process means an interactive user is present; repeatable.
    #[arg(long)]
    pub interactive_comm: Vec<String>,
}

impl DynamicqFlags {
    /// Algorithm 1's constants from the flags, checked against the kernel's slice range.
    fn params(&self) -> anyhow::Result<DynamicqParams> {
        let p = &self.max_miss_percent;
        if !(p.is_finite() && (0.0..=100.0).contains(p)) {
            anyhow::bail!("--max-miss-percent: {p} is not a percentage in 0..=100 (the seed: 9)");
        }
        let default_quantum_ns = crate::config::us(self.default_quantum_us, "default-quantum-us")?;
        if !(KERNEL_MIN_SLICE_NS..=KERNEL_MAX_SLICE_NS).contains(&default_quantum_ns) {
            anyhow::bail!(
                "--default-quantum-us: {} is outside the kernel's slice range 100..=100000 µs",
                self.default_quantum_us
            );
        }
        let max_slice_ns = crate::config::us(self.max_slice_us, "max-slice-us")?;
        if max_slice_ns < default_quantum_ns {
            anyhow::bail!(
                "--max-slice-us: {} is below --default-quantum-us {}",
                self.max_slice_us,
                self.default_quantum_us
            );
        }
        if self.assume_miss_percent > 100 {
            anyhow::bail!(
                "--assume-miss-percent: {} is not a percentage in 0..=100",
                self.assume_miss_percent
            );
        }
        Ok(DynamicqParams {
            max_miss: p / 100.0,
            max_slice_ns,
            default_quantum_ns,
        })
    }

    /// The policy, reading the node through `sensors`.
    fn build_with(
        self,
        host: &Host,
        sensors: Box<dyn NodeSensors>,
    ) -> anyhow::Result<Box<dyn Policy>> {
        let params = self.params()?;
        let epoch_ns = crate::config::ms(self.quantum_epoch_ms, "quantum-epoch-ms")?;
        if epoch_ns == 0 {
            anyhow::bail!("--quantum-epoch-ms: must be above 0");
        }
        let rule = match self.over {
            Over::Pred => self.pred.pred()?,
            Over::Dcs => self.dcs.rule(host)?,
        };
        Ok(Box::new(Dynamicq {
            over: self.over,
            who: Box::new(Dcs::new(self.boost.resolve(rule)?)),
            sensors,
            params,
            epoch_ns,
            assumed_miss: f64::from(self.assume_miss_percent) / 100.0,
            next_epoch_ns: None,
            quanta: HashMap::new(),
            last_miss: None,
        }))
    }
}

impl PolicyFlags for DynamicqFlags {
    /// The flags of the rule `--over` did not choose are an error, not ignored.
    fn check_given(matches: &clap::ArgMatches) -> anyhow::Result<()> {
        use clap::Args;
        let over = matches
            .get_one::<Over>("over")
            .copied()
            .unwrap_or(Over::Dcs);
        let (unused, theirs) = match over {
            Over::Pred => (
                DcsRuleFlags::augment_args(clap::Command::new("r")),
                Over::Dcs,
            ),
            Over::Dcs => (
                PredRuleFlags::augment_args(clap::Command::new("r")),
                Over::Pred,
            ),
        };
        for arg in unused.get_arguments() {
            let id = arg.get_id().as_str();
            if matches.try_contains_id(id).unwrap_or(false)
                && matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
            {
                anyhow::bail!(
                    "--{} is a flag of policy {}: with --policy dynamicq it needs --over {} (now --over {})",
                    id.replace('_', "-"),
                    theirs.name(),
                    theirs.name(),
                    over.name()
                );
            }
        }
        Ok(())
    }

    fn build(self, host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        let miss = MissRateSource::open(&self.miss_rate_source)?;
        let interactive = InteractiveDetector::new(InteractiveConfig {
            idle: (self.interactive_idle_s > 0)
                .then(|| std::time::Duration::from_secs(self.interactive_idle_s)),
            comms: self.interactive_comm.clone(),
        });
        self.build_with(host, Box::new(Sensors { miss, interactive }))
    }
}

/// DYNAMICQ over `pred` or `dcs`.
pub struct Dynamicq {
    over: Over,
    /// The policy that decides who runs (`pred` or `dcs`).
    who: Box<dyn Policy>,
    sensors: Box<dyn NodeSensors>,
    params: DynamicqParams,
    epoch_ns: Nanos,
    /// The miss rate an epoch counts as when none was read.
    assumed_miss: f64,
    /// When the next epoch is due (`None`: at the first tick).
    next_epoch_ns: Option<Nanos>,
    /// Each managed thread's quantum (Algorithm 1's `q`), unclamped.
    quanta: HashMap<u32, Nanos>,
    /// The miss rate read at the last epoch (`mr[n-1]`), if one was read.
    last_miss: Option<f64>,
}

impl Dynamicq {
    /// The slice a quantum is applied as: the kernel keeps no longer one.
    fn slice_of(quantum_ns: Nanos) -> Nanos {
        quantum_ns.clamp(KERNEL_MIN_SLICE_NS, KERNEL_MAX_SLICE_NS)
    }

    /// Algorithm 1 for every managed thread, with the node's miss rate and interactive user of this epoch.
    fn epoch(&mut self, ctx: &mut Ctx) {
        let read = self.sensors.miss_rate();
        let interactive = self.sensors.interactive_user();
        let miss = match read {
            Some(current) => MissRates {
                previous: self.last_miss,
                current,
            },
            None => MissRates {
                previous: None,
                current: self.assumed_miss,
            },
        };
        self.last_miss = read;
        let detail = format_args!(
            "mr={read:?} interactive={interactive} assumed={}",
            read.is_none()
        );
        ctx.note(0, 0, EPOCHS, detail);
        if interactive {
            ctx.note(0, 0, EPOCHS_INTERACTIVE, format_args!(""));
        }
        if read.is_none() {
            ctx.note(0, 0, EPOCHS_NO_MISS_RATE, format_args!(""));
        }
        for tgid in ctx.tgids() {
            for tid in ctx.tids_of(tgid) {
                let q = *self
                    .quanta
                    .entry(tid)
                    .or_insert(self.params.default_quantum_ns);
                let next = next_quantum(q, miss, interactive, &self.params);
                let counter = if next > q {
                    Some(DOUBLED)
                } else if next < q && interactive {
                    Some(RESET)
                } else if next < q {
                    Some(HALVED)
                } else {
                    None
                };
                if let Some(counter) = counter {
                    ctx.note(
                        tgid,
                        tid,
                        counter,
                        format_args!("quantum_us={}", next / MICROS),
                    );
                }
                if next > KERNEL_MAX_SLICE_NS {
                    ctx.note(
                        tgid,
                        tid,
                        CAPPED,
                        format_args!("quantum_us={}", next / MICROS),
                    );
                }
                self.quanta.insert(tid, next);
                // At the default quantum a thread keeps the kernel's own slice: a custom one, even of about
                // the same length, changes how EEVDF lets a woken local task preempt it (docs/lab-dynamicq.md,
                // "The local user").
                let slice = (next != self.params.default_quantum_ns).then(|| Self::slice_of(next));
                ctx.slice(tid, slice);
            }
        }
    }
}

impl Policy for Dynamicq {
    fn describe(&self) -> Vec<String> {
        let mut out = vec![format!("over={}", self.over.name())];
        out.extend(self.who.describe());
        out.extend([
            format!("max_miss_percent={}", self.params.max_miss * 100.0),
            format!(
                "default_quantum_us={}",
                self.params.default_quantum_ns / MICROS
            ),
            format!("max_slice_us={}", self.params.max_slice_ns / MICROS),
            format!("quantum_epoch_ms={}", self.epoch_ns as f64 / 1e6),
            format!("miss_rate_source={}", self.sensors.miss_source()),
            format!("assume_miss_percent={}", self.assumed_miss * 100.0),
        ]);
        out
    }
    fn counters(&self) -> &'static [Counter] {
        &COUNTERS
    }
    fn on_process_arrival(&mut self, ctx: &mut Ctx, tgid: u32) {
        self.who.on_process_arrival(ctx, tgid);
    }
    fn on_process_exit(&mut self, tgid: u32) {
        self.who.on_process_exit(tgid);
    }
    // A new thread (which has its creator's slice from the kernel) gets its own quantum, the default one, at
    // the next epoch.
    fn on_thread_start(&mut self, ctx: &mut Ctx, tid: u32, creator_mode: Mode) {
        self.who.on_thread_start(ctx, tid, creator_mode);
    }
    fn on_thread_exit(&mut self, tid: u32) {
        self.who.on_thread_exit(tid);
        self.quanta.remove(&tid);
    }
    fn on_job_end(&mut self, job: u64) {
        self.who.on_job_end(job);
    }
    fn on_arrival(&mut self, ctx: &mut Ctx, arrival: &Arrival) {
        self.who.on_arrival(ctx, arrival);
    }
    fn on_window_end(&mut self, ctx: &mut Ctx, tid: u32) {
        self.who.on_window_end(ctx, tid);
    }
    fn on_deadline(&mut self, ctx: &mut Ctx) {
        self.who.on_deadline(ctx);
    }
    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.who.on_tick(ctx);
        let now = ctx.now();
        if self.next_epoch_ns.is_none_or(|due| now >= due) {
            self.next_epoch_ns = Some(now + self.epoch_ns);
            self.epoch(ctx);
        }
    }
    // tick_needed: that of the policy below. An epoch is taken at the first tick after it is due; while the tick
    // idles it comes at least once an epoch.
    fn tick_needed(&self) -> bool {
        self.who.tick_needed()
    }
    fn idle_tick_at_most(&self) -> Option<Nanos> {
        Some(self.epoch_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{engine, FakeActuator, FakeProbe};
    use crate::engine::Engine;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// The node as a test sets it: the miss rate the next epoch reads, and whether a user is there.
    #[derive(Default)]
    struct Node {
        miss: Option<f64>,
        interactive: bool,
    }

    struct FakeSensors(Rc<RefCell<Node>>);

    impl NodeSensors for FakeSensors {
        fn miss_rate(&mut self) -> Option<f64> {
            self.0.borrow().miss
        }
        fn miss_source(&self) -> String {
            "fake".into()
        }
        fn interactive_user(&mut self) -> bool {
            self.0.borrow().interactive
        }
    }

    const HOST: Host = Host {
        kernel_tick_ns: 4 * MILLIS,
    };

    /// `args` parsed as the policy's flags on a command line.
    fn matches(args: &[&str]) -> clap::ArgMatches {
        use clap::Args;
        DynamicqFlags::augment_args(clap::Command::new("t"))
            .try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
    }

    fn flags(args: &[&str]) -> DynamicqFlags {
        use clap::FromArgMatches;
        DynamicqFlags::from_arg_matches(&matches(args)).unwrap()
    }

    fn dq_engine(
        args: &[&str],
        tgids: &[u32],
    ) -> (Engine<FakeActuator, FakeProbe>, Rc<RefCell<Node>>) {
        let node = Rc::new(RefCell::new(Node::default()));
        let policy = flags(args)
            .build_with(&HOST, Box::new(FakeSensors(node.clone())))
            .unwrap();
        (engine(policy, tgids), node)
    }

    fn slice_ms(e: &Engine<FakeActuator, FakeProbe>, tid: u32) -> Option<f64> {
        e.tracker
            .thread(tid)
            .unwrap()
            .slice_ns
            .map(|s| s as f64 / 1e6)
    }

    fn count(e: &Engine<FakeActuator, FakeProbe>, counter: &str) -> u64 {
        e.counters.policy.get(counter).copied().unwrap_or(0)
    }

    #[test]
    fn a_high_miss_rate_doubles_the_slices_every_epoch_up_to_the_kernels_ceiling_and_oscillates_as_the_seed(
    ) {
        let (mut e, node) = dq_engine(&[], &[10]);
        node.borrow_mut().miss = Some(0.20);
        let mut seen = Vec::new();
        for epoch in 0..9u64 {
            e.on_tick(epoch * 200 * MILLIS);
            seen.push(slice_ms(&e, 10).unwrap());
        }
        // Quanta 3.125 → 6.25 → 12.5 → 25 → 50 → 100 → 200 (100 ≤ MAX_SLICE still doubles) → 100 → 200 → 100:
        // the seed's 0.2 s … 6.4 ↔ 12.8 s scaled by 1/64 (7 doublings, 2 halvings, 200 ms capped twice),
        // applied as slices the kernel keeps under 100 ms.
        assert_eq!(
            seen,
            vec![6.25, 12.5, 25.0, 50.0, 100.0, 100.0, 100.0, 100.0, 100.0]
        );
        assert_eq!(count(&e, EPOCHS), 9);
        assert_eq!(count(&e, DOUBLED), 7);
        assert_eq!(count(&e, HALVED), 2);
        assert_eq!(count(&e, CAPPED), 2);
    }

    #[test]
    fn epochs_come_at_the_first_tick_after_they_are_due() {
        let (mut e, node) = dq_engine(&["--quantum-epoch-ms", "200"], &[10]);
        node.borrow_mut().miss = Some(0.5);
        e.on_tick(0);
        e.on_tick(100 * MILLIS);
        e.on_tick(190 * MILLIS);
        assert_eq!(count(&e, EPOCHS), 1);
        e.on_tick(210 * MILLIS);
        assert_eq!(count(&e, EPOCHS), 2);
        assert_eq!(slice_ms(&e, 10), Some(12.5));
    }

    #[test]
    fn an_interactive_user_sets_every_slice_back_to_the_default_at_the_next_epoch() {
        let (mut e, node) = dq_engine(&[], &[10, 11]);
        node.borrow_mut().miss = Some(0.5);
        for epoch in 0..4u64 {
            e.on_tick(epoch * 200 * MILLIS);
        }
        assert_eq!(slice_ms(&e, 10), Some(50.0));
        node.borrow_mut().interactive = true;
        e.on_tick(800 * MILLIS);
        assert_eq!(
            slice_ms(&e, 10),
            None,
            "the default quantum: the kernel's own slice"
        );
        assert_eq!(slice_ms(&e, 11), None);
        assert_eq!(count(&e, RESET), 2);
        assert_eq!(count(&e, EPOCHS_INTERACTIVE), 1);
        // It stays there while the user is; then grows again.
        e.on_tick(1000 * MILLIS);
        assert_eq!(slice_ms(&e, 10), None);
        node.borrow_mut().interactive = false;
        e.on_tick(1200 * MILLIS);
        assert_eq!(slice_ms(&e, 10), Some(6.25));
    }

    #[test]
    fn only_a_rise_or_max_miss_doubles_and_a_low_steady_rate_keeps_the_quantum() {
        let (mut e, node) = dq_engine(&[], &[10]);
        node.borrow_mut().miss = Some(0.02);
        e.on_tick(0);
        assert_eq!(
            slice_ms(&e, 10),
            None,
            "first reading, 2 % < 9 %: the default quantum"
        );
        node.borrow_mut().miss = Some(0.03);
        e.on_tick(200 * MILLIS);
        assert_eq!(slice_ms(&e, 10), Some(6.25), "rose from 2 % to 3 %");
        e.on_tick(400 * MILLIS);
        assert_eq!(slice_ms(&e, 10), Some(6.25), "steady at 3 %");
        node.borrow_mut().miss = Some(0.01);
        e.on_tick(600 * MILLIS);
        assert_eq!(slice_ms(&e, 10), Some(6.25), "fell");
    }

    #[test]
    fn without_a_miss_rate_the_assumed_one_decides() {
        // Default: 0 %: STATICQ at the default quantum.
        let (mut e, _node) = dq_engine(&[], &[10]);
        e.on_tick(0);
        e.on_tick(200 * MILLIS);
        assert_eq!(slice_ms(&e, 10), None, "the kernel's own slice");
        assert_eq!(count(&e, EPOCHS_NO_MISS_RATE), 2);
        // 100 %, above MAX_MISS: the quanta grow.
        let (mut e, _node) = dq_engine(&["--assume-miss-percent", "100"], &[10]);
        e.on_tick(0);
        e.on_tick(200 * MILLIS);
        assert_eq!(slice_ms(&e, 10), Some(12.5));
    }

    #[test]
    fn a_thread_starts_at_the_default_quantum_and_an_exited_one_is_forgotten() {
        let (mut e, _node) = dq_engine(&[], &[10]);
        assert_eq!(slice_ms(&e, 10), None, "nothing before the first epoch");
        e.on_tick(0);
        assert_eq!(
            slice_ms(&e, 10),
            None,
            "the default quantum: no custom slice"
        );
        e.on_thread_exit(10);
        e.on_tick(200 * MILLIS);
        assert_eq!(count(&e, EPOCHS), 2);
    }

    #[test]
    fn over_pred_boosts_only_a_process_whose_sockets_held_data_and_over_dcs_by_the_dcs_rule() {
        for (args, boosts_without_history, over) in [
            (&["--over", "pred"][..], false, "over=pred"),
            (&[][..], true, "over=dcs"),
        ] {
            let (mut e, _node) = dq_engine(args, &[11]);
            {
                let mut tasks = e.probe.tasks.borrow_mut();
                let t = tasks.get_mut(&11).unwrap();
                t.r_milli = 2000;
                t.preempted = 1;
            }
            e.on_tick(0);
            // A message for 11, whose sockets never held data: pred's average is 0.
            e.on_arrival(
                &crate::engine::tests::arrival(11, 2, 50 * MILLIS),
                50 * MILLIS,
            );
            let boosted = matches!(
                e.tracker.thread(11).unwrap().mode,
                crate::tracker::Mode::Boosted { .. }
            );
            assert_eq!(boosted, boosts_without_history, "{args:?}");
            // The quanta are DYNAMICQ's either way.
            assert_eq!(slice_ms(&e, 11), None, "{args:?}: the default quantum");
            let policy = flags(args)
                .build_with(&HOST, Box::new(FakeSensors(Rc::default())))
                .unwrap();
            assert_eq!(policy.describe()[0], over);
        }
    }

    /// The agent's own command line: a flag of the rule `--over` did not choose is an error that says which
    /// `--over` it needs.
    #[test]
    fn a_flag_of_the_rule_not_chosen_is_an_error() {
        let check = |args: &[&str]| DynamicqFlags::check_given(&matches(args));
        let err = check(&["--over", "pred", "--exponent", "3"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--exponent") && err.contains("--over dcs"),
            "{err}"
        );
        let err = check(&["--p-percent", "50"]).unwrap_err().to_string();
        assert!(
            err.contains("--p-percent") && err.contains("--over pred"),
            "{err}"
        );
        check(&["--exponent", "3", "--boost-us", "800"]).unwrap();
        check(&["--over", "pred", "--p-percent", "50", "--ceiling"]).unwrap();
    }

    #[test]
    fn bad_constants_name_their_flag() {
        for (args, flag) in [
            (&["--max-miss-percent", "120"][..], "--max-miss-percent"),
            (&["--default-quantum-us", "50"][..], "--default-quantum-us"),
            (
                &["--default-quantum-us", "200000"][..],
                "--default-quantum-us",
            ),
            (&["--max-slice-us", "1000"][..], "--max-slice-us"),
            (
                &["--assume-miss-percent", "101"][..],
                "--assume-miss-percent",
            ),
            (&["--quantum-epoch-ms", "0"][..], "--quantum-epoch-ms"),
        ] {
            let node = Rc::new(RefCell::new(Node::default()));
            let err = flags(args)
                .build_with(&HOST, Box::new(FakeSensors(node)))
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(flag), "{args:?}: {err}");
        }
        let mut cmd = DynamicqFlags::augment_args(clap::Command::new("t"));
        use clap::Args;
        let err = cmd
            .try_get_matches_from_mut(["t", "--miss-rate-source", "pmu"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("auto, perf, none or file:PATH"), "{err}");
    }
}
