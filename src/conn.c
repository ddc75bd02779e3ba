// SPDX-License-Identifier: Apache-2.0
/*
 * Connection establishment (conn.h): drives the OOB handshake of oob.c and, from its
 * peer_hello hook, the QP layer of qp.c, translating struct rn_qp_info to and from the wire's
 * HELLO. It owns the in-progress state of a connector (behind NCCL's handle buffer) and of a
 * listener's acceptor (one handshake at a time, any number of connections). It must not
 * block, post work requests or touch the data path, and it does not log what the layers below
 * already logged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <unistd.h>

#include "railnet/conn.h"
#include "railnet/log.h"
#include "railnet/verbs.h"
#include "railnet/wire.h"

/* A side's region: zeroed, page aligned, registered on every port of its set. */
struct rn_conn_region {
	void *addr;
	size_t bytes;
	struct ibv_mr *mr[RN_QP_MAX_PORTS];
	int nmr;
};

/* The region keeps a reference on each PD it is registered in: it is freed after the QPs. */

static void rn_conn_region_free(struct rn_conn_region *r)
{
	for (int i = 0; i < r->nmr; i++) {
		struct ibv_pd *pd = r->mr[i]->pd;
		int rc = rn_verbs()->dereg_mr(r->mr[i]);

		if (rc)
			RN_WARN("connection: deregistering its region failed: %s", strerror(-rc));
		rn_pd_release(pd);
	}
	if (r->addr)
		munmap(r->addr, r->bytes);
	memset(r, 0, sizeof(*r));
}

static int rn_conn_region_make(const struct rn_qp_set *set, size_t bytes, struct rn_conn_region *r)
{
	const int access =
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!bytes)
		return 0;
	if (page <= 0)
		page = 4096;
	len = (bytes + (size_t)page - 1) & ~((size_t)page - 1);
	/*
	 * Pages of its own (zeroed): registered memory shares no page with the heap, and closing
	 * the connection gives the pages back to the system at once, which the heap would keep
	 * (docs/performance.md, "Scale": RSS after closing thousands of comms).
	 */
	r->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->addr == MAP_FAILED) {
		r->addr = NULL;
		RN_WARN("connection: out of memory for its %zu-byte region", len);
		return -ENOMEM;
	}
	r->bytes = len;
	for (int p = 0; p < set->nports; p++) {
		struct ibv_pd *pd;

		rc = rn_pd_acquire(set->port[p].dev.ctx, set->port[p].dev.name, &pd);
		if (rc) {
			rn_conn_region_free(r);
			return rc;
		}
		rc = rn_verbs()->reg_mr(pd, r->addr, len, access, &r->mr[p]);
		if (rc) {
			rn_pd_release(pd);
			RN_WARN("connection: %s port %d: registering its %zu-byte region failed: "
				"%s",
				set->port[p].dev.name, set->port[p].dev.port, len, strerror(-rc));
			rn_conn_region_free(r);
			return rc;
		}
		r->nmr = p + 1;
	}
	return 0;
}

/* Announce r in a HELLO (after rn_conn_info_to_hello). */
static void rn_conn_region_announce(const struct rn_conn_region *r, struct rn_hello *h)
{
	h->fifo_addr = (uint64_t)(uintptr_t)r->addr;
	for (int p = 0; p < h->nports && p < r->nmr; p++)
		h->ports[p].fifo_rkey = r->mr[p]->rkey;
}

/* The peer's region from its HELLO. */
static void rn_conn_region_learn(const struct rn_hello *h, uint64_t *addr, uint32_t *rkey)
{
	*addr = h->fifo_addr;
	for (int p = 0; p < h->nports && p < RN_QP_MAX_PORTS; p++)
		rkey[p] = h->ports[p].fifo_rkey;
}

/*
 * The connector's state slot in NCCL's handle buffer: bytes 64..127 are not part of the wire
 * format (the listener zeroes them, NCCL hands the connector the same buffer on every call).
 */
#define RN_CONN_SLOT_OFF RN_WIRE_HANDLE_SIZE
#define RN_CONN_SLOT_MAGIC 0x5254534e4e4f4352ull /* "RCONNSTR" */

