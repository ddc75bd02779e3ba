// SPDX-License-Identifier: Apache-2.0
/*
 * The parts of the libibverbs ABI softverbs does not emulate: SRQs, address handles,
 * multicast, import/export, the kernel-structure copy helpers and the provider-private
 * IBVERBS_PRIVATE_34 entry points that libmlx5/libefa link against (perftest loads them). Each
 * answers EOPNOTSUPP (or NULL with errno EOPNOTSUPP) and never touches its arguments.
 */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

SV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	return EOPNOTSUPP;
}

SV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				  struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	errno = EOPNOTSUPP;
	return -1;
}

SV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	return EOPNOTSUPP;
}

SV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* ---- IBVERBS_1.0 / 1.1 helpers that only make sense with a kernel uverbs ------------------ */

void ibv_register_driver(const char *name, void *init_func);
SV_EXPORT void ibv_register_driver(const char *name, void *init_func)
{
}

void ibv_copy_ah_attr_from_kern(void *dst, const void *src);
SV_EXPORT void ibv_copy_ah_attr_from_kern(void *dst, const void *src)
{
}

void ibv_copy_qp_attr_from_kern(void *dst, const void *src);
SV_EXPORT void ibv_copy_qp_attr_from_kern(void *dst, const void *src)
{
}

void ibv_copy_path_rec_from_kern(void *dst, const void *src);
SV_EXPORT void ibv_copy_path_rec_from_kern(void *dst, const void *src)
{
}

void ibv_copy_path_rec_to_kern(void *dst, const void *src);
SV_EXPORT void ibv_copy_path_rec_to_kern(void *dst, const void *src)
{
}

const char *ibv_get_sysfs_path(void);
SV_EXPORT const char *ibv_get_sysfs_path(void)
{
	sv_init();
	return sv_g.view[0] ? sv_g.view : "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
SV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[1024];
	ssize_t n;
	int fd;

	if (!size)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}

/* ---- IBVERBS_PRIVATE_34: provider interface; present so libmlx5/libefa load ------------- */

SV_EXPORT bool verbs_allow_disassociate_destroy;

#define SV_PRIVATE_STUB(name)      \
	int name(void);            \
	SV_EXPORT int name(void)   \
	{                          \
		return EOPNOTSUPP; \
	}

SV_PRIVATE_STUB(__ioctl_final_num_attrs)
SV_PRIVATE_STUB(_verbs_init_and_alloc_context)
SV_PRIVATE_STUB(execute_ioctl)
SV_PRIVATE_STUB(ibv_cmd_advise_mr)
SV_PRIVATE_STUB(ibv_cmd_alloc_dm)
SV_PRIVATE_STUB(ibv_cmd_alloc_mw)
SV_PRIVATE_STUB(ibv_cmd_alloc_pd)
SV_PRIVATE_STUB(ibv_cmd_attach_mcast)
SV_PRIVATE_STUB(ibv_cmd_close_xrcd)
SV_PRIVATE_STUB(ibv_cmd_create_ah)
SV_PRIVATE_STUB(ibv_cmd_create_counters)
SV_PRIVATE_STUB(ibv_cmd_create_cq)
SV_PRIVATE_STUB(ibv_cmd_create_cq_ex)
SV_PRIVATE_STUB(ibv_cmd_create_flow)
SV_PRIVATE_STUB(ibv_cmd_create_flow_action_esp)
SV_PRIVATE_STUB(ibv_cmd_create_qp)
SV_PRIVATE_STUB(ibv_cmd_create_qp_ex)
SV_PRIVATE_STUB(ibv_cmd_create_qp_ex2)
SV_PRIVATE_STUB(ibv_cmd_create_rwq_ind_table)
SV_PRIVATE_STUB(ibv_cmd_create_srq)
SV_PRIVATE_STUB(ibv_cmd_create_srq_ex)
SV_PRIVATE_STUB(ibv_cmd_create_wq)
SV_PRIVATE_STUB(ibv_cmd_dealloc_mw)
SV_PRIVATE_STUB(ibv_cmd_dealloc_pd)
SV_PRIVATE_STUB(ibv_cmd_dereg_mr)
SV_PRIVATE_STUB(ibv_cmd_destroy_ah)
SV_PRIVATE_STUB(ibv_cmd_destroy_counters)
SV_PRIVATE_STUB(ibv_cmd_destroy_cq)
SV_PRIVATE_STUB(ibv_cmd_destroy_flow)
SV_PRIVATE_STUB(ibv_cmd_destroy_flow_action)
SV_PRIVATE_STUB(ibv_cmd_destroy_qp)
SV_PRIVATE_STUB(ibv_cmd_destroy_rwq_ind_table)
SV_PRIVATE_STUB(ibv_cmd_destroy_srq)
SV_PRIVATE_STUB(ibv_cmd_destroy_wq)
SV_PRIVATE_STUB(ibv_cmd_detach_mcast)
SV_PRIVATE_STUB(ibv_cmd_free_dm)
SV_PRIVATE_STUB(ibv_cmd_get_context)
SV_PRIVATE_STUB(ibv_cmd_modify_cq)
SV_PRIVATE_STUB(ibv_cmd_modify_flow_action_esp)
SV_PRIVATE_STUB(ibv_cmd_modify_qp)
SV_PRIVATE_STUB(ibv_cmd_modify_qp_ex)
SV_PRIVATE_STUB(ibv_cmd_modify_srq)
SV_PRIVATE_STUB(ibv_cmd_modify_wq)
SV_PRIVATE_STUB(ibv_cmd_open_qp)
SV_PRIVATE_STUB(ibv_cmd_open_xrcd)
SV_PRIVATE_STUB(ibv_cmd_poll_cq)
SV_PRIVATE_STUB(ibv_cmd_post_recv)
SV_PRIVATE_STUB(ibv_cmd_post_send)
SV_PRIVATE_STUB(ibv_cmd_post_srq_recv)
SV_PRIVATE_STUB(ibv_cmd_query_context)
SV_PRIVATE_STUB(ibv_cmd_query_device_any)
SV_PRIVATE_STUB(ibv_cmd_query_mr)
SV_PRIVATE_STUB(ibv_cmd_query_port)
SV_PRIVATE_STUB(ibv_cmd_query_qp)
SV_PRIVATE_STUB(ibv_cmd_query_srq)
SV_PRIVATE_STUB(ibv_cmd_read_counters)
SV_PRIVATE_STUB(ibv_cmd_reg_dm_mr)
SV_PRIVATE_STUB(ibv_cmd_reg_dmabuf_mr)
SV_PRIVATE_STUB(ibv_cmd_reg_mr)
SV_PRIVATE_STUB(ibv_cmd_req_notify_cq)
SV_PRIVATE_STUB(ibv_cmd_rereg_mr)
SV_PRIVATE_STUB(ibv_cmd_resize_cq)
SV_PRIVATE_STUB(ibv_query_gid_type)
SV_PRIVATE_STUB(ibv_read_ibdev_sysfs_file)
SV_PRIVATE_STUB(verbs_init_cq)
SV_PRIVATE_STUB(verbs_open_device)
SV_PRIVATE_STUB(verbs_set_ops)
SV_PRIVATE_STUB(verbs_uninit_context)

/* Providers register themselves from their constructors; softverbs has no providers. */
void verbs_register_driver_34(const void *ops);
SV_EXPORT void verbs_register_driver_34(const void *ops)
{
}

void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
SV_EXPORT void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...)
{
}
