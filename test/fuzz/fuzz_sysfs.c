// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the sysfs text of a pod view (RAILNET_SYSFS_ROOT) and its readers:
 * src/sysfs.c's first-line reader, src/gid.c's GID table reader (gids/N, gid_attrs/types/N,
 * gid_attrs/ndevs/N) and GID choice, and src/device.c's discovery (netns_mode, the device's
 * PCI path and root port, numa_node), which runs against the fake libibverbs of
 * test/unit/fake_verbs_lib.c found next to this binary (device fake0, two RoCE ports whose
 * GID i is ::i). Each input builds a fresh tree under /dev/shm (else /tmp), removed after
 * the run.
 *
 * The input: two control bytes, then the files' contents separated by NUL bytes, in this
 * order: fake0 port 1's gids/0..3, gid_attrs/types/0..3, gid_attrs/ndevs/0..3, then
 * module/ib_core/parameters/netns_mode, the device's numa_node, and the device's PCI path
 * (below <root>/devices; class/infiniband/fake0/device links to it). A missing piece is a
 * missing file; a piece that starts with 0x01 is a directory (its read fails). Control byte
 * 0: InfiniBand (0x01), which of GIDs 0..3 the library cannot read (0x1e: then gids/N is
 * read), NCCL_IB_ADDR_FAMILY=AF_INET6 (0x20), RoCE v1 (0x40), query_gid_ex (0x80).
 * Control byte 1: NCCL_IB_GID_INDEX=1 (0x01), NCCL_IB_ADDR_RANGE=10.0.0.0/24 (0x02).
 *
 * Checked: each reader's result is what its contract says of that text (a canonical GID, a
 * type word, a netdev name, Y/N/1/0, a small decimal), within its bounds whatever the text
 * (types in the enum, netdev names that are interface names, NUMA -1..4095, a root port that
 * is "" or a bus id), and the chosen GID is the lowest (or the asked) usable one.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "railnet/config.h"
#include "railnet/device.h"
#include "railnet/gid.h"
#include "railnet/log.h"
#include "railnet/pci.h"
#include "railnet/verbs.h"

#define RN_FZ_NAME "fuzz_sysfs"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RN_FZ_NGID 4
#define RN_FZ_NFILES (3 * RN_FZ_NGID + 2) /* gids, types, ndevs, netns_mode, numa_node */
#define RN_FZ_PIECE_DEV RN_FZ_NFILES	  /* the device's PCI path */
#define RN_FZ_PORT "class/infiniband/fake0/ports/1"

#define RN_FZ_IB 0x01
#define RN_FZ_NOGID(i) (0x02 << (i))
#define RN_FZ_INET6 0x20
#define RN_FZ_ROCE1 0x40
#define RN_FZ_GIDEX 0x80
#define RN_FZ_INDEX1 0x01
#define RN_FZ_RANGE 0x02

struct rn_fz_piece {
	const uint8_t *p;
	size_t len;
	bool given;
};

static int rn_fz_ctl; /* control byte 0, for the fake query_gid below */

static bool rn_fz_is_zero(const uint8_t raw[16])
{
	static const uint8_t zero[16];

	return !memcmp(raw, zero, 16);
}

/* ---- the library's side of the GID table: GID i is fixed unless control byte 0 hides it -- */

static void rn_fz_lib_gid(int i, uint8_t raw[16])
{
	memset(raw, 0, 16);
	switch (i) {
	case 0: /* ::ffff:10.0.0.1 */
		raw[10] = raw[11] = 0xff;
		raw[12] = 10;
		raw[15] = 1;
		break;
	case 1: /* fd00::2, or an InfiniBand GID with a FLID */
		raw[0] = 0xfd;
		raw[4] = 0x12;
		raw[15] = 2;
		break;
	case 2: /* fe80::3 */
		raw[0] = 0xfe;
		raw[1] = 0x80;
		raw[15] = 3;
		break;
	default: /* zero */
		break;
	}
}

