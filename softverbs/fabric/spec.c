// SPDX-License-Identifier: Apache-2.0
/*
 * The fabric-spec parser (grammar: docs/fabric-spec.md). One pass over the lines: each line
 * is split into tokens that remember their column, its keyword picks a handler, and every
 * name must be declared before it is referenced, so each error can point at the exact
 * line and column ("file:line:col: message"). A second pass checks what spans lines
 * (duplicate addresses, GID tables that overflow). It never writes files and never aborts:
 * any input, however broken, ends in a fabric or in -EINVAL with one message.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fabric.h"

#define SV_MAX_TOKENS 64
#define SV_DEFAULT_LATENCY_US 2.0

struct sv_tok {
	char *key; /* NUL-terminated; the whole token when there is no '=' */
	char *val; /* NULL when the token has no '=' */
	int col;   /* 1-based column of the token */
	int vcol;  /* column of the value */
	bool used;
};

struct sv_parser {
	const char *file;
	int line;
	FILE *err;
	struct sv_fabric *f;
	int node, nic, pod; /* current blocks, -1: none */
	unsigned int next_lid;
	struct sv_tok tok[SV_MAX_TOKENS];
	int ntok;
};

__attribute__((format(printf, 3, 4))) static int perr(struct sv_parser *ps, int col,
						      const char *fmt, ...)
{
	va_list ap;

	fprintf(ps->err, "%s:%d:%d: ", ps->file, ps->line, col);
	va_start(ap, fmt);
	vfprintf(ps->err, fmt, ap);
	va_end(ap);
	fputc('\n', ps->err);
	return -EINVAL;
}

static void *grow(void *arr, int n, size_t sz)
{
	void *p = realloc(arr, (size_t)(n + 1) * sz);

	if (p)
		memset((char *)p + (size_t)n * sz, 0, sz);
	return p;
}

/* ---- value parsers: 0 on success, -EINVAL otherwise (the caller reports) ---- */

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "0000:0c:00.0" or "0c:00.0" (domain 0). */
static int parse_pci(const char *s, struct sv_pci *p)
{
	unsigned int v[4] = { 0 };
	int n = 0, digits = 0, fields = 0;
	char seps[4] = { 0 };
	const char *c;

	for (c = s;; c++) {
		int h = hexval((unsigned char)*c);

		if (h >= 0) {
			if (++digits > 4 || n >= 4)
				return -EINVAL;
			v[n] = v[n] * 16 + (unsigned int)h;
			continue;
		}
		if (!digits || n >= 4)
			return -EINVAL;
		seps[n] = *c;
		n++;
		digits = 0;
		if (!*c)
			break;
		if (*c != ':' && *c != '.')
			return -EINVAL;
	}
	fields = n;
	if (fields == 4 && seps[0] == ':' && seps[1] == ':' && seps[2] == '.') {
		p->domain = v[0], p->bus = v[1], p->dev = v[2], p->fn = v[3];
	} else if (fields == 3 && seps[0] == ':' && seps[1] == '.') {
		p->domain = 0, p->bus = v[0], p->dev = v[1], p->fn = v[2];
	} else {
		return -EINVAL;
	}
	if (p->domain > 0xffff || p->bus > 0xff || p->dev > 0x1f || p->fn > 7)
		return -EINVAL;
	return 0;
}

/* 16 hex digits, ':' separators anywhere, optional 0x. */
static int parse_guid(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int h = hexval((unsigned char)*s);

		if (*s == ':')
			continue;
		if (h < 0 || ++digits > 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)h;
	}
	if (digits != 16 || !v)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	int i;

	for (i = 0; i < 6; i++) {
		int hi = hexval((unsigned char)s[0]),
		    lo = hi < 0 ? -1 : hexval((unsigned char)s[1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		mac[i] = (uint8_t)(hi << 4 | lo);
		s += 2;
		if (i < 5 && *s++ != ':')
			return -EINVAL;
	}
	return *s ? -EINVAL : 0;
}

/* "10.0.0.1", "10.0.0.1/16", "fd00::1/64"; prefix -1 when absent. */
static int parse_addr(const char *s, struct sv_addr *a)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	unsigned long pfx;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	memset(a, 0, sizeof(*a));
	a->prefix = -1;
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	if (inet_pton(AF_INET, buf, a->bytes) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, a->bytes) == 1)
		a->family = AF_INET6;
	else
		return -EINVAL;
	if (slash) {
		if (parse_uint(slash, a->family == AF_INET ? 32 : 128, &pfx) || !isdigit(*slash))
			return -EINVAL;
		a->prefix = (int)pfx;
	}
	return 0;
}

static bool addr_in_subnet(const struct sv_addr *a, const struct sv_addr *net)
{
	int i, bits = net->prefix;

	if (a->family != net->family)
		return false;
	for (i = 0; bits > 0; i++, bits -= 8) {
		uint8_t m = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

		if ((a->bytes[i] & m) != (net->bytes[i] & m))
			return false;
	}
	return true;
}

static bool addr_is_network(const struct sv_addr *a)
{
	int i, len = a->family == AF_INET ? 4 : 16;

	for (i = 0; i < len; i++) {
		int keep = a->prefix - 8 * i;
		uint8_t host = keep >= 8 ? 0 : keep <= 0 ? 0xff : (uint8_t)(0xff >> keep);

		if (a->bytes[i] & host)
			return false;
	}
	return true;
}

/* "0-31,64-95": validates; sets the bits in `words` when given. */
int sv_cpulist_bits(const char *s, uint32_t *words)
{
	unsigned long a, b;
	char *end;

	if (!*s)
		return -EINVAL;
	for (;;) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		a = strtoul(s, &end, 10);
		s = end;
		b = a;
		if (*s == '-') {
			if (!isdigit((unsigned char)s[1]))
				return -EINVAL;
			b = strtoul(s + 1, &end, 10);
			s = end;
		}
		if (b < a || b >= SV_MAX_CPUS)
			return -EINVAL;
		for (; words && a <= b; a++)
			words[a / 32] |= 1u << (a % 32);
		if (!*s)
			return 0;
		if (*s++ != ',')
			return -EINVAL;
	}
}

struct sv_speed {
	const char *name;
	int tenths; /* per lane, in 0.1 Gb/s */
};

static const struct sv_speed sv_speeds[] = {
	{ "SDR", 25 },	{ "DDR", 50 },	{ "QDR", 100 },	 { "FDR10", 100 }, { "FDR", 140 },
	{ "EDR", 250 }, { "HDR", 500 }, { "NDR", 1000 }, { "XDR", 2000 },
};

/* A plain Gb/s number maps to the width x speed that mlx5 reports for that Ethernet speed. */
static const struct {
	int gbps, width;
	const char *speed;
} sv_plain_rates[] = {
	{ 10, 1, "QDR" },  { 25, 1, "EDR" },  { 40, 4, "QDR" },	 { 50, 2, "EDR" },
	{ 100, 4, "EDR" }, { 200, 4, "HDR" }, { 400, 4, "NDR" }, { 800, 4, "XDR" },
};

static void format_rate(char *buf, size_t len, int tenths, int width, const char *speed)
{
	snprintf(buf, len, "%d%s Gb/sec (%dX %s)", tenths / 10, tenths % 10 ? ".5" : "", width,
		 speed);
}

/* "100" or "100 Gb/sec (4X EDR)" (the kernel's format, checked for consistency). */
static int parse_rate(const char *s, struct sv_port *p)
{
	unsigned long v;
	size_t i;
	int width, n = 0;
	char num[16], speed[16];

	if (!parse_uint(s, 100000, &v)) {
		for (i = 0; i < sizeof(sv_plain_rates) / sizeof(sv_plain_rates[0]); i++) {
			if (sv_plain_rates[i].gbps != (int)v)
				continue;
			format_rate(p->rate, sizeof(p->rate), (int)v * 10, sv_plain_rates[i].width,
				    sv_plain_rates[i].speed);
			p->rate_gbps = (int)v;
			return 0;
		}
		return -EINVAL;
	}
	if (sscanf(s, "%15[0-9.] Gb/sec (%dX %15[A-Z0-9])%n", num, &width, speed, &n) != 3 ||
	    s[n] || (width != 1 && width != 2 && width != 4 && width != 8 && width != 12))
		return -EINVAL;
	for (i = 0; i < sizeof(sv_speeds) / sizeof(sv_speeds[0]); i++) {
		char want[48];
		int tenths = sv_speeds[i].tenths * width;

		if (strcmp(sv_speeds[i].name, speed))
			continue;
		format_rate(want, sizeof(want), tenths, width, speed);
		if (strcmp(want, s))
			return -EINVAL;
		strcpy(p->rate, want);
		p->rate_gbps = (tenths + 5) / 10;
		return 0;
	}
	return -EINVAL;
}

