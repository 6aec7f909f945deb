/*
 * cost.c - the cost of one lane (one data-parallel replica of one group):
 * op times on its ranks' device types (the formulas of core/cost.h, or
 * the model's profiles), tensor-parallel collectives, memory; and the
 * accumulation of flows into bundles, with the caches that keep lane
 * costs and ring flows across runs.  Formulas and constants:
 * src/sim/README.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

bool tp_sim_hopper_type(const char *name)
{
	return strncmp(name, "H100", 4) == 0 || strncmp(name, "H200", 4) == 0 ||
	       strncmp(name, "H800", 4) == 0 || strncmp(name, "GH200", 5) == 0;
}

/* An A100 (or its export version A800), the GPU FlashAttention-2's
 * figures were measured on. */
static bool ampere_type(const char *name)
{
	return strncmp(name, "A100", 4) == 0 || strncmp(name, "A800", 4) == 0;
}

/* The published efficiency of the runtime's attention kernel on type
 * name, forward *f and backward *b, as fractions of the 16-bit peak
 * (sim.h TP_SIM_ATTN_*); false for a kernel or a GPU without a figure
 * (the GEMM curve then). */
static bool attn_kernel_eff(enum tp_attn_kernel k, const char *name,
			    double *f, double *b)
{
	bool hopper = tp_sim_hopper_type(name);

	if (k == TP_ATTN_KERNEL_GEMM || (!hopper && !ampere_type(name)))
		return false;
	if (k == TP_ATTN_KERNEL_FA3 && hopper) {
		*f = TP_SIM_ATTN_FA3_HOPPER_FWD;
		*b = TP_SIM_ATTN_FA2_HOPPER * TP_SIM_ATTN_FA3_BWD_GAIN;
		return true;
	}
	*f = hopper ? TP_SIM_ATTN_FA2_HOPPER : TP_SIM_ATTN_FA2_A100_FWD;
	*b = hopper ? TP_SIM_ATTN_FA2_HOPPER : TP_SIM_ATTN_FA2_A100_BWD;
	if (k == TP_ATTN_KERNEL_TRITON) {
		*f /= TP_SIM_ATTN_TRITON_SLOWDOWN;
		*b /= TP_SIM_ATTN_TRITON_SLOWDOWN;
	}
	return true;
}

double tp_sim_causal_share(const struct tp_model *m)
{
	double n;

	if (m->arch.stack != TP_STACK_DECODER || m->arch.window > 0 ||
	    m->seq_len <= 0)
		return 1;
	n = ceil((double)m->seq_len / TP_SIM_ATTN_TILE);
	return (n + 1) / (2 * n);
}

/* Fused attention (fused_attention: FlashAttention, cuDNN/Transformer
 * Engine fused kernels): one kernel per pass at the roofline of the
 * GEMM rate and the memory traffic of its inputs and output only (Q, K,
 * V read, O written; the scores stay on chip), the backward recomputing
 * the scores: 5 of the forward's 2 GEMMs, 2.5x its FLOP (Dao 2023,
 * FlashAttention-2, section 3.1.2), reading Q, K, V, O, dO and writing
 * dQ, dK, dV.  A causal decoder's kernels do tp_sim_causal_share of the
 * FLOP.  The runtime's attention_kernel sets the efficiency on A100 and
 * Hopper types (its published figure x gemm_sustained, in place of the
 * GEMM's); the rate is the 16-bit peak also for an fp8 model
 * (Transformer Engine keeps attention in BF16 unless fp8_dpa). */
static void fused_attention_s(const struct tp_sim *sim, uint32_t o,
			      uint32_t ty, double samples, double div,
			      double wdiv, double *fwd, double *bwd)
{
	const struct tp_op *op = &sim->m->ops.v[o];
	struct tp_cost_device hd = sim->dev[ty];
	double io = (sim->in_bytes[o] + op->out_bytes) * samples / div;
	double w = op->param_bytes / wdiv;
	double f = op->flop * samples / div * tp_sim_causal_share(sim->m);
	double ef, eb, base = hd.gemm_eff;
	double gs = sim->o.params.gemm_sustained > 0
			    ? sim->o.params.gemm_sustained
			    : 1;
	bool pub = attn_kernel_eff(sim->o.params.attention_kernel,
				   sim->c->types.v[ty].name, &ef, &eb);

	hd.peak = hd.peak_hi;
	if (pub)
		hd.gemm_eff = ef * gs;
	*fwd = tp_cost_kernel_s(&hd, TP_OP_MATMUL, f, io + w, 1);
	hd.gemm_eff = pub ? eb * gs : base;
	*bwd = tp_cost_kernel_s(&hd, TP_OP_MATMUL, 2.5 * f,
				2 * io + op->out_bytes * samples / div +
					2 * w,
				1);
}

/* The activation bytes per sample op o keeps for its backward: its
 * saved_bytes, none for a fused attention (FlashAttention keeps only the
 * softmax statistics, 4 bytes per head and query: under 2% of one hidden
 * state; its inputs and output are kept by the ops around it). */
static double op_saved_bytes(const struct tp_sim *sim, uint32_t o)
{
	const struct tp_op *op = &sim->m->ops.v[o];

	if (op->kind == TP_OP_ATTENTION && sim->o.params.fused_attention)
		return 0;
	return op->saved_bytes;
}

/* cuDNN's Winograd convolution (runtime behaviour winograd): a stride-1
 * 3 x 3 convolution running on CUDA cores (its dtype's GEMM rate is the
 * vector rate: fp32 without TF32) does 1 / TP_SIM_WINOGRAD_GAIN of its
 * FLOP.  The kernel is not on the op: per output pixel (tokens = flop /
 * (2 params)) it reads k = params / n inputs, n = outputs per pixel; its
 * input holds c = bytes in / (bytes per element x pixels) channels per
 * output pixel, so k / c = kh x kw for stride 1 (a stride-2 op's input
 * has 4 x the pixels: k / c = 2.25, not 9). */
static bool winograd_conv(const struct tp_sim *sim, uint32_t o, uint32_t ty)
{
	const struct tp_op *op = &sim->m->ops.v[o];
	const struct tp_cost_device *d = &sim->dev[ty];
	double B = d->elem_bytes, P, tok, n, c;

	if (!sim->o.params.winograd || op->kind != TP_OP_CONV ||
	    !(op->param_bytes > 0) || !(op->flop > 0) ||
	    !(op->out_bytes > 0) || !(sim->in_bytes[o] > 0) || !(B > 0) ||
	    d->peak > d->peak_vec)
		return false;
	P = op->param_bytes / B;
	tok = op->flop / (2 * P);
	n = op->out_bytes / B / tok;
	c = sim->in_bytes[o] / B / tok;
	return fabs(P / n / c - 9) < 0.05;
}

/* cuDNN's layout transposes of a convolution in NCHW on tensor cores
 * (runtime behaviour memory_format nchw; the type's GEMM rate for the
 * model's dtype above its vector rate: fp16, bf16, TF32): tensor-core
 * convolutions run in NHWC, so cuDNN transposes the NCHW input to NHWC
 * and the output back, each one read and one write, as two kernels; the
 * backward transposes the tensors its data- and weight-gradient kernels
 * read and write, backward_mem_factor times the forward's, as twice the
 * kernels (README section 2).  Adds to *fwd and *bwd. */
static void nchw_transposes(const struct tp_sim *sim, uint32_t o,
			    uint32_t ty, double samples, double div,
			    double *fwd, double *bwd)
{
	const struct tp_op *op = &sim->m->ops.v[o];
	const struct tp_cost_device *d = &sim->dev[ty];
	double bytes;

	if (!sim->o.params.conv_nchw || op->kind != TP_OP_CONV ||
	    !(d->peak > d->peak_vec))
		return;
	bytes = 2 * (sim->in_bytes[o] + op->out_bytes) * samples / div;
	*fwd += tp_cost_kernel_s(d, TP_OP_ELEMENTWISE, 0, bytes, 2);
	*bwd += tp_cost_kernel_s(d, TP_OP_ELEMENTWISE, 0,
				 sim->o.params.backward_mem_factor * bytes, 4);
}

