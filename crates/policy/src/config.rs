//! # One policy configuration: how a user picks a policy and sets its parameters
//!
//! ## Problem
//! A policy's parameters were named in several places that had to agree by hand: the registry printed by
//! `cosched policies`, the experiment file's fields, the code that turned them into the rule's parameters, and
//! the agent's flags. They drifted (the registry lacked the budget's `floor_ms`).
//!
//! ## Approach
//! A policy is one tagged value, [`PolicyConfig`]: its `kind` plus the parameters of that kind, one struct per
//! policy ([`NoneConfig`], [`DcsConfig`], [`BudgetConfig`]). In TOML it is one table,
//! `policy = { kind = "dcs", exponent = 2, constant_ms = 100 }`. Each struct is the single source of:
//! - the fields a file may give (anything else is an error naming the field, the kind and the valid fields);
//! - their defaults (a missing field takes [`Default`], which comes from the rule's own constants);
//! - their description in the registry ([`PolicyParameters::params`]: name, unit, value, meaning), so
//!   `cosched policies` is generated from these types and cannot drift from them;
//! - their validation and conversion, in user units (`_ms`, `_ppm`), to the rule's parameters in nanoseconds
//!   ([`DcsConfig::to_params`] → [`DcsParams`], [`BudgetConfig::to_params`] → [`BudgetParams`]).
//!
//! ## Terminology
//! - *kind* — the policy's registry name (`none`, `dcs`, `budget`), the `kind` field of its table.
//! - *parameter* — one field of a kind's struct; its name is the TOML key and, with `_` → `-`, the agent flag
//!   (`constant_ms` ↔ `--constant-ms`).
//!
//! ## Adding a policy
//! One row in the policy table in `lib.rs` ([`crate::every_policy`]: the variant, its module and its parameters'
//! type) and the policy's own file beside `dcs.rs`, holding its rule and its `<Name>Config` struct
//! (`#[serde(default, deny_unknown_fields)]`) that implements [`PolicyParameters`] (from `parameters.rs`; the
//! example policy is the template). [`PolicyConfig`], [`PolicyConfig::every_kind`] and [`PolicyConfig::parameters`] are generated from
//! the table; the tests check that the enum, the list and the registry name the same kinds with the same fields
//! and defaults. (The older kinds' structs live here, in this file.)
//!
//! Seeds: DCS is `000_e8004e1596fde6a5.txt` §3.3.3; the budget is ours (`000` fn. 6, `002` §2.2.1).

use crate::budget::{BudgetError, BudgetParams};
use crate::dcs::DcsParams;
use crate::predictive::{Counted, FreqParams, PbParams, Rounding};
use crate::scs::{check_mpl, Next, Wait, DEFAULT_MPL};
use crate::{Nanos, MILLIS};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt::Display;

pub use crate::parameters::{ParamInfo, PolicyConfigError, PolicyParameters};

/// Expands the policy table ([`crate::every_policy`], one row per policy) into [`PolicyConfig`],
/// [`PolicyConfig::every_kind`] and [`PolicyConfig::parameters`], so the three cannot disagree.
macro_rules! policy_config {
    ($( $(#[$doc:meta])* $variant:ident($module:ident, $parameters:ident), )*) => {
        /// The coscheduling policy of a run or of the agent, with its parameters: a table tagged by `kind`.
        ///
        /// ```toml
        /// policy = { kind = "dcs", exponent = 2, constant_ms = 100 }
        /// ```
        ///
        /// Its variants are the rows of the policy table in `lib.rs` ([`crate::every_policy`]).
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(
            tag = "kind",
            rename_all = "kebab-case",
            expecting = "a policy table with its kind, e.g. { kind = \"dcs\", exponent = 2, constant_ms = 100 } \
                         (kinds: see `cosched policies`)"
        )]
        pub enum PolicyConfig {
            $( $(#[$doc])* $variant(#[serde(deserialize_with = "parameters_of_kind")] crate::$module::$parameters), )*
        }

        impl PolicyConfig {
            /// Every kind at its defaults, in the order `cosched policies` lists them (the table's).
            pub fn every_kind() -> Vec<PolicyConfig> {
                vec![$( PolicyConfig::$variant(crate::$module::$parameters::default()), )*]
            }

            /// This configuration's parameter struct: the one place that looks at the variant.
            pub fn parameters(&self) -> &dyn PolicyParameters {
                match self {
                    $( PolicyConfig::$variant(c) => c, )*
                }
            }
        }
    };
}

every_policy!(policy_config);

impl PolicyConfig {
    /// The registry name, the `kind` of the table.
    pub fn kind(&self) -> &'static str {
        self.parameters().kind()
    }

    /// Checks every parameter, naming the first bad one.
    pub fn validate(&self) -> Result<(), PolicyConfigError> {
        self.parameters().validate()
    }

    /// One line for run headers: the kind and every parameter, e.g. `dcs exponent=2 constant_ms=100`.
    pub fn label(&self) -> String {
        let mut label = self.kind().to_string();
        for p in self.parameters().params() {
            label.push_str(&format!(" {}={}", p.name, p.default));
        }
        label
    }
}

/// Deserialises one kind's parameters, so that any error names the kind and, below the table, the field
/// (inside a tagged table serde itself loses the path).
fn parameters_of_kind<'de, D, P>(deserializer: D) -> Result<P, D::Error>
where
    D: Deserializer<'de>,
    P: PolicyParameters + Default + Deserialize<'de>,
{
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let kind = P::default().kind();
        let path = e.path().to_string();
        // Some formats end their messages with a newline; the context goes on the same line.
        let inner = e.into_inner().to_string();
        let inner = inner.trim_end();
        if path == "." {
            D::Error::custom(format!("{inner} (in a kind = \"{kind}\" policy)"))
        } else {
            D::Error::custom(format!("{path}: {inner} (in a kind = \"{kind}\" policy)"))
        }
    })
}

