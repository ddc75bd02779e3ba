// SPDX-License-Identifier: Apache-2.0
/*
 * Real GPUs in a fabric, and the /sys a pod sees.
 *
 * sv_bind_cuda gives each `cuda=<n>` GPU of a spec the PCI bus id of this machine's CUDA
 * device n, so the views place the real GPU where the spec says.
 *
 * sv_exec_sysfs is what `softverbs-fabric exec` does before it runs a command in a pod: a
 * private mount namespace whose /sys is a tmpfs holding a copy of the pod's view (its PCI
 * tree, class/infiniband, class/net, bus/pci/devices, class/pci_bus), so that software which
 * reads /sys itself (NCCL's topology code, its IB transport, hwloc, railnet with no test
 * variables) finds the emulated NICs where the kernel would put them. What the view does not
 * emulate comes from a sysfs mounted afresh in the pod's network namespace: the CPU and NUMA
 * nodes (devices/system), virtual netdevs, kernel, module, fs, firmware and the other
 * classes and buses. The machine's own PCI tree is left out, except each bound GPU, whose
 * real device directory is bound over its place in the view's tree.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric.h"

#define SV_CUDA_MAX 64

/* ---- CUDA device n -> PCI bus id ----------------------------------------------------------- */

static int parse_busid(const char *s, struct sv_pci *out)
{
	unsigned int d, b, dev, fn;
	char tail;

	if (sscanf(s, "%x:%x:%x.%x%c", &d, &b, &dev, &fn, &tail) != 4 || d > 0xffff || b > 0xff ||
	    dev > 0x1f || fn > 7)
		return -EINVAL;
	out->domain = d, out->bus = b, out->dev = dev, out->fn = fn;
	return 0;
}

/* The bus ids of this machine's CUDA devices by index; the count, or -errno after a message. */
static int cuda_busids(struct sv_pci *ids, int max)
{
	const char *env = getenv("SOFTVERBS_FABRIC_CUDA_BUSIDS");
	int (*init)(unsigned int), (*count)(int *), (*get)(int *, int);
	int (*busid)(char *, int, int);
	int n = 0;
	void *lib;

	if (env) {
		char buf[1024], *save = NULL, *tok;

		if (strlen(env) >= sizeof(buf)) {
			fprintf(stderr,
				"softverbs-fabric: SOFTVERBS_FABRIC_CUDA_BUSIDS is too long\n");
			return -EINVAL;
		}
		strcpy(buf, env);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (n == max || parse_busid(tok, &ids[n])) {
				fprintf(stderr,
					"softverbs-fabric: SOFTVERBS_FABRIC_CUDA_BUSIDS: '%s' is "
					"not a PCI bus id such as 0000:18:00.0 (at most %d, "
					"comma-separated, by CUDA index)\n",
					tok, max);
				return -EINVAL;
			}
			n++;
		}
		return n;
	}
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr,
			"softverbs-fabric: a GPU of the spec is bound with cuda=, but the CUDA "
			"driver (libcuda.so.1) cannot be loaded: %s\n",
			dlerror());
		return -ENOENT;
	}
	*(void **)&init = dlsym(lib, "cuInit");
	*(void **)&count = dlsym(lib, "cuDeviceGetCount");
	*(void **)&get = dlsym(lib, "cuDeviceGet");
	*(void **)&busid = dlsym(lib, "cuDeviceGetPCIBusId");
	if (!init || !count || !get || !busid) {
		fprintf(stderr, "softverbs-fabric: libcuda.so.1 lacks cuInit, cuDeviceGetCount, "
				"cuDeviceGet or cuDeviceGetPCIBusId\n");
		dlclose(lib);
		return -ENOENT;
	}
	if (init(0) || count(&n)) {
		fprintf(stderr, "softverbs-fabric: the CUDA driver found no usable device "
				"(cuInit failed)\n");
		dlclose(lib);
		return -ENODEV;
	}
	n = n > max ? max : n;
	for (int i = 0; i < n; i++) {
		char s[32];
		int dev;

		if (get(&dev, i) || busid(s, (int)sizeof(s), dev) || parse_busid(s, &ids[i])) {
			fprintf(stderr, "softverbs-fabric: no PCI bus id for CUDA device %d\n", i);
			dlclose(lib);
			return -ENODEV;
		}
	}
	/* libcuda is left loaded: unloading a driver that initialised is not supported */
	return n;
}

