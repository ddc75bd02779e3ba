// SPDX-License-Identifier: Apache-2.0
/*
 * Tests of src/verbs.c: symbol binding at version nodes (fake libraries from verbs.cmake that
 * lack a symbol, put it at the wrong node or define no versions), capability bits and
 * -EOPNOTSUPP stubs, the conversion of every rdma-core return convention to -errno, output
 * parameters written only on success, reference-counted load/unload, and (with --system) the
 * system libibverbs. Only the --system run may skip.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "railnet/log.h"
#include "railnet/verbs.h"
#include "rn_test.h"

/* The system libibverbs, found by CMake (RN_SYSTEM_IBVERBS); "" when there is none. */
static const char *system_ibverbs(void)
{
	const char *p = getenv("RN_SYSTEM_IBVERBS");

	return p ? p : "";
}
#define SYSTEM_IBVERBS system_ibverbs()

#define IBV_CAPS_ALL                                                                         \
	(RN_VCAP_REG_MR_IOVA2 | RN_VCAP_ECE | RN_VCAP_QUERY_GID_EX | RN_VCAP_REG_DMABUF_MR | \
	 RN_VCAP_QUERY_PORT_SPEED)

/* Mirrors enum fake_style in fake_verbs_lib.c. */
enum { FAKE_CONV, FAKE_MINUS1, FAKE_NEGERR, FAKE_NOERRNO };

static char fake_paths[8][4096];
static int fake_next;

static const char *fake_lib(const char *variant)
{
	char *p = fake_paths[fake_next++ % 8];
	const char *dir = getenv("RN_FAKE_VERBS_DIR");

	snprintf(p, sizeof(fake_paths[0]), "%s/libfake_verbs_%s.so", dir ? dir : "test/fake",
		 variant);
	if (access(p, R_OK))
		fail_msg("fake library %s not built (RN_FAKE_VERBS_DIR)", p);
	return p;
}

/* Is the library at `path` mapped in this process? */
static int is_mapped(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != NULL;
}

/* The loaded fake library's control entry (the library is already open: same object). */
static void (*fake_ctl(const char *path))(int err, int style)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	void (*fn)(int, int);

	assert_non_null(h);
	*(void **)&fn = dlsym(h, "fake_verbs_fail");
	dlclose(h); /* verbs.c still holds it */
	assert_non_null(fn);
	return fn;
}

static int setup(void **state)
{
	rn_test_log_capture();
	return 0;
}

static int teardown(void **state)
{
	int leaked = rn_verbs() != NULL;

	while (rn_verbs())
		rn_verbs_unload();
	rn_log_set_logger(NULL);
	return leaked ? -1 : 0;
}

static void test_unloaded(void **state)
{
	assert_null(rn_verbs());
	rn_verbs_unload(); /* unbalanced: ignored */
	assert_null(rn_verbs());
	RN_ASSERT_NO_WARN();
}

static void test_missing_library(void **state)
{
	const char *path = "/nonexistent/railnet/libibverbs.so.1";

	assert_int_equal(rn_verbs_load(path), -ENOENT);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, path));
	assert_non_null(strstr(rn_test_log.last_warn, "cannot load"));
	assert_non_null(strstr(rn_test_log.last_warn, "No such file"));
	assert_non_null(strstr(rn_test_log.last_warn, "NCCL will use its other transports"));
	assert_null(rn_verbs());
}

/* A library that cannot serve must fail with -ENOSYS, one WARN, and leave nothing mapped. */
static void expect_enosys(const char *variant, const char *needle)
{
	const char *path = fake_lib(variant);

	rn_test_log_reset();
	assert_int_equal(rn_verbs_load(path), -ENOSYS);
	assert_int_equal(rn_test_log.warns, 1);
	if (!strstr(rn_test_log.last_warn, needle) || !strstr(rn_test_log.last_warn, path))
		fail_msg("%s: WARN lacks '%s' or the path: %s", variant, needle,
			 rn_test_log.last_warn);
	assert_null(rn_verbs());
	assert_false(is_mapped(path));
}

static void test_required_missing(void **state)
{
	expect_enosys("missing", "missing ibv_open_device@IBVERBS_1.1");
}

