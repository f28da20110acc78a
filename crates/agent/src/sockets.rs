//! How much data sits on a process's sockets: seed `003_d5c4b72e5fa91aa6.txt`'s `rq` and `sq`, read from
//! `/proc`.
//!
//! ## Problem
//! Predictive coscheduling (PRED, DYN: [`cosched_policy::predictive`]) favours a task in proportion to the data
//! queued on its sockets — received and not yet read, sent and not yet acknowledged. The seed's patch read
//! `sk->rmem_alloc` and `sk->wmem_alloc` inside `goodness()`; the agent has no such hook, and BPF sees single
//! messages, not the sum over a process's sockets.
//!
//! ## Approach
//! Once per tick, for each managed process: its open sockets (`/proc/PID/fd`, links `socket:[INODE]`), each
//! borrowed for a moment with `pidfd_getfd(2)` (a duplicate, closed at once: the process's own descriptor is
//! untouched) and asked two `ioctl`s: `SIOCINQ`, the bytes received and not read, and `SIOCOUTQ`, the bytes sent
//! and not acknowledged (TCP: `write_seq − snd_una`; UDP and unix sockets: `wmem_alloc`) — the seed's `rq` and
//! `sq`, for TCP, UDP and unix sockets alike. A listening socket answers neither (`EINVAL`): it counts nothing.
//!
//! Reading `/proc/PID/net/tcp` instead was tried first and measured (2026-11-26): the kernel walks its whole
//! established-hash table for every read, 10–20 ms each here, and an agent sampling two processes every 10 ms
//! spent 95 % of a CPU doing it (at real-time priority, starving the job it served).
//!
//! ## Cost and limits
//! Listing a process's sockets is the expensive part: every `/proc/PID/fd` entry read is a dentry and an inode
//! made and, at the last `dput`, freed through RCU. Done for every process at every 10 ms tick (and a `pidfd_open`
//! each time), it cost the agent 12 % of a CPU beside the lab's Open MPI ping-pong, at real-time priority, and the
//! RCU callbacks it queued starved behind the lab's competitors (`cpu.shares` 262144): RCU grace periods stalled
//! for a minute, a `tty` flush behind them held `mpirun`, and the job never finished (2026-11-29,
//! `docs/lab-pred.md`). So a [`SocketTable`] keeps, per process, a `pidfd` (opened once) and the list of its
//! sockets by descriptor number and inode, and lists again only when a borrowed descriptor turns out to be
//! another file (closed and reused: its inode differs) or when the list is [`RELIST_MAX`] old; a list that
//! changed is read again at the next look, and the interval doubles while it does not, from [`RELIST_MIN`]. A
//! socket a process opens under a new descriptor number is therefore seen within [`RELIST_MAX`] at most. Per
//! socket per look: a `pidfd_getfd`, an `fstat`, two `ioctl`s and a `close`. `pidfd_getfd` needs ptrace rights
//! over the process (root has them unless Yama's `ptrace_scope` is 3): a process whose sockets cannot be
//! borrowed reads as idle. Intra-node MPI over shared memory is invisible to any socket view.

use crate::sched::pidfd_open;
use cosched_policy::predictive::SocketQueue;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// `SIOCINQ` (= `FIONREAD`): bytes received and not yet read.
const SIOCINQ: libc::Ioctl = libc::FIONREAD;
/// `SIOCOUTQ` (= `TIOCOUTQ`): bytes sent and not yet acknowledged (TCP), or not yet freed (UDP, unix).
const SIOCOUTQ: libc::Ioctl = libc::TIOCOUTQ;

/// A process's open sockets, each as its descriptor number and inode, from its `/proc/PID/fd` links
/// `socket:[INODE]`.
pub fn socket_fds(tgid: u32) -> Vec<(RawFd, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{tgid}/fd")) else {
        return Vec::new(); // gone, or not ours to read: nothing queued that the agent can see
    };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let target = std::fs::read_link(entry.path()).ok()?;
        let inode = socket_inode(target.to_str()?)?;
        Some((entry.file_name().to_str()?.parse().ok()?, inode))
    })
    .collect()
}

