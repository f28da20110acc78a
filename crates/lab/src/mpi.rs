//! Open MPI across the node namespaces. `mpirun` runs in node 0's namespace; the hosts are the nodes'
//! addresses (`10.213.0.<i+1>`), so mpirun sees node 0's address as local and starts rank 0 itself, and for
//! every other node calls its remote launcher (`--mca plm_rsh_agent`), a script the lab writes per cluster that
//! moves itself into the node's cgroups and `exec`s `ip netns exec <node namespace>` with the `orted` command.
//! `orted` then connects back to mpirun over the emulated network and starts the node's rank. Ranks talk over
//! TCP only (`--mca btl tcp,self`, on `eth0`), so every message crosses the veth and is visible to the agent's
//! socket tracepoints; `--bind-to none` leaves CPU placement to the lab's cpusets.
//!
//! `mpirun --allow-run-as-root` executes the remote launcher as root, so its directory must be one nobody else
//! can have prepared: a fresh directory with an unpredictable name, created by `mkdtemp` (mode 0700, fails
//! rather than reuse), and files created new inside it (never following a planted link). An earlier version
//! used a predictable `/tmp/cosched-<run id>-mpi` and accepted it if it already existed: any local user could
//! pre-create it with their own `rsh-agent.sh` and have root run it (issue 21, item 1).

use crate::cluster::Cluster;
use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The files that launch MPI ranks into the nodes of one cluster; removed on drop (with their directory).
#[derive(Debug)]
pub struct MpiLauncher {
    /// Held for its `Drop`, which removes the directory and both files.
    #[allow(dead_code)]
    dir: tempfile::TempDir,
    hostfile: PathBuf,
    rsh_agent: PathBuf,
    /// The LAMMPS input of a `lammps` experiment, in the same private directory.
    lammps_deck: Option<PathBuf>,
}

impl MpiLauncher {
    pub fn create(cluster: &Cluster) -> Result<MpiLauncher> {
        let mut hosts = String::new();
        let mut cases = String::new();
        for node in 0..cluster.nodes() {
            let addr = cluster.network.node_address(node);
            hosts.push_str(&format!("{addr} slots=1\n"));
            // The node's cpu group too: with competitors in their own groups each node's ranks have one.
            let [cpu, cpuacct, cpuset] = cluster.cgroup.node_dirs(node as usize);
            cases.push_str(&format!(
                "  {addr}) ns={ns}; groups=\"{cpu}/cgroup.procs {cpuacct}/cgroup.procs {cpuset}/cgroup.procs\";;\n",
                ns = cluster.network.node_namespace(node),
                cpu = cpu.display(),
                cpuacct = cpuacct.display(),
                cpuset = cpuset.display(),
            ));
        }
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
        Self::write(&std::env::temp_dir(), &hosts, &script)
    }

    /// Writes `hostfile` and the executable `rsh-agent.sh` into a new private directory under `parent`.
    fn write(parent: &Path, hosts: &str, script: &str) -> Result<MpiLauncher> {
        let dir = tempfile::Builder::new()
            .prefix("cosched-mpi-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)
            .with_context(|| format!("creating a private directory in {}", parent.display()))?;
        let hostfile = dir.path().join("hostfile");
        let rsh_agent = dir.path().join("rsh-agent.sh");
        create_new(&hostfile, 0o600, hosts)?;
        create_new(&rsh_agent, 0o700, script)?;
        Ok(MpiLauncher {
            dir,
            hostfile,
            rsh_agent,
            lammps_deck: None,
        })
    }

    /// Writes `deck` (a LAMMPS input) into the launcher's private directory, for every run of the experiment.
    pub fn with_lammps_deck(mut self, deck: &str) -> Result<MpiLauncher> {
        let path = self.dir.path().join("in.lammps");
        create_new(&path, 0o644, deck)?;
        self.lammps_deck = Some(path);
        Ok(self)
    }

    /// The LAMMPS input written by [`MpiLauncher::with_lammps_deck`].
    pub fn lammps_deck(&self) -> Option<&Path> {
        self.lammps_deck.as_deref()
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

/// Creates `path` with `mode` and `contents`; fails if anything (a file, a link) is already there.
fn create_new(path: &Path, mode: u32, contents: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_prepared_directory_is_never_used() {
        // What an attacker could do before: pre-create the directory the lab would pick, with their own script.
        let parent = tempfile::tempdir().unwrap();
        let planted = parent.path().join("cosched-mpi-planted");
        std::fs::create_dir(&planted).unwrap();
        std::fs::write(planted.join("rsh-agent.sh"), "#!/bin/sh\necho owned\n").unwrap();

        let launcher = MpiLauncher::write(
            parent.path(),
            "10.0.0.1 slots=1\n",
            "#!/bin/sh\nexec true\n",
        )
        .unwrap();
        let dir = launcher.dir.path().to_path_buf();
        assert_ne!(dir, planted);
        assert!(launcher.rsh_agent.starts_with(&dir) && launcher.hostfile.starts_with(&dir));
        // The directory is new and private; the script is ours and executable by its owner only.
        let meta = std::fs::metadata(&dir).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
        assert_eq!(
            std::fs::read_to_string(&launcher.rsh_agent).unwrap(),
            "#!/bin/sh\nexec true\n"
        );
        let script_mode = std::fs::metadata(&launcher.rsh_agent)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(script_mode & 0o777, 0o700);
        // mpirun is pointed at our script, not the planted one.
        let args = launcher.mpirun_args(2, Path::new("/bin/true"), &[]);
        let agent = args.iter().position(|a| a == "plm_rsh_agent").unwrap() + 1;
        assert_eq!(args[agent], launcher.rsh_agent.display().to_string());
        // The planted files are left alone, and ours go away with the launcher.
        drop(launcher);
        assert!(!dir.exists());
        assert!(planted.join("rsh-agent.sh").exists());
    }

    #[test]
    fn two_launchers_never_share_a_directory() {
        let parent = tempfile::tempdir().unwrap();
        let a = MpiLauncher::write(parent.path(), "", "").unwrap();
        let b = MpiLauncher::write(parent.path(), "", "").unwrap();
        assert_ne!(a.dir.path(), b.dir.path());
    }

    #[test]
    fn a_planted_link_is_not_followed() {
        // create_new refuses an existing path, a symbolic link included (O_CREAT | O_EXCL).
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("victim");
        std::fs::write(&target, "precious").unwrap();
        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link, 0o600, "overwritten").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }
}
