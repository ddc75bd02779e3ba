/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Topology and GPUDirect: where every PCI device sits (its PCIe root — the root port below
 * the host bridge — its host bridge and NUMA node), which GPUs this process may use, whether
 * GPUDirect RDMA works on this machine, and the rule railnet enforces with both: a NIC offers
 * RN_PTR_CUDA/RN_PTR_DMABUF only when GDR works and a usable GPU shares its PCIe root, and a
 * CUDA buffer registered on a NIC of another root is refused, registered with a WARN, or
 * registered silently (RAILNET_GDR_POLICY).
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
 * under its lock, the doctor). The queries are read-only and may run on any thread;
 * rn_gdr_check_reg may run concurrently on several threads (its once-only WARN set has a
 * lock of its own).
 */
#ifndef RAILNET_TOPO_H
#define RAILNET_TOPO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct rn_gdr;

#define RN_BUSID_MAX 16	     /* "0000:48:00.0" and its NUL */
#define RN_TOPO_MAX_DEPTH 16 /* PCI bridges kept per device, host bridge included */

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
	bool gpu;			       /* NVIDIA 3D/VGA controller (class 0x0302/0x0300) */
	bool visible;			       /* a GPU this process may use (rn_topo_set_*) */
	int cuda_index;			       /* its CUDA ordinal among the visible GPUs, -1 */
	char name[64];			       /* first OS device below it ("mlx5_4", "cuda0") */
	char netdev[32];		       /* first network interface below it ("rdma4") */
	int nchain;			       /* bridges above it, nearest first */
	uint64_t chain[RN_TOPO_MAX_DEPTH];     /* their hwloc gp_index */
};

struct rn_topo {
	struct rn_topo_dev *devs; /* PCI devices in bus id order */
	int ndevs;
	int ngpus;		   /* devs with .gpu */
	bool io;		   /* the topology had PCI objects (else it knows nothing) */
	char source[256];	   /* "this machine" or the XML path */
	char gpu_source[160];	   /* how the visible GPUs were chosen (for logs and the doctor) */
	bool gpus_known;	   /* the visible set was given (env, CUDA, bus ids), not assumed */
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

/*
 * Bus id named by s: s itself when it is a bus id ("0000:48:00.0", case-insensitive, a
 * 4- or 8-digit domain, as cuDeviceGetPCIBusId and nvidia-smi print it), else the last
 * path component that is one. Written normalised (lowercase, 4-digit domain). 0 or -EINVAL.
 */
int rn_busid_parse(const char *s, char busid[RN_BUSID_MAX]);

/* The device named by a bus id or path (rn_busid_parse); NULL when unknown. */
const struct rn_topo_dev *rn_topo_find(const struct rn_topo *topo, const char *busid_or_path);

/* NCCL's path type between two devices (bus ids or paths); RN_PATH_UNKNOWN if either is. */
int rn_topo_path_type(const struct rn_topo *topo, const char *a, const char *b);

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
 * which GPUs this process may use and why, and whether GDR works ("no NVIDIA GPU: host memory
 * only" when there is none). gdr may be NULL.
 */
void rn_topo_log(const struct rn_topo *topo, const struct rn_gdr *gdr);

/* GPUDirect RDMA on this machine, probed once (rn_gdr_probe). */
struct rn_gdr {
	bool peermem;	      /* nvidia-peermem / nv_peer_mem is loaded */
	char peermem_how[96]; /* which file said so: "nvidia_peermem 535.104.05" */
	int dmabuf;	      /* ibv_reg_dmabuf_mr: 1 works, 0 not supported, -1 not probed */
	int data_direct;      /* mlx5dv data-direct: 1 present, 0 absent, -1 not probed */
	bool works;	      /* peermem or dmabuf == 1 */
	char why[192];	      /* one sentence for logs and the doctor */
};

/*
 * Probe GDR: the peer-memory module files under sysfs_root (NULL: "/sys") —
 * kernel/mm/memory_peers/nv_mem/version, kernel/mm/memory_peers/nv_mem_nc/version,
 * module/nvidia_peermem/version — then, when ctx is non-NULL and rn_verbs() is loaded, a
 * dma-buf registration probe (ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0): EOPNOTSUPP or
 * EPROTONOSUPPORT means unsupported, any other answer means the kernel and provider know
 * dma-buf) and mlx5dv data-direct. Always returns 0 and fills *out; logs one INFO line.
 */
int rn_gdr_probe(const char *sysfs_root, struct ibv_context *ctx, struct rn_gdr *out);

/*
 * RN_PTR_* a NIC offers. paths: the PCI paths (or bus ids) of its n member ports (one for a
 * physical device; a virtual device's members, which share a root). RN_PTR_HOST always;
 * RN_PTR_CUDA when gdr->works and a visible GPU sits on the members' root (every member on
 * that root); RN_PTR_DMABUF as well when gdr->dmabuf == 1. why (may be NULL) gets one
 * sentence naming the GPU and root, or why not. No logging.
 */
int rn_topo_ptr_support(const struct rn_topo *topo, const struct rn_gdr *gdr,
			const char *const *paths, int n, char *why, size_t why_len);

/*
 * RAILNET_GDR_POLICY for one CUDA registration: the GPU holding cuda_ptr (asked of the CUDA
 * driver, loaded on first use) against the NIC named nic_name whose member ports are
 * paths[0..n). Same root, or policy RN_GDR_OFF: 0, silently. Another root: RN_GDR_STRICT
 * returns -EPERM after one WARN naming the GPU, its root, the NIC, its root and the fix;
 * RN_GDR_WARN returns 0 after one WARN, once per GPU and NIC pair. A GPU or NIC the
 * topology cannot place, or a pointer the driver cannot resolve: 0 with one INFO (railnet
 * cannot judge, NCCL's own checks stand).
 */
int rn_gdr_check_reg(struct rn_topo *topo, int policy, const void *cuda_ptr, const char *nic_name,
		     const char *const *paths, int n);

/* For src/hwloc_shim.c and topo.c only: point hwloc's stdio at ours before calling it. */
void rn_hwloc_shim_init(void);

#endif /* RAILNET_TOPO_H */
