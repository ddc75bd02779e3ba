/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-preflight (issue 19): every rail of every pair of ranks proven before the job.
 *
 * One rank per pod (or per GPU), started by mpirun. Each rank loads the plugin the way NCCL
 * does, with one device per port (RAILNET_MERGE=none), and calls each device a rail; rails
 * are matched between ranks by their position in the rank's list (the same hardware layout
 * on every node), and a rank whose rail names or count differ from rank 0's is reported.
 *
 * Schedule: a tournament (the circle method). With n ranks (n even; an odd n adds a bye),
 * n - 1 rounds, each rank in exactly one pair per round; in a round a pair tests all of its
 * rails at once. Per pair and rail, both ranks:
 *   1. connect to the partner's listener on that rail and accept the partner's connection,
 *      bounded by --timeout (an unreachable rail ends here);
 *   2. latency: the lower rank sends 8 bytes, the higher echoes them, PF_PINGS times (half
 *      the lower quartile of the round trips: a busy CPU delays single ones); timed again
 *      after the bursts, and the smaller of the two passes kept (no message crossing at
 *      all: unreachable, as RoCE connects QPs without a packet);
 *   3. send a pattern (PF_PATTERN_BYTES, seeded by round, sender and rail) and check the one
 *      received byte for byte (lost after 8-byte messages crossed: PF_LARGE_LOST, the MTU);
 *   4. bandwidth: one direction at a time (every pair's lower rank sends, a world barrier,
 *      then every higher rank), PF_BURST_MSG-byte messages, --burst-mb MiB, the sender
 *      stopping after --burst-ms; the receiver divides what arrived by the time from the
 *      half's start to its last message. A pair where either receiver got less than
 *      PF_BURST_AGAIN_OF_MEDIAN of the round's median on that rail, or of the earlier
 *      rounds' (pf_burst_again), bursts a second time, in a second pass of every pair that asks, and each cell keeps the
 *      better pass: a rank delayed once by its node's other work (pods sharing CPUs) is
 *      rarely delayed twice, a slow path is slow in both; a healthy fabric skips the pass.
 * A round is bounded: each group of 4 rails' connections, the pattern and each rail's round
 * trips take at most --timeout, each burst half at most --burst-ms x 4; rounds are separated
 * by a barrier. So a run has a bound whatever the fabric does; a healthy one takes about
 * (n - 1) x (connection + 2 x burst) for n ranks (twice the bursts in a round that has a
 * second pass); with 1000 nodes, 999 rounds
 * (docs/preflight.md has the scaling argument and the options that shorten it).
 *
 * Results: cell (a, b, rail) is what rank b measured receiving from rank a on that rail
 * (bandwidth, pattern) plus the pair's latency; rank 0 gathers them, judges (pf_judge) and
 * prints the matrices, the verdict and the exit status: 0 all good, 1 problems, 2 usage,
 * 3 could not run.
 *
 * This header and pf_core.c hold the pure parts (schedule, judging, output), without MPI or
 * the plugin, so that they are unit-tested on their own.
 */
#ifndef RAILNET_PREFLIGHT_PF_H
#define RAILNET_PREFLIGHT_PF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define PF_MAX_RAILS 32
#define PF_NAME_LEN 64
#define PF_WHY_LEN 96
#define PF_PATTERN_BYTES (256u * 1024u)
#define PF_PINGS 32
#define PF_BURST_MSG (1u << 20)
#define PF_BURST_DEPTH 4
#define PF_BURST_PASSES 2	      /* the second only for pairs that ask (phase 4) */
#define PF_BURST_AGAIN_OF_MEDIAN 0.75 /* a receiver below this share of the rail's median */

/* Thresholds of the verdict (fractions of the rail's median pair bandwidth and latency),
 * written in docs/preflight.md. */
#define PF_SLOW_OF_MEDIAN 0.70	    /* a rank: every one of its cells (or its sends, receives) */
#define PF_SLOW_PAIR_OF_MEDIAN 0.50 /* one pair alone: further off, as noise hits single pairs */
#define PF_HIGH_LAT_OF_MEDIAN 3.0
/* a pair slow (PF_SLOW_PAIR_OF_MEDIAN) on this share of its rails at once: the hosts, not a link */
#define PF_HOST_SLOW_OF_RAILS 0.75
/* and at least this much above it: retransmissions and pause frames cost milliseconds, while
 * a node whose CPUs are shared (pods of a node, busy NIC threads) delays round trips by up to
 * a scheduler tick (4 ms at HZ=250) without anything wrong with the rail */
#define PF_HIGH_LAT_MIN_US 5000.0
/* Slow links and high latency are judged on a rail with at least this many OK cells (three
 * ranks): two ranks give one pair, whose two directions are no reference for each other. */