static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

/* ---- tokens ---- */

/*
 * Splits `line` in place. Tokens are separated by blanks; a value may be double-quoted
 * (key="a b"), and so may a whole token. '#' outside quotes starts a comment.
 */
static int tokenize(struct sv_parser *ps, char *line)
{
	char *p = line;
	int shift = 0; /* characters removed by unquoting, to keep columns true */

	ps->ntok = 0;
	for (;;) {
		struct sv_tok *t;

		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p || *p == '#')
			return 0;
		if (ps->ntok == SV_MAX_TOKENS)
			return perr(ps, (int)(p - line) + shift + 1,
				    "too many words on one line (at most %d)", SV_MAX_TOKENS);
		t = &ps->tok[ps->ntok++];
		memset(t, 0, sizeof(*t));
		t->col = (int)(p - line) + shift + 1;
		t->key = p;
		t->vcol = t->col; /* until a '=' is seen */
		for (;;) {
			if (*p == '"') {
				char *q = strchr(p + 1, '"');

				if (!q)
					return perr(ps, (int)(p - line) + shift + 1,
						    "unterminated quoted string");
				/* drop the quotes by shifting the text left */
				memmove(p, p + 1, (size_t)(q - p - 1));
				memmove(q - 1, q + 1, strlen(q + 1) + 1);
				p = q - 1;
				shift += 2;
				continue;
			}
			if (!*p || *p == ' ' || *p == '\t' || *p == '\r' || *p == '#')
				break;
			if (*p == '=' && !t->val) {
				*p = 0;
				t->val = p + 1;
				t->vcol = (int)(p - line) + shift + 2;
			} else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
				return perr(ps, (int)(p - line) + shift + 1,
					    "unexpected character 0x%02x (only printable ASCII)",
					    (unsigned char)*p);
			}
			p++;
		}
		if (*p == '#')
			*p = 0; /* the rest of the line is a comment */
		else if (*p)
			*p++ = 0;
		if (!*t->key)
			return perr(ps, t->col, "'=%s' has no key before '='",
				    t->val ? t->val : "");
	}
}

/* The value of key=... on this line, or NULL; complains about a bare `key` without value. */
static struct sv_tok *opt(struct sv_parser *ps, const char *key)
{
	int i;

	for (i = 2; i < ps->ntok; i++) {
		if (strcmp(ps->tok[i].key, key))
			continue;
		ps->tok[i].used = true;
		return &ps->tok[i];
	}
	return NULL;
}

static int need(struct sv_parser *ps, const char *key, const char *what, struct sv_tok **out)
{
	struct sv_tok *t = opt(ps, key);

	*out = t;
	if (!t)
		return perr(ps, ps->tok[0].col, "'%s' needs %s=%s", ps->tok[0].key, key, what);
	return 0;
}

static int need_value(struct sv_parser *ps, struct sv_tok *t)
{
	if (!t->val)
		return perr(ps, t->col, "'%s' needs a value (%s=...)", t->key, t->key);
	if (!*t->val)
		return perr(ps, t->vcol, "empty value for '%s'", t->key);
	return 0;
}

static int flag(struct sv_parser *ps, const char *key, int *out)
{
	struct sv_tok *t = opt(ps, key);

	*out = 0;
	if (!t)
		return 0;
	if (t->val)
		return perr(ps, t->col, "'%s' is a flag and takes no value", key);
	*out = 1;
	return 0;
}

/* Every token after the name must have been consumed by the handler. */
static int check_tokens(struct sv_parser *ps, const char *allowed)
{
	int i, j;

	for (i = 2; i < ps->ntok; i++) {
		if (ps->tok[i].used)
			continue;
		for (j = 2; j < i; j++)
			if (!strcmp(ps->tok[j].key, ps->tok[i].key))
				return perr(ps, ps->tok[i].col, "'%s' given twice", ps->tok[i].key);
		if (!ps->tok[i].val)
			return perr(ps, ps->tok[i].col,
				    "unexpected word '%s' (expected key=value; "
				    "'%s' takes: %s)",
				    ps->tok[i].key, ps->tok[0].key, allowed);
		return perr(ps, ps->tok[i].col, "unknown key '%s' for '%s' (allowed: %s)",
			    ps->tok[i].key, ps->tok[0].key, allowed);
	}
	/* a key consumed once but present twice */
	for (i = 2; i < ps->ntok; i++)
		for (j = 2; j < i; j++)
			if (!strcmp(ps->tok[j].key, ps->tok[i].key))
				return perr(ps, ps->tok[i].col, "'%s' given twice", ps->tok[i].key);
	return 0;
}

static int hexid(struct sv_parser *ps, const char *key, unsigned int def, unsigned int *out)
{
	struct sv_tok *t = opt(ps, key);
	unsigned long v;

	*out = def;
	if (!t)
		return 0;
	if (need_value(ps, t))
		return -EINVAL;
	if (parse_uint(t->val, 0xffff, &v))
		return perr(ps, t->vcol, "%s=%s: expected a 16-bit PCI id such as 0x15b3", key,
			    t->val);
	*out = (unsigned int)v;
	return 0;
}

static int str_opt(struct sv_parser *ps, const char *key, const char *def, char *out, size_t len)
{
	struct sv_tok *t = opt(ps, key);

	snprintf(out, len, "%s", def);
	if (!t)
		return 0;
	if (need_value(ps, t))
		return -EINVAL;
	if (strlen(t->val) >= len)
		return perr(ps, t->vcol, "%s is too long (at most %zu characters)", key, len - 1);
	strcpy(out, t->val);
	return 0;
}

/* pcie=gen<1-6>x<1|2|4|8|12|16|32>, default gen4x16 (an A100 or a ConnectX-6 in its slot) */
static int pcie_opt(struct sv_parser *ps, struct sv_pcie *out)
{
	struct sv_tok *t = opt(ps, "pcie");
	unsigned int gen, width;
	char tail;

	out->gen = 4;
	out->width = 16;
	if (!t)
		return 0;
	if (need_value(ps, t))
		return -EINVAL;
	if (sscanf(t->val, "gen%ux%u%c", &gen, &width, &tail) != 2 || gen < 1 || gen > 6 ||
	    (width != 1 && width != 2 && width != 4 && width != 8 && width != 12 && width != 16 &&
	     width != 32))
		return perr(ps, t->vcol,
			    "pcie=%s: expected gen<1-6>x<lanes>, lanes 1, 2, 4, 8, 12, 16 or 32 "
			    "(gen4x16, gen5x16)",
			    t->val);
	out->gen = (int)gen;
	out->width = (int)width;
	return 0;
}

const char *sv_pcie_speed_str(int gen)
{
	static const char *const s[] = { "2.5 GT/s PCIe",  "5.0 GT/s PCIe",  "8.0 GT/s PCIe",
					 "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe" };

	return gen >= 1 && gen <= 6 ? s[gen - 1] : "Unknown";
}

