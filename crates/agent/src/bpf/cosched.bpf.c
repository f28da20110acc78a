// SPDX-License-Identifier: GPL-2.0
/*
 * cosched.bpf.c — the agent's eyes: which managed thread is on a CPU, which socket belongs to which managed
 * thread, and whether a message arrival needs the agent's attention (DCS, seed 000_e8004e1596fde6a5.txt §3.3:
 * "on message receipt, if current_LWP != FM_LWP, interrupt"; seed 002_53dfbd94bd660dc4.txt: the driver's
 * context-switch callback keeps "who is running" exact).
 *
 * Hooks (all BTF-typed raw tracepoints, `tp_btf`: this kernel has no kprobes/fentry, and tp_btf needs neither
 * tracefs — not mounted here — nor perf events):
 *   sched_switch                 on-CPU state, last-ran time, CPU time (the kernel's own sum_exec_runtime),
 *                                run-queue length, reaction histogram; an exited thread's final switch-out
 *                                (TASK_DEAD) books its last stint and drops its entry (so a reused tid is
 *                                never "managed")
 *   sched_wakeup                 a local task woke on a CPU a boosted managed thread holds: the boost yields;
 *                                one the fair class left waiting on a job's CPU: the CPU is nudged
 *   sched_migrate_task           a local task waiting since its wake-up moves its record to its new CPU
 *   sched_process_fork           children and threads of a managed task become managed
 *   sched_process_exec           a managed process that exec'd a setuid/setgid program leaves management
 *   sched_process_exit           marks a managed thread exiting (its final switch-out is its last)
 *   sock_recv_length             socket -> receiving thread (runs in its context); empty polls of spinning
 *                                receivers, which also look for local tasks woken unseen on their CPU;
 *                                last successful receive
 *   sk_data_ready                arrival; for TCP this runs in NET_RX softirq on the SENDER's CPU, which is
 *                                why the owner comes from the socket map and not from `current`.
 *
 * The watch gate (struct cosched_gate in intf.h): the two message hooks run on every message of every socket on
 * the machine, a cost the job pays on its critical path even when nothing needs coscheduling. DCS can only act
 * where a managed thread shares its CPU (the rule's R > 1), so they are attached only while such sharing was
 * seen lately: this program opens the gate when a managed thread shares its CPU — it waited for it at least
 * `share_wait_ns` (the kernel's run-delay accounting, so a kernel thread's or the agent's moment on the CPU does
 * not count), or a flagged arrival found it queued behind others — and tells user space, which attaches them;
 * user space closes the gate and detaches them once that is older than --watch-hold-ms.
 *
 * Decision made here (so most arrivals never wake user space): an arrival is flagged only when its receiver is
 * off its CPU, shares that CPU with others (R > 1), was preempted (still runnable) or blocked more than
 * `grace_ns` ago, and has no earlier flagged arrival pending (or that one was handed over more than
 * `renotify_ns` ago: the agent may have refused it then and allow it now). The layouts are in intf.h, shared
 * with src/intf.rs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "intf.h"

char LICENSE[] SEC("license") = "GPL";

/* Options (read-only after load), safe defaults. */
const volatile u64 grace_ns = 100000;    /* 100 us: a receiver that ran this recently needs no help */
const volatile u64 renotify_ns = 1000000; /* 1 ms: a flagged arrival still pending is handed over again */
const volatile u64 rq_refresh_ns = 1000000; /* 1 ms: how stale R may get before an arrival refreshes it */
/* A thread that keeps polling an empty socket has last_poll_ns refreshed every this many polls: a spinning
 * receiver polls every 1-8 us here, so every 16-130 us, against the policy's POLL_RECENT_NS (2 ms). */
#define COSCHED_POLLS_PER_STAMP 16
const volatile u64 relearn_ns = 1000000;    /* 1 ms: how often a thread's socket is written to the socket map again */
const volatile u64 share_wait_ns = 1000000; /* 1 ms: a managed thread that waited this long for its CPU shares it */
const volatile u64 running_view_ns = 0;   /* 0: whether a receiver runs is read at its arrival; else as seen at the
                                          * last sample, one every running_view_ns (seed 002's NIC, ~1 ms) */
const volatile u32 nr_cpus = 1;            /* CPUs online (a group's configured share spreads over them) */
const volatile u32 agent_tgid = 0;         /* the agent's own process: its CPU time is counted per CPU */
const volatile u32 yield_to_local = 1;      /* a local task waking on a boosted thread's CPU ends the boost */
const volatile u32 nudge_local = 1;         /* a local task the fair class leaves waiting on a job's CPU: nudge it */

/* Statistics and the reaction histogram: plain globals, read by user space through the mmapped .bss. */
u64 stats[COSCHED_STAT_CPUS][COSCHED_STAT_STRIDE] __attribute__((aligned(128)));
u64 hist[COSCHED_HIST_KINDS * COSCHED_HIST_BUCKETS];
/* Closed at load: with no job yet, nothing to watch. Its own cache line: every message hook reads it. */
struct cosched_gate gate __attribute__((aligned(128)));
/* Which managed thread runs boosted on each CPU (CPU ids fold modulo COSCHED_STAT_CPUS). */
struct cosched_cpu cpus[COSCHED_STAT_CPUS] __attribute__((aligned(128)));

/* How often the gate's contended_ns is rewritten while sharing goes on (each write costs the message hooks'
 * CPUs a cache miss on the gate). */
#define CONTENDED_GRAIN_NS 1000000

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* The run queue of the CPU `p` is on or last ran on. Reached through its cfs_rq (cgroup scheduling is built
 * in): the per-CPU `runqueues` symbol would need the kernel's full symbol table, which this kernel lacks. */
static __always_inline struct rq *rq_of(struct task_struct *p)
{
	struct cfs_rq *cfs = p->se.cfs_rq;

	return cfs ? cfs->rq : NULL;
}

/* A nice-0 task's load weight as the kernel keeps it (scale_load(1024) on 64-bit kernels). */
#define NICE_0_WEIGHT (1024ULL << 10)
#define SHARES_SCALE 10

/* cpu cgroup id (its kernfs node id) -> its own cpu.shares while the agent holds it lowered (cpu_cgroup.rs):
 * the reading of R counts the group at its own weight, or the lever would inflate the job's R and shrink the
 * credit it repays with. The agent writes it; few entries, one per lowered job. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COSCHED_MAX_JOBS);
	__type(key, u64);
	__type(value, u64);
} held_shares SEC(".maps");

/* held_shares's entry count, written by the agent, so the reading of R looks that map up only while some group
 * is held (an array lookup is a load; a hash lookup hashes). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} held_groups SEC(".maps");
/* Group levels walked up from a task to the root cfs_rq (the kernel nests at most a few). */
#define MAX_GROUP_DEPTH 8