static int rn_fz_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (index < 0 || index >= RN_FZ_NGID || (rn_fz_ctl & RN_FZ_NOGID(index)))
		return -EIO;
	rn_fz_lib_gid(index, gid->raw);
	return 0;
}

static int rn_fz_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			      struct ibv_gid_entry *e)
{
	uint8_t raw[16];

	if (index >= RN_FZ_NGID || (rn_fz_ctl & RN_FZ_NOGID(index)))
		return -ENODATA;
	rn_fz_lib_gid((int)index, raw);
	if (rn_fz_is_zero(raw))
		return -ENODATA; /* rdma-core's answer for an empty entry */
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, raw, sizeof(raw));
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = index % 2 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = index == 2 ? 1 : 0; /* 1: always "lo" */
	return 0;
}

/* ---- the tree ------------------------------------------------------------------------------ */

static int rn_fz_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rn_fz_mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX];
	size_t n = (size_t)snprintf(path, sizeof(path), "%s/%s", root, rel);

	if (n >= sizeof(path))
		rn_fz_fail("path too long: %s/%s", root, rel);
	for (char *s = path + strlen(root) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			rn_fz_fail("mkdir %s: %s", path, strerror(errno));
		*s = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		rn_fz_fail("mkdir %s: %s", path, strerror(errno));
}

static void rn_fz_write(const char *root, const char *rel, const struct rn_fz_piece *pc)
{
	char path[PATH_MAX];
	int fd;

	if (!pc->given)
		return;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (pc->len && pc->p[0] == 0x01) {
		rn_fz_mkdirs(root, rel);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, pc->p, pc->len) != (ssize_t)pc->len)
		rn_fz_fail("write %s: %s", path, strerror(errno));
	close(fd);
}

/*
 * The device's PCI path below devices/: the piece with every byte outside [A-Za-z0-9:._-/]
 * and every ".." made harmless, so that the tree stays below the root. "" when none is left.
 */
static void rn_fz_dev_path(const struct rn_fz_piece *pc, char *out, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < pc->len && n + 1 < len && n < 200; i++) {
		char c = (char)pc->p[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
		    !strchr(":._-/", c))
			c = '_';
		if (c == '/' && (!n || out[n - 1] == '/'))
			continue;
		if (c == '.' && n && out[n - 1] == '.')
			c = '_';
		out[n++] = c;
	}
	while (n && out[n - 1] == '/')
		n--;
	out[n] = '\0';
}

/* ---- what the contracts say of a text ------------------------------------------------------ */

/* rn_sysfs_read into a cap-byte buffer: the first line of the first cap - 1 bytes, trailing
 * spaces dropped. */
static void rn_fz_line(const struct rn_fz_piece *pc, size_t cap, char *out)
{
	size_t n = pc->len < cap - 1 ? pc->len : cap - 1;

	memcpy(out, pc->p, n);
	out[n] = '\0';
	n = strcspn(out, "\n");
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

static bool rn_fz_readable(const struct rn_fz_piece *pc)
{
	return pc->given && !(pc->len && pc->p[0] == 0x01);
}

/* "xxxx:xxxx:...": 8 groups of 4 lowercase hex digits, as the kernel writes a GID. */
static bool rn_fz_canonical_gid(const char *s, uint8_t raw[16])
{
	for (int i = 0; i < 39; i++)
		if (i % 5 == 4 ? s[i] != ':' : !strchr("0123456789abcdef", s[i]) || !s[i])
			return false;
	if (s[39])
		return false;
	for (int i = 0; i < 16; i++) {
		const char *g = s + (i / 2) * 5 + (i % 2) * 2;
		char h[3] = { g[0], g[1], 0 };

		raw[i] = (uint8_t)strtoul(h, NULL, 16);
	}
	return true;
}

static bool rn_fz_ifname_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (!n || n == cap || n >= IFNAMSIZ)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] == '/' || s[i] == 0x7f)
			return false;
	return true;
}

