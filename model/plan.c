/* model/plan.c — vLLM parallel configuration: validation, rank coordinates, communication
 * groups and the PCP / DCP token splits; see plan.h and doc/parallel-plan.md.
 *
 * Layout (vllm/distributed/parallel_state.py, initialize_model_parallel): all ranks are
 * arange(world).reshape(ExtDP=1, DP, PP, PCP, TP), so rank = ((dp * PP + pp) * PCP + pcp) * TP
 * + tp. Each group kind is "that axis moved last, reshape(-1, size), one row per group":
 *   TP   all_ranks.view(-1, TP)                     consecutive ranks
 *   DCP  all_ranks.transpose(-1, -2).reshape(-1, DCP) when DCP > 1 ("DCP spans PCP first, then
 *        TP for full TP x PCP groups"); all_ranks.reshape(-1, 1) when DCP == 1
 *   PCP  all_ranks.transpose(3, 4).reshape(-1, PCP)
 *   PP   all_ranks.transpose(2, 4).reshape(-1, PP)  stride PCP x TP
 *   DP   all_ranks.transpose(1, 4).reshape(-1, DP)  stride PP x PCP x TP
 *   EP   all_ranks.transpose(1, 2).reshape(-1, DP * PCP * TP)   one per stage (MoE models only)
 * Group ids are numbered in that row order and members listed in that column order, so a
 * rank's position in its group is vLLM's rank_in_group.
 *
 * Costs: model_plan_new is O(world) time and memory (coordinates plus five int32 arrays);
 * model_plan_add_groups adds O(world) groups, O(world log world) in the program.
 */
#include "plan.h"
#include "quant-shape.h"

#include <stdarg.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(ranksim-model-plan-error-quark, model_plan_error)
/* clang-format on */

/* Bounds that keep every product in 32 bits and every array allocatable. */
#define PLAN_MAX_SIZE 65536u
#define PLAN_MAX_WORLD 1048576u

void model_parallel_defaults(ModelParallel *par)
{
    g_return_if_fail(par != NULL);
    memset(par, 0, sizeof *par);
    par->tensor_parallel_size = 1;
    par->data_parallel_size = 1;
    par->prefill_context_parallel_size = 1;
    par->decode_context_parallel_size = 1;
    par->enable_expert_parallel = false;
    par->enable_sequence_parallel = false;
    par->disable_custom_all_reduce = false;
    par->dcp_comm_backend = MODEL_DCP_AG_RS;
    par->all2all_backend = MODEL_A2A_ALLGATHER_REDUCESCATTER;
    par->cp_kv_cache_interleave_size = 1;
    par->pipeline_parallel_size = 1;
}

/* 0 (a ModelParallel filled without model_parallel_defaults) means 1. */
static uint32_t pp_of(const ModelParallel *par)
{
    return MAX(1u, par->pipeline_parallel_size);
}

void model_pp_indices(uint32_t layers, uint32_t pp, uint32_t rank, uint32_t *start, uint32_t *end)
{
    pp = MAX(1u, pp);
    uint32_t per = layers / pp, rem = layers % pp, s = 0;
    for (uint32_t k = 0; k <= rank && k < pp; k++) {
        /* partitions[-i] += 1 for i in 2 .. rem + 1: stages pp - 2 down to pp - 1 - rem */
        uint32_t n = per + (rem && k + 1 < pp && k + 1 + rem >= pp ? 1u : 0u);
        if (k == rank) {
            *start = s;
            *end = s + n;
            return;
        }
        s += n;
    }
    *start = *end = layers;
}

/* Every validation failure is MODEL_PLAN_ERROR code 0; the message names the key. */
static void plan_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void plan_error(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, MODEL_PLAN_ERROR, 0, msg);
}

static bool check_size(const char *key, uint32_t v, GError **error)
{
    if (v >= 1 && v <= PLAN_MAX_SIZE)
        return true;
    plan_error(error, "parallel.%s: must be between 1 and %u, got %u.", key, PLAN_MAX_SIZE, v);
    return false;
}

/* Heads one rank holds in the DCP combine after the query gather, the H of
 * dcp_a2a_lse_reduce's [B, H, D] (vllm/v1/attention/ops/dcp.py). Without PCP the query is
 * all-gathered over the DCP group (H = heads/TP x DCP); with PCP it is all-gathered over TP
 * only when DCP spans TP x PCP (mla_attention.py: "if dcp_world_size > pcp_world_size"), so
 * H = heads/TP x DCP/PCP. */
