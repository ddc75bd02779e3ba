// SPDX-License-Identifier: Apache-2.0
/*
 * gid.c owns the GID rule of DESIGN §2.3 (include/railnet/gid.h): the pure judgement of one
 * table entry, the choice of a port's index (automatic or a verified NCCL_IB_GID_INDEX), the
 * address range, and the thin readers that fill a table from the verbs ops and sysfs and an
 * address list from getifaddrs or a file. It must not log (callers log the choice once) and
 * must not call ibv_* (it goes through the ops table it is given).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "railnet/gid.h"
#include "railnet/sysfs.h"

static const uint8_t rn_v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

const char *rn_gid_verdict_str(int verdict)
{
	switch (verdict) {
	case RN_GID_OK:
		return "usable";
	case RN_GID_ZERO:
		return "zero (empty, or another network namespace's entry)";
	case RN_GID_LINK_LOCAL:
		return "link-local (fe80::/64, not routable)";
	case RN_GID_NO_ATTRS:
		return "attributes unreadable (hidden from this network namespace)";
	case RN_GID_WRONG_VERSION:
		return "other RoCE version";
	case RN_GID_WRONG_FAMILY:
		return "other address family";
	case RN_GID_OUT_OF_RANGE:
		return "outside NCCL_IB_ADDR_RANGE";
	case RN_GID_NDEV_ABSENT:
		return "netdev not in this network namespace";
	case RN_GID_ADDR_ABSENT:
		return "address not configured on its netdev here";
	default:
		return "?";
	}
}

bool rn_gid_is_v4mapped(const uint8_t raw[16])
{
	return memcmp(raw, rn_v4mapped_prefix, sizeof(rn_v4mapped_prefix)) == 0;
}

static bool rn_gid_is_zero(const uint8_t raw[16])
{
	for (int i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

static bool rn_gid_is_link_local(const uint8_t raw[16])
{
	static const uint8_t ll[8] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0 };

	return memcmp(raw, ll, sizeof(ll)) == 0;
}

void rn_gid_str(const uint8_t raw[16], char *buf, size_t len)
{
	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", raw[0],
		 raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
		 raw[11], raw[12], raw[13], raw[14], raw[15]);
}

void rn_gid_addr_str(const uint8_t raw[16], char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];
	bool v4 = rn_gid_is_v4mapped(raw);

	if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? raw + 12 : raw, tmp, sizeof(tmp)))
		snprintf(tmp, sizeof(tmp), "?");
	snprintf(buf, len, "%s", tmp);
}

/* ---- address range ----------------------------------------------------------------------- */

int rn_addr_range_parse(const char *s, struct rn_addr_range *out, char *why, size_t why_len)
{
	struct rn_addr_range r;
	char host[INET6_ADDRSTRLEN];
	const char *slash, *p;
	size_t hlen;
	int bits, max;

	memset(&r, 0, sizeof(r));
	if (!s || !*s) {
		*out = r;
		return 0;
	}
	slash = strchr(s, '/');
	if (!slash) {
		snprintf(why, why_len, "no '/' and prefix length");
		return -EINVAL;
	}
	hlen = (size_t)(slash - s);
	if (!hlen || hlen >= sizeof(host)) {
		snprintf(why, why_len, "not an IPv4 or IPv6 address before '/'");
		return -EINVAL;
	}
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	r.family = strchr(host, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(r.family, host, r.addr) != 1) {
		snprintf(why, why_len, "'%s' is not an %s address", host,
			 r.family == AF_INET ? "IPv4" : "IPv6");
		return -EINVAL;
	}
	/* decimal digits only: no sign, no leading zero, as config.c reads every number */
	max = r.family == AF_INET ? 32 : 128;
	bits = 0;
	for (p = slash + 1; *p >= '0' && *p <= '9' && bits <= max; p++)
		bits = bits * 10 + (*p - '0');
	if (p == slash + 1 || *p || bits > max || (p - slash > 2 && slash[1] == '0')) {
		snprintf(why, why_len, "prefix length must be 0..%d", max);
		return -EINVAL;
	}
	r.bits = bits;
	*out = r;
	return 0;
}

bool rn_addr_in_range(const struct rn_addr_range *r, int family, const uint8_t *addr)
{
	int full, rest;

	if (!r->family)
		return true;
	if (r->family != family)
		return false;
	full = r->bits / 8;
	rest = r->bits % 8;
	if (memcmp(r->addr, addr, (size_t)full))
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));

		if ((r->addr[full] & mask) != (addr[full] & mask))
			return false;
	}
	return true;
}

