/* model/quant-shape.c — vLLM's load-time shape rules of quantized layers (see quant-shape.h).
 *
 * Sources (vLLM, vllm/model_executor/layers/quantization/):
 *   utils/fp8_utils.py validate_fp8_block_shape (called by Fp8LinearMethod.create_weights and
 *     the compressed-tensors W8A8 FP8 block scheme): "Weight input_size_per_partition = {} is
 *     not divisible by weight quantization block_k = {}." when the layer's input is split over
 *     TP; "Weight output_partition_size = {} is not divisible by weight quantization block_n =
 *     {}." for each output part when the output is split over TP, or for every part but the
 *     last of a fused (merged) layer that is not split.
 *   fp8.py Fp8MoEMethod.create_weights, compressed_tensors_moe.py (W8A8 FP8 block MoE): "The
 *     output_size of gate's and up's weight = {} is not divisible by weight quantization
 *     block_n = {}." and, when TP > 1, "The input_size of down's weight = {} is not divisible
 *     by weight quantization block_k = {}."
 *   modelopt.py ModelOptNvFp4LinearMethod.create_weights: "Unsupported model when in features
 *     size is not multiple of 16" (input_size_per_partition % 16).
 *   awq.py AWQLinearMethod / gptq.py GPTQLinearMethod.create_weights: "The input size is not
 *     aligned with the quantized weight shape. This can be caused by too large tensor parallel
 *     size." (input_size_per_partition % group_size). Marlin (awq_marlin, gptq_marlin) checks
 *     the same group rule (utils/marlin_utils.py verify_marlin_supports_shape); its tile rules
 *     (output per rank % 64, input per rank % 128) are not applied here: AWQ falls back to
 *     its own kernel, and since vLLM 0.23 (PR #43731) W4A16 falls back to a Triton kernel.
 *
 * Per-rank shapes follow vLLM's layers: ColumnParallelLinear splits the output over TP,
 * RowParallelLinear the input; QKVParallelLinear splits heads (KV heads replicated when
 * TP > KV heads); DeepSeek's fused_qkv_a_proj is a merged linear that is not split (disable_tp);
 * FusedMoE splits each expert's intermediate size over TP x DP x PCP without EP
 * (FusedMoEParallelConfig.make, flatten_tp_across_dp_and_pcp) and keeps experts whole with EP.
 */
#include "quant-shape.h"

#include <stdarg.h>

G_DEFINE_QUARK(ranksim - model - quant - shape - error - quark, model_quant_shape_error)

/* One linear as a rank holds it. */
typedef struct {
    const char *name;     /* vLLM's module name inside a layer */
    ModelTensorRole role; /* its tensors' role (the format) */
    uint32_t tp;          /* the layer's TP size (1: not split) */
    uint64_t in, in_part; /* input size, whole and per rank */
    uint64_t out;         /* output size, whole (all parts) */
    uint64_t parts[3];    /* output per rank, per fused part */
    int nparts;
} QLinear;

/* The failure, when one is found: vLLM's message and the tensor it is about. */
typedef struct {
    char msg[256];
    char where[128];
} QFail;

