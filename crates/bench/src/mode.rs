//! The `--recv` flag: parsing and printing a [`ReceiveMode`] (the rule itself lives in
//! `cosched_policy::spin`, seed `000_e8004e1596fde6a5.txt` §3.2.2).
//!
//! | flag value | mode |
//! |---|---|
//! | `spin-only` | poll with non-blocking `recv` until the message is there |
//! | `spin-block` | spin up to the seed's 1600 µs, then block |
//! | `spin-block:<us>` | spin up to `<us>` microseconds, then block |
//! | `block` | blocking `recv` at once |

use cosched_policy::spin::ReceiveMode;
use cosched_policy::MICROS;
use thiserror::Error;

/// A `--recv` value that is not a receive mode.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("receive mode {given:?} is not one of: spin-only, spin-block, spin-block:<microseconds>, block{hint}")]
pub struct ModeError {
    given: String,
    hint: String,
}

/// Parse `spin-only`, `spin-block`, `spin-block:<us>` or `block`.
pub fn parse_receive_mode(text: &str) -> Result<ReceiveMode, ModeError> {
    let error = |hint: &str| ModeError {
        given: text.to_string(),
        hint: hint.to_string(),
    };
    match text.trim() {
        "spin-only" | "spin" => Ok(ReceiveMode::SpinOnly),
        "block" => Ok(ReceiveMode::Block),
        "spin-block" => Ok(ReceiveMode::spin_block_default()),
        other => match other.strip_prefix("spin-block:") {
            Some(us) => us
                .trim_end_matches("us")
                .parse::<u64>()
                .map(|us| ReceiveMode::SpinBlock {
                    spin_ns: us * MICROS,
                })
                .map_err(|_| error(" (the spin time is whole microseconds, e.g. spin-block:1600)")),
            None => Err(error("")),
        },
    }
}

/// The flag form of a mode, as the lab writes it: `spin-only`, `spin-block:1600`, `block`.
pub fn receive_mode_arg(mode: &ReceiveMode) -> String {
    match *mode {
        ReceiveMode::SpinOnly => "spin-only".into(),
        ReceiveMode::SpinBlock { spin_ns } => format!("spin-block:{}", spin_ns / MICROS),
        ReceiveMode::Block => "block".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        assert_eq!(parse_receive_mode("spin-only"), Ok(ReceiveMode::SpinOnly));
        assert_eq!(parse_receive_mode("block"), Ok(ReceiveMode::Block));
        // The bare form is the seed's 1600 µs.
        assert_eq!(
            parse_receive_mode("spin-block"),
            Ok(ReceiveMode::SpinBlock { spin_ns: 1_600_000 })
        );
        // 800 µs = 800 000 ns (seed 001's SB).
        assert_eq!(
            parse_receive_mode("spin-block:800"),
            Ok(ReceiveMode::SpinBlock { spin_ns: 800_000 })
        );
        for text in ["spin-only", "block", "spin-block:1600", "spin-block:800"] {
            assert_eq!(receive_mode_arg(&parse_receive_mode(text).unwrap()), text);
        }
    }

    #[test]
    fn bad_modes_name_the_valid_ones() {
        let err = parse_receive_mode("spinblock").unwrap_err().to_string();
        assert!(
            err.contains("\"spinblock\"") && err.contains("spin-block:<microseconds>"),
            "{err}"
        );
        let err = parse_receive_mode("spin-block:fast")
            .unwrap_err()
            .to_string();
        assert!(err.contains("whole microseconds"), "{err}");
    }
}
