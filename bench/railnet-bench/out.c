/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Result files: JSON (--json/-J) and CSV (--csv), written once at the end of a run by world
 * rank 0 from the rows the table printed. The JSON keeps nccl-tests' key names where they
 * exist (config, results[].out_of_place.bus_bw, out_of_bounds, average_bus_bandwidth) and adds
 * what a comparison across machines needs: mode, collective, machine, versions, environment.
 * The schema is documented in docs/bench.md and versioned by "format_version".
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "rb.h"

#define RB_JSON_FORMAT_VERSION 1
#define RB_CSV_FORMAT_VERSION 1

const char *rb_average_name(int a)
{
	static const char *const names[] = { "rank0", "mean", "min", "max" };

	return a >= 0 && a < 4 ? names[a] : "unknown";
}

static void rb_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void rb_json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("\"nan\"", f);
	else
		fprintf(f, "%.10g", v);
}

static void rb_json_kv_str(FILE *f, const char *indent, const char *k, const char *v,
			   const char *sep)
{
	fprintf(f, "%s\"%s\": ", indent, k);
	rb_json_str(f, v);
	fputs(sep, f);
}

static void rb_json_half(FILE *f, const char *name, const struct rb_half *h, int cputime,
			 const char *sep)
{
	fprintf(f, "      \"%s\": {\"%s\": ", name, cputime ? "cpu_time" : "time");
	rb_json_num(f, h->time_us);
	fputs(", \"alg_bw\": ", f);
	rb_json_num(f, h->algbw);
	fputs(", \"bus_bw\": ", f);
	rb_json_num(f, h->busbw);
	fputs(", \"nwrong\": ", f);
	if (h->wrong < 0)
		fputs("null", f);
	else
		fprintf(f, "%.0f", h->wrong);
	fprintf(f, ", \"iterations\": %d}%s\n", h->iters, sep);
}

static const char *rb_redop_name(const struct rb_row *row)
{
	return row->op < RB_OP_NR ? rb_op_names[row->op] : "none";
}

int rb_write_json(FILE *f, const struct rb_run_info *r)
{
	const struct rb_args *a = r->args;

	fputs("{\n", f);
	fprintf(f, "  \"format\": \"railnet-bench\",\n  \"format_version\": %d,\n",
		RB_JSON_FORMAT_VERSION);
	rb_json_kv_str(f, "  ", "tool_version", RB_VERSION, ",\n");
	rb_json_kv_str(f, "  ", "mode", r->mode, ",\n");
	rb_json_kv_str(f, "  ", "collective", rb_colls[r->coll].name, ",\n");
	rb_json_kv_str(f, "  ", "start_time", r->start_time, ",\n");
	rb_json_kv_str(f, "  ", "end_time", r->end_time, ",\n");
	fputs("  \"args\": [", f);
	for (int i = 0; i < r->argc; i++) {
		rb_json_str(f, r->argv[i]);
		if (i + 1 < r->argc)
			fputs(", ", f);
	}
	fputs("],\n  \"env\": [", f);
	for (int i = 0; r->envp && r->envp[i]; i++) {
		if (i)
			fputs(", ", f);
		rb_json_str(f, r->envp[i]);
	}
	fputs("],\n  \"machine\": {", f);
	rb_json_kv_str(f, "", "hostname", r->host, ", ");
	rb_json_kv_str(f, "", "kernel", r->kernel, ", ");
	rb_json_kv_str(f, "", "cpu", r->cpu, ", ");
	fprintf(f, "\"nprocs\": %d, \"nranks\": %d},\n", r->nprocs, r->nranks);
	fprintf(f, "  \"nccl_version\": %d,\n  \"nccl_headers\": %d,\n", r->nccl_library,
		r->nccl_headers);
	fprintf(f, "  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n", r->cuda_runtime,
		r->cuda_driver);

	fputs("  \"config\": {\n", f);
	fprintf(f,
		"    \"nthreads\": %d, \"ngpus\": %d, \"minimum_bytes\": %zu, "
		"\"maximum_bytes\": %zu,\n",
		a->nthreads, a->ngpus, a->minbytes, a->maxbytes);
	if (a->stepfactor > 1)
		fprintf(f, "    \"step_factor\": %ld,\n", a->stepfactor);
	else
		fprintf(f, "    \"step_bytes\": %zu,\n", a->stepbytes);
	fprintf(f,
		"    \"warmup_iters\": %d, \"iterations\": %d, \"aggregated_iterations\": %d, "
		"\"run_cycles\": %d,\n",
		a->warmup_iters, a->iters, a->agg_iters, a->cycles);
	fprintf(f,
		"    \"validation\": %d, \"graph\": %d, \"blocking_collectives\": %d, "
		"\"stream_null\": %s,\n",
		a->check, a->graph, a->blocking, a->stream_null ? "true" : "false");
	fprintf(f,
		"    \"report_cputime\": %s, \"average\": \"%s\", \"unalign\": %ld, "
		"\"local_register\": %d, \"cta_policy\": %d, \"timeout\": %d,\n",
		a->cputime ? "true" : "false", rb_average_name(a->average), a->unalign,
		a->local_register, a->cta_policy, a->timeout_s);
	fputs("    \"devices\": [\n", f);
	for (int i = 0; i < r->ndevices; i++) {
		const struct rb_device *d = &r->devices[i];

		fprintf(f, "      {\"rank\": %d, \"group\": %d, \"pid\": %d, ", d->rank, d->group,
			d->pid);
		rb_json_kv_str(f, "", "hostname", d->host, ", ");
		fprintf(f, "\"device\": %d, ", d->device);
		rb_json_kv_str(f, "", "device_hex", d->pci, ", ");
		rb_json_kv_str(f, "", "device_info", d->name, "");
		fprintf(f, "}%s\n", i + 1 < r->ndevices ? "," : "");
	}
	fputs("    ]\n  },\n", f);

	fputs("  \"results\": [\n", f);
	for (int i = 0; i < r->nrows; i++) {
		const struct rb_row *row = &r->rows[i];

		fprintf(f, "    {\"size\": %zu, \"count\": %zu, ", row->size, row->count);
		rb_json_kv_str(f, "", "type", rb_types[row->type].name, ", ");
		rb_json_kv_str(f, "", "redop", rb_redop_name(row), ", ");
		fprintf(f, "\"root\": \"%d\",", row->root);
		if (row->timestamp[0]) {
			fputc(' ', f);
			rb_json_kv_str(f, "", "timestamp", row->timestamp, ",");
		}
		fputc('\n', f);
		rb_json_half(f, "out_of_place", &row->oop, a->cputime, ",");
		rb_json_half(f, "in_place", &row->ip, a->cputime, "");
		fprintf(f, "    }%s\n", i + 1 < r->nrows ? "," : "");
	}
	fputs("  ],\n", f);
	fprintf(f, "  \"out_of_bounds\": {\"count\": %ld, \"okay\": %s},\n", r->oob,
		r->oob ? "false" : "true");
	fputs("  \"average_bus_bandwidth\": {\"bandwidth\": ", f);
	rb_json_num(f, r->avg_busbw);
	fputs(", \"okay\": ", f);
	if (!r->bw_verdict || !*r->bw_verdict)
		fputs("\"unchecked\"", f);
	else
		fputs(strcmp(r->bw_verdict, "OK") ? "false" : "true", f);
	fputs("},\n  \"errors\": [", f);
	if (r->error && *r->error)
		rb_json_str(f, r->error);
	fputs("]\n}\n", f);
	return ferror(f) ? -EIO : 0;
}

