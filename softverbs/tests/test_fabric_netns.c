// SPDX-License-Identifier: Apache-2.0
/*
 * `softverbs-fabric up`/`down` round trip on the small fixture: the pods' namespaces appear
 * with their rail addresses, a pod reaches the other pod and the host netns over TCP on a
 * shared rail, the netns name lands in the pod's config and env, and `down` removes every
 * namespace and link (twice in a row is fine). Needs root and working network namespaces;
 * exits 77 with the reason otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric.h"
#include "rn_test.h"

static char out[PATH_MAX];
static char tool[PATH_MAX];

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[PATH_MAX * 3];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	return system(cmd);
}

static void netns_of(const char *pod, char *buf, size_t len)
{
	char path[PATH_MAX * 2], line[512];
	FILE *fp;

	sv_pathf(path, sizeof(path), "%s/node0/%s/view/softverbs/config", out, pod);
	fp = fopen(path, "r");
	assert_non_null(fp);
	buf[0] = 0;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "netns ", 6)) {
			line[strcspn(line, "\n")] = 0;
			sv_pathf(buf, len, "%s", line + 6);
		}
	fclose(fp);
}

static void enter(const char *ns)
{
	char path[PATH_MAX];
	int fd;

	sv_pathf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		_exit(3);
	close(fd);
}

/* Listens in `server_ns` on addr:port, connects from `client_ns`; 0 if "ok" came across. */
static int tcp_check(const char *server_ns, const char *client_ns, const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int ready[2], st, one = 1;
	pid_t srv, cli;
	char c;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	assert_int_equal(pipe(ready), 0);
	srv = fork();
	assert_true(srv >= 0);
	if (!srv) {
		int s, a;

		enter(server_ns);
		s = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
			_exit(4);
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		alarm(10);
		a = accept(s, NULL, NULL);
		_exit(a >= 0 && write(a, "ok", 2) == 2 ? 0 : 6);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		waitpid(srv, &st, 0);
		close(ready[0]);
		return -1;
	}
	close(ready[0]);
	cli = fork();
	assert_true(cli >= 0);
	if (!cli) {
		char buf[3] = { 0 };
		int s;

		enter(client_ns);
		alarm(10);
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(7);
		_exit(read(s, buf, 2) == 2 && !strcmp(buf, "ok") ? 0 : 8);
	}
	waitpid(cli, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
		return -1;
	}
	waitpid(srv, &st, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static void test_up_down(void **state)
{
	char spec[PATH_MAX], ns0[256], ns1[256], nsh[256], path[PATH_MAX * 2], id[16];
	struct stat st;

	(void)state;
	sv_pathf(spec, sizeof(spec), "%s/test/fixtures/small.spec", rn_test_source_dir());
	assert_int_equal(sh("'%s' build '%s' 2>/dev/null", tool, spec), 2 << 8); /* usage */
	sv_pathf(path, sizeof(path), "'%s' build '%s' '%s'", tool, spec, out);
	assert_int_equal(system(path), 0);
	sv_pathf(path, sizeof(path), "'%s' up '%s'", tool, out);
	assert_int_equal(system(path), 0);

	netns_of("pod0", ns0, sizeof(ns0));
	netns_of("pod1", ns1, sizeof(ns1));
	netns_of("host", nsh, sizeof(nsh));
	assert_true(ns0[0] && strcmp(ns0, "-"));
	assert_true(ns1[0] && strcmp(ns1, "-") && strcmp(ns0, ns1));
	sv_pathf(path, sizeof(path), "/run/netns/%s", ns0);
	assert_int_equal(stat(path, &st), 0);
	sv_pathf(id, sizeof(id), "%.6s", ns0); /* "sv" + the fabric's hash: every link name */

	/* pod0 -> pod1 on rail ra, pod1 -> pod0 on rail rb, pod0 -> host rdma0 */
	assert_int_equal(tcp_check(ns1, ns0, "10.10.1.2", 18515), 0);
	assert_int_equal(tcp_check(ns0, ns1, "10.11.1.1", 18516), 0);
	assert_int_equal(tcp_check(nsh, ns0, "10.10.0.1", 18517), 0);
	/* the env carries the netns too */
	sv_pathf(path, sizeof(path), "grep -qx \"export SOFTVERBS_NETNS='%s'\" '%s/node0/pod0/env'",
		 ns0, out);
	assert_int_equal(system(path), 0);
	/* exec runs in the pod's namespace with its environment */
	sv_pathf(path, sizeof(path),
		 "'%s' exec '%s' node0 pod0 -- sh -c "
		 "'ip -o addr show net1 | grep -q 10.10.1.1/16 && test -n \"$SOFTVERBS_VIEW\"'",
		 tool, out);
	assert_int_equal(system(path), 0);

	sv_pathf(path, sizeof(path), "'%s' down '%s'", tool, out);
	assert_int_equal(system(path), 0);
	sv_pathf(path, sizeof(path), "/run/netns/%s", ns0);
	assert_int_not_equal(stat(path, &st), 0);
	netns_of("pod0", ns0, sizeof(ns0));
	assert_string_equal(ns0, "-");
	sv_pathf(path, sizeof(path), "'%s' down '%s'", tool, out);
	assert_int_equal(system(path), 0);
	sv_pathf(path, sizeof(path), "ip -o link show | grep -q ': %s'", id);
	assert_int_not_equal(system(path), 0);
}

static int setup(void **state)
{
	char probe[64];

	(void)state;
	if (geteuid())
		rn_test_skip("up/down needs root to create network namespaces");
	sv_pathf(probe, sizeof(probe), "ip netns add svprobe%d 2>/dev/null", (int)getpid());
	if (system(probe))
		rn_test_skip("cannot create a network namespace here (ip netns add failed)");
	sv_pathf(probe, sizeof(probe), "ip netns del svprobe%d", (int)getpid());
	if (system(probe))
		rn_test_skip("cannot delete a network namespace here");
	sv_pathf(tool, sizeof(tool), "%s/bin/softverbs-fabric", rn_test_build_dir());
	sv_pathf(out, sizeof(out), "%s/sv-fabric-netns.XXXXXX", rn_test_tmp_dir());
	return mkdtemp(out) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sh("'%s' down '%s' >/dev/null 2>&1", tool, out);
	return sh("rm -rf '%s'", out) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_up_down),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
