//! The partitions: one cpuset cgroup per job, `<parent>/cosched-scs-<job id>`, under the manager's parent
//! cgroup (`cosched-scs` by default), on cgroup v1 (`/sys/fs/cgroup/cpuset`) or v2 (`/sys/fs/cgroup`,
//! detected by its `cgroup.controllers`).
//!
//! - v1: a cpuset accepts tasks only once both `cpuset.cpus` and `cpuset.mems` are set, so the parent copies
//!   both from the root and each job's cgroup copies the parent's `cpuset.mems` before its `cpuset.cpus`.
//! - v2: the cpuset controller must be enabled in the subtree of every ancestor (`+cpuset` in the root's and
//!   the parent's `cgroup.subtree_control`); a job's cgroup then takes `cpuset.cpus` (and `cpuset.mems`).
//!
//! Rewriting `cpuset.cpus` moves every task of the cgroup at once (the kernel resets their affinity to the
//! new set), which is how the manager re-partitions.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Where cgroup file systems are mounted.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The default parent cgroup of the manager's partitions.
pub const DEFAULT_PARENT: &str = "cosched-scs";
/// A job's cgroup name is this prefix and the job id.
pub const JOB_PREFIX: &str = "cosched-scs-";

/// The cgroup name of job `id`.
pub fn job_cgroup_name(id: i64) -> String {
    format!("{JOB_PREFIX}{id}")
}

/// The job id of a job cgroup's name, `None` for any other name.
pub fn job_of_cgroup_name(name: &str) -> Option<i64> {
    let digits = name.strip_prefix(JOB_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses a kernel CPU list (`0-3,6,8-9`; empty for none).
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let number = |s: &str| -> Result<u32> {
            s.trim()
                .parse()
                .with_context(|| format!("`{s}` in the CPU list `{text}` is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if b < a {
                    bail!("`{part}` in the CPU list `{text}` is a range that runs backwards");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs as a kernel CPU list, ranges collapsed (`[0, 1, 2, 5]` → `0-2,5`).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Which cgroup version holds the cpuset controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// The cpuset hierarchy: its version and the directory of its root cgroup.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    pub version: Version,
    /// `/sys/fs/cgroup/cpuset` (v1) or `/sys/fs/cgroup` (v2).
    pub root: PathBuf,
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("writing `{value}` to {}", path.display()))
}

fn read_trimmed(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?
        .trim()
        .to_string())
}

impl Hierarchy {
    /// Detects the cpuset hierarchy under `mount` (normally [`CGROUP_ROOT`]): v2 when `cgroup.controllers`
    /// exists there (and must list `cpuset`), else v1 when `cpuset/cpuset.cpus` exists.
    pub fn detect_at(mount: &Path) -> Result<Hierarchy> {
        let controllers = mount.join("cgroup.controllers");
        if controllers.exists() {
            let text = read_trimmed(&controllers)?;
            if !text.split_whitespace().any(|c| c == "cpuset") {
                bail!(
                    "cgroup v2 at {} has no cpuset controller (cgroup.controllers: `{text}`); the manager's \
                     partitions are cpusets — enable the cpuset controller in the kernel or the init system",
                    mount.display()
                );
            }
            return Ok(Hierarchy {
                version: Version::V2,
                root: mount.to_path_buf(),
            });
        }
        let v1 = mount.join("cpuset");
        if v1.join("cpuset.cpus").exists() {
            return Ok(Hierarchy {
                version: Version::V1,
                root: v1,
            });
        }
        bail!(
            "no cpuset cgroup hierarchy under {}: neither cgroup v2 (cgroup.controllers) nor a v1 cpuset mount \
             (cpuset/cpuset.cpus); mount one (v1: `mount -t cgroup -o cpuset none {}/cpuset`)",
            mount.display(),
            mount.display()
        )
    }

    /// Detects the machine's hierarchy at [`CGROUP_ROOT`].
    pub fn detect() -> Result<Hierarchy> {
        Self::detect_at(Path::new(CGROUP_ROOT))
    }

    fn cpus_file(&self, dir: &Path) -> PathBuf {
        dir.join("cpuset.cpus")
    }

    fn effective_cpus_file(&self, dir: &Path) -> PathBuf {
        match self.version {
            Version::V1 => dir.join("cpuset.effective_cpus"),
            Version::V2 => dir.join("cpuset.cpus.effective"),
        }
    }

    fn effective_mems(&self, dir: &Path) -> Result<String> {
        let file = match self.version {
            Version::V1 => dir.join("cpuset.effective_mems"),
            Version::V2 => dir.join("cpuset.mems.effective"),
        };
        match read_trimmed(&file) {
            Ok(m) if !m.is_empty() => Ok(m),
            _ => read_trimmed(&dir.join("cpuset.mems")),
        }
    }

    /// The CPUs the root cpuset holds: the machine's CPUs the manager shares out.
    pub fn machine_cpus(&self) -> Result<Vec<u32>> {
        let text = match read_trimmed(&self.effective_cpus_file(&self.root)) {
            Ok(t) if !t.is_empty() => t,
            _ => read_trimmed(&self.cpus_file(&self.root))?,
        };
        let cpus = parse_cpu_list(&text)?;
        if cpus.is_empty() {
            bail!("the root cpuset at {} holds no CPU", self.root.display());
        }
        Ok(cpus)
    }

    /// The parent cgroup `name` (made if missing): v1 copies the root's CPUs and memory nodes into it; v2
    /// enables the cpuset controller for the root's and the parent's children.
    pub fn ensure_parent(&self, name: &str) -> Result<PathBuf> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            bail!("the parent cgroup name `{name}` must be one plain path component");
        }
        let dir = self.root.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating cgroup {}", dir.display())),
        }
        match self.version {
            Version::V1 => {
                let cpus = format_cpu_list(&self.machine_cpus()?);
                write(&self.cpus_file(&dir), &cpus)?;
                write(&dir.join("cpuset.mems"), &self.effective_mems(&self.root)?)?;
            }
            Version::V2 => {
                enable_cpuset_for_children(&self.root)?;
                enable_cpuset_for_children(&dir)?;
            }
        }
        Ok(dir)
    }

    /// A job's cgroup `name` under `parent` with `cpus`: made if missing (a cgroup left by a manager killed
    /// between making it and starting the job is reused), its memory nodes copied from the parent (v1 needs
    /// them before any task), its CPUs set.
    pub fn create_child(&self, parent: &Path, name: &str, cpus: &[u32]) -> Result<PathBuf> {
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating cgroup {}", dir.display())),
        }
        let mems = self.effective_mems(parent)?;
        match self.version {
            Version::V1 => {
                write(&dir.join("cpuset.mems"), &mems)?;
                self.set_cpus(&dir, cpus)?;
            }
            Version::V2 => {
                self.set_cpus(&dir, cpus)?;
                write(&dir.join("cpuset.mems"), &mems)?;
            }
        }
        Ok(dir)
    }

    /// Rewrites a cgroup's `cpuset.cpus` (every task in it moves at once).
    pub fn set_cpus(&self, dir: &Path, cpus: &[u32]) -> Result<()> {
        if cpus.is_empty() {
            bail!("a partition needs at least one CPU ({})", dir.display());
        }
        write(&self.cpus_file(dir), &format_cpu_list(cpus))
    }

    /// A cgroup's `cpuset.cpus`.
    pub fn cpus(&self, dir: &Path) -> Result<Vec<u32>> {
        parse_cpu_list(&read_trimmed(&self.cpus_file(dir))?)
    }
}

