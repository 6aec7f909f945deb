/*
 * test_newuser.c - suite "newuser": what a new user's first commands
 * meet: a mistyped command, an option before the command, outputs that
 * cannot be written, exports that build another model than the one
 * planned.  Each error names the fix, exits as tagplan(1) says and
 * writes nothing.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "core/strbuf.h"
#include "core/runtime.h"
#include "util.h"

/* Run argv; its exit status must be `status`, its stderr contain want
 * (and not unwanted), its stdout be empty. */
static void expect(const char *const *argv, int status, const char *want,
		   const char *unwanted)
{
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == status, "%s: exit %d, want %d: %s", argv[1],
		      r.status, status, r.err);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	ck_assert_msg(!unwanted || !strstr(r.err, unwanted), "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}

/* A mistyped command names the one meant (a swap, a prefix, a plural,
 * a near spelling); an option given before any command says the command
 * comes first; "tagplan help help" is the usage.  Before: 'no command
 * "plna"; see tagplan --help' for every one of them. */
START_TEST(test_command_slips)
{
	static const char *const cases[][2] = {
	    {"plna", "no command \"plna\" (did you mean plan?)"},
	    {"simulte", "(did you mean simulate?)"},
	    {"sim", "(did you mean simulate?)"},
	    {"topology", "(did you mean topo?)"},
	    {"models", "(did you mean model?)"},
	    {"calibration", "(did you mean calibrate?)"},
	    {"chekc", "(did you mean check?)"},
	    {"--versoin", "unknown option \"--versoin\" (did you mean "
			  "--version?)"},
	    {"-m", "\"-m\" is an option, and the command comes first"},
	};
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	{
		const char *argv[] = {"tagplan", "help", "plna", NULL};
		expect(argv, 2, "(did you mean plan?)", NULL);
	}
	{
		const char *argv[] = {"tagplan", "xyzzy", NULL};
		expect(argv, 2, "no command \"xyzzy\"; see", "did you mean");
	}
	{
		const char *argv[] = {"tagplan", "help", "help", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.out, "usage: tagplan COMMAND"), "%s",
			      r.out);
		tp_run_free(&r);
	}
}
END_TEST

/* An output that is a directory is usage (exit 2, as tagplan(1) says:
 * "A directory ... is refused ...: exit 2, nothing written"; it was exit
 * 3) and says to name a file inside it; a missing directory names
 * itself and mkdir -p (exit 2, a path that does not exist; it was 3).
 * Every command finds both before any work: export printed its notes
 * before failing to write. */
START_TEST(test_output_directory)
{
	const char *dir = tp_test_tmpdir();
	char missing[1024], inside[1100], report[1100];
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", dir, NULL};
	const char *a2[] = {"tagplan", "export", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", dir, NULL};
	const char *a3[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", report, "--trace", dir, "-q",
			    NULL};
	const char *a4[] = {"tagplan", "export", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", inside, NULL};
	struct stat st;

	snprintf(missing, sizeof(missing), "%s/missing", dir);
	snprintf(inside, sizeof(inside), "%s/missing/x.args", dir);
	snprintf(report, sizeof(report), "%s/report.json", dir);
	expect(a1, 2, "is a directory, not a file: name a file inside it",
	       NULL);
	expect(a2, 2, "is a directory, not a file: name a file inside it",
	       "--vocab-size");
	expect(a3, 2, "is a directory, not a file", NULL);
	ck_assert_msg(stat(report, &st) != 0, "the report was written");
	expect(a4, 2, "does not exist (create it first, e.g. mkdir -p ",
	       "--vocab-size");
	ck_assert_msg(stat(missing, &st) != 0, "the directory was made");
}
END_TEST

/* export --to torchtitan writes TorchTitan's llama3 model for every
 * model; a note names what llama3 does not build (it wrote GPT-2's and
 * Mixtral's configs, a dense SwiGLU model, without a word); Llama 3,
 * which it builds, gets no such note. */
START_TEST(test_torchtitan_arch_notes)
{
	static const char *const cases[][2] = {
	    {"gpt2", "does not build the model's gelu_tanh MLPs, layernorm, "
		     "learned positions, biases: the model it builds differs"},
	    {"mixtral-8x7b", "does not build the model's mixture-of-experts "
			     "layers (8 routed experts): the model"},
	    {"llama-3-8b", NULL},
	};
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "export", "-s", "tp=1",
				      "-m", NULL, "-t", dgx, "--to",
				      "torchtitan", NULL};
		char m[256];
		snprintf(m, sizeof(m), "models/%s.json", cases[i][0]);
		argv[5] = tp_data_file(m);
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i][0],
			      r.status, r.err);
		ck_assert_msg(strstr(r.out, "flavor = \"tagplan\""), "%s",
			      r.out);
		if (cases[i][1])
			ck_assert_msg(strstr(r.err, cases[i][1]),
				      "%s: want \"%s\" in: %s", cases[i][0],
				      cases[i][1], r.err);
		else
			ck_assert_msg(!strstr(r.err, "does not build"),
				      "%s: %s", cases[i][0], r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* A runtime named as its project writes it ("DeepSpeed", exit 3 'cannot
 * open' before: taken for a file), or short of its version ("megatron",
 * "fsdp": the list of shipped names without a hint before) names the
 * shipped profiles meant, exit 2, nothing written. */
START_TEST(test_runtime_slips)
{
	static const char *const cases[][2] = {
	    {"DeepSpeed", "unknown runtime \"DeepSpeed\" (did you mean "
			  "deepspeed?); shipped: "},
	    {"megatron", "(did you mean megatron-core, megatron-lm-2021, "
			 "megatron-lm-2022?)"},
	    {"fsdp", "(did you mean fsdp2?)"},
	    {"deepspeeed", "(did you mean deepspeed?)"},
	};
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "simulate", "-s", "tp=1",
				      "-m", gpt2, "-t", dgx, "--runtime",
				      cases[i][0], "-q", NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
}
END_TEST

/* tagplan --help's one-line summaries say what the commands do: export
 * writes TorchTitan configs too (the line listed Megatron, DeepSpeed and
 * torchrun only), import clusters and plans too ("as a model file"). */
START_TEST(test_help_summaries)
{
	const char *argv[] = {"tagplan", "--help", NULL};
	struct tp_run r;
	const char *line;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_int_eq(r.status, 0);
	line = strstr(r.out, "\n  export ");
	ck_assert_ptr_nonnull(line);
	ck_assert_msg(strstr(line, "TorchTitan") &&
			      strstr(line, "TorchTitan") < strchr(line + 1, '\n'),
		      "%s", r.out);
	line = strstr(r.out, "\n  import ");
	ck_assert_ptr_nonnull(line);
	ck_assert_msg(strstr(line, "clusters and plans") &&
			      strstr(line, "clusters and plans") <
				      strchr(line + 1, '\n'),
		      "%s", r.out);
	tp_run_free(&r);
}
END_TEST

/* check's fractions given as percentages, as --margin takes them ("10%")
 * and as MFU is quoted: the error names the fraction meant (it said only
 * "expects a number from 0 to 1"). */
START_TEST(test_fraction_as_percent)
{
	const char *a1[] = {"tagplan", "check", "-p", "plan.json", "--min-mfu",
			    "40%", NULL};
	const char *a2[] = {"tagplan", "check", "-p", "plan.json",
			    "--max-memory-fraction", "95", NULL};
	const char *a3[] = {"tagplan", "check", "-p", "plan.json", "--min-mfu",
			    "abc", NULL};

	expect(a1, 2, "--min-mfu expects a number from 0 to 1, not \"40%\" (a "
		      "fraction: 0.4 for 40%)",
	       NULL);
	expect(a2, 2, "not \"95\" (a fraction: 0.95 for 95%)", NULL);
	expect(a3, 2, "not \"abc\"", "a fraction");
}
END_TEST

/* Two outputs to one stream: simulate --trace - without -o wrote the
 * report and the trace one after the other on stdout (exit 0, two JSON
 * documents run together, which no reader takes), plan --dot /dev/stdout
 * the plan and the DOT; now a usage error naming the fix, nothing on
 * stdout. */
START_TEST(test_two_outputs_one_stream)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "--trace", "-", "-q", NULL};
	const char *a2[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", "-", "--trace", "/dev/stdout",
			    "-q", NULL};
	const char *a3[] = {"tagplan", "plan", "-m", gpt2, "-t", dgx,
			    "--playouts", "5", "--threads", "1", "--dot",
			    "/dev/stdout", "-q", NULL};

	expect(a1, 2, "--trace - would be written to standard output, which "
		      "carries the command's output without -o: give --trace "
		      "a file name, or -o FILE",
	       NULL);
	expect(a2, 2, "-o - and --trace /dev/stdout would both be written to "
		      "standard output",
	       NULL);
	expect(a3, 2, "--dot /dev/stdout would be written to standard output",
	       NULL);
}
END_TEST

/* simulate -s of a strategy the runtime cannot execute simulated it
 * (exit 0) where plan -s refuses it; --runtime none still simulates. */
START_TEST(test_simulate_strategy_runtime)
{
	const char *llama = tp_data_file("models/llama-2-7b.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=8", "-m", llama,
			    "-t", dgx, "--runtime", "ddp", "-q", NULL};
	const char *a2[] = {"tagplan", "simulate", "-s", "tp=8", "-m", llama,
			    "-t", dgx, "--runtime", "none", "-q", NULL};

	struct tp_run r;

	expect(a1, 2, "-s tp=8: runtime ddp cannot execute it: group 0 is "
		      "tensor parallel",
	       NULL);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_uint_gt(r.out_len, 0);
	tp_run_free(&r);
}
END_TEST

/* --trace-replicas without --trace shaped nothing and said nothing. */
START_TEST(test_trace_replicas_without_trace)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "--trace-replicas", "all", "-q", NULL};

	expect(a1, 2, "--trace-replicas all shapes the trace: give --trace F "
		      "too, or leave it out",
	       NULL);
}
END_TEST

/* A device type written short ("H100", "A100") names the types it
 * begins: the topology's error named the V100s (a prefix one edit away,
 * which come first in the catalogue) and not the A100s or H100s; topo
 * --from-nvidia-smi --gpu named none. */
