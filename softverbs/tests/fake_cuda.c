// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for the CUDA driver, for testing softverbs' GDR mode on machines without a GPU
 * (loaded through SOFTVERBS_CUDA_LIB). It has the driver entry points softverbs uses, with
 * the behaviour that matters:
 *  - "device memory" (fake_cuda_alloc) is a PROT_NONE mapping, so any direct CPU access by
 *    softverbs crashes; the copies go through a second, readable mapping of the same pages;
 *  - cuMemcpyHtoDAsync_v2 keeps the bytes aside and lands them only when its stream is
 *    synchronised (or a later copy on it waits), so data a NIC wrote is visible to "the GPU"
 *    (fake_cuda_peek, which reads what is there now) only after the ordering softverbs gives;
 *    streams are separate queues (cuStreamCreate, cuStreamDestroy_v2), so waiting for one
 *    stream lands nothing queued on another;
 *  - from pinned memory (cuMemHostAlloc) it keeps only the source address and reads it when
 *    the copy lands, as a DMA engine does, so a source refilled before the stream was waited
 *    for lands the new bytes: wrong data in "the GPU". FAKE_CUDA_PINNED=0 refuses
 *    cuMemHostAlloc (softverbs falls back to pageable memory); FAKE_CUDA_NO_STREAM=1 makes
 *    cuStreamCreate fail.
 * Test hooks: fake_cuda_alloc, fake_cuda_peek, fake_cuda_poke, fake_cuda_dmabuf,
 * fake_cuda_pending, fake_cuda_pinned_copies, fake_cuda_pinned_reads.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* the driver's entry points and the test hooks, exported */
void *fake_cuda_alloc(size_t len);
int fake_cuda_peek(const void *dev, void *out, size_t len);
int fake_cuda_poke(void *dev, const void *in, size_t len);
int fake_cuda_dmabuf(void);
int fake_cuda_pending(void);
int fake_cuda_pinned_copies(void);
int fake_cuda_pinned_reads(void);
int cuInit(unsigned int flags);
int cuMemHostAlloc(void **p, size_t len, unsigned int flags);
int cuMemFreeHost(void *p);
int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr);
int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size, unsigned long long ptr);
int cuDeviceGet(int *dev, int ordinal);
int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuCtxGetCurrent(void **ctx);
int cuCtxSetCurrent(void *ctx);
int cuStreamCreate(void **s, unsigned int flags);
int cuStreamSynchronize(void *s);
int cuStreamDestroy_v2(void *s);
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t len, void *s);
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t len, void *s);

#define FC_OK 0
#define FC_INVALID 1
#define FC_MAX 16

struct alloc {
	uintptr_t dev; /* PROT_NONE: the address a program holds */
	char *alias;   /* read-write view of the same pages */
	size_t len;
};

struct pend {
	char *dst;
	char *bytes;	 /* a copy of a pageable source, taken at the call */
	const char *src; /* a pinned source, read when the copy lands */
	size_t len;
	struct pend *next;
};

struct pinned {
	char *p;
	size_t len;
};

