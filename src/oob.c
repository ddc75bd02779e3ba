// SPDX-License-Identifier: Apache-2.0
/*
 * oob.c owns the out-of-band TCP side of connection setup: the choice of the bootstrap
 * interface (NCCL_SOCKET_IFNAME semantics, else the default route), the listening socket and
 * its handle, and the non-blocking handshake state machines of connect and accept (one
 * function per state, resumed on partial reads and writes, bounded by a deadline). It must
 * never block, never read the environment, and never touch verbs: what the HELLO carries is
 * filled by the caller (directly, or in the peer_hello hook).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "railnet/log.h"
#include "railnet/oob.h"

#define RN_OOB_BACKLOG 1024 /* the kernel caps it at somaxconn */
#define RN_OOB_SPEC_MAX 32  /* NCCL_SOCKET_IFNAME entries considered */
#define RN_OOB_PEER_STR (INET6_ADDRSTRLEN + 16)

/* ---- interface choice -------------------------------------------------------------------- */

struct rn_oob_spec {
	bool exclude, exact;
	int n;
	char names[RN_OOB_SPEC_MAX][IF_NAMESIZE];
};

static void rn_oob_spec_parse(const char *s, struct rn_oob_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	if (*s == '^') {
		spec->exclude = true;
		s++;
	}
	if (*s == '=') {
		spec->exact = true;
		s++;
	}
	while (*s && spec->n < RN_OOB_SPEC_MAX) {
		size_t len = strcspn(s, ",:");

		if (len && len < IF_NAMESIZE) {
			memcpy(spec->names[spec->n], s, len);
			spec->names[spec->n++][len] = '\0';
		}
		s += len;
		s += strcspn(s, ","); /* skip a ":port" suffix */
		if (*s == ',')
			s++;
	}
}

static bool rn_oob_spec_match(const struct rn_oob_spec *spec, const char *name)
{
	bool hit = false;

	for (int i = 0; i < spec->n && !hit; i++)
		hit = spec->exact ? !strcmp(name, spec->names[i])
				  : !strncmp(name, spec->names[i], strlen(spec->names[i]));
	return hit != spec->exclude;
}

static bool rn_oob_if_usable(const struct rn_oob_if *f)
{
	if (!f->up || (f->family != AF_INET && f->family != AF_INET6))
		return false;
	/* fe80::/10 needs a scope on the peer side too; NCCL's bootstrap avoids it as well. */
	return !(f->family == AF_INET6 && f->addr[0] == 0xfe && (f->addr[1] & 0xc0) == 0x80);
}

/* Which addresses a pass of the choice accepts. */
enum rn_oob_pass {
	RN_PASS_SPEC,	    /* matches NCCL_SOCKET_IFNAME, not loopback */
	RN_PASS_SPEC_LO,    /* matches NCCL_SOCKET_IFNAME, loopback */
	RN_PASS_ROUTE,	    /* the default route's interface */
	RN_PASS_NOT_DOCKER, /* not loopback, not docker* (NCCL's default "^docker,lo") */
	RN_PASS_NOT_LO,	    /* not loopback */
	RN_PASS_ANY,	    /* loopback as the last resort */
};

static bool rn_oob_pass_ok(enum rn_oob_pass pass, const struct rn_oob_if *f,
			   const struct rn_oob_spec *spec, const char *route_if)
{
	switch (pass) {
	case RN_PASS_SPEC:
		return !f->loopback && rn_oob_spec_match(spec, f->name);
	case RN_PASS_SPEC_LO:
		return f->loopback && rn_oob_spec_match(spec, f->name);
	case RN_PASS_ROUTE:
		return route_if && *route_if && !strcmp(f->name, route_if);
	case RN_PASS_NOT_DOCKER:
		return !f->loopback && strncmp(f->name, "docker", 6);
	case RN_PASS_NOT_LO:
		return !f->loopback;
	case RN_PASS_ANY:
		return true;
	}
	return false;
}

/* First usable address the pass accepts, in list order, IPv4 before IPv6. */
static bool rn_oob_first(const struct rn_oob_if *ifs, size_t n, enum rn_oob_pass pass,
			 const struct rn_oob_spec *spec, const char *route_if, size_t *idx)
{
	static const int families[] = { AF_INET, AF_INET6 };

	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < n; i++)
			if (ifs[i].family == families[k] && rn_oob_if_usable(&ifs[i]) &&
			    rn_oob_pass_ok(pass, &ifs[i], spec, route_if)) {
				*idx = i;
				return true;
			}
	return false;
}

static void rn_oob_if_list(const struct rn_oob_if *ifs, size_t n, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		if (!ifs[i].up)
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = ifs[j].up && !strcmp(ifs[j].name, ifs[i].name);
		if (dup || used >= len)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "",
					 ifs[i].name);
	}
	if (!out[0])
		snprintf(out, len, "none");
}

int rn_oob_if_select(const struct rn_oob_if *ifs, size_t n, const char *spec, const char *route_if,
		     size_t *idx, char *why, size_t why_len)
{
	static const enum rn_oob_pass with_spec[] = { RN_PASS_SPEC, RN_PASS_SPEC_LO };
	static const enum rn_oob_pass without[] = { RN_PASS_ROUTE, RN_PASS_NOT_DOCKER,
						    RN_PASS_NOT_LO, RN_PASS_ANY };
	const enum rn_oob_pass *passes = without;
	size_t npasses = sizeof(without) / sizeof(without[0]);
	struct rn_oob_spec s;
	char names[256];

	memset(&s, 0, sizeof(s));
	if (spec && *spec) {
		rn_oob_spec_parse(spec, &s);
		passes = with_spec;
		npasses = sizeof(with_spec) / sizeof(with_spec[0]);
	}
	for (size_t p = 0; p < npasses; p++)
		if (rn_oob_first(ifs, n, passes[p], &s, route_if, idx))
			return 0;
	if (spec && *spec) {
		rn_oob_if_list(ifs, n, names, sizeof(names));
		snprintf(why, why_len,
			 "NCCL_SOCKET_IFNAME=%s matches no up interface with a usable address "
			 "(up here: %s)",
			 spec, names);
	} else {
		snprintf(why, why_len, "no up interface with a usable IPv4 or IPv6 address");
	}
	return -ENODEV;
}

