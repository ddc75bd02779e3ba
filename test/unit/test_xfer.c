// SPDX-License-Identifier: Apache-2.0
/*
 * Tests of src/xfer.c (the data path) in one process, one thread and one network namespace,
 * without root: a pod view from sv-mkview (svdev0 and svdev1, two RoCE v2 ports each), the
 * connection built by conn.c over loopback TCP (connector on svdev0 = send comm, listener on
 * svdev1 = receive comm), then rn_xfer_create on each side and both ends driven alternately,
 * as NCCL's proxy thread may: isend/irecv that return no request are called again, test polls.
 * Only the xfer API is used on the comms (counters through rn_xfer_snapshot).
 *
 * Checked: sizes 0 .. 16 MiB byte for byte in both striping modes with both ports carrying
 * data; tagged multi-receives (positional matching per tag, "not now" for a tag without a
 * free entry, no data moved before all n sends matched); split parts (one per 16 KiB at most,
 * 128-byte-aligned chunks, per port); clipping to the posted size; eager (optional-completion)
 * receives; flush; 32 requests in flight (RN_XFER_SLOTS); handle checks; closing in any order,
 * with requests in flight and with registrations left (orphans); nothing left afterwards (fds,
 * PDs, QPs, registrations).
 *
 * Fault groups, one ctest entry each because softverbs reads its fault settings once, when it
 * is loaded (xfer.cmake sets the environment): "portdown" (SOFTVERBS_PORT_DOWN=dev:port:ms: a
 * port of either side goes down in the middle of a stream of 1 MiB messages; every message
 * verifies and the failover is counted, and the dead QP's flushed requests are not counted as
 * errors), "qperr" (SOFTVERBS_QP_ERR_AFTER=n: every QP breaks; both comms fail with
 * -EREMOTEIO), "ackdrop" (SOFTVERBS_DROP_ACK: exactly once after a failover) and "cutlink"
 * (SOFTVERBS_CUT_LINK=ms: every link dies with both comms alive; a pending receive fails
 * through the keepalive probes, and stays pending with keepalive 0). Every wait is bounded by
 * WAIT_MS, a hang guard and never a performance claim.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "railnet/conn.h"
#include "railnet/event.h"
#include "railnet/mr.h"
#include "railnet/net.h"
#include "railnet/stats.h"
#include "railnet/wire.h"
#include "railnet/xfer.h"
#include "rn_test.h"
#include "rn_test_sv.h"

#define GID_INDEX 1   /* sv-mkview: RoCE v2, IPv4-mapped */
#define WAIT_MS 10000 /* hang guard of every wait */
#define MIB (1024u * 1024u)
#define BIG (16u * MIB)		  /* the largest message */
#define BUF_BYTES (BIG + 2 * MIB) /* each of the send and receive buffers */
#define GUARD 0xee		  /* receive buffers are filled with it before a message */

static char view_dir[256];
static struct ibv_context *ctx[2];
static struct rn_qp_port qport[2][2]; /* [device][port index] */
static struct rn_oob_if lo;
static long long t_load_ms; /* just before softverbs was loaded (its fault clock starts then) */
static unsigned char *sbuf, *rbuf;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Pseudo-random bytes, different for every seed. */
static void fill(unsigned char *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x1234567;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)x;
	}
}

/* got[0..len) == want[0..len), byte for byte; fails naming the first differing byte. */
static void check_bytes(const unsigned char *got, const unsigned char *want, size_t len,
			const char *what)
{
	if (!memcmp(got, want, len))
		return;
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			fail_msg("%s: byte %zu of %zu is %#x, expected %#x", what, i, len, got[i],
				 want[i]);
}

static int setup(void **state)
{
	int d, p;

	(void)state;
	if (rn_test_sv_mkview("xfer", 2, 2, 100, view_dir, sizeof(view_dir)))
		return -1;
	rn_test_log_capture();
	t_load_ms = now_ms();
	if (rn_test_sv_open(view_dir, 2, ctx))
		return -1;
	for (d = 0; d < 2; d++) {
		char name[16];

		snprintf(name, sizeof(name), "svdev%d", d);
		for (p = 0; p < 2; p++)
			if (rn_qp_port_query(ctx[d], name, p + 1, GID_INDEX, &qport[d][p]))
				return -1;
	}
	memset(&lo, 0, sizeof(lo));
	snprintf(lo.name, sizeof(lo.name), "lo");
	lo.family = AF_INET;
	lo.addr[0] = 127;
	lo.addr[3] = 1;
	lo.up = lo.loopback = true;
	if (posix_memalign((void **)&sbuf, 4096, BUF_BYTES) ||
	    posix_memalign((void **)&rbuf, 4096, BUF_BYTES))
		return -1;
	return rn_test_log.warns ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	rn_xfer_orphans_free();
	for (int d = 0; d < 2; d++) {
		rn_mr_ctx_close(ctx[d]);
		rn_event_forget(ctx[d]);
	}
	rn_stats_flush(NULL);
	rn_test_sv_close(2, ctx);
	free(sbuf);
	free(rbuf);
	sbuf = rbuf = NULL;
	return 0;
}

/* ---- a connected pair of comms ------------------------------------------------------------ */

struct opts {
	bool split;	   /* NCCL_IB_SPLIT_DATA_ON_QPS */
	int qpp;	   /* QPs per port (NCCL_IB_QPS_PER_CONNECTION) */
	int nports;	   /* ports of each side's device: 1 or 2 */
	int flush;	   /* enum rn_flush_mode of the receive comm */
	bool flush_qps;	   /* the acceptor creates its flush QPs */
	bool inline_cts;   /* NCCL_IB_USE_INLINE */
	long keepalive_ms; /* 0: never probe */
	uint8_t retry_cnt; /* NCCL_IB_RETRY_CNT; NCCL_IB_TIMEOUT is 14 */
};

static const struct opts defaults = {
	.split = true,
	.qpp = 2,
	.nports = 2,
	.flush = RN_FLUSH_OFF,
	.keepalive_ms = 1000,
	.retry_cnt = 7,
};

struct pair {
	struct rn_xcomm *s, *r;
	struct rn_mh *smh, *rmh; /* sbuf on s, rbuf on r */
};

static struct rn_conn_params conn_params(const struct opts *o, int role)
{
	struct rn_conn_params p = {
		.iface = &lo,
		.timeout_ms = WAIT_MS,
		.qps_per_port = o->qpp,
		.attr = { .pkey_index = 0, .timeout = 14, .retry_cnt = o->retry_cnt },
		.region_bytes = role == RN_CONN_SEND ? sizeof(struct rn_send_region)
						     : sizeof(struct rn_recv_region),
		.flush = role == RN_CONN_RECV && o->flush_qps,
		.max_send_wr = RN_XFER_SEND_WR,
		.max_recv_wr = role == RN_CONN_RECV ? RN_XFER_RECV_WR : 0,
		.max_inline = o->inline_cts ? RN_XFER_INLINE : 0,
	};

	return p;
}

static struct rn_xfer_params xfer_params(const struct opts *o, int role)
{
	struct rn_xfer_params x = {
		.split = o->split,
		.keepalive_ms = o->keepalive_ms,
		.flush = role == RN_CONN_RECV ? o->flush : RN_FLUSH_OFF,
		.inline_cts = role == RN_CONN_RECV && o->inline_cts,
	};

	snprintf(x.name, sizeof(x.name), "svdev%d", role == RN_CONN_SEND ? 0 : 1);
	return x;
}

/* Connect svdev0 (send) to svdev1 (receive), stepping both ends alternately. */
static void conn_pair(const struct opts *o, struct rn_conn_params *cs, struct rn_conn_params *cr,
		      struct rn_conn **s, struct rn_conn **r)
{
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn_listener *l;
	long long t0 = now_ms();

	*s = *r = NULL;
	memset(handle, 0, sizeof(handle));
	assert_int_equal(rn_conn_listen(qport[1], o->nports, cr, handle, &l), 0);
	while (!*s || !*r) {
		if (!*s)
			assert_int_equal(rn_conn_connect_step(handle, qport[0], o->nports, cs, s),
					 0);
		if (!*r)
			assert_int_equal(rn_conn_accept_step(l, r), 0);
		if (now_ms() - t0 > WAIT_MS)
			fail_msg("the handshake did not finish within %d ms", WAIT_MS);
	}
	rn_conn_listen_close(l);
}

/* Connect, make both comms, register sbuf on the send comm and rbuf on the receive comm. */
static void pair_open(const struct opts *o, struct pair *p)
{
	struct rn_conn_params cs = conn_params(o, RN_CONN_SEND), cr = conn_params(o, RN_CONN_RECV);
	struct rn_xfer_params xs = xfer_params(o, RN_CONN_SEND), xr = xfer_params(o, RN_CONN_RECV);
	struct rn_conn *s, *r;

	memset(p, 0, sizeof(*p));
	conn_pair(o, &cs, &cr, &s, &r);
	assert_int_equal(rn_xfer_create(s, &xs, &p->s), 0);
	assert_int_equal(rn_xfer_create(r, &xr, &p->r), 0);
	assert_int_equal(rn_xfer_reg(p->s, sbuf, BUF_BYTES, RN_PTR_HOST, -1, 0, &p->smh), 0);
	assert_int_equal(rn_xfer_reg(p->r, rbuf, BUF_BYTES, RN_PTR_HOST, -1, 0, &p->rmh), 0);
}

static void pair_close(struct pair *p)
{
	if (p->smh)
		assert_int_equal(rn_xfer_dereg(p->s, p->smh), 0);
	if (p->rmh)
		assert_int_equal(rn_xfer_dereg(p->r, p->rmh), 0);
	rn_xfer_close(p->s);
	rn_xfer_close(p->r);
	memset(p, 0, sizeof(*p));
}

