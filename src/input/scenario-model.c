/* src/input/scenario-model.c — `kind: model` (the default): what a vLLM deployment computes.
 * `model:` -> ModelArch (a preset or a Hugging Face config.json), `parallel:` -> ModelPlan
 * (vLLM's ParallelConfig names and rules), hardware and nodes for the plan's world, `engine:`
 * -> ModelEngine + ModelCost (with an optional op profile), `workload:` (or --prefill/--decode)
 * -> ModelWorkload checked against the engine's scheduler limits; then model_lower() builds the
 * program and model_layout_check() its findings. vLLM eval configs (src/input/scenario-eval.c) share the
 * second half, scenario_finish_model. Part of the scenario loader (src/input/scenario-common.h).
 *
 * A workload of requests is read, not served (serving runs the engine): the load stops before
 * the lowering and keeps the rest (Scenario.pending, src/input/scenario-pending.h), and
 * scenario_finish_served lowers the steps runner_prepare (src/run/runner.h) served, with the
 * same errors in the same order as a workload of steps.
 *
 * Errors from the model layer (MODEL_ARCH_ERROR, MODEL_PLAN_ERROR, MODEL_COST_ERROR,
 * MODEL_LOWER_ERROR) are wrapped with the location of the key they came from.
 * Costs: O(steps x sequences) to read the workload; the lowering's costs are model/lower.h's.
 */
#include "scenario-model.h"

#include <math.h>
#include <string.h>

#include "hardware.h"
#include "hf-config.h"
#include "../util/inputfile.h"
#include "scenario-hardware.h"
#include "scenario-pending.h"
#include "scenario-requests.h"
#include "scenario-settings.h"
#include "vllm-args.h"
#include "vllm-version.h"
#include "../../model/deployment.h"

/* ---- model and parallel ---- */

/* The built-in model presets, NULL-terminated. Caller frees (g_strfreev). */
char **scenario_model_presets(void)
{
    char **v = g_strsplit(model_arch_preset_names(), ",", -1);
    guint n = 0;
    for (guint i = 0; v[i]; i++) {
        g_strstrip(v[i]);
        if (v[i][0])
            v[n++] = v[i];
        else
            g_free(v[i]);
    }
    v[n] = NULL;
    return v;
}

/* A `model:` string naming a file rather than a preset: it contains '/' or ends in .json. */
static bool is_model_path(const char *s)
{
    return strchr(s, '/') != NULL || g_str_has_suffix(s, ".json");
}

/* Loads the config.json at `path` (a folder means its config.json). */
bool scenario_arch_from_file(Loader *ld, const YamlDocNode *at, const char *key, const char *path,
                             Scenario *s)
{
    g_autofree char *file = g_file_test(path, G_FILE_TEST_IS_DIR)
                                ? g_build_filename(path, "config.json", NULL)
                                : g_strdup(path);
    if (!g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
        g_auto(GStrv) presets = scenario_model_presets();
        g_autofree char *list = g_strjoinv(", ", presets);
        /* what it is, when it exists: a FIFO or a device is never opened */
        const char *what =
            !g_file_test(file, G_FILE_TEST_EXISTS) ? "no such file" : "not a regular file";
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                 "cannot read model config '%s': %s; valid: a preset "
                                 "(%s) or the path of a Hugging Face config.json (or its folder), "
                                 "relative to the scenario's folder",
                                 file, what, list);
    }
    g_autoptr(GError) err = NULL;
    if (!hf_config_load_file(file, s->arch, &err))
        return yamldoc_fail_code(&ld->doc,
                                 err->code == 0 ? SCENARIO_ERROR_IO : SCENARIO_ERROR_INVALID, at,
                                 key, "%s", err->message);
    g_free(s->model_source);
    s->model_source = g_steal_pointer(&file);
    return true;
}

bool scenario_arch_from_preset(Loader *ld, const YamlDocNode *at, const char *key, const char *name,
                               Scenario *s)
{
    g_auto(GStrv) presets = scenario_model_presets();
    if (!g_strv_contains((const char *const *)presets, name)) {
        g_autofree char *hint = yamldoc_suggestion(name, (const char *const *)presets);
        return yamldoc_fail(&ld->doc, at, key,
                            "unknown model preset '%s'; %s; or the path of a Hugging Face "
                            "config.json such as ./config.json",
                            name, hint);
    }
    g_autoptr(GError) err = NULL;
    if (!model_arch_load_preset(name, s->arch, &err))
        return yamldoc_fail(&ld->doc, at, key, "%s", err->message);
    g_free(s->model_source);
    s->model_source = g_strdup_printf("preset %s", name);
    return true;
}

/* `model:`: a preset name, or a config.json path relative to the scenario's folder. */
bool scenario_load_arch(Loader *ld, const YamlDocNode *n, Scenario *s)
{
    g_auto(GStrv) presets = scenario_model_presets();
    g_autofree char *list = g_strjoinv(", ", presets);
    g_autofree char *valid = g_strdup_printf(
        "a model preset (%s) or the path of a Hugging Face config.json, relative to the "
        "scenario's folder",
        list);
    const char *v = NULL;
    if (!yamldoc_get_string(&ld->doc, n, "model", valid, &v))
        return false;
    if (is_model_path(v)) {
        g_autofree char *path = scenario_resolve_path(ld, v);
        return scenario_arch_from_file(ld, n, "model", path, s);
    }
    return scenario_arch_from_preset(ld, n, "model", v, s);
}

static const char *const dcp_backend_names[] = {"ag_rs", "a2a", NULL};

