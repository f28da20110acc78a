//! The manager: seed 001's launcher and CPU manager (CPUM) in one process. At each quantum it reaps the jobs
//! that ended, kills the processes of cancelled ones, then re-partitions by the policy's rules
//! (`crate::plan`) and starts the queue's head while it fits.
//!
//! ## The crash rules (a `kill -9` at any moment loses no job and runs none twice)
//! 1. A job's queued → running change is committed, with its cgroup's name, *before* its cgroup is made or
//!    anything is started; a job is started only from that committed state.
//! 2. The job's process is born inside its cgroup: the manager moves itself into the job's cgroup, forks, and
//!    moves back. The child leaves a started marker (`<state>/scs-started/<id>`) before its `exec`.
//! 3. A job ends when its cgroup is empty (and, for a job this manager started, once its main process is
//!    reaped). The end is committed first; the marker and the cgroup are removed after.
//! 4. On start, each job the database says runs is looked at: its cgroup holds processes → re-adopted (watched
//!    until its cgroup empties; its exit status is unknown unless recorded before); empty or missing with a
//!    marker → it ran and ended while no manager watched: recorded done, exit status unknown; empty or missing
//!    without a marker → it never started (no process was ever born in its cgroup that reached its `exec`):
//!    queued again, at its place.
//! 5. SIGTERM / SIGINT stop the manager after its current quantum; running jobs keep running and the next
//!    manager re-adopts them (rule 4), so restarting the manager never disturbs a job.
//!
//! One manager per database: it holds an exclusive `flock` on `<db>.lock` (released by the kernel however it
//! dies).

use crate::cgroup::{self, Hierarchy};
use crate::db::{Db, Exit, Job, JobState};
use crate::plan::{self, Queued, Running};
use crate::spawn;
use anyhow::{bail, Context, Result};
use cosched_policy::scs::{initial_allocation, Demand};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where the queue lives unless `--db` says otherwise: persistent across reboots (a queued job survives one;
/// a job running at a reboot is recorded as ended with an unknown status by the next manager).
pub const DEFAULT_DB: &str = "/var/lib/cosched/scs.db";
/// The CPU manager quantum when none is given (notes §001.5.2: the seed does not give it).
pub const DEFAULT_QUANTUM_MS: u64 = 100;

/// The manager's settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub db: PathBuf,
    /// The MPL of jobs submitted without one.
    pub mpl: u32,
    pub quantum: Duration,
    /// The parent cgroup's name (under the cpuset hierarchy's root).
    pub parent: String,
    /// Where cgroup file systems are mounted ([`cgroup::CGROUP_ROOT`]).
    pub mount: PathBuf,
    /// Pin each ranked process of a job to its rank's CPU of the partition at every quantum ([`crate::pin`]).
    pub pin_ranks: bool,
    /// Where users submit, list and cancel without writing the database ([`crate::socket`]); `None`: nowhere.
    pub socket: Option<PathBuf>,
    /// Who runs next inside a partition's CPU ([`crate::incpu`]): the fair scheduler, strict RR or Msg.
    pub in_cpu: crate::incpu::Settings,
}

impl Config {
    /// The defaults, with the database at `db`.
    pub fn new(db: PathBuf) -> Config {
        Config {
            db,
            mpl: cosched_policy::scs::DEFAULT_MPL,
            quantum: Duration::from_millis(DEFAULT_QUANTUM_MS),
            parent: cgroup::DEFAULT_PARENT.to_string(),
            mount: PathBuf::from(cgroup::CGROUP_ROOT),
            pin_ranks: true,
            socket: None,
            in_cpu: crate::incpu::Settings::new(crate::incpu::Rule::Fair),
        }
    }
}

/// The directory beside the database named `<db stem>-<what>` (`scs.db` → `scs-logs`, `scs-started`).
pub fn state_dir(db: &Path, what: &str) -> PathBuf {
    let stem = db
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scs".into());
    db.with_file_name(format!("{stem}-{what}"))
}

/// The lock file of a database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    db.with_file_name(name)
}

/// Takes the database's manager lock; `Err` naming the holder when another manager has it.
pub fn take_lock(db: &Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    use std::io::{Read, Seek, Write};
    let path = lock_path(db);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening the manager lock {}", path.display()))?;
    // A moment's retry: `manager_running` (a submit asking) holds a shared lock for an instant.
    let mut file = file;
    let mut tries = 0;
    let locked = loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Err((f, _)) if tries < 10 => {
                file = f;
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => break other,
        }
    };
    match locked {
        Ok(mut lock) => {
            lock.set_len(0)?;
            lock.rewind()?;
            write!(lock, "{}", std::process::id())?;
            Ok(lock)
        }
        Err((mut file, _)) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            bail!(
                "another manager (pid {}) runs on {}: one manager per queue; stop it (SIGTERM) first",
                pid.trim(),
                db.display()
            )
        }
    }
}

