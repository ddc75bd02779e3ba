/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Constants and small structs shared across railnet's layers, so that a lower layer never
 * includes a higher layer's header for a number: railnet's own errno values, the pointer types
 * NCCL registers, NCCL's size bounds, the "undefined" rail/plane id, a device's children and
 * properties, and the two device numberings. Values that are NCCL's are checked against
 * NCCL's own in plugin.c. Nothing here but definitions.
 */
#ifndef RAILNET_TYPES_H
#define RAILNET_TYPES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/proto.h"

/* Configuration errors: distinct from -EINVAL (bad argument) so they map to InvalidUsage. */
#define RN_ECONFIG EDOM
/* NCCL_IB_DISABLE asked railnet to step aside: init fails so NCCL moves on. */
#define RN_EDISABLED ECANCELED

/* NCCL_PTR_*: the memory a registration or a device supports. */
#define RN_PTR_HOST 0x1
#define RN_PTR_CUDA 0x2
#define RN_PTR_DMABUF 0x4

#define RN_MAX_RECVS RN_PROTO_MAX_RECVS		/* largest n of a grouped irecv (maxRecvs) */
#define RN_MAX_P2P_BYTES (1ULL << 40)		/* 1 TiB: NCCL's upper bound */
#define RN_MAX_COLL_BYTES (1ULL << 29)		/* 512 MiB */
#define RN_ID_UNDEF (-1)			/* rail_id / plane_id not known */
#define RN_MAX_VDEV_CHILDREN RN_PROTO_MAX_PORTS /* ports merged into one virtual device */

/* Children of a device: {1, {self}} for a physical one. */
struct rn_vprops {
	int ndevs;
	int devs[RN_MAX_VDEV_CHILDREN];
};

/*
 * Two numberings of the devices. RN_NET_VIEW_VDEV (API v9+, NCCL >= 2.24): one device per
 * usable port (RAILNET_MERGE=auto|none) or per PCI device (=ports), then the virtual devices
 * makeVDevice adds, in that order, as NCCL requires. RN_NET_VIEW_SELF (API v6-v8, no
 * makeVDevice): railnet merges the ports of one PCI device itself (=auto|ports) or not
 * (=none). The net.h functions without a view argument use RN_NET_VIEW_VDEV.
 */
enum rn_net_view { RN_NET_VIEW_VDEV, RN_NET_VIEW_SELF, RN_NET_VIEW_COUNT };

/*
 * Properties of one device (physical or virtual). Strings are owned by railnet and stay valid
 * until the last rn_net_finalize. Each exported version copies the fields its layout has.
 */
struct rn_props {
	char *name;	/* unique: NCCL's topology key */
	char *pci_path; /* realpath of the sysfs PCI device, NULL when unknown or virtual */
	uint64_t guid;
	int ptr_support; /* RN_PTR_* */
	int reg_is_global;
	int force_flush;
	int speed; /* Mbps */
	int port;
	float latency; /* µs, 0 = unknown */
	int max_comms;
	int max_recvs;
	int net_device_type;	/* 0 = host */
	int net_device_version; /* 0 for a host device */
	struct rn_vprops vprops;
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request_size;
	int16_t rail_id;  /* RN_ID_UNDEF */
	int16_t plane_id; /* RN_ID_UNDEF */
};

#endif /* RAILNET_TYPES_H */
