// SPDX-License-Identifier: Apache-2.0
/*
 * Writes the output tree of `softverbs-fabric build`: per node a topo.xml and one view per
 * pod plus the host view, each a sysfs-like directory laid out as docs/softverbs.md says,
 * with an env file beside it; and the fabric's empty rendezvous directory. A GID entry a
 * view must not see reads as zero, and its types/ndevs files are symlinks to
 * /proc/self/clear_refs so that read() fails with EINVAL as in the kernel. It only creates
 * files below OUTDIR, and only clears an OUTDIR it made itself (marked by .softverbs-fabric).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric.h"

#define SV_EINVAL_FILE "/proc/self/clear_refs"
#define SV_MARKER ".softverbs-fabric"

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST) {
			int ret = -errno;

			fprintf(stderr, "softverbs-fabric: mkdir %s: %s\n", buf, strerror(errno));
			return ret;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

/* Writes `fmt` + a newline to dir/name, creating dir's missing parents. */
__attribute__((format(printf, 3, 4))) static int put(const char *dir, const char *name,
						     const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *fp;
	int ret = 0;

	if (sv_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	fp = fopen(path, "w");
	if (!fp && errno == ENOENT) {
		char *slash = strrchr(path, '/');

		*slash = 0;
		ret = mkdir_p(path);
		if (ret)
			return ret;
		*slash = '/';
		fp = fopen(path, "w");
	}
	if (!fp) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", path, strerror(errno));
		return ret;
	}
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fputc('\n', fp);
	if (fclose(fp)) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", path, strerror(errno));
	}
	return ret;
}

