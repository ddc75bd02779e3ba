// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-doctor's alignment section (align.h): computes, predicts, prints (text and JSON).
 * Decides nothing the plugin would decide differently: a rail is a GPUDirect rail of a GPU
 * exactly when rn_gdr_level_allows would let NCCL use GPUDirect RDMA between them and the
 * node's GPUDirect RDMA works.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align.h"
#include "railnet/gdr.h"
#include "railnet/net.h"
#include "railnet/sysfs.h"

/*
 * The busbw model (docs/doctor.md, "Predicted busbw"), each coefficient a range whose ends give
 * the band's ends. Calibrated on the field's measurements (all-reduce busbw at >= 1 GiB, ring,
 * two nodes): 16 x 100 GbE aligned (189-191 GB/s) and 8 x 400G NDR (324-328 GB/s) give the
 * GPUDirect efficiency; the 4-GPU/8-PF pods with one PF per GPU near it (56.03-58.84) and with
 * two GPUs without one (26.95) the host-staged share; no GPU near any PF (4.27-5.77) the
 * staged-across-the-CPU share.
 */
#define RN_EFF_GDR_LO 0.78 /* a GPUDirect rail: share of its line rate */
#define RN_EFF_GDR_HI 0.97
#define RN_EFF_PCIE_LO 0.80 /* a PCIe link: share of lanes x GT/s x encoding */
#define RN_EFF_PCIE_HI 0.90
#define RN_EFF_HOST_LO 0.18 /* a rail staging GPU data through host memory */
#define RN_EFF_HOST_HI 0.25
#define RN_EFF_STAGED_LO 0.04 /* no GPU has a rail within the level: across the CPU */
#define RN_EFF_STAGED_HI 0.06

struct rn_coef {
	double gdr, pcie, host, staged;
};

static const struct rn_coef coef_lo = { RN_EFF_GDR_LO, RN_EFF_PCIE_LO, RN_EFF_HOST_LO,
					RN_EFF_STAGED_LO };
static const struct rn_coef coef_hi = { RN_EFF_GDR_HI, RN_EFF_PCIE_HI, RN_EFF_HOST_HI,
					RN_EFF_STAGED_HI };

static bool is_nic(const struct rn_topo_dev *d)
{
	return (d->class_id >> 8) == 0x02; /* network controller: Ethernet, InfiniBand, ... */
}

/*
 * An RDMA NIC: a network controller with an RDMA device below it (hwloc's OpenFabrics OS
 * device, "mlx5_4"). Onboard management NICs have only a netdev: no device plugin hands them
 * out, so they take no part in alignment.
 */
static bool is_rdma_nic(const struct rn_topo_dev *d)
{
	return is_nic(d) && d->name[0];
}

const char *rn_align_level_str(const struct rn_topo *t)
{
	return t->gdr_level < 0 ? "none" : rn_path_type_str(t->gdr_level);
}

static const char *dev_label(const struct rn_topo_dev *d)
{
	return d->netdev[0] ? d->netdev : d->name[0] ? d->name : d->busid;
}

static void append(char *buf, size_t len, const char *s)
{
	size_t off = strlen(buf);

	if (off < len)
		snprintf(buf + off, len - off, "%s%s", off ? ", " : "", s);
}

static double min2(double x, double y)
{
	return x < y ? x : y;
}

/* A rail that counts: not a front-end NIC, not another GPU's rail on hostNetwork. */
static bool counted(const struct rn_align_rail *r)
{
	return !r->frontend && !r->other;
}

static bool given(const struct rn_align *a, const struct rn_topo_dev *nic)
{
	for (int r = 0; r < a->nrails; r++)
		if (!strcmp(a->rails[r].device, nic->name))
			return true;
	return false;
}

static bool near_gpu(const struct rn_align *a, const struct rn_topo_dev *gpu,
		     const struct rn_topo_dev *nic)
{
	return gpu && nic && rn_gdr_level_allows(a->topo, rn_topo_nccl_path(gpu, nic));
}

/* GT/s of "16.0 GT/s PCIe" -> generation; 0 unknown */
static int pcie_gen(double gts)
{
	static const double g[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };

	for (int i = 0; i < 6; i++)
		if (gts > g[i] * 0.9 && gts < g[i] * 1.1)
			return i + 1;
	return 0;
}

/* The link of device `busid`: sysfs' current speed and width, else hwloc's GB/s. */
static void pcie_read(const char *sysfs_root, const struct rn_topo_dev *dev,
		      struct rn_align_pcie *l)
{
	char path[PATH_MAX], buf[64];
	double gts = 0;

