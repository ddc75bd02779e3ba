// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs under concurrency: two processes, four QP pairs over two devices and two ports,
 * two application threads per process each owning two QPs and one CQ, traffic in both
 * directions at once. A sender writes message k (random size) into one of four slots of its
 * peer, then signals it with a zero-length WRITE_WITH_IMM(k); the receiver checks every byte
 * and returns a credit with SEND_WITH_IMM. Catches lost, reordered or torn data, deadlocks
 * between application threads and the NIC, and completion accounting errors.
 */
#include "sv_test.h"

#include <pthread.h>
#include <unistd.h>

#define NQP 4
#define SLOTS 4
#define SLOT (128 * 1024)
#define NMSG 400
#define CREDIT 0x80000000u

static int nrecv = 24; /* receives kept posted per QP; few means RNR retries */

struct qpst {
	struct sv_ep *ep; /* shares ctx/pd/cq of its thread's endpoint */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf; /* [0, SLOTS*SLOT): receive slots; then source slots */
	struct sv_ep_info peer;
	int credits;
	uint32_t next_send, next_recv, acked;
};

struct thr {
	struct sv_ep ep;
	struct qpst q[2];
	int side, idx;
};

static uint32_t msg_size(uint32_t k, int qi)
{
	uint32_t h = (k + 1) * 2654435761u ^ (uint32_t)qi * 40503u;

	return 1 + h % SLOT;
}

static char pat(uint32_t k, int qi, size_t i)
{
	return (char)(k * 31 + (uint32_t)qi * 7 + i + (i >> 9));
}

static void post_recv_q(struct qpst *q, uint64_t id)
{
	struct ibv_recv_wr wr = { .wr_id = id, .num_sge = 0 }, *bad;

	CHECK(ibv_post_recv(q->qp, &wr, &bad) == 0);
}

static void send_msg(struct qpst *q, int qi, uint32_t k)
{
	uint32_t n = msg_size(k, qi);
	char *src = q->buf + (size_t)(SLOTS + k % SLOTS) * SLOT;
	struct ibv_sge sge = { (uintptr_t)src, n, q->mr->lkey };
	struct ibv_send_wr w[2], *bad;

	for (uint32_t i = 0; i < n; i++)
		src[i] = pat(k, qi, i);
	memset(w, 0, sizeof(w));
	w[0].wr_id = k;
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[0].opcode = IBV_WR_RDMA_WRITE;
	w[0].wr.rdma.remote_addr = q->peer.addr + (size_t)(k % SLOTS) * SLOT;
	w[0].wr.rdma.rkey = q->peer.rkey;
	w[0].next = &w[1];
	w[1].wr_id = k;
	w[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	w[1].imm_data = htobe32(k);
	w[1].send_flags = IBV_SEND_SIGNALED;
	w[1].wr.rdma.remote_addr = q->peer.addr;
	w[1].wr.rdma.rkey = q->peer.rkey;
	CHECK(ibv_post_send(q->qp, w, &bad) == 0);
}

static void send_credit(struct qpst *q, uint32_t k)
{
	struct ibv_send_wr w = { .wr_id = CREDIT | k,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htobe32(CREDIT | k) },
			   *bad;

	CHECK(ibv_post_send(q->qp, &w, &bad) == 0);
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	int done = 0;

	while (done < 2) {
		struct ibv_wc wc[8];
		int n, i, j;

		for (j = 0; j < 2; j++) {
			struct qpst *q = &t->q[j];
			int qi = t->idx * 2 + j;

			while (q->credits > 0 && q->next_send < NMSG) {
				send_msg(q, qi, q->next_send++);
				q->credits--;
			}
		}
		n = ibv_poll_cq(t->ep.cq, 8, wc);
		CHECK(n >= 0);
		for (i = 0; i < n; i++) {
			struct qpst *q = NULL;

			CHECK_WC(wc[i], IBV_WC_SUCCESS);
			for (j = 0; j < 2; j++)
				if (t->q[j].qp->qp_num == wc[i].qp_num)
					q = &t->q[j];
			CHECK(q);
			j = (int)(q - t->q);
			if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
				uint32_t k = be32toh(wc[i].imm_data), sz;
				const char *d;
				int qi = t->idx * 2 + j;

				/* the peer's QP index mirrors ours */
				CHECK_EQ(k, q->next_recv);
				q->next_recv++;
				sz = msg_size(k, qi);
				d = q->buf + (size_t)(k % SLOTS) * SLOT;
				for (uint32_t b = 0; b < sz; b++)
					if (d[b] != pat(k, qi, b)) {
						fprintf(stderr, "qp %d msg %u byte %u wrong\n", qi,
							k, b);
						exit(1);
					}
				post_recv_q(q, 0);
				send_credit(q, k);
			} else if (wc[i].opcode == IBV_WC_RECV) {
				CHECK(wc[i].wc_flags & IBV_WC_WITH_IMM);
				CHECK(be32toh(wc[i].imm_data) & CREDIT);
				q->credits++;
				q->acked++;
				post_recv_q(q, 0);
			}
		}
		done = 0;
		for (j = 0; j < 2; j++)
			done += t->q[j].acked == NMSG && t->q[j].next_recv == NMSG;
	}
	return NULL;
}

