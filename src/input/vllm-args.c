/* src/input/vllm-args.c — the vLLM argument layer: `vllm serve` flags -> ranksim settings
 * (src/input/vllm-args.h). It knows nothing of the scenario loader: the eval configs that
 * consume its settings are src/input/scenario-eval.c.
 *
 * Sections: the engine values as vLLM spells them (shared with `engine:`); the table of serve
 * flags ranksim reads (VllmFlag: name, what it sets, whether it takes a value); parsing an argv
 * into a VllmArgs and applying each flag; settling and applying the result; a pasted command
 * line as the eval config that says the same.
 *
 * Costs: a linear search of the flag table per token (the table has ~50 entries); a JSON parse
 * per --compilation-config / --attention-config value.
 */
#include "vllm-args.h"
#include "../../sched/json-bounded.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "input-limits.h"
#include "yamldoc.h"

G_DEFINE_QUARK(ranksim - vllm - args - error - quark, vllm_args_error)

/* ---- engine values as vLLM spells them ---- */

void vllm_args_backend_names(const char *out[MODEL_BACKEND_COUNT + 1])
{
    for (int b = 0; b < MODEL_BACKEND_COUNT; b++)
        out[b] = model_backend_name((ModelBackend)b);
    out[MODEL_BACKEND_COUNT] = NULL;
}

void vllm_args_cudagraph_names(const char *out[VLLM_ARGS_N_CUDAGRAPH + 1])
{
    for (int m = 0; m < VLLM_ARGS_N_CUDAGRAPH; m++)
        out[m] = model_engine_cudagraph_name((ModelCudagraph)m);
    out[VLLM_ARGS_N_CUDAGRAPH] = NULL;
}

/* bf16, fp8, ... then "none" (= bf16). */
void vllm_args_quant_names(const char *out[MODEL_QUANT_COUNT + 2])
{
    for (int q = 0; q < MODEL_QUANT_COUNT; q++)
        out[q] = model_engine_quant_name((ModelQuant)q);
    out[MODEL_QUANT_COUNT] = "none";
    out[MODEL_QUANT_COUNT + 1] = NULL;
}

/* An attention backend, case-insensitively. */
bool vllm_args_parse_backend(const char *text, ModelBackend *out)
{
    g_autofree char *up = g_ascii_strup(text, -1);
    return model_backend_parse(up, out) || model_backend_parse(text, out);
}

/* A quantization: ranksim's names, "none" (bf16), and the vLLM method names that mean one of
 * them (modelopt_fp4 = nvfp4; modelopt, fbgemm_fp8, ptpc_fp8 = fp8). Case-insensitive. */
bool vllm_args_parse_quant(const char *text, ModelQuant *out)
{
    static const struct {
        const char *name;
        ModelQuant q;
    } aliases[] = {{"none", MODEL_QUANT_BF16},
                   {"modelopt_fp4", MODEL_QUANT_NVFP4},
                   {"modelopt", MODEL_QUANT_FP8},
                   {"fbgemm_fp8", MODEL_QUANT_FP8},
                   {"ptpc_fp8", MODEL_QUANT_FP8}};
    g_autofree char *low = g_ascii_strdown(text, -1);
    if (model_engine_quant_parse(low, out) || model_engine_quant_parse(text, out))
        return true;
    for (size_t i = 0; i < G_N_ELEMENTS(aliases); i++)
        if (strcmp(low, aliases[i].name) == 0) {
            *out = aliases[i].q;
            return true;
        }
    return false;
}

/* vLLM's quantization methods ranksim knows (vllm/model_executor/layers/quantization
 * QUANTIZATION_METHODS, the ones whose checkpoints model/quant-config.c reads), plus ranksim's
 * own scheme names. */
const char vllm_args_methods[] =
    "fp8, fbgemm_fp8, ptpc_fp8, modelopt, modelopt_fp4, modelopt_mixed, compressed-tensors, "
    "mxfp4, quark, awq, awq_marlin, gptq, gptq_marlin, ascend, bf16, w8a8, w4a8, nvfp4, none";

bool vllm_args_known_method(const char *name)
{
    g_auto(GStrv) known = g_strsplit(vllm_args_methods, ", ", -1);
    for (char **k = known; *k; k++)
        if (g_ascii_strcasecmp(*k, name) == 0)
            return true;
    return false;
}

const char *const vllm_args_kv_dtype_names[] = {"auto",     "bf16",     "bfloat16", "fp8",
                                                "fp8_e4m3", "fp8_e5m2", NULL};

/* vLLM's --kv-cache-dtype: auto (the model's dtype, bf16 here) or bf16 -> bf16; fp8 kinds -> fp8.
 */
bool vllm_args_parse_kv_dtype(const char *text, SchedDtype *out)
{
    g_autofree char *low = g_ascii_strdown(text, -1);
    for (int i = 0; vllm_args_kv_dtype_names[i]; i++)
        if (strcmp(low, vllm_args_kv_dtype_names[i]) == 0) {
            *out = i < 3 ? SCHED_DTYPE_BF16 : SCHED_DTYPE_FP8;
            return true;
        }
    return false;
}

