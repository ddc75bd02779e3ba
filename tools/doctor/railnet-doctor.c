// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-doctor: prints the pod's rail map before any job runs — the environment railnet
 * depends on, every RDMA port with its link, speed, state and chosen GID (and why), every
 * device or port left out (and the fix), the devices railnet offers NCCL, then a verdict.
 * --json prints the same as one document (schema in docs/doctor.md), and exactly one in every
 * outcome: a usage error, a bad environment value or a missing libibverbs is a document too,
 * and railnet's own log lines then go into it instead of onto stderr. It runs the plugin's own
 * code (rn_discover, rn_numbering_build from railnet_core) and decides nothing by
 * itself beyond the verdict. Exit: 0 fit, 1 problems found or cannot run, 2 usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "align.h"
#include "opts.h"
#include "railnet/config.h"
#include "railnet/version.h"
#include "railnet/gdr.h"
#include "railnet/cuda.h"
#include "railnet/device.h"
#include "railnet/gid.h"
#include "railnet/hca.h"
#include "railnet/json.h"
#include "railnet/log.h"
#include "railnet/oob.h"
#include "railnet/pci.h"
#include "railnet/sysfs.h"
#include "railnet/topo.h"
#include "railnet/vdev.h"
#include "railnet/verbs.h"

extern char **environ;

#define RN_DOC_MAX_PROBLEMS 64
#define RN_DOC_MAX_NOTES 8
#define RN_DOC_MEMLOCK_MIN (64ULL << 20) /* below this, registrations of NCCL's buffers fail */
#define RN_DOC_MAX_LOG 64		 /* railnet log lines a --json document carries */

_Static_assert(RN_DOC_GPUS_ENTRIES == RN_ALIGN_MAX, "--gpus takes as many GPUs as align.c");
_Static_assert(RN_DOC_BUSID_MAX == RN_BUSID_MAX, "--gpus writes bus ids as pci.c does");

struct rn_doc_problem {
	char what[RN_DROP_WHY_MAX + 64];
	char fix[2048]; /* alignment fixes name PF lists */
};

struct rn_doc {
	const struct rn_config *cfg;
	struct rn_discovery *d;
	char netns_mode;
	rlim_t memlock;	    /* RLIM_INFINITY when unlimited */
	rlim_t memlock_max; /* the hard limit: how far the process may raise it itself */
	uint64_t cap_eff;
	bool cap_known;
	struct rn_numbering num; /* the devices offered, as net.c numbers them */
	struct rn_topo *topo;	 /* RAILNET_TOPO_XML or this machine's */
	struct rn_align *align;	 /* GPUs against rails (align.h) */
	struct rn_doc_problem problems[RN_DOC_MAX_PROBLEMS];
	int nproblems;
	/* worth knowing, not a problem: no effect on the verdict */
	char notes[RN_DOC_MAX_NOTES][512];
	int nnotes;
	/* the interface of railnet's (and NCCL's) out-of-band sockets */
	bool boot_checked, boot_ok;
	struct rn_oob_if boot;
	char boot_why[512];
};

