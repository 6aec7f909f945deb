/*
 * test_io.c - src/io/: the strict JSON reader, the loaders and writers of
 * the four formats (round trips), validation errors, atomic writes, and
 * the `validate`/`inspect` commands on the bad-input corpus
 * (tests/data/bad/NAME.json with NAME.expect and optional NAME.args).
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "io/build.h"
#include "io/io.h"
#include "io/json.h"
#include "util.h"

/* --- helpers --------------------------------------------------------- */

static enum tp_status parse_str(const char *s, struct tp_json_doc *doc,
				struct tp_error *err)
{
	tp_error_clear(err);
	return tp_json_parse("t.json", s, strlen(s), 0, 0, doc, err);
}

static void expect_syntax_n(const char *text, size_t len, int line, int col,
			    const char *msg)
{
	struct tp_json_doc doc;
	struct tp_error err;
	enum tp_status st;

	tp_error_clear(&err);
	st = tp_json_parse("t.json", text, len, 0, 0, &doc, &err);

	ck_assert_msg(st == TP_EINPUT || st == TP_ELIMIT, "accepted: %s", text);
	ck_assert_msg(err.line == line && err.column == col,
		      "%s: at %d:%d, expected %d:%d (%s)", text, err.line,
		      err.column, line, col, err.msg);
	ck_assert_msg(strstr(err.msg, msg), "%s: message \"%s\" lacks \"%s\"",
		      text, err.msg, msg);
	ck_assert_str_eq(err.file, "t.json");
}

static void expect_syntax(const char *text, int line, int col, const char *msg)
{
	expect_syntax_n(text, strlen(text), line, col, msg);
}

static void load_model(const char *path, struct tp_model *m)
{
	struct tp_error err;

	tp_model_init(m);
	tp_error_clear(&err);
	ck_assert_msg(tp_model_load_file(path, NULL, m, &err) == TP_OK,
		      "%s: %s", path, err.msg);
}

static void load_topo(const char *path, struct tp_cluster *c)
{
	struct tp_error err;

	tp_cluster_init(c);
	tp_error_clear(&err);
	ck_assert_msg(tp_topology_load_file(path, NULL, c, &err) == TP_OK,
		      "%s: %s %s", path, err.path, err.msg);
}

static void model_eq(const struct tp_model *a, const struct tp_model *b)
{
	ck_assert_str_eq(a->name, b->name);
	ck_assert_int_eq(a->global_batch, b->global_batch);
	ck_assert_int_eq(a->seq_len, b->seq_len);
	ck_assert_int_eq(a->dtype, b->dtype);
	ck_assert_int_eq(a->optimizer, b->optimizer);
	ck_assert(memcmp(&a->arch, &b->arch, sizeof(a->arch)) == 0);
	ck_assert_uint_eq(a->ops.n, b->ops.n);
	ck_assert_uint_eq(a->edges.n, b->edges.n);
	ck_assert_uint_eq(a->profiles.n, b->profiles.n);
	for (size_t k = 0; k < a->ops.n; k++) {
		const struct tp_op *x = &a->ops.v[k], *y = &b->ops.v[k];
		ck_assert_str_eq(x->name, y->name);
		ck_assert_int_eq(x->kind, y->kind);
		ck_assert_int_eq(x->tp_split, y->tp_split);
		ck_assert_uint_eq(x->tp_units, y->tp_units);
		ck_assert_int_eq(x->layer, y->layer);
		ck_assert(x->flop == y->flop);
		ck_assert(x->backward_flop == y->backward_flop);
		ck_assert(x->param_bytes == y->param_bytes);
		ck_assert(x->out_bytes == y->out_bytes);
		ck_assert(x->saved_bytes == y->saved_bytes);
		ck_assert(x->mem_bytes == y->mem_bytes);
		ck_assert(x->selective_recompute == y->selective_recompute);
		ck_assert_uint_eq(x->n_prof, y->n_prof);
		ck_assert_uint_eq(x->n_in, y->n_in);
		ck_assert_uint_eq(x->n_out, y->n_out);
		ck_assert_uint_eq(a->topo[k], b->topo[k]);
	}
	for (size_t k = 0; k < a->edges.n; k++) {
		ck_assert_uint_eq(a->edges.v[k].src, b->edges.v[k].src);
		ck_assert_uint_eq(a->edges.v[k].dst, b->edges.v[k].dst);
		ck_assert(a->edges.v[k].bytes == b->edges.v[k].bytes);
	}
	for (size_t k = 0; k < a->profiles.n; k++) {
		const struct tp_profile *x = &a->profiles.v[k],
					*y = &b->profiles.v[k];
		ck_assert_str_eq(x->device_type, y->device_type);
		ck_assert(x->batch == y->batch &&
			  x->forward_s == y->forward_s &&
			  x->backward_s == y->backward_s);
	}
}

static void cluster_eq(const struct tp_cluster *a, const struct tp_cluster *b)
{
	ck_assert_str_eq(a->name, b->name);
	ck_assert(a->oversubscription == b->oversubscription);
	ck_assert_uint_eq(a->types.n, b->types.n);
	for (size_t k = 0; k < a->types.n; k++) {
		const struct tp_device_type *x = &a->types.v[k],
					    *y = &b->types.v[k];
		ck_assert_str_eq(x->name, y->name);
		ck_assert(memcmp(x->peak_flops, y->peak_flops,
				 sizeof(x->peak_flops)) == 0);
		ck_assert(x->memory_bytes == y->memory_bytes &&
			  x->memory_bw_Bps == y->memory_bw_Bps &&
			  x->gemm_efficiency == y->gemm_efficiency &&
			  x->gemm_half_flop == y->gemm_half_flop &&
			  x->memory_efficiency == y->memory_efficiency &&
			  x->kernel_overhead_s == y->kernel_overhead_s &&
			  x->reserved_bytes == y->reserved_bytes &&
			  x->builtin == y->builtin);
		ck_assert_str_eq(x->source, y->source);
	}
	ck_assert_uint_eq(a->devices.n, b->devices.n);
	for (size_t k = 0; k < a->devices.n; k++) {
		const struct tp_device *x = &a->devices.v[k],
				       *y = &b->devices.v[k];
		ck_assert_str_eq(x->name, y->name);
		ck_assert(x->type == y->type && x->node == y->node &&
			  x->local == y->local && x->vertex == y->vertex);
	}
	ck_assert_uint_eq(a->nodes.n, b->nodes.n);
	for (size_t k = 0; k < a->nodes.n; k++) {
		const struct tp_node *x = &a->nodes.v[k], *y = &b->nodes.v[k];
		ck_assert_str_eq(x->name, y->name);
		ck_assert(x->first_device == y->first_device &&
			  x->n_devices == y->n_devices &&
			  x->fabric_vertex == y->fabric_vertex &&
			  x->fabric_kind == y->fabric_kind &&
			  x->fabric_bw_Bps == y->fabric_bw_Bps &&
			  x->fabric_latency_s == y->fabric_latency_s &&
			  x->nic_vertex == y->nic_vertex &&
			  x->n_nics == y->n_nics &&
			  x->nic_bw_Bps == y->nic_bw_Bps &&
			  x->nic_latency_s == y->nic_latency_s &&
			  x->network_link == y->network_link);
	}
	ck_assert_uint_eq(a->links.n, b->links.n);
	for (size_t k = 0; k < a->links.n; k++) {
		const struct tp_link *x = &a->links.v[k], *y = &b->links.v[k];
		ck_assert(x->a == y->a && x->b == y->b &&
			  x->bw_Bps == y->bw_Bps &&
			  x->latency_s == y->latency_s && x->kind == y->kind);
	}
	ck_assert_uint_eq(a->vertex_kind.n, b->vertex_kind.n);
	ck_assert(
	    memcmp(a->vertex_kind.v, b->vertex_kind.v, a->vertex_kind.n) == 0);
	for (uint32_t s = 0; s < a->devices.n; s++)
		for (uint32_t t = 0; t < a->devices.n; t++) {
			const struct tp_route *x = tp_test_route(a, s, t);
			const struct tp_route *y = tp_test_route(b, s, t);
			ck_assert(x->bw_Bps == y->bw_Bps &&
				  x->latency_s == y->latency_s && x->n == y->n);
		}
}