/* ---- the rule ---------------------------------------------------------------------------- */

/* The address of a RoCE GID: family and bytes (4 for IPv4, 16 for IPv6). */
int rn_gid_family(const uint8_t raw[16], const uint8_t **addr)
{
	if (rn_gid_is_v4mapped(raw)) {
		*addr = raw + 12;
		return AF_INET;
	}
	*addr = raw;
	return AF_INET6;
}

static bool rn_ifaddr_has(const struct rn_ifaddr *a, int family, const uint8_t *addr)
{
	return a->family == family && memcmp(a->addr, addr, family == AF_INET ? 4 : 16) == 0;
}

int rn_gid_judge(const struct rn_gid_entry *e, const struct rn_ifaddr *ifa, int nifa,
		 const struct rn_gid_policy *pol, const char **ifname)
{
	const uint8_t *addr;
	bool ndev_here = false;
	int family;

	if (rn_gid_is_zero(e->raw))
		return RN_GID_ZERO;
	if (rn_gid_is_link_local(e->raw))
		return RN_GID_LINK_LOCAL;
	if (e->type == RN_GID_TYPE_UNKNOWN)
		return RN_GID_NO_ATTRS;
	if ((pol->roce_version == 2) != (e->type == RN_GID_TYPE_ROCE_V2))
		return RN_GID_WRONG_VERSION;
	family = rn_gid_family(e->raw, &addr);
	if (family != pol->family)
		return RN_GID_WRONG_FAMILY;
	if (!rn_addr_in_range(&pol->range, family, addr))
		return RN_GID_OUT_OF_RANGE;
	for (int i = 0; i < nifa; i++) {
		bool same_dev = e->ndev_known && strcmp(ifa[i].name, e->ndev) == 0;

		ndev_here |= same_dev;
		if ((same_dev || !e->ndev_known) && rn_ifaddr_has(&ifa[i], family, addr)) {
			if (ifname)
				*ifname = ifa[i].name;
			return RN_GID_OK;
		}
	}
	return e->ndev_known && !ndev_here ? RN_GID_NDEV_ABSENT : RN_GID_ADDR_ABSENT;
}

static const char *rn_family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/* "RoCE v2 IPv4 GID for 10.239.255.1 on net1" style description of a usable entry. */
static void rn_gid_describe(const struct rn_gid_entry *e, const struct rn_gid_policy *pol,
			    const char *ifname, bool ndev_known, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	rn_gid_addr_str(e->raw, a, sizeof(a));
	snprintf(buf, len, "RoCE v%d %s GID of %s, configured on %s in this network namespace%s",
		 pol->roce_version, rn_family_name(pol->family), a, ifname,
		 ndev_known ? "" : " (the entry's netdev is unreadable; matched by address)");
}

/* Why no entry is usable: counts per verdict, e.g. "14 zero (...), 2 link-local (...)". */
static void rn_gid_summary(const struct rn_gid_entry *table, int n, const struct rn_ifaddr *ifa,
			   int nifa, const struct rn_gid_policy *pol, char *buf, size_t len)
{
	int count[RN_GID_ADDR_ABSENT + 1] = { 0 };
	size_t used;

	for (int i = 0; i < n; i++)
		count[rn_gid_judge(&table[i], ifa, nifa, pol, NULL)]++;
	snprintf(buf, len, "no usable RoCE v%d %s GID%s among %d entries:", pol->roce_version,
		 rn_family_name(pol->family), pol->range.family ? " in NCCL_IB_ADDR_RANGE" : "", n);
	for (int v = RN_GID_ZERO; v <= RN_GID_ADDR_ABSENT; v++) {
		if (!count[v])
			continue;
		used = strlen(buf);
		if (used + 1 < len)
			snprintf(buf + used, len - used, " %d %s,", count[v],
				 rn_gid_verdict_str(v));
	}
	used = strlen(buf);
	if (used && buf[used - 1] == ',')
		buf[used - 1] = '\0';
}

int rn_gid_select_roce(const struct rn_gid_entry *table, int n, const struct rn_ifaddr *ifa,
		       int nifa, const struct rn_gid_policy *pol, const char *dev, int port,
		       struct rn_gid_choice *out, char *why, size_t why_len)
{
	const char *ifname = NULL;
	char desc[RN_GID_WHY_MAX];
	char near[RN_GID_WHY_MAX];
	int best = -1, v;

