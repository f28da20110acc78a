//! Loading the BPF program (`src/bpf/cosched.bpf.c`) and talking to its maps: the agent's observation layer.
//!
//! Built only when `build.rs` found clang, bpftool and kernel BTF (cfg `cosched_bpf`).

use crate::intf::{self, Event, JobState, Pod, Proc, Task};
use crate::skel::{CoschedSkel, CoschedSkelBuilder};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBuffer, RingBufferBuilder};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long the entries of a thread or process the agent stopped managing stay in the maps before the agent
/// deletes them. An exiting thread's final switch-out books its last stint and deletes its own entries (BPF's
/// `retire`); the agent learns of the exit by its pidfd, possibly before that switch-out (the agent runs at a
/// real-time priority and preempts the exiting thread), and deleting then lost the stint's CPU time. Deleting
/// later only removes what BPF did not (a thread that stopped being managed while alive).
const FORGET_AFTER: Duration = Duration::from_millis(100);

/// A map entry waiting out [`FORGET_AFTER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Forgotten {
    Task(u32),
    Proc(u32),
}

/// Load-time options (BPF `const volatile` rodata).
#[derive(Clone, Copy, Debug)]
pub struct BpfOptions {
    /// An arrival for a receiver that ran within this many ns is not flagged.
    pub grace_ns: u64,
    /// A flagged arrival still pending after this long is handed to user space again.
    pub renotify_ns: u64,
    /// Whether a receiver runs is read as sampled every this many ns (0: at the arrival).
    pub running_view_ns: u64,
    /// A local task waking on a boosted thread's CPU is reported (the boost then yields).
    pub yield_to_local: bool,
    /// A local task the fair class leaves waiting on a job's CPU is reported (the CPU is then nudged;
    /// only with `yield_to_local`).
    pub nudge_local: bool,
}

