// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-scale: what railnet costs per connection when a process holds thousands of them
 * (issue 21). One process loads the plugin through its v12 table, as NCCL does, merges the
 * devices it offers into one virtual device with makeVDevice (NCCL >= 2.24's path), and opens
 * connection pairs on it, both ends in this process: listen, connect and accept until both
 * comms exist, closeListen — NCCL's sequence per peer and channel. At each checkpoint it
 * prints the mean connect time per pair of the last batch, the file descriptors, RSS, the heap
 * that railnet's code and softverbs' code hold (heap.c charges each block to the object whose
 * code allocated it) and the QPs (softverbs' rendezvous entries). Then every pair carries one
 * message (checked byte for byte), the round trip of a small message on one pair is timed
 * with all pairs open, everything is closed, finalize runs, and what is left is printed.
 *
 * Usage: railnet-scale [--pairs 128,256,...] [--plugin SO] [--ping N] [--no-vdev]
 *                      [--check HEAP,FDS[,SVHEAP]] [--json FILE]
 *   The environment names the devices, as for the plugin (RAILNET_IBVERBS_LIB, SOFTVERBS_VIEW,
 *   RAILNET_SYSFS_ROOT, NCCL_SOCKET_IFNAME); bench/scale.sh sets up a loopback view.
 *   --check: exit 1 when, at the last checkpoint, railnet's heap per comm (HEAP bytes; its CTS
 *   region is mapped apart), the fds per comm (FDS) or softverbs' heap per comm (SVHEAP bytes) exceed the
 *   limits, when fds, railnet's heap or QPs are left after finalize, or on any WARN (the CI
 *   guard test/integration/scale_guard.sh). Exit 0 ok, 1 check failed or a call failed, 2 usage.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_net.h"
#include "railnet/proto.h"
#include "scale.h"

#define MAX_CKPT 16
#define WAIT_S 30 /* hang guard of every connect and message */

struct ckpt {
	int pairs;
	double conn_ms; /* mean per pair over the batch that ended here */
	int fds;
	int fds_unix; /* UNIX sockets: softverbs' links (one network namespace here); railnet's
		       * out-of-band sockets are TCP */
	long long rss;
	long long heap[SCALE_OWNERS];
	int qps;
	int threads;
};

static const ncclNet_v12_t *net;
static void *nctx;
static int warns;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level != NCCL_LOG_WARN)
		return;
	warns++;
	fprintf(stderr, "railnet-scale: WARN ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long long rss_bytes(void)
{
	long long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%lld %lld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

static char rdv_dir[PATH_MAX];

static int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* Open fds that are UNIX sockets (/proc/self/net/unix lists their inodes). */
static int count_unix_fds(void)
{
	unsigned long *ino = NULL, v;
	size_t n = 0, cap = 0;
	char line[512], path[64], target[64];
	struct dirent *e;
	int count = 0;
	FILE *f = fopen("/proc/self/net/unix", "re");
	DIR *d;

	while (f && fgets(line, sizeof(line), f)) {
		/* Num RefCount Protocol Flags Type St Inode Path */
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu", &v) != 1)
			continue;
		if (n == cap) {
			unsigned long *m =
				realloc(ino, (cap = cap ? cap * 2 : 1024) * sizeof(*ino));

			if (!m)
				break;
			ino = m;
		}
		ino[n++] = v;
	}
	if (f)
		fclose(f);
	qsort(ino, n, sizeof(*ino), cmp_ul);
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%.32s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%lu]", &v) == 1 && n &&
		    bsearch(&v, ino, n, sizeof(*ino), cmp_ul))
			count++;
	}
	if (d)
		closedir(d);
	free(ino);
	return count;
}

static void snap(struct ckpt *c, int pairs, double conn_ms)
{
	c->pairs = pairs;
	c->conn_ms = conn_ms;
	c->fds = count_dir("/proc/self/fd") - 1; /* the one opendir holds */
	c->fds_unix = count_unix_fds();
	c->rss = rss_bytes();
	for (int o = 0; o < SCALE_OWNERS; o++)
		c->heap[o] = scale_heap_live(o);
	c->qps = rdv_dir[0] ? count_dir(rdv_dir) : -1;
	c->threads = count_dir("/proc/self/task");
}