/* `parallel:` (vLLM's ParallelConfig names) applied on top of *par. */
static bool load_parallel(Loader *ld, const YamlDocNode *m, ModelParallel *par)
{
    static const char *const keys[] = {
        "tensor_parallel_size",
        "data_parallel_size",
        "pipeline_parallel_size",
        "prefill_context_parallel_size",
        "decode_context_parallel_size",
        "enable_expert_parallel",
        "enable_sequence_parallel",
        "disable_custom_all_reduce",
        "dcp_comm_backend",
        "all2all_backend",
        "cp_kv_cache_interleave_size",
        "pp_layer_partition",
        NULL,
    };
    if (!yamldoc_expect_map(&ld->doc, m, "parallel",
                            "a mapping of vLLM parallel settings, e.g. {tensor_parallel_size: 1, "
                            "prefill_context_parallel_size: 4, decode_context_parallel_size: 4}") ||
        !yamldoc_check_keys(&ld->doc, m, keys, NULL, "parallel"))
        return false;
    uint32_t pp = par->pipeline_parallel_size ? par->pipeline_parallel_size : 1;
    if (!scenario_get_u32(ld, m, "tensor_parallel_size", 1, MAX_RANKS,
                          &par->tensor_parallel_size) ||
        !scenario_get_u32(ld, m, "data_parallel_size", 1, MAX_RANKS, &par->data_parallel_size) ||
        !scenario_get_u32(ld, m, "pipeline_parallel_size", 1, MODEL_PLAN_MAX_PP, &pp) ||
        !scenario_get_u32(ld, m, "prefill_context_parallel_size", 1, MAX_RANKS,
                          &par->prefill_context_parallel_size) ||
        !scenario_get_u32(ld, m, "decode_context_parallel_size", 1, MAX_RANKS,
                          &par->decode_context_parallel_size) ||
        !scenario_get_u32(ld, m, "cp_kv_cache_interleave_size", 1, MAX_SEQ_LEN,
                          &par->cp_kv_cache_interleave_size) ||
        !scenario_get_bool_opt(ld, m, "enable_expert_parallel", &par->enable_expert_parallel) ||
        !scenario_get_bool_opt(ld, m, "enable_sequence_parallel", &par->enable_sequence_parallel) ||
        !scenario_get_bool_opt(ld, m, "disable_custom_all_reduce",
                               &par->disable_custom_all_reduce))
        return false;
    par->pipeline_parallel_size = pp;
    const YamlDocNode *n = yamldoc_map_get(m, "pp_layer_partition");
    if (n) {
        /* VLLM_PP_LAYER_PARTITION: comma-separated layer counts, one per stage */
        const char *v = NULL;
        if (!yamldoc_get_string(&ld->doc, n, "pp_layer_partition",
                                "layers per pipeline stage, comma-separated, e.g. \"31,30\"", &v))
            return false;
        g_auto(GStrv) parts = g_strsplit(v, ",", -1);
        guint np = g_strv_length(parts);
        for (guint i = 0; i < np; i++) {
            char *end = NULL;
            const char *t = g_strstrip(parts[i]);
            guint64 x = g_ascii_strtoull(t, &end, 10);
            if (!t[0] || *end || x > MAX_LAYER || i >= MODEL_PLAN_MAX_PP)
                return yamldoc_fail(&ld->doc, n, "pp_layer_partition",
                                    "Invalid partition string: %s (valid: one layer count per "
                                    "pipeline stage, comma-separated, e.g. \"31,30\")",
                                    v);
            par->pp_partition[i] = (uint32_t)x;
        }
        if (np != pp)
            return yamldoc_fail(&ld->doc, n, "pp_layer_partition",
                                "len(partitions)=%u does not match pp_size=%u.", np, pp);
        par->pp_partition_given = true;
    }
    n = yamldoc_map_get(m, "dcp_comm_backend");
    int b = 0;
    if (n) {
        if (!yamldoc_get_enum(&ld->doc, n, "dcp_comm_backend", dcp_backend_names, &b))
            return false;
        par->dcp_comm_backend = b == 0 ? MODEL_DCP_AG_RS : MODEL_DCP_A2A;
    }
    n = yamldoc_map_get(m, "all2all_backend");
    if (n) {
        if (!yamldoc_get_enum(&ld->doc, n, "all2all_backend",
                              (const char *const *)model_all2all_backend_names, &b))
            return false;
        par->all2all_backend = (ModelAll2AllBackend)b;
    }
    return true;
}

/* ---- engine (values spelled as vLLM spells them: src/input/vllm-args.h) ---- */

/* engine.mamba_cache_dtype / mamba_ssm_cache_dtype / mamba_cache_mode: vLLM's
 * --mamba-cache-dtype, --mamba-ssm-cache-dtype and --mamba-cache-mode with its choices. */
static bool load_mamba_keys(Loader *ld, const YamlDocNode *m, ModelEngine *e)
{
    static const char *const dtypes[] = {"auto", "float32", "float16", "bfloat16", NULL};
    static const char *const modes[] = {"none", "align", "all", NULL};
    const char *dkeys[2] = {"mamba_cache_dtype", "mamba_ssm_cache_dtype"};
    uint8_t *dst[2] = {&e->mamba_cache_dtype, &e->mamba_ssm_cache_dtype};
    const YamlDocNode *n;
    int v = 0;
    for (int k = 0; k < 2; k++) {
        if (!(n = yamldoc_map_get(m, dkeys[k])))
            continue;
        if (!yamldoc_get_enum(&ld->doc, n, dkeys[k], dtypes, &v))
            return false;
        *dst[k] = (uint8_t)v; /* the list follows ModelMambaDtype */
    }
    if ((n = yamldoc_map_get(m, "mamba_cache_mode"))) {
        if (!yamldoc_get_enum(&ld->doc, n, "mamba_cache_mode", modes, &v))
            return false;
        e->mamba_cache_mode = (uint8_t)(MODEL_MAMBA_MODE_NONE + v);
    }
    return true;
}