int rn_oob_route_if(const char *path, bool ipv6, char name[IF_NAMESIZE])
{
	unsigned long best_metric = ~0ul;
	char line[512], best[IF_NAMESIZE] = "";
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char ifn[IF_NAMESIZE], dst[33];
		unsigned long metric, flags, dest, mask;
		unsigned plen;

		if (ipv6) {
			if (sscanf(line, "%32s %x %*s %*x %*s %lx %*x %*x %lx %15s", dst, &plen,
				   &metric, &flags, ifn) != 5)
				continue;
			if (plen || strspn(dst, "0") != 32)
				continue;
		} else {
			if (sscanf(line, "%15s %lx %*x %lx %*d %*d %lu %lx", ifn, &dest, &flags,
				   &metric, &mask) != 5)
				continue;
			if (dest || mask)
				continue;
		}
		/* RTF_UP, and not RTF_REJECT (the kernel's unreachable default on lo). */
		if (!(flags & 0x1) || (flags & 0x200) || !strcmp(ifn, "lo"))
			continue;
		if (metric < best_metric) {
			best_metric = metric;
			snprintf(best, sizeof(best), "%s", ifn);
		}
	}
	fclose(f);
	if (!best[0])
		return -ENOENT;
	memcpy(name, best, IF_NAMESIZE);
	return 0;
}

int rn_oob_if_find(const char *spec, struct rn_oob_if *out)
{
	char why[512];
	int rc = rn_oob_if_find_why(spec, out, why, sizeof(why));

	if (rc)
		RN_WARN("%s", why);
	return rc;
}

