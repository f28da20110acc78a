//! Nudging a CPU for a local task the fair class left waiting.
//!
//! On EEVDF (Linux 6.6+) a woken task preempts the current one only if it is the fair class's pick at that
//! moment, and the current task keeps the CPU to the end of the slice it was picked for (`RUN_TO_PARITY`); when
//! that protection runs out, nothing looks at the CPU again before the next tick (4 ms at HZ = 250) or another
//! event there. So a local user's wake-up beside a job can wait up to a tick even when the fair class owes it the
//! CPU. Measured (2026-11-28, `docs/lab-local.md`, "Wake-ups the fair class refused"): in one run in four or so
//! of the lab's spin-only ping-pong at K = 1 with the agent, one CPU's 1 ms probe settled into a state where the
//! job's group was eligible and protected at most of its wake-ups, and that CPU's p99 wait went from ~0.15 ms to
//! 3.0–3.7 ms.
//!
//! BPF sees such a refused wake-up as it happens (`cosched_wakeup`: the CPU's current task is in the fair class
//! and has no reschedule pending after the kernel's decision) on a CPU where a managed job runs, and reports it
//! (`COSCHED_EV_LOCAL_REFUSED`, at most one per CPU per `COSCHED_NUDGE_GAP_NS`). The CPU's nudger — a thread of
//! the agent's own, pinned to that CPU at `SCHED_FIFO` (the boosts' priority) — wakes, which preempts the fair
//! class there, and blocks again: the fair class then picks afresh, its current task no longer protected, and
//! the local task runs if it is the pick (eligible, earliest virtual deadline). No task's attributes change; the
//! nudger's few microseconds are the agent's CPU time (BPF counts the agent's threads per CPU).
//!
//! The nudgers start with the agent, one per online CPU, before any boost exists, and stop with it. Started on a
//! CPU's first nudge instead, from the agent's event loop, a new thread (born `SCHED_OTHER`: the agent's threads
//! reset on fork) waited for its set-up behind boosted ranks while the loop waited for it, and no boost could be
//! paused or ended meanwhile: a local probe waited 192 and 285 ms (2026-11-28, `docs/lab-local.md`).

use nix::sys::eventfd::{EfdFlags, EventFd};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// One CPU's nudger thread and the event it waits on.
struct Nudger {
    wake: Arc<EventFd>,
    thread: Option<JoinHandle<()>>,
}

/// The agent's nudgers, one per CPU.
pub struct Nudgers {
    per_cpu: HashMap<u32, Nudger>,
    /// CPUs whose nudger could not be started, with why; each reported once by [`Nudgers::nudge`].
    failed: HashMap<u32, Option<String>>,
    stop: Arc<AtomicBool>,
    /// Wake-ups the nudgers ran (on their CPU), all CPUs together.
    ran: Arc<AtomicU64>,
}

impl Nudgers {
    /// Starts a nudger on each of `cpus`, at `SCHED_FIFO` priority `prio`; those that cannot start are
    /// remembered with why ([`Nudgers::nudge`] says so once).
    pub fn start(prio: u32, cpus: &[u32]) -> Nudgers {
        let mut nudgers = Nudgers {
            per_cpu: HashMap::new(),
            failed: HashMap::new(),
            stop: Arc::new(AtomicBool::new(false)),
            ran: Arc::new(AtomicU64::new(0)),
        };
        for &cpu in cpus {
            match nudgers.start_one(cpu, prio.clamp(1, 99)) {
                Ok(n) => {
                    nudgers.per_cpu.insert(cpu, n);
                }
                Err(why) => {
                    nudgers.failed.insert(cpu, Some(why));
                }
            }
        }
        nudgers
    }

    /// Nudges `cpu`: its nudger wakes there. A CPU without one (it could not start: said once, then nothing;
    /// not online at the start: nothing) is not nudged.
    pub fn nudge(&mut self, cpu: u32) -> Result<(), String> {
        if let Some(why) = self.failed.get_mut(&cpu) {
            return why.take().map_or(Ok(()), Err);
        }
        let Some(n) = self.per_cpu.get(&cpu) else {
            return Ok(());
        };
        n.wake
            .write(1)
            .map(|_| ())
            .map_err(|e| format!("waking the nudger of CPU {cpu}: {e}"))
    }

    /// How many nudges the nudgers ran on their CPUs.
    pub fn ran(&self) -> u64 {
        self.ran.load(Ordering::Relaxed)
    }