static uint64_t dcp_gathered_heads(const ModelParallel *par, uint32_t num_heads)
{
    uint64_t per_rank = num_heads / par->tensor_parallel_size;
    uint32_t pcp = par->prefill_context_parallel_size;
    uint32_t dcp = par->decode_context_parallel_size;
    return pcp > 1 ? per_rank * (dcp / pcp) : per_rank * dcp;
}

/* ParallelConfig._validate_parallel_config (vllm/config/parallel.py) and our own bounds. */
static bool validate_parallel(const ModelParallel *par, GError **error)
{
    if (!check_size("tensor_parallel_size", par->tensor_parallel_size, error) ||
        !check_size("data_parallel_size", par->data_parallel_size, error) ||
        !check_size("prefill_context_parallel_size", par->prefill_context_parallel_size, error) ||
        !check_size("decode_context_parallel_size", par->decode_context_parallel_size, error) ||
        !check_size("pipeline_parallel_size", pp_of(par), error))
        return false;
    if (pp_of(par) > MODEL_PLAN_MAX_PP) {
        plan_error(error, "parallel.pipeline_parallel_size: at most %u stages, got %u.",
                   MODEL_PLAN_MAX_PP, pp_of(par));
        return false;
    }
    if (par->cp_kv_cache_interleave_size < 1) {
        plan_error(error, "parallel.cp_kv_cache_interleave_size: must be >= 1, got %u.",
                   par->cp_kv_cache_interleave_size);
        return false;
    }
    if (par->dcp_comm_backend != MODEL_DCP_AG_RS && par->dcp_comm_backend != MODEL_DCP_A2A) {
        plan_error(error, "parallel.dcp_comm_backend: unknown backend %d (expected ag_rs or a2a).",
                   (int)par->dcp_comm_backend);
        return false;
    }
    uint32_t tp = par->tensor_parallel_size, dp = par->data_parallel_size;
    uint32_t pcp = par->prefill_context_parallel_size, dcp = par->decode_context_parallel_size;
    uint32_t pp = pp_of(par);
    uint64_t world = (uint64_t)dp * pp * pcp * tp;
    if (world > PLAN_MAX_WORLD) {
        plan_error(error,
                   "parallel: world size data_parallel_size x pipeline_parallel_size x "
                   "prefill_context_parallel_size x tensor_parallel_size = %u x %u x %u x %u = "
                   "%" G_GUINT64_FORMAT " exceeds the limit of %u ranks.",
                   dp, pp, pcp, tp, world, PLAN_MAX_WORLD);
        return false;
    }
    if (pcp > 1 && dp > 1) {
        plan_error(error,
                   "parallel.prefill_context_parallel_size: PCP does not support data "
                   "parallelism yet. (prefill_context_parallel_size=%u, "
                   "data_parallel_size=%u)",
                   pcp, dp);
        return false;
    }
    if (pcp == 1) {
        /* "DCP reuses the TP ranks when PCP is disabled." */
        if (tp % dcp != 0) {
            plan_error(error,
                       "parallel.decode_context_parallel_size: tp_size=%u must be divisible by "
                       "dcp_size=%u.",
                       tp, dcp);
            return false;
        }
    } else if (dcp != 1 && dcp != pcp && dcp != tp * pcp) {
        /* Python prints sorted({1, pcp, tp * pcp}); pcp >= 2 here, so only pcp == tp*pcp
         * (TP = 1) can collapse two entries. */
        g_autofree char *valid = tp == 1 ? g_strdup_printf("[1, %u]", pcp)
                                         : g_strdup_printf("[1, %u, %u]", pcp, tp * pcp);
        plan_error(error,
                   "parallel.decode_context_parallel_size: When PCP is enabled, DCP must be "
                   "disabled, span the PCP axis, or span the full TP x PCP axis. Got TP=%u, "
                   "PCP=%u, DCP=%u; valid DCP sizes are %s.",
                   tp, pcp, dcp, valid);
        return false;
    }
    if (par->dcp_comm_backend == MODEL_DCP_A2A && dcp <= 1) {
        plan_error(error, "parallel.dcp_comm_backend: dcp_comm_backend='a2a' requires "
                          "decode_context_parallel_size > 1.");
        return false;
    }
    if (pcp > 1 && pp > 1) {
        /* PCPManager.validate_config (vllm/v1/worker/gpu/pcp_manager.py), which vLLM runs at
         * KV-cache init, after ParallelConfig's checks above */
        plan_error(error,
                   "parallel.pipeline_parallel_size: MRV2 PCP does not support PP yet. "
                   "(prefill_context_parallel_size=%u, pipeline_parallel_size=%u)",
                   pcp, pp);
        return false;
    }
    return true;
}

