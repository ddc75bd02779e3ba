/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v7 (NCCL 2.19): v6 plus device offload (netDeviceType/netDeviceVersion props,
 * a device-handle out-parameter on connect and accept, getDeviceMr, irecvConsumed).
 * Transcribed from shared/reference/nccl-net-api.md §1.2–1.4.
 */
#ifndef RN_NCCL_NET_V7_H
#define RN_NCCL_NET_V7_H

#include "net_common.h"

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v7_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v7_t, 56);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, speed, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, port, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, latency, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, maxComms, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, maxRecvs, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, netDeviceType, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v7_t, netDeviceVersion, 52);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v7_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v7_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	/* optional (NULL for host plugins) */
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v7_t;

RN_NCCL_ABI_SIZE(ncclNet_v7_t, 152);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v7_t, irecvConsumed, 144);

#endif /* RN_NCCL_NET_V7_H */
