// SPDX-License-Identifier: Apache-2.0
/*
 * The NIC: one progress thread per device context. It accepts peers' connections, transmits
 * posted send WRs (rate model, RNR and transport retries, Go-Back-N from a NAKed message),
 * executes incoming requests against registered memory with hardware's checks, and generates
 * completions in order (latency model, error completions even when unsignaled). Payload moves
 * in one copy with process_vm_readv/writev when the peer allows it, else inside the stream.
 * It owns every sv_conn; it never calls back into the application.
 */
#include "nic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SV_OUT_HIGH (1u << 20) /* stream path: stop generating chunks above this */
/*
 * A connection's input buffer starts at SV_IN_MIN (one-copy messages carry no payload) and
 * grows to SV_IN_CAP, room for the largest message, when a message needs it; its output buffer
 * starts at SV_OUT_MIN and doubles. Idle connections cost a few KiB, not the 384 KiB they
 * would at full size (docs/softverbs.md, "Scale").
 */
#define SV_IN_MIN (16u * 1024)
#define SV_IN_CAP (SV_CHUNK + 64 * 1024)
#define SV_OUT_MIN (4u * 1024)
#define SV_FLUSH_COPIED (512u * 1024) /* one-copy: flush ACKs after this many bytes moved */

struct sv_tick {
	uint64_t now;
	uint64_t next; /* earliest timer */
	bool busy;     /* more work right away */
};

static void sv_timer(struct sv_tick *t, uint64_t when)
{
	if (when < t->next)
		t->next = when;
}

/* ---- connections ------------------------------------------------------------------------ */

struct sv_conn *sv_conn_new(struct sv_ctx *ctx, int fd, bool requester, bool vm, pid_t pid)
{
	struct sv_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->in = malloc(SV_IN_MIN);
	if (!c->in) {
		free(c);
		return NULL;
	}
	c->ctx = ctx;
	c->fd = fd;
	c->requester = requester;
	c->vm = vm;
	c->peer_pid = pid;
	c->in_cap = SV_IN_MIN;
	c->readable = c->writable = 1;
	return c;
}

/* ctx->lock held: c has something for the next NIC round to look at. */
static void sv_conn_ready(struct sv_conn *c)
{
	struct sv_ctx *ctx = c->ctx;

	if (c->queued)
		return;
	c->queued = true;
	ctx->rdy[ctx->nrdy++] = c; /* room reserved by sv_nic_conn_add */
}

/* ctx->lock held, the QP's lock not held. */
void sv_conn_mark_dead(struct sv_conn *c)
{
	struct sv_qp *qp = c->qp;

	if (c->dead)
		return;
	c->dead = true;
	sv_conn_ready(c); /* to be reaped */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	if (c->loop) { /* the other end reads EOF once it has consumed what it holds */
		c->loop->loop = NULL;
		__atomic_store_n(&c->loop->readable, 1, __ATOMIC_RELEASE);
		sv_conn_ready(c->loop);
		c->loop = NULL;
	}
	if (qp) {
		pthread_mutex_lock(&qp->lock);
		if (qp->out == c) {
			qp->out = NULL;
			if (!qp->link_dead_ns)
				qp->link_dead_ns = sv_now_ns();
		}
		if (qp->in == c)
			qp->in = NULL;
		pthread_mutex_unlock(&qp->lock);
		c->qp = NULL;
	}
}

/* ctx->lock held; the caller takes c out of ctx->rdy (sv_nic_settle, context close). */
void sv_conn_close(struct sv_conn *c)
{
	struct sv_ctx *ctx = c->ctx;

	sv_conn_mark_dead(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		ctx->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctx->nconns--;
	if (c->fd >= 0) {
		/*
		 * Out of the epoll set by name before the close: a close() takes it out only with
		 * the last reference to the socket, and a fork of this process (system(), a data
		 * loader's workers) holds one until its child execs or exits; meanwhile epoll would
		 * report the socket's hang-up with c, freed below, as its data.
		 */
		(void)epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	free(c->in);
	free(c->out);
	free(c);
}

/* ctx->lock held, qp->lock not held: the QP's links go away (the peer sees EOF). */
void sv_qp_detach_conns(struct sv_qp *qp)
{
	if (qp->out)
		sv_conn_mark_dead(qp->out);
	if (qp->in)
		sv_conn_mark_dead(qp->in);
}

static int sv_out_reserve(struct sv_conn *c, size_t len)
{
	if (c->out_head && c->out_head == c->out_len)
		c->out_head = c->out_len = 0;
	if (c->out_len + len > c->out_cap) {
		size_t live = c->out_len - c->out_head;

		if (c->out_head && live + len <= c->out_cap) {
			memmove(c->out, c->out + c->out_head, live);
		} else {
			size_t cap = c->out_cap ? c->out_cap : SV_OUT_MIN;
			char *n;

			while (cap < live + len)
				cap *= 2;
			n = malloc(cap);
			if (!n)
				return -ENOMEM;
			if (live)
				memcpy(n, c->out + c->out_head, live);
			free(c->out);
			c->out = n;
			c->out_cap = cap;
		}
		c->out_head = 0;
		c->out_len = live;
	}
	return 0;
}

static void sv_conn_put_ack(struct sv_conn *c)
{
	struct sv_hdr h = { .type = SV_MSG_ACK };

	if (!c->ack_pending)
		return;
	c->ack_pending = false;
	h.msn = c->ack_msn;
	if (sv_out_reserve(c, sizeof(h)) == 0) {
		memcpy(c->out + c->out_len, &h, sizeof(h));
		c->out_len += sizeof(h);
	}
}

int sv_conn_queue(struct sv_conn *c, const struct sv_hdr *h, const void *body, size_t len)
{
	sv_conn_ready(c);
	if (h->type != SV_MSG_ACK)
		sv_conn_put_ack(c);
	if (sv_out_reserve(c, sizeof(*h) + len)) {
		c->failed = true; /* the NIC closes it; callers may hold the QP lock */
		return -ENOMEM;
	}
	memcpy(c->out + c->out_len, h, sizeof(*h));
	if (len)
		memcpy(c->out + c->out_len + sizeof(*h), body, len);
	c->out_len += sizeof(*h) + len;
	return 0;
}

/* Reserves room for a message whose body the caller fills; returns the body pointer. */
static char *sv_conn_begin(struct sv_conn *c, const struct sv_hdr *h)
{
	sv_conn_ready(c);
	sv_conn_put_ack(c);
	if (sv_out_reserve(c, sizeof(*h) + h->len)) {
		c->failed = true;
		return NULL;
	}
	memcpy(c->out + c->out_len, h, sizeof(*h));
	return c->out + c->out_len + sizeof(*h);
}

static void sv_conn_commit(struct sv_conn *c, const struct sv_hdr *h)
{
	c->out_len += sizeof(*h) + h->len;
}

static size_t sv_conn_backlog(struct sv_conn *c)
{
	return c->out_len - c->out_head;
}

/*
 * A loop link's send: output bytes go straight into the other end's input buffer (grown once
 * to SV_IN_CAP, as a reader's would be); a full buffer makes this end unwritable until the
 * other end consumes (sv_conn_process), as a socket's EAGAIN would.
 */
static void sv_conn_loop_send(struct sv_conn *c)
{
	struct sv_conn *p = c->loop;

	while (p && !p->dead && c->out_head < c->out_len) {
		size_t room, n;

		if (p->in_head && p->in_head == p->in_len)
			p->in_head = p->in_len = 0;
		if (p->in_len == p->in_cap && p->in_head) {
			memmove(p->in, p->in + p->in_head, p->in_len - p->in_head);
			p->in_len -= p->in_head;
			p->in_head = 0;
		}
		if (p->in_len == p->in_cap && p->in_cap < SV_IN_CAP) {
			char *m = realloc(p->in, SV_IN_CAP);

			if (!m) {
				c->failed = true;
				return;
			}
			p->in = m;
			p->in_cap = SV_IN_CAP;
		}
		room = p->in_cap - p->in_len;
		if (!room) {
			__atomic_store_n(&c->writable, 0, __ATOMIC_RELEASE);
			break;
		}
		n = c->out_len - c->out_head < room ? c->out_len - c->out_head : room;
		memcpy(p->in + p->in_len, c->out + c->out_head, n);
		p->in_len += n;
		c->out_head += n;
		__atomic_store_n(&p->readable, 1, __ATOMIC_RELEASE);
		sv_conn_ready(p);
	}
	if (!p) /* the other end is gone: what is left is lost, as on a reset socket */
		c->out_head = c->out_len;
}

static void sv_conn_flush(struct sv_conn *c)
{
	sv_conn_put_ack(c);
	if (c->fd < 0 && !c->dead)
		sv_conn_loop_send(c);
	while (c->fd >= 0 && !c->dead && c->out_head < c->out_len &&
	       __atomic_exchange_n(&c->writable, 0, __ATOMIC_ACQ_REL)) {
		while (c->out_head < c->out_len) {
			ssize_t n = send(c->fd, c->out + c->out_head, c->out_len - c->out_head,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					sv_conn_mark_dead(c);
				break; /* EAGAIN: an EPOLLOUT edge will set writable */
			}
			c->out_head += (size_t)n;
		}
		if (c->out_head == c->out_len)
			__atomic_store_n(&c->writable, 1, __ATOMIC_RELEASE);
	}
	if (c->out_head == c->out_len) {
		c->out_head = c->out_len = 0;
		if (c->close_after_flush)
			sv_conn_mark_dead(c);
	}
	c->copied = 0;
}

/* ---- local memory: SGE lists against the MR table (mr_lock held) ------------------------ */

/*
 * Turns SGEs into iovecs after the lkey/PD/bounds/access checks; IBV_WC_* status. devs[k] is
 * the CUDA device of iovec k's memory (GDR mode), -1 for host memory.
 */
static int sv_sge_iov(struct sv_ctx *ctx, struct sv_pd *pd, const struct ibv_sge *sge, uint32_t n,
		      bool local_write, struct iovec *iov, int *devs, uint32_t *niov)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++) {
		struct sv_mr *mr;

		if (!sge[i].length)
			continue;
		mr = sv_mr_lookup(ctx, sge[i].lkey);
		if (!mr || mr->pd != pd || !sv_mr_covers(mr, sge[i].addr, sge[i].length) ||
		    (local_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return IBV_WC_LOC_PROT_ERR;
		iov[k].iov_base = sv_mr_va(mr, sge[i].addr);
		iov[k].iov_len = sge[i].length;
		devs[k] = mr->gpu;
		k++;
	}
	*niov = k;
	return IBV_WC_SUCCESS;
}

/* Marks device dev's memory written since the last sv_gpu_settle. */
static void sv_gpu_dirty(uint64_t *dirty, int dev)
{
	if (dev >= 0)
		*dirty |= 1ull << (dev & 63);
}

/*
 * Before a completion or acknowledgement that says data has landed: in strict GDR order,
 * waits for the writes into GPU memory marked in *dirty (they are visible when the CQE is).
 * Relaxed order leaves them to a later read of the GPU memory (NCCL's flush). 0 or -EIO.
 */
static int sv_gpu_settle(uint64_t *dirty)
{
	int rc = 0;

	for (int d = 0; *dirty && d < 64; d++)
		if ((*dirty >> d) & 1) {
			*dirty &= ~(1ull << d);
			if (!sv_gdr_relaxed && sv_gpu_fence(d))
				rc = -EIO;
		}
	return rc;
}

/* One copy between host memory and memory of device dev (-1: host). 0 or -EIO. */
static int sv_copy(int dev, void *dst, const void *src, uint64_t len, bool into_dev,
		   uint64_t *dirty)
{
	if (dev < 0) {
		sv_dma_begin();
		memcpy(dst, src, len);
		sv_dma_end();
		return 0;
	}
	if (!into_dev)
		return sv_gpu_read(dev, dst, src, len);
	sv_gpu_dirty(dirty, dev);
	return sv_gpu_write(dev, dst, src, len);
}

/* Copies between a flat buffer and an iovec list starting at byte offset off. 0 or -EIO. */
static int sv_iov_copy(const struct iovec *iov, const int *devs, uint32_t n, uint64_t off,
		       char *buf, uint64_t len, bool to_iov, uint64_t *dirty)
{
	uint32_t i;

	for (i = 0; i < n && len; i++) {
		uint64_t l = iov[i].iov_len, take;
		char *seg = (char *)iov[i].iov_base;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < len ? l - off : len;
		if (to_iov ? sv_copy(devs[i], seg + off, buf, take, true, dirty)
			   : sv_copy(devs[i], buf, seg + off, take, false, dirty))
			return -EIO;
		buf += take;
		len -= take;
		off = 0;
	}
	return 0;
}

/* Moves len bytes between our iovecs and the peer's; loops over partial transfers. */
static int sv_vm_copy(pid_t pid, struct iovec *liov, uint32_t nl, struct iovec *riov, uint32_t nr,
		      uint64_t len, bool write)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n;

		sv_dma_begin();
		n = write ? process_vm_writev(pid, liov, nl, riov, nr, 0)
			  : process_vm_readv(pid, liov, nl, riov, nr, 0);
		sv_dma_end();
		if (n <= 0)
			return n < 0 ? -errno : -EFAULT;
		done += (uint64_t)n;
		if (done >= len)
			break;
		/* advance both lists by n */
		for (uint64_t left = (uint64_t)n; left;) {
			uint64_t t = liov->iov_len < left ? liov->iov_len : left;

			liov->iov_base = (char *)liov->iov_base + t;
			liov->iov_len -= t;
			left -= t;
			if (!liov->iov_len) {
				liov++;
				nl--;
			}
		}
		for (uint64_t left = (uint64_t)n; left;) {
			uint64_t t = riov->iov_len < left ? riov->iov_len : left;

			riov->iov_base = (char *)riov->iov_base + t;
			riov->iov_len -= t;
			left -= t;
			if (!riov->iov_len) {
				riov++;
				nr--;
			}
		}
	}
	return 0;
}

