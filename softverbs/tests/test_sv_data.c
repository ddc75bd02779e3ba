// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs data path between two processes: RDMA WRITE, WRITE_WITH_IMM, READ, SEND,
 * SEND_WITH_IMM, inline, SGE lists, signaled/unsignaled, the ibv_wr_* API, completion channels
 * and large multi-chunk transfers, each checking bytes and every CQE field; two QPs of one
 * context linked in memory. Run by ctest once on the one-copy path and once with
 * SOFTVERBS_VM=off (stream path).
 */
#include "sv_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(seed + i * 7 + (i >> 8));
}

static void check_fill(const char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(seed + i * 7 + (i >> 8))) {
			fprintf(stderr, "byte %zu: 0x%02x, want 0x%02x\n", i, (unsigned char)p[i],
				(unsigned char)(seed + i * 7 + (i >> 8)));
			exit(1);
		}
}

static void write_body(int side, int fd, void *arg)
{
	size_t len = arg ? *(size_t *)arg : 65536;
	struct sv_ep_opts o = { .len = len * 2 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		fill(ep.buf, len, 3);
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 42, 0, len, &peer, len, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 42);
		CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
		CHECK_EQ(wc.qp_num, ep.qp->qp_num);
		sv_barrier(fd);
	} else {
		sv_barrier(fd);
		check_fill(ep.buf + len, len, 3);
		CHECK_EQ(ibv_poll_cq(ep.cq, 1, &wc), 0); /* plain WRITE: nothing here */
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_write(void)
{
	sv_run2(write_body, NULL, 30);
}

static void t_write_large(void)
{
	size_t len = 6u << 20; /* several stream chunks, several vm iovec rounds */

	sv_run2(write_body, &len, 60);
}

static void write_imm_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[4];

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1) {
		struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = NULL, .num_sge = 0 }, *bad;

		/* NCCL style: receives without a scatter list */
		CHECK(ibv_post_recv(ep.qp, &wr, &bad) == 0);
		wr.wr_id = 8;
		CHECK(ibv_post_recv(ep.qp, &wr, &bad) == 0);
	}
	sv_barrier(fd);
	if (side == 0) {
		fill(ep.buf, 4096, 9);
		/* unsignaled write, then a signaled write-with-imm: one CQE, data ordered */
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 1, 0, 4096, &peer, 8192, 0, 0);
		sv_post_write(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0, 100, &peer, 0,
			      IBV_SEND_SIGNALED, 0xdeadbeef);
		sv_post_write(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 3, 0, 0, &peer, 0, IBV_SEND_SIGNALED,
			      5); /* zero length is legal */
		CHECK_EQ(sv_poll(ep.cq, wc, 2, 10000), 2);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 2);
		CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
		CHECK_EQ(wc[1].wr_id, 3);
	} else {
		CHECK_EQ(sv_poll(ep.cq, wc, 2, 10000), 2);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 7);
		CHECK_EQ(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK(wc[0].wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(wc[0].imm_data, htobe32(0xdeadbeef));
		CHECK_EQ(wc[0].byte_len, 100);
		CHECK_EQ(wc[0].qp_num, ep.qp->qp_num);
		CHECK_EQ(wc[0].src_qp, peer.qpn);
		check_fill(ep.buf + 8192, 4096, 9); /* the earlier unsignaled write landed */
		check_fill(ep.buf, 100, 9);
		CHECK_EQ(wc[1].wr_id, 8);
		CHECK_EQ(wc[1].byte_len, 0);
		CHECK_EQ(wc[1].imm_data, htobe32(5));
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_write_imm(void)
{
	sv_run2(write_imm_body, NULL, 30);
}

static void read_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1)
		fill(ep.buf + 4096, 300000, 11);
	sv_barrier(fd);
	if (side == 0) {
		sv_post_write(&ep, IBV_WR_RDMA_READ, 77, 1000, 300000, &peer, 4096,
			      IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 77);
		CHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
		CHECK_EQ(wc.byte_len, 300000);
		check_fill(ep.buf + 1000, 300000, 11);
	}
	sv_barrier(fd);
	if (side == 1)
		CHECK_EQ(ibv_poll_cq(ep.cq, 1, &wc), 0);
	sv_ep_close(&ep);
}

static void t_read(void)
{
	sv_run2(read_body, NULL, 30);
}

