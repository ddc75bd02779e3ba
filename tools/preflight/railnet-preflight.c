// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-preflight: every rail of every pair of ranks proven before the job (pf.h has the
 * design). Started by mpirun, one rank per pod. Each rank is a supervisor (MPI, the schedule,
 * the report) and a worker process forked before MPI_Init that loads the plugin as NCCL does
 * (rb_net.h, shared with railnet-bench) with one device per port and drives it through the
 * net API, one bounded step at a time: a worker that crashes or hangs is named in the report
 * while the run goes on.
 *
 *   mpirun -np N railnet-preflight [--plugin PATH] [--netns NAME|PATH] [--json]
 *       [--heatmap FILE.png] [--timeout S] [--burst-mb N] [--burst-ms MS]
 *
 * Exit status (every rank the same): 0 all good, 1 problems, 2 usage, 3 could not run.
 */
#include "pf.h"
#include "rb_net.h"
#include "railnet/config.h"
#include "railnet/device.h"
#include "railnet/gid.h"
#include "railnet/log.h"
#include "railnet/verbs.h"
#include "railnet/version.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PF_DEFAULT_PLUGIN
#define PF_DEFAULT_PLUGIN "libnccl-net-railnet.so"
#endif

#define PF_TAG 7

struct pf_opts {
	const char *plugin, *netns, *heatmap;
	bool json;
	double timeout_s;
	long burst_mb, burst_ms;
};

/* One rail of the pair under test: the two comms and their buffers. */
struct pf_link {
	void *scomm, *rcomm, *smh, *rmh;
	char *sbuf, *rbuf; /* sbuf PF_BURST_MSG; rbuf PF_BURST_DEPTH x PF_BURST_MSG */
	int status;	   /* enum pf_status of what we received; PF_OK until something fails */
	char why[PF_WHY_LEN];
	bool sent_end, got_end;
	long nsent, sdone, nrecv_posted, nrecvd;
	void *sreq[PF_BURST_DEPTH], *rreq[PF_BURST_DEPTH];
	double t_start, t_last; /* the receiving half's start (a world barrier), its last message */
	long ndata;		/* full-size messages received */
	double best_gbps;	/* the better of the burst passes received (pf.h) */
	int bursts;		/* the receiving burst passes run */
	double lat_us;
	bool small_ok; /* the first latency pass went through: 8-byte messages cross */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The pause of a wait loop whose last pass moved nothing: a yield for the first PF_SPIN_S of
 * the wait, then a sleep that doubles from PF_NAP_MIN_US to PF_NAP_MAX_US. A rank shares its
 * node's CPUs with the NIC's progress (softverbs' NIC threads, one per device and process;
 * the kernel's packet processing) and with the node's other pods: a wait that spins, or
 * wakes every few microseconds, takes the CPU its own transfer needs (16 ranks x 16 rails on
 * 2 CPUs: TCP handshakes of the emulated NICs waited seconds for their turn). A NIC's round
 * trip of a few microseconds ends inside the spin, so the latency measured is not the
 * sleep's. idle is 0 at the start of a wait and after each pass that moved something.
 */
#define PF_SPIN_S 200e-6
#define PF_NAP_MIN_US 50
#define PF_NAP_MAX_US 1000

static void pf_pause(double *idle)
{
	double now = now_s(), waited;
	long nap = PF_NAP_MIN_US;

	if (*idle == 0)
		*idle = now;
	waited = now - *idle;
	if (waited < PF_SPIN_S) {
		sched_yield();
		return;
	}
	/* about a tenth of the time waited so far, within the bounds */
	while (nap < PF_NAP_MAX_US && nap * 1e-6 < waited / 10)
		nap *= 2;
	usleep((useconds_t)(nap < PF_NAP_MAX_US ? nap : PF_NAP_MAX_US));
}

static int usage(FILE *o)
{
	fprintf(o,
		"usage: mpirun -np N railnet-preflight [options]\n"
		"Tests every rail (port) between every pair of ranks, one pair per rank per "
		"round,\n"
		"all rails of a pair at once: connection, a data pattern, latency and bandwidth.\n"
		"  --plugin PATH        the net plugin (default: libnccl-net-railnet.so next to "
		"this program,\n"
		"                       else %s, else the loader's search path)\n"
		"  --netns NAME|PATH    join this network namespace after MPI_Init\n"
		"  --json               one JSON document instead of the text report\n"
		"  --heatmap FILE.png   also draw the per-rail GB/s matrices (needs gnuplot)\n"
		"  --timeout S          the bound of each 4 rails' connections, each rail's round "
		"trips\n"
		"                       and the pattern, seconds (default 10; 1-600)\n"
		"  --burst-mb N         MiB each way per rail in the bandwidth burst (default 16; "
		"1-4096)\n"
		"  --burst-ms MS        the burst stops sending after this long (default 500; "
		"10-60000); it is bounded by 4x that\n"
		"  --version, --help\n"
		"Exit status: 0 all good, 1 problems (each named with its likely cause), 2 usage,\n"
		"3 could not run.\n",
		PF_DEFAULT_PLUGIN);
	return 2;
}

/* 0, 1 (--help/--version printed), or 2 with the reason in err. */
static int parse(int argc, char **argv, struct pf_opts *o, char *err, size_t len)
{
	static const struct option lo[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "netns", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "heatmap", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "burst-mb", required_argument, NULL, 'b' },
		{ "burst-ms", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct pf_opts){ .timeout_s = 10, .burst_mb = 16, .burst_ms = 500 };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end = NULL;
		double d;
		long v;

		switch (c) {
		case 'p':
		case 'n':
		case 'H':
			if (!*optarg) {
				snprintf(err, len, "%s: empty value", argv[optind - 1]);
				return 2;
			}
			*(c == 'p' ? &o->plugin : c == 'n' ? &o->netns : &o->heatmap) = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 't':
			errno = 0;
			d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d >= 1 && d <= 600)) {
				snprintf(err, len, "--timeout %s: want seconds from 1 to 600",
					 optarg);
				return 2;
			}
			o->timeout_s = d;
			break;
		case 'b':
		case 'm':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end ||
			    (c == 'b' ? (v < 1 || v > 4096) : (v < 10 || v > 60000))) {
				snprintf(err, len, "%s %s: want %s",
					 c == 'b' ? "--burst-mb" : "--burst-ms", optarg,
					 c == 'b' ? "MiB from 1 to 4096"
						  : "milliseconds from 10 to 60000");
				return 2;
			}
			*(c == 'b' ? &o->burst_mb : &o->burst_ms) = v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("railnet-preflight %s (git %s, built %s)\n", RN_VERSION_STRING,
			       RN_GIT_DESCRIBE, RN_BUILD_DATE);
			return 1;
		default:
			snprintf(err, len, "unknown option '%s' (see --help)", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		snprintf(err, len, "unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	return 0;
}

static void quiet_logger(int level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...)
{
	/* the plugin's own init already said what discovery found wrong */
}

/* The subnet of a chosen GID: its address masked by its netmask ("" when unknown). */
static void gid_net(const struct rn_gid_choice *g, char *buf, size_t len)
{
	const uint8_t *a;
	int fam = rn_gid_family(g->raw, &a), bits = fam == AF_INET ? 32 : 128;
	uint8_t m[16] = { 0 };
	char str[INET6_ADDRSTRLEN];

	buf[0] = '\0';
	if (g->prefix < 0 || g->prefix > bits)
		return;
	memcpy(m, a, (size_t)bits / 8);
	for (int i = g->prefix; i < bits; i++)
		m[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
	if (inet_ntop(fam, m, str, sizeof(str)))
		snprintf(buf, len, "%s/%d", str, g->prefix);
}

/*
 * What railnet's discovery chose for each rail (the same code as the plugin's, railnet_core):
 * the port's active MTU, its GID's address and subnet. Best effort: a rail left unknown is
 * judged without them.
 */
static void rail_facts(struct pf_rank *me)
{
	struct rn_discovery *d = NULL;

	rn_log_set_logger(quiet_logger);
	if (rn_config_acquire())
		return;
	if (!rn_verbs_load(rn_config()->ibverbs_lib)) {
		if (!rn_discover(rn_config(), NULL, 0, &d)) {
			for (int r = 0; r < me->nrails; r++)
				for (int i = 0; i < d->nports; i++) {
					const struct rn_port *p = &d->ports[i];
					struct pf_rail *ra = &me->rail[r];

					/* the plugin numbers ports as NCCL does (nccl_port) */
					if (strcmp(p->name, ra->name) || p->nccl_port != ra->port)
						continue;
					ra->mtu = p->mtu;
					rn_gid_addr_str(p->gid.raw, ra->gid, sizeof(ra->gid));
					gid_net(&p->gid, ra->net, sizeof(ra->net));
					break;
				}
			rn_discovery_destroy(d);
		}
		rn_verbs_unload();
	}
	rn_config_release();
}

/*
 * The plugin when --plugin is not given: the one next to this program (the image's
 * /opt/railnet, as railnet-install copies both there), else the build tree's, else the
 * loader's search path.
 */
static const char *default_plugin(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + sizeof("/libnccl-net-railnet.so") <= len) {
			strcpy(slash, "/libnccl-net-railnet.so");
			if (!access(buf, R_OK))
				return buf;
		}
	}
	if (!access(PF_DEFAULT_PLUGIN, R_OK))
		return PF_DEFAULT_PLUGIN;
	return "libnccl-net-railnet.so";
}

/* This rank's rails: the plugin's devices, one per port. */
static void discover(struct rb_net *net, const struct pf_opts *o, struct pf_rank *me)
{
	char err[512], path[PATH_MAX];
	const char *plugin = o->plugin ? o->plugin : default_plugin(path, sizeof(path));
	int ndev = 0;

	gethostname(me->host, sizeof(me->host) - 1);
	/* one device per port: a rail is a port (an explicit other value is overridden) */
	setenv("RAILNET_MERGE", "none", 1);

	if (rb_net_open(net, plugin, 0, err, sizeof(err))) {
		me->err = 1;
		snprintf(me->why, sizeof(me->why), "the plugin did not load: %.60s", err);
		return;
	}
	if (rb_net_init(net, 2 /* NCCL_LOG_WARN */) || rb_net_devices(net, &ndev)) {
		me->err = 1;
		snprintf(me->why, sizeof(me->why), "the plugin's init failed (no libibverbs?)");
		return;
	}
	if (ndev <= 0) {
		me->err = 1;
		snprintf(me->why, sizeof(me->why),
			 "no RDMA port usable here (railnet-doctor says why)");
		return;
	}
	me->nrails = ndev < PF_MAX_RAILS ? ndev : PF_MAX_RAILS;
	for (int d = 0; d < me->nrails; d++) {
		struct rb_net_props p;

		if (rb_net_props(net, d, &p))
			continue;
		snprintf(me->rail[d].name, sizeof(me->rail[d].name), "%.63s", p.name);
		me->rail[d].speed_mbps = p.speed;
		me->rail[d].port = p.port;
	}
	rail_facts(me);
}

static void fill_pattern(char *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (char)x;
	}
}

