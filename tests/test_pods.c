/*
 * test_pods.c - device sets from the cluster's hierarchy (src/search/
 * devsets.c, add_tier_sets): the devices under each switch of a tier of a
 * tiered network are a family of sets (pods), offered as pipeline stages
 * and replica sets like the contiguous parts, unless they are those
 * parts already; a cluster without tiers keeps its sets.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/build.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "util.h"

/* The search space of a chain of 8 matmuls on the presets specs joined by
 * fabric (NULL: a star); c, m and g are the caller's to release. */
static void space_on(const char *spec, const char *fabric,
		     struct tp_cluster *c, struct tp_model *m,
		     struct tp_groups *g, struct tp_space *sp)
{
	const struct tp_test_chain ch = {8, TP_DTYPE_FP16, 1e11, 1e8, 1e7,
					 1e7, 1e7, 4096};
	const char *specs[1] = {spec};
	struct tp_error err;

	tp_cluster_init(c);
	ck_assert_msg(tp_build_topology_fabric(specs, 1, NULL, 1.0, fabric, c,
					       &err) == TP_OK,
		      "%s", err.msg);
	tp_test_chain_model(m, &ch);
	ck_assert_int_eq(tp_coarsen(m, 0, g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(sp, m, c, g, NULL), TP_OK);
}

static void space_release(struct tp_cluster *c, struct tp_model *m,
			  struct tp_groups *g, struct tp_space *sp)
{
	tp_space_release(sp);
	tp_groups_release(g);
	tp_model_release(m);
	tp_cluster_release(c);
}

/* The index of the space's family of kind k, or -1. */
static int family_of(const struct tp_space *sp, enum tp_devset_kind k)
{
	for (uint32_t f = 0; f < sp->families.n; f++)
		if (sp->families.v[f].kind == k)
			return (int)f;
	return -1;
}

/* 12 DGX H100 on leaves of 5 nodes: three pods of 40, 40 and 16 GPUs,
 * not a division of the device order into equal parts, so a family of
 * their own, offered to every group (3 members: fixed sets). */
START_TEST(test_pods_uneven_leaves)
{
	static const uint32_t size[3] = {40, 40, 16}, nodes[3] = {5, 5, 2};
	struct tp_cluster c;
	struct tp_model m;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_action acts[64];
	struct tp_decision *dec;
	struct tp_globals gl = {.micro_batches = 4,
				.schedule = TP_SCHEDULE_1F1B};
	const struct tp_family *fm;
	uint32_t n, offered = 0;
	int f;

	space_on("dgx-h100:12", "clos:leaf=5", &c, &m, &g, &sp);
	f = family_of(&sp, TP_DEVSET_TIER);
	ck_assert_int_ge(f, 0);
	fm = &sp.families.v[f];
	ck_assert_uint_eq(fm->n, 3);
	for (uint32_t k = 0; k < 3; k++) {
		const struct tp_devset *ds =
			&sp.sets.v[sp.family_sets.v[fm->first + k]];
		const uint32_t *d = tp_space_set_devs(&sp,
						      sp.family_sets.v[fm->first +
								       k]);
		char want[24];
		ck_assert_uint_eq(ds->n, size[k]);
		ck_assert_uint_eq(ds->n_nodes, nodes[k]);
		ck_assert_uint_eq(d[0], 40 * k);
		ck_assert_uint_eq(ds->tp_max, 8);
		/* the last pod is the sixth of the parts of 16 GPUs
		   already: that set, with its label */
		snprintf(want, sizeof(want), "leaf %u/3", k + 1);
		ck_assert_str_eq(ds->label, k < 2 ? want : "6/6");
	}
	dec = calloc(g.n, sizeof(*dec));
	ck_assert_ptr_nonnull(dec);
	for (uint32_t k = 0; k < g.n; k++) {
		dec[k].set = TP_SPACE_SET_ALL;
		dec[k].tp = 1;
	}
	n = tp_space_group_actions(&sp, 0, dec, &gl, acts, 64);
	for (uint32_t a = 0; a < n; a++)
		offered += sp.sets.v[acts[a].d.set].kind == TP_DEVSET_TIER;
	ck_assert_uint_ge(offered, 3);
	free(dec);
	space_release(&c, &m, &g, &sp);
}
END_TEST

/* Leaves of 4 of 12 nodes are the thirds of the device order (parts of
 * p = 3): no second family of the same sets; and a star, like the same
 * cluster's leaves of 4, keeps its sets and families. */
START_TEST(test_pods_not_repeated)
{
	struct tp_cluster c, c2;
	struct tp_model m, m2;
	struct tp_groups g, g2;
	struct tp_space sp, sp2;

	space_on("dgx-h100:12", "clos:leaf=4", &c, &m, &g, &sp);
	space_on("dgx-h100:12", NULL, &c2, &m2, &g2, &sp2);
	ck_assert_int_eq(family_of(&sp, TP_DEVSET_TIER), -1);
	ck_assert_uint_eq(sp.sets.n, sp2.sets.n);
	ck_assert_uint_eq(sp.families.n, sp2.families.n);
	space_release(&c, &m, &g, &sp);
	space_release(&c2, &m2, &g2, &sp2);
}
END_TEST

/* 100 DGX H100 (800 GPUs) with leaves of 2 nodes under spines of 3
 * leaves: the 50 leaves are the parts of p = 50 (16 GPUs each), the 17
 * spines (16 of 48 GPUs, the last of 32) are new: one family, labelled by
 * the tier, each pod whole nodes (a pod that is a set already keeps
 * that set and its label). */
START_TEST(test_pods_spines)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_groups g;
	struct tp_space sp;
	const struct tp_family *fm;
	uint32_t tiers = 0, total = 0;

	space_on("dgx-h100:100", "clos:leaf=2,spine=3", &c, &m, &g, &sp);
	for (uint32_t f = 0; f < sp.families.n; f++)
		tiers += sp.families.v[f].kind == TP_DEVSET_TIER;
	ck_assert_uint_eq(tiers, 1);
	fm = &sp.families.v[family_of(&sp, TP_DEVSET_TIER)];
	ck_assert_uint_eq(fm->n, 17);
	for (uint32_t k = 0; k < fm->n; k++) {
		const struct tp_devset *ds =
			&sp.sets.v[sp.family_sets.v[fm->first + k]];
		ck_assert_uint_eq(ds->n, k < 16 ? 48 : 32);
		ck_assert_uint_eq(ds->tp_max, 8);
		/* the last, 32 GPUs, is the part 25/25 already */
		ck_assert_msg(k == 16 ? !strcmp(ds->label, "25/25")
				      : !strncmp(ds->label, "spine ", 6),
			      "%u: %s", k, ds->label);
		total += ds->n;
	}
	ck_assert_uint_eq(total, 800);
	space_release(&c, &m, &g, &sp);
}
END_TEST

Suite *suite_pods(void)
{
	Suite *s = suite_create("pods");
	TCase *tc = tcase_create("pods");

	tcase_add_test(tc, test_pods_uneven_leaves);
	tcase_add_test(tc, test_pods_not_repeated);
	tcase_add_test(tc, test_pods_spines);
	suite_add_tcase(s, tc);
	return s;
}
