// SPDX-License-Identifier: Apache-2.0
/*
 * plugin.c is railnet's only ABI file: it exports ncclNetPlugin_v12 … _v6, the tables NCCL
 * looks up with dlsym, and adapts each onto the one implementation in net.c. v12 is
 * implemented once; older versions are thin adapters that convert properties field by field
 * into their own layout, check every int/size_t conversion, and map ctx-less versions (v6–v10)
 * onto one default context. It converts -errno into ncclResult_t in exactly one function
 * (rn_nccl_result). It must hold no logic of its own beyond that, and export nothing else
 * (hidden visibility plus src/railnet.map).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nccl_net.h"
#include "railnet/log.h"
#include "railnet/nccl_result.h"
#include "railnet/net.h"

#define RN_EXPORT __attribute__((visibility("default")))
#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* net.h's numbers are NCCL's: the adapters pass them through unchanged. */
_Static_assert(RN_NET_HANDLE_MAXSIZE == NCCL_NET_HANDLE_MAXSIZE, "handle size");
_Static_assert(RN_PTR_HOST == NCCL_PTR_HOST && RN_PTR_CUDA == NCCL_PTR_CUDA &&
		       RN_PTR_DMABUF == NCCL_PTR_DMABUF,
	       "NCCL_PTR_* values");
_Static_assert(RN_MAX_VDEV_CHILDREN == NCCL_NET_MAX_DEVS_PER_NIC_V12, "vdev children");
/* proto.h's per-version vNIC sizes are NCCL's vProps.devs[] lengths */
_Static_assert(RN_PROTO_VDEV_CHILDREN_V9 == NCCL_NET_MAX_DEVS_PER_NIC_V9 &&
		       RN_PROTO_VDEV_CHILDREN_V9 == NCCL_NET_MAX_DEVS_PER_NIC_V10 &&
		       RN_PROTO_VDEV_CHILDREN_V9 == NCCL_NET_MAX_DEVS_PER_NIC_V11,
	       "v9..v11 vNIC children");
_Static_assert(RN_PROTO_VDEV_CHILDREN_V12 == NCCL_NET_MAX_DEVS_PER_NIC_V12, "v12 vNIC children");
_Static_assert(RN_TRAFFIC_CLASS_UNDEF == NCCL_NET_TRAFFIC_CLASS_UNDEF, "undefined TC");
_Static_assert(RN_ID_UNDEF == NCCL_NET_ID_UNDEF, "undefined rail/plane");
_Static_assert(RN_MAX_P2P_BYTES == NCCL_MAX_NET_SIZE_BYTES, "maxP2pBytes bound");
_Static_assert((int)RN_LOG_WARN == (int)NCCL_LOG_WARN && (int)RN_LOG_INFO == (int)NCCL_LOG_INFO &&
		       (int)RN_LOG_TRACE == (int)NCCL_LOG_TRACE,
	       "log levels");
_Static_assert((int)RN_SUB_INIT == (int)NCCL_INIT && (int)RN_SUB_NET == (int)NCCL_NET,
	       "log subsystems");
_Static_assert(sizeof(struct rn_net_attr) == sizeof(ncclNetAttr_v12_t), "net attr");

#define RN_PLUGIN_NAME "railnet"

/* ---- -errno → ncclResult_t ---------------------------------------------------------------- */

/*
 * The only place railnet's errors become NCCL's (net.h lists who returns what):
 *
 *   0                                   ncclSuccess
 *   -EINVAL, -ERANGE                    ncclInvalidArgument  a value out of range (dev, n,
 *                                                            size, type, vdev children)
 *   -EFAULT, -EBADF                     ncclInternalError    NCCL misused the API: a NULL
 *                                                            pointer, a handle railnet did
 *                                                            not give out, a call before init
 *   -RN_ECONFIG (-EDOM)                 ncclInvalidUsage     a bad environment value
 *   -RN_EDISABLED (-ECANCELED)          ncclInvalidUsage     NCCL_IB_DISABLE set by the user
 *   -EPERM                              ncclInvalidUsage     RAILNET_GDR_POLICY=strict refused
 *                                                            a GPU buffer on another PCIe root
 *   -ECONNRESET, -ECONNREFUSED,         ncclRemoteError      the peer or the network failed
 *   -ECONNABORTED, -EPIPE, -EPROTO,
 *   -ETIMEDOUT, -EREMOTEIO, -EHOSTUNREACH
 *   any other negative errno            ncclSystemError      OS, library or hardware
 *                                                            (-ENOENT no libibverbs, -ENOSYS,
 *                                                            -ENOMEM, -EOPNOTSUPP, -EIO, ...)
 *   positive (a railnet bug)            ncclInternalError
 */
