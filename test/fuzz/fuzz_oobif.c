// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the bootstrap-interface choice (src/oob.c): NCCL_SOCKET_IFNAME's syntax
 * against a fixed list of interfaces, and the default-route readers of /proc/net/route and
 * /proc/net/ipv6_route. The input is "<spec>\n<route file text>". A chosen interface must be
 * one of the list and up; a refusal must give a reason; the same input gives the same
 * answer; a default route's name is a non-empty interface name other than "lo".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "railnet/oob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rn_oob_if rn_fz_if(const char *name, const char *addr, bool up)
{
	struct rn_oob_if f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "%s", name);
	f.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	inet_pton(f.family, addr, f.addr);
	f.up = up;
	f.loopback = !strcmp(name, "lo");
	return f;
}

static void rn_fz_route(const uint8_t *text, size_t len, bool ipv6)
{
	char path[64], name[IF_NAMESIZE];
	int fd = memfd_create("route", MFD_CLOEXEC), rc;

	if (fd < 0)
		return;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	memset(name, 0x5a, sizeof(name));
	rc = rn_oob_route_if(path, ipv6, name);
	if (rc == 0) {
		size_t n = strnlen(name, sizeof(name));

		if (n == 0 || n == sizeof(name) || !strcmp(name, "lo"))
			abort();
	} else if (rc != -ENOENT && rc >= 0) {
		abort();
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct rn_oob_if ifs[] = {
		rn_fz_if("lo", "127.0.0.1", true),     rn_fz_if("eth0", "10.1.2.3", true),
		rn_fz_if("eth0", "fd00::3", true),     rn_fz_if("net1", "10.10.1.1", true),
		rn_fz_if("net10", "10.20.1.1", false), rn_fz_if("ib0", "fe80::1", true),
	};
	const size_t nifs = sizeof(ifs) / sizeof(ifs[0]);
	const uint8_t *nl = memchr(data, '\n', size);
	size_t slen = nl ? (size_t)(nl - data) : size, idx, idx2;
	char *spec = malloc(slen + 1), why[256], why2[256];
	int rc, rc2;

	if (!spec)
		return 0;
	memcpy(spec, data, slen);
	spec[slen] = '\0';
	why[0] = why2[0] = '\0';
	rc = rn_oob_if_select(ifs, nifs, spec, slen % 2 ? "eth0" : NULL, &idx, why, sizeof(why));
	rc2 = rn_oob_if_select(ifs, nifs, spec, slen % 2 ? "eth0" : NULL, &idx2, why2,
			       sizeof(why2));
	if (rc != rc2 || (rc == 0 && idx != idx2))
		abort(); /* deterministic */
	if (rc == 0 && (idx >= nifs || !ifs[idx].up))
		abort();
	if (rc && (rc != -ENODEV || !why[0]))
		abort();
	free(spec);
	if (nl) {
		rn_fz_route(nl + 1, size - slen - 1, false);
		rn_fz_route(nl + 1, size - slen - 1, true);
	}
	return 0;
}
