// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs single-process conformance: the exported ABI (dlvsym at every version node NCCL,
 * perftest and librdmacm bind to), object layouts clients and libmlx5 rely on, the query
 * verbs against the pod view, PD/MR/CQ/QP argument checks with rdma-core's errnos, the QP
 * state table, ECE, fork, the *_str helpers and malformed/missing views.
 */
#include "sv_test.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l;
	struct ibv_context *c = NULL;
	int n, i;

	l = ibv_get_device_list(&n);
	CHECK(l);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	CHECK(c);
	return c;
}

/* ---- ABI -------------------------------------------------------------------------------------- */

static void t_symbols(void)
{
	static const struct {
		const char *node;
		const char *syms;
	} nodes[] = {
		{ "IBVERBS_1.0",
		  "ibv_create_comp_channel ibv_destroy_comp_channel ibv_rate_to_mult "
		  "mult_to_ibv_rate ibv_get_sysfs_path ibv_read_sysfs_file "
		  "ibv_copy_path_rec_from_kern ibv_copy_path_rec_to_kern "
		  "ibv_copy_qp_attr_from_kern" },
		{ "IBVERBS_1.1",
		  "ibv_get_device_list ibv_free_device_list ibv_get_device_name "
		  "ibv_get_device_guid ibv_open_device ibv_close_device "
		  "ibv_get_async_event ibv_ack_async_event ibv_query_device "
		  "ibv_query_port ibv_query_gid ibv_query_pkey ibv_alloc_pd "
		  "ibv_dealloc_pd ibv_reg_mr ibv_rereg_mr ibv_dereg_mr ibv_create_cq "
		  "ibv_resize_cq ibv_destroy_cq ibv_get_cq_event ibv_ack_cq_events "
		  "ibv_create_srq ibv_modify_srq ibv_query_srq ibv_destroy_srq "
		  "ibv_create_qp ibv_query_qp ibv_modify_qp ibv_destroy_qp "
		  "ibv_create_ah ibv_create_ah_from_wc ibv_init_ah_from_wc "
		  "ibv_destroy_ah ibv_attach_mcast ibv_detach_mcast ibv_fork_init "
		  "ibv_dofork_range ibv_dontfork_range ibv_event_type_str "
		  "ibv_node_type_str ibv_port_state_str ibv_wc_status_str "
		  "ibv_rate_to_mbps mbps_to_ibv_rate ibv_resolve_eth_l2_from_gid "
		  "ibv_register_driver ibv_copy_ah_attr_from_kern" },
		{ "IBVERBS_1.5", "ibv_get_pkey_index" },
		{ "IBVERBS_1.6", "ibv_qp_to_qp_ex" },
		{ "IBVERBS_1.7", "ibv_reg_mr_iova" },
		{ "IBVERBS_1.8", "ibv_reg_mr_iova2" },
		{ "IBVERBS_1.9", "ibv_get_device_index" },
		{ "IBVERBS_1.10", "ibv_import_device ibv_import_mr ibv_import_pd ibv_query_ece "
				  "ibv_set_ece ibv_unimport_mr ibv_unimport_pd" },
		{ "IBVERBS_1.11", "_ibv_query_gid_ex _ibv_query_gid_table" },
		{ "IBVERBS_1.12", "ibv_reg_dmabuf_mr" },
		{ "IBVERBS_1.13", "ibv_import_dm ibv_is_fork_initialized ibv_unimport_dm" },
		{ "IBVERBS_1.14", "ibv_query_qp_data_in_order" },
		{ "IBVERBS_PRIVATE_34", "verbs_register_driver_34 _verbs_init_and_alloc_context "
					"ibv_cmd_create_qp_ex2 ibv_query_gid_type __verbs_log "
					"verbs_allow_disassociate_destroy" },
	};
	char path[512], syms[2048], *tok, *save;
	const char *b = getenv("RN_BUILD_DIR");
	void *h;
	size_t i;

	snprintf(path, sizeof(path), "%s/softverbs/libibverbs.so.1", b ? b : ".");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(syms, sizeof(syms), "%s", nodes[i].syms);
		for (tok = strtok_r(syms, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			if (!dlvsym(h, tok, nodes[i].node)) {
				fprintf(stderr, "%s@%s missing\n", tok, nodes[i].node);
				exit(1);
			}
		}
	}
	/* a symbol exists only at its own node (rdma-core's placement) */
	CHECK(!dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.1"));
	CHECK(!dlvsym(h, "sv_init", "IBVERBS_1.1") && !dlsym(h, "sv_init"));
	dlclose(h);
}

/* Every versioned symbol the installed perftest binaries need must resolve. */
static void t_perftest_loads(void)
{
	const char *bins[] = { "/usr/bin/ib_write_bw", "/usr/bin/ib_read_lat" };
	char cmd[1024];
	const char *b = getenv("RN_BUILD_DIR");

	for (size_t i = 0; i < 2; i++) {
		int st;

		if (access(bins[i], X_OK)) {
			printf("%s not installed (apt install perftest); skipped\n", bins[i]);
			exit(77);
		}
		snprintf(cmd, sizeof(cmd),
			 "LD_LIBRARY_PATH=%s/softverbs LD_BIND_NOW=1 %s -h >/dev/null 2>&1",
			 b ? b : ".", bins[i]);
		st = system(cmd);
		CHECK(WIFEXITED(st));
		/* perftest -h exits 1 after printing usage; ld.so failures exit 127 */
		CHECK(WEXITSTATUS(st) != 127);
	}
}

static void t_layout(void)
{
	struct ibv_device **l;
	struct ibv_context *c;
	struct verbs_context *vc;
	int n;

	l = ibv_get_device_list(&n);
	CHECK(l && n == 2);
	/* libmlx5's mlx5dv_is_supported reads the pointer after struct ibv_device */
	CHECK(*(void **)(l[0] + 1) != NULL);
	CHECK_EQ(l[0]->node_type, IBV_NODE_CA);
	CHECK_EQ(l[0]->transport_type, IBV_TRANSPORT_IB);
	CHECK(!strcmp(l[0]->name, "svdev0") && !strcmp(l[1]->name, "svdev1"));
	CHECK(strstr(l[0]->ibdev_path, "class/infiniband/svdev0"));
	CHECK_EQ(ibv_get_device_guid(l[1]), htobe64(0x5356000000000002ull));
	CHECK_EQ(ibv_get_device_index(l[1]), 1);
	c = ibv_open_device(l[0]);
	CHECK(c);
	CHECK(c->abi_compat == (void *)(uintptr_t)UINTPTR_MAX);
	vc = verbs_get_ctx(c);
	CHECK(vc);
	CHECK(vc->sz >= sizeof(struct verbs_context));
	CHECK(vc->query_port && vc->query_device_ex && vc->create_qp_ex);
	CHECK(c->ops.post_send && c->ops.post_recv && c->ops.poll_cq && c->ops.req_notify_cq);
	CHECK(c->async_fd >= 0 && fcntl(c->async_fd, F_GETFD) >= 0);
	CHECK(c->num_comp_vectors >= 1);
	ibv_free_device_list(l);
	CHECK_EQ(ibv_close_device(c), 0);
}

/* How many threads of this process are named name (/proc/self/task/<tid>/comm). */
static int threads_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	CHECK(d);
	while ((e = readdir(d))) {
		char path[300], comm[32] = { 0 };
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			n += !strcmp(comm, name);
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * threads_named, waiting up to a second for it to reach want: a joined thread may still be
 * listed in /proc for a moment (the kernel wakes the joiner before it unlists the task).
 */
static int threads_named_settle(const char *name, int want)
{
	int n = threads_named(name);

	for (int i = 0; i < 100 && n != want; i++) {
		usleep(10000);
		n = threads_named(name);
	}
	return n;
}

/* Each open device has one NIC thread, named "sv:<device>"; closing the device ends it. */
static void t_nic_thread(void)
{
	struct ibv_context *a, *b;

	CHECK_EQ(threads_named("sv:svdev0"), 0);
	a = open_dev("svdev0");
	b = open_dev("svdev1");
	CHECK_EQ(threads_named("sv:svdev0"), 1);
	CHECK_EQ(threads_named("sv:svdev1"), 1);
	CHECK_EQ(ibv_close_device(a), 0);
	CHECK_EQ(threads_named_settle("sv:svdev0", 0), 0);
	CHECK_EQ(threads_named("sv:svdev1"), 1);
	CHECK_EQ(ibv_close_device(b), 0);
	CHECK_EQ(threads_named_settle("sv:svdev1", 0), 0);
}

/* ---- queries ---------------------------------------------------------------------------------- */

static void t_query(void)
{
	struct ibv_context *c = open_dev("svdev1");
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge, tbl[32];
	union ibv_gid g;
	__be16 pkey;

	CHECK_EQ(ibv_query_device(c, &da), 0);
	CHECK_EQ(da.phys_port_cnt, 2);
	CHECK_EQ(da.node_guid, htobe64(0x5356000000000002ull));
	CHECK(da.max_qp_wr >= 1024 && da.max_sge >= 16 && da.max_cqe >= 65536);
	CHECK_EQ(ibv_query_device_ex(c, NULL, &dx), 0);
	CHECK_EQ(dx.orig_attr.phys_port_cnt, 2);
	CHECK_EQ(dx.phys_port_cnt_ex, 2);

	CHECK_EQ(ibv_query_port(c, 1, &pa), 0); /* inline: vctx->query_port */
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.active_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.gid_tbl_len, 4);
	CHECK_EQ(pa.active_width, 2);  /* 4X */
	CHECK_EQ(pa.active_speed, 32); /* EDR */
	CHECK_EQ(ibv_query_port(c, 3, &pa), EINVAL);
	CHECK_EQ(ibv_query_port(c, 0, &pa), EINVAL);

	CHECK_EQ(ibv_query_gid(c, 2, 1, &g), 0);
	CHECK(g.raw[10] == 0xff && g.raw[11] == 0xff && g.raw[12] == 10 && g.raw[13] == 1 &&
	      g.raw[14] == 2 && g.raw[15] == 1);
	CHECK_EQ(ibv_query_gid(c, 1, 2, &g), 0); /* foreign entry reads as zero */
	CHECK(!g.global.subnet_prefix && !g.global.interface_id);
	CHECK_EQ(ibv_query_gid(c, 1, 4, &g), -1);
	CHECK_EQ(ibv_query_gid(c, 9, 0, &g), -1);

	CHECK_EQ(ibv_query_gid_ex(c, 1, 1, &ge, 0), 0);
	CHECK_EQ(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	CHECK_EQ(ge.gid_index, 1);
	CHECK_EQ(ge.port_num, 1);
	CHECK_EQ(ibv_query_gid_ex(c, 1, 0, &ge, 0), 0);
	CHECK_EQ(ge.gid_type, IBV_GID_TYPE_ROCE_V1);
	CHECK_EQ(ibv_query_gid_ex(c, 1, 2, &ge, 0), ENODATA);
	CHECK_EQ(ibv_query_gid_ex(c, 1, 9, &ge, 0), EINVAL);
	CHECK_EQ(ibv_query_gid_table(c, tbl, 32, 0), 6); /* 3 valid per port */
	CHECK_EQ(ibv_query_gid_table(c, tbl, 2, 0), -EINVAL);

	CHECK_EQ(ibv_query_pkey(c, 1, 0, &pkey), 0);
	CHECK_EQ(pkey, htobe16(0xffff));
	CHECK_EQ(ibv_query_pkey(c, 1, 1, &pkey), -1);
	CHECK_EQ(ibv_get_pkey_index(c, 1, htobe16(0xffff)), 0);
	CHECK_EQ(ibv_get_pkey_index(c, 1, htobe16(0x1234)), -1);
	CHECK_EQ(ibv_close_device(c), 0);
}

/* ---- PD / MR / CQ --------------------------------------------------------------------------- */

static void t_mr(void)
{
	struct ibv_context *c = open_dev("svdev0");
	struct ibv_pd *pd = ibv_alloc_pd(c);
	char *buf = aligned_alloc(4096, 65536);
	struct ibv_mr *mr, *mr2;

	CHECK(pd && buf);
	mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr);
	CHECK(mr->addr == buf && mr->length == 65536 && mr->pd == pd && mr->context == c);
	CHECK(mr->lkey == mr->rkey);
	/* relaxed ordering (optional range) is accepted through reg_mr_iova2 */
	mr2 = ibv_reg_mr_iova2(pd, buf, 4096, 0x1000, IBV_ACCESS_LOCAL_WRITE | (1 << 20));
	CHECK(mr2);
	CHECK(mr2->lkey != mr->lkey);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
	/* remote write without local write: EINVAL (kernel rule) */
	errno = 0;
	CHECK(!ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibv_reg_mr(pd, (void *)4096, 4096, IBV_ACCESS_LOCAL_WRITE));
	CHECK_EQ(errno, EFAULT);
	errno = 0;
	CHECK(!ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, IBV_ACCESS_LOCAL_WRITE));
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_fork_init(), 0);
	CHECK_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	CHECK_EQ(ibv_close_device(c), 0);
	free(buf);
}

