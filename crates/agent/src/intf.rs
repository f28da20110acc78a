//! The Rust mirror of `src/bpf/intf.h`, the one header shared with the BPF program.
//!
//! Every constant and layout here must equal the header's; the unit tests parse `intf.h` and check each
//! `#define` and each struct size, so a change on one side that is not made on the other fails `cargo test`.

/// Capacity of the tasks map (managed threads).
pub const COSCHED_MAX_TASKS: u64 = 8192;
/// Capacity of the procs map (managed processes).
pub const COSCHED_MAX_PROCS: u64 = 4096;
/// Live jobs (jobs map).
pub const COSCHED_MAX_JOBS: u64 = 64;
/// A local task recorded as waiting on a CPU for longer than this has gone (killed before it ran): BPF forgets
/// it, and a paused boost resumes. One that migrates before it runs is moved to its new CPU's record.
pub const COSCHED_LOCAL_WAIT_STALE_NS: u64 = 50_000_000;
/// A local task's turn ends once it has run at least this long (or its own fair-class slice) since its wake-up.
pub const COSCHED_LOCAL_TURN_MIN_NS: u64 = 1_000_000;
/// A woken local task whose top-level scheduling entity weighs under 1/this of its CPU's runnable fair-class
/// weight is not yielded to: the fair class gives it that little of the CPU with or without a boost.
pub const COSCHED_LOCAL_LIGHT_RATIO: u64 = 64;
/// At most one nudge event per CPU per this long (`src/nudge.rs`).
pub const COSCHED_NUDGE_GAP_NS: u64 = 100_000;
/// A CPU is a job's while a managed thread switched there this recently: only such CPUs are nudged.
pub const COSCHED_JOB_CPU_NS: u64 = 100_000_000;
/// A managed thread's empty poll or boosted switch-in looks at most this often whether a local task asleep on its
/// CPU woke without any hook seeing it (nothing is traced while this sandbox's own daemon runs).
pub const COSCHED_ASLEEP_CHECK_NS: u64 = 100_000;
/// A local task is remembered as asleep on its CPU for this long after it last blocked there.
pub const COSCHED_LOCAL_ASLEEP_STALE_NS: u64 = 1_000_000_000;
/// `thread_info.flags` bits read as "a reschedule is pending" (TIF_NEED_RESCHED and its lazy twin in either
/// layout: bits 4 and 5 on Linux 6.18, 3 and 4 on x86 before it).
pub const COSCHED_RESCHED_TIF_MASK: u64 = 0x38;
/// Local tasks each CPU remembers as waiting at once (a second one woken there no longer hides the first).
pub const COSCHED_LOCAL_SLOTS: u64 = 4;
/// `R` in thousandths: one task's worth ([`Task::r_milli`]).
pub const COSCHED_R_ONE_MILLI: u64 = 1000;
/// At or below this `R` (thousandths) a thread has its CPU to itself: nothing else there weighs 5 % of it.
pub const COSCHED_R_ALONE_MILLI: u64 = 1050;
/// The largest `R` BPF reports (thousandths).
pub const COSCHED_R_MAX_MILLI: u64 = 1_000_000;
/// Ring buffer size in bytes.
pub const COSCHED_RINGBUF_BYTES: u64 = 262144;
/// log2 buckets per reaction histogram row (microseconds).
pub const COSCHED_HIST_BUCKETS: u64 = 32;
/// Histogram rows.
pub const COSCHED_HIST_KINDS: u64 = 2;
/// Row: the receiver was not boosted when it got its CPU.
pub const COSCHED_HIST_UNBOOSTED: u64 = 0;
/// Row: the receiver was boosted when it got its CPU.
pub const COSCHED_HIST_BOOSTED: u64 = 1;