	memset(l, 0, sizeof(*l));
	if (!dev)
		return;
	l->gbs = dev->pcie_gbs;
	if (!sysfs_root)
		return;
	if (!rn_sysfs_path(path, sizeof(path), sysfs_root, "bus/pci/devices/%s/current_link_speed",
			   dev->busid) &&
	    !rn_sysfs_read(path, buf, sizeof(buf))) {
		gts = strtod(buf, NULL);
		l->gen = pcie_gen(gts);
	}
	if (!rn_sysfs_path(path, sizeof(path), sysfs_root, "bus/pci/devices/%s/current_link_width",
			   dev->busid) &&
	    !rn_sysfs_read(path, buf, sizeof(buf)))
		l->width = (int)strtol(buf, NULL, 10);
	if (l->width < 1 || l->width > 32)
		l->width = 0;
	if (l->gen && l->width)
		l->gbs = l->width * gts * (l->gen <= 2 ? 0.8 : 128.0 / 130.0) / 8.0;
	else
		l->gen = l->width = 0;
}

static const char *pcie_str(const struct rn_align_pcie *l, char *buf, size_t len)
{
	if (l->gen)
		snprintf(buf, len, "PCIe Gen%d x%d (%.1f GB/s)", l->gen, l->width, l->gbs);
	else if (l->gbs > 0)
		snprintf(buf, len, "PCIe %.1f GB/s", l->gbs);
	else
		snprintf(buf, len, "PCIe link unknown");
	return buf;
}

const char *rn_align_gpu_label(const struct rn_align_gpu *g, char *buf, size_t len)
{
	snprintf(buf, len, "GPU %d (host GPU %d, %s)", g->dev->cuda_index, g->host_index,
		 g->dev->busid);
	return buf;
}

/* The rail's address sits on its PF's own netdev (hostNetwork, or a host-device CNI). */
static bool on_own_netdev(const struct rn_port *p, const struct rn_topo_dev *dev)
{
	char path[PATH_MAX];

	if (p->link_layer == IBV_LINK_LAYER_INFINIBAND || !dev || !dev->netdev[0] ||
	    strcmp(p->gid.ifname, dev->netdev))
		return false;
	/* an SR-IOV VF moved into the pod is the device plugin's: not hostNetwork */
	return !p->pci_path || rn_sysfs_path(path, sizeof(path), p->pci_path, "physfn") ||
	       access(path, F_OK);
}

/* ---- the prediction --------------------------------------------------------------------- */

/*
 * One end of the band; per[] gets each GPU's rate, *pace the GPU that sets it. A GPUDirect
 * rail carries line x gdr, at most its NIC's PCIe link x pcie (the functions of one device
 * sharing the link); a rail staging through host memory line x host; with no rail within the
 * level, every rail line x staged. Each GPU's sum is capped by its own link x pcie, and the ring
 * runs at the slowest GPU's rate times the GPUs.
 */
static double predict_bound(struct rn_align *a, const struct rn_coef *c, double *per, int *pace)
{
	double gdr[RN_ALIGN_MAX] = { 0 }, total = 0, host_total = 0, slow = -1, cap_sum = 0;
	int users = 0, k[RN_ALIGN_MAX] = { 0 };

	for (int r = 0; r < a->nrails; r++) {
		const struct rn_align_rail *rl = &a->rails[r];
		double line = rl->speed / 8000.0, sum = 0;
		char key[RN_BUSID_MAX];

		if (!counted(rl))
			continue;
		total += line;
		if (!rl->gpudirect)
			host_total += line * c->host;
		gdr[r] = line * c->gdr;
		if (rl->pcie.gbs <= 0)
			continue;
		snprintf(key, sizeof(key), "%s", rl->busid);
		key[strcspn(key, ".")] = '\0'; /* "0000:0c:00": the device of the function */
		for (int s = 0; s < a->nrails; s++)
			if (counted(&a->rails[s]) && !strncmp(a->rails[s].busid, key, strlen(key)))
				sum += a->rails[s].speed / 8000.0 * c->gdr;
		if (sum > rl->pcie.gbs * c->pcie)
			gdr[r] *= rl->pcie.gbs * c->pcie / sum;
	}
	*pace = -1;
	if (!a->ngpus) {
		a->regime = RN_REGIME_NO_GPU;
		total = 0;
		for (int r = 0; r < a->nrails; r++)
			total += gdr[r];
		return total;
	}
	for (int g = 0; g < a->ngpus; g++)
		cap_sum += a->gpus[g].pcie.gbs > 0 ? a->gpus[g].pcie.gbs * c->pcie : 1e12;
	if (!a->nnear) {
		a->regime = RN_REGIME_STAGED;
		total = min2(total * c->staged, cap_sum);
		for (int g = 0; g < a->ngpus; g++)
			per[g] = total / a->ngpus;
		*pace = 0;
		return total;
	}
	for (int g = 0; g < a->ngpus; g++) {
		users += a->gpus[g].ngdr == 0;
		for (int i = 0; i < a->gpus[g].ngdr; i++)
			k[a->gpus[g].gdr[i]]++;
	}
	a->regime = users ? RN_REGIME_PACED : RN_REGIME_GPUDIRECT;
	/* every rail is some GPU's GPUDirect rail: the GPUs without one stage through host
	 * memory over those same rails */
	if (users && host_total <= 0)
		for (int r = 0; r < a->nrails; r++)
			if (counted(&a->rails[r]))
				host_total += a->rails[r].speed / 8000.0 * c->host;
	for (int g = 0; g < a->ngpus; g++) {
		const struct rn_align_gpu *gp = &a->gpus[g];
		double rate = 0;

		for (int i = 0; i < gp->ngdr; i++)
			rate += gdr[gp->gdr[i]] / k[gp->gdr[i]];
		/* host-memory rails serve the GPUs without a GPUDirect rail, else every GPU */
		if (!users || !gp->ngdr)
			rate += host_total / (users ? users : a->ngpus);
		if (gp->pcie.gbs > 0)
			rate = min2(rate, gp->pcie.gbs * c->pcie);
		per[g] = rate;
		if (slow < 0 || rate < slow) {
			slow = rate;
			*pace = g;
		}
	}
	return a->ngpus * slow;
}

