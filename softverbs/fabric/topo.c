// SPDX-License-Identifier: Apache-2.0
/*
 * Writes a node's hwloc topology as hwloc v2 XML (what hwloc_topology_set_xml and
 * `lstopo --if xml` load): a Machine with one Package per NUMA node, each holding its
 * NUMANode, one Core/PU per cpu, and the I/O tree of the PCIe roots local to it — host bridge,
 * root port (a PCI bridge), and below it the NICs (class 0x0207 with an OpenFabrics and a
 * network OSDev) and GPUs (class 0x0302 with a CUDA co-processor OSDev). It writes one file
 * and reads nothing but the parsed fabric.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"

struct sv_xml {
	FILE *fp;
	unsigned int gp; /* next gp_index */
};

static void xml_text(FILE *fp, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", fp);
			break;
		case '>':
			fputs("&gt;", fp);
			break;
		case '&':
			fputs("&amp;", fp);
			break;
		case '"':
			fputs("&quot;", fp);
			break;
		default:
			fputc(*s, fp);
		}
	}
}

static void info(struct sv_xml *x, int indent, const char *name, const char *value)
{
	fprintf(x->fp, "%*s<info name=\"", indent, "");
	xml_text(x->fp, name);
	fputs("\" value=\"", x->fp);
	xml_text(x->fp, value);
	fputs("\"/>\n", x->fp);
}

/* hwloc's bitmap text: 32-bit words, most significant first, "0x%08x" comma-separated. */
static void bitmap(FILE *fp, const uint32_t *words, int nwords)
{
	int top = nwords - 1, i;

	while (top > 0 && !words[top])
		top--;
	for (i = top; i >= 0; i--)
		fprintf(fp, "%s0x%08x", i == top ? "" : ",", words[i]);
}

static void sets(struct sv_xml *x, const uint32_t *cpus, const uint32_t *nodes, int all)
{
	const char *names[] = { "cpuset", "complete_cpuset", "allowed_cpuset" };
	const char *nnames[] = { "nodeset", "complete_nodeset", "allowed_nodeset" };
	int i;

	for (i = 0; i < (all ? 3 : 2); i++) {
		fprintf(x->fp, " %s=\"", names[i]);
		bitmap(x->fp, cpus, SV_MAX_CPUS / 32);
		fputc('"', x->fp);
	}
	for (i = 0; i < (all ? 3 : 2); i++) {
		fprintf(x->fp, " %s=\"", nnames[i]);
		bitmap(x->fp, nodes, 8);
		fputc('"', x->fp);
	}
}

static int by_pci(const struct sv_pci *a, const struct sv_pci *b)
{
	uint32_t ka = a->domain << 16 | a->bus << 8 | a->dev << 3 | a->fn;
	uint32_t kb = b->domain << 16 | b->bus << 8 | b->dev << 3 | b->fn;

	return ka < kb ? -1 : ka > kb;
}

static void pcidev(struct sv_xml *x, const struct sv_pci *p, unsigned int cls, unsigned int vendor,
		   unsigned int device, const struct sv_pcie *link)
{
	fprintf(x->fp,
		"          <object type=\"PCIDev\" gp_index=\"%u\" pci_busid=\"%04x:%02x:%02x.%x\""
		" pci_type=\"%04x [%04x:%04x] [%04x:%04x] 00\" pci_link_speed=\"%f\">\n",
		x->gp++, p->domain, p->bus, p->dev, p->fn, cls, vendor, device, vendor,
		cls == 0x0604 ? 0 : 0x0007, sv_pcie_gbs(link));
}

