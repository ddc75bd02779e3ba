// SPDX-License-Identifier: Apache-2.0
/*
 * verbs.c owns railnet's only contact with libibverbs and libmlx5: it dlopens them, binds
 * every symbol with dlvsym at the version node rdma-core defines it in, and fills the
 * struct rn_verbs_ops table whose members turn rdma-core's return conventions (errno values,
 * -1 + errno, NULL + errno) into 0 / -errno. It must not link against either library (the
 * plugin's NEEDED list is glibc only), and no other file may call ibv_* or mlx5dv_*.
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "railnet/log.h"
#include "railnet/verbs.h"

#define RN_IBVERBS_DEFAULT "libibverbs.so.1"
#define RN_IBV_1_1 "IBVERBS_1.1"
/* Tail of every WARN that makes railnet step aside. */
#define RN_NEEDS_IBVERBS \
	"; railnet needs rdma-core's libibverbs; NCCL will use its other transports"

/*
 * Bound libibverbs entry points. The types come from <infiniband/verbs.h> itself, so a
 * mismatch with the library's prototypes is a compile error, not a runtime surprise.
 */
struct rn_ibv_syms {
	__typeof__(ibv_get_device_list) *get_device_list;
	__typeof__(ibv_free_device_list) *free_device_list;
	__typeof__(ibv_get_device_name) *get_device_name;
	__typeof__(ibv_open_device) *open_device;
	__typeof__(ibv_close_device) *close_device;
	__typeof__(ibv_get_async_event) *get_async_event;
	__typeof__(ibv_ack_async_event) *ack_async_event;
	__typeof__(ibv_query_device) *query_device;
	__typeof__(ibv_query_port) *query_port; /* the exported compat entry, not the macro */
	__typeof__(ibv_query_gid) *query_gid;
	__typeof__(ibv_query_pkey) *query_pkey;
	__typeof__(ibv_query_qp) *query_qp;
	__typeof__(ibv_alloc_pd) *alloc_pd;
	__typeof__(ibv_dealloc_pd) *dealloc_pd;
	__typeof__(ibv_reg_mr) *reg_mr; /* the exported @1.1 function, not the macro */
	__typeof__(ibv_dereg_mr) *dereg_mr;
	__typeof__(ibv_create_cq) *create_cq;
	__typeof__(ibv_destroy_cq) *destroy_cq;
	__typeof__(ibv_create_qp) *create_qp;
	__typeof__(ibv_modify_qp) *modify_qp;
	__typeof__(ibv_destroy_qp) *destroy_qp;
	__typeof__(ibv_fork_init) *fork_init;
	__typeof__(ibv_event_type_str) *event_type_str;
	__typeof__(ibv_wc_status_str) *wc_status_str;
	/* optional */
	__typeof__(ibv_reg_mr_iova2) *reg_mr_iova2;
	__typeof__(ibv_query_ece) *query_ece;
	__typeof__(ibv_set_ece) *set_ece;
	__typeof__(_ibv_query_gid_ex) *query_gid_ex;
	__typeof__(_ibv_query_gid_table) *query_gid_table;
	__typeof__(ibv_reg_dmabuf_mr) *reg_dmabuf_mr;
	/* rdma-core 62+ (IBVERBS_1.16); not in every header we build against */
	int (*query_port_speed)(struct ibv_context *ctx, uint32_t port, uint64_t *speed);
};

/* libmlx5 entry points, declared here: the mlx5dv.h we build against may predate them. */
struct rn_mlx5_syms {
	bool (*is_supported)(struct ibv_device *dev);
	int (*get_data_direct_sysfs_path)(struct ibv_context *ctx, char *buf, size_t len);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
					uint64_t iova, int fd, int access, int mlx5_access);
};

/* One symbol to bind: where it lives and which capability it belongs to (0: required). */
struct rn_sym {
	const char *name;
	const char *node;
	size_t offset; /* into struct rn_ibv_syms or struct rn_mlx5_syms */
	unsigned int cap;
};

#define RN_IBV_SYM(member, sym, ver, capbit)                                                 \
	{                                                                                    \
		.name = #sym, .node = (ver), .offset = offsetof(struct rn_ibv_syms, member), \
		.cap = (capbit)                                                              \
	}
