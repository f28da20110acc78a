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
//! - sending while receiving ([`Receiver::exchange`], the all-to-all's and the multigrid's exchanges): the sends
//!   are non-blocking and go in the same sweeps, and a blocked wait also wakes when a socket has room again, so
//!   ranks that all send before they receive never deadlock on full socket buffers, whatever the message size.
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
    /// Reused per-call state of [`Receiver::exchange`] (no allocation in the data path): bytes received from
    /// each pending link, bytes sent of each outgoing message.
    received: Vec<usize>,
    sent: Vec<usize>,
}

impl Receiver {
    pub fn new(mode: ReceiveMode) -> Receiver {
        Receiver {
            mode,
            stats: WaitStats::default(),
            received: Vec::new(),
            sent: Vec::new(),
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
        self.exchange(&[], pending)
    }

    /// Send each of `outgoing` and receive exactly one buffer's worth from each link of `pending`, all at once:
    /// the sends go out as far as the sockets take them, without blocking, and whatever does not fit yet is sent
    /// while receiving. A program whose ranks all send to each other before they receive (an all-to-all, a halo
    /// exchange) so never waits on a peer that waits on it, whatever the message size: with [`send_all`] then
    /// [`Receiver::recv_each`], a message larger than the sockets' buffers deadlocks. The wait follows the mode as
    /// in [`Receiver::recv_each`]: spin over non-blocking sends and receives, or block in `poll` until a socket
    /// owed bytes is readable or one still sending is writable; bytes moved either way restart the spin. With
    /// `outgoing` empty this is [`Receiver::recv_each`]. A link appears at most once in each list (its bytes are one
    /// stream: put two messages to one peer in one buffer).
    pub fn exchange(
        &mut self,
        outgoing: &[(&Link, &[u8])],
        pending: &mut [(&Link, &mut [u8])],
    ) -> Result<(), CommError> {
        debug_assert!(
            distinct(outgoing.iter().map(|(l, _)| l.peer))
                && distinct(pending.iter().map(|(l, _)| l.peer)),
            "a link appears twice in one exchange"
        );
        let mode = self.mode;
        self.received.clear();
        self.received.resize(pending.len(), 0);
        self.sent.clear();
        self.sent.resize(outgoing.len(), 0);
        let mut remaining = pending.iter().filter(|(_, b)| !b.is_empty()).count();
        let mut unsent = outgoing.iter().filter(|(_, b)| !b.is_empty()).count();
        let mut blocking = false;
        let mut spin_since: Option<Instant> = None;
        if mode.after_spinning(0) == WaitAction::Block {
            blocking = true;
            self.stats.blocked += 1;
        }
        while remaining > 0 || unsent > 0 {
            if blocking && unsent == 0 && remaining == 1 {
                // One link owed and nothing to send: a plain blocking recv, as the seed's blocking receiver.
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
            if blocking && (unsent > 0 || remaining > 1) {
                // Sleep in poll until a link owed bytes has some or a link still sending has room, then sweep.
                let reading = pending
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, b))| self.received[*i] < b.len())
                    .map(|(_, (l, _))| PollFd::new(l.stream.as_fd(), PollFlags::POLLIN));
                let writing = outgoing
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, b))| self.sent[*i] < b.len())
                    .map(|(_, (l, _))| PollFd::new(l.stream.as_fd(), PollFlags::POLLOUT));
                let mut fds: Vec<PollFd> = reading.chain(writing).collect();
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => {}
                    Err(Errno::EINTR) if stop_requested() => return Err(CommError::Stopped),
                    Err(Errno::EINTR) => continue,
                    Err(errno) => {
                        let peer = pending
                            .first()
                            .map(|(l, _)| l.peer)
                            .or(outgoing.first().map(|(l, _)| l.peer))
                            .unwrap_or(0);
                        return Err(CommError::Io {
                            op: "poll",
                            peer,
                            errno,
                        });
                    }
                }
            }
            // One non-blocking sweep: what still has to go out, then every link still owed bytes.
            let mut progressed = false;
            for (i, (link, buf)) in outgoing.iter().enumerate() {
                let have = self.sent[i];
                if have == buf.len() {
                    continue;
                }
                let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
                match send(link.fd(), &buf[have..], flags) {
                    Ok(n) => {
                        progressed = true;
                        self.sent[i] += n;
                        if self.sent[i] == buf.len() {
                            unsent -= 1;
                        }
                    }
                    Err(Errno::EAGAIN | Errno::EINTR) => {}
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
            if remaining == 0 && unsent == 0 {
                break;
            }
            if stop_requested() {
                return Err(CommError::Stopped);
            }
            if progressed {
                // Bytes moved: the next message is a new wait with a fresh spin budget.
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

/// Whether no peer appears twice.
fn distinct(peers: impl Iterator<Item = usize>) -> bool {
    let mut seen: Vec<usize> = peers.collect();
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    seen.len() == n
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

    /// A link to a peer of its own (a new peer number each call: an exchange checks that no peer appears twice)
    /// and the stream at the peer's end.
    fn pair() -> (Link, TcpStream) {
        static NEXT_PEER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let peer = NEXT_PEER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (Link::new(server, peer), client)
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
    fn an_exchange_larger_than_the_socket_buffers_completes_in_every_mode() {
        // Both ends send 8 MiB before either has read a byte: with blocking sends this deadlocks once the sockets'
        // buffers are full; the exchange sends what fits and receives in between.
        const BYTES: usize = 8 << 20;
        for mode in [
            ReceiveMode::SpinOnly,
            ReceiveMode::SpinBlock { spin_ns: 1_000 },
            ReceiveMode::Block,
        ] {
            let (a, b) = pair();
            let b = Link::new(b, 0);
            let message =
                |seed: u8| -> Vec<u8> { (0..BYTES).map(|i| (i % 251) as u8 ^ seed).collect() };
            let other = std::thread::spawn(move || {
                let out = message(0x55);
                let mut inbox = vec![0u8; BYTES];
                let mut receiver = Receiver::new(mode);
                receiver
                    .exchange(&[(&b, &out)], &mut [(&b, &mut inbox)])
                    .unwrap();
                assert_eq!(receiver.stats.receives, 1);
                inbox
            });
            let out = message(0xaa);
            let mut inbox = vec![0u8; BYTES];
            let mut receiver = Receiver::new(mode);
            receiver
                .exchange(&[(&a, &out)], &mut [(&a, &mut inbox)])
                .unwrap();
            assert!(inbox == message(0x55), "{mode:?}");
            assert!(other.join().unwrap() == message(0xaa), "{mode:?}");
            if mode == ReceiveMode::SpinOnly {
                assert_eq!(receiver.stats.blocked, 0);
            }
        }
    }

    #[test]
    fn an_exchange_with_nothing_to_receive_only_sends() {
        let (a, mut peer) = pair();
        let mut receiver = Receiver::new(ReceiveMode::Block);
        receiver.exchange(&[(&a, b"sent")], &mut []).unwrap();
        let mut got = [0u8; 4];
        std::io::Read::read_exact(&mut peer, &mut got).unwrap();
        assert_eq!(&got, b"sent");
        assert_eq!(receiver.stats.receives, 0);
    }

    #[test]
    fn a_closed_peer_is_named() {
        let (link, peer) = pair();
        drop(peer);
        let err = Receiver::new(ReceiveMode::SpinOnly)
            .recv(&link, &mut [0u8; 4])
            .unwrap_err();
        assert!(
            matches!(err, CommError::PeerClosed { peer } if peer == link.peer),
            "{err}"
        );
    }
}
