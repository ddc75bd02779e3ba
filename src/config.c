// SPDX-License-Identifier: Apache-2.0
/*
 * config.c owns the one table of environment variables railnet reads, their strict parsing
 * into struct rn_config, the process-wide refcounted copy, and docs/env.md generation. It is
 * the only file that reads the environment for configuration; it must not interpret values
 * beyond their syntax (HCA matching, GID choice and the rest belong to their modules). A value
 * with a parser of its own (NCCL_IB_HCA: hca.c, NCCL_IB_ADDR_RANGE: gid.c) is checked by
 * calling that parser, so what is accepted here is never refused later.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "railnet/config.h"
#include "railnet/gid.h"
#include "railnet/hca.h"
#include "railnet/log.h"

extern char **environ;

/* Member offset, checked at compile time against the C type the entry's parser writes. */
#define RN_MEMBER(field, ctype)                                                                   \
	(offsetof(struct rn_config, field) +                                                      \
	 0 * sizeof(struct {                                                                      \
		 _Static_assert(_Generic(((struct rn_config *)0)->field, ctype : 1, default : 0), \
				"struct rn_config." #field " is not " #ctype);                    \
		 int rn_unused;                                                                   \
	 }))

#define RN_PREFIX_OWN "RAILNET_"

/* ASCII classes: the host application may have set a locale, and values must not depend on it. */
static bool rn_isdigit(int c)
{
	return c >= '0' && c <= '9';
}

static bool rn_isxdigit(int c)
{
	return rn_isdigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int rn_toupper(int c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* ---- structural checks for string values ---------------------------------------------- */

static int rn_check_nonempty(const char *v, char *why, size_t len)
{
	if (*v)
		return 0;
	snprintf(why, len, "empty value");
	return -EINVAL;
}

/* RAILNET_STATS: a path whose '%' sequences are %h (host), %p (pid) or %% (stats.c). */
static int rn_check_stats_path(const char *v, char *why, size_t len)
{
	for (const char *p = strchr(v, '%'); p; p = strchr(p + 2, '%')) {
		if (p[1] != 'h' && p[1] != 'p' && p[1] != '%') {
			snprintf(why, len,
				 "'%%%.1s' at byte %zu: allowed are %%h (host name), %%p "
				 "(process id) and %%%% (a '%%')",
				 p[1] ? p + 1 : "", (size_t)(p - v));
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * NCCL's interface list syntax (parseStringList): an optional '^' (exclude), then an optional
 * '=' (exact names), then comma-separated entries "name[:n]" with decimal or empty numeric
 * fields. Only the structure is checked; matching belongs to the modules. NCCL_IB_HCA, the
 * same syntax with more fields, is checked by its own parser (rn_hca_parse).
 */
static int rn_check_list(const char *v, int max_fields, size_t max_name, char *why, size_t len)
{
	const char *p = v, *start = v;
	int entry = 1;

	if (*p == '^')
		p++;
	if (*p == '=')
		p++;
	if (!*p) {
		snprintf(why, len, "no entry after '%.*s'", (int)(p - start), start);
		return -EINVAL;
	}
	while (*p) {
		size_t name_len = 0;
		int fields = 1;

		while (*p && *p != ',' && *p != ':') {
			if (!rn_hca_name_char((unsigned char)*p)) {
				snprintf(why, len,
					 "character '%c' at byte %zu is not allowed in a name", *p,
					 (size_t)(p - start));
				return -EINVAL;
			}
			name_len++;
			p++;
		}
		if (!name_len) {
			snprintf(why, len, "entry %d has no name", entry);
			return -EINVAL;
		}
		if (name_len > max_name) {
			snprintf(why, len, "name of entry %d is longer than %zu characters", entry,
				 max_name);
			return -EINVAL;
		}
		while (*p == ':') {
			if (++fields > max_fields) {
				snprintf(why, len, "entry %d has more than %d ':'-separated fields",
					 entry, max_fields);
				return -EINVAL;
			}
			for (p++; *p && *p != ',' && *p != ':'; p++) {
				if (!rn_isdigit((unsigned char)*p)) {
					snprintf(why, len, "entry %d: '%c' in a numeric field",
						 entry, *p);
					return -EINVAL;
				}
			}
		}
		if (*p == ',') {
			p++;
			entry++;
			if (!*p) {
				snprintf(why, len, "trailing ','");
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* NCCL_IB_HCA: hca.c's parser, so that a value discovery would refuse is refused here. */
static int rn_check_hca(const char *v, char *why, size_t len)
{
	struct rn_hca_filter f;

	return rn_hca_parse(v, &f, why, len);
}

/* NCCL_SOCKET_IFNAME entries are interface names (IFNAMSIZ - 1 characters). */
static int rn_check_ifname(const char *v, char *why, size_t len)
{
	return *v ? rn_check_list(v, 2, 15, why, len) : 0;
}

/* NCCL_IB_ADDR_RANGE: gid.c's parser ("address/prefix", IPv4 or IPv6). */
static int rn_check_cidr(const char *v, char *why, size_t len)
{
	struct rn_addr_range r;

	return rn_addr_range_parse(v, &r, why, len);
}

/* ---- the table -------------------------------------------------------------------------- */

static const char *const rn_merge_words[] = {
	[RN_MERGE_AUTO] = "auto", [RN_MERGE_PORTS] = "ports", [RN_MERGE_NONE] = "none", NULL
};
static const char *const rn_flush_words[] = {
	"auto",
	"always",
	"off",
	NULL,
};
static const char *const rn_gdr_words[] = {
	[RN_GDR_STRICT] = "strict", [RN_GDR_WARN] = "warn", [RN_GDR_OFF] = "off", NULL
};
static const char *const rn_family_words[] = {
	[RN_AF_INET] = "AF_INET", [RN_AF_INET6] = "AF_INET6", NULL
};

const struct rn_config_var rn_config_table[] = {
	/* railnet's own */
	{
		.name = "RAILNET_IBVERBS_LIB",
		.type = RN_CFG_STRING,
		.def = "",
		.syntax = "library file name or path",
		.help = "libibverbs to dlopen, by file name (searched like any dlopen name) or "
			"path. Empty: `libibverbs.so.1`. Tests point it at softverbs.",
		.offset = RN_MEMBER(ibverbs_lib, char *),
	},
	{
		.name = "RAILNET_SYSFS_ROOT",
		.type = RN_CFG_STRING,
		.def = "/sys",
		.syntax = "directory",
		.check = rn_check_nonempty,
		.help = "Directory read in place of `/sys` for RDMA device information "
			"(`class/infiniband/<dev>/...` below it: PCI path and NUMA node, GID "
			"types and netdevs, and `module/ib_core/parameters/netns_mode`). A test "
			"seam for the pod views softverbs-fabric writes; leave it unset in "
			"production.",
		.offset = RN_MEMBER(sysfs_root, char *),
	},
	{
		.name = "RAILNET_MERGE",
		.type = RN_CFG_ENUM,
		.def = "auto",
		.words = rn_merge_words,
		.icase = true,
		.help = "How the ports (PCI functions) of one NIC are offered to NCCL. railnet's "
			"own merging groups the usable ports of one PCI device: the ports of one "
			"function and the functions whose PCI paths differ only in the function "
			"digit (the two PFs of a dual-port NIC), same link layer, same PCIe root, "
			"at most 8; VFs and separate NICs are never merged. `auto`: railnet "
			"merges that way only for NCCL < 2.24 (API v6-v8, no makeVDevice) and "
			"offers one device per port to newer NCCL, whose makeVDevice requests it "
			"validates; `ports`: railnet merges for every NCCL; `none`: one device "
			"per port, and makeVDevice requests are refused.",
		.offset = RN_MEMBER(merge, int),
	},
	{
		.name = "RAILNET_CONNECT_TIMEOUT",
		.type = RN_CFG_INT,
		.def = "120",
		.min = 1,
		.max = 86400,
		.help = "Seconds a connect or accept waits for the peer to complete the "
			"out-of-band handshake before it fails with an error naming the peer.",
		.offset = RN_MEMBER(connect_timeout, int),
	},
	{
		.name = "RAILNET_STATS",
		.type = RN_CFG_STRING,
		.def = "",
		.syntax = "file path; %h host name, %p process id, %% a '%'",
		.check = rn_check_stats_path,
		.help = "File that receives per-port and per-connection counters (bytes, "
			"messages, completions, errors, failovers) at the last finalize, and every "
			"RAILNET_STATS_INTERVAL seconds. JSON with the host, pid, time, NCCL net "
			"API version and commIds; a path ending in `.prom` gets Prometheus' text "
			"format instead (per-port counters labelled host, device, port and rail, "
			"for node-exporter's textfile collector). Written whole each time (a "
			"temporary file renamed over it). Give ranks their own file with %h and "
			"%p (`/var/run/railnet/%h-%p.prom`). Empty: no file.",
		.offset = RN_MEMBER(stats_path, char *),
	},
	{
		.name = "RAILNET_STATS_INTERVAL",
		.type = RN_CFG_INT,
		.def = "0",
		.min = 0,
		.max = 86400,
		.help = "Seconds between snapshots of RAILNET_STATS while the plugin is in use "
			"(live comms included, from a thread of railnet's own); 0: the file is "
			"written at the last finalize only.",
		.offset = RN_MEMBER(stats_interval, int),
	},
	{
		.name = "RAILNET_KEEPALIVE_MS",
		.type = RN_CFG_INT,
		.def = "1000",
		.min = 0,
		.max = 3600000,
		.help = "Milliseconds a comm with work outstanding may see no completion before "
			"it probes the peer with a zero-byte RDMA write on each live QP, so that a "
			"peer whose link died is noticed within NCCL_IB_TIMEOUT x "
			"NCCL_IB_RETRY_CNT "
			"instead of never. (A peer whose process died is noticed sooner, through "
			"its closed out-of-band socket; docs/data-path.md.) 0: never probe: a "
			"frozen peer with a live link and process is then waited for without "
			"bound.",
		.offset = RN_MEMBER(keepalive_ms, int),
	},
	{
		.name = "RAILNET_FLUSH",
		.type = RN_CFG_ENUM,
		.def = "auto",
		.words = rn_flush_words,
		.icase = true,
		.help = "What iflush does. `auto`: an RDMA READ through a QP connected to itself "
			"when the received buffer is GPU memory (NCCL asks only when GPUDirect "
			"RDMA was used and a flush is needed); `always`: for host memory too (a "
			"test seam); `off`: never (iflush returns no request).",
		.offset = RN_MEMBER(flush, int),
	},
	{
		.name = "RAILNET_GDR_POLICY",
		.type = RN_CFG_ENUM,
		.def = "strict",
		.words = rn_gdr_words,
		.icase = true,
		.help = "A CUDA buffer registered on a NIC that does not share a PCIe root with "
			"the buffer's GPU (railnet offers NCCL_PTR_CUDA only on NICs next to a "
			"usable GPU, so this happens when something overrides that). `strict`: "
			"the registration fails with one line naming the GPU, its root, the NIC, "
			"its root and the fix; `warn`: it is registered, with one WARN per GPU and "
			"NIC pair; `off`: registered without the check. Default strict: GPUDirect "
			"across roots goes through the host bridge, slower than staging through "
			"host memory on most servers, and a silent slowdown is the failure users "
			"could not see (docs/topology.md).",
		.offset = RN_MEMBER(gdr_policy, int),
	},
	{
		.name = "RAILNET_TOPO_XML",
		.type = RN_CFG_STRING,
		.def = "",
		.syntax = "file path",
		.help = "hwloc XML file to take the machine's topology from instead of "
			"discovering it (`lstopo --of xml` of a node, or softverbs-fabric's "
			"per-node topo.xml). Empty: hwloc discovers this machine. A file that is "
			"missing, malformed or has no PCI devices gives one WARN and host memory "
			"only (docs/topology.md).",
		.offset = RN_MEMBER(topo_xml, char *),
	},

	/* NCCL's, with NCCL's meaning and defaults */
	{
		.name = "NCCL_IB_DISABLE",
		.type = RN_CFG_BOOL,
		.def = "0",
		.help = "1: railnet's init fails, as NCCL's own IB transport does, and NCCL moves "
			"on to its next network.",
		.offset = RN_MEMBER(ib_disable, bool),
	},
	{
		.name = "NCCL_IB_HCA",
		.type = RN_CFG_STRING,
		.def = "",
		.syntax = "[^][=]dev[:port[:rail[:plane]]],...",
		.check = rn_check_hca,
		.help = "RDMA devices and ports to use, NCCL's syntax: entries are name prefixes, "
			"exact names after a leading `=`, excluded after a leading `^` (example: "
			"`^=mlx5_0:1,mlx5_1`). Empty: every device the process can open. The "
			"value is checked at parse time by the parser discovery uses (at most 32 "
			"entries, port 1..255, rail 0..32767, plane 0..16383, no leading zeros; "
			"empty fields are allowed: `mlx5_0::2` is rail 2 on every port); matching "
			"is done by discovery. A rail or plane given here is the railId/planeId "
			"NCCL >= 2.30 sees for matching ports (railnet otherwise derives the rail "
			"from the port's subnet) and pairs ports by rail in the handshake.",
		.offset = RN_MEMBER(ib_hca, char *),
	},
	{
		.name = "NCCL_IB_GID_INDEX",
		.type = RN_CFG_INT,
		.def = "-1",
		.min = -1,
		.max = 255,
		.help = "GID index for every RoCE port. -1: railnet chooses per port the GID "
			"whose address is configured in this pod's network namespace. An explicit "
			"index is verified: a zero or foreign GID there is an error naming the "
			"index that would work.",
		.offset = RN_MEMBER(ib_gid_index, int),
	},
	{
		.name = "NCCL_IB_ADDR_FAMILY",
		.type = RN_CFG_ENUM,
		.def = "AF_INET",
		.words = rn_family_words,
		.help = "Address family of the RoCE GID to choose: `AF_INET` (IPv4-mapped) or "
			"`AF_INET6`. Exact case, as NCCL compares it.",
		.offset = RN_MEMBER(ib_addr_family, int),
	},
	{
		.name = "NCCL_IB_ADDR_RANGE",
		.type = RN_CFG_STRING,
		.def = "",
		.max_len = INET6_ADDRSTRLEN + 4,
		.syntax = "CIDR: a.b.c.d/n or IPv6/n",
		.check = rn_check_cidr,
		.help = "Choose only RoCE GIDs whose address lies in this range. Empty: any "
			"address. NCCL ignores an invalid range; railnet refuses it.",
		.offset = RN_MEMBER(ib_addr_range, char *),
	},
	{
		.name = "NCCL_IB_ROCE_VERSION_NUM",
		.type = RN_CFG_INT,
		.def = "2",
		.min = 1,
		.max = 2,
		.help = "RoCE version of the GID to choose (as read from `gid_attrs/types`).",
		.offset = RN_MEMBER(ib_roce_version, int),
	},
	{
		.name = "NCCL_IB_TC",
		.type = RN_CFG_INT,
		.def = "-1",
		.min = -1,
		.max = 255,
		.help = "RoCE traffic class of every QP. -1: the communicator's trafficClass when "
			"NCCL passes one, else 0 (NCCL's rule).",
		.offset = RN_MEMBER(ib_tc, int),
	},
	{
		.name = "NCCL_IB_SL",
		.type = RN_CFG_INT,
		.def = "-1",
		.min = -1,
		.max = 15,
		.help = "InfiniBand service level of every QP. -1: the communicator's "
			"trafficClass when NCCL passes one, else 0 (NCCL's rule).",
		.offset = RN_MEMBER(ib_sl, int),
	},
	{
		.name = "NCCL_IB_TIMEOUT",
		.type = RN_CFG_INT,
		.def = "20",
		.min = 1,
		.max = 31,
		.help = "QP ACK timeout exponent: 4.096 us x 2^value (20: about 4.3 s). 0 and >= "
			"32, which mean \"wait forever\" to the NIC, are refused: railnet never "
			"waits forever.",
		.offset = RN_MEMBER(ib_timeout, int),
	},
	{
		.name = "NCCL_IB_RETRY_CNT",
		.type = RN_CFG_INT,
		.def = "7",
		.min = 0,
		.max = 7,
		.help = "Transport retries before a QP goes to error. With NCCL_IB_TIMEOUT it "
			"bounds how long a dead peer takes to be noticed.",
		.offset = RN_MEMBER(ib_retry_cnt, int),
	},
	{
		.name = "NCCL_IB_PKEY",
		.type = RN_CFG_INT,
		.def = "0",
		.min = 0,
		.max = 65535,
		.help = "Partition key *index* (not the key itself) of every QP.",
		.offset = RN_MEMBER(ib_pkey, int),
	},
	{
		.name = "NCCL_IB_QPS_PER_CONNECTION",
		.type = RN_CFG_INT,
		.def = "1",
		.min = 1,
		.max = 128,
		.help = "RC QPs per port for each connection, NCCL's meaning: a connection opens "
			"max(local ports, remote ports) x this many QPs, striped over the ports "
			"of the virtual device. It already counts per port, so railnet has no "
			"knob of its own for this.",
		.offset = RN_MEMBER(ib_qps_per_conn, int),
	},
	{
		.name = "NCCL_IB_SPLIT_DATA_ON_QPS",
		.type = RN_CFG_BOOL,
		.def = "0",
		.help = "0: every message goes whole over one QP and successive messages rotate "
			"through the live QPs (so through the ports); 1: a message is split over "
			"the live QPs of the connection in 128-byte-aligned chunks (at most one "
			"part per 16 KiB). The default is 0, NCCL's: under NCCL with GPU memory "
			"(H200, softverbs, 3 runs) round-robin moved 1.80/4.09/4.28 GB/s busbw at "
			"1 MiB/16 MiB/256 MiB against 1.39/3.74/3.49 for split; split is faster "
			"only host to host without a rate model (docs/performance.md).",
		.offset = RN_MEMBER(ib_split_data_on_qps, bool),
	},
	{
		.name = "NCCL_IB_USE_INLINE",
		.type = RN_CFG_BOOL,
		.def = "0",
		.help = "1: clear-to-send entries are posted as inline data (QPs are created with "
			"512 bytes of inline space, the 8 entries of a multi-receive).",
		.offset = RN_MEMBER(ib_use_inline, bool),
	},
	{
		.name = "NCCL_SOCKET_IFNAME",
		.type = RN_CFG_STRING,
		.def = "",
		.syntax = "[^][=]ifname,...",
		.check = rn_check_ifname,
		.help = "Interface of the out-of-band TCP handshake, NCCL's syntax: name "
			"prefixes, exact names after a leading `=`, excluded after a leading `^`. "
			"Empty: the interface of the default route.",
		.offset = RN_MEMBER(socket_ifname, char *),
	},
};

const size_t rn_config_table_len = sizeof(rn_config_table) / sizeof(rn_config_table[0]);

/* ---- parsing ---------------------------------------------------------------------------- */

/* A parsed value before it is stored: integers (INT, BOOL, ENUM) or a borrowed string. */
struct rn_value {
	long long i;
	const char *s;
};

/* Copy `v` for a log line: control bytes escaped, long values cut with their length. */
static const char *rn_quote(const char *v, char *buf, size_t len)
{
	size_t vlen = strlen(v), o = 0, i;
	const size_t keep = 48;

	for (i = 0; v[i] && i < keep && o + 5 < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	if (i < vlen)
		snprintf(buf + o, len - o, "...(%zu bytes)", vlen);
	return buf;
}

/*
 * Strict integer syntax: optional sign, then decimal digits without a leading zero, or 0x and
 * hex digits. Whitespace and trailing characters are errors. NCCL's strtoll(base 0) would read
 * a leading 0 as octal, so "010" is refused rather than silently read differently.
 * Returns 0, -EINVAL (syntax; *octal set when the only fault is a leading zero) or -ERANGE.
 */
static int rn_parse_ll(const char *s, long long *out, bool *octal)
{
	unsigned long long acc = 0, limit;
	bool neg = false, over = false;
	unsigned base = 10;
	const char *p = s, *digits;

	*octal = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	digits = p;
	if (!*p)
		return -EINVAL;
	limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; *p; p++) {
		unsigned d;

		if (rn_isdigit((unsigned char)*p))
			d = (unsigned)(*p - '0');
		else if (base == 16 && rn_isxdigit((unsigned char)*p))
			d = (unsigned)(rn_toupper((unsigned char)*p) - 'A' + 10);
		else
			return -EINVAL;
		if (acc > (limit - d) / base)
			over = true;
		else
			acc = acc * base + d;
	}
	if (base == 10 && digits[0] == '0' && digits[1]) {
		*octal = true;
		return -EINVAL;
	}
	if (over)
		return -ERANGE;
	*out = neg ? (long long)(0 - acc) : (long long)acc;
	return 0;
}

/* Append the allowed words of an enum entry, comma-separated. */
static void rn_words_list(const struct rn_config_var *v, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; v->words[i] && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", v->words[i]);
}

/*
 * Parse `text` as a value of `v`. Returns 0 with *out set, or -EINVAL with a message for the
 * user in why ("NAME=value: reason").
 */
static int rn_parse_value(const struct rn_config_var *v, const char *text, struct rn_value *out,
			  char *why, size_t len)
{
	char q[128], words[128], reason[160];
	bool octal;
	size_t i, max;
	int ret;

	rn_quote(text, q, sizeof(q));
	switch (v->type) {
	case RN_CFG_INT:
		if (!*text) {
			snprintf(why, len,
				 "%s=: empty value (allowed %lld..%lld; unset it for the "
				 "default %s)",
				 v->name, v->min, v->max, v->def);
			return -EINVAL;
		}
		ret = rn_parse_ll(text, &out->i, &octal);
		if (ret == -EINVAL && octal) {
			snprintf(why, len,
				 "%s=%s: leading zero not accepted (NCCL would read it as "
				 "octal; allowed %lld..%lld)",
				 v->name, q, v->min, v->max);
			return -EINVAL;
		}
		if (ret == -EINVAL) {
			snprintf(why, len, "%s=%s: not an integer (allowed %lld..%lld)", v->name, q,
				 v->min, v->max);
			return -EINVAL;
		}
		if (ret == -ERANGE || out->i < v->min || out->i > v->max) {
			snprintf(why, len, "%s=%s: out of range %lld..%lld", v->name, q, v->min,
				 v->max);
			return -EINVAL;
		}
		return 0;
	case RN_CFG_BOOL:
		if (!strcmp(text, "0") || !strcmp(text, "1")) {
			out->i = text[0] - '0';
			return 0;
		}
		if (!*text)
			snprintf(why, len,
				 "%s=: empty value (allowed 0 or 1; unset it for the "
				 "default %s)",
				 v->name, v->def);
		else
			snprintf(why, len, "%s=%s: not 0 or 1", v->name, q);
		return -EINVAL;
	case RN_CFG_ENUM:
		for (i = 0; v->words[i]; i++) {
			if (!strcmp(text, v->words[i]) ||
			    (v->icase && !strcasecmp(text, v->words[i]))) {
				out->i = (long long)i;
				return 0;
			}
		}
		rn_words_list(v, words, sizeof(words));
		if (!*text) {
			snprintf(why, len,
				 "%s=: empty value (allowed %s; unset it for the default "
				 "%s)",
				 v->name, words, v->def);
			return -EINVAL;
		}
		for (i = 0; v->words[i] && strcasecmp(text, v->words[i]); i++)
			;
		snprintf(why, len, "%s=%s: not one of %s%s", v->name, q, words,
			 v->words[i] ? " (case matters, as in NCCL)" : "");
		return -EINVAL;
	case RN_CFG_STRING:
		max = v->max_len ? v->max_len : RN_CONFIG_STRING_MAX;
		for (i = 0; text[i]; i++) {
			unsigned char c = (unsigned char)text[i];

			if (i >= max) {
				snprintf(why, len, "%s=%s: longer than %zu bytes", v->name, q, max);
				return -EINVAL;
			}
			if (c < 0x20 || c == 0x7f) {
				snprintf(why, len, "%s=%s: control character 0x%02x at byte %zu",
					 v->name, q, c, i);
				return -EINVAL;
			}
		}
		if (v->check && v->check(text, reason, sizeof(reason))) {
			snprintf(why, len, "%s=%s: %s (expected %s)", v->name, q, reason,
				 v->syntax);
			return -EINVAL;
		}
		out->s = text;
		return 0;
	}
	snprintf(why, len, "%s: bad table entry", v->name);
	return -EINVAL;
}

static bool rn_value_equal(const struct rn_config_var *v, const struct rn_value *a,
			   const struct rn_value *b)
{
	return v->type == RN_CFG_STRING ? !strcmp(a->s, b->s) : a->i == b->i;
}

/* Store a parsed value into its member. Returns 0 or -ENOMEM. */
static int rn_store(const struct rn_config_var *v, struct rn_config *cfg,
		    const struct rn_value *val)
{
	char *base = (char *)cfg + v->offset;
	int i = (int)val->i;
	bool b = val->i != 0;
	char *s;

	switch (v->type) {
	case RN_CFG_INT:
	case RN_CFG_ENUM:
		memcpy(base, &i, sizeof(i));
		return 0;
	case RN_CFG_BOOL:
		memcpy(base, &b, sizeof(b));
		return 0;
	case RN_CFG_STRING:
		s = strdup(val->s);
		if (!s)
			return -ENOMEM;
		memcpy(base, &s, sizeof(s));
		return 0;
	}
	return -EINVAL;
}

/* First "name=value" of envp, as getenv does. */
static const char *rn_env_lookup(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++) {
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	}
	return NULL;
}

static const struct rn_config_var *rn_var_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < rn_config_table_len; i++) {
		if (strlen(rn_config_table[i].name) == len &&
		    !strncmp(rn_config_table[i].name, name, len))
			return &rn_config_table[i];
	}
	return NULL;
}

/* Edit distance, capped inputs (names are short); used only to suggest a spelling. */
static size_t rn_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), row[64], i, j;

	if (la >= 63 || lb >= 63)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (rn_toupper((unsigned char)a[i - 1]) != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* One WARN per RAILNET_* name that is not in the table: most likely a typo. */
static void rn_warn_unknown(char *const *envp)
{
	const size_t plen = strlen(RN_PREFIX_OWN);
	char name[72], q[128];

	for (; *envp; envp++) {
		const char *e = *envp, *eq = strchr(e, '=');
		size_t len = eq ? (size_t)(eq - e) : strlen(e), i, best = (size_t)-1;
		const char *hint = NULL;

		if (strncmp(e, RN_PREFIX_OWN, plen) || rn_var_find(e, len))
			continue;
		for (i = 0; i < rn_config_table_len; i++) {
			size_t d = rn_distance(e, len, rn_config_table[i].name);

			if (d < best) {
				best = d;
				hint = rn_config_table[i].name;
			}
		}
		snprintf(name, sizeof(name), "%.*s", (int)(len < 64 ? len : 64), e);
		rn_quote(name, q, sizeof(q));
		if (hint && best <= 3)
			RN_WARN("%s: unknown variable, ignored (did you mean %s?)", q, hint);
		else
			RN_WARN("%s: unknown variable, ignored (see docs/env.md)", q);
	}
}

void rn_config_fini(struct rn_config *cfg)
{
	size_t i;

	for (i = 0; i < rn_config_table_len; i++) {
		const struct rn_config_var *v = &rn_config_table[i];
		char *s;

		if (v->type != RN_CFG_STRING)
			continue;
		memcpy(&s, (char *)cfg + v->offset, sizeof(s));
		free(s);
	}
	memset(cfg, 0, sizeof(*cfg));
}

int rn_config_parse(struct rn_config *cfg, char *const *envp)
{
	struct rn_config tmp;
	char why[512];
	int bad = 0, ret = 0;
	size_t i;

	if (!envp)
		envp = environ;
	memset(&tmp, 0, sizeof(tmp));
	for (i = 0; i < rn_config_table_len; i++) {
		const struct rn_config_var *v = &rn_config_table[i];
		const char *raw = rn_env_lookup(envp, v->name);
		struct rn_value def = { 0 }, val = { 0 };

		if (rn_parse_value(v, v->def, &def, why, sizeof(why))) {
			RN_WARN("internal: default of %s does not parse: %s", v->name, why);
			bad++;
			continue;
		}
		if (!raw) {
			val = def;
		} else if (rn_parse_value(v, raw, &val, why, sizeof(why))) {
			RN_WARN("%s", why);
			bad++;
			continue;
		} else if (!rn_value_equal(v, &val, &def)) {
			char q[128];

			rn_quote(raw, q, sizeof(q));
			if (v->pending)
				RN_INFO(RN_SUB_ENV,
					"%s=%s (default %s; not in effect yet: takes "
					"effect when %s lands)",
					v->name, q, *v->def ? v->def : "empty", v->pending);
			else
				RN_INFO(RN_SUB_ENV, "%s=%s (default %s)", v->name, q,
					*v->def ? v->def : "empty");
		}
		if (!bad && rn_store(v, &tmp, &val)) {
			ret = -ENOMEM;
			break;
		}
	}
	rn_warn_unknown(envp);
	if (bad && !ret)
		ret = -EINVAL;
	if (ret) {
		rn_config_fini(&tmp);
		memset(cfg, 0, sizeof(*cfg));
		return ret;
	}
	*cfg = tmp;
	return 0;
}

/* ---- the process-wide copy ---------------------------------------------------------------- */

static pthread_mutex_t rn_cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned rn_cfg_refs; /* written under rn_cfg_lock; read with __atomic by rn_config() */
static struct rn_config rn_cfg_global;

int rn_config_acquire_env(char *const *envp)
{
	int ret = 0;

	pthread_mutex_lock(&rn_cfg_lock);
	if (rn_cfg_refs == 0)
		ret = rn_config_parse(&rn_cfg_global, envp);
	if (!ret)
		__atomic_store_n(&rn_cfg_refs, rn_cfg_refs + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rn_cfg_lock);
	return ret;
}

int rn_config_acquire(void)
{
	return rn_config_acquire_env(NULL);
}

void rn_config_release(void)
{
	pthread_mutex_lock(&rn_cfg_lock);
	if (rn_cfg_refs == 0) {
		RN_WARN("internal: configuration released more often than acquired");
	} else if (rn_cfg_refs == 1) {
		__atomic_store_n(&rn_cfg_refs, 0, __ATOMIC_RELEASE);
		rn_config_fini(&rn_cfg_global);
	} else {
		__atomic_store_n(&rn_cfg_refs, rn_cfg_refs - 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&rn_cfg_lock);
}

const struct rn_config *rn_config(void)
{
	return __atomic_load_n(&rn_cfg_refs, __ATOMIC_ACQUIRE) ? &rn_cfg_global : NULL;
}

/* ---- docs/env.md ---------------------------------------------------------------------------- */

/* Markdown table cell: '|' escaped, nothing else touched (help text uses Markdown). */
static void rn_md_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
}

/* Plain text in a table cell: every character Markdown could take as markup escaped. */
static void rn_md_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\`*_[]<>|^", *s))
			fputc('\\', out);
		fputc(*s, out);
	}
}

static void rn_md_allowed(FILE *out, const struct rn_config_var *v)
{
	char words[128];
	size_t max;

	switch (v->type) {
	case RN_CFG_INT:
		fprintf(out, "%lld..%lld", v->min, v->max);
		break;
	case RN_CFG_BOOL:
		fputs("0, 1", out);
		break;
	case RN_CFG_ENUM:
		rn_words_list(v, words, sizeof(words));
		rn_md_cell(out, words);
		fputs(v->icase ? " (any case)" : " (exact case)", out);
		break;
	case RN_CFG_STRING:
		max = v->max_len ? v->max_len : RN_CONFIG_STRING_MAX;
		rn_md_text(out, v->syntax);
		fprintf(out, "; at most %zu bytes", max);
		break;
	}
}

static const char *const rn_type_names[] = {
	[RN_CFG_INT] = "integer",
	[RN_CFG_BOOL] = "boolean",
	[RN_CFG_ENUM] = "word",
	[RN_CFG_STRING] = "string",
};

static void rn_md_table(FILE *out, bool own)
{
	size_t i;

	fputs("| Variable | Type | Default | Allowed | Meaning |\n", out);
	fputs("|---|---|---|---|---|\n", out);
	for (i = 0; i < rn_config_table_len; i++) {
		const struct rn_config_var *v = &rn_config_table[i];

		if (own != !strncmp(v->name, RN_PREFIX_OWN, strlen(RN_PREFIX_OWN)))
			continue;
		fprintf(out, "| `%s` | %s | ", v->name, rn_type_names[v->type]);
		if (*v->def) {
			fputc('`', out);
			rn_md_cell(out, v->def);
			fputc('`', out);
		} else {
			fputs("(empty)", out);
		}
		fputs(" | ", out);
		rn_md_allowed(out, v);
		fputs(" | ", out);
		rn_md_cell(out, v->help);
		if (v->pending)
			fprintf(out, " (parsed and validated now; takes effect when %s lands)",
				v->pending);
		fputs(" |\n", out);
	}
}

int rn_config_write_markdown(FILE *out)
{
	fputs("# railnet environment variables\n"
	      "\n"
	      "<!-- Generated by railnet-envdoc from the table in src/config.c; do not edit. "
	      "Run `make docs`. -->\n"
	      "\n"
	      "railnet reads its configuration once, from the environment, when NCCL first "
	      "initialises it, and again only after the last communicator has finalized it.\n"
	      "\n"
	      "How values are parsed:\n"
	      "\n"
	      "- **integer**: decimal, or hexadecimal with `0x`, optionally signed, with nothing "
	      "around it (no spaces, no units). A leading zero (`010`) is refused, because "
	      "NCCL would read it as octal. The value must lie in the bounds shown.\n"
	      "- **boolean**: exactly `0` or `1`, like NCCL's own integer switches "
	      "(`true`, `yes` and the like are refused: NCCL would ignore them, and railnet "
	      "must not read the same variable differently).\n"
	      "- **word**: one of the words listed. railnet's own words match in any case; "
	      "NCCL's words match in exact case, as NCCL compares them.\n"
	      "- **string**: at most the length shown, no control characters, and the "
	      "structure shown (lists and address ranges are checked for form here; "
	      "their meaning is applied by the module that uses them).\n"
	      "- An empty value (`NAME=`) is an error for integers, booleans and words (unset "
	      "the variable to get the default); for strings it means what the table says "
	      "empty means.\n"
	      "\n"
	      "On a bad value railnet logs one WARN per bad variable, naming the variable, the "
	      "value and what is allowed (for example `NCCL_IB_TIMEOUT=40: out of range "
	      "1..31`), reports every bad variable, not only the first, and fails its init; "
	      "NCCL then moves on to its next network (its own IB, then Socket). A `RAILNET_*` "
	      "name that is not in the table (a typo) gets one WARN with the closest known "
	      "name and is otherwise ignored. Every value that differs from its default is "
	      "logged at `NCCL_DEBUG=INFO` (subsystem ENV).\n"
	      "\n"
	      "A variable marked \"parsed and validated now; takes effect when ... lands\" is "
	      "checked and logged, but the feature that uses it is not implemented yet.\n"
	      "\n"
	      "## railnet's own\n"
	      "\n",
	      out);
	rn_md_table(out, true);
	fputs("\n"
	      "## NCCL's variables that railnet honours\n"
	      "\n"
	      "These have NCCL's meaning and NCCL's defaults (`reference/nccl-net-api.md` "
	      "section 4), so a job configured for NCCL's own IB transport behaves the same "
	      "with railnet; where railnet is stricter, the row says so.\n"
	      "\n",
	      out);
	rn_md_table(out, false);
	fputs("\n"
	      "## Read by NCCL, not by railnet\n"
	      "\n"
	      "- `NCCL_NET_PLUGIN`, `NCCL_NET`: which plugin NCCL loads and uses.\n"
	      "- `NCCL_NET_GDR_LEVEL`, `NCCL_TOPO_FILE`: NCCL core decides from them whether to "
	      "use GPUDirect RDMA with a NIC; railnet reads them too, as NCCL does, so that it "
	      "offers GPU memory exactly where NCCL would use it (docs/topology.md, \"The "
	      "rule\"). A value NCCL ignores is ignored with one WARN, not an error.\n"
	      "- `NCCL_NET_GDR_READ`: NCCL core decides from it whether sends read GPU memory "
	      "directly; railnet does not read it.\n"
	      "- `NCCL_NET_FORCE_FLUSH`: NCCL core decides from it whether to call the plugin's "
	      "iflush; railnet does not read it.\n"
	      "- `NCCL_DEBUG`, `NCCL_DEBUG_SUBSYS`: railnet logs through NCCL's logger; before "
	      "NCCL hands it over, railnet's own stderr lines follow `NCCL_DEBUG` (default WARN).\n"
	      "- Other `NCCL_IB_*` variables (for example `NCCL_IB_MERGE_NICS`, "
	      "`NCCL_IB_AR_THRESHOLD`) belong to NCCL's built-in IB transport; railnet ignores "
	      "them.\n",
	      out);
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}
