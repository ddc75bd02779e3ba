// SPDX-License-Identifier: Apache-2.0
/*
 * sv-mkview DIR [NDEV [NPORTS [GBPS]]]: writes the minimal test pod view of sv_test.h at DIR
 * (for the shell-driven perftest checks and the speed bench).
 */
#include "sv_test.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [NDEV [NPORTS [GBPS]]]\n", argv[0]);
		return 2;
	}
	if (sv_mkview(argv[1], argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atoi(argv[3]) : 1,
		      argc > 4 ? atoi(argv[4]) : 100, NULL)) {
		fprintf(stderr, "%s: cannot write the view\n", argv[1]);
		return 1;
	}
	return 0;
}
