// SPDX-License-Identifier: Apache-2.0
/*
 * Rendezvous (docs/softverbs.md): fabric-wide QPN claims as RDV/qp/<qpn> files created with
 * link() (atomic, O_EXCL semantics, complete content), each context's listeners (a UNIX socket
 * for peers in our network namespace, TCP for the others), connecting a QP at RTR to its peer
 * and the HELLO both ends check. It must not move payload; that is the NIC's job.
 */
#include "nic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define SV_CONNECT_MS 3000

static uint32_t sv_qpn_next;
static pthread_mutex_t sv_claim_lock = PTHREAD_MUTEX_INITIALIZER;

static int sv_mkdirs(const char *path)
{
	char buf[600];
	size_t i;

	snprintf(buf, sizeof(buf), "%s", path);
	for (i = 1; buf[i]; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 01777) && errno != EEXIST)
			return -errno;
		buf[i] = '/';
	}
	if (mkdir(buf, 01777) && errno != EEXIST)
		return -errno;
	return 0;
}

static bool sv_gid_ipv4(const union ibv_gid *g, struct in_addr *a)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(g->raw, pfx, sizeof(pfx)))
		return false;
	memcpy(&a->s_addr, g->raw + 12, 4);
	return true;
}

static void sv_dev_ipv4(struct sv_device *d, char *buf, size_t len)
{
	struct in_addr a;
	int p, i;

	for (p = 1; p <= d->nports; p++)
		for (i = 0; i < d->port[p].ngids; i++)
			if (d->port[p].gids[i].valid && sv_gid_ipv4(&d->port[p].gids[i].gid, &a)) {
				inet_ntop(AF_INET, &a, buf, (socklen_t)len);
				return;
			}
	snprintf(buf, len, "0.0.0.0");
}

/* pid lives, as far as this PID namespace can tell (EPERM: it exists, not ours to signal). */
static bool sv_pid_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/*
 * A process that died without closing its devices (SIGKILL, a crash) leaves its QP entries and
 * its listener's socket file behind, which a NIC's state would not outlive. The first device a
 * process opens removes those of processes that no longer exist: entries name their pid and
 * PID namespace (an entry of another PID namespace is never touched), socket files end in
 * "-<pid>.sock" and lie in a directory of this namespace's entries only when the pidns matches
 * (the pidns inode is part of the directory name). Best effort; nothing else depends on it.
 */
static void sv_rdv_reap(void)
{
	static bool done;
	char dir[600], path[900], line[256];
	struct dirent *e;
	DIR *d;

	if (done)
		return;
	done = true;
	snprintf(dir, sizeof(dir), "%s/qp", sv_g.rdv);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		unsigned long pidns = 0;
		int pid = 0;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "pid ", 4))
				pid = atoi(line + 4);
			else if (!strncmp(line, "pidns ", 6))
				pidns = strtoul(line + 6, NULL, 10);
		}
		fclose(f);
		if (pidns && pidns == sv_g.pidns_ino && !sv_pid_alive(pid) && !unlink(path))
			sv_dbg("rendezvous: QP entry %s of dead process %d removed", e->d_name,
			       pid);
	}
	if (d)
		closedir(d);
	snprintf(dir, sizeof(dir), "%s/s%lu", sv_g.rdv, sv_g.pidns_ino);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		const char *dash = strrchr(e->d_name, '-');
		int pid = dash ? atoi(dash + 1) : 0;

		if (pid > 0 && strstr(e->d_name, ".sock") && !sv_pid_alive(pid)) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}

