// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-doctor's command line (opts.h): --json, --ifaddrs FILE, --gpus LIST, --time N and
 * --help, and the validation of the --gpus list. It only parses: reading the files, asking the
 * CUDA driver and printing are railnet-doctor.c's. It must not print or exit.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

/* --json, an abbreviation of it, or "--json=..." among the arguments before a "--" */
static bool rn_doc_wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc && argv[i] && strcmp(argv[i], "--"); i++) {
		size_t len = strlen(argv[i]);

		if ((len >= 3 && len <= 6 && !strncmp(argv[i], "--json", len)) ||
		    !strncmp(argv[i], "--json=", 7))
			return true;
	}
	return false;
}

int rn_doc_opts_parse(int argc, char **argv, bool quiet, struct rn_doc_opts *o, bool *usage,
		      char *err, size_t errlen)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "ifaddrs", required_argument, NULL, 'i' },
		{ "time", required_argument, NULL, 't' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
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
			o->ngpus =
				rn_doc_gpus_parse(optarg, o->gpu, RN_DOC_GPUS_ENTRIES, err, errlen);
			if (o->ngpus < 0) {
				*usage = false;
				goto err;
			}
			break;
		case 't':
			/* in long, then the range: "4294967297" must not wrap to 1 in an int */
			errno = 0;
			runs = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || runs < 1 || runs > RN_DOC_TIME_MAX) {
				snprintf(err, errlen, "--time %s: a count 1..%d", optarg,
					 RN_DOC_TIME_MAX);
				*usage = false;
				goto err;
			}
			o->runs = (int)runs;
			break;
		case 'h':
			return RN_DOC_HELP;
		case 'v':
			return RN_DOC_VERSION;
		case ':': /* quiet only */
			snprintf(err, errlen, "option '%s' requires an argument", argv[optind - 1]);
			goto err;
		default:
			if (quiet && optopt)
				snprintf(err, errlen,
					 "invalid option -- '%c', or a value given to a flag that "
					 "takes none",
					 optopt);
			else if (quiet)
				snprintf(err, errlen, "unrecognized option '%s'", argv[optind - 1]);
			goto err;
		}
	}
	if (optind != argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		goto err;
	}
	if (o->runs && o->json) {
		snprintf(err, errlen,
			 "--time prints a benchmark line, not a JSON document: give --time or "
			 "--json, not both");
		*usage = false;
		goto err;
	}
	return 0;
err:
	o->json = rn_doc_wants_json(argc, argv);
	return -1;
}

/* "DDDD:BB:DD.F", "DDDDDDDD:BB:DD.F" or "BB:DD.F" (hex, any case), exactly len chars at s. */
static int rn_doc_busid(const char *s, size_t len, char busid[RN_DOC_BUSID_MAX])
{
	unsigned long dom = 0, bus, dev, fn;
	char b[17];

	if (len != 7 && len != 12 && len != 16)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		size_t from_end = len - i;

		if (from_end == 2		     ? s[i] != '.'
		    : from_end == 5 || from_end == 8 ? s[i] != ':'
						     : !isxdigit((unsigned char)s[i]))
			return -EINVAL;
	}
	memcpy(b, s, len);
	b[len] = '\0';
	/* the separators are checked above, so each strtoul stops exactly at one */
	if (len > 7)
		dom = strtoul(b, NULL, 16);
	bus = strtoul(b + len - 7, NULL, 16);
	dev = strtoul(b + len - 4, NULL, 16);
	fn = strtoul(b + len - 1, NULL, 16);
	if (dom > 0xffff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(busid, RN_DOC_BUSID_MAX, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
	return 0;
}

#define RN_DOC_SHOW 64 /* at most this much of an entry is quoted in a reason */

int rn_doc_gpus_parse(const char *list, char ids[][RN_DOC_BUSID_MAX], int max, char *err,
		      size_t errlen)
{
	static const char form[] =
		"write each GPU as a PCI bus id [DDDD:]BB:DD.F in hex (0000:51:00.0 or "
		"51:00.0; device 00-1f, function 0-7), comma-separated, no spaces";
	const char *s = list, *e;
	int n = 0;

	if (!*list) {
		snprintf(err, errlen, "--gpus '': the list is empty: %s", form);
		return -1;
	}
	for (;; s = e + 1) {
		size_t len;

		e = strchr(s, ',');
		len = e ? (size_t)(e - s) : strlen(s);
		if (!len) {
			snprintf(err, errlen, "--gpus: entry %d is empty (%s): %s", n + 1,
				 n ? (e ? "two commas in a row" : "a comma at the end")
				   : "a comma at the start",
				 form);
			return -1;
		}
		if (n == max) {
			snprintf(err, errlen, "--gpus: more than %d GPUs", max);
			return -1;
		}
		if (rn_doc_busid(s, len, ids[n])) {
			snprintf(err, errlen, "--gpus: entry %d '%.*s%s' is not a PCI bus id: %s",
				 n + 1, (int)(len > RN_DOC_SHOW ? RN_DOC_SHOW : len), s,
				 len > RN_DOC_SHOW ? "..." : "", form);
			return -1;
		}
		for (int k = 0; k < n; k++) {
			if (strcmp(ids[k], ids[n]))
				continue;
			snprintf(err, errlen,
				 "--gpus: entry %d '%.*s' is GPU %s again (entry %d): name each "
				 "GPU once, in CUDA order",
				 n + 1, (int)len, s, ids[n], k + 1);
			return -1;
		}
		n++;
		if (!e)
			return n;
	}
}
