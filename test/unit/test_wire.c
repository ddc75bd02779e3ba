// SPDX-License-Identifier: Apache-2.0
/*
 * The wire format (wire.h / wire.c): the byte layout as another implementation would see it
 * (little-endian, magic bytes, offsets), handle and HELLO/READY round trips at the limits,
 * and every class of malformed input: wrong magic, version, length, counts over the limits,
 * truncation, trailing junk, reserved bits, bad checksum, out-of-range fields. A failing
 * decode must return -EPROTO or -EBADMSG with a reason and leave its output untouched.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "railnet/wire.h"
#include "rn_test.h"

static void put_le16(uint8_t *b, size_t off, uint16_t v)
{
	v = htole16(v);
	memcpy(b + off, &v, 2);
}

static void put_le32(uint8_t *b, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(b + off, &v, 4);
}

static void refresh_crc(uint8_t *b)
{
	put_le32(b, offsetof(struct rn_wire_handle, crc),
		 rn_wire_crc32c(b, offsetof(struct rn_wire_handle, crc)));
}

static struct rn_handle_info v4_info(void)
{
	struct rn_handle_info i;

	memset(&i, 0, sizeof(i));
	i.family = AF_INET;
	i.port = 0x1234;
	i.addr[0] = 10;
	i.addr[1] = 1;
	i.addr[2] = 2;
	i.addr[3] = 3;
	i.nonce = 0x0102030405060708ull;
	return i;
}

static void test_crc32c_vector(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(rn_wire_crc32c("123456789", 9), 0xe3069283u);
}

static void test_handle_layout_and_roundtrip(void **state)
{
	struct rn_handle_info in = v4_info(), out;
	uint8_t b[RN_WIRE_HANDLE_SIZE];
	char why[256] = "";

	(void)state;
	assert_int_equal(rn_wire_handle_encode(&in, b), 0);
	assert_memory_equal(b, "RRNH", 4);
	assert_int_equal(b[4], RN_WIRE_VERSION);
	assert_int_equal(b[5], 0);
	assert_int_equal(b[6], 64);
	assert_int_equal(b[8], RN_WIRE_AF_INET);
	assert_int_equal(b[10], 0x34); /* port, little-endian */
	assert_int_equal(b[11], 0x12);
	assert_int_equal(b[16], 10);
	assert_int_equal(b[32], 0x08); /* nonce, little-endian */
	assert_int_equal(b[39], 0x01);
	assert_int_equal(rn_wire_handle_decode(b, sizeof(b), &out, why, sizeof(why)), 0);
	assert_int_equal(out.family, AF_INET);
	assert_int_equal(out.port, 0x1234);
	assert_int_equal(out.nonce, in.nonce);
	assert_memory_equal(out.addr, in.addr, 16);

	/* IPv6 with a scope. */
	memset(&in, 0, sizeof(in));
	in.family = AF_INET6;
	in.port = 65535;
	in.scope_id = 7;
	for (int i = 0; i < 16; i++)
		in.addr[i] = (uint8_t)(0xf0 + i);
	in.nonce = ~0ull;
	assert_int_equal(rn_wire_handle_encode(&in, b), 0);
	assert_int_equal(rn_wire_handle_decode(b, sizeof(b), &out, why, sizeof(why)), 0);
	assert_int_equal(out.family, AF_INET6);
	assert_int_equal(out.port, 65535);
	assert_int_equal(out.scope_id, 7);
	assert_memory_equal(out.addr, in.addr, 16);
	assert_int_equal(out.nonce, ~0ull);

	/* The encoder refuses what it cannot represent. */
	in = v4_info();
	in.port = 0;
	assert_int_equal(rn_wire_handle_encode(&in, b), -EINVAL);
	in = v4_info();
	in.addr[5] = 1;
	assert_int_equal(rn_wire_handle_encode(&in, b), -EINVAL);
	in.family = AF_UNIX;
	assert_int_equal(rn_wire_handle_encode(&in, b), -EINVAL);
}

