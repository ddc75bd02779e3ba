// SPDX-License-Identifier: Apache-2.0
/*
 * PCI names (pci.h): bus ids ("0000:48:00.1", from a bare id, the CUDA driver's 8-digit-domain
 * form or a sysfs path) and what a sysfs PCI path says by itself: the root port a device sits
 * below, and whether two paths are functions of one device. Pure string work: no I/O, no
 * logging, no hwloc (topo.c answers the questions that need the whole tree).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "railnet/pci.h"

/* "dddd:bb:dd.f" (4 or 8 hex digits of domain) at s, exactly len chars; 0 or -EINVAL. */
static int busid_at(const char *s, size_t len, char busid[RN_BUSID_MAX])
{
	unsigned int dom, bus, dev, fn;
	char tail;

	if (len != 12 && len != 16)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		size_t from_end = len - i;

		if (from_end == 2		     ? s[i] != '.'
		    : from_end == 5 || from_end == 8 ? s[i] != ':'
						     : !isxdigit((unsigned char)s[i]))
			return -EINVAL;
	}
	if (sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) < 4 || dom > 0xffff ||
	    dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(busid, RN_BUSID_MAX, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int rn_busid_parse(const char *s, char busid[RN_BUSID_MAX])
{
	const char *end, *start;

	if (!s || !*s)
		return -EINVAL;
	end = s + strlen(s);
	while (end > s && end[-1] == '/')
		end--;
	/* the last path component that is a bus id */
	while (end > s) {
		start = end;
		while (start > s && start[-1] != '/')
			start--;
		if (!busid_at(start, (size_t)(end - start), busid))
			return 0;
		end = start;
		while (end > s && end[-1] == '/')
			end--;
	}
	return -EINVAL;
}

int rn_pci_root(const char *pci_path, char *root, size_t len)
{
	const char *p = pci_path, *s, *e;

	/* .../devices/pci0000:00/0000:00:01.1/0000:0c:00.0: the root port follows pciDDDD:BB */
	while ((s = strstr(p, "/pci")) != NULL) {
		s++;
		e = strchr(s, '/');
		if (!e)
			break;
		if (strchr(s, ':') && strchr(s, ':') < e) {
			const char *r = e + 1, *re = strchr(r, '/');
			size_t rl = re ? (size_t)(re - r) : strlen(r);
			char busid[RN_BUSID_MAX];

			if (!rl || !re)
				return -ENOENT; /* a device on the host bridge itself: no root port */
			/* else a directory that only looks like a host bridge: keep looking */
			if (!busid_at(r, rl, busid)) {
				if (strlen(busid) >= len)
					return -ENOENT;
				memcpy(root, busid, strlen(busid) + 1);
				return 0;
			}
		}
		p = e;
	}
	return -ENOENT;
}

bool rn_pci_same_device(const char *a, const char *b)
{
	size_t la, lb;

	if (!a || !b)
		return false;
	la = strlen(a);
	lb = strlen(b);
	/* "....:0c:00.0" vs "....:0c:00.1": same length, same up to the '.' before the digit */
	return la == lb && la > 2 && a[la - 2] == '.' && b[lb - 2] == '.' &&
	       memcmp(a, b, la - 1) == 0;
}
