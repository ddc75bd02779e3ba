// SPDX-License-Identifier: Apache-2.0
/*
 * wire.c encodes and decodes the wire format of include/railnet/wire.h: the listen handle
 * and the handshake messages. It converts between the little-endian wire structs and the
 * host views, and validates every field of untrusted input. It does no I/O and no logging
 * (callers log the reason string once, naming the peer); it must never read outside the
 * buffer it is given, whatever the bytes say.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "railnet/wire.h"

static int rn_wire_fail(int err, char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int rn_wire_fail(int err, char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static bool rn_all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

uint32_t rn_wire_crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = ~0u;

	/* Bitwise: the handle is 60 bytes and checked once per connection. */
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

/* ---- handle ------------------------------------------------------------------------------ */

int rn_wire_handle_encode(const struct rn_handle_info *info, void *buf)
{
	struct rn_wire_handle w;

	memset(&w, 0, sizeof(w));
	if (info->family == AF_INET) {
		if (!rn_all_zero(info->addr + 4, 12) || info->scope_id)
			return -EINVAL;
		w.family = htole16(RN_WIRE_AF_INET);
	} else if (info->family == AF_INET6) {
		w.family = htole16(RN_WIRE_AF_INET6);
	} else {
		return -EINVAL;
	}
	if (!info->port || info->nports < 0 || info->nports > RN_WIRE_MAX_PORTS)
		return -EINVAL;
	w.nports = (uint8_t)info->nports;
	w.magic = htole32(RN_WIRE_HANDLE_MAGIC);
	w.version = htole16(RN_WIRE_VERSION);
	w.length = htole16(sizeof(w));
	w.port = htole16(info->port);
	w.scope_id = htole32(info->scope_id);
	memcpy(w.addr, info->addr, sizeof(w.addr));
	w.nonce = htole64(info->nonce);
	w.crc = htole32(rn_wire_crc32c(&w, offsetof(struct rn_wire_handle, crc)));
	memcpy(buf, &w, sizeof(w));
	return 0;
}

int rn_wire_handle_decode(const void *buf, size_t len, struct rn_handle_info *out, char *why,
			  size_t why_len)
{
	struct rn_handle_info info;
	struct rn_wire_handle w;
	uint32_t crc;
	int family;

	/* Magic and version first: a foreign handle is reported as such, not as "too short". */
	if (len < offsetof(struct rn_wire_handle, length) + sizeof(w.length))
		return rn_wire_fail(-EBADMSG, why, why_len, "handle truncated: %zu bytes", len);
	memset(&w, 0, sizeof(w));
	memcpy(&w, buf, len < sizeof(w) ? len : sizeof(w));
	if (le32toh(w.magic) != RN_WIRE_HANDLE_MAGIC)
		return rn_wire_fail(-EPROTO, why, why_len,
				    "handle magic 0x%08x is not railnet's 0x%08x (a handle from "
				    "another network plugin?)",
				    le32toh(w.magic), RN_WIRE_HANDLE_MAGIC);
	if (le16toh(w.version) != RN_WIRE_VERSION)
		return rn_wire_fail(-EPROTO, why, why_len,
				    "handle version %u, this railnet speaks version %d (mixed "
				    "railnet versions in one job?)",
				    le16toh(w.version), RN_WIRE_VERSION);
	if (le16toh(w.length) != sizeof(w))
		return rn_wire_fail(-EBADMSG, why, why_len, "handle length field %u, expected %zu",
				    le16toh(w.length), sizeof(w));
	if (len < sizeof(w))
		return rn_wire_fail(-EBADMSG, why, why_len, "handle truncated: %zu of %zu bytes",
				    len, sizeof(w));
	if (len > sizeof(w))
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "handle has %zu bytes of trailing data after %zu",
				    len - sizeof(w), sizeof(w));
	crc = rn_wire_crc32c(&w, offsetof(struct rn_wire_handle, crc));
	if (crc != le32toh(w.crc))
		return rn_wire_fail(
			-EBADMSG, why, why_len,
			"handle checksum 0x%08x, computed 0x%08x (corrupted in transit)",
			le32toh(w.crc), crc);
	if (!rn_all_zero(w.reserved, sizeof(w.reserved)))
		return rn_wire_fail(-EBADMSG, why, why_len, "handle reserved bytes are not zero");
	if (w.nports > RN_WIRE_MAX_PORTS)
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "handle announces %u ports; railnet connects at most %d",
				    w.nports, RN_WIRE_MAX_PORTS);
	switch (le16toh(w.family)) {
	case RN_WIRE_AF_INET:
		family = AF_INET;
		if (!rn_all_zero(w.addr + 4, 12) || w.scope_id)
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "IPv4 handle has bytes set after the address");
		break;
	case RN_WIRE_AF_INET6:
		family = AF_INET6;
		break;
	default:
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "handle address family %u, expected %d or %d",
				    le16toh(w.family), RN_WIRE_AF_INET, RN_WIRE_AF_INET6);
	}
	if (!w.port)
		return rn_wire_fail(-EBADMSG, why, why_len, "handle TCP port is 0");
	memset(&info, 0, sizeof(info));
	info.family = family;
	info.port = le16toh(w.port);
	info.scope_id = le32toh(w.scope_id);
	memcpy(info.addr, w.addr, sizeof(info.addr));
	info.nonce = le64toh(w.nonce);
	info.nports = w.nports;
	*out = info;
	return 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

