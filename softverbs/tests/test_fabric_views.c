// SPDX-License-Identifier: Apache-2.0
/*
 * Pod-view tests: builds every fixture spec in test/fixtures and checks the answers its
 * .expect file states (GID values, types and ndevs by index; entries that must read zero
 * with EINVAL on gid_attrs; which RDMA devices a view has; netns_mode; any file's text),
 * plus the output layout (env, config, rdv, device links) that docs/softverbs.md promises.
 * "gdr" lines are checked by test_fabric_topo against the hwloc XML.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric.h"
#include "rn_test.h"

static char outroot[PATH_MAX];

static int read_text(const char *path, char *buf, size_t len, int *err)
{
	int fd = open(path, O_RDONLY), n;

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	n = (int)read(fd, buf, len - 1);
	if (n < 0)
		*err = errno;
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* A hidden gid_attrs file: reading fails with EINVAL (as root), or it is the EINVAL link. */
static void expect_einval(const char *path)
{
	char buf[256], target[256];
	ssize_t n;
	int err;

	if (geteuid() == 0) {
		if (!read_text(path, buf, sizeof(buf), &err) || err != EINVAL)
			fail_msg("%s: read gave \"%s\" (errno %d), want EINVAL", path,
				 err ? "" : buf, err);
		return;
	}
	n = readlink(path, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = 0;
	assert_string_equal(target, "/proc/self/clear_refs");
}

static void expect_file(const char *path, const char *want)
{
	char buf[512];
	int err;

	if (read_text(path, buf, sizeof(buf), &err))
		fail_msg("%s: %s", path, strerror(err));
	if (strcmp(buf, want))
		fail_msg("%s: \"%s\", want \"%s\"", path, buf, want);
}

static void check_line(const char *out, const char *where, char *line)
{
	char *tok[40], *rest = NULL, *save = NULL, path[PATH_MAX * 2], view[PATH_MAX];
	int n = 0;

	for (char *t = strtok_r(line, " \t\n", &save); t && n < 40;
	     t = strtok_r(NULL, " \t\n", &save)) {
		tok[n++] = t;
		if (n == 4 && !strcmp(tok[0], "file")) {
			rest = strtok_r(NULL, "\n", &save);
			break;
		}
	}
	if (!n || tok[0][0] == '#')
		return;
	if (n < 3)
		fail_msg("%s: short line", where);
	sv_pathf(view, sizeof(view), "%s/%s/%s/view", out, tok[1], tok[2]);
	if (!strcmp(tok[0], "netns_mode")) {
		/* netns_mode <node> Y|N: every view of the node says so */
		sv_pathf(path, sizeof(path), "%s/%s/host/view/module/ib_core/parameters/netns_mode",
			 out, tok[1]);
		expect_file(path, tok[2]);
	} else if (!strcmp(tok[0], "dev")) {
		/* dev <node> <view> <dev>...: exactly these RDMA devices */
		struct dirent *e;
		DIR *d;
		int seen = 0;

		sv_pathf(path, sizeof(path), "%s/class/infiniband", view);
		d = opendir(path);
		if (!d)
			fail_msg("%s: %s: %s", where, path, strerror(errno));
		while ((e = readdir(d))) {
			int found = 0;

			if (e->d_name[0] == '.')
				continue;
			for (int i = 3; i < n; i++)
				found |= !strcmp(tok[i], e->d_name);
			if (!found)
				fail_msg("%s: %s has unexpected device %s", where, view, e->d_name);
			seen++;
		}
		closedir(d);
		if (seen != n - 3)
			fail_msg("%s: %s has %d devices, want %d", where, view, seen, n - 3);
	} else if (!strcmp(tok[0], "gid") && n == 9) {
		/* gid <node> <view> <dev> <port> <index> <gid> <v1|v2> <ndev|-> */
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gids/%s", view,
			 tok[3], tok[4], tok[5]);
		expect_file(path, tok[6]);
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/types/%s",
			 view, tok[3], tok[4], tok[5]);
		expect_file(path, !strcmp(tok[7], "v2") ? "RoCE v2" : "IB/RoCE v1");
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/ndevs/%s",
			 view, tok[3], tok[4], tok[5]);
		if (strcmp(tok[8], "-"))
			expect_file(path, tok[8]);
		else
			expect_einval(path);
	} else if (!strcmp(tok[0], "zero") && n == 6) {
		/* zero <node> <view> <dev> <port> <index> */
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gids/%s", view,
			 tok[3], tok[4], tok[5]);
		expect_file(path, "0000:0000:0000:0000:0000:0000:0000:0000");
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/types/%s",
			 view, tok[3], tok[4], tok[5]);
		expect_einval(path);
		sv_pathf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/ndevs/%s",
			 view, tok[3], tok[4], tok[5]);
		expect_einval(path);
	} else if (!strcmp(tok[0], "file") && n == 4 && rest) {
		sv_pathf(path, sizeof(path), "%s/%s", view, tok[3]);
		expect_file(path, rest);
	} else if (strcmp(tok[0], "gdr")) {
		fail_msg("%s: cannot read '%s' line", where, tok[0]);
	}
}

