/*
 * socket_wake.c — how soon a SCHED_FIFO thread sleeping in epoll_wait on a TCP socket runs after a message is sent
 * to that socket: the floor of an agent that the kernel wakes straight from the arrival's softirq (a "doorbell"
 * on the receiver's socket) instead of through the BPF ring buffer's irq_work. docs/lab-dcs.md, "The reaction".
 *
 *   gcc -O2 -o /tmp/socket_wake experiments/probes/socket_wake.c -lpthread
 *   sudo /tmp/socket_wake <waiter cpu> <spinners on CPU 0>      e.g. 1 1 (other CPU, busy sender CPU), 0 1
 *
 * A TCP loopback pair (NET_RX runs on the sender's CPU, as over the lab's veth). The sender, SCHED_FIFO on CPU 0,
 * sends an 8-byte timestamp every 500 us; the waiter, SCHED_FIFO pinned to <waiter cpu>, wakes in epoll_wait and
 * reads it. CPU 1 always has one CFS spin loop (a competitor), CPU 0 as many as asked. Root (SCHED_FIFO).
 * Prints p10/p50/p90 of send() start -> waiter running, and of send() itself (the arrival happens inside it).
 */
#define _GNU_SOURCE
#include "probe.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MESSAGES = 2000 };
static int recv_fd, send_fd, waiter_cpu;
static uint64_t wake_ns[MESSAGES], send_ns[MESSAGES];

static void *waiter(void *unused)
{
	(void)unused;
	pin(waiter_cpu);
	fifo(2);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, recv_fd, &ev);
	for (int i = 0; i < MESSAGES; i++) {
		struct epoll_event out;
		uint64_t sent;
		if (epoll_wait(ep, &out, 1, -1) != 1 || recv(recv_fd, &sent, sizeof sent, MSG_WAITALL) != sizeof sent)
			exit(1);
		wake_ns[i] = now_ns() - sent;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s <waiter cpu> <spinners on CPU 0>\n", argv[0]);
		return 2;
	}
	waiter_cpu = atoi(argv[1]);
	int spinners0 = atoi(argv[2]), one = 1;
	int lst = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	bind(lst, (struct sockaddr *)&a, sizeof a);
	listen(lst, 1);
	getsockname(lst, (struct sockaddr *)&a, &len);
	send_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(send_fd, (struct sockaddr *)&a, sizeof a))
		return 1;
	recv_fd = accept(lst, NULL, NULL);
	setsockopt(send_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

	pthread_t t, w;
	pthread_create(&t, NULL, spinner, (void *)1L);
	for (int i = 0; i < spinners0; i++)
		pthread_create(&t, NULL, spinner, (void *)0L);
	pthread_create(&w, NULL, waiter, NULL);
	pin(0);
	fifo(3);
	usleep(100000);
	for (int i = 0; i < MESSAGES; i++) {
		usleep(500);
		uint64_t now = now_ns();
		if (send(send_fd, &now, sizeof now, 0) != sizeof now)
			return 1;
		send_ns[i] = now_ns() - now;
	}
	pthread_join(w, NULL);
	stop_spinners = 1;
	sort_samples(wake_ns, MESSAGES);
	sort_samples(send_ns, MESSAGES);
	printf("waiter cpu %d, %d spinner(s) on CPU 0: send -> waiter running p10 %.1f p50 %.1f p90 %.1f us; "
	       "send() p50 %.1f us\n",
	       waiter_cpu, spinners0, wake_ns[MESSAGES / 10] / 1e3, wake_ns[MESSAGES / 2] / 1e3,
	       wake_ns[9 * MESSAGES / 10] / 1e3, send_ns[MESSAGES / 2] / 1e3);
	return 0;
}
