// SPDX-License-Identifier: Apache-2.0
/* softverbs fixtures shared by the verbs-level tests; see rn_test_sv.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "railnet/verbs.h"
#include "rn_test.h"
#include "rn_test_sv.h"

static char rn_sv_rm_dir[256];

int rn_test_count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int rn_test_count_fds(void)
{
	return rn_test_count_dir("/proc/self/fd");
}

static void rn_sv_rm_view(void)
{
	char cmd[512];

	if (!rn_sv_rm_dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rn_sv_rm_dir);
	if (system(cmd))
		(void)0;
}

static void rn_sv_lib(char *lib, size_t len)
{
	snprintf(lib, len, "%s/softverbs/libibverbs.so.1", rn_test_build_dir());
}

int rn_test_sv_mkview(const char *tag, int ndev, int nport, int gbps, char *dir, size_t len)
{
	char lib[4096], cmd[4096 + 300];

	rn_sv_lib(lib, sizeof(lib));
	if (access(lib, R_OK))
		rn_test_skip("softverbs not built (%s): no RDMA fabric to test on", lib);
	snprintf(dir, len, "%s/rn-test-%s-XXXXXX", rn_test_tmp_dir(), tag);
	if (!mkdtemp(dir))
		return -1;
	if (!rn_sv_rm_dir[0]) {
		snprintf(rn_sv_rm_dir, sizeof(rn_sv_rm_dir), "%s", dir);
		atexit(rn_sv_rm_view);
	}
	snprintf(cmd, sizeof(cmd), "'%s/bin/sv-mkview' '%s' %d %d %d", rn_test_build_dir(), dir,
		 ndev, nport, gbps);
	return system(cmd) ? -1 : 0;
}

static int rn_sv_write(const char *dir, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "we");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}

int rn_test_sv_mkview_lo(const char *tag, int nport, const char *pci, char *dir, size_t len)
{
	char rel[256], path[768], link[768], cmd[1024];

	if (rn_test_sv_mkview(tag, 1, nport, 100, dir, len))
		return -1;
	for (int p = 1; p <= nport; p++) {
		snprintf(rel, sizeof(rel), "class/infiniband/svdev0/ports/%d/gids/1", p);
		if (rn_sv_write(dir, rel, "0000:0000:0000:0000:0000:ffff:7f00:0001\n"))
			return -1;
		snprintf(path, sizeof(path), "%s/class/infiniband/svdev0/ports/%d/gid_attrs/ndevs",
			 dir, p);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		snprintf(rel, sizeof(rel), "class/infiniband/svdev0/ports/%d/gid_attrs/ndevs/1", p);
		if (rn_sv_write(dir, rel, "lo\n"))
			return -1;
	}
	if (!pci)
		return 0;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/devices/%s'", dir, pci);
	if (system(cmd))
		return -1;
	snprintf(path, sizeof(path), "%s/devices/%s", dir, pci);
	snprintf(link, sizeof(link), "%s/class/infiniband/svdev0/device", dir);
	return symlink(path, link) ? -1 : 0;
}

int rn_test_sv_open(const char *dir, int ndev, struct ibv_context **ctx)
{
	struct ibv_device **list;
	char lib[4096];
	int n, i, d;

	rn_sv_lib(lib, sizeof(lib));
	setenv("SOFTVERBS_VIEW", dir, 1);
	if (rn_verbs_load(lib))
		return -1;
	if (rn_verbs()->get_device_list(&list, &n) || n < ndev)
		return -1;
	for (i = 0; i < n; i++) {
		const char *name = rn_verbs()->get_device_name(list[i]);

		if (strncmp(name, "svdev", 5))
			continue;
		d = atoi(name + 5);
		if (d >= 0 && d < ndev && rn_verbs()->open_device(list[i], &ctx[d]))
			return -1;
	}
	rn_verbs()->free_device_list(list);
	for (d = 0; d < ndev; d++)
		if (!ctx[d])
			return -1;
	return 0;
}

void rn_test_sv_close(int ndev, struct ibv_context **ctx)
{
	for (int d = 0; d < ndev; d++) {
		if (ctx[d])
			rn_verbs()->close_device(ctx[d]);
		ctx[d] = NULL;
	}
	rn_verbs_unload();
}

int rn_test_sv_rdv_qps(const char *dir)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/rdv/qp", dir);
	return rn_test_count_dir(p);
}