static void rb_csv_half(FILE *f, const struct rb_half *h)
{
	fprintf(f, ",%.6g,%.6g,%.6g,", h->time_us, h->algbw, h->busbw);
	if (h->wrong >= 0)
		fprintf(f, "%.0f", h->wrong);
}

int rb_write_csv(FILE *f, const struct rb_run_info *r)
{
	const struct rb_args *a = r->args;

	fprintf(f, "# railnet-bench csv %d\n", RB_CSV_FORMAT_VERSION);
	fprintf(f, "# tool_version=%s\n# mode=%s\n# collective=%s\n", RB_VERSION, r->mode,
		rb_colls[r->coll].name);
	fprintf(f, "# hostname=%s\n# kernel=%s\n# cpu=%s\n", r->host, r->kernel, r->cpu);
	fprintf(f, "# nprocs=%d\n# nranks=%d\n# ngpus_per_proc=%d\n", r->nprocs, r->nranks,
		a->ngpus);
	fprintf(f, "# nccl_version=%d\n# nccl_headers=%d\n# cuda_runtime=%d\n# cuda_driver=%d\n",
		r->nccl_library, r->nccl_headers, r->cuda_runtime, r->cuda_driver);
	fprintf(f, "# iters=%d\n# agg_iters=%d\n# warmup_iters=%d\n# check=%d\n# blocking=%d\n",
		a->iters, a->agg_iters, a->warmup_iters, a->check, a->blocking);
	fprintf(f, "# average=%s\n# time=%s\n# start_time=%s\n# end_time=%s\n",
		rb_average_name(a->average), a->cputime ? "cpu" : "completion", r->start_time,
		r->end_time);
	fprintf(f, "# out_of_bounds=%ld\n# avg_busbw=%g\n", r->oob, r->avg_busbw);
	for (int i = 0; r->envp && r->envp[i]; i++)
		if (!strchr(r->envp[i], '\n'))
			fprintf(f, "# env %s\n", r->envp[i]);
	fputs("size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_nwrong,"
	      "ip_time_us,ip_algbw,ip_busbw,ip_nwrong,timestamp\n",
	      f);
	for (int i = 0; i < r->nrows; i++) {
		const struct rb_row *row = &r->rows[i];

		fprintf(f, "%zu,%zu,%s,%s,%d", row->size, row->count, rb_types[row->type].name,
			rb_redop_name(row), row->root);
		rb_csv_half(f, &row->oop);
		rb_csv_half(f, &row->ip);
		fprintf(f, ",%s\n", row->timestamp);
	}
	return ferror(f) ? -EIO : 0;
}