fn param(
    name: &'static str,
    unit: &'static str,
    value: impl Display,
    description: &'static str,
) -> ParamInfo {
    ParamInfo {
        name,
        unit,
        default: value.to_string(),
        description,
    }
}

/// The longest duration a millisecond parameter may give: an hour is far beyond any useful setting.
pub const MAX_PARAMETER_MS: f64 = 3_600_000.0;

/// The one millisecond parser (experiment files, policy tables and the agent's flags): `ms` as nanoseconds,
/// rounded, or what is wrong with it unless it is a number in `0..=MAX_PARAMETER_MS`.
pub fn parse_millis(ms: f64) -> Result<Nanos, String> {
    if !(ms.is_finite() && (0.0..=MAX_PARAMETER_MS).contains(&ms)) {
        return Err(format!(
            "{ms} ms is out of range; give a number of milliseconds in 0..={MAX_PARAMETER_MS}"
        ));
    }
    Ok((ms * MILLIS as f64).round() as Nanos)
}

/// The one microsecond parser (the agent's `--*-us` flags): `us` as nanoseconds, or what is wrong with it unless
/// it is at most [`MAX_PARAMETER_MS`] (checked: an unchecked `us * 1000` wraps in a release build).
pub fn parse_micros(us: u64) -> Result<Nanos, String> {
    us.checked_mul(crate::MICROS)
        .filter(|&ns| ns as f64 <= MAX_PARAMETER_MS * MILLIS as f64)
        .ok_or_else(|| {
            format!(
                "{us} µs is out of range; give a number of microseconds up to {}",
                MAX_PARAMETER_MS as u64 * 1000
            )
        })
}

/// [`parse_millis`], its error naming policy `kind`'s `field`.
pub fn millis_to_nanos(
    kind: &'static str,
    field: &'static str,
    ms: f64,
) -> Result<Nanos, PolicyConfigError> {
    parse_millis(ms).map_err(|message| PolicyConfigError {
        kind,
        field,
        message,
    })
}

fn nanos_to_millis(ns: Nanos) -> f64 {
    ns as f64 / MILLIS as f64
}

/// `kind = "none"`: no coscheduling, the node's own scheduler alone. No parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoneConfig {}

impl PolicyParameters for NoneConfig {
    fn kind(&self) -> &'static str {
        "none"
    }
    fn summary(&self) -> &'static str {
        "uncoordinated: the node's own scheduler alone (the seeds' 'No DCS' baseline)"
    }
    fn seed(&self) -> &'static str {
        "000_e8004e1596fde6a5.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        Vec::new()
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        Ok(())
    }
}

/// `kind = "dcs"`: the fairness rule `2^E (Tc - Tp) + C >= Tq R` ([`crate::dcs`]). `Tq` and `R` come from the
/// node. Defaults: the seed's spin-only setting, `E = -1, C = 0` ([`DcsParams::default`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DcsConfig {
    /// `E`: the exponent applied to the time since the previous boost.
    pub exponent: i32,
    /// `C`: constant offset, milliseconds.
    pub constant_ms: f64,
}

