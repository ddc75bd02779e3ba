/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs internal interface: the objects behind the public verbs structs (device, context,
 * PD, MR, CQ, completion channel, QP), the process-global state read from the pod view and the
 * environment, and the prototypes shared between the library's files. Nothing here is exported;
 * only the ibv_* entry points marked SV_EXPORT leave the .so (see libibverbs.map).
 *
 * Locking order: ctx->lock (the "NIC" lock, held by the progress thread while it works)
 * -> qp->lock -> ctx->mr_lock -> cq->lock. post_send/post_recv/poll_cq never take ctx->lock.
 */
#ifndef SV_H
#define SV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_EXPORT __attribute__((visibility("default")))
#define SV_COLD __attribute__((cold, noinline))

#define SV_MAX_DEVS 64
#define SV_MAX_PORTS 8
#define SV_MAX_GIDS 64
#define SV_MAX_QP_WR 16384
#define SV_MAX_SGE 32
#define SV_MAX_INLINE 1024
#define SV_MAX_CQE (1 << 20)
#define SV_MAX_RD_ATOM 16
#define SV_MAX_MSG (1U << 31)

/*
 * Payload copies are the NIC's DMA: outside the program's memory model, ordered for the
 * application only by completions (as on hardware). Under ThreadSanitizer they are hidden.
 */
#if defined(__SANITIZE_THREAD__)
#define SV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SV_TSAN 1
#endif
#endif
#ifdef SV_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define sv_dma_begin()                                         \
	do {                                                   \
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);  \
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__); \
	} while (0)
#define sv_dma_end()                                         \
	do {                                                 \
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__); \
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);  \
	} while (0)
#else
#define sv_dma_begin() \
	do {           \
	} while (0)
#define sv_dma_end() \
	do {         \
	} while (0)
#endif

#define sv_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ---- process-global state (init.c) ---------------------------------------------------- */

struct sv_gid {
	union ibv_gid gid;
	bool valid;    /* non-zero and its types file readable */
	uint32_t type; /* IBV_GID_TYPE_IB / _ROCE_V1 / _ROCE_V2 */
	uint32_t ifindex;
};

struct sv_port {
	int state; /* enum ibv_port_state, as the view says */
	int phys_state;
	int link_layer;	      /* IBV_LINK_LAYER_* */
	double gbps;	      /* from ports/N/rate */
	uint8_t width, speed; /* IB encodings for query_port */
	enum ibv_mtu mtu;     /* active MTU (config mtu=, default 4096) */
	double latency_us;    /* one-way latency (config latency_us=) */
	uint16_t lid;
	char rail[64];
	int ngids; /* gid_tbl_len */
	struct sv_gid gids[SV_MAX_GIDS];

	/* runtime, shared by all contexts of the process */
	int fault_down; /* port taken down by SOFTVERBS_PORT_DOWN (atomic) */
	pthread_mutex_t rate_lock;
	uint64_t next_free_ns; /* rate model: when the port's queue has sent all it holds */
};

struct sv_device {
	struct ibv_device dev; /* first, as in providers' struct verbs_device */
	const void *ops; /* the word libmlx5 compares with its ops table: ours, never mlx5's */
	int index;
	__be64 node_guid;
	__be64 sys_image_guid;
	char fw_ver[64];
	uint32_t vendor_part_id;
	int nports;
	struct sv_port port[SV_MAX_PORTS + 1]; /* 1-based */
};

struct sv_global {
	int ndev;
	struct sv_device *dev[SV_MAX_DEVS];
	char view[512];
	char rdv[512];
	char node[64];
	char pod[64];
	unsigned long netns_ino;
	unsigned long pidns_ino; /* our PID namespace: whose rendezvous entries we may reap */
	uint64_t t0_ns;		 /* library init: the zero of the fault schedules */
	bool vm;		 /* one-copy path (process_vm_readv/writev) allowed */
	double rate_gbps;	 /* >0: override every port's rate; <0: rate model off; 0: view */
	double latency_us;	 /* >=0: override; <0: view */
	bool debug;
	char tcp_host[64]; /* SOFTVERBS_TCP: always TCP, to this address (tests) */
	uint64_t cookie;   /* random; peers read it with process_vm_readv to test the path */
};

extern struct sv_global sv_g;