_Static_assert(RN_CONN_SLOT_OFF + 16 <= RN_WIRE_HANDLE_BUF, "slot fits NCCL's handle buffer");

struct rn_conn_pending {
	struct rn_oob_conn *oob;
	struct rn_qp_set *set;
	struct rn_conn_region region;
	struct rn_qp_info remote; /* the acceptor's info, once its HELLO arrived */
	uint64_t remote_fifo;
	uint32_t remote_rkey[RN_QP_MAX_PORTS];
};

/*
 * A listener accepts any number of connections, one handshake at a time, as NCCL's IB
 * transport does: IDLE -> RUNNING -> (conn returned) -> IDLE -> RUNNING ... A failed handshake
 * returns its error once and leaves the listener IDLE for the next connector.
 */
enum rn_conn_accept_state {
	RN_CONN_ACC_IDLE,    /* no handshake in progress */
	RN_CONN_ACC_RUNNING, /* oob acceptor in progress (set created in the hook) */
};

struct rn_conn_listener {
	struct rn_oob_listener *oob_l;
	struct rn_qp_port ports[RN_QP_MAX_PORTS];
	int nports;
	long timeout_ms;
	struct rn_qp_attr attr;
	int sockbuf;
	size_t region_bytes;
	bool flush;
	int max_send_wr, max_recv_wr;
	int max_inline;
	enum rn_conn_accept_state state;
	struct rn_oob_conn *oob;
	struct rn_qp_set *set;
	struct rn_conn_region region;
	struct rn_qp_info remote;
	uint64_t remote_fifo;
	uint32_t remote_rkey[RN_QP_MAX_PORTS];
};

/* ---- rn_qp_info <-> rn_hello ---------------------------------------------------------- */

void rn_conn_info_to_hello(const struct rn_qp_info *info, struct rn_hello *h)
{
	uint32_t i;

	h->fifo_addr = 0; /* the data path's FIFO, not registered yet */
	h->flags = 0;
	h->nports = (int)info->nports;
	h->nqps = (int)info->nqps;
	for (i = 0; i < info->nports; i++) {
		struct rn_hello_port *w = &h->ports[i];
		const struct rn_qp_port_info *p = &info->port[i];

		memcpy(w->gid, p->gid, sizeof(w->gid));
		w->lid = p->lid;
		w->port_num = p->port_num;
		w->link_layer = p->link_layer;
		w->mtu = (uint8_t)p->mtu;
		w->rail = p->rail;
		w->fifo_rkey = 0; /* filled with the FIFO registration by the data path */
	}
	for (i = 0; i < info->nqps; i++) {
		h->qps[i].qpn = info->qp[i].qpn;
		h->qps[i].psn = info->qp[i].psn;
		h->qps[i].port_index = (uint16_t)info->qp[i].port;
		h->qps[i].ece = 0;
	}
}

int rn_conn_info_from_hello(const struct rn_hello *h, struct rn_qp_info *info, char *why,
			    size_t why_len)
{
	int i;

	if (h->nports < 1 || h->nports > RN_QP_MAX_PORTS) {
		snprintf(why, why_len, "peer announces %d ports; railnet connects 1..%d", h->nports,
			 RN_QP_MAX_PORTS);
		return -EPROTO;
	}
	if (h->nqps < 1 || h->nqps > RN_QP_MAX_QPS) {
		snprintf(why, why_len, "peer announces %d QPs; railnet connects 1..%d", h->nqps,
			 RN_QP_MAX_QPS);
		return -EPROTO;
	}
	memset(info, 0, sizeof(*info));
	info->nports = (uint32_t)h->nports;
	info->nqps = (uint32_t)h->nqps;
	for (i = 0; i < h->nports; i++) {
		memcpy(info->port[i].gid, h->ports[i].gid, sizeof(info->port[i].gid));
		info->port[i].gid_index = 0; /* the peer's own business; not on the wire */
		info->port[i].mtu = h->ports[i].mtu;
		info->port[i].lid = h->ports[i].lid;
		info->port[i].port_num = h->ports[i].port_num;
		info->port[i].link_layer = h->ports[i].link_layer;
		info->port[i].rail = h->ports[i].rail;
	}
	for (i = 0; i < h->nqps; i++) {
		info->qp[i].qpn = h->qps[i].qpn;
		info->qp[i].psn = h->qps[i].psn;
		info->qp[i].port = h->qps[i].port_index;
	}
	return 0;
}