double sv_pcie_gbs(const struct sv_pcie *l)
{
	static const double gts[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	double enc = l->gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0; /* gen6 (FLIT) counted as gen5 */

	if (l->gen < 1 || l->gen > 6)
		return 0;
	return l->width * gts[l->gen - 1] * enc / 8.0;
}

/* ---- lookups ---- */

static struct sv_node *cur_node(struct sv_parser *ps)
{
	return ps->node < 0 ? NULL : &ps->f->nodes[ps->node];
}

static int find_rail(const struct sv_fabric *f, const char *name)
{
	int i;

	for (i = 0; i < f->nrails; i++)
		if (!strcmp(f->rails[i].name, name))
			return i;
	return -1;
}

static int find_numa(const struct sv_node *n, int id)
{
	int i;

	for (i = 0; i < n->nnumas; i++)
		if (n->numas[i].id == id)
			return i;
	return -1;
}

static int find_root(const struct sv_node *n, const char *name)
{
	int i;

	for (i = 0; i < n->nroots; i++)
		if (!strcmp(n->roots[i].name, name))
			return i;
	return -1;
}

static int find_nic(const struct sv_node *n, const char *name)
{
	int i;

	for (i = 0; i < n->nnics; i++)
		if (!strcmp(n->nics[i].name, name))
			return i;
	return -1;
}

static int find_gpu(const struct sv_node *n, const char *name)
{
	int i;

	for (i = 0; i < n->ngpus; i++)
		if (!strcmp(n->gpus[i].name, name))
			return i;
	return -1;
}

/* A port by its host netdev name ("rdma3") or as "mlx5_3:1". */
static int find_port(const struct sv_node *n, const char *s, int *nic, int *port)
{
	char name[SV_NAME_MAX];
	const char *colon = strchr(s, ':');
	int i, j;

	if (colon) {
		unsigned long pn;

		if ((size_t)(colon - s) >= sizeof(name) || parse_uint(colon + 1, 255, &pn))
			return -ENOENT;
		memcpy(name, s, (size_t)(colon - s));
		name[colon - s] = 0;
		i = find_nic(n, name);
		if (i < 0)
			return -ENOENT;
		for (j = 0; j < n->nics[i].nports; j++) {
			if (n->nics[i].ports[j].num == (int)pn) {
				*nic = i, *port = j;
				return 0;
			}
		}
		return -ENOENT;
	}
	for (i = 0; i < n->nnics; i++) {
		for (j = 0; j < n->nics[i].nports; j++) {
			if (n->nics[i].ports[j].netdev[0] &&
			    !strcmp(n->nics[i].ports[j].netdev, s)) {
				*nic = i, *port = j;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int pci_in_use(const struct sv_node *n, const struct sv_pci *p)
{
	int i;

	for (i = 0; i < n->nroots; i++)
		if (!memcmp(&n->roots[i].port, p, sizeof(*p)) ||
		    (n->roots[i].has_switch && (!memcmp(&n->roots[i].up, p, sizeof(*p)) ||
						!memcmp(&n->roots[i].down, p, sizeof(*p)))))
			return 1;
	for (i = 0; i < n->nnics; i++)
		if (!memcmp(&n->nics[i].pci, p, sizeof(*p)))
			return 1;
	for (i = 0; i < n->ngpus; i++)
		if (!memcmp(&n->gpus[i].pci, p, sizeof(*p)))
			return 1;
	return 0;
}

static int netdev_in_use(const struct sv_node *n, const char *ifname)
{
	int i, j;

	for (i = 0; i < n->nnics; i++)
		for (j = 0; j < n->nics[i].nports; j++)
			if (!strcmp(n->nics[i].ports[j].netdev, ifname))
				return 1;
	return 0;
}

/* ---- line handlers ---- */

static int need_node(struct sv_parser *ps)
{
	if (ps->node < 0)
		return perr(ps, ps->tok[0].col, "'%s' outside a node (put 'node <name>' first)",
			    ps->tok[0].key);
	return 0;
}

static int name_arg(struct sv_parser *ps, size_t max, const char *what)
{
	if (ps->ntok < 2)
		return perr(ps, ps->tok[0].col, "'%s' needs a %s", ps->tok[0].key, what);
	if (ps->tok[1].val)
		return perr(ps, ps->tok[1].col, "'%s' needs a %s before any key=value",
			    ps->tok[0].key, what);
	if (!valid_name(ps->tok[1].key, max))
		return perr(ps, ps->tok[1].col,
			    "invalid %s '%s' (1-%zu characters of A-Z a-z 0-9 _ - .)", what,
			    ps->tok[1].key, max - 1);
	return 0;
}

static int addr_list(struct sv_parser *ps, struct sv_tok *t, int rail, struct sv_addr *addrs,
		     int *naddrs)
{
	char buf[1024], *save = NULL, *item;
	int col = t->vcol;

	if (need_value(ps, t))
		return -EINVAL;
	if (strlen(t->val) >= sizeof(buf))
		return perr(ps, t->vcol, "address list too long");
	strcpy(buf, t->val);
	*naddrs = 0;
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		struct sv_addr *a = &addrs[*naddrs];
		const struct sv_rail *r = rail >= 0 ? &ps->f->rails[rail] : NULL;

		col = t->vcol + (int)(item - buf);
		if (*naddrs == SV_MAX_ADDRS)
			return perr(ps, col, "too many addresses (at most %d)", SV_MAX_ADDRS);
		if (parse_addr(item, a))
			return perr(ps, col,
				    "'%s' is not an IPv4 or IPv6 address (a.b.c.d[/len] "
				    "or x:x::x[/len])",
				    item);
		if (a->family == AF_INET6 && a->bytes[0] == 0xfe && (a->bytes[1] & 0xc0) == 0x80)
			return perr(ps, col,
				    "%s: link-local addresses are implicit (GID 0/1 is "
				    "made from the MAC); give a routable address",
				    item);
		if (r) {
			char nets[256] = "", net[64];
			int k;

			for (k = 0; k < r->nsubnets; k++) {
				if (addr_in_subnet(a, &r->subnets[k]))
					break;
				sv_addr_str(&r->subnets[k], 1, net, sizeof(net));
				snprintf(nets + strlen(nets), sizeof(nets) - strlen(nets), "%s%s",
					 k ? " or " : "", net);
			}
			if (k == r->nsubnets)
				return perr(ps, col, "%s is not in rail %s's subnet %s", item,
					    r->name, nets);
			if (a->prefix < 0)
				a->prefix = r->subnets[k].prefix;
		}
		if (a->prefix < 0)
			a->prefix = a->family == AF_INET ? 24 : 64;
		(*naddrs)++;
	}
	if (!*naddrs)
		return perr(ps, t->vcol, "empty address list");
	return 0;
}

static int do_rail(struct sv_parser *ps)
{
	struct sv_fabric *f = ps->f;
	struct sv_rail *r;
	struct sv_tok *t;
	void *p;

	if (name_arg(ps, SV_NAME_MAX, "rail name"))
		return -EINVAL;
	if (find_rail(f, ps->tok[1].key) >= 0)
		return perr(ps, ps->tok[1].col, "rail '%s' is declared twice", ps->tok[1].key);
	p = grow(f->rails, f->nrails, sizeof(*f->rails));
	if (!p)
		return -ENOMEM;
	f->rails = p;
	r = &f->rails[f->nrails];
	strcpy(r->name, ps->tok[1].key);
	r->line = ps->line;
	r->latency_us = -1;
	if (need(ps, "subnet", "<address>/<prefix>", &t) || need_value(ps, t))
		return -EINVAL;
	{
		char buf[512], *save = NULL, *item;

		if (strlen(t->val) >= sizeof(buf))
			return perr(ps, t->vcol, "subnet list too long");
		strcpy(buf, t->val);
		for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
			struct sv_addr *a = &r->subnets[r->nsubnets];
			int col = t->vcol + (int)(item - buf);

			if (r->nsubnets == 4)
				return perr(ps, col, "at most 4 subnets per rail");
			if (parse_addr(item, a) || a->prefix < 0)
				return perr(ps, col,
					    "subnet %s: expected a network such as "
					    "10.224.0.0/16 or fd00:224::/64",
					    item);
			if (!addr_is_network(a))
				return perr(ps, col, "subnet %s has host bits set", item);
			r->nsubnets++;
		}
		if (!r->nsubnets)
			return perr(ps, t->vcol, "empty subnet list");
	}
	t = opt(ps, "latency_us");
	if (t && (!t->val || parse_double(t->val, 0, 1e6, &r->latency_us)))
		return perr(ps, t->vcol, "latency_us=%s: expected microseconds, 0 to 1e6",
			    t->val ? t->val : "");
	if (check_tokens(ps, "subnet latency_us"))
		return -EINVAL;
	f->nrails++;
	return 0;
}

static int do_node(struct sv_parser *ps)
{
	struct sv_fabric *f = ps->f;
	struct sv_node *n;
	struct sv_tok *t;
	void *p;
	int i;

	if (name_arg(ps, 32, "node name"))
		return -EINVAL;
	for (i = 0; i < f->nnodes; i++)
		if (!strcmp(f->nodes[i].name, ps->tok[1].key))
			return perr(ps, ps->tok[1].col, "node '%s' is declared twice",
				    ps->tok[1].key);
	p = grow(f->nodes, f->nnodes, sizeof(*f->nodes));
	if (!p)
		return -ENOMEM;
	f->nodes = p;
	n = &f->nodes[f->nnodes];
	strcpy(n->name, ps->tok[1].key);
	n->line = ps->line;
	t = opt(ps, "netns");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		if (!strcmp(t->val, "exclusive"))
			n->exclusive = 1;
		else if (strcmp(t->val, "shared"))
			return perr(ps, t->vcol, "netns=%s: expected shared or exclusive", t->val);
	}
	t = opt(ps, "gdr");
	if (t) {
		static const char *const modes[] = { "off", "peermem", "dmabuf", "both" };

		if (need_value(ps, t))
			return -EINVAL;
		for (i = 0; i < 4 && strcmp(t->val, modes[i]); i++)
			;
		if (i == 4)
			return perr(ps, t->vcol, "gdr=%s: expected off, peermem, dmabuf or both",
				    t->val);
		n->gdr = i; /* SV_GDR_* bits: peermem 1, dmabuf 2 */
	}
	if (check_tokens(ps, "netns gdr"))
		return -EINVAL;
	ps->node = f->nnodes++;
	ps->nic = ps->pod = -1;
	return 0;
}

static int do_numa(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_numa *m;
	struct sv_tok *t;
	unsigned long id;
	double gb = 64;
	void *p;

	if (need_node(ps))
		return -EINVAL;
	if (ps->ntok < 2 || ps->tok[1].val || parse_uint(ps->tok[1].key, 255, &id))
		return perr(ps, ps->ntok < 2 ? ps->tok[0].col : ps->tok[1].col,
			    "'numa' needs a NUMA node number 0-255");
	if (find_numa(n, (int)id) >= 0)
		return perr(ps, ps->tok[1].col, "numa %lu is declared twice on node %s", id,
			    n->name);
	p = grow(n->numas, n->nnumas, sizeof(*n->numas));
	if (!p)
		return -ENOMEM;
	n->numas = p;
	m = &n->numas[n->nnumas];
	m->id = (int)id;
	if (need(ps, "cpus", "<cpulist>", &t) || need_value(ps, t))
		return -EINVAL;
	if (sv_cpulist_bits(t->val, NULL) || strlen(t->val) >= sizeof(m->cpus))
		return perr(ps, t->vcol,
			    "cpus=%s: expected a cpu list such as 0-31,64-95 "
			    "(cpus below 4096)",
			    t->val);
	strcpy(m->cpus, t->val);
	t = opt(ps, "memory_gb");
	if (t && (!t->val || parse_double(t->val, 0.001, 1 << 20, &gb)))
		return perr(ps, t->vcol, "memory_gb=%s: expected a size in GiB",
			    t->val ? t->val : "");
	m->memory_bytes = (uint64_t)(gb * 1073741824.0);
	if (check_tokens(ps, "cpus memory_gb"))
		return -EINVAL;
	n->nnumas++;
	return 0;
}

static int numa_ref(struct sv_parser *ps, struct sv_tok *t, int *out)
{
	unsigned long id;

	if (need_value(ps, t))
		return -EINVAL;
	if (parse_uint(t->val, 255, &id))
		return perr(ps, t->vcol, "numa=%s: expected a NUMA node number", t->val);
	if (find_numa(cur_node(ps), (int)id) < 0)
		return perr(ps, t->vcol,
			    "numa %lu is not declared on node %s (add 'numa %lu "
			    "cpus=...' before)",
			    id, cur_node(ps)->name, id);
	*out = (int)id;
	return 0;
}

static int pci_arg(struct sv_parser *ps, const char *key, struct sv_pci *out)
{
	struct sv_tok *t;

	if (need(ps, key, "<dddd:bb:dd.f>", &t) || need_value(ps, t))
		return -EINVAL;
	if (parse_pci(t->val, out))
		return perr(ps, t->vcol, "%s=%s: expected a PCI address such as 0000:0c:00.0", key,
			    t->val);
	if (pci_in_use(cur_node(ps), out))
		return perr(ps, t->vcol, "PCI address %s is used twice on node %s", t->val,
			    cur_node(ps)->name);
	return 0;
}

static int do_root(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_root *r;
	struct sv_tok *t;
	void *p;

	if (need_node(ps) || name_arg(ps, SV_NAME_MAX, "root name"))
		return -EINVAL;
	if (find_root(n, ps->tok[1].key) >= 0)
		return perr(ps, ps->tok[1].col, "root '%s' is declared twice on node %s",
			    ps->tok[1].key, n->name);
	p = grow(n->roots, n->nroots, sizeof(*n->roots));
	if (!p)
		return -ENOMEM;
	n->roots = p;
	r = &n->roots[n->nroots];
	strcpy(r->name, ps->tok[1].key);
	if (pci_arg(ps, "port", &r->port) || need(ps, "numa", "<id>", &t) ||
	    numa_ref(ps, t, &r->numa) || hexid(ps, "vendor", 0x1022, &r->vendor) ||
	    hexid(ps, "device", 0x1483, &r->device))
		return -EINVAL;
	t = opt(ps, "switch");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		if (parse_pci(t->val, &r->up) || r->up.bus >= 0xfe ||
		    r->up.domain != r->port.domain || r->up.bus <= r->port.bus)
			return perr(ps, t->vcol,
				    "switch=%s: expected the PCI address of the switch's upstream "
				    "port, in the root port's domain, on a bus above the root "
				    "port's and below fe",
				    t->val);
		r->down = (struct sv_pci){ .domain = r->up.domain, .bus = r->up.bus + 1 };
		if (pci_in_use(n, &r->up) || pci_in_use(n, &r->down))
			return perr(ps, t->vcol,
				    "switch=%s: the address (or its downstream port "
				    "on the next bus) is used already",
				    t->val);
		r->has_switch = 1;
	}
	if (check_tokens(ps, "port numa vendor device switch"))
		return -EINVAL;
	n->nroots++;
	return 0;
}

/* Checks an endpoint's bus against its root port: it must sit below the root port's bus. */
static int below_root(struct sv_parser *ps, const struct sv_root *r, const struct sv_pci *p)
{
	char a[32], b[32];

	if (p->domain == r->port.domain && p->bus > r->port.bus &&
	    (!r->has_switch || p->bus > r->down.bus))
		return 0;
	if (r->has_switch && p->domain == r->port.domain && p->bus > r->port.bus) {
		sv_pci_str(p, a, sizeof(a));
		sv_pci_str(&r->down, b, sizeof(b));
		return perr(ps, ps->tok[0].col,
			    "%s cannot sit below root %s's switch: its bus must be above the "
			    "switch's downstream port %s's",
			    a, r->name, b);
	}
	sv_pci_str(p, a, sizeof(a));
	sv_pci_str(&r->port, b, sizeof(b));
	return perr(ps, ps->tok[0].col,
		    "%s cannot sit below root %s (root port %s): its bus must "
		    "be in the same domain and above the root port's bus",
		    a, r->name, b);
}

static int root_numa(struct sv_parser *ps, int root, int *numa)
{
	struct sv_tok *t = opt(ps, "numa");

	*numa = cur_node(ps)->roots[root].numa;
	if (t)
		return numa_ref(ps, t, numa);
	return 0;
}

static int do_nic(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_nic *c;
	struct sv_tok *t;
	void *p;

	if (need_node(ps) || name_arg(ps, SV_NAME_MAX, "RDMA device name"))
		return -EINVAL;
	if (find_nic(n, ps->tok[1].key) >= 0)
		return perr(ps, ps->tok[1].col, "nic '%s' is declared twice on node %s",
			    ps->tok[1].key, n->name);
	p = grow(n->nics, n->nnics, sizeof(*n->nics));
	if (!p)
		return -ENOMEM;
	n->nics = p;
	c = &n->nics[n->nnics];
	strcpy(c->name, ps->tok[1].key);
	c->line = ps->line;
	c->vf_of = -1;
	if (pci_arg(ps, "pci", &c->pci) || need(ps, "root", "<root name>", &t) || need_value(ps, t))
		return -EINVAL;
	c->root = find_root(n, t->val);
	if (c->root < 0)
		return perr(ps, t->vcol, "root '%s' is not declared on node %s", t->val, n->name);
	if (below_root(ps, &n->roots[c->root], &c->pci) || root_numa(ps, c->root, &c->numa))
		return -EINVAL;
	if (need(ps, "guid", "<16 hex digits>", &t) || need_value(ps, t))
		return -EINVAL;
	if (parse_guid(t->val, &c->guid))
		return perr(ps, t->vcol,
			    "guid=%s: expected 16 hex digits such as "
			    "b8ce:f603:00a1:2b3c (not all zero)",
			    t->val);
	t = opt(ps, "vf_of");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		c->vf_of = find_nic(n, t->val);
		if (c->vf_of < 0 || n->nics[c->vf_of].vf_of >= 0)
			return perr(ps, t->vcol, "vf_of=%s: not a PF declared earlier on node %s",
				    t->val, n->name);
		if (n->nics[c->vf_of].root != c->root)
			return perr(ps, t->vcol, "vf_of=%s: a VF sits on its PF's root (%s)",
				    t->val, n->roots[n->nics[c->vf_of].root].name);
	}
	if (hexid(ps, "vendor", 0x15b3, &c->vendor) ||
	    hexid(ps, "device", c->vf_of >= 0 ? 0x101c : 0x101b, &c->device) ||
	    str_opt(ps, "fw", "20.39.1002", c->fw_ver, sizeof(c->fw_ver)) ||
	    str_opt(ps, "board", "MT_0000000223", c->board_id, sizeof(c->board_id)) ||
	    pcie_opt(ps, &c->pcie) ||
	    check_tokens(ps, "pci root guid numa vf_of vendor device fw board pcie"))
		return -EINVAL;
	ps->nic = n->nnics++;
	ps->pod = -1;
	return 0;
}

