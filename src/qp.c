// SPDX-License-Identifier: Apache-2.0
/*
 * The QP layer (qp.h): per-context shared protection domains, and per-connection QP sets
 * striped over the ports of a virtual device, with NCCL's QP attributes. It owns the QP state
 * transitions RESET->INIT->RTR->RTS and the checks on the peer's QP info; it must not post work
 * requests, poll, touch sockets or the wire format, and calls verbs only through rn_verbs().
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/log.h"
#include "railnet/qp.h"

/* NCCL's fixed RC attributes (reference nccl-net-api.md §4.5). */
#define RN_QP_MIN_RNR_TIMER 12
#define RN_QP_RNR_RETRY 7 /* infinite: a late receiver stalls the sender, never fails it */
#define RN_QP_HOP_LIMIT 255
#define RN_QP_RD_ATOMIC 1
#define RN_QP_FLUSH_SEND_WR 64

struct rn_pd_ref {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int refs;
	struct rn_pd_ref *next;
};

static pthread_mutex_t rn_pd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_pd_ref *rn_pd_list;

int rn_pd_acquire(struct ibv_context *ctx, const char *name, struct ibv_pd **pd)
{
	struct rn_pd_ref *r;
	struct ibv_pd *npd;
	int err;

	pthread_mutex_lock(&rn_pd_lock);
	for (r = rn_pd_list; r; r = r->next) {
		if (r->ctx == ctx) {
			r->refs++;
			*pd = r->pd;
			pthread_mutex_unlock(&rn_pd_lock);
			return 0;
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto err_unlock;
	}
	err = rn_verbs()->alloc_pd(ctx, &npd);
	if (err) {
		RN_WARN("alloc_pd on %s failed: %s", name, strerror(-err));
		goto err_free_ref;
	}
	r->ctx = ctx;
	r->pd = npd;
	r->refs = 1;
	r->next = rn_pd_list;
	rn_pd_list = r;
	pthread_mutex_unlock(&rn_pd_lock);
	*pd = npd;
	return 0;

err_free_ref:
	free(r);
err_unlock:
	pthread_mutex_unlock(&rn_pd_lock);
	return err;
}

void rn_pd_release(struct ibv_pd *pd)
{
	struct rn_pd_ref **pp, *r;
	int err;

	if (!pd)
		return;
	pthread_mutex_lock(&rn_pd_lock);
	for (pp = &rn_pd_list; (r = *pp); pp = &r->next) {
		if (r->pd != pd)
			continue;
		if (--r->refs == 0) {
			*pp = r->next;
			err = rn_verbs()->dealloc_pd(pd);
			if (err)
				RN_WARN("dealloc_pd failed: %s (an MR still registered?)",
					strerror(-err));
			free(r);
		}
		break;
	}
	pthread_mutex_unlock(&rn_pd_lock);
}

int rn_pd_refs(const struct ibv_context *ctx)
{
	struct rn_pd_ref *r;
	int refs = 0;

	pthread_mutex_lock(&rn_pd_lock);
	for (r = rn_pd_list; r; r = r->next)
		if (r->ctx == ctx)
			refs = r->refs;
	pthread_mutex_unlock(&rn_pd_lock);
	return refs;
}

static const char *rn_link_layer_str(int ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	default:
		return "unknown";
	}
}

