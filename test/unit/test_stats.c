// SPDX-License-Identifier: Apache-2.0
/*
 * src/stats.c driven directly (rn_stats_add, rn_stats_flush), without comms: the JSON document
 * of RAILNET_STATS (`"version": 2`, totals, every counter of a port under its own key, `resent`
 * and `resend_skipped` included, names escaped), per-port totals summed over connections, the
 * 4096-connection listing limit with `connections_not_listed` and totals that still count the
 * unlisted ones, the one INFO summary line at flush (none without connections), a file that
 * cannot be written (one WARN, -errno), and that a flush forgets everything.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "railnet/stats.h"
#include "rn_test.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rn-test-stats-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/stats.json", dir);
	rn_test_log_capture();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rn_stats_flush(NULL); /* nothing left for the next group */
	unlink(path);
	rmdir(dir);
	return 0;
}

/* The whole file, NUL-terminated; the caller frees it. */
static char *slurp(const char *p)
{
	FILE *f = fopen(p, "r");
	char *buf;
	long n;

	if (!f)
		fail_msg("%s was not written", p);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The object `{"device": "<dev>", "port": <port>, ...}` starting at or after from: its text. */
static void object_at(const char *from, const char *dev, int port, char *out, size_t len)
{
	char head[128];
	const char *s, *e;

	snprintf(head, sizeof(head), "{\"device\": \"%s\", \"port\": %d, ", dev, port);
	s = strstr(from, head);
	if (!s)
		fail_msg("no %s in:\n%s", head, from);
	e = strchr(s, '}');
	assert_non_null(e);
	assert_true((size_t)(e - s) < len);
	memcpy(out, s, (size_t)(e - s) + 1);
	out[e - s + 1] = '\0';
}

/* obj has `"key": value` (each counter under its own name, whatever else is listed). */
static void has_counter(const char *obj, const char *key, uint64_t value)
{
	char want[96];

	snprintf(want, sizeof(want), "\"%s\": %" PRIu64 ",", key, value);
	if (!strstr(obj, want)) {
		snprintf(want, sizeof(want), "\"%s\": %" PRIu64 "}", key, value);
		if (!strstr(obj, want))
			fail_msg("\"%s\": %" PRIu64 " not in %s", key, value, obj);
	}
}

/* A comm on nports ports (devs[i], ports[i]); counters derived from base, each distinct. */
static void comm(struct rn_stats_comm *s, const char *name, bool send, int nports,
		 const char *const *devs, const int *ports, uint64_t base)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->send = send;
	s->nports = nports;
	s->nqps = 2 * nports;
	for (int i = 0; i < nports; i++) {
		struct rn_port_counters *c = &s->port[i].c;
		uint64_t b = base + 100 * (uint64_t)i;

		snprintf(s->port[i].dev, sizeof(s->port[i].dev), "%s", devs[i]);
		s->port[i].port = ports[i];
		c->tx_bytes = b + 1;
		c->tx_msgs = b + 2;
		c->rx_parts = b + 3;
		c->cqes = b + 4;
		c->errors = b + 5;
		c->failovers = b + 6;
		c->resent = b + 7;
		c->resend_skipped = b + 8;
	}
}

static void has_counters(const char *obj, uint64_t b)
{
	has_counter(obj, "tx_bytes", b + 1);
	has_counter(obj, "tx_msgs", b + 2);
	has_counter(obj, "rx_parts", b + 3);
	has_counter(obj, "completions", b + 4);
	has_counter(obj, "errors", b + 5);
	has_counter(obj, "failovers", b + 6);
	has_counter(obj, "resent", b + 7);
	has_counter(obj, "resend_skipped", b + 8);
}

/* obj holds the sums of two has_counters sets (base b1 and b2). */
static void has_sums(const char *obj, uint64_t b1, uint64_t b2)
{
	static const char *const keys[8] = {
		"tx_bytes", "tx_msgs",	 "rx_parts", "completions",
		"errors",   "failovers", "resent",   "resend_skipped"
	};

	for (int k = 0; k < 8; k++)
		has_counter(obj, keys[k], b1 + b2 + 2 * (uint64_t)(k + 1));
}

