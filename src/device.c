// SPDX-License-Identifier: Apache-2.0
/*
 * device.c owns discovery (include/railnet/device.h): which RDMA ports this process can use,
 * their link, speed, MTU, pkey, GUIDs, PCI path, root and NUMA node, the GID chosen for each,
 * and the reason and fix for every device or port left out. It goes through rn_verbs() for
 * every verbs call and reads sysfs only below cfg->sysfs_root. It decides nothing about how
 * ports are grouped into NCCL devices (vdev.c) and knows nothing of NCCL's ABI.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "railnet/device.h"
#include "railnet/hca.h"
#include "railnet/log.h"
#include "railnet/pci.h"
#include "railnet/sysfs.h"
#include "railnet/verbs.h"

const char *rn_drop_kind_str(int kind)
{
	switch (kind) {
	case RN_DROP_OPEN:
		return "cannot-open";
	case RN_DROP_QUERY:
		return "query-failed";
	case RN_DROP_FILTERED:
		return "filtered";
	case RN_DROP_PORT_DOWN:
		return "port-down";
	case RN_DROP_LINK_LAYER:
		return "link-layer";
	case RN_DROP_NO_GID:
		return "no-usable-gid";
	case RN_DROP_BAD_GID_INDEX:
		return "bad-gid-index";
	case RN_DROP_NO_PORT:
		return "no-usable-port";
	default:
		return "?";
	}
}

int rn_port_speed_mbps(unsigned int active_speed, unsigned int active_width)
{
	/* per-lane Mb/s by the lowest set bit: SDR DDR QDR FDR10 FDR EDR HDR NDR XDR */
	static const int lane[] = { 2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000 };
	/* lanes by the lowest set bit of active_width: 1x 4x 8x 12x 2x */
	static const int lanes[] = { 1, 4, 8, 12, 2 };
	int s, w;

	if (!active_speed || !active_width)
		return 0;
	s = __builtin_ctz(active_speed);
	w = __builtin_ctz(active_width);
	if (s >= (int)(sizeof(lane) / sizeof(lane[0])) ||
	    w >= (int)(sizeof(lanes) / sizeof(lanes[0])))
		return 0;
	return lane[s] * lanes[w];
}

/* ---- drops ------------------------------------------------------------------------------- */

/* Kinds worth a WARN: the device failed, or the user's NCCL_IB_GID_INDEX is wrong. */
static bool rn_drop_warns(int kind)
{
	return kind == RN_DROP_OPEN || kind == RN_DROP_QUERY || kind == RN_DROP_BAD_GID_INDEX;
}

