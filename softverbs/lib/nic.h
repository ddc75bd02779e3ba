/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NIC's connection object, shared by progress.c (which owns and frees it) and rdv.c (which
 * creates it when a QP connects or a peer says HELLO). Only the NIC thread touches a live
 * connection's buffers; application threads may only mark one dead under ctx->lock.
 */
#ifndef SV_NIC_H
#define SV_NIC_H

#include "sv.h"
#include "wire.h"

struct sv_conn {
	struct sv_ctx *ctx;
	struct sv_conn *next, *prev; /* ctx->conns */
	bool queued;		     /* in ctx->rdy */
	int fd;
	bool requester;	 /* we said HELLO: our QP's requests go out here */
	bool vm;	 /* responder moves payload with process_vm_readv/writev */
	bool hello_done; /* responder: HELLO accepted */
	bool dead;	 /* to be reaped by the NIC */
	bool failed;	 /* out of memory: to be marked dead */
	bool close_after_flush;
	/*
	 * Edge-triggered epoll state: set from the events of a round (progress.c sv_nic_events),
	 * cleared by the round that consumes it *before* the syscall that may hit EAGAIN, so no
	 * edge is ever lost.
	 */
	int readable, writable;
	/*
	 * A link between two QPs of this context (loopback on one device) has no socket (fd -1):
	 * the two connection objects point at each other and a flush moves bytes from one's
	 * output into the other's input, all under ctx->lock (progress.c, sv_conn_flush). NULL
	 * once the other end is gone, which reads as EOF.
	 */
	struct sv_conn *loop;
	pid_t peer_pid;
	struct sv_qp *qp; /* NULL once the QP is gone */

	char *in;
	size_t in_head, in_len, in_cap;
	char *out;
	size_t out_head, out_len, out_cap;

	bool ack_pending; /* responder: coalesced ACK not yet queued */
	uint32_t ack_msn;
	uint64_t copied;    /* responder: bytes moved since the last flush */
	uint64_t gpu_dirty; /* responder: GPU devices written since the last settle (bits) */

	/* responder, stream path: READ response being streamed out */
	bool rd_active;
	uint32_t rd_msn;
	uint32_t rd_key;
	uint64_t rd_addr, rd_len, rd_off;
};

int sv_conn_queue(struct sv_conn *c, const struct sv_hdr *h, const void *body, size_t len);
void sv_conn_mark_dead(struct sv_conn *c);

#endif
