//! Receiving in the three modes of `cosched_policy::spin::ReceiveMode` (seed `000_e8004e1596fde6a5.txt`
//! §3.2.2), and sending.
//!
//! ## Problem
//! A parallel process waiting for a message either keeps its CPU (spin), gives it up at once (block), or spins
//! for a while and then gives it up (spin-block). Coscheduling exists to make the spinning pay off, so the
//! benchmarks must wait exactly as the seed's programs did.
//!
//! ## Approach
//! - spin: a tight loop of non-blocking `recv(MSG_DONTWAIT)` on every link still owed a message. Between polls
//!   it reads only the monotonic clock (vDSO, no system call) and the stop flag (an atomic load): a spinning
//!   receiver makes no other system call.
//! - block: a blocking `recv` on the one link owed a message, or `poll` on several, then non-blocking `recv`s.
//! - spin-block: spin; the policy's `ReceiveMode::after_spinning(spun)` says when to block. The spin clock starts
//!   at the first empty poll and restarts whenever bytes arrive (each message is a new wait).
//!
//! ## Terminology
//! - `Link` — a connected TCP stream to one peer rank (TCP_NODELAY).
//! - `WaitStats::receives` — messages received; `WaitStats::blocked` — waits that ended in a blocking call.

use crate::signals::stop_requested;
use cosched_policy::spin::{ReceiveMode, WaitAction};
use cosched_policy::Nanos;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, send, MsgFlags};
use serde::Serialize;
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Instant;
use thiserror::Error;

/// A connection to one peer rank.
#[derive(Debug)]
pub struct Link {
    stream: TcpStream,
    /// The peer's rank.
    pub peer: usize,
}

impl Link {
    /// Wrap a connected stream to rank `peer`; the stream must be in blocking mode with no read timeout.
    pub fn new(stream: TcpStream, peer: usize) -> Link {
        Link { stream, peer }
    }

    fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// The underlying stream (connection setup uses it for control frames).
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }
}

/// A failed send or receive.
#[derive(Debug, Error)]
pub enum CommError {
    #[error("rank {peer} closed the connection")]
    PeerClosed { peer: usize },
    #[error("stopped by a signal")]
    Stopped,
    #[error("{op} with rank {peer}: {errno}")]
    Io {
        op: &'static str,
        peer: usize,
        errno: Errno,
    },
}

/// A peer's end of the connection closed: an error, unless this rank was itself told to stop (when a harness
/// signals every rank, the first to exit closes its connections before the others see their signal).
fn closed(peer: usize) -> CommError {
    if stop_requested() {
        CommError::Stopped
    } else {
        CommError::PeerClosed { peer }
    }
}

/// A failed `recv`: a reset connection is a closed peer, anything else an I/O error.
fn recv_failed(peer: usize, errno: Errno) -> CommError {
    match errno {
        Errno::ECONNRESET => closed(peer),
        errno => CommError::Io {
            op: "recv",
            peer,
            errno,
        },
    }
}

/// How the waits went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WaitStats {
    /// Messages received.
    pub receives: u64,
    /// Waits that gave up the CPU in a blocking `recv` / `poll`.
    pub blocked: u64,
}

/// A receiver in one mode, with its statistics.
#[derive(Debug)]
pub struct Receiver {
    mode: ReceiveMode,
    pub stats: WaitStats,
    /// Reused per-call state of [`Receiver::recv_each`] (no allocation in the data path).
    received: Vec<usize>,
}

impl Receiver {
    pub fn new(mode: ReceiveMode) -> Receiver {
        Receiver {
            mode,
            stats: WaitStats::default(),
            received: Vec::new(),
        }
    }

    pub fn mode(&self) -> ReceiveMode {
        self.mode
    }

    /// Receive exactly `buf.len()` bytes from `link`.
    pub fn recv(&mut self, link: &Link, buf: &mut [u8]) -> Result<(), CommError> {
        self.recv_each(&mut [(link, buf)])
    }

    /// Receive one message of `bytes` bytes from each of `links` into consecutive `bytes`-sized chunks of
    /// `inbox`, in whatever order they arrive (rank 0 gathering its members' answers).
    pub fn recv_chunks(
        &mut self,
        links: &[&Link],
        inbox: &mut [u8],
        bytes: usize,
    ) -> Result<(), CommError> {
        let mut pending: Vec<(&Link, &mut [u8])> =
            links.iter().copied().zip(inbox.chunks_mut(bytes)).collect();
        self.recv_each(&mut pending)
    }

