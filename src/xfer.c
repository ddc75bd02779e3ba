// SPDX-License-Identifier: Apache-2.0
/*
 * The data path (xfer.h): send and receive comms, the clear-to-send protocol, failover
 * between the QPs of a connection, keepalive probes and flush. One comm is driven by one
 * thread; everything here is allocated when the comm is made, so isend/irecv/test only post,
 * poll and touch memory they own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "railnet/event.h"
#include "railnet/gid.h"
#include "railnet/log.h"
#include "railnet/types.h"
#include "railnet/stats.h"
#include "railnet/verbs.h"
#include "railnet/xfer.h"

#define RN_XCOMM_MAGIC 0x4d4f4358u /* "XCOM" */
#define RN_XREQ_MAGIC 0x51455258u  /* "XREQ" */
#define RN_MH_MAGIC 0x484d4e52u	   /* "RNMH" */
#define RN_XFER_POLL 16		   /* completions per poll_cq call */
#define RN_XFER_REPOST 16	   /* receives re-posted at once */
#define RN_XFER_CHAIN_MAX 64	   /* work requests of one part */
#define RN_XFER_IDLE_CHECK 1023	   /* idle polls between clock reads (mask) */
#define RN_XFER_TICK 15		   /* progress calls between clock reads (mask) */
/*
 * Every RN_XFER_CHECK_NS of progress, busy or idle: the ports' async events (a port that went
 * down moves its QPs' traffic within this, not after the QP's retry timeout) and the peer's
 * out-of-band socket (its EOF says the peer process is gone). Both are non-blocking reads.
 */
#define RN_XFER_CHECK_NS (10 * 1000000ull)
/* Pending requests fail this long after the peer's socket closed, if nothing more arrived. */
#define RN_XFER_PEER_GRACE_NS (100 * 1000000ull)
/* iflush waits at most this long for room among the flush reads in flight. */
#define RN_XFER_FLUSH_WAIT_NS (10 * 1000000000ull)
/*
 * Split mode cuts a message into at most size / RN_XFER_SPLIT_MIN parts, so that small
 * messages do not pay one completion per QP (docs/performance.md has the measurement).
 */
#define RN_XFER_SPLIT_MIN (16 * 1024)

/*
 * A counter of a comm (c->st): only the thread driving the comm writes it, and the snapshot
 * thread (RAILNET_STATS_INTERVAL) reads it, so a relaxed store of the sum: no lock, no atomic
 * read-modify-write on the data path, and no torn value for the reader.
 */
#define RN_CTR_ADD(field, n) __atomic_store_n(&(field), (field) + (uint64_t)(n), __ATOMIC_RELAXED)

enum rn_wr_type {
	RN_WR_DATA = 1, /* sender: the chain of one part */
	RN_WR_CTS,	/* receiver: clear-to-send entries */
	RN_WR_PING,	/* keepalive probe */
	RN_WR_CTL,	/* dead-QP notice */
	RN_WR_FLUSH,	/* receiver: flush READ */
	RN_WR_RECV,	/* receiver: pre-posted receive */
};

static const char *const rn_wr_type_name[] = {
	[RN_WR_DATA] = "data write",	  [RN_WR_CTS] = "clear-to-send write",
	[RN_WR_PING] = "keepalive probe", [RN_WR_CTL] = "failover notice",
	[RN_WR_FLUSH] = "flush read",	  [RN_WR_RECV] = "receive",
};

struct rn_chain {
	uint64_t id;
	uint16_t slot;
	uint8_t type;
	uint8_t part;
	uint8_t nparts;
	uint16_t nwr;
};

struct rn_xqp {
	struct ibv_qp *qp;
	int port;  /* local port index */
	int rport; /* the peer's port index */
	bool dead;
	bool held;    /* sender: dead, and its data chains wait for the receiver's report */
	int inflight; /* work requests in the send queue */
	int recv_out; /* receiver: receives posted and not completed (a fence waits for 0) */
	struct rn_chain *ring;
	uint32_t head, tail; /* ring: tail = oldest outstanding chain */
	int recv_debt;	     /* receives consumed, not re-posted yet */
};

struct rn_sgroup {
	uint64_t id;
	bool active, posted;
	int nreqs, arrived;
	int nparts, pending;
	struct rn_cts cts[RN_XFER_MAX_RECVS];
	struct rn_xreq *req[RN_XFER_MAX_RECVS];
	uintptr_t data[RN_XFER_MAX_RECVS];
	size_t size[RN_XFER_MAX_RECVS];
	struct rn_mh *mh[RN_XFER_MAX_RECVS];
};

static inline bool rn_group_small(const struct rn_sgroup *g)
{
	return g->nreqs == 1 && g->nparts == 1 && g->size[0] < RN_IMM_SMALL_MAX;
}

struct rn_rslot {
	bool busy, complete;
	bool cts_again; /* its clear-to-send was posted again and is not acknowledged yet */
	uint64_t id;
	int n;
	int nparts, got;
	uint64_t mask[RN_QP_MAX_QPS / 64];
	size_t size[RN_XFER_MAX_RECVS]; /* posted */
	size_t recvd[RN_XFER_MAX_RECVS];
	struct rn_xreq *req; /* NULL once an eager request was handed back */
};

enum rn_req_type { RN_REQ_SEND = 1, RN_REQ_RECV, RN_REQ_FLUSH };

struct rn_xreq {
	uint32_t magic;
	uint8_t type;
	bool done;
	bool eager;
	struct rn_xcomm *c;
	int slot;
	int pending; /* flush: reads outstanding */
	size_t size; /* send: bytes sent (clipped); eager recv: posted size */
	struct rn_xreq *next;
};

struct rn_xcomm {
	uint32_t magic;
	int role;
	struct rn_conn *conn;
	struct rn_qp_set *set;
	struct rn_xfer_params p;
	int nports, nqps, nlive;
	struct rn_xqp xq[RN_QP_MAX_QPS];
	uint64_t head;	    /* sender: id the FIFO shows next; receiver: id posted next */
	uint64_t post_next; /* sender: next id to post */
	uint32_t rr;	    /* round-robin cursor over the live QPs */
	struct rn_sgroup *sg;
	struct rn_rslot *rs;
	int nbusy;    /* sender: groups not complete; receiver: slots busy */
	bool starved; /* sender: the last isend found no clear-to-send */
	struct rn_xreq *pool, *free_reqs;
	int npool;
	int failed; /* 0, or the error every call returns */
	uint64_t ctl_seen;
	bool ctl_owed;				  /* our control word must be (re)posted */
	uint64_t sent_fenced[RN_QP_MAX_QPS / 64]; /* receiver: fenced bits last posted */
	uint64_t fence_gen;			  /* receiver: reports written */
	int nheld;				  /* sender: QPs with held chains */
	uint32_t idle;
	uint64_t idle_since_ns;
	uint32_t tick;		/* progress calls, for RN_XFER_TICK */
	uint64_t next_check_ns; /* next RN_XFER_CHECK_NS check */
	uint64_t peer_gone_ns;	/* when the peer's socket closed; 0: open */
	int pings_out;
	int flush_out;
	struct rn_port_counters st[RN_QP_MAX_PORTS];
	struct rn_mh *mhs;	   /* live registrations made on this comm, under rn_mh_lock */
	struct rn_stats_live live; /* known to RAILNET_STATS_INTERVAL's snapshots */
};

/* The state of FIFO slot slot's message (slots from the wire are below RN_XFER_SLOTS). */
static inline struct rn_sgroup *rn_sg(struct rn_xcomm *c, unsigned slot)
{
	return &c->sg[slot % RN_XFER_SLOTS];
}

static inline struct rn_rslot *rn_rs(struct rn_xcomm *c, unsigned slot)
{
	return &c->rs[slot % RN_XFER_SLOTS];
}

static uint64_t rn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *rn_region(const struct rn_xcomm *c)
{
	return c->conn->region;
}

static uint32_t rn_lkey(const struct rn_xcomm *c, int port)
{
	return c->conn->region_mr[port]->lkey;
}

/* ---- requests ---------------------------------------------------------------------------- */

static struct rn_xreq *rn_req_get(struct rn_xcomm *c, int type)
{
	struct rn_xreq *r = c->free_reqs;

	if (!r)
		return NULL;
	c->free_reqs = r->next;
	r->type = (uint8_t)type;
	r->done = false;
	r->eager = false;
	r->pending = 0;
	r->size = 0;
	r->slot = -1;
	r->magic = RN_XREQ_MAGIC;
	return r;
}

