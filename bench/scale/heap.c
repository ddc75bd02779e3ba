// SPDX-License-Identifier: Apache-2.0
/*
 * Heap accounting for railnet-scale: this executable's malloc family interposes glibc's (as the
 * glibc manual's "Replacing malloc" allows) and charges every live block to the shared object
 * whose code asked for it: railnet's plugin, softverbs, or anything else. A 16-byte header in
 * front of each block remembers the owner, the size and the offset to glibc's block, so a free
 * from any object un-charges the right owner. Blocks that did not come through here (a loader's
 * early ones) have no header magic and go straight to glibc.
 *
 * Sanitizer builds replace malloc themselves: there this file compiles to nothing and
 * scale_heap_live() reports -1.
 */
#include "scale.h"

#if !defined(RN_SCALE_NO_HEAP_HOOK)

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

#define HDR 16u
#define MAGIC 0x5ca1ab1eu

struct hdr {
	uint32_t magic;
	uint16_t owner;
	uint16_t off; /* user pointer - glibc's pointer */
	uint64_t size;
};

static uintptr_t lo[SCALE_OWNERS], hi[SCALE_OWNERS];
static long long live[SCALE_OWNERS];

void scale_heap_owner(int owner, uintptr_t start, uintptr_t end)
{
	__atomic_store_n(&hi[owner], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lo[owner], start, __ATOMIC_RELEASE);
	__atomic_store_n(&hi[owner], end, __ATOMIC_RELEASE);
}

long long scale_heap_live(int owner)
{
	return __atomic_load_n(&live[owner], __ATOMIC_ACQUIRE);
}

static int owner_of(const void *ra)
{
	uintptr_t a = (uintptr_t)ra;

	for (int o = 1; o < SCALE_OWNERS; o++)
		if (a >= __atomic_load_n(&lo[o], __ATOMIC_ACQUIRE) &&
		    a < __atomic_load_n(&hi[o], __ATOMIC_ACQUIRE))
			return o;
	return SCALE_OTHER;
}

static void *finish(char *raw, size_t off, size_t size, int owner)
{
	struct hdr *h;

	if (!raw)
		return NULL;
	h = (struct hdr *)(void *)(raw + off - HDR);
	h->magic = MAGIC;
	h->owner = (uint16_t)owner;
	h->off = (uint16_t)off;
	h->size = size;
	__atomic_add_fetch(&live[owner], (long long)size, __ATOMIC_RELAXED);
	return raw + off;
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)(void *)((char *)p - HDR);

	return h->magic == MAGIC ? h : NULL;
}

static void release(void *p)
{
	struct hdr *h;

	if (!p)
		return;
	h = hdr_of(p);
	if (!h) {
		__libc_free(p);
		return;
	}
	__atomic_sub_fetch(&live[h->owner], (long long)h->size, __ATOMIC_RELAXED);
	h->magic = 0;
	__libc_free((char *)p - h->off);
}

static void *alloc(size_t size, int owner)
{
	if (size > SIZE_MAX - HDR) {
		errno = ENOMEM;
		return NULL;
	}
	return finish(__libc_malloc(size + HDR), HDR, size, owner);
}

static void *alloc_aligned(size_t align, size_t size, int owner)
{
	size_t off = align < HDR ? HDR : align;

	if (align > 32768 || size > SIZE_MAX - off) {
		errno = ENOMEM;
		return NULL;
	}
	return finish(__libc_memalign(align < HDR ? HDR : align, size + off), off, size, owner);
}

void *malloc(size_t size)
{
	return alloc(size, owner_of(__builtin_return_address(0)));
}

void *calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total) || total > SIZE_MAX - HDR) {
		errno = ENOMEM;
		return NULL;
	}
	return finish(__libc_calloc(1, total + HDR), HDR, total,
		      owner_of(__builtin_return_address(0)));
}

void free(void *p)
{
	release(p);
}

void *realloc(void *p, size_t size)
{
	int owner = owner_of(__builtin_return_address(0));
	struct hdr *h;
	void *n;

	if (!p)
		return alloc(size, owner);
	if (!size) {
		release(p);
		return NULL;
	}
	h = hdr_of(p);
	n = alloc(size, owner);
	if (!n)
		return NULL;
	/* a block from before the hook: its size is unknown, but never more than asked now */
	memcpy(n, p, h ? (h->size < size ? h->size : size) : size);
	release(p);
	return n;
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = alloc_aligned(align, size, owner_of(__builtin_return_address(0)));
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	return alloc_aligned(align, size, owner_of(__builtin_return_address(0)));
}

void *memalign(size_t align, size_t size)
{
	return alloc_aligned(align, size, owner_of(__builtin_return_address(0)));
}

void *valloc(size_t size)
{
	return alloc_aligned(4096, size, owner_of(__builtin_return_address(0)));
}

void *pvalloc(size_t size)
{
	return alloc_aligned(4096, (size + 4095) & ~(size_t)4095,
			     owner_of(__builtin_return_address(0)));
}

size_t malloc_usable_size(void *p)
{
	struct hdr *h = p ? hdr_of(p) : NULL;

	return h ? h->size : 0;
}

#else

void scale_heap_owner(int owner, uintptr_t start, uintptr_t end)
{
	(void)owner;
	(void)start;
	(void)end;
}

long long scale_heap_live(int owner)
{
	(void)owner;
	return -1;
}

#endif
