// SPDX-License-Identifier: Apache-2.0
/*
 * The built plugin opens with dlopen(RTLD_NOW | RTLD_LOCAL), as NCCL opens it: every
 * undefined symbol resolves at once (so a missing libibverbs link, or any other stray
 * dependency, fails here), all seven ncclNetPlugin_vN tables are there, nothing of railnet's
 * core leaks out, and dlclose really unloads it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl_net.h"
#include "rn_test.h"

static void test_dlopen_now(void **state)
{
	const char *so = rn_test_plugin_so();
	char sym[32];
	void *lib;

	(void)state;
	lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		fail_msg("dlopen(%s, RTLD_NOW): %s", so, dlerror());
	for (int v = RN_NCCL_NET_OLDEST; v <= RN_NCCL_NET_NEWEST; v++) {
		const ncclNet_v6_t *t;

		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		t = dlsym(lib, sym);
		if (!t)
			fail_msg("%s: %s", sym, dlerror());
		assert_string_equal(t->name, "railnet");
	}
	assert_null(dlsym(lib, "ncclNetPlugin_v5"));
	assert_null(dlsym(lib, "ncclNetPlugin_v13"));
	assert_null(dlsym(lib, "ncclCollNetPlugin_v12"));
	assert_null(dlsym(lib, "rn_net_init"));
	assert_null(dlsym(lib, "rn_verbs_load"));
	assert_int_equal(dlclose(lib), 0);
	lib = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
	if (lib) {
		dlclose(lib);
		fail_msg("%s is still loaded after dlclose", so);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dlopen_now),
	};

	if (access(rn_test_plugin_so(), R_OK))
		rn_test_skip("%s is not built", rn_test_plugin_so());
	return cmocka_run_group_tests_name("dlopen", tests, NULL, NULL);
}