/* ---- the readers ---------------------------------------------------------------------------- */

static const struct rn_ifaddr rn_fz_ifa[] = {
	{ .name = "lo", .family = AF_INET, .addr = { 127, 0, 0, 1 }, .prefix = 8 },
	{ .name = "eth0", .family = AF_INET, .addr = { 10, 0, 0, 1 }, .prefix = 24 },
	{ .name = "net1",
	  .family = AF_INET6,
	  .addr = { 0xfd, 0, 0, 0, 0x12, [15] = 2 },
	  .prefix = 64 },
	{ .name = "net1", .family = AF_INET6, .addr = { [15] = 1 }, .prefix = 128 },
	{ .name = "net1", .family = AF_INET6, .addr = { [15] = 2 }, .prefix = 64 },
	{ .name = "eth0", .family = AF_INET6, .addr = { [15] = 3 }, .prefix = -1 },
};
static const int rn_fz_nifa = sizeof(rn_fz_ifa) / sizeof(rn_fz_ifa[0]);

static void rn_fz_policy(int ctl0, int ctl1, struct rn_gid_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->family = ctl0 & RN_FZ_INET6 ? AF_INET6 : AF_INET;
	pol->roce_version = ctl0 & RN_FZ_ROCE1 ? 1 : 2;
	pol->gid_index = ctl1 & RN_FZ_INDEX1 ? 1 : -1;
	if ((ctl1 & RN_FZ_RANGE) && rn_addr_range_parse("10.0.0.0/24", &pol->range, NULL, 0))
		rn_fz_fail("10.0.0.0/24 does not parse");
}

