// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the listener's side of the out-of-band handshake: a real railnet listener
 * (rn_conn_listen on 127.0.0.1: oob.c's lobby and acceptor, conn.c's acceptor hook, qp.c's
 * check of the peer's QPs, made through test/unit/fake_verbs_lib.c, the fake libibverbs found
 * next to this binary) and a peer on loopback TCP that does what the input says.
 *
 * The input: one flag byte, then up to 32 operations of one byte each: 0 send (a 2-byte
 * little-endian length and that many bytes follow), 1 step the acceptor and read its reply,
 * 2 half-close, 3 reconnect (4 connections at most). Flags: 0x01 writes this build's
 * RN_WIRE_VERSION at bytes 4-5, and 0x10 the listener's nonce at bytes 16-23, of each chunk
 * sent that starts with the message magic (where a header and the body of HELLO, READY and
 * REFUSE carry them), so that inputs, seeds included, can get past both; 0x02 uses a listener
 * with minimal socket buffers; 0x04 ends the peer's connections with a reset; 0x08 adds a
 * silent connection for the whole input.
 *
 * Checked: nothing crashes and every input ends within seconds; the acceptor returns only a
 * connection or an error a peer can cause (never -EINVAL, which NCCL would read as its own
 * bad argument); what it sends back is one HELLO or one REFUSE carrying its nonce; a
 * connection it returns holds a peer description within the limits; and after every input a
 * connector with the handle still gets a connection from the same listener, and no fd and no
 * protection-domain reference is left behind.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "railnet/conn.h"
#include "railnet/log.h"
#include "railnet/verbs.h"
#include "railnet/wire.h"

#define RN_FZ_NAME "fuzz_handshake"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RN_FZ_VERSION 0x01
#define RN_FZ_SMALL 0x02
#define RN_FZ_RESET 0x04
#define RN_FZ_SILENT 0x08
#define RN_FZ_NONCE 0x10

#define RN_FZ_MAX_OPS 32
#define RN_FZ_MAX_CONNS 4
#define RN_FZ_NPORTS 2
#define RN_FZ_INPUT_MS 10000 /* an input that takes longer hangs somewhere */

struct rn_fz_listener {
	struct rn_conn_listener *l;
	uint8_t handle[RN_WIRE_HANDLE_BUF];
	uint64_t nonce;
	struct sockaddr_in addr;
};

/* The peer's connection and what it received from the acceptor. */
struct rn_fz_peer {
	int fd;
	size_t got;
	uint8_t buf[2 * RN_WIRE_MSG_MAX];
};

static struct rn_fz_listener rn_fz_ls[2];
static struct rn_qp_port rn_fz_ports[RN_FZ_NPORTS];
static struct ibv_context *rn_fz_ctx;
static int rn_fz_fds; /* open fds between inputs */

static long long rn_fz_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rn_fz_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		rn_fz_fail("cannot list /proc/self/fd");
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void rn_fz_params(struct rn_conn_params *p, int sockbuf)
{
	static struct rn_oob_if lo;

	memset(&lo, 0, sizeof(lo));
	snprintf(lo.name, sizeof(lo.name), "lo");
	lo.family = AF_INET;
	lo.addr[0] = 127;
	lo.addr[3] = 1;
	lo.up = lo.loopback = true;
	memset(p, 0, sizeof(*p));
	p->iface = &lo;
	p->timeout_ms = RN_FZ_INPUT_MS;
	p->qps_per_port = 1;
	p->attr.timeout = 14;
	p->attr.retry_cnt = 7;
	p->sockbuf = sockbuf;
	p->region_bytes = 4096;
}

