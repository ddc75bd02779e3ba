/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line parsing for railnet-bench: nccl-tests' flag letters and long names with their
 * meanings and defaults, plus --nccl/--net, --coll, --json and --csv. Every value is checked
 * strictly (whole string, range, relation to other flags); a flag the harness cannot honour is
 * refused with the reason, never ignored. Pure code: no MPI, no CUDA, nothing printed except
 * by rb_usage.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rb.h"

const struct rb_coll_info rb_colls[RB_COLL_NR] = {
	[RB_COLL_ALL_REDUCE] = { .name = "all_reduce", .perf = "all_reduce_perf", .reduces = 1 },
	[RB_COLL_ALL_GATHER] = { .name = "all_gather", .perf = "all_gather_perf" },
	[RB_COLL_REDUCE_SCATTER] = { .name = "reduce_scatter",
				     .perf = "reduce_scatter_perf",
				     .reduces = 1 },
	[RB_COLL_BROADCAST] = { .name = "broadcast", .perf = "broadcast_perf", .rooted = 1 },
	[RB_COLL_REDUCE] = { .name = "reduce", .perf = "reduce_perf", .reduces = 1, .rooted = 1 },
	[RB_COLL_ALLTOALL] = { .name = "alltoall", .perf = "alltoall_perf" },
	[RB_COLL_SENDRECV] = { .name = "sendrecv", .perf = "sendrecv_perf" },
};

const struct rb_type_info rb_types[RB_TYPE_NR] = {
	[RB_INT8] = { .name = "int8", .size = 1, .is_signed = 1 },
	[RB_UINT8] = { .name = "uint8", .size = 1 },
	[RB_INT32] = { .name = "int32", .size = 4, .is_signed = 1 },
	[RB_UINT32] = { .name = "uint32", .size = 4 },
	[RB_INT64] = { .name = "int64", .size = 8, .is_signed = 1 },
	[RB_UINT64] = { .name = "uint64", .size = 8 },
	[RB_HALF] = { .name = "half",
		      .size = 2,
		      .is_float = 1,
		      .is_signed = 1,
		      .exp_bits = 5,
		      .mant_bits = 10 },
	[RB_FLOAT] = { .name = "float",
		       .size = 4,
		       .is_float = 1,
		       .is_signed = 1,
		       .exp_bits = 8,
		       .mant_bits = 23 },
	[RB_DOUBLE] = { .name = "double",
			.size = 8,
			.is_float = 1,
			.is_signed = 1,
			.exp_bits = 11,
			.mant_bits = 52 },
	[RB_BF16] = { .name = "bfloat16",
		      .size = 2,
		      .is_float = 1,
		      .is_signed = 1,
		      .exp_bits = 8,
		      .mant_bits = 7 },
	[RB_F8E4M3] = { .name = "f8e4m3",
			.size = 1,
			.is_float = 1,
			.is_signed = 1,
			.exp_bits = 4,
			.mant_bits = 3 },
	[RB_F8E5M2] = { .name = "f8e5m2",
			.size = 1,
			.is_float = 1,
			.is_signed = 1,
			.exp_bits = 5,
			.mant_bits = 2 },
};

const char *const rb_op_names[RB_OP_NR] = {
	[RB_OP_SUM] = "sum", [RB_OP_PROD] = "prod", [RB_OP_MAX] = "max",
	[RB_OP_MIN] = "min", [RB_OP_AVG] = "avg",   [RB_OP_MULSUM] = "mulsum",
};

/* Extra names accepted for types (nccl-tests' own names come first in rb_types). */
static const struct {
	const char *alias;
	enum rb_type t;
} rb_type_aliases[] = {
	{ "char", RB_INT8 },	  { "int", RB_INT32 },	    { "float16", RB_HALF },
	{ "float32", RB_FLOAT },  { "float64", RB_DOUBLE }, { "bf16", RB_BF16 },
	{ "fp8e4m3", RB_F8E4M3 }, { "fp8e5m2", RB_F8E5M2 },
};

enum {
	RB_OPT_NCCL = 256,
	RB_OPT_NET,
	RB_OPT_COLL,
	RB_OPT_CSV,
	RB_OPT_PLUGIN,
	RB_OPT_NET_API,
	RB_OPT_NET_DEV,
	RB_OPT_MERGE,
	RB_OPT_SLOTS,
	RB_OPT_CHUNK,
	RB_OPT_P2P,
	RB_OPT_NETNS,
	RB_OPT_MIN_TIME,
};