#define RN_MLX5_SYM(member, sym, ver, capbit)                                                 \
	{                                                                                     \
		.name = #sym, .node = (ver), .offset = offsetof(struct rn_mlx5_syms, member), \
		.cap = (capbit)                                                               \
	}

/* reference/verbs-abi.md §1 and reference/nccl-net-api.md §5. */
static const struct rn_sym rn_ibv_table[] = {
	RN_IBV_SYM(get_device_list, ibv_get_device_list, RN_IBV_1_1, 0),
	RN_IBV_SYM(free_device_list, ibv_free_device_list, RN_IBV_1_1, 0),
	RN_IBV_SYM(get_device_name, ibv_get_device_name, RN_IBV_1_1, 0),
	RN_IBV_SYM(open_device, ibv_open_device, RN_IBV_1_1, 0),
	RN_IBV_SYM(close_device, ibv_close_device, RN_IBV_1_1, 0),
	RN_IBV_SYM(get_async_event, ibv_get_async_event, RN_IBV_1_1, 0),
	RN_IBV_SYM(ack_async_event, ibv_ack_async_event, RN_IBV_1_1, 0),
	RN_IBV_SYM(query_device, ibv_query_device, RN_IBV_1_1, 0),
	RN_IBV_SYM(query_port, ibv_query_port, RN_IBV_1_1, 0),
	RN_IBV_SYM(query_gid, ibv_query_gid, RN_IBV_1_1, 0),
	RN_IBV_SYM(query_pkey, ibv_query_pkey, RN_IBV_1_1, 0),
	RN_IBV_SYM(query_qp, ibv_query_qp, RN_IBV_1_1, 0),
	RN_IBV_SYM(alloc_pd, ibv_alloc_pd, RN_IBV_1_1, 0),
	RN_IBV_SYM(dealloc_pd, ibv_dealloc_pd, RN_IBV_1_1, 0),
	RN_IBV_SYM(reg_mr, ibv_reg_mr, RN_IBV_1_1, 0),
	RN_IBV_SYM(dereg_mr, ibv_dereg_mr, RN_IBV_1_1, 0),
	RN_IBV_SYM(create_cq, ibv_create_cq, RN_IBV_1_1, 0),
	RN_IBV_SYM(destroy_cq, ibv_destroy_cq, RN_IBV_1_1, 0),
	RN_IBV_SYM(create_qp, ibv_create_qp, RN_IBV_1_1, 0),
	RN_IBV_SYM(modify_qp, ibv_modify_qp, RN_IBV_1_1, 0),
	RN_IBV_SYM(destroy_qp, ibv_destroy_qp, RN_IBV_1_1, 0),
	RN_IBV_SYM(fork_init, ibv_fork_init, RN_IBV_1_1, 0),
	RN_IBV_SYM(event_type_str, ibv_event_type_str, RN_IBV_1_1, 0),
	RN_IBV_SYM(wc_status_str, ibv_wc_status_str, RN_IBV_1_1, 0),
	RN_IBV_SYM(reg_mr_iova2, ibv_reg_mr_iova2, "IBVERBS_1.8", RN_VCAP_REG_MR_IOVA2),
	RN_IBV_SYM(query_ece, ibv_query_ece, "IBVERBS_1.10", RN_VCAP_ECE),
	RN_IBV_SYM(set_ece, ibv_set_ece, "IBVERBS_1.10", RN_VCAP_ECE),
	RN_IBV_SYM(query_gid_ex, _ibv_query_gid_ex, "IBVERBS_1.11", RN_VCAP_QUERY_GID_EX),
	RN_IBV_SYM(query_gid_table, _ibv_query_gid_table, "IBVERBS_1.11", RN_VCAP_QUERY_GID_EX),
	RN_IBV_SYM(reg_dmabuf_mr, ibv_reg_dmabuf_mr, "IBVERBS_1.12", RN_VCAP_REG_DMABUF_MR),
	RN_IBV_SYM(query_port_speed, ibv_query_port_speed, "IBVERBS_1.16",
		   RN_VCAP_QUERY_PORT_SPEED),
};