bool vllm_args_parse_cudagraph(const char *text, ModelCudagraph *out)
{
    g_autofree char *up = g_ascii_strup(text, -1);
    return model_engine_cudagraph_parse(up, out) || model_engine_cudagraph_parse(text, out);
}

/* ---- the serve flags ranksim reads ---- */

typedef enum {
    VF_TP,
    VF_DP,
    VF_PCP,
    VF_DCP,
    VF_PP,
    VF_EP,
    VF_NO_EP,
    VF_NO_CUSTOM_AR,
    VF_DCP_BACKEND,
    VF_INTERLEAVE,
    VF_BACKEND,
    VF_MOE_BACKEND,
    VF_ALL2ALL_BACKEND,
    VF_ATTENTION_CONFIG,
    VF_QUANT,
    VF_KV_DTYPE,
    VF_GPU_UTIL,
    VF_BATCHED_TOKENS,
    VF_MODEL_LEN,
    VF_NUM_SEQS,
    VF_GPU_BLOCKS,
    VF_PREFIX_CACHING,
    VF_ASYNC_SCHEDULING,
    VF_NO_ASYNC_SCHEDULING,
    VF_NO_PREFIX_CACHING,
    VF_COMPILATION,
    VF_OPT_LEVEL,
    VF_EAGER,
    VF_NO_EAGER,
    VF_SPECULATIVE,
    VF_MAMBA_DTYPE,
    VF_MAMBA_SSM_DTYPE,
    VF_MAMBA_MODE,
    VF_NO_EFFECT, /* read and dropped: no bearing on a simulation */
} VllmFlagKind;

typedef struct {
    const char *name;
    VllmFlagKind kind;
    bool value; /* takes a value */
} VllmFlag;

/* vLLM's serve flags that ranksim reads (vllm/engine/arg_utils.py names and short forms). */
static const VllmFlag vllm_flags[] = {
    {"--tensor-parallel-size", VF_TP, true},
    {"-tp", VF_TP, true},
    {"--data-parallel-size", VF_DP, true},
    {"-dp", VF_DP, true},
    {"--prefill-context-parallel-size", VF_PCP, true},
    {"-pcp", VF_PCP, true},
    {"--decode-context-parallel-size", VF_DCP, true},
    {"-dcp", VF_DCP, true},
    {"--pipeline-parallel-size", VF_PP, true},
    {"-pp", VF_PP, true},
    {"--enable-expert-parallel", VF_EP, false},
    {"-ep", VF_EP, false},
    {"--no-enable-expert-parallel", VF_NO_EP, false},
    {"--disable-custom-all-reduce", VF_NO_CUSTOM_AR, false},
    {"--dcp-comm-backend", VF_DCP_BACKEND, true},
    {"--all2all-backend", VF_ALL2ALL_BACKEND, true},
    {"--cp-kv-cache-interleave-size", VF_INTERLEAVE, true},
    {"--dcp-kv-cache-interleave-size", VF_INTERLEAVE, true},
    {"--attention-backend", VF_BACKEND, true},
    {"--moe-backend", VF_MOE_BACKEND, true},
    {"--attention-config", VF_ATTENTION_CONFIG, true},
    {"-ac", VF_ATTENTION_CONFIG, true},
    {"--quantization", VF_QUANT, true},
    {"-q", VF_QUANT, true},
    {"--kv-cache-dtype", VF_KV_DTYPE, true},
    {"--gpu-memory-utilization", VF_GPU_UTIL, true},
    {"--max-num-batched-tokens", VF_BATCHED_TOKENS, true},
    {"--max-model-len", VF_MODEL_LEN, true},
    {"--max-num-seqs", VF_NUM_SEQS, true},
    {"--num-gpu-blocks-override", VF_GPU_BLOCKS, true},
    {"--enable-prefix-caching", VF_PREFIX_CACHING, false},
    {"--no-enable-prefix-caching", VF_NO_PREFIX_CACHING, false},
    {"--async-scheduling", VF_ASYNC_SCHEDULING, false},
    {"--no-async-scheduling", VF_NO_ASYNC_SCHEDULING, false},
    {"--compilation-config", VF_COMPILATION, true},
    {"-cc", VF_COMPILATION, true},
    {"--optimization-level", VF_OPT_LEVEL, true},
    {"-O", VF_OPT_LEVEL, true},
    {"--enforce-eager", VF_EAGER, false},
    {"--no-enforce-eager", VF_NO_EAGER, false},
    {"--speculative-config", VF_SPECULATIVE, true},
    {"--mamba-cache-dtype", VF_MAMBA_DTYPE, true},
    {"--mamba-ssm-cache-dtype", VF_MAMBA_SSM_DTYPE, true},
    {"--mamba-cache-mode", VF_MAMBA_MODE, true},
    {"--trust-remote-code", VF_NO_EFFECT, false},
    {"--disable-log-requests", VF_NO_EFFECT, false},
    {"--enable-log-requests", VF_NO_EFFECT, false},
    {"--disable-log-stats", VF_NO_EFFECT, false},
    {"--disable-uvicorn-access-log", VF_NO_EFFECT, false},
    {"--host", VF_NO_EFFECT, true},
    {"--port", VF_NO_EFFECT, true},
    {"--served-model-name", VF_NO_EFFECT, true},
    {"--revision", VF_NO_EFFECT, true},
    {"--code-revision", VF_NO_EFFECT, true},
    {"--tokenizer-revision", VF_NO_EFFECT, true},
    {"--download-dir", VF_NO_EFFECT, true},
    {"--safetensors-load-strategy", VF_NO_EFFECT, true},
    {"--load-format", VF_NO_EFFECT, true},
    {"--seed", VF_NO_EFFECT, true},
    {"--uvicorn-log-level", VF_NO_EFFECT, true},
    {"--api-key", VF_NO_EFFECT, true},
};

