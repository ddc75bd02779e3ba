// SPDX-License-Identifier: Apache-2.0
/*
 * The device table (devtab.h): everything about devices that the first init acquires and the
 * last finalize releases — the discovery, both numberings and the virtual devices makeVDevice
 * adds, the device contexts connections use, the bootstrap interface, the PCIe topology, the
 * GDR probe and each device's NCCL_PTR_* — and what a connection on a device is made with.
 * It takes no lock: net.c calls every function here under its one lock. It validates nothing
 * NCCL passed (net.c did) and knows nothing of NCCL's types.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/cuda.h"
#include "railnet/devtab.h"
#include "railnet/event.h"
#include "railnet/gdr.h"
#include "railnet/log.h"
#include "railnet/mr.h"
#include "railnet/verbs.h"

/*
 * num.nics[] holds every device railnet offers: the base devices of each numbering
 * (rn_numbering_build), then the virtual devices makeVDevice adds. num.view[RN_NET_VIEW_VDEV]
 * lists, by NCCL index, the devices NCCL v9+ sees (base devices first, virtual ones after: the
 * order NCCL requires), and num.view[RN_NET_VIEW_SELF] those v6-v8 see (no makeVDevice:
 * railnet merged them itself).
 */
#define RN_DT_MAX_OPEN 64   /* RDMA devices with connections */
#define RN_DT_MAX_NICS 1024 /* base devices plus virtual ones */

static struct {
	struct rn_discovery *disc;
	struct rn_numbering num;
	struct {
		char name[RN_DEV_NAME_MAX];
		struct ibv_context *ctx;
	} open[RN_DT_MAX_OPEN]; /* device contexts connections use */
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
} rn_dt;

static int rn_dev_ctx(const char *name, struct ibv_context **out);

const struct rn_nic *rn_devtab_nic(enum rn_net_view view, int dev)
{
	int i = rn_devtab_nic_index(view, dev);

	return i < 0 ? NULL : &rn_dt.num.nics[i];
}

int rn_devtab_nic_index(enum rn_net_view view, int dev)
{
	if ((view != RN_NET_VIEW_VDEV && view != RN_NET_VIEW_SELF) || dev < 0 ||
	    dev >= rn_dt.num.view[view].n)
		return -1;
	return rn_dt.num.view[view].nic[dev];
}

int rn_devtab_count(enum rn_net_view view)
{
	return rn_dt.num.view[view].n;
}

bool rn_devtab_is_base(enum rn_net_view view, int dev)
{
	return dev < rn_dt.num.view[view].nbase;
}

const struct rn_port *rn_devtab_port(int i)
{
	return &rn_dt.disc->ports[i];
}

/* ---- the device tables ------------------------------------------------------------------- */

