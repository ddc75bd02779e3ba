// SPDX-License-Identifier: Apache-2.0
/*
 * RC queue pairs as the application sees them: create/query/modify/destroy with the kernel's
 * state table and value checks (EINVAL, nothing changed), post_send/post_recv with rxe's
 * posting rules, flushing in the error state, the ibv_wr_* batch API of ibv_qp_ex, and ECE.
 * The NIC (progress.c) executes what is posted here; this file only queues and flushes.
 */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define M(x) IBV_QP_##x

struct sv_trans {
	bool ok;
	uint32_t req, opt;
};

/* RC rows of the kernel's ib_modify_qp_is_ok table (reference §5). */
static const struct sv_trans sv_rc_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_INIT] = { true, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), 0 },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_INIT] = { true, 0, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) },
		[IBV_QPS_RTR] = { true, M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
				  M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
				  M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RTS] = { true, M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
				  M(MAX_QP_RD_ATOMIC),
				  M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
				  M(PATH_MIG_STATE) },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RTS] = { true, 0, M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
				  M(PATH_MIG_STATE) | M(MIN_RNR_TIMER) },
		[IBV_QPS_SQD] = { true, 0, M(EN_SQD_ASYNC_NOTIFY) },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RTS] = { true, 0, M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
				  M(PATH_MIG_STATE) | M(MIN_RNR_TIMER) },
		[IBV_QPS_SQD] = { true, 0, M(PKEY_INDEX) | M(PORT) | M(AV) | M(TIMEOUT) |
				  M(RETRY_CNT) | M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) |
				  M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				  M(MIN_RNR_TIMER) | M(PATH_MIG_STATE) },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_SQE] = { false, 0, 0 },
	},
};

static void sv_qpx_init(struct sv_qp *qp);

static enum ibv_wc_opcode sv_wc_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

/* Completes the SQ WR at sq_done with status (qp->lock held). Error CQEs are never skipped. */
static void sv_sq_complete_one(struct sv_qp *qp, int status)
{
	struct sv_swqe *w = &qp->sq[qp->sq_done % qp->sq_size];

	if (status != IBV_WC_SUCCESS || w->signaled) {
		struct ibv_wc wc = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = sv_wc_opcode(w->opcode),
			.byte_len = (uint32_t)w->len,
			.qp_num = qp->qpn,
		};

		sv_cq_push(qp->scq, &wc);
		qp->sq_done++;
		qp->sq_head = qp->sq_done; /* a CQE frees every slot before it */
		return;
	}
	qp->sq_done++;
}

static void sv_rq_flush_one(struct sv_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->qpn,
	};

	sv_cq_push(qp->rcq, &wc);
}

void sv_qp_flush_locked(struct sv_qp *qp)
{
	while (qp->sq_done != qp->sq_tail)
		sv_sq_complete_one(qp, IBV_WC_WR_FLUSH_ERR);
	qp->sq_acked = qp->sq_next = qp->sq_done;
	if (qp->cur_has_rwqe) {
		qp->cur_has_rwqe = false;
		sv_rq_flush_one(qp, qp->cur_rwqe.wr_id);
	}
	while (qp->rq_head != qp->rq_tail) {
		sv_rq_flush_one(qp, qp->rq[qp->rq_head % qp->rq_size].wr_id);
		qp->rq_head++;
	}
}

void sv_qp_to_err(struct sv_qp *qp, int first_status)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	sv_dbg("QP %u -> ERR (%s)", qp->qpn, ibv_wc_status_str(first_status));
	/* acknowledged WRs held back by the latency model still complete successfully */
	while (qp->sq_done != qp->sq_acked)
		sv_sq_complete_one(qp, IBV_WC_SUCCESS);
	if (first_status != IBV_WC_SUCCESS && qp->sq_done != qp->sq_tail)
		sv_sq_complete_one(qp, first_status);
	/* like hardware: the client's qp->state changes only through modify_qp/query_qp */
	qp->state = IBV_QPS_ERR;
	sv_qp_flush_locked(qp);
}

static int sv_check_caps(struct ibv_qp_cap *cap)
{
	if (cap->max_send_wr > SV_MAX_QP_WR || cap->max_recv_wr > SV_MAX_QP_WR ||
	    cap->max_send_sge > SV_MAX_SGE || cap->max_recv_sge > SV_MAX_SGE ||
	    cap->max_inline_data > SV_MAX_INLINE)
		return EINVAL;
	return 0;
}

