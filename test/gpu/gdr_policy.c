// SPDX-License-Identifier: Apache-2.0
/*
 * gdr_policy: RAILNET_GDR_POLICY with real cudaMalloc'd memory (issue 13, item 3), for the GPU
 * machine (never run in CI). Through the plugin's own ncclNet_v11 table, as NCCL calls it: for
 * every device, a connection to itself (listen, connect, accept) and regMr of GPU memory
 * (cuMemAlloc on CUDA device 0) as NCCL_PTR_CUDA. Prints one line per device:
 *   dev <i> <name> ptrSupport <bits> regMr(CUDA) <ncclResult>
 * test/gpu/gdr_policy.sh runs it in test/gpu/misaligned-cuda.spec's pod under each policy and
 * checks the answers. The CUDA driver and the plugin are opened with dlopen: no CUDA headers
 * or libraries at build time.
 * Usage: gdr_policy PLUGIN.so
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_net.h"

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level > NCCL_LOG_WARN && !getenv("GDR_POLICY_INFO"))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "plugin: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void *gpu_alloc(size_t len)
{
	int (*init)(unsigned int), (*dev_get)(int *, int), (*retain)(void **, int);
	int (*set)(void *), (*alloc)(unsigned long long *, size_t);
	void *lib = dlopen("libcuda.so.1", RTLD_NOW), *ctx = NULL;
	unsigned long long p = 0;
	int dev;

	if (!lib) {
		fprintf(stderr, "gdr_policy: no CUDA driver: %s\n", dlerror());
		exit(77);
	}
	*(void **)&init = dlsym(lib, "cuInit");
	*(void **)&dev_get = dlsym(lib, "cuDeviceGet");
	*(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&alloc = dlsym(lib, "cuMemAlloc_v2");
	if (!init || !dev_get || !retain || !set || !alloc || init(0) || dev_get(&dev, 0) ||
	    retain(&ctx, dev) || set(ctx) || alloc(&p, len)) {
		fprintf(stderr, "gdr_policy: cannot allocate GPU memory on CUDA device 0\n");
		exit(2);
	}
	return (void *)(uintptr_t)p;
}

int main(int argc, char **argv)
{
	ncclNetCommConfig_v11_t config;
	ncclNet_v11_t *net;
	void *lib, *ctx = NULL, *buf;
	int ndev = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gdr_policy PLUGIN.so\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	net = lib ? dlsym(lib, "ncclNetPlugin_v11") : NULL;
	if (!net) {
		fprintf(stderr, "gdr_policy: %s: %s\n", argv[1], dlerror());
		return 2;
	}
	buf = gpu_alloc(1 << 20);
	memset(&config, 0, sizeof(config));
	if (net->init(&ctx, 1, &config, logger, NULL) || net->devices(&ndev)) {
		fprintf(stderr, "gdr_policy: plugin init failed\n");
		return 2;
	}
	for (int d = 0; d < ndev; d++) {
		char handle[NCCL_NET_HANDLE_MAXSIZE] = { 0 };
		void *lc = NULL, *sc = NULL, *rc = NULL, *mh = NULL;
		ncclNetDeviceHandle_v11_t *sdh = NULL, *rdh = NULL;
		ncclNetProperties_v11_t props;
		ncclResult_t r;

		if (net->getProperties(d, &props) || net->listen(ctx, d, handle, &lc)) {
			fprintf(stderr, "gdr_policy: dev %d: getProperties/listen failed\n", d);
			return 2;
		}
		for (int spin = 0; (!sc || !rc) && spin < 10000000; spin++) {
			if (!sc && net->connect(ctx, d, handle, &sc, &sdh))
				return 2;
			if (!rc && net->accept(lc, &rc, &rdh))
				return 2;
		}
		if (!sc || !rc) {
			fprintf(stderr, "gdr_policy: dev %d: no connection\n", d);
			return 2;
		}
		r = net->regMr(sc, buf, 1 << 20, NCCL_PTR_CUDA, &mh);
		printf("dev %d %s ptrSupport %d regMr(CUDA) %d\n", d, props.name, props.ptrSupport,
		       (int)r);
		if (r == ncclSuccess)
			net->deregMr(sc, mh);
		net->closeSend(sc);
		net->closeRecv(rc);
		net->closeListen(lc);
	}
	net->finalize(ctx);
	return 0;
}