/* The DCS R of a task, in thousandths: how many tasks of its weight share its CPU, every cpu cgroup and
 * autogroup counted by the weight the kernel gives it. Level by level from the task up to the root cfs_rq,
 *
 *     R = prod over levels of (own + others) / own
 *
 * with `others` the load weight queued at that level beside the task's own entity (its group, above the first
 * level), and `own`: the task's at nice 0 (the agent's own demotion to nice 19 must not inflate it), a group's
 * the larger of its current weight and its configured share (an autogroup's at nice 0) times the part of the
 * group's load average on this CPU, at least spread evenly over the CPUs (its current weight follows the group's load average, which the agent's boosts take out of the fair
 * class: read as is it made R run from 2 to 43 within one run, docs/lab-local.md). Tasks in one group: R is their count, the reading of the
 * seed. A job in its own session (autogroup) or cgroup beside one competing group of equal share: R = 2 however
 * many tasks that group has, the share CFS gives it. A foreign task beside a cgroup of 262144 shares: R grows by
 * 1/128, not by 1 (counting every runnable task alike cut the lab's job to F 0.64). */
static __always_inline u32 cpu_r_milli(struct task_struct *p)
{
	/* Direct loads through the BTF-typed pointers (the verifier guards them), not bpf_probe_read_kernel: this
	 * runs at every switch-in of a managed thread. */
	struct sched_entity *se = &p->se;
	u64 r = COSCHED_R_ONE_MILLI;
	u32 zero = 0, *held_count = bpf_map_lookup_elem(&held_groups, &zero);
	bool any_held = held_count && *held_count;
	int level;

	for (level = 0; level < MAX_GROUP_DEPTH && se; level++) {
		struct cfs_rq *cfs = se->cfs_rq;
		u64 own, queued, others;

		if (!cfs)
			break;
		if (level == 0) {
			own = NICE_0_WEIGHT;
		} else {
			struct cfs_rq *mine = se->my_q;
			struct task_group *tg = mine ? mine->tg : NULL;
			u64 shares = tg ? tg->shares : 0;
			u64 even, spread;
			s64 total;

			/* An autogroup counts at nice 0: its nice is the lever the agent lowers a job's session with
			 * (autogroup.rs), which must not inflate the job's R and so its credit. */
			if (tg && bpf_core_field_exists(tg->autogroup) && tg->autogroup) {
				shares = NICE_0_WEIGHT;
			} else if (tg && any_held) {
				struct cgroup *cg = tg->css.cgroup;
				u64 id = cg && cg->kn ? cg->kn->id : 0;
				u64 *held = id ? bpf_map_lookup_elem(&held_shares, &id) : NULL;

				if (held)
					shares = *held << SHARES_SCALE;
			}
			/* Its share here: the part of the group's load average on this CPU, as the kernel spreads it
			 * (calc_group_shares); the boosts lower that average on every CPU of the job alike, so the
			 * part stays. Within [shares / CPUs, shares]. */
			even = shares / (nr_cpus ? nr_cpus : 1);
			total = tg ? tg->load_avg.counter : 0;
			if (total > 0 && mine->tg_load_avg_contrib > 0) {
				spread = shares * mine->tg_load_avg_contrib / (u64)total;
				if (spread > shares)
					spread = shares;
				if (spread > even)
					even = spread;
			}

			own = se->load.weight > even ? se->load.weight : even;
		}
		queued = cfs->load.weight;
		others = queued;
		if (se->on_rq)
			others = queued > se->load.weight ? queued - se->load.weight : 0;
		if (!own)
			own = 1;
		r = r * (own + others) / own;
		if (r >= COSCHED_R_MAX_MILLI)
			return COSCHED_R_MAX_MILLI;
		se = se->parent;
	}
	return r;
}

/* How long `next` waited runnable for its CPU before this switch-in, from the kernel's own run-delay accounting
 * (sched_info.last_queued: set when it was queued, woken or preempted, cleared right after this tracepoint),
 * against the run queue's clock (the same sched_clock). 0 when unknown. */
static __always_inline u64 waited_ns(struct task_struct *next)
{
	struct rq *rq = rq_of(next);
	u64 queued = next->sched_info.last_queued, clock;

	if (!rq || !queued)
		return 0;
	clock = rq->clock;
	return clock > queued ? clock - queued : 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COSCHED_MAX_TASKS);
	__type(key, u32);
	__type(value, struct cosched_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COSCHED_MAX_PROCS);
	__type(key, u32);
	__type(value, struct cosched_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COSCHED_MAX_JOBS);
	__type(key, u64);
	__type(value, struct cosched_job);
} jobs SEC(".maps");

/* Boosts the agent started on its own (not in answer to a handed-over arrival), key = tid, value = when:
 * written by user space off the reaction path, so the reaction of such a boost is measured from it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, COSCHED_MAX_TASKS);
	__type(key, u32);
	__type(value, u64);
} kicked SEC(".maps");

/* Socket -> the managed thread that receives on it, kept in the socket's own storage: found from the socket
 * without hashing on every arrival, and gone with the socket, so a later socket at the same address never
 * inherits an owner. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u32);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, COSCHED_RINGBUF_BYTES);
} events SEC(".maps");

static __always_inline void stat_inc(u32 idx)
{
	u32 cpu = bpf_get_smp_processor_id() % COSCHED_STAT_CPUS;

	/* Atomic: a softirq may interrupt a task-context program on the same CPU. The row is this CPU's own, so
	 * the add does not bounce a cache line between CPUs. */
	if (idx < COSCHED_STAT_STRIDE)
		__sync_fetch_and_add(&stats[cpu][idx], 1);
}

/* Hand one event to user space; a full ring buffer is counted, never waited on. Returns whether it went. */
static __always_inline bool emit_event(u32 kind, u32 tid, u32 tgid, u32 cpu, u32 arg, u64 time_ns, u64 job)
{
	struct cosched_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		stat_inc(COSCHED_STAT_RINGBUF_DROPS);
		return false;
	}
	e->kind = kind;
	e->tid = tid;
	e->tgid = tgid;
	e->cpu = cpu;
	e->arg = arg;
	e->_pad = 0;
	e->time_ns = time_ns;
	e->job = job;
	bpf_ringbuf_submit(e, 0);
	return true;
}