static struct ibv_qp *sv_create_qp_common(struct ibv_context *context, struct ibv_pd *ibpd,
					  struct ibv_qp_init_attr_ex *a)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct sv_qp *qp;
	int err;

	err = sv_fail("ibv_create_qp");
	if (err)
		goto err_out;
	err = EINVAL;
	if (!ibpd || !a->send_cq || !a->recv_cq || ibpd->context != context)
		goto err_out;
	err = EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC || a->srq)
		goto err_out;
	err = sv_check_caps(&a->cap);
	if (err)
		goto err_out;
	err = ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		goto err_out;
	qp->ctx = ctx;
	qp->pd = sv_container_of(ibpd, struct sv_pd, pd);
	qp->scq = sv_container_of(a->send_cq, struct sv_cq, cq);
	qp->rcq = sv_container_of(a->recv_cq, struct sv_cq, cq);
	qp->cap = a->cap;
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->sq_size = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	qp->rq_size = a->cap.max_recv_wr ? a->cap.max_recv_wr : 1;
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_size, sizeof(*qp->rq));
	qp->ssge = calloc((size_t)qp->sq_size * (a->cap.max_send_sge + 1), sizeof(*qp->ssge));
	qp->rsge = calloc((size_t)qp->rq_size * (a->cap.max_recv_sge + 1), sizeof(*qp->rsge));
	qp->sinl = a->cap.max_inline_data ? malloc((size_t)qp->sq_size * a->cap.max_inline_data)
					  : NULL;
	if (!qp->sq || !qp->rq || !qp->ssge || !qp->rsge || (a->cap.max_inline_data && !qp->sinl))
		goto err_free;
	for (uint32_t i = 0; i < qp->sq_size; i++) {
		qp->sq[i].sge = qp->ssge + (size_t)i * (a->cap.max_send_sge + 1);
		qp->sq[i].inl = qp->sinl ? qp->sinl + (size_t)i * a->cap.max_inline_data : NULL;
	}
	for (uint32_t i = 0; i < qp->rq_size; i++)
		qp->rq[i].sge = qp->rsge + (size_t)i * (a->cap.max_recv_sge + 1);
	pthread_mutex_init(&qp->lock, NULL);
	qp->state = IBV_QPS_RESET;

	struct ibv_qp *q = &qp->qpx.qp_base;

	q->context = context;
	q->qp_context = a->qp_context;
	q->pd = ibpd;
	q->send_cq = a->send_cq;
	q->recv_cq = a->recv_cq;
	q->srq = NULL;
	q->state = IBV_QPS_RESET;
	q->qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	sv_qpx_init(qp);

	err = -sv_rdv_claim(qp);
	if (err)
		goto err_free;
	q->qp_num = qp->qpn;
	q->handle = qp->qpn;

	__atomic_add_fetch(&qp->pd->refs, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&qp->scq->refs, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&qp->rcq->refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&ctx->lock);
	err = -sv_nic_qp_add(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		sv_rdv_release(qp);
		__atomic_sub_fetch(&qp->pd->refs, 1, __ATOMIC_RELEASE);
		__atomic_sub_fetch(&qp->scq->refs, 1, __ATOMIC_RELEASE);
		__atomic_sub_fetch(&qp->rcq->refs, 1, __ATOMIC_RELEASE);
		goto err_free;
	}
	sv_dbg("%s: QP %u created", ctx->dev->dev.name, qp->qpn);
	return q;

err_free:
	free(qp->sq);
	free(qp->rq);
	free(qp->ssge);
	free(qp->rsge);
	free(qp->sinl);
	free(qp);
err_out:
	errno = err;
	return NULL;
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	qp = sv_create_qp_common(pd->context, pd, &ax);
	if (qp)
		attr->cap = ax.cap;
	return qp;
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	const uint64_t ops_ok = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				IBV_QP_EX_WITH_RDMA_READ;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~ops_ok))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return sv_create_qp_common(context, attr->pd, attr);
}

