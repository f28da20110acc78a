//! Rank-order placement inside a partition (seed `001_cc73854eda2a0ea6.txt` §3.1: a user-level scheduler maps a
//! job's processes onto its CPUs "in an ordered way using the internal MPI identification").
//!
//! Rank `r` of a job of `P` processes on a partition of `A` CPUs goes to the partition's CPU
//! `floor(r · A / P)` ([`cosched_policy::scs::rank_slot`]): consecutive ranks share a CPU. The manager learns a
//! process's rank from what MPI launchers put in its environment (`OMPI_COMM_WORLD_RANK` for Open MPI,
//! `PMIX_RANK`, `PMI_RANK` for MPICH / Slurm) or, for the cosched benchmark programs, from `--rank N` on its
//! command line. Processes without a rank (`mpirun`, `orted`, a shell) keep the whole partition. Every thread
//! of a ranked process is pinned, and the pinning is checked at each quantum: a rewrite of `cpuset.cpus`
//! resets every task's affinity to the new partition, and a new thread starts with its creator's.

use cosched_policy::scs::rank_slot;
use std::path::Path;

/// The environment variables that carry an MPI rank, in the order they are trusted.
pub const RANK_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"];

/// The rank in a process's environment (`environ`: `NAME=value` strings separated by NUL bytes) or command line
/// (`cmdline`: arguments separated by NUL bytes); `None` if it carries none.
pub fn rank_of(environ: &[u8], cmdline: &[u8]) -> Option<u32> {
    let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
    for name in RANK_VARIABLES {
        let prefix = format!("{name}=");
        if let Some(value) = vars.iter().find_map(|v| v.strip_prefix(prefix.as_bytes())) {
            return std::str::from_utf8(value).ok()?.parse().ok();
        }
    }
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    for (i, arg) in args.iter().enumerate() {
        if let Some(value) = arg.strip_prefix(b"--rank=") {
            return std::str::from_utf8(value).ok()?.parse().ok();
        }
        if *arg == b"--rank" {
            return std::str::from_utf8(args.get(i + 1)?).ok()?.parse().ok();
        }
    }
    None
}

/// The CPU (an id from `partition`) of rank `rank` of a job of `procs` processes; `None` for a rank outside the
/// job or an empty partition.
pub fn cpu_of_rank(rank: u32, procs: u32, partition: &[u32]) -> Option<u32> {
    if rank >= procs || partition.is_empty() {
        return None;
    }
    partition
        .get(rank_slot(rank, procs, partition.len() as u32) as usize)
        .copied()
}

/// The ranked processes among `pids` (a job of `procs` processes on `partition`), `(rank, pid, cpu)` in rank
/// order, each with its rank's CPU. Processes without a rank, with one outside the job, or gone are left out.
pub fn ranked_processes(pids: &[u32], procs: u32, partition: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut ranked: Vec<(u32, u32, u32)> = pids
        .iter()
        .filter_map(|&pid| {
            let proc_dir = Path::new("/proc").join(pid.to_string());
            let environ = std::fs::read(proc_dir.join("environ")).ok()?;
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            let rank = rank_of(&environ, &cmdline)?;
            Some((rank, pid, cpu_of_rank(rank, procs, partition)?))
        })
        .collect();
    ranked.sort();
    ranked
}

/// The threads of process `pid`, ascending; none if it is gone.
pub fn threads_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<u32> = tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort();
    tids
}

