// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs-bench: the speed of softverbs itself. Two processes on this host (fork), one RC QP
 * each, the client RDMA-WRITEs to the server: bandwidth for 4 KiB..64 MiB and the message rate
 * of small writes, with a window of outstanding WRs and one signaled WR in 16. Uses a private
 * pod view and, unless SOFTVERBS_RATE is set, the rate model off. Not a test: prints a table.
 * Usage: softverbs-bench [-t seconds per size] [-w window] [-m max bytes]
 */
#include "sv_test.h"

#include <getopt.h>
#include <time.h>
#include <unistd.h>

static double opt_secs = 0.3;
static int opt_window = 64;
static size_t opt_max = 64u << 20;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes msgs of size len until opt_secs elapsed; returns messages and seconds. */
static void run_size(struct sv_ep *ep, const struct sv_ep_info *peer, size_t len, long *msgs,
		     double *secs)
{
	int window = opt_window, sig_every = 16, outstanding = 0;
	long posted = 0;
	double t0 = now_s(), t;
	struct ibv_wc wc[16];

	if (len >= (8u << 20))
		window = 8;
	if (window < sig_every)
		sig_every = window;
	for (;;) {
		while (outstanding < window) {
			int sig = (posted % sig_every) == sig_every - 1;

			sv_post_write(ep, IBV_WR_RDMA_WRITE, (uint64_t)posted, 0, len, peer, 0,
				      sig ? IBV_SEND_SIGNALED : 0, 0);
			posted++;
			outstanding++;
		}
		int n = ibv_poll_cq(ep->cq, 16, wc);

		CHECK(n >= 0);
		for (int i = 0; i < n; i++) {
			CHECK_WC(wc[i], IBV_WC_SUCCESS);
			outstanding -= sig_every;
		}
		t = now_s() - t0;
		if (t >= opt_secs && posted % sig_every == 0) {
			/* drain */
			while (outstanding > 0) {
				n = ibv_poll_cq(ep->cq, 16, wc);
				CHECK(n >= 0);
				for (int i = 0; i < n; i++) {
					CHECK_WC(wc[i], IBV_WC_SUCCESS);
					outstanding -= sig_every;
				}
			}
			break;
		}
	}
	*msgs = posted;
	*secs = now_s() - t0;
}

static void bench(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .len = opt_max, .max_send_wr = 256, .max_recv_wr = 16 };
	struct sv_ep_info me, peer;
	struct sv_ep ep;
	size_t sizes[] = {
		64, 4096, 16384, 65536, 262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20
	};

	o.dev = side ? "svdev1" : "svdev0";
	sv_ep_open(&ep, &o);
	memset(ep.buf, 1, opt_max);
	sv_ep_info(&ep, &me);
	sv_xchg(fd, &me, &peer, sizeof(me));
	sv_ep_connect(&ep, &o, &peer);
	sv_barrier(fd);
	if (side == 0) {
		printf("%12s %10s %10s %12s\n", "bytes", "msgs", "GB/s", "Mmsg/s");
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			long msgs;
			double secs;

			if (sizes[i] > opt_max)
				break;
			run_size(&ep, &peer, sizes[i], &msgs, &secs);
			printf("%12zu %10ld %10.2f %12.3f\n", sizes[i], msgs,
			       (double)msgs * (double)sizes[i] / secs / 1e9, msgs / secs / 1e6);
			fflush(stdout);
		}
	}
	sv_barrier(fd);
	sv_ep_close(&ep);
}

int main(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "t:w:m:h")) != -1) {
		switch (c) {
		case 't':
			opt_secs = atof(optarg);
			break;
		case 'w':
			opt_window = atoi(optarg);
			break;
		case 'm':
			opt_max = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-t seconds per size] [-w window] [-m max bytes]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (opt_window < 1 || opt_window > 256 || opt_max < 4096 || !(opt_secs > 0)) {
		fprintf(stderr, "-w 1..256, -m >= 4096, -t > 0\n");
		return 2;
	}
	setenv("SOFTVERBS_RATE", getenv("SOFTVERBS_RATE") ? getenv("SOFTVERBS_RATE") : "off", 1);
	sv_test_view(2, 1, 100, NULL);
	printf("softverbs-bench: one RC QP, RDMA WRITE, 2 processes, window %d, rate model %s, "
	       "path %s\n",
	       opt_window, getenv("SOFTVERBS_RATE"),
	       getenv("SOFTVERBS_VM") ? getenv("SOFTVERBS_VM") : "one-copy");
	sv_run2(bench, NULL, 600);
	return 0;
}