/*
 * Transformer Engine's FP8 casts (fp8 models; TE's Linear and
 * LayerNormLinear, transformer_engine/pytorch/module/linear.py and
 * layernorm_linear.py, delayed scaling).  Forward: the GEMM's 16-bit
 * input becomes E4M3 plus the transposed copy the weight-gradient GEMM
 * reads; one fused cast-transpose kernel reads 2 bytes and writes 1 + 1
 * per element (twice the input's 16-bit bytes), or, where a norm feeds
 * the GEMM (LayerNormLinear: the norm kernel writes E4M3 itself), a
 * transpose reading and writing 1 byte per element (the input's bytes
 * once).  Backward: the output gradient to E5M2 and its transpose, one
 * cast-transpose kernel, twice its bytes.  Memory bound, one kernel each.
 * The amax of each is reduced inside these kernels; the amax history and
 * scales are updated once per step for all tensors together (not
 * priced); the weights are cast once per step, in the optimizer step
 * (core/cost.c fp8_weight_cache).  Matmuls with weights except the LM
 * head (bf16 under fp8); activations divided by div, as the op's own.
 */
static void fp8_casts(const struct tp_sim *sim, uint32_t o, uint32_t ty,
		      double samples, double div, double *fwd, double *bwd)
{
	const struct tp_model *m = sim->m;
	const struct tp_op *op = &m->ops.v[o];
	const struct tp_cost_device *d = &sim->dev[ty];
	const uint32_t *in = tp_model_in_edges(m, o);
	double k = 2;

	if (m->dtype != TP_DTYPE_FP8 || op->kind != TP_OP_MATMUL ||
	    !(op->param_bytes > 0) || op->tp_split == TP_SPLIT_VOCAB)
		return;
	for (uint32_t e = 0; e < op->n_in; e++)
		if (m->ops.v[m->edges.v[in[e]].src].kind == TP_OP_NORM)
			k = 1;
	*fwd += tp_cost_kernel_s(d, TP_OP_ELEMENTWISE, 0,
				 k * sim->in_bytes[o] * samples / div, 1);
	*bwd += tp_cost_kernel_s(d, TP_OP_ELEMENTWISE, 0,
				 2 * op->out_bytes * samples / div, 1);
}

/* Forward and backward seconds of op on type ty for `samples` samples in
 * a lane of tp ranks, FLOP and activations divided by div, weights by
 * wdiv: the model's profile table for the type (core/profile.h; *pa
 * then holds its optional figures), else core/cost.h's op time
 * (pa->how TP_PROFILE_NONE;
 * fused attention: fused_attention_s). */
static void op_times(const struct tp_sim *sim, uint32_t o, uint32_t ty,
		     double samples, uint32_t tp, double div, double wdiv,
		     struct tp_profile_at *pa)
{
	const struct tp_op *op = &sim->m->ops.v[o];
	uint32_t n;
	const uint32_t *tab = TP_SIM_PROF(sim, o, ty, &n);

	if (op->kind == TP_OP_INPUT) {
		memset(pa, 0, sizeof(*pa));
		return;
	}
	if (tab) {
		tp_profile_eval(sim->m, tab, n, samples, tp, div > 1, pa);
		return;
	}
	memset(pa, 0, sizeof(*pa));
	if (op->kind == TP_OP_ATTENTION && sim->o.params.fused_attention) {
		fused_attention_s(sim, o, ty, samples, div, wdiv,
				  &pa->forward_s, &pa->backward_s);
		return;
	}
	if (winograd_conv(sim, o, ty)) {
		struct tp_op w = *op;
		w.flop /= TP_SIM_WINOGRAD_GAIN;
		w.backward_flop /= TP_SIM_WINOGRAD_GAIN;
		op = &w;
		tp_cost_op_s(&sim->dev[ty], op, samples, div, wdiv,
			     sim->o.params.backward_mem_factor,
			     &pa->forward_s, &pa->backward_s);
		return;
	}
	tp_cost_op_s(&sim->dev[ty], op, samples, div, wdiv,
		     sim->o.params.backward_mem_factor, &pa->forward_s,
		     &pa->backward_s);
	nchw_transposes(sim, o, ty, samples, div, &pa->forward_s,
			&pa->backward_s);
	fp8_casts(sim, o, ty, samples, div, &pa->forward_s, &pa->backward_s);
}

/* One flow src -> dst into channel counts cnt (touched: the channels in
 * first-touch order), a flow count and the largest route latency. */
static inline void count_flow(struct tp_sim_scratch *s, uint32_t src,
			      uint32_t dst, uint32_t *cnt,
			      struct chanvec *touched, uint32_t *flows,
			      double *latency)
{
	struct tp_route r;

	if (src == dst)
		return;
	tp_cluster_route(s->sim->c, src, dst, &r);
	for (uint32_t k = 0; k < r.n; k++) {
		uint32_t x = r.ch[k];
		if (cnt[x]++ == 0 && tp_vec_push(touched, x))
			s->acc_oom = true;
	}
	(*flows)++;
	if (r.latency_s > *latency)
		*latency = r.latency_s;
}

void tp_sim_acc_flow(struct tp_sim_scratch *s, uint32_t src, uint32_t dst)
{
	count_flow(s, src, dst, s->cnt, &s->touched, &s->acc_flows,
		   &s->acc_latency);
}

/* One flow of a ring into the ring recorder (cnt2 / touched2: channel
 * counts in first-touch order). */
static void ring_flow(struct tp_sim_scratch *s, uint32_t src, uint32_t dst)
{
	count_flow(s, src, dst, s->cnt2, &s->touched2, &s->flows2, &s->lat2);
}

/* Bottleneck bandwidth of the hops of a one-node ring: the routes' of
 * consecutive members of ord[0..n) and back. */
#define RING_ORDER_MAX 8

struct ring_order {
	double bw[RING_ORDER_MAX][RING_ORDER_MAX];
	uint32_t n, cur[RING_ORDER_MAX], best[RING_ORDER_MAX];
	bool used[RING_ORDER_MAX];
	double best_min;
};

/* Depth-first over the orders that start at member 0: extend cur[0..at)
 * (whose slowest hop is lo) by every unused member, pruning a prefix that
 * is already no faster than the best ring found. */
static void ring_order_dfs(struct ring_order *r, uint32_t at, double lo)
{
	if (at == r->n) {
		double m = fmin(lo, r->bw[r->cur[at - 1]][r->cur[0]]);
		if (m > r->best_min) {
			r->best_min = m;
			memcpy(r->best, r->cur, sizeof(r->best));
		}
		return;
	}
	for (uint32_t x = 1; x < r->n; x++) {
		double m;
		if (r->used[x])
			continue;
		m = fmin(lo, r->bw[r->cur[at - 1]][x]);
		if (!(m > r->best_min))
			continue;
		r->used[x] = true;
		r->cur[at] = x;
		ring_order_dfs(r, at + 1, m);
		r->used[x] = false;
	}
}

/*
 * NCCL's ring order inside a node: its topology search picks the ring
 * whose slowest hop is fastest (on a DGX-1 / p3.16xlarge hybrid cube
 * mesh, 0-3-2-1-5-6-7-4 is all NVLink where device order crosses PCIe at
 * 3-4 and 7-0).  Reorders p[0..n) (one node's members, 3 <= n <= 8) for
 * the largest slowest hop, device order when no order is faster (a
 * uniform fabric: NVSwitch, PCIe).  At most 7! orders, once per device
 * list (the ring cache).
 */
static void ring_order(const struct tp_cluster *c, uint32_t *p, uint32_t n)
{
	struct ring_order r;
	uint32_t tmp[RING_ORDER_MAX];
	double top = 0;

	if (n < 3 || n > RING_ORDER_MAX)
		return;
	memset(&r, 0, sizeof(r));
	r.n = n;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			struct tp_route rt;
			if (i == j)
				continue;
			tp_cluster_route(c, p[i], p[j], &rt);
			r.bw[i][j] = rt.bw_Bps;
			top = fmax(top, rt.bw_Bps);
		}
	r.best_min = r.bw[n - 1][0];
	for (uint32_t i = 0; i + 1 < n; i++)
		r.best_min = fmin(r.best_min, r.bw[i][i + 1]);
	if (!(r.best_min < top))
		return; /* device order already has only the fastest hops */
	for (uint32_t i = 0; i < n; i++)
		r.best[i] = i;
	r.cur[0] = 0;
	r.used[0] = true;
	ring_order_dfs(&r, 1, INFINITY);
	for (uint32_t i = 0; i < n; i++)
		tmp[i] = p[r.best[i]];
	memcpy(p, tmp, n * sizeof(*p));
}

