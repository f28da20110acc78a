//! The manager's submit socket: how a user who cannot write the queue's database (root's, mode 0600) submits,
//! lists and cancels jobs without sudo.
//!
//! The manager listens on a Unix stream socket, mode 0666 (`--socket`, by default [`DEFAULT_SOCKET`] for the
//! default database; `cosched_localsock::bind_public`, the same as the agent's control socket). One JSON
//! request line per connection, at most [`MAX_REQUEST_BYTES`], sent within [`READ_TIMEOUT`]; one JSON reply
//! line; then the manager closes. Who asks is taken from the kernel — the peer's uid and gid from
//! `SO_PEERCRED` (`cosched_localsock::Peer`), that user's supplementary groups and `HOME` / `USER` / `LOGNAME`
//! from the passwd and group databases (`cosched_localsock::Identity::of_user`) — never from the request: a
//! request that names a uid, gid, groups or user is refused, naming the field. A submission is acknowledged
//! only once its transaction committed ([`Db::submit`]); `cancel` of another user's job is refused unless the
//! peer is root (`cosched_localsock::may_act_for`, in [`Db::cancel`]); a job larger than the machine, a bad
//! MPL, an unknown id get the same errors as on the direct path ([`Submission::validate`], [`Db::cancel`]).
//!
//! ```text
//! → {"op":"submit","name":"app","procs":4,"mpl":2,"argv":["mpirun","-n","4","./app"],"cwd":"/home/u","env":[["PATH","/bin"]]}
//! ← {"reply":"submitted","id":7,"uid":1000}
//! → {"op":"cancel","id":7}           ← {"reply":"cancelled","id":7,"now":true}
//! → {"op":"queue"}                   ← {"reply":"queue","jobs":[{"job":{…, "env":[]},"history":[…]}, …]}
//! ← {"reply":"error","message":"field `procs`: invalid type: string \"x\", expected u32"}
//! ```

use crate::db::{Cancelled, Db, Event, Job, Submission};
use anyhow::{Context, Result};
use cosched_localsock::{Identity, Peer};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where the manager of the default database listens, and its clients look for it.
pub const DEFAULT_SOCKET: &str = "/run/cosched/manager.sock";
/// The longest request line the manager reads (a submission carries its command and environment).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// The longest reply line a client reads (`queue` lists every job with its history).
pub const MAX_REPLY_BYTES: usize = 64 << 20;
/// A connection that has not sent its whole request line within this long gets an error and is closed.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client waits for its reply (a submission waits for the database's write lock, at most 10 s).
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections served at once; more are told the manager is busy.
pub const MAX_CONNECTIONS: usize = 32;

/// Fields a request may not carry: who asks is the connection's peer.
const IDENTITY_FIELDS: [&str; 5] = ["uid", "gid", "groups", "user", "as_root"];

/// What a user asks to run: a [`Submission`] without who they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmitRequest {
    pub name: String,
    pub procs: u32,
    /// The job's own MPL; `None`: the manager's.
    pub mpl: Option<u32>,
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
}

impl SubmitRequest {
    /// The submission, as `who`: the request's environment with `who`'s own variables (`HOME`, `USER`,
    /// `LOGNAME`) in place of the request's, sorted. The one way both paths (the database directly and the
    /// socket) make a submission.
    pub fn submission(self, who: &Identity) -> Submission {
        let mut env: Vec<(String, String)> = self
            .env
            .into_iter()
            .filter(|(k, _)| !who.env.iter().any(|(w, _)| w == k))
            .chain(who.env.iter().cloned())
            .collect();
        env.sort();
        Submission {
            name: self.name,
            procs: self.procs,
            mpl: self.mpl,
            argv: self.argv,
            cwd: self.cwd,
            env,
            uid: who.uid,
            gid: who.gid,
            groups: who.groups.clone(),
        }
    }
}

/// A request line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    Submit(SubmitRequest),
    Cancel { id: i64 },
    Queue,
}

