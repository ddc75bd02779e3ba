/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The net plugin seen from railnet-bench --net, loaded as NCCL 2.30 loads it (reference
 * nccl-net-api.md §2): dlopen with NCCL_NET_PLUGIN's name rules, the newest of
 * ncclNetPlugin_v12 … _v6 (or the one --net-api asks for), init with a logger, and every
 * later call dispatched on the version found, with each version's argument types (int sizes
 * before v8/v9, ctx from v11, the connect config of v10, profiler handles from v10). Includes
 * only nccl_headers/; never links railnet. Prints nothing but the plugin's log lines.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nccl_net.h"
#include "rb_net.h"

_Static_assert(RB_NET_HANDLE_BYTES == NCCL_NET_HANDLE_MAXSIZE, "handle size");
_Static_assert(RB_NET_PTR_HOST == NCCL_PTR_HOST, "NCCL_PTR_HOST");
_Static_assert(RB_NET_MAX_CHILDREN == NCCL_NET_MAX_DEVS_PER_NIC_V12, "vdev children");

#define RB_NET(n, N) ((const ncclNet_v##N##_t *)(n)->table)

/* A call whose arguments are the same in every version. */
#define RB_NET_ALL(n, call)                 \
	switch ((n)->api) {                 \
	case 12:                            \
		return RB_NET(n, 12)->call; \
	case 11:                            \
		return RB_NET(n, 11)->call; \
	case 10:                            \
		return RB_NET(n, 10)->call; \
	case 9:                             \
		return RB_NET(n, 9)->call;  \
	case 8:                             \
		return RB_NET(n, 8)->call;  \
	case 7:                             \
		return RB_NET(n, 7)->call;  \
	default:                            \
		return RB_NET(n, 6)->call;  \
	}

static int rb_net_level = NCCL_LOG_WARN;

static void rb_net_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* NCCL's log line: host:pid:tid [rank] NCCL LEVEL message, on stderr. */
static void rb_net_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			  const char *fmt, ...)
{
	static const char *const names[] = { "NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE" };
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	char host[64] = "?", msg[2048];
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level == NCCL_LOG_NONE || (int)level > rb_net_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = 0;
	fprintf(stderr, "%s:%d:%ld [%s] NCCL %s %s\n", host, (int)getpid(),
		(long)syscall(SYS_gettid), rank ? rank : "0",
		(unsigned int)level < 6 ? names[level] : "?", msg);
}

const char *rb_net_result(int r)
{
	static const char *const names[] = {
		"ncclSuccess",	     "ncclUnhandledCudaError", "ncclSystemError",
		"ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
		"ncclRemoteError",   "ncclInProgress",	       "ncclTimeout",
	};

	return (unsigned int)r < sizeof(names) / sizeof(names[0]) ? names[r] : "(unknown result)";
}

static void rb_net_errf(char *err, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void rb_net_errf(char *err, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(err + *used, len - *used, fmt, ap);
	va_end(ap);
	if (k > 0)
		*used += (size_t)k;
}

int rb_net_join_netns(const char *ns, char *err, size_t errlen)
{
	char path[512];
	int fd, e;

	if (strchr(ns, '/'))
		snprintf(path, sizeof(path), "%s", ns);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "--netns %s: cannot open %s: %s", ns, path, strerror(errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		e = errno;
		close(fd);
		snprintf(err, errlen, "--netns %s: setns: %s%s", ns, strerror(e),
			 e == EPERM ? " (needs CAP_SYS_ADMIN: run as root)" : "");
		return -1;
	}
	close(fd);
	return 0;
}

int rb_net_open(struct rb_net *n, const char *name, int api, char *err, size_t errlen)
{
	size_t len = strlen(name), used = 0;
	char alt[512], sym[32];

	memset(n, 0, sizeof(*n));
	err[0] = 0;
	snprintf(n->path, sizeof(n->path), "%s", name);
	n->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		rb_net_errf(err, errlen, &used, "dlopen(%s): %s", name, dlerror());
		if (strchr(name, '/') ||
		    (!strncmp(name, "lib", 3) && len > 3 && !strcmp(name + len - 3, ".so")))
			return -1;
		snprintf(alt, sizeof(alt), "libnccl-net-%s.so", name);
		snprintf(n->path, sizeof(n->path), "%s", alt);
		n->lib = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
		if (!n->lib) {
			rb_net_errf(err, errlen, &used, "; dlopen(%s): %s", alt, dlerror());
			return -1;
		}
	}
	for (int v = RB_NET_API_NEWEST; v >= RB_NET_API_OLDEST; v--) {
		if (api && v != api)
			continue;
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		n->table = dlsym(n->lib, sym);
		if (n->table) {
			n->api = v;
			n->name = *(const char *const *)n->table; /* `name` is member 0 */
			return 0;
		}
	}
	if (api)
		snprintf(err, errlen, "%s has no ncclNetPlugin_v%d (--net-api %d)", n->path, api,
			 api);
	else
		snprintf(err, errlen,
			 "%s is not an NCCL net plugin NCCL can use: none of ncclNetPlugin_v12 "
			 ".. _v6 is exported",
			 n->path);
	dlclose(n->lib);
	n->lib = NULL;
	return -1;
}

