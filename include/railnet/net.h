/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one implementation of the network API, in railnet's own terms: every call returns 0 or
 * a negative errno, properties come as struct rn_props (a superset of NCCL's v12 props), and
 * nothing here knows NCCL's types. src/plugin.c adapts each exported ncclNet_vN_t onto these
 * functions and converts the errno to ncclResult_t (the mapping table lives there).
 *
 * Errno vocabulary (plugin.c maps them; keep the two in step):
 *   -EFAULT       a required pointer is NULL (NCCL misused the API)
 *   -EBADF        ctx, comm, mhandle or request is not one railnet handed out (NCCL misuse)
 *   -EINVAL       a value is out of range: dev index, n, size, type, vdev children
 *   -RN_ECONFIG   the environment holds a bad value (config.c named it in a WARN)
 *   -RN_EDISABLED the user turned railnet off (NCCL_IB_DISABLE)
 *   -EPERM        RAILNET_GDR_POLICY=strict refused a GPU buffer on a NIC of another root
 *   -ECONNRESET, -EPROTO, -ETIMEDOUT, -EREMOTEIO: the peer or the network failed
 *   anything else: the OS, a library or the hardware failed (-ENOENT: no libibverbs, ...)
 * Every failing call has logged exactly one WARN (or, for the expected "step aside" cases,
 * one INFO) saying what was wrong before it returns.
 *
 * Threading: init/finalize/devices/get_properties/make_vdevice/set_attr serialise on one
 * global lock and may be called from any thread. Data-path calls on one comm come from one
 * thread (NCCL's proxy thread of that communicator).
 */
#ifndef RAILNET_NET_H
#define RAILNET_NET_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/log.h"
#include "railnet/proto.h"
#include "railnet/types.h"

/* Values plugin.c checks against NCCL's (same numbers, railnet's names); more in types.h. */
#define RN_NET_HANDLE_MAXSIZE 128 /* bytes of the listen handle NCCL ships */
#define RN_TRAFFIC_CLASS_UNDEF (-1)
#define RN_TRAFFIC_CLASS_FROM_CTX (-2) /* connect: use the traffic class given to init */

/* irecv's *request on entry: NCCL's optional-completion hint (API v9+, n == 1). */
#define RN_REQUEST_OPTIONAL ((struct rn_request *)0x1)

/* Comm-level hints of setNetAttr; -1 (all bits for the unsigned ones) where undefined. */
struct rn_net_comm_attr {
	int32_t max_concurrent_peers;
	int32_t min_concurrent_peers;
	int32_t max_flows_per_peer;
	int32_t min_flows_per_peer;
};

struct rn_net_attr {
	struct rn_net_comm_attr send;
	struct rn_net_comm_attr recv;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
};

/* Opaque handles railnet gives out. */
struct rn_net_ctx; /* one per init (per NCCL communicator) */
struct rn_listen_comm;
struct rn_send_comm;
struct rn_recv_comm;
struct rn_request;

/*
 * Per-communicator init, reference-counted. The first one installs `logger` (NULL keeps the
 * current one), parses the configuration, loads libibverbs and counts the usable devices;
 * later ones only add a context (and install a non-NULL logger). Returns 0 and *ctx, or:
 * -RN_ECONFIG (bad environment), -RN_EDISABLED (NCCL_IB_DISABLE, one INFO line), -ENOENT or
 * -ENOSYS (libibverbs missing or unusable: one WARN from verbs.c), -ENOMEM, -EFAULT.
 * On failure nothing stays acquired and, when no other context lives, the logger is reset.
 * Zero usable devices is not an error: init succeeds, logs why at INFO, devices() says 0.
 */
int rn_net_init(rn_logger_fn logger, uint64_t comm_id, int traffic_class, struct rn_net_ctx **ctx);

/*
 * The NCCL net API version whose table NCCL took (plugin.c, before rn_net_init): the first
 * init's INFO line names it with railnet's version. 0: not through a table (tests, tools).
 */
void rn_net_set_api(int version);
/*
 * Release one context. The last one releases everything init acquired (devices, libibverbs,
 * configuration) and routes logging back to stderr, so the library may be dlclosed; railnet
 * runs no thread of its own. -EFAULT for NULL, -EBADF for a ctx that is not live.
 */
int rn_net_finalize(struct rn_net_ctx *ctx);

/* The two numberings of the devices (enum rn_net_view, types.h). */

/* Number of devices of a view. -EFAULT for NULL, -EBADF before init. */
int rn_net_devices(int *ndev);
int rn_net_devices_in(enum rn_net_view view, int *ndev);
/* Fill *props for dev. -EINVAL for dev out of range (props untouched), -EFAULT for NULL. */
int rn_net_get_properties(int dev, struct rn_props *props);
int rn_net_get_properties_in(enum rn_net_view view, int dev, struct rn_props *props);
/*
 * Merge props->devs (RN_NET_VIEW_VDEV indices of base devices) into a new virtual device,
 * returned in *dev (>= the base count). -EINVAL with one WARN when ndevs is not
 * 2..RN_MAX_VDEV_CHILDREN, an index is out of range, virtual or repeated, the ports mix link
 * layers or PCIe roots, or RAILNET_MERGE=none; -ENOSPC when the table is full.
 */
int rn_net_make_vdevice(const struct rn_vprops *props, int *dev);
/*
 * Hints for ctx's communicator (NCCL >= 2.28 sends them at connect and before transfers).
 * Kept in ctx, not used: as NCCL IB's, whose setNetAttr is a no-op (docs/data-path.md says
 * why). -EFAULT, -EBADF.
 */
int rn_net_set_attr(struct rn_net_ctx *ctx, const struct rn_net_attr *attr);

/*
 * Connection setup (non-blocking; a NULL *comm with 0 means "call again with the same
 * handle"). `handle` is NCCL's RN_NET_HANDLE_MAXSIZE-byte buffer. traffic_class of connect:
 * a value, RN_TRAFFIC_CLASS_UNDEF, or RN_TRAFFIC_CLASS_FROM_CTX to use ctx's.
 */
int rn_net_listen(struct rn_net_ctx *ctx, int dev, void *handle,
		  struct rn_listen_comm **listen_comm);
int rn_net_connect(struct rn_net_ctx *ctx, int dev, int traffic_class, void *handle,
		   struct rn_send_comm **send_comm);
int rn_net_listen_in(enum rn_net_view view, struct rn_net_ctx *ctx, int dev, void *handle,
		     struct rn_listen_comm **listen_comm);
int rn_net_connect_in(enum rn_net_view view, struct rn_net_ctx *ctx, int dev, int traffic_class,
		      void *handle, struct rn_send_comm **send_comm);
int rn_net_accept(struct rn_listen_comm *listen_comm, struct rn_recv_comm **recv_comm);

/* Memory registration on a send or recv comm. type: RN_PTR_HOST or RN_PTR_CUDA. */
int rn_net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
/* fd: a dma-buf the caller closes right after the call; -1 means plain registration. */
int rn_net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			 void **mhandle);
int rn_net_dereg_mr(void *comm, void *mhandle);

/*
 * Data path. A NULL *request with 0 means "not now, call again". irecv's n is
 * 1..RN_MAX_RECVS. phandle(s) are NCCL profiler handles, possibly NULL.
 */
int rn_net_isend(struct rn_send_comm *comm, void *data, size_t size, int tag, void *mhandle,
		 void *phandle, struct rn_request **request);
int rn_net_irecv(struct rn_recv_comm *comm, int n, void **data, const size_t *sizes,
		 const int *tags, void **mhandles, void **phandles, struct rn_request **request);
int rn_net_iflush(struct rn_recv_comm *comm, int n, void **data, const int *sizes, void **mhandles,
		  struct rn_request **request);
/* sizes may be NULL; else gets the byte count of each buffer of the request when done. */
int rn_net_test(struct rn_request *request, int *done, int *sizes);

int rn_net_close_send(struct rn_send_comm *comm);
int rn_net_close_recv(struct rn_recv_comm *comm);
int rn_net_close_listen(struct rn_listen_comm *comm);

#endif /* RAILNET_NET_H */
