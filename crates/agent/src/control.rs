//! The control socket's server side: accepting connections, reading request lines without ever blocking the
//! event loop, writing replies. The protocol itself (requests, replies, the client) is [`crate::proto`].
//!
//! The socket is created mode 0666 (in a 0755 directory under `/run/cosched`): any local user may talk to the
//! agent, and every request carries its peer's uid (`SO_PEERCRED`, read by the kernel, not sent by the client),
//! which the agent checks against what it asks (a user registers only their own processes; root anything). A
//! connection's request line is read as it comes (a slow client, kept off its
//! CPU by the very load the agent steers, never stalls the loop); a connection that has not sent its line
//! within [`CONN_PATIENCE`] is dropped, and at most [`MAX_PENDING_CONNS`] wait at once (the oldest goes first).

use crate::proto::{Reply, Request};
use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// A connection that has not sent its request line within this long is dropped.
pub const CONN_PATIENCE: Duration = Duration::from_secs(5);
/// The most connections kept waiting at once (the oldest goes first).
pub const MAX_PENDING_CONNS: usize = 64;
/// The longest request line accepted.
const MAX_LINE: usize = 64 * 1024;

/// A control connection whose request line is still arriving.
struct PendingConn {
    stream: UnixStream,
    /// The peer's uid, from the kernel (`SO_PEERCRED`).
    uid: u32,
    line: Vec<u8>,
    since: Instant,
}

/// A whole request line, with who sent it.
pub struct Incoming {
    /// Where to answer.
    pub stream: UnixStream,
    /// The peer's uid, from the kernel.
    pub uid: u32,
    /// The request, or why the line is not one.
    pub request: Result<Request, String>,
}

/// The listening socket and the connections waiting for their request line.
pub struct Control {
    listener: UnixListener,
    conns: BTreeMap<u64, PendingConn>,
    /// Epoll token of connection `n`: `first_token + n`.
    first_token: u64,
    next_conn: u64,
}

impl Control {
    /// Listens at `path` (any local user may connect); refuses when another agent answers there. Connections get
    /// epoll tokens from `first_token` up.
    pub fn bind(path: &Path, first_token: u64) -> anyhow::Result<Control> {
        let listener = cosched_localsock::bind_public(path, "agent", "--socket")?;
        listener.set_nonblocking(true)?;
        Ok(Control {
            listener,
            conns: BTreeMap::new(),
            first_token,
            next_conn: 0,
        })
    }

    /// The listening socket (readable when a client connects).
    pub fn listener_fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Accepts every waiting connection and adds it to `epoll`. Errors are returned as text for the
    /// statistics' `last_error`.
    pub fn on_listen(&mut self, epoll: &Epoll) -> Result<(), String> {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => self
                    .accept(stream, epoll)
                    .map_err(|e| format!("control socket: {e}"))?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(format!("accept: {e}")),
            }
        }
    }

    /// Notes who the peer is and waits for its request line without blocking.
    fn accept(&mut self, stream: UnixStream, epoll: &Epoll) -> anyhow::Result<()> {
        let peer = cosched_localsock::Peer::of(&stream)?;
        let now = Instant::now();
        let stale: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| now.duration_since(c.since) > CONN_PATIENCE)
            .map(|(&t, _)| t)
            .chain(
                self.conns
                    .keys()
                    .copied()
                    .take((self.conns.len() + 1).saturating_sub(MAX_PENDING_CONNS)),
            )
            .collect();
        for token in stale {
            if let Some(c) = self.conns.remove(&token) {
                let _ = epoll.delete(&c.stream);
            }
        }
        stream.set_nonblocking(true)?;
        let token = self.first_token + self.next_conn;
        self.next_conn += 1;
        epoll.add(&stream, EpollEvent::new(EpollFlags::EPOLLIN, token))?;
        self.conns.insert(
            token,
            PendingConn {
                stream,
                uid: peer.uid,
                line: Vec::new(),
                since: now,
            },
        );
        Ok(())
    }

    /// More of connection `token`'s request line arrived (or it hung up). Once the line is whole, returns it
    /// ([`Incoming`]); `None` while it is still coming or when the client went away.
    pub fn on_readable(&mut self, token: u64, epoll: &Epoll) -> Option<Incoming> {
        let conn = self.conns.get_mut(&token)?;
        let mut buf = [0u8; 4096];
        let complete = loop {
            match conn.stream.read(&mut buf) {
                Ok(0) => break None, // hung up before a whole line
                Ok(n) => {
                    conn.line.extend_from_slice(&buf[..n]);
                    if let Some(end) = conn.line.iter().position(|&b| b == b'\n') {
                        break Some(conn.line[..end].to_vec());
                    }
                    if conn.line.len() > MAX_LINE {
                        break None; // not a request of ours
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break None,
            }
        };
        let conn = self.conns.remove(&token).expect("looked up above");
        let _ = epoll.delete(&conn.stream);
        let request = parse_request(&complete?);
        Some(Incoming {
            stream: conn.stream,
            uid: conn.uid,
            request,
        })
    }
}

/// One request line (without its newline), or what is wrong with it. Anything a local user sends comes through
/// here: it is fuzzed (`fuzz/fuzz_targets/control_request.rs`), and its corpus replays in `cargo test`.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    let line = String::from_utf8_lossy(line);
    serde_json::from_str::<Request>(&line).map_err(|e| format!("bad request {line:?}: {e}"))
}

/// Writes one reply line. The client waits for it with an empty receive buffer, so a reply (a few kB of
/// statistics at most) fits at once; the timeout only bounds a client that stopped reading.
pub fn reply_to(stream: UnixStream, reply: &Reply) -> anyhow::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(crate::proto::SERVE_TIMEOUT))?;
    let mut out = serde_json::to_string(reply)?;
    out.push('\n');
    (&stream).write_all(out.as_bytes())?;
    Ok(())
}