static const struct rn_sym rn_mlx5_table[] = {
	RN_MLX5_SYM(is_supported, mlx5dv_is_supported, "MLX5_1.8", RN_VCAP_MLX5DV),
	RN_MLX5_SYM(get_data_direct_sysfs_path, mlx5dv_get_data_direct_sysfs_path, "MLX5_1.25",
		    RN_VCAP_MLX5DV_DATA_DIRECT),
	RN_MLX5_SYM(reg_dmabuf_mr, mlx5dv_reg_dmabuf_mr, "MLX5_1.25", RN_VCAP_MLX5DV_DATA_DIRECT),
};

static const char *const rn_mlx5_names[] = { "libmlx5.so.1", "libmlx5.so" };

/* State below is written only under rn_verbs_lock; rn_verbs_current is read without it. */
static pthread_mutex_t rn_verbs_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int rn_verbs_refs;
static void *rn_ibv_handle;
static void *rn_mlx5_handle;
static struct rn_ibv_syms rn_ibv;
static struct rn_mlx5_syms rn_mlx5;
static char rn_verbs_path[PATH_MAX];
static struct rn_verbs_ops rn_verbs_loaded;
static const struct rn_verbs_ops *rn_verbs_current;

/* ---- return-convention helpers ---------------------------------------------------------- */

/* -errno from errno after a failed call; -EIO when the library left errno unset. */
static int rn_errno_neg(void)
{
	return errno ? -errno : -EIO;
}

/*
 * An int return of a verb: 0 (or a count) is success, a positive value is an errno value
 * (rdma-core's usual convention), -1 means "see errno" (the older one, and some providers),
 * and any other negative value is a provider's -errno.
 */
static int rn_ret(int ret)
{
	if (ret > 0)
		return -ret;
	if (ret == -1)
		return rn_errno_neg();
	return ret;
}

/* ---- devices and queries ---------------------------------------------------------------- */

static int rn_v_get_device_list(struct ibv_device ***list, int *num)
{
	struct ibv_device **l;
	int n = 0;

	errno = 0;
	l = rn_ibv.get_device_list(&n);
	if (!l) {
		/* no /sys/class/infiniband_verbs: a kernel without RDMA has no devices */
		if (errno == ENOSYS) {
			*list = NULL;
			*num = 0;
			return 0;
		}
		return rn_errno_neg();
	}
	*list = l;
	*num = n;
	return 0;
}

static void rn_v_free_device_list(struct ibv_device **list)
{
	if (list)
		rn_ibv.free_device_list(list);
}

static const char *rn_v_get_device_name(struct ibv_device *dev)
{
	return rn_ibv.get_device_name(dev);
}

static int rn_v_open_device(struct ibv_device *dev, struct ibv_context **ctx)
{
	struct ibv_context *c;

	errno = 0;
	c = rn_ibv.open_device(dev);
	if (!c)
		return rn_errno_neg();
	*ctx = c;
	return 0;
}

static int rn_v_close_device(struct ibv_context *ctx)
{
	errno = 0;
	return rn_ret(rn_ibv.close_device(ctx));
}

static int rn_v_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	struct ibv_device_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	errno = 0;
	ret = rn_ret(rn_ibv.query_device(ctx, &a));
	if (!ret)
		*attr = a;
	return ret;
}

/*
 * What the inline ibv_query_port does, spelled out: the inline calls the exported symbol by
 * name, which would make the plugin need libibverbs at link time. Prefer the extended op (it
 * knows active_speed_ex), else the exported compat entry with a zeroed struct.
 */
static int rn_v_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	struct ibv_port_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	errno = 0;
	if (vctx)
		ret = vctx->query_port(ctx, port, &a, sizeof(a));
	else
		ret = rn_ibv.query_port(ctx, port, (struct _compat_ibv_port_attr *)&a);
	ret = rn_ret(ret);
	if (!ret)
		*attr = a;
	return ret;
}

static int rn_v_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	union ibv_gid g;
	int ret;

	memset(&g, 0, sizeof(g));
	errno = 0;
	ret = rn_ret(rn_ibv.query_gid(ctx, port, index, &g));
	if (!ret)
		*gid = g;
	return ret;
}

static int rn_v_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			     struct ibv_gid_entry *entry)
{
	struct ibv_gid_entry e;
	int ret;

	memset(&e, 0, sizeof(e));
	errno = 0;
	ret = rn_ret(rn_ibv.query_gid_ex(ctx, port, index, &e, 0, sizeof(e)));
	if (!ret)
		*entry = e;
	return ret;
}

