/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PCIe topology: where every PCI device sits (its PCIe root — the root port below the host
 * bridge — its host bridge and NUMA node), NCCL's path type between two devices, and which
 * GPUs this process may use. GPUDirect RDMA decisions built on it are gdr.h's.
 *
 * The topology comes from hwloc (linked statically, docs/topology.md): the host's, or an XML
 * file (RAILNET_TOPO_XML, what softverbs-fabric writes). rn_topo_load copies what railnet
 * needs into plain arrays and lets hwloc go, so everything after the load is pure lookups.
 * Devices are named by PCI bus id ("0000:48:00.0") or by any path whose last bus-id
 * component names them (the sysfs realpath in rn_port.pci_path / rn_nic.pci_path).
 *
 * Bad input never crashes and never fails the load: a missing or malformed XML, or one
 * without I/O objects, gives one WARN and a topology that knows no device, so every query
 * answers "unknown" and every NIC offers RN_PTR_HOST only.
 *
 * Threading: rn_topo_load/destroy and the rn_topo_set_* calls are made by the owner (net.c
 * under its lock, the doctor). The queries are read-only and may run on any thread. The
 * once-only WARN set of gdr.h's rn_gdr_check_reg lives here, with a lock of its own.
 */
#ifndef RAILNET_TOPO_H
#define RAILNET_TOPO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/pci.h"

#define RN_TOPO_MAX_DEPTH 16	/* PCI bridges kept per device, host bridge included */
#define RN_PCI_CLASS_IB 0x0207	/* InfiniBand controller */
#define RN_PCI_CLASS_ETH 0x0200 /* Ethernet controller (RoCE NICs) */

/* NCCL's path types between a GPU and a NIC, best first (values are railnet's own). */
enum rn_path_type {
	RN_PATH_UNKNOWN = -1, /* a device the topology does not know */
	RN_PATH_PIX = 0,      /* through at most one PCIe bridge or switch */
	RN_PATH_PXB = 1,      /* through several PCIe bridges, below one root port */
	RN_PATH_PHB = 2,      /* through the PCIe host bridge (different root ports) */
	RN_PATH_NODE = 3,     /* between host bridges of one NUMA node */
	RN_PATH_SYS = 4,      /* across the SMP interconnect (different NUMA nodes) */
};

/* "PIX", "PXB", "PHB", "NODE", "SYS"; "unknown" for anything else. */
const char *rn_path_type_str(int type);

/* One PCI device of the topology. */
struct rn_topo_dev {
	char busid[RN_BUSID_MAX];
	unsigned int vendor, device, class_id; /* class_id: 0x0207, 0x0302, ... */
	char root[RN_BUSID_MAX];	       /* root port bus id; "" when it hangs on the host
						* bridge itself */
	int host_bridge;		       /* index of its host bridge (0..), -1 unknown */
	int numa;			       /* NUMA node os index, -1 unknown */
	float pcie_gbs;			       /* its PCIe link in GB/s as hwloc has it (lanes x
						* GT/s x encoding / 8: 31.5 for Gen4 x16), 0 unknown */
	bool gpu;			       /* NVIDIA 3D/VGA controller (class 0x0302/0x0300) */
	bool visible;			       /* a GPU this process may use (rn_topo_set_*) */
	int cuda_index;			       /* its CUDA ordinal among the visible GPUs, -1 */
	char name[64];			       /* first OS device below it ("mlx5_4", "cuda0") */
	char netdev[32];		       /* first network interface below it ("rdma4") */
	int nchain;			       /* bridges above it, nearest first */
	uint64_t chain[RN_TOPO_MAX_DEPTH];     /* their hwloc gp_index */
	/*
	 * Where NCCL's topology puts it (rn_topo_nccl_path): the PCI nodes above it in NCCL's
	 * graph, nearest first. From sysfs/hwloc NCCL attaches a device to the bridge two
	 * levels up (it skips the port the device hangs on), and so on up to the CPU; from
	 * NCCL_TOPO_FILE (nccl_file) they are the file's enclosing <pci> elements.
	 */
	int nanc;
	char anc[RN_TOPO_MAX_DEPTH][RN_BUSID_MAX];
	bool nccl_file;
};

struct rn_topo {
	struct rn_topo_dev *devs; /* PCI devices in bus id order */
	int ndevs;
	int ngpus;		   /* devs with .gpu */
	bool io;		   /* the topology had PCI objects (else it knows nothing) */
	char source[256];	   /* "this machine" or the XML path */
	char gpu_source[160];	   /* how the visible GPUs were chosen (for logs and the doctor) */
	bool gpus_known;	   /* the visible set was given (env, CUDA, bus ids), not assumed */
	char nccl_file[256];	   /* NCCL_TOPO_FILE applied (rn_topo_apply_nccl_file), or "" */
	int gdr_level;		   /* GPUDirect allowed up to this NCCL path type (-1: never) */
	char gdr_level_src[64];	   /* "PXB (NCCL's default)", "NCCL_NET_GDR_LEVEL=PHB" */
	pthread_mutex_t warn_lock; /* rn_gdr_check_reg's once-only WARNs */
	uint64_t *warned;	   /* (gpu dev << 32 | nic dev) pairs already warned about */
	int nwarned, capwarned;
};