/* ModelConfig.verify_with_parallel_config (vllm/config/model.py), then the checks vLLM only
 * meets while building the model (QKVParallelLinear) or on the first forward
 * (dcp_a2a_lse_reduce), in that order. */
static bool validate_arch(const ModelParallel *par, const ModelArch *arch, GError **error)
{
    uint32_t tp = par->tensor_parallel_size, dcp = par->decode_context_parallel_size;
    uint32_t heads = arch->num_heads;
    /* every layer's heads (Step-3.5's sliding layers have their own count) */
    for (uint32_t l = 0; l <= arch->num_layers; l++) {
        uint32_t h = l < arch->num_layers ? model_arch_layer_heads(arch, l) : heads;
        if (h % tp != 0) {
            plan_error(error,
                       "parallel.tensor_parallel_size: Total number of attention heads (%u) must "
                       "be divisible by tensor parallel size (%u).",
                       h, tp);
            return false;
        }
    }
    uint32_t pp = pp_of(par);
    if (par->pp_partition_given) {
        /* get_pp_indices with VLLM_PP_LAYER_PARTITION set (vllm/distributed/utils.py) */
        uint64_t sum = 0;
        for (uint32_t k = 0; k < pp; k++)
            sum += par->pp_partition[k];
        if (sum != arch->num_layers) {
            plan_error(error,
                       "parallel.pp_layer_partition: sum(partitions)=%" G_GUINT64_FORMAT
                       " does not match num_hidden_layers=%u.",
                       sum, arch->num_layers);
            return false;
        }
    }
    bool has_experts = arch->moe || arch->n_routed_experts > 0;
    if (par->enable_expert_parallel && !has_experts) {
        plan_error(error,
                   "parallel.enable_expert_parallel: Number of experts in the model must be "
                   "greater than 0 when expert parallelism is enabled. (model %s has no "
                   "routed experts)",
                   arch->name[0] ? arch->name : "(unnamed)");
        return false;
    }
    /* GQA/MQA: KV heads are split over TP, or replicated when TP >= KV heads. MLA decode is
     * MQA over one latent "head" replicated on every rank, so none of this applies. */
    uint32_t kv = arch->num_kv_heads ? arch->num_kv_heads : heads;
    if (!arch->mla && kv > 0) {
        if (dcp > 1) {
            if (tp <= kv) {
                plan_error(error,
                           "parallel.decode_context_parallel_size: Decode context parallelism "
                           "for GQA/MQA requires --tensor-parallel-size (%u) to be greater than "
                           "the model's total number of KV heads (%u).",
                           tp, kv);
                return false;
            }
            uint32_t max_dcp = tp / kv;
            if (dcp > max_dcp) {
                plan_error(error,
                           "parallel.decode_context_parallel_size: --decode-context-parallel-size "
                           "(%u) exceeds the maximum supported value (%u) for "
                           "--tensor-parallel-size (%u) and %u model KV heads.",
                           dcp, max_dcp, tp, kv);
                return false;
            }
            uint32_t q_per_kv = heads / kv;
            if (q_per_kv % dcp != 0) {
                plan_error(error,
                           "parallel.decode_context_parallel_size: The model's number of query "
                           "heads per KV head (%u) must be divisible by "
                           "--decode-context-parallel-size (%u) for GQA/MQA.",
                           q_per_kv, dcp);
                return false;
            }
        }
        /* QKVParallelLinear: divide(tp, kv) when tp >= kv, else divide(kv, tp);
         * ensure_divisibility says "{} is not divisible by {}". */
        uint32_t num = tp >= kv ? tp : kv, den = tp >= kv ? kv : tp;
        if (num % den != 0) {
            plan_error(error,
                       "parallel.tensor_parallel_size: %u is not divisible by %u "
                       "(tensor_parallel_size=%u, num_key_value_heads=%u: KV heads are split "
                       "over TP ranks, or replicated when TP >= KV heads, so one must divide the "
                       "other).",
                       num, den, tp, kv);
            return false;
        }
    }
    if (par->dcp_comm_backend == MODEL_DCP_A2A && dcp > 1 && heads > 0) {
        uint64_t h = dcp_gathered_heads(par, heads);
        if (h % dcp != 0) {
            plan_error(error,
                       "parallel.dcp_comm_backend: H=%" G_GUINT64_FORMAT
                       " must be divisible by DCP world size %u. (a2a splits the %" G_GUINT64_FORMAT
                       " gathered attention heads across the DCP group)",
                       h, dcp, h);
            return false;
        }
    }
    return true;
}

