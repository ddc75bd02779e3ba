// SPDX-License-Identifier: Apache-2.0
/*
 * The softverbs-fabric command line: check, build, show, up, down and exec. It parses
 * arguments, calls the parser and the writers, and turns their negative errno into an exit
 * status (0 ok, 1 failure, 2 usage). All the work lives in spec.c, gid.c, view.c, topo.c and
 * netns.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: softverbs-fabric check SPEC\n"
		"       softverbs-fabric build SPEC OUTDIR\n"
		"       softverbs-fabric show SPEC            print every view's GID tables\n"
		"       softverbs-fabric up OUTDIR [--node NODE]\n"
		"       softverbs-fabric down OUTDIR\n"
		"       softverbs-fabric exec [--host-sys] OUTDIR NODE POD -- COMMAND [ARG...]\n"
		"       softverbs-fabric --version\n"
		"            runs COMMAND in the pod: its network namespace, its environment\n"
		"            and, unless --host-sys, a private /sys that is the pod's view\n"
		"The spec grammar is in docs/fabric-spec.md; the output in docs/softverbs.md.\n");
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "r"), *out;
	char buf[8192];
	size_t n;
	int ret = 0;

	if (!in)
		return -errno;
	out = fopen(to, "w");
	if (!out) {
		ret = -errno;
		fclose(in);
		return ret;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			ret = -EIO;
	fclose(in);
	if (fclose(out))
		ret = -EIO;
	return ret;
}

static int cmd_build(const char *spec, const char *outdir)
{
	struct sv_fabric *f;
	char path[PATH_MAX];
	int ret = sv_fabric_parse_file(spec, stderr, &f);

	if (ret)
		return ret;
	ret = sv_bind_cuda(f) ?: sv_build(f, outdir);
	if (!ret) {
		char abs[PATH_MAX];

		if (!realpath(outdir, abs)) {
			ret = -errno;
			fprintf(stderr, "softverbs-fabric: %s: %s\n", outdir, strerror(-ret));
		} else {
			sv_pathf(path, sizeof(path), "%s/fabric.spec", abs);
			ret = copy_file(spec, path);
			if (ret)
				fprintf(stderr, "softverbs-fabric: cannot copy %s to %s\n", spec,
					path);
		}
	}
	sv_fabric_destroy(f);
	return ret;
}

static void show_view(const struct sv_fabric *f, const struct sv_node *n, int pod)
{
	int viewer = pod < 0 ? -1 : sv_pod_viewer(n, pod), i, k, g;
	struct sv_gid *tbl = calloc(SV_GID_TBL_MAX, sizeof(*tbl));
	char s[64];

	if (!tbl)
		return;
	printf("%s/%s:%s\n", n->name, pod < 0 ? "host" : n->pods[pod].name,
	       n->exclusive ? " (netns exclusive)" : "");
	for (i = 0; i < n->nnics; i++) {
		if (!sv_nic_visible(n, viewer, i))
			continue;
		for (k = 0; k < n->nics[i].nports; k++) {
			int used = sv_gid_table(f, n, i, k, tbl);

			for (g = 0; g < used; g++) {
				if (!sv_gid_visible(n, viewer, &tbl[g]))
					continue;
				sv_gid_str(tbl[g].raw, s, sizeof(s));
				printf("  %s %d %d %s %s %s\n", n->nics[i].name,
				       n->nics[i].ports[k].num, g, s, tbl[g].v2 ? "v2" : "v1",
				       tbl[g].ndev[0] ? tbl[g].ndev : "-");
			}
		}
	}
	free(tbl);
}

static int cmd_show(const char *spec)
{
	struct sv_fabric *f;
	int ret = sv_fabric_parse_file(spec, stderr, &f), i, j;

	if (ret)
		return ret;
	printf("# <node>/<pod>, then <dev> <port> <index> <gid> <roce> <ndev> for each GID the "
	       "view shows non-zero\n");
	for (i = 0; i < f->nnodes; i++) {
		show_view(f, &f->nodes[i], -1);
		for (j = 0; j < f->nodes[i].npods; j++)
			show_view(f, &f->nodes[i], j);
	}
	sv_fabric_destroy(f);
	return 0;
}

static int load_built(const char *outdir, char *abs, struct sv_fabric **f)
{
	char spec[PATH_MAX];
	int ret;

	if (!realpath(outdir, abs)) {
		fprintf(stderr, "softverbs-fabric: %s: %s\n", outdir, strerror(errno));
		return -errno;
	}
	sv_pathf(spec, sizeof(spec), "%s/fabric.spec", abs);
	if (access(spec, R_OK)) {
		fprintf(stderr,
			"softverbs-fabric: %s has no fabric.spec; run "
			"'softverbs-fabric build SPEC %s' first\n",
			abs, outdir);
		return -ENOENT;
	}
	ret = sv_fabric_parse_file(spec, stderr, f);
	if (!ret) {
		ret = sv_bind_cuda(*f);
		if (ret)
			sv_fabric_destroy(*f);
	}
	return ret;
}

static int cmd_up(const char *outdir, const char *node)
{
	struct sv_fabric *f;
	char abs[PATH_MAX];
	int ret = load_built(outdir, abs, &f);

	if (ret)
		return ret;
	ret = sv_netns_up(f, abs, node);
	sv_fabric_destroy(f);
	return ret;
}

static int cmd_down(const char *outdir)
{
	struct sv_fabric *f;
	char abs[PATH_MAX];
	int ret, i, j;

	if (!realpath(outdir, abs))
		return errno == ENOENT ? 0 : -errno;
	ret = sv_netns_down(abs);
	if (ret || load_built(outdir, abs, &f))
		return ret;
	for (i = 0; i < f->nnodes && !ret; i++) {
		ret = sv_write_netns_files(f, abs, &f->nodes[i], -1, NULL);
		for (j = 0; j < f->nodes[i].npods && !ret; j++)
			ret = sv_write_netns_files(f, abs, &f->nodes[i], j, NULL);
	}
	sv_fabric_destroy(f);
	return ret;
}

/* Sets the variables of an env file ("export K='V'" lines) in this process. */
static int load_env(const char *path)
{
	FILE *fp = fopen(path, "r");
	char line[PATH_MAX + 64];

	if (!fp) {
		fprintf(stderr, "softverbs-fabric exec: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *k, *v, *end;

		if (strncmp(line, "export ", 7))
			continue;
		k = line + 7;
		v = strchr(k, '=');
		if (!v || v[1] != '\'')
			continue;
		*v = 0;
		v += 2;
		end = strrchr(v, '\'');
		if (end)
			*end = 0;
		setenv(k, v, 1);
	}
	fclose(fp);
	return 0;
}

static int cmd_exec(const char *outdir, const char *node, const char *pod, int host_sys,
		    char **argv)
{
	char abs[PATH_MAX], path[PATH_MAX];
	const char *ns;
	int fd;

	if (!realpath(outdir, abs)) {
		fprintf(stderr, "softverbs-fabric exec: %s: %s\n", outdir, strerror(errno));
		return -errno;
	}
	sv_pathf(path, sizeof(path), "%s/%s/%s/env", abs, node, pod);
	if (load_env(path))
		return -ENOENT;
	ns = getenv("SOFTVERBS_NETNS");
	if (ns && *ns) {
		sv_pathf(path, sizeof(path), "/run/netns/%s", ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET)) {
			fprintf(stderr, "softverbs-fabric exec: cannot enter netns %s: %s\n", ns,
				strerror(errno));
			return -errno;
		}
		close(fd);
	}
	if (!host_sys) {
		const char *view = getenv("SOFTVERBS_VIEW");

		if (!view || !*view) {
			fprintf(stderr,
				"softverbs-fabric exec: %s/%s/%s/env sets no SOFTVERBS_VIEW\n", abs,
				node, pod);
			return -EINVAL;
		}
		if (sv_exec_sysfs(view))
			return -EIO;
		/* the pod now reads /sys as software on a real node does */
		setenv("SOFTVERBS_VIEW", "/sys", 1);
		unsetenv("RAILNET_SYSFS_ROOT");
	}
	execvp(argv[0], argv);
	fprintf(stderr, "softverbs-fabric exec: %s: %s\n", argv[0], strerror(errno));
	return -errno;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int ret;

	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("softverbs-fabric %s (git %s, built %s)\n", RN_VERSION_STRING,
		       RN_GIT_DESCRIBE, RN_BUILD_DATE);
		return 0;
	}
	if (!strcmp(cmd, "check") && argc == 3) {
		struct sv_fabric *f;

		ret = sv_fabric_parse_file(argv[2], stderr, &f);
		if (!ret)
			sv_fabric_destroy(f);
	} else if (!strcmp(cmd, "build") && argc == 4) {
		ret = cmd_build(argv[2], argv[3]);
	} else if (!strcmp(cmd, "show") && argc == 3) {
		ret = cmd_show(argv[2]);
	} else if (!strcmp(cmd, "up") && (argc == 3 || (argc == 5 && !strcmp(argv[3], "--node")))) {
		ret = cmd_up(argv[2], argc == 5 ? argv[4] : NULL);
	} else if (!strcmp(cmd, "down") && argc == 3) {
		ret = cmd_down(argv[2]);
	} else if (!strcmp(cmd, "exec") && argc >= 8 && !strcmp(argv[2], "--host-sys") &&
		   !strcmp(argv[6], "--")) {
		ret = cmd_exec(argv[3], argv[4], argv[5], 1, argv + 7);
	} else if (!strcmp(cmd, "exec") && argc >= 7 && !strcmp(argv[5], "--")) {
		ret = cmd_exec(argv[2], argv[3], argv[4], 0, argv + 6);
	} else {
		usage(stderr);
		return 2;
	}
	return ret ? 1 : 0;
}