/* The iovecs of bytes [off, off + len) of the list iov[0..n); their count. */
static uint32_t sv_iov_slice(const struct iovec *iov, uint32_t n, uint64_t off, uint64_t len,
			     struct iovec *out, uint32_t max)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n && len && k < max; i++) {
		uint64_t l = iov[i].iov_len, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < len ? l - off : len;
		out[k].iov_base = (char *)iov[i].iov_base + off;
		out[k].iov_len = take;
		k++;
		len -= take;
		off = 0;
	}
	return k;
}

#define SV_BOUNCE (1u << 20)

/*
 * The context's bounce buffer, made on first use: pinned host memory from the CUDA driver
 * where it gives it (a copy into or out of the GPU is then one DMA, as a NIC's is, instead of
 * the driver staging pageable memory through its own pinned buffer), else malloc'd memory.
 */
static char *sv_bounce_get(struct sv_ctx *ctx, int dev)
{
	if (ctx->bounce)
		return ctx->bounce;
	ctx->bounce = sv_gpu_host_alloc(dev, SV_BOUNCE);
	ctx->bounce_pinned = ctx->bounce != NULL;
	if (!ctx->bounce)
		ctx->bounce = malloc(SV_BOUNCE);
	return ctx->bounce;
}

/*
 * Before the bounce buffer is filled again: a copy from pinned memory into the GPU reads it
 * after sv_gpu_write returned, so wait for the streams that may still be reading it, except
 * those in keep (a copy out of that device's GPU is ordered after them on its stream).
 */
static int sv_bounce_reuse(struct sv_ctx *ctx, uint64_t keep)
{
	int rc = 0;

	for (int d = 0; (ctx->bounce_busy & ~keep) && d < 64; d++)
		if ((ctx->bounce_busy & ~keep) >> d & 1) {
			ctx->bounce_busy &= ~(1ull << d);
			if (sv_gpu_fence(d))
				rc = -EIO;
		}
	return rc;
}

/*
 * sv_vm_copy where some local iovecs are GPU memory (devs[i] >= 0), which the kernel cannot
 * reach: through a bounce buffer, SV_BOUNCE bytes at a time.
 */
static int sv_vm_copy_dev(struct sv_ctx *ctx, pid_t pid, struct iovec *liov, const int *devs,
			  uint32_t nl, struct iovec *riov, uint32_t nr, uint64_t len, bool write,
			  uint64_t *dirty)
{
	uint64_t done = 0;
	bool gpu = false;
	char *bounce;

	for (uint32_t i = 0; i < nl; i++)
		gpu |= devs[i] >= 0;
	if (!gpu)
		return sv_vm_copy(pid, liov, nl, riov, nr, len, write);
	/* the context's: its NIC work runs one round at a time; freed with the context */
	for (uint32_t i = 0; i < nl && !ctx->bounce; i++)
		if (devs[i] >= 0 && !sv_bounce_get(ctx, devs[i]))
			return -ENOMEM;
	bounce = ctx->bounce;
	for (uint32_t i = 0; i < nl && done < len; i++) {
		for (uint64_t o = 0; o < liov[i].iov_len && done < len;) {
			uint64_t l = liov[i].iov_len - o;
			struct iovec b = { .iov_base = bounce }, r[SV_MAX_IOV];
			char *seg = (char *)liov[i].iov_base + o;
			/* a copy out of a GPU is ordered after earlier ones on its own stream; the
			 * CPU's fill (process_vm_readv, memcpy) and other streams are not */
			uint64_t keep = write && devs[i] >= 0 ? 1ull << (devs[i] & 63) : 0;
			uint32_t k;
			int rc;

			l = l < SV_BOUNCE ? l : SV_BOUNCE;
			l = l < len - done ? l : len - done;
			b.iov_len = l;
			k = sv_iov_slice(riov, nr, done, l, r, SV_MAX_IOV);
			rc = sv_bounce_reuse(ctx, keep);
			if (!rc && write) {
				rc = sv_copy(devs[i], bounce, seg, l, false, dirty)
					     ?: sv_vm_copy(pid, &b, 1, r, k, l, true);
			} else if (!rc) {
				rc = sv_vm_copy(pid, &b, 1, r, k, l, false)
					     ?: sv_copy(devs[i], seg, bounce, l, true, dirty);
				if (!rc && devs[i] >= 0 && ctx->bounce_pinned)
					ctx->bounce_busy |= 1ull << (devs[i] & 63);
			}
			if (rc)
				return rc;
			o += l;
			done += l;
		}
	}
	return 0;
}

/* ---- responder ---------------------------------------------------------------------------- */

