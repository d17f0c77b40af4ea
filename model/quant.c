/* model/quant.c — weight formats: the tensors and bytes one linear layer stores in each format,
 * and lookups in a ModelQuantSpec. Reading a checkpoint's quantization_config into a spec is
 * model/quant-config.c.
 *
 * Tensor layouts, per scheme (doc/memory.md, "Quantization schemes", cites each):
 *   FP8 block (DeepSeek): weight e4m3 [out, in]; weight_scale_inv fp32
 *     [sum over fused parts of ceil(part / block_n), ceil(in / block_k)].
 *   FP8 per channel (compressed-tensors, fbgemm): weight e4m3; weight_scale [out, 1].
 *   FP8 per tensor (ModelOpt, compressed-tensors static): weight e4m3; weight_scale fp32 per
 *     fused part; input_scale fp32 per part when activations are statically scaled.
 *   INT8 per channel: weight int8; weight_scale [out, 1]; weight_offset [out, 1] when
 *     asymmetric (vLLM-Ascend W8A8).
 *   INT4 groups: compressed-tensors pack-quantized weight_packed int32 [out, in / 8],
 *     weight_scale [out, in / g], weight_shape int64 [2], weight_zero_point int32 [out / 8,
 *     in / g] when asymmetric; AWQ qweight int32 [in, out / 8], qzeros int32 [in / g, out / 8],
 *     scales fp16 [in / g, out]; GPTQ qweight int32 [in / 8, out], qzeros, scales, g_idx int32
 *     [in]; vLLM-Ascend W4A8 weight int4 [out, in] packed, weight_scale fp32 [out, in / g],
 *     weight_offset fp32 [out].
 *   NVFP4: weight uint8 [out, in / 2]; weight_scale fp8 e4m3 [out, in / 16]; a global fp32
 *     scale per fused part (ModelOpt weight_scale_2, compressed-tensors weight_global_scale) and
 *     an input scale per part.
 *   MXFP4: gpt-oss *_blocks uint8 [out, in / 32, 16] + *_scales e8m0 [out, in / 32]; Quark
 *     weight uint8 [out, in / 2] + weight_scale e8m0 [out, in / 32].
 * Expert weights carry a leading [batch] dimension.
 */
#include "quant.h"

#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK(model - quant - error - quark, model_quant_error)

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : a;
}

void model_quant_spec_native(ModelQuantSpec *out, ModelWeightKind native, uint32_t n_layers)
{
    g_return_if_fail(out != NULL);
    g_return_if_fail(native == MODEL_WFMT_BF16 || native == MODEL_WFMT_FP16 ||
                     native == MODEL_WFMT_FP32);
    memset(out, 0, sizeof *out);
    g_strlcpy(out->source, "default", sizeof out->source);
    out->n_formats = 1;
    out->formats[0].kind = native;
    out->formats[0].scale_bytes = 0;
    out->n_layers = MIN(n_layers, (uint32_t)MODEL_QUANT_MAX_LAYERS);
    /* layer_fmt and global_fmt are all 0: the native format */
}

const ModelWeightFormat *model_quant_format(const ModelQuantSpec *s, int32_t layer,
                                            ModelTensorRole role)
{
    g_assert(s != NULL && s->n_formats >= 1);
    g_assert((unsigned)role < MODEL_ROLE_COUNT);
    uint8_t i;
    if (layer < 0 || role == MODEL_ROLE_EMBED || role == MODEL_ROLE_LM_HEAD ||
        role == MODEL_ROLE_VISION || (uint32_t)layer >= s->n_layers)
        i = s->global_fmt[role];
    else
        i = s->layer_fmt[layer][role];
    g_assert(i < s->n_formats);
    return &s->formats[i];
}

/* ---- tensors of one linear ---- */

typedef struct {
    ModelQuantTensor *out;
    int n;
    uint64_t batch;
} TList;

/* Appends a tensor of `ndims` dims (the batch dimension is prepended when batch > 1). */
static void tl_add(TList *t, const char *suffix, const char *dtype, bool is_scale, double elt_bytes,
                   int ndims, uint64_t d0, uint64_t d1, uint64_t d2)
{
    g_assert(t->n < MODEL_QUANT_MAX_TENSORS);
    ModelQuantTensor *x = &t->out[t->n++];
    memset(x, 0, sizeof *x);
    g_strlcpy(x->suffix, suffix, sizeof x->suffix);
    g_strlcpy(x->dtype, dtype, sizeof x->dtype);
    x->is_scale = is_scale;
    uint64_t d[3] = {d0, d1, d2};
    uint64_t elems = 1;
    int k = 0;
    if (t->batch > 1 && ndims < 3)
        x->dims[k++] = t->batch;
    for (int i = 0; i < ndims && k < 3; i++) {
        x->dims[k++] = d[i];
        elems *= d[i];
    }
    x->ndims = k;
    x->bytes = (uint64_t)((double)(t->batch * elems) * elt_bytes + 0.5);
}

