// SPDX-License-Identifier: Apache-2.0
/*
 * Fabric-spec parser tests: every fixture parses; each malformed input fails with the
 * expected "file:line:col: message"; and a few thousand mutations of a valid spec (byte
 * flips, truncations, spliced lines) end in a fabric or in one well-formed error, never a
 * crash (run it under ASan to catch memory errors).
 */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "rn_test.h"

#define HEAD \
	"rail r0 subnet=10.0.0.0/16\nnode n1\nnuma 0 cpus=0-7\nroot r0 port=0000:00:01.1 numa=0\n"
#define NIC "nic mlx5_0 pci=0000:0c:00.0 root=r0 guid=b8ce:f603:00a1:2b00\n"
#define PORT "port 1 link=Ethernet rate=100 netdev=rdma0 rail=r0 addr=10.0.0.1\n"

struct bad_case {
	const char *spec;
	const char *where;   /* "line:col" */
	const char *message; /* substring of the message */
};

static const struct bad_case bad_cases[] = {
	{ "bogus x\n", "1:1", "unknown keyword 'bogus'" },
	{ "node\n", "1:1", "'node' needs a node name" },
	{ "node n1 netns=both\nnuma 0 cpus=0\n", "1:15",
	  "netns=both: expected shared or exclusive" },
	{ "numa 0 cpus=0\n", "1:1", "'numa' outside a node" },
	{ "rail r0 subnet=10.0.0.1/16\n", "1:16", "has host bits set" },
	{ "rail r0 subnet=10.0.0.0\n", "1:16", "expected a network" },
	{ "rail r0 subnet=10.0.0.0/8 subnet=11.0.0.0/8\n", "1:27", "'subnet' given twice" },
	{ "rail r0\n", "1:1", "'rail' needs subnet=" },
	{ "node n1\nnuma 0 cpus=0-x\n", "2:13", "expected a cpu list" },
	{ "node n1\nnuma 0 cpus=0-7\nroot r0 port=0000:00:01.1 numa=3\n", "3:32",
	  "numa 3 is not declared" },
	{ "node n1\nnuma 0 cpus=0-7\nroot r0 port=00:01.9 numa=0\n", "3:14",
	  "expected a PCI address" },
	{ HEAD "nic mlx5_0 pci=0000:0c:00.0 root=r9 guid=b8ce:f603:00a1:2b00\n", "5:34",
	  "root 'r9' is not declared" },
	{ HEAD "nic mlx5_0 pci=0000:0c:00.0 root=r0 guid=12345\n", "5:42", "guid=12345" },
	{ HEAD NIC "port 1 link=Ethernet rate=33 netdev=rdma0\n", "6:27", "rate=33" },
	{ HEAD NIC "port 1 link=Ethernet rate=\"100 Gb/sec (4X HDR)\" netdev=rdma0\n", "6:27",
	  "rate=100 Gb/sec (4X HDR)" },
	{ HEAD NIC "port 1 link=Ethernet rate=100 netdev=rdma0 rail=r0 addr=11.0.0.1\n", "6:57",
	  "11.0.0.1 is not in rail r0's subnet 10.0.0.0/16" },
	{ HEAD NIC "port 1 link=Ether rate=100 netdev=rdma0\n", "6:13",
	  "link=Ether: expected Ethernet or InfiniBand" },
	{ HEAD NIC "port 1 link=Ethernet rate=100\n", "6:1", "'port' needs netdev=" },
	{ HEAD NIC "port 1 link=InfiniBand rate=100 netdev=ib0\n", "6:33",
	  "'netdev' applies to Ethernet ports only" },
	{ HEAD NIC "port 1 link=Ethernet rate=100 netdev=rdma0 frob=1\n", "6:44",
	  "unknown key 'frob'" },
	{ HEAD NIC "port 1 link=Ethernet rate=100 netdev=rdma0 mtu=100\n", "6:48", "mtu=100" },
	{ HEAD "port 1 link=Ethernet rate=100 netdev=rdma0\n", "5:1", "must follow a 'nic'" },
	{ HEAD NIC PORT "pod p1 nics=mlx5_7\n", "7:13", "'mlx5_7' is neither" },
	{ HEAD NIC PORT "pod p1\niface net1 type=ipvlan parent=rdma0 addr=10.0.1.1\n", "8:31",
	  "which pod p1 was not given" },
	{ HEAD NIC PORT "pod p1 nics=rdma0\niface net1 type=vlan parent=rdma0 addr=10.0.1.1\n",
	  "8:17", "type=vlan" },
	{ HEAD NIC PORT "pod p1 nics=rdma0\niface net1 type=vf parent=rdma0 addr=10.0.1.1\n",
	  "8:27", "type=vf needs a VF" },
	{ HEAD NIC PORT "pod p1 nics=rdma0\niface net1 type=ipvlan parent=rdma0 addr=10.0.0.1\n",
	  "8:1", "address 10.0.0.1 is already used on line 6" },
	{ HEAD NIC PORT "pod p1 nics=rdma0\niface net1 type=ipvlan parent=rdma0 addr=fe80::1\n",
	  "8:42", "link-local addresses are implicit" },
	{ HEAD NIC PORT "iface net1 type=ipvlan parent=rdma0 addr=10.0.1.1\n", "7:1",
	  "must follow a 'pod'" },
	{ HEAD NIC PORT "pod host\n", "7:5", "'host' is reserved" },
	{ HEAD NIC PORT "pod p1 hostnetwork=yes\n", "7:8", "'hostnetwork' is a flag" },
	{ HEAD NIC PORT "pod p1 nics=rdma0 \"unterminated\n", "7:19", "unterminated quoted" },
	{ HEAD NIC PORT "pod p1 model=\"a b\" nics=rdma9\n", "7:25", "'rdma9' is neither" },
	{ HEAD NIC PORT "pod p1 =x\n", "7:8", "has no key" },
	{ HEAD NIC, "5:1", "nic mlx5_0 has no ports" },
	{ "# only a comment\n", "1:1", "no nodes" },
	{ HEAD NIC "port 1 link=Ethernet rate=100 netdev=rdma0 gid_tbl_len=2 addr=10.0.0.1\n",
	  "6:1", "needs 4 GID entries but gid_tbl_len is 2" },
	{ "node n1\nnuma 0 cpus=0-3\nnuma 1 cpus=3-5\n", "1:1", "shares cpus" },
	{ "node n1\nnuma 0 cpus=0-3 \x01\n", "2:17", "unexpected character 0x01" },
};

