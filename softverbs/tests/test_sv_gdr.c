// SPDX-License-Identifier: Apache-2.0
/*
 * softverbs' GDR mode (GPUDirect RDMA emulated) on the fake CUDA driver (fake_cuda.c, loaded
 * with SOFTVERBS_CUDA_LIB), between two processes: registration of device memory (peer memory
 * and dma-buf) and its refusals; RDMA WRITE, WRITE_WITH_IMM, SEND and READ into and out of GPU
 * memory, multi-chunk, byte for byte as "the GPU" sees it; the ordering: in strict order the
 * data is visible when the completion is, in relaxed order only after a read of the GPU memory
 * (NCCL's flush), so a missing flush is caught, and two NICs of a process share one DMA
 * queue per GPU (two_nics); a driver that gives no stream (no_stream); a relaxed burst through the pinned bounce buffer. ctest runs the data cases on the one-copy path
 * and with SOFTVERBS_VM=off (stream path). The fake's device memory is PROT_NONE: a direct CPU
 * access by softverbs would crash the test.
 */
#include "sv_test.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static void *(*fc_alloc)(size_t);
static int (*fc_peek)(const void *, void *, size_t);
static int (*fc_poke)(void *, const void *, size_t);
static int (*fc_dmabuf)(void);
static int (*fc_pending)(void);
static int (*fc_pinned_copies)(void);
static int (*fc_pinned_reads)(void);

static void load_fake(void)
{
	const char *p = getenv("SOFTVERBS_CUDA_LIB");
	void *h;

	if (!p || !(h = dlopen(p, RTLD_NOW))) {
		fprintf(stderr, "SKIP: SOFTVERBS_CUDA_LIB must name the fake CUDA library\n");
		exit(77);
	}
	*(void **)&fc_alloc = dlsym(h, "fake_cuda_alloc");
	*(void **)&fc_peek = dlsym(h, "fake_cuda_peek");
	*(void **)&fc_poke = dlsym(h, "fake_cuda_poke");
	*(void **)&fc_dmabuf = dlsym(h, "fake_cuda_dmabuf");
	*(void **)&fc_pending = dlsym(h, "fake_cuda_pending");
	*(void **)&fc_pinned_copies = dlsym(h, "fake_cuda_pinned_copies");
	*(void **)&fc_pinned_reads = dlsym(h, "fake_cuda_pinned_reads");
	CHECK(fc_alloc && fc_peek && fc_poke && fc_dmabuf && fc_pending);
}

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(seed + i * 13 + (i >> 10));
}

static void check_fill(const char *p, size_t n, unsigned seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(seed + i * 13 + (i >> 10))) {
			fprintf(stderr, "%s: byte %zu: 0x%02x, want 0x%02x\n", what, i,
				(unsigned char)p[i], (unsigned char)(seed + i * 13 + (i >> 10)));
			exit(1);
		}
}

/* What the GPU sees at dev, checked against the pattern. */
static void check_gpu(const void *dev, size_t n, unsigned seed, const char *what)
{
	char *tmp = malloc(n);

	CHECK(tmp);
	CHECK_EQ(fc_peek(dev, tmp, n), 0);
	check_fill(tmp, n, seed, what);
	free(tmp);
}

#define GLEN (3u << 20) /* several stream chunks and bounce rounds */

struct gpu_region {
	char *dev;
	struct ibv_mr *mr;
	uint64_t addr;
	uint32_t rkey;
};

static void gpu_region(struct sv_ep *ep, struct gpu_region *g, bool dmabuf)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	g->dev = fc_alloc(GLEN);
	CHECK(g->dev);
	if (dmabuf) {
		int fd = fc_dmabuf();

		CHECK(fd >= 0);
		g->mr = ibv_reg_dmabuf_mr(ep->pd, 0, GLEN, (uintptr_t)g->dev, fd, access);
		close(fd); /* as NCCL does: the registration does not keep it */
	} else {
		g->mr = ibv_reg_mr(ep->pd, g->dev, GLEN, access);
	}
	CHECK(g->mr);
	g->addr = (uintptr_t)g->dev;
	g->rkey = g->mr->rkey;
}

