// SPDX-License-Identifier: Apache-2.0
/*
 * Topology and GPUDirect (topo.h, cuda.h): bus ids, roots, NUMA nodes and NCCL path types
 * over hwloc XML (a hand-written switch fixture and the seeds' nodes compiled by
 * softverbs-fabric), the visible-GPU rules, ptrSupport per NIC per pod against the fixtures'
 * "gdr" answers, the GDR probe (fake sysfs, fake libibverbs), RAILNET_GDR_POLICY with CUDA
 * pointers faked at the driver seam, and bad input: missing, malformed and I/O-less XML, a
 * GPU hwloc cannot place, a CUDA driver that is absent, too old or incomplete; and, through
 * net.h on a softverbs view, that a machine without a GPU never opens the CUDA driver.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "railnet/config.h"
#include "railnet/gdr.h"
#include "railnet/cuda.h"
#include "railnet/net.h"
#include "railnet/topo.h"
#include "railnet/verbs.h"
#include "rn_test.h"
#include "rn_test_sv.h"

static char tmpdir[256];

/* --------------------------------------------------------------------- helpers ---- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("command failed: %s", cmd);
}

/* OUTDIR of a fixture compiled by softverbs-fabric (once per run). */
static const char *fixture(const char *name)
{
	static char out[8][PATH_MAX];
	static char names[8][64];
	char marker[PATH_MAX + 32];
	int i;

	for (i = 0; i < 8 && names[i][0]; i++)
		if (!strcmp(names[i], name))
			return out[i];
	assert_true(i < 8);
	snprintf(out[i], sizeof(out[i]), "%s/%s", tmpdir, name);
	sh("'%s/bin/softverbs-fabric' build '%s/test/fixtures/%s.spec' '%s' >/dev/null",
	   rn_test_build_dir(), rn_test_source_dir(), name, out[i]);
	snprintf(marker, sizeof(marker), "%s/fabric.spec", out[i]);
	assert_int_equal(access(marker, F_OK), 0);
	snprintf(names[i], sizeof(names[i]), "%s", name);
	return out[i];
}

static struct rn_topo *load_node(const char *fx, const char *node)
{
	char xml[PATH_MAX];
	struct rn_topo *t = NULL;

	snprintf(xml, sizeof(xml), "%s/%s/topo.xml", fixture(fx), node);
	assert_int_equal(rn_topo_load(xml, &t), 0);
	assert_non_null(t);
	assert_true(t->io);
	return t;
}

/* A line "key=VALUE" of OUTDIR/node/pod/env, quotes stripped. */
static void pod_env(const char *fx, const char *node, const char *pod, const char *key, char *val,
		    size_t len)
{
	char path[PATH_MAX], line[1024];
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s/env", fixture(fx), node, pod);
	f = fopen(path, "r");
	assert_non_null(f);
	val[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		if (!strncmp(p, "export ", 7))
			p += 7;
		if (strncmp(p, key, kl) || p[kl] != '=')
			continue;
		p += kl + 1;
		p[strcspn(p, "\n")] = '\0';
		if (*p == '\'')
			p++;
		p[strcspn(p, "'")] = '\0';
		snprintf(val, len, "%s", p);
	}
	fclose(f);
}

/* Set the pod's GPUs (from its env file) as the visible ones; returns how many. */
static int pod_gpus(struct rn_topo *t, const char *fx, const char *node, const char *pod)
{
	char list[512], *save = NULL, *tok;
	const char *ids[16];
	int n = 0;

	pod_env(fx, node, pod, "SOFTVERBS_GPUS", list, sizeof(list));
	for (tok = strtok_r(list, ",", &save); tok && n < 16; tok = strtok_r(NULL, ",", &save))
		ids[n++] = tok;
	return rn_topo_set_visible_busids(t, ids, n, "the pod's GPUs");
}

/* The fixture's expected "gdr NODE POD list" answer, as a comma list. */
static void expected_gdr(const char *fx, const char *node, const char *pod, char *out, size_t len)
{
	char path[PATH_MAX], line[1024], want[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/test/fixtures/%s.expect", rn_test_source_dir(), fx);
	f = fopen(path, "r");
	assert_non_null(f);
	snprintf(want, sizeof(want), "gdr %s %s ", node, pod);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want))) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + strlen(want));
		}
	fclose(f);
	if (!out[0])
		fail_msg("%s has no line '%s'", path, want);
}

static int by_rdma_num(const void *a, const void *b)
{
	return atoi(*(const char *const *)a + 4) - atoi(*(const char *const *)b + 4);
}

/*
 * ptrSupport of every RDMA device in the pod's view, as the plugin computes it: the NICs
 * (by netdev) that offer RN_PTR_CUDA, comma-joined in rail order.
 */
static void pod_cuda_nics(const struct rn_topo *t, const struct rn_gdr *gdr, const char *fx,
			  const char *node, const char *pod, char *out, size_t len)
{
	char dir[PATH_MAX], link[2 * PATH_MAX], real[PATH_MAX], why[256];
	static char names[32][32];
	const char *sorted[32];
	struct dirent *e;
	size_t off = 0;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s/%s/view/class/infiniband", fixture(fx), node, pod);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)) && n < 32) {
		const struct rn_topo_dev *dev;
		const char *path = real;
		int ptr;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s/device", dir, e->d_name);
		assert_non_null(realpath(link, real));
		dev = rn_topo_find(t, real);
		assert_non_null(dev);
		assert_string_equal(dev->name, e->d_name);
		ptr = rn_gdr_ptr_support(t, gdr, &path, 1, why, sizeof(why));
		assert_true(ptr & RN_PTR_HOST);
		if (ptr & RN_PTR_CUDA) {
			assert_non_null(strstr(why, "in NCCL's topology"));
			snprintf(names[n], sizeof(names[n]), "%s", dev->netdev);
			sorted[n] = names[n];
			n++;
		} else {
			assert_int_equal(ptr, RN_PTR_HOST);
		}
	}
	closedir(d);
	qsort(sorted, (size_t)n, sizeof(sorted[0]), by_rdma_num);
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? "," : "", sorted[i]);
}

static const struct rn_gdr gdr_peermem = {
	.peermem = true, .dmabuf = 0, .data_direct = 0, .works = true, .why = "test: peermem"
};
static const struct rn_gdr gdr_dmabuf = {
	.peermem = false, .dmabuf = 1, .data_direct = 0, .works = true, .why = "test: dma-buf"
};
static const struct rn_gdr gdr_none = { .dmabuf = 0,
					.data_direct = 0,
					.why = "GPUDirect RDMA unavailable: test" };

/* ------------------------------------------------------------------- bus ids ---- */

static void test_busid(void **state)
{
	char b[RN_BUSID_MAX];

	(void)state;
	assert_int_equal(rn_busid_parse("0000:17:00.0", b), 0);
	assert_string_equal(b, "0000:17:00.0");
	assert_int_equal(rn_busid_parse("00000000:3B:00.0", b), 0); /* cuDeviceGetPCIBusId */
	assert_string_equal(b, "0000:3b:00.0");
	assert_int_equal(rn_busid_parse("/sys/devices/pci0000:40/0000:40:01.1/0000:48:00.1", b), 0);
	assert_string_equal(b, "0000:48:00.1");
	assert_int_equal(rn_busid_parse("/v/devices/pci0000:40/0000:40:01.1/0000:48:00.1/", b), 0);
	assert_string_equal(b, "0000:48:00.1");
	assert_int_equal(rn_busid_parse("/sys/devices/pci0000:40/0000:40:01.1/x", b), 0);
	assert_string_equal(b, "0000:40:01.1"); /* the last component that is one */
	assert_int_equal(rn_busid_parse("/sys/devices/virtual/net/lo", b), -EINVAL);
	assert_int_equal(rn_busid_parse("0000:17:00", b), -EINVAL);
	assert_int_equal(rn_busid_parse("0000:17:00.8", b), -EINVAL);
	assert_int_equal(rn_busid_parse("0000:17:20.0", b), -EINVAL);
	assert_int_equal(rn_busid_parse("zzzz:17:00.0", b), -EINVAL);
	assert_int_equal(rn_busid_parse("", b), -EINVAL);
	assert_int_equal(rn_busid_parse(NULL, b), -EINVAL);
	assert_string_equal(rn_path_type_str(RN_PATH_PIX), "PIX");
	assert_string_equal(rn_path_type_str(RN_PATH_SYS), "SYS");
	assert_string_equal(rn_path_type_str(RN_PATH_UNKNOWN), "unknown");
}