/* A managed thread shares its CPU (R > 1): open the gate (user space attaches the message hooks when told), and
 * keep it open for another --watch-hold-ms. */
static __always_inline void saw_sharing(u64 now)
{
	if (now - gate.contended_ns > CONTENDED_GRAIN_NS)
		gate.contended_ns = now;
	if (!gate.watching) {
		gate.watching = 1;
		emit_event(COSCHED_EV_WATCH, 0, 0, bpf_get_smp_processor_id(), 0, now, 0);
	}
}

/* log2 bucket of a latency in microseconds: 0 us -> 0, [2^(b-1), 2^b) us -> b, capped at the last bucket. */
static __always_inline u32 hist_bucket(u64 ns)
{
	u64 us = ns / 1000;
	u32 b = 0;
	for (int i = 0; i < COSCHED_HIST_BUCKETS - 1; i++) {
		if (us == 0)
			break;
		us >>= 1;
		b++;
	}
	return b;
}

#define PF_KTHREAD 0x00200000

/* The same boosted thread is asked again on a CPU at most this often (the agent's reaction is tens of µs). */
#define YIELD_REASK_NS 200000ULL

/* The task's CPU (task_cpu()). */
struct task_struct___old {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline u32 task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return p->thread_info.cpu;
	return ((struct task_struct___old *)p)->cpu;
}

/* The slot of a CPU line's set of local tasks (`tids`, each with its time in `since`) for `tid`: its own if it has
 * one, else the first free one, else the one with the oldest time. */
static __always_inline u32 slot_for(const u32 *tids, const u64 *since, u32 tid)
{
	u32 slot = 0, i;

	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		if (tids[i] == tid)
			return i;
		if (tids[slot] && (!tids[i] || since[i] < since[slot]))
			slot = i;
	}
	return slot;
}

/* Whether `tid` is in a CPU line's set of local tasks `tids`. */
static __always_inline bool holds(const u32 *tids, u32 tid)
{
	u32 i;

	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* Remembers local task `tid` as waiting on CPU line `c` since `woke`, when it had run `exec` ns in all: its own
 * slot if it has one, else the first free one, else the one that woke first (a stale one if any; else the
 * likeliest to run next). */
static __always_inline void remember_local(struct cosched_cpu *c, u32 tid, u64 woke, u64 exec)
{
	u32 slot = slot_for(c->local_waiting, c->local_woke_ns, tid);

	c->local_waiting[slot] = tid;
	c->local_woke_ns[slot] = woke;
	c->local_exec_ns[slot] = exec;
}

/* Local task `tid` blocked on or left CPU line `c`: its slot is freed. Returns when it woke (and, in `*exec`, its
 * turn's start), 0 if it had no slot. Read before written: most switches on the machine leave the line clean. */
static __always_inline u64 forget_local(struct cosched_cpu *c, u32 tid, u64 *exec)
{
	u32 i;

	if (!tid)
		return 0; /* the idle task: never a local one */
	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		if (c->local_waiting[i] == tid) {
			c->local_waiting[i] = 0;
			*exec = c->local_exec_ns[i];
			return c->local_woke_ns[i];
		}
	}
	return 0;
}

/* The length of local task `p`'s turn: one slice of the fair class (COSCHED_LOCAL_TURN_MIN_NS at least). */
static __always_inline u64 local_turn_ns(struct task_struct *p)
{
	u64 slice = 0;

	if (bpf_core_field_exists(p->se.slice))
		slice = BPF_CORE_READ(p, se.slice);
	return slice > COSCHED_LOCAL_TURN_MIN_NS ? slice : COSCHED_LOCAL_TURN_MIN_NS;
}

/* Local task `p` was preempted on CPU line `c`: its turn is over (its slot freed) once it has run a slice since
 * its wake-up. One preempted sooner — a boost took the CPU from it, the fair class's own pick — still waits. */
static __always_inline void end_local_turn(struct cosched_cpu *c, struct task_struct *p)
{
	u32 tid = p->pid, i;

	if (!tid)
		return;
	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		if (c->local_waiting[i] == tid) {
			if (p->se.sum_exec_runtime - c->local_exec_ns[i] >= local_turn_ns(p))
				c->local_waiting[i] = 0;
			return;
		}
	}
}

/* A switch on CPU line `c` from `prev_tid` to `next_tid`: a local task recorded there that is neither is not on
 * this CPU, whatever the trace said. Its own switch-out may never have been reported: on this sandbox, switches
 * into the threads of its `process_api` daemon are traced and switches out of them never are, so their records
 * lasted until they went stale (COSCHED_LOCAL_WAIT_STALE_NS) and held every boost on the CPU back all that
 * while (52-133 ms after each of their wake-ups in a spin-only K = 1 run). Such a record is checked against
 * the task itself: asleep (or gone), or past its turn, it is freed as its switch-out would have freed it. Costs
 * a task lookup only while a record is live and not on the CPU's two tasks; most switches find the line empty. */
static __always_inline void recheck_locals(struct cosched_cpu *c, u32 prev_tid, u32 next_tid)
{
	u32 i;

	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		u32 tid = c->local_waiting[i];
		struct task_struct *p;
		bool over;

		if (!tid || tid == prev_tid || tid == next_tid)
			continue;
		p = bpf_task_from_pid(tid);
		if (!p) {
			c->local_waiting[i] = 0;
			continue;
		}
		/* `__state` (Linux 5.14+; bpf_task_from_pid needs 6.2 anyway). */
		over = p->__state != 0 /* TASK_RUNNING */ ||
		       p->se.sum_exec_runtime - c->local_exec_ns[i] >= local_turn_ns(p);
		bpf_task_release(p);
		if (over)
			c->local_waiting[i] = 0;
	}
}

/* A local task still waiting on CPU line `c` (woken less than COSCHED_LOCAL_WAIT_STALE_NS ago), 0 if none. */
static __always_inline u32 waiting_local(struct cosched_cpu *c, u64 now)
{
	u32 i;

	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		u32 tid = c->local_waiting[i];

		if (tid && now - c->local_woke_ns[i] < COSCHED_LOCAL_WAIT_STALE_NS)
			return tid;
	}
	return 0;
}