int sv_bind_cuda(struct sv_fabric *f)
{
	struct sv_pci ids[SV_CUDA_MAX];
	int nids = -1;

	for (int i = 0; i < f->nnodes; i++) {
		struct sv_node *n = &f->nodes[i];

		for (int j = 0; j < n->ngpus; j++) {
			struct sv_gpu *g = &n->gpus[j];
			char a[32], b[32];

			if (g->cuda < 0)
				continue;
			if (nids < 0)
				nids = cuda_busids(ids, SV_CUDA_MAX);
			if (nids < 0)
				return nids;
			if (g->cuda >= nids) {
				if (!nids)
					fprintf(stderr,
						"%s:%d: gpu %s: cuda=%d, but this machine has no "
						"CUDA device\n",
						f->file, g->line, g->name, g->cuda);
				else
					fprintf(stderr,
						"%s:%d: gpu %s: cuda=%d, but this machine has %d "
						"CUDA device%s (cuda=0-%d)\n",
						f->file, g->line, g->name, g->cuda, nids,
						nids == 1 ? "" : "s", nids - 1);
				return -ENODEV;
			}
			for (int k = 0; k < n->nnics; k++)
				if (!memcmp(&n->nics[k].pci, &ids[g->cuda], sizeof(ids[0]))) {
					sv_pci_str(&ids[g->cuda], a, sizeof(a));
					fprintf(stderr,
						"%s:%d: gpu %s: CUDA device %d has bus id %s, "
						"which "
						"nic %s uses; give the nic another address\n",
						f->file, g->line, g->name, g->cuda, a,
						n->nics[k].name);
					return -EINVAL;
				}
			sv_pci_str(&ids[g->cuda], a, sizeof(a));
			sv_pci_str(&n->roots[g->root].port, b, sizeof(b));
			for (int k = 0; k < n->nroots + n->ngpus; k++) {
				const struct sv_root *r = k < n->nroots ? &n->roots[k] : NULL;
				const struct sv_pci *id = &ids[g->cuda];
				bool taken;

				if (r)
					taken = !memcmp(&r->port, id, sizeof(*id)) ||
						(r->has_switch &&
						 (!memcmp(&r->up, id, sizeof(*id)) ||
						  !memcmp(&r->down, id, sizeof(*id))));
				else
					taken = &n->gpus[k - n->nroots] != g &&
						!memcmp(&n->gpus[k - n->nroots].pci, id,
							sizeof(*id));
				if (!taken)
					continue;
				sv_pci_str(id, a, sizeof(a));
				fprintf(stderr,
					"%s:%d: gpu %s: CUDA device %d has bus id %s, which %s %s "
					"uses; give it another address\n",
					f->file, g->line, g->name, g->cuda, a, r ? "root" : "gpu",
					r ? r->name : n->gpus[k - n->nroots].name);
				return -EINVAL;
			}
			for (int k = 0; k < n->nroots; k++)
				if (n->roots[k].port.domain == ids[g->cuda].domain &&
				    n->roots[k].port.bus == ids[g->cuda].bus) {
					sv_pci_str(&ids[g->cuda], a, sizeof(a));
					fprintf(stderr,
						"%s:%d: gpu %s: CUDA device %d has bus id %s, on "
						"the bus "
						"of root %s's port: NCCL could not tell the two "
						"apart; "
						"give the root a port in another domain (e.g. "
						"port=%04x:00:01.1, its NICs in that domain too) "
						"and the "
						"GPU sits below it\n",
						f->file, g->line, g->name, g->cuda, a,
						n->roots[k].name, ids[g->cuda].domain + 1);
					return -EINVAL;
				}
			for (int k = 0; k < n->nnics; k++)
				if (n->nics[k].root != g->root &&
				    n->nics[k].pci.domain == ids[g->cuda].domain &&
				    n->nics[k].pci.bus == ids[g->cuda].bus) {
					fprintf(stderr,
						"%s:%d: gpu %s: CUDA device %d is on bus %02x, as "
						"nic "
						"%s of another root is; give the nic another bus\n",
						f->file, g->line, g->name, g->cuda,
						ids[g->cuda].bus, n->nics[k].name);
					return -EINVAL;
				}
			sv_pci_str(&g->pci, a, sizeof(a));
			sv_pci_str(&ids[g->cuda], b, sizeof(b));
			if (strcmp(a, b))
				fprintf(stderr,
					"softverbs-fabric: %s/%s: bound to CUDA device %d, bus id "
					"%s "
					"(in place of %s)\n",
					n->name, g->name, g->cuda, b, a);
			g->pci = ids[g->cuda];
		}
	}
	return 0;
}