/* Decode must fail with err, give a reason, and leave the output alone. */
static void expect_handle_bad(const uint8_t *b, size_t len, int err, const char *needle)
{
	struct rn_handle_info out, sentinel;
	char why[256] = "";

	memset(&out, 0x5a, sizeof(out));
	sentinel = out;
	assert_int_equal(rn_wire_handle_decode(b, len, &out, why, sizeof(why)), err);
	assert_memory_equal(&out, &sentinel, sizeof(out));
	if (!strstr(why, needle))
		fail_msg("reason '%s' lacks '%s'", why, needle);
}

static void test_handle_malformed(void **state)
{
	struct rn_handle_info in = v4_info();
	uint8_t good[RN_WIRE_HANDLE_BUF], b[RN_WIRE_HANDLE_BUF];

	(void)state;
	memset(good, 0, sizeof(good));
	assert_int_equal(rn_wire_handle_encode(&in, good), 0);

	memcpy(b, good, sizeof(b));
	b[0] ^= 1;
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EPROTO, "magic");

	memcpy(b, good, sizeof(b));
	put_le16(b, 4, RN_WIRE_VERSION + 1);
	refresh_crc(b);
	{
		char needle[64];

		snprintf(needle, sizeof(needle),
			 "handle version %d, this railnet speaks version %d", RN_WIRE_VERSION + 1,
			 RN_WIRE_VERSION);
		expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EPROTO, needle);
	}

	memcpy(b, good, sizeof(b));
	put_le16(b, 6, 63);
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "length field 63");

	expect_handle_bad(good, RN_WIRE_HANDLE_SIZE - 1, -EBADMSG, "truncated");
	expect_handle_bad(good, 3, -EBADMSG, "truncated");
	expect_handle_bad(good, 0, -EBADMSG, "truncated");
	expect_handle_bad(good, RN_WIRE_HANDLE_SIZE + 1, -EBADMSG, "trailing");
	expect_handle_bad(good, RN_WIRE_HANDLE_BUF, -EBADMSG, "trailing");

	memcpy(b, good, sizeof(b));
	b[33] ^= 0x40; /* nonce bit flipped in transit */
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "checksum");

	memcpy(b, good, sizeof(b));
	b[offsetof(struct rn_wire_handle, reserved) + 18] = 1; /* the last reserved byte */
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "reserved");

	memcpy(b, good, sizeof(b));
	b[offsetof(struct rn_wire_handle, nports)] = RN_WIRE_MAX_PORTS + 1;
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "ports");

	memcpy(b, good, sizeof(b));
	put_le16(b, 8, 5);
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "family 5");

	memcpy(b, good, sizeof(b));
	put_le16(b, 10, 0);
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "port is 0");

	memcpy(b, good, sizeof(b));
	b[16 + 4] = 1; /* IPv4 with junk after the address */
	refresh_crc(b);
	expect_handle_bad(b, RN_WIRE_HANDLE_SIZE, -EBADMSG, "IPv4");
}

static struct rn_hello *make_hello(int nports, int nqps)
{
	struct rn_hello *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->nonce = 0xfeedfacecafebeefull;
	h->fifo_addr = 0x00007f0012345000ull;
	h->nports = nports;
	h->nqps = nqps;
	for (int i = 0; i < nports; i++) {
		for (int k = 0; k < 16; k++)
			h->ports[i].gid[k] = (uint8_t)(i * 16 + k);
		h->ports[i].lid = (uint16_t)(100 + i);
		h->ports[i].port_num = (uint8_t)(1 + i);
		h->ports[i].link_layer = i & 1 ? RN_WIRE_LL_INFINIBAND : RN_WIRE_LL_ETHERNET;
		h->ports[i].mtu = (uint8_t)(1 + i % 5);
		h->ports[i].fifo_rkey = 0xa0000000u + (uint32_t)i;
		h->ports[i].rail = 0x8000000u * (uint32_t)i + 0x1234u;
	}
	for (int i = 0; i < nqps; i++) {
		h->qps[i].qpn = 0xffffffu - (uint32_t)i;
		h->qps[i].psn = (uint32_t)i * 7919u & RN_WIRE_QPN_MASK;
		h->qps[i].port_index = (uint16_t)(i % nports);
		h->qps[i].ece = (uint32_t)i;
	}
	return h;
}