#define VEC_EQ(a, b)                                                           \
	do {                                                                   \
		ck_assert_uint_eq((a).n, (b).n);                               \
		if ((a).n)                                                     \
			ck_assert(memcmp((a).v, (b).v,                         \
					 (a).n * sizeof(*(a).v)) == 0);        \
	} while (0)

static void plan_eq(const struct tp_plan *a, const struct tp_plan *b)
{
	const struct tp_plan_summary *x = &a->summary, *y = &b->summary;

	VEC_EQ(a->groups, b->groups);
	VEC_EQ(a->ops, b->ops);
	VEC_EQ(a->devs, b->devs);
	VEC_EQ(a->shares, b->shares);
	VEC_EQ(a->sfb, b->sfb);
	ck_assert(a->global_batch == b->global_batch &&
		  a->micro_batches == b->micro_batches &&
		  a->schedule == b->schedule &&
		  a->virtual_stages == b->virtual_stages &&
		  a->zero == b->zero && a->compression == b->compression &&
		  a->grad_bucket_bytes == b->grad_bucket_bytes);
	ck_assert(x->valid == y->valid && x->feasible == y->feasible);
	ck_assert(x->iteration_time_s == y->iteration_time_s &&
		  x->throughput_samples_per_s == y->throughput_samples_per_s &&
		  x->tokens_per_s == y->tokens_per_s && x->mfu == y->mfu &&
		  x->tflops_per_device == y->tflops_per_device);
	ck_assert_uint_eq(x->n_devices, y->n_devices);
	ck_assert((x->peak_memory_bytes == NULL) ==
		  (y->peak_memory_bytes == NULL));
	ck_assert((x->busy_fraction == NULL) == (y->busy_fraction == NULL));
	for (uint32_t d = 0; d < x->n_devices; d++) {
		if (x->peak_memory_bytes)
			ck_assert(x->peak_memory_bytes[d] ==
				  y->peak_memory_bytes[d]);
		if (x->busy_fraction)
			ck_assert(x->busy_fraction[d] == y->busy_fraction[d]);
	}
	ck_assert_str_eq(x->infeasible_reason, y->infeasible_reason);
	ck_assert_uint_eq(x->n_baselines, y->n_baselines);
	for (uint32_t k = 0; k < x->n_baselines; k++) {
		ck_assert_str_eq(x->baselines[k].name, y->baselines[k].name);
		ck_assert(x->baselines[k].feasible == y->baselines[k].feasible);
		ck_assert(x->baselines[k].iteration_time_s ==
			  y->baselines[k].iteration_time_s);
	}
	ck_assert(x->playouts == y->playouts &&
		  x->simulations == y->simulations && x->seed == y->seed &&
		  x->threads == y->threads && x->gnn == y->gnn &&
		  x->search_seconds == y->search_seconds &&
		  x->playouts_per_s == y->playouts_per_s);
	ck_assert_str_eq(x->weights, y->weights);
	ck_assert_str_eq(x->version, y->version);
	ck_assert_str_eq(x->model_file, y->model_file);
	ck_assert_str_eq(x->topology_file, y->topology_file);
	ck_assert_str_eq(x->model_sha256, y->model_sha256);
	ck_assert_str_eq(x->topology_sha256, y->topology_sha256);
}

/* --- JSON reader ------------------------------------------------------ */

START_TEST(test_json_syntax_positions)
{
	expect_syntax("", 1, 1, "empty input");
	expect_syntax("{\"a\": 1,\n \"b\": [1, 2,]}", 2, 13,
		      "trailing comma before ']'");
	expect_syntax("{\"a\": 1 /* x */}", 1, 9, "comments are not allowed");
	expect_syntax("[1]\n  x", 2, 3, "trailing data");
	expect_syntax("{\"k\": \"caf\xc3\xa9\", \"k\": 2}", 1, 15,
		      "duplicate key \"k\" in one object (first at line 1, "
		      "column 2)");
	expect_syntax("[\"\xc3\xa9\xc3\xa9\", x]", 1, 8, "unknown word \"x\"");
	expect_syntax("{\"a\": NaN}", 1, 7, "NaN is not a JSON number");
	expect_syntax("[1e400]", 1, 2, "too large for a double");
	expect_syntax("[\"a\x01\"]", 1, 4, "raw control character U+0001");
	expect_syntax("[\"\xed\xa0\x80\"]", 1, 3, "invalid UTF-8 byte 0xED");
	expect_syntax("[\"\\ud800x\"]", 1, 3, "lone UTF-16 high surrogate");
	expect_syntax("{\"a\": {\"b\": [", 1, 14,
		      "the array opened at line 1, column 13 is not closed");
	expect_syntax("[1,\n\n\ttrue,\n\tfalse,\n\tnul", 5, 2, "truncated");
	expect_syntax("[1,\n\tnul]", 2, 2, "unknown word \"nul\"");
	expect_syntax("[-]", 1, 3, "expected a digit after '-'");
	expect_syntax("[1.]", 1, 4, "expected a digit after the decimal point");
}
END_TEST

/* Debian 12's cJSON (1.7.15) accepts every one of these texts; the reader
 * refuses them at the place the hand-written reader named. */
START_TEST(test_json_what_cjson_accepts)
{
	/* bytes up to 0x20 between tokens (cJSON: whitespace) */
	expect_syntax("[1,\x0c"
		      "2]",
		      1, 4, "unexpected control character U+000C");
	expect_syntax("{\"a\":\x1f"
		      "1}",
		      1, 6, "control character U+001F");
	expect_syntax_n("[\0 1]", 5, 1, 2,
			"NUL byte: this looks like a binary");
	expect_syntax_n("[1]\0", 4, 1, 4, "NUL byte after the JSON document");
	/* strings (cJSON: a bad \u escape reads as \u0000, which it keeps) */
	expect_syntax("[\"\\uZZZZ\"]", 1, 3, "bad \\u escape");
	expect_syntax("[\"a\\u0000b\"]", 1, 4, "\\u0000 (NUL) is not allowed");
	expect_syntax("[\"a\x01"
		      "b\"]",
		      1, 4, "raw control character U+0001");
	expect_syntax("[\"\xff\"]", 1, 3, "invalid UTF-8 byte 0xFF");
	/* numbers (cJSON: whatever strtod takes) */
	expect_syntax("[01]", 1, 2, "leading zeros");
	expect_syntax("[1.]", 1, 4, "expected a digit after the decimal point");
	expect_syntax("[1.e5]", 1, 4,
		      "expected a digit after the decimal point");
	expect_syntax("[1e999]", 1, 2, "number 1e999 is too large");
	expect_syntax("[-0.5e309]", 1, 2, "too large for a double");
	/* keys */
	expect_syntax("{\"a\":1,\"a\":2}", 1, 8,
		      "duplicate key \"a\" in one object (first at line 1, "
		      "column 2)");
}
END_TEST