/// CPUs online: a cpu cgroup's configured share spreads over them (BPF's weighted `R`); the agent starts a
/// nudger on each (`crate::nudge`).
pub(crate) fn online_cpus() -> u32 {
    // SAFETY: sysconf reads a system constant and has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// The loaded, attached BPF program, its ring buffer and its maps.
pub struct Observer {
    skel: CoschedSkel<'static>,
    ring: RingBuffer<'static>,
    inbox: Rc<RefCell<Vec<Event>>>,
    /// Ring-buffer records that were too short to be an event (never expected; counted, not ignored).
    pub malformed: u64,
    malformed_cell: Rc<RefCell<u64>>,
    /// Entries to delete once they are [`FORGET_AFTER`] old ([`Observer::reap_forgotten`]).
    forgotten: RefCell<Vec<(Forgotten, Instant)>>,
    /// The managed processes' sockets, for the predictive rule's samples.
    sockets: RefCell<crate::sockets::SocketTable>,
}

impl Observer {
    /// Opens, loads and attaches the program. Errors name what is missing.
    pub fn load(opts: BpfOptions) -> anyhow::Result<Observer> {
        // The skeleton borrows its object storage for its whole life; the agent keeps one for the life of the
        // process, so the storage is leaked on purpose (a few hundred bytes).
        let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = CoschedSkelBuilder::default().open(storage).map_err(|e| {
            anyhow::anyhow!("opening the BPF object failed: {e} (is the kernel built with BTF, /sys/kernel/btf/vmlinux?)")
        })?;
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.grace_ns = opts.grace_ns;
            ro.renotify_ns = opts.renotify_ns;
            ro.running_view_ns = opts.running_view_ns;
            ro.yield_to_local = u32::from(opts.yield_to_local);
            ro.nudge_local = u32::from(opts.nudge_local);
            ro.nr_cpus = online_cpus();
            ro.agent_tgid = std::process::id();
        }
        let mut skel = open.load().map_err(|e| {
            anyhow::anyhow!(
                "loading the BPF program failed: {e}. The agent needs root (CAP_BPF, CAP_PERFMON), kernel BTF and \
                 tp_btf support (Linux 5.5+)"
            )
        })?;
        skel.attach()
            .map_err(|e| anyhow::anyhow!("attaching the BPF tracepoints failed: {e}"))?;

        let inbox: Rc<RefCell<Vec<Event>>> = Rc::default();
        let malformed_cell: Rc<RefCell<u64>> = Rc::default();
        let mut builder = RingBufferBuilder::new();
        {
            let inbox = inbox.clone();
            let bad = malformed_cell.clone();
            builder.add(&skel.maps.events, move |data: &[u8]| {
                match Event::from_bytes(data) {
                    Some(e) => inbox.borrow_mut().push(e),
                    None => *bad.borrow_mut() += 1,
                }
                0
            })?;
        }
        let ring = builder.build()?;
        Ok(Observer {
            skel,
            ring,
            inbox,
            malformed: 0,
            malformed_cell,
            forgotten: RefCell::default(),
            sockets: RefCell::default(),
        })
    }

    /// The ring buffer map's own fd: pollable, readable when events are waiting. The agent adds it straight to
    /// its epoll set (rather than libbpf's epoll fd, which would nest one epoll inside another on the wake-up
    /// path of every flagged arrival).
    pub fn ring_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.skel.maps.events.as_fd()
    }

    /// Takes every waiting event out of the ring buffer.
    pub fn drain(&mut self, into: &mut Vec<Event>) -> anyhow::Result<()> {
        self.ring.consume()?;
        into.append(&mut self.inbox.borrow_mut());
        self.malformed = *self.malformed_cell.borrow();
        Ok(())
    }

    /// Starts managing a thread (registration, or a thread found later).
    pub fn add_task(&self, tid: u32, tgid: u32) -> anyhow::Result<()> {
        self.unforget(Forgotten::Task(tid));
        let t = Task {
            tgid,
            ..Default::default()
        };
        self.skel
            .maps
            .tasks
            .update(&tid.to_ne_bytes(), t.as_bytes(), MapFlags::NO_EXIST)
            .or_else(|e| {
                if self.task(tid).is_some() {
                    Ok(())
                } else {
                    Err(anyhow::anyhow!(
                        "adding thread {tid} to the BPF tasks map failed: {e} (map full?)"
                    ))
                }
            })
    }

    /// Starts managing a process.
    pub fn add_proc(&self, tgid: u32, job: u64) -> anyhow::Result<()> {
        self.unforget(Forgotten::Proc(tgid));
        let p = Proc { job, runtime_ns: 0 };
        self.skel
            .maps
            .procs
            .update(&tgid.to_ne_bytes(), p.as_bytes(), MapFlags::ANY)
            .map_err(|e| {
                anyhow::anyhow!(
                    "adding process {tgid} to the BPF procs map failed: {e} (map full?)"
                )
            })
    }

    /// Starts counting a job's CPU time (every thread it ever has, exited ones included).
    pub fn add_job(&self, job: u64) -> anyhow::Result<()> {
        self.skel
            .maps
            .jobs
            .update(
                &job.to_ne_bytes(),
                JobState::default().as_bytes(),
                MapFlags::ANY,
            )
            .map_err(|e| {
                anyhow::anyhow!("adding job {job} to the BPF jobs map failed: {e} (map full?)")
            })
    }

    /// Stops counting a job's CPU time (its last process is gone).
    pub fn remove_job(&self, job: u64) {
        let _ = self.skel.maps.jobs.delete(&job.to_ne_bytes());
    }

    /// Stops managing a process / a thread (missing entries are fine).
    pub fn remove_proc(&self, tgid: u32) {
        let _ = self.skel.maps.procs.delete(&tgid.to_ne_bytes());
    }
    pub fn remove_task(&self, tid: u32) {
        let _ = self.skel.maps.tasks.delete(&tid.to_ne_bytes());
        let _ = self.skel.maps.kicked.delete(&tid.to_ne_bytes());
    }

    /// Stops managing a process that exited or was refused: its entry goes [`FORGET_AFTER`] from now.
    pub fn forget_proc(&self, tgid: u32) {
        self.forget(Forgotten::Proc(tgid));
    }

    fn forget(&self, what: Forgotten) {
        self.forgotten.borrow_mut().push((what, Instant::now()));
    }

    /// A pid or tid managed again (reused, or registered anew) keeps its fresh entry.
    fn unforget(&self, what: Forgotten) {
        self.forgotten.borrow_mut().retain(|&(w, _)| w != what);
    }

    /// Whether entries wait to be deleted.
    pub fn forgetting(&self) -> bool {
        !self.forgotten.borrow().is_empty()
    }

    /// Deletes the entries forgotten [`FORGET_AFTER`] ago or earlier (the agent's tick).
    pub fn reap_forgotten(&self) {
        let now = Instant::now();
        self.forgotten.borrow_mut().retain(|&(what, at)| {
            if now.duration_since(at) < FORGET_AFTER {
                return true;
            }
            match what {
                Forgotten::Task(tid) => self.remove_task(tid),
                Forgotten::Proc(tgid) => self.remove_proc(tgid),
            }
            false
        });
    }

    /// A thread's BPF state, if it is managed.
    pub fn task(&self, tid: u32) -> Option<Task> {
        lookup(&self.skel.maps.tasks, &tid.to_ne_bytes())
    }

    /// A process's BPF state, if it is managed.
    pub fn proc(&self, tgid: u32) -> Option<Proc> {
        lookup(&self.skel.maps.procs, &tgid.to_ne_bytes())
    }

    /// A job's BPF state, while it has a live process.
    pub fn job(&self, job: u64) -> Option<JobState> {
        lookup(&self.skel.maps.jobs, &job.to_ne_bytes())
    }

    /// Records that the agent boosted `tid` at `when` on its own initiative (reaction measured from then).
    pub fn kicked(&self, tid: u32, when: u64) {
        let _ =
            self.skel
                .maps
                .kicked
                .update(&tid.to_ne_bytes(), &when.to_ne_bytes(), MapFlags::ANY);
    }

    /// Each program's calls and run time as the kernel counts them (zero unless `kernel.bpf_stats_enabled`).
    pub fn program_costs(&self) -> Vec<crate::proto::ProgramCost> {
        use std::os::fd::{AsFd, AsRawFd};
        self.skel
            .object()
            .progs()
            .filter_map(|prog| {
                let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
                let mut len = std::mem::size_of_val(&info) as u32;
                // SAFETY: `info` is a plain struct of `len` bytes the kernel fills; the fd is the program's, alive
                // for the skeleton's life.
                let rc = unsafe {
                    libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                        prog.as_fd().as_raw_fd(),
                        &mut info,
                        &mut len,
                    )
                };
                (rc == 0).then(|| crate::proto::ProgramCost {
                    name: prog.name().to_string_lossy().into_owned(),
                    calls: info.run_cnt,
                    run_ns: info.run_time_ns,
                })
            })
            .collect()
    }

    /// The BPF counters (`COSCHED_STAT_*`), summed over the per-CPU rows.
    pub fn stats(&self) -> [u64; intf::COSCHED_NR_STATS as usize] {
        let mut out = [0; intf::COSCHED_NR_STATS as usize];
        if let Some(bss) = self.skel.maps.bss_data.as_deref() {
            for row in bss.stats.iter() {
                for (o, s) in out.iter_mut().zip(row.iter()) {
                    // SAFETY: the .bss map is mmapped and stays valid for the skeleton's life; BPF updates it
                    // concurrently, so read each word once, volatile.
                    *o += unsafe { std::ptr::read_volatile(s) };
                }
            }
        }
        out
    }

    /// When the latest of the local tasks that woke on `cpu` and have not blocked since woke (`None`: none is
    /// having its turn there: waiting for the CPU, or running, or preempted before it was done). BPF remembers
    /// a few per CPU (`COSCHED_LOCAL_SLOTS`), so a second local task that woke and finished does not hide the
    /// first.
    pub fn local_waiting_since(&self, cpu: u32) -> Option<u64> {
        let bss = self.skel.maps.bss_data.as_deref()?;
        let c = &bss.cpus[cpu as usize % bss.cpus.len()];
        (0..c.local_waiting.len())
            .filter_map(|i| {
                // SAFETY: as in `stats`: the mmapped .bss, each word read once, volatile.
                let (tid, woke) = unsafe {
                    (
                        std::ptr::read_volatile(&c.local_waiting[i]),
                        std::ptr::read_volatile(&c.local_woke_ns[i]),
                    )
                };
                (tid != 0).then_some(woke)
            })
            .max()
    }

    /// The watch gate as BPF last wrote it.
    pub fn gate(&self) -> intf::Gate {
        self.skel
            .maps
            .bss_data
            .as_deref()
            .map(|bss| {
                // SAFETY: as in `stats`: the mmapped .bss, read once, volatile.
                unsafe {
                    intf::Gate {
                        watching: std::ptr::read_volatile(&bss.gate.watching),
                        managing: std::ptr::read_volatile(&bss.gate.managing),
                        contended_ns: std::ptr::read_volatile(&bss.gate.contended_ns),
                    }
                }
            })
            .unwrap_or_default()
    }

    /// Opens or closes the watch gate. BPF may open it again at once if it sees sharing: that is the point.
    pub fn set_watching(&mut self, on: bool) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: the mmapped .bss; a single aligned u32 store, which BPF's loads see whole.
            unsafe { std::ptr::write_volatile(&mut bss.gate.watching, u32::from(on)) };
        }
    }

    /// Tells the scheduler hooks whether a job is managed (`gate.managing`): without one they return at once,
    /// so an idle agent costs the machine's context switches only the hooks' entry. On before the first job's
    /// map entries go in, off once no job is left.
    pub fn set_managing(&mut self, on: bool) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            // SAFETY: as in `set_watching`.
            unsafe { std::ptr::write_volatile(&mut bss.gate.managing, u32::from(on)) };
        }
    }

    /// Whether the message hooks (`sk_data_ready`, `sock_recv_length`) are attached.
    pub fn message_hooks_attached(&self) -> bool {
        self.skel.links.cosched_data_ready.is_some() && self.skel.links.cosched_recv.is_some()
    }

    /// Attaches or detaches the message hooks. Detached, a message costs the kernel nothing for the agent (an
    /// attached tracepoint runs its program even when the program returns at once).
    pub fn set_message_hooks(&mut self, on: bool) -> anyhow::Result<()> {
        let links = &mut self.skel.links;
        if !on {
            links.cosched_data_ready = None;
            links.cosched_recv = None;
            return Ok(());
        }
        if links.cosched_recv.is_none() {
            links.cosched_recv =
                Some(self.skel.progs.cosched_recv.attach().map_err(|e| {
                    anyhow::anyhow!("attaching the sock_recv_length hook failed: {e}")
                })?);
        }
        if links.cosched_data_ready.is_none() {
            links.cosched_data_ready =
                Some(self.skel.progs.cosched_data_ready.attach().map_err(|e| {
                    anyhow::anyhow!("attaching the sk_data_ready hook failed: {e}")
                })?);
        }
        Ok(())
    }

    /// The reaction histogram, `[row][bucket]`.
    pub fn histogram(&self) -> Vec<Vec<u64>> {
        let b = intf::COSCHED_HIST_BUCKETS as usize;
        let mut rows = vec![vec![0; b]; intf::COSCHED_HIST_KINDS as usize];
        if let Some(bss) = self.skel.maps.bss_data.as_deref() {
            for (i, h) in bss.hist.iter().enumerate() {
                // SAFETY: as in `stats`.
                rows[i / b][i % b] = unsafe { std::ptr::read_volatile(h) };
            }
        }
        rows
    }
}

