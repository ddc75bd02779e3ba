// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-doctor's alignment section (align.h): computes, prints (text and JSON). Decides
 * nothing the plugin would decide differently: a rail is a GPUDirect rail exactly when
 * rn_topo_ptr_support would offer RN_PTR_CUDA on it with GDR working.
 */
#include <stdio.h>
#include <string.h>

#include "align.h"
#include "railnet/net.h"
#include "railnet/gdr.h"

/*
 * The busbw model, from the seeds' measurements (docs/doctor.md): a GPUDirect rail carries
 * 70-97% of its line rate, a rail that moves GPU data through host memory counts 40% at best,
 * and a GPU cannot feed more than ~25 GB/s over its PCIe Gen4 x16 link.
 */
#define RN_ALIGN_EFF_LOW 0.70
#define RN_ALIGN_EFF_HIGH 0.97
#define RN_ALIGN_HOST_SHARE 0.40
#define RN_ALIGN_GPU_GBS 25.0

static bool is_nic(const struct rn_topo_dev *d)
{
	return (d->class_id >> 8) == 0x02; /* network controller: Ethernet, InfiniBand, ... */
}

static const char *dev_label(const struct rn_topo_dev *d)
{
	return d->netdev[0] ? d->netdev : d->name[0] ? d->name : d->busid;
}

static bool given(const struct rn_align *a, const struct rn_topo_dev *nic)
{
	for (int r = 0; r < a->nrails; r++)
		if (!strcmp(a->rails[r].device, nic->name))
			return true;
	return false;
}

static void append(char *buf, size_t len, const char *s)
{
	size_t off = strlen(buf);

	if (off < len)
		snprintf(buf + off, len - off, "%s%s", off ? ", " : "", s);
}

static bool gpu_root(const struct rn_align *a, const char *root)
{
	for (int g = 0; g < a->ngpus; g++)
		if (root[0] && !strcmp(a->gpus[g].dev->root, root))
			return true;
	return false;
}

static void rails_list(const struct rn_align *a, bool gdr, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int r = 0; r < a->nrails; r++)
		if (a->rails[r].gpudirect == gdr)
			append(buf, len, a->rails[r].name);
}

static double min2(double x, double y)
{
	return x < y ? x : y;
}

static void predict(struct rn_align *a)
{
	double g = 0, h = 0, cap;

	for (int r = 0; r < a->nrails; r++) {
		if (a->rails[r].gpudirect && a->gdr.works)
			g += a->rails[r].speed / 8000.0;
		else
			h += a->rails[r].speed / 8000.0;
	}
	cap = a->ngpus ? RN_ALIGN_EFF_HIGH * RN_ALIGN_GPU_GBS * a->ngpus : 1e12;
	a->high_gbs = min2(RN_ALIGN_EFF_HIGH * (g + RN_ALIGN_HOST_SHARE * h), cap);
	a->low_gbs = min2(g > 0 ? RN_ALIGN_EFF_LOW * g : RN_ALIGN_EFF_LOW * RN_ALIGN_HOST_SHARE * h,
			  a->high_gbs);
	a->aligned_gbs = min2(RN_ALIGN_EFF_HIGH * (g + h), cap);
}