SV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &sv_qp_of(qp)->qpx;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			   struct ibv_qp_init_attr *init_attr)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	int err = sv_fail("ibv_query_qp");

	if (err)
		return err;
	pthread_mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = qp->state;
	pthread_mutex_unlock(&qp->lock);
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = IBV_QPT_RC;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/* Value checks of the attributes present in mask (EINVAL). */
static int sv_check_values(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct sv_device *d = qp->ctx->dev;
	int port = (mask & IBV_QP_PORT) ? a->port_num : qp->attr.port_num;

	if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > d->nports))
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags &
	     ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SV_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SV_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		const struct ibv_ah_attr *ah = &a->ah_attr;
		struct sv_port *p;

		if (ah->port_num && ah->port_num != port)
			return EINVAL;
		if (port < 1 || port > d->nports)
			return EINVAL;
		p = &d->port[port];
		/* RoCE addresses by GID only: the GRH is mandatory */
		if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !ah->is_global)
			return EINVAL;
		if (ah->is_global &&
		    (ah->grh.sgid_index >= p->ngids || !p->gids[ah->grh.sgid_index].valid))
			return EINVAL;
	}
	return 0;
}

static void sv_qp_reset_locked(struct sv_qp *qp)
{
	/* RESET discards queued work without completions */
	qp->sq_head = qp->sq_done = qp->sq_acked = qp->sq_next = 0;
	__atomic_store_n(&qp->sq_tail, 0, __ATOMIC_RELEASE);
	qp->rq_head = qp->rq_tail = 0;
	qp->expect_msn = 0;
	qp->nak_drop = false;
	qp->cur_active = false;
	qp->cur_has_rwqe = false;
	qp->link_dead_ns = 0;
	qp->rnr_until = 0;
	qp->rnr_count = 0;
	qp->wr_count = 0;
	memset(&qp->attr, 0, sizeof(qp->attr));
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	const struct sv_trans *t;
	int cur, next, err;
	bool connect = false, reset = false;

	err = sv_fail("ibv_modify_qp");
	if (err)
		return err;
	pthread_mutex_lock(&qp->lock);
	cur = qp->state;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != (enum ibv_qp_state)cur) {
		err = EINVAL;
		goto out_unlock;
	}
	next = (mask & IBV_QP_STATE) ? (int)a->qp_state : cur;
	if (next < IBV_QPS_RESET || next > IBV_QPS_ERR) {
		err = EINVAL;
		goto out_unlock;
	}
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
		/* always legal, and takes no other attribute */
		if (mask & ~IBV_QP_STATE) {
			err = EINVAL;
			goto out_unlock;
		}
	} else {
		t = &sv_rc_table[cur][next];
		if (!t->ok || (mask & t->req) != t->req ||
		    (mask & ~(t->req | t->opt | IBV_QP_STATE))) {
			err = EINVAL;
			goto out_unlock;
		}
		err = sv_check_values(qp, a, mask);
		if (err)
			goto out_unlock;
	}

	/* accepted: apply */
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = a->ah_attr;
		qp->attr.ah_attr.port_num = qp->attr.port_num;
	}
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;

	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR) {
		sv_qp_to_err(qp, IBV_WC_SUCCESS);
	} else if (next == IBV_QPS_RESET) {
		sv_qp_reset_locked(qp);
		reset = cur != IBV_QPS_RESET;
	}
	connect = cur == IBV_QPS_INIT && next == IBV_QPS_RTR;
	qp->state = next;
	ibqp->state = next;
	pthread_mutex_unlock(&qp->lock);
	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR) {
		/*
		 * Like a NIC's modify to ERR, return only once nothing more lands through the QP:
		 * the NIC thread copies a request's data under ctx->mr_lock with the QP unlocked,
		 * and finds the QP in error when it takes the lock again (the request then neither
		 * completes nor is acknowledged). Taking mr_lock waits for such a copy.
		 */
		pthread_mutex_lock(&qp->ctx->mr_lock);
		pthread_mutex_unlock(&qp->ctx->mr_lock);
	}

	if (reset) {
		pthread_mutex_lock(&qp->ctx->lock);
		sv_qp_detach_conns(qp);
		pthread_mutex_unlock(&qp->ctx->lock);
	}
	if (connect)
		sv_rdv_connect(qp);
	sv_nic_kick(qp->ctx);
	return 0;

out_unlock:
	pthread_mutex_unlock(&qp->lock);
	return err;
}

/*
 * rdma-core's ibv_destroy_qp waits until every async event the application has read for the
 * QP has been acknowledged (ibv_ack_async_event), and blocks forever when one never is; events
 * not read yet are dropped (ibv_get_async_event skips them once the QP is unlinked). softverbs
 * waits too, but for SV_DESTROY_WAIT_MS at most: then it says so on stderr and keeps the QP's
 * memory (the unacknowledged event still points at it). False in that case.
 */