static void sv_resp_nak(struct sv_conn *c, struct sv_qp *qp, uint32_t msn, enum sv_nak code)
{
	struct sv_hdr h = { .type = SV_MSG_NAK, .msn = msn, .aux = code };

	if (code == SV_NAK_RNR)
		h.aux2 = qp->attr.min_rnr_timer;
	sv_conn_queue(c, &h, NULL, 0);
}

/* SOFTVERBS_DROP_ACK (fault.c): this request's ACK, and every later one of the QP, is lost. */
static bool sv_ack_suppressed(struct sv_qp *qp, bool imm)
{
	if (__builtin_expect(!sv_fault_drop_ack, 1))
		return false;
	return qp->ack_drop || (imm && sv_fault_ack_dropped(qp));
}

static void sv_resp_ack(struct sv_conn *c, uint32_t msn)
{
	sv_conn_ready(c);
	c->ack_pending = true;
	c->ack_msn = msn;
}

/* A class C error at the responder: NAK, QP to ERR, async QP_ACCESS_ERR (qp->lock held). */
static void sv_resp_fatal(struct sv_conn *c, struct sv_qp *qp, uint32_t msn, enum sv_nak code)
{
	sv_resp_nak(c, qp, msn, code);
	sv_qp_to_err(qp, IBV_WC_SUCCESS);
	sv_async_post_qp(qp, code == SV_NAK_REM_ACCESS ? IBV_EVENT_QP_ACCESS_ERR
						       : IBV_EVENT_QP_REQ_ERR);
}

static void sv_recv_cqe(struct sv_qp *qp, uint64_t wr_id, int status, bool write_imm, bool has_imm,
			uint32_t imm, uint32_t byte_len)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = status,
		.opcode = write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.byte_len = byte_len,
		.qp_num = qp->qpn,
		.src_qp = qp->attr.dest_qp_num,
		.wc_flags = has_imm ? IBV_WC_WITH_IMM : 0,
	};

	wc.imm_data = imm;
	sv_cq_push(qp->rcq, &wc);
}

/* Remote access check: IBV_WC_SUCCESS or the NAK to send. */
static int sv_check_remote(struct sv_qp *qp, uint32_t rkey, uint64_t raddr, uint64_t len, int need,
			   struct sv_mr **out)
{
	struct sv_mr *mr;

	*out = NULL;
	if (!len)
		return 0; /* zero-length RDMA does not check the R_Key */
	if (!(qp->attr.qp_access_flags & need))
		return SV_NAK_REM_ACCESS;
	mr = sv_mr_lookup(qp->ctx, rkey);
	if (!mr || mr->pd != qp->pd || !(mr->access & need) || !sv_mr_covers(mr, raddr, len))
		return SV_NAK_REM_ACCESS;
	*out = mr;
	return 0;
}

enum { SV_CONSUMED, SV_STALL };

/*
 * One REQ message at the responder. Returns SV_STALL to leave it in the buffer (QP not yet
 * in RTR, or a READ response still streaming).
 */
static int sv_resp_req(struct sv_conn *c, const struct sv_hdr *h, const char *body)
{
	struct sv_qp *qp = c->qp;
	struct sv_ctx *ctx = c->ctx;
	bool vm = h->flags & SV_F_VM;
	bool first = vm || (h->flags & SV_F_FIRST);
	bool last = vm || (h->flags & SV_F_LAST);
	uint64_t len = vm ? h->total : h->len;
	struct iovec liov[SV_MAX_SGE + 1], riov[SV_MAX_IOV];
	int ldevs[SV_MAX_SGE + 1];
	uint32_t nl = 0, nr = 0, i;
	struct sv_mr *mr;
	int nak, st;

	if (!qp)
		return SV_CONSUMED;
	if (c->rd_active)
		return SV_STALL;
	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT) {
		pthread_mutex_unlock(&qp->lock);
		return SV_STALL;
	}
	if (qp->state == IBV_QPS_ERR || h->msn != qp->expect_msn)
		goto drop;
	if (qp->nak_drop) {
		if (!first)
			goto drop;
		qp->nak_drop = false;
	}
	if (!first && !qp->cur_active)
		goto drop;
	/* SOFTVERBS_LINK_MTU on this port: the request's packets (or a READ's responses) are
	 * too large for its link and never arrive; the requester's transport timer runs out */
	if (__builtin_expect(sv_fault_nmtus, 0) && first &&
	    sv_fault_frame_lost(ctx->dev->dev.name, qp->attr.port_num, h->total, qp->attr.path_mtu))
		goto drop;
	/* a stream chunk must lie inside the message whose bounds were checked */
	if (!vm && (h->off > h->total || h->len > h->total - h->off))
		goto drop;
	if (vm) {
		if (h->niov > SV_MAX_IOV || h->len != h->niov * sizeof(struct sv_iov))
			goto drop;
		for (i = 0; i < h->niov; i++) {
			struct sv_iov v;

			/* messages pack back to back: the body may be unaligned */
			memcpy(&v, body + i * sizeof(v), sizeof(v));
			riov[i].iov_base = (void *)(uintptr_t)v.addr;
			riov[i].iov_len = v.len;
		}
		nr = h->niov;
	}

	switch (h->op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		bool imm = h->op == IBV_WR_RDMA_WRITE_WITH_IMM;

		pthread_mutex_lock(&ctx->mr_lock);
		nak = sv_check_remote(qp, h->aux2, h->raddr, h->total, IBV_ACCESS_REMOTE_WRITE,
				      &mr);
		if (nak) {
			pthread_mutex_unlock(&ctx->mr_lock);
			sv_resp_fatal(c, qp, h->msn, nak);
			goto out;
		}
		if (first && imm) {
			if (qp->rq_head == qp->rq_tail) {
				pthread_mutex_unlock(&ctx->mr_lock);
				sv_resp_nak(c, qp, h->msn, SV_NAK_RNR);
				qp->nak_drop = true;
				goto out;
			}
			qp->cur_rwqe = qp->rq[qp->rq_head % qp->rq_size];
			qp->rq_head++;
			qp->cur_has_rwqe = true;
		}
		qp->cur_active = !last;
		pthread_mutex_unlock(&qp->lock);
		/* copy without qp->lock: post_recv/post_send must not wait for it */
		if (len && mr) {
			char *dst = sv_mr_va(mr, h->raddr + (vm ? 0 : h->off));

			ldevs[0] = mr->gpu;
			if (vm) {
				liov[0].iov_base = dst;
				liov[0].iov_len = len;
				st = sv_vm_copy_dev(ctx, c->peer_pid, liov, ldevs, 1, riov, nr, len,
						    false, &c->gpu_dirty);
			} else {
				st = sv_copy(mr->gpu, dst, body, len, true, &c->gpu_dirty);
			}
		} else {
			st = 0;
		}
		if (!st && last && c->gpu_dirty)
			st = sv_gpu_settle(&c->gpu_dirty);
		pthread_mutex_unlock(&ctx->mr_lock);
		c->copied += len;
		pthread_mutex_lock(&qp->lock);
		if (qp->state == IBV_QPS_ERR)
			goto drop; /* stopped during the copy: not completed, not acknowledged */
		if (st) {
			sv_resp_fatal(c, qp, h->msn, SV_NAK_REM_OP);
			goto out;
		}
		if (last) {
			if (imm && qp->cur_has_rwqe) {
				qp->cur_has_rwqe = false;
				sv_recv_cqe(qp, qp->cur_rwqe.wr_id, IBV_WC_SUCCESS, true, true,
					    h->aux, (uint32_t)h->total);
			}
			if (!sv_ack_suppressed(qp, imm))
				sv_resp_ack(c, h->msn);
			qp->expect_msn++;
		}
		goto out;
	}
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM: {
		bool imm = h->op == IBV_WR_SEND_WITH_IMM;
		uint64_t cap = 0;

		if (first) {
			if (qp->rq_head == qp->rq_tail) {
				sv_resp_nak(c, qp, h->msn, SV_NAK_RNR);
				qp->nak_drop = true;
				goto out;
			}
			qp->cur_rwqe = qp->rq[qp->rq_head % qp->rq_size];
			qp->rq_head++;
			qp->cur_has_rwqe = true;
		}
		if (!qp->cur_has_rwqe)
			goto drop;
		pthread_mutex_lock(&ctx->mr_lock);
		st = sv_sge_iov(ctx, qp->pd, qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, true, liov,
				ldevs, &nl);
		for (i = 0; i < nl; i++)
			cap += liov[i].iov_len;
		if (st != IBV_WC_SUCCESS || h->total > cap) {
			pthread_mutex_unlock(&ctx->mr_lock);
			qp->cur_has_rwqe = false;
			sv_recv_cqe(qp, qp->cur_rwqe.wr_id,
				    st != IBV_WC_SUCCESS ? st : IBV_WC_LOC_LEN_ERR, false, false, 0,
				    0);
			sv_resp_fatal(c, qp, h->msn,
				      st != IBV_WC_SUCCESS ? SV_NAK_REM_OP : SV_NAK_INV_REQ);
			goto out;
		}
		qp->cur_active = !last;
		pthread_mutex_unlock(&qp->lock);
		st = 0;
		if (len) {
			if (vm)
				st = sv_vm_copy_dev(ctx, c->peer_pid, liov, ldevs, nl, riov, nr,
						    len, false, &c->gpu_dirty);
			else
				st = sv_iov_copy(liov, ldevs, nl, h->off, (char *)body, len, true,
						 &c->gpu_dirty);
		}
		if (!st && last && c->gpu_dirty)
			st = sv_gpu_settle(&c->gpu_dirty);
		pthread_mutex_unlock(&ctx->mr_lock);
		c->copied += len;
		pthread_mutex_lock(&qp->lock);
		if (qp->state == IBV_QPS_ERR)
			goto drop; /* stopped during the copy: not completed, not acknowledged */
		if (st) {
			sv_resp_fatal(c, qp, h->msn, SV_NAK_REM_OP);
			goto out;
		}
		if (last && qp->cur_has_rwqe) {
			qp->cur_has_rwqe = false;
			sv_recv_cqe(qp, qp->cur_rwqe.wr_id, IBV_WC_SUCCESS, false, imm, h->aux,
				    (uint32_t)h->total);
			if (!sv_ack_suppressed(qp, imm))
				sv_resp_ack(c, h->msn);
			qp->expect_msn++;
		}
		goto out;
	}
	case IBV_WR_RDMA_READ:
		pthread_mutex_lock(&ctx->mr_lock);
		nak = sv_check_remote(qp, h->aux2, h->raddr, h->total, IBV_ACCESS_REMOTE_READ, &mr);
		if (nak) {
			pthread_mutex_unlock(&ctx->mr_lock);
			sv_resp_fatal(c, qp, h->msn, nak);
			goto out;
		}
		qp->expect_msn++;
		pthread_mutex_unlock(&qp->lock);
		if (vm) {
			st = 0;
			if (h->total) {
				liov[0].iov_base = sv_mr_va(mr, h->raddr);
				liov[0].iov_len = h->total;
				ldevs[0] = mr->gpu;
				st = sv_vm_copy_dev(ctx, c->peer_pid, liov, ldevs, 1, riov, nr,
						    h->total, true, &c->gpu_dirty);
			}
			pthread_mutex_unlock(&ctx->mr_lock);
			c->copied += h->total;
			pthread_mutex_lock(&qp->lock);
			if (st)
				sv_resp_fatal(c, qp, h->msn, SV_NAK_REM_OP);
			else
				sv_resp_ack(c, h->msn);
			goto out;
		}
		pthread_mutex_unlock(&ctx->mr_lock);
		/* stream path: the data follows as READ_RESP chunks, paced by the out buffer */
		c->rd_active = true;
		c->rd_msn = h->msn;
		c->rd_key = h->aux2;
		c->rd_addr = h->raddr;
		c->rd_len = h->total;
		c->rd_off = 0;
		return SV_CONSUMED;
	default:
		sv_resp_fatal(c, qp, h->msn, SV_NAK_INV_REQ);
		goto out;
	}