/// The inode a descriptor's link names if it is a socket (`socket:[12345]`).
fn socket_inode(target: &str) -> Option<u64> {
    target
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The inode of an open descriptor (`fstat`).
fn inode_of(fd: &OwnedFd) -> Option<u64> {
    nix::sys::stat::fstat(fd).ok().map(|st| st.st_ino)
}

/// One `ioctl` that reports a byte count, or `None` where the socket does not answer it (a listener).
fn queued_bytes(fd: RawFd, request: libc::Ioctl) -> Option<u64> {
    let mut bytes: libc::c_int = 0;
    // SAFETY: `fd` is an open descriptor we own; the request writes one int.
    let rc = unsafe { libc::ioctl(fd, request, &mut bytes) };
    (rc == 0).then(|| u64::try_from(bytes).unwrap_or(0))
}

/// Descriptor `fd` of the process behind `pidfd`, duplicated into the agent (`pidfd_getfd`) for a look; the
/// duplicate closes when dropped, the process's own descriptor is untouched.
/// `Ok(None)`: the descriptor is closed, or the process cannot be looked into; `Err`: the process is gone.
fn borrowed(pidfd: &OwnedFd, fd: RawFd) -> Result<Option<OwnedFd>, ()> {
    // SAFETY: pidfd_getfd with a valid pidfd, a descriptor number and no flags; it returns a new descriptor
    // (or -1), which OwnedFd then closes.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if raw < 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ESRCH) => Err(()),
            _ => Ok(None), // closed meanwhile (EBADF), or no ptrace rights (EPERM)
        };
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(raw as RawFd) }))
}

/// The first interval between two listings of a process's sockets, and the one after a listing that changed.
pub const RELIST_MIN: Duration = Duration::from_millis(20);
/// The longest interval between two listings: a socket opened under a new descriptor number is seen by then.
pub const RELIST_MAX: Duration = Duration::from_secs(1);
/// A process not looked at for this long is dropped from the table (its `pidfd` closed).
const UNUSED_AFTER: Duration = Duration::from_secs(5);

/// What a [`SocketTable`] knows of one process.
#[derive(Debug)]
struct Listed {
    pidfd: OwnedFd,
    /// Its sockets when last listed: descriptor number and inode.
    sockets: Vec<(RawFd, u64)>,
    listed_at: Instant,
    /// When to list again (sooner if a descriptor is found reused).
    relist_after: Duration,
    used_at: Instant,
}

/// The sockets of the processes the agent looks at, listed from `/proc` only now and then (module docs: Cost).
#[derive(Debug, Default)]
pub struct SocketTable {
    processes: HashMap<u32, Listed>,
}

impl SocketTable {
    /// Every socket of process `tgid` as of `now`, each with its descriptor number there and a borrowed
    /// duplicate (none if it is gone or cannot be looked into).
    fn borrowed_sockets(&mut self, tgid: u32, now: Instant) -> Vec<(RawFd, OwnedFd)> {
        let entry = match self.processes.entry(tgid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let Ok(pidfd) = pidfd_open(tgid, 0) else {
                    return Vec::new(); // gone: nothing queued
                };
                v.insert(Listed {
                    pidfd,
                    sockets: socket_fds(tgid),
                    listed_at: now,
                    relist_after: RELIST_MIN,
                    used_at: now,
                })
            }
        };
        entry.used_at = now;
        if now.duration_since(entry.listed_at) >= entry.relist_after {
            let sockets = socket_fds(tgid);
            entry.relist_after = if sockets == entry.sockets {
                (entry.relist_after * 2).min(RELIST_MAX)
            } else {
                RELIST_MIN
            };
            entry.sockets = sockets;
            entry.listed_at = now;
        }
        let mut out = Vec::with_capacity(entry.sockets.len());
        let mut reused = false;
        for &(fd, inode) in &entry.sockets {
            match borrowed(&entry.pidfd, fd) {
                Ok(Some(socket)) if inode_of(&socket) == Some(inode) => out.push((fd, socket)),
                Ok(_) => reused = true, // closed, or another file now: list again at the next look
                Err(()) => {
                    // The process is gone (a pidfd names one process for good): forget it, so that a new
                    // process given the same pid is listed afresh.
                    self.processes.remove(&tgid);
                    return Vec::new();
                }
            }
        }
        if reused {
            entry.relist_after = Duration::ZERO;
        }
        out
    }

    /// The queues of every socket each of `tgids` holds, in bytes. A process that is gone has none; processes
    /// not asked about for a while are dropped.
    pub fn sample(&mut self, tgids: &[u32]) -> HashMap<u32, Vec<SocketQueue>> {
        let now = Instant::now();
        let out = tgids
            .iter()
            .map(|&t| {
                let queues = self
                    .borrowed_sockets(t, now)
                    .iter()
                    .filter_map(|(_, socket)| queues(socket))
                    .collect();
                (t, queues)
            })
            .collect();
        self.forget_unused(now);
        out
    }

    fn forget_unused(&mut self, now: Instant) {
        self.processes
            .retain(|_, p| now.duration_since(p.used_at) < UNUSED_AFTER);
    }
}