/// Event kind: an arrival for a managed thread that is off its CPU beyond the grace time.
pub const COSCHED_EV_ARRIVAL: u64 = 1;
/// Event kind: a managed task created a thread or a process.
pub const COSCHED_EV_FORK: u64 = 2;
/// Event kind: a managed thread exited.
pub const COSCHED_EV_EXIT: u64 = 3;
pub const COSCHED_EV_WATCH: u64 = 4;
/// A local task woke on a CPU a boosted managed thread holds (`tid`: the boosted thread).
pub const COSCHED_EV_LOCAL_WAKE: u64 = 5;
/// A managed process exec'd a setuid or setgid program (its effective ids differ from its real ones): it leaves
/// management (BPF already dropped its entries, so nothing it creates is adopted).
pub const COSCHED_EV_CRED_CHANGE: u64 = 6;
/// A local task woke on a job's CPU and the fair class left it waiting (`cpu`: that CPU; `arg`: the local
/// task's tid): the agent nudges the CPU (`src/nudge.rs`).
pub const COSCHED_EV_LOCAL_REFUSED: u64 = 7;
/// The local tasks that the thread last asked to yield on CPU `cpu` (`tid`) waited for have had their turn there
/// (blocked again, or ran a slice): its pause may end now rather than at `--yield-us`.
pub const COSCHED_EV_LOCAL_DONE: u64 = 8;

pub const COSCHED_STAT_ARRIVALS: u64 = 0;
pub const COSCHED_STAT_FLAGGED: u64 = 1;
pub const COSCHED_STAT_ON_CPU: u64 = 2;
pub const COSCHED_STAT_RECENT: u64 = 3;
pub const COSCHED_STAT_PENDING: u64 = 4;
pub const COSCHED_STAT_RINGBUF_DROPS: u64 = 5;
pub const COSCHED_STAT_SOCK_MISSES: u64 = 6;
pub const COSCHED_STAT_TASK_MISSES: u64 = 7;
pub const COSCHED_STAT_MAP_FULL: u64 = 8;
pub const COSCHED_STAT_FORKS: u64 = 9;
pub const COSCHED_STAT_SWITCHES: u64 = 10;
pub const COSCHED_STAT_REACTIONS: u64 = 11;
pub const COSCHED_STAT_ALONE: u64 = 12;
pub const COSCHED_STAT_BOOSTED: u64 = 13;
/// Local tasks woken on a CPU a boosted managed thread held.
pub const COSCHED_STAT_LOCAL_WAKES: u64 = 14;
/// Arrivals the sampled running view (`--running-view-us`) took for a running receiver that was off its CPU.
pub const COSCHED_STAT_STALE_MISSES: u64 = 15;
/// Local tasks woken too light in their CPU's fair class to be yielded to ([`COSCHED_LOCAL_LIGHT_RATIO`]).
pub const COSCHED_STAT_LOCAL_LIGHT: u64 = 16;
/// Local tasks woken on a job's CPU whose wake-up the fair class refused (each one nudged, at most one per
/// CPU per [`COSCHED_NUDGE_GAP_NS`]).
pub const COSCHED_STAT_LOCAL_REFUSED: u64 = 17;
/// Local tasks found runnable and waiting on a job's CPU after a wake-up no hook saw (each one then handled as a
/// seen one: the boost there yields, or the CPU is nudged).
pub const COSCHED_STAT_LOCAL_UNSEEN: u64 = 18;
/// Arrivals for a receiver preempted while boosted whose boost has ended since it left its CPU (no switch
/// reports that): handed over as any other arrival.
pub const COSCHED_STAT_BOOST_ENDED: u64 = 19;
/// Number of statistic counters.
pub const COSCHED_NR_STATS: u64 = 20;
/// u64 words in a cache line: the gap between the field groups of [`Task`].
pub const COSCHED_LINE_WORDS: u64 = 8;
/// Rows of the statistics array (one per CPU).
pub const COSCHED_STAT_CPUS: u64 = 256;
/// Counters per row.
pub const COSCHED_STAT_STRIDE: u64 = 24;

/// `struct cosched_task`: per-thread state, key = tid.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Task {
    pub tgid: u32,
    pub on_cpu: u32,
    pub last_cpu: u32,
    pub r_milli: u32,
    pub preempted: u32,
    pub rt: u32,
    pub exiting: u32,
    pub group_dead: u32,
    pub switched_in_ns: u64,
    pub last_ran_ns: u64,
    pub runtime_ns: u64,
    pub exec_in_ns: u64,
    /// Last switch-out asleep (blocked, not preempted) after an empty poll: it gave up spinning.
    pub last_block_ns: u64,
    /// The one before.
    pub prev_block_ns: u64,
    /// How many times it fell asleep after an empty poll.
    pub blocks: u64,
    pub _gap0: [u64; COSCHED_LINE_WORDS as usize],
    pub pending: u32,
    /// The pending arrival was handed over while the receiver ran (the sampled running view took it for idle).
    pub flagged_running: u32,
    pub last_arrival_ns: u64,
    pub flagged_ns: u64,
    pub notified_ns: u64,
    pub r_ns: u64,
    pub _gap1: [u64; COSCHED_LINE_WORDS as usize],
    pub last_poll_ns: u64,
    pub last_got_ns: u64,
    pub last_sk: u64,
    pub last_sk_ns: u64,
    /// Empty polls since `last_poll_ns` was stamped (BPF refreshes the stamp every 16 polls of a spinning thread).
    pub polls_unstamped: u64,
}