    /// Receive exactly one buffer's worth from each link, in whatever order they arrive.
    pub fn recv_each(&mut self, pending: &mut [(&Link, &mut [u8])]) -> Result<(), CommError> {
        let mode = self.mode;
        self.received.clear();
        self.received.resize(pending.len(), 0);
        let mut remaining = pending.iter().filter(|(_, b)| !b.is_empty()).count();
        let mut blocking = false;
        let mut spin_since: Option<Instant> = None;
        if mode.after_spinning(0) == WaitAction::Block {
            blocking = true;
            self.stats.blocked += 1;
        }
        while remaining > 0 {
            if blocking {
                if remaining == 1 {
                    // One link owed: a plain blocking recv, as the seed's blocking receiver.
                    let i = (0..pending.len())
                        .find(|&i| self.received[i] < pending[i].1.len())
                        .expect("one link is still owed bytes");
                    let (link, buf) = &mut pending[i];
                    match recv(link.fd(), &mut buf[self.received[i]..], MsgFlags::empty()) {
                        Ok(0) => return Err(closed(link.peer)),
                        Ok(n) => {
                            self.received[i] += n;
                            if self.received[i] == buf.len() {
                                remaining -= 1;
                                self.stats.receives += 1;
                            }
                        }
                        Err(Errno::EINTR) if stop_requested() => return Err(CommError::Stopped),
                        Err(Errno::EINTR | Errno::EAGAIN) => {}
                        Err(errno) => return Err(recv_failed(link.peer, errno)),
                    }
                    continue;
                }
                // Several links owed: sleep in poll until one has data, then sweep.
                let mut fds: Vec<PollFd> = pending
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, b))| self.received[*i] < b.len())
                    .map(|(_, (l, _))| PollFd::new(l.stream.as_fd(), PollFlags::POLLIN))
                    .collect();
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => {}
                    Err(Errno::EINTR) if stop_requested() => return Err(CommError::Stopped),
                    Err(Errno::EINTR) => continue,
                    Err(errno) => {
                        return Err(CommError::Io {
                            op: "poll",
                            peer: pending[0].0.peer,
                            errno,
                        })
                    }
                }
            }
            // One non-blocking sweep over every link still owed bytes.
            let mut progressed = false;
            for (i, (link, buf)) in pending.iter_mut().enumerate() {
                let have = self.received[i];
                if have == buf.len() {
                    continue;
                }
                match recv(link.fd(), &mut buf[have..], MsgFlags::MSG_DONTWAIT) {
                    Ok(0) => return Err(closed(link.peer)),
                    Ok(n) => {
                        progressed = true;
                        self.received[i] += n;
                        if self.received[i] == buf.len() {
                            remaining -= 1;
                            self.stats.receives += 1;
                        }
                    }
                    Err(Errno::EAGAIN | Errno::EINTR) => {}
                    Err(errno) => return Err(recv_failed(link.peer, errno)),
                }
            }
            if remaining == 0 {
                break;
            }
            if stop_requested() {
                return Err(CommError::Stopped);
            }
            if progressed {
                // Bytes arrived: the next message is a new wait with a fresh spin budget.
                spin_since = None;
                if blocking && mode.after_spinning(0) != WaitAction::Block {
                    blocking = false;
                }
            } else if !blocking {
                let now = Instant::now();
                let since = *spin_since.get_or_insert(now);
                let spun = now.duration_since(since).as_nanos() as Nanos;
                if mode.after_spinning(spun) == WaitAction::Block {
                    blocking = true;
                    self.stats.blocked += 1;
                }
            }
        }
        Ok(())
    }
}

/// Whether a communication step went through: `Ok(true)` if it did, `Ok(false)` if a stop signal ended it (the
/// program then reports `Status::Stopped` and leaves its loop); any other failure becomes an error with `what`
/// as its context.
pub fn completed(
    outcome: Result<(), CommError>,
    what: impl FnOnce() -> String,
) -> anyhow::Result<bool> {
    match outcome {
        Ok(()) => Ok(true),
        Err(CommError::Stopped) => Ok(false),
        Err(e) => Err(anyhow::Error::new(e).context(what())),
    }
}

/// Send all of `buf` to each of `links` in turn.
pub fn send_each(links: &[&Link], buf: &[u8]) -> Result<(), CommError> {
    links.iter().try_for_each(|link| send_all(link, buf))
}