#define SV_DESTROY_WAIT_MS 2000
static bool sv_qp_events_acked(struct sv_qp *qp)
{
	struct ibv_qp *q = &qp->qpx.qp_base;
	struct timespec until;
	bool acked;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += SV_DESTROY_WAIT_MS / 1000;
	pthread_mutex_lock(&q->mutex);
	while (q->events_completed < qp->events_reported &&
	       pthread_cond_timedwait(&q->cond, &q->mutex, &until) == 0)
		;
	acked = q->events_completed >= qp->events_reported;
	pthread_mutex_unlock(&q->mutex);
	if (!acked)
		fprintf(stderr,
			"softverbs[%d]: ibv_destroy_qp(QP %u): %u async event(s) read and never "
			"acknowledged after %d ms; rdma-core would block here forever "
			"(ack them with ibv_ack_async_event before destroying)\n",
			(int)getpid(), q->qp_num, qp->events_reported - q->events_completed,
			SV_DESTROY_WAIT_MS);
	return acked;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	struct sv_ctx *ctx = qp->ctx;
	int err = sv_fail("ibv_destroy_qp");
	bool acked;

	if (err)
		return err;
	/* unlinked first: no event of it is delivered from here on, and no NIC round sees it */
	pthread_mutex_lock(&ctx->lock);
	sv_nic_qp_remove(ctx, qp);
	sv_qp_detach_conns(qp);
	pthread_mutex_unlock(&ctx->lock);
	acked = sv_qp_events_acked(qp);
	sv_rdv_release(qp);
	__atomic_sub_fetch(&qp->pd->refs, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&qp->scq->refs, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&qp->rcq->refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_destroy(&qp->lock);
	if (qp->stage_pinned)
		sv_gpu_host_free(qp->stage); /* no copy reads it: the staging copy is synchronous */
	else
		free(qp->stage);
	free(qp->sq);
	free(qp->rq);
	free(qp->ssge);
	free(qp->rsge);
	free(qp->sinl);
	free(qp->wrb);
	free(qp->wrb_sge);
	free(qp->wrb_inl);
	if (acked) /* else the unacknowledged event still points at it: kept */
		free(qp);
	return 0;
}

/* ---- posting ------------------------------------------------------------------------------ */

static int sv_post_one(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
	struct sv_swqe *w;
	uint64_t len = 0;
	int i;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_READ:
		break;
	default:
		return EINVAL; /* atomics, MW, invalidate, TSO: not emulated */
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (wr->opcode == IBV_WR_RDMA_READ || len > qp->cap.max_inline_data))
		return EINVAL;
	if (qp->sq_tail - qp->sq_head >= qp->sq_size)
		return ENOMEM;

	w = &qp->sq[qp->sq_tail % qp->sq_size];
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->raddr = wr->wr.rdma.remote_addr;
	w->rkey = wr->wr.rdma.rkey;
	w->len = len;
	w->num_sge = (uint32_t)wr->num_sge;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->acked = false;
	w->status = IBV_WC_SUCCESS;
	w->off = 0;
	w->post_ns = 0;
	w->sent_ns = 0;
	w->rate_end_ns = 0;
	w->staged = false;
	w->unstaged = false;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t o = 0;

		/* copied now: the caller may reuse its buffer as soon as we return */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(w->inl + o, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			o += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else if (wr->num_sge) {
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
	}
	__atomic_store_n(&qp->sq_tail, qp->sq_tail + 1, __ATOMIC_RELEASE);
	qp->wr_count++;
	if (qp->state == IBV_QPS_ERR)
		sv_qp_flush_locked(qp);
	return 0;
}

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	int err = 0;

	if (__builtin_expect(sv_fault_any, 0)) {
		err = sv_fault_check("ibv_post_send");
		if (err) {
			*bad = wr;
			return err;
		}
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state < IBV_QPS_RTS) {
		err = EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		err = sv_post_one(qp, wr);
		if (err) {
			*bad = wr;
			break;
		}
	}
out:
	pthread_mutex_unlock(&qp->lock);
	sv_qp_kick(qp);
	if (!sv_nic_inline(qp->ctx, false))
		sv_nic_kick_if_sleeping(qp->ctx);
	return err;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	int err = 0;

	if (__builtin_expect(sv_fault_any, 0)) {
		err = sv_fault_check("ibv_post_recv");
		if (err) {
			*bad = wr;
			return err;
		}
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RESET) {
		err = EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		struct sv_rwqe *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			*bad = wr;
			break;
		}
		if (qp->rq_tail - qp->rq_head >= qp->rq_size) {
			err = ENOMEM;
			*bad = wr;
			break;
		}
		r = &qp->rq[qp->rq_tail % qp->rq_size];
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
		qp->rq_tail++;
		if (qp->state == IBV_QPS_ERR)
			sv_qp_flush_locked(qp);
	}
