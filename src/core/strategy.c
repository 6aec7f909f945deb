/*
 * strategy.c - parse "tp=8,pp=8,dp=16,..." and expand it into a plan.
 * Conventions (rank order, layer split, defaults): strategy.h.
 */
#include "strategy.h"
#include "strmap.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_strategy_default(struct tp_strategy *s)
{
	memset(s, 0, sizeof(*s));
	s->tp = 1;
	s->pp = 1;
	s->cp = 1;
	s->dp = 0;
	s->mb = 1;
	s->gbs = 0;
	s->schedule = TP_SCHEDULE_1F1B;
	s->virtual_stages = 1;
	s->recompute = TP_RECOMPUTE_NONE;
	s->sp = false;
	s->zero = 0;
	s->sync = -1;
	s->ep = 1;
}

static const char *const keys[] = {"tp",        "pp", "dp",   "mb",
				   "gbs",       "schedule", "recompute",
				   "sp",        "zero", "sync", "ep", "cp",
				   "imbalance", "capacity", "first_layers",
				   "last_layers", "etp", "account_embedding",
				   "account_loss"};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char key_list[] =
	"tp, pp, dp, mb, gbs, schedule, recompute, sp, zero, sync, ep, cp, "
	"imbalance, capacity, first_layers, last_layers, etp, "
	"account_embedding, account_loss";

bool tp_strategy_is_key(const char *name, size_t len)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strlen(keys[i]) == len && strncmp(keys[i], name, len) == 0)
			return true;
	return false;
}

/* A separator a user may put between items: a comma (the only one
 * accepted), a space or tab, or a semicolon. */
static bool item_sep(char c)
{
	return c == ',' || c == ';' || isspace((unsigned char)c);
}

/* text written as a strategy string: runs of separators become one
 * comma, none around '=' ("tp=2 pp=4" and "tp=2; pp = 4" -> "tp=2,pp=4");
 * cut at size. */
static void comma_form(const char *text, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = text; *p && n + 1 < size;) {
		if (!item_sep(*p)) {
			buf[n++] = *p++;
			continue;
		}
		while (item_sep(*p))
			p++;
		if (n && *p && buf[n - 1] != '=' && *p != '=')
			buf[n++] = ',';
	}
	buf[n] = '\0';
}

/* The error of an item that is not key=value or holds several:
 * "tp=2 pp=4" (items separated by spaces or semicolons), "tp 2", "tp:2"
 * or "tp2" (a key, then its value without '='), else the plain one;
 * TP_OK for an item with one '=' and no semicolon. */
static enum tp_status bad_item(struct tp_error *err, const char *text,
			       const char *item)
{
	const char *eq = strchr(item, '=');
	size_t kl = strcspn(item, " \t:;=");
	char fix[256];

	if (eq && (strchr(eq + 1, '=') || strchr(item, ';'))) {
		comma_form(text, fix, sizeof(fix));
		return tp_error_set(err, TP_EUSAGE,
				    "strategy: \"%s\": items are separated "
				    "by commas, not spaces or semicolons: "
				    "write \"%s\"",
				    item, fix);
	}
	/* "tp2": the longest key the item begins with, then digits */
	for (size_t l = 1; !eq && !item[kl] && l < kl; l++)
		if (tp_strategy_is_key(item, l) &&
		    strspn(item + l, "0123456789") == kl - l)
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: \"%s\" is not "
					    "key=value: write \"%.*s=%s\"",
					    item, (int)l, item, item + l);
	if (!eq && item[kl] && tp_strategy_is_key(item, kl)) {
		const char *v = item + kl;
		while (*v == ':' || isspace((unsigned char)*v))
			v++;
		if (*v && !strpbrk(v, " \t;"))
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: \"%s\" is not "
					    "key=value: write \"%.*s=%s\"",
					    item, (int)kl, item, v);
	}
	if (eq)
		return TP_OK;
	return tp_error_set(err, TP_EUSAGE,
			    "strategy: \"%s\" is not key=value (keys: %s)",
			    item, key_list);
}

/* The key closest to an unknown one (case aside, 1 edit up to 4 letters,
 * else 2), or NULL. */
static const char *near_key(const char *key)
{
	size_t cap = strlen(key) <= 4 ? 1 : 2, best = cap + 1;
	const char *near = NULL;

	for (size_t i = 0; i < N_KEYS; i++) {
		size_t d = tp_edit_distance(key, keys[i], cap);
		if (d < best) {
			best = d;
			near = keys[i];
		}
	}
	return near;
}

/* on, true or 1; off, false or 0: false for anything else. */
static bool parse_on_off(const char *v, bool *on)
{
	*on = strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
	      strcmp(v, "1") == 0;
	return *on || strcmp(v, "off") == 0 || strcmp(v, "false") == 0 ||
	       strcmp(v, "0") == 0;
}

/* Parse a positive (or, with allow_zero, non-negative) decimal integer no
 * larger than max. */
static int parse_uint(const char *v, int64_t max, bool allow_zero,
		      int64_t *out)
{
	char *end;
	long long x;

	if (!*v || !isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || x > max || (x == 0 && !allow_zero))
		return -1;
	*out = x;
	return 0;
}

static enum tp_status bad_value(struct tp_error *err, const char *key,
				const char *val, const char *expected)
{
	return tp_error_set(err, TP_EUSAGE,
			    "strategy: %s=%s: expected %s", key, val, expected);
}

