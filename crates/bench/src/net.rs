//! Connection setup among the N ranks of one benchmark run.
//!
//! ## Approach
//! Rank 0 listens on `--listen ADDR:PORT`; every other rank connects to it (`--connect ADDR:PORT`), retrying
//! while rank 0 starts, until `--connect-timeout-s`. That star ([`Links::Star`]) carries all of ping-pong's,
//! barrier's and master-slave's traffic. Programs that talk to other ranks directly ask for more *peer links*:
//! each rank ≥ 1 that a higher rank must reach opens a listener of its own on the address its star connection
//! uses, and rank 0 hands every rank the table of those addresses; each rank then connects to the listeners of
//! the lower ranks ≥ 1 it needs (its links to rank 0 are the star connections) and accepts the higher ones.
//! - [`Links::Neighbours`] (the stencil, the multigrid): rank r+1 connects to rank r. With the star this is also
//!   a ring: rank N-1's right neighbour, rank 0, is its star connection.
//! - [`Links::Mesh`] (the all-to-all): rank r connects to every rank 1..r, so every pair of ranks has a link.
//!
//! ```text
//! rank r ≥ 1                         rank 0
//! connect (retry)      ─────────▶    accept N-1 connections (until the timeout)
//! Hello{program, rank, ranks, role, peer_port}   ▶ check: same program, same N, ranks distinct and in range
//!                      ◀─────────    Welcome{addresses of every rank's peer listener}
//! connect to the lower ranks' listeners, accept the higher ranks (peer links only)
//! Ready                ─────────▶    (all Ready)
//!                      ◀─────────    Go             — every rank starts its clock here
//! ```
//!
//! Every rank must be started with the same settings (message size, run length, grid, ...): rank 0 refuses a
//! rank whose settings differ, naming both. Every stream has TCP_NODELAY set and no read timeout. Every failure names the rank, the address and what to
//! do about it.

use crate::channel::Link;
use crate::message::{read_control, write_control};
use crate::signals::stop_requested;
use anyhow::{anyhow, bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// What a rank needs to join its group.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// Program name; every rank of a run must run the same program.
    pub program: String,
    pub rank: usize,
    pub ranks: usize,
    /// Rank 0: where to listen.
    pub listen: Option<SocketAddr>,
    /// Ranks ≥ 1: where rank 0 listens.
    pub connect: Option<SocketAddr>,
    /// How long to wait for the other ranks.
    pub timeout: Duration,
    /// A program-defined role this rank announces to rank 0 (master-slave: `r` or `rs`).
    pub role: String,
    /// The settings every rank must share (message size, grid, ...), as text; rank 0 refuses a rank whose
    /// settings differ from its own.
    pub settings: String,
    /// Which ranks connect to each other besides the star.
    pub links: Links,
}

/// The connections of a run: always rank 0 to every rank (the star), and the peer links a program asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Rank 0 to every rank only (ping-pong, barrier, master-slave).
    Star,
    /// Also rank r to ranks r-1 and r+1 (the stencil's row blocks; with the star, the ring of the multigrid).
    Neighbours,
    /// Every rank to every other rank (the all-to-all).
    Mesh,
}

impl Links {
    /// The ranks ≥ 1 below `rank` whose listeners `rank` connects to.
    fn lower(self, rank: usize) -> Vec<usize> {
        match self {
            Links::Star => Vec::new(),
            Links::Neighbours => (rank > 1).then(|| rank - 1).into_iter().collect(),
            Links::Mesh => (1..rank).collect(),
        }
    }

    /// The ranks above `rank` (of `ranks`) that connect to its listener.
    fn higher(self, rank: usize, ranks: usize) -> Vec<usize> {
        match self {
            Links::Star => Vec::new(),
            Links::Neighbours => (rank + 1 < ranks).then_some(rank + 1).into_iter().collect(),
            Links::Mesh => (rank + 1..ranks).collect(),
        }
    }
}

#[derive(Serialize, Deserialize, Debug)]
struct Hello {
    program: String,
    rank: usize,
    ranks: usize,
    role: String,
    settings: String,
    /// Port of this rank's peer listener (0: none).
    peer_port: u16,
}

