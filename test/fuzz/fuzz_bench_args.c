// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for railnet-bench's command line (bench/railnet-bench/args.c, rb_args_parse and
 * rb_parse_size: pure code, linked without MPI). The input is split at NUL and newline bytes
 * into the arguments after argv[0] (64 at most). Every input is either taken, with every
 * value within the range its flag documents (rb_usage) and the relations rb_args_check
 * enforces, refused with a one-line reason, or -h/--help; a second parse of the same
 * arguments gives the same answer (getopt is re-initialised each time); a plain decimal is a
 * size of exactly that many bytes. Nothing prints, nothing exits.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RB_FZ_MAX_ARGS 64

static void rb_fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void rb_fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz_bench_args: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* argv from the input: argv[0] = "railnet-bench", then each NUL- or newline-separated piece. */
static int rb_fz_argv(const uint8_t *data, size_t size, char **argv)
{
	int argc = 0;
	size_t i = 0;

	argv[argc] = strdup("railnet-bench");
	if (!argv[argc++])
		abort();
	while (size && i <= size && argc < RB_FZ_MAX_ARGS) {
		size_t n = 0;

		while (i + n < size && data[i + n] && data[i + n] != '\n')
			n++;
		argv[argc] = malloc(n + 1); /* exactly sized, so ASan sees any overread */
		if (!argv[argc])
			abort();
		memcpy(argv[argc], data + i, n);
		argv[argc++][n] = '\0';
		i += n + 1;
	}
	argv[argc] = NULL;
	return argc;
}

/* A string the parser kept must point into one of the arguments and be non-empty. */
static void rb_fz_in_args(const char *what, const char *s, char **store, int argc)
{
	if (!s)
		return;
	for (int i = 1; i < argc; i++)
		if (s >= store[i] && s < store[i] + strlen(store[i]) + 1) {
			if (!*s)
				rb_fz_fail("%s is empty", what);
			return;
		}
	rb_fz_fail("%s does not point into the arguments", what);
}

#define RB_FZ_RANGE(v, lo, hi)                                                            \
	do {                                                                              \
		if ((long long)(v) < (long long)(lo) || (long long)(v) > (long long)(hi)) \
			rb_fz_fail(#v " = %lld, documented %lld..%lld", (long long)(v),   \
				   (long long)(lo), (long long)(hi));                     \
	} while (0)

static void rb_fz_check_taken(const struct rb_args *a, char **store, int argc)
{
	const struct rb_coll_info *ci;
	char line[512];

	if (a->mode != RB_MODE_NCCL && a->mode != RB_MODE_NET)
		rb_fz_fail("taken without a mode");
	RB_FZ_RANGE(a->coll, 0, RB_COLL_NR - 1);
	ci = &rb_colls[a->coll];
	RB_FZ_RANGE(a->nthreads, 1, 1);
	RB_FZ_RANGE(a->ngpus, 1, 1024);
	RB_FZ_RANGE(a->maxbytes, 0, 1ULL << 50);
	RB_FZ_RANGE(a->minbytes, 0, a->maxbytes);
	RB_FZ_RANGE(a->stepbytes, 0, 1ULL << 50);
	RB_FZ_RANGE(a->stepfactor, 1, 1 << 20);
	if (a->stepfactor == 1 && !a->stepbytes && a->minbytes != a->maxbytes)
		rb_fz_fail("-i 0 -f 1 taken with -b < -e");
	RB_FZ_RANGE(a->iters, 1, INT_MAX);
	RB_FZ_RANGE(a->agg_iters, 1, 1 << 20);
	RB_FZ_RANGE(a->warmup_iters, 0, INT_MAX);
	RB_FZ_RANGE(a->cycles, 0, INT_MAX);
	RB_FZ_RANGE(a->parallel_init, 0, 0);
	RB_FZ_RANGE(a->check, 0, 1 << 20);
	RB_FZ_RANGE(a->ops, 1, (1u << RB_OP_NR) - 1);
	RB_FZ_RANGE(a->types, 1, (1u << RB_TYPE_NR) - 1);
	if ((a->op_set && !ci->reduces) || (!ci->reduces && a->ops != 1u << RB_OP_SUM))
		rb_fz_fail("-o taken for %s", ci->name);
	RB_FZ_RANGE(a->root, 0, ci->rooted ? INT_MAX : 0);
	RB_FZ_RANGE(a->blocking, 0, 3);
	RB_FZ_RANGE(a->stream_null, 0, 1);
	RB_FZ_RANGE(a->timeout_s, 0, 86400 * 7);
	RB_FZ_RANGE(a->graph, 0, 0);
	RB_FZ_RANGE(a->cputime, 0, 1);
	RB_FZ_RANGE(a->timestamps, 0, 1);
	RB_FZ_RANGE(a->average, 0, 3);
	RB_FZ_RANGE(a->local_register, 0, 2);
	RB_FZ_RANGE(a->cta_policy, -1, 2);
	RB_FZ_RANGE(a->device_impl, 0, 0);
	RB_FZ_RANGE(a->device_ctas, 16, 16);
	RB_FZ_RANGE(a->memory, 0, 1);
	RB_FZ_RANGE(a->unalign, 0, 1 << 20);
	RB_FZ_RANGE(a->per_iter, 0, 0);
	RB_FZ_RANGE(a->per_iter_skip, 0, 0);
	RB_FZ_RANGE(a->net_api, 0, 12);
	if (a->net_api && a->net_api < 6)
		rb_fz_fail("--net-api %d taken", a->net_api);
	RB_FZ_RANGE(a->net_dev, -1, 4095);
	RB_FZ_RANGE(a->merge, 0, 1);
	RB_FZ_RANGE(a->slots, 2, 32);
	RB_FZ_RANGE(a->chunk, 4096, 1u << 30);
	RB_FZ_RANGE(a->p2p, RB_P2P_NONE, RB_P2P_NR - 1);
	if (a->mode == RB_MODE_NCCL && a->net_flag)
		rb_fz_fail("--%s taken with --nccl", a->net_flag);
	rb_fz_in_args("--json", a->json_path, store, argc);
	rb_fz_in_args("--csv", a->csv_path, store, argc);
	rb_fz_in_args("--plugin", a->plugin, store, argc);
	rb_fz_in_args("--netns", a->netns, store, argc);
	rb_args_describe(a, line, sizeof(line));
	rb_args_describe(a, line, 16);
}

