// SPDX-License-Identifier: Apache-2.0
/*
 * log.c owns where railnet's messages go: NCCL's logger while one is installed, stderr
 * otherwise. It must not allocate or log recursively, and it keeps errno intact.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "railnet/log.h"

static rn_logger_fn rn_logger; /* accessed with __atomic builtins */

void rn_log_set_logger(rn_logger_fn fn)
{
	__atomic_store_n(&rn_logger, fn, __ATOMIC_RELEASE);
}

rn_logger_fn rn_log_get_logger(void)
{
	return __atomic_load_n(&rn_logger, __ATOMIC_ACQUIRE);
}

/*
 * Level for stderr output, from NCCL_DEBUG (VERSION, WARN, INFO, TRACE; default WARN, as
 * railnet's warnings before NCCL hands us its logger are exactly the ones users need).
 * Read on every call: this path only runs before init and after finalize, so it is cold.
 */
int rn_log_level_from_env(void)
{
	const char *v = getenv("NCCL_DEBUG");

	if (!v || !*v)
		return RN_LOG_WARN;
	if (!strcasecmp(v, "VERSION"))
		return RN_LOG_VERSION;
	if (!strcasecmp(v, "INFO"))
		return RN_LOG_INFO;
	if (!strcasecmp(v, "TRACE"))
		return RN_LOG_TRACE;
	if (!strcasecmp(v, "NONE"))
		return RN_LOG_NONE;
	return RN_LOG_WARN;
}

static const char *rn_level_name(int level)
{
	switch (level) {
	case RN_LOG_WARN:
		return "WARN";
	case RN_LOG_INFO:
		return "INFO";
	case RN_LOG_TRACE:
		return "TRACE";
	case RN_LOG_ABORT:
		return "ABORT";
	default:
		return "VERSION";
	}
}

void rn_vlog(int level, unsigned long flags, const char *where, int line, const char *fmt,
	     va_list ap)
{
	int saved = errno;
	rn_logger_fn fn = rn_log_get_logger();
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (fn) {
		fn(level, flags, where, line, "%s", msg);
	} else if (level <= rn_log_level_from_env() && level != RN_LOG_NONE) {
		char host[64] = "?";

		gethostname(host, sizeof(host) - 1);
		fprintf(stderr, "%s:%d:%d [railnet] NCCL %s %s\n", host, (int)getpid(),
			(int)syscall(SYS_gettid), rn_level_name(level), msg);
	}
	errno = saved;
}

void rn_log(int level, unsigned long flags, const char *where, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rn_vlog(level, flags, where, line, fmt, ap);
	va_end(ap);
}
