/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL net API v12 (NCCL 2.30): v11 with 8 children per virtual device (vProps grows to 36
 * bytes, so every later property moves) and the railId/planeId properties. Core 2.30 uses
 * the exported table directly, so every non-optional pointer must be valid.
 * Also the v12 collNet table (§1.5), which railnet does not export.
 * Transcribed from shared/reference/nccl-net-api.md §1.0–1.5.
 */
#ifndef RN_NCCL_NET_V12_H
#define RN_NCCL_NET_V12_H

#include "net_common.h"

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

RN_NCCL_ABI_SIZE(ncclNetVDeviceProps_v12_t, 36);

typedef struct {
	int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF when unset */
} ncclNetCommConfig_v12_t;

RN_NCCL_ABI_SIZE(ncclNetCommConfig_v12_t, 4);

typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_v12_t;

RN_NCCL_ABI_SIZE(ncclNetCommAttr_v12_t, 16);

typedef struct {
	ncclNetCommAttr_v12_t sendCommAttr;
	ncclNetCommAttr_v12_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} ncclNetAttr_v12_t;

RN_NCCL_ABI_SIZE(ncclNetAttr_v12_t, 44);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v12_t, sendCommAttr, 0);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v12_t, recvCommAttr, 16);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v12_t, op, 32);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v12_t, algo, 36);
RN_NCCL_ABI_OFFSET(ncclNetAttr_v12_t, proto, 40);

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
	ncclNetVDeviceProps_v12_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId;	 /* NCCL_NET_ID_UNDEF when undefined */
	int16_t planeId; /* NCCL_NET_ID_UNDEF when undefined */
} ncclNetProperties_v12_t;

RN_NCCL_ABI_SIZE(ncclNetProperties_v12_t, 128);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, pciPath, 8);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, guid, 16);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, ptrSupport, 24);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, regIsGlobal, 28);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, forceFlush, 32);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, speed, 36);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, port, 40);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, latency, 44);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, maxComms, 48);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, maxRecvs, 52);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, netDeviceType, 56);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, netDeviceVersion, 60);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, vProps, 64);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, maxP2pBytes, 104);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, maxCollBytes, 112);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, railId, 124);
RN_NCCL_ABI_OFFSET(ncclNetProperties_v12_t, planeId, 126);

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v12_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v12_t **recvDevComm);
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
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
	ncclResult_t (*finalize)(void *ctx);
	ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v12_t *netAttr);
} ncclNet_v12_t;

RN_NCCL_ABI_SIZE(ncclNet_v12_t, 176);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, name, 0);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, init, 8);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, devices, 16);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, getProperties, 24);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, listen, 32);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, connect, 40);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, accept, 48);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, regMr, 56);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, regMrDmaBuf, 64);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, deregMr, 72);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, isend, 80);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, irecv, 88);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, iflush, 96);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, test, 104);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, closeSend, 112);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, closeRecv, 120);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, closeListen, 128);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, getDeviceMr, 136);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, irecvConsumed, 144);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, makeVDevice, 152);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, finalize, 160);
RN_NCCL_ABI_OFFSET(ncclNet_v12_t, setNetAttr, 168);

/* ---- collNet v12 (not exported by railnet; member order from §1.5) ----------------------- */

/* One piece of a scattered buffer for iallgather/ireducescatter. */
typedef struct {
	void *mhandle;
	void *address;
	size_t size;
} ncclNetSGE_v12_t;

RN_NCCL_ABI_SIZE(ncclNetSGE_v12_t, 24);

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
				void **collComm);
	ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
	ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *collComm, void *mhandle);
	ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, size_t count,
				   ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
				   void *recvMhandle, void **request);
	ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
				   ncclNetSGE_v12_t *recvParts, size_t bytesPerRank,
				   size_t windowOffset, size_t windowBytes, void *sendMhandle,
				   void **request);
	ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v12_t *sendParts,
				       void *recvData, size_t bytesPerRank, size_t windowOffset,
				       size_t windowBytes, ncclDataType_t dataType,
				       ncclRedOp_t redOp, void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
	ncclResult_t (*finalize)(void *ctx);
} ncclCollNet_v12_t;

/* Not listed in the reference: 19 pointer-sized members, from the §1.5 member order. */
RN_NCCL_ABI_SIZE(ncclCollNet_v12_t, 19 * 8);

#endif /* RN_NCCL_NET_V12_H */