START_TEST(test_device_type_slips)
{
	const char *dir = tp_test_tmpdir();
	char path[1100];
	const char *a1[] = {"tagplan", "validate", path, NULL};
	const char *a2[] = {"tagplan", "topo", "--from-nvidia-smi",
			    tp_test_path("data/nvidia-smi/dgx-a100.txt"),
			    "--gpu", "A100", NULL};
	static const char topo[] =
		"{\"format\": \"tagplan-topology/1\", \"name\": \"t\", "
		"\"nodes\": [{\"name\": \"n\", \"devices\": [{\"type\": "
		"\"H100\", \"count\": 2}], \"fabric\": {\"kind\": "
		"\"nvswitch\", \"bandwidth_Bps\": 4.5e11, \"latency_s\": "
		"1e-6}}]}\n";

	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, topo, strlen(topo)), 0);
	expect(a1, 2, "unknown device type \"H100\" (did you mean "
		      "\"H100-SXM5-80GB\", \"H100-PCIe-80GB\", "
		      "\"H100-NVL-94GB\"?)",
	       NULL);
	expect(a2, 2, "--gpu: unknown device type \"A100\" (did you mean "
		      "\"A100-SXM4-40GB\", \"A100-SXM4-80GB\"",
	       NULL);
}
END_TEST

/* A runtime profile (tagplan-runtime/1, what --runtime FILE takes) is one
 * of tagplan's formats: validate and inspect said 'unknown format
 * "tagplan-runtime/1"; expected "tagplan-model/1", ...' even for the
 * shipped ones; now validate checks it (errors at their JSON path),
 * inspect summarises it, and given to -p it says to use --runtime. */
START_TEST(test_runtime_profile_files)
{
	const char *dir = tp_test_tmpdir();
	const char *mc = tp_data_file("runtimes/megatron-core.json");
	char bad[1100];
	const char *a1[] = {"tagplan", "validate", "--strict", mc, NULL};
	const char *a2[] = {"tagplan", "inspect", mc, NULL};
	const char *a3[] = {"tagplan", "validate", bad, NULL};
	const char *a4[] = {"tagplan", "simulate", "-p", mc, NULL};
	struct tp_run r;
	char *text, *at;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "megatron-core.json: ok (runtime)\n"),
		      "%s", r.out);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "\"kind\": \"runtime\"") &&
			      strstr(r.out, "\"name\": \"megatron-core\"") &&
			      strstr(r.out, "\"launcher\": \"megatron\""),
		      "%s", r.out);
	tp_run_free(&r);
	/* a profile with a wrong type: the error at its path */
	text = tp_test_read(mc, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"name\": \"megatron-core\"");
	ck_assert_ptr_nonnull(at);
	/* the same length: 23 bytes */
	memcpy(at, "\"name\": 123456789012345", 23);
	snprintf(bad, sizeof(bad), "%s/bad-runtime.json", dir);
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	free(text);
	expect(a3, 2, "bad-runtime.json: $.name: expected a string", NULL);
	expect(a4, 2, "this file is a runtime: give it with --runtime FILE; "
		      "-p takes a plan",
	       NULL);
}
END_TEST

/* tagplan's outputs that are not tagplan files, given back to it: a
 * trace (simulate --trace) or a DeepSpeed config (export) was told to
 * 'add "format": "tagplan-plan/1"', which would not make it a plan; now
 * the error says what the file is and where it goes.  A JSON object of
 * none of these kinds keeps the "add format" fix. */
START_TEST(test_own_outputs_given_back)
{
	const char *dir = tp_test_tmpdir();
	char trace[1100], ds[1100], other[1100];
	const char *a1[] = {"tagplan", "simulate", "-p", trace, NULL};
	const char *a2[] = {"tagplan", "validate", ds, NULL};
	const char *a3[] = {"tagplan", "simulate", "-p", other, NULL};
	static const char t[] = "{\"displayTimeUnit\": \"ms\", "
				"\"traceEvents\": []}\n";
	static const char d[] = "{\"train_batch_size\": 8, "
				"\"train_micro_batch_size_per_gpu\": 1}\n";
	static const char o[] = "{\"name\": \"x\"}\n";

	snprintf(trace, sizeof(trace), "%s/trace.json", dir);
	snprintf(ds, sizeof(ds), "%s/ds_config.json", dir);
	snprintf(other, sizeof(other), "%s/other.json", dir);
	ck_assert_int_eq(tp_test_write(trace, t, strlen(t)), 0);
	ck_assert_int_eq(tp_test_write(ds, d, strlen(d)), 0);
	ck_assert_int_eq(tp_test_write(other, o, strlen(o)), 0);
	expect(a1, 2, "this is a Chrome/Perfetto trace (\"traceEvents\", as "
		      "tagplan simulate --trace writes), not a tagplan file",
	       "add \"format\"");
	expect(a2, 2, "this is a DeepSpeed config (as tagplan export --to "
		      "deepspeed writes), not a tagplan file",
	       "add \"format\"");
	expect(a3, 2, "missing required field \"format\" (add \"format\": "
		      "\"tagplan-plan/1\")",
	       NULL);
}
END_TEST

/* plan's "unconstrained" line lists what the runtime lacks with commas:
 * "needs uneven_shares compression: ..." read as one phrase. */
START_TEST(test_caps_list)
{
	struct tp_strbuf sb;

	tp_strbuf_init(&sb);
	tp_render_caps(&sb, (1u << TP_CAP_UNEVEN_SHARES) |
				    (1u << TP_CAP_COMPRESSION));
	ck_assert_str_eq(tp_strbuf_cstr(&sb), "uneven_shares, compression");
	tp_strbuf_reset(&sb);
	tp_render_caps(&sb, 1u << TP_CAP_COMPRESSION);
	ck_assert_str_eq(tp_strbuf_cstr(&sb), "compression");
	tp_strbuf_release(&sb);
}
END_TEST

/* An HF config of an architecture tagplan does not build (Mamba: no
 * attention heads) was told 'the nearest supported is "bert" ...; if the
 * architecture is the same, set "model_type": "bert"', which builds an
 * encoder; now: no supported type reads it, and what the nearest lacks.
 * A config the nearest type can read keeps the proposal. */
START_TEST(test_hf_unbuildable_type)
{
	const char *dir = tp_test_tmpdir();
	char mamba[1100], src[1200], llama4[1100], src4[1200];
	const char *a1[] = {"tagplan", "model", src, "-o", "/dev/null", NULL};
	const char *a2[] = {"tagplan", "model", src4, "-o", "/dev/null", NULL};
	static const char m[] =
		"{\"model_type\": \"mamba\", \"hidden_size\": 768, "
		"\"num_hidden_layers\": 24, \"vocab_size\": 50280, "
		"\"state_size\": 16, \"expand\": 2, \"conv_kernel\": 4}\n";
	static const char l4[] =
		"{\"model_type\": \"llama4_text\", \"hidden_size\": 512, "
		"\"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
		"\"intermediate_size\": 1024, \"vocab_size\": 1000, "
		"\"rms_norm_eps\": 1e-5, \"rope_theta\": 500000}\n";

	snprintf(mamba, sizeof(mamba), "%s/mamba.json", dir);
	snprintf(src, sizeof(src), "hf:%s", mamba);
	snprintf(llama4, sizeof(llama4), "%s/llama4.json", dir);
	snprintf(src4, sizeof(src4), "hf:%s", llama4);
	ck_assert_int_eq(tp_test_write(mamba, m, strlen(m)), 0);
	ck_assert_int_eq(tp_test_write(llama4, l4, strlen(l4)), 0);
	expect(a1, 2, "unsupported model_type \"mamba\": no supported type "
		      "reads this config (the nearest by its fields, \"bert\", "
		      "needs \"num_attention_heads\", which it lacks",
	       "set \"model_type\"");
	expect(a2, 2, "the nearest supported is \"llama\"", NULL);
}
END_TEST

/* export --to torchrun --script PATH: a path with a space or a shell
 * character went into the script as it was ("my train.py" ran as two
 * words, "x.py; rm y" as two commands); now one quoted word.  A plain
 * name stays as it is. */
START_TEST(test_torchrun_script_quoted)
{
	static const char *const cases[][2] = {
	    {"my train.py; rm -rf x", "\n  'my train.py; rm -rf x' \\\n"},
	    {"it's.py", "\n  'it'\\''s.py' \\\n"},
	    {"/opt/run-1/pretrain_gpt.py", "\n  /opt/run-1/pretrain_gpt.py \\\n"},
	};
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "export", "-s", "tp=1",
				      "-m", gpt2, "-t", dgx, "--to",
				      "torchrun", "--script", cases[i][0],
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.out, cases[i][1]), "want [%s] in: %s",
			      cases[i][1], r.out);
		tp_run_free(&r);
	}
}
END_TEST

/* A misspelt --net names the networks meant (it listed them all, with no
 * hint, as node presets and device types already had). */
START_TEST(test_network_slips)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:2", "--net", "ib-hdx",
			    NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:2", "--net", "IB-HDR",
			    NULL};
	const char *a3[] = {"tagplan", "topo", "dgx-a100:2", "--net",
			    "infiniband", NULL};

	expect(a1, 2, "unknown network \"ib-hdx\" (did you mean \"ib-hdr\"",
	       NULL);
	expect(a2, 2, "(did you mean \"ib-hdr\"", NULL);
	expect(a3, 2, "unknown network \"infiniband\"; known: ", NULL);
}
END_TEST

/* validate - - (or -t - with a plan from -) read standard input twice:
 * the first file validated, the second "-:1:1: empty input" (exit 2
 * after printing an ok); now a usage error before reading, as simulate
 * and plan already said. */