static void rn_doc_note(struct rn_doc *doc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rn_doc_note(struct rn_doc *doc, const char *fmt, ...)
{
	va_list ap;

	if (doc->nnotes == RN_DOC_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(doc->notes[doc->nnotes++], sizeof(doc->notes[0]), fmt, ap);
	va_end(ap);
}

static void rn_doc_problem(struct rn_doc *doc, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rn_doc_problem(struct rn_doc *doc, const char *fix, const char *fmt, ...)
{
	struct rn_doc_problem *p;
	va_list ap;

	if (doc->nproblems == RN_DOC_MAX_PROBLEMS)
		return;
	p = &doc->problems[doc->nproblems++];
	va_start(ap, fmt);
	vsnprintf(p->what, sizeof(p->what), fmt, ap);
	va_end(ap);
	snprintf(p->fix, sizeof(p->fix), "%s", fix ? fix : "");
}

/* ---- environment ------------------------------------------------------------------------- */

static const struct {
	int bit;
	const char *name;
} rn_caps[] = {
	{ 12, "CAP_NET_ADMIN" }, { 13, "CAP_NET_RAW" }, { 14, "CAP_IPC_LOCK" },
	{ 21, "CAP_SYS_ADMIN" }, { 38, "CAP_PERFMON" },
};

static void rn_doc_env(struct rn_doc *doc)
{
	struct rlimit rl;
	char line[256];
	FILE *f;

	doc->netns_mode = rn_netns_mode(doc->cfg->sysfs_root);
	doc->memlock = getrlimit(RLIMIT_MEMLOCK, &rl) ? 0 : rl.rlim_cur;
	doc->memlock_max = doc->memlock ? rl.rlim_max : 0;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			doc->cap_eff = strtoull(line + 7, NULL, 16);
			doc->cap_known = true;
		}
	}
	if (f)
		fclose(f);
}

static bool rn_doc_has_cap(const struct rn_doc *doc, int bit)
{
	return doc->cap_known && (doc->cap_eff >> bit) & 1;
}

static bool rn_is_our_var(const char *e)
{
	return !strncmp(e, "NCCL_", 5) || !strncmp(e, "RAILNET_", 8);
}

/* ---- alignment --------------------------------------------------------------------------- */

/* The pod's GPUs: --gpus, else what the CUDA driver enumerates, else the *_VISIBLE_DEVICES. */
static void rn_doc_gpus(struct rn_doc *doc, const struct rn_doc_opts *opts)
{
	char ids[RN_ALIGN_MAX][RN_BUSID_MAX];
	const char *ptrs[RN_ALIGN_MAX];
	int n;

	if (opts->gpus) {
		/* validated and normalised by rn_doc_opts_parse: no repeat, no malformed entry */
		for (int i = 0; i < opts->ngpus; i++)
			ptrs[i] = opts->gpu[i];
		rn_topo_set_visible_busids(doc->topo, ptrs, opts->ngpus, "--gpus");
		return;
	}
	/* the driver describes this machine, not the one a RAILNET_TOPO_XML may describe */
	n = doc->cfg->topo_xml[0] ? -ENOSYS : rn_cuda_visible_busids(ids, RN_ALIGN_MAX);
	if (n >= 0) {
		for (int i = 0; i < n; i++)
			ptrs[i] = ids[i];
		rn_topo_set_visible_busids(doc->topo, ptrs, n, "the CUDA driver");
		return;
	}
	rn_topo_set_visible(doc->topo, getenv("NVIDIA_VISIBLE_DEVICES"),
			    getenv("CUDA_VISIBLE_DEVICES"));
}

/* GDR: the peer-memory files under the sysfs root, dma-buf on the first usable device. */
static void rn_doc_gdr(const struct rn_doc *doc, struct rn_gdr *gdr)
{
	const struct rn_verbs_ops *v = rn_verbs();
	struct ibv_device **list = NULL;
	struct ibv_context *ctx = NULL;
	int n = 0;

	if (doc->d->nports && !v->get_device_list(&list, &n)) {
		for (int i = 0; i < n && !ctx; i++)
			if (!strcmp(v->get_device_name(list[i]), doc->d->ports[0].name) &&
			    v->open_device(list[i], &ctx))
				ctx = NULL;
	}
	rn_gdr_probe(doc->cfg->sysfs_root, ctx, gdr);
	if (ctx)
		v->close_device(ctx);
	v->free_device_list(list);
}

static int rn_doc_align(struct rn_doc *doc, const struct rn_doc_opts *opts)
{
	struct rn_align_env env;
	struct rn_gdr gdr;

	if (rn_topo_load(doc->cfg->topo_xml, &doc->topo))
		return -ENOMEM;
	doc->align = calloc(1, sizeof(*doc->align));
	if (!doc->align)
		return -ENOMEM;
	rn_doc_gpus(doc, opts);
	rn_topo_apply_nccl_env(doc->topo); /* GPUDirect as NCCL decides it */
	rn_doc_gdr(doc, &gdr);
	env.sysfs_root = doc->cfg->sysfs_root;
	env.bootstrap_if = doc->boot_checked && doc->boot_ok ? doc->boot.name : NULL;
	env.kubernetes = getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST");
	rn_align_build(doc->align, doc->d, doc->topo, &gdr, &env);
	return 0;
}

static void rn_doc_align_problems(struct rn_doc *doc)
{
	const struct rn_align *a = doc->align;
	char list[1024] = "", g[128];

	if (!a || a->verdict == RN_ALIGN_UNKNOWN || a->verdict == RN_ALIGN_NO_GPU ||
	    a->verdict == RN_ALIGN_NO_RAIL)
		return;
	if (!a->gdr.works)
		rn_doc_problem(
			doc,
			"load nvidia-peermem on the node (modprobe nvidia-peermem; GPU "
			"Operator: driver.rdma.enabled=true), or use dma-buf (Linux >= 5.12, "
			"rdma-core >= 34, CUDA >= 11.7)",
			"%s: every rail moves GPU data through host memory; predicted busbw "
			"%.1f-%.1f GB/s instead of %.1f",
			a->gdr.why, a->low_gbs, a->high_gbs, a->aligned_gbs);
	/* misalignment is one cause: one problem, its fix once */
	if (a->what[0])
		rn_doc_problem(doc, a->fix, "%s", a->what);
	/* hostNetwork: the node's other rails are no problem, but NCCL may still use them */
	for (int r = 0; r < a->nrails; r++) {
		bool seen = false;

		for (int q = 0; q < r && !seen; q++)
			seen = a->rails[q].other && !strcmp(a->rails[q].device, a->rails[r].device);
		if (a->rails[r].other && !seen)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? "," : "", a->rails[r].device);
	}
	if (list[0])
		rn_doc_note(doc,
			    "hostNetwork: the pod sees %d rails within %s only of GPUs it was not "
			    "given; NCCL_IB_HCA=^=%s keeps this job off them",
			    a->nother, rn_align_level_str(a->topo), list);
	for (int r = 0; r < a->nrails; r++)
		if (a->rails[r].frontend)
			rn_doc_note(
				doc,
				"%s port %d (%s) is the bootstrap interface and within %s of no "
				"GPU: a front-end NIC, not a rail (NCCL_IB_HCA=^=%s keeps data off "
				"it)",
				a->rails[r].device, a->rails[r].port, a->rails[r].ifname,
				rn_align_level_str(a->topo), a->rails[r].device);
	(void)g;
}

/* ---- verdict ----------------------------------------------------------------------------- */

/*
 * The netdev of a port (RoCE: the one its link-local GID 0 belongs to, gid_attrs/ndevs/0), as
 * NetworkAttachmentDefinitions and `ip` name it: "" when there is none (InfiniBand, a whole
 * device, a fake one). Shown beside the RDMA device name everywhere.
 */
static const char *rn_doc_netdev(const struct rn_doc *doc, const char *dev, int port, char *buf,
				 size_t len)
{
	char path[PATH_MAX];

	buf[0] = '\0';
	if (port <= 0)
		return buf;
	if (rn_sysfs_path(path, sizeof(path), doc->cfg->sysfs_root,
			  "class/infiniband/%s/ports/%d/gid_attrs/ndevs/0", dev, port) ||
	    rn_sysfs_read(path, buf, len))
		buf[0] = '\0';
	buf[strcspn(buf, "\n ")] = '\0';
	return buf;
}

/* "mlx5_0 port 1 (rdma0)", "mlx5_0 port 1", "mlx5_0" */
static const char *rn_doc_port_name(const struct rn_doc *doc, const char *dev, int port, char *buf,
				    size_t len)
{
	char nd[64];

	rn_doc_netdev(doc, dev, port, nd, sizeof(nd));
	if (!port)
		snprintf(buf, len, "%s", dev);
	else if (nd[0])
		snprintf(buf, len, "%s port %d (%s)", dev, port, nd);
	else
		snprintf(buf, len, "%s port %d", dev, port);
	return buf;
}

