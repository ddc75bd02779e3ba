/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test data for the #wrong check. Every element is a small integer (or a sign/power of two for
 * prod) chosen so that every partial result, in any order of reduction, is exactly
 * representable in the element type: then the expected output has a closed form per element
 * (no reference reduction over the ranks) and the comparison is bitwise. The one exception is
 * float avg, which NCCL computes as a pre-multiplication by 1/n, compared with a tolerance.
 * Host memory only; the mode copies buffers to and from its devices.
 *
 * Sums: rank r holds k + d(r) - d(r+1 mod n), so the deltas telescope to zero and the result
 * is n*k; max/min: one rank (chosen per element) holds k, the others lie strictly below/above;
 * prod: factors -1 on two ranks and +-2 on a third, product +-2. Copies carry hashed bits.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "rb.h"

static uint64_t rb_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rb_hash(uint64_t seed, uint64_t g, uint64_t r, uint64_t salt)
{
	return rb_mix(rb_mix(rb_mix(seed ^ (salt << 56)) ^ g) ^ (r * 0x2545f4914f6cdd1dULL));
}

/* Uniform in [lo, hi] (lo <= hi). */
static int64_t rb_pick(uint64_t h, int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)(hi - lo) + 1;

	return lo + (int64_t)(span ? h % span : h);
}

static uint64_t rb_width_mask(enum rb_type t)
{
	size_t s = rb_types[t].size;

	return s >= 8 ? ~0ULL : (1ULL << (8 * s)) - 1;
}

/* Largest magnitude of an integer that is exact in t (and, for sums, never overflows). */
static int64_t rb_exact_limit(enum rb_type t)
{
	const struct rb_type_info *ti = &rb_types[t];

	if (ti->is_float)
		return ti->mant_bits >= 62 ? (1LL << 62) : (1LL << (ti->mant_bits + 1));
	if (ti->size >= 8)
		return 1LL << 62;
	return ti->is_signed ? (int64_t)(rb_width_mask(t) >> 1) : (int64_t)rb_width_mask(t);
}

static int rb_exp_bias(const struct rb_type_info *ti)
{
	return (1 << (ti->exp_bits - 1)) - 1;
}

uint64_t rb_data_encode(enum rb_type t, double v)
{
	const struct rb_type_info *ti = &rb_types[t];
	uint64_t sign, bits;
	int e, bias, mb;
	double m, a;

	if (!ti->is_float)
		return (uint64_t)(int64_t)v & rb_width_mask(t);
	if (t == RB_DOUBLE) {
		memcpy(&bits, &v, sizeof(bits));
		return bits;
	}
	if (t == RB_FLOAT) {
		float f = (float)v;
		uint32_t u;

		memcpy(&u, &f, sizeof(u));
		return u;
	}
	mb = ti->mant_bits;
	bias = rb_exp_bias(ti);
	sign = v < 0 ? 1ULL << (ti->exp_bits + mb) : 0;
	a = fabs(v);
	if (a == 0)
		return sign;
	m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	e -= 1;		  /* a = (2m) * 2^e, 2m in [1, 2) */
	if (e + bias >= 1) {
		uint64_t frac = (uint64_t)llround((2 * m - 1) * (double)(1ULL << mb));

		if (frac >> mb) { /* rounded up to the next binade */
			frac = 0;
			e++;
		}
		bits = ((uint64_t)(e + bias) << mb) | frac;
	} else {
		bits = (uint64_t)llround(ldexp(a, bias - 1 + mb));
	}
	return sign | bits;
}

double rb_data_decode(enum rb_type t, uint64_t bits)
{
	const struct rb_type_info *ti = &rb_types[t];
	int mb, bias;
	uint64_t e, frac;
	double v;

	if (!ti->is_float) {
		if (ti->is_signed && ti->size < 8 && (bits >> (8 * ti->size - 1)) & 1)
			return (double)(int64_t)(bits | ~rb_width_mask(t));
		return ti->is_signed ? (double)(int64_t)bits : (double)bits;
	}
	if (t == RB_DOUBLE) {
		memcpy(&v, &bits, sizeof(v));
		return v;
	}
	if (t == RB_FLOAT) {
		uint32_t u = (uint32_t)bits;
		float f;

		memcpy(&f, &u, sizeof(f));
		return f;
	}
	mb = ti->mant_bits;
	bias = rb_exp_bias(ti);
	e = (bits >> mb) & ((1ULL << ti->exp_bits) - 1);
	frac = bits & ((1ULL << mb) - 1);
	if (t == RB_F8E4M3 && e == 15 && frac == 7)
		return NAN;
	if (t != RB_F8E4M3 && e == (1ULL << ti->exp_bits) - 1)
		return frac ? NAN : INFINITY * ((bits >> (ti->exp_bits + mb)) & 1 ? -1 : 1);
	if (e == 0)
		v = ldexp((double)frac, 1 - bias - mb);
	else
		v = ldexp(1.0 + ldexp((double)frac, -mb), (int)e - bias);
	return (bits >> (ti->exp_bits + mb)) & 1 ? -v : v;
}