/*
 * Two comms sharing mlx5_0 port 1: the JSON's header, each port's totals summed over both,
 * each connection's own counters under the same keys, and the INFO line with the sums.
 */
static void test_document(void **state)
{
	static const char *const devs[2] = { "mlx5_0", "mlx5_1" };
	static const int ports[2] = { 1, 1 };
	struct rn_stats_comm a, b;
	char obj[512], *json, *conns;

	(void)state;
	rn_test_log_reset();
	comm(&a, "mlx5_0+mlx5_1", true, 2, devs, ports, 1000);
	comm(&b, "mlx5_0", false, 1, devs, ports, 5000);
	rn_stats_add(&a);
	rn_stats_add(&b);
	assert_int_equal(rn_test_log.infos, 0); /* nothing is said before the flush */
	assert_int_equal(rn_stats_flush(path), 0);
	json = slurp(path);
	assert_non_null(strstr(json, "{\n  \"version\": 2,\n"));
	assert_non_null(strstr(json, "\"connections_total\": 2,"));
	assert_non_null(strstr(json, "\"connections_not_listed\": 0,"));
	conns = strstr(json, "\"connections\": [");
	assert_non_null(conns);
	/* ports: mlx5_0:1 carries both comms' counters, mlx5_1:1 only a's second port */
	object_at(json, "mlx5_0", 1, obj, sizeof(obj));
	assert_true(strstr(json, obj) < conns);
	has_sums(obj, 1000, 5000);
	assert_int_equal(count(json, "{\"device\": \"mlx5_0\", \"port\": 1, "), 3);
	object_at(json, "mlx5_1", 1, obj, sizeof(obj));
	assert_true(strstr(json, obj) < conns);
	has_counters(obj, 1100);
	/* connections, in the order they closed */
	assert_non_null(strstr(conns, "{\"device\": \"mlx5_0+mlx5_1\", \"role\": \"send\", "
				      "\"qps\": 4, \"ports\": [{\"device\": \"mlx5_0\""));
	assert_non_null(strstr(conns, "{\"device\": \"mlx5_0\", \"role\": \"recv\", \"qps\": 2, "));
	assert_true(strstr(conns, "\"role\": \"send\"") < strstr(conns, "\"role\": \"recv\""));
	object_at(conns, "mlx5_0", 1, obj, sizeof(obj));
	has_counters(obj, 1000);
	object_at(strstr(conns, "\"role\": \"recv\""), "mlx5_0", 1, obj, sizeof(obj));
	has_counters(obj, 5000);
	object_at(conns, "mlx5_1", 1, obj, sizeof(obj));
	has_counters(obj, 1100);
	assert_true(json[strlen(json) - 2] == '}' && json[strlen(json) - 1] == '\n');
	free(json);
	/* one INFO line: connections, bytes, completions, errors, failovers, bytes per port */
	assert_int_equal(rn_test_log.infos, 1);
	if (!rn_test_log_contains("stats: 2 connection(s), 7103 bytes sent, 7112 completions, "
				  "7115 errors, 7118 failovers; per port: mlx5_0:1 6002 B, "
				  "mlx5_1:1 1101 B"))
		fail_msg("unexpected stats line: %s", rn_test_log.all);
	RN_ASSERT_NO_WARN();
}

/*
 * More connections than are listed: the first 4096 appear in "connections", the rest only
 * in "connections_total", "connections_not_listed", the port totals and the INFO line.
 */
