// SPDX-License-Identifier: Apache-2.0
/*
 * The small-file reader of discovery and the GID readers (sysfs.h): paths below a base,
 * first line with the newline and trailing spaces removed, the length limit, and the errno
 * of a failing open or read kept for the caller.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "railnet/sysfs.h"
#include "rn_test.h"

static char dir[] = "/tmp/rn-sysfs.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_path(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(rn_sysfs_path(buf, sizeof(buf), "/sys", "class/infiniband/%s/ports/%d",
				       "mlx5_0", 1),
			 -ENAMETOOLONG); /* 36 bytes */
	assert_string_equal(buf, "");
	assert_int_equal(rn_sysfs_path(buf, sizeof(buf), "/sys", "class/infiniband/%s", "mlx5_0"),
			 0);
	assert_string_equal(buf, "/sys/class/infiniband/mlx5_0");
	assert_int_equal(rn_sysfs_path(buf, 6, "/sys", "x"), -ENAMETOOLONG); /* needs 7 */
	assert_int_equal(rn_sysfs_path(buf, 7, "/sys", "x"), 0);
	assert_string_equal(buf, "/sys/x");
}

static void test_read(void **state)
{
	char path[PATH_MAX], buf[16];

	(void)state;
	put("types", "RoCE v2\n");
	put("spaces", "eth0  \nsecond line\n");
	put("empty", "");
	put("long", "0123456789abcdefghij\n");
	snprintf(path, sizeof(path), "%s/types", dir);
	assert_int_equal(rn_sysfs_read(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "RoCE v2");
	snprintf(path, sizeof(path), "%s/spaces", dir);
	assert_int_equal(rn_sysfs_read(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "eth0");
	snprintf(path, sizeof(path), "%s/empty", dir);
	assert_int_equal(rn_sysfs_read(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	snprintf(path, sizeof(path), "%s/long", dir);
	assert_int_equal(rn_sysfs_read(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0123456789abcde"); /* len - 1 bytes */
	/* the errno of open() and of read() reach the caller unchanged */
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(rn_sysfs_read(path, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rn_sysfs_read(dir, buf, sizeof(buf)), -EISDIR);
	assert_string_equal(buf, "");
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	static const char *const names[] = { "types", "spaces", "empty", "long" };
	char path[PATH_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
