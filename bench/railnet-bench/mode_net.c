/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --net mode: an NCCL net plugin (railnet by default) driven directly, host memory, CPU
 * reduction, no GPU and no NCCL (issue 7, item 3). Each MPI rank loads the plugin as NCCL does
 * (netapi.c), fuses the ports of one NIC with makeVDevice as NCCL's topology code does, picks
 * a device, listens, and ships its 128-byte handle to its ring predecessor over MPI; connect
 * and accept are then driven alternately until both return a comm. Collectives are rings over
 * these two comms: reduce-scatter then all-gather, cut into chunks, with up to --slots sends
 * and receives in flight per comm; received reduce-scatter chunks land in registered slots,
 * are reduced on the CPU and forwarded from there. Every plugin error stops the run with one
 * line naming the call, the rank, the peer and the result. The harness (bench.c) owns the
 * sweep, timing, #wrong check and output. --p2p (rank pairs, per device) lives in net_p2p.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rb.h"
#include "rb_net.h"
#include "rb_netmode.h"

#ifndef RB_DEFAULT_PLUGIN
#define RB_DEFAULT_PLUGIN "libnccl-net-railnet.so"
#endif

#define RB_NET_CONNECT_S 60 /* connect/accept give up after this (or -T, if longer) */
#define RB_NET_MAX_SLOTS 32

struct rb_netm rb_netm_state;

/*
 * Called when a polling loop made no progress. Ranks and the plugin's (or softverbs') progress
 * threads may outnumber the cores (--oversubscribe, CI): yield at first, then sleep a little,
 * so the thread that would complete our request gets the CPU. RB_NET_SPIN sets how many idle
 * rounds spin before sleeping (default 64; -1 never sleeps).
 */
void rb_netm_idle(unsigned *idle)
{
	static long spin = -2;

	if (spin == -2) {
		const char *v = getenv("RB_NET_SPIN");

		spin = v && *v ? strtol(v, NULL, 10) : 64;
	}
	if (spin < 0 || ++*idle < (unsigned long)spin) {
		sched_yield();
		return;
	}
	nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
}

double rb_netm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int rb_netm_fail(struct rb_netm *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	fprintf(stderr, "railnet-bench: rank %d (%s): %s\n", m->rank, m->host, m->err);
	fflush(stderr);
	return RB_EXIT_RUNTIME;
}

static int rb_netm_debug_level(void)
{
	const char *v = getenv("NCCL_DEBUG");

	if (!v)
		return 2; /* NCCL_LOG_WARN */
	if (!strcasecmp(v, "INFO"))
		return 3;
	if (!strcasecmp(v, "TRACE"))
		return 5;
	if (!strcasecmp(v, "VERSION"))
		return 1;
	if (!strcasecmp(v, "NONE"))
		return 0;
	return 2;
}

static int rb_net_validate(const struct rb_args *a, char *err, size_t errlen)
{
	switch (a->coll) {
	case RB_COLL_ALL_REDUCE:
	case RB_COLL_REDUCE_SCATTER:
	case RB_COLL_ALL_GATHER:
	case RB_COLL_SENDRECV:
		break;
	default:
		snprintf(err, errlen,
			 "--coll %s: --net runs all_reduce, reduce_scatter, all_gather and "
			 "sendrecv",
			 rb_colls[a->coll].name);
		return -1;
	}
	if (a->p2p && a->coll != RB_COLL_ALL_REDUCE) {
		snprintf(err, errlen, "--p2p %s replaces the collective; drop --coll",
			 rb_p2p_names[a->p2p]);
		return -1;
	}
	if (a->p2p && (a->json_path || a->csv_path)) {
		snprintf(err, errlen,
			 "--p2p prints its own table; --json and --csv record collectives only");
		return -1;
	}
	if (a->ngpus != 1) {
		snprintf(err, errlen,
			 "-g %d: --net runs one communicator rank per process; launch more MPI "
			 "ranks instead",
			 a->ngpus);
		return -1;
	}
	if (a->local_register || a->cta_policy >= 0 || a->stream_null || a->memory) {
		snprintf(err, errlen, "%s: GPU flags apply to --nccl only",
			 a->local_register    ? "-R"
			 : a->cta_policy >= 0 ? "-x"
			 : a->stream_null     ? "-y"
					      : "-M");
		return -1;
	}
	if (a->chunk % 128) {
		snprintf(err, errlen, "--chunk %zu: must be a multiple of 128 bytes", a->chunk);
		return -1;
	}
	return 0;
}

/* The last component of a PCI path minus the function digit: "0000:0c:00." for a port. */
static void rb_netm_nic_key(const char *pci, char *key, size_t len)
{
	const char *slash = strrchr(pci, '/');
	size_t n;

	snprintf(key, len, "%s", pci);
	n = strlen(key);
	if (n && slash && slash[1])
		key[n - 1] = 0;
	(void)slash;
}