/* Whether woken task `p` weighs so little in its CPU's fair class that a boost is not what keeps it waiting: its
 * top-level scheduling entity there (itself, or the outermost cpu cgroup or autogroup holding it) carries less
 * than 1/COSCHED_LOCAL_LIGHT_RATIO of the fair class's runnable weight on that CPU. The fair class gives such a
 * task that small a part of the CPU with or without the boost, so pausing a boost for it only hands the CPU to
 * the heavier tasks beside it: in the lab, whose experiment cgroups hold 262144 shares, this sandbox's own
 * daemons (1024, the root cpu cgroup) waited 7-8 ms behind a competitor after a boost paused for them, and the
 * paused rank's peer spun alone (a spin-only ping-pong at K = 1 lost a quarter of its rate to ~20 such pauses in
 * 2 s). Tasks of comparable weight — every session's autogroup on a desktop, the lab's probe at the
 * experiment's shares — are not light. */
static __always_inline bool light_in_fair_class(struct task_struct *p, struct rq *rq)
{
	struct sched_entity *se = &p->se;
	u64 own, total;
	u32 depth;

	for (depth = 0; depth < 8 && se->parent; depth++)
		se = se->parent;
	own = se->load.weight;
	total = rq->cfs.load.weight;
	return own && own * COSCHED_LOCAL_LIGHT_RATIO < total;
}

/* Local task `tid` blocked on CPU line `c` at `now`: remembered as asleep there (its own slot, else a free one,
 * else the one asleep longest), so that a wake-up of it no hook sees is still found (unseen_waiting_local). */
static __always_inline void remember_asleep(struct cosched_cpu *c, u32 tid, u64 now)
{
	u32 slot = slot_for(c->local_asleep, c->local_asleep_ns, tid);

	c->local_asleep[slot] = tid;
	c->local_asleep_ns[slot] = now;
}

/* Local task `tid`, remembered as asleep on CPU line `c`, woke: kept (its next block finds it and remembers it
 * asleep again) but marked awake (time 0), so that once its turn is over and the fair class preempts it, it is not
 * taken for a fresh wake-up no hook saw — a local task computing on its CPU got turn after turn that way and held
 * every boost there back until it blocked. An awake slot is the first given away (slot_for: the oldest time). */
static __always_inline void mark_awake(struct cosched_cpu *c, u32 tid)
{
	u32 i;

	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++)
		if (c->local_asleep[i] == tid)
			c->local_asleep_ns[i] = 0;
}

/* A local task remembered as asleep on CPU `cpu` (line `c`) that is runnable and waiting there without a record:
 * it woke where no hook saw it (intf.h, COSCHED_ASLEEP_CHECK_NS). Recorded as waiting from `now` and its tid
 * returned, with its scheduling policy in `*policy`; 0 if none, or if the CPU was looked at less than
 * COSCHED_ASLEEP_CHECK_NS ago. Costs one task lookup per sleeper remembered, at most once per check period. */
static __always_inline u32 unseen_waiting_local(struct cosched_cpu *c, u32 cpu, u64 now, u32 *policy)
{
	u32 i, found = 0;

	if (now - c->asleep_checked_ns < COSCHED_ASLEEP_CHECK_NS)
		return 0;
	c->asleep_checked_ns = now;
	for (i = 0; i < COSCHED_LOCAL_SLOTS; i++) {
		u32 tid = c->local_asleep[i];
		struct task_struct *p;
		bool waiting;
		u64 exec;
		u32 pol;

		if (!tid || found || !c->local_asleep_ns[i] /* awake: its wake-up was found */)
			continue;
		if (now - c->local_asleep_ns[i] > COSCHED_LOCAL_ASLEEP_STALE_NS) {
			c->local_asleep[i] = 0;
			continue;
		}
		if (holds(c->local_waiting, tid))
			continue; /* its wake-up was seen */
		p = bpf_task_from_pid(tid);
		if (!p) {
			c->local_asleep[i] = 0;
			continue;
		}
		/* Woken (TASK_RUNNING), queued, not running, and on this CPU (not woken onto another); and, as at a
		 * seen wake-up, not too light for a pause to serve it (a task judged so then is not recorded either:
		 * this sandbox's launchers, heavy at their first wake-up and light beside the experiment after). */
		waiting = p->__state == 0 && p->on_rq == 1 && !p->on_cpu && task_cpu_of(p) == cpu;
		if (waiting) {
			struct rq *rq = rq_of(p);

			waiting = rq && !light_in_fair_class(p, rq);
		}
		exec = p->se.sum_exec_runtime;
		pol = p->policy;
		bpf_task_release(p);
		if (!waiting)
			continue;
		stat_inc(COSCHED_STAT_LOCAL_UNSEEN);
		remember_local(c, tid, now, exec);
		c->local_asleep_ns[i] = 0; /* awake (mark_awake) */
		*policy = pol;
		found = tid;
	}
	return found;
}

/* Tell user space that the boosted thread `tid` holds the CPU a local task `local` waits for. */
static __always_inline void ask_to_yield(struct cosched_cpu *c, u32 tid, u32 tgid, u32 cpu, u32 local, u64 now)
{
	if (c->asked_tid == tid && now - c->asked_ns < YIELD_REASK_NS)
		return;
	c->asked_tid = tid;
	c->asked_ns = now;
	stat_inc(COSCHED_STAT_LOCAL_WAKES);
	/* `arg` carries the local task's tid (for the log). */
	emit_event(COSCHED_EV_LOCAL_WAKE, tid, tgid, cpu, local, now, 0);
}

/* Books `ran` ns of CPU to a thread, its process and its job. */
static __always_inline void book(struct cosched_task *t, u64 ran)
{
	struct cosched_proc *p;
	struct cosched_job *j;

	t->runtime_ns += ran;
	p = bpf_map_lookup_elem(&procs, &t->tgid);
	if (!p)
		return;
	__sync_fetch_and_add(&p->runtime_ns, ran);
	j = bpf_map_lookup_elem(&jobs, &p->job);
	if (j)
		__sync_fetch_and_add(&j->runtime_ns, ran);
}

/* include/linux/sched.h: the state of a task's final switch-out, after do_exit (a macro, so not in vmlinux.h). */
#define TASK_DEAD 0x00000080

/* A managed thread left its CPU for the last time (TASK_DEAD), its final stint booked: drop its entries and
 * tell user space. Until now the entries stayed, so this stint was charged to its job. Its process's entry
 * stays for user space to read the process's booked time and delete it (user space forgets entries only well
 * after an exit, so nothing is deleted under a stint still to be booked). */
