// SPDX-License-Identifier: Apache-2.0
/*
 * vdev.c owns the rules by which ports become the devices NCCL sees (include/railnet/vdev.h):
 * PCI-path roots and sibling functions, the validation of a merge, railnet's own grouping for
 * RAILNET_MERGE, the properties of a merged device, and the numbering of the devices in both
 * views. It must not log or touch the verbs library; net.c logs the decisions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/pci.h"
#include "railnet/vdev.h"

static const char *rn_ll_name(int ll)
{
	return ll == 1 ? "InfiniBand" : ll == 2 ? "Ethernet (RoCE)" : "unknown";
}

int rn_vdev_check(const struct rn_port *ports, const int *idx, int n, int max, char *why,
		  size_t why_len)
{
	const struct rn_port *first;

	if (n < 1 || n > max) {
		snprintf(why, why_len, "%d ports: a device holds 1..%d", n, max);
		return -EINVAL;
	}
	first = &ports[idx[0]];
	for (int i = 0; i < n; i++) {
		const struct rn_port *p = &ports[idx[i]];

		for (int j = 0; j < i; j++) {
			if (idx[j] == idx[i]) {
				snprintf(why, why_len, "%s port %d is listed twice", p->name,
					 p->port);
				return -EINVAL;
			}
		}
		if (p->link_layer != first->link_layer) {
			snprintf(why, why_len,
				 "mixed link layers: %s port %d is %s, %s port %d is %s",
				 first->name, first->port, rn_ll_name(first->link_layer), p->name,
				 p->port, rn_ll_name(p->link_layer));
			return -EINVAL;
		}
		if (!p->pci_root[0] || strcmp(p->pci_root, first->pci_root)) {
			snprintf(why, why_len,
				 "different PCIe roots: %s is under %s, %s is under %s (merging "
				 "never "
				 "crosses roots)",
				 first->name,
				 first->pci_root[0] ? first->pci_root : "an unknown root", p->name,
				 p->pci_root[0] ? p->pci_root : "an unknown root");
			return -EINVAL;
		}
	}
	return 0;
}

int rn_vdev_groups(const struct rn_port *ports, int n, int *group)
{
	int ngroups = 0;

	for (int i = 0; i < n; i++) {
		int members[RN_MAX_VDEV_CHILDREN];
		int g = -1, count = 0;

		for (int j = 0; j < i && g < 0; j++) {
			char why[8];

			if (!rn_pci_same_device(ports[j].pci_path, ports[i].pci_path) &&
			    !(ports[j].pci_path && ports[i].pci_path &&
			      !strcmp(ports[j].pci_path, ports[i].pci_path)))
				continue;
			count = 0;
			for (int k = 0; k < i && count < RN_MAX_VDEV_CHILDREN; k++)
				if (group[k] == group[j])
					members[count++] = k;
			if (count == RN_MAX_VDEV_CHILDREN)
				continue; /* full: 8 members already */
			members[count++] = i;
			if (!rn_vdev_check(ports, members, count, RN_MAX_VDEV_CHILDREN, why,
					   sizeof(why)))
				g = group[j];
		}
		group[i] = g >= 0 ? g : ngroups++;
	}
	return ngroups;
}

/* The members' common PCI path: equal paths, sibling functions (digit '0'), or the parent. */
static char *rn_common_path(const struct rn_port *ports, const int *idx, int n)
{
	const char *a = ports[idx[0]].pci_path;
	size_t common;
	char *r;

	if (!a)
		return NULL;
	common = strlen(a);
	for (int i = 1; i < n; i++) {
		const char *b = ports[idx[i]].pci_path;
		size_t k = 0;

		if (!b)
			return NULL;
		while (k < common && a[k] && a[k] == b[k])
			k++;
		if (k < common)
			common = k;
	}
	r = strdup(a);
	if (!r || common == strlen(a))
		return r;
	if (common + 1 == strlen(a) && a[common - 1] == '.') {
		r[common] = '0'; /* sibling functions: NCCL's own rewrite */
		return r;
	}
	while (common > 0 && r[common] != '/')
		common--; /* the deepest common directory: their parent bridge */
	r[common] = '\0';
	return r;
}

/*
 * NCCL IB's plane index of a port: 0 for an undefined plane, else 1 + the rank of its plane
 * among the distinct defined planes in port order (ports are in NCCL's PCI order).
 */
static int rn_plane_index(const struct rn_port *ports, int nports, int plane)
{
	int k = 0;

	if (plane < 0)
		return 0;
	for (int j = 0; j < nports; j++) {
		bool seen = false;

		if (ports[j].plane_id < 0)
			continue;
		for (int i = 0; i < j; i++)
			seen |= ports[i].plane_id == ports[j].plane_id;
		if (seen)
			continue;
		k++;
		if (ports[j].plane_id == plane)
			return k;
	}
	return 0;
}