/// Pins every thread of every ranked process in `pids` (a job of `procs` processes) to its rank's CPU of
/// `partition`. Returns how many threads it moved (those already there are left alone). Processes that exit
/// meanwhile are skipped.
pub fn pin_ranks(pids: &[u32], procs: u32, partition: &[u32]) -> usize {
    let mut moved = 0;
    for (_, pid, cpu) in ranked_processes(pids, procs, partition) {
        for tid in threads_of(pid) {
            let tid = nix::unistd::Pid::from_raw(tid as i32);
            let already = nix::sched::sched_getaffinity(tid).is_ok_and(|set| {
                (0..nix::sched::CpuSet::count())
                    .all(|c| set.is_set(c).unwrap_or(false) == (c == cpu as usize))
            });
            if already {
                continue;
            }
            let mut set = nix::sched::CpuSet::new();
            if set.set(cpu as usize).is_ok() && nix::sched::sched_setaffinity(tid, &set).is_ok() {
                moved += 1;
            }
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_comes_from_the_mpi_environment_first_then_the_command_line() {
        let env = b"PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0PMI_RANK=9\0";
        assert_eq!(rank_of(env, b"lmp\0-in\0x"), Some(3));
        assert_eq!(
            rank_of(b"PMI_RANK=9\0PMIX_RANK=4\0", b""),
            Some(4),
            "PMIX before PMI"
        );
        assert_eq!(rank_of(b"PMI_RANK=9\0", b""), Some(9));
        assert_eq!(
            rank_of(
                b"HOME=/\0",
                b"cosched-pingpong\0--rank\x001\x00--ranks\x002\x00"
            ),
            Some(1)
        );
        assert_eq!(rank_of(b"", b"prog\0--rank=5\0"), Some(5));
        assert_eq!(
            rank_of(b"X_OMPI_COMM_WORLD_RANK=1\0", b"mpirun\x00-np\x002\x00"),
            None
        );
        assert_eq!(
            rank_of(b"OMPI_COMM_WORLD_RANK=x\0", b""),
            None,
            "not a number"
        );
        assert_eq!(rank_of(b"", b"prog\0--rank"), None, "no value");
    }

    #[test]
    fn consecutive_ranks_share_a_cpu_in_partition_order() {
        // 4 ranks on CPUs {2, 5}: ranks 0, 1 on 2; ranks 2, 3 on 5.
        let cpus: Vec<Option<u32>> = (0..4).map(|r| cpu_of_rank(r, 4, &[2, 5])).collect();
        assert_eq!(cpus, [Some(2), Some(2), Some(5), Some(5)]);
        // 2 ranks alone on 2 CPUs: one each; shrunk to one CPU: both there.
        assert_eq!(cpu_of_rank(1, 2, &[0, 1]), Some(1));
        assert_eq!(cpu_of_rank(1, 2, &[1]), Some(1));
        assert_eq!(cpu_of_rank(2, 2, &[0, 1]), None, "not a rank of this job");
        assert_eq!(cpu_of_rank(0, 2, &[]), None);
    }

    #[test]
    fn pinning_moves_a_ranked_process_once_and_leaves_others_alone() {
        let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        let allowed: Vec<u32> = (0..nix::sched::CpuSet::count())
            .filter(|&c| cpus.is_set(c).unwrap_or(false))
            .map(|c| c as u32)
            .collect();
        let spawn = |rank: Option<&str>| {
            let mut c = std::process::Command::new("sleep");
            c.arg("30");
            if let Some(r) = rank {
                c.env("OMPI_COMM_WORLD_RANK", r);
            }
            let child = c.spawn().unwrap();
            // The rank is read from the exec'd program's environment: wait for the exec (before it, /proc shows
            // the forked test process's environment, without the rank; CI once pinned nothing that way).
            let comm = format!("/proc/{}/comm", child.id());
            let t0 = std::time::Instant::now();
            while std::fs::read_to_string(&comm).map_or(true, |c| c.trim() != "sleep") {
                assert!(
                    t0.elapsed() < std::time::Duration::from_secs(5),
                    "sleep never started"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            child
        };
        let (mut ranked, mut plain) = (spawn(Some("1")), spawn(None));
        let pids = [ranked.id(), plain.id()];
        let target = cpu_of_rank(1, 2, &allowed).unwrap();
        assert_eq!(
            pin_ranks(&pids, 2, &allowed),
            1,
            "the ranked process's one thread"
        );
        assert_eq!(
            pin_ranks(&pids, 2, &allowed),
            0,
            "already there: nothing to do"
        );
        let status = std::fs::read_to_string(format!("/proc/{}/status", ranked.id())).unwrap();
        assert!(
            status.contains(&format!("Cpus_allowed_list:\t{target}\n")),
            "rank 1 on CPU {target}: {status}"
        );
        let status = std::fs::read_to_string(format!("/proc/{}/status", plain.id())).unwrap();
        assert!(
            !status.contains(&format!("Cpus_allowed_list:\t{target}\n")) || allowed.len() == 1,
            "a process without a rank keeps the partition"
        );
        for c in [&mut ranked, &mut plain] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}
