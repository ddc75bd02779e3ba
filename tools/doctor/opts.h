/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-doctor's command line (tools/doctor/opts.c): the flags and the --gpus list, parsed
 * and validated apart from main() so that a fuzz target can drive them: nothing exits, nothing
 * is read but the arguments, and nothing is printed but getopt_long's own messages (see quiet
 * below). Single-threaded (getopt_long's globals).
 */
#ifndef RAILNET_DOCTOR_OPTS_H
#define RAILNET_DOCTOR_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#define RN_DOC_TIME_MAX 100000 /* --time N: 1..this */
#define RN_DOC_GPUS_ENTRIES 64 /* --gpus: at most this many GPUs (align.h's RN_ALIGN_MAX) */
#define RN_DOC_BUSID_MAX 16    /* "0000:51:00.0" and its NUL (pci.h's RN_BUSID_MAX) */
#define RN_DOC_ERR_MAX 512     /* err buffers: a reason always fits, on one line */

struct rn_doc_opts {
	bool json;	     /* --json */
	const char *ifaddrs; /* --ifaddrs FILE (points into argv), NULL: this namespace's */
	const char *gpus;    /* --gpus LIST as given (points into argv), NULL: the driver's */
	int ngpus;	     /* --gpus: the entries of LIST, 1..RN_DOC_GPUS_ENTRIES */
	/* --gpus: each entry written normalised (lowercase, 4-digit domain), in LIST's order */
	char gpu[RN_DOC_GPUS_ENTRIES][RN_DOC_BUSID_MAX];
	int runs; /* --time N, 1..RN_DOC_TIME_MAX; 0: no benchmark */
};

#define RN_DOC_HELP 1
#define RN_DOC_VERSION 2

/*
 * Parse argv (getopt_long re-initialised, so it may be called again). Returns 0 with *o
 * filled, RN_DOC_HELP for --help (nothing after it is looked at), or -1 with a one-line
 * reason in err; *usage then says whether the usage text should follow it (exit status 2
 * either way), and o->json whether --json (or an abbreviation getopt_long takes for it) is
 * among the arguments, so that the caller can answer a usage error in JSON. A later flag
 * overrides an earlier one. --gpus is validated as rn_doc_gpus_parse says, --time and --json
 * together are refused (--time prints a benchmark line, not a document). An unknown flag or
 * a missing value is reported by getopt_long itself on stderr and err is then ""; with quiet,
 * nothing is printed and err says it instead.
 */
int rn_doc_opts_parse(int argc, char **argv, bool quiet, struct rn_doc_opts *o, bool *usage,
		      char *err, size_t errlen);

/*
 * Validate --gpus LIST: comma-separated PCI bus ids, each [DDDD:]BB:DD.F or DDDDDDDD:BB:DD.F
 * in hex of any case (domain at most ffff, device at most 1f, function 0-7; the forms
 * lspci, nvidia-smi and cuDeviceGetPCIBusId print), no spaces, no empty entry, no GPU twice
 * however written (0000:0f:00.0, 0f:00.0 and 0000:0F:00.0 are one GPU), at most max entries.
 * Returns the count (>= 1) with ids[] filled, normalised, in order; or -1 with a one-line
 * reason in err naming the entry, its position and the form allowed (ids[] then undefined).
 */
int rn_doc_gpus_parse(const char *list, char ids[][RN_DOC_BUSID_MAX], int max, char *err,
		      size_t errlen);

#endif /* RAILNET_DOCTOR_OPTS_H */