/* -------------------------------------------------------------- path types ---- */

static void test_switch_paths(void **state)
{
	char xml[PATH_MAX];
	struct rn_topo *t;
	const struct rn_topo_dev *g, *hb_gpu;
	const char *gpu = "0000:03:00.0";

	(void)state;
	rn_test_log_reset();
	snprintf(xml, sizeof(xml), "%s/test/fixtures/topo/switch.xml", rn_test_source_dir());
	assert_int_equal(rn_topo_load(xml, &t), 0);
	RN_ASSERT_NO_WARN();
	assert_true(t->io);
	assert_int_equal(t->ndevs, 7);
	assert_int_equal(t->ngpus, 2);
	g = rn_topo_find(t, gpu);
	assert_non_null(g);
	assert_true(g->gpu && g->visible);
	assert_string_equal(g->root, "0000:00:01.0");
	assert_string_equal(g->name, "cuda0");
	assert_int_equal(g->numa, 0);
	assert_int_equal(rn_topo_find(t, "0000:81:00.0")->numa, 1);
	assert_string_equal(rn_topo_find(t, "0000:07:00.0")->root, "0000:00:01.0");
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:04:00.0"), RN_PATH_PIX); /* one switch */
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:07:00.0"), RN_PATH_PXB); /* two */
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:10:00.0"), RN_PATH_PHB);
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:21:00.0"), RN_PATH_NODE);
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:81:00.0"), RN_PATH_SYS);
	assert_int_equal(rn_topo_path_type(t, "0000:04:00.0", gpu), RN_PATH_PIX); /* symmetric */
	assert_int_equal(rn_topo_path_type(t, gpu,
					   "/x/pci0000:00/0000:00:01.0/0000:01:00.0/"
					   "0000:02:01.0/0000:04:00.0"),
			 RN_PATH_PIX);
	assert_int_equal(rn_topo_path_type(t, gpu, "0000:99:00.0"), RN_PATH_UNKNOWN);
	/* a GPU on the host bridge itself: no root port, so it shares a root with nothing */
	hb_gpu = rn_topo_find(t, "0000:80:03.0");
	assert_non_null(hb_gpu);
	assert_string_equal(hb_gpu->root, "");
	assert_int_equal(rn_topo_path_type(t, "0000:80:03.0", "0000:81:00.0"), RN_PATH_PHB);
	{
		const char *p0 = "0000:04:00.0", *p1 = "0000:07:00.0", *p2 = "0000:10:00.0",
			   *p4 = "0000:81:00.0";
		const char *pair[] = { p0, p1 }, *cross[] = { p0, p2 };
		char why[256];

		assert_int_equal(rn_gdr_ptr_support(t, &gdr_dmabuf, &p0, 1, why, sizeof(why)),
				 RN_PTR_HOST | RN_PTR_CUDA | RN_PTR_DMABUF);
		assert_non_null(strstr(why, "GPU 0000:03:00.0"));
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, pair, 2, why, sizeof(why)),
				 RN_PTR_HOST | RN_PTR_CUDA);
		/* a member on another root port meets the GPU only at the CPU (PHB) */
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, cross, 2, why, sizeof(why)),
				 RN_PTR_HOST);
		assert_non_null(strstr(why, "0000:03:00.0 (CUDA 0), is PHB from it in NCCL's "
					    "topology, farther than PXB (PXB (NCCL's default))"));
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &p2, 1, why, sizeof(why)),
				 RN_PTR_HOST);
		assert_non_null(strstr(why, "the nearest GPU this process can use, 0000:03:00.0"));
		/* mlx5_4 sits next to nothing usable: the host-bridge GPU has no root port */
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &p4, 1, NULL, 0), RN_PTR_HOST);
	}
	rn_topo_destroy(t);
	RN_ASSERT_NO_WARN();
}

/* NCCL's own topology: its nodes, path types and NCCL_NET_GDR_LEVEL (switch.xml). */
static void test_nccl_paths(void **state)
{
	char xml[PATH_MAX];
	struct rn_topo *t;
	const struct rn_topo_dev *gpu, *n0, *n1, *n2, *n3, *n4, *hb;
	const char *p0 = "0000:04:00.0", *p1 = "0000:07:00.0", *p2 = "0000:10:00.0";
	static const struct {
		const char *level;
		int want_rc, p0, p1, p2; /* CUDA offered on mlx5_0 (PIX), mlx5_1 (PXB), mlx5_2 */
	} levels[] = {
		{ NULL, 0, 1, 1, 0 },	     { "PXB", 0, 1, 1, 0 },	  { "PIX", 0, 1, 0, 0 },
		{ "PHB", 0, 1, 1, 1 },	     { "SYS", 0, 1, 1, 1 },	  { "LOC", 0, 0, 0, 0 },
		{ "C2C", 0, 0, 0, 0 },	     { "P2C", 0, 1, 1, 0 },	  { "1", 0, 1, 0, 0 },
		{ "2", 0, 1, 1, 0 },	     { "3", 0, 1, 1, 1 },	  { "9", 0, 1, 1, 1 },
		{ "pxb", -EINVAL, 1, 1, 0 }, { "xyz", -EINVAL, 1, 1, 0 },
	};

	(void)state;
	rn_test_log_reset();
	snprintf(xml, sizeof(xml), "%s/test/fixtures/topo/switch.xml", rn_test_source_dir());
	assert_int_equal(rn_topo_load(xml, &t), 0);
	gpu = rn_topo_find(t, "0000:03:00.0");
	n0 = rn_topo_find(t, p0);
	n1 = rn_topo_find(t, p1);
	n2 = rn_topo_find(t, p2);
	n3 = rn_topo_find(t, "0000:21:00.0");
	n4 = rn_topo_find(t, "0000:81:00.0");
	hb = rn_topo_find(t, "0000:80:03.0");
	/* NCCL skips the port a device hangs on: the GPU's node is the switch's upstream port */
	assert_int_equal(gpu->nanc, 1);
	assert_string_equal(gpu->anc[0], "0000:01:00.0");
	assert_int_equal(n1->nanc, 2);
	assert_string_equal(n1->anc[0], "0000:05:00.0");
	assert_string_equal(n1->anc[1], "0000:01:00.0");
	assert_int_equal(n2->nanc, 0); /* right below a root port: on the CPU */
	assert_int_equal(rn_topo_nccl_path(gpu, n0), RN_PATH_PIX);
	assert_int_equal(rn_topo_nccl_path(n0, gpu), RN_PATH_PIX);
	assert_int_equal(rn_topo_nccl_path(gpu, n1), RN_PATH_PXB);
	assert_int_equal(rn_topo_nccl_path(gpu, n2), RN_PATH_PHB);
	assert_int_equal(rn_topo_nccl_path(gpu, n3), RN_PATH_PHB); /* another host bridge */
	assert_int_equal(rn_topo_nccl_path(gpu, n4), RN_PATH_SYS);
	assert_int_equal(rn_topo_nccl_path(hb, n4), RN_PATH_PHB);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char why[320];

		assert_int_equal(rn_topo_set_gdr_level(t, levels[i].level), levels[i].want_rc);
		assert_int_equal(!!(rn_gdr_ptr_support(t, &gdr_peermem, &p0, 1, why, sizeof(why)) &
				    RN_PTR_CUDA),
				 levels[i].p0);
		assert_int_equal(!!(rn_gdr_ptr_support(t, &gdr_peermem, &p1, 1, why, sizeof(why)) &
				    RN_PTR_CUDA),
				 levels[i].p1);
		assert_int_equal(!!(rn_gdr_ptr_support(t, &gdr_peermem, &p2, 1, why, sizeof(why)) &
				    RN_PTR_CUDA),
				 levels[i].p2);
		if (levels[i].want_rc)
			assert_string_equal(t->gdr_level_src, "PXB (NCCL's default)");
		else if (levels[i].level)
			assert_non_null(strstr(why, levels[i].level));
	}
	/* from the environment, with one WARN for a value NCCL ignores */
	setenv("NCCL_NET_GDR_LEVEL", "PHB", 1);
	rn_topo_apply_nccl_env(t);
	RN_ASSERT_NO_WARN();
	assert_true(rn_gdr_ptr_support(t, &gdr_peermem, &p2, 1, NULL, 0) & RN_PTR_CUDA);
	setenv("NCCL_NET_GDR_LEVEL", "closest", 1);
	rn_topo_apply_nccl_env(t);
	assert_true(rn_test_log_contains("NCCL_NET_GDR_LEVEL=closest is not a path type NCCL "
					 "knows"));
	assert_int_equal(rn_test_log.warns, 1);
	assert_false(rn_gdr_ptr_support(t, &gdr_peermem, &p2, 1, NULL, 0) & RN_PTR_CUDA);
	unsetenv("NCCL_NET_GDR_LEVEL");
	rn_topo_destroy(t);
}