const char *const rb_p2p_names[RB_P2P_NR] = {
	[RB_P2P_NONE] = "none",
	[RB_P2P_BW] = "bw",
	[RB_P2P_BIBW] = "bibw",
	[RB_P2P_LAT] = "lat",
};

static const struct option rb_long_opts[] = {
	{ "nccl", no_argument, NULL, RB_OPT_NCCL },
	{ "net", no_argument, NULL, RB_OPT_NET },
	{ "coll", required_argument, NULL, RB_OPT_COLL },
	{ "json", required_argument, NULL, 'J' },
	{ "csv", required_argument, NULL, RB_OPT_CSV },
	{ "plugin", required_argument, NULL, RB_OPT_PLUGIN },
	{ "net-api", required_argument, NULL, RB_OPT_NET_API },
	{ "net-dev", required_argument, NULL, RB_OPT_NET_DEV },
	{ "merge", required_argument, NULL, RB_OPT_MERGE },
	{ "slots", required_argument, NULL, RB_OPT_SLOTS },
	{ "chunk", required_argument, NULL, RB_OPT_CHUNK },
	{ "p2p", required_argument, NULL, RB_OPT_P2P },
	{ "netns", required_argument, NULL, RB_OPT_NETNS },
	{ "min-time", required_argument, NULL, RB_OPT_MIN_TIME },
	{ "nthreads", required_argument, NULL, 't' },
	{ "ngpus", required_argument, NULL, 'g' },
	{ "minbytes", required_argument, NULL, 'b' },
	{ "maxbytes", required_argument, NULL, 'e' },
	{ "stepbytes", required_argument, NULL, 'i' },
	{ "stepfactor", required_argument, NULL, 'f' },
	{ "iters", required_argument, NULL, 'n' },
	{ "agg_iters", required_argument, NULL, 'm' },
	{ "warmup_iters", required_argument, NULL, 'w' },
	{ "run_cycles", required_argument, NULL, 'N' },
	{ "parallel_init", required_argument, NULL, 'p' },
	{ "check", required_argument, NULL, 'c' },
	{ "op", required_argument, NULL, 'o' },
	{ "datatype", required_argument, NULL, 'd' },
	{ "root", required_argument, NULL, 'r' },
	{ "blocking", required_argument, NULL, 'z' },
	{ "stream_null", required_argument, NULL, 'y' },
	{ "timeout", required_argument, NULL, 'T' },
	{ "cudagraph", required_argument, NULL, 'G' },
	{ "report_cputime", required_argument, NULL, 'C' },
	{ "report_timestamps", required_argument, NULL, 'S' },
	{ "output_file", required_argument, NULL, 'J' },
	{ "average", required_argument, NULL, 'a' },
	{ "local_register", required_argument, NULL, 'R' },
	{ "cta_policy", required_argument, NULL, 'x' },
	{ "device_implementation", required_argument, NULL, 'D' },
	{ "device_cta_count", required_argument, NULL, 'V' },
	{ "memory", required_argument, NULL, 'M' },
	{ "unalign", required_argument, NULL, 'u' },
	{ "per_iter_timing", required_argument, NULL, 'I' },
	{ "per_iter_skip", required_argument, NULL, 'K' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 1000 },
	{ NULL, 0, NULL, 0 },
};

static const char rb_short_opts[] =
	":t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:";