static int rn_v_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max)
{
	ssize_t n;

	if (max > INT_MAX)
		max = INT_MAX;
	errno = 0;
	/* returns a count or -errno; the library writes entries only on success */
	n = rn_ibv.query_gid_table(ctx, entries, max, 0, sizeof(*entries));
	return (int)n;
}

static int rn_v_query_pkey(struct ibv_context *ctx, uint8_t port, int index, uint16_t *pkey)
{
	__be16 p = 0;
	int ret;

	errno = 0;
	ret = rn_ret(rn_ibv.query_pkey(ctx, port, index, &p));
	if (!ret)
		*pkey = be16toh(p);
	return ret;
}

static int rn_v_query_port_speed(struct ibv_context *ctx, uint8_t port, uint64_t *mbps)
{
	uint64_t speed = 0;
	int ret;

	errno = 0;
	ret = rn_ret(rn_ibv.query_port_speed(ctx, port, &speed));
	if (ret)
		return ret;
	if (speed > UINT64_MAX / 100)
		return -EOVERFLOW;
	*mbps = speed * 100; /* the library counts in 100 Mb/s */
	return 0;
}

/* ---- async events and strings ----------------------------------------------------------- */

static int rn_v_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct ibv_async_event e;
	int ret;

	memset(&e, 0, sizeof(e));
	errno = 0;
	ret = rn_ret(rn_ibv.get_async_event(ctx, &e));
	if (!ret)
		*ev = e;
	return ret;
}

static void rn_v_ack_async_event(struct ibv_async_event *ev)
{
	rn_ibv.ack_async_event(ev);
}

static const char *rn_v_event_type_str(enum ibv_event_type type)
{
	return rn_ibv.event_type_str(type);
}

static const char *rn_v_wc_status_str(enum ibv_wc_status status)
{
	return rn_ibv.wc_status_str(status);
}

static int rn_v_fork_init(void)
{
	errno = 0;
	return rn_ret(rn_ibv.fork_init());
}

/* ---- protection domains and memory ------------------------------------------------------ */

static int rn_v_alloc_pd(struct ibv_context *ctx, struct ibv_pd **pd)
{
	struct ibv_pd *p;

	errno = 0;
	p = rn_ibv.alloc_pd(ctx);
	if (!p)
		return rn_errno_neg();
	*pd = p;
	return 0;
}

static int rn_v_dealloc_pd(struct ibv_pd *pd)
{
	errno = 0;
	return rn_ret(rn_ibv.dealloc_pd(pd));
}

/* NULL + errno → -errno; the MR is stored only on success. */
static int rn_mr_ret(struct ibv_mr *m, struct ibv_mr **mr)
{
	if (!m)
		return rn_errno_neg();
	*mr = m;
	return 0;
}

static int rn_v_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **mr)
{
	errno = 0;
	return rn_mr_ret(rn_ibv.reg_mr(pd, addr, len, access), mr);
}

static int rn_v_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			     unsigned int access, struct ibv_mr **mr)
{
	errno = 0;
	return rn_mr_ret(rn_ibv.reg_mr_iova2(pd, addr, len, iova, access), mr);
}

static int rn_v_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova, int fd,
			      int access, struct ibv_mr **mr)
{
	errno = 0;
	return rn_mr_ret(rn_ibv.reg_dmabuf_mr(pd, offset, len, iova, fd, access), mr);
}

static int rn_v_dereg_mr(struct ibv_mr *mr)
{
	errno = 0;
	return rn_ret(rn_ibv.dereg_mr(mr));
}

/* ---- completion queues and queue pairs -------------------------------------------------- */

static int rn_v_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			  struct ibv_comp_channel *channel, int comp_vector, struct ibv_cq **cq)
{
	struct ibv_cq *c;

	errno = 0;
	c = rn_ibv.create_cq(ctx, cqe, cq_context, channel, comp_vector);
	if (!c)
		return rn_errno_neg();
	*cq = c;
	return 0;
}

static int rn_v_destroy_cq(struct ibv_cq *cq)
{
	errno = 0;
	return rn_ret(rn_ibv.destroy_cq(cq));
}

/* Hot path: the inline calls cq->context->ops.poll_cq. */
static int rn_v_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n = ibv_poll_cq(cq, num_entries, wc);

	return n >= 0 ? n : -EIO;
}

