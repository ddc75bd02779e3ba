// SPDX-License-Identifier: Apache-2.0
/*
 * Topology and GPUDirect (topo.h): the only file that calls hwloc. It loads the topology once,
 * copies each PCI device's bus id, class, bridge chain, root port, host bridge and NUMA node
 * into plain arrays, and answers every later question from those. It also probes GDR and
 * applies RAILNET_GDR_POLICY. It must not call ibv_* itself (rn_verbs() does) nor the CUDA
 * driver (cuda.c does).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>

#include "railnet/config.h"
#include "railnet/cuda.h"
#include "railnet/log.h"
#include "railnet/net.h"
#include "railnet/sysfs.h"
#include "railnet/topo.h"
#include "railnet/verbs.h"

#define RN_PCI_CLASS_IB 0x0207
#define RN_PCI_CLASS_ETH 0x0200
#define RN_PCI_VENDOR_NVIDIA 0x10de

const char *rn_path_type_str(int type)
{
	static const char *const names[] = { "PIX", "PXB", "PHB", "NODE", "SYS" };

	return type >= 0 && type <= RN_PATH_SYS ? names[type] : "unknown";
}

/* "dddd:bb:dd.f" (4 or 8 hex digits of domain) at s, exactly len chars; 0 or -EINVAL. */
static int busid_at(const char *s, size_t len, char busid[RN_BUSID_MAX])
{
	unsigned int dom, bus, dev, fn;
	char tail;

	if (len != 12 && len != 16)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		size_t from_end = len - i;

		if (from_end == 2		     ? s[i] != '.'
		    : from_end == 5 || from_end == 8 ? s[i] != ':'
						     : !isxdigit((unsigned char)s[i]))
			return -EINVAL;
	}
	if (sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) < 4 || dom > 0xffff ||
	    dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(busid, RN_BUSID_MAX, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int rn_busid_parse(const char *s, char busid[RN_BUSID_MAX])
{
	const char *end, *start;

	if (!s || !*s)
		return -EINVAL;
	end = s + strlen(s);
	while (end > s && end[-1] == '/')
		end--;
	/* the last path component that is a bus id */
	while (end > s) {
		start = end;
		while (start > s && start[-1] != '/')
			start--;
		if (!busid_at(start, (size_t)(end - start), busid))
			return 0;
		end = start;
		while (end > s && end[-1] == '/')
			end--;
	}
	return -EINVAL;
}

static int dev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rn_topo_dev *)a)->busid,
		      ((const struct rn_topo_dev *)b)->busid);
}

static bool is_host_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE &&
	       o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* Index of host bridge hb in hbs[0..*n), appended when new. */
static int host_bridge_index(uint64_t *hbs, int *n, int max, uint64_t hb)
{
	for (int i = 0; i < *n; i++)
		if (hbs[i] == hb)
			return i;
	if (*n >= max)
		return -1;
	hbs[*n] = hb;
	return (*n)++;
}

static void fill_dev(hwloc_topology_t hw, hwloc_obj_t o, struct rn_topo_dev *d, uint64_t *hbs,
		     int *nhbs, int maxhbs)
{
	const struct hwloc_pcidev_attr_s *pa = &o->attr->pcidev;
	hwloc_obj_t p, anc, os;

	memset(d, 0, sizeof(*d));
	snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%x", pa->domain, pa->bus, pa->dev,
		 pa->func);
	d->vendor = pa->vendor_id;
	d->device = pa->device_id;
	d->class_id = pa->class_id;
	d->gpu = d->vendor == RN_PCI_VENDOR_NVIDIA &&
		 (d->class_id == 0x0302 || d->class_id == 0x0300);
	d->visible = d->gpu;
	d->cuda_index = -1;
	d->host_bridge = -1;
	d->numa = -1;
	for (p = o->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
		if (is_host_bridge(p)) {
			d->host_bridge = host_bridge_index(hbs, nhbs, maxhbs, p->gp_index);
			break;
		}
		if (d->nchain < RN_TOPO_MAX_DEPTH)
			d->chain[d->nchain++] = p->gp_index;
		/* the root port: a PCI bridge right below the host bridge */
		if (p->parent && is_host_bridge(p->parent) &&
		    p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
			snprintf(d->root, sizeof(d->root), "%04x:%02x:%02x.%x",
				 p->attr->pcidev.domain, p->attr->pcidev.bus, p->attr->pcidev.dev,
				 p->attr->pcidev.func);
	}
	anc = hwloc_get_non_io_ancestor_obj(hw, o);
	if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
		d->numa = hwloc_bitmap_first(anc->nodeset);
	for (os = o->io_first_child; os; os = os->next_sibling) {
		if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name)
			continue;
		if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
			if (!d->netdev[0])
				snprintf(d->netdev, sizeof(d->netdev), "%s", os->name);
		} else if (!d->name[0]) {
			snprintf(d->name, sizeof(d->name), "%s", os->name);
		}
	}
}