/* Every port listed was left out by NCCL_IB_HCA (and nothing else). */
static bool rn_doc_all_filtered(const struct rn_discovery *d)
{
	if (!d->ndrops)
		return false;
	for (int i = 0; i < d->ndrops; i++)
		if (d->drops[i].kind != RN_DROP_FILTERED)
			return false;
	return true;
}

/*
 * NCCL_IB_HCA entries are name prefixes (NCCL's meaning) unless the list starts with '=':
 * "mlx5_1" also selects (or, after '^', also excludes) mlx5_10..mlx5_17. Say so, once per
 * entry that widens over this pod's devices; it is not a problem (it may be meant).
 */
static void rn_doc_hca(struct rn_doc *doc)
{
	const struct rn_discovery *d = doc->d;
	struct rn_hca_filter f;
	char why[128];

	if (!doc->cfg->ib_hca || !doc->cfg->ib_hca[0] ||
	    rn_hca_parse(doc->cfg->ib_hca, &f, why, sizeof(why)) || f.exact)
		return;
	for (int e = 0; e < f.n; e++) {
		const char *pre = f.e[e].name;
		size_t len = strlen(pre);
		char list[320] = "";
		int more = 0;

		/* the devices of this pod: its ports and what was left out, each name once */
		for (int i = 0; i < d->nports + d->ndrops; i++) {
			const char *name =
				i < d->nports ? d->ports[i].name : d->drops[i - d->nports].name;
			bool seen = false;

			if (strncmp(name, pre, len) || !name[len])
				continue;
			for (int j = 0; j < i && !seen; j++)
				seen = !strcmp(name, j < d->nports ? d->ports[j].name
								   : d->drops[j - d->nports].name);
			if (seen)
				continue;
			more++;
			if (strlen(list) + strlen(name) + 3 < sizeof(list))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 list[0] ? ", " : "", name);
		}
		if (more)
			rn_doc_note(
				doc,
				"NCCL_IB_HCA entry '%s' is a name prefix, as in NCCL: it also %s "
				"%s (%d device(s)); write '%s=%s' for that device alone",
				pre, f.exclude ? "excludes" : "selects", list, more,
				f.exclude ? "^" : "", doc->cfg->ib_hca + (f.exclude ? 1 : 0));
	}
}

/*
 * The bootstrap interface: the one railnet's out-of-band socket will use (NCCL_SOCKET_IFNAME,
 * else the default route's, as NCCL picks its own): it must exist, be up and have an address
 * in this network namespace. With --ifaddrs the file's interfaces stand for the pod's (up, no
 * route known); the file lists the pod's rail interfaces, not necessarily its pod network, so
 * there only an NCCL_SOCKET_IFNAME that is set is judged.
 */
static void rn_doc_bootstrap(struct rn_doc *doc, const struct rn_ifaddr *ifa, int nifa, bool file)
{
	const char *spec = doc->cfg->socket_ifname;
	int rc;

	if (file && (!spec || !*spec)) {
		snprintf(doc->boot_why, sizeof(doc->boot_why),
			 "not checked: --ifaddrs lists the rail interfaces, not the pod network's, "
			 "and NCCL_SOCKET_IFNAME is not set");
		doc->boot_checked = false;
		return;
	}
	doc->boot_checked = true;
	if (!file) {
		rc = rn_oob_if_find_why(spec, &doc->boot, doc->boot_why, sizeof(doc->boot_why));
	} else {
		struct rn_oob_if *ifs = calloc(nifa ? (size_t)nifa : 1, sizeof(*ifs));
		char why[480];
		size_t idx;

		if (!ifs) {
			snprintf(doc->boot_why, sizeof(doc->boot_why), "out of memory");
			return;
		}
		for (int i = 0; i < nifa; i++) {
			snprintf(ifs[i].name, sizeof(ifs[i].name), "%s", ifa[i].name);
			ifs[i].family = ifa[i].family;
			memcpy(ifs[i].addr, ifa[i].addr, sizeof(ifs[i].addr));
			ifs[i].up = true;
			ifs[i].loopback = !strcmp(ifa[i].name, "lo");
		}
		rc = rn_oob_if_select(ifs, (size_t)nifa, spec, NULL, &idx, why, sizeof(why));
		if (!rc)
			doc->boot = ifs[idx];
		else
			snprintf(doc->boot_why, sizeof(doc->boot_why), "out-of-band interface: %s",
				 why);
		free(ifs);
	}
	doc->boot_ok = rc == 0;
	if (!doc->boot_ok)
		rn_doc_problem(
			doc,
			spec && *spec
				? "set NCCL_SOCKET_IFNAME to an interface of this pod that is up "
				  "and has an address (NCCL's bootstrap uses the same), or unset "
				  "it to use the default route's"
				: "give the pod a default route, or set NCCL_SOCKET_IFNAME to one "
				  "of its interfaces",
			"%s: railnet's connections (and NCCL's bootstrap) would fail",
			doc->boot_why);
}

