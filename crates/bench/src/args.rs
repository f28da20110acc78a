//! Flags shared by the programs: who this rank is and where its peers are, how to receive, how long to run,
//! how big a message is. Raw flags are checked into resolved values ([`RunLength`], `GroupConfig`) before
//! anything runs.

use crate::channel::Receiver;
use crate::message::HEADER_BYTES;
use crate::net::{Group, GroupConfig, Links};
use anyhow::{bail, Result};
use clap::Args;
use cosched_policy::spin::ReceiveMode;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// Parse `ADDR:PORT` (an IP or a host name).
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs()
        .map_err(|e| format!("{text:?} is not ADDR:PORT ({e}); e.g. 10.0.0.1:7100 or 127.0.0.1:0"))?
        .next()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// Which rank this process is, and how it finds the others.
#[derive(Args, Clone, Debug)]
pub struct GroupArgs {
    /// This process's rank; rank 0 is the root, which listens.
    #[arg(long, default_value_t = 0)]
    pub rank: usize,
    /// Number of ranks in the run.
    #[arg(long, default_value_t = 2)]
    pub ranks: usize,
    /// Rank 0: address to listen on (port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_address)]
    pub listen: Option<SocketAddr>,
    /// Ranks ≥ 1: rank 0's address.
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_address)]
    pub connect: Option<SocketAddr>,
    /// How long to wait for the other ranks to start and connect.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub connect_timeout_s: f64,
}

impl GroupArgs {
    /// The group to join; `settings` are the flags every rank must share (checked by rank 0), `links` the
    /// connections the program needs besides the star.
    pub fn config(
        &self,
        program: &str,
        role: &str,
        settings: String,
        links: Links,
    ) -> Result<GroupConfig> {
        if !(self.connect_timeout_s.is_finite() && self.connect_timeout_s > 0.0) {
            bail!(
                "--connect-timeout-s {} must be a positive number of seconds",
                self.connect_timeout_s
            );
        }
        Ok(GroupConfig {
            program: program.to_string(),
            rank: self.rank,
            ranks: self.ranks,
            listen: self.listen,
            connect: self.connect,
            timeout: Duration::from_secs_f64(self.connect_timeout_s),
            role: role.to_string(),
            settings,
            links,
        })
    }
}

/// The flags of every program whose ranks exchange messages: the group, the receive mode, the run length and the
/// message size.
#[derive(Args, Clone, Debug)]
pub struct RankArgs {
    #[command(flatten)]
    pub group: GroupArgs,
    #[command(flatten)]
    pub recv: RecvArgs,
    #[command(flatten)]
    pub length: LengthArgs,
    #[command(flatten)]
    pub bytes: BytesArgs,
}

impl RankArgs {
    /// The run length (`default` when neither --count nor --duration-s is given) and the message size.
    pub fn resolve(&self, default: RunLength) -> Result<(RunLength, usize)> {
        Ok((self.length.resolve(default)?, self.bytes.resolve()?))
    }

    /// Join the group as a program whose ranks must agree on the message size and run length, and make the
    /// receiver: the preamble of ping-pong, barrier and master-slave (stencil's settings differ).
    pub fn join(
        &self,
        program: &str,
        role: &str,
        length: RunLength,
        bytes: usize,
    ) -> Result<(Group, Receiver)> {
        let group = Group::join(&self.group.config(
            program,
            role,
            format!("bytes={bytes} length={length:?}"),
            Links::Star,
        )?)?;
        Ok((group, Receiver::new(self.recv.mode)))
    }
}

/// How a rank waits for messages.
#[derive(Args, Clone, Debug)]
pub struct RecvArgs {
    /// Receive mode: spin-only, spin-block (1600 µs), spin-block:N (spin N µs, then block), or block.
    #[arg(long = "recv", value_name = "MODE", default_value = "spin-block")]
    pub mode: ReceiveMode,
}

/// How long to run.
#[derive(Args, Clone, Debug)]
pub struct LengthArgs {
    /// Run for this many seconds (rank 0 decides; the others follow it).
    #[arg(long, value_name = "SECONDS", conflicts_with = "count")]
    pub duration_s: Option<f64>,
    /// Do this many units of work (round trips, iterations, bursts, loops).
    #[arg(long)]
    pub count: Option<u64>,
}

/// How long a program runs, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunLength {
    Count(u64),
    Duration(Duration),
    /// Until SIGTERM / SIGINT.
    UntilSignal,
}

impl LengthArgs {
    /// The run length; `default` applies when neither flag is given.
    pub fn resolve(&self, default: RunLength) -> Result<RunLength> {
        match (self.duration_s, self.count) {
            (Some(s), _) if !(s.is_finite() && s > 0.0) => {
                bail!("--duration-s {s} must be a positive number of seconds")
            }
            (Some(s), _) => Ok(RunLength::Duration(Duration::from_secs_f64(s))),
            (None, Some(0)) => bail!("--count 0: give at least 1 unit of work"),
            (None, Some(n)) => Ok(RunLength::Count(n)),
            (None, None) => Ok(default),
        }
    }
}

impl RunLength {
    /// Units of work asked for, if a count.
    pub fn expected(&self) -> Option<u64> {
        match *self {
            RunLength::Count(n) => Some(n),
            _ => None,
        }
    }

    /// Whether to start another unit, having done `done` in `elapsed`.
    #[inline]
    pub fn keep_going(&self, done: u64, elapsed: Duration) -> bool {
        match *self {
            RunLength::Count(n) => done < n,
            RunLength::Duration(d) => elapsed < d,
            RunLength::UntilSignal => true,
        }
    }
}

/// Message size.
#[derive(Args, Clone, Debug)]
pub struct BytesArgs {
    /// Bytes per message (at least the 16-byte header).
    #[arg(long, default_value_t = 128)]
    pub bytes: usize,
}

/// Largest message accepted: 16 MiB.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

impl BytesArgs {
    pub fn resolve(&self) -> Result<usize> {
        if self.bytes < HEADER_BYTES || self.bytes > MAX_MESSAGE_BYTES {
            bail!(
                "--bytes {} is out of range: a message holds a {HEADER_BYTES}-byte header and at most {MAX_MESSAGE_BYTES} bytes",
                self.bytes
            );
        }
        Ok(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_lengths_resolve_and_are_checked() {
        let l = |d, c| LengthArgs {
            duration_s: d,
            count: c,
        };
        assert_eq!(
            l(None, Some(5)).resolve(RunLength::UntilSignal).unwrap(),
            RunLength::Count(5)
        );
        assert_eq!(
            l(None, None).resolve(RunLength::Count(9)).unwrap(),
            RunLength::Count(9)
        );
        assert!(l(Some(-1.0), None)
            .resolve(RunLength::UntilSignal)
            .unwrap_err()
            .to_string()
            .contains("--duration-s"));
        assert!(l(None, Some(0))
            .resolve(RunLength::UntilSignal)
            .unwrap_err()
            .to_string()
            .contains("--count 0"));
        // 3 done of 3 asked: stop; 0.5 s of a 1 s run: go on.
        assert!(!RunLength::Count(3).keep_going(3, Duration::ZERO));
        assert!(
            RunLength::Duration(Duration::from_secs(1)).keep_going(99, Duration::from_millis(500))
        );
    }

    #[test]
    fn addresses_accept_names_and_reject_junk() {
        assert_eq!(parse_address("127.0.0.1:7100").unwrap().port(), 7100);
        assert!(parse_address("localhost:0").is_ok());
        assert!(parse_address("7100").unwrap_err().contains("ADDR:PORT"));
    }
}
