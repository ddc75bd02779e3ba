/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PCI names, pure string functions (src/pci.c): bus ids and what a sysfs PCI path says by
 * itself. topo.h answers the questions that need the whole PCIe tree.
 */
#ifndef RAILNET_PCI_H
#define RAILNET_PCI_H

#include <stdbool.h>
#include <stddef.h>

#define RN_BUSID_MAX 16 /* "0000:48:00.0" and its NUL */

/*
 * Bus id named by s: s itself when it is a bus id ("0000:48:00.0", case-insensitive, a
 * 4- or 8-digit domain, as cuDeviceGetPCIBusId and nvidia-smi print it), else the last
 * path component that is one. Written normalised (lowercase, 4-digit domain). 0 or -EINVAL.
 */
int rn_busid_parse(const char *s, char busid[RN_BUSID_MAX]);

/*
 * Root port bus id of a PCI path: the component after "pciDDDD:BB" when it is a bus id,
 * written normalised (rn_busid_parse). 0, or -ENOENT.
 */
int rn_pci_root(const char *pci_path, char *root, size_t len);

/* Both paths name functions of one PCI device (equal but for the function digit). */
bool rn_pci_same_device(const char *a, const char *b);

#endif /* RAILNET_PCI_H */
