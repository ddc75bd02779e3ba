/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-nettest: a functional test of an NCCL net plugin, driven the way outside plugin test
 * harnesses drive one: dlopen of the .so, dlsym of ncclNetPlugin_v12 or _v11, one init per
 * process, then listen/connect/accept, regMr, isend/irecv/test and the closes between exactly
 * two MPI ranks, the 128-byte handles travelling over MPI. It includes only nccl_headers/ and
 * never links railnet. Scenarios (nettest.sh runs them in softverbs pods): threads, ring,
 * accept10, inflight, multi, tags, oversize, close_inflight, bad (all of them, in this order,
 * for `all`) and vnic. Rank 0 sends and rank 1 receives unless a scenario says otherwise;
 * every byte received is checked against a pattern of the sending rank, the stream, the
 * message and the offset, and every scenario is bounded in time. The ranks close their comms
 * after an MPI barrier that follows the last transfer (--close-early: without it; the
 * close_inflight scenario closes with requests in flight on purpose). Output: "FAIL: <scenario>:
 * <what>" per failed check, "ok: <scenario> ..." per passed scenario, "N passed, M failed" at
 * the end. Exit 0 when all passed, 1 when not, 2 on bad usage or a world size other than 2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setns, CLONE_NEWNET */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "nccl_net.h"
#include "rb_net.h"

#define NT_HANDLE NCCL_NET_HANDLE_MAXSIZE
#define NT_KIB ((size_t)1024)
#define NT_MIB ((size_t)1024 * 1024)
#define NT_BOUND_S 60	    /* each scenario's polling ends in a FAIL after this */
#define NT_VNIC_BOUND_S 180 /* 2000 MiB through softverbs */
#define NT_WINDOW_MAX 32
#define NT_MAX_FAIL_LINES 20 /* per scenario and rank; later failures are only counted */
#define NT_DEFAULT_PLUGIN "libnccl-net-railnet.so"
#define NT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The plugin as loaded: one of the two tables, and the one context init gave. */
struct nt_net {
	void *lib;
	int api;
	const ncclNet_v12_t *v12;
	const ncclNet_v11_t *v11;
	void *ctx;
};

/* A call whose argument types are the same in v11 and v12. */
#define NT_CALL(member, ...) \
	(nt_net.api == 12 ? nt_net.v12->member(__VA_ARGS__) : nt_net.v11->member(__VA_ARGS__))

struct nt_args {
	const char *plugin;
	const char *netns;
	const char *scenario;
	int api;
	int vnic;
	bool close_early;
};

static struct nt_net nt_net;
static struct nt_args nt_args;
static int nt_rank, nt_peer;
static bool nt_log_info;

/*
 * The scenario running: its name and index (part of every pattern), its deadline, the checks
 * that failed on this rank (atomic: the threads scenario fails from several threads) and the
 * details rank 0 puts on its ok line.
 */
static const char *nt_scen_name = "setup";
static int nt_scen_idx;
static double nt_deadline;
static int nt_bound_s;
static int nt_scen_fails;
static char nt_note[512];

/* ---- reporting ---------------------------------------------------------------------------- */

static const char *nt_res(ncclResult_t r)
{
	static const char *const names[] = {
		"ncclSuccess",	     "ncclUnhandledCudaError", "ncclSystemError",
		"ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
		"ncclRemoteError",   "ncclInProgress",	       "ncclTimeout",
	};

	return (unsigned int)r < NT_ARRAY_SIZE(names) ? names[r] : "(unknown result)";
}

static void nt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void nt_fail(const char *fmt, ...)
{
	int n = __atomic_add_fetch(&nt_scen_fails, 1, __ATOMIC_RELAXED);
	char msg[1024];
	va_list ap;

	if (n > NT_MAX_FAIL_LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("FAIL: %s: rank %d: %s%s\n", nt_scen_name, nt_rank, msg,
	       n == NT_MAX_FAIL_LINES ? " (further failures of this scenario are only counted)"
				      : "");
	fflush(stdout);
}

static void nt_notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends to rank 0's ok line. */
static void nt_notef(const char *fmt, ...)
{
	size_t used = strlen(nt_note);
	va_list ap;

	if (nt_rank || used >= sizeof(nt_note) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(nt_note + used, sizeof(nt_note) - used, fmt, ap);
	va_end(ap);
}

static void nt_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* NCCL's logger as a harness gives it: WARN lines (INFO with NCCL_DEBUG=INFO) on stderr. */
static void nt_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level != NCCL_LOG_WARN && !(level == NCCL_LOG_INFO && nt_log_info))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nettest[rank %d] NCCL %s %s\n", nt_rank,
		level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

/* ---- time --------------------------------------------------------------------------------- */

static double nt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool nt_late(void)
{
	return nt_now() > nt_deadline;
}

/*
 * A polling round made no progress. Two ranks, the plugin's and softverbs' threads may
 * outnumber the cores: yield at first, then sleep a little so the thread that would complete
 * the request gets the CPU.
 */
static void nt_idle(unsigned int *idle)
{
	if (++*idle < 64) {
		sched_yield();
		return;
	}
	nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
}

/* ---- the data pattern --------------------------------------------------------------------- */

static uint64_t nt_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Seed of one message: scenario, sending rank, stream and message index. */
static uint64_t nt_seed(int src, int stream, int msg)
{
	return nt_mix(((uint64_t)(nt_scen_idx & 0xff) << 56) ^ ((uint64_t)(src & 0xff) << 48) ^
		      ((uint64_t)(stream & 0xffff) << 32) ^ (uint32_t)msg);
}

/* Byte `off` of a message is byte off % 8 of nt_mix(seed + off / 8). */
static void nt_fill(unsigned char *p, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t v = nt_mix(seed + off / 8);

		memcpy(p + off, &v, len - off < 8 ? len - off : 8);
	}
}

/* Checks [0, len) of p against the pattern of seed; FAILs naming the first wrong byte. */
static bool nt_verify(const char *what, int msg, const unsigned char *p, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t v = nt_mix(seed + off / 8);
		size_t n = len - off < 8 ? len - off : 8;
		unsigned char want[8];

		memcpy(want, &v, sizeof(want));
		if (!memcmp(p + off, want, n))
			continue;
		for (size_t i = 0; i < n; i++)
			if (p[off + i] != want[i]) {
				nt_fail("%s: message %d (%zu B): byte %zu is 0x%02x, want 0x%02x",
					what, msg, len, off + i, p[off + i], want[i]);
				break;
			}
		return false;
	}
	return true;
}

/* ---- plugin calls with the checks every scenario needs ------------------------------------ */

/* Host memory registered on a comm (NCCL_PTR_HOST), page aligned. */
struct nt_buf {
	unsigned char *p;
	size_t len;
	void *comm;
	void *mh;
};

static int nt_buf_reg(struct nt_buf *b, void *comm, size_t len, const char *what)
{
	size_t alloc = (len + 4095) / 4096 * 4096;
	ncclResult_t r;

	memset(b, 0, sizeof(*b));
	b->p = aligned_alloc(4096, alloc ? alloc : 4096);
	if (!b->p) {
		nt_fail("%s: out of memory for %zu bytes", what, len);
		return -1;
	}
	memset(b->p, 0, len);
	b->len = len;
	b->comm = comm;
	r = NT_CALL(regMr, comm, b->p, len, NCCL_PTR_HOST, &b->mh);
	if (r || !b->mh) {
		nt_fail("%s: regMr(%zu B, NCCL_PTR_HOST) returned %s, mhandle %p", what, len,
			nt_res(r), b->mh);
		free(b->p);
		b->p = NULL;
		b->mh = NULL;
		return -1;
	}
	return 0;
}

/* deregMr through the comm it was registered on (which may be closed by now), then free. */
static void nt_buf_dereg(struct nt_buf *b, const char *what)
{
	if (b->mh) {
		ncclResult_t r = NT_CALL(deregMr, b->comm, b->mh);

		if (r)
			nt_fail("%s: deregMr returned %s", what, nt_res(r));
	}
	free(b->p);
	memset(b, 0, sizeof(*b));
}

enum nt_kind { NT_SEND, NT_RECV, NT_LISTEN };