/// Adds `+cpuset` to `dir`'s `cgroup.subtree_control` unless it is there already (v2).
fn enable_cpuset_for_children(dir: &Path) -> Result<()> {
    let control = dir.join("cgroup.subtree_control");
    let now = std::fs::read_to_string(&control).unwrap_or_default();
    if now.split_whitespace().any(|c| c == "cpuset") {
        return Ok(());
    }
    write(&control, "+cpuset").with_context(|| {
        format!(
            "enabling the cpuset controller for the children of {} (cgroup v2)",
            dir.display()
        )
    })
}

/// The processes in a cgroup (`cgroup.procs`; exited ones are not listed); empty when it is gone.
pub fn procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Whether the cgroup exists and holds no process.
pub fn is_empty(dir: &Path) -> bool {
    procs(dir).is_empty()
}

/// Sends SIGKILL to every process in the cgroup (v2's `cgroup.kill` where it exists, which also catches a
/// process forking at that moment; elsewhere each listed process). Returns how many were listed.
pub fn kill_all(dir: &Path) -> usize {
    let pids = procs(dir);
    let kill_file = dir.join("cgroup.kill");
    if kill_file.exists() && std::fs::write(&kill_file, "1").is_ok() {
        return pids.len();
    }
    for &pid in &pids {
        // An error means the process is already gone.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    pids.len()
}

/// Removes an empty cgroup directory; `Ok` if it is already gone.
pub fn remove(dir: &Path) -> Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing cgroup {}", dir.display())),
    }
}

