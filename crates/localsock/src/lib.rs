//! A local control socket that any user of the machine may reach, and who is at its other end: the pieces the
//! agent's control socket (`cosched agent`, `crates/agent/src/control.rs`) and the manager's submit socket
//! (`cosched manager`, `crates/manager/src/socket.rs`) share, one copy of each rule.
//!
//! - [`bind_public`]: a listening Unix stream socket, mode 0666 in a 0755 directory, refused when another server
//!   already answers at that path;
//! - [`Peer::of`]: who connected, from the kernel (`SO_PEERCRED`: the peer's pid, uid and gid when it
//!   connected), never from anything the client sends;
//! - [`Identity::of_user`]: what a job of that user runs with (their supplementary groups, `HOME`, `USER` and
//!   `LOGNAME` from the passwd and group databases);
//! - [`may_act_for`]: the ownership rule: root may act on anything, a user only on what is theirs;
//! - [`read_line_capped`]: one request or reply line, at most so many bytes.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// Listens at `path` so that any local user may connect (the socket is born mode 0666; a directory under
/// `/run/cosched` is made 0755). Refuses when another server already answers there (`what` names it in the
/// message, `flag` is the option that picks another path); a stale socket file nobody answers on is replaced.
pub fn bind_public(path: &Path, what: &str, flag: &str) -> anyhow::Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            anyhow::anyhow!("cannot create the socket directory {}: {e}", dir.display())
        })?;
        if dir.starts_with("/run/cosched") {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        }
    }
    if UnixStream::connect(path).is_ok() {
        anyhow::bail!(
            "another {what} already answers at {}; stop it first or pass a different {flag}",
            path.display()
        );
    }
    let _ = std::fs::remove_file(path);
    // SAFETY: umask only affects file creation of this process; set so the socket is born 0666 (connecting
    // needs write permission on it).
    let old = unsafe { libc::umask(0o111) };
    let listener = UnixListener::bind(path);
    // SAFETY: restore the previous mask.
    unsafe { libc::umask(old) };
    listener.map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))
}

/// Who is at the other end of a connection, as the kernel recorded it when the peer connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

impl Peer {
    /// The peer of `stream`, from `SO_PEERCRED`.
    pub fn of(stream: &UnixStream) -> std::io::Result<Peer> {
        let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
            .map_err(std::io::Error::from)?;
        Ok(Peer {
            pid: cred.pid(),
            uid: cred.uid(),
            gid: cred.gid(),
        })
    }
}

/// The ownership rule of everything a local user asks through a socket: root may act on anything; any other
/// user only on what belongs to them (`owner`, a uid).
pub fn may_act_for(requester: u32, owner: u32) -> bool {
    requester == 0 || requester == owner
}

/// Who a job runs as: uid, primary gid, supplementary groups, and the environment variables that go with the
/// user (`HOME`, `USER`, `LOGNAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub env: Vec<(String, String)>,
}

impl Identity {
    /// User `uid` with primary group `gid`, looked up in the passwd database: their supplementary groups
    /// (`getgrouplist` of their name and `gid`) and their `HOME` / `USER` / `LOGNAME`. A uid the passwd
    /// database does not know gets `gid` as its only group and no environment of its own. Looked up before any
    /// fork: a child between fork and exec may only make async-signal-safe calls.
    pub fn of_user(uid: u32, gid: u32) -> Identity {
        use nix::unistd::{Gid, Uid, User};
        let user = User::from_uid(Uid::from_raw(uid)).ok().flatten();
        let groups = user
            .as_ref()
            .and_then(|u| std::ffi::CString::new(u.name.clone()).ok())
            .and_then(|n| nix::unistd::getgrouplist(&n, Gid::from_raw(gid)).ok())
            .map(|g| g.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_else(|| vec![gid]);
        let mut env = Vec::new();
        if let Some(u) = user {
            env.push(("HOME".into(), u.dir.display().to_string()));
            env.push(("USER".into(), u.name.clone()));
            env.push(("LOGNAME".into(), u.name));
        }
        Identity {
            uid,
            gid,
            groups,
            env,
        }
    }
}

/// Why no line was read.
#[derive(Debug)]
pub enum LineError {
    /// The other side closed without sending anything.
    Empty,
    /// More than `max` bytes came without a newline.
    TooLong { max: usize },
    /// A read failed: a timeout (`WouldBlock` / `TimedOut`) or the connection broke.
    Io(std::io::Error),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Empty => write!(f, "the connection closed before a line arrived"),
            LineError::TooLong { max } => write!(f, "the line is longer than {max} bytes"),
            LineError::Io(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                write!(f, "no whole line arrived in time ({e})")
            }
            LineError::Io(e) => write!(f, "reading the line: {e}"),
        }
    }
}

