// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the memory a peer writes on the data path (src/xfer.c, layouts in proto.h):
 * the clear-to-send FIFO, the delivery report and the control word of a send comm's region, and
 * the size records and control word of a receive comm's region. One process over softverbs, as
 * test_xfer: per input a fresh connected pair (svdev0 sends, svdev1 receives, loopback TCP for
 * the handshake), then the input's operations, each one byte of opcode and its operands:
 *
 *   0 slot entry 64 bytes   raw bytes over the sender's FIFO entry (a hostile receiver)
 *   1 slot entry off size nreqs tag idx
 *                           a plausible entry: inside the receive buffer, with its real keys
 *   2 64 bytes              raw bytes over the sender's control word
 *   3 gen slot 32 bytes     the sender's delivery report: its gen (and the control word's
 *                           fence_gen) and one slot's entry
 *   4 slot entry 8 bytes    a size record in the receiver's region
 *   5 64 bytes              raw bytes over the receiver's control word
 *   6 size tag              isend from the send buffer
 *   7 n (size tag) x n      irecv into the receive buffer
 *   8 rounds                test every pending request, rounds times
 *
 * These writes race the real peer's, as a broken or malicious peer's would. Asserts: every call
 * returns 0 or a comm failure (-EPROTO, -EREMOTEIO, -ECONNRESET), and once a comm has failed,
 * every later call returns that same code; nothing crashes or hangs (the operations and the
 * polling are bounded); closing both comms, with requests in flight, leaves no QP behind.
 *
 * Needs softverbs and sv-mkview (RN_BUILD_DIR, as ctest sets it): without them it says so and
 * exits 77.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "railnet/conn.h"
#include "railnet/log.h"
#include "railnet/mr.h"
#include "railnet/oob.h"
#include "railnet/proto.h"
#include "railnet/qp.h"
#include "railnet/types.h"
#include "railnet/xfer.h"
#include "rn_test_sv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_BUF (64u * 1024u)
#define FZ_MAX_OPS 48
#define FZ_MAX_REQS 64
#define FZ_WAIT_MS 20  /* polling of one "test" operation, at most */
#define FZ_DRAIN_MS 50 /* polling at the end, while requests are pending */

static bool fz_ready, fz_verbose; /* FUZZ_PEER_VERBOSE: say what completed and failed */
static char fz_view[256];
static struct ibv_context *fz_ctx[2];
static struct rn_qp_port fz_port[2][2];
static struct rn_oob_if fz_lo;
static unsigned char *fz_sbuf, *fz_rbuf;

static long long fz_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fz_quiet(int level, unsigned long sub, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)sub, (void)file, (void)line, (void)fmt;
}

static void fz_init(void)
{
	if (fz_ready)
		return;
	fz_verbose = getenv("FUZZ_PEER_VERBOSE") != NULL;
	if (!fz_verbose)
		rn_log_set_logger(fz_quiet);
	if (rn_test_sv_mkview("fuzzpeer", 2, 2, 100, fz_view, sizeof(fz_view)) ||
	    rn_test_sv_open(fz_view, 2, fz_ctx)) {
		fprintf(stderr, "fuzz_peer: softverbs could not be set up\n");
		exit(77);
	}
	for (int d = 0; d < 2; d++) {
		char name[16];

		snprintf(name, sizeof(name), "svdev%d", d);
		for (int p = 0; p < 2; p++)
			if (rn_qp_port_query(fz_ctx[d], name, p + 1, 1, &fz_port[d][p])) {
				fprintf(stderr, "fuzz_peer: %s port %d unusable\n", name, p + 1);
				exit(77);
			}
	}
	snprintf(fz_lo.name, sizeof(fz_lo.name), "lo");
	fz_lo.family = AF_INET;
	fz_lo.addr[0] = 127;
	fz_lo.addr[3] = 1;
	fz_lo.up = fz_lo.loopback = true;
	fz_sbuf = calloc(1, FZ_BUF);
	fz_rbuf = calloc(1, FZ_BUF);
	if (!fz_sbuf || !fz_rbuf)
		abort();
	fz_ready = true;
}

static struct rn_conn_params fz_params(int role)
{
	struct rn_conn_params p = {
		.iface = &fz_lo,
		.timeout_ms = 10000,
		.qps_per_port = 1,
		.attr = { .timeout = 12, .retry_cnt = 1 },
		.region_bytes = role == RN_CONN_SEND ? sizeof(struct rn_send_region)
						     : sizeof(struct rn_recv_region),
		.max_send_wr = RN_XFER_SEND_WR,
		.max_recv_wr = role == RN_CONN_RECV ? RN_XFER_RECV_WR : 0,
	};

