/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection establishment: the glue of the OOB handshake (oob.h), the wire codec (wire.h)
 * and the QP layer (qp.h). A listener owns an OOB listening socket and, while accepting, one
 * in-progress acceptor at a time; a connector's in-progress state lives behind NCCL's handle buffer
 * (bytes 64..127, which the wire format leaves to the connector). The connector creates its
 * QP set (role SEND) and sends a HELLO built from rn_qp_set_info; the acceptor, when that
 * HELLO arrives, creates its QP set (role RECV, as many QPs as the connector announced,
 * striped over its own ports), connects it and replies; the connector connects its set to the
 * reply and sends READY. Each side also registers a "region" (params->region_bytes, zeroed,
 * page aligned) on every one of its ports and announces its address and per-port keys in its
 * HELLO: the data path (xfer.c) lets the peer RDMA-write into it (the sender's clear-to-send
 * FIFO, the receiver's size records). This file moves no data itself.
 *
 * Threads: none of these functions blocks; a connect or accept step returns 0 with a NULL
 * conn to be called again, so one thread may drive both ends alternately. Objects are not
 * thread-safe; each is driven by one thread at a time (NCCL's proxy thread).
 *
 * Errors: 0 or -errno. Every failure unwinds what was built (QP sets destroyed, sockets
 * closed, in-progress state freed) and is logged once, as a WARN, by the layer that found it.
 * Output parameters are written only on success.
 */
#ifndef RAILNET_CONN_H
#define RAILNET_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/oob.h"
#include "railnet/qp.h"

struct rn_conn_params {
	const struct rn_oob_if *iface; /* listener: interface to listen on; connector: unused */
	long timeout_ms;	       /* > 0: RAILNET_CONNECT_TIMEOUT x 1000 */
	int qps_per_port;	       /* NCCL_IB_QPS_PER_CONNECTION (connector: nqps = this x
					* its ports; the acceptor adopts the connector's count) */
	struct rn_qp_attr attr;	       /* from rn_qp_attr_from_config */
	int sockbuf;		       /* OOB socket buffers (test seam, see rn_oob_params) */
	size_t region_bytes;	       /* > 0: bytes of this side's region (see above) */
	bool flush;		       /* acceptor: also create the flush QPs (rn_qp_params) */
	int max_send_wr, max_recv_wr;  /* per QP, 0: the QP layer's defaults */
	int max_inline;		       /* per QP inline bytes (NCCL_IB_USE_INLINE), 0: none */
};

enum rn_conn_role {
	RN_CONN_SEND, /* from rn_conn_connect_step */
	RN_CONN_RECV, /* from rn_conn_accept_step */
};

/*
 * A connected connection: its QP set at RTS, its own region and what the peer announced
 * (rn_hello.fifo_addr and rn_hello_port.fifo_rkey carry the regions). Readable by the owner.
 */
struct rn_conn {
	int role; /* enum rn_conn_role */
	struct rn_qp_set *set;
	struct rn_qp_info remote; /* the peer's ports and QPs, as connected */
	void *region;		  /* ours; NULL when region_bytes was 0 */
	size_t region_bytes;
	struct ibv_mr *region_mr[RN_QP_MAX_PORTS]; /* per local port index */
	uint64_t remote_region;			   /* the peer's region address */
	uint32_t remote_rkey[RN_QP_MAX_PORTS];	   /* its key, per peer port index */
	int oob_fd; /* the handshake's socket, kept open (-1: none): its EOF or reset means the
		     * peer process is gone (the data path watches it); closed by rn_conn_close */
};

struct rn_conn_listener;

/*
 * Listen on params->iface and write NCCL's handle (RN_WIRE_HANDLE_BUF bytes) into handle.
 * ports[0..nports) (copied) are the local ports the accepted connection's QPs use; their
 * contexts must stay open until the connection is closed. A listener accepts any number of
 * connections (each connector with its own copy of the handle), one handshake at a time, until
 * rn_conn_listen_close.
 */
int rn_conn_listen(const struct rn_qp_port *ports, int nports, const struct rn_conn_params *params,
		   void *handle, struct rn_conn_listener **out);

/*
 * Drive the connector of handle (NCCL's RN_WIRE_HANDLE_BUF-byte buffer, passed again
 * unchanged on every call; its bytes 64..127 keep the in-progress state). Returns 0 with
 * *conn set when connected, 0 with *conn NULL to be called again, or -errno (the state is
 * freed and the handle's state bytes cleared). ports/nports/params are read on the first call
 * only.
 */
int rn_conn_connect_step(void *handle, const struct rn_qp_port *ports, int nports,
			 const struct rn_conn_params *params, struct rn_conn **conn);
/* handle holds a connector in progress (later calls need no ports or params). */
bool rn_conn_connect_pending(const void *handle);
/* Free a connector abandoned before it returned a conn or an error. Fine when there is none. */
void rn_conn_connect_abort(void *handle);

/*
 * Drive the acceptor of l. Returns 0 with *conn set when connected (the next call starts
 * waiting for the next connector), 0 with *conn NULL to be called again, or -errno for a
 * handshake that failed (its state is freed; the listener stays usable for the next one).
 */
int rn_conn_accept_step(struct rn_conn_listener *l, struct rn_conn **conn);

/* Destroy the QP set and free. NULL is fine. */
void rn_conn_close(struct rn_conn *c);
/* Free an in-progress acceptor, close the socket, free. NULL is fine. Independent of the
 * conn the listener returned. */
void rn_conn_listen_close(struct rn_conn_listener *l);

/*
 * The acceptor's pairing of QPs by rail: for each of remote's QPs, the index of the local port
 * on the rail of the remote QP's port (several such ports: in turn). Returns 1 with qp_port
 * filled (remote->nqps entries) when that differs from striping (QP i on port i % nports); 0
 * when striping is already right or the rails cannot say (a rail key unknown on either side,
 * why = ""; or a remote rail no local port is on, why = the reason, for one WARN).
 */
int rn_conn_rail_map(const struct rn_qp_port *ports, int nports, const struct rn_qp_info *remote,
		     int *qp_port, char *why, size_t why_len);

/*
 * The mapping between the QP layer's info and the handshake message, field by field (exposed
 * for tests). to_hello writes fifo_addr = 0 and fifo_rkey = 0 (filled by the data path later).
 * from_hello refuses (-EPROTO, reason in why) counts the QP layer cannot hold.
 */
void rn_conn_info_to_hello(const struct rn_qp_info *info, struct rn_hello *h);
int rn_conn_info_from_hello(const struct rn_hello *h, struct rn_qp_info *info, char *why,
			    size_t why_len);

#endif /* RAILNET_CONN_H */