static void t_cq(void)
{
	struct ibv_context *c = open_dev("svdev0");
	struct ibv_comp_channel *ch = ibv_create_comp_channel(c);
	struct ibv_cq *cq;
	struct ibv_wc wc;
	struct ibv_cq_init_attr_ex cx = { .cqe = 16 };

	CHECK(ch);
	errno = 0;
	CHECK(!ibv_create_cq(c, 0, NULL, NULL, 0));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ibv_create_cq(c, 16, NULL, NULL, 5)); /* no such completion vector */
	CHECK_EQ(errno, EINVAL);
	cq = ibv_create_cq(c, 16, (void *)0x1234, ch, 0);
	CHECK(cq);
	CHECK(cq->cqe >= 16 && cq->channel == ch && cq->cq_context == (void *)0x1234);
	CHECK_EQ(ch->refcnt, 1);
	CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(ibv_resize_cq(cq, 64), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	{
		struct ibv_cq_ex *x = ibv_create_cq_ex(c, &cx);
		struct ibv_poll_cq_attr pa = { 0 };

		CHECK(x);
		CHECK_EQ(ibv_start_poll(x, &pa), ENOENT); /* empty; no end_poll */
		CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(x), 1, &wc), 0);
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(x)), 0);
		cx.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		errno = 0;
		CHECK(!ibv_create_cq_ex(c, &cx));
		CHECK_EQ(errno, EOPNOTSUPP);
	}
	CHECK_EQ(ibv_close_device(c), 0);
}