static enum tp_status set_key(struct tp_strategy *s, int k, const char *key,
			      const char *val, struct tp_error *err)
{
	int64_t x;
	int r;

	switch (k) {
	case 0: /* tp */
	case 1: /* pp */
	case 2: /* dp */
	case 3: /* mb */
		/* "dp=auto" and "gbs=model" are the defaults as
		 * tp_strategy_format writes them. */
		if (k == 2 && strcmp(val, "auto") == 0) {
			s->dp = 0;
			return TP_OK;
		}
		if (parse_uint(val, 1 << 20, false, &x))
			return bad_value(err, key, val,
					 "a positive integer (at most 1048576)");
		if (k == 0)
			s->tp = (uint32_t)x;
		else if (k == 1)
			s->pp = (uint32_t)x;
		else if (k == 2)
			s->dp = (uint32_t)x;
		else
			s->mb = (uint32_t)x;
		return TP_OK;
	case 4: /* gbs */
		if (strcmp(val, "model") == 0) {
			s->gbs = 0;
			return TP_OK;
		}
		if (parse_uint(val, (int64_t)1 << 40, false, &x))
			return bad_value(err, key, val,
					 "a positive number of samples");
		s->gbs = x;
		return TP_OK;
	case 5: /* schedule */
		if (strcmp(val, "gpipe") == 0) {
			s->schedule = TP_SCHEDULE_GPIPE;
			s->virtual_stages = 1;
			return TP_OK;
		}
		if (strcmp(val, "1f1b") == 0) {
			s->schedule = TP_SCHEDULE_1F1B;
			s->virtual_stages = 1;
			return TP_OK;
		}
		if (strcmp(val, "zb-h1") == 0) {
			s->schedule = TP_SCHEDULE_ZB_H1;
			s->virtual_stages = 1;
			return TP_OK;
		}
		if (strncmp(val, "interleaved", 11) == 0) {
			if (val[11] != ':' ||
			    parse_uint(val + 12, 1024, false, &x) || x < 2)
				return bad_value(
					err, key, val,
					"interleaved:V with V >= 2 virtual "
					"stages per device, e.g. interleaved:2");
			s->schedule = TP_SCHEDULE_INTERLEAVED;
			s->virtual_stages = (uint32_t)x;
			return TP_OK;
		}
		return tp_error_set(err, TP_EUSAGE,
				    "strategy: unknown schedule \"%s\": expected "
				    "gpipe, 1f1b, interleaved:V or zb-h1",
				    val);
	case 6: /* recompute */
		r = tp_recompute_parse(val);
		if (r < 0)
			return bad_value(err, key, val,
					 "none, selective or full");
		s->recompute = (enum tp_recompute)r;
		return TP_OK;
	case 7: /* sp */
	case 17: /* account_embedding */
	case 18: /* account_loss */
		if (!parse_on_off(val, k == 7 ? &s->sp
				  : k == 17 ? &s->account_embedding
					    : &s->account_loss))
			return bad_value(err, key, val, "on or off");
		return TP_OK;
	case 8: /* zero */
		if (parse_uint(val, 3, true, &x))
			return bad_value(err, key, val, "0, 1, 2 or 3");
		s->zero = (uint32_t)x;
		return TP_OK;
	case 9: /* sync */
		if (strcmp(val, "auto") == 0) {
			s->sync = -1;
			return TP_OK;
		}
		r = tp_sync_parse(val);
		if (r < 0)
			return bad_value(err, key, val,
					 "ring, hierarchical, ps or auto");
		s->sync = r;
		return TP_OK;
	case 10: /* ep */
		if (parse_uint(val, 1 << 20, false, &x))
			return bad_value(err, key, val,
					 "a positive integer (at most 1048576)");
		s->ep = (uint32_t)x;
		return TP_OK;
	case 11: /* cp */
		if (parse_uint(val, 1 << 20, false, &x))
			return bad_value(err, key, val,
					 "a positive integer (at most 1048576)");
		s->cp = (uint32_t)x;
		return TP_OK;
	case 12: /* imbalance */
	case 13: /* capacity */
	{
		char *end;
		double v;
		errno = 0;
		v = strtod(val, &end);
		if (errno || !*val || *end || !(v >= 1 && v <= 64))
			return bad_value(err, key, val, "a number from 1 to 64");
		if (k == 12)
			s->imbalance = v;
		else
			s->capacity = v;
		return TP_OK;
	}
	case 14: /* first_layers */
	case 15: /* last_layers */
		if (parse_uint(val, 1 << 20, false, &x))
			return bad_value(err, key, val,
					 "a positive number of layers");
		if (k == 14)
			s->first_layers = (uint32_t)x;
		else
			s->last_layers = (uint32_t)x;
		return TP_OK;
	case 16: /* etp */
		if (parse_uint(val, 1 << 20, false, &x))
			return bad_value(err, key, val,
					 "a positive integer (1 or tp)");
		s->etp = (uint32_t)x;
		return TP_OK;
	default:
		return tp_error_set(err, TP_EINTERNAL, "bad strategy key");
	}
}

enum tp_status tp_strategy_parse(const char *text, struct tp_strategy *s,
				 struct tp_error *err)
{
	bool seen[N_KEYS] = {false};
	const char *p = text;