static void test_required_wrong_node(void **state)
{
	expect_enosys("wrongnode", "missing ibv_open_device@IBVERBS_1.1");
}

static void test_required_base_version(void **state)
{
	expect_enosys("basever", "missing ibv_open_device@IBVERBS_1.1");
}

/* Versioned libc references, own symbols at the base version: dlvsym finds nothing. */
static void test_unversioned(void **state)
{
	expect_enosys("unversioned", "defines no symbol versions");
	assert_non_null(strstr(rn_test_log.last_warn, "ibv_get_device_list@IBVERBS_1.1"));
}

/* No version information at all: dlvsym accepts any node, so verbs.c's own check must act. */
static void test_unversioned_bare(void **state)
{
	const char *path = fake_lib("bare");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	assert_non_null(h);
	assert_non_null(dlvsym(h, "ibv_open_device", "IBVERBS_1.1")); /* the premise */
	dlclose(h);
	expect_enosys("bare", "defines no symbol versions");
}

/* (b): every required symbol, no optional one: loads, caps 0, optional entries are stubs. */
static void test_required_only(void **state)
{
	const char *path = fake_lib("full");
	const struct rn_verbs_ops *v;
	struct ibv_gid_entry e, tbl[4];
	struct ibv_mr *mr = (void *)0x1;
	struct ibv_ece ece = { 0 };
	uint64_t mbps = 7;
	char buf[64];

	assert_int_equal(rn_verbs_load(path), 0);
	RN_ASSERT_NO_WARN();
	v = rn_verbs();
	assert_non_null(v);
	assert_int_equal(v->caps, 0);
	assert_string_equal(v->libpath, path);
	assert_true(rn_test_log_contains("libmlx5 not opened"));

	assert_int_equal(v->reg_mr_iova2(NULL, NULL, 0, 0, 0, &mr), -EOPNOTSUPP);
	assert_int_equal(v->reg_dmabuf_mr(NULL, 0, 0, 0, -1, 0, &mr), -EOPNOTSUPP);
	assert_ptr_equal(mr, (void *)0x1);
	assert_int_equal(v->query_ece(NULL, &ece), -EOPNOTSUPP);
	assert_int_equal(v->set_ece(NULL, &ece), -EOPNOTSUPP);
	assert_int_equal(v->query_gid_ex(NULL, 1, 0, &e), -EOPNOTSUPP);
	assert_int_equal(v->query_gid_table(NULL, tbl, 4), -EOPNOTSUPP);
	assert_int_equal(v->query_port_speed(NULL, 1, &mbps), -EOPNOTSUPP);
	assert_int_equal(mbps, 7);
	assert_int_equal(v->mlx5dv_is_supported(NULL), 0);
	assert_int_equal(v->mlx5dv_get_data_direct_sysfs_path(NULL, buf, sizeof(buf)), -EOPNOTSUPP);
	assert_int_equal(v->mlx5dv_reg_dmabuf_mr(NULL, 0, 0, 0, -1, 0, 0, &mr), -EOPNOTSUPP);
	assert_ptr_equal(mr, (void *)0x1);

	rn_verbs_unload();
	assert_null(rn_verbs());
	assert_false(is_mapped(path));
}

