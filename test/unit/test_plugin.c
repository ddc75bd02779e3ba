// SPDX-License-Identifier: Apache-2.0
/*
 * The exported ABI, exercised the way NCCL does: dlopen the built libnccl-net-railnet.so,
 * take each ncclNetPlugin_vN table (v6 … v12) and walk init/devices/getProperties/finalize.
 * Properties are fetched into a sentinel-filled buffer and compared, member by member at that
 * version's offsets, with the v12 answer; nothing may be written past the version's size.
 * Also: a missing libibverbs (init fails with one WARN through the logger NCCL passed), the
 * system libibverbs on a NIC-less machine (0 devices, one INFO line), NCCL_IB_DISABLE, a bad
 * environment value, reference counting, and NULL / out-of-range arguments at every entry
 * point of every version (an error code and a WARN naming the argument, never a crash).
 * Without root: one softverbs device on a view whose GID is 127.0.0.1 on lo (its properties
 * at every version, a send and a receive comm connected to each other, and the last finalize
 * with orphaned registrations and with a comm left open).
 * Each case loads its own copy of the library and checks it really unloads at dlclose.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl_net.h"
#include "railnet/log.h"
#include "rn_test.h"
#include "rn_test_sv.h"

#define MISSING_IBVERBS "/nonexistent/railnet-test/libibverbs.so.1"
#define SENTINEL 0xA5
#define BOGUS ((void *)&rn_bogus_object)

static int rn_bogus_object[64]; /* a pointer railnet never handed out */

/* ---- one loaded copy of the plugin, at one API version ------------------------------------ */

struct plug {
	int v;
	void *lib;
	const void *table;
	const ncclNet_v12_t *v12; /* the same load's v12 table: the reference answer */
	void *ctx;		  /* v11+ */
};

#define NET(p, N) ((const ncclNet_v##N##_t *)(p)->table)
#define EACH_VERSION(p, CALL)       \
	switch ((p)->v) {           \
	case 6:                     \
		return CALL(p, 6);  \
	case 7:                     \
		return CALL(p, 7);  \
	case 8:                     \
		return CALL(p, 8);  \
	case 9:                     \
		return CALL(p, 9);  \
	case 10:                    \
		return CALL(p, 10); \
	case 11:                    \
		return CALL(p, 11); \
	default:                    \
		return CALL(p, 12); \
	}

static void plug_open(struct plug *p, int v)
{
	char sym[32];

	memset(p, 0, sizeof(*p));
	p->v = v;
	p->lib = dlopen(rn_test_plugin_so(), RTLD_NOW | RTLD_LOCAL);
	if (!p->lib)
		fail_msg("dlopen(%s): %s", rn_test_plugin_so(), dlerror());
	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
	p->table = dlsym(p->lib, sym);
	if (!p->table)
		fail_msg("dlsym(%s): %s", sym, dlerror());
	p->v12 = dlsym(p->lib, "ncclNetPlugin_v12");
	assert_non_null(p->v12);
}

/* dlclose, and check the library really left the process (nothing pins it). */
static void plug_close(struct plug *p)
{
	void *again;

	assert_int_equal(dlclose(p->lib), 0);
	again = dlopen(rn_test_plugin_so(), RTLD_NOW | RTLD_NOLOAD);
	if (again) {
		dlclose(again);
		fail_msg("v%d: %s still loaded after dlclose", p->v, rn_test_plugin_so());
	}
	p->lib = NULL;
}

/*
 * A logger of NCCL's exact type that forwards to the capturing logger of rn_test.h, as the
 * plugin calls it through ncclDebugLogger_t.
 */
static void nccl_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void nccl_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rn_log_get_logger()((int)level, flags, file, line, "%s", msg);
}

static ncclDebugLogger_t capture_logger(void)
{
	rn_test_log_capture();
	return nccl_logger;
}

static ncclResult_t plug_init(struct plug *p, ncclDebugLogger_t lg)
{
	ncclNetCommConfig_v12_t c12 = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	ncclNetCommConfig_v11_t c11 = { .trafficClass = 3 };

	switch (p->v) {
	case 12:
		return NET(p, 12)->init(&p->ctx, 0x1234, &c12, lg, NULL);
	case 11:
		return NET(p, 11)->init(&p->ctx, 0x5678, &c11, lg, NULL);
	case 10:
		return NET(p, 10)->init(lg, NULL);
	case 9:
		return NET(p, 9)->init(lg);
	case 8:
		return NET(p, 8)->init(lg);
	case 7:
		return NET(p, 7)->init(lg);
	default:
		return NET(p, 6)->init(lg);
	}
}

#define DEVICES(p, N) NET(p, N)->devices(ndev)
static ncclResult_t plug_devices(struct plug *p, int *ndev)
{
	EACH_VERSION(p, DEVICES)
}

#define PROPS(p, N) NET(p, N)->getProperties(dev, buf)
static ncclResult_t plug_props(struct plug *p, int dev, void *buf)
{
	EACH_VERSION(p, PROPS)
}

/* v11+: finalize the one ctx; older versions have no finalize (the destructor does it). */
static ncclResult_t plug_finalize(struct plug *p)
{
	if (p->v == 12)
		return NET(p, 12)->finalize(p->ctx);
	if (p->v == 11)
		return NET(p, 11)->finalize(p->ctx);
	return ncclSuccess;
}

/* ---- properties layout per version ------------------------------------------------------- */

struct field {
	const char *name;
	size_t off;
	size_t size;
};

#define FLD(T, m)                                       \
	{                                               \
#m, offsetof(T, m), sizeof(((T *)0)->m) \
	}
#define F_BASE(T)                                                                       \
	FLD(T, name), FLD(T, pciPath), FLD(T, guid), FLD(T, ptrSupport), FLD(T, speed), \
		FLD(T, port), FLD(T, latency), FLD(T, maxComms), FLD(T, maxRecvs)
#define F_DEV(T) FLD(T, netDeviceType), FLD(T, netDeviceVersion)
#define F_V9(T)                                                                       \
	FLD(T, regIsGlobal), FLD(T, forceFlush), FLD(T, vProps), FLD(T, maxP2pBytes), \
		FLD(T, maxCollBytes)

static const struct field f_v6[] = { F_BASE(ncclNetProperties_v6_t) };
static const struct field f_v7[] = { F_BASE(ncclNetProperties_v7_t),
				     F_DEV(ncclNetProperties_v7_t) };
static const struct field f_v8[] = { F_BASE(ncclNetProperties_v8_t), F_DEV(ncclNetProperties_v8_t),
				     FLD(ncclNetProperties_v8_t, regIsGlobal) };
static const struct field f_v9[] = { F_BASE(ncclNetProperties_v9_t), F_DEV(ncclNetProperties_v9_t),
				     F_V9(ncclNetProperties_v9_t) };
static const struct field f_v10[] = { F_BASE(ncclNetProperties_v10_t),
				      F_DEV(ncclNetProperties_v10_t),
				      F_V9(ncclNetProperties_v10_t) };
static const struct field f_v11[] = { F_BASE(ncclNetProperties_v11_t),
				      F_DEV(ncclNetProperties_v11_t), F_V9(ncclNetProperties_v11_t),
				      FLD(ncclNetProperties_v11_t, maxMultiRequestSize) };
