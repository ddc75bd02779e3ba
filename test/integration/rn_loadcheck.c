// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-loadcheck: load a net plugin the way NCCL 2.30 does and say what happened.
 * dlopen(name, RTLD_NOW | RTLD_LOCAL) with NCCL_NET_PLUGIN's name rules (the name as given,
 * then libnccl-net-<name>.so), take the newest of ncclNetPlugin_v12 … _v6, then init,
 * devices, getProperties of every device (checking the device type as NCCL does) and
 * finalize. It links only libdl and includes only nccl_headers/, so it sees exactly what
 * NCCL sees. `make run` runs it for now; ctest runs it per API version.
 * Exit status: 0 the plugin loaded and kept the API contract (an init that fails cleanly is
 * NCCL's fallback path, not an error), 1 it could not be loaded or broke the contract, or an
 * --expect-* check failed, 2 fewer devices than --min-devices.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nccl_net.h"

#define LC_DEFAULT_PLUGIN "libnccl-net-railnet.so"

/* Newest first, as NCCL 2.30's loader searches. */
static const int lc_versions[] = { 12, 11, 10, 9, 8, 7, 6 };

/* What every version's props hold, for printing and NCCL's device-type check. */
struct lc_props {
	const char *name;
	const char *pci_path;
	uint64_t guid;
	int ptr_support, speed, port, max_comms, max_recvs;
	float latency;
	int has_device; /* v7+ */
	int net_device_type, net_device_version;
	int has_v9; /* v9+ */
	int ndevs;
	size_t max_p2p_bytes, max_coll_bytes;
};

static int lc_level = NCCL_LOG_WARN;

static void lc_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* NCCL's logger, the way NCCL prints: host:pid:tid [dev] NCCL LEVEL message. */
static void lc_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...)
{
	static const char *const names[] = { "NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE" };
	char host[64] = "?", msg[1024];
	va_list ap;

	if ((int)level > lc_level || level == NCCL_LOG_NONE)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gethostname(host, sizeof(host) - 1);
	printf("    %s:%d:%ld [0] NCCL %s %s\n", host, (int)getpid(), (long)syscall(SYS_gettid),
	       (unsigned int)level < 6 ? names[level] : "?", msg);
}

static void lc_set_level(void)
{
	const char *v = getenv("NCCL_DEBUG");

	if (!v)
		return;
	if (!strcasecmp(v, "INFO"))
		lc_level = NCCL_LOG_INFO;
	else if (!strcasecmp(v, "TRACE"))
		lc_level = NCCL_LOG_TRACE;
	else if (!strcasecmp(v, "VERSION"))
		lc_level = NCCL_LOG_VERSION;
	else if (!strcasecmp(v, "NONE"))
		lc_level = NCCL_LOG_NONE;
}

static const char *lc_result(ncclResult_t r)
{
	static const char *const names[] = {
		"ncclSuccess",	     "ncclUnhandledCudaError", "ncclSystemError",
		"ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
		"ncclRemoteError",   "ncclInProgress",	       "ncclTimeout",
	};

	return (unsigned int)r < sizeof(names) / sizeof(names[0]) ? names[r] : "(unknown)";
}

/*
 * NCCL_NET_PLUGIN rules: the name as given; if that fails and it has no '/' and is not
 * already lib*.so, libnccl-net-<name>.so.
 */
static void *lc_open(const char *name, char *tried, size_t len)
{
	size_t n = strlen(name);
	char alt[512];
	void *lib;

	snprintf(tried, len, "%s", name);
	lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib)
		return lib;
	printf("  dlopen    %s: %s\n", name, dlerror());
	if (strchr(name, '/') ||
	    (!strncmp(name, "lib", 3) && n > 3 && !strcmp(name + n - 3, ".so")))
		return NULL;
	snprintf(alt, sizeof(alt), "libnccl-net-%s.so", name);
	snprintf(tried, len, "%s", alt);
	lib = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		printf("  dlopen    %s: %s\n", alt, dlerror());
	return lib;
}

#define LC_BASE(out, in)                               \
	do {                                           \
		(out)->name = (in)->name;              \
		(out)->pci_path = (in)->pciPath;       \
		(out)->guid = (in)->guid;              \
		(out)->ptr_support = (in)->ptrSupport; \
		(out)->speed = (in)->speed;            \
		(out)->port = (in)->port;              \
		(out)->latency = (in)->latency;        \
		(out)->max_comms = (in)->maxComms;     \
		(out)->max_recvs = (in)->maxRecvs;     \
	} while (0)
