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
#include <stdint.h>
#include <stdio.h>

enum rn_merge_mode { RN_MERGE_AUTO, RN_MERGE_PORTS, RN_MERGE_NONE };
enum rn_addr_family { RN_AF_INET, RN_AF_INET6 };

/*
 * Parsed configuration. String members point into storage owned by the struct (freed by
 * rn_config_fini). An "unset" integer whose NCCL meaning is "not given" is -1.
 */
struct rn_config {
	/* railnet's own */
	char *ibverbs_lib; /* RAILNET_IBVERBS_LIB ("" = libibverbs.so.1) */
	char *sysfs_root;  /* RAILNET_SYSFS_ROOT (default /sys) */
	int merge;	   /* RAILNET_MERGE: enum rn_merge_mode */

	/* NCCL_IB_* honoured with NCCL's meaning */
	char *ib_hca;		/* NCCL_IB_HCA ("" = all) */
	int ib_gid_index;	/* NCCL_IB_GID_INDEX (-1 = choose) */
	int ib_addr_family;	/* NCCL_IB_ADDR_FAMILY: enum rn_addr_family */
	char *ib_addr_range;	/* NCCL_IB_ADDR_RANGE ("" = any) */
	int ib_roce_version;	/* NCCL_IB_ROCE_VERSION_NUM (1 or 2) */
	int ib_timeout;		/* NCCL_IB_TIMEOUT */
	int ib_retry_cnt;	/* NCCL_IB_RETRY_CNT */
	int ib_sl;		/* NCCL_IB_SL (-1 = unset) */
	int ib_tc;		/* NCCL_IB_TC (-1 = unset) */
	int ib_pkey;		/* NCCL_IB_PKEY (pkey index) */
	int ib_qps_per_conn;	/* NCCL_IB_QPS_PER_CONNECTION (-1 = railnet's default) */
	int ib_split_data_on_qps; /* NCCL_IB_SPLIT_DATA_ON_QPS (-1 = railnet's default) */
	bool ib_disable;	/* NCCL_IB_DISABLE: railnet steps aside too */
};

/* Type of a table entry. */
enum rn_config_type { RN_CFG_INT, RN_CFG_BOOL, RN_CFG_ENUM, RN_CFG_STRING };

/* One table entry; the table itself is rn_config_table[] / rn_config_table_len. */
struct rn_config_var {
	const char *name;
	enum rn_config_type type;
	const char *def;	  /* default, as the user would write it */
	long long min, max;	  /* RN_CFG_INT bounds (inclusive) */
	const char *const *words; /* RN_CFG_ENUM: NULL-terminated allowed words, index = value */
	const char *help;
	size_t offset; /* into struct rn_config */
};

extern const struct rn_config_var rn_config_table[];
extern const size_t rn_config_table_len;

/*
 * Parse `envp` (NULL-terminated "NAME=value" strings; NULL means the process environment)
 * into `cfg`. Returns 0, or -EINVAL after one WARN per bad variable (all bad variables are
 * reported, not only the first). On failure cfg is left zeroed (nothing to fini).
 */
int rn_config_parse(struct rn_config *cfg, char *const *envp);
void rn_config_fini(struct rn_config *cfg);

/*
 * The process-wide configuration, parsed from the environment at the first successful
 * rn_config_acquire and released by the matching last rn_config_release (so a dlclose/
 * dlopen cycle or a changed environment between communicators starts fresh).
 * Thread-safe. rn_config() is valid between acquire and release.
 */
int rn_config_acquire(void);
void rn_config_release(void);
const struct rn_config *rn_config(void);

/* Write docs/env.md (Markdown) from the table. Returns 0 or -errno. */
int rn_config_write_markdown(FILE *out);

#endif /* RAILNET_CONFIG_H */
