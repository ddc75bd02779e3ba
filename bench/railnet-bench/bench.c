/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The measurement loop of railnet-bench, the same for every mode: MPI setup and rank checks,
 * the size sweep with warm-up, timed iterations (blocking variants, aggregation, buffer
 * rotation), in-place and out-of-place placements, the #wrong check, the time combined across
 * ranks, and the table, footer and result files printed by world rank 0. Devices, buffers,
 * launches and waits belong to the mode (struct rb_mode_ops); this file never calls CUDA, NCCL
 * or the plugin.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "rb.h"

extern char **environ;

#define RB_PROG "railnet-bench"
#define RB_SEED_TIMING 99

/* Everything one run accumulates. */
struct rb_bench {
	struct rb_ctx ctx;
	const struct rb_args *a;
	size_t maxbytes; /* -e, possibly reduced to fit device memory */
	void *h_send, *h_got, *h_exp;
	struct rb_row *rows;
	int nrows, cap_rows;
	double bw_sum;
	long bw_n;
	long oob;
	struct rb_device *devices; /* all ranks', on world rank 0 */
	int ndevices;
	char start_time[32];
};

static double rb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void rb_iso_time(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Rank as the launcher will know it, before MPI_Init: only rank 0 prints usage errors. */
static int rb_launcher_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
					    "SLURM_PROCID" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return atoi(v);
	}
	return 0;
}

/* A runtime failure after MPI_Init: the other ranks may be inside a collective. */
static void __attribute__((noreturn)) rb_abort(struct rb_bench *b, int rc)
{
	fflush(stdout);
	if (b->ctx.ops && b->ctx.ops->close)
		b->ctx.ops->close(&b->ctx);
	MPI_Abort(MPI_COMM_WORLD, rc);
	exit(rc);
}

/*
 * Which ranks share a host, as NCCL decides it: NCCL_HOSTID when set (two ranks on one machine
 * then count as two hosts, e.g. two "nodes" sharing one GPU under MPS), else the hostname and
 * the boot id.
 */