    fn start_one(&self, cpu: u32, prio: u32) -> Result<Nudger, String> {
        let wake = Arc::new(
            EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC)
                .map_err(|e| format!("eventfd for the nudger of CPU {cpu}: {e}"))?,
        );
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let (thread_wake, stop, ran) = (wake.clone(), self.stop.clone(), self.ran.clone());
        let thread = std::thread::Builder::new()
            .name(format!("cosched-nudge{cpu}"))
            .stack_size(64 * 1024)
            .spawn(move || {
                let setup = pin_and_raise(cpu, prio);
                let ok = setup.is_ok();
                let _ = ready_tx.send(setup);
                if !ok {
                    return;
                }
                // Each wake-up is the nudge: this thread preempting the fair class on its CPU.
                loop {
                    match thread_wake.read() {
                        Ok(_) if stop.load(Ordering::Relaxed) => return,
                        Ok(_) => {
                            ran.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(_) => return,
                    }
                }
            })
            .map_err(|e| format!("starting the nudger of CPU {cpu}: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Nudger {
                wake,
                thread: Some(thread),
            }),
            Ok(Err(why)) => {
                let _ = thread.join();
                Err(why)
            }
            Err(_) => Err(format!("the nudger of CPU {cpu} died while starting")),
        }
    }
}

/// Pins the calling thread to `cpu` and makes it `SCHED_FIFO` at `prio`.
fn pin_and_raise(cpu: u32, prio: u32) -> Result<(), String> {
    let me = nix::unistd::gettid().as_raw() as u32;
    let only = crate::sched::cpu_mask(&[cpu])
        .map_err(|e| format!("pinning the nudger to CPU {cpu}: {e}"))?;
    crate::sched::set_affinity(me, &only)
        .map_err(|e| format!("pinning the nudger to CPU {cpu}: {e}"))?;
    crate::sched::set_attr(me, &crate::sched::SchedAttr::fifo(prio))
        .map_err(|e| format!("making the nudger of CPU {cpu} SCHED_FIFO {prio}: {e}"))
}

impl Drop for Nudgers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for n in self.per_cpu.values_mut() {
            let _ = n.wake.write(1);
            if let Some(t) = n.thread.take() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn online_cpus() -> u32 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }

    #[test]
    fn a_nudge_runs_the_nudger_of_that_cpu_and_the_nudgers_stop_with_their_owner() {
        let cpu = online_cpus() - 1;
        let mut nudgers = Nudgers::start(1, &[cpu]);
        if let Err(why) = nudgers.nudge(cpu) {
            // SCHED_FIFO needs root (or an RT budget in the cpu cgroup): the privileged run covers it.
            eprintln!("skipping: {why}");
            assert!(why.contains("SCHED_FIFO"), "{why}");
            return;
        }
        let t0 = Instant::now();
        while nudgers.ran() < 1 {
            assert!(
                t0.elapsed() < Duration::from_secs(2),
                "the nudger never ran"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // It runs where it was asked to, at SCHED_FIFO.
        let name = format!("cosched-nudge{cpu}");
        let tid = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| {
                std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
            .map(|e| e.file_name().to_string_lossy().parse::<u32>().unwrap())
            .expect("the nudger thread, by name");
        assert_eq!(
            crate::sched::get_attr(tid).unwrap().sched_policy,
            crate::sched::SCHED_FIFO
        );
        assert_eq!(
            crate::sched::get_affinity(tid).unwrap(),
            crate::sched::cpu_mask(&[cpu]).unwrap()
        );
        for _ in 0..3 {
            nudgers.nudge(cpu).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(nudgers.ran() >= 2, "{} nudges ran", nudgers.ran());
        drop(nudgers);
        assert!(
            !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists(),
            "the nudger outlived its owner"
        );
    }

    #[test]
    fn a_cpu_whose_nudger_cannot_start_is_reported_once_and_then_left_alone() {
        // No such CPU: pinning fails.
        let mut nudgers = Nudgers::start(1, &[100_000]);
        let err = nudgers.nudge(100_000).unwrap_err();
        assert!(err.contains("CPU 100000"), "{err}");
        assert_eq!(nudgers.nudge(100_000), Ok(()));
        // A CPU it was not started for: nothing.
        assert_eq!(nudgers.nudge(7), Ok(()));
        assert_eq!(nudgers.ran(), 0);
    }
}