static const char *float_name(uint8_t bytes)
{
    return bytes == 4 ? "fp32" : bytes == 1 ? "fp8_e4m3" : "bf16";
}

int model_quant_linear_tensors(const ModelWeightFormat *f, uint64_t batch, const uint64_t *parts,
                               int nparts, uint64_t in, ModelQuantTensor *out)
{
    g_assert(f != NULL && parts != NULL && nparts >= 1 && out != NULL);
    uint64_t o = 0, blk_rows = 0;
    for (int i = 0; i < nparts; i++) {
        o += parts[i];
        blk_rows += ceil_div(parts[i], f->block_n ? f->block_n : 128);
    }
    uint64_t np = (uint64_t)nparts;
    TList t = {.out = out, .n = 0, .batch = batch ? batch : 1};
    uint8_t sb = f->scale_bytes ? f->scale_bytes : 4;
    uint64_t g = f->group_size ? f->group_size : in;
    switch (f->kind) {
    case MODEL_WFMT_BF16:
        tl_add(&t, "weight", "bf16", false, 2, 2, o, in, 0);
        break;
    case MODEL_WFMT_FP16:
        tl_add(&t, "weight", "fp16", false, 2, 2, o, in, 0);
        break;
    case MODEL_WFMT_FP32:
        tl_add(&t, "weight", "fp32", false, 4, 2, o, in, 0);
        break;
    case MODEL_WFMT_FP8_BLOCK:
        tl_add(&t, "weight", "fp8_e4m3", false, 1, 2, o, in, 0);
        tl_add(&t, "weight_scale_inv", "fp32", true, 4, 2, blk_rows,
               ceil_div(in, f->block_k ? f->block_k : 128), 0);
        break;
    case MODEL_WFMT_FP8_CHANNEL:
        tl_add(&t, "weight", "fp8_e4m3", false, 1, 2, o, in, 0);
        tl_add(&t, "weight_scale", float_name(sb), true, sb, 2, o, 1, 0);
        if (f->input_scale)
            tl_add(&t, "input_scale", "fp32", true, 4, 1, np, 0, 0);
        break;
    case MODEL_WFMT_FP8_TENSOR:
        tl_add(&t, "weight", "fp8_e4m3", false, 1, 2, o, in, 0);
        tl_add(&t, "weight_scale", "fp32", true, 4, 1, np, 0, 0);
        if (f->input_scale)
            tl_add(&t, "input_scale", "fp32", true, 4, 1, np, 0, 0);
        break;
    case MODEL_WFMT_INT8_CHANNEL:
        tl_add(&t, "weight", "int8", false, 1, 2, o, in, 0);
        tl_add(&t, "weight_scale", float_name(sb), true, sb, 2, o, 1, 0);
        if (f->zero_point)
            tl_add(&t, "weight_offset", float_name(sb), true, sb, 2, o, 1, 0);
        if (f->input_scale)
            tl_add(&t, "input_scale", "fp32", true, 4, 1, np, 0, 0);
        break;
    case MODEL_WFMT_INT4_GROUP: {
        uint64_t ng = ceil_div(in, g);
        switch ((ModelQuantScheme)f->scheme) {
        case MODEL_QSCHEME_AWQ:
            tl_add(&t, "qweight", "int32", false, 4, 2, in, ceil_div(o, 8), 0);
            tl_add(&t, "qzeros", "int32", true, 4, 2, ng, ceil_div(o, 8), 0);
            tl_add(&t, "scales", float_name(sb), true, sb, 2, ng, o, 0);
            break;
        case MODEL_QSCHEME_GPTQ:
            tl_add(&t, "qweight", "int32", false, 4, 2, ceil_div(in, 8), o, 0);
            tl_add(&t, "qzeros", "int32", true, 4, 2, ng, ceil_div(o, 8), 0);
            tl_add(&t, "scales", float_name(sb), true, sb, 2, ng, o, 0);
            if (f->g_idx)
                tl_add(&t, "g_idx", "int32", true, 4, 1, in, 0, 0);
            break;
        case MODEL_QSCHEME_ASCEND:
            tl_add(&t, "weight", "int4", false, 0.5, 2, o, in, 0);
            tl_add(&t, "weight_scale", "fp32", true, 4, 2, o, ng, 0);
            tl_add(&t, "weight_offset", "fp32", true, 4, 2, o, 1, 0);
            break;
        default: /* compressed-tensors pack-quantized */
            tl_add(&t, "weight_packed", "int32", false, 4, 2, o, ceil_div(in, 8), 0);
            tl_add(&t, "weight_scale", float_name(sb), true, sb, 2, o, ng, 0);
            tl_add(&t, "weight_shape", "int64", true, 8, 1, 2, 0, 0);
            if (f->zero_point)
                tl_add(&t, "weight_zero_point", "int32", true, 4, 2, ceil_div(o, 8), ng, 0);
            break;
        }
        break;
    }
    case MODEL_WFMT_NVFP4: {
        uint64_t gs = f->group_size ? f->group_size : 16;
        bool ct = f->scheme == MODEL_QSCHEME_CT;
        tl_add(&t, ct ? "weight_packed" : "weight", "fp4_e2m1", false, 1, 2, o, ceil_div(in, 2), 0);
        tl_add(&t, "weight_scale", "fp8_e4m3", true, 1, 2, o, ceil_div(in, gs), 0);
        tl_add(&t, ct ? "weight_global_scale" : "weight_scale_2", "fp32", true, 4, 1, np, 0, 0);
        tl_add(&t, ct ? "input_global_scale" : "input_scale", "fp32", true, 4, 1, np, 0, 0);
        break;
    }
    case MODEL_WFMT_MXFP4: {
        uint64_t gs = f->group_size ? f->group_size : 32;
        if (f->scheme == MODEL_QSCHEME_MXFP4) {
            tl_add(&t, "blocks", "fp4_e2m1", false, 1, 3, o, ceil_div(in, gs), gs / 2);
            tl_add(&t, "scales", "e8m0", true, 1, 2, o, ceil_div(in, gs), 0);
        } else {
            tl_add(&t, "weight", "fp4_e2m1", false, 1, 2, o, ceil_div(in, 2), 0);
            tl_add(&t, "weight_scale", "e8m0", true, 1, 2, o, ceil_div(in, gs), 0);
        }
        break;
    }
    case MODEL_WFMT_COUNT:
        g_assert_not_reached();
    }
    return t.n;
}

