// SPDX-License-Identifier: Apache-2.0
/*
 * GPUDirect RDMA emulation: GPU memory as a NIC with peer memory (nvidia-peermem) or dma-buf
 * registration would reach it.
 *
 * Off unless the view's config says `gdr <peermem|dmabuf|both>` (softverbs-fabric writes it
 * for a node with gdr=) or SOFTVERBS_GDR says so. Then ibv_reg_mr on a CUDA device pointer and
 * ibv_reg_dmabuf_mr on a dma-buf fd whose iova is one register GPU memory regions; the NIC
 * moves their bytes with the CUDA driver (opened with dlopen: SOFTVERBS_CUDA_LIB, else a
 * libcuda.so.1 the process has already loaded) on one non-blocking stream per GPU, shared by
 * every device context of the process (a stream per context was tried and taken back: see
 * docs/softverbs.md, GDR mode):
 *  - writes into GPU memory (RDMA WRITE, SEND, READ responses) are asynchronous copies;
 *  - reads of GPU memory (the source of a WRITE or SEND, a READ of a GPU region) are copies on
 *    the same stream, waited for, so they see every earlier write, as a NIC's read does;
 *  - ordering, SOFTVERBS_GDR_ORDER: `strict` (default) waits for a message's writes before its
 *    completion and acknowledgement (Hopper and later: data is visible when the CQE is, so
 *    NCCL does not flush); `relaxed` does not (Ampere and earlier: only a READ of the GPU
 *    memory, NCCL's flush, makes earlier writes visible), so a missing flush shows as stale
 *    data in the GPU.
 * Without GDR mode a device pointer is refused with EFAULT, as a kernel without peer memory
 * refuses it; with GDR mode and no CUDA driver, registration of device memory cannot happen
 * (the process has none) and one line says so.
 */
#include "sv.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long sv_cuptr;
typedef void *sv_cuctx;
typedef void *sv_custream;

#define SV_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define SV_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define SV_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define SV_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define SV_CU_STREAM_CAPTURE_MODE_RELAXED 2
#define SV_CU_MEMORYTYPE_DEVICE 2
#define SV_CU_STREAM_NON_BLOCKING 1
#define SV_CU_MEMHOSTALLOC_PORTABLE 1

static struct {
	pthread_mutex_t lock;
	bool tried; /* load() has settled: the driver is loaded, or can never be */
	void *lib;
	int (*init)(unsigned int);
	int (*ptr_attr)(void *, int, sv_cuptr);
	int (*addr_range)(sv_cuptr *, size_t *, sv_cuptr);
	int (*dev_get)(int *, int);
	int (*primary_retain)(sv_cuctx *, int);
	int (*ctx_get)(sv_cuctx *);
	int (*ctx_set)(sv_cuctx);
	int (*stream_create)(sv_custream *, unsigned int);
	int (*stream_sync)(sv_custream);
	int (*h2d_async)(sv_cuptr, const void *, size_t, sv_custream);
	int (*d2h_async)(void *, sv_cuptr, size_t, sv_custream);
	int (*capture_mode)(int *); /* cuThreadExchangeStreamCaptureMode, optional */
	int (*host_alloc)(void **, size_t, unsigned int); /* cuMemHostAlloc, optional */
	int (*free_host)(void *);			  /* cuMemFreeHost, optional */
	struct {
		sv_cuctx ctx;
		sv_custream stream; /* the GPU's DMA queue, made on its first copy */
		bool ready;
		bool failed;	    /* no context: said once, never retried */
		bool stream_failed; /* a stream could not be made: said once, never retried */
	} dev[SV_GPU_MAX_DEV];
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

int sv_gdr_mode;     /* SV_GDR_* bits */
bool sv_gdr_relaxed; /* SOFTVERBS_GDR_ORDER=relaxed */
uint64_t sv_gdr_stage = SV_GDR_STAGE_DEFAULT;
static bool gdr_error; /* one line said why GPU memory cannot be used */

void sv_gdr_configure(const char *how, const char *origin)
{
	char buf[64], *save = NULL;

	if (!how)
		return;
	sv_gdr_mode = 0;
	sv_fmt(buf, sizeof(buf), "%s", how);
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(t, "peermem"))
			sv_gdr_mode |= SV_GDR_PEERMEM;
		else if (!strcmp(t, "dmabuf"))
			sv_gdr_mode |= SV_GDR_DMABUF;
		else if (!strcmp(t, "both"))
			sv_gdr_mode |= SV_GDR_PEERMEM | SV_GDR_DMABUF;
		else if (strcmp(t, "off"))
			sv_log("%s: GDR mode \"%s\" unknown (allowed: off, peermem, dmabuf, both); "
			       "ignored",
			       origin, t);
	}
}