static uint64_t rb_host_hash(void)
{
	const char *id = getenv("NCCL_HOSTID");
	char buf[512] = { 0 };
	uint64_t h = 1469598103934665603ULL;
	FILE *f;
	size_t n;

	if (id && *id) {
		snprintf(buf, sizeof(buf), "%s", id);
	} else {
		gethostname(buf, 255);
		n = strlen(buf);
		f = fopen("/proc/sys/kernel/random/boot_id", "r");
		if (f) {
			if (!fgets(buf + n, (int)(sizeof(buf) - n), f))
				buf[n] = 0;
			fclose(f);
		}
	}
	for (const char *p = buf; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

static void rb_local_ranks(struct rb_ctx *c)
{
	uint64_t me = rb_host_hash();
	uint64_t *all = calloc((size_t)c->wsize, sizeof(*all));

	if (!all) {
		fprintf(stderr, RB_PROG ": out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, RB_EXIT_RUNTIME);
	}
	MPI_Allgather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	c->local_rank = 0;
	c->local_size = 0;
	for (int r = 0; r < c->wsize; r++) {
		if (all[r] != me)
			continue;
		if (r < c->wrank)
			c->local_rank++;
		c->local_size++;
	}
	free(all);
}

/* Every rank learns the worst rc; 0 when all are fine. */
static int rb_agree(int rc)
{
	int worst = 0;

	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return worst;
}

/*
 * Threads for the #wrong check's data: the CPUs this process may run on, divided among the
 * processes of the machine (MPI's shared-memory communicator: NCCL_HOSTID, which makes one
 * machine several hosts for NCCL, does not split it). Never more threads than CPUs when the
 * ranks share a mask (unbound, or a container's cpuset); fewer when each is bound to its own.
 * Collective: every rank calls it at the same point.
 */
static int rb_check_threads(void)
{
	cpu_set_t set;
	MPI_Comm shm;
	int n = 1, local = 1;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm) ==
	    MPI_SUCCESS) {
		MPI_Comm_size(shm, &local);
		MPI_Comm_free(&shm);
	}
	n /= local > 0 ? local : 1;
	return n < 1 ? 1 : n;
}

static int rb_rank_checks(struct rb_bench *b)
{
	const struct rb_args *a = b->a;
	const struct rb_coll_info *ci = &rb_colls[a->coll];

	if (ci->rooted && a->root >= b->ctx.nranks) {
		if (b->ctx.wrank == 0)
			fprintf(stderr,
				RB_PROG ": -r %d: root must be a rank of the communicator, 0..%d "
					"(%d processes x -g %d)\n",
				a->root, b->ctx.nranks - 1, b->ctx.wsize, a->ngpus);
		return RB_EXIT_USAGE;
	}
	return 0;
}

static void rb_put_checked(struct rb_bench *b, int i, int which, size_t off, const void *src,
			   size_t n)
{
	int rc = b->ctx.ops->put(&b->ctx, i, which, off, src, n);

	if (rc)
		rb_abort(b, rc);
}

/* Byte offsets of one call's send and receive pointers. */
struct rb_place {
	size_t send_off, recv_off;
	int send_in_recv;
};

static void rb_place(const struct rb_bench *b, const struct rb_layout *l, size_t elt, int rank,
		     int in_place, size_t shift, struct rb_place *p)
{
	size_t base = (size_t)b->a->unalign * elt + shift;

	p->send_in_recv = in_place;
	p->send_off = base + (in_place ? (size_t)rank * l->send_ip_off * elt : 0);
	p->recv_off = base + (in_place ? (size_t)rank * l->recv_ip_off * elt : 0);
}

static int rb_launch(struct rb_bench *b, const struct rb_layout *l, enum rb_type t, enum rb_op op,
		     int in_place, size_t iter)
{
	const struct rb_mode_ops *ops = b->ctx.ops;
	size_t elt = rb_types[t].size;
	size_t total = rb_coll_size_bytes(l, elt);
	size_t steps = total ? b->maxbytes / total : 1;
	size_t shift = total * (iter % (steps ? steps : 1));
	int root = rb_colls[b->a->coll].rooted ? b->a->root : -1;

	for (int i = 0; i < b->ctx.ndev; i++) {
		struct rb_place p;
		int rc;

		rb_place(b, l, elt, b->ctx.wrank * b->ctx.ndev + i, in_place, shift, &p);
		rc = ops->start(&b->ctx, i, p.send_off, p.send_in_recv, p.recv_off, l, t, op, root);
		if (rc)
			return rc;
	}
	return 0;
}

/* One grouped launch of `m` calls on every local device. */
static void rb_launch_group(struct rb_bench *b, const struct rb_layout *l, enum rb_type t,
			    enum rb_op op, int in_place, size_t iter0, int m)
{
	const struct rb_mode_ops *ops = b->ctx.ops;
	int rc;

	rc = ops->group_start(&b->ctx);
	for (int k = 0; !rc && k < m; k++)
		rc = rb_launch(b, l, t, op, in_place, iter0 + (size_t)k);
	if (!rc)
		rc = ops->group_end(&b->ctx);
	if (rc)
		rb_abort(b, rc);
}

static void rb_wait(struct rb_bench *b)
{
	int rc = b->ctx.ops->wait(&b->ctx);

	if (rc)
		rb_abort(b, rc);
}

/* Before an MPI collective that follows operations (the mode's quiesce, when it has one). */
static void rb_quiesce(struct rb_bench *b)
{
	int rc = b->ctx.ops->quiesce ? b->ctx.ops->quiesce(&b->ctx) : 0;

	if (rc)
		rb_abort(b, rc);
}

/* Write send data for check repetition `seed` on every local device; zero the receive side. */
static void rb_init_data(struct rb_bench *b, const struct rb_layout *l, enum rb_type t,
			 enum rb_op op, int in_place, uint64_t seed)
{
	const struct rb_mode_ops *ops = b->ctx.ops;
	size_t elt = rb_types[t].size;
	int root = b->a->root;

	for (int i = 0; i < b->ctx.ndev; i++) {
		int rank = b->ctx.wrank * b->ctx.ndev + i;
		struct rb_place p;
		int rc;

		rb_place(b, l, elt, rank, in_place, 0, &p);
		rc = ops->zero(&b->ctx, i, 1, b->maxbytes + (size_t)b->a->unalign * elt);
		if (rc)
			rb_abort(b, rc);
		rb_data_fill(b->a->coll, t, op, l, b->ctx.nranks, rank, root, seed, b->h_send);
		rb_put_checked(b, i, p.send_in_recv, p.send_off, b->h_send, l->sendcount * elt);
	}
}

/* Wrong elements on this process's devices; *bad counts devices that saw any. */
static double rb_check_local(struct rb_bench *b, const struct rb_layout *l, enum rb_type t,
			     enum rb_op op, int in_place, uint64_t seed, long *bad)
{
	size_t elt = rb_types[t].size;
	double wrong = 0;

	for (int i = 0; i < b->ctx.ndev; i++) {
		int rank = b->ctx.wrank * b->ctx.ndev + i;
		struct rb_place p;
		size_t w;
		int rc;

		if (!rb_data_expect(b->a->coll, t, op, l, b->ctx.nranks, rank, b->a->root, seed,
				    b->h_exp))
			continue;
		rb_place(b, l, elt, rank, in_place, 0, &p);
		rc = b->ctx.ops->get(&b->ctx, i, 1, p.recv_off, b->h_got, l->recvcount * elt);
		if (rc)
			rb_abort(b, rc);
		w = rb_data_compare(t, op, b->ctx.nranks, b->h_got, b->h_exp, l->recvcount);
		wrong += (double)w;
		*bad += w != 0;
	}
	return wrong;
}

static double rb_combine_time(const struct rb_bench *b, double t)
{
	double out = t;

	switch (b->a->average) {
	case 0:
		MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		break;
	case 2:
		MPI_Allreduce(&t, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
		break;
	case 3:
		MPI_Allreduce(&t, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		break;
	default:
		MPI_Allreduce(&t, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		out /= b->ctx.wsize;
		break;
	}
	return out;
}

/* Run `iters` timed iterations of one placement; returns the seconds they took (launch time
 * only with -C 1) and sets *wall to the wall time including the wait. */
static double rb_time_iters(struct rb_bench *b, const struct rb_layout *l, enum rb_type t,
			    enum rb_op op, int in_place, int iters, double *wall)
{
	const struct rb_args *a = b->a;
	int m = a->agg_iters;
	double t0, tl, t1, start;

	rb_quiesce(b);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = start = rb_now();
	for (int it = 0; it < iters; it++) {
		size_t iter0 = (size_t)it * (size_t)m;

		if (a->blocking == 1 || a->blocking == 2) {
			for (int k = 0; k < m; k++) {
				rb_launch_group(b, l, t, op, in_place, iter0 + (size_t)k, 1);
				rb_wait(b);
				if (a->blocking == 1) {
					rb_quiesce(b);
					MPI_Barrier(MPI_COMM_WORLD);
				}
			}
		} else {
			rb_launch_group(b, l, t, op, in_place, iter0, m);
		}
		if (a->blocking == 3) {
			double p;

			rb_wait(b);
			p = rb_now();
			rb_quiesce(b);
			MPI_Barrier(MPI_COMM_WORLD);
			t0 += rb_now() - p; /* the barrier is not part of the measurement */
		}
	}
	tl = rb_now();
	rb_wait(b);
	t1 = rb_now();
	rb_quiesce(b);
	*wall = t1 - start;
	return (a->cputime ? tl : t1) - t0;
}

/* Time one placement at one size, then check it; fills h. */
static void rb_bench_time(struct rb_bench *b, const struct rb_layout *l, enum rb_type t,
			  enum rb_op op, int in_place, struct rb_half *h)
{
	const struct rb_args *a = b->a;
	int m = a->agg_iters, iters = a->iters;
	double wall, sec;

	if (a->check) {
		rb_init_data(b, l, t, op, in_place, RB_SEED_TIMING);
		rb_launch_group(b, l, t, op, in_place, 0, 1);
		rb_wait(b);
	}
	sec = rb_time_iters(b, l, t, op, in_place, iters, &wall);
	/*
	 * --min-time: when -n iterations took less than that on the slowest rank, time again
	 * with enough iterations to fill it (every rank agrees on the count), so that small
	 * sizes are averaged over as long as large ones (make run on a busy 2-core machine).
	 */
	for (int round = 0; a->min_time_ms > 0 && round < 4; round++) {
		double slowest = 0, want = a->min_time_ms / 1e3, k;

		MPI_Allreduce(&wall, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (slowest >= want || iters >= RB_MIN_TIME_MAX_ITERS)
			break;
		/* a first short batch may run slower than the next: aim 20% past the mark */
		k = slowest > 0 ? 1.2 * want / slowest * iters : 1e6;
		iters = k > RB_MIN_TIME_MAX_ITERS ? RB_MIN_TIME_MAX_ITERS : (int)k + 1;
		sec = rb_time_iters(b, l, t, op, in_place, iters, &wall);
	}
	sec /= (double)iters * m;
	sec = rb_combine_time(b, sec);

	h->time_us = sec * 1e6;
	h->iters = iters;
	h->algbw =
		sec > 0 ? rb_coll_alg_bytes(a->coll, l, rb_types[t].size, b->ctx.nranks) / 1e9 / sec
			: 0;
	h->busbw = h->algbw * rb_coll_busbw_factor(a->coll, b->ctx.nranks);
	h->wrong = -1;
	/* As nccl-tests: in-place alltoall and sendrecv are timed but not checked (N/A). */
	if (!a->check || (in_place && (a->coll == RB_COLL_ALLTOALL || a->coll == RB_COLL_SENDRECV)))
		return;

	h->wrong = 0;
	for (int rep = 0; rep < a->check; rep++) {
		uint64_t seed = RB_SEED_TIMING + 1 + (uint64_t)rep;
		double wrong = 0, all = 0;
		long bad = 0, allbad = 0;

		rb_init_data(b, l, t, op, in_place, seed);
		rb_launch_group(b, l, t, op, in_place, 0, 1);
		rb_wait(b);
		rb_quiesce(b);
		wrong = rb_check_local(b, l, t, op, in_place, seed, &bad);
		MPI_Allreduce(&wrong, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		h->wrong = all;
		if (all > 0) {
			b->oob += allbad;
			break;
		}
	}
}

static void rb_row_add(struct rb_bench *b, const struct rb_row *row)
{
	if (b->nrows == b->cap_rows) {
		int cap = b->cap_rows ? 2 * b->cap_rows : 64;
		struct rb_row *n = realloc(b->rows, (size_t)cap * sizeof(*n));

		if (!n)
			return; /* the table is printed already; only the files lose the row */
		b->rows = n;
		b->cap_rows = cap;
	}
	b->rows[b->nrows++] = *row;
}

static size_t rb_next_size(const struct rb_args *a, size_t s)
{
	if (a->stepfactor > 1)
		return s ? s * (size_t)a->stepfactor : 1;
	return s + a->stepbytes;
}

static void rb_warmup(struct rb_bench *b, enum rb_type t, enum rb_op op)
{
	const struct rb_args *a = b->a;

	if (!a->warmup_iters)
		return;
	for (size_t s = a->minbytes; s <= b->maxbytes; s = s ? 2 * s : 1) {
		struct rb_layout l;

		rb_coll_layout(a->coll, s, rb_types[t].size, b->ctx.nranks, &l);
		for (int w = 0; w < a->warmup_iters; w++)
			rb_launch_group(b, &l, t, op, 0, (size_t)w, 1);
		rb_wait(b);
	}
}

static void rb_sweep(struct rb_bench *b, enum rb_type t, enum rb_op op)
{
	const struct rb_args *a = b->a;
	const struct rb_coll_info *ci = &rb_colls[a->coll];
	int print = b->ctx.wrank == 0;
	char buf[256];
	const char *why = b->ctx.ops->unsupported
				  ? b->ctx.ops->unsupported(&b->ctx, t, ci->reduces ? op : RB_OP_NR)
				  : NULL;

	if (why) {
		if (print)
			printf("# skipping %s %s: %s\n", rb_types[t].name, rb_op_names[op], why);
		return;
	}
	rb_warmup(b, t, op);
	for (size_t s = a->minbytes; s <= b->maxbytes; s = rb_next_size(a, s)) {
		struct rb_row row;
		struct rb_layout l;

		memset(&row, 0, sizeof(row));
		rb_coll_layout(a->coll, s, rb_types[t].size, b->ctx.nranks, &l);
		row.size = rb_coll_size_bytes(&l, rb_types[t].size);
		row.count = l.count;
		row.type = t;
		row.op = ci->reduces ? op : RB_OP_NR;
		row.root = ci->rooted ? a->root : -1;
		if (print) {
			rb_fmt_row_head(buf, sizeof(buf), row.size, row.count, rb_types[t].name,
					ci->reduces ? rb_op_names[op] : "none", row.root);
			fputs(buf, stdout);
			fflush(stdout);
		}
		for (int ip = 0; ip < 2; ip++) {
			struct rb_half *h = ip ? &row.ip : &row.oop;

			rb_bench_time(b, &l, t, op, ip, h);
			b->bw_sum += h->busbw;
			b->bw_n++;
			if (print) {
				rb_fmt_row_half(buf, sizeof(buf), h->time_us, h->algbw, h->busbw,
						h->wrong);
				fputs(buf, stdout);
				fflush(stdout);
			}
		}
		if (a->timestamps) {
			time_t now = time(NULL);
			struct tm tm;

			localtime_r(&now, &tm);
			strftime(row.timestamp, sizeof(row.timestamp), "%Y-%m-%d %H:%M:%S", &tm);
			if (print)
				printf("%21s", row.timestamp);
		}
		if (print) {
			putchar('\n');
			fflush(stdout);
		}
		rb_row_add(b, &row);
		if (s == b->maxbytes || rb_next_size(a, s) <= s)
			break;
	}
}

static void rb_gather_devices(struct rb_bench *b)
{
	int n = b->ctx.ndev;
	struct rb_device *mine = calloc((size_t)n, sizeof(*mine));
	int bytes = n * (int)sizeof(*mine);

	if (!mine)
		rb_abort(b, RB_EXIT_RUNTIME);
	for (int i = 0; i < n; i++) {
		mine[i].rank = b->ctx.wrank * n + i;
		mine[i].pid = (int)getpid();
		gethostname(mine[i].host, sizeof(mine[i].host) - 1);
		b->ctx.ops->describe(&b->ctx, i, &mine[i]);
	}
	if (b->ctx.wrank == 0) {
		b->devices = calloc((size_t)b->ctx.nranks, sizeof(*b->devices));
		if (!b->devices)
			rb_abort(b, RB_EXIT_RUNTIME);
		b->ndevices = b->ctx.nranks;
	}
	MPI_Gather(mine, bytes, MPI_BYTE, b->devices, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
	free(mine);
}

static void rb_print_devices(const struct rb_bench *b)
{
	for (int i = 0; i < b->ndevices; i++) {
		const struct rb_device *d = &b->devices[i];
		char host[64];

		snprintf(host, sizeof(host), "%s", d->host);
		host[strcspn(host, ".")] = 0;
		printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", d->rank,
		       d->group, d->pid, host, d->device, d->pci, d->name);
	}
}

static void rb_print_header(struct rb_bench *b, const struct rb_run_info *ri)
{
	const struct rb_args *a = b->a;
	char buf[512];

	if (a->json_path)
		printf("# Writing JSON output to %s\n", a->json_path);
	if (a->csv_path)
		printf("# Writing CSV output to %s\n", a->csv_path);
	printf("# " RB_PROG " version " RB_VERSION " mode %s nccl-headers=%d nccl-library=%d\n",
	       ri->mode, ri->nccl_headers, ri->nccl_library);
	if (ri->mode_info[0])
		printf("# %s\n", ri->mode_info);
	if (a->p2p) {
		printf("# Point-to-point test starting: " RB_PROG " --%s --p2p %s\n", ri->mode,
		       rb_p2p_names[a->p2p]);
		fflush(stdout);
		return;
	}
	printf("# Collective test starting: " RB_PROG " --%s --coll %s\n", ri->mode,
	       rb_colls[a->coll].name);
	rb_args_describe(a, buf, sizeof(buf));
	puts(buf);
	if (a->blocking == 1)
		puts("# Blocking Enabled: wait for completion and barrier after each collective");
	else if (a->blocking == 2)
		puts("# Blocking Enabled: wait for completion after each collective, no barrier");
	else if (a->blocking == 3)
		puts("# Blocking Enabled: wait for completion and barrier after each iteration "
		     "(barrier not timed)");
	puts("#");
	puts("# Using devices");
	rb_print_devices(b);
	if (b->maxbytes != a->maxbytes) {
		puts("#");
		printf("# Reducing maxBytes to %zu due to memory limitation\n", b->maxbytes);
	}
	puts("#");
	for (int line = 0; line < 3; line++) {
		rb_fmt_header(buf, sizeof(buf), line, a->cputime, a->timestamps);
		puts(buf);
	}
	fflush(stdout);
}

/* Environment worth recording with the results: what changes NCCL's or railnet's behaviour. */
static char **rb_env_subset(void)
{
	static const char *const prefixes[] = { "NCCL_",
						"RAILNET_",
						"SOFTVERBS_",
						"CUDA_VISIBLE_DEVICES=",
						"LD_LIBRARY_PATH=",
						"OMPI_COMM_WORLD_SIZE=",
						"UCX_" };
	size_t n = 0, cap = 16;
	char **out = calloc(cap + 1, sizeof(*out));

	for (char **e = environ; out && *e; e++) {
		int keep = 0;

		for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++)
			keep |= !strncmp(*e, prefixes[p], strlen(prefixes[p]));
		if (!keep)
			continue;
		if (n == cap) {
			char **grown = realloc(out, (2 * cap + 1) * sizeof(*out));

			if (!grown)
				break;
			out = grown;
			cap *= 2;
		}
		out[n++] = *e;
		out[n] = NULL;
	}
	return out;
}

static void rb_machine(struct rb_run_info *ri)
{
	struct utsname u;
	FILE *f;
	char line[256];

	gethostname(ri->host, sizeof(ri->host) - 1);
	if (!uname(&u))
		snprintf(ri->kernel, sizeof(ri->kernel), "%.20s %.64s %.20s", u.sysname, u.release,
			 u.machine);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			colon += 1 + (colon[1] == ' ');
			colon[strcspn(colon, "\n")] = 0;
			snprintf(ri->cpu, sizeof(ri->cpu), "%s", colon);
			break;
		}
	}
	if (f)
		fclose(f);
}

static int rb_write_file(const char *path, const char *what, const struct rb_run_info *ri,
			 int (*writer)(FILE *, const struct rb_run_info *))
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		fprintf(stderr, RB_PROG ": cannot write %s file %s: %s\n", what, path,
			strerror(errno));
		return -1;
	}
	rc = writer(f, ri);
	if (fclose(f) || rc) {
		fprintf(stderr, RB_PROG ": error writing %s file %s\n", what, path);
		return -1;
	}
	return 0;
}

static const struct rb_mode_ops *rb_mode_of(const struct rb_args *a)
{
	if (a->mode == RB_MODE_NCCL)
		return &rb_mode_nccl;
	return a->p2p ? &rb_mode_net_p2p : &rb_mode_net;
}

int rb_bench_main(int argc, char **argv)
{
	static struct rb_bench bench;
	struct rb_bench *b = &bench;
	struct rb_args args;
	struct rb_run_info ri;
	char err[512];
	const char *minbw_env;
	double avg, minbw = -1, slowest = -1;
	const char *verdict = "";
	int rc, quiet = rb_launcher_rank() != 0;

	rc = rb_args_parse(argc, argv, &args, err, sizeof(err));
	if (rc == RB_PARSE_HELP) {
		if (!quiet)
			rb_usage(stdout, RB_PROG);
		return RB_EXIT_OK;
	}
	if (rc == RB_PARSE_VERSION) {
		if (!quiet)
			printf(RB_PROG " " RB_VERSION " (git " RN_GIT_DESCRIBE
				       ", built " RN_BUILD_DATE ")\n");
		return RB_EXIT_OK;
	}
	if (rc) {
		if (!quiet) {
			fprintf(stderr, RB_PROG ": %s\n", err);
			rb_usage(stderr, RB_PROG);
		}
		return RB_EXIT_USAGE;
	}
	b->a = &args;
	b->ctx.args = &args;
	b->ctx.ops = rb_mode_of(&args);
	if (b->ctx.ops->missing) {
		if (!quiet)
			fprintf(stderr, RB_PROG ": %s\n", b->ctx.ops->missing);
		return RB_EXIT_USAGE;
	}
	if (b->ctx.ops->validate && b->ctx.ops->validate(&args, err, sizeof(err))) {
		if (!quiet) {
			fprintf(stderr, RB_PROG ": %s\n", err);
			rb_usage(stderr, RB_PROG);
		}
		return RB_EXIT_USAGE;
	}
	minbw_env = getenv("NCCL_TESTS_MIN_BW");
	if (minbw_env && *minbw_env) {
		char *end;

		minbw = strtod(minbw_env, &end);
		if (*end || minbw < 0) {
			if (!quiet)
				fprintf(stderr,
					RB_PROG ": NCCL_TESTS_MIN_BW=%s: not a bandwidth "
						"in GB/s\n",
					minbw_env);
			return RB_EXIT_USAGE;
		}
	}
	if (getenv("NCCL_TESTS_SPLIT") || getenv("NCCL_TESTS_SPLIT_MASK")) {
		if (!quiet)
			fprintf(stderr,
				RB_PROG ": NCCL_TESTS_SPLIT/NCCL_TESTS_SPLIT_MASK: "
					"communicator splitting is not supported; unset them\n");
		return RB_EXIT_USAGE;
	}

	rb_iso_time(b->start_time, sizeof(b->start_time));
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &b->ctx.wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &b->ctx.wsize);
	rb_local_ranks(&b->ctx);
	rb_data_set_threads(rb_check_threads());
	b->ctx.ndev = args.ngpus;
	b->ctx.nranks = b->ctx.wsize * args.ngpus;

	rc = rb_agree(rb_rank_checks(b));
	if (!rc)
		rc = rb_agree(b->ctx.ops->open(&b->ctx));
	if (rc) {
		if (b->ctx.ops->close)
			b->ctx.ops->close(&b->ctx);
		MPI_Finalize();
		return rc;
	}

	b->maxbytes = args.maxbytes;
	if (b->ctx.ops->max_bytes) {
		unsigned long long lim = b->ctx.ops->max_bytes(&b->ctx), all = 0;

		if (!lim)
			lim = ~0ULL;
		MPI_Allreduce(&lim, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
		if (all < b->maxbytes)
			b->maxbytes = (size_t)all;
	}
	if (b->maxbytes < args.minbytes) {
		if (b->ctx.wrank == 0)
			fprintf(stderr,
				RB_PROG ": -b %zu does not fit in device memory (at most "
					"%zu bytes per buffer)\n",
				args.minbytes, b->maxbytes);
		rb_abort(b, RB_EXIT_USAGE);
	}
	{
		size_t hbytes = b->maxbytes + (size_t)args.unalign * 8 + 64;

		b->h_send = malloc(hbytes);
		b->h_got = malloc(hbytes);
		b->h_exp = malloc(hbytes);
		if (!b->h_send || !b->h_got || !b->h_exp) {
			fprintf(stderr,
				RB_PROG ": cannot allocate 3 x %zu bytes of host memory for "
					"the #wrong check; use a smaller -e or -c 0\n",
				hbytes);
			rb_abort(b, RB_EXIT_RUNTIME);
		}
		rc = b->ctx.ops->alloc(&b->ctx, hbytes);
		if (rb_agree(rc))
			rb_abort(b, rc ? rc : RB_EXIT_RUNTIME);
	}

	memset(&ri, 0, sizeof(ri));
	ri.mode = b->ctx.ops->name;
	ri.prog = RB_PROG;
	ri.coll = args.coll;
	ri.nranks = b->ctx.nranks;
	ri.nprocs = b->ctx.wsize;
	ri.args = &args;
	ri.argc = argc;
	ri.argv = argv;
	if (b->ctx.ops->versions)
		b->ctx.ops->versions(&b->ctx, &ri);
	if (args.p2p && b->ctx.ops->run) {
		/* Not a collective: the mode prints its own table, per device and rank pair. */
		if (b->ctx.wrank == 0)
			rb_print_header(b, &ri);
		rc = rb_agree(b->ctx.ops->run(&b->ctx));
		b->ctx.ops->close(&b->ctx);
		free(b->h_send);
		free(b->h_got);
		free(b->h_exp);
		MPI_Finalize();
		return rc;
	}
	rb_gather_devices(b);
	if (b->ctx.wrank == 0)
		rb_print_header(b, &ri);

	for (int cyc = 0; args.cycles == 0 || cyc < args.cycles; cyc++)
		for (int t = 0; t < RB_TYPE_NR; t++)
			for (int op = 0; op < RB_OP_NR; op++)
				if ((args.types >> t & 1) && (args.ops >> op & 1))
					rb_sweep(b, (enum rb_type)t, (enum rb_op)op);

	avg = b->bw_n ? b->bw_sum / (double)b->bw_n : 0;
	if (minbw >= 0)
		verdict = avg < 0.9 * minbw ? "FAILED" : "OK";
	rc = b->oob || !strcmp(verdict, "FAILED") ? RB_EXIT_WRONG : RB_EXIT_OK;
	if (b->ctx.ops->slowest) {
		double mine = b->ctx.ops->slowest(&b->ctx);

		MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	}
	if (b->ctx.wrank == 0) {
		const char *lasterr =
			b->ctx.ops->last_error ? b->ctx.ops->last_error(&b->ctx) : NULL;
		char progname[96];

		snprintf(progname, sizeof(progname), RB_PROG " --%s --coll %s", ri.mode,
			 rb_colls[args.coll].name);
		rb_fmt_footer(stdout, b->oob, avg, verdict, progname);
		if (slowest >= 0)
			printf("# %-20s : %.3f ms\n", "Slowest operation", slowest * 1e3);
		if (lasterr && *lasterr)
			printf("# error: %s\n", lasterr);
		else
			putchar('\n');
		fflush(stdout);

		memcpy(ri.start_time, b->start_time, sizeof(ri.start_time));
		rb_iso_time(ri.end_time, sizeof(ri.end_time));
		rb_machine(&ri);
		ri.envp = rb_env_subset();
		ri.devices = b->devices;
		ri.ndevices = b->ndevices;
		ri.rows = b->rows;
		ri.nrows = b->nrows;
		ri.oob = b->oob;
		ri.avg_busbw = avg;
		ri.bw_verdict = verdict;
		ri.error = lasterr;
		if (args.json_path && rb_write_file(args.json_path, "JSON", &ri, rb_write_json))
			rc = rc ? rc : RB_EXIT_RUNTIME;
		if (args.csv_path && rb_write_file(args.csv_path, "CSV", &ri, rb_write_csv))
			rc = rc ? rc : RB_EXIT_RUNTIME;
		free(ri.envp);
	}
	if (rc == RB_EXIT_WRONG && b->ctx.wrank == 0)
		fprintf(stderr, RB_PROG ": %s\n",
			b->oob ? "wrong results (see #wrong)"
			       : "average bus bandwidth below 0.9 x NCCL_TESTS_MIN_BW");
	b->ctx.ops->close(&b->ctx);
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(b->h_send);
	free(b->h_got);
	free(b->h_exp);
	free(b->rows);
	free(b->devices);
	MPI_Finalize();
	return rc;
}
