// SPDX-License-Identifier: Apache-2.0
/*
 * net.c owns railnet's network API in its own terms (include/railnet/net.h): the
 * per-communicator contexts and their reference count, what the first init acquires and the
 * last finalize releases, the device table, and the validation of every argument NCCL hands
 * the data path. It knows nothing of NCCL's types or versions (plugin.c adapts those) and must
 * not call ibv_* directly (it goes through rn_verbs()). Discovery (device.c) and the merge
 * rules (vdev.c) give the devices; connections are conn.c's, the data path xfer.c's: this
 * file checks NCCL's arguments and hands them over.
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
#include "railnet/conn.h"
#include "railnet/device.h"
#include "railnet/event.h"
#include "railnet/log.h"
#include "railnet/mr.h"
#include "railnet/net.h"
#include "railnet/cuda.h"
#include "railnet/stats.h"
#include "railnet/topo.h"
#include "railnet/vdev.h"
#include "railnet/verbs.h"
#include "railnet/xfer.h"

struct rn_net_ctx {
	struct rn_net_ctx *next; /* rn_net.ctxs, under rn_net.lock */
	uint64_t comm_id;
	int traffic_class;	 /* RN_TRAFFIC_CLASS_UNDEF or 0..255 */
	struct rn_net_attr attr; /* setNetAttr's latest hints (kept, not used: docs/data-path.md) */
};

/*
 * Everything the first init acquires. `lock` serialises init/finalize against each other and
 * against every reader of the device tables; refs counts live contexts.
 *
 * num.nics[] holds every device railnet offers: the base devices of each numbering
 * (rn_numbering_build), then the virtual devices makeVDevice adds. num.view[RN_NET_VIEW_VDEV]
 * lists, by NCCL index, the devices NCCL v9+ sees (base devices first, virtual ones after: the
 * order NCCL requires), and num.view[RN_NET_VIEW_SELF] those v6-v8 see (no makeVDevice:
 * railnet merged them itself).
 */
#define RN_NET_MAX_OPEN 64 /* RDMA devices with connections */

static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	struct rn_net_ctx *ctxs;
	struct rn_discovery *disc;
	struct rn_numbering num;
	struct {
		char name[RN_DEV_NAME_MAX];
		struct ibv_context *ctx;
	} open[RN_NET_MAX_OPEN]; /* device contexts connections use */
	int nopen;
	struct rn_oob_if oob_if; /* the bootstrap interface, found at the first listen */
	bool oob_found;
	struct rn_topo *topo; /* PCIe topology (topo.h); NULL when there is no device */
	struct rn_gdr gdr;    /* GPUDirect RDMA on this machine, probed at the first init */
	struct rn_ptr_cache {
		int ptr; /* RN_PTR_*; 0: not computed yet */
		char why[256];
	} * ptr; /* per num.nics[] entry */
	int nptr;
} rn_net = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

#define RN_NET_MAX_NICS 1024 /* base devices plus virtual ones */

static void rn_dev_close_all(void);
static int rn_dev_ctx(const char *name, struct ibv_context **out);

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
	if (dev < 0 || dev >= rn_net.num.view[view].n) {
		RN_WARN("%s: dev %d out of range: railnet has %d device(s)", fn, dev,
			rn_net.num.view[view].n);
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

/* ---- the device tables ------------------------------------------------------------------- */

static void rn_free_devices(void)
{
	rn_numbering_fini(&rn_net.num);
	rn_discovery_destroy(rn_net.disc);
	rn_net.disc = NULL;
}

/* One INFO line when nothing is usable, saying why and what would fix it. */
static void rn_log_no_device(const struct rn_discovery *d)
{
	const struct rn_verbs_ops *ops = rn_verbs();

	if (d->nlisted == 0 && d->netns_mode == 'N')
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"no RDMA device visible: ib_core is in exclusive network-namespace mode "
			"(netns_mode=0), so a pod sees only devices moved into its namespace; fix: "
			"`rdma system set netns shared` on the node, or give the pod an SR-IOV VF; "
			"railnet reports 0 devices, NCCL will use another transport");
	else if (d->nlisted == 0)
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"no RDMA device found by %s: railnet reports 0 devices, NCCL will use "
			"another transport",
			ops->libpath);
	else
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"%d RDMA device(s) found by %s, no usable port (reasons above; "
			"`railnet-doctor` explains them); railnet reports 0 devices",
			d->nlisted, ops->libpath);
}