/* ---- the private /sys ------------------------------------------------------------------------ */

static char copy_from[PATH_MAX], copy_to[PATH_MAX];

static int copy_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char to[PATH_MAX], buf[8192];
	ssize_t n;
	int in, out, ret = 0;

	(void)ftw;
	if (sv_pathf(to, sizeof(to), "%s%s", copy_to, path + strlen(copy_from)))
		return -ENAMETOOLONG;
	switch (flag) {
	case FTW_D:
		return mkdir(to, 0755) && errno != EEXIST ? -errno : 0;
	case FTW_SL:
	case FTW_SLN:
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0)
			return -errno;
		buf[n] = 0;
		return symlink(buf, to) ? -errno : 0;
	case FTW_F:
		in = open(path, O_RDONLY | O_CLOEXEC);
		if (in < 0)
			return -errno;
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st->st_mode & 0777);
		if (out < 0) {
			ret = -errno;
			close(in);
			return ret;
		}
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n) {
				ret = -EIO;
				break;
			}
		if (n < 0)
			ret = -errno;
		close(in);
		close(out);
		return ret;
	default:
		return -EIO;
	}
}

/* Binds real/<rel> onto /sys/<rel> (a directory; made when missing). */
static int bind_real(const char *real, const char *rel)
{
	char from[PATH_MAX], to[PATH_MAX];

	sv_pathf(from, sizeof(from), "%s/%s", real, rel);
	sv_pathf(to, sizeof(to), "/sys/%s", rel);
	if (mkdir(to, 0755) && errno != EEXIST)
		return -errno;
	if (mount(from, to, NULL, MS_BIND | MS_REC, NULL)) {
		int ret = -errno;

		fprintf(stderr, "softverbs-fabric exec: bind %s on %s: %s\n", from, to,
			strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * For each directory entry of real/<rel> that /sys/<rel> (the view) does not have: bind it
 * (`bind`), or, when `link_to` is set, make a symlink to link_to/<name> (class/net's virtual
 * netdevs). Entries named in `skip` are left out.
 */
static int merge_dir(const char *real, const char *rel, const char *link_to,
		     const char *const *skip)
{
	char path[PATH_MAX], sub[PATH_MAX], mine[PATH_MAX];
	struct dirent *e;
	struct stat st;
	DIR *d;
	int ret = 0;

	sv_pathf(path, sizeof(path), "%s/%s", real, rel);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	sv_pathf(mine, sizeof(mine), "/sys/%s", rel);
	if (mkdir(mine, 0755) && errno != EEXIST) {
		ret = -errno;
		closedir(d);
		return ret;
	}
	while (!ret && (e = readdir(d))) {
		int skipped = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");

		for (int i = 0; skip && skip[i] && !skipped; i++)
			skipped = !strcmp(skip[i], e->d_name) ||
				  (skip[i][strlen(skip[i]) - 1] == '*' &&
				   !strncmp(skip[i], e->d_name, strlen(skip[i]) - 1));
		if (skipped)
			continue;
		sv_pathf(sub, sizeof(sub), "%s/%s", mine, e->d_name);
		if (!lstat(sub, &st))
			continue; /* the view's own */
		if (link_to) {
			char target[PATH_MAX];

			sv_pathf(target, sizeof(target), "%s/%s", link_to, e->d_name);
			if (symlink(target, sub))
				ret = -errno;
			continue;
		}
		sv_pathf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (lstat(sub, &st) || !S_ISDIR(st.st_mode))
			continue; /* attribute files of the top levels are not needed */
		sv_pathf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		ret = bind_real(real, sub);
	}
	closedir(d);
	return ret;
}

/* Binds each bound GPU's real device directory over its place in the view. */
static int bind_gpus(const char *view, const char *real)
{
	char path[PATH_MAX], line[256];
	FILE *fp;
	int ret = 0;

	sv_pathf(path, sizeof(path), "%s/softverbs/gpus", view);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	while (!ret && fgets(line, sizeof(line), fp)) {
		char name[64], bdf[32], from[PATH_MAX], to[PATH_MAX], rel[PATH_MAX];
		const char *c = strstr(line, " cuda=");

		if (line[0] == '#' || !c || sscanf(line, "%63s %31s", name, bdf) != 2)
			continue;
		sv_pathf(rel, sizeof(rel), "%s/bus/pci/devices/%s", real, bdf);
		if (!realpath(rel, from)) {
			fprintf(stderr,
				"softverbs-fabric exec: %s is bound to CUDA device %d, bus id %s, "
				"but this machine's sysfs has no PCI device %s\n",
				name, atoi(c + 6), bdf, bdf);
			ret = -ENODEV;
			break;
		}
		sv_pathf(rel, sizeof(rel), "/sys/bus/pci/devices/%s", bdf);
		if (!realpath(rel, to)) {
			ret = -errno;
			fprintf(stderr, "softverbs-fabric exec: %s: %s\n", rel, strerror(errno));
			break;
		}
		if (mount(from, to, NULL, MS_BIND, NULL)) {
			ret = -errno;
			fprintf(stderr, "softverbs-fabric exec: bind %s on %s: %s\n", from, to,
				strerror(errno));
		}
	}
	fclose(fp);
	return ret;
}

int sv_exec_sysfs(const char *view)
{
	static const char *const devices_skip[] = { "pci*", NULL };
	static const char *const bus_skip[] = { "pci", NULL };
	static const char *const pci_skip[] = { "devices", NULL };
	char real[] = "/tmp/softverbs-sys.XXXXXX", orig[] = "/tmp/softverbs-hostsys.XXXXXX";
	int ret;

	if (unshare(CLONE_NEWNS)) {
		ret = -errno;
		fprintf(stderr,
			"softverbs-fabric exec: cannot make a private mount namespace for the "
			"pod's /sys (%s); run as root, or use --host-sys to keep the host's /sys\n",
			strerror(errno));
		return ret;
	}
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) || !mkdtemp(real)) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric exec: mount namespace: %s\n", strerror(errno));
		return ret;
	}
	/*
	 * The host's /sys with what is mounted below it (cgroup, debugfs, tracefs, bpf): the
	 * source of fs/ and kernel/, which a fresh sysfs has empty.
	 */
	if (!mkdtemp(orig) || mount("/sys", orig, NULL, MS_BIND | MS_REC, NULL)) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric exec: bind /sys: %s\n", strerror(errno));
		rmdir(orig);
		rmdir(real);
		return ret;
	}
	/* a sysfs of this network namespace, the source of the real parts */
	if (mount("sysfs", real, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric exec: mount sysfs on %s: %s\n", real,
			strerror(errno));
		rmdir(real);
		umount2(orig, MNT_DETACH);
		rmdir(orig);
		return ret;
	}
	if (mount("softverbs-sys", "/sys", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64m")) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric exec: mount tmpfs on /sys: %s\n",
			strerror(errno));
		goto out;
	}
	if (!realpath(view, copy_from)) {
		ret = -errno;
		fprintf(stderr, "softverbs-fabric exec: %s: %s\n", view, strerror(errno));
		goto out;
	}
	strcpy(copy_to, "/sys");
	ret = nftw(copy_from, copy_entry, 32, FTW_PHYS);
	if (ret) {
		ret = ret < 0 ? ret : -EIO;
		fprintf(stderr, "softverbs-fabric exec: copying %s to /sys: %s\n", copy_from,
			strerror(-ret));
		goto out;
	}
	ret = merge_dir(real, "", NULL,
			(const char *const[]){ "devices", "class", "bus", "module", "fs", "kernel",
					       NULL }) ?:
	      bind_real(orig, "fs") ?: bind_real(orig, "kernel") ?:
	      merge_dir(real, "devices", NULL, devices_skip) ?:
	      merge_dir(real, "class", NULL, (const char *const[]){ "net", "pci_bus", NULL }) ?:
	      merge_dir(real, "class/net", "../../devices/virtual/net", NULL) ?:
	      merge_dir(real, "bus", NULL, bus_skip) ?:
	      merge_dir(real, "bus/pci", NULL, pci_skip) ?:
	      merge_dir(real, "module", NULL, NULL) ?: bind_gpus(copy_from, real);
out:
	umount2(real, MNT_DETACH);
	rmdir(real);
	umount2(orig, MNT_DETACH);
	rmdir(orig);
	return ret;
}
