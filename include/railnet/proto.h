/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet's protocol, everything that crosses the wire or that the peer writes, in one place:
 *
 *  - the limits: ports per connection, QPs per connection, receives per request, requests in
 *    flight, virtual-device children per NCCL API version. Every other header derives its
 *    limits from these (qp.h, wire.h, net.h, xfer.h), and the _Static_asserts below tie them
 *    to the wire's field widths and to NCCL's own numbers, so a limit cannot drift apart
 *    again (a 5..8-port vNIC that makeVDevice accepted and listen refused was such a drift);
 *  - what the peer writes into our memory: the clear-to-send entry, the size records and the
 *    control word, laid out in the two regions each side registers;
 *  - the out-of-band handshake that precedes the data path: the listen handle and the HELLO
 *    and READY messages (little-endian on the wire, encoded and decoded only by wire.c);
 *  - the bit layouts of the immediate data and of our work-request ids.
 *
 * Each field says who writes it and who reads it. All integers in peer-written memory are little-endian host values: both ends run the same
 * build (the handshake refuses other wire versions).
 *
 * Changing any layout here means bumping RN_WIRE_VERSION.
 */
#ifndef RAILNET_PROTO_H
#define RAILNET_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* ---- limits ------------------------------------------------------------------------------ */

/*
 * Ports one connection spans: the ports of the largest virtual device. NCCL's API v12 lets a
 * vNIC hold 8 devices (NCCL_NET_MAX_DEVS_PER_NIC_V12); at v9-v11 it holds 4 devices, but each
 * of those may itself be a 2-port device (RAILNET_MERGE=ports), so 8 ports are reachable there
 * too. makeVDevice refuses a vNIC of more ports than this, so listen and connect never do.
 */
#define RN_PROTO_MAX_PORTS 8
/* QPs of one connection: NCCL's NCCL_IB_MAX_QPS; also the most parts of one message. */
#define RN_PROTO_MAX_QPS 128
/* Buffers of one grouped receive (NCCL's maxRecvs, NCCL_NET_IB_MAX_RECVS). */
#define RN_PROTO_MAX_RECVS 8
/*
 * Receives in flight per comm: the CTS FIFO's slots, NCCL_NET_MAX_REQUESTS (NCCL >= 2.19 never
 * has more requests outstanding on a comm; each receive holds up to RN_PROTO_MAX_RECVS
 * buffers). Wire version 4 had 256 slots: a region of 156 KiB per comm instead of 20 KiB
 * (docs/performance.md, "Scale").
 */
#define RN_PROTO_SLOT_BITS 5
#define RN_PROTO_SLOTS (1 << RN_PROTO_SLOT_BITS)
/* Children makeVDevice takes, per NCCL API version (the vProps.devs[] array of each). */
#define RN_PROTO_VDEV_CHILDREN_V9 4 /* v9, v10, v11 */
#define RN_PROTO_VDEV_CHILDREN_V12 8

_Static_assert(RN_PROTO_VDEV_CHILDREN_V9 <= RN_PROTO_MAX_PORTS, "v9 vNIC fits a connection");
_Static_assert(RN_PROTO_VDEV_CHILDREN_V12 <= RN_PROTO_MAX_PORTS, "v12 vNIC fits a connection");
_Static_assert(RN_PROTO_MAX_PORTS <= 255, "port counts travel in one byte (handle.nports)");
_Static_assert(RN_PROTO_MAX_QPS % 64 == 0, "the dead-QP bitmap is whole 64-bit words");
_Static_assert((RN_PROTO_SLOTS & (RN_PROTO_SLOTS - 1)) == 0, "slots: a power of two");

/* ---- the out-of-band handshake ---------------------------------------------------------- */

/*
 * 2: the handle carries the listener's port count. 3: port entries carry the rail key, CTS
 * entries hold 8 rkeys (proto.h). 4: the control word carries the receiver's fence, and the
 * send region its delivery report (exactly-once re-sends after a failover). 5: 32 CTS slots
 * (RN_PROTO_SLOTS) instead of 256, and the immediate's sequence bits follow from them.
 */