#define LC_DEVICE(out, in)                                          \
	do {                                                        \
		(out)->has_device = 1;                              \
		(out)->net_device_type = (in)->netDeviceType;       \
		(out)->net_device_version = (in)->netDeviceVersion; \
	} while (0)
#define LC_V9(out, in)                                      \
	do {                                                \
		(out)->has_v9 = 1;                          \
		(out)->ndevs = (in)->vProps.ndevs;          \
		(out)->max_p2p_bytes = (in)->maxP2pBytes;   \
		(out)->max_coll_bytes = (in)->maxCollBytes; \
	} while (0)

/* One loaded table and its version; calls dispatch on the version. */
struct lc_plugin {
	int v;
	const void *table;
	void *ctx;
};

#define LC_NET(p, N) ((const ncclNet_v##N##_t *)(p)->table)

static ncclResult_t lc_init(struct lc_plugin *p)
{
	ncclNetCommConfig_v12_t c12 = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	ncclNetCommConfig_v11_t c11 = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	const uint64_t comm_id = 0x7261696c6e6574ULL; /* any comm hash will do */

	switch (p->v) {
	case 12:
		return LC_NET(p, 12)->init(&p->ctx, comm_id, &c12, lc_logger, NULL);
	case 11:
		return LC_NET(p, 11)->init(&p->ctx, comm_id, &c11, lc_logger, NULL);
	case 10:
		return LC_NET(p, 10)->init(lc_logger, NULL);
	case 9:
		return LC_NET(p, 9)->init(lc_logger);
	case 8:
		return LC_NET(p, 8)->init(lc_logger);
	case 7:
		return LC_NET(p, 7)->init(lc_logger);
	default:
		return LC_NET(p, 6)->init(lc_logger);
	}
}

static ncclResult_t lc_devices(struct lc_plugin *p, int *n)
{
	/* devices has the same signature and offset in every version. */
	switch (p->v) {
	case 12:
		return LC_NET(p, 12)->devices(n);
	case 11:
		return LC_NET(p, 11)->devices(n);
	case 10:
		return LC_NET(p, 10)->devices(n);
	case 9:
		return LC_NET(p, 9)->devices(n);
	case 8:
		return LC_NET(p, 8)->devices(n);
	case 7:
		return LC_NET(p, 7)->devices(n);
	default:
		return LC_NET(p, 6)->devices(n);
	}
}

static ncclResult_t lc_get_props(struct lc_plugin *p, int dev, struct lc_props *out)
{
	ncclResult_t r;

	memset(out, 0, sizeof(*out));
	switch (p->v) {
	case 12: {
		ncclNetProperties_v12_t in;

		r = LC_NET(p, 12)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
			LC_V9(out, &in);
		}
		return r;
	}
	case 11: {
		ncclNetProperties_v11_t in;

		r = LC_NET(p, 11)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
			LC_V9(out, &in);
		}
		return r;
	}
	case 10: {
		ncclNetProperties_v10_t in;

		r = LC_NET(p, 10)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
			LC_V9(out, &in);
		}
		return r;
	}
	case 9: {
		ncclNetProperties_v9_t in;

		r = LC_NET(p, 9)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
			LC_V9(out, &in);
		}
		return r;
	}
	case 8: {
		ncclNetProperties_v8_t in;

		r = LC_NET(p, 8)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
		}
		return r;
	}
	case 7: {
		ncclNetProperties_v7_t in;

		r = LC_NET(p, 7)->getProperties(dev, &in);
		if (r == ncclSuccess) {
			LC_BASE(out, &in);
			LC_DEVICE(out, &in);
		}
		return r;
	}
	default: {
		ncclNetProperties_v6_t in;

		r = LC_NET(p, 6)->getProperties(dev, &in);
		if (r == ncclSuccess)
			LC_BASE(out, &in);
		return r;
	}
	}
}

/* v11+ pair every init with finalize; older versions have none. */
static ncclResult_t lc_finalize(struct lc_plugin *p)
{
	if (p->v == 12)
		return LC_NET(p, 12)->finalize(p->ctx);
	if (p->v == 11)
		return LC_NET(p, 11)->finalize(p->ctx);
	return ncclSuccess;
}

