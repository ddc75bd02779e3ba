// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-bench table text: the three header lines, a data row and the footer, character for
 * character against the example lines of nccl-tests 2.19.6 (reference/nccl-tests.md), the
 * number formatting rule, and per collective the element counts, algbw bytes and busbw factor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"
#include "rn_test.h"

/* The reference's rendering; trailing spaces matter. */
static const char *const ref_head[3] = {
	"#                                                              out-of-place           "
	"            in-place          ",
	"#       size         count      type   redop    root     time   algbw   busbw  #wrong  "
	"   time   algbw   busbw  #wrong ",
	"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)          "
	"   (us)  (GB/s)  (GB/s)         ",
};
static const char ref_row[] = "    33554432       8388608     float     sum      -1  1234.56   "
			      "27.18   47.56       0  1230.00   27.28   47.74       0";

static void test_header(void **state)
{
	char buf[512];

	for (int i = 0; i < 3; i++) {
		rb_fmt_header(buf, sizeof(buf), i, 0, 0);
		assert_string_equal(buf, ref_head[i]);
	}
	assert_int_equal(strlen(ref_head[0]), 116);
	assert_int_equal(strlen(ref_head[1]), 119);
	/* -C renames the time column; -S appends a 19-wide timestamp header. */
	rb_fmt_header(buf, sizeof(buf), 1, 1, 0);
	assert_non_null(strstr(buf, "  cputime   algbw"));
	assert_int_equal(strlen(buf), 119);
	rb_fmt_header(buf, sizeof(buf), 1, 0, 1);
	assert_int_equal(strlen(buf), 118 + 1 + 19);
	assert_non_null(strstr(buf, "#wrong           timestamp"));
}

static void test_row(void **state)
{
	char head[128], h1[64], h2[64], row[256];

	rb_fmt_row_head(head, sizeof(head), 33554432, 8388608, "float", "sum", -1);
	rb_fmt_row_half(h1, sizeof(h1), 1234.56, 27.18, 47.56, 0);
	rb_fmt_row_half(h2, sizeof(h2), 1230.00, 27.28, 47.74, 0);
	snprintf(row, sizeof(row), "%s%s%s", head, h1, h2);
	assert_string_equal(row, ref_row);
	assert_int_equal(strlen(row), 118);
	/* -c 0: "N/A" right-aligned one column short, as nccl-tests prints it. */
	rb_fmt_row_half(h1, sizeof(h1), 10, 1, 1, -1);
	assert_string_equal(h1, "    10.00    1.00    1.00    N/A");
	/* Large #wrong counts use %6g. */
	rb_fmt_row_half(h1, sizeof(h1), 10, 1, 1, 1234567);
	assert_non_null(strstr(h1, "    1.00  1.23457e+06"));
}

