/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-bench internal interface. The harness is split so that the parts a CPU-only CI can
 * test stand alone: flag parsing (args.c), collective layouts and table formatting (fmt.c),
 * exactly-representable data and its checker (data.c), the JSON/CSV writers (out.c). The
 * measurement loop (bench.c) is generic over a mode, and a mode (mode_nccl.c; --net as
 * mode_net.c for collectives and net_p2p.c for --p2p, both over net_setup.c) is one struct
 * rb_mode_ops: it owns devices, buffers, launches and waits, never formatting.
 */
#ifndef RB_H
#define RB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define RB_VERSION "0.1.0"
/* git describe and build date from the project's CMakeLists.txt; standalone builds lack them */
#ifndef RN_GIT_DESCRIBE
#define RN_GIT_DESCRIBE "unknown"
#endif
#ifndef RN_BUILD_DATE
#define RN_BUILD_DATE "unknown"
#endif

/* Exit codes: nccl-tests' where they exist, 77 for "cannot run on this machine". */
enum rb_exit {
	RB_EXIT_OK = 0,
	RB_EXIT_USAGE = 2,   /* bad flags, wrong rank count, mode not built */
	RB_EXIT_RUNTIME = 3, /* NCCL/CUDA/MPI failure at run time */
	RB_EXIT_TIMEOUT = 4, /* -T expired */
	RB_EXIT_WRONG = 7,   /* #wrong > 0 or average busbw below NCCL_TESTS_MIN_BW */
	RB_EXIT_SKIP = 77,   /* no GPU (or no NCCL) on this machine: nothing measured */
};

enum rb_mode {
	RB_MODE_NONE,
	RB_MODE_NCCL,
	RB_MODE_NET,
};

/* --net --p2p: point-to-point tests between rank pairs instead of a collective. */
enum rb_p2p {
	RB_P2P_NONE,
	RB_P2P_BW,   /* ib_write_bw: even rank sends, odd rank receives */
	RB_P2P_BIBW, /* ib_write_bw -b: both directions at once */
	RB_P2P_LAT,  /* ib_write_lat: ping-pong, half the round trip */
	RB_P2P_NR,
};

extern const char *const rb_p2p_names[RB_P2P_NR];

enum rb_coll {
	RB_COLL_ALL_REDUCE,
	RB_COLL_ALL_GATHER,
	RB_COLL_REDUCE_SCATTER,
	RB_COLL_BROADCAST,
	RB_COLL_REDUCE,
	RB_COLL_ALLTOALL,
	RB_COLL_SENDRECV,
	RB_COLL_NR,
};

/* Same order and values as ncclDataType_t, so the NCCL mode maps them one to one. */
enum rb_type {
	RB_INT8,
	RB_UINT8,
	RB_INT32,
	RB_UINT32,
	RB_INT64,
	RB_UINT64,
	RB_HALF,
	RB_FLOAT,
	RB_DOUBLE,
	RB_BF16,
	RB_F8E4M3,
	RB_F8E5M2,
	RB_TYPE_NR,
};

/* ncclSum..ncclAvg have these values; MULSUM is a PreMulSum op made per communicator. */
enum rb_op {
	RB_OP_SUM,
	RB_OP_PROD,
	RB_OP_MAX,
	RB_OP_MIN,
	RB_OP_AVG,
	RB_OP_MULSUM,
	RB_OP_NR,
};

struct rb_coll_info {
	const char *name; /* printed and accepted: "all_reduce" */
	const char *perf; /* the nccl-tests binary with the same semantics */
	int reduces;	  /* takes -o */
	int rooted;	  /* takes -r */
};

struct rb_type_info {
	const char *name; /* as nccl-tests prints it */
	size_t size;
	int is_float;
	int is_signed;
	int exp_bits, mant_bits; /* floats only */
};

extern const struct rb_coll_info rb_colls[RB_COLL_NR];
extern const struct rb_type_info rb_types[RB_TYPE_NR];
extern const char *const rb_op_names[RB_OP_NR];