/// Whether a manager holds the database's lock now.
pub fn manager_running(db: &Path) -> bool {
    let Ok(file) = std::fs::File::open(lock_path(db)) else {
        return false;
    };
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
}

/// What the recovery does with a job the database says runs (crash rule 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recover {
    /// Its cgroup holds processes: watch it until it empties.
    Adopt,
    /// It ran (its marker exists) and ended while no manager watched: record it done, exit status unknown.
    Ended,
    /// No process of it ever reached `exec`: queue it again at its place.
    Requeue,
}

/// Crash rule 4 as a function of what the manager sees: whether the job's cgroup holds processes, and whether
/// its start marker exists. A forked child is born in the cgroup and leaves the marker before `exec`, so an
/// empty (or missing) cgroup without a marker means nothing of the job ever ran.
pub fn recovery_action(cgroup_has_processes: bool, marker: bool) -> Recover {
    match (cgroup_has_processes, marker) {
        (true, _) => Recover::Adopt,
        (false, true) => Recover::Ended,
        (false, false) => Recover::Requeue,
    }
}

/// What the recovery found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    pub adopted: usize,
    pub ended: usize,
    pub requeued: usize,
}

fn log(line: impl std::fmt::Display) {
    eprintln!("cosched manager: {line}");
}

/// The running manager.
pub struct Manager {
    cfg: Config,
    db: Db,
    hier: Hierarchy,
    parent_dir: PathBuf,
    /// `cgroup.procs` of the cgroup the manager runs in, to return to after each start.
    home_procs: PathBuf,
    /// The CPUs shared out (the root cpuset's).
    machine: Vec<u32>,
    /// Main processes of jobs this manager started, not yet reaped.
    children: HashMap<i64, Child>,
    logs: PathBuf,
    started: PathBuf,
    /// The submit socket, served from [`Manager::run`] on.
    listener: Option<std::os::unix::net::UnixListener>,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Manager {
    /// Takes the lock, opens the database, finds the cpuset hierarchy and makes the parent cgroup.
    pub fn open(cfg: Config) -> Result<Manager> {
        cosched_policy::scs::check_mpl(cfg.mpl).map_err(|e| anyhow::anyhow!("--mpl: {e}"))?;
        cfg.in_cpu.check(cfg.pin_ranks)?;
        if cfg.quantum.is_zero() || cfg.quantum > Duration::from_secs(60) {
            bail!(
                "--quantum-ms must be between 1 and 60000, got {}",
                cfg.quantum.as_millis()
            );
        }
        if let Some(dir) = cfg.db.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the state directory {}", dir.display()))?;
        }
        let lock = take_lock(&cfg.db)?;
        let mut db = Db::open(&cfg.db)?;
        let hier = Hierarchy::detect_at(&cfg.mount)?;
        let machine = hier.machine_cpus()?;
        let parent_dir = hier.ensure_parent(&cfg.parent)?;
        let home = cgroup::cgroup_of(hier.version, "self")?;
        let home_procs = hier
            .root
            .join(home.trim_start_matches('/'))
            .join("cgroup.procs");
        let (logs, started) = (state_dir(&cfg.db, "logs"), state_dir(&cfg.db, "started"));
        // Logs: each one belongs to its job's user, who must reach it; markers: the manager's only.
        for (dir, mode) in [(&logs, 0o755), (&started, 0o700)] {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        // After the lock: a second manager of this database is refused by the lock, not by the socket.
        let listener = cfg.socket.as_deref().map(crate::socket::bind).transpose()?;
        db.set_meta(&[
            ("mpl", cfg.mpl.to_string()),
            ("cpus", cgroup::format_cpu_list(&machine)),
            ("cgroup_parent", parent_dir.display().to_string()),
        ])?;
        Ok(Manager {
            cfg,
            db,
            hier,
            parent_dir,
            home_procs,
            machine,
            children: HashMap::new(),
            logs,
            started,
            listener,
            _lock: lock,
        })
    }

    fn job_dir(&self, job: &Job) -> PathBuf {
        self.parent_dir.join(
            job.cgroup
                .clone()
                .unwrap_or_else(|| cgroup::job_cgroup_name(job.id)),
        )
    }

    fn marker(&self, id: i64) -> PathBuf {
        self.started.join(id.to_string())
    }

    /// CPU ids → indices into the machine's CPUs (ids the machine does not have are dropped).
    fn indices(&self, cpus: &[u32]) -> Vec<u32> {
        cpus.iter()
            .filter_map(|c| self.machine.iter().position(|m| m == c).map(|i| i as u32))
            .collect()
    }

    /// Indices → CPU ids.
    fn ids(&self, indices: &[u32]) -> Vec<u32> {
        indices.iter().map(|&i| self.machine[i as usize]).collect()
    }

    /// Crash rule 4: looks at every job the database says runs.
    pub fn recover(&mut self) -> Result<Recovery> {
        let mut r = Recovery::default();
        for job in self.db.jobs(Some(JobState::Running))? {
            let dir = self.job_dir(&job);
            let action = recovery_action(
                dir.exists() && !cgroup::is_empty(&dir),
                self.marker(job.id).exists(),
            );
            if action == Recover::Adopt {
                let cpus = self.hier.cpus(&dir)?;
                let text = cgroup::format_cpu_list(&cpus);
                if job.cpus.as_deref() != Some(text.as_str()) {
                    self.db.set_cpus(&[(job.id, text.clone())])?;
                }
                log(format_args!(
                    "job {} re-adopted: {} process(es) in {} on CPUs {text}",
                    job.id,
                    cgroup::procs(&dir).len(),
                    dir.display()
                ));
                r.adopted += 1;
            } else if action == Recover::Ended {
                self.end(&job)?;
                r.ended += 1;
            } else {
                self.db.requeue(
                    job.id,
                    "never started: the manager stopped after committing its start and before its process \
                     reached exec; queued again at its place",
                )?;
                if dir.exists() {
                    cgroup::remove(&dir)?;
                }
                log(format_args!("job {} never started: queued again", job.id));
                r.requeued += 1;
            }
        }
        // Cgroups of jobs that are not running (left by a manager killed after committing their end): empty
        // ones go; one with processes is reported and left alone.
        let running: Vec<i64> = self
            .db
            .jobs(Some(JobState::Running))?
            .iter()
            .map(|j| j.id)
            .collect();
        for (id, dir) in job_cgroups(&self.parent_dir) {
            if running.contains(&id) {
                continue;
            }
            if cgroup::is_empty(&dir) {
                cgroup::remove(&dir)?;
            } else {
                log(format_args!(
                    "{} holds processes but job {id} is not running: left alone",
                    dir.display()
                ));
            }
        }
        Ok(r)
    }

    /// Records a job whose cgroup emptied as ended (crash rule 3): the end first, then its marker and cgroup.
    fn end(&mut self, job: &Job) -> Result<()> {
        let (state, note) = if job.cancel_requested {
            (
                JobState::Cancelled,
                "cancelled: its processes were killed".to_string(),
            )
        } else {
            match job.exit() {
                Exit::Code(0) => (JobState::Done, "exit 0".to_string()),
                Exit::Code(c) => (JobState::Failed, format!("exit {c}")),
                Exit::Signal(s) => (JobState::Failed, format!("killed by signal {s}")),
                Exit::Unknown => (
                    JobState::Done,
                    "exit status unknown: it ended while no manager watched it".to_string(),
                ),
            }
        };
        self.db.finish(job.id, state, &note)?;
        log(format_args!("job {} {}: {note}", job.id, state.as_str()));
        let _ = std::fs::remove_file(self.marker(job.id));
        let dir = self.job_dir(job);
        if let Err(e) = cgroup::remove(&dir) {
            log(format_args!("{e:#} (left for `cosched manager --cleanup`)"));
        }
        Ok(())
    }

    /// Reaps the main processes of the jobs this manager started.
    fn reap(&mut self) -> Result<()> {
        use std::os::unix::process::ExitStatusExt;
        let mut reaped = Vec::new();
        for (&id, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                let exit = match (status.code(), status.signal()) {
                    (Some(c), _) => Exit::Code(c),
                    (None, Some(s)) => Exit::Signal(s),
                    _ => Exit::Unknown,
                };
                reaped.push((id, exit));
            }
        }
        for (id, exit) in reaped {
            self.db.record_exit(id, exit)?;
            self.children.remove(&id);
        }
        Ok(())
    }

