// SPDX-License-Identifier: Apache-2.0
/*
 * net.c owns railnet's network API in its own terms (include/railnet/net.h): the
 * per-communicator contexts and their reference count, what the first init acquires and the
 * last finalize releases, the device table, and the validation of every argument NCCL hands
 * the data path. It knows nothing of NCCL's types or versions (plugin.c adapts those) and must
 * not call ibv_* directly (it goes through rn_verbs()). Until discovery, connections and the
 * data path land, devices are only counted and every data-path call ends in an error.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/config.h"
#include "railnet/log.h"
#include "railnet/net.h"
#include "railnet/verbs.h"

#define RN_NET_WHY_MAX 512 /* bytes of the "why these devices were dropped" summary */

struct rn_net_ctx {
	struct rn_net_ctx *next; /* rn_net.ctxs, under rn_net.lock */
	uint64_t comm_id;
	int traffic_class; /* RN_TRAFFIC_CLASS_UNDEF or 0..255 */
};

/* A device init could open with an ACTIVE port. Real discovery replaces this table. */
struct rn_dev {
	char name[IBV_SYSFS_NAME_MAX];
	char *pci_path; /* malloc'd by realpath, or NULL */
	uint64_t guid;
	int port;
	int speed; /* Mbps */
	int max_qp;
};

/*
 * Everything the first init acquires. `lock` serialises init/finalize against each other and
 * against every reader of the device table; refs counts live contexts.
 */
static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	struct rn_net_ctx *ctxs;
	struct rn_dev *devs;
	int ndevs;
} rn_net = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int rn_null_arg(const char *fn, const char *arg)
{
	RN_WARN("%s: %s is NULL", fn, arg);
	return -EFAULT;
}

/* A handle that railnet did not give out (none exist yet: connections are not implemented). */
static int rn_unknown(const char *fn, const char *what, const void *p)
{
	RN_WARN("%s: %s %p is not one railnet created (connections are not implemented yet)", fn,
		what, p);
	return -EBADF;
}

static bool rn_ctx_live(const struct rn_net_ctx *ctx)
{
	const struct rn_net_ctx *c;

	for (c = rn_net.ctxs; c; c = c->next)
		if (c == ctx)
			return true;
	return false;
}

/* Under rn_net.lock: ctx is a live context and dev a valid index. */
static int rn_check_ctx_dev(const char *fn, const struct rn_net_ctx *ctx, int dev)
{
	if (!ctx) {
		RN_WARN("%s: ctx is NULL (init not called, or it failed)", fn);
		return -EFAULT;
	}
	if (!rn_ctx_live(ctx)) {
		RN_WARN("%s: ctx %p is not a live railnet context (init not called, or finalized)",
			fn, (const void *)ctx);
		return -EBADF;
	}
	if (dev < 0 || dev >= rn_net.ndevs) {
		RN_WARN("%s: dev %d out of range: railnet has %d device(s)", fn, dev, rn_net.ndevs);
		return -EINVAL;
	}
	return 0;
}

static bool rn_traffic_class_valid(int tc)
{
	return tc == RN_TRAFFIC_CLASS_UNDEF || (tc >= 0 && tc <= 255);
}