void rn_align_predict(struct rn_align *a)
{
	double lo[RN_ALIGN_MAX], hi[RN_ALIGN_MAX], line = 0, cap = 0;
	int pace_lo, pace_hi; /* the GPU that sets each end (one GPU's rate x the GPUs) */
	char g[128] = "", pc[64], limit[96], host[64];
	const struct rn_align_gpu *p;

	a->low_gbs = predict_bound(a, &coef_lo, lo, &pace_lo);
	a->high_gbs = predict_bound(a, &coef_hi, hi, &pace_hi);
	for (int i = 0; i < a->ngpus; i++) {
		a->gpus[i].low_gbs = lo[i];
		a->gpus[i].high_gbs = hi[i];
		cap += a->gpus[i].pcie.gbs > 0 ? a->gpus[i].pcie.gbs * RN_EFF_PCIE_HI : 1e12;
	}
	for (int r = 0; r < a->nrails; r++)
		if (counted(&a->rails[r]))
			line += a->rails[r].speed / 8000.0;
	a->aligned_gbs = a->ngpus ? min2(line * RN_EFF_GDR_HI, cap) : line * RN_EFF_GDR_HI;
	a->pace = pace_hi;
	p = pace_hi >= 0 ? &a->gpus[pace_hi] : NULL;
	if (p)
		rn_align_gpu_label(p, g, sizeof(g));
	switch (a->regime) {
	case RN_REGIME_NO_GPU:
		snprintf(a->basis, sizeof(a->basis),
			 "no GPU: host memory at %.0f-%.0f%% of the rails' line rate",
			 RN_EFF_GDR_LO * 100, RN_EFF_GDR_HI * 100);
		break;
	case RN_REGIME_STAGED:
		snprintf(a->basis, sizeof(a->basis),
			 "no GPU has a rail within %s: every byte is staged through host memory "
			 "across the CPU, %.0f-%.0f%% of the rails' line rate (the field's worst "
			 "case)",
			 rn_align_level_str(a->topo), RN_EFF_STAGED_LO * 100,
			 RN_EFF_STAGED_HI * 100);
		break;
	case RN_REGIME_PACED:
		for (int i = 0; i < a->ngpus; i++)
			if (!a->gpus[i].ngdr) {
				rn_align_gpu_label(&a->gpus[i], g, sizeof(g));
				break;
			}
		if (!a->gdr.works)
			snprintf(a->basis, sizeof(a->basis),
				 "GPUDirect RDMA is unavailable: every GPU stages its channels "
				 "through host memory at %.0f-%.0f%% of the rails' line rate (no "
				 "field "
				 "measurement calibrates this case)",
				 RN_EFF_HOST_LO * 100, RN_EFF_HOST_HI * 100);
		else
			snprintf(a->basis, sizeof(a->basis),
				 "%s has no GPUDirect rail: NCCL's channels through it are staged "
				 "through host memory at %.0f-%.0f%% of the line rate of the "
				 "host-memory rails, and pace the ring at %.1f-%.1f GB/s per GPU",
				 g, RN_EFF_HOST_LO * 100, RN_EFF_HOST_HI * 100,
				 a->low_gbs / a->ngpus, a->high_gbs / a->ngpus);
		break;
	default:
		limit[0] = '\0';
		snprintf(host, sizeof(host), ", host-memory rails add %.0f-%.0f%% of theirs",
			 RN_EFF_HOST_LO * 100, RN_EFF_HOST_HI * 100);
		if (p && p->pcie.gbs > 0 && hi[pace_hi] >= p->pcie.gbs * RN_EFF_PCIE_HI - 1e-9)
			snprintf(limit, sizeof(limit), "; its %s is the limit",
				 pcie_str(&p->pcie, pc, sizeof(pc)));
		snprintf(
			a->basis, sizeof(a->basis),
			"every GPU drives GPUDirect rails at %.0f-%.0f%% of their line rate%s; the "
			"ring is paced by %s at %.1f-%.1f GB/s%s",
			RN_EFF_GDR_LO * 100, RN_EFF_GDR_HI * 100,
			a->ngdr < a->nrails - a->nfrontend - a->nother ? host : "", g,
			a->low_gbs / a->ngpus, a->high_gbs / a->ngpus, limit);
		break;
	}
}