static int do_port(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_nic *c;
	struct sv_port *pt;
	struct sv_tok *t;
	unsigned long v;
	int i, st;

	if (need_node(ps))
		return -EINVAL;
	if (ps->nic < 0)
		return perr(ps, ps->tok[0].col, "'port' must follow a 'nic' line");
	c = &n->nics[ps->nic];
	if (ps->ntok < 2 || ps->tok[1].val || parse_uint(ps->tok[1].key, 255, &v) || !v)
		return perr(ps, ps->ntok < 2 ? ps->tok[0].col : ps->tok[1].col,
			    "'port' needs a port number 1-255");
	if (c->nports == SV_MAX_PORTS)
		return perr(ps, ps->tok[1].col, "nic %s has too many ports (at most %d)", c->name,
			    SV_MAX_PORTS);
	for (i = 0; i < c->nports; i++)
		if (c->ports[i].num == (int)v)
			return perr(ps, ps->tok[1].col, "port %lu of %s is declared twice", v,
				    c->name);
	pt = &c->ports[c->nports];
	memset(pt, 0, sizeof(*pt));
	pt->num = (int)v;
	pt->line = ps->line;
	pt->rail = -1;
	pt->latency_us = -1;
	pt->moved_to = -1;
	pt->active = 1;

	if (need(ps, "link", "Ethernet|InfiniBand", &t) || need_value(ps, t))
		return -EINVAL;
	if (!strcmp(t->val, "InfiniBand"))
		pt->ib = 1;
	else if (strcmp(t->val, "Ethernet"))
		return perr(ps, t->vcol, "link=%s: expected Ethernet or InfiniBand", t->val);
	if (need(ps, "rate", "<Gb/s>", &t) || need_value(ps, t))
		return -EINVAL;
	if (parse_rate(t->val, pt))
		return perr(ps, t->vcol,
			    "rate=%s: expected 10|25|40|50|100|200|400|800 or the "
			    "kernel's form such as \"100 Gb/sec (4X EDR)\"",
			    t->val);

	t = opt(ps, "state");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		st = !strcmp(t->val, "active") ? 1 : !strcmp(t->val, "down") ? 0 : -1;
		if (st < 0)
			return perr(ps, t->vcol, "state=%s: expected active or down", t->val);
		pt->active = st;
	}
	t = opt(ps, "mtu");
	pt->mtu = pt->ib ? 4096 : 9000;
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		if (parse_uint(t->val, 9216, &v) ||
		    (pt->ib ? (v < 256 || v > 4096 || (v & (v - 1))) : v < 1280))
			return perr(ps, t->vcol, "mtu=%s: expected %s", t->val,
				    pt->ib ? "256, 512, 1024, 2048 or 4096" : "1280 to 9216");
		pt->mtu = (int)v;
	}
	t = opt(ps, "latency_us");
	if (t && (!t->val || parse_double(t->val, 0, 1e6, &pt->latency_us)))
		return perr(ps, t->vcol, "latency_us=%s: expected microseconds, 0 to 1e6",
			    t->val ? t->val : "");
	t = opt(ps, "gid_tbl_len");
	pt->gid_tbl_len = 16;
	if (t) {
		if (!t->val || parse_uint(t->val, SV_GID_TBL_MAX, &v) || !v)
			return perr(ps, t->vcol, "gid_tbl_len=%s: expected 1 to %d",
				    t->val ? t->val : "", SV_GID_TBL_MAX);
		pt->gid_tbl_len = (int)v;
	}
	t = opt(ps, "rail");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		pt->rail = find_rail(ps->f, t->val);
		if (pt->rail < 0)
			return perr(ps, t->vcol,
				    "rail '%s' is not declared (add 'rail %s "
				    "subnet=...' before the nodes)",
				    t->val, t->val);
	}
	/* default MAC: the GUID's outer bytes, as mlx5 derives one from the other */
	for (i = 0; i < 3; i++) {
		pt->mac[i] = (uint8_t)(c->guid >> (56 - 8 * i));
		pt->mac[3 + i] = (uint8_t)(c->guid >> (16 - 8 * i));
	}
	pt->mac[5] = (uint8_t)(pt->mac[5] + pt->num - 1);
	t = opt(ps, "mac");
	if (t && (!t->val || parse_mac(t->val, pt->mac)))
		return perr(ps, t->vcol, "mac=%s: expected xx:xx:xx:xx:xx:xx",
			    t->val ? t->val : "");

	if (pt->ib) {
		const char *eth_only[] = { "netdev", "addr", "mac" };

		for (i = 0; i < 3; i++) {
			t = opt(ps, eth_only[i]);
			if (t)
				return perr(ps, t->col, "'%s' applies to Ethernet ports only",
					    eth_only[i]);
		}
		t = opt(ps, "lid");
		pt->lid = ps->next_lid;
		if (t) {
			if (!t->val || parse_uint(t->val, 0xbfff, &v) || !v)
				return perr(ps, t->vcol, "lid=%s: expected a unicast LID 1-0xbfff",
					    t->val ? t->val : "");
			pt->lid = (unsigned int)v;
		}
		ps->next_lid = pt->lid + 1;
		t = opt(ps, "sm_lid");
		pt->sm_lid = 1;
		if (t) {
			if (!t->val || parse_uint(t->val, 0xbfff, &v) || !v)
				return perr(ps, t->vcol, "sm_lid=%s: expected 1-0xbfff",
					    t->val ? t->val : "");
			pt->sm_lid = (unsigned int)v;
		}
		pt->subnet_prefix[0] = 0xfe, pt->subnet_prefix[1] = 0x80;
		t = opt(ps, "subnet_prefix");
		if (t) {
			uint64_t sp;

			if (!t->val || parse_guid(t->val, &sp))
				return perr(ps, t->vcol,
					    "subnet_prefix=%s: expected 16 hex digits "
					    "such as fe80:0000:0000:0000",
					    t->val ? t->val : "");
			for (i = 0; i < 8; i++)
				pt->subnet_prefix[i] = (uint8_t)(sp >> (56 - 8 * i));
		}
		if (check_tokens(ps, "link rate state mtu latency_us gid_tbl_len rail lid sm_lid "
				     "subnet_prefix"))
			return -EINVAL;
		c->nports++;
		return 0;
	}

	if (opt(ps, "lid") || opt(ps, "sm_lid") || opt(ps, "subnet_prefix"))
		return perr(ps, ps->tok[0].col,
			    "lid, sm_lid and subnet_prefix apply to "
			    "InfiniBand ports only");
	if (need(ps, "netdev", "<ifname>", &t) || need_value(ps, t))
		return -EINVAL;
	if (!valid_name(t->val, SV_IFNAME_MAX))
		return perr(ps, t->vcol,
			    "netdev=%s: expected an interface name of 1-15 "
			    "characters",
			    t->val);
	if (netdev_in_use(n, t->val))
		return perr(ps, t->vcol, "netdev %s is used twice on node %s", t->val, n->name);
	strcpy(pt->netdev, t->val);
	t = opt(ps, "addr");
	if (t && addr_list(ps, t, pt->rail, pt->addrs, &pt->naddrs))
		return -EINVAL;
	if (check_tokens(ps, "link rate state mtu latency_us gid_tbl_len rail netdev mac addr"))
		return -EINVAL;
	c->nports++;
	return 0;
}