/* softverbs' rendezvous directory (docs/softverbs.md): SOFTVERBS_RDV, the view's rdv line, or
 * VIEW/softverbs/rdv; its qp/ entries are the QPs softverbs holds. */
static void find_rdv(void)
{
	const char *view = getenv("SOFTVERBS_VIEW"), *env = getenv("SOFTVERBS_RDV");
	char path[PATH_MAX], line[PATH_MAX + 8];
	FILE *f;

	if (env) {
		snprintf(rdv_dir, sizeof(rdv_dir), "%s/qp", env);
		return;
	}
	if (!view)
		return;
	snprintf(rdv_dir, sizeof(rdv_dir), "%s/softverbs/rdv/qp", view);
	snprintf(path, sizeof(path), "%s/softverbs/config", view);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "rdv ", 4) &&
		    snprintf(rdv_dir, sizeof(rdv_dir), "%s/qp", line + 4) >= (int)sizeof(rdv_dir))
			rdv_dir[0] = '\0'; /* too long to be a path: not counted */
	}
	if (f)
		fclose(f);
}

struct owner_find {
	const char *needle;
	uintptr_t lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct owner_find *f = arg;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, f->needle))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!f->lo || a < f->lo)
			f->lo = a;
		if (a + ph->p_memsz > f->hi)
			f->hi = a + ph->p_memsz;
	}
	return 1;
}

static void charge(int owner, const char *needle)
{
	struct owner_find f = { .needle = needle };

	dl_iterate_phdr(find_text, &f);
	if (f.hi)
		scale_heap_owner(owner, f.lo, f.hi);
}

static int parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > 65536 || n == max || (n && v <= out[n - 1]))
			return -1;
		out[n++] = (int)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

static int fail(const char *what, ncclResult_t r)
{
	fprintf(stderr, "railnet-scale: %s failed (ncclResult %d)\n", what, (int)r);
	return 1;
}

/* One pair on dev: listen, connect/accept until both exist, closeListen. */
static int open_pair(int dev, void **sc, void **rc)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	ncclNetDeviceHandle_v12_t *dh = NULL;
	void *lc = NULL;
	double t0 = now_s();
	ncclResult_t r;

	*sc = *rc = NULL;
	r = net->listen(nctx, dev, handle, &lc);
	if (r != ncclSuccess)
		return fail("listen", r);
	while (!*sc || !*rc) {
		if (!*sc && (r = net->connect(nctx, dev, handle, sc, &dh)) != ncclSuccess) {
			fail("connect", r);
			break;
		}
		if (!*rc && (r = net->accept(lc, rc, &dh)) != ncclSuccess) {
			fail("accept", r);
			break;
		}
		if (now_s() - t0 > WAIT_S) {
			fprintf(stderr, "railnet-scale: a pair did not connect in %d s\n", WAIT_S);
			r = ncclInternalError;
			break;
		}
	}
	/* a failed pair: what exists is closed by the caller (a connect still in its handshake
	 * has nothing to close: NCCL would call connect again) */
	if (net->closeListen(lc) != ncclSuccess && r == ncclSuccess)
		r = fail("closeListen", ncclInternalError);
	return r == ncclSuccess ? 0 : 1;
}

