// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-bench flag parsing: defaults, size suffixes, every flag's range, the relations
 * between flags, and one test per bad-input class (non-numeric, out of range, -b > -e,
 * unknown collective/op/type, unknown flag, missing value, stray argument, refused flags).
 * Parses only; runs nothing.
 */
#include <string.h>

#include "rb.h"
#include "rn_test.h"

static char rb_err_buf[512];

/* Split "argv0 cmd" on spaces into a static argv and parse it. */
static int parse_as(const char *argv0, const char *cmd, struct rb_args *a)
{
	static char store[1024];
	static char *argv[64];
	int argc = 0;

	snprintf(store, sizeof(store), "%s %s", argv0, cmd);
	for (char *tok = strtok(store, " "); tok && argc < 63; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	rb_err_buf[0] = 0;
	return rb_args_parse(argc, argv, a, rb_err_buf, sizeof(rb_err_buf));
}

/* argv[0] = "railnet-bench" */
static int parse(const char *cmd, struct rb_args *a)
{
	return parse_as("railnet-bench", cmd, a);
}

/* cmd must fail with a message containing want, on one line. */
static void expect_error(const char *cmd, const char *want)
{
	struct rb_args a;

	if (parse(cmd, &a) != -1)
		fail_msg("'%s' was accepted", cmd);
	if (!strstr(rb_err_buf, want))
		fail_msg("'%s': error '%s' does not mention '%s'", cmd, rb_err_buf, want);
	assert_null(strchr(rb_err_buf, '\n'));
}

/*
 * Links named as nccl-tests binaries imply --nccl and their collective: nccl-tests command
 * lines run unchanged; --net and another --coll are refused with the reason.
 */
static void test_perf_names(void **state)
{
	static const struct {
		const char *name;
		enum rb_coll coll;
	} perf[] = { { "all_reduce_perf", RB_COLL_ALL_REDUCE },
		     { "all_gather_perf", RB_COLL_ALL_GATHER },
		     { "reduce_scatter_perf", RB_COLL_REDUCE_SCATTER },
		     { "sendrecv_perf", RB_COLL_SENDRECV },
		     { "alltoall_perf", RB_COLL_ALLTOALL },
		     { "broadcast_perf", RB_COLL_BROADCAST },
		     { "reduce_perf", RB_COLL_REDUCE } };
	struct rb_args a;

	(void)state;
	for (size_t i = 0; i < sizeof(perf) / sizeof(perf[0]); i++) {
		char path[128];

		snprintf(path, sizeof(path), "/opt/nccl-tests/build/%s", perf[i].name);
		assert_int_equal(parse_as(path, "-b 8 -e 128M -f 2 -g 1", &a), 0);
		assert_int_equal(a.mode, RB_MODE_NCCL);
		assert_int_equal(a.coll, perf[i].coll);
		assert_string_equal(a.perf_name, perf[i].name);
		assert_int_equal(a.maxbytes, 128 << 20);
	}
	assert_int_equal(parse_as("all_reduce_perf", "--nccl -c 0", &a), 0);
	assert_int_equal(parse_as("all_reduce_perf", "--coll all_reduce", &a), 0);
	assert_int_equal(parse("--nccl", &a), 0);
	assert_null(a.perf_name);
	/* a name that only looks like one is railnet-bench */
	assert_int_equal(parse_as("my_all_reduce_perf", "--net", &a), 0);
	assert_null(a.perf_name);
	assert_int_equal(parse_as("all_reduce_perf", "--net", &a), -1);
	assert_non_null(strstr(rb_err_buf, "--net: all_reduce_perf is railnet-bench --nccl --coll "
					   "all_reduce"));
	assert_int_equal(parse_as("all_reduce_perf", "--coll reduce", &a), -1);
	assert_non_null(strstr(rb_err_buf, "--coll reduce: all_reduce_perf measures one "
					   "collective; run reduce_perf, or railnet-bench --nccl "
					   "--coll reduce"));
	/* nccl-tests' own flags keep their answers under the alias */
	assert_int_equal(parse_as("all_reduce_perf", "-t 2", &a), -1);
	assert_non_null(strstr(rb_err_buf, "-t 2: threads per process are not supported"));
}

static void test_defaults(void **state)
{
	struct rb_args a;

	assert_int_equal(parse("--nccl", &a), 0);
	assert_int_equal(a.mode, RB_MODE_NCCL);
	assert_int_equal(a.coll, RB_COLL_ALL_REDUCE);
	assert_int_equal(a.minbytes, 32 << 20);
	assert_int_equal(a.maxbytes, 32 << 20);
	assert_int_equal(a.stepbytes, 1 << 20);
	assert_int_equal(a.stepfactor, 1);
	assert_int_equal(a.iters, 20);
	assert_int_equal(a.warmup_iters, 1);
	assert_int_equal(a.agg_iters, 1);
	assert_int_equal(a.check, 1);
	assert_int_equal(a.ops, 1u << RB_OP_SUM);
	assert_int_equal(a.types, 1u << RB_FLOAT);
	assert_int_equal(a.average, 1);
	assert_int_equal(a.cta_policy, -1);
	assert_null(a.json_path);
}

static void test_sizes(void **state)
{
	static const struct {
		const char *in;
		size_t out;
	} ok[] = {
		{ "0", 0 },	      { "8", 8 },	    { "1K", 1024 },   { "1k", 1024 },
		{ "32M", 32u << 20 }, { "2G", 2ULL << 30 }, { "1.5K", 1536 }, { "0.5M", 512 << 10 },
		{ "4KiB", 4096 },     { "4KB", 4096 },	    { "100B", 100 },  { "1T", 1ULL << 40 },
	};
	static const char *const bad[] = { "",	  "abc",   "-1",    "1X",  "1.3", "1KK", "nan",
					   "inf", "1e400", "2000T", "1 K", "K",	  "0x10" };
	size_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (rb_parse_size(ok[i].in, &v, rb_err_buf, sizeof(rb_err_buf)))
			fail_msg("'%s' rejected: %s", ok[i].in, rb_err_buf);
		assert_int_equal(v, ok[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!rb_parse_size(bad[i], &v, rb_err_buf, sizeof(rb_err_buf)))
			fail_msg("'%s' accepted as %zu", bad[i], v);
}

static void test_full_command(void **state)
{
	struct rb_args a;

	assert_int_equal(parse("--nccl --coll Reduce-Scatter -b 8 -e 128M -f 2 -g 4 -c 3 -n 50 "
			       "-w 5 -o max -d bfloat16 -a 3 -z 1 -m 2 -N 3 -C 1 -S 1 -J r.json "
			       "--csv r.csv -u 2 -R 1 -x 1 -T 30 -y 1",
			       &a),
			 0);
	assert_int_equal(a.coll, RB_COLL_REDUCE_SCATTER);
	assert_int_equal(a.minbytes, 8);
	assert_int_equal(a.maxbytes, 128 << 20);
	assert_int_equal(a.stepfactor, 2);
	assert_int_equal(a.ngpus, 4);
	assert_int_equal(a.check, 3);
	assert_int_equal(a.iters, 50);
	assert_int_equal(a.warmup_iters, 5);
	assert_int_equal(a.ops, 1u << RB_OP_MAX);
	assert_int_equal(a.types, 1u << RB_BF16);
	assert_int_equal(a.average, 3);
	assert_int_equal(a.blocking, 1);
	assert_int_equal(a.agg_iters, 2);
	assert_int_equal(a.cycles, 3);
	assert_int_equal(a.cputime, 1);
	assert_int_equal(a.timestamps, 1);
	assert_string_equal(a.json_path, "r.json");
	assert_string_equal(a.csv_path, "r.csv");
	assert_int_equal(a.unalign, 2);
	assert_int_equal(a.local_register, 1);
	assert_int_equal(a.cta_policy, 1);
	assert_int_equal(a.timeout_s, 30);
	assert_int_equal(a.stream_null, 1);

	assert_int_equal(parse("--nccl --minbytes 1K --maxbytes 1M --stepfactor 4 --iters 7 "
			       "--datatype all --op all --ngpus 2 --output_file x.json",
			       &a),
			 0);
	assert_int_equal(a.minbytes, 1024);
	assert_int_equal(a.min_time_ms, 0); /* nccl-tests' behaviour unless asked */
	assert_int_equal(a.types, (1u << RB_TYPE_NR) - 1);
	assert_int_equal(a.ops, (1u << RB_OP_NR) - 1);
	assert_string_equal(a.json_path, "x.json");
	for (int c = 0; c < RB_COLL_NR; c++) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "--net --coll %s", rb_colls[c].name);
		assert_int_equal(parse(cmd, &a), 0);
		assert_int_equal(a.coll, c);
	}
	assert_int_equal(parse("--nccl --coll allreduce -d int", &a), 0);
	assert_int_equal(a.types, 1u << RB_INT32);
	assert_int_equal(parse("-h", &a), RB_PARSE_HELP);
}

