// SPDX-License-Identifier: Apache-2.0
/*
 * net.c owns railnet's network API in its own terms (include/railnet/net.h): the
 * per-communicator contexts and their reference count, the order in which the first init
 * acquires and the last finalize releases (configuration, verbs, the device table), and the
 * validation of every argument NCCL hands over, before it dispatches: devices and connection
 * parameters to devtab.c, connections to conn.c, the data path to xfer.c. It knows nothing of
 * NCCL's types or versions (plugin.c adapts those) and calls no ibv_* (verbs.c does).
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/config.h"
#include "railnet/devtab.h"
#include "railnet/conn.h"
#include "railnet/log.h"
#include "railnet/net.h"
#include "railnet/stats.h"
#include "railnet/verbs.h"
#include "railnet/version.h"
#include "railnet/xfer.h"

struct rn_net_ctx {
	struct rn_net_ctx *next; /* rn_net.ctxs, under rn_net.lock */
	uint64_t comm_id;
	int traffic_class;	 /* RN_TRAFFIC_CLASS_UNDEF or 0..255 */
	struct rn_net_attr attr; /* setNetAttr's latest hints (kept, not used: docs/data-path.md) */
};

/*
 * The contexts. `lock` serialises init/finalize against each other and against every reader
 * of the device table (devtab.h, which takes no lock of its own); refs counts live contexts.
 */
static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	struct rn_net_ctx *ctxs;
} rn_net = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int rn_null_arg(const char *fn, const char *arg)
{
	RN_WARN("%s: %s is NULL", fn, arg);
	return -EFAULT;
}

/* A handle that railnet did not give out, or one already closed or freed. */
static int rn_unknown(const char *fn, const char *what, const void *p)
{
	RN_WARN("%s: %s %p is not a live one railnet created (closed already, or never ours)", fn,
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

static bool rn_view_valid(enum rn_net_view view)
{
	return view == RN_NET_VIEW_VDEV || view == RN_NET_VIEW_SELF;
}

/* Under rn_net.lock: dev is a valid index of the view. */
static int rn_check_dev(const char *fn, enum rn_net_view view, int dev)
{
	if (!rn_devtab_nic(view, dev)) {
		RN_WARN("%s: dev %d out of range: railnet has %d device(s)", fn, dev,
			rn_devtab_count(view));
		return -EINVAL;
	}
	return 0;
}

/* Under rn_net.lock: ctx is a live context and dev a valid index. */
static int rn_check_ctx_dev(const char *fn, const struct rn_net_ctx *ctx, enum rn_net_view view,
			    int dev)
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
	return rn_check_dev(fn, view, dev);
}

static bool rn_traffic_class_valid(int tc)
{
	return tc == RN_TRAFFIC_CLASS_UNDEF || (tc >= 0 && tc <= 255);
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
	rc = rn_devtab_start(cfg);
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
	int n = rn_xfer_orphans_free();

	if (n)
		RN_INFO(RN_SUB_NET,
			"finalize: %d registration handle(s) of closed comms were never "
			"deregistered; freed",
			n);
	rn_stats_stop();
	rn_stats_flush(rn_config()->stats_path);
	rn_devtab_stop();
	rn_verbs_unload();
	rn_config_release();
#ifdef __GLIBC__
	/*
	 * The comms and QPs freed here lie all over the heap, and glibc keeps such pages until
	 * the top of the heap is free: hand them back, so that a process that closed thousands
	 * of comms returns to its starting RSS (docs/performance.md, "Scale").
	 */
	malloc_trim(0);
#endif
}

static int rn_net_api; /* rn_net_set_api */

void rn_net_set_api(int version)
{
	__atomic_store_n(&rn_net_api, version, __ATOMIC_RELEASE);
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
		int api = __atomic_load_n(&rn_net_api, __ATOMIC_ACQUIRE);

		if (api)
			RN_INFO(RN_SUB_INIT, "railnet %s, NCCL net API v%d", RN_VERSION_LONG, api);
		else
			RN_INFO(RN_SUB_INIT, "railnet %s", RN_VERSION_LONG);
		rc = rn_net_start();
		if (rc)
			goto err_free;
		rn_stats_start(rn_config()->stats_path, rn_config()->stats_interval);
	}
	rn_stats_note_init(__atomic_load_n(&rn_net_api, __ATOMIC_ACQUIRE), comm_id);
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

int rn_net_devices_in(enum rn_net_view view, int *ndev)
{
	int rc = 0;

	if (!ndev)
		return rn_null_arg("devices", "ndev");
	if (!rn_view_valid(view))
		return -EINVAL;
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("devices: called before init");
		rc = -EBADF;
	} else {
		*ndev = rn_devtab_count(view);
	}
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_devices(int *ndev)
{
	return rn_net_devices_in(RN_NET_VIEW_VDEV, ndev);
}

int rn_net_get_properties_in(enum rn_net_view view, int dev, struct rn_props *props)
{
	int rc = 0;

	if (!props)
		return rn_null_arg("getProperties", "props");
	if (!rn_view_valid(view))
		return -EINVAL;
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("getProperties: called before init");
		rc = -EBADF;
		goto out_unlock;
	}
	rc = rn_check_dev("getProperties", view, dev);
	if (rc)
		goto out_unlock;
	rn_devtab_props(view, dev, props);
out_unlock:
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_get_properties(int dev, struct rn_props *props)
{
	return rn_net_get_properties_in(RN_NET_VIEW_VDEV, dev, props);
}

int rn_net_make_vdevice(const struct rn_vprops *props, int *dev)
{
	int rc;

	if (!dev)
		return rn_null_arg("makeVDevice", "d");
	if (!props)
		return rn_null_arg("makeVDevice", "props");
	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs == 0) {
		RN_WARN("makeVDevice: called before init");
		rc = -EBADF;
	} else {
		rc = rn_devtab_make_vdevice(props, rn_config()->merge, dev);
	}
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
	} else {
		ctx->attr = *attr;
	}
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

