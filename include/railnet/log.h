/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging. Messages go to the logger NCCL passed to init; before init (and after the last
 * finalize) they go to stderr, filtered by NCCL_DEBUG the way NCCL filters its own output.
 * Every message carries the "NET/railnet" prefix. Nothing here allocates; errno is preserved.
 */
#ifndef RAILNET_LOG_H
#define RAILNET_LOG_H

#include <stdarg.h>

/* Levels and subsystem bits have NCCL's values (ncclDebugLogLevel / ncclDebugLogSubSys). */
enum rn_log_level {
	RN_LOG_NONE = 0,
	RN_LOG_VERSION = 1,
	RN_LOG_WARN = 2,
	RN_LOG_INFO = 3,
	RN_LOG_ABORT = 4,
	RN_LOG_TRACE = 5,
};

enum rn_log_subsys {
	RN_SUB_INIT = 0x1,
	RN_SUB_P2P = 0x4,
	RN_SUB_NET = 0x10,
	RN_SUB_GRAPH = 0x20,
	RN_SUB_ENV = 0x80,
	RN_SUB_ALLOC = 0x100,
	RN_SUB_PROXY = 0x400,
	RN_SUB_BOOTSTRAP = 0x1000,
	RN_SUB_REG = 0x2000,
	RN_SUB_ALL = ~0,
};

/* Same shape as ncclDebugLogger_t. */
typedef void (*rn_logger_fn)(int level, unsigned long flags, const char *file, int line,
			     const char *fmt, ...);

/*
 * Install the logger (NULL: back to stderr). Called by plugin.c at init and finalize.
 * Thread-safe; a message in flight uses either the old or the new logger.
 */
void rn_log_set_logger(rn_logger_fn fn);
rn_logger_fn rn_log_get_logger(void);
/* The level NCCL_DEBUG asks for (VERSION, WARN, INFO, TRACE, NONE; default and unknown: WARN). */
int rn_log_level_from_env(void);

void rn_log(int level, unsigned long flags, const char *where, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void rn_vlog(int level, unsigned long flags, const char *where, int line, const char *fmt,
	     va_list ap) __attribute__((format(printf, 5, 0)));

#define RN_LOG_PREFIX "NET/railnet : "

#define RN_WARN(fmt, ...) \
	rn_log(RN_LOG_WARN, RN_SUB_ALL, __FILE__, __LINE__, RN_LOG_PREFIX fmt, ##__VA_ARGS__)
#define RN_INFO(subsys, fmt, ...) \
	rn_log(RN_LOG_INFO, (subsys), __func__, __LINE__, RN_LOG_PREFIX fmt, ##__VA_ARGS__)
#ifdef RN_DEBUG_TRACE
#define RN_TRACE(subsys, fmt, ...) \
	rn_log(RN_LOG_TRACE, (subsys), __func__, __LINE__, RN_LOG_PREFIX fmt, ##__VA_ARGS__)
#else
#define RN_TRACE(subsys, fmt, ...)                                                              \
	do {                                                                                    \
		if (0)                                                                          \
			rn_log(RN_LOG_TRACE, (subsys), __func__, __LINE__, fmt, ##__VA_ARGS__); \
	} while (0)
#endif

#endif /* RAILNET_LOG_H */