static void send_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .max_inline = 256 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[4];

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1) {
		/* a receive with a 3-element scatter list */
		struct ibv_sge sg[3] = {
			{ (uintptr_t)ep.buf + 0, 10, ep.mr->lkey },
			{ (uintptr_t)ep.buf + 1000, 20, ep.mr->lkey },
			{ (uintptr_t)ep.buf + 5000, 100000, ep.mr->lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = 100, .sg_list = sg, .num_sge = 3 }, *bad;

		CHECK(ibv_post_recv(ep.qp, &wr, &bad) == 0);
		sv_post_recv(&ep, 101, 200000, 4096);
		sv_post_recv(&ep, 102, 300000, 4096);
	}
	sv_barrier(fd);
	if (side == 0) {
		struct ibv_sge sg[2] = {
			{ (uintptr_t)ep.buf + 0, 15, ep.mr->lkey },
			{ (uintptr_t)ep.buf + 20000, 50000, ep.mr->lkey },
		};
		struct ibv_send_wr wr = { .wr_id = 1,
					  .sg_list = sg,
					  .num_sge = 2,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		char msg[200];

		fill(ep.buf, 15, 1);
		fill(ep.buf + 20000, 50000, 2);
		CHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
		sv_post_write(&ep, IBV_WR_SEND_WITH_IMM, 2, 400000, 64, NULL, 0, IBV_SEND_SIGNALED,
			      0x1234);
		/* inline: the buffer is reusable as soon as post returns */
		memset(msg, 'i', sizeof(msg));
		{
			struct ibv_sge s = { (uintptr_t)msg, sizeof(msg), 0 };
			struct ibv_send_wr w = { .wr_id = 3,
						 .sg_list = &s,
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND,
						 .send_flags =
							 IBV_SEND_SIGNALED | IBV_SEND_INLINE };

			CHECK(ibv_post_send(ep.qp, &w, &bad) == 0);
			memset(msg, 'X', sizeof(msg));
		}
		CHECK_EQ(sv_poll(ep.cq, wc, 3, 10000), 3);
		for (int i = 0; i < 3; i++) {
			CHECK_WC(wc[i], IBV_WC_SUCCESS);
			CHECK_EQ(wc[i].wr_id, i + 1);
			CHECK_EQ(wc[i].opcode, IBV_WC_SEND);
		}
	} else {
		CHECK_EQ(sv_poll(ep.cq, wc, 3, 10000), 3);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 100);
		CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
		CHECK_EQ(wc[0].byte_len, 50015);
		CHECK(!(wc[0].wc_flags & IBV_WC_WITH_IMM));
		/* 15 + 50000 bytes scattered over 10 / 20 / 100000 */
		{
			char *exp = malloc(50015);

			fill(exp, 15, 1);
			fill(exp + 15, 50000, 2);
			CHECK(!memcmp(ep.buf, exp, 10));
			CHECK(!memcmp(ep.buf + 1000, exp + 10, 20));
			CHECK(!memcmp(ep.buf + 5000, exp + 30, 50015 - 30));
			free(exp);
		}
		CHECK_EQ(wc[1].wr_id, 101);
		CHECK(wc[1].wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(wc[1].imm_data, htobe32(0x1234));
		CHECK_EQ(wc[1].byte_len, 64);
		CHECK_EQ(wc[2].wr_id, 102);
		CHECK_EQ(wc[2].byte_len, 200);
		for (int i = 0; i < 200; i++)
			CHECK_EQ(ep.buf[300000 + i], 'i');
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_send(void)
{
	sv_run2(send_body, NULL, 30);
}

/* Many unsignaled writes with a periodic signaled one; completions in order. */
static void unsig_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .max_send_wr = 16 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;
	int i, got = 0;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		for (i = 0; i < 1600; i++) {
			int sig = (i % 8) == 7;

			sv_post_write(&ep, IBV_WR_RDMA_WRITE, (uint64_t)i, (size_t)(i % 64) * 1024,
				      1024, &peer, (size_t)(i % 64) * 1024,
				      sig ? IBV_SEND_SIGNALED : 0, 0);
			if (sig) {
				CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
				CHECK_WC(wc, IBV_WC_SUCCESS);
				CHECK_EQ(wc.wr_id, i);
				got++;
			}
		}
		CHECK_EQ(got, 200);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_unsignaled(void)
{
	sv_run2(unsig_body, NULL, 60);
}

/* The unsignaled WRs keep their SQ slots until a signaled completion: a full SQ is ENOMEM. */
static void sq_full_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .max_send_wr = 4 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int i;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		for (i = 0; i < 4; i++)
			sv_post_write(&ep, IBV_WR_RDMA_WRITE, (uint64_t)i, 0, 8, &peer, 0, 0, 0);
		usleep(100000);
		sge = (struct ibv_sge){ (uintptr_t)ep.buf, 8, ep.mr->lkey };
		wr = (struct ibv_send_wr){
			.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE
		};
		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		CHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), ENOMEM);
		CHECK(bad == &wr);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_sq_full(void)
{
	sv_run2(sq_full_body, NULL, 30);
}

static void wr_api_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .qp_ex = true, .max_inline = 128 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[4];

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1)
		sv_post_recv(&ep, 55, 0, 4096);
	sv_barrier(fd);
	if (side == 0) {
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(ep.qp);
		char inl[100];

		CHECK(qx);
		fill(ep.buf, 8192, 21);
		memset(inl, 'q', sizeof(inl));
		ibv_wr_start(qx);
		qx->wr_id = 1;
		qx->wr_flags = 0;
		ibv_wr_rdma_write(qx, peer.rkey, peer.addr + 65536);
		ibv_wr_set_sge(qx, ep.mr->lkey, (uintptr_t)ep.buf, 8192);
		qx->wr_id = 2;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write_imm(qx, peer.rkey, peer.addr + 131072, htobe32(99));
		ibv_wr_set_inline_data(qx, inl, sizeof(inl));
		CHECK_EQ(ibv_wr_complete(qx), 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 10000), 1);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 2);
		/* read it back with the wr API */
		ibv_wr_start(qx);
		qx->wr_id = 3;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(qx, peer.rkey, peer.addr + 65536);
		ibv_wr_set_sge(qx, ep.mr->lkey, (uintptr_t)ep.buf + 262144, 8192);
		CHECK_EQ(ibv_wr_complete(qx), 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 10000), 1);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
		check_fill(ep.buf + 262144, 8192, 21);
		/* unsupported ops fail at wr_complete, nothing is posted */
		ibv_wr_start(qx);
		ibv_wr_atomic_fetch_add(qx, peer.rkey, peer.addr, 1);
		CHECK_EQ(ibv_wr_complete(qx), EOPNOTSUPP);
		/* abort drops the batch */
		ibv_wr_start(qx);
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, ep.mr->lkey, (uintptr_t)ep.buf, 16);
		ibv_wr_abort(qx);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 200), 0);
	} else {
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 10000), 1);
		CHECK_WC(wc[0], IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 55);
		CHECK_EQ(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(wc[0].imm_data, htobe32(99));
		check_fill(ep.buf + 65536, 8192, 21);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(ep.buf[131072 + i], 'q');
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_wr_api(void)
{
	sv_run2(wr_api_body, NULL, 30);
}

static void channel_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .channel = true };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1) {
		struct ibv_cq *cq;
		void *cqctx;
		struct pollfd pfd = { .fd = ep.ch->fd, .events = POLLIN };

		sv_post_recv(&ep, 5, 0, 64);
		CHECK(ibv_req_notify_cq(ep.cq, 0) == 0);
		sv_barrier(fd);
		CHECK_EQ(poll(&pfd, 1, 10000), 1);
		CHECK(ibv_get_cq_event(ep.ch, &cq, &cqctx) == 0);
		CHECK(cq == ep.cq);
		CHECK(cqctx == &ep);
		ibv_ack_cq_events(cq, 1);
		CHECK_EQ(ibv_poll_cq(ep.cq, 1, &wc), 1);
		CHECK_EQ(wc.wr_id, 5);
		/* not re-armed: no second event */
		sv_post_recv(&ep, 6, 0, 64);
		sv_barrier(fd);
		usleep(100000);
		pfd.revents = 0;
		CHECK_EQ(poll(&pfd, 1, 0), 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 5000), 1);
		CHECK_EQ(ibv_destroy_comp_channel(ep.ch), EBUSY); /* CQ still attached */
	} else {
		sv_barrier(fd);
		sv_post_write(&ep, IBV_WR_SEND, 1, 0, 64, NULL, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
		sv_barrier(fd);
		sv_post_write(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0, 64, &peer, 0, 0, 0);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_channel(void)
{
	sv_run2(channel_body, NULL, 30);
}

/* A QP connected to itself (NCCL's GPU-flush loopback READ). */
static void t_loopback(void)
{
	struct sv_ep ep;
	struct sv_ep_info me;
	struct ibv_wc wc;

	sv_ep_open(&ep, NULL);
	sv_ep_info(&ep, &me);
	sv_ep_connect(&ep, NULL, &me);
	fill(ep.buf, 4096, 5);
	sv_post_write(&ep, IBV_WR_RDMA_READ, 1, 8192, 4096, &me, 0, IBV_SEND_SIGNALED, 0);
	CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	check_fill(ep.buf + 8192, 4096, 5);
	sv_ep_close(&ep);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	CHECK(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/*
 * Two QPs of one context (loopback on one device) are linked in memory: connecting them opens
 * no descriptor; a 600 KiB WRITE and a READ back move byte for byte (on the stream path the
 * receiving buffer grows past its first 16 KiB and the writer waits for room); when one QP is
 * destroyed, the other's next WRITE ends in RETRY_EXC_ERR, as after a socket's EOF.
 */
static void t_loop_pair(void)
{
	struct sv_ep_opts o = { .len = 4u << 20 }; /* default timeouts: the error in 4.3 s */
	struct sv_ep a, b;
	struct sv_ep_info ia, ib;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64,
						.max_recv_wr = 64,
						.max_send_sge = 4,
						.max_recv_sge = 4 } };
	struct ibv_wc wc;
	int fds;

	sv_ep_open(&a, &o);
	b = a;
	qa.send_cq = qa.recv_cq = a.cq;
	b.qp = ibv_create_qp(a.pd, &qa);
	CHECK(b.qp);
	sv_ep_info(&a, &ia);
	sv_ep_info(&b, &ib);
	fds = open_fds();
	sv_ep_connect(&a, &o, &ib);
	sv_ep_connect(&b, &o, &ia);
	CHECK_EQ(open_fds(), fds);
	fill(a.buf, 600 * 1024, 21);
	sv_post_write(&a, IBV_WR_RDMA_WRITE, 1, 0, 600 * 1024, &ib, 1u << 20, IBV_SEND_SIGNALED, 0);
	CHECK_EQ(sv_poll(a.cq, &wc, 1, 10000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	check_fill(a.buf + (1u << 20), 600 * 1024, 21);
	sv_post_write(&b, IBV_WR_RDMA_READ, 2, 2u << 20, 600 * 1024, &ia, 0, IBV_SEND_SIGNALED, 0);
	CHECK_EQ(sv_poll(b.cq, &wc, 1, 10000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	check_fill(a.buf + (2u << 20), 600 * 1024, 21);
	CHECK_EQ(ibv_destroy_qp(b.qp), 0);
	sv_post_write(&a, IBV_WR_RDMA_WRITE, 3, 0, 4096, &ib, 0, IBV_SEND_SIGNALED, 0);
	CHECK_EQ(sv_poll(a.cq, &wc, 1, 10000), 1);
	CHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
	sv_ep_close(&a);
}

/*
 * A fork while links are up (system(), a data loader's workers): the child holds every socket
 * until it exits, so closing one does not take it out of the NIC's epoll set; the NIC must
 * not hear of a link it freed. Two devices of this process, linked by a socket, 20 rounds of:
 * connect, one WRITE each way, fork a child that only sleeps, destroy both QPs (their links
 * hang up, are reaped and freed) and wait a little for the events. ASan reports a use after
 * free; without it, a stale link tends to crash the NIC thread.
 */
static void t_fork_close(void)
{
	for (int round = 0; round < 20; round++) {
		struct sv_ep_opts oa = { .dev = "svdev0" }, ob = { .dev = "svdev1" };
		struct sv_ep a, b;
		struct sv_ep_info ia, ib;
		struct ibv_wc wc;
		pid_t child;
		int st;

		sv_ep_open(&a, &oa);
		sv_ep_open(&b, &ob);
		sv_ep_info(&a, &ia);
		sv_ep_info(&b, &ib);
		sv_ep_connect(&a, &oa, &ib);
		sv_ep_connect(&b, &ob, &ia);
		sv_post_write(&a, IBV_WR_RDMA_WRITE, 1, 0, 4096, &ib, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(a.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		sv_post_write(&b, IBV_WR_RDMA_WRITE, 2, 0, 4096, &ia, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(b.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		child = fork();
		CHECK(child >= 0);
		if (child == 0) {
			usleep(100 * 1000);
			_exit(0);
		}
		CHECK_EQ(ibv_destroy_qp(a.qp), 0);
		CHECK_EQ(ibv_destroy_qp(b.qp), 0);
		a.qp = b.qp = NULL;
		usleep(20 * 1000); /* the NIC threads reap the links and hear the hang-ups */
		sv_ep_close(&a);
		sv_ep_close(&b);
		CHECK_EQ(waitpid(child, &st, 0), child);
	}
}

/* The extended CQ: start/next/end_poll and the read_* accessors. */
static void t_cq_ex(void)
{
	struct sv_ep ep;
	struct sv_ep_info me;
	struct ibv_cq_init_attr_ex cx = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *x;
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	int got = 0, rc;

	sv_ep_open(&ep, NULL);
	x = ibv_create_cq_ex(ep.ctx, &cx);
	CHECK(x);
	ia = (struct ibv_qp_init_attr){ .send_cq = ibv_cq_ex_to_cq(x),
					.recv_cq = ibv_cq_ex_to_cq(x),
					.qp_type = IBV_QPT_RC,
					.cap = { 8, 8, 1, 1, 0 } };
	qp = ibv_create_qp(ep.pd, &ia);
	CHECK(qp);
	CHECK_EQ(ibv_destroy_qp(ep.qp), 0);
	ep.qp = qp;
	sv_ep_info(&ep, &me);
	sv_ep_connect(&ep, NULL, &me);
	sv_post_recv(&ep, 10, 0, 0);
	sv_post_write(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 11, 0, 512, &me, 4096, IBV_SEND_SIGNALED,
		      0x77);
	for (int spin = 0; got < 2 && spin < 200000; spin++) {
		rc = ibv_start_poll(x, &pa);
		if (rc == ENOENT) {
			usleep(10);
			continue;
		}
		CHECK_EQ(rc, 0);
		do {
			CHECK_EQ(x->status, IBV_WC_SUCCESS);
			CHECK_EQ(ibv_wc_read_qp_num(x), qp->qp_num);
			if (x->wr_id == 10) {
				CHECK_EQ(ibv_wc_read_opcode(x), IBV_WC_RECV_RDMA_WITH_IMM);
				CHECK_EQ(ibv_wc_read_imm_data(x), htobe32(0x77));
				CHECK_EQ(ibv_wc_read_byte_len(x), 512);
				CHECK(ibv_wc_read_wc_flags(x) & IBV_WC_WITH_IMM);
				CHECK_EQ(ibv_wc_read_src_qp(x), qp->qp_num);
			} else {
				CHECK_EQ(x->wr_id, 11);
				CHECK_EQ(ibv_wc_read_opcode(x), IBV_WC_RDMA_WRITE);
			}
			got++;
		} while (ibv_next_poll(x) == 0);
		ibv_end_poll(x);
	}
	CHECK_EQ(got, 2);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	ep.qp = NULL;
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(x)), 0);
	sv_ep_close(&ep);
}

/* Two ports of one device: both carry traffic. */
static void twoport_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .port = 2 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 1, 0, 4096, &peer, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_two_ports(void)
{
	sv_run2(twoport_body, NULL, 30);
}

static const struct sv_case cases[] = {
	{ "write", t_write },
	{ "write_large", t_write_large },
	{ "write_imm", t_write_imm },
	{ "read", t_read },
	{ "send", t_send },
	{ "unsignaled", t_unsignaled },
	{ "sq_full", t_sq_full },
	{ "wr_api", t_wr_api },
	{ "channel", t_channel },
	{ "loopback", t_loopback },
	{ "loop_pair", t_loop_pair },
	{ "two_ports", t_two_ports },
	{ "cq_ex", t_cq_ex },
	{ "fork_close", t_fork_close },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	sv_test_view(2, 2, 100, NULL);
	return sv_test_main(argc, argv, cases);
}
