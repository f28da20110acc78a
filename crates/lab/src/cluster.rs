//! The emulated cluster: the experiment's cgroups plus its network, under one run id, torn down together.
//! Run ids are `l<pid>x<sequence>` so that leftovers of a lab that was killed outright (SIGKILL, power cut)
//! can be recognised — their pid is gone — and removed by [`remove_stale`] without touching anyone else's.

use crate::cgroup::{pids_in, ExperimentCgroup, CGROUP_ROOT};
use crate::experiment::CompetitorsCgroup;
use crate::netns::{ip, list_namespaces, Network};
use crate::process::Placement;
use anyhow::Result;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// A fresh run id for this process: `l<pid>x<n>`.
pub fn new_run_id() -> String {
    format!(
        "l{}x{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

/// The pid encoded in a lab run id or in a name derived from it (`cosched-l<pid>x<n>[-...]`).
pub(crate) fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("cosched-l")?;
    let (pid, rest) = rest.split_once('x')?;
    let seq_end = rest.find('-').unwrap_or(rest.len());
    rest[..seq_end].parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Whether process `pid` exists.
pub(crate) fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The online CPUs this process may use (its affinity mask).
pub fn available_cpus() -> Result<Vec<u32>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    Ok((0..nix::sched::CpuSet::count() as u32)
        .filter(|&c| set.is_set(c as usize).unwrap_or(false))
        .collect())
}

/// An emulated cluster, torn down on drop: the cgroups first (killing whatever is left inside), then the
/// network namespaces.
#[derive(Debug)]
pub struct Cluster {
    pub run_id: String,
    pub cgroup: ExperimentCgroup,
    pub network: Network,
}

impl Cluster {
    /// Build `nodes` nodes, node i on CPU `cpus[i mod cpus.len()]`, the competitors beside the job.
    pub fn create(
        nodes: u32,
        cpus: &[u32],
        cpu_shares: u64,
        rt_runtime_us: u64,
    ) -> Result<Cluster> {
        Self::create_with(
            nodes,
            cpus,
            cpu_shares,
            rt_runtime_us,
            CompetitorsCgroup::Job,
            false,
        )
    }

    /// [`create`](Self::create), the competitors in the cpu cgroup `competitors` says, and with `local` the
    /// local probes' cpu cgroup.
    pub fn create_with(
        nodes: u32,
        cpus: &[u32],
        cpu_shares: u64,
        rt_runtime_us: u64,
        competitors: CompetitorsCgroup,
        local: bool,
    ) -> Result<Cluster> {
        anyhow::ensure!(!cpus.is_empty(), "no CPUs to place the nodes on");
        let run_id = new_run_id();
        let node_cpus: Vec<u32> = (0..nodes as usize).map(|i| cpus[i % cpus.len()]).collect();
        let cgroup = ExperimentCgroup::create(
            &run_id,
            &node_cpus,
            cpu_shares,
            rt_runtime_us,
            competitors == CompetitorsCgroup::Own,
            local,
        )?;
        let network = Network::create(&run_id, nodes)?;
        Ok(Cluster {
            run_id,
            cgroup,
            network,
        })
    }

    pub fn nodes(&self) -> u32 {
        self.network.nodes()
    }

    pub fn node_cpu(&self, node: u32) -> u32 {
        self.cgroup.node_cpus[node as usize]
    }

    /// How a process of node `node` is placed: its namespace, the experiment cgroups, its CPU.
    pub fn placement(&self, node: u32) -> Result<Placement> {
        let mut placement = Placement::default().netns(&self.network.node_namespace(node))?;
        for dir in self.cgroup.node_dirs(node as usize) {
            placement = placement.cgroup(dir)?;
        }
        Ok(placement.cpu(self.node_cpu(node)))
    }

    /// How a competitor of node `node` is placed: like the node's job processes, but in the competitors' cpu
    /// cgroup (their own with `competitors_cgroup = "own"`).
    pub fn competitor_placement(&self, node: u32) -> Result<Placement> {
        let mut placement = Placement::default().netns(&self.network.node_namespace(node))?;
        for dir in self.cgroup.competitor_dirs(node as usize) {
            placement = placement.cgroup(dir)?;
        }
        Ok(placement.cpu(self.node_cpu(node)))
    }

    /// How the local probe of CPU `cpu` is placed: the probes' cpu cgroup, the experiment's cpuacct and cpuset
    /// groups, pinned to `cpu`, in the host's network namespace (it talks to no one).
    pub fn probe_placement(&self, cpu: u32) -> Result<Placement> {
        let mut placement = Placement::default();
        for dir in self.cgroup.probe_dirs()? {
            placement = placement.cgroup(dir)?;
        }
        Ok(placement.cpu(cpu))
    }

    /// Tear down now (also done on drop), reporting what could not be removed.
    pub fn remove(mut self) -> Result<()> {
        self.teardown()
    }

    /// Remove the cgroups (killing whatever is left inside), then the namespaces. A teardown slower than
    /// [`SLOW_TEARDOWN`] says which part took the time: an interrupted lab must be gone within seconds, and a
    /// CI run once found one still tearing down 10 s after its SIGINT with nothing to say why.
    fn teardown(&mut self) -> Result<()> {
        let started = std::time::Instant::now();
        let cgroups = self.cgroup.remove();
        let cgroups_s = started.elapsed().as_secs_f64();
        let network = self.network.remove();
        let total_s = started.elapsed().as_secs_f64();
        if total_s > SLOW_TEARDOWN.as_secs_f64() {
            eprintln!(
                "cosched lab: tearing down run {} took {total_s:.1} s (cgroups {cgroups_s:.1} s, network namespaces {:.1} s)",
                self.run_id,
                total_s - cgroups_s
            );
        }
        cgroups.and(network)
    }
}

/// A teardown that takes longer than this is reported with its parts' times.
const SLOW_TEARDOWN: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("cosched lab: cleanup: {e:#}");
        }
    }
}