int rn_oob_if_find_why(const char *spec, struct rn_oob_if *out, char *why_out, size_t why_len)
{
	struct ifaddrs *all, *a;
	struct rn_oob_if *ifs;
	char route[IF_NAMESIZE] = "", why[512];
	size_t n = 0, cap = 0, idx;
	int rc;

	if (getifaddrs(&all)) {
		rc = -errno;
		snprintf(why_out, why_len,
			 "cannot list network interfaces for the out-of-band socket: %s",
			 strerror(-rc));
		return rc;
	}
	for (a = all; a; a = a->ifa_next)
		cap++;
	ifs = calloc(cap ? cap : 1, sizeof(*ifs));
	if (!ifs) {
		rc = -ENOMEM;
		snprintf(why_out, why_len, "out of memory listing network interfaces");
		goto err_free_ifaddrs;
	}
	for (a = all; a; a = a->ifa_next) {
		struct rn_oob_if *f = &ifs[n];

		if (!a->ifa_addr ||
		    (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
			continue;
		snprintf(f->name, sizeof(f->name), "%s", a->ifa_name);
		f->family = a->ifa_addr->sa_family;
		if (f->family == AF_INET) {
			memcpy(f->addr, &((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr, 4);
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)a->ifa_addr;

			memcpy(f->addr, &s6->sin6_addr, 16);
			f->scope_id = s6->sin6_scope_id;
		}
		f->up = a->ifa_flags & IFF_UP;
		f->loopback = a->ifa_flags & IFF_LOOPBACK;
		n++;
	}
	if (!spec || !*spec) {
		if (rn_oob_route_if("/proc/net/route", false, route))
			rn_oob_route_if("/proc/net/ipv6_route", true, route);
	}
	rc = rn_oob_if_select(ifs, n, spec, route, &idx, why, sizeof(why));
	if (rc) {
		snprintf(why_out, why_len, "out-of-band interface: %s", why);
		goto err_free_ifs;
	}
	*out = ifs[idx];
	rc = 0;
err_free_ifs:
	free(ifs);
err_free_ifaddrs:
	freeifaddrs(all);
	return rc;
}

/* ---- sockets ----------------------------------------------------------------------------- */

union rn_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
};

static socklen_t rn_sockaddr_make(union rn_sockaddr *u, int family, const uint8_t *addr,
				  uint16_t port, uint32_t scope_id)
{
	memset(u, 0, sizeof(*u));
	if (family == AF_INET) {
		u->sin.sin_family = AF_INET;
		u->sin.sin_port = htons(port);
		memcpy(&u->sin.sin_addr, addr, 4);
		return sizeof(u->sin);
	}
	u->sin6.sin6_family = AF_INET6;
	u->sin6.sin6_port = htons(port);
	u->sin6.sin6_scope_id = scope_id;
	memcpy(&u->sin6.sin6_addr, addr, 16);
	return sizeof(u->sin6);
}

static void rn_sockaddr_str(const union rn_sockaddr *u, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (u->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &u->sin.sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(u->sin.sin_port));
	} else {
		inet_ntop(AF_INET6, &u->sin6.sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, ntohs(u->sin6.sin6_port));
	}
}

static uint64_t rn_oob_nonce(void)
{
	static unsigned long counter;
	struct timespec ts;
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	/* No entropy yet (early boot): unique enough to tell our listeners from strays. */
	clock_gettime(CLOCK_REALTIME, &ts);
	v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec << 20 ^
	    (uint64_t)getpid() << 40 ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	return v * 0x9e3779b97f4a7c15ull;
}

static long long rn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A stray gets this long to send a valid HELLO, whatever RAILNET_CONNECT_TIMEOUT is. */
#define RN_OOB_HELLO_MS 2000
/* Stray connections are reported in one WARN per listener per this many ms. */
#define RN_OOB_STRAY_WARN_MS 10000

/*
 * The lobby: TCP connections accepted but not yet known to be railnet peers of this listener.
 * Every one is read concurrently (epoll), so no stray can make a real connector wait: a
 * connection becomes a guest at accept, sends its HELLO within RN_OOB_HELLO_MS or is dropped,
 * is dropped at once for anything but a HELLO with this listener's nonce, and, when its HELLO
 * is whole and valid, waits "ready" for an accept call to take it (several connectors may be
 * ready at once; each accept takes the earliest). With the lobby full, the oldest guest that
 * has sent nothing for RN_OOB_EVICT_MS makes room.
 */
#define RN_OOB_LOBBY 1024
#define RN_OOB_EVICT_MS 100

struct rn_oob_guest {
	int fd;
	bool ready;	 /* buf holds a whole HELLO with this listener's nonce */
	long long since; /* accepted at (CLOCK_MONOTONIC ms) */
	uint64_t seq;	 /* admission order (ms and slots do not order guests of one ms) */
	size_t off, len; /* bytes read into buf, bytes wanted */
	uint8_t *buf;	 /* RN_WIRE_MSG_MAX bytes, allocated at the first byte */
	char peer_str[RN_OOB_PEER_STR];
};

struct rn_oob_listener {
	int fd;
	int epfd; /* the guests' sockets */
	uint64_t nonce;
	char addr[RN_OOB_PEER_STR];
	unsigned long strays;	     /* dropped since the last WARN */
	unsigned long strays_total;  /* dropped in all */
	long long stray_warn_ms;     /* when the last stray WARN was written; 0: never */
	struct rn_oob_guest *guests; /* RN_OOB_LOBBY slots, fd -1 when free */
	int nguests;		     /* slots in use */
	uint64_t admitted;	     /* guests admitted so far: the last one's seq */
	bool fds_warned;	     /* out of descriptors: said once */
};

/*
 * accept found the process out of file descriptors: one WARN per listener, since every comm
 * keeps a socket and thousands of comms (an all-to-all) can exhaust RLIMIT_NOFILE; the
 * connection waits in the kernel's backlog meanwhile (docs/performance.md, "Scale").
 */
static void rn_oob_warn_fds(struct rn_oob_listener *l, int err)
{
	struct rlimit r = { 0 };

	if (l->fds_warned)
		return;
	l->fds_warned = true;
	getrlimit(RLIMIT_NOFILE, &r);
	RN_WARN("listener %s: cannot accept a connection: %s (RLIMIT_NOFILE %llu, hard %llu; each "
		"comm keeps one socket): it waits until descriptors are freed, at most "
		"RAILNET_CONNECT_TIMEOUT; raise the limit (ulimit -n, the container's LimitNOFILE)",
		l->addr, strerror(err), (unsigned long long)r.rlim_cur,
		(unsigned long long)r.rlim_max);
}

int rn_oob_listen(const struct rn_oob_if *iface, void *handle, struct rn_oob_listener **out)
{
	return rn_oob_listen_ports(iface, 0, handle, out);
}

int rn_oob_listen_ports(const struct rn_oob_if *iface, int nports, void *handle,
			struct rn_oob_listener **out)
{
	struct rn_handle_info info;
	struct rn_oob_listener *l;
	union rn_sockaddr u;
	socklen_t len;
	int rc;

	if (iface->family != AF_INET && iface->family != AF_INET6)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = -1; /* with the lobby, at the first accept */
	l->fd = socket(iface->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		rc = -errno;
		RN_WARN("out-of-band listen on %s: socket: %s", iface->name, strerror(-rc));
		goto err_free;
	}
	len = rn_sockaddr_make(&u, iface->family, iface->addr, 0, iface->scope_id);
	rn_sockaddr_str(&u, l->addr, sizeof(l->addr));
	if (bind(l->fd, &u.sa, len) || listen(l->fd, RN_OOB_BACKLOG)) {
		rc = -errno;
		RN_WARN("out-of-band listen on %s (%s): %s", iface->name, l->addr, strerror(-rc));
		goto err_close;
	}
	len = sizeof(u);
	if (getsockname(l->fd, &u.sa, &len)) {
		rc = -errno;
		RN_WARN("out-of-band listen on %s: getsockname: %s", iface->name, strerror(-rc));
		goto err_close;
	}
	rn_sockaddr_str(&u, l->addr, sizeof(l->addr));
	memset(&info, 0, sizeof(info));
	info.family = iface->family;
	info.port = ntohs(iface->family == AF_INET ? u.sin.sin_port : u.sin6.sin6_port);
	info.scope_id = iface->family == AF_INET6 ? iface->scope_id : 0;
	memcpy(info.addr, iface->addr, iface->family == AF_INET ? 4 : 16);
	l->nonce = info.nonce = rn_oob_nonce();
	info.nports = nports;
	memset(handle, 0, RN_WIRE_HANDLE_BUF);
	rc = rn_wire_handle_encode(&info, handle);
	if (rc)
		goto err_close;
	RN_INFO(RN_SUB_NET, "out-of-band listener on %s %s", iface->name, l->addr);
	*out = l;
	return 0;

err_close:
	close(l->fd);
err_free:
	free(l);
	return rc;
}

unsigned long rn_oob_listener_strays(const struct rn_oob_listener *l)
{
	return l->strays_total;
}

static void rn_oob_guest_free(struct rn_oob_listener *l, struct rn_oob_guest *g);

void rn_oob_listener_destroy(struct rn_oob_listener *l)
{
	if (!l)
		return;
	for (int i = 0; l->guests && i < RN_OOB_LOBBY; i++)
		if (l->guests[i].fd >= 0)
			rn_oob_guest_free(l, &l->guests[i]);
	free(l->guests);
	if (l->epfd >= 0)
		close(l->epfd);
	close(l->fd);
	free(l);
}

/* ---- the handshake state machines -------------------------------------------------------- */

struct rn_oob_conn {
	enum rn_oob_state state;
	bool acceptor;
	bool peer_ok; /* RECV_HELLO: the HELLO is validated, only the hook is pending */
	int fd;	      /* -1 when closed */
	int err;      /* FAILED: the error progress keeps returning */
	long timeout_ms;
	long long deadline; /* CLOCK_MONOTONIC ms: the whole handshake's bound */
	uint64_t nonce;	    /* the handle's */
	struct rn_oob_listener *listener;
	rn_oob_peer_hello_fn peer_hello;
	void *arg;
	int sockbuf;
	char peer_str[RN_OOB_PEER_STR];
	size_t off, len; /* progress through buf */
	uint8_t buf[RN_WIRE_MSG_MAX];
	struct rn_hello local, peer;
};

static const char *const rn_oob_state_names[] = {
	[RN_OOB_CONNECTING] = "CONNECTING", [RN_OOB_SEND_HELLO] = "SEND_HELLO",
	[RN_OOB_RECV_HELLO] = "RECV_HELLO", [RN_OOB_SEND_READY] = "SEND_READY",
	[RN_OOB_ACCEPTING] = "ACCEPTING",   [RN_OOB_REPLY_HELLO] = "REPLY_HELLO",
	[RN_OOB_RECV_READY] = "RECV_READY", [RN_OOB_DONE] = "DONE",
	[RN_OOB_FAILED] = "FAILED",
};

static void rn_oob_close_fd(struct rn_oob_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int rn_oob_fail(struct rn_oob_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rn_oob_fail(struct rn_oob_conn *c, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	RN_WARN("out-of-band %s %s failed in state %s: %s",
		c->acceptor ? "accept from" : "connect to", c->peer_str,
		rn_oob_state_names[c->state], msg);
	rn_oob_close_fd(c);
	c->state = RN_OOB_FAILED;
	c->err = err;
	return err;
}

/*
 * A connection that never proved to be our peer: counted, and reported in one WARN per
 * RN_OOB_STRAY_WARN_MS with the count, so that a flood of strays cannot flood the log.
 */
static void rn_oob_stray(struct rn_oob_listener *l, const char *peer, const char *why)
{
	long long now = rn_now_ms();

	l->strays++;
	l->strays_total++;
	if (!l->stray_warn_ms || now - l->stray_warn_ms >= RN_OOB_STRAY_WARN_MS) {
		RN_WARN("out-of-band listener %s: dropped %lu connection(s) that were not "
			"railnet's peer for this listener%s; the last from %s: %s",
			l->addr, l->strays, l->stray_warn_ms ? " in the last 10 s" : "", peer, why);
		l->strays = 0;
		l->stray_warn_ms = now;
	}
}

/* ---- the lobby ----------------------------------------------------------------------------- */

static void rn_oob_guest_free(struct rn_oob_listener *l, struct rn_oob_guest *g)
{
	if (l->epfd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, g->fd, NULL);
	close(g->fd);
	free(g->buf);
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	l->nguests--;
}

static void rn_oob_guest_drop(struct rn_oob_listener *l, struct rn_oob_guest *g, const char *why)
{
	rn_oob_stray(l, g->peer_str, why);
	rn_oob_guest_free(l, g);
}

/* Make room: drop the oldest guest that has sent nothing for RN_OOB_EVICT_MS. */
static bool rn_oob_lobby_evict(struct rn_oob_listener *l, long long now)
{
	struct rn_oob_guest *old = NULL;

	for (int i = 0; i < RN_OOB_LOBBY; i++) {
		struct rn_oob_guest *g = &l->guests[i];

		if (g->fd >= 0 && !g->off && now - g->since >= RN_OOB_EVICT_MS &&
		    (!old || g->seq < old->seq))
			old = g;
	}
	if (old)
		rn_oob_guest_drop(l, old, "silent while the listener's lobby was full");
	return old != NULL;
}

/* A connection waits in the kernel's backlog: the listening socket is readable. */
static bool rn_oob_backlog_pending(const struct rn_oob_listener *l)
{
	struct pollfd p = { .fd = l->fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Accept every pending connection into the lobby. 0, or -errno of a broken listener. */
static int rn_oob_lobby_admit(struct rn_oob_listener *l, long long now)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct rn_oob_guest *g = NULL;
		union rn_sockaddr u;
		socklen_t len = sizeof(u);
		int fd;

		/* full: a silent guest makes room only for a connection that is waiting */
		if (l->nguests == RN_OOB_LOBBY &&
		    (!rn_oob_backlog_pending(l) || !rn_oob_lobby_evict(l, now)))
			return 0; /* the rest waits in the kernel's backlog */
		fd = accept4(l->fd, &u.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED)
				return 0;
			if ((e == EMFILE || e == ENFILE) && rn_oob_lobby_evict(l, now))
				continue; /* out of descriptors: a silent guest makes room */
			if (e == EMFILE || e == ENFILE)
				rn_oob_warn_fds(l, e);
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				return 0; /* try again at the next call */
			return -e;
		}
		for (int i = 0; i < RN_OOB_LOBBY && !g; i++)
			if (l->guests[i].fd < 0)
				g = &l->guests[i];
		g->fd = fd;
		g->since = now;
		g->seq = ++l->admitted;
		g->len = sizeof(struct rn_wire_msg_hdr);
		rn_sockaddr_str(&u, g->peer_str, sizeof(g->peer_str));
		l->nguests++;
		ev.data.ptr = g;
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			rn_oob_guest_drop(l, g, "epoll_ctl failed");
			return 0;
		}
	}
}

/*
 * Ready: out of the epoll set (it would report the same bytes, or the connector's close, on
 * every call), waiting for an accept; rn_oob_lobby_take checks that it is still there.
 */
static void rn_oob_guest_ready(struct rn_oob_listener *l, struct rn_oob_guest *g)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, g->fd, NULL);
	g->ready = true;
}