static void rn_wire_put_hdr(void *buf, int type, size_t total)
{
	struct rn_wire_msg_hdr h = {
		.magic = htole32(RN_WIRE_MSG_MAGIC),
		.version = htole16(RN_WIRE_VERSION),
		.type = htole16((uint16_t)type),
		.length = htole32((uint32_t)total),
	};

	memcpy(buf, &h, sizeof(h));
}

size_t rn_wire_hello_size(const struct rn_hello *h)
{
	size_t np = h->nports > 0 ? (size_t)h->nports : 0, nq = h->nqps > 0 ? (size_t)h->nqps : 0;

	return sizeof(struct rn_wire_msg_hdr) + sizeof(struct rn_wire_hello) +
	       np * sizeof(struct rn_wire_port) + nq * sizeof(struct rn_wire_qp);
}

static bool rn_ll_valid(unsigned ll)
{
	return ll == RN_WIRE_LL_INFINIBAND || ll == RN_WIRE_LL_ETHERNET;
}

static bool rn_mtu_valid(unsigned mtu)
{
	return mtu >= 1 && mtu <= 5; /* IBV_MTU_256 .. IBV_MTU_4096 */
}

int rn_wire_hello_encode(const struct rn_hello *h, void *buf, size_t cap, size_t *out_len)
{
	struct rn_wire_hello w;
	uint8_t *p = buf;
	size_t total;

	if (h->nports < 1 || h->nports > RN_WIRE_MAX_PORTS || h->nqps < 1 ||
	    h->nqps > RN_WIRE_MAX_QPS || h->flags)
		return -EINVAL;
	for (int i = 0; i < h->nports; i++)
		if (!rn_ll_valid(h->ports[i].link_layer) || !rn_mtu_valid(h->ports[i].mtu))
			return -EINVAL;
	for (int i = 0; i < h->nqps; i++)
		if ((h->qps[i].qpn & ~RN_WIRE_QPN_MASK) || (h->qps[i].psn & ~RN_WIRE_QPN_MASK) ||
		    h->qps[i].port_index >= h->nports)
			return -EINVAL;
	total = rn_wire_hello_size(h);
	if (cap < total)
		return -ENOSPC;

	rn_wire_put_hdr(p, RN_WIRE_MSG_HELLO, total);
	p += sizeof(struct rn_wire_msg_hdr);
	memset(&w, 0, sizeof(w));
	w.nonce = htole64(h->nonce);
	w.fifo_addr = htole64(h->fifo_addr);
	w.nports = htole16((uint16_t)h->nports);
	w.nqps = htole16((uint16_t)h->nqps);
	memcpy(p, &w, sizeof(w));
	p += sizeof(w);
	for (int i = 0; i < h->nports; i++) {
		const struct rn_hello_port *s = &h->ports[i];
		struct rn_wire_port e;

		memset(&e, 0, sizeof(e));
		memcpy(e.gid, s->gid, sizeof(e.gid));
		e.lid = htole16(s->lid);
		e.port_num = s->port_num;
		e.link_layer = s->link_layer;
		e.mtu = s->mtu;
		e.fifo_rkey = htole32(s->fifo_rkey);
		e.rail = htole32(s->rail);
		memcpy(p, &e, sizeof(e));
		p += sizeof(e);
	}
	for (int i = 0; i < h->nqps; i++) {
		const struct rn_hello_qp *s = &h->qps[i];
		struct rn_wire_qp e;

		memset(&e, 0, sizeof(e));
		e.qpn = htole32(s->qpn);
		e.psn = htole32(s->psn);
		e.port_index = htole16(s->port_index);
		e.ece = htole32(s->ece);
		memcpy(p, &e, sizeof(e));
		p += sizeof(e);
	}
	*out_len = total;
	return 0;
}