/* Where cJSON stops is the error's place, but that a key it cannot read
 * is reported one byte late, and "truex" where "true" ends; a NUL at the
 * end of its length tells running out of input from a bad last byte. */
START_TEST(test_json_error_places)
{
	expect_syntax("{'a': 1}", 1, 2, "strings must be in double quotes");
	expect_syntax("{x}", 1, 2, "expected a key in double quotes");
	expect_syntax("{x", 1, 2, "expected a key in double quotes");
	expect_syntax("{\"a\":1,}", 1, 8, "trailing comma before '}'");
	expect_syntax("{}x", 1, 3, "trailing data");
	expect_syntax("[truex]", 1, 2, "unknown word \"truex\"");
	expect_syntax("nulll", 1, 1, "unknown word \"nulll\"");
	expect_syntax("[1 2]", 1, 4, "after an array element (missing comma?)");
	expect_syntax("{\"a\" 1}", 1, 6, "expected ':' after the key \"a\"");
	expect_syntax("{\"a\":1,", 1, 8,
		      "the object opened at line 1, column 1 is not closed");
	expect_syntax("[1", 1, 3, "the array opened at line 1, column 1");
	expect_syntax("[1x", 1, 3, "after an array element");
}
END_TEST

/* What the reader accepts keeps its values and their places. */
START_TEST(test_json_positions_and_long_numbers)
{
	struct tp_json_doc doc;
	struct tp_error err;
	const struct tp_json *r, *a, *o;

	ck_assert_int_eq(
	    parse_str(
		"{\"a\": [1,\n {\"b\": \"\xc3\xa9\", \"c\": [true, null]}],"
		" \"d\": 0.1000000000000000000000000000000000000000000"
		"00000000000000000000000000001}",
		&doc, &err),
	    TP_OK);
	r = doc.root;
	a = tp_json_get(r, "a");
	ck_assert_int_eq(a->key_line, 1);
	ck_assert_int_eq(a->key_column, 2);
	ck_assert_int_eq(a->column, 7);
	o = a->items[1];
	ck_assert_int_eq(o->line, 2);
	ck_assert_int_eq(o->column, 2);
	/* columns count characters: the é is one */
	ck_assert_int_eq(tp_json_get(o, "c")->key_line, 2);
	ck_assert_int_eq(tp_json_get(o, "c")->key_column, 13);
	ck_assert_int_eq(tp_json_get(o, "c")->items[1]->column, 25);
	/* longer than cJSON 1.7.15's old 64-byte number buffer */
	ck_assert(tp_json_get(r, "d")->num == 0.1);
	tp_json_doc_release(&doc);
}
END_TEST

START_TEST(test_json_values_and_unicode)
{
	struct tp_json_doc doc;
	struct tp_error err;
	const struct tp_json *r;
	/* BOM, escapes, surrogate pair, nested containers, numbers */
	const char *text =
	    "\xef\xbb\xbf{\"s\": \"a\\u00e9\\ud83d\\ude00\\n\\/\","
	    " \"n\": -1.5e-3, \"z\": 0, \"b\": [true, false, null],"
	    " \"o\": {}}";

	ck_assert_int_eq(parse_str(text, &doc, &err), TP_OK);
	r = doc.root;
	ck_assert_int_eq(r->type, TP_JSON_OBJECT);
	ck_assert_uint_eq(r->n, 5);
	ck_assert_str_eq(tp_json_get(r, "s")->str,
			 "a\xc3\xa9\xf0\x9f\x98\x80\n/");
	ck_assert(tp_json_get(r, "n")->num == -1.5e-3);
	ck_assert_uint_eq(tp_json_get(r, "b")->n, 3);
	ck_assert_int_eq(tp_json_get(r, "b")->items[2]->type, TP_JSON_NULL);
	ck_assert_int_eq(tp_json_get(r, "o")->type, TP_JSON_OBJECT);
	ck_assert_ptr_null(tp_json_get(r, "missing"));
	ck_assert_int_eq(tp_json_get(r, "z")->line, 1);
	tp_json_doc_release(&doc);
}
END_TEST

START_TEST(test_json_deep_nesting)
{
	size_t n = 100000;
	char *s = malloc(6 * n + 2);
	struct tp_json_doc doc;
	struct tp_error err;
	size_t k = 0;

	ck_assert_ptr_nonnull(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_json_parse("deep", s, 2 * n, 0, 0, &doc, &err),
			 TP_ELIMIT);
	ck_assert_int_eq(err.column, 65);
	ck_assert_ptr_nonnull(strstr(err.msg, "nesting deeper than 64"));
	/* objects too, and an explicit higher limit */
	for (size_t i = 0; i < n; i++) {
		memcpy(s + k, "{\"a\":", 5);
		k += 5;
	}
	s[k++] = '1';
	memset(s + k, '}', n);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_json_parse("deep", s, k + n, 0, 1000, &doc, &err),
			 TP_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.msg, "1000 levels"));
	/* exactly at the limit is fine */
	memset(s, '[', 64);
	memset(s + 64, ']', 64);
	ck_assert_int_eq(tp_json_parse("deep", s, 128, 0, 0, &doc, &err),
			 TP_OK);
	tp_json_doc_release(&doc);
	free(s);
}
END_TEST

START_TEST(test_json_size_limit_and_many_keys)
{
	struct tp_json_doc doc;
	struct tp_error err;
	char *s = malloc(20000);
	size_t k = 0;

	tp_error_clear(&err);
	ck_assert_int_eq(tp_json_parse("big", "[1, 2, 3]", 9, 5, 0, &doc, &err),
			 TP_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.msg, "--max-bytes"));
	/* 1000 keys, the duplicate at the end: found by the sorted path */
	ck_assert_ptr_nonnull(s);
	s[k++] = '{';
	for (int i = 0; i < 1000; i++)
		k += (size_t)sprintf(s + k, "\"key%d\":%d,", i, i);
	k += (size_t)sprintf(s + k, "\"key7\":0}");
	tp_error_clear(&err);
	ck_assert_int_eq(tp_json_parse("keys", s, k, 0, 0, &doc, &err),
			 TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key \"key7\""));
	ck_assert_int_eq(err.column, (int)k - 8);
	free(s);
}
END_TEST