static void rn_doc_verdict(struct rn_doc *doc)
{
	const struct rn_discovery *d = doc->d;

	if (d->nlisted == 0 && doc->netns_mode == 'N')
		rn_doc_problem(
			doc,
			"run `rdma system set netns shared` on the node (ib_core "
			"netns_mode=1), or give the pod an SR-IOV VF moved into its "
			"namespace",
			"no RDMA device is visible: ib_core is in exclusive network-namespace "
			"mode, so a pod sees only devices moved into its namespace");
	else if (d->nlisted == 0)
		rn_doc_problem(
			doc,
			"request the RDMA devices from a device plugin in the pod spec "
			"(the rail PFs, e.g. nvidia.com/hostdev: 16 from the SR-IOV network "
			"device plugin, or rdma/rdma_shared_device_a: 1 from the RDMA shared "
			"device plugin, the Network Operator's default) so that "
			"/dev/infiniband is populated, and check RAILNET_IBVERBS_LIB / "
			"libibverbs",
			"no RDMA device is visible to this process");
	/* one problem per cause (kind and fix): the first port's reason, the others named */
	for (int i = 0; i < d->ndrops; i++) {
		const struct rn_drop *x = &d->drops[i];
		char more[640] = "";
		int n = 0;

		/* filtered: the user's choice, listed but not a problem */
		if (x->kind == RN_DROP_FILTERED || !rn_drop_first_of_cause(d, i))
			continue;
		char who[128], other[128];

		for (int j = i + 1; j < d->ndrops; j++) {
			const struct rn_drop *o = &d->drops[j];
			size_t len = strlen(more);

			if (!rn_drop_same_cause(o, x))
				continue;
			n++;
			rn_doc_port_name(doc, o->name, o->port, other, sizeof(other));
			if (len + strlen(other) + 3 < sizeof(more))
				snprintf(more + len, sizeof(more) - len, "%s%s", n > 1 ? ", " : "",
					 other);
		}
		rn_doc_port_name(doc, x->name, x->port, who, sizeof(who));
		if (n)
			rn_doc_problem(doc, x->fix,
				       "%s: %s; likewise %d more (each under Left out): %s", who,
				       x->why, n, more);
		else
			rn_doc_problem(doc, x->fix, "%s: %s", who, x->why);
	}
	rn_doc_hca(doc);
	if (d->nlisted && !d->nports && rn_doc_all_filtered(d))
		rn_doc_problem(doc,
			       "NCCL_IB_HCA names devices this pod does not have: correct it (the "
			       "ports listed under Left out are this pod's), or unset it",
			       "NCCL_IB_HCA=%s leaves out every port of this pod (%d): NCCL would "
			       "not use railnet",
			       doc->cfg->ib_hca, d->ndrops);
	else if (d->nlisted && !d->nports)
		rn_doc_problem(doc, "see the problems above",
			       "no usable RDMA port: NCCL would not "
			       "use railnet");
	rn_doc_align_problems(doc);
	/*
	 * What raises it depends on who may: a process raises its soft limit up to the hard one;
	 * above that only CAP_SYS_RESOURCE or the runtime's default ulimits do. CAP_IPC_LOCK
	 * lifts the limit only where it is effective, which Kubernetes' capabilities.add makes it
	 * for a container running as root, not for another user (no ambient capabilities).
	 */
	if (doc->memlock != RLIM_INFINITY && doc->memlock < RN_DOC_MEMLOCK_MIN &&
	    !rn_doc_has_cap(doc, 14)) {
		char fix[640];

		if (doc->memlock_max == RLIM_INFINITY || doc->memlock_max >= RN_DOC_MEMLOCK_MIN)
			snprintf(fix, sizeof(fix),
				 "the hard limit allows more: `ulimit -l %s` in the entrypoint "
				 "(before the training process starts), or the container runtime's "
				 "default memlock ulimit",
				 doc->memlock_max == RLIM_INFINITY ? "unlimited" : "<hard limit>");
		else
			snprintf(
				fix, sizeof(fix),
				"the hard limit is %llu bytes too, so only the node can raise it: "
				"the container runtime's default memlock ulimit (containerd: "
				"LimitMEMLOCK=infinity in its systemd unit; CRI-O: default_ulimits "
				"= [\"memlock=-1:-1\"]; Docker: --ulimit memlock=-1)%s",
				(unsigned long long)doc->memlock_max,
				getuid() ? "; capabilities.add: [IPC_LOCK] does not help here: "
					   "this container runs as uid != 0, which gets no "
					   "effective capabilities"
					 : ", or capabilities.add: [IPC_LOCK] (the container "
					   "runs as root, where it takes effect)");
		rn_doc_problem(doc, fix,
			       "memlock limit is %llu bytes: RDMA memory registration would fail",
			       (unsigned long long)doc->memlock);
	}
}

/* ---- text output ------------------------------------------------------------------------- */

static const char *rn_mode_str(char m)
{
	return m == 'Y' ? "shared" : m == 'N' ? "exclusive" : "unknown";
}

static const char *rn_type_str(int t)
{
	return t == RN_GID_TYPE_ROCE_V2	  ? "RoCE v2"
	       : t == RN_GID_TYPE_ROCE_V1 ? "RoCE v1"
	       : t == RN_GID_TYPE_IB	  ? "IB"
					  : "unknown";
}