static const struct field f_v12[] = {
	F_BASE(ncclNetProperties_v12_t),      F_DEV(ncclNetProperties_v12_t),
	F_V9(ncclNetProperties_v12_t),	      FLD(ncclNetProperties_v12_t, maxMultiRequestSize),
	FLD(ncclNetProperties_v12_t, railId), FLD(ncclNetProperties_v12_t, planeId)
};

struct layout {
	size_t size;
	const struct field *f;
	size_t nf;
};

#define LAYOUT(N)                                                                              \
	{                                                                                      \
		sizeof(ncclNetProperties_v##N##_t), f_v##N, sizeof(f_v##N) / sizeof(f_v##N[0]) \
	}
static const struct layout layouts[13] = {
	[6] = LAYOUT(6),   [7] = LAYOUT(7),   [8] = LAYOUT(8),	 [9] = LAYOUT(9),
	[10] = LAYOUT(10), [11] = LAYOUT(11), [12] = LAYOUT(12),
};

static const struct field *find_field(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->nf; i++)
		if (!strcmp(l->f[i].name, name))
			return &l->f[i];
	fail_msg("no field %s in the v12 layout", name);
	return NULL;
}

/* The v12 answer must be sane on its own before it can judge the others. */
static void check_reference(const ncclNetProperties_v12_t *r, int dev)
{
	assert_non_null(r->name);
	assert_true(strlen(r->name) > 0);
	assert_true(r->ptrSupport & NCCL_PTR_HOST);
	assert_true(r->speed > 0);
	assert_true(r->port >= 1);
	assert_true(r->maxComms > 0);
	assert_true(r->maxRecvs >= 1 && r->maxRecvs <= 8);
	assert_int_equal(r->netDeviceType, NCCL_NET_DEVICE_HOST);
	assert_int_equal(r->netDeviceVersion, 0);
	/* a base device lists itself; a virtual one its (lower-numbered) children */
	assert_true(r->vProps.ndevs >= 1 && r->vProps.ndevs <= NCCL_NET_MAX_DEVS_PER_NIC_V12);
	if (r->vProps.ndevs == 1)
		assert_int_equal(r->vProps.devs[0], dev);
	for (int i = 0; i < r->vProps.ndevs && r->vProps.ndevs > 1; i++)
		assert_true(r->vProps.devs[i] >= 0 && r->vProps.devs[i] < dev);
	assert_true(r->maxP2pBytes > 0 && r->maxP2pBytes <= NCCL_MAX_NET_SIZE_BYTES);
	assert_true(r->maxCollBytes > 0 && r->maxCollBytes <= NCCL_MAX_NET_SIZE_BYTES);
	assert_int_equal(r->maxMultiRequestSize, 1);
	/* registrations are cached per device and outlive their comm; NCCL decides on flushes */
	assert_int_equal(r->regIsGlobal, 1);
	assert_int_equal(r->forceFlush, 0);
	/* rails: the subnet's number or NCCL_IB_HCA's (0..32767), else undefined */
	assert_true(r->railId >= NCCL_NET_ID_UNDEF);
	/* planes: NCCL_IB_HCA's for a device, NCCL IB's virtual-bit mask for a merged one */
	if (r->vProps.ndevs > 1)
		assert_true(r->planeId & 0x4000);
	else
		assert_true(r->planeId >= NCCL_NET_ID_UNDEF && r->planeId < 0x4000);
}

/* getProperties(dev) of p's version: every member at its own offset, nothing past the end. */
static void check_props(struct plug *p, int dev)
{
	const struct layout *l = &layouts[p->v], *ref = &layouts[12];
	unsigned char buf[256];
	ncclNetProperties_v12_t want;

	memset(&want, 0, sizeof(want));
	assert_int_equal(p->v12->getProperties(dev, &want), ncclSuccess);
	check_reference(&want, dev);

	memset(buf, SENTINEL, sizeof(buf));
	assert_int_equal(plug_props(p, dev, buf), ncclSuccess);
	for (size_t i = 0; i < l->nf; i++) {
		const struct field *f = &l->f[i], *g = find_field(ref, f->name);
		/* vProps is 20 bytes before v12: its ndevs and first four children compare. */
		size_t n = f->size < g->size ? f->size : g->size;

		if (memcmp(buf + f->off, (const unsigned char *)&want + g->off, n))
			fail_msg("v%d dev %d: %s at offset %zu differs from v12's", p->v, dev,
				 f->name, f->off);
	}
	for (size_t i = l->size; i < sizeof(buf); i++)
		if (buf[i] != SENTINEL)
			fail_msg("v%d: getProperties wrote byte %zu, past the %zu-byte struct",
				 p->v, i, l->size);
}

/* A failing getProperties must leave the caller's buffer as it was. */
static void check_props_refused(struct plug *p, int dev)
{
	unsigned char buf[256];

	memset(buf, SENTINEL, sizeof(buf));
	assert_int_equal(plug_props(p, dev, buf), ncclInvalidArgument);
	for (size_t i = 0; i < sizeof(buf); i++)
		if (buf[i] != SENTINEL)
			fail_msg("v%d: failed getProperties(%d) wrote byte %zu", p->v, dev, i);
}

/* ---- expectations on error returns ------------------------------------------------------ */

/* `rc` must be `want`, and a WARN containing `needle` (if any) must have arrived. */
static void expect_warn(const char *what, ncclResult_t rc, ncclResult_t want, int warns_before,
			const char *needle)
{
	if (rc != want)
		fail_msg("%s returned %d, expected %d", what, rc, want);
	if (rn_test_log.warns <= warns_before)
		fail_msg("%s failed without a WARN", what);
	if (needle && !strstr(rn_test_log.last_warn, needle))
		fail_msg("%s: WARN \"%s\" does not name \"%s\"", what, rn_test_log.last_warn,
			 needle);
}