/* ---- QP state machine ---------------------------------------------------------------------- */

static void t_qp_states(void)
{
	struct ibv_context *c = open_dev("svdev0");
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .cap = { 16, 16, 2, 2, 0 }
	};
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr a, q;
	struct ibv_qp *qp;
	union ibv_gid gid;
	struct ibv_ece ece;
	const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	const int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_recv_wr rwr = { 0 }, *rbad;

	CHECK(pd && cq);
	/* argument checks */
	ia.qp_type = IBV_QPT_UD;
	errno = 0;
	CHECK(!ibv_create_qp(pd, &ia));
	CHECK_EQ(errno, EOPNOTSUPP);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_sge = 1000;
	errno = 0;
	CHECK(!ibv_create_qp(pd, &ia));
	CHECK_EQ(errno, EINVAL);
	ia.cap.max_send_sge = 2;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp);
	CHECK(qp->qp_num > 1 && qp->qp_num <= 0xffffff);
	CHECK_EQ(qp->state, IBV_QPS_RESET);
	CHECK(ibv_qp_to_qp_ex(qp));
	CHECK_EQ(ibv_destroy_cq(cq), EBUSY);

	/* posting below the required states */
	CHECK_EQ(ibv_post_recv(qp, &rwr, &rbad), EINVAL);
	CHECK_EQ(ibv_post_send(qp, &swr, &sbad), EINVAL);

	/* RESET->INIT needs PKEY_INDEX, PORT, ACCESS_FLAGS; no more */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, init_mask | IBV_QP_TIMEOUT), EINVAL);
	a.port_num = 3;
	CHECK_EQ(ibv_modify_qp(qp, &a, init_mask), EINVAL); /* no such port */
	CHECK_EQ(qp->state, IBV_QPS_RESET);
	a.port_num = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a, init_mask), 0);
	CHECK_EQ(qp->state, IBV_QPS_INIT);
	CHECK_EQ(ibv_post_recv(qp, &rwr, &rbad), 0); /* receives from INIT on */
	CHECK_EQ(ibv_post_send(qp, &swr, &sbad), EINVAL);
	/* INIT->RTS skips RTR: illegal */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(qp, &a, rts_mask), EINVAL);

	/* INIT->RTR: all six required; on RoCE the GRH is mandatory and sgid must be valid */
	CHECK_EQ(ibv_query_gid(c, 1, 1, &gid), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a, rtr_mask), EINVAL); /* is_global 0 on Ethernet */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 2; /* foreign entry */
	CHECK_EQ(ibv_modify_qp(qp, &a, rtr_mask), EINVAL);
	a.ah_attr.grh.sgid_index = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a, rtr_mask & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
	a.path_mtu = 9;
	CHECK_EQ(ibv_modify_qp(qp, &a, rtr_mask), EINVAL);
	a.path_mtu = IBV_MTU_1024;
	CHECK_EQ(qp->state, IBV_QPS_INIT);
	CHECK_EQ(ibv_modify_qp(qp, &a, rtr_mask), 0);
	CHECK_EQ(qp->state, IBV_QPS_RTR);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 8; /* > 7 */
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a, rts_mask), EINVAL);
	a.retry_cnt = 7;
	CHECK_EQ(ibv_modify_qp(qp, &a, rts_mask & ~IBV_QP_TIMEOUT), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, rts_mask | IBV_QP_DEST_QPN), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, rts_mask), 0);
	CHECK_EQ(qp->state, IBV_QPS_RTS);

	/* RTS->RTS with an optional attribute; CUR_STATE must match */
	a.min_rnr_timer = 3;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER), 0);
	a.cur_qp_state = IBV_QPS_INIT;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_PORT), EINVAL);

	CHECK_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
	CHECK_EQ(q.qp_state, IBV_QPS_RTS);
	CHECK_EQ(q.timeout, 14);
	CHECK_EQ(q.min_rnr_timer, 3);
	CHECK_EQ(q.dest_qp_num, qp->qp_num);
	CHECK_EQ(q.path_mtu, IBV_MTU_1024);
	CHECK_EQ(qi.cap.max_send_wr, 16);
	CHECK(qi.send_cq == cq);

	/* ECE */
	CHECK_EQ(ibv_query_ece(qp, &ece), 0);
	CHECK(ece.vendor_id != 0);
	ece.options = 0x5;
	CHECK_EQ(ibv_set_ece(qp, &ece), 0);
	memset(&ece, 0, sizeof(ece));
	CHECK_EQ(ibv_query_ece(qp, &ece), 0);
	CHECK_EQ(ece.options, 0x5);
	ece.vendor_id = 0;
	CHECK_EQ(ibv_set_ece(qp, &ece), EOPNOTSUPP);

	/* any -> ERR takes nothing but STATE; ERR -> RESET -> INIT again */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(qp->state, IBV_QPS_ERR);
	{
		struct ibv_wc wc;

		/* the receive posted in INIT was flushed */
		CHECK_EQ(sv_poll(cq, &wc, 1, 2000), 1);
		CHECK_WC(wc, IBV_WC_WR_FLUSH_ERR);
	}
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	CHECK_EQ(ibv_modify_qp(qp, &a, init_mask), 0);
	CHECK_EQ(ibv_query_qp_data_in_order(qp, IBV_WR_RDMA_WRITE, 0), 0);

	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(c), 0);
}

