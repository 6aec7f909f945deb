/*
 * simeval.c - the simulator (and the gradient-compression selection of
 * sfb.h) behind the search's evaluator interface.
 */
#include <stdlib.h>

#include "sim/sim.h"
#include "search.h"
#include "search_int.h"
#include "sfb.h"

struct scratch {
	struct tp_sim_scratch *sim;
	struct tp_sfb_scratch *sfb;
};

static void sim_scratch_free(void *ctx, void *p)
{
	struct scratch *s = p;

	(void)ctx;
	if (!s)
		return;
	tp_sim_scratch_free(s->sim);
	tp_sfb_scratch_free(s->sfb);
	free(s);
}

static void *sim_scratch_new(void *ctx)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sim = tp_sim_scratch_new(se->sim);
	if (se->sfb)
		s->sfb = tp_sfb_scratch_new(se->sfb);
	if (!s->sim || (se->sfb && !s->sfb)) {
		sim_scratch_free(ctx, s);
		return NULL;
	}
	return s;
}

static enum tp_status sim_run(void *ctx, void *scratch,
			      const struct tp_plan *plan,
			      struct tp_report *report, struct tp_error *err)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = scratch;

	return tp_sim_run(se->sim, plan, s->sim, report, NULL, err);
}

static enum tp_status sim_finalize(void *ctx, void *scratch,
				   struct tp_plan *plan,
				   struct tp_report *report,
				   struct tp_error *err)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = scratch;

	if (!se->sfb || plan->compression == TP_COMPRESSION_OFF)
		return tp_sim_run(se->sim, plan, s->sim, report, NULL, err);
	return tp_sfb_simulate(se->sfb, se->sim, plan, s->sfb, s->sim, report,
			       NULL, err);
}

void tp_search_sim_evaluator(struct tp_search_simeval *ctx,
			     const struct tp_sim *sim,
			     const struct tp_sfb *sfb,
			     struct tp_evaluator *ev)
{
	ctx->sim = sim;
	ctx->sfb = sfb;
	ev->ctx = ctx;
	ev->scratch_new = sim_scratch_new;
	ev->scratch_free = sim_scratch_free;
	ev->run = sim_run;
	ev->finalize = sim_finalize;
	ev->answer_report = NULL;
	/* the search recognises this evaluator (tp_search_simeval_of) */
	ev->bounded_sim = NULL;
	ev->run_bounded = NULL;
}

const struct tp_sim *tp_search_simeval_of(const struct tp_evaluator *ev)
{
	if (!ev || ev->run != sim_run || !ev->ctx)
		return NULL;
	return ((const struct tp_search_simeval *)ev->ctx)->sim;
}

enum tp_status tp_search_simeval_run_bounded(const struct tp_evaluator *ev,
					     void *scratch,
					     const struct tp_plan *plan,
					     double cutoff,
					     struct tp_report *report,
					     struct tp_sim_cut *cut,
					     struct tp_error *err)
{
	const struct tp_search_simeval *se = ev->ctx;
	struct scratch *s = scratch;

	return tp_sim_run_bounded(se->sim, plan, s->sim, cutoff, report, NULL,
				  cut, err);
}
