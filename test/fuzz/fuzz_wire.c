// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the wire decoders (src/wire.c): the listen handle, the message header,
 * HELLO, READY and REFUSE, all fed the same untrusted bytes. A decode that fails must return
 * -EPROTO or -EBADMSG with a reason and leave its output untouched; one that succeeds must
 * describe the input exactly, so encoding the result gives back the same bytes (every field is
 * carried, every reserved bit was zero). Built as a libFuzzer binary with clang and as a
 * plain driver (driver.c).
 *
 * Each input runs twice: as it is, then as a stamped copy that carries this build's
 * RN_WIRE_VERSION at bytes 4-5 (the version of the handle and of the message header alike)
 * and, when it is handle-sized, the CRC-32C of bytes 0..59 at bytes 60-63. A fuzzer does not
 * find a checksum by mutation, so without the copy nothing after the handle's CRC check
 * (reserved bytes, port count, family, address, port) is reached; and the corpus stays
 * useful when the version is bumped. The raw run keeps the version and checksum refusals.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
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

	/*
	 * REFUSE: a positive code, a reason of printable ASCII, NUL-terminated in its buffer; the
	 * decoder sanitises the reason, so the check is that encoding what it gave decodes to
	 * the same again
	 */
	{
		char reason[RN_WIRE_REASON_MAX + 1], reason2[RN_WIRE_REASON_MAX + 1];
		uint64_t nonce2 = 0;
		int err = -7, err2 = 0;

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
			if (rn_wire_refuse_encode(nonce, err, reason, again, sizeof(again), &len) ||
			    rn_wire_refuse_decode(again, len, &nonce2, &err2, reason2,
						  sizeof(reason2), why, sizeof(why)) ||
			    nonce2 != nonce || err2 != err || strcmp(reason2, reason))
				abort();
		}
	}
}

/*
 * The stamped copy, in a buffer of exactly size bytes so that ASan still catches a read past
 * the input. Returns NULL when there is nothing to stamp (too short for a version, longer
 * than any message or handle) or no memory.
 */
static uint8_t *rn_fuzz_stamp(const uint8_t *data, size_t size)
{
	const size_t crc_at = offsetof(struct rn_wire_handle, crc);
	uint16_t version = htole16(RN_WIRE_VERSION);
	uint8_t *s;

	_Static_assert(offsetof(struct rn_wire_handle, version) ==
			       offsetof(struct rn_wire_msg_hdr, version),
		       "one stamp serves the handle and the message header");
	if (size < offsetof(struct rn_wire_handle, version) + sizeof(version) ||
	    size > RN_WIRE_MSG_MAX)
		return NULL;
	s = malloc(size);
	if (!s)
		return NULL;
	memcpy(s, data, size);
	memcpy(s + offsetof(struct rn_wire_handle, version), &version, sizeof(version));
	if (size == RN_WIRE_HANDLE_SIZE) {
		uint32_t crc = htole32(rn_wire_crc32c(s, crc_at));

		memcpy(s + crc_at, &crc, sizeof(crc));
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *stamped;

	rn_fuzz_handle(data, size);
	rn_fuzz_msgs(data, size);
	stamped = rn_fuzz_stamp(data, size);
	if (stamped) {
		rn_fuzz_handle(stamped, size);
		rn_fuzz_msgs(stamped, size);
		free(stamped);
	}
	return 0;
}