void rb_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s --nccl|--net [--coll NAME] [flags]\n"
		"  --nccl                NCCL collectives on GPUs (one rank per GPU, or -g per "
		"process)\n"
		"  --net                 an NCCL net plugin's API directly (railnet by default), "
		"host\n"
		"                        memory, CPU reduction, no GPU and no NCCL\n"
		"  --coll NAME           all_reduce (default), all_gather, reduce_scatter, "
		"broadcast,\n"
		"                        reduce, alltoall, sendrecv ('-' and no separator also "
		"accepted)\n"
		"  --json FILE, -J FILE  write results as JSON;  --csv FILE  write results as CSV\n"
		"  -b,--minbytes SIZE    smallest size (default 32M; K/M/G = KiB/MiB/GiB)\n"
		"  -e,--maxbytes SIZE    largest size (default 32M; must be >= -b)\n"
		"  -i,--stepbytes SIZE   additive step when -f is 1 (default 1M)\n"
		"  -f,--stepfactor N     multiplicative step (default 1: use -i)\n"
		"  -n,--iters N          timed iterations per size (default 20)\n"
		"  --min-time MS         time each size at least MS ms, with more iterations than "
		"-n\n"
		"                        where needed (0-600000; default 0: -n only; not in "
		"nccl-tests)\n"
		"  -m,--agg_iters N      operations grouped per iteration (default 1)\n"
		"  -w,--warmup_iters N   warm-up operations per warm-up size (default 1)\n"
		"  -N,--run_cycles N     repeat the sweep N times, 0 = forever (default 1)\n"
		"  -c,--check N          correctness runs per size and placement, 0 = none "
		"(default 1)\n"
		"  -o,--op OP            sum, prod, max, min, avg, mulsum, all (default sum)\n"
		"  -d,--datatype TYPE    int8 uint8 int32 uint32 int64 uint64 half float double\n"
		"                        bfloat16 f8e4m3 f8e5m2 all (default float)\n"
		"  -r,--root N           root rank of broadcast and reduce (default 0)\n"
		"  -g,--ngpus N          GPUs per process (default 1)\n"
		"  -a,--average 0-3      time across ranks: 0 rank 0, 1 mean, 2 min, 3 max "
		"(default 1)\n"
		"  -z,--blocking 0-3     0 async, 1 sync+barrier per op, 2 sync per op,\n"
		"                        3 sync+barrier per iteration, barrier not timed (default "
		"0)\n"
		"  -y,--stream_null 0/1  use the default stream (default 0)\n"
		"  -T,--timeout S        abort if an operation takes longer than S seconds "
		"(default 0: off)\n"
		"  -C,--report_cputime 0/1     report CPU launch time (default 0)\n"
		"  -S,--report_timestamps 0/1  add a timestamp column (default 0)\n"
		"  -R,--local_register 0-2     1 ncclCommRegister, 2 symmetric windows (default "
		"0)\n"
		"  -x,--cta_policy 0-2   NCCL CTA policy (default: NCCL's)\n"
		"  -M,--memory 0/1       print a GPU memory usage line (default 0)\n"
		"  -u,--unalign N        offset buffers by N elements (default 0)\n"
		"  -t 1, -p 0, -G 0, -I 0, -K 0, -D 0: accepted only at these values (see "
		"docs/bench.md)\n"
		"  -h,--help             this text;  --version  the version, git describe, build "
		"date\n"
		"--net only:\n"
		"  --plugin NAME|PATH    plugin to dlopen, NCCL_NET_PLUGIN's rules (default: "
		"$NCCL_NET_PLUGIN,\n"
		"                        else the railnet built with this benchmark)\n"
		"  --net-api 6-12        use ncclNetPlugin_vN (default: the newest exported)\n"
		"  --net-dev N|auto|pair plugin device of each rank (default auto: local rank "
		"modulo devices;\n"
		"                        pair, with --p2p: pair k on device k, all pairs at "
		"once)\n"
		"  --merge 0/1           fuse ports of one NIC with makeVDevice as NCCL does "
		"(default 1)\n"
		"  --slots 2-32          requests in flight per direction and comm (default 8)\n"
		"  --chunk SIZE          bytes per isend/irecv, 4K..1G (default 1M)\n"
		"  --p2p bw|bibw|lat     between rank pairs (0-1, 2-3, ...) per device, instead "
		"of a collective\n"
		"  --netns NAME|PATH     join this network namespace after MPI_Init, before "
		"loading the\n"
		"                        plugin (MPI keeps the launcher's; see docs/bench.md)\n",
		prog);
}

static int rb_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rb_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

