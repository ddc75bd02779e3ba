// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-preflight's pure parts (tools/preflight/pf_core.c): the tournament schedule meets
 * every pair exactly once with each rank in one pair per round, for 2 to 33 ranks; the verdict
 * names exactly the planted fault (a rank's port unreachable, a half-speed port, one pair cut,
 * a corrupt pattern, a rank with another rail set, a rank that could not run) and nothing on a
 * healthy run; the JSON is one document.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pf.h"

static void test_schedule(void **state)
{
	(void)state;
	for (int n = 2; n <= 33; n++) {
		int rounds = pf_rounds(n);
		int *met = calloc((size_t)n * (size_t)n, sizeof(int));

		assert_non_null(met);
		assert_int_equal(rounds, n % 2 ? n : n - 1);
		for (int t = 0; t < rounds; t++)
			for (int r = 0; r < n; r++) {
				int p = pf_partner(n, t, r);

				if (p < 0)
					continue;
				assert_int_not_equal(p, r);
				assert_int_equal(pf_partner(n, t, p), r); /* symmetric */
				met[r * n + p]++;
			}
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++)
				assert_int_equal(met[a * n + b], a == b ? 0 : 1);
		/* an odd count gives each rank exactly one bye */
		for (int r = 0; n % 2 && r < n; r++) {
			int byes = 0;

			for (int t = 0; t < rounds; t++)
				byes += pf_partner(n, t, r) < 0;
			assert_int_equal(byes, 1);
		}
		free(met);
	}
	assert_int_equal(pf_rounds(1), 0);
	assert_int_equal(pf_partner(4, 3, 0), -1); /* no such round */
	assert_int_equal(pf_partner(4, 0, 4), -1); /* no such rank */
}

#define N 4
#define R 2

static struct pf_rank ranks[N];
static struct pf_cell cells[N * N * R];

static struct pf_run healthy(void)
{
	memset(ranks, 0, sizeof(ranks));
	memset(cells, 0, sizeof(cells));
	for (int x = 0; x < N; x++) {
		snprintf(ranks[x].host, sizeof(ranks[x].host), "pod%d", x);
		ranks[x].nrails = R;
		for (int r = 0; r < R; r++) {
			snprintf(ranks[x].rail[r].name, sizeof(ranks[x].rail[r].name), "mlx5_%d",
				 r);
			ranks[x].rail[r].speed_mbps = 100000;
			ranks[x].rail[r].mtu = 4096;
			snprintf(ranks[x].rail[r].gid, sizeof(ranks[x].rail[r].gid), "10.2%d.1.%d",
				 r, x + 1);
			snprintf(ranks[x].rail[r].net, sizeof(ranks[x].rail[r].net),
				 "10.2%d.0.0/16", r);
		}
	}
	for (int a = 0; a < N; a++)
		for (int b = 0; b < N; b++)
			for (int r = 0; r < R; r++) {
				struct pf_cell *c = &cells[(a * N + b) * R + r];

				if (a == b)
					continue;
				c->status = PF_OK;
				c->gbps = 1.0f + 0.01f * (float)((a + b + r) % 3);
				c->lat_us = 20.0f + (float)((a * b) % 4);
			}
	return (struct pf_run){
		.nranks = N, .nrails = R, .ranks = ranks, .cells = cells, .rounds = pf_rounds(N)
	};
}

static struct pf_cell *at(int a, int b, int r)
{
	return &cells[(a * N + b) * R + r];
}

static int judge(struct pf_run *run, char *buf)
{
	return pf_judge(run, buf, 8192);
}

static void test_healthy(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	assert_int_equal(judge(&run, buf), 0);
	assert_string_equal(buf, "");
}

static void test_port_down(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	for (int y = 0; y < N; y++) {
		if (y == 2)
			continue;
		at(2, y, 1)->status = at(y, 2, 1)->status = PF_UNREACHABLE;
	}
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(
		strstr(buf, "rank 2 (pod2) rail 1 (mlx5_1): unreachable from every other rank"));
}

static void test_slow_port(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	for (int y = 0; y < N; y++)
		if (y != 3)
			at(3, y, 0)->gbps = at(y, 3, 0)->gbps = 0.5f;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 3 (pod3) rail 0 (mlx5_0): slow link"));
}