/* Loads vm-flat.xml, then applies `nccl` (a file under test/fixtures/topo, or a path). */
static struct rn_topo *vm_topo(const char *nccl, int *rc)
{
	char xml[PATH_MAX], file[PATH_MAX];
	struct rn_topo *t;

	snprintf(xml, sizeof(xml), "%s/test/fixtures/topo/vm-flat.xml", rn_test_source_dir());
	assert_int_equal(rn_topo_load(xml, &t), 0);
	if (nccl) {
		if (nccl[0] == '/')
			snprintf(file, sizeof(file), "%s", nccl);
		else
			snprintf(file, sizeof(file), "%s/test/fixtures/topo/%s",
				 rn_test_source_dir(), nccl);
		*rc = rn_topo_apply_nccl_file(t, file);
	}
	return t;
}

/* A file under the test's temp dir with `text`; returns its path (static buffer). */
static const char *write_tmp(const char *name, const char *text)
{
	static char path[PATH_MAX];
	FILE *fp;

	snprintf(path, sizeof(path), "/tmp/rn-topo-%d-%s", (int)getpid(), name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	return path;
}

/*
 * A VM whose PCIe tree is flat: the GPU and the NICs hang on the host bridge, so NCCL (and
 * railnet) put them on the CPU (PHB) and GPUDirect is off; the provider's NCCL_TOPO_FILE
 * places the GPU and mlx5_0 below one switch, and GPUDirect is on there, as in NCCL.
 */
static void test_nccl_topo_file(void **state)
{
	const char *n0 = "0000:00:05.0", *n1 = "0000:00:06.0";
	static const struct {
		const char *text, *what;
		int line;
	} bad[] = {
		{ "<system><cpu numaid=\"0\"><pci busid=\"0000:00:04.0\">\n</cpu></system>",
		  "</cpu> closes <pci>", 2 },
		{ "<system>\n<cpu numaid=\"0\">\n<pci class=\"0x0302\"/>\n</cpu></system>",
		  "<pci> without a busid", 3 },
		{ "<system>\n<pci busid=\"zz\"/>\n</system>", "<pci> without a busid", 2 },
		{ "<topology>\n</topology>", "the top element is <topology>, not <system>", 1 },
		{ "<system>\n<cpu>\n", "<cpu> is never closed", 2 },
		{ "just text\n", "no <system> element", 2 },
		{ "<system><pci busid=\"0000:00:04.0\"\n", "a tag without its '>'", 1 },
		{ "<system><!-- open\n", "an unclosed comment", 1 },
		{ "<system>\n<!-->\n<cpu/></system>\n", "an unclosed comment", 2 },
		{ "<system>\n<pci note=\" busid='0000:00:05.0'\"/></system>",
		  "<pci> without a busid", 2 },
	};
	/* files NCCL reads: quotes of either kind, '>' inside a value, spaces around '=' */
	static const char *const good[] = {
		"<system version=\"1\">\n<cpu numaid='0' note=\"a>b\">\n"
		"<pci busid = \"ffff:ff:01.0\" class='0x060400'>\n"
		"<pci note=\"busid=0000:00:06.0\" busid='0000:00:04.0'/>\n"
		"<pci busid=\"0000:00:05.0\"><!-- a > comment --></pci>\n"
		"</pci>\n</cpu>\n</system>\n",
	};
	struct rn_topo *t;
	int rc = 0;

	(void)state;
	rn_test_log_reset();
	/* flat: PHB, host memory only, and NCCL_NET_GDR_LEVEL=PHB would allow it */
	t = vm_topo(NULL, &rc);
	assert_int_equal(rn_topo_nccl_path(rn_topo_find(t, "0000:00:04.0"), rn_topo_find(t, n0)),
			 RN_PATH_PHB);
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &n0, 1, NULL, 0), RN_PTR_HOST);
	rn_topo_destroy(t);
	/* the provider's file: mlx5_0 PIX with the GPU, mlx5_1 PXB? no: another switch, PHB */
	t = vm_topo("vm-flat.nccl.xml", &rc);
	assert_int_equal(rc, 3);
	RN_ASSERT_NO_WARN();
	assert_true(rn_topo_find(t, n0)->nccl_file);
	{
		char why[320];

		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &n0, 1, why, sizeof(why)),
				 RN_PTR_HOST | RN_PTR_CUDA);
		assert_non_null(strstr(why, "is PIX from it in NCCL's topology (NCCL_TOPO_FILE)"));
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &n1, 1, why, sizeof(why)),
				 RN_PTR_HOST);
		assert_non_null(strstr(why, "is PHB from it"));
	}
	rn_topo_destroy(t);
	/* bad files: one WARN with the file and line, and the sysfs placement stays */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = write_tmp("bad.xml", bad[i].text);
		char want[PATH_MAX + 64];

		rn_test_log_reset();
		t = vm_topo(path, &rc);
		assert_int_equal(rc, -EINVAL);
		snprintf(want, sizeof(want), "NCCL_TOPO_FILE %s:%d: %s", path, bad[i].line,
			 bad[i].what);
		if (!rn_test_log_contains(want))
			fail_msg("case %zu: want WARN \"%s\"", i, want);
		assert_int_equal(rn_test_log.warns, 1);
		assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &n0, 1, NULL, 0), RN_PTR_HOST);
		assert_false(rn_topo_find(t, n0)->nccl_file);
		assert_string_equal(t->nccl_file, "");
		rn_topo_destroy(t);
		unlink(path);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char *path = write_tmp("good.xml", good[i]);

		rn_test_log_reset();
		t = vm_topo(path, &rc);
		RN_ASSERT_NO_WARN();
		assert_int_equal(rc, 2);
		assert_int_equal(
			rn_topo_nccl_path(rn_topo_find(t, "0000:00:04.0"), rn_topo_find(t, n0)),
			RN_PATH_PIX);
		assert_int_equal(rn_topo_find(t, n1)->nanc, 0); /* not in the file: sysfs's */
		rn_topo_destroy(t);
		unlink(path);
	}
	/* the size limit, 8 MiB, on a file read in growing pieces: padded with newlines to 100 KiB
	 * and to exactly 8 MiB it is taken; one byte more, or a NUL byte, and it is refused */
	{
		static const size_t sizes[] = { 100u << 10, 8u << 20, (8u << 20) + 1 };
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "/tmp/rn-topo-%d-big.xml", (int)getpid());
		for (size_t i = 0; i < 4; i++) {
			size_t len = strlen(good[0]), size = i < 3 ? sizes[i] : 200u << 10;
			FILE *fp = fopen(path, "w");

			assert_non_null(fp);
			fputs(good[0], fp);
			for (size_t k = len; k < size; k++)
				fputc(i == 3 && k == size - 1 ? '\0' : '\n', fp);
			assert_int_equal(fclose(fp), 0);
			rn_test_log_reset();
			t = vm_topo(path, &rc);
			if (i < 2) {
				RN_ASSERT_NO_WARN();
				assert_int_equal(rc, 2);
			} else {
				char want[PATH_MAX + 64];

				assert_int_equal(rc, -EINVAL);
				snprintf(want, sizeof(want), "NCCL_TOPO_FILE %s: %s", path,
					 i == 2 ? "larger than 8 MiB" : "holds a NUL byte");
				if (!rn_test_log_contains(want))
					fail_msg("size %zu: want WARN \"%s\"", size, want);
				assert_string_equal(t->nccl_file, "");
			}
			rn_topo_destroy(t);
		}
		unlink(path);
	}
	rn_test_log_reset();
	t = vm_topo("/nonexistent/nccl-topo.xml", &rc);
	assert_int_equal(rc, -ENOENT);
	assert_true(
		rn_test_log_contains("NCCL_TOPO_FILE /nonexistent/nccl-topo.xml: No such file"));
	rn_topo_destroy(t);
	/* through the environment, as net.c and the doctor apply it */
	rn_test_log_reset();
	{
		char file[PATH_MAX];

		snprintf(file, sizeof(file), "%s/test/fixtures/topo/vm-flat.nccl.xml",
			 rn_test_source_dir());
		setenv("NCCL_TOPO_FILE", file, 1);
		t = vm_topo(NULL, &rc);
		rn_topo_apply_nccl_env(t);
		unsetenv("NCCL_TOPO_FILE");
	}
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_peermem, &n0, 1, NULL, 0),
			 RN_PTR_HOST | RN_PTR_CUDA);
	rn_topo_destroy(t);
}