static int link_at(const char *dir, const char *name, const char *target)
{
	char path[PATH_MAX];
	int ret;

	if (sv_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	unlink(path);
	if (!symlink(target, path))
		return 0;
	if (errno == ENOENT) {
		char *slash = strrchr(path, '/');

		*slash = 0;
		ret = mkdir_p(path);
		if (ret)
			return ret;
		*slash = '/';
		if (!symlink(target, path))
			return 0;
	}
	ret = -errno;
	fprintf(stderr, "softverbs-fabric: symlink %s -> %s: %s\n", path, target, strerror(errno));
	return ret;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP ? rmdir(path) : unlink(path)) {
		fprintf(stderr, "softverbs-fabric: cannot remove %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	return nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS) ? -EIO : 0;
}

/* ---- paths ---- */

static const struct sv_numa *numa_of(const struct sv_node *n, int id)
{
	int i;

	for (i = 0; i < n->nnumas; i++)
		if (n->numas[i].id == id)
			return &n->numas[i];
	return &n->numas[0];
}

/* "devices/pci0000:0b/0000:0b:01.0" */
static void root_path(const struct sv_root *r, char *buf, size_t len)
{
	char port[32];

	sv_pci_str(&r->port, port, sizeof(port));
	sv_pathf(buf, len, "devices/pci%04x:%02x/%s", r->port.domain, r->port.bus, port);
}

/* Where a root's devices hang: its port, or the downstream port of its switch. */
static void below_path(const struct sv_root *r, char *buf, size_t len)
{
	char rp[128], up[32], down[32];

	root_path(r, rp, sizeof(rp));
	if (!r->has_switch) {
		sv_pathf(buf, len, "%s", rp);
		return;
	}
	sv_pci_str(&r->up, up, sizeof(up));
	sv_pci_str(&r->down, down, sizeof(down));
	sv_pathf(buf, len, "%s/%s/%s", rp, up, down);
}

static void dev_path(const struct sv_node *n, int root, const struct sv_pci *pci, char *buf,
		     size_t len)
{
	char rp[192], bdf[32];

	below_path(&n->roots[root], rp, sizeof(rp));
	sv_pci_str(pci, bdf, sizeof(bdf));
	sv_pathf(buf, len, "%s/%s", rp, bdf);
}

/* The name a port's netdev has in the viewer's netns, or NULL if it is not there. */
static const char *netdev_in(const struct sv_node *n, int viewer, int nic, int port)
{
	const struct sv_port *pt = &n->nics[nic].ports[port];
	const struct sv_pod *p;
	int k;

	if (pt->ib)
		return NULL;
	if (pt->moved_to < 0)
		return viewer < 0 ? pt->netdev : NULL;
	if (pt->moved_to != viewer)
		return NULL;
	p = &n->pods[viewer];
	for (k = 0; k < p->nifaces; k++)
		if (p->ifaces[k].nic == nic && p->ifaces[k].port == port)
			return p->ifaces[k].ifname;
	return NULL;
}

static void mac_str(const uint8_t m[6], char *buf, size_t len)
{
	sv_pathf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int ib_mtu(int mtu)
{
	int m = 4096;

	/* RoCE: the largest IB MTU that fits the netdev MTU with its headers */
	while (m > 256 && m + 96 > mtu)
		m /= 2;
	return m;
}

/* ---- the view ---- */

struct sv_view {
	const struct sv_fabric *f;
	const struct sv_node *n;
	int viewer; /* netns viewer: pod index or -1 */
	int pod;    /* the pod the view is for, -1: host view */
	char dir[PATH_MAX];
	int ifindex;
};

/*
 * The binary files of a PCI function that libpci (perftest's relaxed-ordering check) and
 * hwloc read: `config` (the 256-byte header: ids, class, header type, and for a bridge
 * (sec > 0) its primary/secondary/subordinate buses; no capabilities) and `resource` (no BARs).
 */
static int write_pci_binary(const char *dir, unsigned int vendor, unsigned int device,
			    unsigned int cls, unsigned int pri, unsigned int sec, unsigned int sub)
{
	uint8_t cfg[256] = { 0 };
	char path[PATH_MAX];
	FILE *fp;
	int ret = 0;

	cfg[0] = vendor & 0xff, cfg[1] = vendor >> 8;
	cfg[2] = device & 0xff, cfg[3] = device >> 8;
	cfg[4] = 0x06; /* memory space, bus master */
	cfg[9] = cls & 0xff, cfg[10] = (cls >> 8) & 0xff, cfg[11] = (cls >> 16) & 0xff;
	cfg[14] = sec ? 1 : 0;
	if (sec)
		cfg[0x18] = (uint8_t)pri, cfg[0x19] = (uint8_t)sec, cfg[0x1a] = (uint8_t)sub;
	if (sv_pathf(path, sizeof(path), "%s/config", dir))
		return -ENAMETOOLONG;
	fp = fopen(path, "w");
	if (!fp || fwrite(cfg, 1, sizeof(cfg), fp) != sizeof(cfg))
		ret = -EIO;
	if (fp && fclose(fp))
		ret = -EIO;
	if (ret) {
		fprintf(stderr, "softverbs-fabric: cannot write %s\n", path);
		return ret;
	}
	return put(dir, "resource",
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		   "0x0000000000000000 0x0000000000000000 0x0000000000000000") ?:
	       put(dir, "irq", "0") ?: put(dir, "revision", "0x00");
}

static int write_pci_common(struct sv_view *v, const char *dir, unsigned int vendor,
			    unsigned int device, unsigned int cls, int numa,
			    const struct sv_pcie *link)
{
	static const struct sv_pcie bridge = { 4, 16 };
	const struct sv_numa *m = numa_of(v->n, numa);

	if (!link)
		link = &bridge;
	return put(dir, "vendor", "0x%04x", vendor) ?:
	       put(dir, "device", "0x%04x", device) ?:
	       put(dir, "class", "0x%06x", cls) ?:
	       put(dir, "subsystem_vendor", "0x%04x", vendor) ?:
	       put(dir, "subsystem_device", "0x%04x", cls == 0x060400 ? 0 : 0x0007) ?:
	       put(dir, "numa_node", "%d", numa) ?:
	       put(dir, "local_cpulist", "%s", m->cpus) ?:
	       put(dir, "current_link_speed", "%s", sv_pcie_speed_str(link->gen)) ?:
	       put(dir, "current_link_width", "%d", link->width) ?:
	       put(dir, "max_link_speed", "%s", sv_pcie_speed_str(link->gen)) ?:
	       put(dir, "max_link_width", "%d", link->width);
}

static int write_netdev(struct sv_view *v, const char *ifname, const uint8_t mac[6], int mtu,
			int up, int speed_mbps, const char *pcipath)
{
	char dir[PATH_MAX], macs[32], target[PATH_MAX];
	int ret;

	sv_pathf(dir, sizeof(dir), "%s/class/net/%s", v->dir, ifname);
	mac_str(mac, macs, sizeof(macs));
	v->ifindex++;
	ret = put(dir, "address", "%s", macs) ?:
	      put(dir, "broadcast", "ff:ff:ff:ff:ff:ff") ?:
	      put(dir, "addr_len", "6") ?:
	      put(dir, "mtu", "%d", mtu) ?:
	      put(dir, "ifindex", "%d", v->ifindex) ?:
	      put(dir, "iflink", "%d", v->ifindex) ?:
	      put(dir, "type", "1") ?:
	      put(dir, "operstate", "%s", up ? "up" : "down") ?:
	      put(dir, "carrier", "%d", up) ?:
	      put(dir, "speed", "%d", up ? speed_mbps : -1);
	if (ret || !pcipath)
		return ret;
	sv_pathf(target, sizeof(target), "../../../%s", pcipath);
	ret = link_at(dir, "device", target);
	if (ret)
		return ret;
	sv_pathf(dir, sizeof(dir), "%s/%s/net/%s", v->dir, pcipath, ifname);
	return mkdir_p(dir);
}

static int write_port(struct sv_view *v, int nic, int port, const char *devdir)
{
	const struct sv_nic *c = &v->n->nics[nic];
	const struct sv_port *pt = &c->ports[port];
	struct sv_gid *tbl;
	char dir[PATH_MAX], name[32], gid[64];
	int ret, i;

	sv_pathf(dir, sizeof(dir), "%s/ports/%d", devdir, pt->num);
	ret = put(dir, "state", "%s", pt->active ? "4: ACTIVE" : "1: DOWN") ?:
	      put(dir, "phys_state", "%s", pt->active ? "5: LinkUp" : "3: Disabled") ?:
	      put(dir, "link_layer", "%s", pt->ib ? "InfiniBand" : "Ethernet") ?:
	      put(dir, "rate", "%s", pt->rate) ?:
	      put(dir, "lid", "0x%x", pt->ib ? pt->lid : 0) ?:
	      put(dir, "sm_lid", "0x%x", pt->ib ? pt->sm_lid : 0) ?:
	      put(dir, "lid_mask_count", "0") ?:
	      put(dir, "sm_sl", "0") ?:
	      put(dir, "cap_mask", "0x%08x", pt->ib ? 0x2651e84a : 0x04010000) ?:
	      put(dir, "pkeys/0", "0xffff");
	if (ret)
		return ret;
	tbl = calloc(SV_GID_TBL_MAX, sizeof(*tbl));
	if (!tbl)
		return -ENOMEM;
	sv_gid_table(v->f, v->n, nic, port, tbl);
	for (i = 0; i < pt->gid_tbl_len && !ret; i++) {
		int vis = sv_gid_visible(v->n, v->viewer, &tbl[i]);
		static const uint8_t zero[16];

		sv_gid_str(vis ? tbl[i].raw : zero, gid, sizeof(gid));
		sv_pathf(name, sizeof(name), "gids/%d", i);
		ret = put(dir, name, "%s", gid);
		if (ret)
			break;
		sv_pathf(name, sizeof(name), "gid_attrs/types/%d", i);
		ret = vis ? put(dir, name, "%s", tbl[i].v2 ? "RoCE v2" : "IB/RoCE v1")
			  : link_at(dir, name, SV_EINVAL_FILE);
		if (ret)
			break;
		sv_pathf(name, sizeof(name), "gid_attrs/ndevs/%d", i);
		ret = vis && tbl[i].ndev[0] ? put(dir, name, "%s", tbl[i].ndev)
					    : link_at(dir, name, SV_EINVAL_FILE);
	}
	free(tbl);
	return ret;
}

static int write_ibdev(struct sv_view *v, int nic)
{
	const struct sv_nic *c = &v->n->nics[nic];
	uint64_t sysguid = c->vf_of >= 0 ? v->n->nics[c->vf_of].guid : c->guid;
	char dir[PATH_MAX], pcipath[256], target[PATH_MAX], g[32], sg[32];
	int ret, k;

	sv_pathf(dir, sizeof(dir), "%s/class/infiniband/%s", v->dir, c->name);
	dev_path(v->n, c->root, &c->pci, pcipath, sizeof(pcipath));
	sv_guid_str(c->guid, g, sizeof(g));
	sv_guid_str(sysguid, sg, sizeof(sg));
	sv_pathf(target, sizeof(target), "../../../%s", pcipath);
	ret = put(dir, "node_guid", "%s", g) ?:
	      put(dir, "sys_image_guid", "%s", sg) ?:
	      put(dir, "node_type", "1: CA") ?:
	      put(dir, "node_desc", "%s %s", v->n->name, c->name) ?:
	      put(dir, "hca_type", "MT%u", c->device) ?:
	      put(dir, "hw_rev", "0x0") ?:
	      put(dir, "fw_ver", "%s", c->fw_ver) ?:
	      put(dir, "board_id", "%s", c->board_id) ?:
	      link_at(dir, "device", target);
	for (k = 0; k < c->nports && !ret; k++)
		ret = write_port(v, nic, k, dir);
	if (ret)
		return ret;
	sv_pathf(dir, sizeof(dir), "%s/%s/infiniband/%s", v->dir, pcipath, c->name);
	return mkdir_p(dir);
}

static int write_devices(struct sv_view *v)
{
	const struct sv_node *n = v->n;
	char dir[PATH_MAX], rp[256], pcipath[256], bdf[32], target[64];
	int i, ret = 0, nvf;

	for (i = 0; i < n->nroots && !ret; i++) {
		const struct sv_root *r = &n->roots[i];

		unsigned int lo = 0xff, hi = r->port.bus + 1;

		/* the buses below the port: its devices' (and its switch's) */
		for (int k = 0; k < n->ngpus; k++)
			if (n->gpus[k].root == i) {
				lo = n->gpus[k].pci.bus < lo ? n->gpus[k].pci.bus : lo;
				hi = n->gpus[k].pci.bus > hi ? n->gpus[k].pci.bus : hi;
			}
		for (int k = 0; k < n->nnics; k++)
			if (n->nics[k].root == i) {
				lo = n->nics[k].pci.bus < lo ? n->nics[k].pci.bus : lo;
				hi = n->nics[k].pci.bus > hi ? n->nics[k].pci.bus : hi;
			}
		lo = lo == 0xff ? r->port.bus + 1 : lo;
		root_path(r, rp, sizeof(rp));
		sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, rp);
		ret = write_pci_common(v, dir, r->vendor, r->device, 0x060400, r->numa, NULL)
			      ?: write_pci_binary(dir, r->vendor, r->device, 0x060400, r->port.bus,
						  r->has_switch ? r->up.bus : lo, hi);
		if (ret || !r->has_switch)
			continue;
		/* a PCIe switch (Broadcom PEX, 10b5:c040): upstream port, downstream port */
		sv_pci_str(&r->up, bdf, sizeof(bdf));
		sv_pathf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", bdf);
		ret = write_pci_common(v, dir, 0x10b5, 0xc040, 0x060400, r->numa, NULL)
			      ?: write_pci_binary(dir, 0x10b5, 0xc040, 0x060400, r->up.bus,
						  r->down.bus, hi);
		sv_pci_str(&r->down, bdf, sizeof(bdf));
		sv_pathf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", bdf);
		ret = ret ?: write_pci_common(v, dir, 0x10b5, 0xc040, 0x060400, r->numa, NULL) ?:
		      write_pci_binary(dir, 0x10b5, 0xc040, 0x060400, r->down.bus, lo, hi);
	}
	for (i = 0; i < n->ngpus && !ret; i++) {
		dev_path(n, n->gpus[i].root, &n->gpus[i].pci, pcipath, sizeof(pcipath));
		sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, pcipath);
		ret = write_pci_common(v, dir, n->gpus[i].vendor, n->gpus[i].device, 0x030200,
				       n->gpus[i].numa, &n->gpus[i].pcie) ?:
		      write_pci_binary(dir, n->gpus[i].vendor, n->gpus[i].device, 0x030200, 0, 0, 0)
			      ?: put(dir, "label", "%s", n->gpus[i].model);
	}
	for (i = 0; i < n->nnics && !ret; i++) {
		const struct sv_nic *c = &n->nics[i];

		dev_path(n, c->root, &c->pci, pcipath, sizeof(pcipath));
		sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, pcipath);
		ret = write_pci_common(v, dir, c->vendor, c->device, 0x020700, c->numa, &c->pcie)
			      ?: write_pci_binary(dir, c->vendor, c->device, 0x020700, 0, 0, 0);
		if (ret || c->vf_of < 0)
			continue;
		/* SR-IOV links both ways, as in sysfs */
		sv_pci_str(&n->nics[c->vf_of].pci, bdf, sizeof(bdf));
		sv_pathf(target, sizeof(target), "../%s", bdf);
		ret = link_at(dir, "physfn", target);
		if (ret)
			break;
		nvf = 0;
		for (int j = 0; j < i; j++)
			nvf += n->nics[j].vf_of == c->vf_of;
		dev_path(n, c->root, &n->nics[c->vf_of].pci, pcipath, sizeof(pcipath));
		sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, pcipath);
		sv_pci_str(&c->pci, bdf, sizeof(bdf));
		sv_pathf(target, sizeof(target), "../%s", bdf);
		sv_pathf(rp, sizeof(rp), "virtfn%d", nvf);
		ret = link_at(dir, rp, target);
	}
	return ret;
}

