/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire format, alone: the listen handle NCCL ships through its bootstrap, and the
 * out-of-band handshake messages (HELLO both ways, READY from the connector). Every integer
 * is little-endian on the wire, whatever the host; the structs below describe the layout
 * byte for byte (natural alignment, explicit reserved fields, no compiler padding) and are
 * only ever filled through rn_wire_*_encode and read through rn_wire_*_decode, which convert
 * byte order and validate everything. Decoders treat their input as untrusted: they return
 * -EPROTO when the peer speaks another protocol or version (magic, version), -EBADMSG when
 * the bytes are malformed (lengths, counts over the limits, reserved bits set, checksum),
 * with a reason string, and never write their output on failure.
 *
 * Changing any layout means bumping RN_WIRE_VERSION; version 1 peers refuse other versions.
 */
#ifndef RAILNET_WIRE_H
#define RAILNET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "railnet/proto.h"

/*
 * 2: the handle carries the listener's port count. 3: port entries carry the rail key, CTS
 * entries hold 8 rkeys (proto.h).
 */
#define RN_WIRE_VERSION 3

#define RN_WIRE_HANDLE_MAGIC 0x484e5252u /* bytes "RRNH" on the wire */
#define RN_WIRE_MSG_MAGIC 0x4d4e5252u	 /* bytes "RRNM" on the wire */

/* NCCL's handle buffer (NCCL_NET_HANDLE_MAXSIZE); railnet's encoded handle fits in front. */
#define RN_WIRE_HANDLE_BUF 128

/* Limits a decoder enforces (a peer announcing more is refused). */
#define RN_WIRE_MAX_PORTS RN_PROTO_MAX_PORTS /* ports of one connection (proto.h) */
#define RN_WIRE_MAX_QPS RN_PROTO_MAX_QPS     /* QPs of one connection (proto.h) */
#define RN_WIRE_QPN_MASK 0xffffffu	     /* QPNs and PSNs are 24-bit */

enum rn_wire_af {
	RN_WIRE_AF_INET = 4,
	RN_WIRE_AF_INET6 = 6,
};

enum rn_wire_msg_type {
	RN_WIRE_MSG_HELLO = 1, /* connector -> acceptor, then acceptor -> connector */
	RN_WIRE_MSG_READY = 2, /* connector -> acceptor, last message */
};

/* Link layer values are libibverbs' (IBV_LINK_LAYER_*). */
enum rn_wire_link_layer {
	RN_WIRE_LL_INFINIBAND = 1,
	RN_WIRE_LL_ETHERNET = 2,
};

/* ---- the listen handle (64 bytes, first bytes of NCCL's 128-byte handle buffer) -------- */

/*
 * Written by the listener (rn_oob_listen), carried by NCCL's bootstrap, read by the
 * connector. The checksum is CRC-32C (Castagnoli) over bytes 0..59. Bytes 64..127 of NCCL's
 * buffer are not part of the wire format: the listener zeroes them and the connector may use
 * them as local state between its non-blocking calls (NCCL passes the same buffer again).
 */
struct rn_wire_handle {
	uint32_t magic;	   /* 0: RN_WIRE_HANDLE_MAGIC. listener writes, connector checks */
	uint16_t version;  /* 4: RN_WIRE_VERSION. listener writes, connector checks */
	uint16_t length;   /* 6: sizeof(struct rn_wire_handle). listener writes, connector checks */
	uint16_t family;   /* 8: enum rn_wire_af. listener writes, connector connects with it */
	uint16_t port;	   /* 10: TCP port (host value, LE on the wire). listener, connector */
	uint32_t scope_id; /* 12: IPv6 scope (0 for IPv4). listener writes, connector uses */
	uint8_t addr[16];  /* 16: IPv4 in bytes 0..3 (rest zero) or IPv6, network order */
	uint64_t nonce;	   /* 32: random listener id. listener writes; connector echoes it in
			       * HELLO and READY, the acceptor refuses a connection without it */
	uint8_t nports;	   /* 40: ports of the listening device (0: not said), at most
			       * RN_WIRE_MAX_PORTS. listener writes; connector sizes its QPs by it */
	uint8_t reserved[19]; /* 41: zero. listener writes zeros, connector checks */
	uint32_t crc;	      /* 60: CRC-32C of bytes 0..59. listener writes, connector checks */
};