/* The rings' flows, recorded apart (ring_flow) so they can be cached. */
static int ring_flows(struct tp_sim_scratch *s, const uint32_t *devs,
		      uint32_t n, uint32_t *rings)
{
	const struct tp_cluster *c = s->sim->c;
	uint32_t *p, nodes = 0, maxrun = 0, nr;

	*rings = 1;
	if (n < 2)
		return 0;
	s->tmp3.n = 0;
	if (tp_vec_reserve(&s->tmp3, 2 * (size_t)n + 2))
		return -1;
	p = s->tmp3.v;
	memcpy(p, devs, n * sizeof(*p));
	if (!sorted_u32(p, n))
		qsort(p, n, sizeof(*p), cmp_u32);
	/* runs of one node: start offsets in p[n..] */
	{
		uint32_t *start = p + n, run = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (i == 0 || c->devices.v[p[i]].node !=
					      c->devices.v[p[i - 1]].node) {
				start[nodes++] = i;
				run = 0;
			}
			run++;
			if (run > maxrun)
				maxrun = run;
		}
		start[nodes] = n;
	}
	nr = nodes > 1 ? maxrun : 1;
	if (nodes == 1)
		ring_order(c, p, n);
	for (uint32_t j = 0; j < nr; j++) {
		uint32_t first = TP_NONE, prev = TP_NONE;
		for (uint32_t q = 0; q < nodes; q++) {
			uint32_t a = p[n + q], l = p[n + q + 1] - a;
			for (uint32_t x = 0; x < l; x++) {
				uint32_t d = p[a + (j + x) % l];
				if (prev == TP_NONE)
					first = d;
				else
					ring_flow(s, prev, d);
				prev = d;
			}
		}
		ring_flow(s, prev, first);
	}
	*rings = nr;
	return 0;
}

#define RG_MAX_ENTRIES (1u << 14)
#define RG_MAX_ENTS (1u << 22)

/* Add a recorded ring to the accumulation: what tp_sim_acc_flow would
 * have done flow by flow (the same channels in the same first-touch
 * order, the same counts, flows and latency). */
/* Add the kept entries rg_ents[first .. first + n_ent) to the
 * accumulation (indices, not a pointer: with no entries the vector may be
 * unallocated, and NULL + 0 is undefined; found by fuzz_pipeline). */
static void ring_apply(struct tp_sim_scratch *s, uint32_t first,
		       uint32_t n_ent, uint32_t flows, double latency)
{
	for (uint32_t k = 0; k < n_ent; k++) {
		const struct bent *e = &s->rg_ents.v[first + k];
		uint32_t x = e->chan;
		if (s->cnt[x] == 0 && tp_vec_push(&s->touched, x))
			s->acc_oom = true;
		s->cnt[x] += e->count;
	}
	s->acc_flows += flows;
	if (latency > s->acc_latency)
		s->acc_latency = latency;
}