/* "../../.." up from a path of `depth` components below the view's root */
static void up_path(const char *path, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (const char *c = path; *c; c++)
		if (*c == '/' && n + 4 < len) {
			memcpy(buf + n, "../", 4);
			n += 3;
		}
	if (n + 4 < len)
		memcpy(buf + n, "../", 4);
}

/*
 * A bus number behind two bridges keeps its first bridge in class/pci_bus (link `cls`). A
 * function of that bus placed behind another bridge, as the real GPUs of a VM's flat bus 0
 * bound (cuda=) below the spec's different root ports, gets a link in the first bridge's
 * directory to where it is, so that /sys/class/pci_bus/<bus>/../../<bdf> (NCCL's way from a
 * bus id) still resolves to it. 0 or -errno.
 */
static int bus_alias(struct sv_view *v, const char *cls, const char *bus, const char *bdf,
		     const char *path, const char *parent)
{
	char first[PATH_MAX], dir[PATH_MAX], up[256], target[PATH_MAX], tail[32];
	ssize_t n = readlink(cls, first, sizeof(first) - 1);
	size_t len;

	if (n < 0)
		return -errno;
	first[n] = 0;
	/* "../../<bridge>/pci_bus/<bus>", as written below */
	sv_pathf(tail, sizeof(tail), "/pci_bus/%s", bus);
	len = strlen(first);
	if (strncmp(first, "../../", 6) || len < 6 + strlen(tail) ||
	    strcmp(first + len - strlen(tail), tail))
		return -EINVAL;
	first[len - strlen(tail)] = 0;
	if (!strcmp(first + 6, parent))
		return 0; /* the same bridge: the bus's link already leads here */
	sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, first + 6);
	up_path(first + 6, up, sizeof(up));
	sv_pathf(target, sizeof(target), "%s%s", up, path);
	return link_at(dir, bdf, target);
}

