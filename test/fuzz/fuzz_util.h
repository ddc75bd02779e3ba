/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the fuzz targets share: rn_fz_fail (say what broke, prefixed with the target's name,
 * and abort so that the fuzzer keeps the input) and rn_fz_logger (railnet's logger for a
 * target: every message is formatted, so that format strings run under the sanitizers, then
 * dropped; WARNs are counted in rn_fz_warns). Define RN_FZ_NAME ("fuzz_topo") first.
 */
#ifndef RN_FUZZ_UTIL_H
#define RN_FUZZ_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "railnet/log.h"

#ifndef RN_FZ_NAME
#error "define RN_FZ_NAME before including fuzz_util.h"
#endif

static int rn_fz_warns __attribute__((unused));

static void rn_fz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn, unused));

static void rn_fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, RN_FZ_NAME ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static void rn_fz_logger(int level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6), unused));
static void rn_fz_logger(int level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rn_fz_warns += level == RN_LOG_WARN;
}

#endif /* RN_FUZZ_UTIL_H */