static bool fail(QFail *f, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(QFail *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    return false;
}

/* validate_fp8_block_shape (utils/fp8_utils.py) for one linear. */
static bool check_fp8_block(const QLinear *q, const ModelWeightFormat *f, QFail *out)
{
    uint64_t bn = f->block_n, bk = f->block_k;
    if (bn == 0 || bk == 0)
        return true;
    /* Required by row parallel */
    if (q->tp > 1 && q->in_part && q->in / q->in_part == q->tp && q->in_part % bk != 0)
        return fail(out,
                    "Weight input_size_per_partition = %" G_GUINT64_FORMAT
                    " is not divisible by weight quantization block_k = %" G_GUINT64_FORMAT ".",
                    q->in_part, bk);
    /* Required by column parallel or enabling merged weights */
    uint64_t sum = 0;
    for (int i = 0; i < q->nparts; i++)
        sum += q->parts[i];
    bool tp_split = q->tp > 1 && sum && q->out / sum == q->tp;
    bool merged = q->nparts > 1;
    if (!tp_split && !merged)
        return true;
    int n = tp_split ? q->nparts : q->nparts - 1; /* a merged, unsplit layer: all but the last */
    for (int i = 0; i < n; i++)
        if (q->parts[i] % bn != 0)
            return fail(out,
                        "Weight output_partition_size = %" G_GUINT64_FORMAT
                        " is not divisible by weight quantization block_n = %" G_GUINT64_FORMAT ".",
                        q->parts[i], bn);
    return true;
}

/* AWQ / GPTQ create_weights: the input a rank holds divisible by the group size. */
static bool check_int4_group(const QLinear *q, const ModelWeightFormat *f, QFail *out)
{
    if (f->scheme != MODEL_QSCHEME_AWQ && f->scheme != MODEL_QSCHEME_GPTQ)
        return true;
    uint64_t g = f->group_size ? f->group_size : q->in; /* group_size -1: channelwise */
    if (g && q->in_part % g != 0)
        return fail(out, "The input size is not aligned with the quantized weight shape. This "
                         "can be caused by too large tensor parallel size.");
    return true;
}

/* ModelOpt NVFP4 (modelopt.py ModelOptNvFp4LinearMethod.create_weights): two values packed per
 * byte and one scale per 16 inputs, so the input a rank holds is a multiple of 16. */
static bool check_nvfp4(const QLinear *q, const ModelWeightFormat *f, QFail *out)
{
    if (f->scheme != MODEL_QSCHEME_MODELOPT || q->in_part % 16 == 0)
        return true;
    return fail(out, "Unsupported model when in features size is not multiple of 16");
}

/* One linear of layer `l` against its format's rules. */
static bool check_linear(const ModelArch *a, int32_t l, const QLinear *q, QFail *out)
{
    const ModelWeightFormat *f = model_quant_format(&a->quant, l, q->role);
    bool ok = true;
    if (f->kind == MODEL_WFMT_FP8_BLOCK)
        ok = check_fp8_block(q, f, out);
    else if (f->kind == MODEL_WFMT_INT4_GROUP)
        ok = check_int4_group(q, f, out);
    else if (f->kind == MODEL_WFMT_NVFP4)
        ok = check_nvfp4(q, f, out);
    if (!ok)
        g_snprintf(out->where, sizeof out->where,
                   "layer %d %s, %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " per rank", l,
                   q->name, q->parts[0], q->in_part);
    return ok;
}

/* A column-parallel linear: output split over tp. */
static QLinear column(const char *name, ModelTensorRole role, uint32_t tp, uint64_t in,
                      uint64_t out)
{
    return (QLinear){.name = name,
                     .role = role,
                     .tp = tp,
                     .in = in,
                     .in_part = in,
                     .out = out,
                     .parts = {out / tp},
                     .nparts = 1};
}

/* A row-parallel linear: input split over tp. */
static QLinear row(const char *name, ModelTensorRole role, uint32_t tp, uint64_t in, uint64_t out)
{
    return (QLinear){.name = name,
                     .role = role,
                     .tp = tp,
                     .in = in,
                     .in_part = in / tp,
                     .out = out,
                     .parts = {out},
                     .nparts = 1};
}

/* gate_up_proj (merged column) and down_proj (row) of an MLP of width `inter`. */
static bool check_mlp(const ModelArch *a, int32_t l, ModelTensorRole role, uint32_t tp,
                      uint64_t inter, QFail *out)
{
    uint64_t H = a->hidden_size;
    bool shared = role == MODEL_ROLE_SHARED_EXPERT;
    QLinear gu = {.name = shared ? "mlp.shared_experts.gate_up_proj" : "mlp.gate_up_proj",
                  .role = role,
                  .tp = tp,
                  .in = H,
                  .in_part = H,
                  .out = 2 * inter,
                  .parts = {inter / tp, inter / tp},
                  .nparts = 2};
    QLinear d = row(shared ? "mlp.shared_experts.down_proj" : "mlp.down_proj", role, tp, inter, H);
    return check_linear(a, l, &gu, out) && check_linear(a, l, &d, out);
}

/* Attention's quantized linears of layer l (GQA or MLA). */
static bool check_attention(const ModelArch *a, uint32_t l, uint32_t tp, QFail *out)
{
    uint64_t H = a->hidden_size, h = model_arch_layer_heads(a, l);
    if (a->dsv4)
        return true; /* DeepSeek-V4's grouped projections: not checked */
    if (a->mla) {
        uint64_t qk = (uint64_t)a->qk_nope_head_dim + a->qk_rope_head_dim;
        uint64_t kva = (uint64_t)a->kv_lora_rank + a->qk_rope_head_dim;
        if (a->q_lora_rank) {
            QLinear qa = {.name = "self_attn.fused_qkv_a_proj",
                          .role = MODEL_ROLE_ATTN_QKV,
                          .tp = 1,
                          .in = H,
                          .in_part = H,
                          .out = a->q_lora_rank + kva,
                          .parts = {a->q_lora_rank, kva},
                          .nparts = 2};
            QLinear qb =
                column("self_attn.q_b_proj", MODEL_ROLE_ATTN_Q_B, tp, a->q_lora_rank, h * qk);
            if (!check_linear(a, (int32_t)l, &qa, out) || !check_linear(a, (int32_t)l, &qb, out))
                return false;
        } else {
            QLinear q = column("self_attn.q_proj", MODEL_ROLE_ATTN_QKV, tp, H, h * qk);
            if (!check_linear(a, (int32_t)l, &q, out))
                return false;
        }
        QLinear kvb = column("self_attn.kv_b_proj", MODEL_ROLE_ATTN_KV_B, tp, a->kv_lora_rank,
                             h * ((uint64_t)a->qk_nope_head_dim + a->v_head_dim));
        QLinear o = row("self_attn.o_proj", MODEL_ROLE_ATTN_O, tp, h * a->v_head_dim, H);
        return check_linear(a, (int32_t)l, &kvb, out) && check_linear(a, (int32_t)l, &o, out);
    }
    uint64_t d = a->head_dim, kv = a->num_kv_heads ? a->num_kv_heads : h;
    uint64_t kv_rank = kv >= tp ? kv / tp : 1; /* replicated when TP > KV heads */
    QLinear qkv = {.name = "self_attn.qkv_proj",
                   .role = MODEL_ROLE_ATTN_QKV,
                   .tp = tp,
                   .in = H,
                   .in_part = H,
                   .out = (h + 2 * kv) * d,
                   .parts = {h / tp * d, kv_rank * d, kv_rank * d},
                   .nparts = 3};
    QLinear o = row("self_attn.o_proj", MODEL_ROLE_ATTN_O, tp, h * d, H);
    return check_linear(a, (int32_t)l, &qkv, out) && check_linear(a, (int32_t)l, &o, out);
}

/* The routed experts of an MoE layer: Fp8MoEMethod.create_weights's block rules. */
static bool check_experts(const ModelArch *a, uint32_t l, const ModelQuantShapeSizes *par,
                          QFail *out)
{
    const ModelWeightFormat *f = model_quant_format(&a->quant, (int32_t)l, MODEL_ROLE_EXPERT);
    if (f->kind != MODEL_WFMT_FP8_BLOCK || !f->block_n || !f->block_k)
        return true;
    uint32_t tp = par->tensor_parallel_size;
    uint64_t moe_tp = par->enable_expert_parallel ? 1
                                                  : (uint64_t)tp * par->data_parallel_size *
                                                        par->prefill_context_parallel_size;
    uint64_t ip = a->moe_intermediate_size / moe_tp;
    bool ok = true;
    if (ip % f->block_n != 0)
        ok = fail(out,
                  "The output_size of gate's and up's weight = %" G_GUINT64_FORMAT
                  " is not divisible by weight quantization block_n = %u.",
                  ip, f->block_n);
    else if (tp > 1 && ip % f->block_k != 0)
        ok = fail(out,
                  "The input_size of down's weight = %" G_GUINT64_FORMAT
                  " is not divisible by weight quantization block_k = %u.",
                  ip, f->block_k);
    if (!ok)
        g_snprintf(out->where, sizeof out->where,
                   "layer %u routed experts: moe_intermediate_size %u split over %" G_GUINT64_FORMAT
                   " ranks%s",
                   l, a->moe_intermediate_size, moe_tp,
                   moe_tp > tp ? " (TP x DP x PCP without expert parallelism)" : "");
    return ok;
}

/* Every decoder layer (MTP layers are loaded only with speculative decoding: not checked). */
static bool check_all(const ModelQuantShapeSizes *par, const ModelArch *a, QFail *out)
{
    uint32_t tp = par->tensor_parallel_size;
    for (uint32_t l = 0; l < a->num_layers; l++) {
        if (!check_attention(a, l, tp, out))
            return false;
        if (!model_arch_layer_is_moe(a, l)) {
            if (a->intermediate_size &&
                !check_mlp(a, (int32_t)l, MODEL_ROLE_DENSE_MLP, tp, a->intermediate_size, out))
                return false;
            continue;
        }
        if (!check_experts(a, l, par, out))
            return false;
        if (a->shared_expert_intermediate_size &&
            !check_mlp(a, (int32_t)l, MODEL_ROLE_SHARED_EXPERT, tp,
                       a->shared_expert_intermediate_size, out))
            return false;
    }
    return true;
}

/* The TP sizes (powers of two up to 2 x TP) that pass, and whether EP would: "TP 1, 2 or 4,
 * or --enable-expert-parallel". Caller frees. */
static char *what_loads(const ModelQuantShapeSizes *par, const ModelArch *a)
{
    g_autoptr(GString) s = g_string_new(NULL);
    QFail scratch;
    ModelQuantShapeSizes p = *par;
    for (uint32_t t = 1; t <= 2 * par->tensor_parallel_size && t <= 64; t *= 2) {
        p.tensor_parallel_size = t;
        uint32_t heads = a->num_heads ? a->num_heads : 1;
        if (heads % t == 0 && check_all(&p, a, &scratch))
            g_string_append_printf(s, "%s%u", s->len ? ", " : "tensor_parallel_size ", t);
    }
    p = *par;
    if (!par->enable_expert_parallel && (a->moe || a->n_routed_experts)) {
        p.enable_expert_parallel = true;
        if (check_all(&p, a, &scratch))
            g_string_append_printf(s,
                                   "%s--enable-expert-parallel at this size (experts kept "
                                   "whole)",
                                   s->len ? "; or " : "");
    }
    return s->len ? g_string_free(g_steal_pointer(&s), FALSE)
                  : g_strdup("no power-of-two TP size; a checkpoint in another format");
}

bool model_quant_shape_check(const ModelQuantShapeSizes *par, const ModelArch *arch, GError **error)
{
    g_return_val_if_fail(par != NULL && arch != NULL, false);
    if (!arch->quant.method[0])
        return true;
    QFail f = {{0}, {0}};
    if (check_all(par, arch, &f))
        return true;
    g_autofree char *valid = what_loads(par, arch);
    g_set_error(error, MODEL_QUANT_SHAPE_ERROR, 0,
                "parallel.tensor_parallel_size: vLLM refuses to load the %s checkpoint: \"%s\" "
                "(%s); loads with: %s",
                arch->quant.method, f.msg, f.where, valid);
    return false;
}