#define PF_MIN_PEERS 6

enum pf_status {
	PF_NOT_RUN = 0, /* no round paired them (a bug), or the rail is missing on one side */
	PF_OK,		/* connected, pattern right, measured */
	PF_UNREACHABLE, /* no connection within the timeout, or connect/accept failed */
	PF_CORRUPT,	/* the pattern arrived with wrong bytes */
	PF_FAILED,	/* connected, then a transfer failed or timed out */
	PF_NO_RAIL,	/* one of the two ranks has no such rail */
	PF_LARGE_LOST,	/* 8-byte messages crossed, the pattern (PF_PATTERN_BYTES) did not */
	PF_PEER_DIED,	/* a worker of the pair died or hung mid-check (pf_rank.died says when) */
};

struct pf_rail {
	char name[PF_NAME_LEN]; /* the plugin's device name, e.g. mlx5_0 */
	int speed_mbps;		/* getProperties' speed */
	int port;
	/* what railnet's discovery chose for the port (railnet_core), "" / 0 when unknown */
	int mtu;      /* active MTU, bytes: RoCE's follows the interface's MTU */
	char gid[48]; /* the address the GID stands for (RoCE) or the GID (InfiniBand) */
	char net[48]; /* its subnet, "10.21.0.0/24": ranks of one rail share it */
};

struct pf_rank {
	char host[PF_NAME_LEN];
	int nrails;
	int err; /* != 0: this rank could not run; why says why */
	char why[PF_WHY_LEN];
	/* the round (1-based) in which this rank's worker died or hung (died_why says how): its
	 * cells from then on are PF_PEER_DIED; 0: it ran to the end. Known only at the end. */
	int died;
	char died_why[PF_WHY_LEN];
	struct pf_rail rail[PF_MAX_RAILS];
};

struct pf_cell {
	int status; /* enum pf_status */
	float gbps; /* GB/s received from the row rank (PF_OK): the better burst pass */
	int bursts; /* the burst passes the pair ran (1, or 2 with a second pass); 0 none */
	float lat_us;
	char why[PF_WHY_LEN];
};

struct pf_run {
	int nranks, nrails; /* nrails: the reference rank's */
	int ref;	    /* the reference rank: the first that could run (rails, names) */
	const struct pf_rank *ranks;
	const struct pf_cell *cells; /* [from][to][rail], nranks x nranks x nrails */
	double seconds;
	int rounds;
};

/* Rounds of the tournament for n ranks, and rank r's partner in round t (-1: a bye). */
int pf_rounds(int n);
int pf_partner(int n, int round, int rank);

static inline const struct pf_cell *pf_cell_at(const struct pf_run *r, int from, int to, int rail)
{
	return &r->cells[((size_t)from * (size_t)r->nranks + (size_t)to) * (size_t)r->nrails +
			 (size_t)rail];
}

/*
 * The verdict: one line per problem into out (each ending in '\n'), naming the ranks, their
 * hosts, the rail and the likely cause. Returns the number of problems.
 */
int pf_judge(const struct pf_run *r, char *out, size_t len);

/*
 * The second burst pass (phase 4). rx[rank * PF_MAX_RAILS + rail]: what each rank received
 * in this round's first pass, GB/s (< 0 not measured: a bye, a rail lost).
 * pf_rail_medians: per rail the median of the measured values of rows x PF_MAX_RAILS (-1
 * where none): the round's medians from rx, and the reference of the earlier rounds from
 * their medians (a round slow as a whole is then below it). scratch holds rows floats (no
 * allocation here: every rank must reach the same answer).
 * pf_burst_again: whether the pair (a, b) bursts again: a or b received below
 * PF_BURST_AGAIN_OF_MEDIAN of the larger of the round's median and the reference, on any of
 * its nr rails. Every rank decides alike from the same values.
 */
void pf_rail_medians(const float *x, int rows, float *med, float *scratch);
bool pf_burst_again(const float *rx, const float *med, const float *ref, int a, int b, int nr);
/* Of the pairs that measured bandwidth (a cell with bursts > 0 either way, any rail), how
 * many ran a second burst pass. */
void pf_count_bursts(const struct pf_run *r, int *twice, int *measured);
/* The report: per rail a matrix of GB/s (row sends, column receives), then the verdict. */
void pf_print_text(FILE *o, const struct pf_run *r, const char *problems, int nproblems);
void pf_print_json(FILE *o, const struct pf_run *r, const char *problems, int nproblems);
/* gnuplot input for the heat map: per rail the matrix of GB/s (NaN where not OK). */
void pf_print_heat(FILE *o, const struct pf_run *r);

const char *pf_status_str(int s);

#endif