/* vLLM flags that ranksim knows and does not simulate, with the reason the note gives. A flag in
 * neither table is noted as "not read by ranksim". */
static const struct {
    const char *name;
    const char *reason;
} unsimulated_flags[] = {
    {"--enable-chunked-prefill",
     "the scheduler: ranksim's (vLLM V1's) chunks prefills always, as vLLM's default does"},
    {"--no-enable-chunked-prefill",
     "the scheduler: ranksim's (vLLM V1's) chunks prefills always, as vLLM's default does"},
    {"--block-size", "the KV block size: ranksim takes the attention backend's"},
    {"--kv-cache-memory-bytes", "a fixed KV size: ranksim budgets with gpu_memory_utilization"},
    {"--hf-overrides", "config overrides: give the changed config.json with model: instead"},
    {"--tokenizer-mode", "tokenizer / API only"},
    {"--reasoning-parser", "tokenizer / API only"},
    {"--tool-call-parser", "tokenizer / API only"},
    {"--enable-auto-tool-choice", "tokenizer / API only"},
    {"--chat-template", "tokenizer / API only"},
    {"--max-logprobs", "sampling output only"},
    {"--data-parallel-backend", "how DP ranks are launched: no bearing on the simulated ops"},
    {"--data-parallel-size-local", "how DP ranks are launched: no bearing on the simulated ops"},
    {"--distributed-executor-backend", "how workers are launched: no bearing on the simulated ops"},
    {"--enable-eplb", "expert load balancing: redundant experts are not modelled"},
    {NULL, NULL},
};

/* The reason for noting `name`, "not read by ranksim" when it is not listed. */
static const char *unsimulated_reason(const char *name)
{
    for (size_t i = 0; unsimulated_flags[i].name; i++)
        if (strcmp(unsimulated_flags[i].name, name) == 0)
            return unsimulated_flags[i].reason;
    return "not read by ranksim";
}

/* ---- parsing: one flag at a time ---- */

/* The state of one parse: the settings being built and where a failure goes. */
typedef struct {
    VllmArgs *a;
    GError **error;
} Reader;