uint64_t rb_data_load(enum rb_type t, const void *buf, size_t i)
{
	const unsigned char *p = (const unsigned char *)buf + i * rb_types[t].size;
	uint64_t v = 0;

	memcpy(&v, p, rb_types[t].size); /* little-endian hosts */
	return v;
}

void rb_data_store(enum rb_type t, void *buf, size_t i, uint64_t bits)
{
	memcpy((unsigned char *)buf + i * rb_types[t].size, &bits, rb_types[t].size);
}

/* Parameters of the sum-like patterns for n ranks: k in [klo, khi], deltas in [-c, c]. */
static void rb_sum_bounds(enum rb_type t, enum rb_op op, int n, int64_t *klo, int64_t *khi,
			  int64_t *c)
{
	int64_t s = op == RB_OP_MULSUM ? RB_MULSUM_SCALAR : 1;
	int64_t k = rb_exact_limit(t) / (2 * s * n);

	*khi = k;
	*klo = rb_types[t].is_signed ? -k : 0;
	*c = k / 2;
}

/* Distance between a max/min winner and the other ranks: 1..E. */
static int64_t rb_minmax_spread(enum rb_type t)
{
	int64_t e = rb_exact_limit(t) / 4;

	return e > 16 ? 16 : e;
}

/* Integers are stored directly: a double would round 64-bit values. */
static uint64_t rb_int_or_float(enum rb_type t, int64_t v)
{
	if (!rb_types[t].is_float)
		return (uint64_t)v & rb_width_mask(t);
	return rb_data_encode(t, (double)v);
}

uint64_t rb_data_red_value(enum rb_type t, enum rb_op op, uint64_t seed, size_t g, int rank,
			   int nranks)
{
	int64_t lim = rb_exact_limit(t), lo = rb_types[t].is_signed ? -lim : 0;
	uint64_t salt = (uint64_t)t << 8 | (uint64_t)op;

	switch (op) {
	case RB_OP_PROD: {
		uint64_t h = rb_hash(seed, g, 0, salt);
		int a = (int)(h % (uint64_t)nranks);
		int b = (a + 1) % nranks, w = (a + 2) % nranks;
		int64_t f = 1;

		if (rank == a)
			f = -f;
		if (rank == b)
			f = -f;
		if (rank == w)
			f *= (h >> 32) & 1 ? -2 : 2;
		return rb_int_or_float(t, f);
	}
	case RB_OP_MAX:
	case RB_OP_MIN: {
		int64_t e = rb_minmax_spread(t);
		uint64_t h = rb_hash(seed, g, 0, salt);
		int w = (int)(h % (uint64_t)nranks);
		int64_t k = op == RB_OP_MAX ? rb_pick(h >> 8, lo + e, lim)
					    : rb_pick(h >> 8, lo, lim - e);
		int64_t d;

		if (rank == w)
			return rb_int_or_float(t, k);
		d = 1 + rb_pick(rb_hash(seed, g, (uint64_t)rank + 1, salt), 0, e - 1);
		return rb_int_or_float(t, op == RB_OP_MAX ? k - d : k + d);
	}
	case RB_OP_SUM:
	case RB_OP_AVG:
	case RB_OP_MULSUM:
	default: {
		int64_t klo, khi, c, k, d0, d1;

		rb_sum_bounds(t, op, nranks, &klo, &khi, &c);
		k = rb_pick(rb_hash(seed, g, 0, salt), klo, khi);
		d0 = rb_pick(rb_hash(seed, g, (uint64_t)rank + 1, salt), -c, c);
		d1 = rb_pick(rb_hash(seed, g, (uint64_t)(rank + 1) % (uint64_t)nranks + 1, salt),
			     -c, c);
		return rb_int_or_float(t, k + d0 - d1);
	}
	}
}