/* closeSend / closeRecv / closeListen of *comm (NULL: nothing to close); *comm is NULL after. */
static void nt_close(enum nt_kind kind, void **comm, const char *what)
{
	static const char *const name[] = { "closeSend", "closeRecv", "closeListen" };
	ncclResult_t r;

	if (!*comm)
		return;
	r = kind == NT_SEND   ? NT_CALL(closeSend, *comm)
	    : kind == NT_RECV ? NT_CALL(closeRecv, *comm)
			      : NT_CALL(closeListen, *comm);
	if (r)
		nt_fail("%s: %s returned %s", what, name[kind], nt_res(r));
	*comm = NULL;
}

static void nt_close_send(void **comm, const char *what)
{
	nt_close(NT_SEND, comm, what);
}

static void nt_close_recv(void **comm, const char *what)
{
	nt_close(NT_RECV, comm, what);
}

static void nt_close_listen(void **comm, const char *what)
{
	nt_close(NT_LISTEN, comm, what);
}

/* listen on dev; NULL (and a zeroed handle) after a FAIL. */
static void *nt_listen(int dev, void *handle, const char *what)
{
	void *lc = NULL;
	ncclResult_t r;

	memset(handle, 0, NT_HANDLE);
	r = NT_CALL(listen, nt_net.ctx, dev, handle, &lc);
	if (r || !lc) {
		nt_fail("%s: listen(dev %d) returned %s, listenComm %p", what, dev, nt_res(r), lc);
		memset(handle, 0, NT_HANDLE);
		return NULL;
	}
	return lc;
}

