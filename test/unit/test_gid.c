// SPDX-License-Identifier: Apache-2.0
/*
 * The GID rule over hand-written tables (gid.h): every verdict of rn_gid_judge, the automatic
 * choice (two pods on one rail, the host process, a leaky kernel, link-local only, IPv6,
 * ADDR_RANGE, RoCE v1, unreadable netdevs), NCCL_IB_GID_INDEX verification with the message
 * that names the right index, InfiniBand GID 0 / FLID, the range parser and the address-list
 * file reader.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "railnet/gid.h"
#include "rn_test.h"

#define V1 RN_GID_TYPE_ROCE_V1
#define V2 RN_GID_TYPE_ROCE_V2
#define HID RN_GID_TYPE_UNKNOWN

/* An entry: address text ("" = zero, "ll" = fe80 link-local), type, netdev ("?" unknown). */
static struct rn_gid_entry ent(int index, const char *addr, int type, const char *ndev)
{
	struct rn_gid_entry e;

	memset(&e, 0, sizeof(e));
	e.index = index;
	if (!strcmp(addr, "ll")) {
		e.raw[0] = 0xfe;
		e.raw[1] = 0x80;
		e.raw[8] = 0xba;
		e.raw[15] = 0x01;
	} else if (strchr(addr, ':')) {
		assert_int_equal(inet_pton(AF_INET6, addr, e.raw), 1);
	} else if (*addr) {
		e.raw[10] = e.raw[11] = 0xff;
		assert_int_equal(inet_pton(AF_INET, addr, e.raw + 12), 1);
	}
	e.type = type;
	if (strcmp(ndev, "?")) {
		snprintf(e.ndev, sizeof(e.ndev), "%s", ndev);
		e.ndev_known = true;
	}
	return e;
}

static struct rn_ifaddr ifa(const char *name, const char *addr)
{
	struct rn_ifaddr a;

	memset(&a, 0, sizeof(a));
	snprintf(a.name, sizeof(a.name), "%s", name);
	a.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(a.family, addr, a.addr), 1);
	return a;
}

static struct rn_gid_policy pol(int family, int version, const char *range, int index)
{
	struct rn_gid_policy p = { .family = family, .roce_version = version, .gid_index = index };

	assert_int_equal(rn_addr_range_parse(range, &p.range, NULL, 0), 0);
	return p;
}

/* The rail of two-pods-one-rail as pod-a's kernel shows it (3, 6, 7 hidden). */
static void table_pod_a(struct rn_gid_entry *t)
{
	t[0] = ent(0, "ll", V1, "rdma0");
	t[1] = ent(1, "ll", V2, "rdma0");
	t[2] = ent(2, "", HID, "?");
	t[3] = ent(3, "", HID, "?");
	t[4] = ent(4, "10.239.255.1", V1, "net1");
	t[5] = ent(5, "10.239.255.1", V2, "net1");
	t[6] = ent(6, "", HID, "?");
	t[7] = ent(7, "", HID, "?");
}

/* A leaky kernel: pod-b sees everyone's entries. */
static void table_leaky(struct rn_gid_entry *t)
{
	t[0] = ent(0, "ll", V1, "rdma0");
	t[1] = ent(1, "ll", V2, "rdma0");
	t[2] = ent(2, "10.239.0.1", V1, "rdma0");
	t[3] = ent(3, "10.239.0.1", V2, "rdma0");
	t[4] = ent(4, "10.239.255.1", V1, "net1");
	t[5] = ent(5, "10.239.255.1", V2, "net1");
	t[6] = ent(6, "10.239.255.2", V1, "net1");
	t[7] = ent(7, "10.239.255.2", V2, "net1");
}

