/*
 * runtime.c - what a runtime profile's behaviour (core/runtime.h) sets in
 * the simulator's cost model (sim.h tp_sim_params_runtime).
 */
#include <stdio.h>
#include <string.h>

#include "core/runtime.h"
#include "sim.h"

void tp_sim_params_drop_fitted(struct tp_sim_params *p)
{
	p->nic_cap_Bps = 0;
	p->p2p_cap_Bps = 0;
	p->p2p_eager_bytes = 0;
	p->cuda_core_gemm_eff = 0;
	p->hopper_gemm_scale = 0;
	p->tp_node_rings = 0;
}

void tp_sim_params_runtime(struct tp_sim_params *p,
			   const struct tp_runtime *rt)
{
	const struct tp_runtime_behaviour *b = &rt->behaviour;

	if (strcmp(rt->name, "none") == 0)
		return;
	snprintf(p->basis.runtime, sizeof(p->basis.runtime), "%s", rt->name);
	if (rt->validation.present) {
		p->basis.validation_mean_error = rt->validation.mean_error;
		p->basis.validation_max_error = rt->validation.max_error;
		p->basis.validation_runs = rt->validation.runs;
		p->basis.validation_runtime = true;
	}
	p->overlap_grad_sync = b->dp_overlap;
	p->overlap_grad_sync_pipeline = b->dp_overlap_pipeline;
	p->p2p_blocking = !b->p2p_async;
	p->tp_overlap = b->tp_overlap;
	p->fused_attention = b->fused_attention;
	p->tf32 = b->tf32;
	p->grad_reduce_fp32 = b->grad_reduce == TP_GRAD_REDUCE_FP32;
	p->grad_buffer_fp32 = b->grad_buffer == TP_GRAD_REDUCE_FP32;
	p->winograd = b->winograd;
	p->conv_nchw = b->conv_nchw;
	p->grad_bucket_copy = b->grad_bucket_copy;
	p->attention_kernel = b->attention_kernel;
	p->gemm_shape_half = b->gemm_shape_half;
	p->nic_cap_Bps = b->nic_socket_Bps;
	p->p2p_cap_Bps = b->p2p_socket_Bps;
	p->p2p_eager_bytes = b->p2p_socket_eager_bytes;
	p->cuda_core_gemm_eff = b->cuda_core_gemm_eff;
	p->hopper_gemm_scale = b->hopper_gemm_scale;
	p->tp_node_rings = b->tp_node_rings;
	if (b->grad_bucket_bytes > 0)
		p->grad_bucket_bytes = b->grad_bucket_bytes;
	if (b->expert_imbalance >= 1)
		p->expert_imbalance = b->expert_imbalance;
	if (b->prefetch_depth >= 0)
		p->prefetch_depth = b->prefetch_depth;
	p->ep_node_forward = b->ep_node_forward;
	p->ep_dispatch_fp8 = b->ep_dispatch_fp8;
	p->ep_overlap = b->ep_overlap;
	p->comm_sm_share = b->comm_sm_share;
	p->cp_all_gather = b->cp_all_gather;
	if (rt->calibration.present) {
		p->gemm_sustained = rt->calibration.gemm_sustained;
		p->link_eff_intra = rt->calibration.link_eff_intra;
		p->link_eff_network = rt->calibration.link_eff_network;
		if (rt->calibration.gemm_shape_half > 0)
			p->gemm_shape_half = rt->calibration.gemm_shape_half;
		if (rt->calibration.nic_socket_Bps > 0)
			p->nic_cap_Bps = rt->calibration.nic_socket_Bps;
		if (rt->calibration.tp_node_rings > 0)
			p->tp_node_rings = rt->calibration.tp_node_rings;
		if (rt->calibration.p2p_socket_Bps > 0)
			p->p2p_cap_Bps = rt->calibration.p2p_socket_Bps;
		if (rt->calibration.cuda_core_gemm_eff > 0)
			p->cuda_core_gemm_eff =
			    rt->calibration.cuda_core_gemm_eff;
		if (rt->calibration.hopper_gemm_scale > 0)
			p->hopper_gemm_scale =
			    rt->calibration.hopper_gemm_scale;
		p->basis.calibrated = true;
		snprintf(p->basis.fitted_on, sizeof(p->basis.fitted_on), "%s",
			 rt->calibration.fitted_on);
		p->basis.runs = rt->calibration.runs;
		p->basis.holdout_runs = rt->calibration.holdout_runs;
		p->basis.fit_error = rt->calibration.fit_error;
		p->basis.holdout_error = rt->calibration.holdout_error;
		p->basis.validation_mean_error = 0;
		p->basis.validation_max_error = 0;
		p->basis.validation_runs = 0;
		p->basis.validation_runtime = false;
	}
}