static void write_nic(struct sv_xml *x, const struct sv_node *n, int i)
{
	const struct sv_nic *c = &n->nics[i];
	char g[32], buf[64];
	int k;

	pcidev(x, &c->pci, 0x0207, c->vendor, c->device, &c->pcie);
	info(x, 12, "PCIVendor", "Mellanox Technologies");
	info(x, 12, "PCIDevice",
	     c->vf_of >= 0 ? "ConnectX Family mlx5Gen Virtual Function"
			   : "MT28908 Family [ConnectX-6]");
	fprintf(x->fp,
		"            <object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" "
		"osdev_type=\"3\">\n",
		x->gp++, c->name);
	sv_guid_str(c->guid, g, sizeof(g));
	info(x, 14, "NodeGUID", g);
	sv_guid_str(c->vf_of >= 0 ? n->nics[c->vf_of].guid : c->guid, g, sizeof(g));
	info(x, 14, "SysImageGUID", g);
	for (k = 0; k < c->nports; k++) {
		char key[32];

		snprintf(key, sizeof(key), "Port%dState", c->ports[k].num);
		info(x, 14, key, c->ports[k].active ? "4" : "1");
		snprintf(key, sizeof(key), "Port%dLID", c->ports[k].num);
		snprintf(buf, sizeof(buf), "0x%x", c->ports[k].ib ? c->ports[k].lid : 0);
		info(x, 14, key, buf);
		snprintf(key, sizeof(key), "Port%dLMC", c->ports[k].num);
		info(x, 14, key, "0");
	}
	fputs("            </object>\n", x->fp);
	for (k = 0; k < c->nports; k++) {
		const struct sv_port *pt = &c->ports[k];

		if (pt->ib || pt->moved_to >= 0)
			continue;
		fprintf(x->fp,
			"            <object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" "
			"osdev_type=\"2\">\n",
			x->gp++, pt->netdev);
		snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", pt->mac[0], pt->mac[1],
			 pt->mac[2], pt->mac[3], pt->mac[4], pt->mac[5]);
		info(x, 14, "Address", buf);
		fputs("            </object>\n", x->fp);
	}
	fputs("          </object>\n", x->fp);
}

static void write_gpu(struct sv_xml *x, const struct sv_node *n, int i)
{
	const struct sv_gpu *g = &n->gpus[i];
	char name[32];

	pcidev(x, &g->pci, 0x0302, g->vendor, g->device, &g->pcie);
	info(x, 12, "PCIVendor", "NVIDIA Corporation");
	info(x, 12, "PCIDevice", g->model);
	snprintf(name, sizeof(name), "cuda%d", i);
	fprintf(x->fp,
		"            <object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" "
		"osdev_type=\"5\">\n",
		x->gp++, name);
	info(x, 14, "CoProcType", "CUDA");
	info(x, 14, "Backend", "CUDA");
	info(x, 14, "GPUVendor", "NVIDIA Corporation");
	info(x, 14, "GPUModel", g->model);
	fputs("            </object>\n", x->fp);
	fputs("          </object>\n", x->fp);
}

/* Endpoints below root r, in PCI order, as (kind, index) pairs: kind 0 nic, 1 gpu. */
static int endpoints(const struct sv_node *n, int r, int (*out)[2])
{
	int cnt = 0, i, j;

	for (i = 0; i < n->nnics; i++)
		if (n->nics[i].root == r)
			out[cnt][0] = 0, out[cnt++][1] = i;
	for (i = 0; i < n->ngpus; i++)
		if (n->gpus[i].root == r)
			out[cnt][0] = 1, out[cnt++][1] = i;
	for (i = 1; i < cnt; i++) {
		for (j = i; j > 0; j--) {
			const struct sv_pci *a = out[j - 1][0] ? &n->gpus[out[j - 1][1]].pci
							       : &n->nics[out[j - 1][1]].pci;
			const struct sv_pci *b =
				out[j][0] ? &n->gpus[out[j][1]].pci : &n->nics[out[j][1]].pci;
			int t0, t1;

			if (by_pci(a, b) <= 0)
				break;
			t0 = out[j][0], t1 = out[j][1];
			out[j][0] = out[j - 1][0], out[j][1] = out[j - 1][1];
			out[j - 1][0] = t0, out[j - 1][1] = t1;
		}
	}
	return cnt;
}

