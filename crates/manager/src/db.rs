//! The queue and the manager's state in SQLite: every change of a job is one transaction that checks the
//! state it leaves (`UPDATE … WHERE state = <from>`) and appends the change to the job's history, so a process
//! killed at any moment leaves either the whole change or none of it.
//!
//! ```text
//! jobs(id, name, procs, mpl, argv JSON, cwd, env JSON, uid, gid, groups JSON,
//!      state ∈ {queued, running, done, failed, cancelled}, submitted_at, started_at, ended_at   (unix s),
//!      initial, cgroup, cpus, pid, exit_code, signal, cancel_requested, note)
//! events(id, job, at, state, detail)        one row per transition: the job's history
//! meta(key, value)                          schema version; the running manager's MPL and CPUs
//! ```
//!
//! The transitions ([`JobState::may_become`]): `queued → running | cancelled | failed` (failed: it can no
//! longer fit), `running → done | failed | cancelled`, and `running → queued` only when the recovery proves it
//! never started (`crate::daemon`).

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;

/// The schema's version, in `meta`.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT    NOT NULL,
    procs            INTEGER NOT NULL CHECK (procs > 0),
    mpl              INTEGER          CHECK (mpl IS NULL OR mpl > 0),
    argv             TEXT    NOT NULL,
    cwd              TEXT    NOT NULL,
    env              TEXT    NOT NULL,
    uid              INTEGER NOT NULL,
    gid              INTEGER NOT NULL,
    groups           TEXT    NOT NULL,
    state            TEXT    NOT NULL
                     CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    submitted_at     REAL    NOT NULL,
    started_at       REAL,
    ended_at         REAL,
    initial          INTEGER,
    cgroup           TEXT,
    cpus             TEXT,
    pid              INTEGER,
    exit_code        INTEGER,
    signal           INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    note             TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, id);
CREATE TABLE IF NOT EXISTS events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    job    INTEGER NOT NULL REFERENCES jobs (id),
    at     REAL    NOT NULL,
    state  TEXT    NOT NULL,
    detail TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events (job, id);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// A job's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Result<JobState> {
        JobState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .with_context(|| format!("`{text}` is not a job state"))
    }

    /// Done, failed or cancelled: nothing happens to the job any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }

    /// Whether a job may go from `self` to `to`.
    pub fn may_become(self, to: JobState) -> bool {
        use JobState::*;
        matches!(
            (self, to),
            (Queued, Running)
                | (Queued, Cancelled)
                | (Queued, Failed)
                | (Running, Done)
                | (Running, Failed)
                | (Running, Cancelled)
                | (Running, Queued)
        )
    }
}

/// What a user asks to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub name: String,
    pub procs: u32,
    /// The job's own MPL; `None`: the manager's.
    pub mpl: Option<u32>,
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Submission {
    /// Checks a request before anything is written: a command, no NUL byte in any string the job is started
    /// with, an absolute working directory, and an allocation that fits `cpus` at the job's MPL (or
    /// `default_mpl`) — the policy's own check (`cosched_policy::scs::initial_allocation`).
    pub fn validate(&self, cpus: u32, default_mpl: u32) -> Result<()> {
        if self.argv.is_empty() || self.argv[0].is_empty() {
            bail!("no command: give it after `--`, e.g. `cosched submit --procs 2 -- mpirun -n 2 ./app`");
        }
        let has_nul = |s: &str| s.contains('\0');
        if let Some(a) = self.argv.iter().find(|a| has_nul(a)) {
            bail!("the command's argument {a:?} holds a NUL byte, which no program can receive");
        }
        if let Some((k, _)) = self
            .env
            .iter()
            .find(|(k, v)| has_nul(k) || has_nul(v) || k.is_empty() || k.contains('='))
        {
            bail!("the environment variable {k:?} has an empty name, an `=` in its name or a NUL byte");
        }
        if has_nul(&self.cwd) || !self.cwd.starts_with('/') {
            bail!(
                "the working directory {:?} must be an absolute path without NUL bytes",
                self.cwd
            );
        }
        if has_nul(&self.name) {
            bail!("the job name {:?} holds a NUL byte", self.name);
        }
        let mpl = self.mpl.unwrap_or(default_mpl);
        cosched_policy::scs::initial_allocation(self.procs, mpl, cpus)
            .map_err(|e| anyhow::anyhow!("{e}; submit it with fewer --procs or a higher --mpl"))?;
        Ok(())
    }
}

