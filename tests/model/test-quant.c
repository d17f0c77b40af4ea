/* tests/model/test-quant.c — reading quantization_config (model/quant-config.c) and the bytes
 * each scheme's tensors take (model/quant.c).
 *
 * Golden figures: for every scheme, the bytes of ONE layer (or one linear) computed by hand
 * from the scheme's tensor layout (doc/quantization.md), written out in the comments, against
 * what the spec + model_quant_linear_tensors give. Ignore-list resolution per matching rule.
 * The real config.json files of ../shared/real/hf-configs/ (skipped with a message when
 * absent). Every bad input gives its exact message. The JSON fixtures are short excerpts in the
 * shape of the named public checkpoints' quantization_config, written for these tests. */
#include <criterion/criterion.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "../../model/quant.h"

#define CODE_METHOD 0
#define CODE_FIELD 1

/* ---- helpers ---- */

static JsonParser *parse(const char *json)
{
    JsonParser *p = json_parser_new();
    GError *err = NULL;
    cr_assert(json_parser_load_from_data(p, json, -1, &err), "fixture: %s",
              err ? err->message : "");
    cr_assert(JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p)));
    return p;
}

static ModelQuantNames names_of(uint32_t layers, uint32_t mtp)
{
    ModelQuantNames n;
    memset(&n, 0, sizeof n);
    n.num_layers = layers;
    n.num_mtp_layers = mtp;
    return n;
}

/* Loads `json` as quantization_config; asserts success. */
static void load(const char *json, const ModelQuantNames *n, ModelQuantSpec *s)
{
    JsonParser *p = parse(json);
    GError *err = NULL;
    bool ok = model_quant_from_config(json_node_get_object(json_parser_get_root(p)), "config.json",
                                      MODEL_WFMT_BF16, n, s, &err);
    cr_assert(ok, "%s", err ? err->message : "");
    cr_assert_null(err);
    cr_assert_str_eq(s->source, "checkpoint");
    g_object_unref(p);
}

/* Loads `json`, asserts failure with `code` and exactly `msg`. */
static void load_bad(const char *json, int code, const char *msg)
{
    JsonParser *p = parse(json);
    GError *err = NULL;
    ModelQuantSpec s;
    ModelQuantNames n = names_of(4, 0);
    bool ok = model_quant_from_config(json_node_get_object(json_parser_get_root(p)), "config.json",
                                      MODEL_WFMT_BF16, &n, &s, &err);
    cr_assert_not(ok, "accepted: %s", json);
    cr_assert_not_null(err);
    cr_assert(g_error_matches(err, MODEL_QUANT_ERROR, code), "code %d: %s", err->code,
              err->message);
    cr_assert_str_eq(err->message, msg);
    g_error_free(err);
    g_object_unref(p);
}

typedef struct {
    uint64_t w, s; /* weight bytes, scale bytes */
} Bytes;

/* Bytes of one linear of role `role` in `layer`: `batch` copies of [sum(parts), in]. */
static Bytes lin(const ModelQuantSpec *s, int32_t layer, ModelTensorRole role, uint64_t batch,
                 const uint64_t *parts, int np, uint64_t in)
{
    ModelQuantTensor t[MODEL_QUANT_MAX_TENSORS];
    int n = model_quant_linear_tensors(model_quant_format(s, layer, role), batch, parts, np, in, t);
    Bytes b = {0, 0};
    for (int i = 0; i < n; i++) {
        if (t[i].is_scale)
            b.s += t[i].bytes;
        else
            b.w += t[i].bytes;
    }
    return b;
}

#define PARTS(...)                                                                                 \
    ((const uint64_t[]){__VA_ARGS__}), (int)(sizeof((const uint64_t[]){__VA_ARGS__}) / 8)

static ModelWeightKind kind(const ModelQuantSpec *s, int32_t layer, ModelTensorRole role)
{
    return model_quant_format(s, layer, role)->kind;
}

/* DeepSeek-V3 / V3.2 / Kimi-K2 MoE layer, TP1: H 7168, q_lora 1536, kv_lora 512, rope 64,
 * nope 128, v 128, 128 heads (Kimi: 64), E experts of 2048, one shared expert of 2048. */
static uint64_t deepseek_layer(const ModelQuantSpec *s, int32_t l, uint64_t heads, uint64_t experts)
{
    Bytes b[8];
    b[0] = lin(s, l, MODEL_ROLE_ATTN_QKV, 1, PARTS(1536, 576), 7168);
    b[1] = lin(s, l, MODEL_ROLE_ATTN_Q_B, 1, PARTS(heads * 192), 1536);
    b[2] = lin(s, l, MODEL_ROLE_ATTN_KV_B, 1, PARTS(heads * 256), 512);
    b[3] = lin(s, l, MODEL_ROLE_ATTN_O, 1, PARTS(7168), heads * 128);
    b[4] = lin(s, l, MODEL_ROLE_EXPERT, experts, PARTS(2048, 2048), 7168);
    b[5] = lin(s, l, MODEL_ROLE_EXPERT, experts, PARTS(7168), 2048);
    b[6] = lin(s, l, MODEL_ROLE_SHARED_EXPERT, 1, PARTS(2048, 2048), 7168);
    b[7] = lin(s, l, MODEL_ROLE_SHARED_EXPERT, 1, PARTS(7168), 2048);
    uint64_t sum = lin(s, l, MODEL_ROLE_ROUTER, 1, PARTS(experts), 7168).w;
    for (int i = 0; i < 8; i++)
        sum += b[i].w + b[i].s;
    return sum;
}

/* ---- fp8 ---- */

static const char *const DEEPSEEK_FP8 =
    "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\","
    " \"weight_block_size\": [128, 128]}";

