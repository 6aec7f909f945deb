/*
 * sim_int.h - private structures of the simulator (src/sim/ only).
 *
 * tp_sim holds what depends on (model, cluster) alone and is read-only
 * after tp_sim_new.  Everything a run computes lives in the scratch, whose
 * vectors keep their capacity between runs, so a search thread simulating
 * thousands of plans allocates almost nothing.
 *
 * Vocabulary (see README): a *lane* is one data-parallel replica of one
 * group (its tensor-parallel ranks move together and are simulated as one);
 * replicas of identical lanes form a *class* and only one lane per class (a
 * *sim lane*) is simulated; a *resource* is a set of devices that always
 * execute the same tasks; a *bundle* is a set of flows that progress in
 * lockstep (a collective, or one pipeline transfer of all replicas of a
 * class), sharing links max-min fairly with the other active bundles.
 */
#ifndef TP_SIM_INT_H
#define TP_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sim.h"

#include "core/cost.h"
#include "core/profile.h"
#include "core/vec.h"

struct tp_sfb;         /* src/compress/sfb.h */
struct tp_sfb_scratch;
struct tp_sfb_actions;

/* The profile table of op o for type ty, or NULL (n 0). */
#define TP_SIM_PROF(sim, o, ty, n)                                            \
	((*(n) = (sim)->prof_n[(size_t)(o) * (sim)->n_types + (ty)]) != 0      \
		 ? (sim)->ptab + (sim)->prof[(size_t)(o) * (sim)->n_types + (ty)] \
		 : NULL)

struct tp_sim {
	const struct tp_model *m;
	const struct tp_cluster *c;
	struct tp_sim_options o;
	uint32_t n_ops, n_dev, n_types, n_chan;
	uint32_t n_layers; /* largest layer index + 1 */
	double dtype_bytes;
	/* bytes per parameter, unsharded, and the optimizer step's traffic
	 * per parameter (core/cost.h) */
	struct tp_cost_state state;
	double grad_copy; /* bytes per parameter of the gradients' bucket
			     copies (grad_bucket_copy), else 0 */
	struct tp_device_type *types; /* copies, cost fields defaulted */
	/* per type: the figures of the cost formulas (core/cost.h), GEMM
	 * efficiency times gemm_sustained */
	struct tp_cost_device *dev;
	/* [op * n_types + type]: the op's profile table for the type
	 * (core/profile.h), prof_n points from ptab + prof[..], or
	 * prof_n 0 */
	uint32_t *prof, *prof_n, *ptab;
	double *chan_bw;     /* effective bandwidth per directed channel */
	bool fitted_cuda_core; /* some type's GEMMs at the runtime's
				  cuda_core_gemm_eff */
	bool fitted_hopper;    /* some type's GEMMs times the runtime's
				  hopper_gemm_scale */
	bool nic_capped;     /* some NIC link runs at the runtime's
				nic_socket_Bps, below its line rate */
	double *in_bytes;    /* per op: bytes per sample entering it */
	/* expert parallelism (README section 3): per op its routed expert
	 * (tp_op_expert_index, -1 for the others) and, for an expert's ops,
	 * the bytes per sample entering from / leaving to ops outside that
	 * expert (the tokens dispatched to it and combined from it) */
	int32_t *expert;
	double *ep_in, *ep_out;
	/* per op its cost class (opclass.c tp_sim_op_classes): ops of one
	 * class have every input of cost.c's op_lane equal (the fields it
	 * reads, in_bytes, whether a norm feeds it, whether it is a routed
	 * expert's; an op with profiles is a class of its own), so one
	 * lane computes a class's costs once (DeepSeek-V3: 45,579 ops,
	 * 24 classes) */
	uint32_t *op_cls, n_cls;
	double fwd_flop, bwd_flop; /* per sample, whole model */
	/* per type: the fastest FLOP rate an op reaches (speed.c), and
	 * whether a profiled point set it above the cost model's peak */
	double *speed;
	bool *speed_profiled;
	struct tp_sfb *sfb; /* gradient compression (sfb_hook.c) */
};

/* What one op costs a lane: compute at the slowest rank's pace and the
 * tensor-parallel collectives of each pass (cost.c op_cost). */
