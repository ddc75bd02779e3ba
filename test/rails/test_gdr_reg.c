// SPDX-License-Identifier: Apache-2.0
/*
 * RAILNET_GDR_POLICY where NCCL meets it: regMr and regMrDmaBuf of NCCL_PTR_CUDA buffers on a
 * send comm (src/net.c -> devtab.c -> gdr.c), for strict, warn and off. Run inside pod0 of
 * test/fixtures/small.spec by test/rails/scenarios.sh (softverbs, the pod's sysfs view and
 * topo.xml, its own network namespace): pod0's NICs sit on PCIe root r0 with gpu0
 * (0000:0f:00.0); gpu1 (0000:8d:00.0) sits on root r1. The CUDA driver is replaced through
 * cuda.h's seam: two host buffers are "device memory", one of each GPU, so the registration
 * itself (softverbs, host memory) succeeds whenever the policy lets it through.
 *
 * Checked per policy, with a connected send comm on device 0:
 *  - gpu0's buffer (same root): registered, no WARN, under every policy;
 *  - gpu1's buffer (another root): strict: -EPERM and one WARN naming both roots and the fix;
 *    warn: registered with one WARN, and no second WARN for the same GPU and NIC; off:
 *    registered, no WARN; the same through regMrDmaBuf (fd -1);
 *  - a host buffer: registered, never checked.
 * Without the pod's environment (RAILNET_TOPO_XML, SOFTVERBS_VIEW) it fails: it only makes
 * sense inside the pod.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "railnet/cuda.h"
#include "railnet/net.h"
#include "railnet/types.h"
#include "rn_test.h"

#define BUF (1u << 20)
#define GPU_NEAR "0000:0f:00.0" /* small.spec gpu0, root r0 with pod0's NICs */
#define GPU_FAR "0000:8d:00.0"	/* gpu1, root r1 */

static char *near_buf, *far_buf, *host_buf;

static int fake_init(unsigned int flags)
{
	(void)flags;
	return 0;
}

static int fake_version(int *v)
{
	*v = 12040;
	return 0;
}

static int fake_count(int *n)
{
	*n = 2;
	return 0;
}

static int fake_get(int *dev, int ordinal)
{
	*dev = ordinal;
	return ordinal >= 0 && ordinal < 2 ? 0 : 101;
}

static int fake_busid(char *busid, int len, int dev)
{
	snprintf(busid, (size_t)len, "%s", dev == 0 ? GPU_NEAR : GPU_FAR);
	return dev >= 0 && dev < 2 ? 0 : 101;
}

static int ordinal_of(uintptr_t p)
{
	if (p >= (uintptr_t)near_buf && p < (uintptr_t)near_buf + BUF)
		return 0;
	if (p >= (uintptr_t)far_buf && p < (uintptr_t)far_buf + BUF)
		return 1;
	return -1;
}