/* ---- the verdict ------------------------------------------------------------------------ */

/* n is the NIC of one of the pod's front-end ports */
static bool frontend_dev(const struct rn_align *a, const struct rn_topo_dev *n)
{
	for (int r = 0; r < a->nrails; r++)
		if (a->rails[r].frontend && !strcmp(a->rails[r].device, n->name))
			return true;
	return false;
}

/* Topology Manager aligns by NUMA node: it can fix a pod only when, for each of its GPUs, every
 * NIC of the GPU's NUMA node is within NCCL's GPUDirect level of it. */
static bool numa_implies_level(const struct rn_align *a, char *why, size_t len)
{
	for (int g = 0; g < a->ngpus; g++) {
		const struct rn_topo_dev *gpu = a->gpus[g].dev;

		if (gpu->numa < 0) {
			snprintf(why, len, "the NUMA node of GPU %s is unknown", gpu->busid);
			return false;
		}
		for (int i = 0; i < a->topo->ndevs; i++) {
			const struct rn_topo_dev *n = &a->topo->devs[i];

			if (is_rdma_nic(n) && n->numa == gpu->numa && !near_gpu(a, gpu, n) &&
			    !frontend_dev(a, n)) {
				snprintf(why, len,
					 "NUMA node %d holds %s, which is %s from GPU %s, farther "
					 "than "
					 "%s",
					 gpu->numa, dev_label(n),
					 rn_path_type_str(rn_topo_nccl_path(gpu, n)), gpu->busid,
					 rn_align_level_str(a->topo));
				return false;
			}
		}
	}
	return true;
}

static void gpu_list(const struct rn_align *a, bool without_near, char *buf, size_t len)
{
	char g[128];

	buf[0] = '\0';
	for (int i = 0; i < a->ngpus; i++)
		if (!without_near || !a->gpus[i].nnear)
			append(buf, len, rn_align_gpu_label(&a->gpus[i], g, sizeof(g)));
}