START_TEST(test_sha256_vectors)
{
	char hex[65];
	char *million = malloc(1000000);
	struct tp_sha256 s;
	unsigned char d[32];

	tp_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb924"
			      "27ae41e4649b934ca495991b7852b855");
	tp_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223"
			      "b00361a396177a9cb410ff61f20015ad");
	tp_sha256_hex(
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	    hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039"
			      "a33ce45964ff2167f6ecedd419db06c1");
	ck_assert_ptr_nonnull(million);
	memset(million, 'a', 1000000);
	/* incremental in odd pieces gives the one-call digest */
	tp_sha256_init(&s);
	for (size_t off = 0; off < 1000000; off += 997)
		tp_sha256_update(&s, million + off,
				 1000000 - off < 997 ? 1000000 - off : 997);
	tp_sha256_final(&s, d);
	tp_sha256_hex(million, 1000000, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
			      "f1809a48a497200e046d39ccc7112cd0");
	ck_assert_int_eq(d[0], 0xcd);
	ck_assert_int_eq(d[31], 0xd0);
	free(million);
}
END_TEST

/* --- loaders ----------------------------------------------------------- */

START_TEST(test_model_roundtrip)
{
	const char *files[] = {tp_data_file("demo-model.json"),
			       tp_test_path("data/good/mlp.json")};

	for (int f = 0; f < 2; f++) {
		struct tp_model a, b;
		struct tp_strbuf sb;
		struct tp_error err;

		load_model(files[f], &a);
		tp_strbuf_init(&sb);
		tp_model_write(&a, &sb);
		ck_assert(!sb.failed);
		tp_model_init(&b);
		tp_error_clear(&err);
		ck_assert_msg(tp_model_load("rt", sb.buf, sb.len, NULL, &b,
					    &err) == TP_OK,
			      "%s %s", err.path, err.msg);
		model_eq(&a, &b);
		tp_strbuf_release(&sb);
		tp_model_release(&a);
		tp_model_release(&b);
	}
}
END_TEST

START_TEST(test_model_defaults)
{
	struct tp_model m;
	const struct tp_op *fc1, *relu, *fc2;

	load_model(tp_test_path("data/good/mlp.json"), &m);
	fc1 = &m.ops.v[tp_model_find_op(&m, "fc1")];
	relu = &m.ops.v[tp_model_find_op(&m, "relu")];
	fc2 = &m.ops.v[tp_model_find_op(&m, "fc2")];
	ck_assert(fc1->backward_flop == 2 * fc1->flop); /* matmul default */
	ck_assert(relu->backward_flop == relu->flop);	/* 1x otherwise */
	ck_assert(fc1->saved_bytes == fc1->out_bytes);
	ck_assert(fc1->mem_bytes == 3136 + 2048); /* inputs + output */
	ck_assert(fc2->mem_bytes == 2088);	  /* given */
	ck_assert_uint_eq(fc1->tp_units, 512);
	ck_assert_int_eq(fc1->tp_split, TP_SPLIT_COLUMN);
	ck_assert_uint_eq(fc1->n_prof, 1);
	ck_assert_str_eq(m.profiles.v[fc1->prof_first].device_type,
			 "V100-SXM2-16GB");
	ck_assert_int_eq(m.dtype, TP_DTYPE_FP32);
	ck_assert_int_eq(m.optimizer, TP_OPT_SGD);
	ck_assert(m.total_param_bytes == 1607680 + 20520);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_topology_roundtrip)
{
	const char *files[] = {tp_data_file("tag-testbed.json"),
			       tp_data_file("dgx-a100x4.json"),
			       tp_test_path("data/good/two-racks.json")};

	for (int f = 0; f < 3; f++) {
		struct tp_cluster a, b;
		struct tp_strbuf sb;
		struct tp_error err;

		load_topo(files[f], &a);
		tp_strbuf_init(&sb);
		tp_topology_write(&a, &sb);
		ck_assert(!sb.failed);
		tp_cluster_init(&b);
		tp_error_clear(&err);
		ck_assert_msg(tp_topology_load("rt", sb.buf, sb.len, NULL, &b,
					       &err) == TP_OK,
			      "%s: %s %s\n%s", files[f], err.path, err.msg,
			      sb.buf);
		cluster_eq(&a, &b);
		/* explicit networks are written explicitly */
		ck_assert((strstr(sb.buf, "\"switches\"") != NULL) == (f == 2));
		tp_strbuf_release(&sb);
		tp_cluster_release(&a);
		tp_cluster_release(&b);
	}
}
END_TEST

/* The writer groups identical nodes named BASE-0, BASE-1, ... into one
 * object with "count" (a 100,000-GPU cluster is a few hundred bytes);
 * the file reads back to the same cluster as the one it was written from
 * and as the same nodes written one object each (the earlier form). */
START_TEST(test_topology_write_groups)
{
	static const char *const big[] = {"dgx-h100:64"};
	static const char *const thirteen[] = {"dgx-h100:13"};
	static const char *const mixed[] = {"dgx-a100:2", "dgx1-v100:3",
					    "dgx-a100:1", "t4-pcie:1"};
	struct tp_cluster a, b;
	struct tp_strbuf sb, old;
	struct tp_error err;

	tp_cluster_init(&a);
	tp_error_clear(&err);
	ck_assert(tp_build_topology(big, 1, NULL, 1, &a, &err) == TP_OK);
	tp_strbuf_init(&sb);
	tp_topology_write(&a, &sb);
	ck_assert(!sb.failed);
	ck_assert_msg(sb.len < 1024, "%zu bytes", sb.len);
	ck_assert(strstr(sb.buf, "\"count\": 64") != NULL);
	tp_cluster_init(&b);
	ck_assert_msg(tp_topology_load("g.json", sb.buf, sb.len, NULL, &b,
				       &err) == TP_OK,
		      "%s", err.msg);
	cluster_eq(&a, &b);
	tp_cluster_release(&b);

	/* the earlier form: one object per node, named as the replicas */
	tp_strbuf_init(&old);
	tp_strbuf_adds(&old, "{\"format\": \"tagplan-topology/1\", "
			     "\"name\": \"dgx-h100:64\", \"nodes\": [");
	for (int k = 0; k < 64; k++)
		tp_strbuf_addf(
		    &old,
		    "%s{\"name\": \"dgx-h100-%d\", \"devices\": [{\"type\": "
		    "\"H100-SXM5-80GB\", \"count\": 8}], \"fabric\": "
		    "{\"kind\": \"nvswitch\", \"bandwidth_Bps\": 450e9, "
		    "\"latency_s\": 3e-7}, \"nic\": {\"count\": 8, "
		    "\"bandwidth_Bps\": 50e9, \"latency_s\": 6e-7}}",
		    k ? ", " : "", k);
	tp_strbuf_adds(&old, "]}");
	tp_cluster_init(&b);
	ck_assert_msg(tp_topology_load("old.json", old.buf, old.len, NULL, &b,
				       &err) == TP_OK,
		      "%s", err.msg);
	cluster_eq(&a, &b);
	tp_cluster_release(&b);
	tp_cluster_release(&a);
	tp_strbuf_release(&old);

	/* runs of alike nodes, explicit links, a lone BASE-2 and BASE-0 */
	tp_cluster_init(&a);
	ck_assert(tp_build_topology(mixed, 4, "ib-hdr", 2, &a, &err) == TP_OK);
	tp_strbuf_reset(&sb);
	tp_topology_write(&a, &sb);
	ck_assert(strstr(sb.buf, "\"name\": \"dgx-a100\",\n      \"count\": 2"));
	ck_assert(strstr(sb.buf, "\"name\": \"dgx1-v100\",\n      \"count\": 3"));
	ck_assert(strstr(sb.buf, "\"name\": \"dgx-a100-2\""));
	ck_assert(strstr(sb.buf, "\"name\": \"t4-pcie-0\""));
	tp_cluster_init(&b);
	ck_assert_msg(tp_topology_load("m.json", sb.buf, sb.len, NULL, &b,
				       &err) == TP_OK,
		      "%s", err.msg);
	cluster_eq(&a, &b);
	tp_cluster_release(&b);
	tp_cluster_release(&a);

	/* a tiered network is written as its tiers, not its switches */
	tp_cluster_init(&a);
	ck_assert(tp_build_topology_fabric(
		      thirteen, 1, NULL, 1.5, "clos:leaf=6,spine=4,oversubscription=2",
		      &a, &err) == TP_OK);
	tp_strbuf_reset(&sb);
	tp_topology_write(&a, &sb);
	ck_assert_msg(sb.len < 1024, "%zu bytes", sb.len);
	ck_assert(strstr(sb.buf, "\"tiers\"") && !strstr(sb.buf, "switch0"));
	tp_cluster_init(&b);
	ck_assert_msg(tp_topology_load("c.json", sb.buf, sb.len, NULL, &b,
				       &err) == TP_OK,
		      "%s", err.msg);
	cluster_eq(&a, &b);
	ck_assert_uint_eq(b.tiers.n, 3);
	for (size_t t = 0; t < 3; t++)
		ck_assert(!strcmp(a.tiers.v[t].name, b.tiers.v[t].name) &&
			  a.tiers.v[t].group == b.tiers.v[t].group &&
			  a.tiers.v[t].bw_Bps == b.tiers.v[t].bw_Bps &&
			  a.tiers.v[t].latency_s == b.tiers.v[t].latency_s &&
			  a.tiers.v[t].oversubscription ==
			      b.tiers.v[t].oversubscription);
	tp_cluster_release(&b);
	tp_cluster_release(&a);
	tp_strbuf_release(&sb);
}
END_TEST

