// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for libcuda.so.1, built in three variants (test/topo/tests.cmake): a good driver
 * (FAKE_CUDA_VERSION 12040), an old one (10020), and one without cuDeviceGetPCIBusId
 * (FAKE_CUDA_NO_BUSID). Its GPUs are the bus ids in FAKE_CUDA_BUSIDS (comma list, read on
 * every call); a "device pointer" is 0xd0000000000 + (ordinal << 32) + offset. When
 * FAKE_CUDA_MARK names a file, the driver appends a line "open" to it when it is loaded and
 * "cuInit" when cuInit is called: the tests' proof of whether anyone opened the driver.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_BASE 0xd0000000000ULL

int cuInit(unsigned int flags);
int cuDriverGetVersion(int *v);
int cuDeviceGetCount(int *n);
int cuDeviceGet(int *dev, int ordinal);
int cuDeviceGetPCIBusId(char *busid, int len, int dev);
int cuPointerGetAttribute(void *data, int attr, uintptr_t ptr);

static void mark(const char *what)
{
	const char *path = getenv("FAKE_CUDA_MARK");
	FILE *f = path && *path ? fopen(path, "ae") : NULL;

	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

__attribute__((constructor)) static void fake_cuda_loaded(void)
{
	mark("open");
}

static int busid_of(int ordinal, char *out, size_t len)
{
	const char *l = getenv("FAKE_CUDA_BUSIDS");
	int i = 0;

	while (l && *l) {
		const char *c = strchr(l, ',');
		size_t n = c ? (size_t)(c - l) : strlen(l);

		if (i++ == ordinal) {
			snprintf(out, len, "%.*s", (int)n, l);
			return 0;
		}
		l = c ? c + 1 : NULL;
	}
	return 101; /* CUDA_ERROR_INVALID_DEVICE */
}

int cuInit(unsigned int flags)
{
	mark("cuInit");
	return 0;
}

int cuDriverGetVersion(int *v)
{
	*v = FAKE_CUDA_VERSION;
	return 0;
}

int cuDeviceGetCount(int *n)
{
	char b[32];
	int i = 0;

	while (!busid_of(i, b, sizeof(b)))
		i++;
	*n = i;
	return 0;
}

int cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return 0;
}

#ifndef FAKE_CUDA_NO_BUSID
int cuDeviceGetPCIBusId(char *busid, int len, int dev)
{
	char b[32];
	int r = busid_of(dev, b, sizeof(b));

	if (!r)
		snprintf(busid, (size_t)len, "0000%s", b); /* 8-digit domain, as nvidia-smi */
	return r;
}
#endif

int cuPointerGetAttribute(void *data, int attr, uintptr_t ptr)
{
	if (ptr < FAKE_BASE || ptr >= FAKE_BASE + (64ULL << 32))
		return 1; /* CUDA_ERROR_INVALID_VALUE: not ours */
	if (attr == 2)
		*(unsigned int *)data = 2; /* CU_MEMORYTYPE_DEVICE */
	else if (attr == 9)
		*(int *)data = (int)((ptr - FAKE_BASE) >> 32);
	else
		return 1;
	return 0;
}