static int rn_mtu_bytes(int mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

int rn_qp_port_query(struct ibv_context *ctx, const char *name, int port, int gid_index,
		     struct rn_qp_port *out)
{
	static const uint8_t zero[16];
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct rn_qp_port p;
	int err;

	if (!ctx || !name || port < 1 || port > 255 || gid_index < 0)
		return -EINVAL;
	memset(&pa, 0, sizeof(pa));
	err = rn_verbs()->query_port(ctx, (uint8_t)port, &pa);
	if (err) {
		RN_WARN("query_port of %s port %d failed: %s", name, port, strerror(-err));
		return err;
	}
	if (gid_index >= pa.gid_tbl_len) {
		RN_WARN("GID index %d of %s port %d is out of range: the table has %d entries",
			gid_index, name, port, pa.gid_tbl_len);
		return -EINVAL;
	}
	err = rn_verbs()->query_gid(ctx, (uint8_t)port, gid_index, &gid);
	if (err || !memcmp(gid.raw, zero, sizeof(zero))) {
		RN_WARN("GID %d of %s port %d is %s: choose a valid GID index", gid_index, name,
			port, err ? strerror(-err) : "zero");
		return -ENODATA;
	}
	memset(&p, 0, sizeof(p));
	p.ctx = ctx;
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.port = port;
	p.gid_index = gid_index;
	memcpy(p.gid, gid.raw, sizeof(p.gid));
	p.lid = pa.lid;
	p.mtu = pa.active_mtu;
	p.link_layer = pa.link_layer ? pa.link_layer : IBV_LINK_LAYER_INFINIBAND;
	*out = p;
	return 0;
}

void rn_qp_attr_from_config(const struct rn_config *cfg, int traffic_class, struct rn_qp_attr *out)
{
	struct rn_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.pkey_index = cfg->ib_pkey;
	a.timeout = (uint8_t)cfg->ib_timeout;
	a.retry_cnt = (uint8_t)cfg->ib_retry_cnt;
	if (cfg->ib_sl >= 0)
		a.sl = (uint8_t)cfg->ib_sl;
	else if (traffic_class >= 0)
		a.sl = (uint8_t)traffic_class;
	if (cfg->ib_tc >= 0)
		a.tc = (uint8_t)cfg->ib_tc;
	else if (traffic_class >= 0)
		a.tc = (uint8_t)traffic_class;
	*out = a;
}

int rn_qp_count(int local_ports, int remote_ports, int per_port, int *nqps)
{
	int n;

	if (local_ports < 1 || local_ports > RN_QP_MAX_PORTS || remote_ports < 1 ||
	    remote_ports > RN_QP_MAX_PORTS || per_port < 1)
		return -EINVAL;
	n = (local_ports > remote_ports ? local_ports : remote_ports) * per_port;
	if (n > RN_QP_MAX_QPS) {
		RN_WARN("NCCL_IB_QPS_PER_CONNECTION=%d with %d local and %d remote ports needs %d "
			"QPs per connection; at most %d are supported: lower it to %d",
			per_port, local_ports, remote_ports, n, RN_QP_MAX_QPS,
			RN_QP_MAX_QPS / (local_ports > remote_ports ? local_ports : remote_ports));
		return -ERANGE;
	}
	*nqps = n;
	return 0;
}

static int rn_qp_to_init(const struct rn_qp_set_port *sp, struct ibv_qp *qp, int pkey_index,
			 int access)
{
	struct ibv_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = (uint16_t)pkey_index;
	a.port_num = (uint8_t)sp->dev.port;
	a.qp_access_flags = (unsigned int)access;
	err = rn_verbs()->modify_qp(
		qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		RN_WARN("QP 0x%x on %s port %d: RESET->INIT (pkey index %d) failed: %s", qp->qp_num,
			sp->dev.name, sp->dev.port, pkey_index, strerror(-err));
	return err;
}

/* INIT->RTR->RTS towards (rp, rqpn, rpsn) with our own psn. */
static int rn_qp_to_rts(const struct rn_qp_set_port *sp, struct ibv_qp *qp,
			const struct rn_qp_attr *at, const struct rn_qp_port_info *rp,
			uint32_t rqpn, uint32_t rpsn, uint32_t psn)
{
	struct ibv_qp_attr a;
	int mtu = sp->dev.mtu < (int)rp->mtu ? sp->dev.mtu : (int)rp->mtu;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = rqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = RN_QP_RD_ATOMIC;
	a.min_rnr_timer = RN_QP_MIN_RNR_TIMER;
	a.ah_attr.port_num = (uint8_t)sp->dev.port;
	a.ah_attr.sl = at->sl;
	if (sp->dev.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, rp->gid, sizeof(rp->gid));
		a.ah_attr.grh.sgid_index = (uint8_t)sp->dev.gid_index;
		a.ah_attr.grh.hop_limit = RN_QP_HOP_LIMIT;
		a.ah_attr.grh.traffic_class = at->tc;
		a.ah_attr.grh.flow_label = 0;
	} else {
		a.ah_attr.dlid = rp->lid;
	}
	err = rn_verbs()->modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	if (err) {
		RN_WARN("QP 0x%x on %s port %d: INIT->RTR to remote QP 0x%x (GID index %d, MTU %d) "
			"failed: %s",
			qp->qp_num, sp->dev.name, sp->dev.port, rqpn, sp->dev.gid_index,
			rn_mtu_bytes(mtu), strerror(-err));
		return err;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = at->timeout;
	a.retry_cnt = at->retry_cnt;
	a.rnr_retry = RN_QP_RNR_RETRY;
	a.max_rd_atomic = RN_QP_RD_ATOMIC;
	err = rn_verbs()->modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC);
	if (err)
		RN_WARN("QP 0x%x on %s port %d: RTR->RTS (timeout %u, retry_cnt %u) failed: %s",
			qp->qp_num, sp->dev.name, sp->dev.port, at->timeout, at->retry_cnt,
			strerror(-err));
	return err;
}

static int rn_qp_new(const struct rn_qp_set_port *sp, int send_wr, int recv_wr, int inl,
		     struct ibv_qp **out)
{
	struct ibv_qp_init_attr ia;
	int err;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = sp->cq;
	ia.recv_cq = sp->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = (uint32_t)send_wr;
	ia.cap.max_recv_wr = (uint32_t)recv_wr;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = (uint32_t)inl;
	err = rn_verbs()->create_qp(sp->pd, &ia, out);
	if (err)
		RN_WARN("create_qp on %s port %d (%d send, %d recv WRs, %d inline bytes) "
			"failed: %s",
			sp->dev.name, sp->dev.port, send_wr, recv_wr, inl, strerror(-err));
	return err;
}

static void rn_qp_free(const struct rn_qp_set_port *sp, struct ibv_qp *qp)
{
	uint32_t qpn = qp->qp_num;
	int err = rn_verbs()->destroy_qp(qp);

	if (err)
		RN_WARN("destroy_qp of QP 0x%x on %s port %d failed: %s", qpn, sp->dev.name,
			sp->dev.port, strerror(-err));
}

static void rn_cq_free(const struct rn_qp_set_port *sp)
{
	int err = rn_verbs()->destroy_cq(sp->cq);

	if (err)
		RN_WARN("destroy_cq on %s port %d failed: %s", sp->dev.name, sp->dev.port,
			strerror(-err));
}

/* Connect the port's flush QP to itself: the loopback RDMA READ target of iflush. */
static int rn_qp_flush_create(struct rn_qp_set_port *sp, const struct rn_qp_attr *at,
			      int pkey_index)
{
	struct rn_qp_port_info self;
	struct ibv_qp *qp;
	int err;

	err = rn_qp_new(sp, RN_QP_FLUSH_SEND_WR, 0, 0, &qp);
	if (err)
		return err;
	err = rn_qp_to_init(sp, qp, pkey_index, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (err)
		goto err_destroy_qp;
	memset(&self, 0, sizeof(self));
	memcpy(self.gid, sp->dev.gid, sizeof(self.gid));
	self.mtu = (uint32_t)sp->dev.mtu;
	self.lid = sp->dev.lid;
	err = rn_qp_to_rts(sp, qp, at, &self, qp->qp_num, 0, 0);
	if (err)
		goto err_destroy_qp;
	sp->flush = qp;
	return 0;

err_destroy_qp:
	rn_qp_free(sp, qp);
	return err;
}

/* Undo a set built up to nports_cq ports with CQs and nqps_made QPs (and the flush QPs). */
static void rn_qp_set_unwind(struct rn_qp_set *s, int nports_pd, int nports_cq, int nqps_made)
{
	int i;

	for (i = nqps_made - 1; i >= 0; i--)
		rn_qp_free(&s->port[s->qp[i].port], s->qp[i].qp);
	for (i = nports_cq - 1; i >= 0; i--) {
		if (s->port[i].flush)
			rn_qp_free(&s->port[i], s->port[i].flush);
		rn_cq_free(&s->port[i]);
	}
	for (i = nports_pd - 1; i >= 0; i--)
		rn_pd_release(s->port[i].pd);
	free(s);
}

/* The local port index of QP i: the caller's map, else striped. */
static int rn_qp_port_of(const struct rn_qp_params *p, int i, int nports)
{
	return p->qp_port ? p->qp_port[i] : i % nports;
}

int rn_qp_set_create(const struct rn_qp_port *ports, int nports, const struct rn_qp_params *p,
		     struct rn_qp_set **out)
{
	struct rn_qp_set *s;
	int send_wr, recv_wr, access;
	int npd = 0, ncq = 0, nqp = 0;
	int i, err;

	if (!ports || nports < 1 || nports > RN_QP_MAX_PORTS || !p || p->nqps < 1 ||
	    p->nqps > RN_QP_MAX_QPS || (p->role != RN_QP_ROLE_SEND && p->role != RN_QP_ROLE_RECV) ||
	    p->max_send_wr < 0 || p->max_recv_wr < 0 || p->max_inline < 0 || !out)
		return -EINVAL;
	for (i = 0; p->qp_port && i < p->nqps; i++)
		if (p->qp_port[i] < 0 || p->qp_port[i] >= nports)
			return -EINVAL;
	send_wr = p->max_send_wr ? p->max_send_wr : RN_QP_DEF_SEND_WR;
	recv_wr = p->max_recv_wr ? p->max_recv_wr
				 : (p->role == RN_QP_ROLE_RECV ? RN_QP_DEF_RECV_WR : 0);
	access = p->role == RN_QP_ROLE_RECV ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ
					    : IBV_ACCESS_REMOTE_WRITE;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->role = p->role;
	s->nports = nports;
	s->nqps = p->nqps;
	s->attr = p->attr;

	for (npd = 0; npd < nports; npd++) {
		s->port[npd].dev = ports[npd];
		err = rn_pd_acquire(ports[npd].ctx, ports[npd].name, &s->port[npd].pd);
		if (err)
			goto err_unwind;
	}
	for (ncq = 0; ncq < nports; ncq++) {
		struct rn_qp_set_port *sp = &s->port[ncq];
		int on_port = 0, cqe;

		for (i = 0; i < p->nqps; i++)
			on_port += rn_qp_port_of(p, i, nports) == ncq;
		cqe = on_port * (send_wr + recv_wr) + (p->flush ? RN_QP_FLUSH_SEND_WR : 0);

		err = rn_verbs()->create_cq(sp->dev.ctx, cqe, NULL, NULL, 0, &sp->cq);
		if (err) {
			RN_WARN("create_cq of %d entries on %s port %d failed: %s", cqe,
				sp->dev.name, sp->dev.port, strerror(-err));
			goto err_unwind;
		}
	}
	for (nqp = 0; nqp < p->nqps; nqp++) {
		struct rn_qp_ent *e = &s->qp[nqp];
		struct ibv_qp *qp;

		e->port = rn_qp_port_of(p, nqp, nports);
		e->remote_port = -1;
		err = rn_qp_new(&s->port[e->port], send_wr, recv_wr, p->max_inline, &qp);
		if (err)
			goto err_unwind;
		err = rn_qp_to_init(&s->port[e->port], qp, p->attr.pkey_index, access);
		if (err) {
			rn_qp_free(&s->port[e->port], qp);
			goto err_unwind;
		}
		e->qp = qp;
		/* a distinct, deterministic 24-bit start PSN per QP (the value is ours to pick) */
		e->psn = (qp->qp_num * 2654435761u) & 0xffffff;
	}
	for (i = 0; p->flush && i < nports; i++) {
		err = rn_qp_flush_create(&s->port[i], &p->attr, p->attr.pkey_index);
		if (err)
			goto err_unwind;
	}
	*out = s;
	return 0;

err_unwind:
	rn_qp_set_unwind(s, npd, ncq, nqp);
	return err;
}

void rn_qp_set_info(const struct rn_qp_set *set, struct rn_qp_info *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	out->nports = (uint32_t)set->nports;
	out->nqps = (uint32_t)set->nqps;
	for (i = 0; i < set->nports; i++) {
		const struct rn_qp_port *d = &set->port[i].dev;
		struct rn_qp_port_info *pi = &out->port[i];

		memcpy(pi->gid, d->gid, sizeof(pi->gid));
		pi->gid_index = (uint32_t)d->gid_index;
		pi->mtu = (uint32_t)d->mtu;
		pi->lid = d->lid;
		pi->port_num = (uint8_t)d->port;
		pi->link_layer = (uint8_t)d->link_layer;
		pi->rail = d->rail;
	}
	for (i = 0; i < set->nqps; i++) {
		out->qp[i].qpn = set->qp[i].qp->qp_num;
		out->qp[i].psn = set->qp[i].psn;
		out->qp[i].port = (uint32_t)set->qp[i].port;
	}
}

/* Refuse a peer whose info does not fit ours; nothing is modified before this passes. */
static int rn_qp_check_remote(const struct rn_qp_set *s, const struct rn_qp_info *r)
{
	const struct rn_qp_set_port *p0 = &s->port[0];
	uint32_t i;

	if (r->nports < 1 || r->nports > RN_QP_MAX_PORTS) {
		RN_WARN("%s port %d: the peer reports %u ports; 1..%d are possible", p0->dev.name,
			p0->dev.port, r->nports, RN_QP_MAX_PORTS);
		return -EPROTO;
	}
	if (r->nqps != (uint32_t)s->nqps) {
		RN_WARN("%s port %d: the peer has %u QPs for this connection and we have %d (%d "
			"local, %u remote ports): both ends must use the same "
			"NCCL_IB_QPS_PER_CONNECTION",
			p0->dev.name, p0->dev.port, r->nqps, s->nqps, s->nports, r->nports);
		return -EPROTO;
	}
	for (i = 0; i < r->nqps; i++) {
		const struct rn_qp_set_port *sp = &s->port[s->qp[i].port];
		const struct rn_qp_port_info *rp;

		if (r->qp[i].port >= r->nports) {
			RN_WARN("%s port %d: the peer's QP %u (0x%x) names port %u of %u",
				sp->dev.name, sp->dev.port, i, r->qp[i].qpn, r->qp[i].port,
				r->nports);
			return -EPROTO;
		}
		rp = &r->port[r->qp[i].port];
		if (rp->link_layer != sp->dev.link_layer) {
			RN_WARN("QP 0x%x on %s port %d: link layer %s here but %s on the peer's "
				"port %u (remote QP 0x%x); both ends of a rail must be InfiniBand "
				"or "
				"both Ethernet (RoCE)",
				s->qp[i].qp->qp_num, sp->dev.name, sp->dev.port,
				rn_link_layer_str(sp->dev.link_layer),
				rn_link_layer_str(rp->link_layer), rp->port_num, r->qp[i].qpn);
			return -EPROTO;
		}
		if (rp->mtu < IBV_MTU_256 || rp->mtu > IBV_MTU_4096) {
			RN_WARN("QP 0x%x on %s port %d: the peer's port %u reports MTU code %u",
				s->qp[i].qp->qp_num, sp->dev.name, sp->dev.port, rp->port_num,
				rp->mtu);
			return -EPROTO;
		}
	}
	return 0;
}

int rn_qp_set_connect(struct rn_qp_set *set, const struct rn_qp_info *remote)
{
	int i, err;

	if (!set || !remote)
		return -EINVAL;
	if (set->connected)
		return -EALREADY;
	err = rn_qp_check_remote(set, remote);
	if (err)
		return err;
	for (i = 0; i < set->nqps; i++) {
		const struct rn_qp_qp_info *rq = &remote->qp[i];

		err = rn_qp_to_rts(&set->port[set->qp[i].port], set->qp[i].qp, &set->attr,
				   &remote->port[rq->port], rq->qpn & 0xffffff, rq->psn & 0xffffff,
				   set->qp[i].psn);
		if (err)
			return err;
		set->qp[i].remote_port = (int)rq->port;
	}
	set->connected = true;
	return 0;
}

void rn_qp_set_destroy(struct rn_qp_set *set)
{
	/*
	 * rdma-core's ibv_destroy_qp waits for the acknowledgement of every async event read for
	 * the QP; event.c acknowledges each event in the call that reads it, so none is pending.
	 */
	if (set)
		rn_qp_set_unwind(set, set->nports, set->nports, set->nqps);
}