static void rn_req_put(struct rn_xcomm *c, struct rn_xreq *r)
{
	r->magic = 0;
	r->next = c->free_reqs;
	c->free_reqs = r;
}

bool rn_xfer_req_valid(const void *p)
{
	const struct rn_xreq *r = p;

	return r && r->magic == RN_XREQ_MAGIC && r->c && r->c->magic == RN_XCOMM_MAGIC;
}

/* ---- failure ----------------------------------------------------------------------------- */

static int rn_fail(struct rn_xcomm *c, int err)
{
	if (!c->failed)
		c->failed = err;
	return c->failed;
}

/* A protocol violation by the peer: fatal for the comm. */
static int rn_proto(struct rn_xcomm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rn_proto(struct rn_xcomm *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	RN_WARN("%s: %s comm: protocol error: %s; the connection is unusable", c->p.name,
		c->role == RN_CONN_SEND ? "send" : "receive", msg);
	return rn_fail(c, -EPROTO);
}

/*
 * One WARN with everything about a failed completion; the comm fails. q is the data QP's
 * index, or -1 for a flush QP (connected to itself) on local port `port`.
 */
static int rn_fatal_wc(struct rn_xcomm *c, int port, int q, const struct ibv_wc *wc,
		       const char *extra)
{
	const struct rn_qp_set_port *lp = &c->set->port[port];
	int type = rn_wrid_type(wc->wr_id);
	char lg[INET6_ADDRSTRLEN], rg[INET6_ADDRSTRLEN];
	uint32_t rqpn = q < 0 ? wc->qp_num : c->conn->remote.qp[q].qpn;

	rn_gid_str(lp->dev.gid, lg, sizeof(lg));
	rn_gid_str(q < 0 ? lp->dev.gid : c->conn->remote.port[c->xq[q].rport].gid, rg, sizeof(rg));
	RN_WARN("%s: %s comm: %s on QP %u (%s port %d, local GID %s) to QP %u (remote GID %s) "
		"failed: %s (status %d, vendor error %#x)%s; the connection is unusable",
		c->p.name, c->role == RN_CONN_SEND ? "send" : "receive",
		type > 0 && type <= RN_WR_RECV ? rn_wr_type_name[type] : "work request", wc->qp_num,
		lp->dev.name, lp->dev.port, lg, rqpn, rg, rn_verbs()->wc_status_str(wc->status),
		(int)wc->status, wc->vendor_err, extra ? extra : "");
	return rn_fail(c, -EREMOTEIO);
}

/* ---- posting ----------------------------------------------------------------------------- */

/*
 * Every chain holds at least one work request, so a QP never has more chains outstanding than
 * RN_XFER_SEND_WR: the send queue's room is also the ring's (RN_XFER_SEND_WR entries).
 */
static bool rn_room(const struct rn_xqp *x, int nwr)
{
	return x->inflight + nwr <= RN_XFER_SEND_WR;
}

static int rn_post(struct rn_xcomm *c, int q, struct ibv_send_wr *wr, const struct rn_chain *ch)
{
	struct rn_xqp *x = &c->xq[q];
	struct ibv_send_wr *bad = NULL;
	int rc;

	rc = rn_verbs()->post_send(x->qp, wr, &bad);
	if (rc) {
		RN_WARN("%s: posting a %s on QP %u (%s port %d) failed: %s; the connection is "
			"unusable",
			c->p.name, rn_wr_type_name[ch->type], x->qp->qp_num,
			c->set->port[x->port].dev.name, c->set->port[x->port].dev.port,
			strerror(-rc));
		return rn_fail(c, -EREMOTEIO);
	}
	x->ring[x->head % RN_XFER_SEND_WR] = *ch;
	x->head++;
	x->inflight += ch->nwr;
	return 0;
}

/* The next live QP after the cursor (the cursor moves on). -1 when none. */
static int rn_next_live(struct rn_xcomm *c)
{
	for (int i = 0; i < c->nqps; i++) {
		int q = (int)(c->rr++ % (uint32_t)c->nqps);

		if (!c->xq[q].dead)
			return q;
	}
	return -1;
}

/* Bytes of buffer i that part k of nparts carries, and where it starts. */
static void rn_part_range(size_t size, int k, int nparts, size_t *off, size_t *len)
{
	size_t chunk = (size + (size_t)nparts - 1) / (size_t)nparts;

	chunk = (chunk + RN_XFER_ALIGN - 1) & ~(size_t)(RN_XFER_ALIGN - 1);
	*off = chunk * (size_t)k;
	if (*off >= size) {
		*off = size;
		*len = 0;
		return;
	}
	*len = size - *off < chunk ? size - *off : chunk;
}

static int rn_part_nwr(const struct rn_sgroup *g, int k, int nparts)
{
	int nwr = k == 0 && !(g->nreqs == 1 && nparts == 1 && g->size[0] < RN_IMM_SMALL_MAX);
	bool data = false;

	for (int i = 0; i < g->nreqs; i++) {
		size_t off, len;

		rn_part_range(g->size[i], k, nparts, &off, &len);
		if (len) {
			nwr += (int)((len + RN_XFER_MAX_WR - 1) / RN_XFER_MAX_WR);
			data = true;
		}
	}
	return nwr + (data ? 0 : 1);
}

/* Post part k of group g on QP q (room checked by the caller). */
static int rn_post_part(struct rn_xcomm *c, struct rn_sgroup *g, int k, int nparts, int q)
{
	struct rn_send_region *R = rn_region(c);
	struct rn_xqp *x = &c->xq[q];
	struct ibv_send_wr wr[RN_XFER_CHAIN_MAX];
	struct ibv_sge sge[RN_XFER_CHAIN_MAX];
	int slot = (int)(g->id % RN_XFER_SLOTS), n = 0;
	uint64_t wrid = rn_wrid(RN_WR_DATA, q, (uint32_t)slot);
	uint64_t rec = c->conn->remote_region + offsetof(struct rn_recv_region, rec[slot]);
	uint32_t rkey = c->conn->remote_rkey[x->rport];
	struct rn_chain ch = { .id = g->id,
			       .slot = (uint16_t)slot,
			       .type = RN_WR_DATA,
			       .part = (uint8_t)k,
			       .nparts = (uint8_t)nparts };
	uint64_t bytes = 0;
	bool data = false;

	memset(wr, 0, sizeof(wr));
	if (k == 0 && !rn_group_small(g)) {
		sge[n] = (struct ibv_sge){ .addr = (uintptr_t)R->rec_out[slot],
					   .length = (uint32_t)(g->nreqs * sizeof(uint64_t)),
					   .lkey = rn_lkey(c, x->port) };
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
		wr[n].opcode = IBV_WR_RDMA_WRITE;
		wr[n].wr.rdma.remote_addr = rec;
		wr[n].wr.rdma.rkey = rkey;
		n++;
	}
	for (int i = 0; i < g->nreqs; i++) {
		size_t off, len;

		rn_part_range(g->size[i], k, nparts, &off, &len);
		while (len) {
			uint32_t l = len > RN_XFER_MAX_WR ? RN_XFER_MAX_WR : (uint32_t)len;

			if (n == RN_XFER_CHAIN_MAX - 1)
				return rn_proto(c,
						"message %" PRIu64 " needs more than %d work "
						"requests on one QP",
						g->id, RN_XFER_CHAIN_MAX);
			sge[n] = (struct ibv_sge){ .addr = g->data[i] + off,
						   .length = l,
						   .lkey = g->mh[i]->key[x->port].lkey };
			wr[n].sg_list = &sge[n];
			wr[n].num_sge = 1;
			wr[n].opcode = IBV_WR_RDMA_WRITE;
			wr[n].wr.rdma.remote_addr = g->cts[i].addr + off;
			wr[n].wr.rdma.rkey = g->cts[i].rkey[x->rport];
			n++;
			off += l;
			len -= l;
			bytes += l;
			data = true;
		}
	}
	if (!data) {
		/* no data on this QP: a zero-byte write carries the immediate */
		wr[n].num_sge = 0;
		wr[n].opcode = IBV_WR_RDMA_WRITE;
		wr[n].wr.rdma.remote_addr = rec;
		wr[n].wr.rdma.rkey = rkey;
		n++;
	}
	wr[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[n - 1].imm_data = htonl(rn_group_small(g) ? rn_imm_small(g->id, g->size[0])
						     : rn_imm(g->id, k, nparts));
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = wrid;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ch.nwr = (uint16_t)n;
	RN_CTR_ADD(c->st[x->port].tx_bytes, bytes);
	RN_CTR_ADD(c->st[x->port].tx_msgs, 1);
	return rn_post(c, q, wr, &ch);
}

/* Post the group of id post_next if every QP it needs has room. 1 posted, 0 not now. */
static int rn_post_group(struct rn_xcomm *c, struct rn_sgroup *g)
{
	int qs[RN_QP_MAX_QPS], nparts = 1, k;
	uint32_t rr = c->rr;
	size_t total = 0;

	if (c->nlive == 0)
		return rn_fail(c, -EREMOTEIO);
	for (int i = 0; i < g->nreqs; i++)
		total += g->size[i];
	if (c->p.split && c->nlive > 1) {
		size_t want = total / RN_XFER_SPLIT_MIN;

		nparts = want < 1 ? 1 : want > (size_t)c->nlive ? c->nlive : (int)want;
	}
	for (k = 0; k < nparts; k++) {
		qs[k] = rn_next_live(c);
		if (!rn_room(&c->xq[qs[k]], rn_part_nwr(g, k, nparts))) {
			c->rr = rr; /* try again later from the same place */
			return 0;
		}
	}
	g->nparts = nparts;
	g->pending = nparts;
	g->posted = true;
	for (k = 0; k < nparts; k++) {
		int rc = rn_post_part(c, g, k, nparts, qs[k]);

		if (rc)
			return rc;
	}
	return 1;
}

static int rn_post_ready(struct rn_xcomm *c)
{
	while (c->post_next < c->head) {
		struct rn_sgroup *g = rn_sg(c, (unsigned)(c->post_next % RN_XFER_SLOTS));
		int rc = rn_post_group(c, g);

		if (rc <= 0)
			return rc;
		c->post_next++;
	}
	return 0;
}

static int rn_post_cts(struct rn_xcomm *c, int slot, uint64_t id, int n, bool again)
{
	struct rn_recv_region *R = rn_region(c);
	int q = rn_next_live(c);
	struct rn_xqp *x;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct rn_chain ch = { .id = id, .slot = (uint16_t)slot, .type = RN_WR_CTS, .nwr = 1 };

	if (q < 0)
		return rn_fail(c, -EREMOTEIO);
	x = &c->xq[q];
	if (!rn_room(x, 1))
		return rn_proto(c, "QP %u has no room for a clear-to-send", x->qp->qp_num);
	sge = (struct ibv_sge){ .addr = (uintptr_t)R->cts_out[slot],
				.length = (uint32_t)(n * (int)sizeof(struct rn_cts)),
				.lkey = rn_lkey(c, x->port) };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rn_wrid(RN_WR_CTS, q, (uint32_t)slot);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED | (c->p.inline_cts ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr =
		c->conn->remote_region + offsetof(struct rn_send_region, fifo[slot]);
	wr.wr.rdma.rkey = c->conn->remote_rkey[x->rport];
	RN_CTR_ADD(c->st[x->port].tx_msgs, 1);
	if (again)
		RN_CTR_ADD(c->st[x->port].resent, 1);
	return rn_post(c, q, &wr, &ch);
}

/* A zero-byte write (type PING) or our control word (type CTL, rn_post_notice) on QP q. */
static int rn_post_ctl(struct rn_xcomm *c, int q, int type)
{
	struct rn_xqp *x = &c->xq[q];
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct rn_chain ch = { .type = (uint8_t)type, .nwr = 1 };
	int rc;

	if (!rn_room(x, 1))
		return 0; /* the probe or notice can wait: the queue is busy anyway */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rn_wrid(type, q, 0);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = c->conn->remote_region;
	wr.wr.rdma.rkey = c->conn->remote_rkey[x->rport];
	if (type == RN_WR_CTL && c->role == RN_CONN_SEND) {
		struct rn_send_region *R = rn_region(c);

		sge = (struct ibv_sge){ .addr = (uintptr_t)&R->ctl_out,
					.length = sizeof(R->ctl_out),
					.lkey = rn_lkey(c, x->port) };
		wr.wr.rdma.remote_addr += offsetof(struct rn_recv_region, ctl_in);
		wr.sg_list = &sge;
		wr.num_sge = 1;
	} else if (type == RN_WR_CTL) {
		struct rn_recv_region *R = rn_region(c);

		/* the report and the control word, in one write (proto.h) */
		sge = (struct ibv_sge){ .addr = (uintptr_t)&R->rep_out,
					.length = sizeof(R->rep_out) + sizeof(R->ctl_out),
					.lkey = rn_lkey(c, x->port) };
		wr.wr.rdma.remote_addr += offsetof(struct rn_send_region, rep_in);
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	if (type == RN_WR_PING)
		c->pings_out++;
	rc = rn_post(c, q, &wr, &ch);
	return rc ? rc : 1;
}

/*
 * The receiver's report (proto.h, struct rn_fence_rep): every slot's state, as of now. Called
 * only once every dead QP in fenced has been reaped, so each part that landed through one is
 * counted here, and nothing more can land through it.
 */
static void rn_fill_report(struct rn_xcomm *c, const uint64_t *fenced)
{
	struct rn_recv_region *R = rn_region(c);

	c->fence_gen++;
	R->rep_out.gen = c->fence_gen;
	for (int s = 0; s < RN_XFER_SLOTS; s++) {
		const struct rn_rslot *rs = &c->rs[s];
		struct rn_fence_slot *e = &R->rep_out.slot[s];

		e->id = rs->id;
		memcpy(e->mask, rs->mask, sizeof(e->mask));
		e->done = rs->complete || !rs->busy;
	}
	memcpy(R->ctl_out.fenced, fenced, sizeof(R->ctl_out.fenced));
	R->ctl_out.fence_gen = c->fence_gen;
}

/*
 * Post our control word when it is owed: after a failover this side detected (the dead bits),
 * and on a receiver also whenever the set of fenced QPs (dead, every receive reaped) grew. A
 * busy queue or no live QP: later (the comm fails elsewhere when no QP is left).
 */
static int rn_post_notice(struct rn_xcomm *c)
{
	uint64_t fenced[RN_QP_MAX_QPS / 64] = { 0 };
	bool recv = c->role == RN_CONN_RECV;
	struct rn_xfer_ctl *out;
	int q, rc;

	if (recv)
		for (q = 0; q < c->nqps; q++)
			if (c->xq[q].dead && c->xq[q].recv_out == 0)
				fenced[q / 64] |= 1ull << (q % 64);
	if (!c->ctl_owed && (!recv || !memcmp(fenced, c->sent_fenced, sizeof(fenced))))
		return 0;
	q = rn_next_live(c);
	if (q < 0 || !rn_room(&c->xq[q], 1))
		return 0;
	out = recv ? &((struct rn_recv_region *)rn_region(c))->ctl_out
		   : &((struct rn_send_region *)rn_region(c))->ctl_out;
	if (recv)
		rn_fill_report(c, fenced);
	out->seq++;
	rc = rn_post_ctl(c, q, RN_WR_CTL);
	if (rc < 0)
		return rc;
	c->ctl_owed = false;
	memcpy(c->sent_fenced, fenced, sizeof(fenced));
	return 0;
}

static int rn_post_recvs(struct rn_xcomm *c, int q, int n)
{
	struct ibv_recv_wr wr[RN_XFER_REPOST], *bad = NULL;
	struct rn_xqp *x = &c->xq[q];

	while (n > 0) {
		int m = n > RN_XFER_REPOST ? RN_XFER_REPOST : n, rc;

		memset(wr, 0, sizeof(wr));
		for (int i = 0; i < m; i++) {
			wr[i].wr_id = rn_wrid(RN_WR_RECV, q, 0);
			wr[i].next = i + 1 < m ? &wr[i + 1] : NULL;
		}
		rc = rn_verbs()->post_recv(x->qp, wr, &bad);
		if (rc) {
			RN_WARN("%s: posting receives on QP %u failed: %s; the connection is "
				"unusable",
				c->p.name, x->qp->qp_num, strerror(-rc));
			return rn_fail(c, -EREMOTEIO);
		}
		x->recv_out += m;
		n -= m;
	}
	return 0;
}

/* ---- failover ---------------------------------------------------------------------------- */

/*
 * Exactly once (proto.h, struct rn_fence_rep; docs/data-path.md, "Failover"). When a QP dies:
 *  - both sides move their end to the error state, so that nothing more lands through it;
 *  - the receiver reaps every receive posted on it (the flushes follow any part that landed),
 *    then writes its report: each slot's id, parts received and whether it is complete;
 *  - the sender holds the dead QP's data chains until that report shows the QP fenced, and
 *    then posts again only the parts the receiver lacks. A part that landed but whose
 *    acknowledgement died with the QP is never written twice, so a receive buffer that NCCL
 *    reused after the message completed is never overwritten with old data;
 *  - the receiver's clear-to-sends are posted again at once (the sender ignores an entry older
 *    than the one it waits for), and the slot is not reused until the new one is acknowledged.
 */

/* Part done: the group's requests complete with its last part. */
static void rn_group_part_done(struct rn_xcomm *c, struct rn_sgroup *g)
{
	if (--g->pending == 0) {
		for (int i = 0; i < g->nreqs; i++)
			if (g->req[i])
				g->req[i]->done = true;
		g->active = false;
		c->nbusy--;
	}
}

/* Post part ch of a group again, on the next live QP with room. */
static int rn_repost_part(struct rn_xcomm *c, const struct rn_chain *ch)
{
	struct rn_sgroup *g = rn_sg(c, ch->slot);

	for (int tries = c->nqps; tries > 0; tries--) {
		int q = rn_next_live(c);

		if (q < 0)
			break;
		if (rn_room(&c->xq[q], rn_part_nwr(g, ch->part, ch->nparts))) {
			RN_CTR_ADD(c->st[c->xq[q].port].resent, 1);
			return rn_post_part(c, g, ch->part, ch->nparts, q);
		}
	}
	return rn_proto(c, "no live QP has room for the parts of a failed QP");
}

/* A dead QP's clear-to-send: again while its receive still waits for data. */
static int rn_repost_cts(struct rn_xcomm *c, const struct rn_chain *ch)
{
	struct rn_rslot *rs = rn_rs(c, ch->slot);

	if (!rs->busy || rs->complete || rs->id != ch->id) {
		if (rs->id == ch->id)
			rs->cts_again = false;
		return 0;
	}
	rs->cts_again = true;
	return rn_post_cts(c, ch->slot, ch->id, rs->n, true);
}

/* Move QP q to the error state: nothing more is sent or lands through it. */
static int rn_qp_stop(struct rn_xcomm *c, int q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int rc = rn_verbs()->modify_qp(c->xq[q].qp, &a, IBV_QP_STATE);

	if (rc) {
		RN_WARN("%s: moving dead QP %u to the error state failed: %s; the connection is "
			"unusable",
			c->p.name, c->xq[q].qp->qp_num, strerror(-rc));
		return rn_fail(c, -EREMOTEIO);
	}
	return 0;
}

/*
 * QP q is gone (why: the status, or the peer's notice). Its end stops; its chains are held
 * (data), posted again (clear-to-sends) or dropped; our control word is owed, also when the
 * peer's notice told us: the peer learns that this end stopped, and a receiver fences the QP
 * even if the notice it is said to have sent never came. Returns 0, or the comm's error.
 */
static int rn_failover(struct rn_xcomm *c, int q, const char *why)
{
	struct rn_xqp *x = &c->xq[q];
	struct rn_xfer_ctl *out;
	bool data = false;
	uint32_t t;
	int rc;

	x->dead = true;
	c->nlive--;
	RN_CTR_ADD(c->st[x->port].failovers, 1);
	RN_WARN("%s: %s comm: QP %u on %s port %d is down (%s); %d of %d QPs left, its traffic "
		"moves to them",
		c->p.name, c->role == RN_CONN_SEND ? "send" : "receive", x->qp->qp_num,
		c->set->port[x->port].dev.name, c->set->port[x->port].dev.port, why, c->nlive,
		c->nqps);
	rc = rn_qp_stop(c, q);
	for (t = x->tail; t != x->head && !rc; t++) {
		const struct rn_chain *ch = &x->ring[t % RN_XFER_SEND_WR];

		if (ch->type == RN_WR_DATA)
			data = true;
		else if (ch->type == RN_WR_CTS)
			rc = rn_repost_cts(c, ch);
		else if (ch->type == RN_WR_PING)
			c->pings_out--;
	}
	x->inflight = 0;
	if (data) {
		x->held = true;
		c->nheld++;
	} else {
		x->tail = x->head;
	}
	if (rc)
		return rc;
	out = c->role == RN_CONN_SEND ? &((struct rn_send_region *)rn_region(c))->ctl_out
				      : &((struct rn_recv_region *)rn_region(c))->ctl_out;
	out->dead[q / 64] |= 1ull << (q % 64);
	c->ctl_owed = true; /* also re-posts a notice that was on this QP */
	return rn_post_notice(c);
}

/*
 * Sender: the receiver's report, when it shows held QPs fenced. The report is copied first
 * and used only when its gen matched the control word's before and after the copy (a later
 * report landing meanwhile: next call).
 */
static int rn_check_fence(struct rn_xcomm *c)
{
	struct rn_send_region *R = rn_region(c);
	const volatile struct rn_xfer_ctl *in = &R->ctl_in;
	struct rn_fence_slot rep[RN_XFER_SLOTS];
	uint64_t gen = __atomic_load_n(&in->fence_gen, __ATOMIC_ACQUIRE), fenced[2];
	int q, rc = 0;

	for (q = 0; q < c->nqps; q++)
		if (c->xq[q].held && (in->fenced[q / 64] & (1ull << (q % 64))))
			break;
	if (q == c->nqps || __atomic_load_n(&R->rep_in.gen, __ATOMIC_ACQUIRE) != gen)
		return 0;
	/* word by word with acquire loads: none moves after the second look at the gens */
	for (size_t i = 0; i < sizeof(fenced) / sizeof(fenced[0]); i++)
		fenced[i] = __atomic_load_n(&in->fenced[i], __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < RN_XFER_SLOTS * sizeof(rep[0]) / 8; i++)
		((uint64_t *)rep)[i] =
			__atomic_load_n(&((const uint64_t *)R->rep_in.slot)[i], __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&R->rep_in.gen, __ATOMIC_ACQUIRE) != gen ||
	    __atomic_load_n(&in->fence_gen, __ATOMIC_ACQUIRE) != gen)
		return 0;
	for (q = 0; q < c->nqps && !rc; q++) {
		struct rn_xqp *x = &c->xq[q];

		if (!x->held || !(fenced[q / 64] & (1ull << (q % 64))))
			continue;
		for (uint32_t t = x->tail; t != x->head && !rc; t++) {
			const struct rn_chain *ch = &x->ring[t % RN_XFER_SEND_WR];
			const struct rn_fence_slot *e = &rep[ch->slot];
			struct rn_sgroup *g = rn_sg(c, ch->slot);

			if (ch->type != RN_WR_DATA || !g->active || g->id != ch->id)
				continue;
			if (e->id < ch->id)
				rc = rn_proto(c,
					      "the receiver's report shows message %" PRIu64
					      " in slot %u, which holds message %" PRIu64 " here",
					      e->id, ch->slot, ch->id);
			else if (e->id > ch->id || e->done ||
				 (e->mask[ch->part / 64] & (1ull << (ch->part % 64)))) {
				RN_CTR_ADD(c->st[x->port].resend_skipped, 1);
				rn_group_part_done(c, g);
			} else {
				rc = rn_repost_part(c, ch);
			}
		}
		x->tail = x->head;
		x->held = false;
		c->nheld--;
	}
	return rc;
}

static bool rn_link_error(enum ibv_wc_status s)
{
	return s == IBV_WC_RETRY_EXC_ERR || s == IBV_WC_WR_FLUSH_ERR ||
	       s == IBV_WC_RNR_RETRY_EXC_ERR;
}

/* The peer's notice: QPs it declared dead. */
static int rn_check_ctl(struct rn_xcomm *c)
{
	const volatile struct rn_xfer_ctl *in =
		c->role == RN_CONN_SEND ? &((struct rn_send_region *)rn_region(c))->ctl_in
					: &((struct rn_recv_region *)rn_region(c))->ctl_in;
	uint64_t seq = __atomic_load_n(&in->seq, __ATOMIC_ACQUIRE);

	if (seq == c->ctl_seen)
		return 0;
	c->ctl_seen = seq;
	for (int q = 0; q < c->nqps; q++) {
		uint64_t word = in->dead[q / 64];

		if (!(word & (1ull << (q % 64))) || c->xq[q].dead)
			continue;
		if (c->nlive <= 1) {
			RN_WARN("%s: the peer reports QP %u's partner down and no other QP is "
				"left; "
				"the connection is unusable",
				c->p.name, c->xq[q].qp->qp_num);
			return rn_fail(c, -EREMOTEIO);
		}
		int rc = rn_failover(c, q, "the peer reported its end down");

		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The slow path's look at the devices: drain their asynchronous events (logged there) and move
 * traffic off the live QPs of a port that reported IBV_EVENT_PORT_ERR.
 */
static int rn_check_ports(struct rn_xcomm *c)
{
	int rc = 0;

	for (int p = 0; p < c->nports; p++)
		rn_event_poll(c->set->port[p].dev.ctx, c->set->port[p].dev.name);
	for (int q = 0; q < c->nqps && !rc; q++) {
		const struct rn_qp_port *d = &c->set->port[c->xq[q].port].dev;

		if (!c->xq[q].dead && c->nlive > 1 && rn_event_port_down(d->ctx, d->port)) {
			RN_CTR_ADD(c->st[c->xq[q].port].port_err, 1);
			rc = rn_failover(c, q, "its port reported IBV_EVENT_PORT_ERR");
		}
	}
	return rc;
}

/* ---- completions ------------------------------------------------------------------------- */

/* Every byte of the slot's message is there: done; an eager slot is recycled at once. */
static void rn_rslot_complete(struct rn_xcomm *c, struct rn_rslot *rs)
{
	rs->complete = true;
	if (!rs->req) { /* eager: NCCL is done with it already */
		rs->busy = false;
		c->nbusy--;
	}
}

static int rn_recv_done(struct rn_xcomm *c, const struct ibv_wc *wc, int q)
{
	struct rn_recv_region *R = rn_region(c);
	struct rn_imm_fields f;
	struct rn_rslot *rs;
	struct rn_xqp *x = &c->xq[q];

	rn_imm_decode(ntohl(wc->imm_data), &f);
	rs = rn_rs(c, f.slot);
	RN_CTR_ADD(c->st[x->port].rx_parts, 1);
	if (!x->dead && ++x->recv_debt >= RN_XFER_REPOST) {
		int rc = rn_post_recvs(c, q, x->recv_debt);

		if (rc)
			return rc;
		x->recv_debt = 0;
	}
	if (!rs->busy || rs->complete || rn_imm_seq(rs->id, f.small) != f.seq)
		return 0; /* not the slot's current message, or counted already */
	if (f.small) {
		size_t sz = f.size;

		if (rs->n != 1 || sz > rs->size[0])
			return rn_proto(c,
					"message %" PRIu64 ": %zu bytes into %d receive(s) of %zu",
					rs->id, sz, rs->n, rs->size[0]);
		rs->recvd[0] = sz;
		rn_rslot_complete(c, rs);
		return 0;
	}
	if (rs->nparts == 0)
		rs->nparts = f.nparts;
	if (rs->nparts != f.nparts || f.part >= f.nparts)
		return rn_proto(c, "message %" PRIu64 ": part %d of %d, after parts of %d", rs->id,
				f.part, f.nparts, rs->nparts);
	if (rs->mask[f.part / 64] & (1ull << (f.part % 64)))
		return 0;
	rs->mask[f.part / 64] |= 1ull << (f.part % 64);
	if (++rs->got < rs->nparts)
		return 0;
	for (int i = 0; i < rs->n; i++) {
		uint64_t sz = __atomic_load_n(&R->rec[f.slot][i], __ATOMIC_ACQUIRE);

		if (sz > rs->size[i])
			return rn_proto(c,
					"message %" PRIu64 " buffer %d: the peer wrote %" PRIu64
					" bytes into a %zu-byte receive",
					rs->id, i, sz, rs->size[i]);
		rs->recvd[i] = (size_t)sz;
	}
	rn_rslot_complete(c, rs);
	return 0;
}

static int rn_chain_done(struct rn_xcomm *c, int q, int type)
{
	struct rn_xqp *x = &c->xq[q];
	struct rn_chain *ch;

	if (x->tail == x->head)
		return rn_proto(c, "a %s completed on QP %u with nothing outstanding",
				rn_wr_type_name[type], x->qp->qp_num);
	ch = &x->ring[x->tail % RN_XFER_SEND_WR];
	x->tail++;
	x->inflight -= ch->nwr;
	if (ch->type == RN_WR_PING)
		c->pings_out--;
	if (ch->type == RN_WR_DATA) {
		struct rn_sgroup *g = rn_sg(c, ch->slot);

		if (!g->active || g->id != ch->id)
			return rn_proto(c,
					"completion of message %" PRIu64 " finds message %" PRIu64,
					ch->id, g->id);
		rn_group_part_done(c, g);
	} else if (ch->type == RN_WR_CTS && rn_rs(c, ch->slot)->id == ch->id) {
		rn_rs(c, ch->slot)->cts_again = false;
	}
	return 0;
}

static int rn_flush_done(struct rn_xcomm *c, const struct ibv_wc *wc)
{
	uint32_t i = rn_wrid_info(wc->wr_id);
	struct rn_xreq *r;

	if (i >= (uint32_t)c->npool)
		return rn_proto(c, "flush completion for request %u", i);
	r = &c->pool[i];
	if (--r->pending == 0)
		r->done = true;
	c->flush_out--;
	return 0;
}

static int rn_handle_wc(struct rn_xcomm *c, int port, const struct ibv_wc *wc)
{
	int type = rn_wrid_type(wc->wr_id), q = rn_wrid_qp(wc->wr_id);
	char why[96];

	RN_CTR_ADD(c->st[port].cqes, 1);
	if (type == RN_WR_RECV && q < c->nqps)
		c->xq[q].recv_out--; /* reaped: a fence counts them down to 0 */
	if (type == RN_WR_FLUSH) {
		if (wc->status != IBV_WC_SUCCESS) {
			RN_CTR_ADD(c->st[port].errors, 1);
			return rn_fatal_wc(c, port, -1, wc, NULL);
		}
		return rn_flush_done(c, wc);
	}
	if (type < RN_WR_DATA || type > RN_WR_RECV || q >= c->nqps)
		return rn_proto(c, "completion with unknown work request id %#" PRIx64, wc->wr_id);
	if (wc->status != IBV_WC_SUCCESS) {
		if (c->xq[q].dead)
			return 0; /* flushed by its stop; its chains were dealt with */
		RN_CTR_ADD(c->st[port].errors, 1);
		if (rn_check_ports(c) || c->xq[q].dead)
			return c->failed; /* the port's event moved this QP's traffic already */
		if (rn_link_error(wc->status) && c->nlive > 1) {
			snprintf(why, sizeof(why), "%s: %s", rn_wr_type_name[type],
				 rn_verbs()->wc_status_str(wc->status));
			return rn_failover(c, q, why);
		}
		return rn_fatal_wc(c, c->xq[q].port, q, wc,
				   c->nlive > 1 ? NULL
						: ", and no other QP of the connection is left");
	}
	if (type == RN_WR_RECV)
		return rn_recv_done(c, wc, q);
	if (c->xq[q].dead)
		return 0; /* a late success of a dead QP: the report (or the repost) decides */
	return rn_chain_done(c, q, type);
}

/*
 * The peer's out-of-band socket: EOF or an error means its process is gone (the kernel closed
 * its end) or it closed the comm. One non-blocking MSG_PEEK; nothing is ever sent on it.
 */
static void rn_check_peer(struct rn_xcomm *c, uint64_t now)
{
	int fd = c->conn->oob_fd, err;
	ssize_t n;
	char b;

	if (fd < 0 || c->peer_gone_ns)
		return;
	n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	err = n < 0 ? errno : 0;
	if (n > 0 || err == EAGAIN || err == EWOULDBLOCK || err == EINTR)
		return;
	c->peer_gone_ns = now ? now : 1;
	if (c->nbusy || c->starved)
		RN_INFO(RN_SUB_NET,
			"%s: %s comm: the peer's connection %s with %d request(s) pending",
			c->p.name, c->role == RN_CONN_SEND ? "send" : "receive",
			n == 0 ? "closed" : strerror(err), c->nbusy);
}

/* Pending work and a peer gone for RN_XFER_PEER_GRACE_NS without a completion: fail. */
static int rn_peer_lost(struct rn_xcomm *c, uint64_t now)
{
	if (!c->peer_gone_ns || (!c->nbusy && !c->starved) ||
	    now - c->peer_gone_ns < RN_XFER_PEER_GRACE_NS)
		return 0;
	RN_WARN("%s: %s comm: peer closed: its out-of-band socket closed %.0f ms ago with %d "
		"request(s) pending and nothing has arrived since; the peer process exited or "
		"closed its comm, the connection is unusable",
		c->p.name, c->role == RN_CONN_SEND ? "send" : "receive",
		(double)(now - c->peer_gone_ns) / 1e6, c->nbusy);
	return rn_fail(c, -ECONNRESET);
}

/* Every RN_XFER_TICK progress calls: the RN_XFER_CHECK_NS checks when they are due. */
static int rn_periodic(struct rn_xcomm *c, bool any)
{
	uint64_t now;

	if (++c->tick & RN_XFER_TICK)
		return 0;
	now = rn_now_ns();
	if (now < c->next_check_ns)
		return 0;
	c->next_check_ns = now + RN_XFER_CHECK_NS;
	rn_check_ports(c);
	rn_check_peer(c, now);
	return any ? 0 : rn_peer_lost(c, now);
}

static void rn_keepalive(struct rn_xcomm *c)
{
	uint64_t now;

	if (++c->idle & RN_XFER_IDLE_CHECK)
		return;
	if (!c->p.keepalive_ms || c->failed)
		return;
	if (!c->nbusy && !c->starved) {
		c->idle_since_ns = 0;
		return;
	}
	now = rn_now_ns();
	if (!c->idle_since_ns) {
		c->idle_since_ns = now;
		return;
	}
	if (c->pings_out || now - c->idle_since_ns < (uint64_t)c->p.keepalive_ms * 1000000ull)
		return;
	c->idle_since_ns = now;
	for (int q = 0; q < c->nqps; q++)
		if (!c->xq[q].dead)
			rn_post_ctl(c, q, RN_WR_PING);
}

static int rn_progress(struct rn_xcomm *c)
{
	struct ibv_wc wc[RN_XFER_POLL];
	bool any = false;
	int rc;

	for (int p = 0; p < c->nports && !c->failed; p++) {
		int n = rn_verbs()->poll_cq(c->set->port[p].cq, RN_XFER_POLL, wc);

		if (n < 0) {
			RN_WARN("%s: polling the completion queue of %s port %d failed: %s",
				c->p.name, c->set->port[p].dev.name, c->set->port[p].dev.port,
				strerror(-n));
			return rn_fail(c, -EREMOTEIO);
		}
		for (int i = 0; i < n && !c->failed; i++)
			rn_handle_wc(c, p, &wc[i]);
		if (n > 0)
			any = true;
	}
	if (!c->failed)
		rn_check_ctl(c);
	if (!c->failed && c->nheld)
		rn_check_fence(c);
	if (!c->failed && c->nlive < c->nqps)
		rn_post_notice(c);
	if (!c->failed)
		rn_periodic(c, any);
	if (c->failed)
		return c->failed;
	if (any) {
		c->idle = 0;
		c->idle_since_ns = 0;
	} else {
		rn_keepalive(c);
	}
	if (c->role == RN_CONN_SEND && c->post_next < c->head) {
		rc = rn_post_ready(c);
		if (rc < 0)
			return rc;
	}
	return c->failed;
}

/* ---- registration handles ----------------------------------------------------------------- */

/*
 * Every comm's list of live handles and the orphan list share one lock: registration is not
 * on the data path, and a comm's close may race a deregMr of another comm on another thread.
 */
static pthread_mutex_t rn_mh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_mh *rn_orphans;

static void rn_mh_link(struct rn_mh **head, struct rn_mh *mh)
{
	mh->prev = NULL;
	mh->next = *head;
	if (*head)
		(*head)->prev = mh;
	*head = mh;
}

static void rn_mh_unlink(struct rn_mh **head, struct rn_mh *mh)
{
	if (mh->prev)
		mh->prev->next = mh->next;
	else
		*head = mh->next;
	if (mh->next)
		mh->next->prev = mh->prev;
	mh->prev = mh->next = NULL;
}

/* Under rn_mh_lock: release mh's cache references. */
static void rn_mh_release(struct rn_mh *mh)
{
	for (int i = 0; i < mh->nports; i++)
		rn_mr_put(mh->ent[i]);
	mh->nports = 0;
}

/*
 * At close: the comm's handles become orphans. They stay valid (regIsGlobal: a handle serves
 * every comm of its device) until deregMr, or the last finalize, releases them.
 */
static void rn_xcomm_orphan_mhs(struct rn_xcomm *c)
{
	int n = 0;

	pthread_mutex_lock(&rn_mh_lock);
	while (c->mhs) {
		struct rn_mh *mh = c->mhs;

		rn_mh_unlink(&c->mhs, mh);
		mh->owner = NULL;
		rn_mh_link(&rn_orphans, mh);
		n++;
	}
	pthread_mutex_unlock(&rn_mh_lock);
	if (n)
		RN_INFO(RN_SUB_NET,
			"%s: %s comm closed with %d registration(s) not deregistered; they stay "
			"valid on the device until deregMr or finalize",
			c->p.name, c->role == RN_CONN_SEND ? "send" : "receive", n);
}

bool rn_xfer_orphan_dereg(const void *p)
{
	struct rn_mh *mh;

	pthread_mutex_lock(&rn_mh_lock);
	for (mh = rn_orphans; mh && mh != p; mh = mh->next)
		;
	if (mh) {
		rn_mh_unlink(&rn_orphans, mh);
		mh->magic = 0;
		rn_mh_release(mh);
	}
	pthread_mutex_unlock(&rn_mh_lock);
	free(mh);
	return mh != NULL;
}

int rn_xfer_orphans_free(void)
{
	int n = 0;

	pthread_mutex_lock(&rn_mh_lock);
	while (rn_orphans) {
		struct rn_mh *mh = rn_orphans;

		rn_mh_unlink(&rn_orphans, mh);
		mh->magic = 0;
		rn_mh_release(mh);
		free(mh);
		n++;
	}
	pthread_mutex_unlock(&rn_mh_lock);
	return n;
}

/* ---- comms ------------------------------------------------------------------------------- */

bool rn_xfer_valid(const void *p, int role)
{
	const struct rn_xcomm *c = p;

	return c && c->magic == RN_XCOMM_MAGIC && (role < 0 || c->role == role);
}

/* The comm's own memory (its conn is closed separately). NULL is fine. */
static void rn_xcomm_free(struct rn_xcomm *c)
{
	if (!c)
		return;
	for (int q = 0; q < c->nqps; q++)
		free(c->xq[q].ring);
	free(c->pool);
	free(c->sg);
	free(c->rs);
	free(c);
}

/* Counts send comms: the next one's first port in round-robin order (rn_xfer_create). */
static uint32_t rn_xfer_rr_seed;

/* RAILNET_STATS_INTERVAL's view of a live comm (stats.h, struct rn_stats_live). */
static void rn_xfer_live_snap(const void *arg, struct rn_stats_comm *out)
{
	rn_xfer_snapshot(arg, out);
}

int rn_xfer_create(struct rn_conn *conn, const struct rn_xfer_params *p, struct rn_xcomm **out)
{
	size_t need = conn->role == RN_CONN_SEND ? sizeof(struct rn_send_region)
						 : sizeof(struct rn_recv_region);
	struct rn_xcomm *c;
	int rc = -ENOMEM;

	if (!conn->region || conn->region_bytes < need) {
		RN_WARN("%s: connection without a data region", p->name);
		rn_conn_close(conn);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto err;
	c->conn = conn;
	c->set = conn->set;
	c->p = *p;
	c->role = conn->role;
	c->nports = conn->set->nports;
	c->nqps = conn->set->nqps;
	c->nlive = c->nqps;
	c->npool = c->role == RN_CONN_SEND ? RN_XFER_SLOTS * RN_XFER_MAX_RECVS : RN_XFER_RECV_REQS;
	c->pool = calloc((size_t)c->npool, sizeof(*c->pool));
	if (c->role == RN_CONN_SEND)
		c->sg = calloc(RN_XFER_SLOTS, sizeof(*c->sg));
	else
		c->rs = calloc(RN_XFER_SLOTS, sizeof(*c->rs));
	if (!c->pool || (!c->sg && !c->rs))
		goto err;
	for (int i = c->npool - 1; i >= 0; i--) {
		c->pool[i].c = c;
		c->pool[i].next = c->free_reqs;
		c->free_reqs = &c->pool[i];
	}
	for (int q = 0; q < c->nqps; q++) {
		struct rn_xqp *x = &c->xq[q];

		x->qp = conn->set->qp[q].qp;
		x->port = conn->set->qp[q].port;
		x->rport = conn->set->qp[q].remote_port;
		x->ring = calloc(RN_XFER_SEND_WR, sizeof(*x->ring));
		if (!x->ring)
			goto err;
		if (c->role == RN_CONN_RECV) {
			rc = rn_post_recvs(c, q, RN_XFER_RECV_WR);
			if (rc)
				goto err;
		}
	}
	/*
	 * Successive send comms start their round-robin cursors on successive ports: NCCL opens
	 * one send comm per channel and drives the channels in step, so cursors that all started
	 * at QP 0 put every channel's message of a step on the same port.
	 */
	if (c->role == RN_CONN_SEND) {
		uint32_t want = __atomic_fetch_add(&rn_xfer_rr_seed, 1, __ATOMIC_RELAXED) %
				(uint32_t)c->nports;

		for (int q = 0; q < c->nqps; q++)
			if (c->xq[q].port == (int)want) {
				c->rr = (uint32_t)q;
				break;
			}
	}
	c->magic = RN_XCOMM_MAGIC;
	c->live.snap = rn_xfer_live_snap;
	c->live.arg = c;
	rn_stats_live_add(&c->live);
	*out = c;
	return 0;
err:
	if (rc == -ENOMEM)
		RN_WARN("%s: out of memory for a comm", p->name);
	rn_xcomm_free(c);
	rn_conn_close(conn);
	return rc == -ENOMEM ? rc : -EREMOTEIO;
}

void rn_xfer_close(struct rn_xcomm *c)
{
	struct rn_stats_comm snap;

	if (!c)
		return;
	rn_stats_live_del(&c->live);
	rn_xfer_snapshot(c, &snap);
	rn_stats_add(&snap);
	rn_xcomm_orphan_mhs(c);
	c->magic = 0;
	for (int i = 0; i < c->npool; i++)
		c->pool[i].magic = 0;
	rn_conn_close(c->conn);
	rn_xcomm_free(c);
}

/* A comm's counters as they are now (RN_CTR_ADD's other side). */
static void rn_ctr_copy(struct rn_port_counters *out, const struct rn_port_counters *in)
{
	out->tx_bytes = __atomic_load_n(&in->tx_bytes, __ATOMIC_RELAXED);
	out->tx_msgs = __atomic_load_n(&in->tx_msgs, __ATOMIC_RELAXED);
	out->rx_parts = __atomic_load_n(&in->rx_parts, __ATOMIC_RELAXED);
	out->cqes = __atomic_load_n(&in->cqes, __ATOMIC_RELAXED);
	out->errors = __atomic_load_n(&in->errors, __ATOMIC_RELAXED);
	out->failovers = __atomic_load_n(&in->failovers, __ATOMIC_RELAXED);
	out->port_err = __atomic_load_n(&in->port_err, __ATOMIC_RELAXED);
	out->resent = __atomic_load_n(&in->resent, __ATOMIC_RELAXED);
	out->resend_skipped = __atomic_load_n(&in->resend_skipped, __ATOMIC_RELAXED);
}

void rn_xfer_snapshot(const struct rn_xcomm *c, struct rn_stats_comm *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", c->p.name);
	out->send = c->role == RN_CONN_SEND;
	out->nports = c->nports;
	out->nqps = c->nqps;
	for (int p = 0; p < c->nports; p++) {
		snprintf(out->port[p].dev, sizeof(out->port[p].dev), "%s",
			 c->set->port[p].dev.name);
		out->port[p].port = c->set->port[p].dev.port;
		out->port[p].rail = c->set->port[p].dev.rail;
		rn_ctr_copy(&out->port[p].c, &c->st[p]);
	}
}

const struct rn_xfer_params *rn_xfer_params_of(const struct rn_xcomm *c)
{
	return &c->p;
}

/* ---- registration ------------------------------------------------------------------------ */

bool rn_xfer_mh_valid(const void *p)
{
	const struct rn_mh *mh = p;

	return mh && mh->magic == RN_MH_MAGIC;
}

int rn_xfer_reg(struct rn_xcomm *c, void *data, size_t size, int type, int fd, uint64_t offset,
		struct rn_mh **out)
{
	struct rn_mh *mh = calloc(1, sizeof(*mh));
	int rc = 0, p;

	if (!mh) {
		RN_WARN("regMr: out of memory");
		return -ENOMEM;
	}
	mh->type = type;
	mh->addr = (uintptr_t)data;
	mh->size = size;
	for (p = 0; p < c->nports; p++) {
		const struct rn_qp_port *d = &c->set->port[p].dev;

		rc = rn_mr_get(d->ctx, d->name, data, size, fd, offset, &mh->ent[p], &mh->key[p]);
		if (rc)
			break;
		mh->ctx[p] = d->ctx;
		mh->nports = p + 1;
	}
	if (rc) {
		for (int i = 0; i < mh->nports; i++)
			rn_mr_put(mh->ent[i]);
		free(mh);
		return rc;
	}
	mh->magic = RN_MH_MAGIC;
	mh->owner = c;
	pthread_mutex_lock(&rn_mh_lock);
	rn_mh_link(&c->mhs, mh);
	pthread_mutex_unlock(&rn_mh_lock);
	*out = mh;
	return 0;
}

int rn_xfer_dereg(struct rn_xcomm *c, struct rn_mh *mh)
{
	(void)c; /* a handle may be deregistered through any comm of its device, as NCCL IB's */
	pthread_mutex_lock(&rn_mh_lock);
	mh->magic = 0;
	rn_mh_unlink(mh->owner ? &mh->owner->mhs : &rn_orphans, mh);
	rn_mh_release(mh);
	pthread_mutex_unlock(&rn_mh_lock);
	free(mh);
	return 0;
}

/* mh was registered for c's devices and covers [data, data + size). */
static int rn_mh_check(const struct rn_xcomm *c, const char *fn, const struct rn_mh *mh,
		       const void *data, size_t size)
{
	uintptr_t a = (uintptr_t)data;

	if (!size)
		return 0;
	if (!mh || mh->magic != RN_MH_MAGIC) {
		RN_WARN("%s: mhandle %p is not a live railnet registration", fn, (const void *)mh);
		return -EBADF;
	}
	if (mh->nports != c->nports) {
		RN_WARN("%s: mhandle %p was registered on %d device(s), this comm uses %d", fn,
			(const void *)mh, mh->nports, c->nports);
		return -EINVAL;
	}
	for (int p = 0; p < c->nports; p++)
		if (mh->ctx[p] != c->set->port[p].dev.ctx) {
			RN_WARN("%s: mhandle %p was registered on other devices than this comm's "
				"(%s)",
				fn, (const void *)mh, c->p.name);
			return -EINVAL;
		}
	if (a < mh->addr || a - mh->addr > mh->size || size > mh->size - (a - mh->addr)) {
		RN_WARN("%s: buffer %p + %zu lies outside its registration %p + %zu", fn, data,
			size, (void *)mh->addr, mh->size);
		return -EINVAL;
	}
	return 0;
}

/* ---- the calls --------------------------------------------------------------------------- */

int rn_xfer_isend(struct rn_xcomm *c, void *data, size_t size, int tag, struct rn_mh *mh,
		  struct rn_xreq **req)
{
	struct rn_send_region *R = rn_region(c);
	int slot = (int)(c->head % RN_XFER_SLOTS), i, rc;
	struct rn_sgroup *g = rn_sg(c, (unsigned)slot);
	uint64_t want = c->head + 1;
	struct rn_xreq *r;
	size_t sz;

	*req = NULL;
	if (c->failed)
		return c->failed;
	rc = rn_mh_check(c, "isend", mh, data, size);
	if (rc)
		return rc;
	if (!g->active || g->id != c->head) {
		const volatile struct rn_cts *e0 = &R->fifo[slot][0];
		uint32_t nreqs;

		if (g->active || __atomic_load_n(&e0->idx, __ATOMIC_ACQUIRE) != want) {
			/*
			 * Not now: the slot's previous message is still being sent, or the
			 * receiver has not posted; meanwhile, completions (and failovers). The
			 * round that polling runs may land the clear-to-send or the slot's last
			 * completion: look once more rather than cost the caller a pass of its
			 * progress loop (H200, NCCL 2.28: 64 KiB all-reduce 6% faster, 8 B no
			 * change; docs/performance.md).
			 */
			c->starved = true;
			rc = rn_progress(c);
			if (rc || g->active || __atomic_load_n(&e0->idx, __ATOMIC_ACQUIRE) != want)
				return rc;
		}
		nreqs = e0->nreqs;
		if (nreqs < 1 || nreqs > RN_XFER_MAX_RECVS)
			return rn_proto(c,
					"clear-to-send for message %" PRIu64 " announces %u "
					"receives; railnet allows 1..%d",
					c->head, nreqs, RN_XFER_MAX_RECVS);
		for (i = 1; i < (int)nreqs; i++)
			if (__atomic_load_n(&R->fifo[slot][i].idx, __ATOMIC_ACQUIRE) != want) {
				c->starved = true;
				return 0;
			}
		memcpy(g->cts, (const void *)R->fifo[slot], nreqs * sizeof(struct rn_cts));
		memset(g->req, 0, sizeof(g->req));
		g->id = c->head;
		g->nreqs = (int)nreqs;
		g->arrived = 0;
		g->posted = false;
		g->active = true;
		c->nbusy++;
	}
	c->starved = false;
	/*
	 * Matching is NCCL IB's: the first free buffer of the receive at the FIFO's head whose
	 * tag is this send's. None: "not now" (NULL request); the caller retries, typically after
	 * posting the sends of the other tags, and the connection stays healthy.
	 */
	for (i = 0; i < g->nreqs; i++)
		if (!g->req[i] && g->cts[i].tag == tag)
			break;
	if (i == g->nreqs)
		return rn_progress(c);
	r = rn_req_get(c, RN_REQ_SEND);
	if (!r)
		return 0;
	sz = size > g->cts[i].size ? (size_t)g->cts[i].size : size;
	r->slot = slot;
	r->size = sz;
	g->req[i] = r;
	g->data[i] = (uintptr_t)data;
	g->size[i] = sz;
	g->mh[i] = mh;
	((struct rn_send_region *)R)->rec_out[slot][i] = sz;
	if (++g->arrived == g->nreqs) {
		c->head++;
		rc = rn_post_ready(c);
		if (rc < 0)
			return rc;
	}
	*req = r;
	return 0;
}

int rn_xfer_irecv(struct rn_xcomm *c, int n, void **data, const size_t *sizes, const int *tags,
		  struct rn_mh **mh, bool eager, struct rn_xreq **req)
{
	struct rn_recv_region *R = rn_region(c);
	int slot = (int)(c->head % RN_XFER_SLOTS), rc;
	struct rn_rslot *rs = rn_rs(c, (unsigned)slot);
	struct rn_xreq *r;

	*req = NULL;
	if (c->failed)
		return c->failed;
	for (int i = 0; i < n; i++) {
		rc = rn_mh_check(c, "irecv", mh[i], data[i], sizes[i]);
		if (rc)
			return rc;
	}
	if (rs->busy || rs->cts_again) /* the slot's previous receive is not done yet */
		return rn_progress(c);
	r = rn_req_get(c, RN_REQ_RECV);
	if (!r)
		return 0;
	for (int i = 0; i < n; i++) {
		struct rn_cts *e = &R->cts_out[slot][i];

		e->addr = (uintptr_t)data[i];
		e->size = sizes[i];
		for (int p = 0; p < RN_QP_MAX_PORTS; p++)
			e->rkey[p] = p < c->nports && sizes[i] ? mh[i]->key[p].rkey : 0;
		e->nreqs = (uint32_t)n;
		e->tag = tags[i];
		e->idx = c->head + 1;
		rs->size[i] = sizes[i];
		R->rec[slot][i] = 0;
	}
	rs->busy = true;
	rs->complete = false;
	rs->id = c->head;
	rs->n = n;
	rs->nparts = 0;
	rs->got = 0;
	memset(rs->mask, 0, sizeof(rs->mask));
	rs->req = eager ? NULL : r;
	r->slot = slot;
	r->eager = eager;
	r->size = sizes[0];
	c->nbusy++;
	rc = rn_post_cts(c, slot, c->head, n, false);
	if (rc) {
		rn_req_put(c, r);
		return rc;
	}
	c->head++;
	*req = r;
	return 0;
}

int rn_xfer_iflush(struct rn_xcomm *c, int n, void **data, const int *sizes, struct rn_mh **mh,
		   struct rn_xreq **req)
{
	int last = -1, rc;
	struct rn_xreq *r;

	*req = NULL;
	if (c->failed)
		return c->failed;
	if (!c->set->port[0].flush || c->p.flush == RN_FLUSH_OFF)
		return 0;
	for (int i = 0; i < n; i++)
		if (sizes[i] > 0)
			last = i;
	if (last < 0)
		return 0;
	rc = rn_mh_check(c, "iflush", mh[last], data[last], 1);
	if (rc)
		return rc;
	if (c->p.flush == RN_FLUSH_AUTO && mh[last]->type != RN_PTR_CUDA)
		return 0;
	/*
	 * A NULL request would tell NCCL that nothing needs flushing, so a flush that is owed is
	 * never deferred: with the reads in flight at their cap, wait for some (they complete in
	 * microseconds; the bound is the comm's fault guard), and with no request left (they come
	 * back only through test) fail the call, as NCCL IB does.
	 */
	if (c->flush_out + c->nports > RN_XFER_MAX_FLUSH * c->nports / 2) {
		uint64_t until = rn_now_ns() + RN_XFER_FLUSH_WAIT_NS;

		while (c->flush_out + c->nports > RN_XFER_MAX_FLUSH * c->nports / 2) {
			rc = rn_progress(c);
			if (rc)
				return rc;
			if (rn_now_ns() > until) {
				RN_WARN("%s: receive comm: %d flush reads outstanding for %.0f s; "
					"the "
					"connection is unusable",
					c->p.name, c->flush_out, RN_XFER_FLUSH_WAIT_NS / 1e9);
				return rn_fail(c, -EREMOTEIO);
			}
		}
	}
	if (!c->free_reqs) {
		RN_WARN("%s: iflush: all %d requests of the receive comm are in use (test returns "
			"them): %d receives and flushes not tested yet",
			c->p.name, c->npool, c->npool);
		return -ENOSPC;
	}
	r = rn_req_get(c, RN_REQ_FLUSH);
	r->pending = c->nports;
	for (int p = 0; p < c->nports; p++) {
		struct rn_recv_region *R = rn_region(c);
		struct ibv_sge sge = { .addr = (uintptr_t)R->sink,
				       .length = 1,
				       .lkey = rn_lkey(c, p) };
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = rn_wrid(RN_WR_FLUSH, p, (uint32_t)(r - c->pool));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)data[last];
		wr.wr.rdma.rkey = mh[last]->key[p].rkey;
		rc = rn_verbs()->post_send(c->set->port[p].flush, &wr, &bad);
		if (rc) {
			RN_WARN("%s: posting the flush read on %s port %d failed: %s", c->p.name,
				c->set->port[p].dev.name, c->set->port[p].dev.port, strerror(-rc));
			return rn_fail(c, -EREMOTEIO);
		}
		c->flush_out++;
	}
	*req = r;
	return 0;
}

int rn_xfer_test(struct rn_xreq *r, int *done, int *sizes)
{
	struct rn_xcomm *c = r->c;
	int rc;

	*done = 0;
	if (c->failed)
		return c->failed;
	if (r->type == RN_REQ_RECV && r->eager) {
		if (sizes)
			sizes[0] = r->size > INT32_MAX ? INT32_MAX : (int)r->size;
		*done = 1;
		rn_req_put(c, r);
		return 0;
	}
	if (r->type == RN_REQ_RECV ? !rn_rs(c, (unsigned)r->slot)->complete : !r->done) {
		rc = rn_progress(c);
		if (rc)
			return rc;
	}
	if (r->type == RN_REQ_RECV) {
		struct rn_rslot *rs = rn_rs(c, (unsigned)r->slot);

		if (!rs->complete)
			return 0;
		if (sizes)
			for (int i = 0; i < rs->n; i++)
				sizes[i] = rs->recvd[i] > INT32_MAX ? INT32_MAX : (int)rs->recvd[i];
		rs->busy = false;
		rs->req = NULL;
		c->nbusy--;
	} else {
		if (!r->done)
			return 0;
		if (sizes && r->type == RN_REQ_SEND)
			sizes[0] = r->size > INT32_MAX ? INT32_MAX : (int)r->size;
	}
	*done = 1;
	rn_req_put(c, r);
	return 0;
}