ncclResult_t rn_nccl_result(int rc)
{
	if (rc == 0)
		return ncclSuccess;
	if (rc > 0)
		return ncclInternalError;
	switch (-rc) {
	case EINVAL:
	case ERANGE:
		return ncclInvalidArgument;
	case EFAULT:
	case EBADF:
		return ncclInternalError;
	case RN_ECONFIG:
	case RN_EDISABLED:
	case EPERM: /* RAILNET_GDR_POLICY=strict refused a GPU buffer on another root */
		return ncclInvalidUsage;
	case ECONNRESET:
	case ECONNREFUSED:
	case ECONNABORTED:
	case EPIPE:
	case EPROTO:
	case ETIMEDOUT:
	case EREMOTEIO:
	case EHOSTUNREACH:
		return ncclRemoteError;
	default:
		return ncclSystemError;
	}
}

/* ---- the default context of the ctx-less versions (v6–v10) ------------------------------- */

/*
 * NCCL's compat layer calls a pre-v11 init once per load and never finalizes; repeated init
 * calls (another loader, a test) are tolerated and share the one context. It is released by
 * the destructor below, so a dlclose after a v6–v10 session still unloads libibverbs and
 * frees the configuration.
 */
static pthread_mutex_t rn_default_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_net_ctx *rn_default_ctx;

/*
 * NCCL's logger, called through a trampoline of railnet's logger type so that every call
 * across the boundary has the callee's exact type (ncclDebugLogLevel, not int). The last
 * logger NCCL handed to any init wins; log.c is told to use the trampoline.
 */
static ncclDebugLogger_t rn_nccl_logger; /* accessed with __atomic builtins */

static void rn_nccl_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
			...) __attribute__((format(printf, 5, 6)));
static void rn_nccl_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
			...)
{
	ncclDebugLogger_t fn = __atomic_load_n(&rn_nccl_logger, __ATOMIC_ACQUIRE);
	char msg[1024];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn((ncclDebugLogLevel)level, flags, file, line, "%s", msg);
}

/* What to hand rn_net_init for NCCL's logger: the trampoline, or NULL for none. */
static rn_logger_fn rn_logger_from_nccl(ncclDebugLogger_t logger)
{
	if (!logger)
		return NULL;
	__atomic_store_n(&rn_nccl_logger, logger, __ATOMIC_RELEASE);
	return rn_nccl_log;
}

static ncclResult_t rn_default_init(ncclDebugLogger_t logger)
{
	int rc = 0;

	pthread_mutex_lock(&rn_default_lock);
	if (!rn_default_ctx)
		rc = rn_net_init(rn_logger_from_nccl(logger), 0, RN_TRAFFIC_CLASS_UNDEF,
				 &rn_default_ctx);
	else if (logger)
		rn_log_set_logger(rn_logger_from_nccl(logger));
	pthread_mutex_unlock(&rn_default_lock);
	return rn_nccl_result(rc);
}

static struct rn_net_ctx *rn_default(void)
{
	struct rn_net_ctx *ctx;

	pthread_mutex_lock(&rn_default_lock);
	ctx = rn_default_ctx;
	pthread_mutex_unlock(&rn_default_lock);
	return ctx;
}

/*
 * Runs at dlclose and at process exit. NCCL may be tearing down around us then, so its
 * logger is not called any more: whatever is said from here goes to stderr.
 */
__attribute__((destructor)) static void rn_plugin_unload(void)
{
	pthread_mutex_lock(&rn_default_lock);
	if (rn_default_ctx) {
		rn_log_set_logger(NULL);
		rn_net_finalize(rn_default_ctx);
		rn_default_ctx = NULL;
	}
	pthread_mutex_unlock(&rn_default_lock);
}

/* ---- properties, field by field ---------------------------------------------------------- */

