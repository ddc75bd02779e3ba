// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for railnet-doctor's command line (tools/doctor/opts.c: rn_doc_opts_parse and
 * the split of the --gpus list; pci.c's bus id parser on each id). The input is split at NUL
 * and newline bytes into the arguments after argv[0] (64 at most). Every input is taken,
 * refused with a one-line reason, or --help; a second parse gives the same answer. Taken:
 * --time N is 1..100000 and N is what one argument says in decimal (no wrap-around), --ifaddrs
 * and --gpus point into the arguments, the --gpus list splits into at most 64 non-empty ids
 * without commas, in order, and each id is a bus id written normalised or refused. Nothing
 * prints, nothing exits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "railnet/pci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RN_FZ_MAX_ARGS 64
#define RN_FZ_MAX_GPUS 64 /* the doctor's RN_ALIGN_MAX */

static void rn_fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void rn_fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz_doctor_args: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* argv from the input: argv[0] = "railnet-doctor", then each NUL- or newline-separated piece. */
static int rn_fz_argv(const uint8_t *data, size_t size, char **argv)
{
	int argc = 0;
	size_t i = 0;

	argv[argc] = strdup("railnet-doctor");
	if (!argv[argc++])
		abort();
	while (size && i <= size && argc < RN_FZ_MAX_ARGS) {
		size_t n = 0;

		while (i + n < size && data[i + n] && data[i + n] != '\n')
			n++;
		argv[argc] = malloc(n + 1); /* exactly sized, so ASan sees any overread */
		if (!argv[argc])
			abort();
		memcpy(argv[argc], data + i, n);
		argv[argc++][n] = '\0';
		i += n + 1;
	}
	argv[argc] = NULL;
	return argc;
}

static bool rn_fz_in_args(const char *s, char **store, int argc)
{
	for (int i = 1; i < argc; i++)
		if (s >= store[i] && s <= store[i] + strlen(store[i]))
			return true;
	return false;
}

/* Some argument, or the value after '=' in one, says n in decimal, as strtol reads it. */
static bool rn_fz_says(long n, char **store, int argc)
{
	for (int i = 1; i < argc; i++) {
		const char *cand[2] = { store[i], strchr(store[i], '=') };

		for (int k = 0; k < 2; k++) {
			const char *s = k ? (cand[k] ? cand[k] + 1 : NULL) : cand[k];
			char *end;
			long v;

			if (!s)
				continue;
			errno = 0;
			v = strtol(s, &end, 10);
			if (end != s && !*end && !errno && v == n)
				return true;
		}
	}
	return false;
}

static void rn_fz_gpus(const char *list)
{
	char buf[RN_DOC_GPUS_MAX], busid[RN_BUSID_MAX];
	const char *ids[RN_FZ_MAX_GPUS];
	int n = rn_doc_gpus_split(list, buf, sizeof(buf), ids, RN_FZ_MAX_GPUS);

	if (n < 0 || n > RN_FZ_MAX_GPUS)
		rn_fz_fail("--gpus split into %d ids", n);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ids[i]);

		if (!len || strchr(ids[i], ',') || ids[i] < buf ||
		    ids[i] + len >= buf + sizeof(buf) || (i && ids[i] <= ids[i - 1]) ||
		    strncmp(ids[i], list + (ids[i] - buf), len))
			rn_fz_fail("--gpus id %d \"%s\" is not an entry of the list", i, ids[i]);
		busid[0] = '\0';
		if (rn_busid_parse(ids[i], busid) == 0) {
			char again[RN_BUSID_MAX];

			if (strlen(busid) != 12 || rn_busid_parse(busid, again) ||
			    strcmp(again, busid))
				rn_fz_fail("bus id \"%s\" read as \"%s\"", ids[i], busid);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *store[RN_FZ_MAX_ARGS + 1], *store2[RN_FZ_MAX_ARGS + 1];
	char *argv[RN_FZ_MAX_ARGS + 1], *argv2[RN_FZ_MAX_ARGS + 1];
	struct rn_doc_opts o, o2;
	char err[512], err2[512];
	bool usage, usage2;
	int argc, rc, rc2;

	argc = rn_fz_argv(data, size, store);
	rn_fz_argv(data, size, store2);
	/* getopt permutes argv: keep the pointers to free apart */
	memcpy(argv, store, sizeof(store[0]) * (size_t)(argc + 1));
	memcpy(argv2, store2, sizeof(store2[0]) * (size_t)(argc + 1));
	rc = rn_doc_opts_parse(argc, argv, true, &o, &usage, err, sizeof(err));
	rc2 = rn_doc_opts_parse(argc, argv2, true, &o2, &usage2, err2, sizeof(err2));
	if (rc != rc2 || (!rc && (o.json != o2.json || o.runs != o2.runs || !o.gpus != !o2.gpus ||
				  !o.ifaddrs != !o2.ifaddrs)))
		rn_fz_fail("parsed twice: %d, then %d", rc, rc2);
	if (rc == 0) {
		if (o.runs < 0 || o.runs > RN_DOC_TIME_MAX ||
		    (o.runs && !rn_fz_says(o.runs, store, argc)))
			rn_fz_fail("--time taken as %d", o.runs);
		if ((o.ifaddrs && !rn_fz_in_args(o.ifaddrs, store, argc)) ||
		    (o.gpus && !rn_fz_in_args(o.gpus, store, argc)))
			rn_fz_fail("--ifaddrs or --gpus does not point into the arguments");
		if (o.gpus)
			rn_fz_gpus(o.gpus);
	} else if (rc == -1) {
		if (!err[0] || strchr(err, '\n') || strcmp(err, err2) || usage != usage2)
			rn_fz_fail("refused without a one-line reason: '%s'", err);
	} else if (rc == RN_DOC_HELP) {
		bool asked = false;

		for (int i = 1; i < argc && !asked; i++)
			asked = !strncmp(store[i], "--h", 3);
		if (!asked)
			rn_fz_fail("help without --help");
	} else {
		rn_fz_fail("rn_doc_opts_parse returned %d", rc);
	}
	for (int i = 0; i < argc; i++) {
		free(store[i]);
		free(store2[i]);
	}
	return 0;
}