static void post(struct sv_ep *ep, enum ibv_wr_opcode op, uint64_t id, void *addr, size_t len,
		 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)len, lkey };
	struct ibv_send_wr wr = { .wr_id = id,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(imm) },
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK_EQ(ibv_post_send(ep->qp, &wr, &bad), 0);
}

static void recv_into(struct sv_ep *ep, uint64_t id, void *addr, size_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)len, lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0 }, *bad;

	CHECK_EQ(ibv_post_recv(ep->qp, &wr, &bad), 0);
}

static void one_done(struct sv_ep *ep, uint64_t id)
{
	struct ibv_wc wc;

	CHECK_EQ(sv_poll(ep->cq, &wc, 1, 20000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, id);
}

/*
 * Side 0 (host and GPU memory) and side 1 (GPU memory registered as peer memory or dma-buf):
 * host -> GPU by WRITE_WITH_IMM, GPU -> host by WRITE, GPU -> GPU by READ, host -> GPU by SEND.
 * In strict order every byte is in the GPU when its completion is polled.
 */
static void data_body(int side, int fd, void *arg)
{
	bool dmabuf = arg != NULL;
	struct sv_ep_opts o = { .len = GLEN };
	struct sv_ep_info peer;
	struct gpu_region mine, theirs;
	struct sv_ep ep;

	load_fake();
	sv_ep_pair(side, fd, &ep, &o, &peer);
	gpu_region(&ep, &mine, dmabuf && side == 1);
	sv_xchg(fd, &mine, &theirs, sizeof(mine));
	if (side == 1) {
		recv_into(&ep, 10, NULL, 0, 0);
		recv_into(&ep, 11, mine.dev + 4096, GLEN - 4096, mine.mr->lkey);
	}
	sv_barrier(fd);
	if (side == 0) {
		/* host -> GPU */
		fill(ep.buf, GLEN, 1);
		post(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 1, ep.buf, GLEN, ep.mr->lkey, theirs.addr,
		     theirs.rkey, 7);
		one_done(&ep, 1);
		sv_barrier(fd); /* 1: side 1 checked the GPU */
		/* GPU -> host: side 1 wrote its GPU memory as a kernel would */
		sv_barrier(fd); /* 2 */
		post(&ep, IBV_WR_RDMA_READ, 2, ep.buf, GLEN, ep.mr->lkey, theirs.addr, theirs.rkey,
		     0);
		one_done(&ep, 2);
		check_fill(ep.buf, GLEN, 2, "READ of the peer's GPU into host memory");
		/* GPU -> GPU by READ, then GPU -> host by WRITE */
		post(&ep, IBV_WR_RDMA_READ, 3, mine.dev, GLEN, mine.mr->lkey, theirs.addr,
		     theirs.rkey, 0);
		one_done(&ep, 3);
		check_gpu(mine.dev, GLEN, 2, "READ of the peer's GPU into this GPU");
		post(&ep, IBV_WR_RDMA_WRITE, 4, mine.dev, GLEN, mine.mr->lkey, peer.addr, peer.rkey,
		     0);
		one_done(&ep, 4);
		/* host -> GPU by SEND into a receive scattered to GPU memory */
		fill(ep.buf, 100000, 3);
		post(&ep, IBV_WR_SEND, 5, ep.buf, 100000, ep.mr->lkey, 0, 0, 0);
		one_done(&ep, 5);
		sv_barrier(fd); /* 3 */
	} else {
		struct ibv_wc wc;

		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 20000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 10);
		CHECK_EQ(wc.byte_len, GLEN);
		check_gpu(mine.dev, GLEN, 1, "WRITE_WITH_IMM into GPU memory, at its completion");
		sv_barrier(fd);	       /* 1 */
		fill(ep.buf, GLEN, 0); /* scratch */
		{
			char *tmp = malloc(GLEN);

			CHECK(tmp);
			fill(tmp, GLEN, 2);
			CHECK_EQ(fc_poke(mine.dev, tmp, GLEN), 0);
			free(tmp);
		}
		sv_barrier(fd); /* 2 */
		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 20000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 11);
		CHECK_EQ(wc.byte_len, 100000);
		check_gpu(mine.dev + 4096, 100000, 3, "SEND into GPU memory, at its completion");
		sv_barrier(fd); /* 3 */
		check_fill(ep.buf, GLEN, 2, "WRITE from the peer's GPU into host memory");
	}
	sv_barrier(fd);
	CHECK_EQ(ibv_dereg_mr(mine.mr), 0);
	sv_ep_close(&ep);
}