/* One message of len bytes from sc to rc, tested until both are done; 0 or 1. */
static int message(void *sc, void *rc, char *sbuf, void *smh, char *rbuf, void *rmh, size_t len)
{
	void *data = rbuf, *sreq = NULL, *rreq = NULL;
	size_t size = len;
	int tag = 7, sdone = 0, rdone = 0, got = -1;
	double t0 = now_s();

	while (!rreq)
		if (net->irecv(rc, 1, &data, &size, &tag, &rmh, NULL, &rreq) != ncclSuccess)
			return fail("irecv", ncclInternalError);
	while (!sreq)
		if (net->isend(sc, sbuf, len, tag, smh, NULL, &sreq) != ncclSuccess)
			return fail("isend", ncclInternalError);
	while (!sdone || !rdone) {
		if (!sdone && net->test(sreq, &sdone, NULL) != ncclSuccess)
			return fail("test (send)", ncclInternalError);
		if (!rdone && net->test(rreq, &rdone, &got) != ncclSuccess)
			return fail("test (receive)", ncclInternalError);
		if (now_s() - t0 > WAIT_S) {
			fprintf(stderr, "railnet-scale: a message did not complete in %d s\n",
				WAIT_S);
			return 1;
		}
	}
	return got == (int)len ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The CTS region each comm maps and registers (proto.h), page-rounded as conn.c maps it: the
 * mean of a send comm's and a receive comm's, since a pair holds one of each. */
static double region_per_comm(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t a = sizeof(struct rn_send_region), b = sizeof(struct rn_recv_region);

	if (page <= 0)
		page = 4096;
	a = (a + (size_t)page - 1) / (size_t)page * (size_t)page;
	b = (b + (size_t)page - 1) / (size_t)page * (size_t)page;
	return (double)(a + b) / 2;
}

/* KiB per comm of a delta; the whole delta in KiB when no comm is open; -1 when not counted. */
static double kib_per(long long now, long long then, int comms)
{
	if (now < 0)
		return -1;
	return (double)(now - then) / (comms ? comms : 1) / 1024.0;
}

static void print_row(FILE *o, const char *label, const struct ckpt *c, const struct ckpt *base)
{
	int comms = 2 * c->pairs;
	double rn = kib_per(c->heap[SCALE_RAILNET], base->heap[SCALE_RAILNET], comms);

	int rfds = (c->fds - c->fds_unix) - (base->fds - base->fds_unix);

	fprintf(o, "%-8s %6d %8.2f %7d %6.2f %6.2f %8.1f %9.1f %8.1f %9.1f %6d %4d\n", label,
		c->pairs, c->conn_ms, c->fds - base->fds, comms ? (double)rfds / comms : rfds,
		comms ? (double)(c->fds_unix - base->fds_unix) / comms
		      : c->fds_unix - base->fds_unix,
		(double)(c->rss - base->rss) / 1048576.0, kib_per(c->rss, base->rss, comms), rn,
		kib_per(c->heap[SCALE_SOFTVERBS], base->heap[SCALE_SOFTVERBS], comms),
		c->qps - base->qps, c->threads);
}

static void json_row(FILE *o, const char *label, const struct ckpt *c, const struct ckpt *base,
		     bool last)
{
	fprintf(o,
		"    {\"at\": \"%s\", \"pairs\": %d, \"connect_ms_per_pair\": %.3f, \"fds\": %d, "
		"\"softverbs_fds\": %d, "
		"\"rss_bytes\": %lld, \"railnet_heap_bytes\": %lld, \"softverbs_heap_bytes\": "
		"%lld, "
		"\"other_heap_bytes\": %lld, \"qps\": %d, \"threads\": %d, "
		"\"cts_region_bytes_per_comm\": %.0f}%s\n",
		label, c->pairs, c->conn_ms, c->fds - base->fds, c->fds_unix - base->fds_unix,
		c->rss - base->rss, c->heap[SCALE_RAILNET] - base->heap[SCALE_RAILNET],
		c->heap[SCALE_SOFTVERBS] - base->heap[SCALE_SOFTVERBS],
		c->heap[SCALE_OTHER] - base->heap[SCALE_OTHER], c->qps - base->qps, c->threads,
		region_per_comm(), last ? "" : ",");
}

static void usage(FILE *o)
{
	fprintf(o, "usage: railnet-scale [--pairs N1,N2,...] [--plugin SO] [--ping N] [--no-vdev]\n"
		   "                     [--check HEAP,FDS[,SVHEAP]] [--json FILE] [--version]\n");
}

int main(int argc, char **argv)
{
	int ckpts[MAX_CKPT] = { 128, 256, 512, 1024 }, nck = 4, ping = 200, dev = 0, ndev = 0;
	const char *plugin = getenv("RAILNET_PLUGIN"), *json = NULL;
	long long max_heap = -1, max_svheap = -1;
	double max_fds = -1;
	bool vdev = true;
	char path[PATH_MAX];
	struct ckpt base, at[MAX_CKPT], closed, fin;
	void **sc, **rc;
	int rcode = 0, npairs;
	ncclResult_t r;
	void *lib;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-vdev")) {
			vdev = false;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--version")) {
			printf("railnet-scale %s (git %s, built %s)\n", RN_VERSION_STRING,
			       RN_GIT_DESCRIBE, RN_BUILD_DATE);
			return 0;
		}
		if (!v) {
			fprintf(stderr, "railnet-scale: %s: unknown option or missing value\n", a);
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--pairs")) {
			nck = parse_list(v, ckpts, MAX_CKPT);
			if (nck < 1) {
				fprintf(stderr,
					"railnet-scale: --pairs %s: want up to %d increasing "
					"counts "
					"1..65536, comma-separated\n",
					v, MAX_CKPT);
				return 2;
			}
		} else if (!strcmp(a, "--plugin")) {
			plugin = v;
		} else if (!strcmp(a, "--json")) {
			json = v;
		} else if (!strcmp(a, "--ping")) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || end == v || n < 0 || n > 1000000) {
				fprintf(stderr, "railnet-scale: --ping %s: want 0..1000000\n", v);
				return 2;
			}
			ping = (int)n;
		} else if (!strcmp(a, "--check")) {
			char *end;

			max_heap = strtoll(v, &end, 10);
			if (end == v || *end != ',' || max_heap < 0) {
				fprintf(stderr,
					"railnet-scale: --check %s: want HEAP_PER_COMM,FDS_PER_COMM"
					"[,SOFTVERBS_HEAP_PER_COMM] (bytes, fds, bytes)\n",
					v);
				return 2;
			}
			max_fds = strtod(end + 1, &end);
			if (*end == ',') {
				char *sv = end + 1;

				max_svheap = strtoll(sv, &end, 10);
				if (end == sv || max_svheap < 0)
					*end = 'x'; /* reported below */
			}
			if (*end || max_fds < 0) {
				fprintf(stderr,
					"railnet-scale: --check %s: want HEAP_PER_COMM,FDS_PER_COMM"
					"[,SOFTVERBS_HEAP_PER_COMM] (numbers >= 0)\n",
					v);
				return 2;
			}
		} else {
			fprintf(stderr, "railnet-scale: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!plugin) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 40);

		if (n <= 0) {
			fprintf(stderr,
				"railnet-scale: no --plugin and /proc/self/exe unreadable\n");
			return 2;
		}
		path[n] = '\0';
		*strrchr(path, '/') = '\0';
		strcat(path, "/../libnccl-net-railnet.so");
		plugin = path;
	}
	find_rdv();

	snap(&base, 0, 0);
	/* softverbs first, so its allocations during the plugin's init are charged to it */
	if (getenv("RAILNET_IBVERBS_LIB") && dlopen(getenv("RAILNET_IBVERBS_LIB"), RTLD_NOW))
		charge(SCALE_SOFTVERBS, "libibverbs");
	lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "railnet-scale: dlopen %s: %s\n", plugin, dlerror());
		return 1;
	}
	charge(SCALE_RAILNET, "libnccl-net-railnet");
	net = dlsym(lib, "ncclNetPlugin_v12");
	if (!net) {
		fprintf(stderr, "railnet-scale: %s has no ncclNetPlugin_v12\n", plugin);
		return 1;
	}
	{
		ncclNetCommConfig_v12_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };

		r = net->init(&nctx, 1, &cfg, logger, NULL);
		if (r != ncclSuccess)
			return fail("init", r);
	}
	if ((r = net->devices(&ndev)) != ncclSuccess)
		return fail("devices", r);
	if (ndev < 1) {
		fprintf(stderr, "railnet-scale: the plugin offers no device\n");
		return 1;
	}
	if (vdev && ndev > 1 && net->makeVDevice) {
		ncclNetVDeviceProps_v12_t vp = { .ndevs = ndev < NCCL_NET_MAX_DEVS_PER_NIC_V12
								  ? ndev
								  : NCCL_NET_MAX_DEVS_PER_NIC_V12 };

		for (int i = 0; i < vp.ndevs; i++)
			vp.devs[i] = i;
		if ((r = net->makeVDevice(&dev, &vp)) != ncclSuccess)
			return fail("makeVDevice", r);
	}
	{
		ncclNetProperties_v12_t p;

		if ((r = net->getProperties(dev, &p)) != ncclSuccess)
			return fail("getProperties", r);
		printf("# railnet-scale: device %d %s (%d Mb/s), %d pairs at most, pid %d\n", dev,
		       p.name, p.speed, ckpts[nck - 1], (int)getpid());
	}
	npairs = ckpts[nck - 1];
	sc = calloc((size_t)npairs, sizeof(*sc));
	rc = calloc((size_t)npairs, sizeof(*rc));
	if (!sc || !rc)
		return 1;

	printf("# a pair is a send comm and a receive comm; deltas from before init; /c: per comm, "
	       "KiB (closed, finalize: totals)\n# railnet, softverbs: heap their code holds; "
	       "besides it each comm maps and registers its %.0f KiB CTS region\n",
	       region_per_comm() / 1024.0);
	printf("# fds: railnet's (TCP: one out-of-band socket per comm) and softverbs' (UNIX: two "
	       "per QP linked to another process; none within one device context)\n");
	printf("%-8s %6s %8s %7s %6s %6s %8s %9s %8s %9s %6s %4s\n", "at", "pairs", "ms/pair",
	       "fds", "rn/c", "sv/c", "RSS MiB", "RSS/c", "railnet", "softverbs", "QPs", "thr");
	{
		int done = 0;

		for (int k = 0; k < nck; k++) {
			double t0 = now_s();
			char label[32];

			for (; done < ckpts[k]; done++)
				if (open_pair(dev, &sc[done], &rc[done])) {
					rcode = 1;
					goto close;
				}
			snap(&at[k], done,
			     (now_s() - t0) * 1e3 / (ckpts[k] - (k ? ckpts[k - 1] : 0)));
			snprintf(label, sizeof(label), "open");
			print_row(stdout, label, &at[k], &base);
			fflush(stdout);
		}
	}

	/* every pair carries one message; then a round trip on pair 0 with all pairs open */
	{
		static char sbuf[4096], rbuf[4096];
		void *smh = NULL, *rmh = NULL;
		double *rt = ping ? calloc((size_t)ping, sizeof(double)) : NULL;

		for (int i = 0; i < npairs && !rcode; i++) {
			size_t len = 8 + (size_t)(i % 64) * 61;

			for (size_t b = 0; b < len; b++)
				sbuf[b] = (char)(i * 31 + (int)b);
			memset(rbuf, 0, len);
			if (net->regMr(sc[i], sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh) ||
			    net->regMr(rc[i], rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh)) {
				rcode = fail("regMr", ncclInternalError);
				break;
			}
			if (message(sc[i], rc[i], sbuf, smh, rbuf, rmh, len) ||
			    memcmp(sbuf, rbuf, len)) {
				fprintf(stderr, "railnet-scale: pair %d: message wrong or failed\n",
					i);
				rcode = 1;
			}
			net->deregMr(sc[i], smh);
			net->deregMr(rc[i], rmh);
		}
		if (!rcode)
			printf("# one message on each of the %d pairs: all verified\n", npairs);
		if (!rcode && rt && !net->regMr(sc[0], sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh) &&
		    !net->regMr(rc[0], rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh)) {
			for (int i = 0; i < ping && !rcode; i++) {
				double t0 = now_s();

				rcode = message(sc[0], rc[0], sbuf, smh, rbuf, rmh, 8);
				rt[i] = (now_s() - t0) * 1e6;
			}
			qsort(rt, (size_t)ping, sizeof(double), cmp_double);
			if (!rcode)
				printf("# 8 B message on pair 0 with %d pairs open: median %.1f "
				       "us, "
				       "min %.1f, max %.1f (%d messages)\n",
				       npairs, rt[ping / 2], rt[0], rt[ping - 1], ping);
			net->deregMr(sc[0], smh);
			net->deregMr(rc[0], rmh);
		}
		free(rt);
	}