/* Whatever the answer, the same arguments give it again. */
static void rb_fz_same(int rc, const struct rb_args *a, int rc2, const struct rb_args *b)
{
	struct rb_args x = *a, y = *b;

	if (rc != rc2)
		rb_fz_fail("parsed twice: %d, then %d", rc, rc2);
	if (rc)
		return;
	/* the strings point into each parse's own copy of the arguments */
	x.json_path = x.csv_path = x.plugin = x.netns = NULL;
	y.json_path = y.csv_path = y.plugin = y.netns = NULL;
	if (!x.net_flag != !y.net_flag || (x.net_flag && strcmp(x.net_flag, y.net_flag)))
		rb_fz_fail("parsed twice: different net flags");
	x.net_flag = y.net_flag = NULL;
	if (memcmp(&x, &y, sizeof(x)))
		rb_fz_fail("parsed twice: different values");
}

static void rb_fz_sizes(char **argv, int argc)
{
	char err[256];

	for (int i = 1; i < argc; i++) {
		size_t n = strlen(argv[i]), v = 7;
		int rc = rb_parse_size(argv[i], &v, err, sizeof(err));

		if (rc == 0 && v > 1ULL << 50)
			rb_fz_fail("size '%s' is %zu, over the 1P limit", argv[i], v);
		if (rc && (rc != -1 || !err[0] || v != 7))
			rb_fz_fail("size '%s' refused with %d, no reason or a value", argv[i], rc);
		if (n && n <= 15 && strspn(argv[i], "0123456789") == n &&
		    (rc || v != strtoull(argv[i], NULL, 10)))
			rb_fz_fail("size '%s' read as %zu (rc %d)", argv[i], v, rc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *store[RB_FZ_MAX_ARGS + 1], *store2[RB_FZ_MAX_ARGS + 1];
	char *argv[RB_FZ_MAX_ARGS + 1], *argv2[RB_FZ_MAX_ARGS + 1];
	struct rb_args a, b;
	char err[512], err2[512];
	int argc, rc, rc2;

	argc = rb_fz_argv(data, size, store);
	rb_fz_argv(data, size, store2);
	/* getopt permutes argv: keep the pointers to free apart */
	memcpy(argv, store, sizeof(store[0]) * (size_t)(argc + 1));
	memcpy(argv2, store2, sizeof(store2[0]) * (size_t)(argc + 1));
	err[0] = err2[0] = '\0';
	rc = rb_args_parse(argc, argv, &a, err, sizeof(err));
	rc2 = rb_args_parse(argc, argv2, &b, err2, sizeof(err2));
	rb_fz_same(rc, &a, rc2, &b);
	if (rc == 0) {
		rb_fz_check_taken(&a, store, argc);
	} else if (rc == -1) {
		if (!err[0] || strchr(err, '\n') || strcmp(err, err2))
			rb_fz_fail("refused without a one-line reason: '%s'", err);
	} else if (rc == RB_PARSE_HELP) {
		bool asked = false;

		for (int i = 1; i < argc && !asked; i++)
			asked = store[i][0] == '-' && strchr(store[i], 'h');
		if (!asked)
			rb_fz_fail("help without -h or --help");
	} else if (rc == RB_PARSE_VERSION) {
		bool asked = false;

		for (int i = 1; i < argc && !asked; i++)
			asked = !strncmp(store[i], "--v", 3);
		if (!asked)
			rb_fz_fail("version without --version");
	} else {
		rb_fz_fail("rb_args_parse returned %d", rc);
	}
	rb_fz_sizes(store, argc);
	for (int i = 0; i < argc; i++) {
		free(store[i]);
		free(store2[i]);
	}
	return 0;
}