/*
 * The kernel's ways to a PCI function, for one device at `path` (below the view) on bus
 * `bus` behind the bridge at `parent` ("devices/pci0000:00" for a root port): its
 * subsystem link, bus/pci/devices/<bdf> and class/pci_bus/<dddd:bb> with the bus's
 * directory under the bridge. NCCL finds a device from its bus id through
 * /sys/class/pci_bus/<dddd:bb>/../../<bdf>, and takes a NIC as PCI only when its subsystem
 * resolves to bus/pci. A bus number behind two bridges (not possible on a real machine)
 * keeps its first bridge, with a link there to each of its functions behind another
 * (bus_alias).
 */
static int write_pci_links(struct sv_view *v, const char *path, const struct sv_pci *pci,
			   const char *parent)
{
	char dir[PATH_MAX], up[256], target[PATH_MAX], bdf[32], bus[16];
	struct stat st;
	int ret;

	sv_pci_str(pci, bdf, sizeof(bdf));
	sv_pathf(bus, sizeof(bus), "%04x:%02x", pci->domain, pci->bus);
	sv_pathf(dir, sizeof(dir), "%s/%s", v->dir, path);
	up_path(path, up, sizeof(up));
	sv_pathf(target, sizeof(target), "%sbus/pci", up);
	ret = link_at(dir, "subsystem", target);
	if (ret)
		return ret;
	sv_pathf(dir, sizeof(dir), "%s/bus/pci/devices", v->dir);
	sv_pathf(target, sizeof(target), "../../../%s", path);
	ret = link_at(dir, bdf, target);
	if (ret)
		return ret;
	sv_pathf(dir, sizeof(dir), "%s/class/pci_bus/%s", v->dir, bus);
	if (!lstat(dir, &st))
		return bus_alias(v, dir, bus, bdf, path, parent);
	sv_pathf(dir, sizeof(dir), "%s/%s/pci_bus/%s", v->dir, parent, bus);
	ret = mkdir_p(dir);
	if (ret)
		return ret;
	sv_pathf(dir, sizeof(dir), "%s/class/pci_bus", v->dir);
	sv_pathf(target, sizeof(target), "../../%s/pci_bus/%s", parent, bus);
	return link_at(dir, bus, target);
}