impl crate::ctx::Probe for Observer {
    fn task(&self, tid: u32) -> Option<Task> {
        Observer::task(self, tid)
    }
    fn proc_runtime(&self, tgid: u32) -> Option<u64> {
        self.proc(tgid).map(|p| p.runtime_ns)
    }
    fn job_runtime(&self, job: u64) -> Option<u64> {
        self.job(job).map(|j| j.runtime_ns)
    }
    fn kicked(&self, tid: u32, when: u64) {
        Observer::kicked(self, tid, when)
    }
    fn forget_task(&self, tid: u32) {
        self.forget(Forgotten::Task(tid))
    }
    fn local_waiting_since(&self, cpu: u32) -> Option<u64> {
        Observer::local_waiting_since(self, cpu)
    }
    fn socket_queues(
        &self,
        tgids: &[u32],
    ) -> std::collections::HashMap<u32, Vec<cosched_policy::predictive::SocketQueue>> {
        self.sockets.borrow_mut().sample(tgids)
    }
    fn agent_cpu_ns(&self, cpu: u32) -> Option<u64> {
        let bss = self.skel.maps.bss_data.as_deref()?;
        let c = &bss.cpus[cpu as usize % bss.cpus.len()];
        // SAFETY: as in `stats`: the mmapped .bss, one aligned word read once, volatile.
        Some(unsafe { std::ptr::read_volatile(&c.agent_ns) })
    }
    fn hold_group_shares(&self, cgroup: u64, shares: Option<u64>) {
        let held = &self.skel.maps.held_shares;
        // A failed write leaves R read at the group's weight now: the job repays slower, nothing worse.
        let _ = match shares {
            Some(s) => held.update(&cgroup.to_ne_bytes(), &s.to_ne_bytes(), MapFlags::ANY),
            None => held.delete(&cgroup.to_ne_bytes()),
        };
        let count = held.keys().count() as u32;
        let _ = self.skel.maps.held_groups.update(
            &0u32.to_ne_bytes(),
            &count.to_ne_bytes(),
            MapFlags::ANY,
        );
    }
    fn runnable_milli_per_cpu(&self) -> Option<u32> {
        let per_cpu = u64::from(crate::stats::runnable_tasks()?) * intf::COSCHED_R_ONE_MILLI
            / u64::from(online_cpus());
        u32::try_from(per_cpu).ok()
    }
}