/* Discover and build both numberings. Returns 0, -RN_ECONFIG or -ENOMEM. */
static int rn_build_devices(const struct rn_config *cfg)
{
	const struct rn_view *vdev = &rn_net.num.view[RN_NET_VIEW_VDEV];
	const struct rn_view *self = &rn_net.num.view[RN_NET_VIEW_SELF];
	struct rn_discovery *d;
	bool merge_vdev;
	int rc;

	rc = rn_discover(cfg, NULL, 0, &d);
	if (rc)
		return rc == -EINVAL ? -RN_ECONFIG : rc;
	rn_net.disc = d;
	if (d->nports == 0) {
		rn_log_no_device(d);
		return 0;
	}
	rc = rn_numbering_build(d, cfg->merge, &rn_net.num);
	if (rc)
		return rc;
	merge_vdev = cfg->merge == RN_MERGE_PORTS;
	RN_INFO(RN_SUB_INIT | RN_SUB_NET,
		"%d usable port(s) of %d RDMA device(s) via %s; %d device(s) for NCCL >= 2.24 "
		"(makeVDevice merges), %d for older NCCL (RAILNET_MERGE=%s)",
		d->nports, d->nlisted, rn_verbs()->libpath, vdev->n, self->n,
		cfg->merge == RN_MERGE_AUTO ? "auto"
		: merge_vdev		    ? "ports"
					    : "none");
	for (int i = 0; i < self->n; i++) {
		const struct rn_nic *nic = &rn_net.num.nics[self->nic[i]];

		if (nic->nports > 1)
			RN_INFO(RN_SUB_INIT | RN_SUB_NET,
				"%s: %d ports of one PCI device offered as one device, %d Mbps%s",
				nic->name, nic->nports, nic->speed,
				merge_vdev ? "" : " (NCCL < 2.24 only)");
	}
	return 0;
}

/* ---- topology and GPUDirect RDMA --------------------------------------------------------- */

/*
 * Under rn_net.lock, at the first init and only when there is a port: the PCIe topology
 * (RAILNET_TOPO_XML or hwloc's view of this machine), the GPUs this process may use (the
 * container runtime's NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES, read as they are:
 * they are not railnet's configuration) and the GDR probe on the first device.
 */
static int rn_topo_start(const struct rn_config *cfg)
{
	struct ibv_context *ctx = NULL;
	int rc;

	memset(&rn_net.gdr, 0, sizeof(rn_net.gdr));
	if (!rn_net.disc || rn_net.disc->nports == 0)
		return 0;
	rc = rn_topo_load(cfg->topo_xml, &rn_net.topo);
	if (rc)
		return rc;
	rn_topo_set_visible(rn_net.topo, getenv("NVIDIA_VISIBLE_DEVICES"),
			    getenv("CUDA_VISIBLE_DEVICES"));
	if (rn_dev_ctx(rn_net.disc->ports[0].name, &ctx))
		ctx = NULL; /* the probe then only reads sysfs */
	rn_gdr_probe(cfg->sysfs_root, ctx, &rn_net.gdr);
	rn_topo_log(rn_net.topo, &rn_net.gdr);
	return 0;
}

static void rn_topo_stop(void)
{
	rn_topo_destroy(rn_net.topo);
	rn_net.topo = NULL;
	rn_cuda_unload();
	free(rn_net.ptr);
	rn_net.ptr = NULL;
	rn_net.nptr = 0;
}

/* The PCI paths of a device's member ports (NULL entries where unknown). */
static int rn_nic_paths(const struct rn_nic *nic, const char **paths)
{
	for (int i = 0; i < nic->nports; i++)
		paths[i] = rn_net.disc->ports[nic->ports[i]].pci_path;
	return nic->nports;
}

/*
 * Under rn_net.lock: RN_PTR_* of nics[nic], computed once (GPUDirect RDMA only when it works
 * and a usable GPU shares the device's PCIe root) and explained in one INFO line.
 */
