/* tests/model/test-quant-shape.c — vLLM's load-time shape rules of quantized layers
 * (model/quant-shape.h): the FP8 checkpoints vLLM refuses at one TP size (vllm#17569, #25292,
 * the Qwen3-Coder recipe) refused in vLLM's words through model_plan_new, the sizes vLLM accepts
 * (a smaller TP, expert parallelism) accepted, and each rule (block_n, block_k, dense linears,
 * AWQ groups, MoE split over TP x DP) on small configs. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/catalog.h"
#include "../../model/plan.h"
#include "../../model/quant-shape.h"

static const char fp8_block[] = "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", "
                                "\"fmt\": \"e4m3\", \"weight_block_size\": [128, 128]}";

/* A preset with block FP8 applied (the released -FP8 checkpoints of Qwen3). */
static ModelArch *preset_fp8(const char *name)
{
    ModelArch *a = g_new0(ModelArch, 1);
    GError *err = NULL;
    cr_assert(model_arch_load_preset(name, a, &err), "%s", err ? err->message : "");
    cr_assert(model_arch_apply_quant_json(a, fp8_block, "test", &err), "%s",
              err ? err->message : "");
    return a;
}

/* A Hub id as a user names it: the catalog's preset with the checkpoint's quantization_config
 * (model/presets/catalog.json), as `vllm serve ID` reads it. */
static ModelArch *hub_model(const char *id)
{
    ModelCatalogMatch m;
    GError *err = NULL;
    cr_assert(model_catalog_resolve(id, &m, &err), "%s", err ? err->message : "");
    cr_assert_not_null(m.quantization_config, "%s: no quantization_config in the catalog", id);
    ModelArch *a = g_new0(ModelArch, 1);
    cr_assert(model_arch_load_preset(m.preset, a, &err), "%s", err ? err->message : "");
    cr_assert(model_arch_apply_quant_json(a, m.quantization_config, id, &err), "%s",
              err ? err->message : "");
    model_catalog_match_clear(&m);
    return a;
}

/* A Qwen3-MoE style config.json with the given widths and quantization_config. */
static ModelArch *qwen3_moe(uint32_t hidden, uint32_t layers, uint32_t heads, uint32_t kv,
                            uint32_t inter, uint32_t moe_inter, uint32_t experts, const char *qcfg)
{
    g_autofree char *json = g_strdup_printf(
        "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", "
        "\"hidden_size\": %u, \"num_hidden_layers\": %u, \"num_attention_heads\": %u, "
        "\"num_key_value_heads\": %u, \"head_dim\": 128, \"intermediate_size\": %u, "
        "\"moe_intermediate_size\": %u, \"num_experts\": %u, \"num_experts_per_tok\": 8, "
        "\"vocab_size\": 151936, \"max_position_embeddings\": 32768, "
        "\"torch_dtype\": \"bfloat16\", \"decoder_sparse_step\": 1, \"mlp_only_layers\": []%s%s}",
        hidden, layers, heads, kv, inter, moe_inter, experts,
        qcfg ? ", \"quantization_config\": " : "", qcfg ? qcfg : "");
    ModelArch *a = g_new0(ModelArch, 1);
    GError *err = NULL;
    cr_assert(model_arch_load_string(json, "test config.json", a, &err), "%s",
              err ? err->message : "");
    return a;
}

/* A Llama style dense config.json. */
static ModelArch *llama(uint32_t inter, const char *qcfg)
{
    g_autofree char *json = g_strdup_printf(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
        "\"hidden_size\": 4096, \"num_hidden_layers\": 4, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"intermediate_size\": %u, \"vocab_size\": 32000, "
        "\"max_position_embeddings\": 8192, \"torch_dtype\": \"bfloat16\"%s%s}",
        inter, qcfg ? ", \"quantization_config\": " : "", qcfg ? qcfg : "");
    ModelArch *a = g_new0(ModelArch, 1);
    GError *err = NULL;
    cr_assert(model_arch_load_string(json, "test config.json", a, &err), "%s",
              err ? err->message : "");
    return a;
}

static ModelParallel par_of(uint32_t tp, uint32_t dp, bool ep)
{
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = tp;
    par.data_parallel_size = dp;
    par.enable_expert_parallel = ep;
    return par;
}

/* The plan's refusal message (caller frees), or NULL when the plan was built. */
static char *plan_message(const ModelArch *a, uint32_t tp, uint32_t dp, bool ep)
{
    ModelParallel par = par_of(tp, dp, ep);
    GError *err = NULL;
    ModelPlan *plan = model_plan_new(&par, a, &err);
    if (plan) {
        model_plan_free(plan);
        return NULL;
    }
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, MODEL_PLAN_ERROR);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    return msg;
}

static void expect_refused(const ModelArch *a, uint32_t tp, uint32_t dp, bool ep, const char *words)
{
    g_autofree char *msg = plan_message(a, tp, dp, ep);
    cr_assert_not_null(msg, "TP%u DP%u EP%d accepted; vLLM refuses it", tp, dp, ep);
    cr_assert(strstr(msg, words) != NULL, "expected '%s' in: %s", words, msg);
    cr_assert(strchr(msg, '\n') == NULL, "one line: %s", msg);
}

static void expect_loads(const ModelArch *a, uint32_t tp, uint32_t dp, bool ep)
{
    g_autofree char *msg = plan_message(a, tp, dp, ep);
    cr_assert_null(msg, "TP%u DP%u EP%d refused, vLLM loads it: %s", tp, dp, ep, msg);
}

