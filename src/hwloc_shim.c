// SPDX-License-Identifier: Apache-2.0
/*
 * What the statically linked hwloc calls instead of a few libc, libdl and libudev symbols
 * (cmake/hwloc-syms.txt renames them in a copy of the distribution's libhwloc.a). The reasons,
 * one per group, are in docs/topology.md: the archive is -fPIE, so its direct references to
 * libc's stderr/stdout/program_invocation_name cannot be resolved in a shared object and are
 * pointed at variables of ours; stat & co. and the affinity calls carry glibc >= 2.32 symbol
 * versions the plugin must not need; dl* would load hwloc's plugins (which bind to another
 * hwloc) and libudev is not glibc. Only topo.c calls hwloc, and it sets the stdio pointers
 * before each call. Nothing here logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "railnet/topo.h"

/* Prototypes keep -Wmissing-prototypes quiet; the symbols are only hwloc's. */
FILE *rn_hwloc_stderr;
FILE *rn_hwloc_stdout;
char *rn_hwloc_progname;
void *rn_hwloc_dlopen(const char *file, int mode);
void *rn_hwloc_dlsym(void *handle, const char *sym);
int rn_hwloc_dlclose(void *handle);
char *rn_hwloc_dlerror(void);
int rn_hwloc_fstatat(int dirfd, const char *path, struct stat *st, int flags);
int rn_hwloc_stat(const char *path, struct stat *st);
int rn_hwloc_lstat(const char *path, struct stat *st);
int rn_hwloc_fstat(int fd, struct stat *st);
int rn_hwloc_pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set);
int rn_hwloc_pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set);
void *rn_hwloc_udev_new(void);
void *rn_hwloc_udev_unref(void *udev);
void *rn_hwloc_udev_device_new_from_subsystem_sysname(void *udev, const char *subsystem,
						      const char *sysname);
const char *rn_hwloc_udev_device_get_property_value(void *dev, const char *key);
void *rn_hwloc_udev_device_unref(void *dev);
float rn_hwloc_modff(float x, float *ip);

static char rn_hwloc_name[] = "railnet";
char *rn_hwloc_progname = rn_hwloc_name;

void rn_hwloc_shim_init(void)
{
	rn_hwloc_stderr = stderr;
	rn_hwloc_stdout = stdout;
}

/* hwloc's plugins: never loaded (the built-in components read sysfs and XML themselves). */
void *rn_hwloc_dlopen(const char *file, int mode)
{
	return NULL;
}

void *rn_hwloc_dlsym(void *handle, const char *sym)
{
	return NULL;
}

int rn_hwloc_dlclose(void *handle)
{
	return 0;
}

char *rn_hwloc_dlerror(void)
{
	static char msg[] = "hwloc plugins are disabled in railnet";

	return msg;
}

/*
 * The raw system call: glibc's struct stat is the kernel's on x86-64 and aarch64, and the
 * libc wrappers of glibc >= 2.33 carry the GLIBC_2.33 version.
 */
int rn_hwloc_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
#ifdef SYS_newfstatat
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
#else
	return fstatat(dirfd, path, st, flags);
#endif
}

int rn_hwloc_stat(const char *path, struct stat *st)
{
	return rn_hwloc_fstatat(AT_FDCWD, path, st, 0);
}

int rn_hwloc_lstat(const char *path, struct stat *st)
{
	return rn_hwloc_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int rn_hwloc_fstat(int fd, struct stat *st)
{
	return rn_hwloc_fstatat(fd, "", st, AT_EMPTY_PATH);
}

/* railnet never binds threads; topology discovery does not need these. */
int rn_hwloc_pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set)
{
	return ENOSYS;
}

int rn_hwloc_pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set)
{
	return ENOSYS;
}

/* modff without libm (the plugin needs libc and libdl only): |x| < 2^23 has a fraction. */
float rn_hwloc_modff(float x, float *ip)
{
	if (x != x || x >= 8388608.0f || x <= -8388608.0f) {
		*ip = x;
		return x != x ? x : x < 0 ? -0.0f : 0.0f;
	}
	*ip = (float)(int32_t)x;
	return x - *ip;
}

/* No udev: hwloc falls back to sysfs for what udev would have named. */
void *rn_hwloc_udev_new(void)
{
	return NULL;
}

void *rn_hwloc_udev_unref(void *udev)
{
	return NULL;
}

void *rn_hwloc_udev_device_new_from_subsystem_sysname(void *udev, const char *subsystem,
						      const char *sysname)
{
	return NULL;
}

const char *rn_hwloc_udev_device_get_property_value(void *dev, const char *key)
{
	return NULL;
}

void *rn_hwloc_udev_device_unref(void *dev)
{
	return NULL;
}