/*
 * write_pci_links for every root port, GPU and NIC of the node. A GPU bound to a real one
 * (cuda=) keeps its real bus id, which sv_bind_cuda checks is not a root port's own bus.
 */
static int write_pci_tree(struct sv_view *v)
{
	const struct sv_node *n = v->n;
	char path[256], parent[256];
	int i, ret = 0;

	for (i = 0; i < n->nroots && !ret; i++) {
		const struct sv_root *r = &n->roots[i];
		char up[32];

		root_path(r, path, sizeof(path));
		sv_pathf(parent, sizeof(parent), "devices/pci%04x:%02x", r->port.domain,
			 r->port.bus);
		ret = write_pci_links(v, path, &r->port, parent);
		if (ret || !r->has_switch)
			continue;
		sv_pci_str(&r->up, up, sizeof(up));
		sv_pathf(parent, sizeof(parent), "%s", path);
		sv_pathf(path, sizeof(path), "%s/%s", parent, up);
		ret = write_pci_links(v, path, &r->up, parent);
		if (ret)
			break;
		below_path(r, path, sizeof(path));
		sv_pathf(parent, sizeof(parent), "%s", path);
		*strrchr(parent, '/') = 0;
		ret = write_pci_links(v, path, &r->down, parent);
	}
	for (i = 0; i < n->ngpus && !ret; i++) {
		dev_path(n, n->gpus[i].root, &n->gpus[i].pci, path, sizeof(path));
		below_path(&n->roots[n->gpus[i].root], parent, sizeof(parent));
		ret = write_pci_links(v, path, &n->gpus[i].pci, parent);
	}
	for (i = 0; i < n->nnics && !ret; i++) {
		dev_path(n, n->nics[i].root, &n->nics[i].pci, path, sizeof(path));
		below_path(&n->roots[n->nics[i].root], parent, sizeof(parent));
		ret = write_pci_links(v, path, &n->nics[i].pci, parent);
	}
	return ret;
}

