// SPDX-License-Identifier: Apache-2.0
/* Test support: the capturing logger and environment helpers declared in rn_test.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/log.h"
#include "rn_test.h"

struct rn_test_log rn_test_log;

static void rn_test_logger(int level, unsigned long flags, const char *file, int line,
			   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void rn_test_logger(int level, unsigned long flags, const char *file, int line,
			   const char *fmt, ...)
{
	char msg[1024];
	size_t used;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == RN_LOG_WARN) {
		rn_test_log.warns++;
		snprintf(rn_test_log.last_warn, sizeof(rn_test_log.last_warn), "%s", msg);
	} else if (level == RN_LOG_INFO) {
		rn_test_log.infos++;
	}
	used = strlen(rn_test_log.all);
	snprintf(rn_test_log.all + used, sizeof(rn_test_log.all) - used, "%s\n", msg);
	if (getenv("RN_TEST_VERBOSE"))
		fprintf(stderr, "[log %d] %s\n", level, msg);
}

void rn_test_log_reset(void)
{
	memset(&rn_test_log, 0, sizeof(rn_test_log));
}

void rn_test_log_capture(void)
{
	rn_test_log_reset();
	rn_log_set_logger(rn_test_logger);
}

int rn_test_log_contains(const char *needle)
{
	return strstr(rn_test_log.all, needle) != NULL;
}

void rn_test_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(77);
}

static const char *rn_test_env(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v && *v ? v : fallback;
}

const char *rn_test_build_dir(void)
{
	return rn_test_env("RN_BUILD_DIR", "build");
}

const char *rn_test_source_dir(void)
{
	return rn_test_env("RN_SOURCE_DIR", ".");
}

const char *rn_test_tmp_dir(void)
{
	const char *v = getenv("TMPDIR");

	return v && v[0] == '/' ? v : "/tmp";
}

const char *rn_test_plugin_so(void)
{
	return rn_test_env("RN_PLUGIN_SO", "build/libnccl-net-railnet.so");
}