	tp_strategy_default(s);
	if (!text)
		return TP_OK;
	while (*p) {
		char item[256], *eq, *key, *val, *e;
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		int k = -1;
		enum tp_status st;

		if (n >= sizeof(item))
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: item too long: \"%.40s...\"",
					    p);
		memcpy(item, p, n);
		item[n] = '\0';
		p += n + (comma ? 1 : 0);
		key = item;
		while (isspace((unsigned char)*key))
			key++;
		e = key + strlen(key);
		while (e > key && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (!*key) {
			char fix[256];

			/* a trailing comma (and spaces) is harmless */
			if (!comma || !p[strspn(p, " \t,")])
				break;
			comma_form(text, fix, sizeof(fix));
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: \"%s\" has an empty "
					    "item (a comma too many): write "
					    "\"%s\"",
					    text, fix);
		}
		if ((st = bad_item(err, text, key)))
			return st;
		eq = strchr(key, '=');
		*eq = '\0';
		val = eq + 1;
		e = eq;
		while (e > key && isspace((unsigned char)e[-1]))
			*--e = '\0';
		while (isspace((unsigned char)*val))
			val++;
		for (size_t i = 0; i < N_KEYS; i++)
			if (strcmp(keys[i], key) == 0)
				k = (int)i;
		if (k < 0 && near_key(key))
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: unknown key \"%s\" (did "
					    "you mean %s?)",
					    key, near_key(key));
		if (k < 0)
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: unknown key \"%s\" "
					    "(keys: %s)",
					    key, key_list);
		if (seen[k])
			return tp_error_set(err, TP_EUSAGE,
					    "strategy: key \"%s\" given twice",
					    key);
		seen[k] = true;
		st = set_key(s, k, key, val, err);
		if (st)
			return st;
	}
	return TP_OK;
}

void tp_strategy_format(const struct tp_strategy *s, char *buf, size_t size)
{
	char sched[32], dp[16], gbs[32], cp[24];

	if (s->schedule == TP_SCHEDULE_INTERLEAVED)
		snprintf(sched, sizeof(sched), "interleaved:%u",
			 s->virtual_stages);
	else
		snprintf(sched, sizeof(sched), "%s",
			 tp_schedule_name(s->schedule));
	if (s->dp)
		snprintf(dp, sizeof(dp), "%u", s->dp);
	else
		snprintf(dp, sizeof(dp), "auto");
	if (s->gbs)
		snprintf(gbs, sizeof(gbs), "%lld", (long long)s->gbs);
	else
		snprintf(gbs, sizeof(gbs), "model");
	if (s->cp > 1)
		snprintf(cp, sizeof(cp), "cp=%u,", s->cp);
	else
		cp[0] = '\0';
	snprintf(buf, size,
		 "tp=%u,%spp=%u,dp=%s,mb=%u,gbs=%s,schedule=%s,recompute=%s,"
		 "sp=%s,zero=%u,sync=%s",
		 s->tp, cp, s->pp, dp, s->mb, gbs, sched,
		 tp_recompute_name(s->recompute), s->sp ? "on" : "off",
		 s->zero,
		 s->sync < 0 ? "auto" : tp_sync_name((enum tp_sync)s->sync));
	/* keys added later are written only when not their default, so
	 * the strings of older strategies stay as they were */
	if (s->ep > 1) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",ep=%u", s->ep);
	}
	if (s->imbalance > 0) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",imbalance=%g",
				 s->imbalance);
	}
	if (s->capacity > 0) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",capacity=%g",
				 s->capacity);
	}
	if (s->first_layers > 0) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",first_layers=%u",
				 s->first_layers);
	}
	if (s->last_layers > 0) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",last_layers=%u",
				 s->last_layers);
	}
	if (s->etp > 0) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, ",etp=%u", s->etp);
	}
	if (s->account_embedding || s->account_loss) {
		size_t n = strlen(buf);
		if (n < size)
			snprintf(buf + n, size - n, "%s%s",
				 s->account_embedding ? ",account_embedding=on"
						      : "",
				 s->account_loss ? ",account_loss=on" : "");
	}
}

/* etp: the expert tensor-parallel degree, tp (Megatron-Core's default
 * --expert-tensor-parallel-size) or 1 (each expert whole on its rank);
 * Megatron-Core's degrees between are not modelled.  Under tensor
 * parallelism MoE needs sequence parallelism (Megatron-LM's
 * arguments.py refuses MoE with tp > 1 without it). */
static enum tp_status check_etp(const struct tp_strategy *s,
			        const struct tp_model *m,
			        struct tp_error *err)
{
	if (s->etp == 0 || s->etp == s->tp)
		return TP_OK;
	if (m->arch.experts <= 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: etp=%u but the model has no "
				    "routed experts; drop etp",
				    s->etp);
	if (s->etp != 1)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: etp=%u: the expert tensor-"
				    "parallel degree is modelled as tp (=%u, "
				    "the default) or 1 (experts whole on each "
				    "rank); use etp=1 or drop etp",
				    s->etp, s->tp);
	if (!s->sp)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: etp=1 with tp=%u needs sequence "
				    "parallelism (Megatron-LM: MoE with tensor "
				    "parallelism must use it; each tensor rank "
				    "dispatches its own tokens); add sp=on",
				    s->tp);
	return TP_OK;
}