/* A guest's whole message: a HELLO with this listener's nonce (ready), or a stray. */
static void rn_oob_guest_judge(struct rn_oob_listener *l, struct rn_oob_guest *g)
{
	struct rn_hello *h = malloc(sizeof(*h));
	char why[256];

	if (!h) {
		rn_oob_guest_drop(l, g, "out of memory to decode its HELLO");
		return;
	}
	if (rn_wire_hello_decode(g->buf, g->len, h, why, sizeof(why)))
		rn_oob_guest_drop(l, g, why);
	else if (h->nonce != l->nonce)
		/* the nonce authenticates the connector: never log a listener's */
		rn_oob_guest_drop(l, g,
				  "its HELLO carries another listener's id (a handle of another "
				  "listen, or a forged one)");
	else
		rn_oob_guest_ready(l, g);
	free(h);
}

/* Read what a guest sent; drop it at the first sign it is not our peer. */
static void rn_oob_guest_read(struct rn_oob_listener *l, struct rn_oob_guest *g)
{
	char why[256];

	if (g->ready || g->fd < 0)
		return;
	if (!g->buf) {
		g->buf = malloc(RN_WIRE_MSG_MAX);
		if (!g->buf) {
			rn_oob_guest_drop(l, g, "out of memory for its HELLO");
			return;
		}
	}
	while (g->off < g->len) {
		ssize_t n = recv(g->fd, g->buf + g->off, g->len - g->off, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			snprintf(why, sizeof(why), "closed after %zu bytes, before a whole HELLO",
				 g->off);
			rn_oob_guest_drop(l, g, why);
			return;
		}
		g->off += (size_t)n;
		if (g->off == sizeof(struct rn_wire_msg_hdr) && g->len == g->off) {
			size_t total;
			int type;

			why[0] = '\0';
			if (rn_wire_hdr_decode(g->buf, g->off, &type, &total, why, sizeof(why)) ||
			    type != RN_WIRE_MSG_HELLO) {
				rn_oob_guest_drop(
					l, g, why[0] ? why : "its first message is not a HELLO");
				return;
			}
			g->len = total;
		}
	}
	rn_oob_guest_judge(l, g);
}