struct op_cost {
	double fw, bw; /* compute, forward and backward */
	double fc, bc; /* tensor-parallel communication */
	double S;      /* bytes of one all-reduce's worth, per pass */
	/* measured (profiled, on the slowest type where several): the
	 * optimizer step and saved activation, when has says so */
	unsigned has;
	double opt_s, act;
};

/* What lane_costs takes of one op besides the sums: its cost (op_cost;
 * in the ep branch divided by ep; ring attention added), its weights
 * per rank, saved and output bytes per micro-batch.  The same for every
 * op of a class in one lane_costs call: the class key holds every op
 * field read here (opclass.c), scratch->oc_memo. */
struct op_lane {
	struct op_cost oc;
	double pw, saved, ob, cp_temp;
	bool ep;    /* the ep branch: a routed expert's op under ep, etp=1 */
	bool load1; /* at the mean load (not the ep branch's busiest) */
};

enum task_kind {
	TK_F,     /* forward of a micro-batch on a sim lane */
	TK_B,     /* backward (with recomputation) */
	TK_OPT,   /* optimizer step */
	TK_COMM,  /* a bundle of flows */
	TK_DELAY, /* fixed time, no resource */
	TK_W      /* zb-h1: the deferred weight-gradient pass of a backward */
};

/* The weight-gradient GEMM's share of the backward of an op with weights
 * (2 of its 4 GEMM-FLOP units: dX = dY W and dW = X^T dY each cost the
 * forward's FLOP): what tp_overlap hides the input gradient's collective
 * behind, and what zb-h1 defers as the W pass (README sections 2, 4). */
#define TP_SIM_WGRAD_SHARE 0.5

enum comm_what {
	CW_P2P_F,
	CW_P2P_B,
	CW_SYNC,
	CW_SYNC_TAIL,
	CW_ZERO_AG,
	CW_PARAM_AG
};

struct task {
	double dur; /* compute/delay: seconds; comm: bytes per flow */
	double start, end;
	uint32_t ref;   /* sim lane (compute) or bundle type (comm) */
	uint32_t micro; /* micro-batch, or group for sync tasks */
	uint32_t qpos;  /* position in its first resource's queue */
	uint8_t kind, what;
};

/*
 * A task's place in the dependency graph and its state in the engine
 * (s->nodes, one per task, same index): what the engine reads and writes
 * at every edge, kept apart from struct task so that its hot set is 16
 * bytes a task.  A deep pipeline's live tasks (a lane's forwards run w
 * micro-batches ahead of its backwards) are spread over the task array;
 * with the nodes beside the tasks they missed the caches at nearly every
 * edge (engine.c, README "Engine").  Filled by taskgraph.c successors().
 */
struct tnode {
	uint32_t ndeps;            /* inputs not yet there */
	uint32_t succ_first, n_succ; /* into s->succ: (successor << 1) |
					on_start */
	uint8_t kind, started, done, pad;
};

/* A bundle type: the channels its flows cross (with multiplicity). */
struct btype {
	uint32_t ent_first, n_ent;
	uint32_t cls_first, n_cls; /* entries over channel classes (cents) */
	bool cls_sorted;           /* in engine.c sort_entries' order */
	uint32_t n_flows;
	double latency;    /* before bytes flow */
	double rate_alone; /* per-flow rate without other traffic */
	double rate_cap;   /* per-flow rate at most (INFINITY: none; the
			      runtime's p2p_socket_Bps) */
	/* link statistics, per run: bytes per flow moved, time with at
	 * least one instance moving bytes */
	double moved, busy, since;
	uint32_t active;
};

struct bent {
	uint32_t chan, count;
};

struct gedge {
	uint32_t src, dst;
	double bytes; /* per sample */
};

/* The group edges (lanes.c group_edges) of one partition of the ops into
 * groups: key holds per group its op count, then every group's ops in
 * plan order.  A search changes its groups' devices and degrees far more
 * often than their ops, and the megatron grid alternates a few
 * partitions per pipeline depth: SIM_PARTS of them are kept. */
#define SIM_PARTS 4
struct part_kept {
	TP_VEC(uint32_t) key;
	TP_VEC(struct gedge) gedges;
	bool ok;
};

