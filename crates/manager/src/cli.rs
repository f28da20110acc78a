//! `cosched submit`, `cosched queue`, `cosched cancel` and `cosched manager`: their arguments and what they
//! do. The first three take one of two paths ([`route`]): root (and anyone who can write the database) writes
//! it directly, each change in one transaction; a user who cannot goes through the manager's submit socket
//! ([`crate::socket`]), which does the same writes as them. The manager polls the database every quantum.
//!
//! Who a job runs as: on the direct path, the user running `cosched submit` (`getuid`, `getgid`, `getgroups`);
//! under `sudo`, the user who invoked sudo (`SUDO_UID`, `SUDO_GID`, that user's groups, and their `HOME` /
//! `USER` / `LOGNAME`), unless `--as-root`. Through the socket, the peer the kernel names (`SO_PEERCRED`), with
//! that user's groups and `HOME` / `USER` / `LOGNAME`. Writing the database is the trust boundary: whoever can
//! write it can queue a job as any uid, so it belongs to root (mode 0600); users reach it through the socket.

use crate::daemon::{self, Config, DEFAULT_DB, DEFAULT_QUANTUM_MS};
use crate::db::{Cancelled, Db, Job, JobState, Submission};
use crate::socket::{self, Listed, Reply, Request, SubmitRequest};
use anyhow::{bail, Context, Result};
use clap::Args;
use cosched_localsock::Identity;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// `cosched submit`.
#[derive(Args, Debug, Clone)]
pub struct SubmitArgs {
    /// The job's number of processes (ranks): its partition starts at ceil(procs / MPL) CPUs and never
    /// grows past one CPU per process.
    #[arg(long)]
    pub procs: u32,
    /// The job's multiprogramming level (most of its processes per CPU); default: the manager's.
    #[arg(long)]
    pub mpl: Option<u32>,
    /// A name shown by `cosched queue` (default: the command's name).
    #[arg(long)]
    pub name: Option<String>,
    /// The queue's database.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The manager's submit socket, used when this process cannot write the database (default:
    /// /run/cosched/manager.sock for the default database; none for another one).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Under sudo, run the job as root rather than as the user who invoked sudo.
    #[arg(long)]
    pub as_root: bool,
    /// The command, started once with COSCHED_SCS_PROCS / COSCHED_SCS_CPUS / COSCHED_SCS_JOB /
    /// COSCHED_SCS_CGROUP set (e.g. `mpirun -n 4 ./app`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

/// `cosched queue`.
#[derive(Args, Debug, Clone)]
pub struct QueueArgs {
    /// The queue's database.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The manager's submit socket, used when this process cannot write the database (default:
    /// /run/cosched/manager.sock for the default database; none for another one).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// One JSON object per job (with its history) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `cosched cancel`.
#[derive(Args, Debug, Clone)]
pub struct CancelArgs {
    /// The job's id (`cosched queue` lists them).
    pub id: String,
    /// The queue's database.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The manager's submit socket, used when this process cannot write the database (default:
    /// /run/cosched/manager.sock for the default database; none for another one).
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

/// `cosched manager`.
#[derive(Args, Debug, Clone)]
pub struct ManagerArgs {
    /// The default multiprogramming level: a job of P processes starts on ceil(P / MPL) CPUs (the seed uses
    /// 2, 4 and 6).
    #[arg(long, default_value_t = cosched_policy::scs::DEFAULT_MPL)]
    pub mpl: u32,
    /// The CPU manager quantum: how often it looks for arrivals and ends and re-partitions.
    #[arg(long, default_value_t = DEFAULT_QUANTUM_MS)]
    pub quantum_ms: u64,
    /// The queue's database (logs and start markers go beside it: `<stem>-logs/`, `<stem>-started/`).
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The submit socket (mode 0666) through which users who cannot write the database submit, list and
    /// cancel jobs (default: /run/cosched/manager.sock for the default database; none for another one).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// The parent cgroup of the partitions, under the cpuset hierarchy's root.
    #[arg(long, default_value = crate::cgroup::DEFAULT_PARENT)]
    pub cgroup_parent: String,
    /// Remove what stopped managers left (empty job cgroups of ended jobs, the parent cgroup, stale markers)
    /// and exit.
    #[arg(long)]
    pub cleanup: bool,
    /// Leave a job's processes free to move within its partition, instead of pinning rank r (from
    /// OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or `--rank r`) to the partition's CPU floor(r · A / P).
    #[arg(long)]
    pub no_pin_ranks: bool,
    /// Who runs next on a partition's CPU when its rank blocks (seed 001's in-CPU rule): `fair` (the kernel's
    /// fair scheduler time-slices the ranks), `rr` (strict round robin: the ranks at one SCHED_FIFO priority,
    /// each runs until it blocks), `msg` (`rr`, and the rank with the most unread bytes on its sockets first).
    #[arg(long, value_enum, default_value_t = crate::incpu::Rule::Fair)]
    pub in_cpu: crate::incpu::Rule,
    /// How often `msg` looks at the ranks' unread bytes, microseconds (the watchdog of `rr` and `msg` looks every
    /// tenth of --in-cpu-max-run-ms).
    #[arg(long, default_value_t = 1000)]
    pub in_cpu_tick_us: u64,
    /// Under `rr` and `msg`, a rank that runs this long without blocking sends its job back to the fair
    /// scheduler (it would hold its CPU at real-time priority), milliseconds.
    #[arg(long, default_value_t = 50)]
    pub in_cpu_max_run_ms: u64,
}

/// Who a job submitted directly runs as: the caller, or under sudo the user who invoked it.
fn identity(as_root: bool) -> Result<Identity> {
    use nix::unistd::{getgid, getgroups, getuid, Gid};
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if getuid().is_root() && !as_root {
        if let Some(uid) = var("SUDO_UID") {
            let number = |name: &str, text: &str| -> Result<u32> {
                text.trim().parse().map_err(|_| {
                    anyhow::anyhow!("{name}={text:?} is not a number; unset it, or pass --as-root")
                })
            };
            let uid = number("SUDO_UID", &uid)?;
            if uid != 0 {
                let gid = match var("SUDO_GID") {
                    Some(g) => number("SUDO_GID", &g)?,
                    None => {
                        bail!("SUDO_UID is set but SUDO_GID is not; pass --as-root to run as root")
                    }
                };
                return Ok(Identity::of_user(uid, gid));
            }
        }
    }
    Ok(Identity {
        uid: getuid().as_raw(),
        gid: getgid().as_raw(),
        groups: getgroups()
            .context("reading this process's groups")?
            .into_iter()
            .map(Gid::as_raw)
            .collect(),
        env: Vec::new(),
    })
}

/// The socket of the manager of `db`: `--socket` when given; [`socket::DEFAULT_SOCKET`] for the default database;
/// none for another database without `--socket` (such a manager listens nowhere, so that managers of
/// different databases — a test's, the lab's — never contend for one path).
pub fn socket_for(db: &Path, socket: Option<&Path>) -> Option<PathBuf> {
    match socket {
        Some(s) => Some(s.to_path_buf()),
        None if db == Path::new(DEFAULT_DB) => Some(PathBuf::from(socket::DEFAULT_SOCKET)),
        None => None,
    }
}

/// How a client reaches the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Writes (or reads) the database itself.
    Direct,
    /// Asks the manager listening here.
    Socket(PathBuf),
}

/// Whether this process can write the database at `db` (and the directory beside it, for SQLite's journal),
/// or create it. By the real uid, as the kernel checks `access`.
fn db_writable(db: &Path) -> bool {
    use nix::unistd::{access, AccessFlags};
    let dir = db
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if db.exists() {
        return access(db, AccessFlags::R_OK | AccessFlags::W_OK).is_ok()
            && access(dir, AccessFlags::W_OK).is_ok();
    }
    // Not there yet: the nearest directory that exists must let us make the rest.
    dir.ancestors()
        .find(|d| d.exists())
        .is_some_and(|d| access(d, AccessFlags::W_OK | AccessFlags::X_OK).is_ok())
}

/// The path a client takes: root with a writable database writes it directly; anyone else (or root on a
/// database it cannot write) asks the manager's socket when there is one ([`socket_for`]); a user with
/// no socket named but a database of their own writes that directly (its jobs can only be theirs).
pub fn route(db: &Path, socket_flag: Option<&Path>) -> Result<Route> {
    let writable = db_writable(db);
    if nix::unistd::geteuid().is_root() && writable {
        return Ok(Route::Direct);
    }
    match socket_for(db, socket_flag) {
        Some(path) => Ok(Route::Socket(path)),
        None if writable => Ok(Route::Direct),
        None => bail!(
            "cannot write the queue's database {}, and no manager socket is named for it: pass --socket with \
             the one its manager listens on (or run as root)",
            db.display()
        ),
    }
}

/// The CPUs a job can have: the cpuset root's, or the online CPUs where there is no cpuset hierarchy.
fn machine_cpus() -> u32 {
    crate::cgroup::Hierarchy::detect()
        .and_then(|h| h.machine_cpus())
        .map(|c| c.len() as u32)
        .unwrap_or_else(|_| {
            std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1)
        })
}

/// Opens the database for a client, making its directory the first time (mode 0755: the database itself is
/// 0600, and each job's log in it belongs to the job's user).
fn open_db(path: &Path) -> Result<Db> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .with_context(|| {
                    format!(
                        "creating {} for the job queue (run as root, or through sudo)",
                        dir.display()
                    )
                })?;
        }
    }
    Db::open(path)
}

