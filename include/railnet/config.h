/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration: one const table in src/config.c describes every environment variable
 * railnet reads (name, type, default as a string, bounds or allowed words, help, offset into
 * struct rn_config). Code reads struct rn_config and never calls getenv.
 *
 * Parsing is strict: a value that is not a number, out of bounds, or not one of the allowed
 * words makes the parse fail with one WARN naming the variable, the value and what is allowed.
 * Values that differ from the default are logged at INFO (subsystem ENV).
 */
#ifndef RAILNET_CONFIG_H
#define RAILNET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rn_merge_mode { RN_MERGE_AUTO, RN_MERGE_PORTS, RN_MERGE_NONE };
enum rn_addr_family { RN_AF_INET, RN_AF_INET6 };
enum rn_gdr_policy { RN_GDR_STRICT, RN_GDR_WARN, RN_GDR_OFF };

/* Longest string value accepted unless an entry sets a smaller max_len (PATH_MAX - 1). */
#define RN_CONFIG_STRING_MAX 4095

/*
 * Parsed configuration. String members are never NULL after a successful parse; they point
 * into storage owned by the struct (freed by rn_config_fini). Integers whose NCCL meaning is
 * "not given" hold -1 (documented per field).
 */
struct rn_config {
	/* railnet's own */
	char *ibverbs_lib;   /* RAILNET_IBVERBS_LIB ("" = libibverbs.so.1) */
	char *sysfs_root;    /* RAILNET_SYSFS_ROOT (default /sys) */
	int merge;	     /* RAILNET_MERGE: enum rn_merge_mode */
	int connect_timeout; /* RAILNET_CONNECT_TIMEOUT, seconds */
	char *stats_path;    /* RAILNET_STATS ("" = no file; %h, %p expanded by stats.c) */
	int stats_interval;  /* RAILNET_STATS_INTERVAL, seconds (0 = only at finalize) */
	int gdr_policy;	     /* RAILNET_GDR_POLICY: enum rn_gdr_policy */
	char *topo_xml;	     /* RAILNET_TOPO_XML ("" = hwloc discovers the machine) */
	int keepalive_ms;    /* RAILNET_KEEPALIVE_MS (0 = no probes) */
	int flush;	     /* RAILNET_FLUSH: enum rn_flush_mode (xfer.h) */

	/* NCCL's variables, honoured with NCCL's meaning */
	bool ib_disable;	   /* NCCL_IB_DISABLE: railnet steps aside too */
	char *ib_hca;		   /* NCCL_IB_HCA ("" = all) */
	int ib_gid_index;	   /* NCCL_IB_GID_INDEX (-1 = choose) */
	int ib_addr_family;	   /* NCCL_IB_ADDR_FAMILY: enum rn_addr_family */
	char *ib_addr_range;	   /* NCCL_IB_ADDR_RANGE ("" = any) */
	int ib_roce_version;	   /* NCCL_IB_ROCE_VERSION_NUM (1 or 2) */
	int ib_tc;		   /* NCCL_IB_TC (-1 = comm trafficClass, else 0) */
	int ib_sl;		   /* NCCL_IB_SL (-1 = comm trafficClass, else 0) */
	int ib_timeout;		   /* NCCL_IB_TIMEOUT (1..31) */
	int ib_retry_cnt;	   /* NCCL_IB_RETRY_CNT (0..7) */
	int ib_pkey;		   /* NCCL_IB_PKEY (pkey *index*) */
	int ib_qps_per_conn;	   /* NCCL_IB_QPS_PER_CONNECTION (QPs per port) */
	bool ib_split_data_on_qps; /* NCCL_IB_SPLIT_DATA_ON_QPS (0 = round-robin per message) */
	bool ib_use_inline;	   /* NCCL_IB_USE_INLINE */
	char *socket_ifname;	   /* NCCL_SOCKET_IFNAME ("" = NCCL's interface order) */
};

/* Type of a table entry, and the C type of its struct rn_config member. */
enum rn_config_type {
	RN_CFG_INT,    /* int; decimal or 0x hex, within [min, max] */
	RN_CFG_BOOL,   /* bool; exactly "0" or "1" */
	RN_CFG_ENUM,   /* int; index of the word in words[] */
	RN_CFG_STRING, /* char *; at most max_len bytes, no control characters, then check() */
};

/*
 * One table entry; the table itself is rn_config_table[] / rn_config_table_len.
 * The documentation of a variable is help, followed (when pending is set) by the sentence
 * "(parsed and validated now; takes effect when <pending> lands)" — generated, so the docs
 * cannot claim a feature that does not exist yet. Remove .pending when the feature lands.
 */
struct rn_config_var {
	const char *name;
	enum rn_config_type type;
	const char *def;	  /* default, as the user would write it */
	long long min, max;	  /* RN_CFG_INT bounds (inclusive) */
	const char *const *words; /* RN_CFG_ENUM: NULL-terminated allowed words, index = value */
	bool icase;		  /* RN_CFG_ENUM: words match in any case (NCCL's own: exact) */
	size_t max_len;		  /* RN_CFG_STRING: 0 means RN_CONFIG_STRING_MAX */
	const char *syntax;	  /* RN_CFG_STRING: what a value looks like (docs, WARNs) */
	/*
	 * RN_CFG_STRING: optional structural check after the length and character checks.
	 * Returns 0, or -EINVAL with a reason (no variable name, no value) written to why.
	 */
	int (*check)(const char *value, char *why, size_t why_len);
	const char *help;
	const char *pending; /* feature this waits for, or NULL when it is in effect */
	size_t offset;	     /* into struct rn_config */
};

extern const struct rn_config_var rn_config_table[];
extern const size_t rn_config_table_len;

/*
 * Parse `envp` (NULL-terminated "NAME=value" strings; NULL means the process environment)
 * into `cfg`. When a name appears twice the first wins, as with getenv. Returns 0; -EINVAL
 * after one WARN per bad variable (all bad variables are reported, not only the first);
 * -ENOMEM. On failure cfg is left zeroed (nothing to fini). An unknown RAILNET_* name (a typo)
 * gets one WARN naming the closest known variable and is otherwise ignored.
 */
int rn_config_parse(struct rn_config *cfg, char *const *envp);
/* Free what rn_config_parse allocated and zero cfg. Safe on a zeroed struct. */
void rn_config_fini(struct rn_config *cfg);

/*
 * The process-wide configuration, parsed from the environment at the first successful
 * rn_config_acquire and released by the matching last rn_config_release (so a dlclose/
 * dlopen cycle or a changed environment between communicators starts fresh).
 * Thread-safe (one mutex; never called on the data path). rn_config() is valid between
 * acquire and release and returns NULL outside. Install the logger (rn_log_set_logger)
 * before the first acquire so that WARN and INFO lines reach NCCL's log.
 * rn_config_acquire_env is the same with an explicit environment, used only when it is the
 * first reference (tests, tools); later acquires just take a reference.
 */
int rn_config_acquire(void);
int rn_config_acquire_env(char *const *envp);
void rn_config_release(void);
const struct rn_config *rn_config(void);

/* Write docs/env.md (Markdown) from the table. Returns 0 or -errno. */
int rn_config_write_markdown(FILE *out);

#endif /* RAILNET_CONFIG_H */