/* ep: routed experts to spread, dividing their count and dp x cp
 * (Megatron-Core: ep x etp x expert-dp = tp x dp x cp; etp = tp: ep x
 * expert-dp = dp x cp), or tp x dp x cp under etp=1. */
static enum tp_status check_ep(const struct tp_strategy *s,
			       const struct tp_model *m, uint32_t dp,
			       struct tp_error *err)
{
	enum tp_status st = check_etp(s, m, err);

	if (st || s->ep <= 1)
		return st;
	if (m->arch.experts <= 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: ep=%u but the model has no "
				    "routed experts; drop ep",
				    s->ep);
	if (m->arch.experts % s->ep != 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: ep=%u does not divide the "
				    "model's %lld routed experts; use a divisor "
				    "of %lld",
				    s->ep, (long long)m->arch.experts,
				    (long long)m->arch.experts);
	if (s->etp == 1 && s->tp > 1) {
		uint32_t r = s->tp * dp * s->cp;
		if (r % s->ep != 0)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: ep=%u does not divide tp x dp x cp = "
			    "%u (with etp=1 Megatron-Core spreads the experts "
			    "over every rank of a stage: ep x expert-dp = tp "
			    "x dp x cp); use a divisor of %u",
			    s->ep, r, r);
		return TP_OK;
	}
	if (dp * s->cp % s->ep != 0 && s->cp == 1)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: ep=%u does not divide dp=%u "
				    "(Megatron-Core spreads the experts over "
				    "data-parallel replicas: ep x expert-dp = "
				    "dp); use a divisor of %u",
				    s->ep, dp, dp);
	if (dp * s->cp % s->ep != 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: ep=%u does not divide dp x cp "
				    "= %u (Megatron-Core spreads the experts "
				    "over the data- and context-parallel ranks: "
				    "ep x expert-dp = dp x cp); use a divisor "
				    "of %u",
				    s->ep, dp * s->cp, dp * s->cp);
	return TP_OK;
}

/* The model's transformer layers: the largest label + 1 (0 when none). */
static int64_t label_layers(const struct tp_model *m)
{
	int64_t layers = 0;

	for (size_t i = 0; i < m->ops.n; i++)
		if (m->ops.v[i].layer >= 0 && m->ops.v[i].layer + 1 > layers)
			layers = m->ops.v[i].layer + 1;
	return layers;
}

/*
 * Uneven first / last stages (Megatron-Core's --decoder-first/last-
 * pipeline-num-layers, megatron/core/transformer/transformer_block.py
 * get_num_layers_to_build): the first and last stage take the layers
 * given, every other stage the rest in equal whole numbers, and each
 * stage splits its layers equally over its V chunks.  Fills cnt[0..pp)
 * per stage; TP_EINPUT naming the fix when that is not possible.
 */
/* Whether first / last (0: even) layers on the end stages leave every
 * other stage the same positive whole number and every stage's count
 * divides by V; fills cnt[0..pp) when cnt is not NULL.  *bad_stage is
 * the first stage whose count V does not divide, or pp when the split
 * itself fails. */
static bool split_fits(int64_t layers, uint32_t pp, uint32_t V,
		       int64_t first, int64_t last, int64_t *cnt,
		       uint32_t *bad_stage, int64_t *bad_cnt)
{
	int64_t rest = layers - first - last, mid;
	uint32_t left = pp - (first > 0) - (last > 0);

	*bad_stage = pp;
	if (rest < 0 || (left == 0 && rest != 0) ||
	    (left > 0 && (rest <= 0 || rest % left != 0)))
		return false;
	mid = left ? rest / left : 0;
	for (uint32_t j = 0; j < pp; j++) {
		int64_t n = j == 0 && first	   ? first
			    : j == pp - 1 && last ? last
						  : mid;
		if (cnt)
			cnt[j] = n;
		if (n % V != 0) {
			*bad_stage = j;
			*bad_cnt = n;
			return false;
		}
	}
	return true;
}

/* The counts of the field the user gave last (last_layers if given, else
 * first_layers) nearest to its value below and above that make the
 * split fit, the other field kept; "" when none does. */
static void split_hint(int64_t layers, uint32_t pp, uint32_t V,
		       int64_t first, int64_t last, char *buf, size_t size)
{
	bool vary_last = last > 0;
	int64_t given = vary_last ? last : first, lo = 0, hi = 0;
	uint32_t bs;
	int64_t bc;

	for (int64_t x = given - 1; x >= 1 && !lo; x--)
		if (split_fits(layers, pp, V, vary_last ? first : x,
			       vary_last ? x : last, NULL, &bs, &bc))
			lo = x;
	for (int64_t x = given + 1; x < layers && !hi; x++)
		if (split_fits(layers, pp, V, vary_last ? first : x,
			       vary_last ? x : last, NULL, &bs, &bc))
			hi = x;
	if (lo && hi)
		snprintf(buf, size, " (with pp=%u: %s=%lld or %lld)", pp,
			 vary_last ? "last_layers" : "first_layers",
			 (long long)lo, (long long)hi);
	else if (lo || hi)
		snprintf(buf, size, " (with pp=%u: %s=%lld)", pp,
			 vary_last ? "last_layers" : "first_layers",
			 (long long)(lo ? lo : hi));
	else
		snprintf(buf, size, " (with pp=%u no %s works with the "
			 "other kept: change pp or drop it)", pp,
			 vary_last ? "last_layers" : "first_layers");
}