static int rn_v_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, struct ibv_qp **qp)
{
	struct ibv_qp *q;

	errno = 0;
	q = rn_ibv.create_qp(pd, attr);
	if (!q)
		return rn_errno_neg();
	*qp = q;
	return 0;
}

static int rn_v_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	errno = 0;
	return rn_ret(rn_ibv.modify_qp(qp, attr, attr_mask));
}

static int rn_v_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			 struct ibv_qp_init_attr *init_attr)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	memset(&ia, 0, sizeof(ia));
	errno = 0;
	ret = rn_ret(rn_ibv.query_qp(qp, &a, attr_mask, &ia));
	if (!ret) {
		*attr = a;
		*init_attr = ia;
	}
	return ret;
}

static int rn_v_destroy_qp(struct ibv_qp *qp)
{
	errno = 0;
	return rn_ret(rn_ibv.destroy_qp(qp));
}

/* Hot path: the inlines call qp->context->ops.post_send/post_recv; 0 or an errno value. */
static int rn_v_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	int ret = ibv_post_send(qp, wr, bad_wr);

	return __builtin_expect(ret == 0, 1) ? 0 : rn_ret(ret);
}

static int rn_v_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret = ibv_post_recv(qp, wr, bad_wr);

	return __builtin_expect(ret == 0, 1) ? 0 : rn_ret(ret);
}

static int rn_v_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	struct ibv_ece e;
	int ret;

	memset(&e, 0, sizeof(e));
	errno = 0;
	ret = rn_ret(rn_ibv.query_ece(qp, &e));
	if (!ret)
		*ece = e;
	return ret;
}

static int rn_v_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	errno = 0;
	return rn_ret(rn_ibv.set_ece(qp, ece));
}

/* ---- libmlx5 ------------------------------------------------------------------------------ */

static int rn_v_mlx5dv_is_supported(struct ibv_device *dev)
{
	return rn_mlx5.is_supported(dev) ? 1 : 0;
}

static int rn_v_mlx5dv_get_data_direct_sysfs_path(struct ibv_context *ctx, char *buf, size_t len)
{
	errno = 0;
	return rn_ret(rn_mlx5.get_data_direct_sysfs_path(ctx, buf, len));
}

static int rn_v_mlx5dv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				     int fd, int access, int mlx5_access, struct ibv_mr **mr)
{
	errno = 0;
	return rn_mr_ret(rn_mlx5.reg_dmabuf_mr(pd, offset, len, iova, fd, access, mlx5_access), mr);
}

/* ---- stubs for optional entries the library lacks (rdma-core's dummy_ops.c idea) -------- */

static int rn_stub_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
				struct ibv_gid_entry *entry)
{
	return -EOPNOTSUPP;
}

static int rn_stub_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
				   size_t max)
{
	return -EOPNOTSUPP;
}

static int rn_stub_query_port_speed(struct ibv_context *ctx, uint8_t port, uint64_t *mbps)
{
	return -EOPNOTSUPP;
}

static int rn_stub_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				unsigned int access, struct ibv_mr **mr)
{
	return -EOPNOTSUPP;
}

static int rn_stub_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				 int fd, int access, struct ibv_mr **mr)
{
	return -EOPNOTSUPP;
}

static int rn_stub_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return -EOPNOTSUPP;
}

static int rn_stub_mlx5dv_is_supported(struct ibv_device *dev)
{
	return 0;
}

static int rn_stub_mlx5dv_get_data_direct_sysfs_path(struct ibv_context *ctx, char *buf, size_t len)
{
	return -EOPNOTSUPP;
}

static int rn_stub_mlx5dv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len,
					uint64_t iova, int fd, int access, int mlx5_access,
					struct ibv_mr **mr)
{
	return -EOPNOTSUPP;
}

