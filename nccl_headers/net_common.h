/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types and constants shared by every NCCL net API version (v6 … v12), transcribed by the
 * railnet authors from the facts in shared/reference/nccl-net-api.md §1.0 (x86-64 LP64).
 * Nothing here is copied from NCCL; only the names NCCL's ABI and its users expect are kept.
 * Included only by src/plugin.c, the ABI tests and the loader check, never by the core.
 */
#ifndef RN_NCCL_NET_COMMON_H
#define RN_NCCL_NET_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Compile-time checks of the layouts the reference lists; a failure names type and member. */
#define RN_NCCL_ABI_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), "sizeof(" #type ") must be " #size)
#define RN_NCCL_ABI_OFFSET(type, member, off) \
	_Static_assert(offsetof(type, member) == (off), #type "." #member " must be at " #off)

/* ---- result codes ------------------------------------------------------------------------ */

/*
 * Every entry point except `name` returns one of these. The plugin-facing error list ends at
 * ncclRemoteError; the last three exist only in core and a plugin never returns them.
 * SystemError: OS, library or hardware failure. InternalError: NCCL misused the plugin.
 * InvalidUsage: user or configuration error. InvalidArgument: rarely needed.
 * RemoteError: the peer or the network failed (NCCL's IB returns it for an error CQE).
 */
typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7, /* core only */
	ncclTimeout = 8,    /* core only */
	ncclNumResults = 9, /* core only */
} ncclResult_t;

/* ---- logging ----------------------------------------------------------------------------- */

typedef enum {
	NCCL_LOG_NONE = 0,
	NCCL_LOG_VERSION = 1,
	NCCL_LOG_WARN = 2,
	NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4,
	NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

/* Subsystem bits, passed as the logger's `flags`. */
typedef enum {
	NCCL_INIT = 0x1,
	NCCL_COLL = 0x2,
	NCCL_P2P = 0x4,
	NCCL_SHM = 0x8,
	NCCL_NET = 0x10,
	NCCL_GRAPH = 0x20,
	NCCL_TUNING = 0x40,
	NCCL_ENV = 0x80,
	NCCL_ALLOC = 0x100,
	NCCL_CALL = 0x200,
	NCCL_PROXY = 0x400,
	NCCL_NVLS = 0x800,
	NCCL_BOOTSTRAP = 0x1000,
	NCCL_REG = 0x2000,
	NCCL_PROFILE = 0x4000,
	NCCL_RAS = 0x8000,
	NCCL_DESTROY = 0x10000,
	NCCL_ALLOC_HOST = 0x20000,
	NCCL_ALL = ~0,
} ncclDebugLogSubSys;

/*
 * NCCL's logger, handed to init. Convention: WARN with (NCCL_LOG_WARN, NCCL_ALL, __FILE__,
 * __LINE__, ...), INFO with (NCCL_LOG_INFO, subsystem bits, __func__, __LINE__, ...).
 */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
				  int line, const char *fmt, ...);

/* ---- profiler (v10+) --------------------------------------------------------------------- */

/* `type` argument of the profiler callback. */
enum {
	ncclProfilerNetEventStart = 0,
	ncclProfilerNetEventStop = 1,
	ncclProfilerNetEventUpdate = 2,
	ncclProfilerNetEventUpdateAndStop = 3,
};

/* `pluginId` = network type (upper 16 bits) | descriptor version (lower 16 bits). */
#define NCCL_PROFILER_NET_TYPE_IB (1 << 16)
#define NCCL_PROFILER_NET_TYPE_SOCK (2 << 16)

/*
 * Event callback given to init (v10+). Start dereferences pHandle in core, so it must never be
 * called with a NULL pHandle (bootstrap passes NULL phandles); Stop/Update use *eHandle.
 * It does nothing when no profiler plugin is loaded.
 */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
					       int64_t pluginId, void *extData);

/* The IB transport's version-1 event descriptor (extData), for a plugin that mimics it. */
typedef struct {
	uint8_t type;
	union {
		struct {
			int device;
			uint64_t wr_id;
			int opcode;
			int qpNum;
			size_t length;
		} qp;
	};
} ncclProfilerNetIbDescr_v1_t;

/* ---- constants --------------------------------------------------------------------------- */