/* The first failure of a link: "WHAT: ncclXxx", or "WHAT timed out" when rc is 0. */
static void link_fail(struct pf_link *l, int status, const char *what, int rc)
{
	if (l->status != PF_OK)
		return;
	l->status = status;
	if (rc)
		snprintf(l->why, sizeof(l->why), "%.60s: %s", what, rb_net_result(rc));
	else
		snprintf(l->why, sizeof(l->why), "%.60s timed out", what);
}

/* Waits for req (polling) until deadline; 1 done, 0 not done by then, -1 error. */
static int wait_req(struct rb_net *net, void *req, double deadline, size_t *size, int *rc)
{
	double idle = 0;
	int done = 0;

	while (!done) {
		*rc = rb_net_test(net, req, &done, size);
		if (*rc)
			return -1;
		if (!done && now_s() > deadline)
			return 0;
		if (!done)
			pf_pause(&idle);
	}
	return 1;
}

/*
 * Posts an isend (send) or an irecv of n bytes until the plugin gives a request (NULL means
 * "not now" in the net API) or the deadline passes. The plugin's error, or 0 with *req (NULL
 * when the deadline passed first).
 */
static int post_until(struct rb_net *net, bool send, void *comm, void *buf, size_t n, void *mh,
		      double deadline, void **req)
{
	double idle = 0;
	int rc = 0;

	*req = NULL;
	while (!*req && !(rc = send ? rb_net_isend(net, comm, buf, n, PF_TAG, mh, req)
				    : rb_net_irecv(net, comm, buf, n, PF_TAG, mh, req))) {
		if (*req || now_s() > deadline)
			break;
		pf_pause(&idle);
	}
	return rc;
}

/*
 * Phase 1: connect to the partner's listener and accept its connection, on every rail,
 * PF_CONNECT_BATCH rails at a time: a connect step that waits for the rest of a long loop to
 * send its HELLO outlives the listener's window for it (2 s) on a loaded node (16 rails, 16
 * ranks: each step creates QPs and registers memory).
 */
#define PF_CONNECT_BATCH 4

static void phase_connect(struct rb_net *net, struct pf_link *L, int nr, void **lcomm,
			  char (*handles)[RB_NET_HANDLE_BYTES], double timeout_s)
{
	/* each batch its own bound: a rail that never connects does not starve the next ones */
	for (int b = 0; b < nr; b += PF_CONNECT_BATCH) {
		double deadline = now_s() + timeout_s, idle = 0;

		for (int left = 1, had = -1; left > 0 && now_s() < deadline;) {
			if (left == had) /* the last pass established nothing */
				pf_pause(&idle);
			else
				idle = 0;
			had = left;
			left = 0;
			for (int r = b; r < nr && r < b + PF_CONNECT_BATCH; r++) {
				struct pf_link *l = &L[r];
				int rc;

				if (l->status != PF_OK)
					continue;
				if (!l->scomm &&
				    (rc = rb_net_connect(net, r, handles[r], &l->scomm))) {
					link_fail(l, PF_UNREACHABLE, "connect", rc);
					continue;
				}
				if (!l->rcomm && (rc = rb_net_accept(net, lcomm[r], &l->rcomm))) {
					link_fail(l, PF_UNREACHABLE, "accept", rc);
					continue;
				}
				left += !l->scomm || !l->rcomm;
			}
		}
	}
	for (int r = 0; r < nr; r++)
		if (L[r].status == PF_OK && (!L[r].scomm || !L[r].rcomm)) {
			L[r].status = PF_UNREACHABLE;
			snprintf(L[r].why, sizeof(L[r].why), "no %s within the timeout",
				 L[r].scomm ? "connection from the peer"
					    : "connection to the peer");
		}
}

static int setup_buffers(struct rb_net *net, struct pf_link *l)
{
	int rc;

	l->sbuf = aligned_alloc(4096, PF_BURST_MSG);
	l->rbuf = aligned_alloc(4096, (size_t)PF_BURST_DEPTH * PF_BURST_MSG);
	if (!l->sbuf || !l->rbuf)
		return -1;
	if ((rc = rb_net_reg_mr(net, l->scomm, l->sbuf, PF_BURST_MSG, &l->smh)) ||
	    (rc = rb_net_reg_mr(net, l->rcomm, l->rbuf, (size_t)PF_BURST_DEPTH * PF_BURST_MSG,
				&l->rmh))) {
		link_fail(l, PF_FAILED, "regMr", rc);
		return -1;
	}
	return 0;
}

/*
 * Phase 3: a pattern each way on every rail at once, checked byte for byte. After 8-byte
 * messages crossed (phase 2), a pattern that does not is a size problem: packets of the
 * path MTU lost on the way (PF_LARGE_LOST).
 */
