// SPDX-License-Identifier: Apache-2.0
/*
 * railnet-bench result writers: the JSON document has the documented keys, escapes strings,
 * writes unchecked #wrong as null and NaN as "nan", and parses (python3's json module, when
 * present); the CSV has its "# key=value" preamble, the documented header and one row of 14
 * columns per table row.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rb.h"
#include "rn_test.h"

static struct rb_args rb_test_args;
static struct rb_row rb_test_rows[2];
static struct rb_device rb_test_dev[2];
static char *rb_test_env[] = { (char *)"NCCL_DEBUG=WARN", (char *)"RAILNET_X=\"quoted\\path\"",
			       NULL };
static char *rb_test_argv[] = { (char *)"railnet-bench", (char *)"--nccl", (char *)"-b",
				(char *)"8", NULL };

static void fill_run(struct rb_run_info *r)
{
	char *argv[] = { (char *)"railnet-bench",
			 (char *)"--nccl",
			 (char *)"-b",
			 (char *)"8",
			 (char *)"-e",
			 (char *)"16",
			 (char *)"-f",
			 (char *)"2",
			 NULL };
	char err[256];

	assert_int_equal(rb_args_parse(8, argv, &rb_test_args, err, sizeof(err)), 0);
	memset(r, 0, sizeof(*r));
	r->mode = "nccl";
	r->prog = "railnet-bench";
	r->coll = RB_COLL_ALL_REDUCE;
	r->nranks = 2;
	r->nprocs = 2;
	r->nccl_headers = 22809;
	r->nccl_library = 22809;
	snprintf(r->host, sizeof(r->host), "node1");
	snprintf(r->kernel, sizeof(r->kernel), "Linux 6.1");
	snprintf(r->cpu, sizeof(r->cpu), "Some CPU\t@ 2GHz");
	snprintf(r->start_time, sizeof(r->start_time), "2026-01-01 00:00:00");
	snprintf(r->end_time, sizeof(r->end_time), "2026-01-01 00:00:01");
	r->argc = 4;
	r->argv = rb_test_argv;
	r->envp = rb_test_env;
	r->args = &rb_test_args;
	for (int i = 0; i < 2; i++) {
		rb_test_dev[i] = (struct rb_device){ .rank = i, .pid = 100 + i, .device = i };
		snprintf(rb_test_dev[i].host, sizeof(rb_test_dev[i].host), "node1");
		snprintf(rb_test_dev[i].pci, sizeof(rb_test_dev[i].pci), "0000:1b:00");
		snprintf(rb_test_dev[i].name, sizeof(rb_test_dev[i].name), "NVIDIA H200");
	}
	r->devices = rb_test_dev;
	r->ndevices = 2;
	rb_test_rows[0] = (struct rb_row){ .size = 8,
					   .count = 2,
					   .type = RB_FLOAT,
					   .op = RB_OP_SUM,
					   .root = -1,
					   .oop = { 12.5, 0.0006, 0.0006, 0, 20 },
					   .ip = { 12.0, 0.0007, 0.0007, 0, 20 } };
	rb_test_rows[1] = (struct rb_row){ .size = 16,
					   .count = 4,
					   .type = RB_FLOAT,
					   .op = RB_OP_SUM,
					   .root = -1,
					   .oop = { 13.0, 0.001, 0.001, -1, 20 },
					   .ip = { NAN, 0.001, 0.001, 5, 20 } };
	r->rows = rb_test_rows;
	r->nrows = 2;
	r->oob = 1;
	r->avg_busbw = 0.0008;
	r->bw_verdict = "";
}

static char *write_to_string(int (*writer)(FILE *, const struct rb_run_info *),
			     const struct rb_run_info *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(writer(f, r), 0);
	fclose(f);
	return text;
}

static void test_json(void **state)
{
	struct rb_run_info r;
	char *js;
	static const char *const keys[] = {
		"\"format\": \"railnet-bench\"",
		"\"format_version\": 1",
		"\"mode\": \"nccl\"",
		"\"collective\": \"all_reduce\"",
		"\"nccl_version\": 22809",
		"\"config\": {",
		"\"minimum_bytes\": 8",
		"\"maximum_bytes\": 16",
		"\"step_factor\": 2",
		"\"devices\": [",
		"\"device_hex\": \"0000:1b:00\"",
		"\"results\": [",
		"\"root\": \"-1\"",
		"\"out_of_place\": {\"time\": 12.5",
		"\"nwrong\": null",
		"\"time\": \"nan\"",
		"\"nwrong\": 5",
		("\"out_of_bounds\": {\"count\": 1, "
		 "\"okay\": false}"),
		"\"okay\": \"unchecked\"",
		"\"errors\": []",
		"\"RAILNET_X=\\\"quoted\\\\path\\\"\"",
		"\"cpu\": \"Some CPU\\t@ 2GHz\"",
		"\"args\": [\"railnet-bench\", \"--nccl\", \"-b\", \"8\"]",
	};

	fill_run(&r);
	js = write_to_string(rb_write_json, &r);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strstr(js, keys[i]))
			fail_msg("JSON lacks %s:\n%s", keys[i], js);

	/* Parse it for real where python3 exists. */
	if (!system("command -v python3 >/dev/null 2>&1")) {
		char path[] = "/tmp/rb_json_XXXXXX", cmd[256];
		int fd = mkstemp(path);
		FILE *f = fdopen(fd, "w");

		assert_non_null(f);
		fputs(js, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
			 "assert len(d[\"results\"]) == 2' %s",
			 path);
		assert_int_equal(system(cmd), 0);
		unlink(path);
	}
	free(js);

	r.bw_verdict = "OK";
	r.error = "NCCL WARN \"x\"";
	js = write_to_string(rb_write_json, &r);
	assert_non_null(strstr(js, "\"okay\": true}"));
	assert_non_null(strstr(js, "\"errors\": [\"NCCL WARN \\\"x\\\"\"]"));
	free(js);
}

static void test_csv(void **state)
{
	struct rb_run_info r;
	char *csv, *line, *save = NULL;
	int rows = 0, header = 0;

	fill_run(&r);
	csv = write_to_string(rb_write_csv, &r);
	assert_non_null(strstr(csv, "# railnet-bench csv 1\n"));
	assert_non_null(strstr(csv, "# mode=nccl\n"));
	assert_non_null(strstr(csv, "# collective=all_reduce\n"));
	assert_non_null(strstr(csv, "# nccl_version=22809\n"));
	assert_non_null(strstr(csv, "# env NCCL_DEBUG=WARN\n"));
	for (line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int commas = 0;

		if (line[0] == '#')
			continue;
		for (char *p = line; *p; p++)
			commas += *p == ',';
		assert_int_equal(commas, 13);
		if (!header) {
			assert_string_equal(line,
					    "size,count,type,redop,root,oop_time_us,oop_algbw,"
					    "oop_busbw,oop_nwrong,ip_time_us,ip_algbw,ip_busbw,"
					    "ip_nwrong,timestamp");
			header = 1;
			continue;
		}
		rows++;
		if (rows == 1)
			assert_string_equal(line, "8,2,float,sum,-1,12.5,0.0006,0.0006,0,12,0.0007,"
						  "0.0007,0,");
		else
			assert_string_equal(line, "16,4,float,sum,-1,13,0.001,0.001,,nan,0.001,"
						  "0.001,5,");
	}
	assert_int_equal(rows, 2);
	free(csv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_csv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
