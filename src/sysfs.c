// SPDX-License-Identifier: Apache-2.0
/*
 * sysfs.c owns the reading of small sysfs files (include/railnet/sysfs.h): the path below a
 * base directory and the first line of a file, with the kernel's errno kept. It must not
 * interpret what it reads (device.c and gid.c do) and must not log.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "railnet/sysfs.h"

int rn_sysfs_path(char *buf, size_t len, const char *base, const char *fmt, ...)
{
	va_list ap;
	size_t used;
	int n;

	n = snprintf(buf, len, "%s/", base);
	if (n < 0 || (size_t)n >= len)
		goto err_too_long;
	used = (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - used)
		goto err_too_long;
	return 0;

err_too_long:
	if (len)
		buf[0] = '\0';
	return -ENAMETOOLONG;
}

int rn_sysfs_read(const char *path, char *buf, size_t len)
{
	ssize_t got;
	size_t end;
	int fd, rc = 0;

	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, len - 1);
	if (got < 0) {
		rc = -errno;
		goto out_close;
	}
	buf[got] = '\0';
	end = strcspn(buf, "\n");
	while (end > 0 && buf[end - 1] == ' ')
		end--;
	buf[end] = '\0';
out_close:
	close(fd);
	return rc;
}
