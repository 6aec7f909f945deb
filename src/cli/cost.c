/*
 * cost.c - what a plan costs: device types' prices per hour (a
 * topology's price_per_hour or --price, user-supplied) over the devices
 * it uses (src/cli/README).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/cluster.h"
#include "core/plan.h"
#include "search/search.h"

/* What the answer costs (struct tp_plan_summary): the price per hour of
 * the devices it uses over its iteration time, and per million tokens;
 * 0 when a used device has no price (src/cli/README, "Cost"). */
void tp_cli_plan_cost(const struct tp_plan *p, const struct tp_cluster *c,
		      struct tp_plan_summary *s)
{
	double per_hour = tp_plan_price_per_hour(p, c, NULL);
	double tokens = s->tokens_per_s * s->iteration_time_s;

	s->cost_per_iteration = per_hour * s->iteration_time_s / 3600;
	s->cost_per_million_tokens =
	    tokens > 0 ? s->cost_per_iteration / (tokens / 1e6) : 0;
}

/* --price TYPE=USD[,TYPE=USD...]: prices per device-hour onto the
 * topology's device types.  Returns 0 or the exit code (a usage error
 * naming the entry). */
int tp_cli_apply_prices(const char *cmd, const char *spec,
			struct tp_cluster *c)
{
	const char *p = spec;

	while (p && *p) {
		const char *eq, *end;
		char name[128], *stop;
		size_t nl;
		uint32_t t;
		double usd;

		/* spaces around the entries, as in a strategy */
		while (*p == ' ' || *p == '\t')
			p++;
		eq = strchr(p, '=');
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end || (size_t)(eq - p) >= sizeof(name))
			return tp_cli_usage_error(
			    cmd, "--price \"%.*s\": expected TYPE=USD "
				    "(US dollars per device-hour), e.g. "
				    "H100-SXM5-80GB=2.5",
			    (int)(end - p), p);
		for (nl = (size_t)(eq - p);
		     nl && (p[nl - 1] == ' ' || p[nl - 1] == '\t'); nl--)
			;
		snprintf(name, sizeof(name), "%.*s", (int)nl, p);
		usd = strtod(eq + 1, &stop);
		while (stop < end && (*stop == ' ' || *stop == '\t'))
			stop++;
		if (stop != end || eq + 1 == end || !(usd > 0) || usd > 1e6)
			return tp_cli_usage_error(
			    cmd, "--price %s: the price must be a number "
				    "of US dollars per device-hour above 0",
			    name);
		t = tp_cluster_find_type(c, name);
		if (t == TP_NONE || !c->type_count[t]) {
			/* the types it has, so the fix needs no other run */
			char have[512];
			size_t n = 0;
			have[0] = '\0';
			for (size_t k = 0; k < c->types.n && n < sizeof(have);
			     k++)
				if (c->type_count[k])
					n += (size_t)snprintf(
					    have + n, sizeof(have) - n, "%s%s",
					    n ? ", " : "", c->types.v[k].name);
			return tp_cli_usage_error(
			    cmd, "--price: no device of type \"%s\" in "
				    "the topology; give a type its devices "
				    "have: %s",
			    name, have);
		}
		c->types.v[t].price_per_hour = usd;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int tp_cli_objective_args(const char *name, double max_iter_time)
{
	bool cost = name && strcmp(name, "cost") == 0;

	if (name && !cost && strcmp(name, "throughput") != 0) {
		tp_cli_usage_error("plan",
				   "--objective %s: expected throughput (the "
				   "fastest plan) or cost (the cheapest within "
				   "--max-iter-time)",
				   name);
		return -1;
	}
	if (!isnan(max_iter_time) && !cost) {
		tp_cli_usage_error("plan",
				   "--max-iter-time is the cost objective's "
				   "limit: give --objective cost with it, or "
				   "leave it out");
		return -1;
	}
	if (cost && isnan(max_iter_time)) {
		tp_cli_usage_error("plan",
				   "--objective cost needs --max-iter-time S, "
				   "the iteration time in seconds the plan "
				   "must meet");
		return -1;
	}
	if (cost && !(max_iter_time > 0)) {
		tp_cli_usage_error("plan",
				   "--max-iter-time %g: give a time in "
				   "seconds above 0",
				   max_iter_time);
		return -1;
	}
	return cost ? TP_SEARCH_OBJECTIVE_COST : TP_SEARCH_OBJECTIVE_THROUGHPUT;
}

int tp_cli_check_prices(const char *cmd, const struct tp_cluster *c)
{
	char missing[512];
	uint32_t n = tp_cluster_unpriced_types(c, missing, sizeof(missing));

	if (!n)
		return 0;
	return tp_cli_usage_error(
	    cmd, "--objective cost: no price for device type%s %s; give "
		 "every type the topology has one with --price TYPE=USD[,"
		 "TYPE=USD...] (US dollars per device-hour) or its "
		 "price_per_hour in the topology",
	    n > 1 ? "s" : "", missing);
}