static int rn_nic_ptr_support(int nic)
{
	const char *paths[RN_MAX_VDEV_CHILDREN];
	struct rn_ptr_cache *pc;
	int n;

	if (nic >= rn_net.nptr) {
		int cap = rn_net.num.nnics > nic ? rn_net.num.nnics : nic + 1;
		struct rn_ptr_cache *p = realloc(rn_net.ptr, (size_t)cap * sizeof(*p));

		if (!p)
			return RN_PTR_HOST; /* host memory needs nothing to be decided */
		memset(p + rn_net.nptr, 0, (size_t)(cap - rn_net.nptr) * sizeof(*p));
		rn_net.ptr = p;
		rn_net.nptr = cap;
	}
	pc = &rn_net.ptr[nic];
	if (pc->ptr)
		return pc->ptr;
	if (!rn_net.topo) {
		pc->ptr = RN_PTR_HOST;
		return pc->ptr;
	}
	n = rn_nic_paths(&rn_net.num.nics[nic], paths);
	pc->ptr = rn_topo_ptr_support(rn_net.topo, &rn_net.gdr, paths, n, pc->why, sizeof(pc->why));
	RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s: %s%s%s: %s", rn_net.num.nics[nic].name, "host",
		pc->ptr & RN_PTR_CUDA ? " + CUDA" : "", pc->ptr & RN_PTR_DMABUF ? " + DMA-BUF" : "",
		pc->why);
	return pc->ptr;
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
	rc = rn_build_devices(cfg);
	if (rc)
		goto err_free_devices;
	rc = rn_topo_start(cfg);
	if (rc)
		goto err_free_devices;
	return 0;

err_free_devices:
	rn_free_devices();
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
	rn_stats_flush(rn_config()->stats_path);
	rn_topo_stop();
	rn_dev_close_all();
	rn_net.oob_found = false;
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
		*ndev = rn_net.num.view[view].n;
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
	const struct rn_nic *d;
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
	d = &rn_net.num.nics[rn_net.num.view[view].nic[dev]];
	memset(props, 0, sizeof(*props));
	props->name = d->name;
	props->pci_path = d->pci_path;
	props->guid = d->guid;
	props->ptr_support = rn_nic_ptr_support(rn_net.num.view[view].nic[dev]);
	props->reg_is_global = 1; /* mr.h: cached per device, outlives its comm */
	props->force_flush = 0;
	props->speed = d->speed;
	props->port = d->port;
	props->latency = 0;
	props->max_comms = d->max_comms;
	props->max_recvs = RN_MAX_RECVS;
	props->net_device_type = 0;
	props->net_device_version = 0;
	if (dev < rn_net.num.view[view].nbase) {
		props->vprops.ndevs = 1;
		props->vprops.devs[0] = dev;
	} else {
		props->vprops = d->vprops;
	}
	props->max_p2p_bytes = RN_MAX_P2P_BYTES;
	props->max_coll_bytes = RN_MAX_COLL_BYTES;
	props->max_multi_request_size = 1;
	props->rail_id = (int16_t)d->rail_id;
	props->plane_id = (int16_t)d->plane_id;
out_unlock:
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

int rn_net_get_properties(int dev, struct rn_props *props)
{
	return rn_net_get_properties_in(RN_NET_VIEW_VDEV, dev, props);
}

/* Under rn_net.lock: the ports of NCCL's children, validated. 0 or -EINVAL after a WARN. */
static int rn_vdev_ports(const struct rn_vprops *props, int *idx, int *n)
{
	const struct rn_view *v = &rn_net.num.view[RN_NET_VIEW_VDEV];
	char why[RN_GID_WHY_MAX];
	int count = 0;

	if (props->ndevs < 2 || props->ndevs > RN_MAX_VDEV_CHILDREN) {
		RN_WARN("makeVDevice: ndevs %d out of range: a virtual device has 2..%d children",
			props->ndevs, RN_MAX_VDEV_CHILDREN);
		return -EINVAL;
	}
	for (int i = 0; i < props->ndevs; i++) {
		const struct rn_nic *nic;

		if (props->devs[i] < 0 || props->devs[i] >= v->n) {
			RN_WARN("makeVDevice: devs[%d] = %d out of range: railnet has %d device(s)",
				i, props->devs[i], v->n);
			return -EINVAL;
		}
		for (int j = 0; j < i; j++) {
			if (props->devs[j] == props->devs[i]) {
				RN_WARN("makeVDevice: dev %d listed twice (devs[%d] and devs[%d])",
					props->devs[i], j, i);
				return -EINVAL;
			}
		}
		if (props->devs[i] >= v->nbase) {
			RN_WARN("makeVDevice: devs[%d] = %d is itself a virtual device; only "
				"devices 0..%d can be merged",
				i, props->devs[i], v->nbase - 1);
			return -EINVAL;
		}
		nic = &rn_net.num.nics[v->nic[props->devs[i]]];
		for (int k = 0; k < nic->nports; k++) {
			if (count == RN_MAX_VDEV_CHILDREN) {
				RN_WARN("makeVDevice: more than %d ports in one virtual device",
					RN_MAX_VDEV_CHILDREN);
				return -EINVAL;
			}
			idx[count++] = nic->ports[k];
		}
	}
	if (rn_vdev_check(rn_net.disc->ports, idx, count, RN_MAX_VDEV_CHILDREN, why, sizeof(why))) {
		RN_WARN("makeVDevice: refused: %s", why);
		return -EINVAL;
	}
	*n = count;
	return 0;
}