static int do_gpu(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_gpu *g;
	struct sv_tok *t;
	void *p;

	if (need_node(ps) || name_arg(ps, SV_NAME_MAX, "GPU name"))
		return -EINVAL;
	if (find_gpu(n, ps->tok[1].key) >= 0)
		return perr(ps, ps->tok[1].col, "gpu '%s' is declared twice on node %s",
			    ps->tok[1].key, n->name);
	p = grow(n->gpus, n->ngpus, sizeof(*n->gpus));
	if (!p)
		return -ENOMEM;
	n->gpus = p;
	g = &n->gpus[n->ngpus];
	strcpy(g->name, ps->tok[1].key);
	g->line = ps->line;
	if (pci_arg(ps, "pci", &g->pci) || need(ps, "root", "<root name>", &t) || need_value(ps, t))
		return -EINVAL;
	g->root = find_root(n, t->val);
	if (g->root < 0)
		return perr(ps, t->vcol, "root '%s' is not declared on node %s", t->val, n->name);
	g->cuda = -1;
	t = opt(ps, "cuda");
	if (t) {
		unsigned long v;

		if (!t->val || parse_uint(t->val, 63, &v))
			return perr(ps, t->vcol,
				    "cuda=%s: expected a CUDA device index 0-63 (the machine's GPU "
				    "this spec GPU stands for)",
				    t->val ? t->val : "");
		for (int i = 0; i < n->ngpus; i++)
			if (n->gpus[i].cuda == (int)v)
				return perr(ps, t->vcol, "cuda=%lu is bound to gpu %s already", v,
					    n->gpus[i].name);
		g->cuda = (int)v;
	}
	if (below_root(ps, &n->roots[g->root], &g->pci) || root_numa(ps, g->root, &g->numa) ||
	    str_opt(ps, "model", "NVIDIA A100-SXM4-40GB", g->model, sizeof(g->model)) ||
	    hexid(ps, "vendor", 0x10de, &g->vendor) || hexid(ps, "device", 0x20b0, &g->device) ||
	    pcie_opt(ps, &g->pcie) ||
	    check_tokens(ps, "pci root numa model vendor device cuda pcie"))
		return -EINVAL;

	n->ngpus++;
	ps->nic = ps->pod = -1;
	return 0;
}