_Static_assert(sizeof(struct rn_wire_handle) == 64, "handle is 64 bytes");
_Static_assert(sizeof(struct rn_wire_handle) <= RN_WIRE_HANDLE_BUF, "handle fits NCCL's buffer");
_Static_assert(offsetof(struct rn_wire_handle, version) == 4, "handle.version");
_Static_assert(offsetof(struct rn_wire_handle, length) == 6, "handle.length");
_Static_assert(offsetof(struct rn_wire_handle, family) == 8, "handle.family");
_Static_assert(offsetof(struct rn_wire_handle, port) == 10, "handle.port");
_Static_assert(offsetof(struct rn_wire_handle, scope_id) == 12, "handle.scope_id");
_Static_assert(offsetof(struct rn_wire_handle, addr) == 16, "handle.addr");
_Static_assert(offsetof(struct rn_wire_handle, nonce) == 32, "handle.nonce");
_Static_assert(offsetof(struct rn_wire_handle, nports) == 40, "handle.nports");
_Static_assert(offsetof(struct rn_wire_handle, reserved) == 41, "handle.reserved");
_Static_assert(offsetof(struct rn_wire_handle, crc) == 60, "handle.crc");

#define RN_WIRE_HANDLE_SIZE ((size_t)sizeof(struct rn_wire_handle))

/* ---- handshake messages: a 16-byte header, then the body --------------------------------- */

struct rn_wire_msg_hdr {
	uint32_t magic;	   /* 0: RN_WIRE_MSG_MAGIC. sender writes, receiver checks */
	uint16_t version;  /* 4: RN_WIRE_VERSION. sender writes, receiver checks */
	uint16_t type;	   /* 6: enum rn_wire_msg_type. sender writes, receiver checks */
	uint32_t length;   /* 8: whole message in bytes, header included. receiver reads the
			    * rest of the message by it, after checking it against the type */
	uint32_t reserved; /* 12: zero. sender writes, receiver checks */
};

_Static_assert(sizeof(struct rn_wire_msg_hdr) == 16, "header is 16 bytes");
_Static_assert(offsetof(struct rn_wire_msg_hdr, version) == 4, "hdr.version");
_Static_assert(offsetof(struct rn_wire_msg_hdr, type) == 6, "hdr.type");
_Static_assert(offsetof(struct rn_wire_msg_hdr, length) == 8, "hdr.length");
_Static_assert(offsetof(struct rn_wire_msg_hdr, reserved) == 12, "hdr.reserved");

/*
 * HELLO body, fixed part. Followed by nports struct rn_wire_port, then nqps struct
 * rn_wire_qp; the header's length must be exactly that sum. Written by each side about
 * itself, read by the other.
 */
struct rn_wire_hello {
	uint64_t nonce;	    /* 0: the handle's nonce, echoed. acceptor checks (stray refused);
			     * connector checks the acceptor's echo */
	uint64_t fifo_addr; /* 8: connector: its CTS FIFO address; acceptor: its completion-
			     * records address (0 = none). read by the peer for RDMA writes */
	uint16_t nports;    /* 16: 1..RN_WIRE_MAX_PORTS port entries follow */
	uint16_t nqps;	    /* 18: 1..RN_WIRE_MAX_QPS QP entries follow the ports */
	uint32_t flags;	    /* 20: capability bits; none defined in version 1, must be zero */
	uint64_t reserved;  /* 24: zero */
};