struct ginfo {
	uint32_t rank;  /* position in the group topological order */
	uint32_t stage; /* device-set class */
	uint32_t vd;    /* virtual pipeline depth */
	uint32_t lane_first;     /* lanes: lane_first + replica */
	uint32_t sim_first, n_sim; /* sim lanes of this group */
	uint32_t set_first;        /* sorted device list in s->sets */
	double grad_bytes;  /* per device, to synchronise (model dtype) */
	double param_bytes; /* per device (model dtype) */
	double expert_bytes; /* of them, routed experts' under ep > 1: their
				gradients are reduced over the expert-data-
				parallel replicas (dp / ep) */
	uint32_t first_sync; /* first task of the group's sync (or NONE) */
	uint32_t last_sync; /* task finishing the group's sync (or NONE) */
	uint32_t tail_first; /* first task of the sync tail (or NONE) */
	uint32_t param_ag;   /* ZeRO-1/2 weight all-gather task (or NONE) */
};

/* A lane is one sim replica of a group: data-parallel replica r's context
 * rank c is sim replica r * cp + c (plan.h's device order), its tp
 * devices from dev_first, with 1/cp of replica r's samples. */
struct lane {
	uint32_t group, replica, tp;
	uint32_t cp;        /* the group's context-parallel degree */
	uint32_t dev_first; /* into plan->devs */
	uint32_t cls;       /* class representative replica */
	uint32_t sim;       /* sim lane index, or NONE when mirrored */
	double samples;     /* per micro-batch */
	double f_comp, f_comm, b_comp, b_comm; /* per micro-batch */
	/* of b_comp, the weight-gradient GEMMs (TP_SIM_WGRAD_SHARE of the
	   backward of every op with weights), and the bytes a deferred W
	   pass keeps after the B pass: those ops' saved inputs and output
	   gradients (zb-h1; README section 4) */
	double w_comp, act_w;
	/* the group's layers (FSDP units, at least 1) and the weights of
	   the largest per device, unsharded (prefetch_depth >= 0) */
	uint32_t units;
	double unit_w;
	double opt_s;
	double act, work, act_full; /* bytes per device */
	double weights, grads, optim, temp;
	double params; /* parameter bytes per device, unsharded */
	double params_expert; /* of them, routed experts' (sharded over ep) */
	/* expert parallelism: degree, the all-to-all over the lane's EP
	   group (ep_a + ep_k * bytes dispatched per device, seconds) and
	   the busiest rank's load over the mean (imbalance, capped by the
	   capacity factor) */
	uint32_t ep;
	uint32_t ep_g; /* node forwarding: EP members per node, else 0 */
	double ep_a, ep_k, lf;
	double tp_bytes_mb; /* tensor-parallel bytes per flow per micro-batch */
	double tp_a, tp_k;  /* ring all-reduce time = tp_a + tp_k * bytes;
			       reduce-scatter, all-gather half of it */
	double ar_a, ar_k;  /* the all-reduce NCCL would run: NVLS inside an
			       NVLink SHARP domain, else the ring's */
	uint32_t tp_bt;     /* bundle of one TP all-reduce (for link stats) */
	/* one step of the context-parallel ring (cp > 1): every rank sends
	   its neighbour a block, cp_lat + bytes / cp_rate seconds */
	double cp_lat, cp_rate;
};

/* A cached lane cost (cost.c): every input of the computation and its
 * outputs. */
struct lcentry {
	uint64_t h;
	uint32_t ops_first, n_ops; /* the group's ops, in s->lc_ops */
	uint32_t tp, dp, zero, n_types;
	uint32_t cp;
	uint32_t types[8];
	uint32_t sp, rc, ep, etp;
	double samples, tp_a, tp_k, ar_a, ar_k, ep_a, ep_k, lf, cp_lat;
	double cp_rate;
	double f_comp, f_comm, b_comp, b_comm, opt_s;
	double act, work, act_full, weights, grads, optim, temp, params;
	double params_expert;
	double tp_bytes_mb;
	double w_comp, act_w;
	uint32_t units;
	double unit_w;
};