out:
	pthread_mutex_unlock(&qp->lock);
	return err;
}

/* ---- ibv_qp_ex: the ibv_wr_* API, batched and handed to sv_post_send at wr_complete ------- */

static struct sv_qp *sv_qpx(struct ibv_qp_ex *q)
{
	return sv_container_of(q, struct sv_qp, qpx);
}

static struct ibv_send_wr *sv_wr_new(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
	struct sv_qp *qp = sv_qpx(q);
	struct ibv_send_wr *wr;

	if (qp->wrb_err)
		return NULL;
	if (qp->wrb_n >= qp->wrb_cap) {
		qp->wrb_err = ENOMEM;
		return NULL;
	}
	wr = &qp->wrb[qp->wrb_n++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = q->wr_id;
	wr->send_flags = q->wr_flags;
	wr->opcode = op;
	return wr;
}

static struct ibv_send_wr *sv_wr_last(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = sv_qpx(q);

	if (qp->wrb_err || !qp->wrb_n) {
		if (!qp->wrb_err)
			qp->wrb_err = EINVAL;
		return NULL;
	}
	return &qp->wrb[qp->wrb_n - 1];
}

static void sv_wr_start(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = sv_qpx(q);

	qp->wrb_n = 0;
	qp->wrb_err = 0;
	if (!qp->wrb) {
		qp->wrb_cap = qp->sq_size;
		qp->wrb = calloc(qp->wrb_cap, sizeof(*qp->wrb));
		qp->wrb_sge = calloc((size_t)qp->wrb_cap * SV_MAX_SGE, sizeof(*qp->wrb_sge));
		qp->wrb_inl = qp->cap.max_inline_data
				      ? malloc((size_t)qp->wrb_cap * qp->cap.max_inline_data)
				      : NULL;
		if (!qp->wrb || !qp->wrb_sge || (qp->cap.max_inline_data && !qp->wrb_inl)) {
			free(qp->wrb);
			free(qp->wrb_sge);
			free(qp->wrb_inl);
			qp->wrb = NULL;
			qp->wrb_sge = NULL;
			qp->wrb_inl = NULL;
			qp->wrb_cap = 0;
			qp->wrb_err = ENOMEM;
		}
	}
}

static void sv_wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	struct ibv_send_wr *wr = sv_wr_new(q, IBV_WR_RDMA_WRITE);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = raddr;
	}
}

static void sv_wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *wr = sv_wr_new(q, IBV_WR_RDMA_WRITE_WITH_IMM);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = raddr;
		wr->imm_data = imm;
	}
}

static void sv_wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	struct ibv_send_wr *wr = sv_wr_new(q, IBV_WR_RDMA_READ);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = raddr;
	}
}

static void sv_wr_send(struct ibv_qp_ex *q)
{
	sv_wr_new(q, IBV_WR_SEND);
}

static void sv_wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	struct ibv_send_wr *wr = sv_wr_new(q, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void sv_wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct sv_qp *qp = sv_qpx(q);
	struct ibv_send_wr *wr = sv_wr_last(q);

	if (!wr)
		return;
	if (n > SV_MAX_SGE) {
		qp->wrb_err = EINVAL;
		return;
	}
	wr->sg_list = &qp->wrb_sge[(size_t)(wr - qp->wrb) * SV_MAX_SGE];
	memcpy(wr->sg_list, sg, n * sizeof(*sg));
	wr->num_sge = (int)n;
}

static void sv_wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	sv_wr_set_sge_list(q, 1, &sge);
}

static void sv_wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n,
				       const struct ibv_data_buf *bufs)
{
	struct sv_qp *qp = sv_qpx(q);
	struct ibv_send_wr *wr = sv_wr_last(q);
	size_t total = 0, i;
	char *dst;

	if (!wr)
		return;
	for (i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > qp->cap.max_inline_data) {
		qp->wrb_err = EINVAL;
		return;
	}
	dst = qp->wrb_inl ? qp->wrb_inl + (size_t)(wr - qp->wrb) * qp->cap.max_inline_data : NULL;
	for (i = 0, total = 0; i < n; i++) {
		memcpy(dst + total, bufs[i].addr, bufs[i].length);
		total += bufs[i].length;
	}
	wr->sg_list = &qp->wrb_sge[(size_t)(wr - qp->wrb) * SV_MAX_SGE];
	wr->sg_list[0].addr = (uintptr_t)dst;
	wr->sg_list[0].length = (uint32_t)total;
	wr->sg_list[0].lkey = 0;
	wr->num_sge = total ? 1 : 0;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void sv_wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	sv_wr_set_inline_data_list(q, 1, &b);
}