/* `engine:` applied on top of *e and *cp. *profile_at gets the `op_profile` node, if any. */
static bool load_engine(Loader *ld, const YamlDocNode *m, ModelEngine *e, ModelCostParams *cp,
                        const YamlDocNode **profile_at, GPtrArray *notes)
{
    static const char *const keys[] = {
        "attention_backend",
        "quantization",
        "kv_cache_dtype",
        "gpu_memory_utilization",
        "max_num_batched_tokens",
        "max_model_len",
        "max_num_seqs",
        "num_gpu_blocks_override",
        "enable_prefix_caching",
        "async_scheduling",
        "speculative_config",
        "cudagraph_mode",
        "cudagraph_memory_profiling",
        "moe_backend",
        "mamba_cache_dtype",
        "mamba_ssm_cache_dtype",
        "mamba_cache_mode",
        "jit_compile_s",
        "gpu_sync_check",
        "v2_model_runner",
        "vllm_version",
        "vllm_without",
        "op_profile",
        "compute_efficiency",
        "memory_efficiency",
        "launch_us",
        "graph_launch_us",
        NULL,
    };
    if (!yamldoc_expect_map(&ld->doc, m, "engine",
                            "a mapping of vLLM engine settings, e.g. {attention_backend: "
                            "FLASHMLA_SPARSE, quantization: nvfp4, kv_cache_dtype: fp8}") ||
        !yamldoc_check_keys(&ld->doc, m, keys, NULL, "engine"))
        return false;
    const YamlDocNode *n;
    const char *v = NULL;
    if ((n = yamldoc_map_get(m, "attention_backend"))) {
        const char *names[MODEL_BACKEND_COUNT + 1];
        vllm_args_backend_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (!yamldoc_get_string(&ld->doc, n, "attention_backend", list, &v))
            return false;
        if (!vllm_args_parse_backend(v, &e->attention_backend)) {
            g_autofree char *hint = yamldoc_suggestion(v, names);
            return yamldoc_fail(&ld->doc, n, "attention_backend",
                                "unknown attention backend '%s'; %s", v, hint);
        }
    }
    if ((n = yamldoc_map_get(m, "quantization"))) {
        const char *names[MODEL_QUANT_COUNT + 2];
        vllm_args_quant_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (yamldoc_is_null(n)) { /* null: as the checkpoint says */
            e->quantization = MODEL_QUANT_BF16;
            e->quantization_override = false;
        } else {
            e->quantization_override = true;
            if (!yamldoc_get_string(&ld->doc, n, "quantization", list, &v))
                return false;
            if (!vllm_args_parse_quant(v, &e->quantization)) {
                g_autofree char *hint = yamldoc_suggestion(v, names);
                return yamldoc_fail(&ld->doc, n, "quantization", "unknown quantization '%s'; %s", v,
                                    hint);
            }
        }
    }
    if ((n = yamldoc_map_get(m, "kv_cache_dtype"))) {
        g_autofree char *list = g_strjoinv(", ", (char **)vllm_args_kv_dtype_names);
        if (!yamldoc_get_string(&ld->doc, n, "kv_cache_dtype", list, &v))
            return false;
        if (!vllm_args_parse_kv_dtype(v, &e->kv_cache_dtype)) {
            g_autofree char *hint = yamldoc_suggestion(v, vllm_args_kv_dtype_names);
            return yamldoc_fail(&ld->doc, n, "kv_cache_dtype", "unknown KV cache dtype '%s'; %s", v,
                                hint);
        }
    }
    if ((n = yamldoc_map_get(m, "gpu_memory_utilization")) &&
        !yamldoc_get_number(&ld->doc, n, "gpu_memory_utilization", 0, true, 1,
                            "(fraction of device memory)", &e->gpu_memory_utilization))
        return false;
    if (!scenario_get_bool_opt(ld, m, "cudagraph_memory_profiling", &e->cudagraph_memory_profiling))
        return false;
    if ((n = yamldoc_map_get(m, "moe_backend"))) {
        const char *names[MODEL_MOE_BACKEND_COUNT + 1];
        model_moe_backend_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (!yamldoc_get_string(&ld->doc, n, "moe_backend", list, &v))
            return false;
        if (!model_moe_backend_parse(v, &e->moe_backend)) {
            g_autofree char *hint = yamldoc_suggestion(v, names);
            return yamldoc_fail(&ld->doc, n, "moe_backend", "unknown MoE backend '%s'; %s", v,
                                hint);
        }
    }
    if (!load_mamba_keys(ld, m, e))
        return false;
    if (!scenario_get_bool_opt(ld, m, "gpu_sync_check", &e->gpu_sync_check))
        return false;
    if (!scenario_get_bool_opt(ld, m, "v2_model_runner", &e->v2_model_runner))
        return false;
    if ((n = yamldoc_map_get(m, "jit_compile_s")) &&
        !yamldoc_get_number(&ld->doc, n, "jit_compile_s", 0, false, 86400,
                            "(seconds one Triton kernel takes to JIT-compile)", &e->jit_compile_s))
        return false;
    if (!vllm_version_apply(&ld->doc, m, &e->vllm_absent, &e->vllm_release, notes))
        return false;
    static const struct {
        const char *key;
        uint32_t bit;
    } given[] = {{"max_model_len", MODEL_ENGINE_GIVEN_MAX_MODEL_LEN},
                 {"max_num_batched_tokens", MODEL_ENGINE_GIVEN_MAX_NUM_BATCHED_TOKENS},
                 {"max_num_seqs", MODEL_ENGINE_GIVEN_MAX_NUM_SEQS},
                 {"v2_model_runner", MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER},
                 {"async_scheduling", MODEL_ENGINE_GIVEN_ASYNC_SCHEDULING},
                 {"cudagraph_memory_profiling", MODEL_ENGINE_GIVEN_CUDAGRAPH_MEMORY_PROFILING},
                 {"enable_prefix_caching", MODEL_ENGINE_GIVEN_PREFIX_CACHING},
                 {"gpu_memory_utilization", MODEL_ENGINE_GIVEN_GPU_MEMORY_UTILIZATION}};
    for (size_t i = 0; i < G_N_ELEMENTS(given); i++)
        if (yamldoc_map_get(m, given[i].key))
            e->given |= given[i].bit;
    if (!scenario_get_u32(ld, m, "max_num_batched_tokens", 1, MAX_SEQ_LEN,
                          &e->max_num_batched_tokens) ||
        !scenario_get_u32(ld, m, "max_model_len", 1, MAX_SEQ_LEN, &e->max_model_len) ||
        !scenario_get_u32(ld, m, "max_num_seqs", 1, MAX_BATCH_SEQS, &e->max_num_seqs) ||
        !scenario_get_u32(ld, m, "num_gpu_blocks_override", 1, UINT32_MAX,
                          &e->num_gpu_blocks_override) ||
        !scenario_get_bool_opt(ld, m, "enable_prefix_caching", &e->enable_prefix_caching) ||
        !scenario_get_bool_opt(ld, m, "async_scheduling", &e->async_scheduling))
        return false;
    if ((n = yamldoc_map_get(m, "speculative_config"))) {
        /* vLLM's --speculative-config, as a mapping */
        static const char *const skeys[] = {"method", "num_speculative_tokens", NULL};
        const char *method = NULL;
        uint32_t k = 1;
        if (!yamldoc_expect_map(&ld->doc, n, "speculative_config",
                                "{method: mtp, num_speculative_tokens: 1}") ||
            !yamldoc_check_keys(&ld->doc, n, skeys, NULL, "speculative_config") ||
            !scenario_get_u32(ld, n, "num_speculative_tokens", 1, 64, &k))
            return false;
        const YamlDocNode *mn = yamldoc_map_get(n, "method");
        if (!mn)
            return yamldoc_fail(&ld->doc, n, "method",
                                "missing; valid: mtp (the model's MTP layers), ngram, eagle, "
                                "eagle3");
        if (!yamldoc_get_string(&ld->doc, mn, "method", "mtp, ngram, eagle, eagle3", &method))
            return false;
        e->speculative_method = vllm_args_spec_method(method);
        e->num_speculative_tokens = k;
        if (e->speculative_method != MODEL_SPEC_MTP)
            g_ptr_array_add(notes, g_strdup_printf("engine.speculative_config method %s (the draft "
                                                   "model's weights and steps are not simulated)",
                                                   method));
    }
    if ((n = yamldoc_map_get(m, "cudagraph_mode"))) {
        const char *names[VLLM_ARGS_N_CUDAGRAPH + 1];
        vllm_args_cudagraph_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (!yamldoc_get_string(&ld->doc, n, "cudagraph_mode", list, &v))
            return false;
        if (!vllm_args_parse_cudagraph(v, &e->cudagraph_mode)) {
            g_autofree char *hint = yamldoc_suggestion(v, names);
            return yamldoc_fail(&ld->doc, n, "cudagraph_mode", "unknown cudagraph mode '%s'%s; %s",
                                v,
                                g_ascii_strcasecmp(v, "FULL_DECODE_ONLY") == 0
                                    ? " (not modelled; FULL is the closest)"
                                    : "",
                                hint);
        }
    }
    if ((n = yamldoc_map_get(m, "op_profile"))) {
        if (!yamldoc_get_string(&ld->doc, n, "op_profile",
                                "the path of a CSV file with header op,rows,seconds, relative to "
                                "the scenario's folder",
                                &v))
            return false;
        *profile_at = n;
    }
    if ((n = yamldoc_map_get(m, "compute_efficiency")) &&
        !yamldoc_get_number(&ld->doc, n, "compute_efficiency", 0, true, 1,
                            "(fraction of the dense peak)", &cp->compute_efficiency))
        return false;
    if ((n = yamldoc_map_get(m, "memory_efficiency")) &&
        !yamldoc_get_number(&ld->doc, n, "memory_efficiency", 0, true, 1,
                            "(fraction of the HBM bandwidth)", &cp->memory_efficiency))
        return false;
    if ((n = yamldoc_map_get(m, "launch_us"))) {
        double us = 0;
        if (!yamldoc_get_number(&ld->doc, n, "launch_us", 0, false, MAX_LAUNCH_US, "microseconds",
                                &us))
            return false;
        cp->launch_ns = (int64_t)llround(us * 1000.0);
    }
    if ((n = yamldoc_map_get(m, "graph_launch_us"))) {
        double us = 0;
        if (!yamldoc_get_number(&ld->doc, n, "graph_launch_us", 0, false, MAX_LAUNCH_US,
                                "microseconds", &us))
            return false;
        cp->graph_launch_ns = (int64_t)llround(us * 1000.0);
    }
    return true;
}

/* engine.op_profile: a CSV relative to the scenario's folder, loaded into s->cost. */
static bool load_profile(Loader *ld, const YamlDocNode *at, Scenario *s)
{
    g_autofree char *path = scenario_resolve_path(ld, at->text);
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    /* the file kind (a folder, FIFO or device is named as such: /dev/zero is "a character
     * device", not "no such file") and the input size limit (doc/reliability.md); the profile
     * parser takes a UTF-8 byte-order mark and reports a NUL byte itself */
    g_autofree char *data = NULL;
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
        g_set_error(&err, SCENARIO_ERROR, SCENARIO_ERROR_IO, "it is a folder");
    else
        data = input_file_read_bytes(path, 0, &len, &err);
    if (!data)
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, "op_profile",
                                 "cannot read op profile '%s': %s; valid: the path of a CSV file "
                                 "with header op,rows,seconds, relative to the scenario's folder",
                                 path, input_reason(err, path));
    if (!model_cost_load_profile(s->cost, data, len, path, &err))
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_INVALID, at, "op_profile", "%s",
                                 err->message);
    s->op_profile = g_steal_pointer(&path);
    return true;
}

