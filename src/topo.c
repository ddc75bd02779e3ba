// SPDX-License-Identifier: Apache-2.0
/*
 * The PCIe topology (topo.h): the only file that calls hwloc. It loads the topology once,
 * copies each PCI device's bus id, class, bridge chain, root port, host bridge and NUMA node
 * into plain arrays, and answers every later question from those: where a device sits, the
 * path type between two devices, which GPUs this process may use. GPUDirect decisions built
 * on it are gdr.c's; it calls neither verbs nor the CUDA driver.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hwloc.h>

#include "railnet/log.h"
#include "railnet/topo.h"

#define RN_PCI_VENDOR_NVIDIA 0x10de

const char *rn_path_type_str(int type)
{
	static const char *const names[] = { "PIX", "PXB", "PHB", "NODE", "SYS" };

	return type >= 0 && type <= RN_PATH_SYS ? names[type] : "unknown";
}

static int dev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rn_topo_dev *)a)->busid,
		      ((const struct rn_topo_dev *)b)->busid);
}

/*
 * A PCI address a bus id can name: a 5-bit device and a 3-bit function (the domain is 16-bit
 * in hwloc's ABI). hwloc takes any number from an XML file; a device outside these would get
 * a bus id that rn_topo_find could never match, and a root port one no rn_pci_root equals.
 */
static bool pci_addr_ok(const struct hwloc_pcidev_attr_s *pa)
{
	return pa->dev <= 0x1f && pa->func <= 7;
}

static bool is_host_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE &&
	       o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* Index of host bridge hb in hbs[0..*n), appended when new. */
static int host_bridge_index(uint64_t *hbs, int *n, int max, uint64_t hb)
{
	for (int i = 0; i < *n; i++)
		if (hbs[i] == hb)
			return i;
	if (*n >= max)
		return -1;
	hbs[*n] = hb;
	return (*n)++;
}

static void fill_dev(hwloc_topology_t hw, hwloc_obj_t o, struct rn_topo_dev *d, uint64_t *hbs,
		     int *nhbs, int maxhbs)
{
	const struct hwloc_pcidev_attr_s *pa = &o->attr->pcidev;
	hwloc_obj_t p, anc, os;

	memset(d, 0, sizeof(*d));
	snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%x", pa->domain, pa->bus, pa->dev,
		 pa->func);
	d->vendor = pa->vendor_id;
	d->device = pa->device_id;
	d->class_id = pa->class_id;
	d->gpu = d->vendor == RN_PCI_VENDOR_NVIDIA &&
		 (d->class_id == 0x0302 || d->class_id == 0x0300);
	d->visible = d->gpu;
	d->cuda_index = -1;
	d->host_bridge = -1;
	d->numa = -1;
	d->pcie_gbs = pa->linkspeed > 0 ? pa->linkspeed : 0;
	for (p = o->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
		if (is_host_bridge(p)) {
			d->host_bridge = host_bridge_index(hbs, nhbs, maxhbs, p->gp_index);
			break;
		}
		/* NCCL's graph: every second bridge up, starting with the grandparent */
		if ((d->nchain & 1) && d->nanc < RN_TOPO_MAX_DEPTH && pci_addr_ok(&p->attr->pcidev))
			snprintf(d->anc[d->nanc++], RN_BUSID_MAX, "%04x:%02x:%02x.%x",
				 p->attr->pcidev.domain, p->attr->pcidev.bus, p->attr->pcidev.dev,
				 p->attr->pcidev.func);
		if (d->nchain < RN_TOPO_MAX_DEPTH)
			d->chain[d->nchain++] = p->gp_index;
		/* the root port: a PCI bridge right below the host bridge */
		if (p->parent && is_host_bridge(p->parent) &&
		    p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI &&
		    pci_addr_ok(&p->attr->pcidev))
			snprintf(d->root, sizeof(d->root), "%04x:%02x:%02x.%x",
				 p->attr->pcidev.domain, p->attr->pcidev.bus, p->attr->pcidev.dev,
				 p->attr->pcidev.func);
	}
	anc = hwloc_get_non_io_ancestor_obj(hw, o);
	if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
		d->numa = hwloc_bitmap_first(anc->nodeset);
	for (os = o->io_first_child; os; os = os->next_sibling) {
		if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name)
			continue;
		if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
			if (!d->netdev[0])
				snprintf(d->netdev, sizeof(d->netdev), "%s", os->name);
		} else if (!d->name[0]) {
			snprintf(d->name, sizeof(d->name), "%s", os->name);
		}
	}
}