double model_weight_format_bytes_per_value(const ModelWeightFormat *f)
{
    g_assert(f != NULL);
    double sb = f->scale_bytes ? f->scale_bytes : 4;
    switch (f->kind) {
    case MODEL_WFMT_BF16:
    case MODEL_WFMT_FP16:
        return 2;
    case MODEL_WFMT_FP32:
        return 4;
    case MODEL_WFMT_FP8_BLOCK:
        return 1 +
               4.0 / ((double)(f->block_n ? f->block_n : 128) * (f->block_k ? f->block_k : 128));
    case MODEL_WFMT_FP8_CHANNEL:
    case MODEL_WFMT_FP8_TENSOR:
    case MODEL_WFMT_INT8_CHANNEL:
        return 1;
    case MODEL_WFMT_INT4_GROUP:
        return 0.5 + (f->group_size ? sb / f->group_size : 0);
    case MODEL_WFMT_NVFP4:
        return 0.5 + 1.0 / (f->group_size ? f->group_size : 16);
    case MODEL_WFMT_MXFP4:
        return 0.5 + 1.0 / (f->group_size ? f->group_size : 32);
    case MODEL_WFMT_COUNT:
        break;
    }
    g_assert_not_reached();
    return 2;
}

const char *model_weight_format_describe(const ModelWeightFormat *f, char *buf, size_t n)
{
    g_assert(f != NULL && buf != NULL);
    switch (f->kind) {
    case MODEL_WFMT_BF16:
        g_strlcpy(buf, "bf16", n);
        break;
    case MODEL_WFMT_FP16:
        g_strlcpy(buf, "fp16", n);
        break;
    case MODEL_WFMT_FP32:
        g_strlcpy(buf, "fp32", n);
        break;
    case MODEL_WFMT_FP8_BLOCK:
        snprintf(buf, n, "fp8 block %ux%u", f->block_n ? f->block_n : 128,
                 f->block_k ? f->block_k : 128);
        break;
    case MODEL_WFMT_FP8_CHANNEL:
        g_strlcpy(buf, "fp8 per channel", n);
        break;
    case MODEL_WFMT_FP8_TENSOR:
        g_strlcpy(buf, "fp8 per tensor", n);
        break;
    case MODEL_WFMT_INT8_CHANNEL:
        snprintf(buf, n, "int8 per channel%s", f->zero_point ? " (asymmetric)" : "");
        break;
    case MODEL_WFMT_INT4_GROUP:
        snprintf(buf, n, "int4 group %u%s", f->group_size, f->zero_point ? " (asymmetric)" : "");
        break;
    case MODEL_WFMT_NVFP4:
        snprintf(buf, n, "nvfp4 (group %u)", f->group_size ? f->group_size : 16);
        break;
    case MODEL_WFMT_MXFP4:
        snprintf(buf, n, "mxfp4 (group %u)", f->group_size ? f->group_size : 32);
        break;
    case MODEL_WFMT_COUNT:
        g_assert_not_reached();
    }
    return buf;
}

