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
 *    common path, guid and maxComms of the first member (maxComms: the smallest), rail and
 *    plane when all members agree (else -1).
 *
 * Pure functions over struct rn_port arrays; no logging.
 */
#ifndef RAILNET_VDEV_H
#define RAILNET_VDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/device.h"
#include "railnet/net.h"

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

/* Root port bus id of a PCI path (the component after "pciDDDD:BB"). 0, or -ENOENT. */
int rn_pci_root(const char *pci_path, char *root, size_t len);
/* Both paths name functions of one PCI device (equal but for the function digit). */
bool rn_pci_same_device(const char *a, const char *b);

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

#endif /* RAILNET_VDEV_H */