/* GPUDirect RDMA emulation (gpu.c) */
#define SV_GDR_PEERMEM 1 /* ibv_reg_mr on CUDA device pointers */
#define SV_GDR_DMABUF 2	 /* ibv_reg_dmabuf_mr on dma-buf fds of GPU memory */
extern int sv_gdr_mode;
extern bool sv_gdr_relaxed;
/* SOFTVERBS_GDR_STAGE: bytes of a QP's send staging ring for payload out of GPU memory on
 * the one-copy path (default SV_GDR_STAGE_DEFAULT; 0: such payload goes in the stream) */
#define SV_GDR_STAGE_DEFAULT (8u << 20)
extern uint64_t sv_gdr_stage;
/*
 * SOFTVERBS_NIC_DEFER_US (0: off): while an application thread polled a device's CQ empty (and
 * ran its round) within the last this many microseconds, the device's NIC thread runs no round
 * of its own, but one every SV_NIC_DEFER_OWN_NS (it alone reaps dead connections), leaving the
 * CPUs to the threads that drive the work (a machine with fewer cores than busy threads). It
 * still takes over work that nobody else picks up: socket events, once the application has not
 * polled for that long (until SV_NIC_DEFER_WINDOWS times that, then it is back to normal), and
 * events it took itself that no round has handled within SV_NIC_DEFER_HANDOFF_NS.
 */
extern unsigned sv_nic_defer_us;
#define SV_NIC_DEFER_WINDOWS 4
#define SV_NIC_DEFER_HANDOFF_NS(us) ((us) >= 50 ? (uint64_t)(us)*100 : 5000ull)
#define SV_NIC_DEFER_OWN_NS 10000000ull
/* Sets sv_gdr_mode from "off|peermem|dmabuf|both" (comma list); origin names it in messages. */
void sv_gdr_configure(const char *how, const char *origin);
/* In GDR mode: one line when no CUDA driver can be loaded (only host memory then). */
void sv_gdr_check_driver(void);
/* 1: [addr, addr+len) is CUDA device memory of device *dev; 0: it is not; -EFAULT: it leaves
 * its allocation. */
int sv_gpu_classify(const void *addr, size_t len, int *dev);
#define SV_GPU_MAX_DEV 64
/*
 * The DMA queue towards GPU memory: one CUDA stream per GPU for every device context of the
 * process. A queue per context (each NIC its own engine, 2026-12-03) made NCCL's IB transport
 * fail every 64 KiB all-reduce on the H200 (an illegal memory access); the cause was not found
 * and the shared queue came back (docs/softverbs.md, GDR mode).
 * Into GPU memory (asynchronous), out of it (waits, after every earlier write), and waiting for
 * every write to device dev. 0 or -EIO.
 */
int sv_gpu_write(int dev, void *dst, const void *src, size_t len);
int sv_gpu_read(int dev, void *dst, const void *src, size_t len);
int sv_gpu_fence(int dev);
/* len bytes of pinned host memory, usable by every device's copies; NULL when the driver
 * cannot give it (use malloc'd memory then). Freed with sv_gpu_host_free. */
void *sv_gpu_host_alloc(int dev, size_t len);
void sv_gpu_host_free(void *p);
extern volatile uint64_t sv_cookie;

void sv_init(void);
uint64_t sv_now_ns(void);
void sv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sv_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* snprintf that may truncate (paths from the environment); returns what vsnprintf does */
int sv_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* view.c: fills sv_g.dev[] from $SOFTVERBS_VIEW */
void sv_view_load(void);
bool sv_port_has_gid(const struct sv_device *dev, int port, const union ibv_gid *gid);
int sv_port_state(const struct sv_device *dev, int port);

/* ---- per-context objects ---------------------------------------------------------------- */

struct sv_qp;
struct sv_conn;
struct sv_mr;