static struct rn_topo *topo_new(const char *source)
{
	struct rn_topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->warn_lock, NULL);
	rn_topo_set_gdr_level(t, NULL);
	snprintf(t->source, sizeof(t->source), "%s", source);
	snprintf(t->gpu_source, sizeof(t->gpu_source), "every GPU of the topology");
	return t;
}

/* Copy hwloc's PCI devices into t. 0 or -ENOMEM. */
static int topo_copy(struct rn_topo *t, hwloc_topology_t hw)
{
	uint64_t hbs[64];
	int n = 0, nhbs = 0, i = 0;
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_pcidev(hw, o)))
		n += pci_addr_ok(&o->attr->pcidev);
	if (!n)
		return 0;
	t->devs = calloc((size_t)n, sizeof(*t->devs));
	if (!t->devs)
		return -ENOMEM;
	while ((o = hwloc_get_next_pcidev(hw, o)) && i < n)
		if (pci_addr_ok(&o->attr->pcidev))
			fill_dev(hw, o, &t->devs[i++], hbs, &nhbs, 64);
	t->ndevs = i;
	t->io = true;
	qsort(t->devs, (size_t)t->ndevs, sizeof(*t->devs), dev_cmp);
	for (i = 0; i < t->ndevs; i++)
		t->ngpus += t->devs[i].gpu;
	rn_topo_set_visible(t, NULL, NULL);
	return 0;
}

/*
 * hwloc 2.9's XML reader, linked here, crashes on some malformed files (a NUL byte in a tag, an
 * object without all four cpuset/nodeset attributes, a bitmap it cannot read: an assertion;
 * open-mpi/hwloc#781 and #783, and more that test/fuzz/fuzz_topo.c found), or takes seconds
 * and gigabytes. A user's RAILNET_TOPO_XML must not take NCCL's process down with it, so the
 * file is first loaded in a child process (fork, no exec; it touches only hwloc and exits),
 * bounded by RN_TOPO_TRIAL_S. Returns 0 when the child loaded it or hwloc refused it cleanly
 * (the real load then says so), -EINVAL with why when the child died, -EAGAIN when no child
 * could be made (the file is then loaded without the trial).
 */
#define RN_TOPO_TRIAL_S 30
#define RN_TOPO_TRIAL_OK 0
#define RN_TOPO_TRIAL_REFUSED 3

static int topo_xml_trial(const char *path, char *why, size_t len)
{
	int st = 0;
	pid_t pid = fork();

	if (pid < 0) {
		snprintf(why, len, "cannot fork to check it (%s)", strerror(errno));
		return -EAGAIN;
	}
	if (pid == 0) {
		static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGALRM };
		hwloc_topology_t hw;
		sigset_t set;

		/* die of a crash: not in the application's (or a test framework's) handlers */
		sigemptyset(&set);
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			signal(sigs[i], SIG_DFL);
			sigaddset(&set, sigs[i]);
		}
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		alarm(RN_TOPO_TRIAL_S);
		if (hwloc_topology_init(&hw))
			_exit(RN_TOPO_TRIAL_REFUSED);
		hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
		if (hwloc_topology_set_xml(hw, path) || hwloc_topology_load(hw))
			_exit(RN_TOPO_TRIAL_REFUSED);
		_exit(RN_TOPO_TRIAL_OK);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, len, "cannot wait for the check (%s)", strerror(errno));
			return -EAGAIN;
		}
	if (WIFEXITED(st) &&
	    (WEXITSTATUS(st) == RN_TOPO_TRIAL_OK || WEXITSTATUS(st) == RN_TOPO_TRIAL_REFUSED))
		return 0;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
		snprintf(why, len, "hwloc's XML reader did not finish it in %d s", RN_TOPO_TRIAL_S);
	else if (WIFSIGNALED(st))
		snprintf(why, len, "hwloc's XML reader crashed on it (signal %d, %s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(why, len, "hwloc's XML reader failed on it (exit status %d)",
			 WEXITSTATUS(st));
	return -EINVAL;
}