/* A connection the acceptor returned: the peer it describes is within the limits. */
static void rn_fz_check_conn(const struct rn_conn *c)
{
	if (!c->set || c->role != RN_CONN_RECV || c->oob_fd < 0 || c->remote.nports < 1 ||
	    c->remote.nports > RN_QP_MAX_PORTS || c->remote.nqps < 1 ||
	    c->remote.nqps > RN_QP_MAX_QPS || (int)c->remote.nqps != c->set->nqps)
		rn_fz_fail("accepted connection out of bounds (%u ports, %u QPs)", c->remote.nports,
			   c->remote.nqps);
	for (uint32_t i = 0; i < c->remote.nqps; i++)
		if (c->remote.qp[i].port >= c->remote.nports)
			rn_fz_fail("accepted QP %u on peer port %u of %u", i, c->remote.qp[i].port,
				   c->remote.nports);
}

/* One step of the acceptor: 1 when it returned a connection, 0 when it is still running. */
static int rn_fz_accept(struct rn_fz_listener *fl, bool *failed)
{
	struct rn_conn *c = NULL;
	int rc = rn_conn_accept_step(fl->l, &c);

	if (rc) {
		/* a peer can break the handshake, never pass for a bad argument of NCCL's */
		if (rc == -EINVAL || rc == -EAGAIN || rc == -ETIMEDOUT || rc >= 0 || c)
			rn_fz_fail("accept returned %d (%s)", rc, strerror(-rc));
		*failed = true;
		return 0;
	}
	if (!c)
		return 0;
	rn_fz_check_conn(c);
	rn_conn_close(c);
	return 1;
}

/* The acceptor's bytes so far: the start of one HELLO or one REFUSE, with its nonce. */
static void rn_fz_check_reply(const struct rn_fz_listener *fl, const struct rn_fz_peer *p)
{
	static struct rn_hello h;
	char why[256], reason[RN_WIRE_REASON_MAX + 1];
	size_t total;
	uint64_t nonce;
	int type, err;

	if (p->got < sizeof(struct rn_wire_msg_hdr))
		return;
	if (rn_wire_hdr_decode(p->buf, p->got, &type, &total, why, sizeof(why)))
		rn_fz_fail("the acceptor sent a bad header: %s", why);
	if (type != RN_WIRE_MSG_HELLO && type != RN_WIRE_MSG_REFUSE)
		rn_fz_fail("the acceptor sent a message of type %d", type);
	if (p->got > total)
		rn_fz_fail("the acceptor sent %zu bytes after its %zu-byte reply", p->got - total,
			   total);
	if (p->got < total)
		return;
	if (type == RN_WIRE_MSG_HELLO) {
		if (rn_wire_hello_decode(p->buf, total, &h, why, sizeof(why)))
			rn_fz_fail("the acceptor's HELLO does not decode: %s", why);
		nonce = h.nonce;
	} else if (rn_wire_refuse_decode(p->buf, total, &nonce, &err, reason, sizeof(reason), why,
					 sizeof(why))) {
		rn_fz_fail("the acceptor's REFUSE does not decode: %s", why);
	}
	if (nonce != fl->nonce)
		rn_fz_fail("the acceptor's reply carries another nonce");
}

static void rn_fz_read(const struct rn_fz_listener *fl, struct rn_fz_peer *p)
{
	while (p->fd >= 0 && p->got < sizeof(p->buf)) {
		ssize_t n = recv(p->fd, p->buf + p->got, sizeof(p->buf) - p->got, MSG_DONTWAIT);

		if (n <= 0)
			break;
		p->got += (size_t)n;
	}
	rn_fz_check_reply(fl, p);
}

/* Step the acceptor until it has nothing more to do, reading what it sends to the peer. */
static void rn_fz_pump(struct rn_fz_listener *fl, struct rn_fz_peer *p)
{
	bool failed = false;

	for (int i = 0; i < 8 && !failed; i++) {
		if (rn_fz_accept(fl, &failed))
			break;
		if (p)
			rn_fz_read(fl, p);
	}
}

static int rn_fz_connect(const struct rn_fz_listener *fl)
{
	struct pollfd pfd;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		rn_fz_fail("socket: %s", strerror(errno));
	if (connect(fd, (const struct sockaddr *)&fl->addr, sizeof(fl->addr)) &&
	    errno != EINPROGRESS)
		rn_fz_fail("connect to the listener: %s", strerror(errno));
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
		rn_fz_fail("connect to the listener did not complete: %s", strerror(err));
	return fd;
}