/* --min-time never runs more iterations than this per size and placement */
#define RB_MIN_TIME_MAX_ITERS 1000000

/* --net-dev values besides a device index */
#define RB_NET_DEV_AUTO (-1) /* local rank modulo the devices NCCL would use */
#define RB_NET_DEV_PAIR (-2) /* --p2p: pair k (ranks 2k, 2k+1) on device k modulo those */

/* Every flag, after parsing; *_set say the user gave the flag explicitly. */
struct rb_args {
	enum rb_mode mode;
	enum rb_coll coll;
	int nthreads, ngpus;
	size_t minbytes, maxbytes, stepbytes;
	long stepfactor;
	int iters, agg_iters, warmup_iters, cycles;
	int min_time_ms; /* --min-time: time each size at least this long (0: -n only) */
	int parallel_init;
	int check;
	unsigned ops;	/* bit per enum rb_op */
	unsigned types; /* bit per enum rb_type */
	int root;
	int blocking;
	int stream_null;
	int timeout_s;
	int graph;
	int cputime;
	int timestamps;
	int average;
	int local_register;
	int cta_policy; /* -1: unset */
	int device_impl, device_ctas;
	int memory;
	long unalign;
	int per_iter, per_iter_skip;
	const char *json_path, *csv_path;
	int op_set, root_set, type_set;
	/* --net only (net_flag names the first one given, for the error under --nccl) */
	const char *plugin; /* --plugin: NULL = NCCL_NET_PLUGIN, else the built railnet */
	int net_api;	    /* --net-api: 0 = the newest ncclNetPlugin_vN exported */
	int net_dev;	    /* --net-dev: a device index, RB_NET_DEV_AUTO or RB_NET_DEV_PAIR */
	int merge;	    /* --merge: fuse the ports of one NIC with makeVDevice, as NCCL */
	int slots;	    /* --slots: requests in flight per direction */
	size_t chunk;	    /* --chunk: bytes per isend/irecv */
	enum rb_p2p p2p;    /* --p2p */
	const char *netns;  /* --netns: join this network namespace after MPI_Init */
	const char *net_flag;
	const char *perf_name; /* invoked as an nccl-tests binary ("all_reduce_perf"), or NULL */
};

#define RB_PARSE_HELP 1
#define RB_PARSE_VERSION 2

/* Parse argv; 0 ok, RB_PARSE_HELP for -h, -1 with a one-line reason in err. Pure: no MPI. */
int rb_args_parse(int argc, char **argv, struct rb_args *a, char *err, size_t errlen);
/* "32M" -> 33554432. K/M/G (binary), optional B/iB; 0 or -1 with the reason. */
int rb_parse_size(const char *s, size_t *out, char *err, size_t errlen);
void rb_usage(FILE *f, const char *prog);
/* The "# nThread ..." line (no newline). */
void rb_args_describe(const struct rb_args *a, char *buf, size_t len);

/* ---- collective layouts (fmt.c) ----------------------------------------------------------- */

/* Element counts of one call, as nccl-tests derives them from a size. */
struct rb_layout {
	size_t count;	    /* the count argument of the NCCL call ("count" column) */
	size_t sendcount;   /* elements in each rank's send buffer */
	size_t recvcount;   /* elements in each rank's receive buffer */
	size_t send_ip_off; /* in-place: send pointer = recv + rank * this (elements) */
	size_t recv_ip_off; /* in-place: recv pointer = recv + rank * this (elements) */
};

void rb_coll_layout(enum rb_coll c, size_t bytes, size_t elt, int nranks, struct rb_layout *l);
/* Bytes the size column prints: max(send, recv) bytes. */
size_t rb_coll_size_bytes(const struct rb_layout *l, size_t elt);
/* algbw = this / time; busbw = algbw * rb_coll_busbw_factor. */
double rb_coll_alg_bytes(enum rb_coll c, const struct rb_layout *l, size_t elt, int nranks);
double rb_coll_busbw_factor(enum rb_coll c, int nranks);

/* ---- table formatting (fmt.c): everything returns the line without a newline ------------- */