/* A cached ring accumulation (cost.c): a device list, its channel
 * counts in first-touch order, flows, rings and latency. */
struct rgentry {
	uint64_t h;
	uint32_t kind; /* 0 ring over a device list, 1 (src, dst) pairs */
	uint32_t devs_first, n;
	uint32_t ent_first, n_ent;
	uint32_t flows, rings;
	double latency;
};

/* A cached ring measurement (cost.c): a device list and its rings. */
struct rcentry {
	uint64_t h;
	uint32_t devs_first, n;
	uint32_t rings;
	bool any;
	double latency, rate;
};

struct simlane {
	uint32_t lane;
	uint32_t n_members; /* replicas it stands for */
	uint32_t member_first; /* into s->members (replica indices) */
	uint32_t res_first, n_res; /* into s->lres */
	uint32_t task_first;       /* F(i) = task_first + 2i, B = +1 */
	uint32_t w_first;          /* zb-h1: W(i) = w_first + i */
	uint32_t opt_task;
	double last_b_end;
};

struct resource {
	uint32_t q_first, q_n, head;
	bool busy;
	double peak_act;
	double busy_pipe; /* F/B seconds */
	double comp, comm; /* report: compute and exposed communication */
};

struct qitem {
	uint64_t key;
	uint32_t task;
};

struct active {
	uint32_t task, bt; /* the transfer task, its bundle type */
	uint32_t cls_first, n_cls; /* its bundle type's class entries */
	/* rates(): the entries the fair sharing needs (rents), see
	 * engine.c private_classes */
	uint32_t r_first, r_n;
	double remaining, rate;
	double cap; /* its bundle type's rate_cap */
};

/* A class entry of a bundle type with its class's bandwidth, for sorting
 * the entries by (count, bandwidth) (engine.c). */
struct ckey {
	double cap;
	uint32_t count, chan;
};

/* A memo entry of rates(): n items (mitems from first), one per distinct
 * active bundle type, na active bundles in all. */
struct rmemo {
	uint32_t first, n, na;
};

struct ritem {
	uint32_t bt, mult; /* bundle type, active instances */
	double rate;       /* per-flow rate of each */
};

struct heap_ev {
	double t;
	uint32_t task;
	uint32_t ev; /* 0 finish, 1 flow begin */
};

/* A vector of channel indices (a named TP_VEC, so cost.c's count_flow can
 * take either of the two below). */
struct chanvec {
	uint32_t *v;
	size_t n, cap;
};

