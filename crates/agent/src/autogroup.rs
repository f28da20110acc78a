//! The job's autogroup: the lever that makes a job in a session of its own pay back a boosted burst.
//!
//! ## Problem
//! With `kernel.sched_autogroup_enabled = 1` every session (each login, each terminal, each `setsid`) is its own
//! CFS task group, and CFS shares a CPU between the groups before it shares it between their tasks. A job in a
//! session of its own is alone in its group: lowering its threads to nice 19 (the budget's demotion) changes
//! nothing against the competitors of another session, so a job that took a boosted burst could never give it
//! back, and its budget then refused every boost after the first (`docs/lab-local.md`).
//!
//! ## Approach
//! The autogroup's own nice (`/proc/<pid>/autogroup`, writable by root) weights the whole group against the
//! others: measured, 19 took a spinning session from 69 % of its CPU to 2 %. The agent uses it only where it is
//! the job's alone — every process in the autogroup is one of the job's or one of the processes that started it
//! (`cosched run`, `sudo`, the shell of `setsid`), so no bystander in the session (the user's shell and editor
//! when a job is started from a login session) is ever lowered — and only while the job's tasks are in the root
//! cpu cgroup (the kernel applies autogroups only there). Each change is recorded in a guardian slot first, so
//! the session gets its own nice back whatever happens to the agent ([`crate::guardian`]).
//!
//! ## Terminology
//! - autogroup id: the `N` of `/autogroup-N`, never reused while the machine is up.
//! - launchers: the job root's ancestors when it was registered.

use std::collections::HashSet;

/// One autogroup as `/proc/<pid>/autogroup` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Autogroup {
    pub id: u64,
    pub nice: i32,
}

/// Parses `/autogroup-17 nice 0`.
pub fn parse(text: &str) -> Option<Autogroup> {
    let mut words = text.split_whitespace();
    let id = words.next()?.strip_prefix("/autogroup-")?.parse().ok()?;
    (words.next()? == "nice").then_some(())?;
    let nice = words.next()?.parse().ok()?;
    Some(Autogroup { id, nice })
}

/// Whether the kernel groups tasks by session (`kernel.sched_autogroup_enabled`).
pub fn enabled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|s| s.trim() == "1")
}

/// The autogroup of process `pid`.
pub fn of(pid: u32) -> Option<Autogroup> {
    parse(&std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?)
}

/// Sets the nice of the autogroup `pid` is in.
pub fn set_nice(pid: u32, nice: i32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/autogroup"), nice.to_string())
}

/// Whether a `/proc/<pid>/cgroup` text puts the process in the root of the cpu controller's hierarchy, where the
/// kernel applies autogroups (v1: the line naming `cpu`; v2: the `0::` line; no cpu hierarchy at all: root).
pub fn in_root_cpu_cgroup(cgroup_text: &str) -> bool {
    crate::cpu_cgroup::cpu_path(cgroup_text).is_none_or(|path| path == "/")
}

/// Every process in autogroup `id` now (one read of `/proc/<pid>/autogroup` per process).
pub fn members(id: u64) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| of(pid).is_some_and(|g| g.id == id))
        .collect()
}

/// The parent of `pid` (field 4 of its stat), `None` for pid 1 or a process gone.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid = crate::sched::parse_stat_field(&stat, 4)? as u32;
    (ppid > 1).then_some(ppid)
}

/// The processes that started `pid`: its parent, the parent's parent, ... below init.
pub fn launchers(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut at = pid;
    while let Some(p) = parent(at) {
        if chain.len() >= 64 || chain.contains(&p) {
            break;
        }
        chain.push(p);
        at = p;
    }
    chain
}

/// The autogroup a job may lower as a whole, seen from its process `pid`: `Some` only if autogroups are on, the
/// process is in the root cpu cgroup, and every member of its autogroup is in `job_or_launcher`.
pub fn owned_by_job(pid: u32, job_or_launcher: &HashSet<u32>) -> Option<Autogroup> {
    if !enabled() {
        return None;
    }
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    if !in_root_cpu_cgroup(&cgroups) {
        return None;
    }
    let group = of(pid)?;
    crate::cpu_cgroup::exclusive(&members(group.id), job_or_launcher).then_some(group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_cgroup::exclusive;

    #[test]
    fn the_proc_line_parses_and_garbage_does_not() {
        assert_eq!(
            parse("/autogroup-17 nice 0\n"),
            Some(Autogroup { id: 17, nice: 0 })
        );
        assert_eq!(
            parse("/autogroup-3 nice -5"),
            Some(Autogroup { id: 3, nice: -5 })
        );
        assert_eq!(parse("autogroup-3 nice 0"), None);
        assert_eq!(parse("/autogroup-x nice 0"), None);
        assert_eq!(parse("/autogroup-3 weight 0"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn autogroups_apply_only_in_the_root_cpu_cgroup() {
        assert!(in_root_cpu_cgroup("12:cpu,cpuacct:/\n11:memory:/x\n"));
        assert!(!in_root_cpu_cgroup("12:cpu,cpuacct:/cosched-lab\n"));
        assert!(in_root_cpu_cgroup("0::/\n"));
        assert!(!in_root_cpu_cgroup(
            "0::/user.slice/user-0.slice/session-1.scope\n"
        ));
        // A v1 hierarchy without cpu and no v2 line: nothing groups by cgroup.
        assert!(in_root_cpu_cgroup("4:memory:/x\n"));
    }

    #[test]
    fn a_session_with_a_bystander_is_not_the_jobs() {
        let job: HashSet<u32> = [10, 11, 12].into_iter().collect();
        assert!(exclusive(&[10, 12], &job));
        assert!(!exclusive(&[10, 12, 99], &job), "99 is a bystander");
        assert!(!exclusive(&[], &job));
    }

    #[test]
    fn this_process_has_launchers() {
        let chain = launchers(std::process::id());
        assert!(!chain.contains(&std::process::id()));
        assert!(!chain.contains(&1));
    }
}