static __always_inline void retire(u32 tid, struct cosched_task *t)
{
	u32 tgid = t->tgid, group_dead = t->group_dead;
	struct cosched_proc *pp = bpf_map_lookup_elem(&procs, &tgid);
	u64 job = pp ? pp->job : 0;

	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&kicked, &tid);
	/* `cpu` carries group_dead: the whole process is gone. */
	emit_event(COSCHED_EV_EXIT, tid, tgid, group_dead, 0, bpf_ktime_get_ns(), job);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cosched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u32 cpu = bpf_get_smp_processor_id();
	u32 prev_tid = prev->pid, next_tid = next->pid;
	struct cosched_cpu *c = &cpus[cpu % COSCHED_STAT_CPUS];
	struct cosched_task *t, *tn;
	u64 now;
	/* Still runnable, waiting for the scheduler: preempted (whatever its state: one preempted on its way to sleep
	 * stays queued until it runs again), or switched out at TASK_RUNNING (a yield). Else it blocked. */
	bool prev_runnable = preempt || prev_state == 0;

	/* The agent's own CPU time on this CPU: time neither a job nor its competitors could use, which the budget
	 * takes out of the wall time it shares by R (or the competitors alone would pay for the agent). */
	if (agent_tgid) {
		if (prev->tgid == agent_tgid && c->agent_exec_in) {
			u64 exec = prev->se.sum_exec_runtime;

			if (exec > c->agent_exec_in)
				c->agent_ns += exec - c->agent_exec_in;
			c->agent_exec_in = 0;
		}
		if (next->tgid == agent_tgid)
			c->agent_exec_in = next->se.sum_exec_runtime;
	}
	/* No job: nothing to book, no boost to pause for a local task (gate.managing in intf.h). */
	if (!gate.managing)
		return 0;
	now = bpf_ktime_get_ns();
	/* A local task's turn lasts from its wake-up until it blocks again, has run a slice (end_local_turn) or goes
	 * stale: one switched in and preempted before it is done (a boost that took the CPU from it, the fair class's
	 * own pick) still waits. The lab's 1 ms probe waited 25-50 ms behind boosts that way while the record said
	 * it had run. One preempted on its way to sleep counts as blocked here (`prev_state`, not `prev_runnable`):
	 * its wake-up was answered, and the moment it needs to finish going to sleep is not worth a boost's pause. */
	if (prev_state != 0) {
		u64 exec;

		/* A local task whose wake-up was seen (and found not light), or one already remembered asleep here:
		 * remembered asleep, so its next wake-up is found even where no hook sees it. */
		if (forget_local(c, prev_tid, &exec) || holds(c->local_asleep, prev_tid))
			remember_asleep(c, prev_tid, now);
	} else
		end_local_turn(c, prev);
	recheck_locals(c, prev_tid, next_tid);
	/* The boosted thread asked to yield here has let every local task waiting here have its turn: user space may
	 * end its pause now. Without this a pause lasted --yield-us (500 us) for a probe that needed a few us, the
	 * job's rank at nice 19 behind the CPU's competitor all that while. Once per ask. */
	if (c->asked_tid && !waiting_local(c, now)) {
		if (now - c->asked_ns < COSCHED_LOCAL_WAIT_STALE_NS)
			emit_event(COSCHED_EV_LOCAL_DONE, c->asked_tid, 0, cpu, 0, now, 0);
		c->asked_tid = 0;
	}

	/* Each task is looked up once (a hash lookup is ~50 ns here, on every switch of the machine while a job
	 * is managed). */
	t = bpf_map_lookup_elem(&tasks, &prev_tid);
	tn = bpf_map_lookup_elem(&tasks, &next_tid);
	/* Tested one by one: clang would OR the two pointers, which the verifier refuses. */
	barrier_var(tn);
	if (t || tn) {
		/* A job runs on this CPU (written at most every COSCHED_NUDGE_GAP_NS: the line is this CPU's). */
		if (now - c->job_ns > COSCHED_NUDGE_GAP_NS)
			c->job_ns = now;
	}
	if (t) {
		stat_inc(COSCHED_STAT_SWITCHES);
		/* The stint's CPU time as the kernel booked it (the same clock as cpuacct, schedstat and the F of the
		 * lab), not the time between the two tracepoints: around a switch with another task the scheduler
		 * charges the incoming task from its pick, and with a blocking receiver beside a CPU-bound competitor
		 * the tracepoint brackets missed about 1.5 us a switch (52 % of a CPU seen against 64 % booked). */
		u64 exec = prev->se.sum_exec_runtime;

		if (t->on_cpu && exec > t->exec_in_ns)
			book(t, exec - t->exec_in_ns);
		if (t->exiting && prev_state == TASK_DEAD)
			retire(prev_tid, t);
		else {
			t->on_cpu = 0;
			t->last_ran_ns = now;
			t->preempted = prev_runnable;
			/* Asleep after polling for a message in vain: it gave up spinning (not a blocking read of its
			 * start-up, which a spin-only receiver also does once). */
			if (!prev_runnable && t->last_poll_ns > t->last_got_ns) {
				t->prev_block_ns = t->last_block_ns;
				t->last_block_ns = now;
				t->blocks++;
			}
			t->rt = prev->policy == 1 || prev->policy == 2;
		}
	}

	t = tn;
	if (t) {
		stat_inc(COSCHED_STAT_SWITCHES);
		t->on_cpu = cpu + 1;
		t->last_cpu = cpu;
		t->switched_in_ns = now;
		t->exec_in_ns = next->se.sum_exec_runtime;
		t->last_ran_ns = now;
		if (next->policy == 1 || next->policy == 2) {
			/* A boost that takes the CPU from a local task still waiting since its wake-up (the boosted
			 * thread woke, or came back from a higher real-time task, after the local one) yields at once
			 * too: the wake-up hook saw no boost to stop then. */
			u32 local = 0, policy = 0;

			if (yield_to_local) {
				local = waiting_local(c, now);
				if (!local)
					local = unseen_waiting_local(c, cpu, now, &policy);
			}
			if (local)
				ask_to_yield(c, next_tid, t->tgid, cpu, local, now);
		}
		t->r_milli = cpu_r_milli(next);
		/* Sharing is a managed thread that waited for its CPU longer than a kernel thread's or the agent's
		 * moment on it: what DCS exists to cut short. */
		if (t->r_milli > COSCHED_R_ALONE_MILLI && waited_ns(next) >= share_wait_ns)
			saw_sharing(now);
		if (t->pending && t->flagged_running) {
			/* Handed over while it ran (a sampled view's error): this switch-in answers nothing. */
			t->pending = 0;
		} else if (t->pending) {
			/* The agent boosts with SCHED_FIFO (1) or RR (2); managed tasks are otherwise CFS. A boosted
			 * switch-in answers the arrival last handed over (notified_ns); an unboosted one has waited since
			 * the first flagged arrival. */
			bool rt = next->policy == 1 || next->policy == 2;
			u32 row = rt ? COSCHED_HIST_BOOSTED : COSCHED_HIST_UNBOOSTED;
			u64 since = rt ? t->notified_ns : t->flagged_ns;

			if (rt) {
				u64 *k = bpf_map_lookup_elem(&kicked, &next_tid);

				if (k && *k > since)
					since = *k;
			}
			u32 idx = row * COSCHED_HIST_BUCKETS + hist_bucket(now > since ? now - since : 0);

			if (idx < COSCHED_HIST_KINDS * COSCHED_HIST_BUCKETS)
				__sync_fetch_and_add(&hist[idx], 1);
			stat_inc(COSCHED_STAT_REACTIONS);
			t->pending = 0;
		}
	}
	return 0;
}