/* The quantized layers' load-time shape rules (model/quant-shape.h), as a plan error. */
static bool check_quant_shapes(const ModelParallel *par, const ModelArch *arch, GError **error)
{
    ModelQuantShapeSizes sz = {
        .tensor_parallel_size = par->tensor_parallel_size,
        .data_parallel_size = par->data_parallel_size,
        .prefill_context_parallel_size = par->prefill_context_parallel_size,
        .enable_expert_parallel = par->enable_expert_parallel,
    };
    g_autoptr(GError) e = NULL;
    if (model_quant_shape_check(&sz, arch, &e))
        return true;
    plan_error(error, "%s", e->message);
    return false;
}

/* rank = ((dp * PP + pp) * PCP + pcp) * TP + tp */
static uint32_t rank_of(const ModelParallel *par, uint32_t dp, uint32_t pp, uint32_t pcp,
                        uint32_t tp)
{
    return ((dp * pp_of(par) + pp) * par->prefill_context_parallel_size + pcp) *
               par->tensor_parallel_size +
           tp;
}

/* Index of (dp, pp, pcp, tp) in all_ranks.transpose(-1, -2) flattened: the DCP row-major
 * order. */
static uint32_t dcp_flat_index(const ModelParallel *par, uint32_t dp, uint32_t pp, uint32_t pcp,
                               uint32_t tp)
{
    uint32_t P = par->prefill_context_parallel_size, T = par->tensor_parallel_size;
    if (par->decode_context_parallel_size == 1)
        return rank_of(par, dp, pp, pcp, tp); /* no transpose: one group per rank, in order */
    return (dp * pp_of(par) + pp) * (T * P) + tp * P + pcp;
}

ModelPlan *model_plan_new(const ModelParallel *par, const ModelArch *arch, GError **error)
{
    g_return_val_if_fail(par != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    if (!validate_parallel(par, error))
        return NULL;
    if (arch != NULL && !validate_arch(par, arch, error))
        return NULL;
    if (arch != NULL && !check_quant_shapes(par, arch, error))
        return NULL;

    ModelPlan *plan = g_new0(ModelPlan, 1);
    plan->par = *par;
    uint32_t T = par->tensor_parallel_size, P = par->prefill_context_parallel_size;
    uint32_t D = par->data_parallel_size, C = par->decode_context_parallel_size;
    uint32_t S = pp_of(par);
    plan->par.pipeline_parallel_size = S;
    plan->world = D * S * P * T;
    /* FusedMoEParallelConfig: EP spans DP x PCP x TP (of one stage). vLLM builds the EP group
     * when the model is MoE or no model config is known (parallel_state.py), hence arch ==
     * NULL counts. */
    bool has_experts = arch == NULL || arch->moe || arch->n_routed_experts > 0;
    plan->ep_size = par->enable_expert_parallel && has_experts ? D * P * T : 1;
    plan->moe = has_experts;
    plan->layer_start = g_new(uint32_t, S);
    plan->layer_end = g_new(uint32_t, S);
    uint32_t layers = arch ? arch->num_layers : 0, at = 0;
    for (uint32_t k = 0; k < S; k++) {
        if (par->pp_partition_given) {
            plan->layer_start[k] = at;
            at += par->pp_partition[k];
            plan->layer_end[k] = MIN(at, layers);
        } else {
            model_pp_indices(layers, S, k, &plan->layer_start[k], &plan->layer_end[k]);
        }
    }

    plan->coord = g_new(ModelCoord, plan->world);
    for (uint32_t d = 0; d < D; d++)
        for (uint32_t s = 0; s < S; s++)
            for (uint32_t q = 0; q < P; q++)
                for (uint32_t t = 0; t < T; t++) {
                    uint32_t r = rank_of(par, d, s, q, t);
                    plan->coord[r].dp = d;
                    plan->coord[r].pp = s;
                    plan->coord[r].pcp = q;
                    plan->coord[r].tp = t;
                    plan->coord[r].dcp = dcp_flat_index(par, d, s, q, t) % C;
                }
    int32_t **ids[] = {&plan->tp_group, &plan->pcp_group, &plan->dcp_group,  &plan->dp_group,
                       &plan->ep_group, &plan->pp_group,  &plan->sched_group};
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
        *ids[i] = g_new(int32_t, plan->world);
        for (uint32_t r = 0; r < plan->world; r++)
            (*ids[i])[r] = -1;
    }
    return plan;
}

