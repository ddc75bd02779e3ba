// SPDX-License-Identifier: Apache-2.0
/*
 * Implementation of the softverbs test helpers (sv_test.h). Uses only the public verbs API, as
 * any client would; never the library's internals.
 */
#include "sv_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sv_wfile(const char *dir, const char *rel, const char *content)
{
	char path[1024], tmp[1024];
	char *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(tmp, 0755);
		*p = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

static int sv_wlink(const char *dir, const char *rel, const char *target)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	unlink(path);
	return symlink(target, path) ? -errno : 0;
}

int sv_mkview(const char *dir, int ndev, int nports, int gbps, const char *extra)
{
	char rel[256], val[256], cfg[4096];
	int d, p, n = 0, err = 0;

	n += snprintf(cfg + n, sizeof(cfg) - n, "node testnode\npod testpod\nnetns -\nrdv %s/rdv\n",
		      dir);
	for (d = 0; d < ndev; d++) {
		snprintf(rel, sizeof(rel), "class/infiniband/svdev%d/node_guid", d);
		snprintf(val, sizeof(val), "5356:0000:0000:%04x\n", d + 1);
		err |= sv_wfile(dir, rel, val);
		snprintf(rel, sizeof(rel), "class/infiniband/svdev%d/node_type", d);
		err |= sv_wfile(dir, rel, "1: CA\n");
		for (p = 1; p <= nports; p++) {
			const char *pre = rel;

			(void)pre;
#define PF(name, v)                                                                             \
	do {                                                                                    \
		snprintf(rel, sizeof(rel), "class/infiniband/svdev%d/ports/%d/%s", d, p, name); \
		err |= sv_wfile(dir, rel, v);                                                   \
	} while (0)
			PF("state", "4: ACTIVE\n");
			PF("phys_state", "5: LinkUp\n");
			PF("link_layer", "Ethernet\n");
			snprintf(val, sizeof(val), "%d Gb/sec (4X EDR)\n", gbps);
			PF("rate", val);
			PF("lid", "0x0\n");
			PF("pkeys/0", "0xffff\n");
			snprintf(val, sizeof(val), "fe80:0000:0000:0000:5356:00ff:fe%02x:%04x\n", d,
				 p);
			PF("gids/0", val);
			PF("gid_attrs/types/0", "IB/RoCE v1\n");
			snprintf(val, sizeof(val), "0000:0000:0000:0000:0000:ffff:0a%02x:%02x01\n",
				 d, p);
			PF("gids/1", val);
			PF("gid_attrs/types/1", "RoCE v2\n");
			PF("gids/2", "0000:0000:0000:0000:0000:0000:0000:0000\n");
			snprintf(val, sizeof(val), "0000:0000:0000:0000:0000:ffff:0a%02x:%02x02\n",
				 d, p);
			PF("gids/3", val);
			PF("gid_attrs/types/3", "RoCE v2\n");
#undef PF
			snprintf(rel, sizeof(rel),
				 "class/infiniband/svdev%d/ports/%d/gid_attrs/types/2", d, p);
			err |= sv_wfile(dir, rel, "");
			err |= sv_wlink(dir, rel, "/proc/self/clear_refs");
			n += snprintf(cfg + n, sizeof(cfg) - n,
				      "port svdev%d %d mtu=4096 latency_us=0 rail=rail%d\n", d, p,
				      p);
		}
	}
	if (extra)
		n += snprintf(cfg + n, sizeof(cfg) - n, "%s\n", extra);
	err |= sv_wfile(dir, "softverbs/config", cfg);
	return err ? -EIO : 0;
}

static char sv_tmpdir[256];
static pid_t sv_owner;

static void sv_rm_view(void)
{
	char cmd[512];

	if (getpid() != sv_owner || !sv_tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sv_tmpdir);
	if (system(cmd))
		(void)0;
}

const char *sv_test_view(int ndev, int nports, int gbps, const char *extra)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(sv_tmpdir, sizeof(sv_tmpdir), "%s/sv-test-XXXXXX",
		 tmp && tmp[0] == '/' ? tmp : "/tmp");
	CHECK(mkdtemp(sv_tmpdir));
	sv_owner = getpid();
	atexit(sv_rm_view);
	CHECK(sv_mkview(sv_tmpdir, ndev, nports, gbps, extra) == 0);
	setenv("SOFTVERBS_VIEW", sv_tmpdir, 1);
	return sv_tmpdir;
}

