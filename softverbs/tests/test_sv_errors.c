// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs error semantics between two processes: LOC_PROT_ERR, REM_ACCESS_ERR (with the
 * responder's QP_ACCESS_ERR event), WR_FLUSH_ERR, RNR_RETRY_EXC_ERR and infinite RNR retry,
 * RETRY_EXC_ERR for a vanished peer and for a GID the peer does not own, REM_INV_REQ_ERR /
 * LOC_LEN_ERR for a short receive, and the posting rules. Error CQEs even when unsignaled.
 */
#include "sv_test.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void expect_async(struct ibv_context *c, enum ibv_event_type t)
{
	struct ibv_async_event ev;

	CHECK(ibv_get_async_event(c, &ev) == 0);
	if (ev.event_type != t) {
		fprintf(stderr, "async event %s, want %s\n", ibv_event_type_str(ev.event_type),
			ibv_event_type_str(t));
		exit(1);
	}
	ibv_ack_async_event(&ev);
}

static void loc_prot_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .mr_access = IBV_ACCESS_LOCAL_WRITE };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[4];

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		struct ibv_sge sge = { (uintptr_t)ep.buf, 64, ep.mr->lkey + 0x100 }; /* bad lkey */
		struct ibv_send_wr wr = { .wr_id = 1,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE },
				   *bad;

		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		CHECK(ibv_post_send(ep.qp, &wr, &bad) == 0); /* unsignaled */
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 2, 0, 64, &peer, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 2, 5000), 2);
		CHECK_WC(wc[0], IBV_WC_LOC_PROT_ERR);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_EQ(wc[0].qp_num, ep.qp->qp_num);
		CHECK_WC(wc[1], IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[1].wr_id, 2);
		CHECK_EQ(sv_qp_state(ep.qp), IBV_QPS_ERR);
		/* posting in ERR is accepted and flushes */
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 3, 0, 64, &peer, 0, 0, 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 5000), 1);
		CHECK_WC(wc[0], IBV_WC_WR_FLUSH_ERR);
		/* out of the MR's bounds */
		sv_post_recv(&ep, 4, 0, 64);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 5000), 1);
		CHECK_WC(wc[0], IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[0].wr_id, 4);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_loc_prot(void)
{
	sv_run2(loc_prot_body, NULL, 30);
}

/* READ into memory without LOCAL_WRITE: local protection error. */
static void read_lw_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		struct ibv_mr *ro = ibv_reg_mr(ep.pd, ep.buf + 65536, 4096, 0);

		CHECK(ro);
		struct ibv_sge sge = { (uintptr_t)ep.buf + 65536, 4096, ro->lkey };
		struct ibv_send_wr wr = { .wr_id = 5,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		CHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 5000), 1);
		CHECK_WC(wc, IBV_WC_LOC_PROT_ERR);
		CHECK_EQ(ibv_dereg_mr(ro), 0);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_read_local_write(void)
{
	sv_run2(read_lw_body, NULL, 30);
}

struct rem_case {
	int kind; /* 0 bad rkey, 1 out of bounds, 2 MR lacks REMOTE_WRITE, 3 READ w/o REMOTE_READ,
			 * 4 QP lacks REMOTE_WRITE */
};

