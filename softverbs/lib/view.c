// SPDX-License-Identifier: Apache-2.0
/*
 * Pod view reader: turns $SOFTVERBS_VIEW (class/infiniband/<dev>/..., softverbs/config; the
 * contract is docs/softverbs.md) into sv_g.dev[]. Files that the kernel would make unreadable
 * (foreign GID entries: read() fails with EINVAL) are simply invalid entries. A device whose
 * files are malformed is skipped with one message on stderr; nothing here may crash on bad
 * input. It must not talk to the network or the rendezvous directory.
 */
#include "sv.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sv_dev_marker[] = "softverbs";

/* Reads a small file into buf (trailing newline stripped). -errno on failure. */
static int sv_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int sv_parse_guid(const char *s, __be64 *out)
{
	unsigned int a, b, c, d;
	char tail;

	if (sscanf(s, "%4x:%4x:%4x:%4x%c", &a, &b, &c, &d, &tail) != 4)
		return -EINVAL;
	*out = htobe64(((uint64_t)a << 48) | ((uint64_t)b << 32) | ((uint64_t)c << 16) | d);
	return 0;
}

static int sv_parse_gid(const char *s, union ibv_gid *gid)
{
	unsigned int g[8];
	char tail;
	int i;

	if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
		   &g[6], &g[7], &tail) != 8)
		return -EINVAL;
	for (i = 0; i < 8; i++) {
		gid->raw[2 * i] = g[i] >> 8;
		gid->raw[2 * i + 1] = g[i] & 0xff;
	}
	return 0;
}

/* "100 Gb/sec (4X EDR)" -> gbps, width and speed encodings of ibv_port_attr. */
static int sv_parse_rate(const char *s, struct sv_port *p)
{
	static const struct {
		const char *name;
		uint8_t code;
	} speeds[] = {
		{ "SDR", 1 },  { "DDR", 2 },  { "QDR", 4 },  { "FDR10", 8 },
		{ "FDR", 16 }, { "EDR", 32 }, { "HDR", 64 }, { "NDR", 128 },
	};
	char sname[16] = "";
	int lanes = 0;
	size_t i;

	if (sscanf(s, "%lf Gb/sec (%dX %15[A-Z0-9])", &p->gbps, &lanes, sname) < 1 ||
	    !(p->gbps > 0) || p->gbps > 1e6)
		return -EINVAL;
	switch (lanes) {
	case 1:
		p->width = 1;
		break;
	case 2:
		p->width = 16;
		break;
	case 8:
		p->width = 4;
		break;
	case 12:
		p->width = 8;
		break;
	default:
		p->width = 2;
		break; /* 4X */
	}
	p->speed = 32;
	for (i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (!strcmp(sname, speeds[i].name))
			p->speed = speeds[i].code;
	return 0;
}

static enum ibv_mtu sv_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256:
		return IBV_MTU_256;
	case 512:
		return IBV_MTU_512;
	case 1024:
		return IBV_MTU_1024;
	case 2048:
		return IBV_MTU_2048;
	case 4096:
		return IBV_MTU_4096;
	default:
		return 0;
	}
}

static void sv_load_gids(const char *pdir, struct sv_port *p)
{
	char path[1024], buf[128];
	int i;

	p->ngids = 0;
	for (i = 0; i < SV_MAX_GIDS; i++) {
		struct sv_gid *g = &p->gids[i];
		struct stat st;

		sv_fmt(path, sizeof(path), "%s/gids/%d", pdir, i);
		if (lstat(path, &st))
			break;
		p->ngids = i + 1;
		if (sv_read_file(path, buf, sizeof(buf)) || sv_parse_gid(buf, &g->gid))
			continue;
		if (!g->gid.global.subnet_prefix && !g->gid.global.interface_id)
			continue;
		sv_fmt(path, sizeof(path), "%s/gid_attrs/types/%d", pdir, i);
		if (sv_read_file(path, buf, sizeof(buf))) {
			/* missing types file: assume the link layer's natural type */
			if (lstat(path, &st) == 0)
				continue; /* exists but unreadable: another namespace's entry */
			g->type = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? IBV_GID_TYPE_IB
									     : IBV_GID_TYPE_ROCE_V2;
		} else if (!strcmp(buf, "RoCE v2")) {
			g->type = IBV_GID_TYPE_ROCE_V2;
		} else if (p->link_layer == IBV_LINK_LAYER_ETHERNET) {
			g->type = IBV_GID_TYPE_ROCE_V1;
		} else {
			g->type = IBV_GID_TYPE_IB;
		}
		g->valid = true;
		sv_fmt(path, sizeof(path), "%s/gid_attrs/ndevs/%d", pdir, i);
		if (sv_read_file(path, buf, sizeof(buf)) == 0 && buf[0] && !strchr(buf, '/')) {
			char ipath[1024], ibuf[32];

			sv_fmt(ipath, sizeof(ipath), "%s/class/net/%s/ifindex", sv_g.view, buf);
			if (sv_read_file(ipath, ibuf, sizeof(ibuf)) == 0)
				g->ifindex = (uint32_t)strtoul(ibuf, NULL, 10);
		}
	}
}