/* Records a flag or value that is given but not simulated. */
static void note(VllmArgs *a, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void note(VllmArgs *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(a->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

static bool flag_fail(Reader *ef, const char *flag, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static bool flag_fail(Reader *ef, const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(ef->error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID, "%s: %s", flag, msg);
    return false;
}

/* A token that is an option rather than a value: "-x..." but not a negative number. */
static bool looks_like_flag(const char *t)
{
    return t[0] == '-' && t[1] != '\0' && !g_ascii_isdigit(t[1]) && t[1] != '.';
}

/* An unsigned integer in [min, max]; `human` also takes vLLM's 4k / 4K (1000 / 1024) forms. */
static bool flag_uint(Reader *ef, const char *flag, const char *v, uint64_t min, uint64_t max,
                      bool human, uint32_t *out)
{
    g_autofree char *digits = g_strdup(v);
    uint64_t mult = 1;
    size_t len = strlen(digits);
    if (human && len > 1) {
        static const char units[] = "kKmMgG";
        static const uint64_t mults[] = {1000, 1024, 1000000, 1048576, 1000000000, 1073741824};
        const char *u = strchr(units, digits[len - 1]);
        if (u) {
            mult = mults[u - units];
            digits[len - 1] = '\0';
        }
    }
    guint64 x = 0;
    if (!g_ascii_string_to_unsigned(digits, 10, 0, G_MAXUINT64 / 1073741824, &x, NULL))
        return flag_fail(ef, flag,
                         "expected an integer, got '%s'; valid: %" G_GUINT64_FORMAT
                         "..%" G_GUINT64_FORMAT,
                         v, min, max);
    x *= mult;
    if (x < min || x > max)
        return flag_fail(ef, flag,
                         "%s is out of range; valid: %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT, v,
                         min, max);
    *out = (uint32_t)x;
    return true;
}

static bool flag_backend(Reader *ef, const char *flag, const char *v)
{
    if (vllm_args_parse_backend(v, &ef->a->engine.attention_backend)) {
        ef->a->backend_set = true;
        return true;
    }
    const char *names[MODEL_BACKEND_COUNT + 1];
    vllm_args_backend_names(names);
    g_autofree char *hint = yamldoc_suggestion(v, names);
    return flag_fail(ef, flag, "unknown attention backend '%s'; %s", v, hint);
}

static bool flag_cudagraph(Reader *ef, const char *flag, const char *v)
{
    if (g_ascii_strcasecmp(v, "FULL_DECODE_ONLY") == 0) {
        ef->a->engine.cudagraph_mode = MODEL_CUDAGRAPH_FULL;
        note(ef->a, "cudagraph_mode FULL_DECODE_ONLY (simulated as FULL)");
    } else if (!vllm_args_parse_cudagraph(v, &ef->a->engine.cudagraph_mode)) {
        const char *names[VLLM_ARGS_N_CUDAGRAPH + 1];
        vllm_args_cudagraph_names(names);
        g_autofree char *hint = yamldoc_suggestion(v, names);
        return flag_fail(ef, flag, "unknown cudagraph_mode '%s'; %s, FULL_DECODE_ONLY", v, hint);
    }
    ef->a->cudagraph_set = true;
    return true;
}

static bool flag_opt_level(Reader *ef, const char *flag, const char *v)
{
    guint64 level = 0;
    if (!g_ascii_string_to_unsigned(v, 10, 0, 3, &level, NULL))
        return flag_fail(ef, flag, "expected an optimization level, got '%s'; valid: 0..3", v);
    ef->a->opt_level = (int)level;
    return true;
}

/* The JSON of --compilation-config: cudagraph_mode, and pass_config.enable_sp (or its older
 * name enable_sequence_parallelism) for sequence parallelism. Other members have no bearing. */
static bool flag_compilation_json(Reader *ef, const char *flag, const char *json)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) jerr = NULL;
    if (!sched_json_load(p, json, -1, &jerr))
        return flag_fail(ef, flag,
                         "not valid JSON (%s); valid: e.g. '{\"cudagraph_mode\": "
                         "\"PIECEWISE\"}'",
                         jerr->message);
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return flag_fail(ef, flag,
                         "expected a JSON object such as '{\"cudagraph_mode\": "
                         "\"PIECEWISE\"}'");
    JsonObject *o = json_node_get_object(root);
    JsonNode *m = json_object_get_member(o, "cudagraph_mode");
    if (m) {
        if (!JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_STRING)
            return flag_fail(ef, flag, "cudagraph_mode must be a string such as \"PIECEWISE\"");
        if (!flag_cudagraph(ef, flag, json_node_get_string(m)))
            return false;
    }
    JsonNode *pc = json_object_get_member(o, "pass_config");
    if (pc && JSON_NODE_HOLDS_OBJECT(pc)) {
        JsonObject *po = json_node_get_object(pc);
        static const char *const sp_names[] = {"enable_sp", "enable_sequence_parallelism"};
        for (size_t i = 0; i < G_N_ELEMENTS(sp_names); i++) {
            JsonNode *b = json_object_get_member(po, sp_names[i]);
            if (b && JSON_NODE_HOLDS_VALUE(b) && json_node_get_value_type(b) == G_TYPE_BOOLEAN)
                ef->a->par.enable_sequence_parallel = json_node_get_boolean(b);
        }
    }
    return true;
}

/* --compilation-config VALUE, or --compilation-config.SUBKEY VALUE. */
static bool flag_compilation(Reader *ef, const char *flag, const char *sub, const char *v,
                             const char *given)
{
    if (sub) {
        if (strcmp(sub, "cudagraph_mode") == 0)
            return flag_cudagraph(ef, flag, v);
        if (strcmp(sub, "pass_config.enable_sp") == 0 ||
            strcmp(sub, "pass_config.enable_sequence_parallelism") == 0) {
            if (g_ascii_strcasecmp(v, "true") != 0 && g_ascii_strcasecmp(v, "false") != 0)
                return flag_fail(ef, given, "expected true or false, got '%s'", v);
            ef->a->par.enable_sequence_parallel = g_ascii_strcasecmp(v, "true") == 0;
            return true;
        }
        note(ef->a, "%s %s (compilation option not modelled)", given, v);
        return true;
    }
    if (g_ascii_isdigit(v[0]))
        return flag_opt_level(ef, flag, v); /* older vLLM: a number is the level */
    return flag_compilation_json(ef, flag, v);
}

ModelSpecMethod vllm_args_spec_method(const char *method)
{
    if (g_str_has_suffix(method, "mtp"))
        return MODEL_SPEC_MTP;
    return strcmp(method, "ngram") == 0        ? MODEL_SPEC_NGRAM
           : g_str_has_prefix(method, "eagle") ? MODEL_SPEC_EAGLE
                                               : MODEL_SPEC_OTHER;
}

/* --speculative-config '{"method": "mtp", "num_speculative_tokens": 3}': MTP loads the
 * model's own MTP layers (their weights count); a separate draft model (eagle, eagle3, a
 * "model" key) and n-gram lookup are noted (no draft model is loaded by ranksim). */
static bool flag_speculative(Reader *ef, const char *flag, const char *v)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) jerr = NULL;
    JsonNode *root = NULL;
    if (!sched_json_load(p, v, -1, &jerr) || !(root = json_parser_get_root(p)) ||
        !JSON_NODE_HOLDS_OBJECT(root))
        return flag_fail(ef, flag,
                         "not a JSON object; valid: e.g. '{\"method\": \"mtp\", "
                         "\"num_speculative_tokens\": 1}'");
    JsonObject *o = json_node_get_object(root);
    const char *method = json_object_has_member(o, "method")
                             ? json_object_get_string_member_with_default(o, "method", "")
                             : "";
    int64_t n = json_object_get_int_member_with_default(o, "num_speculative_tokens", 1);
    if (n < 1 || n > 64)
        return flag_fail(ef, flag, "num_speculative_tokens %" G_GINT64_FORMAT "; valid: 1..64", n);
    ModelEngine *e = &ef->a->engine;
    e->num_speculative_tokens = (uint32_t)n;
    e->speculative_method = vllm_args_spec_method(method);
    if (e->speculative_method == MODEL_SPEC_MTP)
        return true;
    note(ef->a, "%s %s (the draft model's weights and steps are not simulated)", flag, v);
    return true;
}