static void t_data(void)
{
	sv_run2(data_body, NULL, 60);
}

static void t_data_dmabuf(void)
{
	static char dmabuf[] = "dmabuf";

	sv_run2(data_body, dmabuf, 60);
}

/*
 * Relaxed order (SOFTVERBS_GDR_ORDER=relaxed in ctest): the completion of a WRITE into GPU
 * memory does not make it visible; a READ of that GPU memory (the flush) does.
 */
static void relaxed_body(int side, int fd, void *arg)
{
	struct sv_ep_opts o = { .len = GLEN };
	struct sv_ep_info peer;
	struct gpu_region mine, theirs;
	struct sv_ep ep;

	(void)arg;
	load_fake();
	sv_ep_pair(side, fd, &ep, &o, &peer);
	gpu_region(&ep, &mine, false);
	sv_xchg(fd, &mine, &theirs, sizeof(mine));
	if (side == 1)
		recv_into(&ep, 10, NULL, 0, 0);
	sv_barrier(fd);
	if (side == 0) {
		fill(ep.buf, 65536, 4);
		post(&ep, IBV_WR_RDMA_WRITE_WITH_IMM, 1, ep.buf, 65536, ep.mr->lkey, theirs.addr,
		     theirs.rkey, 1);
		one_done(&ep, 1);
		sv_barrier(fd); /* 1: side 1 saw stale memory */
		/* the flush: a one-byte READ of the GPU memory */
		post(&ep, IBV_WR_RDMA_READ, 2, ep.buf + 100000, 1, ep.mr->lkey, theirs.addr,
		     theirs.rkey, 0);
		one_done(&ep, 2);
		sv_barrier(fd); /* 2 */
	} else {
		struct ibv_wc wc;
		char first[16], zero[16] = { 0 };

		CHECK_EQ(sv_poll(ep.cq, &wc, 1, 20000), 1);
		CHECK_WC(wc, IBV_WC_SUCCESS);
		CHECK(fc_pending() > 0);
		CHECK_EQ(fc_peek(mine.dev, first, sizeof(first)), 0);
		if (memcmp(first, zero, sizeof(zero))) {
			fprintf(stderr, "relaxed order: the data was visible before any flush\n");
			exit(1);
		}
		sv_barrier(fd); /* 1 */
		sv_barrier(fd); /* 2 */
		CHECK_EQ(fc_pending(), 0);
		check_gpu(mine.dev, 65536, 4, "WRITE into GPU memory after the flush READ");
	}
	sv_barrier(fd);
	CHECK_EQ(ibv_dereg_mr(mine.mr), 0);
	sv_ep_close(&ep);
}

static void t_relaxed(void)
{
	sv_run2(relaxed_body, NULL, 60);
}