static int write_netdevs(struct sv_view *v)
{
	const struct sv_node *n = v->n;
	char dir[PATH_MAX], pcipath[256];
	static const uint8_t zmac[6];
	int i, k, ret;

	sv_pathf(dir, sizeof(dir), "%s/class/net/lo", v->dir);
	v->ifindex = 0;
	ret = write_netdev(v, "lo", zmac, 65536, 1, 0, NULL) ?: put(dir, "type", "772");
	if (ret)
		return ret;
	/* physical netdevs in this netns: the host's port netdevs, or ports moved here */
	for (i = 0; i < n->nnics && !ret; i++) {
		const struct sv_nic *c = &n->nics[i];

		for (k = 0; k < c->nports && !ret; k++) {
			const char *name = netdev_in(n, v->viewer, i, k);
			const struct sv_port *pt = &c->ports[k];

			if (!name)
				continue;
			dev_path(n, c->root, &c->pci, pcipath, sizeof(pcipath));
			ret = write_netdev(v, name, pt->mac, pt->mtu, pt->active,
					   pt->rate_gbps * 1000, pcipath);
		}
	}
	if (v->viewer < 0)
		return ret;
	/* the pod's virtual children */
	for (i = 0; i < n->pods[v->viewer].nifaces && !ret; i++) {
		const struct sv_iface *ifc = &n->pods[v->viewer].ifaces[i];
		const struct sv_port *pt = &n->nics[ifc->nic].ports[ifc->port];

		if (ifc->type == SV_IF_VF || ifc->type == SV_IF_HOST)
			continue;
		ret = write_netdev(v, ifc->ifname, ifc->mac, ifc->mtu, pt->active,
				   pt->rate_gbps * 1000, NULL);
	}
	return ret;
}

