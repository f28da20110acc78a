/* SPDX-License-Identifier: MIT */
/*
 * intf.h — the ONE interface between the BPF side (cosched.bpf.c) and the Rust side (src/intf.rs) of the
 * cosched agent: constants, map value layouts, the ring-buffer event, statistic indices.
 *
 * Rules: fixed-width types only, every struct padded by hand to a multiple of 8 bytes, no enums in structs.
 * src/intf.rs mirrors every item with #[repr(C)] and a unit test parses this file and checks that every
 * constant and every struct size matches, so the two sides cannot drift apart silently.
 */
#ifndef COSCHED_INTF_H
#define COSCHED_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned int u32;
typedef unsigned long long u64;
#endif

/* Capacities. */
#define COSCHED_MAX_TASKS 8192     /* managed threads (tasks map) */
#define COSCHED_MAX_PROCS 4096     /* managed processes (procs map) */
#define COSCHED_MAX_JOBS 64        /* live jobs (jobs map): twice the agent's cap on live jobs */
/* A local task recorded as waiting on a CPU for longer than this has gone (killed before it ran): BPF forgets it,
 * and a paused boost resumes. One that migrates before it runs is moved to its new CPU's record. */
#define COSCHED_LOCAL_WAIT_STALE_NS 50000000
/* A local task's turn ends when it blocks again or once it has run one slice of the fair class since its wake-up
 * (its own `se.slice`, this floor where the kernel has none or a shorter one): then it has had its response and
 * competes like any other task. Until blocking alone ended it, a local program that computed for tens of ms after
 * one wake-up held back every boost on its CPU all that while (this sandbox's own daemons did: gang scheduling
 * lost a quarter of its slots to them). */
#define COSCHED_LOCAL_TURN_MIN_NS 1000000

/* A woken local task whose top-level scheduling entity weighs less than 1/this of its CPU's runnable fair-class
 * weight is not yielded to (cosched.bpf.c, light_in_fair_class): the fair class gives it under 1/64 of the CPU
 * whether or not a boost runs. A nice-0 task beside a 262144-share cgroup is light; tasks of comparable weight
 * (one autogroup beside another, nice 0 beside nice 19) are far from it. */
#define COSCHED_LOCAL_LIGHT_RATIO 64
/* Nudging a CPU for a local task the fair class left waiting (cosched.bpf.c, cosched_wakeup; src/nudge.rs). On
 * EEVDF a wake-up preempts only if the woken task is the fair class's pick at that moment, and the current task
 * is protected until the end of its slice (RUN_TO_PARITY); once that protection ends nothing looks again until
 * the next tick (4 ms at HZ = 250). BPF sees such a refused wake-up (the current task of the woken task's CPU
 * is in the fair class and has no reschedule pending) and, on a CPU where a managed job runs, tells user space,
 * whose real-time nudger thread pinned to that CPU runs for a moment: the fair class then picks afresh, without
 * the protection, and the local task runs if it is the pick. */
#define COSCHED_NUDGE_GAP_NS 100000      /* at most one nudge event per CPU per this long */
#define COSCHED_JOB_CPU_NS 100000000     /* a CPU is a job's while a managed thread switched there this recently */
/* Wake-ups no hook sees. On this sandbox nothing is traced while a thread of its own daemon (`process_api`'s
 * `tokio-rt-worker`) is the current task of a CPU, interrupts included: a local task woken then by its timer
 * has no record, and a boost that starts before it runs never yields (the lab's 1 ms probe waited 12-26 ms
 * behind one at K = 0, docs/lab-local.md). So a local task that blocks after a turn is remembered as asleep on
 * its CPU (for COSCHED_LOCAL_ASLEEP_STALE_NS since its last block), and a managed thread's empty poll or
 * boosted switch-in there looks at most every COSCHED_ASLEEP_CHECK_NS whether one of them is runnable and
 * waiting: if so it is recorded as waiting from then on, and the boost yields or the CPU is nudged. */
#define COSCHED_ASLEEP_CHECK_NS 100000
#define COSCHED_LOCAL_ASLEEP_STALE_NS 1000000000
/* thread_info.flags bits meaning "a reschedule is pending": TIF_NEED_RESCHED and TIF_NEED_RESCHED_LAZY at 4 and 5
 * (the generic TIF layout of Linux 6.18; 3 and 4 in x86's own before it). All three bits, so that either layout
 * reads a pending reschedule as pending; a false "pending" only costs a nudge not sent. Measured on 6.18: bit 4
 * was set after 8003 of 8008 wake-ups of the local probe that preempted, and clear after 60 of 61 that did not. */
