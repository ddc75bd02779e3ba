// SPDX-License-Identifier: Apache-2.0
/*
 * Completion queues and completion channels. A CQ is a ring of ibv_wc filled by the NIC
 * (sv_cq_push) and drained by ibv_poll_cq; an armed CQ writes its pointer into its channel's
 * pipe, which ibv_get_cq_event reads. Overrun raises IBV_EVENT_CQ_ERR and the CQ stops taking
 * completions, as on hardware. It must not know about QPs beyond the attach count.
 */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sv_chan *ch;
	int pfd[2];
	int err = sv_fail("ibv_create_comp_channel");

	if (err) {
		errno = err;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		free(ch);
		return NULL;
	}
	fcntl(pfd[1], F_SETFL, O_NONBLOCK);
	ch->ch.context = context;
	ch->ch.fd = pfd[0];
	ch->ch.refcnt = 0;
	ch->wfd = pfd[1];
	return &ch->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_chan *ch = sv_container_of(channel, struct sv_chan, ch);

	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	close(ch->wfd);
	close(channel->fd);
	free(ch);
	return 0;
}

static void sv_cqx_init(struct sv_cq *cq);

static struct sv_cq *sv_cq_create(struct ibv_context *context, int cqe, void *cq_context,
				  struct ibv_comp_channel *channel, int comp_vector)
{
	struct sv_cq *cq;
	int err = sv_fail("ibv_create_cq");

	if (err) {
		errno = err;
		return NULL;
	}
	if (cqe < 1 || cqe > SV_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	/* like mlx5 and rxe: room for cqe + 1, rounded up to a power of two */
	cq->size = 2;
	while (cq->size < (uint32_t)cqe + 1)
		cq->size *= 2;
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = sv_ctx_of(context);
	pthread_mutex_init(&cq->lock, NULL);
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.handle = (uint32_t)(uintptr_t)cq;
	cq->cq.cqe = (int)cq->size - 1;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	sv_cqx_init(cq);
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELEASE);
	return cq;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct sv_cq *cq = sv_cq_create(context, cqe, cq_context, channel, comp_vector);

	return cq ? &cq->cq : NULL;
}

struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct sv_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	/* timestamps, VLANs, flow tags, tag matching: not emulated */
	if ((attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = sv_cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
			  (int)attr->comp_vector);
	return cq ? &cq->cqx : NULL;
}

/* ---- the extended poll API: the CQ lock is held from a successful start_poll to end_poll -- */

static struct sv_cq *sv_cqx(struct ibv_cq_ex *x)
{
	return sv_container_of(x, struct sv_cq, cqx);
}

static int sv_cqx_take(struct sv_cq *cq)
{
	if (cq->head == cq->tail)
		return ENOENT;
	cq->cur = cq->ring[cq->head % cq->size];
	__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	cq->cqx.status = cq->cur.status;
	cq->cqx.wr_id = cq->cur.wr_id;
	return 0;
}

static int sv_cqx_start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
	struct sv_cq *cq = sv_cqx(x);

	if (attr && attr->comp_mask)
		return EINVAL;
	if (__atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
		sv_nic_inline(cq->ctx, true);
	pthread_mutex_lock(&cq->lock);
	if (sv_cqx_take(cq)) {
		pthread_mutex_unlock(&cq->lock); /* ENOENT: no end_poll follows */
		return ENOENT;
	}
	return 0;
}

static int sv_cqx_next_poll(struct ibv_cq_ex *x)
{
	return sv_cqx_take(sv_cqx(x));
}

static void sv_cqx_end_poll(struct ibv_cq_ex *x)
{
	pthread_mutex_unlock(&sv_cqx(x)->lock);
}

static enum ibv_wc_opcode sv_cqx_opcode(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.opcode;
}

static uint32_t sv_cqx_vendor_err(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.vendor_err;
}

static uint32_t sv_cqx_byte_len(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.byte_len;
}

static __be32 sv_cqx_imm_data(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.imm_data;
}

static uint32_t sv_cqx_qp_num(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.qp_num;
}

static uint32_t sv_cqx_src_qp(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.src_qp;
}

static unsigned int sv_cqx_wc_flags(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.wc_flags;
}

static uint32_t sv_cqx_slid(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.slid;
}

static uint8_t sv_cqx_sl(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.sl;
}

static uint8_t sv_cqx_dlid_path_bits(struct ibv_cq_ex *x)
{
	return sv_cqx(x)->cur.dlid_path_bits;
}

