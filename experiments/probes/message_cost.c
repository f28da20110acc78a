/*
 * message_cost.c — what a message costs its job while the agent watches messages: one thread pinned to one CPU
 * passes a byte back and forth over a TCP loopback connection, and before each receive polls the empty socket once.
 * Every pass is two sends (two `sk_data_ready`, the arrival hook, run in the sender's context on loopback), two
 * receives and two empty polls (two `sock_recv_length` each) — the calls a spinning ping-pong rank makes, without
 * its waiting (or, with <polls> > 1, that many empty polls before each receive: a spinning rank's wait).
 * experiments/local/message-tax.sh runs it without the agent and as a managed job with the message
 * hooks detached and attached (docs/lab-local.md, "What a message costs the job").
 *
 *   gcc -O2 -o /tmp/message_cost experiments/probes/message_cost.c
 *   /tmp/message_cost <cpu> <passes> [polls]  e.g. 1 200000 1
 *
 * Prints the mean ns per message (half a pass).
 */
#include "probe.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connected TCP loopback pair in `fd[0]`, `fd[1]` (Nagle off: one segment per send). */
static int loopback_pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int one = 1, listener = socket(AF_INET, SOCK_STREAM, 0);

	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) || listen(listener, 1) ||
	    getsockname(listener, (struct sockaddr *)&a, &len))
		return -1;
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof a))
		return -1;
	fd[1] = accept(listener, NULL, NULL);
	close(listener);
	if (fd[1] < 0)
		return -1;
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return 0;
}

static int polls = 1;

/* Polls `from` `polls` times while it is empty (a waiting rank's polls). Returns 0, or -1 if it was not empty. */
static int poll_empty(int from)
{
	char byte;

	for (int i = 0; i < polls; i++)
		if (recv(from, &byte, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
			return -1; /* the pass is out of step */
	return 0;
}

/* Receives the byte sent to `from` (loopback delivers it within the send; a late one is polled for). */
static int receive(int from)
{
	char byte;
	ssize_t got;

	while ((got = recv(from, &byte, 1, MSG_DONTWAIT)) == -1 && errno == EAGAIN)
		;
	return got == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0, passes = argc > 2 ? atoi(argv[2]) : 200000;
	int fd[2];
	char byte = 0;
	uint64_t t0, t1;

	polls = argc > 3 ? atoi(argv[3]) : 1;
	if (passes <= 0 || polls < 0) {
		fprintf(stderr, "usage: message_cost <cpu> <passes > 0> [polls >= 0]\n");
		return 2;
	}
	if (loopback_pair(fd)) {
		perror("message_cost: TCP loopback connection");
		return 1;
	}
	pin(cpu);
	t0 = now_ns();
	for (int i = 0; i < passes; i++) {
		if (poll_empty(fd[1]) || send(fd[0], &byte, 1, 0) != 1 || receive(fd[1]) ||
		    poll_empty(fd[0]) || send(fd[1], &byte, 1, 0) != 1 || receive(fd[0])) {
			perror("message_cost: pass");
			return 1;
		}
	}
	t1 = now_ns();
	printf("%.1f\n", (double)(t1 - t0) / passes / 2);
	return 0;
}