#define COSCHED_RESCHED_TIF_MASK 56     /* bits 3, 4 and 5 */

/* R, the DCS count of tasks sharing a CPU, in thousandths (cosched_task.r_milli): weighted across cgroups and
 * autogroups, so it is not a whole number. At or below COSCHED_R_ALONE_MILLI a thread has its CPU to itself
 * (what else is runnable there weighs under 5 % of it): nothing to preempt. */
#define COSCHED_R_ONE_MILLI 1000
#define COSCHED_R_ALONE_MILLI 1050
#define COSCHED_R_MAX_MILLI 1000000
#define COSCHED_RINGBUF_BYTES 262144
#define COSCHED_HIST_BUCKETS 32    /* log2 buckets of microseconds: bucket b holds [2^(b-1), 2^b) us, b=0 holds 0 us */
#define COSCHED_HIST_KINDS 2       /* histogram rows, see COSCHED_HIST_* */

/* Histogram rows: reaction = flagged arrival -> receiver switched in. */
#define COSCHED_HIST_UNBOOSTED 0   /* not boosted: measured from the FIRST flagged arrival it waited behind */
#define COSCHED_HIST_BOOSTED 1     /* real-time (boosted): measured from the arrival last handed to the agent */

/* Event kinds (struct cosched_event.kind). */
#define COSCHED_EV_ARRIVAL 1       /* an arrival for a managed thread that is off its CPU beyond the grace time */
#define COSCHED_EV_FORK 2          /* a managed task created a thread or a process (now managed too) */
#define COSCHED_EV_EXIT 3          /* a managed thread exited (its entry is gone from the tasks map) */
#define COSCHED_EV_WATCH 4         /* the watch gate opened: user space attaches the message hooks */
#define COSCHED_EV_LOCAL_WAKE 5    /* a local (unmanaged, user, fair-class) task woke on a CPU a boosted thread holds */
#define COSCHED_EV_CRED_CHANGE 6   /* a managed process exec'd a setuid/setgid program: it leaves management */
#define COSCHED_EV_LOCAL_REFUSED 7 /* a local task woke on a job's CPU and the fair class left it waiting: nudge */
#define COSCHED_EV_LOCAL_DONE 8    /* the local tasks a boosted thread was asked to yield to have had their turn */

/* Statistic indices into each row of `stats[COSCHED_STAT_CPUS][COSCHED_STAT_STRIDE]` (user space sums the rows).
 * Never lose data silently: every drop and miss is counted. */
#define COSCHED_STAT_ARRIVALS 0        /* sk_data_ready on a socket owned by a managed thread */
#define COSCHED_STAT_FLAGGED 1         /* arrivals handed to user space (receiver off CPU beyond grace) */
#define COSCHED_STAT_ON_CPU 2          /* arrivals for a receiver already on a CPU */
#define COSCHED_STAT_RECENT 3          /* arrivals for a receiver that blocked less than the grace time ago */
#define COSCHED_STAT_PENDING 4         /* arrivals while an earlier flagged one is still pending */
#define COSCHED_STAT_RINGBUF_DROPS 5   /* bpf_ringbuf_reserve failures: events lost */
#define COSCHED_STAT_SOCK_MISSES 6     /* arrivals on sockets with no known owner (not managed, or not seen yet) */
#define COSCHED_STAT_TASK_MISSES 7     /* socket owner no longer in the tasks map */
#define COSCHED_STAT_MAP_FULL 8        /* map updates or socket-storage creations that failed (at capacity, no memory) */
#define COSCHED_STAT_FORKS 9           /* tasks that became managed by inheritance */
#define COSCHED_STAT_SWITCHES 10       /* sched_switch involving a managed task */
#define COSCHED_STAT_REACTIONS 11      /* reactions recorded in the histogram */
#define COSCHED_STAT_ALONE 12          /* arrivals for a receiver with its CPU to itself (R <= 1): nothing to preempt */
#define COSCHED_STAT_BOOSTED 13        /* arrivals for a boosted receiver preempted by a higher real-time task */
#define COSCHED_STAT_LOCAL_WAKES 14    /* local tasks woken on a CPU a boosted managed thread held (boost told to yield) */
#define COSCHED_STAT_STALE_MISSES 15  /* arrivals the sampled running view (running_view_ns) took for a running receiver
                                       * that was off its CPU: left to wait, as seed 002's NIC did */
