// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-preflight's pure parts (pf.h): the tournament schedule, the verdict, and the text,
 * JSON and heat-map output. No MPI, no plugin: unit-tested by test/preflight/test_pf.c.
 */
#include "pf.h"

#include "railnet/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pf_rounds(int n)
{
	if (n < 2)
		return 0;
	return n % 2 ? n : n - 1;
}

int pf_partner(int n, int round, int rank)
{
	int m = n % 2 ? n + 1 : n, p;

	if (n < 2 || round < 0 || round >= m - 1 || rank < 0 || rank >= n)
		return -1;
	if (rank == m - 1)
		p = round;
	else if (rank == round)
		p = m - 1;
	else
		p = ((2 * round - rank) % (m - 1) + (m - 1)) % (m - 1);
	return p >= n ? -1 : p; /* the added player of an odd n: a bye */
}

const char *pf_status_str(int s)
{
	switch (s) {
	case PF_OK:
		return "ok";
	case PF_UNREACHABLE:
		return "unreachable";
	case PF_CORRUPT:
		return "corrupt";
	case PF_FAILED:
		return "failed";
	case PF_NO_RAIL:
		return "no-rail";
	case PF_LARGE_LOST:
		return "large-lost";
	case PF_PEER_DIED:
		return "died";
	default:
		return "not-run";
	}
}

/* ---- the verdict ---------------------------------------------------------------------- */

struct pf_out {
	char *buf;
	size_t len, used;
	int n;
};