/* Members every version has, under the same names. */
#define RN_PROPS_BASE(out, p)                         \
	do {                                          \
		(out)->name = (p)->name;              \
		(out)->pciPath = (p)->pci_path;       \
		(out)->guid = (p)->guid;              \
		(out)->ptrSupport = (p)->ptr_support; \
		(out)->speed = (p)->speed;            \
		(out)->port = (p)->port;              \
		(out)->latency = (p)->latency;        \
		(out)->maxComms = (p)->max_comms;     \
		(out)->maxRecvs = (p)->max_recvs;     \
	} while (0)

/* v7+: device offload type and version. */
#define RN_PROPS_DEVICE(out, p)                                                 \
	do {                                                                    \
		(out)->netDeviceType = (ncclNetDeviceType)(p)->net_device_type; \
		(out)->netDeviceVersion = (p)->net_device_version;              \
	} while (0)

/* v9+: flags, vProps (length checked by the caller) and size limits. */
#define RN_PROPS_V9(out, p)                                            \
	do {                                                           \
		(out)->regIsGlobal = (p)->reg_is_global;               \
		(out)->forceFlush = (p)->force_flush;                  \
		(out)->vProps.ndevs = (p)->vprops.ndevs;               \
		for (int i_ = 0; i_ < (p)->vprops.ndevs; i_++)         \
			(out)->vProps.devs[i_] = (p)->vprops.devs[i_]; \
		(out)->maxP2pBytes = (p)->max_p2p_bytes;               \
		(out)->maxCollBytes = (p)->max_coll_bytes;             \
	} while (0)

/*
 * The common start of getProperties v9-v12: get the internal props of dev, check they fit a
 * layout whose vProps holds `max_children`, and zero NCCL's struct (`out`, `size` bytes).
 * Returns 0 or -errno; `out` is written only on success, and NULL gets net.c's -EFAULT.
 */
static int rn_props_begin(int dev, void *out, size_t size, int max_children, const char *ver,
			  struct rn_props *p)
{
	int rc;

	if (!out)
		return rn_net_get_properties(dev, NULL);
	rc = rn_net_get_properties(dev, p);
	if (rc)
		return rc;
	if (p->vprops.ndevs < 0 || p->vprops.ndevs > max_children) {
		RN_WARN("getProperties(%s): dev %d has %d children, the %s layout holds %d", ver,
			dev, p->vprops.ndevs, ver, max_children);
		return -ERANGE;
	}
	memset(out, 0, size);
	return 0;
}

static ncclResult_t rn_get_properties_v12(int dev, ncclNetProperties_v12_t *out)
{
	struct rn_props p;
	int rc = rn_props_begin(dev, out, sizeof(*out), NCCL_NET_MAX_DEVS_PER_NIC_V12, "v12", &p);

	if (rc)
		return rn_nccl_result(rc);
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	RN_PROPS_V9(out, &p);
	out->maxMultiRequestSize = p.max_multi_request_size;
	out->railId = p.rail_id;
	out->planeId = p.plane_id;
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v11(int dev, ncclNetProperties_v11_t *out)
{
	struct rn_props p;
	int rc = rn_props_begin(dev, out, sizeof(*out), NCCL_NET_MAX_DEVS_PER_NIC_V11, "v11", &p);

	if (rc)
		return rn_nccl_result(rc);
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	RN_PROPS_V9(out, &p);
	out->maxMultiRequestSize = p.max_multi_request_size;
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v10(int dev, ncclNetProperties_v10_t *out)
{
	struct rn_props p;
	int rc = rn_props_begin(dev, out, sizeof(*out), NCCL_NET_MAX_DEVS_PER_NIC_V10, "v10", &p);

	if (rc)
		return rn_nccl_result(rc);
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	RN_PROPS_V9(out, &p);
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v9(int dev, ncclNetProperties_v9_t *out)
{
	struct rn_props p;
	int rc = rn_props_begin(dev, out, sizeof(*out), NCCL_NET_MAX_DEVS_PER_NIC_V9, "v9", &p);

	if (rc)
		return rn_nccl_result(rc);
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	RN_PROPS_V9(out, &p);
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v8(int dev, ncclNetProperties_v8_t *out)
{
	struct rn_props p;
	int rc;

	if (!out)
		return rn_nccl_result(rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, NULL));
	rc = rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, &p);
	if (rc)
		return rn_nccl_result(rc);
	memset(out, 0, sizeof(*out));
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	out->regIsGlobal = p.reg_is_global;
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v7(int dev, ncclNetProperties_v7_t *out)
{
	struct rn_props p;
	int rc;

	if (!out)
		return rn_nccl_result(rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, NULL));
	rc = rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, &p);
	if (rc)
		return rn_nccl_result(rc);
	memset(out, 0, sizeof(*out));
	RN_PROPS_BASE(out, &p);
	RN_PROPS_DEVICE(out, &p);
	return ncclSuccess;
}

static ncclResult_t rn_get_properties_v6(int dev, ncclNetProperties_v6_t *out)
{
	struct rn_props p;
	int rc;

	if (!out)
		return rn_nccl_result(rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, NULL));
	rc = rn_net_get_properties_in(RN_NET_VIEW_SELF, dev, &p);
	if (rc)
		return rn_nccl_result(rc);
	memset(out, 0, sizeof(*out));
	RN_PROPS_BASE(out, &p);
	return ncclSuccess;
}