uint64_t rb_data_red_result(enum rb_type t, enum rb_op op, uint64_t seed, size_t g, int nranks)
{
	int64_t lim = rb_exact_limit(t), lo = rb_types[t].is_signed ? -lim : 0;
	uint64_t salt = (uint64_t)t << 8 | (uint64_t)op;

	switch (op) {
	case RB_OP_PROD: {
		uint64_t h = rb_hash(seed, g, 0, salt);

		return rb_int_or_float(t, (h >> 32) & 1 ? -2 : 2);
	}
	case RB_OP_MAX:
	case RB_OP_MIN: {
		int64_t e = rb_minmax_spread(t);
		uint64_t h = rb_hash(seed, g, 0, salt);

		return rb_int_or_float(t, op == RB_OP_MAX ? rb_pick(h >> 8, lo + e, lim)
							  : rb_pick(h >> 8, lo, lim - e));
	}
	case RB_OP_SUM:
	case RB_OP_AVG:
	case RB_OP_MULSUM:
	default: {
		int64_t klo, khi, c, k;

		rb_sum_bounds(t, op, nranks, &klo, &khi, &c);
		k = rb_pick(rb_hash(seed, g, 0, salt), klo, khi);
		if (op == RB_OP_SUM)
			k *= nranks;
		else if (op == RB_OP_MULSUM)
			k *= (int64_t)nranks * RB_MULSUM_SCALAR;
		return rb_int_or_float(t, k);
	}
	}
}

/* Hashed bits for copies, never an Inf or NaN pattern (exponent field kept below all-ones). */
static uint64_t rb_copy_value(enum rb_type t, uint64_t seed, size_t g, int rank)
{
	const struct rb_type_info *ti = &rb_types[t];
	uint64_t v = rb_hash(seed, g, (uint64_t)rank, 0xc0) & rb_width_mask(t);

	if (ti->is_float) {
		uint64_t emask = ((1ULL << ti->exp_bits) - 1) << ti->mant_bits;

		if ((v & emask) == emask)
			v &= ~(1ULL << (ti->mant_bits + ti->exp_bits - 1));
	}
	return v;
}

/*
 * Filling and expecting cost 20-55 ns per element (a few hash rounds each): 40 s of a 1 GiB
 * float all-reduce's run with -c 1 on one thread (H200 VM, 2026-12-03). A range is cut into
 * slices of at least RB_DATA_PAR_MIN elements, one per thread up to rb_data_set_threads (so
 * from 2 Mi elements up); every element's value depends on its index only, so the bytes are
 * the same for any thread count.
 */
#define RB_DATA_PAR_MIN ((size_t)1 << 20)
#define RB_DATA_THREADS_MAX 64

static int rb_data_threads = 1;

void rb_data_set_threads(int n)
{
	rb_data_threads = n < 1 ? 1 : n > RB_DATA_THREADS_MAX ? RB_DATA_THREADS_MAX : n;
}

struct rb_data_job {
	enum rb_coll c;
	enum rb_type t;
	enum rb_op op;
	const struct rb_layout *l;
	int nranks, rank, root;
	uint64_t seed;
	void *buf;
	void (*range)(const struct rb_data_job *job, size_t lo, size_t hi);
};

struct rb_data_slice {
	const struct rb_data_job *job;
	size_t lo, hi;
	pthread_t tid;
};

static void *rb_data_slice_main(void *arg)
{
	struct rb_data_slice *s = arg;

	s->job->range(s->job, s->lo, s->hi);
	return NULL;
}

/* Run job->range over [0, n) on up to rb_data_threads threads, this one included; a slice
 * whose thread cannot be created runs here. */
static void rb_data_run(const struct rb_data_job *job, size_t n)
{
	struct rb_data_slice sl[RB_DATA_THREADS_MAX];
	size_t k = n / RB_DATA_PAR_MIN;
	int nt = k < (size_t)rb_data_threads ? (int)(k ? k : 1) : rb_data_threads;
	int started[RB_DATA_THREADS_MAX] = { 0 };

	for (int i = 0; i < nt; i++) {
		sl[i].job = job;
		sl[i].lo = n / (size_t)nt * (size_t)i;
		sl[i].hi = i == nt - 1 ? n : n / (size_t)nt * (size_t)(i + 1);
	}
	for (int i = 1; i < nt; i++)
		started[i] = pthread_create(&sl[i].tid, NULL, rb_data_slice_main, &sl[i]) == 0;
	job->range(job, sl[0].lo, sl[0].hi);
	for (int i = 1; i < nt; i++) {
		if (started[i])
			pthread_join(sl[i].tid, NULL);
		else
			job->range(job, sl[i].lo, sl[i].hi);
	}
}