int rb_net_init(struct rb_net *n, int debug_level)
{
	ncclNetCommConfig_v12_t c12 = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	ncclNetCommConfig_v11_t c11 = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	const uint64_t comm_id = 0x726e2d62656e6368ULL; /* the communicator hash: any value */
	int rc;

	rb_net_level = debug_level;
	switch (n->api) {
	case 12:
		rc = RB_NET(n, 12)->init(&n->ctx, comm_id, &c12, rb_net_logger, NULL);
		break;
	case 11:
		rc = RB_NET(n, 11)->init(&n->ctx, comm_id, &c11, rb_net_logger, NULL);
		break;
	case 10:
		rc = RB_NET(n, 10)->init(rb_net_logger, NULL);
		break;
	case 9:
		rc = RB_NET(n, 9)->init(rb_net_logger);
		break;
	case 8:
		rc = RB_NET(n, 8)->init(rb_net_logger);
		break;
	case 7:
		rc = RB_NET(n, 7)->init(rb_net_logger);
		break;
	default:
		rc = RB_NET(n, 6)->init(rb_net_logger);
		break;
	}
	n->inited = rc == 0;
	return rc;
}

int rb_net_devices(struct rb_net *n, int *ndev)
{
	RB_NET_ALL(n, devices(ndev));
}

#define RB_NET_BASE(out, in)                                             \
	do {                                                             \
		snprintf((out)->name, sizeof((out)->name), "%s",         \
			 (in)->name ? (in)->name : "(null)");            \
		snprintf((out)->pci_path, sizeof((out)->pci_path), "%s", \
			 (in)->pciPath ? (in)->pciPath : "");            \
		(out)->guid = (in)->guid;                                \
		(out)->ptr_support = (in)->ptrSupport;                   \
		(out)->speed = (in)->speed;                              \
		(out)->port = (in)->port;                                \
		(out)->latency = (in)->latency;                          \
		(out)->max_comms = (in)->maxComms;                       \
		(out)->max_recvs = (in)->maxRecvs;                       \
		(out)->ndevs = 1;                                        \
		(out)->devs[0] = dev;                                    \
	} while (0)
#define RB_NET_V9(out, in)                                                                  \
	do {                                                                                \
		(out)->ndevs = (in)->vProps.ndevs;                                          \
		for (int i_ = 0; i_ < (in)->vProps.ndevs && i_ < RB_NET_MAX_CHILDREN; i_++) \
			(out)->devs[i_] = (in)->vProps.devs[i_];                            \
		(out)->max_p2p_bytes = (in)->maxP2pBytes;                                   \
	} while (0)
#define RB_NET_PROPS(N, v9)                                 \
	do {                                                \
		ncclNetProperties_v##N##_t q_;              \
		memset(&q_, 0, sizeof(q_));                 \
		rc = RB_NET(n, N)->getProperties(dev, &q_); \
		if (!rc) {                                  \
			RB_NET_BASE(p, &q_);                \
			if (v9)                             \
				RB_NET_V9X(N, p, &q_);      \
		}                                           \
	} while (0)

/* vProps exists from v9; older tables get ndevs 1. */
#define RB_NET_V9X(N, out, in) RB_NET_V9_##N(out, in)
#define RB_NET_V9_12(out, in) RB_NET_V9(out, in)
#define RB_NET_V9_11(out, in) RB_NET_V9(out, in)
#define RB_NET_V9_10(out, in) RB_NET_V9(out, in)
#define RB_NET_V9_9(out, in) RB_NET_V9(out, in)
#define RB_NET_V9_8(out, in) ((void)0)
#define RB_NET_V9_7(out, in) ((void)0)
#define RB_NET_V9_6(out, in) ((void)0)

int rb_net_props(struct rb_net *n, int dev, struct rb_net_props *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	switch (n->api) {
	case 12:
		RB_NET_PROPS(12, 1);
		break;
	case 11:
		RB_NET_PROPS(11, 1);
		break;
	case 10:
		RB_NET_PROPS(10, 1);
		break;
	case 9:
		RB_NET_PROPS(9, 1);
		break;
	case 8:
		RB_NET_PROPS(8, 0);
		break;
	case 7:
		RB_NET_PROPS(7, 0);
		break;
	default:
		RB_NET_PROPS(6, 0);
		break;
	}
	return rc;
}

