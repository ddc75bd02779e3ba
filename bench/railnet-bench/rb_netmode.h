/* SPDX-License-Identifier: Apache-2.0 */
/*
 * State of --net mode shared by mode_net.c (loading, devices, rings) and net_p2p.c (rank-pair
 * bandwidth and latency). One instance per process; only the main thread touches it.
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
	char err[512];
};

double rb_netm_now(void);
/* A polling loop made no progress: yield, then sleep briefly; *idle counts such rounds. */
void rb_netm_idle(unsigned *idle);
/* Print "railnet-bench: rank R (host): <msg>" to stderr, keep it as the last error; returns
 * RB_EXIT_RUNTIME. */
int rb_netm_fail(struct rb_netm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rb_netm_load(struct rb_netm *m, struct rb_ctx *c);
int rb_netm_pick_dev(struct rb_netm *m, int local_rank, int *dev);
int rb_netm_listen_swap(struct rb_netm *m, int dev, int send_to, int recv_from, void **lc,
			void *hpeer);
int rb_netm_connect_pair(struct rb_netm *m, int dev, void *lc, void *hto, int to, int from,
			 void **scomm, void **rcomm);

/* net_p2p.c */
int rb_netm_p2p_check(struct rb_netm *m);
int rb_netm_p2p_run(struct rb_ctx *c);
void rb_netm_p2p_close(struct rb_netm *m);

#endif