static void rn_fz_close(int fd, bool reset)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	if (reset)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* A legitimate connector with the handle: the listener must still serve it. */
static void rn_fz_legit(struct rn_fz_listener *fl, int sockbuf)
{
	uint8_t handle[RN_WIRE_HANDLE_BUF];
	struct rn_conn *cc = NULL, *ac = NULL;
	struct rn_conn_params p;
	long long end = rn_fz_now_ms() + RN_FZ_INPUT_MS;
	int rc = 0, ra = 0;

	rn_fz_params(&p, sockbuf);
	memcpy(handle, fl->handle, sizeof(handle));
	while ((!cc || !ac) && rn_fz_now_ms() < end) {
		if (!cc && !rc)
			rc = rn_conn_connect_step(handle, rn_fz_ports, RN_FZ_NPORTS, &p, &cc);
		if (!ac && !ra)
			ra = rn_conn_accept_step(fl->l, &ac);
		if (rc || ra)
			rn_fz_fail("a legitimate connector failed after the input: connect %d, "
				   "accept %d",
				   rc, ra);
	}
	if (!cc || !ac)
		rn_fz_fail("a legitimate connector was not served within %d ms", RN_FZ_INPUT_MS);
	rn_fz_check_conn(ac);
	if (ac->remote.nqps != cc->remote.nqps || cc->remote.nports != RN_FZ_NPORTS)
		rn_fz_fail("the legitimate connection's ends disagree");
	rn_conn_close(cc);
	rn_conn_close(ac);
}