#define RN_WIRE_VERSION 5

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
	RN_WIRE_MSG_HELLO = 1,	/* connector -> acceptor, then acceptor -> connector */
	RN_WIRE_MSG_READY = 2,	/* connector -> acceptor, last message */
	RN_WIRE_MSG_REFUSE = 3, /* acceptor -> connector instead of its HELLO: the reason */
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

/*
 * REFUSE body: the acceptor could not take a connector whose HELLO was valid (its QPs could
 * not be created or connected, the port counts do not fit...) and says why before closing,
 * so that the connector's error names the cause rather than "peer closed the connection".
 */
#define RN_WIRE_REASON_MAX 200
struct rn_wire_refuse {
	uint64_t nonce;	     /* 0: the handle's nonce, echoed. acceptor writes,
					  * connector checks */
	int32_t err;	     /* 8: the acceptor's errno (positive). connector reports it */
	uint16_t reason_len; /* 12: bytes of reason used (no NUL), <= RN_WIRE_REASON_MAX */
	uint16_t reserved;   /* 14: zero */
	char reason[RN_WIRE_REASON_MAX]; /* 16: text, zero-padded. connector logs it (sanitised) */
};

_Static_assert(sizeof(struct rn_wire_refuse) == 216, "refuse is 216 bytes");
_Static_assert(offsetof(struct rn_wire_refuse, err) == 8, "refuse.err");
_Static_assert(offsetof(struct rn_wire_refuse, reason_len) == 12, "refuse.reason_len");
_Static_assert(offsetof(struct rn_wire_refuse, reason) == 16, "refuse.reason");

#define RN_WIRE_REFUSE_SIZE (sizeof(struct rn_wire_msg_hdr) + sizeof(struct rn_wire_refuse))

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
_Static_assert(RN_WIRE_REFUSE_SIZE <= RN_WIRE_MSG_MAX, "a REFUSE fits the receive buffer");

/* ---- peer-written memory ----------------------------------------------------------------- */

/*
 * One clear-to-send entry (64 bytes: one entry never straddles a cache-line pair). Written by
 * the receiver (irecv) into the sender's FIFO with one RDMA WRITE per receive (all n entries
 * of a grouped receive in one write); read by the sender (isend). idx is last, so an entry
 * whose idx shows the expected id is complete (the write lands in address order on one QP).
 */
struct rn_cts {
	uint64_t addr;			   /* 0: receive buffer. receiver writes, sender reads */
	uint64_t size;			   /* 8: its size. receiver, sender (clips to it) */
	uint32_t rkey[RN_PROTO_MAX_PORTS]; /* 16: its key on each receiver port, by the
					    * receiver's port index. receiver, sender */
	uint32_t nreqs;			   /* 48: buffers of this receive, 1..RN_PROTO_MAX_RECVS.
					    * receiver writes, sender checks */
	int32_t tag;			   /* 52: NCCL's tag. receiver, sender matches on it */
	uint64_t idx;			   /* 56: request id + 1, written last. receiver, sender */
};
_Static_assert(sizeof(struct rn_cts) == 64, "rn_cts is 64 bytes");
_Static_assert(offsetof(struct rn_cts, rkey) == 16, "cts.rkey");
_Static_assert(offsetof(struct rn_cts, nreqs) == 48, "cts.nreqs");
_Static_assert(offsetof(struct rn_cts, tag) == 52, "cts.tag");
_Static_assert(offsetof(struct rn_cts, idx) == 56, "cts.idx");

/*
 * Control word a peer writes into our region. dead: the QPs it declared dead (bit i = QP i,
 * by the connection's QP index), so that we stop posting on them; written by either side when
 * it fails a QP over, read by the other from its progress path when seq changes. fenced and
 * fence_gen: the receiver's fence (below); zero from a sender.
 */