/// `struct cosched_gate`: the watch gate (a `.bss` global; BPF opens it, user space closes it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    pub watching: u32,
    /// 1 while the agent manages a job (user space's): the scheduler hooks return at once otherwise.
    pub managing: u32,
    pub contended_ns: u64,
}

/// `struct cosched_proc`: per-process state, key = tgid.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proc {
    pub job: u64,
    pub runtime_ns: u64,
}

/// `struct cosched_job`: per-job state, key = the job id.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobState {
    pub runtime_ns: u64,
}

/// `struct cosched_event`: one ring-buffer record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub kind: u32,
    pub tid: u32,
    pub tgid: u32,
    pub cpu: u32,
    pub arg: u32,
    pub _pad: u32,
    pub time_ns: u64,
    pub job: u64,
}

/// `R` as a whole number of tasks for the DCS rule (`Tq R`): `r_milli` rounded to the nearest, at least 1
/// (0, unknown, reads as 1).
pub fn r_tasks(r_milli: u32) -> u32 {
    ((u64::from(r_milli) + COSCHED_R_ONE_MILLI / 2) / COSCHED_R_ONE_MILLI).max(1) as u32
}

/// Whether a thread whose `R` is `r_milli` is known to have its CPU to itself.
pub fn alone(r_milli: u32) -> bool {
    r_milli != 0 && u64::from(r_milli) <= COSCHED_R_ALONE_MILLI
}

/// Whether a thread whose `R` is `r_milli` is known to share its CPU.
pub fn shares_cpu(r_milli: u32) -> bool {
    u64::from(r_milli) > COSCHED_R_ALONE_MILLI
}

/// A thread's fair share of `wall` on a CPU where `R` is `r_milli`: `wall / R` (unknown R: all of it).
pub fn fair_share(wall: u64, r_milli: u32) -> u64 {
    let r = u64::from(r_milli).max(COSCHED_R_ONE_MILLI);
    (u128::from(wall) * u128::from(COSCHED_R_ONE_MILLI) / u128::from(r)) as u64
}

/// Plain-old-data that may be copied from or to the raw bytes of a BPF map value or ring-buffer record.
///
/// # Safety
/// Implementors are `#[repr(C)]`, contain only integers, and have no padding the header does not spell out.
pub unsafe trait Pod: Copy + Default {
    /// Reads `Self` from the first `size_of::<Self>()` bytes; `None` if `bytes` is too short.
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < std::mem::size_of::<Self>() {
            return None;
        }
        // SAFETY: length checked; every bit pattern is a valid value of an all-integer repr(C) struct;
        // read_unaligned copes with any alignment of the source buffer.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Self>()) })
    }

    /// The raw bytes of `self`.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: an all-integer repr(C) struct without implicit padding is valid to view as bytes.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}

// SAFETY: all three are repr(C), all-integer, padded by hand to multiples of 8 bytes (checked below).
unsafe impl Pod for Task {}
unsafe impl Pod for Proc {}
// SAFETY: as above.
unsafe impl Pod for JobState {}
unsafe impl Pod for Event {}