    /// One CPU manager quantum.
    pub fn tick(&mut self) -> Result<()> {
        self.reap()?;
        for job in self.db.jobs(Some(JobState::Running))? {
            let dir = self.job_dir(&job);
            if job.cancel_requested {
                cgroup::kill_all(&dir);
            }
            if self.children.contains_key(&job.id) {
                continue;
            }
            if cgroup::is_empty(&dir) {
                self.end(&job)?;
            }
        }
        let cpus = self.machine.len() as u32;
        let running: Vec<Running> = self
            .db
            .jobs(Some(JobState::Running))?
            .iter()
            .map(|j| {
                // The partition as the kernel holds it (the database's copy may lag a write by a crash).
                let now = self
                    .hier
                    .cpus(&self.job_dir(j))
                    .ok()
                    .or_else(|| {
                        j.cpus
                            .as_deref()
                            .and_then(|t| cgroup::parse_cpu_list(t).ok())
                    })
                    .unwrap_or_default();
                Running {
                    id: j.id,
                    demand: Demand {
                        initial: j.initial.unwrap_or(1).max(1),
                        procs: j.procs,
                    },
                    cpus: self.indices(&now),
                }
            })
            .collect();
        let mut queue = Vec::new();
        for job in self.db.jobs(Some(JobState::Queued))? {
            let mpl = job.mpl.unwrap_or(self.cfg.mpl);
            match initial_allocation(job.procs, mpl, cpus) {
                Ok(initial) => queue.push(Queued {
                    id: job.id,
                    demand: Demand {
                        initial,
                        procs: job.procs,
                    },
                }),
                Err(e) => {
                    // It can never start here (the machine or the MPL changed since it was submitted): strict
                    // FCFS would block the queue behind it for good.
                    self.db.fail_queued(job.id, &format!("cannot start: {e}"))?;
                    log(format_args!("job {} failed: {e}", job.id));
                }
            }
        }
        let p = plan::plan(&running, &queue, cpus);
        let mut changes = Vec::new();
        let mut failed = None;
        for r in p.shrink.iter().chain(&p.grow) {
            let job = self.db.job(r.id)?.context("a running job vanished")?;
            let ids = self.ids(&r.to);
            if let Err(e) = self.hier.set_cpus(&self.job_dir(&job), &ids) {
                // Stop here: a grow after a failed shrink could overlap it.
                failed = Some(e.context(format!("re-partitioning job {}", r.id)));
                break;
            }
            changes.push((r.id, cgroup::format_cpu_list(&ids)));
        }
        self.db.set_cpus(&changes)?;
        if let Some(e) = failed {
            return Err(e);
        }
        for (id, initial, cpus) in p.start {
            self.start(id, initial, &self.ids(&cpus))?;
        }
        if self.cfg.pin_ranks {
            // After every rewrite of the partitions (which resets the tasks' affinity) and for processes and
            // threads born since the last quantum.
            for job in self.db.jobs(Some(JobState::Running))? {
                let dir = self.job_dir(&job);
                if let Ok(partition) = self.hier.cpus(&dir) {
                    crate::pin::pin_ranks(&cgroup::procs(&dir), job.procs, &partition);
                }
            }
        }
        Ok(())
    }