Test(quant, fp8_block_deepseek_v3_layer3)
{
    ModelQuantNames n = names_of(61, 1);
    ModelQuantSpec s;
    load(DEEPSEEK_FP8, &n, &s);
    cr_assert_str_eq(s.method, "fp8");
    cr_assert_eq(s.n_layers, 62);
    const ModelWeightFormat *f = model_quant_format(&s, 3, MODEL_ROLE_EXPERT);
    cr_assert_eq(f->kind, MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(f->block_n, 128);
    cr_assert_eq(f->block_k, 128);
    /* Layer 3, weights 1 B per value + fp32 weight_scale_inv per 128 x 128 block:
     *   fused_qkv_a_proj [1536 + 576, 7168]: 2112 x 7168 = 15,138,816
     *       + (ceil(1536/128) + ceil(576/128)) x ceil(7168/128) x 4 = (12 + 5) x 56 x 4 = 3,808
     *   q_b_proj [128 x 192, 1536]: 37,748,736 + 192 x 12 x 4 = 9,216
     *   kv_b_proj [128 x 256, 512]: 16,777,216 + 256 x 4 x 4 = 4,096
     *   o_proj [7168, 16384]: 117,440,512 + 56 x 128 x 4 = 28,672
     *   experts w13 256 x [4096, 7168]: 7,516,192,768 + 256 x 32 x 56 x 4 = 1,835,008
     *   experts w2 256 x [7168, 2048]: 3,758,096,384 + 256 x 56 x 16 x 4 = 917,504
     *   shared gate_up [4096, 7168]: 29,360,128 + 7,168; shared down: 14,680,064 + 3,584
     *   router [256, 7168] bf16: 3,670,016
     * = 11,505,434,624 weight + 2,809,056 scale + 3,670,016 router = 11,511,913,696 B */
    cr_assert_eq(deepseek_layer(&s, 3, 128, 256), 11511913696ull);
    /* the fused q_a / kv_a scales alone: 17 block rows x 56 block columns x 4 B */
    cr_assert_eq(lin(&s, 3, MODEL_ROLE_ATTN_QKV, 1, PARTS(1536, 576), 7168).s, 3808);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER_WEIGHTS), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 61, MODEL_ROLE_MTP_PROJ), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_EMBED), MODEL_WFMT_BF16);
}

Test(quant, fp8_per_tensor_static_mixtral_ignored_layers)
{
    /* AutoFP8 Mixtral: no weight_block_size, static activations, ignored_layers by name */
    ModelQuantNames n = names_of(32, 0);
    n.experts = "block_sparse_moe.experts";
    n.router = "block_sparse_moe.gate";
    ModelQuantSpec s;
    load("{\"quant_method\": \"fp8\", \"activation_scheme\": \"static\", \"ignored_layers\":"
         " [\"lm_head\", \"model.layers.0.block_sparse_moe.gate\", "
         "\"model.layers.31.self_attn.o_proj\"]}",
         &n, &s);
    const ModelWeightFormat *f = model_quant_format(&s, 0, MODEL_ROLE_EXPERT);
    cr_assert_eq(f->kind, MODEL_WFMT_FP8_TENSOR);
    cr_assert(f->input_scale);
    /* experts w1 + w3, 8 x [14336 + 14336, 4096]: 8 x 28672 x 4096 = 939,524,096 B fp8
     *   + weight_scale and input_scale fp32 per expert and part: 8 x 2 x 4 + 8 x 2 x 4 = 128 */
    Bytes e = lin(&s, 0, MODEL_ROLE_EXPERT, 8, PARTS(14336, 14336), 4096);
    cr_assert_eq(e.w, 939524096ull);
    cr_assert_eq(e.s, 128);
    /* qkv [4096 + 1024 + 1024, 4096]: 25,165,824 + 3 x 4 + 3 x 4 = 25,165,848 */
    Bytes q = lin(&s, 0, MODEL_ROLE_ATTN_QKV, 1, PARTS(4096, 1024, 1024), 4096);
    cr_assert_eq(q.w + q.s, 25165848ull);
    cr_assert_eq(kind(&s, 31, MODEL_ROLE_ATTN_O), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 30, MODEL_ROLE_ATTN_O), MODEL_WFMT_FP8_TENSOR);
}

Test(quant, fp8_modules_to_not_convert_matches_whole_components)
{
    /* MiniMax-M2: "gate" names block_sparse_moe.gate, not the experts' w1/w3 nor a gate_proj */
    ModelQuantNames n = names_of(4, 0);
    n.experts = "block_sparse_moe.experts";
    n.router = "block_sparse_moe.gate";
    ModelQuantSpec s;
    load("{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128],"
         " \"modules_to_not_convert\": [\"gate\", \"e_score_correction_bias\", \"lm_head\"]}",
         &n, &s);
    cr_assert_eq(kind(&s, 2, MODEL_ROLE_EXPERT), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 2, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 2, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
}

/* ---- compressed-tensors ---- */

/* RedHatAI/Llama-3.2-1B-Instruct-quantized.w8a8 (shape of its quantization_config) */
static const char *const CT_W8A8 =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"int-quantized\","
    " \"ignore\": [\"lm_head\"], \"kv_cache_scheme\": null,"
    " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"],"
    "  \"weights\": {\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"channel\","
    "   \"symmetric\": true, \"dynamic\": false, \"group_size\": null},"
    "  \"input_activations\": {\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"token\","
    "   \"symmetric\": true, \"dynamic\": true}}}}";

Test(quant, ct_w8a8_llama_layer)
{
    ModelQuantNames n = names_of(16, 0);
    ModelQuantSpec s;
    load(CT_W8A8, &n, &s);
    cr_assert_str_eq(s.method, "compressed-tensors");
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_INT8_CHANNEL);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    cr_assert_not(s.kv_cache_fp8);
    /* Llama-3.2-1B layer 0 (H 2048, 32 heads, 8 KV heads of 64, intermediate 8192): int8
     * weights + one bf16 weight_scale per output row (dynamic per-token activations: no
     * input scale):
     *   qkv [2048 + 512 + 512, 2048]: 6,291,456 + 3072 x 2 = 6,144
     *   o_proj [2048, 2048]: 4,194,304 + 4,096
     *   gate_up [8192 + 8192, 2048]: 33,554,432 + 32,768
     *   down [2048, 8192]: 16,777,216 + 4,096
     * = 60,817,408 + 47,104 = 60,864,512 B */
    Bytes b[4] = {lin(&s, 0, MODEL_ROLE_ATTN_QKV, 1, PARTS(2048, 512, 512), 2048),
                  lin(&s, 0, MODEL_ROLE_ATTN_O, 1, PARTS(2048), 2048),
                  lin(&s, 0, MODEL_ROLE_DENSE_MLP, 1, PARTS(8192, 8192), 2048),
                  lin(&s, 0, MODEL_ROLE_DENSE_MLP, 1, PARTS(2048), 8192)};
    uint64_t w = 0, sc = 0;
    for (int i = 0; i < 4; i++)
        w += b[i].w, sc += b[i].s;
    cr_assert_eq(w, 60817408ull);
    cr_assert_eq(sc, 47104ull);
}