const _: () = assert!(std::mem::size_of::<Task>() == 296);
const _: () = assert!(std::mem::size_of::<Proc>() == 16);
const _: () = assert!(std::mem::size_of::<JobState>() == 8);
const _: () = assert!(std::mem::size_of::<Event>() == 40);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const HEADER: &str = include_str!("bpf/intf.h");

    fn defines() -> BTreeMap<String, u64> {
        HEADER
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                (it.next()? == "#define").then_some(())?;
                let name = it.next()?;
                let value = it.next()?.parse().ok()?;
                Some((name.to_string(), value))
            })
            .collect()
    }

    /// Sums `u32` / `u64` field sizes of `struct <name> { ... }` in the header.
    fn struct_size(name: &str) -> usize {
        let start = HEADER
            .find(&format!("struct {name} {{"))
            .unwrap_or_else(|| panic!("struct {name} in intf.h"));
        let body = &HEADER[start..start + HEADER[start..].find("};").unwrap()];
        let defines = defines();
        body.lines()
            .map(|l| l.trim_start())
            .map(|l| {
                let width = if l.starts_with("u64 ") {
                    8
                } else if l.starts_with("u32 ") {
                    4
                } else {
                    return 0;
                };
                // An array field, `u64 name[N];`, N a number or a #define of the header.
                let count = l
                    .split_once('[')
                    .and_then(|(_, rest)| rest.split_once(']'))
                    .map(|(n, _)| {
                        n.trim()
                            .parse::<u64>()
                            .ok()
                            .or_else(|| defines.get(n.trim()).copied())
                    })
                    .map(|n| n.unwrap_or_else(|| panic!("array length in {l:?}")))
                    .unwrap_or(1);
                width * count as usize
            })
            .sum()
    }

    #[test]
    fn every_define_matches() {
        let rust: BTreeMap<&str, u64> = [
            ("COSCHED_MAX_TASKS", COSCHED_MAX_TASKS),
            ("COSCHED_MAX_PROCS", COSCHED_MAX_PROCS),
            ("COSCHED_MAX_JOBS", COSCHED_MAX_JOBS),
            ("COSCHED_LOCAL_WAIT_STALE_NS", COSCHED_LOCAL_WAIT_STALE_NS),
            ("COSCHED_LOCAL_TURN_MIN_NS", COSCHED_LOCAL_TURN_MIN_NS),
            ("COSCHED_LOCAL_LIGHT_RATIO", COSCHED_LOCAL_LIGHT_RATIO),
            ("COSCHED_LOCAL_SLOTS", COSCHED_LOCAL_SLOTS),
            ("COSCHED_NUDGE_GAP_NS", COSCHED_NUDGE_GAP_NS),
            ("COSCHED_JOB_CPU_NS", COSCHED_JOB_CPU_NS),
            ("COSCHED_ASLEEP_CHECK_NS", COSCHED_ASLEEP_CHECK_NS),
            (
                "COSCHED_LOCAL_ASLEEP_STALE_NS",
                COSCHED_LOCAL_ASLEEP_STALE_NS,
            ),
            ("COSCHED_RESCHED_TIF_MASK", COSCHED_RESCHED_TIF_MASK),
            ("COSCHED_R_ONE_MILLI", COSCHED_R_ONE_MILLI),
            ("COSCHED_R_ALONE_MILLI", COSCHED_R_ALONE_MILLI),
            ("COSCHED_R_MAX_MILLI", COSCHED_R_MAX_MILLI),
            ("COSCHED_RINGBUF_BYTES", COSCHED_RINGBUF_BYTES),
            ("COSCHED_HIST_BUCKETS", COSCHED_HIST_BUCKETS),
            ("COSCHED_HIST_KINDS", COSCHED_HIST_KINDS),
            ("COSCHED_HIST_UNBOOSTED", COSCHED_HIST_UNBOOSTED),
            ("COSCHED_HIST_BOOSTED", COSCHED_HIST_BOOSTED),
            ("COSCHED_EV_ARRIVAL", COSCHED_EV_ARRIVAL),
            ("COSCHED_EV_FORK", COSCHED_EV_FORK),
            ("COSCHED_EV_EXIT", COSCHED_EV_EXIT),
            ("COSCHED_EV_WATCH", COSCHED_EV_WATCH),
            ("COSCHED_EV_LOCAL_WAKE", COSCHED_EV_LOCAL_WAKE),
            ("COSCHED_EV_CRED_CHANGE", COSCHED_EV_CRED_CHANGE),
            ("COSCHED_EV_LOCAL_REFUSED", COSCHED_EV_LOCAL_REFUSED),
            ("COSCHED_EV_LOCAL_DONE", COSCHED_EV_LOCAL_DONE),
            ("COSCHED_STAT_ARRIVALS", COSCHED_STAT_ARRIVALS),
            ("COSCHED_STAT_FLAGGED", COSCHED_STAT_FLAGGED),
            ("COSCHED_STAT_ON_CPU", COSCHED_STAT_ON_CPU),
            ("COSCHED_STAT_RECENT", COSCHED_STAT_RECENT),
            ("COSCHED_STAT_PENDING", COSCHED_STAT_PENDING),
            ("COSCHED_STAT_RINGBUF_DROPS", COSCHED_STAT_RINGBUF_DROPS),
            ("COSCHED_STAT_SOCK_MISSES", COSCHED_STAT_SOCK_MISSES),
            ("COSCHED_STAT_TASK_MISSES", COSCHED_STAT_TASK_MISSES),
            ("COSCHED_STAT_MAP_FULL", COSCHED_STAT_MAP_FULL),
            ("COSCHED_STAT_FORKS", COSCHED_STAT_FORKS),
            ("COSCHED_STAT_SWITCHES", COSCHED_STAT_SWITCHES),
            ("COSCHED_STAT_REACTIONS", COSCHED_STAT_REACTIONS),
            ("COSCHED_STAT_ALONE", COSCHED_STAT_ALONE),
            ("COSCHED_STAT_BOOSTED", COSCHED_STAT_BOOSTED),
            ("COSCHED_STAT_LOCAL_WAKES", COSCHED_STAT_LOCAL_WAKES),
            ("COSCHED_STAT_STALE_MISSES", COSCHED_STAT_STALE_MISSES),
            ("COSCHED_STAT_LOCAL_LIGHT", COSCHED_STAT_LOCAL_LIGHT),
            ("COSCHED_STAT_LOCAL_REFUSED", COSCHED_STAT_LOCAL_REFUSED),
            ("COSCHED_STAT_LOCAL_UNSEEN", COSCHED_STAT_LOCAL_UNSEEN),
            ("COSCHED_STAT_BOOST_ENDED", COSCHED_STAT_BOOST_ENDED),
            ("COSCHED_NR_STATS", COSCHED_NR_STATS),
            ("COSCHED_STAT_CPUS", COSCHED_STAT_CPUS),
            ("COSCHED_LINE_WORDS", COSCHED_LINE_WORDS),
            ("COSCHED_STAT_STRIDE", COSCHED_STAT_STRIDE),
        ]
        .into_iter()
        .collect();
        let header = defines();
        for (name, value) in &header {
            assert_eq!(
                rust.get(name.as_str()),
                Some(value),
                "{name} differs between intf.h and intf.rs"
            );
        }
        assert_eq!(
            header.len(),
            rust.len(),
            "intf.rs has constants intf.h lacks"
        );
    }

    #[test]
    fn struct_sizes_match() {
        assert_eq!(struct_size("cosched_task"), std::mem::size_of::<Task>());
        assert_eq!(struct_size("cosched_proc"), std::mem::size_of::<Proc>());
        assert_eq!(struct_size("cosched_job"), std::mem::size_of::<JobState>());
        assert_eq!(struct_size("cosched_event"), std::mem::size_of::<Event>());
        assert_eq!(struct_size("cosched_gate"), std::mem::size_of::<Gate>());
    }

    #[test]
    fn r_in_thousandths_reads_as_tasks_contention_and_share() {
        assert_eq!(r_tasks(0), 1);
        assert_eq!(r_tasks(1040), 1);
        assert_eq!(r_tasks(1500), 2);
        assert_eq!(r_tasks(2000), 2);
        assert_eq!(r_tasks(2490), 2);
        assert!(!alone(0) && !shares_cpu(0), "unknown is neither");
        assert!(alone(1000) && !shares_cpu(1000));
        assert!(alone(1050) && !shares_cpu(1050));
        assert!(!alone(1051) && shares_cpu(1051));
        // Two tasks of equal weight: half the time; 2.5 (one task and a group worth one and a half): 40 %.
        assert_eq!(fair_share(10_000, 2000), 5_000);
        assert_eq!(fair_share(10_000, 2500), 4_000);
        assert_eq!(fair_share(10_000, 0), 10_000);
    }

    #[test]
    fn pod_round_trip() {
        let e = Event {
            kind: 1,
            tid: 2,
            tgid: 3,
            cpu: 4,
            arg: 5,
            _pad: 0,
            time_ns: 6,
            job: 7,
        };
        assert_eq!(Event::from_bytes(e.as_bytes()), Some(e));
        assert_eq!(Event::from_bytes(&[0u8; 8]), None);
    }
}