int rb_parse_size(const char *s, size_t *out, char *err, size_t errlen)
{
	char num[64];
	const char *end;
	size_t n = strspn(s, "0123456789.");
	double v, mult = 1;
	char *numend;

	/* Plain decimal only: strtod alone would also take hex, exponents, "inf" and spaces. */
	if (!n || n >= sizeof(num) || strchr(s, '.') != strrchr(s, '.'))
		return rb_err(
			err, errlen,
			"'%s' is not a size (a non-negative number with an optional K, M or G "
			"suffix)",
			s);
	memcpy(num, s, n);
	num[n] = 0;
	errno = 0;
	v = strtod(num, &numend);
	if (*numend || errno == ERANGE || !isfinite(v))
		return rb_err(err, errlen, "'%s' is not a size", s);
	end = s + n;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (mult > 1 && *end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return rb_err(err, errlen,
			      "'%s' is not a size: unexpected '%s' (suffixes are K, M, G, T)", s,
			      end);
	v *= mult;
	if (v > (double)(1ULL << 50))
		return rb_err(err, errlen, "'%s' is too large (limit 1P)", s);
	if (v != floor(v))
		return rb_err(err, errlen, "'%s' is not a whole number of bytes", s);
	*out = (size_t)v;
	return 0;
}

static int rb_parse_long(const char *flag, const char *s, long lo, long hi, long *out, char *err,
			 size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno == ERANGE || isspace((unsigned char)*s))
		return rb_err(err, errlen, "%s '%s': not an integer", flag, s);
	if (v < lo || v > hi)
		return rb_err(err, errlen, "%s %ld: out of range, allowed %ld..%ld", flag, v, lo,
			      hi);
	*out = v;
	return 0;
}

static int rb_parse_int(const char *flag, const char *s, long lo, long hi, int *out, char *err,
			size_t errlen)
{
	long v;

	if (rb_parse_long(flag, s, lo, hi, &v, err, errlen))
		return -1;
	*out = (int)v;
	return 0;
}

/* Lower-case s without '_' and '-', so "All-Reduce" matches "all_reduce". */
static void rb_squash(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && n + 1 < len; s++)
		if (*s != '_' && *s != '-')
			out[n++] = (char)tolower((unsigned char)*s);
	out[n] = 0;
}

static int rb_parse_coll(const char *s, enum rb_coll *out, char *err, size_t errlen)
{
	char want[64], have[64];

	rb_squash(s, want, sizeof(want));
	for (int c = 0; c < RB_COLL_NR; c++) {
		rb_squash(rb_colls[c].name, have, sizeof(have));
		if (!strcmp(want, have)) {
			*out = (enum rb_coll)c;
			return 0;
		}
	}
	return rb_err(err, errlen,
		      "--coll %s: unknown collective; known: all_reduce, all_gather, "
		      "reduce_scatter, broadcast, reduce, alltoall, sendrecv",
		      s);
}

static int rb_parse_type(const char *s, unsigned *out, char *err, size_t errlen)
{
	if (!strcasecmp(s, "all")) {
		*out = (1u << RB_TYPE_NR) - 1;
		return 0;
	}
	for (int t = 0; t < RB_TYPE_NR; t++)
		if (!strcasecmp(s, rb_types[t].name)) {
			*out = 1u << t;
			return 0;
		}
	for (size_t i = 0; i < sizeof(rb_type_aliases) / sizeof(rb_type_aliases[0]); i++)
		if (!strcasecmp(s, rb_type_aliases[i].alias)) {
			*out = 1u << rb_type_aliases[i].t;
			return 0;
		}
	return rb_err(err, errlen,
		      "-d %s: unknown datatype; known: int8 uint8 int32 uint32 int64 uint64 half "
		      "float double bfloat16 f8e4m3 f8e5m2 all",
		      s);
}

static int rb_parse_op(const char *s, unsigned *out, char *err, size_t errlen)
{
	if (!strcasecmp(s, "all")) {
		*out = (1u << RB_OP_NR) - 1;
		return 0;
	}
	for (int o = 0; o < RB_OP_NR; o++)
		if (!strcasecmp(s, rb_op_names[o])) {
			*out = 1u << o;
			return 0;
		}
	return rb_err(err, errlen,
		      "-o %s: unknown reduction; known: sum prod max min avg mulsum all", s);
}

static void rb_args_defaults(struct rb_args *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = RB_MODE_NONE;
	a->coll = RB_COLL_ALL_REDUCE;
	a->nthreads = 1;
	a->ngpus = 1;
	a->minbytes = 32 << 20;
	a->maxbytes = 32 << 20;
	a->stepbytes = 1 << 20;
	a->stepfactor = 1;
	a->iters = 20;
	a->agg_iters = 1;
	a->warmup_iters = 1;
	a->cycles = 1;
	a->check = 1;
	a->ops = 1u << RB_OP_SUM;
	a->types = 1u << RB_FLOAT;
	a->average = 1;
	a->cta_policy = -1;
	a->device_ctas = 16;
	a->net_dev = RB_NET_DEV_AUTO;
	a->merge = 1;
	a->slots = 8;
	a->chunk = 1 << 20;
}