static int sv_wr_complete(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = sv_qpx(q);
	struct ibv_send_wr *bad;
	uint32_t i;
	int err = qp->wrb_err;

	if (!err && qp->wrb_n) {
		for (i = 0; i + 1 < qp->wrb_n; i++)
			qp->wrb[i].next = &qp->wrb[i + 1];
		qp->wrb[qp->wrb_n - 1].next = NULL;
		err = sv_post_send(&q->qp_base, qp->wrb, &bad);
	}
	qp->wrb_n = 0;
	qp->wrb_err = 0;
	return err;
}

static void sv_wr_abort(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = sv_qpx(q);

	qp->wrb_n = 0;
	qp->wrb_err = 0;
}

/* Not emulated: the WR fails at wr_complete with EOPNOTSUPP. */
static void sv_wr_unsup(struct ibv_qp_ex *q)
{
	sv_qpx(q)->wrb_err = EOPNOTSUPP;
}

static void sv_wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
				 uint64_t compare, uint64_t swap)
{
	sv_wr_unsup(q);
}

static void sv_wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	sv_wr_unsup(q);
}

static void sv_wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
			  const struct ibv_mw_bind_info *info)
{
	sv_wr_unsup(q);
}

static void sv_wr_key(struct ibv_qp_ex *q, uint32_t key)
{
	sv_wr_unsup(q);
}

static void sv_wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	sv_wr_unsup(q);
}

static void sv_wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	sv_wr_unsup(q);
}

static void sv_wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, const void *data)
{
	sv_wr_unsup(q);
}

static void sv_qpx_init(struct sv_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	x->wr_atomic_cmp_swp = sv_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = sv_wr_atomic_fetch_add;
	x->wr_bind_mw = sv_wr_bind_mw;
	x->wr_local_inv = sv_wr_key;
	x->wr_rdma_read = sv_wr_rdma_read;
	x->wr_rdma_write = sv_wr_rdma_write;
	x->wr_rdma_write_imm = sv_wr_rdma_write_imm;
	x->wr_send = sv_wr_send;
	x->wr_send_imm = sv_wr_send_imm;
	x->wr_send_inv = sv_wr_key;
	x->wr_send_tso = sv_wr_send_tso;
	x->wr_set_ud_addr = sv_wr_set_ud_addr;
	x->wr_set_xrc_srqn = sv_wr_key;
	x->wr_set_inline_data = sv_wr_set_inline_data;
	x->wr_set_inline_data_list = sv_wr_set_inline_data_list;
	x->wr_set_sge = sv_wr_set_sge;
	x->wr_set_sge_list = sv_wr_set_sge_list;
	x->wr_start = sv_wr_start;
	x->wr_complete = sv_wr_complete;
	x->wr_abort = sv_wr_abort;
	x->wr_atomic_write = sv_wr_atomic_write;
}

/* ---- ECE, ordering ------------------------------------------------------------------------- */

#define SV_ECE_VENDOR 0x5356 /* "SV" */

SV_EXPORT int ibv_query_ece(struct ibv_qp *ibqp, struct ibv_ece *ece)
{
	struct sv_qp *qp = sv_qp_of(ibqp);

	pthread_mutex_lock(&qp->lock);
	if (qp->ece_set) {
		*ece = qp->ece;
	} else {
		ece->vendor_id = SV_ECE_VENDOR;
		ece->options = 0;
		ece->comp_mask = 0;
	}
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

SV_EXPORT int ibv_set_ece(struct ibv_qp *ibqp, struct ibv_ece *ece)
{
	struct sv_qp *qp = sv_qp_of(ibqp);

	if (!ece->vendor_id) {
		errno = EOPNOTSUPP;
		return EOPNOTSUPP;
	}
	if (ece->vendor_id != SV_ECE_VENDOR || ece->comp_mask) {
		errno = EINVAL;
		return EINVAL;
	}
	pthread_mutex_lock(&qp->lock);
	qp->ece = *ece;
	qp->ece_set = true;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	/* no placement-order guarantee is promised to the application */
	return 0;
}