#[derive(Serialize, Deserialize, Debug)]
enum Control {
    Welcome {
        peer_addresses: Vec<Option<SocketAddr>>,
    },
    PeerHello {
        rank: usize,
    },
    Ready,
    Go,
    Refused {
        reason: String,
    },
}

/// The connected ranks of one run, as seen from one rank.
#[derive(Debug)]
pub struct Group {
    pub rank: usize,
    pub ranks: usize,
    /// `links[r]`: the connection to rank r, if this rank has one.
    links: Vec<Option<Link>>,
    /// Every rank's announced role (rank 0 only; others see just their own).
    pub roles: Vec<String>,
}

impl Group {
    /// The connection to `rank`.
    pub fn link(&self, rank: usize) -> &Link {
        self.links[rank]
            .as_ref()
            .unwrap_or_else(|| panic!("rank {} has no link to rank {rank}", self.rank))
    }

    /// The connection to `rank`, if this rank has one.
    pub fn try_link(&self, rank: usize) -> Option<&Link> {
        self.links.get(rank).and_then(Option::as_ref)
    }

    /// Rank 0's links to every other rank, in rank order.
    pub fn members(&self) -> impl Iterator<Item = &Link> {
        self.links.iter().skip(1).flatten()
    }

    /// Join the group described by `config`: connect, check, and pass the start barrier.
    pub fn join(config: &GroupConfig) -> Result<Group> {
        validate(config)?;
        let deadline = Instant::now() + config.timeout;
        if config.rank == 0 {
            join_as_root(config, deadline)
        } else {
            join_as_member(config, deadline)
        }
    }
}

fn validate(config: &GroupConfig) -> Result<()> {
    if config.ranks < 2 {
        bail!(
            "--ranks {} is too few: a parallel run needs at least 2 ranks",
            config.ranks
        );
    }
    if config.rank >= config.ranks {
        bail!(
            "--rank {} is out of range for --ranks {} (ranks are 0..{})",
            config.rank,
            config.ranks,
            config.ranks - 1
        );
    }
    match (config.rank, config.listen, config.connect) {
        (0, None, _) => bail!("rank 0 needs --listen ADDR:PORT (where the other ranks connect)"),
        (0, Some(_), Some(_)) => bail!("rank 0 listens; give it --listen only, not --connect"),
        (r, _, None) if r > 0 => {
            bail!("rank {r} needs --connect ADDR:PORT (rank 0's --listen address)")
        }
        (r, Some(_), Some(_)) if r > 0 => {
            bail!("rank {r} connects; give it --connect only, not --listen")
        }
        _ => Ok(()),
    }
}

fn prepare(stream: &TcpStream) -> Result<()> {
    stream.set_nodelay(true).context("setting TCP_NODELAY")?;
    stream
        .set_nonblocking(false)
        .context("making the socket blocking")?;
    Ok(())
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Accept one connection on `listener` before `deadline`; `what` describes whom we wait for.
fn accept_before(
    listener: &TcpListener,
    deadline: Instant,
    what: &dyn Fn() -> String,
) -> Result<TcpStream> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                prepare(&stream)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("accepting a connection"),
        }
        if stop_requested() {
            bail!("stopped by a signal while waiting for {}", what());
        }
        let left = remaining(deadline);
        if left.is_zero() {
            bail!("{}", what());
        }
        let wait_ms = left.as_millis().clamp(1, 100) as u16;
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(wait_ms));
    }
}

/// Connect to `address`, retrying while the peer is not listening yet.
fn connect_before(address: SocketAddr, deadline: Instant, who: &str) -> Result<TcpStream> {
    let mut backoff = Duration::from_millis(10);
    loop {
        let attempt = remaining(deadline).clamp(Duration::from_millis(10), Duration::from_secs(2));
        match TcpStream::connect_timeout(&address, attempt) {
            Ok(stream) => {
                prepare(&stream)?;
                return Ok(stream);
            }
            Err(e) => {
                if stop_requested() {
                    bail!("stopped by a signal while connecting to {who} at {address}");
                }
                if remaining(deadline).is_zero() {
                    return Err(anyhow!(e)).context(format!(
                        "could not connect to {who} at {address} before the timeout; is it running and \
                         listening there? (raise --connect-timeout-s if it starts slowly)"
                    ));
                }
            }
        }
        std::thread::sleep(backoff.min(remaining(deadline)));
        backoff = (backoff * 2).min(Duration::from_millis(200));
    }
}

