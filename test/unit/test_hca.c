// SPDX-License-Identifier: Apache-2.0
/*
 * NCCL_IB_HCA: the strict parser (every error branch, each with its reason) and NCCL's
 * matching semantics (prefixes, '=' exact, '^' exclude, dev:port, rail and plane fields),
 * over tables of inputs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "railnet/hca.h"
#include "rn_test.h"

static void test_parse_ok(void **state)
{
	struct rn_hca_filter f;
	char why[128] = "";

	(void)state;
	assert_int_equal(rn_hca_parse(NULL, &f, why, sizeof(why)), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(rn_hca_parse("", &f, why, sizeof(why)), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(rn_hca_parse("^=mlx5_0:1,mlx5_1::3:4,mlx5_2:2:7", &f, why, sizeof(why)),
			 0);
	assert_true(f.exclude && f.exact);
	assert_int_equal(f.n, 3);
	assert_string_equal(f.e[0].name, "mlx5_0");
	assert_int_equal(f.e[0].port, 1);
	assert_int_equal(f.e[0].rail, -1);
	assert_int_equal(f.e[1].port, -1);
	assert_int_equal(f.e[1].rail, 3);
	assert_int_equal(f.e[1].plane, 4);
	assert_int_equal(f.e[2].rail, 7);
	assert_int_equal(f.e[2].plane, -1);
	assert_int_equal(rn_hca_parse("mlx5", &f, why, sizeof(why)), 0);
	assert_false(f.exclude || f.exact);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *in, *why;
	} cases[] = {
		{ "^", "no device after '^'" },
		{ "=", "no device after '='" },
		{ "^=", "no device after '^='" },
		{ ",mlx5_0", "entry 1 has no device name" },
		{ "mlx5_0,", "trailing ','" },
		{ "mlx5_0,,mlx5_1", "entry 2 has no device name" },
		{ "mlx5 0", "character ' '" },
		{ "mlx5_0:x", "port field has 'x'" },
		{ "mlx5_0:0", "port 0 out of range 1..255" },
		{ "mlx5_0:256", "port out of range 1..255" },
		{ "mlx5_0:01", "port with a leading zero" },
		{ "mlx5_0:1:32768", "rail out of range 0..32767" },
		{ "mlx5_0:1:0:16384", "plane out of range 0..16383" }, /* bit 14: merged planes */
		{ "mlx5_0:1:2:-1", "plane field has '-'" },
		{ "mlx5_0:1:2:3:4", "more than 4 fields" },
		{ ":1", "entry 1 has no device name" },
		{ "^^mlx5", "character '^'" },
		{ "0123456789012345678901234567890123456789012345678901234567890123x",
		  "device name longer than 63" },
	};
	char many[32 * 4 + 8] = "";

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rn_hca_filter f = { .n = 99 };
		char why[128] = "";

		if (rn_hca_parse(cases[i].in, &f, why, sizeof(why)) != -EINVAL)
			fail_msg("'%s' was accepted", cases[i].in);
		if (!strstr(why, cases[i].why))
			fail_msg("'%s': reason '%s' lacks '%s'", cases[i].in, why, cases[i].why);
		assert_int_equal(f.n, 99); /* untouched */
	}
	for (int i = 0; i < 33; i++)
		strcat(many, i ? ",a" : "a");
	{
		struct rn_hca_filter f;
		char why[128] = "";

		assert_int_equal(rn_hca_parse(many, &f, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "more than 32 entries"));
		many[strlen(many) - 2] = '\0'; /* 32 entries: fine */
		assert_int_equal(rn_hca_parse(many, &f, why, sizeof(why)), 0);
		assert_int_equal(f.n, 32);
	}
}

static void test_match(void **state)
{
	static const struct {
		const char *filter, *dev;
		int port;
		bool keep;
		int rail;
	} cases[] = {
		{ "", "mlx5_0", 1, true, -1 },
		{ "mlx5_1", "mlx5_1", 1, true, -1 },
		{ "mlx5_1", "mlx5_10", 1, true, -1 }, /* prefix, as NCCL */
		{ "=mlx5_1", "mlx5_10", 1, false, -1 },
		{ "=mlx5_1", "mlx5_1", 2, true, -1 },
		{ "mlx5_1:1", "mlx5_1", 2, false, -1 },
		{ "mlx5_1:2", "mlx5_1", 2, true, -1 },
		{ "^mlx5_1", "mlx5_1", 1, false, -1 },
		{ "^mlx5_1", "mlx5_10", 1, false, -1 },
		{ "^=mlx5_1", "mlx5_10", 1, true, -1 },
		{ "^mlx5_1:1", "mlx5_1", 2, true, -1 },
		{ "mlx5_0::3:1,mlx5_1:1:4", "mlx5_1", 1, true, 4 },
		{ "mlx5_0::3:1,mlx5_1:1:4", "mlx5_0", 7, true, 3 },
		{ "^mlx5_0::3", "mlx5_1", 1, true, -1 }, /* exclude lists give no rail */
		{ "ib", "mlx5_0", 1, false, -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rn_hca_entry *e = (const void *)1;
		struct rn_hca_filter f;
		char why[128];
		bool keep;

		assert_int_equal(rn_hca_parse(cases[i].filter, &f, why, sizeof(why)), 0);
		keep = rn_hca_keep(&f, cases[i].dev, cases[i].port, &e);
		if (keep != cases[i].keep)
			fail_msg("%s on %s:%d: keep %d", cases[i].filter, cases[i].dev,
				 cases[i].port, keep);
		if ((e ? e->rail : -1) != cases[i].rail)
			fail_msg("%s on %s:%d: rail %d", cases[i].filter, cases[i].dev,
				 cases[i].port, e ? e->rail : -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