struct sv_ctx {
	struct verbs_context vctx; /* first; vctx.context is what clients hold */
	struct sv_device *dev;
	pthread_mutex_t lock; /* QP and connection lists; held by the NIC while working */
	pthread_t thread;
	bool thread_started;
	int stop;	      /* atomic */
	int sleeping;	      /* atomic: NIC is (about to be) in epoll_wait */
	uint64_t nic_wake_ns; /* atomic: when the sleeping NIC wakes by itself */
	uint64_t lent_ns;     /* atomic: when an application thread last ran a round (inline) */
	int epfd;
	int doorbell;  /* eventfd */
	int async_wfd; /* write end of the async event pipe (read end: async_fd) */
	int lis_unix, lis_tcp;
	int acc_unix, acc_tcp; /* atomic: a listener has connections to accept */
	/* connection events the NIC thread collected before waiting for ctx->lock */
	pthread_mutex_t ev_lock;
	struct {
		void *conn;
		uint32_t events;
	} pend[64];
	int npend;
	char unix_path[108]; /* "@name" for an abstract socket */
	int tcp_port;
	/*
	 * Work is found through ready sets, never by visiting every QP or connection, so a
	 * round costs what is busy, as on a NIC (docs/softverbs.md, "Scale"):
	 *  - kicks: QPs posted to since the NIC last looked, a lock-free stack (post_send does
	 *    not take ctx->lock); a round moves them into act;
	 *  - act: QPs with send work outstanding (ctx->lock); a QP leaves once all completed;
	 *  - rdy: connections with input, output, an event or a death to handle (ctx->lock);
	 *    one leaves once idle, and its next epoll event or queued message brings it back.
	 * Capacities are reserved when a QP or connection is made, so marking never allocates.
	 */
	struct sv_qp *qps;   /* every QP (doubly linked) */
	struct sv_qp **qtab; /* by QPN: chained hash, qtab_mask + 1 buckets */
	uint32_t qtab_mask;
	uint32_t nqps;
	struct sv_qp *kicks; /* atomic stack through qp->knext */
	struct sv_qp **act;
	uint32_t nact, act_cap;
	struct sv_conn *conns; /* every connection (doubly linked) */
	struct sv_conn **rdy;
	uint32_t nrdy, rdy_cap, nconns;
	int port_seen_down[SV_MAX_PORTS + 1]; /* NIC's view, to raise PORT_ERR/ACTIVE once */
	bool cut_done;			      /* SOFTVERBS_CUT_LINK applied */

	/* GDR mode: one-copy path's bounce buffer for GPU memory (NIC only). Pinned (page-locked
	 * by the CUDA driver) where it can be, as a NIC's DMA engine reaches memory directly; then
	 * a copy into GPU memory reads it after the call returns, and bounce_busy (a bit per
	 * device) says whose stream to wait for before the buffer is filled again. */
	char *bounce;
	bool bounce_pinned;
	uint64_t bounce_busy;
	pthread_mutex_t mr_lock; /* MR table; held across copies into/out of MRs */
	struct sv_mr **mrs;
	uint32_t nmrs;
	uint32_t key_tag;
};

static inline struct sv_ctx *sv_ctx_of(struct ibv_context *c)
{
	return sv_container_of(c, struct sv_ctx, vctx.context);
}

struct sv_pd {
	struct ibv_pd pd;
	struct sv_ctx *ctx;
	int refs; /* MRs and QPs using it (atomic) */
};

struct sv_mr {
	struct ibv_mr mr;
	struct sv_pd *pd;
	uint64_t iova;
	int access;
	uint32_t slot;
	int gpu; /* CUDA device ordinal of GPU memory (GDR mode), -1: host memory */
};

struct sv_chan {
	struct ibv_comp_channel ch;
	int wfd;
};

struct sv_cq {
	union {
		struct ibv_cq cq; /* ibv_cq_ex starts with the same fields */
		struct ibv_cq_ex cqx;
	};
	struct ibv_wc cur; /* extended poll: the entry start/next_poll returned */
	struct sv_ctx *ctx;
	pthread_mutex_t lock;
	struct ibv_wc *ring;
	uint32_t size, head, tail; /* head: next to poll, tail: next to fill (free-running) */
	bool armed, solicited_only, overrun;
	int refs; /* QPs attached (atomic) */
};

/* A send work request as the NIC keeps it. */
struct sv_swqe {
	uint64_t wr_id;
	uint32_t opcode; /* enum ibv_wr_opcode */
	uint32_t flags;	 /* enum ibv_send_flags */
	uint32_t imm;	 /* network order, opaque */
	uint32_t rkey;
	uint64_t raddr;
	uint64_t len; /* total payload */
	uint32_t num_sge;
	bool signaled;
	bool acked;
	struct ibv_sge *sge; /* max_send_sge slots */
	char *inl;	     /* max_inline_data bytes; used when IBV_SEND_INLINE */
	uint64_t post_ns;
	uint64_t sent_ns; /* last (re)transmission */
	uint64_t
		rate_end_ns; /* rate model: when its last byte has left the port (0: not yet queued) */
	uint64_t not_before; /* completion not before (latency model, delay fault) */
	uint64_t off;	     /* stream path: bytes already sent / read bytes received */
	int status;	     /* != SUCCESS: complete with this */
	bool staged;	     /* its payload is in qp->stage at stage_at (until it completes) */
	bool unstaged;	     /* it went in the stream: it is never staged after that */
	uint64_t stage_at;   /* ring position (free-running) of its copy */
};