static void lc_print_ptr_support(int s)
{
	printf("%s%s%s%s", s & NCCL_PTR_HOST ? "HOST" : "", s & NCCL_PTR_CUDA ? "|CUDA" : "",
	       s & NCCL_PTR_DMABUF ? "|DMABUF" : "", s ? "" : "none");
}

static void lc_print_props(int dev, const struct lc_props *p)
{
	printf("  dev %-5d name=%s speed=%d Mb/s port=%d pciPath=%s guid=0x%" PRIx64 " ptrSupport=",
	       dev, p->name ? p->name : "(null)", p->speed, p->port,
	       p->pci_path ? p->pci_path : "(none)", p->guid);
	lc_print_ptr_support(p->ptr_support);
	printf(" latency=%.1f us maxComms=%d maxRecvs=%d", p->latency, p->max_comms, p->max_recvs);
	if (p->has_device)
		printf(" netDevice=%s/%d",
		       p->net_device_type == NCCL_NET_DEVICE_HOST     ? "HOST"
		       : p->net_device_type == NCCL_NET_DEVICE_UNPACK ? "UNPACK"
								      : "other",
		       p->net_device_version);
	if (p->has_v9)
		printf(" vdevChildren=%d maxP2pBytes=%zu maxCollBytes=%zu", p->ndevs,
		       p->max_p2p_bytes, p->max_coll_bytes);
	printf("\n");
}

/* NCCL's ncclNetCheckDeviceVersion: HOST passes, UNPACK needs version 0x7. */
static int lc_device_type_ok(const struct lc_props *p)
{
	if (!p->has_device || p->net_device_type == NCCL_NET_DEVICE_HOST)
		return 1;
	return p->net_device_type == NCCL_NET_DEVICE_UNPACK &&
	       p->net_device_version == NCCL_NET_DEVICE_UNPACK_VERSION;
}

