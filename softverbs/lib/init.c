// SPDX-License-Identifier: Apache-2.0
/*
 * Process-global state of softverbs: one-time initialisation from the environment and the pod
 * view (sv_g), the clock, and logging. Everything the library does starts with sv_init(), which
 * is idempotent and thread-safe. It must not open devices or start threads.
 */
#include "sv.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct sv_global sv_g;
volatile uint64_t sv_cookie;
static pthread_once_t sv_once = PTHREAD_ONCE_INIT;

uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 1, 0))) static void sv_vlog(const char *fmt, va_list ap)
{
	char buf[1024];
	int saved = errno;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "softverbs[%d]: %s\n", (int)getpid(), buf);
	errno = saved;
}

void sv_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sv_vlog(fmt, ap);
	va_end(ap);
}

void sv_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!sv_g.debug)
		return;
	va_start(ap, fmt);
	sv_vlog(fmt, ap);
	va_end(ap);
}

int sv_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static uint64_t sv_random64(void)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &v, sizeof(v)) != sizeof(v))
			v = 0;
		close(fd);
	}
	return v ^ sv_now_ns() ^ ((uint64_t)getpid() << 32);
}

static void sv_do_init(void)
{
	const char *e;
	struct stat st;

	sv_g.t0_ns = sv_now_ns();
	sv_g.debug = (e = getenv("SOFTVERBS_DEBUG")) && *e && strcmp(e, "0");
	sv_g.vm = !((e = getenv("SOFTVERBS_VM")) && (!strcmp(e, "off") || !strcmp(e, "0")));
	sv_g.latency_us = -1;
	e = getenv("SOFTVERBS_RATE");
	if (e && *e) {
		char *end;

		if (!strcmp(e, "off") || !strcmp(e, "0")) {
			sv_g.rate_gbps = -1;
		} else {
			sv_g.rate_gbps = strtod(e, &end);
			if (end == e || *end || !(sv_g.rate_gbps > 0)) {
				sv_log("SOFTVERBS_RATE=%s: want \"off\" or Gb/s (e.g. 25); ignored",
				       e);
				sv_g.rate_gbps = 0;
			}
		}
	}
	e = getenv("SOFTVERBS_LATENCY_US");
	if (e && *e) {
		char *end;

		sv_g.latency_us = strtod(e, &end);
		if (end == e || *end || sv_g.latency_us < 0) {
			sv_log("SOFTVERBS_LATENCY_US=%s: want microseconds >= 0; ignored", e);
			sv_g.latency_us = -1;
		}
	}
	e = getenv("SOFTVERBS_TCP");
	if (e && *e)
		snprintf(sv_g.tcp_host, sizeof(sv_g.tcp_host), "%s", e);
	if (sv_g.vm) {
		/* let peers of this uid use process_vm_readv/writev on us under Yama scope 1 */
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	}
	sv_g.cookie = sv_random64();
	sv_cookie = sv_g.cookie;
	if (stat("/proc/self/ns/net", &st) == 0)
		sv_g.netns_ino = (unsigned long)st.st_ino;
	if (stat("/proc/self/ns/pid", &st) == 0)
		sv_g.pidns_ino = (unsigned long)st.st_ino;
	sv_fault_init();

	e = getenv("SOFTVERBS_VIEW");
	if (!e || !*e) {
		sv_dbg("SOFTVERBS_VIEW unset: no devices");
		return;
	}
	snprintf(sv_g.view, sizeof(sv_g.view), "%s", e);
	e = getenv("SOFTVERBS_RDV");
	if (e && *e)
		snprintf(sv_g.rdv, sizeof(sv_g.rdv), "%s", e);
	sv_view_load();
	/* GDR mode: the view's `gdr` line, overridden by the environment */
	e = getenv("SOFTVERBS_GDR");
	if (e && *e)
		sv_gdr_configure(e, "SOFTVERBS_GDR");
	e = getenv("SOFTVERBS_GDR_ORDER");
	if (e && *e) {
		if (!strcmp(e, "relaxed") || !strcmp(e, "strict"))
			sv_gdr_relaxed = !strcmp(e, "relaxed");
		else
			sv_log("SOFTVERBS_GDR_ORDER=%s: want strict or relaxed; strict", e);
	}
	e = getenv("SOFTVERBS_GDR_STAGE");
	if (e && *e) {
		char *end;
		unsigned long long v = strtoull(e, &end, 10);

		if (*end || e[0] == '-' || v > (1ull << 30))
			sv_log("SOFTVERBS_GDR_STAGE=%s: want a byte count from 0 to 1073741824; %u",
			       e, SV_GDR_STAGE_DEFAULT);
		else
			sv_gdr_stage = v;
	}
	e = getenv("SOFTVERBS_NIC_DEFER_US");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (*end || e[0] == '-' || v > 100000)
			sv_log("SOFTVERBS_NIC_DEFER_US=%s: want microseconds from 0 to 100000; 0",
			       e);
		else
			sv_nic_defer_us = (unsigned)v;
	}
	sv_gdr_check_driver();
	if (!sv_g.rdv[0] && sv_fmt(sv_g.rdv, sizeof(sv_g.rdv), "%s/softverbs/rdv", sv_g.view) >=
				    (int)sizeof(sv_g.rdv))
		sv_g.rdv[0] = '\0';
	sv_dbg("view %s: %d devices, rendezvous %s", sv_g.view, sv_g.ndev, sv_g.rdv);
}

void sv_init(void)
{
	pthread_once(&sv_once, sv_do_init);
}
