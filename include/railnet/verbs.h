/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs seam. struct rn_verbs_ops has one member per libibverbs / mlx5dv call railnet
 * makes; src/verbs.c fills it by dlopen of RAILNET_IBVERBS_LIB (else libibverbs.so.1) and
 * dlvsym of each symbol at its version node. No other file calls ibv_* or mlx5dv_*
 * (make lint checks this); they call through rn_verbs().
 *
 * Conventions of every member: return 0 (or a count) on success and a negative errno on
 * failure; output parameters last and written only on success (the one exception is
 * post_send/post_recv's bad_wr, which the provider writes on failure only). Optional entries
 * (ECE, reg_mr_iova2, reg_dmabuf_mr, query_gid_ex/_table, query_port_speed, mlx5dv_*) are
 * never NULL: when the library lacks them they point at a stub returning -EOPNOTSUPP
 * (mlx5dv_is_supported: 0), and the matching RN_VCAP_* bit is clear in ops->caps.
 *
 * Thread safety: rn_verbs_load/rn_verbs_unload take verbs.c's own mutex and may be called
 * from any thread; the ops themselves are as thread-safe as libibverbs is. The table stays
 * valid until the last rn_verbs_unload, which must not race with calls through it.
 */
#ifndef RAILNET_VERBS_H
#define RAILNET_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Capability bits in rn_verbs_ops.caps: set when the optional symbol resolved. */
enum rn_verbs_cap {
	RN_VCAP_REG_MR_IOVA2 = 1u << 0,	      /* ibv_reg_mr_iova2 @IBVERBS_1.8 */
	RN_VCAP_ECE = 1u << 1,		      /* ibv_query_ece + ibv_set_ece @IBVERBS_1.10 */
	RN_VCAP_QUERY_GID_EX = 1u << 2,	      /* _ibv_query_gid_ex/_table @IBVERBS_1.11 */
	RN_VCAP_REG_DMABUF_MR = 1u << 3,      /* ibv_reg_dmabuf_mr @IBVERBS_1.12 */
	RN_VCAP_QUERY_PORT_SPEED = 1u << 4,   /* ibv_query_port_speed @IBVERBS_1.16 */
	RN_VCAP_MLX5DV = 1u << 5,	      /* libmlx5 opened, mlx5dv_is_supported @MLX5_1.8 */
	RN_VCAP_MLX5DV_DATA_DIRECT = 1u << 6, /* mlx5dv_get_data_direct_sysfs_path,
					       * mlx5dv_reg_dmabuf_mr @MLX5_1.25 */
};

/* Short name of one RN_VCAP_* bit ("reg_mr_iova2", "ece", ...); "?" for anything else. */
const char *rn_verbs_cap_name(unsigned int cap);

struct rn_verbs_ops {
	unsigned int caps;   /* RN_VCAP_* */
	const char *libpath; /* what was dlopened (for logs and the doctor) */

	/*
	 * devices. A kernel without the RDMA subsystem (libibverbs: NULL + ENOSYS) reads as
	 * 0 devices with *list = NULL; free_device_list(NULL) does nothing.
	 */
	int (*get_device_list)(struct ibv_device ***list, int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	int (*open_device)(struct ibv_device *dev, struct ibv_context **ctx);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	/* the extended (verbs_context) op when the context has one, else ibv_query_port@1.1 */
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	/* -EOPNOTSUPP without RN_VCAP_QUERY_GID_EX; -ENODATA for an empty entry */
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry);
	/* valid (non-zero) entries of every port, at most max; -EOPNOTSUPP without the cap */
	int (*query_gid_table)(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max);
	/* *pkey in host byte order */
	int (*query_pkey)(struct ibv_context *ctx, uint8_t port, int index, uint16_t *pkey);
	/* Mbps (the library's 100 Mb/s units converted); -EOPNOTSUPP when absent */
	int (*query_port_speed)(struct ibv_context *ctx, uint8_t port, uint64_t *mbps);

	/* async events */
	int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
	void (*ack_async_event)(struct ibv_async_event *ev);
	const char *(*event_type_str)(enum ibv_event_type type);
	const char *(*wc_status_str)(enum ibv_wc_status status);
	int (*fork_init)(void);

	/* protection domains and memory */
	int (*alloc_pd)(struct ibv_context *ctx, struct ibv_pd **pd);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **mr);
	int (*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			    unsigned int access, struct ibv_mr **mr);
	int (*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova, int fd,
			     int access, struct ibv_mr **mr);
	int (*dereg_mr)(struct ibv_mr *mr);

	/* completion queues */
	int (*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
			 struct ibv_comp_channel *channel, int comp_vector, struct ibv_cq **cq);
	int (*destroy_cq)(struct ibv_cq *cq);
	/*
	 * >= 0: completions polled; any negative provider return becomes -EIO (the verbs
	 * contract gives no errno). Calls the context op, as the inline does.
	 */
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);

	/* queue pairs */
	int (*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, struct ibv_qp **qp);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);

	/*
	 * libmlx5 (optional; only opened when the loaded library is the process's
	 * libibverbs.so.1, so libmlx5 never binds to a second libibverbs)
	 */
	int (*mlx5dv_is_supported)(struct ibv_device *dev); /* 1 yes, 0 no */
	int (*mlx5dv_get_data_direct_sysfs_path)(struct ibv_context *ctx, char *buf, size_t len);
	int (*mlx5dv_reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				    int fd, int access, int mlx5_access, struct ibv_mr **mr);
};

/*
 * Load libibverbs (path: RAILNET_IBVERBS_LIB from the config, NULL or "" for
 * "libibverbs.so.1") and libmlx5 (optional). Reference-counted: each successful load is paired
 * with one rn_verbs_unload; the last unload dlcloses both (libmlx5 is opened RTLD_NODELETE, as
 * its driver registration in libibverbs cannot be undone, so once it was opened both stay
 * mapped). Returns 0, or (after one WARN line
 * naming the library and the reason) -ENOENT when the library cannot be opened (dlerror text),
 * -ENOSYS when a required symbol is missing at its version node or the library defines no
 * symbol versions at all, -EBUSY when another library is already loaded, -ENAMETOOLONG for a
 * path longer than PATH_MAX. One INFO line lists the capabilities found.
 */
int rn_verbs_load(const char *libpath);
void rn_verbs_unload(void);

/* The loaded table; NULL when nothing is loaded. Valid until the matching rn_verbs_unload. */
const struct rn_verbs_ops *rn_verbs(void);

#endif /* RAILNET_VERBS_H */