/* Optional symbols present but at IBVERBS_1.1 instead of their own nodes: not bound. */
static void test_optional_wrong_node(void **state)
{
	assert_int_equal(rn_verbs_load(fake_lib("optwrong")), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(rn_verbs()->caps, 0);
	rn_verbs_unload();
}

/* Every optional symbol at its node: caps set, wrappers convert. */
static void test_optional_present(void **state)
{
	const char *path = fake_lib("opt");
	void (*fake_fail)(int, int);
	const struct rn_verbs_ops *v;
	struct ibv_gid_entry e, tbl[4];
	struct ibv_mr *mr = NULL;
	struct ibv_ece ece = { 0 };
	uint64_t mbps = 0;

	assert_int_equal(rn_verbs_load(path), 0);
	RN_ASSERT_NO_WARN();
	v = rn_verbs();
	assert_int_equal(v->caps, IBV_CAPS_ALL);
	assert_true(rn_test_log_contains("!mlx5dv"));
	fake_fail = fake_ctl(path);

	assert_int_equal(v->query_port_speed(NULL, 1, &mbps), 0);
	assert_int_equal(mbps, 200000); /* 2000 × 100 Mb/s */
	assert_int_equal(v->query_ece(NULL, &ece), 0);
	assert_int_equal(ece.vendor_id, 0x15b3);
	assert_int_equal(v->set_ece(NULL, &ece), 0);
	assert_int_equal(v->query_gid_ex(NULL, 1, 5, &e), 0);
	assert_int_equal(e.gid_index, 5);
	assert_int_equal(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(v->query_gid_table(NULL, tbl, 4), 2);
	assert_int_equal(v->reg_mr_iova2(NULL, NULL, 0, 0, 0, &mr), 0);
	assert_non_null(mr);
	mr = NULL;
	assert_int_equal(v->reg_dmabuf_mr(NULL, 0, 0, 0, -1, 0, &mr), 0);
	assert_non_null(mr);

	/* failures, each in the function's own convention */
	mr = NULL;
	mbps = 0;
	memset(&e, 0x5a, sizeof(e));
	fake_fail(ENODATA, FAKE_CONV);
	assert_int_equal(v->query_gid_ex(NULL, 1, 9, &e), -ENODATA);
	assert_int_equal(e.gid_index, 0x5a5a5a5a);
	assert_int_equal(v->query_gid_table(NULL, tbl, 4), -ENODATA);
	fake_fail(EOPNOTSUPP, FAKE_CONV);
	assert_int_equal(v->query_ece(NULL, &ece), -EOPNOTSUPP);
	assert_int_equal(v->set_ece(NULL, &ece), -EOPNOTSUPP);
	fake_fail(EPROTONOSUPPORT, FAKE_CONV);
	assert_int_equal(v->reg_dmabuf_mr(NULL, 0, 0, 0, -1, 0, &mr), -EPROTONOSUPPORT);
	fake_fail(EFAULT, FAKE_CONV);
	assert_int_equal(v->reg_mr_iova2(NULL, NULL, 0, 0, 0, &mr), -EFAULT);
	assert_null(mr);
	fake_fail(EINVAL, FAKE_CONV);
	assert_int_equal(v->query_port_speed(NULL, 1, &mbps), -EINVAL);
	assert_int_equal(mbps, 0);
	fake_fail(0, FAKE_CONV);
	rn_verbs_unload();
}

/* Every required wrapper, success and each failure convention. */
static void test_conversions(void **state)
{
	const char *path = fake_lib("full");
	struct ibv_device **list = (void *)0x1;
	struct ibv_context *ctx = (void *)0x1;
	struct ibv_pd *pd = (void *)0x1;
	struct ibv_mr *mr = (void *)0x1;
	struct ibv_cq *cq = (void *)0x1;
	struct ibv_qp *qp = (void *)0x1;
	const struct rn_verbs_ops *v;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	struct ibv_qp_init_attr ia;
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	void (*fake_fail)(int, int);
	union ibv_gid gid;
	uint16_t pkey = 0;
	int n = -1;

	assert_int_equal(rn_verbs_load(path), 0);
	v = rn_verbs();
	fake_fail = fake_ctl(path);

	/* success paths */
	assert_int_equal(v->get_device_list(&list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v->get_device_name(list[0]), "fake0");
	assert_int_equal(v->open_device(list[0], &ctx), 0);
	v->free_device_list(list);
	v->free_device_list(NULL);
	assert_int_equal(v->query_device(ctx, &dattr), 0);
	assert_int_equal(dattr.max_qp, 42);
	/* a plain (non-extended) context: the exported ibv_query_port@1.1 answers */
	assert_int_equal(v->query_port(ctx, 1, &pattr), 0);
	assert_int_equal(pattr.state, IBV_PORT_ACTIVE);
	assert_int_equal(pattr.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(v->query_gid(ctx, 1, 3, &gid), 0);
	assert_int_equal(gid.raw[15], 3);
	assert_int_equal(v->query_pkey(ctx, 1, 0, &pkey), 0);
	assert_int_equal(pkey, 0x8001); /* host order */
	assert_int_equal(v->get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	v->ack_async_event(&ev);
	assert_string_equal(v->event_type_str(IBV_EVENT_PORT_ACTIVE), "fake event");
	assert_string_equal(v->wc_status_str(IBV_WC_SUCCESS), "fake status");
	assert_int_equal(v->fork_init(), 0);
	assert_int_equal(v->alloc_pd(ctx, &pd), 0);
	assert_int_equal(v->reg_mr(pd, NULL, 0, 0, &mr), 0);
	assert_int_equal(mr->lkey, 7);
	assert_int_equal(v->create_cq(ctx, 16, NULL, NULL, 0, &cq), 0);
	assert_int_equal(v->create_qp(pd, &ia, &qp), 0);
	assert_int_equal(qp->qp_num, 99);
	assert_int_equal(v->modify_qp(qp, &qa, IBV_QP_STATE), 0);
	assert_int_equal(v->query_qp(qp, &qa, IBV_QP_STATE, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(v->destroy_qp(qp), 0);
	assert_int_equal(v->destroy_cq(cq), 0);
	assert_int_equal(v->dereg_mr(mr), 0);
	assert_int_equal(v->dealloc_pd(pd), 0);
	assert_int_equal(v->close_device(ctx), 0);

	/* NULL + errno → -errno, output untouched */
	{
		struct ibv_context *c2 = (void *)0x2;
		struct ibv_pd *p2 = (void *)0x2;
		struct ibv_mr *m2 = (void *)0x2;
		struct ibv_cq *q2 = (void *)0x2;
		struct ibv_qp *qp2 = (void *)0x2;

		fake_fail(EACCES, FAKE_CONV);
		assert_int_equal(v->open_device(ctx->device, &c2), -EACCES);
		fake_fail(ENOMEM, FAKE_CONV);
		assert_int_equal(v->alloc_pd(ctx, &p2), -ENOMEM);
		assert_int_equal(v->reg_mr(pd, NULL, 0, 0, &m2), -ENOMEM);
		assert_int_equal(v->create_cq(ctx, 1, NULL, NULL, 0, &q2), -ENOMEM);
		assert_int_equal(v->create_qp(pd, &ia, &qp2), -ENOMEM);
		/* NULL and errno never set: -EIO, not a stale errno and not success */
		fake_fail(ENOMEM, FAKE_NOERRNO);
		errno = EBADF;
		assert_int_equal(v->alloc_pd(ctx, &p2), -EIO);
		assert_ptr_equal(c2, (void *)0x2);
		assert_ptr_equal(p2, (void *)0x2);
		assert_ptr_equal(m2, (void *)0x2);
		assert_ptr_equal(q2, (void *)0x2);
		assert_ptr_equal(qp2, (void *)0x2);
	}

	/* device list: ENOSYS (no RDMA in the kernel) is 0 devices, anything else an error */
	fake_fail(ENOSYS, FAKE_CONV);
	list = (void *)0x1;
	n = -1;
	assert_int_equal(v->get_device_list(&list, &n), 0);
	assert_int_equal(n, 0);
	assert_null(list);
	fake_fail(ENOMEM, FAKE_CONV);
	list = (void *)0x1;
	n = -1;
	assert_int_equal(v->get_device_list(&list, &n), -ENOMEM);
	assert_int_equal(n, -1);
	assert_ptr_equal(list, (void *)0x1);

	/* positive errno value → -errno; outputs untouched even if the library scribbled */
	memset(&dattr, 0, sizeof(dattr));
	memset(&pattr, 0, sizeof(pattr));
	fake_fail(EINVAL, FAKE_CONV);
	assert_int_equal(v->query_device(ctx, &dattr), -EINVAL);
	assert_int_equal(dattr.max_qp, 0);
	assert_int_equal(v->query_port(ctx, 1, &pattr), -EINVAL);
	assert_int_equal(pattr.state, 0);
	assert_int_equal(v->modify_qp(qp, &qa, IBV_QP_STATE), -EINVAL);
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(v->query_qp(qp, &qa, IBV_QP_STATE, &ia), -EINVAL);
	assert_int_equal(qa.qp_state, IBV_QPS_INIT);
	fake_fail(EBUSY, FAKE_CONV);
	assert_int_equal(v->dealloc_pd(pd), -EBUSY);
	assert_int_equal(v->dereg_mr(mr), -EBUSY);
	assert_int_equal(v->destroy_cq(cq), -EBUSY);
	assert_int_equal(v->destroy_qp(qp), -EBUSY);
	assert_int_equal(v->close_device(ctx), -EBUSY);
	fake_fail(ENOSYS, FAKE_CONV);
	assert_int_equal(v->fork_init(), -ENOSYS);

	/* -1 + errno (ibv_query_gid, ibv_query_pkey, ibv_get_async_event; some providers) */
	fake_fail(ENODEV, FAKE_CONV);
	memset(&gid, 0, sizeof(gid));
	pkey = 0;
	ev.event_type = IBV_EVENT_CQ_ERR;
	assert_int_equal(v->query_gid(ctx, 1, 3, &gid), -ENODEV);
	assert_int_equal(gid.raw[15], 0);
	assert_int_equal(v->query_pkey(ctx, 1, 0, &pkey), -ENODEV);
	assert_int_equal(pkey, 0);
	assert_int_equal(v->get_async_event(ctx, &ev), -ENODEV);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	fake_fail(ETIMEDOUT, FAKE_MINUS1);
	assert_int_equal(v->modify_qp(qp, &qa, IBV_QP_STATE), -ETIMEDOUT);
	/* a provider's -errno passes through; -1 without errno is -EIO */
	fake_fail(EAGAIN, FAKE_NEGERR);
	assert_int_equal(v->modify_qp(qp, &qa, IBV_QP_STATE), -EAGAIN);
	fake_fail(EAGAIN, FAKE_NOERRNO);
	assert_int_equal(v->query_gid(ctx, 1, 3, &gid), -EIO);

	fake_fail(0, FAKE_CONV);
	RN_ASSERT_NO_WARN();
	rn_verbs_unload();
}

/* ---- the context-op paths: what the inlines do, on a hand-made context ------------------ */

static struct ibv_send_wr *hp_bad_send;
static int hp_ret;

static int hp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	if (hp_ret)
		*bad = wr;
	hp_bad_send = wr;
	return hp_ret;
}

static int hp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (hp_ret)
		*bad = wr;
	return hp_ret;
}

static int hp_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	if (hp_ret)
		return hp_ret;
	for (int i = 0; i < n && i < 2; i++)
		wc[i].wr_id = 100 + i;
	return n < 2 ? n : 2;
}

static int hp_ext_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
			     size_t len)
{
	if (len != sizeof(*attr))
		return EINVAL;
	memset(attr, 0, len);
	attr->state = IBV_PORT_ARMED; /* differs from the fake's exported entry */
	attr->active_mtu = IBV_MTU_4096;
	return 0;
}

static void test_context_ops(void **state)
{
	struct verbs_context vctx;
	struct ibv_context *ctx = &vctx.context;
	struct ibv_qp qp = { .context = ctx };
	struct ibv_cq cq = { .context = ctx };
	struct ibv_send_wr swr = { .wr_id = 1 }, *sbad = NULL;
	struct ibv_recv_wr rwr = { .wr_id = 2 }, *rbad = NULL;
	struct ibv_port_attr pattr;
	const struct rn_verbs_ops *v;
	struct ibv_wc wc[4];

	memset(&vctx, 0, sizeof(vctx));
	ctx->ops.post_send = hp_post_send;
	ctx->ops.post_recv = hp_post_recv;
	ctx->ops.poll_cq = hp_poll_cq;
	assert_int_equal(rn_verbs_load(fake_lib("full")), 0);
	v = rn_verbs();

	hp_ret = 0;
	assert_int_equal(v->post_send(&qp, &swr, &sbad), 0);
	assert_ptr_equal(hp_bad_send, &swr);
	assert_null(sbad);
	assert_int_equal(v->post_recv(&qp, &rwr, &rbad), 0);
	assert_int_equal(v->poll_cq(&cq, 4, wc), 2);
	assert_int_equal(wc[1].wr_id, 101);
	hp_ret = ENOMEM;
	assert_int_equal(v->post_send(&qp, &swr, &sbad), -ENOMEM);
	assert_ptr_equal(sbad, &swr);
	assert_int_equal(v->post_recv(&qp, &rwr, &rbad), -ENOMEM);
	assert_ptr_equal(rbad, &rwr);
	hp_ret = -2; /* mlx5's CQ_POLL_ERR */
	assert_int_equal(v->poll_cq(&cq, 4, wc), -EIO);
	hp_ret = 0;

	/* an extended context: the query_port op is preferred over the exported entry */
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.sz = sizeof(vctx);
	vctx.query_port = hp_ext_query_port;
	assert_int_equal(v->query_port(ctx, 1, &pattr), 0);
	assert_int_equal(pattr.state, IBV_PORT_ARMED);
	assert_int_equal(pattr.active_mtu, IBV_MTU_4096);
	/* sz too small for the op: it is absent, the exported entry answers */
	vctx.sz = sizeof(vctx) - offsetof(struct verbs_context, query_port) - 1;
	assert_int_equal(v->query_port(ctx, 1, &pattr), 0);
	assert_int_equal(pattr.state, IBV_PORT_ACTIVE);

	RN_ASSERT_NO_WARN();
	rn_verbs_unload();
}

static void test_refcount(void **state)
{
	const char *path = fake_lib("full");
	const char *other = fake_lib("opt");

	for (int i = 0; i < 50; i++) {
		assert_int_equal(rn_verbs_load(path), 0);
		assert_int_equal(rn_verbs_load(path), 0);
		assert_non_null(rn_verbs());
		rn_verbs_unload();
		assert_non_null(rn_verbs());
		assert_true(is_mapped(path));
		rn_verbs_unload();
		assert_null(rn_verbs());
		assert_false(is_mapped(path));
	}
	RN_ASSERT_NO_WARN();

	/* another library while one is loaded: refused, the loaded one untouched */
	assert_int_equal(rn_verbs_load(path), 0);
	assert_int_equal(rn_verbs_load(other), -EBUSY);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, other));
	assert_string_equal(rn_verbs()->libpath, path);
	assert_false(is_mapped(other));
	rn_verbs_unload();
	assert_null(rn_verbs());

	/* a failed load after a successful cycle leaves nothing behind, and the next works */
	rn_test_log_reset();
	assert_int_equal(rn_verbs_load("/nonexistent/libibverbs.so.1"), -ENOENT);
	assert_int_equal(rn_test_log.warns, 1);
	assert_int_equal(rn_verbs_load(other), 0);
	assert_int_equal(rn_verbs()->caps, IBV_CAPS_ALL);
	rn_verbs_unload();
	assert_null(rn_verbs());
}

static const char *thread_path;

static void *load_unload_thread(void *arg)
{
	for (int i = 0; i < 200; i++) {
		if (rn_verbs_load(thread_path) || !rn_verbs())
			return (void *)1;
		rn_verbs_unload();
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[4];
	void *ret;
	int bad = 0;

	thread_path = fake_lib("full");
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_unload_thread, NULL), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		bad |= ret != NULL;
	}
	assert_false(bad);
	assert_null(rn_verbs());
	RN_ASSERT_NO_WARN();
}

