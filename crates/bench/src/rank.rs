//! What every program does around its own work: keep the clocks, the count of work done and how the run ended
//! ([`Tally`], which makes the common part of the result line), and — for the programs that rank 0 leads —
//! the followers' wait for rank 0's next message ([`Tally::await_root`]) and rank 0's last word ([`tell_stop`]).

use crate::args::RunLength;
use crate::channel::{completed, send_all, CommError, Link, Receiver};
use crate::message::{check, fill, Header, Kind};
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::{CpuTimes, LatencyRecorder};
use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};

/// `stop_at` before rank 0 has asked for a stop ([`Tally::run_in_step`]).
pub const NO_STOP: u64 = u64::MAX;

/// One rank's timed run: its clocks (wall and CPU), the units of work done, and how it ended.
#[derive(Debug)]
pub struct Tally {
    pub length: RunLength,
    /// Units of work done (and verified): the result line's `work_done`.
    pub done: u64,
    pub status: Status,
    cpu_start: CpuTimes,
    start: Instant,
}

impl Tally {
    /// Start the clocks of a run of `length`.
    pub fn start(length: RunLength) -> Tally {
        let cpu_start = CpuTimes::now();
        Tally {
            length,
            done: 0,
            status: Status::Complete,
            cpu_start,
            start: Instant::now(),
        }
    }

    /// The agreed-stop loop of the programs whose ranks all step together (stencil, multigrid): rank 0 alone
    /// watches the run length, and when it is reached at step `i` it asks for `stop_at = i + ranks`; each `step`
    /// carries the smallest `stop_at` it has seen in its messages and returns it, so every rank stops after the
    /// same step. `step(index, stop_at)` does one unit of work and returns the `stop_at` it saw; each unit's
    /// duration goes to `units`. Returns the final `stop_at`; a stop signal is `CommError::Stopped`.
    pub fn run_in_step<E: From<CommError>>(
        &mut self,
        rank: usize,
        ranks: usize,
        units: &mut LatencyRecorder,
        mut step: impl FnMut(u64, u64) -> Result<u64, E>,
    ) -> Result<u64, E> {
        let mut stop_at = match self.length {
            RunLength::Count(n) => n,
            _ => NO_STOP,
        };
        loop {
            let began = Instant::now();
            if rank == 0 && stop_at == NO_STOP && !self.keep_going(began) {
                stop_at = self.done + ranks as u64;
            }
            if self.done >= stop_at {
                return Ok(stop_at);
            }
            if stop_requested() {
                return Err(CommError::Stopped.into());
            }
            stop_at = step(self.done, stop_at)?;
            units.record_ns(began.elapsed().as_nanos() as u64);
            self.done += 1;
        }
    }

    /// Wall time since the start.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Whether the run length allows another unit of work, at `now`.
    pub fn keep_going(&self, now: Instant) -> bool {
        self.length.keep_going(self.done, now - self.start)
    }

    /// The check before each unit of work of the rank that decides when the run ends: the time the unit begins,
    /// or `None` when the run length is reached or a stop signal came (then `status` is `Stopped`).
    pub fn next_unit(&mut self) -> Option<Instant> {
        let now = Instant::now();
        if !self.keep_going(now) {
            return None;
        }
        if stop_requested() {
            self.status = Status::Stopped;
            return None;
        }
        Some(now)
    }

    /// [`completed`], noting in `status` a step that a stop signal ended.
    pub fn completed(
        &mut self,
        outcome: Result<(), CommError>,
        what: impl FnOnce() -> String,
    ) -> Result<bool> {
        let went_through = completed(outcome, what)?;
        if !went_through {
            self.status = Status::Stopped;
        }
        Ok(went_through)
    }

    /// A follower's wait for rank 0's next message into `inbox`, which must be data `tag` numbered `done`:
    /// `Ok(true)` when it came, `Ok(false)` when rank 0 said stop or a stop signal came (`status` says which).
    /// `what` names the message in errors, with its number after it ("ping" → "ping 7").
    pub fn await_root(
        &mut self,
        receiver: &mut Receiver,
        link: &Link,
        inbox: &mut [u8],
        tag: u32,
        what: &str,
    ) -> Result<bool> {
        let n = self.done;
        if !self.completed(receiver.recv(link, inbox), || {
            format!("waiting for {what} {n}")
        })? {
            return Ok(false);
        }
        let header = check(inbox).with_context(|| format!("{what} {n}"))?;
        if header.kind == Kind::Stop {
            return Ok(false);
        }
        if header != Header::data(tag, n) {
            bail!("expected {what} {n}, got {header:?}");
        }
        Ok(true)
    }

    /// The result line of `program`'s `rank` of `ranks`: status, work done and expected, wall and CPU time so far.
    pub fn line(&self, program: &str, rank: usize, ranks: usize) -> ResultLine {
        let wall = self.start.elapsed();
        let cpu = CpuTimes::now().since(self.cpu_start);
        let mut line = ResultLine::new(program, rank, ranks, self.status, self.done, wall, cpu);
        line.work_expected = self.length.expected();
        line
    }
}

/// Rank 0's last word: a stop message (built in `out`) to each of `links`. A failed send is an error only after
/// a complete run; after a stop signal the others may be gone already. `who` names a peer in errors ("rank").
pub fn tell_stop(links: &[&Link], out: &mut [u8], status: Status, who: &str) -> Result<()> {
    fill(out, Header::stop());
    for link in links {
        let told = send_all(link, out);
        if status == Status::Complete {
            told.with_context(|| format!("telling {who} {} to stop", link.peer))?;
        }
    }
    Ok(())
}