int sv_rdv_listen(struct sv_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct sockaddr_in si = { .sin_family = AF_INET };
	socklen_t sl = sizeof(si);
	char dir[600];
	socklen_t ulen;
	int err;

	sv_rdv_reap();
	snprintf(dir, sizeof(dir), "%s/s%lu", sv_g.rdv, sv_g.pidns_ino);
	if (sv_mkdirs(dir) == 0 && strlen(dir) + 30 < sizeof(su.sun_path)) {
		snprintf(ctx->unix_path, sizeof(ctx->unix_path), "%s/%08x-%d.sock", dir,
			 (unsigned)(sv_g.cookie ^ (uintptr_t)ctx), (int)getpid());
	} else {
		snprintf(ctx->unix_path, sizeof(ctx->unix_path), "@softverbs-%016llx-%p",
			 (unsigned long long)sv_g.cookie, (void *)ctx);
	}
	ctx->lis_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctx->lis_unix < 0)
		return -errno;
	snprintf(su.sun_path, sizeof(su.sun_path), "%s", ctx->unix_path);
	ulen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(ctx->unix_path));
	if (su.sun_path[0] == '@')
		su.sun_path[0] = '\0';
	else
		unlink(ctx->unix_path);
	if (bind(ctx->lis_unix, (struct sockaddr *)&su, ulen) || listen(ctx->lis_unix, 256)) {
		err = -errno;
		sv_log("cannot listen on %s: %s", ctx->unix_path, strerror(-err));
		goto err_close;
	}
	ev.data.ptr = &ctx->lis_unix;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->lis_unix, &ev)) {
		err = -errno;
		goto err_close;
	}

	/* TCP for peers in other network namespaces; optional */
	ctx->lis_tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctx->lis_tcp >= 0) {
		si.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(ctx->lis_tcp, (struct sockaddr *)&si, sizeof(si)) ||
		    listen(ctx->lis_tcp, 256) ||
		    getsockname(ctx->lis_tcp, (struct sockaddr *)&si, &sl)) {
			close(ctx->lis_tcp);
			ctx->lis_tcp = -1;
		} else {
			ctx->tcp_port = ntohs(si.sin_port);
			ev.data.ptr = &ctx->lis_tcp;
			epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->lis_tcp, &ev);
		}
	}
	return 0;

err_close:
	close(ctx->lis_unix);
	ctx->lis_unix = -1;
	return err;
}

void sv_rdv_unlisten(struct sv_ctx *ctx)
{
	if (ctx->lis_unix >= 0) {
		close(ctx->lis_unix);
		if (ctx->unix_path[0] != '@')
			unlink(ctx->unix_path);
	}
	if (ctx->lis_tcp >= 0)
		close(ctx->lis_tcp);
	ctx->lis_unix = ctx->lis_tcp = -1;
}

int sv_rdv_claim(struct sv_qp *qp)
{
	struct sv_ctx *ctx = qp->ctx;
	char dir[600], tmp[700], body[1024], ip[64];
	int fd, n, err = 0, tries;

	if (!sv_g.rdv[0])
		return -ENODEV;
	snprintf(dir, sizeof(dir), "%s/qp", sv_g.rdv);
	err = sv_mkdirs(dir);
	if (err) {
		sv_log("rendezvous directory %s: %s", dir, strerror(-err));
		return err;
	}
	sv_dev_ipv4(ctx->dev, ip, sizeof(ip));
	n = snprintf(body, sizeof(body),
		     "unix %s\ntcp %s %d\nnetns %lu\npid %d\npidns %lu\nnode %s\npod %s\ndev %s\n",
		     ctx->unix_path, ip, ctx->tcp_port, sv_g.netns_ino, (int)getpid(),
		     sv_g.pidns_ino, sv_g.node[0] ? sv_g.node : "-", sv_g.pod[0] ? sv_g.pod : "-",
		     ctx->dev->dev.name);

	pthread_mutex_lock(&sv_claim_lock);
	if (!sv_qpn_next)
		sv_qpn_next = (uint32_t)((sv_g.cookie >> 20) % 0xff0000u) + 0x100;
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%d-%p", dir, (int)getpid(), (void *)qp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, body, (size_t)n) != n) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		pthread_mutex_unlock(&sv_claim_lock);
		sv_log("rendezvous %s: cannot write QP entry: %s", dir, strerror(-err));
		return err;
	}
	close(fd);
	for (tries = 0; tries < 1 << 16; tries++) {
		uint32_t qpn = sv_qpn_next;

		sv_qpn_next = sv_qpn_next >= 0xfffffe ? 0x100 : sv_qpn_next + 1;
		sv_fmt(qp->rdv_entry, sizeof(qp->rdv_entry), "%s/%u", dir, qpn);
		if (link(tmp, qp->rdv_entry) == 0) {
			qp->qpn = qpn;
			break;
		}
		if (errno != EEXIST) {
			err = -errno;
			break;
		}
	}
	unlink(tmp);
	pthread_mutex_unlock(&sv_claim_lock);
	if (!qp->qpn) {
		qp->rdv_entry[0] = '\0';
		if (!err)
			err = -ENOSPC;
		sv_log("rendezvous %s: cannot claim a QPN: %s", dir, strerror(-err));
	}
	return err;
}

