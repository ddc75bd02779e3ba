// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the environment parser (src/config.c). The input is split at '\n' into
 * "NAME=value" entries, handed to rn_config_parse as an environment array, and the result is
 * checked against the table: on success every member holds a value its entry allows, on
 * failure the struct is all zero. Also drives rn_config_acquire_env/rn_config_release.
 * Built as a libFuzzer binary with clang and as a plain driver (driver.c) everywhere.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/config.h"
#include "railnet/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RN_FUZZ_MAX_ENTRIES 64

/* Format every message (so format strings run under the sanitizers), then drop it. */
static void rn_fuzz_logger(int level, unsigned long flags, const char *file, int line,
			   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void rn_fuzz_logger(int level, unsigned long flags, const char *file, int line,
			   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
}

static void rn_fuzz_check(const struct rn_config *cfg, int ret)
{
	const unsigned char *raw = (const unsigned char *)cfg;
	size_t i;

	if (ret) {
		if (ret != -EINVAL && ret != -ENOMEM)
			abort();
		for (i = 0; i < sizeof(*cfg); i++)
			if (raw[i])
				abort(); /* a failed parse must leave nothing behind */
		return;
	}
	for (i = 0; i < rn_config_table_len; i++) {
		const struct rn_config_var *v = &rn_config_table[i];
		const char *p = (const char *)cfg + v->offset;
		size_t n = 0, max = v->max_len ? v->max_len : RN_CONFIG_STRING_MAX;
		char *s;
		bool b;
		int x;

		switch (v->type) {
		case RN_CFG_INT:
			memcpy(&x, p, sizeof(x));
			if (x < v->min || x > v->max)
				abort();
			break;
		case RN_CFG_ENUM:
			memcpy(&x, p, sizeof(x));
			while (v->words[n])
				n++;
			if (x < 0 || (size_t)x >= n)
				abort();
			break;
		case RN_CFG_BOOL:
			memcpy(&b, p, sizeof(b));
			if (b != true && b != false)
				abort();
			break;
		case RN_CFG_STRING:
			memcpy(&s, p, sizeof(s));
			if (!s || strlen(s) > max)
				abort();
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *env[RN_FUZZ_MAX_ENTRIES + 1];
	struct rn_config cfg;
	size_t n = 0, start = 0, i;
	char *buf;
	int ret;

	rn_log_set_logger(rn_fuzz_logger);
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (i = 0; i <= size && n < RN_FUZZ_MAX_ENTRIES; i++) {
		if (i == size || buf[i] == '\n') {
			buf[i] = '\0';
			if (i > start)
				env[n++] = buf + start;
			start = i + 1;
		}
	}
	env[n] = NULL;

	memset(&cfg, 0xa5, sizeof(cfg)); /* parse must overwrite all of it */
	ret = rn_config_parse(&cfg, env);
	rn_fuzz_check(&cfg, ret);
	if (!ret)
		rn_config_fini(&cfg);

	/* the process-wide copy: parse on first reference, free on last */
	if (size && (data[0] & 1)) {
		ret = rn_config_acquire_env(env);
		if (!ret) {
			if (!rn_config())
				abort();
			rn_fuzz_check(rn_config(), 0);
			rn_config_release();
		}
		if (rn_config())
			abort();
	}
	free(buf);
	return 0;
}
