/*
 * slice_runs.c — does an EEVDF custom slice make a task's runs longer? Two CPU-bound processes share one CPU for
 * 2 s; each sets its own slice (`sched_setattr`, SCHED_OTHER, `sched_runtime`; 0 = the kernel's default) and
 * reports its mean run: CPU time / context switches (`/proc/self/sched`). docs/lab-dynamicq.md, "What a slice
 * buys on this kernel".
 *
 *   gcc -O2 -o /tmp/slice_runs experiments/probes/slice_runs.c
 *   timeout -k 2 20 /tmp/slice_runs 1
 *
 * The argument is the CPU to share. No root needed. Measured here (6.18, HZ=250, base slice 1.4 ms): runs of
 * 3.7–3.9 ms (one 4 ms tick) for every pair with a default-slice task in it — 100 ms beside the default included
 * — and of 65–86 ms only when both ask for 100 ms.
 */
#define _GNU_SOURCE
#include "probe.h"
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct sched_attr_v1 {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

/* The mean run of this process so far, ms: se.sum_exec_runtime (ms) / nr_switches. */
static double mean_run_ms(void)
{
	FILE *f = fopen("/proc/self/sched", "r");
	char line[256];
	double exec_ms = 0, switches = 1;
	while (f && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		if (!strncmp(line, "se.sum_exec_runtime", 19))
			exec_ms = atof(colon + 1);
		else if (!strncmp(line, "nr_switches", 11))
			switches = atof(colon + 1);
	}
	if (f)
		fclose(f);
	return exec_ms / (switches > 0 ? switches : 1);
}

struct report {
	int who;
	double run_ms;
};

static void spin_with_slice(int who, int cpu, uint64_t slice_ns, int fd)
{
	pin(cpu);
	struct sched_attr_v1 a = { .size = sizeof a, .policy = SCHED_OTHER, .runtime = slice_ns };
	if (syscall(SYS_sched_setattr, 0, &a, 0))
		_exit(3);
	uint64_t end = now_ns() + 2000000000ull;
	volatile uint64_t x = 0;
	while (now_ns() < end)
		x++;
	struct report r = { who, mean_run_ms() };
	if (write(fd, &r, sizeof r) != sizeof r)
		_exit(4);
	_exit(0);
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0;
	const uint64_t pairs[][2] = {
		{ 0, 0 }, { 3125000, 0 }, { 100000000, 0 }, { 100000, 0 }, { 3125000, 3125000 }, { 100000000, 100000000 },
	};
	printf("slice A ms  slice B ms  mean run A ms  mean run B ms\n");
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		int p[2];
		if (pipe(p))
			return 1;
		pid_t kids[2];
		for (int k = 0; k < 2; k++) {
			kids[k] = fork();
			if (kids[k] == 0)
				spin_with_slice(k, cpu, pairs[i][k], p[1]);
		}
		double run[2] = { 0, 0 };
		for (int k = 0; k < 2; k++) {
			int st;
			waitpid(kids[k], &st, 0);
		}
		for (int k = 0; k < 2; k++) {
			struct report r;
			if (read(p[0], &r, sizeof r) != sizeof r || r.who < 0 || r.who > 1)
				return 2;
			run[r.who] = r.run_ms;
		}
		close(p[0]);
		close(p[1]);
		printf("%10.3f  %10.3f  %13.2f  %13.2f\n", pairs[i][0] / 1e6, pairs[i][1] / 1e6, run[0], run[1]);
	}
	return 0;
}
