//! The Self Co-Scheduling manager end to end, through the `cosched` binary: `submit`, `queue`, `cancel` and
//! `manager` on a temporary database and a cpuset parent of the test's own (`cosched-scs-t<pid>-<test>`),
//! removed in every path (a `Drop` guard; the managers die with the test: `die_with_parent`).
//!
//! The privileged tests need root and a cpuset hierarchy (v1 here); elsewhere they say `SKIP` (or fail under
//! `COSCHED_REQUIRE_PRIVILEGED=1`, as in CI).

use cosched_manager::cgroup::{self, Hierarchy};
use cosched_manager::db::{Db, Exit, JobState};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The privileged tests share the machine's two CPUs: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const COSCHED: &str = env!("CARGO_BIN_EXE_cosched");

/// Why the privileged tests cannot run here, if they cannot.
fn why_not_here() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("needs root (cpuset cgroups, jobs started as their submitters)".into());
    }
    Hierarchy::detect().err().map(|e| format!("{e:#}"))
}

/// A small xorshift generator: the test prints its seed, so a failing schedule can be replayed.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::env::var("SCS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("random schedule: SCS_TEST_SEED={seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A temporary queue, its cgroup parent and its managers; everything removed when dropped.
struct Fixture {
    dir: tempfile::TempDir,
    db: PathBuf,
    parent: String,
    parent_dir: PathBuf,
    manager_log: PathBuf,
    manager: Option<Child>,
    /// Flags every manager of this fixture is started with, beyond the usual ones.
    manager_args: Vec<String>,
}

/// Removes the cgroup parents of earlier runs of these tests whose process is gone (a test killed outright, by
/// a timeout say, runs no `Drop`): their empty job cgroups, then the parent. One still holding processes is
/// left alone and reported.
fn sweep_dead_runs(root: &Path) {
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("cosched-scs-t")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let parent = entry.path();
        for (_, job) in cosched_manager::daemon::job_cgroups(&parent) {
            if cgroup::is_empty(&job) {
                let _ = cgroup::remove(&job);
            }
        }
        if cgroup::remove(&parent).is_err() {
            eprintln!(
                "{} (from a dead test run) still holds processes: left",
                parent.display()
            );
        }
    }
}

impl Fixture {
    fn new(test: &str) -> Fixture {
        sweep_dead_runs(&Hierarchy::detect().unwrap().root);
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("scs.db");
        let parent = format!("cosched-scs-t{}-{test}", std::process::id());
        let parent_dir = Hierarchy::detect().unwrap().root.join(&parent);
        let manager_log = dir.path().join("manager.log");
        Fixture {
            dir,
            db,
            parent,
            parent_dir,
            manager_log,
            manager: None,
            manager_args: Vec::new(),
        }
    }

    fn cosched(&self, args: &[&str]) -> Command {
        // The subcommand, then --db: anything after a `--` in `args` belongs to the job's command.
        let mut cmd = Command::new(COSCHED);
        cmd.arg(args[0]).arg("--db").arg(&self.db).args(&args[1..]);
        cmd
    }

    fn start_manager(&mut self) {
        assert!(self.manager.is_none());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.manager_log)
            .unwrap();
        let mut cmd = self.cosched(&["manager", "--mpl", "2", "--quantum-ms", "20"]);
        cmd.args(["--cgroup-parent", &self.parent])
            .args(&self.manager_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        cosched_testkit::die_with_parent(&mut cmd, libc::SIGKILL);
        self.manager = Some(cmd.spawn().unwrap());
    }