/* --attention-config '{"backend": ...}' or --attention-config.backend NAME. */
static bool flag_attention_config(Reader *ef, const char *flag, const char *sub, const char *v,
                                  const char *given)
{
    if (sub) {
        if (strcmp(sub, "backend") == 0)
            return flag_backend(ef, given, v);
        note(ef->a, "%s %s (attention option not modelled)", given, v);
        return true;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) jerr = NULL;
    if (!sched_json_load(p, v, -1, &jerr))
        return flag_fail(ef, flag,
                         "not valid JSON (%s); valid: e.g. '{\"backend\": "
                         "\"FLASHMLA_SPARSE\"}'",
                         jerr->message);
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return flag_fail(ef, flag,
                         "expected a JSON object such as '{\"backend\": "
                         "\"FLASHMLA_SPARSE\"}'");
    JsonNode *b = json_object_get_member(json_node_get_object(root), "backend");
    if (!b)
        return true;
    if (!JSON_NODE_HOLDS_VALUE(b) || json_node_get_value_type(b) != G_TYPE_STRING)
        return flag_fail(ef, flag, "backend must be a string such as \"FLASHMLA_SPARSE\"");
    return flag_backend(ef, flag, json_node_get_string(b));
}

/* One recognised flag with its value (NULL for flags without one). `flag` is the canonical
 * spelling, `given` what the config wrote (for messages), `sub` a dotted sub-key or NULL. */