struct tp_sim_scratch {
	const struct tp_sim *sim;
	bool trace_all; /* the last trace showed every replica */
	bool zb;        /* this run splits backwards into B and W (zb-h1) */
	bool p2p_capped; /* some pipeline transfer crosses a NIC under the
			    runtime's p2p_socket_Bps */
	uint64_t tasks_total;
	bool reference; /* tp_sim_scratch_reference: no engine shortcuts,
			   no op-class memo */
	/* lane_costs' op_lane per op class (sim->op_cls), valid where
	 * oc_seen[class] == oc_gen: one generation per lane_costs call */
	struct op_lane *oc_memo;
	uint32_t *oc_seen, oc_gen;
	/* per op, per layer */
	uint32_t *op_group, *op_mark, *lay_mark;
	/* per device */
	uint32_t *dev_res;   /* resource of a simulated device or NONE */
	uint32_t *dev_rep;   /* representative device (mode A mirrors) */
	uint32_t *dev_mark;
	/* per channel */
	double *cap_rem, *weight;
	uint32_t *cnt, *cmark;
	double *chan_bytes, *chan_busy; /* report: per channel */
	uint32_t stamp;
	struct chanvec touched;
	TP_VEC(struct ginfo) groups;
	TP_VEC(uint32_t) gorder; /* groups in topological order */
	TP_VEC(struct gedge) gedges;
	/* the group edges of the last SIM_PARTS partitions of the ops into
	 * groups (lanes.c group_edges_kept), replaced in turn */
	struct part_kept parts[SIM_PARTS];
	uint32_t part_next;
	TP_VEC(uint32_t) gin, gout; /* CSR of group edge ids */
	TP_VEC(uint32_t) gin_off, gout_off;
	TP_VEC(uint32_t) sets; /* sorted device lists of groups */
	TP_VEC(struct lane) lanes;
	TP_VEC(struct simlane) sims;
	TP_VEC(uint32_t) members;
	TP_VEC(uint32_t) lres;
	TP_VEC(struct resource) res;
	TP_VEC(struct qitem) queue;
	TP_VEC(struct qitem) qtmp; /* merge buffer for the queue order */
	TP_VEC(struct task) tasks;
	TP_VEC(uint64_t) edges; /* (from << 33) | (to << 1) | on_start */
	TP_VEC(struct tnode) nodes; /* one per task */
	TP_VEC(uint32_t) succ;
	TP_VEC(struct btype) btypes;
	TP_VEC(struct bent) bents;
	TP_VEC(struct active) act;
	/* channel classes: channels crossed by the same bundle types with
	 * the same multiplicities and bandwidth share bandwidth identically,
	 * so fair sharing runs over one representative per class */
	uint64_t *chash;
	uint32_t *cstamp, cls_stamp;
	TP_VEC(struct bent) cents;
	TP_VEC(double) ccap, ccap_rem, cweight;
	TP_VEC(uint32_t) cmark2;
	/* per class: active bundles crossing it */
	TP_VEC(uint32_t) cuse;
	TP_VEC(uint32_t) ctouched; /* classes of one component */
	TP_VEC(struct bent) rents; /* rates(): active bundles' entries */
	TP_VEC(uint32_t) live;     /* rates(): bundles not frozen */
	/* rates() memo of one run (engine.c, "Memo"): the fair shares of
	 * each multiset of active bundle types met, keyed by mhash, the sum
	 * of a hash of each active bundle's type */
	uint64_t mhash;
	TP_VEC(uint32_t) bcnt;   /* per bundle type: active instances */
	TP_VEC(uint32_t) bstamp; /* per bundle type: stamp of a memo store */
	TP_VEC(double) brate;    /* per bundle type: rate of a memo hit */
	TP_VEC(struct rmemo) ments;
	TP_VEC(struct ritem) mitems;
	TP_VEC(uint64_t) mkeys;
	TP_VEC(uint32_t) mvals; /* entry index or TP_NONE */
	TP_VEC(struct ckey) ckeys; /* sorting a bundle type's entries */
	TP_VEC(uint32_t) clast; /* per class: last bundle + 1 with an entry */
	TP_VEC(uint64_t) hkeys;
	TP_VEC(uint32_t) hvals;
	TP_VEC(uint8_t) bt_used;
	TP_VEC(uint32_t) p2p; /* pairs: transfer task, sending task */
	TP_VEC(struct heap_ev) heap;
	TP_VEC(uint32_t) tmp, tmp2, tmp3, tmp4;
	TP_VEC(double) dtmp;
	/* flow accumulation */
	uint32_t acc_flows;
	double acc_latency;
	bool acc_oom;
	/* lane costs of earlier runs (cost.c): they depend only on the
	 * group's ops and decisions, not on the rest of the plan */
	TP_VEC(struct lcentry) lc;
	TP_VEC(uint32_t) lc_ops;
	uint32_t *lc_tab; /* open addressing: entry index or TP_NONE */
	uint32_t lc_cap;  /* power of two, 0 = no table yet */
	/* ring accumulations of device lists (cost.c) */
	uint32_t *cnt2; /* per channel, for recording one ring apart */
	struct chanvec touched2;
	uint32_t flows2;
	double lat2;
	TP_VEC(struct rgentry) rg;
	TP_VEC(uint32_t) rg_devs;
	TP_VEC(struct bent) rg_ents;
	uint32_t *rg_tab;
	uint32_t rg_cap;
	/* tensor-parallel ring measurements of device lists (cost.c) */
	TP_VEC(struct rcentry) rc;
	TP_VEC(uint32_t) rc_devs;
	uint32_t *rc_tab;
	uint32_t rc_cap;
	/* gradient compression (sfb_hook.c) */
	struct tp_sfb_scratch *sfb_s;
	struct tp_sfb_actions *sfb_a;
};