/* nm-testing/Qwen1.5-MoE-A2.7B-Chat-quantized.w4a16 (shape) */
static const char *const CT_W4A16_MOE =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\","
    " \"ignore\": [\"lm_head\", \"re:.*mlp.gate$\", \"re:.*mlp.shared_expert_gate$\"],"
    " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"],"
    "  \"weights\": {\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\","
    "   \"group_size\": 128, \"symmetric\": true, \"actorder\": null}}}}";

Test(quant, ct_w4a16_qwen_moe_layer)
{
    ModelQuantNames n = names_of(24, 0);
    n.shared = "mlp.shared_expert";
    ModelQuantSpec s;
    load(CT_W4A16_MOE, &n, &s);
    const ModelWeightFormat *f = model_quant_format(&s, 0, MODEL_ROLE_EXPERT);
    cr_assert_eq(f->kind, MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(f->group_size, 128);
    cr_assert_not(f->zero_point);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    /* Qwen1.5-MoE-A2.7B layer 0 (H 2048, 60 experts of 1408, shared expert 5632), per expert:
     *   w13 [2816, 2048]: weight_packed int32 [2816, 256] = 2,883,584; weight_scale bf16
     *       [2816, 16] = 90,112; weight_shape int64 [2] = 16
     *   w2 [2048, 1408]: [2048, 176] x 4 = 1,441,792; [2048, 11] x 2 = 45,056; 16
     *   => 60 x (2,973,712 + 1,486,864) = 267,634,560
     * shared gate_up [11264, 2048]: 11,534,336 + 360,448 + 16; down [2048, 5632]:
     *   5,767,168 + 180,224 + 16 => 17,842,208
     * = 285,476,768 B */
    uint64_t sum = 0;
    Bytes b[4] = {lin(&s, 0, MODEL_ROLE_EXPERT, 60, PARTS(1408, 1408), 2048),
                  lin(&s, 0, MODEL_ROLE_EXPERT, 60, PARTS(2048), 1408),
                  lin(&s, 0, MODEL_ROLE_SHARED_EXPERT, 1, PARTS(5632, 5632), 2048),
                  lin(&s, 0, MODEL_ROLE_SHARED_EXPERT, 1, PARTS(2048), 5632)};
    for (int i = 0; i < 4; i++)
        sum += b[i].w + b[i].s;
    cr_assert_eq(sum, 285476768ull);
}

/* moonshotai/Kimi-K2-Thinking (shape): int4 group 32 on the routed experts only */
static const char *const CT_KIMI_INT4 =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\","
    " \"ignore\": [\"lm_head\", \"re:.*self_attn.*\", \"re:.*shared_experts.*\","
    "   \"re:.*mlp\\\\.(gate|up|gate_up|down)_proj.*\"],"
    " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"],"
    "  \"weights\": {\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\","
    "   \"group_size\": 32, \"symmetric\": true, \"dynamic\": false}}}}";

Test(quant, ct_kimi_k2_thinking_int4_experts)
{
    ModelQuantNames n = names_of(61, 0);
    ModelQuantSpec s;
    load(CT_KIMI_INT4, &n, &s);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_EXPERT), MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(model_quant_format(&s, 1, MODEL_ROLE_EXPERT)->group_size, 32);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    /* Kimi-K2 layer 1 routed experts, 384 x:
     *   w13 [4096, 7168]: weight_packed [4096, 896] x 4 = 14,680,064; weight_scale bf16
     *       [4096, 224] x 2 = 1,835,008; weight_shape 16
     *   w2 [7168, 2048]: [7168, 256] x 4 = 7,340,032; [7168, 64] x 2 = 917,504; 16
     * = 384 x 24,772,640 = 9,512,693,760 B */
    Bytes a = lin(&s, 1, MODEL_ROLE_EXPERT, 384, PARTS(2048, 2048), 7168);
    Bytes b = lin(&s, 1, MODEL_ROLE_EXPERT, 384, PARTS(7168), 2048);
    cr_assert_eq(a.w + a.s + b.w + b.s, 9512693760ull);
}

/* RedHatAI/Qwen3-30B-A3B-NVFP4 (shape) */
static const char *const CT_NVFP4 =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"nvfp4-pack-quantized\","
    " \"ignore\": [\"lm_head\", \"re:.*mlp.gate$\"],"
    " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\", \"re:.*mlp.gate$\"],"
    "  \"weights\": {\"num_bits\": 4, \"type\": \"float\", \"strategy\": \"tensor_group\","
    "   \"group_size\": 16, \"symmetric\": true, \"dynamic\": false},"
    "  \"input_activations\": {\"num_bits\": 4, \"type\": \"float\", \"strategy\": "
    "\"tensor_group\","
    "   \"group_size\": 16, \"dynamic\": \"local\"}}}}";

Test(quant, ct_nvfp4_ignore_lm_head_and_router)
{
    ModelQuantNames n = names_of(48, 0);
    ModelQuantSpec s;
    load(CT_NVFP4, &n, &s);
    /* ignore wins over a target that names the router */
    cr_assert_eq(kind(&s, 5, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 5, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_NVFP4);
    cr_assert_eq(model_quant_format(&s, 5, MODEL_ROLE_EXPERT)->scheme, MODEL_QSCHEME_CT);
    /* Qwen3-30B-A3B experts (H 2048, 128 experts of 768), per expert:
     *   w13 [1536, 2048]: weight_packed [1536, 1024] = 1,572,864; weight_scale fp8 [1536, 128]
     *       = 196,608; weight_global_scale [2] fp32 = 8; input_global_scale [2] = 8
     *   w2 [2048, 768]: [2048, 384] = 786,432; [2048, 48] = 98,304; 4; 4
     * = 128 x (1,769,488 + 884,744) = 339,741,696 B */
    Bytes a = lin(&s, 5, MODEL_ROLE_EXPERT, 128, PARTS(768, 768), 2048);
    Bytes b = lin(&s, 5, MODEL_ROLE_EXPERT, 128, PARTS(2048), 768);
    cr_assert_eq(a.w + a.s + b.w + b.s, 339741696ull);
}

Test(quant, ct_mixed_groups_names_before_classes_and_kv_cache)
{
    /* a name target in a later group beats the "Linear" class of an earlier one (vLLM's
     * find_matched_target); fp8 block group; kv_cache_scheme fp8 */
    ModelQuantNames n = names_of(4, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"compressed-tensors\", \"format\": \"mixed-precision\","
         " \"ignore\": [\"lm_head\", \"model.layers.0.self_attn.o_proj\"],"
         " \"kv_cache_scheme\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"},"
         " \"config_groups\": {"
         "  \"group_0\": {\"targets\": [\"Linear\"], \"format\": \"float-quantized\","
         "   \"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\","
         "    \"block_structure\": [128, 128], \"symmetric\": true}},"
         "  \"group_1\": {\"targets\": [\"re:.*mlp.experts.*\"], \"format\": \"pack-quantized\","
         "   \"weights\": {\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\","
         "    \"group_size\": 64, \"symmetric\": false}}}}",
         &n, &s);
    cr_assert(s.kv_cache_fp8);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_ATTN_O), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_ATTN_O), MODEL_WFMT_BF16);
    const ModelWeightFormat *e = model_quant_format(&s, 1, MODEL_ROLE_EXPERT);
    cr_assert_eq(e->kind, MODEL_WFMT_INT4_GROUP);
    cr_assert(e->zero_point);
    /* one expert [1024, 2048] int4 group 64 asymmetric: weight_packed [1024, 256] x 4 =
     * 1,048,576; weight_scale bf16 [1024, 32] = 65,536; weight_shape 16; weight_zero_point
     * int32 [128, 32] = 16,384 => 1,130,512 B */
    Bytes b = lin(&s, 1, MODEL_ROLE_EXPERT, 1, PARTS(512, 512), 2048);
    cr_assert_eq(b.w + b.s, 1130512ull);
}