static void rn_doc_text(const struct rn_doc *doc, FILE *o)
{
	const struct rn_discovery *d = doc->d;
	char gid[RN_GID_STR_MAX], addr[64];

	fprintf(o, "railnet-doctor %s\n\nEnvironment\n", RN_VERSION_STRING);
	fprintf(o, "  verbs library    %s\n", rn_verbs()->libpath);
	fprintf(o, "  sysfs root       %s\n", doc->cfg->sysfs_root);
	fprintf(o, "  ib_core netns    %s\n", rn_mode_str(doc->netns_mode));
	if (doc->boot_ok) {
		char a[64];

		inet_ntop(doc->boot.family, doc->boot.addr, a, sizeof(a));
		fprintf(o, "  bootstrap        %s %s (%s)\n", doc->boot.name, a,
			doc->cfg->socket_ifname && *doc->cfg->socket_ifname
				? "NCCL_SOCKET_IFNAME"
				: "no NCCL_SOCKET_IFNAME: the default route's, else the first up "
				  "interface");
	} else {
		fprintf(o, "  bootstrap        %s%s\n", doc->boot_checked ? "none: " : "",
			doc->boot_why);
	}
	if (doc->memlock == RLIM_INFINITY)
		fprintf(o, "  memlock          unlimited\n");
	else
		fprintf(o, "  memlock          %llu bytes\n", (unsigned long long)doc->memlock);
	fprintf(o, "  capabilities     CapEff=%016" PRIx64, doc->cap_eff);
	for (size_t i = 0; i < sizeof(rn_caps) / sizeof(rn_caps[0]); i++)
		if (rn_doc_has_cap(doc, rn_caps[i].bit))
			fprintf(o, " %s", rn_caps[i].name);
	fprintf(o, "\n  variables       ");
	for (char **e = environ; *e; e++)
		if (rn_is_our_var(*e))
			fprintf(o, " %s", *e);
	fprintf(o, "\n\nPorts (%d usable of %d device(s) listed)\n", d->nports, d->nlisted);
	for (int i = 0; i < d->nports; i++) {
		const struct rn_port *p = &d->ports[i];
		bool ib = p->link_layer == IBV_LINK_LAYER_INFINIBAND;

		char who[128];

		rn_gid_str(p->gid.raw, gid, sizeof(gid));
		rn_gid_addr_str(p->gid.raw, addr, sizeof(addr));
		fprintf(o, "  %s: %s, ACTIVE, %d Mbps, MTU %d, pkey 0x%04x, numa %d, root %s\n",
			rn_doc_port_name(doc, p->name, p->port, who, sizeof(who)),
			ib ? "InfiniBand" : "Ethernet (RoCE)", p->speed, p->mtu, p->pkey,
			p->numa_node, p->pci_root[0] ? p->pci_root : "?");
		fprintf(o, "    pci   %s\n", p->pci_path ? p->pci_path : "(unknown)");
		if (ib)
			fprintf(o, "    gid   %d %s (lid 0x%x)\n", p->gid.index, gid, p->lid);
		else
			fprintf(o, "    gid   %d %s %s %s on %s\n", p->gid.index, gid,
				rn_type_str(p->gid.type), addr, p->gid.ifname);
		fprintf(o, "    why   %s\n", p->gid.why);
		if (p->rail_id >= 0)
			fprintf(o, "    rail  %d (%s: %s)\n", p->rail_id, p->rail_net, p->rail_why);
		else
			fprintf(o, "    rail  undefined (%s)\n",
				p->rail_why ? p->rail_why : "not derived");
		if (p->plane_id >= 0)
			fprintf(o, "    plane %d (given by NCCL_IB_HCA)\n", p->plane_id);
	}
	fprintf(o, "\nLeft out (%d)\n", d->ndrops);
	for (int i = 0; i < d->ndrops; i++) {
		const struct rn_drop *x = &d->drops[i];

		char who[128];

		fprintf(o, "  %s [%s]: %s\n",
			rn_doc_port_name(doc, x->name, x->port, who, sizeof(who)),
			rn_drop_kind_str(x->kind), x->why);
		if (x->fix[0])
			fprintf(o, "    fix   %s\n", x->fix);
	}
	for (int v = RN_NET_VIEW_VDEV; v <= RN_NET_VIEW_SELF; v++) {
		const struct rn_view *view = &doc->num.view[v];

		fprintf(o, "\nDevices offered to %s (%d)\n",
			v == RN_NET_VIEW_VDEV ? "NCCL >= 2.24 (before makeVDevice)" : "NCCL < 2.24",
			view->n);
		for (int i = 0; i < view->n; i++) {
			const struct rn_nic *n = &doc->num.nics[view->nic[i]];

			fprintf(o, "  %d %s: %d Mbps, %d port(s), pci %s\n", i, n->name, n->speed,
				n->nports, n->pci_path ? n->pci_path : "(unknown)");
		}
	}
	if (doc->align)
		rn_align_text(doc->align, o);
	fprintf(o, "\nVerdict: %s\n", doc->nproblems ? "PROBLEMS" : "FIT");
	for (int i = 0; i < doc->nproblems; i++) {
		fprintf(o, "  problem %s\n", doc->problems[i].what);
		if (doc->problems[i].fix[0])
			fprintf(o, "    fix   %s\n", doc->problems[i].fix);
	}
	for (int i = 0; i < doc->nnotes; i++)
		fprintf(o, "  note    %s\n", doc->notes[i]);
}

/* ---- JSON output ------------------------------------------------------------------------- */

static void rn_json_kv(FILE *o, const char *k, const char *v, bool comma)
{
	rn_json_str(o, k);
	fputc(':', o);
	if (v)
		rn_json_str(o, v);
	else
		fputs("null", o);
	if (comma)
		fputc(',', o);
}

/* "variables":{NAME:value, ...}: every NCCL_* and RAILNET_* variable set, in environment order */
static void rn_doc_json_vars(FILE *o)
{
	bool first = true;

	fprintf(o, "\"variables\":{");
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];

		if (!rn_is_our_var(*e) || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = '\0';
		if (!first)
			fputc(',', o);
		first = false;
		rn_json_kv(o, name, eq + 1, false);
	}
	fputc('}', o);
}

/* ---- --json: railnet's log lines go into the document ------------------------------------ */

/*
 * `kubectl logs` interleaves a container's stderr with its stdout, so with --json railnet's
 * WARN/INFO lines are kept here (the logger NCCL would pass, installed before the first
 * rn_config_acquire) and printed as the document's "log", never on stderr. They are filtered
 * as log.c filters its stderr lines: NCCL_DEBUG, default WARN.
 */
static struct {
	int n, dropped;
	struct {
		int level;
		char msg[1024];
	} line[RN_DOC_MAX_LOG];
} rn_doc_log;

static void rn_doc_logger(int level, unsigned long flags, const char *file, int line,
			  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void rn_doc_logger(int level, unsigned long flags, const char *file, int line,
			  const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level == RN_LOG_NONE || level > rn_log_level_from_env())
		return;
	if (rn_doc_log.n == RN_DOC_MAX_LOG) {
		rn_doc_log.dropped++;
		return;
	}
	rn_doc_log.line[rn_doc_log.n].level = level;
	va_start(ap, fmt);
	vsnprintf(rn_doc_log.line[rn_doc_log.n].msg, sizeof(rn_doc_log.line[0].msg), fmt, ap);
	va_end(ap);
	rn_doc_log.n++;
}

static const char *rn_doc_level_str(int level)
{
	return level == RN_LOG_WARN	 ? "WARN"
	       : level == RN_LOG_INFO	 ? "INFO"
	       : level == RN_LOG_TRACE	 ? "TRACE"
	       : level == RN_LOG_ABORT	 ? "ABORT"
	       : level == RN_LOG_VERSION ? "VERSION"
					 : "?";
}