/*
 * Admit pending connections, read every guest that has something to say, drop the ones
 * silent for RN_OOB_HELLO_MS. 0, or -errno (-ENOMEM, a broken listening socket).
 */
static int rn_oob_lobby_run(struct rn_oob_listener *l)
{
	struct epoll_event ev[64];
	long long now = rn_now_ms();
	int n, rc;

	if (!l->guests) {
		l->guests = calloc(RN_OOB_LOBBY, sizeof(*l->guests));
		if (!l->guests)
			return -ENOMEM;
		for (int i = 0; i < RN_OOB_LOBBY; i++)
			l->guests[i].fd = -1;
		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (l->epfd < 0) {
			rc = -errno;
			free(l->guests);
			l->guests = NULL;
			if (rc == -EMFILE || rc == -ENFILE) {
				rn_oob_warn_fds(l, -rc);
				return 0; /* as for accept: again at the next call */
			}
			return rc;
		}
	}
	rc = rn_oob_lobby_admit(l, now);
	if (rc)
		return rc;
	/* at most every guest once per call, so a flood cannot keep the proxy thread here */
	for (int round = 0; round <= RN_OOB_LOBBY / 64; round++) {
		n = epoll_wait(l->epfd, ev, 64, 0);
		for (int i = 0; i < n; i++)
			rn_oob_guest_read(l, ev[i].data.ptr);
		if (n < 64)
			break;
	}
	for (int i = 0; l->nguests && i < RN_OOB_LOBBY; i++) {
		struct rn_oob_guest *g = &l->guests[i];

		if (g->fd >= 0 && !g->ready && now - g->since >= RN_OOB_HELLO_MS)
			rn_oob_guest_drop(l, g, "no valid HELLO within 2 s of connecting");
	}
	return 0;
}

/* Hand over the earliest ready guest (its socket and HELLO). 0, or -EAGAIN when none. */
static int rn_oob_lobby_take(struct rn_oob_listener *l, void *buf, size_t *len, int *fd, char *peer,
			     size_t peer_len)
{
	struct rn_oob_guest *first;

	for (;;) {
		char b;
		ssize_t n;

		first = NULL;
		for (int i = 0; l->guests && i < RN_OOB_LOBBY; i++) {
			struct rn_oob_guest *g = &l->guests[i];

			if (g->fd >= 0 && g->ready && (!first || g->seq < first->seq))
				first = g;
		}
		if (!first)
			return -EAGAIN;
		/* a connector waits for our reply: nothing more may have come, not even a close */
		n = recv(first->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		rn_oob_guest_drop(l, first,
				  n == 0  ? "closed while waiting for an accept"
				  : n > 0 ? "sent more than its HELLO before the reply"
					  : "its connection failed while waiting for an accept");
	}
	memcpy(buf, first->buf, first->len);
	*len = first->len;
	snprintf(peer, peer_len, "%s", first->peer_str);
	*fd = first->fd;
	free(first->buf);
	memset(first, 0, sizeof(*first));
	first->fd = -1; /* handed over, not closed */
	l->nguests--;
	return 0;
}

/* The acceptor's connection is not our peer after all: drop it and accept again. */
static int rn_oob_drop_stray(struct rn_oob_conn *c, const char *why)
{
	rn_oob_stray(c->listener, c->peer_str, why);
	rn_oob_close_fd(c);
	c->off = c->len = 0;
	snprintf(c->peer_str, sizeof(c->peer_str), "(not yet connected)");
	c->state = RN_OOB_ACCEPTING;
	return 0;
}

static void rn_oob_enter(struct rn_oob_conn *c, enum rn_oob_state s, size_t len)
{
	c->state = s;
	c->off = 0;
	c->len = len;
	c->peer_ok = false;
}

/* Write buf[off..len). 0 when all is written, -EAGAIN, or -errno. */
static int rn_oob_send_some(struct rn_oob_conn *c)
{
	while (c->off < c->len) {
		ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);

		if (n > 0) {
			c->off += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return -EAGAIN;
		} else {
			return n < 0 ? -errno : -EIO;
		}
	}
	return 0;
}