/* An endpoint on device dev, connected to the peer's (opened by the other side in step). */
static void ep_on(int fd, struct sv_ep *ep, const char *dev, struct sv_ep_info *peer)
{
	struct sv_ep_opts o = { .len = GLEN, .dev = dev };
	struct sv_ep_info me;

	sv_ep_open(ep, &o);
	sv_ep_info(ep, &me);
	sv_xchg(fd, &me, peer, sizeof(me));
	sv_ep_connect(ep, &o, peer);
	sv_barrier(fd);
}

/* 1 when the first bytes of dev still read as zero (nothing landed there). */
static bool stale(const void *dev)
{
	char first[16], zero[16] = { 0 };

	CHECK_EQ(fc_peek(dev, first, sizeof(first)), 0);
	return !memcmp(first, zero, sizeof(zero));
}

/*
 * Two NICs into one GPU: every NIC of the process goes through one DMA queue (a CUDA stream
 * per GPU; sv.h says why). Relaxed order: a flush READ through one NIC makes both NICs'
 * earlier writes visible (one queue: they were before it in order); nothing is visible
 * before a flush. Strict order (.strict): each NIC's completion waited for its own copy. Side 1's NICs are svdev1 and svdev3 (peers svdev0 and
 * svdev2); side 0 writes 64 KiB through each, then (relaxed) flushes through one, then the
 * other.
 */
static void two_nics_body(int side, int fd, void *arg)
{
	struct sv_ep_info peer[2];
	struct gpu_region mine[2], theirs[2];
	struct sv_ep ep[2];
	const char *order = getenv("SOFTVERBS_GDR_ORDER");
	bool strict = !order || strcmp(order, "relaxed");

	(void)arg;
	load_fake();
	ep_on(fd, &ep[0], side ? "svdev1" : "svdev0", &peer[0]);
	ep_on(fd, &ep[1], side ? "svdev3" : "svdev2", &peer[1]);
	for (int i = 0; i < 2; i++)
		gpu_region(&ep[i], &mine[i], false);
	sv_xchg(fd, mine, theirs, sizeof(mine));
	if (side == 1)
		for (int i = 0; i < 2; i++)
			recv_into(&ep[i], 10 + i, NULL, 0, 0);
	sv_barrier(fd);
	if (side == 0) {
		for (int i = 0; i < 2; i++) {
			fill(ep[i].buf, 65536, 20 + i);
			post(&ep[i], IBV_WR_RDMA_WRITE_WITH_IMM, 1, ep[i].buf, 65536,
			     ep[i].mr->lkey, theirs[i].addr, theirs[i].rkey, 1);
			one_done(&ep[i], 1);
		}
		sv_barrier(fd); /* 1: side 1 saw both stale (strict order: both landed) */
		for (int i = 0; i < 2 && !strict; i++) {
			post(&ep[i], IBV_WR_RDMA_READ, 2, ep[i].buf + 100000, 1, ep[i].mr->lkey,
			     theirs[i].addr, theirs[i].rkey, 0);
			one_done(&ep[i], 2);
			sv_barrier(fd); /* 2, 4: flushed */
			sv_barrier(fd); /* 3, 5: side 1 looked */
		}
	} else {
		for (int i = 0; i < 2; i++) {
			struct ibv_wc wc;

			CHECK_EQ(sv_poll(ep[i].cq, &wc, 1, 20000), 1);
			CHECK_WC(wc, IBV_WC_SUCCESS);
			CHECK_EQ(wc.wr_id, 10 + i);
		}
		if (strict) {
			/* each NIC's completion waited for that NIC's own copy */
			check_gpu(mine[0].dev, 65536, 20, "first NIC's WRITE at its completion");
			check_gpu(mine[1].dev, 65536, 21, "second NIC's WRITE at its completion");
			CHECK_EQ(fc_pending(), 0);
		} else if (!stale(mine[0].dev) || !stale(mine[1].dev)) {
			fprintf(stderr, "relaxed order: data visible before any flush\n");
			exit(1);
		}
		sv_barrier(fd); /* 1 */
		if (strict)
			goto done;
		sv_barrier(fd); /* 2: flushed through the first NIC only */
		check_gpu(mine[0].dev, 65536, 20, "first NIC's WRITE after its flush READ");
		check_gpu(mine[1].dev, 65536, 21, "second NIC's WRITE after one queue's flush");
		CHECK_EQ(fc_pending(), 0);
		sv_barrier(fd); /* 3 */
		sv_barrier(fd); /* 4: flushed through the second NIC */
		check_gpu(mine[1].dev, 65536, 21, "second NIC's WRITE after its flush READ");
		CHECK_EQ(fc_pending(), 0);
		sv_barrier(fd); /* 5 */
	}
done:
	sv_barrier(fd);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(ibv_dereg_mr(mine[i].mr), 0);
		sv_ep_close(&ep[i]);
	}
}