struct rn_xfer_ctl {
	uint64_t dead[RN_PROTO_MAX_QPS / 64];	/* 0 */
	uint64_t seq;				/* 16: bumped by every notice */
	uint64_t fenced[RN_PROTO_MAX_QPS / 64]; /* 24: receiver: dead QPs it has fenced */
	uint64_t fence_gen;			/* 40: receiver: the report's gen (below) */
	uint64_t reserved[2];			/* 48: zero */
};
_Static_assert(sizeof(struct rn_xfer_ctl) == 64, "rn_xfer_ctl is 64 bytes");
_Static_assert(offsetof(struct rn_xfer_ctl, seq) == 16, "ctl.seq");
_Static_assert(offsetof(struct rn_xfer_ctl, fenced) == 24, "ctl.fenced");
_Static_assert(offsetof(struct rn_xfer_ctl, fence_gen) == 40, "ctl.fence_gen");

/*
 * The receiver's delivery report, the heart of exactly-once delivery after a failover
 * (docs/data-path.md, "Failover"). A part whose data landed but whose acknowledgement was lost
 * with its QP must not be sent again: the receiver may have completed the message and NCCL
 * reused the buffer. So the sender re-sends nothing of a dead QP until the receiver has
 * "fenced" it: moved its end to the error state (nothing more can land through it), reaped
 * every receive posted on it (every part that landed is counted), and then written this
 * report, the state of each slot, followed in the same RDMA WRITE by its control word with
 * the QP's bit in fenced. A part is re-sent only when the report says the receiver lacks it.
 *
 * gen is written first and the control word's fence_gen last (one write, placed in address
 * order), so a reader that finds both equal, before and after copying, has a whole report.
 * Per slot: the id of the receive occupying it (a later id: the message was complete and the
 * slot reused), done (its message is complete), and the bitmap of the parts that arrived.
 * Written by the receiver into the sender's rep_in, read by the sender.
 */
struct rn_fence_slot {
	uint64_t id;			      /* 0 */
	uint64_t mask[RN_PROTO_MAX_QPS / 64]; /* 8: parts received */
	uint64_t done;			      /* 24: 1: the message is complete */
};
_Static_assert(sizeof(struct rn_fence_slot) == 32, "rn_fence_slot is 32 bytes");

struct rn_fence_rep {
	uint64_t gen;	      /* 0: equals ctl.fence_gen once the report is whole */
	uint64_t reserved[7]; /* 8: zero */
	struct rn_fence_slot slot[RN_PROTO_SLOTS]; /* 64 */
};
_Static_assert(offsetof(struct rn_fence_rep, slot) == 64, "fence_rep.slot");

/*
 * Region layouts (each side registers its region on every port of the connection and
 * announces address and keys in its HELLO). Sender: fifo and the delivery report rep_in,
 * then ctl_in (all three written by the receiver; rep_in and ctl_in in one write), then local
 * staging: the size records it sends (rec_out, written into the receiver's rec) and its own
 * ctl notice. Receiver: rec (written by the sender: the byte count of each buffer, before the
 * message's last part), ctl_in (written by the sender), then local: the CTS entries it writes
 * out, its report and ctl notice (staged together for the one write) and the flush sink.
 */
