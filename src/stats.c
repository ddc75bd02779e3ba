// SPDX-License-Identifier: Apache-2.0
/*
 * Counters (stats.h): per-port totals and per-connection records, collected when comms close
 * and written as JSON at the last finalize.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/log.h"
#include "railnet/stats.h"

#define RN_STATS_MAX_PORTS 256

struct rn_stats_port {
	char dev[RN_STATS_DEV_MAX];
	int port;
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
	struct rn_stats_port ports[RN_STATS_MAX_PORTS];
	int nports;
	struct rn_stats_conn *conns;
	int nconns, cap;
	uint64_t total_conns, dropped;
} rn_stats = { .lock = PTHREAD_MUTEX_INITIALIZER };

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

static int rn_stats_port_idx(const char *dev, int port)
{
	for (int i = 0; i < rn_stats.nports; i++)
		if (rn_stats.ports[i].port == port && !strcmp(rn_stats.ports[i].dev, dev))
			return i;
	if (rn_stats.nports == RN_STATS_MAX_PORTS)
		return -1;
	snprintf(rn_stats.ports[rn_stats.nports].dev, RN_STATS_DEV_MAX, "%s", dev);
	rn_stats.ports[rn_stats.nports].port = port;
	memset(&rn_stats.ports[rn_stats.nports].st, 0, sizeof(struct rn_port_counters));
	return rn_stats.nports++;
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
		int i = rn_stats_port_idx(s->port[p].dev, s->port[p].port);

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

/* JSON string body: the names here are device names and "a+b" lists; escape anyway. */
static void rn_stats_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static int rn_stats_write(const char *path)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f) {
		rc = -errno;
		RN_WARN("RAILNET_STATS=%s: cannot write the statistics: %s", path, strerror(-rc));
		return rc;
	}
	fprintf(f,
		"{\n  \"version\": 1,\n  \"connections_total\": %" PRIu64
		",\n  \"connections_not_listed\": %" PRIu64 ",\n  \"ports\": [",
		rn_stats.total_conns, rn_stats.dropped);
	for (int i = 0; i < rn_stats.nports; i++) {
		fprintf(f, "%s\n    {\"device\": ", i ? "," : "");
		rn_stats_json_str(f, rn_stats.ports[i].dev);
		fprintf(f, ", \"port\": %d, ", rn_stats.ports[i].port);
		rn_stats_json_counters(f, &rn_stats.ports[i].st);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"connections\": [");
	for (int i = 0; i < rn_stats.nconns; i++) {
		const struct rn_stats_conn *c = &rn_stats.conns[i];

		fprintf(f, "%s\n    {\"device\": ", i ? "," : "");
		rn_stats_json_str(f, c->name);
		fprintf(f, ", \"role\": \"%s\", \"qps\": %d, \"ports\": [",
			c->send ? "send" : "recv", c->nqps);
		for (int p = 0; p < c->nports; p++) {
			int k = c->port_idx[p];

			fprintf(f, "%s{\"device\": ", p ? ", " : "");
			rn_stats_json_str(f, k >= 0 ? rn_stats.ports[k].dev : "?");
			fprintf(f, ", \"port\": %d, ", k >= 0 ? rn_stats.ports[k].port : 0);
			rn_stats_json_counters(f, &c->st[p]);
			fputc('}', f);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n  ]\n}\n");
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (rc)
		RN_WARN("RAILNET_STATS=%s: writing the statistics failed: %s", path, strerror(-rc));
	return rc;
}

int rn_stats_flush(const char *path)
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
	if (path && *path)
		rc = rn_stats_write(path);
	free(rn_stats.conns);
	rn_stats.conns = NULL;
	rn_stats.nconns = rn_stats.cap = 0;
	rn_stats.nports = 0;
	rn_stats.total_conns = rn_stats.dropped = 0;
	pthread_mutex_unlock(&rn_stats.lock);
	return rc;
}