static void test_one_pair_cut(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	at(0, 1, 1)->status = at(1, 0, 1)->status = PF_UNREACHABLE;
	snprintf(at(0, 1, 1)->why, PF_WHY_LEN, "no connection within the timeout");
	assert_int_equal(judge(&run, buf), 1); /* the pair said once, no rank blamed */
	assert_non_null(
		strstr(buf, "rail 1 (mlx5_1): rank 0 (pod0) and rank 1 (pod1) cannot reach"));
}

static void test_slow_sender(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	for (int y = 0; y < N; y++)
		if (y != 1)
			at(1, y, 1)->gbps = 0.5f; /* only its sends: a token bucket on transmit */
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 1 (pod1) rail 1 (mlx5_1): slow link sending: 0.50 GB/s"));
}

/* two ranks: one pair, no peers to compare with; only hard failures count */
static void test_two_ranks(void **state)
{
	struct pf_run run = healthy();
	struct pf_cell two[2 * 2 * R];
	char buf[8192];

	(void)state;
	memset(two, 0, sizeof(two));
	for (int r = 0; r < R; r++) {
		two[(0 * 2 + 1) * R + r] =
			(struct pf_cell){ .status = PF_OK, .gbps = 1.0f, .lat_us = 20 };
		two[(1 * 2 + 0) * R + r] =
			(struct pf_cell){ .status = PF_OK, .gbps = 0.3f, .lat_us = 20 };
	}
	run.nranks = 2;
	run.cells = two;
	assert_int_equal(judge(&run, buf), 0);
	two[(1 * 2 + 0) * R + 1].status = PF_CORRUPT;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "data from rank 1 (pod1) to rank 0 (pod0) arrived corrupted"));
}

static void test_latency(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	at(0, 2, 0)->lat_us = at(2, 0, 0)->lat_us = 2000; /* a scheduler tick: not judged */
	assert_int_equal(judge(&run, buf), 0);
	at(0, 2, 0)->lat_us = at(2, 0, 0)->lat_us = 9000; /* retransmissions: the pair, once */
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(
		strstr(buf, "rail 0 (mlx5_0): rank 0 (pod0) and rank 2 (pod2): high latency"));
}

static void test_corrupt(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	at(1, 2, 0)->status = PF_CORRUPT;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "data from rank 1 (pod1) to rank 2 (pod2) arrived corrupted"));
}

static void test_disjoint(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	/* the pods of one node hold other devices for the same rails: no problem */
	snprintf(ranks[3].rail[1].name, PF_NAME_LEN, "mlx5_7");
	assert_int_equal(judge(&run, buf), 0);
	/* a rank with one rail fewer (a port down, another rail set) */
	ranks[3].nrails = 1;
	for (int y = 0; y < 3; y++)
		at(3, y, 1)->status = at(y, 3, 1)->status = PF_NO_RAIL;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 3 (pod3) has 1 rail(s), rank 0 (pod0) has 2"));
	assert_non_null(strstr(buf, "different rail sets"));
}

static void test_rank_err(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	ranks[1].err = 1;
	snprintf(ranks[1].why, PF_WHY_LEN, "no RDMA port usable here");
	for (int y = 0; y < N; y++)
		for (int r = 0; r < R; r++)
			if (y != 1)
				at(1, y, r)->status = at(y, 1, r)->status = PF_UNREACHABLE;
	assert_int_equal(judge(&run, buf), 1); /* said once, not again per rail and pair */
	assert_non_null(strstr(buf, "rank 1 (pod1) could not take part: no RDMA port usable here"));
}

/* rank 0 could not run: rank 1 is the reference for rails and names */
static void test_rank0_err(void **state)
{
	struct pf_run run = healthy();
	char buf[8192], *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memset(&ranks[0].rail, 0, sizeof(ranks[0].rail));
	ranks[0].nrails = 0;
	ranks[0].err = 1;
	snprintf(ranks[0].why, PF_WHY_LEN, "the plugin's init failed");
	for (int y = 1; y < N; y++)
		for (int r = 0; r < R; r++)
			at(0, y, r)->status = at(y, 0, r)->status = PF_UNREACHABLE;
	run.ref = 1;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 0 (pod0) could not take part"));
	f = open_memstream(&out, &len);
	assert_non_null(f);
	pf_print_text(f, &run, buf, 1);
	fclose(f);
	assert_non_null(strstr(out, "rail 1: mlx5_1"));
	free(out);
}