/*
 * A verbs call failed while making the connection: that is the system's failure, not a bad
 * argument of NCCL's (-EINVAL would reach NCCL as ncclInvalidArgument).
 */
static int rn_conn_sys_err(int rc)
{
	return rc == -EINVAL || rc == -ERANGE ? -EIO : rc;
}

static int rn_conn_params_ok(const struct rn_qp_port *ports, int nports,
			     const struct rn_conn_params *params)
{
	return ports && nports >= 1 && nports <= RN_QP_MAX_PORTS && params &&
	       params->timeout_ms > 0 && params->qps_per_port >= 1;
}

static struct rn_conn *rn_conn_make(int role, struct rn_qp_set *set, struct rn_conn_region *region,
				    const struct rn_qp_info *remote, uint64_t remote_fifo,
				    const uint32_t *remote_rkey, struct rn_oob_conn *oob)
{
	struct rn_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		RN_WARN("connection: out of memory for the %s comm",
			role == RN_CONN_SEND ? "send" : "receive");
		return NULL;
	}
	c->role = role;
	c->set = set;
	c->remote = *remote;
	c->region = region->addr;
	c->region_bytes = region->bytes;
	memcpy(c->region_mr, region->mr, sizeof(c->region_mr));
	memset(region, 0, sizeof(*region)); /* now the conn's */
	c->remote_region = remote_fifo;
	memcpy(c->remote_rkey, remote_rkey, sizeof(c->remote_rkey));
	c->oob_fd = rn_oob_conn_take_fd(oob);
	return c;
}

void rn_conn_close(struct rn_conn *c)
{
	struct rn_conn_region r;

	if (!c)
		return;
	/* QPs first: nothing may still write into the region when it is deregistered */
	rn_qp_set_destroy(c->set);
	r.addr = c->region;
	r.bytes = c->region_bytes;
	memcpy(r.mr, c->region_mr, sizeof(r.mr));
	r.nmr = 0;
	while (r.nmr < RN_QP_MAX_PORTS && r.mr[r.nmr])
		r.nmr++;
	rn_conn_region_free(&r);
	if (c->oob_fd >= 0)
		close(c->oob_fd);
	free(c);
}

/* ---- connector ------------------------------------------------------------------------- */

static struct rn_conn_pending *rn_conn_slot_get(const void *handle)
{
	const unsigned char *b = handle;
	struct rn_conn_pending *p;
	uint64_t magic;

	memcpy(&magic, b + RN_CONN_SLOT_OFF, sizeof(magic));
	if (magic != RN_CONN_SLOT_MAGIC)
		return NULL;
	memcpy(&p, b + RN_CONN_SLOT_OFF + 8, sizeof(p));
	return p;
}

static void rn_conn_slot_set(void *handle, struct rn_conn_pending *p)
{
	unsigned char *b = handle;
	uint64_t magic = p ? RN_CONN_SLOT_MAGIC : 0;

	memcpy(b + RN_CONN_SLOT_OFF, &magic, sizeof(magic));
	memset(b + RN_CONN_SLOT_OFF + 8, 0, 8);
	if (p)
		memcpy(b + RN_CONN_SLOT_OFF + 8, &p, sizeof(p));
}

static void rn_conn_pending_free(struct rn_conn_pending *p)
{
	rn_oob_conn_destroy(p->oob);
	rn_qp_set_destroy(p->set);
	rn_conn_region_free(&p->region);
	free(p);
}