/* Nothing of any comm is left: QPs, PDs, registrations (fds: the caller's count). */
static void assert_nothing_left(void)
{
	struct rn_mr_stats mr;

	rn_mr_totals(&mr);
	assert_int_equal(mr.entries, 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
}

/*
 * The open fds come back to at most max. softverbs closes a dead connection's sockets in its NIC
 * thread, which sleeps up to 200 ms between rounds: poll, bounded.
 */
static void assert_fds_back(int max)
{
	long long t0 = now_ms();
	int n;

	while ((n = rn_test_count_fds()) > max && now_ms() - t0 < WAIT_MS)
		usleep(10 * 1000);
	assert_in_range(n, 0, max);
}

/* ---- requests ----------------------------------------------------------------------------- */

struct wreq {
	struct rn_xreq *r;
	int done;
	int sizes[RN_XFER_MAX_RECVS];
};

static struct rn_xreq *post_recv(struct rn_xcomm *c, int n, void **data, const size_t *sizes,
				 const int *tags, struct rn_mh **mh, bool eager)
{
	struct rn_xreq *r = NULL;
	long long t0 = now_ms();

	for (;;) {
		assert_int_equal(rn_xfer_irecv(c, n, data, sizes, tags, mh, eager, &r), 0);
		if (r)
			return r;
		if (now_ms() - t0 > WAIT_MS)
			fail_msg("irecv found no free slot within %d ms", WAIT_MS);
	}
}

static struct rn_xreq *post_recv1(struct pair *p, void *data, size_t size, int tag)
{
	return post_recv(p->r, 1, &data, &size, &tag, &p->rmh, false);
}

/* Test the requests of w[0..n) that are not done yet, once each (their results kept). */
static void poke(struct wreq *w, int n)
{
	for (int i = 0; i < n; i++)
		if (w[i].r && !w[i].done)
			assert_int_equal(rn_xfer_test(w[i].r, &w[i].done, w[i].sizes), 0);
}

/*
 * isend until it returns a request. Meanwhile the receiver's requests w[0..n) are tested, as
 * NCCL's proxy drives every comm: a clear-to-send the receiver has to post again (after a
 * failover) needs the receive comm to make progress.
 */
static struct rn_xreq *post_send(struct rn_xcomm *c, void *data, size_t size, int tag,
				 struct rn_mh *mh, struct wreq *w, int n)
{
	struct rn_xreq *r = NULL;
	long long t0 = now_ms();

	for (;;) {
		assert_int_equal(rn_xfer_isend(c, data, size, tag, mh, &r), 0);
		if (r)
			return r;
		poke(w, n);
		if (now_ms() - t0 > WAIT_MS)
			fail_msg("isend found no clear-to-send within %d ms", WAIT_MS);
	}
}

/* Test every request until all are done; the first error ends the wait and is returned. */
static int wait_reqs(struct wreq *w, int n)
{
	long long t0 = now_ms();
	int left = 0;

	for (int i = 0; i < n; i++)
		left += !w[i].done; /* some may be done already (poke) */
	while (left) {
		for (int i = 0; i < n; i++) {
			int rc;

			if (w[i].done)
				continue;
			rc = rn_xfer_test(w[i].r, &w[i].done, w[i].sizes);
			if (rc)
				return rc;
			if (w[i].done)
				left--;
		}
		if (left && now_ms() - t0 > WAIT_MS) {
			char which[256] = "";

			for (int i = 0, k = 0; i < n && k < 200; i++)
				if (!w[i].done)
					k += snprintf(which + k, sizeof(which) - (size_t)k, " %d",
						      i);
			fail_msg("%d of %d requests not done within %d ms:%s", left, n, WAIT_MS,
				 which);
		}
	}
	return 0;
}

/*
 * One message of slen bytes from sbuf into a receive of rlen bytes at rbuf (data filled from
 * seed); returns what the receive's test reported, after checking that the send reported the
 * same, the bytes and the guard byte after them.
 */
static int xfer_one(struct pair *p, size_t slen, size_t rlen, uint64_t seed)
{
	struct wreq w[2];
	size_t n = slen < rlen ? slen : rlen;

	memset(w, 0, sizeof(w));
	fill(sbuf, slen, seed);
	memset(rbuf, GUARD, rlen + 1);
	w[0].r = post_recv1(p, rbuf, rlen, 7);
	w[1].r = post_send(p->s, sbuf, slen, 7, p->smh, w, 1);
	assert_int_equal(wait_reqs(w, 2), 0);
	assert_int_equal(w[0].sizes[0], (int)n);
	assert_int_equal(w[1].sizes[0], (int)n);
	check_bytes(rbuf, sbuf, n, "message");
	if (rbuf[n] != GUARD)
		fail_msg("a %zu-byte message into a %zu-byte receive wrote byte %zu", slen, rlen,
			 n);
	return w[0].sizes[0];
}

/* Per-port tx_bytes of c now. */
static void tx_bytes(const struct rn_xcomm *c, uint64_t *b)
{
	struct rn_stats_comm st;

	rn_xfer_snapshot(c, &st);
	for (int i = 0; i < st.nports; i++)
		b[i] = st.port[i].c.tx_bytes;
}

/* ---- sizes, striping ---------------------------------------------------------------------- */

static const size_t sizes[] = { 0, 1, 127, 128, 4095, 4096, MIB + 3, BIG };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/*
 * Every size byte for byte into a receive 4096 bytes larger (the actual size counts), and the
 * ports: split mode puts a large message on both ports, round-robin mode sends each message
 * whole on one QP and the next one on the next QP, so both ports over several messages.
 */
static void sizes_in_mode(bool split)
{
	struct opts o = defaults;
	struct rn_stats_comm st;
	uint64_t b0[2], b1[2], first[2];
	struct pair p;
	int fds0;

	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	o.split = split;
	pair_open(&o, &p);
	rn_xfer_snapshot(p.s, &st);
	assert_true(st.send);
	assert_int_equal(st.nports, 2);
	assert_int_equal(st.nqps, 4);
	assert_string_equal(st.port[0].dev, "svdev0");
	assert_int_equal(st.port[1].port, 2);
	rn_xfer_snapshot(p.r, &st);
	assert_false(st.send);
	assert_string_equal(st.name, "svdev1");
	tx_bytes(p.s, first);
	for (size_t i = 0; i < NSIZES; i++) {
		tx_bytes(p.s, b0);
		assert_int_equal(xfer_one(&p, sizes[i], sizes[i] + 4096, i + (split ? 100 : 0)),
				 (int)sizes[i]);
		tx_bytes(p.s, b1);
		/* every data byte is counted once, on the port that wrote it */
		assert_int_equal((b1[0] - b0[0]) + (b1[1] - b0[1]), sizes[i]);
		if (sizes[i] == BIG && split) {
			assert_true(b1[0] > b0[0]);
			assert_true(b1[1] > b0[1]);
		}
		if (!split && sizes[i] > 0)
			assert_true(b1[0] - b0[0] == sizes[i] || b1[1] - b0[1] == sizes[i]);
	}
	/* over the sweep, both ports carried data in either mode */
	assert_true(b1[0] > first[0]);
	assert_true(b1[1] > first[1]);
	rn_xfer_snapshot(p.s, &st);
	assert_int_equal(st.port[0].c.errors + st.port[1].c.errors, 0);
	assert_int_equal(st.port[0].c.failovers + st.port[1].c.failovers, 0);
	rn_xfer_snapshot(p.r, &st);
	assert_true(st.port[0].c.rx_parts > 0 && st.port[1].c.rx_parts > 0);
	pair_close(&p);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	RN_ASSERT_NO_WARN();
}

static void test_sizes_split(void **state)
{
	(void)state;
	sizes_in_mode(true);
}

static void test_sizes_round_robin(void **state)
{
	(void)state;
	sizes_in_mode(false);
}

/* Round-robin: successive 64 KiB messages rotate over the 4 QPs, so both ports alternate. */
static void test_round_robin_rotates(void **state)
{
	struct opts o = defaults;
	uint64_t b0[2], b1[2];
	int hits[2] = { 0, 0 };
	struct pair p;

	(void)state;
	rn_test_log_reset();
	o.split = false;
	pair_open(&o, &p);
	for (int i = 0; i < 8; i++) {
		tx_bytes(p.s, b0);
		xfer_one(&p, 65536, 65536, 500 + (uint64_t)i);
		tx_bytes(p.s, b1);
		for (int k = 0; k < 2; k++)
			if (b1[k] - b0[k] == 65536)
				hits[k]++;
	}
	assert_int_equal(hits[0], 4);
	assert_int_equal(hits[1], 4);
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/*
 * Round-robin: two send comms opened one after the other (NCCL's channels to one peer) send
 * their first message on different ports, so channels driven in step do not share a port.
 */
static void test_round_robin_staggered(void **state)
{
	struct opts o = defaults;
	uint64_t b0[2], b1[2];
	int port[2];
	struct pair p[2];

	(void)state;
	rn_test_log_reset();
	o.split = false;
	pair_open(&o, &p[0]);
	pair_open(&o, &p[1]);
	for (int i = 0; i < 2; i++) {
		tx_bytes(p[i].s, b0);
		xfer_one(&p[i], 65536, 65536, 600 + (uint64_t)i);
		tx_bytes(p[i].s, b1);
		assert_true(b1[0] - b0[0] == 65536 || b1[1] - b0[1] == 65536);
		port[i] = b1[0] - b0[0] == 65536 ? 0 : 1;
	}
	assert_int_not_equal(port[0], port[1]);
	pair_close(&p[1]);
	pair_close(&p[0]);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- tagged multi-receives ---------------------------------------------------------------- */

/*
 * irecv n = 4 with tags {5, 5, 6, 5}; sends with tags 6, 5, 5, 5 (not in buffer order): the
 * i-th send of tag t fills the i-th buffer posted with tag t. Sizes mixed, one of them 0.
 * Then "not now": a send whose tag has no free entry in the receive at the FIFO's head gets
 * no request and the connection goes on.
 */
static void multi_in_mode(bool split, bool inline_cts)
{
	enum { N = 4, SLOT = 300 * 1024 };
	static const int tags[N] = { 5, 5, 6, 5 };
	static const int stag[N] = { 6, 5, 5, 5 };
	static const size_t slen[N] = { 1000, 0, 200003, 127 };
	static const int want_buf[N] = { 2, 0, 1, 3 }; /* the buffer each send lands in */
	struct opts o = defaults;
	struct wreq w[1 + N];
	struct rn_xreq *r;
	void *data[N];
	size_t len[N];
	struct rn_mh *mh[N];
	struct pair p;

	rn_test_log_reset();
	o.split = split;
	o.inline_cts = inline_cts;
	pair_open(&o, &p);
	/* nothing posted yet: no clear-to-send, no request */
	assert_int_equal(rn_xfer_isend(p.s, sbuf, 10, 5, p.smh, &r), 0);
	assert_null(r);
	for (int rep = 0; rep < 3; rep++) {
		memset(w, 0, sizeof(w));
		memset(rbuf, GUARD, N * SLOT);
		for (int i = 0; i < N; i++) {
			data[i] = rbuf + i * SLOT;
			len[i] = SLOT - 1;
			mh[i] = p.rmh;
			fill(sbuf + i * SLOT, slen[i], (uint64_t)(rep * 10 + i));
		}
		w[0].r = post_recv(p.r, N, data, len, tags, mh, false);
		for (int i = 0; i < N; i++)
			w[1 + i].r = post_send(p.s, sbuf + i * SLOT, slen[i], stag[i], p.smh, w, 1);
		assert_int_equal(wait_reqs(w, 1 + N), 0);
		for (int i = 0; i < N; i++) {
			const unsigned char *dst = rbuf + want_buf[i] * SLOT;

			assert_int_equal(w[1 + i].sizes[0], (int)slen[i]);
			assert_int_equal(w[0].sizes[want_buf[i]], (int)slen[i]);
			check_bytes(dst, sbuf + i * SLOT, slen[i], "multi-receive buffer");
			assert_int_equal(dst[slen[i]], GUARD);
		}
	}

	/* "not now": receive {tag 1, tag 2}; a second tag-1 send and a tag-9 send wait */
	{
		static const int t2[2] = { 1, 2 };
		struct wreq v[4];
		struct rn_xreq *no;

		memset(v, 0, sizeof(v));
		for (int i = 0; i < 2; i++) {
			data[i] = rbuf + i * SLOT;
			len[i] = 4096;
			mh[i] = p.rmh;
		}
		fill(sbuf, 3 * 4096, 77);
		v[0].r = post_recv(p.r, 2, data, len, t2, mh, false);
		v[1].r = post_send(p.s, sbuf, 4096, 1, p.smh, v, 1);
		for (int k = 0; k < 100; k++) { /* stays "not now" however often it is asked */
			assert_int_equal(rn_xfer_isend(p.s, sbuf + 4096, 4096, 1, p.smh, &no), 0);
			assert_null(no);
			assert_int_equal(rn_xfer_isend(p.s, sbuf + 4096, 4096, 9, p.smh, &no), 0);
			assert_null(no);
		}
		v[2].r = post_send(p.s, sbuf + 2 * 4096, 4096, 2, p.smh, v, 1);
		assert_int_equal(wait_reqs(v, 3), 0);
		check_bytes(rbuf, sbuf, 4096, "tag 1");
		check_bytes(rbuf + SLOT, sbuf + 2 * 4096, 4096, "tag 2");
		/* the waiting tag-1 send goes with the next receive */
		memset(v, 0, sizeof(v));
		v[0].r = post_recv1(&p, rbuf, 4096, 1);
		v[1].r = post_send(p.s, sbuf + 4096, 4096, 1, p.smh, v, 1);
		assert_int_equal(wait_reqs(v, 2), 0);
		assert_int_equal(v[0].sizes[0], 4096);
		check_bytes(rbuf, sbuf + 4096, 4096, "retried send");
	}
	xfer_one(&p, 4096, 4096, 99); /* still healthy */
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

static void test_multi_tags(void **state)
{
	(void)state;
	multi_in_mode(false, false);
	multi_in_mode(true, false);
	multi_in_mode(true, true); /* clear-to-sends posted inline */
}

/* ---- when data moves: multi-receives and split parts -------------------------------------- */

/* Every byte of p[0..len) is still the guard byte. */
static void assert_untouched(const unsigned char *p, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != GUARD)
			fail_msg("%s: byte %zu was written (%#x) before the last send matched",
				 what, i, p[i]);
}

/*
 * A multi-receive's data moves only once all n of its sends matched: a receive of n = 3
 * buffers (tags 1, 2, 3) and the sends of tags 1 and 2, both comms driven for 300 ms: no
 * request completes, the sender writes nothing, every receive buffer keeps its guard bytes.
 * The send of tag 3 then moves all three. Both striping modes.
 */
static void test_multi_waits_for_all(void **state)
{
	enum { N = 3, SLOT = 128 * 1024 };
	static const int tags[N] = { 1, 2, 3 };
	static const size_t slen[N] = { 5000, 100000, 40000 };
	struct opts o = defaults;
	struct wreq w[1 + N];
	void *data[N];
	size_t len[N];
	struct rn_mh *mh[N];
	uint64_t b0[2], b1[2];
	struct pair p;
	long long t0;

	(void)state;
	rn_test_log_reset();
	for (int split = 0; split < 2; split++) {
		o.split = split;
		pair_open(&o, &p);
		memset(w, 0, sizeof(w));
		memset(rbuf, GUARD, N * SLOT);
		for (int i = 0; i < N; i++) {
			data[i] = rbuf + i * SLOT;
			len[i] = SLOT;
			mh[i] = p.rmh;
			fill(sbuf + i * SLOT, slen[i], 700 + (uint64_t)(split * N + i));
		}
		w[0].r = post_recv(p.r, N, data, len, tags, mh, false);
		tx_bytes(p.s, b0);
		for (int i = 0; i < N - 1; i++)
			w[1 + i].r = post_send(p.s, sbuf + i * SLOT, slen[i], tags[i], p.smh, w, 1);
		for (t0 = now_ms(); now_ms() - t0 < 300;)
			poke(w, N);
		for (int i = 0; i < N; i++)
			assert_false(w[i].done);
		tx_bytes(p.s, b1);
		assert_int_equal(b1[0], b0[0]);
		assert_int_equal(b1[1], b0[1]);
		assert_untouched(rbuf, N * SLOT, "multi-receive");
		w[N].r = post_send(p.s, sbuf + (N - 1) * SLOT, slen[N - 1], tags[N - 1], p.smh, w,
				   1);
		assert_int_equal(wait_reqs(w, 1 + N), 0);
		for (int i = 0; i < N; i++) {
			assert_int_equal(w[0].sizes[i], (int)slen[i]);
			assert_int_equal(w[1 + i].sizes[0], (int)slen[i]);
			check_bytes(rbuf + i * SLOT, sbuf + i * SLOT, slen[i],
				    "multi-receive buffer");
			assert_int_equal(rbuf[i * SLOT + slen[i]], GUARD);
		}
		tx_bytes(p.s, b1);
		assert_int_equal((b1[0] - b0[0]) + (b1[1] - b0[1]), slen[0] + slen[1] + slen[2]);
		pair_close(&p);
	}
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* Per port: parts posted (sender tx_msgs), parts received (receiver rx_parts), bytes written. */
static void part_counters(const struct pair *p, uint64_t *msgs, uint64_t *parts, uint64_t *bytes)
{
	struct rn_stats_comm st;

	rn_xfer_snapshot(p->s, &st);
	for (int i = 0; i < 2; i++) {
		msgs[i] = st.port[i].c.tx_msgs;
		bytes[i] = st.port[i].c.tx_bytes;
	}
	rn_xfer_snapshot(p->r, &st);
	for (int i = 0; i < 2; i++)
		parts[i] = st.port[i].c.rx_parts;
}

/*
 * Split mode (4 live QPs over 2 ports): a message of s bytes goes in min(4, max(1, s / 16 KiB))
 * parts, so at most one part per 16 KiB; each part carries a chunk of ceil(s / parts) bytes
 * rounded up to a multiple of 128 (the last part the rest). Parts go to successive QPs, so
 * alternately to the two ports. Per message: the sender's parts posted and the receiver's parts
 * received grow by the part count, and the bytes per port are those of its parts.
 */
static void test_split_parts(void **state)
{
	static const size_t sz[] = { 1,	    128,   16383, 16384, 32767, 32768,
				     40000, 49152, 50000, 65536, 65537, MIB + 3 };
	struct opts o = defaults;
	struct pair p;

	(void)state;
	rn_test_log_reset();
	o.split = true;
	pair_open(&o, &p);
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		size_t s = sz[i], want = s / (16 * 1024), chunk, pb[2] = { 0, 0 };
		uint64_t m0[2], m1[2], r0[2], r1[2], b0[2], b1[2];
		int nparts = want < 1 ? 1 : want > 4 ? 4 : (int)want, pm[2] = { 0, 0 };

		chunk = (s + (size_t)nparts - 1) / (size_t)nparts;
		chunk = (chunk + 127) / 128 * 128;
		for (int k = 0; k < nparts; k++) {
			size_t off = chunk * (size_t)k;

			pb[k % 2] += s - off < chunk ? s - off : chunk;
			pm[k % 2]++;
		}
		part_counters(&p, m0, r0, b0);
		assert_int_equal(xfer_one(&p, s, s, 900 + i), (int)s);
		part_counters(&p, m1, r1, b1);
		if ((m1[0] - m0[0]) + (m1[1] - m0[1]) != (uint64_t)nparts ||
		    (r1[0] - r0[0]) + (r1[1] - r0[1]) != (uint64_t)nparts)
			fail_msg("%zu bytes: %" PRIu64 " parts posted, %" PRIu64
				 " received; expected %d",
				 s, (m1[0] - m0[0]) + (m1[1] - m0[1]),
				 (r1[0] - r0[0]) + (r1[1] - r0[1]), nparts);
		/* the even parts on one port, the odd ones on the other */
		if (!((b1[0] - b0[0] == pb[0] && b1[1] - b0[1] == pb[1] &&
		       m1[0] - m0[0] == (uint64_t)pm[0]) ||
		      (b1[0] - b0[0] == pb[1] && b1[1] - b0[1] == pb[0] &&
		       m1[0] - m0[0] == (uint64_t)pm[1])))
			fail_msg("%zu bytes in %d parts of %zu: ports wrote %" PRIu64
				 " and %" PRIu64 " bytes, expected %zu and %zu",
				 s, nparts, chunk, b1[0] - b0[0], b1[1] - b0[1], pb[0], pb[1]);
	}
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- clipping ----------------------------------------------------------------------------- */

/* A send larger than the posted receive is clipped to it; both tests report the posted size. */
static void test_truncate(void **state)
{
	struct opts o = defaults;
	struct pair p;

	(void)state;
	rn_test_log_reset();
	for (int split = 0; split < 2; split++) {
		o.split = split;
		pair_open(&o, &p);
		assert_int_equal(xfer_one(&p, 4096, 100, 1), 100);
		assert_int_equal(xfer_one(&p, MIB + 3, 300000, 2), 300000);
		assert_int_equal(xfer_one(&p, BIG, MIB + 3, 3), MIB + 3);
		assert_int_equal(xfer_one(&p, 1, 0, 4), 0);
		/* in a multi-receive: only the buffer that is too small is clipped */
		{
			static const int tags[2] = { 1, 2 };
			size_t len[2] = { 10, 5000 };
			void *data[2] = { rbuf, rbuf + 8192 };
			struct rn_mh *mh[2] = { p.rmh, p.rmh };
			struct wreq w[3];

			memset(w, 0, sizeof(w));
			memset(rbuf, GUARD, 16384);
			fill(sbuf, 8192, 5);
			w[0].r = post_recv(p.r, 2, data, len, tags, mh, false);
			w[1].r = post_send(p.s, sbuf, 4096, 1, p.smh, w, 1);
			w[2].r = post_send(p.s, sbuf + 4096, 4096, 2, p.smh, w, 1);
			assert_int_equal(wait_reqs(w, 3), 0);
			assert_int_equal(w[0].sizes[0], 10);
			assert_int_equal(w[0].sizes[1], 4096);
			assert_int_equal(w[1].sizes[0], 10);
			assert_int_equal(w[2].sizes[0], 4096);
			check_bytes(rbuf, sbuf, 10, "clipped buffer");
			assert_int_equal(rbuf[10], GUARD);
			check_bytes(rbuf + 8192, sbuf + 4096, 4096, "unclipped buffer");
		}
		pair_close(&p);
	}
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- eager receives ----------------------------------------------------------------------- */

/*
 * NCCL's optional-completion hint: the receive reports done (with its posted size) at its
 * first test, before its data was even sent; the data still arrives: a normal receive after it
 * completes with its own message, and once the eager receive's slot comes round again (the
 * slot is recycled only when its data has really arrived) the eager buffer holds the message.
 */
static void test_eager(void **state)
{
	const size_t elen = MIB + 3; /* several parts in split mode */
	unsigned char *ebuf = rbuf + 4 * MIB, *esrc = sbuf + 4 * MIB;
	struct opts o = defaults;
	struct wreq w[3];
	struct rn_xreq *er;
	struct pair p;
	int done = 0, sz = -1;

	(void)state;
	rn_test_log_reset();
	pair_open(&o, &p);
	memset(w, 0, sizeof(w));
	memset(ebuf, GUARD, elen + 1);
	fill(esrc, elen, 42);
	{
		void *d = ebuf;
		size_t l = elen;
		int tag = 3;

		er = post_recv(p.r, 1, &d, &l, &tag, &p.rmh, true); /* id 0, slot 0 */
	}
	assert_int_equal(rn_xfer_test(er, &done, &sz), 0);
	assert_int_equal(done, 1);
	assert_int_equal(sz, (int)elen);
	/* a normal receive after it */
	fill(sbuf, 1000, 43);
	memset(rbuf, GUARD, 2000);
	w[0].r = post_recv1(&p, rbuf, 2000, 3); /* id 1 */
	w[1].r = post_send(p.s, esrc, elen, 3, p.smh, w, 1);
	w[2].r = post_send(p.s, sbuf, 1000, 3, p.smh, w, 1);
	assert_int_equal(wait_reqs(w, 3), 0);
	assert_int_equal(w[0].sizes[0], 1000);
	assert_int_equal(w[1].sizes[0], (int)elen);
	check_bytes(rbuf, sbuf, 1000, "the receive after the eager one");
	/* ids 2 .. RN_XFER_SLOTS - 1: one-byte messages, then the eager slot again */
	for (int i = 2; i < RN_XFER_SLOTS; i++) {
		memset(w, 0, sizeof(w));
		w[0].r = post_recv1(&p, rbuf, 1, 3);
		w[1].r = post_send(p.s, sbuf, 1, 3, p.smh, w, 1);
		assert_int_equal(wait_reqs(w, 2), 0);
	}
	memset(w, 0, sizeof(w));
	w[0].r = post_recv1(&p, rbuf, 4096, 3); /* slot 0: waits until the eager data is in */
	check_bytes(ebuf, esrc, elen, "eager receive");
	assert_int_equal(ebuf[elen], GUARD);
	w[1].r = post_send(p.s, sbuf, 4096, 3, p.smh, w, 1);
	assert_int_equal(wait_reqs(w, 2), 0);
	/* an eager receive tested with no sizes array */
	{
		void *d = ebuf;
		size_t l = 64;
		int tag = 3;

		er = post_recv(p.r, 1, &d, &l, &tag, &p.rmh, true);
		assert_int_equal(rn_xfer_test(er, &done, NULL), 0);
		assert_int_equal(done, 1);
		memset(w, 0, sizeof(w));
		w[0].r = post_send(p.s, esrc, 64, 3, p.smh, NULL, 0);
		assert_int_equal(wait_reqs(w, 1), 0);
	}
	xfer_one(&p, 4096, 4096, 44);
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- flush -------------------------------------------------------------------------------- */

static struct rn_xreq *flush_req(struct pair *p, int n, const int *sz)
{
	void *data[RN_XFER_MAX_RECVS];
	struct rn_mh *mh[RN_XFER_MAX_RECVS];
	struct rn_xreq *r = (struct rn_xreq *)(uintptr_t)1; /* must be overwritten */

	for (int i = 0; i < n; i++) {
		data[i] = rbuf + (size_t)i * 8192;
		mh[i] = p->rmh;
	}
	assert_int_equal(rn_xfer_iflush(p->r, n, data, sz, mh, &r), 0);
	return r;
}

/*
 * RN_FLUSH_ALWAYS with the acceptor's flush QPs: a flush of host memory returns a request that
 * completes (RDMA READs through the self-connected QPs); 100 in a row pass the in-flight limit.
 * No request when nothing is to be flushed: every size 0, RN_FLUSH_OFF, RN_FLUSH_AUTO on host
 * memory, or no flush QPs.
 */
static void test_flush(void **state)
{
	static const int one[1] = { 4096 }, two[2] = { 4096, 100 }, zero[2] = { 0, 0 };
	struct opts o = defaults;
	struct wreq w[100];
	struct pair p;

	(void)state;
	rn_test_log_reset();
	o.flush = RN_FLUSH_ALWAYS;
	o.flush_qps = true;
	pair_open(&o, &p);
	assert_int_equal(rn_xfer_params_of(p.r)->flush, RN_FLUSH_ALWAYS);
	xfer_one(&p, 4096, 4096, 1);
	memset(w, 0, sizeof(w));
	w[0].r = flush_req(&p, 1, one);
	w[1].r = flush_req(&p, 2, two);
	assert_non_null(w[0].r);
	assert_non_null(w[1].r);
	assert_null(flush_req(&p, 2, zero));
	assert_int_equal(wait_reqs(w, 2), 0);
	/*
	 * 80 in a row without testing: past the in-flight limit (32 flushes of 2 reads here)
	 * iflush waits for reads to complete; it never returns NULL for a flush that is owed
	 * (NCCL would take NULL for "nothing to flush").
	 */
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 80; i++) {
		w[i].r = flush_req(&p, 1, one);
		assert_non_null(w[i].r);
	}
	assert_int_equal(wait_reqs(w, 80), 0);
	xfer_one(&p, 4096, 4096, 2);
	pair_close(&p);

	/*
	 * Every request of the receive comm out (32 receives and 64 flushes nobody tested): the
	 * next flush fails with a WARN instead of spinning or returning NULL.
	 */
	pair_open(&o, &p);
	for (int i = 0; i < RN_XFER_SLOTS; i++)
		assert_non_null(post_recv1(&p, rbuf, 64, 1));
	for (int i = 0; i < RN_XFER_RECV_REQS - RN_XFER_SLOTS; i++)
		assert_non_null(flush_req(&p, 1, one));
	{
		void *data = rbuf;
		struct rn_mh *mh = p.rmh;
		struct rn_xreq *r = NULL;

		assert_int_equal(rn_xfer_iflush(p.r, 1, &data, one, &mh, &r), -ENOSPC);
		assert_null(r);
		assert_true(rn_test_log_contains("requests of the receive comm are in use"));
	}
	pair_close(&p);
	rn_test_log_reset();

	o.flush = RN_FLUSH_OFF;
	pair_open(&o, &p);
	xfer_one(&p, 4096, 4096, 3);
	assert_null(flush_req(&p, 1, one));
	pair_close(&p);

	o.flush = RN_FLUSH_AUTO;
	pair_open(&o, &p);
	assert_null(flush_req(&p, 1, one));
	pair_close(&p);

	o.flush = RN_FLUSH_ALWAYS;
	o.flush_qps = false;
	pair_open(&o, &p);
	assert_null(flush_req(&p, 1, one));
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- limits ------------------------------------------------------------------------------- */

/*
 * 32 receives in flight (RN_XFER_SLOTS, NCCL's NCCL_NET_MAX_REQUESTS): all post, the 33rd
 * gets no request (its entry is busy) until the first completes; then 32 sends, tested in
 * reverse order.
 */
static void test_inflight(void **state)
{
	enum { N = RN_XFER_SLOTS, LEN = 8192 };
	struct opts o = defaults;
	static struct wreq w[N + 1];
	struct rn_xreq *no;
	struct pair p;

	(void)state;
	rn_test_log_reset();
	o.split = false;
	pair_open(&o, &p);
	memset(w, 0, sizeof(w));
	fill(sbuf, (size_t)N * LEN, 8);
	memset(rbuf, GUARD, (size_t)N * LEN);
	for (int i = 0; i < N; i++)
		w[i].r = post_recv1(&p, rbuf + (size_t)i * LEN, LEN, 1);
	{
		void *d = rbuf;
		size_t l = LEN;
		int tag = 1;

		assert_int_equal(rn_xfer_irecv(p.r, 1, &d, &l, &tag, &p.rmh, false, &no), 0);
		assert_null(no);
	}
	{
		static struct wreq s[N];

		memset(s, 0, sizeof(s));
		for (int i = 0; i < N; i++)
			s[i].r = post_send(p.s, sbuf + (size_t)i * LEN, LEN - (size_t)i, 1, p.smh,
					   w, N);
		for (int i = N - 1; i >= 0; i--)
			assert_int_equal(wait_reqs(&s[i], 1), 0);
	}
	assert_int_equal(wait_reqs(w, N), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(w[i].sizes[0], LEN - i);
		check_bytes(rbuf + (size_t)i * LEN, sbuf + (size_t)i * LEN, (size_t)(LEN - i),
			    "in flight");
	}
	xfer_one(&p, 4096, 4096, 9); /* the 33rd: entry 0 is free again */
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/* ---- handles ------------------------------------------------------------------------------ */

/*
 * Handles are checked (one WARN each, the comm stays usable): none, a buffer outside its
 * registration, one of other devices, one of another port count. Zero-byte messages need no
 * handle. A handle is valid on every comm of its devices (regIsGlobal).
 */
static void test_handles(void **state)
{
	struct opts o = defaults;
	struct pair p, q;
	struct rn_xreq *r;
	struct rn_mh *other;
	int tag = 1;

	(void)state;
	rn_test_log_reset();
	pair_open(&o, &p);
	assert_true(rn_xfer_valid(p.s, RN_CONN_SEND));
	assert_true(rn_xfer_valid(p.r, RN_CONN_RECV));
	assert_true(rn_xfer_valid(p.r, -1));
	assert_false(rn_xfer_valid(p.s, RN_CONN_RECV));
	assert_false(rn_xfer_valid(NULL, -1));
	assert_false(rn_xfer_valid(sbuf, -1));
	assert_true(rn_xfer_mh_valid(p.smh));
	assert_false(rn_xfer_mh_valid(NULL));
	assert_false(rn_xfer_mh_valid(sbuf));
	assert_false(rn_xfer_req_valid(NULL));
	assert_true(rn_xfer_params_of(p.s)->split);

	assert_int_equal(rn_xfer_isend(p.s, sbuf, 10, 1, NULL, &r), -EBADF);
	assert_null(r);
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("not a live railnet registration"));
	assert_int_equal(rn_xfer_isend(p.s, sbuf + BUF_BYTES - 10, 20, 1, p.smh, &r), -EINVAL);
	assert_true(rn_test_log_contains("outside its registration"));
	{
		void *d = rbuf;
		size_t l = 10;

		/* the send comm's handle is of svdev0; the receive comm is on svdev1 */
		assert_int_equal(rn_xfer_irecv(p.r, 1, &d, &l, &tag, &p.smh, false, &r), -EINVAL);
		assert_null(r);
		assert_true(rn_test_log_contains("registered on other devices"));
	}
	assert_int_equal(rn_test_log.warns, 3);
	rn_test_log_reset();

	/* zero bytes without handles, on both sides */
	{
		struct wreq w[2];
		void *d = rbuf;
		size_t l = 0;
		struct rn_mh *none = NULL;

		memset(w, 0, sizeof(w));
		w[0].r = post_recv(p.r, 1, &d, &l, &tag, &none, false);
		w[1].r = post_send(p.s, sbuf, 0, 1, NULL, w, 1);
		assert_true(rn_xfer_req_valid(w[0].r));
		assert_true(rn_xfer_req_valid(w[1].r));
		assert_int_equal(wait_reqs(w, 2), 0);
		assert_int_equal(w[0].sizes[0], 0);
		assert_int_equal(w[1].sizes[0], 0);
		assert_false(rn_xfer_req_valid(w[0].r)); /* back in the pool */
	}
	xfer_one(&p, 4096, 4096, 1); /* the comms are fine */

	/* regIsGlobal: p's send handle on a second send comm of the same device */
	pair_open(&o, &q);
	assert_int_equal(rn_xfer_dereg(q.s, q.smh), 0);
	q.smh = p.smh;
	xfer_one(&q, MIB + 3, MIB + 3, 2);
	q.smh = NULL;
	pair_close(&q);

	/* a handle of 2 ports on a comm of 1 */
	o.nports = 1;
	pair_open(&o, &q);
	assert_int_equal(rn_xfer_isend(q.s, sbuf, 10, 1, p.smh, &r), -EINVAL);
	assert_true(rn_test_log_contains("registered on 2 device(s), this comm uses 1"));
	assert_int_equal(rn_test_log.warns, 1);
	rn_test_log_reset();
	assert_int_equal(rn_xfer_reg(q.s, sbuf, 4096, RN_PTR_HOST, -1, 0, &other), 0);
	assert_int_equal(rn_xfer_dereg(q.s, other), 0);
	xfer_one(&q, 4096, 4096, 3);
	pair_close(&q);
	pair_close(&p);
	assert_nothing_left();
	RN_ASSERT_NO_WARN();
}

/*
 * rn_xfer_create refuses a connection without a data region, or with one too small for its
 * role (one WARN each), and frees the connection: nothing is left.
 */
static void test_create_refused(void **state)
{
	struct rn_conn_params cs = conn_params(&defaults, RN_CONN_SEND),
			      cr = conn_params(&defaults, RN_CONN_RECV);
	struct rn_xfer_params xs = xfer_params(&defaults, RN_CONN_SEND),
			      xr = xfer_params(&defaults, RN_CONN_RECV);
	struct rn_xcomm *c = NULL;
	struct rn_conn *s, *r;

	(void)state;
	rn_test_log_reset();
	cs.region_bytes = 0;
	cr.region_bytes = 4096; /* a page: far less than a receive region */
	conn_pair(&defaults, &cs, &cr, &s, &r);
	assert_int_equal(rn_xfer_create(s, &xs, &c), -EINVAL);
	assert_int_equal(rn_xfer_create(r, &xr, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(rn_test_log.warns, 2);
	assert_true(rn_test_log_contains("connection without a data region"));
	assert_nothing_left();
	rn_test_log_reset();
}

/* ---- closing ------------------------------------------------------------------------------ */

static void close_idle(bool send_first)
{
	struct opts o = defaults;
	struct pair p;
	int fds0;

	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	pair_open(&o, &p);
	xfer_one(&p, MIB, MIB, 1);
	assert_int_equal(rn_xfer_dereg(p.s, p.smh), 0);
	assert_int_equal(rn_xfer_dereg(p.r, p.rmh), 0);
	if (send_first) {
		rn_xfer_close(p.s);
		rn_xfer_close(p.r);
	} else {
		rn_xfer_close(p.r);
		rn_xfer_close(p.s);
	}
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	RN_ASSERT_NO_WARN();
}

static void test_close_send_first(void **state)
{
	(void)state;
	close_idle(true);
}

static void test_close_recv_first(void **state)
{
	(void)state;
	close_idle(false);
}

static const struct opts fast = {
	.split = true,
	.qpp = 1,
	.nports = 2,
	.flush = RN_FLUSH_OFF,
	.keepalive_ms = 200,
	.retry_cnt = 3, /* with timeout 14: a dead peer is seen after 4 x 67 ms */
};

/* Test r until it fails; returns the error (the bound is a hang guard). */
static int wait_error(struct rn_xreq *r)
{
	long long t0 = now_ms();
	int done = 0, rc;

	for (;;) {
		rc = rn_xfer_test(r, &done, NULL);
		if (rc)
			return rc;
		if (done)
			fail_msg("a request to a closed peer completed");
		if (now_ms() - t0 > WAIT_MS)
			fail_msg("a request to a closed peer neither failed nor completed within "
				 "%d ms",
				 WAIT_MS);
	}
}

/*
 * Requests in flight when a side closes. The receiver closes first: a send posted after that
 * fails (its writes find no QP, or the peer's socket is closed) with the comm's error
 * (-EREMOTEIO or -ECONNRESET), and so does every later call. The sender closes first: a
 * pending receive fails the same way (keepalive probe or closed socket). Then the survivor
 * closes with its requests still in flight.
 */
static void test_close_inflight(void **state)
{
	struct pair p;
	struct wreq w[2];
	struct rn_xreq *r, *r2, *sent;
	long long t0;
	int fds0, rc;

	(void)state;
	rn_test_log_reset();
	fds0 = rn_test_count_fds();

	/* receiver first */
	pair_open(&fast, &p);
	memset(w, 0, sizeof(w));
	w[0].r = post_recv1(&p, rbuf, MIB, 1);
	r2 = post_recv1(&p, rbuf + MIB, MIB, 1);
	(void)r2; /* freed by the close */
	w[1].r = post_send(p.s, sbuf, MIB, 1, p.smh, w, 1);
	assert_int_equal(wait_reqs(w, 2), 0);
	assert_int_equal(rn_xfer_dereg(p.r, p.rmh), 0);
	rn_xfer_close(p.r);
	t0 = now_ms();
	sent = post_send(p.s, sbuf, MIB, 1, p.smh, NULL, 0); /* the second clear-to-send is there */
	rc = wait_error(sent);
	assert_true(rc == -EREMOTEIO || rc == -ECONNRESET);
	assert_true(rn_test_log_contains("the connection is unusable"));
	assert_int_equal(rn_xfer_isend(p.s, sbuf, 1, 1, p.smh, &r), rc);
	assert_null(r);
	print_message("  receiver closed: the sender's request failed after %lld ms\n",
		      now_ms() - t0);
	assert_int_equal(rn_xfer_dereg(p.s, p.smh), 0);
	rn_xfer_close(p.s);
	assert_nothing_left();
	rn_test_log_reset();

	/* sender first */
	pair_open(&fast, &p);
	memset(w, 0, sizeof(w));
	w[0].r = post_recv1(&p, rbuf, MIB, 1);
	r2 = post_recv1(&p, rbuf + MIB, MIB, 1);
	w[1].r = post_send(p.s, sbuf, MIB, 1, p.smh, w, 1);
	assert_int_equal(wait_reqs(w, 2), 0);
	assert_int_equal(rn_xfer_dereg(p.s, p.smh), 0);
	rn_xfer_close(p.s);
	t0 = now_ms();
	rc = wait_error(r2);
	assert_true(rc == -EREMOTEIO || rc == -ECONNRESET);
	assert_true(rn_test_log_contains("the connection is unusable"));
	{
		void *d = rbuf;
		size_t l = 1;
		int tag = 1;

		assert_int_equal(rn_xfer_irecv(p.r, 1, &d, &l, &tag, &p.rmh, false, &r), rc);
		assert_null(r);
	}
	print_message("  sender closed: the receiver's request failed after %lld ms\n",
		      now_ms() - t0);
	assert_int_equal(rn_xfer_dereg(p.r, p.rmh), 0);
	rn_xfer_close(p.r);
	assert_nothing_left();
	rn_test_log_reset();

	/* both close with requests in flight, in either order */
	for (int send_first = 0; send_first < 2; send_first++) {
		pair_open(&defaults, &p);
		for (int i = 0; i < 8; i++)
			post_recv1(&p, rbuf + (size_t)i * MIB, MIB, 1);
		for (int i = 0; i < 4; i++)
			post_send(p.s, sbuf + (size_t)i * MIB, MIB, 1, p.smh, NULL, 0);
		/*
		 * Deregistered after the close (as orphans): deregistering memory that writes
		 * in flight still target is the caller's error, and the peer's QP would report
		 * it as an asynchronous access error.
		 */
		if (send_first) {
			rn_xfer_close(p.s);
			rn_xfer_close(p.r);
		} else {
			rn_xfer_close(p.r);
			rn_xfer_close(p.s);
		}
		assert_true(rn_xfer_orphan_dereg(p.smh));
		assert_true(rn_xfer_orphan_dereg(p.rmh));
		assert_nothing_left();
	}

	/*
	 * Receive buffers deregistered while writes to them are in flight (the caller's error):
	 * the writes fail at the receiver's QPs, which report async access errors, some of them
	 * still queued when the QPs are destroyed. As with the kernel, those are dropped, and any
	 * that was read had been acknowledged (rdma-core's destroy waits for that; softverbs for
	 * 2 s, saying so): the closes return at once (1.5 s: a guard against that wait, not a
	 * performance claim), no event is read for a freed QP (ASan), and a new pair on the same
	 * devices works.
	 */
	pair_open(&defaults, &p);
	for (int i = 0; i < 8; i++)
		post_recv1(&p, rbuf + (size_t)i * MIB, MIB, 1);
	assert_int_equal(rn_xfer_dereg(p.r, p.rmh), 0);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 2; i++)
		w[i].r = post_send(p.s, sbuf + (size_t)i * MIB, MIB, 1, p.smh, NULL, 0);
	t0 = now_ms();
	while (now_ms() - t0 < 300) /* let the writes reach the deregistered buffers */
		for (int i = 0; i < 2; i++)
			if (!w[i].done && rn_xfer_test(w[i].r, &w[i].done, NULL))
				w[i].done = 1; /* failed: the error is the point */
	t0 = now_ms();
	rn_xfer_close(p.s);
	rn_xfer_close(p.r);
	assert_true(now_ms() - t0 < 1500);
	assert_true(rn_xfer_orphan_dereg(p.smh));
	assert_nothing_left();
	pair_open(&defaults, &p);
	assert_int_equal(xfer_one(&p, MIB, MIB, 77), MIB);
	pair_close(&p);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	rn_test_log_reset();
}

/*
 * Comms closed with their registrations live: the handles become orphans, still valid on
 * other comms of the device (regIsGlobal), released by rn_xfer_orphan_dereg, by rn_xfer_dereg
 * with the closed comm's pointer (never read), or by rn_xfer_orphans_free at the end.
 */
static void test_close_registered(void **state)
{
	struct opts o = defaults;
	struct pair p, q;
	struct rn_mh *extra, *kept;
	struct rn_xcomm *closed_r, *closed_s;
	struct rn_mr_stats mr;
	int fds0, stranger = 0;

	(void)state;
	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	assert_int_equal(rn_xfer_orphans_free(), 0);
	pair_open(&o, &p);
	assert_int_equal(rn_xfer_reg(p.s, sbuf + 8 * MIB, MIB, RN_PTR_HOST, -1, 0, &extra), 0);
	assert_int_equal(rn_xfer_reg(p.s, sbuf + 4096, 4096, RN_PTR_HOST, -1, 0, &kept), 0);
	xfer_one(&p, MIB, MIB, 1);
	/* requests in flight too */
	post_recv1(&p, rbuf, MIB, 1);
	post_send(p.s, sbuf, MIB, 1, p.smh, NULL, 0);
	closed_r = p.r;
	rn_xfer_close(p.r);
	rn_xfer_close(p.s);
	assert_int_equal(rn_test_log.warns, 0);
	assert_true(rn_test_log_contains("not deregistered"));
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	/* the registrations hold their devices' PDs */
	assert_true(rn_pd_refs(ctx[0]) > 0);
	assert_true(rn_pd_refs(ctx[1]) > 0);
	assert_true(rn_xfer_mh_valid(p.smh));

	assert_true(rn_xfer_orphan_dereg(p.smh));
	assert_false(rn_xfer_orphan_dereg(&stranger));
	assert_false(rn_xfer_orphan_dereg(NULL));
	assert_int_equal(rn_xfer_dereg(closed_r, p.rmh), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);

	/* an orphan still serves a new comm of its device */
	pair_open(&o, &q);
	{
		struct wreq w[2];

		memset(w, 0, sizeof(w));
		fill(sbuf + 8 * MIB, MIB, 11);
		w[0].r = post_recv1(&q, rbuf, MIB, 1);
		w[1].r = post_send(q.s, sbuf + 8 * MIB, MIB, 1, extra, w, 1);
		assert_int_equal(wait_reqs(w, 2), 0);
		check_bytes(rbuf, sbuf + 8 * MIB, MIB, "through an orphan handle");
	}
	closed_s = q.s;
	pair_close(&q);
	assert_int_equal(rn_xfer_dereg(closed_s, extra), 0); /* its comm is closed too */
	rn_mr_totals(&mr);
	assert_int_equal(mr.entries, 1); /* kept */
	assert_int_equal(rn_xfer_orphans_free(), 1);
	assert_int_equal(rn_xfer_orphans_free(), 0);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	RN_ASSERT_NO_WARN();
}

/* ---- faults ------------------------------------------------------------------------------- */

/*
 * SOFTVERBS_PORT_DOWN=svdevD:P:MS: the port goes down MS ms after softverbs was loaded, in the
 * middle of a stream of 1 MiB messages (split over both ports, 8 in flight). Every message
 * verifies; both comms count a failover on that rail; after it, the sender writes nothing
 * more on the port and the stream goes on over the other one.
 */
static void test_port_down(void **state)
{
	enum { DEPTH = 8, AFTER = 30 };
	const char *env = getenv("SOFTVERBS_PORT_DOWN");
	char dev[32];
	int port = 0, down_ms = 0, side, idx = -1, before = 0, after = -1, msgs = 0, fds0;
	struct {
		struct rn_stats_comm s, r;
	} st[2]; /* when the failover was seen, at the end */
	long long t_down, t_seen = 0;
	struct pair p;
	uint64_t seq = 0;

	(void)state;
	if (!env || sscanf(env, "%31[^:]:%d:%d", dev, &port, &down_ms) != 3 ||
	    strncmp(dev, "svdev", 5) || port < 1 || port > 2)
		fail_msg("run with SOFTVERBS_PORT_DOWN=svdev<0|1>:<1|2>:<ms> (ctest "
			 "test_xfer_portdown)");
	side = atoi(dev + 5); /* 0: the sender's device, 1: the receiver's */
	t_down = t_load_ms + down_ms;
	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	pair_open(&fast, &p);
	rn_xfer_snapshot(side ? p.r : p.s, &st[0].s);
	for (int i = 0; i < st[0].s.nports; i++)
		if (!strcmp(st[0].s.port[i].dev, dev) && st[0].s.port[i].port == port)
			idx = i;
	assert_true(idx >= 0);
	for (int k = 0; k < DEPTH; k++)
		fill(sbuf + (size_t)k * MIB, MIB, 1000 + (uint64_t)k);
	/*
	 * Each round: DEPTH receives, a zero-byte receive after them, DEPTH sends, and the
	 * zero-byte send that matches. The zero-byte receive is tested while the sends complete,
	 * as NCCL's proxy keeps its receive comm busy: a send held after a failover waits for the
	 * receiver's next call (exactly-once re-sends). The zero-byte send may itself be the one
	 * held, so it is carried into the next round and tested there, while that round's
	 * receives keep the receive comm busy.
	 */
	struct wreq carry = { 0 };

	while (after < AFTER) {
		struct wreq
			w[2 * DEPTH + 3]; /* receives, sends, zero-byte pair, last round's send */
		long long t0;

		memset(w, 0, sizeof(w));
		w[2 * DEPTH + 2] = carry;
		memset(rbuf, 0, DEPTH * MIB);
		for (int k = 0; k < DEPTH; k++) {
			seq++;
			memcpy(sbuf + (size_t)k * MIB, &seq, sizeof(seq));
			memcpy(sbuf + (size_t)(k + 1) * MIB - sizeof(seq), &seq, sizeof(seq));
			w[k].r = post_recv1(&p, rbuf + (size_t)k * MIB, MIB, 0);
		}
		w[2 * DEPTH].r = post_recv1(&p, rbuf + DEPTH * MIB, 0, 0);
		for (int k = 0; k < DEPTH; k++)
			w[DEPTH + k].r =
				post_send(p.s, sbuf + (size_t)k * MIB, MIB, 0, p.smh, w, DEPTH);
		for (t0 = now_ms();;) {
			int left = 0;

			poke(w, 2 * DEPTH + 3);
			for (int k = 0; k < 2 * DEPTH; k++)
				left += !w[k].done;
			left += w[2 * DEPTH + 2].r && !w[2 * DEPTH + 2].done;
			if (!left)
				break;
			if (now_ms() - t0 > WAIT_MS)
				fail_msg("%d stream requests not done within %d ms", left, WAIT_MS);
		}
		/*
		 * The zero-byte send: the receive must complete; the send may be held. Both are
		 * tested while waiting: if the send went out on the dead QP before the failover
		 * was seen, its re-post needs the send comm's next call after the receiver's
		 * delivery report (testing only the receive would wait for ever).
		 */
		w[2 * DEPTH + 1].r = post_send(p.s, sbuf, 0, 0, p.smh, &w[2 * DEPTH], 1);
		for (t0 = now_ms(); !w[2 * DEPTH].done;) {
			poke(&w[2 * DEPTH], 3);
			if (!w[2 * DEPTH].done && now_ms() - t0 > WAIT_MS)
				fail_msg("the zero-byte receive not done within %d ms", WAIT_MS);
		}
		carry = w[2 * DEPTH + 1];
		for (int k = 0; k < DEPTH; k++) {
			assert_int_equal(w[k].sizes[0], MIB);
			assert_int_equal(w[DEPTH + k].sizes[0], MIB);
			check_bytes(rbuf + (size_t)k * MIB, sbuf + (size_t)k * MIB, MIB,
				    "stream message");
		}
		msgs += DEPTH;
		if (after < 0 && now_ms() < t_down)
			before += DEPTH;
		if (after < 0) {
			rn_xfer_snapshot(p.s, &st[0].s);
			rn_xfer_snapshot(p.r, &st[0].r);
			if (st[0].s.port[idx].c.failovers && st[0].r.port[idx].c.failovers) {
				after = 0;
				t_seen = now_ms();
			} else if (now_ms() > t_down + WAIT_MS) {
				fail_msg("no failover within %d ms of the port going down",
					 WAIT_MS);
			}
		} else {
			after++;
		}
	}
	if (!carry.done) /* the failover is AFTER rounds back: nothing is held any more */
		assert_int_equal(wait_reqs(&carry, 1), 0);
	rn_xfer_snapshot(p.s, &st[1].s);
	rn_xfer_snapshot(p.r, &st[1].r);
	print_message("  %s port %d down at +%d ms: %d messages before, failover seen %lld ms "
		      "after, %d messages in all\n",
		      dev, port, down_ms, before, t_seen - t_down, msgs);
	if (!before)
		fail_msg("the port went down before the stream started (the handshake took "
			 "longer than %d ms): raise the down time",
			 down_ms);
	/* after the failover, nothing more on the dead port, everything on the other */
	assert_true(st[1].s.port[idx].c.tx_bytes == st[0].s.port[idx].c.tx_bytes);
	assert_true(st[1].s.port[1 - idx].c.tx_bytes >=
		    st[0].s.port[1 - idx].c.tx_bytes + (uint64_t)AFTER * DEPTH * MIB);
	assert_true(st[1].s.port[idx].c.failovers >= 1);
	assert_true(st[1].r.port[idx].c.failovers >= 1);
	assert_int_equal(st[1].s.port[1 - idx].c.failovers, 0);
	assert_int_equal(st[1].r.port[1 - idx].c.failovers, 0);
	/*
	 * Error completions: at most one per QP of the dead port (fast: one QP per port), the
	 * one that may reveal the failure before the port's event is read. What the dead QP
	 * flushed after that (at least the receiver's pre-posted receives on it) is not
	 * counted, and the live port counts none.
	 */
	print_message("  error completions on the dead port: sender %" PRIu64 ", receiver %" PRIu64
		      "\n",
		      st[1].s.port[idx].c.errors, st[1].r.port[idx].c.errors);
	assert_true(st[1].s.port[idx].c.errors <= (uint64_t)fast.qpp);
	assert_true(st[1].r.port[idx].c.errors <= (uint64_t)fast.qpp);
	assert_int_equal(st[1].s.port[1 - idx].c.errors, 0);
	assert_int_equal(st[1].r.port[1 - idx].c.errors, 0);
	assert_true(rn_test_log_contains("is down"));
	pair_close(&p);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	rn_test_log_reset();
}

/*
 * Drive one side until a call fails: test its requests, and when none is left post another
 * (an irecv, or an isend that waits for a clear-to-send). Returns the error.
 */
static int drive_to_error(struct pair *p, bool send, struct rn_xreq **pending, int n,
			  long long deadline)
{
	for (;;) {
		int rc = 0, busy = 0;

		for (int i = 0; i < n && !rc; i++) {
			int done = 0;

			if (!pending[i])
				continue;
			rc = rn_xfer_test(pending[i], &done, NULL);
			if (done)
				pending[i] = NULL;
			else
				busy++;
		}
		if (!rc && !busy) {
			struct rn_xreq *r = NULL;

			if (send) {
				rc = rn_xfer_isend(p->s, sbuf, 65536, 0, p->smh, &r);
			} else {
				void *d = rbuf;
				size_t l = 65536;
				int tag = 0;

				rc = rn_xfer_irecv(p->r, 1, &d, &l, &tag, &p->rmh, false, &r);
			}
			pending[0] = r;
		}
		if (rc)
			return rc;
		if (now_ms() > deadline)
			fail_msg("the %s comm did not fail within %d ms", send ? "send" : "receive",
				 WAIT_MS);
	}
}

/*
 * SOFTVERBS_QP_ERR_AFTER=n: every QP goes to error after n work requests. Failover moves the
 * traffic from QP to QP until none is left; then both comms fail with -EREMOTEIO and a WARN
 * naming the QP and both GIDs, and every later call returns that error. Nothing hangs.
 */
static void test_qp_errors(void **state)
{
	enum { DEPTH = 8, LEN = 65536 };
	const char *env = getenv("SOFTVERBS_QP_ERR_AFTER");
	struct rn_xreq *sp[DEPTH], *rp[DEPTH], *r;
	struct opts o = fast;
	struct rn_stats_comm st;
	int srv = 0, rrv = 0, msgs = 0, fds0;
	long long t0, deadline;
	struct pair p;

	(void)state;
	if (!env || atoi(env) < 1)
		fail_msg("run with SOFTVERBS_QP_ERR_AFTER=<n> (ctest test_xfer_qperr)");
	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	o.qpp = 2;
	o.split = false;
	pair_open(&o, &p);
	t0 = now_ms();
	deadline = t0 + WAIT_MS;
	/* a stream until one side's call fails */
	while (!srv && !rrv) {
		int nr = 0, ns = 0;

		memset(sp, 0, sizeof(sp));
		memset(rp, 0, sizeof(rp));
		for (; nr < DEPTH && !rrv; nr++) {
			void *d = rbuf + (size_t)nr * LEN;
			size_t l = LEN;
			int tag = 0;

			rp[nr] = NULL;
			while (!rp[nr] && !rrv) {
				rrv = rn_xfer_irecv(p.r, 1, &d, &l, &tag, &p.rmh, false, &rp[nr]);
				assert_true(now_ms() < deadline);
			}
		}
		for (; ns < DEPTH && !srv && !rrv; ns++) {
			sp[ns] = NULL;
			while (!sp[ns] && !srv) {
				srv = rn_xfer_isend(p.s, sbuf + (size_t)ns * LEN, LEN, 0, p.smh,
						    &sp[ns]);
				assert_true(now_ms() < deadline);
			}
		}
		for (int left = 1; left && !srv && !rrv;) {
			left = 0;
			for (int i = 0; i < DEPTH && !rrv; i++) {
				int done = 0;

				if (!rp[i])
					continue;
				rrv = rn_xfer_test(rp[i], &done, NULL);
				if (done) {
					rp[i] = NULL;
					msgs++;
				} else {
					left++;
				}
			}
			for (int i = 0; i < DEPTH && !srv; i++) {
				int done = 0;

				if (!sp[i])
					continue;
				srv = rn_xfer_test(sp[i], &done, NULL);
				if (done)
					sp[i] = NULL;
				else
					left++;
			}
			if (now_ms() > deadline)
				fail_msg("the stream neither went on nor failed within %d ms",
					 WAIT_MS);
		}
	}
	/* the other side fails too */
	if (!srv)
		srv = drive_to_error(&p, true, sp, DEPTH, deadline);
	if (!rrv)
		rrv = drive_to_error(&p, false, rp, DEPTH, deadline);
	print_message("  both comms failed %lld ms after the stream began, %d messages "
		      "received\n",
		      now_ms() - t0, msgs);
	assert_int_equal(srv, -EREMOTEIO);
	assert_int_equal(rrv, -EREMOTEIO);
	assert_true(rn_test_log.warns >= 1);
	/* the WARN docs/data-path.md ("Failures") shows, part by part */
	assert_true(rn_test_log_contains("the connection is unusable"));
	assert_true(rn_test_log_contains(", local GID "));
	assert_true(rn_test_log_contains(") to QP "));
	assert_true(rn_test_log_contains("(remote GID "));
	assert_true(rn_test_log_contains(") failed: "));
	assert_true(rn_test_log_contains(", vendor error "));
	assert_true(rn_test_log_contains(", and no other QP of the connection is left; the "
					 "connection is unusable"));
	/* every later call returns the comm's error */
	assert_int_equal(rn_xfer_isend(p.s, sbuf, 1, 0, p.smh, &r), -EREMOTEIO);
	assert_null(r);
	{
		void *d = rbuf;
		size_t l = 1;
		int tag = 0;

		assert_int_equal(rn_xfer_irecv(p.r, 1, &d, &l, &tag, &p.rmh, false, &r),
				 -EREMOTEIO);
		assert_null(r);
	}
	rn_xfer_snapshot(p.s, &st);
	assert_true(st.port[0].c.errors + st.port[1].c.errors > 0);
	pair_close(&p);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	rn_test_log_reset();
}

/*
 * Exactly once after a failover (SOFTVERBS_DROP_ACK=1): the receiver's QP that takes the first
 * part delivers it and then acknowledges nothing more, as when the ACKs are lost on the wire.
 * Round-robin striping: message A goes whole on that QP and completes at the receiver, which
 * reuses the buffer at once (NCCL does) for message C; C goes on the other QP and completes.
 * Then the sender's QP runs out of retries and fails over. Sending A again now would write A
 * over C in the reused buffer: the receiver's report must show A delivered, and A's send
 * complete without a second write. The receiver makes its report on its next call (the fence
 * needs its CPU): as NCCL's proxy does, it has the next receive (D) posted and tests it while
 * the sends wait. The connection goes on over the surviving QP.
 */
static void test_ack_drop(void **state)
{
	struct opts o = fast;
	struct rn_stats_comm ss, rs;
	struct wreq w[6];
	struct pair p;
	long long t0;
	uint64_t skipped = 0, resent = 0, sfo = 0, rfo = 0;
	int fds0;

	(void)state;
	if (!getenv("SOFTVERBS_DROP_ACK") || strcmp(getenv("SOFTVERBS_DROP_ACK"), "1"))
		fail_msg("run with SOFTVERBS_DROP_ACK=1 (ctest test_xfer_ackdrop)");
	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	o.split = false;
	pair_open(&o, &p);
	memset(w, 0, sizeof(w));
	fill(sbuf, MIB, 501);
	fill(sbuf + MIB, MIB, 502);
	w[0].r = post_recv1(&p, rbuf, MIB, 0);
	w[1].r = post_send(p.s, sbuf, MIB, 0, p.smh, w, 1);
	assert_int_equal(wait_reqs(w, 1), 0);
	check_bytes(rbuf, sbuf, MIB, "message A");
	poke(&w[1], 1);
	assert_false(w[1].done); /* its acknowledgement is lost */
	w[2].r = post_recv1(&p, rbuf, MIB, 0);
	w[3].r = post_send(p.s, sbuf + MIB, MIB, 0, p.smh, &w[2], 1);
	assert_int_equal(wait_reqs(&w[2], 1), 0);
	w[4].r = post_recv1(&p, rbuf + 2 * MIB, MIB, 0);
	for (t0 = now_ms(); !w[1].done || !w[3].done;) {
		poke(w, 5);
		if (now_ms() - t0 > WAIT_MS)
			fail_msg("the sends of A and C did not complete within %d ms", WAIT_MS);
	}
	check_bytes(rbuf, sbuf + MIB, MIB, "message C in the buffer A had, after A's failover");
	fill(sbuf + 2 * MIB, MIB, 503);
	w[5].r = post_send(p.s, sbuf + 2 * MIB, MIB, 0, p.smh, &w[4], 1);
	assert_int_equal(wait_reqs(w, 6), 0);
	check_bytes(rbuf + 2 * MIB, sbuf + 2 * MIB, MIB, "message D");
	check_bytes(rbuf, sbuf + MIB, MIB, "message C, after D");
	rn_xfer_snapshot(p.s, &ss);
	rn_xfer_snapshot(p.r, &rs);
	for (int i = 0; i < ss.nports; i++) {
		skipped += ss.port[i].c.resend_skipped;
		resent += ss.port[i].c.resent;
		sfo += ss.port[i].c.failovers;
		rfo += rs.port[i].c.failovers;
	}
	print_message("  sender: %" PRIu64 " failover(s), %" PRIu64 " part(s) not sent again, "
		      "%" PRIu64 " resent; receiver: %" PRIu64 " failover(s)\n",
		      sfo, skipped, resent, rfo);
	assert_int_equal(sfo, 1);
	assert_int_equal(rfo, 1);
	assert_int_equal(skipped, 1); /* A's one part */
	assert_int_equal(resent, 0);
	assert_true(rn_test_log_contains("is down"));
	for (int k = 0; k < 4; k++)
		assert_int_equal(xfer_one(&p, MIB, MIB, 510 + (uint64_t)k), MIB);
	pair_close(&p);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	rn_test_log_reset();
}

/*
 * RAILNET_KEEPALIVE_MS against a dead link (SOFTVERBS_CUT_LINK=ms: at that time, counted from
 * softverbs' load, the link of every QP dies; the process and both comms live on, so the
 * peer's out-of-band socket says nothing). Two pairs are opened before it, one with keepalive
 * (200 ms, the fast transport timeouts) and one with keepalive 0; each moves a message, then
 * has a receive pending whose clear-to-send was delivered before the cut. After the cut only
 * probes can notice: the receive with keepalive fails with -EREMOTEIO and the WARN names the
 * keepalive probe (WAIT_MS is a hang guard); the one without is still pending 3 s after the
 * cut, and is closed with its request in flight.
 */
static void test_keepalive_dead_link(void **state)
{
	const char *env = getenv("SOFTVERBS_CUT_LINK");
	struct opts off = fast;
	struct pair p, q;
	struct rn_xreq *rp, *rq;
	long long t_cut, t_failed = 0;
	int fds0, rc = 0, done = 0;

	(void)state;
	if (!env || atoi(env) < 1 || strchr(env, ':'))
		fail_msg("run with SOFTVERBS_CUT_LINK=<ms> (ctest test_xfer_cutlink)");
	t_cut = t_load_ms + atoi(env);
	rn_test_log_reset();
	fds0 = rn_test_count_fds();
	off.keepalive_ms = 0;
	pair_open(&fast, &p);
	pair_open(&off, &q);
	assert_int_equal(xfer_one(&p, 65536, 65536, 1), 65536);
	assert_int_equal(xfer_one(&q, 65536, 65536, 2), 65536);
	rp = post_recv1(&p, rbuf, 4096, 1);
	rq = post_recv1(&q, rbuf + MIB, 4096, 1);
	if (now_ms() > t_cut - 500)
		fail_msg("the pairs were ready only %lld ms before the link was cut: raise the cut "
			 "time",
			 t_cut - now_ms());
	while (now_ms() < t_cut + 5) { /* the clear-to-sends complete; nothing else happens */
		assert_int_equal(rn_xfer_test(rp, &done, NULL), 0);
		assert_false(done);
		assert_int_equal(rn_xfer_test(rq, &done, NULL), 0);
		assert_false(done);
	}
	while (!rc) {
		rc = rn_xfer_test(rp, &done, NULL);
		assert_false(done);
		assert_int_equal(rn_xfer_test(rq, &done, NULL), 0);
		assert_false(done);
		if (now_ms() - t_cut > WAIT_MS)
			fail_msg("a receive pending on a dead link with keepalive on did not fail "
				 "within %d ms",
				 WAIT_MS);
	}
	t_failed = now_ms();
	assert_int_equal(rc, -EREMOTEIO);
	assert_true(rn_test_log_contains("keepalive probe"));
	assert_true(rn_test_log_contains("the connection is unusable"));
	while (now_ms() < t_cut + 3000) {
		assert_int_equal(rn_xfer_test(rq, &done, NULL), 0);
		assert_false(done);
	}
	print_message("  link cut at +%s ms: keepalive 200 ms: failed after %lld ms; keepalive 0: "
		      "still pending after %lld ms\n",
		      env, t_failed - t_cut, now_ms() - t_cut);
	pair_close(&p);
	pair_close(&q);
	assert_nothing_left();
	assert_fds_back(fds0 + 2);
	rn_test_log_reset();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_split),
		cmocka_unit_test(test_sizes_round_robin),
		cmocka_unit_test(test_round_robin_rotates),
		cmocka_unit_test(test_round_robin_staggered),
		cmocka_unit_test(test_multi_tags),
		cmocka_unit_test(test_multi_waits_for_all),
		cmocka_unit_test(test_split_parts),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_eager),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_inflight),
		cmocka_unit_test(test_handles),
		cmocka_unit_test(test_create_refused),
		cmocka_unit_test(test_close_send_first),
		cmocka_unit_test(test_close_recv_first),
		cmocka_unit_test(test_close_inflight),
		cmocka_unit_test(test_close_registered),
	};
	const struct CMUnitTest portdown[] = {
		cmocka_unit_test(test_port_down),
	};
	const struct CMUnitTest qperr[] = {
		cmocka_unit_test(test_qp_errors),
	};
	const struct CMUnitTest ackdrop[] = {
		cmocka_unit_test(test_ack_drop),
	};
	const struct CMUnitTest cutlink[] = {
		cmocka_unit_test(test_keepalive_dead_link),
	};

	if (argc > 1 && !strcmp(argv[1], "portdown"))
		return cmocka_run_group_tests_name("xfer_portdown", portdown, setup, teardown);
	if (argc > 1 && !strcmp(argv[1], "qperr"))
		return cmocka_run_group_tests_name("xfer_qperr", qperr, setup, teardown);
	if (argc > 1 && !strcmp(argv[1], "ackdrop"))
		return cmocka_run_group_tests_name("xfer_ackdrop", ackdrop, setup, teardown);
	if (argc > 1 && !strcmp(argv[1], "cutlink"))
		return cmocka_run_group_tests_name("xfer_cutlink", cutlink, setup, teardown);
	if (argc > 1) {
		fprintf(stderr, "usage: test_xfer [portdown|qperr|ackdrop|cutlink]\n");
		return 2;
	}
	return cmocka_run_group_tests_name("xfer", tests, setup, teardown);
}