/* The seeds' node: the issue's NUMA/root map, from softverbs-fabric's XML. */
static void test_seeds_map(void **state)
{
	static const struct {
		const char *gpu;
		const char *root;
		int numa;
		int nic_lo; /* rdma<nic_lo>..rdma<nic_lo+3> share the root */
	} map[] = {
		{ "0000:0f:00.0", "0000:00:01.1", 0, 0 },
		{ "0000:15:00.0", "0000:00:01.1", 0, 0 },
		{ "0000:51:00.0", "0000:40:01.1", 1, 4 },
		{ "0000:54:00.0", "0000:40:01.1", 1, 4 },
		{ "0000:8d:00.0", "0000:80:01.1", 2, 8 },
		{ "0000:92:00.0", "0000:80:01.1", 2, 8 },
		{ "0000:d6:00.0", "0000:c0:01.1", 3, 12 },
		{ "0000:da:00.0", "0000:c0:01.1", 3, 12 },
	};
	struct rn_topo *t;

	(void)state;
	rn_test_log_reset();
	t = load_node("seeds-b4", "n1");
	assert_int_equal(t->ngpus, 8);
	assert_int_equal(t->ndevs, 24);
	for (size_t g = 0; g < sizeof(map) / sizeof(map[0]); g++) {
		const struct rn_topo_dev *gpu = rn_topo_find(t, map[g].gpu);
		int seen = 0;

		assert_non_null(gpu);
		assert_true(gpu->gpu);
		assert_int_equal(gpu->cuda_index, (int)g); /* bus order */
		assert_string_equal(gpu->root, map[g].root);
		assert_int_equal(gpu->numa, map[g].numa);
		for (int i = 0; i < t->ndevs; i++) {
			const struct rn_topo_dev *nic = &t->devs[i];
			int k;

			if (nic->class_id != 0x0207)
				continue;
			assert_int_equal(sscanf(nic->netdev, "rdma%d", &k), 1);
			if (k >= map[g].nic_lo && k < map[g].nic_lo + 4) {
				seen++;
				assert_string_equal(nic->root, map[g].root);
				assert_int_equal(nic->numa, map[g].numa);
				assert_int_equal(rn_topo_path_type(t, gpu->busid, nic->busid),
						 RN_PATH_PIX);
			} else {
				assert_string_not_equal(nic->root, map[g].root);
				/* each root is its own NUMA node on this machine */
				assert_int_equal(rn_topo_path_type(t, gpu->busid, nic->busid),
						 RN_PATH_SYS);
			}
		}
		assert_int_equal(seen, 4);
	}
	rn_topo_log(t, gdr_peermem.why);
	assert_true(rn_test_log_contains("24 PCI devices, 8 GPUs, 8 usable (every GPU of the "
					 "topology); test: peermem"));
	rn_topo_destroy(t);
	RN_ASSERT_NO_WARN();
}

/* ------------------------------------------------------- ptrSupport per pod ---- */

static void check_pod(const char *fx, const char *node, const char *pod)
{
	char want[256], got[256];
	struct rn_topo *t = load_node(fx, node);

	assert_true(pod_gpus(t, fx, node, pod) > 0);
	expected_gdr(fx, node, pod, want, sizeof(want));
	pod_cuda_nics(t, &gdr_peermem, fx, node, pod, got, sizeof(got));
	if (strcmp(want, got))
		fail_msg("%s %s/%s: CUDA offered on %s, fixture expects %s", fx, node, pod, got,
			 want);
	/* no GDR on the machine: host memory everywhere */
	pod_cuda_nics(t, &gdr_none, fx, node, pod, got, sizeof(got));
	assert_string_equal(got, "");
	rn_topo_destroy(t);
}

static void test_ptr_support_fixtures(void **state)
{
	(void)state;
	rn_test_log_reset();
	check_pod("seeds-b4", "n1", "train-0");
	check_pod("seeds-b4", "n2", "train-1");
	check_pod("seeds-b4-misaligned", "n1", "job1-0");
	check_pod("seeds-b4-misaligned", "n1", "job2-0");
	check_pod("seeds-b4-misaligned", "n2", "job1-1");
	check_pod("seeds-b4-misaligned", "n2", "job2-1");
	check_pod("seeds-b4-aligned", "n1", "job1-0");
	check_pod("seeds-b4-aligned", "n1", "job2-0");
	check_pod("seeds-b4-4gpu16pf", "n1", "wide-0");
	RN_ASSERT_NO_WARN();
}

/* The issue's literal answers, independent of the .expect files. */
static void test_ptr_support_issue_answers(void **state)
{
	char got[256];
	struct rn_topo *t;

	(void)state;
	t = load_node("seeds-b4-misaligned", "n1");
	pod_gpus(t, "seeds-b4-misaligned", "n1", "job1-0");
	pod_cuda_nics(t, &gdr_peermem, "seeds-b4-misaligned", "n1", "job1-0", got, sizeof(got));
	assert_string_equal(got, "rdma4,rdma5,rdma6");
	pod_gpus(t, "seeds-b4-misaligned", "n1", "job2-0");
	pod_cuda_nics(t, &gdr_peermem, "seeds-b4-misaligned", "n1", "job2-0", got, sizeof(got));
	assert_string_equal(got, "rdma0,rdma2,rdma3");
	rn_topo_destroy(t);
	t = load_node("seeds-b4-aligned", "n1");
	pod_gpus(t, "seeds-b4-aligned", "n1", "job1-0");
	pod_cuda_nics(t, &gdr_dmabuf, "seeds-b4-aligned", "n1", "job1-0", got, sizeof(got));
	assert_string_equal(got, "rdma0,rdma1,rdma2,rdma3,rdma4,rdma5,rdma6,rdma7");
	rn_topo_destroy(t);
}