static void assert_hello_equal(const struct rn_hello *a, const struct rn_hello *b)
{
	assert_int_equal(a->nonce, b->nonce);
	assert_int_equal(a->fifo_addr, b->fifo_addr);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->nports, b->nports);
	assert_int_equal(a->nqps, b->nqps);
	/* Field by field: the host structs have padding. */
	for (int i = 0; i < a->nports; i++) {
		assert_memory_equal(a->ports[i].gid, b->ports[i].gid, 16);
		assert_int_equal(a->ports[i].lid, b->ports[i].lid);
		assert_int_equal(a->ports[i].port_num, b->ports[i].port_num);
		assert_int_equal(a->ports[i].link_layer, b->ports[i].link_layer);
		assert_int_equal(a->ports[i].mtu, b->ports[i].mtu);
		assert_int_equal(a->ports[i].fifo_rkey, b->ports[i].fifo_rkey);
		assert_int_equal(a->ports[i].rail, b->ports[i].rail);
	}
	for (int i = 0; i < a->nqps; i++) {
		assert_int_equal(a->qps[i].qpn, b->qps[i].qpn);
		assert_int_equal(a->qps[i].psn, b->qps[i].psn);
		assert_int_equal(a->qps[i].port_index, b->qps[i].port_index);
		assert_int_equal(a->qps[i].ece, b->qps[i].ece);
	}
}

static void test_hello_roundtrip(void **state)
{
	static const int shapes[][2] = { { 1, 1 }, { 2, 4 }, { 8, RN_WIRE_MAX_QPS } };
	uint8_t *b = malloc(RN_WIRE_MSG_MAX);
	struct rn_hello *out = calloc(1, sizeof(*out));
	char why[256] = "";
	size_t len = 0;

	(void)state;
	assert_non_null(b);
	assert_non_null(out);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		struct rn_hello *h = make_hello(shapes[s][0], shapes[s][1]);
		int type;
		size_t total;

		assert_int_equal(rn_wire_hello_encode(h, b, RN_WIRE_MSG_MAX, &len), 0);
		assert_int_equal(len, rn_wire_hello_size(h));
		assert_memory_equal(b, "RRNM", 4);
		assert_int_equal(rn_wire_hdr_decode(b, 16, &type, &total, why, sizeof(why)), 0);
		assert_int_equal(type, RN_WIRE_MSG_HELLO);
		assert_int_equal(total, len);
		assert_int_equal(rn_wire_hello_decode(b, len, out, why, sizeof(why)), 0);
		assert_hello_equal(h, out);
		/* Too small a buffer. */
		assert_int_equal(rn_wire_hello_encode(h, b, len - 1, &len), -ENOSPC);
		free(h);
	}
	assert_int_equal(RN_WIRE_HELLO_MAX, 16 + 32 + 8 * 32 + 128 * 16);
	free(out);
	free(b);
}

static void test_hello_encode_refuses(void **state)
{
	struct rn_hello *h = make_hello(2, 2);
	uint8_t b[512];
	size_t len;

	(void)state;
	h->nports = 0;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	h->nports = RN_WIRE_MAX_PORTS + 1;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	h->nports = 2;
	h->qps[1].qpn = 1u << 24;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	h->qps[1].qpn = 1;
	h->qps[1].port_index = 2;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	h->qps[1].port_index = 1;
	h->ports[0].mtu = 6;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	h->ports[0].mtu = 5;
	h->ports[0].link_layer = 0;
	assert_int_equal(rn_wire_hello_encode(h, b, sizeof(b), &len), -EINVAL);
	free(h);
}

static void expect_hello_bad(const uint8_t *b, size_t len, int err, const char *needle)
{
	struct rn_hello *out = malloc(sizeof(*out)), *sentinel = malloc(sizeof(*out));
	char why[256] = "";

	assert_non_null(out);
	assert_non_null(sentinel);
	memset(out, 0x5a, sizeof(*out));
	memcpy(sentinel, out, sizeof(*out));
	assert_int_equal(rn_wire_hello_decode(b, len, out, why, sizeof(why)), err);
	assert_memory_equal(out, sentinel, sizeof(*out));
	if (!strstr(why, needle))
		fail_msg("reason '%s' lacks '%s'", why, needle);
	free(sentinel);
	free(out);
}

