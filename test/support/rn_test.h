/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared test support: a capturing logger (tests fail on an unexpected WARN), environment
 * arrays, and skip (exit 77) with a reason.
 */
#ifndef RN_TEST_H
#define RN_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Capture every railnet log message. Installed by rn_test_log_capture(). */
struct rn_test_log {
	int warns;	      /* WARN messages since the last reset */
	int infos;	      /* INFO messages since the last reset */
	char last_warn[1024]; /* text of the last WARN */
	char all[16384];      /* every message, newline-separated, truncated at the end */
};

extern struct rn_test_log rn_test_log;

/* Route railnet's logger to the capture buffer (and reset it). */
void rn_test_log_capture(void);
void rn_test_log_reset(void);
/* 1 if any captured message contains `needle`. */
int rn_test_log_contains(const char *needle);

/* Fails the current test if a WARN arrived that the test did not expect. */
#define RN_ASSERT_NO_WARN()                                                     \
	do {                                                                    \
		if (rn_test_log.warns)                                          \
			fail_msg("unexpected WARN: %s", rn_test_log.last_warn); \
	} while (0)

/* Print the reason on stderr and exit 77 (CTest SKIP_RETURN_CODE). */
void rn_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Path helpers from the CTest environment (RN_BUILD_DIR, RN_SOURCE_DIR, RN_PLUGIN_SO). */
const char *rn_test_build_dir(void);
const char *rn_test_source_dir(void);
const char *rn_test_plugin_so(void);
/* Where scratch folders go: $TMPDIR when it is an absolute path, else /tmp. */
const char *rn_test_tmp_dir(void);

#endif