static int write_ifaddrs(struct sv_view *v)
{
	const struct sv_node *n = v->n;
	char path[PATH_MAX], a[80];
	FILE *fp;
	int i, k, j;

	sv_pathf(path, sizeof(path), "%s/softverbs/ifaddrs", v->dir);
	fp = fopen(path, "w");
	if (!fp) {
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	fprintf(fp, "# <ifname> <address>/<prefix>: the addresses of this network namespace\n");
	if (v->viewer < 0) {
		for (i = 0; i < n->nnics; i++)
			for (k = 0; k < n->nics[i].nports; k++)
				for (j = 0; j < n->nics[i].ports[k].naddrs; j++) {
					sv_addr_str(&n->nics[i].ports[k].addrs[j], 1, a, sizeof(a));
					fprintf(fp, "%s %s\n", n->nics[i].ports[k].netdev, a);
				}
	} else {
		const struct sv_pod *p = &n->pods[v->viewer];

		for (i = 0; i < p->nifaces; i++)
			for (j = 0; j < p->ifaces[i].naddrs; j++) {
				sv_addr_str(&p->ifaces[i].addrs[j], 1, a, sizeof(a));
				fprintf(fp, "%s %s\n", p->ifaces[i].ifname, a);
			}
	}
	return fclose(fp) ? -EIO : 0;
}

static int write_gpus(struct sv_view *v)
{
	const struct sv_node *n = v->n;
	char path[PATH_MAX], bdf[32];
	FILE *fp;
	int i;

	sv_pathf(path, sizeof(path), "%s/softverbs/gpus", v->dir);
	fp = fopen(path, "w");
	if (!fp) {
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	fprintf(fp,
		"# <name> <pci bus id> numa=<node> root=<root> [cuda=<n>]: the GPUs of this %s\n",
		v->pod < 0 ? "node" : "pod");
	for (i = 0; i < n->ngpus; i++) {
		const struct sv_gpu *g = &n->gpus[i];
		int mine = v->pod < 0 || n->pods[v->pod].hostnet;

		for (int j = 0; !mine && j < n->pods[v->pod].ngpus; j++)
			mine = n->pods[v->pod].gpus[j] == i;
		if (!mine)
			continue;
		sv_pci_str(&g->pci, bdf, sizeof(bdf));
		fprintf(fp, "%s %s numa=%d root=%s", g->name, bdf, g->numa, n->roots[g->root].name);
		if (g->cuda >= 0)
			fprintf(fp, " cuda=%d", g->cuda);
		fputc('\n', fp);
	}
	return fclose(fp) ? -EIO : 0;
}

static void view_dir(const char *outdir, const struct sv_node *n, int pod, char *buf, size_t len)
{
	sv_pathf(buf, len, "%s/%s/%s", outdir, n->name, pod < 0 ? "host" : n->pods[pod].name);
}

int sv_write_netns_files(const struct sv_fabric *f, const char *outdir, const struct sv_node *n,
			 int pod, const char *netns)
{
	char base[PATH_MAX], dir[PATH_MAX], rdv[PATH_MAX], bdf[32];
	int viewer = pod < 0 ? -1 : sv_pod_viewer(n, pod), i, k, first = 1;
	FILE *fp;

	view_dir(outdir, n, pod, base, sizeof(base));
	sv_pathf(dir, sizeof(dir), "%s/view/softverbs/config", base);
	sv_pathf(rdv, sizeof(rdv), "%s/rdv", outdir);
	fp = fopen(dir, "w");
	if (!fp) {
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	fprintf(fp, "node %s\npod %s\nnetns %s\nrdv %s\n", n->name,
		pod < 0 ? "host" : n->pods[pod].name, netns && *netns ? netns : "-", rdv);
	if (n->gdr)
		fprintf(fp, "gdr %s\n",
			(const char *const[]){ "off", "peermem", "dmabuf", "both" }[n->gdr]);
	for (i = 0; i < n->nnics; i++) {
		const struct sv_nic *c = &n->nics[i];

		if (!sv_nic_visible(n, viewer, i))
			continue;
		for (k = 0; k < c->nports; k++)
			fprintf(fp, "port %s %d mtu=%d latency_us=%g rail=%s\n", c->name,
				c->ports[k].num,
				c->ports[k].ib ? c->ports[k].mtu : ib_mtu(c->ports[k].mtu),
				sv_port_latency(f, &c->ports[k]),
				c->ports[k].rail >= 0 ? f->rails[c->ports[k].rail].name : "-");
	}
	if (fclose(fp)) {
		fprintf(stderr, "softverbs-fabric: cannot write %s\n", dir);
		return -EIO;
	}

	sv_pathf(dir, sizeof(dir), "%s/env", base);
	fp = fopen(dir, "w");
	if (!fp) {
		fprintf(stderr, "softverbs-fabric: cannot write %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	fprintf(fp, "# softverbs-fabric: environment of %s %s on node %s; source it.\n",
		pod < 0 ? "the host view" : "pod", pod < 0 ? "" : n->pods[pod].name, n->name);
	fprintf(fp, "export SOFTVERBS_VIEW='%s/view'\n", base);
	fprintf(fp, "export RAILNET_SYSFS_ROOT='%s/view'\n", base);
	fprintf(fp, "export RAILNET_TOPO_XML='%s/%s/topo.xml'\n", outdir, n->name);
	fprintf(fp, "export SOFTVERBS_NETNS='%s'\n", netns ? netns : "");
	fprintf(fp, "export SOFTVERBS_NODE='%s'\n", n->name);
	fprintf(fp, "export SOFTVERBS_POD='%s'\n", pod < 0 ? "host" : n->pods[pod].name);
	fprintf(fp, "export SOFTVERBS_GPUS='");
	for (i = 0; i < n->ngpus; i++) {
		/* a hostNetwork pod without gpus= stands for a host process: every GPU */
		int mine = pod < 0 || (n->pods[pod].hostnet && !n->pods[pod].ngpus);

		for (k = 0; !mine && k < n->pods[pod].ngpus; k++)
			mine = n->pods[pod].gpus[k] == i;
		if (!mine)
			continue;
		sv_pci_str(&n->gpus[i].pci, bdf, sizeof(bdf));
		fprintf(fp, "%s%s", first ? "" : ",", bdf);
		first = 0;
	}
	fprintf(fp, "'\n");
	return fclose(fp) ? -EIO : 0;
}

static int write_view(const struct sv_fabric *f, const char *outdir, const struct sv_node *n,
		      int pod)
{
	struct sv_view v = { .f = f, .n = n, .pod = pod };
	char base[PATH_MAX];
	int ret, i;

	v.viewer = pod < 0 ? -1 : sv_pod_viewer(n, pod);
	view_dir(outdir, n, pod, base, sizeof(base));
	if (sv_pathf(v.dir, sizeof(v.dir), "%s/view", base))
		return -ENAMETOOLONG;
	ret = mkdir_p(v.dir) ?: write_devices(&v) ?: write_pci_tree(&v);
	for (i = 0; i < n->nnics && !ret; i++)
		if (sv_nic_visible(n, v.viewer, i))
			ret = write_ibdev(&v, i);
	if (ret)
		return ret;
	sv_pathf(base, sizeof(base), "%s/class/infiniband", v.dir);
	ret = mkdir_p(base) ?: write_netdevs(&v) ?:
	      put(v.dir, "module/ib_core/parameters/netns_mode", "%s", n->exclusive ? "N" : "Y");
	/* GDR mode with peer memory: the module a node with nvidia-peermem loaded shows */
	if (!ret && (n->gdr & 1))
		ret = put(v.dir, "module/nvidia_peermem/version", "softverbs")
			      ?: put(v.dir, "module/nvidia_peermem/initstate", "live");
	if (ret)
		return ret;
	sv_pathf(base, sizeof(base), "%s/softverbs", v.dir);
	ret = mkdir_p(base) ?: write_ifaddrs(&v) ?: write_gpus(&v);
	return ret ?: sv_write_netns_files(f, outdir, n, pod, NULL);
}

/* Makes OUTDIR, or empties one that an earlier build made; refuses while namespaces are up. */
static int prepare_outdir(const char *outdir, char *abs, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	int ret = mkdir_p(outdir);

	if (ret)
		return ret;
	if (!realpath(outdir, path) || strlen(path) >= len) {
		fprintf(stderr, "softverbs-fabric: %s: %s\n", outdir, strerror(errno));
		return -errno;
	}
	strcpy(abs, path);
	sv_pathf(path, sizeof(path), "%s/netns.state", abs);
	if (!stat(path, &st)) {
		fprintf(stderr,
			"softverbs-fabric: %s has network namespaces up; run "
			"'softverbs-fabric down %s' first\n",
			abs, abs);
		return -EBUSY;
	}
	sv_pathf(path, sizeof(path), "%s/" SV_MARKER, abs);
	if (!stat(path, &st)) {
		DIR *d = opendir(abs);
		struct dirent *e;

		if (!d)
			return -errno;
		while ((e = readdir(d))) {
			char sub[PATH_MAX];

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			sv_pathf(sub, sizeof(sub), "%s/%s", abs, e->d_name);
			ret = rm_rf(sub);
			if (ret)
				break;
		}
		closedir(d);
		if (ret)
			return ret;
	} else {
		DIR *d = opendir(abs);
		struct dirent *e;
		int nonempty = 0;

		if (!d)
			return -errno;
		while ((e = readdir(d)))
			nonempty |= strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
		closedir(d);
		if (nonempty) {
			fprintf(stderr,
				"softverbs-fabric: %s is not empty and was not made by "
				"softverbs-fabric; give a new or empty directory\n",
				abs);
			return -ENOTEMPTY;
		}
	}
	return 0;
}

int sv_build(const struct sv_fabric *f, const char *outdir)
{
	char abs[PATH_MAX - 256], path[PATH_MAX];
	int i, j, ret;

	ret = prepare_outdir(outdir, abs, sizeof(abs));
	if (ret)
		return ret;
	sv_pathf(path, sizeof(path), "%s/rdv", abs);
	ret = mkdir_p(path) ?: put(abs, SV_MARKER, "%s", f->file);
	for (i = 0; i < f->nnodes && !ret; i++) {
		const struct sv_node *n = &f->nodes[i];

		sv_pathf(path, sizeof(path), "%s/%s", abs, n->name);
		ret = mkdir_p(path);
		if (ret)
			break;
		sv_pathf(path, sizeof(path), "%s/%s/topo.xml", abs, n->name);
		ret = sv_topo_write(f, n, path) ?: write_view(f, abs, n, -1);
		for (j = 0; j < n->npods && !ret; j++)
			ret = write_view(f, abs, n, j);
	}
	return ret;
}
