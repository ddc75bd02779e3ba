// SPDX-License-Identifier: Apache-2.0
/*
 * Devices and contexts: the device list, ibv_open_device/ibv_close_device (a verbs_context with
 * the ops the inline verbs.h functions call, an async event fd, a NIC thread), the query verbs
 * (device, port, GID, P_Key) and async events. Query answers come from the pod view only.
 */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#undef ibv_get_device_list
#undef ibv_query_port

/* what crosses the async pipe */
struct sv_async_msg {
	uint32_t type;
	uint32_t qpn; /* QP events: the QP's number, to find it still alive when read */
	uint64_t elem;
};

static struct sv_device *sv_dev_check(struct ibv_device *device)
{
	int i;

	for (i = 0; i < sv_g.ndev; i++)
		if (&sv_g.dev[i]->dev == device)
			return sv_g.dev[i];
	return NULL;
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list;
	int i, err;

	sv_init();
	err = sv_fail("ibv_get_device_list");
	if (err) {
		errno = err;
		return NULL;
	}
	list = calloc(sv_g.ndev + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < sv_g.ndev; i++)
		list[i] = &sv_g.dev[i]->dev;
	if (num)
		*num = sv_g.ndev;
	return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct sv_device *d = sv_dev_check(device);

	return d ? d->node_guid : 0;
}

SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	struct sv_device *d = sv_dev_check(device);

	return d ? d->index : -1;
}

static int sv_query_port_op(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr, size_t port_attr_len);
static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);

static int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	*bad = wr;
	return EOPNOTSUPP;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sv_device *d;
	struct sv_ctx *ctx;
	int pfd[2], err;

	sv_init();
	d = sv_dev_check(device);
	if (!d) {
		errno = ENODEV;
		return NULL;
	}
	err = sv_fail("ibv_open_device");
	if (err) {
		errno = err;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = d;
	ctx->epfd = -1;
	ctx->doorbell = -1;
	ctx->lis_unix = -1;
	ctx->lis_tcp = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->mr_lock, NULL);
	pthread_mutex_init(&ctx->ev_lock, NULL);
	ctx->key_tag = (uint32_t)(sv_now_ns() >> 10);

	ctx->vctx.sz = sizeof(struct verbs_context);
	ctx->vctx.query_port = sv_query_port_op;
	ctx->vctx.query_device_ex = sv_query_device_ex;
	ctx->vctx.create_qp_ex = sv_create_qp_ex;
	ctx->vctx.create_cq_ex = sv_create_cq_ex;

	struct ibv_context *c = &ctx->vctx.context;

	c->device = device;
	c->ops._compat_query_device = ibv_query_device;
	c->ops._compat_query_port = ibv_query_port;
	c->ops.poll_cq = sv_poll_cq;
	c->ops.req_notify_cq = sv_req_notify_cq;
	c->ops.post_send = sv_post_send;
	c->ops.post_recv = sv_post_recv;
	c->ops.post_srq_recv = sv_post_srq_recv;
	c->cmd_fd = -1;
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = (void *)(uintptr_t)UINTPTR_MAX;

	if (pipe2(pfd, O_CLOEXEC)) {
		err = errno;
		goto err_free;
	}
	c->async_fd = pfd[0];
	ctx->async_wfd = pfd[1];
	/* a full pipe must never block the NIC */
	fcntl(ctx->async_wfd, F_SETFL, O_NONBLOCK);

	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctx->doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->epfd < 0 || ctx->doorbell < 0) {
		err = errno;
		goto err_close;
	}
	err = -sv_rdv_listen(ctx);
	if (err)
		goto err_close;
	err = -sv_nic_start(ctx);
	if (err)
		goto err_unlisten;
	return c;

err_unlisten:
	sv_rdv_unlisten(ctx);
err_close:
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->doorbell >= 0)
		close(ctx->doorbell);
	close(pfd[0]);
	close(pfd[1]);
