// SPDX-License-Identifier: Apache-2.0
/*
 * Tests of src/conn.c over loopback TCP and softverbs, in one process and one thread: a pod
 * view from sv-mkview (svdev0 and svdev1, two RoCE v2 ports each, GID index 1 given
 * explicitly as test_qp does); the connector on svdev0, the listener on svdev1, connect and
 * accept stepped alternately as NCCL may. Checked: the rn_qp_info <-> HELLO mapping, a
 * handshake to DONE whose QPs carry an RDMA WRITE_WITH_IMM (the receive buffer's address and
 * rkey passed out of band, as the data path's FIFO will), a connector whose acceptor never
 * answers failing at its deadline with no fd or QP left, and 200 listen/connect/close cycles
 * without fd growth.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "railnet/conn.h"
#include "railnet/log.h"
#include "railnet/verbs.h"
#include "rn_test.h"
#include "rn_test_sv.h"

#define GID_INDEX 1 /* sv-mkview: RoCE v2, IPv4-mapped */
#define BUF_LEN 4096
#define SHORT_MS 200

static char view_dir[256];
static struct ibv_context *ctx[2];
static struct rn_qp_port qport[2][2]; /* [device][port index] */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
	int d, p;

	(void)state;
	if (rn_test_sv_mkview("conn", 2, 2, 100, view_dir, sizeof(view_dir)))
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

static struct rn_oob_if lo_if(void)
{
	struct rn_oob_if f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "lo");
	f.family = AF_INET;
	f.addr[0] = 127;
	f.addr[3] = 1;
	f.up = f.loopback = true;
	return f;
}

static struct rn_oob_if lo;

static struct rn_conn_params test_params(long timeout_ms)
{
	struct rn_conn_params p = {
		.iface = &lo,
		.timeout_ms = timeout_ms,
		.qps_per_port = 2,
		.attr = { .pkey_index = 0, .timeout = 14, .retry_cnt = 7, .sl = 0, .tc = 0 },
		.region_bytes = 5000, /* rounded up to pages, registered on every port */
	};

	return p;
}

/* Listen on svdev1, connect from svdev0, step both alternately until both are connected. */
static void handshake(struct rn_conn **send, struct rn_conn **recv)
{
	struct rn_conn_params p = test_params(5000);
	struct rn_conn_listener *l;
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *s = NULL, *r = NULL;
	long long t0 = now_ms();
	int steps = 0;

	lo = lo_if();
	memset(handle, 0xee, sizeof(handle));
	assert_int_equal(rn_conn_listen(qport[1], 2, &p, handle, &l), 0);
	while (!s || !r) {
		if (!s)
			assert_int_equal(rn_conn_connect_step(handle, qport[0], 2, &p, &s), 0);
		if (!r)
			assert_int_equal(rn_conn_accept_step(l, &r), 0);
		assert_true(now_ms() - t0 < 5000);
		steps++;
	}
	assert_true(steps > 1); /* the handshake really went through non-blocking steps */
	/* the listener accepts again: the next call waits for the next connector */
	{
		struct rn_conn *again = NULL;

		assert_int_equal(rn_conn_accept_step(l, &again), 0);
		assert_null(again);
	}
	rn_conn_listen_close(l);
	*send = s;
	*recv = r;
}

/*
 * Port counts differ: a 1-port connector to a 2-port listener (which announces its 2 ports in
 * the handle) opens max(1, 2) x 2 QPs, the acceptor stripes them over both its ports.
 */