static bool apply_flag(Reader *ef, const VllmFlag *f, const char *given, const char *sub,
                       const char *v)
{
    ModelParallel *par = &ef->a->par;
    ModelEngine *e = &ef->a->engine;
    const char *flag = f->name;
    switch (f->kind) {
    case VF_TP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->tensor_parallel_size);
    case VF_DP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->data_parallel_size);
    case VF_PCP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->prefill_context_parallel_size);
    case VF_DCP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->decode_context_parallel_size);
    case VF_PP:
        return flag_uint(ef, flag, v, 1, MODEL_PLAN_MAX_PP, false, &par->pipeline_parallel_size);
    case VF_EP:
        par->enable_expert_parallel = true;
        return true;
    case VF_NO_EP:
        par->enable_expert_parallel = false;
        return true;
    case VF_NO_CUSTOM_AR:
        par->disable_custom_all_reduce = true;
        return true;
    case VF_DCP_BACKEND:
        if (strcmp(v, "ag_rs") == 0 || strcmp(v, "a2a") == 0) {
            par->dcp_comm_backend = v[1] == 'g' ? MODEL_DCP_AG_RS : MODEL_DCP_A2A;
            return true;
        }
        return flag_fail(ef, flag, "unknown value '%s'; valid: ag_rs, a2a", v);
    case VF_INTERLEAVE:
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, false, &par->cp_kv_cache_interleave_size);
    case VF_BACKEND:
        return flag_backend(ef, flag, v);
    case VF_ALL2ALL_BACKEND:
        for (int k = 0; k < MODEL_A2A_COUNT; k++)
            if (strcmp(v, model_all2all_backend_names[k]) == 0) {
                ef->a->par.all2all_backend = (ModelAll2AllBackend)k;
                ef->a->all2all_set = true;
                return true;
            }
        return flag_fail(ef, flag,
                         "unknown value '%s'; valid: allgather_reducescatter, naive, "
                         "deepep_high_throughput, deepep_low_latency, mori_high_throughput, "
                         "mori_low_latency, nixl_ep, flashinfer_nvlink_one_sided, "
                         "flashinfer_nvlink_two_sided",
                         v);
    case VF_MOE_BACKEND:
        if (model_moe_backend_parse(v, &ef->a->engine.moe_backend))
            return true;
        return flag_fail(ef, flag,
                         "unknown MoE backend '%s'; valid: auto, triton, deep_gemm, "
                         "deep_gemm_mega_moe, cutlass, flashinfer_trtllm, flashinfer_cutlass, "
                         "flashinfer_cutedsl, marlin, aiter, emulation",
                         v);
    case VF_ATTENTION_CONFIG:
        return flag_attention_config(ef, flag, sub, v, given);
    case VF_QUANT:
        /* Kept as given: whether it is an override (an unquantized checkpoint quantized online)
         * or must agree with the checkpoint's quantization_config is settled once the model is
         * known (vllm_args_settle_quant). */
        g_strlcpy(ef->a->quant_given, v, sizeof ef->a->quant_given);
        if (g_ascii_strcasecmp(v, "ascend") == 0) { /* vLLM-Ascend: the scheme is the model's */
            ef->a->quant_ascend = true;
            return true;
        }
        if (!vllm_args_known_method(v))
            return flag_fail(ef, flag, "quantization '%s' is not modelled; valid: %s", v,
                             vllm_args_methods);
        ef->a->quant_set = vllm_args_parse_quant(v, &e->quantization);
        return true;
    case VF_KV_DTYPE:
        if (vllm_args_parse_kv_dtype(v, &e->kv_cache_dtype))
            return true;
        {
            g_autofree char *list = g_strjoinv(", ", (char **)vllm_args_kv_dtype_names);
            return flag_fail(ef, flag, "unknown KV cache dtype '%s'; valid: %s", v, list);
        }
    case VF_GPU_UTIL: {
        char *end = NULL;
        double x = g_ascii_strtod(v, &end);
        if (end == v || *end || !isfinite(x))
            return flag_fail(ef, flag,
                             "expected a number, got '%s'; valid: a number > 0 and "
                             "<= 1",
                             v);
        if (x <= 0 || x > 1)
            return flag_fail(ef, flag, "%s is out of range; valid: a number > 0 and <= 1", v);
        e->gpu_memory_utilization = x;
        e->given |= MODEL_ENGINE_GIVEN_GPU_MEMORY_UTILIZATION;
        return true;
    }
    case VF_BATCHED_TOKENS:
        e->given |= MODEL_ENGINE_GIVEN_MAX_NUM_BATCHED_TOKENS;
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, true, &e->max_num_batched_tokens);
    case VF_MODEL_LEN:
        e->given |= MODEL_ENGINE_GIVEN_MAX_MODEL_LEN;
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, true, &e->max_model_len);
    case VF_GPU_BLOCKS:
        return flag_uint(ef, flag, v, 1, UINT32_MAX, true, &e->num_gpu_blocks_override);
    case VF_NUM_SEQS:
        e->given |= MODEL_ENGINE_GIVEN_MAX_NUM_SEQS;
        return flag_uint(ef, flag, v, 1, MAX_BATCH_SEQS, false, &e->max_num_seqs);
    case VF_COMPILATION:
        return flag_compilation(ef, flag, sub, v, given);
    case VF_OPT_LEVEL:
        return v[0] == '{' ? flag_compilation_json(ef, flag, v) : flag_opt_level(ef, flag, v);
    case VF_EAGER:
        ef->a->eager = true;
        return true;
    case VF_PREFIX_CACHING:
    case VF_NO_PREFIX_CACHING:
        e->enable_prefix_caching = f->kind == VF_PREFIX_CACHING;
        e->given |= MODEL_ENGINE_GIVEN_PREFIX_CACHING;
        return true;
    case VF_NO_EAGER:
        ef->a->eager = false;
        return true;
    case VF_ASYNC_SCHEDULING:
    case VF_NO_ASYNC_SCHEDULING:
        e->async_scheduling = f->kind == VF_ASYNC_SCHEDULING;
        e->given |= MODEL_ENGINE_GIVEN_ASYNC_SCHEDULING;
        return true;
    case VF_SPECULATIVE:
        return flag_speculative(ef, flag, v);
    case VF_MAMBA_DTYPE:
    case VF_MAMBA_SSM_DTYPE: {
        /* argparse's choices of MambaDType (vllm/config/cache.py) */
        ModelMambaDtype d;
        if (!model_engine_mamba_dtype_parse(v, &d))
            return flag_fail(ef, flag, "invalid choice: '%s' (choose from %s)", v,
                             MODEL_ENGINE_MAMBA_DTYPE_CHOICES);
        if (f->kind == VF_MAMBA_DTYPE)
            e->mamba_cache_dtype = (uint8_t)d;
        else
            e->mamba_ssm_cache_dtype = (uint8_t)d;
        return true;
    }
    case VF_MAMBA_MODE: {
        ModelMambaModeArg m;
        if (!model_engine_mamba_mode_parse(v, &m))
            return flag_fail(ef, flag, "invalid choice: '%s' (choose from %s)", v,
                             MODEL_ENGINE_MAMBA_MODE_CHOICES);
        e->mamba_cache_mode = (uint8_t)m;
        return true;
    }
    case VF_NO_EFFECT:
        return true;
    }
    g_assert_not_reached();
}

/* One dotted `KEY.SUB.SUB VALUE` into `o`: nested objects for the inner keys, the value as JSON
 * when it reads as JSON (a number, true, a list; nesting bounded by sched/json-bounded.h), else
 * as a string (argparse_utils.py). False for a path of more than SCHED_JSON_MAX_DEPTH keys. */
static bool dotted_set(JsonObject *o, const char *path, const char *value)
{
    g_auto(GStrv) keys = g_strsplit(path, ".", SCHED_JSON_MAX_DEPTH + 2);
    guint n = g_strv_length(keys);
    if (n > SCHED_JSON_MAX_DEPTH)
        return false;
    for (guint k = 0; k + 1 < n; k++) {
        JsonNode *m = json_object_get_member(o, keys[k]);
        if (!m || !JSON_NODE_HOLDS_OBJECT(m))
            json_object_set_object_member(o, keys[k], json_object_new());
        o = json_object_get_object_member(o, keys[k]);
    }
    JsonNode *v = sched_json_from_string(value, NULL);
    if (!v) {
        v = json_node_new(JSON_NODE_VALUE);
        json_node_set_string(v, value);
    }
    json_object_set_member(o, keys[n - 1], v);
    return true;
}