void model_plan_free(ModelPlan *plan)
{
    if (plan == NULL)
        return;
    g_free(plan->coord);
    g_free(plan->tp_group);
    g_free(plan->pcp_group);
    g_free(plan->dcp_group);
    g_free(plan->dp_group);
    g_free(plan->ep_group);
    g_free(plan->pp_group);
    g_free(plan->sched_group);
    g_free(plan->layer_start);
    g_free(plan->layer_end);
    g_free(plan);
}

static int32_t add_group(SchedProgram *p, const char *kind, uint32_t index, const int32_t *ranks,
                         uint32_t n, int32_t *ids)
{
    char name[32];
    g_snprintf(name, sizeof name, "%s%u", kind, index);
    int32_t g = sched_program_add_group(p, name, ranks, n);
    for (uint32_t i = 0; i < n; i++)
        ids[ranks[i]] = g;
    return g;
}

void model_plan_add_groups(ModelPlan *plan, SchedProgram *p)
{
    g_return_if_fail(plan != NULL && p != NULL);
    g_return_if_fail(p->n_ranks >= plan->world);
    const ModelParallel *par = &plan->par;
    uint32_t T = par->tensor_parallel_size, P = par->prefill_context_parallel_size;
    uint32_t D = par->data_parallel_size, C = par->decode_context_parallel_size;
    uint32_t S = pp_of(par);
    uint32_t W = plan->world;
    g_autofree int32_t *m = g_new(int32_t, W);

    /* TP: view(-1, TP), group k = (dp * PP + pp) * PCP + pcp, members by tp. */
    for (uint32_t k = 0; k < D * S * P; k++) {
        for (uint32_t t = 0; t < T; t++)
            m[t] = (int32_t)(k * T + t);
        int32_t g = add_group(p, "tp", k, m, T, plan->tp_group);
        /* vLLM's CudaCommunicator gives only the TP group its custom all-reduce (and symmetric
         * memory), for 2, 4, 6 or 8 ranks (CustomAllreduce._SUPPORTED_WORLD_SIZES), unless
         * --disable-custom-all-reduce; the fabric checks the hardware's side (one node, CUDA or
         * ROCm, NVLink) and keeps NCCL where it does not hold. */
        if (!par->disable_custom_all_reduce && (T == 2 || T == 4 || T == 6 || T == 8))
            sched_program_group_impl(p, g, NET_IMPL_CUSTOM);
    }
    /* PCP: transpose(3, 4), group k = (dp * PP + pp) * TP + tp, members by pcp. */
    for (uint32_t d = 0; d < D; d++)
        for (uint32_t s = 0; s < S; s++)
            for (uint32_t t = 0; t < T; t++) {
                for (uint32_t q = 0; q < P; q++)
                    m[q] = (int32_t)rank_of(par, d, s, q, t);
                add_group(p, "pcp", (d * S + s) * T + t, m, P, plan->pcp_group);
            }
    /* DCP: rows of DCP consecutive entries of the (transposed when DCP > 1) rank order. */
    g_autofree int32_t *order = g_new(int32_t, W);
    for (uint32_t d = 0; d < D; d++)
        for (uint32_t s = 0; s < S; s++)
            for (uint32_t q = 0; q < P; q++)
                for (uint32_t t = 0; t < T; t++)
                    order[dcp_flat_index(par, d, s, q, t)] = (int32_t)rank_of(par, d, s, q, t);
    for (uint32_t k = 0; k < W / C; k++)
        add_group(p, "dcp", k, order + (size_t)k * C, C, plan->dcp_group);
    /* PP: transpose(2, 4), group k = (dp * TP + tp) * PCP + pcp, members by stage. */
    if (S > 1)
        for (uint32_t d = 0; d < D; d++)
            for (uint32_t t = 0; t < T; t++)
                for (uint32_t q = 0; q < P; q++) {
                    for (uint32_t s = 0; s < S; s++)
                        m[s] = (int32_t)rank_of(par, d, s, q, t);
                    add_group(p, "pp", (d * T + t) * P + q, m, S, plan->pp_group);
                }
    /* DP: transpose(1, 4), group k = (tp * PP + pp) * PCP + pcp, members by dp. */
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t s = 0; s < S; s++)
            for (uint32_t q = 0; q < P; q++) {
                for (uint32_t d = 0; d < D; d++)
                    m[d] = (int32_t)rank_of(par, d, s, q, t);
                add_group(p, "dp", (t * S + s) * P + q, m, D, plan->dp_group);
            }
    /* EP: transpose(1, 2), one group per stage of its DP x PCP x TP ranks. vLLM builds it for
     * every MoE model, whether or not expert parallelism is on (initialize_model_parallel: "if
     * config.model_config is None or ...is_moe"); without EP nothing is dispatched over it (the
     * DP/PCP gathers use those groups), but it exists, with its communicator. */
    uint32_t E = D * P * T;
    if (plan->ep_size > 1 || (plan->moe && E > 1))
        for (uint32_t s = 0; s < S; s++) {
            uint32_t n = 0;
            for (uint32_t d = 0; d < D; d++)
                for (uint32_t q = 0; q < P; q++)
                    for (uint32_t t = 0; t < T; t++)
                        m[n++] = (int32_t)rank_of(par, d, s, q, t);
            add_group(p, "ep", s, m, E, plan->ep_group);
        }
    /* PP: the engine core's next SchedulerOutput reaches every worker after the last stage's
     * output came back (lower.c) */
    if (S > 1)
        for (uint32_t d = 0; d < D; d++) {
            uint32_t per = S * P * T;
            for (uint32_t i = 0; i < per; i++)
                m[i] = (int32_t)(d * per + i);
            add_group(p, "sched", d, m, per, plan->sched_group);
        }
}