static void test_json(void **state)
{
	struct pf_run run = healthy();
	char buf[8192], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int np;

	(void)state;
	at(0, 1, 1)->status = at(1, 0, 1)->status = PF_UNREACHABLE;
	np = judge(&run, buf);
	assert_non_null(f);
	pf_print_json(f, &run, buf, np);
	fclose(f);
	assert_non_null(strstr(out, "\"fit\":false"));
	assert_non_null(strstr(out, "\"status\":\"unreachable\""));
	assert_non_null(strstr(out, "\"problems\":[\"rail 1"));
	assert_non_null(strstr(out, "\"rank_rails\":[[{\"name\":\"mlx5_0\",\"port\":0,\"mtu\":4096,"
				    "\"gid\":\"10.20.1.1\",\"net\":\"10.20.0.0/16\"}"));
	assert_int_equal(out[strlen(out) - 2], '}');
	free(out);
}

/*
 * The second burst pass counted by pair: a pair is counted once however many of its rails
 * and directions ran it; a pair that measured nothing (a bye, unreachable) is not counted.
 */
static void test_bursts(void **state)
{
	struct pf_run run = healthy();
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	int twice, measured;

	(void)state;
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
		cells[i].bursts = cells[i].status == PF_OK;
	at(0, 2, 1)->bursts = 2; /* pair 0-2: one direction on one rail */
	at(3, 1, 0)->bursts = at(1, 3, 0)->bursts = at(1, 3, 1)->bursts = 2; /* pair 1-3 */
	for (int r = 0; r < R; r++) /* pair 0-1 never measured bandwidth */
		at(0, 1, r)->bursts = at(1, 0, r)->bursts = 0;
	pf_count_bursts(&run, &twice, &measured);
	assert_int_equal(twice, 2);
	assert_int_equal(measured, 5);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	pf_print_text(f, &run, "", 0);
	fclose(f);
	assert_non_null(strstr(out, "  bandwidth: 2 of 5 pair(s) burst a second time"));
	free(out);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	pf_print_json(f, &run, "", 0);
	fclose(f);
	assert_non_null(strstr(out, "{\"rail\":1,\"from\":0,\"to\":2,\"status\":\"ok\","
				    "\"gbps\":1.000,\"latency_us\":20.0,\"bursts\":2}"));
	free(out);
}

/* pf_burst_again with the round's medians of rx and the reference ref */
static bool again(const float *rx, const float *ref, int a, int b, int nr)
{
	float med[PF_MAX_RAILS], scratch[6];

	pf_rail_medians(rx, 6, med, scratch);
	return pf_burst_again(rx, med, ref, a, b, nr);
}

/*
 * The pairs of a second burst pass: a receiver under 0.75 of the rail's median (the round's,
 * or the earlier rounds' when higher), either end of the pair, any rail; unmeasured values
 * (< 0) neither count in a median nor ask; a whole round slow alike asks only against the
 * earlier rounds.
 */