static void test_listing_limit(void **state)
{
	enum { EXTRA = 7, N = RN_STATS_MAX_CONNS + EXTRA };
	static const char *const devs[1] = { "d0" };
	static const int ports[1] = { 2 };
	struct rn_stats_comm c;
	uint64_t bytes = 0, cqes = 0;
	char want[256], obj[512], *json, *conns;

	(void)state;
	rn_test_log_reset();
	for (int i = 0; i < N; i++) {
		comm(&c, "d0", i % 2 == 0, 1, devs, ports, (uint64_t)i * 10);
		bytes += c.port[0].c.tx_bytes;
		cqes += c.port[0].c.cqes;
		rn_stats_add(&c);
	}
	assert_int_equal(rn_stats_flush(path), 0);
	json = slurp(path);
	snprintf(want, sizeof(want), "\"connections_total\": %d,", N);
	assert_non_null(strstr(json, want));
	snprintf(want, sizeof(want), "\"connections_not_listed\": %d,", EXTRA);
	assert_non_null(strstr(json, want));
	conns = strstr(json, "\"connections\": [");
	assert_non_null(conns);
	assert_int_equal(count(conns, "\"role\": "), RN_STATS_MAX_CONNS);
	/* the listed ones are the first: the last listed has base 4095 x 10, none after it */
	snprintf(want, sizeof(want), "\"tx_bytes\": %d,", (RN_STATS_MAX_CONNS - 1) * 10 + 1);
	assert_non_null(strstr(conns, want));
	snprintf(want, sizeof(want), "\"tx_bytes\": %d,", RN_STATS_MAX_CONNS * 10 + 1);
	assert_null(strstr(conns, want));
	/* the port's totals count every connection, listed or not */
	object_at(json, "d0", 2, obj, sizeof(obj));
	assert_true(strstr(json, obj) < conns);
	has_counter(obj, "tx_bytes", bytes);
	has_counter(obj, "completions", cqes);
	free(json);
	snprintf(want, sizeof(want),
		 "stats: %d connection(s), %" PRIu64 " bytes sent, %" PRIu64 " completions, ", N,
		 bytes, cqes);
	if (!rn_test_log_contains(want))
		fail_msg("no \"%s\" in %s", want, rn_test_log.all);
	assert_int_equal(rn_test_log.infos, 1);
	RN_ASSERT_NO_WARN();
}

/*
 * A flush forgets everything: the next flush without connections logs nothing and writes an
 * empty document, which still says who wrote it (host, pid, time, final).
 */
static void test_flush_forgets(void **state)
{
	static const char *const devs[1] = { "d1" };
	static const int ports[1] = { 1 };
	struct rn_stats_comm c;
	char *json;

	(void)state;
	rn_test_log_reset();
	comm(&c, "d1", true, 1, devs, ports, 10);
	rn_stats_add(&c);
	assert_int_equal(rn_stats_flush(NULL), 0); /* no path: the line only */
	assert_int_equal(rn_test_log.infos, 1);
	assert_true(rn_test_log_contains("stats: 1 connection(s), 11 bytes sent"));
	rn_test_log_reset();
	assert_int_equal(rn_stats_flush(path), 0);
	assert_int_equal(rn_test_log.infos, 0);
	json = slurp(path);
	{
		char host[256], want[300];

		assert_int_equal(gethostname(host, sizeof(host)), 0);
		snprintf(want, sizeof(want), "\"host\": \"%s\",\n  \"pid\": %d,\n  \"time\": \"",
			 host, (int)getpid());
		assert_non_null(strstr(json, want));
	}
	assert_non_null(strstr(json, "{\n  \"version\": 2,\n"));
	assert_non_null(strstr(json,
			       "\"final\": true,\n  \"nccl_net_api\": 0,\n  \"comm_ids\": [],\n"
			       "  \"connections_total\": 0,\n  \"connections_open\": 0,\n"
			       "  \"connections_not_listed\": 0,\n  \"ports\": [\n  ],\n"
			       "  \"connections\": [\n  ]\n}\n"));
	free(json);
	assert_int_equal(rn_stats_flush(""), 0); /* "" is no file, as NULL */
	RN_ASSERT_NO_WARN();
}