/* One measured table at `path` (resolved) into s->cost. `at`/`key`: the YAML node that named
 * it, or NULL for --perf-db (then `flag` names the flag in messages). */
static bool load_one_table(Loader *ld, const YamlDocNode *at, const char *key, const char *flag,
                           const char *path, Scenario *s)
{
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    g_autofree char *data = NULL;
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
        g_set_error(&err, SCENARIO_ERROR, SCENARIO_ERROR_IO, "it is a folder");
    else
        data = input_file_read_bytes(path, 0, &len, &err);
    if (!data) {
        if (at)
            return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                     "cannot read measured table '%s': %s; valid: a table's path, "
                                     "relative to the scenario's folder",
                                     path, input_reason(err, path));
        return scenario_extras_fail(ld, SCENARIO_ERROR_IO, flag, "%s", input_reason(err, path));
    }
    if (!model_cost_load_perf_db(s->cost, data, len, path, &err)) {
        /* the table's own message names the file, the line and the column */
        g_set_error(ld->doc.error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s", err->message);
        return false;
    }
    if (!s->perf_db)
        s->perf_db = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(s->perf_db, g_strdup(path));
    return true;
}

/* hardware.calibration (a path or a list of paths, relative to the scenario's folder), then
 * --perf-db (relative to the working directory): measured tables into s->cost. */
static bool load_tables(Loader *ld, Scenario *s)
{
    const YamlDocNode *cal = ld->calibration;
    if (cal && !yamldoc_is_null(cal)) {
        bool seq = cal->type == YAMLDOC_SEQ;
        guint n = seq ? cal->items->len : 1;
        for (guint i = 0; i < n; i++) {
            const YamlDocNode *item = seq ? g_ptr_array_index(cal->items, i) : cal;
            const char *v = NULL;
            if (!yamldoc_get_string(&ld->doc, item, "calibration",
                                    "a measured table's path or a list of them, relative to the "
                                    "scenario's folder",
                                    &v))
                return false;
            g_autofree char *path = scenario_resolve_path(ld, v);
            if (!load_one_table(ld, item, "calibration", NULL, path, s))
                return false;
        }
    }
    for (int i = 0; ld->extras->perf_db && ld->extras->perf_db[i]; i++) {
        g_autofree char *flag = g_strdup_printf("--perf-db %s", ld->extras->perf_db[i]);
        if (!load_one_table(ld, NULL, NULL, flag, ld->extras->perf_db[i], s))
            return false;
    }
    return true;
}

/* ---- workload ---- */

/* Checks one length of a batch against the engine: prompts and decode contexts fit in
 * max_model_len (the rule model_lower applies too, checked here to point at the line).
 * Returns NULL or a message (caller frees). */
static char *length_problem(uint64_t len, bool decode, const ModelEngine *e)
{
    if (len > e->max_model_len)
        return g_strdup_printf("a %s of %" G_GUINT64_FORMAT " tokens is longer than "
                               "max_model_len=%u; valid: 1..%u, or raise max_model_len",
                               decode ? "decode context" : "prompt", len, e->max_model_len,
                               e->max_model_len);
    return NULL;
}

/* Checks one DP rank's batch against vLLM's per-step scheduler limits. Returns NULL or a
 * message (caller frees). */
static char *batch_problem(const ModelBatch *b, const ModelEngine *e)
{
    uint64_t seqs = (uint64_t)b->prefill->len + b->decode->len;
    if (seqs > e->max_num_seqs)
        return g_strdup_printf("%" G_GUINT64_FORMAT " sequences in one batch exceed "
                               "max_num_seqs=%u (vLLM's scheduler runs at most that many per "
                               "step); spread them over more steps or raise max_num_seqs",
                               seqs, e->max_num_seqs);
    uint64_t tokens = b->decode->len;
    for (guint i = 0; i < b->prefill->len; i++)
        tokens += g_array_index(b->prefill, uint32_t, i);
    if (tokens > e->max_num_batched_tokens)
        return g_strdup_printf("%" G_GUINT64_FORMAT " tokens in one batch exceed "
                               "max_num_batched_tokens=%u (vLLM's scheduler never batches more "
                               "per step); use smaller batches or raise max_num_batched_tokens "
                               "to at least %" G_GUINT64_FORMAT,
                               tokens, e->max_num_batched_tokens, tokens);
    return NULL;
}

static bool batch_empty(const ModelBatch *b)
{
    return b->prefill->len == 0 && b->decode->len == 0;
}

/* A prompt (or a chunk of one) of `tokens` new tokens after `cached` already in the KV cache
 * fits in max_model_len. Returns NULL or a message (caller frees). */
static char *prefill_problem(uint64_t tokens, uint64_t cached, const ModelEngine *e)
{
    if (cached == 0)
        return length_problem(tokens, false, e);
    if (tokens + cached > e->max_model_len)
        return g_strdup_printf("a prompt of %" G_GUINT64_FORMAT " tokens (%" G_GUINT64_FORMAT
                               " cached + %" G_GUINT64_FORMAT " new) is longer than "
                               "max_model_len=%u; valid: cached + tokens <= %u, or raise "
                               "max_model_len",
                               tokens + cached, cached, tokens, e->max_model_len,
                               e->max_model_len);
    return NULL;
}

static const char prefill_item_forms[] =
    "a prompt length (a fresh prompt), or {tokens: N, cached: C}: N new tokens continuing a "
    "prompt whose first C tokens are already in the KV cache (a later chunk of a chunked "
    "prefill)";

/* One entry of `prefill:`: a plain length, or {tokens: N, cached: C}, appended to `b`. */
static bool load_prefill_item(Loader *ld, const YamlDocNode *item, const ModelEngine *e,
                              ModelBatch *b)
{
    static const char *const keys[] = {"tokens", "cached", NULL};
    int64_t tokens = 0, cached = 0;
    const YamlDocNode *at = item, *cn = NULL;
    if (item->type == YAMLDOC_MAP) {
        if (!yamldoc_check_keys(&ld->doc, item, keys, NULL, "a prefill entry"))
            return false;
        const YamlDocNode *tn = yamldoc_map_get(item, "tokens");
        if (!tn)
            return yamldoc_fail(&ld->doc, item, "tokens", "missing; valid: %s",
                                prefill_item_forms);
        if (!yamldoc_get_int(&ld->doc, tn, "tokens", 1, MAX_SEQ_LEN, &tokens))
            return false;
        cn = yamldoc_map_get(item, "cached");
        if (cn && !yamldoc_get_int(&ld->doc, cn, "cached", 0, MAX_SEQ_LEN, &cached))
            return false;
    } else if (item->type == YAMLDOC_SEQ) {
        return yamldoc_fail(&ld->doc, item, "prefill", "expected an entry, got a list; valid: %s",
                            prefill_item_forms);
    } else if (!yamldoc_get_int(&ld->doc, item, "prefill", 1, MAX_SEQ_LEN, &tokens)) {
        return false;
    }
    g_autofree char *why = prefill_problem((uint64_t)tokens, (uint64_t)cached, e);
    if (why)
        return yamldoc_fail(&ld->doc, cached ? cn : at, cached ? "cached" : "prefill", "%s", why);
    model_batch_add_prefill(b, (uint32_t)tokens, (uint32_t)cached);
    return true;
}