/* Role groups as the report names them (several roles share a name: "attention"). */
static const char *const role_names[MODEL_ROLE_COUNT] = {
    "embedding",      "lm_head",        "attention",      "attention", "attention",
    "attention",      "indexer",        "indexer",        "router",    "dense MLP",
    "shared experts", "routed experts", "MTP projection", "vision",
};

/* Appends `name` to the comma-separated `list` unless it is there already. */
static void append_once(GString *list, const char *name)
{
    g_auto(GStrv) have = g_strsplit(list->str, ", ", -1);
    for (char **h = have; *h; h++)
        if (strcmp(*h, name) == 0)
            return;
    g_string_append_printf(list, "%s%s", list->len ? ", " : "", name);
}

static bool fmt_equal(const ModelWeightFormat *a, const ModelWeightFormat *b)
{
    return a->kind == b->kind && a->group_size == b->group_size && a->block_n == b->block_n &&
           a->block_k == b->block_k && a->zero_point == b->zero_point;
}

/* Whether layer `l` has role `r`: the dense MLP only in dense layers, the router and experts
 * only in MoE layers (`layer_moe` NULL: every layer has every role). */
static bool layer_has_role(const bool *layer_moe, uint32_t l, int r)
{
    if (!layer_moe)
        return true;
    if (r == MODEL_ROLE_DENSE_MLP)
        return !layer_moe[l];
    if (r == MODEL_ROLE_ROUTER || r == MODEL_ROLE_SHARED_EXPERT || r == MODEL_ROLE_EXPERT)
        return layer_moe[l];
    return true;
}

char *model_quant_spec_describe(const ModelQuantSpec *s, uint32_t role_mask, const bool *layer_moe)
{
    g_assert(s != NULL);
    if (role_mask == 0)
        role_mask = (1u << MODEL_ROLE_COUNT) - 1;
    /* For each role: the format most of its layers use (roles merged by their format). */
    GString *out = g_string_new(NULL);
    bool done[MODEL_QUANT_MAX_FORMATS] = {false};
    int major[MODEL_ROLE_COUNT];
    bool used[MODEL_ROLE_COUNT];
    for (int r = 0; r < MODEL_ROLE_COUNT; r++) {
        uint32_t count[MODEL_QUANT_MAX_FORMATS] = {0};
        bool global = r == MODEL_ROLE_EMBED || r == MODEL_ROLE_LM_HEAD || r == MODEL_ROLE_VISION;
        used[r] = (role_mask & (1u << r)) != 0 && (global || s->n_layers > 0);
        if (global || s->n_layers == 0) {
            major[r] = s->global_fmt[r];
            continue;
        }
        for (uint32_t l = 0; l < s->n_layers; l++)
            if (layer_has_role(layer_moe, l, r))
                count[s->layer_fmt[l][r]]++;
        int best = 0;
        for (int i = 1; i < s->n_formats; i++)
            if (count[i] > count[best])
                best = i;
        major[r] = best;
    }
    for (int i = 0; i < s->n_formats; i++) {
        if (done[i])
            continue;
        GString *roles = g_string_new(NULL);
        for (int j = i; j < s->n_formats; j++) {
            if (!fmt_equal(&s->formats[i], &s->formats[j]))
                continue;
            done[j] = true;
            for (int r = 0; r < MODEL_ROLE_COUNT; r++)
                if (used[r] && major[r] == j)
                    append_once(roles, role_names[r]);
        }
        if (roles->len) {
            char buf[48];
            bool all = true;
            for (int r = 0; r < MODEL_ROLE_COUNT; r++)
                if (used[r] && !fmt_equal(&s->formats[major[r]], &s->formats[i]))
                    all = false;
            if (all) {
                g_string_assign(roles, "all weights");
                /* every role in one format: nothing else to list */
            }
            model_weight_format_describe(&s->formats[i], buf, sizeof buf);
            g_string_append_printf(out, "%s%s %s", out->len ? "; " : "", roles->str, buf);
        }
        g_string_free(roles, TRUE);
    }
    return g_string_free(out, FALSE);
}