struct stream {
	struct pend *pending, **tail;
	int npending;
	struct stream *next; /* every live stream */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc allocs[FC_MAX];
static struct stream *streams;
static struct pinned pins[FC_MAX];
static int pinned_copies, pinned_reads;
static __thread void *current;
static int the_ctx;

static struct alloc *find(uintptr_t p)
{
	for (int i = 0; i < FC_MAX; i++)
		if (allocs[i].len && p >= allocs[i].dev && p < allocs[i].dev + allocs[i].len)
			return &allocs[i];
	return NULL;
}

static char *alias_of(uintptr_t p, size_t len)
{
	struct alloc *a = find(p);

	if (!a || p + len > a->dev + a->len)
		return NULL;
	return a->alias + (p - a->dev);
}

/* A live stream of this fake driver, or NULL. lock held. */
static struct stream *stream_of(void *s)
{
	for (struct stream *st = streams; st; st = st->next)
		if (st == s)
			return st;
	return NULL;
}

/* Lands what stream st has queued, in order. lock held. */
static void land(struct stream *st)
{
	while (st->pending) {
		struct pend *p = st->pending;

		memcpy(p->dst, p->src ? p->src : p->bytes, p->len);
		st->pending = p->next;
		free(p->bytes);
		free(p);
	}
	st->tail = &st->pending;
	st->npending = 0;
}

/* ---- test hooks ---- */

void *fake_cuda_alloc(size_t len)
{
	int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
	void *dev, *alias;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		return NULL;
	dev = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
	alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (dev == MAP_FAILED || alias == MAP_FAILED)
		return NULL;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < FC_MAX; i++)
		if (!allocs[i].len) {
			allocs[i] = (struct alloc){ (uintptr_t)dev, alias, len };
			pthread_mutex_unlock(&lock);
			return dev;
		}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* What the GPU sees now (pending copies not included). */
int fake_cuda_peek(const void *dev, void *out, size_t len)
{
	char *a;

	pthread_mutex_lock(&lock);
	a = alias_of((uintptr_t)dev, len);
	if (a)
		memcpy(out, a, len);
	pthread_mutex_unlock(&lock);
	return a ? 0 : -1;
}

/* A GPU kernel writing the memory. */
int fake_cuda_poke(void *dev, const void *in, size_t len)
{
	char *a;

	pthread_mutex_lock(&lock);
	a = alias_of((uintptr_t)dev, len);
	if (a)
		memcpy(a, in, len);
	pthread_mutex_unlock(&lock);
	return a ? 0 : -1;
}

/* A dma-buf-like fd for the allocation (its /proc link names "dmabuf"). */
int fake_cuda_dmabuf(void)
{
	return memfd_create("dmabuf", MFD_CLOEXEC);
}

int fake_cuda_pending(void)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (struct stream *st = streams; st; st = st->next)
		n += st->npending;
	pthread_mutex_unlock(&lock);
	return n;
}

/* Copies into "the GPU" made from pinned memory (the DMA path). */
int fake_cuda_pinned_copies(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = pinned_copies;
	pthread_mutex_unlock(&lock);
	return n;
}

/* Copies out of "the GPU" into pinned memory. */
int fake_cuda_pinned_reads(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = pinned_reads;
	pthread_mutex_unlock(&lock);
	return n;
}

static bool is_pinned(const void *p, size_t len)
{
	for (int i = 0; i < FC_MAX; i++)
		if (pins[i].p && (const char *)p >= pins[i].p &&
		    (const char *)p + len <= pins[i].p + pins[i].len)
			return true;
	return false;
}

/* ---- the driver entry points softverbs uses ---- */

int cuMemHostAlloc(void **out, size_t len, unsigned int flags)
{
	const char *e = getenv("FAKE_CUDA_PINNED");
	char *p;

	(void)flags;
	if ((e && !strcmp(e, "0")) || current != &the_ctx || !(p = malloc(len ? len : 1)))
		return FC_INVALID;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < FC_MAX; i++)
		if (!pins[i].p) {
			pins[i] = (struct pinned){ p, len };
			pthread_mutex_unlock(&lock);
			*out = p;
			return FC_OK;
		}
	pthread_mutex_unlock(&lock);
	free(p);
	return FC_INVALID;
}

int cuMemFreeHost(void *p)
{
	pthread_mutex_lock(&lock);
	for (struct stream *st = streams; st; st = st->next)
		land(st); /* the driver waits for copies that read it */
	for (int i = 0; i < FC_MAX; i++)
		if (pins[i].p && pins[i].p == p) {
			pins[i].p = NULL;
			pthread_mutex_unlock(&lock);
			free(p);
			return FC_OK;
		}
	pthread_mutex_unlock(&lock);
	return FC_INVALID;
}

int cuInit(unsigned int flags)
{
	(void)flags;
	return FC_OK;
}

int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr)
{
	int rc = FC_OK;

	pthread_mutex_lock(&lock);
	if (!find((uintptr_t)ptr))
		rc = FC_INVALID;
	else if (attr == 2) /* MEMORY_TYPE: device */
		*(unsigned int *)data = 2;
	else if (attr == 9) /* DEVICE_ORDINAL */
		*(int *)data = 0;
	else if (attr == 11) /* RANGE_START_ADDR */
		*(unsigned long long *)data = find((uintptr_t)ptr)->dev;
	else if (attr == 12) /* RANGE_SIZE */
		*(size_t *)data = find((uintptr_t)ptr)->len;
	else
		rc = FC_INVALID;
	pthread_mutex_unlock(&lock);
	return rc;
}