/* ---- connection setup ------------------------------------------------------------------- */

/*
 * Live listen comms are kept in a list, so that accept or closeListen on one already closed
 * is refused by looking it up, not by reading freed memory (a harness that reuses a stale
 * pointer gets an error, not a crash). A closeListen racing an accept of the same listen comm
 * on another thread is not covered: NCCL calls both from the comm's proxy thread.
 */
struct rn_listen_comm {
	struct rn_listen_comm *next; /* rn_listens, under rn_listens_lock */
	struct rn_conn_listener *l;
	struct rn_xfer_params xp;
};

static pthread_mutex_t rn_listens_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_listen_comm *rn_listens;

static void rn_listen_track(struct rn_listen_comm *lc)
{
	pthread_mutex_lock(&rn_listens_lock);
	lc->next = rn_listens;
	rn_listens = lc;
	pthread_mutex_unlock(&rn_listens_lock);
}

/* Is lc live? With unlink, also take it off the list (closeListen). */
static bool rn_listen_live(const struct rn_listen_comm *lc, bool unlink)
{
	struct rn_listen_comm **pp;
	bool found;

	pthread_mutex_lock(&rn_listens_lock);
	for (pp = &rn_listens; *pp && *pp != lc; pp = &(*pp)->next)
		;
	found = *pp != NULL;
	if (found && unlink)
		*pp = lc->next;
	pthread_mutex_unlock(&rn_listens_lock);
	return found;
}

int rn_net_listen(struct rn_net_ctx *ctx, int dev, void *handle,
		  struct rn_listen_comm **listen_comm)
{
	return rn_net_listen_in(RN_NET_VIEW_VDEV, ctx, dev, handle, listen_comm);
}

int rn_net_listen_in(enum rn_net_view view, struct rn_net_ctx *ctx, int dev, void *handle,
		     struct rn_listen_comm **listen_comm)
{
	struct rn_qp_port ports[RN_QP_MAX_PORTS];
	struct rn_conn_params cp;
	struct rn_listen_comm *lc;
	int rc, nports;