/* ---- v12: the implementation every older table adapts onto ------------------------------ */

static int rn_comm_traffic_class(const ncclNetCommConfig_v12_t *config)
{
	return config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
}

static ncclResult_t rn_init_v12(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
				ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction)
{
	/* railnet emits no profiler events, so profFunction is never called. */
	rn_net_set_api(12);
	return rn_nccl_result(rn_net_init(rn_logger_from_nccl(logFunction), commId,
					  rn_comm_traffic_class(config),
					  (struct rn_net_ctx **)ctx));
}

static ncclResult_t rn_finalize(void *ctx)
{
	return rn_nccl_result(rn_net_finalize(ctx));
}

static ncclResult_t rn_devices(int *ndev)
{
	return rn_nccl_result(rn_net_devices(ndev));
}

/* v6-v8 have no makeVDevice: they see railnet's own merging (RAILNET_MERGE, net.h). */
static ncclResult_t rn_devices_self(int *ndev)
{
	return rn_nccl_result(rn_net_devices_in(RN_NET_VIEW_SELF, ndev));
}

static ncclResult_t rn_listen_v12(void *ctx, int dev, void *handle, void **listenComm)
{
	return rn_nccl_result(
		rn_net_listen(ctx, dev, handle, (struct rn_listen_comm **)listenComm));
}

/* sendDevComm/recvDevComm: railnet is a host plugin and never writes them (NULL allowed). */
static ncclResult_t rn_connect_v12(void *ctx, int dev, void *handle, void **sendComm,
				   ncclNetDeviceHandle_v12_t **sendDevComm)
{
	return rn_nccl_result(rn_net_connect(ctx, dev, RN_TRAFFIC_CLASS_FROM_CTX, handle,
					     (struct rn_send_comm **)sendComm));
}

static ncclResult_t rn_accept_v12(void *listenComm, void **recvComm,
				  ncclNetDeviceHandle_v12_t **recvDevComm)
{
	return rn_nccl_result(rn_net_accept(listenComm, (struct rn_recv_comm **)recvComm));
}

static ncclResult_t rn_reg_mr_v12(void *comm, void *data, size_t size, int type, void **mhandle)
{
	return rn_nccl_result(rn_net_reg_mr(comm, data, size, type, mhandle));
}

static ncclResult_t rn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				     int fd, void **mhandle)
{
	return rn_nccl_result(rn_net_reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle));
}

static ncclResult_t rn_dereg_mr(void *comm, void *mhandle)
{
	return rn_nccl_result(rn_net_dereg_mr(comm, mhandle));
}

static ncclResult_t rn_isend_v12(void *sendComm, void *data, size_t size, int tag, void *mhandle,
				 void *phandle, void **request)
{
	return rn_nccl_result(rn_net_isend(sendComm, data, size, tag, mhandle, phandle,
					   (struct rn_request **)request));
}

static ncclResult_t rn_irecv_v12(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				 void **mhandles, void **phandles, void **request)
{
	return rn_nccl_result(rn_net_irecv(recvComm, n, data, sizes, tags, mhandles, phandles,
					   (struct rn_request **)request));
}

static ncclResult_t rn_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			      void **request)
{
	return rn_nccl_result(
		rn_net_iflush(recvComm, n, data, sizes, mhandles, (struct rn_request **)request));
}

static ncclResult_t rn_test(void *request, int *done, int *sizes)
{
	return rn_nccl_result(rn_net_test(request, done, sizes));
}

static ncclResult_t rn_close_send(void *sendComm)
{
	return rn_nccl_result(rn_net_close_send(sendComm));
}

