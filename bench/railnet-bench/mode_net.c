/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --net mode: railnet's net API driven directly, host memory, no GPU and no NCCL (issue 7,
 * item 3). It needs railnet's data path (issue 5), which does not exist yet, so this mode only
 * says so. Whoever builds the data path fills in these ops: open dlopens the built plugin and
 * takes its newest ncclNetPlugin_vN, alloc registers host buffers, start posts one step of a
 * ring all-reduce (or a bandwidth/latency exchange), wait drives test() to completion, put/get
 * are memcpy. The harness (bench.c) already does the sweep, timing, #wrong check and output.
 */
#include <stddef.h>

#include "rb.h"

const struct rb_mode_ops rb_mode_net = {
	.name = "net",
	.missing = "--net mode needs the railnet data path (issue 5); not built yet",
};
