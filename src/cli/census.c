/*
 * census.c - the profile line of plan's and simulate's summaries: how
 * the plan's ops were priced, and which device types run faster than
 * their catalogue peak (cli.h).
 */
#include <stdio.h>

#include "cli.h"
#include "core/precision.h"
#include "core/profile.h"
#include "render/scene.h"
#include "sim/sim.h"

void tp_cli_profile_note(const struct tp_sim *sim, const struct tp_plan *p,
			 const struct tp_model *m, const struct tp_cluster *c,
			 FILE *f)
{
	uint32_t n[TP_PROFILE_HOW_COUNT];
	struct tp_sim_scratch *s;
	struct tp_error err;
	bool first = true;

	if (!sim || !m->profiles.n)
		return;
	s = tp_sim_scratch_new(sim);
	tp_error_clear(&err);
	if (!s || tp_sim_profile_census(sim, p, s, n, &err)) {
		tp_sim_scratch_free(s);
		return;
	}
	tp_sim_scratch_free(s);
	fprintf(f,
		"  profile        ops priced: %u measured, %u interpolated, "
		"%u extrapolated, %u roofline (no profile for their type)\n",
		n[TP_PROFILE_MEASURED], n[TP_PROFILE_INTERPOLATED],
		n[TP_PROFILE_EXTRAPOLATED], n[TP_PROFILE_NONE]);
	for (uint32_t t = 0; t < c->types.n; t++) {
		bool prof;
		double v = tp_sim_type_speed(sim, t, &prof);
		char a[32], b[32];
		if (!prof)
			continue;
		tp_render_fmt_si(a, sizeof(a), v, "FLOP/s");
		tp_render_fmt_si(
		    b, sizeof(b),
		    tp_precision_gemm_peak(&c->types.v[t], m->dtype), "FLOP/s");
		fprintf(f, "%s%s %s (catalogue peak %s)",
			first ? "  speeds         profiled above the peak: "
			      : ", ",
			c->types.v[t].name, a, b);
		first = false;
	}
	if (!first)
		fprintf(f, "; MFU and the lower bound divide by these\n");
}