/*
 * NCCL's automatic merge at its default level (PORT): devices that sit on one NIC (the same
 * PCI path but for the function digit) become one virtual device through makeVDevice, at most
 * 4 (v9-v11) or 8 (v12) per group. Then devices() is asked again, as NCCL does.
 */
static int rb_netm_merge(struct rb_netm *m)
{
	int maxd = m->net.api >= 12 ? 8 : 4;
	int used[RB_NETM_MAX_DEVS] = { 0 };

	m->nusable = 0;
	for (int d = 0; d < m->nphys; d++) {
		int group[RB_NET_MAX_CHILDREN], ng = 0, vdev = -1, rc;
		char key[256], other[256];

		if (used[d])
			continue;
		rb_netm_nic_key(m->props[d].pci_path, key, sizeof(key));
		for (int e = d; e < m->nphys && ng < maxd; e++) {
			rb_netm_nic_key(m->props[e].pci_path, other, sizeof(other));
			if (!used[e] && key[0] && !strcmp(key, other)) {
				group[ng++] = e;
				used[e] = 1;
			}
		}
		if (ng < 2 || !m->args->merge || !rb_net_has_vdev(&m->net)) {
			for (int i = 0; i < (ng ? ng : 1); i++)
				m->usable[m->nusable++] = ng ? group[i] : d;
			used[d] = 1;
			continue;
		}
		rc = rb_net_make_vdev(&m->net, group, ng, &vdev);
		if (rc) {
			/* NCCL un-groups them and goes on with the ports. */
			fprintf(stderr,
				"railnet-bench: rank %d: makeVDevice of %d ports of %s: %s; using "
				"the "
				"ports one by one\n",
				m->rank, ng, m->props[d].name, rb_net_result(rc));
			for (int i = 0; i < ng; i++)
				m->usable[m->nusable++] = group[i];
			continue;
		}
		if (vdev < m->nphys || vdev >= RB_NETM_MAX_DEVS)
			return rb_netm_fail(m,
					    "makeVDevice returned device %d, not a new index >= %d",
					    vdev, m->nphys);
		m->usable[m->nusable++] = vdev;
	}
	if (m->args->merge && rb_net_has_vdev(&m->net)) {
		int rc = rb_net_devices(&m->net, &m->ndevs);

		if (rc)
			return rb_netm_fail(m, "devices() after makeVDevice failed: %s",
					    rb_net_result(rc));
		if (m->ndevs > RB_NETM_MAX_DEVS)
			m->ndevs = RB_NETM_MAX_DEVS;
		for (int d = m->nphys; d < m->ndevs; d++) {
			rc = rb_net_props(&m->net, d, &m->props[d]);
			if (rc)
				return rb_netm_fail(m, "getProperties(%d) failed: %s", d,
						    rb_net_result(rc));
		}
	}
	return 0;
}

static const char *rb_netm_plugin_name(const struct rb_args *a)
{
	const char *env = getenv("NCCL_NET_PLUGIN");

	if (a->plugin)
		return a->plugin;
	if (env && *env) {
		if (!strcasecmp(env, "none"))
			return NULL;
		return env;
	}
	return RB_DEFAULT_PLUGIN;
}

/*
 * --netns: MPI (PMIx's TCP loopback, the shared-memory transport) was set up in the launcher's
 * namespace; the plugin and its libibverbs open their sockets and read getifaddrs in the pod's.
 */
static int rb_netm_join_netns(struct rb_netm *m, const char *ns)
{
	char path[512];
	int fd;

	if (strchr(ns, '/'))
		snprintf(path, sizeof(path), "%s", ns);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rb_netm_fail(m, "--netns %s: cannot open %s: %s", ns, path, strerror(errno));
	if (setns(fd, CLONE_NEWNET)) {
		int e = errno;

		close(fd);
		return rb_netm_fail(m, "--netns %s: setns: %s%s", ns, strerror(e),
				    e == EPERM ? " (needs CAP_SYS_ADMIN: run as root)" : "");
	}
	close(fd);
	return 0;
}