/* Local task `p` woke on CPU `cpu` (line `c`), whose current task `curr` is in the fair class. The kernel has
 * decided by now whether the wake-up preempts (the tracepoint follows wakeup_preempt): if `curr` has no
 * reschedule pending, EEVDF left `p` waiting — most often because `curr` is still inside the slice the fair
 * class protects (RUN_TO_PARITY) — and nothing looks again before the next tick (4 ms at HZ = 250), however soon
 * the protection ends. On a CPU where a job runs, tell user space, whose nudger on that CPU preempts for a
 * moment; the fair class then picks afresh (docs/lab-local.md, "Wake-ups the fair class refused"). At most one
 * nudge per CPU per COSCHED_NUDGE_GAP_NS. */
static __always_inline void nudge_if_refused(struct cosched_cpu *c, struct task_struct *curr, u32 local,
					     u32 local_policy, u32 cpu, u64 now)
{
	if (!nudge_local || curr->pid == local || !curr->pid)
		return; /* the idle task runs: the wake-up always preempts it */
	if (local_policy != 0 /* SCHED_NORMAL */)
		return; /* SCHED_BATCH asked not to preempt at its wake-ups */
	if (!bpf_core_field_exists(curr->thread_info.flags))
		return; /* no thread_info in task_struct: the pending reschedule cannot be read here */
	if (curr->thread_info.flags & COSCHED_RESCHED_TIF_MASK)
		return; /* the wake-up preempts (or something else already does) */
	if (now - c->job_ns >= COSCHED_JOB_CPU_NS)
		return; /* no job here: the agent leaves the fair class alone */
	stat_inc(COSCHED_STAT_LOCAL_REFUSED);
	if (now - c->nudged_ns < COSCHED_NUDGE_GAP_NS)
		return;
	c->nudged_ns = now;
	emit_event(COSCHED_EV_LOCAL_REFUSED, curr->pid, curr->tgid, cpu, local, now, 0);
}

/* Managed thread `tid` (process `tgid`) runs on this CPU: a local task woken here unseen (unseen_waiting_local)
 * is answered as its wake-up would have been — a boost of `tid` yields to it, and in the fair class the CPU is
 * nudged if nothing reschedules. */
static __always_inline void answer_unseen_wake(u32 tid, u32 tgid, u64 now)
{
	u32 cpu = bpf_get_smp_processor_id(), local, policy = 0;
	struct cosched_cpu *c = &cpus[cpu % COSCHED_STAT_CPUS];
	struct task_struct *curr;

	local = unseen_waiting_local(c, cpu, now, &policy);
	if (!local)
		return;
	curr = bpf_get_current_task_btf();
	if (curr->policy == 1 || curr->policy == 2)
		ask_to_yield(c, tid, tgid, cpu, local, now);
	else
		nudge_if_refused(c, curr, local, policy, cpu, now);
}

/* A task woke up (it is queued on its CPU now). If that CPU is held by a boosted managed thread and the task is a
 * local one — a user task in the fair class that the agent does not manage — the boost is what keeps it waiting:
 * tell the agent, which pauses the boost, so the local user's response costs it one agent reaction, not the rest
 * of a window and its extensions (seeds: coscheduling must not take the local user's interactive response). A
 * local task is remembered on its CPU until it blocks again or has run a slice since (sched_switch clears it
 * then; a stale record after COSCHED_LOCAL_WAIT_STALE_NS counts for nothing), so a boost that takes the CPU before then yields too, and the
 * agent neither starts nor lengthens nor resumes a boost over it. Cost on every wake-up of the
 * machine: a flag test, and for a user task one hash lookup, a walk up its group entities (light_in_fair_class)
 * and one write to its CPU's line. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(cosched_wakeup, struct task_struct *p)
{
	u32 cpu, boosted, tid, tgid;
	struct cosched_cpu *c;
	struct cosched_task *bt;
	struct task_struct *curr;
	struct rq *rq;

	u64 now;

	if (!yield_to_local || !gate.managing)
		return 0;
	if (p->flags & PF_KTHREAD)
		return 0;
	if (p->policy != 0 /* SCHED_NORMAL */ && p->policy != 3 /* SCHED_BATCH */)
		return 0;
	tid = p->pid;
	if (bpf_map_lookup_elem(&tasks, &tid))
		return 0; /* the job's own */
	cpu = task_cpu_of(p);
	c = &cpus[cpu % COSCHED_STAT_CPUS];
	rq = rq_of(p);
	if (!rq)
		return 0;
	/* Too light for a pause to serve it: not remembered either, so it holds no boost back. */
	if (light_in_fair_class(p, rq)) {
		stat_inc(COSCHED_STAT_LOCAL_LIGHT);
		return 0;
	}
	now = bpf_ktime_get_ns();
	/* Remembered until its turn is over (it blocks again, or has run a slice: sched_switch), so a boost that
	 * starts before then yields as well. */
	remember_local(c, tid, now, p->se.sum_exec_runtime);
	mark_awake(c, tid);
	/* Who holds that CPU now: a boost is often applied to a thread already running there (no switch), so
	 * the run queue's current task is asked, not a record of switch-ins. */
	curr = rq->curr;
	if (!curr)
		return 0;
	if (curr->policy != 1 && curr->policy != 2) {
		nudge_if_refused(c, curr, tid, p->policy, cpu, now);
		return 0;
	}
	boosted = curr->pid;
	bt = bpf_map_lookup_elem(&tasks, &boosted); /* real-time but not ours (the agent, others): not a boost */
	if (!bt)
		return 0;
	tgid = bt->tgid;
	ask_to_yield(c, boosted, tgid, cpu, tid, now);
	return 0;
}