static void rem_access_body(int side, int fd, void *arg)
{
	const struct rem_case *rc = arg;
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[2];

	if (side == 1 && rc->kind == 2)
		o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	if (side == 1 && rc->kind == 3)
		o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (side == 1 && rc->kind == 4)
		o.qp_access = IBV_ACCESS_REMOTE_READ;
	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1)
		sv_post_recv(&ep, 50, 0, 64);
	sv_barrier(fd);
	if (side == 0) {
		if (rc->kind == 0)
			peer.rkey ^= 0x10000;
		sv_post_write(&ep, rc->kind == 3 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, 1, 0, 128,
			      &peer, rc->kind == 1 ? ep.len - 64 : 0, 0, 0); /* unsignaled */
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 2, 0, 64, &peer, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 2, 5000), 2);
		CHECK_WC(wc[0], IBV_WC_REM_ACCESS_ERR);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_WC(wc[1], IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(sv_qp_state(ep.qp), IBV_QPS_ERR);
	} else {
		/* the responder goes to ERR too: async event, its receive flushed */
		expect_async(ep.ctx, IBV_EVENT_QP_ACCESS_ERR);
		CHECK_EQ(sv_poll(ep.cq, wc, 1, 5000), 1);
		CHECK_WC(wc[0], IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[0].wr_id, 50);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_rem_bad_rkey(void)
{
	struct rem_case c = { 0 };

	sv_run2(rem_access_body, &c, 30);
}

static void t_rem_bounds(void)
{
	struct rem_case c = { 1 };

	sv_run2(rem_access_body, &c, 30);
}

static void t_rem_mr_access(void)
{
	struct rem_case c = { 2 };

	sv_run2(rem_access_body, &c, 30);
}

static void t_rem_read_access(void)
{
	struct rem_case c = { 3 };

	sv_run2(rem_access_body, &c, 30);
}

static void t_rem_qp_access(void)
{
	struct rem_case c = { 4 };

	sv_run2(rem_access_body, &c, 30);
}

static void flush_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[8];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int i;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1) {
		for (i = 0; i < 5; i++)
			sv_post_recv(&ep, (uint64_t)(10 + i), 0, 64);
		CHECK_EQ(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
		CHECK_EQ(sv_poll(ep.cq, wc, 5, 5000), 5);
		for (i = 0; i < 5; i++) {
			CHECK_WC(wc[i], IBV_WC_WR_FLUSH_ERR);
			CHECK_EQ(wc[i].wr_id, 10 + i);
			CHECK_EQ(wc[i].qp_num, ep.qp->qp_num);
		}
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_flush(void)
{
	sv_run2(flush_body, NULL, 30);
}

struct rnr_case {
	bool infinite;
};

static void rnr_body(int side, int fd, void *arg)
{
	const struct rnr_case *rc = arg;
	struct sv_ep_opts o = { .rnr_retry = rc->infinite ? 7 : 2, .min_rnr_timer = 5 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[2];

	if (!rc->infinite)
		o.rnr_retry = 2;
	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 0) {
		sv_post_write(&ep, IBV_WR_SEND, 1, 0, 64, NULL, 0, IBV_SEND_SIGNALED, 0);
		sv_post_write(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0, 64, &peer, 0,
			      IBV_SEND_SIGNALED, 9);
		CHECK_EQ(sv_poll(ep.cq, wc, 2, 10000), 2);
		if (rc->infinite) {
			CHECK_WC(wc[0], IBV_WC_SUCCESS);
			CHECK_WC(wc[1], IBV_WC_SUCCESS);
		} else {
			CHECK_WC(wc[0], IBV_WC_RNR_RETRY_EXC_ERR);
			CHECK_EQ(wc[0].wr_id, 1);
			CHECK_WC(wc[1], IBV_WC_WR_FLUSH_ERR);
		}
		sv_barrier(fd);
	} else {
		if (rc->infinite) {
			usleep(200000); /* the sender keeps retrying meanwhile */
			sv_post_recv(&ep, 20, 0, 4096);
			sv_post_recv(&ep, 21, 0, 4096);
			CHECK_EQ(sv_poll(ep.cq, wc, 2, 10000), 2);
			CHECK_WC(wc[0], IBV_WC_SUCCESS);
			CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
			CHECK_EQ(wc[1].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		}
		sv_barrier(fd);
	}
	sv_ep_close(&ep);
}

static void t_rnr_exceeded(void)
{
	struct rnr_case c = { false };

	sv_run2(rnr_body, &c, 30);
}

static void t_rnr_infinite(void)
{
	struct rnr_case c = { true };

	sv_run2(rnr_body, &c, 30);
}

/* The peer process dies: the requester's WRs end in RETRY_EXC_ERR, no hang. */
static void vanish_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .timeout = 10, .retry_cnt = 2 }; /* 4 ms x 3 */
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc[2];
	struct timespec t0, t1;
	int n;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1) {
		sv_barrier(fd);
		_exit(0); /* no cleanup: the NIC vanishes with the process */
	}
	sv_barrier(fd);
	{
		char ch;

		/* the OOB socket closes when the peer process is really gone */
		while (read(fd, &ch, 1) > 0)
			;
	}
	usleep(50000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sv_post_write(&ep, IBV_WR_RDMA_WRITE, 1, 0, 64, &peer, 0, 0, 0);
	sv_post_write(&ep, IBV_WR_RDMA_WRITE, 2, 0, 64, &peer, 0, IBV_SEND_SIGNALED, 0);
	n = sv_poll(ep.cq, wc, 2, 10000);
	for (int i = 0; i < n; i++)
		printf("wc %d: wr_id %llu %s\n", i, (unsigned long long)wc[i].wr_id,
		       ibv_wc_status_str(wc[i].status));
	CHECK_EQ(n, 2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_WC(wc[0], IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_WC(wc[1], IBV_WC_WR_FLUSH_ERR);
	/* not before timeout x (retry_cnt + 1) */
	CHECK((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 12000000L);
	sv_ep_close(&ep);
}

static void t_retry_vanished(void)
{
	sv_run2(vanish_body, NULL, 30);
}

/* A dgid the peer's port does not show: the hello is refused, WRs time out. */
static void wrong_gid_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .timeout = 8, .retry_cnt = 1 };
	struct sv_ep_info peer, me;
	struct sv_ep ep;
	struct ibv_wc wc;

	o.dev = side ? "svdev1" : "svdev0";
	sv_ep_open(&ep, &o);
	sv_ep_info(&ep, &me);
	sv_xchg(fd, &me, &peer, sizeof(me));
	if (side == 0)
		peer.gid.raw[15] ^= 0x40; /* nobody's address */
	sv_ep_connect(&ep, &o, &peer);
	sv_barrier(fd);
	if (side == 0) {
		sv_post_write(&ep, IBV_WR_RDMA_WRITE, 1, 0, 64, &peer, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
		CHECK_WC(wc, IBV_WC_RETRY_EXC_ERR);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_retry_wrong_gid(void)
{
	sv_run2(wrong_gid_body, NULL, 30);
}

static void short_recv_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { 0 };
	struct sv_ep_info peer;
	struct sv_ep ep;
	struct ibv_wc wc;

	sv_ep_pair(side, fd, &ep, &o, &peer);
	if (side == 1)
		sv_post_recv(&ep, 30, 0, 16);
	sv_barrier(fd);
	if (side == 0) {
		sv_post_write(&ep, IBV_WR_SEND, 1, 0, 64, NULL, 0, IBV_SEND_SIGNALED, 0);
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 5000), 1);
		CHECK_WC(wc, IBV_WC_REM_INV_REQ_ERR);
	} else {
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 5000), 1);
		CHECK_WC(wc, IBV_WC_LOC_LEN_ERR);
		CHECK_EQ(wc.wr_id, 30);
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

static void t_short_recv(void)
{
	sv_run2(short_recv_body, NULL, 30);
}

static void t_post_rules(void)
{
	struct sv_ep_opts o = {
		.max_send_wr = 4, .max_recv_wr = 2, .max_sge = 2, .max_inline = 32
	};
	struct sv_ep ep;
	struct sv_ep_info me;
	struct ibv_sge sg[3];
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rw, *rbad;
	char big[64] = { 0 };

	sv_ep_open(&ep, &o);
	sv_ep_info(&ep, &me);
	sv_ep_connect(&ep, &o, &me);
	for (int i = 0; i < 3; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)ep.buf, 8, ep.mr->lkey };
	wr = (struct ibv_send_wr){
		.wr_id = 1, .sg_list = sg, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE
	};
	wr.wr.rdma.remote_addr = me.addr;
	wr.wr.rdma.rkey = me.rkey;
	CHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL); /* num_sge > max_send_sge */
	CHECK(bad == &wr);
	sg[0] = (struct ibv_sge){ (uintptr_t)big, sizeof(big), 0 };
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	CHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL); /* > max_inline_data */
	wr.opcode = 99;
	wr.send_flags = 0;
	CHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL); /* unknown opcode */
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sg, .num_sge = 3 };
	CHECK_EQ(ibv_post_recv(ep.qp, &rw, &rbad), EINVAL);
	rw.num_sge = 0;
	CHECK_EQ(ibv_post_recv(ep.qp, &rw, &rbad), 0);
	CHECK_EQ(ibv_post_recv(ep.qp, &rw, &rbad), 0);
	CHECK_EQ(ibv_post_recv(ep.qp, &rw, &rbad), ENOMEM); /* RQ full */
	sv_ep_close(&ep);
}