int rb_netm_load(struct rb_netm *m, struct rb_ctx *c)
{
	const struct rb_args *a = c->args;
	const char *name = rb_netm_plugin_name(a);
	char err[1536];
	int rc;

	m->args = a;
	m->rank = c->wrank;
	m->nranks = c->wsize;
	gethostname(m->host, sizeof(m->host) - 1);
	m->host[strcspn(m->host, ".")] = 0;
	if (a->netns && (rc = rb_netm_join_netns(m, a->netns)))
		return rc;
	if (!name)
		return rb_netm_fail(m, "NCCL_NET_PLUGIN=none: no external net plugin to load; "
				       "unset it or give --plugin");
	if (rb_net_open(&m->net, name, a->net_api, err, sizeof(err)))
		return rb_netm_fail(m, "cannot load the net plugin: %s", err);
	rc = rb_net_init(&m->net, rb_netm_debug_level());
	if (rc)
		return rb_netm_fail(m,
				    "net plugin %s (%s, ncclNetPlugin_v%d): init failed: %s (the "
				    "plugin's own log line above says why)",
				    m->net.name ? m->net.name : "?", m->net.path, m->net.api,
				    rb_net_result(rc));
	rc = rb_net_devices(&m->net, &m->nphys);
	if (rc)
		return rb_netm_fail(m, "net plugin %s: devices() failed: %s", m->net.name,
				    rb_net_result(rc));
	if (m->nphys <= 0)
		return rb_netm_fail(
			m,
			"net plugin %s: no network devices on this host (devices() = %d); "
			"NCCL would fall back to its next transport",
			m->net.name, m->nphys);
	if (m->nphys > RB_NETM_MAX_DEVS)
		m->nphys = RB_NETM_MAX_DEVS;
	m->ndevs = m->nphys;
	for (int d = 0; d < m->nphys; d++) {
		rc = rb_net_props(&m->net, d, &m->props[d]);
		if (rc)
			return rb_netm_fail(m, "net plugin %s: getProperties(%d) failed: %s",
					    m->net.name, d, rb_net_result(rc));
		if (!(m->props[d].ptr_support & RB_NET_PTR_HOST))
			return rb_netm_fail(m,
					    "net plugin %s: device %d (%s) does not take host "
					    "memory (ptrSupport %#x)",
					    m->net.name, d, m->props[d].name,
					    m->props[d].ptr_support);
	}
	rc = rb_netm_merge(m);
	if (rc)
		return rc;
	return 0;
}

int rb_netm_pick_dev(struct rb_netm *m, int local_rank, int *dev)
{
	if (m->args->net_dev >= 0) {
		if (m->args->net_dev >= m->ndevs)
			return rb_netm_fail(
				m, "--net-dev %d: the plugin has devices 0..%d on this host",
				m->args->net_dev, m->ndevs - 1);
		*dev = m->args->net_dev;
		return 0;
	}
	*dev = m->usable[local_rank % m->nusable];
	return 0;
}

/*
 * Connect to `to` (its handle in hto) and accept from `from` on listen comm lc, both
 * non-blocking and driven alternately, as NCCL's proxy does; NULL comms mean "call again".
 */
int rb_netm_connect_pair(struct rb_netm *m, int dev, void *lc, void *hto, int to, int from,
			 void **scomm, void **rcomm)
{
	double limit =
		m->args->timeout_s > RB_NET_CONNECT_S ? m->args->timeout_s : RB_NET_CONNECT_S;
	double deadline = rb_netm_now() + limit;
	int rc;

	*scomm = NULL;
	*rcomm = NULL;
	while (!*scomm || !*rcomm) {
		if (!*scomm) {
			rc = rb_net_connect(&m->net, dev, hto, scomm);
			if (rc)
				return rb_netm_fail(
					m, "connect to rank %d on device %d (%s) failed: %s", to,
					dev, m->props[dev].name, rb_net_result(rc));
		}
		if (!*rcomm) {
			rc = rb_net_accept(&m->net, lc, rcomm);
			if (rc)
				return rb_netm_fail(
					m, "accept from rank %d on device %d (%s) failed: %s", from,
					dev, m->props[dev].name, rb_net_result(rc));
		}
		if (*scomm && *rcomm)
			break;
		if (rb_netm_now() > deadline) {
			char what[64];

			if (!*scomm)
				snprintf(what, sizeof(what), "connect to rank %d", to);
			else
				snprintf(what, sizeof(what), "accept from rank %d", from);
			return rb_netm_fail(m,
					    "%s on device %d (%s) did not finish within %.0f s (is "
					    "the peer up, and its out-of-band interface reachable? "
					    "NCCL_SOCKET_IFNAME)",
					    what, dev, m->props[dev].name, limit);
		}
		sched_yield();
	}
	rc = rb_net_close_listen(&m->net, lc);
	if (rc)
		return rb_netm_fail(m, "closeListen failed: %s", rb_net_result(rc));
	return 0;
}

/* Listen on dev, agree with every rank that it worked, and swap handles: mine to `to_peer`,
 * the one of `from_peer` into hpeer. */
