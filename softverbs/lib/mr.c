// SPDX-License-Identifier: Apache-2.0
/*
 * Protection domains and memory regions: the per-context key table the NIC checks lkeys and
 * rkeys against (PD, bounds, access flags), and the registration verbs with rdma-core's
 * argument checks. Memory is never pinned or copied here; the NIC reads and writes it in
 * place. It must not touch QPs or CQs.
 */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define SV_ACCESS_KNOWN 0x3ff
#define SV_ACCESS_OPTIONAL 0x3ff00000

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sv_pd *pd;
	int err = sv_fail("ibv_alloc_pd");

	if (err) {
		errno = err;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = sv_ctx_of(context);
	pd->pd.context = context;
	pd->pd.handle = (uint32_t)(uintptr_t)pd;
	return &pd->pd;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sv_pd *pd = sv_container_of(ibpd, struct sv_pd, pd);

	if (__atomic_load_n(&pd->refs, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(pd);
	return 0;
}

struct sv_mr *sv_mr_lookup(struct sv_ctx *ctx, uint32_t key)
{
	uint32_t slot = key >> 8;
	struct sv_mr *mr;

	if (slot >= ctx->nmrs)
		return NULL;
	mr = ctx->mrs[slot];
	if (!mr || mr->mr.lkey != key)
		return NULL;
	return mr;
}

void *sv_mr_va(struct sv_mr *mr, uint64_t addr)
{
	return (char *)mr->mr.addr + (addr - mr->iova);
}

bool sv_mr_covers(struct sv_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->iova && len <= mr->mr.length && addr - mr->iova <= mr->mr.length - len;
}

/* Is [addr, addr+len) mapped? madvise(MADV_NORMAL) fails with ENOMEM on holes. */
static bool sv_mapped(void *addr, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(pg - 1);
	uintptr_t end = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);

	return madvise((void *)start, end - start, MADV_NORMAL) == 0;
}

/*
 * What a dma-buf registration's fd is, from its /proc/self/fd link, into buf: 0, or EBADF for
 * -1 (what a probe passes) and for an fd that is not open.
 */
static int sv_fd_target(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	if (fd < 0)
		return EBADF;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		return EBADF;
	buf[n] = 0;
	return 0;
}

/* ibv_reg_dmabuf_mr in GDR dma-buf mode is registering GPU memory on this thread */
static __thread bool sv_reg_dmabuf;
static struct ibv_mr *sv_reg_dmabuf_gpu(struct ibv_pd *pd, size_t length, uint64_t iova, int fd,
					int access);

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	struct sv_pd *pd = sv_container_of(ibpd, struct sv_pd, pd);
	struct sv_ctx *ctx = pd->ctx;
	struct sv_mr *mr;
	uint32_t slot;
	int err = sv_fail("ibv_reg_mr"), gpu, dev = -1;

	if (err)
		goto err_out;
	access &= ~SV_ACCESS_OPTIONAL; /* relaxed ordering & co: accepted, meaningless here */
	err = EINVAL;
	if (access & ~SV_ACCESS_KNOWN)
		goto err_out;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		goto err_out;
	if (!length || (uintptr_t)addr + length < (uintptr_t)addr || iova + length < iova)
		goto err_out;
	/* GPU memory: only in GDR mode (peer memory), as a kernel without it answers EFAULT */
	gpu = sv_gpu_classify(addr, length, &dev);
	if (gpu < 0 || (gpu > 0 && !(sv_gdr_mode & SV_GDR_PEERMEM) && !sv_reg_dmabuf)) {
		err = EFAULT;
		goto err_out;
	}
	if (!gpu && !sv_mapped(addr, length)) {
		err = EFAULT;
		goto err_out;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		err = ENOMEM;
		goto err_out;
	}
	pthread_mutex_lock(&ctx->mr_lock);
	for (slot = 1; slot < ctx->nmrs && ctx->mrs[slot]; slot++)
		;
	if (slot >= ctx->nmrs) {
		uint32_t n = ctx->nmrs ? ctx->nmrs * 2 : 64;
		struct sv_mr **t;

		if (n > (1u << 24) || !(t = realloc(ctx->mrs, n * sizeof(*t)))) {
			pthread_mutex_unlock(&ctx->mr_lock);
			free(mr);
			err = ENOMEM;
			goto err_out;
		}
		memset(t + ctx->nmrs, 0, (n - ctx->nmrs) * sizeof(*t));
		if (!ctx->nmrs)
			slot = 1;
		ctx->mrs = t;
		ctx->nmrs = n;
	}
	ctx->key_tag = ctx->key_tag * 1103515245u + 12345u;
	mr->slot = slot;
	mr->pd = pd;
	mr->iova = iova;
	mr->access = (int)access;
	mr->gpu = gpu > 0 ? dev : -1;
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = slot;
	mr->mr.lkey = (slot << 8) | ((ctx->key_tag >> 16) & 0xff);
	mr->mr.rkey = mr->mr.lkey;
	ctx->mrs[slot] = mr;
	__atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->mr_lock);
	return &mr->mr;