impl std::error::Error for LineError {}

/// Reads one line (up to its newline, which is not returned; or up to the end of the stream) of at most `max`
/// bytes: whatever the other side sends, no more than `max + 1` bytes are held. With a read timeout on the
/// stream, a peer that sends nothing whole in time is an error, not a wait.
pub fn read_line_capped(r: impl Read, max: usize) -> Result<Vec<u8>, LineError> {
    let mut line = Vec::new();
    BufReader::new(r.take(max as u64 + 1))
        .read_until(b'\n', &mut line)
        .map_err(LineError::Io)?;
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > max {
        return Err(LineError::TooLong { max });
    } else if line.is_empty() {
        return Err(LineError::Empty);
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_peer_is_who_the_kernel_says() {
        let (a, _b) = UnixStream::pair().unwrap();
        let peer = Peer::of(&a).unwrap();
        assert_eq!(peer.uid, nix::unistd::geteuid().as_raw());
        assert_eq!(peer.gid, nix::unistd::getegid().as_raw());
        assert_eq!(peer.pid, std::process::id() as i32);
    }

    #[test]
    fn root_may_act_for_anyone_a_user_for_themselves() {
        assert!(may_act_for(0, 1000));
        assert!(may_act_for(1000, 1000));
        assert!(!may_act_for(1000, 1001));
        assert!(!may_act_for(1000, 0));
    }

    #[test]
    fn a_user_without_a_passwd_entry_keeps_only_their_group() {
        // A uid no passwd database on a test machine holds.
        let who = Identity::of_user(3_999_999_999, 3_999_999_998);
        assert_eq!(who.groups, [3_999_999_998]);
        assert!(who.env.is_empty());
        // Root is in every passwd database: its home and name come from it.
        let root = Identity::of_user(0, 0);
        assert!(root.groups.contains(&0));
        assert!(root.env.contains(&("USER".to_string(), "root".to_string())));
    }

    #[test]
    fn lines_are_capped_and_an_empty_or_silent_peer_is_an_error() {
        assert_eq!(read_line_capped(&b"abc\nrest"[..], 10).unwrap(), b"abc");
        assert_eq!(read_line_capped(&b"abc"[..], 10).unwrap(), b"abc");
        assert_eq!(
            read_line_capped(&b"0123456789\n"[..], 10).unwrap(),
            b"0123456789"
        );
        assert!(matches!(
            read_line_capped(&b"0123456789a\n"[..], 10),
            Err(LineError::TooLong { max: 10 })
        ));
        assert!(matches!(
            read_line_capped(&b""[..], 10),
            Err(LineError::Empty)
        ));
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        b.write_all(b"half a li").unwrap();
        let err = read_line_capped(&a, 100).unwrap_err();
        assert!(err.to_string().contains("in time"), "{err}");
    }

    #[test]
    fn a_second_server_on_one_path_is_refused_and_a_stale_file_replaced() {
        let dir = std::env::temp_dir().join(format!("cosched-localsock-{}", std::process::id()));
        let path = dir.join("s.sock");
        let first = bind_public(&path, "test server", "--socket").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        let err = bind_public(&path, "test server", "--socket")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("another test server already answers") && err.contains("--socket"),
            "{err}"
        );
        drop(first); // the file stays, nobody answers
        let _again = bind_public(&path, "test server", "--socket").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