/// The value under `key` in a hash map of BPF, read as `T` (`None`: no entry, or a failed read).
fn lookup<T: Pod>(map: &impl MapCore, key: &[u8]) -> Option<T> {
    T::from_bytes(&map.lookup(key, MapFlags::ANY).ok()??)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cpu`'s line of the program's per-CPU state, in its mmapped `.bss` (which the program writes meanwhile:
    /// callers read and write each word once, volatile).
    fn cpu_line(o: &mut Observer, cpu: u32) -> &mut crate::skel::types::cosched_cpu {
        let bss = o
            .skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the program has a .bss");
        let n = bss.cpus.len();
        &mut bss.cpus[cpu as usize % n]
    }

    /// The local tasks BPF has recorded as having their turn on `cpu`.
    fn recorded_locals(o: &mut Observer, cpu: u32) -> Vec<u32> {
        let c = cpu_line(o, cpu);
        // SAFETY: as in `stats`: the mmapped .bss, each word read once, volatile.
        (0..c.local_waiting.len())
            .map(|i| unsafe { std::ptr::read_volatile(&c.local_waiting[i]) })
            .filter(|&tid| tid != 0)
            .collect()
    }

    /// Records `tid` in a free slot of `cpu`'s line as a local task that woke at `woke` having run `exec` ns in
    /// all — what the wake-up hook writes — and returns whether a slot was free.
    fn record_local(o: &mut Observer, cpu: u32, tid: u32, woke: u64, exec: u64) -> bool {
        let c = cpu_line(o, cpu);
        for i in 0..c.local_waiting.len() {
            // SAFETY: the mmapped .bss, shared with the program, which may write the line meanwhile: each word
            // read and written once, volatile; a slot the program takes at the same moment is only a lost test.
            unsafe {
                if std::ptr::read_volatile(&c.local_waiting[i]) == 0 {
                    std::ptr::write_volatile(&mut c.local_woke_ns[i], woke);
                    std::ptr::write_volatile(&mut c.local_exec_ns[i], exec);
                    std::ptr::write_volatile(&mut c.local_waiting[i], tid);
                    return true;
                }
            }
        }
        false
    }

    fn monotonic_ns() -> u64 {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
        t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
    }

    #[test]
    #[cfg_attr(
        not(cosched_root),
        ignore = "privileged: needs root (BPF); run the tests as root, as CI does"
    )]
    fn a_local_record_whose_task_sleeps_is_freed_at_the_next_switch_on_its_cpu() {
        // This sandbox never reports switches out of its `process_api` threads: a record of such a task's
        // wake-up stood until stale and held every boost on its CPU back. The record stands in here for one whose
        // switch-out went unreported: a task asleep (`sleep 30`) recorded on CPU 0 as having its turn. The next
        // switch on CPU 0 that is not the task's own must free it (`recheck_locals`).
        let mut o = Observer::load(BpfOptions {
            grace_ns: 0,
            renotify_ns: 1_000_000,
            running_view_ns: 0,
            yield_to_local: true,
            nudge_local: true,
        })
        .unwrap();
        // As while a job is managed: the scheduler hooks do their work only then.
        o.set_managing(true);
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = sleeper.id();
        let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let t0 = Instant::now();
        while !stat()
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('S'))
        {
            assert!(t0.elapsed() < Duration::from_secs(5), "`sleep` never slept");
            std::thread::sleep(Duration::from_millis(1));
        }
        let exec: u64 = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // Switches on CPU 0: a thread pinned there sleeps `n` times. A slot may be taken by a real wake-up when the
        // record is planted, so that is tried a few times.
        let pinned_switches = |n: u32| {
            std::thread::spawn(move || {
                let mut only0 = nix::sched::CpuSet::new();
                only0.set(0).unwrap();
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &only0).unwrap();
                for _ in 0..n {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .join()
            .unwrap()
        };
        let mut planted = false;
        for _ in 0..20 {
            if record_local(&mut o, 0, pid, monotonic_ns(), exec) {
                planted = true;
                break;
            }
            pinned_switches(1);
        }
        assert!(planted, "no free slot on CPU 0's line in 20 tries");
        pinned_switches(5);
        let left = recorded_locals(&mut o, 0);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(
            !left.contains(&pid),
            "the record of a sleeping task outlived switches on its CPU: {left:?}"
        );
    }

    /// Writes `tid` into asleep slot `slot` of `cpu`'s line, as having blocked at `at` — what the switch hook
    /// writes when a local task blocks after a turn. The program may take the slot for a real sleeper meanwhile,
    /// so callers write it again while they need it.
    fn plant_asleep(o: &mut Observer, cpu: u32, slot: usize, tid: u32, at: u64) {
        let c = cpu_line(o, cpu);
        // SAFETY: as in `record_local`.
        unsafe {
            std::ptr::write_volatile(&mut c.local_asleep_ns[slot], at);
            std::ptr::write_volatile(&mut c.local_asleep[slot], tid);
        }
    }

    /// The calling thread's kernel tid.
    fn gettid() -> u32 {
        nix::unistd::gettid().as_raw() as u32
    }

    fn pin_to(cpu: usize) {
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
    }

    #[test]
    #[cfg_attr(
        not(cosched_root),
        ignore = "privileged: needs root (BPF); run the tests as root, as CI does"
    )]
    fn a_local_task_woken_unseen_is_found_waiting_by_a_managed_threads_polls_on_its_cpu() {
        // On this sandbox nothing is traced while a thread of its own daemon runs, so a local task woken then has
        // no record. Stood in for here: two local threads remembered as asleep on CPU 0 without a seen wake-up —
        // a CPU hog there (runnable, waiting whenever another thread runs) and a thread really asleep — and a
        // managed thread on CPU 0 that polls an empty socket. Its polls must find the hog waiting (counted,
        // recorded as waiting, its CPU nudged: the poller runs in the fair class) and never the sleeper.
        if online_cpus() < 2 {
            eprintln!("skipped: needs two CPUs (the hog, sleeper and poller on one, this thread on the other)");
            return;
        }
        let mut o = Observer::load(BpfOptions {
            grace_ns: 0,
            renotify_ns: 1_000_000,
            running_view_ns: 0,
            yield_to_local: true,
            nudge_local: true,
        })
        .unwrap();
        o.set_message_hooks(true).unwrap();
        o.set_watching(true);
        // As while a job is managed: the scheduler hooks do their work only then.
        o.set_managing(true);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let deadline = Instant::now() + Duration::from_secs(5);
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let hog = {
            let (stop, tid_tx) = (stop.clone(), tid_tx.clone());
            std::thread::spawn(move || {
                pin_to(0);
                tid_tx.send(gettid()).unwrap();
                // Bounded: stops when told or at the deadline.
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline
                {
                    std::hint::spin_loop();
                }
            })
        };
        let (wake_tx, wake_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            pin_to(0);
            tid_tx.send(gettid()).unwrap();
            let _ = wake_rx.recv_timeout(Duration::from_secs(5));
        });
        let (a, b) = (tid_rx.recv().unwrap(), tid_rx.recv().unwrap());
        std::thread::sleep(Duration::from_millis(20));
        let unseen_before = o.stats()[intf::COSCHED_STAT_LOCAL_UNSEEN as usize];
        // Which of the two is the hog: the one running or runnable (`R` in its stat line).
        let running = |tid: u32| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                .unwrap_or_default()
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('R'))
        };
        let (hog_tid, sleeper_tid) = if running(a) { (a, b) } else { (b, a) };
        assert!(
            running(hog_tid) && !running(sleeper_tid),
            "the hog must run and the sleeper sleep"
        );
        // The poller: managed before it polls an empty socket on CPU 0 for 300 ms.
        let (ptid_tx, ptid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let runner = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_to(0);
                let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                socket.set_nonblocking(true).unwrap();
                ptid_tx.send(gettid()).unwrap();
                let _ = go_rx.recv_timeout(Duration::from_secs(5));
                let mut buf = [0u8; 16];
                let until = Instant::now() + Duration::from_millis(300);
                while Instant::now() < until && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = socket.recv(&mut buf); // empty: EAGAIN
                }
            })
        };
        let managed = ptid_rx.recv().unwrap();
        o.add_task(managed, std::process::id()).unwrap();
        go_tx.send(()).unwrap();
        // Kept planted (from a thread on CPU 1, so CPU 0 is left to the three) while the poller polls.
        pin_to(1);
        while !runner.is_finished() {
            let now = monotonic_ns();
            plant_asleep(&mut o, 0, 0, hog_tid, now);
            plant_asleep(&mut o, 0, 1, sleeper_tid, now);
            std::thread::sleep(Duration::from_millis(1));
        }
        runner.join().unwrap();
        // Read before the sleeper is woken: its real wake-up beside the hog on this job's CPU is seen, and
        // refused and nudged like any other (the wake-up hook's rule, not the one under test).
        let mut events = Vec::new();
        o.drain(&mut events).unwrap();
        let unseen = o.stats()[intf::COSCHED_STAT_LOCAL_UNSEEN as usize] - unseen_before;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = wake_tx.send(());
        hog.join().unwrap();
        sleeper.join().unwrap();
        let answered_for = |tid: u32| {
            events
                .iter()
                .filter(|e| {
                    [intf::COSCHED_EV_LOCAL_REFUSED, intf::COSCHED_EV_LOCAL_WAKE]
                        .contains(&u64::from(e.kind))
                        && e.arg == tid
                })
                .count()
        };
        eprintln!(
            "unseen wake-ups found: {unseen}; nudges asked for the hog {}, for the sleeper {}",
            answered_for(hog_tid),
            answered_for(sleeper_tid)
        );
        assert!(unseen >= 1, "the waiting hog was never found");
        assert!(
            answered_for(hog_tid) >= 1,
            "the hog was found but its CPU never nudged"
        );
        assert_eq!(
            answered_for(sleeper_tid),
            0,
            "a task asleep was taken for a waiting one"
        );
    }
}
