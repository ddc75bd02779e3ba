/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --net --p2p bw|bibw|lat: the plugin's own ib_write_bw / ib_write_bw -b / ib_write_lat.
 * Ranks pair up (0-1, 2-3, ...); for every device NCCL would use (virtual devices and unmerged
 * ports, in the plugin's order; with --net-dev pair, pair k on device k only, all pairs at once,
 * and their aggregate), each pair connects both ways on that device and, per size,
 * streams -n messages with --slots in flight (bw: even rank to odd rank; bibw: both ways at
 * once) or ping-pongs -n round trips (lat). The last message of each size is checked byte for
 * byte (#wrong). World rank 0 prints one row per device, pair and size as it is measured.
 * A mode table of its own (rb_mode_net_p2p, chosen by --net --p2p) over net_setup.c.
 */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"
#include "rb_net.h"
#include "rb_netmode.h"

#define RB_P2P_MAX_INFLIGHT 32

struct rb_p2p_conn {
	int dev;
	void *scomm, *rcomm;
	void *mh_s, *mh_r;
};

static struct rb_p2p_conn rb_p2p_cur;

static int rb_p2p_check(struct rb_netm *m)
{
	if (m->nranks < 2 || m->nranks % 2)
		return rb_netm_fail(m,
				    "--p2p pairs ranks 0-1, 2-3, ...: launch an even number of "
				    "ranks (got %d)",
				    m->nranks);
	return 0;
}

static void rb_p2p_close(struct rb_netm *m)
{
	struct rb_p2p_conn *p = &rb_p2p_cur;

	if (p->mh_s)
		rb_net_dereg_mr(&m->net, p->scomm, p->mh_s);
	if (p->mh_r)
		rb_net_dereg_mr(&m->net, p->rcomm, p->mh_r);
	if (p->scomm)
		rb_net_close_send(&m->net, p->scomm);
	if (p->rcomm)
		rb_net_close_recv(&m->net, p->rcomm);
	memset(p, 0, sizeof(*p));
}

static int rb_p2p_connect(struct rb_netm *m, int dev, int peer)
{
	struct rb_p2p_conn *p = &rb_p2p_cur;
	char hpeer[RB_NET_HANDLE_BYTES];
	void *lc = NULL;
	int rc;

	p->dev = dev;
	rc = rb_netm_listen_swap(m, dev, peer, peer, &lc, hpeer);
	if (!rc)
		rc = rb_netm_connect_pair(m, dev, lc, hpeer, peer, peer, &p->scomm, &p->rcomm);
	if (!rc && (rc = rb_net_reg_mr(&m->net, p->scomm, m->send, m->bytes, &p->mh_s)))
		rc = rb_netm_fail(m, "regMr of the send buffer on device %d failed: %s", dev,
				  rb_net_result(rc));
	if (!rc && (rc = rb_net_reg_mr(&m->net, p->rcomm, m->recv, m->bytes, &p->mh_r)))
		rc = rb_netm_fail(m, "regMr of the receive buffer on device %d failed: %s", dev,
				  rb_net_result(rc));
	return rc;
}

/* Drive a request to completion; the size it reports goes to *got. */
static int rb_p2p_wait(struct rb_netm *m, void *req, size_t *got, const char *what, int peer)
{
	int done = 0, rc;

	while (!done) {
		rc = rb_net_test(&m->net, req, &done, got);
		if (rc)
			return rb_netm_fail(m, "test of a %s rank %d failed: %s", what, peer,
					    rb_net_result(rc));
		if (!done)
			sched_yield(); /* ranks may outnumber cores */
	}
	return 0;
}

/* Post one message (send or receive), retrying while the plugin answers with no request. */
static int rb_p2p_post(struct rb_netm *m, int send, size_t bytes, int peer, void **req)
{
	struct rb_p2p_conn *p = &rb_p2p_cur;
	int rc;

	for (;;) {
		rc = send ? rb_net_isend(&m->net, p->scomm, m->send, bytes, m->rank, p->mh_s, req)
			  : rb_net_irecv(&m->net, p->rcomm, m->recv, bytes, peer, p->mh_r, req);
		if (rc)
			return rb_netm_fail(m, "%s of %zu bytes %s rank %d failed: %s",
					    send ? "isend" : "irecv", bytes, send ? "to" : "from",
					    peer, rb_net_result(rc));
		if (*req)
			return 0;
		sched_yield();
	}
}

/*
 * Stream `count` messages each way that `send`/`recv` say, at most `win` in flight per
 * direction, both directions progressed together.
 */
static int rb_p2p_stream(struct rb_netm *m, int peer, size_t bytes, int count, int win, int do_send,
			 int do_recv)
{
	struct rb_p2p_conn *p = &rb_p2p_cur;
	void *sreq[RB_P2P_MAX_INFLIGHT], *rreq[RB_P2P_MAX_INFLIGHT];
	int sposted = 0, sdone = 0, rposted = 0, rdone = 0, rc;
	int stot = do_send ? count : 0, rtot = do_recv ? count : 0;

	while (sdone < stot || rdone < rtot) {
		int before = sposted + sdone + rposted + rdone;

		while (rposted < rtot && rposted - rdone < win) {
			void **r = &rreq[rposted % RB_P2P_MAX_INFLIGHT];

			rc = rb_net_irecv(&m->net, p->rcomm, m->recv, bytes, peer, p->mh_r, r);
			if (rc)
				return rb_netm_fail(m, "irecv of %zu bytes from rank %d failed: %s",
						    bytes, peer, rb_net_result(rc));
			if (!*r)
				break;
			rposted++;
		}
		while (sposted < stot && sposted - sdone < win) {
			void **s = &sreq[sposted % RB_P2P_MAX_INFLIGHT];

			rc = rb_net_isend(&m->net, p->scomm, m->send, bytes, m->rank, p->mh_s, s);
			if (rc)
				return rb_netm_fail(m, "isend of %zu bytes to rank %d failed: %s",
						    bytes, peer, rb_net_result(rc));
			if (!*s)
				break;
			sposted++;
		}
		while (rdone < rposted) {
			int done = 0;
			size_t got = 0;

			rc = rb_net_test(&m->net, rreq[rdone % RB_P2P_MAX_INFLIGHT], &done, &got);
			if (rc)
				return rb_netm_fail(m, "test of a receive from rank %d failed: %s",
						    peer, rb_net_result(rc));
			if (!done)
				break;
			if (got != bytes)
				return rb_netm_fail(
					m,
					"a receive from rank %d completed with %zu bytes, "
					"%zu were sent",
					peer, got, bytes);
			rdone++;
		}
		while (sdone < sposted) {
			int done = 0;

			rc = rb_net_test(&m->net, sreq[sdone % RB_P2P_MAX_INFLIGHT], &done, NULL);
			if (rc)
				return rb_netm_fail(m, "test of a send to rank %d failed: %s", peer,
						    rb_net_result(rc));
			if (!done)
				break;
			sdone++;
		}
		if (sposted + sdone + rposted + rdone == before)
			sched_yield(); /* ranks may outnumber cores */
	}
	return 0;
}

static int rb_p2p_pingpong(struct rb_netm *m, int peer, size_t bytes, int count, int first)
{
	for (int i = 0; i < count; i++) {
		void *rreq, *sreq;
		size_t got = 0;
		int rc;

		/* the receive is posted before the send, so the reply always has a buffer */
		rc = rb_p2p_post(m, 0, bytes, peer, &rreq);
		if (!rc && first) {
			rc = rb_p2p_post(m, 1, bytes, peer, &sreq);
			if (!rc)
				rc = rb_p2p_wait(m, sreq, NULL, "send to", peer);
			if (!rc)
				rc = rb_p2p_wait(m, rreq, &got, "receive from", peer);
		} else if (!rc) {
			rc = rb_p2p_wait(m, rreq, &got, "receive from", peer);
			if (!rc)
				rc = rb_p2p_post(m, 1, bytes, peer, &sreq);
			if (!rc)
				rc = rb_p2p_wait(m, sreq, NULL, "send to", peer);
		}
		if (rc)
			return rc;
		if (got != bytes)
			return rb_netm_fail(m,
					    "a receive from rank %d completed with %zu bytes, %zu "
					    "were sent",
					    peer, got, bytes);
	}
	return 0;
}

/* The bytes rank `r` sends for size `s`: a pattern the receiver can recompute. */
static unsigned char rb_p2p_byte(int r, size_t s, size_t i)
{
	return (unsigned char)((i * 131u + s * 7u + (size_t)r * 29u + (i >> 8)) & 0xff);
}

static size_t rb_p2p_next(const struct rb_args *a, size_t s)
{
	if (a->stepfactor > 1)
		return s ? s * (size_t)a->stepfactor : 1;
	return s + a->stepbytes;
}

struct rb_p2p_res {
	double time_us, bw;
	double wrong;
	double bytes, secs; /* what the pair moved in the timed part, and how long it took */
	int dev;
};

static int rb_p2p_size(struct rb_netm *m, int peer, size_t bytes, struct rb_p2p_res *res)
{
	const struct rb_args *a = m->args;
	int even = !(m->rank & 1), win = m->nslots, rc = 0;
	int do_send = a->p2p == RB_P2P_BIBW || even, do_recv = a->p2p == RB_P2P_BIBW || !even;
	double t0, t1, dt, all;
	size_t wrong = 0;

	for (size_t i = 0; i < bytes; i++)
		m->send[i] = (char)rb_p2p_byte(m->rank, bytes, i);
	memset(m->recv, 0, bytes);
	if (a->warmup_iters) {
		if (a->p2p == RB_P2P_LAT)
			rc = rb_p2p_pingpong(m, peer, bytes, a->warmup_iters, even);
		else
			rc = rb_p2p_stream(m, peer, bytes, a->warmup_iters, win, do_send, do_recv);
		if (rc)
			return rc;
	}
	memset(m->recv, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = rb_netm_now();
	if (a->p2p == RB_P2P_LAT)
		rc = rb_p2p_pingpong(m, peer, bytes, a->iters, even);
	else
		rc = rb_p2p_stream(m, peer, bytes, a->iters, win, do_send, do_recv);
	t1 = rb_netm_now();
	if (rc)
		return rc;
	if (do_recv || a->p2p == RB_P2P_LAT)
		for (size_t i = 0; i < bytes; i++)
			wrong += (unsigned char)m->recv[i] != rb_p2p_byte(peer, bytes, i);
	dt = t1 - t0;
	/* the pair's time is the slower side's */
	all = dt;
	MPI_Sendrecv(&dt, 1, MPI_DOUBLE, peer, 78, &all, 1, MPI_DOUBLE, peer, 78, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	dt = dt > all ? dt : all;
	res->wrong = (double)wrong;
	res->secs = dt;
	res->bytes = a->p2p == RB_P2P_LAT
			     ? 0
			     : (double)bytes * a->iters * (a->p2p == RB_P2P_BIBW ? 2 : 1);
	if (a->p2p == RB_P2P_LAT) {
		res->time_us = dt / (2.0 * a->iters) * 1e6;
		res->bw = res->time_us > 0 ? (double)bytes / (res->time_us * 1e3) : 0;
	} else {
		res->time_us = dt / a->iters * 1e6;
		res->bw = dt > 0 ? (double)bytes * a->iters * (a->p2p == RB_P2P_BIBW ? 2 : 1) / dt /
					   1e9
				 : 0;
	}
	return 0;
}

static int rb_p2p_run(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;
	const struct rb_args *a = m->args;
	int peer = m->rank ^ 1, npairs = m->nranks / 2, nuse = m->nusable, rc = 0;
	double wrong_total = 0, bw_sum = 0;
	long bw_n = 0;
	struct rb_p2p_res *all = calloc((size_t)m->nranks, sizeof(*all));

	if (!all)
		return rb_netm_fail(m, "out of memory");
	MPI_Allreduce(&m->nusable, &nuse, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (m->rank == 0) {
		printf("# %s between rank pairs (0-1, 2-3, ...), %d pair%s, %s; time per %s, "
		       "bandwidth in GB/s%s\n",
		       a->p2p == RB_P2P_LAT  ? "ping-pong latency"
		       : a->p2p == RB_P2P_BW ? "unidirectional bandwidth (even rank sends)"
					     : "bidirectional bandwidth (both send)",
		       npairs, npairs > 1 ? "s" : "",
		       a->p2p == RB_P2P_LAT ? "1 message in flight"
					    : "--slots messages in flight per direction",
		       a->p2p == RB_P2P_LAT ? "one-way trip (half the round trip)" : "message",
		       a->p2p == RB_P2P_BIBW ? " (both directions summed)" : "");
		printf("#\n# %4s  %-24s  %5s  %12s  %7s  %9s  %9s  %6s\n", "dev", "device", "pair",
		       "size(B)", "iters", "time(us)", "bw(GB/s)", "#wrong");
		fflush(stdout);
	}
	for (int u = 0; u < nuse && !rc; u++) {
		int dev = m->args->net_dev >= 0			? m->args->net_dev
			  : m->args->net_dev == RB_NET_DEV_PAIR ? m->usable[(m->rank / 2) % nuse]
								: m->usable[u];

		rc = rb_p2p_connect(m, dev, peer);
		MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		for (size_t s = a->minbytes; !rc && s <= a->maxbytes; s = rb_p2p_next(a, s)) {
			struct rb_p2p_res mine = { 0 };

			rc = rb_p2p_size(m, peer, s, &mine);
			mine.dev = dev;
			if (rc) {
				/* the partner may be waiting on a request that will never finish */
				fflush(stdout);
				MPI_Abort(MPI_COMM_WORLD, rc);
			}
			MPI_Gather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, 0,
				   MPI_COMM_WORLD);
			if (m->rank == 0) {
				double moved = 0, slowest = 0;

				for (int pr = 0; pr < npairs; pr++) {
					const struct rb_p2p_res *e = &all[2 * pr];
					double w = all[2 * pr].wrong + all[2 * pr + 1].wrong;
					char pair[32];

					snprintf(pair, sizeof(pair), "%d-%d", 2 * pr, 2 * pr + 1);
					printf("  %4d  %-24.24s  %5s  %12zu  %7d  %9.2f  %9.3f  "
					       "%6g\n",
					       e->dev,
					       e->dev >= 0 && e->dev < m->ndevs
						       ? m->props[e->dev].name
						       : "?",
					       pair, s, a->iters, e->time_us, e->bw, w);
					wrong_total += w;
					bw_sum += e->bw;
					bw_n++;
					moved += e->bytes;
					slowest = e->secs > slowest ? e->secs : slowest;
				}
				/* the pairs started together (a barrier): all bytes over the
				 * slowest pair's time is what they moved at once */
				if (npairs > 1 && a->p2p != RB_P2P_LAT &&
				    m->args->net_dev == RB_NET_DEV_PAIR)
					printf("# aggregate of %d pairs at %zu B: %.3f GB/s (every "
					       "pair's bytes over the slowest pair's time)\n",
					       npairs, s, slowest > 0 ? moved / slowest / 1e9 : 0);
				fflush(stdout);
			}
			if (s == a->maxbytes || rb_p2p_next(a, s) <= s)
				break;
		}
		rb_p2p_close(m);
		if (m->args->net_dev != RB_NET_DEV_AUTO)
			break;
	}
	free(all);
	if (m->rank == 0 && !rc) {
		printf("# %-20s : %g %s\n", "Wrong bytes", wrong_total,
		       wrong_total ? "FAILED" : "OK");
		printf("# %-20s : %g\n#\n", "Avg bandwidth", bw_n ? bw_sum / (double)bw_n : 0);
		fflush(stdout);
	}
	MPI_Bcast(&wrong_total, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (!rc && wrong_total > 0)
		rc = RB_EXIT_WRONG;
	return rc;
}

static int rb_p2p_open(struct rb_ctx *c)
{
	struct rb_netm *m;
	int rc = rb_netm_open(c, &m);

	if (rc)
		return rc;
	return rb_p2p_check(m);
}

/* Buffers only: rb_p2p_connect registers them per device. */
static int rb_p2p_alloc(struct rb_ctx *c, size_t bytes)
{
	return rb_netm_alloc(c->mode, bytes);
}

static void rb_p2p_close_mode(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;

	if (m && m->net.table)
		rb_p2p_close(m);
	rb_netm_close(c);
}

/* --net --p2p: run replaces the collective sweep, so start, wait, put, get and zero are unused. */
const struct rb_mode_ops rb_mode_net_p2p = {
	.name = "net",
	.validate = rb_netm_validate,
	.open = rb_p2p_open,
	.alloc = rb_p2p_alloc,
	.describe = rb_netm_describe,
	.versions = rb_netm_versions,
	.last_error = rb_netm_last_error,
	.close = rb_p2p_close_mode,
	.run = rb_p2p_run,
};
