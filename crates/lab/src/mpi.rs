//! Open MPI across the node namespaces. `mpirun` runs in node 0's namespace; the hosts are the nodes'
//! addresses (`10.213.0.<i+1>`), so mpirun sees node 0's address as local and starts rank 0 itself, and for
//! every other node calls its remote launcher (`--mca plm_rsh_agent`), a script the lab writes per cluster that
//! moves itself into the node's cgroups and `exec`s `ip netns exec <node namespace>` with the `orted` command.
//! `orted` then connects back to mpirun over the emulated network and starts the node's rank. Ranks talk over
//! TCP only (`--mca btl tcp,self`, on `eth0`), so every message crosses the veth and is visible to the agent's
//! socket tracepoints; `--bind-to none` leaves CPU placement to the lab's cpusets.

use crate::cluster::Cluster;
use anyhow::{Context, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The files that launch MPI ranks into the nodes of one cluster; removed on drop.
#[derive(Debug)]
pub struct MpiLauncher {
    dir: PathBuf,
    hostfile: PathBuf,
    rsh_agent: PathBuf,
}

impl MpiLauncher {
    pub fn create(cluster: &Cluster) -> Result<MpiLauncher> {
        let dir = std::env::temp_dir().join(format!("cosched-{}-mpi", cluster.run_id));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let launcher = MpiLauncher {
            hostfile: dir.join("hostfile"),
            rsh_agent: dir.join("rsh-agent.sh"),
            dir,
        };
        let mut hosts = String::new();
        let mut cases = String::new();
        for node in 0..cluster.nodes() {
            let addr = cluster.network.node_address(node);
            hosts.push_str(&format!("{addr} slots=1\n"));
            let [_, cpuacct, cpuset] = cluster.cgroup.node_dirs(node as usize);
            cases.push_str(&format!(
                "  {addr}) ns={ns}; groups=\"{cpuacct}/cgroup.procs {cpuset}/cgroup.procs\";;\n",
                ns = cluster.network.node_namespace(node),
                cpuacct = cpuacct.display(),
                cpuset = cpuset.display(),
            ));
        }
        std::fs::write(&launcher.hostfile, hosts)
            .with_context(|| format!("writing {}", launcher.hostfile.display()))?;
        let script = format!(
            "#!/bin/sh\n\
             # Written by `cosched lab` for run {run}: mpirun's remote launcher into the node namespaces.\n\
             # Called as: rsh-agent.sh <host> <orted command...>\n\
             host=\"$1\"; shift\n\
             case \"$host\" in\n{cases}  *) echo \"cosched lab: no node has address $host\" >&2; exit 1;;\n\
             esac\n\
             for g in $groups; do echo $$ > \"$g\" || {{ echo \"cosched lab: cannot join $g\" >&2; exit 1; }}; done\n\
             exec ip netns exec \"$ns\" sh -c \"$*\"\n",
            run = cluster.run_id,
        );
        std::fs::write(&launcher.rsh_agent, script)
            .with_context(|| format!("writing {}", launcher.rsh_agent.display()))?;
        std::fs::set_permissions(&launcher.rsh_agent, std::fs::Permissions::from_mode(0o755))?;
        Ok(launcher)
    }

    /// `mpirun` arguments that start one rank of `program args` per node.
    pub fn mpirun_args(&self, nodes: u32, program: &Path, args: &[String]) -> Vec<String> {
        let mut out: Vec<String> = [
            "--allow-run-as-root",
            "--hostfile",
            &self.hostfile.display().to_string(),
            "-np",
            &nodes.to_string(),
            "--map-by",
            "node",
            "--bind-to",
            "none",
            "--mca",
            "plm_rsh_agent",
            &self.rsh_agent.display().to_string(),
            "--mca",
            "btl",
            "tcp,self",
            "--mca",
            "btl_tcp_if_include",
            "eth0",
            "--mca",
            "oob_tcp_if_include",
            "eth0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        out.push(program.display().to_string());
        out.extend(args.iter().cloned());
        out
    }
}

impl Drop for MpiLauncher {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