static struct rn_topo *topo_new(const char *source)
{
	struct rn_topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->warn_lock, NULL);
	snprintf(t->source, sizeof(t->source), "%s", source);
	snprintf(t->gpu_source, sizeof(t->gpu_source), "every GPU of the topology");
	return t;
}

/* Copy hwloc's PCI devices into t. 0 or -ENOMEM. */
static int topo_copy(struct rn_topo *t, hwloc_topology_t hw)
{
	uint64_t hbs[64];
	int n = 0, nhbs = 0, i = 0;
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_pcidev(hw, o)))
		n++;
	if (!n)
		return 0;
	t->devs = calloc((size_t)n, sizeof(*t->devs));
	if (!t->devs)
		return -ENOMEM;
	while ((o = hwloc_get_next_pcidev(hw, o)) && i < n)
		fill_dev(hw, o, &t->devs[i++], hbs, &nhbs, 64);
	t->ndevs = i;
	t->io = true;
	qsort(t->devs, (size_t)t->ndevs, sizeof(*t->devs), dev_cmp);
	for (i = 0; i < t->ndevs; i++)
		t->ngpus += t->devs[i].gpu;
	rn_topo_set_visible(t, NULL, NULL);
	return 0;
}

int rn_topo_load(const char *xml_path, struct rn_topo **out)
{
	bool xml = xml_path && *xml_path;
	hwloc_topology_t hw;
	struct rn_topo *t;
	int ret = 0;

	t = topo_new(xml ? xml_path : "this machine");
	if (!t)
		return -ENOMEM;
	rn_hwloc_shim_init();
	if (xml && access(xml_path, R_OK)) {
		RN_WARN("RAILNET_TOPO_XML=%s: cannot read it (%s); railnet knows no PCIe topology "
			"and offers host memory only (point it at an hwloc XML file, or unset it "
			"to use this machine's)",
			xml_path, strerror(errno));
		goto out;
	}
	if (hwloc_topology_init(&hw)) {
		ret = errno == ENOMEM ? -ENOMEM : 0;
		RN_WARN("hwloc_topology_init failed (%s): railnet knows no PCIe topology and "
			"offers host memory only",
			strerror(errno));
		goto out;
	}
	hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (xml && hwloc_topology_set_xml(hw, xml_path)) {
		RN_WARN("RAILNET_TOPO_XML=%s: hwloc refuses it (%s); railnet knows no PCIe "
			"topology and offers host memory only",
			xml_path, strerror(errno));
		goto out_destroy;
	}
	if (hwloc_topology_load(hw)) {
		RN_WARN("%s%s: hwloc cannot load the topology (%s: malformed or not an hwloc "
			"XML?); railnet knows no PCIe topology and offers host memory only",
			xml ? "RAILNET_TOPO_XML=" : "", t->source, strerror(errno));
		goto out_destroy;
	}
	ret = topo_copy(t, hw);
	if (!ret && !t->io)
		RN_WARN("%s%s: the topology has no PCI devices (an XML saved without I/O "
			"objects?); railnet cannot tell which GPU sits next to which NIC and "
			"offers "
			"host memory only",
			xml ? "RAILNET_TOPO_XML=" : "", t->source);
out_destroy:
	hwloc_topology_destroy(hw);
out:
	if (ret) {
		rn_topo_destroy(t);
		return ret;
	}
	*out = t;
	return 0;
}

void rn_topo_destroy(struct rn_topo *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->warn_lock);
	free(t->warned);
	free(t->devs);
	free(t);
}

