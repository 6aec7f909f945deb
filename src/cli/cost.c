/*
 * cost.c - what a plan costs: device types' prices per hour (a
 * topology's price_per_hour or --price, user-supplied) over the devices
 * it uses (src/cli/README).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/cluster.h"
#include "core/plan.h"

/* What the answer costs (struct tp_plan_summary): the price per hour of
 * the devices it uses over its iteration time, and per million tokens;
 * 0 when a used device has no price (src/cli/README, "Cost"). */
void tp_cli_plan_cost(const struct tp_plan *p, const struct tp_cluster *c,
		      struct tp_plan_summary *s)
{
	uint32_t nd = (uint32_t)c->devices.n;
	uint8_t *used = calloc(nd + 1, 1);
	double per_hour = 0, tokens = s->tokens_per_s * s->iteration_time_s;

	if (!used)
		return;
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < nd && !used[p->devs.v[i]]) {
			double price =
			    c->types.v[c->devices.v[p->devs.v[i]].type]
				.price_per_hour;
			used[p->devs.v[i]] = 1;
			if (!(price > 0)) {
				per_hour = 0;
				break;
			}
			per_hour += price;
		}
	free(used);
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
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		char name[128], *stop;
		uint32_t t;
		double usd;
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end || (size_t)(eq - p) >= sizeof(name))
			return tp_cli_usage_error(
			    cmd, "--price \"%.*s\": expected TYPE=USD "
				    "(US dollars per device-hour), e.g. "
				    "H100-SXM5-80GB=2.5",
			    (int)(end - p), p);
		snprintf(name, sizeof(name), "%.*s", (int)(eq - p), p);
		usd = strtod(eq + 1, &stop);
		if (stop != end || eq + 1 == end || !(usd > 0) || usd > 1e6)
			return tp_cli_usage_error(
			    cmd, "--price %s: the price must be a number "
				    "of US dollars per device-hour above 0",
			    name);
		t = tp_cluster_find_type(c, name);
		if (t == TP_NONE || !c->type_count[t])
			return tp_cli_usage_error(
			    cmd, "--price: no device of type \"%s\" in "
				    "the topology; give a type its devices "
				    "have (tagplan inspect TOPO lists them)",
			    name);
		c->types.v[t].price_per_hour = usd;
		p = *end ? end + 1 : end;
	}
	return 0;
}