/// A job as listed: without its environment (it may hold secrets, and `queue` is anyone's), with its history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    pub job: Job,
    pub history: Vec<Event>,
}

/// Every job, in id order, as [`Listed`]: what `cosched queue` shows on either path.
pub fn listing(db: &Db) -> Result<Vec<Listed>> {
    db.jobs(None)?
        .into_iter()
        .map(|mut job| {
            job.env.clear();
            let history = db.events(job.id)?;
            Ok(Listed { job, history })
        })
        .collect()
}

/// A reply line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum Reply {
    /// Queued (committed) as job `id`, to run as `uid`.
    Submitted {
        id: i64,
        uid: u32,
    },
    /// `now`: it was queued and will never run; otherwise it runs and is killed at the next quantum.
    Cancelled {
        id: i64,
        now: bool,
    },
    Queue {
        jobs: Vec<Listed>,
    },
    Error {
        message: String,
    },
}

fn required<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str) -> Result<T, String> {
    let v = obj
        .get(name)
        .ok_or_else(|| format!("field `{name}` is missing"))?;
    serde_json::from_value(v.clone()).map_err(|e| format!("field `{name}`: {e}"))
}

fn optional<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    name: &str,
) -> Result<Option<T>, String> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("field `{name}`: {e}")),
    }
}

/// One request line (without its newline), or what is wrong with it, naming the field. Field by field, so
/// that every error names the field it is about; a field the operation does not have is refused, and one that
/// would say who the requester is gets its own reason.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    let text =
        std::str::from_utf8(line).map_err(|_| "the request is not UTF-8 text".to_string())?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the request is not JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("the request must be a JSON object with an `op` field".into());
    };
    let op: String = required(&obj, "op")?;
    let fields: &[&str] = match op.as_str() {
        "submit" => &["op", "name", "procs", "mpl", "argv", "cwd", "env"],
        "cancel" => &["op", "id"],
        "queue" => &["op"],
        other => {
            return Err(format!(
                "field `op`: unknown operation {other:?} (submit, cancel or queue)"
            ))
        }
    };
    if let Some(k) = obj.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(if IDENTITY_FIELDS.contains(&k.as_str()) {
            format!(
                "field `{k}`: who asks is taken from the connection (SO_PEERCRED), never from the request"
            )
        } else {
            format!(
                "field `{k}`: a {op} request has no such field (its fields: {})",
                fields.join(", ")
            )
        });
    }
    Ok(match op.as_str() {
        "submit" => Request::Submit(SubmitRequest {
            name: required(&obj, "name")?,
            procs: required(&obj, "procs")?,
            mpl: optional(&obj, "mpl")?,
            argv: required(&obj, "argv")?,
            cwd: required(&obj, "cwd")?,
            env: optional(&obj, "env")?.unwrap_or_default(),
        }),
        "cancel" => Request::Cancel {
            id: required(&obj, "id")?,
        },
        _ => Request::Queue,
    })
}

/// What the serving side needs to know: the queue, and the machine and MPL that validate a submission.
#[derive(Clone, Debug)]
pub struct Serve {
    pub db: PathBuf,
    /// The CPUs the manager shares out.
    pub cpus: u32,
    /// The MPL of a job submitted without one.
    pub mpl: u32,
    /// How long a connection may take to send its request line.
    pub read_timeout: Duration,
}

impl Serve {
    /// Carries out one request from `peer`. Errors become [`Reply::Error`].
    pub fn answer(&self, request: Request, peer: Peer) -> Result<Reply> {
        match request {
            Request::Submit(s) => {
                let submission = s.submission(&Identity::of_user(peer.uid, peer.gid));
                submission.validate(self.cpus, self.mpl)?;
                // Acknowledged only after the commit: `submit` returns once its transaction is.
                let id = Db::open(&self.db)?.submit(&submission)?;
                Ok(Reply::Submitted { id, uid: peer.uid })
            }
            Request::Cancel { id } => {
                let now = Db::open(&self.db)?.cancel(id, peer.uid)? == Cancelled::Now;
                Ok(Reply::Cancelled { id, now })
            }
            Request::Queue => Ok(Reply::Queue {
                jobs: listing(&Db::open(&self.db)?)?,
            }),
        }
    }