Test(quant_shape, qwen3_235b_fp8_tp8_refused_tp4_and_ep_load)
{
    g_autofree ModelArch *a = preset_fp8("qwen3-235b-a22b");
    expect_refused(a, 8, 1, false,
                   "\"The output_size of gate's and up's weight = 192 is not divisible by weight "
                   "quantization block_n = 128.\"");
    expect_refused(a, 8, 1, false, "--enable-expert-parallel");
    expect_loads(a, 4, 1, false);
    expect_loads(a, 8, 1, true);
}

Test(quant_shape, qwen3_30b_fp8_tp4_refused_tp2_loads)
{
    g_autofree ModelArch *a = preset_fp8("qwen3-30b-a3b");
    expect_refused(a, 4, 1, false, "weight = 192 is not divisible by weight quantization block_n");
    expect_loads(a, 2, 1, false);
    expect_loads(a, 4, 1, true);
}

Test(quant_shape, qwen3_coder_480b_fp8_tp8_refused)
{
    /* Qwen3-Coder-480B-A35B-Instruct-FP8's widths (its config.json): experts 2560 wide */
    g_autofree ModelArch *a = qwen3_moe(6144, 4, 96, 8, 8192, 2560, 160, fp8_block);
    expect_refused(a, 8, 1, false,
                   "weight = 320 is not divisible by weight quantization block_n = 128");
    expect_loads(a, 4, 1, false);
    expect_loads(a, 8, 1, true);
}

Test(quant_shape, qwen3_coder_480b_fp8_by_name)
{
    /* the released checkpoint by its Hub id (preset qwen3-coder-480b-a35b, 62 layers): vLLM's
     * words of the Qwen3-Coder recipe at TP8; TP8 with expert parallelism and TP4 load */
    g_autofree ModelArch *a = hub_model("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8");
    cr_assert_eq(a->num_layers, 62);
    cr_assert_eq(a->moe_intermediate_size, 2560);
    expect_refused(a, 8, 1, false,
                   "\"The output_size of gate's and up's weight = 320 is not divisible by weight "
                   "quantization block_n = 128.\"");
    expect_refused(a, 8, 1, false, "--enable-expert-parallel");
    expect_loads(a, 8, 1, true);
    expect_loads(a, 4, 1, false);
    /* the recipe's own layout: DP8 with EP, experts whole */
    expect_loads(a, 1, 8, true);
}

Test(quant_shape, moe_split_over_tp_and_dp_without_ep)
{
    /* FusedMoE shards each expert over TP x DP when EP is off: TP2 x DP2 is a split by 4 */
    g_autofree ModelArch *a = preset_fp8("qwen3-30b-a3b");
    expect_refused(a, 2, 2, false, "TP x DP x PCP");
    expect_loads(a, 2, 2, true);
}

Test(quant_shape, block_k_rule_of_down_weight)
{
    /* block 64 x 128: 192 rows pass block_n, the down weight's 192 inputs fail block_k */
    static const char q[] = "{\"quant_method\": \"fp8\", \"weight_block_size\": [64, 128]}";
    g_autofree ModelArch *a = qwen3_moe(2048, 2, 32, 4, 6144, 768, 128, q);
    expect_refused(a, 4, 1, false,
                   "The input_size of down's weight = 192 is not divisible by weight "
                   "quantization block_k = 128.");
}

Test(quant_shape, dense_linear_output_partition)
{
    /* 11008 / 4 = 2752 = 21.5 x 128: gate_up_proj's part per rank */
    g_autofree ModelArch *a = llama(11008, fp8_block);
    expect_refused(a, 4, 1, false,
                   "Weight output_partition_size = 2752 is not divisible by weight quantization "
                   "block_n = 128.");
    expect_loads(a, 2, 1, false);
    expect_loads(a, 1, 1, false);
}

Test(quant_shape, awq_group_size_against_row_split)
{
    /* Qwen2.5-72B's 29568 = 231 groups of 128: down_proj cannot be split in two */
    static const char q[] = "{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 128, "
                            "\"zero_point\": true, \"version\": \"gemm\"}";
    g_autofree ModelArch *a = llama(29568, q);
    expect_refused(a, 2, 1, false,
                   "The input size is not aligned with the quantized weight shape. This can be "
                   "caused by too large tensor parallel size.");
    expect_loads(a, 1, 1, false);
    g_autofree ModelArch *b = llama(29696, q); /* the width Qwen's AWQ release pads to */
    expect_loads(b, 4, 1, false);
}

Test(quant_shape, modelopt_nvfp4_inputs_of_16)
{
    /* 2064 = 16 x 129: whole at TP1, 1032 per rank at TP2 is not a multiple of 16 */
    static const char q[] = "{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", "
                            "\"group_size\": 16, \"exclude_modules\": [\"lm_head\"]}";
    g_autofree ModelArch *a = llama(2064, q);
    cr_assert_eq(model_quant_format(&a->quant, 0, MODEL_ROLE_DENSE_MLP)->kind, MODEL_WFMT_NVFP4);
    expect_refused(a, 2, 1, false,
                   "\"Unsupported model when in features size is not multiple of 16\" (layer 0 "
                   "mlp.down_proj");
    expect_loads(a, 1, 1, false);
}

Test(quant_shape, unquantized_always_loads)
{
    g_autofree ModelArch *a = qwen3_moe(4096, 2, 64, 4, 12288, 1536, 128, NULL);
    GError *err = NULL;
    ModelQuantShapeSizes sz = {
        .tensor_parallel_size = 8, .data_parallel_size = 1, .prefill_context_parallel_size = 1};
    cr_assert(model_quant_shape_check(&sz, a, &err));
    cr_assert_null(err);
}
