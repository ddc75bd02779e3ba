/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs-fabric's model of a fabric: rails, nodes with NUMA nodes, PCIe roots, NICs (PFs
 * and VFs) with ports, GPUs, and pods with their child interfaces, as parsed from a fabric
 * spec (docs/fabric-spec.md). The parser fills it and validates every reference; the writers
 * (view.c, topo.c, netns.c) only read it. Indices, not pointers, link the objects so the
 * arrays may grow while parsing. Nothing here touches the file system.
 */
#ifndef SV_FABRIC_H
#define SV_FABRIC_H

#include <stdint.h>
#include <stdio.h>

#define SV_NAME_MAX 64
#define SV_IFNAME_MAX 16 /* IFNAMSIZ */
#define SV_MAX_ADDRS 8	 /* addresses per interface */
#define SV_MAX_PORTS 8	 /* ports per RDMA device */
#define SV_GID_TBL_MAX 256
#define SV_MAX_CPUS 4096

struct sv_addr {
	int family;	   /* AF_INET or AF_INET6 */
	uint8_t bytes[16]; /* IPv4: first 4 bytes */
	int prefix;	   /* prefix length */
};

struct sv_pci {
	unsigned int domain, bus, dev, fn;
};

struct sv_rail {
	char name[SV_NAME_MAX];
	struct sv_addr subnets[4]; /* e.g. one IPv4 and one IPv6 */
	int nsubnets;
	double latency_us;
	int line;
};

struct sv_numa {
	int id;
	char cpus[256]; /* cpulist as written, e.g. "0-31,64-95" */
	uint64_t memory_bytes;
};

struct sv_root {
	char name[SV_NAME_MAX];
	struct sv_pci port; /* the root port; its bus is the host bridge's bus */
	int numa;	    /* os index of the NUMA node */
	unsigned int vendor, device;
	int has_switch;		/* switch=: a PCIe switch below the port, above every device */
	struct sv_pci up, down; /* its upstream port, and the one downstream port in use */
};

struct sv_port {
	int num;       /* 1-based */
	int ib;	       /* link layer InfiniBand (else Ethernet) */
	int rate_gbps; /* total, e.g. 100 */
	char rate[48]; /* kernel format: "100 Gb/sec (4X EDR)" */
	int mtu;
	int active;
	char netdev[SV_IFNAME_MAX]; /* Ethernet: the host netdev */
	uint8_t mac[6];
	struct sv_addr addrs[SV_MAX_ADDRS]; /* the host's addresses on netdev */
	int naddrs;
	int rail;	   /* index into fabric rails, -1: none */
	double latency_us; /* < 0: from the rail, else the default */
	unsigned int lid, sm_lid;
	uint8_t subnet_prefix[8];
	int gid_tbl_len;
	int moved_to; /* pod index that took the netdev (vf/host iface), -1: host */
	int line;
};

/* A device's PCIe link: generation 1-6 and width in lanes (`pcie=gen4x16`, the default). */
struct sv_pcie {
	int gen, width;
};

/* "16.0 GT/s PCIe": the link speed sysfs shows for a generation */
const char *sv_pcie_speed_str(int gen);
/* GB/s as hwloc computes it (lanes x GT/s x encoding / 8): 31.507692 for gen4x16 */
double sv_pcie_gbs(const struct sv_pcie *l);

struct sv_nic {
	char name[SV_NAME_MAX];
	struct sv_pci pci;
	int root; /* index into node roots */
	int numa;
	uint64_t guid;
	int vf_of; /* index of the PF, -1: a PF */
	unsigned int vendor, device;
	char fw_ver[32];
	char board_id[32];
	struct sv_pcie pcie; /* its PCIe link */
	struct sv_port ports[SV_MAX_PORTS];
	int nports;
	int line;
};

struct sv_gpu {
	char name[SV_NAME_MAX];
	struct sv_pci pci;
	int root;
	int numa;
	char model[SV_NAME_MAX];
	unsigned int vendor, device;
	struct sv_pcie pcie; /* its PCIe link */
	int cuda; /* cuda=<n>: bound to this machine's CUDA device n at build; -1: not bound */
	int line;
};

enum sv_iface_type { SV_IF_IPVLAN, SV_IF_MACVLAN, SV_IF_VF, SV_IF_HOST };

struct sv_iface {
	char ifname[SV_IFNAME_MAX];
	enum sv_iface_type type;
	int nic, port; /* parent: node nic index, port index into nic ports */
	struct sv_addr addrs[SV_MAX_ADDRS];
	int naddrs;
	uint8_t mac[6];
	int mtu;
	int line;
};

struct sv_pod {
	char name[SV_NAME_MAX];
	int hostnet;	      /* hostNetwork: sees what the host sees */
	int leaky;	      /* sees every GID of the ports it can open */
	int linklocal_hidden; /* link-local GIDs (0/1) read as zero in this pod */
	int *gpus, ngpus;     /* node gpu indices */
	int *nics, nnics;     /* node nic indices (given by the device plugin) */
	struct sv_iface *ifaces;
	int nifaces;
	int line;
};

