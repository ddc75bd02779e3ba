/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-bench entry point. Everything lives in bench.c (the harness) and the mode files;
 * this file exists so the unit tests can link the harness pieces without a main().
 */
#include "rb.h"

int main(int argc, char **argv)
{
	return rb_bench_main(argc, argv);
}