static int rb_parse_p2p(const char *s, enum rb_p2p *out, char *err, size_t errlen)
{
	for (int i = RB_P2P_BW; i < RB_P2P_NR; i++)
		if (!strcasecmp(s, rb_p2p_names[i])) {
			*out = (enum rb_p2p)i;
			return 0;
		}
	return rb_err(err, errlen, "--p2p %s: unknown test; known: bw, bibw, lat", s);
}

/* Relations between flags, checked once everything is parsed. */
static int rb_args_check(struct rb_args *a, char *err, size_t errlen)
{
	const struct rb_coll_info *ci = &rb_colls[a->coll];

	if (a->perf_name && strcmp(a->perf_name, rb_colls[a->coll].perf))
		return rb_err(err, errlen,
			      "--coll %s: %s measures one collective; run %s, or railnet-bench "
			      "--nccl --coll %s",
			      rb_colls[a->coll].name, a->perf_name, rb_colls[a->coll].perf,
			      rb_colls[a->coll].name);
	if (a->mode == RB_MODE_NONE)
		return rb_err(
			err, errlen,
			"choose a mode: --nccl (NCCL collectives on GPUs) or --net (railnet's "
			"net API, no GPU)");
	if (a->mode == RB_MODE_NCCL && a->net_flag)
		return rb_err(err, errlen, "--%s: applies to --net only", a->net_flag);
	if (a->minbytes > a->maxbytes)
		return rb_err(err, errlen, "-b %zu is larger than -e %zu; -b must be <= -e",
			      a->minbytes, a->maxbytes);
	if (a->stepfactor <= 1 && a->stepbytes == 0 && a->minbytes != a->maxbytes)
		return rb_err(err, errlen,
			      "-i 0 with -f 1 would never advance from -b to -e; give -i > 0 or "
			      "-f > 1");
	if (a->nthreads != 1)
		return rb_err(err, errlen,
			      "-t %d: threads per process are not supported; use one MPI rank per "
			      "GPU or -g N GPUs per process",
			      a->nthreads);
	if (a->parallel_init)
		return rb_err(err, errlen,
			      "-p %d: parallel init only applies to -t > 1, which is not supported",
			      a->parallel_init);
	if (a->per_iter)
		return rb_err(
			err, errlen,
			"-I %d: per-iteration timing is not supported yet (see docs/bench.md)",
			a->per_iter);
	if (a->per_iter_skip)
		return rb_err(err, errlen, "-K %d: needs -I 1, which is not supported yet",
			      a->per_iter_skip);
	if (a->device_impl)
		return rb_err(
			err, errlen,
			"-D %d: custom device kernels are not supported (railnet-bench has no "
			"device code); use -D 0",
			a->device_impl);
	if (a->device_ctas != 16)
		return rb_err(err, errlen, "-V %d: only applies with -D, which is not supported",
			      a->device_ctas);
	if (a->graph)
		return rb_err(err, errlen,
			      "-G %d: CUDA graph capture is not supported yet; use -G 0", a->graph);
	if (a->op_set && !ci->reduces)
		return rb_err(
			err, errlen,
			"-o: %s does not reduce; -o applies to all_reduce, reduce_scatter and "
			"reduce",
			ci->name);
	if (a->root_set && !ci->rooted && a->root != 0)
		return rb_err(err, errlen,
			      "-r %d: %s has no root; -r applies to broadcast and reduce", a->root,
			      ci->name);
	if (!ci->reduces)
		a->ops = 1u << RB_OP_SUM; /* not used: the redop column prints "none" */
	return 0;
}

/*
 * Invoked through a link named as an nccl-tests binary (all_reduce_perf, ...): --nccl and that
 * collective are implied, so command lines written for nccl-tests run unchanged.
 */
static void rb_args_perf_name(const char *argv0, struct rb_args *a)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	for (int c = 0; base && c < RB_COLL_NR; c++)
		if (!strcmp(base, rb_colls[c].perf)) {
			a->perf_name = rb_colls[c].perf;
			a->mode = RB_MODE_NCCL;
			a->coll = (enum rb_coll)c;
		}
}

