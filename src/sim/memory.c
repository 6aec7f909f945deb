/*
 * memory.c - memory per device (README section 5): the activation peak of
 * every resource from walking its task order, the per-device terms the
 * report shows, whether everything fits (before the event simulation, for
 * bounded runs), and, for a device that does not fit, what dominates and
 * the smallest change that would.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

/* The activation peak of every resource, walking its queue: the queue's
 * tasks (early: tp_sim_order_compute's numbers, decoded as compute_tasks
 * lays them out, sim lane L's 2m forwards and backwards then its m W
 * passes from L * per; optimizer steps, only in the graph's queues,
 * change nothing). */
static void walk(const struct tp_plan *plan, struct tp_sim_scratch *s,
		 bool early)
{
	uint32_t m = plan->micro_batches, per = (s->zb ? 3 : 2) * m;

	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		double cur = 0, peak = 0;
		for (uint32_t k = 0; k < rs->q_n; k++) {
			uint32_t id = s->queue.v[rs->q_first + k].task, L;
			int kind;
			const struct lane *ln;
			if (early) {
				uint32_t off = id % per;
				L = id / per;
				kind = off >= 2 * m ? TK_W
				       : off & 1    ? TK_B
						    : TK_F;
			} else {
				L = s->tasks.v[id].ref;
				kind = s->tasks.v[id].kind;
			}
			ln = &s->lanes.v[s->sims.v[L].lane];
			if (kind == TK_F) {
				cur += ln->act;
				if (cur > peak)
					peak = cur;
			} else if (kind == TK_B && !s->zb) {
				if (cur + ln->work > peak)
					peak = cur + ln->work;
				cur -= ln->act;
			} else if (kind == TK_B) {
				/* zb-h1: the W pass keeps the inputs and
				   output gradients of the ops with weights
				   (more than act under full recomputation) */
				if (cur + ln->work > peak)
					peak = cur + ln->work;
				cur += ln->act_w - ln->act;
				if (cur > peak)
					peak = cur;
			} else if (kind == TK_W) {
				cur -= ln->act_w;
			}
		}
		rs->peak_act = peak;
	}
}

void tp_sim_memory_walk(const struct tp_plan *plan, struct tp_sim_scratch *s)
{
	walk(plan, s, false);
}

void tp_sim_memory_walk_early(const struct tp_plan *plan,
			      struct tp_sim_scratch *s)
{
	walk(plan, s, true);
}

static double gb(double x)
{
	return x / 1e9;
}

static void suggest(const struct tp_sim *sim, const struct tp_plan *plan,
		    const struct tp_report_device *rd, const struct devmem *dm,
		    char *buf, size_t size)
{
	double cap = rd->capacity_bytes, peak = rd->peak_memory_bytes;
	const struct tp_memory_breakdown *b = &rd->memory;
	double state = b->weights + b->gradients + b->optimizer;

	(void)sim;
	if (dm->dp_min >= 2 && plan->zero < 3) {
		for (uint32_t z = plan->zero + 1; z <= 3; z++) {
			double d = dm->dp_min;
			double ns =
				dm->w0 / tp_cost_zero_div(z, TP_COST_WEIGHTS, d) +
				dm->g0 / tp_cost_zero_div(z, TP_COST_GRADS, d) +
				dm->o0 / tp_cost_zero_div(z, TP_COST_OPTIMIZER, d);
			if (peak - state + ns <= cap &&
			    state >= b->activations) {
				snprintf(buf, size,
					 "zero=%u (shards %s over the %u "
					 "data-parallel replicas)",
					 z,
					 z == 1   ? "the optimizer state"
					 : z == 2 ? "optimizer state and "
						    "gradients"
						  : "optimizer state, gradients "
						    "and weights",
					 dm->dp_min);
				return;
			}
		}
	}
	if (b->activations > 0 && dm->act > 0) {
		double full = b->activations * dm->act_full / dm->act;
		bool has_full = dm->act_full >= dm->act * 0.999;
		if (!has_full && peak - b->activations + full <= cap) {
			snprintf(buf, size,
				 "recompute=full (keeps only layer inputs: "
				 "activations %.1f GB instead of %.1f GB)",
				 gb(full), gb(b->activations));
			return;
		}
		if (peak - b->activations / 2 <= cap) {
			snprintf(buf, size,
				 "a micro-batch half as large (twice the "
				 "micro-batches: activations %.1f GB)",
				 gb(b->activations / 2));
			return;
		}
	}
	snprintf(buf, size,
		 "more devices for this work (raise tp or pp; it needs about "
		 "%.2fx its memory)",
		 peak / (cap > 0 ? cap : 1));
}

/*
 * Does every device's memory (as the report will count it: model state,
 * activation peak of its task order, temporary buffers, reserved) fit?
 * Else *over = the worst excess / that device's capacity.  Needs
 * tp_sim_memory_walk.  The sums run in the order of tp_sim_memory_terms
 * and the report's totals, so the answer is exactly its feasibility.
 */