int rn_topo_load(const char *xml_path, struct rn_topo **out)
{
	bool xml = xml_path && *xml_path;
	hwloc_topology_t hw;
	struct rn_topo *t;
	int ret = 0;

	t = topo_new(xml ? xml_path : "this machine");
	if (!t)
		return -ENOMEM;
	rn_hwloc_shim_init();
	if (xml && access(xml_path, R_OK)) {
		RN_WARN("RAILNET_TOPO_XML=%s: cannot read it (%s); railnet knows no PCIe topology "
			"and offers host memory only (point it at an hwloc XML file, or unset it "
			"to use this machine's)",
			xml_path, strerror(errno));
		goto out;
	}
	if (xml) {
		char why[160];
		int trial = topo_xml_trial(xml_path, why, sizeof(why));

		if (trial == -EINVAL) {
			RN_WARN("RAILNET_TOPO_XML=%s: %s; railnet ignores the file, knows no PCIe "
				"topology and offers host memory only (a malformed file? check it "
				"with lstopo --input %s)",
				xml_path, why, xml_path);
			goto out;
		}
		if (trial)
			RN_INFO(RN_SUB_INIT, "RAILNET_TOPO_XML=%s: %s; loading it unchecked",
				xml_path, why);
	}
	if (hwloc_topology_init(&hw)) {
		ret = errno == ENOMEM ? -ENOMEM : 0;
		RN_WARN("hwloc_topology_init failed (%s): railnet knows no PCIe topology and "
			"offers host memory only",
			strerror(errno));
		goto out;
	}
	hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (xml && hwloc_topology_set_xml(hw, xml_path)) {
		RN_WARN("RAILNET_TOPO_XML=%s: hwloc refuses it (%s); railnet knows no PCIe "
			"topology and offers host memory only",
			xml_path, strerror(errno));
		goto out_destroy;
	}
	if (hwloc_topology_load(hw)) {
		RN_WARN("%s%s: hwloc cannot load the topology (%s: malformed or not an hwloc "
			"XML?); railnet knows no PCIe topology and offers host memory only",
			xml ? "RAILNET_TOPO_XML=" : "", t->source, strerror(errno));
		goto out_destroy;
	}
	ret = topo_copy(t, hw);
	if (!ret && !t->io)
		RN_WARN("%s%s: the topology has no PCI devices (an XML saved without I/O "
			"objects?); railnet cannot tell which GPU sits next to which NIC and "
			"offers "
			"host memory only",
			xml ? "RAILNET_TOPO_XML=" : "", t->source);
out_destroy:
	hwloc_topology_destroy(hw);
out:
	if (ret) {
		rn_topo_destroy(t);
		return ret;
	}
	*out = t;
	return 0;
}

void rn_topo_destroy(struct rn_topo *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->warn_lock);
	free(t->warned);
	free(t->devs);
	free(t);
}