/* Append "; text" (or "text" first) to a bounded summary; truncation is acceptable. */
static void rn_why_append(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rn_why_append(char *why, const char *fmt, ...)
{
	size_t used = strlen(why);
	va_list ap;

	if (used && used + 2 < RN_NET_WHY_MAX) {
		memcpy(why + used, "; ", 3);
		used += 2;
	}
	if (used >= RN_NET_WHY_MAX - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(why + used, RN_NET_WHY_MAX - used, fmt, ap);
	va_end(ap);
}

/* ---- device counting (until discovery lands) -------------------------------------------- */

/* Per-lane Mb/s of ibv_port_attr.active_speed, and lanes of active_width. 0: unknown. */
static int rn_lane_mbps(uint8_t active_speed)
{
	switch (active_speed) {
	case 1:
		return 2500; /* SDR */
	case 2:
		return 5000; /* DDR */
	case 4:
	case 8:
		return 10000; /* QDR, FDR10 */
	case 16:
		return 14000; /* FDR */
	case 32:
		return 25000; /* EDR */
	case 64:
		return 50000; /* HDR */
	case 128:
		return 100000; /* NDR */
	default:
		return 0;
	}
}

static int rn_lanes(uint8_t active_width)
{
	switch (active_width) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	default:
		return 0;
	}
}

static int rn_port_mbps(const struct rn_verbs_ops *ops, struct ibv_context *vctx, uint8_t port,
			const struct ibv_port_attr *pa)
{
	uint64_t mbps;

	if (ops->query_port_speed(vctx, port, &mbps) == 0 && mbps > 0 && mbps <= INT_MAX)
		return (int)mbps;
	return rn_lane_mbps(pa->active_speed) * rn_lanes(pa->active_width);
}

static char *rn_pci_path(const char *sysfs_root, const char *name)
{
	char path[PATH_MAX];
	int n;

	n = snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", sysfs_root, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	return realpath(path, NULL);
}

/*
 * Open one device and keep it if a port is ACTIVE. Returns 1 kept (dev filled), 0 dropped
 * (reason appended to why). The device is closed again either way.
 */
static int rn_probe_device(const struct rn_verbs_ops *ops, const struct rn_config *cfg,
			   struct ibv_device *ibdev, struct rn_dev *dev, char *why)
{
	const char *name = ops->get_device_name(ibdev);
	struct ibv_device_attr attr;
	struct ibv_port_attr pa;
	struct ibv_context *vctx;
	int kept = 0;
	int rc;

	if (!name)
		name = "?";
	rc = ops->open_device(ibdev, &vctx);
	if (rc) {
		rn_why_append(why, "%s: cannot open (%s)", name, strerror(-rc));
		return 0;
	}
	rc = ops->query_device(vctx, &attr);
	if (rc) {
		rn_why_append(why, "%s: query_device failed (%s)", name, strerror(-rc));
		goto out_close;
	}
	for (unsigned int p = 1; p <= attr.phys_port_cnt; p++) {
		rc = ops->query_port(vctx, (uint8_t)p, &pa);
		if (rc || pa.state != IBV_PORT_ACTIVE)
			continue;
		memset(dev, 0, sizeof(*dev));
		snprintf(dev->name, sizeof(dev->name), "%s", name);
		dev->pci_path = rn_pci_path(cfg->sysfs_root, name);
		dev->guid = be64toh(attr.sys_image_guid);
		dev->port = (int)p;
		dev->speed = rn_port_mbps(ops, vctx, (uint8_t)p, &pa);
		dev->max_qp = attr.max_qp;
		kept = 1;
		break;
	}
	if (!kept)
		rn_why_append(why, "%s: no ACTIVE port among %u", name,
			      (unsigned int)attr.phys_port_cnt);
out_close:
	ops->close_device(vctx);
	return kept;
}

/*
 * Count the devices this process can open with an ACTIVE port, into rn_net.devs/ndevs.
 * Zero devices is not an error: one INFO line says why. Returns 0 or -ENOMEM.
 */
static int rn_count_devices(const struct rn_config *cfg)
{
	const struct rn_verbs_ops *ops = rn_verbs();
	struct ibv_device **list = NULL;
	char why[RN_NET_WHY_MAX] = "";
	int num = 0, kept = 0;
	int rc;

	rc = ops->get_device_list(&list, &num);
	if (rc) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "no RDMA device: %s cannot list devices (%s)",
			ops->libpath, strerror(-rc));
		return 0;
	}
	if (num <= 0) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"no RDMA device found by %s: railnet reports 0 devices, NCCL will use "
			"another transport",
			ops->libpath);
		goto out_free;
	}
	rn_net.devs = calloc((size_t)num, sizeof(*rn_net.devs));
	if (!rn_net.devs) {
		RN_WARN("init: out of memory for %d device entries", num);
		rc = -ENOMEM;
		goto out_free;
	}
	for (int i = 0; i < num; i++)
		kept += rn_probe_device(ops, cfg, list[i], &rn_net.devs[kept], why);
	rn_net.ndevs = kept;
	if (!kept)
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"%d RDMA device(s) found by %s, none usable: %s; railnet reports 0 devices",
			num, ops->libpath, why);
	else
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"%d of %d RDMA device(s) usable via %s%s%s (device count only: connections "
			"are not implemented yet)",
			kept, num, ops->libpath, why[0] ? "; dropped " : "", why);
out_free:
	ops->free_device_list(list);
	return rc;
}

static void rn_free_devices(void)
{
	for (int i = 0; i < rn_net.ndevs; i++)
		free(rn_net.devs[i].pci_path);
	free(rn_net.devs);
	rn_net.devs = NULL;
	rn_net.ndevs = 0;
}

/* ---- init / finalize -------------------------------------------------------------------- */