static void test_cap_names(void **state)
{
	assert_string_equal(rn_verbs_cap_name(RN_VCAP_ECE), "ece");
	assert_string_equal(rn_verbs_cap_name(RN_VCAP_MLX5DV_DATA_DIRECT), "mlx5dv_data_direct");
	assert_string_equal(rn_verbs_cap_name(RN_VCAP_ECE | RN_VCAP_MLX5DV), "?");
}

/* ---- the system libibverbs (--system) ---------------------------------------------------- */

/*
 * What the library itself offers, asked directly, so the test holds on any rdma-core.
 * libmlx5 is opened RTLD_NODELETE as verbs.c does: its driver registration in libibverbs
 * cannot be undone, so unloading it would leave a dangling (and leaked) entry.
 */
static int has_sym(const char *lib, const char *name, const char *node)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	int found;

	if (!h)
		return 0;
	found = dlvsym(h, name, node) != NULL;
	dlclose(h);
	return found;
}

static void test_system(void **state)
{
	struct ibv_device **list = NULL;
	const struct rn_verbs_ops *v;
	unsigned int want_mlx5 = 0;
	int n = -1;

	if (has_sym("libmlx5.so.1", "mlx5dv_is_supported", "MLX5_1.8"))
		want_mlx5 |= RN_VCAP_MLX5DV;
	if (has_sym("libmlx5.so.1", "mlx5dv_reg_dmabuf_mr", "MLX5_1.25") &&
	    has_sym("libmlx5.so.1", "mlx5dv_get_data_direct_sysfs_path", "MLX5_1.25"))
		want_mlx5 |= RN_VCAP_MLX5DV_DATA_DIRECT;

	assert_int_equal(rn_verbs_load(SYSTEM_IBVERBS), 0);
	RN_ASSERT_NO_WARN();
	v = rn_verbs();
	assert_non_null(v);
	fprintf(stderr, "caps with %s: 0x%x:", SYSTEM_IBVERBS, v->caps);
	for (unsigned int bit = 1; bit <= RN_VCAP_MLX5DV_DATA_DIRECT; bit <<= 1)
		fprintf(stderr, " %s%s", v->caps & bit ? "" : "!", rn_verbs_cap_name(bit));
	fprintf(stderr, "\n");
	/* rdma-core >= 34 has all four; Debian 12 (v44) stops at IBVERBS_1.14 */
	assert_int_equal(v->caps & RN_VCAP_REG_MR_IOVA2, RN_VCAP_REG_MR_IOVA2);
	assert_int_equal(v->caps & RN_VCAP_ECE, RN_VCAP_ECE);
	assert_int_equal(v->caps & RN_VCAP_QUERY_GID_EX, RN_VCAP_QUERY_GID_EX);
	assert_int_equal(v->caps & RN_VCAP_REG_DMABUF_MR, RN_VCAP_REG_DMABUF_MR);
	assert_int_equal(!!(v->caps & RN_VCAP_QUERY_PORT_SPEED),
			 has_sym(SYSTEM_IBVERBS, "ibv_query_port_speed", "IBVERBS_1.16"));
	assert_int_equal(v->caps & (RN_VCAP_MLX5DV | RN_VCAP_MLX5DV_DATA_DIRECT), want_mlx5);

	assert_int_equal(v->get_device_list(&list, &n), 0);
	assert_true(n >= 0);
	if (access("/sys/class/infiniband_verbs", F_OK))
		assert_int_equal(n, 0);
	fprintf(stderr, "%d RDMA device(s)\n", n);
	for (int i = 0; i < n; i++)
		assert_non_null(v->get_device_name(list[i]));
	v->free_device_list(list);
	RN_ASSERT_NO_WARN();
	rn_verbs_unload();
	assert_null(rn_verbs());

	/* the default name resolves to the same library here */
	assert_int_equal(rn_verbs_load(NULL), 0);
	assert_string_equal(rn_verbs()->libpath, "libibverbs.so.1");
	assert_int_equal(rn_verbs_load(""), 0);
	rn_verbs_unload();
	rn_verbs_unload();
	assert_null(rn_verbs());
	RN_ASSERT_NO_WARN();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unloaded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_wrong_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_base_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unversioned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unversioned_bare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_optional_wrong_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_optional_present, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conversions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refcount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test(test_cap_names),
	};
	const struct CMUnitTest system_tests[] = {
		cmocka_unit_test_setup_teardown(test_system, setup, teardown),
	};

	if (argc > 1 && !strcmp(argv[1], "--system")) {
		if (!*SYSTEM_IBVERBS || access(SYSTEM_IBVERBS, R_OK))
			rn_test_skip(
				"the system libibverbs.so.1 was not found (RN_SYSTEM_IBVERBS='%s'; "
				"install libibverbs1): nothing to test",
				SYSTEM_IBVERBS);
		return cmocka_run_group_tests_name("verbs_system", system_tests, NULL, NULL);
	}
	return cmocka_run_group_tests_name("verbs", tests, NULL, NULL);
}
