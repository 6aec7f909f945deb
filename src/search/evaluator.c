/*
 * evaluator.c - the evaluator interface's asks (search.h) as calls, for
 * the search, the joint evaluator and the tests.
 */
#include <string.h>

#include "search.h"

enum tp_status tp_evaluator_scratch_new(const struct tp_evaluator *ev,
					void **scratch, struct tp_error *err)
{
	struct tp_eval_call q;
	enum tp_status st;

	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_SCRATCH_NEW;
	st = ev->call(ev->ctx, &q, err);
	*scratch = st ? NULL : q.scratch;
	return st;
}

void tp_evaluator_scratch_free(const struct tp_evaluator *ev, void *scratch)
{
	struct tp_eval_call q;

	if (!scratch)
		return;
	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_SCRATCH_FREE;
	q.scratch = scratch;
	(void)ev->call(ev->ctx, &q, NULL);
}

enum tp_status tp_evaluator_run(const struct tp_evaluator *ev, void *scratch,
				const struct tp_plan *plan,
				struct tp_report *report, struct tp_error *err)
{
	struct tp_eval_call q;

	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_RUN;
	q.scratch = scratch;
	q.plan = plan;
	q.report = report;
	return ev->call(ev->ctx, &q, err);
}

enum tp_status tp_evaluator_finalize(const struct tp_evaluator *ev,
				     void *scratch, struct tp_plan *plan,
				     struct tp_report *report,
				     struct tp_error *err)
{
	struct tp_eval_call q;

	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_FINALIZE;
	q.scratch = scratch;
	q.plan = plan;
	q.answer = plan;
	q.report = report;
	return ev->call(ev->ctx, &q, err);
}

const struct tp_sim *tp_evaluator_bound_sim(const struct tp_evaluator *ev)
{
	struct tp_eval_call q;

	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_BOUND_SIM;
	return ev->call(ev->ctx, &q, NULL) ? NULL : q.sim;
}