static void phase_pattern(struct rb_net *net, struct pf_link *L, int nr, int round, int me,
			  int peer, double deadline)
{
	void *sreq[PF_MAX_RAILS] = { 0 }, *rreq[PF_MAX_RAILS] = { 0 };
	bool sent[PF_MAX_RAILS] = { 0 }, recvd[PF_MAX_RAILS] = { 0 };
	size_t got[PF_MAX_RAILS] = { 0 };
	char *want = malloc(PF_PATTERN_BYTES);
	int left = 1, moved = -1;
	double idle = 0;

	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];
		int rc;

		if (l->status != PF_OK)
			continue;
		fill_pattern(l->sbuf, PF_PATTERN_BYTES, (unsigned)(round * 131071 + me * 8191 + r));
		if ((rc = rb_net_irecv(net, l->rcomm, l->rbuf, PF_PATTERN_BYTES, PF_TAG, l->rmh,
				       &rreq[r])))
			link_fail(l, PF_FAILED, "posting the pattern's receive", rc);
	}
	while (left && now_s() < deadline) {
		int now_moved = 0;

		for (int r = 0; r < nr; r++)
			now_moved += sent[r] + recvd[r] + !!sreq[r] + !!rreq[r];
		if (now_moved == moved)
			pf_pause(&idle);
		else
			idle = 0;
		moved = now_moved;
		left = 0;
		for (int r = 0; r < nr; r++) {
			struct pf_link *l = &L[r];
			int rc = 0, done = 0;

			if (l->status != PF_OK || (sent[r] && recvd[r]))
				continue;
			left = 1;
			if (!sreq[r])
				rc = rb_net_isend(net, l->scomm, l->sbuf, PF_PATTERN_BYTES, PF_TAG,
						  l->smh, &sreq[r]);
			if (!rc && sreq[r] && !sent[r] &&
			    !(rc = rb_net_test(net, sreq[r], &done, NULL)))
				sent[r] = done;
			if (!rc && !rreq[r]) /* "not now": post it again */
				rc = rb_net_irecv(net, l->rcomm, l->rbuf, PF_PATTERN_BYTES, PF_TAG,
						  l->rmh, &rreq[r]);
			if (!rc && rreq[r] && !recvd[r] &&
			    !(rc = rb_net_test(net, rreq[r], &done, &got[r])))
				recvd[r] = done;
			if (rc) /* an error, not a loss: a lost packet only runs out the time */
				link_fail(l, PF_FAILED, "the pattern", rc);
		}
	}
	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];

		if (l->status != PF_OK)
			continue;
		if (!recvd[r] || !sent[r]) {
			/* 8-byte messages crossed just before: the size is what fails */
			l->status = l->small_ok ? PF_LARGE_LOST : PF_UNREACHABLE;
			snprintf(l->why, sizeof(l->why), "%s, but no %u KiB message %s in time",
				 l->small_ok ? "8-byte messages crossed" : "connected",
				 PF_PATTERN_BYTES >> 10, recvd[r] ? "left" : "arrived");
			continue;
		}
		if (!want) {
			link_fail(l, PF_FAILED, "out of memory checking the pattern", 0);
			continue;
		}
		fill_pattern(want, PF_PATTERN_BYTES, (unsigned)(round * 131071 + peer * 8191 + r));
		if (got[r] != PF_PATTERN_BYTES || memcmp(want, l->rbuf, PF_PATTERN_BYTES)) {
			l->status = PF_CORRUPT;
			snprintf(l->why, sizeof(l->why), "%zu bytes arrived, %s", got[r],
				 got[r] == PF_PATTERN_BYTES ? "with wrong bytes"
							    : "not the pattern's size");
		}
	}
	free(want);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Phase 2 (and again after the bursts): PF_PINGS round trips of 8 bytes, the lower rank
 * first; half the lower quartile of the round trips (a busy CPU delays single ones; a longer
 * path delays them all). A rail whose connection was made but where not one message crossed
 * by the deadline is unreachable: RoCE connects QPs without a packet, so a GID the peer
 * cannot route to shows only here.
 */
static void phase_latency(struct rb_net *net, struct pf_link *l, bool lower, double deadline)
{
	double rtt[PF_PINGS];
	int rc = 0, pings = 0;

	if (l->status != PF_OK)
		return;
	for (int i = 0; i < PF_PINGS; i++) {
		void *sreq = NULL, *rreq = NULL;
		double t0 = now_s();
		int w = 1;

		if ((rc = post_until(net, false, l->rcomm, l->rbuf, 8, l->rmh, deadline, &rreq)) ||
		    !rreq)
			break;
		if (!lower && (w = wait_req(net, rreq, deadline, NULL, &rc)) <= 0)
			break;
		if ((rc = post_until(net, true, l->scomm, l->sbuf, 8, l->smh, deadline, &sreq)) ||
		    !sreq || (w = wait_req(net, sreq, deadline, NULL, &rc)) <= 0)
			break;
		if (lower && (w = wait_req(net, rreq, deadline, NULL, &rc)) <= 0)
			break;
		rtt[i] = now_s() - t0;
		pings++;
		if (i == PF_PINGS - 1) {
			qsort(rtt, PF_PINGS, sizeof(double), cmp_double);
			l->lat_us = rtt[PF_PINGS / 4] / 2 * 1e6; /* the lower quartile */
			l->small_ok = true;
			return;
		}
	}
	if (!l->small_ok && !rc && !pings) {
		l->status = PF_UNREACHABLE;
		snprintf(l->why, sizeof(l->why),
			 "connected, but no 8-byte message crossed within the timeout");
		return;
	}
	link_fail(l, PF_FAILED, "the latency ping-pong", rc);
}

static double link_gbps(const struct pf_link *l)
{
	/* the full-size messages received over the time from the half's start (a barrier) to
	 * the last one: completions polled in one pass arrive "at once", so the span between
	 * messages alone would overstate a short burst */
	if (l->ndata > 0 && l->t_last > l->t_start)
		return (double)l->ndata * PF_BURST_MSG / (l->t_last - l->t_start) / 1e9;
	return 0;
}

/*
 * The burst's completions on one link, without waiting: receives in order (the short message
 * ends the burst), then sends. 0 or the plugin's error.
 */
static int burst_reap(struct rb_net *net, struct pf_link *l, bool sending, bool receiving)
{
	int rc = 0, done;
	size_t got;

	while (receiving && !l->got_end && l->nrecvd < l->nrecv_posted) {
		int k = (int)(l->nrecvd % PF_BURST_DEPTH);

		if ((rc = rb_net_test(net, l->rreq[k], &done, &got)) || !done)
			return rc;
		l->nrecvd++;
		if (got != PF_BURST_MSG) {
			l->got_end = true; /* the short message ends the burst */
		} else {
			l->ndata++;
			l->t_last = now_s();
		}
	}
	while (sending && l->sdone < l->nsent) {
		int k = (int)(l->sdone % PF_BURST_DEPTH);

		if ((rc = rb_net_test(net, l->sreq[k], &done, NULL)) || !done)
			return rc;
		l->sdone++;
	}
	return 0;
}

/*
 * Phase 4, one direction of every rail of the pair at once (pf.h): the lower rank sends
 * first, then the higher, each half after a world barrier, so that every pair measures the
 * same half at the same time and a direction is not charged for the other (ranks of a node
 * share its CPUs and, in softverbs, a port's rate model).
 */
