// SPDX-License-Identifier: Apache-2.0
/*
 * sv-gpu-write-lat: what one small write into GPU memory costs softverbs' NIC thread, by the
 * CUDA driver calls it could use, each followed by the wait that makes the data visible before
 * a completion (softverbs' strict GDR order). Not a test: prints a table of medians and 90th
 * percentiles in microseconds. Needs a GPU; without one it says so and exits 77; a driver call
 * failing mid-run ends it with exit 1 and the call named.
 *
 *   copy-pinned   cuMemcpyHtoDAsync from pinned host memory, cuStreamSynchronize (softverbs)
 *   copy-pageable the same from malloc'd memory
 *   copy-spin     cuMemcpyHtoDAsync from pinned memory, cuStreamQuery until done
 *   value64       one cuStreamWriteValue64 per 8 bytes (up to 64 bytes), cuStreamSynchronize
 *                 (left out, with a line, where the driver lacks or refuses it)
 *   sync-empty    cuStreamSynchronize of an idle stream (the floor of the wait)
 *   vm-readv      process_vm_readv of the same bytes from this process (the peer's read)
 *
 * Usage: sv-gpu-write-lat [iterations]   (default 20000)
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long cuptr;

#define SV_CU_NOT_READY 600 /* CUDA_ERROR_NOT_READY: cuStreamQuery, work still queued */

static struct {
	int (*init)(unsigned int);
	int (*dev_get)(int *, int);
	int (*retain)(void **, int);
	int (*ctx_set)(void *);
	int (*stream_create)(void **, unsigned int);
	int (*sync)(void *);
	int (*query)(void *);
	int (*alloc)(cuptr *, size_t);
	int (*host_alloc)(void **, size_t, unsigned int);
	int (*h2d)(cuptr, const void *, size_t, void *);
	int (*wv64)(void *, cuptr, unsigned long long, unsigned int);
} cu;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, size_t len, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%-14s %8zu %9.2f %9.2f %9.2f\n", what, len, t[n / 2], t[n * 9 / 10], t[0]);
}

/* A call failed mid-run: no table row may hide it. */
static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "sv-gpu-write-lat: %s failed (CUDA error %d)\n", what, rc);
		exit(1);
	}
}

static void *need(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);

	if (!p && b)
		p = dlsym(lib, b);
	if (!p && !strncmp(a, "cuStreamWriteValue64", 20))
		return NULL; /* optional: its row is left out */
	if (!p) {
		fprintf(stderr, "sv-gpu-write-lat: the CUDA driver lacks %s\n", a);
		exit(77);
	}
	return p;
}

/* n copies of len bytes from src into dev, each waited for (spin: cuStreamQuery until done). */
static void time_copy(const char *what, cuptr dev, const void *src, size_t len, void *s, bool spin,
		      double *t, int n)
{
	for (int i = 0; i < n; i++) {
		double a = now_us();

		int rc;

		check(cu.h2d(dev, src, len, s), "cuMemcpyHtoDAsync");
		if (spin) {
			while ((rc = cu.query(s)) == SV_CU_NOT_READY)
				;
			check(rc, "cuStreamQuery");
		} else {
			check(cu.sync(s), "cuStreamSynchronize");
		}
		t[i] = now_us() - a;
	}
	report(what, len, t, n);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 8, 16, 64, 1024, 4096, 65536 };
	bool wv64_ok = true;
	char *end = NULL;
	long iters = argc > 1 ? strtol(argv[1], &end, 10) : 20000;
	int d;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW), *ctx, *s, *pinned, *pageable;
	double *t;
	cuptr dev;

	if (argc > 2 || (end && (end == argv[1] || *end)) || iters < 10 || iters > 10000000) {
		fprintf(stderr,
			"sv-gpu-write-lat: want one argument, iterations from 10 to 10000000; got "
			"\"%s\"%s\n",
			argv[1], argc > 2 ? " and more" : "");
		return 2;
	}
	if (!lib) {
		fprintf(stderr, "sv-gpu-write-lat: no CUDA driver (%s); nothing to measure\n",
			dlerror());
		return 77;
	}
	*(void **)&cu.init = need(lib, "cuInit", NULL);
	*(void **)&cu.dev_get = need(lib, "cuDeviceGet", NULL);
	*(void **)&cu.retain = need(lib, "cuDevicePrimaryCtxRetain", NULL);
	*(void **)&cu.ctx_set = need(lib, "cuCtxSetCurrent", NULL);
	*(void **)&cu.stream_create = need(lib, "cuStreamCreate", NULL);
	*(void **)&cu.sync = need(lib, "cuStreamSynchronize", NULL);
	*(void **)&cu.query = need(lib, "cuStreamQuery", NULL);
	*(void **)&cu.alloc = need(lib, "cuMemAlloc_v2", NULL);
	*(void **)&cu.host_alloc = need(lib, "cuMemHostAlloc", NULL);
	*(void **)&cu.h2d = need(lib, "cuMemcpyHtoDAsync_v2", NULL);
	*(void **)&cu.wv64 = need(lib, "cuStreamWriteValue64_v2", "cuStreamWriteValue64");
	if (cu.init(0) || cu.dev_get(&d, 0) || cu.retain(&ctx, d) || cu.ctx_set(ctx) ||
	    cu.stream_create(&s, 1) || cu.alloc(&dev, 1 << 20) ||
	    cu.host_alloc(&pinned, 1 << 20, 1)) {
		fprintf(stderr, "sv-gpu-write-lat: no usable GPU (CUDA init failed)\n");
		return 77;
	}
	/* stream memory operations may be unsupported (CUDA_ERROR_NOT_SUPPORTED): say so once and
	 * leave the value64 rows out rather than time a failing call */
	if (cu.wv64 && cu.wv64(s, dev, 0, 0)) {
		fprintf(stderr, "sv-gpu-write-lat: cuStreamWriteValue64 not supported here; no "
				"value64 rows\n");
		wv64_ok = false;
	}
	check(cu.sync(s), "cuStreamSynchronize");
	pageable = calloc(1, 1 << 20);
	t = calloc((size_t)iters, sizeof(*t));
	if (!pageable || !t)
		return 1;
	printf("%-14s %8s %9s %9s %9s\n", "method", "bytes", "p50 us", "p90 us", "min us");
	for (int i = 0; i < iters; i++) {
		double a = now_us();

		check(cu.sync(s), "cuStreamSynchronize");
		t[i] = now_us() - a;
	}
	report("sync-empty", 0, t, (int)iters);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		int n = (int)(len > 4096 ? iters / 10 : iters);

		time_copy("copy-pinned", dev, pinned, len, s, false, t, n);
		time_copy("copy-pageable", dev, pageable, len, s, false, t, n);
		time_copy("copy-spin", dev, pinned, len, s, true, t, n);
		if (len <= 64 && cu.wv64 && wv64_ok) {
			for (int i = 0; i < n; i++) {
				double a = now_us();

				for (size_t o = 0; o < len; o += 8)
					check(cu.wv64(s, dev + o,
						      ((unsigned long long *)pinned)[o / 8], 0),
					      "cuStreamWriteValue64");
				check(cu.sync(s), "cuStreamSynchronize");
				t[i] = now_us() - a;
			}
			report("value64", len, t, n);
		}
		for (int i = 0; i < n; i++) {
			struct iovec l = { (char *)pageable + (1 << 19), len }, r = { pinned, len };
			double a = now_us();

			if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)len)
				perror("process_vm_readv");
			t[i] = now_us() - a;
		}
		report("vm-readv", len, t, n);
	}
	return 0;
}