int rb_net_has_vdev(const struct rb_net *n)
{
	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->makeVDevice != NULL;
	case 11:
		return RB_NET(n, 11)->makeVDevice != NULL;
	case 10:
		return RB_NET(n, 10)->makeVDevice != NULL;
	case 9:
		return RB_NET(n, 9)->makeVDevice != NULL;
	default:
		return 0;
	}
}

#define RB_NET_VDEV(N, MAXD)                                        \
	do {                                                        \
		ncclNetVDeviceProps_v##N##_t v_;                    \
		memset(&v_, 0, sizeof(v_));                         \
		if (ndevs > (MAXD))                                 \
			return ncclInvalidArgument;                 \
		v_.ndevs = ndevs;                                   \
		memcpy(v_.devs, devs, (size_t)ndevs * sizeof(int)); \
		return RB_NET(n, N)->makeVDevice(vdev, &v_);        \
	} while (0)

int rb_net_make_vdev(struct rb_net *n, const int *devs, int ndevs, int *vdev)
{
	if (!rb_net_has_vdev(n))
		return ncclInvalidUsage;
	switch (n->api) {
	case 12:
		RB_NET_VDEV(12, NCCL_NET_MAX_DEVS_PER_NIC_V12);
	case 11:
		RB_NET_VDEV(11, NCCL_NET_MAX_DEVS_PER_NIC_V11);
	case 10:
		RB_NET_VDEV(10, NCCL_NET_MAX_DEVS_PER_NIC_V10);
	default:
		RB_NET_VDEV(9, NCCL_NET_MAX_DEVS_PER_NIC_V9);
	}
}

int rb_net_listen(struct rb_net *n, int dev, void *handle, void **lcomm)
{
	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->listen(n->ctx, dev, handle, lcomm);
	case 11:
		return RB_NET(n, 11)->listen(n->ctx, dev, handle, lcomm);
	case 10:
		return RB_NET(n, 10)->listen(dev, handle, lcomm);
	case 9:
		return RB_NET(n, 9)->listen(dev, handle, lcomm);
	case 8:
		return RB_NET(n, 8)->listen(dev, handle, lcomm);
	case 7:
		return RB_NET(n, 7)->listen(dev, handle, lcomm);
	default:
		return RB_NET(n, 6)->listen(dev, handle, lcomm);
	}
}

int rb_net_connect(struct rb_net *n, int dev, void *handle, void **scomm)
{
	/* A host plugin never writes the device handle; NCCL passes a pointer to NULL. */
	ncclNetDeviceHandle_v7_t *dh = NULL;
	ncclNetCommConfig_v10_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };

	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->connect(n->ctx, dev, handle, scomm, &dh);
	case 11:
		return RB_NET(n, 11)->connect(n->ctx, dev, handle, scomm, &dh);
	case 10:
		return RB_NET(n, 10)->connect(dev, &cfg, handle, scomm, &dh);
	case 9:
		return RB_NET(n, 9)->connect(dev, handle, scomm, &dh);
	case 8:
		return RB_NET(n, 8)->connect(dev, handle, scomm, &dh);
	case 7:
		return RB_NET(n, 7)->connect(dev, handle, scomm, &dh);
	default:
		return RB_NET(n, 6)->connect(dev, handle, scomm);
	}
}

int rb_net_accept(struct rb_net *n, void *lcomm, void **rcomm)
{
	ncclNetDeviceHandle_v7_t *dh = NULL;

	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->accept(lcomm, rcomm, &dh);
	case 11:
		return RB_NET(n, 11)->accept(lcomm, rcomm, &dh);
	case 10:
		return RB_NET(n, 10)->accept(lcomm, rcomm, &dh);
	case 9:
		return RB_NET(n, 9)->accept(lcomm, rcomm, &dh);
	case 8:
		return RB_NET(n, 8)->accept(lcomm, rcomm, &dh);
	case 7:
		return RB_NET(n, 7)->accept(lcomm, rcomm, &dh);
	default:
		return RB_NET(n, 6)->accept(lcomm, rcomm);
	}
}