/*
 * Load the topology: from xml_path when it is non-NULL and not "", else this machine's.
 * Returns 0 and *out, or -ENOMEM (nothing else: bad input gives an empty topology and one
 * WARN naming the file and what was wrong). Every GPU starts visible; apply
 * rn_topo_set_visible or rn_topo_set_visible_busids next. rn_topo_destroy frees it.
 */
int rn_topo_load(const char *xml_path, struct rn_topo **out);
void rn_topo_destroy(struct rn_topo *topo);

/* The device named by a bus id or path (rn_busid_parse); NULL when unknown. */
const struct rn_topo_dev *rn_topo_find(const struct rn_topo *topo, const char *busid_or_path);

/* NCCL's path type between two devices of the topology. */
int rn_topo_dev_path_type(const struct rn_topo_dev *a, const struct rn_topo_dev *b);

/* NCCL's path type between two devices (bus ids or paths); RN_PATH_UNKNOWN if either is. */
int rn_topo_path_type(const struct rn_topo *topo, const char *a, const char *b);

/*
 * NCCL's path type between two devices as NCCL's own topology has it (the nodes in anc[]):
 * PIX when their nearest nodes are one, PXB when they meet higher up, PHB when they meet only
 * at the CPU, SYS across NUMA nodes. This, not rn_topo_dev_path_type, decides GPUDirect RDMA
 * (gdr.h), as NCCL decides it with NCCL_NET_GDR_LEVEL.
 */
int rn_topo_nccl_path(const struct rn_topo_dev *a, const struct rn_topo_dev *b);

/*
 * NCCL_TOPO_FILE: the topology XML NCCL reads on VMs whose PCIe tree is virtual. Every device
 * the file names takes its place from the file (its enclosing <pci> elements and <cpu
 * numaid>), as in NCCL, whose sysfs walk does not move a device the file placed. A file that
 * cannot be read or parsed changes nothing: one WARN naming the file, the line and what is
 * wrong. Returns the number of devices placed, or -errno.
 */
int rn_topo_apply_nccl_file(struct rn_topo *topo, const char *path);

/*
 * The farthest NCCL path type at which GPUDirect RDMA is allowed, from NCCL_NET_GDR_LEVEL's
 * value as NCCL reads it ("LOC" "NVL" "NVB" "C2C" "PIX" "PXB" "P2C" "PXN" "PHB" "SYS", or the
 * old numbers 0-5), or NCCL's default PXB when value is NULL or "". Returns 0, or -EINVAL for
 * a value NCCL ignores (the default is set then).
 */
int rn_topo_set_gdr_level(struct rn_topo *topo, const char *value);

/* Both of NCCL's: NCCL_TOPO_FILE and NCCL_NET_GDR_LEVEL from the environment (one WARN for a
 * level NCCL ignores). */
void rn_topo_apply_nccl_env(struct rn_topo *topo);

/*
 * Which GPUs this process may use, without the CUDA driver: every GPU of the topology in bus
 * id order (the order nvidia-smi and the container runtime number them), narrowed by
 * NVIDIA_VISIBLE_DEVICES and then CUDA_VISIBLE_DEVICES, as given (NULL: unset). Each is
 * "all", "none"/"void"/"" (no GPU), or a comma list of indices; a list with UUIDs or MIG
 * names cannot be resolved without the driver and leaves the set as it was (the reason goes
 * to gpu_source). CUDA ordinals are numbered in the resulting order. Returns the count.
 */
int rn_topo_set_visible(struct rn_topo *topo, const char *nvidia_visible, const char *cuda_visible);
/*
 * The same from a list of bus ids, in CUDA ordinal order (what the CUDA driver enumerates,
 * or the doctor's --gpus). A bus id the topology does not have is "a GPU hwloc cannot place":
 * one WARN, and it counts for nothing. Returns the number placed.
 */
int rn_topo_set_visible_busids(struct rn_topo *topo, const char *const *busids, int n,
			       const char *source);

/*
 * One INFO line for init: where the topology came from, how many PCI devices and GPUs it has,
 * which GPUs this process may use and why ("no NVIDIA GPU: host memory only" when there is
 * none), then `also` when non-NULL (net.c passes whether GPUDirect RDMA works).
 */
void rn_topo_log(const struct rn_topo *topo, const char *also);

/* For src/hwloc_shim.c and topo.c only: point hwloc's stdio at ours before calling it. */
void rn_hwloc_shim_init(void);

#endif /* RAILNET_TOPO_H */
