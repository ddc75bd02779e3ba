// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-bench #wrong data: the closed-form expected result of every collective, type and
 * reduction equals what a reduction over all ranks' inputs gives (simulated here in exact
 * integer or double arithmetic), every partial sum stays exactly representable, encode/decode
 * round-trip, and the comparison counts a corrupted element. Host only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"
#include "rn_test.h"

static const int rb_nranks[] = { 1, 2, 3, 8, 17 };

static void test_encode(void **state)
{
	/* Known bit patterns: 1.0, -2.0, 0.5 and a subnormal. */
	assert_int_equal(rb_data_encode(RB_HALF, 1.0), 0x3c00);
	assert_int_equal(rb_data_encode(RB_HALF, -2.0), 0xc000);
	assert_int_equal(rb_data_encode(RB_BF16, 1.0), 0x3f80);
	assert_int_equal(rb_data_encode(RB_BF16, 0.5), 0x3f00);
	assert_int_equal(rb_data_encode(RB_F8E4M3, 1.0), 0x38);
	assert_int_equal(rb_data_encode(RB_F8E5M2, 1.0), 0x3c);
	assert_int_equal(rb_data_encode(RB_F8E4M3, -16.0), 0xd8);
	assert_int_equal(rb_data_encode(RB_HALF, ldexp(1, -24)), 0x0001);
	assert_int_equal(rb_data_encode(RB_INT8, -1), 0xff);
	assert_true(rb_data_decode(RB_INT8, 0xff) == -1);
	assert_true(rb_data_decode(RB_UINT8, 0xff) == 255);
	assert_true(isnan(rb_data_decode(RB_F8E4M3, 0x7f)));
	assert_true(rb_data_decode(RB_F8E4M3, 0x7e) == 448);
	assert_true(isinf(rb_data_decode(RB_HALF, 0x7c00)));
	for (int t = 0; t < RB_TYPE_NR; t++)
		for (int v = -16; v <= 16; v++) {
			if (!rb_types[t].is_signed && v < 0)
				continue;
			if (rb_types[t].is_float && abs(v) > (1LL << (rb_types[t].mant_bits + 1)))
				continue; /* not exact in this format */
			if (rb_data_decode((enum rb_type)t, rb_data_encode((enum rb_type)t, v)) !=
			    v)
				fail_msg("%s: %d does not round-trip", rb_types[t].name, v);
		}
}

/* Integer bits as a signed or unsigned 64-bit value, exactly. */
static int64_t as_i64(enum rb_type t, uint64_t bits)
{
	size_t w = 8 * rb_types[t].size;

	if (rb_types[t].is_signed && w < 64 && (bits >> (w - 1)) & 1)
		bits |= ~0ULL << w;
	return (int64_t)bits;
}

static int int_greater(enum rb_type t, uint64_t a, uint64_t b)
{
	return rb_types[t].is_signed ? as_i64(t, a) > as_i64(t, b) : a > b;
}

