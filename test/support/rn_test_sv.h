/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs fixtures for tests that drive railnet's verbs-level layers (qp.c, conn.c) in one
 * process: a temporary sv-mkview pod view, softverbs loaded through rn_verbs_load, devices
 * svdev0..N-1 opened, and the counters the leak checks use (fds, rendezvous QP entries).
 */
#ifndef RN_TEST_SV_H
#define RN_TEST_SV_H

#include <stddef.h>

#include <infiniband/verbs.h>

/* Entries of a directory, "." and ".." excepted (0 when it cannot be opened). */
int rn_test_count_dir(const char *path);
/* Open file descriptors of this process. */
int rn_test_count_fds(void);

/*
 * Build `build/bin/sv-mkview DIR ndev nport gbps` in a fresh /tmp/rn-test-<tag>-XXXXXX,
 * removed at exit; the path goes to dir. Exits 77 (skip) when softverbs is not built.
 * Returns 0 or -1.
 */
int rn_test_sv_mkview(const char *tag, int ndev, int nport, int gbps, char *dir, size_t len);

/*
 * rn_test_sv_mkview with one device, svdev0, of nport ports whose GID 1 is RoCE v2
 * ::ffff:127.0.0.1 on lo: ports railnet's discovery keeps in any network namespace (no root).
 * pci, when not NULL, is a sysfs PCI path below the view ("pci0000:00/0000:00:01.1/
 * 0000:0c:00.0"): the directory is made and class/infiniband/svdev0/device points at it, so
 * the ports have a PCI path and a PCIe root. Returns 0 or -1.
 */
int rn_test_sv_mkview_lo(const char *tag, int nport, const char *pci, char *dir, size_t len);

/*
 * SOFTVERBS_VIEW=dir, softverbs loaded with rn_verbs_load, svdev0..ndev-1 opened into
 * ctx[0..ndev-1]. Returns 0 or -1. rn_test_sv_close undoes it.
 */
int rn_test_sv_open(const char *dir, int ndev, struct ibv_context **ctx);
void rn_test_sv_close(int ndev, struct ibv_context **ctx);

/* QPs softverbs holds in the view's rendezvous directory (its fabric-wide QP claims). */
int rn_test_sv_rdv_qps(const char *dir);

#endif
