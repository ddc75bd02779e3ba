/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-doctor's command line (tools/doctor/opts.c): the flags and the --gpus list, parsed
 * apart from main() so that a fuzz target can drive them: nothing exits, nothing is read but
 * the arguments, and nothing is printed but getopt_long's own messages (see quiet below).
 * Single-threaded (getopt_long's globals).
 */
#ifndef RAILNET_DOCTOR_OPTS_H
#define RAILNET_DOCTOR_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#define RN_DOC_TIME_MAX 100000 /* --time N: 1..this */
#define RN_DOC_GPUS_MAX 1024   /* bytes of --gpus considered (one NUL included) */

struct rn_doc_opts {
	bool json;	     /* --json */
	const char *ifaddrs; /* --ifaddrs FILE (points into argv), NULL: this namespace's */
	const char *gpus;    /* --gpus LIST (points into argv), NULL: the CUDA driver's */
	int runs;	     /* --time N, 1..RN_DOC_TIME_MAX; 0: no benchmark */
};

#define RN_DOC_HELP 1

/*
 * Parse argv (getopt_long re-initialised, so it may be called again). Returns 0 with *o
 * filled, RN_DOC_HELP for --help (nothing after it is looked at), or -1 with a one-line
 * reason in err; *usage then says whether the usage text should follow it (exit status 2
 * either way). A later flag overrides an earlier one. An unknown flag or a missing value is
 * reported by getopt_long itself on stderr, as it always was, and err is then ""; with quiet,
 * nothing is printed and err says it instead.
 */
int rn_doc_opts_parse(int argc, char **argv, bool quiet, struct rn_doc_opts *o, bool *usage,
		      char *err, size_t errlen);

/*
 * Split --gpus LIST at commas into at most max bus ids: buf (buflen bytes, at most
 * RN_DOC_GPUS_MAX used) gets a copy of the list, truncated, and ids[] points into it; empty
 * entries are skipped. Returns the count.
 */
int rn_doc_gpus_split(const char *list, char *buf, size_t buflen, const char **ids, int max);

#endif /* RAILNET_DOCTOR_OPTS_H */