START_TEST(test_topology_structure)
{
	struct tp_cluster c;
	uint32_t a, b;
	const struct tp_device_type *t;

	load_topo(tp_data_file("dgx-a100x4.json"), &c);
	ck_assert_uint_eq(c.devices.n, 32);
	ck_assert_uint_eq(c.nodes.n, 4);
	a = tp_cluster_find_device(&c, "dgx-0/gpu0");
	b = tp_cluster_find_device(&c, "dgx-3/gpu7");
	ck_assert_uint_ne(a, TP_NONE);
	ck_assert_uint_ne(b, TP_NONE);
	ck_assert(tp_test_route(&c, a, a + 1)->bw_Bps == 300e9);
	ck_assert(tp_test_route(&c, a, b)->bw_Bps == 25e9);
	ck_assert(fabs(tp_test_route(&c, a, b)->latency_s - 5e-6) < 1e-15);
	t = &c.types.v[c.devices.v[a].type];
	ck_assert_str_eq(t->name, "A100-SXM4-80GB");
	ck_assert(t->gemm_efficiency == 0.869);
	ck_assert(t->peak_flops[TP_DTYPE_BF16] == 312e12);
	ck_assert(t->builtin);
	tp_cluster_release(&c);

	load_topo(tp_data_file("tag-testbed.json"), &c);
	ck_assert_uint_eq(c.devices.n, 16);
	ck_assert_uint_eq(c.type_count[tp_cluster_find_type(&c, "GTX-1080-Ti")],
			  8);
	/* NVLink inside the V100 machine, 2.81 GB/s between machines */
	ck_assert(tp_test_route(&c, tp_cluster_find_device(&c, "g12/gpu0"),
				   tp_cluster_find_device(&c, "g12/gpu3"))
		      ->bw_Bps == 50e9);
	ck_assert(tp_test_route(&c, tp_cluster_find_device(&c, "g7/gpu0"),
				   tp_cluster_find_device(&c, "g1/gpu1"))
		      ->bw_Bps == 2.81e9);
	/* a V100 has no bf16 unit: bf16 runs at its fp16 tensor-core rate
	 * (core/precision.h), not silently at fp32's */
	ck_assert(tp_device_peak_flops(&c, 0, TP_DTYPE_BF16) == 125e12);
	tp_cluster_release(&c);

	load_topo(tp_test_path("data/good/two-racks.json"), &c);
	t = &c.types.v[tp_cluster_find_type(&c, "MyV100")];
	ck_assert(!t->builtin);
	ck_assert(t->memory_bytes == 15e9);		   /* overridden */
	ck_assert(t->peak_flops[TP_DTYPE_FP16] == 125e12); /* from base */
	ck_assert_uint_eq(c.nodes.v[0].n_devices, 3);
	ck_assert_str_eq(c.devices.v[2].name, "a/gpu2");
	ck_assert_str_eq(c.devices.v[4].name, "b-1/gpu0");
	/* b-0 -> b-1 crosses tor and spine: the 3.125 GB/s NIC links */
	ck_assert(tp_test_route(&c, 3, 4)->bw_Bps == 3.125e9);
	ck_assert_uint_eq(tp_test_route(&c, 3, 4)->n, 5);
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_builtin_devices)
{
	struct tp_cluster c;
	struct tp_error err;
	size_t n;

	tp_cluster_init(&c);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_devices_load_builtin(&c, &err), TP_OK);
	n = c.types.n;
	ck_assert_uint_ge(n, 22);
	ck_assert_int_eq(tp_devices_load_builtin(&c, &err), TP_OK);
	ck_assert_uint_eq(c.types.n, n); /* idempotent */
	for (size_t k = 0; k < n; k++) {
		const struct tp_device_type *t = &c.types.v[k];
		ck_assert(t->builtin && t->memory_bytes > t->reserved_bytes);
		ck_assert(t->peak_flops[TP_DTYPE_FP32] > 0);
		ck_assert(t->gemm_efficiency > 0 && t->gemm_efficiency <= 1);
		ck_assert_msg(t->source && strlen(t->source) > 20, "%s",
			      t->name);
	}
	ck_assert_uint_ne(tp_cluster_find_type(&c, "GTX-1080-Ti"), TP_NONE);
	ck_assert_uint_ne(tp_cluster_find_type(&c, "MI300X"), TP_NONE);
	ck_assert(c.types.v[tp_cluster_find_type(&c, "H100-SXM5-80GB")]
		      .gemm_efficiency == 0.803);
	{
		/* a bad list leaves the cluster unchanged */
		const char *t =
		    "{\"format\": \"tagplan-devices/1\", \"device_types\": "
		    "[{\"name\": \"New1\", \"memory_bytes\": 8e9, "
		    "\"memory_bandwidth_Bps\": 1e11, \"peak_flops\": "
		    "{\"fp32\": 1e13}}, {\"name\": \"T4-16GB\", "
		    "\"memory_bytes\": 8e9, \"memory_bandwidth_Bps\": 1e11, "
		    "\"peak_flops\": {\"fp32\": 1e13}}]}";
		ck_assert_int_eq(
		    tp_devices_load("d", t, strlen(t), NULL, &c, &err),
		    TP_EINPUT);
		ck_assert_str_eq(err.path, "$.device_types[1].name");
		ck_assert_uint_eq(c.types.n, n);
	}
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_semantic_errors)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_load_options o;
	struct tp_strbuf w;
	const char *topo = "{\"format\": \"tagplan-topology/1\", \"nodes\": "
			   "[{\"name\": \"n\", \"devices\": [{\"type\": "
			   "\"H100-SXM-80GB\"}]}]}";
	const char *model =
	    "{\"format\": \"tagplan-model/1\", \"name\": \"m\", "
	    "\"global_batch_size\": 8, \"dtype\": \"fp32\", "
	    "\"optimizer\": \"adam\", \"colour\": \"red\", "
	    "\"ops\": [{\"name\": \"a\", \"kind\": \"matmul\", "
	    "\"forward_flop_per_sample\": 1, "
	    "\"parameter_bytes\": 4, "
	    "\"output_bytes_per_samples\": 4}]}";

	tp_cluster_init(&c);
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_topology_load("t.json", topo, strlen(topo), NULL, &c, &err),
	    TP_EINPUT);
	ck_assert_str_eq(err.path, "$.nodes[0].devices[0].type");
	ck_assert_str_eq(err.file, "t.json");
	ck_assert_ptr_nonnull(
	    strstr(err.msg, "did you mean \"H100-SXM5-80GB\""));
	ck_assert_uint_eq(c.types.n, 0); /* released on failure */
	tp_cluster_release(&c);

	/* unknown field: a warning with a suggestion, then an error under
	 * strict; here the misspelt field is also a missing one */
	tp_model_init(&m);
	tp_load_options_default(&o);
	tp_strbuf_init(&w);
	o.warnings = &w;
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_model_load("m.json", model, strlen(model), &o, &m, &err),
	    TP_EINPUT);
	ck_assert_str_eq(err.path, "$.ops[0]");
	ck_assert_ptr_nonnull(strstr(err.msg, "\"output_bytes_per_sample\""));
	ck_assert_ptr_nonnull(
	    strstr(tp_strbuf_cstr(&w), "m.json: $.colour: unknown field"));
	ck_assert_ptr_nonnull(strstr(
	    tp_strbuf_cstr(&w), "$.ops[0].output_bytes_per_samples: unknown "
				"field \"output_bytes_per_samples\" in an op "
				"(did you mean \"output_bytes_per_sample\"?)"));
	o.strict = true;
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_model_load("m.json", model, strlen(model), &o, &m, &err),
	    TP_EINPUT);
	ck_assert_str_eq(err.path, "$.colour");
	ck_assert_ptr_nonnull(strstr(err.msg, "--strict"));
	tp_strbuf_release(&w);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_plan_roundtrip)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan a, b;
	struct tp_strbuf sb;
	struct tp_error err;

	load_model(tp_test_path("data/good/mlp.json"), &m);
	load_topo(tp_test_path("data/good/two-racks.json"), &c);
	tp_plan_init(&a);
	tp_plan_init(&b);
	tp_error_clear(&err);
	ck_assert_msg(tp_plan_load_file(tp_test_path("data/good/mlp-plan.json"),
					&m, &c, NULL, &a, &err) == TP_OK,
		      "%s %s", err.path, err.msg);
	ck_assert_uint_eq(a.groups.n, 2);
	ck_assert_uint_eq(a.groups.v[0].n_ops, 3); /* the range */
	ck_assert(tp_plan_group_shares(&a, 0)[0] == 0.75);
	ck_assert_int_eq(a.groups.v[0].sync, TP_SYNC_PS);
	ck_assert_int_eq(a.groups.v[1].sync, TP_SYNC_HIERARCHICAL);
	ck_assert_uint_eq(a.groups.v[1].n_sfb, 1);
	ck_assert(a.summary.valid && a.summary.seed == 42);
	ck_assert_uint_eq(a.summary.n_baselines, 2);
	ck_assert(a.grad_bucket_bytes == 0); /* absent: the simulator's */
	a.summary.seed = UINT64_C(18446744073709551557); /* > 2^53 */
	a.grad_bucket_bytes = 80e6;
	tp_strbuf_init(&sb);
	tp_plan_write(&a, &m, &c, &sb);
	ck_assert(!sb.failed);
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"from\": \"input\""));
	ck_assert_ptr_nonnull(
	    strstr(sb.buf, "\"seed\": \"18446744073709551557\""));
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"speedup\": "));
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"grad_bucket_bytes\": 8"));
	tp_error_clear(&err);
	ck_assert_msg(
	    tp_plan_load("rt", sb.buf, sb.len, &m, &c, NULL, &b, &err) == TP_OK,
	    "%s %s\n%s", err.path, err.msg, sb.buf);
	plan_eq(&a, &b);
	tp_strbuf_release(&sb);
	tp_plan_release(&a);
	tp_plan_release(&b);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_plan_structural)
{
	char *text;
	size_t len;
	struct tp_error err;
	struct tp_plan_outline ol;

	memset(&ol, 0, sizeof(ol));
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_read(tp_test_path("data/good/mlp-plan.json"),
				      0, &text, &len, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_check("p.json", text, len, NULL, &ol, &err),
			 TP_OK);
	ck_assert_uint_eq(ol.groups.n, 2);
	ck_assert_uint_eq(ol.groups.v[0].n_ranges, 1);
	ck_assert_uint_eq(ol.n_distinct_devices, 4);
	ck_assert_str_eq(ol.model, "mlp-small");
	ck_assert(ol.has_summary && ol.iteration_time_s == 0.0123);
	tp_plan_outline_release(&ol);
	free(text);
}
END_TEST