static void t_two_nics(void)
{
	sv_run2(two_nics_body, NULL, 60);
}

/*
 * The driver gives no stream (FAKE_CUDA_NO_STREAM=1 in ctest): GPU memory still registers, a
 * WRITE into it fails at the responder (the requester's completion is REM_OP_ERR, as a NIC
 * reports a DMA it could not make) with one line that says why, and a second WRITE through
 * another NIC of the same process fails alike without a second line; the GPU stays untouched.
 */
static void no_stream_body(int side, int fd, void *arg)
{
	struct sv_ep_info peer[2];
	struct gpu_region mine[2], theirs[2];
	struct sv_ep ep[2];
	char tmpl[] = "/tmp/sv-gdr-nostream-XXXXXX", text[4096] = "";
	int log = -1, saved = -1;

	(void)arg;
	load_fake();
	if (side == 1) {
		log = mkstemp(tmpl);
		saved = dup(2);
		CHECK(log >= 0 && saved >= 0);
		unlink(tmpl);
		CHECK(dup2(log, 2) == 2);
	}
	ep_on(fd, &ep[0], side ? "svdev1" : "svdev0", &peer[0]);
	ep_on(fd, &ep[1], side ? "svdev3" : "svdev2", &peer[1]);
	for (int i = 0; i < 2; i++)
		gpu_region(&ep[i], &mine[i], false);
	sv_xchg(fd, mine, theirs, sizeof(mine));
	if (side == 0) {
		for (int i = 0; i < 2; i++) {
			struct ibv_wc wc;

			fill(ep[i].buf, 4096, 30 + i);
			post(&ep[i], IBV_WR_RDMA_WRITE, 1, ep[i].buf, 4096, ep[i].mr->lkey,
			     theirs[i].addr, theirs[i].rkey, 0);
			CHECK_EQ(sv_poll(ep[i].cq, &wc, 1, 20000), 1);
			CHECK_EQ(wc.wr_id, 1);
			CHECK_EQ(wc.status, IBV_WC_REM_OP_ERR);
		}
	}
	sv_barrier(fd);
	if (side == 1) {
		const char *want = "GDR mode: cannot create a stream on CUDA device 0", *hit;
		ssize_t n;

		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		n = pread(log, text, sizeof(text) - 1, 0);
		close(log);
		hit = n > 0 ? strstr(text, want) : NULL;
		if (!hit || strstr(hit + 1, want)) {
			fprintf(stderr, "want one line \"%s...\", got:\n%s", want, text);
			exit(1);
		}
		CHECK(stale(mine[0].dev) && stale(mine[1].dev));
	}
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(ibv_dereg_mr(mine[i].mr), 0);
		sv_ep_close(&ep[i]);
	}
}

static void t_no_stream(void)
{
	sv_run2(no_stream_body, NULL, 60);
}