drop:
out:
	pthread_mutex_unlock(&qp->lock);
	return SV_CONSUMED;
}

/* Stream path: emits READ_RESP chunks of the pending READ while the out buffer has room. */
static void sv_resp_read_pump(struct sv_conn *c)
{
	struct sv_ctx *ctx = c->ctx;

	while (c->rd_active && !c->dead && sv_conn_backlog(c) < SV_OUT_HIGH) {
		uint64_t left = c->rd_len - c->rd_off;
		struct sv_hdr h = { .type = SV_MSG_READ_RESP, .msn = c->rd_msn };
		struct sv_mr *mr;
		char *body;

		h.len = (uint32_t)(left < SV_CHUNK ? left : SV_CHUNK);
		h.off = c->rd_off;
		h.total = c->rd_len;
		if (c->rd_off + h.len == c->rd_len)
			h.flags = SV_F_LAST;
		pthread_mutex_lock(&ctx->mr_lock);
		mr = h.len ? sv_mr_lookup(ctx, c->rd_key) : NULL;
		if (h.len && (!mr || !sv_mr_covers(mr, c->rd_addr, c->rd_len))) {
			/* deregistered under our feet: the requester sees a remote error */
			pthread_mutex_unlock(&ctx->mr_lock);
			h.type = SV_MSG_NAK;
			h.aux = SV_NAK_REM_OP;
			h.len = 0;
			sv_conn_queue(c, &h, NULL, 0);
			c->rd_active = false;
			break;
		}
		body = sv_conn_begin(c, &h);
		if (body && h.len &&
		    sv_copy(mr->gpu, body, sv_mr_va(mr, c->rd_addr + c->rd_off), h.len, false,
			    NULL)) {
			/* the GPU's memory could not be read: a remote error, nothing committed */
			pthread_mutex_unlock(&ctx->mr_lock);
			h.type = SV_MSG_NAK;
			h.aux = SV_NAK_REM_OP;
			h.len = 0;
			h.flags = 0;
			sv_conn_queue(c, &h, NULL, 0);
			c->rd_active = false;
			break;
		}
		pthread_mutex_unlock(&ctx->mr_lock);
		if (!body)
			break;
		sv_conn_commit(c, &h);
		c->rd_off += h.len;
		if (h.flags & SV_F_LAST)
			c->rd_active = false;
	}
}

/* ---- requester ----------------------------------------------------------------------------- */

static uint64_t sv_rnr_ns(uint32_t code)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,	    80,	    120,    160,    240,    320,
		480,	640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
		20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000;
}

/* Transport timeout x (retry_cnt + 1); 0 = wait forever (timeout 0). */
static uint64_t sv_retry_ns(struct sv_qp *qp)
{
	if (!qp->attr.timeout)
		return 0;
	return (4096ull << qp->attr.timeout) * (qp->attr.retry_cnt + 1u);
}

static void sv_req_ack(struct sv_qp *qp, uint32_t msn)
{
	if ((int32_t)(msn - qp->sq_acked) < 0 || (int32_t)(msn - qp->sq_next) >= 0)
		return; /* stale or bogus */
	qp->sq_acked = msn + 1;
	qp->rnr_count = 0;
}