static void decide(struct rn_align *a, const struct rn_align_env *env)
{
	char off[512] = "", on_roots[512] = "", missing[512] = "", lonely[1024] = "";
	char numa_why[256] = "", level[16];
	int avail = 0, nfar = 0, nlonely = 0, ncounted = a->nrails - a->nfrontend - a->nother;

	snprintf(level, sizeof(level), "%s", rn_align_level_str(a->topo));
	for (int g = 0; g < a->ngpus; g++)
		nlonely += !a->gpus[g].nnear;
	gpu_list(a, true, lonely, sizeof(lonely));
	for (int r = 0; r < a->nrails; r++)
		if (counted(&a->rails[r]) && !a->rails[r].near) {
			append(off, sizeof(off), a->rails[r].name);
			nfar++;
		}
	for (int i = 0; i < a->topo->ndevs; i++) {
		const struct rn_topo_dev *d = &a->topo->devs[i];
		bool near = false;

		for (int g = 0; g < a->ngpus && !near; g++)
			near = near_gpu(a, a->gpus[g].dev, d);
		if (!is_rdma_nic(d) || !near || frontend_dev(a, d))
			continue;
		avail++;
		append(on_roots, sizeof(on_roots), dev_label(d));
		if (!given(a, d))
			append(missing, sizeof(missing), dev_label(d));
	}
	if (!a->topo->io || !a->topo->gpus_known) {
		a->verdict = RN_ALIGN_UNKNOWN;
		return;
	}
	if (!a->ngpus) {
		a->verdict = RN_ALIGN_NO_GPU;
		return;
	}
	if (!ncounted) { /* "no RDMA device" is the problem the doctor reports then */
		a->verdict = RN_ALIGN_NO_RAIL;
		return;
	}
	a->tm_applies = env->kubernetes && !a->hostnetwork &&
			numa_implies_level(a, numa_why, sizeof(numa_why));
	if (!nlonely && !nfar) {
		a->verdict = RN_ALIGN_ALIGNED;
		return;
	}
	if (a->hostnetwork) {
		/* every NIC of the node is the pod's: what is missing is a NIC near those GPUs */
		a->verdict = RN_ALIGN_MISALIGNED;
		snprintf(a->what, sizeof(a->what),
			 "no RDMA NIC of this node is within %s of %s: NCCL stages their traffic "
			 "through host memory without GPUDirect RDMA; predicted busbw %.1f-%.1f "
			 "GB/s",
			 level, lonely, a->low_gbs, a->high_gbs);
		snprintf(a->fix, sizeof(a->fix),
			 "give the job GPUs that have a NIC within %s (with hostNetwork the pod "
			 "sees every NIC of the node, and these GPUs have none)",
			 level);
		return;
	}
	if (nlonely && nfar)
		snprintf(a->what, sizeof(a->what),
			 "%s %s no GPUDirect rail (no NIC of this pod within %s), and %d of %d "
			 "rails "
			 "(%s) are within %s of no GPU of this pod: they stage GPU data through "
			 "host "
			 "memory; predicted busbw %.1f-%.1f GB/s instead of %.1f",
			 lonely, nlonely > 1 ? "have" : "has", level, nfar, ncounted, off, level,
			 a->low_gbs, a->high_gbs, a->aligned_gbs);
	else if (nlonely)
		snprintf(
			a->what, sizeof(a->what),
			"%s %s no GPUDirect rail (no NIC of this pod within %s): NCCL stages "
			"their traffic through host memory; predicted busbw %.1f-%.1f GB/s instead "
			"of %.1f",
			lonely, nlonely > 1 ? "have" : "has", level, a->low_gbs, a->high_gbs,
			a->aligned_gbs);
	else
		snprintf(
			a->what, sizeof(a->what),
			"%d of %d rails (%s) are within %s of no GPU of this pod: they stage GPU "
			"data through host memory or stay idle, and each takes an address from its "
			"rail's pool; predicted busbw %.1f-%.1f GB/s instead of %.1f",
			nfar, ncounted, off, level, a->low_gbs, a->high_gbs, a->aligned_gbs);
	if (a->tm_applies && ncounted > avail) {
		a->verdict = RN_ALIGN_UNALIGNABLE;
		snprintf(a->request, sizeof(a->request), "%s", on_roots);
		snprintf(
			a->fix, sizeof(a->fix),
			"Topology Manager policy `restricted` (scope `pod`) rejects this pod: its "
			"%d PFs span more PCIe roots than its GPUs, whose roots hold only %d (%s); "
			"request those %d PFs, or GPUs on the other roots",
			ncounted, avail, on_roots[0] ? on_roots : "none", avail);
		return;
	}
	a->verdict = RN_ALIGN_MISALIGNED;
	snprintf(a->request, sizeof(a->request), "%s", missing);
	if (a->tm_applies)
		snprintf(a->fix, sizeof(a->fix),
			 "let the kubelet align GPUs and PFs: Topology Manager policy `restricted` "
			 "with scope `pod` (--topology-manager-policy=restricted "
			 "--topology-manager-scope=pod), or request the PFs on the GPUs' "
			 "roots%s%s%s%s",
			 missing[0] ? " (" : "", missing, missing[0] ? ") instead of " : "",
			 missing[0] ? off : "");
	else if (env->kubernetes)
		snprintf(a->fix, sizeof(a->fix),
			 "the Topology Manager cannot fix this (it aligns by NUMA node, and %s): "
			 "request the PFs on the GPUs' roots%s%s%s%s with one device-plugin "
			 "resource "
			 "per PCIe root (SR-IOV network device plugin `pciAddresses`), or with DRA "
			 "claims that match the GPUs' `pcieRoot`",
			 numa_why, missing[0] ? " (" : "", missing,
			 missing[0] ? ") instead of " : "", missing[0] ? off : "");
	else
		snprintf(a->fix, sizeof(a->fix),
			 "give the job the NICs on its GPUs' PCIe roots%s%s%s%s, or the GPUs next "
			 "to "
			 "its NICs (CUDA_VISIBLE_DEVICES)",
			 missing[0] ? " (" : "", missing, missing[0] ? ") instead of " : "",
			 missing[0] ? off : "");
}

/* ---- build ------------------------------------------------------------------------------ */