err_free:
	free(ctx);
	errno = err;
	return NULL;
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sv_ctx *ctx = sv_ctx_of(context);

	sv_nic_stop(ctx);
	pthread_mutex_lock(&ctx->lock);
	while (ctx->conns)
		sv_conn_close(ctx->conns);
	/* QPs the application did not destroy: give back their fabric-wide QPNs */
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next)
		sv_rdv_release(qp);
	sv_nic_free_sets(ctx);
	pthread_mutex_unlock(&ctx->lock);
	sv_rdv_unlisten(ctx);
	close(ctx->epfd);
	close(ctx->doorbell);
	close(ctx->async_wfd); /* a thread blocked in ibv_get_async_event sees EOF */
	close(context->async_fd);
	free(ctx->mrs);
	for (int d = 0; ctx->bounce_busy && d < 64; d++)
		if ((ctx->bounce_busy >> d) & 1) {
			ctx->bounce_busy &= ~(1ull << d);
			sv_gpu_fence(d); /* no copy still reads the buffer freed below */
		}
	if (ctx->bounce_pinned)
		sv_gpu_host_free(ctx->bounce);
	else
		free(ctx->bounce);
	free(ctx);
	return 0;
}

SV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct sv_device *d = ctx->dev;
	int err = sv_fail("ibv_query_device");

	if (err)
		return err;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", d->fw_ver);
	a->node_guid = d->node_guid;
	a->sys_image_guid = d->sys_image_guid;
	a->max_mr_size = ~0ull;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0;
	a->vendor_part_id = d->vendor_part_id;
	a->hw_ver = 1;
	a->max_qp = 1 << 18;
	a->max_qp_wr = SV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_CHANGE_PHY_PORT;
	a->max_sge = SV_MAX_SGE;
	a->max_sge_rd = SV_MAX_SGE;
	a->max_cq = 1 << 18;
	a->max_cqe = SV_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 18;
	a->max_qp_rd_atom = SV_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = SV_MAX_RD_ATOM << 10;
	a->max_qp_init_rd_atom = SV_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = (uint8_t)d->nports;
	return 0;
}

static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;
	int err;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	err = ibv_query_device(context, &full.orig_attr);
	if (err)
		return err;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	full.max_dm_size = 0;
	memset(attr, 0, attr_size);
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

static void sv_fill_port(struct sv_ctx *ctx, int pn, struct ibv_port_attr *pa)
{
	struct sv_port *p = &ctx->dev->port[pn];
	int st = sv_port_state(ctx->dev, pn);

	memset(pa, 0, sizeof(*pa));
	pa->state = st;
	pa->max_mtu = IBV_MTU_4096;
	pa->active_mtu = p->mtu;
	pa->gid_tbl_len = p->ngids;
	pa->port_cap_flags = IBV_PORT_CM_SUP;
	if (p->link_layer == IBV_LINK_LAYER_ETHERNET)
		pa->port_cap_flags |= IBV_PORT_IP_BASED_GIDS;
	pa->max_msg_sz = SV_MAX_MSG;
	pa->pkey_tbl_len = 1;
	pa->lid = p->lid;
	pa->max_vl_num = 1;
	pa->subnet_timeout = 18;
	pa->active_width = p->width;
	pa->active_speed = p->speed;
	pa->phys_state = st == IBV_PORT_DOWN ? 3 : p->phys_state;
	pa->link_layer = p->link_layer;
	pa->flags = 0;
}

static int sv_query_port_op(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr, size_t len)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct ibv_port_attr pa;
	int err = sv_fail("ibv_query_port");

	if (err)
		return err;
	if (port_num < 1 || port_num > ctx->dev->nports)
		return EINVAL;
	sv_fill_port(ctx, port_num, &pa);
	if (len < sizeof(pa)) {
		memcpy(port_attr, &pa, len);
	} else {
		memset(port_attr, 0, len);
		memcpy(port_attr, &pa, sizeof(pa));
	}
	return 0;
}

SV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	/* the exported (compat) struct ends after 'flags' */
	return sv_query_port_op(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, port_cap_flags2));
}

SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			    union ibv_gid *gid)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct sv_port *p;
	int err = sv_fail("ibv_query_gid");

	if (err) {
		errno = err;
		return -1;
	}
	if (port_num < 1 || port_num > ctx->dev->nports) {
		errno = EINVAL;
		return -1;
	}
	p = &ctx->dev->port[port_num];
	if (index < 0 || index >= p->ngids) {
		errno = EINVAL;
		return -1;
	}
	if (p->gids[index].valid)
		*gid = p->gids[index].gid;
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void sv_fill_gid_entry(struct sv_port *p, uint32_t port, uint32_t i, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid = p->gids[i].gid;
	e->gid_index = i;
	e->port_num = port;
	e->gid_type = p->gids[i].type;
	e->ndev_ifindex = p->gids[i].ifindex;
}

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct ibv_gid_entry e;
	struct sv_port *p;

	if (flags)
		return EOPNOTSUPP;
	if (entry_size < sizeof(e) || port_num < 1 || port_num > (uint32_t)ctx->dev->nports)
		return EINVAL;
	p = &ctx->dev->port[port_num];
	if (gid_index >= (uint32_t)p->ngids)
		return EINVAL;
	if (!p->gids[gid_index].valid)
		return ENODATA;
	sv_fill_gid_entry(p, port_num, gid_index, &e);
	memset(entry, 0, entry_size);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	size_t n = 0;
	int pn, i;

	if (flags)
		return -EOPNOTSUPP;
	if (entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	for (pn = 1; pn <= ctx->dev->nports; pn++) {
		struct sv_port *p = &ctx->dev->port[pn];

		for (i = 0; i < p->ngids; i++) {
			struct ibv_gid_entry e;

			if (!p->gids[i].valid)
				continue;
			if (n >= max_entries)
				return -EINVAL;
			sv_fill_gid_entry(p, pn, i, &e);
			memset((char *)entries + n * entry_size, 0, entry_size);
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	struct sv_ctx *ctx = sv_ctx_of(context);

	if (port_num < 1 || port_num > ctx->dev->nports || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	struct sv_ctx *ctx = sv_ctx_of(context);

	if (port_num < 1 || port_num > ctx->dev->nports)
		return -1;
	/* full and limited membership of the default partition both sit at index 0 */
	if ((be16toh(pkey) & 0x7fff) == 0x7fff)
		return 0;
	return -1;
}

/* A QP's async event: delivered only while the QP lives (ibv_get_async_event checks). */
int sv_async_post_qp(struct sv_qp *qp, enum ibv_event_type type)
{
	struct sv_async_msg m = { .type = type,
				  .qpn = qp->qpn,
				  .elem = (uintptr_t)&qp->qpx.qp_base };

	sv_dbg("%s: async event %s on QP %u", qp->ctx->dev->dev.name, ibv_event_type_str(type),
	       qp->qpn);
	if (write(qp->ctx->async_wfd, &m, sizeof(m)) != sizeof(m))
		return -errno;
	return 0;
}

/*
 * As the kernel does: an event of a QP destroyed before it was read is dropped, and one that
 * is read counts as reported, so that ibv_destroy_qp waits for its acknowledgement. False
 * when the event's QP is gone (ctx->lock keeps it from being destroyed meanwhile).
 */
static bool sv_async_qp_deliver(struct sv_ctx *ctx, const struct sv_async_msg *m)
{
	struct sv_qp *qp;

	pthread_mutex_lock(&ctx->lock);
	qp = sv_nic_qp_find(ctx, m->qpn);
	if (qp && (uintptr_t)&qp->qpx.qp_base != m->elem)
		qp = NULL;
	if (qp) {
		pthread_mutex_lock(&qp->qpx.qp_base.mutex);
		qp->events_reported++;
		pthread_mutex_unlock(&qp->qpx.qp_base.mutex);
	}
	pthread_mutex_unlock(&ctx->lock);
	return qp != NULL;
}

int sv_async_post(struct sv_ctx *ctx, enum ibv_event_type type, uint64_t elem)
{
	struct sv_async_msg m = { .type = type, .elem = elem };

	sv_dbg("%s: async event %s", ctx->dev->dev.name, ibv_event_type_str(type));
	if (write(ctx->async_wfd, &m, sizeof(m)) != sizeof(m))
		return -errno;
	return 0;
}

static bool sv_async_is_qp(uint32_t type)
{
	switch (type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sv_async_msg m;
	ssize_t n;

	for (;;) {
		do
			n = read(context->async_fd, &m, sizeof(m));
		while (n < 0 && errno == EINTR);
		if (n != sizeof(m)) {
			if (n >= 0)
				errno = EIO;
			return -1;
		}
		if (!sv_async_is_qp(m.type) || sv_async_qp_deliver(sv_ctx_of(context), &m))
			break;
	}
	event->event_type = m.type;
	if (m.type == IBV_EVENT_CQ_ERR)
		event->element.cq = (struct ibv_cq *)(uintptr_t)m.elem;
	else if (sv_async_is_qp(m.type))
		event->element.qp = (struct ibv_qp *)(uintptr_t)m.elem;
	else
		event->element.port_num = (int)m.elem;
	return 0;
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event->event_type == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
	} else if (sv_async_is_qp(event->event_type)) {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
	}
}
