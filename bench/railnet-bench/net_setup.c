/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --net mode's setup, shared by its two tests: the collective rings (mode_net.c) and the
 * rank-pair tests (net_p2p.c, --p2p); both depend on this file and never on each other. Each
 * MPI rank loads the plugin as NCCL does (netapi.c), fuses the ports of one NIC with
 * makeVDevice as NCCL's topology code does and picks a device; connections are made by
 * listening, shipping the 128-byte handle over MPI and driving connect and accept alternately
 * until both return a comm. Also here: the flag checks, the host buffers, the description and
 * error text the harness asks for, and closing the plugin. Every plugin error stops the run
 * with one line naming the call, the rank, the peer and the result.
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

static struct rb_netm rb_netm_state;

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

int rb_netm_validate(const struct rb_args *a, char *err, size_t errlen)
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
	if (a->net_dev == RB_NET_DEV_PAIR && !a->p2p) {
		snprintf(err, errlen,
			 "--net-dev pair places the pairs of --p2p; a collective takes a device "
			 "index or auto");
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

static int rb_netm_load(struct rb_netm *m, struct rb_ctx *c)
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
	if (a->netns && rb_net_join_netns(a->netns, err, sizeof(err)))
		return rb_netm_fail(m, "%s", err);
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

static int rb_netm_pick_dev(struct rb_netm *m, int local_rank, int *dev)
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

int rb_netm_open(struct rb_ctx *c, struct rb_netm **out)
{
	struct rb_netm *m = &rb_netm_state;
	int rc;

	memset(m, 0, sizeof(*m));
	c->mode = m;
	*out = m;
	rc = rb_netm_load(m, c);
	if (rc)
		return rc;
	return rb_netm_pick_dev(m, c->local_rank, &m->dev);
}

int rb_netm_alloc(struct rb_netm *m, size_t bytes)
{
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
	return 0;
}

void rb_netm_describe(struct rb_ctx *c, int i, struct rb_device *d)
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

void rb_netm_versions(struct rb_ctx *c, struct rb_run_info *r)
{
	struct rb_netm *m = c->mode;

	snprintf(r->mode_info, sizeof(r->mode_info),
		 "net plugin %s from %.200s (ncclNetPlugin_v%d); %d devices, %zu-byte chunks, %d "
		 "slots",
		 m->net.name ? m->net.name : "?", m->net.path, m->net.api, m->ndevs, m->args->chunk,
		 m->nslots);
}

const char *rb_netm_last_error(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;

	return m && m->err[0] ? m->err : NULL;
}

void rb_netm_close(struct rb_ctx *c)
{
	struct rb_netm *m = c->mode;

	if (!m)
		return;
	if (m->net.table)
		rb_net_close(&m->net);
	free(m->send);
	free(m->recv);
	free(m->slots);
	m->send = m->recv = m->slots = NULL;
	m->scomm = m->rcomm = NULL;
	c->mode = NULL;
}