struct sv_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge *sge;
};

struct sv_qp {
	struct ibv_qp_ex qpx;	  /* first: &qpx.qp_base is the client's ibv_qp */
	uint32_t events_reported; /* async events read for it (qpx.qp_base.mutex) */
	struct sv_ctx *ctx;
	struct sv_pd *pd;
	struct sv_cq *scq, *rcq;
	struct sv_qp *next, *prev; /* ctx->qps */
	struct sv_qp *hnext;	   /* ctx->qtab bucket */
	struct sv_qp *knext;	   /* ctx->kicks */
	int kicked;		   /* atomic: on ctx->kicks */
	bool active;		   /* in ctx->act (ctx->lock) */
	uint64_t gpu_dirty;	   /* requester: GPU devices READ responses wrote (NIC only) */
	/* Requester, GDR mode, one-copy path: the peer's kernel cannot read our GPU memory, so a
	 * WR's payload out of it is first copied here (as a NIC's DMA engine reads it), and the
	 * peer reads this host copy. A FIFO ring of sv_gdr_stage bytes, pinned where the driver
	 * gives it, made on first use; a WR's copy lives until the WR completes. NIC only. */
	char *stage;
	bool stage_pinned;
	uint64_t stage_head;  /* free-running: next byte to hand out */
	pthread_mutex_t lock; /* rings, state, attributes */

	int state; /* enum ibv_qp_state */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr; /* what modify_qp accepted */
	uint32_t qpn;
	char rdv_entry[600];

	/* send queue; free-running counters, slot = ctr % sq_size */
	uint32_t sq_size;
	struct sv_swqe *sq;
	uint32_t sq_head;  /* oldest slot still occupied */
	uint32_t sq_done;  /* next to complete */
	uint32_t sq_acked; /* all below are acknowledged */
	uint32_t sq_next;  /* next to transmit */
	uint32_t sq_tail;  /* next to post (atomic for the NIC's peek) */
	struct ibv_sge *ssge;
	char *sinl;

	/* receive queue */
	uint32_t rq_size;
	struct sv_rwqe *rq;
	uint32_t rq_head, rq_tail;
	struct ibv_sge *rsge;

	/* requester side of the link */
	struct sv_conn *out;
	uint64_t link_dead_ns; /* 0: alive */
	uint64_t rnr_until;
	uint32_t rnr_count;
	uint32_t wr_count; /* WRs posted, for SOFTVERBS_QP_ERR_AFTER */

	/* responder side */
	struct sv_conn *in;
	uint32_t expect_msn;
	bool nak_drop;	 /* dropping until the NAKed message starts again */
	bool ack_drop;	 /* SOFTVERBS_DROP_ACK: this responder acknowledges nothing more */
	bool cur_active; /* stream path: a multi-chunk message in progress */
	bool cur_has_rwqe;
	struct sv_rwqe cur_rwqe;
	int cur_err;

	struct ibv_ece ece;
	bool ece_set;

	/* ibv_wr_* batch between wr_start and wr_complete */
	struct ibv_send_wr *wrb;
	struct ibv_sge *wrb_sge;
	char *wrb_inl;
	uint32_t wrb_n, wrb_cap;
	int wrb_err;
};

static inline struct sv_qp *sv_qp_of(struct ibv_qp *q)
{
	return sv_container_of(q, struct sv_qp, qpx.qp_base);
}

/* device.c */
int sv_async_post(struct sv_ctx *ctx, enum ibv_event_type type, uint64_t elem);
int sv_async_post_qp(struct sv_qp *qp, enum ibv_event_type type);

/* mr.c */
struct sv_mr *sv_mr_lookup(struct sv_ctx *ctx, uint32_t key); /* mr_lock held */
void *sv_mr_va(struct sv_mr *mr, uint64_t addr);
bool sv_mr_covers(struct sv_mr *mr, uint64_t addr, uint64_t len);

/* cq.c */
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc); /* takes cq->lock */
int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* qp.c */
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
void sv_qp_to_err(struct sv_qp *qp, int first_status); /* qp->lock held */
void sv_qp_flush_locked(struct sv_qp *qp);
void sv_qp_detach_conns(struct sv_qp *qp); /* ctx->lock held */