/* Size of the listen-handle buffer NCCL provides; the plugin's handle must fit. */
#define NCCL_NET_HANDLE_MAXSIZE 128

/* ptrSupport bits, and the `type` argument of regMr/regMrDmaBuf. */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/*
 * In-flight requests each send/recv comm must support (32 since 2.19, 8 before). The sender
 * should multiply by maxRecvs: 8 × 32 = 256 isends per sendComm.
 */
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_NET_MAX_REQUESTS_V6 8

/* Input hint in *request before irecv (2.24+): the receive may complete eagerly. */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
/* Defined in core since 2.28, unused by core at the reference's HEAD. */
#define NCCL_NET_MULTI_REQUEST 0x2

/* Upper bound NCCL accepts for maxP2pBytes and maxCollBytes (values must be in (0, 1 TiB]). */
#define NCCL_MAX_NET_SIZE_BYTES (1ULL << 40)

/* Core-internal sizes (not part of the ABI), useful for sizing a plugin. */
#define MAX_NET_SIZE (1ULL << 30)      /* maxP2pBytes reported for pre-v9 plugins */
#define MAX_COLLNET_SIZE (1ULL << 29)  /* 512 MiB */
#define NCCL_MAX_NET_SIZE (1ULL << 30) /* largest chunk core hands to isend/irecv */
#define NCCL_STEPS 8

/* Length of vProps.devs per version: an ABI difference between v11 and v12. */
#define NCCL_NET_MAX_DEVS_PER_NIC_V9 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1) /* ncclNetCommConfig.trafficClass not set */
#define NCCL_NET_ID_UNDEF (-1)		  /* v12 railId / planeId not defined */
#define NCCL_NET_ATTR_UNDEF (-1)	  /* v11+ ncclNetAttr fields not defined */

/* ---- device offload ---------------------------------------------------------------------- */

typedef enum {
	NCCL_NET_DEVICE_HOST = 0,
	NCCL_NET_DEVICE_UNPACK = 1,
	NCCL_NET_DEVICE_GIN_PROXY = 2, /* 2.28.7+ */
	NCCL_NET_DEVICE_GIN_GDAKI = 3, /* 2.28.7+ */
	NCCL_NET_DEVICE_GIN_GPI = 4,   /* core copy at the reference's HEAD */
} ncclNetDeviceType;

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7
#define NCCL_NET_MTU_SIZE 4096

/* Handle of an offloaded connection; a host plugin never writes one. */
typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;

RN_NCCL_ABI_SIZE(ncclNetDeviceType, 4);
RN_NCCL_ABI_SIZE(ncclNetDeviceHandle_v7_t, 32);
RN_NCCL_ABI_OFFSET(ncclNetDeviceHandle_v7_t, netDeviceType, 0);
RN_NCCL_ABI_OFFSET(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
RN_NCCL_ABI_OFFSET(ncclNetDeviceHandle_v7_t, handle, 8);
RN_NCCL_ABI_OFFSET(ncclNetDeviceHandle_v7_t, size, 16);
RN_NCCL_ABI_OFFSET(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);

/* ---- collective vocabulary used by ncclNetAttr.op and the collNet table ------------------ */

/* Bit positions of ncclNetAttr.op ((1 << ncclFunc) per operation). */
typedef enum {
	ncclFuncBroadcast = 0,
	ncclFuncReduce = 1,
	ncclFuncAllGather = 2,
	ncclFuncReduceScatter = 3,
	ncclFuncAllReduce = 4,
	ncclFuncSendRecv = 5,
	ncclFuncSend = 6,
	ncclFuncRecv = 7,
	ncclFuncAlltoAll = 8,
	ncclFuncScatter = 9,
	ncclFuncGather = 10,
} ncclFunc_t;

/*
 * nccl.h's data type and reduction enums, only as collNet's reduceSupport/iallreduce take
 * them. railnet exports no collNet, so only their size (an int) matters here.
 */
typedef int ncclDataType_t;
typedef int ncclRedOp_t;

RN_NCCL_ABI_SIZE(ncclResult_t, 4);
RN_NCCL_ABI_SIZE(ncclDebugLogLevel, 4);

#endif /* RN_NCCL_NET_COMMON_H */