/* A task moves to another CPU. A local task recorded as waiting on the old one (woken there, not run yet) waits on
 * the new one now: its record moves with it, so the old CPU's paused boost is not held back by a task that is
 * no longer there, and a boost on the new CPU yields to it. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(cosched_migrate, struct task_struct *p, int dest_cpu)
{
	struct cosched_cpu *from, *to;
	u32 tid = p->pid;
	u64 woke, exec = 0;

	if (!gate.managing)
		return 0;
	from = &cpus[task_cpu_of(p) % COSCHED_STAT_CPUS];
	woke = forget_local(from, tid, &exec);
	if (!woke)
		return 0;
	to = &cpus[(u32)dest_cpu % COSCHED_STAT_CPUS];
	remember_local(to, tid, woke, exec);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(cosched_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 parent_tgid = parent->tgid, parent_tid = parent->pid;
	u32 tid = child->pid, tgid = child->tgid;
	struct cosched_proc *pp = bpf_map_lookup_elem(&procs, &parent_tgid);
	struct cosched_task t = {};
	u64 job;

	if (!pp)
		return 0;
	job = pp->job;
	if (tgid == tid) {
		struct cosched_proc p = { .job = job };

		if (bpf_map_update_elem(&procs, &tgid, &p, BPF_NOEXIST) && !bpf_map_lookup_elem(&procs, &tgid)) {
			stat_inc(COSCHED_STAT_MAP_FULL);
			return 0;
		}
	}
	t.tgid = tgid;
	t.last_cpu = bpf_get_smp_processor_id();
	if (bpf_map_update_elem(&tasks, &tid, &t, BPF_ANY)) {
		stat_inc(COSCHED_STAT_MAP_FULL);
		return 0;
	}
	stat_inc(COSCHED_STAT_FORKS);
	/* `cpu` carries the parent's tid: user space copies the parent's original attributes to the child. */
	emit_event(COSCHED_EV_FORK, tid, tgid, parent_tid, 0, bpf_ktime_get_ns(), job);
	return 0;
}

/* A managed process exec'd a program that gives it other effective ids than its real ones (setuid or setgid):
 * it runs with privileges its owner does not have, so it leaves management at once — its entries go (nothing it
 * creates from now on is adopted) and user space restores what it had changed and forgets it. After a
 * successful exec the calling thread is the process's only one. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(cosched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	u32 tid = p->pid, tgid = p->tgid;
	struct cosched_task *t = bpf_map_lookup_elem(&tasks, &tid);
	struct cosched_proc *pp;
	u32 uid, euid, gid, egid;
	u64 job;

	if (!t)
		return 0;
	uid = BPF_CORE_READ(p, cred, uid.val);
	euid = BPF_CORE_READ(p, cred, euid.val);
	gid = BPF_CORE_READ(p, cred, gid.val);
	egid = BPF_CORE_READ(p, cred, egid.val);
	if (uid == euid && gid == egid)
		return 0;
	pp = bpf_map_lookup_elem(&procs, &tgid);
	job = pp ? pp->job : 0;
	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&kicked, &tid);
	bpf_map_delete_elem(&procs, &tgid);
	/* `arg` carries the new effective uid (for the log). */
	emit_event(COSCHED_EV_CRED_CHANGE, tid, tgid, 0, euid, bpf_ktime_get_ns(), job);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(cosched_exit, struct task_struct *p, bool group_dead)
{
	u32 tid = p->pid;
	struct cosched_task *t = bpf_map_lookup_elem(&tasks, &tid);

	if (!t)
		return 0; /* not managed */
	/* Not booked here: the kernel brings se.sum_exec_runtime up to date at ticks and switches only, so at this
	 * hook the stint since the last tick is missing, and so is the exit itself (the address space torn down) —
	 * a job that forks a process living 10 ms every 10 ms was charged 78-80 % of its CPU time. Its final
	 * switch-out (TASK_DEAD) books the whole stint (100 %) and retires the entry. */
	t->exiting = 1;
	t->group_dead = group_dead;
	return 0;
}

/* The tasks entry of the current thread if it belongs to a managed process; a thread of a managed process that
 * the agent has not met yet (one that existed at registration and was missed) gets an entry here. */
static __always_inline struct cosched_task *current_task(u32 tid, u32 tgid)
{
	struct cosched_task *t = bpf_map_lookup_elem(&tasks, &tid);
	struct cosched_task fresh = {};

	if (t)
		return t;
	if (!bpf_map_lookup_elem(&procs, &tgid))
		return NULL;
	fresh.tgid = tgid;
	fresh.last_cpu = bpf_get_smp_processor_id();
	if (bpf_map_update_elem(&tasks, &tid, &fresh, BPF_NOEXIST) && !bpf_map_lookup_elem(&tasks, &tid)) {
		stat_inc(COSCHED_STAT_MAP_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&tasks, &tid);
}

/* Remember that thread `tid` (its entry `t`) receives on `sk`: the thread a message on it should wake. The
 * entry remembers the socket it last learned, so a thread that keeps receiving on one socket looks at the
 * socket's storage only every `relearn_ns` (another thread may have taken the socket over), not on every
 * message. */
static __always_inline void learn_socket(struct cosched_task *t, u32 tid, struct sock *sk, u64 now)
{
	u64 key = (u64)sk;
	u32 *owner;

	if (t->last_sk == key && now - t->last_sk_ns < relearn_ns)
		return;
	t->last_sk = key;
	t->last_sk_ns = now;
	owner = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!owner) {
		stat_inc(COSCHED_STAT_MAP_FULL);
		return;
	}
	if (*owner != tid)
		*owner = tid;
}