static void body(int side, int fd, void *arg)
{
	struct thr t[2];
	struct sv_ep_info me[NQP], peer[NQP];
	pthread_t th[2];
	int i, j;

	memset(t, 0, sizeof(t));
	for (i = 0; i < 2; i++) {
		struct sv_ep_opts o = { .dev = i ? "svdev1" : "svdev0",
					.len = 4096,
					.max_send_wr = 64,
					.max_recv_wr = 32 };

		t[i].side = side;
		t[i].idx = i;
		sv_ep_open(&t[i].ep, &o); /* its QP is unused: we make our own */
		for (j = 0; j < 2; j++) {
			struct qpst *q = &t[i].q[j];
			struct ibv_qp_init_attr a = { .send_cq = t[i].ep.cq,
						      .recv_cq = t[i].ep.cq,
						      .qp_type = IBV_QPT_RC,
						      .cap = { 64, 32, 1, 1, 0 } };

			q->ep = &t[i].ep;
			q->buf = aligned_alloc(4096, 2 * SLOTS * SLOT);
			CHECK(q->buf);
			q->mr = ibv_reg_mr(t[i].ep.pd, q->buf, 2 * SLOTS * SLOT,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
			CHECK(q->mr);
			q->qp = ibv_create_qp(t[i].ep.pd, &a);
			CHECK(q->qp);
			q->credits = SLOTS;
			me[i * 2 + j] = (struct sv_ep_info){ .qpn = q->qp->qp_num,
							     .rkey = q->mr->rkey,
							     .addr = (uintptr_t)q->buf };
		}
	}
	/* port j+1 of each device; GID index 1 of that port */
	for (i = 0; i < NQP; i++) {
		struct ibv_context *c = t[i / 2].ep.ctx;

		CHECK(ibv_query_gid(c, (uint8_t)(i % 2 + 1), 1, &me[i].gid) == 0);
	}
	sv_xchg(fd, me, peer, sizeof(me));
	for (i = 0; i < NQP; i++) {
		struct qpst *q = &t[i / 2].q[i % 2];
		struct sv_ep tmp = t[i / 2].ep;
		struct sv_ep_opts o = { 0 };

		q->peer = peer[i];
		tmp.qp = q->qp;
		tmp.port = i % 2 + 1;
		tmp.gid_index = 1;
		sv_ep_connect(&tmp, &o, &peer[i]);
		for (j = 0; j < nrecv; j++)
			post_recv_q(q, 0);
	}
	sv_barrier(fd);
	for (i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, thr_main, &t[i]) == 0);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	sv_barrier(fd);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 2; j++) {
			CHECK(ibv_destroy_qp(t[i].q[j].qp) == 0);
			CHECK(ibv_dereg_mr(t[i].q[j].mr) == 0);
			free(t[i].q[j].buf);
		}
		sv_ep_close(&t[i].ep);
	}
}

static void t_bidir(void)
{
	sv_run2(body, NULL, 120);
}

/* one receive per QP: messages and credits race for it, RNR NAKs and Go-Back-N everywhere */
static void t_bidir_rnr(void)
{
	nrecv = 1;
	sv_run2(body, NULL, 120);
}

static const struct sv_case cases[] = {
	{ "bidir", t_bidir },
	{ "bidir_rnr", t_bidir_rnr },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	sv_test_view(2, 2, 100, NULL);
	return sv_test_main(argc, argv, cases);
}