static void sv_opts_default(struct sv_ep_opts *d, const struct sv_ep_opts *o)
{
	memset(d, 0, sizeof(*d));
	if (o)
		*d = *o;
	if (!d->dev)
		d->dev = "svdev0";
	if (!d->port)
		d->port = 1;
	if (!d->gid_index)
		d->gid_index = 1;
	if (!d->len)
		d->len = 1 << 20;
	if (!d->mr_access)
		d->mr_access =
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (!d->qp_access)
		d->qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (!d->max_send_wr)
		d->max_send_wr = 64;
	if (!d->max_recv_wr)
		d->max_recv_wr = 64;
	if (!d->max_sge)
		d->max_sge = 4;
	if (!d->max_inline)
		d->max_inline = 64;
	if (!d->timeout)
		d->timeout = 17; /* 0.54 s x 8: generous, CI machines are busy */
	if (!d->retry_cnt)
		d->retry_cnt = 7;
	if (!d->rnr_retry)
		d->rnr_retry = 7;
	if (!d->min_rnr_timer)
		d->min_rnr_timer = 1;
}

void sv_ep_open(struct sv_ep *ep, const struct sv_ep_opts *oo)
{
	struct ibv_device **list;
	struct sv_ep_opts o;
	int n, i;

	sv_opts_default(&o, oo);
	memset(ep, 0, sizeof(*ep));
	list = ibv_get_device_list(&n);
	CHECK(list);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), o.dev))
			break;
	CHECK(i < n);
	ep->ctx = ibv_open_device(list[i]);
	CHECK(ep->ctx);
	ibv_free_device_list(list);
	ep->port = o.port;
	ep->gid_index = o.gid_index;
	CHECK(ibv_query_gid(ep->ctx, (uint8_t)o.port, o.gid_index, &ep->gid) == 0);
	ep->pd = ibv_alloc_pd(ep->ctx);
	CHECK(ep->pd);
	if (o.channel) {
		ep->ch = ibv_create_comp_channel(ep->ctx);
		CHECK(ep->ch);
	}
	ep->cq = ibv_create_cq(ep->ctx, 512, ep, ep->ch, 0);
	CHECK(ep->cq);
	ep->len = o.len;
	ep->buf = aligned_alloc(4096, (o.len + 4095) & ~(size_t)4095);
	CHECK(ep->buf);
	memset(ep->buf, 0, o.len);
	ep->mr = ibv_reg_mr(ep->pd, ep->buf, o.len, o.mr_access);
	CHECK(ep->mr);

	if (o.qp_ex) {
		struct ibv_qp_init_attr_ex ax = {
			.send_cq = ep->cq,
			.recv_cq = ep->cq,
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = o.sq_sig_all,
			.cap = { .max_send_wr = (uint32_t)o.max_send_wr,
				 .max_recv_wr = (uint32_t)o.max_recv_wr,
				 .max_send_sge = (uint32_t)o.max_sge,
				 .max_recv_sge = (uint32_t)o.max_sge,
				 .max_inline_data = (uint32_t)o.max_inline },
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = ep->pd,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
					  IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ,
		};

		ep->qp = ibv_create_qp_ex(ep->ctx, &ax);
	} else {
		struct ibv_qp_init_attr a = {
			.send_cq = ep->cq,
			.recv_cq = ep->cq,
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = o.sq_sig_all,
			.cap = { .max_send_wr = (uint32_t)o.max_send_wr,
				 .max_recv_wr = (uint32_t)o.max_recv_wr,
				 .max_send_sge = (uint32_t)o.max_sge,
				 .max_recv_sge = (uint32_t)o.max_sge,
				 .max_inline_data = (uint32_t)o.max_inline },
		};

		ep->qp = ibv_create_qp(ep->pd, &a);
	}
	CHECK(ep->qp);
}

void sv_ep_info(const struct sv_ep *ep, struct sv_ep_info *info)
{
	memset(info, 0, sizeof(*info));
	info->qpn = ep->qp->qp_num;
	info->rkey = ep->mr->rkey;
	info->addr = (uintptr_t)ep->buf;
	info->gid = ep->gid;
}