/* Names are JSON strings: quotes, backslashes and control characters are escaped. */
static void test_escaping(void **state)
{
	static const char *const devs[1] = { "we\"ird\\dev" };
	static const int ports[1] = { 1 };
	struct rn_stats_comm c;
	char *json;

	(void)state;
	rn_test_log_reset();
	comm(&c, "a\tb", true, 1, devs, ports, 0);
	rn_stats_add(&c);
	assert_int_equal(rn_stats_flush(path), 0);
	json = slurp(path);
	assert_non_null(strstr(json, "{\"device\": \"we\\\"ird\\\\dev\", \"port\": 1, "));
	assert_non_null(strstr(json, "{\"device\": \"a\\u0009b\", \"role\": \"send\""));
	free(json);
	RN_ASSERT_NO_WARN();
}

/* A file that cannot be written: -errno and one WARN naming RAILNET_STATS and the path. */
static void test_unwritable(void **state)
{
	static const char *const devs[1] = { "d2" };
	static const int ports[1] = { 1 };
	struct rn_stats_comm c;
	char bad[160];

	(void)state;
	rn_test_log_reset();
	snprintf(bad, sizeof(bad), "%s/no-such-dir/stats.json", dir);
	comm(&c, "d2", false, 1, devs, ports, 0);
	rn_stats_add(&c);
	assert_int_equal(rn_stats_flush(bad), -ENOENT);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, "RAILNET_STATS="));
	assert_non_null(strstr(rn_test_log.last_warn, bad));
	assert_int_equal(rn_test_log.infos, 1); /* the summary line is still logged */
	assert_int_equal(access(bad, F_OK), -1);
}

/* %h, %p and %% in RAILNET_STATS; any other '%' and an overlong result are refused. */
static void test_expand(void **state)
{
	char out[64], want[300], host[256];

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_int_equal(rn_stats_expand("/x/%h-%p-100%%.json", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "/x/%s-%d-100%%.json", host, (int)getpid());
	assert_string_equal(out, want);
	assert_int_equal(rn_stats_expand("plain", out, sizeof(out)), 0);
	assert_string_equal(out, "plain");
	assert_int_equal(rn_stats_expand("a%x", out, sizeof(out)), -EINVAL);
	assert_int_equal(rn_stats_expand("a%", out, sizeof(out)), -EINVAL);
	assert_int_equal(rn_stats_expand("%p%p%p%p%p%p%p%p%p%p%p%p", out, 16), -ENAMETOOLONG);
}

/* A path ending in .prom: Prometheus' text format, every port counter with its labels. */
static void test_prometheus(void **state)
{
	static const char *const devs[2] = { "mlx5_0", "mlx5_1" };
	static const int ports[2] = { 1, 1 };
	struct rn_stats_comm c;
	char prom[160], want[400], host[256], *text;

	(void)state;
	rn_test_log_reset();
	snprintf(prom, sizeof(prom), "%s/r.prom", dir);
	comm(&c, "mlx5_0+mlx5_1", true, 2, devs, ports, 1000);
	c.port[1].rail = 7;
	rn_stats_add(&c);
	assert_int_equal(rn_stats_flush(prom), 0);
	text = slurp(prom);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_non_null(strstr(text, "# HELP railnet_tx_bytes_total "));
	assert_non_null(strstr(text, "# TYPE railnet_tx_bytes_total counter\n"));
	snprintf(want, sizeof(want),
		 "railnet_tx_bytes_total{host=\"%s\",pid=\"%d\",device=\"mlx5_1\",port=\"1\","
		 "rail=\"7\"} 1101\n",
		 host, (int)getpid());
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want),
		 "railnet_failovers_total{host=\"%s\",pid=\"%d\",device=\"mlx5_0\",port=\"1\","
		 "rail=\"0\"} 1006\n",
		 host, (int)getpid());
	assert_non_null(strstr(text, want));
	assert_int_equal(count(text, "# TYPE "), 7);
	assert_null(strstr(text, "{\n")); /* not JSON */
	free(text);
	unlink(prom);
	RN_ASSERT_NO_WARN();
}

