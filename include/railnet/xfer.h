/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path: send and receive comms over a connected rn_conn, NCCL's receiver-driven
 * "clear to send" protocol, registration handles, flush, failover between the QPs of a
 * connection, and the per-connection counters.
 *
 * Protocol (all little-endian host memory; both ends run the same build):
 *
 *   receiver                                     sender
 *   irecv(n buffers) -> id k, slot k % 32
 *     RDMA WRITE n rn_cts entries  ---------->   FIFO[slot][0..n)   (sender's region)
 *                                                isend: FIFO[slot][0].idx == k + 1 ? take the
 *                                                entry whose tag matches; when all n arrived:
 *                                   <---------   part 0: WRITE sizes record -> REC[slot]
 *                                   <---------   per part: WRITE data ..., last WRITE_WITH_IMM
 *   recv CQE per part (imm: slot, part, parts, seq); all parts in -> done, sizes = REC[slot]
 *
 * A message is cut into parts, each part carried by one QP: split mode (NCCL_IB_SPLIT_DATA_
 * ON_QPS=1) cuts it over every live QP of the connection in 128-byte-aligned chunks; round-robin
 * mode (=0) sends it whole on the next live QP. The receiver pre-posts receives on every QP and
 * learns from each immediate how many parts to wait for, so the sender may choose the QPs per
 * message: that is what lets traffic move off a failed port. A QP whose completion fails with
 * a link error (retry exceeded, flushed) is declared dead when the connection has another live
 * QP: both ends stop it (modify to ERR), the peer is told through a control word it polls, and
 * what was outstanding on it is delivered exactly once: the receiver reaps the QP's receives
 * and reports every slot's parts (proto.h, struct rn_fence_rep), and the sender posts again
 * only the parts the report lacks; clear-to-sends are posted again at once. With no live QP left, or any other error status, the comm fails:
 * one WARN with both GIDs, the QPN, port and status, and every later call returns -EREMOTEIO.
 * Every 10 ms of progress a comm reads its ports' async events and peeks at the handshake's
 * socket (rn_conn.oob_fd): a port that went down fails its QPs over, and a peer whose socket
 * closed fails the pending requests 100 ms later with -ECONNRESET. A comm that waits without
 * progress for RAILNET_KEEPALIVE_MS posts a zero-byte RDMA WRITE on each live QP, so a peer
 * whose link died is noticed within the QP timeout x retries.
 *
 * Threads: a comm is driven by one thread at a time (NCCL's proxy thread). isend/irecv/test
 * allocate nothing; besides the verbs calls, they read the clock every 16 calls and, every
 * 10 ms, make the non-blocking checks above (event.c's lock, a read and a recv). Registration
 * (rn_xfer_reg) goes through the mutex-protected cache of mr.h.
 *
 * Errors: 0 or -errno, one WARN per failure; a failed comm returns -EREMOTEIO, or -ECONNRESET
 * when its peer is gone (both ncclRemoteError).
 */
#ifndef RAILNET_XFER_H
#define RAILNET_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/conn.h"
#include "railnet/mr.h"
#include "railnet/proto.h"
#include "railnet/stats.h"

#define RN_XFER_SLOTS RN_PROTO_SLOTS	     /* receives in flight per comm */
#define RN_XFER_MAX_RECVS RN_PROTO_MAX_RECVS /* maxRecvs */
#define RN_XFER_ALIGN 128		     /* split chunks are multiples of this */
#define RN_XFER_MAX_WR (1u << 30)	     /* bytes of one work request */
#define RN_XFER_SEND_WR 512  /* send queue depth of every data QP (NCCL IB: 2 x 256) */
#define RN_XFER_RECV_WR 512  /* receives pre-posted on every receiver QP (>= RN_XFER_SLOTS) */
#define RN_XFER_MAX_FLUSH 64 /* flush requests in flight per receive comm */
#define RN_XFER_INLINE 512   /* QP inline bytes with NCCL_IB_USE_INLINE: 8 CTS entries */
/* Requests of a receive comm: receives and flushes the caller has not tested yet */
#define RN_XFER_RECV_REQS (RN_XFER_SLOTS + RN_XFER_MAX_FLUSH)

enum rn_flush_mode {
	RN_FLUSH_AUTO,	 /* flush GPU buffers (when GPUDirect RDMA is possible) */
	RN_FLUSH_ALWAYS, /* flush every non-empty receive, host memory too */
	RN_FLUSH_OFF,
};

struct rn_xfer_params {
	bool split;	   /* NCCL_IB_SPLIT_DATA_ON_QPS */
	long keepalive_ms; /* RAILNET_KEEPALIVE_MS; 0: never probe */
	int flush;	   /* enum rn_flush_mode */
	bool gdr;	   /* GPU memory may be registered (ptrSupport has CUDA) */
	bool inline_cts;   /* NCCL_IB_USE_INLINE: clear-to-send entries posted inline */
	char name[96];	   /* device name, for logs and stats */
	int nic;	   /* net.c's device (rn_numbering.nics[] index) */
};

/*
 * A registration handle (NCCL's mhandle): one cache reference per port of the comm. The comm
 * keeps a list of its live handles; when it is closed before they are deregistered, they
 * become "orphans": still valid on every comm of the device (regIsGlobal), and released by
 * deregMr (with any comm pointer, even the closed one's, which is then not looked at) or by
 * the last finalize.
 */
struct rn_mh {
	uint32_t magic;
	struct rn_xcomm *owner;	   /* NULL once orphaned */
	struct rn_mh *prev, *next; /* owner's list, or the orphan list; under one lock */
	int type;		   /* RN_PTR_HOST or RN_PTR_CUDA */
	uintptr_t addr;
	size_t size;
	int nports;
	struct ibv_context *ctx[RN_QP_MAX_PORTS];
	struct rn_mr_ent *ent[RN_QP_MAX_PORTS];
	struct rn_mr_key key[RN_QP_MAX_PORTS];
};

struct rn_xcomm; /* a send or receive comm */
struct rn_xreq;	 /* a request */

/*
 * Make a comm of a connected conn (the comm owns it from then on, also on failure).
 * rn_xfer_close destroys both.
 */
int rn_xfer_create(struct rn_conn *conn, const struct rn_xfer_params *p, struct rn_xcomm **out);
void rn_xfer_close(struct rn_xcomm *c);
/* c is a live comm of that role (RN_CONN_SEND / RN_CONN_RECV); -1 for either. */
bool rn_xfer_valid(const void *c, int role);

int rn_xfer_reg(struct rn_xcomm *c, void *data, size_t size, int type, int fd, uint64_t offset,
		struct rn_mh **out);
int rn_xfer_dereg(struct rn_xcomm *c, struct rn_mh *mh);
/*
 * deregMr of a handle whose comm was closed first: true when p is such an orphan (released and
 * freed then); false for anything else, which is not touched (p is compared, never read).
 */
bool rn_xfer_orphan_dereg(const void *p);
/* Release and free every orphan (the last finalize). Returns how many there were. */
int rn_xfer_orphans_free(void);
bool rn_xfer_mh_valid(const void *mh);

int rn_xfer_isend(struct rn_xcomm *c, void *data, size_t size, int tag, struct rn_mh *mh,
		  struct rn_xreq **req);
/* eager: NCCL's optional-completion hint (n == 1 only): the request reports done at once. */
int rn_xfer_irecv(struct rn_xcomm *c, int n, void **data, const size_t *sizes, const int *tags,
		  struct rn_mh **mh, bool eager, struct rn_xreq **req);
int rn_xfer_iflush(struct rn_xcomm *c, int n, void **data, const int *sizes, struct rn_mh **mh,
		   struct rn_xreq **req);
/* done: 0/1; sizes (may be NULL): bytes of each buffer (send: one). */
int rn_xfer_test(struct rn_xreq *r, int *done, int *sizes);
bool rn_xfer_req_valid(const void *r);

/* The parameters c was made with. */
const struct rn_xfer_params *rn_xfer_params_of(const struct rn_xcomm *c);

/* c's counters so far, as a plain copy (what rn_xfer_close hands to stats.h). */
void rn_xfer_snapshot(const struct rn_xcomm *c, struct rn_stats_comm *out);

#endif /* RAILNET_XFER_H */