/* Exact reduction of rank values at element g, in the arithmetic of the type. */
static uint64_t simulate(enum rb_type t, enum rb_op op, uint64_t seed, size_t g, int n)
{
	const struct rb_type_info *ti = &rb_types[t];
	uint64_t mask = ti->size >= 8 ? ~0ULL : (1ULL << (8 * ti->size)) - 1;
	double limit = ti->is_float ? ldexp(1, ti->mant_bits + 1) : 0;
	double acc = 0;
	uint64_t iacc = 0;

	for (int r = 0; r < n; r++) {
		uint64_t bits = rb_data_red_value(t, op, seed, g, r, n);
		double v = rb_data_decode(t, bits);

		if (ti->is_float) {
			double s = op == RB_OP_MULSUM ? RB_MULSUM_SCALAR : 1;

			if (r == 0)
				acc = op == RB_OP_PROD ? v : v * s;
			else if (op == RB_OP_PROD)
				acc *= v;
			else if (op == RB_OP_MAX)
				acc = fmax(acc, v);
			else if (op == RB_OP_MIN)
				acc = fmin(acc, v);
			else
				acc += v * s;
			if (fabs(acc) > limit)
				fail_msg("%s %s n=%d: partial %g exceeds exact range %g", ti->name,
					 rb_op_names[op], n, acc, limit);
			continue;
		}
		if (r == 0) {
			iacc = op == RB_OP_MULSUM ? bits * RB_MULSUM_SCALAR : bits;
		} else if (op == RB_OP_PROD) {
			iacc *= bits;
		} else if (op == RB_OP_MAX || op == RB_OP_MIN) {
			if (op == RB_OP_MAX ? int_greater(t, bits, iacc & mask)
					    : int_greater(t, iacc & mask, bits))
				iacc = bits;
		} else {
			iacc += op == RB_OP_MULSUM ? bits * RB_MULSUM_SCALAR : bits;
		}
	}
	if (ti->is_float)
		return rb_data_encode(t, op == RB_OP_AVG ? acc / n : acc);
	iacc &= mask;
	if (op == RB_OP_AVG) {
		int64_t s = as_i64(t, iacc);

		if (!ti->is_signed && s < 0)
			fail_msg("%s avg n=%d: unsigned sum wrapped", ti->name, n);
		if (s % n)
			fail_msg("%s avg n=%d: sum %lld not divisible", ti->name, n, (long long)s);
		return (uint64_t)(s / n) & mask;
	}
	return iacc;
}

static void test_reductions_exact(void **state)
{
	for (size_t ni = 0; ni < sizeof(rb_nranks) / sizeof(rb_nranks[0]); ni++)
		for (int t = 0; t < RB_TYPE_NR; t++)
			for (int op = 0; op < RB_OP_NR; op++)
				for (size_t g = 0; g < 300; g++) {
					int n = rb_nranks[ni];
					uint64_t want = rb_data_red_result((enum rb_type)t,
									   (enum rb_op)op, 7, g, n);
					uint64_t got =
						simulate((enum rb_type)t, (enum rb_op)op, 7, g, n);

					if (want != got)
						fail_msg("%s %s n=%d g=%zu: closed form %#llx, "
							 "reduction %#llx",
							 rb_types[t].name, rb_op_names[op], n, g,
							 (unsigned long long)want,
							 (unsigned long long)got);
				}
}

/* Simulate each collective for n ranks from the fill data and check against expect. */
static void check_coll(enum rb_coll c, enum rb_type t, enum rb_op op, int n, int root)
{
	size_t elt = rb_types[t].size;
	struct rb_layout l;
	unsigned char **send = calloc((size_t)n, sizeof(*send));
	unsigned char *exp, *got;

	rb_coll_layout(c, 4096, elt, n, &l);
	exp = calloc(l.recvcount + 1, elt);
	got = calloc(l.recvcount + 1, elt);
	assert_non_null(send);
	for (int r = 0; r < n; r++) {
		send[r] = calloc(l.sendcount + 1, elt);
		rb_data_fill(c, t, op, &l, n, r, root, 11, send[r]);
	}
	for (int me = 0; me < n; me++) {
		if (!rb_data_expect(c, t, op, &l, n, me, root, 11, exp)) {
			assert_true(c == RB_COLL_REDUCE && me != root);
			continue;
		}
		for (size_t j = 0; j < l.recvcount; j++) {
			size_t q = l.count ? j / l.count : 0, k = l.count ? j % l.count : 0;
			uint64_t v;

			switch (c) {
			case RB_COLL_ALL_GATHER:
				v = rb_data_load(t, send[q], k);
				break;
			case RB_COLL_ALLTOALL:
				v = rb_data_load(t, send[q], (size_t)me * l.count + k);
				break;
			case RB_COLL_SENDRECV:
				v = rb_data_load(t, send[(me - 1 + n) % n], j);
				break;
			case RB_COLL_BROADCAST:
				v = rb_data_load(t, send[root], j);
				break;
			case RB_COLL_REDUCE_SCATTER:
				v = simulate(t, op, 11, (size_t)me * l.count + j, n);
				break;
			default:
				v = simulate(t, op, 11, j, n);
				break;
			}
			rb_data_store(t, got, j, v);
		}
		assert_int_equal(rb_data_compare(t, op, n, got, exp, l.recvcount), 0);
		if (l.recvcount) {
			/* A wrong element is counted: a flipped high bit, or NaN for floats
			 * (all ones is a NaN in every float format here). */
			if (rb_types[t].is_float)
				rb_data_store(t, got, 0, ~0ULL);
			else
				rb_data_store(t, got, 0,
					      rb_data_load(t, got, 0) ^ (1ULL << (8 * elt - 2)));
			assert_int_equal(rb_data_compare(t, op, n, got, exp, l.recvcount), 1);
		}
	}
	for (int r = 0; r < n; r++)
		free(send[r]);
	free(send);
	free(exp);
	free(got);
}