Test(quant, ct_multimodal_prefix_and_vision)
{
    ModelQuantNames n = names_of(4, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\","
         " \"ignore\": [\"lm_head\", \"re:.*vision_tower.*\", \"re:.*multi_modal_projector.*\","
         "   \"model.language_model.layers.2.mlp.down_proj\"],"
         " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"],"
         "  \"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\"},"
         "  \"input_activations\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"token\","
         "   \"dynamic\": true}}}}",
         &n, &s);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_VISION), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 2, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_FP8_CHANNEL);
    /* fp8 per channel [4096, 4096]: 16,777,216 + bf16 scale per row 8,192 */
    Bytes b = lin(&s, 1, MODEL_ROLE_ATTN_O, 1, PARTS(4096), 4096);
    cr_assert_eq(b.w + b.s, 16785408ull);
}

/* ---- ModelOpt ---- */

/* hf_quant_config.json, nested form (nvidia/DeepSeek-V3.2-NVFP4 shape) */
static const char *const MO_NVFP4_NESTED =
    "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.37.0\"},"
    " \"quantization\": {\"quant_algo\": \"NVFP4\", \"kv_cache_quant_algo\": null,"
    "  \"group_size\": 16,"
    "  \"exclude_modules\": [\"lm_head\", \"model.layers.0.*\", \"model.layers.*.self_attn*\"]}}";

Test(quant, modelopt_nvfp4_nested_exclude)
{
    ModelQuantNames n = names_of(61, 1);
    ModelQuantSpec s;
    load(MO_NVFP4_NESTED, &n, &s);
    cr_assert_str_eq(s.method, "modelopt");
    for (int r = MODEL_ROLE_ATTN_QKV; r <= MODEL_ROLE_MTP_PROJ; r++)
        cr_assert_eq(kind(&s, 0, (ModelTensorRole)r), MODEL_WFMT_BF16, "layer 0 role %d", r);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_NVFP4);
    cr_assert_not(s.kv_cache_fp8);
    /* DeepSeek-V3.2 layer 3 routed experts, 256 x:
     *   w13 [4096, 7168]: weight [4096, 3584] = 14,680,064; weight_scale fp8 [4096, 448] =
     *       1,835,008; weight_scale_2 fp32 [2] = 8; input_scale [2] = 8
     *   w2 [7168, 2048]: [7168, 1024] = 7,340,032; [7168, 128] = 917,504; 4; 4
     * = 256 x 24,772,632 = 6,341,793,792 B */
    Bytes a = lin(&s, 3, MODEL_ROLE_EXPERT, 256, PARTS(2048, 2048), 7168);
    Bytes b = lin(&s, 3, MODEL_ROLE_EXPERT, 256, PARTS(7168), 2048);
    cr_assert_eq(a.w + a.s + b.w + b.s, 6341793792ull);
}

Test(quant, modelopt_fp8_flat_llama_layer)
{
    /* nvidia/Llama-3.1-8B-Instruct-FP8 shape: config.json's flat form */
    ModelQuantNames n = names_of(32, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"modelopt\", \"quant_algo\": \"FP8\","
         " \"kv_cache_quant_algo\": \"FP8\", \"exclude_modules\": [\"lm_head\"]}",
         &n, &s);
    cr_assert(s.kv_cache_fp8);
    /* Llama-3.1-8B layer 0, fp8 + fp32 weight_scale and input_scale per fused part:
     *   qkv [4096 + 1024 + 1024, 4096]: 25,165,824 + 12 + 12
     *   o_proj [4096, 4096]: 16,777,216 + 4 + 4
     *   gate_up [14336 + 14336, 4096]: 117,440,512 + 8 + 8
     *   down [4096, 14336]: 58,720,256 + 4 + 4
     * = 218,103,808 + 56 = 218,103,864 B */
    Bytes b[4] = {lin(&s, 0, MODEL_ROLE_ATTN_QKV, 1, PARTS(4096, 1024, 1024), 4096),
                  lin(&s, 0, MODEL_ROLE_ATTN_O, 1, PARTS(4096), 4096),
                  lin(&s, 0, MODEL_ROLE_DENSE_MLP, 1, PARTS(14336, 14336), 4096),
                  lin(&s, 0, MODEL_ROLE_DENSE_MLP, 1, PARTS(4096), 14336)};
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++)
        sum += b[i].w + b[i].s;
    cr_assert_eq(sum, 218103864ull);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
}

Test(quant, modelopt_mixed_precision_quantized_layers)
{
    /* nvidia/GLM-5.x-NVFP4 layout: dense MLP fp8 per tensor, experts NVFP4, the rest bf16 */
    ModelQuantNames n = names_of(4, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\","
         " \"exclude_modules\": [\"lm_head\"], \"quantized_layers\": {"
         "  \"model.layers.0.mlp.gate_proj\": {\"quant_algo\": \"FP8\"},"
         "  \"model.layers.0.mlp.up_proj\": {\"quant_algo\": \"FP8\"},"
         "  \"model.layers.0.mlp.down_proj\": {\"quant_algo\": \"FP8\"},"
         "  \"model.layers.1.mlp.experts\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16},"
         "  \"model.layers.2.mlp.experts.0.gate_proj\": {\"quant_algo\": \"NVFP4\", "
         "\"group_size\": 16}}}",
         &n, &s);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_FP8_TENSOR);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_EXPERT), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, 2, MODEL_ROLE_EXPERT), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_BF16);
}

