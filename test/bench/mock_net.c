// SPDX-License-Identifier: Apache-2.0
/*
 * libnccl-net-rbmock.so: a minimal NCCL net plugin (ncclNetPlugin_v12 only) over TCP on
 * 127.0.0.1, for testing railnet-bench --net's driver (loading, connect/accept loops, the ring
 * pipeline, #wrong) independently of railnet's data path. Honours the parts of the API
 * contract the benchmark relies on: non-blocking accept (NULL comm until a peer arrives),
 * isend/irecv that return a NULL request when RBMOCK_BUSY=N says to (every Nth call), requests
 * completed only by test(), sends matched to receives in posting order, the received size
 * reported by test. Failures on demand: RBMOCK_FAIL_INIT, RBMOCK_NODEV (no devices),
 * RBMOCK_FAIL_CONNECT, RBMOCK_FAIL_TEST=N (the Nth test call of a process returns
 * ncclRemoteError). Not for production; one thread per comm at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_net.h"

#define MOCK_MAXREQ 64

struct mock_req {
	int used, send, done;
	char *buf;
	size_t size, off, hdr_off, want;
	uint64_t hdr;
	struct mock_comm *comm;
};

struct mock_comm {
	int fd;
	struct mock_req req[MOCK_MAXREQ];
	int order[MOCK_MAXREQ], head, n; /* posted, not yet complete, in order */
};

static unsigned long mock_calls;

static int mock_busy(void)
{
	const char *v = getenv("RBMOCK_BUSY");
	long n = v ? atol(v) : 0;

	return n > 0 && ++mock_calls % (unsigned long)n == 0;
}

static ncclResult_t mock_init(void **ctx, uint64_t id, ncclNetCommConfig_v12_t *cfg,
			      ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	if (getenv("RBMOCK_FAIL_INIT")) {
		log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__,
		    "NET/rbmock : init fails (RBMOCK_FAIL_INIT)");
		return ncclSystemError;
	}
	*ctx = (void *)1;
	return ncclSuccess;
}

static ncclResult_t mock_devices(int *n)
{
	*n = getenv("RBMOCK_NODEV") ? 0 : 1;
	return ncclSuccess;
}

static ncclResult_t mock_props(int dev, ncclNetProperties_v12_t *p)
{
	memset(p, 0, sizeof(*p));
	p->name = (char *)"mock0";
	p->pciPath = NULL;
	p->ptrSupport = NCCL_PTR_HOST;
	p->speed = 10000;
	p->port = 1;
	p->maxComms = 1024;
	p->maxRecvs = 1;
	p->vProps.ndevs = 1;
	p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
	p->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
	p->railId = p->planeId = -1;
	return ncclSuccess;
}

static ncclResult_t mock_listen(void *ctx, int dev, void *handle, void **lc)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct mock_comm *c;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&a, &l))
		return ncclSystemError;
	memcpy(handle, &a, sizeof(a));
	c = calloc(1, sizeof(*c));
	c->fd = fd;
	*lc = c;
	return ncclSuccess;
}

static void mock_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static ncclResult_t mock_connect(void *ctx, int dev, void *handle, void **sc,
				 ncclNetDeviceHandle_v12_t **dc)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct mock_comm *c;

	if (getenv("RBMOCK_FAIL_CONNECT")) {
		close(fd);
		return ncclRemoteError;
	}
	memcpy(&a, handle, sizeof(a));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return ncclRemoteError;
	mock_nodelay(fd);
	c = calloc(1, sizeof(*c));
	c->fd = fd;
	*sc = c;
	return ncclSuccess;
}