/// Read a control frame with the setup deadline as read timeout.
fn read_before<T: serde::de::DeserializeOwned>(
    stream: &mut TcpStream,
    deadline: Instant,
    what: &str,
) -> Result<T> {
    // Wait for the frame in short polls, so that a stop signal or the deadline ends the wait promptly.
    loop {
        if stop_requested() {
            bail!("stopped by a signal while waiting for {what}");
        }
        let left = remaining(deadline);
        if left.is_zero() {
            bail!("timed out waiting for {what} (raise --connect-timeout-s if ranks start slowly)");
        }
        let wait_ms = left.as_millis().clamp(1, 100) as u16;
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        if let Ok(n) = poll(&mut fds, PollTimeout::from(wait_ms)) {
            if n > 0 {
                break;
            }
        }
    }
    stream.set_read_timeout(Some(remaining(deadline).max(Duration::from_millis(100))))?;
    let value = read_control(stream).with_context(|| format!("reading {what}"));
    stream.set_read_timeout(None)?;
    value
}

fn join_as_root(config: &GroupConfig, deadline: Instant) -> Result<Group> {
    let address = config.listen.expect("validated");
    let listener = TcpListener::bind(address).with_context(|| {
        format!("rank 0 cannot listen on {address}; is the address on this host (namespace) and the port free?")
    })?;
    let bound = listener.local_addr()?;
    // Harnesses that pass port 0 learn the real port here.
    eprintln!("{} rank 0 listening on {bound}", config.program);

    let n = config.ranks;
    let mut streams: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let mut roles = vec![String::new(); n];
    roles[0] = config.role.clone();
    let mut peer_addresses: Vec<Option<SocketAddr>> = vec![None; n];
    let mut joined = 1;
    while joined < n {
        let missing = || {
            let ranks: Vec<usize> = (1..n).filter(|&r| streams[r].is_none()).collect();
            format!(
                "rank 0 waited {:.0} s on {bound} for rank(s) {ranks:?} of {n}; start them with --connect {bound} \
                 (or raise --connect-timeout-s)",
                config.timeout.as_secs_f64()
            )
        };
        let mut stream = accept_before(&listener, deadline, &missing)?;
        let hello: Hello = read_before(&mut stream, deadline, "a rank's hello")?;
        let refusal = if hello.program != config.program {
            Some(format!(
                "rank {} runs {} but rank 0 runs {}",
                hello.rank, hello.program, config.program
            ))
        } else if hello.ranks != n {
            Some(format!(
                "rank {} was started with --ranks {} but rank 0 with --ranks {n}",
                hello.rank, hello.ranks
            ))
        } else if hello.settings != config.settings {
            Some(format!(
                "rank {} was started with {:?} but rank 0 with {:?}; give every rank the same flags",
                hello.rank, hello.settings, config.settings
            ))
        } else if hello.rank == 0 || hello.rank >= n {
            Some(format!(
                "a peer announced rank {}, outside 1..{}",
                hello.rank,
                n - 1
            ))
        } else if streams[hello.rank].is_some() {
            Some(format!(
                "two processes announced rank {}; give each process its own --rank",
                hello.rank
            ))
        } else {
            None
        };
        if let Some(reason) = refusal {
            let _ = write_control(
                &mut stream,
                &Control::Refused {
                    reason: reason.clone(),
                },
            );
            bail!("{reason}");
        }
        if hello.peer_port != 0 {
            let ip = stream.peer_addr()?.ip();
            peer_addresses[hello.rank] = Some(SocketAddr::new(ip, hello.peer_port));
        }
        roles[hello.rank] = hello.role;
        streams[hello.rank] = Some(stream);
        joined += 1;
    }
    for stream in streams.iter_mut().flatten() {
        write_control(
            stream,
            &Control::Welcome {
                peer_addresses: peer_addresses.clone(),
            },
        )?;
    }
    for (rank, stream) in streams.iter_mut().enumerate() {
        if let Some(stream) = stream {
            match read_before::<Control>(stream, deadline, &format!("rank {rank}'s ready"))? {
                Control::Ready => {}
                other => bail!("rank {rank} sent {other:?} instead of Ready"),
            }
        }
    }
    for stream in streams.iter_mut().flatten() {
        write_control(stream, &Control::Go)?;
    }
    let links = streams
        .into_iter()
        .enumerate()
        .map(|(rank, s)| s.map(|s| Link::new(s, rank)))
        .collect();
    Ok(Group {
        rank: 0,
        ranks: n,
        links,
        roles,
    })
}