impl DcsConfig {
    /// The rule's parameters, after checking them.
    pub fn to_params(&self) -> Result<DcsParams, PolicyConfigError> {
        let kind = self.kind();
        let params = DcsParams {
            exponent: self.exponent,
            constant_ns: millis_to_nanos(kind, "constant_ms", self.constant_ms)?,
        };
        params.validate().map_err(|_| PolicyConfigError {
            kind,
            field: "exponent",
            message: format!(
                "{} is out of range -{1}..={1} (the seed used -1 for spin-only and 2 for spin-block)",
                self.exponent,
                DcsParams::MAX_ABS_EXPONENT
            ),
        })?;
        Ok(params)
    }
}

impl From<DcsParams> for DcsConfig {
    fn from(p: DcsParams) -> Self {
        DcsConfig {
            exponent: p.exponent,
            constant_ms: nanos_to_millis(p.constant_ns),
        }
    }
}

impl Default for DcsConfig {
    fn default() -> Self {
        DcsParams::default().into()
    }
}

impl PolicyParameters for DcsConfig {
    fn kind(&self) -> &'static str {
        "dcs"
    }
    fn summary(&self) -> &'static str {
        "dynamic coscheduling: boost a receiver that is not running when 2^E (Tc - Tp) + C >= Tq R"
    }
    fn seed(&self) -> &'static str {
        "000_e8004e1596fde6a5.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        vec![
            param(
                "exponent",
                "",
                self.exponent,
                "E; the paper used -1 for spin-only and 2 for spin-block",
            ),
            param(
                "constant_ms",
                "ms",
                self.constant_ms,
                "C; the paper used 0 for spin-only and 100 for spin-block",
            ),
        ]
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "budget"`: the CPU-time token bucket that caps a process's boosts at its fair share
/// ([`crate::budget`]). Defaults: [`BudgetParams::DEFAULT`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    /// Multiplier of the fair share `1/R`, parts per million (`1000000` = exactly fair).
    pub slack_ppm: u64,
    /// Largest credit, milliseconds.
    pub burst_ms: f64,
    /// Most debt kept, milliseconds.
    pub floor_ms: f64,
    /// Debt beyond which the process is overdrawn, milliseconds.
    pub demote_ms: f64,
    /// Credit at which an overdrawn process has repaid, milliseconds.
    pub resume_ms: f64,
    /// Credit a new account opens with, milliseconds (at most `burst_ms`).
    pub open_ms: f64,
}

impl BudgetConfig {
    /// The rule's parameters, after checking them.
    pub fn to_params(&self) -> Result<BudgetParams, PolicyConfigError> {
        let kind = self.kind();
        let params = BudgetParams {
            slack_ppm: self.slack_ppm,
            burst_ns: millis_to_nanos(kind, "burst_ms", self.burst_ms)?,
            floor_ns: millis_to_nanos(kind, "floor_ms", self.floor_ms)?,
            demote_ns: millis_to_nanos(kind, "demote_ms", self.demote_ms)?,
            resume_ns: millis_to_nanos(kind, "resume_ms", self.resume_ms)?,
            open_ns: millis_to_nanos(kind, "open_ms", self.open_ms)?,
        };
        params.validate().map_err(|e| {
            let field = match e {
                BudgetError::Slack(_) => "slack_ppm",
                BudgetError::Burst => "burst_ms",
                BudgetError::Demote { .. } => "demote_ms",
                BudgetError::Resume { .. } => "resume_ms",
                BudgetError::Open { .. } => "open_ms",
            };
            PolicyConfigError {
                kind,
                field,
                message: e.to_string(),
            }
        })?;
        Ok(params)
    }
}

impl From<BudgetParams> for BudgetConfig {
    fn from(p: BudgetParams) -> Self {
        BudgetConfig {
            slack_ppm: p.slack_ppm,
            burst_ms: nanos_to_millis(p.burst_ns),
            floor_ms: nanos_to_millis(p.floor_ns),
            demote_ms: nanos_to_millis(p.demote_ns),
            resume_ms: nanos_to_millis(p.resume_ns),
            open_ms: nanos_to_millis(p.open_ns),
        }
    }
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetParams::DEFAULT.into()
    }
}

impl PolicyParameters for BudgetConfig {
    fn kind(&self) -> &'static str {
        "budget"
    }
    fn summary(&self) -> &'static str {
        "boost budget: a process's CPU time may not exceed its fair share slack/R of wall time plus a burst"
    }
    fn seed(&self) -> &'static str {
        "000_e8004e1596fde6a5.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        vec![
            param(
                "slack_ppm",
                "ppm",
                self.slack_ppm,
                "multiplier of the fair share 1/R; 1000000 is exactly fair",
            ),
            param(
                "burst_ms",
                "ms",
                self.burst_ms,
                "largest CPU credit a process may bank",
            ),
            param(
                "floor_ms",
                "ms",
                self.floor_ms,
                "most debt kept: the balance never falls below -floor_ms (at least demote_ms)",
            ),
            param(
                "demote_ms",
                "ms",
                self.demote_ms,
                "debt beyond which the process is overdrawn and yields (nice 19) until repaid",
            ),
            param(
                "resume_ms",
                "ms",
                self.resume_ms,
                "credit at which a process that yielded runs normally again (at most burst_ms)",
            ),
            param(
                "open_ms",
                "ms",
                self.open_ms,
                "credit a new account opens with (at most burst_ms): one coscheduled stretch, not the whole burst",
            ),
        ]
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "pred"`: predictive coscheduling ([`crate::predictive`]): Linux 2.2's `goodness()` adds the moving
/// average of the task's socket queues, received and sent, in 4 KB packets. Defaults: `P` = 90 % (the seed's
/// "P ≈ 1", its best for IS and MG), floor rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PredConfig {
    /// `P`, the weight of the past average, percent.
    pub p_percent: u32,
    /// `[bytes / 4096]` rounds up instead of down.
    pub ceiling: bool,
}

