// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-doctor's command line (opts.h): --json, --ifaddrs FILE, --gpus LIST, --time N and
 * --help, and the split of the --gpus list. It only parses: reading the files, asking the CUDA
 * driver and printing are railnet-doctor.c's. It must not print or exit.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

int rn_doc_opts_parse(int argc, char **argv, bool quiet, struct rn_doc_opts *o, bool *usage,
		      char *err, size_t errlen)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "ifaddrs", required_argument, NULL, 'i' },
		{ "time", required_argument, NULL, 't' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long runs;
	int c;

	memset(o, 0, sizeof(*o));
	*usage = true;
	err[0] = '\0';
	opterr = !quiet;
	optind = 0; /* glibc: full re-initialisation */
	/* a leading ':' silences getopt_long and tells a missing value from an unknown flag */
	while ((c = getopt_long(argc, argv, quiet ? ":" : "", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'i':
			o->ifaddrs = optarg;
			break;
		case 'g':
			o->gpus = optarg;
			break;
		case 't':
			/* in long, then the range: "4294967297" must not wrap to 1 in an int */
			errno = 0;
			runs = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || runs < 1 || runs > RN_DOC_TIME_MAX) {
				snprintf(err, errlen, "--time %s: a count 1..%d", optarg,
					 RN_DOC_TIME_MAX);
				*usage = false;
				return -1;
			}
			o->runs = (int)runs;
			break;
		case 'h':
			return RN_DOC_HELP;
		case ':': /* quiet only */
			snprintf(err, errlen, "option '%s' requires an argument", argv[optind - 1]);
			return -1;
		default:
			if (quiet && optopt)
				snprintf(err, errlen,
					 "invalid option -- '%c', or a value given to a flag that "
					 "takes none",
					 optopt);
			else if (quiet)
				snprintf(err, errlen, "unrecognized option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind != argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

int rn_doc_gpus_split(const char *list, char *buf, size_t buflen, const char **ids, int max)
{
	char *save = NULL, *tok;
	int n = 0;

	if (buflen > RN_DOC_GPUS_MAX)
		buflen = RN_DOC_GPUS_MAX;
	snprintf(buf, buflen, "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
		ids[n++] = tok;
	return n;
}