struct sv_node {
	char name[SV_NAME_MAX];
	int exclusive; /* ib_core netns_mode=0 */
	int gdr;       /* GPUDirect RDMA emulated: 1 peer memory, 2 dma-buf, 3 both, 0 none */
	struct sv_numa *numas;
	int nnumas;
	struct sv_root *roots;
	int nroots;
	struct sv_nic *nics;
	int nnics;
	struct sv_gpu *gpus;
	int ngpus;
	struct sv_pod *pods;
	int npods;
	int line;
};

struct sv_fabric {
	char file[512];
	struct sv_rail *rails;
	int nrails;
	struct sv_node *nodes;
	int nnodes;
};

/* One entry of a port's GID table, in the kernel's order. */
struct sv_gid {
	uint8_t raw[16];
	int v2;		/* "RoCE v2", else "IB/RoCE v1" */
	int owner;	/* pod index owning the netdev, -1: the host netns */
	int is_default; /* link-local default GID of the port's own netdev (or IB GID 0) */
	char ndev[SV_IFNAME_MAX]; /* "" for InfiniBand */
};

/*
 * Parses the spec in `path` into a newly allocated fabric. On error prints
 * "file:line:col: message" on `err` and returns -EINVAL (or -errno when the file cannot be read).
 */
int sv_fabric_parse_file(const char *path, FILE *err, struct sv_fabric **out);
/* Same, from a buffer; `name` is used in messages. */
int sv_fabric_parse_buf(const char *name, const char *buf, size_t len, FILE *err,
			struct sv_fabric **out);
void sv_fabric_destroy(struct sv_fabric *f);

/* Parses a cpulist ("0-31,64-95"); sets bits in `words` (SV_MAX_CPUS bits) when non-NULL. */
int sv_cpulist_bits(const char *s, uint32_t *words);
/* Default latency of a port in microseconds (port, else rail, else the fabric default). */
double sv_port_latency(const struct sv_fabric *f, const struct sv_port *p);

/*
 * Fills `tbl` (gid_tbl_len entries) for a port; unused entries are zero with owner -2.
 * Returns the number of populated entries.
 */
int sv_gid_table(const struct sv_fabric *f, const struct sv_node *n, int nic, int port,
		 struct sv_gid *tbl);
/* Viewer: pod index, or -1 for the host netns. 1 if the entry reads non-zero there. */
int sv_gid_visible(const struct sv_node *n, int viewer, const struct sv_gid *g);
/* 1 if RDMA device `nic` appears in class/infiniband of the viewer's view. */
int sv_nic_visible(const struct sv_node *n, int viewer, int nic);
/* The netns-level viewer of a pod: -1 for hostNetwork pods, else the pod index. */
int sv_pod_viewer(const struct sv_node *n, int pod);

/* "0000:0c:00.0" */
void sv_pci_str(const struct sv_pci *p, char *buf, size_t len);
/* "fe80:0000:...:" 8 groups */
void sv_gid_str(const uint8_t raw[16], char *buf, size_t len);
/* "b8ce:f603:00a1:2b3c" */
void sv_guid_str(uint64_t guid, char *buf, size_t len);
/* Address as text with its prefix ("10.0.0.1/16"); without prefix when `prefix` is 0. */
void sv_addr_str(const struct sv_addr *a, int with_prefix, char *buf, size_t len);

/* snprintf for paths and names whose length only the run time knows: -ENAMETOOLONG if cut. */
int sv_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Binds every `cuda=<n>` GPU to this machine's CUDA device n: its PCI address becomes the
 * device's real bus id (from the CUDA driver, or SOFTVERBS_FABRIC_CUDA_BUSIDS, a comma list
 * by CUDA index, for machines without a driver). 0, or -errno after one message on stderr.
 */
int sv_bind_cuda(struct sv_fabric *f);
/*
 * For `exec`: enters a private mount namespace whose /sys is the pod view laid out as the
 * kernel would make it (the view's devices, class/infiniband, class/net, bus/pci, pci_bus)
 * with the real parts a process needs bound in (devices/system, virtual netdevs, kernel,
 * module, fs) and each bound GPU's real device directory bound over its place in the view.
 */
int sv_exec_sysfs(const char *view);

/* Writers. Each returns 0 or a negative errno after printing a message on stderr. */
int sv_build(const struct sv_fabric *f, const char *outdir);
int sv_topo_write(const struct sv_fabric *f, const struct sv_node *n, const char *path);
int sv_netns_up(const struct sv_fabric *f, const char *outdir, const char *only_node);
int sv_netns_down(const char *outdir);
/* (Re)writes a view's softverbs/config and the env file next to it; pod -1: the host view. */
int sv_write_netns_files(const struct sv_fabric *f, const char *outdir, const struct sv_node *n,
			 int pod, const char *netns);
/* The netns name of a pod (or of a node's host netns when pod is -1). */
void sv_netns_name(const char *outdir, const struct sv_node *n, int pod, char *buf, size_t len);

#endif
