// SPDX-License-Identifier: Apache-2.0
/*
 * Counters (stats.h): per-port totals and per-connection records, collected when comms close,
 * read from live comms by the snapshot thread, and written to RAILNET_STATS as JSON or, for a
 * path ending in .prom, in Prometheus' text format (docs/env.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "railnet/json.h"
#include "railnet/log.h"
#include "railnet/stats.h"

#define RN_STATS_MAX_PORTS 256
#define RN_STATS_MAX_IDS 64 /* commIds listed in the file */

struct rn_stats_port {
	char dev[RN_STATS_DEV_MAX];
	int port;
	uint32_t rail;
	struct rn_port_counters st;
};

struct rn_stats_conn {
	char name[RN_STATS_NAME_MAX];
	bool send;
	int nports, nqps;
	int port_idx[RN_PROTO_MAX_PORTS]; /* into rn_stats.ports */
	struct rn_port_counters st[RN_PROTO_MAX_PORTS];
};

static struct {
	pthread_mutex_t lock;
	struct rn_stats_port ports[RN_STATS_MAX_PORTS]; /* closed comms' totals */
	int nports;
	struct rn_stats_conn *conns;
	int nconns, cap;
	uint64_t total_conns, dropped;
	struct rn_stats_live *live;
	int api;
	uint64_t ids[RN_STATS_MAX_IDS];
	int nids;
	/* the snapshot thread */
	pthread_t thread;
	bool running, stop;
	pthread_cond_t cond;
	char *pattern;
	int interval_s;
} rn_stats = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void rn_stats_sum(struct rn_port_counters *a, const struct rn_port_counters *b)
{
	a->tx_bytes += b->tx_bytes;
	a->tx_msgs += b->tx_msgs;
	a->rx_parts += b->rx_parts;
	a->cqes += b->cqes;
	a->errors += b->errors;
	a->failovers += b->failovers;
	a->port_err += b->port_err;
	a->resent += b->resent;
	a->resend_skipped += b->resend_skipped;
}

static int rn_stats_port_find(struct rn_stats_port *ports, int *nports, const char *dev, int port,
			      uint32_t rail)
{
	for (int i = 0; i < *nports; i++)
		if (ports[i].port == port && !strcmp(ports[i].dev, dev))
			return i;
	if (*nports == RN_STATS_MAX_PORTS)
		return -1;
	snprintf(ports[*nports].dev, RN_STATS_DEV_MAX, "%s", dev);
	ports[*nports].port = port;
	ports[*nports].rail = rail;
	memset(&ports[*nports].st, 0, sizeof(struct rn_port_counters));
	return (*nports)++;
}

void rn_stats_add(const struct rn_stats_comm *s)
{
	struct rn_stats_conn rec;

	memset(&rec, 0, sizeof(rec));
	snprintf(rec.name, sizeof(rec.name), "%s", s->name);
	rec.send = s->send;
	rec.nports = s->nports;
	rec.nqps = s->nqps;
	pthread_mutex_lock(&rn_stats.lock);
	for (int p = 0; p < rec.nports; p++) {
		int i = rn_stats_port_find(rn_stats.ports, &rn_stats.nports, s->port[p].dev,
					   s->port[p].port, s->port[p].rail);

		rec.st[p] = s->port[p].c;
		rec.port_idx[p] = i;
		if (i >= 0)
			rn_stats_sum(&rn_stats.ports[i].st, &rec.st[p]);
	}
	rn_stats.total_conns++;
	if (rn_stats.nconns == rn_stats.cap && rn_stats.cap < RN_STATS_MAX_CONNS) {
		int cap = rn_stats.cap ? 2 * rn_stats.cap : 16;
		struct rn_stats_conn *n = realloc(rn_stats.conns, (size_t)cap * sizeof(*n));

		if (n) {
			rn_stats.conns = n;
			rn_stats.cap = cap;
		}
	}
	if (rn_stats.nconns < rn_stats.cap)
		rn_stats.conns[rn_stats.nconns++] = rec;
	else
		rn_stats.dropped++;
	pthread_mutex_unlock(&rn_stats.lock);
}

void rn_stats_live_add(struct rn_stats_live *l)
{
	pthread_mutex_lock(&rn_stats.lock);
	l->prev = NULL;
	l->next = rn_stats.live;
	if (rn_stats.live)
		rn_stats.live->prev = l;
	rn_stats.live = l;
	pthread_mutex_unlock(&rn_stats.lock);
}

void rn_stats_live_del(struct rn_stats_live *l)
{
	pthread_mutex_lock(&rn_stats.lock);
	if (l->prev)
		l->prev->next = l->next;
	else if (rn_stats.live == l)
		rn_stats.live = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
	pthread_mutex_unlock(&rn_stats.lock);
}