/// How a job's main process ended, as far as the manager saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// It ended while the manager was not running: nobody could wait for it.
    Unknown,
}

/// A job as stored (and as the submit socket lists it, without its environment).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Job {
    pub id: i64,
    pub name: String,
    pub procs: u32,
    pub mpl: Option<u32>,
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub state: JobState,
    pub submitted_at: f64,
    pub started_at: Option<f64>,
    pub ended_at: Option<f64>,
    /// The CPUs it started with, `ceil(procs / mpl)`.
    pub initial: Option<u32>,
    pub cgroup: Option<String>,
    /// Its partition now (a kernel CPU list).
    pub cpus: Option<String>,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub cancel_requested: bool,
    pub note: Option<String>,
}

impl Job {
    /// The main process's end as recorded (`Unknown` while none is).
    pub fn exit(&self) -> Exit {
        match (self.exit_code, self.signal) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(s)) => Exit::Signal(s),
            _ => Exit::Unknown,
        }
    }
}

/// One transition in a job's history.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub at: f64,
    pub state: JobState,
    pub detail: String,
}

/// What `cancel` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// It was queued: cancelled now, it will never run.
    Now,
    /// It runs: the manager kills its processes at its next quantum and records it cancelled.
    Requested,
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The database.
pub struct Db {
    conn: Connection,
}

const JOB_COLUMNS: &str =
    "id, name, procs, mpl, argv, cwd, env, uid, gid, groups, state, submitted_at, \
     started_at, ended_at, initial, cgroup, cpus, pid, exit_code, signal, cancel_requested, note";

fn job_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(Job, String, String, String, String)> {
    let job = Job {
        id: row.get(0)?,
        name: row.get(1)?,
        procs: row.get(2)?,
        mpl: row.get(3)?,
        argv: Vec::new(),
        cwd: row.get(5)?,
        env: Vec::new(),
        uid: row.get(7)?,
        gid: row.get(8)?,
        groups: Vec::new(),
        state: JobState::Queued,
        submitted_at: row.get(11)?,
        started_at: row.get(12)?,
        ended_at: row.get(13)?,
        initial: row.get(14)?,
        cgroup: row.get(15)?,
        cpus: row.get(16)?,
        pid: row.get(17)?,
        exit_code: row.get(18)?,
        signal: row.get(19)?,
        cancel_requested: row.get::<_, i64>(20)? != 0,
        note: row.get(21)?,
    };
    Ok((job, row.get(4)?, row.get(6)?, row.get(9)?, row.get(10)?))
}

fn finish_job(parts: (Job, String, String, String, String)) -> Result<Job> {
    let (mut job, argv, env, groups, state) = parts;
    let bad = |what: &str| format!("job {}: its stored {what} is not valid JSON", job.id);
    job.argv = serde_json::from_str(&argv).with_context(|| bad("command"))?;
    job.env = serde_json::from_str(&env).with_context(|| bad("environment"))?;
    job.groups = serde_json::from_str(&groups).with_context(|| bad("groups"))?;
    job.state = JobState::parse(&state)?;
    Ok(job)
}

/// Appends a transition to a job's history (inside the caller's transaction).
fn event(tx: &Connection, job: i64, state: JobState, detail: &str) -> Result<()> {
    tx.execute(
        "INSERT INTO events (job, at, state, detail) VALUES (?1, ?2, ?3, ?4)",
        params![job, now(), state.as_str(), detail],
    )?;
    Ok(())
}

/// Moves job `id` from `from` to `to` (inside the caller's transaction); an error, and nothing written, when
/// the job is not in `from` any more or the transition is not allowed.
fn transition(tx: &Connection, id: i64, from: JobState, to: JobState, detail: &str) -> Result<()> {
    if !from.may_become(to) {
        bail!(
            "job {id}: {} → {} is not a transition a job can make",
            from.as_str(),
            to.as_str()
        );
    }
    let changed = tx.execute(
        "UPDATE jobs SET state = ?1 WHERE id = ?2 AND state = ?3",
        params![to.as_str(), id, from.as_str()],
    )?;
    if changed != 1 {
        bail!(
            "job {id} is no longer {} (another process changed it)",
            from.as_str()
        );
    }
    event(tx, id, to, detail)
}