static void test_port_count_negotiated(void **state)
{
	struct rn_conn_params p = test_params(5000);
	struct rn_conn_listener *l;
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *s = NULL, *r = NULL;
	long long t0 = now_ms();

	(void)state;
	lo = lo_if();
	assert_int_equal(rn_conn_listen(qport[1], 2, &p, handle, &l), 0);
	assert_int_equal(((struct rn_wire_handle *)handle)->nports, 2);
	while (!s || !r) {
		if (!s)
			assert_int_equal(rn_conn_connect_step(handle, qport[0], 1, &p, &s), 0);
		if (!r)
			assert_int_equal(rn_conn_accept_step(l, &r), 0);
		assert_true(now_ms() - t0 < 5000);
	}
	rn_conn_listen_close(l);
	assert_int_equal(s->set->nports, 1);
	assert_int_equal(r->set->nports, 2);
	assert_int_equal(s->set->nqps, 4);
	assert_int_equal(r->set->nqps, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(s->set->qp[i].port, 0);
		assert_int_equal(r->set->qp[i].port, i % 2);
	}
	rn_conn_close(s);
	rn_conn_close(r);
}

/* The acceptor pairs QPs by rail when the two sides list their ports in different orders. */
static void test_rail_map(void **state)
{
	struct rn_qp_port lp[2];
	struct rn_qp_info *r = calloc(1, sizeof(*r));
	int map[RN_QP_MAX_QPS];
	char why[256];

	(void)state;
	assert_non_null(r);
	memset(lp, 0, sizeof(lp));
	lp[0].rail = 0xa, lp[1].rail = 0xb;
	r->nports = 2, r->nqps = 4;
	r->port[0].rail = 0xb, r->port[1].rail = 0xa; /* the other order */
	for (int i = 0; i < 4; i++)
		r->qp[i].port = (uint32_t)i % 2;
	assert_int_equal(rn_conn_rail_map(lp, 2, r, map, why, sizeof(why)), 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(map[i], (i + 1) % 2);
	assert_string_equal(why, "");
	/* same order: striping is already right */
	r->port[0].rail = 0xa, r->port[1].rail = 0xb;
	assert_int_equal(rn_conn_rail_map(lp, 2, r, map, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* a 1-port connector on rail b against our 2 ports: every QP on our rail-b port */
	r->nports = 1, r->nqps = 2;
	r->port[0].rail = 0xb;
	r->qp[0].port = r->qp[1].port = 0;
	assert_int_equal(rn_conn_rail_map(lp, 2, r, map, why, sizeof(why)), 1);
	assert_int_equal(map[0], 1);
	assert_int_equal(map[1], 1);
	/* rails unknown on one side: striping, nothing to say */
	lp[1].rail = 0;
	assert_int_equal(rn_conn_rail_map(lp, 2, r, map, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* a connector rail we are not on: striping, and the reason for a WARN */
	lp[1].rail = 0xc;
	assert_int_equal(rn_conn_rail_map(lp, 2, r, map, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "rail 0x0000000b"));
	free(r);
}

static void test_info_mapping(void **state)
{
	struct rn_qp_info a, b;
	struct rn_hello *h = calloc(1, sizeof(*h));
	char why[128];
	int i;

	(void)state;
	assert_non_null(h);
	memset(&a, 0, sizeof(a));
	a.nports = 2;
	a.nqps = 4;
	for (i = 0; i < 2; i++) {
		memset(a.port[i].gid, 0x10 + i, 16);
		a.port[i].mtu = 3 + (uint32_t)i;
		a.port[i].lid = (uint16_t)(7 + i);
		a.port[i].port_num = (uint8_t)(i + 1);
		a.port[i].link_layer = 2;
	}
	for (i = 0; i < 4; i++) {
		a.qp[i].qpn = 0x100 + (uint32_t)i;
		a.qp[i].psn = 0xabc00 + (uint32_t)i;
		a.qp[i].port = (uint32_t)i % 2;
	}
	rn_conn_info_to_hello(&a, h);
	assert_int_equal(h->nports, 2);
	assert_int_equal(h->nqps, 4);
	assert_int_equal(h->fifo_addr, 0);
	assert_int_equal(h->ports[1].fifo_rkey, 0);
	assert_int_equal(h->ports[1].mtu, 4);
	assert_int_equal(h->qps[3].port_index, 1);
	assert_int_equal(rn_conn_info_from_hello(h, &b, why, sizeof(why)), 0);
	assert_memory_equal(&a, &b, sizeof(a)); /* gid_index is 0 in both */
	h->nports = RN_QP_MAX_PORTS + 1;
	assert_int_equal(rn_conn_info_from_hello(h, &b, why, sizeof(why)), -EPROTO);
	assert_non_null(strstr(why, "9 ports; railnet connects 1..8"));
	h->nports = 2;
	h->nqps = RN_QP_MAX_QPS + 1;
	assert_int_equal(rn_conn_info_from_hello(h, &b, why, sizeof(why)), -EPROTO);
	free(h);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long long t0 = now_ms();

	for (;;) {
		int n = rn_verbs()->poll_cq(cq, 1, wc);

		if (n)
			return n;
		if (now_ms() - t0 > 10000)
			return 0;
		usleep(100);
	}
}

/* The handshake's QPs work: WRITE_WITH_IMM from the send conn's QP 0 lands on the receiver. */
static void test_handshake_write(void **state)
{
	struct rn_conn *s, *r;
	struct ibv_mr *smr, *rmr;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	char *src = malloc(BUF_LEN), *dst = calloc(1, BUF_LEN);
	int i;

	(void)state;
	rn_test_log_reset();
	assert_non_null(src);
	assert_non_null(dst);
	for (i = 0; i < BUF_LEN; i++)
		src[i] = (char)(i * 13 + 5);
	handshake(&s, &r);
	assert_int_equal(s->role, RN_CONN_SEND);
	assert_int_equal(r->role, RN_CONN_RECV);
	assert_int_equal(s->set->nqps, 4);
	assert_int_equal(r->set->nqps, 4);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 8);
	assert_int_equal(s->remote.nports, 2);
	assert_int_equal(r->remote.nqps, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(s->remote.qp[i].qpn, r->set->qp[i].qp->qp_num);
		assert_int_equal(r->remote.qp[i].qpn, s->set->qp[i].qp->qp_num);
		assert_int_equal(rn_verbs()->query_qp(s->set->qp[i].qp, &qa, IBV_QP_STATE, &ia), 0);
		assert_int_equal(qa.qp_state, IBV_QPS_RTS);
		assert_int_equal(rn_verbs()->query_qp(r->set->qp[i].qp, &qa, IBV_QP_STATE, &ia), 0);
		assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	}
	assert_memory_equal(s->remote.port[1].gid, qport[1][1].gid, 16);
	/* each side's region and its keys reached the other side */
	assert_non_null(s->region);
	assert_non_null(r->region);
	assert_true(s->region_bytes >= 5000);
	assert_int_equal(s->remote_region, (uintptr_t)r->region);
	assert_int_equal(r->remote_region, (uintptr_t)s->region);
	for (i = 0; i < 2; i++) {
		assert_int_equal(s->remote_rkey[i], r->region_mr[i]->rkey);
		assert_int_equal(r->remote_rkey[i], s->region_mr[i]->rkey);
	}

	assert_int_equal(rn_verbs()->reg_mr(s->set->port[0].pd, src, BUF_LEN, 0, &smr), 0);
	assert_int_equal(rn_verbs()->reg_mr(r->set->port[0].pd, dst, BUF_LEN,
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rmr),
			 0);
	{
		/* Out of band, as the receiver's FIFO entry will carry them: addr and rkey. */
		uint64_t raddr = (uintptr_t)dst;
		uint32_t rkey = rmr->rkey;
		struct ibv_sge sge = { (uintptr_t)src, BUF_LEN, smr->lkey };
		struct ibv_send_wr w = { .wr_id = 7,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					 .send_flags = IBV_SEND_SIGNALED,
					 .imm_data = htonl(0x5eed) };
		struct ibv_recv_wr rw = { .wr_id = 70 }, *bad_r;
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
		assert_int_equal(rn_verbs()->post_recv(r->set->qp[0].qp, &rw, &bad_r), 0);
		assert_int_equal(rn_verbs()->post_send(s->set->qp[0].qp, &w, &bad), 0);
		assert_int_equal(poll_one(s->set->port[s->set->qp[0].port].cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 7);
		assert_int_equal(poll_one(r->set->port[r->set->qp[0].port].cq, &wc), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(ntohl(wc.imm_data), 0x5eed);
		assert_int_equal(wc.wr_id, 70);
		assert_int_equal(wc.byte_len, BUF_LEN);
		assert_memory_equal(dst, src, BUF_LEN);
	}
	assert_int_equal(rn_verbs()->dereg_mr(smr), 0);
	assert_int_equal(rn_verbs()->dereg_mr(rmr), 0);
	rn_conn_close(s);
	rn_conn_close(r);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	free(src);
	free(dst);
	RN_ASSERT_NO_WARN();
}

/* Nobody accepts: the connector fails at its deadline, one WARN, no fd or QP left. */
static void test_connect_timeout(void **state)
{
	struct rn_conn_params p = test_params(SHORT_MS);
	struct rn_conn_listener *l;
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *s = NULL;
	long long t0;
	int fds0, rc = 0, saw_qps = 0;

	(void)state;
	rn_test_log_reset();
	lo = lo_if();
	fds0 = rn_test_count_fds();
	assert_int_equal(rn_conn_listen(qport[1], 2, &p, handle, &l), 0);
	t0 = now_ms();
	while (rc == 0) {
		rc = rn_conn_connect_step(handle, qport[0], 2, &p, &s);
		assert_null(s);
		if (rn_test_sv_rdv_qps(view_dir) == 4)
			saw_qps = 1;
		assert_true(now_ms() - t0 < 5000);
		usleep(1000);
	}
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(saw_qps);
	assert_true(now_ms() - t0 >= SHORT_MS - 10);
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("RAILNET_CONNECT_TIMEOUT"));
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	rn_conn_connect_abort(handle); /* nothing left: a no-op */
	rn_conn_listen_close(l);
	usleep(50 * 1000);
	assert_in_range(rn_test_count_fds(), 0, fds0);
	rn_test_log_reset();
}

/* An abandoned connector and an in-progress acceptor are freed by abort / listen_close. */
static void test_abandon(void **state)
{
	struct rn_conn_params p = test_params(5000);
	struct rn_conn_listener *l;
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *s = NULL, *r = NULL;
	int fds0, i;

	(void)state;
	rn_test_log_reset();
	lo = lo_if();
	fds0 = rn_test_count_fds();
	assert_int_equal(rn_conn_listen(qport[1], 2, &p, handle, &l), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(rn_conn_connect_step(handle, qport[0], 2, &p, &s), 0);
		assert_int_equal(rn_conn_accept_step(l, &r), 0);
		if (s || r)
			break;
	}
	rn_conn_close(s);
	rn_conn_close(r);
	rn_conn_connect_abort(handle);
	rn_conn_listen_close(l);
	usleep(50 * 1000);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	assert_in_range(rn_test_count_fds(), 0, fds0 + 2);
	RN_ASSERT_NO_WARN();
}

static void test_bad_args(void **state)
{
	struct rn_conn_params p = test_params(1000);
	struct rn_conn_listener *l = NULL;
	unsigned char handle[RN_WIRE_HANDLE_BUF] = { 0 };
	struct rn_conn *s = NULL;

	(void)state;
	lo = lo_if();
	assert_int_equal(rn_conn_listen(qport[1], 0, &p, handle, &l), -EINVAL);
	/* more ports than a connection spans: refused before the ports are read */
	assert_int_equal(rn_conn_connect_step(handle, qport[0], RN_QP_MAX_PORTS + 1, &p, &s),
			 -EINVAL);
	p.qps_per_port = 0;
	assert_int_equal(rn_conn_connect_step(handle, qport[0], 2, &p, &s), -EINVAL);
	assert_null(l);
	assert_null(s);
	rn_test_log_reset();
}

/* 200 listen/connect/accept/close cycles: no fd, QP or PD left behind. */
static void test_cycles(void **state)
{
	struct rn_conn *s, *r;
	int i, fds0;

	(void)state;
	rn_test_log_reset();
	for (i = 0; i < 3; i++) {
		handshake(&s, &r);
		rn_conn_close(s);
		rn_conn_close(r);
	}
	usleep(50 * 1000);
	fds0 = rn_test_count_fds();
	for (i = 0; i < 200; i++) {
		handshake(&s, &r);
		rn_conn_close(s);
		rn_conn_close(r);
	}
	usleep(100 * 1000);
	assert_in_range(rn_test_count_fds(), 0, fds0 + 2);
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	RN_ASSERT_NO_WARN();
}

/*
 * SOFTVERBS_FAIL=ibv_create_qp:5:ENOMEM (ctest test_conn_fault): the connector's 4 QPs are
 * made, the acceptor's first fails in its peer_hello hook. Both ends fail, nothing is left.
 */
static void test_fault_accept(void **state)
{
	struct rn_conn_params p = test_params(SHORT_MS * 5);
	struct rn_conn_listener *l;
	unsigned char handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *s = NULL, *r = NULL;
	const char *f = getenv("SOFTVERBS_FAIL");
	int fds0, rs = 0, ra = 0;
	long long t0;

	(void)state;
	if (!f || !strstr(f, "ibv_create_qp:5:"))
		fail_msg("run with SOFTVERBS_FAIL=ibv_create_qp:5:ENOMEM (ctest test_conn_fault)");
	rn_test_log_reset();
	lo = lo_if();
	fds0 = rn_test_count_fds();
	assert_int_equal(rn_conn_listen(qport[1], 2, &p, handle, &l), 0);
	t0 = now_ms();
	while (rs == 0 || ra == 0) {
		if (rs == 0)
			rs = rn_conn_connect_step(handle, qport[0], 2, &p, &s);
		if (ra == 0)
			ra = rn_conn_accept_step(l, &r);
		assert_null(s);
		assert_null(r);
		assert_true(now_ms() - t0 < 5000);
	}
	assert_int_equal(ra, -ENOMEM);
	/* the connector hears the acceptor's reason instead of "peer closed the connection" */
	assert_int_equal(rs, -ECONNREFUSED);
	assert_true(rn_test_log_contains("the acceptor refused the connection: creating 4 "
					 "receive QPs failed (Cannot allocate memory)"));
	/* that handshake failed alone: the listener waits for the next connector */
	assert_int_equal(rn_conn_accept_step(l, &r), 0);
	assert_null(r);
	assert_true(rn_test_log_contains("create_qp on svdev1"));
	assert_int_equal(rn_test_sv_rdv_qps(view_dir), 0);
	assert_int_equal(rn_pd_refs(ctx[0]), 0);
	assert_int_equal(rn_pd_refs(ctx[1]), 0);
	rn_conn_listen_close(l);
	usleep(50 * 1000);
	assert_in_range(rn_test_count_fds(), 0, fds0);
	rn_test_log_reset();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_info_mapping),
		cmocka_unit_test(test_rail_map),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_port_count_negotiated),
		cmocka_unit_test(test_handshake_write),
		cmocka_unit_test(test_connect_timeout),
		cmocka_unit_test(test_abandon),
		cmocka_unit_test(test_cycles),
	};

	const struct CMUnitTest fault[] = {
		cmocka_unit_test(test_fault_accept),
	};

	if (argc > 1 && !strcmp(argv[1], "fault"))
		return cmocka_run_group_tests_name("conn_fault", fault, setup, teardown);
	return cmocka_run_group_tests_name("conn", tests, setup, teardown);
}