int rn_wire_ready_encode(uint64_t nonce, void *buf, size_t cap, size_t *out_len)
{
	struct rn_wire_ready r = { .nonce = htole64(nonce) };

	if (cap < RN_WIRE_READY_SIZE)
		return -ENOSPC;
	rn_wire_put_hdr(buf, RN_WIRE_MSG_READY, RN_WIRE_READY_SIZE);
	memcpy((uint8_t *)buf + sizeof(struct rn_wire_msg_hdr), &r, sizeof(r));
	*out_len = RN_WIRE_READY_SIZE;
	return 0;
}

int rn_wire_hdr_decode(const void *buf, size_t len, int *type, size_t *total, char *why,
		       size_t why_len)
{
	struct rn_wire_msg_hdr h;
	size_t min, max, n;
	int t;

	if (len < sizeof(h))
		return rn_wire_fail(-EBADMSG, why, why_len, "message truncated: %zu bytes", len);
	memcpy(&h, buf, sizeof(h));
	if (le32toh(h.magic) != RN_WIRE_MSG_MAGIC)
		return rn_wire_fail(-EPROTO, why, why_len,
				    "message magic 0x%08x is not railnet's 0x%08x",
				    le32toh(h.magic), RN_WIRE_MSG_MAGIC);
	if (le16toh(h.version) != RN_WIRE_VERSION)
		return rn_wire_fail(-EPROTO, why, why_len,
				    "peer speaks handshake version %u, this railnet version %d",
				    le16toh(h.version), RN_WIRE_VERSION);
	if (h.reserved)
		return rn_wire_fail(-EBADMSG, why, why_len, "message header reserved field is set");
	t = le16toh(h.type);
	switch (t) {
	case RN_WIRE_MSG_HELLO:
		min = RN_WIRE_HELLO_MIN;
		max = RN_WIRE_HELLO_MAX;
		break;
	case RN_WIRE_MSG_READY:
		min = max = RN_WIRE_READY_SIZE;
		break;
	case RN_WIRE_MSG_REFUSE:
		min = max = RN_WIRE_REFUSE_SIZE;
		break;
	default:
		return rn_wire_fail(-EBADMSG, why, why_len, "unknown message type %d", t);
	}
	n = le32toh(h.length);
	if (n < min || n > max)
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "message type %d has length %zu, allowed %zu..%zu", t, n, min,
				    max);
	*type = t;
	*total = n;
	return 0;
}

static int rn_wire_msg_check(const void *buf, size_t len, int want, char *why, size_t why_len)
{
	size_t total;
	int type, rc;

	rc = rn_wire_hdr_decode(buf, len, &type, &total, why, why_len);
	if (rc)
		return rc;
	if (type != want)
		return rn_wire_fail(-EBADMSG, why, why_len, "message type %d, expected %d", type,
				    want);
	if (len < total)
		return rn_wire_fail(-EBADMSG, why, why_len, "message truncated: %zu of %zu bytes",
				    len, total);
	if (len > total)
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "%zu bytes of trailing data after a %zu-byte message",
				    len - total, total);
	return 0;
}