/* A virtual device's members share a root: port pairs of one NIC offer CUDA together. */
static void test_ptr_support_vdev(void **state)
{
	struct rn_topo *t;
	const char *pair[2], *cross[2];
	char why[256];

	(void)state;
	t = load_node("seeds-b4", "n1");
	pair[0] = "0000:48:00.0", pair[1] = "0000:48:00.1"; /* mlx5_4+mlx5_5 */
	cross[0] = "0000:0c:00.1", cross[1] = "0000:48:00.0";
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_dmabuf, pair, 2, why, sizeof(why)),
			 RN_PTR_HOST | RN_PTR_CUDA | RN_PTR_DMABUF);
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_dmabuf, cross, 2, why, sizeof(why)),
			 RN_PTR_HOST);
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_dmabuf, pair, 0, why, sizeof(why)),
			 RN_PTR_HOST);
	assert_int_equal(rn_gdr_ptr_support(t, NULL, pair, 2, why, sizeof(why)), RN_PTR_HOST);
	assert_int_equal(rn_gdr_ptr_support(NULL, &gdr_peermem, pair, 2, why, sizeof(why)),
			 RN_PTR_HOST);
	rn_topo_destroy(t);
}

/* ---------------------------------------------------------------- visible GPUs ---- */

static void test_visible_env(void **state)
{
	struct rn_topo *t;
	char got[256];

	(void)state;
	rn_test_log_reset();
	t = load_node("seeds-b4-misaligned", "n1");
	/* the container runtime's indices are host (bus order) indices */
	assert_int_equal(rn_topo_set_visible(t, "2,3,4,5", NULL), 4);
	assert_true(t->gpus_known);
	assert_int_equal(rn_topo_find(t, "0000:51:00.0")->cuda_index, 0);
	assert_int_equal(rn_topo_find(t, "0000:92:00.0")->cuda_index, 3);
	assert_false(rn_topo_find(t, "0000:0f:00.0")->visible);
	pod_cuda_nics(t, &gdr_peermem, "seeds-b4-misaligned", "n1", "job1-0", got, sizeof(got));
	assert_string_equal(got, "rdma4,rdma5,rdma6");
	/* CUDA_VISIBLE_DEVICES indexes what the runtime left */
	assert_int_equal(rn_topo_set_visible(t, "0,1,6,7", "2,3"), 2);
	assert_true(rn_topo_find(t, "0000:d6:00.0")->visible);
	assert_int_equal(rn_topo_find(t, "0000:da:00.0")->cuda_index, 1);
	pod_cuda_nics(t, &gdr_peermem, "seeds-b4-misaligned", "n1", "job2-0", got, sizeof(got));
	assert_string_equal(got, ""); /* GPUs 6,7 (root c0) and no rdma12-15 given */
	assert_int_equal(rn_topo_set_visible(t, "0,1,6,7", "1,0"), 2);
	assert_int_equal(rn_topo_find(t, "0000:15:00.0")->cuda_index, 0);
	assert_int_equal(rn_topo_set_visible(t, "all", "5,9,1"), 1); /* CUDA stops at 9 */
	assert_int_equal(rn_topo_set_visible(t, "none", NULL), 0);
	assert_int_equal(rn_topo_set_visible(t, "void", NULL), 0);
	assert_int_equal(rn_topo_set_visible(t, NULL, ""), 0);
	assert_int_equal(rn_topo_set_visible(t, NULL, "1,1"), 8); /* refused list: unchanged */
	assert_false(t->gpus_known);
	/* UUIDs need the driver: every GPU stays, and the reason is recorded */
	assert_int_equal(rn_topo_set_visible(t, "GPU-8d7c0f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6", NULL),
			 8);
	assert_false(t->gpus_known);
	assert_non_null(strstr(t->gpu_source, "NVIDIA_VISIBLE_DEVICES holds UUIDs"));
	assert_int_equal(rn_topo_set_visible(t, NULL, NULL), 8);
	assert_false(t->gpus_known);
	rn_topo_destroy(t);
	RN_ASSERT_NO_WARN();
}

/* A GPU the topology cannot place: one WARN, it counts for nothing. */
static void test_gpu_unplaced(void **state)
{
	const char *ids[] = { "0000:51:00.0", "0000:99:00.0" };
	struct rn_topo *t;
	char got[256];

	(void)state;
	t = load_node("seeds-b4-misaligned", "n1");
	rn_test_log_reset();
	assert_int_equal(rn_topo_set_visible_busids(t, ids, 2, "CUDA"), 1);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, "GPU 0000:99:00.0 (CUDA)"));
	assert_non_null(strstr(rn_test_log.last_warn, "cannot place it"));
	pod_cuda_nics(t, &gdr_peermem, "seeds-b4-misaligned", "n1", "job1-0", got, sizeof(got));
	assert_string_equal(got, "rdma4,rdma5,rdma6");
	rn_test_log_reset();
	rn_topo_destroy(t);
}

/* ------------------------------------------------------------------- bad XML ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void expect_empty(const char *xml, const char *needle)
{
	const char *nic = "0000:48:00.0";
	struct rn_topo *t = NULL;
	char why[256];

	rn_test_log_reset();
	assert_int_equal(rn_topo_load(xml, &t), 0);
	assert_non_null(t);
	assert_int_equal(rn_test_log.warns, 1);
	if (!strstr(rn_test_log.last_warn, needle))
		fail_msg("WARN '%s' lacks '%s'", rn_test_log.last_warn, needle);
	assert_non_null(strstr(rn_test_log.last_warn, "host memory only"));
	assert_false(t->io);
	assert_int_equal(t->ndevs, 0);
	assert_null(rn_topo_find(t, nic));
	assert_int_equal(rn_topo_path_type(t, nic, "0000:51:00.0"), RN_PATH_UNKNOWN);
	assert_int_equal(rn_gdr_ptr_support(t, &gdr_dmabuf, &nic, 1, why, sizeof(why)),
			 RN_PTR_HOST);
	assert_int_equal(rn_topo_set_visible(t, "0,1", NULL), 0);
	rn_topo_log(t, NULL);
	assert_true(rn_test_log_contains("0 PCI devices, no NVIDIA GPU: host memory only"));
	rn_topo_destroy(t);
	rn_test_log_reset();
}

static void test_bad_xml(void **state)
{
	char path[PATH_MAX + 32];

	(void)state;
	snprintf(path, sizeof(path), "%s/missing.xml", tmpdir);
	expect_empty(path, "cannot read it");
	snprintf(path, sizeof(path), "%s/malformed.xml", tmpdir);
	write_file(path,
		   "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Mach");
	expect_empty(path, "hwloc cannot load the topology");
	snprintf(path, sizeof(path), "%s/notxml.xml", tmpdir);
	write_file(path, "this is not XML at all\n");
	expect_empty(path, "hwloc cannot load the topology");
	snprintf(path, sizeof(path), "%s/empty.xml", tmpdir);
	write_file(path, "");
	expect_empty(path, "hwloc cannot load the topology");
	snprintf(path, sizeof(path), "%s/noio.xml", tmpdir);
	write_file(
		path,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n"
		"  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" "
		"complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\" "
		"nodeset=\"0x00000001\" "
		"complete_nodeset=\"0x00000001\" allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
		"    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" "
		"complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" "
		"complete_nodeset=\"0x00000001\" gp_index=\"2\" local_memory=\"1073741824\"/>\n"
		"    <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000003\" "
		"complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" "
		"complete_nodeset=\"0x00000001\" gp_index=\"3\">\n"
		"      <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" "
		"complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" "
		"complete_nodeset=\"0x00000001\" gp_index=\"4\"/>\n"
		"      <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" "
		"complete_cpuset=\"0x00000002\" nodeset=\"0x00000001\" "
		"complete_nodeset=\"0x00000001\" gp_index=\"5\"/>\n"
		"    </object>\n  </object>\n</topology>\n");
	expect_empty(path, "has no PCI devices");
	snprintf(path, sizeof(path), "%s", tmpdir); /* a directory */
	expect_empty(path, "hwloc");
	/* files that crash hwloc's reader itself: refused, and this process lives on */
	{
		static const char *const crash[] = {
			"abort-bitmap-sscanf-assert",
			"segv-compare-first",
			"segv-insert-by-parent-2",
			"segv-insert-by-parent",
			"segv-nul-in-tag",
			"segv-propagate-nodeset",
			"segv-topology-clear",
		};

		for (size_t i = 0; i < sizeof(crash) / sizeof(crash[0]); i++) {
			snprintf(path, sizeof(path), "%s/test/fixtures/topo/hwloc-crash/%s.xml",
				 rn_test_source_dir(), crash[i]);
			expect_empty(path, "railnet ignores the file");
		}
	}
}