/* Garbage on a context's socket: that connection is dropped, the NIC and its QPs go on. */
static void t_bad_peer(void)
{
	const char *view = getenv("SOFTVERBS_VIEW");
	struct sv_ep ep;
	struct sv_ep_info me;
	struct ibv_wc wc;
	char path[512], line[512], sock[128] = "";
	FILE *f;

	sv_ep_open(&ep, NULL);
	sv_ep_info(&ep, &me);
	snprintf(path, sizeof(path), "%s/rdv/qp/%u", view, me.qpn);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "unix ", 5))
			sscanf(line + 5, "%127s", sock);
	fclose(f);
	CHECK(sock[0] == '/');
	for (int round = 0; round < 3; round++) {
		struct sockaddr_un su = { .sun_family = AF_UNIX };
		unsigned char junk[4096];
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		char ch;

		CHECK(fd >= 0);
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", sock);
		CHECK(connect(fd, (struct sockaddr *)&su, sizeof(su)) == 0);
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (unsigned char)(i * 131 + round * 17);
		if (round == 1)
			memset(junk, 0xff, 48); /* a header announcing a huge message */
		if (round == 2)
			junk[0] = 3; /* a REQ before any HELLO */
		(void)!write(fd, junk, sizeof(junk));
		/* the NIC closes it (EOF or reset), it does not crash or hang */
		CHECK(read(fd, &ch, 1) <= 0 || read(fd, &ch, 1) <= 0);
		close(fd);
	}
	sv_ep_connect(&ep, NULL, &me);
	sv_post_write(&ep, IBV_WR_RDMA_WRITE, 1, 0, 64, &me, 4096, IBV_SEND_SIGNALED, 0);
	CHECK_EQ(sv_poll(ep.cq, &wc, 1, 5000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	sv_ep_close(&ep);
}

static const struct sv_case cases[] = {
	{ "bad_peer", t_bad_peer },
	{ "loc_prot", t_loc_prot },
	{ "read_local_write", t_read_local_write },
	{ "rem_bad_rkey", t_rem_bad_rkey },
	{ "rem_bounds", t_rem_bounds },
	{ "rem_mr_access", t_rem_mr_access },
	{ "rem_read_access", t_rem_read_access },
	{ "rem_qp_access", t_rem_qp_access },
	{ "flush", t_flush },
	{ "rnr_exceeded", t_rnr_exceeded },
	{ "rnr_infinite", t_rnr_infinite },
	{ "retry_vanished", t_retry_vanished },
	{ "retry_wrong_gid", t_retry_wrong_gid },
	{ "short_recv", t_short_recv },
	{ "post_rules", t_post_rules },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	sv_test_view(2, 1, 100, NULL);
	return sv_test_main(argc, argv, cases);
}