void sv_ep_connect(struct sv_ep *ep, const struct sv_ep_opts *oo, const struct sv_ep_info *peer)
{
	struct sv_ep_opts o;
	struct ibv_qp_attr a;

	sv_opts_default(&o, oo);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)ep->port;
	a.qp_access_flags = (unsigned)o.qp_access;
	CHECK(ibv_modify_qp(ep->qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
	      0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o.path_mtu ? (enum ibv_mtu)o.path_mtu : IBV_MTU_4096;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = o.min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)ep->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = (uint8_t)ep->port;
	CHECK(ibv_modify_qp(ep->qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = o.timeout;
	a.retry_cnt = o.retry_cnt;
	a.rnr_retry = o.rnr_retry;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(ep->qp, &a,
			    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

void sv_ep_pair(int side, int fd, struct sv_ep *ep, struct sv_ep_opts *o, struct sv_ep_info *peer)
{
	struct sv_ep_info me;

	o->dev = side ? "svdev1" : "svdev0";
	sv_ep_open(ep, o);
	sv_ep_info(ep, &me);
	sv_xchg(fd, &me, peer, sizeof(me));
	sv_ep_connect(ep, o, peer);
	sv_barrier(fd);
}

void sv_ep_close(struct sv_ep *ep)
{
	if (ep->qp)
		CHECK(ibv_destroy_qp(ep->qp) == 0);
	CHECK(ibv_dereg_mr(ep->mr) == 0);
	CHECK(ibv_destroy_cq(ep->cq) == 0);
	if (ep->ch)
		CHECK(ibv_destroy_comp_channel(ep->ch) == 0);
	CHECK(ibv_dealloc_pd(ep->pd) == 0);
	CHECK(ibv_close_device(ep->ctx) == 0);
	free(ep->buf);
}

static uint64_t sv_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int sv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	uint64_t end = sv_ms() + (uint64_t)ms;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		CHECK(r >= 0);
		got += r;
		if (got < n) {
			if (sv_ms() > end)
				break;
			usleep(50);
		}
	}
	return got;
}

void sv_post_write(struct sv_ep *ep, enum ibv_wr_opcode op, uint64_t wr_id, size_t off, size_t len,
		   const struct sv_ep_info *peer, size_t roff, int flags, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)ep->buf + off,
			       .length = (uint32_t)len,
			       .lkey = ep->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id,
				  .sg_list = &sge,
				  .num_sge = len ? 1 : 0,
				  .opcode = op,
				  .send_flags = (unsigned)flags,
				  .imm_data = htobe32(imm) },
			   *bad;

	if (peer) {
		wr.wr.rdma.remote_addr = peer->addr + roff;
		wr.wr.rdma.rkey = peer->rkey;
	}
	CHECK(ibv_post_send(ep->qp, &wr, &bad) == 0);
}

void sv_post_recv(struct sv_ep *ep, uint64_t wr_id, size_t off, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)ep->buf + off,
			       .length = (uint32_t)len,
			       .lkey = ep->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0 }, *bad;

	CHECK(ibv_post_recv(ep->qp, &wr, &bad) == 0);
}

int sv_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
	CHECK_EQ(qp->state, a.qp_state);
	return a.qp_state;
}

void sv_xchg(int fd, const void *mine, void *theirs, size_t len)
{
	size_t done = 0;

	CHECK(write(fd, mine, len) == (ssize_t)len);
	while (done < len) {
		ssize_t n = read(fd, (char *)theirs + done, len - done);

		CHECK(n > 0);
		done += (size_t)n;
	}
}

void sv_barrier(int fd)
{
	char a = 'b', b;

	sv_xchg(fd, &a, &b, 1);
}

void sv_run2(void (*fn)(int side, int fd, void *arg), void *arg, int timeout_s)
{
	int sp[2], i, failed = 0;
	pid_t pid[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	fflush(NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		CHECK(pid[i] >= 0);
		if (!pid[i]) {
			close(sp[1 - i]);
			alarm((unsigned)timeout_s);
			fn(i, sp[i], arg);
			exit(0); /* not _exit: leak checkers run at exit */
		}
	}
	close(sp[0]);
	close(sp[1]);
	for (i = 0; i < 2; i++) {
		int st;

		CHECK(waitpid(pid[i], &st, 0) == pid[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "side %d: %s %d\n", i,
				WIFSIGNALED(st) ? "killed by signal" : "exit status",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			failed = 1;
			/* do not leave the other side hanging */
			kill(pid[1 - i], SIGKILL);
		}
	}
	CHECK(!failed);
}

int sv_test_main(int argc, char **argv, const struct sv_case *cases)
{
	const struct sv_case *c;
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (c = cases; c->name; c++) {
		if (argc > 1 && strcmp(argv[1], c->name))
			continue;
		printf("== %s\n", c->name);
		c->fn();
		printf("ok %s\n", c->name);
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(none)");
		return 2;
	}
	return 0;
}