static enum tp_status stage_layers(const struct tp_strategy *s,
				   int64_t layers, uint32_t pp, uint32_t V,
				   int64_t *cnt, struct tp_error *err)
{
	int64_t first = s->first_layers, last = s->last_layers;
	int64_t rest = layers - first - last, bad_cnt = 0;
	uint32_t left = pp - (first > 0) - (last > 0), bad_stage;
	char hint[160];

	if (pp < 2)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: first_layers / last_layers "
				    "shape a pipeline; they need pp >= 2");
	if (layers <= 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: first_layers / last_layers count "
				    "transformer layers and the model labels "
				    "none; drop them");
	if (split_fits(layers, pp, V, first, last, cnt, &bad_stage,
		       &bad_cnt))
		return TP_OK;
	split_hint(layers, pp, V, first, last, hint, sizeof(hint));
	if (bad_stage == pp && rest < 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: first_layers / last_layers "
				    "take %lld layers, more than the model's "
				    "%lld: pick smaller counts%s",
				    (long long)(first + last),
				    (long long)layers, hint);
	if (bad_stage == pp)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: first_layers / last_layers "
				    "leave %lld of the model's %lld layers for "
				    "%u other pipeline stages: pick counts that "
				    "leave each of them the same positive "
				    "number%s",
				    (long long)rest, (long long)layers, left,
				    hint);
	return tp_error_set(err, TP_EINPUT,
			    "strategy: pipeline stage %u gets %lld layers, "
			    "which its %u interleaved chunks cannot share "
			    "equally; pick first_layers / last_layers (or V) "
			    "so that every stage's layers divide by V%s",
			    bad_stage, (long long)bad_cnt, V, hint);
}

/*
 * Megatron-Core's account_for_embedding / loss_in_pipeline_split
 * (megatron/core/transformer/transformer_block.py get_num_layers_to_build,
 * core_r0.12 and later): layers + 1 (+ 1) slots, the embedding first and
 * the output layer and loss last, split equally over the n chunks; chunk
 * 0 holds one layer fewer with the embedding, the last one fewer with
 * the loss.  Fills per[0..n); TP_EINPUT naming the fix when the slots do
 * not divide, or with first_layers / last_layers (Megatron refuses the
 * two together).
 */
static enum tp_status slot_layers(const struct tp_strategy *s,
				  int64_t layers, uint32_t n, int64_t *per,
				  struct tp_error *err)
{
	int64_t slots = layers + s->account_embedding + s->account_loss;

	if (s->first_layers || s->last_layers)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: account_embedding / "
				    "account_loss and first_layers / "
				    "last_layers both shape the first and last "
				    "stages; give one of them");
	if (layers <= 0 || slots % n != 0 || slots / n < 1)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: %lld %s%s%s make %lld "
				    "slots, which pp x V = %u chunks cannot "
				    "share equally; pick pp and V so that pp x "
				    "V divides %lld",
				    (long long)layers,
				    layers == 1 ? "layer" : "layers",
				    s->account_embedding ? " + the embedding"
							 : "",
				    s->account_loss ? " + the loss" : "",
				    (long long)slots, n, (long long)slots);
	for (uint32_t k = 0; k < n; k++)
		per[k] = slots / n;
	per[0] -= s->account_embedding;
	per[n - 1] -= s->account_loss;
	return TP_OK;
}

/*
 * Chunk of every op: by layer when the model has layers (balanced layer
 * counts, or per_chunk[c] layers in chunk c when given), else by
 * cumulative compute along the topological order.  Returns the number of
 * layers found (0 when none).
 */
static int64_t assign_chunks(const struct tp_model *m, uint32_t n_chunks,
			     const int64_t *per_chunk, uint32_t *chunk)
{
	uint32_t n = (uint32_t)m->ops.n;
	int64_t layers = label_layers(m);

	if (layers > 0) {
		uint32_t cur = 0, last = 0;
		/* where the last layer ends: ops after it go to the last
		   chunk, also when it holds no layer (account_loss) */
		for (uint32_t k = 0; k < n; k++)
			if (m->ops.v[m->topo[k]].layer == layers - 1)
				last = k;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t o = m->topo[k];
			int32_t l = m->ops.v[o].layer;
			if (l < 0 && k > last) {
				cur = n_chunks - 1;
			} else if (l >= 0 && per_chunk) {
				int64_t end = per_chunk[0];
				cur = 0;
				while (cur + 1 < n_chunks && l >= end)
					end += per_chunk[++cur];
			} else if (l >= 0) {
				cur = (uint32_t)((uint64_t)l * n_chunks /
						 (uint64_t)layers);
			}
			chunk[o] = cur;
		}
		return layers;
	}
	{
		double total = 0, acc = 0;
		for (uint32_t i = 0; i < n; i++)
			total += m->ops.v[i].flop + m->ops.v[i].backward_flop +
				 1.0;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t o = m->topo[k];
			double w = m->ops.v[o].flop + m->ops.v[o].backward_flop +
				   1.0;
			/* the op's midpoint decides its chunk */
			uint32_t c = (uint32_t)((acc + w / 2) / total *
						n_chunks);
			if (c >= n_chunks)
				c = n_chunks - 1;
			chunk[o] = c;
			acc += w;
		}
	}
	return 0;
}