static void lc_usage(FILE *f)
{
	fprintf(f,
		"usage: railnet-loadcheck [-p PLUGIN] [-V N] [--expect-api N] [--expect-init "
		"ok|fail]\n"
		"                         [--min-devices N] [--version]\n"
		"  -p, --plugin PLUGIN   what NCCL_NET_PLUGIN would name (default %s;\n"
		"                        a bare name also tries libnccl-net-PLUGIN.so)\n"
		"  -V, --api N           use ncclNetPlugin_vN only (default: newest of v12..v6)\n"
		"  --expect-api N        fail unless the version taken is vN\n"
		"  --expect-init ok|fail fail unless init succeeds / fails cleanly\n"
		"  --min-devices N       exit 2 when fewer than N devices are reported\n"
		"NCCL_DEBUG=INFO shows the plugin's INFO lines (default: WARN only).\n",
		LC_DEFAULT_PLUGIN);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "api", required_argument, NULL, 'V' },
		{ "expect-api", required_argument, NULL, 'A' },
		{ "expect-init", required_argument, NULL, 'I' },
		{ "min-devices", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 1000 },
		{ NULL, 0, NULL, 0 },
	};
	const char *plugin = LC_DEFAULT_PLUGIN, *expect_init = NULL;
	int only = 0, expect_api = 0, min_devices = 0, ndev = -1, status = 0, c;
	struct lc_plugin p = { 0 };
	struct link_map *lm = NULL;
	char tried[512], sym[32];
	const char *pname;
	ncclResult_t r;
	void *lib;

	while ((c = getopt_long(argc, argv, "p:V:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			plugin = optarg;
			break;
		case 'V':
			only = atoi(optarg);
			if (only < RN_NCCL_NET_OLDEST || only > RN_NCCL_NET_NEWEST) {
				fprintf(stderr, "railnet-loadcheck: -V %s: versions are %d..%d\n",
					optarg, RN_NCCL_NET_OLDEST, RN_NCCL_NET_NEWEST);
				return 1;
			}
			break;
		case 'A':
			expect_api = atoi(optarg);
			break;
		case 'I':
			expect_init = optarg;
			if (strcmp(optarg, "ok") && strcmp(optarg, "fail")) {
				lc_usage(stderr);
				return 1;
			}
			break;
		case 'm':
			min_devices = atoi(optarg);
			break;
		case 'h':
			lc_usage(stdout);
			return 0;
		case 1000:
			printf("railnet-loadcheck %s (git %s, built %s)\n", RN_VERSION_STRING,
			       RN_GIT_DESCRIBE, RN_BUILD_DATE);
			return 0;
		default:
			lc_usage(stderr);
			return 1;
		}
	}
	lc_set_level();
	setvbuf(stdout, NULL, _IOLBF, 0);

	printf("railnet-loadcheck: loading a net plugin the way NCCL 2.30 does\n");
	lib = lc_open(plugin, tried, sizeof(tried));
	if (!lib) {
		printf("result: FAIL, %s cannot be loaded; NCCL would log \"Could not find\" and "
		       "use its own transports\n",
		       plugin);
		return 1;
	}
	dlinfo(lib, RTLD_DI_LINKMAP, &lm);
	printf("  library   %s -> %s\n", tried, lm && lm->l_name ? lm->l_name : "?");

	for (size_t i = 0; i < sizeof(lc_versions) / sizeof(lc_versions[0]); i++) {
		if (only && lc_versions[i] != only)
			continue;
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", lc_versions[i]);
		p.table = dlsym(lib, sym);
		if (p.table) {
			p.v = lc_versions[i];
			break;
		}
	}
	if (!p.table) {
		if (only)
			printf("result: FAIL, no ncclNetPlugin_v%d symbol\n", only);
		else
			printf("result: FAIL, no ncclNetPlugin_v12..v6 symbol; NCCL would call the "
			       "plugin unsupported\n");
		dlclose(lib);
		return 1;
	}
	/* name is the first member of every version. */
	pname = ((const ncclNet_v6_t *)p.table)->name;
	printf("  symbol    %s (%s)\n", sym, only ? "as asked" : "the newest of v12..v6 found");
	printf("  name      %s (what NCCL_NET is compared with, case-insensitively)\n",
	       pname ? pname : "(null)");
	if (expect_api && p.v != expect_api) {
		printf("  expected  ncclNetPlugin_v%d\n", expect_api);
		status = 1;
	}

	r = lc_init(&p);
	printf("  init      %s (%d)\n", lc_result(r), (int)r);
	if (r != ncclSuccess) {
		printf("result: %s API v%d loads; init failed cleanly, so NCCL would disable it "
		       "and try the next plugin (IB, then Socket)\n",
		       pname, p.v);
		if (expect_init && !strcmp(expect_init, "ok"))
			status = 1;
		if (min_devices > 0 && !status)
			status = 2;
		goto out_close;
	}
	if (expect_init && !strcmp(expect_init, "fail"))
		status = 1;

	r = lc_devices(&p, &ndev);
	printf("  devices   %d (%s)\n", ndev, lc_result(r));
	if (r != ncclSuccess || ndev < 0) {
		printf("result: FAIL, devices() broke the contract after a successful init\n");
		status = 1;
		goto out_finalize;
	}
	for (int d = 0; d < ndev; d++) {
		struct lc_props props;

		r = lc_get_props(&p, d, &props);
		if (r != ncclSuccess) {
			printf("  dev %-5d getProperties: %s\n", d, lc_result(r));
			status = 1;
			continue;
		}
		lc_print_props(d, &props);
		if (!props.name) {
			printf("  dev %-5d has no name: NCCL keys its topology by name\n", d);
			status = 1;
		}
		if (d == 0 && !lc_device_type_ok(&props)) {
			printf("  dev 0     device type NCCL does not accept\n");
			status = 1;
		}
	}

out_finalize:
	r = lc_finalize(&p);
	printf("  finalize  %s%s\n", lc_result(r), p.v >= 11 ? "" : " (no finalize before v11)");
	if (r != ncclSuccess)
		status = 1;
	if (!status) {
		if (ndev > 0)
			printf("result: %s API v%d loads with %d device(s); NCCL would use it\n",
			       pname, p.v, ndev);
		else
			printf("result: %s API v%d loads and initialises but reports no device; "
			       "NCCL would disable it and fall back to IB/Socket\n",
			       pname, p.v);
		if (ndev < min_devices)
			status = 2;
	} else {
		printf("result: FAIL (see above)\n");
	}
out_close:
	dlclose(lib);
	return status;
}