impl Default for PredConfig {
    fn default() -> Self {
        PredConfig {
            p_percent: 90,
            ceiling: false,
        }
    }
}

fn freq_params(
    kind: &'static str,
    counted: Counted,
    p_percent: u32,
    ceiling: bool,
) -> Result<FreqParams, PolicyConfigError> {
    let params = FreqParams {
        p_percent,
        counted,
        rounding: if ceiling {
            Rounding::Ceiling
        } else {
            Rounding::Floor
        },
    };
    params.validate().map_err(|message| PolicyConfigError {
        kind,
        field: "p_percent",
        message,
    })?;
    Ok(params)
}

fn freq_param_infos(p_percent: u32, ceiling: bool) -> Vec<ParamInfo> {
    vec![
        param(
            "p_percent",
            "%",
            p_percent,
            "P, the weight of the past in freq = P freq + (1 - P) cur; the seed's P ≈ 0 and P ≈ 1 (10 and 90)",
        ),
        param(
            "ceiling",
            "",
            ceiling,
            "round [bytes / 4096] up (any queued byte counts one packet) instead of down as the kernel does",
        ),
    ]
}

impl PredConfig {
    /// The rule's parameters, after checking them.
    pub fn to_params(&self) -> Result<FreqParams, PolicyConfigError> {
        freq_params(
            self.kind(),
            Counted::SendAndReceive,
            self.p_percent,
            self.ceiling,
        )
    }
}

impl PolicyParameters for PredConfig {
    fn kind(&self) -> &'static str {
        "pred"
    }
    fn summary(&self) -> &'static str {
        "predictive coscheduling: Linux 2.2 goodness += moving average of the bytes queued on the task's sockets, received and sent (4 KB units)"
    }
    fn seed(&self) -> &'static str {
        "003_d5c4b72e5fa91aa6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        freq_param_infos(self.p_percent, self.ceiling)
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "dyn"`: [`PredConfig`]'s rule counting the receive queues only (seed `003`'s DYN; not seed `000`'s
/// DCS: no preemption on arrival, only the goodness term).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DynConfig {
    /// `P`, the weight of the past average, percent.
    pub p_percent: u32,
    /// `[bytes / 4096]` rounds up instead of down.
    pub ceiling: bool,
}

impl Default for DynConfig {
    fn default() -> Self {
        DynConfig {
            p_percent: 90,
            ceiling: false,
        }
    }
}

impl DynConfig {
    /// The rule's parameters, after checking them.
    pub fn to_params(&self) -> Result<FreqParams, PolicyConfigError> {
        freq_params(
            self.kind(),
            Counted::ReceiveOnly,
            self.p_percent,
            self.ceiling,
        )
    }
}

impl PolicyParameters for DynConfig {
    fn kind(&self) -> &'static str {
        "dyn"
    }
    fn summary(&self) -> &'static str {
        "PRED counting received data only: Linux 2.2 goodness += moving average of the task's receive queues"
    }
    fn seed(&self) -> &'static str {
        "003_d5c4b72e5fa91aa6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        freq_param_infos(self.p_percent, self.ceiling)
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "pb"`: Periodic Boost ([`crate::predictive::next_to_boost`]). Default period 10 ms (assumed; seed
/// `001` gives none).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PbConfig {
    /// How often the monitor scans each node, milliseconds.
    pub period_ms: f64,
}