/* progress.c: the NIC */
int sv_nic_qp_add(struct sv_ctx *ctx, struct sv_qp *qp);	/* ctx->lock held; 0 or -ENOMEM */
void sv_nic_qp_remove(struct sv_ctx *ctx, struct sv_qp *qp);	/* ctx->lock held */
struct sv_qp *sv_nic_qp_find(struct sv_ctx *ctx, uint32_t qpn); /* ctx->lock held */
void sv_qp_kick(struct sv_qp *qp); /* after posting: the NIC looks at this QP's send queue */
int sv_nic_conn_add(struct sv_ctx *ctx, struct sv_conn *c); /* ctx->lock held; 0 or -ENOMEM */
void sv_nic_free_sets(struct sv_ctx *ctx);		    /* context close */
int sv_nic_start(struct sv_ctx *ctx);
void sv_nic_stop(struct sv_ctx *ctx);
void sv_nic_kick(struct sv_ctx *ctx);
void sv_nic_kick_if_sleeping(struct sv_ctx *ctx);
/* a NIC round if the lock is free; polling: a poll that found the CQ empty (SOFTVERBS_NIC_DEFER_US) */
bool sv_nic_inline(struct sv_ctx *ctx, bool polling);
void sv_conn_close(struct sv_conn *c); /* ctx->lock held */
struct sv_conn *sv_conn_new(struct sv_ctx *ctx, int fd, bool requester, bool vm, pid_t pid);

/* rdv.c: QPN claims, listeners, connecting a QP to its peer */
int sv_rdv_listen(struct sv_ctx *ctx);
void sv_rdv_unlisten(struct sv_ctx *ctx);
int sv_rdv_claim(struct sv_qp *qp);
void sv_rdv_release(struct sv_qp *qp);
void sv_rdv_connect(struct sv_qp *qp); /* at RTR; sets qp->out or link_dead */
int sv_rdv_accept_hello(struct sv_conn *c, const void *msg, size_t len);

/* fault.c */
void sv_fault_init(void);
int sv_fault_check(const char *verb);	     /* errno to fail this call with, or 0 */
extern int sv_fault_any;		     /* some SOFTVERBS_FAIL rule exists */
extern uint32_t sv_fault_qp_err_after;	     /* 0: off */
extern uint32_t sv_fault_drop_ack;	     /* 0: off; else the n-th request with immediate data */
bool sv_fault_ack_dropped(struct sv_qp *qp); /* qp->lock held; after a request with immediate */
extern uint64_t sv_fault_cqe_delay_ns;
/* SOFTVERBS_EVENT_DELAY_US: the NIC thread holds socket events it took this long before it
 * records them (a thread preempted between the two; tests the ordering of ACKs and replies) */
extern uint64_t sv_fault_event_delay_ns;
struct sv_port_fault {
	char dev[64];
	int port;
	uint64_t down_ns, up_ns; /* relative to sv_g.t0_ns; up 0 = never */
};
extern struct sv_port_fault sv_fault_ports[8];
extern int sv_fault_nports;
/*
 * SOFTVERBS_LINK_MTU: the link of a port passes IP packets of at most mtu bytes (a switch port,
 * VLAN or interface MTU below what RoCE's path MTU needs). A RoCEv2 packet is its payload (up
 * to the QP's path MTU) plus SV_ROCE_HDR bytes: IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4.
 */
#define SV_ROCE_HDR 60
struct sv_mtu_fault {
	char dev[64];
	int port;
	uint32_t mtu;
};
extern struct sv_mtu_fault sv_fault_mtus[8];
extern int sv_fault_nmtus;
/* Is a message of len bytes on dev/port with this path MTU (enum ibv_mtu) lost on the link? */
bool sv_fault_frame_lost(const char *dev, int port, uint64_t len, int path_mtu);
extern uint64_t sv_fault_cut_ns;			  /* 0: off */
extern uint32_t sv_fault_cut_qpn;			  /* 0: every QP */
uint64_t sv_fault_tick(struct sv_ctx *ctx, uint64_t now); /* ctx->lock held; next deadline */

static inline int sv_fail(const char *verb)
{
	return __builtin_expect(sv_fault_any, 0) ? sv_fault_check(verb) : 0;
}

/* rate.c */
uint64_t sv_rate_reserve(struct sv_device *dev, int port, uint64_t bytes, uint64_t now);
uint64_t sv_link_latency_ns(struct sv_device *dev, int port);

#endif