/* This machine's topology (no XML): loads, whatever it holds; no GPU needed. */
static void test_host_topology(void **state)
{
	struct rn_topo *t = NULL;

	(void)state;
	rn_test_log_reset();
	assert_int_equal(rn_topo_load(NULL, &t), 0);
	assert_string_equal(t->source, "this machine");
	for (int i = 1; i < t->ndevs; i++)
		assert_true(strcmp(t->devs[i - 1].busid, t->devs[i].busid) < 0);
	rn_topo_destroy(t);
	assert_int_equal(rn_topo_load("", &t), 0);
	rn_topo_destroy(t);
	/* a host without PCI in sysfs (some containers) warns like an I/O-less XML */
	if (rn_test_log.warns)
		assert_non_null(strstr(rn_test_log.last_warn, "has no PCI devices"));
	rn_test_log_reset();
}

/* The static hwloc inside a shared object linked like the plugin (test/topo/so_probe.c). */
static void test_in_shared_object(void **state)
{
	const char *so = getenv("RN_TOPO_SO_PROBE");
	int (*probe)(const char *, int *, int *);
	char xml[PATH_MAX];
	int ndevs = -1, type = -1;
	void *h;

	(void)state;
	if (!so)
		fail_msg("RN_TOPO_SO_PROBE is not set (test/topo/tests.cmake sets it)");
	h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen %s: %s", so, dlerror());
	*(void **)&probe = dlsym(h, "rn_topo_so_probe");
	assert_non_null(probe);
	assert_null(dlsym(h, "hwloc_topology_init")); /* hwloc stays inside */
	assert_null(dlsym(h, "rn_topo_load"));
	snprintf(xml, sizeof(xml), "%s/test/fixtures/topo/switch.xml", rn_test_source_dir());
	assert_int_equal(probe(xml, &ndevs, &type), 0);
	assert_int_equal(ndevs, 7);
	assert_int_equal(type, RN_PATH_PXB);
	assert_int_equal(probe(NULL, &ndevs, &type), 0); /* this machine, whatever it has */
	dlclose(h);
}

/* --------------------------------------------------------------------- GDR probe ---- */

static void test_gdr_probe_sysfs(void **state)
{
	char root[PATH_MAX + 32];
	struct rn_gdr g;

	(void)state;
	snprintf(root, sizeof(root), "%s/sysfs-none", tmpdir);
	sh("mkdir -p '%s'", root);
	assert_int_equal(rn_gdr_probe(root, NULL, &g), 0);
	assert_false(g.peermem);
	assert_false(g.works);
	assert_int_equal(g.dmabuf, -1);
	assert_int_equal(g.data_direct, -1);
	assert_non_null(strstr(g.why, "unavailable"));

	snprintf(root, sizeof(root), "%s/sysfs-peermem", tmpdir);
	sh("mkdir -p '%s/module/nvidia_peermem' && echo 535.104.05 > "
	   "'%s/module/nvidia_peermem/version'",
	   root, root);
	assert_int_equal(rn_gdr_probe(root, NULL, &g), 0);
	assert_true(g.peermem && g.works);
	assert_string_equal(g.peermem_how, "nvidia_peermem 535.104.05");

	snprintf(root, sizeof(root), "%s/sysfs-nvmem", tmpdir);
	sh("mkdir -p '%s/kernel/mm/memory_peers/nv_mem' && echo 1.2-0 > "
	   "'%s/kernel/mm/memory_peers/nv_mem/version'",
	   root, root);
	assert_int_equal(rn_gdr_probe(root, NULL, &g), 0);
	assert_true(g.peermem && g.works);
	assert_string_equal(g.peermem_how, "nv_peer_mem 1.2-0");

	snprintf(root, sizeof(root), "%s/sysfs-nvmem-nc", tmpdir);
	sh("mkdir -p '%s/kernel/mm/memory_peers/nv_mem_nc' && : > "
	   "'%s/kernel/mm/memory_peers/nv_mem_nc/version'",
	   root, root);
	assert_int_equal(rn_gdr_probe(root, NULL, &g), 0);
	assert_true(g.peermem);
	assert_string_equal(g.peermem_how, "nv_peer_mem (nc)");
}

/* dma-buf through the verbs ops: a library without ibv_reg_dmabuf_mr, and one with it. */
static void probe_with(const char *lib, int want_dmabuf)
{
	const struct rn_verbs_ops *v;
	struct ibv_device **list = NULL;
	struct ibv_context *ctx = NULL;
	char root[PATH_MAX + 32];
	struct rn_gdr g;
	int n = 0;

	assert_int_equal(rn_verbs_load(lib), 0);
	v = rn_verbs();
	assert_int_equal(v->get_device_list(&list, &n), 0);
	assert_true(n > 0);
	assert_int_equal(v->open_device(list[0], &ctx), 0);
	snprintf(root, sizeof(root), "%s/sysfs-none", tmpdir);
	assert_int_equal(rn_gdr_probe(root, ctx, &g), 0);
	assert_int_equal(g.dmabuf, want_dmabuf);
	assert_int_equal(g.works, want_dmabuf == 1);
	assert_int_equal(g.data_direct, 0); /* no libmlx5 with a fake library */
	if (want_dmabuf == 1)
		assert_non_null(strstr(g.why, "dma-buf registration"));
	v->close_device(ctx);
	v->free_device_list(list);
	rn_verbs_unload();
}

static void test_gdr_probe_dmabuf(void **state)
{
	const char *dir = getenv("RN_FAKE_VERBS_DIR");
	char lib[PATH_MAX];

	(void)state;
	if (!dir)
		fail_msg("RN_FAKE_VERBS_DIR is not set (test/topo/tests.cmake sets it)");
	snprintf(lib, sizeof(lib), "%s/libfake_verbs_full.so", dir);
	if (access(lib, R_OK))
		fail_msg("%s was not built", lib);
	probe_with(lib, 0);
	snprintf(lib, sizeof(lib), "%s/libfake_verbs_opt.so", dir);
	probe_with(lib, 1);
	/* softverbs answers EOPNOTSUPP like a kernel without dma-buf support */
	snprintf(lib, sizeof(lib), "%s/softverbs/libibverbs.so.1", rn_test_build_dir());
	if (!access(lib, R_OK)) {
		char view[PATH_MAX + 64];

		snprintf(view, sizeof(view), "%s/n1/train-0/view", fixture("seeds-b4"));
		setenv("SOFTVERBS_VIEW", view, 1);
		probe_with(lib, 0);
		unsetenv("SOFTVERBS_VIEW");
	}
	rn_test_log_reset();
}