/* Does a chunk hold routed experts (a pipeline stage of only dense
 * layers keeps ep 1)? */
static bool group_has_experts(const struct tp_model *m, const uint32_t *ops,
			      uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (tp_model_op_expert(m, ops[k]) >= 0)
			return true;
	return false;
}

/* The strategy's cp and tp against the model: a sequence to split, heads,
 * key/value heads and every op's units divisible. */
static enum tp_status check_cp_tp(const struct tp_strategy *s,
				  const struct tp_model *m,
				  struct tp_error *err)
{
	uint32_t tp = s->tp, cp = s->cp, nops = (uint32_t)m->ops.n;

	if (cp > 1 && m->seq_len <= 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: cp=%u: context parallelism "
				    "splits the sequence, and the model has no "
				    "sequence length; drop cp",
				    cp);
	/* Megatron-Core cuts a sequence into 2*cp chunks (causal load
	 * balancing); tp_plan_validate has the same rule */
	if (cp > 1 && m->seq_len % (2 * (int64_t)cp) != 0)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: cp=%u: the sequence of %lld "
		    "tokens does not split into 2*cp = %u equal "
		    "chunks (causal load balancing); use a cp "
		    "whose double divides %lld",
		    cp, (long long)m->seq_len, 2 * cp, (long long)m->seq_len);
	if (m->arch.heads > 0 && m->arch.heads % tp != 0)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: tp=%u does not divide the model's "
		    "%lld attention heads; use a divisor of "
		    "%lld",
		    tp, (long long)m->arch.heads, (long long)m->arch.heads);
	if (m->arch.kv_heads > 0 && m->arch.kv_heads % tp != 0 &&
	    tp % m->arch.kv_heads != 0)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: tp=%u and the model's %lld "
		    "key/value heads do not divide one another; "
		    "use a divisor of %lld",
		    tp, (long long)m->arch.kv_heads,
		    (long long)m->arch.kv_heads);
	for (uint32_t i = 0; i < nops && tp > 1; i++) {
		const struct tp_op *op = &m->ops.v[i];
		if (op->tp_units && op->tp_units % tp != 0)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp=%u does not divide the "
			    "%u units (heads or channels) of op "
			    "\"%s\"; use a divisor of %u",
			    tp, op->tp_units, op->name, op->tp_units);
	}
	return TP_OK;
}

/* The data-parallel degree: the strategy's, which must make tp*cp*pp*dp
 * the device count, or the device count over tp*cp*pp. */
static enum tp_status derive_dp(const struct tp_strategy *s, uint32_t ndev,
				uint32_t *dp_out, struct tp_error *err)
{
	uint32_t tp = s->tp, pp = s->pp, cp = s->cp, dp;

	if ((uint64_t)tp * pp * cp > ndev) {
		if (cp == 1)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp*pp = %llu exceeds the "
			    "%u devices of the topology; lower "
			    "tp or pp",
			    (unsigned long long)tp * pp, ndev);
		return tp_error_set(err, TP_EINPUT,
				    "strategy: tp*cp*pp = %llu exceeds the %u "
				    "devices of the topology; lower tp, cp or "
				    "pp",
				    (unsigned long long)tp * cp * pp, ndev);
	}
	if (s->dp) {
		dp = s->dp;
		if ((uint64_t)tp * pp * cp * dp != ndev && cp == 1)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp*pp*dp = %u*%u*%u = %llu, but the "
			    "topology has %u devices; make the product "
			    "equal the device count (or omit dp)",
			    tp, pp, dp, (unsigned long long)tp * pp * dp, ndev);
		if ((uint64_t)tp * pp * cp * dp != ndev)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp*cp*pp*dp = %u*%u*%u*%u = %llu, "
			    "but the topology has %u devices; make the "
			    "product equal the device count (or omit dp)",
			    tp, cp, pp, dp,
			    (unsigned long long)tp * cp * pp * dp, ndev);
	} else {
		if (ndev % (tp * pp * cp) != 0 && cp == 1)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp*pp = %u does not divide the %u "
			    "devices of the topology, so dp cannot be "
			    "derived; pick tp and pp whose product divides "
			    "%u",
			    tp * pp, ndev, ndev);
		if (ndev % (tp * pp * cp) != 0)
			return tp_error_set(
			    err, TP_EINPUT,
			    "strategy: tp*cp*pp = %u does not divide the %u "
			    "devices of the topology, so dp cannot be "
			    "derived; pick tp, cp and pp whose product "
			    "divides %u",
			    tp * pp * cp, ndev, ndev);
		dp = ndev / (tp * pp * cp);
	}
	*dp_out = dp;
	return TP_OK;
}

/* The global batch (the model's; gbs may only repeat it) split into
 * micro-batches of mb samples on each of dp replicas: at most
 * TP_PLAN_MAX_MICRO_BATCHES of them. */
static enum tp_status check_batch(const struct tp_strategy *s,
				  const struct tp_model *m, uint32_t dp,
				  struct tp_error *err)
{
	int64_t gbs = s->gbs ? s->gbs : m->global_batch;
	uint64_t mbdp;