int rb_netm_listen_swap(struct rb_netm *m, int dev, int send_to, int recv_from, void **lc,
			void *hpeer)
{
	char mine[RB_NET_HANDLE_BYTES];
	int rc, all = 0;

	memset(mine, 0, sizeof(mine));
	*lc = NULL;
	rc = rb_net_listen(&m->net, dev, mine, lc);
	if (rc)
		rc = rb_netm_fail(m, "listen on device %d (%s) failed: %s", dev, m->props[dev].name,
				  rb_net_result(rc));
	else if (!*lc)
		rc = rb_netm_fail(m, "listen on device %d returned success but no listen comm",
				  dev);
	MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (all)
		return all;
	MPI_Sendrecv(mine, RB_NET_HANDLE_BYTES, MPI_BYTE, send_to, 77, hpeer, RB_NET_HANDLE_BYTES,
		     MPI_BYTE, recv_from, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return 0;
}

static int rb_net_open_mode(struct rb_ctx *c)
{
	struct rb_netm *m = &rb_netm_state;
	char hnext[RB_NET_HANDLE_BYTES];
	void *lc = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	c->mode = m;
	rc = rb_netm_load(m, c);
	if (rc)
		return rc;
	rc = rb_netm_pick_dev(m, c->local_rank, &m->dev);
	if (rc)
		return rc;
	if (m->args->p2p)
		return rb_netm_p2p_check(m);
	if (m->nranks == 1)
		return 0; /* a ring of one copies locally */
	m->next = (m->rank + 1) % m->nranks;
	m->prev = (m->rank - 1 + m->nranks) % m->nranks;
	/* My handle goes to prev, which connects to me; next's comes to me. */
	rc = rb_netm_listen_swap(m, m->dev, m->prev, m->next, &lc, hnext);
	if (rc)
		return rc;
	return rb_netm_connect_pair(m, m->dev, lc, hnext, m->next, m->prev, &m->scomm, &m->rcomm);
}

static int rb_netm_reg(struct rb_netm *m, void *comm, void *buf, size_t n, void **mh,
		       const char *what)
{
	int rc;

	if (!comm)
		return 0;
	rc = rb_net_reg_mr(&m->net, comm, buf, n, mh);
	if (rc)
		return rb_netm_fail(m,
				    "regMr of the %s buffer (%zu bytes, NCCL_PTR_HOST) failed: %s",
				    what, n, rb_net_result(rc));
	return 0;
}

static int rb_net_alloc(struct rb_ctx *c, size_t bytes)
{
	struct rb_netm *m = c->mode;
	int rc = 0;

	m->bytes = bytes;
	m->nslots = m->args->slots;
	if (m->net.api < 7 && m->nslots > 8)
		m->nslots = 8; /* NCCL_NET_MAX_REQUESTS was 8 before v7 */
	m->slot_bytes = m->args->chunk;
	m->send = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	m->recv = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	m->slots = aligned_alloc(4096, m->slot_bytes * (size_t)m->nslots);
	if (!m->send || !m->recv || !m->slots)
		return rb_netm_fail(m, "cannot allocate 2 x %zu bytes of buffers", bytes);
	memset(m->send, 0, bytes);
	memset(m->recv, 0, bytes);
	memset(m->slots, 0, m->slot_bytes * (size_t)m->nslots);
	if (m->args->p2p)
		return 0; /* net_p2p.c registers per device */
	rc = rb_netm_reg(m, m->scomm, m->send, bytes, &m->mh_send_s, "send");
	if (!rc)
		rc = rb_netm_reg(m, m->scomm, m->recv, bytes, &m->mh_recv_s, "receive");
	if (!rc)
		rc = rb_netm_reg(m, m->scomm, m->slots, m->slot_bytes * (size_t)m->nslots,
				 &m->mh_slot_s, "slot");
	if (!rc)
		rc = rb_netm_reg(m, m->rcomm, m->recv, bytes, &m->mh_recv_r, "receive");
	if (!rc)
		rc = rb_netm_reg(m, m->rcomm, m->slots, m->slot_bytes * (size_t)m->nslots,
				 &m->mh_slot_r, "slot");
	return rc;
}

static int rb_net_group(struct rb_ctx *c)
{
	return 0;
}

/* ---- CPU reduction ------------------------------------------------------------------------ */

#define RB_RED_LOOP(T, U)                                              \
	do {                                                           \
		T *d_ = dst;                                           \
		const T *a_ = a, *b_ = b;                              \
		switch (op) {                                          \
		case RB_OP_PROD:                                       \
			for (size_t i = 0; i < n; i++)                 \
				d_[i] = (T)((U)a_[i] * (U)b_[i]);      \
			break;                                         \
		case RB_OP_MAX:                                        \
			for (size_t i = 0; i < n; i++)                 \
				d_[i] = a_[i] > b_[i] ? a_[i] : b_[i]; \
			break;                                         \
		case RB_OP_MIN:                                        \
			for (size_t i = 0; i < n; i++)                 \
				d_[i] = a_[i] < b_[i] ? a_[i] : b_[i]; \
			break;                                         \
		default:                                               \
			for (size_t i = 0; i < n; i++)                 \
				d_[i] = (T)((U)a_[i] + (U)b_[i]);      \
			break;                                         \
		}                                                      \
	} while (0)

/*
 * dst[i] = a[i] op b[i]; dst may be a. Exact for the harness's data in every type; integer sums
 * and products wrap in the unsigned type (two's complement, as NCCL's kernels), so warm-up
 * rounds over leftover data are defined behaviour.
 */
static void rb_netm_reduce(enum rb_type t, enum rb_op op, void *dst, const void *a, const void *b,
			   size_t n)
{
	switch (t) {
	case RB_INT8:
		RB_RED_LOOP(int8_t, uint8_t);
		return;
	case RB_UINT8:
		RB_RED_LOOP(uint8_t, uint8_t);
		return;
	case RB_INT32:
		RB_RED_LOOP(int32_t, uint32_t);
		return;
	case RB_UINT32:
		RB_RED_LOOP(uint32_t, uint32_t);
		return;
	case RB_INT64:
		RB_RED_LOOP(int64_t, uint64_t);
		return;
	case RB_UINT64:
		RB_RED_LOOP(uint64_t, uint64_t);
		return;
	case RB_FLOAT:
		RB_RED_LOOP(float, float);
		return;
	case RB_DOUBLE:
		RB_RED_LOOP(double, double);
		return;
	default:
		/* half, bfloat16, fp8: through double, exact for these values */
		for (size_t i = 0; i < n; i++) {
			double x = rb_data_decode(t, rb_data_load(t, a, i));
			double y = rb_data_decode(t, rb_data_load(t, b, i));
			double r = op == RB_OP_PROD  ? x * y
				   : op == RB_OP_MAX ? (x > y ? x : y)
				   : op == RB_OP_MIN ? (x < y ? x : y)
						     : x + y;

			rb_data_store(t, dst, i, rb_data_encode(t, r));
		}
		return;
	}
}

static const char *rb_net_unsupported(struct rb_ctx *c, enum rb_type t, enum rb_op op)
{
	if (op == RB_OP_AVG || op == RB_OP_MULSUM)
		return "--net reduces on the CPU with sum, prod, max and min only";
	return NULL;
}

/* ---- the ring ----------------------------------------------------------------------------- */

/* One collective call as a ring: where each step's segments live, and the chunking. */
struct rb_ring {
	enum rb_type t;
	enum rb_op op;
	size_t elt;
	int nrs, nag, nsteps; /* reduce-scatter steps, all-gather steps; sendrecv: 1 step */
	int sendrecv;
	size_t segcount;	   /* elements per segment; the last may be shorter */
	size_t count;		   /* elements over all segments */
	size_t chunkelts, nchunks; /* per segment */
	char *in, *out;		   /* segment 0 of the input and the output */
	int in_whole, out_whole;   /* in/out hold every segment (else only segment `rank`) */
	void *mh_in_s, *mh_out_s, *mh_out_r;
};

struct rb_item {
	char *ptr;
	size_t bytes;
	int seg;
	int slot_src; /* send: from the oldest slot waiting to be forwarded */
	int slot_dst; /* recv: into a free slot */
	int final;    /* recv: the last reduce-scatter step, reduced into out */
	void *mh;
};

static int rb_mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static size_t rb_ring_seglen(const struct rb_ring *g, int seg)
{
	size_t start = (size_t)seg * g->segcount;

	if (start >= g->count)
		return 0;
	return g->count - start < g->segcount ? g->count - start : g->segcount;
}

/* Elements [*off, *off + return) of chunk c of a segment. */
static size_t rb_ring_chunk(const struct rb_ring *g, int seg, size_t c, size_t *off)
{
	size_t len = rb_ring_seglen(g, seg), o = c * g->chunkelts;

	*off = o;
	if (o >= len)
		return 0;
	return len - o < g->chunkelts ? len - o : g->chunkelts;
}

static char *rb_ring_at(const struct rb_ring *g, char *base, int whole, int seg, size_t off)
{
	return base + ((whole ? (size_t)seg * g->segcount : 0) + off) * g->elt;
}

static void rb_ring_send_item(const struct rb_netm *m, const struct rb_ring *g, size_t idx,
			      struct rb_item *it)
{
	int k = (int)(idx % (size_t)g->nsteps), r = m->rank, n = m->nranks;
	size_t c = idx / (size_t)g->nsteps, off;

	memset(it, 0, sizeof(*it));
	it->slot_src = 0;
	if (g->sendrecv) {
		it->seg = 0;
		it->bytes = rb_ring_chunk(g, 0, c, &off) * g->elt;
		it->ptr = g->in + off * g->elt;
		it->mh = g->mh_in_s;
	} else if (k < g->nrs) {
		it->seg = rb_mod(r - 1 - k, n);
		it->bytes = rb_ring_chunk(g, it->seg, c, &off) * g->elt;
		if (k == 0) {
			it->ptr = rb_ring_at(g, g->in, g->in_whole, it->seg, off);
			it->mh = g->mh_in_s;
		} else {
			it->slot_src = 1;
			it->mh = m->mh_slot_s;
		}
	} else {
		it->seg = rb_mod(r - (k - g->nrs), n);
		it->bytes = rb_ring_chunk(g, it->seg, c, &off) * g->elt;
		it->ptr = rb_ring_at(g, g->out, 1, it->seg, off);
		it->mh = g->mh_out_s;
	}
}

static void rb_ring_recv_item(const struct rb_netm *m, const struct rb_ring *g, size_t idx,
			      struct rb_item *it)
{
	int k = (int)(idx % (size_t)g->nsteps), r = m->rank, n = m->nranks;
	size_t c = idx / (size_t)g->nsteps, off;

	memset(it, 0, sizeof(*it));
	if (g->sendrecv) {
		it->bytes = rb_ring_chunk(g, 0, c, &off) * g->elt;
		it->ptr = g->out + off * g->elt;
		it->mh = g->mh_out_r;
	} else if (k < g->nrs) {
		it->seg = rb_mod(r - 2 - k, n);
		it->bytes = rb_ring_chunk(g, it->seg, c, &off) * g->elt;
		it->slot_dst = 1;
		it->final = k == g->nrs - 1;
		it->mh = m->mh_slot_r;
		/* ptr: the input and output of this chunk, for the reduction */
		it->ptr = rb_ring_at(g, g->in, g->in_whole, it->seg, off);
	} else {
		it->seg = rb_mod(r - 1 - (k - g->nrs), n);
		it->bytes = rb_ring_chunk(g, it->seg, c, &off) * g->elt;
		it->ptr = rb_ring_at(g, g->out, 1, it->seg, off);
		it->mh = g->mh_out_r;
	}
}

struct rb_pend {
	void *req;
	size_t bytes;
	int slot;
	size_t idx;
};

struct rb_fifo {
	struct rb_pend e[RB_NET_MAX_SLOTS];
	int head, n;
};

static void rb_fifo_push(struct rb_fifo *f, const struct rb_pend *p)
{
	f->e[(f->head + f->n) % RB_NET_MAX_SLOTS] = *p;
	f->n++;
}

static struct rb_pend *rb_fifo_front(struct rb_fifo *f)
{
	return &f->e[f->head];
}

static void rb_fifo_pop(struct rb_fifo *f)
{
	f->head = (f->head + 1) % RB_NET_MAX_SLOTS;
	f->n--;
}

static int rb_ring_run(struct rb_netm *m, const struct rb_ring *g)
{
	size_t nitems = g->nchunks * (size_t)g->nsteps;
	size_t spost = 0, rpost = 0, sdone = 0, rdone = 0;
	struct rb_fifo sq = { 0 }, rq = { 0 };
	int freeslot[RB_NET_MAX_SLOTS], nfree = m->nslots;
	int fwd[RB_NET_MAX_SLOTS], fwd_head = 0, fwd_n = 0;
	int S = m->nslots, timeout = m->args->timeout_s;
	double deadline = timeout ? rb_netm_now() + timeout : 0;
	unsigned long spins = 0;
	unsigned idle = 0;
	size_t before;
	struct rb_item it;
	int rc;

	for (int i = 0; i < S; i++)
		freeslot[i] = S - 1 - i;
	while (sdone < nitems || rdone < nitems) {
		before = spost + rpost + sdone + rdone;
		/* receives, in order, while there is a request and (reduce-scatter) a slot */
		while (rpost < nitems && rq.n < S) {
			struct rb_pend p = { .idx = rpost, .slot = -1 };
			char *dst;

			rb_ring_recv_item(m, g, rpost, &it);
			p.bytes = it.bytes;
			if (it.bytes) {
				if (it.slot_dst && !nfree)
					break;
				p.slot = it.slot_dst ? freeslot[nfree - 1] : -1;
				dst = it.slot_dst ? m->slots + (size_t)p.slot * m->slot_bytes
						  : it.ptr;
				rc = rb_net_irecv(&m->net, m->rcomm, dst, it.bytes, m->prev, it.mh,
						  &p.req);
				if (rc)
					return rb_netm_fail(
						m,
						"irecv of %zu bytes from rank %d failed: "
						"%s",
						it.bytes, m->prev, rb_net_result(rc));
				if (!p.req)
					break; /* the plugin is busy: post again later */
				if (it.slot_dst)
					nfree--;
			}
			rb_fifo_push(&rq, &p);
			rpost++;
		}
		/* sends, in order, each once its data is there */
		while (spost < nitems && sq.n < S) {
			struct rb_pend p = { .idx = spost, .slot = -1 };
			char *src;

			rb_ring_send_item(m, g, spost, &it);
			p.bytes = it.bytes;
			if (it.bytes) {
				int k = (int)(spost % (size_t)g->nsteps);

				if (!g->sendrecv && k > 0 && spost - 1 >= rdone)
					break; /* the chunk this forwards is not reduced yet */
				if (it.slot_src && !fwd_n)
					return rb_netm_fail(
						m, "internal: no slot to forward item %zu", spost);
				p.slot = it.slot_src ? fwd[fwd_head] : -1;
				src = it.slot_src ? m->slots + (size_t)p.slot * m->slot_bytes
						  : it.ptr;
				rc = rb_net_isend(&m->net, m->scomm, src, it.bytes, m->rank, it.mh,
						  &p.req);
				if (rc)
					return rb_netm_fail(
						m, "isend of %zu bytes to rank %d failed: %s",
						it.bytes, m->next, rb_net_result(rc));
				if (!p.req)
					break; /* no clear-to-send yet: post again later */
				if (it.slot_src) {
					fwd_head = (fwd_head + 1) % RB_NET_MAX_SLOTS;
					fwd_n--;
				}
			}
			rb_fifo_push(&sq, &p);
			spost++;
		}
		/* completed receives, in order: reduce, keep for forwarding, or done */
		while (rq.n) {
			struct rb_pend *p = rb_fifo_front(&rq);

			if (p->req) {
				int done = 0;
				size_t got = 0;

				rc = rb_net_test(&m->net, p->req, &done, &got);
				if (rc)
					return rb_netm_fail(
						m, "test of a receive from rank %d failed: %s",
						m->prev, rb_net_result(rc));
				if (!done)
					break;
				if (got != p->bytes)
					return rb_netm_fail(
						m,
						"a receive from rank %d completed with %zu "
						"bytes, %zu were sent",
						m->prev, got, p->bytes);
				if (p->slot >= 0) {
					char *slot = m->slots + (size_t)p->slot * m->slot_bytes;
					size_t off;

					rb_ring_recv_item(m, g, p->idx, &it);
					if (it.final) {
						char *out;

						rb_ring_chunk(g, it.seg, p->idx / (size_t)g->nsteps,
							      &off);
						out = g->out_whole ? rb_ring_at(g, g->out, 1,
										it.seg, off)
								   : g->out + off * g->elt;
						rb_netm_reduce(g->t, g->op, out, slot, it.ptr,
							       it.bytes / g->elt);
						freeslot[nfree++] = p->slot;
					} else {
						rb_netm_reduce(g->t, g->op, slot, slot, it.ptr,
							       it.bytes / g->elt);
						fwd[(fwd_head + fwd_n) % RB_NET_MAX_SLOTS] =
							p->slot;
						fwd_n++;
					}
				}
			}
			rb_fifo_pop(&rq);
			rdone++;
		}
		while (sq.n) {
			struct rb_pend *p = rb_fifo_front(&sq);

			if (p->req) {
				int done = 0;

				rc = rb_net_test(&m->net, p->req, &done, NULL);
				if (rc)
					return rb_netm_fail(m,
							    "test of a send to rank %d failed: %s",
							    m->next, rb_net_result(rc));
				if (!done)
					break;
				if (p->slot >= 0)
					freeslot[nfree++] = p->slot;
			}
			rb_fifo_pop(&sq);
			sdone++;
		}
		/* Ranks may outnumber cores (--oversubscribe): let the peer run. */
		if (spost + rpost + sdone + rdone == before)
			rb_netm_idle(&idle);
		else
			idle = 0;
		if (deadline && !(++spins & 1023) && rb_netm_now() > deadline) {
			fprintf(stderr,
				"railnet-bench: rank %d (%s): Test timeout (%ds): %zu/%zu sends "
				"and "
				"%zu/%zu receives done\n",
				m->rank, m->host, timeout, sdone, nitems, rdone, nitems);
			return RB_EXIT_TIMEOUT;
		}
	}
	return 0;
}

static int rb_net_start(struct rb_ctx *c, int i, size_t send_off, int send_in_recv, size_t recv_off,
			const struct rb_layout *l, enum rb_type t, enum rb_op op, int root)
{
	struct rb_netm *m = c->mode;
	struct rb_ring g;
	char *in = (send_in_recv ? m->recv : m->send) + send_off;
	char *out = m->recv + recv_off;
	int n = m->nranks, r = m->rank;

	memset(&g, 0, sizeof(g));
	g.t = t;
	g.op = op;
	g.elt = rb_types[t].size;
	g.in = in;
	g.out = out;
	g.in_whole = 1;
	g.out_whole = 1;
	g.mh_in_s = send_in_recv ? m->mh_recv_s : m->mh_send_s;
	g.mh_out_s = m->mh_recv_s;
	g.mh_out_r = m->mh_recv_r;
	switch (c->args->coll) {
	case RB_COLL_ALL_REDUCE:
		g.count = l->count;
		g.segcount = (l->count + (size_t)n - 1) / (size_t)n;
		g.nrs = n - 1;
		g.nag = n - 1;
		if (n == 1 && in != out)
			memcpy(out, in, l->count * g.elt);
		break;
	case RB_COLL_REDUCE_SCATTER:
		g.count = l->count * (size_t)n;
		g.segcount = l->count;
		g.nrs = n - 1;
		g.out_whole = 0;
		if (n == 1 && in != out)
			memcpy(out, in, l->count * g.elt);
		break;
	case RB_COLL_ALL_GATHER:
		g.count = l->count * (size_t)n;
		g.segcount = l->count;
		g.nag = n - 1;
		g.in_whole = 0;
		if (out + (size_t)r * l->count * g.elt != in)
			memcpy(out + (size_t)r * l->count * g.elt, in, l->count * g.elt);
		break;
	case RB_COLL_SENDRECV:
	default:
		g.sendrecv = 1;
		g.count = l->count;
		g.segcount = l->count;
		if (n == 1) {
			if (in != out)
				memcpy(out, in, l->count * g.elt);
			return 0;
		}
		break;
	}
	g.nsteps = g.sendrecv ? 1 : g.nrs + g.nag;
	if (g.nsteps == 0 || g.count == 0)
		return 0;
	g.chunkelts = m->slot_bytes / g.elt;
	g.nchunks = (g.segcount + g.chunkelts - 1) / g.chunkelts;
	if (!g.nchunks)
		return 0;
	return rb_ring_run(m, &g);
}

static int rb_net_wait(struct rb_ctx *c)
{
	return 0; /* start runs each call to completion */
}

static int rb_net_put(struct rb_ctx *c, int i, int which, size_t off, const void *src, size_t n)
{
	struct rb_netm *m = c->mode;

	memcpy((which ? m->recv : m->send) + off, src, n);
	return 0;
}

static int rb_net_get(struct rb_ctx *c, int i, int which, size_t off, void *dst, size_t n)
{
	struct rb_netm *m = c->mode;

	memcpy(dst, (which ? m->recv : m->send) + off, n);
	return 0;
}

static int rb_net_zero(struct rb_ctx *c, int i, int which, size_t n)
{
	struct rb_netm *m = c->mode;

	memset(which ? m->recv : m->send, 0, n < m->bytes ? n : m->bytes);
	return 0;
}

static void rb_net_describe(struct rb_ctx *c, int i, struct rb_device *d)
{
	struct rb_netm *m = c->mode;
	const struct rb_net_props *p = &m->props[m->dev];
	const char *bus = strrchr(p->pci_path, '/');

	d->device = m->dev;
	d->group = 0;
	snprintf(d->pci, sizeof(d->pci), "%.12s", bus ? bus + 1 : "virtual");
	if (d->pci[0] == 0)
		snprintf(d->pci, sizeof(d->pci), "virtual");
	snprintf(d->name, sizeof(d->name), "%s %d Gb/s port %d (%s v%d)", p->name, p->speed / 1000,
		 p->port, m->net.name ? m->net.name : "?", m->net.api);
}

static void rb_net_versions(struct rb_ctx *c, struct rb_run_info *r)
{
	struct rb_netm *m = c->mode;

	snprintf(r->mode_info, sizeof(r->mode_info),
		 "net plugin %s from %.200s (ncclNetPlugin_v%d); %d devices, %zu-byte chunks, %d "
		 "slots",
		 m->net.name ? m->net.name : "?", m->net.path, m->net.api, m->ndevs, m->args->chunk,
		 m->nslots);
}

static const char *rb_net_last_error(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;

	return m && m->err[0] ? m->err : NULL;
}

static void rb_net_close_mode(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;

	if (!m)
		return;
	if (m->net.table) {
		void *regs[][2] = { { m->scomm, m->mh_send_s },
				    { m->scomm, m->mh_recv_s },
				    { m->scomm, m->mh_slot_s },
				    { m->rcomm, m->mh_recv_r },
				    { m->rcomm, m->mh_slot_r } };

		for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
			if (regs[i][0] && regs[i][1])
				rb_net_dereg_mr(&m->net, regs[i][0], regs[i][1]);
		if (m->scomm)
			rb_net_close_send(&m->net, m->scomm);
		if (m->rcomm)
			rb_net_close_recv(&m->net, m->rcomm);
		rb_netm_p2p_close(m);
		rb_net_close(&m->net);
	}
	free(m->send);
	free(m->recv);
	free(m->slots);
	m->send = m->recv = m->slots = NULL;
	m->scomm = m->rcomm = NULL;
	c->mode = NULL;
}

const struct rb_mode_ops rb_mode_net = {
	.name = "net",
	.validate = rb_net_validate,
	.open = rb_net_open_mode,
	.alloc = rb_net_alloc,
	.group_start = rb_net_group,
	.group_end = rb_net_group,
	.start = rb_net_start,
	.wait = rb_net_wait,
	.put = rb_net_put,
	.get = rb_net_get,
	.zero = rb_net_zero,
	.unsupported = rb_net_unsupported,
	.describe = rb_net_describe,
	.versions = rb_net_versions,
	.last_error = rb_net_last_error,
	.close = rb_net_close_mode,
	.run = rb_netm_p2p_run,
};