static void test_judge(void **state)
{
	struct rn_ifaddr a[] = { ifa("lo", "127.0.0.1"), ifa("net1", "10.239.255.2"),
				 ifa("net1", "fd00::b") };
	struct rn_gid_policy p4 = pol(AF_INET, 2, "", -1);
	struct rn_gid_policy p6 = pol(AF_INET6, 2, "", -1);
	struct rn_gid_policy pr = pol(AF_INET, 2, "10.239.0.0/24", -1);
	struct rn_gid_policy p1 = pol(AF_INET, 1, "", -1);
	static const struct {
		const char *addr;
		int type;
		const char *ndev;
		int which; /* 0 p4, 1 p6, 2 range, 3 v1 */
		int verdict;
	} cases[] = {
		{ "", HID, "?", 0, RN_GID_ZERO },
		{ "", V2, "net1", 0, RN_GID_ZERO },
		{ "ll", V2, "net1", 0, RN_GID_LINK_LOCAL },
		{ "10.239.255.2", HID, "?", 0, RN_GID_NO_ATTRS },
		{ "10.239.255.2", V1, "net1", 0, RN_GID_WRONG_VERSION },
		{ "10.239.255.2", V2, "net1", 3, RN_GID_WRONG_VERSION },
		{ "10.239.255.2", V1, "net1", 3, RN_GID_OK },
		{ "10.239.255.2", V2, "net1", 1, RN_GID_WRONG_FAMILY },
		{ "fd00::b", V2, "net1", 0, RN_GID_WRONG_FAMILY },
		{ "fd00::b", V2, "net1", 1, RN_GID_OK },
		{ "10.239.255.2", V2, "net1", 2, RN_GID_OUT_OF_RANGE },
		{ "10.239.0.1", V2, "rdma0", 2, RN_GID_NDEV_ABSENT },
		{ "10.239.255.1", V2, "net1", 0, RN_GID_ADDR_ABSENT },
		{ "10.239.255.2", V2, "net2", 0, RN_GID_NDEV_ABSENT },
		{ "10.239.255.2", V2, "net1", 0, RN_GID_OK },
		{ "10.239.255.2", V2, "?", 0, RN_GID_OK }, /* netdev unreadable: by address */
		{ "10.239.255.9", V2, "?", 0, RN_GID_ADDR_ABSENT },
	};
	const struct rn_gid_policy *pols[] = { &p4, &p6, &pr, &p1 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rn_gid_entry e = ent(3, cases[i].addr, cases[i].type, cases[i].ndev);
		const char *name = NULL;
		int v = rn_gid_judge(&e, a, 3, pols[cases[i].which], &name);

		if (v != cases[i].verdict)
			fail_msg("case %zu (%s): verdict %s, expected %s", i, cases[i].addr,
				 rn_gid_verdict_str(v), rn_gid_verdict_str(cases[i].verdict));
		if (v == RN_GID_OK)
			assert_string_equal(name, "net1");
		assert_string_not_equal(rn_gid_verdict_str(v), "?");
	}
}