impl Default for PbConfig {
    fn default() -> Self {
        PbConfig {
            period_ms: nanos_to_millis(PbParams::DEFAULT.period_ns),
        }
    }
}

impl PbConfig {
    /// The rule's parameters, after checking them.
    pub fn to_params(&self) -> Result<PbParams, PolicyConfigError> {
        let period_ns = millis_to_nanos(self.kind(), "period_ms", self.period_ms)?;
        if period_ns == 0 {
            return Err(PolicyConfigError {
                kind: self.kind(),
                field: "period_ms",
                message: "must be positive (the notes assume 10 ms, swept over 1-100 ms)".into(),
            });
        }
        Ok(PbParams { period_ns })
    }
}

impl PolicyParameters for PbConfig {
    fn kind(&self) -> &'static str {
        "pb"
    }
    fn summary(&self) -> &'static str {
        "periodic boost: every period, boost the next process (round robin) that holds unconsumed messages and waits to run"
    }
    fn seed(&self) -> &'static str {
        "001_cc73854eda2a0ea6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        vec![param(
            "period_ms",
            "ms",
            self.period_ms,
            "how often the monitor scans each node's processes",
        )]
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "fifo"`: FIFO static space sharing (seed `001` §3.2, the slowdown reference): jobs start in arrival
/// order when a CPU per process is free ([`crate::scs::admit_fcfs`] at MPL 1) and keep those CPUs to the end.
/// No parameters. Simulated on the shared-memory machine (`cosched-sim`'s `smp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FifoConfig {}

impl PolicyParameters for FifoConfig {
    fn kind(&self) -> &'static str {
        "fifo"
    }
    fn summary(&self) -> &'static str {
        "static space sharing: FCFS, one dedicated CPU per process, no re-partitioning (seed 001's reference)"
    }
    fn seed(&self) -> &'static str {
        "001_cc73854eda2a0ea6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        Vec::new()
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        Ok(())
    }
}

/// The parameters SCS and CS share: the MPL and the two in-CPU rules ([`crate::scs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InCpuParams {
    pub mpl: u32,
    pub wait: Wait,
    pub next: Next,
}

/// The longest spin a receive may be given before blocking: a second is far beyond any useful setting.
pub const MAX_SPIN_US: f64 = 1_000_000.0;

fn in_cpu_params(
    kind: &'static str,
    mpl: u32,
    spin_us: f64,
    by_messages: bool,
) -> Result<InCpuParams, PolicyConfigError> {
    check_mpl(mpl).map_err(|e| PolicyConfigError {
        kind,
        field: "mpl",
        message: e.to_string(),
    })?;
    if !(spin_us.is_finite() && (0.0..=MAX_SPIN_US).contains(&spin_us)) {
        return Err(PolicyConfigError {
            kind,
            field: "spin_us",
            message: format!(
                "{spin_us} us is out of range; give microseconds in 0..={MAX_SPIN_US} (0 is BI; the seed's SB uses 800 and 1200)"
            ),
        });
    }
    let spin_ns = (spin_us * crate::MICROS as f64).round() as Nanos;
    Ok(InCpuParams {
        mpl,
        wait: Wait::from_spin(spin_ns),
        next: if by_messages {
            Next::MostMessages
        } else {
            Next::RoundRobin
        },
    })
}

fn in_cpu_param_infos(mpl: u32, spin_us: f64, by_messages: bool) -> Vec<ParamInfo> {
    vec![
        param(
            "mpl",
            "",
            mpl,
            "multiprogramming level: the most processes a CPU holds (the seed uses 2, 4, 6)",
        ),
        param(
            "spin_us",
            "us",
            spin_us,
            "spin before blocking in a receive: 0 is BI (block immediately), the seed's SB uses 800 and 1200",
        ),
        param(
            "by_messages",
            "",
            by_messages,
            "after a block, run the process with the most unconsumed messages (Msg) instead of the next (RR)",
        ),
    ]
}

/// `kind = "scs"`: Self Co-Scheduling (seed `001` §3.1): a partition of `ceil(procs / mpl)` CPUs per job, grown
/// by equipartition while nothing waits, processes in rank order, run until block (BI / SB), then RR or Msg.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScsConfig {
    pub mpl: u32,
    pub spin_us: f64,
    pub by_messages: bool,
}