static ncclResult_t mock_accept(void *lc, void **rc, ncclNetDeviceHandle_v12_t **dc)
{
	struct mock_comm *l = lc, *c;
	int fd = accept(l->fd, NULL, NULL);

	*rc = NULL;
	if (fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? ncclSuccess : ncclSystemError;
	mock_nodelay(fd);
	c = calloc(1, sizeof(*c));
	c->fd = fd;
	*rc = c;
	return ncclSuccess;
}

static ncclResult_t mock_reg(void *comm, void *data, size_t size, int type, void **mh)
{
	*mh = type == NCCL_PTR_HOST ? (void *)2 : NULL;
	return type == NCCL_PTR_HOST ? ncclSuccess : ncclInvalidArgument;
}

static ncclResult_t mock_regdb(void *comm, void *data, size_t size, int type, uint64_t off, int fd,
			       void **mh)
{
	return ncclInvalidUsage;
}

static ncclResult_t mock_dereg(void *comm, void *mh)
{
	return ncclSuccess;
}

static struct mock_req *mock_post(struct mock_comm *c, int send, void *buf, size_t size)
{
	struct mock_req *r = NULL;

	if (c->n == MOCK_MAXREQ)
		return NULL;
	for (int i = 0; i < MOCK_MAXREQ; i++)
		if (!c->req[i].used) {
			r = &c->req[i];
			memset(r, 0, sizeof(*r));
			r->used = 1;
			r->send = send;
			r->buf = buf;
			r->size = size;
			r->hdr = size;
			r->comm = c;
			c->order[(c->head + c->n) % MOCK_MAXREQ] = i;
			c->n++;
			return r;
		}
	return NULL;
}

static ncclResult_t mock_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph,
			       void **req)
{
	*req = mock_busy() ? NULL : mock_post(sc, 1, data, size);
	return ncclSuccess;
}

static ncclResult_t mock_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs,
			       void **phs, void **req)
{
	if (n != 1)
		return ncclInvalidArgument;
	*req = mock_busy() ? NULL : mock_post(rc, 0, data[0], sizes[0]);
	return ncclSuccess;
}

/* Move the oldest request of c forward; 1 when it finished, -1 on error. */
static int mock_progress(struct mock_req *r)
{
	int fd = r->comm->fd;
	ssize_t k;

	while (r->hdr_off < sizeof(r->hdr)) {
		char *h = (char *)&r->hdr + r->hdr_off;

		k = r->send ? send(fd, h, sizeof(r->hdr) - r->hdr_off, MSG_NOSIGNAL)
			    : recv(fd, h, sizeof(r->hdr) - r->hdr_off, 0);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (k <= 0)
			return -1;
		r->hdr_off += (size_t)k;
		if (!r->send && r->hdr_off == sizeof(r->hdr)) {
			if (r->hdr > r->size)
				return -1; /* a send larger than the receive */
			r->want = r->hdr;
		}
	}
	if (r->send)
		r->want = r->size;
	while (r->off < r->want) {
		k = r->send ? send(fd, r->buf + r->off, r->want - r->off, MSG_NOSIGNAL)
			    : recv(fd, r->buf + r->off, r->want - r->off, 0);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (k <= 0)
			return -1;
		r->off += (size_t)k;
	}
	return 1;
}

static ncclResult_t mock_test(void *req, int *done, int *sizes)
{
	struct mock_req *r = req;
	struct mock_comm *c = r->comm;

	static unsigned long tests;
	const char *fail = getenv("RBMOCK_FAIL_TEST");

	*done = 0;
	if (fail && ++tests == strtoul(fail, NULL, 10))
		return ncclRemoteError;
	while (!r->done && c->n) {
		struct mock_req *h = &c->req[c->order[c->head]];
		int p = mock_progress(h);

		if (p < 0)
			return ncclRemoteError;
		if (!p)
			break;
		h->done = 1;
		c->head = (c->head + 1) % MOCK_MAXREQ;
		c->n--;
	}
	if (r->done) {
		*done = 1;
		if (sizes)
			*sizes = (int)(r->send ? r->size : r->want);
		r->used = 0;
	}
	return ncclSuccess;
}

static ncclResult_t mock_iflush(void *rc, int n, void **data, int *sizes, void **mhs, void **req)
{
	*req = NULL;
	return ncclSuccess;
}

static ncclResult_t mock_close(void *comm)
{
	struct mock_comm *c = comm;

	if (c) {
		close(c->fd);
		free(c);
	}
	return ncclSuccess;
}

static ncclResult_t mock_finalize(void *ctx)
{
	return ncclSuccess;
}

__attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "rbmock",
	.init = mock_init,
	.devices = mock_devices,
	.getProperties = mock_props,
	.listen = mock_listen,
	.connect = mock_connect,
	.accept = mock_accept,
	.regMr = mock_reg,
	.regMrDmaBuf = mock_regdb,
	.deregMr = mock_dereg,
	.isend = mock_isend,
	.irecv = mock_irecv,
	.iflush = mock_iflush,
	.test = mock_test,
	.closeSend = mock_close,
	.closeRecv = mock_close,
	.closeListen = mock_close,
	.finalize = mock_finalize,
};