/* `prefill:` or `decode:` of a batch: a list of token counts (a prefill entry may also be
 * {tokens: N, cached: C}), appended to `b`. */
static bool load_lengths(Loader *ld, const YamlDocNode *list, const char *key, const ModelEngine *e,
                         ModelBatch *b)
{
    bool decode = strcmp(key, "decode") == 0;
    if (!yamldoc_expect_seq(&ld->doc, list, key,
                            decode ? "a list of context lengths, one per sequence decoding a "
                                     "token, e.g. [633, 633]"
                                   : "a list of prompt lengths, one per prompt prefilled, "
                                     "e.g. [633], or {tokens: N, cached: C} entries for a "
                                     "prompt continued after C cached tokens"))
        return false;
    if (list->items->len > MAX_BATCH_SEQS)
        return yamldoc_fail(&ld->doc, list, key, "%u sequences in one list; valid: at most %d",
                            list->items->len, MAX_BATCH_SEQS);
    for (guint i = 0; i < list->items->len; i++) {
        const YamlDocNode *item = g_ptr_array_index(list->items, i);
        if (!decode) {
            if (!load_prefill_item(ld, item, e, b))
                return false;
            continue;
        }
        int64_t v = 0;
        if (!yamldoc_get_int(&ld->doc, item, key, 1, MAX_SEQ_LEN, &v))
            return false;
        g_autofree char *why = length_problem((uint64_t)v, decode, e);
        if (why)
            return yamldoc_fail(&ld->doc, item, key, "%s", why);
        uint32_t v32 = (uint32_t)v;
        g_array_append_val(b->decode, v32);
    }
    return true;
}

/* A batch mapping {prefill: [...], decode: [...]} (either may be absent). Keys are checked by
 * the caller. */
static bool load_batch(Loader *ld, const YamlDocNode *m, const ModelEngine *e, ModelBatch *b)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(m, "prefill")) && !load_lengths(ld, n, "prefill", e, b))
        return false;
    if ((n = yamldoc_map_get(m, "decode")) && !load_lengths(ld, n, "decode", e, b))
        return false;
    /* the rank's own decisions (doc/lowering.md, "Per-rank decisions"): vLLM main's unless
     * given */
    bool dummy = true, drafter = true;
    if (!scenario_get_bool_opt(ld, m, "dummy", &dummy) ||
        !scenario_get_bool_opt(ld, m, "drafter", &drafter) ||
        !scenario_get_u32(ld, m, "padded_tokens", 1, MAX_SEQ_LEN, &b->pad_tokens))
        return false;
    b->skip_dummy = !dummy;
    b->skip_drafter = !drafter;
    if (b->skip_dummy && (b->prefill->len || b->decode->len))
        return yamldoc_fail(&ld->doc, yamldoc_map_get_key(m, "dummy"), "dummy",
                            "only an idle DP rank runs a dummy batch; valid: dummy: false on a "
                            "batch without prefill or decode");
    return true;
}

static const char step_forms[] =
    "{prefill: [LEN, ...]}, {decode: [CTX, ...]}, both (a mixed batch), or "
    "{per_dp_rank: [{decode: [...]}, ...]}";

/* One entry of `steps:` (number `idx`, 1-based) appended to s->workload. */
static bool load_step(Loader *ld, const YamlDocNode *m, guint idx, Scenario *s)
{
    static const char *const step_keys[] = {"prefill", "decode",        "per_dp_rank",
                                            "drafter", "padded_tokens", NULL};
    static const char *const batch_keys[] = {"prefill", "decode",        "dummy",
                                             "drafter", "padded_tokens", NULL};
    static const char *const nested[] = {"per_dp_rank", NULL};
    const ModelEngine *e = &s->engine;
    uint32_t dp = s->plan->par.data_parallel_size;
    if (!yamldoc_expect_map(&ld->doc, m, "steps", step_forms) ||
        !yamldoc_check_keys(&ld->doc, m, step_keys, NULL, "a workload step"))
        return false;
    g_autoptr(GPtrArray) per_dp = g_ptr_array_new_with_free_func((GDestroyNotify)model_batch_free);
    const YamlDocNode *pd = yamldoc_map_get(m, "per_dp_rank");
    if (pd) {
        for (int k = 0; batch_keys[k]; k++)
            if (yamldoc_map_get(m, batch_keys[k]))
                return yamldoc_fail(&ld->doc, yamldoc_map_get_key(m, batch_keys[k]), batch_keys[k],
                                    "a step with per_dp_rank lists each DP rank's batch inside "
                                    "it; move %s into the per_dp_rank entries",
                                    batch_keys[k]);
        if (!yamldoc_expect_seq(&ld->doc, pd, "per_dp_rank",
                                "a list of batches, one per DP rank, e.g. [{decode: [633]}, "
                                "{decode: [1024, 1024]}]"))
            return false;
        if (pd->items->len == 0)
            return yamldoc_fail(&ld->doc, pd, "per_dp_rank",
                                "empty list; give one batch per DP rank (at most %u)", dp);
        if (pd->items->len > dp)
            return yamldoc_fail(&ld->doc, pd, "per_dp_rank",
                                "%u batches for %u DP rank%s (data_parallel_size=%u); valid: at "
                                "most %u (DP ranks beyond the list run an empty batch)",
                                pd->items->len, dp, dp == 1 ? "" : "s", dp, dp);
        for (guint i = 0; i < pd->items->len; i++) {
            const YamlDocNode *bm = g_ptr_array_index(pd->items, i);
            if (!yamldoc_expect_map(&ld->doc, bm, "per_dp_rank",
                                    "a batch such as {prefill: [633], decode: [633, 633]} or {} "
                                    "for an idle DP rank") ||
                !yamldoc_check_keys(&ld->doc, bm, batch_keys, nested, "a per_dp_rank batch"))
                return false;
            ModelBatch *b = model_batch_new();
            g_ptr_array_add(per_dp, b);
            if (!load_batch(ld, bm, e, b))
                return false;
            g_autofree char *why = batch_problem(b, e);
            if (why)
                return yamldoc_fail(&ld->doc, bm, "per_dp_rank", "step %u, DP rank %u: %s", idx, i,
                                    why);
        }
        /* Exactly DP batches: one entry would otherwise mean "the same on every rank". */
        while (per_dp->len < dp)
            g_ptr_array_add(per_dp, model_batch_new());
    } else {
        ModelBatch *b = model_batch_new();
        g_ptr_array_add(per_dp, b);
        if (!load_batch(ld, m, e, b))
            return false;
        g_autofree char *why = batch_problem(b, e);
        if (why)
            return yamldoc_fail(&ld->doc, m, "steps", "step %u: %s", idx, why);
    }
    bool empty = true;
    for (guint i = 0; i < per_dp->len && empty; i++)
        empty = batch_empty(g_ptr_array_index(per_dp, i));
    if (empty)
        return yamldoc_fail(&ld->doc, m, "steps", "step %u is empty; valid: %s", idx, step_forms);
    model_workload_add_step(s->workload, g_steal_pointer(&per_dp));
    return true;
}

/* Requests are served before the program is lowered (runner_prepare), and serving costs time
 * per step: refuse before serving a request workload whose steps certainly make more rank-ops
 * than the work limit. Each step samples at most one token per running sequence, at most
 * max_num_seqs of them per DP rank, and a request's tokens come one step after another, so
 * the steps are at least max(the longest output, the outputs summed / (DP x max_num_seqs));
 * each lowers to at least 4 ops per layer on every rank (finish_program's bound). */