int rn_wire_hello_decode(const void *buf, size_t len, struct rn_hello *out, char *why,
			 size_t why_len)
{
	const uint8_t *p = buf;
	struct rn_wire_hello w;
	struct rn_hello h;
	unsigned np, nq;
	int rc;

	rc = rn_wire_msg_check(buf, len, RN_WIRE_MSG_HELLO, why, why_len);
	if (rc)
		return rc;
	p += sizeof(struct rn_wire_msg_hdr);
	memcpy(&w, p, sizeof(w));
	p += sizeof(w);
	np = le16toh(w.nports);
	nq = le16toh(w.nqps);
	if (np < 1 || np > RN_WIRE_MAX_PORTS)
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "hello announces %u ports, allowed 1..%d", np,
				    RN_WIRE_MAX_PORTS);
	if (nq < 1 || nq > RN_WIRE_MAX_QPS)
		return rn_wire_fail(-EBADMSG, why, why_len, "hello announces %u QPs, allowed 1..%d",
				    nq, RN_WIRE_MAX_QPS);
	if (len != sizeof(struct rn_wire_msg_hdr) + sizeof(w) + np * sizeof(struct rn_wire_port) +
			   nq * sizeof(struct rn_wire_qp))
		return rn_wire_fail(-EBADMSG, why, why_len,
				    "hello length %zu does not match %u ports and %u QPs", len, np,
				    nq);
	if (w.flags)
		return rn_wire_fail(-EBADMSG, why, why_len, "hello flags 0x%x: none defined",
				    le32toh(w.flags));
	if (w.reserved)
		return rn_wire_fail(-EBADMSG, why, why_len, "hello reserved field is set");

	/* Decoded into a local first: *out is written only on success. */
	memset(&h, 0, offsetof(struct rn_hello, ports));
	h.nonce = le64toh(w.nonce);
	h.fifo_addr = le64toh(w.fifo_addr);
	h.nports = (int)np;
	h.nqps = (int)nq;
	for (unsigned i = 0; i < np; i++) {
		struct rn_wire_port e;

		memcpy(&e, p, sizeof(e));
		p += sizeof(e);
		if (!rn_ll_valid(e.link_layer))
			return rn_wire_fail(
				-EBADMSG, why, why_len,
				"port entry %u: link layer %u is neither InfiniBand (1) "
				"nor Ethernet (2)",
				i, e.link_layer);
		if (!rn_mtu_valid(e.mtu))
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "port entry %u: MTU code %u, allowed 1..5", i, e.mtu);
		if (!rn_all_zero(e.reserved, sizeof(e.reserved)))
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "port entry %u: reserved bytes are set", i);
		memcpy(h.ports[i].gid, e.gid, sizeof(e.gid));
		h.ports[i].lid = le16toh(e.lid);
		h.ports[i].port_num = e.port_num;
		h.ports[i].link_layer = e.link_layer;
		h.ports[i].mtu = e.mtu;
		h.ports[i].fifo_rkey = le32toh(e.fifo_rkey);
		h.ports[i].rail = le32toh(e.rail);
	}
	for (unsigned i = 0; i < nq; i++) {
		struct rn_wire_qp e;

		memcpy(&e, p, sizeof(e));
		p += sizeof(e);
		if ((le32toh(e.qpn) & ~RN_WIRE_QPN_MASK) || (le32toh(e.psn) & ~RN_WIRE_QPN_MASK))
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "QP entry %u: QPN 0x%x or PSN 0x%x exceeds 24 bits", i,
					    le32toh(e.qpn), le32toh(e.psn));
		if (le16toh(e.port_index) >= np)
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "QP entry %u: port index %u, only %u ports", i,
					    le16toh(e.port_index), np);
		if (e.reserved)
			return rn_wire_fail(-EBADMSG, why, why_len,
					    "QP entry %u: reserved field is set", i);
		h.qps[i].qpn = le32toh(e.qpn);
		h.qps[i].psn = le32toh(e.psn);
		h.qps[i].port_index = le16toh(e.port_index);
		h.qps[i].ece = le32toh(e.ece);
	}
	/* Copy only the used entries: struct rn_hello is ~17 KiB. */
	memcpy(out, &h, offsetof(struct rn_hello, ports));
	memcpy(out->ports, h.ports, np * sizeof(h.ports[0]));
	memcpy(out->qps, h.qps, nq * sizeof(h.qps[0]));
	return 0;
}

