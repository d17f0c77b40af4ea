/* model/plan.h — a vLLM-style parallel configuration: validation with vLLM's rules and
 * messages, the world size, every rank's coordinates and its communication groups.
 *
 * Rank layout follows vLLM's parallel_state: ranks = arange(world).reshape(DP, PP, PCP, TP),
 * TP innermost; a PP group holds the ranks of one (DP, PCP, TP) position across the stages. DCP
 * does not grow the world: without PCP it splits each TP group into consecutive blocks of DCP
 * ranks; with PCP it spans the PCP axis (DCP = PCP, ranks with the same TP index) or the whole TP x
 * PCP block (DCP = TP x PCP). The EP group spans TP x PCP x DP of one pipeline stage (all ranks
 * without PP). Sequence parallel (and DSA CP) reuses the TP group.
 *
 * The plan owns nothing of the program: model_plan_add_groups() creates its groups in a
 * SchedProgram and records their ids.
 */
#ifndef MODEL_PLAN_H
#define MODEL_PLAN_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../sched/program.h"
#include "arch.h"

#define MODEL_PLAN_ERROR (model_plan_error_quark())
GQuark model_plan_error_quark(void);

typedef enum { MODEL_DCP_AG_RS = 0, MODEL_DCP_A2A } ModelDcpBackend;

/* vLLM's EP all2all backends (ParallelConfig.all2all_backend, `--all2all-backend`). How each
 * lowers: the gather kinds (allgather_reducescatter, naive) all-gather the tokens and
 * reduce-scatter the output; the others send each token to its experts' ranks (an
 * all-to-all). */
typedef enum {
    MODEL_A2A_ALLGATHER_REDUCESCATTER = 0, /* vLLM's default */
    MODEL_A2A_NAIVE,
    MODEL_A2A_DEEPEP_HIGH_THROUGHPUT,
    MODEL_A2A_DEEPEP_LOW_LATENCY,
    MODEL_A2A_MORI_HIGH_THROUGHPUT,
    MODEL_A2A_MORI_LOW_LATENCY,
    MODEL_A2A_NIXL_EP,
    MODEL_A2A_FLASHINFER_NVLINK_ONE_SIDED,
    MODEL_A2A_FLASHINFER_NVLINK_TWO_SIDED,
    MODEL_A2A_COUNT
} ModelAll2AllBackend;

/* "allgather_reducescatter", ...; NULL-terminated list for messages. */
extern const char *const model_all2all_backend_names[MODEL_A2A_COUNT + 1];
/* Whether the backend all-gathers and reduce-scatters (else it is an all-to-all). */
bool model_all2all_gathers(ModelAll2AllBackend b);

/* Most pipeline stages a plan takes (far beyond any model's layer count per stage of 1). */
#define MODEL_PLAN_MAX_PP 256u

typedef struct {
    uint32_t tensor_parallel_size;          /* >= 1 */
    uint32_t data_parallel_size;            /* >= 1 */
    uint32_t prefill_context_parallel_size; /* >= 1 */
    uint32_t decode_context_parallel_size;  /* >= 1 */
    bool enable_expert_parallel;
    bool enable_sequence_parallel;
    bool disable_custom_all_reduce;           /* --disable-custom-all-reduce: the TP group runs
                                                 every all-reduce on NCCL (PyNccl) */
    ModelDcpBackend dcp_comm_backend;
    ModelAll2AllBackend all2all_backend;      /* EP dispatch/combine; default agrs */
    uint32_t cp_kv_cache_interleave_size;     /* >= 1, default 1 */
    uint32_t pipeline_parallel_size;          /* >= 1 */
    uint32_t pp_partition[MODEL_PLAN_MAX_PP]; /* VLLM_PP_LAYER_PARTITION: layers per stage, when
                                                pp_partition_given; else get_pp_indices' split */
    bool pp_partition_given;
} ModelParallel;

/* ParallelConfig.use_sequence_parallel_moe: the backend takes sequence-parallel input, with EP,
 * TP > 1 and DP > 1 (vllm/config/parallel.py; `naive` is not in the list of current vLLM). */
bool model_all2all_sequence_parallel(const ModelParallel *par);

typedef struct {
    uint32_t dp, pp, pcp, tp; /* coordinates on vLLM's axes */
    uint32_t dcp;             /* index inside its DCP group */
} ModelCoord;

typedef struct {
    ModelParallel par;
    uint32_t world;   /* DP x PP x PCP x TP */
    uint32_t ep_size; /* EP group size (1 when EP is off): DP x PCP x TP, one per stage */
    uint32_t *layer_start, *layer_end; /* [PP]: the decoder layers [start, end) of each stage
                                          (vllm/distributed/utils.py get_pp_indices) */

    bool moe;          /* the model has routed experts (or no model is known): vLLM builds
                          the `ep` group over every rank either way */
    ModelCoord *coord; /* [world] */
    /* group ids in the SchedProgram, per rank (-1: none); set by model_plan_add_groups */
    int32_t *tp_group, *pcp_group, *dcp_group, *dp_group, *ep_group, *pp_group;
    int32_t *sched_group; /* PP > 1: the ranks of one DP replica (one engine core), which wait
                             for its next step's SchedulerOutput (lower.c) */
} ModelPlan;

/* Fills `par` with vLLM's defaults (all sizes 1, ag_rs, interleave 1, no EP/SP). */
void model_parallel_defaults(ModelParallel *par);

/* Validates `par` against vLLM's rules (messages in vLLM's words, e.g. "PCP does not support
 * data parallelism yet.", "tp_size=2 must be divisible by dcp_size=4.") and the architecture
 * (heads divisible by TP, a2a needing heads x DCP... ). Returns a new plan or NULL with
 * `error` (MODEL_PLAN_ERROR) set. */
ModelPlan *model_plan_new(const ModelParallel *par, const ModelArch *arch, GError **error);
void model_plan_free(ModelPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelPlan, model_plan_free)

/* get_pp_indices: the first layer and the end of pipeline stage `rank` of `pp` for a model of
 * `layers` decoder layers: layers / pp each, the remainder one each to the second-to-last
 * stage, the third-to-last, ... (the last stage never gets one). */
void model_pp_indices(uint32_t layers, uint32_t pp, uint32_t rank, uint32_t *start, uint32_t *end);

/* Adds the plan's groups to `p` (named tp0, tp1, ..., pcp0, dcp0, dp0, ep0, pp0, sched0) and
 * records their ids in the plan. TP, PCP, DCP and DP groups of one rank are still created
 * (collectives over them are free); PP groups only with PP > 1, EP groups only for an MoE
 * model with more than one rank per stage, sched groups only with PP > 1. */
void model_plan_add_groups(ModelPlan *plan, SchedProgram *p);

/* ---- token splits (pure functions; tests check them against vLLM's formulas) ---- */

/* PCP DualChunkSwap: the rows of a prefill of `len` tokens that PCP rank `r` of `pcp` owns:
 * chunks r and 2*pcp-1-r of size ceil(len / (2*pcp)), each clipped to what is left. */
uint32_t model_pcp_rows(uint32_t len, uint32_t pcp, uint32_t r);
/* DCP interleaved KV sharding: tokens of a sequence of `len` that DCP rank `r` of `dcp` stores
 * with interleave size `il`. */
uint32_t model_dcp_local_len(uint32_t len, uint32_t dcp, uint32_t r, uint32_t il);

#endif
