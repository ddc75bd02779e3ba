/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-bench's view of an NCCL net plugin (netapi.c): load a plugin the way NCCL does
 * (NCCL_NET_PLUGIN name rules, dlopen RTLD_NOW|RTLD_LOCAL, the newest ncclNetPlugin_vN of
 * v12..v6) and call it through one set of functions whatever its version. Only netapi.c sees
 * nccl_headers/; mode_net.c speaks these types. Every function returns the plugin's
 * ncclResult_t (0 success); none prints except the logger handed to init.
 */
#ifndef RB_NET_H
#define RB_NET_H

#include <stddef.h>
#include <stdint.h>

#define RB_NET_HANDLE_BYTES 128 /* NCCL_NET_HANDLE_MAXSIZE */
#define RB_NET_PTR_HOST 1	/* NCCL_PTR_HOST */
#define RB_NET_MAX_CHILDREN 8	/* NCCL_NET_MAX_DEVS_PER_NIC_V12 */
#define RB_NET_API_NEWEST 12
#define RB_NET_API_OLDEST 6

struct rb_net_props {
	char name[96];
	char pci_path[256];
	uint64_t guid;
	int ptr_support, speed, port, max_comms, max_recvs;
	float latency;
	int ndevs; /* vProps (v9+); 1 before v9 */
	int devs[RB_NET_MAX_CHILDREN];
	size_t max_p2p_bytes; /* 0 before v9 */
};

struct rb_net {
	int api;	   /* the N of ncclNetPlugin_vN in use */
	const void *table; /* the ncclNet_vN_t */
	void *lib;
	void *ctx; /* v11+ init context */
	int inited;
	char path[512];	  /* what dlopen succeeded with */
	const char *name; /* the plugin's own name */
};

/*
 * Open a plugin by NCCL_NET_PLUGIN rules (name as given, then libnccl-net-<name>.so when name
 * has no '/' and is not lib*.so) and take ncclNetPlugin_v<api>, or the newest when api is 0.
 * 0, or -1 with the reason (dlerror() of every attempt, or the missing symbol) in err.
 */
int rb_net_open(struct rb_net *n, const char *name, int api, char *err, size_t errlen);

/*
 * --netns of railnet-bench and railnet-preflight: join the network namespace ns (a name under
 * /run/netns, or a path with a '/') after MPI_Init, so that MPI's own sockets stay in the
 * launcher's namespace while the plugin and its libibverbs open theirs, and read getifaddrs,
 * in the pod's. 0, or -1 with "--netns NS: ..." in err.
 */
int rb_net_join_netns(const char *ns, char *err, size_t errlen);
const char *rb_net_result(int r); /* "ncclSystemError" */
int rb_net_init(struct rb_net *n, int debug_level);
int rb_net_devices(struct rb_net *n, int *ndev);
int rb_net_props(struct rb_net *n, int dev, struct rb_net_props *p);
int rb_net_has_vdev(const struct rb_net *n); /* makeVDevice exists (v9+, non-NULL) */
int rb_net_make_vdev(struct rb_net *n, const int *devs, int ndevs, int *vdev);
int rb_net_listen(struct rb_net *n, int dev, void *handle, void **lcomm);
int rb_net_connect(struct rb_net *n, int dev, void *handle, void **scomm);
int rb_net_accept(struct rb_net *n, void *lcomm, void **rcomm);
int rb_net_reg_mr(struct rb_net *n, void *comm, void *data, size_t size, void **mh);
int rb_net_dereg_mr(struct rb_net *n, void *comm, void *mh);
/* *req is set to NULL before the call: never NCCL's 0x1 optional-completion hint. */
int rb_net_isend(struct rb_net *n, void *scomm, void *data, size_t size, int tag, void *mh,
		 void **req);
int rb_net_irecv(struct rb_net *n, void *rcomm, void *data, size_t size, int tag, void *mh,
		 void **req);
int rb_net_test(struct rb_net *n, void *req, int *done, size_t *size);
int rb_net_close_send(struct rb_net *n, void *scomm);
int rb_net_close_recv(struct rb_net *n, void *rcomm);
int rb_net_close_listen(struct rb_net *n, void *lcomm);
/* finalize (v11+) and dlclose. */
void rb_net_close(struct rb_net *n);

#endif
