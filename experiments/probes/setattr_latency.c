/*
 * setattr_latency.c — what the agent's boost costs in system calls on this machine: sched_setattr(SCHED_FIFO)
 * of a CFS thread spinning on another CPU (beside a second spinner, as a rank beside a competitor), next to a
 * trivial system call and the pidfd liveness check the agent makes around it. docs/lab-dcs.md, "The reaction".
 *
 *   gcc -O2 -o /tmp/setattr_latency experiments/probes/setattr_latency.c -lpthread
 *   sudo /tmp/setattr_latency <caller cpu> <target cpu>          (two different CPUs, e.g. 0 1)
 *
 * Root. The target is put back to SCHED_OTHER right after each boost, before the caller sleeps.
 */
#define _GNU_SOURCE
#include "probe.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct sched_attr_v1 {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

enum { ROUNDS = 2000 };
static volatile pid_t target_tid;

/* A spinner that records its tid: the last one started is the target. */
static void *target_spinner(void *cpu)
{
	target_tid = syscall(SYS_gettid);
	return spinner(cpu);
}

static void report(const char *what, uint64_t *v)
{
	sort_samples(v, ROUNDS);
	printf("%-34s p10 %6.2f p50 %6.2f p90 %6.2f us\n", what, v[ROUNDS / 10] / 1e3, v[ROUNDS / 2] / 1e3,
	       v[9 * ROUNDS / 10] / 1e3);
}

int main(int argc, char **argv)
{
	static uint64_t trivial[ROUNDS], alive[ROUNDS], boost[ROUNDS];
	if (argc != 3 || atoi(argv[1]) == atoi(argv[2])) {
		fprintf(stderr, "usage: %s <caller cpu> <target cpu> (two different CPUs)\n", argv[0]);
		return 2;
	}
	int target_cpu = atoi(argv[2]);
	pin(atoi(argv[1]));
	pthread_t t;
	pthread_create(&t, NULL, target_spinner, (void *)(long)target_cpu);
	pthread_create(&t, NULL, target_spinner, (void *)(long)target_cpu); /* the target is the last one started */
	usleep(100000);
	pid_t tid = target_tid;
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	struct sched_attr_v1 fifo = { .size = sizeof fifo, .sched_policy = SCHED_FIFO, .sched_priority = 1,
				      .sched_flags = 1 /* reset on fork */ };
	struct sched_attr_v1 other = { .size = sizeof other, .sched_policy = SCHED_OTHER };
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0 = now_ns();
		syscall(SYS_getppid);
		uint64_t t1 = now_ns();
		syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0);
		uint64_t t2 = now_ns();
		if (syscall(SYS_sched_setattr, tid, &fifo, 0)) {
			perror("sched_setattr (run as root)");
			return 1;
		}
		uint64_t t3 = now_ns();
		syscall(SYS_sched_setattr, tid, &other, 0);
		trivial[i] = t1 - t0;
		alive[i] = t2 - t1;
		boost[i] = t3 - t2;
		usleep(200);
	}
	stop_spinners = 1;
	report("getppid", trivial);
	report("pidfd_send_signal(0)", alive);
	report("sched_setattr FIFO, other CPU", boost);
	return 0;
}