/* Sim replicas of a group: data-parallel replicas x context ranks (the
 * lanes of the group; gradients are reduced and ZeRO shards over all of
 * them, as Megatron-Core's data-parallel group with context parallelism). */
static inline uint32_t grp_reps(const struct tp_plan_group *g)
{
	return g->dp * g->cp;
}

/* Expert tensor parallelism 1 under tp > 1 (plan.h etp): the group's
 * routed experts whole on each rank. */
static inline bool etp_whole(const struct tp_plan_group *g)
{
	return g->etp == 1 && g->tp > 1;
}

/* The stride between an EP group's members in the group's device order
 * (tensor ranks fastest): tp, or 1 under etp=1. */
static inline uint32_t ep_stride(const struct tp_plan_group *g)
{
	return etp_whole(g) ? 1 : g->tp;
}

/* Hash helpers of the caches (cost.c, opclass.c): a mixing step, and a
 * double's bits (keys compare doubles bit for bit). */
static inline uint64_t hash_mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static inline uint64_t dbl_bits(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
}

/* The lane-cost cache's hash of group g's ops (cost.c: the first part of
 * every key of the group's lanes); lanes.c takes it once per group, not
 * per lane. */
static inline uint64_t tp_sim_lane_ops_hash(const struct tp_plan *plan,
					    uint32_t g)
{
	const uint32_t *ops = tp_plan_group_ops(plan, g);
	uint64_t h = 0x243f6a8885a308d3ull;

	for (uint32_t i = 0; i < plan->groups.v[g].n_ops; i++)
		h = hash_mix(h, ops[i]);
	return h;
}

/* Is a[0..n) ascending?  (Device lists usually are; qsort is then
 * skipped.) */
static inline bool sorted_u32(const uint32_t *a, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (a[i] < a[i - 1])
			return false;
	return true;
}

/* qsort comparator of uint32_t. */
static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Reserve k more entries of a scratch vector, else goto nomem (every
 * step that grows the scratch ends with a nomem label). */
#define RESERVE(vec, k)                                                       \
	do {                                                                  \
		if (tp_vec_reserve((vec), (k)))                               \
			goto nomem;                                           \
	} while (0)

/* The forward and backward task of micro-batch i on sim lane L. */
static inline uint32_t f_task(const struct tp_sim_scratch *s, uint32_t L,
			      uint32_t i)
{
	return s->sims.v[L].task_first + 2 * i;
}
static inline uint32_t b_task(const struct tp_sim_scratch *s, uint32_t L,
			      uint32_t i)
{
	return s->sims.v[L].task_first + 2 * i + 1;
}

/* Weight-gradient pass W of micro-batch i on sim lane L (zb-h1 only). */
static inline uint32_t w_task(const struct tp_sim_scratch *s, uint32_t L,
			      uint32_t i)
{
	return s->sims.v[L].w_first + i;
}

/* The task that completes lane L's gradients: its last W under zb-h1,
 * else its last backward. */
static inline uint32_t grad_task(const struct tp_sim_scratch *s, uint32_t L,
				 uint32_t m)
{
	return s->zb ? w_task(s, L, m - 1) : b_task(s, L, m - 1);
}

/* A backward task's compute: without its W pass under zb-h1. */
static inline double b_only(const struct tp_sim_scratch *s,
			    const struct lane *ln)
{
	return s->zb ? ln->b_comp - ln->w_comp : ln->b_comp;
}

/* The schedule a run follows (schedule.c): kind, micro-batches, pipeline
 * depth, and for the interleaved schedule stages p and chunks V. */
struct sched {
	enum tp_schedule kind;
	uint32_t m, D, p, V;
};

/* Per-device memory terms summed over its lanes (memory.c), for the
 * smallest change that would fit. */
struct devmem {
	double w0, g0, o0; /* unsharded by ZeRO */
	double act_full, act;
	uint32_t dp_min;
	bool any;
};

/* A run, step by step (sim.c calls them in this order). */

/* speed.c: sim->speed and speed_profiled (after sim->dev and the
 * profile tables). */
void tp_sim_speed_init(struct tp_sim *sim);