static uint64_t rg_hash(const uint32_t *devs, uint32_t n)
{
	uint64_t h = 0x13198a2e03707344ull;

	for (uint32_t i = 0; i < n; i++) {
		h ^= devs[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		h *= 0xff51afd7ed558ccdull;
	}
	return h ^ n;
}

/*
 * Flows of NCCL-style rings over devs: participants ordered by node (device
 * indices are grouped by node); with several nodes, as many rings as the
 * most participants any node has, ring j entering each node at its j-th
 * member, so every member's NIC carries one ring (as NCCL's channels do).
 * Cached per scratch by device list (routes do not change).  Returns -1
 * on allocation failure; *rings gets the ring count.
 */
/* The cached accumulation of key[0..n) of the given kind (0: a ring over
 * a device list, 1: a list of (src, dst) device pairs), or NULL; *slot
 * gets where to insert it. */
static const struct rgentry *rg_find(struct tp_sim_scratch *s, uint32_t kind,
				     const uint32_t *key, uint32_t n,
				     uint64_t h, uint32_t *slot)
{
	uint32_t mask = s->rg_cap - 1, i;

	for (i = (uint32_t)(h ^ (h >> 32)) & mask; s->rg_tab[i] != TP_NONE;
	     i = (i + 1) & mask) {
		const struct rgentry *x = &s->rg.v[s->rg_tab[i]];
		if (x->h == h && x->n == n && x->kind == kind &&
		    memcmp(s->rg_devs.v + x->devs_first, key,
			   n * sizeof(*key)) == 0) {
			*slot = i;
			return x;
		}
	}
	*slot = i;
	return NULL;
}

static int rg_init(struct tp_sim_scratch *s)
{
	if (s->rg_tab)
		return 0;
	s->rg_cap = 2 * RG_MAX_ENTRIES;
	s->rg_tab = malloc(s->rg_cap * sizeof(uint32_t));
	if (!s->rg_tab) {
		s->rg_cap = 0;
		return -1;
	}
	for (uint32_t i = 0; i < s->rg_cap; i++)
		s->rg_tab[i] = TP_NONE;
	return 0;
}

static void rg_discard(struct tp_sim_scratch *s)
{
	for (size_t k = 0; k < s->touched2.n; k++)
		s->cnt2[s->touched2.v[k]] = 0;
	s->touched2.n = 0;
}

/* Keep the recorded flows (cnt2 / touched2) under key, then add them to
 * the accumulation. */
static int rg_keep(struct tp_sim_scratch *s, uint32_t kind,
		   const uint32_t *key, uint32_t n, uint64_t h, uint32_t slot,
		   uint32_t rings)
{
	struct rgentry e;

	if (s->acc_oom) {
		rg_discard(s);
		return -1;
	}
	if (s->rg.n >= RG_MAX_ENTRIES ||
	    s->rg_ents.n + s->touched2.n > RG_MAX_ENTS ||
	    s->rg_devs.n + n > RG_MAX_ENTS) {
		uint32_t mask = s->rg_cap - 1;
		s->rg.n = s->rg_devs.n = s->rg_ents.n = 0;
		for (uint32_t i = 0; i < s->rg_cap; i++)
			s->rg_tab[i] = TP_NONE;
		slot = (uint32_t)(h ^ (h >> 32)) & mask;
	}
	if (tp_vec_reserve(&s->rg, 1) || tp_vec_reserve(&s->rg_devs, n) ||
	    tp_vec_reserve(&s->rg_ents, s->touched2.n)) {
		rg_discard(s);
		return -1;
	}
	e.h = h;
	e.kind = kind;
	e.n = n;
	e.devs_first = (uint32_t)s->rg_devs.n;
	e.ent_first = (uint32_t)s->rg_ents.n;
	e.n_ent = (uint32_t)s->touched2.n;
	e.flows = s->flows2;
	e.rings = rings;
	e.latency = s->lat2;
	memcpy(s->rg_devs.v + s->rg_devs.n, key, n * sizeof(*key));
	s->rg_devs.n += n;
	for (size_t k = 0; k < s->touched2.n; k++) {
		uint32_t x = s->touched2.v[k];
		s->rg_ents.v[s->rg_ents.n++] = (struct bent){x, s->cnt2[x]};
		s->cnt2[x] = 0;
	}
	s->touched2.n = 0;
	s->rg_tab[slot] = (uint32_t)s->rg.n;
	s->rg.v[s->rg.n++] = e;
	ring_apply(s, e.ent_first, e.n_ent, e.flows, e.latency);
	return 0;
}

/*
 * Flows of NCCL-style rings over devs: participants ordered by node (device
 * indices are grouped by node); with several nodes, as many rings as the
 * most participants any node has, ring j entering each node at its j-th
 * member, so every member's NIC carries one ring (as NCCL's channels do).
 * Cached per scratch by device list (routes do not change).  Returns -1
 * on allocation failure; *rings gets the ring count.
 */
int tp_sim_acc_ring(struct tp_sim_scratch *s, const uint32_t *devs,
		    uint32_t n, uint32_t *rings)
{
	const struct rgentry *x;
	uint64_t h;
	uint32_t slot;

	*rings = 1;
	if (n < 2)
		return 0;
	if (rg_init(s))
		return -1;
	h = rg_hash(devs, n);
	x = rg_find(s, 0, devs, n, h, &slot);
	if (x) {
		*rings = x->rings;
		ring_apply(s, x->ent_first, x->n_ent, x->flows,
			   x->latency);
		return 0;
	}
	/* record the rings apart, keep them, then add them */
	s->touched2.n = 0;
	s->flows2 = 0;
	s->lat2 = 0;
	if (ring_flows(s, devs, n, rings)) {
		rg_discard(s);
		return -1;
	}
	return rg_keep(s, 0, devs, n, h, slot, *rings);
}

int tp_sim_acc_pairs(struct tp_sim_scratch *s, const uint32_t *pairs,
		     uint32_t n_pairs)
{
	const struct rgentry *x;
	uint64_t h;
	uint32_t slot, n = 2 * n_pairs;

	if (n_pairs == 0)
		return 0;
	if (rg_init(s))
		return -1;
	h = rg_hash(pairs, n) ^ 0x5bd1e995u;
	x = rg_find(s, 1, pairs, n, h, &slot);
	if (x) {
		ring_apply(s, x->ent_first, x->n_ent, x->flows,
			   x->latency);
		return 0;
	}
	s->touched2.n = 0;
	s->flows2 = 0;
	s->lat2 = 0;
	for (uint32_t i = 0; i < n_pairs; i++)
		ring_flow(s, pairs[2 * i], pairs[2 * i + 1]);
	return rg_keep(s, 1, pairs, n, h, slot, 1);
}

int tp_sim_acc_emit(struct tp_sim_scratch *s, uint32_t *bt)
{
	struct btype b;
	double rate = INFINITY;

	*bt = TP_NONE;
	if (s->acc_oom) {
		/* a channel was not recorded: drop the accumulation */
		for (uint32_t ch = 0; ch < s->sim->n_chan; ch++)
			s->cnt[ch] = 0;
		s->touched.n = 0;
		s->acc_flows = 0;
		s->acc_oom = false;
		return -1;
	}
	if (s->acc_flows == 0) {
		s->acc_latency = 0;
		return 0;
	}
	if (tp_vec_reserve(&s->bents, s->touched.n) ||
	    tp_vec_reserve(&s->btypes, 1))
		return -1;
	b.ent_first = (uint32_t)s->bents.n;
	b.n_ent = (uint32_t)s->touched.n;
	b.cls_first = b.n_cls = 0;
	b.n_flows = s->acc_flows;
	b.latency = s->acc_latency;
	for (size_t k = 0; k < s->touched.n; k++) {
		uint32_t ch = s->touched.v[k];
		double r = s->sim->chan_bw[ch] / s->cnt[ch];
		if (r < rate)
			rate = r;
		s->bents.v[s->bents.n++] = (struct bent){ch, s->cnt[ch]};
		s->cnt[ch] = 0;
	}
	b.rate_alone = rate;
	b.rate_cap = INFINITY;
	b.moved = b.busy = b.since = 0;
	b.active = 0;
	s->touched.n = 0;
	s->acc_flows = 0;
	s->acc_latency = 0;
	*bt = (uint32_t)s->btypes.n;
	s->btypes.v[s->btypes.n++] = b;
	return 0;
}

void tp_sim_acc_measure(struct tp_sim_scratch *s, double *rate,
			double *latency)
{
	double r = INFINITY;

	for (size_t k = 0; k < s->touched.n; k++) {
		uint32_t ch = s->touched.v[k];
		double x = s->sim->chan_bw[ch] / s->cnt[ch];
		if (x < r)
			r = x;
		s->cnt[ch] = 0;
	}
	*rate = r;
	*latency = s->acc_latency;
	s->acc_oom = false; /* the rate may be optimistic after a failure */
	s->touched.n = 0;
	s->acc_flows = 0;
	s->acc_latency = 0;
}

double tp_sim_expert_load(const struct tp_sim *sim, const struct tp_plan *plan)
{
	double lf = plan->expert_imbalance > 0 ? plan->expert_imbalance
					       : sim->o.params.expert_imbalance;
	double cf = plan->expert_capacity_factor;

	if (!(lf >= 1))
		lf = 1;
	if (cf > 0 && cf < lf)
		lf = cf;
	return lf;
}

/* Tensor-parallel collective seconds of `bytes` (an all-reduce when ar,
 * NVLS where the lane has it; else a ring reduce-scatter or all-gather,
 * half the ring all-reduce). */
static double tp_coll(const struct lane *ln, double bytes, bool ar)
{
	return ar ? ln->ar_a + ln->ar_k * bytes
		  : (ln->tp_a + ln->tp_k * bytes) / 2;
}

/* The distinct device types of a lane's t ranks, in rank order, into
 * types[8] (the slowest rank sets the pace; beyond 8 distinct types in
 * one lane the first 8 do: no real tensor-parallel group is that
 * mixed). */
static uint32_t rank_types(const struct tp_sim *sim, const uint32_t *devs,
			   uint32_t t, uint32_t *types)
{
	uint32_t n_types = 0;

	for (uint32_t k = 0; k < t; k++) {
		uint32_t ty = sim->c->devices.v[devs[k]].type, j;
		for (j = 0; j < n_types; j++)
			if (types[j] == ty)
				break;
		if (j == n_types && n_types < 8)
			types[n_types++] = ty;
	}
	return n_types;
}

static void op_cost(const struct tp_sim *sim, const struct lane *ln,
		    uint32_t o, const uint32_t *types, uint32_t n_types,
		    bool sp, double b, struct op_cost *oc)
{
	const struct tp_op *op = &sim->m->ops.v[o];
	uint32_t t = ln->tp;
	double tpd = t, comm = -1;
	bool split = op->tp_split != TP_SPLIT_NONE && t > 1;
	double div = (split || sp) ? tpd : 1, wdiv = split ? tpd : 1;
	unsigned has = ~0u;

	memset(oc, 0, sizeof(*oc));
	for (uint32_t j = 0; j < n_types; j++) {
		struct tp_profile_at pa;
		op_times(sim, o, types[j], b, t, div, wdiv, &pa);
		if (pa.forward_s > oc->fw)
			oc->fw = pa.forward_s;
		if (pa.backward_s > oc->bw)
			oc->bw = pa.backward_s;
		/* a figure counts when every rank type measured it */
		has &= pa.how == TP_PROFILE_NONE ? 0 : pa.has;
		if (pa.tp_comm_s > comm)
			comm = pa.tp_comm_s;
		if (pa.optimizer_s > oc->opt_s)
			oc->opt_s = pa.optimizer_s;
		if (pa.activation_bytes > oc->act)
			oc->act = pa.activation_bytes;
	}
	oc->has = n_types ? has : 0;
	if (t > 1 && op->tp_split != TP_SPLIT_NONE &&
	    op->tp_split != TP_SPLIT_SHARDED) {
		bool row = op->tp_split == TP_SPLIT_ROW ||
			   (op->tp_split == TP_SPLIT_VOCAB &&
			    op->kind == TP_OP_EMBEDDING);
		double S = row ? op->out_bytes * b : sim->in_bytes[o] * b;
		if (row) {
			oc->fc = tp_coll(ln, S, !sp);
			oc->bc = sp ? tp_coll(ln, S, false) : 0;
		} else {
			oc->fc = sp ? tp_coll(ln, S, false) : 0;
			oc->bc = tp_coll(ln, S, !sp);
		}
		oc->S = S;
		/* tp_overlap: the input gradient's collective runs while the
		 * weight-gradient GEMM (half the backward) computes */
		if (sim->o.params.tp_overlap && op->param_bytes > 0) {
			double hid = oc->bw * TP_SIM_WGRAD_SHARE;
			oc->bc = oc->bc > hid ? oc->bc - hid : 0;
		}
	}
	/* a measured tensor-parallel time replaces the collective model's,
	 * split between the passes as the model splits it */
	if (t > 1 && (oc->has & TP_PROFILE_HAS_TP_COMM)) {
		double mod = oc->fc + oc->bc;
		if (mod > 0) {
			oc->fc = comm * oc->fc / mod;
			oc->bc = comm - oc->fc;
		} else {
			oc->fc = oc->bc = comm / 2;
		}
	}
}

/* A lane's sums over its group's ops. */
struct lane_sums {
	double f_comp, f_comm, b_comp, b_comm, rec, rec_comm, tp_S, params;
	/* profiled optimizer steps and the parameter bytes they cover */
	double opt_meas, params_meas;
	double act, act_full, maxout, maxw;
	/* the largest temporary of an attention op under cp_all_gather:
	 * its output and gradient, the gathered K and V and their
	 * full-length gradients (cp_gather_temp) */
	double cp_temp;
	/* the weight-gradient passes and what they keep (zb-h1) */
	double w_comp, act_w;
	/* expert parallelism: routed experts' parameter bytes per device,
	 * bytes dispatched + combined per device per micro-batch */
	double params_expert, ep_in, ep_out;
	/* per layer (in s->dtmp): saved bytes, of them selective ones,
	 * whether it has routed experts, parameter bytes per device */
	double *lay_saved, *lay_sel, *lay_ep, *lay_w;
	uint32_t *lay_list, n_lay, stamp0;
	enum tp_recompute rc; /* the group's recomputation */
	bool sp;              /* sequence parallelism (tp > 1) */
};

/* Activation memory and recomputation of op o in its layer: the layer's
 * saved bytes (for the working set while it is recomputed), its input
 * (tensors from outside the layer, once per producer: what full
 * recomputation keeps), and what recomputation adds to the backward. */
static void layer_op(const struct tp_sim *sim, struct tp_sim_scratch *s,
		     const struct lane *ln, uint32_t o, const struct op_cost *oc,
		     double saved, struct lane_sums *a)
{
	enum tp_recompute rc = a->rc;
	bool sp = a->sp;
	const struct tp_model *m = sim->m;
	const struct tp_op *op = &m->ops.v[o];
	uint32_t l = (uint32_t)op->layer;
	const uint32_t *in = tp_model_in_edges(m, o);
	double tpd = ln->tp, b = ln->samples;

	if (s->lay_mark[l] != a->stamp0) {
		s->lay_mark[l] = a->stamp0;
		a->lay_saved[l] = a->lay_sel[l] = a->lay_ep[l] = 0;
		a->lay_w[l] = 0;
		a->lay_list[a->n_lay++] = l;
	}
	a->lay_saved[l] += saved;
	if (sim->expert[o] >= 0)
		a->lay_ep[l] = 1;
	if (op->selective_recompute)
		a->lay_sel[l] += saved;
	for (uint32_t e = 0; e < op->n_in; e++) {
		const struct tp_edge *ed = &m->edges.v[in[e]];
		const struct tp_op *src = &m->ops.v[ed->src];
		if (src->layer == op->layer &&
		    s->op_group[ed->src] == ln->group)
			continue;
		if (s->op_mark[ed->src] == a->stamp0 + 1)
			continue;
		s->op_mark[ed->src] = a->stamp0 + 1;
		a->act_full += ed->bytes * b / (sp ? tpd : 1);
	}
	if (rc == TP_RECOMPUTE_FULL) {
		a->rec += oc->fw;
		a->rec_comm += oc->fc;
	} else if (rc == TP_RECOMPUTE_SELECTIVE && op->selective_recompute) {
		a->rec += oc->fw;
	} else {
		a->act += saved;
	}
}

/* Model state per device (ZeRO-sharded) and the optimizer step: a
 * memory-bound pass over the local parameters at the slowest rank's
 * bandwidth, plus one kernel. */
static void lane_state(const struct tp_sim *sim, const struct tp_plan *plan,
		       const uint32_t *types, uint32_t n_types,
		       const struct lane_sums *a, struct lane *ln)
{
	uint32_t zero = plan->zero, dp = grp_reps(&plan->groups.v[ln->group]);
	double params = a->params;
	/* routed experts under ep > 1 are replicated over dp / ep replicas
	 * only (Megatron-Core's expert-data-parallel group): ZeRO shards
	 * their state that many ways */
	double ne = a->params_expert / sim->dtype_bytes;
	double n = params / sim->dtype_bytes - ne;
	/* the parameters without a profiled optimizer step (dense) */
	double nr = a->params_meas > 0
			    ? (params - a->params_meas) / sim->dtype_bytes - ne
			    : n;
	double dz = dp > 0 ? dp : 1, dze = dz / ln->ep;
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];

	/* etp=1: the experts' replicas are every rank of the group over
	 * ep, tp x dp x cp / ep (Megatron-Core's expert-data-parallel
	 * group) */
	if (etp_whole(gr))
		dze = dz * gr->tp / ln->ep;
	double slowest_bw = INFINITY, oh = 0;

	ln->params = params;
	ln->params_expert = a->params_expert;
	ln->weights = n * sim->state.weights /
			      tp_cost_zero_div(zero, TP_COST_WEIGHTS, dz) +
		      ne * sim->state.weights /
			      tp_cost_zero_div(zero, TP_COST_WEIGHTS, dze);
	ln->grads = n * sim->state.grads /
			    tp_cost_zero_div(zero, TP_COST_GRADS, dz) +
		    ne * sim->state.grads /
			    tp_cost_zero_div(zero, TP_COST_GRADS, dze) +
		    (n + ne) * sim->grad_copy;
	ln->optim = n * sim->state.optim /
			    tp_cost_zero_div(zero, TP_COST_OPTIMIZER, dz) +
		    ne * sim->state.optim /
			    tp_cost_zero_div(zero, TP_COST_OPTIMIZER, dze);
	for (uint32_t j = 0; j < n_types; j++) {
		const struct tp_cost_device *d = &sim->dev[types[j]];
		double bw = d->mem_bw * d->mem_eff;
		if (bw < slowest_bw)
			slowest_bw = bw;
		if (d->kernel_s > oh)
			oh = d->kernel_s;
	}
	ln->opt_s = (nr / tp_cost_zero_div(zero, TP_COST_OPTIMIZER, dz) +
		     ne / tp_cost_zero_div(zero, TP_COST_OPTIMIZER, dze)) *
			    sim->state.step / slowest_bw +
		    (nr + ne > 0 ? oh : 0);
	if (a->params_meas > 0)
		ln->opt_s += a->opt_meas /
			     tp_cost_zero_div(zero, TP_COST_OPTIMIZER, dz);
}