int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size, unsigned long long ptr)
{
	struct alloc *a;

	pthread_mutex_lock(&lock);
	a = find((uintptr_t)ptr);
	if (a) {
		*base = a->dev;
		*size = a->len;
	}
	pthread_mutex_unlock(&lock);
	return a ? FC_OK : FC_INVALID;
}

int cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal != 0)
		return FC_INVALID;
	*dev = 0;
	return FC_OK;
}

int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = &the_ctx;
	return FC_OK;
}

int cuCtxGetCurrent(void **ctx)
{
	*ctx = current;
	return FC_OK;
}

int cuCtxSetCurrent(void *ctx)
{
	current = ctx;
	return FC_OK;
}

int cuStreamCreate(void **s, unsigned int flags)
{
	struct stream *st;

	const char *e = getenv("FAKE_CUDA_NO_STREAM");

	(void)flags;
	if ((e && !strcmp(e, "1")) || current != &the_ctx || !(st = calloc(1, sizeof(*st))))
		return FC_INVALID;
	st->tail = &st->pending;
	pthread_mutex_lock(&lock);
	st->next = streams;
	streams = st;
	pthread_mutex_unlock(&lock);
	*s = st;
	return FC_OK;
}

/* As the driver's: work still queued completes first. */
int cuStreamDestroy_v2(void *s)
{
	struct stream **pp;

	pthread_mutex_lock(&lock);
	for (pp = &streams; *pp && *pp != s; pp = &(*pp)->next)
		;
	if (!*pp || current != &the_ctx) {
		pthread_mutex_unlock(&lock);
		return FC_INVALID;
	}
	*pp = (*pp)->next;
	land(s);
	pthread_mutex_unlock(&lock);
	free(s);
	return FC_OK;
}

int cuStreamSynchronize(void *s)
{
	struct stream *st;

	pthread_mutex_lock(&lock);
	st = current == &the_ctx ? stream_of(s) : NULL;
	if (st)
		land(st);
	pthread_mutex_unlock(&lock);
	return st ? FC_OK : FC_INVALID;
}

int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t len, void *s)
{
	struct stream *st;
	struct pend *p;
	char *a;

	if (current != &the_ctx)
		return FC_INVALID;
	p = malloc(sizeof(*p));
	if (!p)
		return FC_INVALID;
	pthread_mutex_lock(&lock);
	if (!(st = stream_of(s))) {
		pthread_mutex_unlock(&lock);
		free(p);
		return FC_INVALID;
	}
	a = alias_of((uintptr_t)dst, len);
	p->src = NULL;
	p->bytes = NULL;
	if (a && is_pinned(src, len)) {
		p->src = src; /* DMA: read when the copy lands */
		pinned_copies++;
	} else if (!a || !(p->bytes = malloc(len ? len : 1))) {
		pthread_mutex_unlock(&lock);
		free(p);
		return FC_INVALID;
	} else {
		memcpy(p->bytes, src, len); /* a pageable source may be reused once this returns */
	}
	p->dst = a;
	p->len = len;
	p->next = NULL;
	*st->tail = p;
	st->tail = &p->next;
	st->npending++;
	pthread_mutex_unlock(&lock);
	return FC_OK;
}

int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t len, void *s)
{
	struct stream *st;
	char *a;

	if (current != &the_ctx)
		return FC_INVALID;
	pthread_mutex_lock(&lock);
	if (!(st = stream_of(s))) {
		pthread_mutex_unlock(&lock);
		return FC_INVALID;
	}
	land(st); /* stream order: this stream's earlier writes land first */
	a = alias_of((uintptr_t)src, len);
	if (a)
		memcpy(dst, a, len);
	if (a && is_pinned(dst, len))
		pinned_reads++;
	pthread_mutex_unlock(&lock);
	return a ? FC_OK : FC_INVALID;
}