/* ----------------------------------------------------- policy at the CUDA seam ---- */

#define FAKE_BASE 0xd0000000000ULL
static const char *fake_busids[] = { "0000:51:00.0", "0000:54:00.0", "0000:8d:00.0",
				     "0000:92:00.0" };
static int fake_calls;

static int f_init(unsigned int flags)
{
	return 0;
}
static int f_version(int *v)
{
	*v = 12040;
	return 0;
}
static int f_count(int *n)
{
	*n = 4;
	return 0;
}
static int f_get(int *dev, int ordinal)
{
	*dev = ordinal;
	return ordinal < 4 ? 0 : 101;
}
static int f_busid(char *b, int len, int dev)
{
	snprintf(b, (size_t)len, "0000%s", fake_busids[dev]);
	return 0;
}
static int f_attr(void *data, int attr, uintptr_t ptr)
{
	fake_calls++;
	if (ptr < FAKE_BASE || ptr >= FAKE_BASE + (4ULL << 32))
		return 1;
	if (attr == RN_CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
		*(unsigned int *)data = RN_CU_MEMORYTYPE_DEVICE;
	else
		*(int *)data = (int)((ptr - FAKE_BASE) >> 32);
	return 0;
}
static const struct rn_cuda_ops fake_ops = {
	.init = f_init,
	.driver_get_version = f_version,
	.device_get_count = f_count,
	.device_get = f_get,
	.device_get_pci_bus_id = f_busid,
	.pointer_get_attribute = f_attr,
};

static const void *gpu_ptr(int ordinal)
{
	return (const void *)(uintptr_t)(FAKE_BASE + ((uint64_t)ordinal << 32) + 4096);
}

static void test_policy(void **state)
{
	const char *nic12[] = { "0000:c3:00.0" }; /* mlx5_12, root c0:01.1 */
	const char *nic4[] = { "0000:48:00.0" };  /* mlx5_4, root 40:01.1 */
	char busids[8][RN_BUSID_MAX];
	struct rn_topo *t;
	int host_buf = 0;

	(void)state;
	rn_cuda_set_ops(&fake_ops, 12040);
	assert_int_equal(rn_cuda_available(), 0);
	assert_int_equal(rn_cuda_visible_busids(busids, 8), 4);
	assert_string_equal(busids[2], "0000:8d:00.0");
	t = load_node("seeds-b4-misaligned", "n1");
	{
		const char *ids[] = { busids[0], busids[1], busids[2], busids[3] };

		assert_int_equal(rn_topo_set_visible_busids(t, ids, 4, "CUDA driver"), 4);
	}
	rn_test_log_reset();
	/* same root: silent under every policy */
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_STRICT, gpu_ptr(0), "mlx5_4", nic4, 1), 0);
	RN_ASSERT_NO_WARN();

	/* strict: refused, one WARN naming GPU, its root, NIC, its root, and the fix */
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_STRICT, gpu_ptr(2), "mlx5_12", nic12, 1),
			 -EPERM);
	assert_int_equal(rn_test_log.warns, 1);
	for (const char *const *s =
		     (const char *const[]){ "GPU 0000:8d:00.0", "CUDA 2", "PCIe root 0000:80:01.1",
					    "mlx5_12", "PCIe root 0000:c0:01.1", "refused",
					    "Fix:", "mlx5_8", "restricted",
					    "RAILNET_GDR_POLICY=warn", NULL };
	     *s; s++)
		if (!strstr(rn_test_log.last_warn, *s))
			fail_msg("strict WARN lacks '%s': %s", *s, rn_test_log.last_warn);
	/* every refusal says so */
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_STRICT, gpu_ptr(2), "mlx5_12", nic12, 1),
			 -EPERM);
	assert_int_equal(rn_test_log.warns, 2);

	/* warn: registered, one WARN per GPU and NIC pair */
	rn_test_log_reset();
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_WARN, gpu_ptr(2), "mlx5_12", nic12, 1), 0);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, "RAILNET_GDR_POLICY=warn"));
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_WARN, gpu_ptr(2), "mlx5_12", nic12, 1), 0);
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_WARN, gpu_ptr(3), "mlx5_12", nic12, 1), 0);
	assert_int_equal(rn_test_log.warns, 2); /* GPU 3 on mlx5_12 is a new pair */
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_WARN, gpu_ptr(3), "mlx5_12", nic12, 1), 0);
	assert_int_equal(rn_test_log.warns, 2);

	/* off: registered silently, the driver is not even asked */
	rn_test_log_reset();
	fake_calls = 0;
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_OFF, gpu_ptr(2), "mlx5_12", nic12, 1), 0);
	assert_int_equal(fake_calls, 0);
	assert_int_equal(rn_test_log.warns + rn_test_log.infos, 0);

	/* host memory passed as CUDA: cannot judge, INFO, registered */
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_STRICT, &host_buf, "mlx5_12", nic12, 1), 0);
	RN_ASSERT_NO_WARN();
	assert_true(rn_test_log_contains("not device memory"));
	/* a NIC the topology cannot place */
	{
		const char *nowhere[] = { "0000:77:00.0" };

		rn_test_log_reset();
		assert_int_equal(
			rn_gdr_check_reg(t, RN_GDR_STRICT, gpu_ptr(2), "mlx5_99", nowhere, 1), 0);
		RN_ASSERT_NO_WARN();
		assert_true(rn_test_log_contains("cannot place the NIC"));
	}
	rn_topo_destroy(t);
	rn_cuda_set_ops(NULL, 0);
	rn_test_log_reset();
}

/* ------------------------------------------------------- CUDA absent or too old ---- */

static void test_cuda_absent(void **state)
{
	const char *nic12[] = { "0000:c3:00.0" };
	char b[RN_BUSID_MAX], list[4][RN_BUSID_MAX];
	struct rn_topo *t;

	(void)state;
	rn_cuda_set_ops(NULL, 0);
	rn_cuda_set_path("/nonexistent/libcuda.so.1");
	rn_test_log_reset();
	assert_int_equal(rn_cuda_available(), -ENOSYS);
	assert_int_equal(rn_test_log.infos, 1);
	assert_true(rn_test_log_contains("no CUDA driver (/nonexistent/libcuda.so.1"));
	assert_true(rn_test_log_contains("host memory only"));
	/* asked again: no second line */
	assert_int_equal(rn_cuda_ptr_busid(gpu_ptr(0), b), -ENOSYS);
	assert_int_equal(rn_cuda_visible_busids(list, 4), -ENOSYS);
	assert_int_equal(rn_test_log.infos, 1);
	t = load_node("seeds-b4-misaligned", "n1");
	rn_test_log_reset();
	assert_int_equal(rn_gdr_check_reg(t, RN_GDR_STRICT, gpu_ptr(2), "mlx5_12", nic12, 1), 0);
	RN_ASSERT_NO_WARN();
	assert_true(rn_test_log_contains("no usable CUDA driver"));
	rn_topo_destroy(t);

	/* too old, through the ops seam */
	rn_test_log_reset();
	rn_cuda_set_ops(&fake_ops, 10020);
	assert_int_equal(rn_cuda_available(), -ENOSYS);
	assert_true(rn_test_log_contains("older than 11000"));
	rn_cuda_set_ops(NULL, 0);
	rn_cuda_set_path(NULL);
	rn_test_log_reset();
}