static int fake_attr(void *data, int attr, uintptr_t ptr)
{
	int o = ordinal_of(ptr);

	if (o < 0)
		return 1; /* CUDA_ERROR_INVALID_VALUE: not device memory */
	if (attr == RN_CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
		*(unsigned int *)data = RN_CU_MEMORYTYPE_DEVICE;
	else if (attr == RN_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		*(int *)data = o;
	else
		return 1;
	return 0;
}

static const struct rn_cuda_ops fake_ops = {
	.init = fake_init,
	.driver_get_version = fake_version,
	.device_get_count = fake_count,
	.device_get = fake_get,
	.device_get_pci_bus_id = fake_busid,
	.pointer_get_attribute = fake_attr,
};

struct pod_comms {
	struct rn_net_ctx *ctx;
	struct rn_listen_comm *l;
	struct rn_send_comm *s;
	struct rn_recv_comm *r;
};

/* init with this policy, a send and a receive comm on device 0 (connected to itself) */
static void open_comms(const char *policy, struct pod_comms *p)
{
	char handle[RN_NET_HANDLE_MAXSIZE];
	int n = 0;
	time_t t0 = time(NULL);

	memset(p, 0, sizeof(*p));
	setenv("RAILNET_GDR_POLICY", policy, 1);
	rn_cuda_set_ops(&fake_ops, 12040); /* again: the last finalize forgets the driver */
	rn_test_log_capture();
	assert_int_equal(rn_net_init(NULL, 1, RN_TRAFFIC_CLASS_UNDEF, &p->ctx), 0);
	assert_int_equal(rn_net_devices(&n), 0);
	if (n < 1)
		fail_msg("no device in this pod (run me inside small.spec's pod0):\n%s",
			 rn_test_log.all);
	memset(handle, 0, sizeof(handle));
	assert_int_equal(rn_net_listen(p->ctx, 0, handle, &p->l), 0);
	while (!p->s || !p->r) {
		if (!p->s)
			assert_int_equal(
				rn_net_connect(p->ctx, 0, RN_TRAFFIC_CLASS_UNDEF, handle, &p->s),
				0);
		if (!p->r)
			assert_int_equal(rn_net_accept(p->l, &p->r), 0);
		if (time(NULL) - t0 > 30)
			fail_msg("the connection to itself did not come up within 30 s");
	}
	rn_test_log_reset();
}

static void close_comms(struct pod_comms *p)
{
	assert_int_equal(rn_net_close_send(p->s), 0);
	assert_int_equal(rn_net_close_recv(p->r), 0);
	assert_int_equal(rn_net_close_listen(p->l), 0);
	assert_int_equal(rn_net_finalize(p->ctx), 0);
}

/* regMr (dmabuf: regMrDmaBuf with fd -1) of buf as `type`: the result, the mhandle released */
static int reg(struct pod_comms *p, void *buf, int type, bool dmabuf)
{
	void *mh = NULL;
	int rc = dmabuf ? rn_net_reg_mr_dmabuf(p->s, buf, BUF, type, 0, -1, &mh)
			: rn_net_reg_mr(p->s, buf, BUF, type, &mh);

	if (!rc)
		assert_int_equal(rn_net_dereg_mr(p->s, mh), 0);
	else
		assert_null(mh);
	return rc;
}

static void same_root_and_host(struct pod_comms *p)
{
	rn_test_log_reset();
	for (int dmabuf = 0; dmabuf < 2; dmabuf++) {
		assert_int_equal(reg(p, near_buf, RN_PTR_CUDA, dmabuf), 0);
		assert_int_equal(reg(p, host_buf, RN_PTR_HOST, dmabuf), 0);
		assert_int_equal(reg(p, far_buf, RN_PTR_HOST, dmabuf), 0); /* as host: unchecked */
	}
	RN_ASSERT_NO_WARN();
	if (rn_test_log_contains("does not check"))
		fail_msg("a CUDA registration went unchecked:\n%s", rn_test_log.all);
}

static void test_strict(void **state)
{
	struct pod_comms p;

	(void)state;
	open_comms("strict", &p);
	same_root_and_host(&p);
	for (int dmabuf = 0; dmabuf < 2; dmabuf++) {
		rn_test_log_reset();
		assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, dmabuf), -EPERM);
		assert_int_equal(rn_test_log.warns, 1);
		if (!strstr(rn_test_log.last_warn, GPU_FAR) ||
		    !strstr(rn_test_log.last_warn, "refused") ||
		    !strstr(rn_test_log.last_warn, "RAILNET_GDR_POLICY=strict") ||
		    !strstr(rn_test_log.last_warn, "0000:80:01.1") ||
		    !strstr(rn_test_log.last_warn, "0000:00:01.1"))
			fail_msg("strict refusal WARN lacks the GPU, both roots or the policy: %s",
				 rn_test_log.last_warn);
	}
	rn_test_log_reset();
	close_comms(&p);
}

static void test_warn(void **state)
{
	struct pod_comms p;

	(void)state;
	open_comms("warn", &p);
	same_root_and_host(&p);
	assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, false), 0);
	if (rn_test_log.warns != 1)
		fail_msg("warn policy: %d WARNs for the first registration across roots; log:\n%s",
			 rn_test_log.warns, rn_test_log.all);
	if (!strstr(rn_test_log.last_warn, GPU_FAR) ||
	    !strstr(rn_test_log.last_warn, "RAILNET_GDR_POLICY=warn"))
		fail_msg("warn-policy WARN lacks the GPU or the policy: %s", rn_test_log.last_warn);
	/* said once per GPU and NIC */
	assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, false), 0);
	assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, true), 0);
	assert_int_equal(rn_test_log.warns, 1);
	rn_test_log_reset();
	close_comms(&p);
}

static void test_off(void **state)
{
	struct pod_comms p;

	(void)state;
	open_comms("off", &p);
	same_root_and_host(&p);
	assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, false), 0);
	assert_int_equal(reg(&p, far_buf, RN_PTR_CUDA, true), 0);
	RN_ASSERT_NO_WARN();
	assert_false(rn_test_log_contains("no usable CUDA driver")); /* the fake one was used */
	close_comms(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict),
		cmocka_unit_test(test_warn),
		cmocka_unit_test(test_off),
	};

	if (!getenv("RAILNET_TOPO_XML") || !getenv("SOFTVERBS_VIEW")) {
		fprintf(stderr,
			"test_gdr_reg: run inside small.spec's pod0 (softverbs-fabric exec; "
			"test/rails/scenarios.sh does)\n");
		return 1;
	}
	near_buf = aligned_alloc(4096, BUF);
	far_buf = aligned_alloc(4096, BUF);
	host_buf = aligned_alloc(4096, BUF);
	if (!near_buf || !far_buf || !host_buf)
		return 1;
	memset(near_buf, 1, BUF);
	memset(far_buf, 2, BUF);
	memset(host_buf, 3, BUF);
	return cmocka_run_group_tests_name("gdr_reg", tests, NULL, NULL);
}