static void test_bad_numbers(void **state)
{
	expect_error("--nccl -n abc", "-n 'abc': not an integer");
	expect_error("--net --min-time -1", "--min-time -1: out of range");
	expect_error("--net --min-time 600001", "--min-time 600001: out of range");
	expect_error("--net --min-time 1s", "--min-time '1s': not an integer");
	expect_error("--nccl -n 0", "-n 0: out of range");
	expect_error("--nccl -n 12x", "not an integer");
	expect_error("--nccl -g 0", "-g 0: out of range");
	expect_error("--nccl -g -1", "out of range");
	expect_error("--nccl -w -1", "-w -1: out of range");
	expect_error("--nccl -c -2", "out of range");
	expect_error("--nccl -f 0", "-f 0: out of range");
	expect_error("--nccl -m 0", "out of range");
	expect_error("--nccl -a 4", "-a 4: out of range, allowed 0..3");
	expect_error("--nccl -z 9", "-z 9: out of range");
	expect_error("--nccl -y 2", "out of range");
	expect_error("--nccl -R 3", "out of range");
	expect_error("--nccl -x 5", "out of range");
	expect_error("--nccl -C 2", "out of range");
	expect_error("--nccl -u -1", "out of range");
	expect_error("--nccl -T -5", "out of range");
	expect_error("--nccl -n 99999999999999999999", "not an integer");
}