    /// Serves one connection: who is at the other end (from the kernel), its request line (capped, within
    /// the read timeout), the answer, the reply line.
    pub fn connection(&self, stream: UnixStream) {
        let mut too_long = false;
        let reply = match Peer::of(&stream) {
            Err(e) => Reply::Error {
                message: format!("cannot tell who connected (SO_PEERCRED): {e}"),
            },
            Ok(peer) => {
                let _ = stream.set_read_timeout(Some(self.read_timeout));
                match cosched_localsock::read_line_capped(&stream, MAX_REQUEST_BYTES) {
                    Err(e) => Reply::Error {
                        message: {
                            too_long = matches!(e, cosched_localsock::LineError::TooLong { .. });
                            format!("no request: {e}")
                        },
                    },
                    Ok(line) => match parse_request(&line) {
                        Err(m) => Reply::Error {
                            message: format!("bad request: {m}"),
                        },
                        Ok(request) => {
                            self.answer(request, peer).unwrap_or_else(|e| Reply::Error {
                                message: format!("{e:#}"),
                            })
                        }
                    },
                }
            }
        };
        let _ = write_line(&stream, &reply);
        if too_long {
            // Closing with the rest of the request unread would reset the connection, and the client would
            // lose the reply: read and drop what it still sends, for at most the read timeout.
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let until = std::time::Instant::now() + self.read_timeout;
            let mut buf = [0u8; 64 * 1024];
            while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
                if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                    break;
                }
                match (&stream).read(&mut buf) {
                    Ok(n) if n > 0 => continue,
                    _ => break,
                }
            }
        }
    }

    /// Accepts connections for ever, each served on its own thread (at most [`MAX_CONNECTIONS`] at once: a
    /// slow or silent client holds only its own thread, for at most the read timeout).
    pub fn run(self, listener: UnixListener) {
        let serve = Arc::new(self);
        let busy = Arc::new(AtomicUsize::new(0));
        for stream in listener.incoming() {
            let Ok(stream) = stream else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                busy.fetch_sub(1, Ordering::SeqCst);
                let _ = write_line(
                    &stream,
                    &Reply::Error {
                        message: format!(
                            "the manager serves {MAX_CONNECTIONS} connections already; try again"
                        ),
                    },
                );
                continue;
            }
            let (serve, done) = (Arc::clone(&serve), Arc::clone(&busy));
            let spawned = std::thread::Builder::new()
                .name("submit-socket".into())
                .spawn(move || {
                    serve.connection(stream);
                    done.fetch_sub(1, Ordering::SeqCst);
                });
            if spawned.is_err() {
                busy.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// Listens at `path` for the manager (any local user may connect).
pub fn bind(path: &Path) -> Result<UnixListener> {
    cosched_localsock::bind_public(path, "manager", "--socket")
}

/// Writes one JSON line (a reply that the client stopped reading gives up after [`READ_TIMEOUT`]).
fn write_line(stream: &UnixStream, value: &impl Serialize) -> Result<()> {
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut out = serde_json::to_string(value)?;
    out.push('\n');
    let mut s = stream;
    s.write_all(out.as_bytes())?;
    Ok(())
}

/// The client: sends `request` to the manager at `path` and reads its reply. A reply that is an error comes
/// back as `Err` with the manager's message.
pub fn call(path: &Path, request: &Request) -> Result<Reply> {
    let size = serde_json::to_vec(request)?.len();
    if size > MAX_REQUEST_BYTES {
        anyhow::bail!(
            "the request is {size} bytes, more than the {MAX_REQUEST_BYTES} the manager reads (a submission \
             carries its command and this environment: unset large variables)"
        );
    }
    let stream = UnixStream::connect(path).with_context(|| {
        format!(
            "no cosched manager answers at {} (start one with `sudo cosched manager`, or pass --socket)",
            path.display()
        )
    })?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    write_line(&stream, request)
        .with_context(|| format!("sending the request to {}", path.display()))?;
    let line = cosched_localsock::read_line_capped(&stream, MAX_REPLY_BYTES).map_err(|e| {
        let maybe = if matches!(request, Request::Submit(_)) {
            "; the job may have been queued all the same: `cosched queue` shows"
        } else {
            ""
        };
        anyhow::anyhow!(
            "no reply from the manager at {}: {e}{maybe}",
            path.display()
        )
    })?;
    match serde_json::from_slice(&line)
        .with_context(|| format!("the reply from {} is not one of a manager", path.display()))?
    {
        Reply::Error { message } => Err(anyhow::anyhow!("{message}")),
        reply => Ok(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::JobState;

    fn me() -> (u32, u32) {
        (
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    }

    fn request(procs: u32, mpl: Option<u32>) -> SubmitRequest {
        SubmitRequest {
            name: "t".into(),
            procs,
            mpl,
            argv: vec!["true".into()],
            cwd: "/tmp".into(),
            env: vec![
                ("PATH".into(), "/bin".into()),
                ("USER".into(), "mallory".into()),
            ],
        }
    }

    fn serve(dir: &Path) -> Serve {
        Serve {
            db: dir.join("q.db"),
            cpus: 2,
            mpl: 4,
            read_timeout: Duration::from_millis(200),
        }
    }

    /// Sends `bytes` over a socketpair (whose peer credentials are this process's) and returns the reply.
    fn exchange(serve: &Serve, bytes: &[u8]) -> Reply {
        let (server, mut client) = UnixStream::pair().unwrap();
        let s = serve.clone();
        let t = std::thread::spawn(move || s.connection(server));
        client.write_all(bytes).unwrap();
        let mut out = String::new();
        client.read_to_string(&mut out).unwrap();
        t.join().unwrap();
        serde_json::from_str(out.trim_end()).unwrap()
    }

    fn line(r: &Request) -> Vec<u8> {
        let mut v = serde_json::to_vec(r).unwrap();
        v.push(b'\n');
        v
    }

    fn error(reply: Reply) -> String {
        match reply {
            Reply::Error { message } => message,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn requests_round_trip_through_their_json_line() {
        for r in [
            Request::Submit(request(3, Some(2))),
            Request::Submit(request(1, None)),
            Request::Cancel { id: 42 },
            Request::Queue,
        ] {
            let text = serde_json::to_vec(&r).unwrap();
            assert_eq!(
                parse_request(&text).unwrap(),
                r,
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
        let reply = Reply::Submitted { id: 7, uid: 1000 };
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(text, r#"{"reply":"submitted","id":7,"uid":1000}"#);
        assert_eq!(serde_json::from_str::<Reply>(&text).unwrap(), reply);
    }

    #[test]
    fn a_malformed_request_is_refused_naming_the_field() {
        for (text, says) in [
            (
                r#"{"op":"submit","name":"a","procs":"x","argv":["true"],"cwd":"/"}"#,
                "field `procs`",
            ),
            (
                r#"{"op":"submit","name":"a","argv":["true"],"cwd":"/"}"#,
                "field `procs` is missing",
            ),
            (
                r#"{"op":"submit","name":"a","procs":1,"argv":"true","cwd":"/"}"#,
                "field `argv`",
            ),
            (
                r#"{"op":"submit","name":"a","procs":1,"mpl":-1,"argv":["t"],"cwd":"/"}"#,
                "field `mpl`",
            ),
            (
                r#"{"op":"submit","name":"a","procs":1,"argv":["t"],"cwd":"/","env":{"A":1}}"#,
                "field `env`",
            ),
            (
                r#"{"op":"submit","name":"a","procs":1,"argv":["t"],"cwd":"/","colour":1}"#,
                "field `colour`",
            ),
            (r#"{"op":"cancel","id":"7"}"#, "field `id`"),
            (r#"{"op":"cancel"}"#, "field `id` is missing"),
            (r#"{"op":"reboot"}"#, "field `op`: unknown operation"),
            (r#"{"id":3}"#, "field `op` is missing"),
            (r#"[1,2]"#, "JSON object"),
            (r#"{"op":"#, "not JSON"),
        ] {
            let err = parse_request(text.as_bytes()).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        assert!(parse_request(b"\xff\xfe").unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn who_submits_comes_from_the_connection_never_from_the_request() {
        // A request that says who it is, is refused, naming the field.
        for field in ["uid", "gid", "groups", "user"] {
            let text = format!(
                r#"{{"op":"submit","name":"a","procs":1,"argv":["t"],"cwd":"/","{field}":0}}"#
            );
            let err = parse_request(text.as_bytes()).unwrap_err();
            assert!(
                err.contains(&format!("field `{field}`")) && err.contains("SO_PEERCRED"),
                "{err}"
            );
        }
        // Over a socketpair the peer is this process: the job is recorded as ours, with our passwd entry's
        // USER in place of the one the request carried.
        let dir = tempfile::tempdir().unwrap();
        let s = serve(dir.path());
        let reply = exchange(&s, &line(&Request::Submit(request(1, Some(2)))));
        let (uid, gid) = me();
        let Reply::Submitted { id, uid: as_uid } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(as_uid, uid);
        let job = Db::open(&s.db).unwrap().job(id).unwrap().unwrap();
        assert_eq!((job.uid, job.gid, job.state), (uid, gid, JobState::Queued));
        let expected = Identity::of_user(uid, gid);
        assert_eq!(job.groups, expected.groups);
        let user = job
            .env
            .iter()
            .find(|(k, _)| k == "USER")
            .map(|(_, v)| v.clone());
        match expected.env.iter().find(|(k, _)| k == "USER") {
            Some((_, name)) => assert_eq!(user.as_ref(), Some(name)),
            None => assert_eq!(user.as_deref(), Some("mallory")), // no passwd entry: the request's own
        }
        assert!(job.env.contains(&("PATH".into(), "/bin".into())));
    }

    #[test]
    fn the_direct_paths_errors_come_back_through_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let s = serve(dir.path());
        // 2 CPUs: 5 processes at MPL 2 need 3.
        let err = error(exchange(&s, &line(&Request::Submit(request(5, Some(2))))));
        assert!(err.contains("needs 3 CPUs at MPL 2"), "{err}");
        let err = error(exchange(&s, &line(&Request::Submit(request(1, Some(0))))));
        assert!(err.contains("MPL 0"), "{err}");
        let err = error(exchange(
            &s,
            &line(&Request::Submit(request(1, Some(1000)))),
        ));
        assert!(err.contains("above 64"), "{err}");
        let err = error(exchange(&s, &line(&Request::Cancel { id: 42 })));
        assert!(err.contains("no job 42"), "{err}");
        let mut relative = request(1, None);
        relative.cwd = "here".into();
        let err = error(exchange(&s, &line(&Request::Submit(relative))));
        assert!(err.contains("absolute"), "{err}");
        // Nothing was written by any of them.
        let jobs = Db::open(&s.db).unwrap().jobs(None).unwrap();
        assert!(jobs.is_empty(), "{jobs:?}");
        // A malformed line gets the field's name.
        let err = error(exchange(&s, b"{\"op\":\"cancel\",\"id\":\"x\"}\n"));
        assert!(err.starts_with("bad request: field `id`"), "{err}");
    }

    #[test]
    fn another_users_job_is_not_yours_to_cancel_but_your_own_is() {
        let dir = tempfile::tempdir().unwrap();
        let s = serve(dir.path());
        let (uid, gid) = me();
        let mut db = Db::open(&s.db).unwrap();
        let theirs = db
            .submit(&request(1, None).submission(&Identity::of_user(uid + 1, gid)))
            .unwrap();
        let mine = db
            .submit(&request(1, None).submission(&Identity::of_user(uid, gid)))
            .unwrap();
        let reply = exchange(&s, &line(&Request::Cancel { id: theirs }));
        if uid == 0 {
            // Root may cancel anyone's job.
            assert_eq!(
                reply,
                Reply::Cancelled {
                    id: theirs,
                    now: true
                }
            );
        } else {
            let err = error(reply);
            assert!(err.contains("not yours"), "{err}");
            assert_eq!(db.job(theirs).unwrap().unwrap().state, JobState::Queued);
        }
        // Whoever runs this test, a peer that is neither the owner nor root is refused; the owner is not.
        let stranger = Peer {
            pid: 1,
            uid: uid + 2,
            gid,
        };
        let err = s
            .answer(Request::Cancel { id: mine }, stranger)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not yours") && err.contains(&format!("you are uid {}", uid + 2)),
            "{err}"
        );
        assert_eq!(db.job(mine).unwrap().unwrap().state, JobState::Queued);
        assert_eq!(
            exchange(&s, &line(&Request::Cancel { id: mine })),
            Reply::Cancelled {
                id: mine,
                now: true
            }
        );
        // The listing shows both, without their environment, with their history.
        let Reply::Queue { jobs } = exchange(&s, &line(&Request::Queue)) else {
            panic!()
        };
        assert_eq!(jobs.len(), 2);
        assert!(jobs.iter().all(|l| l.job.env.is_empty()));
        assert_eq!(jobs[1].job.state, JobState::Cancelled);
        assert_eq!(jobs[1].history.len(), 2);
    }

    #[test]
    fn a_request_too_long_or_too_slow_gets_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let s = serve(dir.path());
        let (server, client) = UnixStream::pair().unwrap();
        let t = {
            let s = s.clone();
            std::thread::spawn(move || s.connection(server))
        };
        // More than the cap and no newline: the manager stops reading at the cap and answers.
        let mut writer = client.try_clone().unwrap();
        let w = std::thread::spawn(move || {
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..(MAX_REQUEST_BYTES / chunk.len() + 2) {
                if writer.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        let mut out = String::new();
        (&client).read_to_string(&mut out).unwrap();
        t.join().unwrap();
        drop(client);
        w.join().unwrap();
        let err = error(serde_json::from_str(out.trim_end()).unwrap());
        assert!(
            err.contains(&format!("longer than {MAX_REQUEST_BYTES} bytes")),
            "{err}"
        );
        // Half a line, then silence: an error after the read timeout.
        let t0 = std::time::Instant::now();
        let err = error(exchange(&s, b"{\"op\":"));
        // (exchange's client keeps its end open while it reads: the timeout ends it)
        assert!(err.contains("in time"), "{err}");
        assert!(t0.elapsed() >= s.read_timeout);
    }

    #[test]
    fn the_client_and_the_server_over_a_socket_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manager.sock");
        let listener = bind(&path).unwrap();
        let s = serve(dir.path());
        std::thread::spawn(move || s.run(listener));
        let Reply::Submitted { id, .. } =
            call(&path, &Request::Submit(request(2, Some(2)))).unwrap()
        else {
            panic!()
        };
        assert_eq!(id, 1);
        let err = call(&path, &Request::Cancel { id: 5 })
            .unwrap_err()
            .to_string();
        assert!(err.contains("no job 5"), "{err}");
        let err = bind(&path).unwrap_err().to_string();
        assert!(err.contains("another manager already answers"), "{err}");
        let missing = dir.path().join("none.sock");
        let err = call(&missing, &Request::Queue).unwrap_err().to_string();
        assert!(err.contains("no cosched manager answers"), "{err}");
    }
}