START_TEST(test_report_roundtrip)
{
	struct tp_report a, b;
	struct tp_strbuf sb;
	struct tp_error err;
	struct tp_cluster c;
	char *text;
	size_t len;

	tp_report_init(&a);
	tp_report_init(&b);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_read(tp_test_path("data/good/report.json"), 0,
				      &text, &len, &err),
			 TP_OK);
	ck_assert_int_eq(tp_report_load("r.json", text, len, NULL, &a, &err),
			 TP_OK);
	free(text);
	ck_assert_uint_eq(a.n_devices, 2);
	ck_assert(a.devices[0].memory.optimizer == 4e10);
	ck_assert_uint_eq(a.worst_device, 0);
	load_topo(tp_test_path("data/good/two-racks.json"), &c);
	tp_strbuf_init(&sb);
	tp_report_write(&a, &c, &sb); /* c has 5 devices: names omitted */
	ck_assert_int_eq(tp_report_load("rt", sb.buf, sb.len, NULL, &b, &err),
			 TP_OK);
	ck_assert(a.feasible == b.feasible &&
		  a.iteration_time_s == b.iteration_time_s &&
		  a.throughput_samples_per_s == b.throughput_samples_per_s &&
		  a.tokens_per_s == b.tokens_per_s &&
		  a.model_flop_per_iteration == b.model_flop_per_iteration &&
		  a.tflops_per_device == b.tflops_per_device &&
		  a.mfu == b.mfu && a.bubble_fraction == b.bubble_fraction &&
		  a.worst_device == b.worst_device &&
		  a.over_bytes == b.over_bytes);
	ck_assert_uint_eq(b.n_devices, a.n_devices);
	ck_assert(memcmp(a.devices, b.devices,
			 a.n_devices * sizeof(*a.devices)) == 0);
	ck_assert_uint_eq(b.n_links, 1);
	ck_assert(memcmp(a.links, b.links, sizeof(*a.links)) == 0);
	ck_assert_str_eq(a.reason, b.reason);
	ck_assert_str_eq(a.approximations, b.approximations);
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"endpoints\": \"a/gpu"));
	tp_strbuf_release(&sb);
	tp_report_release(&a);
	tp_report_release(&b);
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_format_detect)
{
	struct tp_error err;
	enum tp_format_kind k;
	const char *t = "{\"format\": \"tagplan-topology/1\"}";

	tp_error_clear(&err);
	ck_assert_int_eq(tp_format_detect("x", t, strlen(t), NULL, &k, &err),
			 TP_OK);
	ck_assert_int_eq(k, TP_FORMAT_TOPOLOGY);
	t = "{\"format\": \"tagplan-plan/7\"}";
	ck_assert_int_eq(tp_format_detect("x", t, strlen(t), NULL, &k, &err),
			 TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "unsupported format"));
	ck_assert_str_eq(tp_format_kind_name(TP_FORMAT_PLAN), "plan");
	ck_assert_int_eq(tp_format_parse("tagplan-report/1"), TP_FORMAT_REPORT);
	t = "{\n  \"format\" :\t\"tagplan-model/1\", \"name\": ";
	ck_assert_int_eq(tp_format_sniff(t, strlen(t)), TP_FORMAT_MODEL);
	ck_assert_int_eq(tp_format_sniff(t, 20), TP_FORMAT_UNKNOWN);
	t = "{\"name\": \"format\", \"x\": 1}";
	ck_assert_int_eq(tp_format_sniff(t, strlen(t)), TP_FORMAT_UNKNOWN);
}
END_TEST