void rn_align_build(struct rn_align *a, const struct rn_discovery *d, const struct rn_topo *topo,
		    const struct rn_gdr *gdr, const struct rn_align_env *env)
{
	int roce = 0, own = 0;
	bool anynear = false;

	memset(a, 0, sizeof(*a));
	a->topo = topo;
	a->gdr = *gdr;
	a->pace = -1;
	/* the pod's GPUs in CUDA order, numbered also as the node numbers them */
	for (int c = 0; a->ngpus < RN_ALIGN_MAX; c++) {
		const struct rn_topo_dev *dev = NULL;
		int host = 0;

		for (int i = 0; i < topo->ndevs && !dev; i++) {
			if (topo->devs[i].gpu && topo->devs[i].visible &&
			    topo->devs[i].cuda_index == c)
				dev = &topo->devs[i];
			else if (topo->devs[i].gpu)
				host++;
		}
		if (!dev)
			break;
		a->gpus[a->ngpus].dev = dev;
		a->gpus[a->ngpus].host_index = host;
		pcie_read(env->sysfs_root, dev, &a->gpus[a->ngpus].pcie);
		a->ngpus++;
	}
	for (int i = 0; i < d->nports && a->nrails < RN_ALIGN_MAX; i++) {
		const struct rn_port *p = &d->ports[i];
		const struct rn_topo_dev *dev = rn_topo_find(topo, p->pci_path);
		struct rn_align_rail *r = &a->rails[a->nrails++];

		snprintf(r->device, sizeof(r->device), "%s", p->name);
		snprintf(r->name, sizeof(r->name), "%s",
			 dev && dev->netdev[0] && p->link_layer != IBV_LINK_LAYER_INFINIBAND
				 ? dev->netdev
				 : p->name);
		snprintf(r->ifname, sizeof(r->ifname), "%s", p->gid.ifname);
		snprintf(r->root, sizeof(r->root), "%s", dev ? dev->root : "");
		snprintf(r->busid, sizeof(r->busid), "%s", dev ? dev->busid : "");
		r->port = p->port;
		r->speed = p->speed;
		r->path = -1;
		pcie_read(env->sysfs_root, dev, &r->pcie);
		for (int g = 0; g < a->ngpus && dev; g++) {
			int path = rn_topo_nccl_path(a->gpus[g].dev, dev);

			if (r->path < 0 || path < r->path)
				r->path = path;
			r->near |= rn_gdr_level_allows(topo, path);
		}
		r->gpudirect = r->near && gdr->works;
		r->host_netdev = on_own_netdev(p, dev);
		/* the interface the pod's bootstrap uses, on no GPU's path, beside real rails */
		r->frontend = env->bootstrap_if && r->ifname[0] && d->nports > 1 && !r->near &&
			      !strcmp(r->ifname, env->bootstrap_if);
		a->nfrontend += r->frontend;
		/* hostNetwork: judged on the rails, a front-end port may sit on a bond or VLAN */
		roce += p->link_layer != IBV_LINK_LAYER_INFINIBAND && !r->frontend;
		own += r->host_netdev && !r->frontend;
		anynear |= r->near && !r->frontend;
	}
	a->hostnetwork = roce > 0 && own == roce;
	for (int r = 0; r < a->nrails; r++) {
		struct rn_align_rail *rl = &a->rails[r];

		/* other GPUs' rails only beside rails of this pod's own GPUs: where no GPU has a
		 * rail, every rail is this pod's, staged through host memory */
		rl->other = a->hostnetwork && topo->gpus_known && a->ngpus && anynear &&
			    !rl->near && !rl->frontend;
		a->nother += rl->other;
		if (counted(rl)) {
			a->ngdr += rl->gpudirect;
			a->nnear += rl->near;
		}
	}
	for (int g = 0; g < a->ngpus; g++) {
		struct rn_align_gpu *gp = &a->gpus[g];

		for (int r = 0; r < a->nrails; r++) {
			const struct rn_topo_dev *nic = rn_topo_find(topo, d->ports[r].pci_path);

			if (!counted(&a->rails[r]))
				continue;
			if (near_gpu(a, gp->dev, nic)) {
				gp->near[gp->nnear++] = r;
				if (gdr->works)
					gp->gdr[gp->ngdr++] = r;
			} else {
				gp->host[gp->nhost++] = r;
			}
		}
		for (int i = 0; i < topo->ndevs; i++) {
			const struct rn_topo_dev *n = &topo->devs[i];

			if (is_rdma_nic(n) && near_gpu(a, gp->dev, n) && !given(a, n))
				append(gp->not_given, sizeof(gp->not_given), dev_label(n));
		}
	}
	rn_align_predict(a);
	decide(a, env);
}

const char *rn_align_verdict_str(int v)
{
	switch (v) {
	case RN_ALIGN_NO_GPU:
		return "no-gpu";
	case RN_ALIGN_ALIGNED:
		return "aligned";
	case RN_ALIGN_MISALIGNED:
		return "misaligned";
	case RN_ALIGN_UNALIGNABLE:
		return "unalignable";
	case RN_ALIGN_NO_RAIL:
		return "no-rail";
	default:
		return "unknown";
	}
}

const char *rn_align_regime_str(int r)
{
	switch (r) {
	case RN_REGIME_NO_GPU:
		return "no-gpu";
	case RN_REGIME_GPUDIRECT:
		return "gpudirect";
	case RN_REGIME_PACED:
		return "paced-by-host-memory";
	default:
		return "staged-across-cpu";
	}
}

/* ---- text ------------------------------------------------------------------------------- */

static void idx_list(const struct rn_align *a, const int *idx, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		append(buf, len, a->rails[idx[i]].name);
}

static void flag_list(const struct rn_align *a, int which, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int r = 0; r < a->nrails; r++) {
		const struct rn_align_rail *rl = &a->rails[r];
		bool in = which == 0   ? counted(rl) && rl->gpudirect
			  : which == 1 ? counted(rl) && !rl->gpudirect
			  : which == 2 ? rl->other
				       : counted(rl) && rl->near;

		if (in)
			append(buf, len, rl->name);
	}
}

