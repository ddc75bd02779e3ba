// SPDX-License-Identifier: Apache-2.0
/*
 * Tests of src/config.c: defaults, every class of bad value (one WARN each, all reported,
 * -EINVAL, nothing half-filled), INFO lines for non-default values, unknown RAILNET_* names,
 * the refcounted process-wide copy, and the Markdown writer. Environments are arrays; the
 * process environment is never modified.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/config.h"
#include "railnet/log.h"
#include "rn_test.h"

extern char **environ;

/* Environment arrays are char *const[] (as execve takes them); literals need the cast. */
#define RN_S(lit) ((char *)(lit))

static int rn_setup(void **state)
{
	rn_test_log_capture();
	return 0;
}

static int rn_teardown(void **state)
{
	rn_log_set_logger(NULL);
	return 0;
}

static int rn_is_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return 0;
	return 1;
}

/* Parse a one-variable environment that must fail with exactly one WARN containing `want`. */
static void rn_expect_bad(const char *entry, const char *want)
{
	char *env[] = { (char *)entry, NULL };
	struct rn_config cfg;

	memset(&cfg, 0xa5, sizeof(cfg));
	rn_test_log_reset();
	if (rn_config_parse(&cfg, env) != -EINVAL)
		fail_msg("%s: accepted, expected a WARN containing \"%s\"", entry, want);
	if (rn_test_log.warns != 1)
		fail_msg("%s: %d WARNs, expected 1 (last: %s)", entry, rn_test_log.warns,
			 rn_test_log.last_warn);
	if (!strstr(rn_test_log.last_warn, want))
		fail_msg("%s: WARN \"%s\" lacks \"%s\"", entry, rn_test_log.last_warn, want);
	assert_true(rn_is_zero(&cfg, sizeof(cfg)));
}

/* Parse a one-variable environment that must succeed without a WARN. */
static void rn_expect_good(const char *entry, struct rn_config *cfg)
{
	char *env[] = { (char *)entry, NULL };

	rn_test_log_reset();
	if (rn_config_parse(cfg, env))
		fail_msg("%s: refused: %s", entry, rn_test_log.last_warn);
	RN_ASSERT_NO_WARN();
}