static void test_hello_malformed(void **state)
{
	struct rn_hello *h = make_hello(2, 3);
	const size_t H = sizeof(struct rn_wire_msg_hdr), P = H + sizeof(struct rn_wire_hello);
	const size_t Q = P + 2 * sizeof(struct rn_wire_port);
	uint8_t good[1024], b[1024];
	size_t len;

	(void)state;
	memset(good, 0, sizeof(good));
	assert_int_equal(rn_wire_hello_encode(h, good, sizeof(good), &len), 0);
	assert_int_equal(len, Q + 3 * sizeof(struct rn_wire_qp));

#define MUT(stmt, l, err, needle)                        \
	do {                                             \
		memcpy(b, good, sizeof(b));              \
		stmt;                                    \
		expect_hello_bad(b, (l), (err), needle); \
	} while (0)

	MUT(b[3] = 'X', len, -EPROTO, "magic");
	MUT(put_le16(b, 4, 9), len, -EPROTO, "version 9");
	MUT(put_le16(b, 6, RN_WIRE_MSG_READY), len, -EBADMSG, "length");
	MUT(put_le16(b, 6, 77), len, -EBADMSG, "unknown message type 77");
	MUT(put_le32(b, 12, 1), len, -EBADMSG, "reserved");
	MUT(put_le32(b, 8, (uint32_t)RN_WIRE_HELLO_MAX + 1), len, -EBADMSG, "allowed");
	MUT(put_le32(b, 8, 0xffffffffu), len, -EBADMSG, "allowed");
	MUT(put_le32(b, 8, 20), len, -EBADMSG, "allowed");
	MUT((void)0, len - 1, -EBADMSG, "truncated");
	MUT((void)0, 10, -EBADMSG, "truncated");
	MUT(put_le32(b, 8, (uint32_t)len + 1), len + 1, -EBADMSG, "does not match");
	MUT((void)0, len + 1, -EBADMSG, "trailing");
	MUT(put_le16(b, P - 16, 0), len, -EBADMSG, "0 ports");
	MUT(put_le16(b, H + 16, RN_WIRE_MAX_PORTS + 1), len, -EBADMSG, "9 ports");
	MUT(put_le16(b, H + 18, 0), len, -EBADMSG, "0 QPs");
	MUT(put_le16(b, H + 18, RN_WIRE_MAX_QPS + 1), len, -EBADMSG, "129 QPs");
	MUT(put_le16(b, H + 18, 4), len, -EBADMSG, "does not match");
	MUT(put_le32(b, H + 20, 1), len, -EBADMSG, "flags");
	MUT(b[H + 31] = 1, len, -EBADMSG, "reserved");
	MUT(b[P + 32 + 19] = 3, len, -EBADMSG, "port entry 1: link layer 3");
	MUT(b[P + 20] = 0, len, -EBADMSG, "port entry 0: MTU code 0");
	MUT(b[P + 22] = 1, len, -EBADMSG, "port entry 0: reserved");
	MUT(put_le32(b, Q + 16, 1u << 24), len, -EBADMSG, "QP entry 1");
	MUT(put_le32(b, Q + 4, 1u << 31), len, -EBADMSG, "QP entry 0");
	MUT(put_le16(b, Q + 32 + 8, 2), len, -EBADMSG, "QP entry 2: port index 2");
	MUT(put_le16(b, Q + 10, 1), len, -EBADMSG, "QP entry 0: reserved");
#undef MUT
	free(h);
}