impl Db {
    /// Opens (and creates, with its schema) the database at `path`. Writers wait up to 10 s for one another.
    pub fn open(path: &Path) -> Result<Db> {
        let new = !path.exists();
        let conn = Connection::open(path).with_context(|| {
            format!(
                "opening the job database {} (its directory must exist and be writable: run as root, or \
                 through sudo)",
                path.display()
            )
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Only a new database takes the write lock to create its schema: readers (`cosched queue`, the tests'
        // polls) must not queue behind the manager's writes.
        let has_schema: bool = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !has_schema {
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {SCHEMA} INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '{SCHEMA_VERSION}'); COMMIT;"
            ))
            .with_context(|| format!("creating the schema of {}", path.display()))?;
        }
        let version: String =
            conn.query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
                r.get(0)
            })?;
        if version != SCHEMA_VERSION.to_string() {
            bail!(
                "{} has schema version {version}; this cosched knows version {SCHEMA_VERSION}",
                path.display()
            );
        }
        if new {
            // The environment of every job is in it: its owner's only.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("making {} private", path.display()))?;
        }
        Ok(Db { conn })
    }

    fn write_tx(&mut self) -> Result<rusqlite::Transaction<'_>> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// A meta value.
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Sets meta values in one transaction.
    pub fn set_meta(&mut self, pairs: &[(&str, String)]) -> Result<()> {
        let tx = self.write_tx()?;
        for (k, v) in pairs {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![k, v],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Queues a job (one transaction: the row and its first history entry) and returns its id. The caller
    /// validates it first ([`Submission::validate`]).
    pub fn submit(&mut self, s: &Submission) -> Result<i64> {
        let tx = self.write_tx()?;
        tx.execute(
            "INSERT INTO jobs (name, procs, mpl, argv, cwd, env, uid, gid, groups, state, submitted_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'queued', ?10)",
            params![
                s.name,
                s.procs,
                s.mpl,
                serde_json::to_string(&s.argv)?,
                s.cwd,
                serde_json::to_string(&s.env)?,
                s.uid,
                s.gid,
                serde_json::to_string(&s.groups)?,
                now()
            ],
        )?;
        let id = tx.last_insert_rowid();
        event(
            &tx,
            id,
            JobState::Queued,
            &format!("submitted by uid {}", s.uid),
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// One job.
    pub fn job(&self, id: i64) -> Result<Option<Job>> {
        let parts = self
            .conn
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [id],
                job_from_row,
            )
            .optional()?;
        parts.map(finish_job).transpose()
    }

    /// Every job, or those in `state`, in id (= arrival) order.
    pub fn jobs(&self, state: Option<JobState>) -> Result<Vec<Job>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE ?1 IS NULL OR state = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([state.map(JobState::as_str)], job_from_row)?;
        rows.map(|r| finish_job(r?)).collect()
    }

    /// A job's history, oldest first.
    pub fn events(&self, id: i64) -> Result<Vec<Event>> {
        let mut stmt = self
            .conn
            .prepare("SELECT at, state, detail FROM events WHERE job = ?1 ORDER BY id")?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, f64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        rows.map(|r| {
            let (at, state, detail) = r?;
            Ok(Event {
                at,
                state: JobState::parse(&state)?,
                detail,
            })
        })
        .collect()
    }

    /// Cancels job `id` for user `requester` (root may cancel any job, a user only their own): a queued job
    /// at once, a running one by flagging it for the manager.
    pub fn cancel(&mut self, id: i64, requester: u32) -> Result<Cancelled> {
        let tx = self.write_tx()?;
        let row: Option<(String, u32, i64)> = tx
            .query_row(
                "SELECT state, uid, cancel_requested FROM jobs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((state, owner, requested)) = row else {
            let last: Option<i64> = tx.query_row("SELECT max(id) FROM jobs", [], |r| r.get(0))?;
            match last {
                Some(last) => bail!(
                    "no job {id} in the queue (job ids run from 1 to {last}; `cosched queue` lists them)"
                ),
                None => bail!("no job {id}: the queue is empty (nothing was ever submitted)"),
            }
        };
        if !cosched_localsock::may_act_for(requester, owner) {
            bail!(
                "job {id} is not yours: it belongs to uid {owner} and you are uid {requester}; only its owner \
                 or root can cancel it"
            );
        }
        let outcome = match JobState::parse(&state)? {
            JobState::Queued => {
                transition(
                    &tx,
                    id,
                    JobState::Queued,
                    JobState::Cancelled,
                    &format!("cancelled by uid {requester} before it started"),
                )?;
                tx.execute(
                    "UPDATE jobs SET ended_at = ?1, cancel_requested = 1 WHERE id = ?2",
                    params![now(), id],
                )?;
                Cancelled::Now
            }
            JobState::Running => {
                if requested == 0 {
                    tx.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?1", [id])?;
                    event(
                        &tx,
                        id,
                        JobState::Running,
                        &format!("cancel requested by uid {requester}"),
                    )?;
                }
                Cancelled::Requested
            }
            done => bail!(
                "job {id} already ended ({}): nothing to cancel",
                done.as_str()
            ),
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// queued → running, with the job's cgroup, CPUs and initial allocation, committed *before* the manager
    /// makes the cgroup or starts anything: a manager killed after this re-adopts the job, never starts it
    /// again. `Ok(false)`: the job is no longer queued (cancelled meanwhile); nothing written.
    pub fn start(&mut self, id: i64, initial: u32, cgroup: &str, cpus: &str) -> Result<bool> {
        let tx = self.write_tx()?;
        let state: Option<String> = tx
            .query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?;
        if state.as_deref() != Some(JobState::Queued.as_str()) {
            return Ok(false);
        }
        transition(
            &tx,
            id,
            JobState::Queued,
            JobState::Running,
            &format!("partition {cgroup} on CPUs {cpus}"),
        )?;
        tx.execute(
            "UPDATE jobs SET started_at = ?1, initial = ?2, cgroup = ?3, cpus = ?4 WHERE id = ?5",
            params![now(), initial, cgroup, cpus, id],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Records the main process's pid once it started.
    pub fn set_pid(&mut self, id: i64, pid: u32) -> Result<()> {
        self.conn
            .execute("UPDATE jobs SET pid = ?1 WHERE id = ?2", params![pid, id])?;
        Ok(())
    }

    /// Records how the main process ended (the job runs on while processes remain in its cgroup).
    pub fn record_exit(&mut self, id: i64, exit: Exit) -> Result<()> {
        let (code, signal) = match exit {
            Exit::Code(c) => (Some(c), None),
            Exit::Signal(s) => (None, Some(s)),
            Exit::Unknown => (None, None),
        };
        self.conn.execute(
            "UPDATE jobs SET exit_code = ?1, signal = ?2 WHERE id = ?3",
            params![code, signal, id],
        )?;
        Ok(())
    }

    /// Partitions rewritten this quantum, one transaction.
    pub fn set_cpus(&mut self, changes: &[(i64, String)]) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let tx = self.write_tx()?;
        for (id, cpus) in changes {
            tx.execute("UPDATE jobs SET cpus = ?1 WHERE id = ?2", params![cpus, id])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// running → done / failed / cancelled, with the time and a note, in one transaction.
    pub fn finish(&mut self, id: i64, to: JobState, note: &str) -> Result<()> {
        self.end(id, JobState::Running, to, note)
    }

    /// queued → failed: it can no longer start (a request the manager's machine or MPL cannot meet).
    pub fn fail_queued(&mut self, id: i64, note: &str) -> Result<()> {
        self.end(id, JobState::Queued, JobState::Failed, note)
    }

    /// `from` → the final state `to`, with the end time and a note, in one transaction.
    fn end(&mut self, id: i64, from: JobState, to: JobState, note: &str) -> Result<()> {
        let tx = self.write_tx()?;
        transition(&tx, id, from, to, note)?;
        tx.execute(
            "UPDATE jobs SET ended_at = ?1, note = ?2 WHERE id = ?3",
            params![now(), note, id],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// running → queued: the recovery proved the job never started; it keeps its place (its id).
    pub fn requeue(&mut self, id: i64, note: &str) -> Result<()> {
        let tx = self.write_tx()?;
        transition(&tx, id, JobState::Running, JobState::Queued, note)?;
        tx.execute(
            "UPDATE jobs SET started_at = NULL, initial = NULL, cgroup = NULL, cpus = NULL, pid = NULL \
             WHERE id = ?1",
            [id],
        )?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(procs: u32) -> Submission {
        Submission {
            name: "t".into(),
            procs,
            mpl: Some(2),
            argv: vec!["true".into()],
            cwd: "/".into(),
            env: vec![("PATH".into(), "/bin".into())],
            uid: 1000,
            gid: 1000,
            groups: vec![1000, 27],
        }
    }

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("q.db")).unwrap();
        (dir, db)
    }

    fn history(db: &Db, id: i64) -> Vec<&'static str> {
        db.events(id)
            .unwrap()
            .into_iter()
            .map(|e| e.state.as_str())
            .collect()
    }

    #[test]
    fn the_transition_table() {
        use JobState::*;
        for from in JobState::ALL {
            for to in JobState::ALL {
                let allowed = from.may_become(to);
                let expected = matches!(
                    (from, to),
                    (Queued, Running | Cancelled | Failed)
                        | (Running, Done | Failed | Cancelled | Queued)
                );
                assert_eq!(allowed, expected, "{from:?} → {to:?}");
            }
            // A final state goes nowhere.
            if from.is_final() {
                assert!(JobState::ALL.iter().all(|&to| !from.may_become(to)));
            }
        }
    }

    #[test]
    fn a_job_round_trips_and_its_history_follows_each_transition() {
        let (_d, mut db) = db();
        let id = db.submit(&submission(3)).unwrap();
        let job = db.job(id).unwrap().unwrap();
        assert_eq!(job.state, JobState::Queued);
        assert_eq!(job.argv, vec!["true"]);
        assert_eq!(job.groups, vec![1000, 27]);
        assert_eq!(job.env, vec![("PATH".to_string(), "/bin".to_string())]);
        assert!(db.start(id, 2, "cosched-scs-1", "0-1").unwrap());
        db.set_pid(id, 4242).unwrap();
        db.record_exit(id, Exit::Code(3)).unwrap();
        db.finish(id, JobState::Failed, "exit 3").unwrap();
        let job = db.job(id).unwrap().unwrap();
        assert_eq!(job.state, JobState::Failed);
        assert_eq!(job.exit(), Exit::Code(3));
        assert_eq!(job.pid, Some(4242));
        assert_eq!(job.initial, Some(2));
        assert!(job.started_at.unwrap() <= job.ended_at.unwrap());
        assert_eq!(history(&db, id), ["queued", "running", "failed"]);
    }

    #[test]
    fn a_job_starts_once_however_often_the_start_is_attempted() {
        let (_d, mut db) = db();
        let id = db.submit(&submission(1)).unwrap();
        assert!(db.start(id, 1, "c", "0").unwrap());
        assert!(
            !db.start(id, 1, "c", "0").unwrap(),
            "a running job cannot start again"
        );
        // A finished job can neither start nor finish again; the failed attempt writes nothing.
        db.finish(id, JobState::Done, "exit 0").unwrap();
        assert!(!db.start(id, 1, "c", "0").unwrap());
        let err = db
            .finish(id, JobState::Done, "again")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no longer running"), "{err}");
        assert_eq!(history(&db, id), ["queued", "running", "done"]);
    }

    #[test]
    fn cancel_a_queued_job_at_once_a_running_one_by_request_and_refuse_the_rest() {
        let (_d, mut db) = db();
        let a = db.submit(&submission(1)).unwrap();
        let b = db.submit(&submission(1)).unwrap();
        assert_eq!(db.cancel(a, 1000).unwrap(), Cancelled::Now);
        assert_eq!(db.job(a).unwrap().unwrap().state, JobState::Cancelled);
        assert!(
            !db.start(a, 1, "c", "0").unwrap(),
            "a cancelled job never starts"
        );
        db.start(b, 1, "c", "0").unwrap();
        let err = db.cancel(b, 1001).unwrap_err().to_string();
        assert!(
            err.contains("not yours") && err.contains("belongs to uid 1000"),
            "{err}"
        );
        assert_eq!(db.cancel(b, 0).unwrap(), Cancelled::Requested);
        assert_eq!(db.cancel(b, 1000).unwrap(), Cancelled::Requested);
        let job = db.job(b).unwrap().unwrap();
        assert!(job.cancel_requested);
        assert_eq!(job.state, JobState::Running);
        assert_eq!(
            history(&db, b),
            ["queued", "running", "running"],
            "one request recorded"
        );
        db.finish(b, JobState::Cancelled, "killed").unwrap();
        let err = db.cancel(b, 0).unwrap_err().to_string();
        assert!(err.contains("already ended (cancelled)"), "{err}");
        let err = db.cancel(99, 0).unwrap_err().to_string();
        assert!(err.contains("no job 99") && err.contains("1 to 2"), "{err}");
    }

    #[test]
    fn cancel_on_an_empty_queue_says_so() {
        let (_d, mut db) = db();
        let err = db.cancel(1, 0).unwrap_err().to_string();
        assert!(err.contains("queue is empty"), "{err}");
    }

    #[test]
    fn requeue_clears_the_partition_and_keeps_the_place() {
        let (_d, mut db) = db();
        let a = db.submit(&submission(1)).unwrap();
        let b = db.submit(&submission(1)).unwrap();
        db.start(a, 1, "cosched-scs-1", "0").unwrap();
        db.requeue(a, "never started").unwrap();
        let queued: Vec<i64> = db
            .jobs(Some(JobState::Queued))
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(queued, [a, b], "FCFS order is the id order");
        let job = db.job(a).unwrap().unwrap();
        assert_eq!((job.cgroup, job.cpus, job.started_at), (None, None, None));
        assert_eq!(history(&db, a), ["queued", "running", "queued"]);
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let ok = submission(4);
        ok.validate(2, 4).unwrap();
        let mut s = ok.clone();
        s.procs = 5; // ceil(5 / 2) = 3 > 2 CPUs
        let err = s.validate(2, 4).unwrap_err().to_string();
        assert!(
            err.contains("needs 3 CPUs at MPL 2") && err.contains("--procs"),
            "{err}"
        );
        s.mpl = None; // the manager's MPL 4: ceil(5 / 4) = 2 fits
        s.validate(2, 4).unwrap();
        s.mpl = Some(0);
        assert!(s.validate(2, 4).unwrap_err().to_string().contains("MPL 0"));
        s.mpl = Some(1000);
        assert!(s
            .validate(2, 4)
            .unwrap_err()
            .to_string()
            .contains("above 64"));
        let mut s = ok.clone();
        s.procs = 0;
        assert!(s
            .validate(2, 4)
            .unwrap_err()
            .to_string()
            .contains("at least one process"));
        let mut s = ok.clone();
        s.argv.clear();
        assert!(s
            .validate(2, 4)
            .unwrap_err()
            .to_string()
            .contains("no command"));
        let mut s = ok.clone();
        s.argv.push("a\0b".into());
        assert!(s.validate(2, 4).unwrap_err().to_string().contains("NUL"));
        let mut s = ok.clone();
        s.cwd = "relative".into();
        assert!(s
            .validate(2, 4)
            .unwrap_err()
            .to_string()
            .contains("absolute"));
        let mut s = ok;
        s.env.push(("A=B".into(), "c".into()));
        assert!(s
            .validate(2, 4)
            .unwrap_err()
            .to_string()
            .contains("environment variable"));
    }

    #[test]
    fn a_failed_write_leaves_nothing_half_written() {
        // A row the schema refuses (procs 0 bypassing validation) writes neither the job nor its event.
        let (_d, mut db) = db();
        let mut s = submission(1);
        s.procs = 0;
        assert!(db.submit(&s).is_err());
        assert!(db.jobs(None).unwrap().is_empty());
        let events: i64 = db
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events, 0);
    }

    #[test]
    fn two_connections_see_each_others_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db");
        let mut a = Db::open(&path).unwrap();
        let b = Db::open(&path).unwrap();
        let id = a.submit(&submission(1)).unwrap();
        assert_eq!(b.job(id).unwrap().unwrap().state, JobState::Queued);
        a.set_meta(&[("mpl", "2".into())]).unwrap();
        assert_eq!(b.meta("mpl").unwrap().as_deref(), Some("2"));
    }
}