const struct rn_topo_dev *rn_topo_find(const struct rn_topo *t, const char *s)
{
	char busid[RN_BUSID_MAX];
	int lo = 0, hi;

	if (!t || rn_busid_parse(s, busid))
		return NULL;
	hi = t->ndevs - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(t->devs[mid].busid, busid);

		if (!c)
			return &t->devs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

int rn_topo_dev_path_type(const struct rn_topo_dev *a, const struct rn_topo_dev *b)
{
	if (a == b)
		return RN_PATH_PIX;
	for (int i = 0; i < a->nchain; i++)
		for (int j = 0; j < b->nchain; j++)
			if (a->chain[i] == b->chain[j])
				/* one bridge, or one switch (downstream port + upstream port) */
				return i <= 1 && j <= 1 ? RN_PATH_PIX : RN_PATH_PXB;
	if (a->host_bridge >= 0 && a->host_bridge == b->host_bridge)
		return RN_PATH_PHB;
	if (a->numa >= 0 && a->numa == b->numa)
		return RN_PATH_NODE;
	return RN_PATH_SYS;
}

int rn_topo_nccl_path(const struct rn_topo_dev *a, const struct rn_topo_dev *b)
{
	for (int i = 0; i < a->nanc; i++)
		for (int j = 0; j < b->nanc; j++)
			if (!strcmp(a->anc[i], b->anc[j]))
				return i == 0 && j == 0 ? RN_PATH_PIX : RN_PATH_PXB;
	/* they meet at a CPU: NCCL's CPU node is the NUMA node */
	return a->numa == b->numa ? RN_PATH_PHB : RN_PATH_SYS;
}

int rn_topo_set_gdr_level(struct rn_topo *t, const char *v)
{
	/* NCCL's path names in NCCL's order, and what each allows for a GPU and a PCI NIC */
	static const char *const names[] = { "LOC", "NVL", "NVB", "C2C", "PIX",
					     "PXB", "P2C", "PXN", "PHB", "SYS" };
	static const int allow[] = { -1,	  -1,	       -1,	    -1,
				     RN_PATH_PIX, RN_PATH_PXB, RN_PATH_PXB, RN_PATH_PXB,
				     RN_PATH_PHB, RN_PATH_SYS };
	/* NCCL's old numbers: LOC PIX PXB PHB SYS SYS */
	static const int old[] = { 0, 4, 5, 8, 9, 9 };
	int w = -1;

	if (v && *v) {
		for (int i = 0; i < 10; i++)
			if (!strcmp(v, names[i]))
				w = i;
		if (w < 0 && v[0] >= '0' && v[0] <= '9') {
			long n = strtol(v, NULL, 0);

			w = old[n < 0 || n > 5 ? 5 : n];
		}
	}
	if (w < 0) {
		t->gdr_level = RN_PATH_PXB;
		snprintf(t->gdr_level_src, sizeof(t->gdr_level_src), "PXB (NCCL's default)");
		return v && *v ? -EINVAL : 0;
	}
	t->gdr_level = allow[w];
	snprintf(t->gdr_level_src, sizeof(t->gdr_level_src), "NCCL_NET_GDR_LEVEL=%s", v);
	return 0;
}

/* ---- NCCL_TOPO_FILE ------------------------------------------------------------------------ */

#define RN_NCCL_FILE_MAX (8u << 20)

struct nccl_xml {
	const char *path;
	char *buf;
	const char *at; /* the tag being read (where an error is) */
	char what[160];
};

/*
 * The value of attribute `name` in the tag text [a, e) (after the element's name) into out;
 * false when absent or too long. Attributes are read one by one, `name = "value"` with either
 * quote and spaces around '=', so a name inside another attribute's value does not match.
 */
static bool xml_attr(const char *a, const char *e, const char *name, char *out, size_t len)
{
	size_t n = strlen(name);
	const char *p = a;

	while (p < e) {
		const char *k, *q, *end;
		size_t kl;

		while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '/'))
			p++;
		k = p;
		while (p < e && *p != '=' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			p++;
		kl = (size_t)(p - k);
		while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p >= e || *p != '=')
			return false; /* not an attribute list NCCL would read either */
		p++;
		while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
			p++;
		if (p >= e || (*p != '"' && *p != '\''))
			return false;
		q = p + 1;
		end = memchr(q, *p, (size_t)(e - q));
		if (!end)
			return false;
		if (kl == n && !strncmp(k, name, n)) {
			if ((size_t)(end - q) >= len)
				return false;
			memcpy(out, q, (size_t)(end - q));
			out[end - q] = 0;
			return true;
		}
		p = end + 1;
	}
	return false;
}

/* The '>' that ends the tag at p ('>' inside a quoted value does not); NULL when none. */
static char *tag_end(char *p)
{
	char quote = 0;

	for (p++; *p; p++) {
		if (quote) {
			quote = *p == quote ? 0 : quote;
		} else if (*p == '"' || *p == '\'') {
			quote = *p;
		} else if (*p == '>') {
			return p;
		}
	}
	return NULL;
}

struct nccl_frame {
	const char *at; /* its opening tag */
	char name[16];
	char busid[RN_BUSID_MAX]; /* <pci>: its bus id */
	int numa;		  /* <cpu>: its numaid */
};

/*
 * Walks the file's tags; for every <pci busid=...> element calls place() with its ancestors'
 * bus ids (nearest first) and its CPU's numaid. 0, or -EINVAL with x->at and x->what.
 */
