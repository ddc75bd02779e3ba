// SPDX-License-Identifier: Apache-2.0
/*
 * The CUDA driver, opened with dlopen on first use (cuda.h). Owns the ops table and the
 * handle; resolves six driver entry points and nothing else. Must not be called on the data
 * path: registration and properties only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/cuda.h"
#include "railnet/log.h"

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_cuda_ops cuda_ops;
static const struct rn_cuda_ops *cuda_cur; /* NULL: not loaded (or failed) */
static void *cuda_handle;
static bool cuda_tried; /* a load was attempted (and logged) */
static char cuda_path[256];

void rn_cuda_set_path(const char *libpath)
{
	pthread_mutex_lock(&cuda_lock);
	snprintf(cuda_path, sizeof(cuda_path), "%s", libpath ? libpath : "");
	if (!cuda_cur)
		cuda_tried = false;
	pthread_mutex_unlock(&cuda_lock);
}

static void unload_locked(void)
{
	if (cuda_handle)
		dlclose(cuda_handle);
	cuda_handle = NULL;
	cuda_cur = NULL;
	cuda_tried = false;
	memset(&cuda_ops, 0, sizeof(cuda_ops));
}

void rn_cuda_set_ops(const struct rn_cuda_ops *ops, int version)
{
	pthread_mutex_lock(&cuda_lock);
	unload_locked();
	if (ops) {
		cuda_ops = *ops;
		cuda_tried = true;
		if (version >= RN_CUDA_MIN_DRIVER && !cuda_ops.init(0))
			cuda_cur = &cuda_ops;
		else
			RN_INFO(RN_SUB_INIT,
				"CUDA driver version %d is older than %d (or cuInit failed): "
				"GPUDirect RDMA off, host memory only",
				version, RN_CUDA_MIN_DRIVER);
	}
	pthread_mutex_unlock(&cuda_lock);
}

void rn_cuda_unload(void)
{
	pthread_mutex_lock(&cuda_lock);
	unload_locked();
	pthread_mutex_unlock(&cuda_lock);
}

static void *sym(void *h, const char *name, bool *missing)
{
	void *p = dlsym(h, name);

	if (!p)
		*missing = true;
	return p;
}

static void load_locked(void)
{
	const char *path = cuda_path[0] ? cuda_path : "libcuda.so.1";
	bool missing = false;
	int version = 0, rc;
	void *h;

	cuda_tried = true;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		RN_INFO(RN_SUB_INIT, "no CUDA driver (%s: %s): host memory only", path, dlerror());
		return;
	}
	cuda_ops.init = (int (*)(unsigned int))sym(h, "cuInit", &missing);
	cuda_ops.driver_get_version = (int (*)(int *))sym(h, "cuDriverGetVersion", &missing);
	cuda_ops.device_get_count = (int (*)(int *))sym(h, "cuDeviceGetCount", &missing);
	cuda_ops.device_get = (int (*)(int *, int))sym(h, "cuDeviceGet", &missing);
	cuda_ops.device_get_pci_bus_id =
		(int (*)(char *, int, int))sym(h, "cuDeviceGetPCIBusId", &missing);
	cuda_ops.pointer_get_attribute =
		(int (*)(void *, int, uintptr_t))sym(h, "cuPointerGetAttribute", &missing);
	if (missing) {
		RN_INFO(RN_SUB_INIT,
			"CUDA driver %s lacks cuDeviceGetPCIBusId or another call railnet needs "
			"(too old): host memory only",
			path);
		goto err_close;
	}
	rc = cuda_ops.driver_get_version(&version);
	if (rc || version < RN_CUDA_MIN_DRIVER) {
		RN_INFO(RN_SUB_INIT,
			"CUDA driver %s is version %d, older than %d (CUDA 11.0) that railnet "
			"needs: host memory only",
			path, version, RN_CUDA_MIN_DRIVER);
		goto err_close;
	}
	rc = cuda_ops.init(0);
	if (rc) {
		RN_INFO(RN_SUB_INIT,
			"CUDA driver %s: cuInit failed (CUresult %d): host memory only", path, rc);
		goto err_close;
	}
	cuda_handle = h;
	cuda_cur = &cuda_ops;
	RN_INFO(RN_SUB_INIT, "CUDA driver %s version %d loaded", path, version);
	return;

err_close:
	memset(&cuda_ops, 0, sizeof(cuda_ops));
	dlclose(h);
}

static const struct rn_cuda_ops *cuda_get(void)
{
	const struct rn_cuda_ops *ops;

	pthread_mutex_lock(&cuda_lock);
	if (!cuda_cur && !cuda_tried)
		load_locked();
	ops = cuda_cur;
	pthread_mutex_unlock(&cuda_lock);
	return ops;
}

int rn_cuda_available(void)
{
	return cuda_get() ? 0 : -ENOSYS;
}

static int dev_busid(const struct rn_cuda_ops *ops, int ordinal, char busid[RN_BUSID_MAX])
{
	char raw[64] = "";
	int dev;

	if (ops->device_get(&dev, ordinal))
		return -EIO;
	if (ops->device_get_pci_bus_id(raw, (int)sizeof(raw), dev))
		return -EIO;
	raw[sizeof(raw) - 1] = '\0';
	return rn_busid_parse(raw, busid) ? -EIO : 0;
}

int rn_cuda_ptr_busid(const void *ptr, char busid[RN_BUSID_MAX])
{
	const struct rn_cuda_ops *ops = cuda_get();
	unsigned int mtype = 0;
	int ordinal = -1;

	if (!ops)
		return -ENOSYS;
	if (ops->pointer_get_attribute(&mtype, RN_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				       (uintptr_t)ptr) ||
	    mtype != RN_CU_MEMORYTYPE_DEVICE)
		return -EINVAL;
	if (ops->pointer_get_attribute(&ordinal, RN_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				       (uintptr_t)ptr) ||
	    ordinal < 0)
		return -EINVAL;
	return dev_busid(ops, ordinal, busid);
}

int rn_cuda_visible_busids(char (*busids)[RN_BUSID_MAX], int max)
{
	const struct rn_cuda_ops *ops = cuda_get();
	int count = 0, i, ret;

	if (!ops)
		return -ENOSYS;
	if (ops->device_get_count(&count) || count < 0)
		return -EIO;
	for (i = 0; i < count && i < max; i++) {
		ret = dev_busid(ops, i, busids[i]);
		if (ret)
			return ret;
	}
	return i;
}
