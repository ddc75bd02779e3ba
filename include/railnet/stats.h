/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters: per port (summed over every connection that used it) and per connection, kept
 * by the data path in its comms (xfer.h) and handed here as a snapshot when a comm closes. At the last
 * finalize railnet writes them as JSON to RAILNET_STATS (when set) and logs one summary line
 * at INFO. Thread-safe (one mutex); nothing here runs on the per-message path.
 */
#ifndef RAILNET_STATS_H
#define RAILNET_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/proto.h"

#define RN_STATS_MAX_CONNS 4096 /* connection records kept; later ones only count in totals */
#define RN_STATS_NAME_MAX 96	/* a comm's device name ("mlx5_0+mlx5_1") */
#define RN_STATS_DEV_MAX 64	/* an RDMA device name */

/* Counters of one port of a comm, kept by the data path as it goes (xfer.c). */
struct rn_port_counters {
	uint64_t tx_bytes;  /* data bytes written by this side */
	uint64_t tx_msgs;   /* parts (sender) or clear-to-sends (receiver) posted */
	uint64_t rx_parts;  /* parts received (receiver) */
	uint64_t cqes;	    /* completions polled */
	uint64_t errors;    /* error completions */
	uint64_t failovers; /* QPs of this port declared dead */
	uint64_t port_err;  /* of those, on the port's IBV_EVENT_PORT_ERR (not a QP's retries) */
	uint64_t resent;    /* parts or clear-to-sends posted again on this port after a failover */
	uint64_t resend_skipped; /* parts of a dead QP of this port that the receiver already had */
};

/*
 * A comm's counters as the data path hands them over when the comm closes: a plain copy, so
 * that this module knows nothing of comms (xfer.c fills it, rn_xfer_snapshot).
 */
struct rn_stats_comm {
	char name[RN_STATS_NAME_MAX];
	bool send; /* a send comm (else a receive comm) */
	int nports, nqps;
	struct {
		char dev[RN_STATS_DEV_MAX];
		int port; /* ibv port number */
		struct rn_port_counters c;
	} port[RN_PROTO_MAX_PORTS];
};

/* Fold a closing comm's counters into the totals and keep its record. */
void rn_stats_add(const struct rn_stats_comm *s);
/*
 * Write the JSON document to path ("" or NULL: none; a failure is one WARN), log the summary
 * line, then forget everything. Returns 0 or the -errno of writing the file.
 */
int rn_stats_flush(const char *path);

#endif /* RAILNET_STATS_H */