const struct rn_topo_dev *rn_topo_find(const struct rn_topo *t, const char *s)
{
	char busid[RN_BUSID_MAX];
	int lo = 0, hi;

	if (!t || rn_busid_parse(s, busid))
		return NULL;
	hi = t->ndevs - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(t->devs[mid].busid, busid);

		if (!c)
			return &t->devs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

static int path_type(const struct rn_topo_dev *a, const struct rn_topo_dev *b)
{
	if (a == b)
		return RN_PATH_PIX;
	for (int i = 0; i < a->nchain; i++)
		for (int j = 0; j < b->nchain; j++)
			if (a->chain[i] == b->chain[j])
				/* one bridge, or one switch (downstream port + upstream port) */
				return i <= 1 && j <= 1 ? RN_PATH_PIX : RN_PATH_PXB;
	if (a->host_bridge >= 0 && a->host_bridge == b->host_bridge)
		return RN_PATH_PHB;
	if (a->numa >= 0 && a->numa == b->numa)
		return RN_PATH_NODE;
	return RN_PATH_SYS;
}

int rn_topo_path_type(const struct rn_topo *t, const char *a, const char *b)
{
	const struct rn_topo_dev *da = rn_topo_find(t, a), *db = rn_topo_find(t, b);

	return da && db ? path_type(da, db) : RN_PATH_UNKNOWN;
}

/* ------------------------------------------------------------------ visible GPUs ---- */

/*
 * Narrow sel[0..*n) (topology indices) by one *_VISIBLE_DEVICES value. Returns 0, or
 * -EINVAL when the value cannot be resolved here (UUIDs, MIG names, garbage): sel unchanged.
 */
static int narrow(int *sel, int *n, const char *v)
{
	int out[256], nout = 0;
	const char *p;

	if (!v)
		return 0;
	while (*v == ' ')
		v++;
	if (!strcmp(v, "all"))
		return 0;
	if (!*v || !strcmp(v, "none") || !strcmp(v, "void")) {
		*n = 0;
		return 0;
	}
	for (p = v; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != ',' && *p != ' ')
			return -EINVAL;
	for (p = v; *p;) {
		char *end;
		long idx = strtol(p, &end, 10);

		if (end == p)
			return -EINVAL;
		/* CUDA stops at the first index that does not exist */
		if (idx < 0 || idx >= *n)
			break;
		for (int k = 0; k < nout; k++)
			if (out[k] == sel[idx])
				return -EINVAL; /* repeated: CUDA refuses the whole list */
		if (nout < 256)
			out[nout++] = sel[idx];
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	memcpy(sel, out, (size_t)nout * sizeof(*sel));
	*n = nout;
	return 0;
}

static void mark_visible(struct rn_topo *t, const int *sel, int n)
{
	for (int i = 0; i < t->ndevs; i++) {
		t->devs[i].visible = false;
		t->devs[i].cuda_index = -1;
	}
	for (int k = 0; k < n; k++) {
		t->devs[sel[k]].visible = true;
		t->devs[sel[k]].cuda_index = k;
	}
}

int rn_topo_set_visible(struct rn_topo *t, const char *nvidia_visible, const char *cuda_visible)
{
	int sel[256] = { 0 }, n = 0;
	const char *bad = NULL;

	for (int i = 0; i < t->ndevs && n < 256; i++)
		if (t->devs[i].gpu)
			sel[n++] = i;
	if (narrow(sel, &n, nvidia_visible))
		bad = "NVIDIA_VISIBLE_DEVICES";
	if (narrow(sel, &n, cuda_visible))
		bad = "CUDA_VISIBLE_DEVICES";
	mark_visible(t, sel, n);
	t->gpus_known = !bad && (nvidia_visible || cuda_visible);
	if (bad)
		snprintf(t->gpu_source, sizeof(t->gpu_source),
			 "every GPU of the topology: %s holds UUIDs or names that need the CUDA "
			 "driver",
			 bad);
	else if (nvidia_visible || cuda_visible)
		snprintf(t->gpu_source, sizeof(t->gpu_source),
			 "NVIDIA_VISIBLE_DEVICES=%s CUDA_VISIBLE_DEVICES=%s",
			 nvidia_visible ? nvidia_visible : "(unset)",
			 cuda_visible ? cuda_visible : "(unset)");
	else
		snprintf(t->gpu_source, sizeof(t->gpu_source), "every GPU of the topology");
	return n;
}

int rn_topo_set_visible_busids(struct rn_topo *t, const char *const *busids, int n,
			       const char *source)
{
	int sel[256] = { 0 }, nsel = 0;

	for (int k = 0; k < n && nsel < 256; k++) {
		const struct rn_topo_dev *d = rn_topo_find(t, busids[k]);

		if (!d) {
			RN_WARN("GPU %s (%s): the topology (%s) has no such PCI device, so railnet "
				"cannot place it; no NIC offers GPUDirect RDMA for it",
				busids[k], source ? source : "given", t->source);
			continue;
		}
		sel[nsel++] = (int)(d - t->devs);
	}
	mark_visible(t, sel, nsel);
	for (int k = 0; k < nsel; k++)
		t->devs[sel[k]].gpu = true;
	t->gpus_known = true;
	snprintf(t->gpu_source, sizeof(t->gpu_source), "%s", source ? source : "given bus ids");
	return nsel;
}

void rn_topo_log(const struct rn_topo *t, const struct rn_gdr *gdr)
{
	int usable = 0;

	for (int i = 0; i < t->ndevs; i++)
		usable += t->devs[i].gpu && t->devs[i].visible;
	if (!t->ngpus)
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"topology %s: %d PCI devices, no NVIDIA GPU: host memory only", t->source,
			t->ndevs);
	else
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"topology %s: %d PCI devices, %d GPUs, %d usable (%s)%s%s", t->source,
			t->ndevs, t->ngpus, usable, t->gpu_source, gdr ? "; " : "",
			gdr ? gdr->why : "");
}

