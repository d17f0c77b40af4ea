/* model/lower-hybrid.c — a state mixer's ops on one rank (model/lower-hybrid.h). */
#include "lower-hybrid.h"

#include <glib.h>

#include "memory-hybrid.h"

/* FLA's chunk for the chunked delta rule (fla/ops/chunk.py: BT = 64). */
#define GDN_CHUNK 64.0

static ModelHybridOp linear(const char *name, double in, double out)
{
    return (ModelHybridOp){.name = name, .kind = MODEL_HOP_LINEAR, .in = in, .out = out};
}

static ModelHybridOp kernel(const char *name, ModelKernelTime k, uint32_t launches)
{
    return (ModelHybridOp){.name = name, .kind = MODEL_HOP_KERNEL, .k = k, .launches = launches};
}

char *model_lower_hybrid_refusal(const ModelArch *a, uint32_t tp, uint32_t pcp, uint32_t dcp,
                                 bool sp)
{
    g_return_val_if_fail(a != NULL, NULL);
    if (!model_arch_is_hybrid(a))
        return NULL;
    tp = MAX(1u, tp);
    if (a->mamba_num_heads) {
        /* MambaMixer2.__init__ (layers/mamba/mamba_mixer2.py) */
        if (a->mamba_num_heads % tp)
            return g_strdup_printf("Tensor parallel world size must divide num heads. (mamba_num_heads "
                                   "%u, tensor_parallel_size %u)",
                                   a->mamba_num_heads, tp);
        if (a->mamba_n_groups % tp && a->mamba_n_groups != 1)
            return g_strdup_printf("If tensor parallel world size does not divide num_groups, then "
                                   "num_groups must equal 1. (n_groups %u, tensor_parallel_size %u)",
                                   a->mamba_n_groups, tp);
    }
    if (a->linear_num_value_heads) {
        /* Qwen3NextGatedDeltaNet splits its heads with divide(heads, tp_size), whose
         * ensure_divisibility asserts "{numerator} is not divisible by {denominator}" */
        uint32_t heads[2] = {a->linear_num_key_heads, a->linear_num_value_heads};
        for (int i = 0; i < 2; i++)
            if (heads[i] % tp)
                return g_strdup_printf("%u is not divisible by %u (linear_num_%s_heads over "
                                       "tensor_parallel_size)",
                                       heads[i], tp, i ? "value" : "key");
    }
    if (pcp > 1 || dcp > 1)
        return g_strdup_printf("context parallelism (prefill %u, decode %u) with the recurrent "
                               "state of a hybrid model is not simulated: ranksim shards only "
                               "attention KV caches by context; run with "
                               "--prefill-context-parallel-size 1 --decode-context-parallel-size 1",
                               pcp, dcp);
    if (sp && tp > 1)
        return g_strdup("sequence parallelism with the state mixers of a hybrid model is not "
                        "simulated (ranksim lowers them on the TP rows); turn the sequence-parallel "
                        "pass off (compilation_config pass_config enable_sp)");
    return NULL;
}

uint32_t model_lower_hybrid_mixer(const ModelHybridMixerIn *in,
                                  ModelHybridOp out[MODEL_HYBRID_MAX_OPS])
{
    g_return_val_if_fail(in && in->a && out, 0);
    const ModelArch *a = in->a;
    ModelHybridDims d;
    if (!model_hybrid_dims(a, in->mixer, in->tp, &d))
        return 0;
    bool gdn = in->mixer == MODEL_MIXER_GDN;
    ModelSsmShape sh = {
        .heads = d.heads,
        .head_dim = d.head_dim,
        .state = d.state,
        .groups = d.groups,
        .conv_dim = (double)d.conv_dim,
        .conv_kernel = d.conv_kernel,
        .chunk = gdn ? GDN_CHUNK : (a->mamba_chunk_size ? a->mamba_chunk_size : 256),
        .act_bytes = in->act_bytes,
        .state_bytes = (double)model_hybrid_ssm_elt(a, in->mixer, NULL), /* vLLM main's */
    };
    const ModelSsmBatch *b = &in->batch;
    double H = a->hidden_size, rows = b->tokens;
    uint32_t n = 0;
    out[n++] = linear(gdn ? "in_proj_qkvz" : "in_proj", H, (double)d.in_proj);
    if (gdn)
        out[n++] = linear("in_proj_ba", H, (double)d.ba_proj);
    out[n++] = kernel("conv1d", model_ssm_conv_time(in->dev, &sh, b), 1);
    if (gdn) {
        /* fused_gdn_gating: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b) */
        ModelKernelTime g = model_elementwise_time(in->dev, 4.0 * rows * d.heads * in->act_bytes,
                                                   8.0 * rows * d.heads);
        out[n++] = kernel("gdn_gating", g, 1);
        out[n++] = kernel("gdn_scan", model_gdn_scan_time(in->dev, &sh, b), 2);
    } else {
        out[n++] = kernel("ssm_scan", model_ssm_scan_time(in->dev, &sh, b), 2);
    }
    out[n++] = kernel("gated_norm",
                      model_ssm_gated_norm_time(in->dev, rows, (double)d.inner, in->act_bytes), 1);
    out[n++] = linear("out_proj", (double)d.inner, H);
    return n;
}