static void sv_req_nak(struct sv_qp *qp, const struct sv_hdr *h, uint64_t now)
{
	if (h->msn != qp->sq_acked || qp->sq_acked == qp->sq_next)
		return;
	if (h->aux == SV_NAK_RNR) {
		qp->rnr_count++;
		if (qp->attr.rnr_retry != 7 && qp->rnr_count > qp->attr.rnr_retry) {
			sv_qp_to_err(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		/* Go-Back-N: retransmit from the NAKed message once the timer expires */
		for (uint32_t m = h->msn;; m++) {
			struct sv_swqe *w = &qp->sq[m % qp->sq_size];

			/* a WR that went out crosses the link again (the rate model queues it
			 * anew); one only queued keeps its place */
			if (w->sent_ns || w->off)
				w->rate_end_ns = 0;
			/* including sq_next itself: it may be half sent (stream path chunks) */
			w->off = 0;
			w->sent_ns = 0;
			if (m == qp->sq_next || m + 1 == qp->sq_tail)
				break;
		}
		qp->sq_next = h->msn;
		qp->rnr_until = now + sv_rnr_ns(h->aux2);
		return;
	}
	sv_qp_to_err(qp, h->aux == SV_NAK_REM_ACCESS ? IBV_WC_REM_ACCESS_ERR
			 : h->aux == SV_NAK_INV_REQ  ? IBV_WC_REM_INV_REQ_ERR
						     : IBV_WC_REM_OP_ERR);
}

static void sv_req_read_resp(struct sv_qp *qp, const struct sv_hdr *h, const char *body)
{
	struct sv_ctx *ctx = qp->ctx;
	struct sv_swqe *w;
	struct iovec iov[SV_MAX_SGE + 1];
	int devs[SV_MAX_SGE + 1];
	uint32_t n;
	int st;

	if (h->msn != qp->sq_acked || qp->sq_acked == qp->sq_next)
		return;
	w = &qp->sq[h->msn % qp->sq_size];
	if (w->opcode != IBV_WR_RDMA_READ || h->off + h->len > w->len)
		return;
	pthread_mutex_lock(&ctx->mr_lock);
	st = sv_sge_iov(ctx, qp->pd, w->sge, w->num_sge, true, iov, devs, &n);
	if (st == IBV_WC_SUCCESS &&
	    (sv_iov_copy(iov, devs, n, h->off, (char *)body, h->len, true, &qp->gpu_dirty) ||
	     ((h->flags & SV_F_LAST) && qp->gpu_dirty && sv_gpu_settle(&qp->gpu_dirty))))
		st = IBV_WC_LOC_PROT_ERR; /* the GPU's memory could not be written */
	pthread_mutex_unlock(&ctx->mr_lock);
	if (st != IBV_WC_SUCCESS) {
		sv_qp_to_err(qp, st);
		return;
	}
	if (h->flags & SV_F_LAST)
		sv_req_ack(qp, h->msn);
}

/* ---- input --------------------------------------------------------------------------------- */

static void sv_conn_read(struct sv_conn *c)
{
	if (c->fd < 0) { /* a loop link: the other end's flush filled the buffer already */
		if (__atomic_exchange_n(&c->readable, 0, __ATOMIC_ACQ_REL) && !c->loop)
			c->failed = true; /* EOF: dead once what it holds is processed */
		return;
	}
	while (!c->dead && __atomic_exchange_n(&c->readable, 0, __ATOMIC_ACQ_REL)) {
		for (;;) {
			ssize_t n;

			if (c->in_head && c->in_len == c->in_head)
				c->in_head = c->in_len = 0;
			if (c->in_len == c->in_cap) {
				if (!c->in_head) {
					/* full of unprocessed messages: come back later */
					__atomic_store_n(&c->readable, 1, __ATOMIC_RELEASE);
					return;
				}
				memmove(c->in, c->in + c->in_head, c->in_len - c->in_head);
				c->in_len -= c->in_head;
				c->in_head = 0;
			}
			n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
			if (n > 0) {
				c->in_len += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break; /* an EPOLLIN edge will set readable */
			sv_dbg("connection %d closed by the peer", c->fd);
			/*
			 * Dead once what was read with the close is processed: a peer that closes
			 * right after its last ACK (its process exits) must not lose that ACK,
			 * as a NIC would not (sv_nic_output reaps failed connections).
			 */
			c->failed = true;
			return;
		}
	}
}

/* Parses and executes buffered messages; returns true if anything was consumed. */
static bool sv_conn_process(struct sv_conn *c, struct sv_tick *t)
{
	bool did = false;

	while (!c->dead && c->in_len - c->in_head >= sizeof(struct sv_hdr)) {
		struct sv_hdr h;
		const char *body;

		memcpy(&h, c->in + c->in_head, sizeof(h));
		if (h.len > SV_CHUNK + SV_MAX_IOV * sizeof(struct sv_iov) + 4096) {
			sv_log("protocol error on connection %d (message of %u bytes); closed",
			       c->fd, h.len);
			sv_conn_mark_dead(c);
			break;
		}
		if (c->in_len - c->in_head < sizeof(h) + h.len) {
			/* a message larger than the buffer: grow it once to the largest size */
			if (sizeof(h) + h.len > c->in_cap && c->in_cap < SV_IN_CAP) {
				char *n = realloc(c->in, SV_IN_CAP);

				if (!n) {
					c->failed = true;
					break;
				}
				c->in = n;
				c->in_cap = SV_IN_CAP;
				t->busy = true; /* the rest is read next round */
			}
			break;
		}
		body = c->in + c->in_head + sizeof(h);
		if (!c->requester) {
			if (!c->hello_done) {
				if (h.type != SV_MSG_HELLO ||
				    sv_rdv_accept_hello(c, body, h.len) != 0) {
					c->close_after_flush = true;
				}
			} else if (h.type == SV_MSG_REQ) {
				if (sv_resp_req(c, &h, body) == SV_STALL)
					break;
			}
		} else if (c->qp) {
			struct sv_qp *qp = c->qp;

			pthread_mutex_lock(&qp->lock);
			if (qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_RESET) {
				if (h.type == SV_MSG_ACK)
					sv_req_ack(qp, h.msn);
				else if (h.type == SV_MSG_NAK)
					sv_req_nak(qp, &h, t->now);
				else if (h.type == SV_MSG_READ_RESP)
					sv_req_read_resp(qp, &h, body);
			}
			pthread_mutex_unlock(&qp->lock);
		}
		c->in_head += sizeof(h) + h.len;
		did = true;
		if (c->copied >= SV_FLUSH_COPIED)
			sv_conn_flush(c);
	}
	/* a loop link's writer waiting for room in this buffer may go on */
	if (did && c->loop && !__atomic_load_n(&c->loop->writable, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&c->loop->writable, 1, __ATOMIC_RELEASE);
		sv_conn_ready(c->loop);
	}
	return did;
}

/* ---- the send queue ----------------------------------------------------------------------- */

/*
 * Room for len bytes of WR w's payload in the QP's staging ring: contiguous, after every copy
 * still live (those of the WRs not yet completed; positions only grow, so the smallest is the
 * oldest). The ring's start position, or UINT64_MAX when it cannot hold them now (the stream
 * path carries them).
 */
static uint64_t sv_stage_reserve(struct sv_qp *qp, int dev, uint64_t len)
{
	uint64_t size = sv_gdr_stage, tail = qp->stage_head, at;

	if (!size || len > size)
		return UINT64_MAX;
	if (!qp->stage) {
		qp->stage = sv_gpu_host_alloc(dev, size);
		qp->stage_pinned = qp->stage != NULL;
		if (!qp->stage && !(qp->stage = malloc(size)))
			return UINT64_MAX;
	}
	/* the oldest live copy: the smallest position of the WRs not yet completed */
	for (uint32_t m = qp->sq_done; m != qp->sq_tail; m++) {
		struct sv_swqe *o = &qp->sq[m % qp->sq_size];

		if (o->staged && o->stage_at < tail)
			tail = o->stage_at;
	}
	if (tail == qp->stage_head) /* nothing live: start over at the ring's start */
		qp->stage_head = tail = 0;
	at = qp->stage_head;
	if (at % size + len > size)
		at += size - at % size; /* no room before the end: wrap */
	if (at + len - tail > size)
		return UINT64_MAX;
	qp->stage_head = at + len;
	return at;
}

/*
 * One-copy path, payload partly in GPU memory, which the peer's kernel cannot read: copies the
 * whole payload into the staging ring once (a retransmission reuses the copy) and replaces
 * iov[0..*n) with that copy. 0; 1 when the ring has no room (send it in the stream); -EIO when
 * the GPU's memory could not be read. mr_lock held.
 */
static int sv_stage_payload(struct sv_qp *qp, struct sv_swqe *w, struct iovec *iov, const int *devs,
			    uint32_t *n)
{
	char *dst;
	int dev = -1;

	if (!w->staged) {
		uint64_t at;

		for (uint32_t i = 0; i < *n && dev < 0; i++)
			dev = devs[i];
		at = sv_stage_reserve(qp, dev, w->len);
		if (at == UINT64_MAX)
			return 1;
		dst = qp->stage + at % sv_gdr_stage;
		for (uint32_t i = 0; i < *n; i++) {
			if (devs[i] < 0) {
				memcpy(dst, iov[i].iov_base, iov[i].iov_len);
			} else if (sv_gpu_read(devs[i], dst, iov[i].iov_base, iov[i].iov_len)) {
				qp->stage_head =
					at; /* handed back: nothing after it was reserved */
				return -EIO;
			}
			dst += iov[i].iov_len;
		}
		w->stage_at = at;
		w->staged = true;
	}
	iov[0].iov_base = qp->stage + w->stage_at % sv_gdr_stage;
	iov[0].iov_len = w->len;
	*n = 1;
	return 0;
}

/* Builds and queues the message(s) of WR w; returns false if it must wait for buffer room. */
static bool sv_req_transmit(struct sv_qp *qp, struct sv_conn *c, struct sv_swqe *w, uint32_t msn)
{
	struct sv_ctx *ctx = qp->ctx;
	bool inl = w->flags & IBV_SEND_INLINE;
	struct sv_hdr h = {
		.type = SV_MSG_REQ,
		.op = (uint8_t)w->opcode,
		.msn = msn,
		.aux = w->imm,
		.aux2 = w->rkey,
		.raddr = w->raddr,
		.total = w->len,
	};

	/* SOFTVERBS_LINK_MTU: packets larger than the link passes are lost (READ: the
	 * responses, which come back over the same link); no ACK, the transport timer runs out */
	if (__builtin_expect(sv_fault_nmtus, 0) &&
	    sv_fault_frame_lost(ctx->dev->dev.name, qp->attr.port_num, w->len, qp->attr.path_mtu))
		return true;
	if (w->flags & IBV_SEND_SOLICITED)
		h.flags |= SV_F_SOLICITED;
	if (inl) {
		h.flags |= SV_F_FIRST | SV_F_LAST;
		h.len = (uint32_t)w->len;
		sv_conn_queue(c, &h, w->inl, w->len);
		return true;
	}
	if (c->vm || w->opcode == IBV_WR_RDMA_READ) {
		struct iovec iov[SV_MAX_SGE + 1];
		int devs[SV_MAX_SGE + 1];
		bool vm = c->vm;
		uint32_t n, i;
		char *body;
		int st;

		pthread_mutex_lock(&ctx->mr_lock);
		st = sv_sge_iov(ctx, qp->pd, w->sge, w->num_sge, w->opcode == IBV_WR_RDMA_READ, iov,
				devs, &n);
		if (st != IBV_WC_SUCCESS) {
			pthread_mutex_unlock(&ctx->mr_lock);
			w->status = st;
			return true;
		}
		/* the peer's kernel cannot reach our GPU memory: such payload is staged in host
		 * memory first (or, without room there, goes in the stream) */
		for (i = 0; i < n; i++)
			vm &= devs[i] < 0;
		/* a WR that went in the stream once stays there: its retransmission, or its
		 * next chunk, must not turn into a one-copy request with the same msn */
		if (!vm && c->vm && w->opcode != IBV_WR_RDMA_READ && !w->unstaged &&
		    (w->off == 0 || w->staged)) {
			st = sv_stage_payload(qp, w, iov, devs, &n);
			vm = st == 0;
		}
		if (!vm && w->opcode != IBV_WR_RDMA_READ)
			w->unstaged = true;
		pthread_mutex_unlock(&ctx->mr_lock);
		if (st < 0) {
			w->status = IBV_WC_LOC_PROT_ERR; /* the GPU's memory could not be read */
			return true;
		}
		if (!vm && w->opcode != IBV_WR_RDMA_READ)
			goto stream;
		if (vm) {
			h.flags |= SV_F_VM;
			h.niov = n;
			h.len = n * (uint32_t)sizeof(struct sv_iov);
		} else {
			h.flags |= SV_F_FIRST | SV_F_LAST; /* stream READ: request only */
		}
		body = sv_conn_begin(c, &h);
		if (!body)
			return true;
		for (i = 0; vm && i < n; i++) {
			struct sv_iov e = { .addr = (uintptr_t)iov[i].iov_base,
					    .len = iov[i].iov_len };

			memcpy(body + i * sizeof(e), &e, sizeof(e));
		}
		sv_conn_commit(c, &h);
		return true;
	}
stream:
	/* stream path: chunks of payload gathered from the SGEs */
	do {
		struct iovec iov[SV_MAX_SGE + 1];
		int devs[SV_MAX_SGE + 1];
		uint64_t unused = 0;
		uint32_t n;
		char *body;
		int st;

		if (sv_conn_backlog(c) >= SV_OUT_HIGH)
			return false;
		h.flags = 0;
		if (!w->off)
			h.flags |= SV_F_FIRST;
		h.off = w->off;
		h.len = (uint32_t)(w->len - w->off < SV_CHUNK ? w->len - w->off : SV_CHUNK);
		if (w->off + h.len == w->len)
			h.flags |= SV_F_LAST;
		pthread_mutex_lock(&ctx->mr_lock);
		st = sv_sge_iov(ctx, qp->pd, w->sge, w->num_sge, false, iov, devs, &n);
		if (st != IBV_WC_SUCCESS) {
			pthread_mutex_unlock(&ctx->mr_lock);
			w->status = st;
			return true;
		}
		body = sv_conn_begin(c, &h);
		if (body && sv_iov_copy(iov, devs, n, w->off, body, h.len, false, &unused)) {
			/* the GPU's memory could not be read: nothing sent, a local error */
			pthread_mutex_unlock(&ctx->mr_lock);
			w->status = IBV_WC_LOC_PROT_ERR;
			return true;
		}
		pthread_mutex_unlock(&ctx->mr_lock);
		if (!body)
			return true;
		sv_conn_commit(c, &h);
		w->off += h.len;
	} while (w->off < w->len);
	return true;
}

static void sv_sq_pump(struct sv_qp *qp, struct sv_tick *t)
{
	uint64_t now = t->now;
	struct sv_conn *c;
	uint64_t retry;

	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR)
		goto out;
	c = qp->out;
	retry = sv_retry_ns(qp);

	/* transmit */
	if (qp->state == IBV_QPS_RTS && now >= qp->rnr_until) {
		while (qp->sq_next != qp->sq_tail) {
			struct sv_swqe *w = &qp->sq[qp->sq_next % qp->sq_size];

			if (w->status != IBV_WC_SUCCESS)
				break;
			if (!c || c->dead) {
				if (!w->sent_ns)
					w->sent_ns = now; /* starts the transport timer */
				break;
			}
			/* the rate model: the WR is queued on its port once and leaves when
			 * its last byte would have (the peer has nothing before that) */
			if (!w->off && !w->sent_ns) {
				if (!w->rate_end_ns)
					w->rate_end_ns = sv_rate_reserve(
						qp->ctx->dev, qp->attr.port_num, w->len, now);
				if (w->rate_end_ns > now) {
					sv_timer(t, w->rate_end_ns);
					break;
				}
			}
			if (!sv_req_transmit(qp, c, w, qp->sq_next)) {
				if (__atomic_load_n(&c->writable, __ATOMIC_ACQUIRE))
					t->busy = true;
				break;
			}
			if (w->status != IBV_WC_SUCCESS)
				break;
			w->sent_ns = now;
			w->not_before = now +
					2 * sv_link_latency_ns(qp->ctx->dev, qp->attr.port_num) +
					sv_fault_cqe_delay_ns;
			qp->sq_next++;
		}
	} else if (qp->rnr_until > now) {
		sv_timer(t, qp->rnr_until);
	}

	/* complete in order */
	while (qp->sq_done != qp->sq_acked) {
		struct sv_swqe *w = &qp->sq[qp->sq_done % qp->sq_size];

		if (w->not_before > now) {
			sv_timer(t, w->not_before);
			break;
		}
		w->acked = true;
		if (w->signaled) {
			struct ibv_wc wc = {
				.wr_id = w->wr_id,
				.status = IBV_WC_SUCCESS,
				.opcode = w->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ
					  : (w->opcode == IBV_WR_SEND ||
					     w->opcode == IBV_WR_SEND_WITH_IMM)
						  ? IBV_WC_SEND
						  : IBV_WC_RDMA_WRITE,
				.byte_len = (uint32_t)w->len,
				.qp_num = qp->qpn,
			};

			sv_cq_push(qp->scq, &wc);
			qp->sq_done++;
			qp->sq_head = qp->sq_done;
		} else {
			qp->sq_done++;
		}
		if (sv_fault_qp_err_after && qp->sq_done >= sv_fault_qp_err_after) {
			sv_log("SOFTVERBS_QP_ERR_AFTER=%u: QP %u to error", sv_fault_qp_err_after,
			       qp->qpn);
			qp->sq_acked = qp->sq_done; /* everything after the Nth is flushed */
			sv_qp_to_err(qp, IBV_WC_SUCCESS);
			sv_async_post_qp(qp, IBV_EVENT_QP_FATAL);
			goto out;
		}
	}

	/* a local error surfaces once everything before it completed */
	if (qp->sq_done == qp->sq_next && qp->sq_next != qp->sq_tail &&
	    qp->sq[qp->sq_next % qp->sq_size].status != IBV_WC_SUCCESS) {
		sv_qp_to_err(qp, qp->sq[qp->sq_next % qp->sq_size].status);
		goto out;
	}

	/* transport timer: no ACK (or no link) for timeout x (retry_cnt + 1) */
	if (retry && qp->sq_acked != qp->sq_tail) {
		struct sv_swqe *w = &qp->sq[qp->sq_acked % qp->sq_size];
		uint64_t since = w->sent_ns;

		if (since && qp->link_dead_ns > since)
			since = qp->link_dead_ns;
		/* since may be a little after now: another thread marked the link dead */
		if (since && now > since && now - since >= retry) {
			sv_dbg("QP %u: no response for %llu us: transport retries exhausted "
			       "(acked %u next %u tail %u, link %s, backlog %zu, writable %d, "
			       "responder expects %u%s)",
			       qp->qpn, (unsigned long long)((now - since) / 1000), qp->sq_acked,
			       qp->sq_next, qp->sq_tail, c ? (c->dead ? "dead" : "up") : "none",
			       c ? sv_conn_backlog(c) : 0,
			       c ? __atomic_load_n(&c->writable, __ATOMIC_RELAXED) : -1,
			       qp->expect_msn, qp->nak_drop ? " after a NAK" : "");
			sv_qp_to_err(qp, IBV_WC_RETRY_EXC_ERR);
			goto out;
		}
		if (since)
			sv_timer(t, since + retry);
		else
			sv_timer(t, now + 1000000);
	}
out:
	pthread_mutex_unlock(&qp->lock);
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void sv_accept(struct sv_ctx *ctx, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP };
		struct sv_conn *c;

		if (fd < 0)
			return;
		/* as the connecting side (rdv.c): a link has no Nagle; on a UNIX socket it fails */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		c = sv_conn_new(ctx, fd, false, false, 0);
		if (!c) {
			close(fd);
			continue;
		}
		if (sv_nic_conn_add(ctx, c)) {
			close(fd);
			free(c->in);
			free(c);
			continue;
		}
		ev.data.ptr = c;
		if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev))
			sv_conn_mark_dead(c); /* reaped by the NIC */
	}
}

