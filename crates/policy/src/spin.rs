//! Spin-block receive: how long a receiver spins before it blocks.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §3.2.2. The maximum spin time of 1600 µs was chosen because the largest
//! response delay seen when a context switch was needed was about 1500 µs, and 1600 µs is "slightly greater than
//! twice the mean context-switch time plus the message round-trip time" — a two-context-switch spin is
//! competitive (Ousterhout). Seed `001_cc73854eda2a0ea6.txt` uses 800 µs and 1200 µs for SB.
//!
//! ## Terminology
//! - `context_switch` — mean cost of one context switch (ns).
//! - `round_trip` — message round-trip time on an idle network (ns).
//! - `spin` — how long a receiver polls before it gives up its CPU and sleeps until the message arrives.
//!
//! ## Algorithm
//! ```text
//! competitive spin  = 2 × context_switch + round_trip
//! receive(mode):
//!     SpinOnly       : poll until the message is there
//!     Block          : sleep at once; woken by the arrival
//!     SpinBlock(s)   : poll for up to s, then sleep as Block
//! ```

use crate::{Nanos, MICROS};
use serde::{Deserialize, Serialize};

/// The seed's default spin time before blocking: 1600 µs.
pub const DEFAULT_SPIN: Nanos = 1600 * MICROS;

/// How a process waits for a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum ReceiveMode {
    /// Poll until the message arrives, never giving up the CPU.
    SpinOnly,
    /// Poll for up to `spin_ns`, then block.
    SpinBlock { spin_ns: Nanos },
    /// Block at once.
    Block,
}

impl ReceiveMode {
    /// Spin-block with the seed's 1600 µs.
    pub const fn spin_block_default() -> Self {
        ReceiveMode::SpinBlock {
            spin_ns: DEFAULT_SPIN,
        }
    }

    /// How long a receiver in this mode polls before it blocks; `None` means it never blocks.
    pub fn spin_limit(&self) -> Option<Nanos> {
        match *self {
            ReceiveMode::SpinOnly => None,
            ReceiveMode::SpinBlock { spin_ns } => Some(spin_ns),
            ReceiveMode::Block => Some(0),
        }
    }

    /// What a receiver that has been polling for `spun` without a message should do now.
    pub fn after_spinning(&self, spun: Nanos) -> WaitAction {
        match self.spin_limit() {
            Some(limit) if spun >= limit => WaitAction::Block,
            _ => WaitAction::KeepSpinning,
        }
    }

    /// The command-line form, which [`ReceiveMode::from_str`] reads back: `spin-only`, `spin-block:1600`,
    /// `block`.
    pub fn as_arg(&self) -> String {
        match *self {
            ReceiveMode::SpinOnly => "spin-only".into(),
            ReceiveMode::SpinBlock { spin_ns } => format!("spin-block:{}", spin_ns / MICROS),
            ReceiveMode::Block => "block".into(),
        }
    }

    /// A short human name: `spin-only`, `spin-block(1600us)`, `block`.
    pub fn label(&self) -> String {
        match *self {
            ReceiveMode::SpinOnly => "spin-only".into(),
            ReceiveMode::SpinBlock { spin_ns } => format!("spin-block({}us)", spin_ns / MICROS),
            ReceiveMode::Block => "block".into(),
        }
    }
}

/// A receive mode that is not one of the known forms.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("receive mode {given:?} is not one of: spin-only, spin-block, spin-block:<microseconds>, block{hint}")]
pub struct ReceiveModeError {
    given: String,
    hint: &'static str,
}

impl std::str::FromStr for ReceiveMode {
    type Err = ReceiveModeError;

    /// Reads `spin-only`, `spin-block` (the seed's 1600 µs), `spin-block:<us>` or `block`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |hint| ReceiveModeError {
            given: text.to_string(),
            hint,
        };
        match text.trim() {
            "spin-only" => Ok(ReceiveMode::SpinOnly),
            "block" => Ok(ReceiveMode::Block),
            "spin-block" => Ok(ReceiveMode::spin_block_default()),
            other => match other.strip_prefix("spin-block:") {
                Some(us) => match us.trim_end_matches("us").parse::<u64>() {
                    Ok(0) => Err(error(" (a spin time of 0 is `block`)")),
                    Ok(us) => Ok(ReceiveMode::SpinBlock {
                        spin_ns: us * MICROS,
                    }),
                    Err(_) => Err(error(
                        " (the spin time is whole microseconds, e.g. spin-block:1600)",
                    )),
                },
                None => Err(error("")),
            },
        }
    }
}

/// The next step of a waiting receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitAction {
    KeepSpinning,
    Block,
}

/// The competitive spin time, `2 × context_switch + round_trip` (seed `000` §3.2.2).
pub fn competitive_spin(context_switch: Nanos, round_trip: Nanos) -> Nanos {
    2 * context_switch + round_trip
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_default_is_about_two_switches_plus_a_round_trip() {
        // The seed's FM round trip is 2 × 40 µs = 80 µs; 1600 µs then implies a context switch of
        // (1600 - 80) / 2 = 760 µs on a SPARCstation-2, "slightly greater" than the observed worst.
        assert_eq!(competitive_spin(760 * MICROS, 80 * MICROS), DEFAULT_SPIN);
    }

    #[test]
    fn spin_block_blocks_exactly_at_its_limit() {
        let mode = ReceiveMode::spin_block_default();
        assert_eq!(mode.after_spinning(1599 * MICROS), WaitAction::KeepSpinning);
        assert_eq!(mode.after_spinning(1600 * MICROS), WaitAction::Block);
    }

    #[test]
    fn spin_only_never_blocks_and_block_never_spins() {
        assert_eq!(
            ReceiveMode::SpinOnly.after_spinning(u64::MAX),
            WaitAction::KeepSpinning
        );
        assert_eq!(ReceiveMode::Block.after_spinning(0), WaitAction::Block);
    }

    #[test]
    fn every_arg_form_parses_and_prints_back() {
        assert_eq!("spin-only".parse(), Ok(ReceiveMode::SpinOnly));
        assert_eq!("block".parse(), Ok(ReceiveMode::Block));
        // The bare form is the seed's 1600 µs = 1 600 000 ns.
        assert_eq!(
            "spin-block".parse(),
            Ok(ReceiveMode::SpinBlock { spin_ns: 1_600_000 })
        );
        // Seed 001's SB: 800 µs = 800 000 ns.
        assert_eq!(
            "spin-block:800".parse(),
            Ok(ReceiveMode::SpinBlock { spin_ns: 800_000 })
        );
        for text in ["spin-only", "block", "spin-block:1600", "spin-block:800"] {
            assert_eq!(text.parse::<ReceiveMode>().unwrap().as_arg(), text);
        }
    }

    #[test]
    fn bad_modes_name_the_valid_ones() {
        let err = "spinblock".parse::<ReceiveMode>().unwrap_err().to_string();
        assert!(err.contains("spin-only, spin-block"), "{err}");
        let err = "spin-block:fast"
            .parse::<ReceiveMode>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("whole microseconds"), "{err}");
        let err = "spin-block:0"
            .parse::<ReceiveMode>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("is `block`"), "{err}");
    }

    #[test]
    fn labels_are_readable() {
        assert_eq!(
            ReceiveMode::spin_block_default().label(),
            "spin-block(1600us)"
        );
    }
}