#define EXPECT(call, want, needle)                                \
	do {                                                      \
		int w_ = rn_test_log.warns;                       \
		expect_warn(#call, (call), (want), w_, (needle)); \
	} while (0)

/*
 * The system libibverbs (RN_SYSTEM_IBVERBS, found by CMake) as the plugin's library. It is a
 * build dependency (tools/install-deps.sh), so its absence fails the test instead of skipping.
 */
static const char *sys_ibverbs(void)
{
	const char *p = getenv("RN_SYSTEM_IBVERBS");

	if (!p || !*p || access(p, R_OK))
		fail_msg("the system libibverbs.so.1 was not found (RN_SYSTEM_IBVERBS='%s'): "
			 "install libibverbs1",
			 p ? p : "");
	return p;
}

static void use_system_verbs(void)
{
	setenv("RAILNET_IBVERBS_LIB", sys_ibverbs(), 1);
}

static int setup(void **state)
{
	(void)state;
	unsetenv("NCCL_IB_DISABLE");
	unsetenv("NCCL_IB_TIMEOUT");
	unsetenv("RAILNET_IBVERBS_LIB");
	unsetenv("RAILNET_SYSFS_ROOT");
	unsetenv("RAILNET_STATS");
	unsetenv("SOFTVERBS_VIEW");
	unsetenv("NCCL_SOCKET_IFNAME");
	return 0;
}

/* ---- the cases -------------------------------------------------------------------------- */

static void test_tables(void **state)
{
	(void)state;
	for (int v = 6; v <= 12; v++) {
		struct plug p;
		const ncclNet_v6_t *t6;

		plug_open(&p, v);
		/* Every version starts with v6's 17 members; no table may leave one NULL. */
		t6 = p.table;
		assert_string_equal(t6->name, "railnet");
		assert_non_null(t6->init);
		assert_non_null(t6->devices);
		assert_non_null(t6->getProperties);
		assert_non_null(t6->listen);
		assert_non_null(t6->connect);
		assert_non_null(t6->accept);
		assert_non_null(t6->regMr);
		assert_non_null(t6->regMrDmaBuf);
		assert_non_null(t6->deregMr);
		assert_non_null(t6->isend);
		assert_non_null(t6->irecv);
		assert_non_null(t6->iflush);
		assert_non_null(t6->test);
		assert_non_null(t6->closeSend);
		assert_non_null(t6->closeRecv);
		assert_non_null(t6->closeListen);
		if (v >= 7) {
			const ncclNet_v7_t *t7 = p.table;

			assert_null(t7->getDeviceMr);	/* host plugin */
			assert_null(t7->irecvConsumed); /* host plugin */
		}
		if (v >= 9)
			assert_non_null(((const ncclNet_v9_t *)p.table)->makeVDevice);
		if (v >= 11) {
			const ncclNet_v11_t *t11 = p.table;

			assert_non_null(t11->finalize); /* core never NULL-checks it */
			assert_non_null(t11->setNetAttr);
		}
		/* Nothing but the tables is visible. */
		assert_null(dlsym(p.lib, "rn_net_init"));
		assert_null(dlsym(p.lib, "rn_log"));
		assert_null(dlsym(p.lib, "rn_config_acquire"));
		plug_close(&p);
	}
}

/* Every line railnet gave NCCL's logger so far starts with "NET/railnet : " (README). */
static void check_prefixed(void)
{
	const char *l = rn_test_log.all;
	int n = 0;

	while (*l) {
		const char *e = strchr(l, '\n');

		if (e != l && strncmp(l, "NET/railnet : ", 14))
			fail_msg("a log line without the NET/railnet prefix: %.*s",
				 (int)(e ? e - l : (long)strlen(l)), l);
		n += e != l;
		if (!e)
			break;
		l = e + 1;
	}
	assert_true(n > 0);
}

static void test_system_verbs_no_device(void **state)
{
	(void)state;
	use_system_verbs();
	for (int v = 6; v <= 12; v++) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;
		int n = -1, warns;

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclSuccess);
		RN_ASSERT_NO_WARN();
		assert_int_equal(plug_devices(&p, &n), ncclSuccess);
		assert_true(n >= 0);
		if (n == 0) {
			char needle[600];

			snprintf(needle, sizeof(needle), "no RDMA device found by %s",
				 sys_ibverbs());
			if (!rn_test_log_contains(needle) && !rn_test_log_contains("none usable"))
				fail_msg("v%d: no INFO line says why there is no device:\n%s", v,
					 rn_test_log.all);
			check_props_refused(&p, 0);
			assert_int_equal(rn_test_log.warns, 1);
		} else {
			for (int d = 0; d < n; d++)
				check_props(&p, d);
			check_props_refused(&p, n);
		}
		check_prefixed();
		assert_int_equal(plug_finalize(&p), ncclSuccess);
		if (v >= 11) {
			/* The last finalize gave the logger back: this WARN goes to stderr. */
			warns = rn_test_log.warns;
			assert_int_not_equal(plug_devices(&p, &n), ncclSuccess);
			assert_int_equal(rn_test_log.warns, warns);
		}
		plug_close(&p);
	}
}

static void test_missing_verbs(void **state)
{
	(void)state;
	setenv("RAILNET_IBVERBS_LIB", MISSING_IBVERBS, 1);
	for (int v = 6; v <= 12; v++) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;
		int n;

		plug_open(&p, v);
		p.ctx = BOGUS;
		assert_int_equal(plug_init(&p, lg), ncclSystemError);
		assert_int_equal(rn_test_log.warns, 1);
		if (!strstr(rn_test_log.last_warn, MISSING_IBVERBS))
			fail_msg("v%d: the WARN does not name the library: %s", v,
				 rn_test_log.last_warn);
		assert_ptr_equal(p.ctx, BOGUS); /* output untouched on failure */
		/* Nothing stayed acquired and the logger went back to stderr. */
		assert_int_equal(plug_devices(&p, &n), ncclInternalError);
		assert_int_equal(rn_test_log.warns, 1);
		/* A second attempt fails the same way, from a clean state. */
		assert_int_equal(plug_init(&p, lg), ncclSystemError);
		assert_int_equal(rn_test_log.warns, 2);
		plug_close(&p);
	}
}

/*
 * The fake library's device has two ACTIVE Ethernet ports whose GIDs are ::0 .. ::15: none is
 * an address of this network namespace, so discovery keeps no port and says why (INFO, no
 * WARN). Positive property checks on real discovered devices: test_discovered_devices.
 */
static void test_fake_device(void **state)
{
	const char *dir = getenv("RN_FAKE_VERBS_DIR");
	char lib[4096];

	(void)state;
	if (!dir)
		fail_msg("RN_FAKE_VERBS_DIR is not set (ctest sets it)");
	snprintf(lib, sizeof(lib), "%s/libfake_verbs_opt.so", dir);
	if (access(lib, R_OK))
		fail_msg("%s is not built (test/unit/verbs.cmake builds it with test_plugin)", lib);
	setenv("RAILNET_IBVERBS_LIB", lib, 1);
	for (int v = 6; v <= 12; v++) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;
		int n = -1;

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclSuccess);
		RN_ASSERT_NO_WARN();
		assert_int_equal(plug_devices(&p, &n), ncclSuccess);
		assert_int_equal(n, 0);
		assert_true(rn_test_log_contains("no usable RoCE v2 IPv4 GID among 16 entries"));
		assert_true(rn_test_log_contains("no usable port"));
		check_props_refused(&p, 0);
		assert_int_equal(plug_finalize(&p), ncclSuccess);
		plug_close(&p);
	}
	unsetenv("RAILNET_IBVERBS_LIB");
}

/*
 * Devices really discovered: run by test/rails/ inside a softverbs pod (real network
 * namespace, RAILNET_SYSFS_ROOT set) with RN_TEST_IBVERBS_LIB=softverbs' library and
 * RN_TEST_EXPECT_DEVICES=N,
 * the number of devices v9+ must see. Every version's props are checked field by field
 * against v12's; merging, refused merges and the data-path message on the way. Run as
 * `test_plugin discovered`; it fails where RN_TEST_EXPECT_DEVICES is unset.
 */