/* Every entry points at a wrapper or a stub; rn_verbs_fill swaps in the optional wrappers. */
static const struct rn_verbs_ops rn_verbs_template = {
	.get_device_list = rn_v_get_device_list,
	.free_device_list = rn_v_free_device_list,
	.get_device_name = rn_v_get_device_name,
	.open_device = rn_v_open_device,
	.close_device = rn_v_close_device,
	.query_device = rn_v_query_device,
	.query_port = rn_v_query_port,
	.query_gid = rn_v_query_gid,
	.query_gid_ex = rn_stub_query_gid_ex,
	.query_gid_table = rn_stub_query_gid_table,
	.query_pkey = rn_v_query_pkey,
	.query_port_speed = rn_stub_query_port_speed,
	.get_async_event = rn_v_get_async_event,
	.ack_async_event = rn_v_ack_async_event,
	.event_type_str = rn_v_event_type_str,
	.wc_status_str = rn_v_wc_status_str,
	.fork_init = rn_v_fork_init,
	.alloc_pd = rn_v_alloc_pd,
	.dealloc_pd = rn_v_dealloc_pd,
	.reg_mr = rn_v_reg_mr,
	.reg_mr_iova2 = rn_stub_reg_mr_iova2,
	.reg_dmabuf_mr = rn_stub_reg_dmabuf_mr,
	.dereg_mr = rn_v_dereg_mr,
	.create_cq = rn_v_create_cq,
	.destroy_cq = rn_v_destroy_cq,
	.poll_cq = rn_v_poll_cq,
	.create_qp = rn_v_create_qp,
	.modify_qp = rn_v_modify_qp,
	.query_qp = rn_v_query_qp,
	.destroy_qp = rn_v_destroy_qp,
	.post_send = rn_v_post_send,
	.post_recv = rn_v_post_recv,
	.query_ece = rn_stub_ece,
	.set_ece = rn_stub_ece,
	.mlx5dv_is_supported = rn_stub_mlx5dv_is_supported,
	.mlx5dv_get_data_direct_sysfs_path = rn_stub_mlx5dv_get_data_direct_sysfs_path,
	.mlx5dv_reg_dmabuf_mr = rn_stub_mlx5dv_reg_dmabuf_mr,
};

static void rn_verbs_fill(struct rn_verbs_ops *ops, unsigned int caps)
{
	*ops = rn_verbs_template;
	ops->caps = caps;
	ops->libpath = rn_verbs_path;
	if (caps & RN_VCAP_REG_MR_IOVA2)
		ops->reg_mr_iova2 = rn_v_reg_mr_iova2;
	if (caps & RN_VCAP_ECE) {
		ops->query_ece = rn_v_query_ece;
		ops->set_ece = rn_v_set_ece;
	}
	if (caps & RN_VCAP_QUERY_GID_EX) {
		ops->query_gid_ex = rn_v_query_gid_ex;
		ops->query_gid_table = rn_v_query_gid_table;
	}
	if (caps & RN_VCAP_REG_DMABUF_MR)
		ops->reg_dmabuf_mr = rn_v_reg_dmabuf_mr;
	if (caps & RN_VCAP_QUERY_PORT_SPEED)
		ops->query_port_speed = rn_v_query_port_speed;
	if (caps & RN_VCAP_MLX5DV)
		ops->mlx5dv_is_supported = rn_v_mlx5dv_is_supported;
	if (caps & RN_VCAP_MLX5DV_DATA_DIRECT) {
		ops->mlx5dv_get_data_direct_sysfs_path = rn_v_mlx5dv_get_data_direct_sysfs_path;
		ops->mlx5dv_reg_dmabuf_mr = rn_v_mlx5dv_reg_dmabuf_mr;
	}
}

/* ---- loading ------------------------------------------------------------------------------ */

const char *rn_verbs_cap_name(unsigned int cap)
{
	switch (cap) {
	case RN_VCAP_REG_MR_IOVA2:
		return "reg_mr_iova2";
	case RN_VCAP_ECE:
		return "ece";
	case RN_VCAP_QUERY_GID_EX:
		return "query_gid_ex";
	case RN_VCAP_REG_DMABUF_MR:
		return "reg_dmabuf_mr";
	case RN_VCAP_QUERY_PORT_SPEED:
		return "query_port_speed";
	case RN_VCAP_MLX5DV:
		return "mlx5dv";
	case RN_VCAP_MLX5DV_DATA_DIRECT:
		return "mlx5dv_data_direct";
	default:
		return "?";
	}
}

static const char *rn_dlerror(void)
{
	const char *err = dlerror();

	return err ? err : "unknown dlopen error";
}

/* Append to a bounded message buffer; a full buffer ends in "...". */
static void rn_append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rn_append(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	int n;

	if (used + 1 >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= size - used && size > 4)
		memcpy(buf + size - 4, "...", 4);
}

