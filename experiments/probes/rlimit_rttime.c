/*
 * rlimit_rttime.c — can RLIMIT_RTTIME bound a boost? A child makes itself SCHED_FIFO at priority 1 with
 * RLIMIT_RTTIME 200 ms soft / 400 ms hard and spins for 3 s without blocking, as a boosted spin-waiting rank
 * does. docs/safety.md, "Bounding a boost".
 *
 *   gcc -O2 -o /tmp/rlimit_rttime experiments/probes/rlimit_rttime.c
 *   sudo timeout -k 2 10 /tmp/rlimit_rttime
 *
 * Root (SCHED_FIFO). Prints how the spinner ended and after how long. Measured here: killed by SIGXCPU (signal
 * 24) after 204–206 ms — the limit ends the application, not the boost, so it cannot bound the boost of a
 * program that installs no SIGXCPU handler (and we change no application).
 */
#define _GNU_SOURCE
#include "probe.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	pid_t child = fork();
	if (child == 0) {
		struct rlimit limit = { .rlim_cur = 200000, .rlim_max = 400000 }; /* µs of RT CPU without blocking */
		if (setrlimit(RLIMIT_RTTIME, &limit))
			_exit(3);
		fifo(1);
		uint64_t end = now_ns() + 3000000000ull;
		while (now_ns() < end)
			;
		_exit(0);
	}
	uint64_t t0 = now_ns();
	int status;
	waitpid(child, &status, 0);
	double ms = (now_ns() - t0) / 1e6;
	if (WIFSIGNALED(status))
		printf("spinner killed by signal %d (%s) after %.0f ms\n", WTERMSIG(status), strsignal(WTERMSIG(status)), ms);
	else
		printf("spinner exited with %d after %.0f ms\n", WEXITSTATUS(status), ms);
	return 0;
}