void rn_align_text(const struct rn_align *a, FILE *o)
{
	char buf[1024], g[128], pc[64];
	int ncounted = a->nrails - a->nfrontend - a->nother;
	const char *level = rn_align_level_str(a->topo);

	fprintf(o, "\nAlignment (topology %s; GPUs: %s)\n", a->topo->source, a->topo->gpu_source);
	fprintf(o, "  GDR probe          %s\n", a->gdr.why);
	fprintf(o,
		"  GPUDirect level    %s: a rail is a GPU's GPUDirect rail when NCCL's path "
		"between them is %s or closer and GPUDirect RDMA works\n",
		a->topo->gdr_level_src, level);
	for (int i = 0; i < a->ngpus; i++) {
		const struct rn_align_gpu *gp = &a->gpus[i];

		fprintf(o, "  %s: root %s, numa %d, %s\n", rn_align_gpu_label(gp, g, sizeof(g)),
			gp->dev->root[0] ? gp->dev->root : "?", gp->dev->numa,
			pcie_str(&gp->pcie, pc, sizeof(pc)));
		idx_list(a, gp->gdr, gp->ngdr, buf, sizeof(buf));
		if (!gp->ngdr && gp->nnear) {
			idx_list(a, gp->near, gp->nnear, buf, sizeof(buf));
			fprintf(o,
				"    GPUDirect        none: GPUDirect RDMA unavailable (%s within "
				"%s)\n",
				buf, level);
		} else {
			fprintf(o, "    GPUDirect        %s\n", buf[0] ? buf : "none");
		}
		idx_list(a, gp->host, gp->nhost, buf, sizeof(buf));
		fprintf(o, "    elsewhere        %s\n", buf[0] ? buf : "none");
		fprintf(o, "    not given        %s\n", gp->not_given[0] ? gp->not_given : "none");
		fprintf(o, "    predicted        %.1f-%.1f GB/s through it\n", gp->low_gbs,
			gp->high_gbs);
	}
	flag_list(a, 0, buf, sizeof(buf));
	if (!a->gdr.works && a->nnear) {
		flag_list(a, 3, buf, sizeof(buf));
		fprintf(o,
			"  GPUDirect rails    none (0 of %d): GPUDirect RDMA unavailable; %s "
			"within "
			"%s of a GPU\n",
			ncounted, buf, level);
	} else {
		fprintf(o, "  GPUDirect rails    %s (%d of %d)\n", buf[0] ? buf : "none", a->ngdr,
			ncounted);
	}
	flag_list(a, 1, buf, sizeof(buf));
	fprintf(o, "  host-memory rails  %s (%d of %d)\n", buf[0] ? buf : "none",
		ncounted - a->ngdr, ncounted);
	for (int r = 0; r < a->nrails; r++)
		if (a->rails[r].frontend)
			fprintf(o,
				"  front-end          %s port %d (%s): the bootstrap interface, "
				"within "
				"%s of no GPU: not a rail\n",
				a->rails[r].device, a->rails[r].port, a->rails[r].ifname, level);
	if (a->nother) {
		flag_list(a, 2, buf, sizeof(buf));
		fprintf(o,
			"  other GPUs' rails  %s (%d): hostNetwork shows every NIC of the node; "
			"these are within %s only of GPUs this pod was not given\n",
			buf, a->nother, level);
	}
	fprintf(o, "  predicted busbw    %.1f-%.1f GB/s (aligned: %.1f GB/s)\n", a->low_gbs,
		a->high_gbs, a->aligned_gbs);
	fprintf(o, "    basis            %s\n", a->basis);
	fprintf(o, "  alignment          %s%s\n", rn_align_verdict_str(a->verdict),
		a->verdict == RN_ALIGN_MISALIGNED || a->verdict == RN_ALIGN_UNALIGNABLE
			? " (the problem below says why and how to fix it)"
		: a->verdict == RN_ALIGN_ALIGNED && !a->gdr.works
			? " (by topology; GPUDirect RDMA is unavailable: see the problems)"
			: "");
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_names(const struct rn_align *a, FILE *o, const int *idx, int n,
		       void (*json_str)(FILE *, const char *))
{
	fputc('[', o);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', o);
		json_str(o, a->rails[idx[i]].name);
	}
	fputc(']', o);
}

static void json_flag(const struct rn_align *a, FILE *o, int which,
		      void (*json_str)(FILE *, const char *))
{
	int idx[RN_ALIGN_MAX], n = 0;

	for (int r = 0; r < a->nrails; r++) {
		const struct rn_align_rail *rl = &a->rails[r];

		if (which == 0	 ? counted(rl) && rl->gpudirect
		    : which == 1 ? counted(rl) && !rl->gpudirect
		    : which == 2 ? rl->other
				 : rl->frontend)
			idx[n++] = r;
	}
	json_names(a, o, idx, n, json_str);
}

/* "a, b" -> ["a","b"] */
static void json_split(FILE *o, const char *list, void (*json_str)(FILE *, const char *))
{
	char item[128];
	bool first = true;

	fputc('[', o);
	while (list && *list) {
		size_t n = strcspn(list, ",");

		snprintf(item, sizeof(item), "%.*s", (int)n, list);
		if (!first)
			fputc(',', o);
		first = false;
		json_str(o, item);
		list += n;
		while (*list == ',' || *list == ' ')
			list++;
	}
	fputc(']', o);
}

static void json_pcie(FILE *o, const struct rn_align_pcie *l)
{
	if (!l->gen && l->gbs <= 0) {
		fputs("null", o);
		return;
	}
	if (l->gen)
		fprintf(o, "{\"gen\":%d,\"width\":%d,\"gbs\":%.1f}", l->gen, l->width, l->gbs);
	else
		fprintf(o, "{\"gen\":null,\"width\":null,\"gbs\":%.1f}", l->gbs);
}