/* The share of an attention op's input bytes that are its keys and
 * values: 2 kv_heads / (heads + 2 kv_heads) of a fused QKV projection's
 * output (the builders' layout), 2/3 when the model records no heads. */
static double kv_share(const struct tp_model *m)
{
	double h = (double)m->arch.heads, kv = (double)m->arch.kv_heads;

	if (h > 0 && kv > 0)
		return 2 * kv / (h + 2 * kv);
	return 2.0 / 3;
}

/*
 * Ring attention over the lane's cp context ranks (README section 3,
 * context parallelism): each rank holds 1/cp of every sequence, 2 of its
 * 2cp chunks (Megatron-Core's causal load balancing), so the attention
 * op's compute oc->fw / oc->bw (already for samples / cp) is the same on
 * every rank and splits into cp equal steps, one per KV block.  While a
 * step computes, the next block travels one hop of the ring (double
 * buffering): forward cp-1 transfers of the rank's K and V
 * (kv = kv_share x the op's input bytes x samples / tp), backward cp-1
 * of K, V and their gradients (2 kv).  Only what a transfer takes beyond
 * its step's compute is exposed:
 *   fc += (cp-1) max(0, lat + kv / rate - fw / cp)
 *   bc += (cp-1) max(0, lat + 2 kv / rate - bw / cp)
 * With cp_all_gather (the runtime's cp_comm all_gather) K and V are
 * all-gathered before the attention, exposed, and gathered again with
 * their gradients reduce-scattered in the backward:
 *   fc += (cp-1) (lat + kv / rate),   bc += 2 (cp-1) (lat + kv / rate)
 */