/*
 * A burst of WRITEs into GPU memory in relaxed order (nothing waits for the copies before the
 * completions): the NIC's bounce buffer is pinned, and the fake driver reads a pinned source
 * only when the copy lands, as a DMA engine does; so each message refilling the buffer before
 * the previous message's copy finished would land the wrong bytes. One flush READ, then every
 * byte is checked. Then a burst of WRITEs out of GPU memory into the peer's host memory: on
 * the one-copy path each payload is staged in the requester's ring (SOFTVERBS_GDR_STAGE; the
 * .small_stage variant makes it 1.5 MiB, so the ring wraps and a WR finds no room and goes in
 * the stream; .no_stage turns it off), and the peer checks every byte. FAKE_CUDA_PINNED=0
 * (ctest's .pageable) runs the same on pageable memory. With pinning on, the case also counts
 * the copies from and into pinned memory, so it cannot pass without exercising both.
 */
#define BURST 5

/*
 * One of the burst's pinned-memory counts (fake_cuda_pinned_*), read only when the case
 * applies: count() must be within [min, max], else the process exits 1 with "burst: N copies
 * WHAT", followed by ", want >= MIN: WHY" when there is a why.
 */
static void burst_pinned(bool applies, int (*count)(void), int min, int max, const char *what,
			 const char *why)
{
	int n;

	if (!applies)
		return;
	n = count();
	if (n >= min && n <= max)
		return;
	if (why)
		fprintf(stderr, "burst: %d copies %s, want >= %d: %s\n", n, what, min, why);
	else
		fprintf(stderr, "burst: %d copies %s\n", n, what);
	exit(1);
}

static void burst_body(int side, int fd, void *arg)
{
	static const size_t off[BURST] = { 0, 4096, 524288 + 4096, 1572864, 2621440 };
	static const size_t len[BURST] = { 4096, 524288, 1048576 - 4096, 1048576, 524288 };
	const char *vm = getenv("SOFTVERBS_VM"), *pin = getenv("FAKE_CUDA_PINNED");
	const char *stage = getenv("SOFTVERBS_GDR_STAGE");
	bool one_copy = !(vm && !strcmp(vm, "off")), pinned = !(pin && !strcmp(pin, "0"));
	bool staging = one_copy && !(stage && !strcmp(stage, "0"));
	struct sv_ep_opts o = { .len = GLEN };
	struct sv_ep_info peer;
	struct gpu_region mine, theirs;
	struct sv_ep ep;

	(void)arg;
	load_fake();
	sv_ep_pair(side, fd, &ep, &o, &peer);
	gpu_region(&ep, &mine, false);
	sv_xchg(fd, &mine, &theirs, sizeof(mine));
	sv_barrier(fd);
	if (side == 0) {
		for (int i = 0; i < BURST; i++) {
			fill(ep.buf + off[i], len[i], 20 + (unsigned)i);
			post(&ep, IBV_WR_RDMA_WRITE, (uint64_t)i + 1, ep.buf + off[i], len[i],
			     ep.mr->lkey, theirs.addr + off[i], theirs.rkey, 0);
		}
		for (int i = 0; i < BURST; i++)
			one_done(&ep, (uint64_t)i + 1);
		/* the flush: a one-byte READ of the GPU memory */
		post(&ep, IBV_WR_RDMA_READ, 99, ep.buf + GLEN - 1, 1, ep.mr->lkey, theirs.addr,
		     theirs.rkey, 0);
		one_done(&ep, 99);
		sv_barrier(fd); /* 1 */
		/* out of this GPU into the peer's host memory */
		for (int i = 0; i < BURST; i++) {
			char *tmp = malloc(len[i]);

			CHECK(tmp);
			fill(tmp, len[i], 40 + (unsigned)i);
			CHECK_EQ(fc_poke(mine.dev + off[i], tmp, len[i]), 0);
			free(tmp);
		}
		for (int i = 0; i < BURST; i++)
			post(&ep, IBV_WR_RDMA_WRITE, (uint64_t)i + 101, mine.dev + off[i], len[i],
			     mine.mr->lkey, peer.addr + off[i], peer.rkey, 0);
		for (int i = 0; i < BURST; i++)
			one_done(&ep, (uint64_t)i + 101);
		burst_pinned(staging && pinned, fc_pinned_reads, 2, INT_MAX,
			     "out of the GPU into pinned memory", "the staging ring is not used");
		burst_pinned(!staging, fc_pinned_reads, 0, 0, "into pinned memory with staging off",
			     NULL);
		sv_barrier(fd); /* 2 */
	} else {
		sv_barrier(fd); /* 1 */
		CHECK_EQ(fc_pending(), 0);
		for (int i = 0; i < BURST; i++)
			check_gpu(mine.dev + off[i], len[i], 20 + (unsigned)i,
				  "a WRITE of a relaxed burst into GPU memory, after the flush");
		burst_pinned(one_copy && pinned, fc_pinned_copies, BURST, INT_MAX,
			     "from pinned memory", "the bounce buffer is not pinned");
		sv_barrier(fd); /* 2 */
		for (int i = 0; i < BURST; i++)
			check_fill(ep.buf + off[i], len[i], 40 + (unsigned)i,
				   "a WRITE of a burst out of the peer's GPU memory");
	}
	sv_barrier(fd);
	CHECK_EQ(ibv_dereg_mr(mine.mr), 0);
	sv_ep_close(&ep);
}

