// SPDX-License-Identifier: Apache-2.0
/*
 * A shared object linked exactly as the plugin is (hidden visibility, the glibc pins, the core
 * archive with its statically linked hwloc, -z defs), exporting one function that loads a
 * topology. It proves, before net.c calls topo.c, that the relinked libhwloc.a works inside
 * a .so that needs only glibc (topo_so_needed, topo_so_glibc_floor, test_topo's dlopen case).
 */
#include "railnet/topo.h"

__attribute__((visibility("default"))) int rn_topo_so_probe(const char *xml, int *ndevs,
							    int *path_type);

int rn_topo_so_probe(const char *xml, int *ndevs, int *path_type)
{
	struct rn_topo *t;
	int ret = rn_topo_load(xml, &t);

	if (ret)
		return ret;
	*ndevs = t->ndevs;
	*path_type = rn_topo_path_type(t, "0000:03:00.0", "0000:07:00.0");
	rn_topo_destroy(t);
	return 0;
}