/* Runs in the receiving thread's context at the end of every recvmsg/read on a socket. The only per-message hook
 * on the receiving side: sockets are learned here (a send says nothing the first receive does not), so a
 * message that arrives before its receiver ever called recv on the socket goes unflagged, once. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(cosched_recv, struct sock *sk, int ret, int flags)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id, tgid = id >> 32;
	struct cosched_task *t;
	u64 now;

	if (!gate.watching)
		return 0;
	/* A spin-only receiver polls with non-blocking recv millions of times a second: an empty poll (-EAGAIN)
	 * says "this thread is waiting for a message", which lets the agent tell a spinning waiter (whose CPU time
	 * is wasted while its peer is off its CPU) from a computing thread. The first empty poll after a receipt is
	 * stamped (last_poll_ns > last_got_ns: it waits again); while it keeps polling, only every
	 * COSCHED_POLLS_PER_STAMP-th poll reads the clock (70 ns here, a quarter of this hook: most polls then cost
	 * one lookup and a count, on a line only the thread's own receives write). */
	if (ret == -11 /* EAGAIN */) {
		t = bpf_map_lookup_elem(&tasks, &tid);
		if (!t)
			return 0;
		if (t->last_poll_ns > t->last_got_ns && ++t->polls_unstamped < COSCHED_POLLS_PER_STAMP)
			return 0;
		t->polls_unstamped = 0;
		now = bpf_ktime_get_ns();
		t->last_poll_ns = now;
		/* A waiter polling a socket is its receiver, even before anything arrived on it. */
		learn_socket(t, tid, sk, now);
		/* A spinning thread, boosted or not, holds its CPU without switching: its polls are where a local
		 * task woken there unseen is looked for. */
		if (yield_to_local)
			answer_unseen_wake(tid, t->tgid, now);
		return 0;
	}
	if (ret <= 0)
		return 0;
	t = current_task(tid, tgid);
	if (!t)
		return 0;
	now = bpf_ktime_get_ns();
	learn_socket(t, tid, sk, now);
	t->last_got_ns = now;
	return 0;
}

/* Whether thread `tid` runs in a real-time class now (SCHED_FIFO 1 or RR 2). What `t->rt` remembers is its
 * class at its last switch-out; when that is no longer so, `t->rt` is corrected too. */
static __always_inline bool real_time_now(struct cosched_task *t, u32 tid)
{
	struct task_struct *p = bpf_task_from_pid(tid);
	bool rt;

	if (!p)
		return false;
	rt = p->policy == 1 || p->policy == 2;
	bpf_task_release(p);
	if (!rt) {
		t->rt = 0;
		stat_inc(COSCHED_STAT_BOOST_ENDED);
	}
	return rt;
}

/* With a sampled view (running_view_ns > 0, seed 002's design: the NIC reads the running thread about once a
 * millisecond), whether `t` was on its CPU at the last sample, `now - now % running_view_ns`: its current stint
 * began at or before it, or its last one covered it. A thread that switched more than once since the sample is
 * taken as not seen (only its last stint is kept), as the simulator does beyond its switch history. Both errors
 * of such a view follow: a receiver off its CPU seen running is left to wait (COSCHED_STAT_STALE_MISSES), one
 * on its CPU seen idle is handed to user space (and boosted, running). */
static __always_inline bool seen_running_at_sample(const struct cosched_task *t, u64 now)
{
	u64 sample_at = now - now % running_view_ns;

	return t->switched_in_ns <= sample_at && (t->on_cpu || t->last_ran_ns > sample_at);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(cosched_data_ready, const struct sock *sk)
{
	u64 now;
	struct cosched_task *t;
	u32 *owner, tid;

	if (!gate.watching)
		return 0;
	now = bpf_ktime_get_ns();
	owner = bpf_sk_storage_get(&socks, (struct sock *)sk, 0, 0);
	if (!owner) {
		stat_inc(COSCHED_STAT_SOCK_MISSES);
		return 0;
	}
	tid = *owner;
	t = bpf_map_lookup_elem(&tasks, &tid);
	if (!t) {
		stat_inc(COSCHED_STAT_TASK_MISSES);
		bpf_sk_storage_delete(&socks, (struct sock *)sk);
		return 0;
	}
	stat_inc(COSCHED_STAT_ARRIVALS);
	t->last_arrival_ns = now;
	/* Refresh R at arrivals (a thread that spins alone is never switched, so its switch-in sample ages), but
	 * at most every rq_refresh_ns: the task lookup touches the receiver's task_struct on another CPU. */
	if (now - t->r_ns >= rq_refresh_ns) {
		struct task_struct *p = bpf_task_from_pid(tid);

		if (p) {
			t->r_milli = cpu_r_milli(p);
			t->r_ns = now;
			bpf_task_release(p);
		}
	}
	if (running_view_ns ? seen_running_at_sample(t, now) : t->on_cpu) {
		stat_inc(t->on_cpu ? COSCHED_STAT_ON_CPU : COSCHED_STAT_STALE_MISSES);
		return 0;
	}
	/* Boosted, and preempted only by a higher real-time task (the agent itself, a kernel thread): it runs again
	 * the moment that one is done, so handing the arrival over would only wake the agent to preempt it again.
	 * `t->rt` is its class at that switch-out; the agent may have ended the boost since while it waited (no
	 * switch reports that), so the class is read again on this rare path. */
	if (t->rt && t->preempted && real_time_now(t, tid)) {
		stat_inc(COSCHED_STAT_BOOSTED);
		return 0;
	}
	/* Nothing else wants the receiver's CPU (R known and about 1): it runs as soon as it is woken, and waking
	 * the agent would only take a CPU from the job. */
	if (t->r_milli && t->r_milli <= COSCHED_R_ALONE_MILLI) {
		stat_inc(COSCHED_STAT_ALONE);
		return 0;
	}
	/* A receiver that blocked a moment ago is being woken by this very arrival and usually preempts by itself;
	 * one that was preempted while runnable (a spinning receiver) waits for its turn however recent. */
	if (!t->preempted && now - t->last_ran_ns < grace_ns) {
		stat_inc(COSCHED_STAT_RECENT);
		return 0;
	}
	if (t->pending && now - t->notified_ns < renotify_ns) {
		stat_inc(COSCHED_STAT_PENDING);
		return 0;
	}
	/* Off its CPU behind others with a message for it: sharing, whether or not the boost to come keeps its
	 * waits short. */
	saw_sharing(now);
	if (!t->pending) {
		t->flagged_ns = now;
		t->flagged_running = t->on_cpu != 0;
	}
	t->pending = 1;
	t->notified_ns = now;
	if (!emit_event(COSCHED_EV_ARRIVAL, tid, t->tgid, t->last_cpu, t->r_milli, now, 0)) {
		t->pending = 0;
		return 0;
	}
	stat_inc(COSCHED_STAT_FLAGGED);
	return 0;
}
