// SPDX-License-Identifier: Apache-2.0
/*
 * `softverbs-fabric up` and `down`: real network namespaces for a built fabric. Every pod
 * gets a netns holding one veth end per child interface, renamed to the pod's ifname and
 * carrying its addresses; every node gets a host netns with its rail netdevs and host
 * addresses (hostNetwork pods share it). The other veth ends join one bridge per rail in the
 * root netns, so pods on a rail reach each other across nodes. Names carry a short hash of
 * OUTDIR so two fabrics can be up at once. Everything made is appended to OUTDIR/netns.state
 * before the next step, and `down` deletes exactly that list, ignoring what is already gone.
 * It runs iproute2's `ip` (no shell) and touches nothing it did not make.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric.h"

static void fabric_id(const char *outdir, char id[8])
{
	uint32_t h = 2166136261u;

	for (; *outdir; outdir++)
		h = (h ^ (uint8_t)*outdir) * 16777619u;
	snprintf(id, 8, "%04x", (h ^ (h >> 16)) & 0xffff);
}

void sv_netns_name(const char *outdir, const struct sv_node *n, int pod, char *buf, size_t len)
{
	char id[8];

	fabric_id(outdir, id);
	if (pod >= 0 && n->pods[pod].hostnet)
		pod = -1;
	snprintf(buf, len, "sv%s-%s-%s", id, n->name, pod < 0 ? "host" : n->pods[pod].name);
}

/* Runs `ip` with argv; quiet: stdout/stderr to /dev/null. Returns its exit status or -errno. */
static int run_ip(int quiet, const char *const *argv)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);

			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		execvp("ip", (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return -EINTR;
}

#define IP(...)                                                          \
	({                                                               \
		const char *const _argv[] = { "ip", __VA_ARGS__, NULL }; \
		step(_argv);                                             \
	})

static int step(const char *const *argv)
{
	int ret = run_ip(0, argv), i;

	if (!ret)
		return 0;
	fprintf(stderr, "softverbs-fabric up: failed (%s):", ret == 127 ? "cannot run ip" : "exit");
	for (i = 0; argv[i]; i++)
		fprintf(stderr, " %s", argv[i]);
	fputc('\n', stderr);
	return ret < 0 ? ret : -EIO;
}

struct sv_up {
	const struct sv_fabric *f;
	const char *outdir;
	char id[8];
	FILE *state;
	int nveth;
	char *made; /* names already recorded, "\n"-separated, for dedup */
	size_t made_len;
};

static int remember(struct sv_up *u, const char *kind, const char *name)
{
	char key[128];
	size_t n = (size_t)snprintf(key, sizeof(key), "%s %s\n", kind, name);
	char *p;

	fprintf(u->state, "%s", key);
	if (fflush(u->state))
		return -EIO;
	p = realloc(u->made, u->made_len + n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + u->made_len, key, n + 1);
	u->made = p;
	u->made_len += n;
	return 0;
}

static int made(const struct sv_up *u, const char *kind, const char *name)
{
	char key[128];
	const char *p = u->made;

	snprintf(key, sizeof(key), "%s %s\n", kind, name);
	while (p && (p = strstr(p, key))) {
		if (p == u->made || p[-1] == '\n')
			return 1;
		p++;
	}
	return 0;
}

static int bridge(struct sv_up *u, int rail, char *br, size_t len)
{
	int ret;

	if (rail >= 0)
		snprintf(br, len, "sv%sr%d", u->id, rail);
	else
		snprintf(br, len, "sv%sd", u->id);
	if (made(u, "link", br))
		return 0;
	ret = remember(u, "link", br) ?: IP("link", "add", br, "type", "bridge") ?:
	      IP("link", "set", br, "up");
	return ret;
}

static int netns(struct sv_up *u, const char *name)
{
	if (made(u, "netns", name))
		return 0;
	return remember(u, "netns", name) ?: IP("netns", "add", name) ?:
	       IP("-n", name, "link", "set", "lo", "up");
}

/* One veth: the root end joins the rail's bridge, the other becomes `ifname` in `ns`. */
static int veth(struct sv_up *u, const char *ns, const char *ifname, int rail, int mtu,
		const struct sv_addr *addrs, int naddrs)
{
	char br[32], a[32], b[32], m[16], addr[80];
	int ret, i;

	ret = bridge(u, rail, br, sizeof(br));
	if (ret)
		return ret;
	u->nveth++;
	snprintf(a, sizeof(a), "sv%sv%d", u->id, u->nveth);
	snprintf(b, sizeof(b), "sv%sp%d", u->id, u->nveth);
	snprintf(m, sizeof(m), "%d", mtu);
	ret = remember(u, "link", a) ?:
	      IP("link", "add", a, "mtu", m, "type", "veth", "peer", "name", b, "mtu", m, "netns",
		 ns) ?:
	      IP("-n", ns, "link", "set", b, "name", ifname) ?:
	      IP("link", "set", a, "master", br, "up");
	for (i = 0; i < naddrs && !ret; i++) {
		sv_addr_str(&addrs[i], 1, addr, sizeof(addr));
		if (addrs[i].family == AF_INET6)
			ret = IP("-n", ns, "addr", "add", addr, "dev", ifname, "nodad");
		else
			ret = IP("-n", ns, "addr", "add", addr, "dev", ifname);
	}
	return ret ?: IP("-n", ns, "link", "set", ifname, "up");
}

static int up_node(struct sv_up *u, const struct sv_node *n)
{
	char ns[128];
	int i, k, ret;

	sv_netns_name(u->outdir, n, -1, ns, sizeof(ns));
	ret = netns(u, ns);
	for (i = 0; i < n->nnics && !ret; i++) {
		for (k = 0; k < n->nics[i].nports && !ret; k++) {
			const struct sv_port *pt = &n->nics[i].ports[k];

			if (pt->ib || pt->moved_to >= 0)
				continue;
			ret = veth(u, ns, pt->netdev, pt->rail, pt->mtu, pt->addrs, pt->naddrs);
		}
	}
	for (i = 0; i < n->npods && !ret; i++) {
		const struct sv_pod *p = &n->pods[i];

		if (p->hostnet)
			continue;
		sv_netns_name(u->outdir, n, i, ns, sizeof(ns));
		ret = netns(u, ns);
		for (k = 0; k < p->nifaces && !ret; k++) {
			const struct sv_iface *ifc = &p->ifaces[k];

			ret = veth(u, ns, ifc->ifname, n->nics[ifc->nic].ports[ifc->port].rail,
				   ifc->mtu, ifc->addrs, ifc->naddrs);
		}
	}
	if (ret)
		return ret;
	sv_netns_name(u->outdir, n, -1, ns, sizeof(ns));
	ret = sv_write_netns_files(u->f, u->outdir, n, -1, ns);
	for (i = 0; i < n->npods && !ret; i++) {
		sv_netns_name(u->outdir, n, i, ns, sizeof(ns));
		ret = sv_write_netns_files(u->f, u->outdir, n, i, ns);
	}
	return ret;
}

/* Loads what an earlier `up` recorded, so `up --node` twice extends one state file. */
static int load_state(struct sv_up *u, const char *path)
{
	FILE *fp = fopen(path, "r");
	char line[256], kind[16], name[128];
	int k;

	if (!fp)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), fp)) {
		char *p;

		if (sscanf(line, "%15s %127s", kind, name) != 2)
			continue;
		p = realloc(u->made, u->made_len + strlen(line) + 1);
		if (!p) {
			fclose(fp);
			return -ENOMEM;
		}
		u->made = p;
		u->made_len += (size_t)sprintf(p + u->made_len, "%s %s\n", kind, name);
		if (!strcmp(kind, "link") && strlen(name) > 6 && sscanf(name + 6, "v%d", &k) == 1 &&
		    k > u->nveth)
			u->nveth = k;
	}
	fclose(fp);
	return 0;
}

