/*
 * test_calib.c - measured runs (io/runs.h) and their prediction
 * (calib/calib.h).
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "calib/calib.h"
#include "io/runs.h"
#include "util.h"

START_TEST(test_runs_shipped)
{
	struct tp_mruns r;
	struct tp_error err;

	tp_mruns_init(&r);
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_mruns_load_file(tp_data_file("validation/measured_runs.json"),
			       NULL, &r, &err),
	    TP_OK);
	ck_assert_int_eq(r.rows.n, 20);
	/* samples/s become seconds: 256 images at 2470 img/s */
	ck_assert_str_eq(r.rows.v[0].id, "rn50-a100-amp-1");
	ck_assert(fabs(r.rows.v[0].measured_s - 256.0 / 2470) < 1e-12);
	ck_assert_str_eq(r.rows.v[0].runtime, "ddp");
	ck_assert(strstr(r.rows.v[0].topology, "topologies/t_a100x1.json"));
	ck_assert_int_eq(
	    tp_mruns_load_file(tp_data_file("validation/"
					    "megatron_a100_table1.json"),
			       NULL, &r, &err),
	    TP_OK);
	ck_assert_int_eq(r.rows.n, 30);
	/* Table 1's 1.7B row: F / (137 TFLOP/s x 32 GPUs) */
	ck_assert(r.rows.v[20].sweep);
	ck_assert(fabs(r.rows.v[20].measured_s - 3.528) < 0.01);
	tp_mruns_release(&r);
}
END_TEST

START_TEST(test_runs_bad)
{
	static const char *const bad[][2] = {
	    {"{\"rows\": [{\"id\": \"a\", \"model\": {\"zoo\": "
	     "\"resnet50\", \"batch\": 8, \"dtype\": \"fp16\"}, "
	     "\"topology\": \"t.json\", \"strategy\": \"dp=1\"}]}",
	     "$.rows[0]"},
	    {"{\"rows\": [{\"id\": \"a\", \"model\": {\"zoo\": "
	     "\"resnet50\", \"batch\": 8, \"dtype\": \"fp8x\"}, "
	     "\"topology\": \"t.json\", \"strategy\": \"dp=1\", "
	     "\"measured_iteration_s\": 1}]}",
	     "$.rows[0].model.dtype"},
	    {"{\"rows\": [{\"id\": \"a\", \"model\": {\"zoo\": "
	     "\"resnet50\", \"batch\": 8, \"dtype\": \"fp16\"}, "
	     "\"topology\": \"t.json\", \"strategy\": \"dp=1\", "
	     "\"measured_iteration_s\": -1}]}",
	     "$.rows[0].measured_iteration_s"},
	    {"{\"rows\": []}", "$.rows"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tp_mruns r;
		struct tp_error err;

		tp_mruns_init(&r);
		tp_error_clear(&err);
		ck_assert_int_eq(tp_mruns_load("runs.json", ".", bad[i][0],
					       strlen(bad[i][0]), NULL, &r,
					       &err),
				 TP_EINPUT);
		ck_assert_msg(strcmp(err.path, bad[i][1]) == 0, "%zu: %s %s", i,
			      err.path, err.msg);
		tp_mruns_release(&r);
	}
}
END_TEST

/* A Table 1 run predicted within 5% (the calibration bench_sim keeps). */
START_TEST(test_calib_predict_table1)
{
	struct tp_mruns r;
	struct tp_calib_result res;
	struct tp_error err;

	tp_mruns_init(&r);
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_mruns_load_file(tp_data_file("validation/"
					    "megatron_a100_table1.json"),
			       NULL, &r, &err),
	    TP_OK);
	ck_assert_int_eq(
	    tp_calib_predict(&r.rows.v[0], NULL, NULL, NULL, &res, &err),
	    TP_OK);
	ck_assert(res.feasible);
	ck_assert_str_eq(res.runtime, "megatron-lm-2021");
	ck_assert_msg(fabs(res.error) < 0.05, "error %g", res.error);
	tp_mruns_release(&r);
}
END_TEST

Suite *suite_calib(void)
{
	Suite *s = suite_create("calib");
	TCase *tc = tcase_create("runs");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_runs_shipped);
	tcase_add_test(tc, test_runs_bad);
	tcase_add_test(tc, test_calib_predict_table1);
	suite_add_tcase(s, tc);
	return s;
}