static const VllmFlag *find_flag(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(vllm_flags); i++)
        if (strcmp(vllm_flags[i].name, name) == 0)
            return &vllm_flags[i];
    return NULL;
}

/* ---- the interface ---- */

VllmArgs *vllm_args_parse(const char *const *argv, int argc, const ModelParallel *par,
                          const ModelEngine *engine, GError **error)
{
    g_return_val_if_fail(argc >= 0 && (argv != NULL || argc == 0), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autoptr(VllmArgs) a = g_new0(VllmArgs, 1);
    if (par)
        a->par = *par;
    else
        model_parallel_defaults(&a->par);
    if (engine)
        a->engine = *engine;
    else
        model_engine_defaults(&a->engine);
    a->opt_level = -1;
    a->notes = g_ptr_array_new_with_free_func(g_free);
    Reader rd = {a, error};
    g_autoptr(JsonObject) spec_dotted = json_object_new();
    for (int i = 0; i < argc; i++) {
        const char *tok = argv[i];
        if (!looks_like_flag(tok)) {
            note(a, "%s (not a flag; ignored)", tok);
            continue;
        }
        /* name [=value]; "-O3" is "-O 3" */
        const char *eq = strchr(tok, '=');
        g_autofree char *name = eq ? g_strndup(tok, (gsize)(eq - tok)) : g_strdup(tok);
        g_autofree char *inline_val = eq ? g_strdup(eq + 1) : NULL;
        if (name[0] == '-' && name[1] == 'O' && name[2] && name[2] != '.' && !inline_val) {
            inline_val = g_strdup(name + 2);
            name[2] = '\0';
        }
        char *sub = strchr(name, '.');
        if (sub)
            *sub++ = '\0';
        if (name[1] == '-')
            for (char *c = name + 2; *c; c++)
                if (*c == '_')
                    *c = '-';
        const VllmFlag *f = find_flag(name);
        if (f && sub && f->kind == VF_OPT_LEVEL) /* vLLM <= 0.11: -O.KEY is --compilation-config */
            f = find_flag("--compilation-config");
        if (f && sub && f->kind == VF_SPECULATIVE) {
            /* FlexibleArgumentParser: --speculative-config.KEY VALUE merge into one JSON object,
             * given after every other flag */
            const char *v = inline_val ? inline_val : i + 1 < argc ? argv[++i] : NULL;
            if (!v) {
                flag_fail(&rd, tok, "needs a value");
                return NULL;
            }
            if (!dotted_set(spec_dotted, sub, v)) {
                flag_fail(&rd, tok, "nests deeper than %d keys", SCHED_JSON_MAX_DEPTH);
                return NULL;
            }
            continue;
        }
        if (f && sub && f->kind != VF_COMPILATION && f->kind != VF_ATTENTION_CONFIG)
            f = NULL;
        if (!f) {
            const char *why = unsimulated_reason(name);
            if (strcmp(name, "--enable-eplb") == 0)
                a->eplb = true; /* its rules are checked (vllm_args_check_eplb) */
            if (!eq && i + 1 < argc && !looks_like_flag(argv[i + 1])) {
                note(a, "%s %s (%s)", tok, argv[i + 1], why);
                i++;
            } else {
                note(a, "%s (%s)", tok, why);
            }
            continue;
        }
        g_autofree char *given = sub ? g_strdup_printf("%s.%s", name, sub) : g_strdup(name);
        const char *v = inline_val;
        bool ok = true;
        if (f->value && !v) {
            if (i + 1 >= argc || looks_like_flag(argv[i + 1]))
                ok = flag_fail(&rd, given, "needs a value");
            else
                v = argv[++i];
        } else if (!f->value && v) {
            ok = flag_fail(&rd, given, "takes no value, got '=%s'", v);
        }
        if (!ok || !apply_flag(&rd, f, given, sub, v))
            return NULL;
    }
    if (json_object_get_size(spec_dotted) > 0) {
        g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), spec_dotted);
        g_autofree char *json = json_to_string(node, FALSE);
        if (!flag_speculative(&rd, "--speculative-config", json))
            return NULL;
    }
    return g_steal_pointer(&a);
}

VllmArgs *vllm_args_parse_line(const char *line, const ModelParallel *par,
                               const ModelEngine *engine, GError **error)
{
    g_return_val_if_fail(line != NULL, NULL);
    int argc = 0;
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) serr = NULL;
    if (!g_shell_parse_argv(line, &argc, &argv, &serr)) {
        if (g_error_matches(serr, G_SHELL_ERROR, G_SHELL_ERROR_EMPTY_STRING))
            return vllm_args_parse(NULL, 0, par, engine, error);
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_SPLIT,
                    "cannot split it like a shell command line: %s; quote JSON values "
                    "like '{\"cudagraph_mode\": \"PIECEWISE\"}'",
                    serr->message);
        return NULL;
    }
    return vllm_args_parse((const char *const *)argv, argc, par, engine, error);
}

