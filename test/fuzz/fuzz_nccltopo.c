// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for NCCL_TOPO_FILE (src/topo.c, rn_topo_apply_nccl_file): the input is the
 * file, applied to a small fixed topology (a PCIe switch with a GPU and a NIC below it, and a
 * GPU and two NICs flat on a host bridge). Whatever the file, the call returns the number of
 * devices it placed with no WARN and the file recorded, or a negative errno with exactly one
 * WARN and every device as it was; placed devices have valid bus ids as their nodes, and
 * NCCL's path types between any two devices stay in range and symmetric.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "railnet/log.h"
#include "railnet/pci.h"
#include "railnet/topo.h"

#define RN_FZ_NAME "fuzz_nccltopo"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char rn_fz_hwloc[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<topology version=\"2.0\">\n"
	"<object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "
	"allowed_cpuset=\"0x3\" nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" "
	"gp_index=\"1\">\n"
	"<object type=\"Package\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "
	"nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\">\n"
	"<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "
	"nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
	"<object type=\"Core\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "
	"nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"4\"><object type=\"PU\" "
	"os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" nodeset=\"0x1\" "
	"complete_nodeset=\"0x1\" gp_index=\"5\"/></object>\n"
	"<object type=\"Bridge\" gp_index=\"10\" bridge_type=\"0-1\" depth=\"0\" "
	"bridge_pci=\"0000:[00-0f]\">\n"
	"<object type=\"Bridge\" gp_index=\"11\" bridge_type=\"1-1\" depth=\"0\" "
	"pci_busid=\"0000:00:01.0\" pci_type=\"0604 [1022:1483] [0000:0000] 00\" "
	"bridge_pci=\"0000:[01-0f]\">\n"
	"<object type=\"Bridge\" gp_index=\"12\" bridge_type=\"1-1\" depth=\"0\" "
	"pci_busid=\"0000:01:00.0\" pci_type=\"0604 [10b5:c040] [0000:0000] 00\" "
	"bridge_pci=\"0000:[02-0f]\">\n"
	"<object type=\"Bridge\" gp_index=\"13\" bridge_type=\"1-1\" depth=\"0\" "
	"pci_busid=\"0000:02:00.0\" pci_type=\"0604 [10b5:c040] [0000:0000] 00\" "
	"bridge_pci=\"0000:[03-0f]\">\n"
	"<object type=\"PCIDev\" gp_index=\"14\" pci_busid=\"0000:03:00.0\" "
	"pci_type=\"0302 [10de:2335] [10de:0000] 00\"/>\n"
	"<object type=\"PCIDev\" gp_index=\"15\" pci_busid=\"0000:04:00.0\" "
	"pci_type=\"0207 [15b3:101d] [15b3:0000] 00\"/>\n"
	"</object></object></object>\n"
	"<object type=\"PCIDev\" gp_index=\"16\" pci_busid=\"0000:00:04.0\" "
	"pci_type=\"0302 [10de:2335] [10de:0000] 00\"/>\n"
	"<object type=\"PCIDev\" gp_index=\"17\" pci_busid=\"0000:00:05.0\" "
	"pci_type=\"0207 [15b3:101d] [15b3:0000] 00\"/>\n"
	"<object type=\"PCIDev\" gp_index=\"18\" pci_busid=\"0000:00:06.0\" "
	"pci_type=\"0207 [15b3:101d] [15b3:0000] 00\"/>\n"
	"</object>\n</object>\n</object>\n</topology>\n";

/* A memfd holding bytes; its /proc path in path. -1 on failure. */
static int rn_fz_file(const void *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rn_topo *t;
	static struct rn_topo_dev *pristine;
	char path[64];
	int fd, rc;

	if (!t) {
		rn_log_set_logger(rn_fz_logger);
		fd = rn_fz_file(rn_fz_hwloc, sizeof(rn_fz_hwloc) - 1, path, sizeof(path));
		if (fd < 0 || rn_topo_load(path, &t) || !t || t->ndevs != 5)
			rn_fz_fail("the fixed topology does not load (%d devices)",
				   t ? t->ndevs : -1);
		close(fd);
		pristine = malloc((size_t)t->ndevs * sizeof(*pristine));
		if (!pristine)
			return 0;
		memcpy(pristine, t->devs, (size_t)t->ndevs * sizeof(*pristine));
	}
	memcpy(t->devs, pristine, (size_t)t->ndevs * sizeof(*pristine));
	t->nccl_file[0] = '\0';
	fd = rn_fz_file(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	rn_fz_warns = 0;
	rc = rn_topo_apply_nccl_file(t, path);
	close(fd);
	if (rc == -ENOMEM)
		return 0;
	if (rc < 0) {
		if (rn_fz_warns != 1 || t->nccl_file[0] ||
		    memcmp(t->devs, pristine, (size_t)t->ndevs * sizeof(*pristine)))
			rn_fz_fail("refused (%d) with %d WARNs, file \"%s\", devices %s", rc,
				   rn_fz_warns, t->nccl_file,
				   memcmp(t->devs, pristine, (size_t)t->ndevs * sizeof(*pristine))
					   ? "changed"
					   : "kept");
		return 0;
	}
	if (rn_fz_warns || strcmp(t->nccl_file, path) || rc > t->ndevs * 64)
		rn_fz_fail("taken (%d placed) with %d WARNs, file \"%s\"", rc, rn_fz_warns,
			   t->nccl_file);
	for (int i = 0; i < t->ndevs; i++) {
		const struct rn_topo_dev *d = &t->devs[i];

		if (d->nanc < 0 || d->nanc > RN_TOPO_MAX_DEPTH)
			rn_fz_fail("%s: %d nodes", d->busid, d->nanc);
		for (int k = 0; k < d->nanc; k++) {
			char b[RN_BUSID_MAX];

			if (rn_busid_parse(d->anc[k], b) || strcmp(b, d->anc[k]))
				rn_fz_fail("%s: node %d is \"%s\"", d->busid, k, d->anc[k]);
		}
		for (int j = 0; j < t->ndevs; j++) {
			int p = rn_topo_nccl_path(d, &t->devs[j]);

			if (p < RN_PATH_PIX || p > RN_PATH_SYS || p == RN_PATH_NODE ||
			    p != rn_topo_nccl_path(&t->devs[j], d))
				rn_fz_fail("path %d between %s and %s", p, d->busid,
					   t->devs[j].busid);
		}
	}
	return 0;
}