void sv_rdv_release(struct sv_qp *qp)
{
	if (qp->rdv_entry[0])
		unlink(qp->rdv_entry);
	qp->rdv_entry[0] = '\0';
}

struct sv_peer {
	char unix_path[108];
	char ip[64];
	int port;
	unsigned long netns;
	int pid;
};

static int sv_rdv_lookup(uint32_t qpn, struct sv_peer *p)
{
	char path[600], line[600];
	FILE *f;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "%s/qp/%u", sv_g.rdv, qpn);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "unix ", 5))
			sscanf(line + 5, "%107s", p->unix_path);
		else if (!strncmp(line, "tcp ", 4))
			sscanf(line + 4, "%63s %d", p->ip, &p->port);
		else if (!strncmp(line, "netns ", 6))
			p->netns = strtoul(line + 6, NULL, 10);
		else if (!strncmp(line, "pid ", 4))
			p->pid = atoi(line + 4);
	}
	fclose(f);
	return p->unix_path[0] || p->port ? 0 : -EINVAL;
}

static int sv_wait_fd(int fd, short events, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&pfd, 1, ms);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : -errno;
}

static int sv_connect_to(const struct sv_peer *p, const union ibv_gid *dgid)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err;

	memset(&ss, 0, sizeof(ss));
	if (p->netns == sv_g.netns_ino && p->unix_path[0] && !sv_g.tcp_host[0]) {
		struct sockaddr_un *su = (struct sockaddr_un *)&ss;

		su->sun_family = AF_UNIX;
		snprintf(su->sun_path, sizeof(su->sun_path), "%s", p->unix_path);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(p->unix_path));
		if (su->sun_path[0] == '@')
			su->sun_path[0] = '\0';
	} else {
		struct sockaddr_in *si = (struct sockaddr_in *)&ss;

		si->sin_family = AF_INET;
		si->sin_port = htons((uint16_t)p->port);
		/* the dgid is the peer's rail address; the entry's address is the fallback */
		if (sv_g.tcp_host[0]) {
			if (inet_pton(AF_INET, sv_g.tcp_host, &si->sin_addr) != 1)
				return -EADDRNOTAVAIL;
		} else if (!sv_gid_ipv4(dgid, &si->sin_addr) &&
			   inet_pton(AF_INET, p->ip, &si->sin_addr) != 1) {
			return -EADDRNOTAVAIL;
		}
		if (!p->port)
			return -ECONNREFUSED;
		len = sizeof(*si);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		err = -errno;
		goto err_close;
	}
	err = sv_wait_fd(fd, POLLOUT, SV_CONNECT_MS);
	if (!err) {
		socklen_t el = sizeof(err);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el))
			err = errno;
		err = -err;
	}
	if (err)
		goto err_close;
	if (ss.ss_family == AF_INET) {
		int one = 1;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;

err_close:
	close(fd);
	return err;
}