/* Read into buf[off..len). 0 when len bytes are there, -EAGAIN, -ECONNRESET on EOF. */
static int rn_oob_recv_some(struct rn_oob_conn *c)
{
	while (c->off < c->len) {
		ssize_t n = recv(c->fd, c->buf + c->off, c->len - c->off, 0);

		if (n > 0) {
			c->off += (size_t)n;
		} else if (n == 0) {
			return -ECONNRESET;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return -EAGAIN;
		} else {
			return -errno;
		}
	}
	return 0;
}

/*
 * Read one whole message of the expected type: the header first, then the length it
 * announces. 0 when buf[0..len) holds it; -EAGAIN; -errno with a reason.
 */
static int rn_oob_recv_msg(struct rn_oob_conn *c, char *why, size_t why_len)
{
	size_t total;
	int rc, type;

	rc = rn_oob_recv_some(c);
	if (rc == -ECONNRESET)
		snprintf(why, why_len, "peer closed the connection after %zu bytes", c->off);
	else if (rc && rc != -EAGAIN)
		snprintf(why, why_len, "recv: %s", strerror(-rc));
	if (rc)
		return rc;
	if (c->len == sizeof(struct rn_wire_msg_hdr)) {
		rc = rn_wire_hdr_decode(c->buf, c->len, &type, &total, why, why_len);
		if (rc)
			return rc;
		c->len = total;
		return rn_oob_recv_msg(c, why, why_len);
	}
	return 0;
}

/* Options of a connected (or connecting) socket; failures only cost performance. */
static void rn_oob_sockopts(const struct rn_oob_conn *c, int fd)
{
	int one = 1;

	/* Small messages, one round trip each: do not let Nagle hold them. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->sockbuf > 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &c->sockbuf, sizeof(c->sockbuf));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &c->sockbuf, sizeof(c->sockbuf));
	}
}

static int rn_oob_step_connecting(struct rn_oob_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	if (poll(&p, 1, 0) < 0)
		return errno == EINTR ? -EAGAIN
				      : rn_oob_fail(c, -errno, "poll: %s", strerror(errno));
	if (!p.revents)
		return -EAGAIN;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err)
		return rn_oob_fail(c, -err,
				   "TCP connect: %s (is the listener's process alive and "
				   "its address reachable from this pod?)",
				   strerror(err));
	rn_oob_enter(c, RN_OOB_SEND_HELLO, 0);
	return 0;
}

static int rn_oob_encode_local(struct rn_oob_conn *c, size_t *len)
{
	int rc;

	c->local.nonce = c->nonce;
	rc = rn_wire_hello_encode(&c->local, c->buf, sizeof(c->buf), len);
	if (rc)
		return rn_oob_fail(c, rc, "local HELLO is invalid (%d ports, %d QPs): %s",
				   c->local.nports, c->local.nqps, strerror(-rc));
	return 0;
}

static int rn_oob_step_send_hello(struct rn_oob_conn *c)
{
	int rc;

	if (c->len == 0) {
		rc = rn_oob_encode_local(c, &c->len);
		if (rc)
			return rc;
	}
	rc = rn_oob_send_some(c);
	if (rc == -EAGAIN)
		return rc;
	if (rc)
		return rn_oob_fail(c, rc, "send: %s", strerror(-rc));
	rn_oob_enter(c, RN_OOB_RECV_HELLO, sizeof(struct rn_wire_msg_hdr));
	return 0;
}

static int rn_oob_bad_hello(struct rn_oob_conn *c, int err, const char *why)
{
	/* Before a valid HELLO the acceptor cannot know the connection is its peer. */
	if (c->acceptor)
		return rn_oob_drop_stray(c, why);
	return rn_oob_fail(c, err, "%s", why);
}

/*
 * The acceptor cannot take a connector whose HELLO was valid: tell it why in a REFUSE before
 * the socket closes (best effort, one non-blocking send: it is 232 bytes into an empty socket).
 */