static bool served_bound_fits(Loader *ld, const Scenario *s, double n_requests, double outputs,
                              double longest)
{
    uint64_t max_ops = ld->extras ? ld->extras->max_rank_ops : 0;
    if (!max_ops)
        return true;
    double per_step = (double)MAX(1u, s->plan->par.data_parallel_size) *
                      (double)MAX(1u, s->engine.max_num_seqs);
    double steps = MAX(longest, ceil(outputs / per_step));
    double lower = (double)s->plan->world * steps * ((double)s->arch->num_layers + 2) * 4.0;
    if (lower <= (double)max_ops)
        return true;
    return scenario_extras_fail(
        ld, SCENARIO_ERROR_INVALID, "--max-rank-ops",
        "%.0f requests (%.0f output tokens) need at least %.0f steps (at most %u sequences per "
        "step on each of %u DP ranks): %u ranks x %.0f steps x %u layers is at least %.3g "
        "rank-ops, more than the limit of %" G_GUINT64_FORMAT "; nothing was served (serve "
        "fewer requests, or raise --max-rank-ops N, 0: no limit)",
        n_requests, outputs, steps, s->engine.max_num_seqs,
        MAX(1u, s->plan->par.data_parallel_size), s->plan->world, steps, s->arch->num_layers,
        lower, max_ops);
}

static bool served_work_fits(Loader *ld, const Scenario *s)
{
    double outputs = 0, longest = 0;
    for (guint i = 0; i < s->requests->len; i++) {
        const ModelRequest *r = &g_array_index(s->requests, ModelRequest, i);
        outputs += r->output;
        longest = MAX(longest, (double)r->output);
    }
    return served_bound_fits(ld, s, s->requests->len, outputs, longest);
}

/* The same bound from workload.poisson's count and output, before its arrivals are drawn (10^7
 * of them take seconds and 240 MB): values that do not read as numbers are left to its loader,
 * which says what is wrong with them. */
static bool poisson_work_fits(Loader *ld, const YamlDocNode *w, const Scenario *s)
{
    const YamlDocNode *p = yamldoc_map_get(w, "poisson");
    const YamlDocNode *c = p ? yamldoc_map_get(p, "count") : NULL;
    const YamlDocNode *o = p ? yamldoc_map_get(p, "output") : NULL;
    if (!c || !o || c->type != YAMLDOC_SCALAR || o->type != YAMLDOC_SCALAR)
        return true;
    char *ce = NULL, *oe = NULL;
    gint64 count = g_ascii_strtoll(c->text, &ce, 10), output = g_ascii_strtoll(o->text, &oe, 10);
    if (!ce || *ce || !oe || *oe || count < 1 || output < 1)
        return true;
    return served_bound_fits(ld, s, (double)count, (double)count * (double)output,
                             (double)output);
}

/* `workload: {steps: [...]}`. */
static bool load_workload_node(Loader *ld, const YamlDocNode *root, const YamlDocNode *w,
                               Scenario *s)
{
    static const char *const keys[] = {"steps",   "requests",        "trace",
                                       "poisson", "max_concurrency", NULL};
    if (!yamldoc_expect_map(&ld->doc, w, "workload",
                            "a mapping {steps: [STEPS]} or {requests: [...]}, e.g. {steps: "
                            "[{prefill: [633]}, {decode: [633, 633]}]}") ||
        !yamldoc_check_keys(&ld->doc, w, keys, NULL, "workload"))
        return false;
    const YamlDocNode *steps = yamldoc_map_get(w, "steps");
    if (!scenario_workload_has_requests(w) &&
        !scenario_load_max_concurrency(ld, w, &s->max_concurrency))
        return false;
    if (scenario_workload_has_requests(w)) {
        if (steps)
            return yamldoc_fail(&ld->doc, yamldoc_map_get_key(w, "steps"), "steps",
                                "a workload gives either steps (batches made by hand) or "
                                "requests (trace, poisson) for vLLM's scheduler, not both");
        g_autoptr(GArray) reqs = g_array_new(FALSE, FALSE, sizeof(ModelRequest));
        if (!poisson_work_fits(ld, w, s) || !scenario_load_requests(ld, w, reqs) ||
            !scenario_load_max_concurrency(ld, w, &s->max_concurrency))
            return false;
        return scenario_keep_requests(ld, root, yamldoc_map_get_key(root, "workload"), "workload",
                                      s, reqs);
    }
    if (!steps)
        return yamldoc_fail(&ld->doc, w, "steps",
                            "missing; a workload needs steps: [STEP, ...], each %s, or "
                            "requests: [{prompt: N, output: M, arrival_s: T}, ...]",
                            step_forms);
    if (!yamldoc_expect_seq(&ld->doc, steps, "steps",
                            "a list of steps, e.g. [{prefill: [633]}, {decode: [633, 633]}]"))
        return false;
    if (steps->items->len == 0)
        return yamldoc_fail(&ld->doc, steps, "steps",
                            "empty list; give at least one step, e.g. {prefill: [633]}");
    if (steps->items->len > MAX_STEPS)
        return yamldoc_fail(&ld->doc, steps, "steps", "%u steps; valid: at most %d",
                            steps->items->len, MAX_STEPS);
    for (guint i = 0; i < steps->items->len; i++)
        if (!load_step(ld, g_ptr_array_index(steps->items, i), i + 1, s))
            return false;
    return true;
}

/* The batch of --prefill N[@C] ... (`prefill`) and --decode B:CTX ... (`decode`), each length
 * checked, into `b`. */
static bool batch_from_extras(Loader *ld, Scenario *s, bool prefill, bool decode, ModelBatch *b)
{
    const ScenarioExtras *x = ld->extras;
    const ModelEngine *e = &s->engine;
    for (guint i = 0; prefill && x->prefill && i < x->prefill->len; i++) {
        uint32_t len = g_array_index(x->prefill, uint32_t, i);
        uint32_t ctx = x->prefill_ctx && i < x->prefill_ctx->len
                           ? g_array_index(x->prefill_ctx, uint32_t, i)
                           : 0;
        g_autofree char *what = ctx ? g_strdup_printf("--prefill %u@%u", len, ctx)
                                    : g_strdup_printf("--prefill %u", len);
        if (len < 1 || len > MAX_SEQ_LEN)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                                        "prompt length out of range; valid: 1..%d", MAX_SEQ_LEN);
        if (ctx > MAX_SEQ_LEN)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                                        "cached context out of range; valid: 0..%d", MAX_SEQ_LEN);
        g_autofree char *why = prefill_problem(len, ctx, e);
        if (why)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, what, "%s", why);
        model_batch_add_prefill(b, len, ctx);
    }
    for (guint i = 0; decode && x->decode && i < x->decode->len; i++) {
        uint32_t ctx = g_array_index(x->decode, uint32_t, i);
        g_autofree char *what = g_strdup_printf("--decode (context %u)", ctx);
        if (ctx < 1 || ctx > MAX_SEQ_LEN)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                                        "context length out of range; valid: 1..%d", MAX_SEQ_LEN);
        g_autofree char *why = length_problem(ctx, true, e);
        if (why)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, what, "%s", why);
        if (b->decode->len >= MAX_BATCH_SEQS)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, "--decode",
                                        "more than %d decoding sequences in all", MAX_BATCH_SEQS);
        g_array_append_val(b->decode, ctx);
    }
    g_autofree char *why = batch_problem(b, e);
    if (why)
        return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, "--prefill/--decode", "%s", why);
    return true;
}