START_TEST(test_stdin_once)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *a1[] = {"tagplan", "validate", "-", "-", NULL};
	const char *a2[] = {"tagplan", "inspect", "-m", gpt2, "-t", "-", "-",
			    NULL};
	char *text = tp_test_read(gpt2, NULL);
	struct tp_run r;

	ck_assert_ptr_nonnull(text);
	tp_run_tagplan(&r, a1, text);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "only one input can come from stdin (- "
				    "is given 2 times)"),
		      "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, text);
	ck_assert_msg(r.status == 2 &&
			      strstr(r.err, "only one input can come from stdin"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	free(text);
}
END_TEST

/* Every line of out fits 80 columns; what names the help in the
 * message. */
static void expect_width(const char *what, const char *out)
{
	for (const char *line = out; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		ck_assert_msg(n <= 80, "%s: %zu columns: %.*s", what, n, (int)n,
			      line);
		line += n + (nl ? 1 : 0);
	}
}

/* Every --help fits an 80-column terminal, as the tables do (model, topo
 * and import had lines of 81-87 columns that wrapped mid-word; calibrate
 * two of 83 and 107).  The commands are the ones `tagplan --help` lists,
 * so that a command added later is checked too. */
START_TEST(test_help_width)
{
	const char *top[] = {"tagplan", "--help", NULL};
	struct tp_run list, r;
	int n = 0;

	tp_run_tagplan(&list, top, NULL);
	ck_assert_msg(list.status == 0, "--help: exit %d", list.status);
	expect_width("tagplan --help", list.out);
	for (const char *p = strstr(list.out, "\ncommands:\n"); p;
	     p = strchr(p + 1, '\n')) {
		char cmd[32], what[64];
		const char *argv[] = {"tagplan", cmd, "--help", NULL};

		/* a command's row: two spaces, its name, spaces, its line */
		if (strncmp(p, "\n  ", 3) || p[3] == ' ' ||
		    sscanf(p + 3, "%31[a-z] ", cmd) != 1)
			continue;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s: exit %d", cmd, r.status);
		snprintf(what, sizeof(what), "%s --help", cmd);
		expect_width(what, r.out);
		tp_run_free(&r);
		n++;
	}
	/* the list was found: plan ... train, calibrate and import */
	ck_assert_msg(n >= 12, "%d commands in: %s", n, list.out);
	tp_run_free(&list);
}
END_TEST

/* export -s of a strategy without sync= noted that "the plan
 * synchronises gradients otherwise than megatron-core's collectives (NCCL)
 * do: ... not as simulated", though nothing was simulated and the string
 * named no sync (its own default differs from the runtime's rule: one
 * replica per node is a ring to NCCL); a sync= given keeps the note. */
START_TEST(test_export_strategy_sync_note)
{
	/* tp 8 on four 8-GPU nodes: one replica per node */
	const char *llama = tp_data_file("models/llama-3-8b.json");
	const char *dgx = tp_data_file("topologies/dgx-a100-4.json");
	const char *a1[] = {"tagplan", "export", "-s", "tp=8", "-m", llama,
			    "-t", dgx, NULL};
	const char *a2[] = {"tagplan", "export", "-s", "tp=8,sync=hierarchical",
			    "-m", llama, "-t", dgx, NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "--tensor-model-parallel-size 8"), "%s",
		      r.out);
	ck_assert_msg(!strstr(r.err, "synchronises gradients otherwise"), "%s",
		      r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "synchronises gradients otherwise"), "%s",
		      r.err);
	tp_run_free(&r);
}
END_TEST

/* What tagplan model and tagplan topo take, given to -m or -t (hf:PATH,
 * "dgx-a100:4", "v100-nvlink:2 1080ti-pcie:2"): 'cannot open: No such
 * file or directory' (exit 3) with the shipped names; now usage (exit 2)
 * with the command that builds the file.  A missing file keeps the old
 * message (exit 2 too: a path that does not exist), a shipped name still
 * loads. */
START_TEST(test_source_given_as_file)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	char hf[1100];
	const char *a1[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "dgx-a100:4", "-s", "tp=1", NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "v100-nvlink:2 1080ti-pcie:2", "-s", "tp=1", NULL};
	const char *a3[] = {"tagplan", "simulate", "-m", hf, "-t", "dgx-a100",
			    "-s", "tp=1", NULL};
	const char *a4[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "no-such-topology", "-s", "tp=1", NULL};

	snprintf(hf, sizeof(hf), "hf:%s", tp_test_path("data/hf/gpt2.json"));
	expect(a1, 2, "dgx-a100:4: a spec of `tagplan topo`, not a topology "
		      "file: build it with `tagplan topo dgx-a100:4 -o "
		      "topo.json` and give -t topo.json",
	       NULL);
	expect(a2, 2, "build it with `tagplan topo v100-nvlink:2 1080ti-pcie:2 "
		      "-o topo.json`",
	       NULL);
	expect(a3, 2, "a source of `tagplan model`, not a model file: build "
		      "the model with `tagplan model hf:",
	       NULL);
	expect(a4, 2, "cannot open", "a spec of");
}
END_TEST

/* tagplan model NAME --seq: the error said "--seq applies to 'tagplan
 * model gpt' only", though hf:PATH takes it too (tagplan(1), --help) and
 * is the way to another length of a shipped model. */
START_TEST(test_model_seq_hint)
{
	const char *a1[] = {"tagplan", "model", "gpt2", "--seq", "2048", "-o",
			    "/dev/null", NULL};
	char hf[1100];
	const char *a2[] = {"tagplan", "model", hf, "--seq", "100000", NULL};

	expect(a1, 2, "--seq applies to 'tagplan model gpt' and hf:PATH only, "
		      "not to gpt2 (a zoo model or shipped file keeps its own; "
		      "for another length build from an HF config: hf:PATH "
		      "--seq S)",
	       NULL);
	/* a length over a config's learned positions named no fix */
	snprintf(hf, sizeof(hf), "hf:%s", tp_test_path("data/hf/gpt2.json"));
	expect(a2, 2, "exceeds the 1024 learned positions of ", NULL);
	expect(a2, 2, "max_position_embeddings): give --seq 1024 or less",
	       NULL);
}
END_TEST

/* --seq beyond a RoPE model's max_position_embeddings is built (RoPE
 * scaling and long-context fine-tuning train there) with a one-line
 * warning naming the field and its value; at or under it, none.  Before:
 * accepted silently. */
START_TEST(test_model_seq_beyond_rope)
{
	char hf[1100], out[1100];
	const char *a1[] = {"tagplan", "model", hf, "--seq", "100000", "-o",
			    out, NULL};
	const char *a2[] = {"tagplan", "model", hf, "--seq", "8192", "-o",
			    out, NULL};
	struct tp_run r;

	snprintf(hf, sizeof(hf), "hf:%s",
		 tp_test_path("data/hf/llama-3-8b.json"));
	snprintf(out, sizeof(out), "%s/seq-beyond.json", tp_test_tmpdir());
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "tagplan model: warning: --seq 100000 is "
				    "beyond max_position_embeddings 8192 of ") &&
			      strstr(r.err, "RoPE scaling"),
		      "%s", r.err);
	ck_assert_ptr_null(strstr(strstr(r.err, "warning") + 1, "warning"));
	tp_run_free(&r);
	ck_assert_int_eq(access(out, F_OK), 0);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(!strstr(r.err, "warning"), "%s", r.err);
	tp_run_free(&r);
	/* a config without the field: the type's default, said so */
	snprintf(hf, sizeof(hf), "hf:%s",
		 tp_test_path("data/hf/falcon-7b.json"));
	a1[4] = "4096";
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "--seq 4096 is beyond 2048, the context "
				    "length the transformers library gives"),
		      "%s", r.err);
	tp_run_free(&r);
	unlink(out);
}
END_TEST

/* The manual pages hold no control characters but newlines and tabs:
 * tagplan-formats(5) had two form feeds where "\\fR" was meant (troff:
 * "can't find character with input code 12"; man printed a stray
 * character after replica_tp[r]). */
START_TEST(test_man_pages_clean)
{
	static const char *const pages[] = {"../man/tagplan.1",
					    "../man/tagplan-formats.5", NULL};

	for (int i = 0; pages[i]; i++) {
		size_t len = 0;
		char *text = tp_test_read(tp_test_path(pages[i]), &len);
		int line = 1;
		ck_assert_ptr_nonnull(text);
		for (size_t k = 0; k < len; k++) {
			unsigned char c = (unsigned char)text[k];
			ck_assert_msg(c >= 0x20 || c == '\n' || c == '\t',
				      "%s:%d: control character 0x%02x",
				      pages[i], line, c);
			line += c == '\n';
		}
		free(text);
	}
}
END_TEST

/* plan --price with a type the topology lacks said "give a type its
 * devices have (tagplan inspect TOPO lists them)": another run to find
 * the fix; now the types are in the message. */
START_TEST(test_price_names_types)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *tb = tp_data_file("tag-testbed.json");
	const char *a1[] = {"tagplan", "plan", "-m", gpt2, "-t", tb,
			    "--price", "A100=3", "-o", "/dev/null", NULL};

	expect(a1, 2, "--price: no device of type \"A100\" in the topology; "
		      "give a type its devices have: ",
	       "tagplan inspect");
}
END_TEST

/* A plan whose "runtime" names no runtime (a hand edit: "megatron") was
 * refused with 'unknown runtime "megatron"; shipped: ...' naming neither
 * the plan nor the field; now the plan's file and $.runtime, and the
 * fix. */
START_TEST(test_plan_runtime_field)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], *text, *at;
	const char *mk[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-s",
			    "tp=1", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "simulate", "-p", plan, "-q", NULL};
	const char *a2[] = {"tagplan", "export", "-p", plan, NULL};
	const char *a3[] = {"tagplan", "check", "-p", plan, NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/p.json", dir);
	tp_run_tagplan(&r, mk, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"runtime\": \"megatron-core\"");
	ck_assert_ptr_nonnull(at);
	memmove(at + 20, at + 25, strlen(at + 25) + 1); /* drop "-core" */
	ck_assert_int_eq(tp_test_write(plan, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "p.json: $.runtime: unknown runtime \"megatron\" (did "
		      "you mean megatron-core",
	       NULL);
	expect(a2, 2, "p.json: $.runtime: unknown runtime", NULL);
	expect(a3, 2, "; fix the plan's \"runtime\"", NULL);
}
END_TEST

/* A model file's dtype error listed "fp32 | fp16 | bf16" though fp8 is a
 * model dtype (tagplan model --dtype fp8 writes it, the reader takes it),
 * and "fp9" was told to mean fp32. */
START_TEST(test_model_dtype_choices)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};

	text = tp_test_read(tp_data_file("models/gpt2.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dtype\": \"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 10, "fp9\"", 4);
	memmove(at + 14, strchr(at + 14, ','), strlen(strchr(at + 14, ',')) + 1);
	snprintf(path, sizeof(path), "%s/m.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "$.dtype: unknown value \"fp9\" (did you mean \"fp8\"?); "
		      "expected one of fp32 | fp16 | bf16 | fp8",
	       NULL);
}
END_TEST