static void test_bad_sizes(void **state)
{
	expect_error("--nccl -b 12Q", "-b '12Q' is not a size");
	expect_error("--nccl -e -8", "-e '-8' is not a size");
	expect_error("--nccl -i x", "-i 'x' is not a size");
	expect_error("--nccl -b 1.25", "not a whole number of bytes");
	expect_error("--nccl -b 1M -e 1K", "-b 1048576 is larger than -e 1024");
	expect_error("--nccl -b 1K -e 1M -i 0", "would never advance");
}

static void test_bad_names(void **state)
{
	expect_error("--nccl --coll allreduc", "--coll allreduc: unknown collective");
	expect_error("--nccl -o sun", "-o sun: unknown reduction");
	expect_error("--nccl -d float128", "-d float128: unknown datatype");
	expect_error("--nccl --coll all_gather -o max", "all_gather does not reduce");
	expect_error("--nccl -r 1", "all_reduce has no root");
}

static void test_bad_shape(void **state)
{
	expect_error("", "choose a mode");
	expect_error("-b 8", "choose a mode");
	expect_error("--nccl --net", "exclude each other");
	expect_error("--nccl -q 1", "-q: unknown flag");
	expect_error("--nccl --bogus", "--bogus: unknown flag");
	expect_error("--nccl -b", "-b: needs a value");
	expect_error("--nccl --coll", "--coll: needs a value");
	expect_error("--nccl all_reduce", "'all_reduce': unexpected argument");
}