/* "log":[{"level":..,"message":..}],"log_dropped":N, */
static void rn_doc_json_log(FILE *o)
{
	fprintf(o, "\"log\":[");
	for (int i = 0; i < rn_doc_log.n; i++) {
		fprintf(o, "%s{", i ? "," : "");
		rn_json_kv(o, "level", rn_doc_level_str(rn_doc_log.line[i].level), true);
		rn_json_kv(o, "message", rn_doc_log.line[i].msg, false);
		fputc('}', o);
	}
	fprintf(o, "],\"log_dropped\":%d,", rn_doc_log.dropped);
}

/* The WARN lines logged since line from, without the prefix, joined by "; " into buf. */
static void rn_doc_log_warns(int from, char *buf, size_t len)
{
	size_t pre = strlen(RN_LOG_PREFIX), at = 0;

	buf[0] = '\0';
	for (int i = from; i < rn_doc_log.n && at + 1 < len; i++) {
		const char *m = rn_doc_log.line[i].msg;

		if (rn_doc_log.line[i].level != RN_LOG_WARN)
			continue;
		if (!strncmp(m, RN_LOG_PREFIX, pre))
			m += pre;
		snprintf(buf + at, len - at, "%s%s", at ? "; " : "", m);
		at += strlen(buf + at);
	}
}

static void rn_doc_json(const struct rn_doc *doc, FILE *o)
{
	const struct rn_discovery *d = doc->d;
	char gid[RN_GID_STR_MAX], addr[64], buf[64];
	bool first = true;

	fprintf(o, "{\"schema\":2,");
	rn_json_kv(o, "version", RN_VERSION_STRING, true);
	fprintf(o, "\"fit\":%s,", doc->nproblems ? "false" : "true");
	fprintf(o, "\"environment\":{");
	rn_json_kv(o, "verbs_library", rn_verbs()->libpath, true);
	rn_json_kv(o, "sysfs_root", doc->cfg->sysfs_root, true);
	rn_json_kv(o, "netns_mode", rn_mode_str(doc->netns_mode), true);
	if (doc->boot_ok) {
		char a[64];

		inet_ntop(doc->boot.family, doc->boot.addr, a, sizeof(a));
		fprintf(o, "\"bootstrap\":{");
		rn_json_kv(o, "interface", doc->boot.name, true);
		rn_json_kv(o, "address", a, false);
		fprintf(o, "},");
	} else {
		fprintf(o, "\"bootstrap\":null,");
	}
	if (doc->memlock == RLIM_INFINITY)
		fprintf(o, "\"memlock_bytes\":null,");
	else
		fprintf(o, "\"memlock_bytes\":%llu,", (unsigned long long)doc->memlock);
	snprintf(buf, sizeof(buf), "%016" PRIx64, doc->cap_eff);
	rn_json_kv(o, "cap_eff", doc->cap_known ? buf : NULL, true);
	fprintf(o, "\"capabilities\":[");
	for (size_t i = 0; i < sizeof(rn_caps) / sizeof(rn_caps[0]); i++) {
		if (!rn_doc_has_cap(doc, rn_caps[i].bit))
			continue;
		if (!first)
			fputc(',', o);
		first = false;
		rn_json_str(o, rn_caps[i].name);
	}
	fprintf(o, "],");
	rn_doc_json_vars(o);
	fprintf(o, "},\"devices_listed\":%d,\"ports\":[", d->nlisted);
	for (int i = 0; i < d->nports; i++) {
		const struct rn_port *p = &d->ports[i];
		bool ib = p->link_layer == IBV_LINK_LAYER_INFINIBAND;

		rn_gid_str(p->gid.raw, gid, sizeof(gid));
		rn_gid_addr_str(p->gid.raw, addr, sizeof(addr));
		char nd[64];

		fprintf(o, "%s{", i ? "," : "");
		rn_json_kv(o, "device", p->name, true);
		fprintf(o, "\"port\":%d,\"nccl_port\":%d,", p->port, p->nccl_port);
		rn_doc_netdev(doc, p->name, p->port, nd, sizeof(nd));
		rn_json_kv(o, "netdev", nd[0] ? nd : NULL, true);
		rn_json_kv(o, "link_layer", ib ? "InfiniBand" : "Ethernet", true);
		rn_json_kv(o, "state", "ACTIVE", true);
		fprintf(o, "\"speed_mbps\":%d,\"mtu\":%d,\"pkey\":%u,\"lid\":%u,\"max_qp\":%d,",
			p->speed, p->mtu, p->pkey, p->lid, p->max_qp);
		fprintf(o,
			"\"node_guid\":\"%016" PRIx64 "\",\"sys_image_guid\":\"%016" PRIx64 "\",",
			p->node_guid, p->sys_image_guid);
		rn_json_kv(o, "pci_path", p->pci_path, true);
		rn_json_kv(o, "pci_root", p->pci_root[0] ? p->pci_root : NULL, true);
		fprintf(o, "\"numa_node\":%d,\"rail_id\":%d,\"plane_id\":%d,", p->numa_node,
			p->rail_id, p->plane_id);
		rn_json_kv(o, "rail_subnet", p->rail_id >= 0 ? p->rail_net : NULL, true);
		rn_json_kv(o, "rail_why", p->rail_why, true);
		fprintf(o, "\"gid\":{\"index\":%d,", p->gid.index);
		rn_json_kv(o, "gid", gid, true);
		rn_json_kv(o, "type", rn_type_str(p->gid.type), true);
		rn_json_kv(o, "address", ib ? NULL : addr, true);
		rn_json_kv(o, "interface", ib ? NULL : p->gid.ifname, true);
		rn_json_kv(o, "why", p->gid.why, false);
		fprintf(o, "}}");
	}
	fprintf(o, "],\"dropped\":[");
	for (int i = 0; i < d->ndrops; i++) {
		const struct rn_drop *x = &d->drops[i];

		char nd[64];

		fprintf(o, "%s{", i ? "," : "");
		rn_json_kv(o, "device", x->name, true);
		fprintf(o, "\"port\":%d,", x->port);
		rn_doc_netdev(doc, x->name, x->port, nd, sizeof(nd));
		rn_json_kv(o, "netdev", nd[0] ? nd : NULL, true);
		rn_json_kv(o, "kind", rn_drop_kind_str(x->kind), true);
		rn_json_kv(o, "why", x->why, true);
		rn_json_kv(o, "fix", x->fix[0] ? x->fix : NULL, false);
		fputc('}', o);
	}
	fprintf(o, "],\"offered\":{");
	for (int v = RN_NET_VIEW_VDEV; v <= RN_NET_VIEW_SELF; v++) {
		const struct rn_view *view = &doc->num.view[v];

		fprintf(o, "%s\"%s\":[", v != RN_NET_VIEW_VDEV ? "," : "",
			v == RN_NET_VIEW_VDEV ? "nccl_2_24_plus" : "nccl_older");
		for (int i = 0; i < view->n; i++) {
			const struct rn_nic *n = &doc->num.nics[view->nic[i]];

			fprintf(o, "%s{\"index\":%d,", i ? "," : "", i);
			rn_json_kv(o, "name", n->name, true);
			fprintf(o, "\"speed_mbps\":%d,\"ports\":%d,", n->speed, n->nports);
			rn_json_kv(o, "pci_path", n->pci_path, false);
			fputc('}', o);
		}
		fputc(']', o);
	}
	fprintf(o, "},\"alignment\":");
	if (doc->align)
		rn_align_json(doc->align, o, rn_json_str);
	else
		fputs("null", o);
	fprintf(o, ",\"problems\":[");
	for (int i = 0; i < doc->nproblems; i++) {
		fprintf(o, "%s{", i ? "," : "");
		rn_json_kv(o, "what", doc->problems[i].what, true);
		rn_json_kv(o, "fix", doc->problems[i].fix[0] ? doc->problems[i].fix : NULL, false);
		fputc('}', o);
	}
	fprintf(o, "],\"notes\":[");
	for (int i = 0; i < doc->nnotes; i++) {
		if (i)
			fputc(',', o);
		rn_json_str(o, doc->notes[i]);
	}
	fprintf(o, "],");
	rn_doc_json_log(o);
	rn_json_kv(o, "verdict", doc->nproblems ? "problems" : "fit", false);
	fprintf(o, "}\n");
}

