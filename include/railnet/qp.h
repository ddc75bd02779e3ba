/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The QP layer: one connection's "QP set" over the ports of a (virtual) device. Per port it
 * holds the context's protection domain (shared by every set and, later, the MR cache of that
 * context: rn_pd_acquire), one CQ and optionally one self-connected flush QP; and nqps RC QPs
 * striped over the ports (QP i on port i % nports). It creates the QPs (RESET->INIT), exports
 * what the peer needs (struct rn_qp_info), checks the peer's info and connects (INIT->RTR->RTS)
 * with NCCL's attributes (reference nccl-net-api.md §4.5, §4.7). It does not move bytes, post
 * work requests, poll CQs or encode anything for the wire: conn.c carries struct rn_qp_info
 * through the wire codec, xfer.c posts and polls on the QPs and CQs exposed here.
 *
 * Callers and threads: conn.c's listen/connect/accept state machines create, connect and
 * destroy a set from the thread that drives that comm (NCCL's proxy thread); one set is never
 * used by two threads at once and these functions take no lock for it. rn_pd_acquire and
 * rn_pd_release are thread-safe (one mutex) because sets of different comms share a PD.
 *
 * Every function returns 0 or a negative errno and writes output parameters only on success.
 * Every failure the user can see is logged once, here, as a WARN naming the device, port, QPN
 * and the verbs errno text; callers do not log it again.
 */
#ifndef RAILNET_QP_H
#define RAILNET_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "railnet/config.h"
#include "railnet/device.h"
#include "railnet/proto.h"
#include "railnet/verbs.h"

#define RN_QP_MAX_PORTS RN_PROTO_MAX_PORTS /* ports of one virtual device (proto.h) */
#define RN_QP_MAX_QPS RN_PROTO_MAX_QPS	   /* QPs of one connection (proto.h) */

/* Default queue depths (NCCL: 2 x NCCL_NET_MAX_REQUESTS sends, NCCL_NET_MAX_REQUESTS recvs). */
#define RN_QP_DEF_SEND_WR 512
#define RN_QP_DEF_RECV_WR 256

/*
 * One local port a set may use. The caller opens the device (rn_verbs()->open_device) and
 * keeps the context open until every set on it is destroyed; rn_qp_port_query fills the rest
 * from the device, with the GID index discovery chose (rn_port.gid.index).
 */
struct rn_qp_port {
	struct ibv_context *ctx;
	char name[RN_DEV_NAME_MAX]; /* device name, for logs */
	int port;		    /* ibv port number (1-based) */
	int gid_index;		    /* local GID index: sgid_index of the GRH on RoCE */
	uint8_t gid[16];	    /* GID at gid_index (network order, as verbs has it) */
	uint16_t lid;		    /* host order; 0 on RoCE */
	int mtu;		    /* active MTU, enum ibv_mtu */
	int link_layer;		    /* IBV_LINK_LAYER_INFINIBAND or IBV_LINK_LAYER_ETHERNET */
	uint32_t rail;		    /* the port's rail key (rn_port.rail_key), 0: unknown; set
				     * by the caller, rn_qp_port_query leaves it 0 */
};

/*
 * Query port `port` of the open ctx and its GID at gid_index into *out. -ENODATA (with a WARN)
 * when that GID is zero or unreadable, -EINVAL for a port or index out of range, else the
 * query's -errno (WARN).
 */
int rn_qp_port_query(struct ibv_context *ctx, const char *name, int port, int gid_index,
		     struct rn_qp_port *out);

/*
 * Connection attributes, NCCL's meaning. rn_qp_attr_from_config derives them from the
 * configuration and the communicator's traffic class (negative: undefined):
 * SL = NCCL_IB_SL if set, else the traffic class if defined, else 0; TC (GRH traffic_class on
 * RoCE) likewise from NCCL_IB_TC; timeout, retry count and pkey index from NCCL_IB_TIMEOUT,
 * NCCL_IB_RETRY_CNT and NCCL_IB_PKEY.
 */
struct rn_qp_attr {
	int pkey_index;
	uint8_t timeout;   /* 4.096 us x 2^timeout */
	uint8_t retry_cnt; /* 0..7 */
	uint8_t sl;	   /* 0..15 */
	uint8_t tc;	   /* 0..255 */
};

void rn_qp_attr_from_config(const struct rn_config *cfg, int traffic_class, struct rn_qp_attr *out);

/*
 * QPs of one connection: max(local ports, remote ports) x NCCL_IB_QPS_PER_CONNECTION, as NCCL
 * counts them. Both ends compute it from the port counts exchanged before the QPs are created,
 * so they agree. -ERANGE (WARN naming the three numbers) above RN_QP_MAX_QPS, -EINVAL for a
 * port count outside 1..RN_QP_MAX_PORTS or per_port < 1.
 */
int rn_qp_count(int local_ports, int remote_ports, int per_port, int *nqps);

enum rn_qp_role {
	RN_QP_ROLE_SEND, /* sender data QPs: access REMOTE_WRITE (the receiver's CTS writes) */
	RN_QP_ROLE_RECV, /* receiver QPs: access REMOTE_WRITE | REMOTE_READ */
};

struct rn_qp_params {
	int role;	 /* enum rn_qp_role */
	int nqps;	 /* from rn_qp_count; 1..RN_QP_MAX_QPS */
	int max_send_wr; /* per QP; 0: RN_QP_DEF_SEND_WR */
	int max_recv_wr; /* per QP; 0: RN_QP_DEF_RECV_WR for RECV, none for SEND */
	int max_inline;	 /* per QP inline bytes (NCCL_IB_USE_INLINE); 0: none */
	bool flush;	 /* also one self-connected flush QP per port (receiver, GPU flush) */
	struct rn_qp_attr attr;
	const int *qp_port; /* NULL: QP i on port i % nports; else on port qp_port[i] (the
			     * acceptor pairs its QPs with the connector's by rail) */
};

/*
 * What a peer needs to connect to a set; plain host-order fixed-width fields, no pointers.
 * Written by rn_qp_set_info on one side, carried by the wire codec (conn.c) unchanged, read by
 * rn_qp_set_connect on the other side, which treats it as untrusted and checks every count
 * and index before using it.
 */
struct rn_qp_port_info {
	uint8_t gid[16];    /* the port's GID (network order) */
	uint32_t gid_index; /* informational: the peer's own sgid_index */
	uint32_t mtu;	    /* active MTU, enum ibv_mtu (1 = 256 ... 5 = 4096) */
	uint16_t lid;	    /* InfiniBand LID; 0 on RoCE */
	uint8_t port_num;   /* ibv port number on the peer */
	uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND (1) or IBV_LINK_LAYER_ETHERNET (2) */
	uint32_t rail;	    /* the port's rail key, 0: unknown (rn_qp_port.rail) */
};

struct rn_qp_qp_info {
	uint32_t qpn;  /* 24-bit QP number */
	uint32_t psn;  /* 24-bit initial send PSN: the peer's rq_psn */
	uint32_t port; /* index into rn_qp_info.port[] (i % nports, or the rail pairing's) */
};

struct rn_qp_info {
	uint32_t nports; /* 1..RN_QP_MAX_PORTS */
	uint32_t nqps;	 /* 1..RN_QP_MAX_QPS; must equal the local set's */
	struct rn_qp_port_info port[RN_QP_MAX_PORTS];
	struct rn_qp_qp_info qp[RN_QP_MAX_QPS];
};

/* A set, readable by its owner (xfer.c posts on qp[i].qp, polls port[p].cq); never written. */
struct rn_qp_set_port {
	struct rn_qp_port dev; /* copy of the caller's description */
	struct ibv_pd *pd;     /* the context's shared PD (rn_pd_acquire) */
	struct ibv_cq *cq;     /* this set's CQ for the port's QPs and its flush QP */
	struct ibv_qp *flush;  /* self-connected, LOCAL_WRITE | REMOTE_READ; NULL unless asked */
};

struct rn_qp_ent {
	struct ibv_qp *qp;
	int port;	 /* index into rn_qp_set.port[]: i % nports, or rn_qp_params.qp_port[i] */
	uint32_t psn;	 /* our initial send PSN */
	int remote_port; /* index into the peer's ports; -1 until connected */
};

struct rn_qp_set {
	int role;
	int nports;
	int nqps;
	bool connected;
	struct rn_qp_attr attr;
	struct rn_qp_set_port port[RN_QP_MAX_PORTS];
	struct rn_qp_ent qp[RN_QP_MAX_QPS];
};

/*
 * Create a set on ports[0..nports-1] (copied): per port the shared PD and a CQ, then nqps RC
 * QPs moved to INIT (pkey index, port, access by role), then the flush QPs (connected to
 * themselves, so already RTS) when p->flush. -EINVAL for bad arguments; otherwise the verbs
 * -errno after one WARN; on failure everything created is destroyed again.
 */
int rn_qp_set_create(const struct rn_qp_port *ports, int nports, const struct rn_qp_params *p,
		     struct rn_qp_set **out);

/* Export what the peer needs to connect (every field of *out written). */
void rn_qp_set_info(const struct rn_qp_set *set, struct rn_qp_info *out);

/*
 * Connect QP i to the peer's QP i: INIT->RTR (path MTU = min of both ports, dest qpn, rq_psn,
 * max_dest_rd_atomic 1, min_rnr_timer 12; RoCE: GRH with dgid, sgid_index, hop_limit 255,
 * traffic class attr.tc; InfiniBand: dlid, SL attr.sl) then RTR->RTS (sq_psn, timeout,
 * retry_cnt, rnr_retry 7, max_rd_atomic 1). The peer's info is checked first and nothing is
 * modified when it is refused: -EPROTO with a WARN giving the reason (nqps differs, a count or
 * port index out of range, link layers differ — naming both). A verbs failure: its -errno
 * after a WARN; the set is then only good for rn_qp_set_destroy. -EALREADY if connected.
 */
int rn_qp_set_connect(struct rn_qp_set *set, const struct rn_qp_info *remote);

/* Destroy QPs, flush QPs, CQs, then release the PDs; NULL is fine. Never fails (errors: WARN). */
void rn_qp_set_destroy(struct rn_qp_set *set);

/*
 * The protection domain of an open context, shared and reference counted: the first acquire
 * allocates it (WARN and -errno on failure), each acquire is paired with one release, the last
 * release deallocates it. Thread-safe. rn_pd_refs: current references of ctx (0 if none; for
 * tests and the leak checks).
 */
int rn_pd_acquire(struct ibv_context *ctx, const char *name, struct ibv_pd **pd);
void rn_pd_release(struct ibv_pd *pd);
int rn_pd_refs(const struct ibv_context *ctx);

#endif /* RAILNET_QP_H */