_Static_assert(sizeof(struct rn_wire_hello) == 32, "hello is 32 bytes");
_Static_assert(offsetof(struct rn_wire_hello, fifo_addr) == 8, "hello.fifo_addr");
_Static_assert(offsetof(struct rn_wire_hello, nports) == 16, "hello.nports");
_Static_assert(offsetof(struct rn_wire_hello, nqps) == 18, "hello.nqps");
_Static_assert(offsetof(struct rn_wire_hello, flags) == 20, "hello.flags");
_Static_assert(offsetof(struct rn_wire_hello, reserved) == 24, "hello.reserved");

/* One port of the sender's (virtual) device. Written by its owner, read by the peer. */
struct rn_wire_port {
	uint8_t gid[16];     /* 0: GID the sender chose; the peer's RTR dgid (RoCE / GRH) */
	uint16_t lid;	     /* 16: port LID (IB); the peer's RTR dlid. 0 on RoCE */
	uint8_t port_num;    /* 18: HCA port number (1..255), for the peer's logs */
	uint8_t link_layer;  /* 19: enum rn_wire_link_layer; both link layers must match */
	uint8_t mtu;	     /* 20: active MTU as enum ibv_mtu (1..5); path MTU = min of both */
	uint8_t reserved[3]; /* 21: zero */
	uint32_t fifo_rkey;  /* 24: rkey of fifo_addr's registration on this port */
	uint32_t rail;	     /* 28: the port's rail key (0: unknown). owner writes; the acceptor
			      * puts each QP on its port of the connector's port's rail */
};

_Static_assert(sizeof(struct rn_wire_port) == 32, "port entry is 32 bytes");
_Static_assert(offsetof(struct rn_wire_port, lid) == 16, "port.lid");
_Static_assert(offsetof(struct rn_wire_port, port_num) == 18, "port.port_num");
_Static_assert(offsetof(struct rn_wire_port, link_layer) == 19, "port.link_layer");
_Static_assert(offsetof(struct rn_wire_port, mtu) == 20, "port.mtu");
_Static_assert(offsetof(struct rn_wire_port, fifo_rkey) == 24, "port.fifo_rkey");
_Static_assert(offsetof(struct rn_wire_port, rail) == 28, "port.rail");

/* One RC QP of the sender. Written by its owner, read by the peer for RTR. */
struct rn_wire_qp {
	uint32_t qpn;	     /* 0: QP number (24-bit); the peer's RTR dest_qp_num */
	uint32_t psn;	     /* 4: the sender's initial send PSN (24-bit); the peer's rq_psn */
	uint16_t port_index; /* 8: index into the sender's port entries (< nports) */
	uint16_t reserved;   /* 10: zero */
	uint32_t ece;	     /* 12: ECE options (0 = none / unsupported) */
};

_Static_assert(sizeof(struct rn_wire_qp) == 16, "QP entry is 16 bytes");
_Static_assert(offsetof(struct rn_wire_qp, psn) == 4, "qp.psn");
_Static_assert(offsetof(struct rn_wire_qp, port_index) == 8, "qp.port_index");
_Static_assert(offsetof(struct rn_wire_qp, ece) == 12, "qp.ece");

/* READY body: the connector's QPs are at RTS; the acceptor may return its comm. */
struct rn_wire_ready {
	uint64_t nonce;	   /* 0: the handle's nonce. connector writes, acceptor checks */
	uint32_t status;   /* 8: 0 in version 1 (reserved for a refusal code). acceptor checks */
	uint32_t reserved; /* 12: zero */
};

_Static_assert(sizeof(struct rn_wire_ready) == 16, "ready is 16 bytes");
_Static_assert(offsetof(struct rn_wire_ready, status) == 8, "ready.status");
_Static_assert(offsetof(struct rn_wire_ready, reserved) == 12, "ready.reserved");

#define RN_WIRE_HELLO_MIN                                                \
	(sizeof(struct rn_wire_msg_hdr) + sizeof(struct rn_wire_hello) + \
	 sizeof(struct rn_wire_port) + sizeof(struct rn_wire_qp))
