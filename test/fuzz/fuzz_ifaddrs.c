// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the address-list reader (src/gid.c, rn_ifaddrs_load): the format
 * softverbs-fabric writes to VIEW/softverbs/ifaddrs and railnet-doctor reads with --ifaddrs
 * ("<ifname> <address>[/<prefix>]" lines). The input is the file's text. A load that succeeds
 * gives entries with a valid name, family and prefix (-1 or within the family's width); a
 * refusal names the bad line; nothing else is returned.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "railnet/gid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_ifaddr *l = NULL;
	int fd = memfd_create("ifaddrs", MFD_CLOEXEC), n = -7, bad = 0, rc;
	char path[64];

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = rn_ifaddrs_load(path, &l, &n, &bad);
	if (rc == 0) {
		if (!l || n < 0)
			abort();
		for (int i = 0; i < n; i++) {
			size_t len = strnlen(l[i].name, sizeof(l[i].name));
			int width = l[i].family == AF_INET ? 32 : 128;

			if (len == 0 || len == sizeof(l[i].name) ||
			    (l[i].family != AF_INET && l[i].family != AF_INET6) ||
			    l[i].prefix < -1 || l[i].prefix > width)
				abort();
		}
		free(l);
	} else if (rc == -EINVAL) {
		if (bad < 1 || n != -7)
			abort();
	} else if (rc >= 0) {
		abort();
	}
	close(fd);
	return 0;
}
