/* model/moe.c — MoE kernel backends and the CUTLASS MoE workspace (model/moe.h). */
#include "moe.h"

#include <glib.h>
#include <string.h>

static const char *const names[MODEL_MOE_BACKEND_COUNT] = {
    [MODEL_MOE_AUTO] = "auto",
    [MODEL_MOE_TRITON] = "triton",
    [MODEL_MOE_DEEP_GEMM] = "deep_gemm",
    [MODEL_MOE_DEEP_GEMM_MEGA_MOE] = "deep_gemm_mega_moe",
    [MODEL_MOE_CUTLASS] = "cutlass",
    [MODEL_MOE_FLASHINFER_TRTLLM] = "flashinfer_trtllm",
    [MODEL_MOE_FLASHINFER_CUTLASS] = "flashinfer_cutlass",
    [MODEL_MOE_FLASHINFER_CUTEDSL] = "flashinfer_cutedsl",
    [MODEL_MOE_MARLIN] = "marlin",
    [MODEL_MOE_AITER] = "aiter",
    [MODEL_MOE_EMULATION] = "emulation",
};

const char *model_moe_backend_name(ModelMoeBackend b)
{
    return (unsigned)b < MODEL_MOE_BACKEND_COUNT ? names[b] : "?";
}

bool model_moe_backend_parse(const char *s, ModelMoeBackend *out)
{
    for (int i = 0; i < MODEL_MOE_BACKEND_COUNT; i++)
        if (g_ascii_strcasecmp(s, names[i]) == 0) {
            *out = (ModelMoeBackend)i;
            return true;
        }
    return false;
}

void model_moe_backend_names(const char **out)
{
    for (int i = 0; i < MODEL_MOE_BACKEND_COUNT; i++)
        out[i] = names[i];
    out[MODEL_MOE_BACKEND_COUNT] = NULL;
}

bool model_moe_backend_autotunes(ModelMoeBackend b)
{
    return b == MODEL_MOE_FLASHINFER_CUTLASS || b == MODEL_MOE_FLASHINFER_TRTLLM;
}

/* CUTLASS's allocation alignment, kCudaMemAlign (tensorrt_llm common/workspace.h). */
static uint64_t a128(uint64_t x)
{
    return (x + 127) / 128 * 128;
}

/* NVFP4 activation scale factors of K columns: one fp8 per 16 values, rows padded per expert to
 * the 128 x 4 scale-factor atom (moe_gemm_kernels.h). */
static uint64_t fp4_scales(uint64_t rows, uint64_t tokens, uint32_t experts, uint64_t k)
{
    uint64_t r = MIN(rows, tokens * experts) + 127ull * experts;
    return (r + 127) / 128 * 128 * ((k / 16 + 3) / 4 * 4);
}

bool model_moe_cutlass_workspace(const ModelArch *a, const ModelParallel *par,
                                 uint32_t max_num_batched_tokens, bool fp4_act,
                                 ModelMoeWorkspace *w)
{
    uint32_t dp = MAX(1u, par->data_parallel_size),
             pcp = MAX(1u, par->prefill_context_parallel_size);
    /* The all2all dispatch gathers the tokens over DP, or over PCP when DP is 1. */
    uint64_t m = max_num_batched_tokens;
    if (par->enable_expert_parallel && (dp > 1 || pcp > 1))
        m *= dp > 1 ? dp : pcp;
    return model_moe_cutlass_workspace_rows(a, par, m, fp4_act, w);
}