static void test_burst_again(void **state)
{
	float rx[6 * PF_MAX_RAILS], none[PF_MAX_RAILS], hist[3 * PF_MAX_RAILS], ref[PF_MAX_RAILS],
		scratch[3];

	(void)state;
	for (int r = 0; r < PF_MAX_RAILS; r++)
		none[r] = -1;
	for (int x = 0; x < 6; x++)
		for (int r = 0; r < PF_MAX_RAILS; r++)
			rx[x * PF_MAX_RAILS + r] = r < 2 ? 0.60f + 0.01f * (float)x : -1;
	for (int a = 0; a < 6; a++)
		for (int b = 0; b < 6; b++)
			assert_false(a != b && again(rx, none, a, b, 2));
	rx[3 * PF_MAX_RAILS + 1] = 0.40f; /* rank 3 on rail 1: 0.40 < 0.75 x 0.615 */
	assert_true(again(rx, none, 3, 4, 2));
	assert_true(again(rx, none, 4, 3, 2)); /* either end asks */
	assert_false(again(rx, none, 0, 1, 2));
	assert_false(again(rx, none, 3, 4, 1)); /* rail 1 is not the pair's */
	rx[3 * PF_MAX_RAILS + 1] = 0.48f;	/* 0.48 > 0.75 x 0.615: not an outlier */
	assert_false(again(rx, none, 3, 4, 2));
	rx[3 * PF_MAX_RAILS + 1] = 0.0f; /* nothing arrived: measured, and slow */
	assert_true(again(rx, none, 3, 4, 2));
	rx[3 * PF_MAX_RAILS + 1] = -1; /* a rail lost: not measured, asks nothing */
	assert_false(again(rx, none, 3, 4, 2));
	for (int x = 0; x < 3; x++) /* half the ranks unmeasured: the median of the rest */
		rx[x * PF_MAX_RAILS] = -1;
	rx[5 * PF_MAX_RAILS] = 0.2f; /* against 0.63 and 0.64 */
	assert_true(again(rx, none, 5, 0, 1));
	for (int x = 0; x < 6; x++) /* a whole round slow alike */
		rx[x * PF_MAX_RAILS] = 0.2f + 0.01f * (float)x;
	assert_false(again(rx, none, 5, 0, 1));
	/* against earlier rounds of 0.60, 0.62 and one not measured: the reference 0.61 */
	for (int r = 0; r < PF_MAX_RAILS; r++) {
		hist[r] = 0.60f;
		hist[PF_MAX_RAILS + r] = 0.62f;
		hist[2 * PF_MAX_RAILS + r] = -1;
	}
	pf_rail_medians(hist, 3, ref, scratch);
	assert_true(ref[0] > 0.609f && ref[0] < 0.611f);
	assert_true(again(rx, ref, 5, 0, 1));
	pf_rail_medians(hist + 2 * PF_MAX_RAILS, 1, ref, scratch); /* none measured before */
	assert_true(ref[0] < 0);
	assert_false(again(rx, ref, 5, 0, 1));
}

/* A rank whose port is on another subnet than the rail's: unreachable, the GID the cause. */
static void test_gid_not_routable(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	snprintf(ranks[2].rail[1].gid, sizeof(ranks[2].rail[1].gid), "10.99.1.3");
	snprintf(ranks[2].rail[1].net, sizeof(ranks[2].rail[1].net), "10.99.0.0/16");
	for (int y = 0; y < N; y++)
		if (y != 2)
			at(2, y, 1)->status = at(y, 2, 1)->status = PF_UNREACHABLE;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 2 (pod2) rail 1 (mlx5_1): unreachable from every other "
				    "rank: GID not routable: its GID 10.99.1.3 is on 10.99.0.0/16 "
				    "while the rail's other ranks are on 10.21.0.0/16"));
	/* the same subnet everywhere: not the GID, the default cause */
	run = healthy();
	for (int y = 0; y < N; y++)
		if (y != 2)
			at(2, y, 1)->status = at(y, 2, 1)->status = PF_UNREACHABLE;
	assert_int_equal(judge(&run, buf), 1);
	assert_null(strstr(buf, "GID"));
	assert_non_null(strstr(buf, "its port is down"));
	/* routed rails, a subnet per rank: no rail network, so no GID claim */
	run = healthy();
	for (int x = 0; x < N; x++)
		snprintf(ranks[x].rail[1].net, sizeof(ranks[x].rail[1].net), "10.21.%d.0/24", x);
	for (int y = 0; y < N; y++)
		if (y != 2)
			at(2, y, 1)->status = at(y, 2, 1)->status = PF_UNREACHABLE;
	assert_int_equal(judge(&run, buf), 1);
	assert_null(strstr(buf, "GID"));
}

/* One pair only, on different subnets (the others route between them): a pair's GIDs. */
static void test_gid_pair(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	snprintf(ranks[1].rail[0].gid, sizeof(ranks[1].rail[0].gid), "10.98.1.2");
	snprintf(ranks[1].rail[0].net, sizeof(ranks[1].rail[0].net), "10.98.0.0/16");
	at(0, 1, 0)->status = at(1, 0, 0)->status = PF_UNREACHABLE;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rail 0 (mlx5_0): rank 0 (pod0) and rank 1 (pod1) cannot "
				    "reach each other"));
	assert_non_null(strstr(buf, "GID not routable: 10.20.1.1 on 10.20.0.0/16 and 10.98.1.2 "
				    "on 10.98.0.0/16"));
}