int rn_net_make_vdevice(const struct rn_vprops *props, int *dev)
{
	struct rn_view *v = &rn_net.num.view[RN_NET_VIEW_VDEV];
	int idx[RN_MAX_VDEV_CHILDREN], n = 0;
	int rc = 0, nic;

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
	rc = rn_vdev_ports(props, idx, &n);
	if (rc)
		goto out_unlock;
	if (rn_config()->merge == RN_MERGE_NONE) {
		RN_WARN("makeVDevice: RAILNET_MERGE=none: devices stay apart (unset it to let "
			"NCCL merge the ports of one NIC)");
		rc = -EINVAL;
		goto out_unlock;
	}
	if (rn_net.num.nnics >= RN_NET_MAX_NICS) {
		RN_WARN("makeVDevice: table full (%d devices)", RN_NET_MAX_NICS);
		rc = -ENOSPC;
		goto out_unlock;
	}
	nic = rn_numbering_add(&rn_net.num, rn_net.disc->ports, rn_net.disc->nports, idx, n);
	if (nic < 0) {
		RN_WARN("makeVDevice: out of memory");
		rc = nic;
		goto out_unlock;
	}
	rc = rn_view_push(v, nic);
	if (rc) {
		rn_nic_fini(&rn_net.num.nics[--rn_net.num.nnics]);
		RN_WARN("makeVDevice: out of memory");
		goto out_unlock;
	}
	rn_net.num.nics[nic].vprops = *props;
	rn_net.num.nics[nic].port = rn_net.num.nics[v->nic[props->devs[0]]].port;
	RN_INFO(RN_SUB_INIT | RN_SUB_NET, "virtual device %d: %s, %d Mbps, %d ports", v->n - 1,
		rn_net.num.nics[nic].name, rn_net.num.nics[nic].speed, n);
	*dev = v->n - 1;
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
	} else {
		ctx->attr = *attr;
	}
	pthread_mutex_unlock(&rn_net.lock);
	return rc;
}

/* ---- device contexts --------------------------------------------------------------------- */

/*
 * Under rn_net.lock: the open context of RDMA device `name`, opened on first use and kept
 * until the last finalize (connections come and go much faster than devices). -errno after
 * one WARN.
 */
static int rn_dev_ctx(const char *name, struct ibv_context **out)
{
	const struct rn_verbs_ops *v = rn_verbs();
	struct ibv_device **list = NULL;
	int i, n = 0, rc;

	for (i = 0; i < rn_net.nopen; i++)
		if (!strcmp(rn_net.open[i].name, name)) {
			*out = rn_net.open[i].ctx;
			return 0;
		}
	if (rn_net.nopen == RN_NET_MAX_OPEN) {
		RN_WARN("%s: more than %d RDMA devices in use", name, RN_NET_MAX_OPEN);
		return -ENOSPC;
	}
	rc = v->get_device_list(&list, &n);
	if (rc) {
		RN_WARN("%s: listing RDMA devices failed: %s", name, strerror(-rc));
		return rc;
	}
	rc = -ENODEV;
	for (i = 0; i < n; i++) {
		if (strcmp(v->get_device_name(list[i]), name))
			continue;
		rc = v->open_device(list[i], out);
		if (rc)
			RN_WARN("%s: opening the device failed: %s", name, strerror(-rc));
		break;
	}
	v->free_device_list(list);
	if (rc == -ENODEV)
		RN_WARN("%s: the device is gone (libibverbs no longer lists it)", name);
	if (rc)
		return rc;
	snprintf(rn_net.open[rn_net.nopen].name, RN_DEV_NAME_MAX, "%s", name);
	rn_net.open[rn_net.nopen++].ctx = *out;
	return 0;
}

static void rn_dev_close_all(void)
{
	for (int i = 0; i < rn_net.nopen; i++) {
		int rc;

		rn_mr_ctx_close(rn_net.open[i].ctx);
		rn_event_forget(rn_net.open[i].ctx);
		rc = rn_verbs()->close_device(rn_net.open[i].ctx);
		if (rc)
			RN_WARN("%s: closing the device failed: %s (a connection still open?)",
				rn_net.open[i].name, strerror(-rc));
	}
	rn_net.nopen = 0;
}

/* ---- connection setup ------------------------------------------------------------------- */