static void test_discovered_devices(void **state)
{
	const char *want = getenv("RN_TEST_EXPECT_DEVICES");
	const char *lib = getenv("RN_TEST_IBVERBS_LIB");
	const char *rails = getenv("RN_TEST_EXPECT_RAILS");
	int expect;

	(void)state;
	if (!want || !lib)
		fail_msg("run inside a softverbs pod with RN_TEST_EXPECT_DEVICES and "
			 "RN_TEST_IBVERBS_LIB set (test/rails/scenarios.sh does)");
	setenv("RAILNET_IBVERBS_LIB", lib, 1);
	expect = atoi(want);
	for (int v = 6; v <= 12; v++) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;
		int n = -1;

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclSuccess);
		RN_ASSERT_NO_WARN();
		assert_int_equal(plug_devices(&p, &n), ncclSuccess);
		if (v >= 9)
			assert_int_equal(n, expect);
		else
			assert_true(n >= 1 && n <= expect);
		for (int d = 0; d < n && v >= 9; d++)
			check_props(&p, d);
		check_props_refused(&p, n);
		/* GPUDirect RDMA off on the node (small.spec has no gdr=): the reason once, each
		 * NIC's line pointing at it (it was repeated per NIC) */
		if (v >= 9 && rn_test_log_contains("GPUDirect RDMA unavailable")) {
			const char *q = rn_test_log.all;
			int reasons = 0;

			while ((q = strstr(q, "GPUDirect RDMA unavailable:")))
				reasons++, q++;
			assert_int_equal(reasons, 1);
			assert_true(rn_test_log_contains(": host (GPUDirect RDMA unavailable on "
							 "this node, as logged above)"));
		}
		/* RN_TEST_EXPECT_RAILS: the railId of each device, comma separated (v12) */
		for (int d = 0; v == 12 && rails && d < n; d++) {
			ncclNetProperties_v12_t r;
			const char *q = rails;

			for (int k = 0; k < d && q; k++)
				q = strchr(q, ',') ? strchr(q, ',') + 1 : NULL;
			assert_non_null(q);
			assert_int_equal(NET(&p, 12)->getProperties(d, &r), ncclSuccess);
			assert_int_equal(r.railId, atoi(q));
			assert_int_equal(r.planeId, NCCL_NET_ID_UNDEF);
		}
		if (v == 12 && n >= 2) {
			ncclNetVDeviceProps_v12_t vp = { .ndevs = 2, .devs = { 0, 0 } };
			ncclNetProperties_v12_t a, b, m;
			void *lc = BOGUS;
			char handle[NCCL_NET_HANDLE_MAXSIZE];
			int d = -7, n2 = -1;

			EXPECT(NET(&p, 12)->makeVDevice(&d, &vp), ncclInvalidArgument, "twice");
			vp.devs[1] = n;
			EXPECT(NET(&p, 12)->makeVDevice(&d, &vp), ncclInvalidArgument,
			       "out of range");
			assert_int_equal(d, -7);
			vp.devs[1] = 1;
			assert_int_equal(NET(&p, 12)->getProperties(0, &a), ncclSuccess);
			assert_int_equal(NET(&p, 12)->getProperties(1, &b), ncclSuccess);
			if (NET(&p, 12)->makeVDevice(&d, &vp) == ncclSuccess) {
				char name[256];

				assert_int_equal(d, n);
				assert_int_equal(NET(&p, 12)->devices(&n2), ncclSuccess);
				assert_int_equal(n2, n + 1);
				assert_int_equal(NET(&p, 12)->getProperties(d, &m), ncclSuccess);
				snprintf(name, sizeof(name), "%s+%s", a.name, b.name);
				assert_string_equal(m.name, name);
				assert_int_equal(m.speed, a.speed + b.speed);
				assert_int_equal(m.vProps.ndevs, 2);
				assert_int_equal(m.vProps.devs[0], 0);
				assert_int_equal(m.vProps.devs[1], 1);
				/* NCCL IB's merge: a rail only when the children share it; the plane
				 * mask of the children's (undefined: index 0) planes */
				assert_int_equal(m.railId, a.railId == b.railId ? a.railId : -1);
				assert_int_equal(m.planeId, 0x4001);
				check_props(&p, d);
			} else {
				assert_true(strstr(rn_test_log.last_warn, "refused") != NULL);
			}
			/* A valid device listens; its listenComm closes unaccepted. */
			assert_int_equal(NET(&p, 12)->listen(p.ctx, 0, handle, &lc), ncclSuccess);
			assert_ptr_not_equal(lc, BOGUS);
			assert_non_null(lc);
			assert_int_equal(NET(&p, 12)->closeListen(lc), ncclSuccess);
		}
		assert_int_equal(plug_finalize(&p), ncclSuccess);
		plug_close(&p);
	}
}

/*
 * A device without root or a network namespace: softverbs (build/softverbs) on a one-device,
 * one-port pod view from sv-mkview whose port's GID 1 is 127.0.0.1 on lo, an address of every
 * network namespace, so discovery keeps it; the bootstrap interface is lo. softverbs is built
 * with the plugin wherever the verbs header is (tools/install-deps.sh), so its absence fails.
 */
static char loopback_dir[256]; /* made once, removed at exit */

static void write_text(const char *dir, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static const char *use_loopback_device(void)
{
	char lib[4096], path[512];

	snprintf(lib, sizeof(lib), "%s/softverbs/libibverbs.so.1", rn_test_build_dir());
	if (access(lib, R_OK))
		fail_msg("%s is not built (softverbs/; test/unit/plugin.cmake builds it with "
			 "test_plugin)",
			 lib);
	if (!loopback_dir[0]) {
		/*
		 * Loaded for the whole process, as libmlx5 (RTLD_NODELETE, bound to it) pins it in
		 * the other softverbs tests: softverbs frees nothing of its view at unload.
		 */
		if (!dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
			fail_msg("dlopen(%s): %s", lib, dlerror());
		assert_int_equal(
			rn_test_sv_mkview("plugin", 1, 1, 100, loopback_dir, sizeof(loopback_dir)),
			0);
		write_text(loopback_dir, "class/infiniband/svdev0/ports/1/gids/1",
			   "0000:0000:0000:0000:0000:ffff:7f00:0001\n");
		snprintf(path, sizeof(path), "%s/class/infiniband/svdev0/ports/1/gid_attrs/ndevs",
			 loopback_dir);
		assert_int_equal(mkdir(path, 0755), 0);
		write_text(loopback_dir, "class/infiniband/svdev0/ports/1/gid_attrs/ndevs/1",
			   "lo\n");
	}
	setenv("RAILNET_IBVERBS_LIB", lib, 1);
	setenv("SOFTVERBS_VIEW", loopback_dir, 1);
	setenv("RAILNET_SYSFS_ROOT", loopback_dir, 1);
	setenv("NCCL_SOCKET_IFNAME", "lo", 1);
	return loopback_dir;
}

/*
 * The loopback device through every table: one device, and its properties at every version
 * agree with v12's, which reports regIsGlobal = 1 and forceFlush = 0 (check_reference).
 */
static void test_loopback_device(void **state)
{
	(void)state;
	use_loopback_device();
	for (int v = 6; v <= 12; v++) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;
		int n = -1;

		char line[96];

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclSuccess);
		/* one INFO line at init: railnet's version and the API version NCCL took */
		snprintf(line, sizeof(line), "railnet %s (git ", RN_VERSION_STRING);
		assert_true(rn_test_log_contains(line));
		snprintf(line, sizeof(line), "), NCCL net API v%d", v);
		assert_true(rn_test_log_contains(line));
		assert_int_equal(plug_devices(&p, &n), ncclSuccess);
		assert_int_equal(n, 1);
		check_props(&p, 0);
		RN_ASSERT_NO_WARN();
		check_props_refused(&p, 1);
		assert_int_equal(rn_test_log.warns, 1); /* dev 1 is out of range */
		assert_int_equal(plug_finalize(&p), ncclSuccess);
		plug_close(&p);
	}
}