	if (!handle)
		return rn_null_arg("listen", "handle");
	if (!listen_comm)
		return rn_null_arg("listen", "listenComm");
	if (!rn_view_valid(view))
		return -EINVAL;
	lc = calloc(1, sizeof(*lc));
	if (!lc) {
		RN_WARN("listen: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&rn_net.lock);
	rc = rn_check_ctx_dev("listen", ctx, view, dev);
	if (!rc)
		rc = rn_devtab_conn_setup("listen", view, dev, ctx->traffic_class, RN_CONN_RECV,
					  true, ports, &nports, &cp, &lc->xp);
	pthread_mutex_unlock(&rn_net.lock);
	if (!rc)
		rc = rn_conn_listen(ports, nports, &cp, handle, &lc->l);
	if (rc) {
		free(lc);
		return rc;
	}
	rn_listen_track(lc);
	*listen_comm = lc;
	return 0;
}

int rn_net_connect(struct rn_net_ctx *ctx, int dev, int traffic_class, void *handle,
		   struct rn_send_comm **send_comm)
{
	return rn_net_connect_in(RN_NET_VIEW_VDEV, ctx, dev, traffic_class, handle, send_comm);
}

int rn_net_connect_in(enum rn_net_view view, struct rn_net_ctx *ctx, int dev, int traffic_class,
		      void *handle, struct rn_send_comm **send_comm)
{
	struct rn_qp_port ports[RN_QP_MAX_PORTS];
	struct rn_conn_params cp;
	struct rn_xfer_params xp;
	struct rn_xcomm *xc;
	struct rn_conn *conn = NULL;
	int rc, nports = 0;

	if (!handle)
		return rn_null_arg("connect", "handle");
	if (!send_comm)
		return rn_null_arg("connect", "sendComm");
	if (traffic_class != RN_TRAFFIC_CLASS_FROM_CTX && !rn_traffic_class_valid(traffic_class)) {
		RN_WARN("connect: trafficClass %d out of range: 0..255, or -1 for undefined",
			traffic_class);
		return -EINVAL;
	}
	if (!rn_view_valid(view))
		return -EINVAL;
	pthread_mutex_lock(&rn_net.lock);
	rc = rn_check_ctx_dev("connect", ctx, view, dev);
	if (!rc) {
		if (traffic_class == RN_TRAFFIC_CLASS_FROM_CTX)
			traffic_class = ctx->traffic_class;
		/* the ports are read on the first call only: skip the queries later */
		rc = rn_devtab_conn_setup("connect", view, dev, traffic_class, RN_CONN_SEND,
					  !rn_conn_connect_pending(handle), ports, &nports, &cp,
					  &xp);
	}
	pthread_mutex_unlock(&rn_net.lock);
	if (rc)
		return rc;
	*send_comm = NULL;
	rc = rn_conn_connect_step(handle, nports ? ports : NULL, nports, &cp, &conn);
	if (rc || !conn)
		return rc;
	rc = rn_xfer_create(conn, &xp, &xc);
	if (rc)
		return rc;
	*send_comm = (struct rn_send_comm *)xc;
	return 0;
}

int rn_net_accept(struct rn_listen_comm *listen_comm, struct rn_recv_comm **recv_comm)
{
	struct rn_conn *conn = NULL;
	struct rn_xcomm *xc;
	int rc;

	if (!listen_comm)
		return rn_null_arg("accept", "listenComm");
	if (!recv_comm)
		return rn_null_arg("accept", "recvComm");
	if (!rn_listen_live(listen_comm, false))
		return rn_unknown("accept", "listenComm", listen_comm);
	*recv_comm = NULL;
	rc = rn_conn_accept_step(listen_comm->l, &conn);
	if (rc || !conn)
		return rc;
	rc = rn_xfer_create(conn, &listen_comm->xp, &xc);
	if (rc)
		return rc;
	*recv_comm = (struct rn_recv_comm *)xc;
	return 0;
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

/* RAILNET_GDR_POLICY for a CUDA buffer on comm's device (gdr.h). 0 or -EPERM. */
static int rn_net_gdr_policy(void *comm, const void *data)
{
	int rc = 0;

	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.refs)
		rc = rn_devtab_gdr_check(rn_xfer_params_of(comm)->nic, data);
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	int rc = rn_check_mr_args("regMr", comm, data, size, type, mhandle);

	if (rc)
		return rc;
	if (!rn_xfer_valid(comm, -1))
		return rn_unknown("regMr", "comm", comm);
	if (type == RN_PTR_CUDA && (rc = rn_net_gdr_policy(comm, data)))
		return rc;
	return rn_xfer_reg(comm, data, size, type, -1, 0, (struct rn_mh **)mhandle);
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
	if (!rn_xfer_valid(comm, -1))
		return rn_unknown("regMrDmaBuf", "comm", comm);
	if (type == RN_PTR_CUDA && (rc = rn_net_gdr_policy(comm, data)))
		return rc;
	return rn_xfer_reg(comm, data, size, type, fd, offset, (struct rn_mh **)mhandle);
}

int rn_net_dereg_mr(void *comm, void *mhandle)
{
	if (!comm)
		return rn_null_arg("deregMr", "comm");
	if (!mhandle)
		return rn_null_arg("deregMr", "mhandle");
	/* a handle of a comm closed first: comm may be freed, so it is not looked at */
	if (rn_xfer_orphan_dereg(mhandle))
		return 0;
	if (!rn_xfer_valid(comm, -1))
		return rn_unknown("deregMr", "comm", comm);
	if (!rn_xfer_mh_valid(mhandle))
		return rn_unknown("deregMr", "mhandle", mhandle);
	return rn_xfer_dereg(comm, mhandle);
}

/* ---- data path -------------------------------------------------------------------------- */

int rn_net_isend(struct rn_send_comm *comm, void *data, size_t size, int tag, void *mhandle,
		 void *phandle, struct rn_request **request)
{
	(void)phandle;
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
	if (!rn_xfer_valid(comm, RN_CONN_SEND))
		return rn_unknown("isend", "sendComm", comm);
	return rn_xfer_isend((struct rn_xcomm *)comm, data, size, tag, mhandle,
			     (struct rn_xreq **)request);
}

int rn_net_irecv(struct rn_recv_comm *comm, int n, void **data, const size_t *sizes,
		 const int *tags, void **mhandles, void **phandles, struct rn_request **request)
{
	bool eager;

	(void)phandles;
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
	if (!rn_xfer_valid(comm, RN_CONN_RECV))
		return rn_unknown("irecv", "recvComm", comm);
	/* NCCL >= 2.19's hint (API v9+): the request may complete without a completion */
	eager = n == 1 && *request == RN_REQUEST_OPTIONAL;
	return rn_xfer_irecv((struct rn_xcomm *)comm, n, data, sizes, tags,
			     (struct rn_mh **)mhandles, eager, (struct rn_xreq **)request);
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
	if (!rn_xfer_valid(comm, RN_CONN_RECV))
		return rn_unknown("iflush", "recvComm", comm);
	return rn_xfer_iflush((struct rn_xcomm *)comm, n, data, sizes, (struct rn_mh **)mhandles,
			      (struct rn_xreq **)request);
}

int rn_net_test(struct rn_request *request, int *done, int *sizes)
{
	if (!request)
		return rn_null_arg("test", "request");
	if (!done)
		return rn_null_arg("test", "done");
	if (!rn_xfer_req_valid(request))
		return rn_unknown("test", "request", request);
	return rn_xfer_test((struct rn_xreq *)request, done, sizes);
}

int rn_net_close_send(struct rn_send_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeSend", "sendComm");
	if (!rn_xfer_valid(comm, RN_CONN_SEND))
		return rn_unknown("closeSend", "sendComm", comm);
	rn_xfer_close((struct rn_xcomm *)comm);
	return 0;
}

int rn_net_close_recv(struct rn_recv_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeRecv", "recvComm");
	if (!rn_xfer_valid(comm, RN_CONN_RECV))
		return rn_unknown("closeRecv", "recvComm", comm);
	rn_xfer_close((struct rn_xcomm *)comm);
	return 0;
}

int rn_net_close_listen(struct rn_listen_comm *comm)
{
	if (!comm)
		return rn_null_arg("closeListen", "listenComm");
	if (!rn_listen_live(comm, true))
		return rn_unknown("closeListen", "listenComm", comm);
	rn_conn_listen_close(comm->l);
	free(comm);
	return 0;
}