static void test_defaults(void **state)
{
	char *env[] = { RN_S("PATH=/bin"), RN_S("NCCL_DEBUG=INFO"), NULL };
	struct rn_config cfg;

	assert_int_equal(rn_config_parse(&cfg, env), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(rn_test_log.infos, 0);
	assert_string_equal(cfg.ibverbs_lib, "");
	assert_string_equal(cfg.sysfs_root, "/sys");
	assert_int_equal(cfg.merge, RN_MERGE_AUTO);
	assert_int_equal(cfg.connect_timeout, 120);
	assert_string_equal(cfg.stats_path, "");
	assert_int_equal(cfg.gdr_policy, RN_GDR_STRICT);
	assert_string_equal(cfg.topo_xml, "");
	assert_false(cfg.ib_disable);
	assert_string_equal(cfg.ib_hca, "");
	assert_int_equal(cfg.ib_gid_index, -1);
	assert_int_equal(cfg.ib_addr_family, RN_AF_INET);
	assert_string_equal(cfg.ib_addr_range, "");
	assert_int_equal(cfg.ib_roce_version, 2);
	assert_int_equal(cfg.ib_tc, -1);
	assert_int_equal(cfg.ib_sl, -1);
	assert_int_equal(cfg.ib_timeout, 20);
	assert_int_equal(cfg.ib_retry_cnt, 7);
	assert_int_equal(cfg.ib_pkey, 0);
	assert_int_equal(cfg.ib_qps_per_conn, 1);
	assert_false(cfg.ib_split_data_on_qps); /* round-robin: NCCL's, and measured faster */
	assert_false(cfg.ib_use_inline);
	assert_string_equal(cfg.socket_ifname, "");
	rn_config_fini(&cfg);
	assert_true(rn_is_zero(&cfg, sizeof(cfg)));
	rn_config_fini(&cfg); /* safe twice */
}

/* The table itself: unique names, sane entries, members that do not overlap. */
static void test_table(void **state)
{
	size_t i, j;

	assert_true(rn_config_table_len >= 20);
	for (i = 0; i < rn_config_table_len; i++) {
		const struct rn_config_var *v = &rn_config_table[i];

		assert_non_null(v->name);
		assert_non_null(v->def);
		assert_non_null(v->help);
		assert_true(strlen(v->help) > 20);
		assert_true(!strncmp(v->name, "RAILNET_", 8) || !strncmp(v->name, "NCCL_", 5));
		assert_true(v->offset < sizeof(struct rn_config));
		if (v->type == RN_CFG_INT)
			assert_true(v->min <= v->max);
		if (v->type == RN_CFG_ENUM)
			assert_non_null(v->words);
		if (v->type == RN_CFG_STRING)
			assert_non_null(v->syntax);
		for (j = 0; j < i; j++) {
			assert_string_not_equal(v->name, rn_config_table[j].name);
			assert_int_not_equal(v->offset, rn_config_table[j].offset);
		}
	}
}

static void test_good_values(void **state)
{
	static char big[RN_CONFIG_STRING_MAX + 32];
	struct rn_config cfg;

	rn_expect_good("NCCL_IB_TIMEOUT=31", &cfg);
	assert_int_equal(cfg.ib_timeout, 31);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_TIMEOUT=1", &cfg);
	assert_int_equal(cfg.ib_timeout, 1);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_TC=0x6A", &cfg);
	assert_int_equal(cfg.ib_tc, 106);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_TC=+106", &cfg);
	assert_int_equal(cfg.ib_tc, 106);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_GID_INDEX=-1", &cfg);
	assert_int_equal(cfg.ib_gid_index, -1);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_GID_INDEX=0", &cfg);
	assert_int_equal(cfg.ib_gid_index, 0);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_PKEY=65535", &cfg);
	assert_int_equal(cfg.ib_pkey, 65535);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_DISABLE=1", &cfg);
	assert_true(cfg.ib_disable);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_SPLIT_DATA_ON_QPS=0", &cfg);
	assert_false(cfg.ib_split_data_on_qps);
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_MERGE=PoRtS", &cfg);
	assert_int_equal(cfg.merge, RN_MERGE_PORTS);
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_GDR_POLICY=off", &cfg);
	assert_int_equal(cfg.gdr_policy, RN_GDR_OFF);
	rn_config_fini(&cfg);
	rn_expect_good("NCCL_IB_ADDR_FAMILY=AF_INET6", &cfg);
	assert_int_equal(cfg.ib_addr_family, RN_AF_INET6);
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_IBVERBS_LIB=/opt/softverbs/lib/libibverbs.so.1", &cfg);
	assert_string_equal(cfg.ibverbs_lib, "/opt/softverbs/lib/libibverbs.so.1");
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_STATS=/tmp/st\xc3\xa4ts.json", &cfg); /* UTF-8 is fine */
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_STATS=/var/run/railnet/%h-%p-100%%.prom", &cfg);
	assert_string_equal(cfg.stats_path, "/var/run/railnet/%h-%p-100%%.prom");
	rn_config_fini(&cfg);
	rn_expect_good("RAILNET_STATS_INTERVAL=30", &cfg);
	assert_int_equal(cfg.stats_interval, 30);
	rn_config_fini(&cfg);

	/* exactly the limit */
	memcpy(big, "RAILNET_STATS=", 14);
	memset(big + 14, 'a', RN_CONFIG_STRING_MAX);
	big[14 + RN_CONFIG_STRING_MAX] = '\0';
	rn_expect_good(big, &cfg);
	assert_int_equal(strlen(cfg.stats_path), RN_CONFIG_STRING_MAX);
	rn_config_fini(&cfg);

	/* structure of lists and ranges */
	static const char *const good[] = {
		"NCCL_IB_HCA=mlx5",
		"NCCL_IB_HCA=^=mlx5_0:1,mlx5_1",
		"NCCL_IB_HCA==mlx5_5:1:0:0,mlx5_6:1",
		"NCCL_IB_HCA=mlx5_0::3",
		"NCCL_IB_HCA=^mlx5_2",
		"NCCL_SOCKET_IFNAME==eth0",
		"NCCL_SOCKET_IFNAME=^docker,lo",
		"NCCL_SOCKET_IFNAME=enp1s0f0np0",
		"NCCL_IB_ADDR_RANGE=10.0.0.0/8",
		"NCCL_IB_ADDR_RANGE=0.0.0.0/0",
		"NCCL_IB_ADDR_RANGE=192.168.100.0/24",
		"NCCL_IB_ADDR_RANGE=fd02::/16",
		"NCCL_IB_ADDR_RANGE=::ffff:10.0.0.0/104",
		"NCCL_IB_ADDR_RANGE=2001:db8::/128",
		"NCCL_IB_ADDR_RANGE=",
		"NCCL_IB_HCA=",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		rn_expect_good(good[i], &cfg);
		assert_string_equal(strchr(good[i], '=') + 1,
				    !strncmp(good[i], "NCCL_IB_HCA", 11)   ? cfg.ib_hca
				    : !strncmp(good[i], "NCCL_SOCKET", 11) ? cfg.socket_ifname
									   : cfg.ib_addr_range);
		rn_config_fini(&cfg);
	}
}

static void test_bad_numbers(void **state)
{
	/* not a number */
	rn_expect_bad("NCCL_IB_QPS_PER_CONNECTION=abc",
		      "NCCL_IB_QPS_PER_CONNECTION=abc: not an integer (allowed 1..128)");
	rn_expect_bad("NCCL_IB_TIMEOUT=-", "NCCL_IB_TIMEOUT=-: not an integer (allowed 1..31)");
	rn_expect_bad("NCCL_IB_TIMEOUT=+", "not an integer");
	rn_expect_bad("NCCL_IB_TC=0x", "NCCL_IB_TC=0x: not an integer");
	rn_expect_bad("NCCL_IB_TC=0xg", "not an integer");
	rn_expect_bad("NCCL_IB_TC=1e3", "not an integer");
	rn_expect_bad("NCCL_IB_TC=1.5", "not an integer");
	/* trailing junk, whitespace */
	rn_expect_bad("NCCL_IB_TIMEOUT=20x", "NCCL_IB_TIMEOUT=20x: not an integer (allowed 1..31)");
	rn_expect_bad("NCCL_IB_TIMEOUT=20 ", "not an integer");
	rn_expect_bad("NCCL_IB_TIMEOUT= 20", "not an integer");
	rn_expect_bad("RAILNET_CONNECT_TIMEOUT=30s", "RAILNET_CONNECT_TIMEOUT=30s: not an integer");
	rn_expect_bad("NCCL_IB_TIMEOUT=99999999999999999999x", "not an integer");
	/* leading zero (octal to NCCL) */
	rn_expect_bad("NCCL_IB_TC=010", "NCCL_IB_TC=010: leading zero not accepted");
	rn_expect_bad("NCCL_IB_TC=-00", "leading zero");
	/* overflow */
	rn_expect_bad("NCCL_IB_PKEY=99999999999999999999999",
		      "NCCL_IB_PKEY=99999999999999999999999: out of range 0..65535");
	rn_expect_bad("NCCL_IB_PKEY=-99999999999999999999999", "out of range 0..65535");
	rn_expect_bad("NCCL_IB_PKEY=0xffffffffffffffffff", "out of range 0..65535");
	rn_expect_bad("NCCL_IB_GID_INDEX=4294967296", "out of range -1..255");
	rn_expect_bad("NCCL_IB_GID_INDEX=9223372036854775808", "out of range -1..255");
	rn_expect_bad("NCCL_IB_GID_INDEX=-9223372036854775808", "out of range -1..255");
	/* out of range, low and high */
	rn_expect_bad("NCCL_IB_TIMEOUT=40", "NCCL_IB_TIMEOUT=40: out of range 1..31");
	rn_expect_bad("NCCL_IB_TIMEOUT=0", "NCCL_IB_TIMEOUT=0: out of range 1..31");
	rn_expect_bad("NCCL_IB_TIMEOUT=32", "out of range 1..31");
	rn_expect_bad("NCCL_IB_GID_INDEX=-2", "NCCL_IB_GID_INDEX=-2: out of range -1..255");
	rn_expect_bad("NCCL_IB_GID_INDEX=256", "out of range -1..255");
	rn_expect_bad("NCCL_IB_RETRY_CNT=8", "NCCL_IB_RETRY_CNT=8: out of range 0..7");
	rn_expect_bad("NCCL_IB_SL=16", "out of range -1..15");
	rn_expect_bad("NCCL_IB_ROCE_VERSION_NUM=3", "out of range 1..2");
	rn_expect_bad("NCCL_IB_QPS_PER_CONNECTION=0", "out of range 1..128");
	rn_expect_bad("NCCL_IB_QPS_PER_CONNECTION=129", "out of range 1..128");
	rn_expect_bad("RAILNET_CONNECT_TIMEOUT=0", "out of range 1..86400");
	/* empty */
	rn_expect_bad("NCCL_IB_TIMEOUT=",
		      "NCCL_IB_TIMEOUT=: empty value (allowed 1..31; unset it for the default 20)");
}

static void test_bad_words(void **state)
{
	rn_expect_bad("RAILNET_MERGE=foo", "RAILNET_MERGE=foo: not one of auto, ports, none");
	rn_expect_bad("RAILNET_MERGE=", "RAILNET_MERGE=: empty value (allowed auto, ports, none");
	rn_expect_bad("RAILNET_MERGE=auto ", "not one of auto, ports, none");
	rn_expect_bad("RAILNET_GDR_POLICY=loose",
		      "RAILNET_GDR_POLICY=loose: not one of strict, warn, off");
	rn_expect_bad("NCCL_IB_ADDR_FAMILY=af_inet6",
		      "NCCL_IB_ADDR_FAMILY=af_inet6: not one of AF_INET, AF_INET6 (case matters, "
		      "as in NCCL)");
	rn_expect_bad("NCCL_IB_ADDR_FAMILY=INET", "not one of AF_INET, AF_INET6");
	rn_expect_bad("NCCL_IB_DISABLE=yes", "NCCL_IB_DISABLE=yes: not 0 or 1");
	rn_expect_bad("NCCL_IB_DISABLE=true", "not 0 or 1");
	rn_expect_bad("NCCL_IB_DISABLE=2", "not 0 or 1");
	rn_expect_bad("NCCL_IB_DISABLE=01", "not 0 or 1");
	rn_expect_bad("NCCL_IB_USE_INLINE=", "NCCL_IB_USE_INLINE=: empty value (allowed 0 or 1");
}

static void test_bad_strings(void **state)
{
	static char big[RN_CONFIG_STRING_MAX + 32];

	memcpy(big, "RAILNET_STATS=", 14);
	memset(big + 14, 'a', RN_CONFIG_STRING_MAX + 1);
	big[14 + RN_CONFIG_STRING_MAX + 1] = '\0';
	rn_expect_bad(big, "...(4096 bytes): longer than 4095 bytes");
	rn_expect_bad("RAILNET_STATS=a\tb",
		      "RAILNET_STATS=a\\x09b: control character 0x09 at byte 1");
	rn_expect_bad("RAILNET_TOPO_XML=x\x7f", "control character 0x7f at byte 1");
	rn_expect_bad("RAILNET_STATS=/tmp/%h-%d.json",
		      "RAILNET_STATS=/tmp/%h-%d.json: '%d' at byte 8: allowed are %h (host name), "
		      "%p (process id) and %% (a '%')");
	rn_expect_bad("RAILNET_STATS=/tmp/50%", "'%' at byte 7");
	rn_expect_bad("RAILNET_STATS_INTERVAL=-1", "RAILNET_STATS_INTERVAL=-1");
	rn_expect_bad("RAILNET_SYSFS_ROOT=",
		      "RAILNET_SYSFS_ROOT=: empty value (expected directory)");
	rn_expect_bad("NCCL_IB_ADDR_RANGE=10.0.0.0/16/16", "prefix length must be 0..32");
	rn_expect_bad("NCCL_IB_ADDR_RANGE=2001:db8::/129", "prefix length must be 0..128");

	static const struct {
		const char *entry, *want;
	} cases[] = {
		/* NCCL_IB_HCA is checked by hca.c's parser, with its reasons */
		{ "NCCL_IB_HCA=^", "NCCL_IB_HCA=^: no device after '^'" },
		{ "NCCL_IB_HCA=^=", "no device after '^='" },
		{ "NCCL_IB_HCA=mlx5_0:x", "entry 1: port field has 'x'" },
		{ "NCCL_IB_HCA=mlx5_0 ", "character ' ' at byte 6 is not allowed" },
		{ "NCCL_IB_HCA=mlx5_0,", "trailing ','" },
		{ "NCCL_IB_HCA=mlx5_0,,mlx5_1", "entry 2 has no device name" },
		{ "NCCL_IB_HCA=:1", "entry 1 has no device name" },
		{ "NCCL_IB_HCA=a:1:2:3:4", "entry 1 has more than 4 fields" },
		{ "NCCL_IB_HCA==^mlx5", "character '^' at byte 1" },
		/* refused by discovery before, now at parse time too */
		{ "NCCL_IB_HCA=mlx5_0:01",
		  "NCCL_IB_HCA=mlx5_0:01: entry 1: port with a leading zero" },
		{ "NCCL_IB_HCA=mlx5_0:0", "entry 1: port 0 out of range 1..255" },
		{ "NCCL_IB_HCA=mlx5_0:1:32768", "entry 1: rail out of range 0..32767" },
		{ "NCCL_SOCKET_IFNAME=averyveryverylongname0", "longer than 15 characters" },
		{ "NCCL_SOCKET_IFNAME=eth0:1:2", "more than 2 ':'-separated fields" },
		{ "NCCL_SOCKET_IFNAME=eth/0", "character '/'" },
		{ "NCCL_IB_ADDR_RANGE=10.0.0.0", "no '/' and prefix length" },
		{ "NCCL_IB_ADDR_RANGE=10.0.0.0/33", "prefix length must be 0..32" },
		{ "NCCL_IB_ADDR_RANGE=10.0.0.0/08", "prefix length must be 0..32" },
		{ "NCCL_IB_ADDR_RANGE=10.0.0.0/", "prefix length must be 0..32" },
		{ "NCCL_IB_ADDR_RANGE=10.0.0/8", "'10.0.0' is not an IPv4 address" },
		{ "NCCL_IB_ADDR_RANGE=/8", "not an IPv4 or IPv6 address before '/'" },
		{ "NCCL_IB_ADDR_RANGE=fe80::zz/64", "is not an IPv6 address" },
		{ "NCCL_IB_ADDR_RANGE=fd00::/064", "prefix length must be 0..128" },
		{ "NCCL_IB_ADDR_RANGE=2001:0db8:0000:0000:0000:0000:0000:0000:0000:0000:0000/64",
		  "longer than 50 bytes" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		rn_expect_bad(cases[i].entry, cases[i].want);
}

/* Every bad variable is reported, not only the first; good ones do not hide them. */
static void test_several_bad(void **state)
{
	char *env[] = {
		RN_S("NCCL_IB_TIMEOUT=40"),
		RN_S("RAILNET_MERGE=foo"),
		RN_S("NCCL_IB_QPS_PER_CONNECTION=abc"),
		RN_S("NCCL_IB_RETRY_CNT=5"), /* good */
		RN_S("NCCL_IB_HCA=mlx5_0,"),
		RN_S("RAILNET_IBVERBS_LIB=/x.so"), /* good */
		RN_S("NCCL_IB_DISABLE="),
		NULL,
	};
	struct rn_config cfg;

	memset(&cfg, 0x5a, sizeof(cfg));
	assert_int_equal(rn_config_parse(&cfg, env), -EINVAL);
	assert_int_equal(rn_test_log.warns, 5);
	assert_true(rn_test_log_contains("NCCL_IB_TIMEOUT=40: out of range 1..31"));
	assert_true(rn_test_log_contains("RAILNET_MERGE=foo: not one of auto, ports, none"));
	assert_true(rn_test_log_contains(
		"NCCL_IB_QPS_PER_CONNECTION=abc: not an integer (allowed 1..128)"));
	assert_true(rn_test_log_contains("NCCL_IB_HCA=mlx5_0,: trailing ','"));
	assert_true(rn_test_log_contains("NCCL_IB_DISABLE=: empty value"));
	assert_true(rn_is_zero(&cfg, sizeof(cfg)));
}

static void test_first_wins(void **state)
{
	char *env[] = { RN_S("NCCL_IB_TIMEOUT=21"), RN_S("NCCL_IB_TIMEOUT=40"), NULL };
	struct rn_config cfg;

	assert_int_equal(rn_config_parse(&cfg, env), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(cfg.ib_timeout, 21);
	rn_config_fini(&cfg);
}

static void test_info_lines(void **state)
{
	char *env[] = {
		RN_S("NCCL_IB_TIMEOUT=22"),
		RN_S("NCCL_IB_DISABLE=1"),
		RN_S("NCCL_IB_RETRY_CNT=0x7"), /* the default, written differently: no line */
		RN_S("NCCL_IB_TC=0x0"),	       /* 0 is not the default -1 */
		RN_S("NCCL_IB_SL=-1"),	       /* the default: no line */
		RN_S("RAILNET_MERGE=AUTO"),    /* the default in another case: no line */
		RN_S("RAILNET_STATS=/tmp/s.json"),
		NULL,
	};
	struct rn_config cfg;

	assert_int_equal(rn_config_parse(&cfg, env), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(rn_test_log.infos, 4);
	assert_true(rn_test_log_contains("NCCL_IB_TIMEOUT=22 (default 20)\n"));
	assert_true(rn_test_log_contains("NCCL_IB_DISABLE=1 (default 0)\n"));
	assert_true(rn_test_log_contains("NCCL_IB_TC=0x0 (default -1)\n"));
	assert_true(rn_test_log_contains("RAILNET_STATS=/tmp/s.json (default empty)\n"));
	assert_false(rn_test_log_contains("NCCL_IB_RETRY_CNT"));
	assert_false(rn_test_log_contains("RAILNET_MERGE"));
	assert_false(rn_test_log_contains("NCCL_IB_SL"));
	rn_config_fini(&cfg);
}

static void test_unknown_own_names(void **state)
{
	char *env[] = { RN_S("RAILNET_MREGE=none"), RN_S("RAILNET_ZZZZZZZZZZZZZZ=1"),
			RN_S("RAILNET_STAT"), NULL };
	struct rn_config cfg;

	assert_int_equal(rn_config_parse(&cfg, env), 0);
	assert_int_equal(rn_test_log.warns, 3);
	assert_true(rn_test_log_contains(
		"RAILNET_MREGE: unknown variable, ignored (did you mean RAILNET_MERGE?)"));
	assert_true(rn_test_log_contains("RAILNET_ZZZZZZZZZZZZZZ: unknown variable, ignored (see"));
	assert_true(rn_test_log_contains("RAILNET_STAT: unknown variable, ignored (did you mean "
					 "RAILNET_STATS?)"));
	assert_int_equal(cfg.merge, RN_MERGE_AUTO);
	rn_config_fini(&cfg);
}

/*
 * The variables docs/env.md lists as NCCL's, not railnet's: not in the table, and neither read
 * nor warned about nor logged, even with values railnet would refuse for its own variables;
 * the result is the same as from an empty environment, member by member.
 */
static void test_nccl_only_names(void **state)
{
	static const char *const nccl_only[] = {
		"NCCL_NET_PLUGIN",	"NCCL_NET",   "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ",
		"NCCL_NET_FORCE_FLUSH", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",  "NCCL_IB_MERGE_NICS",
		"NCCL_IB_AR_THRESHOLD",
	};
	char *env[] = {
		RN_S("NCCL_NET_PLUGIN=railnet"), RN_S("NCCL_NET=IB"),
		RN_S("NCCL_NET_GDR_LEVEL=SYS"),	 RN_S("NCCL_NET_GDR_READ=yes"),
		RN_S("NCCL_NET_FORCE_FLUSH=2"),	 RN_S("NCCL_DEBUG=TRACE"),
		RN_S("NCCL_DEBUG_SUBSYS=ALL"),	 RN_S("NCCL_IB_MERGE_NICS=1"),
		RN_S("NCCL_IB_AR_THRESHOLD=0x"), NULL,
	};
	char *none[] = { NULL };
	struct rn_config cfg, ref;

	for (size_t i = 0; i < sizeof(nccl_only) / sizeof(nccl_only[0]); i++)
		for (size_t j = 0; j < rn_config_table_len; j++)
			if (!strcmp(nccl_only[i], rn_config_table[j].name))
				fail_msg("%s is NCCL's (docs/env.md) but in railnet's table",
					 nccl_only[i]);
	assert_int_equal(rn_config_parse(&ref, none), 0);
	rn_test_log_reset();
	assert_int_equal(rn_config_parse(&cfg, env), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(rn_test_log.infos, 0);
	for (size_t j = 0; j < rn_config_table_len; j++) {
		const struct rn_config_var *v = &rn_config_table[j];
		const char *a = (const char *)&cfg + v->offset, *b = (const char *)&ref + v->offset;
		const char *sa, *sb;
		bool ba, bb;
		int ia, ib;

		if (v->type == RN_CFG_STRING) {
			memcpy(&sa, a, sizeof(sa));
			memcpy(&sb, b, sizeof(sb));
			assert_string_equal(sa, sb);
		} else if (v->type == RN_CFG_BOOL) {
			memcpy(&ba, a, sizeof(ba));
			memcpy(&bb, b, sizeof(bb));
			assert_int_equal(ba, bb);
		} else {
			memcpy(&ia, a, sizeof(ia));
			memcpy(&ib, b, sizeof(ib));
			assert_int_equal(ia, ib);
		}
	}
	rn_config_fini(&cfg);
	rn_config_fini(&ref);
}

/* NULL means the process environment: swap environ for an array instead of calling setenv. */
static void test_null_is_environ(void **state)
{
	char *fake[] = { RN_S("NCCL_IB_TIMEOUT=23"), NULL };
	char **saved = environ;
	struct rn_config cfg;
	int ret;

	environ = fake;
	ret = rn_config_parse(&cfg, NULL);
	environ = saved;
	assert_int_equal(ret, 0);
	assert_int_equal(cfg.ib_timeout, 23);
	rn_config_fini(&cfg);
}

static void test_acquire_release(void **state)
{
	char *env_a[] = { RN_S("NCCL_IB_TIMEOUT=21"), NULL };
	char *env_b[] = { RN_S("NCCL_IB_TIMEOUT=22"), NULL };
	char *env_bad[] = { RN_S("NCCL_IB_TIMEOUT=99"), NULL };

	assert_null(rn_config());
	assert_int_equal(rn_config_acquire_env(env_a), 0);
	assert_non_null(rn_config());
	assert_int_equal(rn_config()->ib_timeout, 21);
	/* a second reference does not re-parse */
	assert_int_equal(rn_config_acquire_env(env_b), 0);
	assert_int_equal(rn_config()->ib_timeout, 21);
	rn_config_release();
	assert_non_null(rn_config());
	assert_int_equal(rn_config()->ib_timeout, 21);
	rn_config_release();
	assert_null(rn_config());

	/* after the last release the next acquire parses again */
	assert_int_equal(rn_config_acquire_env(env_b), 0);
	assert_int_equal(rn_config()->ib_timeout, 22);
	rn_config_release();
	assert_null(rn_config());

	/* a failed first acquire takes no reference */
	assert_int_equal(rn_config_acquire_env(env_bad), -EINVAL);
	assert_int_equal(rn_test_log.warns, 1);
	assert_null(rn_config());
	rn_test_log_reset();
	assert_int_equal(rn_config_acquire_env(env_a), 0);
	assert_int_equal(rn_config()->ib_timeout, 21);
	rn_config_release();
	RN_ASSERT_NO_WARN();

	/* an unbalanced release is reported, not a crash */
	rn_config_release();
	assert_int_equal(rn_test_log.warns, 1);
	assert_true(rn_test_log_contains("released more often than acquired"));
	assert_null(rn_config());
}

static void *rn_churn(void *arg)
{
	char *env[] = { RN_S("NCCL_IB_RETRY_CNT=3"), NULL };
	int i;

	for (i = 0; i < 2000; i++) {
		if (rn_config_acquire_env(env))
			return (void *)1;
		if (!rn_config() || rn_config()->ib_retry_cnt != 3)
			return (void *)2;
		rn_config_release();
	}
	return NULL;
}

/* Concurrent acquire/release from several threads (the logger is quiet: values only INFO). */
static void test_acquire_threads(void **state)
{
	pthread_t t[8];
	void *res;
	int i;

	rn_log_set_logger(NULL); /* the capture buffer is single-threaded */
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rn_churn, NULL), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(t[i], &res), 0);
		assert_null(res);
	}
	assert_null(rn_config());
	rn_test_log_capture();
}

static void test_markdown(void **state)
{
	char *buf = NULL, *row;
	size_t len = 0, i, rows = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rn_config_write_markdown(f), 0);
	fclose(f);
	assert_true(len > 1000);
	assert_true(!strncmp(buf, "# railnet environment variables\n", 32));
	for (i = 0; i < rn_config_table_len; i++) {
		char needle[128];

		snprintf(needle, sizeof(needle), "| `%s` |", rn_config_table[i].name);
		row = strstr(buf, needle);
		if (!row)
			fail_msg("docs lack a row for %s", rn_config_table[i].name);
		/* a pending feature is said so in that row */
		if (rn_config_table[i].pending) {
			char *eol = strchr(row, '\n');

			snprintf(needle, sizeof(needle), "takes effect when %s lands)",
				 rn_config_table[i].pending);
			assert_non_null(eol);
			*eol = '\0';
			if (!strstr(row, needle))
				fail_msg("row of %s lacks \"%s\"", rn_config_table[i].name, needle);
			*eol = '\n';
		}
	}
	for (row = buf; (row = strstr(row, "\n| `")); row++)
		rows++;
	assert_int_equal(rows, rn_config_table_len);
	free(buf);
	RN_ASSERT_NO_WARN();
}

static void test_markdown_write_error(void **state)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		fail_msg("/dev/full cannot be opened: %s", strerror(errno));
	assert_int_equal(rn_config_write_markdown(f), -ENOSPC);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_table, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_good_values, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_bad_numbers, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_bad_words, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_bad_strings, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_several_bad, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_first_wins, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_info_lines, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_own_names, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_nccl_only_names, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_null_is_environ, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_acquire_release, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_acquire_threads, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_markdown, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_markdown_write_error, rn_setup, rn_teardown),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