/* Appends a step running batch `b` (taken over) on every DP rank. */
static void add_step(Scenario *s, ModelBatch *b)
{
    GPtrArray *per_dp = g_ptr_array_new_with_free_func((GDestroyNotify)model_batch_free);
    g_ptr_array_add(per_dp, b);
    model_workload_add_step(s->workload, per_dp);
}

/* --prefill N ... and --decode B:CTX ...: one step, the same batch on every DP rank. */
static bool workload_from_extras(Loader *ld, Scenario *s)
{
    ModelBatch *b = model_batch_new();
    if (!batch_from_extras(ld, s, true, true, b)) {
        model_batch_free(b);
        return false;
    }
    add_step(s, b);
    return true;
}

static void replace_lengths(GArray *dst, const GArray *src)
{
    g_array_set_size(dst, 0);
    g_array_append_vals(dst, src->data, src->len);
}

/* The file's steps with the varied half put in (ScenarioExtras.merge_workload). */
static bool workload_merge_extras(Loader *ld, const YamlDocNode *w, Scenario *s)
{
    if (s->requests) { /* refused once they are served, where serving failed first */
        ld->merge_refused = true;
        return true;
    }
    ModelBatch *made = model_batch_new();
    bool ok = batch_from_extras(ld, s, true, true, made);
    bool want_p = made->prefill->len > 0, want_d = made->decode->len > 0;
    bool has_p = false, has_d = false;
    GPtrArray *steps = s->workload->steps;
    for (guint i = 0; ok && i < steps->len; i++) {
        const ModelStep *st = g_ptr_array_index(steps, i);
        for (guint k = 0; ok && k < st->per_dp->len; k++) {
            ModelBatch *b = g_ptr_array_index(st->per_dp, k);
            if (!b)
                continue;
            if (want_p && b->prefill->len) {
                has_p = true;
                replace_lengths(b->prefill, made->prefill);
                replace_lengths(b->prefill_ctx, made->prefill_ctx);
            }
            if (want_d && b->decode->len) {
                has_d = true;
                replace_lengths(b->decode, made->decode);
            }
            g_autofree char *why = batch_problem(b, &s->engine);
            if (why)
                ok = yamldoc_fail(&ld->doc, w, "workload", "step %u with the varied batch: %s",
                                  i + 1, why);
        }
    }
    if (ok && want_p && !has_p) { /* a prefill step of its own before the file's steps */
        ModelBatch *b = model_batch_new();
        replace_lengths(b->prefill, made->prefill);
        replace_lengths(b->prefill_ctx, made->prefill_ctx);
        add_step(s, b);
        g_ptr_array_insert(steps, 0, g_ptr_array_steal_index(steps, steps->len - 1));
    }
    if (ok && want_d && !has_d) { /* and a decode step of its own after them */
        ModelBatch *b = model_batch_new();
        replace_lengths(b->decode, made->decode);
        add_step(s, b);
    }
    for (guint i = 0; ok && i < steps->len; i++) /* each step after the one before it */
        ((ModelStep *)g_ptr_array_index(steps, i))->sched_after = (int32_t)i - 1;
    model_batch_free(made);
    return ok;
}

static bool load_workload_sources(Loader *ld, const YamlDocNode *root, Scenario *s);

/* The workload (load_workload_sources), then --max-concurrency over the file's
 * workload.max_concurrency: a workload of requests only. */
static bool load_workload(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!load_workload_sources(ld, root, s))
        return false;
    uint32_t flag = ld->extras->max_concurrency;
    if (flag && !s->requests) {
        g_set_error(ld->doc.error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "%s: --max-concurrency %u: limits the requests in flight of a workload of "
                    "requests (workload.requests, .trace, .poisson or --requests FILE), as vllm "
                    "bench serve --max-concurrency does; this workload is steps",
                    ld->doc.file, flag);
        return false;
    }
    if (flag)
        s->max_concurrency = flag;
    return true;
}

/* The workload: the command line's (--prefill / --decode override the file's, with a note),
 * else the file's, else an error. */
static bool load_workload_sources(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    s->workload = model_workload_new();
    const YamlDocNode *w = yamldoc_map_get(root, "workload");
    if (ld->extras->requests) {
        if (w)
            scenario_note_override(s, "--requests replaces the scenario's workload (line %u)",
                                   w->line);
        g_autoptr(GArray) reqs = g_array_new(FALSE, FALSE, sizeof(ModelRequest));
        g_autofree char *flag = g_strdup_printf("--requests %s", ld->extras->requests);
        ScenarioTraceOptions o = {.rate_per_s = ld->extras->requests_rate,
                                  .limit = ld->extras->requests_limit};
        if (ld->extras->requests_format &&
            !request_format_parse(ld->extras->requests_format, &o.format))
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, "--requests-format",
                                        "'%s' is not a trace format; valid: %s",
                                        ld->extras->requests_format, REQUEST_FORMAT_NAMES);
        return scenario_load_requests_file(ld, ld->extras->requests, &o, reqs) &&
               scenario_keep_requests(ld, root, NULL, flag, s, reqs);
    }
    if (scenario_extras_have_workload(ld->extras)) {
        if (w && ld->extras->merge_workload)
            return load_workload_node(ld, root, w, s) && workload_merge_extras(ld, w, s);
        if (w)
            scenario_note_override(s, "--prefill/--decode replace the scenario's workload (line %u)",
                                   w->line);
        return workload_from_extras(ld, s);
    }
    if (w)
        return load_workload_node(ld, root, w, s);
    /* No workload: the question is "will it start, and how many KV tokens do I get?" — the
     * memory plan and vLLM's start-up lines, no step (doc/decisions.md). */
    scenario_note_ignored(s, "no workload: start-up only (memory plan and vLLM's start-up "
                             "lines); --prefill N, --decode B:CTX or --requests FILE time steps");
    return true;
}

/* ---- kind: model: from the plan to the program ---- */

/* From the workload's steps to the program: the work limit, lowering, the run settings and
 * the runtime faults. */