int sv_netns_up(const struct sv_fabric *f, const char *outdir, const char *only_node)
{
	struct sv_up u = { .f = f, .outdir = outdir };
	char path[PATH_MAX];
	int i, ret = 0, found = 0;

	fabric_id(outdir, u.id);
	if (geteuid()) {
		fprintf(stderr, "softverbs-fabric up: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) "
				"to create network namespaces\n");
		return -EPERM;
	}
	snprintf(path, sizeof(path), "%s/netns.state", outdir);
	ret = load_state(&u, path);
	if (ret)
		return ret;
	u.state = fopen(path, "a");
	if (!u.state) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric up: cannot write %s: %s\n", path,
			strerror(errno));
		free(u.made);
		return ret;
	}
	for (i = 0; i < f->nnodes && !ret; i++) {
		if (only_node && strcmp(only_node, f->nodes[i].name))
			continue;
		found = 1;
		ret = up_node(&u, &f->nodes[i]);
	}
	fclose(u.state);
	free(u.made);
	if (!ret && only_node && !found) {
		fprintf(stderr, "softverbs-fabric up: no node '%s' in %s\n", only_node, f->file);
		ret = -ENOENT;
	}
	return ret;
}

int sv_netns_down(const char *outdir)
{
	char path[PATH_MAX], line[256], kind[16], name[128];
	FILE *fp;
	int pass, ret = 0;

	snprintf(path, sizeof(path), "%s/netns.state", outdir);
	fp = fopen(path, "r");
	if (!fp)
		return errno == ENOENT ? 0 : -errno;
	if (geteuid()) {
		fclose(fp);
		fprintf(stderr, "softverbs-fabric down: needs root\n");
		return -EPERM;
	}
	/* namespaces first (their veth ends go with them), then the root-netns links */
	for (pass = 0; pass < 2; pass++) {
		rewind(fp);
		while (fgets(line, sizeof(line), fp)) {
			char dev[PATH_MAX];
			struct stat st;

			if (sscanf(line, "%15s %127s", kind, name) != 2)
				continue;
			if (pass == 0 && !strcmp(kind, "netns")) {
				const char *const argv[] = { "ip", "netns", "del", name, NULL };

				snprintf(dev, sizeof(dev), "/run/netns/%s", name);
				if (!stat(dev, &st) && run_ip(0, argv)) {
					fprintf(stderr,
						"softverbs-fabric down: cannot delete netns %s\n",
						name);
					ret = -EIO;
				}
			} else if (pass == 1 && !strcmp(kind, "link")) {
				const char *const argv[] = { "ip", "link", "del", name, NULL };

				snprintf(dev, sizeof(dev), "/sys/class/net/%s", name);
				if (!lstat(dev, &st) && run_ip(0, argv) && !lstat(dev, &st)) {
					fprintf(stderr,
						"softverbs-fabric down: cannot delete link %s\n",
						name);
					ret = -EIO;
				}
			}
		}
	}
	fclose(fp);
	if (!ret)
		unlink(path);
	return ret;
}