void sv_gdr_check_driver(void)
{
	const char *path = getenv("SOFTVERBS_CUDA_LIB");
	void *h;

	if (!sv_gdr_mode)
		return;
	h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (h) {
		dlclose(h);
		return;
	}
	gdr_error = true;
	sv_log("GDR mode (%s%s): no CUDA driver (%s: %s); only host memory can be registered",
	       sv_gdr_mode & SV_GDR_PEERMEM ? "peermem" : "",
	       sv_gdr_mode == (SV_GDR_PEERMEM | SV_GDR_DMABUF) ? ", dmabuf"
	       : sv_gdr_mode & SV_GDR_DMABUF		       ? "dmabuf"
							       : "",
	       path && *path ? path : "libcuda.so.1", dlerror());
}

static void *sym(const char *name)
{
	void *p = dlsym(g.lib, name);

	if (!p && !gdr_error) {
		gdr_error = true;
		sv_log("GDR mode: the CUDA driver lacks %s; GPU memory cannot be registered", name);
	}
	return p;
}

/*
 * Opens the driver once it is there. A process that has not loaded libcuda.so.1 has no GPU
 * memory to register, so until it has, every call looks again (a registration of host memory
 * may come before the process's first CUDA call). Called with g.lock held.
 */
static void load(void)
{
	const char *path = getenv("SOFTVERBS_CUDA_LIB");

	if (g.tried)
		return;
	g.lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL)
			      : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!g.lib) {
		if (path && *path) {
			g.tried = true;
			gdr_error = true;
			sv_log("GDR mode: SOFTVERBS_CUDA_LIB=%s cannot be loaded (%s); GPU memory "
			       "cannot be registered, host memory works",
			       path, dlerror());
		}
		return;
	}
	g.tried = true;
	*(void **)&g.capture_mode = dlsym(g.lib, "cuThreadExchangeStreamCaptureMode");
	*(void **)&g.host_alloc = dlsym(g.lib, "cuMemHostAlloc");
	*(void **)&g.free_host = dlsym(g.lib, "cuMemFreeHost");
	*(void **)&g.init = sym("cuInit");
	*(void **)&g.ptr_attr = sym("cuPointerGetAttribute");
	*(void **)&g.addr_range = sym("cuMemGetAddressRange_v2");
	*(void **)&g.dev_get = sym("cuDeviceGet");
	*(void **)&g.primary_retain = sym("cuDevicePrimaryCtxRetain");
	*(void **)&g.ctx_get = sym("cuCtxGetCurrent");
	*(void **)&g.ctx_set = sym("cuCtxSetCurrent");
	*(void **)&g.stream_create = sym("cuStreamCreate");
	*(void **)&g.stream_sync = sym("cuStreamSynchronize");
	*(void **)&g.h2d_async = sym("cuMemcpyHtoDAsync_v2");
	*(void **)&g.d2h_async = sym("cuMemcpyDtoHAsync_v2");
	if (gdr_error || g.init(0)) {
		if (!gdr_error)
			sv_log("GDR mode: cuInit failed; GPU memory cannot be registered");
		gdr_error = true;
		g.lib = NULL;
	}
}