static void bus_range(const struct sv_node *n, int (*eps)[2], int cnt, unsigned int lo_default,
		      unsigned int *lo, unsigned int *hi)
{
	int i;

	*lo = 0xff, *hi = 0;
	for (i = 0; i < cnt; i++) {
		const struct sv_pci *p =
			eps[i][0] ? &n->gpus[eps[i][1]].pci : &n->nics[eps[i][1]].pci;

		*lo = p->bus < *lo ? p->bus : *lo;
		*hi = p->bus > *hi ? p->bus : *hi;
	}
	if (!cnt)
		*lo = *hi = lo_default;
}

static int write_roots(struct sv_xml *x, const struct sv_node *n, int numa)
{
	int(*eps)[2] = calloc((size_t)(n->nnics + n->ngpus + 1), sizeof(*eps));
	int r, q, i, cnt;

	if (!eps)
		return -ENOMEM;
	for (r = 0; r < n->nroots; r++) {
		const struct sv_pci *hb = &n->roots[r].port;
		unsigned int hi_all = hb->bus, lo, hi;
		int first = 1;

		if (n->roots[r].numa != numa)
			continue;
		/* one host bridge per (domain, bus); the first root on it opens it */
		for (q = 0; q < r; q++)
			if (n->roots[q].port.domain == hb->domain &&
			    n->roots[q].port.bus == hb->bus)
				first = 0;
		if (!first)
			continue;
		for (q = r; q < n->nroots; q++) {
			if (n->roots[q].port.domain != hb->domain ||
			    n->roots[q].port.bus != hb->bus)
				continue;
			cnt = endpoints(n, q, eps);
			bus_range(n, eps, cnt, n->roots[q].port.bus + 1, &lo, &hi);
			hi_all = hi > hi_all ? hi : hi_all;
		}
		fprintf(x->fp,
			"      <object type=\"Bridge\" gp_index=\"%u\" bridge_type=\"0-1\" "
			"depth=\"0\" bridge_pci=\"%04x:[%02x-%02x]\">\n",
			x->gp++, hb->domain, hb->bus, hi_all);
		for (q = r; q < n->nroots; q++) {
			const struct sv_root *rt = &n->roots[q];

			if (rt->port.domain != hb->domain || rt->port.bus != hb->bus)
				continue;
			cnt = endpoints(n, q, eps);
			bus_range(n, eps, cnt, rt->port.bus + 1, &lo, &hi);
			fprintf(x->fp,
				"        <object type=\"Bridge\" gp_index=\"%u\" "
				"bridge_type=\"1-1\" depth=\"1\" pci_busid=\"%04x:%02x:%02x.%x\" "
				"pci_type=\"0604 [%04x:%04x] [0000:0000] 00\" "
				"pci_link_speed=\"31.507692\" bridge_pci=\"%04x:[%02x-%02x]\">\n",
				x->gp++, rt->port.domain, rt->port.bus, rt->port.dev, rt->port.fn,
				rt->vendor, rt->device, rt->port.domain, lo, hi);
			info(x, 10, "SoftverbsRoot", rt->name);
			/* a switch: upstream port, then the downstream port the devices hang on */
			for (int k = 0; rt->has_switch && k < 2; k++) {
				const struct sv_pci *sw = k ? &rt->down : &rt->up;

				fprintf(x->fp,
					"        <object type=\"Bridge\" gp_index=\"%u\" "
					"bridge_type=\"1-1\" depth=\"%d\" "
					"pci_busid=\"%04x:%02x:%02x.%x\" "
					"pci_type=\"0604 [10b5:c040] [0000:0000] 00\" "
					"pci_link_speed=\"31.507692\" "
					"bridge_pci=\"%04x:[%02x-%02x]\">\n",
					x->gp++, 2 + k, sw->domain, sw->bus, sw->dev, sw->fn,
					sw->domain, sw->bus + 1,
					hi > sw->bus + 1 ? hi : sw->bus + 1);
			}
			for (i = 0; i < cnt; i++) {
				if (eps[i][0])
					write_gpu(x, n, eps[i][1]);
				else
					write_nic(x, n, eps[i][1]);
			}
			if (rt->has_switch)
				fputs("        </object>\n        </object>\n", x->fp);
			fputs("        </object>\n", x->fp);
		}
		fputs("      </object>\n", x->fp);
	}
	free(eps);
	return 0;
}