static void t_burst(void)
{
	sv_run2(burst_body, NULL, 60);
}

/* Registration: what each mode accepts and refuses. SOFTVERBS_GDR is set by the case. */
static void t_register(void)
{
	const char *mode = getenv("SOFTVERBS_GDR");
	bool peermem = mode && (strstr(mode, "peermem") || strstr(mode, "both"));
	bool dmabuf = mode && (strstr(mode, "dmabuf") || strstr(mode, "both"));
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct sv_ep ep;
	struct ibv_mr *mr;
	char *dev;
	int fd;

	load_fake();
	sv_ep_open(&ep, NULL);
	dev = fc_alloc(1 << 20);
	CHECK(dev);
	/* peer memory */
	errno = 0;
	mr = ibv_reg_mr(ep.pd, dev, 1 << 20, access);
	if (peermem) {
		CHECK(mr);
		CHECK_EQ(ibv_dereg_mr(mr), 0);
		/* a range that leaves the allocation */
		errno = 0;
		CHECK(!ibv_reg_mr(ep.pd, dev + 4096, 1 << 20, access));
		CHECK_EQ(errno, EFAULT);
	} else {
		CHECK(!mr);
		CHECK_EQ(errno, EFAULT); /* a kernel without peer memory */
	}
	/* dma-buf */
	fd = fc_dmabuf();
	errno = 0;
	mr = ibv_reg_dmabuf_mr(ep.pd, 0, 1 << 20, (uintptr_t)dev, fd, access);
	if (dmabuf) {
		int null = open("/dev/null", O_RDONLY);

		CHECK(mr);
		CHECK_EQ(ibv_dereg_mr(mr), 0);
		errno = 0;
		CHECK(!ibv_reg_dmabuf_mr(ep.pd, 0, 0, 0, -1, 0)); /* the probe railnet makes */
		CHECK_EQ(errno, EBADF);
		errno = 0;
		CHECK(!ibv_reg_dmabuf_mr(ep.pd, 0, 4096, (uintptr_t)dev, null, access));
		CHECK_EQ(errno, EINVAL); /* not a dma-buf */
		errno = 0;
		CHECK(!ibv_reg_dmabuf_mr(ep.pd, 0, 4096, (uintptr_t)ep.buf, fd, access));
		CHECK_EQ(errno, EFAULT); /* host memory behind a dma-buf */
		close(null);
	} else {
		CHECK(!mr);
		CHECK_EQ(errno, EOPNOTSUPP);
	}
	close(fd);
	/* host memory is host memory in every mode */
	mr = ibv_reg_mr(ep.pd, ep.buf, 4096, access);
	CHECK(mr);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	sv_ep_close(&ep);
}

