/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery: the RDMA ports this process can use, with everything railnet and the doctor
 * need to know about them, and every device or port left out with its reason and fix.
 *
 * rn_discover walks the devices the loaded verbs library lists (rn_verbs() must be loaded),
 * opens each, queries every port, applies NCCL_IB_HCA, keeps ACTIVE InfiniBand/Ethernet
 * ports, chooses each port's GID (gid.h) and reads the PCI path (realpath of
 * RAILNET_SYSFS_ROOT/class/infiniband/DEV/device) and NUMA node. Kept ports are sorted by
 * PCI path, then name, then port number, so indices agree across nodes as NCCL's do. Device
 * contexts are closed again before it returns. Each drop is logged once (INFO for the
 * expected cases: filtered, port down, no usable GID; WARN when the user asked for something
 * that does not work: a wrong NCCL_IB_GID_INDEX, a device that cannot be opened); each chosen
 * GID is logged at INFO with its reason.
 *
 * Not thread-safe by itself: callers serialise (net.c holds its lock, the doctor is single
 * threaded). The discovery owns all its memory; rn_discovery_destroy frees it.
 */
#ifndef RAILNET_DEVICE_H
#define RAILNET_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "railnet/config.h"
#include "railnet/gid.h"

#define RN_DEV_NAME_MAX 64
#define RN_DROP_WHY_MAX 512
#define RN_DROP_FIX_MAX 320
#define RN_RAIL_FROM_SUBNET (-2) /* rn_port.rail_id before rn_rail_derive: not from NCCL_IB_HCA */

/* One usable port (NCCL's "physical device"). */
struct rn_port {
	char name[RN_DEV_NAME_MAX]; /* RDMA device name */
	int port;		    /* ibv port number */
	int nccl_port;		    /* 1 + earlier kept ports of the same PCI device */
	int link_layer;		    /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
	int state;		    /* IBV_PORT_ACTIVE */
	int speed;		    /* Mbps */
	int mtu;		    /* active MTU in bytes */
	uint16_t pkey;		    /* pkey at index NCCL_IB_PKEY, host order; 0 if unreadable */
	uint16_t lid;
	uint64_t node_guid;	 /* host order */
	uint64_t sys_image_guid; /* host order */
	int max_qp;
	char *pci_path;	   /* realpath, malloc'd; NULL when the link is missing */
	char pci_root[32]; /* root port bus id ("0000:00:01.1"), "" when unknown */
	int numa_node;	   /* -1 when unknown */
	int gid_tbl_len;
	struct rn_gid_choice gid;
	/*
	 * The rail (rn_rail_derive): NCCL_IB_HCA's "hca:port:rail:plane" when given, else the
	 * subnet of the chosen GID (RoCE: the pod's address and its netmask; InfiniBand: the GID
	 * prefix), the same on every node that shares the rail. rail_key pairs ports by rail in
	 * the handshake (0: unknown), rail_id is what NCCL >= 2.30 sees (-1: undefined).
	 */
	int rail_id;	      /* 0..32767, -1 undefined */
	int plane_id;	      /* from NCCL_IB_HCA, -1 undefined */
	uint32_t rail_key;    /* 0: unknown */
	char rail_net[64];    /* "10.10.0.0/16", "NCCL_IB_HCA", or "" (see rail_why) */
	const char *rail_why; /* static text: how rail_id was found, or why it is undefined */
};

enum rn_drop_kind {
	RN_DROP_OPEN,	       /* cannot open the device */
	RN_DROP_QUERY,	       /* query_device / query_port failed */
	RN_DROP_FILTERED,      /* NCCL_IB_HCA leaves it out */
	RN_DROP_PORT_DOWN,     /* port not ACTIVE */
	RN_DROP_LINK_LAYER,    /* neither InfiniBand nor Ethernet */
	RN_DROP_NO_GID,	       /* no usable GID in this network namespace */
	RN_DROP_BAD_GID_INDEX, /* NCCL_IB_GID_INDEX names an unusable GID */
	RN_DROP_NO_PORT,       /* the device has no port at all (phys_port_cnt 0) */
};

const char *rn_drop_kind_str(int kind); /* "filtered", "port-down", ... */

struct rn_drop;
struct rn_discovery;
/*
 * One cause: the same kind and the same fix. The plugin's WARNs and the doctor's problems say
 * each cause once, at its first drop, naming the others.
 */
bool rn_drop_same_cause(const struct rn_drop *a, const struct rn_drop *b);
bool rn_drop_first_of_cause(const struct rn_discovery *d, int i);

struct rn_drop {
	char name[RN_DEV_NAME_MAX];
	int port; /* 0: the whole device */
	int kind; /* enum rn_drop_kind */
	char why[RN_DROP_WHY_MAX];
	char fix[RN_DROP_FIX_MAX]; /* "" when there is nothing to fix */
};

struct rn_discovery {
	struct rn_port *ports;
	int nports;
	struct rn_drop *drops;
	int ndrops;
	int nlisted; /* devices the verbs library listed */
	bool list_failed;
	char netns_mode; /* ib_core netns_mode: 'Y' shared, 'N' exclusive, '?' unknown */
};

/*
 * Discover under cfg. ifa/nifa: this process's addresses; ifa NULL means getifaddrs (the
 * doctor's --ifaddrs passes a list read from a file). Returns 0 and *out (possibly with no
 * port: not an error), -EINVAL for an NCCL_IB_HCA or NCCL_IB_ADDR_RANGE its parser refuses
 * (one WARN with the parser's reason; config.c checks both values with the same parsers, so
 * only a cfg that rn_config_parse did not make can get here), -ENOMEM, or the getifaddrs
 * errno.
 */
int rn_discover(const struct rn_config *cfg, const struct rn_ifaddr *ifa, int nifa,
		struct rn_discovery **out);
void rn_discovery_destroy(struct rn_discovery *d);

/*
 * Rails of ports[0..n): for each port, NCCL_IB_HCA's rail when it gave one (has_hca_rail),
 * else the subnet of its GID: RoCE, the address the GID stands for masked by that address's
 * netmask (gid.prefix); InfiniBand, the GID's subnet prefix unless it is the default
 * fe80::/64. rail_id is the subnet number's low 15 bits, so /16 or /24 rails numbered
 * consecutively get consecutive ids; rail_key a 31-bit hash of family, prefix and network
 * (0x80000000 | id for NCCL_IB_HCA rails). When this process has several ports and all of them
 * are in one subnet, that subnet is the fabric's single network, not a rail: they get no rail
 * (-1, key 0). Pure: no I/O, no logging.
 */
void rn_rail_derive(struct rn_port *ports, int n);

/* ib_core netns_mode under sysfs_root: 'Y', 'N' or '?'. */
char rn_netns_mode(const char *sysfs_root);

/* Mbps of (active_speed, active_width) per reference §4.1; 0 when unknown. */
int rn_port_speed_mbps(unsigned int active_speed, unsigned int active_width);

#endif /* RAILNET_DEVICE_H */
