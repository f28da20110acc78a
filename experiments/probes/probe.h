/*
 * probe.h — what the probes in this folder share: the clock, CPU pinning, SCHED_FIFO, CFS spinners and sorting
 * samples for percentiles.
 * Header-only (each probe is one `gcc` command; see its top comment).
 */
#ifndef COSCHED_PROBE_H
#define COSCHED_PROBE_H
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/* Pins the calling thread to one CPU. */
static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

/* Makes the calling thread SCHED_FIFO at `prio`, or exits saying why. */
__attribute__((unused)) static void fifo(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
		fprintf(stderr, "SCHED_FIFO refused: run as root\n");
		exit(1);
	}
}

/* A CFS spin loop pinned to CPU `(long)cpu` (a competitor), until `stop_spinners` is set: a pthread start routine. */
static volatile int stop_spinners;
__attribute__((unused)) static void *spinner(void *cpu)
{
	pin((int)(long)cpu);
	while (!stop_spinners)
		;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts n samples in place, so that v[q * n] is the q-quantile. */
__attribute__((unused)) static void sort_samples(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof v[0], cmp_u64);
}

#endif