static int sv_load_port(const char *ddir, const char *devname, int n, struct sv_port *p)
{
	char pdir[768], path[1024], buf[128];

	sv_fmt(pdir, sizeof(pdir), "%s/ports/%d", ddir, n);
	sv_fmt(path, sizeof(path), "%s/state", pdir);
	if (sv_read_file(path, buf, sizeof(buf)) || !isdigit((unsigned char)buf[0])) {
		sv_log("%s: %s: unreadable or malformed (want \"4: ACTIVE\"); device skipped",
		       devname, path);
		return -EINVAL;
	}
	p->state = atoi(buf);
	if (p->state < IBV_PORT_NOP || p->state > IBV_PORT_ACTIVE_DEFER) {
		sv_log("%s: %s: state %d out of range; device skipped", devname, path, p->state);
		return -EINVAL;
	}
	sv_fmt(path, sizeof(path), "%s/phys_state", pdir);
	p->phys_state = sv_read_file(path, buf, sizeof(buf)) ? 5 : atoi(buf);
	sv_fmt(path, sizeof(path), "%s/link_layer", pdir);
	if (sv_read_file(path, buf, sizeof(buf)) || !strcmp(buf, "Ethernet"))
		p->link_layer = IBV_LINK_LAYER_ETHERNET;
	else if (!strcmp(buf, "InfiniBand"))
		p->link_layer = IBV_LINK_LAYER_INFINIBAND;
	else {
		sv_log("%s: %s: \"%s\" is neither Ethernet nor InfiniBand; device skipped", devname,
		       path, buf);
		return -EINVAL;
	}
	sv_fmt(path, sizeof(path), "%s/rate", pdir);
	if (sv_read_file(path, buf, sizeof(buf)) || sv_parse_rate(buf, p)) {
		sv_log("%s: %s: malformed rate (want \"100 Gb/sec (4X EDR)\"); device skipped",
		       devname, path);
		return -EINVAL;
	}
	sv_fmt(path, sizeof(path), "%s/lid", pdir);
	p->lid = sv_read_file(path, buf, sizeof(buf)) ? 0 : (uint16_t)strtoul(buf, NULL, 0);
	p->mtu = IBV_MTU_4096;
	p->latency_us = 0;
	sv_load_gids(pdir, p);
	pthread_mutex_init(&p->rate_lock, NULL);
	return 0;
}

static struct sv_device *sv_find_dev(const char *name)
{
	int i;

	for (i = 0; i < sv_g.ndev; i++)
		if (!strcmp(sv_g.dev[i]->dev.name, name))
			return sv_g.dev[i];
	return NULL;
}

/* softverbs/config: node, pod, netns, rdv, port <dev> <port> mtu= latency_us= rail= */
static void sv_load_config(void)
{
	char path[1024], line[1024];
	FILE *f;
	int lineno = 0;

	sv_fmt(path, sizeof(path), "%s/softverbs/config", sv_g.view);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char key[32], a[512], b[64], rest[512];
		int n;

		lineno++;
		rest[0] = '\0';
		n = sscanf(line, "%31s %511s %63s %511[^\n]", key, a, b, rest);
		if (n < 1 || key[0] == '#')
			continue;
		if (!strcmp(key, "node") && n >= 2) {
			sv_fmt(sv_g.node, sizeof(sv_g.node), "%s", a);
		} else if (!strcmp(key, "pod") && n >= 2) {
			sv_fmt(sv_g.pod, sizeof(sv_g.pod), "%s", a);
		} else if (!strcmp(key, "rdv") && n >= 2) {
			if (!getenv("SOFTVERBS_RDV"))
				sv_fmt(sv_g.rdv, sizeof(sv_g.rdv), "%s", a);
		} else if (!strcmp(key, "gdr") && n >= 2) {
			sv_gdr_configure(a, path);
		} else if (!strcmp(key, "netns")) {
			/* informational: the namespace is compared by inode at connect time */
		} else if (!strcmp(key, "port") && n >= 3) {
			struct sv_device *d = sv_find_dev(a);
			int pn = atoi(b);
			char *tok, *save = NULL;
			struct sv_port *p;

			if (!d || pn < 1 || pn > d->nports)
				continue; /* a device of another pod, or skipped */
			p = &d->port[pn];
			for (tok = strtok_r(rest, " \t", &save); tok;
			     tok = strtok_r(NULL, " \t", &save)) {
				if (!strncmp(tok, "mtu=", 4) && sv_mtu_enum(atoi(tok + 4)))
					p->mtu = sv_mtu_enum(atoi(tok + 4));
				else if (!strncmp(tok, "latency_us=", 11))
					p->latency_us = strtod(tok + 11, NULL);
				else if (!strncmp(tok, "rail=", 5))
					sv_fmt(p->rail, sizeof(p->rail), "%s", tok + 5);
				else
					sv_log("%s:%d: unknown port setting \"%s\" ignored", path,
					       lineno, tok);
			}
		} else {
			sv_log("%s:%d: unknown line \"%s\" ignored", path, lineno, key);
		}
	}
	fclose(f);
}