void vllm_args_apply(const VllmArgs *a, ModelParallel *par, ModelEngine *engine, GPtrArray *ignored)
{
    g_return_if_fail(a != NULL && par != NULL && engine != NULL && ignored != NULL);
    *par = a->par;
    *engine = a->engine;
    if (a->eager)
        engine->cudagraph_mode = MODEL_CUDAGRAPH_NONE;
    else if (!a->cudagraph_set && a->opt_level >= 0)
        engine->cudagraph_mode = a->opt_level == 0   ? MODEL_CUDAGRAPH_NONE
                                 : a->opt_level == 1 ? MODEL_CUDAGRAPH_PIECEWISE
                                                     : MODEL_CUDAGRAPH_FULL_AND_PIECEWISE;
    engine->quantization_override = false;
    for (guint i = 0; i < a->notes->len; i++)
        g_ptr_array_add(ignored, g_strdup(g_ptr_array_index(a->notes, i)));
}

/* A quantization method name as vLLM compares them: lowercase, kernel variants folded onto
 * the method that names the checkpoint format (awq_marlin -> awq, modelopt_fp4 -> modelopt). */
static char *method_key(const char *m)
{
    char *k = g_ascii_strdown(m, -1);
    static const char *const strip[] = {"_marlin", "-marlin", "_fp4", "_fp8", "_mixed", NULL};
    for (size_t i = 0; strip[i]; i++)
        if (g_str_has_suffix(k, strip[i]) && strlen(k) > strlen(strip[i]) &&
            strncmp(k, "fbgemm", 6) != 0 && strncmp(k, "ptpc", 4) != 0)
            k[strlen(k) - strlen(strip[i])] = '\0';
    if (strcmp(k, "compressed_tensors") == 0)
        strcpy(k, "compressed-tensors");
    return k;
}

bool vllm_args_check_eplb(const VllmArgs *a, const ModelParallel *par, GError **error)
{
    if (!a->eplb)
        return true;
    /* ParallelConfig._validate_parallel_config (vllm/config/parallel.py), in its words */
    if (!par->enable_expert_parallel) {
        g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "--enable-eplb: vLLM refuses it: \"enable_expert_parallel must be "
                            "True to use EPLB.\" (add --enable-expert-parallel)");
        return false;
    }
    uint32_t tp = par->tensor_parallel_size, pcp = par->prefill_context_parallel_size,
             dp = par->data_parallel_size;
    if ((uint64_t)tp * pcp * dp <= 1) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--enable-eplb: vLLM refuses it: \"EPLB requires tensor, prefill-context, "
                    "or data parallelism, but got TP=%u, PCP=%u, DP=%u.\"",
                    tp, pcp, dp);
        return false;
    }
    return true;
}

bool vllm_args_settle_quant(const VllmArgs *a, ModelArch *arch, ModelEngine *engine,
                            GPtrArray *notes, GError **error)
{
    g_return_val_if_fail(a != NULL && arch != NULL && engine != NULL, false);
    const char *ckpt = arch->quant.method;
    if (a->quant_ascend) {
        /* vLLM-Ascend reads the scheme from quant_model_description.json; a preset without one
         * is taken as msModelSlim W8A8 (seed 000 §3.7) */
        if (!ckpt[0]) {
            engine->quantization = MODEL_QUANT_W8A8;
            engine->quantization_override = true;
        }
        return true;
    }
    if (!a->quant_given[0])
        return true;
    if (ckpt[0]) {
        g_autofree char *kq = method_key(a->quant_given);
        g_autofree char *kc = method_key(ckpt);
        if (strcmp(kq, kc) != 0) {
            /* vLLM's ModelConfig._verify_quantization */
            g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                        "--quantization: Quantization method specified in the model config "
                        "(%s) does not match the quantization method specified in the "
                        "`quantization` argument (%s); valid: --quantization %s, or leave it out",
                        ckpt, a->quant_given, ckpt);
            return false;
        }
        return true; /* the checkpoint's own formats, per tensor */
    }
    if (!a->quant_set) {
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                    "--quantization %s: the checkpoint has no quantization_config, and %s reads "
                    "weights that were quantized beforehand; valid for an unquantized "
                    "checkpoint: fp8 (quantized online), or a checkpoint in that format",
                    a->quant_given, a->quant_given);
        return false;
    }
    /* online quantization of an unquantized checkpoint (vLLM: Fp8Config without serialized fp8
     * weights): ranksim's scheme of that name */
    engine->quantization_override = true;
    if (notes)
        g_ptr_array_add(notes,
                        g_strdup_printf("--quantization %s on an unquantized checkpoint: "
                                        "weights quantized online, laid out as ranksim's "
                                        "'%s' scheme (doc/quantization.md)",
                                        a->quant_given,
                                        model_engine_quant_name(engine->quantization)));
    return true;
}

void vllm_args_free(VllmArgs *a)
{
    if (!a)
        return;
    if (a->notes)
        g_ptr_array_unref(a->notes);
    g_free(a);
}