static int nccl_xml_walk(struct nccl_xml *x, struct rn_topo *t, int *placed)
{
	struct nccl_frame st[64];
	int depth = 0;
	bool system = false;
	char *p = x->buf;

	x->at = x->buf + strlen(x->buf);
	while ((p = strchr(p, '<'))) {
		char *e, *name;
		bool close, self;
		size_t nl;

		x->at = p;
		if (!strncmp(p, "<!--", 4)) {
			e = strstr(p + 4, "-->");
			if (!e) {
				snprintf(x->what, sizeof(x->what), "an unclosed comment");
				return -EINVAL;
			}
			p = e + 3;
			continue;
		}
		e = tag_end(p);
		if (!e) {
			snprintf(x->what, sizeof(x->what), "a tag without its '>'");
			return -EINVAL;
		}
		for (char *c = p + 1, quote = 0; c < e; c++) {
			quote = quote ? (*c == quote ? 0 : quote)
				      : (*c == '"' || *c == '\'' ? *c : 0);
			if (*c == '<' && !quote) {
				snprintf(x->what, sizeof(x->what), "'<' inside a tag");
				return -EINVAL;
			}
		}
		if (p[1] == '?' || p[1] == '!') /* declaration, doctype */
			goto next;
		close = p[1] == '/';
		self = e[-1] == '/';
		name = p + 1 + close;
		nl = strcspn(name, " \t\r\n/>");
		if (!nl || nl >= sizeof(st[0].name)) {
			snprintf(x->what, sizeof(x->what), "a tag without a valid name");
			return -EINVAL;
		}
		if (close) {
			if (!depth || strncmp(st[depth - 1].name, name, nl) ||
			    st[depth - 1].name[nl]) {
				snprintf(x->what, sizeof(x->what), "</%.*s> closes %s%s%s", (int)nl,
					 name, depth ? "<" : "nothing",
					 depth ? st[depth - 1].name : "", depth ? ">" : "");
				return -EINVAL;
			}
			depth--;
			goto next;
		}
		if (depth == (int)(sizeof(st) / sizeof(st[0]))) {
			snprintf(x->what, sizeof(x->what), "nested more than %d deep", depth);
			return -EINVAL;
		}
		memset(&st[depth], 0, sizeof(st[depth]));
		st[depth].at = p;
		memcpy(st[depth].name, name, nl);
		st[depth].numa = depth ? st[depth - 1].numa : -1;
		if (!depth && strcmp(st[0].name, "system")) {
			snprintf(x->what, sizeof(x->what), "the top element is <%s>, not <system>",
				 st[0].name);
			return -EINVAL;
		}
		system = true;
		if (!strcmp(st[depth].name, "cpu")) {
			char v[32];

			if (xml_attr(name + nl, e, "numaid", v, sizeof(v)))
				st[depth].numa = (int)strtol(v, NULL, 10);
		} else if (!strcmp(st[depth].name, "pci")) {
			char v[64];
			int nanc = 0;

			if (!xml_attr(name + nl, e, "busid", v, sizeof(v)) ||
			    rn_busid_parse(v, st[depth].busid)) {
				snprintf(x->what, sizeof(x->what),
					 "<pci> without a busid such as 0000:0c:00.0");
				return -EINVAL;
			}
			for (int i = 0; i < t->ndevs; i++) {
				struct rn_topo_dev *d = &t->devs[i];

				if (strcmp(d->busid, st[depth].busid))
					continue;
				nanc = 0;
				for (int k = depth - 1; k >= 0 && nanc < RN_TOPO_MAX_DEPTH; k--)
					if (st[k].busid[0])
						snprintf(d->anc[nanc++], RN_BUSID_MAX, "%s",
							 st[k].busid);
				d->nanc = nanc;
				d->numa = st[depth].numa;
				d->nccl_file = true;
				(*placed)++;
			}
		}
		if (!self)
			depth++;
	next:
		p = e + 1;
	}
	if (depth) {
		x->at = st[depth - 1].at;
		snprintf(x->what, sizeof(x->what), "<%s> is never closed", st[depth - 1].name);
		return -EINVAL;
	}
	if (!system) {
		snprintf(x->what, sizeof(x->what), "no <system> element");
		return -EINVAL;
	}
	return 0;
}

/*
 * Read all of fp into a NUL-terminated buffer that grows as the file does (from 64 KiB, up to
 * RN_NCCL_FILE_MAX + 1 bytes so that a longer file is seen as one); *len is the byte count.
 * NCCL's topology files are a few KiB: an 8 MiB buffer for each would cost a large mapping.
 * NULL when out of memory.
 */