/* The K and V bytes of attention op o a context rank holds per micro-
 * batch: kv_share of its input for the rank's samples, over tp. */
static double cp_kv_bytes(const struct tp_sim *sim, const struct lane *ln,
			  uint32_t o)
{
	return kv_share(sim->m) * sim->in_bytes[o] * ln->samples / ln->tp;
}

static void ring_attention(const struct tp_sim *sim, const struct lane *ln,
			   uint32_t o, struct op_cost *oc)
{
	double n = ln->cp, kv;

	if (!(ln->cp_rate > 0))
		return;
	kv = cp_kv_bytes(sim, ln, o);
	if (sim->o.params.cp_all_gather) {
		/* all-gather K and V before the attention, exposed (Llama
		 * 3, arXiv:2407.21783 section 3.3.2); the backward gathers
		 * them again and reduce-scatters their gradients: rings
		 * over the cp ranks, (cp-1) steps of kv each */
		double ag = (n - 1) * (ln->cp_lat + kv / ln->cp_rate);
		oc->fc += ag;
		oc->bc += 2 * ag;
		return;
	}
	oc->fc += (n - 1) * fmax(0, ln->cp_lat + kv / ln->cp_rate -
					    oc->fw / n);
	oc->bc += (n - 1) * fmax(0, ln->cp_lat + 2 * kv / ln->cp_rate -
					    oc->bw / n);
}

/* The temporary memory of attention op o (output bytes ob per micro-
 * batch) under all-gather KV: the gathered K and V of the whole sequence
 * (cp x the rank's), in the backward also their gradients until the
 * reduce-scatter, beside its output and gradient; 0 under the p2p ring. */
static double cp_gather_temp(const struct tp_sim *sim, const struct lane *ln,
			     uint32_t o, double ob)
{
	if (!sim->o.params.cp_all_gather)
		return 0;
	return 2 * ob + 2 * ln->cp * cp_kv_bytes(sim, ln, o);
}

/* FP8 dispatch (DeepSeek-V3, arXiv:2412.19437 section 3.3.2): E4M3
 * elements with one fp32 scale per 1x128 tile, against the bf16 ones the
 * builders' activations have: (1 + 4/128) / 2 of their bytes. */
#define EP_FP8_SHARE ((1 + 4.0 / 128) / 2)

/*
 * Dispatch and combine of a lane under expert parallelism (README
 * section 3): two all-to-alls per MoE layer and pass, the busiest
 * receiver getting lf x the mean; full recomputation repeats the
 * forward's.  With ep_dispatch_fp8 on an fp8 model the forward's
 * dispatch and the backward's gradient towards the down-projections move
 * EP_FP8_SHARE of their bytes, the combines (forward and backward) stay
 * bf16.  With ep_overlap (DualPipe) the exchanges of a forward and a
 * backward run while the other computes: the lane computes at
 * 1 - comm_sm_share of its speed and only what a forward-backward pair's
 * all-to-alls take beyond the pair's compute is exposed, shared between
 * the passes in proportion to their all-to-alls.
 */
static void ep_exchange(const struct tp_sim *sim, const struct lane *ln,
			struct lane_sums *a)
{
	const struct tp_sim_params *pa = &sim->o.params;
	double n_moe = 0, xf, xb, xr, q = 1, lat;

	for (uint32_t k = 0; k < a->n_lay; k++)
		n_moe += a->lay_ep[a->lay_list[k]];
	if (pa->ep_dispatch_fp8 && sim->m->dtype == TP_DTYPE_FP8)
		q = EP_FP8_SHARE;
	lat = 2 * n_moe * ln->ep_a;
	xf = lat + ln->ep_k * ln->lf * (q * a->ep_in + a->ep_out);
	xb = lat + ln->ep_k * ln->lf * (a->ep_in + q * a->ep_out);
	xr = a->rc == TP_RECOMPUTE_FULL ? xf : 0;
	if (pa->ep_overlap) {
		double slow = 1 / (1 - pa->comm_sm_share), hide, over;
		a->f_comp *= slow;
		a->b_comp *= slow;
		a->rec *= slow;
		a->w_comp *= slow;
		hide = a->f_comp + a->b_comp + a->rec;
		over = fmax(0, xf + xb + xr - hide) / (xf + xb + xr);
		xf *= over;
		xb *= over;
		xr *= over;
	}
	a->f_comm += xf;
	a->b_comm += xb;
	a->rec_comm += xr;
}

/* The arguments of a lane_costs call that op_lane reads. */
struct lane_call {
	const struct lane *ln;
	const uint32_t *types;
	uint32_t n_types;
	bool sp, whole;
};

static void op_lane(const struct tp_sim *sim, const struct lane_call *c,
		    uint32_t o, struct op_lane *e)
{
	const struct lane *ln = c->ln;
	const struct tp_op *op = &sim->m->ops.v[o];
	double tpd = ln->tp, b = ln->samples, load = 1;
	bool split = op->tp_split != TP_SPLIT_NONE && ln->tp > 1;
	double div = (split || c->sp) ? tpd : 1, wdiv = split ? tpd : 1;
	struct op_cost *oc = &e->oc;

	e->ep = (ln->ep > 1 || c->whole) && sim->expert[o] >= 0;
	if (e->ep) {
		/* a routed expert's op under ep: each rank runs experts/ep of
		 * them on ep x the tokens (times the busiest rank's load),
		 * i.e. per op 1/ep of its cost at that batch; weights divided
		 * by ep.  etp=1: the experts whole on each rank (no tensor
		 * split, no tensor-parallel collective), the EP group's
		 * tokens ep x the rank's own b / tp (sequence parallel) */
		double be = b * ln->ep * ln->lf;
		if (c->whole) {
			struct lane l1 = *ln;
			l1.tp = 1;
			be /= tpd;
			wdiv = 1;
			op_cost(sim, &l1, o, c->types, c->n_types, false, be,
				oc);
		} else {
			op_cost(sim, ln, o, c->types, c->n_types, c->sp, be,
				oc);
		}
		oc->fw /= ln->ep;
		oc->bw /= ln->ep;
		oc->fc /= ln->ep;
		oc->bc /= ln->ep;
		oc->S /= ln->ep;
		oc->opt_s /= ln->ep;
		oc->act /= ln->ep;
		load = ln->lf;
		wdiv *= ln->ep;
	} else {
		op_cost(sim, ln, o, c->types, c->n_types, c->sp, b, oc);
	}
	if (ln->cp > 1 && op->kind == TP_OP_ATTENTION)
		ring_attention(sim, ln, o, oc);
	e->pw = op->param_bytes / wdiv;
	e->saved = op_saved_bytes(sim, o) * b * load / div;
	if (oc->has & TP_PROFILE_HAS_ACTIVATION)
		e->saved = oc->act;
	e->ob = op->out_bytes * b * load / div;
	e->cp_temp = ln->cp > 1 && op->kind == TP_OP_ATTENTION
			     ? cp_gather_temp(sim, ln, o, e->ob)
			     : 0;
	e->load1 = load == 1;
}

/* op_lane of op o through the call's memo of its class (the first op of
 * a class in a lane_costs call computes it, the others read it), or
 * into *tmp for a reference scratch. */
static const struct op_lane *op_lane_memo(const struct tp_sim *sim,
					  struct tp_sim_scratch *s,
					  const struct lane_call *c,
					  uint32_t o, struct op_lane *tmp)
{
	uint32_t cl = sim->op_cls[o];

	if (!s->oc_memo || s->reference) {
		op_lane(sim, c, o, tmp);
		return tmp;
	}
	if (s->oc_seen[cl] != s->oc_gen) {
		op_lane(sim, c, o, &s->oc_memo[cl]);
		s->oc_seen[cl] = s->oc_gen;
	}
	return &s->oc_memo[cl];
}