	return p;
}

struct fz_pair {
	struct rn_xcomm *s, *r;
	struct rn_send_region *sreg;
	struct rn_recv_region *rreg;
	struct rn_mh *smh, *rmh;
	int srv, rrv; /* the code each comm failed with, 0 while healthy */
};

static bool fz_open(struct fz_pair *p)
{
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn_params cs = fz_params(RN_CONN_SEND), cr = fz_params(RN_CONN_RECV);
	struct rn_xfer_params xs = { .split = true, .keepalive_ms = 50 };
	struct rn_xfer_params xr = xs;
	struct rn_conn_listener *l;
	struct rn_conn *s = NULL, *r = NULL;
	long long t0 = fz_ms();

	memset(p, 0, sizeof(*p));
	memset(handle, 0, sizeof(handle));
	snprintf(xs.name, sizeof(xs.name), "svdev0");
	snprintf(xr.name, sizeof(xr.name), "svdev1");
	if (rn_conn_listen(fz_port[1], 2, &cr, handle, &l))
		abort();
	while (!s || !r) {
		if (!s && rn_conn_connect_step(handle, fz_port[0], 2, &cs, &s))
			abort();
		if (!r && rn_conn_accept_step(l, &r))
			abort();
		if (fz_ms() - t0 > 10000)
			abort(); /* the handshake never takes this long */
	}
	rn_conn_listen_close(l);
	p->sreg = s->region;
	p->rreg = r->region;
	if (rn_xfer_create(s, &xs, &p->s) || rn_xfer_create(r, &xr, &p->r) ||
	    rn_xfer_reg(p->s, fz_sbuf, FZ_BUF, RN_PTR_HOST, -1, 0, &p->smh) ||
	    rn_xfer_reg(p->r, fz_rbuf, FZ_BUF, RN_PTR_HOST, -1, 0, &p->rmh))
		abort();
	return true;
}

/* rc is what a call of comm *failed returned: allowed codes only, sticky once failed. */
static void fz_check(int *failed, int rc)
{
	if (rc != 0 && rc != -EPROTO && rc != -EREMOTEIO && rc != -ECONNRESET)
		abort();
	if (*failed && rc != *failed)
		abort();
	if (rc && !*failed && fz_verbose)
		fprintf(stderr, "fuzz_peer: a comm failed: %s\n", strerror(-rc));
	if (rc)
		*failed = rc;
}

struct fz_reqs {
	struct rn_xreq *r[FZ_MAX_REQS];
	bool send[FZ_MAX_REQS];
	int n;
};

/* Test every pending request once; returns how many are still pending. */
static int fz_test_all(struct fz_pair *p, struct fz_reqs *q)
{
	int left = 0;

	for (int i = 0; i < q->n; i++) {
		int done = 0, sizes[RN_XFER_MAX_RECVS];

		if (!q->r[i])
			continue;
		fz_check(q->send[i] ? &p->srv : &p->rrv, rn_xfer_test(q->r[i], &done, sizes));
		if (done && fz_verbose)
			fprintf(stderr, "fuzz_peer: %s request %d done, %d bytes\n",
				q->send[i] ? "send" : "receive", i, sizes[0]);
		if (done)
			q->r[i] = NULL;
		else
			left++;
	}
	return left;
}

static void fz_add(struct fz_reqs *q, struct rn_xreq *r, bool send)
{
	if (r && q->n < FZ_MAX_REQS) {
		q->r[q->n] = r;
		q->send[q->n++] = send;
	}
}

struct fz_in {
	const uint8_t *d;
	size_t n;
};

static bool fz_take(struct fz_in *in, void *out, size_t len)
{
	if (in->n < len)
		return false;
	memcpy(out, in->d, len);
	in->d += len;
	in->n -= len;
	return true;
}

static uint32_t fz_u16(struct fz_in *in)
{
	uint16_t v = 0;

	fz_take(in, &v, sizeof(v));
	return v;
}

static uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v = 0;

	fz_take(in, &v, 1);
	return v;
}