/*
 * Live listen comms are kept in a list, so that accept or closeListen on one already closed
 * is refused by looking it up, never by reading freed memory (a harness that reuses a stale
 * pointer gets an error, not a crash).
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

/*
 * Under rn_net.lock: the QP-layer ports of device dev of a view, the parameters of its
 * connections, and the data-path parameters. -errno after one WARN.
 */
static int rn_conn_setup(const char *fn, enum rn_net_view view, int dev, int traffic_class,
			 int role, bool with_ports, struct rn_qp_port *ports, int *nports,
			 struct rn_conn_params *cp, struct rn_xfer_params *xp)
{
	const struct rn_config *cfg = rn_config();
	const struct rn_nic *nic = &rn_net.num.nics[rn_net.num.view[view].nic[dev]];
	int rc;

	if (nic->nports > RN_QP_MAX_PORTS) {
		RN_WARN("%s: dev %d (%s) has %d ports; a connection spans at most %d", fn, dev,
			nic->name, nic->nports, RN_QP_MAX_PORTS);
		return -EINVAL;
	}
	for (int i = 0; i < nic->nports && with_ports; i++) {
		const struct rn_port *pt = &rn_net.disc->ports[nic->ports[i]];
		struct ibv_context *ctx;

		rc = rn_dev_ctx(pt->name, &ctx);
		if (rc)
			return rc;
		rc = rn_qp_port_query(ctx, pt->name, pt->port, pt->gid.index, &ports[i]);
		if (rc)
			return rc;
		ports[i].rail = pt->rail_key;
	}
	*nports = with_ports ? nic->nports : 0;
	memset(cp, 0, sizeof(*cp));
	memset(xp, 0, sizeof(*xp));
	if (role == RN_CONN_RECV) {
		if (!rn_net.oob_found) {
			rc = rn_oob_if_find(cfg->socket_ifname, &rn_net.oob_if);
			if (rc)
				return rc;
			rn_net.oob_found = true;
		}
		cp->iface = &rn_net.oob_if;
	}
	cp->timeout_ms = (long)cfg->connect_timeout * 1000;
	cp->qps_per_port = cfg->ib_qps_per_conn;
	rn_qp_attr_from_config(cfg, traffic_class, &cp->attr);
	cp->region_bytes = role == RN_CONN_SEND ? sizeof(struct rn_send_region)
						: sizeof(struct rn_recv_region);
	xp->split = cfg->ib_split_data_on_qps;
	xp->keepalive_ms = cfg->keepalive_ms;
	xp->flush = cfg->flush;
	xp->gdr = rn_nic_ptr_support(rn_net.num.view[view].nic[dev]) & RN_PTR_CUDA;
	xp->nic = rn_net.num.view[view].nic[dev];
	cp->flush = role == RN_CONN_RECV &&
		    (xp->flush == RN_FLUSH_ALWAYS || (xp->flush == RN_FLUSH_AUTO && xp->gdr));
	xp->inline_cts = role == RN_CONN_RECV && cfg->ib_use_inline;
	cp->max_inline = cfg->ib_use_inline ? RN_XFER_INLINE : 0;
	cp->max_send_wr = RN_XFER_SEND_WR;
	cp->max_recv_wr = role == RN_CONN_RECV ? RN_XFER_RECV_WR : 0;
	snprintf(xp->name, sizeof(xp->name), "%s", nic->name);
	return 0;
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
		rc = rn_conn_setup("listen", view, dev, ctx->traffic_class, RN_CONN_RECV, true,
				   ports, &nports, &cp, &lc->xp);
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
		rc = rn_conn_setup("connect", view, dev, traffic_class, RN_CONN_SEND,
				   !rn_conn_connect_pending(handle), ports, &nports, &cp, &xp);
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

/* RAILNET_GDR_POLICY for a CUDA buffer on comm's device (topo.h). 0 or -EPERM. */
static int rn_gdr_policy(void *comm, const void *data)
{
	const char *paths[RN_MAX_VDEV_CHILDREN];
	const struct rn_nic *nic;
	int rc = 0, n;

	pthread_mutex_lock(&rn_net.lock);
	if (rn_net.topo && rn_net.refs) {
		nic = &rn_net.num.nics[rn_xfer_params_of(comm)->nic];
		n = rn_nic_paths(nic, paths);
		rc = rn_gdr_check_reg(rn_net.topo, rn_config()->gdr_policy, data, nic->name, paths,
				      n);
	}
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
	if (type == RN_PTR_CUDA && (rc = rn_gdr_policy(comm, data)))
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
	if (type == RN_PTR_CUDA && (rc = rn_gdr_policy(comm, data)))
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