static void rn_free_devices(void)
{
	rn_numbering_fini(&rn_dt.num);
	rn_discovery_destroy(rn_dt.disc);
	rn_dt.disc = NULL;
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
	const struct rn_view *vdev = &rn_dt.num.view[RN_NET_VIEW_VDEV];
	const struct rn_view *self = &rn_dt.num.view[RN_NET_VIEW_SELF];
	struct rn_discovery *d;
	bool merge_vdev;
	int rc;

	rc = rn_discover(cfg, NULL, 0, &d);
	if (rc)
		return rc == -EINVAL ? -RN_ECONFIG : rc;
	rn_dt.disc = d;
	if (d->nports == 0) {
		rn_log_no_device(d);
		return 0;
	}
	rc = rn_numbering_build(d, cfg->merge, &rn_dt.num);
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
		const struct rn_nic *nic = &rn_dt.num.nics[self->nic[i]];

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
 * Under net.c's lock, at the first init and only when there is a port: the PCIe topology
 * (RAILNET_TOPO_XML or hwloc's view of this machine), the GPUs this process may use (the
 * container runtime's NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES, read as they are:
 * they are not railnet's configuration) and the GDR probe on the first device.
 */
static int rn_topo_start(const struct rn_config *cfg)
{
	struct ibv_context *ctx = NULL;
	int rc;

	memset(&rn_dt.gdr, 0, sizeof(rn_dt.gdr));
	if (!rn_dt.disc || rn_dt.disc->nports == 0)
		return 0;
	rc = rn_topo_load(cfg->topo_xml, &rn_dt.topo);
	if (rc)
		return rc;
	rn_topo_set_visible(rn_dt.topo, getenv("NVIDIA_VISIBLE_DEVICES"),
			    getenv("CUDA_VISIBLE_DEVICES"));
	rn_topo_apply_nccl_env(rn_dt.topo); /* GPUDirect as NCCL decides it */
	if (rn_dev_ctx(rn_dt.disc->ports[0].name, &ctx))
		ctx = NULL; /* the probe then only reads sysfs */
	rn_gdr_probe(cfg->sysfs_root, ctx, &rn_dt.gdr);
	rn_topo_log(rn_dt.topo, rn_dt.gdr.why);
	return 0;
}

static void rn_topo_stop(void)
{
	rn_topo_destroy(rn_dt.topo);
	rn_dt.topo = NULL;
	rn_cuda_unload();
	free(rn_dt.ptr);
	rn_dt.ptr = NULL;
	rn_dt.nptr = 0;
}

/* The PCI paths of a device's member ports (NULL entries where unknown). */
static int rn_nic_paths(const struct rn_nic *nic, const char **paths)
{
	for (int i = 0; i < nic->nports; i++)
		paths[i] = rn_dt.disc->ports[nic->ports[i]].pci_path;
	return nic->nports;
}

/*
 * Under net.c's lock: RN_PTR_* of nics[nic], computed once (GPUDirect RDMA only when it works
 * and a usable GPU shares the device's PCIe root) and explained in one INFO line.
 */
static int rn_nic_ptr_support(int nic)
{
	const char *paths[RN_MAX_VDEV_CHILDREN];
	struct rn_ptr_cache *pc;
	int n;

	if (nic >= rn_dt.nptr) {
		int cap = rn_dt.num.nnics > nic ? rn_dt.num.nnics : nic + 1;
		struct rn_ptr_cache *p = realloc(rn_dt.ptr, (size_t)cap * sizeof(*p));

		if (!p)
			return RN_PTR_HOST; /* host memory needs nothing to be decided */
		memset(p + rn_dt.nptr, 0, (size_t)(cap - rn_dt.nptr) * sizeof(*p));
		rn_dt.ptr = p;
		rn_dt.nptr = cap;
	}
	pc = &rn_dt.ptr[nic];
	if (pc->ptr)
		return pc->ptr;
	if (!rn_dt.topo) {
		pc->ptr = RN_PTR_HOST;
		return pc->ptr;
	}
	n = rn_nic_paths(&rn_dt.num.nics[nic], paths);
	pc->ptr = rn_gdr_ptr_support(rn_dt.topo, &rn_dt.gdr, paths, n, pc->why, sizeof(pc->why));
	/* a node-wide reason was logged once by the probe: name it, do not repeat it per NIC */
	if (!rn_dt.gdr.works)
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"%s: host (GPUDirect RDMA unavailable on this node, as logged above)",
			rn_dt.num.nics[nic].name);
	else
		RN_INFO(RN_SUB_INIT | RN_SUB_NET, "%s: %s%s%s: %s", rn_dt.num.nics[nic].name,
			"host", pc->ptr & RN_PTR_CUDA ? " + CUDA" : "",
			pc->ptr & RN_PTR_DMABUF ? " + DMA-BUF" : "", pc->why);
	return pc->ptr;
}

/* ---- device contexts --------------------------------------------------------------------- */

/*
 * Under net.c's lock: the open context of RDMA device `name`, opened on first use and kept
 * until the last finalize (connections come and go much faster than devices). -errno after
 * one WARN.
 */
static int rn_dev_ctx(const char *name, struct ibv_context **out)
{
	const struct rn_verbs_ops *v = rn_verbs();
	struct ibv_device **list = NULL;
	int i, n = 0, rc;

	for (i = 0; i < rn_dt.nopen; i++)
		if (!strcmp(rn_dt.open[i].name, name)) {
			*out = rn_dt.open[i].ctx;
			return 0;
		}
	if (rn_dt.nopen == RN_DT_MAX_OPEN) {
		RN_WARN("%s: more than %d RDMA devices in use", name, RN_DT_MAX_OPEN);
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
	snprintf(rn_dt.open[rn_dt.nopen].name, RN_DEV_NAME_MAX, "%s", name);
	rn_dt.open[rn_dt.nopen++].ctx = *out;
	return 0;
}

static void rn_dev_close_all(void)
{
	for (int i = 0; i < rn_dt.nopen; i++) {
		int rc;

		rn_mr_ctx_close(rn_dt.open[i].ctx);
		rn_event_forget(rn_dt.open[i].ctx);
		rc = rn_verbs()->close_device(rn_dt.open[i].ctx);
		if (rc)
			RN_WARN("%s: closing the device failed: %s (a connection still open?)",
				rn_dt.open[i].name, strerror(-rc));
	}
	rn_dt.nopen = 0;
}

/* Under net.c's lock: the ports of NCCL's children, validated. 0 or -EINVAL after a WARN. */
static int rn_vdev_ports(const struct rn_vprops *props, int *idx, int *n)
{
	const struct rn_view *v = &rn_dt.num.view[RN_NET_VIEW_VDEV];
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
		nic = &rn_dt.num.nics[v->nic[props->devs[i]]];
		for (int k = 0; k < nic->nports; k++) {
			if (count == RN_MAX_VDEV_CHILDREN) {
				RN_WARN("makeVDevice: more than %d ports in one virtual device",
					RN_MAX_VDEV_CHILDREN);
				return -EINVAL;
			}
			idx[count++] = nic->ports[k];
		}
	}
	if (rn_vdev_check(rn_dt.disc->ports, idx, count, RN_MAX_VDEV_CHILDREN, why, sizeof(why))) {
		RN_WARN("makeVDevice: refused: %s", why);
		return -EINVAL;
	}
	*n = count;
	return 0;
}

/*
 * Under net.c's lock: the QP-layer ports of device dev of a view, the parameters of its
 * connections, and the data-path parameters. -errno after one WARN.
 */
int rn_devtab_conn_setup(const char *fn, enum rn_net_view view, int dev, int traffic_class,
			 int role, bool with_ports, struct rn_qp_port *ports, int *nports,
			 struct rn_conn_params *cp, struct rn_xfer_params *xp)
{
	const struct rn_config *cfg = rn_config();
	const struct rn_nic *nic = rn_devtab_nic(view, dev);
	int rc;

	if (nic->nports > RN_QP_MAX_PORTS) {
		RN_WARN("%s: dev %d (%s) has %d ports; a connection spans at most %d", fn, dev,
			nic->name, nic->nports, RN_QP_MAX_PORTS);
		return -EINVAL;
	}
	for (int i = 0; i < nic->nports && with_ports; i++) {
		const struct rn_port *pt = &rn_dt.disc->ports[nic->ports[i]];
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
		if (!rn_dt.oob_found) {
			rc = rn_oob_if_find(cfg->socket_ifname, &rn_dt.oob_if);
			if (rc)
				return rc;
			rn_dt.oob_found = true;
		}
		cp->iface = &rn_dt.oob_if;
	}
	cp->timeout_ms = (long)cfg->connect_timeout * 1000;
	cp->qps_per_port = cfg->ib_qps_per_conn;
	rn_qp_attr_from_config(cfg, traffic_class, &cp->attr);
	cp->region_bytes = role == RN_CONN_SEND ? sizeof(struct rn_send_region)
						: sizeof(struct rn_recv_region);
	xp->split = cfg->ib_split_data_on_qps;
	xp->keepalive_ms = cfg->keepalive_ms;
	xp->flush = cfg->flush;
	xp->gdr = rn_nic_ptr_support(rn_devtab_nic_index(view, dev)) & RN_PTR_CUDA;
	xp->nic = rn_devtab_nic_index(view, dev);
	cp->flush = role == RN_CONN_RECV &&
		    (xp->flush == RN_FLUSH_ALWAYS || (xp->flush == RN_FLUSH_AUTO && xp->gdr));
	xp->inline_cts = role == RN_CONN_RECV && cfg->ib_use_inline;
	cp->max_inline = cfg->ib_use_inline ? RN_XFER_INLINE : 0;
	cp->max_send_wr = RN_XFER_SEND_WR;
	cp->max_recv_wr = role == RN_CONN_RECV ? RN_XFER_RECV_WR : 0;
	snprintf(xp->name, sizeof(xp->name), "%s", nic->name);
	return 0;
}

int rn_devtab_gdr_check(int nic, const void *data)
{
	const char *paths[RN_MAX_VDEV_CHILDREN];
	const struct rn_nic *d;
	int n;

	if (!rn_dt.topo || nic < 0 || nic >= rn_dt.num.nnics)
		return 0;
	d = &rn_dt.num.nics[nic];
	n = rn_nic_paths(d, paths);
	return rn_gdr_check_reg(rn_dt.topo, rn_config()->gdr_policy, data, d->name, paths, n);
}

int rn_devtab_start(const struct rn_config *cfg)
{
	int rc = rn_build_devices(cfg);

	if (!rc)
		rc = rn_topo_start(cfg);
	if (rc)
		rn_free_devices();
	return rc;
}

void rn_devtab_stop(void)
{
	rn_topo_stop();
	rn_dev_close_all();
	rn_dt.oob_found = false;
	rn_free_devices();
}

int rn_devtab_ptr_support(int nic)
{
	return rn_nic_ptr_support(nic);
}

void rn_devtab_props(enum rn_net_view view, int dev, struct rn_props *props)
{
	int i = rn_devtab_nic_index(view, dev);
	const struct rn_nic *d = &rn_dt.num.nics[i];

	memset(props, 0, sizeof(*props));
	props->name = d->name;
	props->pci_path = d->pci_path;
	props->guid = d->guid;
	props->ptr_support = rn_nic_ptr_support(i);
	props->reg_is_global = 1; /* mr.h: cached per device, outlives its comm */
	props->force_flush = 0;
	props->speed = d->speed;
	props->port = d->port;
	props->latency = 0;
	props->max_comms = d->max_comms;
	props->max_recvs = RN_MAX_RECVS;
	props->net_device_type = 0;
	props->net_device_version = 0;
	if (rn_devtab_is_base(view, dev)) {
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
}

int rn_devtab_make_vdevice(const struct rn_vprops *props, int merge, int *dev)
{
	struct rn_view *v = &rn_dt.num.view[RN_NET_VIEW_VDEV];
	int idx[RN_MAX_VDEV_CHILDREN], n = 0;
	int rc, nic;

	rc = rn_vdev_ports(props, idx, &n);
	if (rc)
		return rc;
	if (merge == RN_MERGE_NONE) {
		RN_WARN("makeVDevice: RAILNET_MERGE=none: devices stay apart (unset it to let "
			"NCCL merge the ports of one NIC)");
		return -EINVAL;
	}
	if (rn_dt.num.nnics >= RN_DT_MAX_NICS) {
		RN_WARN("makeVDevice: table full (%d devices)", RN_DT_MAX_NICS);
		return -ENOSPC;
	}
	nic = rn_numbering_add(&rn_dt.num, rn_dt.disc->ports, rn_dt.disc->nports, idx, n);
	if (nic < 0) {
		RN_WARN("makeVDevice: out of memory");
		return nic;
	}
	rc = rn_view_push(v, nic);
	if (rc) {
		rn_nic_fini(&rn_dt.num.nics[--rn_dt.num.nnics]);
		RN_WARN("makeVDevice: out of memory");
		return rc;
	}
	rn_dt.num.nics[nic].vprops = *props;
	rn_dt.num.nics[nic].port = rn_devtab_nic(RN_NET_VIEW_VDEV, props->devs[0])->port;
	RN_INFO(RN_SUB_INIT | RN_SUB_NET, "virtual device %d: %s, %d Mbps, %d ports", v->n - 1,
		rn_dt.num.nics[nic].name, rn_dt.num.nics[nic].speed, n);
	*dev = v->n - 1;
	return 0;
}
