/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the softverbs conformance tests: a minimal pod view in a temporary directory,
 * CHECK macros that print what failed and exit 1, fork-based two-process runs with an
 * out-of-band socketpair, and RC endpoint setup through the public verbs API only.
 */
#ifndef SV_TEST_H
#define SV_TEST_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d: %s)\n", __FILE__, \
				__LINE__, #c, errno, strerror(errno));                        \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

#define CHECK_EQ(a, b)                                                                    \
	do {                                                                              \
		long long _a = (long long)(a), _b = (long long)(b);                       \
		if (_a != _b) {                                                           \
			fprintf(stderr, "%s:%d: %s == %lld, want %s == %lld\n", __FILE__, \
				__LINE__, #a, _a, #b, _b);                                \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

#define CHECK_WC(wc, st)                                                                         \
	do {                                                                                     \
		if ((int)(wc).status != (int)(st)) {                                             \
			fprintf(stderr, "%s:%d: wc status %s (%d), want %s; wr_id %llu\n",       \
				__FILE__, __LINE__, ibv_wc_status_str((wc).status), (wc).status, \
				ibv_wc_status_str(st), (unsigned long long)(wc).wr_id);          \
			exit(1);                                                                 \
		}                                                                                \
	} while (0)

/* Builds a pod view at dir: ndev devices svdev<i>, nports each, GIDs
 * 0 fe80 (RoCE v1), 1 ::ffff:10.<i>.<p>.1 (RoCE v2), 2 foreign (zero, EINVAL),
 * 3 ::ffff:10.<i>.<p>.2 (RoCE v2); rate "<gbps> Gb/sec (4X EDR)". Returns 0 or -errno. */
int sv_mkview(const char *dir, int ndev, int nports, int gbps, const char *extra_config);
/* A fresh view in a new temp dir (removed at exit); sets SOFTVERBS_VIEW. Returns the dir. */
const char *sv_test_view(int ndev, int nports, int gbps, const char *extra_config);

struct sv_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
	int port;
	int gid_index;
	union ibv_gid gid;
};

struct sv_ep_info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct sv_ep_opts {
	const char *dev; /* default svdev0 */
	int port;	 /* default 1 */
	int gid_index;	 /* default 1 */
	size_t len;	 /* default 1 MiB */
	int mr_access;	 /* default local write | remote write | remote read */
	int qp_access;	 /* default remote write | remote read */
	int max_send_wr, max_recv_wr, max_sge, max_inline; /* defaults 64, 64, 4, 64 */
	int sq_sig_all;
	bool channel;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer; /* defaults 17, 7, 7, 1 */
	bool qp_ex;   /* create with ibv_create_qp_ex + SEND_OPS_FLAGS */
	int path_mtu; /* enum ibv_mtu; default IBV_MTU_4096 */
};

void sv_ep_open(struct sv_ep *ep, const struct sv_ep_opts *o);
void sv_ep_info(const struct sv_ep *ep, struct sv_ep_info *info);
void sv_ep_connect(struct sv_ep *ep, const struct sv_ep_opts *o, const struct sv_ep_info *peer);
void sv_ep_close(struct sv_ep *ep);
/*
 * For sv_run2's sides: opens side's device (svdev0 or svdev1), connects the endpoint with the
 * other side's over fd, and waits for both. o->dev is set here.
 */
void sv_ep_pair(int side, int fd, struct sv_ep *ep, struct sv_ep_opts *o, struct sv_ep_info *peer);
/* Polls until n completions arrived or ms elapsed; returns how many. */
int sv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms);
void sv_post_write(struct sv_ep *ep, enum ibv_wr_opcode op, uint64_t wr_id, size_t off, size_t len,
		   const struct sv_ep_info *peer, size_t roff, int flags, uint32_t imm);
void sv_post_recv(struct sv_ep *ep, uint64_t wr_id, size_t off, size_t len);
/* The QP's state as ibv_query_qp reports it (qp->state only follows modify/query). */
int sv_qp_state(struct ibv_qp *qp);

/* Two processes: fn(0, fd) and fn(1, fd) with an out-of-band socket; returns when both exited,
 * failing the test if either did not exit 0 within timeout_s. */
void sv_run2(void (*fn)(int side, int fd, void *arg), void *arg, int timeout_s);
void sv_xchg(int fd, const void *mine, void *theirs, size_t len);
void sv_barrier(int fd);

/* Test table and main(): argv[1] names the test to run (ctest registers each). */
struct sv_case {
	const char *name;
	void (*fn)(void);
};
int sv_test_main(int argc, char **argv, const struct sv_case *cases);

#endif