/*
 * GDR mode with no CUDA driver (SOFTVERBS_CUDA_LIB names a missing file in ctest): one line
 * says so, and host memory registers and moves as always.
 */
static void t_no_driver(void)
{
	char tmpl[] = "/tmp/sv-gdr-err-XXXXXX", text[4096] = "";
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	int fd = mkstemp(tmpl), saved = dup(2), lines = 0;
	struct sv_ep_info me;
	struct sv_ep ep;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0);
	unlink(tmpl);
	CHECK(dup2(fd, 2) == 2); /* the library's first call logs */
	sv_ep_open(&ep, NULL);
	mr = ibv_reg_mr(ep.pd, ep.buf, 4096, access);
	CHECK(mr);
	sv_ep_info(&ep, &me);
	sv_ep_connect(&ep, NULL, &me);
	memset(ep.buf, 'h', 4096);
	post(&ep, IBV_WR_RDMA_WRITE, 1, ep.buf, 4096, ep.mr->lkey, me.addr + 8192, me.rkey, 0);
	CHECK_EQ(sv_poll(ep.cq, &wc, 1, 10000), 1);
	CHECK_WC(wc, IBV_WC_SUCCESS);
	CHECK(ep.buf[8192] == 'h' && ep.buf[8192 + 4095] == 'h');
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	sv_ep_close(&ep);
	fflush(stderr);
	dup2(saved, 2);
	n = pread(fd, text, sizeof(text) - 1, 0);
	CHECK(n > 0);
	for (char *p = text; (p = strstr(p, "no CUDA driver")); p++)
		lines++;
	if (lines != 1 || !strstr(text, "GDR mode (peermem, dmabuf): no CUDA driver") ||
	    !strstr(text, "only host memory can be registered")) {
		fprintf(stderr, "want one line about the missing driver, got:\n%s", text);
		exit(1);
	}
	close(fd);
}

/*
 * SOFTVERBS_GDR_STAGE out of range or not a number (ctest sets it per variant): one line
 * naming the value and what is allowed, the default kept, and the burst's data still right.
 */
static void t_bad_stage(void)
{
	char tmpl[] = "/tmp/sv-gdr-stage-XXXXXX", text[4096] = "", want[256];
	int fd = mkstemp(tmpl), saved = dup(2);
	const char *v = getenv("SOFTVERBS_GDR_STAGE");
	struct sv_ep ep;
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0 && v);
	unlink(tmpl);
	CHECK(dup2(fd, 2) == 2); /* the library's first call logs */
	sv_ep_open(&ep, NULL);
	sv_ep_close(&ep);
	fflush(stderr);
	dup2(saved, 2);
	n = pread(fd, text, sizeof(text) - 1, 0);
	CHECK(n > 0);
	snprintf(want, sizeof(want),
		 "SOFTVERBS_GDR_STAGE=%s: want a byte count from 0 to 1073741824; 8388608", v);
	if (!strstr(text, want) || strstr(strstr(text, want) + 1, "SOFTVERBS_GDR_STAGE")) {
		fprintf(stderr, "want one line \"%s\", got:\n%s", want, text);
		exit(1);
	}
	close(fd);
	sv_run2(burst_body, NULL, 60); /* the default ring carries the burst */
}

static const struct sv_case cases[] = {
	{ "no_driver", t_no_driver },	  { "data", t_data },
	{ "data_dmabuf", t_data_dmabuf }, { "relaxed", t_relaxed },
	{ "register", t_register },	  { "burst", t_burst },
	{ "bad_stage", t_bad_stage },	  { "two_nics", t_two_nics },
	{ "no_stream", t_no_stream },	  { NULL, NULL },
};

int main(int argc, char **argv)
{
	sv_test_view(4, 1, 100, NULL); /* two NICs a side for two_nics */
	return sv_test_main(argc, argv, cases);
}