/*
 * One round of NIC work (ctx->lock held): the epoll events, fault schedules, input of the
 * ready connections, the send queues with work, output, and the ready sets settled.
 */
static void sv_conn_event(struct sv_conn *c, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		__atomic_store_n(&c->readable, 1, __ATOMIC_RELEASE);
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		__atomic_store_n(&c->writable, 1, __ATOMIC_RELEASE);
	sv_conn_ready(c);
}

/*
 * Records what epoll reported. With ctx->lock held (stash false) connection events are
 * applied at once; the NIC thread, which collects events before it waits for the lock, stashes
 * them in ctx->pend instead (at most one epoll batch: its next round drains them before it
 * waits again), so they are not lost to rounds that application threads run meanwhile, and
 * connection memory is only touched under ctx->lock.
 */
static void sv_nic_events(struct sv_ctx *ctx, struct epoll_event *ev, int nev, bool stash)
{
	int i;

	for (i = 0; i < nev; i++) {
		void *p = ev[i].data.ptr;

		if (p == &ctx->doorbell) {
			uint64_t v;

			if (read(ctx->doorbell, &v, sizeof(v)) < 0)
				(void)0;
		} else if (p == &ctx->lis_unix) {
			__atomic_store_n(&ctx->acc_unix, 1, __ATOMIC_RELEASE);
		} else if (p == &ctx->lis_tcp) {
			__atomic_store_n(&ctx->acc_tcp, 1, __ATOMIC_RELEASE);
		} else if (stash) {
			pthread_mutex_lock(&ctx->ev_lock);
			ctx->pend[ctx->npend].conn = p;
			ctx->pend[ctx->npend].events = ev[i].events;
			/* atomic: the NIC thread's deferral reads it without ev_lock */
			__atomic_store_n(&ctx->npend, ctx->npend + 1, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&ctx->ev_lock);
		} else {
			sv_conn_event(p, ev[i].events);
		}
	}
}

