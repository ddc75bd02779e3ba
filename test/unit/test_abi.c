// SPDX-License-Identifier: Apache-2.0
/*
 * ABI layout of nccl_headers/, checked at run time: every size and offset that
 * shared/reference/nccl-net-api.md §1 lists, one cmocka test per API version. The headers
 * carry the same facts as _Static_asserts; this test makes them visible in ctest and fails
 * with the member's name if a header edit ever slips past the compiler check.
 */
#include <stddef.h>
#include <stdio.h>

#include "nccl_net.h"
#include "rn_test.h"

struct rn_abi_fact {
	const char *what;
	size_t got;
	size_t want;
};

#define SIZE(type, n)                                  \
	{                                              \
		"sizeof(" #type ")", sizeof(type), (n) \
	}
#define OFF(type, m, n)                              \
	{                                            \
#type "." #m, offsetof(type, m), (n) \
	}

static void rn_check_facts(const struct rn_abi_fact *f, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		if (f[i].got != f[i].want) {
			print_error("%s is %zu, the ABI says %zu\n", f[i].what, f[i].got,
				    f[i].want);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

#define CHECK(facts) rn_check_facts((facts), sizeof(facts) / sizeof((facts)[0]))

/* The 17 members of v6 sit at 8-byte steps; later versions append (reference §1.2). */
#define NET_COMMON(T)                                                                             \
	OFF(T, name, 0), OFF(T, init, 8), OFF(T, devices, 16), OFF(T, getProperties, 24),         \
		OFF(T, listen, 32), OFF(T, connect, 40), OFF(T, accept, 48), OFF(T, regMr, 56),   \
		OFF(T, regMrDmaBuf, 64), OFF(T, deregMr, 72), OFF(T, isend, 80),                  \
		OFF(T, irecv, 88), OFF(T, iflush, 96), OFF(T, test, 104), OFF(T, closeSend, 112), \
		OFF(T, closeRecv, 120), OFF(T, closeListen, 128)
#define NET_V7(T) OFF(T, getDeviceMr, 136), OFF(T, irecvConsumed, 144)

/* Props prefix of v9 … v12 (reference §1.3). */
#define PROPS_V9(T)                                                                                \
	OFF(T, name, 0), OFF(T, pciPath, 8), OFF(T, guid, 16), OFF(T, ptrSupport, 24),             \
		OFF(T, regIsGlobal, 28), OFF(T, forceFlush, 32), OFF(T, speed, 36),                \
		OFF(T, port, 40), OFF(T, latency, 44), OFF(T, maxComms, 48), OFF(T, maxRecvs, 52), \
		OFF(T, netDeviceType, 56), OFF(T, netDeviceVersion, 60), OFF(T, vProps, 64)

static void test_common(void **state)
{
	static const struct rn_abi_fact facts[] = {
		{ "NCCL_NET_HANDLE_MAXSIZE", NCCL_NET_HANDLE_MAXSIZE, 128 },
		{ "NCCL_PTR_HOST", NCCL_PTR_HOST, 0x1 },
		{ "NCCL_PTR_CUDA", NCCL_PTR_CUDA, 0x2 },
		{ "NCCL_PTR_DMABUF", NCCL_PTR_DMABUF, 0x4 },
		{ "NCCL_NET_MAX_REQUESTS", NCCL_NET_MAX_REQUESTS, 32 },
		{ "NCCL_NET_MAX_REQUESTS_V6", NCCL_NET_MAX_REQUESTS_V6, 8 },
		{ "NCCL_NET_OPTIONAL_RECV_COMPLETION", NCCL_NET_OPTIONAL_RECV_COMPLETION, 0x1 },
		{ "NCCL_NET_MULTI_REQUEST", NCCL_NET_MULTI_REQUEST, 0x2 },
		{ "NCCL_MAX_NET_SIZE_BYTES", NCCL_MAX_NET_SIZE_BYTES, 1ULL << 40 },
		{ "MAX_NET_SIZE", MAX_NET_SIZE, 1ULL << 30 },
		{ "MAX_COLLNET_SIZE", MAX_COLLNET_SIZE, 512ULL << 20 },
		{ "NCCL_MAX_NET_SIZE", NCCL_MAX_NET_SIZE, 1ULL << 30 },
		{ "NCCL_STEPS", NCCL_STEPS, 8 },
		{ "NCCL_NET_MAX_DEVS_PER_NIC_V9", NCCL_NET_MAX_DEVS_PER_NIC_V9, 4 },
		{ "NCCL_NET_MAX_DEVS_PER_NIC_V10", NCCL_NET_MAX_DEVS_PER_NIC_V10, 4 },
		{ "NCCL_NET_MAX_DEVS_PER_NIC_V11", NCCL_NET_MAX_DEVS_PER_NIC_V11, 4 },
		{ "NCCL_NET_MAX_DEVS_PER_NIC_V12", NCCL_NET_MAX_DEVS_PER_NIC_V12, 8 },
		{ "NCCL_NET_DEVICE_INVALID_VERSION", NCCL_NET_DEVICE_INVALID_VERSION, 0 },
		{ "NCCL_NET_DEVICE_UNPACK_VERSION", NCCL_NET_DEVICE_UNPACK_VERSION, 0x7 },
		{ "NCCL_NET_MTU_SIZE", NCCL_NET_MTU_SIZE, 4096 },
		{ "NCCL_PROFILER_NET_TYPE_IB", NCCL_PROFILER_NET_TYPE_IB, 1 << 16 },
		{ "NCCL_PROFILER_NET_TYPE_SOCK", NCCL_PROFILER_NET_TYPE_SOCK, 2 << 16 },
		{ "ncclRemoteError", ncclRemoteError, 6 },
		{ "ncclInvalidUsage", ncclInvalidUsage, 5 },
		{ "ncclInvalidArgument", ncclInvalidArgument, 4 },
		{ "ncclInternalError", ncclInternalError, 3 },
		{ "ncclSystemError", ncclSystemError, 2 },
		{ "ncclNumResults", ncclNumResults, 9 },
		{ "NCCL_LOG_TRACE", NCCL_LOG_TRACE, 5 },
		{ "NCCL_NET", NCCL_NET, 0x10 },
		{ "NCCL_ALLOC_HOST", NCCL_ALLOC_HOST, 0x20000 },
		{ "NCCL_NET_DEVICE_UNPACK", NCCL_NET_DEVICE_UNPACK, 1 },
		{ "NCCL_NET_DEVICE_GIN_GPI", NCCL_NET_DEVICE_GIN_GPI, 4 },
		{ "ncclFuncGather", ncclFuncGather, 10 },
		SIZE(ncclResult_t, 4),
		SIZE(ncclNetDeviceType, 4),
		SIZE(ncclNetDeviceHandle_v7_t, 32),
		OFF(ncclNetDeviceHandle_v7_t, netDeviceType, 0),
		OFF(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4),
		OFF(ncclNetDeviceHandle_v7_t, handle, 8),
		OFF(ncclNetDeviceHandle_v7_t, size, 16),
		OFF(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24),
		SIZE(ncclNetDeviceHandle_v12_t, 32),
	};

	(void)state;
	CHECK(facts);
	assert_int_equal(NCCL_NET_TRAFFIC_CLASS_UNDEF, -1);
	assert_int_equal(NCCL_NET_ID_UNDEF, -1);
	assert_int_equal(NCCL_NET_ATTR_UNDEF, -1);
	assert_int_equal((int)NCCL_ALL, -1);
}

static void test_v6(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetProperties_v6_t, 48),
		OFF(ncclNetProperties_v6_t, name, 0),
		OFF(ncclNetProperties_v6_t, pciPath, 8),
		OFF(ncclNetProperties_v6_t, guid, 16),
		OFF(ncclNetProperties_v6_t, ptrSupport, 24),
		OFF(ncclNetProperties_v6_t, speed, 28),
		OFF(ncclNetProperties_v6_t, port, 32),
		OFF(ncclNetProperties_v6_t, latency, 36),
		OFF(ncclNetProperties_v6_t, maxComms, 40),
		OFF(ncclNetProperties_v6_t, maxRecvs, 44),
		SIZE(ncclNet_v6_t, 136),
		NET_COMMON(ncclNet_v6_t),
	};

	(void)state;
	CHECK(facts);
}

