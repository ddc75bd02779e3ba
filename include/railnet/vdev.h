/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Devices as NCCL sees them ("NICs"): one port, or several ports merged into a virtual
 * device. This header owns the merge rules:
 *
 *  - rn_vdev_check: may these ports form one device? Same link layer, same PCIe root (for
 *    now the root port in the PCI path; the topology issue brings hwloc), no port twice, at
 *    most `max` members. Used by makeVDevice (NCCL asks) and by railnet's own merging.
 *  - rn_vdev_groups: railnet's own merging for RAILNET_MERGE=ports, and for =auto on NCCL
 *    without makeVDevice (API v6-v8): the kept ports of one PCI device — the ports of one
 *    function and the functions (PFs) whose PCI paths differ only in the function digit —
 *    become one device, if they pass rn_vdev_check. VFs (other device numbers) and ports of
 *    different NICs are never merged by railnet.
 *  - rn_nic_init: the properties of such a device: name "a+b" (a port's device name, plus
 *    ":port" when its device has several kept ports), speed the sum, pciPath the members'
 *    common path, guid and maxComms of the first member (maxComms: the smallest), the rail
 *    when all members agree (else -1) and, for several members, NCCL IB's merged plane:
 *    RN_PLANE_VIRT_BIT | 1 << (plane index of each member: 0 for an undefined plane, else 1 +
 *    the rank of its plane among the defined ones in port order). NCCL >= 2.30 keeps a ring
 *    on one plane, so a vNIC pairs only with vNICs of the same members' planes, as with IB's.
 *  - rn_numbering_build: the device numbering NCCL sees, from one discovery, for both
 *    numberings of net.h (enum rn_net_view). net.c and railnet-doctor both call it, so the
 *    doctor shows exactly the devices the plugin offers.
 *
 * Pure functions over struct rn_port arrays; no logging. Not thread-safe by themselves: the
 * numbering's owner serialises (net.c holds its lock, the doctor is single threaded).
 */
#ifndef RAILNET_VDEV_H
#define RAILNET_VDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/device.h"
#include "railnet/types.h"

#define RN_PLANE_VIRT_SHIFT 14
#define RN_PLANE_VIRT_BIT (1 << RN_PLANE_VIRT_SHIFT) /* NCCL IB's NCCL_IB_PLANE_VIRT_BIT */

/* One device NCCL sees. */
struct rn_nic {
	char *name;	/* malloc'd */
	char *pci_path; /* malloc'd, NULL when unknown */
	uint64_t guid;
	int speed; /* Mbps, sum of the members */
	int port;
	int link_layer;
	int max_comms;
	int rail_id, plane_id;
	int nports; /* members (indices into the discovery's ports) */
	int ports[RN_MAX_VDEV_CHILDREN];
	struct rn_vprops vprops; /* NCCL's view: {1, self} or the children NCCL merged */
};

/* 0, or -EINVAL with the reason. idx: n indices into ports[]. */
int rn_vdev_check(const struct rn_port *ports, const int *idx, int n, int max, char *why,
		  size_t why_len);

/* group[i] for each of the n ports (groups numbered 0.. in port order). Returns the count. */
int rn_vdev_groups(const struct rn_port *ports, int n, int *group);

/*
 * Fill nic from members idx[0..n) of ports[0..nports). A member whose device has several kept
 * ports is named "dev:port" so that names stay unique. 0 or -ENOMEM (nic untouched).
 */
int rn_nic_init(struct rn_nic *nic, const struct rn_port *ports, int nports, const int *idx, int n);
void rn_nic_fini(struct rn_nic *nic);

/* One numbering: the devices NCCL sees, by NCCL index. */
struct rn_view {
	int *nic; /* NCCL index -> rn_numbering.nics[] index; malloc'd */
	int n;
	int nbase; /* base devices (before any makeVDevice); the first nbase of nic[] */
};

/*
 * Every device railnet offers in nics[] (a lone port's device is one entry shared by both
 * views; a group merged in both views has an equal entry for each), and the two numberings
 * over them: view[RN_NET_VIEW_VDEV] for NCCL >= 2.24 (base devices, then the virtual ones
 * makeVDevice adds) and view[RN_NET_VIEW_SELF] for older NCCL.
 */
struct rn_numbering {
	struct rn_nic *nics; /* malloc'd, cap entries */
	int nnics, cap;
	struct rn_view view[RN_NET_VIEW_COUNT];
};

/*
 * Base devices of both numberings of d's ports under RAILNET_MERGE `merge` (enum
 * rn_merge_mode): view[RN_NET_VIEW_VDEV] holds rn_vdev_groups' groups when merge is
 * RN_MERGE_PORTS, else one device per port; view[RN_NET_VIEW_SELF] the groups unless merge is
 * RN_MERGE_NONE. Devices are numbered in port order (groups by their first port). Returns 0
 * and *out (all empty when d has no port), or -ENOMEM (*out untouched). rn_numbering_fini
 * frees it.
 */
int rn_numbering_build(const struct rn_discovery *d, int merge, struct rn_numbering *out);
/*
 * Append a device made of ports idx[0..n) of ports[0..nports) to num->nics. Returns its
 * nics[] index, or -ENOMEM (num unchanged).
 */
int rn_numbering_add(struct rn_numbering *num, const struct rn_port *ports, int nports,
		     const int *idx, int n);
/* Append nics[] index `nic` to a view. 0, or -ENOMEM (v unchanged). */
int rn_view_push(struct rn_view *v, int nic);
/* Free every device and view; num is zeroed. */
void rn_numbering_fini(struct rn_numbering *num);

#endif /* RAILNET_VDEV_H */