impl Default for ScsConfig {
    fn default() -> Self {
        ScsConfig {
            mpl: DEFAULT_MPL,
            spin_us: 0.0,
            by_messages: false,
        }
    }
}

impl ScsConfig {
    /// The rules' parameters, after checking them.
    pub fn to_params(&self) -> Result<InCpuParams, PolicyConfigError> {
        in_cpu_params(self.kind(), self.mpl, self.spin_us, self.by_messages)
    }
}

impl PolicyParameters for ScsConfig {
    fn kind(&self) -> &'static str {
        "scs"
    }
    fn summary(&self) -> &'static str {
        "self co-scheduling: a CPU partition per job sized by the MPL, ranks in order, run until block, then RR or Msg"
    }
    fn seed(&self) -> &'static str {
        "001_cc73854eda2a0ea6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        in_cpu_param_infos(self.mpl, self.spin_us, self.by_messages)
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

/// `kind = "cs"`: SCS's in-CPU rules with no partitions (seed `001` §3.2): a job's ranks one per CPU on the
/// least-loaded CPUs, up to `mpl` processes (of different jobs) per CPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CsConfig {
    pub mpl: u32,
    pub spin_us: f64,
    pub by_messages: bool,
}

impl Default for CsConfig {
    fn default() -> Self {
        let scs = ScsConfig::default();
        CsConfig {
            mpl: scs.mpl,
            spin_us: scs.spin_us,
            by_messages: scs.by_messages,
        }
    }
}

impl CsConfig {
    /// The rules' parameters, after checking them.
    pub fn to_params(&self) -> Result<InCpuParams, PolicyConfigError> {
        in_cpu_params(self.kind(), self.mpl, self.spin_us, self.by_messages)
    }
}

