/*
 * wake_latency.c — the floor of a user-space agent's reaction on this machine: how long a SCHED_FIFO thread
 * sleeping in read(eventfd) takes to run after another thread writes to it, with the sleeper's CPU busy with
 * CFS spin loops (as a lab node's CPU is with its competitors). docs/lab-dcs.md, "The reaction".
 *
 *   gcc -O2 -o /tmp/wake_latency experiments/probes/wake_latency.c -lpthread
 *   sudo /tmp/wake_latency <sleeper cpu> <writer cpu> <spinners on each CPU>     e.g. 1 0 2
 *
 * Root (SCHED_FIFO). Prints p10/p50/p90/p99 of write -> sleeper running over 3000 wake-ups 300 us apart.
 */
#define _GNU_SOURCE
#include "probe.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum { WAKEUPS = 3000 };
static volatile uint64_t sent_ns;
static uint64_t latency_ns[WAKEUPS];
static int efd, sleeper_cpu;

static void *sleeper(void *unused)
{
	(void)unused;
	pin(sleeper_cpu);
	fifo(2);
	for (int i = 0; i < WAKEUPS; i++) {
		uint64_t v;
		if (read(efd, &v, sizeof v) != sizeof v)
			exit(1);
		latency_ns[i] = now_ns() - sent_ns;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s <sleeper cpu> <writer cpu> <spinners per CPU>\n", argv[0]);
		return 2;
	}
	sleeper_cpu = atoi(argv[1]);
	int writer_cpu = atoi(argv[2]), spinners = atoi(argv[3]);
	pthread_t t;
	efd = eventfd(0, 0);
	for (int i = 0; i < 2 * spinners; i++)
		pthread_create(&t, NULL, spinner, (void *)(long)(i % 2));
	pthread_create(&t, NULL, sleeper, NULL);
	pin(writer_cpu);
	fifo(3); /* the writer is never delayed by the spinners */
	usleep(100000);
	for (int i = 0; i < WAKEUPS; i++) {
		uint64_t one = 1;
		usleep(300);
		sent_ns = now_ns();
		if (write(efd, &one, sizeof one) != sizeof one)
			return 1;
	}
	pthread_join(t, NULL);
	stop_spinners = 1;
	sort_samples(latency_ns, WAKEUPS);
	printf("sleeper cpu %d, writer cpu %d, %d spinners per CPU: wake-up p10 %.1f p50 %.1f p90 %.1f p99 %.1f us\n",
	       sleeper_cpu, writer_cpu, spinners, latency_ns[WAKEUPS / 10] / 1e3, latency_ns[WAKEUPS / 2] / 1e3,
	       latency_ns[9 * WAKEUPS / 10] / 1e3, latency_ns[99 * WAKEUPS / 100] / 1e3);
	return 0;
}