static void rn_oob_refuse(struct rn_oob_conn *c, int err, const char *why)
{
	size_t len;

	if (c->fd < 0 || rn_wire_refuse_encode(c->nonce, -err, why, c->buf, sizeof(c->buf), &len))
		return;
	if (send(c->fd, c->buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
		RN_INFO(RN_SUB_NET, "out-of-band accept from %s: could not send the refusal",
			c->peer_str);
}

static bool rn_oob_is_refuse(const struct rn_oob_conn *c)
{
	struct rn_wire_msg_hdr h;

	memcpy(&h, c->buf, sizeof(h));
	return le16toh(h.type) == RN_WIRE_MSG_REFUSE;
}

/* The connector got a REFUSE: fail with the acceptor's reason. */
static int rn_oob_refused(struct rn_oob_conn *c)
{
	char reason[RN_WIRE_REASON_MAX + 1], why[256];
	uint64_t nonce;
	int err;

	if (rn_wire_refuse_decode(c->buf, c->len, &nonce, &err, reason, sizeof(reason), why,
				  sizeof(why)))
		return rn_oob_fail(c, -EPROTO, "%s", why);
	if (nonce != c->nonce)
		return rn_oob_fail(c, -EPROTO, "a refusal for another connection");
	/* the acceptor's verdict on our HELLO is the peer's protocol error; else it refused */
	return rn_oob_fail(c, err == EPROTO ? -EPROTO : -ECONNREFUSED,
			   "the acceptor refused the connection: %s (%s)", reason, strerror(err));
}

static int rn_oob_step_recv_hello(struct rn_oob_conn *c)
{
	char why[256];
	size_t len;
	int rc;

	if (!c->peer_ok) {
		rc = rn_oob_recv_msg(c, why, sizeof(why));
		if (rc == -EAGAIN)
			return rc;
		if (!rc && !c->acceptor && rn_oob_is_refuse(c))
			return rn_oob_refused(c);
		if (!rc)
			rc = rn_wire_hello_decode(c->buf, c->len, &c->peer, why, sizeof(why));
		if (rc)
			return rn_oob_bad_hello(c, rc, why);
		if (c->peer.nonce != c->nonce) {
			/* the nonce authenticates the connector: never log a listener's */
			snprintf(why, sizeof(why),
				 "its HELLO carries another listener's id (a handle of another "
				 "listen, or a forged one)");
			return rn_oob_bad_hello(c, -EPROTO, why);
		}
		c->peer_ok = true;
		if (c->acceptor) /* our peer: the rest of the handshake has the full bound */
			c->deadline = rn_now_ms() + c->timeout_ms;
	}
	if (c->peer_hello) {
		why[0] = '\0';
		rc = c->peer_hello(c->arg, &c->peer, &c->local, why, sizeof(why));
		if (rc == -EAGAIN)
			return rc;
		if (rc) {
			if (!why[0])
				snprintf(why, sizeof(why), "%s", strerror(-rc));
			if (c->acceptor)
				rn_oob_refuse(c, rc, why);
			return rn_oob_fail(c, rc, "%s refused: %s",
					   c->acceptor ? "the connector was"
						       : "the acceptor's reply was",
					   why);
		}
	}
	if (c->acceptor) {
		rc = rn_oob_encode_local(c, &len);
		if (rc)
			return rc;
		rn_oob_enter(c, RN_OOB_REPLY_HELLO, len);
		return 0;
	}
	rn_wire_ready_encode(c->nonce, c->buf, sizeof(c->buf), &len);
	rn_oob_enter(c, RN_OOB_SEND_READY, len);
	return 0;
}

static int rn_oob_step_send_ready(struct rn_oob_conn *c)
{
	int rc = rn_oob_send_some(c);

	if (rc == -EAGAIN)
		return rc;
	if (rc)
		return rn_oob_fail(c, rc, "send: %s", strerror(-rc));
	/* READY is written; the socket stays open for the comm to watch (rn_oob_conn_take_fd) */
	rn_oob_enter(c, RN_OOB_DONE, 0);
	return 0;
}

static int rn_oob_step_accepting(struct rn_oob_conn *c)
{
	int rc = rn_oob_lobby_run(c->listener);

	if (rc)
		return rn_oob_fail(c, rc, "accept on %s: %s", c->listener->addr, strerror(-rc));
	rc = rn_oob_lobby_take(c->listener, c->buf, &c->len, &c->fd, c->peer_str,
			       sizeof(c->peer_str));
	if (rc)
		return -EAGAIN;
	rn_oob_sockopts(c, c->fd);
	/* the whole HELLO is in buf already: RECV_HELLO only decodes it */
	c->state = RN_OOB_RECV_HELLO;
	c->off = c->len;
	c->peer_ok = false;
	return 0;
}

static int rn_oob_step_reply_hello(struct rn_oob_conn *c)
{
	int rc = rn_oob_send_some(c);

	if (rc == -EAGAIN)
		return rc;
	if (rc)
		return rn_oob_fail(c, rc, "send: %s", strerror(-rc));
	rn_oob_enter(c, RN_OOB_RECV_READY, sizeof(struct rn_wire_msg_hdr));
	return 0;
}

static int rn_oob_step_recv_ready(struct rn_oob_conn *c)
{
	char why[256];
	uint64_t nonce;
	int rc;

	rc = rn_oob_recv_msg(c, why, sizeof(why));
	if (rc == -EAGAIN)
		return rc;
	if (!rc)
		rc = rn_wire_ready_decode(c->buf, c->len, &nonce, why, sizeof(why));
	if (rc)
		return rn_oob_fail(c, rc, "%s", why);
	if (nonce != c->nonce)
		return rn_oob_fail(c, -EPROTO, "READY carries nonce 0x%016llx, expected 0x%016llx",
				   (unsigned long long)nonce, (unsigned long long)c->nonce);
	/* the socket stays open: the comm watches it for the peer's death (rn_oob_conn_take_fd) */
	rn_oob_enter(c, RN_OOB_DONE, 0);
	return 0;
}

typedef int (*rn_oob_step_fn)(struct rn_oob_conn *c);

static const rn_oob_step_fn rn_oob_steps[] = {
	[RN_OOB_CONNECTING] = rn_oob_step_connecting,
	[RN_OOB_SEND_HELLO] = rn_oob_step_send_hello,
	[RN_OOB_RECV_HELLO] = rn_oob_step_recv_hello,
	[RN_OOB_SEND_READY] = rn_oob_step_send_ready,
	[RN_OOB_ACCEPTING] = rn_oob_step_accepting,
	[RN_OOB_REPLY_HELLO] = rn_oob_step_reply_hello,
	[RN_OOB_RECV_READY] = rn_oob_step_recv_ready,
};

int rn_oob_conn_progress(struct rn_oob_conn *c)
{
	for (;;) {
		long long now;
		int rc;

		if (c->state == RN_OOB_DONE)
			return 0;
		if (c->state == RN_OOB_FAILED)
			return c->err;
		rc = rn_oob_steps[c->state](c);
		if (rc == 0)
			continue;
		if (rc != -EAGAIN)
			return rc;
		/* Checked only when stuck, so a handshake that can finish now does. */
		now = rn_now_ms();
		if (c->deadline && now >= c->deadline) {
			if (c->acceptor && c->state == RN_OOB_ACCEPTING)
				return rn_oob_fail(c, -ETIMEDOUT,
						   "no railnet peer connected within %ld ms of the "
						   "first accept call (RAILNET_CONNECT_TIMEOUT)",
						   c->timeout_ms);
			return rn_oob_fail(c, -ETIMEDOUT,
					   "no progress for %ld ms (RAILNET_CONNECT_TIMEOUT); the "
					   "peer stopped answering",
					   c->timeout_ms);
		}
		return -EAGAIN;
	}
}

static struct rn_oob_conn *rn_oob_conn_alloc(const struct rn_hello *local,
					     const struct rn_oob_params *params)
{
	struct rn_oob_conn *c;

	if (!local || !params || params->timeout_ms <= 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->timeout_ms = params->timeout_ms;
	c->peer_hello = params->peer_hello;
	c->arg = params->arg;
	c->sockbuf = params->sockbuf;
	memcpy(&c->local, local, offsetof(struct rn_hello, ports));
	if (local->nports > 0 && local->nports <= RN_WIRE_MAX_PORTS)
		memcpy(c->local.ports, local->ports,
		       (size_t)local->nports * sizeof(local->ports[0]));
	if (local->nqps > 0 && local->nqps <= RN_WIRE_MAX_QPS)
		memcpy(c->local.qps, local->qps, (size_t)local->nqps * sizeof(local->qps[0]));
	return c;
}

int rn_oob_connect_create(const void *handle, size_t handle_len, const struct rn_hello *local,
			  const struct rn_oob_params *params, struct rn_oob_conn **out)
{
	struct rn_handle_info info;
	struct rn_oob_conn *c;
	union rn_sockaddr u;
	socklen_t len;
	char why[256];
	int rc;

	if (!handle || !local || !params || params->timeout_ms <= 0)
		return -EINVAL;
	rc = rn_wire_handle_decode(
		handle, handle_len < RN_WIRE_HANDLE_SIZE ? handle_len : RN_WIRE_HANDLE_SIZE, &info,
		why, sizeof(why));
	if (rc) {
		RN_WARN("connect: the listen handle from NCCL is not valid: %s", why);
		return rc;
	}
	c = rn_oob_conn_alloc(local, params);
	if (!c)
		return -ENOMEM;
	c->nonce = info.nonce;
	len = rn_sockaddr_make(&u, info.family, info.addr, info.port, info.scope_id);
	rn_sockaddr_str(&u, c->peer_str, sizeof(c->peer_str));
	c->fd = socket(info.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		rc = -errno;
		RN_WARN("out-of-band connect to %s: socket: %s", c->peer_str, strerror(-rc));
		goto err_free;
	}
	rn_oob_sockopts(c, c->fd);
	c->deadline = rn_now_ms() + c->timeout_ms;
	if (connect(c->fd, &u.sa, len) == 0) {
		rn_oob_enter(c, RN_OOB_SEND_HELLO, 0);
	} else if (errno == EINPROGRESS || errno == EINTR) {
		rn_oob_enter(c, RN_OOB_CONNECTING, 0);
	} else {
		rc = -errno;
		RN_WARN("out-of-band connect to %s: %s (is the listener's process alive and its "
			"address reachable from this pod?)",
			c->peer_str, strerror(-rc));
		goto err_close;
	}
	*out = c;
	return 0;

err_close:
	close(c->fd);
err_free:
	free(c);
	return rc;
}

int rn_oob_accept_create(struct rn_oob_listener *l, const struct rn_hello *local,
			 const struct rn_oob_params *params, struct rn_oob_conn **out)
{
	struct rn_oob_conn *c;

	if (!l || !local || !params || params->timeout_ms <= 0)
		return -EINVAL;
	c = rn_oob_conn_alloc(local, params);
	if (!c)
		return -ENOMEM;
	c->acceptor = true;
	c->listener = l;
	c->nonce = l->nonce;
	snprintf(c->peer_str, sizeof(c->peer_str), "(not yet connected)");
	c->deadline = rn_now_ms() + c->timeout_ms; /* from the first accept call */
	rn_oob_enter(c, RN_OOB_ACCEPTING, 0);
	*out = c;
	return 0;
}

enum rn_oob_state rn_oob_conn_state(const struct rn_oob_conn *c)
{
	return c->state;
}

const struct rn_hello *rn_oob_conn_peer(const struct rn_oob_conn *c)
{
	return &c->peer;
}

int rn_oob_conn_take_fd(struct rn_oob_conn *c)
{
	int fd = c->state == RN_OOB_DONE ? c->fd : -1;

	if (fd >= 0)
		c->fd = -1;
	return fd;
}

void rn_oob_conn_destroy(struct rn_oob_conn *c)
{
	if (!c)
		return;
	rn_oob_close_fd(c);
	free(c);
}