static void rb_data_fill_range(const struct rb_data_job *job, size_t lo, size_t hi)
{
	for (size_t j = lo; j < hi; j++) {
		uint64_t v;

		switch (job->c) {
		case RB_COLL_ALL_REDUCE:
		case RB_COLL_REDUCE:
		case RB_COLL_REDUCE_SCATTER:
			v = rb_data_red_value(job->t, job->op, job->seed, j, job->rank,
					      job->nranks);
			break;
		default:
			v = rb_copy_value(job->t, job->seed, j, job->rank);
			break;
		}
		rb_data_store(job->t, job->buf, j, v);
	}
}

/* Build the job of one fill or expect over [0, n) of buf and run it. */
static void rb_data_job_run(enum rb_coll c, enum rb_type t, enum rb_op op,
			    const struct rb_layout *l, int nranks, int rank, int root,
			    uint64_t seed, void *buf, size_t n,
			    void (*range)(const struct rb_data_job *, size_t, size_t))
{
	struct rb_data_job job = { .c = c,
				   .t = t,
				   .op = op,
				   .l = l,
				   .nranks = nranks,
				   .rank = rank,
				   .root = root,
				   .seed = seed,
				   .buf = buf,
				   .range = range };

	rb_data_run(&job, n);
}

void rb_data_fill(enum rb_coll c, enum rb_type t, enum rb_op op, const struct rb_layout *l,
		  int nranks, int rank, int root, uint64_t seed, void *send)
{
	rb_data_job_run(c, t, op, l, nranks, rank, root, seed, send, l->sendcount,
			rb_data_fill_range);
}

static void rb_data_expect_range(const struct rb_data_job *job, size_t lo, size_t hi)
{
	enum rb_type t = job->t;
	size_t cnt = job->l->count;
	int rank = job->rank, nranks = job->nranks;

	for (size_t j = lo; j < hi; j++) {
		uint64_t v;

		switch (job->c) {
		case RB_COLL_ALL_REDUCE:
		case RB_COLL_REDUCE:
			v = rb_data_red_result(t, job->op, job->seed, j, nranks);
			break;
		case RB_COLL_REDUCE_SCATTER:
			v = rb_data_red_result(t, job->op, job->seed, (size_t)rank * cnt + j,
					       nranks);
			break;
		case RB_COLL_ALL_GATHER:
			v = rb_copy_value(t, job->seed, j % cnt, (int)(j / cnt));
			break;
		case RB_COLL_ALLTOALL:
			v = rb_copy_value(t, job->seed, (size_t)rank * cnt + j % cnt,
					  (int)(j / cnt));
			break;
		case RB_COLL_SENDRECV:
			v = rb_copy_value(t, job->seed, j, (rank - 1 + nranks) % nranks);
			break;
		case RB_COLL_BROADCAST:
		default:
			v = rb_copy_value(t, job->seed, j, job->root);
			break;
		}
		rb_data_store(t, job->buf, j, v);
	}
}

int rb_data_expect(enum rb_coll c, enum rb_type t, enum rb_op op, const struct rb_layout *l,
		   int nranks, int rank, int root, uint64_t seed, void *expect)
{
	if (c == RB_COLL_REDUCE && rank != root)
		return 0;
	rb_data_job_run(c, t, op, l, nranks, rank, root, seed, expect, l->recvcount,
			rb_data_expect_range);
	return 1;
}

size_t rb_data_compare(enum rb_type t, enum rb_op op, int nranks, const void *got,
		       const void *expect, size_t n)
{
	size_t wrong = 0;

	if (op == RB_OP_AVG && rb_types[t].is_float) {
		/* NCCL scales each input by 1/n before summing: allow the rounding of n terms. */
		double k = (double)(rb_exact_limit(t) / (2 * (int64_t)nranks));
		double tol = (2 * k + 1) * ldexp(1.0, -rb_types[t].mant_bits) * (nranks + 2);

		for (size_t i = 0; i < n; i++) {
			double g = rb_data_decode(t, rb_data_load(t, got, i));
			double e = rb_data_decode(t, rb_data_load(t, expect, i));

			if (!(fabs(g - e) <= tol))
				wrong++;
		}
		return wrong;
	}
	if (rb_types[t].size == 4) {
		const uint32_t *a = got, *b = expect;

		for (size_t i = 0; i < n; i++)
			wrong += a[i] != b[i];
		return wrong;
	}
	for (size_t i = 0; i < n; i++)
		wrong += rb_data_load(t, got, i) != rb_data_load(t, expect, i);
	return wrong;
}