static ncclResult_t rn_close_recv(void *recvComm)
{
	return rn_nccl_result(rn_net_close_recv(recvComm));
}

static ncclResult_t rn_close_listen(void *listenComm)
{
	return rn_nccl_result(rn_net_close_listen(listenComm));
}

/*
 * Copy NCCL's vProps (devs[max]) into railnet's. An ndevs beyond the caller's array is
 * refused here, before reading past it.
 */
static int rn_vprops_from(int ndevs, const int *devs, int max, struct rn_vprops *out)
{
	if (ndevs < 0 || ndevs > max) {
		RN_WARN("makeVDevice: ndevs %d out of range: this NCCL version allows 2..%d", ndevs,
			max);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->ndevs = ndevs;
	for (int i = 0; i < ndevs; i++)
		out->devs[i] = devs[i];
	return 0;
}

/*
 * makeVDevice of every version: devs NULL (NCCL passed no props) gets net.c's -EFAULT; else
 * NCCL's vProps (ndevs, devs[max]) are copied and checked, then merged.
 */
static ncclResult_t rn_make_vdevice(int *d, int ndevs, const int *devs, int max)
{
	struct rn_vprops vp;
	int rc;

	if (!devs)
		return rn_nccl_result(rn_net_make_vdevice(NULL, d));
	rc = rn_vprops_from(ndevs, devs, max, &vp);
	if (!rc)
		rc = rn_net_make_vdevice(&vp, d);
	return rn_nccl_result(rc);
}

static ncclResult_t rn_make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *props)
{
	return rn_make_vdevice(d, props ? props->ndevs : 0, props ? props->devs : NULL,
			       NCCL_NET_MAX_DEVS_PER_NIC_V12);
}

/* setNetAttr v11/v12 (same members, different types): NCCL's attributes into railnet's. */
#define RN_ATTR_FROM(out, in)                                                             \
	do {                                                                              \
		(out)->send.max_concurrent_peers = (in)->sendCommAttr.maxConcurrentPeers; \
		(out)->send.min_concurrent_peers = (in)->sendCommAttr.minConcurrentPeers; \
		(out)->send.max_flows_per_peer = (in)->sendCommAttr.maxFlowsPerPeer;      \
		(out)->send.min_flows_per_peer = (in)->sendCommAttr.minFlowsPerPeer;      \
		(out)->recv.max_concurrent_peers = (in)->recvCommAttr.maxConcurrentPeers; \
		(out)->recv.min_concurrent_peers = (in)->recvCommAttr.minConcurrentPeers; \
		(out)->recv.max_flows_per_peer = (in)->recvCommAttr.maxFlowsPerPeer;      \
		(out)->recv.min_flows_per_peer = (in)->recvCommAttr.minFlowsPerPeer;      \
		(out)->op = (in)->op;                                                     \
		(out)->algo = (in)->algo;                                                 \
		(out)->proto = (in)->proto;                                               \
	} while (0)

static ncclResult_t rn_set_net_attr_v12(void *ctx, ncclNetAttr_v12_t *netAttr)
{
	struct rn_net_attr attr;

	if (!netAttr)
		return rn_nccl_result(rn_net_set_attr(ctx, NULL));
	RN_ATTR_FROM(&attr, netAttr);
	return rn_nccl_result(rn_net_set_attr(ctx, &attr));
}

RN_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v12,
	.devices = rn_devices,
	.getProperties = rn_get_properties_v12,
	.listen = rn_listen_v12,
	.connect = rn_connect_v12,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v12,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v12,
	.irecv = rn_irecv_v12,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,   /* host plugin: no device offload */
	.irecvConsumed = NULL, /* host plugin: nothing to do after the GPU consumed data */
	.makeVDevice = rn_make_vdevice_v12,
	.finalize = rn_finalize,
	.setNetAttr = rn_set_net_attr_v12,
};

/* ---- v11: v12 with a 4-child vProps and its own props layout ------------------------------ */

_Static_assert(sizeof(ncclNetCommConfig_v11_t) == sizeof(ncclNetCommConfig_v12_t), "config");
_Static_assert(sizeof(ncclNetAttr_v11_t) == sizeof(ncclNetAttr_v12_t), "attr");