int rn_wire_ready_decode(const void *buf, size_t len, uint64_t *nonce, char *why, size_t why_len)
{
	struct rn_wire_ready r;
	int rc;

	rc = rn_wire_msg_check(buf, len, RN_WIRE_MSG_READY, why, why_len);
	if (rc)
		return rc;
	memcpy(&r, (const uint8_t *)buf + sizeof(struct rn_wire_msg_hdr), sizeof(r));
	if (r.status)
		return rn_wire_fail(-EBADMSG, why, why_len, "ready status %u: none defined",
				    le32toh(r.status));
	if (r.reserved)
		return rn_wire_fail(-EBADMSG, why, why_len, "ready reserved field is set");
	*nonce = le64toh(r.nonce);
	return 0;
}

int rn_wire_refuse_encode(uint64_t nonce, int err, const char *reason, void *buf, size_t cap,
			  size_t *out_len)
{
	struct rn_wire_refuse r;
	size_t n = reason ? strlen(reason) : 0;

	if (err <= 0)
		return -EINVAL;
	if (cap < RN_WIRE_REFUSE_SIZE)
		return -ENOSPC;
	if (n > RN_WIRE_REASON_MAX)
		n = RN_WIRE_REASON_MAX;
	memset(&r, 0, sizeof(r));
	r.nonce = htole64(nonce);
	r.err = (int32_t)htole32((uint32_t)err);
	r.reason_len = htole16((uint16_t)n);
	memcpy(r.reason, reason ? reason : "", n);
	rn_wire_put_hdr(buf, RN_WIRE_MSG_REFUSE, RN_WIRE_REFUSE_SIZE);
	memcpy((uint8_t *)buf + sizeof(struct rn_wire_msg_hdr), &r, sizeof(r));
	*out_len = RN_WIRE_REFUSE_SIZE;
	return 0;
}

int rn_wire_refuse_decode(const void *buf, size_t len, uint64_t *nonce, int *err, char *reason,
			  size_t reason_cap, char *why, size_t why_len)
{
	struct rn_wire_refuse r;
	size_t n;
	int e, rc;

	rc = rn_wire_msg_check(buf, len, RN_WIRE_MSG_REFUSE, why, why_len);
	if (rc)
		return rc;
	memcpy(&r, (const uint8_t *)buf + sizeof(struct rn_wire_msg_hdr), sizeof(r));
	e = (int32_t)le32toh((uint32_t)r.err);
	n = le16toh(r.reason_len);
	if (e <= 0)
		return rn_wire_fail(-EBADMSG, why, why_len, "refusal with error code %d", e);
	if (n > RN_WIRE_REASON_MAX)
		return rn_wire_fail(-EBADMSG, why, why_len, "refusal reason of %zu bytes", n);
	if (r.reserved)
		return rn_wire_fail(-EBADMSG, why, why_len, "refuse reserved field is set");
	if (reason_cap) {
		if (n >= reason_cap)
			n = reason_cap - 1;
		for (size_t i = 0; i < n; i++)
			reason[i] = r.reason[i] >= 0x20 && r.reason[i] < 0x7f ? r.reason[i] : '?';
		reason[n] = '\0';
	}
	*nonce = le64toh(r.nonce);
	*err = e;
	return 0;
}