/* Connect dev 0 to itself through t (one thread drives both ends, as NCCL's proxy may). */
static void loopback_comms(const ncclNet_v12_t *t, void *ctx, void **sc, void **rc)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE], chandle[NCCL_NET_HANDLE_MAXSIZE];
	ncclNetDeviceHandle_v12_t *dh = NULL;
	void *lc = NULL;
	time_t t0 = time(NULL);

	*sc = *rc = NULL;
	assert_int_equal(t->listen(ctx, 0, handle, &lc), ncclSuccess);
	memcpy(chandle, handle, sizeof(chandle)); /* NCCL ships a copy to the connector */
	while (!*sc || !*rc) {
		if (!*sc)
			assert_int_equal(t->connect(ctx, 0, chandle, sc, &dh), ncclSuccess);
		if (!*rc)
			assert_int_equal(t->accept(lc, rc, &dh), ncclSuccess);
		if (time(NULL) - t0 > 10)
			fail_msg("connect/accept on the loopback device did not finish in 10 s");
	}
	assert_int_equal(t->closeListen(lc), ncclSuccess);
}

/* One message of len bytes from s to r; both requests tested until done (10 s hang guard). */
static void loopback_message(const ncclNet_v12_t *t, void *sc, void *rc, char *sbuf, void *smh,
			     char *rbuf, void *rmh, size_t len)
{
	void *data = rbuf, *sreq = NULL, *rreq = NULL;
	size_t size = len;
	int tag = 3, sdone = 0, rdone = 0, got = -1;
	time_t t0 = time(NULL);

	memset(rbuf, 0, len);
	for (size_t i = 0; i < len; i++)
		sbuf[i] = (char)(i * 7 + 1);
	while (!rreq) {
		assert_int_equal(t->irecv(rc, 1, &data, &size, &tag, &rmh, NULL, &rreq),
				 ncclSuccess);
		assert_true(time(NULL) - t0 <= 10);
	}
	while (!sreq) {
		assert_int_equal(t->isend(sc, sbuf, len, tag, smh, NULL, &sreq), ncclSuccess);
		assert_true(time(NULL) - t0 <= 10);
	}
	while (!sdone || !rdone) {
		if (!sdone)
			assert_int_equal(t->test(sreq, &sdone, NULL), ncclSuccess);
		if (!rdone)
			assert_int_equal(t->test(rreq, &rdone, &got), ncclSuccess);
		if (time(NULL) - t0 > 10)
			fail_msg("a %zu-byte message on the loopback device did not complete", len);
	}
	assert_int_equal(got, (int)len);
	assert_memory_equal(rbuf, sbuf, len);
}

/*
 * The last finalize with leftovers, through the v12 table on the loopback device. Comms
 * closed with registrations live: their handles become orphans (one INFO each at the close),
 * and the last finalize frees them with one INFO line giving the count. It also logs the
 * stats line (both connections, the bytes sent) and writes RAILNET_STATS. No WARN.
 */
static void test_finalize_orphans(void **state)
{
	static char sbuf[8192], rbuf[8192];
	char stats[300], json[8192];
	ncclNetCommConfig_v12_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	void *ctx, *sc, *rc, *smh = NULL, *rmh = NULL, *extra = NULL;
	ncclDebugLogger_t lg;
	struct plug p;
	size_t n;
	FILE *f;
	int ndev;

	(void)state;
	snprintf(stats, sizeof(stats), "%s/stats.json", use_loopback_device());
	setenv("RAILNET_STATS", stats, 1);
	lg = capture_logger();
	plug_open(&p, 12);
	assert_int_equal(NET(&p, 12)->init(&ctx, 7, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(NET(&p, 12)->devices(&ndev), ncclSuccess);
	assert_int_equal(ndev, 1);
	loopback_comms(NET(&p, 12), ctx, &sc, &rc);
	assert_int_equal(NET(&p, 12)->regMr(sc, sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh),
			 ncclSuccess);
	assert_int_equal(NET(&p, 12)->regMr(rc, rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh),
			 ncclSuccess);
	assert_int_equal(NET(&p, 12)->regMr(sc, sbuf, 100, NCCL_PTR_HOST, &extra), ncclSuccess);
	loopback_message(NET(&p, 12), sc, rc, sbuf, smh, rbuf, rmh, 4096);
	/* closed with all three registrations live */
	assert_int_equal(NET(&p, 12)->closeSend(sc), ncclSuccess);
	assert_int_equal(NET(&p, 12)->closeRecv(rc), ncclSuccess);
	assert_true(rn_test_log_contains("send comm closed with 2 registration(s) not "
					 "deregistered"));
	assert_true(rn_test_log_contains("receive comm closed with 1 registration(s) not "
					 "deregistered"));
	assert_false(rn_test_log_contains("finalize:"));
	assert_int_equal(NET(&p, 12)->finalize(ctx), ncclSuccess);
	if (!rn_test_log_contains("finalize: 3 registration handle(s) of closed comms were never "
				  "deregistered; freed"))
		fail_msg("no INFO line for the orphans at finalize:\n%s", rn_test_log.all);
	if (!rn_test_log_contains("stats: 2 connection(s), 4096 bytes sent, "))
		fail_msg("no stats line at finalize:\n%s", rn_test_log.all);
	assert_true(rn_test_log_contains("0 errors, 0 failovers; per port: svdev0:1 4096 B"));
	RN_ASSERT_NO_WARN();
	f = fopen(stats, "r");
	assert_non_null(f);
	n = fread(json, 1, sizeof(json) - 1, f);
	fclose(f);
	json[n] = '\0';
	assert_non_null(strstr(json, "\"version\": 2,"));
	assert_non_null(strstr(json, "\"nccl_net_api\": 12,"));
	assert_non_null(strstr(json, "\"connections_total\": 2,"));
	assert_non_null(strstr(json, "\"connections_not_listed\": 0,"));
	assert_non_null(strstr(json, "{\"device\": \"svdev0\", \"port\": 1, \"rail\": "));
	assert_non_null(strstr(json, "\"tx_bytes\": 4096,"));
	plug_close(&p);
}

/* LeakSanitizer's switches, defined only in sanitizer builds (weak: NULL elsewhere). */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));

/*
 * A send comm never closed (NCCL closes every comm first; a harness may not): its
 * registration is still cached on the device when the last finalize closes it, and is
 * released with exactly one WARN naming the device and the count. The comm itself is
 * unusable afterwards and stays allocated (the caller's leak, which LeakSanitizer is told to
 * ignore: what this thread allocates in the case).
 */
static void test_finalize_left_registrations(void **state)
{
	static char sbuf[8192], rbuf[8192];
	ncclNetCommConfig_v12_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	void *ctx, *sc, *rc, *smh = NULL, *rmh = NULL;
	ncclDebugLogger_t lg;
	struct plug p;
	int ndev;

	(void)state;
	if (__lsan_disable)
		__lsan_disable();
	use_loopback_device();
	lg = capture_logger();
	plug_open(&p, 12);
	assert_int_equal(NET(&p, 12)->init(&ctx, 8, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(NET(&p, 12)->devices(&ndev), ncclSuccess);
	assert_int_equal(ndev, 1);
	loopback_comms(NET(&p, 12), ctx, &sc, &rc);
	assert_int_equal(NET(&p, 12)->regMr(sc, sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh),
			 ncclSuccess);
	assert_int_equal(NET(&p, 12)->regMr(rc, rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh),
			 ncclSuccess);
	loopback_message(NET(&p, 12), sc, rc, sbuf, smh, rbuf, rmh, 1000);
	assert_int_equal(NET(&p, 12)->deregMr(rc, rmh), ncclSuccess);
	assert_int_equal(NET(&p, 12)->closeRecv(rc), ncclSuccess);
	RN_ASSERT_NO_WARN();
	assert_int_equal(NET(&p, 12)->finalize(ctx), ncclSuccess);
	if (rn_test_log.warns != 1 ||
	    !strstr(rn_test_log.last_warn,
		    "svdev0: 1 registration(s) still live when the device closes"))
		fail_msg("expected one WARN for the registration left on svdev0, got %d:\n%s",
			 rn_test_log.warns, rn_test_log.all);
	assert_false(rn_test_log_contains("finalize: ")); /* no orphans: nothing was closed */
	/* a comm's counters are taken at its close: only the receive comm's are there */
	assert_true(rn_test_log_contains("stats: 1 connection(s), 0 bytes sent"));
	plug_close(&p);
	if (__lsan_enable)
		__lsan_enable();
}

static void test_ib_disable(void **state)
{
	(void)state;
	use_system_verbs();
	setenv("NCCL_IB_DISABLE", "1", 1);
	for (int v = 6; v <= 12; v += 6) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclInvalidUsage);
		RN_ASSERT_NO_WARN();
		assert_true(rn_test_log_contains("NCCL_IB_DISABLE"));
		plug_close(&p);
	}
	unsetenv("NCCL_IB_DISABLE");
}

