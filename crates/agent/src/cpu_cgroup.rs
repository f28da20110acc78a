//! The job's cpu cgroup: the lever that makes a job alone in a cgroup of its own pay back a boosted burst.
//!
//! ## Problem
//! CFS shares a CPU between the cpu cgroups queued on it before it shares it between their tasks. A job alone in
//! a cpu cgroup (a systemd unit or slice of its own, a batch system's per-job cgroup, the lab's
//! `competitors_cgroup = "own"`) competes as one group against the others: lowering its threads to nice 19 (the
//! budget's demotion) changes nothing there, so a job that took a boosted burst never gave it back. Measured
//! (`docs/lab-local.md`, "Competitors in a cgroup of their own", before this lever): job F 1.15–1.88, the
//! competitors' 0.51–0.76, and the local user's p99 6.6–40× of no agent's.
//!
//! ## Approach
//! The same lever the session's nice is for a job alone in its autogroup ([`crate::autogroup`]): the group's own
//! weight (cgroup v1 `cpu.shares`, v2 `cpu.weight`), lowered in the proportion nice 19 lowers a task
//! (`weight × 15 / 1024`, the kernel's nice-to-weight table) while the job repays, and given back after. It is
//! used only where the cgroup is the job's alone — every process in it (`cgroup.procs`) is one of the job's or
//! one of the processes that started it — never on the root, and each change is recorded in a guardian slot
//! first, so the group gets its own weight back whatever happens to the agent ([`crate::guardian`]; the slot
//! names the group by its id, found again by [`find`]).
//!
//! While a group is lowered, the BPF reading of `R` counts it at its own weight (the `held_shares` map), so the
//! lever does not inflate the job's `R` and shrink the credit it repays with.
//!
//! ## Terminology
//! - cgroup id: the inode of the cgroup's directory (the kernel's `kernfs_node` id, what BPF reads), never
//!   reused while the group exists.
//! - weight: the value of the group's knob file, in that file's unit; shares: the v1 unit (1024 = nice 0),
//!   what the kernel's `task_group.shares` holds unscaled.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The file that weights a cpu cgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// cgroup v1 `cpu.shares`: 2..=262144, 1024 by default.
    Shares,
    /// cgroup v2 `cpu.weight`: 1..=10000, 100 by default.
    Weight,
}

impl Knob {
    pub fn file(self) -> &'static str {
        match self {
            Knob::Shares => "cpu.shares",
            Knob::Weight => "cpu.weight",
        }
    }

    fn min(self) -> u64 {
        match self {
            Knob::Shares => 2,
            Knob::Weight => 1,
        }
    }

    /// A weight of this knob in shares, as the kernel converts it (v2: `weight × 1024 / 100`, rounded).
    pub fn to_shares(self, weight: u64) -> u64 {
        match self {
            Knob::Shares => weight,
            Knob::Weight => (weight * 1024 + 50) / 100,
        }
    }
}

/// The kernel's weight of nice 0 and of nice 19 (`sched_prio_to_weight`): a lowered group keeps this part.
const NICE_0: u64 = 1024;
const NICE_19: u64 = 15;

/// `weight` lowered as nice 19 lowers a task, never under the knob's minimum.
pub fn lowered(knob: Knob, weight: u64) -> u64 {
    (weight * NICE_19 / NICE_0).max(knob.min())
}

/// One cpu cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCgroup {
    pub dir: PathBuf,
    pub id: u64,
    pub knob: Knob,
}

impl CpuCgroup {
    /// The group's weight now, in its knob's unit.
    pub fn weight(&self) -> std::io::Result<u64> {
        let text = std::fs::read_to_string(self.dir.join(self.knob.file()))?;
        text.trim()
            .parse()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    pub fn set_weight(&self, weight: u64) -> std::io::Result<()> {
        std::fs::write(self.dir.join(self.knob.file()), weight.to_string())
    }

    /// Every process in the group now.
    pub fn members(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Whether the group has no child groups.
    pub fn is_leaf(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|entries| {
            !entries
                .flatten()
                .any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        })
    }

    /// The group at `dir`, if it is a cpu cgroup (it has a knob).
    fn at(dir: PathBuf) -> Option<CpuCgroup> {
        let id = std::fs::metadata(&dir).ok()?.ino();
        let knob = [Knob::Shares, Knob::Weight]
            .into_iter()
            .find(|k| dir.join(k.file()).exists())?;
        Some(CpuCgroup { dir, id, knob })
    }
}

/// Gives `group` its own weight `own` back if it still has `set`, the weight the agent gave it (a change by
/// anyone else stands; a group gone needs nothing). Returns whether it wrote. The one rule for the agent's own
/// restore and its guardian's.
pub fn give_back(group: &CpuCgroup, set: u64, own: u64) -> std::io::Result<bool> {
    match group.weight() {
        Ok(now) if now == set => group.set_weight(own).map(|()| true),
        _ => Ok(false),
    }
}

/// Where the cpu controller's hierarchy is mounted, from a `/proc/self/mountinfo` text: the v1 `cgroup` mount
/// whose options name `cpu`, else the `cgroup2` mount (v2 holds every controller in one hierarchy).
pub fn cpu_mount(mountinfo: &str) -> Option<PathBuf> {
    let mut v2 = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount_point) = left.split_whitespace().nth(4) else {
            continue;
        };
        let mut fields = right.split_whitespace();
        let (Some(fstype), _source, Some(options)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        match fstype {
            "cgroup" if options.split(',').any(|o| o == "cpu") => {
                return Some(PathBuf::from(mount_point))
            }
            "cgroup2" => v2 = v2.or_else(|| Some(PathBuf::from(mount_point))),
            _ => {}
        }
    }
    v2
}