static uint64_t live_bytes;

static void live_snap(const void *arg, struct rn_stats_comm *out)
{
	static const char *const devs[1] = { "live0" };
	static const int ports[1] = { 2 };

	(void)arg;
	comm(out, "live0", false, 1, devs, ports, 0);
	out->port[0].c.tx_bytes = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

/*
 * RAILNET_STATS_INTERVAL: the snapshot thread writes the file while a comm lives, with the
 * live comm's counters (marked open, final false); the last flush after it closed says final.
 */
static void test_interval_snapshots(void **state)
{
	struct rn_stats_live l = { .snap = live_snap };
	char *json = NULL;

	(void)state;
	rn_test_log_reset();
	unlink(path);
	__atomic_store_n(&live_bytes, 4242, __ATOMIC_RELAXED);
	rn_stats_live_add(&l);
	assert_int_equal(rn_stats_start(path, 1), 0);
	for (int i = 0; i < 50 && access(path, R_OK); i++)
		usleep(100 * 1000); /* the first snapshot comes after 1 s; a 5 s guard */
	rn_stats_stop();
	rn_stats_live_del(&l);
	json = slurp(path);
	assert_non_null(strstr(json, "\"final\": false,"));
	assert_non_null(strstr(json, "\"connections_open\": 1,"));
	assert_non_null(strstr(
		json, "{\"device\": \"live0\", \"port\": 2, \"rail\": 0, \"tx_bytes\": 4242,"));
	assert_non_null(strstr(json, "\"open\": true}"));
	free(json);
	assert_int_equal(rn_stats_flush(path), 0);
	json = slurp(path);
	assert_non_null(strstr(json, "\"final\": true,"));
	assert_non_null(strstr(json, "\"connections_open\": 0,"));
	free(json);
	RN_ASSERT_NO_WARN();
}

/*
 * Two ranks (processes) with one RAILNET_STATS pattern: %p gives each its own file, each with
 * its own pid and counters.
 */
static void test_two_ranks_one_pattern(void **state)
{
	static const char *const devs[1] = { "d" };
	static const int ports[1] = { 1 };
	char pattern[160], mine[200], theirs[200], *json;
	struct rn_stats_comm c;
	int status;
	pid_t child;

	(void)state;
	rn_test_log_reset();
	snprintf(pattern, sizeof(pattern), "%s/rank-%%p.json", dir);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		comm(&c, "d", true, 1, devs, ports, 500);
		rn_stats_add(&c);
		_exit(rn_stats_flush(pattern) ? 1 : 0);
	}
	comm(&c, "d", true, 1, devs, ports, 900);
	rn_stats_add(&c);
	assert_int_equal(rn_stats_flush(pattern), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(mine, sizeof(mine), "%s/rank-%d.json", dir, (int)getpid());
	snprintf(theirs, sizeof(theirs), "%s/rank-%d.json", dir, (int)child);
	json = slurp(mine);
	assert_non_null(strstr(json, "\"tx_bytes\": 901,"));
	free(json);
	json = slurp(theirs);
	assert_non_null(strstr(json, "\"tx_bytes\": 501,"));
	{
		char want[64];

		snprintf(want, sizeof(want), "\"pid\": %d,", (int)child);
		assert_non_null(strstr(json, want));
	}
	free(json);
	unlink(mine);
	unlink(theirs);
	RN_ASSERT_NO_WARN();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_listing_limit),
		cmocka_unit_test(test_flush_forgets),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_unwritable),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_prometheus),
		cmocka_unit_test(test_interval_snapshots),
		cmocka_unit_test(test_two_ranks_one_pattern),
	};

	return cmocka_run_group_tests_name("stats", tests, setup, teardown);
}