/* --help after other options printed their values as the defaults
 * ("check -p mine.json --help": "-p PLAN ... [mine.json]"; "plan --seed
 * 7 --help": "random seed [7]"); now the help is the same wherever
 * --help stands. */
START_TEST(test_help_after_options)
{
	const char *a0[] = {"tagplan", "plan", "--help", NULL};
	const char *a1[] = {"tagplan", "plan", "--seed", "7", "--time-limit",
			    "3", "--help", NULL};
	const char *a2[] = {"tagplan", "check", "-p", "mine.json", "--help",
			    NULL};
	struct tp_run r0, r1;

	tp_run_tagplan(&r0, a0, NULL);
	tp_run_tagplan(&r1, a1, NULL);
	ck_assert_int_eq(r0.status, 0);
	ck_assert_int_eq(r1.status, 0);
	/* (not ck_assert_str_eq: Check cannot print a message this long) */
	ck_assert_msg(strcmp(r1.out, r0.out) == 0,
		      "the help after --seed 7 --time-limit 3 differs");
	tp_run_free(&r0);
	tp_run_free(&r1);
	tp_run_tagplan(&r1, a2, NULL);
	ck_assert_int_eq(r1.status, 0);
	ck_assert_msg(!strstr(r1.out, "mine.json"), "%s", r1.out);
	tp_run_free(&r1);
}
END_TEST

/* A plan made with shipped names (-m gpt2 -t dgx-a100) records this
 * install's absolute paths; checked on another machine or prefix it said
 * 'was made from the topology file "/opt/.../dgx-a100.json", which is
 * not there' though the same file ships there: the shipped file of the
 * recorded name is used when its SHA-256 is the recorded one (only
 * then). */
START_TEST(test_recorded_shipped_elsewhere)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], moved[1100], badsha[1100], *text, *t2, *at;
	const char *mk[] = {"tagplan", "plan", "-m", "gpt2", "-t", "dgx-a100",
			    "-s", "tp=1", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "check", "-p", moved, NULL};
	const char *a2[] = {"tagplan", "check", "-p", badsha, NULL};
	struct tp_run r;
	char *mp, *tpth;

	snprintf(plan, sizeof(plan), "%s/p.json", dir);
	snprintf(moved, sizeof(moved), "%s/moved.json", dir);
	snprintf(badsha, sizeof(badsha), "%s/badsha.json", dir);
	tp_run_tagplan(&r, mk, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	/* the recorded paths as another install would have them */
	mp = strstr(text, "\"model_path\": \"");
	tpth = strstr(text, "\"topology_path\": \"");
	ck_assert_msg(mp && tpth, "%s", text);
	{
		struct tp_strbuf sb;
		const char *e1 = strchr(mp + 15, '"'),
			   *e2 = strchr(tpth + 18, '"');
		tp_strbuf_init(&sb);
		tp_strbuf_add(&sb, text, (size_t)(mp - text));
		tp_strbuf_adds(&sb, "\"model_path\": "
				    "\"/nonexistent/share/tagplan/models/"
				    "gpt2.json");
		tp_strbuf_add(&sb, e1, (size_t)(tpth - e1));
		tp_strbuf_adds(&sb, "\"topology_path\": "
				    "\"/nonexistent/share/tagplan/topologies/"
				    "dgx-a100.json");
		tp_strbuf_adds(&sb, e2);
		t2 = strdup(tp_strbuf_cstr(&sb));
		tp_strbuf_release(&sb);
	}
	ck_assert_int_eq(tp_test_write(moved, t2, strlen(t2)), 0);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "models/gpt2.json and topology ") &&
			      strstr(r.err, "topologies/dgx-a100.json, recorded"),
		      "%s", r.err);
	tp_run_free(&r);
	/* another digest: not taken */
	at = strstr(t2, "\"topology_sha256\": \"");
	ck_assert_ptr_nonnull(at);
	memset(at + 20, '0', 64);
	ck_assert_int_eq(tp_test_write(badsha, t2, strlen(t2)), 0);
	expect(a2, 2, "which is not there", NULL);
	free(t2);
	free(text);
}
END_TEST

/* When nothing fits, plan's summary said "unconstrained  no faster plan
 * found without megatron-core's limits (4998 s)", comparing times of
 * plans that do not fit; now that nothing fits without them either.
 * (Llama-2-70B's 138 GB of bf16 weights on four 16 GB T4s: nothing can.) */