/* The dlopen path, with fake drivers built from test/topo/fake_cuda.c. */
static void test_cuda_dlopen(void **state)
{
	const char *dir = getenv("RN_FAKE_CUDA_DIR");
	char lib[PATH_MAX], b[RN_BUSID_MAX], list[8][RN_BUSID_MAX];

	(void)state;
	if (!dir)
		fail_msg("RN_FAKE_CUDA_DIR is not set (test/topo/tests.cmake sets it)");
	setenv("FAKE_CUDA_BUSIDS", "0000:0f:00.0,0000:15:00.0", 1);

	snprintf(lib, sizeof(lib), "%s/libfake_cuda_good.so", dir);
	rn_cuda_unload();
	rn_cuda_set_path(lib);
	rn_test_log_reset();
	assert_int_equal(rn_cuda_available(), 0);
	assert_true(rn_test_log_contains("version 12040 loaded"));
	assert_int_equal(rn_cuda_visible_busids(list, 8), 2);
	assert_string_equal(list[1], "0000:15:00.0");
	assert_int_equal(rn_cuda_ptr_busid(gpu_ptr(1), b), 0);
	assert_string_equal(b, "0000:15:00.0");
	assert_int_equal(rn_cuda_ptr_busid(&b, b), -EINVAL);
	rn_cuda_unload();

	snprintf(lib, sizeof(lib), "%s/libfake_cuda_old.so", dir);
	rn_cuda_set_path(lib);
	rn_test_log_reset();
	assert_int_equal(rn_cuda_available(), -ENOSYS);
	assert_true(rn_test_log_contains("is version 10020, older than 11000"));
	rn_cuda_unload();

	snprintf(lib, sizeof(lib), "%s/libfake_cuda_nobusid.so", dir);
	rn_cuda_set_path(lib);
	rn_test_log_reset();
	assert_int_equal(rn_cuda_available(), -ENOSYS);
	assert_true(rn_test_log_contains("lacks cuDeviceGetPCIBusId"));
	rn_cuda_unload();
	rn_cuda_set_path(NULL);
	unsetenv("FAKE_CUDA_BUSIDS");
	RN_ASSERT_NO_WARN();
	rn_test_log_reset();
}

/*
 * docs/topology.md, "No CUDA on the machine": the plugin's init, devices and properties on a
 * node whose topology has no NVIDIA GPU (leaky.spec's n1; the view's NIC at its 0000:0c:00.0,
 * nvidia-peermem loaded so that GDR itself works) offer host memory only, say so at INFO, and
 * never open the CUDA driver: a recording fake driver (fake_cuda.c, FAKE_CUDA_MARK) stays
 * unloaded until the test itself asks for it. Its own process (`test_topo no-gpu`, ctest
 * test_topo_no_gpu): softverbs reads SOFTVERBS_VIEW once per process, and the GDR probe tests
 * load it on a seeds view first.
 */
static void test_no_gpu_no_cuda(void **state)
{
	const char *dir = getenv("RN_FAKE_CUDA_DIR");
	char view[256], lib[PATH_MAX], xml[PATH_MAX], mark[PATH_MAX + 16], text[64] = "";
	struct rn_net_ctx *ctx = NULL;
	struct rn_props props;
	FILE *f;
	int n = -1;

	(void)state;
	if (!dir)
		fail_msg("RN_FAKE_CUDA_DIR is not set (test/topo/tests.cmake sets it)");
	assert_int_equal(rn_test_sv_mkview_lo("topo", 1, "pci0000:00/0000:00:01.1/0000:0c:00.0",
					      view, sizeof(view)),
			 0);
	sh("mkdir -p '%s/module/nvidia_peermem' && echo 535.104.05 "
	   ">'%s/module/nvidia_peermem/version'",
	   view, view);
	snprintf(xml, sizeof(xml), "%s/n1/topo.xml", fixture("leaky"));
	snprintf(lib, sizeof(lib), "%s/softverbs/libibverbs.so.1", rn_test_build_dir());
	snprintf(mark, sizeof(mark), "%s/cuda-mark", tmpdir);
	setenv("RAILNET_IBVERBS_LIB", lib, 1);
	setenv("SOFTVERBS_VIEW", view, 1);
	setenv("RAILNET_SYSFS_ROOT", view, 1);
	setenv("RAILNET_TOPO_XML", xml, 1);
	setenv("NCCL_SOCKET_IFNAME", "lo", 1);
	setenv("FAKE_CUDA_MARK", mark, 1);
	snprintf(lib, sizeof(lib), "%s/libfake_cuda_good.so", dir);
	rn_cuda_unload();
	rn_cuda_set_path(lib);

	rn_test_log_capture();
	assert_int_equal(rn_net_init(NULL, 1, RN_TRAFFIC_CLASS_UNDEF, &ctx), 0);
	assert_int_equal(rn_net_devices(&n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rn_net_get_properties(0, &props), 0);
	assert_int_equal(props.ptr_support, RN_PTR_HOST);
	assert_int_equal(rn_net_get_properties_in(RN_NET_VIEW_SELF, 0, &props), 0);
	assert_int_equal(props.ptr_support, RN_PTR_HOST);
	RN_ASSERT_NO_WARN();
	assert_true(rn_test_log_contains("GPUDirect RDMA available"));
	assert_true(rn_test_log_contains("PCI devices, no NVIDIA GPU: host memory only"));
	assert_true(rn_test_log_contains("no GPU this process can use (GPUs: "));
	assert_int_equal(rn_net_finalize(ctx), 0);
	if (!access(mark, F_OK))
		fail_msg("the CUDA driver was opened on a machine without a GPU (%s)", mark);

	/* the recorder works: asked directly, the driver is opened and initialised */
	rn_test_log_capture();
	assert_int_equal(rn_cuda_available(), 0);
	f = fopen(mark, "re");
	assert_non_null(f);
	assert_int_equal(fread(text, 1, sizeof(text) - 1, f) > 0, 1);
	fclose(f);
	assert_string_equal(text, "open\ncuInit\n");
	rn_cuda_unload();
	rn_cuda_set_path(NULL);
	unsetenv("FAKE_CUDA_MARK");
	unsetenv("NCCL_SOCKET_IFNAME");
	unsetenv("RAILNET_TOPO_XML");
	unsetenv("RAILNET_SYSFS_ROOT");
	unsetenv("SOFTVERBS_VIEW");
	unsetenv("RAILNET_IBVERBS_LIB");
	rn_test_log_reset();
}

static int setup(void **state)
{
	char fab[PATH_MAX];

	(void)state;
	snprintf(fab, sizeof(fab), "%s/bin/softverbs-fabric", rn_test_build_dir());
	if (access(fab, X_OK))
		rn_test_skip("%s is not built: the fixtures need it", fab);
	snprintf(tmpdir, sizeof(tmpdir), "%s/rn-topo.XXXXXX", rn_test_tmp_dir());
	if (!mkdtemp(tmpdir))
		return -1;
	rn_test_log_capture();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (tmpdir[0])
		sh("rm -rf '%s'", tmpdir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busid),
		cmocka_unit_test(test_switch_paths),
		cmocka_unit_test(test_nccl_paths),
		cmocka_unit_test(test_nccl_topo_file),
		cmocka_unit_test(test_seeds_map),
		cmocka_unit_test(test_ptr_support_fixtures),
		cmocka_unit_test(test_ptr_support_issue_answers),
		cmocka_unit_test(test_ptr_support_vdev),
		cmocka_unit_test(test_visible_env),
		cmocka_unit_test(test_gpu_unplaced),
		cmocka_unit_test(test_bad_xml),
		cmocka_unit_test(test_host_topology),
		cmocka_unit_test(test_in_shared_object),
		cmocka_unit_test(test_gdr_probe_sysfs),
		cmocka_unit_test(test_gdr_probe_dmabuf),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_cuda_absent),
		cmocka_unit_test(test_cuda_dlopen),
	};
	const struct CMUnitTest no_gpu[] = {
		cmocka_unit_test(test_no_gpu_no_cuda),
	};

	if (argc > 1 && !strcmp(argv[1], "no-gpu"))
		return cmocka_run_group_tests_name("topo_no_gpu", no_gpu, setup, teardown);
	if (argc > 1) {
		fprintf(stderr, "usage: test_topo [no-gpu]\n");
		return 2;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