/*
 * The document when the doctor cannot judge the pod: verdict "usage-error" (exit 2) or
 * "cannot-run" (exit 3), the stage that stopped it, the reason and the fix (also as the one
 * problem, for consumers that only list problems), the variables set and railnet's log.
 */
static void rn_doc_json_fail(FILE *o, const char *verdict, const char *stage, const char *reason,
			     const char *fix)
{
	fprintf(o, "{\"schema\":2,");
	rn_json_kv(o, "version", RN_VERSION_STRING, true);
	fprintf(o, "\"fit\":false,");
	rn_json_kv(o, "verdict", verdict, true);
	rn_json_kv(o, "stage", stage, true);
	rn_json_kv(o, "reason", reason, true);
	rn_json_kv(o, "fix", fix, true);
	fprintf(o, "\"problems\":[{");
	rn_json_kv(o, "what", reason, true);
	rn_json_kv(o, "fix", fix, false);
	fprintf(o, "}],\"environment\":{");
	rn_doc_json_vars(o);
	fprintf(o, "},");
	rn_doc_json_log(o);
	fprintf(o, "\"alignment\":null}\n");
}

/* ---- main -------------------------------------------------------------------------------- */

static void rn_usage(FILE *o)
{
	fprintf(o,
		"usage: railnet-doctor [--json] [--ifaddrs FILE] [--gpus LIST] [--time N] "
		"[--help] [--version]\n"
		"Print what railnet finds in this pod: environment, RDMA ports and the GID chosen\n"
		"for each (and why), what is left out (and the fix), the devices NCCL will see,\n"
		"and a verdict. Reads the same environment as the plugin (NCCL_IB_*, RAILNET_*).\n"
		"  --json          one JSON document (schema: docs/doctor.md)\n"
		"  --ifaddrs FILE  judge GIDs against the addresses in FILE (\"<ifname> "
		"<addr>[/len]\"\n"
		"                  lines, softverbs-fabric's VIEW/softverbs/ifaddrs) instead of "
		"this\n"
		"                  network namespace's: to check a pod's view from outside the "
		"pod\n"
		"  --gpus LIST     the pod's GPUs by PCI bus id (0000:51:00.0,...), in CUDA "
		"order,\n"
		"                  instead of asking the CUDA driver or *_VISIBLE_DEVICES\n"
		"  --time N        benchmark: run discovery (with GID choice) N times and print "
		"the\n"
		"                  min, median and max time, then exit 0\n"
		"  --gpus          each entry [DDDD:]BB:DD.F in hex; a repeat, an empty or a\n"
		"                  malformed entry is a usage error\n"
		"With --json, stdout is exactly one JSON document in every outcome (usage errors\n"
		"and failures included) and railnet's log lines go into it, not to stderr.\n"
		"Exit status: 0 fit, 1 problems found, 2 usage error, 3 the doctor could not run\n"
		"(a bad environment value, no libibverbs: railnet's init would fail too).\n");
}

static double rn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int rn_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int rn_doc_time(const struct rn_config *cfg, const struct rn_ifaddr *ifa, int nifa, int runs,
		       double load_ms)
{
	double *t = calloc((size_t)runs, sizeof(*t));
	int nports = 0;

	if (!t)
		return 1;
	rn_log_set_logger(NULL);
	for (int i = 0; i < runs; i++) {
		struct rn_discovery *d;
		double t0 = rn_now_ms();

		if (rn_discover(cfg, ifa, nifa, &d)) {
			free(t);
			return 1;
		}
		t[i] = rn_now_ms() - t0;
		nports = d->nports;
		rn_discovery_destroy(d);
	}
	qsort(t, (size_t)runs, sizeof(*t), rn_cmp_double);
	printf("init: libibverbs load %.2f ms; discovery + GID choice of %d port(s): min %.2f ms, "
	       "median %.2f ms, max %.2f ms over %d runs\n",
	       load_ms, nports, t[0], t[runs / 2], t[runs - 1], runs);
	free(t);
	return 0;
}

