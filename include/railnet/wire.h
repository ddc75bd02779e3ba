/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The codec of the out-of-band handshake (src/wire.c): the listen handle NCCL ships through
 * its bootstrap, and the HELLO (both ways) and READY (connector to acceptor) messages. Their
 * byte layouts are in proto.h, with the rest of the protocol; this header gives the host-side
 * views encoders take and decoders give. Every integer is little-endian on the wire, whatever
 * the host; the layouts are only ever filled through rn_wire_*_encode and read through
 * rn_wire_*_decode, which convert byte order and validate everything. Decoders treat their
 * input as untrusted: they return -EPROTO when the peer speaks another protocol or version
 * (magic, version), -EBADMSG when the bytes are malformed (lengths, counts over the limits,
 * reserved bits set, checksum), with a reason string, and never write their output on
 * failure.
 */
#ifndef RAILNET_WIRE_H
#define RAILNET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "railnet/proto.h"

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
/* REFUSE: err > 0, reason clipped to RN_WIRE_REASON_MAX. -EINVAL for err <= 0, -ENOSPC. */
int rn_wire_refuse_encode(uint64_t nonce, int err, const char *reason, void *buf, size_t cap,
			  size_t *out_len);
/*
 * Decode a REFUSE of exactly len bytes: *err (> 0) and the reason, NUL-terminated into
 * reason[reason_cap] with every byte outside printable ASCII replaced by '?'.
 */
int rn_wire_refuse_decode(const void *buf, size_t len, uint64_t *nonce, int *err, char *reason,
			  size_t reason_cap, char *why, size_t why_len);

#endif /* RAILNET_WIRE_H */