uint32_t model_pcp_rows(uint32_t len, uint32_t pcp, uint32_t r)
{
    g_return_val_if_fail(pcp >= 1 && r < pcp, 0);
    /* PCPManager._get_rank_segments (vllm/v1/worker/gpu/pcp_manager.py). 64-bit: len and
     * 2 * pcp may be near UINT32_MAX. */
    uint64_t chunks = 2 * (uint64_t)pcp;
    uint64_t chunk = ((uint64_t)len + chunks - 1) / chunks;
    uint64_t idx[2] = {r, chunks - 1 - r};
    uint64_t rows = 0;
    for (int i = 0; i < 2; i++) {
        uint64_t off = idx[i] * chunk;
        if (off < len)
            rows += MIN(chunk, (uint64_t)len - off);
    }
    return (uint32_t)rows;
}

uint32_t model_dcp_local_len(uint32_t len, uint32_t dcp, uint32_t r, uint32_t il)
{
    g_return_val_if_fail(dcp >= 1 && r < dcp && il >= 1, 0);
    /* get_dcp_local_seq_lens (vllm/v1/attention/backends/utils.py):
     * base = L // I // D * I; rem = clip(L - base * D - r * I, 0, I). */
    int64_t L = len, D = dcp, I = il;
    int64_t base = L / I / D * I;
    int64_t rem = L - base * D - (int64_t)r * I;
    rem = CLAMP(rem, 0, I);
    return (uint32_t)(base + rem);
}

const char *const model_all2all_backend_names[MODEL_A2A_COUNT + 1] = {
    "allgather_reducescatter",
    "naive",
    "deepep_high_throughput",
    "deepep_low_latency",
    "mori_high_throughput",
    "mori_low_latency",
    "nixl_ep",
    "flashinfer_nvlink_one_sided",
    "flashinfer_nvlink_two_sided",
    NULL,
};

bool model_all2all_gathers(ModelAll2AllBackend b)
{
    return b == MODEL_A2A_ALLGATHER_REDUCESCATTER || b == MODEL_A2A_NAIVE;
}

bool model_all2all_sequence_parallel(const ModelParallel *par)
{
    /* vllm/config/parallel.py use_sequence_parallel_moe (2026): every backend but naive and
     * flashinfer_nvlink_two_sided */
    ModelAll2AllBackend b = par->all2all_backend;
    return b != MODEL_A2A_NAIVE && b != MODEL_A2A_FLASHINFER_NVLINK_TWO_SIDED &&
           par->enable_expert_parallel && par->tensor_parallel_size > 1 &&
           par->data_parallel_size > 1;
}