bool tp_sim_memory_fits(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, double *over)
{
	const struct tp_cluster *c = sim->c;
	uint32_t nd = sim->n_dev;
	double *w, *g, *o, *a, *t, worst = -INFINITY, cap_w = 1;
	bool fits = true;

	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, 5 * (size_t)nd + 5))
		return true; /* cannot tell: simulate */
	w = s->dtmp.v;
	g = w + nd;
	o = g + nd;
	a = o + nd;
	t = a + nd;
	memset(w, 0, 5 * (size_t)nd * sizeof(double));
	for (uint32_t d = 0; d < nd; d++)
		s->dev_rep[d] = TP_NONE;
	for (size_t l = 0; l < s->lanes.n; l++) {
		const struct lane *ln = &s->lanes.v[l];
		const struct lane *rl =
			&s->lanes.v[s->groups.v[ln->group].lane_first +
				    ln->cls];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t rd = plan->devs.v[rl->dev_first + k];
			if (s->dev_rep[d] == TP_NONE) {
				s->dev_rep[d] = rd;
				if (s->dev_res[rd] != TP_NONE)
					a[d] = s->res.v[s->dev_res[rd]].peak_act;
			}
			w[d] += ln->weights;
			g[d] += ln->grads;
			o[d] += ln->optim;
			if (ln->temp > t[d])
				t[d] = ln->temp;
		}
	}
	for (uint32_t d = 0; d < nd; d++) {
		const struct tp_device_type *ty =
			&sim->types[c->devices.v[d].type];
		double peak;
		if (s->dev_rep[d] == TP_NONE)
			continue;
		peak = w[d] + g[d] + o[d] + a[d] + t[d] + ty->reserved_bytes;
		if (peak > ty->memory_bytes) {
			fits = false;
			if (peak - ty->memory_bytes > worst) {
				worst = peak - ty->memory_bytes;
				cap_w = ty->memory_bytes;
			}
		}
	}
	*over = fits ? 0 : cap_w > 0 ? worst / cap_w : 1;
	return fits;
}


struct devmem *tp_sim_memory_terms(const struct tp_sim *sim,
				   const struct tp_plan *plan,
				   struct tp_sim_scratch *s,
				   struct tp_report *rep)
{
	uint32_t nd = sim->n_dev;
	struct devmem *dm;

	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, (sizeof(struct devmem) / sizeof(double) +
				      1) * (size_t)nd))
		return NULL;
	dm = (struct devmem *)(void *)s->dtmp.v;
	memset(dm, 0, sizeof(*dm) * nd);
	for (uint32_t d = 0; d < nd; d++)
		s->dev_rep[d] = TP_NONE;
	for (size_t l = 0; l < s->lanes.n; l++) {
		const struct lane *ln = &s->lanes.v[l];
		const struct lane *rl =
			&s->lanes.v[s->groups.v[ln->group].lane_first +
				    ln->cls];
		const struct tp_plan_group *gr = &plan->groups.v[ln->group];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t rd = plan->devs.v[rl->dev_first + k];
			struct tp_report_device *x = &rep->devices[d];
			double n = ln->params / sim->dtype_bytes;
			if (s->dev_rep[d] == TP_NONE) {
				s->dev_rep[d] = rd;
				if (s->dev_res[rd] != TP_NONE)
					x->memory.activations =
						s->res.v[s->dev_res[rd]]
							.peak_act;
			}
			x->memory.weights += ln->weights;
			x->memory.gradients += ln->grads;
			x->memory.optimizer += ln->optim;
			if (ln->temp > x->memory.temporary)
				x->memory.temporary = ln->temp;
			dm[d].w0 += n * sim->state.weights;
			dm[d].g0 += n * (sim->state.grads + sim->grad_copy);
			dm[d].o0 += n * sim->state.optim;
			dm[d].act += ln->act;
			dm[d].act_full += ln->act_full;
			if (!dm[d].any || grp_reps(gr) < dm[d].dp_min)
				dm[d].dp_min = grp_reps(gr);
			dm[d].any = true;
		}
	}
	return dm;
}

void tp_sim_memory_reason(const struct tp_sim *sim, const struct tp_plan *plan,
			  const struct devmem *dm, double worst,
			  struct tp_report *rep)
{
	const struct tp_cluster *c = sim->c;
	uint32_t d = rep->worst_device;
	const struct tp_report_device *x = &rep->devices[d];
	const struct tp_memory_breakdown *b = &x->memory;
	const char *names[] = {"weights",	  "gradients",
			       "optimizer states",  "activations",
			       "temporary buffers", "reserved memory"};
	double vals[] = {b->weights,     b->gradients, b->optimizer,
			 b->activations, b->temporary, b->reserved};
	int best = 0;
	char sug[200];

	for (int k = 1; k < 6; k++)
		if (vals[k] > vals[best])
			best = k;
	rep->over_bytes = worst;
	suggest(sim, plan, x, &dm[d], sug, sizeof(sug));
	snprintf(rep->reason, sizeof(rep->reason),
		 "device %s (%s) needs %.2f GB but has %.2f GB (over by "
		 "%.2f GB); %s %s (%.2f GB); smallest change: %s",
		 c->devices.v[d].name, sim->types[c->devices.v[d].type].name,
		 gb(x->peak_memory_bytes), gb(x->capacity_bytes), gb(worst),
		 names[best], best == 5 ? "dominates" : "dominate",
		 gb(vals[best]), sug);
}
