/*
 * runtime.c - what a runtime profile's behaviour (core/runtime.h) sets in
 * the simulator's cost model (sim.h tp_sim_params_runtime).
 */
#include <string.h>

#include "core/runtime.h"
#include "sim.h"

void tp_sim_params_runtime(struct tp_sim_params *p,
			   const struct tp_runtime *rt)
{
	const struct tp_runtime_behaviour *b = &rt->behaviour;

	if (strcmp(rt->name, "none") == 0)
		return;
	p->overlap_grad_sync = b->dp_overlap;
	p->overlap_grad_sync_pipeline = b->dp_overlap_pipeline;
	p->p2p_blocking = !b->p2p_async;
	p->tp_overlap = b->tp_overlap;
	p->fused_attention = b->fused_attention;
	p->tf32 = b->tf32;
	if (b->grad_bucket_bytes > 0)
		p->grad_bucket_bytes = b->grad_bucket_bytes;
	if (rt->calibration.present) {
		p->gemm_sustained = rt->calibration.gemm_sustained;
		p->link_eff_intra = rt->calibration.link_eff_intra;
		p->link_eff_network = rt->calibration.link_eff_network;
	}
}
