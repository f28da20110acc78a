//! The experiment's cgroups (v1, `/sys/fs/cgroup/<controller>`):
//!
//! - `cpu/cosched-<run id>`: high `cpu.shares`, so foreign load on the machine barely touches the experiment,
//!   while the job and its competitors compete normally inside it; `cpu.rt_runtime_us > 0`, because with RT
//!   group scheduling on, SCHED_FIFO (the agent's boost) is refused inside a cpu cgroup without RT runtime;
//! - `cpuacct/cosched-<run id>/n<i>`: the CPU time of everything node i runs (the parent sums all nodes), to
//!   tell the job's CPU time from the competitors' and the experiment's from the foreign load;
//! - `cpuset/cosched-<run id>/n<i>`: node i's CPU;
//! - with `lab.competitors_cgroup = "own"`, each node a machine of its own inside the experiment's cpu cgroup:
//!   `cpu/cosched-<run id>/n<i>` (the node's CPU is all it runs on), holding `job` (node i's job processes, RT
//!   runtime for the boosts) and `competitors` (node i's competitors), siblings at equal `cpu.shares`: on each
//!   CPU the job's group and the competitors' halve it, and a job's rank is alone in its group as on a real
//!   node (the group an agent may lower for a job that must pay back a boosted burst, `cosched_agent::cpu_cgroup`;
//!   one group spanning both nodes' ranks would be no rank's alone). The RT runtime is split evenly over the
//!   nodes (the kernel admits children's bandwidth only up to their parent's);
//! - with `lab.local_probe = true`, `cpu/cosched-<run id>-local`: the local probes' cpu cgroup, a sibling of the
//!   experiment's with the same `cpu.shares` and no RT runtime.
//!
//! (`crate::experiment` gives the rules.) Their names carry the run id, so `crate::cluster::remove_stale`
//! removes them with the rest when their lab is dead.
//!
//! Dropping the guard kills whatever is still inside (only processes the lab placed there, and their
//! descendants) and removes the directories.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where cgroup v1 controllers are mounted.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("writing `{value}` to {}", path.display()))
}

fn read_trimmed(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?
        .trim()
        .to_string())
}