static char *nccl_file_read(FILE *fp, size_t *len)
{
	size_t cap = 64u << 10, n = 0;
	char *buf = NULL;

	for (;;) {
		char *nb = realloc(buf, cap + 1);

		if (!nb) {
			free(buf);
			return NULL;
		}
		buf = nb;
		n += fread(buf + n, 1, cap - n, fp);
		if (n < cap || cap > RN_NCCL_FILE_MAX)
			break;
		cap = cap * 2 > RN_NCCL_FILE_MAX ? RN_NCCL_FILE_MAX + 1 : cap * 2;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

int rn_topo_apply_nccl_file(struct rn_topo *t, const char *path)
{
	struct nccl_xml x = { .path = path };
	struct rn_topo_dev *save;
	FILE *fp;
	size_t n = 0;
	int placed = 0, ret;

	if (!path || !*path)
		return 0;
	fp = fopen(path, "re");
	if (!fp) {
		ret = -errno;
		RN_WARN("NCCL_TOPO_FILE %s: %s; railnet places devices from the sysfs topology "
			"instead",
			path, strerror(-ret));
		return ret;
	}
	x.buf = nccl_file_read(fp, &n);
	fclose(fp);
	if (!x.buf)
		return -ENOMEM;
	if (n > RN_NCCL_FILE_MAX || memchr(x.buf, 0, n)) {
		RN_WARN("NCCL_TOPO_FILE %s: %s; railnet places devices from the sysfs topology "
			"instead",
			path, n > RN_NCCL_FILE_MAX ? "larger than 8 MiB" : "holds a NUL byte");
		free(x.buf);
		return -EINVAL;
	}
	/* on error, nothing the walk changed may stay */
	save = t->ndevs ? malloc((size_t)t->ndevs * sizeof(*save)) : NULL;
	if (t->ndevs && !save) {
		free(x.buf);
		return -ENOMEM;
	}
	if (save)
		memcpy(save, t->devs, (size_t)t->ndevs * sizeof(*save));
	ret = nccl_xml_walk(&x, t, &placed);
	if (ret) {
		int line = 1;

		for (const char *c = x.buf; c < x.at; c++)
			line += *c == '\n';
		if (save)
			memcpy(t->devs, save, (size_t)t->ndevs * sizeof(*save));
		RN_WARN("NCCL_TOPO_FILE %s:%d: %s; railnet places devices from the sysfs topology "
			"instead",
			path, line, x.what);
	} else {
		snprintf(t->nccl_file, sizeof(t->nccl_file), "%s", path);
		RN_INFO(RN_SUB_INIT, "NCCL_TOPO_FILE %s places %d device(s) of the topology", path,
			placed);
	}
	free(save);
	free(x.buf);
	return ret ? ret : placed;
}

void rn_topo_apply_nccl_env(struct rn_topo *t)
{
	const char *level = getenv("NCCL_NET_GDR_LEVEL");

	rn_topo_apply_nccl_file(t, getenv("NCCL_TOPO_FILE"));
	if (rn_topo_set_gdr_level(t, level))
		RN_WARN("NCCL_NET_GDR_LEVEL=%s is not a path type NCCL knows (LOC, NVL, NVB, C2C, "
			"PIX, PXB, P2C, PXN, PHB, SYS, or 0-5): NCCL ignores it, and railnet "
			"allows "
			"GPUDirect RDMA up to PXB, NCCL's default",
			level);
}

int rn_topo_path_type(const struct rn_topo *t, const char *a, const char *b)
{
	const struct rn_topo_dev *da = rn_topo_find(t, a), *db = rn_topo_find(t, b);

	return da && db ? rn_topo_dev_path_type(da, db) : RN_PATH_UNKNOWN;
}

/* ------------------------------------------------------------------ visible GPUs ---- */

/*
 * Narrow sel[0..*n) (topology indices) by one *_VISIBLE_DEVICES value. Returns 0, or
 * -EINVAL when the value cannot be resolved here (UUIDs, MIG names, garbage): sel unchanged.
 */
static int narrow(int *sel, int *n, const char *v)
{
	int out[256], nout = 0;
	const char *p;

	if (!v)
		return 0;
	while (*v == ' ')
		v++;
	if (!strcmp(v, "all"))
		return 0;
	if (!*v || !strcmp(v, "none") || !strcmp(v, "void")) {
		*n = 0;
		return 0;
	}
	for (p = v; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != ',' && *p != ' ')
			return -EINVAL;
	for (p = v; *p;) {
		char *end;
		long idx = strtol(p, &end, 10);

		if (end == p)
			return -EINVAL;
		/* CUDA stops at the first index that does not exist */
		if (idx < 0 || idx >= *n)
			break;
		for (int k = 0; k < nout; k++)
			if (out[k] == sel[idx])
				return -EINVAL; /* repeated: CUDA refuses the whole list */
		if (nout < 256)
			out[nout++] = sel[idx];
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	memcpy(sel, out, (size_t)nout * sizeof(*sel));
	*n = nout;
	return 0;
}

static void mark_visible(struct rn_topo *t, const int *sel, int n)
{
	for (int i = 0; i < t->ndevs; i++) {
		t->devs[i].visible = false;
		t->devs[i].cuda_index = -1;
	}
	for (int k = 0; k < n; k++) {
		t->devs[sel[k]].visible = true;
		t->devs[sel[k]].cuda_index = k;
	}
}

int rn_topo_set_visible(struct rn_topo *t, const char *nvidia_visible, const char *cuda_visible)
{
	int sel[256] = { 0 }, n = 0;
	const char *bad = NULL;

	for (int i = 0; i < t->ndevs && n < 256; i++)
		if (t->devs[i].gpu)
			sel[n++] = i;
	if (narrow(sel, &n, nvidia_visible))
		bad = "NVIDIA_VISIBLE_DEVICES";
	if (narrow(sel, &n, cuda_visible))
		bad = "CUDA_VISIBLE_DEVICES";
	mark_visible(t, sel, n);
	t->gpus_known = !bad && (nvidia_visible || cuda_visible);
	if (bad)
		snprintf(t->gpu_source, sizeof(t->gpu_source),
			 "every GPU of the topology: %s holds UUIDs or names that need the CUDA "
			 "driver",
			 bad);
	else if (nvidia_visible || cuda_visible)
		snprintf(t->gpu_source, sizeof(t->gpu_source),
			 "NVIDIA_VISIBLE_DEVICES=%s CUDA_VISIBLE_DEVICES=%s",
			 nvidia_visible ? nvidia_visible : "(unset)",
			 cuda_visible ? cuda_visible : "(unset)");
	else
		snprintf(t->gpu_source, sizeof(t->gpu_source), "every GPU of the topology");
	return n;
}

int rn_topo_set_visible_busids(struct rn_topo *t, const char *const *busids, int n,
			       const char *source)
{
	int sel[256] = { 0 }, nsel = 0;

	for (int k = 0; k < n && nsel < 256; k++) {
		const struct rn_topo_dev *d = rn_topo_find(t, busids[k]);

		if (!d) {
			RN_WARN("GPU %s (%s): the topology (%s) has no such PCI device, so railnet "
				"cannot place it; no NIC offers GPUDirect RDMA for it",
				busids[k], source ? source : "given", t->source);
			continue;
		}
		sel[nsel++] = (int)(d - t->devs);
	}
	mark_visible(t, sel, nsel);
	for (int k = 0; k < nsel; k++)
		t->devs[sel[k]].gpu = true;
	t->gpus_known = true;
	snprintf(t->gpu_source, sizeof(t->gpu_source), "%s", source ? source : "given bus ids");
	return nsel;
}

void rn_topo_log(const struct rn_topo *t, const char *also)
{
	int usable = 0;

	for (int i = 0; i < t->ndevs; i++)
		usable += t->devs[i].gpu && t->devs[i].visible;
	if (!t->ngpus)
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"topology %s: %d PCI devices, no NVIDIA GPU: host memory only%s%s",
			t->source, t->ndevs, also ? "; " : "", also ? also : "");
	else
		RN_INFO(RN_SUB_INIT | RN_SUB_NET,
			"topology %s: %d PCI devices, %d GPUs, %d usable (%s)%s%s", t->source,
			t->ndevs, t->ngpus, usable, t->gpu_source, also ? "; " : "",
			also ? also : "");
}

/* -------------------------------------------------------------------------- GDR ---- */