    /// The running jobs as the in-CPU rule needs them: cgroup, processes, partition as the kernel holds it.
    fn job_views(&self) -> Vec<crate::incpu::JobView> {
        let Ok(jobs) = self.db.jobs(Some(JobState::Running)) else {
            return Vec::new();
        };
        jobs.iter()
            .filter_map(|job| {
                let dir = self.job_dir(job);
                let partition = self.hier.cpus(&dir).ok()?;
                Some(crate::incpu::JobView {
                    id: job.id,
                    dir,
                    procs: job.procs,
                    partition,
                })
            })
            .collect()
    }

    /// Starts job `id` on `cpus` (crash rules 1 and 2).
    fn start(&mut self, id: i64, initial: u32, cpus: &[u32]) -> Result<()> {
        let name = cgroup::job_cgroup_name(id);
        let text = cgroup::format_cpu_list(cpus);
        if !self.db.start(id, initial, &name, &text)? {
            return Ok(()); // cancelled since the plan read it
        }
        let job = self.db.job(id)?.context("the job just started vanished")?;
        let dir = match self.hier.create_child(&self.parent_dir, &name, cpus) {
            Ok(dir) => dir,
            Err(e) => return self.could_not_start(&job, e),
        };
        let env = [
            ("COSCHED_SCS_JOB".to_string(), id.to_string()),
            ("COSCHED_SCS_PROCS".to_string(), job.procs.to_string()),
            ("COSCHED_SCS_CPUS".to_string(), text.clone()),
            ("COSCHED_SCS_CGROUP".to_string(), dir.display().to_string()),
        ];
        let log_path = self.logs.join(format!("{id}.log"));
        // Born in the job's cgroup: in, fork, out.
        let procs = dir.join("cgroup.procs");
        if let Err(e) = std::fs::write(&procs, "0") {
            let e = anyhow::Error::new(e).context(format!(
                "moving the manager into {} to start job {id}",
                dir.display()
            ));
            return self.could_not_start(&job, e);
        }
        let spawned = spawn::spawn(&job, &self.marker(id), &log_path, &env);
        std::fs::write(&self.home_procs, "0").with_context(|| {
            format!(
                "moving the manager back to {} after starting job {id}",
                self.home_procs.display()
            )
        })?;
        match spawned {
            Ok(child) => {
                self.db.set_pid(id, child.id())?;
                log(format_args!(
                    "job {id} started: pid {}, {} process(es) on CPUs {text} ({}), log {}",
                    child.id(),
                    job.procs,
                    dir.display(),
                    log_path.display()
                ));
                self.children.insert(id, child);
                Ok(())
            }
            Err(e) => self.could_not_start(&job, e),
        }
    }

