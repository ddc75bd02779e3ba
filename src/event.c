// SPDX-License-Identifier: Apache-2.0
/*
 * Asynchronous events (event.h): a small table of contexts with their ports' state, filled by
 * non-blocking reads of each context's event queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <string.h>

#include "railnet/event.h"
#include "railnet/log.h"

#define RN_EVENT_MAX_CTX 64
#define RN_EVENT_MAX_PORT 64

static struct {
	pthread_mutex_t lock;
	struct {
		const struct ibv_context *ctx;
		uint64_t down;	  /* bit p-1: port p is down */
		uint64_t read_ns; /* when the queue was last read (CLOCK_MONOTONIC) */
	} t[RN_EVENT_MAX_CTX];
	int n;
} rn_ev = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Under the lock: the entry of ctx, made (and its queue set non-blocking) on first use. */
static int rn_event_slot(struct ibv_context *ctx)
{
	int i, fl;

	for (i = 0; i < rn_ev.n; i++)
		if (rn_ev.t[i].ctx == ctx)
			return i;
	if (rn_ev.n == RN_EVENT_MAX_CTX)
		return -1;
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1; /* a queue we cannot read without blocking is left alone */
	rn_ev.t[rn_ev.n].ctx = ctx;
	rn_ev.t[rn_ev.n].down = 0;
	rn_ev.t[rn_ev.n].read_ns = 0;
	return rn_ev.n++;
}

#define RN_EVENT_READ_NS (2 * 1000000ull)

void rn_event_poll(struct ibv_context *ctx, const char *name)
{
	const struct rn_verbs_ops *v = rn_verbs();
	struct ibv_async_event ev;
	int i;

	struct timespec ts;
	uint64_t now;

	if (!ctx || !v)
		return;
	/*
	 * Every comm of every communicator asks every 10 ms: a context's queue is read at most
	 * every RN_EVENT_READ_NS, by one of them. (No trylock: it is GLIBC_2.34 in libc, above
	 * the plugin's glibc floor; the lock is held for microseconds.)
	 */
	pthread_mutex_lock(&rn_ev.lock);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	i = rn_event_slot(ctx);
	if (i >= 0 && rn_ev.t[i].read_ns && now - rn_ev.t[i].read_ns < RN_EVENT_READ_NS)
		i = -1;
	else if (i >= 0)
		rn_ev.t[i].read_ns = now;
	while (i >= 0 && v->get_async_event(ctx, &ev) == 0) {
		int port = ev.element.port_num;
		const char *what = v->event_type_str(ev.event_type);

		switch (ev.event_type) {
		case IBV_EVENT_PORT_ERR:
			if (port >= 1 && port <= RN_EVENT_MAX_PORT)
				rn_ev.t[i].down |= 1ull << (port - 1);
			RN_WARN("%s port %d: %s (IBV_EVENT_PORT_ERR): connections move their "
				"traffic "
				"to their other ports",
				name, port, what);
			break;
		case IBV_EVENT_PORT_ACTIVE:
			if (port >= 1 && port <= RN_EVENT_MAX_PORT)
				rn_ev.t[i].down &= ~(1ull << (port - 1));
			RN_INFO(RN_SUB_NET, "%s port %d: %s (new connections may use it again)",
				name, port, what);
			break;
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_CQ_ERR:
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			RN_WARN("%s: asynchronous event: %s", name, what);
			break;
		default:
			RN_INFO(RN_SUB_NET, "%s: asynchronous event: %s", name, what);
			break;
		}
		v->ack_async_event(&ev);
	}
	pthread_mutex_unlock(&rn_ev.lock);
}

bool rn_event_port_down(const struct ibv_context *ctx, int port)
{
	bool down = false;

	if (port < 1 || port > RN_EVENT_MAX_PORT)
		return false;
	pthread_mutex_lock(&rn_ev.lock);
	for (int i = 0; i < rn_ev.n; i++)
		if (rn_ev.t[i].ctx == ctx)
			down = rn_ev.t[i].down & (1ull << (port - 1));
	pthread_mutex_unlock(&rn_ev.lock);
	return down;
}

void rn_event_forget(const struct ibv_context *ctx)
{
	pthread_mutex_lock(&rn_ev.lock);
	for (int i = 0; i < rn_ev.n; i++)
		if (rn_ev.t[i].ctx == ctx) {
			rn_ev.t[i] = rn_ev.t[--rn_ev.n];
			break;
		}
	pthread_mutex_unlock(&rn_ev.lock);
}