static void t_unsupported(void)
{
	struct ibv_context *c = open_dev("svdev0");
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ah_attr aa = { 0 };

	errno = 0;
	CHECK(!ibv_create_srq(pd, &sa));
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(!ibv_create_ah(pd, &aa));
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(!ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(!ibv_alloc_td(c, &(struct ibv_td_init_attr){ 0 }));
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(c), 0);
}

static void t_strings(void)
{
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success"));
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error"));
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error"));
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded"));
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR), "RNR retry counter exceeded"));
	CHECK(!strcmp(ibv_wc_status_str(999), "unknown"));
	CHECK(!strcmp(ibv_event_type_str(IBV_EVENT_PORT_ERR), "port error"));
	CHECK(!strcmp(ibv_event_type_str(IBV_EVENT_QP_FATAL),
		      "local work queue catastrophic error"));
	CHECK(!strcmp(ibv_event_type_str(IBV_EVENT_GID_CHANGE), "GID table change"));
	CHECK(!strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter"));
	CHECK(!strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "active"));
	CHECK(!strcmp(ibv_port_state_str(IBV_PORT_DOWN), "down"));
	CHECK_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	CHECK_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	CHECK_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	CHECK_EQ(mbps_to_ibv_rate(103125), IBV_RATE_100_GBPS);
}