bool model_moe_cutlass_workspace_rows(const ModelArch *a, const ModelParallel *par, uint64_t m,
                                      bool fp4_act, ModelMoeWorkspace *w)
{
    memset(w, 0, sizeof *w);
    if (!a->moe || a->n_routed_experts == 0 || a->num_experts_per_tok == 0)
        return false;
    uint32_t dp = MAX(1u, par->data_parallel_size),
             pcp = MAX(1u, par->prefill_context_parallel_size);
    uint32_t tp = MAX(1u, par->tensor_parallel_size);
    /* FusedMoEParallelConfig.make: with EP the experts are split over DP x PCP x TP and each
     * keeps its full width; without, the width is split. */
    uint32_t ep = par->enable_expert_parallel ? dp * pcp * tp : 1;
    w->local_experts = MAX(1u, a->n_routed_experts / ep);
    w->inter = par->enable_expert_parallel ? a->moe_intermediate_size
                                           : MAX(1u, a->moe_intermediate_size / (dp * pcp * tp));
    w->tokens = m;
    uint64_t n = m * a->num_experts_per_tok, H = a->hidden_size, I = w->inter;
    double act = fp4_act ? 0.5 : 2.0;
    /* getWorkspaceDeviceBufferSizes: the permuted input and the fc outputs overlap in two
     * buffers; outputs are bf16, fc1 of a gated MLP writes 2 x I. */
    uint64_t in1 = (uint64_t)((double)n * (double)H * act), in2 = n * H * 2,
             in3 = (uint64_t)((double)n * (double)I * act);
    w->permuted_in = a128(MAX(in1, MAX(in2, in3)));
    uint64_t o1 = 2 * n * I * 2, o2 = n * H * 2;
    w->permuted_out = a128(MAX(o1, MAX(o2, in3)));
    w->scales = fp4_act ? a128(MAX(fp4_scales(n, m, w->local_experts, H),
                                   fp4_scales(n, m, w->local_experts, I)))
                        : 0;
    /* permutation maps (3 x n int32), the source-to-destination map (n int32) and the
     * per-expert token counters (experts x M int32) */
    w->routing = a128(3 * n * 4) + a128(n * 4) + a128((uint64_t)w->local_experts * m * 4);
    w->bytes = w->permuted_in + w->permuted_out + w->scales + w->routing;
    return true;
}

/* The profiler's buffers for the second GEMM of a bucket of M tokens, n = M x top_k routes:
 * the routing maps (three of 16 n int32, the permutation and scale maps, the per-expert
 * counters), fc2's input (n x I, FP4 or bf16), its output before the finalize (n x H bf16),
 * the weight scale factors of both GEMMs and the activation scale factors (NVFP4). */
uint64_t model_moe_cutlass_profile_workspace(const ModelArch *a, const ModelParallel *par,
                                             uint32_t tune_max_num_tokens, bool fp4_act)
{
    ModelMoeWorkspace w;
    if (!model_moe_cutlass_workspace(a, par, tune_max_num_tokens, fp4_act, &w))
        return 0;
    uint64_t m = tune_max_num_tokens, n = m * a->num_experts_per_tok;
    uint64_t H = a->hidden_size, I = w.inter, E = w.local_experts;
    double act = fp4_act ? 0.5 : 2.0;
    uint64_t maps = 3 * a128(16 * n * 4) + a128(n * 4) + a128(n * 4) + a128(E * m * 4);
    uint64_t in = a128((uint64_t)((double)(n * I) * act)), out = a128(n * H * 2);
    uint64_t sf = 0;
    if (fp4_act) {
        uint64_t ih = (I + 63) / 64 * 64, hh = (H + 63) / 64 * 64;
        uint64_t weights =
            E * ((I + 127) / 128 * 128) * hh / 16 + E * ((H + 127) / 128 * 128) * ih / 16;
        uint64_t rows = (MIN(n, m * E) + E * 127 + 127) / 128 * 128;
        sf = weights + a128(rows * MAX(hh, ih) / 16);
    }
    return maps + in + out + sf;
}

uint32_t model_moe_tune_max_num_tokens(const ModelParallel *par, uint32_t max_num_batched_tokens,
                                       bool scheduler_limit)
{
    const uint32_t fi_default = 8192;
    if (!scheduler_limit)
        return fi_default;
    uint64_t t = (uint64_t)max_num_batched_tokens * MAX(1u, par->data_parallel_size);
    return (uint32_t)MIN((uint64_t)UINT32_MAX, MAX((uint64_t)fi_default, t));
}
