/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v11 (NCCL 2.28): per-communicator init returning a ctx (commId and config move
 * from connect into init), ctx on listen and connect, finalize(ctx) — called once per init and
 * never NULL-checked by core — and the optional setNetAttr; new maxMultiRequestSize property.
 * Transcribed from shared/reference/nccl-net-api.md §1.0, §1.2–1.4.
 */
#ifndef RN_NCCL_NET_V11_H
#define RN_NCCL_NET_V11_H

#include "net_common.h"

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V11];
} ncclNetVDeviceProps_v11_t;

RN_NCCL_ABI_SIZE(ncclNetVDeviceProps_v11_t, 20);

typedef struct {
	int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF when unset */
} ncclNetCommConfig_v11_t;

RN_NCCL_ABI_SIZE(ncclNetCommConfig_v11_t, 4);

/* Hints on one side of a communication; NCCL_NET_ATTR_UNDEF where undefined. */
typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

RN_NCCL_ABI_SIZE(ncclNetCommAttr_v11_t, 16);

/* setNetAttr argument. op: bitmask of (1 << ncclFunc_t); algo, proto: NCCL bitmasks. */
typedef struct {
	ncclNetCommAttr_v11_t sendCommAttr;
	ncclNetCommAttr_v11_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} ncclNetAttr_v11_t;

RN_NCCL_ABI_SIZE(ncclNetAttr_v11_t, 44);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v11_t, sendCommAttr, 0);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v11_t, recvCommAttr, 16);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v11_t, op, 32);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v11_t, algo, 36);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v11_t, proto, 40);

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v11_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize; /* every in-tree implementation sets 1; core ignores it */
} ncclNetProperties_v11_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v11_t, 112);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, regIsGlobal, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, forceFlush, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, speed, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, port, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, latency, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, maxComms, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, maxRecvs, 52);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, netDeviceType, 56);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, netDeviceVersion, 60);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, vProps, 64);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, maxP2pBytes, 88);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, maxCollBytes, 96);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v11_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v11_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			      void *phandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			      void **mhandles, void **phandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v11_t *props);
	ncclResult_t (*finalize)(void *ctx);
	/* optional */
	ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v11_t *netAttr);
} ncclNet_v11_t;

RN_NCCL_ABI_SIZE(ncclNet_v11_t, 176);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, irecvConsumed, 144);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, makeVDevice, 152);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, finalize, 160);
RN_NCCL_ABI_OFFSET(ncclNet_v11_t, setNetAttr, 168);

#endif /* RN_NCCL_NET_V11_H */