/* Splits a comma list and calls `fn` with each item and its column. */
static int each_item(struct sv_parser *ps, struct sv_tok *t,
		     int (*fn)(struct sv_parser *, const char *, int))
{
	char buf[2048], *save = NULL, *item;

	if (need_value(ps, t))
		return -EINVAL;
	if (strlen(t->val) >= sizeof(buf))
		return perr(ps, t->vcol, "list too long");
	strcpy(buf, t->val);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
		if (fn(ps, item, t->vcol + (int)(item - buf)))
			return -EINVAL;
	return 0;
}

static int add_index(int **arr, int *n, int v)
{
	int *p = grow(*arr, *n, sizeof(int));

	if (!p)
		return -ENOMEM;
	*arr = p;
	p[(*n)++] = v;
	return 0;
}

static bool has_index(const int *arr, int n, int v)
{
	int i;

	for (i = 0; i < n; i++)
		if (arr[i] == v)
			return true;
	return false;
}

static int pod_gpu(struct sv_parser *ps, const char *item, int col)
{
	struct sv_node *n = cur_node(ps);
	struct sv_pod *pod = &n->pods[ps->pod];
	int g = find_gpu(n, item), i, j;

	if (g < 0)
		return perr(ps, col, "gpu '%s' is not declared on node %s", item, n->name);
	if (has_index(pod->gpus, pod->ngpus, g))
		return perr(ps, col, "gpu '%s' is listed twice", item);
	for (i = 0; i < ps->pod; i++)
		for (j = 0; j < n->pods[i].ngpus; j++)
			if (n->pods[i].gpus[j] == g && !n->pods[i].hostnet)
				return perr(ps, col, "gpu '%s' was already given to pod %s", item,
					    n->pods[i].name);
	return add_index(&pod->gpus, &pod->ngpus, g);
}

static int pod_nic(struct sv_parser *ps, const char *item, int col)
{
	struct sv_node *n = cur_node(ps);
	struct sv_pod *pod = &n->pods[ps->pod];
	int c = find_nic(n, item), port;

	if (c < 0 && find_port(n, item, &c, &port))
		return perr(ps, col, "'%s' is neither an RDMA device nor a port netdev of node %s",
			    item, n->name);
	if (has_index(pod->nics, pod->nnics, c))
		return perr(ps, col, "'%s' (%s) is listed twice", item, n->nics[c].name);
	return add_index(&pod->nics, &pod->nnics, c);
}

static int do_pod(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_pod *pod;
	struct sv_tok *t;
	void *p;
	int i;

	if (need_node(ps) || name_arg(ps, 48, "pod name"))
		return -EINVAL;
	if (!strcmp(ps->tok[1].key, "host"))
		return perr(ps, ps->tok[1].col, "'host' is reserved for the node's host view");
	for (i = 0; i < n->npods; i++)
		if (!strcmp(n->pods[i].name, ps->tok[1].key))
			return perr(ps, ps->tok[1].col, "pod '%s' is declared twice on node %s",
				    ps->tok[1].key, n->name);
	p = grow(n->pods, n->npods, sizeof(*n->pods));
	if (!p)
		return -ENOMEM;
	n->pods = p;
	pod = &n->pods[n->npods];
	strcpy(pod->name, ps->tok[1].key);
	pod->line = ps->line;
	ps->pod = n->npods++;
	ps->nic = -1;
	if (flag(ps, "hostnetwork", &pod->hostnet) || flag(ps, "leaky", &pod->leaky))
		return -EINVAL;
	t = opt(ps, "linklocal");
	if (t) {
		if (need_value(ps, t))
			return -EINVAL;
		if (!strcmp(t->val, "hidden"))
			pod->linklocal_hidden = 1;
		else if (strcmp(t->val, "visible"))
			return perr(ps, t->vcol, "linklocal=%s: expected visible or hidden",
				    t->val);
	}
	t = opt(ps, "gpus");
	if (t && each_item(ps, t, pod_gpu))
		return -EINVAL;
	t = opt(ps, "nics");
	if (t && each_item(ps, t, pod_nic))
		return -EINVAL;
	return check_tokens(ps, "gpus nics hostnetwork leaky linklocal");
}