/* Is a device type of NVIDIA's Hopper generation (H100, H200, GH200:
 * warpgroup MMA and TMA), by its name?  cost.c, for the fused
 * attention kernels' efficiency (sim.h TP_SIM_ATTN_*). */
bool tp_sim_hopper_type(const char *name);


/* lanes.c: the group graph (s->groups, gedges, gorder, CSR, stages,
 * virtual depth; *depth = pipeline depth), TP_EINPUT for groups that
 * depend on each other both ways. */
enum tp_status tp_sim_analyse_groups(const struct tp_sim *sim,
				     const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t *depth,
				     struct tp_error *err);
/* lanes.c: lanes with their costs and compression, replica classes (mode
 * A: every group has the same replicas) and sim lanes. */
enum tp_status tp_sim_build_lanes(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, bool *mode_a,
				  struct tp_error *err);
/* lanes.c: resources, devices of sim lanes merged when they belong to
 * exactly the same sim lanes (partition refinement); s->dev_res. */
enum tp_status tp_sim_build_resources(const struct tp_sim *sim,
				      const struct tp_plan *plan,
				      struct tp_sim_scratch *s,
				      struct tp_error *err);
/* report.c: the lower bound of the iteration time from the lanes alone
 * (tp_sim_run_bounded's contract); 0 when memory runs out. */
double tp_sim_lanes_bound(const struct tp_plan *plan,
			  struct tp_sim_scratch *s);
/* schedule.c: the schedule of plan; TP_EINPUT for an interleaved layout
 * Megatron cannot run, TP_ELIMIT beyond 2^20 groups. */
enum tp_status tp_sim_setup_schedule(const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t depth,
				     struct sched *sc, struct tp_error *err);
/* schedule.c: every resource's queue in schedule order, task.qpos. */
enum tp_status tp_sim_order_queues(const struct tp_plan *plan,
				   struct tp_sim_scratch *s,
				   const struct sched *sc, struct tp_error *err);
/* taskgraph.c: all tasks and dependencies of the iteration, ordered. */
enum tp_status tp_sim_build_graph(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  const struct sched *sc, bool mode_a,
				  struct tp_error *err);
/* taskgraph.c: the gradient bucket of the overlapped sync: the plan's
 * (tagplan plan --grad-bucket-mb), else the simulator's. */
double tp_sim_grad_bucket(const struct tp_sim *sim,
			  const struct tp_plan *plan);
/* schedule.c: the queues of the compute tasks alone, numbered as the
 * task graph will number them, before it is built (*ok false: not
 * done, the numbers would exceed the graph's limit). */
enum tp_status tp_sim_order_compute(const struct tp_plan *plan,
				    struct tp_sim_scratch *s,
				    const struct sched *sc, bool *ok,
				    struct tp_error *err);
/* memory.c: every resource's activation peak walking its task order. */
void tp_sim_memory_walk(const struct tp_plan *plan, struct tp_sim_scratch *s);
/* memory.c: the same peaks from tp_sim_order_compute's queues (no tasks
 * needed): bit for bit those of tp_sim_memory_walk on the graph. */
void tp_sim_memory_walk_early(const struct tp_plan *plan,
			      struct tp_sim_scratch *s);
/* memory.c: does every device fit (as the report will count it)?  Else
 * *over = the worst excess / that device's capacity.  After
 * tp_sim_memory_walk. */
bool tp_sim_memory_fits(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, double *over);
/* engine.c: channel classes of the bundle types in use; -1 on
 * allocation failure. */
int tp_sim_channel_classes(const struct tp_sim *sim,
			   struct tp_sim_scratch *s);
/* engine.c: run the tasks; *t_end = when the last ends.  TP_EINPUT when
 * the order deadlocks. */
enum tp_status tp_sim_run_engine(const struct tp_sim *sim,
				 struct tp_sim_scratch *s, double *t_end,
				 struct tp_error *err);
/* report.c: fill rep from the finished run. */
enum tp_status tp_sim_make_report(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, double t_end,
				  uint32_t depth, struct tp_report *rep,
				  struct tp_error *err);
/* memory.c: the report's memory terms of every device (weights,
 * gradients, optimizer, activation peak, temporary) and s->dev_rep;
 * returns the per-device terms for the reason (in s->dtmp), NULL when out
 * of memory. */