int sv_gpu_classify(const void *addr, size_t len, int *dev)
{
	sv_cuptr p = (sv_cuptr)(uintptr_t)addr, base = 0;
	unsigned int type = 0;
	size_t size = 0;
	int ord = -1;
	bool have;

	pthread_mutex_lock(&g.lock);
	load();
	have = g.lib != NULL;
	pthread_mutex_unlock(&g.lock);
	if (!have)
		return 0;
	if (g.ptr_attr(&type, SV_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
	    type != SV_CU_MEMORYTYPE_DEVICE)
		return 0; /* not CUDA memory, or host/managed memory the CPU reaches */
	/* the range attributes need no current context (cuMemGetAddressRange may) */
	if (g.ptr_attr(&ord, SV_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) || ord < 0 ||
	    ord >= SV_GPU_MAX_DEV ||
	    ((g.ptr_attr(&base, SV_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) ||
	      g.ptr_attr(&size, SV_CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)) &&
	     g.addr_range(&base, &size, p)) ||
	    (uintptr_t)addr + len > base + size)
		return -EFAULT; /* device memory, but the range leaves its allocation */
	*dev = ord;
	return 1;
}

/* The device's (primary) context, retained on first use; false after one line if impossible. */
static bool dev_ready(int dev)
{
	bool ok;

	if (__atomic_load_n(&g.dev[dev].ready, __ATOMIC_ACQUIRE))
		return true;
	pthread_mutex_lock(&g.lock);
	if (!g.dev[dev].ready && !g.dev[dev].failed && g.lib) {
		sv_cuctx ctx = NULL;
		int d;

		if (g.dev_get(&d, dev) || g.primary_retain(&ctx, d)) {
			sv_log("GDR mode: no context for CUDA device %d", dev);
			g.dev[dev].failed = true;
		} else {
			g.dev[dev].ctx = ctx;
			__atomic_store_n(&g.dev[dev].ready, true, __ATOMIC_RELEASE);
		}
	}
	ok = g.dev[dev].ready;
	pthread_mutex_unlock(&g.lock);
	return ok;
}

/*
 * Runs with the device's context current on this thread, then restores the caller's. The
 * thread's stream-capture mode is relaxed meanwhile, as NCCL's proxy thread does: a graph
 * captured in global mode on another thread must not be invalidated by the NIC's copies.
 */
#define SV_WITH_CTX(ord, rc, expr)                             \
	do {                                                   \
		int mode_ = SV_CU_STREAM_CAPTURE_MODE_RELAXED; \
		sv_cuctx old_ = NULL;                          \
		if (g.capture_mode)                            \
			g.capture_mode(&mode_);                \
		g.ctx_get(&old_);                              \
		if (old_ != g.dev[ord].ctx)                    \
			g.ctx_set(g.dev[ord].ctx);             \
		rc = (expr);                                   \
		if (old_ != g.dev[ord].ctx)                    \
			g.ctx_set(old_);                       \
		if (g.capture_mode)                            \
			g.capture_mode(&mode_);                \
	} while (0)

/*
 * Device dev's stream, made on first use; NULL if impossible. The first failure on a device is
 * said in one line and ends its GDR copies for every NIC (as a failed context does): no copy
 * retries the driver.
 */
static sv_custream dma_stream(int dev)
{
	sv_custream s = __atomic_load_n(&g.dev[dev].stream, __ATOMIC_ACQUIRE);
	int rc;

	if (s || !dev_ready(dev) || __atomic_load_n(&g.dev[dev].stream_failed, __ATOMIC_RELAXED))
		return s;
	pthread_mutex_lock(&g.lock); /* two NICs' first copies to one GPU make one stream */
	s = g.dev[dev].stream;
	if (!s && !g.dev[dev].stream_failed) {
		SV_WITH_CTX(dev, rc, g.stream_create(&s, SV_CU_STREAM_NON_BLOCKING));
		if (rc) {
			s = NULL;
			sv_log("GDR mode: cannot create a stream on CUDA device %d; its memory "
			       "cannot be reached",
			       dev);
			__atomic_store_n(&g.dev[dev].stream_failed, true, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&g.dev[dev].stream, s, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&g.lock);
	return s;
}

int sv_gpu_write(int dev, void *dst, const void *src, size_t len)
{
	sv_custream s = dma_stream(dev);
	int rc;

	if (!s)
		return -EIO;
	SV_WITH_CTX(dev, rc, g.h2d_async((sv_cuptr)(uintptr_t)dst, src, len, s));
	return rc ? -EIO : 0;
}

int sv_gpu_read(int dev, void *dst, const void *src, size_t len)
{
	sv_custream s = dma_stream(dev);
	int rc;

	if (!s)
		return -EIO;
	SV_WITH_CTX(dev, rc,
		    g.d2h_async(dst, (sv_cuptr)(uintptr_t)src, len, s) ?: g.stream_sync(s));
	return rc ? -EIO : 0;
}

int sv_gpu_fence(int dev)
{
	sv_custream s = __atomic_load_n(&g.dev[dev].stream, __ATOMIC_ACQUIRE);
	int rc;

	if (!s)
		return 0; /* nothing was ever copied there */
	SV_WITH_CTX(dev, rc, g.stream_sync(s));
	return rc ? -EIO : 0;
}

void *sv_gpu_host_alloc(int dev, size_t len)
{
	void *p = NULL;
	int rc;

	if (!g.host_alloc || !g.free_host || !dev_ready(dev))
		return NULL;
	SV_WITH_CTX(dev, rc, g.host_alloc(&p, len, SV_CU_MEMHOSTALLOC_PORTABLE));
	return rc ? NULL : p;
}

void sv_gpu_host_free(void *p)
{
	if (p && g.free_host)
		g.free_host(p); /* an error at process exit (driver gone) leaves it to the kernel */
}