	if (gbs != m->global_batch)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: gbs=%lld differs from the model's "
		    "global batch of %lld; rebuild the model with "
		    "that batch or drop gbs",
		    (long long)gbs, (long long)m->global_batch);
	mbdp = (uint64_t)s->mb * dp;
	if (gbs % (int64_t)mbdp != 0)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: the global batch of %lld is not "
		    "divisible by mb*dp = %u*%u = %llu; pick mb "
		    "and dp whose product divides it",
		    (long long)gbs, s->mb, dp, (unsigned long long)mbdp);
	if ((uint64_t)gbs / mbdp > TP_PLAN_MAX_MICRO_BATCHES)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: mb=%u with dp=%u makes %llu "
		    "micro-batches of the global batch of %lld; "
		    "the simulator runs each one and takes at "
		    "most %u: raise mb to at least %llu",
		    s->mb, dp, (unsigned long long)((uint64_t)gbs / mbdp),
		    (long long)gbs, TP_PLAN_MAX_MICRO_BATCHES,
		    (unsigned long long)(((uint64_t)gbs +
					  (uint64_t)dp *
					      TP_PLAN_MAX_MICRO_BATCHES -
					  1) /
					 ((uint64_t)dp *
					  TP_PLAN_MAX_MICRO_BATCHES)));
	return TP_OK;
}

/* Enough layers (or ops) for pp x V pipeline chunks. */
static enum tp_status check_chunks(uint32_t pp, uint32_t V, int64_t layers,
				   uint32_t nops, struct tp_error *err)
{
	uint32_t n_chunks = pp * V;

	if (layers > 0 && (int64_t)n_chunks > layers) {
		if (V > 1)
			return tp_error_set(err, TP_EINPUT,
					    "strategy: pp*V = %u*%u = %u "
					    "pipeline chunks but the model has "
					    "only %lld %s; lower V or pp",
					    pp, V, n_chunks, (long long)layers,
					    layers == 1 ? "layer" : "layers");
		return tp_error_set(err, TP_EINPUT,
				    "strategy: pp=%u stages but the "
				    "model has only %lld %s; lower pp",
				    pp, (long long)layers,
				    layers == 1 ? "layer" : "layers");
	}
	if (n_chunks > nops)
		return tp_error_set(
		    err, TP_EINPUT,
		    "strategy: %u pipeline chunks but the model "
		    "has only %u ops; lower pp or V",
		    n_chunks, nops);
	return TP_OK;
}

/* How chunk groups synchronise: the strategy's sync, else hierarchical
 * when the replicas of devs (tp apart, dp x cp of them) span nodes. */
static enum tp_sync chunk_sync(const struct tp_strategy *s,
			       const struct tp_cluster *c, const uint32_t *devs,
			       uint32_t replicas)
{
	if (s->sync >= 0)
		return (enum tp_sync)s->sync;
	for (uint32_t r = 1; r < replicas; r++)
		if (c->devices.v[devs[r * s->tp]].node !=
		    c->devices.v[devs[0]].node)
			return TP_SYNC_HIERARCHICAL;
	return TP_SYNC_RING;
}

/* What tp_strategy_to_plan hands add_chunk: the inputs, dp, the ops in
 * chunk order (each chunk's in topological order: chunk ch's are
 * ops[first[ch] .. first[ch + 1])) and scratch for one stage's
 * devices. */
struct chunker {
	const struct tp_strategy *s;
	const struct tp_model *m;
	const struct tp_cluster *c;
	uint32_t dp;
	uint32_t *ops, *first, *devs;
};

/* k->ops and k->first from each op's chunk (< n_chunks): a counting
 * sort of the topological order, once for all chunks (DeepSeek-V3 at
 * pp=32: 45,579 ops scanned once instead of once per chunk). */
static void sort_chunks(struct chunker *k, const uint32_t *chunk,
			uint32_t n_chunks)
{
	const struct tp_model *m = k->m;
	uint32_t nops = (uint32_t)m->ops.n;

	memset(k->first, 0, ((size_t)n_chunks + 1) * sizeof(*k->first));
	for (uint32_t i = 0; i < nops; i++)
		if (chunk[i] < n_chunks)
			k->first[chunk[i] + 1]++;
	for (uint32_t ch = 0; ch < n_chunks; ch++)
		k->first[ch + 1] += k->first[ch];
	for (uint32_t i = 0; i < nops; i++) {
		uint32_t o = m->topo[i];
		if (chunk[o] < n_chunks)
			k->ops[k->first[chunk[o]]++] = o;
	}
	/* the loop advanced each first[ch] to first[ch + 1]: shift back */
	for (uint32_t ch = n_chunks; ch > 0; ch--)
		k->first[ch] = k->first[ch - 1];
	k->first[0] = 0;
}

/* The group of pipeline chunk ch: its ops in topological order on the
 * devices of stage ch % pp. */
static enum tp_status add_chunk(const struct chunker *k, uint32_t ch,
				struct tp_plan *plan, struct tp_error *err)
{
	const struct tp_strategy *s = k->s;
	const struct tp_model *m = k->m;
	uint32_t n = k->first[ch + 1] - k->first[ch], stage = ch % s->pp;
	const uint32_t *ops = k->ops + k->first[ch];
	uint64_t per_stage = (uint64_t)s->tp * s->cp * k->dp;
	struct tp_plan_degrees deg = {k->dp, s->cp, s->tp};
	struct tp_plan_group *gr;
	enum tp_sync sync;
	enum tp_status st;