/// The queues of a socket, bytes (`None` for a listener, which answers neither `ioctl`).
fn queues(socket: &OwnedFd) -> Option<SocketQueue> {
    let rmem = queued_bytes(socket.as_raw_fd(), SIOCINQ)?;
    let wmem = queued_bytes(socket.as_raw_fd(), SIOCOUTQ).unwrap_or(0);
    Some(SocketQueue { rmem, wmem })
}

/// Bytes a TCP socket has received since it was opened (`TCP_INFO`'s `tcpi_bytes_received`, Linux 4.1+), or
/// `None` for any other socket.
fn tcp_bytes_received(socket: &OwnedFd) -> Option<u64> {
    let fd = socket.as_raw_fd();
    // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `fd` is an open descriptor we own; the kernel writes at most `len` bytes into `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    let reaches =
        std::mem::offset_of!(libc::tcp_info, tcpi_bytes_received) + std::mem::size_of::<u64>();
    (rc == 0 && len as usize >= reaches).then_some(info.tcpi_bytes_received)
}

/// What the jobs' TCP sockets received between two looks: the self-check's measure of progress
/// ([`cosched_policy::selfcheck`]). Each socket is known by its process and descriptor number; a socket seen for
/// the first time counts from that look on (its earlier bytes are not this interval's), one that is gone counts
/// no more.
#[derive(Debug, Default)]
pub struct ReceivedBytes {
    last: HashMap<(u32, RawFd), u64>,
    table: SocketTable,
}

impl ReceivedBytes {
    /// Bytes received on the TCP sockets of `tgids` since the previous call (`None`: they hold no TCP socket
    /// the agent can look into — unix sockets and shared memory carry no such count).
    pub fn since_last(&mut self, tgids: &[u32]) -> Option<u64> {
        let mut now = HashMap::with_capacity(self.last.len());
        let at = Instant::now();
        for &tgid in tgids {
            for (fd, socket) in self.table.borrowed_sockets(tgid, at) {
                if let Some(bytes) = tcp_bytes_received(&socket) {
                    now.insert((tgid, fd), bytes);
                }
            }
        }
        self.table.forget_unused(at);
        let seen = !now.is_empty();
        let delta = now
            .iter()
            .filter_map(|(k, &v)| self.last.get(k).map(|&before| v.saturating_sub(before)))
            .sum();
        self.last = now;
        seen.then_some(delta)
    }