void rn_stats_note_init(int api, uint64_t comm_id)
{
	pthread_mutex_lock(&rn_stats.lock);
	if (api)
		rn_stats.api = api;
	for (int i = 0; i < rn_stats.nids; i++)
		if (rn_stats.ids[i] == comm_id)
			goto out;
	if (rn_stats.nids < RN_STATS_MAX_IDS)
		rn_stats.ids[rn_stats.nids++] = comm_id;
out:
	pthread_mutex_unlock(&rn_stats.lock);
}

int rn_stats_expand(const char *pattern, char *out, size_t len)
{
	char host[256];
	size_t o = 0;

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	for (const char *p = pattern; *p; p++) {
		char buf[32];
		const char *add = buf;

		if (*p != '%') {
			buf[0] = *p;
			buf[1] = '\0';
		} else if (p[1] == 'h') {
			add = host;
			p++;
		} else if (p[1] == 'p') {
			snprintf(buf, sizeof(buf), "%d", (int)getpid());
			p++;
		} else if (p[1] == '%') {
			snprintf(buf, sizeof(buf), "%%");
			p++;
		} else {
			return -EINVAL;
		}
		if (o + strlen(add) >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, strlen(add) + 1);
		o += strlen(add);
	}
	if (!o)
		out[0] = '\0';
	return 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* What one write shows: the closed comms' totals with the live comms added (lock held). */
struct rn_stats_view {
	struct rn_stats_port ports[RN_STATS_MAX_PORTS];
	int nports;
	struct rn_stats_comm *live; /* NULL when out of memory: live comms left out */
	int nlive;
};

static void rn_stats_view_make(struct rn_stats_view *v)
{
	int n = 0;

	memcpy(v->ports, rn_stats.ports, sizeof(v->ports[0]) * (size_t)rn_stats.nports);
	v->nports = rn_stats.nports;
	for (struct rn_stats_live *l = rn_stats.live; l; l = l->next)
		n++;
	v->nlive = 0;
	v->live = n ? calloc((size_t)n, sizeof(*v->live)) : NULL;
	for (struct rn_stats_live *l = rn_stats.live; l && v->live; l = l->next) {
		struct rn_stats_comm *c = &v->live[v->nlive++];

		l->snap(l->arg, c);
		for (int p = 0; p < c->nports; p++) {
			int i = rn_stats_port_find(v->ports, &v->nports, c->port[p].dev,
						   c->port[p].port, c->port[p].rail);

			if (i >= 0)
				rn_stats_sum(&v->ports[i].st, &c->port[p].c);
		}
	}
}

static void rn_stats_json_counters(FILE *f, const struct rn_port_counters *s)
{
	fprintf(f,
		"\"tx_bytes\": %" PRIu64 ", \"tx_msgs\": %" PRIu64 ", \"rx_parts\": %" PRIu64
		", \"completions\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"failovers\": %" PRIu64
		", \"port_err_failovers\": %" PRIu64 ", \"resent\": %" PRIu64
		", \"resend_skipped\": %" PRIu64,
		s->tx_bytes, s->tx_msgs, s->rx_parts, s->cqes, s->errors, s->failovers, s->port_err,
		s->resent, s->resend_skipped);
}

static void rn_stats_json_comm(FILE *f, const char *name, bool send, int nqps, bool open,
			       int nports, const struct rn_stats_port *const *port,
			       const struct rn_port_counters *st)
{
	fprintf(f, "\n    {\"device\": ");
	rn_json_str(f, name);
	fprintf(f, ", \"role\": \"%s\", \"qps\": %d, \"ports\": [", send ? "send" : "recv", nqps);
	for (int p = 0; p < nports; p++) {
		fprintf(f, "%s{\"device\": ", p ? ", " : "");
		rn_json_str(f, port[p] ? port[p]->dev : "?");
		fprintf(f, ", \"port\": %d, ", port[p] ? port[p]->port : 0);
		rn_stats_json_counters(f, &st[p]);
		fputc('}', f);
	}
	fprintf(f, "], \"open\": %s}", open ? "true" : "false");
}

static void rn_stats_json(FILE *f, const struct rn_stats_view *v, const char *host, bool final)
{
	char when[32];
	time_t now = time(NULL);
	struct tm tm;
	bool first = true;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "{\n  \"version\": 2,\n  \"host\": ");
	rn_json_str(f, host);
	fprintf(f,
		",\n  \"pid\": %d,\n  \"time\": \"%s\",\n  \"final\": %s,\n  \"nccl_net_api\": "
		"%d,\n  \"comm_ids\": [",
		(int)getpid(), when, final ? "true" : "false", rn_stats.api);
	for (int i = 0; i < rn_stats.nids; i++)
		fprintf(f, "%s\"0x%016" PRIx64 "\"", i ? ", " : "", rn_stats.ids[i]);
	fprintf(f,
		"],\n  \"connections_total\": %" PRIu64 ",\n  \"connections_open\": %d,\n"
		"  \"connections_not_listed\": %" PRIu64 ",\n  \"ports\": [",
		rn_stats.total_conns + (uint64_t)v->nlive, v->nlive, rn_stats.dropped);
	for (int i = 0; i < v->nports; i++) {
		fprintf(f, "%s\n    {\"device\": ", i ? "," : "");
		rn_json_str(f, v->ports[i].dev);
		fprintf(f, ", \"port\": %d, \"rail\": %" PRIu32 ", ", v->ports[i].port,
			v->ports[i].rail);
		rn_stats_json_counters(f, &v->ports[i].st);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"connections\": [");
	for (int i = 0; i < rn_stats.nconns; i++, first = false) {
		const struct rn_stats_conn *c = &rn_stats.conns[i];
		const struct rn_stats_port *port[RN_PROTO_MAX_PORTS];

		for (int p = 0; p < c->nports; p++)
			port[p] = c->port_idx[p] >= 0 ? &rn_stats.ports[c->port_idx[p]] : NULL;
		fprintf(f, "%s", first ? "" : ",");
		rn_stats_json_comm(f, c->name, c->send, c->nqps, false, c->nports, port, c->st);
	}
	for (int i = 0; i < v->nlive; i++, first = false) {
		const struct rn_stats_comm *c = &v->live[i];
		const struct rn_stats_port *port[RN_PROTO_MAX_PORTS];
		struct rn_port_counters st[RN_PROTO_MAX_PORTS];

		for (int p = 0; p < c->nports; p++) {
			int k = -1;

			for (int j = 0; j < v->nports && k < 0; j++)
				if (v->ports[j].port == c->port[p].port &&
				    !strcmp(v->ports[j].dev, c->port[p].dev))
					k = j;
			port[p] = k >= 0 ? &v->ports[k] : NULL;
			st[p] = c->port[p].c;
		}
		fprintf(f, "%s", first ? "" : ",");
		rn_stats_json_comm(f, c->name, c->send, c->nqps, true, c->nports, port, st);
	}
	fprintf(f, "\n  ]\n}\n");
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void rn_stats_prom_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void rn_stats_prom(FILE *f, const struct rn_stats_view *v, const char *host)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} m[] = {
		{ "railnet_tx_bytes_total", "Data bytes this process wrote on the port.",
		  offsetof(struct rn_port_counters, tx_bytes) },
		{ "railnet_tx_messages_total",
		  "Parts (send comms) and clear-to-sends (receive comms) posted on the port.",
		  offsetof(struct rn_port_counters, tx_msgs) },
		{ "railnet_rx_parts_total", "Message parts received on the port.",
		  offsetof(struct rn_port_counters, rx_parts) },
		{ "railnet_completions_total", "Completions polled on the port.",
		  offsetof(struct rn_port_counters, cqes) },
		{ "railnet_errors_total", "Error completions on the port.",
		  offsetof(struct rn_port_counters, errors) },
		{ "railnet_failovers_total", "QPs of the port declared dead and failed over.",
		  offsetof(struct rn_port_counters, failovers) },
	};

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", m[k].name, m[k].help, m[k].name);
		for (int i = 0; i < v->nports; i++) {
			uint64_t val;

			memcpy(&val, (const char *)&v->ports[i].st + m[k].off, sizeof(val));
			fprintf(f, "%s{host=\"", m[k].name);
			rn_stats_prom_str(f, host);
			fprintf(f, "\",pid=\"%d\",device=\"", (int)getpid());
			rn_stats_prom_str(f, v->ports[i].dev);
			fprintf(f, "\",port=\"%d\",rail=\"%" PRIu32 "\"} %" PRIu64 "\n",
				v->ports[i].port, v->ports[i].rail, val);
		}
	}
	fprintf(f,
		"# HELP railnet_connections_open Comms open now.\n# TYPE railnet_connections_open "
		"gauge\nrailnet_connections_open{host=\"");
	rn_stats_prom_str(f, host);
	fprintf(f, "\",pid=\"%d\"} %d\n", (int)getpid(), v->nlive);
}

