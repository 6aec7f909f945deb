/*
 * export_deepspeed.c - a DeepSpeed config for Megatron-DeepSpeed, and its
 * launch line (TP_EXPORT_LAUNCH) in the notes.
 *
 * Config keys (deepspeed/runtime/constants.py and zero/config.py,
 * DeepSpeed 0.6 .. 0.16), only those the engine reads:
 *   train_batch_size, train_micro_batch_size_per_gpu,
 *   gradient_accumulation_steps (integers);
 *   zero_optimization: stage (0..3), overlap_comm (bool),
 *   reduce_bucket_size (elements);
 *   bf16: enabled, fp16: enabled (bool);
 *   activation_checkpointing: partition_activations,
 *   contiguous_memory_optimization, cpu_checkpointing (bool; read by
 *   deepspeed.checkpointing.configure, which Megatron-DeepSpeed calls).
 * Pipelining is not configured here: the "pipeline" section's "stages"
 * and "partition" are not read by the engine; Megatron-DeepSpeed builds
 * its PipelineModule from --pipeline-model-parallel-size (num_stages)
 * with partition_method "type:transformer" (equal transformer layers per
 * stage) and activation_checkpoint_interval from --checkpoint-
 * activations.
 */
#include <stdio.h>
#include <string.h>

#include "core/jsonw.h"
#include "export_int.h"

enum tp_status tp_export_write_deepspeed(const struct tp_export_spec *s,
					 struct tp_strbuf *out,
					 struct tp_strbuf *notes,
					 struct tp_error *err)
{
	struct tp_jw jw;

	if (s->pp > 1 && s->schedule == TP_SCHEDULE_INTERLEAVED)
		return tp_export_refuse(
		    err,
		    "the interleaved schedule (%u chunks per stage): "
		    "DeepSpeed's pipeline engine runs one chunk per stage",
		    s->virtual_stages);
	if (s->pp > 1 && s->schedule == TP_SCHEDULE_GPIPE)
		return tp_export_refuse(
		    err, "the GPipe schedule: DeepSpeed's pipeline "
			 "engine runs 1F1B");
	if (s->pp > 1 && s->zero >= 2)
		return tp_export_refuse(
		    err,
		    "ZeRO stage %u with %u pipeline stages: DeepSpeed's "
		    "pipeline engine supports ZeRO-1 at most",
		    s->zero, s->pp);
	if (s->pp > 1 && s->layout != TP_LAYOUT_EVEN)
		return tp_export_refuse(
		    err, "pipeline stages of unequal layer counts: "
			 "Megatron-DeepSpeed partitions transformer layers "
			 "evenly");
	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_int(&jw, "train_batch_size", s->global_batch);
	tp_jw_kv_int(&jw, "train_micro_batch_size_per_gpu", s->micro_batch);
	tp_jw_kv_int(&jw, "gradient_accumulation_steps", s->micro_batches);
	tp_jw_key(&jw, "zero_optimization");
	tp_jw_object_begin(&jw);
	tp_jw_kv_int(&jw, "stage", s->zero);
	tp_jw_kv_bool(&jw, "overlap_comm", s->rt.behaviour.dp_overlap);
	tp_jw_kv_int(&jw, "reduce_bucket_size",
		     (int64_t)tp_export_bucket_elements(s));
	tp_jw_object_end(&jw);
	if (s->run_dtype != TP_DTYPE_FP32) {
		tp_jw_key(&jw, s->run_dtype == TP_DTYPE_FP16 ? "fp16" : "bf16");
		tp_jw_object_begin(&jw);
		tp_jw_kv_bool(&jw, "enabled", true);
		tp_jw_object_end(&jw);
	}
	if (s->recompute == TP_RECOMPUTE_FULL) {
		tp_jw_key(&jw, "activation_checkpointing");
		tp_jw_object_begin(&jw);
		tp_jw_kv_bool(&jw, "partition_activations", s->tp > 1);
		tp_jw_kv_bool(&jw, "contiguous_memory_optimization", false);
		tp_jw_kv_bool(&jw, "cpu_checkpointing", false);
		tp_jw_object_end(&jw);
	}
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
	if (notes) {
		struct tp_strbuf a;
		tp_strbuf_init(&a);
		tp_export_megatron_args(s, MEGATRON_DEEPSPEED, " ", &a, notes);
		if (a.len && a.buf[a.len - 1] == ' ')
			a.buf[--a.len] = '\0';
		tp_strbuf_addf(notes,
			       TP_EXPORT_LAUNCH
			       "deepspeed pretrain_gpt.py %s --deepspeed "
			       "--deepspeed_config ",
			       tp_strbuf_cstr(&a));
		tp_strbuf_add_shell_word(
		    notes, s->config_path ? s->config_path : "ds_config.json");
		tp_strbuf_addc(notes, '\n');
		tp_strbuf_release(&a);
	}
	tp_export_note_common(s, false, notes);
	return TP_OK;
}
