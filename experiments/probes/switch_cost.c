/*
 * switch_cost.c — what a context switch costs on one CPU: two processes pinned to the same CPU pass a byte back
 * and forth through two pipes, so every pass is one wake-up and one switch. The agent's scheduler hooks
 * (sched_switch, sched_wakeup) run on each of them, for every task of the machine: experiments/local/agent-tax.sh
 * runs this without the agent, beside an idle agent and beside one that manages a job (docs/lab-local.md,
 * "What the agent costs every other task").
 *
 *   gcc -O2 -o /tmp/switch_cost experiments/probes/switch_cost.c
 *   /tmp/switch_cost <cpu> <passes>          e.g. 1 200000
 *
 * Prints the mean ns per pass (one wake-up + one switch).
 */
#include "probe.h"
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0, passes = argc > 2 ? atoi(argv[2]) : 200000;
	int there[2], back[2];
	char byte = 0;
	uint64_t t0, t1;

	if (passes <= 0 || pipe(there) || pipe(back)) {
		fprintf(stderr, "usage: switch_cost <cpu> <passes > 0>\n");
		return 2;
	}
	pin(cpu);
	t0 = now_ns();
	if (fork() == 0) {
		for (int i = 0; i < passes; i++)
			if (read(there[0], &byte, 1) != 1 || write(back[1], &byte, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < passes; i++)
		if (write(there[1], &byte, 1) != 1 || read(back[0], &byte, 1) != 1)
			return 1;
	wait(NULL);
	t1 = now_ns();
	printf("%.1f\n", (double)(t1 - t0) / passes / 2);
	return 0;
}