    /// Forgets every socket (the next call only sets the baseline).
    pub fn forget(&mut self) {
        self.last.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn socket_links_are_told_from_other_descriptors() {
        assert_eq!(socket_inode("socket:[30001]"), Some(30001));
        assert_eq!(socket_inode("pipe:[30001]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    /// The table's view of this process's descriptor `fd` at `now`: its queues, if it lists it.
    fn table_queues(table: &mut SocketTable, fd: RawFd, now: Instant) -> Option<SocketQueue> {
        table
            .borrowed_sockets(std::process::id(), now)
            .iter()
            .find(|(f, _)| *f == fd)
            .and_then(|(_, s)| queues(s))
    }

    #[test]
    fn the_table_lists_again_when_a_descriptor_is_reused_and_backs_off_while_nothing_changes() {
        use std::os::fd::AsFd;
        let me = std::process::id();
        let (mut a_tx, a_rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let (mut b_tx, b_rx) = std::os::unix::net::UnixStream::pair().unwrap();
        a_tx.write_all(&[1u8; 100]).unwrap();
        b_tx.write_all(&[2u8; 200]).unwrap();
        let mut a_rx = OwnedFd::from(a_rx);
        let fd = a_rx.as_raw_fd();
        let mut table = SocketTable::default();
        let t0 = Instant::now();
        assert_eq!(
            table_queues(&mut table, fd, t0),
            Some(SocketQueue { rmem: 100, wmem: 0 })
        );
        // Unchanged listings double the interval up to RELIST_MAX (other tests of this binary open and close
        // sockets meanwhile, so only the bounds are asserted).
        let mut at = t0;
        for _ in 0..12 {
            at += RELIST_MAX;
            table_queues(&mut table, fd, at);
        }
        assert!(table.processes[&me].relist_after <= RELIST_MAX);
        // Descriptor `fd` now names another socket (b_rx's, dup2'd over it): its inode differs, so the look
        // that finds it does not count it and the next one lists afresh and does.
        nix::unistd::dup2(b_rx.as_fd(), &mut a_rx).unwrap();
        let soon = at + Duration::from_millis(1);
        assert_eq!(table_queues(&mut table, fd, soon), None);
        assert_eq!(table.processes[&me].relist_after, Duration::ZERO);
        assert_eq!(
            table_queues(&mut table, fd, soon + Duration::from_millis(1)),
            Some(SocketQueue { rmem: 200, wmem: 0 })
        );
        drop(a_rx); // closes fd, now b_rx's duplicate
    }

    /// The queues of this process's descriptor `fd`, once they read `want` (loopback delivers within moments).
    /// Other tests of this binary have sockets of their own: each socket is looked at by its descriptor.
    fn wait_for(fd: RawFd, want: SocketQueue) {
        let me = pidfd_open(std::process::id(), 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let got = borrowed(&me, fd).unwrap().and_then(|s| queues(&s));
            if got == Some(want) {
                return;
            }
            assert!(Instant::now() < deadline, "fd {fd}: {got:?}, want {want:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn unread_tcp_and_unix_data_is_seen_and_a_listener_counts_nothing() {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let (mut unix_a, unix_b) = std::os::unix::net::UnixStream::pair().unwrap();
        let fds: Vec<RawFd> = socket_fds(std::process::id())
            .iter()
            .map(|&(fd, _)| fd)
            .collect();
        for s in [listener.as_raw_fd(), server.as_raw_fd(), unix_b.as_raw_fd()] {
            assert!(fds.contains(&s), "{s} not among {fds:?}");
        }
        // A listener answers neither ioctl: no data, whatever its backlog.
        let me = pidfd_open(std::process::id(), 0).unwrap();
        assert_eq!(
            borrowed(&me, listener.as_raw_fd())
                .unwrap()
                .and_then(|s| queues(&s)),
            None
        );
        client.write_all(&[7u8; 10_000]).unwrap();
        // Loopback acknowledges at once: 10,000 bytes unread on the server side, none unacknowledged.
        wait_for(
            server.as_raw_fd(),
            SocketQueue {
                rmem: 10_000,
                wmem: 0,
            },
        );
        wait_for(client.as_raw_fd(), SocketQueue { rmem: 0, wmem: 0 });
        unix_a.write_all(&[1u8; 300]).unwrap();
        wait_for(unix_b.as_raw_fd(), SocketQueue { rmem: 300, wmem: 0 });
    }

    #[test]
    fn received_bytes_count_tcp_traffic_between_looks_and_nothing_else() {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let (mut unix_a, _unix_b) = std::os::unix::net::UnixStream::pair().unwrap();
        let me = std::process::id();
        let mut meter = ReceivedBytes::default();
        // The first look sets the baseline (other tests of this binary may hold sockets too: only a lower
        // bound on what they add is asserted).
        assert!(
            meter.since_last(&[me]).is_some(),
            "this process holds TCP sockets"
        );
        client.write_all(&[7u8; 5_000]).unwrap();
        let mut got = vec![0u8; 5_000];
        server.read_exact(&mut got).unwrap();
        let delta = meter.since_last(&[me]).unwrap();
        assert!(delta >= 5_000, "{delta}");
        // A unix socket's traffic is not counted; without TCP traffic the next interval reads 0 from these two.
        unix_a.write_all(&[1u8; 300]).unwrap();
        let server_key = (me, server.as_raw_fd());
        let before = meter.last[&server_key];
        let _ = meter.since_last(&[me]);
        assert_eq!(
            meter.last[&server_key], before,
            "no TCP traffic on it since"
        );
        assert!(!meter.last.contains_key(&(me, unix_a.as_raw_fd())));
        // A process without TCP sockets: nothing measurable.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(ReceivedBytes::default().since_last(&[child.id()]), None);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_process_that_is_gone_has_no_sockets() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(SocketTable::default().sample(&[pid])[&pid].is_empty());
    }
}
