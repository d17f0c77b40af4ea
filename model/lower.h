/* model/lower.h — lowers a model, a parallel plan, engine settings and a workload into one
 * SchedProgram: every rank's ops, the way vLLM / vLLM-Ascend would run them.
 *
 * Each engine step becomes: embedding, the decoder layers as repeat blocks (one block per run of
 * identical layers: dense layers, MoE layers, DSA full / shared-indexer layers), final norm and
 * lm_head. Canonical op names (used in the database and traces): compute input_layernorm,
 * q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj, kv_a_layernorm, kv_b_proj, indexer,
 * sparse_attention, mla_attention, o_proj, post_attention_layernorm, moe_gate, moe_topk,
 * moe_experts, shared_experts, mlp, lm_head (plus embed, final_norm, q_proj, k_proj, v_proj,
 * attention for dense GQA models); collectives sp_all_gather, sp_reduce_scatter, tp_all_reduce,
 * ep_dispatch, ep_combine, dcp_q_all_gather, dcp_lse_all_gather, dcp_out_reduce_scatter,
 * dcp_out_all_reduce, dcp_all_to_all, dcp_kv_all_gather, pcp_kv_all_gather, pcp_out_all_gather,
 * shared_expert_all_reduce, mc2_all_gather. Every op records its token rows on that rank.
 *
 * The engine settings (ModelEngine) and what derives from them alone live in
 * model/engine-args.h; the lowering sets each group's watchdog visibility through
 * model/surface.h.
 *
 * doc/lowering.md states, per parallel mode and backend, which ops run on how many rows and
 * which collectives carry what counts, with the vLLM behaviour each rule comes from.
 */
#ifndef MODEL_LOWER_H
#define MODEL_LOWER_H

#include <glib.h>

#include "../sched/engine.h"
#include "../sched/program.h"
#include "arch.h"
#include "backend.h"
#include "cost.h"
#include "engine-args.h"
#include "plan.h"
#include "vllm.h"

#define MODEL_LOWER_ERROR (model_lower_error_quark())
GQuark model_lower_error_quark(void);

typedef enum {
    MODEL_LOWER_ERROR_INVALID = 0, /* the workload or layout cannot run on this configuration */
    MODEL_LOWER_ERROR_BACKEND,     /* the attention backend refuses the model, the device or
                                      the layout (an engine setting to change) */
} ModelLowerErrorCode;

/* One DP rank's batch in one step: prompts (or chunks of them) prefilled and sequences
 * decoding one token. */
typedef struct {
    GArray *prefill;     /* uint32 new tokens of each prefill (a whole prompt or a chunk) */
    GArray *prefill_ctx; /* uint32 tokens already in the KV cache before each prefill entry
                            (a chunked prefill's earlier chunks); shorter than `prefill`
                            means 0 for the rest (model_batch_prefill_ctx) */
    GArray *decode;      /* uint32 context lengths */
    /* What this DP rank decides for itself in the step (doc/lowering.md, "Per-rank
     * decisions"); all false / 0 is what vLLM main does. A scenario sets one on one rank to
     * see the hang it makes. */
    bool skip_dummy;     /* idle: no dummy batch (no DP sync, no EP collectives) */
    bool skip_drafter;   /* the MTP drafter does not run after the target forward */
    uint32_t pad_tokens; /* this rank pads to this many rows instead of the step's; 0: the
                            step's */
} ModelBatch;

typedef struct {
    GPtrArray *per_dp;   /* ModelBatch*; 1 entry = the same batch on every DP rank */
    int64_t idle_ns;     /* the engine waits this long before the step (no request to run until
                            an arrival); lowered as an `idle` op on every rank */
    uint32_t pad_tokens; /* the token rows every DP rank runs outside attention (the batch
                            padded across DP and to its CUDA-graph size); 0: no padding beyond
                            what the lowering derives. Without PCP only. */
    int32_t sched_after; /* PP: the step (0-based) whose output the engine core waited for
                            before scheduling this one, or -1: scheduled right after the step
                            before, with batches still in flight (vLLM's batch queue).
                            model_workload_add_step sets the one before (one batch in flight) */
} ModelStep;

typedef struct {
    GPtrArray *steps; /* ModelStep* */
} ModelWorkload;

ModelBatch *model_batch_new(void);
void model_batch_free(ModelBatch *b);
ModelWorkload *model_workload_new(void);
void model_workload_free(ModelWorkload *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelWorkload, model_workload_free)
/* The batch DP rank `dp` runs in step `s` (one batch: every DP rank's), or NULL for an idle DP
 * rank (it runs a dummy batch). */
const ModelBatch *model_step_batch(const ModelStep *s, uint32_t dp);
/* Tokens a batch schedules: its prompts' lengths plus one per decoding sequence. */
uint64_t model_batch_tokens(const ModelBatch *b);
/* The cached context before prefill entry `i` (0 for a whole prompt). */
uint32_t model_batch_prefill_ctx(const ModelBatch *b, guint i);
/* Appends a prefill of `len` new tokens after `ctx` cached ones. */
void model_batch_add_prefill(ModelBatch *b, uint32_t len, uint32_t ctx);
/* Appends a step whose batches (taken over) run on the DP ranks. */
void model_workload_add_step(ModelWorkload *w, GPtrArray *per_dp);

/* Deliberately broken lowerings, for testing the layout checker (seed 000 §3.3.1). */
typedef enum {
    MODEL_BREAK_NONE = 0,
    MODEL_BREAK_EARLY_GATHER,    /* full tokens restored before the MoE gate / shared experts */
    MODEL_BREAK_LOCAL_ATTENTION, /* local tokens propagated into the next layer's attention */
    MODEL_BREAK_GATHER_RESIDUAL, /* the residual all-gathered across layers as well */
} ModelBreak;

typedef struct {
    const ModelArch *arch;
    const ModelPlan *plan;
    const ModelEngine *engine;
    const ModelWorkload *workload;
    const ModelCost *cost;
    const NetHardware *hw; /* the device (attention backend choice); NULL: an H100 */
    ModelBreak broken;     /* MODEL_BREAK_NONE outside tests */
} ModelLowerInput;

/* Builds the program: adds the plan's groups to a new program and every rank's ops.
 * Returns NULL with `error` (MODEL_LOWER_ERROR) for a workload the configuration cannot run
 * (e.g. a prompt longer than max_model_len, a step with more DP batches than DP ranks, a
 * backend that does not exist for this architecture). Caller owns the program. */
SchedProgram *model_lower(const ModelLowerInput *in, GError **error);

/* The layout checker: reads the lowered program back (rows per op, collectives per layer) and
 * returns `layout` diagnostics (SchedDiag*, caller owns) for the three error classes of seed
 * 000 §3.3.1 under DSA CP — full tokens before the MoE, local tokens into attention, gathered
 * residuals (rows above the full token count or more than one sp_all_gather per layer) — and
 * for any op above the step's full token count. Empty when the contract holds or DSA CP is off. */
GPtrArray *model_layout_check(const SchedProgram *p, const ModelLowerInput *in);

#endif
