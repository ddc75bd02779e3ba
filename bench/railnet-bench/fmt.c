/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numbers and text of the result table: element counts per collective, algorithm and bus
 * bandwidth, and the exact header, row and footer layout of nccl-tests' *_perf output (column
 * widths, two-space separators, trailing spaces), so the two tables can be diffed and parsed
 * by the same scripts. Only formats into buffers or a FILE; measures nothing.
 */
#include <stdio.h>
#include <string.h>

#include "rb.h"

void rb_coll_layout(enum rb_coll c, size_t bytes, size_t elt, int nranks, struct rb_layout *l)
{
	size_t count = bytes / elt;
	size_t n = (size_t)nranks;
	/* Sharded collectives: per-rank count rounded down to a 16-byte multiple of elements. */
	size_t shard = (count / n) & ~(16 / elt - 1);

	memset(l, 0, sizeof(*l));
	switch (c) {
	case RB_COLL_ALL_GATHER:
		l->count = shard;
		l->sendcount = shard;
		l->recvcount = shard * n;
		l->send_ip_off = shard;
		break;
	case RB_COLL_REDUCE_SCATTER:
		l->count = shard;
		l->sendcount = shard * n;
		l->recvcount = shard;
		l->recv_ip_off = shard;
		break;
	case RB_COLL_ALLTOALL:
		l->count = shard;
		l->sendcount = shard * n;
		l->recvcount = shard * n;
		break;
	case RB_COLL_ALL_REDUCE:
	case RB_COLL_BROADCAST:
	case RB_COLL_REDUCE:
	case RB_COLL_SENDRECV:
	default:
		l->count = count;
		l->sendcount = count;
		l->recvcount = count;
		break;
	}
}

size_t rb_coll_size_bytes(const struct rb_layout *l, size_t elt)
{
	return (l->sendcount > l->recvcount ? l->sendcount : l->recvcount) * elt;
}

double rb_coll_alg_bytes(enum rb_coll c, const struct rb_layout *l, size_t elt, int nranks)
{
	switch (c) {
	case RB_COLL_ALL_GATHER:
	case RB_COLL_REDUCE_SCATTER:
	case RB_COLL_ALLTOALL:
		return (double)l->count * (double)elt * nranks;
	default:
		return (double)l->count * (double)elt;
	}
}

double rb_coll_busbw_factor(enum rb_coll c, int nranks)
{
	double n = nranks;

	switch (c) {
	case RB_COLL_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case RB_COLL_ALL_GATHER:
	case RB_COLL_REDUCE_SCATTER:
	case RB_COLL_ALLTOALL:
		return (n - 1) / n;
	case RB_COLL_BROADCAST:
	case RB_COLL_REDUCE:
	case RB_COLL_SENDRECV:
	default:
		return 1.0;
	}
}

void rb_fmt_num(char *buf, size_t len, double v, int width)
{
	static const char *const fixed[] = { "%.2f", "%.1f", "%.0f" };
	char tmp[64];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		/* The formats are literals from the table above. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		int n = snprintf(tmp, sizeof(tmp), fixed[i], v);
#pragma GCC diagnostic pop
		if (n > 0 && n <= width) {
			snprintf(buf, len, "%*s", width, tmp);
			return;
		}
	}
	if (width >= 7)
		snprintf(tmp, sizeof(tmp), "%.1e", v);
	else
		snprintf(tmp, sizeof(tmp), "%.0e", v);
	snprintf(buf, len, "%*s", width, tmp);
}

/* Blank first-header prefix: the five leading columns, "#" included. */
#define RB_HEAD_COLS 52

void rb_fmt_header(char *buf, size_t len, int line, int cputime, int timestamps)
{
	const char *tm = cputime ? "cputime" : "time";
	int n = 0;

	switch (line) {
	case 0:
		snprintf(buf, len, "#%*s%s%s", RB_HEAD_COLS - 1, "",
			 "           out-of-place          ", "             in-place          ");
		return;
	case 1:
		n = snprintf(buf, len, "# %10s  %12s  %8s  %6s  %6s", "size", "count", "type",
			     "redop", "root");
		for (int h = 0; h < 2 && n >= 0 && (size_t)n < len; h++)
			n += snprintf(buf + n, len - (size_t)n, "  %7s  %6s  %6s  %6s", tm, "algbw",
				      "busbw", "#wrong");
		if (n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - (size_t)n, " %*s", timestamps ? 19 : 0,
				 timestamps ? "timestamp" : "");
		return;
	default:
		n = snprintf(buf, len, "# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "",
			     "");
		for (int h = 0; h < 2 && n >= 0 && (size_t)n < len; h++)
			n += snprintf(buf + n, len - (size_t)n, "  %7s  %6s  %6s  %6s", "(us)",
				      "(GB/s)", "(GB/s)", "");
		if (n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - (size_t)n, " %*s", timestamps ? 19 : 0, "");
		return;
	}
}

void rb_fmt_row_head(char *buf, size_t len, size_t size, size_t count, const char *type,
		     const char *redop, int root)
{
	snprintf(buf, len, "%12zu  %12zu  %8s  %6s  %6d", size, count, type, redop, root);
}

void rb_fmt_row_half(char *buf, size_t len, double time_us, double algbw, double busbw,
		     double wrong)
{
	char t[32], a[32], b[32];

	rb_fmt_num(t, sizeof(t), time_us, 7);
	rb_fmt_num(a, sizeof(a), algbw, 6);
	rb_fmt_num(b, sizeof(b), busbw, 6);
	if (wrong < 0)
		snprintf(buf, len, "  %7s  %6s  %6s    N/A", t, a, b);
	else
		snprintf(buf, len, "  %7s  %6s  %6s  %6g", t, a, b, wrong);
}

void rb_fmt_timestamp(char *buf, size_t len, time_t t)
{
	struct tm tm;
	char s[32];

	localtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%21s", s);
}

void rb_fmt_footer(FILE *f, long oob, double avg_busbw, const char *bw_verdict, const char *prog)
{
	fprintf(f, "# %-20s : %ld %s\n", "Out of bounds values", oob, oob ? "FAILED" : "OK");
	fprintf(f, "# %-20s : %g %s\n", "Avg bus bandwidth", avg_busbw, bw_verdict);
	fprintf(f, "#\n");
	fprintf(f, "# Collective test concluded: %s\n", prog);
}