static void test_collectives(void **state)
{
	for (int c = 0; c < RB_COLL_NR; c++)
		for (int t = 0; t < RB_TYPE_NR; t++)
			for (size_t ni = 0; ni < 4; ni++) {
				int n = rb_nranks[ni];

				if (rb_colls[c].reduces) {
					for (int op = 0; op < RB_OP_NR; op++)
						check_coll((enum rb_coll)c, (enum rb_type)t,
							   (enum rb_op)op, n, n - 1);
				} else {
					check_coll((enum rb_coll)c, (enum rb_type)t, RB_OP_SUM, n,
						   n - 1);
				}
			}
}

static void test_values_vary(void **state)
{
	/* The inputs are not trivially constant: ranks and seeds give different data. */
	int differ_rank = 0, differ_seed = 0;

	for (size_t g = 0; g < 64; g++) {
		differ_rank += rb_data_red_value(RB_FLOAT, RB_OP_SUM, 1, g, 0, 4) !=
			       rb_data_red_value(RB_FLOAT, RB_OP_SUM, 1, g, 1, 4);
		differ_seed += rb_data_red_value(RB_FLOAT, RB_OP_SUM, 1, g, 0, 4) !=
			       rb_data_red_value(RB_FLOAT, RB_OP_SUM, 2, g, 0, 4);
	}
	assert_true(differ_rank > 32);
	assert_true(differ_seed > 32);
}

/* Fill (w = 0) or write the expectation (w = 1) of coll's all-reduce-like data on thr
 * threads into buf. */
static void fill_or_expect(int w, enum rb_coll coll, const struct rb_layout *l, int thr,
			   unsigned char *buf)
{
	rb_data_set_threads(thr);
	if (w)
		assert_int_equal(rb_data_expect(coll, RB_FLOAT, RB_OP_SUM, l, 3, 1, 0, 5, buf), 1);
	else
		rb_data_fill(coll, RB_FLOAT, RB_OP_SUM, l, 3, 1, 0, 5, buf);
}

/* The fill and the expectation cut large ranges into one slice per thread: the bytes must be
 * those of one thread, for a count that does not divide evenly and for each kind of value. */
static void test_threads_same_bytes(void **state)
{
	static const enum rb_coll colls[] = { RB_COLL_ALL_REDUCE, RB_COLL_ALL_GATHER,
					      RB_COLL_REDUCE_SCATTER };
	size_t bytes = ((size_t)3 << 20) * 4 + 28; /* 3 Mi + 7 floats */

	(void)state;
	for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++) {
		struct rb_layout l;
		unsigned char *one, *many;
		size_t n;

		rb_coll_layout(colls[k], bytes, 4, 3, &l);
		n = (l.sendcount > l.recvcount ? l.sendcount : l.recvcount) * 4;
		one = malloc(n);
		many = malloc(n);
		assert_non_null(one);
		assert_non_null(many);
		for (int w = 0; w < 2; w++) {
			memset(one, 0xa5, n);
			memset(many, 0x5a, n);
			fill_or_expect(w, colls[k], &l, 1, one);
			fill_or_expect(w, colls[k], &l, 5, many);
			assert_memory_equal(one, many, (w ? l.recvcount : l.sendcount) * 4);
		}
		free(one);
		free(many);
	}
	rb_data_set_threads(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_reductions_exact),
		cmocka_unit_test(test_collectives),
		cmocka_unit_test(test_values_vary),
		cmocka_unit_test(test_threads_same_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