static void test_bad_specs(void **state)
{
	size_t i;
	int failed = 0;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct sv_fabric *f = NULL;
		char *msg = NULL, want[64];
		size_t len = 0;
		FILE *err = open_memstream(&msg, &len);
		int ret;

		assert_non_null(err);
		ret = sv_fabric_parse_buf("t.spec", c->spec, strlen(c->spec), err, &f);
		fclose(err);
		snprintf(want, sizeof(want), "t.spec:%s: ", c->where);
		if (ret != -EINVAL || strncmp(msg, want, strlen(want)) ||
		    !strstr(msg, c->message)) {
			print_error("case %zu: got %d \"%s\", want %s...%s\n", i, ret, msg, want,
				    c->message);
			failed++;
		}
		free(msg);
	}
	assert_int_equal(failed, 0);
}

static void test_fixtures_parse(void **state)
{
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int n = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/test/fixtures", rn_test_source_dir());
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[8192];
		struct sv_fabric *f;
		size_t l = strlen(e->d_name);

		if (l < 6 || strcmp(e->d_name + l - 5, ".spec"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (sv_fabric_parse_file(path, stderr, &f))
			fail_msg("%s does not parse", path);
		sv_fabric_destroy(f);
		n++;
	}
	closedir(d);
	assert_true(n >= 11);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

/* Mutations of a valid spec: each must parse or fail with exactly one located message. */
static void mutate(const char *fixture, int rounds)
{
	static const char noise[] = "=\"#,:/ \t\nx0.9-";
	char path[4096];
	size_t len, i;
	char *orig, *buf;
	regex_t re;
	unsigned int seed = 12345;

	snprintf(path, sizeof(path), "%s/test/fixtures/%s", rn_test_source_dir(), fixture);
	orig = slurp(path, &len);
	buf = malloc(len + 64);
	assert_non_null(buf);
	assert_int_equal(regcomp(&re, "^m\\.spec:[0-9]+:[0-9]+: [^\n]+\n$", REG_EXTENDED), 0);
	for (i = 0; i < (size_t)rounds; i++) {
		struct sv_fabric *f = NULL;
		size_t n = len, k, flips = 1 + rand_r(&seed) % 4;
		char *msg = NULL;
		size_t mlen = 0;
		FILE *err;
		int ret;

		memcpy(buf, orig, len);
		for (k = 0; k < flips; k++) {
			size_t at = (size_t)rand_r(&seed) % n;

			switch (rand_r(&seed) % 4) {
			case 0:
				buf[at] = noise[rand_r(&seed) % (sizeof(noise) - 1)];
				break;
			case 1:
				buf[at] = (char)(rand_r(&seed) % 256);
				break;
			case 2:
				n = at; /* truncate */
				break;
			default:
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
			}
			if (!n)
				break;
		}
		err = open_memstream(&msg, &mlen);
		assert_non_null(err);
		ret = sv_fabric_parse_buf("m.spec", buf, n, err, &f);
		fclose(err);
		if (!ret) {
			assert_int_equal(mlen, 0);
			sv_fabric_destroy(f);
		} else if (ret != -EINVAL || regexec(&re, msg, 0, NULL, 0)) {
			fail_msg("mutation %zu: ret %d message \"%s\"", i, ret, msg);
		}
		free(msg);
	}
	regfree(&re);
	free(buf);
	free(orig);
}

static void test_mutations(void **state)
{
	(void)state;
	mutate("two-pods-one-rail.spec", 20000);
	mutate("exclusive.spec", 5000);
	mutate("infiniband.spec", 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_fixtures_parse),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