static int sv_io_all(int fd, void *buf, size_t len, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;
		int err = sv_wait_fd(fd, wr ? POLLOUT : POLLIN, SV_CONNECT_MS);

		if (err)
			return err;
		n = wr ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
		       : recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

/*
 * May QP qp (ctx->lock and qp->lock held) take a link from QP sqpn, which addresses dgid from a
 * port on rail? 0, or the errno the peer is refused with.
 */
static int sv_rdv_admit(struct sv_ctx *ctx, struct sv_qp *qp, const union ibv_gid *dgid,
			const char *rail, uint32_t sqpn)
{
	int port = qp->attr.port_num;

	if (!sv_port_has_gid(ctx->dev, port, dgid)) {
		sv_dbg("QP %u: HELLO from QP %u for a GID this port does not show; refused",
		       qp->qpn, sqpn);
		return EADDRNOTAVAIL;
	}
	if (rail[0] && ctx->dev->port[port].rail[0] && strcmp(rail, ctx->dev->port[port].rail)) {
		sv_dbg("QP %u: HELLO from QP %u on rail %s, this port is on rail %s: unreachable",
		       qp->qpn, sqpn, rail, ctx->dev->port[port].rail);
		return EHOSTUNREACH;
	}
	if (qp->in && !qp->in->dead)
		return EBUSY;
	return 0;
}

/*
 * Both QPs in this context (loopback on one device): a link without a socket, two connection
 * objects that hand bytes to each other (nic.h, sv_conn.loop), checked as a HELLO would be.
 * A NIC needs no descriptor per QP, and neither does this: a process holding thousands of
 * loopback QPs is not limited by RLIMIT_NOFILE. 0 or -errno.
 */
static int sv_rdv_connect_local(struct sv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
				int port)
{
	struct sv_ctx *ctx = qp->ctx;
	struct sv_conn *req = sv_conn_new(ctx, -1, true, sv_g.vm, getpid());
	struct sv_conn *resp = sv_conn_new(ctx, -1, false, sv_g.vm, getpid());
	struct sv_qp *peer;
	int err = -ENOMEM;

	if (!req || !resp)
		goto err_free;
	pthread_mutex_lock(&ctx->lock);
	peer = sv_nic_qp_find(ctx, dqpn);
	err = peer ? 0 : -ENOENT;
	if (!err) {
		pthread_mutex_lock(&peer->lock);
		err = -sv_rdv_admit(ctx, peer, dgid, ctx->dev->port[port].rail, qp->qpn);
		pthread_mutex_unlock(&peer->lock);
	}
	if (!err && sv_nic_conn_add(ctx, req))
		err = -ENOMEM;
	if (!err && sv_nic_conn_add(ctx, resp)) {
		sv_conn_mark_dead(req); /* linked: the NIC reaps it */
		req = NULL;
		err = -ENOMEM;
	}
	if (err) {
		pthread_mutex_unlock(&ctx->lock);
		goto err_free;
	}
	req->loop = resp;
	resp->loop = req;
	pthread_mutex_lock(&peer->lock);
	resp->qp = peer;
	resp->hello_done = true;
	peer->in = resp;
	pthread_mutex_unlock(&peer->lock);
	if (qp->out)
		sv_conn_mark_dead(qp->out);
	pthread_mutex_lock(&qp->lock);
	req->qp = qp;
	qp->out = req;
	qp->link_dead_ns = 0;
	pthread_mutex_unlock(&qp->lock);
	pthread_mutex_unlock(&ctx->lock);
	sv_dbg("QP %u -> QP %u connected (loop)", qp->qpn, dqpn);
	return 0;

err_free:
	if (req) {
		free(req->in);
		free(req);
	}
	if (resp) {
		free(resp->in);
		free(resp);
	}
	return err;
}

void sv_rdv_connect(struct sv_qp *qp)
{
	struct sv_ctx *ctx = qp->ctx;
	struct {
		struct sv_hdr h;
		struct sv_hello b;
	} m;
	struct {
		struct sv_hdr h;
		struct sv_hello_reply b;
	} r;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP };
	struct sv_peer peer;
	struct sv_conn *c;
	union ibv_gid dgid, sgid;
	uint32_t dqpn;
	int fd, err, port;

	pthread_mutex_lock(&qp->lock);
	dgid = qp->attr.ah_attr.grh.dgid;
	port = qp->attr.port_num;
	sgid = ctx->dev->port[port].gids[qp->attr.ah_attr.grh.sgid_index].gid;
	dqpn = qp->attr.dest_qp_num;
	pthread_mutex_unlock(&qp->lock);

	err = sv_rdv_lookup(dqpn, &peer);
	if (err) {
		sv_dbg("QP %u: peer QP %u not in the rendezvous (%s)", qp->qpn, dqpn,
		       strerror(-err));
		goto err_dead;
	}
	if (peer.pid == (int)getpid() && !strcmp(peer.unix_path, ctx->unix_path) &&
	    !sv_g.tcp_host[0]) {
		err = sv_rdv_connect_local(qp, dqpn, &dgid, port);
		if (!err)
			return;
		sv_dbg("QP %u: peer QP %u refused the connection: %s", qp->qpn, dqpn,
		       strerror(-err));
		goto err_dead;
	}
	fd = sv_connect_to(&peer, &dgid);
	if (fd < 0) {
		err = fd;
		sv_dbg("QP %u: cannot reach peer QP %u: %s", qp->qpn, dqpn, strerror(-err));
		goto err_dead;
	}
	memset(&m, 0, sizeof(m));
	m.h.type = SV_MSG_HELLO;
	m.h.len = sizeof(m.b);
	m.b.magic = SV_WIRE_MAGIC;
	m.b.version = SV_WIRE_VERSION;
	memcpy(m.b.dgid, dgid.raw, 16);
	memcpy(m.b.sgid, sgid.raw, 16);
	m.b.dqpn = dqpn;
	m.b.sqpn = qp->qpn;
	m.b.pid = (uint64_t)getpid();
	m.b.cookie_addr = (uintptr_t)&sv_cookie;
	m.b.cookie = sv_g.cookie;
	m.b.netns = sv_g.netns_ino;
	m.b.want_vm = sv_g.vm;
	snprintf(m.b.rail, sizeof(m.b.rail), "%s", ctx->dev->port[port].rail);
	err = sv_io_all(fd, &m, sizeof(m), true);
	if (!err)
		err = sv_io_all(fd, &r, sizeof(r), false);
	if (!err && (r.h.type != SV_MSG_HELLO_REPLY || r.b.magic != SV_WIRE_MAGIC))
		err = -EPROTO;
	if (!err && r.b.status)
		err = -r.b.status;
	if (err) {
		sv_dbg("QP %u: peer QP %u refused the connection: %s", qp->qpn, dqpn,
		       strerror(-err));
		close(fd);
		goto err_dead;
	}
	c = sv_conn_new(ctx, fd, true, r.b.vm != 0, peer.pid);
	if (!c) {
		close(fd);
		err = -ENOMEM;
		goto err_dead;
	}
	pthread_mutex_lock(&ctx->lock);
	ev.data.ptr = c;
	if (sv_nic_conn_add(ctx, c)) {
		pthread_mutex_unlock(&ctx->lock);
		close(fd);
		free(c->in);
		free(c);
		goto err_dead;
	}
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		sv_conn_mark_dead(c); /* linked: the NIC reaps it */
		pthread_mutex_unlock(&ctx->lock);
		goto err_dead;
	}
	if (qp->out)
		sv_conn_mark_dead(qp->out);
	pthread_mutex_lock(&qp->lock);
	c->qp = qp;
	qp->out = c;
	qp->link_dead_ns = 0;
	pthread_mutex_unlock(&qp->lock);
	pthread_mutex_unlock(&ctx->lock);
	sv_dbg("QP %u -> QP %u connected (%s)", qp->qpn, dqpn, c->vm ? "one-copy" : "stream");
	return;

