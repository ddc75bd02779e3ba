// SPDX-License-Identifier: Apache-2.0
/*
 * Tests of src/qp.c over softverbs, in one process: a minimal pod view (sv-mkview: svdev0 and
 * svdev1, two RoCE v2 ports each; svdev1 port 1 rewritten to MTU 1024) and two QP sets on the
 * two devices connected to each other, driven with GID index 1 given explicitly rather than
 * through discovery (the view's GIDs are not addresses of this network namespace, and the GID
 * rule is discovery's business, tested elsewhere). Checked: states and attributes after
 * connect, RDMA WRITE + WRITE_WITH_IMM through rn_verbs()->post_send landing with the imm
 * completion, striping, MTU negotiation, refusal of a peer's bad info, the self-connected flush
 * QP's 1-byte RDMA READ, and 1,000 create/connect/destroy cycles without fd growth. Run with
 * argument "fault" (ctest test_qp_fault, SOFTVERBS_FAIL=ibv_create_qp:3:ENOMEM): a failing
 * create unwinds everything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "railnet/log.h"
#include "railnet/qp.h"
#include "railnet/verbs.h"
#include "rn_test.h"
#include "rn_test_sv.h"

#define GID_INDEX 1 /* sv-mkview: RoCE v2, IPv4-mapped */
#define BUF_LEN 8192

static char view_dir[256];
static struct ibv_context *ctx[2];
static struct rn_qp_port qport[2][2]; /* [device][port index] */

/* svdev1 port 1 gets MTU 1024, so the first rail negotiates down. */
static int patch_mtu(void)
{
	static const char key[] = "port svdev1 1 mtu=4096";
	char path[512], buf[8192], *at;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/softverbs/config", view_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	at = strstr(buf, key);
	if (!at)
		return -1;
	memcpy(at + strlen(key) - 4, "1024", 4);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(buf, f);
	return fclose(f) ? -1 : 0;
}

/* The view, softverbs loaded, both devices open and their ports described. */
static int setup(void **state)
{
	int d, p;

	(void)state;
	if (rn_test_sv_mkview("qp", 2, 2, 100, view_dir, sizeof(view_dir)) || patch_mtu())
		return -1;
	rn_test_log_capture();
	if (rn_test_sv_open(view_dir, 2, ctx))
		return -1;
	for (d = 0; d < 2; d++) {
		char name[16];

		snprintf(name, sizeof(name), "svdev%d", d);
		for (p = 0; p < 2; p++)
			if (rn_qp_port_query(ctx[d], name, p + 1, GID_INDEX, &qport[d][p]))
				return -1;
	}
	return rn_test_log.warns ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	rn_test_sv_close(2, ctx);
	return 0;
}

static struct rn_qp_attr test_attr(void)
{
	struct rn_qp_attr a = { .pkey_index = 0, .timeout = 14, .retry_cnt = 7, .sl = 3, .tc = 96 };

	return a;
}

/* A: sender on svdev0, B: receiver (with flush QPs) on svdev1; nports ports each. */
static void make_pair(int nports, int per_port, struct rn_qp_set **a, struct rn_qp_set **b,
		      bool connect)
{
	struct rn_qp_params p = { .attr = test_attr() };
	struct rn_qp_info ia, ib;

	assert_int_equal(rn_qp_count(nports, nports, per_port, &p.nqps), 0);
	p.role = RN_QP_ROLE_SEND;
	assert_int_equal(rn_qp_set_create(qport[0], nports, &p, a), 0);
	p.role = RN_QP_ROLE_RECV;
	p.flush = true;
	assert_int_equal(rn_qp_set_create(qport[1], nports, &p, b), 0);
	if (!connect)
		return;
	rn_qp_set_info(*a, &ia);
	rn_qp_set_info(*b, &ib);
	assert_int_equal(rn_qp_set_connect(*a, &ib), 0);
	assert_int_equal(rn_qp_set_connect(*b, &ia), 0);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = rn_verbs()->poll_cq(cq, 1, wc);

		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return 0;
		usleep(100);
	}
}