	if (n == 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: pipeline chunk %u gets no "
				    "ops; lower pp or V",
				    ch);
	for (uint32_t i = 0; i < per_stage; i++)
		k->devs[i] = (uint32_t)(stage * per_stage + i);
	sync = chunk_sync(s, k->c, k->devs, k->dp * s->cp);
	st = tp_plan_add_group_degrees(plan, ops, n, k->devs,
				       (uint32_t)per_stage, &deg, NULL, err);
	if (st)
		return st;
	gr = &plan->groups.v[plan->groups.n - 1];
	gr->sync = sync;
	gr->recompute = s->recompute;
	gr->sp = s->sp;
	gr->ep = group_has_experts(m, ops, n) ? s->ep : 1;
	gr->etp = group_has_experts(m, ops, n) && s->etp == 1 && s->tp > 1
			  ? 1
			  : 0;
	return TP_OK;
}

/* Layers per pipeline chunk for uneven first / last stages: *cnt gets
 * pp stage counts followed by n_chunks chunk counts (the caller frees
 * it; NULL on error). */
static enum tp_status chunk_layers(const struct tp_strategy *s,
				   const struct tp_model *m, uint32_t V,
				   int64_t **cnt, struct tp_error *err)
{
	uint32_t pp = s->pp, n_chunks = pp * V;
	int64_t *c = tp_calloc((size_t)pp + (size_t)n_chunks, sizeof(*c));
	enum tp_status st;

	*cnt = NULL;
	if (!c)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (s->account_embedding || s->account_loss)
		st = slot_layers(s, label_layers(m), n_chunks, c + pp, err);
	else
		st = stage_layers(s, label_layers(m), pp, V, c, err);
	for (uint32_t ch = 0; !st && ch < n_chunks; ch++) {
		if (s->account_embedding || s->account_loss)
			c[ch % pp] += c[pp + ch];
		else
			c[pp + ch] = c[ch % pp] / V;
	}
	if (st) {
		free(c);
		return st;
	}
	*cnt = c;
	return TP_OK;
}

enum tp_status tp_strategy_to_plan(const struct tp_strategy *s,
				   const struct tp_model *m,
				   const struct tp_cluster *c,
				   struct tp_plan *plan, struct tp_error *err)
{
	uint32_t ndev = (uint32_t)c->devices.n, tp = s->tp, pp = s->pp, dp = 0;
	uint32_t cp = s->cp;
	uint32_t V =
	    s->schedule == TP_SCHEDULE_INTERLEAVED ? s->virtual_stages : 1;
	uint32_t n_chunks, nops = (uint32_t)m->ops.n, *chunk = NULL;
	int64_t *cnt = NULL;
	struct chunker k = {.s = s, .m = m, .c = c};
	uint64_t per_stage;
	int64_t gbs;
	enum tp_status st = TP_OK;

	tp_plan_clear(plan);
	if (!m->finalized || !c->finalized)
		return tp_error_set(err, TP_EINTERNAL,
				    "model and topology must be finalized");
	if (tp == 0 || pp == 0 || s->mb == 0 || cp == 0)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: tp, pp, cp and mb must be "
				    "positive");
	if ((st = check_cp_tp(s, m, err)) ||
	    (st = derive_dp(s, ndev, &dp, err)))
		return st;
	if (s->sp && tp < 2)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: sp=on (sequence parallelism) "
				    "needs tp > 1");
	if ((st = check_ep(s, m, dp, err)) || (st = check_batch(s, m, dp, err)))
		return st;
	if (s->schedule == TP_SCHEDULE_INTERLEAVED && pp < 2)
		return tp_error_set(err, TP_EINPUT,
				    "strategy: schedule=interleaved:%u needs "
				    "pipeline parallelism (pp >= 2); use 1f1b",
				    V);
	gbs = m->global_batch;
	n_chunks = pp * V;
	chunk = tp_calloc(nops ? nops : 1, sizeof(*chunk));
	k.ops = tp_calloc(nops ? nops : 1, sizeof(*k.ops));
	k.first = tp_calloc((size_t)n_chunks + 1, sizeof(*k.first));
	per_stage = (uint64_t)tp * cp * dp;
	k.devs = tp_calloc(per_stage, sizeof(*k.devs));
	if (!chunk || !k.ops || !k.first || !k.devs) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	if ((s->first_layers || s->last_layers || s->account_embedding ||
	     s->account_loss) &&
	    (st = chunk_layers(s, m, V, &cnt, err)))
		goto out;
	if ((st = check_chunks(pp, V,
			       assign_chunks(m, n_chunks, cnt ? cnt + pp : NULL,
					     chunk) +
				       s->account_embedding + s->account_loss,
			       nops, err)))
		goto out;
	plan->global_batch = gbs;
	plan->micro_batches = (uint32_t)(gbs / (int64_t)((uint64_t)s->mb * dp));
	plan->schedule = s->schedule;
	plan->virtual_stages = V;
	plan->zero = s->zero;
	plan->expert_imbalance = s->imbalance;
	plan->expert_capacity_factor = s->capacity;
	k.dp = dp;
	sort_chunks(&k, chunk, n_chunks);
	for (uint32_t ch = 0; ch < n_chunks; ch++)
		if ((st = add_chunk(&k, ch, plan, err)))
			goto out;
out:
	free(chunk);
	free(cnt);
	free(k.ops);
	free(k.first);
	free(k.devs);
	if (st)
		tp_plan_clear(plan);
	return st;
}