#define RN_WIRE_HELLO_MAX                                                \
	(sizeof(struct rn_wire_msg_hdr) + sizeof(struct rn_wire_hello) + \
	 RN_WIRE_MAX_PORTS * sizeof(struct rn_wire_port) +               \
	 RN_WIRE_MAX_QPS * sizeof(struct rn_wire_qp))
#define RN_WIRE_READY_SIZE (sizeof(struct rn_wire_msg_hdr) + sizeof(struct rn_wire_ready))
/* Largest message: what a receive buffer must hold. */
#define RN_WIRE_MSG_MAX RN_WIRE_HELLO_MAX

/* ---- host-side views (what encoders take and decoders give) ------------------------------ */

struct rn_handle_info {
	int family;    /* AF_INET or AF_INET6 */
	uint16_t port; /* host order */
	uint32_t scope_id;
	uint8_t addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint64_t nonce;
	int nports; /* the listener's ports, 0..RN_WIRE_MAX_PORTS (0: not said) */
};

struct rn_hello_port {
	uint8_t gid[16];
	uint16_t lid;
	uint8_t port_num;
	uint8_t link_layer;
	uint8_t mtu;
	uint32_t fifo_rkey;
	uint32_t rail;
};

struct rn_hello_qp {
	uint32_t qpn;
	uint32_t psn;
	uint16_t port_index;
	uint32_t ece;
};

struct rn_hello {
	uint64_t nonce;
	uint64_t fifo_addr;
	uint32_t flags;
	int nports;
	int nqps;
	struct rn_hello_port ports[RN_WIRE_MAX_PORTS];
	struct rn_hello_qp qps[RN_WIRE_MAX_QPS];
};

/* CRC-32C (Castagnoli, reflected, init and final xor ~0) of len bytes. */
uint32_t rn_wire_crc32c(const void *buf, size_t len);

/*
 * Encode the handle into buf (RN_WIRE_HANDLE_SIZE bytes). Returns 0, or -EINVAL when the
 * info itself is out of range (family, IPv4 with bytes 4..15 set).
 */
int rn_wire_handle_encode(const struct rn_handle_info *info, void *buf);
/*
 * Decode and validate len bytes. len must equal RN_WIRE_HANDLE_SIZE (more is trailing
 * junk, less is truncated). Returns 0 and fills *out; -EPROTO (magic, version) or -EBADMSG
 * (length, family, port 0, port count, reserved, CRC) with a reason in why.
 */
int rn_wire_handle_decode(const void *buf, size_t len, struct rn_handle_info *out, char *why,
			  size_t why_len);

/* Bytes the HELLO for h takes on the wire. */
size_t rn_wire_hello_size(const struct rn_hello *h);
/*
 * Encode a HELLO into buf (cap bytes). Returns 0 and sets *out_len; -EINVAL when h breaks the
 * limits (counts, 24-bit fields, port_index, link layer); -ENOSPC when cap is too small.
 */
int rn_wire_hello_encode(const struct rn_hello *h, void *buf, size_t cap, size_t *out_len);
int rn_wire_ready_encode(uint64_t nonce, void *buf, size_t cap, size_t *out_len);

/*
 * Validate a message header (the first sizeof(struct rn_wire_msg_hdr) bytes; len must be at
 * least that). Returns 0 and sets *type and *total (the whole message's length, checked
 * against the bounds of its type); -EPROTO / -EBADMSG with a reason.
 */
int rn_wire_hdr_decode(const void *buf, size_t len, int *type, size_t *total, char *why,
		       size_t why_len);
/* Decode a whole HELLO / READY message (header included) of exactly len bytes. */
int rn_wire_hello_decode(const void *buf, size_t len, struct rn_hello *out, char *why,
			 size_t why_len);
int rn_wire_ready_decode(const void *buf, size_t len, uint64_t *nonce, char *why, size_t why_len);

#endif /* RAILNET_WIRE_H */