static void test_numbers(void **state)
{
	static const struct {
		double v;
		int w;
		const char *out;
	} cases[] = {
		{ 1.5, 7, "   1.50" },	     { 1234.56, 7, "1234.56" },
		{ 12345.6, 7, "12345.6" },   { 123456.7, 7, " 123457" },
		{ 1234567.0, 7, "1234567" }, { 12345678.0, 7, "1.2e+07" },
		{ 27.18, 6, " 27.18" },	     { 1234.56, 6, "1234.6" },
		{ 99999.4, 6, " 99999" },    { 1234567.0, 6, " 1e+06" },
		{ 0, 6, "  0.00" },	     { 0.001, 7, "   0.00" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rb_fmt_num(buf, sizeof(buf), cases[i].v, cases[i].w);
		if (strcmp(buf, cases[i].out))
			fail_msg("%g in %d: '%s', want '%s'", cases[i].v, cases[i].w, buf,
				 cases[i].out);
	}
}

static void test_footer(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	rb_fmt_footer(f, 0, 47.65, "", "all_reduce_perf");
	rb_fmt_footer(f, 3, 1.5, "FAILED", "x");
	fclose(f);
	assert_string_equal(text, "# Out of bounds values : 0 OK\n"
				  "# Avg bus bandwidth    : 47.65 \n"
				  "#\n"
				  "# Collective test concluded: all_reduce_perf\n"
				  "# Out of bounds values : 3 FAILED\n"
				  "# Avg bus bandwidth    : 1.5 FAILED\n"
				  "#\n"
				  "# Collective test concluded: x\n");
	free(text);
}

static void test_busbw_factors(void **state)
{
	static const struct {
		enum rb_coll c;
		int n;
		double f;
	} cases[] = {
		{ RB_COLL_ALL_REDUCE, 1, 0.0 },	      { RB_COLL_ALL_REDUCE, 2, 1.0 },
		{ RB_COLL_ALL_REDUCE, 8, 1.75 },      { RB_COLL_ALL_GATHER, 4, 0.75 },
		{ RB_COLL_REDUCE_SCATTER, 8, 0.875 }, { RB_COLL_ALLTOALL, 2, 0.5 },
		{ RB_COLL_BROADCAST, 8, 1.0 },	      { RB_COLL_REDUCE, 8, 1.0 },
		{ RB_COLL_SENDRECV, 8, 1.0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_true(fabs(rb_coll_busbw_factor(cases[i].c, cases[i].n) - cases[i].f) <
			    1e-12);
}

static void test_layouts(void **state)
{
	struct rb_layout l;

	/* all_reduce: count = size / elt; the size column is the buffer size. */
	rb_coll_layout(RB_COLL_ALL_REDUCE, 33554432, 4, 8, &l);
	assert_int_equal(l.count, 8388608);
	assert_int_equal(rb_coll_size_bytes(&l, 4), 33554432);
	assert_true(rb_coll_alg_bytes(RB_COLL_ALL_REDUCE, &l, 4, 8) == 33554432.0);
	/* Odd sizes are truncated to whole elements. */
	rb_coll_layout(RB_COLL_ALL_REDUCE, 10, 4, 2, &l);
	assert_int_equal(l.count, 2);

	/* all_gather of 1 MiB floats over 3 ranks: per-rank count floor(262144/3) = 87381,
	 * rounded down to 16 bytes (4 floats) = 87380; receive = 3x that. */
	rb_coll_layout(RB_COLL_ALL_GATHER, 1 << 20, 4, 3, &l);
	assert_int_equal(l.count, 87380);
	assert_int_equal(l.sendcount, 87380);
	assert_int_equal(l.recvcount, 3 * 87380);
	assert_int_equal(l.send_ip_off, 87380);
	assert_int_equal(l.recv_ip_off, 0);
	assert_int_equal(rb_coll_size_bytes(&l, 4), 3 * 87380 * 4);
	assert_true(rb_coll_alg_bytes(RB_COLL_ALL_GATHER, &l, 4, 3) == 3.0 * 87380 * 4);

	rb_coll_layout(RB_COLL_REDUCE_SCATTER, 1 << 20, 8, 3, &l);
	assert_int_equal(l.count, 43690); /* floor(131072 / 3) = 43690, even */
	assert_int_equal(l.sendcount, 3 * 43690);
	assert_int_equal(l.recvcount, 43690);
	assert_int_equal(l.recv_ip_off, 43690);
	assert_int_equal(l.send_ip_off, 0);

	rb_coll_layout(RB_COLL_ALLTOALL, 1000, 1, 4, &l);
	assert_int_equal(l.count, 240); /* 250 rounded down to 16 */
	assert_int_equal(l.sendcount, 960);
	assert_int_equal(l.recvcount, 960);

	rb_coll_layout(RB_COLL_BROADCAST, 1024, 2, 4, &l);
	assert_int_equal(l.count, 512);
	rb_coll_layout(RB_COLL_SENDRECV, 1024, 8, 4, &l);
	assert_int_equal(l.count, 128);
	assert_true(rb_coll_alg_bytes(RB_COLL_SENDRECV, &l, 8, 4) == 1024.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),	      cmocka_unit_test(test_row),
		cmocka_unit_test(test_numbers),	      cmocka_unit_test(test_footer),
		cmocka_unit_test(test_busbw_factors), cmocka_unit_test(test_layouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