/* ---- mxfp4 / Quark ---- */

Test(quant, quark_mxfp4_layer_config_and_exclude)
{
    /* amd-quark/Qwen3-30B-A3B-MXFP4 shape, plus a layer_quant_config for attention */
    ModelQuantNames n = names_of(48, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"quark\", \"exclude\": [\"lm_head\", \"*mlp.gate\"],"
         " \"export\": {\"kv_cache_group\": [], \"pack_method\": \"reorder\"},"
         " \"global_quant_config\": {"
         "  \"weight\": {\"dtype\": \"fp4\", \"qscheme\": \"per_group\", \"group_size\": 32,"
         "   \"scale_format\": \"e8m0\", \"is_dynamic\": false},"
         "  \"input_tensors\": {\"dtype\": \"fp4\", \"qscheme\": \"per_group\", \"group_size\": 32,"
         "   \"is_dynamic\": true}},"
         " \"layer_quant_config\": {\"*self_attn*\": {"
         "  \"weight\": {\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\", \"is_dynamic\": "
         "false},"
         "  \"input_tensors\": {\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\", "
         "\"is_dynamic\": false}}}}",
         &n, &s);
    cr_assert_str_eq(s.method, "quark");
    cr_assert_not(s.kv_cache_fp8);
    cr_assert_eq(kind(&s, 7, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4);
    cr_assert_eq(model_quant_format(&s, 7, MODEL_ROLE_EXPERT)->scheme, MODEL_QSCHEME_QUARK);
    cr_assert_eq(kind(&s, 7, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_FP8_TENSOR);
    cr_assert_eq(kind(&s, 7, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    /* Qwen3-30B-A3B experts, 128 x: w13 [1536, 2048]: weight [1536, 1024] = 1,572,864 +
     * weight_scale e8m0 [1536, 64] = 98,304; w2 [2048, 768]: [2048, 384] = 786,432 +
     * [2048, 24] = 49,152 => 128 x 2,506,752 = 320,864,256 B */
    Bytes a = lin(&s, 7, MODEL_ROLE_EXPERT, 128, PARTS(768, 768), 2048);
    Bytes b = lin(&s, 7, MODEL_ROLE_EXPERT, 128, PARTS(2048), 768);
    cr_assert_eq(a.w + a.s + b.w + b.s, 320864256ull);
    /* qkv [4096 + 512 + 512, 2048] fp8 + weight_scale and input_scale per part:
     * 10,485,760 + 12 + 12 */
    Bytes q = lin(&s, 7, MODEL_ROLE_ATTN_QKV, 1, PARTS(4096, 512, 512), 2048);
    cr_assert_eq(q.w + q.s, 10485784ull);
}

/* ---- AWQ / GPTQ / fbgemm ---- */

Test(quant, awq_int4_group128_linear)
{
    ModelQuantNames n = names_of(32, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 128, \"zero_point\": true,"
         " \"version\": \"gemm\", \"modules_to_not_convert\": null}",
         &n, &s);
    const ModelWeightFormat *f = model_quant_format(&s, 0, MODEL_ROLE_ATTN_QKV);
    cr_assert_eq(f->kind, MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(f->scheme, MODEL_QSCHEME_AWQ);
    /* Llama-3.1-8B qkv [6144, 4096]: qweight int32 [4096, 768] = 12,582,912; qzeros int32
     * [32, 768] = 98,304; scales fp16 [32, 6144] = 393,216 => 13,074,432 B */
    Bytes b = lin(&s, 0, MODEL_ROLE_ATTN_QKV, 1, PARTS(4096, 1024, 1024), 4096);
    cr_assert_eq(b.w + b.s, 13074432ull);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
}

Test(quant, gptq_desc_act_linear)
{
    ModelQuantNames n = names_of(32, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128, \"desc_act\": true,"
         " \"sym\": true, \"lm_head\": false,"
         " \"dynamic\": {\"-:model\\\\.layers\\\\.31\\\\..*\": {}}}",
         &n, &s);
    const ModelWeightFormat *f = model_quant_format(&s, 0, MODEL_ROLE_DENSE_MLP);
    cr_assert(f->g_idx);
    /* down_proj [4096, 14336]: qweight int32 [1792, 4096] = 29,360,128; qzeros [112, 512] x 4
     * = 229,376; scales fp16 [112, 4096] = 917,504; g_idx int32 [14336] = 57,344
     * => 30,564,352 B */
    Bytes b = lin(&s, 0, MODEL_ROLE_DENSE_MLP, 1, PARTS(4096), 14336);
    cr_assert_eq(b.w + b.s, 30564352ull);
    cr_assert_eq(kind(&s, 31, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_BF16);
}

Test(quant, fbgemm_fp8_linear)
{
    ModelQuantNames n = names_of(126, 0);
    ModelQuantSpec s;
    load("{\"quant_method\": \"fbgemm_fp8\", \"activation_scale_ub\": 1200.0,"
         " \"modules_to_not_convert\": [\"lm_head\", \"model.layers.0.mlp.down_proj\"]}",
         &n, &s);
    /* Llama-3.1-405B o_proj [16384, 16384]: 268,435,456 fp8 + fp32 weight_scale [16384, 1]
     * 65,536 => 268,500,992 B */
    Bytes b = lin(&s, 5, MODEL_ROLE_ATTN_O, 1, PARTS(16384), 16384);
    cr_assert_eq(b.w + b.s, 268500992ull);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 1, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_FP8_CHANNEL);
}

/* ---- vLLM-Ascend ---- */

static void load_ascend(const char *json, ModelQuantSpec *s)
{
    JsonParser *p = parse(json);
    GError *err = NULL;
    ModelQuantNames n = names_of(61, 0);
    bool ok = model_quant_from_ascend(json_node_get_object(json_parser_get_root(p)),
                                      "quant_model_description.json", MODEL_WFMT_BF16, &n, s, &err);
    cr_assert(ok, "%s", err ? err->message : "");
    g_object_unref(p);
}

Test(quant, ascend_w8a8_and_w4a8)
{
    ModelQuantSpec s;
    load_ascend("{\"model_quant_type\": \"W4A8_DYNAMIC\","
                " \"model.embed_tokens.weight\": \"FLOAT\","
                " \"model.layers.3.self_attn.q_a_proj.weight\": \"W8A8_DYNAMIC\","
                " \"model.layers.3.self_attn.q_b_proj.weight\": \"W8A8_DYNAMIC\","
                " \"model.layers.3.self_attn.indexer.wq_b.weight\": \"FLOAT\","
                " \"model.layers.3.mlp.gate.weight\": \"FLOAT\","
                " \"model.layers.3.mlp.experts.0.gate_proj.weight\": \"W4A8_DYNAMIC\","
                " \"model.layers.3.mlp.shared_experts.gate_proj.weight\": \"W8A8_DYNAMIC\"}",
                &s);
    cr_assert_str_eq(s.method, "ascend");
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_INT8_CHANNEL);
    /* q_b_proj [24576, 1536] int8 + fp32 weight_scale [24576, 1] + weight_offset [24576, 1]:
     * 37,748,736 + 98,304 + 98,304 = 37,945,344 B */
    Bytes q = lin(&s, 3, MODEL_ROLE_ATTN_Q_B, 1, PARTS(24576), 1536);
    cr_assert_eq(q.w + q.s, 37945344ull);
    /* W4A8 expert w13 [4096, 7168]: int4 14,680,064 + fp32 weight_scale per 256 inputs
     * [4096, 28] = 458,752 + weight_offset [4096, 1] = 16,384 => 15,155,200 B per expert */
    Bytes e = lin(&s, 3, MODEL_ROLE_EXPERT, 1, PARTS(2048, 2048), 7168);
    cr_assert_eq(e.w + e.s, 15155200ull);
    /* a layer the description does not list stays float */
    cr_assert_eq(kind(&s, 4, MODEL_ROLE_ATTN_Q_B), MODEL_WFMT_BF16);
}

Test(quant, ascend_bad_type)
{
    const char *cases[][2] = {
        {"{\"model_quant_type\": \"W2A2\"}",
         "quant_model_description.json: key 'model_quant_type': unknown quantization type "
         "'W2A2'; valid: W8A8, W8A8_DYNAMIC, W4A8, W4A8_DYNAMIC"},
        {"{\"model_quant_type\": \"W8A8\", \"model.layers.0.self_attn.o_proj.weight\": \"INT3\"}",
         "quant_model_description.json: key 'model.layers.0.self_attn.o_proj.weight': expected "
         "one of FLOAT, W8A8, W8A8_DYNAMIC, W4A8, W4A8_DYNAMIC, got the string 'INT3'"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        JsonParser *p = parse(cases[i][0]);
        GError *err = NULL;
        ModelQuantSpec s;
        ModelQuantNames n = names_of(2, 0);
        cr_assert_not(model_quant_from_ascend(json_node_get_object(json_parser_get_root(p)),
                                              "quant_model_description.json", MODEL_WFMT_BF16, &n,
                                              &s, &err));
        cr_assert_str_eq(err->message, cases[i][1]);
        g_error_free(err);
        g_object_unref(p);
    }
}

/* ---- override names ---- */

Test(quant, override_names_layouts)
{
    ModelQuantSpec s, c;
    /* fp8: the DeepSeek checkpoint's own layout, byte for byte */
    cr_assert(model_quant_spec_from_name("fp8", true, MODEL_WFMT_BF16, 62, &s));
    cr_assert_str_eq(s.source, "override engine.quantization");
    cr_assert_str_eq(s.method, "fp8");
    ModelQuantNames n = names_of(61, 1);
    load(DEEPSEEK_FP8, &n, &c);
    cr_assert_eq(deepseek_layer(&s, 3, 128, 256), deepseek_layer(&c, 3, 128, 256));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER_WEIGHTS), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);

    cr_assert(model_quant_spec_from_name("w8a8", true, MODEL_WFMT_BF16, 62, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_INDEXER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_INT8_CHANNEL);
    cr_assert(model_quant_format(&s, 3, MODEL_ROLE_EXPERT)->zero_point);

    cr_assert(model_quant_spec_from_name("w4a8", true, MODEL_WFMT_BF16, 62, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(model_quant_format(&s, 3, MODEL_ROLE_EXPERT)->group_size, 256);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_INT8_CHANNEL);

    cr_assert(model_quant_spec_from_name("nvfp4", true, MODEL_WFMT_BF16, 78, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, 0, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_FP8_TENSOR);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_BF16);
    cr_assert(model_quant_spec_from_name("nvfp4", false, MODEL_WFMT_BF16, 80, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ATTN_O), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_DENSE_MLP), MODEL_WFMT_NVFP4);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);

    cr_assert(model_quant_spec_from_name("bf16", true, MODEL_WFMT_BF16, 62, &s));
    cr_assert_eq(s.n_formats, 1);
    cr_assert_str_eq(s.method, "");
    cr_assert(model_quant_spec_from_name("mxfp4", true, MODEL_WFMT_BF16, 36, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
    cr_assert(model_quant_spec_from_name("awq", false, MODEL_WFMT_FP16, 32, &s));
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_INT4_GROUP);
    cr_assert_eq(kind(&s, 3, MODEL_ROLE_ROUTER), MODEL_WFMT_FP16);
    cr_assert_not(model_quant_spec_from_name("xyz", true, MODEL_WFMT_BF16, 4, &s));
    cr_assert_not(model_quant_spec_from_name("compressed-tensors", true, MODEL_WFMT_BF16, 4, &s));
}

/* ---- the real config.json files ---- */

/* Reads ../shared/real/hf-configs/NAME/config.json; NULL (test skipped) when absent. */
static JsonParser *real_config(const char *name)
{
    g_autofree char *path =
        g_strdup_printf("%s/../shared/real/hf-configs/%s/config.json", RANKSIM_SOURCE_DIR, name);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        cr_skip_test("%s not found (the shared real files are not on this machine)", path);
        return NULL;
    }
    JsonParser *p = json_parser_new();
    GError *err = NULL;
    cr_assert(json_parser_load_from_file(p, path, &err), "%s", err ? err->message : "");
    return p;
}

static void real_spec(const char *name, const ModelQuantNames *base, ModelQuantSpec *s,
                      bool *has_qcfg)
{
    JsonParser *p = real_config(name);
    JsonObject *root = json_node_get_object(json_parser_get_root(p));
    ModelQuantNames n = *base;
    n.num_layers = (uint32_t)json_object_get_int_member_with_default(root, "num_hidden_layers", 0);
    n.num_mtp_layers =
        (uint32_t)json_object_get_int_member_with_default(root, "num_nextn_predict_layers", 0);
    JsonNode *q = json_object_get_member(root, "quantization_config");
    *has_qcfg = q != NULL;
    GError *err = NULL;
    g_autofree char *display = g_strdup_printf("%s/config.json", name);
    cr_assert(model_quant_from_config(q ? json_node_get_object(q) : NULL, display, MODEL_WFMT_BF16,
                                      &n, s, &err),
              "%s", err ? err->message : "");
    cr_assert_eq(s->n_layers, n.num_layers + n.num_mtp_layers);
    g_object_unref(p);
}

Test(quant, real_deepseek_kimi_fp8_block)
{
    const char *files[] = {"deepseek-ai--DeepSeek-V3", "deepseek-ai--DeepSeek-R1",
                           "deepseek-ai--DeepSeek-V3.2", "moonshotai--Kimi-K2-Instruct"};
    ModelQuantNames n = names_of(0, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        ModelQuantSpec s;
        bool has = false;
        real_spec(files[i], &n, &s, &has);
        cr_assert(has, "%s", files[i]);
        cr_assert_str_eq(s.method, "fp8");
        for (uint32_t l = 0; l < s.n_layers; l++) {
            cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_EXPERT), MODEL_WFMT_FP8_BLOCK);
            cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_FP8_BLOCK);
            cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
        }
        cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    }
    /* Kimi-K2 layer 3 (64 heads, 384 experts): attention q_b [12288, 1536], kv_b [16384, 512],
     * o [7168, 8192] at 1 B + block scales; the same linears as DeepSeek-V3 otherwise:
     *   qkv_a 15,138,816 + 3,808; q_b 18,874,368 + 96 x 12 x 4 = 4,608;
     *   kv_b 8,388,608 + 128 x 4 x 4 = 2,048; o 58,720,256 + 56 x 64 x 4 = 14,336;
     *   experts 384 x (29,360,128 + 7,168 + 14,680,064 + 3,584) = 16,915,562,496;
     *   shared 44,050,944; router [384, 7168] bf16 5,505,024
     * = 17,066,265,312 B */
    ModelQuantSpec s;
    bool has;
    real_spec("moonshotai--Kimi-K2-Instruct", &n, &s, &has);
    cr_assert_eq(deepseek_layer(&s, 3, 64, 384), 17066265312ull);
}