static bool finish_program(Loader *ld, const YamlDocNode *root, Scenario *s, Spot engine_spot)
{
    const YamlDocNode *en = yamldoc_map_get(root, "engine");
    g_autoptr(GError) err = NULL;
    if (ld->merge_refused)
        return yamldoc_fail(&ld->doc, yamldoc_map_get(root, "workload"), "workload",
                            "requests are served by vLLM's scheduler, which makes the steps: "
                            "--vary workload.prefill / workload.decode applies to "
                            "workload.steps");
    /* Lowering costs time per rank and layer: refuse a run that certainly exceeds the work
     * limit before building it (every layer of every step has at least 4 ops on every rank:
     * two norms, attention and the MLP or MoE; runner_check_work checks the exact count). */
    uint64_t max_ops = ld->extras ? ld->extras->max_rank_ops : 0;
    if (max_ops) {
        double lower = (double)s->plan->world * (double)s->workload->steps->len *
                       ((double)s->arch->num_layers + 2) * 4.0;
        if (lower > (double)max_ops)
            return scenario_extras_fail(
                ld, SCENARIO_ERROR_INVALID, "--max-rank-ops",
                "%u ranks x %u steps x %u layers is at least %.3g rank-ops, more than the "
                "limit of %" G_GUINT64_FORMAT "; raise --max-rank-ops N (0: no limit) or "
                "simulate fewer ranks",
                s->plan->world, s->workload->steps->len, s->arch->num_layers, lower, max_ops);
    }
    ModelBackend used = model_engine_backend(s->arch, &s->engine, &s->plan->par, &s->hardware);
    if (s->engine.attention_backend != MODEL_BACKEND_AUTO && used != s->engine.attention_backend)
        scenario_note_ignored(s,
                              "attention backend %s on an MLA model: simulated as %s, its MLA "
                              "kernel on %s",
                              model_backend_name(s->engine.attention_backend),
                              model_backend_name(used), s->hardware.name);
    ModelLowerInput in = {.arch = s->arch,
                          .plan = s->plan,
                          .engine = &s->engine,
                          .workload = s->workload,
                          .cost = s->cost,
                          .hw = &s->hardware,
                          .broken = MODEL_BREAK_NONE};
    s->program = model_deployment_lower(&in, &s->findings, &err);
    if (!s->program) {
        /* Backend / architecture mismatches belong to the engine, the rest to the workload
         * (whose lengths and batch counts were checked above with their own lines). */
        if (err->domain == MODEL_LOWER_ERROR && err->code == MODEL_LOWER_ERROR_BACKEND) {
            Spot es = en ? (Spot){yamldoc_map_get_key(root, "engine"), "engine"} : engine_spot;
            return yamldoc_fail(&ld->doc, es.at, es.key, "%s", err->message);
        }
        const YamlDocNode *wn = yamldoc_map_get_key(root, "workload");
        if (!wn)
            return scenario_extras_fail(ld, SCENARIO_ERROR_INVALID, "--prefill/--decode", "%s",
                                        err->message);
        return yamldoc_fail(&ld->doc, wn, "workload", "%s", err->message);
    }
    ld->prog = s->program;
    if (!scenario_load_run_settings(ld, root, s, "the lowered program (a bug in model/lower.c)"))
        return false;
    /* What this vLLM would fail at while running (model/runtime.h): crash faults after the
     * scenario's own, and their cause among the findings. */
    model_deployment_derive_faults(s->program, &in, s->faults, s->findings);
    return true;
}


bool scenario_finish_model(Loader *ld, const YamlDocNode *root, Scenario *s, ModelSetup *ms)
{
    const YamlDocNode *pn = yamldoc_map_get(root, "parallel");
    const YamlDocNode *en = yamldoc_map_get(root, "engine");
    if (pn && !load_parallel(ld, pn, &ms->par))
        return false;
    /* Errors about a whole mapping point at its key: a block mapping starts a line later. */
    Spot ps = pn ? (Spot){yamldoc_map_get_key(root, "parallel"), "parallel"} : ms->par_spot;
    const ModelParallel *par = &ms->par;
    uint32_t pp = MAX(1u, par->pipeline_parallel_size);
    uint64_t world = (uint64_t)par->data_parallel_size * pp * par->prefill_context_parallel_size *
                     par->tensor_parallel_size;
    if (world > MAX_RANKS)
        return yamldoc_fail(&ld->doc, ps.at, ps.key,
                            "DP %u x PP %u x PCP %u x TP %u = %" G_GUINT64_FORMAT " ranks; "
                            "valid: at most %u",
                            par->data_parallel_size, pp, par->prefill_context_parallel_size,
                            par->tensor_parallel_size, world, MAX_RANKS);
    g_autoptr(GError) err = NULL;
    s->plan = model_plan_new(par, s->arch, &err);
    if (!s->plan)
        return yamldoc_fail(&ld->doc, ps.at, ps.key, "%s", err->message);
    ld->n_ranks = s->plan->world;

    if (ms->eval && !yamldoc_map_get(root, "hardware") && !ld->extras->hardware) {
        g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
        return yamldoc_fail(&ld->doc, root, NULL,
                            "an eval config names no hardware; pass --hardware NAME (%s) or a "
                            "hardware file's path",
                            presets);
    }
    if (!scenario_load_placement(ld, root, s))
        return false;

    const YamlDocNode *profile_at = NULL;
    g_autoptr(GPtrArray) vnotes = g_ptr_array_new_with_free_func(g_free);
    if (en && !load_engine(ld, en, &ms->engine, &ms->cost, &profile_at, vnotes))
        return false;
    for (guint i = 0; i < vnotes->len; i++)
        scenario_note_ignored(s, "%s", (const char *)g_ptr_array_index(vnotes, i));
    model_engine_apply_vllm_defaults(&ms->engine, s->arch, &s->hardware);
    if (!ms->eval && ms->engine.quantization_override && s->arch->quant.method[0])
        /* engine.quantization wins, but says so: the checkpoint stores its weights otherwise */
        scenario_note_ignored(s,
                              "engine.quantization %s overrides the checkpoint's "
                              "quantization_config (%s): weights laid out as ranksim's '%s' "
                              "scheme instead of the checkpoint's formats",
                              model_engine_quant_name(ms->engine.quantization),
                              s->arch->quant.method,
                              model_engine_quant_name(ms->engine.quantization));
    s->engine = ms->engine;
    s->cost = model_cost_new(&s->hardware, &ms->cost);
    if (profile_at && !load_profile(ld, profile_at, s))
        return false;
    if (!load_tables(ld, s))
        return false;

    if (!load_workload(ld, root, s))
        return false;
    if (s->requests && !served_work_fits(ld, s))
        return false;
    if (s->requests) { /* served after loading (runner_prepare), then finished */
        ScenarioPending *p = s->pending = scenario_pending_new();
        p->doc = ld->doc;
        p->doc.error = NULL;
        p->engine_at = ms->engine_spot.at;
        p->engine_key = ms->engine_spot.key;
        p->max_rank_ops = ld->extras->max_rank_ops;
        p->merge_refused = ld->merge_refused;
        return true; /* the tree is kept by the entry point (scenario.c) */
    }
    return finish_program(ld, root, s, ms->engine_spot);
}

bool scenario_finish_served(Scenario *s, GError **error)
{
    g_return_val_if_fail(s && s->pending && s->pending->root && s->serve, false);
    ScenarioPending *p = s->pending;
    ScenarioExtras x = {.max_rank_ops = p->max_rank_ops};
    Loader ld = {
        .doc = p->doc,
        .path = s->path,
        .extras = &x,
        .n_ranks = s->plan->world,
        .merge_refused = p->merge_refused,
    };
    ld.doc.file = s->path;
    ld.doc.error = error;
    bool ok = finish_program(&ld, p->root, s, (Spot){p->engine_at, p->engine_key});
    g_free(ld.stamp);
    if (ld.notes)
        g_ptr_array_unref(ld.notes);
    if (ok)
        g_clear_pointer(&s->pending, scenario_pending_free);
    return ok;
}

bool scenario_interpret_model(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!scenario_reject_other_kind_keys(ld, root, true) ||
        !yamldoc_check_keys(&ld->doc, root, scenario_model_keys, NULL, "the scenario") ||
        !scenario_load_identity(ld, root, s))
        return false;
    const YamlDocNode *mn = yamldoc_map_get(root, "model");
    if (!mn) {
        g_auto(GStrv) presets = scenario_model_presets();
        g_autofree char *list = g_strjoinv(", ", presets);
        return yamldoc_fail(&ld->doc, root, "model",
                            "missing; a model scenario (kind: model, the default) needs model: "
                            "a preset (%s) or the path of a Hugging Face config.json; write "
                            "kind: program for hand-written programs",
                            list);
    }
    s->arch = g_new0(ModelArch, 1);
    if (!scenario_load_arch(ld, mn, s))
        return false;
    ModelSetup ms = {.par_spot = {root, "parallel"}, .engine_spot = {root, "engine"}};
    model_parallel_defaults(&ms.par);
    model_engine_defaults(&ms.engine);
    model_cost_params_defaults(&ms.cost);
    return scenario_finish_model(ld, root, s, &ms);
}