/*
 * 1 when the object defines symbol versions (DT_VERDEF). glibc's dlvsym accepts any version
 * for an object without version information, so an unversioned library would otherwise pass
 * every check here and then break (ld.so aborts) any normally linked client in the process.
 */
static int rn_has_verdef(void *handle)
{
	struct link_map *lm = NULL;

	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm || !lm->l_ld)
		return 1; /* cannot tell: let dlvsym decide */
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_VERDEF)
			return 1;
	}
	return 0;
}

/*
 * Bind every symbol of `table` into `syms`. Returns the capability bits whose symbols all
 * resolved; the names of missing required symbols are appended to `missing`. Members of an
 * incomplete capability are cleared, so no half-present group is ever called.
 */
static unsigned int rn_bind(void *handle, const struct rn_sym *table, size_t n, void *syms,
			    char *missing, size_t missing_size, unsigned int *nmissing)
{
	unsigned int caps = 0, lost = 0;

	for (size_t i = 0; i < n; i++) {
		void *p = dlvsym(handle, table[i].name, table[i].node);

		memcpy((char *)syms + table[i].offset, &p, sizeof(p));
		if (p) {
			caps |= table[i].cap;
			continue;
		}
		lost |= table[i].cap;
		if (!table[i].cap) {
			rn_append(missing, missing_size, "%s%s@%s", *nmissing ? ", " : "",
				  table[i].name, table[i].node);
			(*nmissing)++;
		}
	}
	caps &= ~lost;
	for (size_t i = 0; i < n; i++) {
		if (table[i].cap & lost)
			memset((char *)syms + table[i].offset, 0, sizeof(void *));
	}
	return caps;
}

/*
 * libmlx5 is opened only when the library we loaded is what "libibverbs.so.1" names in this
 * process; otherwise libmlx5 would bind to a second libibverbs and be handed foreign objects.
 *
 * RTLD_NODELETE: libmlx5's constructor registers its driver in libibverbs' driver list and
 * nothing ever unregisters it (rdma-core never unloads a provider). Unmapping libmlx5 would
 * leave that entry dangling for every other user of libibverbs in the process (NCCL's own
 * IB transport, UCX), so once loaded it stays, and with it libibverbs.
 */
static unsigned int rn_mlx5_load(void)
{
	char missing[256] = "";
	unsigned int caps, nmissing = 0;
	const char *name = NULL;
	char why[512] = "";
	void *self;

	self = dlopen(RN_IBVERBS_DEFAULT, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (self)
		dlclose(self);
	if (self != rn_ibv_handle) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"libmlx5 not opened: %s is not this process's " RN_IBVERBS_DEFAULT
			"; advanced features disabled",
			rn_verbs_path);
		return 0;
	}
	for (size_t i = 0; i < sizeof(rn_mlx5_names) / sizeof(rn_mlx5_names[0]); i++) {
		rn_mlx5_handle = dlopen(rn_mlx5_names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (rn_mlx5_handle) {
			name = rn_mlx5_names[i];
			break;
		}
		rn_append(why, sizeof(why), "%s%s", i ? "; " : "", rn_dlerror());
	}
	if (!rn_mlx5_handle) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"libmlx5 not loaded (%s); advanced features disabled", why);
		return 0;
	}
	caps = rn_bind(rn_mlx5_handle, rn_mlx5_table,
		       sizeof(rn_mlx5_table) / sizeof(rn_mlx5_table[0]), &rn_mlx5, missing,
		       sizeof(missing), &nmissing);
	if (!(caps & RN_VCAP_MLX5DV)) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"%s lacks mlx5dv_is_supported@MLX5_1.8; advanced features disabled", name);
		goto err_close_mlx5;
	}
	if (!(caps & RN_VCAP_MLX5DV_DATA_DIRECT))
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s predates MLX5_1.25: Data Direct disabled",
			name);
	return caps;

err_close_mlx5:
	dlclose(rn_mlx5_handle);
	rn_mlx5_handle = NULL;
	memset(&rn_mlx5, 0, sizeof(rn_mlx5));
	return 0;
}