static int sv_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sv_load_device(const char *cdir, const char *name)
{
	char ddir[768], path[1024], buf[128];
	struct sv_device *d;
	int n;

	if (strlen(name) >= sizeof(d->dev.name)) {
		sv_log("%s/%s: device name too long; skipped", cdir, name);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return;
	sv_fmt(ddir, sizeof(ddir), "%s/%s", cdir, name);
	d->ops = sv_dev_marker;
	d->dev.node_type = IBV_NODE_CA;
	d->dev.transport_type = IBV_TRANSPORT_IB;
	sv_fmt(d->dev.name, sizeof(d->dev.name), "%s", name);
	sv_fmt(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", sv_g.ndev);
	sv_fmt(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
	       sv_g.ndev);
	sv_fmt(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "%s", ddir);

	sv_fmt(path, sizeof(path), "%s/node_guid", ddir);
	if (sv_read_file(path, buf, sizeof(buf)) || sv_parse_guid(buf, &d->node_guid)) {
		sv_log("%s: unreadable or malformed (want xxxx:xxxx:xxxx:xxxx); device skipped",
		       path);
		goto err_free;
	}
	sv_fmt(path, sizeof(path), "%s/sys_image_guid", ddir);
	if (sv_read_file(path, buf, sizeof(buf)) || sv_parse_guid(buf, &d->sys_image_guid))
		d->sys_image_guid = d->node_guid;
	sv_fmt(path, sizeof(path), "%s/fw_ver", ddir);
	if (sv_read_file(path, d->fw_ver, sizeof(d->fw_ver)))
		sv_fmt(d->fw_ver, sizeof(d->fw_ver), "softverbs-1.0");
	d->vendor_part_id = 0x5356; /* "SV" */

	for (n = 1; n <= SV_MAX_PORTS; n++) {
		struct stat st;

		sv_fmt(path, sizeof(path), "%s/ports/%d", ddir, n);
		if (stat(path, &st))
			break;
		if (sv_load_port(ddir, name, n, &d->port[n]))
			goto err_free;
		d->nports = n;
	}
	if (!d->nports) {
		sv_log("%s: no ports/1; device skipped", ddir);
		goto err_free;
	}
	d->index = sv_g.ndev;
	sv_g.dev[sv_g.ndev++] = d;
	return;

err_free:
	free(d);
}

void sv_view_load(void)
{
	char cdir[600];
	char *names[SV_MAX_DEVS];
	int nnames = 0, i;
	struct dirent *de;
	DIR *dir;

	sv_fmt(cdir, sizeof(cdir), "%s/class/infiniband", sv_g.view);
	dir = opendir(cdir);
	if (!dir) {
		sv_log("SOFTVERBS_VIEW=%s: no class/infiniband directory (%s); no devices",
		       sv_g.view, strerror(errno));
		return;
	}
	while ((de = readdir(dir)) && nnames < SV_MAX_DEVS) {
		if (de->d_name[0] == '.')
			continue;
		names[nnames] = strdup(de->d_name);
		if (names[nnames])
			nnames++;
	}
	closedir(dir);
	qsort(names, nnames, sizeof(names[0]), sv_name_cmp);
	for (i = 0; i < nnames; i++) {
		sv_load_device(cdir, names[i]);
		free(names[i]);
	}
	sv_load_config();
}

bool sv_port_has_gid(const struct sv_device *dev, int port, const union ibv_gid *gid)
{
	int p, i;

	for (p = 1; p <= dev->nports; p++) {
		if (port && p != port)
			continue;
		for (i = 0; i < dev->port[p].ngids; i++)
			if (dev->port[p].gids[i].valid &&
			    !memcmp(dev->port[p].gids[i].gid.raw, gid->raw, 16))
				return true;
	}
	return false;
}

int sv_port_state(const struct sv_device *dev, int port)
{
	if (__atomic_load_n(&dev->port[port].fault_down, __ATOMIC_ACQUIRE))
		return IBV_PORT_DOWN;
	return dev->port[port].state;
}