close:
	for (int i = 0; i < npairs; i++) {
		if (sc[i] && net->closeSend(sc[i]) != ncclSuccess)
			rcode = fail("closeSend", ncclInternalError);
		if (rc[i] && net->closeRecv(rc[i]) != ncclSuccess)
			rcode = fail("closeRecv", ncclInternalError);
	}
	snap(&closed, 0, 0);
	print_row(stdout, "closed", &closed, &base);
	if ((r = net->finalize(nctx)) != ncclSuccess)
		rcode = fail("finalize", r);
	snap(&fin, 0, 0);
	print_row(stdout, "finalize", &fin, &base);
	free(sc);
	free(rc);

	if (json) {
		FILE *o = fopen(json, "w");

		if (!o) {
			fprintf(stderr, "railnet-scale: %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(o, "{\n  \"rows\": [\n");
		for (int k = 0; k < nck; k++)
			json_row(o, "open", &at[k], &base, false);
		json_row(o, "closed", &closed, &base, false);
		json_row(o, "finalize", &fin, &base, true);
		fprintf(o, "  ]\n}\n");
		fclose(o);
	}
	if (max_heap >= 0) {
		const struct ckpt *l = &at[nck - 1];
		int comms = 2 * l->pairs;
		long long heap = l->heap[SCALE_RAILNET] - base.heap[SCALE_RAILNET];
		long long svheap = l->heap[SCALE_SOFTVERBS] - base.heap[SCALE_SOFTVERBS];
		double fds = (double)((l->fds - l->fds_unix) - (base.fds - base.fds_unix)) / comms;
		long long left = fin.heap[SCALE_RAILNET] - base.heap[SCALE_RAILNET];

		if (l->heap[SCALE_RAILNET] < 0) {
			printf("# check: heap not counted in this build (sanitizer): heap limits "
			       "not applied\n");
		} else {
			if (heap / comms > max_heap) {
				printf("# check FAILED: railnet heap %lld B per comm > %lld\n",
				       heap / comms, max_heap);
				rcode = 1;
			}
			if (max_svheap >= 0 && svheap / comms > max_svheap) {
				printf("# check FAILED: softverbs heap %lld B per comm > %lld\n",
				       svheap / comms, max_svheap);
				rcode = 1;
			}
			if (left > 0) {
				printf("# check FAILED: railnet heap left after finalize: %lld B\n",
				       left);
				rcode = 1;
			}
		}
		if (fds > max_fds) {
			printf("# check FAILED: %.2f railnet fds per comm > %.2f\n", fds, max_fds);
			rcode = 1;
		}
		if (fin.fds != base.fds) {
			printf("# check FAILED: %d fds left after finalize\n", fin.fds - base.fds);
			rcode = 1;
		}
		if (fin.qps > 0) {
			printf("# check FAILED: %d QPs left after finalize\n", fin.qps);
			rcode = 1;
		}
		if (warns) {
			printf("# check FAILED: %d WARN lines\n", warns);
			rcode = 1;
		}
		if (!rcode)
			printf("# check passed: railnet heap %lld B/comm "
			       "(limit %lld), softverbs %lld B/comm (limit %lld), %.2f railnet "
			       "fds/comm "
			       "(limit %.2f), nothing left after finalize\n",
			       l->heap[SCALE_RAILNET] < 0 ? -1 : heap / comms, max_heap,
			       l->heap[SCALE_SOFTVERBS] < 0 ? -1 : svheap / comms, max_svheap, fds,
			       max_fds);
	}
	return rcode;
}
