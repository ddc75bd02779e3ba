/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters: per port (summed over every connection that used it) and per connection, kept
 * by the data path in its comms (xfer.h) and handed here as a snapshot when a comm closes. At
 * the last finalize, and every RAILNET_STATS_INTERVAL seconds, railnet writes them to
 * RAILNET_STATS (JSON, or Prometheus' text format for a .prom path) and at finalize logs one
 * summary line at INFO. Thread-safe (one mutex); nothing here runs on the per-message path.
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
 * A comm's counters as the data path hands them over (when it closes, and to a snapshot while
 * it lives): a plain copy, so that this module knows nothing of comms (xfer.c fills it,
 * rn_xfer_snapshot).
 */
struct rn_stats_comm {
	char name[RN_STATS_NAME_MAX];
	bool send; /* a send comm (else a receive comm) */
	int nports, nqps;
	struct {
		char dev[RN_STATS_DEV_MAX];
		int port;      /* ibv port number */
		uint32_t rail; /* the port's rail key, 0: unknown */
		struct rn_port_counters c;
	} port[RN_PROTO_MAX_PORTS];
};

/*
 * A live comm, known to the periodic snapshots (RAILNET_STATS_INTERVAL): snap fills *out from
 * arg; it runs on the snapshot thread with this module's lock held, so it reads counters the
 * data path writes with relaxed atomics, and the comm unregisters before it goes away.
 */
struct rn_stats_live {
	struct rn_stats_live *prev, *next;
	void (*snap)(const void *arg, struct rn_stats_comm *out);
	const void *arg;
};

void rn_stats_live_add(struct rn_stats_live *l);
void rn_stats_live_del(struct rn_stats_live *l);

/* Fold a closing comm's counters into the totals and keep its record. */
void rn_stats_add(const struct rn_stats_comm *s);
/* An init: the NCCL net API version in use (0: not through a table) and its commId. */
void rn_stats_note_init(int api, uint64_t comm_id);

/*
 * pattern with %h (host name), %p (pid) and %% expanded into out. 0, or -ENAMETOOLONG, or
 * -EINVAL for another '%' sequence (the configuration refuses those first).
 */
int rn_stats_expand(const char *pattern, char *out, size_t len);

/*
 * Start the snapshot thread: every interval_s seconds the file of pattern is written whole
 * (closed comms and live ones). 0, or -errno from pthread_create (one WARN). Nothing when
 * pattern is empty or interval_s is 0.
 */
int rn_stats_start(const char *pattern, int interval_s);
/* Stop it (before the last flush). */
void rn_stats_stop(void);

/*
 * Write the file of pattern ("" or NULL: none; a failure is one WARN) as the final snapshot,
 * log the summary line, then forget everything. Returns 0 or the -errno of writing the file.
 */
int rn_stats_flush(const char *pattern);

#endif /* RAILNET_STATS_H */