/* Called with rn_verbs_lock held and nothing loaded. */
static int rn_verbs_open(const char *path)
{
	char missing[512] = "", capstr[160] = "";
	unsigned int caps, nmissing = 0;
	int ret;

	rn_ibv_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!rn_ibv_handle) {
		RN_WARN("cannot load %s (%s)" RN_NEEDS_IBVERBS, path, rn_dlerror());
		return -ENOENT;
	}
	if (!rn_has_verdef(rn_ibv_handle)) {
		RN_WARN("%s is not a usable libibverbs: it defines no symbol versions, so %s@%s "
			"cannot be bound" RN_NEEDS_IBVERBS,
			path, rn_ibv_table[0].name, rn_ibv_table[0].node);
		ret = -ENOSYS;
		goto err_close_ibv;
	}
	caps = rn_bind(rn_ibv_handle, rn_ibv_table, sizeof(rn_ibv_table) / sizeof(rn_ibv_table[0]),
		       &rn_ibv, missing, sizeof(missing), &nmissing);
	if (nmissing) {
		RN_WARN("%s is not a usable libibverbs: missing %s" RN_NEEDS_IBVERBS, path,
			missing);
		ret = -ENOSYS;
		goto err_clear_syms;
	}
	caps |= rn_mlx5_load();

	for (unsigned int bit = 1; bit <= RN_VCAP_MLX5DV_DATA_DIRECT; bit <<= 1)
		rn_append(capstr, sizeof(capstr), "%s%s%s", *capstr ? " " : "",
			  caps & bit ? "" : "!", rn_verbs_cap_name(bit));
	RN_INFO(RN_SUB_INIT | RN_SUB_NET, "loaded %s (%s)", path, capstr);
	rn_verbs_fill(&rn_verbs_loaded, caps);
	return 0;

err_clear_syms:
	memset(&rn_ibv, 0, sizeof(rn_ibv));
err_close_ibv:
	dlclose(rn_ibv_handle);
	rn_ibv_handle = NULL;
	return ret;
}

int rn_verbs_load(const char *libpath)
{
	const char *path = libpath && *libpath ? libpath : RN_IBVERBS_DEFAULT;
	int ret = 0;

	pthread_mutex_lock(&rn_verbs_lock);
	if (rn_verbs_refs) {
		if (strcmp(path, rn_verbs_path)) {
			RN_WARN("cannot load %s: %s is already loaded in this process", path,
				rn_verbs_path);
			ret = -EBUSY;
			goto out_unlock;
		}
		rn_verbs_refs++;
		goto out_unlock;
	}
	if (strlen(path) >= sizeof(rn_verbs_path)) {
		RN_WARN("cannot load libibverbs: path of %zu bytes is longer than PATH_MAX",
			strlen(path));
		ret = -ENAMETOOLONG;
		goto out_unlock;
	}
	strcpy(rn_verbs_path, path);
	ret = rn_verbs_open(path);
	if (ret) {
		rn_verbs_path[0] = '\0';
		goto out_unlock;
	}
	rn_verbs_refs = 1;
	__atomic_store_n(&rn_verbs_current, &rn_verbs_loaded, __ATOMIC_RELEASE);

out_unlock:
	pthread_mutex_unlock(&rn_verbs_lock);
	return ret;
}

void rn_verbs_unload(void)
{
	pthread_mutex_lock(&rn_verbs_lock);
	if (!rn_verbs_refs || --rn_verbs_refs)
		goto out_unlock;
	__atomic_store_n(&rn_verbs_current, NULL, __ATOMIC_RELEASE);
	/* libmlx5 depends on libibverbs: close it first (it stays mapped: RTLD_NODELETE) */
	if (rn_mlx5_handle)
		dlclose(rn_mlx5_handle);
	dlclose(rn_ibv_handle);
	rn_mlx5_handle = NULL;
	rn_ibv_handle = NULL;
	memset(&rn_ibv, 0, sizeof(rn_ibv));
	memset(&rn_mlx5, 0, sizeof(rn_mlx5));
	memset(&rn_verbs_loaded, 0, sizeof(rn_verbs_loaded));
	rn_verbs_path[0] = '\0';

out_unlock:
	pthread_mutex_unlock(&rn_verbs_lock);
}

const struct rn_verbs_ops *rn_verbs(void)
{
	return __atomic_load_n(&rn_verbs_current, __ATOMIC_ACQUIRE);
}