static void test_refused_flags(void **state)
{
	expect_error("--nccl -t 2", "-t 2: threads per process are not supported");
	expect_error("--nccl -p 1", "-p 1: parallel init");
	expect_error("--nccl -I 1", "-I 1: per-iteration timing is not supported");
	expect_error("--nccl -K 3", "-K 3: needs -I 1");
	expect_error("--nccl -D 1", "-D 1: custom device kernels are not supported");
	expect_error("--nccl -V 32", "-V 32: only applies with -D");
	expect_error("--nccl -G 10", "-G 10: CUDA graph capture is not supported");
}

/* --net's own flags: defaults, values, ranges, and refused under --nccl. */
static void test_net_flags(void **state)
{
	struct rb_args a;

	assert_int_equal(parse("--net", &a), 0);
	assert_int_equal(a.mode, RB_MODE_NET);
	assert_null(a.plugin);
	assert_int_equal(a.net_api, 0);
	assert_int_equal(a.net_dev, -1);
	assert_int_equal(a.merge, 1);
	assert_int_equal(a.slots, 8);
	assert_int_equal(a.chunk, 1 << 20);
	assert_int_equal(a.p2p, RB_P2P_NONE);
	assert_null(a.netns);
	assert_int_equal(
		parse("--net --plugin railnet --net-api 9 --net-dev 5 --merge 0 --slots 32 "
		      "--chunk 4K --p2p bibw --netns pod0",
		      &a),
		0);
	assert_string_equal(a.plugin, "railnet");
	assert_int_equal(a.net_api, 9);
	assert_int_equal(a.net_dev, 5);
	assert_int_equal(a.merge, 0);
	assert_int_equal(a.slots, 32);
	assert_int_equal(a.chunk, 4096);
	assert_int_equal(a.p2p, RB_P2P_BIBW);
	assert_string_equal(a.netns, "pod0");
	assert_int_equal(parse("--net --net-dev auto --chunk 1G --min-time 200", &a), 0);
	assert_int_equal(a.min_time_ms, 200);
	assert_int_equal(a.net_dev, -1);
	assert_int_equal(a.chunk, 1u << 30);
	expect_error("--nccl --plugin x", "--plugin: applies to --net only");
	expect_error("--nccl --p2p bw", "--p2p: applies to --net only");
	expect_error("--net --net-api 13", "--net-api 13: out of range, allowed 6..12");
	expect_error("--net --net-dev -1",
		     "--net-dev -1: out of range, allowed 0..4095; or auto, pair");
	expect_error("--net --net-dev pear", "--net-dev 'pear': not an integer; or auto, pair");
	assert_int_equal(parse("--net --net-dev pair --p2p bw", &a), 0);
	assert_int_equal(a.net_dev, RB_NET_DEV_PAIR);
	expect_error("--net --slots 33", "--slots 33: out of range, allowed 2..32");
	expect_error("--net --chunk 2G", "--chunk 2G: out of range, allowed 4K..1G");
	expect_error("--net --p2p ping", "--p2p ping: unknown test");
}

static void test_describe(void **state)
{
	struct rb_args a;
	char buf[512];

	assert_int_equal(parse("--nccl -b 8 -e 128M -f 2", &a), 0);
	rb_args_describe(&a, buf, sizeof(buf));
	assert_string_equal(buf, "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: "
				 "2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 "
				 "graph: 0 unalign: 0");
	assert_int_equal(parse("--nccl -b 1M -e 4M", &a), 0);
	rb_args_describe(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "step: 1048576(bytes)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perf_names),    cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_sizes),	      cmocka_unit_test(test_full_command),
		cmocka_unit_test(test_bad_numbers),   cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_bad_names),     cmocka_unit_test(test_bad_shape),
		cmocka_unit_test(test_refused_flags), cmocka_unit_test(test_describe),
		cmocka_unit_test(test_net_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