/* Print v in width w: the first of %.2f/%.1f/%.0f that fits, else %.1e (w >= 7) or %.0e. */
void rb_fmt_num(char *buf, size_t len, double v, int width);
void rb_fmt_header(char *buf, size_t len, int line, int cputime, int timestamps);
/* Row preamble: size, count, type, redop, root. */
void rb_fmt_row_head(char *buf, size_t len, size_t size, size_t count, const char *type,
		     const char *redop, int root);
/* One placement half: time (us), algbw, busbw, #wrong (wrong < 0: unchecked, prints N/A). */
void rb_fmt_row_half(char *buf, size_t len, double time_us, double algbw, double busbw,
		     double wrong);
void rb_fmt_timestamp(char *buf, size_t len, time_t t);
void rb_fmt_footer(FILE *f, long oob, double avg_busbw, const char *bw_verdict, const char *prog);

/* ---- data (data.c) ------------------------------------------------------------------------ */

/* Fill rank's send data (l->sendcount elements) for check repetition `seed`. */
void rb_data_fill(enum rb_coll c, enum rb_type t, enum rb_op op, const struct rb_layout *l,
		  int nranks, int rank, int root, uint64_t seed, void *send);
/* Expected receive data (l->recvcount elements); returns 0 when rank's output is unchecked
 * (reduce on a non-root rank), 1 otherwise. */
int rb_data_expect(enum rb_coll c, enum rb_type t, enum rb_op op, const struct rb_layout *l,
		   int nranks, int rank, int root, uint64_t seed, void *expect);
/* Threads (this one included, 1-64) that fill and expect use: one per slice of >= 1 Mi elements. */
void rb_data_set_threads(int n);
/* Number of elements of got that differ from expect (bitwise; a tolerance for float avg). */
size_t rb_data_compare(enum rb_type t, enum rb_op op, int nranks, const void *got,
		       const void *expect, size_t n);
/* Element helpers used by the checker and its tests. */
uint64_t rb_data_encode(enum rb_type t, double v);
double rb_data_decode(enum rb_type t, uint64_t bits);
uint64_t rb_data_load(enum rb_type t, const void *buf, size_t i);
void rb_data_store(enum rb_type t, void *buf, size_t i, uint64_t bits);
/* Contribution of `rank` to element g of a reduction, and the exact result. */
uint64_t rb_data_red_value(enum rb_type t, enum rb_op op, uint64_t seed, size_t g, int rank,
			   int nranks);
uint64_t rb_data_red_result(enum rb_type t, enum rb_op op, uint64_t seed, size_t g, int nranks);
/* The PreMulSum scalar used for -o mulsum. */
#define RB_MULSUM_SCALAR 2

/* ---- results and writers (out.c) ---------------------------------------------------------- */

struct rb_half {
	double time_us, algbw, busbw;
	double wrong; /* -1: unchecked */
	int iters;    /* timed iterations (-n, or more for --min-time) */
};

struct rb_row {
	size_t size, count;
	enum rb_type type;
	enum rb_op op; /* RB_OP_NR: none */
	int root;      /* -1: not rooted */
	struct rb_half oop, ip;
	char timestamp[32];
};

struct rb_device {
	int rank, group, pid, device;
	char host[64];
	char pci[16]; /* "0000:1b:00" */
	char name[96];
};

struct rb_run_info {
	const char *mode; /* "nccl" | "net" */
	const char *prog; /* "railnet-bench" */
	enum rb_coll coll;
	int nranks, nprocs;
	int nccl_headers, nccl_library; /* 0 when not built with NCCL */
	int cuda_runtime, cuda_driver;
	char host[64], kernel[128], cpu[128];
	char start_time[32], end_time[32];
	int argc;
	char **argv;
	char **envp; /* environment strings recorded (NCCL_*, RAILNET_*, ...); NULL-terminated */
	const struct rb_args *args;
	const struct rb_device *devices;
	int ndevices;
	const struct rb_row *rows;
	int nrows;
	long oob;
	double avg_busbw;
	const char *bw_verdict; /* "" unchecked, "OK", "FAILED" */
	const char *error;	/* NULL or the last error */
	char mode_info[384];	/* one line the mode adds to the header ("" none) */
};