static int rn_drop_add(struct rn_discovery *d, const char *name, int port, int kind,
		       const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int rn_drop_add(struct rn_discovery *d, const char *name, int port, int kind,
		       const char *fix, const char *fmt, ...)
{
	struct rn_drop *nd, *e;
	va_list ap;

	nd = realloc(d->drops, (size_t)(d->ndrops + 1) * sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	d->drops = nd;
	e = &nd[d->ndrops++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->port = port;
	e->kind = kind;
	snprintf(e->fix, sizeof(e->fix), "%s", fix ? fix : "");
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	if (!rn_drop_warns(kind))
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s%s%.0d: not used: %s%s%s", name,
			port ? " port " : "", port, e->why, e->fix[0] ? "; fix: " : "", e->fix);
	return 0;
}

bool rn_drop_same_cause(const struct rn_drop *a, const struct rn_drop *b)
{
	return a->kind == b->kind && !strcmp(a->fix, b->fix);
}

bool rn_drop_first_of_cause(const struct rn_discovery *d, int i)
{
	for (int j = 0; j < i; j++)
		if (rn_drop_same_cause(&d->drops[j], &d->drops[i]))
			return false;
	return true;
}

/*
 * The WARNs, after discovery: one per cause (kind and fix), the first port's reason in full
 * and the others named, so that a wrong NCCL_IB_GID_INDEX on 16 rails is one line, not 16.
 */
static void rn_drops_warn(const struct rn_discovery *d)
{
	for (int i = 0; i < d->ndrops; i++) {
		const struct rn_drop *e = &d->drops[i];
		char more[512] = "";
		int n = 0;

		if (!rn_drop_warns(e->kind) || !rn_drop_first_of_cause(d, i))
			continue;
		for (int j = i + 1; j < d->ndrops; j++) {
			const struct rn_drop *o = &d->drops[j];
			size_t len = strlen(more);

			if (!rn_drop_same_cause(o, e))
				continue;
			n++;
			if (len + strlen(o->name) + 16 < sizeof(more))
				snprintf(more + len, sizeof(more) - len, "%s%s%s%.0d",
					 n > 1 ? ", " : "", o->name, o->port ? " port " : "",
					 o->port);
		}
		if (n)
			RN_WARN("%s%s%.0d: not used: %s; likewise %d more: %s%s%s", e->name,
				e->port ? " port " : "", e->port, e->why, n, more,
				e->fix[0] ? "; fix: " : "", e->fix);
		else
			RN_WARN("%s%s%.0d: not used: %s%s%s", e->name, e->port ? " port " : "",
				e->port, e->why, e->fix[0] ? "; fix: " : "", e->fix);
	}
}

/* ---- sysfs ------------------------------------------------------------------------------- */

char rn_netns_mode(const char *sysfs_root)
{
	char path[PATH_MAX], buf[16];

	if (rn_sysfs_path(path, sizeof(path), sysfs_root, "module/ib_core/parameters/netns_mode") ||
	    rn_sysfs_read(path, buf, sizeof(buf)))
		return '?';
	if (buf[0] == 'Y' || buf[0] == '1')
		return 'Y';
	if (buf[0] == 'N' || buf[0] == '0')
		return 'N';
	return '?';
}

static char *rn_dev_pci_path(const char *sysfs_root, const char *name)
{
	char path[PATH_MAX];

	if (rn_sysfs_path(path, sizeof(path), sysfs_root, "class/infiniband/%s/device", name))
		return NULL;
	return realpath(path, NULL);
}

static int rn_pci_numa(const char *pci_path)
{
	char path[PATH_MAX], buf[32], *end;
	long v;

	if (!pci_path || rn_sysfs_path(path, sizeof(path), pci_path, "numa_node") ||
	    rn_sysfs_read(path, buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || *end || v < -1 || v > 4095)
		return -1;
	return (int)v;
}

/* ---- one port ---------------------------------------------------------------------------- */

static const char *rn_fix_no_gid(const struct rn_config *cfg)
{
	if (cfg->ib_addr_range[0])
		return "give this pod an interface on the port's rail (IPvlan, macvlan or an "
		       "SR-IOV VF, e.g. a Multus network whose master is the port's netdev) with "
		       "an address inside NCCL_IB_ADDR_RANGE, or widen/unset NCCL_IB_ADDR_RANGE";
	return "give this pod an interface on the port's rail (IPvlan, macvlan or an SR-IOV VF, "
	       "e.g. a Multus network whose master is the port's netdev) with an address of "
	       "the wanted family (NCCL_IB_ADDR_FAMILY)";
}

struct rn_disc_ctx {
	const struct rn_config *cfg;
	const struct rn_verbs_ops *ops;
	struct rn_hca_filter hca;
	struct rn_gid_policy pol;
	const struct rn_ifaddr *ifa;
	int nifa;
	struct rn_discovery *d;
	int cap;
};

static int rn_port_push(struct rn_disc_ctx *c, const struct rn_port *p)
{
	struct rn_discovery *d = c->d;

	if (d->nports == c->cap) {
		int ncap = c->cap ? c->cap * 2 : 16;
		struct rn_port *np = realloc(d->ports, (size_t)ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		d->ports = np;
		c->cap = ncap;
	}
	d->ports[d->nports++] = *p;
	return 0;
}

/* Returns 1 kept, 0 dropped (recorded), -ENOMEM. */
static int rn_probe_port(struct rn_disc_ctx *c, struct ibv_context *vctx, const char *name,
			 const struct ibv_device_attr *attr, int portnum)
{
	const struct rn_hca_entry *hit = NULL;
	struct rn_gid_entry *table = NULL;
	struct ibv_port_attr pa;
	char why[RN_GID_WHY_MAX];
	struct rn_port p;
	uint64_t mbps;
	int rc, ntab = 0;
	bool ib;

	if (!rn_hca_keep(&c->hca, name, portnum, &hit))
		return rn_drop_add(c->d, name, portnum, RN_DROP_FILTERED,
				   "change NCCL_IB_HCA if this port should be used",
				   "NCCL_IB_HCA=%s leaves it out", c->cfg->ib_hca);
	rc = c->ops->query_port(vctx, (uint8_t)portnum, &pa);
	if (rc)
		return rn_drop_add(c->d, name, portnum, RN_DROP_QUERY, NULL,
				   "query_port failed (%s)", strerror(-rc));
	if (pa.state != IBV_PORT_ACTIVE)
		return rn_drop_add(c->d, name, portnum, RN_DROP_PORT_DOWN,
				   "check the link (cable, switch port, `ibv_devinfo`)",
				   "port state %d is not ACTIVE", (int)pa.state);
	if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND && pa.link_layer != IBV_LINK_LAYER_ETHERNET)
		return rn_drop_add(c->d, name, portnum, RN_DROP_LINK_LAYER, NULL,
				   "link layer %d is neither InfiniBand nor Ethernet",
				   (int)pa.link_layer);
	ib = pa.link_layer == IBV_LINK_LAYER_INFINIBAND;
	memset(&p, 0, sizeof(p));
	rc = rn_gid_table_read(c->ops, vctx, c->cfg->sysfs_root, name, portnum, pa.gid_tbl_len, ib,
			       &table, &ntab);
	if (rc)
		return rc;
	if (ib)
		rc = rn_gid_select_ib(table, ntab, name, portnum, &p.gid, why, sizeof(why));
	else
		rc = rn_gid_select_roce(table, ntab, c->ifa, c->nifa, &c->pol, name, portnum,
					&p.gid, why, sizeof(why));
	free(table);
	if (rc == -EINVAL)
		return rn_drop_add(c->d, name, portnum, RN_DROP_BAD_GID_INDEX,
				   "unset NCCL_IB_GID_INDEX: railnet chooses the right GID per pod",
				   "%s", why);
	if (rc)
		return rn_drop_add(c->d, name, portnum, RN_DROP_NO_GID,
				   ib ? "check the subnet manager (GID 0 must be valid)"
				      : rn_fix_no_gid(c->cfg),
				   "%s", why);

	snprintf(p.name, sizeof(p.name), "%s", name);
	p.port = portnum;
	p.link_layer = pa.link_layer;
	p.state = pa.state;
	if ((c->ops->caps & RN_VCAP_QUERY_PORT_SPEED) &&
	    c->ops->query_port_speed(vctx, (uint8_t)portnum, &mbps) == 0 && mbps > 0 &&
	    mbps <= INT_MAX)
		p.speed = (int)mbps;
	else
		p.speed = rn_port_speed_mbps(pa.active_speed, pa.active_width);
	p.mtu = pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096 ? 128 << pa.active_mtu
									      : 0;
	if (c->ops->query_pkey(vctx, (uint8_t)portnum, c->cfg->ib_pkey, &p.pkey))
		p.pkey = 0;
	p.lid = pa.lid;
	p.node_guid = be64toh(attr->node_guid);
	p.sys_image_guid = be64toh(attr->sys_image_guid);
	p.max_qp = attr->max_qp;
	p.pci_path = rn_dev_pci_path(c->cfg->sysfs_root, name);
	if (p.pci_path)
		rn_pci_root(p.pci_path, p.pci_root, sizeof(p.pci_root));
	p.numa_node = rn_pci_numa(p.pci_path);
	p.gid_tbl_len = pa.gid_tbl_len;
	/* rn_rail_derive fills rail_id from the subnet where NCCL_IB_HCA gives none */
	p.rail_id = hit && hit->rail >= 0 ? hit->rail : RN_RAIL_FROM_SUBNET;
	p.plane_id = hit ? hit->plane : -1;
	rc = rn_port_push(c, &p);
	if (rc) {
		free(p.pci_path);
		return rc;
	}
	{
		char g[RN_GID_STR_MAX];

		rn_gid_str(p.gid.raw, g, sizeof(g));
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s port %d: %s, %d Mbps, GID %d %s%s%s: %s",
			name, portnum, ib ? "InfiniBand" : "RoCE", p.speed, p.gid.index, g,
			p.gid.ifname[0] ? " on " : "", p.gid.ifname, p.gid.why);
	}
	return 1;
}

/* Returns the number of kept ports, or -ENOMEM. */
static int rn_probe_device(struct rn_disc_ctx *c, struct ibv_device *ibdev)
{
	const char *name = c->ops->get_device_name(ibdev);
	struct ibv_device_attr attr;
	struct ibv_context *vctx;
	int kept = 0, rc;

	if (!name)
		name = "?";
	rc = c->ops->open_device(ibdev, &vctx);
	if (rc)
		return rn_drop_add(c->d, name, 0, RN_DROP_OPEN,
				   "the pod must be given the device (RDMA device plugin resource) "
				   "so that its /dev/infiniband/uverbs* node is accessible",
				   "cannot open (%s)", strerror(-rc));
	rc = c->ops->query_device(vctx, &attr);
	if (rc) {
		rc = rn_drop_add(c->d, name, 0, RN_DROP_QUERY, NULL, "query_device failed (%s)",
				 strerror(-rc));
		goto out_close;
	}
	for (int p = 1; p <= attr.phys_port_cnt; p++) {
		rc = rn_probe_port(c, vctx, name, &attr, p);
		if (rc < 0)
			goto out_close;
		kept += rc;
	}
	rc = kept;
	if (!kept && attr.phys_port_cnt == 0)
		rc = rn_drop_add(c->d, name, 0, RN_DROP_NO_PORT, NULL, "the device has no port");
out_close:
	c->ops->close_device(vctx);
	return rc;
}

/* NCCL's order: PCI path, devices without one last; then name, then port. */
/* ---- rails ------------------------------------------------------------------------------- */

/* 31-bit FNV-1a of a subnet (never 0: 0 means "unknown") */
static uint32_t rn_rail_hash(int family, int prefix, const uint8_t *net, int len)
{
	uint32_t h = 2166136261u;
	uint8_t head[2] = { (uint8_t)family, (uint8_t)prefix };

	for (int i = 0; i < 2; i++)
		h = (h ^ head[i]) * 16777619u;
	for (int i = 0; i < len; i++)
		h = (h ^ net[i]) * 16777619u;
	h &= 0x7fffffffu;
	return h ? h : 1;
}

/*
 * The subnet of one port's GID: network bytes in net (len bytes), its prefix and family.
 * false when it has none that identifies a rail.
 */
static bool rn_rail_subnet(const struct rn_port *p, uint8_t net[16], int *len, int *prefix,
			   int *family, const char **why)
{
	const uint8_t *a = p->gid.raw;

	if (p->link_layer == IBV_LINK_LAYER_INFINIBAND) {
		static const uint8_t dflt[8] = { 0xfe, 0x80 };

		if (!memcmp(a, dflt, 8)) {
			*why = "InfiniBand GID prefix is the default fe80::/64 (no rail identity; "
			       "set NCCL_IB_HCA=dev:port:rail)";
			return false;
		}
		memset(net, 0, 16);
		memcpy(net, a, 8);
		*len = 16;
		*prefix = 64;
		*family = AF_INET6;
		return true;
	}
	if (p->gid.prefix < 1) {
		*why = "the netmask of the GID's address is unknown";
		return false;
	}
	/* a RoCE GID stands for an IPv4 address when it is ::ffff:a.b.c.d */
	*family = rn_gid_family(a, &a);
	*len = *family == AF_INET ? 4 : 16;
	*prefix = p->gid.prefix > *len * 8 ? *len * 8 : p->gid.prefix;
	if (*prefix >= *len * 8 - 1) {
		/* per-link /31 (/127) or host routes on L3 fabrics: one subnet per NIC, not a rail */
		*why = "the GID's address is on a point-to-point (/31, /32, /127, /128) subnet, "
		       "which "
		       "names one link, not a rail (set NCCL_IB_HCA=dev:port:rail)";
		return false;
	}
	memset(net, 0, 16);
	for (int bit = 0; bit < *prefix; bit++)
		net[bit / 8] |= (uint8_t)(a[bit / 8] & (0x80 >> (bit % 8)));
	return true;
}

/* The subnet number's low 15 bits: the network bits right-aligned. */
static int rn_rail_number(const uint8_t *net, int prefix)
{
	int v = 0;

	for (int bit = prefix - 15 < 0 ? 0 : prefix - 15; bit < prefix; bit++)
		v = v << 1 | ((net[bit / 8] >> (7 - bit % 8)) & 1);
	return v & 0x7fff;
}

void rn_rail_derive(struct rn_port *ports, int n)
{
	for (int i = 0; i < n; i++) {
		struct rn_port *p = &ports[i];
		uint8_t net[16];
		char a[48];
		int len, prefix, family;

		p->rail_key = 0;
		p->rail_net[0] = '\0';
		if (p->rail_id != RN_RAIL_FROM_SUBNET) {
			p->rail_key = p->rail_id >= 0 ? 0x80000000u | (uint32_t)p->rail_id : 0;
			snprintf(p->rail_net, sizeof(p->rail_net), "NCCL_IB_HCA");
			p->rail_why = "given by NCCL_IB_HCA";
			continue;
		}
		p->rail_id = -1;
		if (!rn_rail_subnet(p, net, &len, &prefix, &family, &p->rail_why))
			continue;
		p->rail_key = rn_rail_hash(family, prefix, net, len);
		p->rail_id = rn_rail_number(net, prefix);
		inet_ntop(family, net, a, sizeof(a));
		snprintf(p->rail_net, sizeof(p->rail_net), "%s/%d", a, prefix);
		p->rail_why = "the subnet of the port's GID";
	}
	/*
	 * Several ports, all in one subnet: that subnet is the whole fabric (one rail network
	 * for every NIC, routed), not a rail; several subnets each holding some of the ports
	 * (two NICs per rail) are rails.
	 */
	{
		uint32_t key = 0;
		int derived = 0;
		bool one = true;

		for (int i = 0; i < n; i++) {
			if (ports[i].rail_key & 0x80000000u)
				continue;
			if (ports[i].rail_key == 0 || (key && ports[i].rail_key != key))
				one = false;
			key = ports[i].rail_key ? ports[i].rail_key : key;
			derived++;
		}
		for (int i = 0; one && derived > 1 && i < n; i++) {
			if (ports[i].rail_key & 0x80000000u)
				continue;
			ports[i].rail_id = -1;
			ports[i].rail_key = 0;
			ports[i].rail_why = "every port of this pod is in the same subnet, so the "
					    "subnet does not tell rails apart (set "
					    "NCCL_IB_HCA=dev:port:rail)";
		}
	}
}

static int rn_port_cmp(const void *a, const void *b)
{
	const struct rn_port *x = a, *y = b;
	int r;

	if (!x->pci_path != !y->pci_path)
		return x->pci_path ? -1 : 1;
	if (x->pci_path && (r = strcmp(x->pci_path, y->pci_path)))
		return r;
	if ((r = strcmp(x->name, y->name)))
		return r;
	return x->port - y->port;
}

int rn_discover(const struct rn_config *cfg, const struct rn_ifaddr *ifa, int nifa,
		struct rn_discovery **out)
{
	struct rn_disc_ctx c = { .cfg = cfg, .ops = rn_verbs() };
	struct rn_ifaddr *own = NULL;
	struct ibv_device **list = NULL;
	char why[256];
	int num = 0, rc;

	if (rn_hca_parse(cfg->ib_hca, &c.hca, why, sizeof(why))) {
		RN_WARN("NCCL_IB_HCA=%s: %s", cfg->ib_hca, why);
		return -EINVAL;
	}
	if (rn_addr_range_parse(cfg->ib_addr_range, &c.pol.range, why, sizeof(why))) {
		RN_WARN("NCCL_IB_ADDR_RANGE=%s: %s", cfg->ib_addr_range, why);
		return -EINVAL;
	}
	c.pol.family = cfg->ib_addr_family == RN_AF_INET6 ? AF_INET6 : AF_INET;
	c.pol.roce_version = cfg->ib_roce_version;
	c.pol.gid_index = cfg->ib_gid_index;
	if (!ifa) {
		rc = rn_ifaddrs_get(&own, &nifa);
		if (rc) {
			RN_WARN("getifaddrs failed (%s): cannot tell this pod's GIDs",
				strerror(-rc));
			return rc;
		}
		ifa = own;
	}
	c.ifa = ifa;
	c.nifa = nifa;
	c.d = calloc(1, sizeof(*c.d));
	if (!c.d) {
		rc = -ENOMEM;
		goto err_free_ifa;
	}
	c.d->netns_mode = rn_netns_mode(cfg->sysfs_root);
	rc = c.ops->get_device_list(&list, &num);
	if (rc) {
		c.d->list_failed = true;
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s cannot list RDMA devices (%s)",
			c.ops->libpath, strerror(-rc));
		num = 0;
	}
	c.d->nlisted = num;
	for (int i = 0; i < num; i++) {
		rc = rn_probe_device(&c, list[i]);
		if (rc < 0)
			goto err_free_list;
	}
	c.ops->free_device_list(list);
	rn_drops_warn(c.d);
	if (c.d->nports > 1)
		qsort(c.d->ports, (size_t)c.d->nports, sizeof(*c.d->ports), rn_port_cmp);
	rn_rail_derive(c.d->ports, c.d->nports);
	for (int i = 0; i < c.d->nports; i++) {
		struct rn_port *p = &c.d->ports[i];

		p->nccl_port = 1;
		for (int j = 0; j < i; j++)
			if (rn_pci_same_device(c.d->ports[j].pci_path, p->pci_path))
				p->nccl_port++;
	}
	free(own);
	*out = c.d;
	return 0;

err_free_list:
	c.ops->free_device_list(list);
	rn_discovery_destroy(c.d);
err_free_ifa:
	free(own);
	return rc;
}

void rn_discovery_destroy(struct rn_discovery *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nports; i++)
		free(d->ports[i].pci_path);
	free(d->ports);
	free(d->drops);
	free(d);
}
