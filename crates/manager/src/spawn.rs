//! Starting a job's command: as its submitter, in its own session, with its output in a log file — and
//! leaving a *started marker* first, so that a manager killed at any moment can tell a job that ran from one
//! that never did (`crate::daemon`, the crash rules).
//!
//! The child, between `fork` and `exec` (only async-signal-safe calls, on values prepared before the fork):
//! `setsid`; create the marker file; `setgroups` / `setgid` / `setuid` to the submitter (when the manager is
//! root); `chdir` to the submitter's working directory, as the submitter; `exec`. The child is born in the
//! job's cgroup: the manager moves itself there around the `fork` (`crate::daemon::Manager`), so there is no
//! moment at which the job's process runs outside its partition.

use crate::db::Job;
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Opens (appends to) the job's log, owned by the submitter.
fn open_log(path: &Path, uid: u32, gid: u32) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening the job's log {}", path.display()))?;
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
            .with_context(|| format!("giving the log {} to uid {uid}", path.display()))?;
    }
    Ok(file)
}

/// Starts `job`'s command (the caller has put this process in the job's cgroup), with the job's environment
/// plus `extra_env`, stdout and stderr appended to `log`. Returns once the command was exec'd (or an error,
/// with nothing left running, when it could not be).
pub fn spawn(
    job: &Job,
    marker: &Path,
    log: &Path,
    extra_env: &[(String, String)],
) -> Result<Child> {
    let root = nix::unistd::geteuid().is_root();
    let me = nix::unistd::geteuid().as_raw();
    if !root && job.uid != me {
        bail!(
            "job {} belongs to uid {}, and this manager runs as uid {me}: only a root manager runs other users' jobs",
            job.id,
            job.uid
        );
    }
    let out = open_log(log, job.uid, job.gid)?;
    let err = out
        .try_clone()
        .context("duplicating the log's descriptor")?;
    let marker = CString::new(marker.as_os_str().as_bytes()).context("the marker path")?;
    let cwd = CString::new(job.cwd.as_bytes()).context("the working directory")?;
    let groups: Vec<libc::gid_t> = job.groups.clone();
    let (uid, gid) = (job.uid, job.gid);
    let mut cmd = Command::new(&job.argv[0]);
    cmd.args(&job.argv[1..])
        .env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: the closure runs in the child between fork and exec; it only makes async-signal-safe system
    // calls on values built before the fork (C strings, a gid vector) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::setsid() < 0 {
                return fail();
            }
            let fd = libc::open(
                marker.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return fail();
            }
            libc::close(fd);
            if root {
                if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0 {
                    return fail();
                }
                if libc::setgid(gid) != 0 {
                    return fail();
                }
                if libc::setuid(uid) != 0 {
                    return fail();
                }
            }
            if libc::chdir(cwd.as_ptr()) != 0 {
                return fail();
            }
            Ok(())
        });
    }
    cmd.spawn().with_context(|| {
        format!(
            "starting job {}'s command {:?} as uid {} in {}",
            job.id, job.argv[0], job.uid, job.cwd
        )
    })
}