static void build_fixture(const char *name, char *out, size_t len)
{
	char spec[PATH_MAX];
	struct sv_fabric *f;

	sv_pathf(spec, sizeof(spec), "%s/test/fixtures/%s.spec", rn_test_source_dir(), name);
	sv_pathf(out, len, "%s/%s", outroot, name);
	assert_int_equal(sv_fabric_parse_file(spec, stderr, &f), 0);
	assert_int_equal(sv_build(f, out), 0);
	sv_fabric_destroy(f);
}

static void test_expectations(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int files = 0;

	(void)state;
	sv_pathf(dir, sizeof(dir), "%s/test/fixtures", rn_test_source_dir());
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		char name[256], path[PATH_MAX * 2], line[4096], where[512];
		size_t l = strlen(e->d_name);
		FILE *fp;
		int ln = 0;

		if (l < 8 || l >= sizeof(name) || strcmp(e->d_name + l - 7, ".expect"))
			continue;
		memcpy(name, e->d_name, l - 7);
		name[l - 7] = 0;
		build_fixture(name, out, sizeof(out));
		sv_pathf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fp = fopen(path, "r");
		assert_non_null(fp);
		while (fgets(line, sizeof(line), fp)) {
			sv_pathf(where, sizeof(where), "%s:%d", e->d_name, ++ln);
			check_line(out, where, line);
		}
		fclose(fp);
		files++;
	}
	closedir(d);
	assert_true(files >= 11);
}

/* The layout docs/softverbs.md promises, on the two-pods fixture. */
static void test_layout(void **state)
{
	char out[PATH_MAX], path[PATH_MAX * 2], buf[PATH_MAX * 2], want[PATH_MAX * 2];
	struct stat st;

	(void)state;
	build_fixture("two-pods-one-rail", out, sizeof(out));
	sv_pathf(path, sizeof(path), "%s/rdv", out);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	sv_pathf(path, sizeof(path), "%s/n1/topo.xml", out);
	assert_int_equal(stat(path, &st), 0);

	/* device link is relative and lands on the PCI function below its root port */
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/infiniband/mlx5_0/device", out);
	assert_true(readlink(path, buf, sizeof(buf)) > 0);
	assert_non_null(realpath(path, buf));
	sv_pathf(want, sizeof(want),
		 "%s/n1/pod-a/view/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/"
		 "0000:0c:00.0",
		 out);
	assert_string_equal(buf, want);
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/infiniband/mlx5_0/device/numa_node",
		 out);
	expect_file(path, "0");
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/infiniband/mlx5_0/node_type", out);
	expect_file(path, "1: CA");
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/infiniband/mlx5_0/ports/1/state", out);
	expect_file(path, "4: ACTIVE");
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/infiniband/mlx5_0/ports/1/pkeys/0",
		 out);
	expect_file(path, "0xffff");
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/class/net/net1/address", out);
	expect_file(path, "b8:ce:f6:a1:2b:00");
	sv_pathf(path, sizeof(path), "%s/n1/host/view/class/net/rdma0/device", out);
	assert_int_equal(lstat(path, &st), 0);

	/* config and env */
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/view/softverbs/config", out);
	sv_pathf(want, sizeof(want),
		 "node n1\npod pod-a\nnetns -\nrdv %s/rdv\n"
		 "port mlx5_0 1 mtu=4096 latency_us=2 rail=r0\n",
		 out);
	{
		FILE *fp = fopen(path, "r");
		size_t n;

		assert_non_null(fp);
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		buf[n] = 0;
		fclose(fp);
		assert_string_equal(buf, want);
	}
	sv_pathf(path, sizeof(path), "%s/n1/pod-a/env", out);
	{
		FILE *fp = fopen(path, "r");
		size_t n;

		assert_non_null(fp);
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		buf[n] = 0;
		fclose(fp);
		sv_pathf(want, sizeof(want), "export SOFTVERBS_VIEW='%s/n1/pod-a/view'\n", out);
		assert_non_null(strstr(buf, want));
		sv_pathf(want, sizeof(want), "export RAILNET_SYSFS_ROOT='%s/n1/pod-a/view'\n", out);
		assert_non_null(strstr(buf, want));
		sv_pathf(want, sizeof(want), "export RAILNET_TOPO_XML='%s/n1/topo.xml'\n", out);
		assert_non_null(strstr(buf, want));
		assert_non_null(strstr(buf, "export SOFTVERBS_NETNS=''\n"));
		assert_non_null(strstr(buf, "export SOFTVERBS_GPUS='0000:0f:00.0'\n"));
	}
	/* rebuilding into the same OUTDIR replaces it */
	build_fixture("two-pods-one-rail", out, sizeof(out));
}

/* /proc/self/clear_refs is what hidden entries point at: check the kernel still does EINVAL. */
static void test_einval_target(void **state)
{
	char buf[8];
	int fd;

	(void)state;
	if (geteuid()) {
		fprintf(stderr, "not root: /proc/self/clear_refs cannot be opened for reading\n");
		skip();
	}
	fd = open("/proc/self/clear_refs", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), -1);
	assert_int_equal(errno, EINVAL);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	sv_pathf(outroot, sizeof(outroot), "%s/sv-fabric-views.XXXXXX", rn_test_tmp_dir());
	return mkdtemp(outroot) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	sv_pathf(cmd, sizeof(cmd), "rm -rf '%s'", outroot);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_einval_target),
		cmocka_unit_test(test_expectations),
		cmocka_unit_test(test_layout),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