	for (int i = 0; i < n; i++) {
		if (rn_gid_judge(&table[i], ifa, nifa, pol, &ifname) != RN_GID_OK)
			continue;
		if (best < 0 || table[i].index < table[best].index)
			best = i;
	}
	if (pol->gid_index >= 0) {
		const struct rn_gid_entry *e = NULL;

		for (int i = 0; i < n; i++)
			if (table[i].index == pol->gid_index)
				e = &table[i];
		if (best >= 0) {
			rn_gid_judge(&table[best], ifa, nifa, pol, &ifname);
			rn_gid_describe(&table[best], pol, ifname, table[best].ndev_known, desc,
					sizeof(desc));
			snprintf(near, sizeof(near), "this process's %.200s is index %d", desc,
				 table[best].index);
		} else {
			rn_gid_summary(table, n, ifa, nifa, pol, near, sizeof(near));
		}
		if (!e) {
			snprintf(why, why_len,
				 "NCCL_IB_GID_INDEX=%d: %s port %d has no GID %d (table of %d); %s",
				 pol->gid_index, dev, port, pol->gid_index, n, near);
			return -EINVAL;
		}
		v = rn_gid_judge(e, ifa, nifa, pol, &ifname);
		if (v != RN_GID_OK) {
			snprintf(why, why_len,
				 "NCCL_IB_GID_INDEX=%d: GID %d of %s port %d is %s; %s",
				 pol->gid_index, pol->gid_index, dev, port, rn_gid_verdict_str(v),
				 near);
			return -EINVAL;
		}
		best = (int)(e - table);
		rn_gid_describe(e, pol, ifname, e->ndev_known, desc, sizeof(desc));
		snprintf(out->why, sizeof(out->why), "NCCL_IB_GID_INDEX=%d, verified: %.250s",
			 pol->gid_index, desc);
	} else {
		if (best < 0) {
			rn_gid_summary(table, n, ifa, nifa, pol, why, why_len);
			return -ENOENT;
		}
		rn_gid_judge(&table[best], ifa, nifa, pol, &ifname);
		rn_gid_describe(&table[best], pol, ifname, table[best].ndev_known, desc,
				sizeof(desc));
		snprintf(out->why, sizeof(out->why), "lowest index with a %.280s", desc);
	}
	out->index = table[best].index;
	memcpy(out->raw, table[best].raw, sizeof(out->raw));
	out->type = table[best].type;
	snprintf(out->ifname, sizeof(out->ifname), "%s", ifname ? ifname : "");
	out->prefix = -1;
	{
		const uint8_t *addr;
		int family = rn_gid_family(out->raw, &addr);

		for (int i = 0; i < nifa; i++)
			if (ifname && !strcmp(ifa[i].name, ifname) &&
			    rn_ifaddr_has(&ifa[i], family, addr))
				out->prefix = ifa[i].prefix;
	}
	return 0;
}

int rn_gid_select_ib(const struct rn_gid_entry *table, int n, const char *dev, int port,
		     struct rn_gid_choice *out, char *why, size_t why_len)
{
	const struct rn_gid_entry *g0 = NULL, *g1 = NULL;

	for (int i = 0; i < n; i++) {
		if (table[i].index == 0)
			g0 = &table[i];
		else if (table[i].index == 1)
			g1 = &table[i];
	}
	if (g1 && !rn_gid_is_zero(g1->raw) && (g1->raw[4] || g1->raw[5])) {
		out->index = 1;
		memcpy(out->raw, g1->raw, sizeof(out->raw));
		snprintf(out->why, sizeof(out->why),
			 "InfiniBand: GID 1 holds a routable FLID (0x%02x%02x)", g1->raw[4],
			 g1->raw[5]);
	} else if (g0 && !rn_gid_is_zero(g0->raw)) {
		out->index = 0;
		memcpy(out->raw, g0->raw, sizeof(out->raw));
		snprintf(out->why, sizeof(out->why), "InfiniBand: GID 0 (peers addressed by LID)");
	} else {
		snprintf(why, why_len, "InfiniBand %s port %d: GID 0 is zero or unreadable", dev,
			 port);
		return -ENOENT;
	}
	out->type = RN_GID_TYPE_IB;
	out->ifname[0] = '\0';
	out->prefix = 64; /* the subnet prefix: the GID's upper 64 bits */
	return 0;
}

/* ---- readers ----------------------------------------------------------------------------- */