/* The acceptor's HELLO: connect our QPs to it (RTR, RTS) before READY goes. */
static int rn_conn_connector_hook(void *arg, const struct rn_hello *peer, struct rn_hello *local,
				  char *why, size_t why_len)
{
	struct rn_conn_pending *p = arg;
	int rc;

	(void)local;
	rc = rn_conn_info_from_hello(peer, &p->remote, why, why_len);
	if (rc)
		return rc;
	rc = rn_qp_set_connect(p->set, &p->remote);
	if (rc) {
		snprintf(why, why_len, "connecting the send QPs to the acceptor's failed (%s)",
			 strerror(-rc));
		return rc == -EPROTO ? rc : rn_conn_sys_err(rc);
	}
	rn_conn_region_learn(peer, &p->remote_fifo, p->remote_rkey);
	return 0;
}

static int rn_conn_connect_start(void *handle, const struct rn_qp_port *ports, int nports,
				 const struct rn_conn_params *params, struct rn_conn_pending **out)
{
	struct rn_qp_params qp = { .role = RN_QP_ROLE_SEND,
				   .attr = params->attr,
				   .max_send_wr = params->max_send_wr,
				   .max_inline = params->max_inline };
	struct rn_oob_params op = { .timeout_ms = params->timeout_ms,
				    .peer_hello = rn_conn_connector_hook,
				    .sockbuf = params->sockbuf };
	struct rn_conn_pending *p;
	struct rn_qp_info *info;
	struct rn_hello *hello;
	int rc;
	struct rn_handle_info hi;
	char why[256];
	int remote = nports;

	/*
	 * QPs: max(our ports, the listener's) x per port, as NCCL counts them; the listener
	 * announced its port count in the handle (a bad handle is reported by the OOB layer).
	 */
	if (rn_wire_handle_decode(handle, RN_WIRE_HANDLE_SIZE, &hi, why, sizeof(why)) == 0 &&
	    hi.nports > 0)
		remote = hi.nports > RN_QP_MAX_PORTS ? RN_QP_MAX_PORTS : hi.nports;
	rc = rn_qp_count(nports, remote, params->qps_per_port, &qp.nqps);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	info = calloc(1, sizeof(*info));
	hello = calloc(1, sizeof(*hello));
	if (!p || !info || !hello) {
		RN_WARN("connect: out of memory for the handshake state");
		rc = -ENOMEM;
		goto err_free;
	}
	rc = rn_qp_set_create(ports, nports, &qp, &p->set);
	if (rc)
		goto err_free;
	rc = rn_conn_region_make(p->set, params->region_bytes, &p->region);
	if (rc)
		goto err_destroy_set;
	rn_qp_set_info(p->set, info);
	rn_conn_info_to_hello(info, hello);
	rn_conn_region_announce(&p->region, hello);
	op.arg = p;
	rc = rn_oob_connect_create(handle, RN_WIRE_HANDLE_SIZE, hello, &op, &p->oob);
	if (rc)
		goto err_destroy_set;
	free(hello);
	free(info);
	*out = p;
	return 0;

err_destroy_set:
	rn_conn_region_free(&p->region);
	rn_qp_set_destroy(p->set);
err_free:
	free(hello);
	free(info);
	free(p);
	return rc;
}

int rn_conn_connect_step(void *handle, const struct rn_qp_port *ports, int nports,
			 const struct rn_conn_params *params, struct rn_conn **conn)
{
	struct rn_conn_pending *p;
	struct rn_conn *c;
	int rc;

	if (!handle || !conn)
		return -EINVAL;
	p = rn_conn_slot_get(handle);
	if (!p) {
		if (!rn_conn_params_ok(ports, nports, params))
			return -EINVAL;
		rc = rn_conn_connect_start(handle, ports, nports, params, &p);
		if (rc)
			return rc;
		rn_conn_slot_set(handle, p);
	}
	rc = rn_oob_conn_progress(p->oob);
	if (rc == -EAGAIN) {
		*conn = NULL;
		return 0;
	}
	if (rc)
		goto err_free;
	c = rn_conn_make(RN_CONN_SEND, p->set, &p->region, &p->remote, p->remote_fifo,
			 p->remote_rkey, p->oob);
	if (!c) {
		rc = -ENOMEM;
		goto err_free;
	}
	p->set = NULL; /* now the conn's */
	rn_conn_pending_free(p);
	rn_conn_slot_set(handle, NULL);
	*conn = c;
	return 0;

err_free:
	rn_conn_pending_free(p);
	rn_conn_slot_set(handle, NULL);
	return rc;
}