impl PolicyParameters for CsConfig {
    fn kind(&self) -> &'static str {
        "cs"
    }
    fn summary(&self) -> &'static str {
        "SCS's in-CPU rules without partitions: each CPU holds processes of up to MPL different jobs"
    }
    fn seed(&self) -> &'static str {
        "001_cc73854eda2a0ea6.txt"
    }
    fn params(&self) -> Vec<ParamInfo> {
        in_cpu_param_infos(self.mpl, self.spin_us, self.by_messages)
    }
    fn validate(&self) -> Result<(), PolicyConfigError> {
        self.to_params().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_convert_checked_up_to_an_hour() {
        assert_eq!(parse_micros(1500), Ok(1_500_000));
        assert_eq!(parse_micros(3_600_000_000), Ok(3_600_000_000_000));
        assert!(parse_micros(3_600_000_001)
            .unwrap_err()
            .contains("out of range"));
        // 2^64 / 1000 µs would wrap to a small duration in a release build.
        assert!(parse_micros(u64::MAX).is_err());
        assert!(parse_millis(f64::NAN).is_err() && parse_millis(-1.0).is_err());
        assert_eq!(parse_millis(2.5), Ok(2_500_000));
    }

    /// A policy table as an experiment file writes it.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        policy: PolicyConfig,
    }

    fn parse(table: &str) -> Result<PolicyConfig, String> {
        toml::from_str::<File>(&format!("policy = {{ {table} }}"))
            .map(|f| f.policy)
            .map_err(|e| e.to_string())
    }

    /// The names in backticks after "expected" in serde's unknown-field or unknown-variant message.
    fn expected_names(message: &str) -> Vec<String> {
        if message.contains("there are no fields") {
            return Vec::new();
        }
        let after = message
            .split_once("expected")
            .unwrap_or_else(|| panic!("no 'expected' in {message}"))
            .1;
        after
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    /// A value other than `default` that is still valid, as TOML: one more than the default (a flag flipped).
    fn another_value(default: &str) -> String {
        if let Ok(b) = default.parse::<bool>() {
            return (!b).to_string();
        }
        let d: f64 = default.parse().unwrap();
        format!("{}", d + 1.0)
    }

    #[test]
    fn every_kind_is_its_table_with_only_the_kind() {
        for policy in PolicyConfig::every_kind() {
            assert_eq!(
                parse(&format!("kind = \"{}\"", policy.kind())),
                Ok(policy),
                "{}",
                policy.kind()
            );
        }
    }

    #[test]
    fn the_tagged_enum_knows_exactly_the_kinds_in_every_kind() {
        // serde lists the enum's variants when a kind is unknown; they must be the kinds every_kind() lists.
        let err = parse("kind = \"gang\"").unwrap_err();
        assert!(err.contains("unknown variant `gang`"), "{err}");
        let kinds: Vec<String> = PolicyConfig::every_kind()
            .iter()
            .map(|p| p.kind().to_string())
            .collect();
        assert_eq!(expected_names(&err), kinds, "{err}");
    }

    #[test]
    fn each_kinds_table_accepts_exactly_its_registry_parameters_with_their_defaults() {
        for policy in PolicyConfig::every_kind() {
            let kind = policy.kind();
            // The registry lists exactly these (registry::all is built from them; its tests check that).
            let params = policy.parameters().params();
            // The fields the table accepts are the ones serde lists for an unknown field: the registry's.
            let err = parse(&format!("kind = \"{kind}\", no_such_field = 1")).unwrap_err();
            let registered: Vec<&str> = params.iter().map(|p| p.name).collect();
            assert_eq!(expected_names(&err), registered, "{kind}: {err}");
            for p in &params {
                // Written out at the registry's default, the parameter gives the kind's default...
                let at_default = parse(&format!("kind = \"{kind}\", {} = {}", p.name, p.default));
                assert_eq!(at_default, Ok(policy), "{kind}.{} = {}", p.name, p.default);
                // ...and at another value it is read (not merely accepted).
                let other = another_value(&p.default);
                let changed = parse(&format!("kind = \"{kind}\", {} = {other}", p.name)).unwrap();
                assert_ne!(changed, policy, "{kind}.{} = {other} was ignored", p.name);
            }
        }
    }

    #[test]
    fn a_kind_that_does_nothing_has_no_parameters() {
        // A half runs such a kind as no coscheduling, so no parameter of it could be read.
        let idle: Vec<&str> = PolicyConfig::every_kind()
            .iter()
            .filter(|p| p.parameters().does_nothing())
            .inspect(|p| assert_eq!(p.parameters().params(), [], "{}", p.kind()))
            .map(PolicyConfig::kind)
            .collect();
        // The example policy is one.
        assert!(!idle.is_empty());
    }

    #[test]
    fn an_unknown_field_names_itself_the_kind_and_the_valid_fields() {
        let err = parse("kind = \"dcs\", exponnt = 2").unwrap_err();
        assert!(
            err.contains(
                "exponnt: unknown field `exponnt`, expected `exponent` or `constant_ms` (in a kind = \"dcs\" policy)"
            ),
            "{err}"
        );
        let err = parse("kind = \"none\", exponent = 2").unwrap_err();
        assert!(
            err.contains(
                "exponent: unknown field `exponent`, there are no fields (in a kind = \"none\" policy)"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_wrong_type_names_the_field_and_the_kind() {
        let err = parse("kind = \"budget\", floor_ms = \"lots\"").unwrap_err();
        assert!(
            err.contains("floor_ms: invalid type: string \"lots\", expected f64 (in a kind = \"budget\" policy)"),
            "{err}"
        );
    }

    #[test]
    fn a_bare_name_or_a_missing_kind_says_what_a_policy_table_is() {
        let err = toml::from_str::<File>("policy = \"dcs\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected a policy table with its kind, e.g. { kind = \"dcs\""),
            "{err}"
        );
        let err = parse("exponent = 2").unwrap_err();
        assert!(err.contains("missing field `kind`"), "{err}");
    }

    #[test]
    fn dcs_converts_milliseconds_to_the_rules_nanoseconds() {
        // The seed's spin-block setting: E = 2, C = 100 ms = 100,000,000 ns.
        let dcs = parse("kind = \"dcs\", exponent = 2, constant_ms = 100").unwrap();
        let PolicyConfig::Dcs(dcs) = dcs else {
            panic!("{dcs:?}")
        };
        assert_eq!(dcs.to_params(), Ok(DcsParams::SPIN_BLOCK));
        assert_eq!(DcsConfig::default().to_params(), Ok(DcsParams::SPIN_ONLY));
        // 0.5 ms = 500,000 ns: fractions of a millisecond are kept.
        let half = DcsConfig {
            exponent: 0,
            constant_ms: 0.5,
        };
        assert_eq!(half.to_params().unwrap().constant_ns, 500_000);
    }

    #[test]
    fn dcs_refuses_an_exponent_beyond_40_and_a_negative_constant() {
        let wide = PolicyConfig::Dcs(DcsConfig {
            exponent: 99,
            constant_ms: 0.0,
        });
        let err = wide.validate().unwrap_err();
        assert_eq!(err.field, "exponent");
        assert!(
            err.to_string()
                .starts_with("exponent: 99 is out of range -40..=40"),
            "{err}"
        );
        let negative = DcsConfig {
            exponent: 0,
            constant_ms: -1.0,
        };
        assert_eq!(negative.to_params().unwrap_err().field, "constant_ms");
        let infinite = DcsConfig {
            exponent: 0,
            constant_ms: f64::INFINITY,
        };
        assert_eq!(infinite.to_params().unwrap_err().field, "constant_ms");
    }

    #[test]
    fn budget_converts_and_names_the_field_that_breaks_a_rule() {
        assert_eq!(
            BudgetConfig::default().to_params(),
            Ok(BudgetParams::DEFAULT)
        );
        // demote 200 ms > floor 160 ms: a debt of 200 ms can never be reached, so demotion could never trigger.
        let deep = BudgetConfig {
            demote_ms: 200.0,
            ..BudgetConfig::default()
        };
        let err = deep.to_params().unwrap_err();
        assert_eq!((err.kind, err.field), ("budget", "demote_ms"), "{err}");
        let unfair = BudgetConfig {
            slack_ppm: 0,
            ..BudgetConfig::default()
        };
        assert_eq!(unfair.to_params().unwrap_err().field, "slack_ppm");
    }

    #[test]
    fn label_gives_the_kind_and_every_parameter() {
        assert_eq!(PolicyConfig::None(NoneConfig {}).label(), "none");
        let seed_spin_block = PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into());
        assert_eq!(seed_spin_block.label(), "dcs exponent=2 constant_ms=100");
        assert_eq!(
            PolicyConfig::Budget(BudgetConfig::default()).label(),
            "budget slack_ppm=1000000 burst_ms=160 floor_ms=160 demote_ms=10 resume_ms=60 open_ms=60"
        );
    }

    #[test]
    fn a_policy_serialises_back_to_its_table() {
        let dcs = PolicyConfig::Dcs(DcsParams::SPIN_BLOCK.into());
        #[derive(Serialize)]
        struct Out {
            policy: PolicyConfig,
        }
        let text = toml::to_string(&Out { policy: dcs }).unwrap();
        let back: File = toml::from_str(&text).unwrap();
        assert_eq!(back.policy, dcs, "{text}");
    }

    #[test]
    fn pred_dyn_and_pb_convert_and_name_the_field_at_fault() {
        // PRED and DYN differ only in what they count; ceiling = true rounds up; P = 101 % is refused.
        let pred = PredConfig {
            p_percent: 10,
            ceiling: true,
        };
        let p = pred.to_params().unwrap();
        assert_eq!(
            (p.p_percent, p.counted, p.rounding),
            (10, Counted::SendAndReceive, Rounding::Ceiling)
        );
        assert_eq!(
            DynConfig::default().to_params().unwrap(),
            FreqParams::dyn_(90)
        );
        let err = PredConfig {
            p_percent: 101,
            ceiling: false,
        }
        .validate()
        .unwrap_err();
        assert_eq!((err.kind, err.field), ("pred", "p_percent"));
        // PB: 2.5 ms → 2,500,000 ns; 0 is refused.
        let pb = PbConfig { period_ms: 2.5 }.to_params().unwrap();
        assert_eq!(pb.period_ns, 2_500_000);
        let err = PbConfig { period_ms: 0.0 }.validate().unwrap_err();
        assert_eq!((err.kind, err.field), ("pb", "period_ms"));
    }

    #[test]
    fn scs_and_cs_convert_and_name_the_field_at_fault() {
        let scs = parse("kind = \"scs\", mpl = 6, spin_us = 800, by_messages = true").unwrap();
        let PolicyConfig::Scs(c) = scs else {
            panic!("{scs:?}")
        };
        assert_eq!(
            c.to_params().unwrap(),
            InCpuParams {
                mpl: 6,
                wait: Wait::SpinBlock { spin_ns: 800_000 },
                next: Next::MostMessages
            }
        );
        assert_eq!(
            CsConfig::default().to_params().unwrap().wait,
            Wait::BlockImmediately
        );
        let err = ScsConfig {
            mpl: 0,
            ..ScsConfig::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.field, "mpl");
        assert!(err.message.contains("at least 1"), "{err}");
        let err = CsConfig {
            spin_us: -1.0,
            ..CsConfig::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!((err.kind, err.field), ("cs", "spin_us"));
        assert!(parse("kind = \"fifo\", mpl = 2").is_err());
    }
}