static void test_count(void **state)
{
	int n = -1;

	(void)state;
	assert_int_equal(rn_qp_count(2, 1, 2, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(rn_qp_count(1, 4, 1, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(rn_qp_count(0, 1, 1, &n), -EINVAL);
	assert_int_equal(rn_qp_count(1, 1, 0, &n), -EINVAL);
	rn_test_log_reset();
	assert_int_equal(rn_qp_count(4, 2, 64, &n), -ERANGE);
	assert_int_equal(n, 4); /* untouched */
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("NCCL_IB_QPS_PER_CONNECTION=64"));
	rn_test_log_reset();
}

static void test_attr_from_config(void **state)
{
	struct rn_config cfg = {
		.ib_sl = -1, .ib_tc = -1, .ib_timeout = 20, .ib_retry_cnt = 7, .ib_pkey = 0
	};
	struct rn_qp_attr a;

	(void)state;
	rn_qp_attr_from_config(&cfg, -1, &a);
	assert_int_equal(a.sl, 0);
	assert_int_equal(a.tc, 0);
	assert_int_equal(a.timeout, 20);
	assert_int_equal(a.retry_cnt, 7);
	/* the communicator's traffic class gives both, when NCCL_IB_SL/TC are unset */
	rn_qp_attr_from_config(&cfg, 3, &a);
	assert_int_equal(a.sl, 3);
	assert_int_equal(a.tc, 3);
	/*
	 * NCCL IB passes the traffic class to the SL unchanged (net_ib.cc: meta.sl =
	 * config->trafficClass), so a DSCP-style 106 reaches the SL as 106 there too, though IB
	 * SLs are 0..15: railnet behaves the same rather than second-guess the user's value.
	 */
	rn_qp_attr_from_config(&cfg, 106, &a);
	assert_int_equal(a.sl, 106);
	assert_int_equal(a.tc, 106);
	cfg.ib_sl = 5;
	cfg.ib_tc = 41;
	cfg.ib_pkey = 2;
	rn_qp_attr_from_config(&cfg, 106, &a);
	assert_int_equal(a.sl, 5);
	assert_int_equal(a.tc, 41);
	assert_int_equal(a.pkey_index, 2);
}

static void test_create_connect(void **state)
{
	struct rn_qp_set *a, *b;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int i;

	(void)state;
	rn_test_log_reset();
	make_pair(2, 1, &a, &b, false);
	assert_int_equal(a->nqps, 2);
	for (i = 0; i < a->nqps; i++) {
		assert_int_equal(rn_verbs()->query_qp(a->qp[i].qp, &qa,
						      IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &ia),
				 0);
		assert_int_equal(qa.qp_state, IBV_QPS_INIT);
		assert_int_equal(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
		assert_int_equal(rn_verbs()->query_qp(b->qp[i].qp, &qa,
						      IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &ia),
				 0);
		assert_int_equal(qa.qp_access_flags,
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	}
	{
		struct rn_qp_info ia_, ib_;

		rn_qp_set_info(a, &ia_);
		rn_qp_set_info(b, &ib_);
		assert_int_equal(ia_.nqps, 2);
		assert_int_equal(ib_.nports, 2);
		assert_memory_equal(ib_.port[1].gid, qport[1][1].gid, 16);
		assert_int_equal(ib_.port[0].link_layer, IBV_LINK_LAYER_ETHERNET);
		assert_int_equal(rn_qp_set_connect(a, &ib_), 0);
		assert_int_equal(rn_qp_set_connect(b, &ia_), 0);
		assert_int_equal(rn_qp_set_connect(b, &ia_), -EALREADY);
		for (i = 0; i < a->nqps; i++) {
			assert_int_equal(rn_verbs()->query_qp(
						 a->qp[i].qp, &qa,
						 IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_SQ_PSN |
							 IBV_QP_RQ_PSN | IBV_QP_TIMEOUT |
							 IBV_QP_RETRY_CNT | IBV_QP_AV,
						 &ia),
					 0);
			assert_int_equal(qa.qp_state, IBV_QPS_RTS);
			assert_int_equal(qa.dest_qp_num, ib_.qp[i].qpn);
			assert_int_equal(qa.sq_psn, ia_.qp[i].psn);
			assert_int_equal(qa.rq_psn, ib_.qp[i].psn);
			assert_int_equal(qa.timeout, 14);
			assert_int_equal(qa.retry_cnt, 7);
			assert_int_equal(qa.ah_attr.is_global, 1);
			assert_int_equal(qa.ah_attr.grh.sgid_index, GID_INDEX);
			assert_int_equal(qa.ah_attr.grh.hop_limit, 255);
			assert_int_equal(qa.ah_attr.grh.traffic_class, 96);
			assert_memory_equal(qa.ah_attr.grh.dgid.raw, ib_.port[i % 2].gid, 16);
		}
	}
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	RN_ASSERT_NO_WARN();
}

/* RDMA WRITE + WRITE_WITH_IMM on every QP of a 2x2 set: the bytes land, the imm arrives. */
static void test_write_imm(void **state)
{
	struct rn_qp_set *a, *b;
	struct ibv_mr *smr, *rmr;
	char *src = malloc(BUF_LEN), *dst = calloc(1, BUF_LEN);
	int i;

	(void)state;
	rn_test_log_reset();
	assert_non_null(src);
	assert_non_null(dst);
	for (i = 0; i < BUF_LEN; i++)
		src[i] = (char)(i * 7 + 1);
	make_pair(2, 2, &a, &b, true);
	assert_int_equal(a->port[0].pd, a->port[1].pd); /* one PD per context */
	assert_int_equal(rn_pd_refs(ctx[0]), 2);
	assert_int_equal(rn_verbs()->reg_mr(a->port[0].pd, src, BUF_LEN, 0, &smr), 0);
	assert_int_equal(rn_verbs()->reg_mr(b->port[0].pd, dst, BUF_LEN,
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ,
					    &rmr),
			 0);
	for (i = 0; i < a->nqps; i++) {
		size_t off = (size_t)i * (BUF_LEN / 4), len = BUF_LEN / 4 - 128;
		struct ibv_sge s1 = { (uintptr_t)src + off, (uint32_t)len, smr->lkey };
		struct ibv_sge s2 = { (uintptr_t)src + off + len, 128, smr->lkey };
		struct ibv_send_wr w2 = { .wr_id = 2,
					  .sg_list = &s2,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htonl(0xabc0 + (uint32_t)i) };
		struct ibv_send_wr w1 = { .wr_id = 1,
					  .next = &w2,
					  .sg_list = &s1,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE };
		struct ibv_recv_wr r = { .wr_id = 100 + (uint64_t)i }, *bad_r;
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		w1.wr.rdma.remote_addr = (uintptr_t)dst + off;
		w1.wr.rdma.rkey = rmr->rkey;
		w2.wr.rdma.remote_addr = (uintptr_t)dst + off + len;
		w2.wr.rdma.rkey = rmr->rkey;
		assert_int_equal(rn_verbs()->post_recv(b->qp[i].qp, &r, &bad_r), 0);
		assert_int_equal(rn_verbs()->post_send(a->qp[i].qp, &w1, &bad), 0);

		assert_int_equal(poll_one(a->port[a->qp[i].port].cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 2);
		assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
		assert_int_equal(poll_one(b->port[b->qp[i].port].cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
		assert_int_equal(ntohl(wc.imm_data), 0xabc0 + i);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.byte_len, 128);
		assert_int_equal(wc.qp_num, b->qp[i].qp->qp_num);
		assert_memory_equal(dst + off, src + off, BUF_LEN / 4);
	}
	assert_int_equal(rn_verbs()->dereg_mr(smr), 0);
	assert_int_equal(rn_verbs()->dereg_mr(rmr), 0);
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	free(src);
	free(dst);
	RN_ASSERT_NO_WARN();
}

/* 2 ports x 2 QPs per connection: QP i on port i % 2, at both ends. */
static void test_striping(void **state)
{
	struct rn_qp_set *a, *b;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int i;

	(void)state;
	rn_test_log_reset();
	make_pair(2, 2, &a, &b, true);
	assert_int_equal(a->nqps, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(a->qp[i].port, i % 2);
		assert_int_equal(rn_verbs()->query_qp(a->qp[i].qp, &qa, IBV_QP_PORT, &ia), 0);
		assert_int_equal(qa.port_num, i % 2 + 1);
		assert_int_equal(rn_verbs()->query_qp(b->qp[i].qp, &qa, IBV_QP_PORT, &ia), 0);
		assert_int_equal(qa.port_num, i % 2 + 1);
		assert_int_equal(b->qp[i].remote_port, i % 2);
	}
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	RN_ASSERT_NO_WARN();
}

/* svdev0 is 4096 on both ports, svdev1 1024 on port 1: the first rail runs at 1024. */
static void test_mtu(void **state)
{
	struct rn_qp_set *a, *b;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int i;

	(void)state;
	rn_test_log_reset();
	assert_int_equal(qport[0][0].mtu, IBV_MTU_4096);
	assert_int_equal(qport[1][0].mtu, IBV_MTU_1024);
	assert_int_equal(qport[1][1].mtu, IBV_MTU_4096);
	make_pair(2, 1, &a, &b, true);
	for (i = 0; i < 2; i++) {
		int want = i == 0 ? IBV_MTU_1024 : IBV_MTU_4096;

		assert_int_equal(rn_verbs()->query_qp(a->qp[i].qp, &qa, IBV_QP_PATH_MTU, &ia), 0);
		assert_int_equal(qa.path_mtu, want);
		assert_int_equal(rn_verbs()->query_qp(b->qp[i].qp, &qa, IBV_QP_PATH_MTU, &ia), 0);
		assert_int_equal(qa.path_mtu, want);
	}
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	RN_ASSERT_NO_WARN();
}

/* A peer's info that does not fit is refused before any QP is touched. */
static void test_refuse(void **state)
{
	struct rn_qp_set *a, *b;
	struct rn_qp_info ib, bad;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int i;

	(void)state;
	rn_test_log_reset();
	make_pair(2, 1, &a, &b, false);
	rn_qp_set_info(b, &ib);

	bad = ib;
	bad.port[1].link_layer = IBV_LINK_LAYER_INFINIBAND;
	assert_int_equal(rn_qp_set_connect(a, &bad), -EPROTO);
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("link layer Ethernet here but InfiniBand on the peer"));
	assert_true(rn_test_log_contains("svdev0 port 2"));

	bad = ib;
	bad.nqps = 4;
	assert_int_equal(rn_qp_set_connect(a, &bad), -EPROTO);
	assert_int_equal(rn_test_log.warns, 2);
	assert_true(rn_test_log_contains("the peer has 4 QPs for this connection and we have 2"));

	bad = ib;
	bad.nports = 9;
	assert_int_equal(rn_qp_set_connect(a, &bad), -EPROTO);
	bad = ib;
	bad.qp[1].port = 2;
	assert_int_equal(rn_qp_set_connect(a, &bad), -EPROTO);
	bad = ib;
	bad.port[0].mtu = 0;
	assert_int_equal(rn_qp_set_connect(a, &bad), -EPROTO);
	assert_int_equal(rn_test_log.warns, 5);
	for (i = 0; i < a->nqps; i++) {
		assert_int_equal(rn_verbs()->query_qp(a->qp[i].qp, &qa, IBV_QP_STATE, &ia), 0);
		assert_int_equal(qa.qp_state, IBV_QPS_INIT);
	}
	/* still connectable with the right info */
	assert_int_equal(rn_qp_set_connect(a, &ib), 0);
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	rn_test_log_reset();
}

/* The receiver's flush QPs read 1 byte of received data into a host sink, per port. */
static void test_flush_read(void **state)
{
	struct rn_qp_set *a, *b;
	struct ibv_mr *mr, *smr;
	char *buf = calloc(1, 4096);
	int sink[2] = { 0, 0 };
	int p;

	(void)state;
	rn_test_log_reset();
	assert_non_null(buf);
	buf[0] = 0x5a;
	buf[64] = 0x3c;
	make_pair(2, 1, &a, &b, true);
	assert_non_null(b->port[0].flush);
	assert_null(a->port[0].flush);
	assert_int_equal(rn_verbs()->reg_mr(b->port[0].pd, buf, 4096,
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ,
					    &mr),
			 0);
	assert_int_equal(
		rn_verbs()->reg_mr(b->port[0].pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE, &smr),
		0);
	for (p = 0; p < 2; p++) {
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr ia;
		struct ibv_sge sge = { (uintptr_t)&sink[p], 1, smr->lkey };
		struct ibv_send_wr wr = { .wr_id = 7,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;

		assert_int_equal(rn_verbs()->query_qp(
					 b->port[p].flush, &qa,
					 IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_ACCESS_FLAGS, &ia),
				 0);
		assert_int_equal(qa.qp_state, IBV_QPS_RTS);
		assert_int_equal(qa.dest_qp_num, b->port[p].flush->qp_num);
		assert_int_equal(qa.qp_access_flags,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		wr.wr.rdma.remote_addr = (uintptr_t)buf + (size_t)p * 64;
		wr.wr.rdma.rkey = mr->rkey;
		assert_int_equal(rn_verbs()->post_send(b->port[p].flush, &wr, &bad), 0);
		assert_int_equal(poll_one(b->port[p].cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
		assert_int_equal(wc.byte_len, 1);
	}
	assert_int_equal(sink[0] & 0xff, 0x5a);
	assert_int_equal(sink[1] & 0xff, 0x3c);
	assert_int_equal(rn_verbs()->dereg_mr(mr), 0);
	assert_int_equal(rn_verbs()->dereg_mr(smr), 0);
	rn_qp_set_destroy(a);
	rn_qp_set_destroy(b);
	free(buf);
	RN_ASSERT_NO_WARN();
}

/* 1,000 create/connect/destroy cycles: no fd, QP or PD left behind. */
static void test_cycles(void **state)
{
	struct rn_qp_set *a, *b;
	int i, fds0;

	(void)state;
	rn_test_log_reset();
	for (i = 0; i < 5; i++) { /* warm up whatever softverbs keeps per context */
		make_pair(2, 1, &a, &b, true);
		rn_qp_set_destroy(a);
		rn_qp_set_destroy(b);
	}
	fds0 = rn_test_count_fds();
	for (i = 0; i < 1000; i++) {
		make_pair(2, 1, &a, &b, true);
		rn_qp_set_destroy(a);
		rn_qp_set_destroy(b);
	}
	usleep(100 * 1000); /* let the NIC threads close peer sockets */
	assert_in_range(rn_test_count_fds(), 0, fds0 + 2);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	RN_ASSERT_NO_WARN();
}

/* SOFTVERBS_FAIL=ibv_create_qp:3:ENOMEM: the third QP of a 2x2 set fails; all is unwound. */
static void test_fault_create(void **state)
{
	struct rn_qp_params p = { .role = RN_QP_ROLE_RECV, .flush = true, .attr = test_attr() };
	struct rn_qp_set *s = NULL;
	const char *f = getenv("SOFTVERBS_FAIL");

	(void)state;
	if (!f || !strstr(f, "ibv_create_qp:3:"))
		fail_msg("run with SOFTVERBS_FAIL=ibv_create_qp:3:ENOMEM (ctest test_qp_fault)");
	rn_test_log_reset();
	assert_int_equal(rn_qp_count(2, 2, 2, &p.nqps), 0);
	assert_int_equal(rn_qp_set_create(qport[0], 2, &p, &s), -ENOMEM);
	assert_null(s);
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("create_qp on svdev0 port 1"));
	assert_true(rn_test_log_contains(strerror(ENOMEM)));
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);

	rn_test_log_reset();
	assert_int_equal(rn_qp_set_create(qport[0], 2, &p, &s), 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 4 + 2);
	rn_qp_set_destroy(s);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	RN_ASSERT_NO_WARN();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),	       cmocka_unit_test(test_attr_from_config),
		cmocka_unit_test(test_create_connect), cmocka_unit_test(test_write_imm),
		cmocka_unit_test(test_striping),       cmocka_unit_test(test_mtu),
		cmocka_unit_test(test_refuse),	       cmocka_unit_test(test_flush_read),
		cmocka_unit_test(test_cycles),
	};
	const struct CMUnitTest fault[] = {
		cmocka_unit_test(test_fault_create),
	};

	if (argc > 1 && !strcmp(argv[1], "fault"))
		return cmocka_run_group_tests_name("qp_fault", fault, setup, teardown);
	return cmocka_run_group_tests_name("qp", tests, setup, teardown);
}
