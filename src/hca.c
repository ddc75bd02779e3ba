// SPDX-License-Identifier: Apache-2.0
/*
 * hca.c owns the meaning of NCCL_IB_HCA: the strict parser and the keep/drop decision for a
 * device port (include/railnet/hca.h). config.c checks NCCL_IB_HCA with rn_hca_parse at parse
 * time; discovery (device.c) parses it again and asks rn_hca_keep about every port. No I/O
 * and no logging here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "railnet/hca.h"

bool rn_hca_name_char(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c == '-' || c == '.';
}

/*
 * One numeric field starting at *pp (ends at ',', ':' or NUL). Empty: -1. Returns 0 and
 * advances *pp, or -EINVAL with the reason.
 */
static int rn_hca_field(const char **pp, const char *what, int min, int max, int entry, int *out,
			char *why, size_t why_len)
{
	const char *p = *pp;
	long v = 0;
	int digits = 0;

	for (; *p && *p != ',' && *p != ':'; p++) {
		if (*p < '0' || *p > '9') {
			snprintf(why, why_len,
				 "entry %d: %s field has '%c'; a decimal number or "
				 "nothing",
				 entry, what, *p);
			return -EINVAL;
		}
		if (digits == 0 && *p == '0' && p[1] >= '0' && p[1] <= '9') {
			snprintf(why, why_len, "entry %d: %s with a leading zero", entry, what);
			return -EINVAL;
		}
		v = v * 10 + (*p - '0');
		if (v > max) {
			snprintf(why, why_len, "entry %d: %s out of range %d..%d", entry, what, min,
				 max);
			return -EINVAL;
		}
		digits++;
	}
	if (digits && v < min) {
		snprintf(why, why_len, "entry %d: %s %ld out of range %d..%d", entry, what, v, min,
			 max);
		return -EINVAL;
	}
	*out = digits ? (int)v : -1;
	*pp = p;
	return 0;
}

int rn_hca_parse(const char *s, struct rn_hca_filter *out, char *why, size_t why_len)
{
	static const char *const what[] = { "port", "rail", "plane" };
	static const int min[] = { 1, 0, 0 };
	static const int max[] = { RN_HCA_MAX_PORT, RN_HCA_MAX_ID, RN_HCA_MAX_PLANE };
	struct rn_hca_filter f;
	const char *p = s ? s : "";
	int rc;

	memset(&f, 0, sizeof(f));
	if (!*p) {
		*out = f;
		return 0;
	}
	if (*p == '^') {
		f.exclude = true;
		p++;
	}
	if (*p == '=') {
		f.exact = true;
		p++;
	}
	if (!*p) {
		snprintf(why, why_len, "no device after '%.*s'", (int)(p - s), s);
		return -EINVAL;
	}
	for (;;) {
		struct rn_hca_entry *e;
		size_t len = 0;
		int *fields[3];

		if (f.n == RN_HCA_MAX_ENTRIES) {
			snprintf(why, why_len, "more than %d entries", RN_HCA_MAX_ENTRIES);
			return -EINVAL;
		}
		e = &f.e[f.n];
		while (*p && *p != ',' && *p != ':') {
			if (!rn_hca_name_char((unsigned char)*p)) {
				snprintf(why, why_len,
					 "entry %d: character '%c' at byte %zu is not allowed in a "
					 "device name",
					 f.n + 1, *p, (size_t)(p - s));
				return -EINVAL;
			}
			if (len + 1 >= sizeof(e->name)) {
				snprintf(why, why_len, "entry %d: device name longer than %zu",
					 f.n + 1, sizeof(e->name) - 1);
				return -EINVAL;
			}
			e->name[len++] = *p++;
		}
		if (!len) {
			snprintf(why, why_len, "entry %d has no device name", f.n + 1);
			return -EINVAL;
		}
		e->port = e->rail = e->plane = -1;
		fields[0] = &e->port;
		fields[1] = &e->rail;
		fields[2] = &e->plane;
		for (int i = 0; *p == ':'; i++) {
			if (i == 3) {
				snprintf(why, why_len,
					 "entry %d has more than 4 fields (dev:port:rail:plane)",
					 f.n + 1);
				return -EINVAL;
			}
			p++;
			rc = rn_hca_field(&p, what[i], min[i], max[i], f.n + 1, fields[i], why,
					  why_len);
			if (rc)
				return rc;
		}
		f.n++;
		if (!*p)
			break;
		/* *p == ',' */
		p++;
		if (!*p) {
			snprintf(why, why_len, "trailing ','");
			return -EINVAL;
		}
	}
	*out = f;
	return 0;
}

static bool rn_hca_entry_matches(const struct rn_hca_filter *f, const struct rn_hca_entry *e,
				 const char *dev, int port)
{
	bool name_ok =
		f->exact ? strcmp(dev, e->name) == 0 : strncmp(dev, e->name, strlen(e->name)) == 0;

	return name_ok && (e->port == -1 || e->port == port);
}

bool rn_hca_keep(const struct rn_hca_filter *f, const char *dev, int port,
		 const struct rn_hca_entry **entry)
{
	const struct rn_hca_entry *hit = NULL;

	if (f->n == 0) {
		if (entry)
			*entry = NULL;
		return true;
	}
	for (int i = 0; i < f->n && !hit; i++)
		if (rn_hca_entry_matches(f, &f->e[i], dev, port))
			hit = &f->e[i];
	if (entry)
		*entry = f->exclude ? NULL : hit;
	return (hit != NULL) != f->exclude;
}