err_dead:
	pthread_mutex_lock(&qp->lock);
	qp->link_dead_ns = sv_now_ns();
	pthread_mutex_unlock(&qp->lock);
}

/* NIC thread, ctx->lock held: the first message on an accepted connection. */
int sv_rdv_accept_hello(struct sv_conn *c, const void *msg, size_t len)
{
	struct sv_ctx *ctx = c->ctx;
	struct sv_hdr h = { .type = SV_MSG_HELLO_REPLY, .len = sizeof(struct sv_hello_reply) };
	struct sv_hello_reply rep = { .magic = SV_WIRE_MAGIC };
	struct sv_hello hello;
	struct sv_qp *qp;
	union ibv_gid dgid;

	if (len != sizeof(hello)) {
		rep.status = EPROTO;
		goto reply;
	}
	memcpy(&hello, msg, sizeof(hello));
	if (hello.magic != SV_WIRE_MAGIC || hello.version != SV_WIRE_VERSION) {
		rep.status = EPROTO;
		goto reply;
	}
	qp = sv_nic_qp_find(ctx, hello.dqpn);
	if (!qp) {
		rep.status = ENOENT;
		goto reply;
	}
	memcpy(dgid.raw, hello.dgid, 16);
	hello.rail[sizeof(hello.rail) - 1] = '\0';
	pthread_mutex_lock(&qp->lock);
	rep.status = sv_rdv_admit(ctx, qp, &dgid, hello.rail, hello.sqpn);
	if (rep.status) {
		pthread_mutex_unlock(&qp->lock);
		goto reply;
	}
	if (hello.want_vm && sv_g.vm) {
		uint64_t v = 0;
		struct iovec l = { .iov_base = &v, .iov_len = sizeof(v) };
		struct iovec r = { .iov_base = (void *)(uintptr_t)hello.cookie_addr,
				   .iov_len = sizeof(v) };

		if (process_vm_readv((pid_t)hello.pid, &l, 1, &r, 1, 0) == sizeof(v) &&
		    v == hello.cookie)
			rep.vm = 1;
	}
	c->vm = rep.vm;
	c->peer_pid = (pid_t)hello.pid;
	c->qp = qp;
	c->hello_done = true;
	qp->in = c;
	pthread_mutex_unlock(&qp->lock);

reply:
	sv_conn_queue(c, &h, &rep, sizeof(rep));
	return rep.status ? -rep.status : 0;
}