/* A port at another MTU: named, even though every transfer worked. */
static void test_mtu_mismatch(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	ranks[3].rail[0].mtu = 1024;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 3 (pod3) rail 0 (mlx5_0): MTU mismatch: its port's MTU "
				    "is 1024, the rail's other ports have 4096"));
	/* unknown MTUs (0) are no mismatch */
	run = healthy();
	ranks[3].rail[0].mtu = 0;
	assert_int_equal(judge(&run, buf), 0);
}

/* 8-byte messages crossed, the pattern did not: the MTU on the path, per rank and per pair. */
static void test_large_lost(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	for (int y = 0; y < N; y++)
		if (y != 1)
			at(1, y, 1)->status = at(y, 1, 1)->status = PF_LARGE_LOST;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 1 (pod1) rail 1 (mlx5_1): large messages with every "
				    "other rank are lost while 8-byte ones cross: an MTU mismatch "
				    "on its path"));
	assert_non_null(strstr(buf, "its packets are 4156 bytes"));
	run = healthy();
	at(0, 2, 0)->status = PF_LARGE_LOST;
	snprintf(at(0, 2, 0)->why, PF_WHY_LEN, "8-byte messages crossed");
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rail 0 (mlx5_0): rank 0 (pod0) and rank 2 (pod2): large "
				    "messages are lost while 8-byte ones cross (8-byte messages "
				    "crossed): an MTU mismatch on the path between them"));
}

/* A pair slow on every rail at once: the two hosts, said once (not once per rail). */
static void test_host_slow(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	at(0, 2, 0)->gbps = 0.3f;
	at(0, 2, 1)->gbps = 0.3f;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(
		strstr(buf, "rank 0 (pod0) to rank 2 (pod2): slow on 2 of 2 rails at once"));
	assert_non_null(strstr(buf, "the two hosts during their round"));
	/* one rail only: that rail's pair */
	run = healthy();
	at(0, 2, 1)->gbps = 0.3f;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rail 1 (mlx5_1): rank 0 (pod0) to rank 2 (pod2): slow"));
}

/* A worker that died in round 2: said once; its died cells accuse no one else. */
static void test_died(void **state)
{
	struct pf_run run = healthy();
	char buf[8192];

	(void)state;
	ranks[2].died = 2;
	snprintf(ranks[2].died_why, PF_WHY_LEN, "was killed by signal 9");
	for (int y = 0; y < N; y++)
		for (int r = 0; y != 2 && y != 3 && r < R; r++)
			at(2, y, r)->status = at(y, 2, r)->status = PF_PEER_DIED;
	assert_int_equal(judge(&run, buf), 1);
	assert_non_null(strstr(buf, "rank 2 (pod2): its preflight worker was killed by signal 9 "
				    "in round 2"));
	{
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		assert_non_null(f);
		pf_print_json(f, &run, buf, 1);
		fclose(f);
		assert_non_null(strstr(out, "\"workers_died\":[{\"rank\":2,\"round\":2,\"how\":"
					    "\"was killed by signal 9\"}]"));
		assert_non_null(strstr(out, "\"status\":\"died\""));
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),     cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_port_down),    cmocka_unit_test(test_slow_port),
		cmocka_unit_test(test_one_pair_cut), cmocka_unit_test(test_slow_sender),
		cmocka_unit_test(test_two_ranks),    cmocka_unit_test(test_latency),
		cmocka_unit_test(test_corrupt),	     cmocka_unit_test(test_disjoint),
		cmocka_unit_test(test_rank_err),     cmocka_unit_test(test_rank0_err),
		cmocka_unit_test(test_json),	     cmocka_unit_test(test_gid_not_routable),
		cmocka_unit_test(test_gid_pair),     cmocka_unit_test(test_mtu_mismatch),
		cmocka_unit_test(test_large_lost),   cmocka_unit_test(test_died),
		cmocka_unit_test(test_host_slow),    cmocka_unit_test(test_bursts),
		cmocka_unit_test(test_burst_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