    /// Starts a manager and waits until it is up (its "managing" line: its SIGTERM handler is in place).
    fn start_manager_ready(&mut self) {
        let ready = |log: &Path| {
            std::fs::read_to_string(log)
                .unwrap_or_default()
                .matches("cosched manager: managing ")
                .count()
        };
        let before = ready(&self.manager_log);
        self.start_manager();
        let t0 = Instant::now();
        while ready(&self.manager_log) == before {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the manager did not start:\n{}",
                std::fs::read_to_string(&self.manager_log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL (or SIGTERM) to the manager, and waits for it; returns its exit status.
    fn stop_manager(&mut self, signal: i32) -> std::process::ExitStatus {
        let mut m = self.manager.take().expect("a manager runs");
        // SAFETY: kill(2) on the pid of the child this test started and has not reaped.
        unsafe { libc::kill(m.id() as i32, signal) };
        m.wait().unwrap()
    }

    fn submit(&self, procs: u32, script: &str) -> i64 {
        let out = self
            .cosched(&["submit", "--procs", &procs.to_string(), "--mpl", "2"])
            .args(["--", "sh", "-c", script])
            .current_dir("/tmp")
            .output()
            .unwrap();
        assert!(out.status.success(), "submit: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn db(&self) -> Db {
        Db::open(&self.db).unwrap()
    }

    /// Waits until every job is final; panics with the queue and the manager's log after `limit`.
    fn wait_all_final(&self, limit: Duration) {
        let t0 = Instant::now();
        loop {
            let jobs = self.db().jobs(None).unwrap();
            if jobs.iter().all(|j| j.state.is_final()) {
                return;
            }
            assert!(
                t0.elapsed() < limit,
                "jobs not finished after {limit:?}:\n{}\nmanager log:\n{}",
                self.queue_table(),
                std::fs::read_to_string(&self.manager_log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until job `id` runs (at most 30 s) and returns its pid.
    fn running_pid(&self, id: i64) -> u32 {
        let t0 = Instant::now();
        loop {
            let job = self.db().job(id).unwrap().unwrap();
            if let (JobState::Running, Some(pid)) = (job.state, job.pid) {
                return pid;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{}",
                self.queue_table()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn queue_table(&self) -> String {
        text(&self.cosched(&["queue"]).output().unwrap())
    }

    fn job_cgroups(&self) -> Vec<(i64, PathBuf)> {
        cosched_manager::daemon::job_cgroups(&self.parent_dir)
    }

    /// Job `id`'s partition cgroup, while it exists.
    fn job_dir(&self, id: i64) -> Option<PathBuf> {
        self.job_cgroups()
            .into_iter()
            .find(|(j, _)| *j == id)
            .map(|(_, d)| d)
    }

    /// Waits until `check` holds, else panics after `limit` naming `what`, with the queue and the manager's log.
    fn wait_until(&self, what: &str, limit: Duration, check: &dyn Fn() -> bool) {
        let t0 = Instant::now();
        while !check() {
            assert!(
                t0.elapsed() < limit,
                "{what} within {limit:?}:\n{}\nmanager log:\n{}",
                self.queue_table(),
                std::fs::read_to_string(&self.manager_log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mut m) = self.manager.take() {
            let _ = m.kill();
            let _ = m.wait();
        }
        // Only processes this test's managers started are in these cgroups.
        let t0 = Instant::now();
        loop {
            let busy: usize = self
                .job_cgroups()
                .iter()
                .map(|(_, d)| cgroup::kill_all(d))
                .sum();
            if busy == 0 || t0.elapsed() > Duration::from_secs(5) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for (_, d) in self.job_cgroups() {
            let _ = cgroup::remove(&d);
        }
        let _ = cgroup::remove(&self.parent_dir);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups); run the tests as root, as CI does"
)]
fn a_manager_killed_at_random_moments_runs_every_job_exactly_once() {
    const TEST: &str = "a_manager_killed_at_random_moments_runs_every_job_exactly_once";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let t_start = Instant::now();
    let mut f = Fixture::new("kill");
    let out = f.dir.path().join("ran");
    const JOBS: usize = 24;
    const KILLS: usize = 16;
    let mut rng = Rng::new();
    // The submitter: a stream of short jobs at random intervals, while the manager is killed and restarted.
    let submitter = {
        let db = f.db.clone();
        let out = out.clone();
        let gaps: Vec<u64> = (0..JOBS).map(|_| rng.below(150)).collect();
        std::thread::spawn(move || {
            let mut ids = Vec::new();
            for gap in gaps {
                std::thread::sleep(Duration::from_millis(gap));
                let o = Command::new(COSCHED)
                    .args(["submit", "--procs", "1", "--mpl", "2", "--db"])
                    .arg(&db)
                    .args(["--", "sh", "-c"])
                    .arg(format!(
                        "echo $COSCHED_SCS_JOB >> {}; sleep 0.2",
                        out.display()
                    ))
                    .current_dir("/tmp")
                    .output()
                    .unwrap();
                assert!(o.status.success(), "submit: {}", text(&o));
                ids.push(
                    String::from_utf8_lossy(&o.stdout)
                        .trim()
                        .parse::<i64>()
                        .unwrap(),
                );
            }
            ids
        })
    };
    // Every other kill comes within 5-60 ms of the start: in the middle of the recovery, or of a job's start.
    for k in 0..KILLS {
        f.start_manager();
        let ms = if k % 2 == 0 {
            50 + rng.below(500)
        } else {
            5 + rng.below(55)
        };
        std::thread::sleep(Duration::from_millis(ms));
        f.stop_manager(libc::SIGKILL);
    }
    let ids = submitter.join().unwrap();
    f.start_manager_ready();
    f.wait_all_final(Duration::from_secs(90));
    let status = f.stop_manager(libc::SIGTERM);
    assert!(
        status.success(),
        "the manager stops cleanly on SIGTERM: {status}"
    );

    // Every job ran exactly once: one line each in the file the jobs write.
    let mut lines: BTreeMap<i64, usize> = BTreeMap::new();
    for l in std::fs::read_to_string(&out).unwrap_or_default().lines() {
        *lines.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    let db = f.db();
    let jobs = db.jobs(None).unwrap();
    assert_eq!(jobs.len(), JOBS, "every submitted job is in the queue");
    assert_eq!(
        jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        ids,
        "ids are given in submission order"
    );
    let (mut unknown, mut requeued) = (0, 0);
    for job in &jobs {
        assert_eq!(
            lines.get(&job.id),
            Some(&1),
            "job {} ran {} times\n{}",
            job.id,
            lines.get(&job.id).unwrap_or(&0),
            f.queue_table()
        );
        assert_eq!(job.state, JobState::Done, "job {}: {:?}", job.id, job.note);
        assert!(matches!(job.exit(), Exit::Code(0) | Exit::Unknown));
        unknown += usize::from(job.exit() == Exit::Unknown);
        // The history is complete: queued first, done last, every step an allowed transition, each time
        // recorded in order.
        let history = db.events(job.id).unwrap();
        assert_eq!(history.first().unwrap().state, JobState::Queued);
        assert_eq!(history.last().unwrap().state, JobState::Done);
        for w in history.windows(2) {
            assert!(w[0].at <= w[1].at);
            assert!(
                w[0].state == w[1].state || w[0].state.may_become(w[1].state),
                "job {}: {:?} → {:?}",
                job.id,
                w[0].state,
                w[1].state
            );
        }
        requeued += history
            .windows(2)
            .filter(|w| w[0].state == JobState::Running && w[1].state == JobState::Queued)
            .count();
        assert!(job.started_at.unwrap() <= job.ended_at.unwrap());
    }
    assert!(f.job_cgroups().is_empty(), "every job's cgroup is removed");
    let log = std::fs::read_to_string(&f.manager_log).unwrap();
    let adopted = log.matches("re-adopted").count();
    eprintln!(
        "{JOBS} jobs, {KILLS} kill -9s: {adopted} re-adoptions, {unknown} ended while no manager ran (exit \
         unknown), {requeued} queued again (never started); {:.1} s",
        t_start.elapsed().as_secs_f64()
    );
}

/// One consistent look at the partitions: each job cgroup's CPUs (read twice, unchanged in between) and the
/// allowed CPUs of every process in it, read between the two.
struct Sample {
    cpus: BTreeMap<i64, Vec<u32>>,
    /// (job, pid, the process's Cpus_allowed_list)
    procs: Vec<(i64, u32, Vec<u32>)>,
}

fn sample(h: &Hierarchy, parent: &Path) -> Option<Sample> {
    let dirs = cosched_manager::daemon::job_cgroups(parent);
    let read = |dirs: &[(i64, PathBuf)]| -> Option<BTreeMap<i64, Vec<u32>>> {
        dirs.iter()
            .map(|(id, d)| Some((*id, h.cpus(d).ok()?)))
            .collect()
    };
    let first = read(&dirs)?;
    let mut procs = Vec::new();
    for (id, d) in &dirs {
        for pid in cgroup::procs(d) {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                continue; // it exited
            };
            let allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            procs.push((*id, pid, cgroup::parse_cpu_list(allowed).ok()?));
        }
    }
    let second = read(&dirs)?;
    (first == second).then_some(Sample { cpus: first, procs })
}

/// Each job's partition sizes as they changed over time.
type Sizes = BTreeMap<i64, Vec<usize>>;

/// What is wrong with a sample: two partitions sharing a CPU, or a process allowed outside its partition.
fn violations(s: &Sample) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<(&i64, &Vec<u32>)> = s.cpus.iter().collect();
    for (i, (a, ca)) in parts.iter().enumerate() {
        for (b, cb) in &parts[i + 1..] {
            if ca.iter().any(|c| cb.contains(c)) {
                out.push(format!("jobs {a} ({ca:?}) and {b} ({cb:?}) share a CPU"));
            }
        }
    }
    for (job, pid, allowed) in &s.procs {
        let part = &s.cpus[job];
        if allowed.iter().any(|c| !part.contains(c)) {
            out.push(format!(
                "pid {pid} of job {job} may run on {allowed:?}, outside its partition {part:?}"
            ));
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups); run the tests as root, as CI does"
)]
fn partitions_never_overlap_and_a_jobs_processes_never_leave_its_partition() {
    const TEST: &str = "partitions_never_overlap_and_a_jobs_processes_never_leave_its_partition";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let t_start = Instant::now();
    let h = Hierarchy::detect().unwrap();
    if h.machine_cpus().unwrap().len() != 2 {
        cosched_testkit::cannot_run(
            TEST,
            "the schedule it checks is written for a 2-CPU machine",
        );
        return;
    }
    let mut f = Fixture::new("part");
    f.start_manager_ready();
    // Each job has 2 processes (MPL 2: it starts on 1 CPU and may grow to 2) and runs until the test
    // releases it; three processes and more in its cgroup (the shell, a sleep, the polling sleeps).
    let release_dir = f.dir.path().to_path_buf();
    let job = |name: &str| {
        format!(
            "sleep 0.3 & while [ ! -e {}/release-{name} ]; do sleep 0.05; done; wait",
            release_dir.display()
        )
    };
    let release =
        |name: &str| std::fs::write(release_dir.join(format!("release-{name}")), "").unwrap();
    let mut seen: Sizes = BTreeMap::new();
    let (mut samples, mut discarded, mut max_together) = (0usize, 0usize, 0usize);
    let mut problems = Vec::new();
    // Samples the partitions until `done` says the step is over, and enough times (60 s at most).
    let mut watch = |seen: &mut Sizes, what: &str, done: &dyn Fn(&Db, &Sizes) -> bool| {
        let t0 = Instant::now();
        let mut here = 0;
        loop {
            match sample(&h, &f.parent_dir) {
                Some(s) => {
                    samples += 1;
                    here += 1;
                    let mut v = violations(&s);
                    if !v.is_empty() {
                        // The kernel updates the tasks just after the new set is readable: look again.
                        std::thread::sleep(Duration::from_millis(2));
                        v = sample(&h, &f.parent_dir)
                            .map(|s| violations(&s))
                            .unwrap_or_default();
                    }
                    problems.extend(v);
                    // A cgroup the manager has made but not yet given its CPUs (cpuset.cpus empty) holds no
                    // process — the kernel attaches none to an empty cpuset — and is no partition yet.
                    let partitions: Vec<(&i64, &Vec<u32>)> =
                        s.cpus.iter().filter(|(_, cpus)| !cpus.is_empty()).collect();
                    max_together = max_together.max(partitions.len());
                    for (id, cpus) in partitions {
                        let sizes = seen.entry(*id).or_default();
                        if sizes.last() != Some(&cpus.len()) {
                            sizes.push(cpus.len());
                        }
                    }
                }
                None => discarded += 1,
            }
            // At least 20 samples a step; at least 3 where the machine starves the test (other work on it).
            let enough = here >= 20 || (here >= 3 && t0.elapsed() > Duration::from_secs(5));
            if enough && done(&f.db(), seen) {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{what}: {}",
                f.queue_table()
            );
            std::thread::sleep(Duration::from_millis(3));
        }
    };
    let state = |db: &Db, id: i64| db.job(id).unwrap().unwrap().state;
    // a alone: it starts on ceil(2 / 2) = 1 CPU and, with nothing waiting, grows to 2.
    let a = f.submit(2, &job("a"));
    watch(&mut seen, "a on 2 CPUs", &|_, seen| {
        seen.get(&a).is_some_and(|s| s.contains(&2))
    });
    // b arrives and fits at its initial CPU: a shrinks to 1 first, then b starts on the other.
    let b = f.submit(2, &job("b"));
    watch(&mut seen, "b running", &|db, _| {
        state(db, b) == JobState::Running
    });
    // c and d arrive: no CPU is free at initial allocations, so they wait (strict FCFS).
    let c = f.submit(2, &job("c"));
    let d = f.submit(2, &job("d"));
    let t0 = Instant::now();
    watch(&mut seen, "c and d waiting", &|_, _| {
        t0.elapsed() > Duration::from_millis(300)
    });
    assert_eq!(state(&f.db(), c), JobState::Queued, "{}", f.queue_table());
    assert_eq!(state(&f.db(), d), JobState::Queued, "{}", f.queue_table());
    // a ends: c (the head) starts on its CPU; d still waits, so nobody grows.
    release("a");
    watch(&mut seen, "c running", &|db, _| {
        state(db, c) == JobState::Running
    });
    assert_eq!(state(&f.db(), d), JobState::Queued);
    // b and c end: d starts and, alone, grows to both CPUs.
    release("b");
    release("c");
    watch(&mut seen, "d on 2 CPUs", &|_, seen| {
        seen.get(&d).is_some_and(|s| s.contains(&2))
    });
    release("d");
    watch(&mut seen, "all done", &|db, _| {
        db.jobs(None).unwrap().iter().all(|j| j.state.is_final())
    });
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(samples >= 6 * 3, "only {samples} samples");
    assert_eq!(
        seen[&a],
        [2, 1],
        "a: alone on 2 CPUs, then 1 when b arrived; {seen:?}"
    );
    assert_eq!(seen[&b], [1], "{seen:?}");
    assert_eq!(seen[&c], [1], "{seen:?}");
    assert_eq!(seen[&d].last(), Some(&2), "{seen:?}");
    assert_eq!(
        max_together, 2,
        "two partitions side by side at most, on 2 CPUs"
    );
    let db = f.db();
    for job in db.jobs(None).unwrap() {
        assert_eq!(job.state, JobState::Done, "{}", f.queue_table());
        assert_eq!(job.exit(), Exit::Code(0));
    }
    let status = f.stop_manager(libc::SIGTERM);
    assert!(status.success());
    eprintln!(
        "{samples} consistent samples ({discarded} discarded mid-change), partition sizes {seen:?}, no overlap, \
         no process outside its partition; {:.1} s",
        t_start.elapsed().as_secs_f64()
    );
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups, setuid); run the tests as root, as CI does"
)]
fn a_job_runs_as_its_submitter_and_cancel_kills_it_when_running() {
    const TEST: &str = "a_job_runs_as_its_submitter_and_cancel_kills_it_when_running";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let mut f = Fixture::new("user");
    // As `sudo -u`'s caller would: SUDO_UID / SUDO_GID name the submitter (nobody, 65534).
    let out = f
        .cosched(&["submit", "--procs", "1", "--name", "as-nobody", "--"])
        .args(["sh", "-c", "sleep 30 & wait"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .current_dir("/tmp")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let id: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // A queued job behind nothing, cancelled before any manager runs: it never starts.
    let queued = f.submit(1, "echo should-not-run");
    let out = f
        .cosched(&["cancel", &queued.to_string()])
        .output()
        .unwrap();
    assert!(text(&out).contains("had not started"), "{}", text(&out));
    f.start_manager_ready();
    let pid = f.running_pid(id);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| status_field(&status, name);
    assert_eq!(field("Uid:"), ["65534"; 4], "{status}");
    assert_eq!(field("Gid:"), ["65534"; 4], "{status}");
    assert!(
        !field("Groups:").contains(&"0".to_string()),
        "no root group: {status}"
    );
    let table = f.queue_table();
    assert!(
        table.contains("running") && table.contains("as-nobody"),
        "{table}"
    );
    // Cancel it while it runs: the manager kills its processes and records it cancelled.
    let out = f.cosched(&["cancel", &id.to_string()]).output().unwrap();
    assert!(
        out.status.success() && text(&out).contains("runs"),
        "{}",
        text(&out)
    );
    let t0 = Instant::now();
    while f.db().job(id).unwrap().unwrap().state != JobState::Cancelled {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{}",
            f.queue_table()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || {
            // A zombie is gone from the cgroup; the manager reaps its own child at its next quantum.
            std::thread::sleep(Duration::from_millis(200));
            !Path::new(&format!("/proc/{pid}")).exists()
        }
    );
    assert!(f.job_cgroups().is_empty());
    assert_eq!(
        f.db().job(queued).unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert!(f.stop_manager(libc::SIGTERM).success());
    // Cancelling twice, or an unknown id, is an error that says why.
    let out = f.cosched(&["cancel", &id.to_string()]).output().unwrap();
    assert!(!out.status.success() && text(&out).contains("already ended (cancelled)"));
    // --cleanup with nothing left: only the parent cgroup to remove.
    let out = f
        .cosched(&["manager", "--cleanup", "--cgroup-parent", &f.parent])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!f.parent_dir.exists(), "{}", text(&out));
}

/// Runs `cosched` as user nobody (uid and gid 65534, no supplementary groups: the standard library drops root's
/// when it sets the uid), from /tmp, with a small environment.
fn as_nobody(args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    Command::new(COSCHED)
        .args(args)
        .uid(65534)
        .gid(65534)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("USER", "someone-else")
        .current_dir("/tmp")
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups, setuid, a user to submit as); run the tests as root, as CI does"
)]
fn a_user_submits_through_the_socket_and_the_job_runs_as_them_not_as_root() {
    const TEST: &str = "a_user_submits_through_the_socket_and_the_job_runs_as_them_not_as_root";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let nobody = as_nobody(&["--help"]);
    if !nobody.status.success() {
        cosched_testkit::cannot_run(
            TEST,
            &format!(
                "user nobody (65534) cannot run {COSCHED} (a directory above it is closed to others?): {}",
                text(&nobody)
            ),
        );
        return;
    }
    let mut f = Fixture::new("socket");
    // The directory is reachable by nobody (the database in it stays 0600, root's): nobody cannot write the
    // queue, so `cosched submit` goes through the socket.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = f.dir.path().join("manager.sock");
    let (db, sock) = (f.db.display().to_string(), socket.display().to_string());
    f.manager_args = vec!["--socket".into(), sock.clone()];
    f.start_manager_ready();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666, "the socket is anyone's to connect to");
    // Root's own job, written directly.
    let out = f
        .cosched(&[
            "submit",
            "--as-root",
            "--procs",
            "1",
            "--mpl",
            "2",
            "--name",
            "roots",
        ])
        .args(["--", "sh", "-c", "sleep 30"])
        .env_remove("SUDO_UID")
        .current_dir("/tmp")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let roots: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // nobody's job, through the socket: no sudo, and nothing in the request says who submits.
    let submit = |extra: &[&str]| {
        let mut args = vec!["submit", "--db", &db, "--socket", &sock];
        args.extend_from_slice(extra);
        as_nobody(&args)
    };
    let out = submit(&[
        "--procs",
        "1",
        "--mpl",
        "2",
        "--name",
        "nobodys",
        "--",
        "sh",
        "-c",
        "id -u; id -g; id -G; echo \"$USER\"; sleep 30",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let theirs: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let pid = f.running_pid(theirs);
    // Its record names nobody, with nobody's passwd entry's USER in place of the one its environment carried.
    let job = f.db().job(theirs).unwrap().unwrap();
    assert_eq!((job.uid, job.gid), (65534, 65534), "{job:?}");
    assert!(!job.groups.contains(&0), "{job:?}");
    let user = job
        .env
        .iter()
        .find(|(k, _)| k == "USER")
        .map(|(_, v)| v.as_str());
    assert_ne!(user, Some("someone-else"), "{job:?}");
    // It runs as nobody: all four uids and gids, no root group.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| status_field(&status, name);
    assert_eq!(field("Uid:"), ["65534"; 4], "{status}");
    assert_eq!(field("Gid:"), ["65534"; 4], "{status}");
    assert!(!field("Groups:").contains(&"0".to_string()), "{status}");
    let log = cosched_manager::daemon::state_dir(&f.db, "logs").join(format!("{theirs}.log"));
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("65534\n65534\n")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{:?}",
            std::fs::read_to_string(&log)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // nobody lists the queue through the socket (without anyone's environment), and cannot cancel root's job.
    let out = as_nobody(&["queue", "--db", &db, "--socket", &sock]);
    assert!(
        out.status.success() && text(&out).contains("nobodys") && text(&out).contains("roots"),
        "{}",
        text(&out)
    );
    let out = as_nobody(&["cancel", "--db", &db, "--socket", &sock, &roots.to_string()]);
    assert!(
        !out.status.success() && text(&out).contains("not yours"),
        "{}",
        text(&out)
    );
    assert_eq!(f.db().job(roots).unwrap().unwrap().state, JobState::Running);
    // The direct path's clear errors, through the socket.
    let cpus = f.db().meta("cpus").unwrap().unwrap();
    let cpus = cgroup::parse_cpu_list(&cpus).unwrap().len();
    let too_many = (2 * cpus + 1).to_string();
    for (args, says) in [
        (
            vec!["--procs", too_many.as_str(), "--mpl", "2", "--", "true"],
            "CPUs at MPL 2",
        ),
        (vec!["--procs", "1", "--mpl", "0", "--", "true"], "MPL 0"),
        (vec!["--procs", "1", "--as-root", "--", "true"], "only root"),
    ] {
        let out = submit(&args);
        assert!(
            !out.status.success() && text(&out).contains(says),
            "{args:?}: {}",
            text(&out)
        );
    }
    let out = as_nobody(&["cancel", "--db", &db, "--socket", &sock, "999"]);
    assert!(
        !out.status.success() && text(&out).contains("no job 999"),
        "{}",
        text(&out)
    );
    // A request that says who it is, is refused naming the field.
    {
        use std::io::{Read, Write};
        let mut s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        s.write_all(b"{\"op\":\"cancel\",\"id\":1,\"uid\":0}\n")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.contains("field `uid`"), "{reply}");
    }
    // nobody cancels their own job; root cancels root's.
    let out = as_nobody(&[
        "cancel",
        "--db",
        &db,
        "--socket",
        &sock,
        &theirs.to_string(),
    ]);
    assert!(
        out.status.success() && text(&out).contains("runs"),
        "{}",
        text(&out)
    );
    let out = f.cosched(&["cancel", &roots.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    f.wait_all_final(Duration::from_secs(30));
    for id in [roots, theirs] {
        assert_eq!(f.db().job(id).unwrap().unwrap().state, JobState::Cancelled);
    }
    let history: Vec<String> = f
        .db()
        .events(theirs)
        .unwrap()
        .into_iter()
        .map(|e| e.detail)
        .collect();
    assert!(
        history.iter().any(|d| d.contains("uid 65534")),
        "{history:?}"
    );
    assert!(f.stop_manager(libc::SIGTERM).success());
    assert!(!socket.exists(), "a stopping manager removes its socket");
}

#[test]
fn bad_requests_are_refused_with_the_reason_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("scs.db");
    let run = |args: &[&str]| {
        let out = Command::new(COSCHED)
            .arg(args[0])
            .arg("--db")
            .arg(&db)
            .args(&args[1..])
            .current_dir("/tmp")
            .output()
            .unwrap();
        (out.status.success(), text(&out))
    };
    let cpus = Hierarchy::detect()
        .and_then(|h| h.machine_cpus())
        .map(|c| c.len())
        .unwrap_or_else(|_| std::thread::available_parallelism().unwrap().get());
    let too_many = (2 * cpus + 1).to_string();
    for (args, says) in [
        (
            vec!["submit", "--procs", &too_many, "--mpl", "2", "--", "true"],
            "CPUs at MPL 2",
        ),
        (
            vec!["submit", "--procs", "1", "--mpl", "0", "--", "true"],
            "MPL 0",
        ),
        (
            vec!["submit", "--procs", "1", "--mpl", "1000", "--", "true"],
            "above 64",
        ),
        (
            vec!["submit", "--procs", "0", "--", "true"],
            "at least one process",
        ),
        (vec!["submit", "--procs", "1", "--", ""], "no command"),
        (
            vec!["submit", "--procs", "x", "--", "true"],
            "invalid value 'x'",
        ),
        (vec!["cancel", "abc"], "not a job id"),
        (vec!["cancel", "7"], "no job 7"),
    ] {
        let (ok, out) = run(&args);
        assert!(
            !ok && out.contains(says),
            "{args:?} should fail saying {says:?}: {out}"
        );
    }
    // Nothing was queued by any of them.
    if db.exists() {
        assert!(Db::open(&db).unwrap().jobs(None).unwrap().is_empty());
    }
    let (ok, out) = run(&["submit", "--procs", "1", "--name", "fine", "--", "true"]);
    assert!(ok && out.trim_start().starts_with('1'), "{out}");
    assert!(out.contains("no manager runs"), "{out}");
    let (ok, out) = run(&["cancel", "9"]);
    assert!(!ok && out.contains("ids run from 1 to 1"), "{out}");
    let (ok, out) = run(&["queue"]);
    assert!(
        ok && out.contains("queued") && out.contains("fine"),
        "{out}"
    );
    let (ok, out) = run(&["queue", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert!(
        ok && v["state"] == "queued" && v["history"][0]["state"] == "queued",
        "{out}"
    );
}

/// Given a job's partition, the CPUs each of its ranks should be allowed (by rank); `None`: not yet that partition.
type ExpectedCpus = dyn Fn(&[u32]) -> Option<Vec<Vec<u32>>>;

/// The CPUs process `pid` may run on (`Cpus_allowed_list` in its status), as a list.
fn allowed_cpus(pid: u32) -> Option<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cgroup::parse_cpu_list(line.trim()).ok()
}

/// The pids of job `job`'s processes whose environment says `OMPI_COMM_WORLD_RANK=<rank>`, by rank.
fn ranked_pids(cgroup_dir: &Path) -> BTreeMap<u32, u32> {
    cgroup::procs(cgroup_dir)
        .into_iter()
        .filter_map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let rank = cosched_manager::pin::rank_of(&environ, b"")?;
            Some((rank, pid))
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups); run the tests as root, as CI does"
)]
fn ranks_are_pinned_in_rank_order_and_follow_their_partition_as_it_shrinks() {
    const TEST: &str = "ranks_are_pinned_in_rank_order_and_follow_their_partition_as_it_shrinks";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let machine = Hierarchy::detect().unwrap().machine_cpus().unwrap();
    if machine.len() < 2 {
        cosched_testkit::cannot_run(TEST, "needs 2 CPUs (a partition that shrinks)");
        return;
    }
    let mut f = Fixture::new("pin");
    f.start_manager_ready();
    // Two ranks that carry Open MPI's rank variable, and a shell without one; they run until released.
    let release = f.dir.path().join("release");
    let script = format!(
        "OMPI_COMM_WORLD_RANK=0 sh -c 'while [ ! -e {r} ]; do sleep 0.02; done' & \
         OMPI_COMM_WORLD_RANK=1 sh -c 'while [ ! -e {r} ]; do sleep 0.02; done' & wait",
        r = release.display()
    );
    let a = f.submit(2, &script);
    // Alone, the job grows to one CPU per process: rank 0 on the partition's first CPU, rank 1 on its second.
    let wait_for =
        |what: &str, check: &dyn Fn() -> bool| f.wait_until(what, Duration::from_secs(30), check);
    let dir_of = |id: i64| f.job_dir(id);
    let pinned = |id: i64, expect: &ExpectedCpus| {
        let Some(dir) = dir_of(id) else { return false };
        let Ok(partition) = Hierarchy::detect().unwrap().cpus(&dir) else {
            return false;
        };
        let ranks = ranked_pids(&dir);
        let Some(want) = expect(&partition) else {
            return false;
        };
        ranks.len() == 2
            && ranks
                .iter()
                .all(|(r, pid)| allowed_cpus(*pid).as_ref() == want.get(*r as usize))
    };
    wait_for("job a alone on 2 CPUs, one rank each", &|| {
        pinned(a, &|p| (p.len() == 2).then(|| vec![vec![p[0]], vec![p[1]]]))
    });
    // The shell that started them carries no rank: it keeps the whole partition.
    let dir = dir_of(a).unwrap();
    let unranked: Vec<u32> = cgroup::procs(&dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| cosched_manager::pin::rank_of(&env, b"").is_none())
        })
        .collect();
    assert!(!unranked.is_empty());
    for pid in unranked {
        if let Some(cpus) = allowed_cpus(pid) {
            assert_eq!(
                cpus.len(),
                2,
                "a process without a rank was pinned: {pid} on {cpus:?}"
            );
        }
    }
    // A second job arrives: a shrinks to one CPU, and both its ranks follow onto it.
    let b = f.submit(
        1,
        &format!("while [ ! -e {} ]; do sleep 0.02; done", release.display()),
    );
    wait_for("job a shrunk to 1 CPU with both ranks on it", &|| {
        pinned(a, &|p| (p.len() == 1).then(|| vec![vec![p[0]], vec![p[0]]]))
    });
    std::fs::write(&release, "").unwrap();
    f.wait_all_final(Duration::from_secs(30));
    for id in [a, b] {
        assert_eq!(f.db().job(id).unwrap().unwrap().state, JobState::Done);
    }
    assert!(f.stop_manager(libc::SIGTERM).success());
}

/// The whitespace-separated values of line `name` (e.g. `Uid:`) of a `/proc/<pid>/status` text.
fn status_field(status: &str, name: &str) -> Vec<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// How long the in-CPU tests wait for the manager to act.
const IN_CPU_WAIT: Duration = Duration::from_secs(20);

/// A process's scheduling policy and real-time priority (fields 41 and 40 of `/proc/<pid>/stat`): `(0, 0)` is
/// SCHED_OTHER, `(1, p)` SCHED_FIFO at `p`.
fn policy_of(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')' comes field 3; field n is at index n - 3.
    Some((fields.get(38)?.parse().ok()?, fields.get(37)?.parse().ok()?))
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups, SCHED_FIFO); run the tests as root, as CI does"
)]
fn in_cpu_rr_holds_ranks_at_one_fifo_priority_a_killed_manager_leaves_none_and_a_spinner_ends_it() {
    const TEST: &str =
        "in_cpu_rr_holds_ranks_at_one_fifo_priority_a_killed_manager_leaves_none_and_a_spinner_ends_it";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let mut f = Fixture::new("incpu-rr");
    f.manager_args = ["--in-cpu", "rr", "--in-cpu-max-run-ms", "30"]
        .map(String::from)
        .to_vec();
    f.start_manager_ready();
    // Two ranks that sleep in a loop (they block) and never fork (perl; a forked `sleep` would carry the rank
    // too); rank 1, once `spin` exists, counts in a loop with no system call (it never blocks) for a second or
    // more, then sleeps again until `release`.
    let (release, spin) = (f.dir.path().join("release"), f.dir.path().join("spin"));
    let nap = "select(undef, undef, undef, 0.02)";
    let script = format!(
        "OMPI_COMM_WORLD_RANK=0 perl -e '{nap} until -e q({r});' & \
         OMPI_COMM_WORLD_RANK=1 perl -e '{nap} until -e q({s}); for (my $i = 0; $i < 30000000; $i++) {{}} \
         {nap} until -e q({r});' & wait",
        r = release.display(),
        s = spin.display()
    );
    let a = f.submit(2, &script);
    f.running_pid(a);
    let dir = f.job_dir(a).unwrap();
    let ranks_at = |want: (u64, u64)| {
        let ranks = ranked_pids(&dir);
        ranks.len() == 2 && ranks.values().all(|&pid| policy_of(pid) == Some(want))
    };
    f.wait_until("both ranks at SCHED_FIFO 1", IN_CPU_WAIT, &|| {
        ranks_at((1, 1))
    });
    // The shell that started them carries no rank: left alone.
    let unranked: Vec<u32> = cgroup::procs(&dir)
        .into_iter()
        .filter(|pid| !ranked_pids(&dir).values().any(|p| p == pid))
        .collect();
    assert!(!unranked.is_empty());
    for pid in unranked {
        assert_eq!(policy_of(pid).map(|p| p.0), Some(0), "unranked {pid}");
    }
    // kill -9 of the manager: its guardian gives every rank back SCHED_OTHER; the job runs on.
    f.stop_manager(libc::SIGKILL);
    f.wait_until(
        "both ranks back at SCHED_OTHER after the manager's kill -9",
        IN_CPU_WAIT,
        &|| ranks_at((0, 0)),
    );
    assert_eq!(f.db().job(a).unwrap().unwrap().state, JobState::Running);
    // The next manager re-adopts the job and holds its ranks again.
    f.start_manager_ready();
    f.wait_until("both ranks at SCHED_FIFO 1 again", IN_CPU_WAIT, &|| {
        ranks_at((1, 1))
    });
    // Rank 1 stops blocking: the watchdog ends the rule for the whole job.
    std::fs::write(&spin, "").unwrap();
    f.wait_until("the job left to the fair scheduler", IN_CPU_WAIT, &|| {
        std::fs::read_to_string(&f.manager_log)
            .unwrap_or_default()
            .contains(&format!("job {a}: in-CPU rule rr ended"))
    });
    assert!(ranks_at((0, 0)), "both ranks at SCHED_OTHER once it ended");
    let log = std::fs::read_to_string(&f.manager_log).unwrap();
    assert!(log.contains("without blocking (limit 30 ms)"), "{log}");
    // And stays there (no rank taken on again at the next scans).
    std::thread::sleep(Duration::from_millis(200));
    assert!(ranks_at((0, 0)), "the rule stays off for the job");
    std::fs::write(&release, "").unwrap();
    f.wait_all_final(Duration::from_secs(30));
    assert_eq!(f.db().job(a).unwrap().unwrap().state, JobState::Done);
    assert!(f.stop_manager(libc::SIGTERM).success());
    let log = std::fs::read_to_string(&f.manager_log).unwrap();
    assert!(log.contains("every thread given back what it had"), "{log}");
}

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (cpuset cgroups, SCHED_FIFO); run the tests as root, as CI does"
)]
fn in_cpu_msg_favours_the_rank_with_unread_bytes_and_sigterm_gives_everything_back() {
    const TEST: &str =
        "in_cpu_msg_favours_the_rank_with_unread_bytes_and_sigterm_gives_everything_back";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_here() {
        cosched_testkit::cannot_run(TEST, &why);
        return;
    }
    let mut f = Fixture::new("incpu-msg");
    f.manager_args = ["--in-cpu", "msg"].map(String::from).to_vec();
    f.start_manager_ready();
    // Rank 0 holds 100 bytes it never reads on a socket pair of its own (perl-base's Socket); rank 1 holds
    // none. Both sleep until `release`.
    let release = f.dir.path().join("release");
    let perl = format!(
        "use Socket; socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die $!; \
         syswrite($b, q(x) x 100); select(undef, undef, undef, 0.02) until -e q({r});",
        r = release.display()
    );
    let script = format!(
        "OMPI_COMM_WORLD_RANK=0 perl -e '{perl}' & \
         OMPI_COMM_WORLD_RANK=1 perl -e 'select(undef, undef, undef, 0.02) until -e q({r});' & wait",
        r = release.display()
    );
    let a = f.submit(2, &script);
    f.running_pid(a);
    let dir = f.job_dir(a).unwrap();
    f.wait_until(
        "rank 0 favoured (SCHED_FIFO 2), rank 1 at 1",
        IN_CPU_WAIT,
        &|| {
            let ranks = ranked_pids(&dir);
            ranks.len() == 2
                && policy_of(ranks[&0]) == Some((1, 2))
                && policy_of(ranks[&1]) == Some((1, 1))
        },
    );
    let ranks = ranked_pids(&dir);
    assert!(f.stop_manager(libc::SIGTERM).success());
    for (rank, pid) in &ranks {
        assert_eq!(policy_of(*pid), Some((0, 0)), "rank {rank} after SIGTERM");
    }
    let log = std::fs::read_to_string(&f.manager_log).unwrap();
    assert!(log.contains("in-CPU rule msg:"), "{log}");
    std::fs::write(&release, "").unwrap();
    f.start_manager_ready();
    f.wait_all_final(Duration::from_secs(30));
    assert_eq!(f.db().job(a).unwrap().unwrap().state, JobState::Done);
    assert!(f.stop_manager(libc::SIGTERM).success());
}