/* --- files ------------------------------------------------------------- */

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

START_TEST(test_atomic_write)
{
	const char *dir = tp_test_tmpdir();
	char path[512], bad[512];
	struct tp_error err;
	char *back;
	size_t len;
	struct stat st;

	snprintf(path, sizeof(path), "%s/out.json", dir);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_write_atomic(path, "first", 5, &err), TP_OK);
	ck_assert_int_eq(tp_file_write_atomic(path, "second!", 7, &err), TP_OK);
	back = tp_test_read(path, &len);
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(len, 7);
	ck_assert(memcmp(back, "second!", 7) == 0);
	free(back);
	ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert((st.st_mode & 0077) != 0 || (st.st_mode & 0600) == 0600);

	/* a missing directory: an I/O error naming the path, nothing made */
	snprintf(bad, sizeof(bad), "%s/no/such/dir/out.json", dir);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_write_atomic(bad, "x", 1, &err), TP_EIO);
	ck_assert_str_eq(err.file, bad);
	/* a directory in the way: refused as usage (exit 2, tagplan(1)),
	 * left alone */
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_write_atomic(dir, "x", 1, &err), TP_EUSAGE);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(count_entries(dir), 1);
	/* an unwritable directory leaves the old file untouched */
	if (geteuid() != 0) {
		chmod(dir, 0500);
		ck_assert_int_eq(tp_file_write_atomic(path, "third", 5, &err),
				 TP_EIO);
		chmod(dir, 0700);
		back = tp_test_read(path, &len);
		ck_assert(len == 7 && memcmp(back, "second!", 7) == 0);
		free(back);
	}
}
END_TEST

START_TEST(test_file_read)
{
	struct tp_error err;
	char *data;
	size_t len;
	char path[512];
	enum tp_status st;

	tp_error_clear(&err);
	st = tp_file_read(tp_data_file("demo-model.json"), 100, &data, &len,
			  &err);
	ck_assert_int_eq(st, TP_ELIMIT);
	ck_assert_ptr_null(data);
	ck_assert_ptr_nonnull(strstr(err.msg, "100 bytes"));
	tp_error_clear(&err);
	ck_assert_int_eq(
	    tp_file_read("/nonexistent/x.json", 0, &data, &len, &err), TP_EIO);
	ck_assert_str_eq(err.file, "/nonexistent/x.json");
	ck_assert_int_eq(
	    tp_file_read(tp_data_file("demo-model.json"), 0, &data, &len, &err),
	    TP_OK);
	ck_assert_uint_gt(len, 1000);
	ck_assert_int_eq(data[len], '\0');
	free(data);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_data_path("devices.json", path, sizeof(path), &err),
			 TP_OK);
	ck_assert_ptr_nonnull(strstr(path, "devices.json"));
	ck_assert_int_eq(
	    tp_data_path("no-such-file.json", path, sizeof(path), &err),
	    TP_EIO);
	ck_assert_ptr_nonnull(strstr(err.msg, "TAGPLAN_DATA"));
}
END_TEST

/* --- commands ------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static char *replace_all(const char *s, const char *what, const char *with)
{
	size_t n = strlen(s) + 1, wl = strlen(what);
	char *out, *o;

	for (const char *p = strstr(s, what); p; p = strstr(p + wl, what))
		n += strlen(with);
	out = o = malloc(n);
	ck_assert_ptr_nonnull(out);
	while (*s) {
		if (strncmp(s, what, wl) == 0) {
			o += sprintf(o, "%s", with);
			s += wl;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

START_TEST(test_bad_corpus)
{
	const char *dir = tp_test_path("data/bad");
	char tests[1024];
	DIR *d = opendir(dir);
	struct dirent *e;
	int checked = 0;

	snprintf(tests, sizeof(tests), "%s", tp_test_path(""));
	tests[strlen(tests) - 1] = '\0'; /* drop the trailing slash */
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char base[512], path[1100], *expect, *args = NULL;
		const char *argv[16];
		int argc = 0;
		struct tp_run r;

		if (!ends_with(e->d_name, ".json"))
			continue;
		snprintf(base, sizeof(base), "%s/%.*s", dir,
			 (int)strlen(e->d_name) - 5, e->d_name);
		snprintf(path, sizeof(path), "%s.expect", base);
		expect = tp_test_read(path, NULL);
		ck_assert_msg(expect != NULL, "%s has no .expect file", base);
		argv[argc++] = "tagplan";
		argv[argc++] = "validate";
		snprintf(path, sizeof(path), "%s.args", base);
		{
			char *raw = tp_test_read(path, NULL);
			if (raw) {
				char *save = NULL;
				args = replace_all(raw, "@TESTS@", tests);
				free(raw);
				for (char *t = strtok_r(args, " \n", &save);
				     t && argc < 12;
				     t = strtok_r(NULL, " \n", &save))
					argv[argc++] = t;
			}
		}
		snprintf(path, sizeof(path), "%s.json", base);
		argv[argc++] = path;
		argv[argc] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 2,
			      "%s: exit %d, expected 2; stderr: %s", path,
			      r.status, r.err);
		ck_assert_msg(strstr(r.err, path) != NULL,
			      "%s: the message does not name the file: %s",
			      path, r.err);
		ck_assert_msg(r.out_len == 0, "%s: wrote to stdout: %s", path,
			      r.out);
		{
			char *save = NULL;
			for (char *line = strtok_r(expect, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				ck_assert_msg(strstr(r.err, line) != NULL,
					      "%s: stderr lacks \"%s\":\n%s",
					      path, line, r.err);
		}
		tp_run_free(&r);
		free(expect);
		free(args);
		checked++;
	}
	closedir(d);
	ck_assert_int_ge(checked, 40);
}
END_TEST