static bool rn_stats_is_prom(const char *path)
{
	size_t n = strlen(path);

	return n > 5 && !strcmp(path + n - 5, ".prom");
}

/* Write the file of pattern whole: a temporary file renamed over it (lock held). */
static int rn_stats_write(const char *pattern, bool final)
{
	char path[4096], tmp[4200], host[256];
	struct rn_stats_view *v;
	FILE *f;
	int rc;

	rc = rn_stats_expand(pattern, path, sizeof(path));
	if (rc) {
		RN_WARN("RAILNET_STATS=%s: %s", pattern,
			rc == -ENAMETOOLONG ? "the path is too long once expanded"
					    : "a '%' other than %h, %p or %%");
		return rc;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	v = calloc(1, sizeof(*v));
	if (!v) {
		RN_WARN("RAILNET_STATS=%s: out of memory for the statistics", path);
		return -ENOMEM;
	}
	rn_stats_view_make(v);
	f = fopen(tmp, "w");
	if (!f) {
		rc = -errno;
		RN_WARN("RAILNET_STATS=%s: cannot write the statistics: %s", path, strerror(-rc));
		goto out;
	}
	if (rn_stats_is_prom(path))
		rn_stats_prom(f, v, host);
	else
		rn_stats_json(f, v, host, final);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		RN_WARN("RAILNET_STATS=%s: writing the statistics failed: %s", path, strerror(-rc));
	}
out:
	free(v->live);
	free(v);
	return rc;
}