int sv_topo_write(const struct sv_fabric *f, const struct sv_node *n, const char *path)
{
	uint32_t *all = calloc(SV_MAX_CPUS / 32, sizeof(uint32_t));
	uint32_t *cpus = calloc(SV_MAX_CPUS / 32, sizeof(uint32_t));
	uint32_t nodes[8] = { 0 }, one[8];
	struct sv_xml x = { .gp = 1 };
	int i, ret = 0, m;
	unsigned int c;

	(void)f;
	if (!all || !cpus) {
		ret = -ENOMEM;
		goto out_free;
	}
	x.fp = fopen(path, "w");
	if (!x.fp) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", path, strerror(errno));
		goto out_free;
	}
	for (i = 0; i < n->nnumas; i++) {
		sv_cpulist_bits(n->numas[i].cpus, all);
		nodes[n->numas[i].id / 32] |= 1u << (n->numas[i].id % 32);
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	      "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	      "<topology version=\"2.0\">\n",
	      x.fp);
	fprintf(x.fp, "  <object type=\"Machine\" os_index=\"0\"");
	sets(&x, all, nodes, 1);
	fprintf(x.fp, " gp_index=\"%u\">\n", x.gp++);
	info(&x, 4, "Backend", "softverbs-fabric");
	info(&x, 4, "HostName", n->name);
	info(&x, 4, "OSName", "Linux");
	info(&x, 4, "Architecture", "x86_64");
	for (m = 0; m < n->nnumas; m++) {
		const struct sv_numa *nm = &n->numas[m];

		memset(cpus, 0, SV_MAX_CPUS / 8);
		memset(one, 0, sizeof(one));
		one[nm->id / 32] = 1u << (nm->id % 32);
		sv_cpulist_bits(nm->cpus, cpus);
		fprintf(x.fp, "    <object type=\"Package\" os_index=\"%d\"", nm->id);
		sets(&x, cpus, one, 0);
		fprintf(x.fp, " gp_index=\"%u\">\n", x.gp++);
		fprintf(x.fp, "      <object type=\"NUMANode\" os_index=\"%d\"", nm->id);
		sets(&x, cpus, one, 0);
		fprintf(x.fp, " gp_index=\"%u\" local_memory=\"%llu\">\n", x.gp++,
			(unsigned long long)nm->memory_bytes);
		fprintf(x.fp, "        <page_type size=\"4096\" count=\"%llu\"/>\n",
			(unsigned long long)(nm->memory_bytes / 4096));
		fputs("      </object>\n", x.fp);
		for (c = 0; c < SV_MAX_CPUS; c++) {
			uint32_t bit[SV_MAX_CPUS / 32] = { 0 };

			if (!(cpus[c / 32] & (1u << (c % 32))))
				continue;
			bit[c / 32] = 1u << (c % 32);
			fprintf(x.fp, "      <object type=\"Core\" os_index=\"%u\"", c);
			sets(&x, bit, one, 0);
			fprintf(x.fp,
				" gp_index=\"%u\">\n        <object type=\"PU\" os_index=\"%u\"",
				x.gp++, c);
			sets(&x, bit, one, 0);
			fprintf(x.fp, " gp_index=\"%u\"/>\n      </object>\n", x.gp++);
		}
		ret = write_roots(&x, n, nm->id);
		if (ret)
			break;
		fputs("    </object>\n", x.fp);
	}
	fputs("  </object>\n</topology>\n", x.fp);
	if (fclose(x.fp) && !ret) {
		ret = -EIO;
		fprintf(stderr, "softverbs-fabric: cannot write %s\n", path);
	}
out_free:
	free(all);
	free(cpus);
	return ret;
}