static void phase_burst(struct rb_net *net, struct pf_link *L, int nr, const struct pf_opts *o,
			bool sending, bool receiving, double start, double *gbps)
{
	long want = o->burst_mb * ((1L << 20) / PF_BURST_MSG);
	double stop_sending = start + (double)o->burst_ms / 1000,
	       deadline = start + 4.0 * (double)o->burst_ms / 1000;
	int busy = 1;
	long moved = -1;
	double idle = 0;

	/* a pass starts from nothing: the previous one's requests all completed (drained) */
	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];

		if (receiving) {
			l->got_end = false;
			l->nrecv_posted = l->nrecvd = l->ndata = 0;
			l->t_start = start;
			l->t_last = 0;
		}
		if (sending) {
			l->sent_end = false;
			l->nsent = l->sdone = 0;
		}
	}
	while (busy && now_s() < deadline) {
		long now_moved = 0;

		for (int r = 0; r < nr; r++)
			now_moved += L[r].nsent + L[r].sdone + L[r].nrecv_posted + L[r].nrecvd;
		if (now_moved == moved)
			pf_pause(&idle);
		else
			idle = 0;
		moved = now_moved;
		busy = 0;
		for (int r = 0; r < nr; r++) {
			struct pf_link *l = &L[r];
			int rc = 0;

			if (l->status != PF_OK ||
			    ((!receiving || l->got_end) &&
			     (!sending || (l->sent_end && l->sdone == l->nsent))))
				continue;
			busy = 1;
			/* receives: PF_BURST_DEPTH posted, in order */
			while (receiving && !l->got_end &&
			       l->nrecv_posted - l->nrecvd < PF_BURST_DEPTH) {
				int k = (int)(l->nrecv_posted % PF_BURST_DEPTH);

				if ((rc = rb_net_irecv(net, l->rcomm,
						       l->rbuf + (size_t)k * PF_BURST_MSG,
						       PF_BURST_MSG, PF_TAG, l->rmh, &l->rreq[k])))
					break;
				if (!l->rreq[k])
					break;
				l->nrecv_posted++;
			}
			if (!rc)
				rc = burst_reap(net, l, sending, receiving);
			/* sends: PF_BURST_DEPTH in flight, then the 8-byte end */
			while (sending && !rc && !l->sent_end &&
			       l->nsent - l->sdone < PF_BURST_DEPTH) {
				bool end = l->nsent >= want || now_s() > stop_sending;
				int k = (int)(l->nsent % PF_BURST_DEPTH);

				if ((rc = rb_net_isend(net, l->scomm, l->sbuf,
						       end ? 8 : PF_BURST_MSG, PF_TAG, l->smh,
						       &l->sreq[k])))
					break;
				if (!l->sreq[k])
					break;
				l->nsent++;
				l->sent_end = end;
			}
			if (rc)
				link_fail(l, PF_FAILED, "the bandwidth burst", rc);
		}
	}
	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];
		int rc;

		/* what completed since the last sweep still counts */
		if (l->status == PF_OK && (rc = burst_reap(net, l, sending, receiving)))
			link_fail(l, PF_FAILED, "the bandwidth burst", rc);
		if (receiving && l->status == PF_OK && !l->got_end) {
			l->status = PF_FAILED;
			snprintf(l->why, sizeof(l->why),
				 "the burst did not end within %ld ms (%ld MiB arrived)",
				 4 * o->burst_ms, l->nrecvd);
		}
		/* a burst the sender could not end within the bound: the receiver took no more
		 * messages, or sends are still in flight (their request slots, which a later
		 * pass would reuse, are not free): the link is not trusted further */
		if (sending && l->status == PF_OK && (!l->sent_end || l->sdone < l->nsent)) {
			l->status = PF_FAILED;
			if (l->sdone < l->nsent)
				snprintf(l->why, sizeof(l->why),
					 "%ld of the burst's %ld sends were still in flight after "
					 "%ld ms",
					 l->nsent - l->sdone, l->nsent, 4 * o->burst_ms);
			else
				snprintf(l->why, sizeof(l->why),
					 "the burst could not be ended within %ld ms: the receiver "
					 "took %ld message(s)",
					 4 * o->burst_ms, l->nsent);
		}
		if (receiving && l->status == PF_OK) {
			l->bursts++;
			gbps[r] = link_gbps(l);
			if (gbps[r] > l->best_gbps)
				l->best_gbps = gbps[r];
		}
	}
}

/*
 * After a burst half: the receiver still has receives posted beyond the end message, which
 * would take the next messages of the pair (a later ping). The pair agrees (through the
 * supervisors, over MPI) on how many per rail: burst_left is the receiver's count, and in
 * burst_drain the sender fills them with 8-byte messages and the receiver completes them.
 */
static void burst_left(const struct pf_link *L, int nr, bool sending, long *left)
{
	for (int r = 0; r < nr && !sending; r++)
		if (L[r].status == PF_OK)
			left[r] = L[r].nrecv_posted - L[r].nrecvd;
}

static void burst_drain(struct rb_net *net, struct pf_link *L, int nr, bool sending,
			const long *left, const long *peer_left, double deadline)
{
	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];
		int rc = 0;

		if (l->status != PF_OK)
			continue;
		for (long i = 0; sending && i < peer_left[r]; i++) {
			void *req = NULL;

			if ((rc = post_until(net, true, l->scomm, l->sbuf, 8, l->smh, deadline,
					     &req)) ||
			    !req || wait_req(net, req, deadline, NULL, &rc) <= 0) {
				link_fail(l, PF_FAILED, "draining the burst", rc);
				break;
			}
		}
		for (long i = 0; !sending && i < left[r]; i++) {
			int k = (int)(l->nrecvd % PF_BURST_DEPTH);

			if (wait_req(net, l->rreq[k], deadline, NULL, &rc) <= 0) {
				link_fail(l, PF_FAILED, "draining the burst", rc);
				break;
			}
			l->nrecvd++;
		}
	}
}

static void close_links(struct rb_net *net, struct pf_link *L, int nr)
{
	for (int r = 0; r < nr; r++) {
		struct pf_link *l = &L[r];

		if (l->smh)
			rb_net_dereg_mr(net, l->scomm, l->smh);
		if (l->rmh)
			rb_net_dereg_mr(net, l->rcomm, l->rmh);
		if (l->scomm)
			rb_net_close_send(net, l->scomm);
		if (l->rcomm)
			rb_net_close_recv(net, l->rcomm);
		free(l->sbuf);
		free(l->rbuf);
	}
}

/* The worker's pair in a round: its links. */
struct pf_pair {
	struct pf_link *L;
	int nr, peer;
};

/* This rank's rails that are still OK, as a mask for the partner (ok[rail] 1 or 0). */
static void pair_mask(const struct pf_pair *p, long *ok)
{
	for (int r = 0; r < PF_MAX_RAILS; r++)
		ok[r] = p && r < p->nr && p->L[r].status == PF_OK;
}

/*
 * A rail that the partner's side lost (peer_ok[rail] 0) while this side's is OK: nothing
 * more crosses it, and this rank's phases skip it, so that both ranks walk the same rails
 * in the same order and their per-rail bounds stay aligned.
 */
static void pair_align(struct pf_pair *p, const long *peer_ok, int why_status, const char *why)
{
	for (int r = 0; r < p->nr; r++)
		if (p->L[r].status == PF_OK && !peer_ok[r]) {
			p->L[r].status = why_status;
			snprintf(p->L[r].why, sizeof(p->L[r].why), "%s", why);
		}
}

/* Why a rail that the partner's side lost in a burst or its drain is skipped on this side */
#define PF_WHY_PEER_LOST "the peer's end of this rail failed in the bandwidth burst"
#define PF_WHY_PEER_LOST_PROBE \
	"the peer's end of this rail failed in the round trips or the pattern"

/* Phase 1 with the partner: the connections and their buffers. */
static struct pf_pair *pair_connect(struct rb_net *net, const struct pf_opts *o, int peer, int nr,
				    void **lcomm, char (*handles)[RB_NET_HANDLE_BYTES])
{
	struct pf_pair *p = calloc(1, sizeof(*p));

	if (!p || !(p->L = calloc((size_t)nr + 1, sizeof(*p->L)))) {
		free(p);
		return NULL;
	}
	p->nr = nr;
	p->peer = peer;
	for (int r = 0; r < nr; r++) {
		p->L[r].status = lcomm[r] ? PF_OK : PF_FAILED;
		if (!lcomm[r])
			snprintf(p->L[r].why, sizeof(p->L[r].why), "listen failed on this rank");
	}
	phase_connect(net, p->L, nr, lcomm, handles, o->timeout_s);
	for (int r = 0; r < nr; r++)
		if (p->L[r].status == PF_OK && setup_buffers(net, &p->L[r]) &&
		    p->L[r].status == PF_OK)
			p->L[r].status = PF_FAILED;
	return p;
}

/*
 * Phases 2-3 on the rails both ends connected (peer_ok, the partner's mask); lat[rail] what
 * this rank timed (the lower rank's counts).
 */
