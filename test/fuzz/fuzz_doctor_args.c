// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for railnet-doctor's command line (tools/doctor/opts.c: rn_doc_opts_parse and
 * the validation of the --gpus list, checked against pci.c's bus id parser). The input is
 * split at NUL and newline bytes into the arguments after argv[0] (64 at most). Every input is
 * taken, refused with a one-line reason, or --help; a second parse gives the same answer.
 * Taken: --time N is 1..100000 and N is what one argument says in decimal (no wrap-around),
 * never with --json; --ifaddrs and --gpus point into the arguments; the --gpus list is valid.
 * Refused: o->json only when some argument asks for --json. Every argument, read as a --gpus
 * list, is taken exactly when it is 1..64 comma-separated entries, none empty, each a bus id
 * ([DDDD:]BB:DD.F or an 8-digit domain, as rn_busid_parse reads it), no GPU twice however
 * written; taken, the ids are rn_busid_parse's normal form, in order; refused, the reason is
 * one line naming the entry. Nothing prints, nothing exits.
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

/*
 * The oracle for one --gpus entry (len chars at e): rn_busid_parse's normal form, the bare
 * BB:DD.F form read with domain 0000; no path (rn_busid_parse would take a path's last bus id).
 */
static bool rn_fz_busid(const char *e, size_t len, char busid[RN_BUSID_MAX])
{
	char b[32];

	if (len > 16 || memchr(e, '/', len))
		return false;
	snprintf(b, sizeof(b), "%s%.*s", len == 7 ? "0000:" : "", (int)len, e);
	return rn_busid_parse(b, busid) == 0;
}

/* rn_doc_gpus_parse on list, against the oracle; the count taken or -1. */
static int rn_fz_gpus(const char *list)
{
	char ids[RN_DOC_GPUS_ENTRIES][RN_DOC_BUSID_MAX], want[RN_FZ_MAX_GPUS + 1][RN_BUSID_MAX];
	char err[RN_DOC_ERR_MAX];
	const char *s = list, *e;
	bool valid = *list != '\0';
	int n = 0, got;

	err[0] = '\0';
	got = rn_doc_gpus_parse(list, ids, RN_DOC_GPUS_ENTRIES, err, sizeof(err));
	for (; valid; s = e + 1) {
		size_t len;

		e = strchr(s, ',');
		len = e ? (size_t)(e - s) : strlen(s);
		if (!len || n == RN_FZ_MAX_GPUS || !rn_fz_busid(s, len, want[n])) {
			valid = false;
			break;
		}
		for (int k = 0; k < n && valid; k++)
			valid = strcmp(want[k], want[n]) != 0;
		n++;
		if (!e)
			break;
	}
	if (valid != (got >= 0) || (valid && got != n))
		rn_fz_fail("--gpus '%s': taken as %d, the oracle says %s (%d): %s", list, got,
			   valid ? "valid" : "invalid", n, err);
	if (!valid) {
		if (got != -1 || !err[0] || strchr(err, '\n') || strncmp(err, "--gpus", 6) ||
		    !(strstr(err, "entry ") || strstr(err, "empty") || strstr(err, "more than")))
			rn_fz_fail("--gpus '%s' refused without a reason naming the entry: '%s'",
				   list, err);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (strcmp(ids[i], want[i]))
			rn_fz_fail("--gpus '%s': id %d is %s, not %s", list, i, ids[i], want[i]);
	return n;
}

/* Some argument before "--" asks for --json: "--j" to "--json", or "--json=...". */
static bool rn_fz_asks_json(char **store, int argc)
{
	for (int i = 1; i < argc && strcmp(store[i], "--"); i++) {
		size_t len = strlen(store[i]);

		if ((len >= 3 && len <= 6 && !strncmp(store[i], "--json", len)) ||
		    !strncmp(store[i], "--json=", 7))
			return true;
	}
	return false;
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
	if (rc != rc2 || o.json != o2.json ||
	    (!rc && (o.runs != o2.runs || !o.gpus != !o2.gpus || !o.ifaddrs != !o2.ifaddrs ||
		     o.ngpus != o2.ngpus || memcmp(o.gpu, o2.gpu, sizeof(o.gpu)))))
		rn_fz_fail("parsed twice: %d, then %d", rc, rc2);
	for (int i = 1; i < argc; i++)
		rn_fz_gpus(store[i]);
	if (rc == 0) {
		if (o.runs < 0 || o.runs > RN_DOC_TIME_MAX ||
		    (o.runs && !rn_fz_says(o.runs, store, argc)))
			rn_fz_fail("--time taken as %d", o.runs);
		if ((o.ifaddrs && !rn_fz_in_args(o.ifaddrs, store, argc)) ||
		    (o.gpus && !rn_fz_in_args(o.gpus, store, argc)))
			rn_fz_fail("--ifaddrs or --gpus does not point into the arguments");
		if (o.runs && o.json)
			rn_fz_fail("--time taken with --json");
		if (o.gpus &&
		    (rn_fz_gpus(o.gpus) != o.ngpus || memcmp(o.gpu, o2.gpu, sizeof(o.gpu))))
			rn_fz_fail("--gpus '%s' taken as %d ids", o.gpus, o.ngpus);
		if (!o.gpus && o.ngpus)
			rn_fz_fail("%d GPUs without --gpus", o.ngpus);
	} else if (rc == -1) {
		if (!err[0] || strchr(err, '\n') || strcmp(err, err2) || usage != usage2)
			rn_fz_fail("refused without a one-line reason: '%s'", err);
		if (o.json && !rn_fz_asks_json(store, argc))
			rn_fz_fail("refused in JSON without --json: '%s'", err);
	} else if (rc == RN_DOC_HELP) {
		bool asked = false;

		for (int i = 1; i < argc && !asked; i++)
			asked = !strncmp(store[i], "--h", 3);
		if (!asked)
			rn_fz_fail("help without --help");
	} else if (rc == RN_DOC_VERSION) {
		bool asked = false;

		for (int i = 1; i < argc && !asked; i++)
			asked = !strncmp(store[i], "--v", 3);
		if (!asked)
			rn_fz_fail("version without --version");
	} else {
		rn_fz_fail("rn_doc_opts_parse returned %d", rc);
	}
	for (int i = 0; i < argc; i++) {
		free(store[i]);
		free(store2[i]);
	}
	return 0;
}