struct devmem *tp_sim_memory_terms(const struct tp_sim *sim,
				   const struct tp_plan *plan,
				   struct tp_sim_scratch *s,
				   struct tp_report *rep);
/* memory.c: rep->reason and over_bytes for rep->worst_device, over by
 * worst bytes: what dominates and the smallest change that fits. */
void tp_sim_memory_reason(const struct tp_sim *sim, const struct tp_plan *plan,
			  const struct devmem *dm, double worst,
			  struct tp_report *rep);

/* opclass.c */
/* sim->op_cls and sim->n_cls from the model (tp_sim_new, after in_bytes
 * and expert); -1 on allocation failure. */
int tp_sim_op_classes(struct tp_sim *sim);
/* A new generation of scratch s's op-class memo (cost.c op_lane_memo):
 * every class unseen; one per tp_sim_lane_costs call, before its
 * lane_costs. */
void tp_sim_op_classes_next(const struct tp_sim *sim,
			    struct tp_sim_scratch *s);

/* cost.c */
/* The busiest expert-parallel rank's load over the mean: the plan's
 * expert_imbalance (else the parameter's), capped by its capacity
 * factor; at least 1. */
double tp_sim_expert_load(const struct tp_sim *sim, const struct tp_plan *plan);
/* Times and memory of one lane (fills *ln) through the scratch's
 * lane-cost cache; ops_h = tp_sim_lane_ops_hash of its group.  -1 on
 * allocation failure. */
int tp_sim_lane_costs(const struct tp_sim *sim, const struct tp_plan *plan,
		      struct tp_sim_scratch *s, struct lane *ln,
		      uint64_t ops_h);
/* Flow accumulation into a bundle type. */
void tp_sim_acc_flow(struct tp_sim_scratch *s, uint32_t src, uint32_t dst);
int tp_sim_acc_ring(struct tp_sim_scratch *s, const uint32_t *devs,
		    uint32_t n, uint32_t *rings);
/* Flows src -> dst for the n_pairs (src, dst) pairs, in order, as
 * tp_sim_acc_flow would add them one by one (cached per scratch).  -1 on
 * allocation failure. */
int tp_sim_acc_pairs(struct tp_sim_scratch *s, const uint32_t *pairs,
		     uint32_t n_pairs);
int tp_sim_acc_emit(struct tp_sim_scratch *s, uint32_t *bt);
/* Is link lk a NIC's: a device's link to its NIC, or a NIC vertex's link
 * into the network (not a switch-to-switch link)? */
bool tp_sim_nic_link(const struct tp_cluster *c, const struct tp_link *lk);
/* The NCCL-style rings over devs (tp_sim_acc_ring) measured without
 * emitting a bundle: *any = false when they have no flow, else their ring
 * count, latency and per-flow rate alone.  Cached per scratch (a pure
 * function of the device list).  -1 on allocation failure. */
int tp_sim_ring_measure(struct tp_sim_scratch *s, const uint32_t *devs,
			uint32_t n, bool *any, uint32_t *rings,
			double *latency, double *rate);
/* Discard an accumulation, returning its per-flow rate alone and its
 * latency. */
void tp_sim_acc_measure(struct tp_sim_scratch *s, double *rate,
			double *latency);

/* sfb_hook.c: gradient compression (src/compress/sfb.h) */
int tp_sim_sfb_new(struct tp_sim *sim, struct tp_error *err);
void tp_sim_sfb_free(struct tp_sim *sim);
int tp_sim_sfb_scratch_new(struct tp_sim_scratch *s);
void tp_sim_sfb_scratch_free(struct tp_sim_scratch *s);
/* Adjust group g's lanes and sync for its compression (plans with an
 * sfb list or a lossy format); TP_EINPUT for a compression the group
 * cannot use. */
enum tp_status tp_sim_sfb_apply(const struct tp_sim *sim,
				const struct tp_plan *plan,
				struct tp_sim_scratch *s, uint32_t g,
				struct tp_error *err);

/* trace.c */
void tp_sim_trace_write(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, double t_end,
			struct tp_strbuf *out);

#endif