static void rn_fz_table(const char *root, int ctl0, int ctl1, const struct rn_fz_piece *pc)
{
	struct rn_verbs_ops ops = { .caps = ctl0 & RN_FZ_GIDEX ? RN_VCAP_QUERY_GID_EX : 0,
				    .query_gid = rn_fz_query_gid,
				    .query_gid_ex = rn_fz_query_gid_ex };
	bool ib = ctl0 & RN_FZ_IB, ex = ctl0 & RN_FZ_GIDEX;
	struct rn_gid_entry *t = NULL;
	struct rn_gid_policy pol;
	struct rn_gid_choice ch;
	char why[RN_GID_WHY_MAX], line[64];
	uint8_t want[16];
	int n = -7, rc;

	rn_fz_ctl = ctl0;
	if (rn_gid_table_read(&ops, NULL, root, "fake0", 1, RN_FZ_NGID, ib, &t, &n) || !t ||
	    n != RN_FZ_NGID)
		rn_fz_fail("GID table read: %d entries of %d", n, RN_FZ_NGID);
	for (int i = 0; i < n; i++) {
		const struct rn_gid_entry *e = &t[i];
		bool lib = !(ctl0 & RN_FZ_NOGID(i));

		if (e->index != i || e->type < RN_GID_TYPE_UNKNOWN || e->type > RN_GID_TYPE_ROCE_V2)
			rn_fz_fail("GID %d: index %d, type %d", i, e->index, e->type);
		if (e->ndev_known ? !rn_fz_ifname_ok(e->ndev, sizeof(e->ndev))
				  : strnlen(e->ndev, sizeof(e->ndev)) != 0)
			rn_fz_fail("GID %d: netdev \"%.*s\" (known %d)", i, (int)sizeof(e->ndev),
				   e->ndev, e->ndev_known);
		/* the raw GID: the library's, else gids/N when it is a GID's text, else zero */
		if (lib)
			rn_fz_lib_gid(i, want);
		else if (ex || !rn_fz_readable(&pc[i]))
			memset(want, 0, sizeof(want));
		else
			rn_fz_line(&pc[i], 64, line);
		if ((lib || ex || !rn_fz_readable(&pc[i]) || rn_fz_canonical_gid(line, want)) &&
		    memcmp(e->raw, want, sizeof(want)))
			rn_fz_fail("GID %d: not the GID the library or gids/%d gave", i, i);
		if (rn_fz_is_zero(e->raw) && (e->type || e->ndev_known))
			rn_fz_fail("GID %d is zero but has attributes", i);
		if (ib && e->ndev_known)
			rn_fz_fail("InfiniBand GID %d has a netdev", i);
		/* the type word (only read without query_gid_ex, for a non-zero GID) */
		if (!ex && !rn_fz_is_zero(e->raw)) {
			int type = RN_GID_TYPE_UNKNOWN;

			if (rn_fz_readable(&pc[RN_FZ_NGID + i])) {
				rn_fz_line(&pc[RN_FZ_NGID + i], 64, line);
				if (!strcmp(line, "RoCE v2"))
					type = RN_GID_TYPE_ROCE_V2;
				else if (!strcmp(line, "IB/RoCE v1") || !strcmp(line, "RoCE v1"))
					type = ib ? RN_GID_TYPE_IB : RN_GID_TYPE_ROCE_V1;
			}
			if (e->type != type)
				rn_fz_fail("GID %d: type %d for gid_attrs/types/%d, not %d", i,
					   e->type, i, type);
		}
		/* the netdev, when gid_attrs/ndevs/N names one */
		if (!ib && !rn_fz_is_zero(e->raw) && rn_fz_readable(&pc[2 * RN_FZ_NGID + i])) {
			rn_fz_line(&pc[2 * RN_FZ_NGID + i], 64, line);
			if (rn_fz_ifname_ok(line, sizeof(line)) &&
			    (!e->ndev_known || strcmp(e->ndev, line)))
				rn_fz_fail("GID %d: netdev \"%s\" read as \"%s\"", i, line,
					   e->ndev);
		}
	}

	rn_fz_policy(ctl0, ctl1, &pol);
	memset(&ch, 0, sizeof(ch));
	why[0] = '\0';
	if (ib)
		rc = rn_gid_select_ib(t, n, "fake0", 1, &ch, why, sizeof(why));
	else
		rc = rn_gid_select_roce(t, n, rn_fz_ifa, rn_fz_nifa, &pol, "fake0", 1, &ch, why,
					sizeof(why));
	if (rc == 0) {
		if (ch.index < 0 || ch.index >= n || memcmp(ch.raw, t[ch.index].raw, 16) ||
		    rn_fz_is_zero(ch.raw) || !ch.why[0] || (ib && ch.index > 1) ||
		    (!ib && pol.gid_index >= 0 && ch.index != pol.gid_index))
			rn_fz_fail("chose GID %d", ch.index);
		if (!ib) {
			if (rn_gid_judge(&t[ch.index], rn_fz_ifa, rn_fz_nifa, &pol, NULL) !=
			    RN_GID_OK)
				rn_fz_fail("chose unusable GID %d", ch.index);
			for (int i = 0; i < ch.index && pol.gid_index < 0; i++)
				if (rn_gid_judge(&t[i], rn_fz_ifa, rn_fz_nifa, &pol, NULL) ==
				    RN_GID_OK)
					rn_fz_fail("chose GID %d over usable GID %d", ch.index, i);
		}
	} else if ((rc != -ENOENT && rc != -EINVAL) || !why[0]) {
		rn_fz_fail("GID choice: %d without a reason", rc);
	}
	free(t);
}

static char rn_fz_netns_want(const struct rn_fz_piece *pc)
{
	char line[16];

	if (!rn_fz_readable(pc))
		return '?';
	rn_fz_line(pc, sizeof(line), line);
	return line[0] == 'Y' || line[0] == '1'	  ? 'Y'
	       : line[0] == 'N' || line[0] == '0' ? 'N'
						  : '?';
}

/* numa_node holding a plain decimal 0..4095 (what the kernel writes, but -1) must give it. */
static int rn_fz_numa_want(const struct rn_fz_piece *pc)
{
	char line[32];
	size_t n;

	if (!rn_fz_readable(pc))
		return -1;
	rn_fz_line(pc, sizeof(line), line);
	n = strlen(line);
	if (!n || n > 4 || strspn(line, "0123456789") != n || atoi(line) > 4095)
		return -2; /* anything else: -1..4095, whatever it is */
	return atoi(line);
}

