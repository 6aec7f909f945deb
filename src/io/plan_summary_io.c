/*
 * plan_summary_io.c - parts of a tagplan-plan/1 summary (plan_io.c): its
 * runtime fit (written) and the objective the search minimised (summary.
 * search "objective", "max_iter_time_s"; written and read).
 */
#include <stdio.h>
#include <string.h>

#include "core/jsonw.h"
#include "core/runtime.h"
#include "io_int.h"

void tp_io_write_fit(struct tp_jw *jw, const struct tp_plan_summary *s)
{
	if (!s->runtime_note[0] && !s->have_unconstrained && !s->idle_devices)
		return;
	tp_jw_key(jw, "runtime_fit");
	tp_jw_object_begin(jw);
	if (s->runtime_note[0])
		tp_jw_kv_string(jw, "note", s->runtime_note);
	if (s->have_unconstrained) {
		tp_jw_key(jw, "unconstrained");
		tp_jw_object_begin(jw);
		tp_jw_kv_number(jw, "iteration_time_s",
				s->unconstrained_time_s);
		if (s->iteration_time_s > 0 && s->unconstrained_time_s > 0)
			tp_jw_kv_number(jw, "speedup",
					s->iteration_time_s /
					    s->unconstrained_time_s);
		tp_jw_key(jw, "needs");
		tp_jw_array_begin(jw);
		for (int c = 0; c < TP_CAP_COUNT; c++)
			if (s->unconstrained_needs & (1u << c))
				tp_jw_string(jw, tp_runtime_cap_name(
							 (enum tp_runtime_cap)c));
		tp_jw_array_end(jw);
		if (s->unconstrained_why[0])
			tp_jw_kv_string(jw, "why", s->unconstrained_why);
		tp_jw_key(jw, "runtimes");
		tp_jw_array_begin(jw);
		for (const char *r = s->unconstrained_runtimes; *r;) {
			char name[64];
			size_t n = strcspn(r, ",");
			snprintf(name, sizeof(name), "%.*s", (int)n, r);
			tp_jw_string(jw, name);
			r += n;
			r += strspn(r, ", ");
		}
		tp_jw_array_end(jw);
		tp_jw_object_end(jw);
	}
	if (s->idle_devices) {
		tp_jw_key(jw, "idle");
		tp_jw_object_begin(jw);
		tp_jw_kv_int(jw, "devices", s->idle_devices);
		if (s->idle_types[0])
			tp_jw_kv_string(jw, "types", s->idle_types);
		if (s->have_all_devices)
			tp_jw_kv_number(jw, "all_devices_iteration_time_s",
					s->all_devices_time_s);
		if (s->idle_why[0])
			tp_jw_kv_string(jw, "why", s->idle_why);
		tp_jw_object_end(jw);
	}
	tp_jw_object_end(jw);
}

void tp_io_write_objective(struct tp_jw *jw, const struct tp_plan_summary *s)
{
	if (!s->objective_cost)
		return;
	tp_jw_kv_string(jw, "objective", "cost");
	tp_jw_kv_number(jw, "max_iter_time_s", s->max_iter_time_s);
}

enum tp_status tp_io_read_objective(struct tp_jctx *j,
				    const struct tp_json *search,
				    struct tp_plan_summary *sum)
{
	const char *name;
	enum tp_status st;

	if ((st = tp_jget_string(j, search, "objective", false, 16, false,
				 "throughput", &name)))
		return st;
	sum->objective_cost = strcmp(name, "cost") == 0;
	if (!sum->objective_cost && strcmp(name, "throughput") != 0)
		return tp_jctx_fail(j, "objective",
				    "expected \"throughput\" or \"cost\"");
	if (sum->objective_cost != (tp_json_get(search, "max_iter_time_s") !=
				    NULL))
		return tp_jctx_fail(j, sum->objective_cost ? "objective"
							   : "max_iter_time_s",
				    "max_iter_time_s goes with \"objective\": "
				    "\"cost\" (the limit it met), and only "
				    "with it");
	if (!sum->objective_cost)
		return TP_OK;
	return tp_jget_number(j, search, "max_iter_time_s", true, TP_JNUM_POS,
			      0, &sum->max_iter_time_s, NULL);
}
