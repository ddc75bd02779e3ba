/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small sysfs files, the way discovery (device.c) and the GID readers (gid.c) read them: a
 * path built below a base directory (cfg->sysfs_root, a port's directory, a PCI device's
 * realpath), and the first line of a file read with one read() and a length limit.
 *
 * Errors keep the kernel's errno: reading gid_attrs/types/N or gid_attrs/ndevs/N of another
 * network namespace's GID entry fails read() with EINVAL, and callers tell that apart from a
 * missing file (ENOENT). Nothing here logs; thread-safe. The softverbs emulator does not use
 * this file (it must stay independent of the code it tests).
 */
#ifndef RAILNET_SYSFS_H
#define RAILNET_SYSFS_H

#include <stddef.h>

/*
 * buf = "<base>/<fmt ...>" (like snprintf, so the output buffer comes first). Returns 0, or
 * -ENAMETOOLONG when it does not fit in len bytes (buf then holds "").
 */
int rn_sysfs_path(char *buf, size_t len, const char *base, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Read at most len - 1 bytes of `path` into buf and keep the first line, without its newline
 * and trailing spaces; buf is always NUL-terminated (len >= 1). An empty file gives "".
 * Returns 0, or the -errno of open() or read() (-ENOENT: no such file; -EINVAL from read():
 * the kernel hides this GID attribute from this network namespace).
 */
int rn_sysfs_read(const char *path, char *buf, size_t len);

#endif /* RAILNET_SYSFS_H */