/* Swaps len bytes of handles with the peer rank (MPI, main thread only). */
static void nt_exchange(const void *mine, void *theirs, size_t len)
{
	MPI_Sendrecv(mine, (int)len, MPI_BYTE, nt_peer, 17, theirs, (int)len, MPI_BYTE, nt_peer, 17,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/*
 * Called by both ranks (main thread) when their data is through and before they close: the
 * receiver closes only once the sender's last send completed too, as harnesses end a run.
 * --close-early skips it: each side closes as soon as its own requests are done (a receiver
 * that tears its QPs down right after its last receive; see the usage text).
 */
static void nt_sync_before_close(void)
{
	if (!nt_args.close_early)
		MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * connect (when handle: the caller's own copy, which the plugin may write into) and accept
 * (when lc) called alternately until each gave its comm, as NCCL's proxy drives them.
 * 0, or -1 after a FAIL; comms already obtained are left for the caller to close.
 */
static int nt_connect_accept(const char *what, int dev, void *handle, void **sc, void *lc,
			     void **rc)
{
	ncclNetDeviceHandle_v12_t *sdev = NULL, *rdev = NULL;
	unsigned int idle = 0;
	ncclResult_t r;

	if (!handle && !lc) {
		nt_fail("%s: nothing to connect or accept (listen failed)", what);
		return -1;
	}
	if (handle)
		*sc = NULL;
	if (lc)
		*rc = NULL;
	while ((handle && !*sc) || (lc && !*rc)) {
		bool progress = false;

		if (handle && !*sc) {
			r = NT_CALL(connect, nt_net.ctx, dev, handle, sc, &sdev);
			if (r) {
				nt_fail("%s: connect(dev %d) returned %s", what, dev, nt_res(r));
				return -1;
			}
			progress |= *sc != NULL;
		}
		if (lc && !*rc) {
			r = NT_CALL(accept, lc, rc, &rdev);
			if (r) {
				nt_fail("%s: accept returned %s", what, nt_res(r));
				return -1;
			}
			progress |= *rc != NULL;
		}
		if (progress)
			continue;
		if (nt_late()) {
			nt_fail("%s: %s not done after %d s", what,
				handle && !*sc ? (lc && !*rc ? "connect and accept" : "connect")
					       : "accept",
				nt_bound_s);
			return -1;
		}
		nt_idle(&idle);
	}
	return 0;
}

/* isend, called again while it gives no request (the receiver has not posted yet). */
static void *nt_isend(void *sc, void *data, size_t size, int tag, void *mh, const char *what)
{
	unsigned int idle = 0;

	for (;;) {
		void *req = NULL;
		ncclResult_t r = NT_CALL(isend, sc, data, size, tag, mh, NULL, &req);

		if (r) {
			nt_fail("%s: isend(%zu B, tag %d) returned %s", what, size, tag, nt_res(r));
			return NULL;
		}
		if (req)
			return req;
		if (nt_late()) {
			nt_fail("%s: isend(%zu B, tag %d) gave no request in %d s", what, size, tag,
				nt_bound_s);
			return NULL;
		}
		nt_idle(&idle);
	}
}

/* irecv of n buffers, called again while it gives no request. */
static void *nt_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs,
		      const char *what)
{
	unsigned int idle = 0;

	for (;;) {
		void *req = NULL;
		ncclResult_t r = NT_CALL(irecv, rc, n, data, sizes, tags, mhs, NULL, &req);

		if (r) {
			nt_fail("%s: irecv(n %d) returned %s", what, n, nt_res(r));
			return NULL;
		}
		if (req)
			return req;
		if (nt_late()) {
			nt_fail("%s: irecv(n %d) gave no request in %d s", what, n, nt_bound_s);
			return NULL;
		}
		nt_idle(&idle);
	}
}

/*
 * test() of reqs[0..n) until every one is done; request i is tested with sizep[i] (NULL: no
 * sizes array) and set to NULL when done. 0, or -1 after a FAIL with requests left in flight.
 */
static int nt_wait_all(void **reqs, int n, int **sizep, const char *what)
{
	unsigned int idle = 0;
	int left = 0;

	for (int i = 0; i < n; i++)
		left += reqs[i] != NULL;
	while (left) {
		bool progress = false;

		for (int i = 0; i < n; i++) {
			int done = 0;
			ncclResult_t r;

			if (!reqs[i])
				continue;
			r = NT_CALL(test, reqs[i], &done, sizep ? sizep[i] : NULL);
			if (r) {
				nt_fail("%s: test of request %d returned %s", what, i, nt_res(r));
				return -1;
			}
			if (done) {
				reqs[i] = NULL;
				left--;
				progress = true;
			}
		}
		if (progress) {
			idle = 0;
			continue;
		}
		if (nt_late()) {
			nt_fail("%s: %d of %d requests not done after %d s", what, left, n,
				nt_bound_s);
			return -1;
		}
		nt_idle(&idle);
	}
	return 0;
}

/* ---- streams: many messages over one comm, a window of them in flight --------------------- */

/* 13 sizes from 0 B to 1 MiB, around the boundaries a transport cares about. */
static size_t nt_mixed_size(int stream, int msg)
{
	static const size_t sizes[] = { 0,    1,     8,	     127,    128,     4095,   4096,
					4097, 65536, 100003, 262144, 1048575, 1048576 };

	return sizes[(unsigned int)(msg + stream * 5) % NT_ARRAY_SIZE(sizes)];
}

static size_t nt_mib_size(int stream, int msg)
{
	(void)stream;
	(void)msg;
	return NT_MIB;
}

/*
 * One direction of one comm: message i goes into window slot i % window and is posted (in
 * message order: matching is FIFO) once that slot's previous message is done. Receives post
 * the slot's full size; test must report the size sent, and the bytes must match the pattern.
 */
struct nt_stream {
	char what[48];
	void *comm;
	bool send;
	int src, id, tag;
	int count, goal; /* messages in all; stop (for now) after `goal` are done */
	int window;
	size_t slot;
	size_t (*size_of)(int stream, int msg);
	struct nt_buf buf;
	void *req[NT_WINDOW_MAX];
	int msg[NT_WINDOW_MAX];
	int posted, done;
	bool filled, failed;
};

static int nt_stream_open(struct nt_stream *s, const char *what, void *comm, bool send, int src,
			  int id, int count, int window, size_t slot,
			  size_t (*size_of)(int stream, int msg))
{
	memset(s, 0, sizeof(*s));
	snprintf(s->what, sizeof(s->what), "%s", what);
	s->comm = comm;
	s->send = send;
	s->src = src;
	s->id = id;
	s->tag = 1;
	s->count = count;
	s->goal = count;
	s->window = window;
	s->slot = slot;
	s->size_of = size_of;
	if (nt_buf_reg(&s->buf, comm, (size_t)window * slot, what)) {
		s->failed = true;
		return -1;
	}
	return 0;
}

/*
 * Ends the stream and closes its comm: deregMr then close when nothing is in flight; with
 * requests left behind (a failure), close first so the plugin stops using the memory.
 */
static void nt_stream_end(struct nt_stream *s, void **comm)
{
	bool idle = s->posted == s->done;

	if (idle)
		nt_buf_dereg(&s->buf, s->what);
	if (s->send)
		nt_close_send(comm, s->what);
	else
		nt_close_recv(comm, s->what);
	if (!idle)
		nt_buf_dereg(&s->buf, s->what);
}

static int nt_stream_post(struct nt_stream *s)
{
	int progress = 0;

	while (s->posted < s->goal && !s->req[s->posted % s->window]) {
		int i = s->posted, j = i % s->window;
		unsigned char *p = s->buf.p + (size_t)j * s->slot;
		size_t size = s->size_of(s->id, i);
		void *req = NULL;
		ncclResult_t r;

		if (s->send) {
			if (!s->filled) {
				nt_fill(p, size, nt_seed(s->src, s->id, i));
				s->filled = true;
			}
			r = NT_CALL(isend, s->comm, p, size, s->tag, s->buf.mh, NULL, &req);
		} else {
			void *data = p, *mh = s->buf.mh;
			size_t cap = s->slot;
			int tag = s->tag;

			r = NT_CALL(irecv, s->comm, 1, &data, &cap, &tag, &mh, NULL, &req);
		}
		if (r) {
			nt_fail("%s: %s of message %d (%zu B) returned %s", s->what,
				s->send ? "isend" : "irecv", i, size, nt_res(r));
			s->failed = true;
			return -1;
		}
		if (!req)
			break;
		s->req[j] = req;
		s->msg[j] = i;
		s->filled = false;
		s->posted++;
		progress = 1;
	}
	return progress;
}

/* One round: post what the window allows, test what is in flight. 1 progress, 0 none, -1. */
static int nt_stream_step(struct nt_stream *s)
{
	int progress;

	if (s->failed || s->done >= s->goal)
		return 0;
	progress = nt_stream_post(s);
	if (progress < 0)
		return -1;
	for (int j = 0; j < s->window; j++) {
		int done = 0, got = -1, i = s->msg[j];
		bool want_size = !s->send || (i & 1); /* senders: a sizes array every other time */
		size_t size;
		ncclResult_t r;

		if (!s->req[j])
			continue;
		r = NT_CALL(test, s->req[j], &done, want_size ? &got : NULL);
		if (r) {
			nt_fail("%s: test of message %d returned %s", s->what, i, nt_res(r));
			s->failed = true;
			return -1;
		}
		if (!done)
			continue;
		s->req[j] = NULL;
		s->done++;
		progress = 1;
		size = s->size_of(s->id, i);
		if (want_size && (got < 0 || (size_t)got != size)) {
			nt_fail("%s: message %d: test reports %d bytes, %zu were sent", s->what, i,
				got, size);
			s->failed = true;
			return -1;
		}
		if (!s->send && !nt_verify(s->what, i, s->buf.p + (size_t)j * s->slot, size,
					   nt_seed(s->src, s->id, i))) {
			s->failed = true;
			return -1;
		}
	}
	return progress;
}

/* Drives streams until each reached its goal, failed, or the deadline passed. */
static bool nt_streams_run(struct nt_stream **v, int n)
{
	unsigned int idle = 0;
	bool ok = true;

	for (;;) {
		bool busy = false, progress = false;

		for (int k = 0; k < n; k++) {
			if (v[k]->failed || v[k]->done >= v[k]->goal)
				continue;
			busy = true;
			if (nt_stream_step(v[k]) > 0)
				progress = true;
		}
		if (!busy)
			break;
		if (progress) {
			idle = 0;
			continue;
		}
		if (nt_late()) {
			for (int k = 0; k < n; k++) {
				struct nt_stream *s = v[k];

				if (s->failed || s->done >= s->goal)
					continue;
				nt_fail("%s: %d of %d messages %s after %d s (%d posted)", s->what,
					s->done, s->goal, s->send ? "sent" : "received", nt_bound_s,
					s->posted);
				s->failed = true;
			}
			break;
		}
		nt_idle(&idle);
	}
	for (int k = 0; k < n; k++)
		ok &= !v[k]->failed;
	return ok;
}

/* ---- a: threads ------------------------------------------------------------------------- */

#define NT_THREADS 4
#define NT_THREAD_MSGS 100

struct nt_thread {
	int idx;
	pthread_t tid;
	char what[32];
	char mine[NT_HANDLE], theirs[NT_HANDLE];
	pthread_barrier_t *listened, *exchanged, *drained, *released;
};

/*
 * One thread's own connection: the receiver's thread listens, the main thread swaps the
 * handles over MPI between the first two barriers, then connect and accept are polled
 * alternately and 100 messages of mixed sizes flow from rank 0 to rank 1. The threads close
 * after the last two barriers, between which the main thread syncs the ranks.
 */
static void *nt_thread_main(void *arg)
{
	struct nt_thread *t = arg;
	bool sender = nt_rank == 0;
	void *lc = NULL, *sc = NULL, *rc = NULL;
	struct nt_stream s, *v = &s;
	bool opened = false;

	if (!sender)
		lc = nt_listen(0, t->mine, t->what);
	pthread_barrier_wait(t->listened);
	pthread_barrier_wait(t->exchanged);
	if (!nt_connect_accept(t->what, 0, sender ? t->theirs : NULL, &sc, lc, &rc))
		opened = !nt_stream_open(&s, t->what, sender ? sc : rc, sender, 0, t->idx,
					 NT_THREAD_MSGS, 8, NT_MIB, nt_mixed_size);
	if (opened)
		nt_streams_run(&v, 1);
	pthread_barrier_wait(t->drained);
	pthread_barrier_wait(t->released);
	if (opened)
		nt_stream_end(&s, sender ? &sc : &rc);
	nt_close_send(&sc, t->what);
	nt_close_recv(&rc, t->what);
	nt_close_listen(&lc, t->what);
	return NULL;
}

static void nt_scen_threads(void)
{
	struct nt_thread th[NT_THREADS];
	char mine[NT_THREADS][NT_HANDLE], theirs[NT_THREADS][NT_HANDLE];
	pthread_barrier_t listened, exchanged, drained, released;
	int rc;

	pthread_barrier_init(&listened, NULL, NT_THREADS + 1);
	pthread_barrier_init(&exchanged, NULL, NT_THREADS + 1);
	pthread_barrier_init(&drained, NULL, NT_THREADS + 1);
	pthread_barrier_init(&released, NULL, NT_THREADS + 1);
	for (int i = 0; i < NT_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].idx = i;
		snprintf(th[i].what, sizeof(th[i].what), "thread %d", i);
		th[i].listened = &listened;
		th[i].exchanged = &exchanged;
		th[i].drained = &drained;
		th[i].released = &released;
		rc = pthread_create(&th[i].tid, NULL, nt_thread_main, &th[i]);
		if (rc) {
			fprintf(stderr, "nettest: pthread_create: %s\n", strerror(rc));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	pthread_barrier_wait(&listened);
	for (int i = 0; i < NT_THREADS; i++)
		memcpy(mine[i], th[i].mine, NT_HANDLE);
	nt_exchange(mine, theirs, sizeof(mine));
	for (int i = 0; i < NT_THREADS; i++)
		memcpy(th[i].theirs, theirs[i], NT_HANDLE);
	pthread_barrier_wait(&exchanged);
	pthread_barrier_wait(&drained);
	nt_sync_before_close();
	pthread_barrier_wait(&released);
	for (int i = 0; i < NT_THREADS; i++)
		pthread_join(th[i].tid, NULL);
	pthread_barrier_destroy(&listened);
	pthread_barrier_destroy(&exchanged);
	pthread_barrier_destroy(&drained);
	pthread_barrier_destroy(&released);
	nt_notef("%d threads on one context, %d messages each, 0 B .. 1 MiB", NT_THREADS,
		 NT_THREAD_MSGS);
}

/* ---- b: ring ------------------------------------------------------------------------------ */

#define NT_RING_MSGS 200

/* Both ranks listen, connect to the peer and accept from it, then send and receive at once. */
static void nt_scen_ring(void)
{
	char mine[NT_HANDLE], theirs[NT_HANDLE];
	void *lc, *sc = NULL, *rc = NULL;
	struct nt_stream tx, rx, *v[2] = { &tx, &rx };
	bool opened = false;

	lc = nt_listen(0, mine, "listen");
	nt_exchange(mine, theirs, NT_HANDLE);
	if (lc && !nt_connect_accept("ring connect/accept", 0, theirs, &sc, lc, &rc)) {
		bool ok = !nt_stream_open(&tx, "send stream", sc, true, nt_rank, nt_rank,
					  NT_RING_MSGS, 8, NT_MIB, nt_mixed_size);

		ok &= !nt_stream_open(&rx, "receive stream", rc, false, nt_peer, nt_peer,
				      NT_RING_MSGS, 8, NT_MIB, nt_mixed_size);
		opened = true;
		if (ok)
			nt_streams_run(v, 2);
	}
	nt_sync_before_close();
	if (opened) {
		nt_stream_end(&tx, &sc);
		nt_stream_end(&rx, &rc);
	}
	nt_close_send(&sc, "ring");
	nt_close_recv(&rc, "ring");
	nt_close_listen(&lc, "ring");
	nt_notef("%d messages each way at once, 0 B .. 1 MiB", NT_RING_MSGS);
}

/* ---- c: accept10 ------------------------------------------------------------------------ */

#define NT_ACCEPTS 10

/*
 * One listen comm on rank 1 accepts 10 connections; rank 0 connects with 10 copies of the
 * handle whose bytes 64..127 were scribbled over before their first connect. Each new comm
 * carries one message before the next accept, then all 10 carry one more.
 */
static void nt_scen_accept10(void)
{
	char mine[NT_HANDLE], theirs[NT_HANDLE], copy[NT_ACCEPTS][NT_HANDLE];
	char what[NT_ACCEPTS][32];
	struct nt_stream s[NT_ACCEPTS], *v[NT_ACCEPTS];
	void *comm[NT_ACCEPTS] = { NULL }, *lc = NULL;
	bool sender = nt_rank == 0;
	int opened = 0;

	memset(mine, 0, sizeof(mine));
	if (!sender)
		lc = nt_listen(0, mine, "listen");
	nt_exchange(mine, theirs, NT_HANDLE);
	for (int k = 0; k < NT_ACCEPTS; k++) {
		int rc;

		snprintf(what[k], sizeof(what[k]), "connection %d", k);
		if (sender) {
			memcpy(copy[k], theirs, NT_HANDLE);
			memset(copy[k] + 64, 0xAA, NT_HANDLE - 64);
			rc = nt_connect_accept(what[k], 0, copy[k], &comm[k], NULL, NULL);
		} else {
			rc = nt_connect_accept(what[k], 0, NULL, NULL, lc, &comm[k]);
		}
		if (rc || nt_stream_open(&s[k], what[k], comm[k], sender, 0, k, 2, 1, NT_MIB,
					 nt_mixed_size))
			break;
		v[k] = &s[k];
		opened++;
		s[k].goal = 1;
		if (!nt_streams_run(&v[k], 1))
			break;
	}
	if (opened == NT_ACCEPTS) {
		for (int k = 0; k < NT_ACCEPTS; k++)
			s[k].goal = 2;
		nt_streams_run(v, NT_ACCEPTS);
	}
	nt_sync_before_close();
	for (int k = 0; k < opened; k++)
		nt_stream_end(&s[k], &comm[k]);
	for (int k = 0; k < NT_ACCEPTS; k++) {
		if (sender)
			nt_close_send(&comm[k], what[k]);
		else
			nt_close_recv(&comm[k], what[k]);
	}
	nt_close_listen(&lc, "listen");
	nt_notef("%d connections through one listen comm, 2 messages each", NT_ACCEPTS);
}

/* ---- one connection from rank 0 to rank 1 ----------------------------------------------- */

/*
 * Rank 1 listens on dev, rank 0 connects: *comm is rank 0's send comm or rank 1's recv comm.
 * dev < 0 (this rank failed already): only the handle exchange, so the peer is not left
 * waiting in MPI. 0, or -1 (after a FAIL where this call found the failure).
 */
static int nt_pair(int dev, void **comm, const char *what)
{
	char mine[NT_HANDLE], theirs[NT_HANDLE];
	void *lc = NULL;
	int rc;

	memset(mine, 0, sizeof(mine));
	*comm = NULL;
	if (nt_rank == 1 && dev >= 0)
		lc = nt_listen(dev, mine, what);
	nt_exchange(mine, theirs, NT_HANDLE);
	if (dev < 0)
		rc = -1;
	else if (nt_rank == 0)
		rc = nt_connect_accept(what, dev, theirs, comm, NULL, NULL);
	else
		rc = nt_connect_accept(what, dev, NULL, NULL, lc, comm);
	nt_close_listen(&lc, what);
	return rc;
}

static void nt_unpair(void **comm, const char *what)
{
	if (nt_rank == 0)
		nt_close_send(comm, what);
	else
		nt_close_recv(comm, what);
}

/*
 * The end of a scenario of one pair and one buffer: both ranks meet, then deregister and close
 * in NCCL's order; with requests still busy (a failure) the comm closes first, so that the
 * registration is not released under writes in flight.
 */
static void nt_finish(void **comm, struct nt_buf *b, bool busy, const char *what, const char *bufs)
{
	nt_sync_before_close();
	if (busy || nt_scen_fails) {
		nt_unpair(comm, what);
		nt_buf_dereg(b, bufs);
	} else {
		nt_buf_dereg(b, bufs);
		nt_unpair(comm, what);
	}
}

/* ---- d: inflight ------------------------------------------------------------------------ */

#define NT_INFLIGHT 32
#define NT_INFLIGHT_ROUNDS 4
#define NT_INFLIGHT_SLOT (64 * NT_KIB)

static size_t nt_inflight_size(int round, int i)
{
	return i == 5 ? 0 : (size_t)(round * NT_INFLIGHT + i) * 2053 % (NT_INFLIGHT_SLOT + 1);
}

/*
 * 32 isends of tag 7 posted before any is tested, against 32 irecvs of tag 7; test with a
 * sizes array for odd requests (the size checked) and NULL for even ones.
 */
static void nt_scen_inflight(void)
{
	void *comm = NULL, *req[NT_INFLIGHT];
	int got[NT_INFLIGHT], *sizep[NT_INFLIGHT];
	struct nt_buf b = { 0 };
	bool busy = false;
	char what[48];

	if (nt_pair(0, &comm, "pair") ||
	    nt_buf_reg(&b, comm, NT_INFLIGHT * NT_INFLIGHT_SLOT, "inflight buffers"))
		goto out;
	for (int round = 0; round < NT_INFLIGHT_ROUNDS && !busy; round++) {
		snprintf(what, sizeof(what), "round %d", round);
		for (int i = 0; i < NT_INFLIGHT; i++) {
			unsigned char *p = b.p + (size_t)i * NT_INFLIGHT_SLOT;
			size_t size = nt_inflight_size(round, i);

			got[i] = -1;
			sizep[i] = i & 1 ? &got[i] : NULL;
			req[i] = NULL;
			if (nt_rank == 0) {
				nt_fill(p, size, nt_seed(0, round, i));
				req[i] = nt_isend(comm, p, size, 7, b.mh, what);
			} else {
				void *data = p, *mh = b.mh;
				size_t cap = NT_INFLIGHT_SLOT;
				int tag = 7;

				req[i] = nt_irecv(comm, 1, &data, &cap, &tag, &mh, what);
			}
			busy |= req[i] != NULL;
			if (!req[i])
				goto out;
		}
		if (nt_wait_all(req, NT_INFLIGHT, sizep, what))
			goto out;
		busy = false;
		for (int i = 0; i < NT_INFLIGHT; i++) {
			size_t size = nt_inflight_size(round, i);

			if (sizep[i] && (size_t)got[i] != size)
				nt_fail("%s: request %d: test reports %d bytes, %zu were sent",
					what, i, got[i], size);
			if (nt_rank == 1)
				nt_verify(what, i, b.p + (size_t)i * NT_INFLIGHT_SLOT, size,
					  nt_seed(0, round, i));
		}
	}
out:
	nt_finish(&comm, &b, busy, "inflight", "inflight buffers");
	nt_notef("%d rounds of %d requests in flight, tag 7, sizes checked on odd ones",
		 NT_INFLIGHT_ROUNDS, NT_INFLIGHT);
}

/* ---- e: multi --------------------------------------------------------------------------- */

#define NT_MULTI_GROUPS 50

static const int nt_multi_tags[4] = { 5, 5, 6, 5 };
static const size_t nt_multi_sizes[4] = { 64 * 1024, 0, 4 * 1024, 1024 * 1024 };
static const size_t nt_multi_off[4] = { 0, 64 * 1024, 128 * 1024, 132 * 1024 };
/* Send orders: the i-th send of tag 5 lands in the i-th tag-5 buffer whatever the order. */
static const int nt_multi_order[2][4] = { { 0, 1, 2, 3 }, { 2, 0, 1, 3 } };

/* Multi-receives of 4 buffers with repeated tags; matching inside a group is positional. */
static void nt_scen_multi(void)
{
	size_t len = nt_multi_off[3] + nt_multi_sizes[3];
	void *comm = NULL, *req[4];
	int got[4], *sizep[4];
	struct nt_buf b = { 0 };
	bool busy = false;
	char what[48];

	if (nt_pair(0, &comm, "pair") || nt_buf_reg(&b, comm, len, "multi buffers"))
		goto out;
	for (int g = 0; g < NT_MULTI_GROUPS; g++) {
		snprintf(what, sizeof(what), "group %d", g);
		for (int i = 0; i < 4; i++) {
			got[i] = -1;
			sizep[i] = &got[i];
			req[i] = NULL;
		}
		if (nt_rank == 0) {
			for (int k = 0; k < 4; k++) {
				int i = nt_multi_order[g & 1][k];
				unsigned char *p = b.p + nt_multi_off[i];

				nt_fill(p, nt_multi_sizes[i], nt_seed(0, i, g));
				req[i] = nt_isend(comm, p, nt_multi_sizes[i], nt_multi_tags[i],
						  b.mh, what);
				if (!req[i])
					goto out;
				busy = true;
			}
			if (nt_wait_all(req, 4, sizep, what))
				goto out;
			for (int i = 0; i < 4; i++)
				if ((size_t)got[i] != nt_multi_sizes[i])
					nt_fail("%s: send %d (tag %d): %d bytes reported, %zu sent",
						what, i, nt_multi_tags[i], got[i],
						nt_multi_sizes[i]);
		} else {
			void *data[4], *mhs[4];
			size_t sizes[4];
			int tags[4];

			for (int i = 0; i < 4; i++) {
				data[i] = b.p + nt_multi_off[i];
				mhs[i] = b.mh;
				sizes[i] = nt_multi_sizes[i];
				tags[i] = nt_multi_tags[i];
			}
			req[0] = nt_irecv(comm, 4, data, sizes, tags, mhs, what);
			if (!req[0])
				goto out;
			busy = true;
			if (nt_wait_all(req, 1, sizep, what))
				goto out;
			for (int i = 0; i < 4; i++) {
				if ((size_t)got[i] != nt_multi_sizes[i])
					nt_fail("%s: buffer %d (tag %d): %d bytes reported, %zu "
						"sent",
						what, i, nt_multi_tags[i], got[i],
						nt_multi_sizes[i]);
				nt_verify(what, i, b.p + nt_multi_off[i], nt_multi_sizes[i],
					  nt_seed(0, i, g));
			}
		}
		busy = false;
	}
out:
	nt_finish(&comm, &b, busy, "multi", "multi buffers");
	nt_notef("%d groups of 4 buffers, tags {5,5,6,5}, sizes {64K,0,4K,1M}", NT_MULTI_GROUPS);
}

/* ---- f: tags ---------------------------------------------------------------------------- */

#define NT_TAG_ROUNDS 100
#define NT_TAG_SLOT (8 * NT_KIB)
#define NT_TAG_TRIES 3

static size_t nt_tag_size(int tag, int round)
{
	return tag == 1 ? 4096 + (size_t)round : 1000 + 3 * (size_t)round;
}

/*
 * Receives of tag 1 then tag 2 posted back to back; the sender starts with tag 2, which must
 * give "not now" (ncclSuccess, NULL request), then tag 1 and tag 2 go. Every round has one
 * MPI barrier on both ranks (after the receives are posted), so a failure on one side cannot
 * leave the other waiting in MPI.
 */
static void nt_scen_tags(void)
{
	void *comm = NULL, *req[2];
	int got[2], *sizep[2] = { &got[0], &got[1] };
	struct nt_buf b = { 0 };
	bool busy = false, broken;
	int nulls = 0, proven = 0;
	char what[48];

	broken = nt_pair(0, &comm, "pair") || nt_buf_reg(&b, comm, 3 * NT_TAG_SLOT, "buffers");
	for (int round = 0; round < NT_TAG_ROUNDS; round++) {
		snprintf(what, sizeof(what), "round %d", round);
		req[0] = req[1] = NULL;
		got[0] = got[1] = -1;
		if (!broken && nt_rank == 1) {
			for (int t = 0; t < 2 && !broken; t++) {
				void *data = b.p + (size_t)t * NT_TAG_SLOT, *mh = b.mh;
				size_t cap = NT_TAG_SLOT;
				int tag = t + 1;

				req[t] = nt_irecv(comm, 1, &data, &cap, &tag, &mh, what);
				broken = !req[t];
				busy |= req[t] != NULL;
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (!broken && nt_rank == 0) {
			int tries = 0, first_try = 0;

			for (int t = 0; t < 2; t++)
				nt_fill(b.p + (size_t)t * NT_TAG_SLOT, nt_tag_size(t + 1, round),
					nt_seed(0, t + 1, round));
			/* tag 2 first: the head of the FIFO is the tag-1 receive */
			for (tries = 0; tries < NT_TAG_TRIES; tries++) {
				ncclResult_t r =
					NT_CALL(isend, comm, b.p + NT_TAG_SLOT,
						nt_tag_size(2, round), 2, b.mh, NULL, &req[1]);

				if (r || req[1]) {
					nt_fail("%s: isend(tag 2) before tag 1 returned %s with "
						"request %p; want ncclSuccess and no request",
						what, nt_res(r), req[1]);
					broken = true;
					busy |= req[1] != NULL;
					break;
				}
				nulls++;
			}
			/* then tag 1: did it go at once, the receive was visible already */
			for (tries = 0; !broken && !req[0]; tries++) {
				ncclResult_t r = NT_CALL(isend, comm, b.p, nt_tag_size(1, round), 1,
							 b.mh, NULL, &req[0]);

				if (r) {
					nt_fail("%s: isend(tag 1) returned %s", what, nt_res(r));
					broken = true;
				} else if (!req[0] && nt_late()) {
					nt_fail("%s: isend(tag 1) gave no request in %d s", what,
						nt_bound_s);
					broken = true;
				}
				first_try = tries == 0 && req[0];
			}
			busy |= req[0] != NULL;
			proven += first_try;
			if (!broken) {
				req[1] = nt_isend(comm, b.p + NT_TAG_SLOT, nt_tag_size(2, round), 2,
						  b.mh, what);
				broken = !req[1];
			}
		}
		if (broken)
			continue;
		busy = true;
		if (nt_wait_all(req, 2, sizep, what)) {
			broken = true;
			continue;
		}
		busy = false;
		for (int t = 0; t < 2; t++) {
			size_t size = nt_tag_size(t + 1, round);

			if ((size_t)got[t] != size)
				nt_fail("%s: tag %d: test reports %d bytes, %zu were sent", what,
					t + 1, got[t], size);
			if (nt_rank == 1)
				nt_verify(what, t + 1, b.p + (size_t)t * NT_TAG_SLOT, size,
					  nt_seed(0, t + 1, round));
		}
	}
	/* the connection is still healthy: one plain message */
	if (!broken) {
		unsigned char *p = b.p + 2 * NT_TAG_SLOT;

		got[0] = -1;
		if (nt_rank == 0) {
			nt_fill(p, NT_TAG_SLOT, nt_seed(0, 0, NT_TAG_ROUNDS));
			req[0] = nt_isend(comm, p, NT_TAG_SLOT, 0, b.mh, "final message");
		} else {
			void *data = p, *mh = b.mh;
			size_t cap = NT_TAG_SLOT;
			int tag = 0;

			req[0] = nt_irecv(comm, 1, &data, &cap, &tag, &mh, "final message");
		}
		busy = req[0] != NULL;
		if (req[0] && !nt_wait_all(req, 1, sizep, "final message")) {
			busy = false;
			if (got[0] != (int)NT_TAG_SLOT)
				nt_fail("final message: test reports %d bytes, %zu were sent",
					got[0], NT_TAG_SLOT);
			if (nt_rank == 1)
				nt_verify("final message", 0, p, NT_TAG_SLOT,
					  nt_seed(0, 0, NT_TAG_ROUNDS));
		}
	}
	if (nt_rank == 0 && !broken && proven < 1)
		nt_fail("the wrong-tag isend never met a receive already visible (%d NULLs, but "
			"isend(tag 1) never went at its first call): the NULL path is unproven",
			nulls);
	nt_finish(&comm, &b, busy, "tags", "buffers");
	nt_notef("%d rounds; isend(tag 2) before tag 1 gave %d NULLs; in %d rounds the tag-1 "
		 "receive was visible already",
		 NT_TAG_ROUNDS, nulls, proven);
}

/* ---- g: oversize ------------------------------------------------------------------------ */

#define NT_OVER_POSTED (4 * NT_KIB)
#define NT_OVER_SENT (64 * NT_KIB)
#define NT_OVER_ROUNDS 3
#define NT_CANARY 0x5c

/*
 * 64 KiB sent into a 4 KiB receive: both complete with size 4096 (NCCL IB clips the send to
 * the posted size), the first 4 KiB match and nothing past them was written. A full-size
 * message afterwards proves the connection is still healthy.
 */
static void nt_scen_oversize(void)
{
	size_t len = 2 * NT_OVER_SENT;
	void *comm = NULL, *req[1];
	int got, *sizep[1] = { &got };
	struct nt_buf b = { 0 };
	bool busy = false;
	char what[48];

	if (nt_pair(0, &comm, "pair") || nt_buf_reg(&b, comm, len, "buffer"))
		goto out;
	for (int round = 0; round <= NT_OVER_ROUNDS; round++) {
		bool last = round == NT_OVER_ROUNDS; /* the full-size one */
		size_t posted = last ? NT_OVER_SENT : NT_OVER_POSTED;
		size_t want = last ? NT_OVER_SENT : NT_OVER_POSTED;

		if (last)
			snprintf(what, sizeof(what), "full-size message");
		else
			snprintf(what, sizeof(what), "round %d", round);
		got = -1;
		if (nt_rank == 0) {
			nt_fill(b.p, NT_OVER_SENT, nt_seed(0, 0, round));
			req[0] = nt_isend(comm, b.p, NT_OVER_SENT, 3, b.mh, what);
		} else {
			void *data = b.p, *mh = b.mh;
			int tag = 3;

			memset(b.p, NT_CANARY, len);
			req[0] = nt_irecv(comm, 1, &data, &posted, &tag, &mh, what);
		}
		if (!req[0])
			goto out;
		busy = true;
		if (nt_wait_all(req, 1, sizep, what))
			goto out;
		busy = false;
		if (got < 0 || (size_t)got != want)
			nt_fail("%s: %s test reports %d bytes; want %zu (%zu sent, %zu posted)",
				what, nt_rank ? "receiver's" : "sender's", got, want, NT_OVER_SENT,
				posted);
		if (nt_rank == 1) {
			nt_verify(what, round, b.p, want, nt_seed(0, 0, round));
			for (size_t o = want; o < len; o++)
				if (b.p[o] != NT_CANARY) {
					nt_fail("%s: byte %zu (%zu posted) written: 0x%02x", what,
						o, posted, b.p[o]);
					break;
				}
		}
	}
out:
	nt_finish(&comm, &b, busy, "oversize", "buffer");
	nt_notef("%d x 64 KiB into 4 KiB receives: 4096 bytes on both sides, nothing past them; "
		 "then a full 64 KiB",
		 NT_OVER_ROUNDS);
}

/* ---- h: close_inflight ------------------------------------------------------------------ */

#define NT_CLOSE_REQS 8
#define NT_CLOSE_SLOT (64 * NT_KIB)

/*
 * Two connections from rank 0 to rank 1. A: rank 1 posts 8 receives that are never sent to.
 * B: rank 1 posts one receive of two buffers (tags 1 and 2) and rank 0 posts 8 sends of tag
 * 1: the first waits for its group's tag-2 partner forever, the others have no receive. Then
 * both close with all of that in flight, registrations still held; deregMr through the closed
 * comms must succeed afterwards.
 */
static void nt_scen_close_inflight(void)
{
	char mine[2][NT_HANDLE], theirs[2][NT_HANDLE];
	void *lc[2] = { NULL, NULL }, *comm[2] = { NULL, NULL };
	void *req[NT_CLOSE_REQS + 1] = { NULL };
	struct nt_buf b[2];
	int pending = 0, nulls = 0;
	ncclResult_t closed[2] = { ncclSuccess, ncclSuccess };
	bool ok;

	memset(b, 0, sizeof(b));
	memset(mine, 0, sizeof(mine));
	for (int c = 0; c < 2 && nt_rank == 1; c++)
		lc[c] = nt_listen(0, mine[c], c ? "listen B" : "listen A");
	nt_exchange(mine, theirs, sizeof(mine));
	ok = true;
	for (int c = 0; c < 2 && ok; c++) {
		const char *what = c ? "connection B" : "connection A";

		if (nt_rank == 0)
			ok = !nt_connect_accept(what, 0, theirs[c], &comm[c], NULL, NULL);
		else
			ok = !nt_connect_accept(what, 0, NULL, NULL, lc[c], &comm[c]);
		ok = ok && !nt_buf_reg(&b[c], comm[c], NT_CLOSE_REQS * NT_CLOSE_SLOT, what);
	}
	if (ok && nt_rank == 1) {
		for (int i = 0; i < NT_CLOSE_REQS && ok; i++) {
			void *data = b[0].p + (size_t)i * NT_CLOSE_SLOT, *mh = b[0].mh;
			size_t cap = NT_CLOSE_SLOT;
			int tag = 1;

			req[i] = nt_irecv(comm[0], 1, &data, &cap, &tag, &mh, "connection A");
			ok = req[i] != NULL;
		}
		if (ok) {
			void *data[2] = { b[1].p, b[1].p + NT_CLOSE_SLOT },
			     *mhs[2] = { b[1].mh, b[1].mh };
			size_t sizes[2] = { NT_CLOSE_SLOT, NT_CLOSE_SLOT };
			int tags[2] = { 1, 2 };

			req[NT_CLOSE_REQS] =
				nt_irecv(comm[1], 2, data, sizes, tags, mhs, "connection B");
			ok = req[NT_CLOSE_REQS] != NULL;
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (ok && nt_rank == 0) {
		/* the first send matches the tag-1 buffer of B's receive once its CTS is here */
		req[0] = nt_isend(comm[1], b[1].p, NT_CLOSE_SLOT, 1, b[1].mh, "connection B");
		ok = req[0] != NULL;
		for (int i = 1; i < NT_CLOSE_REQS && ok; i++) {
			for (int t = 0; t < 3 && !req[i]; t++) {
				ncclResult_t r =
					NT_CALL(isend, comm[1], b[1].p + (size_t)i * NT_CLOSE_SLOT,
						NT_CLOSE_SLOT, 1, b[1].mh, NULL, &req[i]);

				if (r) {
					nt_fail("connection B: isend %d returned %s", i, nt_res(r));
					ok = false;
					break;
				}
			}
			if (req[i])
				nt_fail("connection B: isend %d got request %p, but no receive is "
					"posted for it",
					i, req[i]);
			nulls += !req[i];
		}
	}
	/* nothing in flight may complete: test each once */
	for (int i = 0; i <= NT_CLOSE_REQS && ok; i++) {
		int done = 0;
		ncclResult_t r;

		if (!req[i])
			continue;
		pending++;
		r = NT_CALL(test, req[i], &done, NULL);
		if (r || done)
			nt_fail("request %d: test gave %s, done %d; want ncclSuccess, not done", i,
				nt_res(r), done);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* close with everything in flight and the registrations still held */
	for (int c = 0; c < 2; c++) {
		if (!comm[c])
			continue;
		closed[c] =
			nt_rank == 0 ? NT_CALL(closeSend, comm[c]) : NT_CALL(closeRecv, comm[c]);
		if (closed[c])
			fprintf(stderr,
				"nettest[rank %d] close_inflight: %s of connection %c returned %s "
				"(ncclSuccess expected, any result accepted)\n",
				nt_rank, nt_rank ? "closeRecv" : "closeSend", 'A' + c,
				nt_res(closed[c]));
	}
	/* deregMr through the closed comms: railnet keeps their handles as orphans for this */
	for (int c = 0; c < 2; c++)
		nt_buf_dereg(&b[c], c ? "deregMr after closing connection B"
				      : "deregMr after closing connection A");
	for (int c = 0; c < 2; c++)
		nt_close_listen(&lc[c], "listen");
	MPI_Barrier(MPI_COMM_WORLD);
	nt_notef("closeSend with %d request(s) in flight and %d isends without a receive: %s, %s; "
		 "deregMr afterwards ok",
		 pending, nulls, nt_res(closed[0]), nt_res(closed[1]));
}

/* ---- i: bad ----------------------------------------------------------------------------- */

/*
 * (1) accept on a listen comm after closeListen must fail, not crash. (2) connect with the
 * handle of a listener closed before the connect must fail within the bound, not hang.
 */
static void nt_scen_bad(void)
{
	char mine[NT_HANDLE], theirs[NT_HANDLE];
	ncclNetDeviceHandle_v12_t *dh = NULL;
	void *lc, *rc = NULL, *sc = NULL;
	ncclResult_t r1 = ncclSuccess, r2 = ncclSuccess;
	unsigned int idle = 0;
	double t0;

	lc = nt_listen(0, mine, "listen");
	if (lc) {
		void *dead = lc;

		nt_close_listen(&lc, "listen");
		r1 = NT_CALL(accept, dead, &rc, &dh);
		if (r1 == ncclSuccess)
			nt_fail("accept after closeListen returned ncclSuccess (recvComm %p); want "
				"an error",
				rc);
	}
	/* (2): rank 1 listens, hands over the handle, closes; then rank 0 connects */
	memset(mine, 0, sizeof(mine));
	if (nt_rank == 1)
		lc = nt_listen(0, mine, "listen");
	nt_exchange(mine, theirs, NT_HANDLE);
	nt_close_listen(&lc, "listen");
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = nt_now();
	if (nt_rank == 0) {
		for (;;) {
			r2 = NT_CALL(connect, nt_net.ctx, 0, theirs, &sc, &dh);
			if (r2 != ncclSuccess)
				break;
			if (sc) {
				nt_fail("connect to a closed listener gave send comm %p", sc);
				nt_close_send(&sc, "connect to a closed listener");
				break;
			}
			if (nt_late()) {
				nt_fail("connect to a closed listener: in progress after %d s",
					nt_bound_s);
				break;
			}
			nt_idle(&idle);
		}
	}
	nt_notef("accept after closeListen: %s; connect to a closed listener: %s after %.2f s",
		 nt_res(r1), nt_res(r2), nt_now() - t0);
}

/* ---- j: vnic ---------------------------------------------------------------------------- */

#define NT_VNIC_MSGS 2000

/* Device properties in the fields both versions share, plus v12's rail and plane. */
struct nt_props {
	const char *name;
	int speed, ptr, ndevs, rail, plane;
};

static ncclResult_t nt_props(int dev, struct nt_props *p)
{
	ncclResult_t r;

	memset(p, 0, sizeof(*p));
	p->rail = p->plane = NCCL_NET_ID_UNDEF;
	if (nt_net.api == 12) {
		ncclNetProperties_v12_t v;

		r = nt_net.v12->getProperties(dev, &v);
		if (r)
			return r;
		p->name = v.name;
		p->speed = v.speed;
		p->ptr = v.ptrSupport;
		p->ndevs = v.vProps.ndevs;
		p->rail = v.railId;
		p->plane = v.planeId;
	} else {
		ncclNetProperties_v11_t v;

		r = nt_net.v11->getProperties(dev, &v);
		if (r)
			return r;
		p->name = v.name;
		p->speed = v.speed;
		p->ptr = v.ptrSupport;
		p->ndevs = v.vProps.ndevs;
	}
	if (!p->name)
		p->name = "(null)";
	return ncclSuccess;
}

static void nt_print_props(const char *kind, int dev, const struct nt_props *p)
{
	if (nt_net.api == 12)
		printf("%s %d: name=%s speed=%d railId=%d planeId=%d\n", kind, dev, p->name,
		       p->speed, p->rail, p->plane);
	else
		printf("%s %d: name=%s speed=%d\n", kind, dev, p->name, p->speed);
}

/* makeVDevice over devices 0..N-1 and its properties; the device, or -1 after a FAIL. */
static int nt_make_vnic(int n, struct nt_props *p)
{
	int ndev = 0, d = -1;
	ncclResult_t r;

	r = NT_CALL(devices, &ndev);
	if (r || ndev < n) {
		nt_fail("devices() returned %s and %d device(s); --vnic %d needs %d", nt_res(r),
			ndev, n, n);
		return -1;
	}
	if (nt_net.api == 12) {
		ncclNetVDeviceProps_v12_t vp = { .ndevs = n };

		for (int i = 0; i < n; i++)
			vp.devs[i] = i;
		r = nt_net.v12->makeVDevice(&d, &vp);
	} else {
		ncclNetVDeviceProps_v11_t vp = { .ndevs = n };

		for (int i = 0; i < n; i++)
			vp.devs[i] = i;
		r = nt_net.v11->makeVDevice(&d, &vp);
	}
	if (r || d < 0) {
		nt_fail("makeVDevice(devices 0..%d) returned %s, device %d", n - 1, nt_res(r), d);
		return -1;
	}
	r = nt_props(d, p);
	if (r) {
		nt_fail("getProperties(virtual device %d) returned %s", d, nt_res(r));
		return -1;
	}
	if (nt_rank == 0) {
		nt_print_props("vdev", d, p);
		fflush(stdout);
	}
	if (p->ndevs != n)
		nt_fail("virtual device %d (%s) reports vProps.ndevs %d; %d were merged", d,
			p->name, p->ndevs, n);
	return d;
}

/* 2000 messages of 1 MiB from rank 0 to rank 1 over a virtual device of devices 0..N-1. */
static void nt_scen_vnic(void)
{
	struct nt_stream s, *v = &s;
	struct nt_props p = { .name = "?" };
	void *comm = NULL;
	bool opened = false;
	int d;

	d = nt_make_vnic(nt_args.vnic, &p);
	if (!nt_pair(d, &comm, "virtual device pair"))
		opened = !nt_stream_open(&s, nt_rank ? "receive stream" : "send stream", comm,
					 nt_rank == 0, 0, 0, NT_VNIC_MSGS, 8, NT_MIB, nt_mib_size);
	if (opened)
		nt_streams_run(&v, 1);
	nt_sync_before_close();
	if (opened)
		nt_stream_end(&s, &comm);
	nt_unpair(&comm, "vnic");
	nt_notef("%d devices merged into device %d (%s), %d x 1 MiB from rank 0 to rank 1",
		 nt_args.vnic, d, p.name, NT_VNIC_MSGS);
}

/* ---- scenarios, setup, main ------------------------------------------------------------- */

struct nt_scenario {
	const char *name;
	void (*run)(void);
	bool in_all;
	int bound_s;
};

static const struct nt_scenario nt_scenarios[] = {
	{ "threads", nt_scen_threads, true, NT_BOUND_S },
	{ "ring", nt_scen_ring, true, NT_BOUND_S },
	{ "accept10", nt_scen_accept10, true, NT_BOUND_S },
	{ "inflight", nt_scen_inflight, true, NT_BOUND_S },
	{ "multi", nt_scen_multi, true, NT_BOUND_S },
	{ "tags", nt_scen_tags, true, NT_BOUND_S },
	{ "oversize", nt_scen_oversize, true, NT_BOUND_S },
	{ "close_inflight", nt_scen_close_inflight, true, NT_BOUND_S },
	{ "bad", nt_scen_bad, true, NT_BOUND_S },
	{ "vnic", nt_scen_vnic, false, NT_VNIC_BOUND_S },
};

static void nt_usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np 2 railnet-nettest [options]\n"
		"  --plugin PATH     the net plugin (default %s, found by dlopen)\n"
		"  --api 11|12       which table: ncclNetPlugin_v11 or ncclNetPlugin_v12 (default "
		"12)\n"
		"  --netns NAME|PATH join this network namespace after MPI_Init (a name is under "
		"/run/netns)\n"
		"  --scenario NAME   all (default) or one of:",
		NT_DEFAULT_PLUGIN);
	for (size_t i = 0; i < NT_ARRAY_SIZE(nt_scenarios); i++)
		fprintf(f, " %s", nt_scenarios[i].name);
	fprintf(f, "\n"
		   "                    (all runs every one but vnic)\n"
		   "  --vnic N          devices 0..N-1 merged for scenario vnic (2..8 at v12, 2..4 "
		   "at v11; default 2)\n"
		   "  --close-early     each rank closes its comms as soon as its own requests are "
		   "done,\n"
		   "                    not after an MPI barrier (a receiver may then close "
		   "before the\n"
		   "                    sender's last send completed)\n");
}

static int nt_parse_int(const char *flag, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x;

	x = strtol(v, &end, 10);
	if (!*v || *end || x < lo || x > hi) {
		fprintf(stderr, "railnet-nettest: %s '%s': want an integer in %d..%d\n", flag, v,
			lo, hi);
		return -1;
	}
	*out = (int)x;
	return 0;
}

/* 0, or -1 after a message on stderr (exit 2). */
static int nt_parse(int argc, char **argv, struct nt_args *a)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "api", required_argument, NULL, 'a' },
		{ "netns", required_argument, NULL, 'n' },
		{ "scenario", required_argument, NULL, 's' },
		{ "vnic", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "close-early", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	bool known = false;
	int opt;

	memset(a, 0, sizeof(*a));
	a->plugin = NT_DEFAULT_PLUGIN;
	a->scenario = "all";
	a->api = 12;
	a->vnic = 2;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (!*optarg) {
				fprintf(stderr, "railnet-nettest: --plugin: empty path\n");
				return -1;
			}
			a->plugin = optarg;
			break;
		case 'a':
			if (strcmp(optarg, "11") && strcmp(optarg, "12")) {
				fprintf(stderr,
					"railnet-nettest: --api '%s': 11 (ncclNetPlugin_v11) or 12 "
					"(ncclNetPlugin_v12)\n",
					optarg);
				return -1;
			}
			a->api = atoi(optarg);
			break;
		case 'n':
			if (!*optarg) {
				fprintf(stderr, "railnet-nettest: --netns: empty name\n");
				return -1;
			}
			a->netns = optarg;
			break;
		case 's':
			a->scenario = optarg;
			break;
		case 'v':
			if (nt_parse_int("--vnic", optarg, 2, NCCL_NET_MAX_DEVS_PER_NIC_V12,
					 &a->vnic))
				return -1;
			break;
		case 'c':
			a->close_early = true;
			break;
		case 'h':
			nt_usage(stdout);
			exit(0);
		case ':':
			fprintf(stderr, "railnet-nettest: %s needs a value\n", argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "railnet-nettest: unknown option '%s'; see --help\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "railnet-nettest: unexpected argument '%s'; see --help\n",
			argv[optind]);
		return -1;
	}
	known = !strcmp(a->scenario, "all");
	for (size_t i = 0; i < NT_ARRAY_SIZE(nt_scenarios); i++)
		known |= !strcmp(a->scenario, nt_scenarios[i].name);
	if (!known) {
		fprintf(stderr, "railnet-nettest: --scenario '%s' is not a scenario; see --help\n",
			a->scenario);
		return -1;
	}
	if (a->api == 11 && a->vnic > NCCL_NET_MAX_DEVS_PER_NIC_V11) {
		fprintf(stderr,
			"railnet-nettest: --vnic %d: ncclNetVDeviceProps_v11_t holds %d devices\n",
			a->vnic, NCCL_NET_MAX_DEVS_PER_NIC_V11);
		return -1;
	}
	return 0;
}

/*
 * --netns: MPI (PMIx's TCP on loopback, the shared-memory transport) was set up in the
 * launcher's namespace; the plugin opens its sockets and reads getifaddrs in the pod's. The
 * threads made later inherit it from this one.
 */
static int nt_join_netns(const char *ns)
{
	char err[768];

	if (!rb_net_join_netns(ns, err, sizeof(err)))
		return 0;
	printf("FAIL: setup: rank %d: %s\n", nt_rank, err);
	return -1;
}

/* Loads the table, calls init once, lists the devices (printed by rank 0). 0 or -1. */
static int nt_setup(void)
{
	char sym[32];
	ncclResult_t r;
	int ndev = 0;

	if (nt_args.netns && nt_join_netns(nt_args.netns))
		return -1;
	nt_net.lib = dlopen(nt_args.plugin, RTLD_NOW | RTLD_LOCAL);
	if (!nt_net.lib) {
		printf("FAIL: setup: rank %d: dlopen(%s): %s\n", nt_rank, nt_args.plugin,
		       dlerror());
		return -1;
	}
	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", nt_args.api);
	nt_net.api = nt_args.api;
	if (nt_net.api == 12)
		nt_net.v12 = dlsym(nt_net.lib, sym);
	else
		nt_net.v11 = dlsym(nt_net.lib, sym);
	if (!nt_net.v12 && !nt_net.v11) {
		printf("FAIL: setup: rank %d: %s has no %s\n", nt_rank, nt_args.plugin, sym);
		return -1;
	}
	if (nt_net.api == 12) {
		ncclNetCommConfig_v12_t config = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };

		r = nt_net.v12->init(&nt_net.ctx, 0x6e657474657374ULL, &config, nt_logger, NULL);
	} else {
		ncclNetCommConfig_v11_t config = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };

		r = nt_net.v11->init(&nt_net.ctx, 0x6e657474657374ULL, &config, nt_logger, NULL);
	}
	if (r) {
		printf("FAIL: setup: rank %d: %s init returned %s (its WARN above says why)\n",
		       nt_rank, sym, nt_res(r));
		return -1;
	}
	r = NT_CALL(devices, &ndev);
	if (r || ndev < 1) {
		printf("FAIL: setup: rank %d: devices() returned %s, %d device(s)\n", nt_rank,
		       nt_res(r), ndev);
		return -1;
	}
	for (int i = 0; i < ndev; i++) {
		struct nt_props p;

		r = nt_props(i, &p);
		if (r) {
			printf("FAIL: setup: rank %d: getProperties(%d) returned %s\n", nt_rank, i,
			       nt_res(r));
			return -1;
		}
		if (!(p.ptr & NCCL_PTR_HOST)) {
			printf("FAIL: setup: rank %d: device %d (%s) takes no host memory "
			       "(ptrSupport %#x)\n",
			       nt_rank, i, p.name, (unsigned int)p.ptr);
			return -1;
		}
		if (nt_rank == 0)
			nt_print_props("dev", i, &p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int size, provided, ok, all_ok, passed = 0, failed = 0;
	const char *dbg = getenv("NCCL_DEBUG");

	if (nt_parse(argc, argv, &nt_args))
		return 2;
	nt_log_info = dbg && (!strcasecmp(dbg, "INFO") || !strcasecmp(dbg, "TRACE"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &nt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (nt_rank == 0)
			fprintf(stderr, "railnet-nettest: runs with exactly 2 MPI ranks, not %d\n",
				size);
		MPI_Finalize();
		return 2;
	}
	nt_peer = 1 - nt_rank;
	ok = !nt_setup();
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		if (nt_rank == 0)
			printf("0 passed, 1 failed\n");
		MPI_Finalize();
		return 1;
	}
	if (nt_args.close_early && nt_rank == 0)
		printf("--close-early: no MPI barrier between the last transfer and the closes\n");
	for (size_t i = 0; i < NT_ARRAY_SIZE(nt_scenarios); i++) {
		const struct nt_scenario *s = &nt_scenarios[i];
		int fails, total;
		double t0;

		if (strcmp(nt_args.scenario, s->name) &&
		    (strcmp(nt_args.scenario, "all") || !s->in_all))
			continue;
		nt_scen_name = s->name;
		nt_scen_idx = (int)i + 1;
		nt_bound_s = s->bound_s;
		nt_note[0] = 0;
		__atomic_store_n(&nt_scen_fails, 0, __ATOMIC_RELAXED);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = nt_now();
		nt_deadline = t0 + s->bound_s;
		s->run();
		fails = __atomic_load_n(&nt_scen_fails, __ATOMIC_RELAXED);
		MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if (total) {
			failed++;
			if (nt_rank == 0)
				printf("FAIL: %s: %d failed check(s) on the two ranks (%.1f s)\n",
				       s->name, total, nt_now() - t0);
		} else {
			passed++;
			if (nt_rank == 0)
				printf("ok: %s %s (%.1f s)\n", s->name, nt_note, nt_now() - t0);
		}
	}
	nt_scen_name = "finalize";
	nt_scen_fails = 0;
	if (NT_CALL(finalize, nt_net.ctx) != ncclSuccess)
		nt_fail("finalize did not return ncclSuccess");
	ok = nt_scen_fails == 0;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok)
		failed++;
	if (nt_rank == 0)
		printf("%d passed, %d failed\n", passed, failed);
	dlclose(nt_net.lib);
	MPI_Finalize();
	return failed ? 1 : 0;
}