START_TEST(test_unconstrained_nothing_fits)
{
	const char *a1[] = {"tagplan", "plan", "-m", "llama-2-70b", "-t",
			    "t4-pcie", "--playouts", "20", "--threads", "1",
			    "--no-gnn", "-o", "/dev/null", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "unconstrained  nothing fits without "
				    "megatron-core's limits either\n") &&
			      !strstr(r.err, "no faster plan found"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* tagplan model hf:DIR/ of a folder without config.json said
 * "DIR//config.json: cannot open: No such file or directory" (exit 3);
 * now the folder's config.json path and what to give (exit 2). */
START_TEST(test_hf_folder_without_config)
{
	const char *dir = tp_test_tmpdir();
	char src[1100];
	const char *a1[] = {"tagplan", "model", src, "-o", "/dev/null", NULL};

	snprintf(src, sizeof(src), "hf:%s/", dir);
	expect(a1, 2, "/config.json: the folder has no config.json: give hf: "
		      "the folder of a HuggingFace model, or the config file "
		      "itself",
	       "//config.json");
}
END_TEST

/* calibrate -o DIR/missing/p.json exits as every other command does for
 * an output whose directory is missing (tagplan(1) FILES: "fails before
 * any work"; exit 2 since a path that does not exist is usage, it was 3
 * for all and 2 for calibrate alone); the message is the same. */
START_TEST(test_calibrate_missing_directory)
{
	const char *dir = tp_test_tmpdir();
	char out[1100];
	const char *a1[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", out, NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};
	struct stat st;

	snprintf(out, sizeof(out), "%s/missing/p.json", dir);
	expect(a1, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	expect(a2, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	snprintf(out, sizeof(out), "%s/missing", dir);
	ck_assert_msg(stat(out, &st) != 0, "the directory was made");
}
END_TEST

/* A measured run's model dtype: fp8 is read (the model reader's
 * choices), but the error of a bad one listed "fp32 | fp16 | bf16" and
 * took "fp9" for "fp32". */
START_TEST(test_runs_dtype_choices)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], out[1100], *text, *at;
	const char *a1[] = {"tagplan", "calibrate", path, "-o", out, NULL};
	struct stat st;

	text = tp_test_read(tp_data_file("validation/measured_runs.json"),
			    NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dtype\": \"fp16\"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 10, "fp9\"", 4);
	memmove(at + 14, at + 15, strlen(at + 15) + 1);
	snprintf(path, sizeof(path), "%s/runs.json", dir);
	snprintf(out, sizeof(out), "%s/p.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "runs.json: $.rows[0].model.dtype: unknown value "
		      "\"fp9\" (did you mean \"fp8\"?); expected one of "
		      "fp32 | fp16 | bf16 | fp8",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "the profile was written");
}
END_TEST

/* A strategy written with spaces or semicolons between its items, a key
 * without '=', a key in capitals, or split by the shell (unquoted): the
 * error gives the string as it should be written.  Before: "tp=2 pp=4:
 * expected a positive integer", "\"tp:2\" is not key=value (keys: ...)",
 * "unknown key \"TP\" (keys: ...)" and 'unexpected argument "pp=4"'.
 * Spaces after commas stay accepted. */
START_TEST(test_strategy_spaces)
{
	static const char *const cases[][2] = {
	    {"tp=2 pp=4", "strategy: \"tp=2 pp=4\": items are separated by "
			  "commas, not spaces or semicolons: write "
			  "\"tp=2,pp=4\""},
	    {"tp=2;pp=4", "write \"tp=2,pp=4\""},
	    {"tp=2,pp = 4 dp=1", "\"pp = 4 dp=1\": items are separated by "
				 "commas, not spaces or semicolons: write "
				 "\"tp=2,pp=4,dp=1\""},
	    {"tp:2", "strategy: \"tp:2\" is not key=value: write \"tp=2\""},
	    {"tp 2", "write \"tp=2\""},
	    {"pp16", "write \"pp=16\""},
	    {"schedule interleaved:2", "write \"schedule=interleaved:2\""},
	    {"TP=2", "unknown key \"TP\" (did you mean tp?)"},
	    /* "empty item between commas" for a leading comma too */
	    {",tp=2", "strategy: \",tp=2\" has an empty item (a comma too "
		      "many): write \"tp=2\""},
	    {"tp=2,,pp=4", "write \"tp=2,pp=4\""},
	};
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "simulate", "-s", cases[i][0],
				      "-m", gpt2, "-t", dgx, "-q", NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	{
		const char *argv[] = {"tagplan", "export", "-s", "tp=2", "pp=4",
				      "dp=1", "-m", gpt2, "-t", dgx, NULL};
		expect(argv, 2, "unexpected argument \"pp=4\": a strategy is "
				"one argument, its items joined by commas: -s "
				"tp=2,pp=4,dp=1",
		       NULL);
	}
	{
		const char *argv[] = {"tagplan", "simulate", "-m", gpt2, "-t",
				      dgx, "tp=8", NULL};
		expect(argv, 2, "a strategy is given with -s: -s tp=8", NULL);
	}
	{
		const char *argv[] = {"tagplan", "simulate", "-s", "tp=2, pp=4",
				      "-m", gpt2, "-t", dgx, "-q", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* An input that is a directory is a usage error (exit 2, as an output
 * that is one) naming its JSON files; it was exit 3, "is a directory,
 * not a file", without a fix. */
START_TEST(test_input_directory)
{
	const char *dir = tp_test_tmpdir();
	char sub[1100], f[1200];
	const char *a1[] = {"tagplan", "validate", sub, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", sub, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-s",
			    "tp=1", NULL};
	static const char *const names[] = {"d.json", "a.json", "c.json",
					    "b.json", ".e.json", "f.txt"};

	snprintf(sub, sizeof(sub), "%s/in", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	expect(a1, 2, "/in: is a directory, not a file: give a file (it "
		      "holds no .json file)",
	       NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		snprintf(f, sizeof(f), "%s/%s", sub, names[i]);
		ck_assert_int_eq(tp_test_write(f, "{}", 2), 0);
	}
	expect(a2, 2, "/in: is a directory, not a file: give one of its "
		      "files (a.json, b.json, c.json and 1 more .json)",
	       NULL);
}
END_TEST

/* A path that does not exist is usage (exit 2), as a directory given as
 * a file is: an input that is not there names the nearest file of its
 * folder or the folder that is missing; it was exit 3, "cannot open: No
 * such file or directory" alone.  A file that exists but cannot be read
 * stays I/O (exit 3): tp_cli_exit_code tells them apart by the errno. */
START_TEST(test_missing_input_exit)
{
	char near[1100], nofold[1100], out[1100];
	const char *a1[] = {"tagplan", "simulate", "-m", near, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-s",
			    "tp=1", "-o", out, NULL};
	const char *a2[] = {"tagplan", "validate", nofold, NULL};
	const char *a3[] = {"tagplan", "inspect", "/proc/self/mem", NULL};
	struct tp_error err;
	struct stat st;

	snprintf(near, sizeof(near), "%s",
		 tp_data_file("models/llama-3-8b.json"));
	/* "llama3-8b.json": one letter short */
	memmove(strstr(near, "llama-3") + 5, strstr(near, "llama-3") + 6,
		strlen(strstr(near, "llama-3") + 6) + 1);
	snprintf(out, sizeof(out), "%s/report.json", tp_test_tmpdir());
	expect(a1, 2, "llama3-8b.json: cannot open: No such file or directory "
		      "(did you mean ",
	       NULL);
	expect(a1, 2, "/llama-3-8b.json?)", NULL);
	ck_assert_msg(stat(out, &st) != 0, "the report was written");
	snprintf(nofold, sizeof(nofold), "%s/no-such-folder/m.json",
		 tp_test_tmpdir());
	expect(a2, 2, "/no-such-folder/m.json: cannot open: No such file or "
		      "directory (the folder ",
	       NULL);
	expect(a2, 2, "/no-such-folder does not exist)", NULL);
	/* exists, the read fails: I/O */
	expect(a3, 3, "/proc/self/mem: cannot read: ", NULL);
	/* the mapping itself */
	tp_error_clear(&err);
	tp_error_set(&err, TP_EIO, "x");
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
	err.sys_errno = ENOENT;
	ck_assert_int_eq(tp_cli_exit_code(&err), 2);
	err.sys_errno = ENOSPC;
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
	err.sys_errno = ENOENT;
	tp_error_set(&err, TP_EIO, "y"); /* a later error resets it */
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
}
END_TEST

/* calibrate -o - (or /dev/stdout) wrote the profile after the table of
 * runs on standard output, one stream that is neither a table nor JSON,
 * and said "use --runtime /dev/stdout"; now a usage error, nothing run. */
START_TEST(test_calibrate_stdout)
{
	static const char *const outs[] = {"-", "/dev/stdout"};

	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = {
		    "tagplan", "calibrate",
		    tp_data_file("validation/measured_runs.json"), "-o",
		    outs[i], NULL};
		expect(argv, 2,
		       "would be written to standard output, which carries "
		       "the table of runs: give -o a file name",
		       "fitting");
	}
}
END_TEST

/* An output under a file ("plan.json/x.json", a slip for "plan/x.json")
 * said "cannot write: Not a directory"; now it names the file that is
 * not a directory (exit 2, as for a missing directory). */
START_TEST(test_output_under_file)
{
	const char *dir = tp_test_tmpdir();
	char file[1100], out[1200];
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};

	snprintf(file, sizeof(file), "%s/plan.json", dir);
	ck_assert_int_eq(tp_test_write(file, "{}", 2), 0);
	snprintf(out, sizeof(out), "%s/sub/x.json", file);
	expect(a1, 2, "/plan.json is a file, not a directory (name the "
		      "output in a directory)",
	       NULL);
	snprintf(out, sizeof(out), "%s/x.json", file);
	expect(a1, 2, "/plan.json is a file, not a directory", NULL);
}
END_TEST

/* import checked its output only when writing: -o of its own input
 * (the trace CSV of --cluster, -m of --plan) replaced the input with the
 * result, and a missing directory said "cannot create a temporary file:
 * No such file or directory"; now as every command: refused before any
 * work, the input untouched. */
START_TEST(test_import_outputs)
{
	const char *dir = tp_test_tmpdir();
	char src[1100], csv[1100], model[1100], missing[1100], *before,
	    *after;
	const char *a1[] = {"tagplan", "import", src, "--cluster", csv, "-o",
			    csv, NULL};
	const char *a2[] = {"tagplan", "import", src, "--plan", "r.json",
			    "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-o",
			    model, NULL};
	const char *a3[] = {"tagplan", "import", src, "--model", "TINY", "-o",
			    missing, NULL};
	const char *a4[] = {"tagplan", "import", src + 7, "--model", "TINY",
			    NULL};
	size_t n0, n1;

	snprintf(src, sizeof(src), "sailor:%s", tp_test_path("data/sailor"));
	snprintf(csv, sizeof(csv), "%s/t.csv", dir);
	snprintf(model, sizeof(model), "%s/m.json", dir);
	snprintf(missing, sizeof(missing), "%s/missing/m.json", dir);
	before = tp_test_read(
	    tp_test_path("data/sailor/configs/trace_tiny.csv"), &n0);
	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(tp_test_write(csv, before, n0), 0);
	ck_assert_int_eq(tp_test_write(model, "{}", 2), 0);
	expect(a1, 2, "t.csv is also the input --cluster ", NULL);
	after = tp_test_read(csv, &n1);
	ck_assert_msg(after && n1 == n0 && !memcmp(before, after, n0),
		      "the trace was overwritten");
	expect(a2, 2, "m.json is also the input -m ", NULL);
	expect(a3, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	/* the folder without "sailor:" said "expected one source,
	   sailor:DIR" */
	expect(a4, 2, "data/sailor: name the source's layout: sailor:", NULL);
	free(before);
	free(after);
}
END_TEST

/* hf: of one of tagplan's own files said "$.model_type: missing;
 * expected a string naming one of the supported model types: ..."; now
 * it says what the file is and what to do.  A quantised torch_dtype's
 * fix lists fp8 among --dtype's values (it accepts fp8). */
START_TEST(test_hf_tagplan_file)
{
	char m[1100], t[1100], q[1100];
	const char *a1[] = {"tagplan", "model", m, NULL};
	const char *a2[] = {"tagplan", "model", t, NULL};
	const char *a3[] = {"tagplan", "model", q, NULL};

	snprintf(m, sizeof(m), "hf:%s", tp_data_file("models/gpt2.json"));
	snprintf(t, sizeof(t), "hf:%s",
		 tp_data_file("topologies/dgx-a100.json"));
	snprintf(q, sizeof(q), "hf:%s", tp_test_path("data/hf/bad/int8.json"));
	expect(a1, 2, "gpt2.json: $.format: this is a tagplan file "
		      "(\"tagplan-model/1\"), not a HuggingFace config: "
		      "give it as it is to plan, simulate and export (-m "
		      "FILE)",
	       "model_type");
	expect(a2, 2, "(\"tagplan-topology/1\"), not a HuggingFace config: "
		      "give hf: a model's config.json",
	       NULL);
	expect(a3, 2, "--dtype bf16|fp16|fp32|fp8", NULL);
}
END_TEST

/* Presets joined in one argument said "the node count after ':' must be
 * an integer" ("dgx-a100:2,dgx-h100:2", a quoted "a:2 b:2") or "unknown
 * node preset \"dgx-a100,dgx-h100\""; now they are given back as
 * separate arguments. */
START_TEST(test_topo_joined_presets)
{
	static const char *const cases[][2] = {
	    {"dgx-a100:2,dgx-h100:2", "\"dgx-a100:2,dgx-h100:2\": one preset "
				      "per argument: tagplan topo dgx-a100:2 "
				      "dgx-h100:2"},
	    {"v100-nvlink:2 1080ti-pcie:2", "tagplan topo v100-nvlink:2 "
					    "1080ti-pcie:2"},
	    {"dgx-a100, dgx-h100", "tagplan topo dgx-a100 dgx-h100"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "topo", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
}
END_TEST

/* inspect of two files, or none, said "expected one FILE" either way. */
START_TEST(test_inspect_file_count)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "inspect", gpt2, dgx, NULL};
	const char *a2[] = {"tagplan", "inspect", NULL};
	const char *a3[] = {"tagplan", "validate", NULL};
	const char *a4[] = {"tagplan", "render", NULL};

	expect(a1, 2, "expected one FILE, got 2: inspect them one at a time "
		      "(tagplan validate checks several at once)",
	       NULL);
	expect(a2, 2, "missing FILE: a model, topology, plan or report", NULL);
	/* and the other commands' missing files say what is missing */
	expect(a3, 2, "missing FILE: the files to check", NULL);
	expect(a4, 2, "-p PLAN is required (the plan file to draw)", NULL);
}
END_TEST

/* validate of calibrate's input said 'missing required field "format"
 * (one of "tagplan-model/1", ... "tagplan-report/1")', a list without
 * devices and runtime files, which it validates; now a run list is
 * checked as calibrate reads and builds it, and a JSON Schema of
 * data/schema is named as such. */
START_TEST(test_validate_run_list)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], topos[1100], *text, *at;
	const char *runs = tp_data_file("validation/measured_runs.json");
	const char *a1[] = {"tagplan", "validate", runs, NULL};
	const char *a2[] = {"tagplan", "validate", path, NULL};
	const char *a3[] = {"tagplan", "validate",
			    tp_data_file("schema/model.schema.json"), NULL};
	const char *a4[] = {"tagplan", "validate", "-", NULL};
	const char *a5[] = {"tagplan", "inspect", runs, NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "measured_runs.json: ok "
						     "(measured runs, "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
	/* a run whose strategy does not parse */
	text = tp_test_read(runs, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"strategy\": \"tp=1,pp=1,dp=1,");
	ck_assert_ptr_nonnull(at);
	at[17] = ' ';
	snprintf(path, sizeof(path), "%s/runs.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	/* the topologies beside it, as in data/validation */
	snprintf(topos, sizeof(topos), "%s/topologies", dir);
	ck_assert_int_eq(
	    symlink(tp_data_file("validation/topologies"), topos), 0);
	expect(a2, 2, "runs.json: run rn50-a100-amp-1: strategy: \"tp=1 "
		      "pp=1\": items are separated by commas",
	       "missing required field");
	expect(a3, 2, "this is a JSON Schema", NULL);
	/* inspect (or -m) of a run list says what it is */
	expect(a5, 2, "this is a list of measured runs (calibrate's input, "
		      "tagplan-formats(5) MEASURED RUNS), not a tagplan file; "
		      "tagplan validate checks it",
	       NULL);
	tp_run_tagplan(&r, a4, "{\"rows\": 1}");
	ck_assert_msg(r.status == 2 && strstr(r.err, "\"tagplan-devices/1\", "
						     "\"tagplan-runtime/1\""),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}
END_TEST

/* "tagplan --help plan" printed the general help, not plan's (git's
 * "git --help commit" is commit's); "-v" said it "is an option, and the
 * command comes first", where most tools print their version. */
START_TEST(test_help_command_after)
{
	const char *a1[] = {"tagplan", "--help", "plan", NULL};
	const char *a2[] = {"tagplan", "-v", NULL};
	const char *a3[] = {"tagplan", "--help", "plna", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && !strncmp(r.out, "usage: tagplan plan ",
						20),
		      "exit %d: %s", r.status, r.out);
	tp_run_free(&r);
	expect(a2, 2, "unknown option \"-v\" (did you mean --version?)",
	       NULL);
	expect(a3, 2, "no command \"plna\" (did you mean plan?)", NULL);
}
END_TEST

/* TAGPLAN_DATA naming no folder was ignored without a word (each data
 * file is then taken from beside the binary or the install); now a
 * warning says so.  Check runs each test in its own process, so the
 * environment set here is this test's. */
START_TEST(test_data_env_missing)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", NULL};
	char *old = getenv("TAGPLAN_DATA") ? strdup(getenv("TAGPLAN_DATA"))
					   : NULL;
	struct tp_run r;

	setenv("TAGPLAN_DATA", "/nonexistent-tagplan-data", 1);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 &&
			  strstr(r.err, "warning: TAGPLAN_DATA=/nonexistent-"
					"tagplan-data is not a folder"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	if (old)
		setenv("TAGPLAN_DATA", old, 1);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && !strstr(r.err, "warning"), "%s", r.err);
	tp_run_free(&r);
	free(old);
}
END_TEST

/* Run argv with standard output on a new terminal (a pty) and standard
 * error captured into err (size bytes): the exit status. */
static int run_on_terminal(const char *const *argv, char *err, size_t size)
{
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	int master, slave, ep[2], status;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	ck_assert_int_eq(pipe(ep), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(slave, 1);
		dup2(ep[1], 2);
		close(master);
		close(ep[0]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(slave);
	close(ep[1]);
	/* read both until standard error ends: what reaches the terminal is
	 * drained, so that the child never blocks on it */
	for (;;) {
		struct pollfd fds[2] = {{ep[0], POLLIN, 0},
					{master, POLLIN, 0}};
		char buf[4096];

		if (poll(fds, 2, 10000) <= 0)
			break;
		if (fds[1].revents & POLLIN)
			(void)!read(master, buf, sizeof(buf));
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			k = read(ep[0], n + 1 < size ? err + n : buf,
				 n + 1 < size ? size - 1 - n : sizeof(buf));
			if (k <= 0)
				break;
			if (n + 1 < size)
				n += (size_t)k;
		}
	}
	err[n] = '\0';
	close(ep[0]);
	close(master);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* render --format png -o - on a terminal wrote the PNG's bytes there;
 * now a usage error that says to redirect (curl refuses the same).  A
 * pipe still gets the PNG. */
START_TEST(test_render_binary_terminal)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], err[4096];
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "render", "-p", plan, "--format", "png",
			    "-o", "-", NULL};
	struct tp_run r;
	int st;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	st = run_on_terminal(a1, err, sizeof(err));
	ck_assert_msg(st == 2 && strstr(err, "--format png -o - would write "
					     "binary PNG to the terminal: "
					     "redirect it (> plan.png), or "
					     "give -o plan.png"),
		      "exit %d: %s", st, err);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && r.out_len > 8 &&
			  !memcmp(r.out, "\x89PNG", 4),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}
END_TEST

/* train -o - on a terminal wrote the binary weights there after the
 * whole training; now refused before it (a tiny training, should the
 * check be missing). */
START_TEST(test_train_binary_terminal)
{
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	const char *a1[] = {bin,	    "train", "--games", "2", "--epochs",
			    "1",	    "--playouts", "2", "--max-devices",
			    "2",	    "-q",	  "-o", "-", NULL};
	char err[4096];
	int st = run_on_terminal(a1, err, sizeof(err));

	ck_assert_msg(st == 2 && strstr(err, "-o - would write binary weights "
					     "to the terminal: redirect it (> "
					     "net.weights), or give -o FILE"),
		      "exit %d: %s", st, err);
}
END_TEST

/* A number with a unit, a decimal comma or an integer written 1e4 or
 * 10k said only 'expects a number from 0 to 1e+07, not "5s"'; now what
 * to write instead. */
START_TEST(test_number_slips)
{
	static const char *const cases[][3] = {
	    {"--time-limit", "5s", "not \"5s\" (a plain number, without the "
				   "unit \"s\": 'tagplan plan --help' gives "
				   "--time-limit's unit)"},
	    {"--time-limit", "1,5", "(a decimal point, not a comma: 1.5)"},
	    {"--playouts", "1e4", "(an integer in digits: 10000)"},
	    {"--playouts", "10k", "(an integer in digits: 10000)"},
	    {"--grad-bucket-mb", "25MB", "without the unit \"MB\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "plan", cases[i][0],
				      cases[i][1], NULL};
		expect(argv, 2, cases[i][2], NULL);
	}
}
END_TEST

/* The recommendation of a plan that does not fit was the fastest
 * simulated change, to the last digit: ZeRO-3 over ZeRO-2 when both take
 * 6.88 s (a GPT of 6.7 B, dp=32, checked under ddp).  Now the first in
 * order of cost within 1% of the fastest. */
START_TEST(test_recommend_smaller_tie)
{
	const char *dir = tp_test_tmpdir();
	char model[1100], plan[1100];
	const char *a0[] = {"tagplan", "model", "gpt", "--hidden", "4096",
			    "--layers", "32", "--heads", "32", "--seq", "2048",
			    "--vocab", "51200", "--batch", "512", "-o", model,
			    NULL};
	const char *a1[] = {"tagplan", "plan", "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100-4.json"), "-s",
			    "tp=1,pp=1,dp=32,mb=2,zero=1", "-q", "-o", plan,
			    NULL};
	const char *a2[] = {"tagplan", "check", "-p", plan, "--runtime", "ddp",
			    NULL};
	struct tp_run r;

	snprintf(model, sizeof(model), "%s/gpt.json", dir);
	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "model: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 1 &&
			  strstr(r.err, "smallest change that fits: ZeRO-2 "),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}
END_TEST

/* hf: of a Hub id, a URL or a shipped model's name said "cannot open:
 * No such file or directory" (exit 3); now that tagplan reads local
 * files, how to get the config, and the shipped model of that name. */
START_TEST(test_hf_not_local)
{
	static const char *const cases[][2] = {
	    {"hf:meta-llama/Llama-2-7b-hf",
	     "a HuggingFace Hub id? tagplan reads local files only: download "
	     "the config (huggingface-cli download meta-llama/Llama-2-7b-hf "
	     "config.json --local-dir DIR) and give hf:DIR/config.json; or "
	     "the shipped model: tagplan model llama-2-7b"},
	    {"hf:https://example.org/config.json",
	     "tagplan reads local files only: download the config (curl -L "
	     "-o config.json 'https://example.org/config.json')"},
	    {"hf:gpt2", "hf:gpt2: no such file; hf: takes a config.json path; "
			"or the shipped model: tagplan model gpt2"},
	};
	const char *a1[] = {"tagplan", "model", "hf:no/such.json", NULL};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "model", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	/* a path that is missing stays the reader's error */
	expect(a1, 2, "no/such.json: cannot open", "Hub");
}
END_TEST

/* model --name of 300 bytes wrote a model file that validate and every
 * command refused ("string of 300 bytes is too long (at most 255)");
 * calibrate --name took a tab, which model --name refuses. */
START_TEST(test_name_limits)
{
	const char *dir = tp_test_tmpdir();
	char name[301], out[1100];
	const char *a1[] = {"tagplan", "model", "gpt", "--hidden", "64",
			    "--layers", "2", "--heads", "2", "--seq", "8",
			    "--vocab", "10", "--batch", "4", "--name", name,
			    "-o", out, NULL};
	const char *a2[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", out, "--name", "x\ty", NULL};
	struct stat st;

	memset(name, 'a', 300);
	name[300] = '\0';
	snprintf(out, sizeof(out), "%s/out.json", dir);
	expect(a1, 2, "--name: 300 bytes; a name has at most 255", NULL);
	expect(a2, 2, "--name: the name contains the control character "
		      "U+0009",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "a file was written");
}
END_TEST

/* calibrate --holdout 1 (or a --holdout-source every run has) said
 * "no runs to fit (every run is held out)" after "fitting 0 runs, 20
 * held out ..."; now the option and its fix, before anything runs. */
START_TEST(test_calibrate_all_held_out)
{
	const char *dir = tp_test_tmpdir();
	char out[1100], runs[1100], topos[1100], *text, *cut;
	const char *a1[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", out, "--holdout", "1", NULL};
	const char *a2[] = {"tagplan", "calibrate", runs, "-o", out,
			    "--holdout-source", "NVIDIA/DeepLearningExamples",
			    NULL};

	snprintf(out, sizeof(out), "%s/p.json", dir);
	snprintf(runs, sizeof(runs), "%s/runs.json", dir);
	snprintf(topos, sizeof(topos), "%s/topologies", dir);
	expect(a1, 2, "--holdout 1 holds out every run, so none is left to "
		      "fit; give 0 to fit on all, or a K above 1",
	       "fitting");
	/* the first two runs, both of one source */
	text = tp_test_read(tp_data_file("validation/measured_runs.json"),
			    NULL);
	ck_assert_ptr_nonnull(text);
	cut = strstr(text, "\"id\": \"rn50-v100-fp32-1\"");
	ck_assert_ptr_nonnull(cut);
	while (*cut != '{')
		cut--;
	while (cut[-1] != ',')
		cut--;
	strcpy(cut - 1, "]}\n");
	ck_assert_int_eq(tp_test_write(runs, text, strlen(text)), 0);
	free(text);
	ck_assert_int_eq(
	    symlink(tp_data_file("validation/topologies"), topos), 0);
	expect(a2, 2, "--holdout-source NVIDIA/DeepLearningExamples: every "
		      "run has that source, so none is left to fit",
	       "fitting");
}
END_TEST

/* plan's baselines line was wrapped inside an entry ("..., greedy" at
 * the end of one line, "n/a" on the next); each "name figure" now stays
 * on one line. */
START_TEST(test_baselines_wrap)
{
	const char *dir = tp_test_tmpdir();
	char model[1100], plan[1100];
	const char *a0[] = {"tagplan", "model", "gpt", "--hidden", "4096",
			    "--layers", "32", "--heads", "32", "--seq", "2048",
			    "--vocab", "51200", "--batch", "512", "-o", model,
			    NULL};
	const char *a1[] = {"tagplan", "plan", "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100-4.json"),
			    "--playouts", "20", "--threads", "1", "--no-gnn",
			    "-o", plan, NULL};
	const char *at, *nl;
	struct tp_run r;

	snprintf(model, sizeof(model), "%s/gpt.json", dir);
	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "model: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	at = strstr(r.err, "  baselines ");
	ck_assert_ptr_nonnull(at);
	/* the line and its continuation: every entry whole on one of them */
	nl = strchr(at, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_msg(strstr(r.err, "megatron 6.98 s (1.00x)") &&
			  strstr(r.err, "greedy n/a") &&
			  strstr(r.err, "dp does not fit") &&
			  nl[-1] == ',',
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* "simulate -s tp=2 x.json" hinted "files are given with their option:
 * -p PLAN or ...", though -p and -s exclude each other. */
START_TEST(test_strategy_file_hint)
{
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=2", "x.json",
			    NULL};
	const char *a2[] = {"tagplan", "simulate", "x.json", NULL};

	expect(a1, 2, "(files are given with their option: -m MODEL or -t "
		      "TOPO)",
	       "-p PLAN");
	expect(a2, 2, "-p PLAN or -m MODEL or -t TOPO", NULL);
}
END_TEST

/* check -p - of a plan whose recorded model is not in the working
 * directory said "- was made from the model file ..., which is not there
 * (looked for x.json)"; now it names the plan as read from standard input
 * and where it looked. */
START_TEST(test_plan_stdin_recorded)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], model[1100], *text, *at;
	const char *am[] = {"tagplan", "model", "gpt", "--hidden", "64",
			    "--layers", "2", "--heads", "2", "--seq", "8",
			    "--vocab", "10", "--batch", "8", "-o", model, NULL};
	const char *a0[] = {"tagplan", "plan", "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "check", "-p", "-", NULL};
	static const char *const keys[] = {"\"model_path\": \"",
					   "\"model_file\": \""};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(model, sizeof(model), "%s/tiny.json", dir);
	tp_run_tagplan(&r, am, NULL);
	ck_assert_msg(r.status == 0, "model: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	/* room for the names to grow */
	text = realloc(text, strlen(text) + 64);
	ck_assert_ptr_nonnull(text);
	/* the recorded model as a relative name that is nowhere */
	for (int k = 0; k < 2; k++) {
		at = strstr(text, keys[k]);
		ck_assert_ptr_nonnull(at);
		at += strlen(keys[k]);
		memmove(at + strlen("nosuch-model.json"), strchr(at, '"'),
			strlen(strchr(at, '"')) + 1);
		memcpy(at, "nosuch-model.json", strlen("nosuch-model.json"));
	}
	tp_run_tagplan(&r, a1, text);
	ck_assert_msg(r.status == 2 &&
			  strstr(r.err, "the plan read from standard input was "
					"made from the model file "
					"\"nosuch-model.json\"") &&
			  strstr(r.err, "in the working directory"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	free(text);
}
END_TEST

/* One of tagplan's own non-JSON files given where JSON goes (-p
 * launch.sh, -p plan.svg) said 'unknown word "torchrun"' or 'unexpected
 * character '<''; now what the file is and what to do with it.  JSON
 * with an error of its own keeps its syntax error. */
START_TEST(test_own_text_outputs)
{
	static const char *const cases[][2] = {
	    {"torchrun \\\n  --nnodes=4 \\\n", "this is a shell script "
						  "(tagplan export --to "
						  "torchrun writes one), not "
						  "JSON: run it with sh"},
	    {"--tensor-model-parallel-size 1\n", "this is command-line "
						  "arguments (tagplan export "
						  "--to megatron writes them)"},
	    {"# TorchTitan job config\n\n[job]\ndescription = \"x\"\n",
	     "this is TOML (tagplan export --to torchtitan writes a "
	     "TorchTitan job config), not JSON"},
	    {"<?xml version=\"1.0\"?>\n<svg>\n", "this is an SVG picture"},
	    {"graph tagplan {\n}\n", "this is Graphviz DOT"},
	    {"TPGNNW\r\n", "this is GNN weights (tagplan train), not JSON: "
			    "give them to plan --weights"},
	    {"\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\n",
	     "this is the output of nvidia-smi topo -m, not JSON: tagplan "
	     "topo --from-nvidia-smi FILE --gpu TYPE"},
	    /* JSON's own errors stay */
	    {"# a comment\n{\"a\": [\n1]}\n", "comments are not allowed in "
					     "JSON"},
	};
	const char *dir = tp_test_tmpdir();
	char path[1100];
	const char *argv[] = {"tagplan", "simulate", "-p", path, NULL};

	snprintf(path, sizeof(path), "%s/input", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(tp_test_write(path, cases[i][0],
					       strlen(cases[i][0])),
				 0);
		expect(argv, 2, cases[i][1],
		       i + 1 < 8 ? "unknown word" : "this is");
	}
}
END_TEST

/* render --title with a control character wrote an SVG that XML readers
 * refuse ("not well-formed (invalid token)"); now a usage error, nothing
 * written. */
START_TEST(test_render_title_control)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], svg[1100];
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "render", "-p", plan, "-o", svg,
			    "--title", "red \x1b[31mtitle", "--no-simulate",
			    NULL};
	struct tp_run r;
	struct stat st;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(svg, sizeof(svg), "%s/p.svg", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	expect(a1, 2, "--title: the text contains the control character "
		      "U+001B; give printable text",
	       NULL);
	ck_assert_msg(stat(svg, &st) != 0, "the picture was written");
}
END_TEST

/* validate of a plan alone said "ok (plan, structure only: give -m MODEL
 * -t TOPO ...)" though the plan records its model and topology, which
 * check and render use: a hand edit naming no device passed.  Now it is
 * resolved against them when they are there unchanged. */
START_TEST(test_validate_plan_recorded)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], bad[1100], *text, *at;
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "validate", plan, NULL};
	const char *a2[] = {"tagplan", "validate", bad, NULL};
	const char *a3[] = {"tagplan", "inspect", plan, NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(bad, sizeof(bad), "%s/bad.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "ok (plan, resolved "
						     "against ") &&
			  strstr(r.out, "gpt2.json and "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dgx-a100-0/gpu3\"");
	ck_assert_ptr_nonnull(at);
	at[15] = '9';
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	free(text);
	expect(a2, 2, "bad.json: $.groups[0].devices[3]: unknown device "
		      "\"dgx-a100-0/gpu9\"",
	       NULL);
	/* inspect too: it gave the outline as written ("resolved": false) */
	tp_run_tagplan(&r, a3, NULL);
	ck_assert_msg(r.status == 0 && !strstr(r.out, "\"resolved\": false") &&
			  strstr(r.out, "\"devices_total\"") &&
			  strstr(r.err, "tagplan inspect: using model "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
}
END_TEST

/* Short options as getopt takes them, joined with their value
 * ("-ox.json", "-o=x.json") or bundled ("-qp"), said only 'unknown
 * option "-ox.json"'; now how to give them.  A long name given with one
 * dash keeps its hint. */
START_TEST(test_short_options_joined)
{
	static const char *const cases[][3] = {
	    {"topo", "-ox.json", "unknown option \"-ox.json\" (the value goes "
				 "after a space: -o x.json)"},
	    {"topo", "-o=x.json", "(the value goes after a space: -o x.json)"},
	    {"simulate", "-qp", "unknown option \"-qp\" (give short options "
				"apart: -q -p)"},
	    {"plan", "-seed", "(did you mean --seed?)"},
	    {"plan", "-seeds", "(did you mean --seed?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", cases[i][0], cases[i][1],
				      NULL};
		expect(argv, 2, cases[i][2], NULL);
	}
}
END_TEST

/* A runtime profile's name with a control character (a hand edit, a
 * tab) was read and printed in every table; names are printable text in
 * every other format. */
START_TEST(test_runtime_name_control)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};

	text = tp_test_read(tp_data_file("runtimes/ddp.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"name\": \"ddp\"");
	ck_assert_ptr_nonnull(at);
	/* "\tp": a tab and "p", escaped as JSON allows */
	memcpy(at + 9, "\\tp", 3);
	snprintf(path, sizeof(path), "%s/rt.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "rt.json: $.name: the name contains the control "
		      "character U+0009",
	       NULL);
}
END_TEST

/* topo --fabric "clos:leaf=4, spine=2" said 'unknown key " spine"' (a
 * strategy takes spaces after its commas) and "clos:leaf=4;spine=2" 'bad
 * value for leaf'; spaces are taken now (the same topology), semicolons
 * named. */
START_TEST(test_fabric_spaces)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos: leaf = 4, spine=2", NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos:leaf=4,spine=2", NULL};
	const char *a3[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos:leaf=4;spine=2", NULL};
	struct tp_run r1, r2;

	tp_run_tagplan(&r1, a1, NULL);
	tp_run_tagplan(&r2, a2, NULL);
	ck_assert_msg(r1.status == 0 && r2.status == 0, "exit %d: %s",
		      r1.status, r1.err);
	ck_assert_msg(r1.out_len == r2.out_len &&
			  !memcmp(r1.out, r2.out, r1.out_len),
		      "another topology: %s", r1.out);
	tp_run_free(&r1);
	tp_run_free(&r2);
	expect(a3, 2, "the keys are separated by commas, not semicolons",
	       NULL);
}
END_TEST

/* --price "A=2, B=3" and --fit "a, b" kept the space in the name
 * ('no device of type " H100-SXM5-80GB"', '" link_eff_intra" is not a
 * constant'); lists take spaces after their commas as a strategy does. */
START_TEST(test_list_spaces)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], prof[1100], *text;
	const char *a1[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, "--price",
			    " A100-SXM4-80GB = 2 ,", NULL};
	const char *a2[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", prof, "--fit", "gemm_sustained, nosuch",
			    NULL};
	const char *a3[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", prof, "--fit", " ", NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(prof, sizeof(prof), "%s/p.json", dir);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_msg(text && strstr(text, "\"cost_per_iteration_usd\""),
		      "no cost in the plan");
	free(text);
	expect(a2, 2, "\"nosuch\" is not a constant calibrate fits", NULL);
	expect(a3, 2, "--fit: an empty list", NULL);
}
END_TEST

/* A device type written as its maker's short name ("A100-80GB") was
 * taken for "A10-24GB" by the edit distance; the types holding every part
 * of it come first now. */
START_TEST(test_type_parts)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};
	const char *a2[] = {"tagplan", "topo", "--from-nvidia-smi",
			    tp_test_path("data/nvidia-smi/dgx-a100.txt"),
			    "--gpu", "H100-80GB", NULL};

	text = tp_test_read(tp_data_file("topologies/dgx-a100.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "A100-SXM4-80GB");
	ck_assert_ptr_nonnull(at);
	memmove(at + 4, at + 9, strlen(at + 9) + 1); /* "A100-80GB" */
	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "unknown device type \"A100-80GB\" (did you mean "
		      "\"A100-SXM4-80GB\", \"A100-PCIe-80GB\"?)",
	       "A10-24GB\"?");
	expect(a2, 2, "(did you mean \"H100-SXM5-80GB\", \"H100-PCIe-80GB\"?)",
	       NULL);
}
END_TEST

/* A hand-written model's op kind in another framework's words ("linear")
 * got 'unknown value "linear" (did you mean "input"?)'; now the kind
 * meant. */
START_TEST(test_op_kind_synonym)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};

	text = tp_test_read(tp_data_file("demo-model.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"kind\": \"matmul\"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 9, "Linear", 6);
	snprintf(path, sizeof(path), "%s/m.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, ".kind: \"Linear\" is \"matmul\" in tagplan (its "
		      "kinds: input | embedding | matmul",
	       "did you mean");
}
END_TEST

/* Two node entries of one name with "count" (as `tagplan topo` writes
 * them) said 'duplicate node name "dgx-a100-0"', a name the file does not
 * hold; now how "count" names the nodes. */
START_TEST(test_node_count_names)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *nodes, *entry, *end, *out;
	const char *a1[] = {"tagplan", "validate", path, NULL};
	size_t n;

	text = tp_test_read(tp_data_file("topologies/dgx-a100-4.json"), &n);
	ck_assert_ptr_nonnull(text);
	/* the one entry of 4 nodes twice */
	nodes = strstr(text, "\"nodes\": [");
	ck_assert_ptr_nonnull(nodes);
	entry = strchr(nodes, '{');
	end = strstr(entry, "\n    }");
	ck_assert_ptr_nonnull(end);
	end += strlen("\n    }");
	out = malloc(n + (size_t)(end - entry) + 8);
	ck_assert_ptr_nonnull(out);
	sprintf(out, "%.*s,\n    %.*s%s", (int)(end - text), text,
		(int)(end - entry), entry, end);
	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, out, strlen(out)), 0);
	free(out);
	free(text);
	expect(a1, 2, "duplicate node name \"dgx-a100-0\" (with \"count\", "
		      "the nodes are named dgx-a100-0, dgx-a100-1, ...); node "
		      "names must be unique: give the entries different names",
	       NULL);
}
END_TEST