static ncclResult_t rn_init_v11(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
				ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction)
{
	int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;

	rn_net_set_api(11);
	return rn_nccl_result(rn_net_init(rn_logger_from_nccl(logFunction), commId, tc,
					  (struct rn_net_ctx **)ctx));
}

static ncclResult_t rn_make_vdevice_v11(int *d, ncclNetVDeviceProps_v11_t *props)
{
	return rn_make_vdevice(d, props ? props->ndevs : 0, props ? props->devs : NULL,
			       NCCL_NET_MAX_DEVS_PER_NIC_V11);
}

static ncclResult_t rn_set_net_attr_v11(void *ctx, ncclNetAttr_v11_t *netAttr)
{
	struct rn_net_attr attr;

	if (!netAttr)
		return rn_nccl_result(rn_net_set_attr(ctx, NULL));
	RN_ATTR_FROM(&attr, netAttr);
	return rn_nccl_result(rn_net_set_attr(ctx, &attr));
}

RN_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v11,
	.devices = rn_devices,
	.getProperties = rn_get_properties_v11,
	.listen = rn_listen_v12,
	.connect = rn_connect_v12,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v12,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v12,
	.irecv = rn_irecv_v12,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = rn_make_vdevice_v11,
	.finalize = rn_finalize,
	.setNetAttr = rn_set_net_attr_v11,
};

/* ---- v10: no ctx (default context); traffic class per connect ---------------------------- */

static ncclResult_t rn_init_v10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction)
{
	rn_net_set_api(10);
	return rn_default_init(logFunction);
}

static ncclResult_t rn_listen_v10(int dev, void *handle, void **listenComm)
{
	return rn_listen_v12(rn_default(), dev, handle, listenComm);
}

static ncclResult_t rn_connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				   void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm)
{
	int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;

	return rn_nccl_result(
		rn_net_connect(rn_default(), dev, tc, handle, (struct rn_send_comm **)sendComm));
}

static ncclResult_t rn_make_vdevice_v10(int *d, ncclNetVDeviceProps_v10_t *props)
{
	return rn_make_vdevice(d, props ? props->ndevs : 0, props ? props->devs : NULL,
			       NCCL_NET_MAX_DEVS_PER_NIC_V10);
}

RN_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v10,
	.devices = rn_devices,
	.getProperties = rn_get_properties_v10,
	.listen = rn_listen_v10,
	.connect = rn_connect_v10,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v12,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v12,
	.irecv = rn_irecv_v12,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = rn_make_vdevice_v10,
};

/* ---- v9: no profiler handles ------------------------------------------------------------- */

static ncclResult_t rn_init_v6(ncclDebugLogger_t logFunction)
{
	rn_net_set_api(6);
	return rn_default_init(logFunction);
}

static ncclResult_t rn_init_v7(ncclDebugLogger_t logFunction)
{
	rn_net_set_api(7);
	return rn_default_init(logFunction);
}

static ncclResult_t rn_init_v8(ncclDebugLogger_t logFunction)
{
	rn_net_set_api(8);
	return rn_default_init(logFunction);
}

static ncclResult_t rn_init_v9(ncclDebugLogger_t logFunction)
{
	rn_net_set_api(9);
	return rn_default_init(logFunction);
}

static ncclResult_t rn_connect_v9(int dev, void *handle, void **sendComm,
				  ncclNetDeviceHandle_v9_t **sendDevComm)
{
	return rn_nccl_result(rn_net_connect(rn_default(), dev, NCCL_NET_TRAFFIC_CLASS_UNDEF,
					     handle, (struct rn_send_comm **)sendComm));
}

static ncclResult_t rn_isend_v9(void *sendComm, void *data, size_t size, int tag, void *mhandle,
				void **request)
{
	return rn_isend_v12(sendComm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t rn_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				void **mhandles, void **request)
{
	return rn_irecv_v12(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}

static ncclResult_t rn_make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *props)
{
	return rn_make_vdevice(d, props ? props->ndevs : 0, props ? props->devs : NULL,
			       NCCL_NET_MAX_DEVS_PER_NIC_V9);
}

RN_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v9,
	.devices = rn_devices,
	.getProperties = rn_get_properties_v9,
	.listen = rn_listen_v10,
	.connect = rn_connect_v9,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v12,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v9,
	.irecv = rn_irecv_v9,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = rn_make_vdevice_v9,
};

/* ---- v8: int isend/irecv sizes; railnet's own device numbering (no makeVDevice) ---------- */