int rb_net_reg_mr(struct rb_net *n, void *comm, void *data, size_t size, void **mh)
{
	switch (n->api) {
	case 7:
	case 6:
		if (size > INT_MAX)
			return ncclInvalidArgument; /* int size before v8 */
		if (n->api == 7)
			return RB_NET(n, 7)->regMr(comm, data, (int)size, NCCL_PTR_HOST, mh);
		return RB_NET(n, 6)->regMr(comm, data, (int)size, NCCL_PTR_HOST, mh);
	default:
		break;
	}
	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->regMr(comm, data, size, NCCL_PTR_HOST, mh);
	case 11:
		return RB_NET(n, 11)->regMr(comm, data, size, NCCL_PTR_HOST, mh);
	case 10:
		return RB_NET(n, 10)->regMr(comm, data, size, NCCL_PTR_HOST, mh);
	case 9:
		return RB_NET(n, 9)->regMr(comm, data, size, NCCL_PTR_HOST, mh);
	default:
		return RB_NET(n, 8)->regMr(comm, data, size, NCCL_PTR_HOST, mh);
	}
}

int rb_net_dereg_mr(struct rb_net *n, void *comm, void *mh)
{
	RB_NET_ALL(n, deregMr(comm, mh));
}

int rb_net_isend(struct rb_net *n, void *scomm, void *data, size_t size, int tag, void *mh,
		 void **req)
{
	*req = NULL;
	if (n->api <= 8 && size > INT_MAX)
		return ncclInvalidArgument;
	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->isend(scomm, data, size, tag, mh, NULL, req);
	case 11:
		return RB_NET(n, 11)->isend(scomm, data, size, tag, mh, NULL, req);
	case 10:
		return RB_NET(n, 10)->isend(scomm, data, size, tag, mh, NULL, req);
	case 9:
		return RB_NET(n, 9)->isend(scomm, data, size, tag, mh, req);
	case 8:
		return RB_NET(n, 8)->isend(scomm, data, (int)size, tag, mh, req);
	case 7:
		return RB_NET(n, 7)->isend(scomm, data, (int)size, tag, mh, req);
	default:
		return RB_NET(n, 6)->isend(scomm, data, (int)size, tag, mh, req);
	}
}

int rb_net_irecv(struct rb_net *n, void *rcomm, void *data, size_t size, int tag, void *mh,
		 void **req)
{
	void *d[1] = { data }, *m[1] = { mh };
	size_t s[1] = { size };
	int is[1] = { (int)size }, t[1] = { tag };

	*req = NULL;
	if (n->api <= 8 && size > INT_MAX)
		return ncclInvalidArgument;
	switch (n->api) {
	case 12:
		return RB_NET(n, 12)->irecv(rcomm, 1, d, s, t, m, NULL, req);
	case 11:
		return RB_NET(n, 11)->irecv(rcomm, 1, d, s, t, m, NULL, req);
	case 10:
		return RB_NET(n, 10)->irecv(rcomm, 1, d, s, t, m, NULL, req);
	case 9:
		return RB_NET(n, 9)->irecv(rcomm, 1, d, s, t, m, req);
	case 8:
		return RB_NET(n, 8)->irecv(rcomm, 1, d, is, t, m, req);
	case 7:
		return RB_NET(n, 7)->irecv(rcomm, 1, d, is, t, m, req);
	default:
		return RB_NET(n, 6)->irecv(rcomm, 1, d, is, t, m, req);
	}
}

int rb_net_test(struct rb_net *n, void *req, int *done, size_t *size)
{
	int s = -1, rc;

	*done = 0;
	switch (n->api) {
	case 12:
		rc = RB_NET(n, 12)->test(req, done, &s);
		break;
	case 11:
		rc = RB_NET(n, 11)->test(req, done, &s);
		break;
	case 10:
		rc = RB_NET(n, 10)->test(req, done, &s);
		break;
	case 9:
		rc = RB_NET(n, 9)->test(req, done, &s);
		break;
	case 8:
		rc = RB_NET(n, 8)->test(req, done, &s);
		break;
	case 7:
		rc = RB_NET(n, 7)->test(req, done, &s);
		break;
	default:
		rc = RB_NET(n, 6)->test(req, done, &s);
		break;
	}
	if (size)
		*size = s < 0 ? 0 : (size_t)s;
	return rc;
}

int rb_net_close_send(struct rb_net *n, void *scomm)
{
	RB_NET_ALL(n, closeSend(scomm));
}

int rb_net_close_recv(struct rb_net *n, void *rcomm)
{
	RB_NET_ALL(n, closeRecv(rcomm));
}

int rb_net_close_listen(struct rb_net *n, void *lcomm)
{
	RB_NET_ALL(n, closeListen(lcomm));
}

void rb_net_close(struct rb_net *n)
{
	if (n->inited && n->api >= 11) {
		if (n->api == 12)
			RB_NET(n, 12)->finalize(n->ctx);
		else
			RB_NET(n, 11)->finalize(n->ctx);
	}
	n->inited = 0;
	if (n->lib)
		dlclose(n->lib);
	n->lib = NULL;
	n->table = NULL;
}