static void test_v7(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetProperties_v7_t, 56),
		OFF(ncclNetProperties_v7_t, name, 0),
		OFF(ncclNetProperties_v7_t, pciPath, 8),
		OFF(ncclNetProperties_v7_t, guid, 16),
		OFF(ncclNetProperties_v7_t, ptrSupport, 24),
		OFF(ncclNetProperties_v7_t, speed, 28),
		OFF(ncclNetProperties_v7_t, port, 32),
		OFF(ncclNetProperties_v7_t, latency, 36),
		OFF(ncclNetProperties_v7_t, maxComms, 40),
		OFF(ncclNetProperties_v7_t, maxRecvs, 44),
		OFF(ncclNetProperties_v7_t, netDeviceType, 48),
		OFF(ncclNetProperties_v7_t, netDeviceVersion, 52),
		SIZE(ncclNet_v7_t, 152),
		NET_COMMON(ncclNet_v7_t),
		NET_V7(ncclNet_v7_t),
	};

	(void)state;
	CHECK(facts);
}

static void test_v8(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetProperties_v8_t, 64),
		OFF(ncclNetProperties_v8_t, name, 0),
		OFF(ncclNetProperties_v8_t, pciPath, 8),
		OFF(ncclNetProperties_v8_t, guid, 16),
		OFF(ncclNetProperties_v8_t, ptrSupport, 24),
		OFF(ncclNetProperties_v8_t, regIsGlobal, 28),
		OFF(ncclNetProperties_v8_t, speed, 32),
		OFF(ncclNetProperties_v8_t, port, 36),
		OFF(ncclNetProperties_v8_t, latency, 40),
		OFF(ncclNetProperties_v8_t, maxComms, 44),
		OFF(ncclNetProperties_v8_t, maxRecvs, 48),
		OFF(ncclNetProperties_v8_t, netDeviceType, 52),
		OFF(ncclNetProperties_v8_t, netDeviceVersion, 56),
		SIZE(ncclNet_v8_t, 152),
		NET_COMMON(ncclNet_v8_t),
		NET_V7(ncclNet_v8_t),
	};

	(void)state;
	CHECK(facts);
}

