/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --net mode's setup (net_setup.c), which its two tests build on: the collective rings
 * (mode_net.c) and the rank-pair tests (net_p2p.c), neither of which calls the other. One state
 * per process; only the main thread touches it. Functions returning int give 0 or an
 * enum rb_exit value after printing the reason (rb_netm_fail).
 */
#ifndef RB_NETMODE_H
#define RB_NETMODE_H

#include "rb.h"
#include "rb_net.h"

#define RB_NETM_MAX_DEVS 256

struct rb_netm {
	const struct rb_args *args;
	struct rb_net net;
	int rank, nranks, next, prev;
	char host[64];
	int nphys, ndevs; /* devices() before and after makeVDevice */
	struct rb_net_props props[RB_NETM_MAX_DEVS];
	int usable[RB_NETM_MAX_DEVS]; /* what NCCL would use: vdevs and unmerged ports */
	int nusable;
	int dev; /* the device of the ring */
	void *scomm, *rcomm;
	char *send, *recv, *slots;
	size_t bytes, slot_bytes;
	int nslots;
	void *mh_send_s, *mh_recv_s, *mh_slot_s, *mh_recv_r, *mh_slot_r;
	double slowest_s; /* the longest collective so far (rb_mode_net's slowest) */
	char err[512];
};

double rb_netm_now(void);
/* A polling loop made no progress: yield, then sleep briefly; *idle counts such rounds. */
void rb_netm_idle(unsigned *idle);
/* Print "railnet-bench: rank R (host): <msg>" to stderr, keep it as the last error; returns
 * RB_EXIT_RUNTIME. */
int rb_netm_fail(struct rb_netm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The struct rb_mode_ops members both --net tables share. */
int rb_netm_validate(const struct rb_args *a, char *err, size_t errlen);
/* Reset the state, make it c->mode (also *out), load the plugin, merge ports, pick m->dev. */
int rb_netm_open(struct rb_ctx *c, struct rb_netm **out);
/* The host buffers (send, recv, --slots slots of --chunk bytes), zeroed; not registered. */
int rb_netm_alloc(struct rb_netm *m, size_t bytes);
void rb_netm_describe(struct rb_ctx *c, int i, struct rb_device *d);
void rb_netm_versions(struct rb_ctx *c, struct rb_run_info *r);
const char *rb_netm_last_error(struct rb_ctx *c);
/* Close the plugin and free the buffers (the caller closed its comms first); c->mode = NULL. */
void rb_netm_close(struct rb_ctx *c);

/* Listen on dev, agree with every rank that it worked, and swap handles: mine to send_to, the
 * one of recv_from into hpeer. */
int rb_netm_listen_swap(struct rb_netm *m, int dev, int send_to, int recv_from, void **lc,
			void *hpeer);
/* Connect to `to` (its handle in hto) and accept from `from` on lc, driven alternately. */
int rb_netm_connect_pair(struct rb_netm *m, int dev, void *lc, void *hto, int to, int from,
			 void **scomm, void **rcomm);

#endif