/// Send all of `buf` to `link` (blocking; `MSG_NOSIGNAL`, so a closed peer is an error, not a SIGPIPE).
pub fn send_all(link: &Link, buf: &[u8]) -> Result<(), CommError> {
    let mut sent = 0;
    while sent < buf.len() {
        match send(link.fd(), &buf[sent..], MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => sent += n,
            Err(Errno::EINTR) if stop_requested() => return Err(CommError::Stopped),
            Err(Errno::EINTR) => {}
            Err(Errno::EPIPE | Errno::ECONNRESET) => return Err(closed(link.peer)),
            Err(errno) => {
                return Err(CommError::Io {
                    op: "send",
                    peer: link.peer,
                    errno,
                })
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    fn pair() -> (Link, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (Link::new(server, 1), client)
    }

    #[test]
    fn every_mode_receives_a_message_split_in_two() {
        for mode in [
            ReceiveMode::SpinOnly,
            ReceiveMode::spin_block_default(),
            ReceiveMode::Block,
        ] {
            let (link, mut peer) = pair();
            let writer = std::thread::spawn(move || {
                peer.write_all(b"hello ").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
                peer.write_all(b"world").unwrap();
                peer
            });
            let mut receiver = Receiver::new(mode);
            let mut buf = [0u8; 11];
            receiver.recv(&link, &mut buf).unwrap();
            assert_eq!(&buf, b"hello world", "{mode:?}");
            assert_eq!(receiver.stats.receives, 1);
            drop(writer.join().unwrap());
        }
    }

    #[test]
    fn block_mode_counts_a_blocking_wait_and_spin_only_never_does() {
        let (link, mut peer) = pair();
        peer.write_all(&[1u8; 4]).unwrap();
        let mut block = Receiver::new(ReceiveMode::Block);
        block.recv(&link, &mut [0u8; 4]).unwrap();
        assert_eq!(block.stats.blocked, 1);
        peer.write_all(&[1u8; 4]).unwrap();
        let mut spin = Receiver::new(ReceiveMode::SpinOnly);
        spin.recv(&link, &mut [0u8; 4]).unwrap();
        assert_eq!(spin.stats.blocked, 0);
    }

    #[test]
    fn spin_block_blocks_after_its_limit() {
        // A 1 µs limit with the message 20 ms away: the receiver must give up spinning and block once.
        let (link, mut peer) = pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            peer.write_all(&[7u8; 8]).unwrap();
            peer
        });
        let mut receiver = Receiver::new(ReceiveMode::SpinBlock { spin_ns: 1_000 });
        let mut buf = [0u8; 8];
        receiver.recv(&link, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 8]);
        assert_eq!(receiver.stats.blocked, 1);
        drop(writer.join().unwrap());
    }

    #[test]
    fn recv_each_gathers_from_several_links_in_every_mode() {
        for mode in [ReceiveMode::SpinOnly, ReceiveMode::Block] {
            let (a, mut pa) = pair();
            let (b, mut pb) = pair();
            pb.write_all(b"bb").unwrap();
            pa.write_all(b"aa").unwrap();
            let (mut ba, mut bb) = ([0u8; 2], [0u8; 2]);
            let mut receiver = Receiver::new(mode);
            receiver
                .recv_each(&mut [(&a, &mut ba), (&b, &mut bb)])
                .unwrap();
            assert_eq!((&ba, &bb), (b"aa", b"bb"));
            assert_eq!(receiver.stats.receives, 2);
        }
    }

    #[test]
    fn spin_block_on_several_links_falls_back_to_poll() {
        // Two links, messages 100 ms and 110 ms away, a 1 µs spin limit: the receiver blocks in poll once, wakes on the
        // first arrival (which restarts the spin), and blocks again at most once for the second.
        let (a, mut pa) = pair();
        let (b, mut pb) = pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            pa.write_all(b"a1").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
            pb.write_all(b"b2").unwrap();
            (pa, pb)
        });
        let (mut ba, mut bb) = ([0u8; 2], [0u8; 2]);
        let mut receiver = Receiver::new(ReceiveMode::SpinBlock { spin_ns: 1_000 });
        receiver
            .recv_each(&mut [(&a, &mut ba), (&b, &mut bb)])
            .unwrap();
        assert_eq!((&ba, &bb), (b"a1", b"b2"));
        assert!(
            (1..=2).contains(&receiver.stats.blocked),
            "{:?}",
            receiver.stats
        );
        drop(writer.join().unwrap());
    }

    #[test]
    fn a_closed_peer_is_named() {
        let (link, peer) = pair();
        drop(peer);
        let err = Receiver::new(ReceiveMode::SpinOnly)
            .recv(&link, &mut [0u8; 4])
            .unwrap_err();
        assert!(matches!(err, CommError::PeerClosed { peer: 1 }), "{err}");
    }
}