static int rn_gid_parse_text(const char *s, uint8_t raw[16])
{
	unsigned int g[8];
	char tail;

	if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
		   &g[6], &g[7], &tail) != 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		raw[2 * i] = (uint8_t)(g[i] >> 8);
		raw[2 * i + 1] = (uint8_t)g[i];
	}
	return 0;
}

static int rn_gid_type_from_text(const char *s, bool ib)
{
	if (!strcmp(s, "RoCE v2"))
		return RN_GID_TYPE_ROCE_V2;
	if (!strcmp(s, "IB/RoCE v1") || !strcmp(s, "RoCE v1"))
		return ib ? RN_GID_TYPE_IB : RN_GID_TYPE_ROCE_V1;
	return RN_GID_TYPE_UNKNOWN; /* garbage: treated as unreadable */
}

static bool rn_ifname_valid(const char *s)
{
	size_t len = strlen(s);

	if (!len || len >= IFNAMSIZ)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s == '/' || *s == 0x7f)
			return false;
	return true;
}

/* Fill e->type (if not given) and e->ndev from sysfs for one non-zero entry. */
static void rn_gid_sysfs_attrs(const char *pdir, struct rn_gid_entry *e, bool ib, bool want_type,
			       unsigned int ifindex)
{
	char path[4096 + 64], buf[64];

	/* -EINVAL from the read: another namespace's entry; the type stays unknown */
	if (want_type && !rn_sysfs_path(path, sizeof(path), pdir, "gid_attrs/types/%d", e->index) &&
	    !rn_sysfs_read(path, buf, sizeof(buf)))
		e->type = rn_gid_type_from_text(buf, ib);
	if (ib)
		return;
	if (!rn_sysfs_path(path, sizeof(path), pdir, "gid_attrs/ndevs/%d", e->index) &&
	    !rn_sysfs_read(path, buf, sizeof(buf)) && rn_ifname_valid(buf)) {
		snprintf(e->ndev, sizeof(e->ndev), "%s", buf);
		e->ndev_known = true;
	} else if (ifindex && if_indextoname(ifindex, buf)) {
		snprintf(e->ndev, sizeof(e->ndev), "%s", buf);
		e->ndev_known = true;
	}
}

/* ports/N/gids/I, for a library whose query_gid fails. 0, or -errno (entry stays zero). */
static int rn_gid_sysfs_raw(const char *pdir, int index, uint8_t raw[16])
{
	char path[4096 + 64], buf[64];
	int rc;

	if (!pdir[0])
		return -ENOENT;
	rc = rn_sysfs_path(path, sizeof(path), pdir, "gids/%d", index);
	if (!rc)
		rc = rn_sysfs_read(path, buf, sizeof(buf));
	return rc ? rc : rn_gid_parse_text(buf, raw);
}

int rn_gid_table_read(const struct rn_verbs_ops *ops, struct ibv_context *vctx,
		      const char *sysfs_root, const char *dev, int port, int tbl_len, bool ib,
		      struct rn_gid_entry **table, int *n)
{
	bool ex = ops->caps & RN_VCAP_QUERY_GID_EX;
	struct rn_gid_entry *t;
	char pdir[4096];

	if (tbl_len < 0)
		tbl_len = 0;
	if (tbl_len > 4096)
		tbl_len = 4096; /* a GID table changing under us, or garbage: bounded */
	/* too long: pdir is "", and only the verbs library is asked */
	rn_sysfs_path(pdir, sizeof(pdir), sysfs_root, "class/infiniband/%s/ports/%d", dev, port);
	t = calloc(tbl_len ? (size_t)tbl_len : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (int i = 0; i < tbl_len; i++) {
		struct rn_gid_entry *e = &t[i];
		unsigned int ifindex = 0;
		bool want_type = true;

		e->index = i;
		if (ex) {
			struct ibv_gid_entry ge;

			if (ops->query_gid_ex(vctx, (uint32_t)port, (uint32_t)i, &ge))
				continue; /* -ENODATA: empty or hidden; anything else: unreadable */
			memcpy(e->raw, ge.gid.raw, sizeof(e->raw));
			e->type = ge.gid_type == IBV_GID_TYPE_ROCE_V2 ? RN_GID_TYPE_ROCE_V2
				  : ib				      ? RN_GID_TYPE_IB
								      : RN_GID_TYPE_ROCE_V1;
			ifindex = ge.ndev_ifindex;
			want_type = false;
		} else {
			union ibv_gid g;

			if (ops->query_gid(vctx, (uint8_t)port, i, &g) == 0)
				memcpy(e->raw, g.raw, sizeof(e->raw));
			else if (rn_gid_sysfs_raw(pdir, i, e->raw))
				continue;
		}
		if (rn_gid_is_zero(e->raw) || !pdir[0])
			continue;
		rn_gid_sysfs_attrs(pdir, e, ib, want_type, ifindex);
	}
	*table = t;
	*n = tbl_len;
	return 0;
}

/* ---- address lists ----------------------------------------------------------------------- */

static int rn_ifaddr_push(struct rn_ifaddr **list, int *n, int *cap, const char *name, int family,
			  const void *addr, int prefix)
{
	struct rn_ifaddr *a;

	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		struct rn_ifaddr *nl = realloc(*list, (size_t)ncap * sizeof(**list));

		if (!nl)
			return -ENOMEM;
		*list = nl;
		*cap = ncap;
	}
	a = &(*list)[(*n)++];
	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->family = family;
	memcpy(a->addr, addr, family == AF_INET ? 4 : 16);
	a->prefix = prefix;
	return 0;
}