static const char *const sv_iface_types[] = {
	[SV_IF_IPVLAN] = "ipvlan",
	[SV_IF_MACVLAN] = "macvlan",
	[SV_IF_VF] = "vf",
	[SV_IF_HOST] = "host",
};

static int do_iface(struct sv_parser *ps)
{
	struct sv_node *n = cur_node(ps);
	struct sv_pod *pod;
	struct sv_iface *ifc;
	struct sv_port *pt;
	struct sv_nic *c;
	struct sv_tok *t;
	unsigned long v;
	void *p;
	int i;

	if (need_node(ps))
		return -EINVAL;
	if (ps->pod < 0)
		return perr(ps, ps->tok[0].col, "'iface' must follow a 'pod' line");
	pod = &n->pods[ps->pod];
	if (name_arg(ps, SV_IFNAME_MAX, "interface name"))
		return -EINVAL;
	if (pod->hostnet)
		return perr(ps, ps->tok[0].col,
			    "pod %s uses the host network; it has no interfaces "
			    "of its own",
			    pod->name);
	for (i = 0; i < pod->nifaces; i++)
		if (!strcmp(pod->ifaces[i].ifname, ps->tok[1].key))
			return perr(ps, ps->tok[1].col, "interface %s is declared twice in pod %s",
				    ps->tok[1].key, pod->name);
	if (!strcmp(ps->tok[1].key, "lo"))
		return perr(ps, ps->tok[1].col, "'lo' is implicit");
	p = grow(pod->ifaces, pod->nifaces, sizeof(*pod->ifaces));
	if (!p)
		return -ENOMEM;
	pod->ifaces = p;
	ifc = &pod->ifaces[pod->nifaces];
	strcpy(ifc->ifname, ps->tok[1].key);
	ifc->line = ps->line;

	if (need(ps, "type", "ipvlan|macvlan|vf|host", &t) || need_value(ps, t))
		return -EINVAL;
	for (i = 0; i < 4; i++)
		if (!strcmp(t->val, sv_iface_types[i]))
			break;
	if (i == 4)
		return perr(ps, t->vcol, "type=%s: expected ipvlan, macvlan, vf or host", t->val);
	ifc->type = (enum sv_iface_type)i;

	if (need(ps, "parent", "<netdev or dev:port>", &t) || need_value(ps, t))
		return -EINVAL;
	if (find_port(n, t->val, &ifc->nic, &ifc->port)) {
		i = find_nic(n, t->val);
		if (i < 0 || n->nics[i].nports != 1)
			return perr(ps, t->vcol,
				    "parent=%s: no such port netdev or dev:port on "
				    "node %s",
				    t->val, n->name);
		ifc->nic = i, ifc->port = 0;
	}
	c = &n->nics[ifc->nic];
	pt = &c->ports[ifc->port];
	if (pt->ib)
		return perr(ps, t->vcol,
			    "parent=%s is an InfiniBand port; pod interfaces model "
			    "RoCE children only",
			    t->val);
	if (ifc->type == SV_IF_VF && c->vf_of < 0)
		return perr(ps, t->vcol,
			    "type=vf needs a VF as parent, and %s is a PF (declare "
			    "the VF with 'nic ... vf_of=%s')",
			    c->name, c->name);
	if ((ifc->type == SV_IF_IPVLAN || ifc->type == SV_IF_MACVLAN) && pt->moved_to >= 0)
		return perr(ps, t->vcol, "parent=%s was moved into pod %s", t->val,
			    n->pods[pt->moved_to].name);
	if (ifc->type == SV_IF_VF || ifc->type == SV_IF_HOST) {
		if (pt->moved_to >= 0)
			return perr(ps, t->vcol, "%s was already moved into pod %s", t->val,
				    n->pods[pt->moved_to].name);
		if (pt->naddrs)
			return perr(ps, t->vcol,
				    "%s carries host addresses; a netdev moved into a "
				    "pod (type=%s) cannot keep them",
				    t->val, sv_iface_types[i]);
		for (i = 0; i < ps->pod; i++) {
			int k;

			for (k = 0; k < n->pods[i].nifaces; k++)
				if (n->pods[i].ifaces[k].nic == ifc->nic &&
				    n->pods[i].ifaces[k].port == ifc->port)
					return perr(ps, t->vcol, "%s already has a child in pod %s",
						    t->val, n->pods[i].name);
		}
		for (i = 0; i < pod->nifaces; i++)
			if (pod->ifaces[i].nic == ifc->nic && pod->ifaces[i].port == ifc->port)
				return perr(ps, t->vcol, "%s already has a child in this pod",
					    t->val);
		pt->moved_to = ps->pod;
		if (!has_index(pod->nics, pod->nnics, ifc->nic) &&
		    add_index(&pod->nics, &pod->nnics, ifc->nic))
			return -ENOMEM;
	} else if (!has_index(pod->nics, pod->nnics, ifc->nic)) {
		return perr(ps, t->vcol,
			    "parent=%s belongs to %s, which pod %s was not given "
			    "(add it to the pod's nics=)",
			    t->val, c->name, pod->name);
	}
	if (need(ps, "addr", "<address>[,...]", &t) ||
	    addr_list(ps, t, pt->rail, ifc->addrs, &ifc->naddrs))
		return -EINVAL;
	memcpy(ifc->mac, pt->mac, 6);
	if (ifc->type == SV_IF_MACVLAN) {
		/* locally administered, stable per (node, pod, ifname) */
		uint32_t h = 2166136261u;
		const char *s;

		for (s = n->name; *s; s++)
			h = (h ^ (uint8_t)*s) * 16777619u;
		for (s = pod->name; *s; s++)
			h = (h ^ (uint8_t)*s) * 16777619u;
		for (s = ifc->ifname; *s; s++)
			h = (h ^ (uint8_t)*s) * 16777619u;
		ifc->mac[0] = 0x02, ifc->mac[1] = 0x5f;
		ifc->mac[2] = (uint8_t)(h >> 24), ifc->mac[3] = (uint8_t)(h >> 16);
		ifc->mac[4] = (uint8_t)(h >> 8), ifc->mac[5] = (uint8_t)h;
	}
	t = opt(ps, "mac");
	if (t) {
		if (ifc->type == SV_IF_IPVLAN)
			return perr(ps, t->col, "an ipvlan child shares its parent's MAC");
		if (!t->val || parse_mac(t->val, ifc->mac))
			return perr(ps, t->vcol, "mac=%s: expected xx:xx:xx:xx:xx:xx",
				    t->val ? t->val : "");
	}
	ifc->mtu = pt->ib ? 4096 : pt->mtu;
	t = opt(ps, "mtu");
	if (t) {
		if (!t->val || parse_uint(t->val, 9216, &v) || v < 1280)
			return perr(ps, t->vcol, "mtu=%s: expected 1280 to 9216",
				    t->val ? t->val : "");
		ifc->mtu = (int)v;
	}
	if (check_tokens(ps, "type parent addr mac mtu"))
		return -EINVAL;
	pod->nifaces++;
	return 0;
}

static const struct {
	const char *kw;
	int (*fn)(struct sv_parser *);
} sv_keywords[] = {
	{ "rail", do_rail }, { "node", do_node }, { "numa", do_numa },
	{ "root", do_root }, { "nic", do_nic },	  { "port", do_port },
	{ "gpu", do_gpu },   { "pod", do_pod },	  { "iface", do_iface },
};

static int parse_line(struct sv_parser *ps, char *line)
{
	size_t i;
	int ret = tokenize(ps, line);

	if (ret || !ps->ntok)
		return ret;
	if (ps->tok[0].val)
		return perr(ps, ps->tok[0].col, "a line starts with a keyword, not '%s=%s'",
			    ps->tok[0].key, ps->tok[0].val);
	for (i = 0; i < sizeof(sv_keywords) / sizeof(sv_keywords[0]); i++)
		if (!strcmp(ps->tok[0].key, sv_keywords[i].kw))
			return sv_keywords[i].fn(ps);
	return perr(ps, ps->tok[0].col,
		    "unknown keyword '%s' (expected rail, node, numa, root, "
		    "nic, port, gpu, pod or iface)",
		    ps->tok[0].key);
}

