// SPDX-License-Identifier: Apache-2.0
/*
 * Lifecycle under repetition, as NCCL ≥ 2.28 drives it: 1,000 per-communicator
 * init/finalize cycles on one loaded plugin, then 1,000 dlopen → init → devices → finalize →
 * dlclose cycles (NCCL unloads the plugin when its refcount drops to 0 and loads it again for
 * the next communicator), and a few hundred ctx-less (v6) cycles whose context only the
 * library destructor releases. Afterwards no thread is left (/proc/self/task), no file
 * descriptor is left (/proc/self/fd), and the library is really unloaded. Leaks are the
 * sanitizer build's job: run it under `make SANITIZER=address`.
 * Without libibverbs init fails every time; the cycles then exercise the failure path.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_net.h"
#include "railnet/log.h"
#include "rn_test.h"

#define RN_CYCLES 1000
#define RN_V6_CYCLES 200

static int count_entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void *open_plugin(void)
{
	void *lib = dlopen(rn_test_plugin_so(), RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		fail_msg("dlopen(%s): %s", rn_test_plugin_so(), dlerror());
	return lib;
}

static void close_plugin(void *lib)
{
	assert_int_equal(dlclose(lib), 0);
	lib = dlopen(rn_test_plugin_so(), RTLD_NOW | RTLD_NOLOAD);
	if (lib) {
		dlclose(lib);
		fail_msg("%s still loaded after dlclose", rn_test_plugin_so());
	}
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

static ncclDebugLogger_t logger(void)
{
	rn_test_log_capture();
	return nccl_logger;
}

/* One communicator's life; returns whether init succeeded (it must agree every time). */
static int one_comm(const ncclNet_v12_t *t, ncclDebugLogger_t lg, int i)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
	void *ctx = NULL;
	int n = -1;

	if (t->init(&ctx, (uint64_t)i, &cfg, lg, NULL) != ncclSuccess)
		return 0;
	assert_int_equal(t->devices(&n), ncclSuccess);
	assert_true(n >= 0);
	assert_int_equal(t->finalize(ctx), ncclSuccess);
	return 1;
}

static void test_init_finalize_cycles(void **state)
{
	int threads = count_entries("/proc/self/task"), fds = count_entries("/proc/self/fd");
	ncclDebugLogger_t lg = logger();
	void *lib = open_plugin();
	const ncclNet_v12_t *t = dlsym(lib, "ncclNetPlugin_v12");
	int ok;

	(void)state;
	assert_non_null(t);
	ok = one_comm(t, lg, 0);
	for (int i = 1; i < RN_CYCLES; i++) {
		assert_int_equal(one_comm(t, lg, i), ok);
		rn_test_log_reset();
	}
	/* Overlapping communicators: several contexts alive at once, finalized out of order. */
	for (int i = 0; ok && i < RN_CYCLES / 10; i++) {
		void *ctx[4];

		for (int c = 0; c < 4; c++)
			assert_int_equal(t->init(&ctx[c], (uint64_t)c, NULL, lg, NULL),
					 ncclSuccess);
		assert_int_equal(t->finalize(ctx[2]), ncclSuccess);
		assert_int_equal(t->finalize(ctx[0]), ncclSuccess);
		assert_int_equal(t->finalize(ctx[3]), ncclSuccess);
		assert_int_equal(t->finalize(ctx[1]), ncclSuccess);
		rn_test_log_reset();
	}
	close_plugin(lib);
	assert_int_equal(count_entries("/proc/self/task"), threads);
	assert_int_equal(count_entries("/proc/self/fd"), fds);
	print_message("%d init/finalize cycles, init %s\n", RN_CYCLES, ok ? "ok" : "failing");
}

static void test_dlopen_cycles(void **state)
{
	int threads = count_entries("/proc/self/task"), fds = count_entries("/proc/self/fd");
	ncclDebugLogger_t lg = logger();
	int ok = -1;

	(void)state;
	for (int i = 0; i < RN_CYCLES; i++) {
		void *lib = open_plugin();
		const ncclNet_v12_t *t = dlsym(lib, "ncclNetPlugin_v12");
		int r;

		assert_non_null(t);
		r = one_comm(t, lg, i);
		if (ok < 0)
			ok = r;
		assert_int_equal(r, ok);
		close_plugin(lib);
		rn_test_log_reset();
	}
	assert_int_equal(count_entries("/proc/self/task"), threads);
	assert_int_equal(count_entries("/proc/self/fd"), fds);
	print_message("%d dlopen/init/finalize/dlclose cycles, init %s\n", RN_CYCLES,
		      ok ? "ok" : "failing");
}

/* v6 has no finalize: the destructor must release the default context at dlclose. */
static void test_dlopen_cycles_v6(void **state)
{
	int threads = count_entries("/proc/self/task"), fds = count_entries("/proc/self/fd");
	ncclDebugLogger_t lg = logger();

	(void)state;
	for (int i = 0; i < RN_V6_CYCLES; i++) {
		void *lib = open_plugin();
		const ncclNet_v6_t *t = dlsym(lib, "ncclNetPlugin_v6");
		int n;

		assert_non_null(t);
		if (t->init(lg) == ncclSuccess) {
			assert_int_equal(t->init(lg), ncclSuccess);
			assert_int_equal(t->devices(&n), ncclSuccess);
		}
		close_plugin(lib);
		rn_test_log_reset();
	}
	assert_int_equal(count_entries("/proc/self/task"), threads);
	assert_int_equal(count_entries("/proc/self/fd"), fds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_finalize_cycles),
		cmocka_unit_test(test_dlopen_cycles),
		cmocka_unit_test(test_dlopen_cycles_v6),
	};

	if (access(rn_test_plugin_so(), R_OK))
		rn_test_skip("%s is not built", rn_test_plugin_so());
	return cmocka_run_group_tests_name("cycles", tests, NULL, NULL);
}