static void sv_cqx_init(struct sv_cq *cq)
{
	struct ibv_cq_ex *x = &cq->cqx;

	x->start_poll = sv_cqx_start_poll;
	x->next_poll = sv_cqx_next_poll;
	x->end_poll = sv_cqx_end_poll;
	x->read_opcode = sv_cqx_opcode;
	x->read_vendor_err = sv_cqx_vendor_err;
	x->read_byte_len = sv_cqx_byte_len;
	x->read_imm_data = sv_cqx_imm_data;
	x->read_qp_num = sv_cqx_qp_num;
	x->read_src_qp = sv_cqx_src_qp;
	x->read_wc_flags = sv_cqx_wc_flags;
	x->read_slid = sv_cqx_slid;
	x->read_sl = sv_cqx_sl;
	x->read_dlid_path_bits = sv_cqx_dlid_path_bits;
}

SV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sv_cq *cq = sv_container_of(ibcq, struct sv_cq, cq);
	struct ibv_wc *ring;
	uint32_t n, i, size = 2;

	if (cqe < 1 || cqe > SV_MAX_CQE)
		return EINVAL;
	while (size < (uint32_t)cqe + 1)
		size *= 2;
	pthread_mutex_lock(&cq->lock);
	n = cq->tail - cq->head;
	if (size < n) {
		pthread_mutex_unlock(&cq->lock);
		return EINVAL;
	}
	ring = calloc(size, sizeof(*ring));
	if (!ring) {
		pthread_mutex_unlock(&cq->lock);
		return ENOMEM;
	}
	for (i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	free(cq->ring);
	cq->ring = ring;
	cq->size = size;
	__atomic_store_n(&cq->head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->tail, n, __ATOMIC_RELEASE);
	ibcq->cqe = (int)size - 1;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sv_cq *cq = sv_container_of(ibcq, struct sv_cq, cq);
	int err = sv_fail("ibv_destroy_cq");

	if (err)
		return err;
	if (__atomic_load_n(&cq->refs, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (ibcq->channel)
		__atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_RELEASE);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc)
{
	bool notify = false, overrun = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->overrun) {
		pthread_mutex_unlock(&cq->lock);
		return;
	}
	if (cq->tail - cq->head >= cq->size) {
		cq->overrun = overrun = true;
	} else {
		cq->ring[cq->tail % cq->size] = *wc;
		__atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
		if (cq->armed && (!cq->solicited_only || wc->status != IBV_WC_SUCCESS ||
				  (wc->opcode & IBV_WC_RECV))) {
			cq->armed = false;
			notify = true;
		}
	}
	pthread_mutex_unlock(&cq->lock);
	if (overrun) {
		sv_log("CQ %p overrun (%u entries): completion of wr_id %llu lost", (void *)cq,
		       cq->size, (unsigned long long)wc->wr_id);
		sv_async_post(cq->ctx, IBV_EVENT_CQ_ERR, (uintptr_t)&cq->cq);
	}
	if (notify && cq->cq.channel) {
		struct sv_chan *ch = sv_container_of(cq->cq.channel, struct sv_chan, ch);
		uint64_t p = (uintptr_t)&cq->cq;

		if (write(ch->wfd, &p, sizeof(p)) != sizeof(p))
			sv_log("completion channel %d full; event lost", ch->ch.fd);
	}
}

int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sv_cq *cq = sv_container_of(ibcq, struct sv_cq, cq);
	int i = 0;

	if (sv_fault_any) {
		int err = sv_fault_check("ibv_poll_cq");

		if (err)
			return -err;
	}
	/* empty: lend the NIC this thread, then look again */
	if (__atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&cq->head, __ATOMIC_RELAXED)) {
		sv_nic_inline(cq->ctx, true);
		if (__atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
			return 0;
	}
	pthread_mutex_lock(&cq->lock);
	while (i < n && cq->head != cq->tail) {
		wc[i++] = cq->ring[cq->head % cq->size];
		__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&cq->lock);
	return i;
}

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sv_cq *cq = sv_container_of(ibcq, struct sv_cq, cq);

	if (!ibcq->channel)
		return EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	cq->solicited_only = solicited_only != 0;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	uint64_t p;
	ssize_t n;

	do
		n = read(channel->fd, &p, sizeof(p));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(p))
		return -1;
	*cq = (struct ibv_cq *)(uintptr_t)p;
	*cq_context = (*cq)->cq_context;
	return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