static void test_v9(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetVDeviceProps_v9_t, 20),
		SIZE(ncclNetProperties_v9_t, 104),
		PROPS_V9(ncclNetProperties_v9_t),
		OFF(ncclNetProperties_v9_t, maxP2pBytes, 88),
		OFF(ncclNetProperties_v9_t, maxCollBytes, 96),
		SIZE(ncclNet_v9_t, 160),
		NET_COMMON(ncclNet_v9_t),
		NET_V7(ncclNet_v9_t),
		OFF(ncclNet_v9_t, makeVDevice, 152),
	};

	(void)state;
	CHECK(facts);
}

static void test_v10(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetVDeviceProps_v10_t, 20),
		SIZE(ncclNetCommConfig_v10_t, 4),
		SIZE(ncclNetProperties_v10_t, 104),
		PROPS_V9(ncclNetProperties_v10_t),
		OFF(ncclNetProperties_v10_t, maxP2pBytes, 88),
		OFF(ncclNetProperties_v10_t, maxCollBytes, 96),
		SIZE(ncclNet_v10_t, 160),
		NET_COMMON(ncclNet_v10_t),
		NET_V7(ncclNet_v10_t),
		OFF(ncclNet_v10_t, makeVDevice, 152),
	};

	(void)state;
	CHECK(facts);
}

static void test_v11(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetVDeviceProps_v11_t, 20),
		SIZE(ncclNetCommConfig_v11_t, 4),
		SIZE(ncclNetCommAttr_v11_t, 16),
		SIZE(ncclNetAttr_v11_t, 44),
		OFF(ncclNetAttr_v11_t, sendCommAttr, 0),
		OFF(ncclNetAttr_v11_t, recvCommAttr, 16),
		OFF(ncclNetAttr_v11_t, op, 32),
		OFF(ncclNetAttr_v11_t, algo, 36),
		OFF(ncclNetAttr_v11_t, proto, 40),
		SIZE(ncclNetProperties_v11_t, 112),
		PROPS_V9(ncclNetProperties_v11_t),
		OFF(ncclNetProperties_v11_t, maxP2pBytes, 88),
		OFF(ncclNetProperties_v11_t, maxCollBytes, 96),
		OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104),
		SIZE(ncclNet_v11_t, 176),
		NET_COMMON(ncclNet_v11_t),
		NET_V7(ncclNet_v11_t),
		OFF(ncclNet_v11_t, makeVDevice, 152),
		OFF(ncclNet_v11_t, finalize, 160),
		OFF(ncclNet_v11_t, setNetAttr, 168),
	};

	(void)state;
	CHECK(facts);
}

static void test_v12(void **state)
{
	static const struct rn_abi_fact facts[] = {
		SIZE(ncclNetVDeviceProps_v12_t, 36),
		SIZE(ncclNetCommConfig_v12_t, 4),
		SIZE(ncclNetCommAttr_v12_t, 16),
		SIZE(ncclNetAttr_v12_t, 44),
		OFF(ncclNetAttr_v12_t, sendCommAttr, 0),
		OFF(ncclNetAttr_v12_t, recvCommAttr, 16),
		OFF(ncclNetAttr_v12_t, op, 32),
		OFF(ncclNetAttr_v12_t, algo, 36),
		OFF(ncclNetAttr_v12_t, proto, 40),
		SIZE(ncclNetProperties_v12_t, 128),
		PROPS_V9(ncclNetProperties_v12_t),
		OFF(ncclNetProperties_v12_t, maxP2pBytes, 104),
		OFF(ncclNetProperties_v12_t, maxCollBytes, 112),
		OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120),
		OFF(ncclNetProperties_v12_t, railId, 124),
		OFF(ncclNetProperties_v12_t, planeId, 126),
		SIZE(ncclNet_v12_t, 176),
		NET_COMMON(ncclNet_v12_t),
		NET_V7(ncclNet_v12_t),
		OFF(ncclNet_v12_t, makeVDevice, 152),
		OFF(ncclNet_v12_t, finalize, 160),
		OFF(ncclNet_v12_t, setNetAttr, 168),
		SIZE(ncclNetSGE_v12_t, 24),
	};

	(void)state;
	CHECK(facts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common), cmocka_unit_test(test_v6),
		cmocka_unit_test(test_v7),     cmocka_unit_test(test_v8),
		cmocka_unit_test(test_v9),     cmocka_unit_test(test_v10),
		cmocka_unit_test(test_v11),    cmocka_unit_test(test_v12),
	};

	return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}
