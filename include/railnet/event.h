/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asynchronous events of the device contexts railnet has open (IBV_EVENT_PORT_ERR and the
 * fatal ones), read without a thread of railnet's own: the data path drains a context's
 * event queue without blocking on its slow paths (an idle comm's periodic check, an error
 * completion). Each event is logged once (a port going down or a fatal event as a WARN, a
 * port coming back as INFO) and port states are remembered, so comms can move their traffic
 * off a port that went down before their QPs on it report errors. Thread-safe (one mutex).
 */
#ifndef RAILNET_EVENT_H
#define RAILNET_EVENT_H

#include <stdbool.h>

#include "railnet/verbs.h"

/*
 * Read every pending event of ctx (name: for logs), acknowledging each as it is read. Never
 * blocks on the queue; when ctx's queue was read in the last 2 ms (by any comm) it returns at
 * once (the port states it maintains stay readable).
 */
void rn_event_poll(struct ibv_context *ctx, const char *name);
/* Port `port` of ctx reported IBV_EVENT_PORT_ERR and no IBV_EVENT_PORT_ACTIVE since. */
bool rn_event_port_down(const struct ibv_context *ctx, int port);
/* ctx is closing: forget it. */
void rn_event_forget(const struct ibv_context *ctx);

#endif /* RAILNET_EVENT_H */
