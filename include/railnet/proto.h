/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RDMA protocol's data-path half and every limit of the protocol, in one place:
 *
 *  - the limits: ports per connection, QPs per connection, receives per request, requests in
 *    flight, virtual-device children per NCCL API version. Every other header derives its
 *    limits from these (qp.h, wire.h, net.h, xfer.h), and the _Static_asserts below tie them
 *    to the wire's field widths and to NCCL's own numbers, so a limit cannot drift apart
 *    again (a 5..8-port vNIC that makeVDevice accepted and listen refused was such a drift);
 *  - what the peer writes into our memory: the clear-to-send entry, the size records and the
 *    control word, laid out in the two regions each side registers;
 *  - the bit layouts of the immediate data and of our work-request ids.
 *
 * The handshake that precedes the data path (handle, HELLO, READY) is in wire.h, which takes
 * its limits from here. All integers in peer-written memory are little-endian host values:
 * both ends run the same build (the handshake refuses other wire versions).
 *
 * Changing a layout here means bumping RN_WIRE_VERSION (wire.h).
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
/* Requests in flight per comm: the CTS FIFO's slots (NCCL_NET_MAX_REQUESTS x maxRecvs). */
#define RN_PROTO_SLOTS 256
/* Children makeVDevice takes, per NCCL API version (the vProps.devs[] array of each). */
#define RN_PROTO_VDEV_CHILDREN_V9 4 /* v9, v10, v11 */
#define RN_PROTO_VDEV_CHILDREN_V12 8

_Static_assert(RN_PROTO_VDEV_CHILDREN_V9 <= RN_PROTO_MAX_PORTS, "v9 vNIC fits a connection");
_Static_assert(RN_PROTO_VDEV_CHILDREN_V12 <= RN_PROTO_MAX_PORTS, "v12 vNIC fits a connection");
_Static_assert(RN_PROTO_MAX_PORTS <= 255, "port counts travel in one byte (handle.nports)");
_Static_assert(RN_PROTO_MAX_QPS % 64 == 0, "the dead-QP bitmap is whole 64-bit words");
_Static_assert((RN_PROTO_SLOTS & (RN_PROTO_SLOTS - 1)) == 0, "slots: a power of two");

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
 * Control word a peer writes into our region: the QPs it declared dead (bit i = QP i, by the
 * connection's QP index), so that we stop posting on them. Written by either side when it
 * fails a QP over, read by the other from its progress path when seq changes.
 */
struct rn_xfer_ctl {
	uint64_t dead[RN_PROTO_MAX_QPS / 64]; /* 0 */
	uint64_t seq;			      /* 16: bumped by every notice */
	uint64_t reserved[5];		      /* 24: zero */
};
_Static_assert(sizeof(struct rn_xfer_ctl) == 64, "rn_xfer_ctl is 64 bytes");
_Static_assert(offsetof(struct rn_xfer_ctl, seq) == 16, "ctl.seq");

/*
 * Region layouts (each side registers its region on every port of the connection and
 * announces address and keys in its HELLO). Sender: fifo (written by the receiver), ctl_in
 * (written by the receiver), then local staging: the size records it sends (rec_out, written
 * into the receiver's rec) and its own ctl notice. Receiver: rec (written by the sender: the
 * byte count of each buffer, before the message's last part), ctl_in (written by the sender),
 * then local: the CTS entries it writes out, its own ctl notice and the flush sink.
 */
struct rn_send_region {
	struct rn_cts fifo[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_in;
	uint64_t rec_out[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_out;
};

struct rn_recv_region {
	uint64_t rec[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_in;
	struct rn_cts cts_out[RN_PROTO_SLOTS][RN_PROTO_MAX_RECVS];
	struct rn_xfer_ctl ctl_out;
	uint64_t sink[8];
};

/* ---- immediate data ---------------------------------------------------------------------- */

/*
 * The last WRITE_WITH_IMM of each part carries, in network order:
 *  - a part of a message (bit 31 clear): slot in bits 0-7, part in 8-14, parts - 1 in 15-21,
 *    (id >> 8) & 0x1ff in 22-30 (the receiver's check that the part is of the slot's current
 *    message); the byte counts travel in the record written before part 0;
 *  - a small message (bit 31 set; one buffer, one part, under RN_IMM_SMALL_MAX bytes): slot in
 *    0-7, (id >> 8) & 3 in 8-9, size in 10-30, and no record write, so one work request
 *    carries the whole message, as NCCL's IB transport does.
 * Written by the sender, read by the receiver.
 */
#define RN_IMM_SMALL (1u << 31)
#define RN_IMM_SMALL_MAX (1u << 21)

_Static_assert(RN_PROTO_SLOTS <= 256, "the slot travels in 8 immediate bits");
_Static_assert(RN_PROTO_MAX_QPS <= 128, "part and parts - 1 travel in 7 immediate bits each");

static inline uint32_t rn_imm(uint64_t id, int part, int nparts)
{
	return (uint32_t)(id & 0xff) | (uint32_t)part << 8 | (uint32_t)(nparts - 1) << 15 |
	       (uint32_t)((id >> 8) & 0x1ff) << 22;
}

static inline uint32_t rn_imm_small(uint64_t id, size_t size)
{
	return RN_IMM_SMALL | (uint32_t)(id & 0xff) | (uint32_t)((id >> 8) & 3) << 8 |
	       (uint32_t)size << 10;
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
	f->slot = (int)(imm & 0xff);
	f->part = f->small ? 0 : (int)((imm >> 8) & 0x7f);
	f->nparts = f->small ? 1 : (int)((imm >> 15) & 0x7f) + 1;
	f->seq = f->small ? (imm >> 8) & 3 : (imm >> 22) & 0x1ff;
	f->size = f->small ? (imm >> 10) & (RN_IMM_SMALL_MAX - 1) : 0;
}

static inline uint32_t rn_imm_seq(uint64_t id, int small)
{
	return (uint32_t)((id >> 8) & (small ? 3 : 0x1ff));
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