/* -------------------------------------------------------------------------- GDR ---- */

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
	RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s", g->why);
	return 0;
}

/* ---------------------------------------------------- same-root rule and policy ---- */

static const struct rn_topo_dev *gpu_on_root(const struct rn_topo *t, const char *root)
{
	for (int i = 0; i < t->ndevs; i++)
		if (t->devs[i].gpu && t->devs[i].visible && !strcmp(t->devs[i].root, root))
			return &t->devs[i];
	return NULL;
}

int rn_topo_ptr_support(const struct rn_topo *t, const struct rn_gdr *gdr, const char *const *paths,
			int n, char *why, size_t len)
{
	const struct rn_topo_dev *first = NULL, *gpu;
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

		if (!d || !d->root[0]) {
			snprintf(why, len,
				 "%s is %s in the topology (%s): railnet cannot place it, host "
				 "memory only",
				 paths[i] ? paths[i] : "(no PCI path)",
				 d ? "below no root port" : "not", t->source);
			return RN_PTR_HOST;
		}
		if (first && strcmp(first->root, d->root)) {
			snprintf(why, len, "members on roots %s and %s: host memory only",
				 first->root, d->root);
			return RN_PTR_HOST;
		}
		if (!first)
			first = d;
	}
	if (!first) {
		snprintf(why, len, "no PCI device: host memory only");
		return RN_PTR_HOST;
	}
	gpu = gpu_on_root(t, first->root);
	if (!gpu) {
		snprintf(why, len,
			 "no GPU this process can use on PCIe root %s (GPUs: %s): host memory "
			 "only",
			 first->root, t->gpu_source);
		return RN_PTR_HOST;
	}
	snprintf(why, len, "GPU %s (CUDA %d) shares PCIe root %s: GPUDirect RDMA%s", gpu->busid,
		 gpu->cuda_index, first->root, gdr->dmabuf == 1 ? " and dma-buf" : "");
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

/* NICs (their OS device names) on root; "none" when there are none. */
static void nics_on_root(const struct rn_topo *t, const char *root, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < t->ndevs && off < len; i++) {
		const struct rn_topo_dev *d = &t->devs[i];

		if ((d->class_id == RN_PCI_CLASS_IB || d->class_id == RN_PCI_CLASS_ETH) &&
		    !strcmp(d->root, root)) {
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
	int ret;

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
	if (!gpu || !nic || !gpu->root[0] || !nic->root[0]) {
		RN_INFO(RN_SUB_REG,
			"registration of GPU %s memory on %s: the topology (%s) cannot place the "
			"%s; railnet does not check their PCIe roots",
			busid, nic_name, t ? t->source : "not loaded",
			!gpu || !gpu->root[0] ? "GPU" : "NIC");
		return 0;
	}
	if (!strcmp(gpu->root, nic->root))
		return 0;
	nics_on_root(t, gpu->root, near, sizeof(near));
	if (policy == RN_GDR_STRICT) {
		RN_WARN("GPU %s (CUDA %d, PCIe root %s) memory registered on %s (PCIe root %s): "
			"refused, GPUDirect RDMA across roots goes through the host bridge (%s) "
			"(RAILNET_GDR_POLICY=strict). Fix: give this GPU's process a NIC on root "
			"%s (%s) — Topology Manager policy restricted, scope pod — or set "
			"RAILNET_GDR_POLICY=warn to register anyway",
			gpu->busid, gpu->cuda_index, gpu->root, nic_name, nic->root,
			rn_path_type_str(path_type(gpu, nic)), gpu->root, near);
		return -EPERM;
	}
	if (warn_once(t, gpu, nic))
		RN_WARN("GPU %s (CUDA %d, PCIe root %s) memory registered on %s (PCIe root %s): "
			"GPUDirect RDMA across roots (%s) is slow (RAILNET_GDR_POLICY=warn; said "
			"once per GPU and NIC). Fix: a NIC on root %s (%s) — Topology Manager "
			"policy restricted, scope pod",
			gpu->busid, gpu->cuda_index, gpu->root, nic_name, nic->root,
			rn_path_type_str(path_type(gpu, nic)), gpu->root, near);
	return 0;
}