static void json_str_or_null(FILE *o, const char *s, void (*json_str)(FILE *, const char *))
{
	if (s && s[0])
		json_str(o, s);
	else
		fputs("null", o);
}

void rn_align_json(const struct rn_align *a, FILE *o, void (*json_str)(FILE *, const char *))
{
	fputs("{\"topology\":", o);
	json_str(o, a->topo->source);
	fprintf(o, ",\"topology_has_io\":%s,\"gpu_source\":", a->topo->io ? "true" : "false");
	json_str(o, a->topo->gpu_source);
	fprintf(o, ",\"gpus_known\":%s,\"gdr_level\":\"%s\",\"gdr\":{\"available\":%s,\"peermem\":",
		a->topo->gpus_known ? "true" : "false", rn_align_level_str(a->topo),
		a->gdr.works ? "true" : "false");
	if (a->gdr.peermem)
		json_str(o, a->gdr.peermem_how);
	else
		fputs("null", o);
	fprintf(o, ",\"dmabuf\":%s,\"data_direct\":%s,\"why\":",
		a->gdr.dmabuf < 0 ? "null"
		: a->gdr.dmabuf	  ? "true"
				  : "false",
		a->gdr.data_direct < 0 ? "null"
		: a->gdr.data_direct   ? "true"
				       : "false");
	json_str(o, a->gdr.why);
	fprintf(o, "},\"hostnetwork\":%s,\"gpus\":[", a->hostnetwork ? "true" : "false");
	for (int g = 0; g < a->ngpus; g++) {
		const struct rn_align_gpu *gp = &a->gpus[g];

		fprintf(o, "%s{\"cuda_index\":%d,\"host_index\":%d,\"bus_id\":", g ? "," : "",
			gp->dev->cuda_index, gp->host_index);
		json_str(o, gp->dev->busid);
		fputs(",\"root\":", o);
		json_str_or_null(o, gp->dev->root, json_str);
		fprintf(o, ",\"numa_node\":%d,\"pcie\":", gp->dev->numa);
		json_pcie(o, &gp->pcie);
		fputs(",\"gpudirect\":", o);
		json_names(a, o, gp->gdr, gp->ngdr, json_str);
		fputs(",\"within_level\":", o);
		json_names(a, o, gp->near, gp->nnear, json_str);
		fputs(",\"elsewhere\":", o);
		json_names(a, o, gp->host, gp->nhost, json_str);
		fputs(",\"not_given\":", o);
		json_split(o, gp->not_given, json_str);
		fprintf(o, ",\"busbw_gbs\":{\"low\":%.1f,\"high\":%.1f}}", gp->low_gbs,
			gp->high_gbs);
	}
	fputs("],\"rails\":[", o);
	for (int r = 0; r < a->nrails; r++) {
		const struct rn_align_rail *rl = &a->rails[r];

		fprintf(o, "%s{\"name\":", r ? "," : "");
		json_str(o, rl->name);
		fputs(",\"device\":", o);
		json_str(o, rl->device);
		fprintf(o, ",\"port\":%d,\"interface\":", rl->port);
		json_str_or_null(o, rl->ifname, json_str);
		fputs(",\"root\":", o);
		json_str_or_null(o, rl->root, json_str);
		fprintf(o, ",\"speed_mbps\":%d,\"pcie\":", rl->speed);
		json_pcie(o, &rl->pcie);
		fputs(",\"path\":", o);
		if (rl->path >= 0)
			fprintf(o, "\"%s\"", rn_path_type_str(rl->path));
		else
			fputs("null", o);
		fprintf(o, ",\"within_level\":%s,\"gpudirect\":%s,\"role\":\"%s\"}",
			rl->near ? "true" : "false", rl->gpudirect ? "true" : "false",
			rl->frontend ? "front-end"
			: rl->other  ? "other-gpus"
				     : "rail");
	}
	fputs("],\"gpudirect\":", o);
	json_flag(a, o, 0, json_str);
	fputs(",\"host_memory\":", o);
	json_flag(a, o, 1, json_str);
	fputs(",\"front_end\":", o);
	json_flag(a, o, 3, json_str);
	fputs(",\"other_gpus\":", o);
	json_flag(a, o, 2, json_str);
	fprintf(o,
		",\"busbw_gbs\":{\"low\":%.1f,\"high\":%.1f,\"aligned\":%.1f,\"regime\":\"%s\","
		"\"basis\":",
		a->low_gbs, a->high_gbs, a->aligned_gbs, rn_align_regime_str(a->regime));
	json_str(o, a->basis);
	fprintf(o, "},\"verdict\":\"%s\",\"topology_manager_applies\":%s,\"request\":",
		rn_align_verdict_str(a->verdict), a->tm_applies ? "true" : "false");
	json_split(o, a->request, json_str);
	fputs(",\"fix\":", o);
	json_str_or_null(o, a->fix, json_str);
	fputc('}', o);
}