#define COSCHED_STAT_LOCAL_LIGHT 16   /* local tasks woken too light in their CPU's fair class to be yielded to (any CPU) */
#define COSCHED_STAT_LOCAL_REFUSED 17 /* local tasks woken on a job's CPU whose wake-up the fair class refused */
#define COSCHED_STAT_LOCAL_UNSEEN 18  /* local tasks found waiting on a job's CPU after a wake-up no hook saw */
#define COSCHED_STAT_BOOST_ENDED 19   /* arrivals for a receiver preempted while boosted whose boost has ended since it
                                       * left its CPU (handed over as any other; `rt` of its entry was stale) */
#define COSCHED_NR_STATS 20
#define COSCHED_STAT_CPUS 256      /* rows of `stats`: one per CPU (CPU ids fold modulo), so no line bounces */
#define COSCHED_STAT_STRIDE 24     /* u64 per row (>= COSCHED_NR_STATS; 192 bytes, three cache lines) */

/* Per-thread state (tasks map, key = tid). Created by user space at registration (or by BPF on fork), then
 * written only by BPF, so user space never races a read-modify-write with it.
 * Times are bpf_ktime_get_ns() = CLOCK_MONOTONIC nanoseconds.
 *
 * Three groups of fields, each written from one place, kept a cache line apart (the map does not align its
 * values, so the gaps are a full line): on every message the arrival hook (on the sender's CPU) reads the
 * scheduling group and writes the arrival group, and the receive hook (on the receiver's CPU) writes the receive
 * group, so a message moves no line of this entry between CPUs. With one mixed group, two moved per message. */
#define COSCHED_LINE_WORDS 8       /* u64 words in a cache line: the gap between the groups of cosched_task */
struct cosched_task {
	/* scheduling group: written at the thread's context switches, on its own CPU (r_milli also by an arrival,
	 * at most every rq_refresh_ns) */
	u32 tgid;              /* owning process */
	u32 on_cpu;            /* CPU + 1 while the thread is on a CPU, 0 when off */
	u32 last_cpu;          /* CPU it last ran on */
	u32 r_milli;           /* the DCS R in thousandths: how many tasks of its weight share its CPU, every cgroup and
	                        * autogroup counted by weight, itself included; at last switch-in/arrival; 0 unknown */
	u32 preempted;         /* 1 if it left its CPU still runnable (preempted), 0 if it blocked */
	u32 rt;                /* 1 if it left its CPU with a real-time policy (boosted) */
	u32 exiting;           /* 1 once it passed do_exit: its next switch-out at TASK_DEAD is its last */
	u32 group_dead;        /* with exiting: it was its process's last thread */
	u64 switched_in_ns;    /* last switch-in */
	u64 last_ran_ns;       /* last switch-out (or switch-in while on CPU) */
	u64 runtime_ns;        /* total CPU time booked by the kernel (se.sum_exec_runtime) since it became managed */
	u64 exec_in_ns;        /* its se.sum_exec_runtime at the last switch-in */
	u64 last_block_ns;     /* last switch-out asleep (blocked, not preempted) after an empty poll: it gave up
	                        * spinning for a message, so it gives its CPU back by itself when it waits */
	u64 prev_block_ns;     /* the one before (a spin-only receiver too falls asleep once in a while) */
	u64 blocks;            /* how many times it fell asleep after an empty poll (the self-check's "waits by
	                        * blocking": a rate, where one sleep is not a habit) */
	u64 _gap0[COSCHED_LINE_WORDS];
	/* arrival group: written by arrivals, on the sender's CPU (pending also cleared at the switch-in) */
	u32 pending;           /* 1 between a flagged arrival and the next switch-in */
	u32 flagged_running;   /* the pending arrival was handed over while the receiver ran (a sampled running view
	                        * took it for idle, --running-view-us): its next switch-in answers no arrival */
	u64 last_arrival_ns;   /* last arrival on one of its sockets, flagged or not (window extension) */
	u64 flagged_ns;        /* arrival time of the pending flagged arrival (the reaction is measured from it) */
	u64 notified_ns;       /* when user space was last told about it (re-told after `renotify_ns`) */
	u64 r_ns;              /* when r_milli was last refreshed at an arrival (at most every `rq_refresh_ns`) */
	u64 _gap1[COSCHED_LINE_WORDS];
	/* receive group: written by the thread's own receives */
	u64 last_poll_ns;      /* last receive that found no data (EAGAIN): a spinning receiver polling */
	u64 last_got_ns;       /* last receive that returned data */
	u64 last_sk;           /* the socket it last received on (kernel address; its owner is in its socks storage) */
	u64 last_sk_ns;        /* when that socket's owner was last checked */
	u64 polls_unstamped;   /* empty polls since last_poll_ns was stamped (COSCHED_POLLS_PER_STAMP) */
};

