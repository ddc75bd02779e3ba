// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the wire decoders (src/wire.c): the listen handle, the message header,
 * HELLO and READY, all fed the same untrusted bytes. A decode that fails must return -EPROTO
 * or -EBADMSG with a reason and leave its output untouched; one that succeeds must describe
 * the input exactly, so encoding the result gives back the same bytes (every field is
 * carried, every reserved bit was zero). Built as a libFuzzer binary with clang and as a
 * plain driver (driver.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rn_check_fail(int rc, const char *why)
{
	if (rc != -EPROTO && rc != -EBADMSG)
		abort();
	if (!why[0])
		abort();
}

static void rn_fuzz_handle(const uint8_t *data, size_t size)
{
	struct rn_handle_info out, sentinel;
	uint8_t again[RN_WIRE_HANDLE_SIZE];
	char why[256] = "";
	int rc;

	memset(&out, 0x5a, sizeof(out));
	sentinel = out;
	rc = rn_wire_handle_decode(data, size, &out, why, sizeof(why));
	if (rc) {
		rn_check_fail(rc, why);
		if (memcmp(&out, &sentinel, sizeof(out)))
			abort();
		return;
	}
	if (size != RN_WIRE_HANDLE_SIZE || rn_wire_handle_encode(&out, again) ||
	    memcmp(again, data, size))
		abort();
}

static void rn_fuzz_msgs(const uint8_t *data, size_t size)
{
	static struct rn_hello hello;
	static uint8_t again[RN_WIRE_MSG_MAX];
	char why[256] = "";
	size_t total, len;
	uint64_t nonce = 7;
	int type, rc;

	rc = rn_wire_hdr_decode(data, size, &type, &total, why, sizeof(why));
	if (rc) {
		rn_check_fail(rc, why);
	} else if ((type != RN_WIRE_MSG_HELLO && type != RN_WIRE_MSG_READY &&
		    type != RN_WIRE_MSG_REFUSE) ||
		   total < sizeof(struct rn_wire_msg_hdr) || total > RN_WIRE_MSG_MAX) {
		abort();
	}

	why[0] = '\0';
	hello.nports = -1;
	rc = rn_wire_hello_decode(data, size, &hello, why, sizeof(why));
	if (rc) {
		rn_check_fail(rc, why);
		if (hello.nports != -1)
			abort();
	} else {
		if (hello.nports < 1 || hello.nports > RN_WIRE_MAX_PORTS || hello.nqps < 1 ||
		    hello.nqps > RN_WIRE_MAX_QPS)
			abort();
		if (rn_wire_hello_encode(&hello, again, sizeof(again), &len) || len != size ||
		    memcmp(again, data, size))
			abort();
	}

	why[0] = '\0';
	rc = rn_wire_ready_decode(data, size, &nonce, why, sizeof(why));
	if (rc) {
		rn_check_fail(rc, why);
		if (nonce != 7)
			abort();
	} else if (rn_wire_ready_encode(nonce, again, sizeof(again), &len) || len != size ||
		   memcmp(again, data, size)) {
		abort();
	}

	/* REFUSE: a positive code, a reason of printable ASCII, NUL-terminated in its buffer */
	{
		char reason[RN_WIRE_REASON_MAX + 1];
		int err = -7;

		memset(reason, 'x', sizeof(reason));
		why[0] = '\0';
		rc = rn_wire_refuse_decode(data, size, &nonce, &err, reason, sizeof(reason), why,
					   sizeof(why));
		if (rc) {
			rn_check_fail(rc, why);
			if (err != -7)
				abort();
		} else {
			size_t n = strnlen(reason, sizeof(reason));

			if (err <= 0 || n == sizeof(reason))
				abort();
			for (size_t i = 0; i < n; i++)
				if (reason[i] < 0x20 || reason[i] >= 0x7f)
					abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rn_fuzz_handle(data, size);
	rn_fuzz_msgs(data, size);
	return 0;
}
