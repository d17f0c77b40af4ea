/* model/lifecycle.c — the start-up phases after the KV cache (model/lifecycle.h). */
#include "lifecycle.h"

#include <math.h>
#include <string.h>

static double gib(double b)
{
    return b / (1024.0 * 1024.0 * 1024.0);
}

/* NVFP4 checkpoints quantize the MoE activations to FP4 before the CUTLASS kernel. */
static bool fp4_activations(const ModelMemPlan *m)
{
    return m->weights_format && strstr(m->weights_format, "routed experts nvfp4") != NULL;
}

void model_lifecycle_check(ModelMemPlan *m, const ModelArch *a, const ModelPlan *plan,
                           const ModelEngine *e, const NetHardware *hw)
{
    if (!m || !a->moe || !model_moe_backend_autotunes(e->moe_backend) || m->vllm.rank < 0)
        return;
    ModelMoeWorkspace w;
    if (!model_moe_cutlass_workspace(a, &plan->par, e->max_num_batched_tokens, fp4_activations(m),
                                     &w))
        return;
    const ModelMemRank *r = &m->ranks[m->vllm.rank];
    if (r->kv_budget_bytes <= 0)
        return; /* the start-up already failed at the KV cache */
    /* After the KV cache the budget is spent: the profile run's activation blocks stay in
     * PyTorch's caching allocator, which a single allocation this large cannot reuse, so the
     * workspace needs device memory outside the budget: HBM - requested - the context. */
    int64_t free_b =
        (int64_t)m->hbm_bytes - (int64_t)m->requested_bytes - (int64_t)m->context_bytes;
    uint64_t non_kv = 0;
    for (int i = 0; i < MODEL_MEM_COUNT; i++)
        if (i != MODEL_MEM_KV_CACHE)
            non_kv += r->bytes[i];
    double band = MODEL_MEM_NON_KV_UNDERESTIMATE * (double)non_kv;
    bool oom = (double)w.bytes > (double)free_b;
    bool tight = !oom && (double)w.bytes > (double)free_b - band;
    if (!oom && !tight)
        return;
    /* the utilization that leaves the workspace (and the band, for a warning) free */
    double need = (double)w.bytes + (double)m->context_bytes + (tight || oom ? band : 0);
    double u_fit = floor((1.0 - need / (double)m->hbm_bytes) * 1e4) / 1e4;
    g_autofree char *why =
        tight ? g_strdup_printf(": it fits, but not within ranksim's uncertainty (its non-KV "
                                "memory has been up to %.1f %% low, %.2f GiB here)",
                                100.0 * MODEL_MEM_NON_KV_UNDERESTIMATE, gib(band))
              : g_strdup("");
    g_autofree char *msg = g_strdup_printf(
        "%s during MoE autotuning (%s, after the KV cache): the CUTLASS MoE runner's workspace for "
        "the dummy forward of max_num_batched_tokens=%u (%" G_GUINT64_FORMAT " rows per rank "
        "after the dispatch gather, %u local experts) is one allocation of %.2f GiB, and %.2f "
        "GiB of the device's %.2f GiB lie outside the KV budget (%.2f GiB requested at %.4g, "
        "%.2f GiB of runtime context)%s. Lower gpu_memory_utilization to %.4f or below, or "
        "max_num_batched_tokens.",
        oom ? "CUDA out of memory" : "Possible CUDA out of memory",
        model_moe_backend_name(e->moe_backend), e->max_num_batched_tokens, w.tokens,
        w.local_experts, gib((double)w.bytes), gib((double)free_b), gib((double)m->hbm_bytes),
        gib((double)m->requested_bytes), m->utilization, gib((double)m->context_bytes), why, u_fit);
    g_autofree char *detail = g_strdup_printf(
        "{\"phase\":\"moe_autotune\",\"moe_backend\":\"%s\",\"needed_bytes\":%" G_GUINT64_FORMAT
        ",\"free_bytes\":%" G_GINT64_FORMAT
        ",\"uncertainty_bytes\":%.0f,\"rows\":%" G_GUINT64_FORMAT
        ",\"local_experts\":%u,\"permuted_in_bytes\":%" G_GUINT64_FORMAT
        ",\"permuted_out_bytes\":%" G_GUINT64_FORMAT ",\"scale_bytes\":%" G_GUINT64_FORMAT
        ",\"routing_bytes\":%" G_GUINT64_FORMAT ",\"gpu_memory_utilization_fit\":%.4f}",
        model_moe_backend_name(e->moe_backend), w.bytes, free_b, band, w.tokens, w.local_experts,
        w.permuted_in, w.permuted_out, w.scales, w.routing, u_fit);
    g_ptr_array_add(m->diags, sched_diag_new("oom", oom ? SCHED_SEV_ERROR : SCHED_SEV_WARNING,
                                             m->vllm.rank, -1, 0, -1, "moe_autotune", msg, detail));
}
