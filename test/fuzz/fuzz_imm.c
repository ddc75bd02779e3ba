// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the immediate data a peer writes with each part (include/railnet/proto.h):
 * any 32-bit value decodes into fields within their bounds (slot < RN_PROTO_SLOTS, 1 <= parts
 * <= RN_PROTO_MAX_QPS, part < 128, a small message's size < RN_IMM_SMALL_MAX), and what the
 * sender encodes decodes back to the same fields. The input: 4 bytes of immediate, then 8
 * bytes of request id and 2 of part numbers for the round trip.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_imm_fields f;
	uint32_t imm;
	uint64_t id;
	int part, nparts;
	size_t sz;

	if (size < 4)
		return 0;
	memcpy(&imm, data, 4);
	rn_imm_decode(imm, &f);
	if (f.slot < 0 || f.slot >= RN_PROTO_SLOTS || f.nparts < 1 || f.nparts > RN_PROTO_MAX_QPS ||
	    f.part < 0 || f.part >= 128 ||
	    (f.small && (f.part || f.nparts != 1 || f.size >= RN_IMM_SMALL_MAX)) ||
	    (!f.small && f.size))
		abort();
	if (size < 14)
		return 0;
	memcpy(&id, data + 4, 8);
	nparts = data[12] % RN_PROTO_MAX_QPS + 1;
	part = data[13] % nparts;
	rn_imm_decode(rn_imm(id, part, nparts), &f);
	if (f.small || f.slot != (int)(id % RN_PROTO_SLOTS) || f.part != part ||
	    f.nparts != nparts || f.seq != rn_imm_seq(id, 0))
		abort();
	sz = (size_t)(imm & (RN_IMM_SMALL_MAX - 1));
	rn_imm_decode(rn_imm_small(id, sz), &f);
	if (!f.small || f.size != sz || f.slot != (int)(id % RN_PROTO_SLOTS) ||
	    f.seq != rn_imm_seq(id, 1))
		abort();
	return 0;
}
