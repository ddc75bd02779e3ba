// SPDX-License-Identifier: Apache-2.0
/*
 * src/plugin.c's conversion of railnet's -errno into ncclResult_t (rn_nccl_result, through
 * include/railnet/nccl_result.h), as a table: the classes docs/data-path.md and net.h promise
 * (a peer or network failure is ncclRemoteError, NCCL's misuse ncclInternalError, a value out
 * of range ncclInvalidArgument, the user's environment ncclInvalidUsage, every other OS,
 * library or verbs failure ncclSystemError and never ncclInvalidArgument), then every errno
 * from 1 to 4095 against that table, so that a new case in the switch cannot go unnoticed.
 * plugin.c is compiled into this binary (test/unit/nccl_result.cmake).
 */
#include <errno.h>
#include <stdio.h>

#include "railnet/nccl_result.h"
#include "railnet/types.h"
#include "rn_test.h"

struct row {
	int err; /* positive errno; the function gets -err */
	ncclResult_t want;
	const char *why;
};

static const struct row rows[] = {
	/* the peer or the network: a connector found malformed, a refusal, a dead comm */
	{ EPROTO, ncclRemoteError, "malformed peer (handshake)" },
	{ ECONNREFUSED, ncclRemoteError, "the acceptor refused / closed listener" },
	{ EREMOTEIO, ncclRemoteError, "error completion, dead link (keepalive)" },
	{ ECONNRESET, ncclRemoteError, "peer closed its out-of-band socket" },
	{ ECONNABORTED, ncclRemoteError, "connection aborted" },
	{ EPIPE, ncclRemoteError, "peer went away mid-write" },
	{ ETIMEDOUT, ncclRemoteError, "RAILNET_CONNECT_TIMEOUT" },
	{ EHOSTUNREACH, ncclRemoteError, "peer unreachable" },
	/* NCCL's misuse of the API */
	{ EFAULT, ncclInternalError, "a NULL pointer" },
	{ EBADF, ncclInternalError, "a handle railnet did not give out, a call before init" },
	/* a value out of range */
	{ EINVAL, ncclInvalidArgument, "dev, n, size, type, vdev children" },
	{ ERANGE, ncclInvalidArgument, "a size NCCL's type cannot hold" },
	/* the user's setting */
	{ RN_ECONFIG, ncclInvalidUsage, "a bad environment value" },
	{ RN_EDISABLED, ncclInvalidUsage, "NCCL_IB_DISABLE=1" },
	{ EPERM, ncclInvalidUsage, "RAILNET_GDR_POLICY=strict refused a GPU buffer" },
	/* the OS, a library, the hardware (verbs failures included) */
	{ ENOENT, ncclSystemError, "no libibverbs" },
	{ ENOMEM, ncclSystemError, "out of memory (ibv_create_qp)" },
	{ EOPNOTSUPP, ncclSystemError, "not supported by the library" },
	{ ENOSYS, ncclSystemError, "missing call" },
	{ EIO, ncclSystemError, "I/O error" },
	{ ENODEV, ncclSystemError, "the device is gone" },
	{ EAGAIN, ncclSystemError, "a verbs call said try again" },
	{ EBUSY, ncclSystemError, "resource busy" },
	{ ENOSPC, ncclSystemError, "no room (requests in use)" },
	{ EMFILE, ncclSystemError, "out of file descriptors" },
	{ EACCES, ncclSystemError, "access denied (memlock, device file)" },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static ncclResult_t expected(int err)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].err == err)
			return rows[i].want;
	return ncclSystemError;
}

static void test_table(void **state)
{
	(void)state;
	assert_int_equal(rn_nccl_result(0), ncclSuccess);
	for (size_t i = 0; i < NROWS; i++)
		if (rn_nccl_result(-rows[i].err) != rows[i].want)
			fail_msg("-%d (%s) became %d, expected %d", rows[i].err, rows[i].why,
				 rn_nccl_result(-rows[i].err), rows[i].want);
}

/* Every other negative errno is ncclSystemError: never ncclInvalidArgument or success. */
static void test_every_errno(void **state)
{
	(void)state;
	for (int e = 1; e < 4096; e++)
		if (rn_nccl_result(-e) != expected(e))
			fail_msg("-%d became %d, expected %d", e, rn_nccl_result(-e), expected(e));
}

/* A positive return is a railnet bug, not an errno: ncclInternalError whatever its value. */
static void test_positive(void **state)
{
	(void)state;
	assert_int_equal(rn_nccl_result(1), ncclInternalError);
	assert_int_equal(rn_nccl_result(EINVAL), ncclInternalError);
	assert_int_equal(rn_nccl_result(ECONNRESET), ncclInternalError);
	assert_int_equal(rn_nccl_result(1 << 30), ncclInternalError);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_every_errno),
		cmocka_unit_test(test_positive),
	};

	return cmocka_run_group_tests_name("nccl_result", tests, NULL, NULL);
}