fn join_as_member(config: &GroupConfig, deadline: Instant) -> Result<Group> {
    let root = config.connect.expect("validated");
    let (rank, n) = (config.rank, config.ranks);
    let mut star = connect_before(root, deadline, "rank 0")
        .with_context(|| format!("rank {rank} joining the run"))?;
    // The peer listener lives on the address this rank's star connection uses (its own namespace's).
    let local_ip: IpAddr = star.local_addr()?.ip();
    let (lower, higher) = (config.links.lower(rank), config.links.higher(rank, n));
    let peer_listener = if higher.is_empty() {
        None
    } else {
        Some(
            TcpListener::bind((local_ip, 0))
                .with_context(|| format!("rank {rank} opening its peer listener on {local_ip}"))?,
        )
    };
    let peer_port = match &peer_listener {
        Some(l) => l.local_addr()?.port(),
        None => 0,
    };
    write_control(
        &mut star,
        &Hello {
            program: config.program.clone(),
            rank,
            ranks: n,
            role: config.role.clone(),
            settings: config.settings.clone(),
            peer_port,
        },
    )?;
    let peer_addresses = match read_before::<Control>(&mut star, deadline, "rank 0's welcome")? {
        Control::Welcome { peer_addresses } => peer_addresses,
        Control::Refused { reason } => bail!("rank 0 refused rank {rank}: {reason}"),
        other => bail!("rank 0 sent {other:?} instead of Welcome"),
    };
    let mut links: Vec<Option<Link>> = (0..n).map(|_| None).collect();
    // Connect to the lower ranks first: their listeners were open before rank 0 sent Welcome, and a connection
    // waits in the listener's backlog until accepted, so no rank waits on another here.
    for &peer in &lower {
        let address = peer_addresses
            .get(peer)
            .copied()
            .flatten()
            .with_context(|| format!("rank 0 sent no peer address for rank {peer}"))?;
        let mut stream = connect_before(address, deadline, &format!("rank {peer}"))?;
        write_control(&mut stream, &Control::PeerHello { rank })?;
        links[peer] = Some(Link::new(stream, peer));
    }
    if let Some(listener) = &peer_listener {
        for _ in 0..higher.len() {
            let missing = || -> Vec<usize> {
                higher
                    .iter()
                    .copied()
                    .filter(|&r| links[r].is_none())
                    .collect()
            };
            let what = || format!("rank {rank} waited for rank(s) {:?} to connect", missing());
            let mut stream = accept_before(listener, deadline, &what)?;
            match read_before::<Control>(&mut stream, deadline, "a peer's hello")? {
                Control::PeerHello { rank: r } if higher.contains(&r) && links[r].is_none() => {
                    links[r] = Some(Link::new(stream, r));
                }
                other => bail!(
                    "rank {rank} expected one of rank(s) {:?} on its peer listener, got {other:?}",
                    missing()
                ),
            }
        }
    }
    write_control(&mut star, &Control::Ready)?;
    // Rank 0 says Go once every rank is Ready; the wait is bounded by the setup deadline.
    match read_before::<Control>(&mut star, deadline + Duration::from_secs(5), "rank 0's go")? {
        Control::Go => {}
        other => bail!("rank 0 sent {other:?} instead of Go"),
    }
    links[0] = Some(Link::new(star, 0));
    let mut roles = vec![String::new(); n];
    roles[rank] = config.role.clone();
    Ok(Group {
        rank,
        ranks: n,
        links,
        roles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rank: usize, ranks: usize, address: SocketAddr, links: Links) -> GroupConfig {
        GroupConfig {
            program: "test".into(),
            rank,
            ranks,
            listen: (rank == 0).then_some(address),
            connect: (rank > 0).then_some(address),
            timeout: Duration::from_secs(20),
            role: format!("role{rank}"),
            settings: "bytes=128".into(),
            links,
        }
    }

    fn free_address() -> SocketAddr {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn four_ranks_form_a_star_with_neighbour_links() {
        let address = free_address();
        let members: Vec<_> = (1..4)
            .map(|r| {
                std::thread::spawn(move || {
                    Group::join(&config(r, 4, address, Links::Neighbours)).unwrap()
                })
            })
            .collect();
        let root = Group::join(&config(0, 4, address, Links::Neighbours)).unwrap();
        assert_eq!(root.members().count(), 3);
        assert_eq!(root.roles, vec!["role0", "role1", "role2", "role3"]);
        let groups: Vec<Group> = members.into_iter().map(|h| h.join().unwrap()).collect();
        // Rank 2 links to 0 (star), 1 and 3 (neighbours); rank 3 has no rank 4.
        assert!(
            groups[1].try_link(0).is_some()
                && groups[1].try_link(1).is_some()
                && groups[1].try_link(3).is_some()
        );
        assert!(groups[2].try_link(2).is_some() && groups[2].try_link(1).is_none());
    }

    #[test]
    fn five_ranks_form_a_full_mesh() {
        let address = free_address();
        let members: Vec<_> = (1..5)
            .map(|r| {
                std::thread::spawn(move || {
                    Group::join(&config(r, 5, address, Links::Mesh)).unwrap()
                })
            })
            .collect();
        let mut groups = vec![Group::join(&config(0, 5, address, Links::Mesh)).unwrap()];
        groups.extend(members.into_iter().map(|h| h.join().unwrap()));
        for g in &groups {
            for peer in 0..5 {
                let link = g.try_link(peer);
                assert_eq!(
                    link.is_some(),
                    peer != g.rank,
                    "rank {} to rank {peer}",
                    g.rank
                );
                if let Some(l) = link {
                    assert_eq!(l.peer, peer);
                }
            }
        }
    }

    #[test]
    fn a_member_without_a_root_times_out_with_a_clear_error() {
        let address = free_address();
        let mut c = config(1, 2, address, Links::Star);
        c.timeout = Duration::from_millis(300);
        let err = format!("{:#}", Group::join(&c).unwrap_err());
        assert!(
            err.contains("could not connect to rank 0") && err.contains(&address.to_string()),
            "{err}"
        );
    }

    #[test]
    fn mismatched_rank_counts_are_refused() {
        let address = free_address();
        let member = std::thread::spawn(move || Group::join(&config(1, 3, address, Links::Star)));
        let err = format!(
            "{:#}",
            Group::join(&config(0, 2, address, Links::Star)).unwrap_err()
        );
        assert!(
            err.contains("--ranks 3") && err.contains("--ranks 2"),
            "{err}"
        );
        let member_err = format!("{:#}", member.join().unwrap().unwrap_err());
        assert!(member_err.contains("refused"), "{member_err}");
    }

    #[test]
    fn mismatched_settings_are_refused() {
        let address = free_address();
        let member = std::thread::spawn(move || {
            let mut c = config(1, 2, address, Links::Star);
            c.settings = "bytes=64".into();
            Group::join(&c)
        });
        let err = format!(
            "{:#}",
            Group::join(&config(0, 2, address, Links::Star)).unwrap_err()
        );
        assert!(
            err.contains("bytes=64") && err.contains("same flags"),
            "{err}"
        );
        assert!(member.join().unwrap().is_err());
    }

    #[test]
    fn bad_flags_are_explained() {
        let a = free_address();
        let mut c = config(0, 2, a, Links::Star);
        c.listen = None;
        assert!(Group::join(&c)
            .unwrap_err()
            .to_string()
            .contains("--listen"));
        let c = config(2, 2, a, Links::Star);
        assert!(Group::join(&c)
            .unwrap_err()
            .to_string()
            .contains("out of range"));
    }
}