START_TEST(test_good_files_validate)
{
	struct tp_run r;

	{
		/* tp_test_path rotates 8 buffers: one array at a time */
		const char *argv[] = {"tagplan",
				      "validate",
				      "-m",
				      tp_test_path("data/good/mlp.json"),
				      "-t",
				      tp_test_path("data/good/two-racks.json"),
				      tp_test_path("data/good/mlp.json"),
				      tp_test_path("data/good/two-racks.json"),
				      tp_test_path("data/good/mlp-plan.json"),
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "mlp-plan.json: ok (plan)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "two-racks.json: ok (topology)\n"));
	tp_run_free(&r);
	{
		const char *argv[] = {
		    "tagplan",
		    "validate",
		    tp_data_file("demo-model.json"),
		    tp_data_file("devices.json"),
		    tp_data_file("tag-testbed.json"),
		    tp_data_file("dgx-a100x4.json"),
		    tp_test_path("data/good/report.json"),
		    tp_test_path("data/good/plan-uniform.json"),
		    NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "demo-model.json: ok (model)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "devices.json: ok (devices)\n"));
	ck_assert_ptr_nonnull(
	    strstr(r.out, "dgx-a100x4.json: ok (topology)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "report.json: ok (report)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "plan-uniform.json: ok (plan, "
					    "structure only"));
	ck_assert_str_eq(r.err, "");
	tp_run_free(&r);
}
END_TEST

START_TEST(test_validate_stdin_deep_and_usage)
{
	size_t n = 100000;
	char *deep = malloc(2 * n + 1);
	const char *argv[] = {"tagplan", "validate", "-", NULL};
	const char *none[] = {"tagplan", "validate", NULL};
	const char *half[] = {"tagplan", "validate", "-m",
			      "x.json",	 "y.json",   NULL};
	const char *missing[] = {"tagplan", "validate", "/nonexistent.json",
				 NULL};
	const char *warn[] = {
	    "tagplan", "validate",
	    tp_test_path("data/bad/unknown-field-strict.json"), NULL};
	struct tp_run r;

	ck_assert_ptr_nonnull(deep);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	tp_run_tagplan(&r, argv, deep);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "-:1:65: nesting deeper than 64"));
	tp_run_free(&r);
	free(deep);
	tp_run_tagplan(&r, none, NULL);
	ck_assert_int_eq(r.status, 2);
	tp_run_free(&r);
	tp_run_tagplan(&r, half, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "go together"));
	tp_run_free(&r);
	tp_run_tagplan(&r, missing, NULL);
	ck_assert_int_eq(r.status, 2); /* a path that does not exist */
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent.json: cannot open"));
	tp_run_free(&r);
	/* without --strict an unknown field is a warning */
	tp_run_tagplan(&r, warn, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "warning: "));
	ck_assert_ptr_nonnull(strstr(r.err, "$.ops[1].flops: unknown field"));
	tp_run_free(&r);
}
END_TEST

START_TEST(test_inspect)
{
	const char *m[] = {"tagplan", "inspect",
			   tp_data_file("demo-model.json"), NULL};
	const char *t[] = {"tagplan", "inspect",
			   tp_data_file("tag-testbed.json"), NULL};
	const char *p[] = {"tagplan",
			   "inspect",
			   "-m",
			   tp_test_path("data/good/mlp.json"),
			   "-t",
			   tp_test_path("data/good/two-racks.json"),
			   tp_test_path("data/good/mlp-plan.json"),
			   NULL};
	const char *bad[] = {"tagplan", "inspect",
			     tp_test_path("data/bad/cycle.json"), NULL};
	struct tp_run r;

	tp_run_tagplan(&r, m, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	/* 2 blocks of 12*h^2+13*h parameters + embeddings + head + norms */
	ck_assert_ptr_nonnull(strstr(r.out, "\"parameters\": 91254784,"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"forward_flop_per_sample\": "
					    "61602398208,"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"sequence_length\": 512,"));
	tp_run_free(&r);
	tp_run_tagplan(&r, t, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\"devices\": 16,"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"GTX-1080-Ti\": 8"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"V100-SXM2-32GB\": 4"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"P100-PCIe-12GB\": 4"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"nodes\": 7,"));
	tp_run_free(&r);
	tp_run_tagplan(&r, p, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\"groups\": 2,"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"devices_used\": 4,"));
	tp_run_free(&r);
	tp_run_tagplan(&r, bad, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}
END_TEST

Suite *suite_io(void)
{
	Suite *s = suite_create("io");
	TCase *t = tcase_create("json");
	TCase *l = tcase_create("loaders");
	TCase *c = tcase_create("commands");

	tcase_add_test(t, test_json_syntax_positions);
	tcase_add_test(t, test_json_what_cjson_accepts);
	tcase_add_test(t, test_json_error_places);
	tcase_add_test(t, test_json_positions_and_long_numbers);
	tcase_add_test(t, test_json_values_and_unicode);
	tcase_add_test(t, test_json_deep_nesting);
	tcase_add_test(t, test_json_size_limit_and_many_keys);
	tcase_add_test(t, test_sha256_vectors);
	suite_add_tcase(s, t);
	tcase_add_test(l, test_model_roundtrip);
	tcase_add_test(l, test_model_defaults);
	tcase_add_test(l, test_topology_roundtrip);
	tcase_add_test(l, test_topology_write_groups);
	tcase_add_test(l, test_topology_structure);
	tcase_add_test(l, test_builtin_devices);
	tcase_add_test(l, test_semantic_errors);
	tcase_add_test(l, test_plan_roundtrip);
	tcase_add_test(l, test_plan_structural);
	tcase_add_test(l, test_report_roundtrip);
	tcase_add_test(l, test_format_detect);
	tcase_add_test(l, test_atomic_write);
	tcase_add_test(l, test_file_read);
	suite_add_tcase(s, l);
	tcase_set_timeout(c, 60);
	/* test_topology_write_groups compares the routes of 512 devices
	   (0.8 s of CPU): past Check's 4 s under a load of 15 on 2 cores */
	tcase_set_timeout(l, 60);
	tcase_add_test(c, test_bad_corpus);
	tcase_add_test(c, test_good_files_validate);
	tcase_add_test(c, test_validate_stdin_deep_and_usage);
	tcase_add_test(c, test_inspect);
	suite_add_tcase(s, c);
	return s;
}
