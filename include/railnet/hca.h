/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL_IB_HCA with NCCL's semantics: an optional leading '^' makes the list an exclude list,
 * then an optional '=' switches from name prefixes to exact names; entries are
 * comma-separated "dev[:port[:rail[:plane]]]" with empty numeric fields meaning "any" (port)
 * or "undefined" (rail, plane). A device port is kept iff it matches some entry XOR the list
 * excludes. Parsing is strict (NCCL silently ignores what it cannot read; railnet refuses it
 * with a reason). Pure functions: no I/O, no logging, thread-safe.
 */
#ifndef RAILNET_HCA_H
#define RAILNET_HCA_H

#include <stdbool.h>
#include <stddef.h>

#define RN_HCA_MAX_ENTRIES 32 /* NCCL's documented limit */
#define RN_HCA_NAME_MAX 64    /* IB_DEVICE_NAME_MAX, with the NUL */
#define RN_HCA_MAX_PORT 255
#define RN_HCA_MAX_ID 32767    /* rail and plane are int16 in the v12 properties */
#define RN_HCA_MAX_PLANE 16383 /* bit 14 marks merged planes (NCCL IB refuses it in a plane) */

struct rn_hca_entry {
	char name[RN_HCA_NAME_MAX];
	int port;  /* 1..255, or -1: any port */
	int rail;  /* 0..32767, or -1: undefined */
	int plane; /* 0..16383, or -1: undefined */
};

struct rn_hca_filter {
	bool exclude; /* leading '^' */
	bool exact;   /* '=' after the optional '^' */
	int n;	      /* 0: no filter, everything is kept */
	struct rn_hca_entry e[RN_HCA_MAX_ENTRIES];
};

/*
 * A character allowed in a name of NCCL's list syntax: ASCII letter or digit, '_', '-', '.'
 * (no locale). The one rule for device names here and interface names (NCCL_SOCKET_IFNAME).
 */
bool rn_hca_name_char(int c);

/*
 * Parse `s` (NULL or "" means no filter) into *out. Returns 0, or -EINVAL with a reason in
 * why (no variable name, no value: the caller adds them) and *out untouched.
 */
int rn_hca_parse(const char *s, struct rn_hca_filter *out, char *why, size_t why_len);

/*
 * Whether device `dev`, port `port` is kept. *entry (optional) gets the entry that matched
 * (for rail/plane), or NULL when none did (no filter, or an exclude list).
 */
bool rn_hca_keep(const struct rn_hca_filter *f, const char *dev, int port,
		 const struct rn_hca_entry **entry);

#endif /* RAILNET_HCA_H */