static void say(struct pf_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct pf_out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	o->n++;
	if (o->used + 1 >= o->len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	o->used += (size_t)k < o->len - o->used ? (size_t)k : o->len - o->used - 1;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* OK cells on a rail. */
static int rail_ok(const struct pf_run *r, int rail)
{
	int k = 0;

	for (int a = 0; a < r->nranks; a++)
		for (int b = 0; b < r->nranks; b++)
			k += a != b && pf_cell_at(r, a, b, rail)->status == PF_OK;
	return k;
}

/* The median of v[0..k) (k > 0), which it sorts. */
static float median_of(float *v, int k)
{
	qsort(v, (size_t)k, sizeof(float), cmp_float);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* Median of the OK cells' bandwidth (lat false) or latency (lat true) on a rail; 0 if none. */
static float rail_median(const struct pf_run *r, int rail, bool lat)
{
	float *v = malloc(sizeof(float) * (size_t)r->nranks * (size_t)r->nranks + 1), m = 0;
	int k = 0;

	if (!v)
		return 0;
	for (int a = 0; a < r->nranks; a++)
		for (int b = 0; b < r->nranks; b++) {
			const struct pf_cell *c = pf_cell_at(r, a, b, rail);

			if (a != b && c->status == PF_OK)
				v[k++] = lat ? c->lat_us : c->gbps;
		}
	if (k)
		m = median_of(v, k);
	free(v);
	return m;
}

enum pf_kind { PF_K_UNREACH, PF_K_CORRUPT, PF_K_FAILED, PF_K_LARGE, PF_K_SLOW, PF_K_LAT };

/* A slow cell by the pair-alone threshold (the rank-wide one is is_bad's). */
static bool pair_slow(const struct pf_cell *c, float med_bw)
{
	return c->status == PF_OK && med_bw > 0 && c->gbps < PF_SLOW_PAIR_OF_MEDIAN * med_bw;
}

static bool is_bad(const struct pf_cell *c, enum pf_kind k, float med_bw, float med_lat)
{
	switch (k) {
	case PF_K_UNREACH:
		return c->status == PF_UNREACHABLE;
	case PF_K_CORRUPT:
		return c->status == PF_CORRUPT;
	case PF_K_FAILED:
		return c->status == PF_FAILED;
	case PF_K_LARGE:
		return c->status == PF_LARGE_LOST;
	case PF_K_SLOW:
		return c->status == PF_OK && med_bw > 0 && c->gbps < PF_SLOW_OF_MEDIAN * med_bw;
	default:
		return c->status == PF_OK && med_lat > 0 &&
		       c->lat_us > PF_HIGH_LAT_OF_MEDIAN * med_lat &&
		       c->lat_us > med_lat + PF_HIGH_LAT_MIN_US;
	}
}

static const char *rank_host(const struct pf_run *r, int x)
{
	return r->ranks[x].host[0] ? r->ranks[x].host : "?";
}

/*
 * The verdict's words per kind of problem. A rank line is "rank X (host) rail R (dev): " +
 * what + " sending", " receiving" or "" + what2 + the measure + ": " + the likely cause; a
 * pair line "rail R (dev): " + pre + "rank a (host)" + join + "rank b (host)" + post + the
 * measure + the cell's reason + ": " + the cause. pf_cause replaces the cause where the rails' facts name a
 * better one (GID not routable, the MTU).
 */
static const struct pf_words {
	/* rank: what, then " sending"/" receiving"/"", then what2 */
	const char *what, *what2, *rank_cause;
	/* pair: pre "rank a (host)" join "rank b (host)" post */
	const char *pre, *join, *post, *pair_cause;
} pf_words[] = {
	[PF_K_UNREACH] = { "unreachable", " from every other rank",
			   "its port is down, or its interface is not on this rail's network (a "
			   "NAD or DRA claim that gave it another rail, a wrong VLAN, a switch "
			   "port down)",
			   "", " and ", " cannot reach each other",
			   "different networks on this rail, or a path down between them" },
	[PF_K_CORRUPT] = { "data", " arrived corrupted with every other rank",
			   "a faulty NIC or memory on this rank", "data from ", " to ",
			   " arrived corrupted", "a faulty NIC, cable or memory on one of them" },
	[PF_K_FAILED] = { "transfers", " with every other rank failed after connecting",
			  "RDMA drops on this port (PFC/ECN), or the port flapped", "", " to ",
			  ": transfer failed after connecting",
			  "RDMA drops on the path (PFC/ECN), or a port flapped" },
	[PF_K_LARGE] = { "large messages",
			 " with every other rank are lost while 8-byte ones cross",
			 "an MTU mismatch on its path: a switch port, VLAN or interface with a "
			 "smaller MTU than RoCE's packets need",
			 "", " and ", ": large messages are lost while 8-byte ones cross",
			 "an MTU mismatch on the path between them: a switch port, VLAN or "
			 "interface with a smaller MTU than RoCE's packets need" },
	[PF_K_SLOW] = { "slow link", "",
			"a port that linked at a lower speed, or a congested switch port", "",
			" to ", ": slow", "a congested or degraded path between them" },
	[PF_K_LAT] = { "high latency", "", "a longer path, or retransmissions", "", " and ",
		       ": high latency", "a longer path, or retransmissions between them" },
};

/*
 * The subnet more than half of the ranks that know theirs have on a rail: the rail's network.
 * "" when unknown or when there is no such majority (routed rails, a subnet per host or rack:
 * different subnets are then no fault).
 */
static const char *rail_net(const struct pf_run *r, int rail)
{
	const char *best = "";
	int best_n = 0, known = 0;

	for (int a = 0; a < r->nranks; a++) {
		const char *net = r->ranks[a].rail[rail].net;
		int k = 0;

		if (r->ranks[a].err || rail >= r->ranks[a].nrails || !net[0])
			continue;
		known++;
		for (int b = 0; b < r->nranks; b++)
			k += !r->ranks[b].err && rail < r->ranks[b].nrails &&
			     !strcmp(r->ranks[b].rail[rail].net, net);
		if (k > best_n) {
			best = net;
			best_n = k;
		}
	}
	return 2 * best_n > known ? best : "";
}

/* The MTU most ranks' ports have on a rail (0 when unknown). */
static int rail_mtu(const struct pf_run *r, int rail)
{
	int best = 0, best_n = 0;

	for (int a = 0; a < r->nranks; a++) {
		int m = r->ranks[a].rail[rail].mtu, k = 0;

		if (r->ranks[a].err || rail >= r->ranks[a].nrails || m <= 0)
			continue;
		for (int b = 0; b < r->nranks; b++)
			k += !r->ranks[b].err && rail < r->ranks[b].nrails &&
			     r->ranks[b].rail[rail].mtu == m;
		if (k > best_n || (k == best_n && m > best)) {
			best = m;
			best_n = k;
		}
	}
	return best;
}

/* RoCEv2 headers around a packet's payload: IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4. */
#define PF_ROCE_HDR 60

/*
 * The likely cause of kind k for rank x (y < 0) or the pair x -> y, into buf: the rails'
 * facts first (GID subnets, MTU), else the kind's words.
 */
static const char *pf_cause(const struct pf_run *r, int rail, enum pf_kind k, int x, int y,
			    char *buf, size_t len)
{
	const struct pf_rail *rx = &r->ranks[x].rail[rail];
	const char *net = rail_net(r, rail);

	if (k == PF_K_UNREACH && y < 0 && rx->net[0] && net[0] && strcmp(rx->net, net)) {
		snprintf(buf, len,
			 "GID not routable: its GID %s is on %s while the rail's other ranks are "
			 "on %s (its interface is on another network: a NAD or DRA claim that gave "
			 "it another rail, or a wrong VLAN)",
			 rx->gid, rx->net, net);
		return buf;
	}
	if (k == PF_K_UNREACH && y >= 0 && net[0]) {
		const struct pf_rail *ry = &r->ranks[y].rail[rail];

		/* one of the two off the rail's network */
		if (rx->net[0] && ry->net[0] && strcmp(rx->net, ry->net) &&
		    (!strcmp(rx->net, net) || !strcmp(ry->net, net))) {
			snprintf(buf, len,
				 "GID not routable: %s on %s and %s on %s, different networks with "
				 "no route between them on this rail",
				 rx->gid, rx->net, ry->gid, ry->net);
			return buf;
		}
	}
	if (k == PF_K_LARGE) {
		int m = rx->mtu;

		if (y >= 0 && r->ranks[y].rail[rail].mtu > 0 &&
		    (m <= 0 || r->ranks[y].rail[rail].mtu < m))
			m = r->ranks[y].rail[rail].mtu;
		if (m > 0) {
			snprintf(buf, len,
				 "%s (RoCE's path MTU is %d, so its packets are %d bytes: every "
				 "link on the way needs an MTU of at least that)",
				 y < 0 ? pf_words[k].rank_cause : pf_words[k].pair_cause, m,
				 m + PF_ROCE_HDR);
			return buf;
		}
	}
	return y < 0 ? pf_words[k].rank_cause : pf_words[k].pair_cause;
}

static void rank_problem(struct pf_out *o, const struct pf_run *r, int x, int rail, enum pf_kind k,
			 const char *dir, float med_bw, float med_lat, float mine)
{
	char measure[160] = "", cause[400];

	if (k == PF_K_SLOW)
		snprintf(measure, sizeof(measure),
			 ": %.2f GB/s with every other rank, %.2fx the rail's median %.2f GB/s",
			 mine, med_bw > 0 ? mine / med_bw : 0, med_bw);
	else if (k == PF_K_LAT)
		snprintf(measure, sizeof(measure), ": %.1f us against the rail's median %.1f us",
			 mine, med_lat);
	say(o, "rank %d (%s) rail %d (%s): %s%s%s%s: %s\n", x, rank_host(r, x), rail,
	    r->ranks[x].rail[rail].name, pf_words[k].what, dir, pf_words[k].what2, measure,
	    pf_cause(r, rail, k, x, -1, cause, sizeof(cause)));
}

static void pair_problem(struct pf_out *o, const struct pf_run *r, int a, int b, int rail,
			 enum pf_kind k, float med_bw, float med_lat)
{
	const struct pf_cell *c = pf_cell_at(r, a, b, rail);
	char measure[120] = "", why[PF_WHY_LEN + 8] = "", cause[400];

	if (k == PF_K_SLOW)
		snprintf(measure, sizeof(measure),
			 ", %.2f GB/s against the rail's median %.2f GB/s", c->gbps, med_bw);
	else if (k == PF_K_LAT)
		snprintf(measure, sizeof(measure), ", %.1f us against the rail's median %.1f us",
			 c->lat_us, med_lat);
	if (c->why[0] && k != PF_K_SLOW && k != PF_K_LAT)
		snprintf(why, sizeof(why), " (%s)", c->why);
	say(o, "rail %d (%s): %srank %d (%s)%srank %d (%s)%s%s%s: %s\n", rail,
	    r->ranks[r->ref].rail[rail].name, pf_words[k].pre, a, rank_host(r, a), pf_words[k].join,
	    b, rank_host(r, b), pf_words[k].post, measure, why,
	    pf_cause(r, rail, k, a, b, cause, sizeof(cause)));
}

/*
 * One kind of problem on one rail. A rank all of whose cells on the rail have it, both
 * directions, or all of its sends, or all of its receives, is named once (its port is the
 * likely cause, and which way says more: a port's transmit or receive side); the bad cells
 * left are named per pair.
 */
static void judge_kind(struct pf_out *o, const struct pf_run *r, int rail, enum pf_kind k,
		       float med_bw, float med_lat, const bool *host_slow)
{
	int n = r->nranks;
	bool *said = calloc((size_t)n * (size_t)n, sizeof(bool));

	if (!said)
		return;
	for (int x = 0; n > 2 && x < n; x++) {
		int out_bad = 0, in_bad = 0, total = 0;
		double out_sum = 0, in_sum = 0;

		for (int y = 0; y < n; y++) {
			const struct pf_cell *c1 = pf_cell_at(r, x, y, rail), *c2;

			if (y == x || c1->status == PF_NO_RAIL || c1->status == PF_NOT_RUN ||
			    c1->status == PF_PEER_DIED)
				continue;
			c2 = pf_cell_at(r, y, x, rail);
			total++;
			out_bad += is_bad(c1, k, med_bw, med_lat);
			in_bad += is_bad(c2, k, med_bw, med_lat);
			out_sum += k == PF_K_LAT ? c1->lat_us : c1->gbps;
			in_sum += k == PF_K_LAT ? c2->lat_us : c2->gbps;
		}
		if (!total || r->ranks[x].err || (out_bad < total && in_bad < total))
			continue; /* a rank that could not run is said once, by pf_judge */
		for (int y = 0; y < n; y++) {
			if (out_bad == total)
				said[x * n + y] = true;
			if (in_bad == total)
				said[y * n + x] = true;
		}
		if (out_bad == total && in_bad == total)
			rank_problem(o, r, x, rail, k, "", med_bw, med_lat,
				     (float)((out_sum + in_sum) / (2 * total)));
		else
			rank_problem(o, r, x, rail, k, out_bad == total ? " sending" : " receiving",
				     med_bw, med_lat,
				     (float)((out_bad == total ? out_sum : in_sum) / total));
	}
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			const struct pf_cell *c = pf_cell_at(r, a, b, rail);

			if (a == b || said[a * n + b] || r->ranks[a].err || r->ranks[b].err ||
			    !is_bad(c, k, med_bw, med_lat) ||
			    (k == PF_K_SLOW && (!pair_slow(c, med_bw) || host_slow[a * n + b])))
				continue;
			/* a pair whose both directions are bad is said once (unreachable, MTU, latency) */
			if ((k == PF_K_UNREACH || k == PF_K_LAT || k == PF_K_LARGE) && b < a &&
			    is_bad(pf_cell_at(r, b, a, rail), k, med_bw, med_lat) &&
			    !said[b * n + a])
				continue;
			pair_problem(o, r, a, b, rail, k, med_bw, med_lat);
		}
	free(said);
}

/*
 * A port whose active MTU differs from the rail's other ports': RDMA with it runs at the
 * smaller MTU (both ends agree on the smaller), and its interface's MTU (which a RoCE port's
 * follows) was set apart from the rest of the rail's.
 */
static void judge_mtu(struct pf_out *o, const struct pf_run *r, int rail)
{
	int m = rail_mtu(r, rail);

	for (int x = 0; m > 0 && x < r->nranks; x++) {
		const struct pf_rail *rx = &r->ranks[x].rail[rail];

		if (r->ranks[x].err || rail >= r->ranks[x].nrails || rx->mtu <= 0 || rx->mtu == m)
			continue;
		say(o,
		    "rank %d (%s) rail %d (%s): MTU mismatch: its port's MTU is %d, the rail's "
		    "other ports have %d: RDMA with it runs at the smaller one; set its "
		    "interface's MTU like the rest of the rail's (a RoCE port's MTU follows "
		    "it)\n",
		    x, rank_host(r, x), rail, rx->name, rx->mtu, m);
	}
}

/*
 * A pair slow on most of its rails at once (PF_HOST_SLOW_OF_RAILS of them, two at least) is
 * said once, as the two hosts' problem: all rails of a pair run in the same round, so what
 * slows every one of them is on the hosts (a CPU, PCIe or memory busy during that round), not
 * on a link. host_slow[a * n + b] is set for such a pair, whose cells judge_kind then skips.
 */
static void judge_host_slow(struct pf_out *o, const struct pf_run *r, const float *med,
			    bool *host_slow)
{
	int n = r->nranks;

	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			int slow = 0, judged = 0;
			double got = 0, ref = 0;

			if (a == b || r->ranks[a].err || r->ranks[b].err)
				continue;
			for (int rail = 0; rail < r->nrails; rail++) {
				const struct pf_cell *c = pf_cell_at(r, a, b, rail);

				if (c->status != PF_OK || med[rail] <= 0)
					continue;
				judged++;
				if (pair_slow(c, med[rail])) {
					slow++;
					got += c->gbps;
					ref += med[rail];
				}
			}
			if (slow < 2 || slow < PF_HOST_SLOW_OF_RAILS * judged)
				continue;
			host_slow[a * n + b] = true;
			say(o,
			    "rank %d (%s) to rank %d (%s): slow on %d of %d rails at once, %.2f "
			    "GB/s "
			    "against the rails' median %.2f GB/s: the two hosts during their round "
			    "(a CPU, PCIe or memory busy), not one link\n",
			    a, rank_host(r, a), b, rank_host(r, b), slow, judged, got / slow,
			    ref / slow);
		}
}

int pf_judge(const struct pf_run *r, char *buf, size_t len)
{
	struct pf_out o = { buf, len, 0, 0 };
	bool *host_slow = calloc((size_t)r->nranks * (size_t)r->nranks + 1, sizeof(bool));
	float *med = calloc((size_t)r->nrails + 1, sizeof(float));

	if (len)
		buf[0] = '\0';
	for (int x = 0; x < r->nranks; x++) {
		const struct pf_rank *k = &r->ranks[x];

		if (k->err) {
			say(&o, "rank %d (%s) could not take part: %s\n", x, rank_host(r, x),
			    k->why);
			continue;
		}
		if (k->died)
			say(&o,
			    "rank %d (%s): its preflight worker %s in round %d; its pairs from "
			    "then on are marked died and were not tested (a crash or hang in its "
			    "RDMA stack: run railnet-doctor there)\n",
			    x, rank_host(r, x), k->died_why[0] ? k->died_why : "died", k->died);
		/* by count only: the pods of one node hold different devices for the same rails */
		if (x != r->ref && k->nrails != r->ranks[r->ref].nrails)
			say(&o,
			    "rank %d (%s) has %d rail(s), rank %d (%s) has %d: a port down on one "
			    "of them, or the pods were given different rail sets (their NADs, "
			    "device-plugin resources or DRA claims differ); rails are compared by "
			    "position\n",
			    x, rank_host(r, x), k->nrails, r->ref, rank_host(r, r->ref),
			    r->ranks[r->ref].nrails);
	}
	if (!host_slow || !med) {
		free(host_slow);
		free(med);
		say(&o, "out of memory: the verdict is incomplete\n");
		return o.n;
	}
	/* slow and high-latency cells need peers to compare with: PF_MIN_PEERS OK cells */
	for (int rail = 0; rail < r->nrails; rail++)
		med[rail] = rail_ok(r, rail) < PF_MIN_PEERS ? 0 : rail_median(r, rail, false);
	if (r->nrails >= 2)
		judge_host_slow(&o, r, med, host_slow);
	for (int rail = 0; rail < r->nrails; rail++) {
		float ml = med[rail] > 0 ? rail_median(r, rail, true) : 0;

		for (int k = PF_K_UNREACH; k <= PF_K_LAT; k++)
			judge_kind(&o, r, rail, (enum pf_kind)k, med[rail], ml, host_slow);
		judge_mtu(&o, r, rail);
	}
	free(host_slow);
	free(med);
	return o.n;
}

/* ---- output --------------------------------------------------------------------------- */

/* A cell's status in a matrix column (7 characters). */
static const char *pf_status_short(int s)
{
	switch (s) {
	case PF_UNREACHABLE:
		return "unreach";
	case PF_LARGE_LOST:
		return "lg-lost";
	default:
		return pf_status_str(s);
	}
}

void pf_rail_medians(const float *x, int rows, float *med, float *scratch)
{
	for (int rail = 0; rail < PF_MAX_RAILS; rail++) {
		int k = 0;

		for (int i = 0; i < rows; i++)
			if (x[(size_t)i * PF_MAX_RAILS + rail] >= 0)
				scratch[k++] = x[(size_t)i * PF_MAX_RAILS + rail];
		med[rail] = k ? median_of(scratch, k) : -1;
	}
}

bool pf_burst_again(const float *rx, const float *med, const float *ref, int a, int b, int nr)
{
	for (int rail = 0; rail < nr && rail < PF_MAX_RAILS; rail++) {
		float ra = rx[(size_t)a * PF_MAX_RAILS + rail],
		      rb = rx[(size_t)b * PF_MAX_RAILS + rail],
		      top = med[rail] > ref[rail] ? med[rail] : ref[rail];

		if (top > 0 && ((ra >= 0 && ra < PF_BURST_AGAIN_OF_MEDIAN * top) ||
				(rb >= 0 && rb < PF_BURST_AGAIN_OF_MEDIAN * top)))
			return true;
	}
	return false;
}

void pf_count_bursts(const struct pf_run *r, int *twice, int *measured)
{
	*twice = *measured = 0;
	for (int a = 0; a < r->nranks; a++)
		for (int b = a + 1; b < r->nranks; b++) {
			int most = 0;

			for (int rail = 0; rail < r->nrails; rail++) {
				int x = pf_cell_at(r, a, b, rail)->bursts,
				    y = pf_cell_at(r, b, a, rail)->bursts;

				most = x > most ? x : most;
				most = y > most ? y : most;
			}
			*measured += most > 0;
			*twice += most > 1;
		}
}

void pf_print_text(FILE *o, const struct pf_run *r, const char *problems, int nproblems)
{
	int twice, measured;

	fprintf(o, "railnet-preflight: %d ranks, %d rail(s), %d round(s), %.1f s\n", r->nranks,
		r->nrails, r->rounds, r->seconds);
	for (int x = 0; x < r->nranks; x++) {
		fprintf(o, "  rank %d  %s  %d rail(s)%s%s", x, rank_host(r, x), r->ranks[x].nrails,
			r->ranks[x].err ? ": " : "", r->ranks[x].err ? r->ranks[x].why : "");
		if (r->ranks[x].died)
			fprintf(o, ": its worker %s in round %d", r->ranks[x].died_why,
				r->ranks[x].died);
		fputc('\n', o);
	}
	pf_count_bursts(r, &twice, &measured);
	fprintf(o,
		"  bandwidth: %d of %d pair(s) burst a second time (a receiver under %.2f of the "
		"rail's median in the first; the better pass kept)\n",
		twice, measured, PF_BURST_AGAIN_OF_MEDIAN);
	for (int rail = 0; rail < r->nrails; rail++) {
		const struct pf_rail *ri = &r->ranks[r->ref].rail[rail];

		const char *net = rail_net(r, rail);
		int mtu = rail_mtu(r, rail);

		fprintf(o, "\nrail %d: %s (port %d, %.1f GB/s rated", rail, ri->name, ri->port,
			ri->speed_mbps / 8000.0);
		if (mtu > 0)
			fprintf(o, ", MTU %d", mtu);
		if (net[0])
			fprintf(o, ", %s", net);
		fprintf(o, "; median %.2f GB/s, %.1f us)\n", rail_median(r, rail, false),
			rail_median(r, rail, true));
		fprintf(o, "  GB/s from row to column\n        ");
		for (int b = 0; b < r->nranks; b++)
			fprintf(o, " %7d", b);
		fputc('\n', o);
		for (int a = 0; a < r->nranks; a++) {
			fprintf(o, "  %5d ", a);
			for (int b = 0; b < r->nranks; b++) {
				const struct pf_cell *c = pf_cell_at(r, a, b, rail);

				if (a == b)
					fprintf(o, " %7s", "-");
				else if (c->status == PF_OK)
					fprintf(o, " %7.2f", c->gbps);
				else
					fprintf(o, " %7s", pf_status_short(c->status));
			}
			fputc('\n', o);
		}
	}
	fprintf(o, "\nVerdict: %s\n", nproblems ? "PROBLEMS" : "FIT");
	if (nproblems) {
		const char *p = problems;

		while (*p) {
			const char *e = strchr(p, '\n');
			int l = e ? (int)(e - p) : (int)strlen(p);

			fprintf(o, "  problem %.*s\n", l, p);
			p += l + (e != NULL);
		}
	}
}

void pf_print_json(FILE *o, const struct pf_run *r, const char *problems, int nproblems)
{
	fprintf(o,
		"{\"schema\":1,\"ranks\":%d,\"rails\":%d,\"rounds\":%d,\"seconds\":%.3f,"
		"\"fit\":%s,\"hosts\":[",
		r->nranks, r->nrails, r->rounds, r->seconds, nproblems ? "false" : "true");
	for (int x = 0; x < r->nranks; x++) {
		fputs(x ? "," : "", o);
		rn_json_str(o, rank_host(r, x));
	}
	fputs("],\"rank_rails\":[", o);
	for (int x = 0; x < r->nranks; x++) {
		fputs(x ? ",[" : "[", o);
		for (int i = 0; i < r->ranks[x].nrails && !r->ranks[x].err; i++) {
			const struct pf_rail *ri = &r->ranks[x].rail[i];

			fputs(i ? ",{\"name\":" : "{\"name\":", o);
			rn_json_str(o, ri->name);
			fprintf(o, ",\"port\":%d,\"mtu\":%d,\"gid\":", ri->port, ri->mtu);
			rn_json_str(o, ri->gid);
			fputs(",\"net\":", o);
			rn_json_str(o, ri->net);
			fputc('}', o);
		}
		fputc(']', o);
	}
	fputs("],\"workers_died\":[", o);
	for (int x = 0, first = 1; x < r->nranks; x++) {
		if (!r->ranks[x].died)
			continue;
		fprintf(o, "%s{\"rank\":%d,\"round\":%d,\"how\":", first ? "" : ",", x,
			r->ranks[x].died);
		rn_json_str(o, r->ranks[x].died_why);
		fputc('}', o);
		first = 0;
	}
	fputs("],\"rail_names\":[", o);
	for (int i = 0; i < r->nrails; i++) {
		fputs(i ? "," : "", o);
		rn_json_str(o, r->ranks[r->ref].rail[i].name);
	}
	fputs("],\"cells\":[", o);
	for (int rail = 0, first = 1; rail < r->nrails; rail++)
		for (int a = 0; a < r->nranks; a++)
			for (int b = 0; b < r->nranks; b++) {
				const struct pf_cell *c = pf_cell_at(r, a, b, rail);

				if (a == b)
					continue;
				fprintf(o, "%s{\"rail\":%d,\"from\":%d,\"to\":%d,\"status\":\"%s\"",
					first ? "" : ",", rail, a, b, pf_status_str(c->status));
				if (c->status == PF_OK)
					fprintf(o,
						",\"gbps\":%.3f,\"latency_us\":%.1f,\"bursts\":%d",
						c->gbps, c->lat_us, c->bursts);
				if (c->why[0]) {
					fputs(",\"why\":", o);
					rn_json_str(o, c->why);
				}
				fputc('}', o);
				first = 0;
			}
	fputs("],\"problems\":[", o);
	for (const char *p = problems, *e; p && *p; p = e + 1) {
		char line[1024];
		size_t l;

		e = strchr(p, '\n');
		if (!e)
			e = p + strlen(p) - 1;
		l = (size_t)(e - p) < sizeof(line) - 1 ? (size_t)(e - p) : sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = '\0';
		fputs(p == problems ? "" : ",", o);
		rn_json_str(o, line);
	}
	fputs("]}\n", o);
}

void pf_print_heat(FILE *o, const struct pf_run *r)
{
	for (int rail = 0; rail < r->nrails; rail++) {
		fprintf(o, "# rail %d %s\n", rail, r->ranks[r->ref].rail[rail].name);
		for (int a = 0; a < r->nranks; a++) {
			for (int b = 0; b < r->nranks; b++) {
				const struct pf_cell *c = pf_cell_at(r, a, b, rail);

				fprintf(o, "%s%.3f", b ? " " : "",
					a != b && c->status == PF_OK ? c->gbps : NAN);
			}
			fputc('\n', o);
		}
		fputs("\n\n", o);
	}
}