static void decide(struct rn_align *a)
{
	char off_root[512] = "", on_roots[512] = "", missing[512] = "";
	int avail = 0;
	bool aligned = true;

	for (int g = 0; g < a->ngpus; g++)
		aligned &= a->gpus[g].non_root > 0;
	for (int r = 0; r < a->nrails; r++) {
		aligned &= a->rails[r].gpudirect;
		if (!a->rails[r].gpudirect)
			append(off_root, sizeof(off_root), a->rails[r].name);
	}
	for (int i = 0; i < a->topo->ndevs; i++) {
		const struct rn_topo_dev *d = &a->topo->devs[i];

		if (!is_nic(d) || !gpu_root(a, d->root))
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
	if (!a->nrails) { /* "no RDMA device" is the problem the doctor reports then */
		a->verdict = RN_ALIGN_NO_RAIL;
		return;
	}
	if (aligned) {
		a->verdict = RN_ALIGN_ALIGNED;
		return;
	}
	if (a->nrails > avail) {
		a->verdict = RN_ALIGN_UNALIGNABLE;
		snprintf(a->request, sizeof(a->request), "%s", on_roots);
		snprintf(
			a->fix, sizeof(a->fix),
			"Topology Manager policy `restricted` (scope `pod`) rejects this pod: its "
			"%d PFs span more PCIe roots than its GPUs, whose roots hold only %d (%s); "
			"request those %d PFs, or GPUs on the other roots",
			a->nrails, avail, on_roots[0] ? on_roots : "none", avail);
		return;
	}
	a->verdict = RN_ALIGN_MISALIGNED;
	snprintf(a->request, sizeof(a->request), "%s", missing);
	snprintf(a->fix, sizeof(a->fix),
		 "let the kubelet align GPUs and PFs: Topology Manager policy `restricted` with "
		 "scope `pod` (--topology-manager-policy=restricted "
		 "--topology-manager-scope=pod), or request the PFs on the GPUs' roots%s%s%s%s",
		 missing[0] ? " (" : "", missing, missing[0] ? ") instead of " : "",
		 missing[0] ? off_root : "");
}

void rn_align_build(struct rn_align *a, const struct rn_discovery *d, const struct rn_topo *topo,
		    const struct rn_gdr *gdr)
{
	static const struct rn_gdr assume = { .works = true, .dmabuf = 0, .data_direct = 0 };

	memset(a, 0, sizeof(*a));
	a->topo = topo;
	a->gdr = *gdr;
	for (int i = 0; i < d->nports && a->nrails < RN_ALIGN_MAX; i++) {
		const struct rn_port *p = &d->ports[i];
		const struct rn_topo_dev *dev = rn_topo_find(topo, p->pci_path);
		struct rn_align_rail *r = &a->rails[a->nrails++];
		const char *path = p->pci_path;

		snprintf(r->device, sizeof(r->device), "%s", p->name);
		snprintf(r->name, sizeof(r->name), "%s",
			 dev && dev->netdev[0] && p->link_layer != IBV_LINK_LAYER_INFINIBAND
				 ? dev->netdev
				 : p->name);
		snprintf(r->root, sizeof(r->root), "%s", dev ? dev->root : "");
		r->speed = p->speed;
		r->gpudirect =
			path && rn_gdr_ptr_support(topo, &assume, &path, 1, NULL, 0) & RN_PTR_CUDA;
		a->ngdr += r->gpudirect;
	}
	/* the pod's GPUs in CUDA order */
	for (int c = 0; a->ngpus < RN_ALIGN_MAX; c++) {
		const struct rn_topo_dev *dev = NULL;

		for (int i = 0; i < topo->ndevs && !dev; i++)
			if (topo->devs[i].gpu && topo->devs[i].visible &&
			    topo->devs[i].cuda_index == c)
				dev = &topo->devs[i];
		if (!dev)
			break;
		a->gpus[a->ngpus++].dev = dev;
	}
	for (int g = 0; g < a->ngpus; g++) {
		struct rn_align_gpu *gp = &a->gpus[g];

		for (int r = 0; r < a->nrails; r++) {
			if (gp->dev->root[0] && !strcmp(a->rails[r].root, gp->dev->root))
				gp->on_root[gp->non_root++] = r;
			else
				gp->elsewhere[gp->nelsewhere++] = r;
		}
		for (int i = 0; i < topo->ndevs; i++) {
			const struct rn_topo_dev *n = &topo->devs[i];

			if (is_nic(n) && gp->dev->root[0] && !strcmp(n->root, gp->dev->root) &&
			    !given(a, n))
				append(gp->not_given, sizeof(gp->not_given), dev_label(n));
		}
	}
	predict(a);
	decide(a);
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

static void idx_list(const struct rn_align *a, const int *idx, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		append(buf, len, a->rails[idx[i]].name);
}

void rn_align_text(const struct rn_align *a, FILE *o)
{
	char buf[1024];

	fprintf(o, "\nAlignment (topology %s; GPUs: %s)\n", a->topo->source, a->topo->gpu_source);
	fprintf(o, "  GDR probe          %s\n", a->gdr.why);
	for (int g = 0; g < a->ngpus; g++) {
		const struct rn_align_gpu *gp = &a->gpus[g];

		fprintf(o, "  GPU %d %s: root %s, numa %d\n", gp->dev->cuda_index, gp->dev->busid,
			gp->dev->root[0] ? gp->dev->root : "?", gp->dev->numa);
		idx_list(a, gp->on_root, gp->non_root, buf, sizeof(buf));
		fprintf(o, "    on its root      %s\n", buf[0] ? buf : "none");
		idx_list(a, gp->elsewhere, gp->nelsewhere, buf, sizeof(buf));
		fprintf(o, "    elsewhere        %s\n", buf[0] ? buf : "none");
		fprintf(o, "    not given        %s\n", gp->not_given[0] ? gp->not_given : "none");
	}
	rails_list(a, true, buf, sizeof(buf));
	fprintf(o, "  GPUDirect rails    %s (%d of %d)\n", buf[0] ? buf : "none", a->ngdr,
		a->nrails);
	rails_list(a, false, buf, sizeof(buf));
	fprintf(o, "  host-memory rails  %s (%d of %d)\n", buf[0] ? buf : "none",
		a->nrails - a->ngdr, a->nrails);
	fprintf(o, "  predicted busbw    %.1f-%.1f GB/s (aligned: %.1f GB/s)\n", a->low_gbs,
		a->high_gbs, a->aligned_gbs);
	fprintf(o, "  alignment          %s\n", rn_align_verdict_str(a->verdict));
	if (a->fix[0])
		fprintf(o, "    fix   %s\n", a->fix);
}

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

static void json_rails(const struct rn_align *a, FILE *o, bool gdr,
		       void (*json_str)(FILE *, const char *))
{
	bool first = true;

	fputc('[', o);
	for (int r = 0; r < a->nrails; r++) {
		if (a->rails[r].gpudirect != gdr)
			continue;
		if (!first)
			fputc(',', o);
		first = false;
		json_str(o, a->rails[r].name);
	}
	fputc(']', o);
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

void rn_align_json(const struct rn_align *a, FILE *o, void (*json_str)(FILE *, const char *))
{
	fputs("{\"topology\":", o);
	json_str(o, a->topo->source);
	fprintf(o, ",\"topology_has_io\":%s,\"gpu_source\":", a->topo->io ? "true" : "false");
	json_str(o, a->topo->gpu_source);
	fprintf(o, ",\"gpus_known\":%s,\"gdr\":{\"available\":%s,\"peermem\":",
		a->topo->gpus_known ? "true" : "false", a->gdr.works ? "true" : "false");
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
	fputs("},\"gpus\":[", o);
	for (int g = 0; g < a->ngpus; g++) {
		const struct rn_align_gpu *gp = &a->gpus[g];

		fprintf(o, "%s{\"cuda_index\":%d,\"bus_id\":", g ? "," : "", gp->dev->cuda_index);
		json_str(o, gp->dev->busid);
		fputs(",\"root\":", o);
		if (gp->dev->root[0])
			json_str(o, gp->dev->root);
		else
			fputs("null", o);
		fprintf(o, ",\"numa_node\":%d,\"rails_on_root\":", gp->dev->numa);
		json_names(a, o, gp->on_root, gp->non_root, json_str);
		fputs(",\"rails_elsewhere\":", o);
		json_names(a, o, gp->elsewhere, gp->nelsewhere, json_str);
		fputs(",\"not_given_on_root\":", o);
		json_split(o, gp->not_given, json_str);
		fputc('}', o);
	}
	fputs("],\"rails\":[", o);
	for (int r = 0; r < a->nrails; r++) {
		const struct rn_align_rail *rl = &a->rails[r];

		fprintf(o, "%s{\"name\":", r ? "," : "");
		json_str(o, rl->name);
		fputs(",\"device\":", o);
		json_str(o, rl->device);
		fputs(",\"root\":", o);
		if (rl->root[0])
			json_str(o, rl->root);
		else
			fputs("null", o);
		fprintf(o, ",\"speed_mbps\":%d,\"gpudirect\":%s}", rl->speed,
			rl->gpudirect ? "true" : "false");
	}
	fputs("],\"gpudirect\":", o);
	json_rails(a, o, true, json_str);
	fputs(",\"host_memory\":", o);
	json_rails(a, o, false, json_str);
	fprintf(o,
		",\"busbw_gbs\":{\"low\":%.1f,\"high\":%.1f,\"aligned\":%.1f},\"verdict\":\"%s\","
		"\"request\":",
		a->low_gbs, a->high_gbs, a->aligned_gbs, rn_align_verdict_str(a->verdict));
	json_split(o, a->request, json_str);
	fputs(",\"fix\":", o);
	if (a->fix[0])
		json_str(o, a->fix);
	else
		fputs("null", o);
	fputc('}', o);
}