/// The request `args` makes, from the current directory and environment (who asks is not in it).
pub fn request(args: &SubmitArgs) -> Result<SubmitRequest> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    Ok(SubmitRequest {
        name: args.name.clone().unwrap_or_else(|| {
            Path::new(&args.command[0])
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        procs: args.procs,
        mpl: args.mpl,
        argv: args.command.clone(),
        cwd: cwd
            .to_str()
            .context("the current directory's path is not UTF-8")?
            .to_string(),
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
    })
}

/// The submission `args` asks for, as the calling user (under sudo, the invoking user), on the direct path.
pub fn submission(args: &SubmitArgs) -> Result<Submission> {
    Ok(request(args)?.submission(&identity(args.as_root)?))
}

/// `cosched submit`: validates, queues, prints the job id.
pub fn submit(args: SubmitArgs) -> Result<()> {
    if let Route::Socket(path) = route(&args.db, args.socket.as_deref())? {
        if args.as_root && !nix::unistd::geteuid().is_root() {
            bail!("--as-root: only root runs a job as root (through sudo)");
        }
        match socket::call(&path, &Request::Submit(request(&args)?))? {
            Reply::Submitted { id, .. } => println!("{id}"),
            other => bail!("unexpected reply to a submission: {other:?}"),
        }
        return Ok(());
    }
    let s = submission(&args)?;
    let mut db = open_db(&args.db)?;
    let default_mpl = db
        .meta("mpl")?
        .and_then(|m| m.parse().ok())
        .unwrap_or(cosched_policy::scs::DEFAULT_MPL);
    s.validate(machine_cpus(), default_mpl)?;
    let id = db.submit(&s)?;
    println!("{id}");
    if !daemon::manager_running(&args.db) {
        eprintln!(
            "note: no manager runs on {}; job {id} waits until `cosched manager --db {}` starts",
            args.db.display(),
            args.db.display()
        );
    }
    Ok(())
}

/// `cosched cancel`.
pub fn cancel(args: CancelArgs) -> Result<()> {
    let id: i64 = args
        .id
        .trim()
        .parse()
        .ok()
        .filter(|&i: &i64| i > 0)
        .with_context(|| {
            format!(
                "`{}` is not a job id (a positive number; `cosched queue` lists them)",
                args.id
            )
        })?;
    let outcome = match route(&args.db, args.socket.as_deref())? {
        Route::Socket(path) => match socket::call(&path, &Request::Cancel { id })? {
            Reply::Cancelled { now: true, .. } => Cancelled::Now,
            Reply::Cancelled { now: false, .. } => Cancelled::Requested,
            other => bail!("unexpected reply to a cancel: {other:?}"),
        },
        Route::Direct => {
            if !args.db.exists() {
                bail!(
                    "no job {id}: there is no queue at {} (nothing was ever submitted there)",
                    args.db.display()
                );
            }
            let mut db = Db::open(&args.db)?;
            let who = identity(false)?;
            db.cancel(id, who.uid)?
        }
    };
    match outcome {
        Cancelled::Now => println!("job {id} cancelled (it had not started)"),
        Cancelled::Requested => println!(
            "job {id} runs: its processes are killed at the manager's next quantum and it is recorded cancelled"
        ),
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time.
pub fn utc(t: f64) -> String {
    chrono::DateTime::from_timestamp(t.floor() as i64, 0)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

fn exit_text(job: &Job) -> String {
    match (job.state, job.exit_code, job.signal) {
        (_, Some(c), _) => c.to_string(),
        (_, None, Some(s)) => format!("sig {s}"),
        (s, None, None) if s.is_final() && job.started_at.is_some() => "?".into(),
        _ => "-".into(),
    }
}

/// The table `cosched queue` prints.
pub fn render_queue(jobs: &[Job]) -> String {
    let mut rows = vec![[
        "ID",
        "STATE",
        "NAME",
        "UID",
        "PROCS",
        "CPUS",
        "SUBMITTED (UTC)",
        "WAITED",
        "RAN",
        "EXIT",
        "NOTE",
    ]
    .map(String::from)
    .to_vec()];
    let now = crate::db::now();
    for j in jobs {
        let waited = j.started_at.or(j.ended_at).unwrap_or(now) - j.submitted_at;
        let ran = j
            .started_at
            .map(|s| format!("{:.1}s", j.ended_at.unwrap_or(now) - s))
            .unwrap_or_else(|| "-".into());
        rows.push(vec![
            j.id.to_string(),
            j.state.as_str().to_string()
                + if j.cancel_requested && j.state == JobState::Running {
                    "*"
                } else {
                    ""
                },
            j.name.clone(),
            j.uid.to_string(),
            j.procs.to_string(),
            if j.state == JobState::Running {
                j.cpus.clone().unwrap_or_else(|| "-".into())
            } else {
                "-".into()
            },
            utc(j.submitted_at),
            format!("{waited:.1}s"),
            ran,
            exit_text(j),
            match j.state {
                JobState::Failed | JobState::Cancelled => j.note.clone().unwrap_or_default(),
                _ => String::new(),
            },
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if jobs
        .iter()
        .any(|j| j.cancel_requested && j.state == JobState::Running)
    {
        out.push_str("* cancel requested: its processes are being killed\n");
    }
    out
}

/// `cosched queue`.
pub fn queue(args: QueueArgs) -> Result<()> {
    let (jobs, through_socket) = match route(&args.db, args.socket.as_deref())? {
        Route::Socket(path) => match socket::call(&path, &Request::Queue)? {
            Reply::Queue { jobs } => (jobs, true),
            other => bail!("unexpected reply to a queue request: {other:?}"),
        },
        Route::Direct => {
            if !args.db.exists() {
                println!(
                    "no queue at {} (nothing was ever submitted there)",
                    args.db.display()
                );
                return Ok(());
            }
            (socket::listing(&Db::open(&args.db)?)?, false)
        }
    };
    if args.json {
        for Listed { job: j, history } in &jobs {
            let history: Vec<serde_json::Value> = history
                .iter()
                .map(|e| serde_json::json!({"at": e.at, "state": e.state.as_str(), "detail": e.detail}))
                .collect();
            let v = serde_json::json!({
                "id": j.id, "name": j.name, "state": j.state.as_str(), "procs": j.procs, "mpl": j.mpl,
                "uid": j.uid, "gid": j.gid, "argv": j.argv, "cwd": j.cwd,
                "submitted_at": j.submitted_at, "started_at": j.started_at, "ended_at": j.ended_at,
                "initial": j.initial, "cgroup": j.cgroup, "cpus": j.cpus, "pid": j.pid,
                "exit_code": j.exit_code, "signal": j.signal, "cancel_requested": j.cancel_requested,
                "note": j.note, "history": history,
            });
            println!("{v}");
        }
    } else {
        let jobs: Vec<Job> = jobs.into_iter().map(|l| l.job).collect();
        print!("{}", render_queue(&jobs));
        if !through_socket
            && !daemon::manager_running(&args.db)
            && jobs.iter().any(|j| !j.state.is_final())
        {
            println!("(no manager runs on {})", args.db.display());
        }
    }
    Ok(())
}

/// `cosched manager`.
pub fn manager(args: ManagerArgs) -> Result<()> {
    let mut cfg = Config::new(args.db);
    cfg.mpl = args.mpl;
    cfg.quantum = Duration::from_millis(args.quantum_ms);
    cfg.parent = args.cgroup_parent;
    cfg.pin_ranks = !args.no_pin_ranks;
    cfg.in_cpu = crate::incpu::Settings {
        rule: args.in_cpu,
        tick: Duration::from_micros(args.in_cpu_tick_us),
        max_run: Duration::from_millis(args.in_cpu_max_run_ms),
    };
    cfg.socket = socket_for(&cfg.db, args.socket.as_deref());
    if args.cleanup {
        for line in daemon::cleanup(&cfg)? {
            println!("{line}");
        }
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "the manager makes cpuset cgroups and starts jobs as their submitters: run it as root"
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut stop_signals = nix::sys::signal::SigSet::empty();
    for signal in [nix::sys::signal::SIGTERM, nix::sys::signal::SIGINT] {
        signal_hook::flag::register(signal as i32, Arc::clone(&stop))
            .context("installing the SIGTERM / SIGINT handler")?;
        stop_signals.add(signal);
    }
    // A blocked signal never reaches its handler and the mask survives exec: a manager started by a harness
    // that blocks them could not be stopped. Threads started later inherit this thread's mask.
    stop_signals
        .thread_unblock()
        .context("unblocking SIGTERM / SIGINT")?;
    daemon::Manager::open(cfg)?.run(&stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400.5), "2000-02-29 00:00:00");
        assert_eq!(utc(1_795_000_000.0), "2026-11-18 11:06:40");
    }

    #[test]
    fn the_queue_table_shows_state_cpus_and_exit() {
        let job = Job {
            id: 7,
            name: "app".into(),
            procs: 4,
            mpl: Some(2),
            argv: vec!["app".into()],
            cwd: "/".into(),
            env: vec![],
            uid: 1000,
            gid: 1000,
            groups: vec![],
            state: JobState::Running,
            submitted_at: 100.0,
            started_at: Some(101.0),
            ended_at: None,
            initial: Some(2),
            cgroup: Some("cosched-scs-7".into()),
            cpus: Some("0-1".into()),
            pid: Some(5),
            exit_code: None,
            signal: None,
            cancel_requested: true,
            note: None,
        };
        let mut done = job.clone();
        done.id = 8;
        done.state = JobState::Done;
        done.cancel_requested = false;
        done.ended_at = Some(104.5);
        let table = render_queue(&[job, done]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("ID  STATE"), "{table}");
        assert!(
            lines[1].contains("running*") && lines[1].contains("0-1"),
            "{table}"
        );
        assert!(
            lines[2].contains("done") && lines[2].contains("3.5s") && lines[2].ends_with('?'),
            "{table}"
        );
        assert!(table.contains("cancel requested"), "{table}");
    }

    #[test]
    fn only_the_default_database_has_a_default_socket() {
        let default = Path::new(DEFAULT_DB);
        assert_eq!(
            socket_for(default, None).unwrap(),
            Path::new(socket::DEFAULT_SOCKET)
        );
        assert_eq!(socket_for(Path::new("/tmp/q.db"), None), None);
        let s = Path::new("/tmp/m.sock");
        assert_eq!(socket_for(Path::new("/tmp/q.db"), Some(s)).unwrap(), s);
    }
}
