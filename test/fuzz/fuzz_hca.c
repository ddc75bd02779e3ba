// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the NCCL_IB_HCA parser and matcher (src/hca.c) and the NCCL_IB_ADDR_RANGE
 * parser (src/gid.c). The input is one string. A parse that succeeds must give entries the
 * header promises (1..32 non-empty names, ports 1..255 or -1, rail/plane 0..32767 or -1), and
 * matching must be deterministic; a failing parse must leave the output untouched and give
 * a reason. Built as a libFuzzer binary with clang and as a plain driver (driver.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "railnet/gid.h"
#include "railnet/hca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const devs[] = { "mlx5_0", "mlx5_1", "mlx5_10", "ib0", "" };
	struct rn_hca_filter f, sentinel;
	struct rn_addr_range r;
	char why[256] = "";
	char *s;
	int rc;

	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&f, 0x5a, sizeof(f));
	sentinel = f;
	rc = rn_hca_parse(s, &f, why, sizeof(why));
	if (rc) {
		if (rc != -EINVAL || !why[0] || memcmp(&f, &sentinel, sizeof(f)))
			abort();
	} else {
		if (f.n < 0 || f.n > RN_HCA_MAX_ENTRIES || (s[0] && !f.n))
			abort();
		for (int i = 0; i < f.n; i++) {
			const struct rn_hca_entry *e = &f.e[i];

			if (!e->name[0] || strlen(e->name) >= RN_HCA_NAME_MAX ||
			    (e->port != -1 && (e->port < 1 || e->port > RN_HCA_MAX_PORT)) ||
			    e->rail < -1 || e->rail > RN_HCA_MAX_ID || e->plane < -1 ||
			    e->plane > RN_HCA_MAX_PLANE)
				abort();
		}
		for (size_t d = 0; d < sizeof(devs) / sizeof(devs[0]); d++) {
			for (int port = 1; port <= 2; port++) {
				const struct rn_hca_entry *e1, *e2;
				bool k1 = rn_hca_keep(&f, devs[d], port, &e1);
				bool k2 = rn_hca_keep(&f, devs[d], port, &e2);

				if (k1 != k2 || e1 != e2 || (e1 && (f.exclude || !k1)))
					abort();
			}
		}
	}
	memset(&r, 0x5a, sizeof(r));
	why[0] = '\0';
	rc = rn_addr_range_parse(s, &r, why, sizeof(why));
	if (rc == 0) {
		if (r.family && ((r.family != AF_INET && r.family != AF_INET6) || r.bits < 0 ||
				 r.bits > (r.family == AF_INET ? 32 : 128)))
			abort();
		(void)rn_addr_in_range(&r, AF_INET, (const uint8_t *)"\x0a\x00\x00\x01");
	} else if (rc != -EINVAL || !why[0]) {
		abort();
	}
	free(s);
	return 0;
}
