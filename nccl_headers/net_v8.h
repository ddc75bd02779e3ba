/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v8 (NCCL 2.20): v7 plus the regIsGlobal property (inserted after ptrSupport, so
 * every later member moves) and a size_t regMr size; isend/irecv sizes are still int.
 * Transcribed from shared/reference/nccl-net-api.md §1.2–1.4.
 */
#ifndef RN_NCCL_NET_V8_H
#define RN_NCCL_NET_V8_H

#include "net_common.h"

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal; /* registrations are not tied to a comm */
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v8_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v8_t, 64);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, regIsGlobal, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, speed, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, port, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, latency, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, maxComms, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, maxRecvs, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, netDeviceType, 52);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v8_t, netDeviceVersion, 56);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v8_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v8_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
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
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

RN_NCCL_ABI_SIZE(ncclNet_v8_t, 152);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v8_t, irecvConsumed, 144);

#endif /* RN_NCCL_NET_V8_H */