/* Reads and executes the input of requester (ACKs) or responder (requests) connections. */
static void sv_nic_input(struct sv_ctx *ctx, struct sv_tick *t, bool requesters)
{
	for (uint32_t i = 0; i < ctx->nrdy; i++) {
		struct sv_conn *c = ctx->rdy[i];
		bool did;

		if (c->dead || c->requester != requesters)
			continue;
		sv_conn_read(c);
		did = sv_conn_process(c, t);
		if (did && __atomic_load_n(&c->readable, __ATOMIC_ACQUIRE))
			t->busy = true;
		if (c->rd_active) {
			sv_resp_read_pump(c);
			if (!c->rd_active)
				t->busy = true; /* stalled input may go on */
		}
	}
}

/* Whether a ready responder connection has input to read (requests that just arrived). */
static bool sv_nic_requests_waiting(struct sv_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->nrdy; i++) {
		struct sv_conn *c = ctx->rdy[i];

		if (!c->requester && !c->dead && __atomic_load_n(&c->readable, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

/*
 * Before requests are read: the requester sockets of QPs with sends not yet acknowledged are
 * read too, whether or not this thread saw their epoll event. The event of an ACK may have
 * been taken by another thread (the NIC thread, between its epoll_wait and recording the
 * event) while the reply that followed the ACK on another socket is seen here; reading the
 * ACK first keeps the reply from completing before the send it answers, as on a NIC. Costs
 * one recv per such socket, only in rounds with requests. Loop links need none (their bytes
 * move under ctx->lock).
 */
static void sv_nic_expect_acks(struct sv_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->nact; i++) {
		struct sv_qp *qp = ctx->act[i];
		struct sv_conn *c = qp->out;
		bool unacked;

		if (!c || c->dead || c->fd < 0)
			continue;
		pthread_mutex_lock(&qp->lock); /* modify_qp resets the counters under it */
		unacked = qp->sq_acked != qp->sq_next;
		pthread_mutex_unlock(&qp->lock);
		if (!unacked)
			continue;
		__atomic_store_n(&c->readable, 1, __ATOMIC_RELEASE);
		sv_conn_ready(c);
	}
}

/* Flushes ready responder connections (ACKs) or, with all, every ready connection. */
static void sv_nic_output(struct sv_ctx *ctx, struct sv_tick *t, bool all)
{
	for (uint32_t i = 0; i < ctx->nrdy; i++) {
		struct sv_conn *c = ctx->rdy[i];

		if (!all && c->requester)
			continue;
		if (c->failed)
			sv_conn_mark_dead(c);
		if (!c->dead)
			sv_conn_flush(c);
		if (!c->dead && c->rd_active && __atomic_load_n(&c->writable, __ATOMIC_ACQUIRE))
			t->busy = true;
	}
}

/* Something left for a later round: input, output, an event not consumed, or a death. */
static bool sv_conn_wants(struct sv_conn *c)
{
	return c->dead || c->failed || c->close_after_flush || c->rd_active || c->ack_pending ||
	       c->in_head < c->in_len || c->out_head < c->out_len ||
	       __atomic_load_n(&c->readable, __ATOMIC_ACQUIRE);
}

/*
 * End of a round: connections and QPs with nothing left leave the ready sets; the NIC thread
 * (reap) frees dead connections, so events it collected outside the lock stay valid while
 * application threads run rounds.
 */
static void sv_nic_settle(struct sv_ctx *ctx, bool reap)
{
	uint32_t i, k = 0;

	for (i = 0; i < ctx->nrdy; i++) {
		struct sv_conn *c = ctx->rdy[i];

		if (c->dead && reap)
			sv_conn_close(c);
		else if (sv_conn_wants(c))
			ctx->rdy[k++] = c;
		else
			c->queued = false;
	}
	ctx->nrdy = k;
	for (i = 0, k = 0; i < ctx->nact; i++) {
		struct sv_qp *qp = ctx->act[i];
		bool idle;

		pthread_mutex_lock(&qp->lock);
		idle = qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR ||
		       qp->sq_done == __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&qp->lock);
		if (idle)
			qp->active = false;
		else
			ctx->act[k++] = qp;
	}
	ctx->nact = k;
}

/* ctx->lock held: QPs posted to since the last look join the send-work set. */
static void sv_nic_take_kicks(struct sv_ctx *ctx)
{
	struct sv_qp *qp = __atomic_exchange_n(&ctx->kicks, NULL, __ATOMIC_SEQ_CST);

	while (qp) {
		struct sv_qp *next = qp->knext; /* before the flag: a post may push it again */

		__atomic_store_n(&qp->kicked, 0, __ATOMIC_SEQ_CST);
		if (!qp->active) {
			qp->active = true;
			ctx->act[ctx->nact++] = qp; /* room reserved by sv_nic_qp_add */
		}
		qp = next;
	}
}

void sv_qp_kick(struct sv_qp *qp)
{
	struct sv_ctx *ctx = qp->ctx;
	struct sv_qp *head;

	if (__atomic_exchange_n(&qp->kicked, 1, __ATOMIC_SEQ_CST))
		return; /* on the stack already, or being taken: the round looks at it */
	head = __atomic_load_n(&ctx->kicks, __ATOMIC_RELAXED);
	do
		qp->knext = head;
	while (!__atomic_compare_exchange_n(&ctx->kicks, &head, qp, true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED));
}

/* ---- the sets' bookkeeping (ctx->lock held) -------------------------------------------- */

static int sv_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, (size_t)n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

int sv_nic_conn_add(struct sv_ctx *ctx, struct sv_conn *c)
{
	if (sv_grow((void **)&ctx->rdy, &ctx->rdy_cap, ctx->nconns + 1, sizeof(*ctx->rdy)))
		return -ENOMEM;
	c->prev = NULL;
	c->next = ctx->conns;
	if (ctx->conns)
		ctx->conns->prev = c;
	ctx->conns = c;
	ctx->nconns++;
	sv_conn_ready(c);
	return 0;
}

int sv_nic_qp_add(struct sv_ctx *ctx, struct sv_qp *qp)
{
	uint32_t buckets = ctx->qtab ? ctx->qtab_mask + 1 : 0;

	if (sv_grow((void **)&ctx->act, &ctx->act_cap, ctx->nqps + 1, sizeof(*ctx->act)))
		return -ENOMEM;
	if (ctx->nqps + 1 > buckets) {
		uint32_t n = buckets ? buckets * 2 : 64;
		struct sv_qp **t = calloc(n, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (uint32_t b = 0; b < buckets; b++)
			while (ctx->qtab[b]) {
				struct sv_qp *q = ctx->qtab[b];

				ctx->qtab[b] = q->hnext;
				q->hnext = t[q->qpn & (n - 1)];
				t[q->qpn & (n - 1)] = q;
			}
		free(ctx->qtab);
		ctx->qtab = t;
		ctx->qtab_mask = n - 1;
	}
	qp->hnext = ctx->qtab[qp->qpn & ctx->qtab_mask];
	ctx->qtab[qp->qpn & ctx->qtab_mask] = qp;
	qp->prev = NULL;
	qp->next = ctx->qps;
	if (ctx->qps)
		ctx->qps->prev = qp;
	ctx->qps = qp;
	ctx->nqps++;
	return 0;
}

void sv_nic_qp_remove(struct sv_ctx *ctx, struct sv_qp *qp)
{
	struct sv_qp **pp;

	sv_nic_take_kicks(ctx); /* it may be on the stack */
	if (qp->active) {
		for (uint32_t i = 0; i < ctx->nact; i++)
			if (ctx->act[i] == qp) {
				ctx->act[i] = ctx->act[--ctx->nact];
				break;
			}
		qp->active = false;
	}
	for (pp = &ctx->qtab[qp->qpn & ctx->qtab_mask]; *pp && *pp != qp; pp = &(*pp)->hnext)
		;
	if (*pp)
		*pp = qp->hnext;
	if (qp->prev)
		qp->prev->next = qp->next;
	else
		ctx->qps = qp->next;
	if (qp->next)
		qp->next->prev = qp->prev;
	ctx->nqps--;
}

struct sv_qp *sv_nic_qp_find(struct sv_ctx *ctx, uint32_t qpn)
{
	struct sv_qp *qp = ctx->qtab ? ctx->qtab[qpn & ctx->qtab_mask] : NULL;

	while (qp && qp->qpn != qpn)
		qp = qp->hnext;
	return qp;
}

void sv_nic_free_sets(struct sv_ctx *ctx)
{
	free(ctx->rdy);
	free(ctx->act);
	free(ctx->qtab);
	ctx->rdy = NULL;
	ctx->act = NULL;
	ctx->qtab = NULL;
	ctx->nrdy = ctx->nact = ctx->rdy_cap = ctx->act_cap = 0;
}

static void sv_nic_round(struct sv_ctx *ctx, struct sv_tick *t, bool reap)
{

	t->now = sv_now_ns();
	t->next = t->now + 200 * 1000000ull;
	t->busy = false;
	pthread_mutex_lock(&ctx->ev_lock);
	for (int i = 0; i < ctx->npend; i++)
		sv_conn_event(ctx->pend[i].conn, ctx->pend[i].events);
	__atomic_store_n(&ctx->npend, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->ev_lock);
	if (__atomic_exchange_n(&ctx->acc_unix, 0, __ATOMIC_ACQ_REL))
		sv_accept(ctx, ctx->lis_unix);
	if (ctx->lis_tcp >= 0 && __atomic_exchange_n(&ctx->acc_tcp, 0, __ATOMIC_ACQ_REL))
		sv_accept(ctx, ctx->lis_tcp);
	sv_timer(t, sv_fault_tick(ctx, t->now));
	sv_nic_take_kicks(ctx);

	/*
	 * Order as on a wire: acknowledgements first (requester connections, then the send
	 * queues complete), then incoming requests, whose ACKs leave before anything new this
	 * round transmits. A reply that raced its request's ACK thus never completes first.
	 */
	if (sv_nic_requests_waiting(ctx))
		sv_nic_expect_acks(ctx);
	sv_nic_input(ctx, t, true);
	for (uint32_t i = 0; i < ctx->nact; i++)
		sv_sq_pump(ctx->act[i], t);
	sv_nic_input(ctx, t, false);
	sv_nic_output(ctx, t, false);
	for (uint32_t i = 0; i < ctx->nact; i++)
		sv_sq_pump(ctx->act[i], t);
	sv_nic_output(ctx, t, true);
	sv_nic_settle(ctx, reap);
}

unsigned sv_nic_defer_us; /* SOFTVERBS_NIC_DEFER_US (sv.h) */

/*
 * Application threads lend a hand: posting and polling run a round when the NIC lock is free.
 * A busy-polling consumer then needs no thread wake-up on its side, which on a small machine
 * costs more than the work itself.
 */
bool sv_nic_inline(struct sv_ctx *ctx, bool polling)
{
	struct epoll_event ev[64];
	struct sv_tick t;
	int nev;

	if (pthread_mutex_trylock(&ctx->lock))
		return false;
	if (sv_nic_defer_us && polling)
		__atomic_store_n(&ctx->lent_ns, sv_now_ns(), __ATOMIC_RELEASE);
	nev = epoll_wait(ctx->epfd, ev, 64, 0);
	sv_nic_events(ctx, ev, nev > 0 ? nev : 0, false);
	sv_nic_round(ctx, &t, false);
	pthread_mutex_unlock(&ctx->lock);
	/* the NIC thread keeps the timers (retries, latency) if this thread stops polling */
	if (t.busy || t.next < __atomic_load_n(&ctx->nic_wake_ns, __ATOMIC_RELAXED))
		sv_nic_kick_if_sleeping(ctx);
	return true;
}

static struct timespec sv_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* Waits up to ns on the doorbell and, with epoll, the device's sockets; the poll's result. */
static int sv_nic_wait(struct sv_ctx *ctx, bool epoll, uint64_t ns)
{
	struct pollfd pfd[2] = { { .fd = ctx->doorbell, .events = POLLIN },
				 { .fd = ctx->epfd, .events = POLLIN } };
	struct timespec ts = sv_timespec(ns);
	int n = ppoll(pfd, epoll ? 2 : 1, &ts, NULL);

	if (n > 0 && (pfd[0].revents & POLLIN)) {
		uint64_t v;

		if (read(ctx->doorbell, &v, sizeof(v)) < 0)
			(void)0; /* a kick: the caller looks at stop and the window again */
	}
	return n > 0 && epoll && (pfd[1].revents & POLLIN) ? 2 : n;
}

/*
 * SOFTVERBS_NIC_DEFER_US (sv.h): whether the NIC thread steps aside now. While an application
 * thread polled the device's CQ empty (and so ran its round) within the window, the thread
 * waits on the doorbell until it has not for the configured time (a kick ends the wait); then,
 * until the window has passed, on the sockets too, and collects their events at once (the
 * application stopped polling, as NCCL's proxy thread does between operations). Events the
 * thread took itself (held) are left to a polling application for the handoff time, and are
 * handled at once when nobody polls. It still runs a round of its own (the reaping of dead
 * connections is its alone) once SV_NIC_DEFER_OWN_NS passed since its last. Returns true to
 * step aside; false to run a round, *events set when sockets have events to collect first.
 */
static bool sv_nic_defer(struct sv_ctx *ctx, uint64_t own_ns, bool *events)
{
	uint64_t lent = __atomic_load_n(&ctx->lent_ns, __ATOMIC_ACQUIRE), now = sv_now_ns(),
		 window = SV_NIC_DEFER_WINDOWS * (uint64_t)sv_nic_defer_us * 1000,
		 handoff = SV_NIC_DEFER_HANDOFF_NS(sv_nic_defer_us), d, own;
	bool polling;
	int held;

	*events = false;
	if (lent > now || now - lent >= window || now - own_ns >= SV_NIC_DEFER_OWN_NS)
		return false; /* lent > now: a poll between the two reads, run the round */
	polling = now - lent < (uint64_t)sv_nic_defer_us * 1000;
	held = __atomic_load_n(&ctx->npend, __ATOMIC_ACQUIRE);
	if (held) {
		if (!polling)
			return false; /* nobody polls: they are the NIC's at once */
		/* events in hand: a polling application takes them in its next round */
		sv_nic_wait(ctx, false, handoff);
		return !__atomic_load_n(&ctx->npend, __ATOMIC_ACQUIRE);
	}
	own = own_ns + SV_NIC_DEFER_OWN_NS - now;
	if (polling) {
		/* the application polls: look again once it has not for the configured time */
		d = lent + (uint64_t)sv_nic_defer_us * 1000 - now;
		sv_nic_wait(ctx, false, d < own ? d : own);
		return true;
	}
	/* it has not polled for that long: socket events are the NIC's again at once */
	d = lent + window - now;
	if (sv_nic_wait(ctx, true, d < own ? d : own) == 2) {
		*events = true;
		return false;
	}
	return true;
}

static void *sv_nic_main(void *arg)
{
	struct sv_ctx *ctx = arg;
	struct epoll_event ev[64];
	uint64_t own_ns = sv_now_ns();
	int nev = 0;

	while (!__atomic_load_n(&ctx->stop, __ATOMIC_ACQUIRE)) {
		struct sv_tick t;

		if (sv_fault_event_delay_ns && nev > 0) {
			struct timespec d = sv_timespec(sv_fault_event_delay_ns);

			nanosleep(&d, NULL);
		}
		/* before the lock: application threads may hold it for many rounds */
		sv_nic_events(ctx, ev, nev, true);
		nev = 0;
		if (sv_nic_defer_us) {
			bool events;

			if (sv_nic_defer(ctx, own_ns, &events))
				continue;
			if (events) { /* nobody polls: collected here, outside the lock */
				nev = epoll_wait(ctx->epfd, ev, 64, 0);
				sv_nic_events(ctx, ev, nev > 0 ? nev : 0, true);
				nev = 0;
			}
		}
		pthread_mutex_lock(&ctx->lock);
		sv_nic_round(ctx, &t, true);
		own_ns = t.now;
		if (!t.busy) {
			__atomic_store_n(&ctx->nic_wake_ns, t.next, __ATOMIC_RELAXED);
			/* a read-modify-write: full barrier before the queues are looked at */
			__atomic_exchange_n(&ctx->sleeping, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&ctx->kicks, __ATOMIC_SEQ_CST))
				t.busy = true; /* posted after the round looked */
		}
		pthread_mutex_unlock(&ctx->lock);

		if (t.busy) {
			__atomic_store_n(&ctx->sleeping, 0, __ATOMIC_SEQ_CST);
			nev = epoll_wait(ctx->epfd, ev, 64, 0);
		} else {
			uint64_t now = sv_now_ns(), d = t.next > now ? t.next - now : 0;
			struct timespec ts = sv_timespec(d);

			nev = epoll_pwait2(ctx->epfd, ev, 64, &ts, NULL);
			__atomic_store_n(&ctx->sleeping, 0, __ATOMIC_SEQ_CST);
		}
		if (nev < 0)
			nev = 0;
	}
	return NULL;
}

int sv_nic_start(struct sv_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	ev.data.ptr = &ctx->doorbell;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->doorbell, &ev))
		return -errno;
	err = pthread_create(&ctx->thread, NULL, sv_nic_main, ctx);
	if (err)
		return -err;
	ctx->thread_started = true;
	{
		/* "sv:<device>" in top -H, ps -L and perf, up to the kernel's 15 characters */
		char name[16];

		sv_fmt(name, sizeof(name), "sv:%s", ctx->dev->dev.name);
		pthread_setname_np(ctx->thread, name); /* a name is only a label: errors ignored */
	}
	return 0;
}

void sv_nic_kick(struct sv_ctx *ctx)
{
	uint64_t one = 1;

	if (write(ctx->doorbell, &one, sizeof(one)) < 0)
		(void)0; /* counter saturated: the NIC is awake anyway */
}

void sv_nic_kick_if_sleeping(struct sv_ctx *ctx)
{
	/* a read-modify-write (full barrier) after the post, pairing with the NIC's exchange */
	if (__atomic_fetch_add(&ctx->sleeping, 0, __ATOMIC_SEQ_CST))
		sv_nic_kick(ctx);
}

void sv_nic_stop(struct sv_ctx *ctx)
{
	if (!ctx->thread_started)
		return;
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELEASE);
	sv_nic_kick(ctx);
	pthread_join(ctx->thread, NULL);
	ctx->thread_started = false;
}
