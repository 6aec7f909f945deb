/*
 * export_int.h - what the export targets share (export.c): refusals,
 * the Megatron argument list (Megatron-LM, torchrun, the DeepSpeed launch
 * line), notes.  Not for use outside src/export/.
 */
#ifndef TP_EXPORT_INT_H
#define TP_EXPORT_INT_H

#include "export.h"

enum tp_status tp_export_refuse(struct tp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Which argument names a Megatron runtime takes. */
enum megatron_flavour {
	MEGATRON_CORE,	   /* Megatron-LM with Megatron-Core, core_r0.9+ */
	MEGATRON_LEGACY,   /* Megatron-LM v2.x / v3.0 (2021-2022) */
	MEGATRON_DEEPSPEED /* Megatron-DeepSpeed (its main branch, 2023-24) */
};

/* The runtime's flavour by its name (megatron-lm-* legacy, deepspeed
 * Megatron-DeepSpeed, everything else Megatron-Core). */
enum megatron_flavour tp_export_flavour(const struct tp_export_spec *s);

/* Megatron arguments, each followed by sep; what they cannot say goes to
 * notes (may be NULL). */
void tp_export_megatron_args(const struct tp_export_spec *s,
			     enum megatron_flavour f, const char *sep,
			     struct tp_strbuf *out, struct tp_strbuf *notes);
/* What a Megatron-based target cannot run (ZeRO > 1, GPipe, no layers). */
enum tp_status tp_export_megatron_limits(const struct tp_export_spec *s,
					 struct tp_error *err);
/* Notes every target gives: data parallelism, device types, precision,
 * the ranks' nodes when they are not the topology's order (a warning
 * unless ranks_in_output: the output itself maps NODE_RANK to the
 * devices, as torchrun's script does; else the user must start the
 * nodes so, or the ranks land elsewhere than simulated). */
void tp_export_note_common(const struct tp_export_spec *s,
			   bool ranks_in_output, struct tp_strbuf *notes);

enum tp_status tp_export_write_deepspeed(const struct tp_export_spec *s,
					 struct tp_strbuf *out,
					 struct tp_strbuf *notes,
					 struct tp_error *err);
enum tp_status tp_export_write_torchtitan(const struct tp_export_spec *s,
					  struct tp_strbuf *out,
					  struct tp_strbuf *notes,
					  struct tp_error *err);

#endif