static void pair_probe(struct rb_net *net, const struct pf_opts *o, struct pf_pair *p, int round,
		       int me, const long *peer_ok, double *lat)
{
	pair_align(p, peer_ok, PF_UNREACHABLE, "the peer's end of this rail did not connect");
	for (int r = 0; r < p->nr; r++) { /* each rail its own bound */
		phase_latency(net, &p->L[r], me < p->peer, now_s() + o->timeout_s);
		lat[r] = p->L[r].lat_us;
	}
	phase_pattern(net, p->L, p->nr, round, me, p->peer, now_s() + o->timeout_s);
}

/*
 * The round trips timed a second time, after the bursts; again[rail] the smaller of the two
 * passes: a rank delayed by its node's other work (pods sharing CPUs) is rarely delayed in
 * both passes, while a slow path is slow in both.
 */
static void pair_again(struct rb_net *net, const struct pf_opts *o, struct pf_pair *p, int me,
		       const long *peer_ok, double *again)
{
	for (int r = 0; r < p->nr; r++) {
		double first = p->L[r].lat_us;

		/* only the rails both ends still hold; the others keep the first pass */
		if (p->L[r].status == PF_OK && peer_ok[r])
			phase_latency(net, &p->L[r], me < p->peer, now_s() + o->timeout_s);
		again[r] = p->L[r].lat_us > 0 && p->L[r].lat_us < first ? p->L[r].lat_us : first;
	}
}

/* The cells of what this rank received from its partner (col[rail], but the latency), and
 * the links closed. */
static void pair_end(struct rb_net *net, struct pf_pair *p, struct pf_cell *col)
{
	for (int r = 0; r < p->nr; r++) {
		struct pf_cell *c = &col[r];

		c->status = p->L[r].status;
		c->gbps = p->L[r].status == PF_OK ? (float)p->L[r].best_gbps : 0;
		c->bursts = p->L[r].bursts;
		snprintf(c->why, sizeof(c->why), "%s", p->L[r].why);
	}
	close_links(net, p->L, p->nr);
	free(p->L);
	free(p);
}

/* ---- the worker -------------------------------------------------------------------------
 *
 * Everything that touches the plugin runs in a worker process forked before MPI_Init; the
 * MPI rank (the supervisor) sends it one command per step and waits for the answer within
 * the step's bound. A worker that dies (a crash in the RDMA stack, the OOM killer) or
 * outlives its bound (a hang: it is killed) leaves its supervisor alive: it goes on with the
 * collectives of every later round, so the other ranks finish, and the report names the
 * rank, the round and how its worker ended; its pairs from then on are PF_PEER_DIED.
 */
enum pf_cmd {
	PF_CMD_DISCOVER = 1, /* -> rank */
	PF_CMD_LISTEN,	     /* nr -> handles */
	PF_CMD_CONNECT,	     /* peer, nr, handles -> mine (the rails connected) */
	PF_CMD_PROBE,	     /* round, me, left (the peer's rails) -> v (latency, us), mine */
	PF_CMD_BURST, /* round, pass, sending, receiving, ok -> left, v (GB/s received), mine */
	PF_CMD_DRAIN, /* sending, mine, left (the peer's), ok -> mine (the rails still OK) */
	PF_CMD_AGAIN, /* left (the peer's rails) -> v (the smaller latency of two passes) */
	PF_CMD_END,   /* -> cells */
	PF_CMD_UNLISTEN,
	PF_CMD_QUIT,
};

struct pf_msg {
	int cmd, round, pass, half, me, peer, nr;
	bool sending, receiving;
	long left[PF_MAX_RAILS], mine[PF_MAX_RAILS];
	long ok[PF_MAX_RAILS]; /* the partner's rails still OK (BURST, DRAIN: skip the others) */
	double v[PF_MAX_RAILS];
	char handles[PF_MAX_RAILS][RB_NET_HANDLE_BYTES];
	struct pf_rank rank;
	struct pf_cell cells[PF_MAX_RAILS];
};

/*
 * RN_PREFLIGHT_TEST_DIE=ROUND[:hang]: the worker kills itself with SIGKILL (or hangs)
 * when the first burst of that round (1-based) starts. The test of a rank lost mid-check.
 */
static void test_die(int round)
{
	const char *e = getenv("RN_PREFLIGHT_TEST_DIE");
	char *end = NULL;
	long r;

	if (!e || !*e)
		return;
	r = strtol(e, &end, 10);
	if (r != round + 1 || (*end && strcmp(end, ":hang")))
		return;
	if (*end)
		for (;;)
			pause();
	raise(SIGKILL);
}

/*
 * A test hook NAME=ROUND:N read for round (0-based; ROUND is 1-based): N, or -1 when the
 * variable is unset, names another round, or N is outside [lo, hi].
 */
static long test_hook(const char *name, int round, long lo, long hi)
{
	const char *e = getenv(name);
	char *end = NULL;
	long r, v;

	if (!e || !*e)
		return -1;
	r = strtol(e, &end, 10);
	if (r != round + 1 || *end != ':')
		return -1;
	v = strtol(end + 1, &end, 10);
	return *end || v < lo || v > hi ? -1 : v;
}

/*
 * RN_PREFLIGHT_TEST_STALL=ROUND:MS: the worker starts receiving in the first burst pass of
 * that round (1-based) MS milliseconds late, as a rank the node's other work held up once.
 * The test of the second burst pass (pf.h).
 */
static void test_stall(int round)
{
	long ms = test_hook("RN_PREFLIGHT_TEST_STALL", round, 1, 60000);

	if (ms > 0)
		nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 },
			  NULL);
}

/*
 * RN_PREFLIGHT_TEST_LOSE=ROUND:RAIL: after receiving in the first burst pass of that round
 * (1-based), the worker counts that rail (0-based) as failed, as a burst that did not end.
 * The test of the pair's rails kept aligned between burst halves (the partner then skips the
 * rail instead of waiting out its bound).
 */
static void test_lose(struct pf_pair *p, int round)
{
	long rail = test_hook("RN_PREFLIGHT_TEST_LOSE", round, 0, p->nr - 1);

	if (rail < 0 || p->L[rail].status != PF_OK)
		return;
	p->L[rail].status = PF_FAILED;
	snprintf(p->L[rail].why, sizeof(p->L[rail].why),
		 "the burst was counted as failed (RN_PREFLIGHT_TEST_LOSE)");
}