static void test_bad_config(void **state)
{
	(void)state;
	use_system_verbs();
	setenv("NCCL_IB_TIMEOUT", "abc", 1);
	for (int v = 6; v <= 12; v += 6) {
		ncclDebugLogger_t lg = capture_logger();
		struct plug p;

		plug_open(&p, v);
		assert_int_equal(plug_init(&p, lg), ncclInvalidUsage);
		assert_true(rn_test_log.warns >= 1);
		assert_true(rn_test_log_contains("NCCL_IB_TIMEOUT"));
		plug_close(&p);
	}
	unsetenv("NCCL_IB_TIMEOUT");
}

static void test_refcount(void **state)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = 5 };
	ncclDebugLogger_t lg;
	void *c1, *c2, *c3;
	struct plug p;
	int n, warns;

	(void)state;
	use_system_verbs();
	lg = capture_logger();
	plug_open(&p, 12);
	assert_int_equal(NET(&p, 12)->init(&c1, 1, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(NET(&p, 12)->init(&c2, 2, NULL, lg, NULL), ncclSuccess);
	assert_int_equal(NET(&p, 12)->init(&c3, 3, &cfg, lg, NULL), ncclSuccess);
	assert_true(c1 != c2 && c2 != c3 && c1 != c3);
	assert_int_equal(NET(&p, 12)->finalize(c2), ncclSuccess);
	assert_int_equal(NET(&p, 12)->devices(&n), ncclSuccess);
	EXPECT(NET(&p, 12)->finalize(c2), ncclInternalError, "not a live");
	assert_int_equal(NET(&p, 12)->finalize(c1), ncclSuccess);
	assert_int_equal(NET(&p, 12)->devices(&n), ncclSuccess);
	assert_int_equal(NET(&p, 12)->finalize(c3), ncclSuccess);
	warns = rn_test_log.warns;
	assert_int_equal(NET(&p, 12)->devices(&n), ncclInternalError);
	assert_int_equal(rn_test_log.warns, warns); /* logger detached */

	/* The ctx-less default context: repeated init is fine and holds one reference. */
	lg = capture_logger();
	assert_int_equal(((const ncclNet_v6_t *)dlsym(p.lib, "ncclNetPlugin_v6"))->init(lg),
			 ncclSuccess);
	assert_int_equal(((const ncclNet_v10_t *)dlsym(p.lib, "ncclNetPlugin_v10"))->init(lg, NULL),
			 ncclSuccess);
	assert_int_equal(NET(&p, 12)->init(&c1, 4, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(NET(&p, 12)->finalize(c1), ncclSuccess);
	assert_int_equal(NET(&p, 12)->devices(&n), ncclSuccess);
	RN_ASSERT_NO_WARN();
	plug_close(&p); /* the destructor releases the default context */
}

/* Every v12 entry point with NULL, foreign or out-of-range arguments (0 devices). */
static void test_bad_args_v12(void **state)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	ncclNetCommConfig_v12_t badcfg = { .trafficClass = 300 };
	char handle[NCCL_NET_HANDLE_MAXSIZE], buf[64];
	void *ctx, *ctx2, *other = BOGUS, *out = BOGUS, *req = BOGUS;
	void *data[9] = { buf }, *mh[9] = { BOGUS };
	size_t sizes[9] = { 16, 16 };
	int isizes[9] = { 16 }, tags[9] = { 0 }, done = -1, d = -7, n;
	ncclNetDeviceHandle_v12_t *dc = NULL;
	ncclNetVDeviceProps_v12_t vp = { .ndevs = 2, .devs = { 0, 1 } };
	ncclNetAttr_v12_t attr;
	ncclNetProperties_v12_t props;
	const ncclNet_v12_t *t;
	ncclDebugLogger_t lg;
	struct plug p;

	(void)state;
	use_system_verbs();
	memset(&attr, 0xff, sizeof(attr));
	lg = capture_logger();
	plug_open(&p, 12);
	t = p.table;
	assert_int_equal(t->init(&ctx, 1, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(t->init(&ctx2, 2, &cfg, lg, NULL), ncclSuccess);
	assert_int_equal(t->devices(&n), ncclSuccess);
	if (n != 0) {
		/* The out-of-range cases below assume no RDMA device. */
		assert_int_equal(t->finalize(ctx), ncclSuccess);
		assert_int_equal(t->finalize(ctx2), ncclSuccess);
		plug_close(&p);
		skip();
	}

	EXPECT(t->init(NULL, 1, &cfg, lg, NULL), ncclInternalError, "ctx");
	EXPECT(t->init(&other, 1, &badcfg, lg, NULL), ncclInvalidArgument, "trafficClass");
	assert_ptr_equal(other, BOGUS);
	EXPECT(t->devices(NULL), ncclInternalError, "ndev");
	EXPECT(t->getProperties(0, NULL), ncclInternalError, "props");
	EXPECT(t->getProperties(-1, &props), ncclInvalidArgument, "dev -1");
	EXPECT(t->getProperties(0, &props), ncclInvalidArgument, "dev 0");

	EXPECT(t->listen(ctx, 0, NULL, &out), ncclInternalError, "handle");
	EXPECT(t->listen(ctx, 0, handle, NULL), ncclInternalError, "listenComm");
	EXPECT(t->listen(NULL, 0, handle, &out), ncclInternalError, "ctx");
	EXPECT(t->listen(BOGUS, 0, handle, &out), ncclInternalError, "ctx");
	EXPECT(t->listen(ctx, 0, handle, &out), ncclInvalidArgument, "dev 0");
	EXPECT(t->connect(ctx, 0, NULL, &out, &dc), ncclInternalError, "handle");
	EXPECT(t->connect(ctx, 0, handle, NULL, &dc), ncclInternalError, "sendComm");
	EXPECT(t->connect(ctx, -1, handle, &out, NULL), ncclInvalidArgument, "dev -1");
	EXPECT(t->connect(BOGUS, 0, handle, &out, NULL), ncclInternalError, "ctx");
	EXPECT(t->accept(NULL, &out, &dc), ncclInternalError, "listenComm");
	EXPECT(t->accept(BOGUS, NULL, &dc), ncclInternalError, "recvComm");
	EXPECT(t->accept(BOGUS, &out, &dc), ncclInternalError, "listenComm");
	assert_ptr_equal(out, BOGUS);
	assert_null(dc);

	EXPECT(t->regMr(NULL, buf, 16, NCCL_PTR_HOST, &out), ncclInternalError, "comm");
	EXPECT(t->regMr(BOGUS, buf, 16, NCCL_PTR_HOST, NULL), ncclInternalError, "mhandle");
	EXPECT(t->regMr(BOGUS, NULL, 16, NCCL_PTR_HOST, &out), ncclInternalError, "data");
	EXPECT(t->regMr(BOGUS, buf, 16, 0x40, &out), ncclInvalidArgument, "type 64");
	EXPECT(t->regMr(BOGUS, buf, 16, NCCL_PTR_HOST, &out), ncclInternalError, "comm");
	EXPECT(t->regMrDmaBuf(NULL, buf, 16, NCCL_PTR_CUDA, 0, 3, &out), ncclInternalError, "comm");
	EXPECT(t->regMrDmaBuf(BOGUS, buf, 16, NCCL_PTR_CUDA, 0, -7, &out), ncclInvalidArgument,
	       "fd -7");
	EXPECT(t->regMrDmaBuf(BOGUS, buf, 16, NCCL_PTR_CUDA, 0, 3, NULL), ncclInternalError,
	       "mhandle");
	EXPECT(t->deregMr(NULL, BOGUS), ncclInternalError, "comm");
	EXPECT(t->deregMr(BOGUS, NULL), ncclInternalError, "mhandle");
	EXPECT(t->deregMr(BOGUS, BOGUS), ncclInternalError, "comm");
	assert_ptr_equal(out, BOGUS);

	EXPECT(t->isend(NULL, buf, 16, 0, BOGUS, NULL, &req), ncclInternalError, "sendComm");
	EXPECT(t->isend(BOGUS, buf, 16, 0, BOGUS, NULL, NULL), ncclInternalError, "request");
	EXPECT(t->isend(BOGUS, NULL, 16, 0, BOGUS, NULL, &req), ncclInternalError, "data");
	EXPECT(t->isend(BOGUS, buf, 16, 0, NULL, NULL, &req), ncclInternalError, "mhandle");
	EXPECT(t->isend(BOGUS, buf, (1ULL << 40) + 1, 0, BOGUS, NULL, &req), ncclInvalidArgument,
	       "size");
	EXPECT(t->isend(BOGUS, buf, 16, 0, BOGUS, NULL, &req), ncclInternalError, "sendComm");
	EXPECT(t->irecv(NULL, 1, data, sizes, tags, mh, NULL, &req), ncclInternalError, "recvComm");
	EXPECT(t->irecv(BOGUS, 0, data, sizes, tags, mh, NULL, &req), ncclInvalidArgument, "n 0");
	EXPECT(t->irecv(BOGUS, 9, data, sizes, tags, mh, NULL, &req), ncclInvalidArgument, "n 9");
	EXPECT(t->irecv(BOGUS, -1, data, sizes, tags, mh, NULL, &req), ncclInvalidArgument, "n -1");
	EXPECT(t->irecv(BOGUS, 1, NULL, sizes, tags, mh, NULL, &req), ncclInternalError, "data");
	EXPECT(t->irecv(BOGUS, 1, data, NULL, tags, mh, NULL, &req), ncclInternalError, "sizes");
	EXPECT(t->irecv(BOGUS, 1, data, sizes, NULL, mh, NULL, &req), ncclInternalError, "tags");
	EXPECT(t->irecv(BOGUS, 1, data, sizes, tags, NULL, NULL, &req), ncclInternalError,
	       "mhandles");
	EXPECT(t->irecv(BOGUS, 1, data, sizes, tags, mh, NULL, NULL), ncclInternalError, "request");
	EXPECT(t->irecv(BOGUS, 2, data, sizes, tags, mh, NULL, &req), ncclInternalError, "data[1]");
	req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
	EXPECT(t->irecv(BOGUS, 1, data, sizes, tags, mh, NULL, &req), ncclInternalError,
	       "recvComm");
	req = BOGUS;
	EXPECT(t->iflush(NULL, 1, data, isizes, mh, &req), ncclInternalError, "recvComm");
	EXPECT(t->iflush(BOGUS, 0, data, isizes, mh, &req), ncclInvalidArgument, "n 0");
	EXPECT(t->iflush(BOGUS, 1, data, NULL, mh, &req), ncclInternalError, "sizes");
	EXPECT(t->iflush(BOGUS, 1, data, isizes, mh, NULL), ncclInternalError, "request");
	isizes[0] = -1;
	EXPECT(t->iflush(BOGUS, 1, data, isizes, mh, &req), ncclInvalidArgument, "sizes[0]");
	EXPECT(t->test(NULL, &done, isizes), ncclInternalError, "request");
	EXPECT(t->test(BOGUS, NULL, isizes), ncclInternalError, "done");
	EXPECT(t->test(BOGUS, &done, NULL), ncclInternalError, "request");
	assert_int_equal(done, -1);
	assert_ptr_equal(req, BOGUS);

	EXPECT(t->closeSend(NULL), ncclInternalError, "sendComm");
	EXPECT(t->closeSend(BOGUS), ncclInternalError, "sendComm");
	EXPECT(t->closeRecv(NULL), ncclInternalError, "recvComm");
	EXPECT(t->closeRecv(BOGUS), ncclInternalError, "recvComm");
	EXPECT(t->closeListen(NULL), ncclInternalError, "listenComm");
	EXPECT(t->closeListen(BOGUS), ncclInternalError, "listenComm");

	EXPECT(t->makeVDevice(NULL, &vp), ncclInternalError, "d ");
	EXPECT(t->makeVDevice(&d, NULL), ncclInternalError, "props");
	EXPECT(t->makeVDevice(&d, &vp), ncclInvalidArgument, "devs[0]");
	vp.ndevs = 9;
	EXPECT(t->makeVDevice(&d, &vp), ncclInvalidArgument, "ndevs 9");
	vp.ndevs = 1;
	EXPECT(t->makeVDevice(&d, &vp), ncclInvalidArgument, "ndevs 1");
	assert_int_equal(d, -7);

	EXPECT(t->setNetAttr(NULL, &attr), ncclInternalError, "ctx");
	EXPECT(t->setNetAttr(ctx, NULL), ncclInternalError, "netAttr");
	EXPECT(t->setNetAttr(BOGUS, &attr), ncclInternalError, "ctx");
	n = rn_test_log.warns;
	assert_int_equal(t->setNetAttr(ctx, &attr), ncclSuccess);
	assert_int_equal(rn_test_log.warns, n);

	EXPECT(t->finalize(NULL), ncclInternalError, "ctx");
	EXPECT(t->finalize(BOGUS), ncclInternalError, "not a live");
	assert_int_equal(t->finalize(ctx), ncclSuccess);
	EXPECT(t->finalize(ctx), ncclInternalError, "not a live");
	EXPECT(t->listen(ctx, 0, handle, &out), ncclInternalError, "not a live");
	assert_int_equal(t->finalize(ctx2), ncclSuccess);
	plug_close(&p);
}

/* The conversions of the older tables: int sizes, vProps length, per-connect config. */
static void test_bad_args_old(void **state)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE], buf[64];
	void *out = BOGUS, *req = BOGUS, *data[9] = { buf }, *mh[9] = { BOGUS };
	int isizes[9] = { -4 }, tags[9] = { 0 }, d = -7;
	size_t sizes[9] = { 16 };
	ncclDebugLogger_t lg;
	struct plug p;

	(void)state;
	use_system_verbs();

	/* v6: int regMr/isend/irecv sizes; before init there is no context. */
	plug_open(&p, 6);
	assert_int_not_equal(NET(&p, 6)->listen(0, handle, &out), ncclSuccess);
	lg = capture_logger();
	assert_int_equal(NET(&p, 6)->init(lg), ncclSuccess);
	assert_int_equal(NET(&p, 6)->init(lg), ncclSuccess); /* repeated init is tolerated */
	EXPECT(NET(&p, 6)->regMr(BOGUS, buf, -1, NCCL_PTR_HOST, &out), ncclInvalidArgument,
	       "size -1");
	EXPECT(NET(&p, 6)->isend(BOGUS, buf, -2, 0, BOGUS, &req), ncclInvalidArgument, "size -2");
	EXPECT(NET(&p, 6)->irecv(BOGUS, 1, data, isizes, tags, mh, &req), ncclInvalidArgument,
	       "sizes[0]");
	EXPECT(NET(&p, 6)->irecv(BOGUS, 9, data, isizes, tags, mh, &req), ncclInvalidArgument,
	       "n 9");
	EXPECT(NET(&p, 6)->irecv(BOGUS, 1, data, NULL, tags, mh, &req), ncclInternalError, "sizes");
	EXPECT(NET(&p, 6)->connect(0, NULL, &out), ncclInternalError, "handle");
	EXPECT(NET(&p, 6)->connect(0, handle, &out), ncclInvalidArgument, "dev 0");
	EXPECT(NET(&p, 6)->listen(0, handle, &out), ncclInvalidArgument, "dev 0");
	EXPECT(NET(&p, 6)->accept(NULL, &out), ncclInternalError, "listenComm");
	EXPECT(NET(&p, 6)->getProperties(0, NULL), ncclInternalError, "props");
	assert_ptr_equal(out, BOGUS);
	assert_ptr_equal(req, BOGUS);
	plug_close(&p);

	/* v7: int regMr size, device-handle out-parameters may be NULL. */
	plug_open(&p, 7);
	lg = capture_logger();
	assert_int_equal(NET(&p, 7)->init(lg), ncclSuccess);
	EXPECT(NET(&p, 7)->regMr(BOGUS, buf, -1, NCCL_PTR_HOST, &out), ncclInvalidArgument,
	       "size -1");
	EXPECT(NET(&p, 7)->connect(0, handle, &out, NULL), ncclInvalidArgument, "dev 0");
	EXPECT(NET(&p, 7)->accept(BOGUS, &out, NULL), ncclInternalError, "listenComm");
	plug_close(&p);

	/* v8: size_t regMr, int isend. */
	plug_open(&p, 8);
	lg = capture_logger();
	assert_int_equal(NET(&p, 8)->init(lg), ncclSuccess);
	EXPECT(NET(&p, 8)->isend(BOGUS, buf, -1, 0, BOGUS, &req), ncclInvalidArgument, "size -1");
	EXPECT(NET(&p, 8)->regMr(BOGUS, buf, 16, NCCL_PTR_HOST, &out), ncclInternalError, "comm");
	plug_close(&p);

	/* v9 … v11: vProps holds 4 children. */
	plug_open(&p, 9);
	lg = capture_logger();
	assert_int_equal(NET(&p, 9)->init(lg), ncclSuccess);
	{
		ncclNetVDeviceProps_v9_t vp = { .ndevs = 5 };

		EXPECT(NET(&p, 9)->makeVDevice(&d, &vp), ncclInvalidArgument, "ndevs 5");
		EXPECT(NET(&p, 9)->makeVDevice(&d, NULL), ncclInternalError, "props");
	}
	EXPECT(NET(&p, 9)->isend(BOGUS, buf, 16, 0, NULL, &req), ncclInternalError, "mhandle");
	EXPECT(NET(&p, 9)->irecv(BOGUS, 1, data, sizes, tags, mh, &req), ncclInternalError,
	       "recvComm");
	plug_close(&p);

	/* v10: per-connect config. */
	plug_open(&p, 10);
	lg = capture_logger();
	assert_int_equal(NET(&p, 10)->init(lg, NULL), ncclSuccess);
	{
		ncclNetCommConfig_v10_t bad = { .trafficClass = 300 };
		ncclNetVDeviceProps_v10_t vp = { .ndevs = 5 };

		EXPECT(NET(&p, 10)->connect(0, &bad, handle, &out, NULL), ncclInvalidArgument,
		       "trafficClass 300");
		EXPECT(NET(&p, 10)->connect(0, NULL, handle, &out, NULL), ncclInvalidArgument,
		       "dev 0");
		EXPECT(NET(&p, 10)->makeVDevice(&d, &vp), ncclInvalidArgument, "ndevs 5");
	}
	EXPECT(NET(&p, 10)->isend(BOGUS, buf, 16, 0, BOGUS, NULL, &req), ncclInternalError,
	       "sendComm");
	plug_close(&p);

	/* v11: ctx, NULL config tolerated, setNetAttr, 4-child vProps. */
	plug_open(&p, 11);
	lg = capture_logger();
	assert_int_equal(NET(&p, 11)->init(&p.ctx, 9, NULL, lg, NULL), ncclSuccess);
	{
		ncclNetVDeviceProps_v11_t vp = { .ndevs = 5 };
		ncclNetAttr_v11_t attr;
		int w;

		memset(&attr, 0xff, sizeof(attr));
		EXPECT(NET(&p, 11)->makeVDevice(&d, &vp), ncclInvalidArgument, "ndevs 5");
		EXPECT(NET(&p, 11)->setNetAttr(p.ctx, NULL), ncclInternalError, "netAttr");
		w = rn_test_log.warns;
		assert_int_equal(NET(&p, 11)->setNetAttr(p.ctx, &attr), ncclSuccess);
		assert_int_equal(rn_test_log.warns, w);
	}
	assert_int_equal(d, -7);
	assert_ptr_equal(out, BOGUS);
	assert_int_equal(NET(&p, 11)->finalize(p.ctx), ncclSuccess);
	plug_close(&p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_tables, setup),
		cmocka_unit_test_setup(test_system_verbs_no_device, setup),
		cmocka_unit_test_setup(test_missing_verbs, setup),
		cmocka_unit_test_setup(test_fake_device, setup),
		cmocka_unit_test_setup(test_loopback_device, setup),
		cmocka_unit_test_setup(test_finalize_orphans, setup),
		cmocka_unit_test_setup(test_finalize_left_registrations, setup),
		cmocka_unit_test_setup(test_ib_disable, setup),
		cmocka_unit_test_setup(test_bad_config, setup),
		cmocka_unit_test_setup(test_refcount, setup),
		cmocka_unit_test_setup(test_bad_args_v12, setup),
		cmocka_unit_test_setup(test_bad_args_old, setup),
	};

	/* inside a softverbs pod only (test/rails/scenarios.sh), never skipped in the suite */
	const struct CMUnitTest discovered[] = {
		cmocka_unit_test(test_discovered_devices),
	};

	if (access(rn_test_plugin_so(), R_OK))
		rn_test_skip("%s is not built", rn_test_plugin_so());
	if (argc > 1 && !strcmp(argv[1], "discovered"))
		return cmocka_run_group_tests_name("plugin_discovered", discovered, NULL, NULL);
	if (argc > 1) {
		fprintf(stderr, "usage: test_plugin [discovered]\n");
		return 2;
	}
	return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}