err_out:
	errno = err;
	return NULL;
}

SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/*
 * dma-buf. softverbs has no device memory, so by default it has no dma-buf support
 * (EOPNOTSUPP, what a provider without it answers). SOFTVERBS_DMABUF=memfd emulates it for
 * tests of the registration path: the fd must be a memfd (anything else: EINVAL; -1: EBADF,
 * as the kernel answers a probe) whose pages the caller has mapped at iova, and the MR covers
 * [iova, iova + length) of this process, like any other. The fd is not kept: the caller may
 * close it right after, as NCCL does.
 */
SV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	const char *e = getenv("SOFTVERBS_DMABUF");
	char target[64];
	int err;

	(void)offset;
	if ((!e || strcmp(e, "memfd")) && (sv_gdr_mode & SV_GDR_DMABUF))
		return sv_reg_dmabuf_gpu(pd, length, iova, fd, access);
	if (!e || strcmp(e, "memfd")) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	err = sv_fd_target(fd, target, sizeof(target));
	if (err) {
		errno = err;
		return NULL;
	}
	if (strncmp(target, "/memfd:", 7)) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_reg_mr_iova2(pd, (void *)(uintptr_t)iova, length, iova, (unsigned int)access);
}

/*
 * dma-buf in GDR mode: the fd must be a dma-buf (its /proc/self/fd link names "dmabuf", as the
 * kernel's dma-buf files and the CUDA driver's exports do; -1: EBADF, as a probe expects), and
 * [iova, iova + length) must be GPU memory of this process, the address the caller exported
 * it from (NCCL and railnet pass it as iova). The region is that GPU memory.
 */
static struct ibv_mr *sv_reg_dmabuf_gpu(struct ibv_pd *pd, size_t length, uint64_t iova, int fd,
					int access)
{
	char target[128];
	struct ibv_mr *mr;
	int dev;

	int err = sv_fd_target(fd, target, sizeof(target));

	if (err) {
		errno = err;
		return NULL;
	}
	if (!strstr(target, "dmabuf")) {
		errno = EINVAL;
		return NULL;
	}
	if (sv_gpu_classify((void *)(uintptr_t)iova, length, &dev) != 1) {
		errno = EFAULT;
		return NULL;
	}
	sv_reg_dmabuf = true;
	mr = ibv_reg_mr_iova2(pd, (void *)(uintptr_t)iova, length, iova, (unsigned int)access);
	sv_reg_dmabuf = false;
	return mr;
}

SV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sv_mr *mr = sv_container_of(ibmr, struct sv_mr, mr);
	struct sv_ctx *ctx = sv_ctx_of(ibmr->context);
	int err = sv_fail("ibv_dereg_mr");

	if (err)
		return err;
	/* mr_lock is held by the NIC across every copy into or out of an MR */
	pthread_mutex_lock(&ctx->mr_lock);
	ctx->mrs[mr->slot] = NULL;
	pthread_mutex_unlock(&ctx->mr_lock);
	if (mr->gpu >= 0)
		sv_gpu_fence(mr->gpu); /* no write into GPU memory after it is handed back */
	__atomic_sub_fetch(&mr->pd->refs, 1, __ATOMIC_RELEASE);
	free(mr);
	return 0;
}

/* Fork: registered memory is never pinned, so a child's copy-on-write cannot break it. */
SV_EXPORT int ibv_fork_init(void)
{
	return 0;
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

SV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

SV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}
