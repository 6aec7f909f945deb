/*
 * driver.h - the libFuzzer glue shared by fuzz/fuzz_*.c: a broken contract
 * (a non-NULL result of a harness function) prints and aborts, so
 * libFuzzer keeps the input as a crash; fixtures load from
 * $TAGPLAN_TESTS/<rel> (the Makefile sets it and $TAGPLAN_DATA).
 */
#ifndef TP_FUZZ_DRIVER_H
#define TP_FUZZ_DRIVER_H

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fz_report(const char *bug, const struct tp_error *err)
{
	char buf[2048];

	if (!bug)
		return;
	fprintf(stderr, "fuzz: contract broken: %s\n", bug);
	if (err->msg[0])
		fprintf(stderr, "fuzz: error record: %s\n",
			tp_error_format(err, buf, sizeof buf));
	abort();
}

static inline void fz_env(void)
{
	if (!getenv("TAGPLAN_DATA"))
		setenv("TAGPLAN_DATA", "data", 0);
}

static inline void fz_fixture_or_exit(struct fz_fixture *fx,
				      const char *model_rel,
				      const char *topo_rel)
{
	char mp[4096], tp[4096], buf[2048];
	const char *dir = getenv("TAGPLAN_TESTS");
	struct tp_error err;

	if (!dir || !*dir)
		dir = "tests";
	snprintf(mp, sizeof mp, "%s/%s", dir, model_rel);
	snprintf(tp, sizeof tp, "%s/%s", dir, topo_rel);
	tp_error_clear(&err);
	if (fz_fixture_load(fx, mp, tp, &err)) {
		fprintf(stderr, "fuzz: fixture: %s\n",
			tp_error_format(&err, buf, sizeof buf));
		exit(1);
	}
}

/*
 * The two functions of a target.  FZ_TARGET(fz_x_one): fz_x_one(data,
 * size, err) per input.  FZ_FIXTURE_TARGET(fz_x_one, MODEL, TOPO): the
 * fixture is loaded once, then fz_x_one(&fixture, data, size, err).
 */
#define FZ_TARGET(one)                                                        \
	int LLVMFuzzerInitialize(int *argc, char ***argv)                     \
	{                                                                     \
		(void)argc;                                                   \
		(void)argv;                                                   \
		fz_env();                                                     \
		return 0;                                                     \
	}                                                                     \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)          \
	{                                                                     \
		struct tp_error err;                                          \
		fz_report(one(data, size, &err), &err);                       \
		return 0;                                                     \
	}

#define FZ_FIXTURE_TARGET(one, model_rel, topo_rel)                           \
	static struct fz_fixture fixture;                                     \
	int LLVMFuzzerInitialize(int *argc, char ***argv)                     \
	{                                                                     \
		(void)argc;                                                   \
		(void)argv;                                                   \
		fz_env();                                                     \
		fz_fixture_or_exit(&fixture, model_rel, topo_rel);            \
		return 0;                                                     \
	}                                                                     \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)          \
	{                                                                     \
		struct tp_error err;                                          \
		fz_report(one(&fixture, data, size, &err), &err);             \
		return 0;                                                     \
	}

#endif
