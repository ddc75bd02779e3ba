/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs wire format: the messages two NICs (progress threads) exchange over one stream
 * socket per requester QP. The requester QP connects, says HELLO, then sends REQ messages; the
 * responder answers with ACK/NAK (cumulative, in order) and, on the stream path, READ_RESP
 * chunks. Explicit widths, host byte order (both ends are softverbs on one architecture; the
 * HELLO carries SV_WIRE_MAGIC, which a foreign-endian peer would not match).
 */
#ifndef SV_WIRE_H
#define SV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define SV_WIRE_MAGIC 0x73765731u /* "svW1" */
#define SV_WIRE_VERSION 2	  /* 2: HELLO carries the rail */
#define SV_CHUNK (256u * 1024)	  /* stream path: payload per REQ / READ_RESP message */
#define SV_MAX_IOV 64		  /* one-copy path: iovecs a REQ may name */

enum sv_msg_type {
	SV_MSG_HELLO = 1,   /* requester -> responder, first message */
	SV_MSG_HELLO_REPLY, /* responder -> requester */
	SV_MSG_REQ,	    /* requester -> responder: one WR (or one chunk of it) */
	SV_MSG_ACK,	    /* responder -> requester: all msn <= hdr.msn done */
	SV_MSG_NAK,	    /* responder -> requester: hdr.msn failed, hdr.aux = sv_nak */
	SV_MSG_READ_RESP,   /* responder -> requester: read data chunk (stream path) */
};

enum sv_nak {
	SV_NAK_RNR = 1,	   /* no receive posted; aux2 = responder's min_rnr_timer */
	SV_NAK_REM_ACCESS, /* rkey/bounds/access */
	SV_NAK_INV_REQ,	   /* receive buffer too small, bad opcode */
	SV_NAK_REM_OP,	   /* responder local error */
};

/* Every message starts with this. len = bytes that follow the header. */
struct sv_hdr {
	uint8_t type;  /* sv_msg_type */
	uint8_t op;    /* REQ: ibv_wr_opcode */
	uint8_t flags; /* SV_F_* */
	uint8_t pad;
	uint32_t len;
	uint32_t msn;	/* requester's message sequence number (its SQ counter) */
	uint32_t aux;	/* NAK: sv_nak; REQ: imm_data (network order, opaque) */
	uint32_t aux2;	/* NAK RNR: min_rnr_timer; REQ: rkey */
	uint32_t niov;	/* REQ one-copy: iovecs that follow */
	uint64_t raddr; /* REQ: remote address */
	uint64_t total; /* REQ: whole message length */
	uint64_t off;	/* REQ/READ_RESP chunk offset in the message */
};
_Static_assert(sizeof(struct sv_hdr) == 48, "sv_hdr is 48 bytes");
_Static_assert(offsetof(struct sv_hdr, raddr) == 24, "sv_hdr.raddr at 24");

#define SV_F_FIRST 1 /* stream path: first chunk */
#define SV_F_LAST 2  /* stream path: last chunk */
#define SV_F_VM 4    /* one-copy: payload is in the requester's memory at the iovecs */
#define SV_F_SOLICITED 8

struct sv_iov {
	uint64_t addr;
	uint64_t len;
};
_Static_assert(sizeof(struct sv_iov) == 16, "sv_iov is 16 bytes");

/* HELLO body: written by the requester's modify_qp(RTR), read by the responder's NIC. */
struct sv_hello {
	uint32_t magic;
	uint32_t version;
	uint8_t dgid[16]; /* the GID the requester addresses; must be on the responder's port */
	uint8_t sgid[16];
	uint32_t dqpn;
	uint32_t sqpn;
	uint64_t pid;	      /* requester's pid, for process_vm_readv/writev */
	uint64_t cookie_addr; /* address of a random value in the requester */
	uint64_t cookie;      /* that value: the responder checks it can read it */
	uint64_t netns;
	uint32_t want_vm;
	uint32_t pad;
	char rail[64]; /* the requester port's rail ("" unknown): a port of another rail is not
			* reachable, as on a rail-optimized fabric (the responder refuses) */
};
_Static_assert(sizeof(struct sv_hello) == 152, "sv_hello is 152 bytes");

/* HELLO_REPLY body */
struct sv_hello_reply {
	uint32_t magic;
	int32_t status; /* 0 or a positive errno: ENOENT no such QP, EADDRNOTAVAIL bad dgid */
	uint32_t vm;	/* responder will move payload with process_vm_* */
	uint32_t pad;
};
_Static_assert(sizeof(struct sv_hello_reply) == 16, "sv_hello_reply is 16 bytes");

#endif