static void rn_fz_init(void)
{
	const struct rn_verbs_ops *v;
	struct ibv_device **list = NULL;
	char exe[PATH_MAX], lib[PATH_MAX + 64];
	ssize_t n;
	int ndev = 0;

	rn_log_set_logger(rn_fz_logger);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		rn_fz_fail("readlink /proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	/* test/unit/verbs.cmake builds it into <build>/test/fake; this binary is in <build>/test */
	snprintf(lib, sizeof(lib), "%s/fake/libfake_verbs_full.so", dirname(exe));
	if (rn_verbs_load(lib))
		rn_fz_fail("cannot load the fake libibverbs %s", lib);
	v = rn_verbs();
	if (v->get_device_list(&list, &ndev) || ndev < 1 || v->open_device(list[0], &rn_fz_ctx))
		rn_fz_fail("the fake libibverbs has no device to open");
	v->free_device_list(list);
	for (int i = 0; i < RN_FZ_NPORTS; i++) {
		struct rn_qp_port *q = &rn_fz_ports[i];

		q->ctx = rn_fz_ctx;
		snprintf(q->name, sizeof(q->name), "fake0");
		q->port = i + 1;
		q->gid_index = 3;
		q->gid[10] = q->gid[11] = 0xff;
		q->gid[12] = 10;
		q->gid[15] = (uint8_t)(i + 1);
		q->mtu = IBV_MTU_4096;
		q->link_layer = IBV_LINK_LAYER_ETHERNET;
		q->rail = 0x100u + (uint32_t)i;
	}
	for (int i = 0; i < 2; i++) {
		struct rn_fz_listener *fl = &rn_fz_ls[i];
		struct rn_handle_info info;
		struct rn_conn_params p;
		char why[256];

		rn_fz_params(&p, i ? 1 : 0);
		if (rn_conn_listen(rn_fz_ports, RN_FZ_NPORTS, &p, fl->handle, &fl->l) ||
		    rn_wire_handle_decode(fl->handle, RN_WIRE_HANDLE_SIZE, &info, why, sizeof(why)))
			rn_fz_fail("cannot listen on 127.0.0.1");
		fl->nonce = info.nonce;
		fl->addr.sin_family = AF_INET;
		fl->addr.sin_port = htons(info.port);
		memcpy(&fl->addr.sin_addr, info.addr, 4);
		rn_fz_legit(fl, i ? 1 : 0); /* the lobby's epoll fd exists from here on */
	}
	rn_fz_fds = rn_fz_fd_count();
}

static void rn_fz_send(struct rn_fz_peer *p, const struct rn_fz_listener *fl, const uint8_t *b,
		       size_t len, int flags)
{
	uint8_t buf[UINT16_MAX];
	uint64_t nonce = htole64(fl->nonce);
	uint16_t version = htole16(RN_WIRE_VERSION);
	uint32_t magic = htole32(RN_WIRE_MSG_MAGIC);
	bool msg;

	if (p->fd < 0 || !len)
		return;
	memcpy(buf, b, len);
	msg = len >= sizeof(magic) && !memcmp(buf, &magic, sizeof(magic));
	if (msg && (flags & RN_FZ_VERSION) && len >= offsetof(struct rn_wire_msg_hdr, type))
		memcpy(buf + offsetof(struct rn_wire_msg_hdr, version), &version, sizeof(version));
	if (msg && (flags & RN_FZ_NONCE) && len >= sizeof(struct rn_wire_msg_hdr) + sizeof(nonce))
		memcpy(buf + sizeof(struct rn_wire_msg_hdr), &nonce, sizeof(nonce));
	/* the acceptor may have dropped the connection already: that is an answer too */
	(void)send(p->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static struct rn_fz_peer peer;
	struct rn_fz_listener *fl;
	long long end;
	size_t pos = 1;
	int flags, silent = -1, conns = 1, ops = 0;
	bool failed = false;

	if (!ready) {
		rn_fz_init();
		ready = true;
	}
	if (!size)
		return 0;
	flags = data[0];
	fl = &rn_fz_ls[flags & RN_FZ_SMALL ? 1 : 0];
	end = rn_fz_now_ms() + RN_FZ_INPUT_MS;
	if (flags & RN_FZ_SILENT)
		silent = rn_fz_connect(fl);
	memset(&peer, 0, sizeof(peer));
	peer.fd = rn_fz_connect(fl);
	while (pos < size && ops++ < RN_FZ_MAX_OPS) {
		switch (data[pos++] % 4) {
		case 0: {
			size_t len = 0;

			if (pos + 2 <= size)
				len = data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
			if (pos > size)
				break;
			if (len > size - pos)
				len = size - pos;
			rn_fz_send(&peer, fl, data + pos, len, flags);
			pos += len;
			break;
		}
		case 1:
			rn_fz_pump(fl, &peer);
			break;
		case 2:
			if (peer.fd >= 0)
				shutdown(peer.fd, SHUT_WR);
			break;
		default:
			if (conns == RN_FZ_MAX_CONNS)
				break;
			rn_fz_close(peer.fd, flags & RN_FZ_RESET);
			memset(&peer, 0, sizeof(peer));
			peer.fd = rn_fz_connect(fl);
			conns++;
			break;
		}
	}
	rn_fz_pump(fl, &peer);
	rn_fz_close(peer.fd, flags & RN_FZ_RESET);
	rn_fz_close(silent, flags & RN_FZ_RESET);
	/* the peer is gone: whatever the acceptor held of it ends now, a handshake included */
	for (int i = 0; i < 16 && !failed; i++)
		if (rn_fz_accept(fl, &failed))
			break;
	/*
	 * A legitimate connector is still served; meanwhile the lobby closes each connection the
	 * peer left when it reads its EOF (at once on loopback, but give it the time).
	 */
	do
		rn_fz_legit(fl, flags & RN_FZ_SMALL ? 1 : 0);
	while (rn_fz_fd_count() != rn_fz_fds && rn_fz_now_ms() < end);
	if (rn_fz_fd_count() != rn_fz_fds)
		rn_fz_fail("%d fds open after the input, %d before", rn_fz_fd_count(), rn_fz_fds);
	if (rn_pd_refs(rn_fz_ctx))
		rn_fz_fail("%d protection-domain references left", rn_pd_refs(rn_fz_ctx));
	if (rn_fz_now_ms() > end)
		rn_fz_fail("the input took more than %d ms", RN_FZ_INPUT_MS);
	return 0;
}