/* REFUSE: the acceptor's reason, sanitised and bounded; malformed ones refused. */
static void test_refuse(void **state)
{
	uint8_t b[512], m[512];
	char reason[RN_WIRE_REASON_MAX + 1], small[8], why[256] = "", longer[300];
	uint64_t nonce = 0;
	size_t len;
	int err = 0;

	(void)state;
	assert_int_equal(rn_wire_refuse_encode(1, 0, "x", b, sizeof(b), &len), -EINVAL);
	assert_int_equal(rn_wire_refuse_encode(1, 5, "x", b, 10, &len), -ENOSPC);
	assert_int_equal(
		rn_wire_refuse_encode(0xabcdull, EIO, "creating QPs\nfailed", b, sizeof(b), &len),
		0);
	assert_int_equal(len, RN_WIRE_REFUSE_SIZE);
	assert_int_equal(rn_wire_refuse_decode(b, len, &nonce, &err, reason, sizeof(reason), why,
					       sizeof(why)),
			 0);
	assert_int_equal(nonce, 0xabcdull);
	assert_int_equal(err, EIO);
	assert_string_equal(reason, "creating QPs?failed"); /* control bytes never reach a log */
	assert_int_equal(
		rn_wire_refuse_decode(b, len, &nonce, &err, small, sizeof(small), why, sizeof(why)),
		0);
	assert_string_equal(small, "creatin");
	/* a reason longer than the field is clipped at the sender */
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(rn_wire_refuse_encode(1, EIO, longer, b, sizeof(b), &len), 0);
	assert_int_equal(rn_wire_refuse_decode(b, len, &nonce, &err, reason, sizeof(reason), why,
					       sizeof(why)),
			 0);
	assert_int_equal(strlen(reason), RN_WIRE_REASON_MAX);
	/* malformed */
	memcpy(m, b, len);
	put_le32(m, 16 + 8, 0);
	assert_int_equal(rn_wire_refuse_decode(m, len, &nonce, &err, reason, sizeof(reason), why,
					       sizeof(why)),
			 -EBADMSG);
	assert_non_null(strstr(why, "error code 0"));
	memcpy(m, b, len);
	put_le16(m, 16 + 12, RN_WIRE_REASON_MAX + 1);
	assert_int_equal(rn_wire_refuse_decode(m, len, &nonce, &err, reason, sizeof(reason), why,
					       sizeof(why)),
			 -EBADMSG);
	memcpy(m, b, len);
	put_le16(m, 16 + 14, 1);
	assert_int_equal(rn_wire_refuse_decode(m, len, &nonce, &err, reason, sizeof(reason), why,
					       sizeof(why)),
			 -EBADMSG);
	assert_int_equal(rn_wire_refuse_decode(b, len - 1, &nonce, &err, reason, sizeof(reason),
					       why, sizeof(why)),
			 -EBADMSG);
}

static void test_ready(void **state)
{
	uint8_t b[64], m[64];
	char why[256] = "";
	uint64_t nonce = 0;
	size_t len;

	(void)state;
	assert_int_equal(rn_wire_ready_encode(42, b, 8, &len), -ENOSPC);
	assert_int_equal(rn_wire_ready_encode(0x1122334455667788ull, b, sizeof(b), &len), 0);
	assert_int_equal(len, RN_WIRE_READY_SIZE);
	assert_int_equal(rn_wire_ready_decode(b, len, &nonce, why, sizeof(why)), 0);
	assert_int_equal(nonce, 0x1122334455667788ull);

	nonce = 7;
	memcpy(m, b, sizeof(m));
	put_le32(m, 16 + 8, 1);
	assert_int_equal(rn_wire_ready_decode(m, len, &nonce, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "status"));
	memcpy(m, b, sizeof(m));
	put_le32(m, 16 + 12, 1);
	assert_int_equal(rn_wire_ready_decode(m, len, &nonce, why, sizeof(why)), -EBADMSG);
	assert_int_equal(rn_wire_ready_decode(b, len - 1, &nonce, why, sizeof(why)), -EBADMSG);
	assert_int_equal(rn_wire_ready_decode(b, len + 1, &nonce, why, sizeof(why)), -EBADMSG);
	memcpy(m, b, sizeof(m));
	put_le32(m, 8, (uint32_t)len + 1);
	assert_int_equal(rn_wire_ready_decode(m, len + 1, &nonce, why, sizeof(why)), -EBADMSG);
	memcpy(m, b, sizeof(m));
	put_le16(m, 6, RN_WIRE_MSG_HELLO); /* a READY-sized HELLO is below the HELLO minimum */
	assert_int_equal(rn_wire_ready_decode(m, len, &nonce, why, sizeof(why)), -EBADMSG);
	memcpy(m, b, sizeof(m));
	m[0] = 0;
	assert_int_equal(rn_wire_ready_decode(m, len, &nonce, why, sizeof(why)), -EPROTO);
	assert_int_equal(nonce, 7); /* untouched by every failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_vector),
		cmocka_unit_test(test_handle_layout_and_roundtrip),
		cmocka_unit_test(test_handle_malformed),
		cmocka_unit_test(test_hello_roundtrip),
		cmocka_unit_test(test_hello_encode_refuses),
		cmocka_unit_test(test_hello_malformed),
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_refuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