    fn could_not_start(&mut self, job: &Job, e: anyhow::Error) -> Result<()> {
        let note = format!("could not start: {e:#}");
        self.db.finish(job.id, JobState::Failed, &note)?;
        log(format_args!("job {} failed: {note}", job.id));
        let _ = std::fs::remove_file(self.marker(job.id));
        let dir = self.job_dir(job);
        if dir.exists() {
            cgroup::remove(&dir)?;
        }
        Ok(())
    }

    /// Serves the submit socket (on its own thread), recovers, then runs quanta until `stop` is set.
    pub fn run(mut self, stop: &AtomicBool) -> Result<()> {
        // Before any other thread: the guardian is forked.
        let in_cpu = match self.cfg.in_cpu.rule {
            crate::incpu::Rule::Fair => None,
            _ => Some(
                crate::incpu::start(self.cfg.in_cpu, log)
                    .context("starting the in-CPU rule's guardian and thread")?,
            ),
        };
        if let Some(listener) = self.listener.take() {
            let serve = crate::socket::Serve {
                db: self.cfg.db.clone(),
                cpus: self.machine.len() as u32,
                mpl: self.cfg.mpl,
                read_timeout: crate::socket::READ_TIMEOUT,
            };
            std::thread::Builder::new()
                .name("submit-socket".into())
                .spawn(move || serve.run(listener))
                .context("starting the submit socket's thread")?;
        }
        let r = self.recover()?;
        log(format_args!(
            "managing {} on CPUs {} at MPL {} with a {} ms quantum ({:?} cgroup {}); recovered: {} re-adopted, \
             {} ended while stopped, {} queued again",
            self.cfg.db.display(),
            cgroup::format_cpu_list(&self.machine),
            self.cfg.mpl,
            self.cfg.quantum.as_millis(),
            self.hier.version,
            self.parent_dir.display(),
            r.adopted,
            r.ended,
            r.requeued
        ));
        if let Some(path) = &self.cfg.socket {
            log(format_args!(
                "users submit, list and cancel through {} (as the kernel names them)",
                path.display()
            ));
        }
        if in_cpu.is_some() {
            log(format_args!(
                "in-CPU rule {}: ranks at SCHED_FIFO {} (favoured {}), a {} µs tick, a job whose rank runs {} ms \
                 without blocking goes back to the fair scheduler",
                self.cfg.in_cpu.rule.name(),
                crate::incpu::QUEUE_PRIORITY,
                crate::incpu::FAVOURED_PRIORITY,
                self.cfg.in_cpu.tick.as_micros(),
                self.cfg.in_cpu.max_run.as_millis()
            ));
        }
        let mut failures = 0;
        while !stop.load(Ordering::Relaxed) {
            let t0 = Instant::now();
            let ticked = self.tick();
            if let Some(thread) = &in_cpu {
                thread.shared().set_jobs(self.job_views());
            }
            match ticked {
                Ok(()) => failures = 0,
                Err(e) => {
                    failures += 1;
                    log(format_args!("quantum failed ({failures} in a row): {e:#}"));
                    if failures >= 50 {
                        return Err(e.context("50 quanta in a row failed; stopping"));
                    }
                }
            }
            while !stop.load(Ordering::Relaxed) && t0.elapsed() < self.cfg.quantum {
                std::thread::sleep(
                    (self.cfg.quantum - t0.elapsed().min(self.cfg.quantum))
                        .min(Duration::from_millis(50)),
                );
            }
        }
        if let Some(thread) = in_cpu {
            let c = thread.stop();
            log(format_args!(
                "in-CPU rule {}: {} thread(s) held, {} favour change(s), {} job(s) left to the fair scheduler, \
                 {} tick(s); every thread given back what it had",
                self.cfg.in_cpu.rule.name(),
                c.held,
                c.favours,
                c.released_jobs,
                c.ticks
            ));
        }
        let running = self.db.jobs(Some(JobState::Running))?.len();
        log(format_args!(
            "stopping: {running} running job(s) keep running in their partitions; the next manager re-adopts them"
        ));
        if let Some(path) = &self.cfg.socket {
            // Still holding the database's lock: no other manager of it can have bound this path since.
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }
}

/// The job cgroups under a parent, `(job id, dir)`.
pub fn job_cgroups(parent: &Path) -> Vec<(i64, PathBuf)> {
    let mut out: Vec<(i64, PathBuf)> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let id = cgroup::job_of_cgroup_name(&e.file_name().to_string_lossy())?;
            e.path().is_dir().then(|| (id, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// `cosched manager --cleanup`: with no manager running, removes the empty job cgroups of jobs that are not
/// running (a running job's empty cgroup is left for the next manager, whose recovery needs it), the markers of
/// ended jobs, and the parent cgroup once it is empty. Returns what it removed and what it kept, line by line.
pub fn cleanup(cfg: &Config) -> Result<Vec<String>> {
    let _lock = take_lock(&cfg.db)?;
    let db = Db::open(&cfg.db)?;
    let hier = Hierarchy::detect_at(&cfg.mount)?;
    let parent = hier.root.join(&cfg.parent);
    let mut lines = Vec::new();
    for (id, dir) in job_cgroups(&parent) {
        let state = db.job(id)?.map(|j| j.state);
        let busy = !cgroup::is_empty(&dir);
        if busy {
            lines.push(format!("kept {}: it holds processes", dir.display()));
        } else if state == Some(JobState::Running) {
            lines.push(format!(
                "kept {}: job {id} is recorded as running; the next manager settles it",
                dir.display()
            ));
        } else {
            cgroup::remove(&dir)?;
            lines.push(format!("removed {}", dir.display()));
        }
    }
    let started = state_dir(&cfg.db, "started");
    for entry in std::fs::read_dir(&started).into_iter().flatten().flatten() {
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        if db.job(id)?.map_or(true, |j| j.state.is_final()) {
            std::fs::remove_file(entry.path())?;
            lines.push(format!("removed {}", entry.path().display()));
        }
    }
    if parent.exists() && job_cgroups(&parent).is_empty() {
        match cgroup::remove(&parent) {
            Ok(()) => lines.push(format!("removed {}", parent.display())),
            Err(e) => lines.push(format!("kept {}: {e:#}", parent.display())),
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_files_sit_beside_the_database() {
        let db = Path::new("/var/lib/cosched/scs.db");
        assert_eq!(
            state_dir(db, "logs"),
            Path::new("/var/lib/cosched/scs-logs")
        );
        assert_eq!(lock_path(db), Path::new("/var/lib/cosched/scs.db.lock"));
    }

    #[test]
    fn recovery_adopts_a_live_job_ends_one_that_ran_and_requeues_one_that_never_did() {
        // Killed after the child's exec, the job still running (marker or not yet: the cgroup decides).
        assert_eq!(recovery_action(true, true), Recover::Adopt);
        assert_eq!(recovery_action(true, false), Recover::Adopt);
        // Killed, and the job ran to its end meanwhile: never run again.
        assert_eq!(recovery_action(false, true), Recover::Ended);
        // Killed between the commit and the fork (cgroup missing or empty, no marker): run it now.
        assert_eq!(recovery_action(false, false), Recover::Requeue);
    }

    #[test]
    fn one_manager_per_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        assert!(!manager_running(&db));
        let lock = take_lock(&db).unwrap();
        assert!(manager_running(&db));
        let err = take_lock(&db).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(lock);
        assert!(!manager_running(&db));
        take_lock(&db).unwrap();
    }
}