static void worker_main(int fd, const struct pf_opts *o, pid_t parent)
{
	struct rb_net net = { 0 };
	void *lcomm[PF_MAX_RAILS] = { 0 };
	struct pf_pair *p = NULL;
	struct pf_msg *m = malloc(sizeof(*m));
	int nlisten = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* the supervisor's end is ours */
	if (getppid() != parent || !m)	  /* it ended before the line above */
		_exit(0);
	while (recv(fd, m, sizeof(*m), 0) == (ssize_t)sizeof(*m)) {
		char err[512];

		switch (m->cmd) {
		case PF_CMD_DISCOVER:
			memset(&m->rank, 0, sizeof(m->rank));
			if (o->netns && rb_net_join_netns(o->netns, err, sizeof(err))) {
				m->rank.err = 1;
				snprintf(m->rank.why, sizeof(m->rank.why), "%.90s", err);
			} else {
				discover(&net, o, &m->rank);
			}
			break;
		case PF_CMD_LISTEN:
			memset(m->handles, 0, sizeof(m->handles));
			nlisten = m->nr;
			/* fresh listeners each round: a late connection of an earlier round's
			 * partner cannot be taken for this one's */
			for (int r = 0; r < nlisten; r++)
				if (rb_net_listen(&net, r, m->handles[r], &lcomm[r]))
					lcomm[r] = NULL;
			break;
		case PF_CMD_CONNECT:
			p = pair_connect(&net, o, m->peer, m->nr, lcomm, m->handles);
			pair_mask(p, m->mine);
			break;
		case PF_CMD_PROBE:
			memset(m->v, 0, sizeof(m->v));
			if (p)
				pair_probe(&net, o, p, m->round, m->me, m->left, m->v);
			pair_mask(p, m->mine);
			break;
		case PF_CMD_BURST: {
			double start = now_s(); /* the half's start: the barrier just passed */

			test_die(m->round);
			if (m->receiving && m->pass == 0)
				test_stall(m->round);
			memset(m->left, 0, sizeof(m->left));
			memset(m->v, 0, sizeof(m->v));
			if (p) {
				/* the round's first burst knows the partner's rails as the round
				 * trips and the pattern left them */
				pair_align(p, m->ok, PF_FAILED,
					   m->pass == 0 && m->half == 0 ? PF_WHY_PEER_LOST_PROBE
									: PF_WHY_PEER_LOST);
				phase_burst(&net, p->L, p->nr, o, m->sending, m->receiving, start,
					    m->v);
				if (m->receiving && m->pass == 0)
					test_lose(p, m->round);
				burst_left(p->L, p->nr, m->sending, m->left);
			}
			pair_mask(p, m->mine);
			break;
		}
		case PF_CMD_DRAIN:
			if (p) {
				pair_align(p, m->ok, PF_FAILED, PF_WHY_PEER_LOST);
				burst_drain(&net, p->L, p->nr, m->sending, m->mine, m->left,
					    now_s() + o->timeout_s);
			}
			pair_mask(p, m->mine);
			break;
		case PF_CMD_AGAIN:
			memset(m->v, 0, sizeof(m->v));
			if (p)
				pair_again(&net, o, p, m->me, m->left, m->v);
			break;
		case PF_CMD_END:
			memset(m->cells, 0, sizeof(m->cells));
			for (int r = 0; r < m->nr; r++) {
				m->cells[r].status = PF_FAILED;
				snprintf(m->cells[r].why, sizeof(m->cells[r].why),
					 "out of memory for the pair");
			}
			if (p)
				pair_end(&net, p, m->cells);
			p = NULL;
			break;
		case PF_CMD_UNLISTEN:
			for (int r = 0; r < nlisten; r++)
				if (lcomm[r])
					rb_net_close_listen(&net, lcomm[r]);
			memset(lcomm, 0, sizeof(lcomm));
			nlisten = 0;
			break;
		default:
			if (net.inited || net.lib)
				rb_net_close(&net);
			_exit(0);
		}
		if (send(fd, m, sizeof(*m), MSG_NOSIGNAL) != (ssize_t)sizeof(*m))
			break;
	}
	_exit(0);
}

/* The supervisor's side: the worker's pid and socket, and how it ended (if it did). */
struct pf_worker {
	pid_t pid;
	int fd;
	bool alive;
	int died;	      /* the round (1-based) it ended in; 0 while alive */
	char why[PF_WHY_LEN]; /* "was killed by signal 9 during the bandwidth burst" */
};

static const char *cmd_name(int cmd)
{
	switch (cmd) {
	case PF_CMD_DISCOVER:
		return "discovery";
	case PF_CMD_LISTEN:
	case PF_CMD_UNLISTEN:
		return "listening";
	case PF_CMD_CONNECT:
		return "the connections";
	case PF_CMD_PROBE:
		return "the round trips and the pattern";
	case PF_CMD_BURST:
	case PF_CMD_DRAIN:
		return "the bandwidth burst";
	case PF_CMD_AGAIN:
		return "the second round trips";
	case PF_CMD_END:
		return "closing the pair";
	default:
		return "a step";
	}
}

/*
 * One step: m to the worker, its answer back into m within bound_s. 0, or -1 when the worker
 * is gone (now or before): then m is left as sent and w says how it ended.
 */
