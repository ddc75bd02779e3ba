/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v9 (NCCL 2.24): v8 plus NIC fusion (makeVDevice, vProps), the forceFlush,
 * maxP2pBytes and maxCollBytes properties, size_t isend/irecv sizes, and the
 * NCCL_NET_OPTIONAL_RECV_COMPLETION hint in *request before irecv.
 * Transcribed from shared/reference/nccl-net-api.md §1.2–1.4.
 */
#ifndef RN_NCCL_NET_V9_H
#define RN_NCCL_NET_V9_H

#include "net_common.h"

/* A virtual device: its physical children. {1, {self}} for a physical device. */
typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V9];
} ncclNetVDeviceProps_v9_t;

RN_NCCL_ABI_SIZE(ncclNetVDeviceProps_v9_t, 20);

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush; /* core always flushes GDR receives of the SIMPLE protocol */
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v9_t vProps;
	size_t maxP2pBytes;  /* (0, NCCL_MAX_NET_SIZE_BYTES] */
	size_t maxCollBytes; /* (0, NCCL_MAX_NET_SIZE_BYTES] */
} ncclNetProperties_v9_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v9_t, 104);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, regIsGlobal, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, forceFlush, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, speed, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, port, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, latency, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, maxComms, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, maxRecvs, 52);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, netDeviceType, 56);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, netDeviceVersion, 60);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, vProps, 64);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, maxP2pBytes, 88);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v9_t, maxCollBytes, 96);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v9_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v9_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	/* optional: NULL means no NIC fusion */
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v9_t;

RN_NCCL_ABI_SIZE(ncclNet_v9_t, 160);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, irecvConsumed, 144);
RN_NCCL_ABI_OFFSET(ncclNet_v9_t, makeVDevice, 152);

#endif /* RN_NCCL_NET_V9_H */