bool rn_conn_connect_pending(const void *handle)
{
	return handle && rn_conn_slot_get(handle);
}

void rn_conn_connect_abort(void *handle)
{
	struct rn_conn_pending *p;

	if (!handle)
		return;
	p = rn_conn_slot_get(handle);
	if (!p)
		return;
	rn_conn_pending_free(p);
	rn_conn_slot_set(handle, NULL);
}

/* ---- listener and acceptor -------------------------------------------------------------- */

int rn_conn_listen(const struct rn_qp_port *ports, int nports, const struct rn_conn_params *params,
		   void *handle, struct rn_conn_listener **out)
{
	struct rn_conn_listener *l;
	int rc;

	if (!handle || !out || !rn_conn_params_ok(ports, nports, params) || !params->iface)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l) {
		RN_WARN("listen: out of memory for the listener");
		return -ENOMEM;
	}
	memcpy(l->ports, ports, (size_t)nports * sizeof(ports[0]));
	l->nports = nports;
	l->timeout_ms = params->timeout_ms;
	l->attr = params->attr;
	l->sockbuf = params->sockbuf;
	l->region_bytes = params->region_bytes;
	l->flush = params->flush;
	l->max_send_wr = params->max_send_wr;
	l->max_recv_wr = params->max_recv_wr;
	l->max_inline = params->max_inline;
	rc = rn_oob_listen_ports(params->iface, nports, handle, &l->oob_l);
	if (rc) {
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

int rn_conn_rail_map(const struct rn_qp_port *ports, int nports, const struct rn_qp_info *remote,
		     int *qp_port, char *why, size_t why_len)
{
	int next[RN_QP_MAX_PORTS] = { 0 };
	bool identity = true;

	why[0] = '\0';
	for (int p = 0; p < nports; p++)
		if (!ports[p].rail)
			return 0;
	for (uint32_t r = 0; r < remote->nports; r++)
		if (!remote->port[r].rail)
			return 0;
	for (uint32_t i = 0; i < remote->nqps; i++) {
		uint32_t rail = remote->port[remote->qp[i].port].rail;
		int cand[RN_QP_MAX_PORTS], n = 0;

		for (int p = 0; p < nports; p++)
			if (ports[p].rail == rail)
				cand[n++] = p;
		if (!n) {
			snprintf(
				why, why_len,
				"the connector's port %u (port number %u) is on rail 0x%08x, which "
				"none of this device's ports is on: ports paired by index, expect "
				"QP "
				"timeouts if the rails do not reach each other",
				remote->qp[i].port, remote->port[remote->qp[i].port].port_num,
				rail);
			return 0;
		}
		qp_port[i] = cand[next[cand[0]]++ % n];
		identity &= qp_port[i] == (int)(i % (uint32_t)nports);
	}
	return identity ? 0 : 1;
}

/*
 * The connector's HELLO: create the receive QPs (as many as it announced, each on our port of
 * the rail of the connector's QP's port, else striped over our ports), connect them to its
 * QPs and describe them in our reply.
 */
static int rn_conn_acceptor_hook(void *arg, const struct rn_hello *peer, struct rn_hello *local,
				 char *why, size_t why_len)
{
	struct rn_conn_listener *l = arg;
	struct rn_qp_params qp = { .role = RN_QP_ROLE_RECV,
				   .attr = l->attr,
				   .flush = l->flush,
				   .max_send_wr = l->max_send_wr,
				   .max_recv_wr = l->max_recv_wr,
				   .max_inline = l->max_inline };
	struct rn_qp_info *info;
	int qp_port[RN_QP_MAX_QPS];
	char rwhy[256];
	int rc;

	rc = rn_conn_info_from_hello(peer, &l->remote, why, why_len);
	if (rc)
		return rc;
	info = calloc(1, sizeof(*info));
	if (!info) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	qp.nqps = (int)l->remote.nqps;
	rc = rn_conn_rail_map(l->ports, l->nports, &l->remote, qp_port, rwhy, sizeof(rwhy));
	if (rc > 0) {
		qp.qp_port = qp_port;
		RN_INFO(RN_SUB_NET,
			"accept: %s port %d: QPs paired with the connector's by rail (the two "
			"sides "
			"list their ports in different orders)",
			l->ports[0].name, l->ports[0].port);
	} else if (rwhy[0]) {
		RN_WARN("accept: %s", rwhy);
	}
	rc = rn_qp_set_create(l->ports, l->nports, &qp, &l->set);
	if (rc) {
		snprintf(why, why_len, "creating %d receive QPs failed (%s)", qp.nqps,
			 strerror(-rc));
		rc = rn_conn_sys_err(rc);
		goto err_free;
	}
	rc = rn_qp_set_connect(l->set, &l->remote);
	if (rc) {
		snprintf(why, why_len, "connecting the receive QPs to the connector's failed (%s)",
			 strerror(-rc));
		rc = rc == -EPROTO ? rc : rn_conn_sys_err(rc);
		goto err_destroy_set;
	}
	rc = rn_conn_region_make(l->set, l->region_bytes, &l->region);
	if (rc) {
		snprintf(why, why_len, "registering the receiver's region failed (%s)",
			 strerror(-rc));
		rc = rn_conn_sys_err(rc);
		goto err_destroy_set;
	}
	rn_qp_set_info(l->set, info);
	rn_conn_info_to_hello(info, local);
	rn_conn_region_announce(&l->region, local);
	rn_conn_region_learn(peer, &l->remote_fifo, l->remote_rkey);
	free(info);
	return 0;

err_destroy_set:
	rn_qp_set_destroy(l->set);
	l->set = NULL;
err_free:
	free(info);
	return rc;
}

static void rn_conn_accept_unwind(struct rn_conn_listener *l)
{
	rn_oob_conn_destroy(l->oob);
	l->oob = NULL;
	rn_qp_set_destroy(l->set);
	l->set = NULL;
	rn_conn_region_free(&l->region);
}

static int rn_conn_accept_start(struct rn_conn_listener *l)
{
	struct rn_oob_params op = { .timeout_ms = l->timeout_ms,
				    .peer_hello = rn_conn_acceptor_hook,
				    .arg = l,
				    .sockbuf = l->sockbuf };
	struct rn_hello *local = calloc(1, sizeof(*local));
	int rc;

	if (!local) {
		RN_WARN("accept: out of memory for the handshake state");
		return -ENOMEM;
	}
	/* Empty until the hook fills it from the QPs made for the peer. */
	rc = rn_oob_accept_create(l->oob_l, local, &op, &l->oob);
	free(local);
	return rc;
}

int rn_conn_accept_step(struct rn_conn_listener *l, struct rn_conn **conn)
{
	struct rn_conn *c;
	int rc;

	if (!l || !conn)
		return -EINVAL;
	if (l->state == RN_CONN_ACC_IDLE) {
		rc = rn_conn_accept_start(l);
		if (rc)
			return rc;
		l->state = RN_CONN_ACC_RUNNING;
	}
	rc = rn_oob_conn_progress(l->oob);
	if (rc == -EAGAIN) {
		*conn = NULL;
		return 0;
	}
	if (rc)
		goto err_unwind;
	c = rn_conn_make(RN_CONN_RECV, l->set, &l->region, &l->remote, l->remote_fifo,
			 l->remote_rkey, l->oob);
	if (!c) {
		rc = -ENOMEM;
		goto err_unwind;
	}
	l->set = NULL; /* now the conn's */
	rn_conn_accept_unwind(l);
	l->state = RN_CONN_ACC_IDLE; /* ready for the next connector */
	*conn = c;
	return 0;

err_unwind:
	rn_conn_accept_unwind(l);
	l->state = RN_CONN_ACC_IDLE;
	return rc;
}

void rn_conn_listen_close(struct rn_conn_listener *l)
{
	if (!l)
		return;
	rn_conn_accept_unwind(l);
	rn_oob_listener_destroy(l->oob_l);
	free(l);
}