/// How long a lab waits for the RT runtime of a cgroup removed a moment ago: the kernel returns it to the parent
/// only once the cgroup is freed, after an RCU grace period (measured here: the next lab's write failed at once
/// and succeeded 50 ms later; a lab run right after a killed one failed on it).
const RT_RUNTIME_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Writes `cpu.rt_runtime_us` of `dir`, retrying while the kernel may still be releasing a removed cgroup's
/// runtime (EINVAL with no other cgroup holding any), for [`RT_RUNTIME_RELEASE_WAIT`] at most.
fn write_rt_runtime(dir: &Path, rt_runtime_us: u64) -> Result<()> {
    let path = dir.join("cpu.rt_runtime_us");
    let parent = dir.parent().unwrap_or(Path::new(CGROUP_ROOT));
    let t0 = std::time::Instant::now();
    loop {
        match write(&path, &rt_runtime_us.to_string()) {
            Ok(()) => return Ok(()),
            Err(_)
                if t0.elapsed() < RT_RUNTIME_RELEASE_WAIT && rt_holders(parent, dir) == "none" =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The other cpu cgroups directly under `parent` that hold RT runtime, as `name=µs` text.
fn rt_holders(parent: &Path, except: &Path) -> String {
    let holders: Vec<String> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path() != except && e.path().is_dir())
        .filter_map(|e| {
            let us = read_trimmed(&e.path().join("cpu.rt_runtime_us")).ok()?;
            (us != "0").then(|| format!("{}={us}", e.file_name().to_string_lossy()))
        })
        .collect();
    if holders.is_empty() {
        "none".into()
    } else {
        holders.join(", ")
    }
}

fn usage_s(dir: &Path) -> Result<f64> {
    let ns: u64 = read_trimmed(&dir.join("cpuacct.usage"))?
        .parse()
        .context("parsing cpuacct.usage")?;
    Ok(ns as f64 * 1e-9)
}

/// The share of the experiment's CPUs that its job and competitors may never take (percent): the kernel's own
/// threads (workqueue workers, the RCU grace-period kthread) live in the root cpu cgroup and need it.
///
/// On this kernel (6.18, EEVDF) a cpu cgroup holding CPU hogs *and* tasks that wake often starves the root
/// cgroup whatever the weights (`crate::experiment`, local probe rule). With an Open MPI job beside one hog per
/// CPU that stalled `mpirun` for good: measured 2026-11-27, 2 of 2 invocations of 24 one-second ping-pong runs at
/// K = 1 hung at the 5th repetition, `mpirun` in `D` state in `__flush_work < n_tty_poll` (its pty's flip-buffer
/// work never ran) and in `submit_bio_wait` (an ext4 discard's completion), while the kernel logged
/// `workqueue lockup ... stuck for 34-57 s` and `rcu_preempt kthread starved for 14752 jiffies`. With the
/// experiment's cpu cgroup capped at 98 % of its CPUs by CFS bandwidth control the same invocation ran all 24
/// runs twice, no lockup logged. The cap throttles the experiment's fair-class tasks together for 2 ms in 100 ms
/// only when they would use every CPU; SCHED_FIFO boosts are bounded by `cpu.rt_runtime_us` instead.
pub const KERNEL_HEADROOM_PERCENT: u64 = 2;

/// `cpu.cfs_quota_us` for a cgroup on `cpus` CPUs with period `period_us`: all but [`KERNEL_HEADROOM_PERCENT`].
pub fn quota_leaving_headroom_us(period_us: u64, cpus: usize) -> u64 {
    period_us * cpus as u64 * (100 - KERNEL_HEADROOM_PERCENT) / 100
}

/// Cap the cpu cgroup `dir` (on `cpus` CPUs) at all but [`KERNEL_HEADROOM_PERCENT`] of them.
fn leave_kernel_headroom(dir: &Path, cpus: usize) -> Result<()> {
    let period_us: u64 = read_trimmed(&dir.join("cpu.cfs_period_us"))?
        .parse()
        .context("parsing cpu.cfs_period_us")?;
    write(
        &dir.join("cpu.cfs_quota_us"),
        &quota_leaving_headroom_us(period_us, cpus).to_string(),
    )
    .with_context(|| format!("capping {} with CFS bandwidth control", dir.display()))
}

/// The pids in a cgroup directory (`cgroup.procs`); empty if the directory is gone.
pub fn pids_in(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A node's cpu cgroups with `competitors_cgroup = "own"`.
#[derive(Debug)]
pub struct NodeCpuGroups {
    pub job: PathBuf,
    pub competitors: PathBuf,
}

/// `cpu.shares` of a node's job and competitors' groups: equal, so they halve the node's CPU (their parent's
/// weight is the experiment's).
const NODE_GROUP_SHARES: u64 = 1024;

/// The experiment's cgroups; removed when dropped.
#[derive(Debug)]
pub struct ExperimentCgroup {
    pub cpu_dir: PathBuf,
    /// Each node's job and competitors' cpu cgroups (`competitors_cgroup = "own"`); empty: both use `cpu_dir`.
    pub node_cpu_dirs: Vec<NodeCpuGroups>,
    /// Whether the competitors get cgroups of their own (`node_cpu_dirs` is filled once the nodes are made).
    competitors_own: bool,
    /// The local probes' cpu cgroup (`local_probe = true`).
    pub local_cpu_dir: Option<PathBuf>,
    pub cpuacct_dir: PathBuf,
    pub cpuset_dir: PathBuf,
    /// One cpuset per node.
    pub node_cpusets: Vec<PathBuf>,
    /// One cpuacct group per node.
    pub node_cpuaccts: Vec<PathBuf>,
    /// Each node's CPU.
    pub node_cpus: Vec<u32>,
    /// Directories made so far, removed in reverse order.
    created: Vec<PathBuf>,
}

impl ExperimentCgroup {
    /// Make the cgroups for `node_cpus.len()` nodes, node i on CPU `node_cpus[i]`; with `competitors_own`
    /// each node's job and competitors' cpu cgroups, and with `local` the local probes',
    /// `cpu/cosched-<run id>-local`, at the same `cpu_shares` as the experiment's (module doc).
    pub fn create(
        run_id: &str,
        node_cpus: &[u32],
        cpu_shares: u64,
        rt_runtime_us: u64,
        competitors_own: bool,
        local: bool,
    ) -> Result<ExperimentCgroup> {
        let root = Path::new(CGROUP_ROOT);
        let name = format!("cosched-{run_id}");
        let mut cg = ExperimentCgroup {
            cpu_dir: root.join("cpu").join(&name),
            node_cpu_dirs: Vec::new(),
            competitors_own,
            local_cpu_dir: local.then(|| root.join("cpu").join(format!("{name}-local"))),
            cpuacct_dir: root.join("cpuacct").join(&name),
            cpuset_dir: root.join("cpuset").join(&name),
            node_cpusets: Vec::new(),
            node_cpuaccts: Vec::new(),
            node_cpus: node_cpus.to_vec(),
            created: Vec::new(),
        };
        for dir in [
            cg.cpu_dir.clone(),
            cg.cpuacct_dir.clone(),
            cg.cpuset_dir.clone(),
        ] {
            std::fs::create_dir(&dir)
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            cg.created.push(dir);
        }
        let distinct_cpus = {
            let mut c = node_cpus.to_vec();
            c.sort_unstable();
            c.dedup();
            c.len()
        };
        write(&cg.cpu_dir.join("cpu.shares"), &cpu_shares.to_string())?;
        leave_kernel_headroom(&cg.cpu_dir, distinct_cpus)?;
        write_rt_runtime(&cg.cpu_dir, rt_runtime_us).with_context(|| {
            format!(
                "giving the experiment cgroup {rt_runtime_us} µs of RT runtime per second: the parent has {} µs and \
                 other cgroups hold {} — lower `lab.rt_runtime_us` in the experiment file or wait for them",
                read_trimmed(&root.join("cpu/cpu.rt_runtime_us")).unwrap_or_else(|_| "?".into()),
                rt_holders(&root.join("cpu"), &cg.cpu_dir)
            )
        })?;
        if let Some(dir) = cg.local_cpu_dir.clone() {
            std::fs::create_dir(&dir)
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            cg.created.push(dir.clone());
            // The same weight as the experiment's cgroup (the rules in crate::experiment). A new cgroup has no
            // RT runtime, and nothing in it needs any.
            write(&dir.join("cpu.shares"), &cpu_shares.to_string())?;
            leave_kernel_headroom(&dir, distinct_cpus)?;
        }
        let mems = read_trimmed(&root.join("cpuset/cpuset.mems"))?;
        let mut all: Vec<u32> = node_cpus.to_vec();
        all.sort_unstable();
        all.dedup();
        let all: Vec<String> = all.iter().map(u32::to_string).collect();
        write(&cg.cpuset_dir.join("cpuset.cpus"), &all.join(","))?;
        write(&cg.cpuset_dir.join("cpuset.mems"), &mems)?;
        for (i, cpu) in node_cpus.iter().enumerate() {
            let dir = cg.cpuset_dir.join(format!("n{i}"));
            std::fs::create_dir(&dir)
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            cg.created.push(dir.clone());
            write(&dir.join("cpuset.cpus"), &cpu.to_string())?;
            write(&dir.join("cpuset.mems"), &mems)?;
            cg.node_cpusets.push(dir);
            let dir = cg.cpuacct_dir.join(format!("n{i}"));
            std::fs::create_dir(&dir)
                .with_context(|| format!("creating cgroup {}", dir.display()))?;
            cg.created.push(dir.clone());
            cg.node_cpuaccts.push(dir);
        }
        if cg.competitors_own {
            let node_rt_us = rt_runtime_us / node_cpus.len().max(1) as u64;
            for i in 0..node_cpus.len() {
                let node = cg.cpu_dir.join(format!("n{i}"));
                let groups = NodeCpuGroups {
                    job: node.join("job"),
                    competitors: node.join("competitors"),
                };
                for dir in [&node, &groups.job, &groups.competitors] {
                    std::fs::create_dir(dir)
                        .with_context(|| format!("creating cgroup {}", dir.display()))?;
                    cg.created.push(dir.clone());
                }
                write_rt_runtime(&node, node_rt_us)?;
                write_rt_runtime(&groups.job, node_rt_us)?;
                for dir in [&groups.job, &groups.competitors] {
                    write(&dir.join("cpu.shares"), &NODE_GROUP_SHARES.to_string())?;
                }
                cg.node_cpu_dirs.push(groups);
            }
        }
        Ok(cg)
    }

    /// CPU time used by everything in the experiment so far (`cpuacct.usage`, all nodes), seconds.
    pub fn cpu_usage_s(&self) -> Result<f64> {
        usage_s(&self.cpuacct_dir)
    }

    /// CPU time used by everything on node `node` so far, seconds.
    pub fn node_cpu_usage_s(&self, node: usize) -> Result<f64> {
        usage_s(&self.node_cpuaccts[node])
    }

    /// The directories a job process of node `node` joins: its cpu cgroup (the node's job group, or the
    /// experiment's), the node's cpuacct and the node's cpuset.
    pub fn node_dirs(&self, node: usize) -> [&Path; 3] {
        [
            self.node_cpu_dirs
                .get(node)
                .map_or(&self.cpu_dir, |g| &g.job),
            &self.node_cpuaccts[node],
            &self.node_cpusets[node],
        ]
    }

    /// The directories a competitor of node `node` joins: its cpu cgroup (the node's competitors' group, or the
    /// experiment's), the node's cpuacct and the node's cpuset.
    pub fn competitor_dirs(&self, node: usize) -> [&Path; 3] {
        [
            self.node_cpu_dirs
                .get(node)
                .map_or(&self.cpu_dir, |g| &g.competitors),
            &self.node_cpuaccts[node],
            &self.node_cpusets[node],
        ]
    }

    /// The directories a local probe joins: the probes' cpu cgroup, the experiment's cpuacct group (in no
    /// node's: its CPU time is the experiment's, not a rank's) and the experiment's cpuset.
    pub fn probe_dirs(&self) -> Result<[&Path; 3]> {
        let cpu = self
            .local_cpu_dir
            .as_deref()
            .context("the experiment cgroups were made without the local probes' cpu cgroup")?;
        Ok([cpu, &self.cpuacct_dir, &self.cpuset_dir])
    }

    /// Kill every process left in the experiment's cgroups, wait until they are gone, remove the directories.
    pub fn remove(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut pids: Vec<u32> = self.created.iter().flat_map(|d| pids_in(d)).collect();
            pids.sort_unstable();
            pids.dedup();
            if pids.is_empty() {
                break;
            }
            for pid in &pids {
                // SAFETY: these processes were placed in our cgroup by the lab (or descend from them).
                unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
            }
            if Instant::now() >= deadline {
                bail!("processes {pids:?} did not leave the experiment cgroups after SIGKILL");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut failures = Vec::new();
        while let Some(dir) = self.created.pop() {
            // A cgroup directory can be busy for a moment after its last task died.
            let mut tries = 0;
            while let Err(e) = std::fs::remove_dir(&dir) {
                if e.kind() == std::io::ErrorKind::NotFound {
                    break;
                }
                tries += 1;
                if tries > 50 {
                    failures.push(format!("{}: {e}", dir.display()));
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("could not remove cgroups: {}", failures.join("; "))
        }
    }
}

impl Drop for ExperimentCgroup {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("cosched lab: cleanup: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_leaves_the_kernel_its_headroom_on_every_cpu_count() {
        assert_eq!(quota_leaving_headroom_us(100_000, 1), 98_000);
        assert_eq!(quota_leaving_headroom_us(100_000, 2), 196_000);
        assert_eq!(quota_leaving_headroom_us(250_000, 64), 15_680_000);
    }
}