static ncclResult_t rn_listen_v8(int dev, void *handle, void **listenComm)
{
	return rn_nccl_result(rn_net_listen_in(RN_NET_VIEW_SELF, rn_default(), dev, handle,
					       (struct rn_listen_comm **)listenComm));
}

static ncclResult_t rn_connect_v8(int dev, void *handle, void **sendComm,
				  ncclNetDeviceHandle_v8_t **sendDevComm)
{
	return rn_nccl_result(rn_net_connect_in(RN_NET_VIEW_SELF, rn_default(), dev,
						NCCL_NET_TRAFFIC_CLASS_UNDEF, handle,
						(struct rn_send_comm **)sendComm));
}

static int rn_size_from_int(const char *fn, const char *arg, int size, size_t *out)
{
	if (size < 0) {
		RN_WARN("%s: %s %d is negative", fn, arg, size);
		return -EINVAL;
	}
	*out = (size_t)size;
	return 0;
}

static ncclResult_t rn_isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle,
				void **request)
{
	size_t sz;
	int rc = rn_size_from_int("isend", "size", size, &sz);

	if (rc)
		return rn_nccl_result(rc);
	return rn_isend_v12(sendComm, data, sz, tag, mhandle, NULL, request);
}

static ncclResult_t rn_irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags,
				void **mhandles, void **request)
{
	size_t sz[RN_MAX_RECVS];
	size_t *szp = NULL;

	/* n and NULL checks are net.c's; only convert what is safe to read. */
	if (sizes && n >= 1 && n <= (int)RN_ARRAY_SIZE(sz)) {
		for (int i = 0; i < n; i++) {
			if (sizes[i] < 0) {
				RN_WARN("irecv: sizes[%d] %d is negative", i, sizes[i]);
				return rn_nccl_result(-EINVAL);
			}
			sz[i] = (size_t)sizes[i];
		}
		szp = sz;
	}
	if (request && *request == (void *)RN_REQUEST_OPTIONAL)
		*request = NULL; /* v6-v8 know no optional-completion hint */
	return rn_nccl_result(rn_net_irecv(recvComm, n, data, szp, tags, mhandles, NULL,
					   (struct rn_request **)request));
}

RN_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v8,
	.devices = rn_devices_self,
	.getProperties = rn_get_properties_v8,
	.listen = rn_listen_v8,
	.connect = rn_connect_v8,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v12,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v8,
	.irecv = rn_irecv_v8,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
};

/* ---- v7: int regMr size ------------------------------------------------------------------ */

static ncclResult_t rn_reg_mr_v7(void *comm, void *data, int size, int type, void **mhandle)
{
	size_t sz;
	int rc = rn_size_from_int("regMr", "size", size, &sz);

	if (rc)
		return rn_nccl_result(rc);
	return rn_reg_mr_v12(comm, data, sz, type, mhandle);
}

RN_EXPORT const ncclNet_v7_t ncclNetPlugin_v7 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v7,
	.devices = rn_devices_self,
	.getProperties = rn_get_properties_v7,
	.listen = rn_listen_v8,
	.connect = rn_connect_v8,
	.accept = rn_accept_v12,
	.regMr = rn_reg_mr_v7,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v8,
	.irecv = rn_irecv_v8,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
};

/* ---- v6: no device handles --------------------------------------------------------------- */

static ncclResult_t rn_connect_v6(int dev, void *handle, void **sendComm)
{
	return rn_connect_v8(dev, handle, sendComm, NULL);
}

static ncclResult_t rn_accept_v6(void *listenComm, void **recvComm)
{
	return rn_accept_v12(listenComm, recvComm, NULL);
}

RN_EXPORT const ncclNet_v6_t ncclNetPlugin_v6 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_init_v6,
	.devices = rn_devices_self,
	.getProperties = rn_get_properties_v6,
	.listen = rn_listen_v8,
	.connect = rn_connect_v6,
	.accept = rn_accept_v6,
	.regMr = rn_reg_mr_v7,
	.regMrDmaBuf = rn_reg_mr_dmabuf,
	.deregMr = rn_dereg_mr,
	.isend = rn_isend_v8,
	.irecv = rn_irecv_v8,
	.iflush = rn_iflush,
	.test = rn_test,
	.closeSend = rn_close_send,
	.closeRecv = rn_close_recv,
	.closeListen = rn_close_listen,
};
