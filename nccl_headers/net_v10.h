/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v10 (NCCL 2.26): v9 plus the profiler callback in init, a per-communicator
 * ncclNetCommConfig on connect (NCCL's pre-v11 compat layer keeps it per comm and passes it
 * to every connect), and profiler handles on isend/irecv. Props layout as v9.
 * Transcribed from shared/reference/nccl-net-api.md §1.2–1.4.
 */
#ifndef RN_NCCL_NET_V10_H
#define RN_NCCL_NET_V10_H

#include "net_common.h"

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V10];
} ncclNetVDeviceProps_v10_t;

RN_NCCL_ABI_SIZE(ncclNetVDeviceProps_v10_t, 20);

/* Per-communicator settings; NCCL_NET_TRAFFIC_CLASS_UNDEF when the user left it unset. */
typedef struct {
	int trafficClass;
} ncclNetCommConfig_v10_t;

RN_NCCL_ABI_SIZE(ncclNetCommConfig_v10_t, 4);

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
	ncclNetVDeviceProps_v10_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
} ncclNetProperties_v10_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v10_t, 104);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, regIsGlobal, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, forceFlush, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, speed, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, port, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, latency, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, maxComms, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, maxRecvs, 52);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, netDeviceType, 56);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, netDeviceVersion, 60);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, vProps, 64);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, maxP2pBytes, 88);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v10_t, maxCollBytes, 96);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v10_t **recvDevComm);
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
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclNet_v10_t;

RN_NCCL_ABI_SIZE(ncclNet_v10_t, 160);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, irecvConsumed, 144);
RN_NCCL_ABI_OFFSET(ncclNet_v10_t, makeVDevice, 152);

#endif /* RN_NCCL_NET_V10_H */
