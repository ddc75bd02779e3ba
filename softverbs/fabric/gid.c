// SPDX-License-Identifier: Apache-2.0
/*
 * GID tables and who may see what. A RoCE port's table follows the kernel's order: the
 * link-local default GID of the port's own netdev (fe80::/64 + EUI-64 of its MAC) as a
 * RoCE v1/v2 pair, then the host's addresses on that netdev, then every pod child interface
 * on the port in spec (arrival) order, each address a v1/v2 pair. An InfiniBand port has
 * GID 0 = subnet prefix + port GUID. Visibility is decided per network namespace: the
 * owner of the netdev sees an entry, everybody sees the default GIDs (unless the pod hides
 * link-local ones), a leaky pod sees everything. No file system access here.
 */
#include <string.h>
#include <sys/socket.h>

#include "fabric.h"

static void put_addr(struct sv_gid *g, const struct sv_addr *a)
{
	memset(g->raw, 0, 16);
	if (a->family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], a->bytes, 4);
	} else {
		memcpy(g->raw, a->bytes, 16);
	}
}

static int add_pair(struct sv_gid *tbl, int used, const uint8_t raw[16], int owner, int is_default,
		    const char *ndev)
{
	int v;

	for (v = 0; v < 2; v++) {
		struct sv_gid *g = &tbl[used + v];

		if (used + v >= SV_GID_TBL_MAX)
			return used + v;
		memcpy(g->raw, raw, 16);
		g->v2 = v;
		g->owner = owner;
		g->is_default = is_default;
		snprintf(g->ndev, sizeof(g->ndev), "%s", ndev);
	}
	return used + 2;
}

int sv_gid_table(const struct sv_fabric *f, const struct sv_node *n, int nic, int port,
		 struct sv_gid *tbl)
{
	const struct sv_nic *c = &n->nics[nic];
	const struct sv_port *pt = &c->ports[port];
	struct sv_gid tmp;
	const char *ndev = pt->netdev;
	int owner = pt->moved_to, used = 0, i, j, k;
	uint64_t pguid = c->guid;

	(void)f;
	memset(tbl, 0, SV_GID_TBL_MAX * sizeof(*tbl));
	for (i = 0; i < SV_GID_TBL_MAX; i++)
		tbl[i].owner = -2;

	if (pt->ib) {
		/* port GUIDs of a multi-port HCA follow the node GUID */
		pguid += (uint64_t)(pt->num - 1);
		memcpy(tbl[0].raw, pt->subnet_prefix, 8);
		for (i = 0; i < 8; i++)
			tbl[0].raw[8 + i] = (uint8_t)(pguid >> (56 - 8 * i));
		tbl[0].owner = -1;
		tbl[0].is_default = 1;
		return 1;
	}

	/* the netdev moved into a pod keeps the pod's name for it */
	if (owner >= 0) {
		const struct sv_pod *p = &n->pods[owner];

		for (k = 0; k < p->nifaces; k++)
			if (p->ifaces[k].nic == nic && p->ifaces[k].port == port)
				ndev = p->ifaces[k].ifname;
	}
	memset(tmp.raw, 0, 16);
	tmp.raw[0] = 0xfe;
	tmp.raw[1] = 0x80;
	tmp.raw[8] = pt->mac[0] ^ 0x02;
	tmp.raw[9] = pt->mac[1];
	tmp.raw[10] = pt->mac[2];
	tmp.raw[11] = 0xff;
	tmp.raw[12] = 0xfe;
	tmp.raw[13] = pt->mac[3];
	tmp.raw[14] = pt->mac[4];
	tmp.raw[15] = pt->mac[5];
	used = add_pair(tbl, used, tmp.raw, owner, 1, ndev);

	for (i = 0; i < pt->naddrs; i++) {
		put_addr(&tmp, &pt->addrs[i]);
		used = add_pair(tbl, used, tmp.raw, -1, 0, pt->netdev);
	}
	for (j = 0; j < n->npods; j++) {
		const struct sv_pod *p = &n->pods[j];

		for (k = 0; k < p->nifaces; k++) {
			const struct sv_iface *ifc = &p->ifaces[k];

			if (ifc->nic != nic || ifc->port != port)
				continue;
			for (i = 0; i < ifc->naddrs; i++) {
				put_addr(&tmp, &ifc->addrs[i]);
				used = add_pair(tbl, used, tmp.raw, j, 0, ifc->ifname);
			}
		}
	}
	return used;
}

int sv_pod_viewer(const struct sv_node *n, int pod)
{
	return n->pods[pod].hostnet ? -1 : pod;
}

int sv_gid_visible(const struct sv_node *n, int viewer, const struct sv_gid *g)
{
	if (g->owner == -2)
		return 0;
	if (viewer >= 0 && n->pods[viewer].leaky)
		return 1;
	if (g->is_default)
		return viewer < 0 || !n->pods[viewer].linklocal_hidden;
	return g->owner == viewer;
}

static int moved_into(const struct sv_nic *c, int viewer)
{
	int k;

	for (k = 0; k < c->nports; k++)
		if (c->ports[k].moved_to >= 0 && c->ports[k].moved_to == viewer)
			return 1;
	return 0;
}

static int moved_anywhere(const struct sv_nic *c)
{
	int k;

	for (k = 0; k < c->nports; k++)
		if (c->ports[k].moved_to >= 0)
			return 1;
	return 0;
}

int sv_nic_visible(const struct sv_node *n, int viewer, int nic)
{
	const struct sv_nic *c = &n->nics[nic];
	const struct sv_pod *p;
	int i;

	if (n->exclusive) {
		/* exclusive: a device lives in exactly one netns; moved ones follow their netdev */
		if (viewer < 0)
			return !moved_anywhere(c);
		return moved_into(c, viewer);
	}
	if (viewer < 0)
		return 1;
	p = &n->pods[viewer];
	for (i = 0; i < p->nnics; i++)
		if (p->nics[i] == nic)
			return 1;
	return 0;
}