static void test_select_pods(void **state)
{
	struct rn_gid_entry t[8];
	struct rn_ifaddr pod_a[] = { ifa("lo", "127.0.0.1"), ifa("net1", "10.239.255.1") };
	struct rn_ifaddr pod_b[] = { ifa("lo", "127.0.0.1"), ifa("net1", "10.239.255.2") };
	struct rn_ifaddr host[] = { ifa("eth0", "192.168.1.5"), ifa("rdma0", "10.239.0.1") };
	struct rn_gid_policy p = pol(AF_INET, 2, "", -1);
	struct rn_gid_choice c;
	char why[RN_GID_WHY_MAX];

	(void)state;
	table_pod_a(t);
	assert_int_equal(rn_gid_select_roce(t, 8, pod_a, 2, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 0);
	assert_int_equal(c.index, 5);
	assert_string_equal(c.ifname, "net1");
	assert_non_null(strstr(c.why, "10.239.255.1"));
	/* the leaky kernel: the lowest valid index would be 3 (NCCL's pick); ours is the pod's */
	table_leaky(t);
	assert_int_equal(rn_gid_select_roce(t, 8, pod_b, 2, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 0);
	assert_int_equal(c.index, 7);
	assert_int_equal(rn_gid_select_roce(t, 8, pod_a, 2, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 0);
	assert_int_equal(c.index, 5);
	assert_int_equal(rn_gid_select_roce(t, 8, host, 2, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 0);
	assert_int_equal(c.index, 3);
	assert_string_equal(c.ifname, "rdma0");
	/* RoCE v1 wanted */
	p.roce_version = 1;
	assert_int_equal(rn_gid_select_roce(t, 8, pod_b, 2, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 0);
	assert_int_equal(c.index, 6);
}

static void test_select_none(void **state)
{
	struct rn_gid_entry t[8];
	struct rn_ifaddr a[] = { ifa("lo", "127.0.0.1") };
	struct rn_gid_policy p = pol(AF_INET, 2, "", -1);
	struct rn_gid_choice c = { .index = 42 };
	char why[RN_GID_WHY_MAX];

	(void)state;
	table_pod_a(t);
	/* linklocal-only: the pod has no interface on the rail */
	t[4] = ent(4, "", HID, "?");
	t[5] = ent(5, "", HID, "?");
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 -ENOENT);
	assert_int_equal(c.index, 42);
	assert_non_null(strstr(why, "no usable RoCE v2 IPv4 GID among 8 entries"));
	assert_non_null(strstr(why, "2 link-local"));
	assert_non_null(strstr(why, "6 zero"));
	/* an empty table */
	assert_int_equal(rn_gid_select_roce(t, 0, a, 1, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			 -ENOENT);
	/* the range excludes the pod's address */
	table_pod_a(t);
	p = pol(AF_INET, 2, "10.239.0.0/24", -1);
	{
		struct rn_ifaddr b[] = { ifa("net1", "10.239.255.1") };

		assert_int_equal(
			rn_gid_select_roce(t, 8, b, 1, &p, "mlx5_0", 1, &c, why, sizeof(why)),
			-ENOENT);
		assert_non_null(strstr(why, "in NCCL_IB_ADDR_RANGE"));
		assert_non_null(strstr(why, "1 outside NCCL_IB_ADDR_RANGE"));
		p = pol(AF_INET, 2, "10.239.255.0/24", -1);
		assert_int_equal(
			rn_gid_select_roce(t, 8, b, 1, &p, "mlx5_0", 1, &c, why, sizeof(why)), 0);
		assert_int_equal(c.index, 5);
	}
}

static void test_select_ipv6(void **state)
{
	struct rn_gid_entry t[12];
	struct rn_ifaddr a[] = { ifa("net1", "10.224.255.3"), ifa("net1", "fd00:224::c") };
	struct rn_gid_policy p4 = pol(AF_INET, 2, "", -1), p6 = pol(AF_INET6, 2, "", -1);
	struct rn_gid_policy r6 = pol(AF_INET6, 2, "fd00:224::/120", -1);
	struct rn_gid_choice c;
	char why[RN_GID_WHY_MAX];

	(void)state;
	for (int i = 0; i < 12; i++)
		t[i] = ent(i, "", HID, "?");
	t[0] = ent(0, "ll", V1, "rdma0");
	t[1] = ent(1, "ll", V2, "rdma0");
	t[8] = ent(8, "10.224.255.3", V1, "net1");
	t[9] = ent(9, "10.224.255.3", V2, "net1");
	t[10] = ent(10, "fd00:224::c", V1, "net1");
	t[11] = ent(11, "fd00:224::c", V2, "net1");
	assert_int_equal(rn_gid_select_roce(t, 12, a, 2, &p4, "d", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 9);
	assert_int_equal(rn_gid_select_roce(t, 12, a, 2, &p6, "d", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 11);
	assert_int_equal(rn_gid_select_roce(t, 12, a, 2, &r6, "d", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 11);
	r6 = pol(AF_INET6, 2, "fd00:225::/64", -1);
	assert_int_equal(rn_gid_select_roce(t, 12, a, 2, &r6, "d", 1, &c, why, sizeof(why)),
			 -ENOENT);
}

static void test_explicit_index(void **state)
{
	struct rn_gid_entry t[8];
	struct rn_ifaddr a[] = { ifa("net1", "10.239.255.1") };
	struct rn_gid_policy p = pol(AF_INET, 2, "", 3);
	struct rn_gid_choice c = { .index = 42 };
	char why[RN_GID_WHY_MAX];

	(void)state;
	table_pod_a(t);
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(c.index, 42);
	assert_non_null(strstr(why, "NCCL_IB_GID_INDEX=3: GID 3 of mlx5_5 port 1 is zero"));
	assert_non_null(strstr(why, "is index 5"));
	assert_non_null(strstr(why, "10.239.255.1"));
	p.gid_index = 4; /* RoCE v1 */
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "other RoCE version"));
	p.gid_index = 1;
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "link-local"));
	p.gid_index = 99;
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "has no GID 99"));
	p.gid_index = 5;
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 5);
	assert_non_null(strstr(c.why, "verified"));
	/* wrong index, and nothing would work: the reason says why */
	t[5] = ent(5, "", HID, "?");
	p.gid_index = 3;
	assert_int_equal(rn_gid_select_roce(t, 8, a, 1, &p, "mlx5_5", 1, &c, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "no usable RoCE v2 IPv4 GID"));
}

static void test_infiniband(void **state)
{
	struct rn_gid_entry t[2];
	struct rn_gid_choice c;
	char why[RN_GID_WHY_MAX];

	(void)state;
	t[0] = ent(0, "fe80::c42:a103:65:1a20", RN_GID_TYPE_IB, "?");
	t[1] = ent(1, "", HID, "?");
	assert_int_equal(rn_gid_select_ib(t, 2, "mlx5_0", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 0);
	assert_int_equal(c.type, RN_GID_TYPE_IB);
	t[1] = ent(1, "fe80:0:12:0:c42:a103:65:1a20", RN_GID_TYPE_IB, "?"); /* FLID 0x0012 */
	assert_int_equal(rn_gid_select_ib(t, 2, "mlx5_0", 1, &c, why, sizeof(why)), 0);
	assert_int_equal(c.index, 1);
	assert_non_null(strstr(c.why, "FLID"));
	t[0] = ent(0, "", HID, "?");
	t[1] = ent(1, "", HID, "?");
	assert_int_equal(rn_gid_select_ib(t, 2, "mlx5_0", 1, &c, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "GID 0 is zero"));
}

static void test_range_parse(void **state)
{
	static const char *const good[] = { "",		 "10.0.0.0/8", "0.0.0.0/0",  "10.1.2.3/32",
					    "fd00::/64", "::/0",       "fd00::1/128" };
	static const char *const bad[] = { "10.0.0.0",	  "10.0.0.0/33", "10.0.0.0/",	"/8",
					   "10.0.0/8",	  "fd00::/129",	 "10.0.0.0/8x", "x/8",
					   "10.0.0.0/-1", "fd00::/+4",	 "10.0.0.0/08" };
	struct rn_addr_range r;
	uint8_t a[16];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (rn_addr_range_parse(good[i], &r, NULL, 0))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (rn_addr_range_parse(bad[i], &r, NULL, 0) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
	assert_int_equal(rn_addr_range_parse("10.224.0.0/12", &r, NULL, 0), 0);
	inet_pton(AF_INET, "10.239.1.1", a);
	assert_true(rn_addr_in_range(&r, AF_INET, a));
	inet_pton(AF_INET, "10.240.1.1", a);
	assert_false(rn_addr_in_range(&r, AF_INET, a));
	inet_pton(AF_INET6, "fd00::1", a);
	assert_false(rn_addr_in_range(&r, AF_INET6, a));
}

static void test_ifaddrs_file(void **state)
{
	char path[] = "/tmp/rn_test_ifaddrs_XXXXXX";
	struct rn_ifaddr *l = NULL;
	int n = 0, bad = 0, fd;
	FILE *f;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("# comment\nnet1 10.239.255.1/16\n\nnet2 fd00:224::c/64\neth0 10.0.0.1\n", f);
	fclose(f);
	assert_int_equal(rn_ifaddrs_load(path, &l, &n, &bad), 0);
	assert_int_equal(n, 3);
	assert_string_equal(l[1].name, "net2");
	assert_int_equal(l[1].family, AF_INET6);
	/* the netmask length travels with the address (the rail is its subnet) */
	assert_int_equal(l[0].prefix, 16);
	assert_int_equal(l[1].prefix, 64);
	assert_int_equal(l[2].prefix, -1);
	free(l);
	f = fopen(path, "w");
	fputs("net1 10.239.255.1/16\nnet2 garbage\n", f);
	fclose(f);
	assert_int_equal(rn_ifaddrs_load(path, &l, &n, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	for (int i = 0; i < 4; i++) {
		static const char *const bad_prefix[] = { "net1 10.0.0.1/33\n", "net1 10.0.0.1/x\n",
							  "net1 10.0.0.1/\n",
							  "net1 fd00::1/129\n" };

		f = fopen(path, "w");
		fputs(bad_prefix[i], f);
		fclose(f);
		assert_int_equal(rn_ifaddrs_load(path, &l, &n, &bad), -EINVAL);
		assert_int_equal(bad, 1);
	}
	unlink(path);
	assert_int_equal(rn_ifaddrs_load(path, &l, &n, &bad), -ENOENT);
	/* the live namespace: getifaddrs works (its contents are the scenario tests' job) */
	assert_int_equal(rn_ifaddrs_get(&l, &n), 0);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),	       cmocka_unit_test(test_select_pods),
		cmocka_unit_test(test_select_none),    cmocka_unit_test(test_select_ipv6),
		cmocka_unit_test(test_explicit_index), cmocka_unit_test(test_infiniband),
		cmocka_unit_test(test_range_parse),    cmocka_unit_test(test_ifaddrs_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
