/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUDirect RDMA (src/gdr.c): whether it works on this machine, and the rule railnet enforces
 * with the PCIe tree of topo.h: a NIC offers RN_PTR_CUDA/RN_PTR_DMABUF only when GDR works and
 * a usable GPU shares its PCIe root, and a CUDA buffer registered on a NIC of another root is
 * refused, registered with a WARN, or registered silently (RAILNET_GDR_POLICY; the GPU of a
 * pointer comes from the CUDA-driver seam of cuda.h). docs/topology.md gives the reasons.
 */
#ifndef RAILNET_GDR_H
#define RAILNET_GDR_H

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "railnet/topo.h"

/* GPUDirect RDMA on this machine, probed once (rn_gdr_probe). */
struct rn_gdr {
	bool peermem;	      /* nvidia-peermem / nv_peer_mem is loaded */
	char peermem_how[96]; /* which file said so: "nvidia_peermem 535.104.05" */
	int dmabuf;	      /* ibv_reg_dmabuf_mr: 1 works, 0 not supported, -1 not probed */
	int data_direct;      /* mlx5dv data-direct: 1 present, 0 absent, -1 not probed */
	bool works;	      /* peermem or dmabuf == 1 */
	char why[192];	      /* one sentence for logs and the doctor */
};

/*
 * Probe GDR: the peer-memory module files under sysfs_root (NULL: "/sys") —
 * kernel/mm/memory_peers/nv_mem/version, kernel/mm/memory_peers/nv_mem_nc/version,
 * module/nvidia_peermem/version — then, when ctx is non-NULL and rn_verbs() is loaded, a
 * dma-buf registration probe (ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0): EOPNOTSUPP or
 * EPROTONOSUPPORT means unsupported, any other answer means the kernel and provider know
 * dma-buf) and mlx5dv data-direct. Always returns 0 and fills *out; logs nothing (the
 * plugin's topology INFO line and the doctor carry out->why).
 */
int rn_gdr_probe(const char *sysfs_root, struct ibv_context *ctx, struct rn_gdr *out);

/*
 * The rule alone (docs/topology.md, "The rule"): NCCL allows GPUDirect RDMA between a GPU and a
 * NIC that are `path` (enum rn_path_type) apart in its topology, under t's NCCL_NET_GDR_LEVEL.
 * RN_PATH_UNKNOWN never is.
 */
bool rn_gdr_level_allows(const struct rn_topo *t, int path);

/*
 * RN_PTR_* a NIC offers. paths: the PCI paths (or bus ids) of its n member ports (one for a
 * physical device; a virtual device's members). RN_PTR_HOST always; RN_PTR_CUDA when
 * gdr->works and the visible GPU nearest to the first member is, from every member, within
 * topo->gdr_level in NCCL's topology (rn_topo_nccl_path; NCCL_NET_GDR_LEVEL, default PXB,
 * NCCL_TOPO_FILE honoured): the rule NCCL applies; RN_PTR_DMABUF as well when
 * gdr->dmabuf == 1. why (may be NULL) gets one sentence naming the GPU and path type, or why
 * not. No logging.
 */
int rn_gdr_ptr_support(const struct rn_topo *topo, const struct rn_gdr *gdr,
		       const char *const *paths, int n, char *why, size_t why_len);

/*
 * RAILNET_GDR_POLICY for one CUDA registration: the GPU holding cuda_ptr (asked of the CUDA
 * driver, loaded on first use) against the NIC named nic_name whose member ports are
 * paths[0..n). Within topo->gdr_level of each other in NCCL's topology (the rule of
 * rn_gdr_ptr_support), or policy RN_GDR_OFF: 0, silently. Farther: RN_GDR_STRICT returns
 * -EPERM after one WARN naming the GPU, the NIC, their roots, the path type, the NICs near
 * the GPU and the fix; RN_GDR_WARN returns 0 after one WARN, once per GPU and NIC pair. A
 * GPU or NIC the
 * topology cannot place, or a pointer the driver cannot resolve: 0 with one INFO (railnet
 * cannot judge, NCCL's own checks stand).
 */
int rn_gdr_check_reg(struct rn_topo *topo, int policy, const void *cuda_ptr, const char *nic_name,
		     const char *const *paths, int n);

#endif /* RAILNET_GDR_H */
