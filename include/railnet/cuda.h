/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA-driver seam: the few driver calls railnet needs (which GPU holds a pointer, the
 * PCI bus id of a GPU, the GPUs this process can use), through one ops table. The driver
 * (libcuda.so.1, or the path given to rn_cuda_load) is opened with dlopen only when one of
 * these is first asked, never at library load; the plugin never links it. Tests replace the
 * table with rn_cuda_set_ops.
 *
 * No driver, or one older than RN_CUDA_MIN_DRIVER: every call returns -ENOSYS and one INFO
 * line said why (railnet then offers host memory only).
 *
 * Thread-safe: loading happens once under cuda.c's lock; the table is immutable afterwards
 * until rn_cuda_unload (the last finalize), which must not race with calls.
 */
#ifndef RAILNET_CUDA_H
#define RAILNET_CUDA_H

#include <stdint.h>

#include "railnet/pci.h"

#define RN_CUDA_MIN_DRIVER 11000 /* cuDriverGetVersion: CUDA 11.0, NCCL 2.x's own floor */

/* CUDA driver API values railnet uses (CUresult 0 is CUDA_SUCCESS). */
#define RN_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define RN_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define RN_CU_MEMORYTYPE_DEVICE 2

/* One member per driver call; each returns the CUresult (0 = success). */
struct rn_cuda_ops {
	int (*init)(unsigned int flags);			     /* cuInit */
	int (*driver_get_version)(int *version);		     /* cuDriverGetVersion */
	int (*device_get_count)(int *count);			     /* cuDeviceGetCount */
	int (*device_get)(int *dev, int ordinal);		     /* cuDeviceGet */
	int (*device_get_pci_bus_id)(char *busid, int len, int dev); /* cuDeviceGetPCIBusId */
	int (*pointer_get_attribute)(void *data, int attribute,
				     uintptr_t ptr); /* cuPointerGetAttribute */
};

/*
 * Where to load the driver from on first use (NULL or "": libcuda.so.1). Does not load.
 * Forgets a failed load, so the next call tries again with the new path.
 */
void rn_cuda_set_path(const char *libpath);
/* Replace the table (tests): ops is used as is, as a driver of version `version`. NULL: back
 * to dlopen on next use. */
void rn_cuda_set_ops(const struct rn_cuda_ops *ops, int version);
/* Close the driver if railnet opened it; the next use loads again. */
void rn_cuda_unload(void);

/* 0 when a usable driver is (now) loaded, else -ENOSYS (one INFO line said why, once). */
int rn_cuda_available(void);

/*
 * Bus id (normalised as rn_busid_parse writes it) of the GPU holding ptr. 0, -ENOSYS (no
 * usable driver), -EINVAL (not device memory the driver knows), -EIO (the driver failed).
 */
int rn_cuda_ptr_busid(const void *ptr, char busid[RN_BUSID_MAX]);

/*
 * The GPUs this process can use (the driver applies CUDA_VISIBLE_DEVICES), in CUDA ordinal
 * order: up to max bus ids. Returns the count, or -ENOSYS / -EIO.
 */
int rn_cuda_visible_busids(char (*busids)[RN_BUSID_MAX], int max);

#endif /* RAILNET_CUDA_H */