/* The watch gate (one global in .bss, on a cache line of its own). The message hooks run on every message of
 * every socket on the machine; DCS can act only where a managed thread shares its CPU (R > 1), so while none
 * has for a while they are not even attached. BPF opens the gate when it sees a managed thread share its CPU
 * and tells user space (COSCHED_EV_WATCH), which attaches them; user space closes it and detaches them once
 * `contended_ns` is older than the agent's --watch-hold-ms. The hooks also check `watching` themselves, for
 * the moments between the two.
 * `managing` is user space's: 1 from the first job's registration until no job is left. Without a job the
 * scheduler hooks (switch, wake-up, migration) have nothing to book and no boost to pause, and they run on every
 * context switch of the machine: they return at once then, so an idle agent costs its node only their entry
 * (docs/lab-local.md, "What the agent costs every other task"). */
struct cosched_gate {
	u32 watching;          /* 1: the arrival and receive hooks do their work; 0: they return at once */
	u32 managing;          /* 1 while the agent manages a job: the scheduler hooks do their work; 0: return at once */
	u64 contended_ns;      /* last time a managed thread was seen sharing its CPU (written at most every ms) */
};

/* How many local tasks each CPU remembers as waiting at once. With one, a second local task woken on the CPU
 * (a compile, a shell beside the interactive program) took the first one's place and, once it ran, cleared it:
 * the agent then saw no local task waiting and could resume a paused boost over the first. */
#define COSCHED_LOCAL_SLOTS 4

/* Per-CPU state (the `cpus` global, 184 bytes per CPU): the local tasks waiting on it since their wake-up, the
 * last time a boosted thread there was asked to step aside for one (so the agent is told once, not at every
 * wake-up of a busy local task), when a job last ran there and the CPU was last nudged, and the local tasks
 * asleep there whose next wake-up the hooks may miss. */
struct cosched_cpu {
	u32 local_waiting[COSCHED_LOCAL_SLOTS]; /* local tasks woken on this CPU whose turn is not over, 0: free */
	u64 local_woke_ns[COSCHED_LOCAL_SLOTS]; /* when each woke */
	u64 local_exec_ns[COSCHED_LOCAL_SLOTS]; /* its sum_exec_runtime at that wake-up (its turn's start) */
	u32 asked_tid;         /* the boosted thread last asked to yield on this CPU */
	u32 _pad;
	u64 asked_ns;          /* when it was asked */
	u64 agent_ns;          /* CPU time the agent's own threads ran on this CPU since load (kernel accounting) */
	u64 agent_exec_in;     /* sum_exec_runtime of the agent thread on this CPU at its switch-in, 0: none runs */
	u64 job_ns;            /* last switch of a managed thread on this CPU (at most every COSCHED_NUDGE_GAP_NS) */
	u64 nudged_ns;         /* last nudge event for this CPU */
	u32 local_asleep[COSCHED_LOCAL_SLOTS]; /* local tasks that blocked on this CPU after a turn, 0: free */
	u64 local_asleep_ns[COSCHED_LOCAL_SLOTS]; /* when each last blocked */
	u64 asleep_checked_ns; /* last look at this CPU's sleepers for a wake-up the hooks missed */
};

/* Per-process state (procs map, key = tgid). */
struct cosched_proc {
	u64 job;               /* job id the agent gave at registration, inherited by children */
	u64 runtime_ns;        /* total CPU time of all its threads since managed (kernel accounting) */
};

/* Per-job state (jobs map, key = the job id). Created by user space at registration, deleted when the job's last
 * process is gone: the job's CPU time, processes that already exited included, is what its budget is charged. */
struct cosched_job {
	u64 runtime_ns;        /* total CPU time of all its threads since managed, exited ones included */
};

/* Ring-buffer event, BPF -> user space. */
struct cosched_event {
	u32 kind;              /* COSCHED_EV_* */
	u32 tid;               /* receiver / new task / exiting task */
	u32 tgid;              /* its process */
	u32 cpu;               /* ARRIVAL: the receiver's last CPU; FORK: parent tid */
	u32 arg;               /* ARRIVAL: the receiver's r_milli (the DCS R); LOCAL_WAKE: the local task's tid */
	u32 _pad;
	u64 time_ns;           /* event time (bpf_ktime_get_ns) */
	u64 job;               /* job id */
};

#endif /* COSCHED_INTF_H */