Test(quant, real_qwen3_fp8_minimax_fp8)
{
    ModelQuantSpec s;
    bool has = false;
    ModelQuantNames n = names_of(0, 0);
    real_spec("Qwen--Qwen3-235B-A22B-FP8", &n, &s, &has);
    cr_assert(has);
    cr_assert_eq(kind(&s, 50, MODEL_ROLE_EXPERT), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 50, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 50, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);

    n.experts = "block_sparse_moe.experts";
    n.router = "block_sparse_moe.gate";
    real_spec("MiniMaxAI--MiniMax-M2.7", &n, &s, &has);
    cr_assert(has);
    cr_assert_eq(kind(&s, 10, MODEL_ROLE_EXPERT), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 10, MODEL_ROLE_ATTN_O), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(kind(&s, 10, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
}

Test(quant, real_gpt_oss_mxfp4)
{
    ModelQuantSpec s;
    bool has = false;
    ModelQuantNames n = names_of(0, 0);
    n.router = "mlp.router";
    real_spec("openai--gpt-oss-120b", &n, &s, &has);
    cr_assert(has);
    cr_assert_str_eq(s.method, "mxfp4");
    for (uint32_t l = 0; l < s.n_layers; l++) {
        cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4);
        cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16);
        cr_assert_eq(kind(&s, (int32_t)l, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16);
    }
    cr_assert_eq(kind(&s, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
    /* gpt-oss-120b layer experts (H 2880, 128 experts of 2880), gpt-oss tensors:
     *   gate_up_proj_blocks [5760, 90, 16] = 8,294,400 + _scales e8m0 [5760, 90] = 518,400
     *   down_proj_blocks [2880, 90, 16] = 4,147,200 + _scales [2880, 90] = 259,200
     * = 128 x 13,219,200 = 1,692,057,600 B */
    Bytes a = lin(&s, 0, MODEL_ROLE_EXPERT, 128, PARTS(2880, 2880), 2880);
    Bytes b = lin(&s, 0, MODEL_ROLE_EXPERT, 128, PARTS(2880), 2880);
    cr_assert_eq(a.w + a.s + b.w + b.s, 1692057600ull);
}

Test(quant, real_files_without_quantization_config_are_native)
{
    /* GLM-4.7-FP8 is a trimmed copy (README: no quantization_config); the nvidia NVFP4 config
     * keeps its format in hf_quant_config.json, which is not in the shared files */
    const char *files[] = {"zai-org--GLM-4.7-FP8", "nvidia--DeepSeek-V3.2-NVFP4",
                           "Qwen--Qwen3-235B-A22B"};
    ModelQuantNames n = names_of(0, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        ModelQuantSpec s;
        bool has = true;
        real_spec(files[i], &n, &s, &has);
        cr_assert_not(has, "%s", files[i]);
        cr_assert_eq(s.n_formats, 1);
        cr_assert_str_eq(s.method, "");
    }
}

/* ---- bad input ---- */

Test(quant, bad_method)
{
    load_bad("{\"quant_method\": \"xyz\"}", CODE_METHOD,
             "config.json: key 'quantization_config.quant_method': unknown quantization method "
             "'xyz'; valid: fp8, compressed-tensors, modelopt, modelopt_fp4, modelopt_fp8, "
             "modelopt_mixed, mxfp4, quark, awq, gptq, fbgemm_fp8");
    load_bad("{\"bits\": 4}", CODE_METHOD,
             "config.json: key 'quantization_config.quant_method': missing; valid: fp8, "
             "compressed-tensors, modelopt, modelopt_fp4, modelopt_fp8, modelopt_mixed, mxfp4, "
             "quark, awq, gptq, fbgemm_fp8");
    load_bad("{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}", CODE_METHOD,
             "config.json: key 'quantization_config.quant_method': quantization method "
             "'bitsandbytes' is not modelled (NF4 / LLM.int8 layouts); valid: fp8, "
             "compressed-tensors, modelopt, modelopt_fp4, modelopt_fp8, modelopt_mixed, mxfp4, "
             "quark, awq, gptq, fbgemm_fp8");
    load_bad("{\"quant_method\": 8}", CODE_FIELD,
             "config.json: key 'quantization_config.quant_method': expected a string, got 8");
}

Test(quant, bad_fields)
{
    const char *cases[][2] = {
        {"{\"quant_method\": \"gptq\", \"bits\": 3, \"group_size\": 128}",
         "config.json: key 'quantization_config.bits': expected 4 or 8, got 3"},
        {"{\"quant_method\": \"awq\", \"bits\": 8}",
         "config.json: key 'quantization_config.bits': expected 4 (vLLM's AWQ kernels are 4-bit "
         "only), got 8"},
        {"{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -2}",
         "config.json: key 'quantization_config.group_size': expected a positive group size, or "
         "-1 for one group per row, got -2"},
        {"{\"quant_method\": \"gptq\", \"bits\": \"4\"}",
         "config.json: key 'quantization_config.bits': expected an integer, got the string '4'"},
        {"{\"quant_method\": \"fp8\", \"weight_block_size\": [128]}",
         "config.json: key 'quantization_config.weight_block_size': expected two positive "
         "integers [block_n, block_k] (e.g. [128, 128]), got an array of 1 elements"},
        {"{\"quant_method\": \"fp8\", \"weight_block_size\": \"128x128\"}",
         "config.json: key 'quantization_config.weight_block_size': expected two positive "
         "integers [block_n, block_k] (e.g. [128, 128]), got the string '128x128'"},
        {"{\"quant_method\": \"fp8\", \"activation_scheme\": \"sometimes\"}",
         "config.json: key 'quantization_config.activation_scheme': expected one of dynamic, "
         "static, got the string 'sometimes'"},
        {"{\"quant_method\": \"fp8\", \"modules_to_not_convert\": [\"lm_head\", 7]}",
         "config.json: key 'quantization_config.modules_to_not_convert[1]': expected a module "
         "name (string), got 7"},
        {"{\"quant_method\": \"compressed-tensors\", \"ignore\": 5, \"config_groups\": {}}",
         "config.json: key 'quantization_config.ignore': expected an array of module names, got 5"},
        {"{\"quant_method\": \"compressed-tensors\", \"ignore\": [\"re:(\"], \"config_groups\": "
         "{}}",
         NULL /* GRegex's own wording follows; checked by prefix below */},
        {"{\"quant_method\": \"compressed-tensors\", \"format\": \"zip-quantized\", "
         "\"config_groups\": {}}",
         "config.json: key 'quantization_config.format': expected one of dense, naive-quantized, "
         "pack-quantized, int-quantized, float-quantized, nvfp4-pack-quantized, "
         "mxfp4-pack-quantized, marlin-24, sparse-bitmask, sparse-24-bitmask, mixed-precision, "
         "got the string 'zip-quantized'"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 3, \"type\": \"int\"}}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights.num_bits': "
         "expected 4 or 8, got 3"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": \"int\", "
         "\"strategy\": \"group\", \"group_size\": -1}}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights.group_size': "
         "expected a positive integer or null, got -1"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": \"int\", "
         "\"strategy\": \"rows\"}}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights.strategy': "
         "expected one of tensor, channel, group, block, tensor_group, got the string 'rows'"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": \"float\", "
         "\"strategy\": \"tensor_group\", \"group_size\": 64}}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights.group_size': "
         "expected 16 (NVFP4) or 32 (MXFP4) for 4-bit float weights, got 64"},
        /* truncated: pieces of the object missing */
        {"{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\"}",
         "config.json: key 'quantization_config.config_groups': missing; expected an object of "
         "quantization groups"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"]}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights': missing; "
         "expected an object with num_bits, type, strategy"},
        {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": "
         "{\"targets\": [\"Linear\"], \"weights\": {\"type\": \"int\"}}}}",
         "config.json: key 'quantization_config.config_groups.group_0.weights.num_bits': "
         "missing; expected 4 or 8"},
        {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\"}",
         "config.json: key 'quantization_config.quantized_layers': missing; expected an object "
         "of module name -> {quant_algo}"},
        {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"INT2\"}",
         "config.json: key 'quantization_config.quant_algo': expected one of FP8, "
         "FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, MIXED_PRECISION, got the string 'INT2'"},
        {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", \"group_size\": 8}",
         "config.json: key 'quantization_config.group_size': expected 16 (NVFP4), got 8"},
        {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\", "
         "\"quantized_layers\": {\"model.layers.0.mlp.experts\": {\"quant_algo\": "
         "\"MIXED_PRECISION\"}}}",
         "config.json: key 'quantization_config.quantized_layers.model.layers.0.mlp.experts."
         "quant_algo': expected one of FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, got the "
         "string 'MIXED_PRECISION'"},
        {"{\"quant_method\": \"quark\", \"global_quant_config\": {\"weight\": {\"dtype\": "
         "\"fp3\"}}}",
         "config.json: key 'quantization_config.global_quant_config.weight.dtype': expected one "
         "of fp4, fp8_e4m3, int8, int4, uint4, got the string 'fp3'"},
        {"{\"quant_method\": \"quark\"}",
         "config.json: key 'quantization_config.global_quant_config': missing; expected an "
         "object with weight"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (cases[i][1]) {
            load_bad(cases[i][0], CODE_FIELD, cases[i][1]);
            continue;
        }
        JsonParser *p = parse(cases[i][0]);
        GError *err = NULL;
        ModelQuantSpec s;
        ModelQuantNames n = names_of(2, 0);
        cr_assert_not(model_quant_from_config(json_node_get_object(json_parser_get_root(p)),
                                              "config.json", MODEL_WFMT_BF16, &n, &s, &err));
        cr_assert(g_str_has_prefix(err->message,
                                   "config.json: key 'quantization_config.ignore[0]': expected a "
                                   "regular expression after 're:', got '('"),
                  "%s", err->message);
        g_error_free(err);
        g_object_unref(p);
    }
}

Test(quant, describe_and_methods)
{
    ModelQuantSpec s;
    ModelQuantNames n = names_of(61, 1);
    load(DEEPSEEK_FP8, &n, &s);
    char *d = model_quant_spec_describe(&s, 0, NULL);
    cr_assert(strstr(d, "routed experts") && strstr(d, "fp8 block 128x128"), "%s", d);
    g_free(d);
    cr_assert(strstr(model_quant_methods(), "compressed-tensors") != NULL);
}