/* ---- views ------------------------------------------------------------------------------------ */

static int count_in_child(const char *view)
{
	int p[2], n = -1;
	pid_t pid;

	CHECK(pipe(p) == 0);
	pid = fork();
	if (!pid) {
		struct ibv_device **l;

		if (view)
			setenv("SOFTVERBS_VIEW", view, 1);
		else
			unsetenv("SOFTVERBS_VIEW");
		l = ibv_get_device_list(&n);
		if (!l)
			n = -2;
		ibv_free_device_list(l);
		if (write(p[1], &n, sizeof(n)) != sizeof(n))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	CHECK(read(p[0], &n, sizeof(n)) == sizeof(n));
	close(p[0]);
	waitpid(pid, NULL, 0);
	return n;
}

static void wr(const char *dir, const char *rel, const char *s)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	CHECK(f);
	fputs(s, f);
	fclose(f);
}

static void t_views(void)
{
	const char *dir = getenv("SOFTVERBS_VIEW");

	CHECK_EQ(count_in_child(NULL), 0); /* no view: no NIC */
	CHECK_EQ(count_in_child("/nonexistent"), 0);
	CHECK_EQ(count_in_child(dir), 2);
	/* malformed files: that device is skipped (with a message), the other stays */
	wr(dir, "class/infiniband/svdev1/ports/1/rate", "fast\n");
	CHECK_EQ(count_in_child(dir), 1);
	wr(dir, "class/infiniband/svdev1/ports/1/rate", "100 Gb/sec (4X EDR)\n");
	wr(dir, "class/infiniband/svdev1/node_guid", "zz\n");
	CHECK_EQ(count_in_child(dir), 1);
	wr(dir, "class/infiniband/svdev1/node_guid", "5356:0000:0000:0002\n");
	wr(dir, "class/infiniband/svdev0/ports/2/state", "garbage");
	CHECK_EQ(count_in_child(dir), 1);
	wr(dir, "class/infiniband/svdev0/ports/2/state", "4: ACTIVE\n");
	wr(dir, "class/infiniband/svdev0/ports/1/gids/3", "not-a-gid"); /* bad entry only */
	CHECK_EQ(count_in_child(dir), 2);
	wr(dir, "softverbs/config", "bogus line\nport svdev0 1 mtu=77 frobnicate=1\n");
	CHECK_EQ(count_in_child(dir), 2);
}

static const struct sv_case cases[] = {
	{ "symbols", t_symbols },
	{ "perftest_loads", t_perftest_loads },
	{ "layout", t_layout },
	{ "query", t_query },
	{ "mr", t_mr },
	{ "cq", t_cq },
	{ "qp_states", t_qp_states },
	{ "unsupported", t_unsupported },
	{ "strings", t_strings },
	{ "views", t_views },
	{ "nic_thread", t_nic_thread },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	sv_test_view(2, 2, 100, NULL);
	return sv_test_main(argc, argv, cases);
}
