/*
 * harness.h - the bodies of the fuzz targets, shared by the libFuzzer
 * wrappers (fuzz/fuzz_*.c, built by `make fuzz`) and by the regression
 * tests (tests/test_reliability.c replays tests/data/regress/ through
 * them).
 *
 * Each fz_*_one function feeds bytes to one entry point of the library.
 * Beyond "no crash, no leak, no undefined behaviour" (ASan, UBSan and LSan
 * watch that), it checks contracts that are cheap to state:
 *  - a failing call sets a non-empty message;
 *  - what a loader accepted, its writer writes and the loader reads back
 *    to the same text (src/io/README section 7, round trips);
 *  - a plan the loader or the strategy expansion produced validates and
 *    simulates without error (infeasible is a result, not an error);
 *  - such a plan (and the pipeline target's default strategy), run again
 *    with tp_sim_run_bounded and a cutoff no plan reaches, is cut only
 *    out of memory, exactly when the report is infeasible (the check
 *    before the task graph, src/sim/sim.c), and otherwise simulates to
 *    the same iteration time bit for bit.
 * They return NULL when every contract held, else a static string naming
 * the broken one (err then holds the record involved, if any).
 *
 * Fixtures: the plan and strategy targets run against a fixed model and
 * topology (struct fz_fixture, loaded once).  Topologies resolve device
 * types against data/devices.json, found through $TAGPLAN_DATA.
 */
#ifndef TP_FUZZ_HARNESS_H
#define TP_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"

struct tp_sim;
struct tp_sim_scratch;

struct fz_fixture {
	struct tp_model model;
	struct tp_cluster cluster;
	struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
};

/* Fixture paths, relative to the tests folder. */
#define FZ_PLAN_MODEL "data/good/mlp.json"
#define FZ_PLAN_TOPOLOGY "data/good/two-racks.json"
#define FZ_STRATEGY_MODEL "data/render/gpt-small.json"
#define FZ_STRATEGY_TOPOLOGY "data/render/dgx2.json"

/* Load model and topology files and make a simulator for them.  On
 * failure err says why and fx holds nothing to release. */
enum tp_status fz_fixture_load(struct fz_fixture *fx, const char *model_path,
			       const char *topology_path,
			       struct tp_error *err);
void fz_fixture_release(struct fz_fixture *fx);

/* Model loader (tp_model_load). */
const char *fz_model_one(const uint8_t *data, size_t size,
			 struct tp_error *err);
/* Topology loader (tp_topology_load). */
const char *fz_topology_one(const uint8_t *data, size_t size,
			    struct tp_error *err);
/* Plan structure check (tp_plan_check) and loader (tp_plan_load) against
 * fx. */
const char *fz_plan_one(const struct fz_fixture *fx, const uint8_t *data,
			size_t size, struct tp_error *err);
/* HF config builder (tp_build_hf_text); the input's length picks seq,
 * batch and dtype so the seeds stay plain config.json files. */
const char *fz_hf_one(const uint8_t *data, size_t size,
		      struct tp_error *err);
/* Strategy strings (tp_strategy_parse, tp_strategy_format round trip,
 * tp_strategy_to_plan on fx); the bytes up to the first NUL, at most
 * 1023 of them, are the string. */
const char *fz_strategy_one(const struct fz_fixture *fx, const uint8_t *data,
			    size_t size, struct tp_error *err);

/* Report loader (tp_report_load). */
const char *fz_report_one(const uint8_t *data, size_t size,
			  struct tp_error *err);
/* nvidia-smi topology matrices (tp_build_topology_nvidia_smi, GPUs typed
 * A100-SXM4-80GB); an accepted matrix's topology must round-trip. */
const char *fz_nvsmi_one(const uint8_t *data, size_t size,
			 struct tp_error *err);
/* Device-type lists (tp_devices_load, the layout of data/devices.json). */
const char *fz_devices_one(const uint8_t *data, size_t size,
			   struct tp_error *err);
/* GNN weights files (tp_gnn_weights_decode).  The CRC-32 at the end is
 * recomputed over the mutated bytes so that mutations reach the checks
 * after the checksum; an accepted file must encode to bytes that decode
 * and encode to themselves (an accepted file that already is those bytes
 * is not decoded twice). */
const char *fz_weights_one(const uint8_t *data, size_t size,
			   struct tp_error *err);

/* Runtime profiles (tp_runtime_load, tagplan-runtime/1; a user's
 * `--runtime FILE` or a calibrated profile): what loads must, applied to
 * the simulator's parameters (tp_sim_params_runtime, calibration
 * included), simulate fx's default strategy with finite figures. */
const char *fz_runtime_one(const struct fz_fixture *fx, const uint8_t *data,
			   size_t size, struct tp_error *err);
/* Measured-run lists (tp_mruns_load, `tagplan calibrate`'s input): what
 * loads has a finite positive measured time per run. */
const char *fz_runs_one(const uint8_t *data, size_t size,
			struct tp_error *err);

/* Load -> simulate -> a tiny plan (the crashes and hangs of large finite
 * figures and huge batches lived behind the loaders): the input is a model
 * and, after a NUL byte, a topology (either part empty: fx's).  What
 * loads must simulate under the default strategy when that expands, and
 * a search of 4 to 11 playouts (one thread, 2 s) must answer with a plan
 * that validates and loads back, or fail with a message; every report
 * figure must be finite.  Clusters above 256 devices are skipped (slow
 * under the sanitizers, covered by the topology target). */
const char *fz_pipeline_one(const struct fz_fixture *fx, const uint8_t *data,
			    size_t size, struct tp_error *err);

#endif