int rn_nic_init(struct rn_nic *nic, const struct rn_port *ports, int nports, const int *idx, int n)
{
	bool all_paths = true;

	struct rn_nic t;
	size_t len = 1;
	char *name;

	memset(&t, 0, sizeof(t));
	for (int i = 0; i < n; i++)
		len += strlen(ports[idx[i]].name) + 8;
	name = calloc(1, len);
	if (!name)
		return -ENOMEM;
	t.name = name;
	t.rail_id = ports[idx[0]].rail_id;
	t.plane_id = ports[idx[0]].plane_id;
	t.max_comms = ports[idx[0]].max_qp;
	for (int i = 0; i < n; i++) {
		const struct rn_port *p = &ports[idx[i]];
		bool multiport = false;

		for (int j = 0; j < nports; j++)
			multiport |= j != idx[i] && !strcmp(ports[j].name, p->name);
		all_paths &= p->pci_path != NULL;
		if (i)
			strcat(name, "+");
		strcat(name, p->name);
		if (multiport)
			sprintf(name + strlen(name), ":%d", p->port);
		t.speed += p->speed;
		if (p->rail_id != t.rail_id)
			t.rail_id = -1;
		/* NCCL IB's merged plane: the virtual bit and one bit per child's plane index */
		if (n > 1) {
			int k = rn_plane_index(ports, nports, p->plane_id);

			if (i == 0)
				t.plane_id = RN_PLANE_VIRT_BIT;
			if (k < RN_PLANE_VIRT_SHIFT)
				t.plane_id |= 1 << k;
		}
		if (p->max_qp < t.max_comms)
			t.max_comms = p->max_qp;
		t.ports[i] = idx[i];
	}
	t.nports = n;
	t.guid = ports[idx[0]].sys_image_guid;
	t.port = ports[idx[0]].nccl_port;
	t.link_layer = ports[idx[0]].link_layer;
	if (all_paths) {
		t.pci_path = rn_common_path(ports, idx, n);
		if (!t.pci_path) {
			free(name);
			return -ENOMEM;
		}
	}
	*nic = t;
	return 0;
}

void rn_nic_fini(struct rn_nic *nic)
{
	free(nic->name);
	free(nic->pci_path);
	memset(nic, 0, sizeof(*nic));
}

/* ---- numbering --------------------------------------------------------------------------- */

int rn_numbering_add(struct rn_numbering *num, const struct rn_port *ports, int nports,
		     const int *idx, int n)
{
	int rc;

	if (num->nnics == num->cap) {
		int ncap = num->cap ? num->cap * 2 : 16;
		struct rn_nic *nn = realloc(num->nics, (size_t)ncap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		num->nics = nn;
		num->cap = ncap;
	}
	rc = rn_nic_init(&num->nics[num->nnics], ports, nports, idx, n);
	if (rc)
		return rc;
	return num->nnics++;
}

int rn_view_push(struct rn_view *v, int nic)
{
	int *nl = realloc(v->nic, (size_t)(v->n + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	v->nic = nl;
	v->nic[v->n++] = nic;
	return 0;
}

/*
 * Base devices of one view: one per port, or the merged groups. port_nic[i] is the device of
 * port i alone once made (-1 before), so that a lone port is one device in both views.
 */
static int rn_view_build(struct rn_numbering *num, struct rn_view *v, const struct rn_discovery *d,
			 bool merged, const int *group, int ngroups, int *port_nic)
{
	int rc;

	if (!merged) {
		for (int i = 0; i < d->nports; i++) {
			if (port_nic[i] < 0) {
				rc = rn_numbering_add(num, d->ports, d->nports, &i, 1);
				if (rc < 0)
					return rc;
				port_nic[i] = rc;
			}
			rc = rn_view_push(v, port_nic[i]);
			if (rc)
				return rc;
		}
	} else {
		for (int g = 0; g < ngroups; g++) {
			int idx[RN_MAX_VDEV_CHILDREN], n = 0;

			for (int i = 0; i < d->nports && n < RN_MAX_VDEV_CHILDREN; i++)
				if (group[i] == g)
					idx[n++] = i;
			if (n == 1 && port_nic[idx[0]] >= 0) {
				rc = port_nic[idx[0]];
			} else {
				rc = rn_numbering_add(num, d->ports, d->nports, idx, n);
				if (rc < 0)
					return rc;
				if (n == 1)
					port_nic[idx[0]] = rc;
			}
			rc = rn_view_push(v, rc);
			if (rc)
				return rc;
		}
	}
	/* A base device's vProps is {1, {its index}} in the numbering asked about; net.c makes
	 * it in getProperties, since one lone port's nic can sit at different indices in the
	 * per-port and the merged numbering. */
	v->nbase = v->n;
	return 0;
}

int rn_numbering_build(const struct rn_discovery *d, int merge, struct rn_numbering *out)
{
	struct rn_numbering num;
	int *group, *port_nic, ngroups, rc;

	memset(&num, 0, sizeof(num));
	if (!d->nports) {
		*out = num;
		return 0;
	}
	group = calloc((size_t)d->nports, sizeof(*group));
	port_nic = malloc((size_t)d->nports * sizeof(*port_nic));
	if (!group || !port_nic) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (int i = 0; i < d->nports; i++)
		port_nic[i] = -1;
	ngroups = rn_vdev_groups(d->ports, d->nports, group);
	rc = rn_view_build(&num, &num.view[RN_NET_VIEW_VDEV], d, merge == RN_MERGE_PORTS, group,
			   ngroups, port_nic);
	if (!rc)
		rc = rn_view_build(&num, &num.view[RN_NET_VIEW_SELF], d, merge != RN_MERGE_NONE,
				   group, ngroups, port_nic);
out_free:
	free(group);
	free(port_nic);
	if (rc) {
		rn_numbering_fini(&num);
		return rc;
	}
	*out = num;
	return 0;
}

void rn_numbering_fini(struct rn_numbering *num)
{
	for (int i = 0; i < num->nnics; i++)
		rn_nic_fini(&num->nics[i]);
	free(num->nics);
	for (int v = 0; v < RN_NET_VIEW_COUNT; v++)
		free(num->view[v].nic);
	memset(num, 0, sizeof(*num));
}