/// Kill every process in the lab's cgroup `path` and its child cgroups, then remove them; whether it is gone.
pub(crate) fn empty_and_remove(path: &Path) -> Result<bool> {
    // Every group below it, children after their parents (a node's groups sit two levels down).
    let mut dirs = vec![path.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        if let Ok(entries) = std::fs::read_dir(&dirs[i]) {
            dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
        i += 1;
    }
    for d in &dirs {
        for pid in pids_in(d) {
            // SAFETY: a process in a cgroup made by a lab run: ours.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    for d in dirs.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
    Ok(!path.exists())
}

/// Remove namespaces and cgroups left by lab processes that no longer exist. Returns what was removed.
pub fn remove_stale() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for ns in list_namespaces()? {
        if owner_pid(&ns).is_some_and(|pid| !alive(pid)) {
            ip(&["netns", "del", &ns])?;
            removed.push(format!("network namespace {ns}"));
        }
    }
    for controller in ["cpu", "cpuacct", "cpuset"] {
        let dir = Path::new(CGROUP_ROOT).join(controller);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if owner_pid(&name).is_none_or(alive) {
                continue;
            }
            let path = entry.path();
            if empty_and_remove(&path)? {
                removed.push(format!("cgroup {}", path.display()));
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_recognises_only_lab_names() {
        assert_eq!(owner_pid("cosched-l123x4-n0"), Some(123));
        assert_eq!(owner_pid("cosched-l123x4"), Some(123));
        assert_eq!(owner_pid("cosched-l123x4-lan"), Some(123));
        assert_eq!(owner_pid("cosched-agent"), None);
        assert_eq!(owner_pid("cosched-lab-n0"), None);
        assert_eq!(owner_pid("cosched-l12x-n0"), None);
    }

    #[test]
    fn run_ids_are_unique_within_a_process() {
        assert_ne!(new_run_id(), new_run_id());
    }
}