/* ---- the snapshot thread ------------------------------------------------------------------ */

static void *rn_stats_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rn_stats.lock);
	while (!rn_stats.stop) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += rn_stats.interval_s;
		while (!rn_stats.stop &&
		       pthread_cond_timedwait(&rn_stats.cond, &rn_stats.lock, &until) != ETIMEDOUT)
			;
		if (!rn_stats.stop)
			rn_stats_write(rn_stats.pattern, false);
	}
	pthread_mutex_unlock(&rn_stats.lock);
	return NULL;
}

int rn_stats_start(const char *pattern, int interval_s)
{
	int rc;

	if (!pattern || !*pattern || interval_s <= 0)
		return 0;
	pthread_mutex_lock(&rn_stats.lock);
	if (rn_stats.running) {
		pthread_mutex_unlock(&rn_stats.lock);
		return 0;
	}
	rn_stats.pattern = strdup(pattern);
	rn_stats.interval_s = interval_s;
	rn_stats.stop = false;
	rc = rn_stats.pattern ? -pthread_create(&rn_stats.thread, NULL, rn_stats_main, NULL)
			      : -ENOMEM;
	rn_stats.running = rc == 0;
	if (rc) {
		free(rn_stats.pattern);
		rn_stats.pattern = NULL;
		RN_WARN("RAILNET_STATS_INTERVAL=%d: cannot start the snapshot thread: %s; the file "
			"is written at finalize only",
			interval_s, strerror(-rc));
	}
	pthread_mutex_unlock(&rn_stats.lock);
	return rc;
}

void rn_stats_stop(void)
{
	pthread_mutex_lock(&rn_stats.lock);
	if (!rn_stats.running) {
		pthread_mutex_unlock(&rn_stats.lock);
		return;
	}
	rn_stats.stop = true;
	pthread_cond_broadcast(&rn_stats.cond);
	pthread_mutex_unlock(&rn_stats.lock);
	pthread_join(rn_stats.thread, NULL);
	pthread_mutex_lock(&rn_stats.lock);
	rn_stats.running = false;
	free(rn_stats.pattern);
	rn_stats.pattern = NULL;
	pthread_mutex_unlock(&rn_stats.lock);
}

int rn_stats_flush(const char *pattern)
{
	struct rn_port_counters all;
	char line[512];
	size_t off = 0;
	int rc = 0;

	memset(&all, 0, sizeof(all));
	pthread_mutex_lock(&rn_stats.lock);
	for (int i = 0; i < rn_stats.nports; i++) {
		const struct rn_stats_port *p = &rn_stats.ports[i];

		rn_stats_sum(&all, &p->st);
		if (off < sizeof(line))
			off += (size_t)snprintf(line + off, sizeof(line) - off,
						"%s%s:%d %" PRIu64 " B", i ? ", " : "", p->dev,
						p->port, p->st.tx_bytes);
	}
	if (rn_stats.total_conns)
		RN_INFO(RN_SUB_NET,
			"stats: %" PRIu64 " connection(s), %" PRIu64 " bytes sent, %" PRIu64
			" completions, %" PRIu64 " errors, %" PRIu64 " failovers; per port: %s",
			rn_stats.total_conns, all.tx_bytes, all.cqes, all.errors, all.failovers,
			off ? line : "none");
	if (pattern && *pattern)
		rc = rn_stats_write(pattern, true);
	free(rn_stats.conns);
	rn_stats.conns = NULL;
	rn_stats.nconns = rn_stats.cap = 0;
	rn_stats.nports = 0;
	rn_stats.total_conns = rn_stats.dropped = 0;
	rn_stats.api = 0;
	rn_stats.nids = 0;
	pthread_mutex_unlock(&rn_stats.lock);
	return rc;
}
