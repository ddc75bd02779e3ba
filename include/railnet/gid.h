/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GID choice (DESIGN §2.3). Two layers:
 *
 *  - the rule, pure functions over a table: rn_gid_judge says whether one GID entry is usable
 *    by this process and, if not, why; rn_gid_select_roce / rn_gid_select_ib pick the index
 *    (lowest usable one, or the verified NCCL_IB_GID_INDEX). Unit tests drive these with
 *    hand-written tables and address lists.
 *  - the readers, a thin layer that fills the table from the verbs ops (query_gid_table /
 *    query_gid_ex when the library has them, else query_gid) plus sysfs
 *    (gid_attrs/types and gid_attrs/ndevs under RAILNET_SYSFS_ROOT), and the address list
 *    from getifaddrs (rn_ifaddrs_get) or from a file (rn_ifaddrs_load: softverbs-fabric's
 *    VIEW/softverbs/ifaddrs format, the doctor's --ifaddrs).
 *
 * A RoCE GID is usable when: it is not zero and not link-local (fe80::/64); its attributes
 * are readable (the kernel fails them with EINVAL for entries of other network namespaces);
 * its RoCE version is NCCL_IB_ROCE_VERSION_NUM; its family is NCCL_IB_ADDR_FAMILY; its address
 * lies in NCCL_IB_ADDR_RANGE if set; and its address is configured, in this process's
 * network namespace, on the interface the kernel associated with the entry (gid_attrs/ndevs).
 * The kernel only adds entries to a port's table for the port's netdev and for its upper
 * devices (ipvlan, macvlan, vlan) or, for a VF, the VF's own netdev, so "the entry's netdev
 * is here and carries the address" is what establishes "this pod's interface on this rail"
 * from inside a pod, where the parent netdev itself is invisible. When the entry's netdev
 * cannot be read at all (no sysfs file, no ifindex), the address alone must be configured on
 * some interface here; the reason says so.
 *
 * Nothing here logs; callers log the choice and its reason.
 */
#ifndef RAILNET_GID_H
#define RAILNET_GID_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/verbs.h"

#define RN_GID_WHY_MAX 320
#define RN_GID_STR_MAX 40 /* "xxxx:...:xxxx" (8 groups) plus NUL */

enum rn_gid_type {
	RN_GID_TYPE_UNKNOWN = 0, /* attributes unreadable (EINVAL: another namespace's entry) */
	RN_GID_TYPE_IB,
	RN_GID_TYPE_ROCE_V1,
	RN_GID_TYPE_ROCE_V2,
};

/* One GID table entry as this process sees it. */
struct rn_gid_entry {
	int index;
	uint8_t raw[16];
	int type;	     /* enum rn_gid_type */
	char ndev[IFNAMSIZ]; /* netdev of the entry, "" when unreadable or none */
	bool ndev_known;     /* the netdev could be read (even if it is "") */
};

/* One address of this network namespace. */
struct rn_ifaddr {
	char name[IFNAMSIZ];
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix; /* netmask length; -1 when unknown */
};

/* NCCL_IB_ADDR_RANGE, parsed. family 0: no range (everything matches). */
struct rn_addr_range {
	int family;
	uint8_t addr[16];
	int bits;
};

struct rn_gid_policy {
	int family;	  /* AF_INET or AF_INET6 (NCCL_IB_ADDR_FAMILY) */
	int roce_version; /* 1 or 2 (NCCL_IB_ROCE_VERSION_NUM) */
	struct rn_addr_range range;
	int gid_index; /* -1: choose; else the index to verify (NCCL_IB_GID_INDEX) */
};

enum rn_gid_verdict {
	RN_GID_OK = 0,
	RN_GID_ZERO,	      /* empty, or hidden by the kernel (another namespace's entry) */
	RN_GID_LINK_LOCAL,    /* fe80::/64: not routable */
	RN_GID_NO_ATTRS,      /* type unreadable: the kernel hides it from this namespace */
	RN_GID_WRONG_VERSION, /* RoCE v1 when v2 is wanted, or the reverse */
	RN_GID_WRONG_FAMILY,  /* IPv4-mapped when AF_INET6 is wanted, or the reverse */
	RN_GID_OUT_OF_RANGE,  /* outside NCCL_IB_ADDR_RANGE */
	RN_GID_NDEV_ABSENT,   /* its netdev is not an interface of this network namespace */
	RN_GID_ADDR_ABSENT,   /* its address is not configured on that interface here */
};

/* Short text of a verdict ("zero", "link-local", ...). */
const char *rn_gid_verdict_str(int verdict);

/* The chosen GID of one port. */
struct rn_gid_choice {
	int index;
	uint8_t raw[16];
	int type;		  /* enum rn_gid_type */
	char ifname[IFNAMSIZ];	  /* interface carrying the address ("" on InfiniBand) */
	int prefix;		  /* that address's netmask length (-1 unknown); 64 on IB */
	char why[RN_GID_WHY_MAX]; /* the reason, for INFO logs and the doctor */
};

/*
 * Is entry e usable under pol with these addresses? Returns an enum rn_gid_verdict; on
 * RN_GID_OK, *ifname (optional) gets the interface that carries the address.
 */
int rn_gid_judge(const struct rn_gid_entry *e, const struct rn_ifaddr *ifa, int nifa,
		 const struct rn_gid_policy *pol, const char **ifname);

/*
 * Choose the RoCE GID of dev/port from table[0..n) (table[i].index == i is not required).
 * pol->gid_index < 0: the lowest usable index. Otherwise that index, verified. Returns 0 and
 * *out; -ENOENT when no entry is usable, -EINVAL when the given index is not usable; on both
 * errors `why` says why and names the index that would work (if any).
 */
int rn_gid_select_roce(const struct rn_gid_entry *table, int n, const struct rn_ifaddr *ifa,
		       int nifa, const struct rn_gid_policy *pol, const char *dev, int port,
		       struct rn_gid_choice *out, char *why, size_t why_len);

/*
 * InfiniBand: GID 0, or index 1 when it holds a non-zero FLID (bytes 4-5), as NCCL does
 * (NCCL_IB_GID_INDEX is ignored on InfiniBand, as NCCL ignores it). -ENOENT when GID 0 is zero.
 */
int rn_gid_select_ib(const struct rn_gid_entry *table, int n, const char *dev, int port,
		     struct rn_gid_choice *out, char *why, size_t why_len);

/*
 * Parse NCCL_IB_ADDR_RANGE ("" or NULL = none): "address/prefix", IPv4 or IPv6, the prefix
 * decimal without a leading zero. 0 and *out, or -EINVAL with the reason in why (no variable
 * name, no value: the caller adds them; why may be NULL when why_len is 0) and *out
 * untouched. config.c checks NCCL_IB_ADDR_RANGE with this function, so a value it accepts
 * parses here too.
 */
int rn_addr_range_parse(const char *s, struct rn_addr_range *out, char *why, size_t why_len);
bool rn_addr_in_range(const struct rn_addr_range *r, int family, const uint8_t *addr);

/*
 * The family of the address a RoCE GID stands for: AF_INET for ::ffff:a.b.c.d (*addr points
 * at its 4 bytes), else AF_INET6 (*addr = raw).
 */
int rn_gid_family(const uint8_t raw[16], const uint8_t **addr);

/* GID as sysfs prints it (8 groups of 4 hex digits). */
void rn_gid_str(const uint8_t raw[16], char *buf, size_t len);
/* The address a RoCE GID stands for ("10.239.255.1", "fd00:224::a"). */
void rn_gid_addr_str(const uint8_t raw[16], char *buf, size_t len);
bool rn_gid_is_v4mapped(const uint8_t raw[16]);

/*
 * Read the GID table of dev/port (tbl_len entries) through the verbs ops and sysfs. Entries
 * the library cannot read become zero entries. Returns 0 and a malloc'd *table of *n entries,
 * or -ENOMEM. `ib` selects the InfiniBand meaning of "IB/RoCE v1" in sysfs.
 */
int rn_gid_table_read(const struct rn_verbs_ops *ops, struct ibv_context *vctx,
		      const char *sysfs_root, const char *dev, int port, int tbl_len, bool ib,
		      struct rn_gid_entry **table, int *n);

/* This network namespace's addresses (getifaddrs). 0 and malloc'd *list, or -errno. */
int rn_ifaddrs_get(struct rn_ifaddr **list, int *n);
/*
 * Addresses from a file of "<ifname> <address>[/<prefix>]" lines ('#' comments), the format
 * softverbs-fabric writes to VIEW/softverbs/ifaddrs. 0, or -errno (-EINVAL: line `*bad_line`).
 */
int rn_ifaddrs_load(const char *path, struct rn_ifaddr **list, int *n, int *bad_line);

#endif /* RAILNET_GID_H */