/* First init, under rn_net.lock: configuration, libibverbs, devices. */
static int rn_net_start(void)
{
	const struct rn_config *cfg;
	int rc;

	rc = rn_config_acquire();
	if (rc)
		return rc == -EINVAL ? -RN_ECONFIG : rc;
	cfg = rn_config();
	if (cfg->ib_disable) {
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"NCCL_IB_DISABLE=1: railnet steps aside, NCCL will use another transport");
		rc = -RN_EDISABLED;
		goto err_release_config;
	}
	rc = rn_verbs_load(cfg->ibverbs_lib);
	if (rc)
		goto err_release_config;
	rc = rn_count_devices(cfg);
	if (rc)
		goto err_unload_verbs;
	return 0;

err_unload_verbs:
	rn_verbs_unload();
err_release_config:
	rn_config_release();
	return rc;
}

/* Last finalize, under rn_net.lock: the reverse of rn_net_start. */
static void rn_net_stop(void)
{
	rn_free_devices();
	rn_verbs_unload();
	rn_config_release();
}

int rn_net_init(rn_logger_fn logger, uint64_t comm_id, int traffic_class, struct rn_net_ctx **ctx)
{
	struct rn_net_ctx *c = NULL;
	int rc;

	pthread_mutex_lock(&rn_net.lock);
	if (logger)
		rn_log_set_logger(logger);
	if (!ctx) {
		rc = rn_null_arg("init", "ctx");
		goto err_unlock;
	}
	if (!rn_traffic_class_valid(traffic_class)) {
		RN_WARN("init: trafficClass %d out of range: 0..255, or -1 for undefined",
			traffic_class);
		rc = -EINVAL;
		goto err_unlock;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		RN_WARN("init: out of memory for a context");
		rc = -ENOMEM;
		goto err_unlock;
	}
	c->comm_id = comm_id;
	c->traffic_class = traffic_class;
	if (rn_net.refs == 0) {
		rc = rn_net_start();
		if (rc)
			goto err_free;
	}
	rn_net.refs++;
	c->next = rn_net.ctxs;
	rn_net.ctxs = c;
	pthread_mutex_unlock(&rn_net.lock);
	*ctx = c;
	return 0;

err_free:
	free(c);
err_unlock:
	/* Nothing else holds the logger: route messages back to stderr, as before init. */
	if (rn_net.refs == 0)
		rn_log_set_logger(NULL);
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_finalize(struct rn_net_ctx *ctx)
{
	struct rn_net_ctx **pp;

	if (!ctx)
		return rn_null_arg("finalize", "ctx");
	pthread_mutex_lock(&rn_net.lock);
	for (pp = &rn_net.ctxs; *pp && *pp != ctx; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&rn_net.lock);
		RN_WARN("finalize: ctx %p is not a live railnet context (finalized twice?)",
			(void *)ctx);
		return -EBADF;
	}
	*pp = ctx->next;
	free(ctx);
	if (--rn_net.refs == 0) {
		rn_net_stop();
		rn_log_set_logger(NULL);
	}
	pthread_mutex_unlock(&rn_net.lock);
	return 0;
}

/* ---- devices and properties ------------------------------------------------------------- */

int rn_net_devices(int *ndev)
{
	int rc = 0;

	if (!ndev)
		return rn_null_arg("devices", "ndev");
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("devices: called before init");
		rc = -EBADF;
	} else {
		*ndev = rn_net.ndevs;
	}
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_get_properties(int dev, struct rn_props *props)
{
	const struct rn_dev *d;
	int rc = 0;

	if (!props)
		return rn_null_arg("getProperties", "props");
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("getProperties: called before init");
		rc = -EBADF;
		goto out_unlock;
	}
	if (dev < 0 || dev >= rn_net.ndevs) {
		RN_WARN("getProperties: dev %d out of range: railnet has %d device(s)", dev,
			rn_net.ndevs);
		rc = -EINVAL;
		goto out_unlock;
	}
	d = &rn_net.devs[dev];
	memset(props, 0, sizeof(*props));
	props->name = (char *)d->name;
	props->pci_path = d->pci_path;
	props->guid = d->guid;
	props->ptr_support = RN_PTR_HOST;
	props->speed = d->speed;
	props->port = d->port;
	props->latency = 0;
	props->max_comms = d->max_qp;
	props->max_recvs = RN_MAX_RECVS;
	props->net_device_type = 0;
	props->net_device_version = 0;
	props->vprops.ndevs = 1;
	props->vprops.devs[0] = dev;
	props->max_p2p_bytes = RN_MAX_P2P_BYTES;
	props->max_coll_bytes = RN_MAX_COLL_BYTES;
	props->max_multi_request_size = 1;
	props->rail_id = RN_ID_UNDEF;
	props->plane_id = RN_ID_UNDEF;