static void fz_op(struct fz_pair *p, struct fz_reqs *q, uint8_t op, struct fz_in *in)
{
	unsigned char raw[64];

	switch (op % 9) {
	case 0: {
		int slot = fz_u8(in) % RN_PROTO_SLOTS, e = fz_u8(in) % RN_PROTO_MAX_RECVS;

		if (fz_take(in, raw, sizeof(struct rn_cts)))
			memcpy(&p->sreg->fifo[slot][e], raw, sizeof(struct rn_cts));
		break;
	}
	case 1: {
		int slot = fz_u8(in) % RN_PROTO_SLOTS, e = fz_u8(in) % RN_PROTO_MAX_RECVS;
		uint32_t off = fz_u16(in), len = fz_u16(in);
		struct rn_cts c = { 0 };

		c.addr = (uintptr_t)fz_rbuf + (off % FZ_BUF);
		c.size = len;
		for (int i = 0; i < 2; i++)
			c.rkey[i] = p->rmh->key[i].rkey;
		c.nreqs = fz_u8(in) % (RN_PROTO_MAX_RECVS + 2);
		c.tag = fz_u8(in) % 4;
		c.idx = fz_u8(in);
		p->sreg->fifo[slot][e] = c;
		break;
	}
	case 2:
		if (fz_take(in, raw, sizeof(struct rn_xfer_ctl)))
			memcpy(&p->sreg->ctl_in, raw, sizeof(struct rn_xfer_ctl));
		break;
	case 3: {
		uint64_t gen = fz_u8(in);
		int slot = fz_u8(in) % RN_PROTO_SLOTS;

		if (fz_take(in, raw, sizeof(struct rn_fence_slot)))
			memcpy(&p->sreg->rep_in.slot[slot], raw, sizeof(struct rn_fence_slot));
		p->sreg->rep_in.gen = gen;
		p->sreg->ctl_in.fence_gen = gen;
		p->sreg->ctl_in.seq++;
		break;
	}
	case 4: {
		int slot = fz_u8(in) % RN_PROTO_SLOTS, e = fz_u8(in) % RN_PROTO_MAX_RECVS;
		uint64_t v;

		if (fz_take(in, &v, sizeof(v)))
			p->rreg->rec[slot][e] = v;
		break;
	}
	case 5:
		if (fz_take(in, raw, sizeof(struct rn_xfer_ctl)))
			memcpy(&p->rreg->ctl_in, raw, sizeof(struct rn_xfer_ctl));
		break;
	case 6: {
		uint32_t len = fz_u16(in) % FZ_BUF;
		struct rn_xreq *r = NULL;

		fz_check(&p->srv, rn_xfer_isend(p->s, fz_sbuf, len, fz_u8(in) % 4, p->smh, &r));
		fz_add(q, r, true);
		break;
	}
	case 7: {
		int n = fz_u8(in) % RN_PROTO_MAX_RECVS + 1;
		void *bufs[RN_PROTO_MAX_RECVS];
		size_t sizes[RN_PROTO_MAX_RECVS];
		int tags[RN_PROTO_MAX_RECVS];
		struct rn_mh *mh[RN_PROTO_MAX_RECVS];
		struct rn_xreq *r = NULL;

		for (int i = 0; i < n; i++) {
			sizes[i] = fz_u16(in) % (FZ_BUF / RN_PROTO_MAX_RECVS);
			bufs[i] = fz_rbuf + (size_t)i * (FZ_BUF / RN_PROTO_MAX_RECVS);
			tags[i] = fz_u8(in) % 4;
			mh[i] = p->rmh;
		}
		fz_check(&p->rrv, rn_xfer_irecv(p->r, n, bufs, sizes, tags, mh, false, &r));
		fz_add(q, r, false);
		break;
	}
	default: {
		int rounds = fz_u8(in) % 32 + 1;
		long long t0 = fz_ms();

		for (int i = 0; i < rounds && fz_ms() - t0 < FZ_WAIT_MS; i++)
			if (!fz_test_all(p, q))
				break;
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	struct fz_reqs q = { .n = 0 };
	struct fz_pair p;
	long long t0;
	int ops = 0;
	uint8_t op;

	fz_init();
	fz_open(&p);
	while (ops++ < FZ_MAX_OPS && fz_take(&in, &op, 1))
		fz_op(&p, &q, op, &in);
	for (t0 = fz_ms(); fz_ms() - t0 < FZ_DRAIN_MS && fz_test_all(&p, &q);)
		;
	rn_xfer_dereg(p.s, p.smh);
	rn_xfer_dereg(p.r, p.rmh);
	rn_xfer_close(p.s);
	rn_xfer_close(p.r);
	if (rn_test_sv_rdv_qps(fz_view) != 0)
		abort(); /* a QP outlived its comm */
	return 0;
}