static void rn_fz_discover(const char *root, int ctl0, int ctl1, const struct rn_fz_piece *pc)
{
	char sysfs_root[PATH_MAX], real[PATH_MAX], hca[] = "", range[] = "10.0.0.0/24",
						   norange[] = "";
	struct rn_config cfg;
	struct rn_discovery *d = NULL;
	int numa = rn_fz_numa_want(&pc[RN_FZ_NFILES - 1]);

	if (!realpath(root, real))
		rn_fz_fail("realpath %s: %s", root, strerror(errno));
	memset(&cfg, 0, sizeof(cfg));
	snprintf(sysfs_root, sizeof(sysfs_root), "%s", root);
	cfg.sysfs_root = sysfs_root;
	cfg.ib_hca = hca;
	cfg.ib_addr_range = ctl1 & RN_FZ_RANGE ? range : norange;
	cfg.ib_addr_family = ctl0 & RN_FZ_INET6 ? RN_AF_INET6 : RN_AF_INET;
	cfg.ib_roce_version = ctl0 & RN_FZ_ROCE1 ? 1 : 2;
	cfg.ib_gid_index = ctl1 & RN_FZ_INDEX1 ? 1 : -1;
	if (rn_discover(&cfg, rn_fz_ifa, rn_fz_nifa, &d) || !d)
		rn_fz_fail("discovery failed");
	if (d->nlisted != 1 || d->nports < 0 || d->nports > 2 || d->ndrops < 0 ||
	    d->nports + d->ndrops < 2 || d->netns_mode != rn_fz_netns_want(&pc[RN_FZ_NFILES - 2]))
		rn_fz_fail("discovery: %d listed, %d ports, %d drops, netns_mode %c", d->nlisted,
			   d->nports, d->ndrops, d->netns_mode);
	for (int i = 0; i < d->ndrops; i++)
		if (d->drops[i].kind < RN_DROP_OPEN || d->drops[i].kind > RN_DROP_NO_PORT ||
		    !d->drops[i].why[0])
			rn_fz_fail("drop %d: kind %d, why \"%s\"", i, d->drops[i].kind,
				   d->drops[i].why);
	for (int i = 0; i < d->nports; i++) {
		const struct rn_port *p = &d->ports[i];
		char busid[RN_BUSID_MAX];

		if (p->numa_node < -1 || p->numa_node > 4095 ||
		    (numa >= -1 && p->numa_node != numa))
			rn_fz_fail("port %d: numa_node %d, the file says %d", i, p->numa_node,
				   numa);
		if (!p->pci_path || strncmp(p->pci_path, real, strlen(real)))
			rn_fz_fail("port %d: PCI path %s", i, p->pci_path ? p->pci_path : "(null)");
		if (strnlen(p->pci_root, sizeof(p->pci_root)) == sizeof(p->pci_root) ||
		    (p->pci_root[0] &&
		     (rn_busid_parse(p->pci_root, busid) || strcmp(busid, p->pci_root))))
			rn_fz_fail("port %d: root port \"%.*s\" is not a bus id", i,
				   (int)sizeof(p->pci_root), p->pci_root);
		if (p->gid.index < 1 || p->gid.index >= 16 || rn_fz_is_zero(p->gid.raw) ||
		    p->gid.type != (ctl0 & RN_FZ_ROCE1 ? RN_GID_TYPE_ROCE_V1 : RN_GID_TYPE_ROCE_V2))
			rn_fz_fail("port %d: GID %d of type %d", i, p->gid.index, p->gid.type);
	}
	rn_discovery_destroy(d);
}