out_unlock:
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_make_vdevice(const struct rn_vprops *props, int *dev)
{
	int rc = 0;

	if (!dev)
		return rn_null_arg("makeVDevice", "d");
	if (!props)
		return rn_null_arg("makeVDevice", "props");
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("makeVDevice: called before init");
		rc = -EBADF;
		goto out_unlock;
	}
	if (props->ndevs < 2 || props->ndevs > RN_MAX_VDEV_CHILDREN) {
		RN_WARN("makeVDevice: ndevs %d out of range: a virtual device has 2..%d children",
			props->ndevs, RN_MAX_VDEV_CHILDREN);
		rc = -EINVAL;
		goto out_unlock;
	}
	for (int i = 0; i < props->ndevs; i++) {
		if (props->devs[i] < 0 || props->devs[i] >= rn_net.ndevs) {
			RN_WARN("makeVDevice: devs[%d] = %d out of range: railnet has %d device(s)",
				i, props->devs[i], rn_net.ndevs);
			rc = -EINVAL;
			goto out_unlock;
		}
		for (int j = 0; j < i; j++) {
			if (props->devs[j] == props->devs[i]) {
				RN_WARN("makeVDevice: dev %d listed twice (devs[%d] and devs[%d])",
					props->devs[i], j, i);
				rc = -EINVAL;
				goto out_unlock;
			}
		}
	}
	RN_WARN("makeVDevice: virtual devices are not implemented yet; %d devices stay apart",
		props->ndevs);
	rc = -EOPNOTSUPP;