/* ---- checks across lines ---- */

static int same_addr(const struct sv_addr *a, const struct sv_addr *b)
{
	return a->family == b->family && !memcmp(a->bytes, b->bytes, 16);
}

struct sv_addr_ref {
	const struct sv_addr *a;
	int line;
};

static int check_fabric(struct sv_parser *ps)
{
	struct sv_fabric *f = ps->f;
	struct sv_addr_ref *refs = NULL;
	int nrefs = 0, i, j, k, ret = 0;

	if (!f->nnodes) {
		ps->line = 1;
		return perr(ps, 1, "no nodes (a spec needs at least one 'node' line)");
	}
	for (i = 0; i < f->nnodes && !ret; i++) {
		struct sv_node *n = &f->nodes[i];
		uint32_t seen[SV_MAX_CPUS / 32] = { 0 };

		if (!n->nnumas) {
			ps->line = n->line;
			ret = perr(ps, 1, "node %s has no NUMA node (add 'numa 0 cpus=...')",
				   n->name);
			break;
		}
		for (j = 0; j < n->nnumas && !ret; j++) {
			uint32_t bits[SV_MAX_CPUS / 32] = { 0 };

			sv_cpulist_bits(n->numas[j].cpus, bits);
			for (k = 0; k < SV_MAX_CPUS / 32; k++) {
				if (bits[k] & seen[k]) {
					ps->line = n->line;
					ret = perr(ps, 1,
						   "node %s: numa %d shares cpus with another "
						   "NUMA node",
						   n->name, n->numas[j].id);
					break;
				}
				seen[k] |= bits[k];
			}
		}
		for (j = 0; j < n->nnics && !ret; j++) {
			struct sv_nic *c = &n->nics[j];

			if (!c->nports) {
				ps->line = c->line;
				ret = perr(ps, 1, "nic %s has no ports (add 'port 1 ...' after it)",
					   c->name);
				break;
			}
			for (k = 0; k < c->nports && !ret; k++) {
				struct sv_gid *tbl = calloc(SV_GID_TBL_MAX, sizeof(*tbl));
				int used;

				if (!tbl) {
					ret = -ENOMEM;
					break;
				}
				used = sv_gid_table(f, n, j, k, tbl);
				free(tbl);
				if (used > c->ports[k].gid_tbl_len) {
					ps->line = c->ports[k].line;
					ret = perr(ps, 1,
						   "%s port %d needs %d GID entries but "
						   "gid_tbl_len is %d",
						   c->name, c->ports[k].num, used,
						   c->ports[k].gid_tbl_len);
				}
				for (int a = 0; a < c->ports[k].naddrs && !ret; a++) {
					void *p = grow(refs, nrefs, sizeof(*refs));

					if (!p) {
						ret = -ENOMEM;
						break;
					}
					refs = p;
					refs[nrefs].a = &c->ports[k].addrs[a];
					refs[nrefs++].line = c->ports[k].line;
				}
			}
		}
		for (j = 0; j < n->npods && !ret; j++) {
			for (k = 0; k < n->pods[j].nifaces && !ret; k++) {
				struct sv_iface *ifc = &n->pods[j].ifaces[k];

				for (int a = 0; a < ifc->naddrs; a++) {
					void *p = grow(refs, nrefs, sizeof(*refs));

					if (!p) {
						ret = -ENOMEM;
						break;
					}
					refs = p;
					refs[nrefs].a = &ifc->addrs[a];
					refs[nrefs++].line = ifc->line;
				}
			}
		}
	}
	for (i = 0; i < nrefs && !ret; i++) {
		for (j = 0; j < i; j++) {
			char s[64];

			if (!same_addr(refs[i].a, refs[j].a))
				continue;
			sv_addr_str(refs[i].a, 0, s, sizeof(s));
			ps->line = refs[i].line;
			ret = perr(ps, 1, "address %s is already used on line %d", s, refs[j].line);
			break;
		}
	}
	free(refs);
	return ret;
}

/* ---- entry points ---- */

void sv_fabric_destroy(struct sv_fabric *f)
{
	int i, j;

	if (!f)
		return;
	for (i = 0; i < f->nnodes; i++) {
		struct sv_node *n = &f->nodes[i];

		for (j = 0; j < n->npods; j++) {
			free(n->pods[j].gpus);
			free(n->pods[j].nics);
			free(n->pods[j].ifaces);
		}
		free(n->pods);
		free(n->numas);
		free(n->roots);
		free(n->nics);
		free(n->gpus);
	}
	free(f->nodes);
	free(f->rails);
	free(f);
}

int sv_fabric_parse_buf(const char *name, const char *buf, size_t len, FILE *err,
			struct sv_fabric **out)
{
	struct sv_parser ps = {
		.file = name, .err = err, .node = -1, .nic = -1, .pod = -1, .next_lid = 1
	};
	char *line = NULL;
	size_t pos = 0;
	int ret = 0;

	ps.f = calloc(1, sizeof(*ps.f));
	if (!ps.f)
		return -ENOMEM;
	snprintf(ps.f->file, sizeof(ps.f->file), "%s", name);
	while (pos < len && !ret) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		ps.line++;
		if (memchr(buf + pos, 0, n)) {
			ret = perr(&ps,
				   (int)((const char *)memchr(buf + pos, 0, n) - (buf + pos)) + 1,
				   "NUL byte in the spec");
			break;
		}
		if (n > 4096) {
			ret = perr(&ps, 4097, "line too long (at most 4096 characters)");
			break;
		}
		free(line);
		line = malloc(n + 1);
		if (!line) {
			ret = -ENOMEM;
			break;
		}
		memcpy(line, buf + pos, n);
		line[n] = 0;
		ret = parse_line(&ps, line);
		pos += n + 1;
	}
	free(line);
	if (!ret)
		ret = check_fabric(&ps);
	if (ret) {
		if (ret == -ENOMEM)
			fprintf(err, "%s: out of memory\n", name);
		sv_fabric_destroy(ps.f);
		return ret;
	}
	*out = ps.f;
	return 0;
}

int sv_fabric_parse_file(const char *path, FILE *err, struct sv_fabric **out)
{
	FILE *fp = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret;

	if (!fp) {
		ret = -errno;
		fprintf(err, "%s: cannot open: %s\n", path, strerror(errno));
		return ret;
	}
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *p;

			if (cap > (64u << 20)) {
				fprintf(err, "%s: larger than 64 MiB\n", path);
				free(buf);
				fclose(fp);
				return -EFBIG;
			}
			p = realloc(buf, cap + 65536);
			if (!p) {
				free(buf);
				fclose(fp);
				return -ENOMEM;
			}
			buf = p;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len, fp);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(fp)) {
		fprintf(err, "%s: read error\n", path);
		free(buf);
		fclose(fp);
		return -EIO;
	}
	fclose(fp);
	ret = sv_fabric_parse_buf(path, buf ? buf : "", len, err, out);
	free(buf);
	return ret;
}

double sv_port_latency(const struct sv_fabric *f, const struct sv_port *p)
{
	if (p->latency_us >= 0)
		return p->latency_us;
	if (p->rail >= 0 && f->rails[p->rail].latency_us >= 0)
		return f->rails[p->rail].latency_us;
	return SV_DEFAULT_LATENCY_US;
}

int sv_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void sv_pci_str(const struct sv_pci *p, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->fn);
}

void sv_gid_str(const uint8_t raw[16], char *buf, size_t len)
{
	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", raw[0],
		 raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
		 raw[11], raw[12], raw[13], raw[14], raw[15]);
}

void sv_guid_str(uint64_t g, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
}

void sv_addr_str(const struct sv_addr *a, int with_prefix, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	if (!inet_ntop(a->family, a->bytes, s, sizeof(s)))
		snprintf(s, sizeof(s), "?");
	if (with_prefix)
		snprintf(buf, len, "%s/%d", s, a->prefix);
	else
		snprintf(buf, len, "%s", s);
}