static void rn_fz_init(void)
{
	char exe[PATH_MAX], lib[PATH_MAX + 64];
	ssize_t n;

	rn_log_set_logger(rn_fz_logger);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		rn_fz_fail("readlink /proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	/* test/unit/verbs.cmake builds it into <build>/test/fake; this binary is in <build>/test */
	snprintf(lib, sizeof(lib), "%s/fake/libfake_verbs_full.so", dirname(exe));
	if (rn_verbs_load(lib))
		rn_fz_fail("cannot load the fake libibverbs %s", lib);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct rn_fz_piece pc[RN_FZ_NFILES + 1];
	char root[64], rel[PATH_MAX], dev[256];
	char link[PATH_MAX + 300], target[PATH_MAX + 300];
	const uint8_t *p, *end = data + size;
	int ctl0, ctl1, k = 0;

	if (!ready) {
		rn_fz_init();
		ready = true;
	}
	if (size < 2)
		return 0;
	ctl0 = data[0];
	ctl1 = data[1];
	memset(pc, 0, sizeof(pc));
	for (p = data + 2; p <= end && k <= RN_FZ_NFILES; k++) {
		const uint8_t *nul = memchr(p, 0, (size_t)(end - p));

		pc[k].p = p;
		pc[k].len = (size_t)((nul ? nul : end) - p);
		pc[k].given = true;
		if (!nul)
			break;
		p = nul + 1;
	}

	/* on tmpfs when there is one: a tree per input on a disk costs five times as much */
	snprintf(root, sizeof(root), "%s/rn-fz-sysfs.XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	if (!mkdtemp(root))
		rn_fz_fail("mkdtemp: %s", strerror(errno));
	rn_fz_mkdirs(root, RN_FZ_PORT "/gids");
	rn_fz_mkdirs(root, RN_FZ_PORT "/gid_attrs/types");
	rn_fz_mkdirs(root, RN_FZ_PORT "/gid_attrs/ndevs");
	rn_fz_mkdirs(root, "module/ib_core/parameters");
	rn_fz_dev_path(&pc[RN_FZ_PIECE_DEV], dev, sizeof(dev));
	if (dev[0]) {
		snprintf(rel, sizeof(rel), "devices/%s", dev);
		rn_fz_mkdirs(root, rel);
		snprintf(target, sizeof(target), "%s/%s", root, rel);
		snprintf(link, sizeof(link), "%s/class/infiniband/fake0/device", root);
		if (symlink(target, link))
			rn_fz_fail("symlink %s: %s", link, strerror(errno));
	} else {
		snprintf(rel, sizeof(rel), "class/infiniband/fake0/device");
		rn_fz_mkdirs(root, rel);
	}
	for (int i = 0; i < RN_FZ_NGID; i++) {
		char f[96];

		snprintf(f, sizeof(f), RN_FZ_PORT "/gids/%d", i);
		rn_fz_write(root, f, &pc[i]);
		snprintf(f, sizeof(f), RN_FZ_PORT "/gid_attrs/types/%d", i);
		rn_fz_write(root, f, &pc[RN_FZ_NGID + i]);
		snprintf(f, sizeof(f), RN_FZ_PORT "/gid_attrs/ndevs/%d", i);
		rn_fz_write(root, f, &pc[2 * RN_FZ_NGID + i]);
	}
	rn_fz_write(root, "module/ib_core/parameters/netns_mode", &pc[RN_FZ_NFILES - 2]);
	snprintf(target, sizeof(target), "%s/numa_node", rel);
	rn_fz_write(root, target, &pc[RN_FZ_NFILES - 1]);

	rn_fz_table(root, ctl0, ctl1, pc);
	if (rn_netns_mode(root) != rn_fz_netns_want(&pc[RN_FZ_NFILES - 2]))
		rn_fz_fail("netns_mode %c", rn_netns_mode(root));
	rn_fz_discover(root, ctl0, ctl1, pc);

	if (nftw(root, rn_fz_rm, 16, FTW_DEPTH | FTW_PHYS))
		rn_fz_fail("cannot remove %s: %s", root, strerror(errno));
	return 0;
}
