// SPDX-License-Identifier: Apache-2.0
/*
 * Plain driver for libFuzzer targets, so that every compiler (gcc CI included) runs them:
 * it feeds LLVMFuzzerTestOneInput each file given (or each file of each directory given),
 * then a fixed number of pseudo-random inputs, half fresh bytes and half mutations and
 * splices of the corpus. The sequence depends only on --seed, so a failure is reproducible.
 * It is not a fuzzer (no coverage feedback); the clang build has the real one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RN_DRIVER_MAX_INPUT 8192

struct rn_input {
	uint8_t *data;
	size_t size;
};

/* the corpus and regression inputs given; grows as `make fuzz` grows the corpus */
static struct rn_input *rn_corpus;
static size_t rn_ncorpus, rn_corpus_cap;

static uint64_t rn_rng_state;

static uint64_t rn_rand(void)
{
	/* xorshift64*: small, fast, and the same sequence on every machine */
	rn_rng_state ^= rn_rng_state >> 12;
	rn_rng_state ^= rn_rng_state << 25;
	rn_rng_state ^= rn_rng_state >> 27;
	return rn_rng_state * 0x2545f4914f6cdd1dULL;
}

static int rn_load_file(const char *path)
{
	uint8_t *buf;
	size_t n;
	FILE *f;

	if (rn_ncorpus == rn_corpus_cap) {
		size_t cap = rn_corpus_cap ? 2 * rn_corpus_cap : 256;
		struct rn_input *c = realloc(rn_corpus, cap * sizeof(*c));

		if (!c) {
			fprintf(stderr, "driver: no memory for %zu corpus files\n", cap);
			return -1;
		}
		rn_corpus = c;
		rn_corpus_cap = cap;
	}
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	buf = malloc(RN_DRIVER_MAX_INPUT);
	if (!buf) {
		fclose(f);
		return -1;
	}
	n = fread(buf, 1, RN_DRIVER_MAX_INPUT, f);
	fclose(f);
	rn_corpus[rn_ncorpus].data = buf;
	rn_corpus[rn_ncorpus].size = n;
	rn_ncorpus++;
	return 0;
}

static int rn_load(const char *path)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;
	int ret = 0;

	if (stat(path, &st)) {
		fprintf(stderr, "driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return rn_load_file(path);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		ret = rn_load_file(sub);
	}
	closedir(d);
	return ret;
}

/* One random input in buf: fresh bytes, or a corpus entry mutated and maybe spliced. */
static size_t rn_make_input(uint8_t *buf)
{
	size_t size, i, n;

	if (!rn_ncorpus || rn_rand() % 2) {
		size = rn_rand() % 512;
		for (i = 0; i < size; i++) {
			/* mostly printable with separators, sometimes any byte */
			uint64_t r = rn_rand();

			buf[i] = r % 8 ? (uint8_t)(0x20 + (r >> 8) % 95) : (uint8_t)(r >> 16);
			if (r % 23 == 0)
				buf[i] = r % 2 ? '\n' : '=';
		}
		return size;
	}
	{
		const struct rn_input *in = &rn_corpus[rn_rand() % rn_ncorpus];

		size = in->size;
		memcpy(buf, in->data, size);
	}
	n = 1 + rn_rand() % 8;
	while (n--) {
		size_t pos = size ? rn_rand() % size : 0;

		switch (rn_rand() % 5) {
		case 0: /* replace a byte */
			if (size)
				buf[pos] = (uint8_t)rn_rand();
			break;
		case 1: /* insert a byte */
			if (size < RN_DRIVER_MAX_INPUT) {
				memmove(buf + pos + 1, buf + pos, size - pos);
				buf[pos] = (uint8_t)rn_rand();
				size++;
			}
			break;
		case 2: /* delete a run */
			if (size) {
				size_t len = 1 + rn_rand() % (size - pos);

				memmove(buf + pos, buf + pos + len, size - pos - len);
				size -= len;
			}
			break;
		case 3: /* splice in part of another corpus entry */
		{
			const struct rn_input *o = &rn_corpus[rn_rand() % rn_ncorpus];
			size_t from = o->size ? rn_rand() % o->size : 0;
			size_t len = o->size - from;

			if (len > RN_DRIVER_MAX_INPUT - size)
				len = RN_DRIVER_MAX_INPUT - size;
			memmove(buf + pos + len, buf + pos, size - pos);
			memcpy(buf + pos, o->data + from, len);
			size += len;
			break;
		}
		default: /* digits are where number parsers break */
			if (size)
				buf[pos] = "0123456789xX-+"[rn_rand() % 14];
			break;
		}
	}
	return size;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 5000, i;
	static uint8_t buf[RN_DRIVER_MAX_INPUT];
	int a;

	rn_rng_state = 0x9e3779b97f4a7c15ULL;
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--iterations") && a + 1 < argc) {
			iterations = strtoul(argv[++a], NULL, 10);
		} else if (!strcmp(argv[a], "--seed") && a + 1 < argc) {
			rn_rng_state = strtoull(argv[++a], NULL, 0) | 1;
		} else if (argv[a][0] == '-') {
			fprintf(stderr, "usage: %s [--iterations N] [--seed S] [FILE|DIR]...\n",
				argv[0]);
			return 2;
		} else if (rn_load(argv[a])) {
			return 1;
		}
	}
	for (i = 0; i < rn_ncorpus; i++)
		LLVMFuzzerTestOneInput(rn_corpus[i].data, rn_corpus[i].size);
	for (i = 0; i < iterations; i++) {
		size_t size = rn_make_input(buf);

		LLVMFuzzerTestOneInput(buf, size);
	}
	printf("driver: %zu corpus inputs and %lu generated inputs ran\n", rn_ncorpus, iterations);
	for (i = 0; i < rn_ncorpus; i++)
		free(rn_corpus[i].data);
	free(rn_corpus);
	return 0;
}