struct rn_send_region {
	struct rn_cts fifo[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_fence_rep rep_in;
	struct rn_xfer_ctl ctl_in;
	uint64_t rec_out[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_out;
};

struct rn_recv_region {
	uint64_t rec[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_in;
	struct rn_cts cts_out[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_fence_rep rep_out;
	struct rn_xfer_ctl ctl_out;
	uint64_t sink[8];
};
_Static_assert(offsetof(struct rn_send_region, ctl_in) ==
		       offsetof(struct rn_send_region, rep_in) + sizeof(struct rn_fence_rep),
	       "the report and the control word are written together");
_Static_assert(offsetof(struct rn_recv_region, ctl_out) ==
		       offsetof(struct rn_recv_region, rep_out) + sizeof(struct rn_fence_rep),
	       "the report and the control word are staged together");

/* ---- immediate data ---------------------------------------------------------------------- */

/*
 * The last WRITE_WITH_IMM of each part carries, in network order:
 *  - a part of a message (bit 31 clear): the slot (id % RN_PROTO_SLOTS) in bits 0-7, part in
 *    8-14, parts - 1 in 15-21, the message's sequence in its slot (id / RN_PROTO_SLOTS) & 0x1ff
 *    in 22-30 (the receiver's check that the part is of the slot's current message); the byte
 *    counts travel in the record written before part 0;
 *  - a small message (bit 31 set; one buffer, one part, under RN_IMM_SMALL_MAX bytes): slot in
 *    0-7, (id / RN_PROTO_SLOTS) & 3 in 8-9, size in 10-30, and no record write, so one work
 *    request carries the whole message, as NCCL's IB transport does.
 * Slot bits above RN_PROTO_SLOT_BITS are zero; a receiver ignores them.
 * Written by the sender, read by the receiver.
 */
#define RN_IMM_SMALL (1u << 31)
#define RN_IMM_SMALL_MAX (1u << 21)

_Static_assert(RN_PROTO_SLOTS <= 256, "the slot travels in 8 immediate bits");
_Static_assert(RN_PROTO_MAX_QPS <= 128, "part and parts - 1 travel in 7 immediate bits each");

static inline uint32_t rn_imm(uint64_t id, int part, int nparts)
{
	return (uint32_t)(id & (RN_PROTO_SLOTS - 1)) | (uint32_t)part << 8 |
	       (uint32_t)(nparts - 1) << 15 | (uint32_t)((id >> RN_PROTO_SLOT_BITS) & 0x1ff) << 22;
}

static inline uint32_t rn_imm_small(uint64_t id, size_t size)
{
	return RN_IMM_SMALL | (uint32_t)(id & (RN_PROTO_SLOTS - 1)) |
	       (uint32_t)((id >> RN_PROTO_SLOT_BITS) & 3) << 8 | (uint32_t)size << 10;
}

/* An immediate, decoded. */
struct rn_imm_fields {
	int slot;
	int part, nparts;
	uint32_t seq; /* compare with rn_imm_seq(id, small) */
	size_t size;  /* small messages only */
	int small;    /* bool */
};

static inline void rn_imm_decode(uint32_t imm, struct rn_imm_fields *f)
{
	f->small = (imm & RN_IMM_SMALL) != 0;
	f->slot = (int)(imm & (RN_PROTO_SLOTS - 1));
	f->part = f->small ? 0 : (int)((imm >> 8) & 0x7f);
	f->nparts = f->small ? 1 : (int)((imm >> 15) & 0x7f) + 1;
	f->seq = f->small ? (imm >> 8) & 3 : (imm >> 22) & 0x1ff;
	f->size = f->small ? (imm >> 10) & (RN_IMM_SMALL_MAX - 1) : 0;
}

static inline uint32_t rn_imm_seq(uint64_t id, int small)
{
	return (uint32_t)((id >> RN_PROTO_SLOT_BITS) & (small ? 3 : 0x1ff));
}

/* ---- work-request ids (local only, never on the wire) ------------------------------------ */

/* type in bits 56-63 (enum rn_wr_type of xfer.c), QP index in 32-47, type-specific info below */
static inline uint64_t rn_wrid(int type, int q, uint32_t info)
{
	return (uint64_t)type << 56 | (uint64_t)(q & 0xffff) << 32 | info;
}

static inline int rn_wrid_type(uint64_t id)
{
	return (int)(id >> 56);
}

static inline int rn_wrid_qp(uint64_t id)
{
	return (int)((id >> 32) & 0xffff);
}

static inline uint32_t rn_wrid_info(uint64_t id)
{
	return (uint32_t)id;
}

_Static_assert(RN_PROTO_MAX_QPS <= 0xffff, "a QP index fits the wr_id's 16 bits");

#endif /* RAILNET_PROTO_H */
