/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --nccl mode: NCCL collectives on GPUs, one communicator rank per GPU (one MPI rank per GPU,
 * or -g GPUs per process driven from one thread inside NCCL groups). Owns device choice,
 * communicators, streams, buffers and their registration, the NCCL calls, and completion
 * waits with -T and asynchronous-error polling. Without the CUDA runtime and NCCL at build
 * time (RB_HAVE_NCCL undefined) the mode exists only to say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rb.h"

#ifndef RB_HAVE_NCCL

const struct rb_mode_ops rb_mode_nccl = {
	.name = "nccl",
	.missing = "--nccl mode was not built: the CUDA runtime and NCCL were not found at build "
		   "time (set CUDA_HOME and NCCL_HOME and rebuild)",
};

#else

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 12, 0)
#error "railnet-bench --nccl needs NCCL >= 2.12 headers"
#endif

#define RB_MAX_DEV 1024

struct rb_nccl {
	int ndev;
	int dev[RB_MAX_DEV];
	cudaStream_t stream[RB_MAX_DEV];
	ncclComm_t comm[RB_MAX_DEV];
	void *send[RB_MAX_DEV], *recv[RB_MAX_DEV];
	void *sreg[RB_MAX_DEV], *rreg[RB_MAX_DEV];
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
	ncclWindow_t swin[RB_MAX_DEV], rwin[RB_MAX_DEV];
#endif
	ncclRedOp_t mulsum[RB_MAX_DEV][RB_TYPE_NR];
	unsigned char mulsum_made[RB_MAX_DEV][RB_TYPE_NR];
	size_t bytes;
	int memalloc; /* buffers came from ncclMemAlloc */
	char host[64];
};

static struct rb_nccl rb_nccl_state;

static int rb_nccl_fail(const char *what, int line, const char *detail)
{
	fprintf(stderr, "%s: Test NCCL failure mode_nccl.c:%d %s '%s'\n", rb_nccl_state.host, line,
		what, detail);
	return RB_EXIT_RUNTIME;
}