/* 0 or -errno. The files are written whole at the end of the run. */
int rb_write_json(FILE *f, const struct rb_run_info *r);
int rb_write_csv(FILE *f, const struct rb_run_info *r);
/* Name of the combined-time policy (-a). */
const char *rb_average_name(int a);

/* ---- modes -------------------------------------------------------------------------------- */

struct rb_ctx;

/*
 * One benchmark mode. The harness (bench.c) calls, in order: validate (before MPI), open,
 * [max_bytes], alloc, then per call start/group/wait and put/get for the checks, and close.
 * Each returns 0 or an enum rb_exit value after printing its reason to stderr.
 */
struct rb_mode_ops {
	const char *name;
	/* NULL when this mode is compiled in; otherwise the sentence that says why not. */
	const char *missing;
	int (*validate)(const struct rb_args *a, char *err, size_t errlen);
	int (*open)(struct rb_ctx *c);
	size_t (*max_bytes)(struct rb_ctx *c); /* per buffer; 0: no limit */
	int (*alloc)(struct rb_ctx *c, size_t bytes);
	int (*group_start)(struct rb_ctx *c);
	int (*group_end)(struct rb_ctx *c);
	/* Enqueue one call on local device i; send/recv are byte offsets into its buffers. */
	int (*start)(struct rb_ctx *c, int i, size_t send_off, int send_in_recv, size_t recv_off,
		     const struct rb_layout *l, enum rb_type t, enum rb_op op, int root);
	int (*wait)(struct rb_ctx *c);
	/* Copy host bytes to/from local device i's send (which = 0) or recv (1) buffer. */
	int (*put)(struct rb_ctx *c, int i, int which, size_t off, const void *src, size_t n);
	int (*get)(struct rb_ctx *c, int i, int which, size_t off, void *dst, size_t n);
	int (*zero)(struct rb_ctx *c, int i, int which, size_t n);
	/* NULL when (type, op) can run on this communicator, else why not (the row is skipped
	 * with that reason as a comment line). Optional. */
	const char *(*unsupported)(struct rb_ctx *c, enum rb_type t, enum rb_op op);
	void (*describe)(struct rb_ctx *c, int i, struct rb_device *d);
	void (*versions)(struct rb_ctx *c, struct rb_run_info *r);
	const char *(*last_error)(struct rb_ctx *c);
	void (*close)(struct rb_ctx *c);
	/* Optional: a test that is not a collective sweep (--net --p2p). Called after alloc in
	 * place of the sweep; prints its own table on world rank 0; returns an exit code. */
	int (*run)(struct rb_ctx *c);
	/* Optional: the longest single operation this rank ran, in seconds (warm-up, timed and
	 * check runs alike); the footer prints the largest over the ranks. */
	double (*slowest)(struct rb_ctx *c);
	/* Optional: called on every rank, outside the timing, before the harness blocks in an
	 * MPI collective after operations: returns once every rank's operations are done. */
	int (*quiesce)(struct rb_ctx *c);
};

extern const struct rb_mode_ops rb_mode_nccl;
extern const struct rb_mode_ops rb_mode_net;	 /* --net collectives (mode_net.c) */
extern const struct rb_mode_ops rb_mode_net_p2p; /* --net --p2p (net_p2p.c) */

/* State shared by the harness and the mode. */
struct rb_ctx {
	const struct rb_args *args;
	const struct rb_mode_ops *ops;
	int wrank, wsize; /* MPI_COMM_WORLD */
	int local_rank;	  /* among the processes on this host */
	int local_size;
	int nranks; /* communicator ranks = wsize * ngpus */
	int ndev;   /* local devices = ngpus */
	void *mode; /* the mode's private state */
};

/* Run the benchmark (bench.c); returns the process exit code. */
int rb_bench_main(int argc, char **argv);

#endif
