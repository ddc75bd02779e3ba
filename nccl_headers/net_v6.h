/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v6 (NCCL 2.13 … loaded by every core up to 2.30): the oldest version railnet
 * exports. Transcribed from shared/reference/nccl-net-api.md §1.2–1.3; int sizes in regMr,
 * isend and irecv; no device offload, no vdevs, no ctx, no finalize.
 */
#ifndef RN_NCCL_NET_V6_H
#define RN_NCCL_NET_V6_H

#include "net_common.h"

typedef struct {
	char *name;	/* device name, unique: the topology key */
	char *pciPath;	/* sysfs PCI device directory; NULL for a virtual NIC */
	uint64_t guid;	/* equal guids: one physical port / ASIC */
	int ptrSupport; /* NCCL_PTR_* */
	int speed;	/* Mbps */
	int port;
	float latency; /* µs, 0 = unknown */
	int maxComms;
	int maxRecvs;
} ncclNetProperties_v6_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v6_t, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, speed, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, port, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, latency, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, maxComms, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v6_t, maxRecvs, 44);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm);
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
} ncclNet_v6_t;

RN_NCCL_ABI_SIZE(ncclNet_v6_t, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v6_t, closeListen, 128);

#endif /* RN_NCCL_NET_V6_H */