int rb_args_parse(int argc, char **argv, struct rb_args *a, char *err, size_t errlen)
{
	int opt, idx;
	long l;

	rb_args_defaults(a);
	rb_args_perf_name(argc > 0 ? argv[0] : NULL, a);
	opterr = 0;
	optind = 0; /* glibc: full re-initialisation, so tests may parse many times */
	while ((opt = getopt_long(argc, argv, rb_short_opts, rb_long_opts, &idx)) != -1) {
		const char *v = optarg;
		char flag[32];
		int rc = 0;

		if (opt < 256)
			snprintf(flag, sizeof(flag), "-%c", opt);
		if (opt >= RB_OPT_PLUGIN && opt <= RB_OPT_NETNS && !a->net_flag)
			a->net_flag = rb_long_opts[idx].name;
		switch (opt) {
		case RB_OPT_NCCL:
		case RB_OPT_NET: {
			enum rb_mode m = opt == RB_OPT_NCCL ? RB_MODE_NCCL : RB_MODE_NET;

			if (a->perf_name && m == RB_MODE_NET)
				return rb_err(err, errlen,
					      "--net: %s is railnet-bench --nccl --coll %s (NCCL "
					      "collectives); run railnet-bench --net for railnet's "
					      "net API",
					      a->perf_name, rb_colls[a->coll].name);
			if (a->mode != RB_MODE_NONE && a->mode != m)
				return rb_err(err, errlen, "--nccl and --net exclude each other");
			a->mode = m;
			break;
		}
		case RB_OPT_COLL:
			rc = rb_parse_coll(v, &a->coll, err, errlen);
			break;
		case RB_OPT_CSV:
			if (!*v)
				return rb_err(err, errlen, "--csv: empty file name");
			a->csv_path = v;
			break;
		case RB_OPT_PLUGIN:
			if (!*v)
				return rb_err(err, errlen, "--plugin: empty name");
			a->plugin = v;
			break;
		case RB_OPT_NET_API:
			rc = rb_parse_int("--net-api", v, 6, 12, &a->net_api, err, errlen);
			break;
		case RB_OPT_NET_DEV:
			if (!strcasecmp(v, "auto"))
				a->net_dev = RB_NET_DEV_AUTO;
			else if (!strcasecmp(v, "pair"))
				a->net_dev = RB_NET_DEV_PAIR;
			else if (rb_parse_int("--net-dev", v, 0, 4095, &a->net_dev, err, errlen)) {
				size_t n = strlen(err);

				snprintf(err + n, errlen > n ? errlen - n : 0, "; or auto, pair");
				return -1;
			}
			break;
		case RB_OPT_MERGE:
			rc = rb_parse_int("--merge", v, 0, 1, &a->merge, err, errlen);
			break;
		case RB_OPT_SLOTS:
			rc = rb_parse_int("--slots", v, 2, 32, &a->slots, err, errlen);
			break;
		case RB_OPT_CHUNK: {
			char sub[200];

			if (rb_parse_size(v, &a->chunk, sub, sizeof(sub)))
				return rb_err(err, errlen, "--chunk %s", sub);
			if (a->chunk < 4096 || a->chunk > (1u << 30))
				return rb_err(err, errlen,
					      "--chunk %s: out of range, allowed 4K..1G", v);
			break;
		}
		case RB_OPT_P2P:
			rc = rb_parse_p2p(v, &a->p2p, err, errlen);
			break;
		case RB_OPT_MIN_TIME:
			rc = rb_parse_int("--min-time", v, 0, 600000, &a->min_time_ms, err, errlen);
			break;
		case RB_OPT_NETNS:
			if (!*v)
				return rb_err(err, errlen, "--netns: empty name");
			a->netns = v;
			break;
		case 'J':
			if (!*v)
				return rb_err(err, errlen, "-J/--json: empty file name");
			a->json_path = v;
			break;
		case 't':
			rc = rb_parse_int(flag, v, 1, 1024, &a->nthreads, err, errlen);
			break;
		case 'g':
			rc = rb_parse_int(flag, v, 1, 1024, &a->ngpus, err, errlen);
			break;
		case 'b':
		case 'e':
		case 'i': {
			size_t *dst = opt == 'b'   ? &a->minbytes
				      : opt == 'e' ? &a->maxbytes
						   : &a->stepbytes;
			char sub[200];

			if (rb_parse_size(v, dst, sub, sizeof(sub)))
				return rb_err(err, errlen, "%s %s", flag, sub);
			break;
		}
		case 'f':
			rc = rb_parse_long(flag, v, 1, 1 << 20, &a->stepfactor, err, errlen);
			break;
		case 'n':
			rc = rb_parse_int(flag, v, 1, INT_MAX, &a->iters, err, errlen);
			break;
		case 'm':
			rc = rb_parse_int(flag, v, 1, 1 << 20, &a->agg_iters, err, errlen);
			break;
		case 'w':
			rc = rb_parse_int(flag, v, 0, INT_MAX, &a->warmup_iters, err, errlen);
			break;
		case 'N':
			rc = rb_parse_int(flag, v, 0, INT_MAX, &a->cycles, err, errlen);
			break;
		case 'p':
			rc = rb_parse_int(flag, v, 0, 1, &a->parallel_init, err, errlen);
			break;
		case 'c':
			rc = rb_parse_int(flag, v, 0, 1 << 20, &a->check, err, errlen);
			break;
		case 'o':
			rc = rb_parse_op(v, &a->ops, err, errlen);
			a->op_set = 1;
			break;
		case 'd':
			rc = rb_parse_type(v, &a->types, err, errlen);
			a->type_set = 1;
			break;
		case 'r':
			rc = rb_parse_int(flag, v, 0, INT_MAX, &a->root, err, errlen);
			a->root_set = 1;
			break;
		case 'z':
			rc = rb_parse_int(flag, v, 0, 3, &a->blocking, err, errlen);
			break;
		case 'y':
			rc = rb_parse_int(flag, v, 0, 1, &a->stream_null, err, errlen);
			break;
		case 'T':
			rc = rb_parse_int(flag, v, 0, 86400 * 7, &a->timeout_s, err, errlen);
			break;
		case 'G':
			rc = rb_parse_int(flag, v, 0, 1 << 20, &a->graph, err, errlen);
			break;
		case 'C':
			rc = rb_parse_int(flag, v, 0, 1, &a->cputime, err, errlen);
			break;
		case 'S':
			rc = rb_parse_int(flag, v, 0, 1, &a->timestamps, err, errlen);
			break;
		case 'a':
			rc = rb_parse_int(flag, v, 0, 3, &a->average, err, errlen);
			break;
		case 'R':
			rc = rb_parse_int(flag, v, 0, 2, &a->local_register, err, errlen);
			break;
		case 'x':
			rc = rb_parse_int(flag, v, 0, 2, &a->cta_policy, err, errlen);
			break;
		case 'D':
			rc = rb_parse_int(flag, v, 0, 4, &a->device_impl, err, errlen);
			break;
		case 'V':
			rc = rb_parse_int(flag, v, 1, 128, &a->device_ctas, err, errlen);
			break;
		case 'M':
			rc = rb_parse_int(flag, v, 0, 1, &a->memory, err, errlen);
			break;
		case 'u':
			rc = rb_parse_long(flag, v, 0, 1 << 20, &l, err, errlen);
			a->unalign = l;
			break;
		case 'I':
			rc = rb_parse_int(flag, v, 0, 1, &a->per_iter, err, errlen);
			break;
		case 'K':
			rc = rb_parse_int(flag, v, 0, INT_MAX, &a->per_iter_skip, err, errlen);
			break;
		case 'h':
			return RB_PARSE_HELP;
		case 1000:
			return RB_PARSE_VERSION;
		case ':':
			return rb_err(err, errlen, "%s: needs a value", argv[optind - 1]);
		case '?':
		default:
			if (optopt && optopt < 256)
				return rb_err(err, errlen, "-%c: unknown flag", optopt);
			return rb_err(err, errlen, "%s: unknown flag", argv[optind - 1]);
		}
		if (rc)
			return -1;
	}
	if (optind < argc)
		return rb_err(err, errlen,
			      "'%s': unexpected argument (collectives are chosen with "
			      "--coll)",
			      argv[optind]);
	return rb_args_check(a, err, errlen);
}

void rb_args_describe(const struct rb_args *a, char *buf, size_t len)
{
	char step[48];

	if (a->stepfactor > 1)
		snprintf(step, sizeof(step), "%ld(factor)", a->stepfactor);
	else
		snprintf(step, sizeof(step), "%zu(bytes)", a->stepbytes);
	snprintf(buf, len,
		 "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d "
		 "iters: %d agg iters: %d validation: %d graph: %d unalign: %ld",
		 a->nthreads, a->ngpus, a->minbytes, a->maxbytes, step, a->warmup_iters, a->iters,
		 a->agg_iters, a->check, a->graph, a->unalign);
}