/// The path of the process's cpu cgroup within the cpu hierarchy, from a `/proc/<pid>/cgroup` text (v1: the
/// line naming `cpu`; v2: the `0::` line); `None` when no hierarchy holds the cpu controller.
pub fn cpu_path(cgroup_text: &str) -> Option<&str> {
    let mut v2 = None;
    for line in cgroup_text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == "cpu") {
            return Some(path);
        }
        if id == "0" && controllers.is_empty() {
            v2 = Some(path);
        }
    }
    v2
}

fn mount() -> Option<PathBuf> {
    cpu_mount(&std::fs::read_to_string("/proc/self/mountinfo").ok()?)
}

/// The cpu cgroup of process `pid`; `None` for the root (no lever there) or no cpu hierarchy.
pub fn of(pid: u32) -> Option<CpuCgroup> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = cpu_path(&text)?.trim_start_matches('/');
    if path.is_empty() {
        return None;
    }
    CpuCgroup::at(mount()?.join(path))
}

/// The cpu cgroups a job may lower, seen from its processes `job_pids`: each distinct one they are in that is
/// below the root, has no child groups (lowering a parent would lower its other children too) and holds only
/// processes in `job_or_launcher`.
pub fn owned_by_job(job_pids: &[u32], job_or_launcher: &HashSet<u32>) -> Vec<CpuCgroup> {
    let mut groups: Vec<CpuCgroup> = Vec::new();
    for &pid in job_pids {
        let Some(group) = of(pid) else {
            continue;
        };
        if groups.iter().any(|g| g.id == group.id) {
            continue;
        }
        if group.is_leaf() && exclusive(&group.members(), job_or_launcher) {
            groups.push(group);
        }
    }
    groups
}

/// Whether every member of a group is the job's or a launcher's (and there is one at all): the group is the
/// job's alone (a session or a cpu cgroup).
pub(crate) fn exclusive(members: &[u32], job_or_launcher: &HashSet<u32>) -> bool {
    !members.is_empty() && members.iter().all(|m| job_or_launcher.contains(m))
}

/// The cpu cgroup whose id is `id`, searched for in the cpu hierarchy (the guardian names a group by its id).
pub fn find(id: u64) -> Option<CpuCgroup> {
    find_below(&mount()?, id, 0)
}

fn find_below(dir: &Path, id: u64, depth: usize) -> Option<CpuCgroup> {
    // A cgroup hierarchy is shallow; the bound only guards against a loop.
    if depth > 32 {
        return None;
    }
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if entry.metadata().is_ok_and(|m| m.ino() == id) {
            return CpuCgroup::at(path);
        }
        if let Some(found) = find_below(&path, id, depth + 1) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_hierarchy_is_found_in_mountinfo() {
        let v1 = "25 24 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n\
                  26 25 0:23 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n\
                  27 25 0:24 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
        assert_eq!(cpu_mount(v1), Some(PathBuf::from("/sys/fs/cgroup/cpu")));
        let joint = "27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(
            cpu_mount(joint),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"))
        );
        let v2 = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(cpu_mount(v2), Some(PathBuf::from("/sys/fs/cgroup")));
        assert_eq!(
            cpu_mount("26 25 0:23 / /x rw - cgroup cgroup rw,cpuacct\n"),
            None,
            "cpuacct is not cpu"
        );
        assert_eq!(cpu_mount("garbage\n"), None);
    }

    #[test]
    fn the_cpu_path_comes_from_the_cpu_line_or_the_v2_line() {
        assert_eq!(
            cpu_path("12:cpu,cpuacct:/job\n11:memory:/x\n"),
            Some("/job")
        );
        assert_eq!(cpu_path("3:cpuacct:/a\n4:cpu:/b\n"), Some("/b"));
        assert_eq!(cpu_path("0::/user.slice\n"), Some("/user.slice"));
        assert_eq!(cpu_path("4:memory:/x\n"), None);
    }

    #[test]
    fn a_group_with_child_groups_is_not_a_leaf() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cpu.shares"), "1024\n").unwrap();
        let group = CpuCgroup::at(dir.path().to_path_buf()).unwrap();
        assert_eq!(group.knob, Knob::Shares);
        assert_eq!(group.weight().unwrap(), 1024);
        assert!(group.is_leaf());
        std::fs::create_dir(dir.path().join("child")).unwrap();
        assert!(
            !group.is_leaf(),
            "lowering it would lower its children's tasks too"
        );
    }

    #[test]
    fn a_group_gets_its_own_weight_back_only_if_it_still_has_the_agents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cpu.shares"), "15\n").unwrap();
        let group = CpuCgroup::at(dir.path().to_path_buf()).unwrap();
        assert!(give_back(&group, 15, 1024).unwrap());
        assert_eq!(group.weight().unwrap(), 1024);
        // Someone set 500 meanwhile: their change stands.
        group.set_weight(500).unwrap();
        assert!(!give_back(&group, 15, 1024).unwrap());
        assert_eq!(group.weight().unwrap(), 500);
    }

    #[test]
    fn a_group_is_lowered_as_nice_19_lowers_a_task() {
        assert_eq!(lowered(Knob::Shares, 1024), 15);
        assert_eq!(lowered(Knob::Shares, 262144), 3840);
        assert_eq!(lowered(Knob::Shares, 100), 2, "never under the minimum");
        assert_eq!(lowered(Knob::Weight, 100), 1);
        assert_eq!(Knob::Weight.to_shares(100), 1024);
        assert_eq!(Knob::Shares.to_shares(262144), 262144);
    }
}