/*
 * The doctor stops without a verdict on the pod. Text: one line on stderr, after railnet's own
 * WARN lines ("above"). --json: the document (rn_doc_json_fail), the WARN lines logged since
 * log line from appended to the reason.
 */
static void rn_doc_fail(bool json, int from, const char *verdict, const char *stage,
			const char *what, const char *fix)
{
	char warns[3072], reason[4096];

	if (!json) {
		fprintf(stderr, "railnet-doctor: %s%s%s%s\n", what, from >= 0 ? " (above)" : "",
			fix ? "; " : "", fix ? fix : "");
		return;
	}
	warns[0] = '\0';
	if (from >= 0)
		rn_doc_log_warns(from, warns, sizeof(warns));
	snprintf(reason, sizeof(reason), "%s%s%s", what, warns[0] ? ": " : "", warns);
	rn_doc_json_fail(stdout, verdict, stage, reason, fix);
}

/* Exit status: 0 fit, 1 problems found, 2 usage error, 3 could not run (docs/doctor.md). */
#define RN_DOC_EXIT_CANNOT_RUN 3

int main(int argc, char **argv)
{
	struct rn_doc doc = { 0 };
	struct rn_doc_opts opts;
	struct rn_ifaddr *ifa = NULL;
	const char *ifaddrs_file;
	bool json, usage;
	int nifa = 0, runs, rc = 1, from;
	double t0, load_ms;
	char err[RN_DOC_ERR_MAX];

	/* quiet: the reason comes back in err, for stderr or for the --json document */
	rc = rn_doc_opts_parse(argc, argv, true, &opts, &usage, err, sizeof(err));
	if (rc == RN_DOC_HELP) {
		rn_usage(stdout);
		return 0;
	}
	if (rc == RN_DOC_VERSION) {
		printf("railnet-doctor %s\n", RN_VERSION_LONG);
		return 0;
	}
	if (rc) {
		if (opts.json) {
			rn_doc_json_fail(stdout, "usage-error", "usage", err,
					 "railnet-doctor --help lists the options");
			return 2;
		}
		fprintf(stderr, "railnet-doctor: %s\n", err);
		if (usage)
			rn_usage(stderr);
		return 2;
	}
	rc = RN_DOC_EXIT_CANNOT_RUN; /* until a verdict */
	json = opts.json;
	if (json)
		rn_log_set_logger(rn_doc_logger);
	ifaddrs_file = opts.ifaddrs;
	runs = opts.runs;
	if (ifaddrs_file) {
		int bad = 0, r = rn_ifaddrs_load(ifaddrs_file, &ifa, &nifa, &bad);

		if (r) {
			if (r == -EINVAL)
				snprintf(err, sizeof(err), "--ifaddrs %s: malformed at line %d",
					 ifaddrs_file, bad);
			else
				snprintf(err, sizeof(err), "--ifaddrs %s: %s", ifaddrs_file,
					 strerror(-r));
			rn_doc_fail(
				json, -1, "usage-error", "usage", err,
				json ? "give a readable file of \"<ifname> <address>[/<prefix>]\" "
				       "lines"
				     : NULL);
			return 2;
		}
	}
	from = rn_doc_log.n;
	if (rn_config_acquire()) {
		rn_doc_fail(
			json, from, "cannot-run", "environment",
			"the environment holds a bad value, and railnet's init would fail the "
			"same way",
			"correct or unset the variable named (docs/env.md lists the values each "
			"takes)");
		goto out_free;
	}
	doc.cfg = rn_config();
	t0 = rn_now_ms();
	from = rn_doc_log.n;
	if (rn_verbs_load(doc.cfg->ibverbs_lib)) {
		rn_doc_fail(json, from, "cannot-run", "libibverbs",
			    "cannot load libibverbs, so railnet's init would fail",
			    "install rdma-core's libibverbs in the image, or point "
			    "RAILNET_IBVERBS_LIB at it");
		goto out_release;
	}
	load_ms = rn_now_ms() - t0;
	if (runs) {
		rc = rn_doc_time(doc.cfg, ifa, ifaddrs_file ? nifa : 0, runs, load_ms)
			     ? RN_DOC_EXIT_CANNOT_RUN
			     : 0;
		goto out_unload;
	}
	from = rn_doc_log.n;
	if (rn_discover(doc.cfg, ifaddrs_file ? ifa : NULL, nifa, &doc.d)) {
		rn_doc_fail(json, from, "cannot-run", "discovery", "discovery failed", NULL);
		goto out_unload;
	}
	rn_doc_env(&doc);
	rn_doc_bootstrap(&doc, ifa, nifa, ifaddrs_file != NULL);
	/* the devices offered: net.c's own numbering, from the same discovery */
	if (rn_numbering_build(doc.d, doc.cfg->merge, &doc.num)) {
		rn_doc_fail(json, -1, "cannot-run", "memory", "out of memory", NULL);
		goto out_destroy;
	}
	if (rn_doc_align(&doc, &opts)) {
		rn_doc_fail(json, -1, "cannot-run", "memory", "out of memory", NULL);
		goto out_destroy;
	}
	rn_doc_verdict(&doc);
	if (json)
		rn_doc_json(&doc, stdout);
	else
		rn_doc_text(&doc, stdout);
	rc = doc.nproblems ? 1 : 0;
out_destroy:
	free(doc.align);
	rn_topo_destroy(doc.topo);
	rn_cuda_unload();
	rn_numbering_fini(&doc.num);
	rn_discovery_destroy(doc.d);
out_unload:
	rn_verbs_unload();
out_release:
	rn_config_release();
out_free:
	free(ifa);
	return rc;
}