/* Length of a contiguous netmask (family's sockaddr), -1 when absent or not contiguous. */
static int rn_netmask_len(const struct sockaddr *sa)
{
	const uint8_t *b;
	int len, bits = 0, i;

	if (!sa)
		return -1;
	if (sa->sa_family == AF_INET) {
		b = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		len = 4;
	} else if (sa->sa_family == AF_INET6) {
		b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
		len = 16;
	} else {
		return -1;
	}
	for (i = 0; i < len && b[i] == 0xff; i++)
		bits += 8;
	if (i < len) {
		uint8_t v = b[i];

		while (v & 0x80) {
			bits++;
			v = (uint8_t)(v << 1);
		}
		if (v)
			return -1;
		for (i++; i < len; i++)
			if (b[i])
				return -1;
	}
	return bits;
}

int rn_ifaddrs_get(struct rn_ifaddr **list, int *n)
{
	struct ifaddrs *ifap, *i;
	struct rn_ifaddr *l = NULL;
	int cnt = 0, cap = 0, rc = 0;

	if (getifaddrs(&ifap))
		return -errno;
	for (i = ifap; i; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_name)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			rc = rn_ifaddr_push(&l, &cnt, &cap, i->ifa_name, AF_INET,
					    &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
					    rn_netmask_len(i->ifa_netmask));
		else if (i->ifa_addr->sa_family == AF_INET6)
			rc = rn_ifaddr_push(
				&l, &cnt, &cap, i->ifa_name, AF_INET6,
				&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
				rn_netmask_len(i->ifa_netmask));
		if (rc)
			break;
	}
	freeifaddrs(ifap);
	if (rc) {
		free(l);
		return rc;
	}
	*list = l;
	*n = cnt;
	return 0;
}

int rn_ifaddrs_load(const char *path, struct rn_ifaddr **list, int *n, int *bad_line)
{
	struct rn_ifaddr *l = NULL;
	int cnt = 0, cap = 0, rc = 0, line = 0;
	char buf[512];
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		char name[IFNAMSIZ + 1], addr[INET6_ADDRSTRLEN + 8], extra[2];
		uint8_t bin[16];
		char *slash, *end;
		int k, family, prefix = -1;

		line++;
		if (buf[0] == '#' || buf[strspn(buf, " \t\r\n")] == '\0')
			continue;
		k = sscanf(buf, "%16s %53s %1s", name, addr, extra);
		slash = k == 2 ? strchr(addr, '/') : NULL;
		if (slash) {
			*slash = '\0';
			errno = 0;
			prefix = slash[1] >= '0' && slash[1] <= '9'
					 ? (int)strtol(slash + 1, &end, 10)
					 : -2;
			if (prefix != -2 && (errno || *end))
				prefix = -2;
		}
		family = strchr(addr, ':') ? AF_INET6 : AF_INET;
		if (k != 2 || !rn_ifname_valid(name) || inet_pton(family, addr, bin) != 1 ||
		    prefix < -1 || prefix > (family == AF_INET ? 32 : 128)) {
			*bad_line = line;
			rc = -EINVAL;
			break;
		}
		rc = rn_ifaddr_push(&l, &cnt, &cap, name, family, bin, prefix);
		if (rc)
			break;
	}
	fclose(f);
	/* An empty file is an empty list, never NULL: callers read NULL as "this namespace". */
	if (!rc && !l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			rc = -ENOMEM;
	}
	if (rc) {
		free(l);
		return rc;
	}
	*list = l;
	*n = cnt;
	return 0;
}
