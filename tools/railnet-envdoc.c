// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-envdoc prints docs/env.md, generated from the configuration table in src/config.c
 * (`make docs` redirects it into the file; a test compares the two). It only formats the
 * table: it reads no environment and must not grow options that change the output.
 */
#include <stdio.h>
#include <string.h>

#include "railnet/config.h"

int main(int argc, char **argv)
{
	int ret;

	if (argc > 1) {
		int help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");

		fprintf(help ? stdout : stderr,
			"usage: %s > docs/env.md\n"
			"Prints the Markdown reference of every environment variable railnet "
			"reads.\n",
			argv[0]);
		return help ? 0 : 2;
	}
	ret = rn_config_write_markdown(stdout);
	if (ret) {
		fprintf(stderr, "railnet-envdoc: writing the document failed: %s\n",
			strerror(-ret));
		return 1;
	}
	return 0;
}