out_unlock:
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_set_attr(struct rn_net_ctx *ctx, const struct rn_net_attr *attr)
{
	int rc = 0;

	if (!ctx)
		return rn_null_arg("setNetAttr", "ctx");
	if (!attr)
		return rn_null_arg("setNetAttr", "netAttr");
	pthread_mutex_lock(&rn_net.lock);
	if (!rn_ctx_live(ctx)) {
		RN_WARN("setNetAttr: ctx %p is not a live railnet context", (void *)ctx);
		rc = -EBADF;
	}
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

/* ---- connection setup ------------------------------------------------------------------- */

/* Under rn_net.lock, after the argument checks: the part that does not exist yet. */
static int rn_not_implemented(const char *fn, int dev)
{
	RN_WARN("%s: dev %d (%s): connections are not implemented yet", fn, dev,
		rn_net.devs[dev].name);
	return -EOPNOTSUPP;
}

int rn_net_listen(struct rn_net_ctx *ctx, int dev, void *handle,
		  struct rn_listen_comm **listen_comm)
{
	int rc;

	if (!handle)
		return rn_null_arg("listen", "handle");
	if (!listen_comm)
		return rn_null_arg("listen", "listenComm");
	pthread_mutex_lock(&rn_net.lock);
	rc = rn_check_ctx_dev("listen", ctx, dev);
	if (!rc)
		rc = rn_not_implemented("listen", dev);
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_connect(struct rn_net_ctx *ctx, int dev, int traffic_class, void *handle,
		   struct rn_send_comm **send_comm)
{
	int rc;

	if (!handle)
		return rn_null_arg("connect", "handle");
	if (!send_comm)
		return rn_null_arg("connect", "sendComm");
	if (traffic_class != RN_TRAFFIC_CLASS_FROM_CTX && !rn_traffic_class_valid(traffic_class)) {
		RN_WARN("connect: trafficClass %d out of range: 0..255, or -1 for undefined",
			traffic_class);
		return -EINVAL;
	}
	pthread_mutex_lock(&rn_net.lock);
	rc = rn_check_ctx_dev("connect", ctx, dev);
	if (!rc)
		rc = rn_not_implemented("connect", dev);
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_accept(struct rn_listen_comm *listen_comm, struct rn_recv_comm **recv_comm)
{
	if (!listen_comm)
		return rn_null_arg("accept", "listenComm");
	if (!recv_comm)
		return rn_null_arg("accept", "recvComm");
	return rn_unknown("accept", "listenComm", listen_comm);
}

/* ---- memory registration ---------------------------------------------------------------- */

static int rn_check_mr_args(const char *fn, void *comm, void *data, size_t size, int type,
			    void **mhandle)
{
	if (!comm)
		return rn_null_arg(fn, "comm");
	if (!mhandle)
		return rn_null_arg(fn, "mhandle");
	if (!data && size)
		return rn_null_arg(fn, "data");
	if (type != RN_PTR_HOST && type != RN_PTR_CUDA) {
		RN_WARN("%s: type %d invalid: NCCL_PTR_HOST (%d) or NCCL_PTR_CUDA (%d)", fn, type,
			RN_PTR_HOST, RN_PTR_CUDA);
		return -EINVAL;
	}
	return 0;
}

int rn_net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	int rc = rn_check_mr_args("regMr", comm, data, size, type, mhandle);

	return rc ? rc : rn_unknown("regMr", "comm", comm);
}

int rn_net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			 void **mhandle)
{
	int rc = rn_check_mr_args("regMrDmaBuf", comm, data, size, type, mhandle);

	if (rc)
		return rc;
	if (fd < -1) {
		RN_WARN("regMrDmaBuf: fd %d invalid: a dma-buf descriptor, or -1", fd);
		return -EINVAL;
	}
	return rn_unknown("regMrDmaBuf", "comm", comm);
}

int rn_net_dereg_mr(void *comm, void *mhandle)
{
	if (!comm)
		return rn_null_arg("deregMr", "comm");
	if (!mhandle)
		return rn_null_arg("deregMr", "mhandle");
	return rn_unknown("deregMr", "comm", comm);
}

/* ---- data path -------------------------------------------------------------------------- */

int rn_net_isend(struct rn_send_comm *comm, void *data, size_t size, int tag, void *mhandle,
		 void *phandle, struct rn_request **request)
{
	if (!comm)
		return rn_null_arg("isend", "sendComm");
	if (!request)
		return rn_null_arg("isend", "request");
	if (!mhandle)
		return rn_null_arg("isend", "mhandle");
	if (!data && size)
		return rn_null_arg("isend", "data");
	if (size > RN_MAX_P2P_BYTES) {
		RN_WARN("isend: size %zu above maxP2pBytes %llu", size, RN_MAX_P2P_BYTES);
		return -EINVAL;
	}
	return rn_unknown("isend", "sendComm", comm);
}

int rn_net_irecv(struct rn_recv_comm *comm, int n, void **data, const size_t *sizes,
		 const int *tags, void **mhandles, void **phandles, struct rn_request **request)
{
	if (!comm)
		return rn_null_arg("irecv", "recvComm");
	if (!request)
		return rn_null_arg("irecv", "request");
	if (n < 1 || n > RN_MAX_RECVS) {
		RN_WARN("irecv: n %d out of range: 1..%d (maxRecvs)", n, RN_MAX_RECVS);
		return -EINVAL;
	}
	if (!data)
		return rn_null_arg("irecv", "data");
	if (!sizes)
		return rn_null_arg("irecv", "sizes");
	if (!tags)
		return rn_null_arg("irecv", "tags");
	if (!mhandles)
		return rn_null_arg("irecv", "mhandles");
	for (int i = 0; i < n; i++) {
		if (sizes[i] > RN_MAX_P2P_BYTES) {
			RN_WARN("irecv: sizes[%d] %zu above maxP2pBytes %llu", i, sizes[i],
				RN_MAX_P2P_BYTES);
			return -EINVAL;
		}
		if (!data[i] && sizes[i]) {
			RN_WARN("irecv: data[%d] is NULL for %zu bytes", i, sizes[i]);
			return -EFAULT;
		}
	}
	return rn_unknown("irecv", "recvComm", comm);
}

int rn_net_iflush(struct rn_recv_comm *comm, int n, void **data, const int *sizes, void **mhandles,
		  struct rn_request **request)
{
	if (!comm)
		return rn_null_arg("iflush", "recvComm");
	if (!request)
		return rn_null_arg("iflush", "request");
	if (n < 1 || n > RN_MAX_RECVS) {
		RN_WARN("iflush: n %d out of range: 1..%d (maxRecvs)", n, RN_MAX_RECVS);
		return -EINVAL;
	}
	if (!data)
		return rn_null_arg("iflush", "data");
	if (!sizes)
		return rn_null_arg("iflush", "sizes");
	if (!mhandles)
		return rn_null_arg("iflush", "mhandles");
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) {
			RN_WARN("iflush: sizes[%d] %d is negative", i, sizes[i]);
			return -EINVAL;
		}
	}
	return rn_unknown("iflush", "recvComm", comm);
}

int rn_net_test(struct rn_request *request, int *done, int *sizes)
{
	if (!request)
		return rn_null_arg("test", "request");
	if (!done)
		return rn_null_arg("test", "done");
	return rn_unknown("test", "request", request);
}

int rn_net_close_send(struct rn_send_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeSend", "sendComm");
	return rn_unknown("closeSend", "sendComm", comm);
}

int rn_net_close_recv(struct rn_recv_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeRecv", "recvComm");
	return rn_unknown("closeRecv", "recvComm", comm);
}

int rn_net_close_listen(struct rn_listen_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeListen", "listenComm");
	return rn_unknown("closeListen", "listenComm", comm);
}