/// The cgroup, relative to the hierarchy's root, that process `pid` is in (`/` for the root): the cpuset line
/// of `/proc/<pid>/cgroup` on v1, the `0::` line on v2.
pub fn cgroup_of(version: Version, pid: &str) -> Result<String> {
    let path = format!("/proc/{pid}/cgroup");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, cg) = (parts.next(), parts.next(), parts.next());
        let hit = match version {
            Version::V1 => controllers.is_some_and(|c| c.split(',').any(|c| c == "cpuset")),
            Version::V2 => id == Some("0") && controllers == Some(""),
        };
        if let (true, Some(cg)) = (hit, cg) {
            return Ok(cg.to_string());
        }
    }
    bail!("{path} names no {version:?} cpuset cgroup")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,6,8-9\n").unwrap(),
            vec![0, 1, 2, 3, 6, 8, 9]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("1,0,1").unwrap(), vec![0, 1]);
        assert_eq!(format_cpu_list(&[5, 0, 1, 2]), "0-2,5");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[]), "");
        let err = parse_cpu_list("0-x").unwrap_err().to_string();
        assert!(err.contains("`x`"), "{err}");
        assert!(parse_cpu_list("3-1")
            .unwrap_err()
            .to_string()
            .contains("backwards"));
    }

    #[test]
    fn job_cgroup_names_carry_the_job_id_and_nothing_else_matches() {
        assert_eq!(job_cgroup_name(17), "cosched-scs-17");
        assert_eq!(job_of_cgroup_name("cosched-scs-17"), Some(17));
        assert_eq!(job_of_cgroup_name("cosched-scs-"), None);
        assert_eq!(job_of_cgroup_name("cosched-scs-1x"), None);
        assert_eq!(job_of_cgroup_name("cosched-l12x3"), None);
    }

    /// A fake cgroup tree (plain directories and files) standing for the kernel's: what each version writes.
    fn fake(version: Version) -> (tempfile::TempDir, Hierarchy) {
        let tmp = tempfile::tempdir().unwrap();
        let root = match version {
            Version::V1 => {
                let r = tmp.path().join("cpuset");
                std::fs::create_dir(&r).unwrap();
                std::fs::write(r.join("cpuset.cpus"), "0-3\n").unwrap();
                std::fs::write(r.join("cpuset.effective_cpus"), "0-3\n").unwrap();
                std::fs::write(r.join("cpuset.effective_mems"), "0\n").unwrap();
                r
            }
            Version::V2 => {
                let r = tmp.path().to_path_buf();
                std::fs::write(r.join("cgroup.controllers"), "cpu cpuset memory\n").unwrap();
                std::fs::write(r.join("cgroup.subtree_control"), "memory\n").unwrap();
                std::fs::write(r.join("cpuset.cpus.effective"), "0-3\n").unwrap();
                std::fs::write(r.join("cpuset.mems.effective"), "0\n").unwrap();
                r
            }
        };
        let h = Hierarchy::detect_at(tmp.path()).unwrap();
        assert_eq!(h.version, version);
        assert_eq!(h.root, root);
        (tmp, h)
    }

    #[test]
    fn v1_parent_copies_cpus_and_mems_and_a_child_gets_mems_before_cpus() {
        let (_tmp, h) = fake(Version::V1);
        assert_eq!(h.machine_cpus().unwrap(), vec![0, 1, 2, 3]);
        let parent = h.ensure_parent("p").unwrap();
        assert_eq!(
            std::fs::read_to_string(parent.join("cpuset.cpus")).unwrap(),
            "0-3"
        );
        assert_eq!(
            std::fs::read_to_string(parent.join("cpuset.mems")).unwrap(),
            "0"
        );
        // The fake parent has no effective_mems file: the child falls back to its cpuset.mems.
        let child = h.create_child(&parent, "cosched-scs-1", &[2, 3]).unwrap();
        assert_eq!(
            std::fs::read_to_string(child.join("cpuset.mems")).unwrap(),
            "0"
        );
        assert_eq!(h.cpus(&child).unwrap(), vec![2, 3]);
        // Made twice (a killed manager's leftover): reused.
        h.create_child(&parent, "cosched-scs-1", &[1]).unwrap();
        assert_eq!(h.cpus(&child).unwrap(), vec![1]);
    }

    #[test]
    fn v2_enables_the_cpuset_controller_down_to_the_parent() {
        let (_tmp, h) = fake(Version::V2);
        let parent = h.ensure_parent("p").unwrap();
        assert_eq!(
            std::fs::read_to_string(h.root.join("cgroup.subtree_control")).unwrap(),
            "+cpuset"
        );
        assert_eq!(
            std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap(),
            "+cpuset"
        );
        std::fs::write(parent.join("cpuset.mems.effective"), "0\n").unwrap();
        let child = h.create_child(&parent, "cosched-scs-2", &[0]).unwrap();
        assert_eq!(h.cpus(&child).unwrap(), vec![0]);
        assert_eq!(
            std::fs::read_to_string(child.join("cpuset.mems")).unwrap(),
            "0"
        );
    }

    #[test]
    fn v2_without_cpuset_and_no_hierarchy_are_errors_that_say_what_to_do() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Hierarchy::detect_at(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("no cpuset cgroup hierarchy"), "{err}");
        std::fs::write(tmp.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        let err = Hierarchy::detect_at(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("no cpuset controller"), "{err}");
    }

    #[test]
    fn a_parent_name_must_be_one_component() {
        let (_tmp, h) = fake(Version::V1);
        for bad in ["", "a/b", ".."] {
            assert!(h.ensure_parent(bad).is_err(), "{bad}");
        }
    }
}