/* A hand-edited plan whose group degrees do not match its devices said
 * what is wrong but not what to write ("tp=3 does not divide the group's
 * 8 devices"; "dp (4) x tp (1) must equal the number of devices (8)"). */
START_TEST(test_plan_degree_fixes)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], bad[1100], *text, *at;
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "check", "-p", bad, NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(bad, sizeof(bad), "%s/bad.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"tp\": 1,");
	ck_assert_ptr_nonnull(at);
	at[6] = '3';
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	expect(a1, 2, "tp=3 does not divide the group's 8 devices; use a "
		      "divisor of 8, or list a multiple of 3 devices",
	       NULL);
	at[6] = '1';
	at = strstr(text, "\"dp\": 8,");
	ck_assert_ptr_nonnull(at);
	at[6] = '4';
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	expect(a1, 2, "dp (4) x tp (1) must equal the number of devices (8): "
		      "give dp 8, or leave dp out",
	       NULL);
	free(text);
}
END_TEST

/* calibrate -o /dev/fd/3 with descriptor 3 on a file said "(use
 * --runtime /dev/fd/3)", a name that is gone with the process. */
START_TEST(test_calibrate_fd_hint)
{
	const char *dir = tp_test_tmpdir();
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	char prof[1100], errf[1100], *err;
	pid_t pid;
	int status;

	snprintf(prof, sizeof(prof), "%s/p.json", dir);
	snprintf(errf, sizeof(errf), "%s/err.txt", dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd3 = open(prof, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(fe, 2);
		dup2(fd3, 3);
		execl(bin, bin, "calibrate",
		      tp_data_file("validation/measured_runs.json"), "-o",
		      "/dev/fd/3", "--fit", "gemm_sustained", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	err = tp_test_read(errf, NULL);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			  strstr(err, "-> /dev/fd/3") &&
			  !strstr(err, "use --runtime"),
		      "%s", err);
	free(err);
}
END_TEST

Suite *suite_newuser(void)
{
	Suite *s = suite_create("newuser");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_command_slips);
	tcase_add_test(tc, test_output_directory);
	tcase_add_test(tc, test_torchtitan_arch_notes);
	tcase_add_test(tc, test_runtime_slips);
	tcase_add_test(tc, test_help_summaries);
	tcase_add_test(tc, test_fraction_as_percent);
	tcase_add_test(tc, test_two_outputs_one_stream);
	tcase_add_test(tc, test_device_type_slips);
	tcase_add_test(tc, test_runtime_profile_files);
	tcase_add_test(tc, test_own_outputs_given_back);
	tcase_add_test(tc, test_caps_list);
	tcase_add_test(tc, test_hf_unbuildable_type);
	tcase_add_test(tc, test_torchrun_script_quoted);
	tcase_add_test(tc, test_network_slips);
	tcase_add_test(tc, test_stdin_once);
	tcase_add_test(tc, test_help_width);
	tcase_add_test(tc, test_export_strategy_sync_note);
	tcase_add_test(tc, test_source_given_as_file);
	tcase_add_test(tc, test_model_seq_hint);
	tcase_add_test(tc, test_model_seq_beyond_rope);
	tcase_add_test(tc, test_man_pages_clean);
	tcase_add_test(tc, test_price_names_types);
	tcase_add_test(tc, test_plan_runtime_field);
	tcase_add_test(tc, test_model_dtype_choices);
	tcase_add_test(tc, test_help_after_options);
	tcase_add_test(tc, test_recorded_shipped_elsewhere);
	tcase_add_test(tc, test_unconstrained_nothing_fits);
	tcase_add_test(tc, test_hf_folder_without_config);
	tcase_add_test(tc, test_trace_replicas_without_trace);
	tcase_add_test(tc, test_simulate_strategy_runtime);
	tcase_add_test(tc, test_calibrate_missing_directory);
	tcase_add_test(tc, test_runs_dtype_choices);
	tcase_add_test(tc, test_strategy_spaces);
	tcase_add_test(tc, test_input_directory);
	tcase_add_test(tc, test_missing_input_exit);
	tcase_add_test(tc, test_calibrate_stdout);
	tcase_add_test(tc, test_output_under_file);
	tcase_add_test(tc, test_import_outputs);
	tcase_add_test(tc, test_hf_tagplan_file);
	tcase_add_test(tc, test_topo_joined_presets);
	tcase_add_test(tc, test_inspect_file_count);
	tcase_add_test(tc, test_validate_run_list);
	tcase_add_test(tc, test_help_command_after);
	tcase_add_test(tc, test_data_env_missing);
	tcase_add_test(tc, test_render_binary_terminal);
	tcase_add_test(tc, test_train_binary_terminal);
	tcase_add_test(tc, test_number_slips);
	tcase_add_test(tc, test_recommend_smaller_tie);
	tcase_add_test(tc, test_hf_not_local);
	tcase_add_test(tc, test_name_limits);
	tcase_add_test(tc, test_calibrate_all_held_out);
	tcase_add_test(tc, test_baselines_wrap);
	tcase_add_test(tc, test_strategy_file_hint);
	tcase_add_test(tc, test_plan_stdin_recorded);
	tcase_add_test(tc, test_own_text_outputs);
	tcase_add_test(tc, test_render_title_control);
	tcase_add_test(tc, test_validate_plan_recorded);
	tcase_add_test(tc, test_short_options_joined);
	tcase_add_test(tc, test_runtime_name_control);
	tcase_add_test(tc, test_fabric_spaces);
	tcase_add_test(tc, test_list_spaces);
	tcase_add_test(tc, test_type_parts);
	tcase_add_test(tc, test_op_kind_synonym);
	tcase_add_test(tc, test_node_count_names);
	tcase_add_test(tc, test_plan_degree_fixes);
	tcase_add_test(tc, test_calibrate_fd_hint);
	suite_add_tcase(s, tc);
	return s;
}
