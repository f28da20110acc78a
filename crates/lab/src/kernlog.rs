//! What the kernel said about its own threads during a run: starvation warnings from `/dev/kmsg`.
//!
//! ## Problem
//! The lab's competitors run at `cpu.shares` 262144, so the kernel's own threads in the root cpu cgroup
//! (workqueue workers, the RCU grace-period thread) get about 1/257 of a CPU while a run lasts. Usually that is
//! enough; when something adds kernel work (an agent that made and freed a `/proc` dentry per descriptor every
//! tick, 2026-11-29, `docs/lab-pred.md`) the kernel logs `rcu_preempt kthread starved` or `workqueue lockup`,
//! and whatever waits on that work — an `mpirun` flushing a pseudo-terminal, a cgroup attach, a network
//! namespace's removal — waits for a minute. A run measured then is not a measurement of the scheduler, and a run
//! that timed out for it says only "did not finish". So the lab reads the kernel log after every run and says so.
//!
//! ## Approach
//! `/dev/kmsg` opened once per lab (root), positioned at its end (`SEEK_END`), read without blocking after each
//! run: every record since (one per `read`, `pri,seq,usec,flags;message`) whose message names starvation
//! ([`STARVATION_MARKERS`]) is kept with the run. Where `/dev/kmsg` cannot be read (not root, a container without
//! it) nothing is reported, and the lab says once that it cannot look.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

/// Kernel messages that say its own threads were starved of CPU, or a task hung waiting on their work.
pub const STARVATION_MARKERS: &[&str] = &[
    "workqueue lockup",
    "kthread starved",
    "rcu_preempt detected stalls",
    "rcu_sched detected stalls",
    "blocked for more than",
    "soft lockup",
];

/// The message part of a `/dev/kmsg` record (`pri,seq,usec,flags[,...];message`), without continuation lines
/// (those start with a space after the first newline).
pub fn message_of(record: &str) -> &str {
    let message = record.split_once(';').map_or(record, |(_, m)| m);
    message.lines().next().unwrap_or("").trim_end()
}

/// Whether a kernel message is a starvation warning.
pub fn is_starvation(message: &str) -> bool {
    STARVATION_MARKERS.iter().any(|m| message.contains(m))
}

/// How a run's warnings are named (stderr, an error, `lab.md`): their count and the first.
pub fn summary(warnings: &[String]) -> String {
    match warnings.first() {
        Some(first) => format!(
            "{} starvation warning(s), the first: {first}",
            warnings.len()
        ),
        None => "no starvation warning".to_string(),
    }
}

/// The kernel log from where the lab began, read run by run.
pub struct KernelLog {
    kmsg: Option<File>,
}

impl KernelLog {
    /// Opens `/dev/kmsg` at its end. Without it the log reads as empty, and why is printed once.
    pub fn open() -> KernelLog {
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f));
        match opened {
            Ok(f) => KernelLog { kmsg: Some(f) },
            Err(e) => {
                eprintln!(
                    "cosched lab: cannot read the kernel log (/dev/kmsg: {e}); starvation of the kernel's own \
                     threads during a run will not be reported"
                );
                KernelLog { kmsg: None }
            }
        }
    }

    /// The starvation warnings the kernel logged since the last call (each message's first line).
    pub fn new_warnings(&mut self) -> Vec<String> {
        let Some(kmsg) = self.kmsg.as_mut() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match kmsg.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let record = String::from_utf8_lossy(&buf[..n]);
                    let message = message_of(&record);
                    if is_starvation(message) {
                        found.push(message.to_string());
                    }
                }
                // Records overwritten before they were read: go on with the next one still there.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break, // EAGAIN: nothing more for now
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_message_is_its_first_line_after_the_header() {
        assert_eq!(
            message_of("4,1234,5678901,-;BUG: workqueue lockup - pool cpus=1 node=0 flags=0x0 nice=0 stuck for 39s!\n"),
            "BUG: workqueue lockup - pool cpus=1 node=0 flags=0x0 nice=0 stuck for 39s!"
        );
        assert_eq!(
            message_of("6,7,8,c;first line\n SUBSYSTEM=net\n DEVICE=n1\n"),
            "first line"
        );
        assert_eq!(message_of("no header at all"), "no header at all");
    }

    #[test]
    fn a_runs_warnings_are_summed_up_by_their_count_and_the_first() {
        let w = [
            "a workqueue lockup".to_string(),
            "b kthread starved".to_string(),
        ];
        assert_eq!(
            summary(&w),
            "2 starvation warning(s), the first: a workqueue lockup"
        );
        assert_eq!(summary(&[]), "no starvation warning");
    }

    #[test]
    fn starvation_warnings_are_told_from_other_kernel_messages() {
        for starved in [
            "BUG: workqueue lockup - pool cpus=0-1 flags=0x4 nice=0 stuck for 72s!",
            "rcu: rcu_preempt kthread starved for 14753 jiffies! g1233673 f0x2 RCU_GP_WAIT_FQS(5) ->state=0x0 ->cpu=1",
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
            "INFO: task mpirun:1234 blocked for more than 122 seconds.",
            "watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [spin:99]",
        ] {
            assert!(is_starvation(starved), "{starved}");
        }
        for quiet in [
            "NOTICE: Automounting of tracing to debugfs is deprecated and will be removed in 2030",
            "IPv6: ADDRCONF(NETDEV_CHANGE): veth0: link becomes ready",
            "cosched-n0: port 1(veth0) entered forwarding state",
        ] {
            assert!(!is_starvation(quiet), "{quiet}");
        }
    }

    #[test]
    fn a_warning_logged_after_the_log_was_opened_is_read_once_and_earlier_ones_are_not() {
        use std::io::Write;
        let marker = format!(
            "cosched lab test {}: not a real workqueue lockup",
            std::process::id()
        );
        let Ok(mut writer) = std::fs::OpenOptions::new().write(true).open("/dev/kmsg") else {
            eprintln!("skipped: /dev/kmsg is not writable here (needs root)");
            return;
        };
        writer
            .write_all(format!("{marker} (before)\n").as_bytes())
            .unwrap();
        let mut log = KernelLog::open();
        writer
            .write_all(format!("{marker} (after)\n").as_bytes())
            .unwrap();
        writer
            .write_all(b"cosched lab test: an ordinary message\n")
            .unwrap();
        let ours: Vec<String> = log
            .new_warnings()
            .into_iter()
            .filter(|m| m.contains(&marker))
            .collect();
        assert_eq!(ours, [format!("{marker} (after)")]);
        assert!(
            log.new_warnings().iter().all(|m| !m.contains(&marker)),
            "read twice"
        );
    }
}