#define RB_NCCL(call)                                                                          \
	({                                                                                     \
		ncclResult_t r_ = (call);                                                      \
		r_ == ncclSuccess ? 0 : rb_nccl_fail(#call, __LINE__, ncclGetErrorString(r_)); \
	})

#define RB_CUDA(call)                                                                          \
	({                                                                                     \
		cudaError_t e_ = (call);                                                       \
		e_ == cudaSuccess ? 0 : rb_nccl_fail(#call, __LINE__, cudaGetErrorString(e_)); \
	})

static int rb_nccl_validate(const struct rb_args *a, char *err, size_t errlen)
{
	if (a->local_register == 2 && NCCL_VERSION_CODE < NCCL_VERSION(2, 27, 0)) {
		snprintf(err, errlen,
			 "-R 2: symmetric windows need NCCL >= 2.27 headers; this "
			 "build has %d",
			 NCCL_VERSION_CODE);
		return -1;
	}
	if (a->cta_policy >= 0 && NCCL_VERSION_CODE < NCCL_VERSION(2, 27, 0)) {
		snprintf(err, errlen,
			 "-x %d: the CTA policy needs NCCL >= 2.27 headers; this "
			 "build has %d",
			 a->cta_policy, NCCL_VERSION_CODE);
		return -1;
	}
	if (a->memory) {
		snprintf(err, errlen, "-M %d: the GPU memory report is not supported yet; use -M 0",
			 a->memory);
		return -1;
	}
	return 0;
}

static ncclDataType_t rb_nccl_type(enum rb_type t)
{
	return (ncclDataType_t)t; /* enum rb_type follows ncclDataType_t */
}

static int rb_nccl_open(struct rb_ctx *c)
{
	struct rb_nccl *s = &rb_nccl_state;
	const struct rb_args *a = c->args;
	int ngpu = 0, first = 0, rc = 0;
	const char *envdev = getenv("NCCL_TESTS_DEVICE");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	cudaError_t ce;
	ncclUniqueId id;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;

	c->mode = s;
	s->ndev = a->ngpus;
	gethostname(s->host, sizeof(s->host) - 1);
	ce = cudaGetDeviceCount(&ngpu);
	if (ce != cudaSuccess || ngpu == 0) {
		if (c->local_rank == 0)
			fprintf(stderr,
				"railnet-bench: --nccl needs a GPU, and host %s has none usable "
				"(cudaGetDeviceCount: %s, %d devices; CUDA_VISIBLE_DEVICES=%s); "
				"nothing measured (exit 77)\n",
				s->host, ce == cudaSuccess ? "no error" : cudaGetErrorString(ce),
				ngpu, cvd ? cvd : "(unset)");
		return RB_EXIT_SKIP;
	}
	if (envdev && *envdev)
		first = atoi(envdev);
	if (first < 0 || first + (c->local_rank + 1) * a->ngpus > ngpu) {
		if (c->local_rank == c->local_size - 1)
			fprintf(stderr,
				"railnet-bench: host %s: %d processes x -g %d GPUs%s need %d GPUs, "
				"but CUDA sees %d (CUDA_VISIBLE_DEVICES=%s); launch fewer ranks "
				"per "
				"host or lower -g\n",
				s->host, c->local_size, a->ngpus,
				first ? " from NCCL_TESTS_DEVICE" : "",
				first + c->local_size * a->ngpus, ngpu, cvd ? cvd : "(unset)");
		return RB_EXIT_USAGE;
	}
	for (int i = 0; i < s->ndev; i++)
		s->dev[i] = first + c->local_rank * a->ngpus + i;

	if (c->wrank == 0 && (rc = RB_NCCL(ncclGetUniqueId(&id))))
		return rc;
	MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
	if (a->cta_policy >= 0)
		cfg.CTAPolicy = a->cta_policy;
#endif
	for (int i = 0; i < s->ndev && !rc; i++) {
		rc = RB_CUDA(cudaSetDevice(s->dev[i]));
		if (!rc && !a->stream_null)
			rc = RB_CUDA(
				cudaStreamCreateWithFlags(&s->stream[i], cudaStreamNonBlocking));
	}
	if (rc)
		return rc;
	rc = RB_NCCL(ncclGroupStart());
	for (int i = 0; i < s->ndev && !rc; i++) {
		rc = RB_CUDA(cudaSetDevice(s->dev[i]));
		if (!rc)
			rc = RB_NCCL(ncclCommInitRankConfig(&s->comm[i], c->nranks, id,
							    c->wrank * s->ndev + i, &cfg));
	}
	if (!rc)
		rc = RB_NCCL(ncclGroupEnd());
	return rc;
}

static size_t rb_nccl_max_bytes(struct rb_ctx *c)
{
	struct rb_nccl *s = c->mode;
	size_t freeb = 0, total = 0, gib = 1ULL << 30;

	if (cudaSetDevice(s->dev[0]) != cudaSuccess ||
	    cudaMemGetInfo(&freeb, &total) != cudaSuccess || total <= gib)
		return 0;
	/* send + receive (+ the check's staging in nccl-tests' accounting) and 1 GiB for NCCL */
	return (total - gib) / (c->args->check ? 3 : 2);
}

static int rb_nccl_alloc(struct rb_ctx *c, size_t bytes)
{
	struct rb_nccl *s = c->mode;
	int rc = 0;

	s->bytes = bytes;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
	s->memalloc = 1;
#endif
	for (int i = 0; i < s->ndev && !rc; i++) {
		rc = RB_CUDA(cudaSetDevice(s->dev[i]));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
		if (!rc)
			rc = RB_NCCL(ncclMemAlloc(&s->send[i], bytes));
		if (!rc)
			rc = RB_NCCL(ncclMemAlloc(&s->recv[i], bytes));
#else
		if (!rc)
			rc = RB_CUDA(cudaMalloc(&s->send[i], bytes));
		if (!rc)
			rc = RB_CUDA(cudaMalloc(&s->recv[i], bytes));
#endif
		if (!rc && c->args->local_register == 1) {
			rc = RB_NCCL(ncclCommRegister(s->comm[i], s->send[i], bytes, &s->sreg[i]));
			if (!rc)
				rc = RB_NCCL(ncclCommRegister(s->comm[i], s->recv[i], bytes,
							      &s->rreg[i]));
		}
	}
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
	if (!rc && c->args->local_register == 2) {
		/* Window registration is collective: every rank, all local comms in one group. */
		rc = RB_NCCL(ncclGroupStart());
		for (int i = 0; i < s->ndev && !rc; i++) {
			rc = RB_NCCL(ncclCommWindowRegister(s->comm[i], s->send[i], bytes,
							    &s->swin[i], NCCL_WIN_COLL_SYMMETRIC));
			if (!rc)
				rc = RB_NCCL(ncclCommWindowRegister(s->comm[i], s->recv[i], bytes,
								    &s->rwin[i],
								    NCCL_WIN_COLL_SYMMETRIC));
		}
		if (!rc)
			rc = RB_NCCL(ncclGroupEnd());
	}
#endif
	return rc;
}

static int rb_nccl_group_start(struct rb_ctx *c)
{
	return RB_NCCL(ncclGroupStart());
}

static int rb_nccl_group_end(struct rb_ctx *c)
{
	return RB_NCCL(ncclGroupEnd());
}

static int rb_nccl_redop(struct rb_nccl *s, int i, enum rb_type t, enum rb_op op, ncclRedOp_t *out)
{
	if (op != RB_OP_MULSUM) {
		*out = (ncclRedOp_t)op; /* ncclSum..ncclAvg share enum rb_op's values */
		return 0;
	}
	if (!s->mulsum_made[i][t]) {
		uint64_t scalar = rb_data_encode(t, RB_MULSUM_SCALAR);
		int rc =
			RB_NCCL(ncclRedOpCreatePreMulSum(&s->mulsum[i][t], &scalar, rb_nccl_type(t),
							 ncclScalarHostImmediate, s->comm[i]));
		if (rc)
			return rc;
		s->mulsum_made[i][t] = 1;
	}
	*out = s->mulsum[i][t];
	return 0;
}

static int rb_nccl_start(struct rb_ctx *c, int i, size_t send_off, int send_in_recv,
			 size_t recv_off, const struct rb_layout *l, enum rb_type t, enum rb_op op,
			 int root)
{
	struct rb_nccl *s = c->mode;
	const char *sb = (const char *)(send_in_recv ? s->recv[i] : s->send[i]) + send_off;
	char *rb = (char *)s->recv[i] + recv_off;
	ncclDataType_t dt = rb_nccl_type(t);
	ncclComm_t comm = s->comm[i];
	cudaStream_t st = s->stream[i];
	ncclRedOp_t rop = ncclSum;
	int rank = c->wrank * s->ndev + i, n = c->nranks, rc = 0;

	if (rb_colls[c->args->coll].reduces && (rc = rb_nccl_redop(s, i, t, op, &rop)))
		return rc;
	switch (c->args->coll) {
	case RB_COLL_ALL_REDUCE:
		return RB_NCCL(ncclAllReduce(sb, rb, l->count, dt, rop, comm, st));
	case RB_COLL_ALL_GATHER:
		return RB_NCCL(ncclAllGather(sb, rb, l->count, dt, comm, st));
	case RB_COLL_REDUCE_SCATTER:
		return RB_NCCL(ncclReduceScatter(sb, rb, l->count, dt, rop, comm, st));
	case RB_COLL_BROADCAST:
		return RB_NCCL(ncclBroadcast(sb, rb, l->count, dt, root, comm, st));
	case RB_COLL_REDUCE:
		return RB_NCCL(ncclReduce(sb, rb, l->count, dt, rop, root, comm, st));
	case RB_COLL_ALLTOALL: {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
		return RB_NCCL(ncclAlltoAll(sb, rb, l->count, dt, comm, st));
#else
		size_t chunk = l->count * rb_types[t].size;

		rc = RB_NCCL(ncclGroupStart());
		for (int p = 0; p < n && !rc; p++) {
			rc = RB_NCCL(ncclSend(sb + (size_t)p * chunk, l->count, dt, p, comm, st));
			if (!rc)
				rc = RB_NCCL(ncclRecv(rb + (size_t)p * chunk, l->count, dt, p, comm,
						      st));
		}
		return rc ? rc : RB_NCCL(ncclGroupEnd());
#endif
	}
	case RB_COLL_SENDRECV:
	default:
		rc = RB_NCCL(ncclGroupStart());
		if (!rc)
			rc = RB_NCCL(ncclSend(sb, l->count, dt, (rank + 1) % n, comm, st));
		if (!rc)
			rc = RB_NCCL(ncclRecv(rb, l->count, dt, (rank - 1 + n) % n, comm, st));
		return rc ? rc : RB_NCCL(ncclGroupEnd());
	}
}

static double rb_nccl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Poll every stream: completion, NCCL's asynchronous errors and the -T deadline. */
static int rb_nccl_wait(struct rb_ctx *c)
{
	struct rb_nccl *s = c->mode;
	int timeout = c->args->timeout_s;
	double deadline = timeout ? rb_nccl_now() + timeout : 0;

	for (int i = 0; i < s->ndev; i++) {
		/* The legacy default stream is per device: query it on its own device. */
		if (c->args->stream_null && cudaSetDevice(s->dev[i]) != cudaSuccess)
			return rb_nccl_fail("cudaSetDevice", __LINE__, "failed");
		for (;;) {
			cudaError_t e = cudaStreamQuery(s->stream[i]);
			ncclResult_t ar = ncclSuccess;

			if (e == cudaSuccess)
				break;
			if (e != cudaErrorNotReady)
				return rb_nccl_fail("cudaStreamQuery", __LINE__,
						    cudaGetErrorString(e));
			if (ncclCommGetAsyncError(s->comm[i], &ar) == ncclSuccess &&
			    ar != ncclSuccess && ar != ncclInProgress)
				return rb_nccl_fail("ncclCommGetAsyncError", __LINE__,
						    ncclGetErrorString(ar));
			if (deadline && rb_nccl_now() > deadline) {
				fprintf(stderr,
					"%s: Test timeout (%ds) on GPU %d: aborting the "
					"communicators\n",
					s->host, timeout, s->dev[i]);
				for (int k = 0; k < s->ndev; k++) {
					ncclCommAbort(s->comm[k]);
					s->comm[k] = NULL;
				}
				return RB_EXIT_TIMEOUT;
			}
		}
	}
	return 0;
}

/*
 * Staging copies for the #wrong check go through the device's own stream and finish before
 * returning: a plain cudaMemcpy/cudaMemset runs on the legacy stream, which does not order
 * against our non-blocking streams, and from pageable memory may return before the DMA lands.
 */
static int rb_nccl_stage(struct rb_nccl *s, int i, void *dst, const void *src, size_t n,
			 enum cudaMemcpyKind kind)
{
	int rc = RB_CUDA(cudaSetDevice(s->dev[i]));

	if (!rc)
		rc = RB_CUDA(cudaMemcpyAsync(dst, src, n, kind, s->stream[i]));
	return rc ? rc : RB_CUDA(cudaStreamSynchronize(s->stream[i]));
}

static int rb_nccl_put(struct rb_ctx *c, int i, int which, size_t off, const void *src, size_t n)
{
	struct rb_nccl *s = c->mode;
	char *dst = (char *)(which ? s->recv[i] : s->send[i]) + off;

	return rb_nccl_stage(s, i, dst, src, n, cudaMemcpyHostToDevice);
}

static int rb_nccl_get(struct rb_ctx *c, int i, int which, size_t off, void *dst, size_t n)
{
	struct rb_nccl *s = c->mode;
	const char *src = (const char *)(which ? s->recv[i] : s->send[i]) + off;

	return rb_nccl_stage(s, i, dst, src, n, cudaMemcpyDeviceToHost);
}

static int rb_nccl_zero(struct rb_ctx *c, int i, int which, size_t n)
{
	struct rb_nccl *s = c->mode;
	int rc = RB_CUDA(cudaSetDevice(s->dev[i]));

	if (n > s->bytes)
		n = s->bytes;
	if (!rc)
		rc = RB_CUDA(cudaMemsetAsync(which ? s->recv[i] : s->send[i], 0, n, s->stream[i]));
	return rc ? rc : RB_CUDA(cudaStreamSynchronize(s->stream[i]));
}

static const char *rb_nccl_unsupported(struct rb_ctx *c, enum rb_type t, enum rb_op op)
{
	/* Measured with NCCL 2.28: avg and PreMulSum on fp8 return ncclInvalidArgument when the
	 * communicator has a single rank. */
	if (c->nranks == 1 && (t == RB_F8E4M3 || t == RB_F8E5M2) &&
	    (op == RB_OP_AVG || op == RB_OP_MULSUM) && rb_colls[c->args->coll].reduces)
		return "NCCL refuses avg and mulsum on fp8 with a single rank";
	return NULL;
}

static void rb_nccl_describe(struct rb_ctx *c, int i, struct rb_device *d)
{
	struct rb_nccl *s = c->mode;
	struct cudaDeviceProp p;

	d->device = s->dev[i];
	d->group = 0;
	if (cudaGetDeviceProperties(&p, s->dev[i]) != cudaSuccess) {
		snprintf(d->name, sizeof(d->name), "(unknown)");
		return;
	}
	snprintf(d->pci, sizeof(d->pci), "%04x:%02x:%02x", (unsigned)p.pciDomainID,
		 (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
	snprintf(d->name, sizeof(d->name), "%.95s", p.name);
}

static void rb_nccl_versions(struct rb_ctx *c, struct rb_run_info *r)
{
	int v = 0;

	r->nccl_headers = NCCL_VERSION_CODE;
	if (ncclGetVersion(&v) == ncclSuccess)
		r->nccl_library = v;
	if (cudaRuntimeGetVersion(&v) == cudaSuccess)
		r->cuda_runtime = v;
	if (cudaDriverGetVersion(&v) == cudaSuccess)
		r->cuda_driver = v;
}

static const char *rb_nccl_last_error(struct rb_ctx *c)
{
	return ncclGetLastError(NULL);
}

static void rb_nccl_close(struct rb_ctx *c)
{
	struct rb_nccl *s = &rb_nccl_state;

	for (int i = 0; i < s->ndev; i++) {
		if (!s->comm[i])
			continue;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
		if (s->swin[i])
			ncclCommWindowDeregister(s->comm[i], s->swin[i]);
		if (s->rwin[i])
			ncclCommWindowDeregister(s->comm[i], s->rwin[i]);
#endif
		if (s->sreg[i])
			ncclCommDeregister(s->comm[i], s->sreg[i]);
		if (s->rreg[i])
			ncclCommDeregister(s->comm[i], s->rreg[i]);
		for (int t = 0; t < RB_TYPE_NR; t++)
			if (s->mulsum_made[i][t])
				ncclRedOpDestroy(s->mulsum[i][t], s->comm[i]);
	}
	for (int i = 0; i < s->ndev; i++) {
		if (s->comm[i])
			ncclCommDestroy(s->comm[i]);
		s->comm[i] = NULL;
		cudaSetDevice(s->dev[i]);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
		if (s->memalloc) {
			ncclMemFree(s->send[i]);
			ncclMemFree(s->recv[i]);
		}
#endif
		if (!s->memalloc) {
			cudaFree(s->send[i]);
			cudaFree(s->recv[i]);
		}
		s->send[i] = s->recv[i] = NULL;
		if (s->stream[i])
			cudaStreamDestroy(s->stream[i]);
		s->stream[i] = NULL;
	}
	s->ndev = 0;
}

const struct rb_mode_ops rb_mode_nccl = {
	.name = "nccl",
	.missing = NULL,
	.validate = rb_nccl_validate,
	.open = rb_nccl_open,
	.max_bytes = rb_nccl_max_bytes,
	.alloc = rb_nccl_alloc,
	.group_start = rb_nccl_group_start,
	.group_end = rb_nccl_group_end,
	.start = rb_nccl_start,
	.wait = rb_nccl_wait,
	.put = rb_nccl_put,
	.get = rb_nccl_get,
	.zero = rb_nccl_zero,
	.unsupported = rb_nccl_unsupported,
	.describe = rb_nccl_describe,
	.versions = rb_nccl_versions,
	.last_error = rb_nccl_last_error,
	.close = rb_nccl_close,
};

#endif
