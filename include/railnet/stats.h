/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters: per port (summed over every connection that used it) and per connection, kept
 * by the data path in its comms (xfer.h) and collected here when a comm closes. At the last
 * finalize railnet writes them as JSON to RAILNET_STATS (when set) and logs one summary line
 * at INFO. Thread-safe (one mutex); nothing here runs on the per-message path.
 */
#ifndef RAILNET_STATS_H
#define RAILNET_STATS_H

#include <stddef.h>
#include <stdint.h>

struct rn_xcomm;

#define RN_STATS_MAX_CONNS 4096 /* connection records kept; later ones only count in totals */

/* Fold a closing comm's counters into the totals and keep its record. */
void rn_stats_add_comm(const struct rn_xcomm *c);
/*
 * Write the JSON document to path ("" or NULL: none; a failure is one WARN), log the summary
 * line, then forget everything. Returns 0 or the -errno of writing the file.
 */
int rn_stats_flush(const char *path);

#endif /* RAILNET_STATS_H */