static int lane_costs(const struct tp_sim *sim, const struct tp_plan *plan,
		      struct tp_sim_scratch *s, struct lane *ln)
{
	const struct tp_model *m = sim->m;
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	const uint32_t *ops = tp_plan_group_ops(plan, ln->group);
	uint32_t t = ln->tp, types[8], n_types;
	double b = ln->samples, tpd = t, work_sel = 0, work_full = 0;
	bool sp = gr->sp && t > 1, whole = etp_whole(gr);
	enum tp_recompute rc = gr->recompute;
	uint32_t zero = plan->zero, dp = grp_reps(gr);
	struct lane_sums a;
	struct lane_call call;

	memset(&a, 0, sizeof(a));
	a.rc = rc;
	a.sp = sp;
	n_types = rank_types(sim, plan->devs.v + ln->dev_first, t, types);
	call = (struct lane_call){ln, types, n_types, sp, whole};
	/* per-layer sums for recomputation: dtmp holds two arrays */
	s->dtmp.n = 0;
	s->tmp2.n = 0;
	if (tp_vec_reserve(&s->dtmp, 4 * (size_t)sim->n_layers + 4) ||
	    tp_vec_reserve(&s->tmp2, (size_t)gr->n_ops + 1))
		return -1;
	a.lay_saved = s->dtmp.v;
	a.lay_sel = s->dtmp.v + sim->n_layers + 1;
	a.lay_ep = s->dtmp.v + 2 * ((size_t)sim->n_layers + 1);
	a.lay_w = s->dtmp.v + 3 * ((size_t)sim->n_layers + 1);
	a.lay_list = s->tmp2.v;
	s->stamp += 2;
	a.stamp0 = s->stamp;
	for (uint32_t k = 0; k < gr->n_ops; k++) {
		uint32_t o = ops[k];
		const struct tp_op *op = &m->ops.v[o];
		struct op_lane tmp;
		const struct op_lane *e = op_lane_memo(sim, s, &call, o, &tmp);

		if (e->ep) {
			a.params_expert += e->pw;
			a.ep_in += sim->ep_in[o] * b / (sp ? tpd : 1);
			a.ep_out += sim->ep_out[o] * b / (sp ? tpd : 1);
		}
		a.tp_S += e->oc.S;
		a.f_comp += e->oc.fw;
		a.f_comm += e->oc.fc;
		a.b_comp += e->oc.bw;
		a.b_comm += e->oc.bc;
		a.params += e->pw;
		if (e->pw > a.maxw)
			a.maxw = e->pw;
		if ((e->oc.has & TP_PROFILE_HAS_OPTIMIZER) &&
		    op->param_bytes > 0 && e->load1 && ln->ep <= 1) {
			a.opt_meas += e->oc.opt_s;
			a.params_meas += e->pw;
		}
		if (e->ob > a.maxout)
			a.maxout = e->ob;
		if (ln->cp > 1 && op->kind == TP_OP_ATTENTION)
			a.cp_temp = fmax(a.cp_temp, e->cp_temp);
		if (op->param_bytes > 0) {
			a.w_comp += e->oc.bw * TP_SIM_WGRAD_SHARE;
			a.act_w += e->saved + e->ob;
		}
		if (op->layer >= 0 && (uint32_t)op->layer < sim->n_layers) {
			layer_op(sim, s, ln, o, &e->oc, e->saved, &a);
			a.lay_w[op->layer] += e->pw;
		} else {
			/* outside any layer: never recomputed */
			a.act += e->saved;
			a.act_full += e->saved;
		}
	}
	ln->units = a.n_lay > 0 ? a.n_lay : 1;
	ln->unit_w = a.maxw;
	for (uint32_t k = 0; k < a.n_lay; k++) {
		uint32_t l = a.lay_list[k];
		if (a.lay_w[l] > ln->unit_w)
			ln->unit_w = a.lay_w[l];
		if (a.lay_saved[l] > work_full)
			work_full = a.lay_saved[l];
		if (a.lay_sel[l] > work_sel)
			work_sel = a.lay_sel[l];
	}
	if (ln->ep > 1 && a.ep_in + a.ep_out > 0)
		ep_exchange(sim, ln, &a);
	ln->f_comp = a.f_comp;
	ln->f_comm = a.f_comm;
	ln->b_comp = a.b_comp + a.rec;
	ln->b_comm = a.b_comm + a.rec_comm;
	ln->w_comp = a.w_comp;
	ln->act_w = a.act_w;
	ln->act = rc == TP_RECOMPUTE_FULL ? a.act_full : a.act;
	ln->act_full = a.act_full;
	ln->work = rc == TP_RECOMPUTE_FULL        ? work_full
		   : rc == TP_RECOMPUTE_SELECTIVE ? work_sel
						  : 0;
	/* the largest op's output and its gradient (or cp_gather_temp);
	 * under ZeRO-3 also the gathered weights of the largest op and the
	 * prefetched next one, or, gathered per layer (prefetch_depth
	 * d >= 0), the largest layer's and d more in flight */
	ln->temp = fmax(2 * a.maxout, a.cp_temp);
	if (zero >= 3 && dp > 1)
		ln->temp += sim->o.params.prefetch_depth >= 0
				    ? (1 + sim->o.params.prefetch_depth) *
					      ln->unit_w
				    : 2 * a.maxw;
	ln->tp_bytes_mb = a.tp_S * (rc == TP_RECOMPUTE_FULL ? 3 : 2);
	lane_state(sim, plan, types, n_types, &a, ln);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Lane-cost cache: a search simulates thousands of plans built from the
 * same few (group, device types, decisions) combinations.  Keyed by every
 * input of lane_costs, so a hit returns exactly what it would compute. */

#define LC_MAX_ENTRIES (1u << 15)
#define LC_MAX_OPS (1u << 22)

static void lc_clear(struct tp_sim_scratch *s)
{
	s->lc.n = 0;
	s->lc_ops.n = 0;
	if (s->lc_tab)
		for (uint32_t i = 0; i < s->lc_cap; i++)
			s->lc_tab[i] = TP_NONE;
}

static bool lc_same(const struct tp_sim_scratch *s, const struct lcentry *a,
		    const struct lcentry *k, const uint32_t *ops)
{
	return a->h == k->h && a->n_ops == k->n_ops && a->tp == k->tp &&
	       a->dp == k->dp && a->zero == k->zero &&
	       a->n_types == k->n_types && a->sp == k->sp && a->rc == k->rc &&
	       a->ep == k->ep && a->etp == k->etp &&
	       dbl_bits(a->ep_a) == dbl_bits(k->ep_a) &&
	       dbl_bits(a->ep_k) == dbl_bits(k->ep_k) &&
	       dbl_bits(a->lf) == dbl_bits(k->lf) &&
	       dbl_bits(a->samples) == dbl_bits(k->samples) &&
	       dbl_bits(a->tp_a) == dbl_bits(k->tp_a) &&
	       dbl_bits(a->tp_k) == dbl_bits(k->tp_k) &&
	       dbl_bits(a->ar_a) == dbl_bits(k->ar_a) &&
	       dbl_bits(a->ar_k) == dbl_bits(k->ar_k) && a->cp == k->cp &&
	       dbl_bits(a->cp_lat) == dbl_bits(k->cp_lat) &&
	       dbl_bits(a->cp_rate) == dbl_bits(k->cp_rate) &&
	       memcmp(a->types, k->types, k->n_types * sizeof(uint32_t)) ==
		       0 &&
	       memcmp(s->lc_ops.v + a->ops_first, ops,
		      k->n_ops * sizeof(uint32_t)) == 0;
}

int tp_sim_lane_costs(const struct tp_sim *sim, const struct tp_plan *plan,
		      struct tp_sim_scratch *s, struct lane *ln,
		      uint64_t ops_h)
{
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	const uint32_t *ops = tp_plan_group_ops(plan, ln->group);
	const uint32_t *devs = plan->devs.v + ln->dev_first;
	struct lcentry k, *e;
	uint64_t h = ops_h;
	uint32_t slot, mask;

	memset(&k, 0, sizeof(k));
	tp_sim_op_classes_next(sim, s);
	/* the distinct rank types in rank order, as lane_costs sees them */
	for (uint32_t r = 0; r < ln->tp; r++) {
		uint32_t ty = sim->c->devices.v[devs[r]].type, j;
		for (j = 0; j < k.n_types; j++)
			if (k.types[j] == ty)
				break;
		if (j == k.n_types && k.n_types < 8)
			k.types[k.n_types++] = ty;
	}
	k.n_ops = gr->n_ops;
	k.tp = ln->tp;
	k.dp = grp_reps(gr);
	k.cp = gr->cp;
	k.cp_lat = ln->cp_lat;
	k.cp_rate = ln->cp_rate;
	k.zero = plan->zero;
	k.sp = gr->sp;
	k.rc = gr->recompute;
	k.samples = ln->samples;
	k.tp_a = ln->tp_a;
	k.tp_k = ln->tp_k;
	k.ar_a = ln->ar_a;
	k.ar_k = ln->ar_k;
	k.ep = ln->ep;
	k.etp = etp_whole(gr) ? 1 : 0;
	k.ep_a = ln->ep_a;
	k.ep_k = ln->ep_k;
	k.lf = ln->lf;
	h = hash_mix(h, ((uint64_t)k.n_ops << 32) | k.tp);
	h = hash_mix(h, ((uint64_t)k.dp << 32) | k.zero);
	h = hash_mix(h, ((uint64_t)k.sp << 8) | k.rc);
	h = hash_mix(h, dbl_bits(k.samples));
	h = hash_mix(h, dbl_bits(k.tp_a));
	h = hash_mix(h, dbl_bits(k.tp_k));
	if (k.ar_k != k.tp_k || k.ar_a != k.tp_a) {
		h = hash_mix(h, dbl_bits(k.ar_a));
		h = hash_mix(h, dbl_bits(k.ar_k));
	}
	if (k.ep > 1) {
		h = hash_mix(h, k.ep);
		h = hash_mix(h, dbl_bits(k.ep_a));
		h = hash_mix(h, dbl_bits(k.ep_k));
		h = hash_mix(h, dbl_bits(k.lf));
	}
	if (k.etp)
		h = hash_mix(h, 0x65747031ull);
	if (k.cp > 1) {
		h = hash_mix(h, k.cp);
		h = hash_mix(h, dbl_bits(k.cp_lat));
		h = hash_mix(h, dbl_bits(k.cp_rate));
	}
	for (uint32_t j = 0; j < k.n_types; j++)
		h = hash_mix(h, k.types[j]);
	k.h = h;
	if (!s->lc_tab) {
		s->lc_cap = 2 * LC_MAX_ENTRIES;
		s->lc_tab = malloc(s->lc_cap * sizeof(uint32_t));
		if (!s->lc_tab) {
			s->lc_cap = 0;
			return lane_costs(sim, plan, s, ln);
		}
		lc_clear(s);
	}
	mask = s->lc_cap - 1;
	for (slot = (uint32_t)(h ^ (h >> 32)) & mask;
	     s->lc_tab[slot] != TP_NONE; slot = (slot + 1) & mask) {
		e = &s->lc.v[s->lc_tab[slot]];
		if (!lc_same(s, e, &k, ops))
			continue;
		ln->f_comp = e->f_comp;
		ln->f_comm = e->f_comm;
		ln->b_comp = e->b_comp;
		ln->b_comm = e->b_comm;
		ln->opt_s = e->opt_s;
		ln->act = e->act;
		ln->work = e->work;
		ln->act_full = e->act_full;
		ln->weights = e->weights;
		ln->grads = e->grads;
		ln->optim = e->optim;
		ln->temp = e->temp;
		ln->params = e->params;
		ln->params_expert = e->params_expert;
		ln->tp_bytes_mb = e->tp_bytes_mb;
		ln->w_comp = e->w_comp;
		ln->act_w = e->act_w;
		ln->units = e->units;
		ln->unit_w = e->unit_w;
		return 0;
	}
	if (lane_costs(sim, plan, s, ln))
		return -1;
	if (s->lc.n >= LC_MAX_ENTRIES ||
	    s->lc_ops.n + gr->n_ops > LC_MAX_OPS) {
		lc_clear(s);
		for (slot = (uint32_t)(h ^ (h >> 32)) & mask;
		     s->lc_tab[slot] != TP_NONE; slot = (slot + 1) & mask)
			;
	}
	if (tp_vec_reserve(&s->lc, 1) || tp_vec_reserve(&s->lc_ops, gr->n_ops))
		return 0; /* computed, just not cached */
	k.ops_first = (uint32_t)s->lc_ops.n;
	memcpy(s->lc_ops.v + s->lc_ops.n, ops, gr->n_ops * sizeof(uint32_t));
	s->lc_ops.n += gr->n_ops;
	k.f_comp = ln->f_comp;
	k.f_comm = ln->f_comm;
	k.b_comp = ln->b_comp;
	k.b_comm = ln->b_comm;
	k.opt_s = ln->opt_s;
	k.act = ln->act;
	k.work = ln->work;
	k.act_full = ln->act_full;
	k.weights = ln->weights;
	k.grads = ln->grads;
	k.optim = ln->optim;
	k.temp = ln->temp;
	k.params = ln->params;
	k.params_expert = ln->params_expert;
	k.tp_bytes_mb = ln->tp_bytes_mb;
	k.w_comp = ln->w_comp;
	k.act_w = ln->act_w;
	k.units = ln->units;
	k.unit_w = ln->unit_w;
	s->lc_tab[slot] = (uint32_t)s->lc.n;
	s->lc.v[s->lc.n++] = k;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ring measurements of tensor-parallel lanes, cached per scratch. */

#define RC_MAX_ENTRIES (1u << 14)

int tp_sim_ring_measure(struct tp_sim_scratch *s, const uint32_t *devs,
			uint32_t n, bool *any, uint32_t *rings,
			double *latency, double *rate)
{
	uint64_t h = 0x452821e638d01377ull;
	uint32_t slot, mask;
	struct rcentry e;

	for (uint32_t i = 0; i < n; i++)
		h = hash_mix(h, devs[i]);
	h = hash_mix(h, n);
	if (!s->rc_tab) {
		s->rc_cap = 2 * RC_MAX_ENTRIES;
		s->rc_tab = malloc(s->rc_cap * sizeof(uint32_t));
		if (!s->rc_tab) {
			s->rc_cap = 0;
			return -1;
		}
		for (uint32_t i = 0; i < s->rc_cap; i++)
			s->rc_tab[i] = TP_NONE;
	}
	mask = s->rc_cap - 1;
	for (slot = (uint32_t)(h ^ (h >> 32)) & mask;
	     s->rc_tab[slot] != TP_NONE; slot = (slot + 1) & mask) {
		const struct rcentry *x = &s->rc.v[s->rc_tab[slot]];
		if (x->h == h && x->n == n &&
		    memcmp(s->rc_devs.v + x->devs_first, devs,
			   n * sizeof(*devs)) == 0) {
			*any = x->any;
			*rings = x->rings;
			*latency = x->latency;
			*rate = x->rate;
			return 0;
		}
	}
	if (tp_sim_acc_ring(s, devs, n, rings))
		return -1;
	*any = s->acc_flows > 0;
	if (s->acc_oom) {
		tp_sim_acc_measure(s, rate, latency);
		return -1;
	}
	tp_sim_acc_measure(s, rate, latency);
	if (s->rc.n >= RC_MAX_ENTRIES) {
		/* full: start over */
		s->rc.n = s->rc_devs.n = 0;
		for (uint32_t i = 0; i < s->rc_cap; i++)
			s->rc_tab[i] = TP_NONE;
		for (slot = (uint32_t)(h ^ (h >> 32)) & mask;
		     s->rc_tab[slot] != TP_NONE; slot = (slot + 1) & mask)
			;
	}
	if (tp_vec_reserve(&s->rc, 1) || tp_vec_reserve(&s->rc_devs, n))
		return 0; /* measured, just not cached */
	e.h = h;
	e.devs_first = (uint32_t)s->rc_devs.n;
	e.n = n;
	e.rings = *rings;
	e.any = *any;
	e.latency = *latency;
	e.rate = *rate;
	memcpy(s->rc_devs.v + s->rc_devs.n, devs, n * sizeof(*devs));
	s->rc_devs.n += n;
	s->rc_tab[slot] = (uint32_t)s->rc.n;
	s->rc.v[s->rc.n++] = e;
	return 0;
}