static int rpc(struct pf_worker *w, struct pf_msg *m, double bound_s, int round)
{
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	int cmd = m->cmd, st = 0, r = 1;
	double deadline = now_s() + bound_s;
	ssize_t n = -1;

	if (!w->alive)
		return -1;
	if (send(w->fd, m, sizeof(*m), MSG_NOSIGNAL) == (ssize_t)sizeof(*m)) {
		do {
			double left = deadline - now_s();

			r = poll(&pfd, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
		} while (r < 0 && errno == EINTR);
		if (r > 0)
			n = recv(w->fd, m, sizeof(*m), 0);
	}
	if (n == (ssize_t)sizeof(*m))
		return 0;
	w->alive = false;
	w->died = round + 1;
	if (r == 0) { /* sent, and no answer within the bound: a hang */
		kill(w->pid, SIGKILL);
		waitpid(w->pid, &st, 0);
		snprintf(w->why, sizeof(w->why), "hung in %s for %.0f s and was killed",
			 cmd_name(cmd), bound_s);
	} else {
		/* EOF: it ended; any other failure of the socket: it is ended here */
		kill(w->pid, SIGKILL);
		waitpid(w->pid, &st, 0);
		if (WIFSIGNALED(st))
			snprintf(w->why, sizeof(w->why), "was killed by signal %d during %s",
				 WTERMSIG(st), cmd_name(cmd));
		else
			snprintf(w->why, sizeof(w->why), "exited (status %d) during %s",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, cmd_name(cmd));
	}
	close(w->fd);
	w->fd = -1;
	return -1;
}

/* What a pair's supervisors swap after each step: whether the worker lives, and numbers. */
struct pf_xchg {
	int alive;
	long left[PF_MAX_RAILS];
	long ok[PF_MAX_RAILS]; /* the sender's rails still OK after the step (pair_mask) */
	double v[PF_MAX_RAILS];
};

/*
 * The supervisor's MPI waits: non-blocking operations tested with pf_pause between tests, so
 * that a supervisor waiting for the others (most of a run) leaves the CPUs to the workers and
 * the NIC instead of spinning in MPI's progress loop.
 */
static void mpi_wait(MPI_Request *rq, int n)
{
	double idle = 0;
	int done = 0;

	for (;;) {
		if (MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
			MPI_Abort(MPI_COMM_WORLD, 3);
		if (done)
			return;
		pf_pause(&idle);
	}
}

static void pf_barrier(void)
{
	MPI_Request rq;

	MPI_Ibarrier(MPI_COMM_WORLD, &rq);
	mpi_wait(&rq, 1);
}

static void pf_allgather(const void *mine, void *all, size_t len)
{
	MPI_Request rq;

	MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD, &rq);
	mpi_wait(&rq, 1);
}

/*
 * Before a round's second burst pass, on every rank alike: mine (this rank's first-pass
 * GB/s per rail, -1 not measured) gathered into rxs, the round's medians into med and
 * hist's row t, the earlier rounds' reference into ref (pf.h); scratch holds max(n, rounds)
 * floats.
 */
static void burst_round(const float *mine, float *rxs, int n, float *hist, int t, float *med,
			float *ref, float *scratch)
{
	pf_allgather(mine, rxs, sizeof(float) * PF_MAX_RAILS);
	pf_rail_medians(rxs, n, med, scratch);
	pf_rail_medians(hist, t, ref, scratch);
	memcpy(hist + (size_t)t * PF_MAX_RAILS, med, sizeof(float) * PF_MAX_RAILS);
}

/*
 * The pair's exchange after a step: this rank's numbers and whether its worker lives out, the
 * partner's in. Returns live && both workers live: the pair's later steps are worth running.
 */
static bool xchg(const struct pf_worker *w, struct pf_xchg *mine, struct pf_xchg *theirs, int peer,
		 int tag, bool live)
{
	MPI_Request rq[2];

	mine->alive = w->alive;
	MPI_Irecv(theirs, sizeof(*theirs), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(mine, sizeof(*mine), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[1]);
	mpi_wait(rq, 2);
	return live && mine->alive && theirs->alive;
}

static int render_heatmap(const struct pf_run *run, const char *png)
{
	char data[] = "/tmp/railnet-preflight-XXXXXX";
	int fd = mkstemp(data), cols = 1, rows, rc;
	FILE *f, *g;

	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -1;
	pf_print_heat(f, run);
	fclose(f);
	while (cols * cols < run->nrails)
		cols++;
	rows = (run->nrails + cols - 1) / cols;
	/* its standard output is the report's: a PNG it cannot write must not land there */
	g = popen("exec gnuplot >/dev/null", "w");
	if (!g) {
		unlink(data);
		return -1;
	}
	fprintf(g, "set terminal pngcairo size %d,%d\nset output '%s'\n", 360 * cols, 340 * rows,
		png);
	fprintf(g,
		"set multiplot layout %d,%d title 'railnet-preflight: GB/s, row sends to "
		"column (white: not OK)'\n",
		rows, cols);
	/* red (slow) to green (fast); not OK cells are not drawn (white) */
	fprintf(g,
		"set palette defined (0 'red', 0.5 'yellow', 1 'forest-green')\n"
		"set cbrange [0:*]\nset xlabel 'to (rank)'\nset ylabel 'from (rank)'\n"
		"set xtics 1\nset ytics 1\nset xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n"
		"unset key\n",
		run->nranks - 1, run->nranks - 1);
	for (int r = 0; r < run->nrails; r++)
		fprintf(g,
			"set title 'rail %d %s' noenhanced\nplot '%s' index %d matrix with image\n",
			r, run->ranks[run->ref].rail[r].name, data, r);
	fprintf(g, "unset multiplot\n");
	rc = pclose(g);
	unlink(data);
	return rc ? -1 : 0;
}

/* The worker told to leave, and reaped (killed after 10 s). */
static void worker_quit(struct pf_worker *w, struct pf_msg *m)
{
	if (w->fd >= 0) {
		m->cmd = PF_CMD_QUIT;
		(void)!send(w->fd, m, sizeof(*m), MSG_NOSIGNAL);
		close(w->fd);
		w->fd = -1;
	}
	if (w->pid > 0) {
		double deadline = now_s() + 10;

		while (waitpid(w->pid, NULL, WNOHANG) == 0) {
			if (now_s() > deadline) {
				kill(w->pid, SIGKILL);
				waitpid(w->pid, NULL, 0);
				break;
			}
			usleep(10000);
		}
		w->pid = 0;
	}
}

/* A rank's listeners for a round, and whether its worker still lives. */
struct pf_rinfo {
	int alive;
	char handles[PF_MAX_RAILS][RB_NET_HANDLE_BYTES];
};

/* The cells of a pair that a dead worker ended: PF_PEER_DIED, saying whose. */
static void cells_died(struct pf_cell *c, int nr, bool mine_dead, int peer)
{
	for (int r = 0; r < nr; r++) {
		c[r].status = PF_PEER_DIED;
		c[r].gbps = 0;
		if (mine_dead)
			snprintf(c[r].why, sizeof(c[r].why), "this rank's worker died");
		else
			snprintf(c[r].why, sizeof(c[r].why), "rank %d's worker died", peer);
	}
}

int main(int argc, char **argv)
{
	struct pf_opts o;
	struct pf_rank me = { 0 }, *ranks = NULL;
	struct pf_worker wk = { .fd = -1 };
	struct pf_msg *m = calloc(1, sizeof(*m));
	int rank, n, rc, nr, all_err = 1, ref, sv[2];
	char err[512] = "";
	double t0;

	/* the worker first, before MPI_Init: it never touches MPI, and forking an MPI process
	 * (registered memory, progress threads) is not safe */
	rc = parse(argc, argv, &o, err, sizeof(err));
	if (!rc && m && !socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		pid_t self = getpid();

		wk.pid = fork();
		if (wk.pid == 0) {
			close(sv[0]);
			worker_main(sv[1], &o, self);
		}
		close(sv[1]);
		if (wk.pid > 0) {
			wk.fd = sv[0];
			wk.alive = true;
		} else {
			close(sv[0]);
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (!m)
		MPI_Abort(MPI_COMM_WORLD, 3);
	if (!rc && n < 2) {
		snprintf(err, sizeof(err), "%d rank: a preflight needs 2 or more (one per pod)", n);
		rc = 2;
	}
	/* only rank 0 draws: it decides for all (a rank leaving alone would hang the others) */
	if (!rc && o.heatmap && rank == 0 && system("command -v gnuplot >/dev/null 2>&1")) {
		snprintf(err, sizeof(err), "--heatmap needs gnuplot (apt-get install gnuplot-nox)");
		rc = 2;
	}
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc) {
		if (rc == 2 && rank == 0)
			fprintf(stderr, "railnet-preflight: %s\n", err);
		worker_quit(&wk, m);
		MPI_Finalize();
		return rc == 1 ? 0 : rc;
	}
	t0 = now_s();
	gethostname(me.host, sizeof(me.host) - 1);
	m->cmd = PF_CMD_DISCOVER;
	if (!wk.alive) {
		me.err = 1;
		snprintf(me.why, sizeof(me.why), "its worker process could not be started");
	} else if (rpc(&wk, m, 60 + o.timeout_s, -1)) {
		me.err = 1;
		snprintf(me.why, sizeof(me.why), "its worker %.80s", wk.why);
	} else {
		me = m->rank;
	}
	ranks = calloc((size_t)n, sizeof(*ranks));
	if (!ranks)
		MPI_Abort(MPI_COMM_WORLD, 3);
	pf_allgather(&me, ranks, sizeof(me));
	for (int x = 0; x < n; x++)
		all_err &= ranks[x].err != 0;
	/* the reference for rails and names: the first rank that could run */
	for (ref = 0; ref < n - 1 && ranks[ref].err; ref++)
		;
	nr = ranks[ref].nrails;
	{
		size_t nr1 = (size_t)(nr ? nr : 1), ncell = (size_t)n * nr1;
		struct pf_cell *col = calloc(ncell, sizeof(*col)), *all = NULL, *cells = NULL;
		struct pf_rinfo *infos = calloc((size_t)n, sizeof(*infos)), mine;
		/* each rank's first-pass GB/s per rail in a round, the rounds' medians, this
		 * round's and the earlier rounds' reference (pf_burst_again) */
		float *rxs = calloc((size_t)n * PF_MAX_RAILS, sizeof(*rxs)),
		      *hist = calloc((size_t)pf_rounds(n) * PF_MAX_RAILS, sizeof(*hist)),
		      *scratch = calloc((size_t)(n > pf_rounds(n) ? n : pf_rounds(n)) + 1,
					sizeof(*scratch)),
		      med[PF_MAX_RAILS], earlier[PF_MAX_RAILS];
		struct {
			int died;
			char why[PF_WHY_LEN];
		} end = { 0 }, *ends = NULL;
		int rounds = pf_rounds(n);
		/* the bounds of the worker's steps: its own bounds (pf.h) and 5 s to spare */
		double b_step = o.timeout_s + 5, b_burst = 4.0 * (double)o.burst_ms / 1000 + 5;

		if (!col || !infos || !rxs || !hist || !scratch)
			MPI_Abort(MPI_COMM_WORLD, 3);
		for (int t = 0; t < rounds; t++) {
			int peer = pf_partner(n, t, rank);
			int common = peer < 0			      ? 0
				     : me.nrails < ranks[peer].nrails ? me.nrails
								      : ranks[peer].nrails;

			if (common > nr)
				common = nr;
			if (me.err || (peer >= 0 && ranks[peer].err))
				common = 0;
			memset(&mine, 0, sizeof(mine));
			m->cmd = PF_CMD_LISTEN;
			m->nr = common;
			if (common && !rpc(&wk, m, b_step, t))
				memcpy(mine.handles, m->handles, sizeof(mine.handles));
			mine.alive = wk.alive;
			pf_allgather(&mine, infos, sizeof(mine));
			if (peer >= 0) {
				struct pf_cell *c = &col[(size_t)peer * nr1];
				/* both ranks of the pair know both flags: they decide alike */
				bool lower = rank < peer,
				     paired = common && infos[rank].alive && infos[peer].alive;
				struct pf_xchg x, y;

				/* live: both workers answer; after a pair exchange shows one gone,
				 * the other skips the pair's remaining steps (the exchanges stay) */
				bool live = paired;
				/* the rails each side still holds, as of the last exchange: each
				 * step after one runs on the rails both hold (pair_align) */
				long ok_now[PF_MAX_RAILS] = { 0 }, peer_ok[PF_MAX_RAILS] = { 0 };

				memset(&x, 0, sizeof(x));
				memset(&y, 0, sizeof(y));
				if (paired) {
					m->cmd = PF_CMD_CONNECT;
					m->peer = peer;
					m->nr = common;
					memcpy(m->handles, infos[peer].handles, sizeof(m->handles));
					memset(x.left, 0, sizeof(x.left));
					if (!rpc(&wk, m,
						 (double)((common + 3) / 4) * o.timeout_s + 5, t))
						memcpy(x.left, m->mine, sizeof(x.left));
					live = xchg(&wk, &x, &y, peer, 1, true);
					m->cmd = PF_CMD_PROBE;
					m->round = t;
					m->me = rank;
					memcpy(m->left, y.left, sizeof(m->left));
					if (live &&
					    !rpc(&wk, m, (double)(common + 1) * o.timeout_s + 5, t))
						memcpy(x.ok, m->mine, sizeof(x.ok));
					live = xchg(&wk, &x, &y, peer, 6, live);
					memcpy(ok_now, x.ok, sizeof(ok_now));
					memcpy(peer_ok, y.ok, sizeof(peer_ok));
				}
				/* the bursts: every pair's lower rank sends, then its higher; the
				 * pairs pf_burst_again picks do it a second time, the other ranks
				 * meeting the same barriers */
				bool burst = paired;
				double rx[PF_MAX_RAILS] = { 0 };

				for (int pass = 0; pass < PF_BURST_PASSES; pass++) {
					if (pass > 0) {
						float mine_rx[PF_MAX_RAILS];

						for (int r = 0; r < PF_MAX_RAILS; r++)
							mine_rx[r] = burst && live && r < common &&
										     ok_now[r]
									     ? (float)rx[r]
									     : -1;
						burst_round(mine_rx, rxs, n, hist, t, med, earlier,
							    scratch);
						burst = burst && pf_burst_again(rxs, med, earlier,
										rank, peer, common);
					}
					for (int half = 0; half < 2; half++) {
						bool sending = half == 0 ? lower : !lower;

						pf_barrier();
						if (!burst)
							continue;
						memset(x.left, 0, sizeof(x.left));
						memset(x.ok, 0, sizeof(x.ok));
						m->cmd = PF_CMD_BURST;
						m->round = t;
						m->pass = pass;
						m->half = half;
						m->sending = sending;
						m->receiving = !sending;
						memcpy(m->ok, peer_ok, sizeof(m->ok));
						if (live && !rpc(&wk, m, b_burst, t)) {
							memcpy(x.left, m->left, sizeof(x.left));
							memcpy(x.ok, m->mine, sizeof(x.ok));
							if (!sending)
								memcpy(rx, m->v, sizeof(rx));
						}
						live = xchg(&wk, &x, &y, peer, 3, live);
						/* the drain on the rails both ends kept through the
						 * burst, and the masks exchanged again after it */
						m->cmd = PF_CMD_DRAIN;
						m->sending = sending;
						memcpy(m->mine, x.left, sizeof(m->mine));
						memcpy(m->left, y.left, sizeof(m->left));
						memcpy(m->ok, y.ok, sizeof(m->ok));
						memset(x.ok, 0, sizeof(x.ok));
						if (live && !rpc(&wk, m, b_step, t))
							memcpy(x.ok, m->mine, sizeof(x.ok));
						live = xchg(&wk, &x, &y, peer, 7, live);
						memcpy(ok_now, x.ok, sizeof(ok_now));
						memcpy(peer_ok, y.ok, sizeof(peer_ok));
					}
				}
				if (paired) {
					/* the rails each end still holds after the bursts */
					memset(x.left, 0, sizeof(x.left));
					if (live && wk.alive)
						memcpy(x.left, ok_now, sizeof(x.left));
					live = xchg(&wk, &x, &y, peer, 5, live);
					m->cmd = PF_CMD_AGAIN;
					m->me = rank;
					memcpy(m->left, y.left, sizeof(m->left));
					memset(x.v, 0, sizeof(x.v));
					if (live &&
					    !rpc(&wk, m, (double)common * o.timeout_s + 5, t))
						memcpy(x.v, m->v, sizeof(x.v));
					xchg(&wk, &x, &y, peer, 2, live);
					m->cmd = PF_CMD_END;
					m->nr = common;
					if (!rpc(&wk, m, b_step, t))
						memcpy(c, m->cells, sizeof(*c) * (size_t)common);
					/* only the lower rank timed the round trips */
					for (int r = 0; r < common; r++)
						c[r].lat_us = (float)(lower ? x.v[r] : y.v[r]);
					if (!xchg(&wk, &x, &y, peer, 4, true))
						cells_died(c, common, !x.alive, peer);
				} else if (common) {
					cells_died(c, common, !infos[rank].alive, peer);
				}
				for (int r = common; r < nr; r++) {
					c[r].status = me.err || ranks[peer].err ? PF_UNREACHABLE
										: PF_NO_RAIL;
					snprintf(c[r].why, sizeof(c[r].why), "%s",
						 me.err		   ? "this rank could not run"
						 : ranks[peer].err ? "the peer could not run"
								   : "one side has no such rail");
				}
			} else {
				/* a bye: the pairs' two burst halves in each pass, and the
				 * values that pick the second pass's pairs (none from here) */
				for (int pass = 0; pass < PF_BURST_PASSES; pass++) {
					if (pass > 0) {
						float none[PF_MAX_RAILS];

						for (int r = 0; r < PF_MAX_RAILS; r++)
							none[r] = -1;
						burst_round(none, rxs, n, hist, t, med, earlier,
							    scratch);
					}
					pf_barrier();
					pf_barrier();
				}
			}
			m->cmd = PF_CMD_UNLISTEN;
			m->nr = common;
			if (common)
				rpc(&wk, m, b_step, t);
			pf_barrier();
		}
		if (!me.err && !wk.alive) {
			end.died = wk.died;
			snprintf(end.why, sizeof(end.why), "%s", wk.why);
		}
		if (rank == 0) {
			all = calloc((size_t)n * ncell, sizeof(*all));
			cells = calloc((size_t)n * ncell, sizeof(*cells));
			ends = calloc((size_t)n, sizeof(*ends));
			if (!all || !cells || !ends)
				MPI_Abort(MPI_COMM_WORLD, 3);
		}
		MPI_Gather(&end, sizeof(end), MPI_BYTE, ends, sizeof(end), MPI_BYTE, 0,
			   MPI_COMM_WORLD);
		MPI_Gather(col, (int)(ncell * sizeof(*col)), MPI_BYTE, all,
			   (int)(ncell * sizeof(*col)), MPI_BYTE, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			for (int x = 0; x < n; x++) {
				ranks[x].died = ends[x].died;
				snprintf(ranks[x].died_why, sizeof(ranks[x].died_why), "%s",
					 ends[x].why);
			}
			/* all[to][from][rail] -> cells[from][to][rail] */
			for (int to = 0; to < n; to++)
				for (int from = 0; from < n; from++)
					for (int r = 0; r < nr; r++)
						cells[((size_t)from * (size_t)n + (size_t)to) *
							      (size_t)nr +
						      (size_t)r] =
							all[(size_t)to * ncell +
							    (size_t)from * (size_t)nr + (size_t)r];
			struct pf_run run = { .nranks = n,
					      .nrails = nr,
					      .ranks = ranks,
					      .cells = cells,
					      .seconds = now_s() - t0,
					      .rounds = rounds,
					      .ref = ref };
			char *problems = malloc(1 << 16);
			int np = problems ? pf_judge(&run, problems, 1 << 16) : 0;

			if (o.json)
				pf_print_json(stdout, &run, problems ? problems : "", np);
			else
				pf_print_text(stdout, &run, problems ? problems : "", np);
			fflush(stdout);
			if (o.heatmap && render_heatmap(&run, o.heatmap))
				fprintf(stderr, "railnet-preflight: gnuplot could not draw %s\n",
					o.heatmap);
			rc = all_err ? 3 : np ? 1 : 0;
			free(problems);
		}
		free(all);
		free(cells);
		free(ends);
		free(col);
		free(infos);
		free(rxs);
		free(hist);
		free(scratch);
	}
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	worker_quit(&wk, m);
	free(ranks);
	free(m);
	MPI_Finalize();
	return rc;
}
