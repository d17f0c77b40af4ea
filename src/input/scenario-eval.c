/* src/input/scenario-eval.c — vLLM eval configs as model scenarios (src/input/scenario-eval.h):
 * model_name -> an architecture (a local folder, the model catalog, or a `model:` key),
 * server_args -> parallel and engine settings through the `vllm serve` parser
 * (src/input/vllm-args.h), env -> the variables ranksim simulates (the rest are noted), then the
 * rest as kind: model (scenario_finish_model).
 *
 * Costs: one parse of server_args; the rest is kind: model's.
 */
#include "scenario-eval.h"

#include <string.h>

#include "scenario-model.h"
#include "vllm-args.h"
#include "../../model/catalog.h"

/* ---- vLLM eval configs (vllm-project/vllm tests/evals/gsm8k/configs/NAME.yaml) ---- */

/* The eval config's own keys. */
static const char *const eval_keys[] = {"model_name", "server_args", "env", NULL};
/* Keys of the eval harness that say nothing about the engine: accepted, not simulated
 * (max_model_len, used by lm-eval configs, is the default for --max-model-len). */
static const char *const eval_harness_keys[] = {
    "accuracy_threshold",
    "num_questions",
    "num_fewshot",
    "max_concurrency",
    "startup_max_wait_seconds",
    "tolerance",
    "trust_remote_code",
    "rocm_request_timeout_seconds",
    "max_model_len",
    NULL,
};
/* Every top-level key: ours and the scenario's are read; the harness's are accepted; ranks,
 * groups, programs are errors; a near miss of a key we read is an error with a suggestion;
 * anything else is another harness key, accepted and noted in ignored_flags. */
static bool check_eval_keys(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    /* Read: ours, then the scenario keys (of kind: model) an eval config or --set may add. */
    g_autoptr(GPtrArray) keys = g_ptr_array_new();
    for (size_t i = 0; eval_keys[i]; i++)
        g_ptr_array_add(keys, (gpointer)eval_keys[i]);
    for (size_t i = 0; scenario_model_keys[i]; i++)
        g_ptr_array_add(keys, (gpointer)scenario_model_keys[i]);
    g_ptr_array_add(keys, NULL);
    const char *const *read = (const char *const *)keys->pdata;
    for (uint32_t i = 0; i < yamldoc_map_len(root); i++) {
        const YamlDocNode *k = yamldoc_map_key(root, i);
        if (scenario_in_list(read, k->text) || scenario_in_list(eval_harness_keys, k->text))
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)read);
        if (scenario_in_list(scenario_program_only_keys, k->text))
            return yamldoc_fail(&ld->doc, k, k->text,
                                "not valid in a vLLM eval config, which is a model scenario "
                                "(its ranks, groups and programs come from lowering the model); "
                                "valid: %s",
                                list);
        const char *best = yamldoc_closest(k->text, read);
        if (best) {
            yamldoc_fail(&ld->doc, k, k->text,
                         "unknown key in a vLLM eval config; did you mean '%s'? (read: "
                         "%s; other keys are eval-harness settings and ignored)",
                         best, list);
            if (ld->doc.error)
                scenario_error_mark_unknown_key(*ld->doc.error);
            return false;
        }
        scenario_note_ignored(s, "eval config key '%s'", k->text);
    }
    return true;
}

/* server_args: vLLM serve flags in one string, split like a shell, on top of ms's settings.
 * Returns NULL after setting the load's error (at the server_args key). */
static VllmArgs *eval_server_args(Loader *ld, const YamlDocNode *at, const YamlDocNode *value,
                                  const ModelSetup *ms)
{
    const char *text = NULL;
    if (!yamldoc_get_string(&ld->doc, value, "server_args",
                            "vLLM serve flags in one string, e.g. \"--tensor-parallel-size 4 "
                            "--enable-expert-parallel\"",
                            &text))
        return NULL;
    g_autoptr(GError) err = NULL;
    VllmArgs *a = vllm_args_parse_line(text, &ms->par, &ms->engine, &err);
    if (!a)
        yamldoc_fail(&ld->doc, at, "server_args", "%s", err->message);
    return a;
}

/* A local model folder named by model_name ("/models/GLM-5.2" or "./ckpt"): its config.json,
 * relative to the scenario's folder, or NULL. Caller frees. */
static char *eval_local_config(const Loader *ld, const char *model_name)
{
    if (!(model_name[0] == '/' || g_str_has_prefix(model_name, "./") ||
          g_str_has_prefix(model_name, "../")))
        return NULL;
    g_autofree char *dir = scenario_resolve_path(ld, model_name);
    char *cfg = g_build_filename(dir, "config.json", NULL);
    if (g_file_test(cfg, G_FILE_TEST_IS_REGULAR))
        return cfg;
    g_free(cfg);
    return NULL;
}

/* A model_name written as a local path (vLLM would load the folder) that holds no config.json
 * here: read by its name, and said so with what to pass to read the checkpoint itself. */
static void eval_note_missing_folder(const Loader *ld, const char *model_name, Scenario *s)
{
    if (!(model_name[0] == '/' || g_str_has_prefix(model_name, "./") ||
          g_str_has_prefix(model_name, "../")))
        return;
    g_autofree char *dir = scenario_resolve_path(ld, model_name);
    g_autofree char *cfg = g_build_filename(dir, "config.json", NULL);
    scenario_note_ignored(s,
                          "model '%s': %s here, so the checkpoint was read by its name (%s); to "
                          "read it as vLLM does, give the folder holding its config.json (and "
                          "hf_quant_config.json or quant_model_description.json)",
                          model_name,
                          g_file_test(dir, G_FILE_TEST_IS_DIR) ? "a folder without config.json"
                                                               : "no such folder",
                          s->model_source ? s->model_source : "the catalog");
}

/* Environment variables of an eval config: the ones that change what ranksim simulates are
 * applied; every other one is noted with the reason it changes nothing here. */
static const struct {
    const char *name;
    const char *reason; /* NULL: simulated */
} eval_env_vars[] = {
    {"VLLM_ATTENTION_BACKEND", NULL},
    {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", NULL},
    {"VLLM_ROCM_USE_AITER", NULL},
    {"VLLM_GPU_SYNC_CHECK", NULL},
    {"VLLM_USE_V2_MODEL_RUNNER", NULL},
    {"VLLM_USE_FLASHINFER_MOE_FP4", "the MoE kernel choice: say it with --moe-backend "
                                    "(engine.moe_backend)"},
    {"VLLM_USE_FLASHINFER_MOE_FP8", "the MoE kernel choice: say it with --moe-backend "
                                    "(engine.moe_backend)"},
    {"VLLM_FLASHINFER_MOE_BACKEND", "the MoE kernel choice: say it with --moe-backend "
                                    "(engine.moe_backend)"},
    {"VLLM_USE_DEEP_GEMM", "the GEMM kernel: op costs come from the roofline or engine.op_profile"},
    {"PYTORCH_CUDA_ALLOC_CONF", "the allocator's settings: fragmentation is not modelled"},
    {"VLLM_LOGGING_LEVEL", "logging only"},
    {"VLLM_ALL2ALL_BACKEND", NULL},
    {"VLLM_PP_LAYER_PARTITION", NULL},
    {"CUDA_VISIBLE_DEVICES", "device selection: the devices are --hardware's"},
    {"ASCEND_RT_VISIBLE_DEVICES", "device selection: the devices are --hardware's"},
    {"VLLM_MLA_DISABLE", "MLA would run as plain multi-head attention (a full-head KV cache): "
                         "not modelled, MLA is simulated"},
    {"VLLM_USE_FLASHINFER_SAMPLER", "the sampler's kernel: its time is the host model's"},
    {"VLLM_ENABLE_V1_MULTIPROCESSING", "how the engine core is launched: no bearing on the ops"},
    {"VLLM_WORKER_MULTIPROC_METHOD", "how workers are launched: no bearing on the ops"},
    {"VLLM_HOST_IP", "networking of the launch: no bearing on the ops"},
    {"VLLM_PORT", "networking of the launch: no bearing on the ops"},
    {"HF_TOKEN", "download credentials: no bearing"},
    {"HF_HOME", "download cache: no bearing"},
    {"VLLM_USE_MODELSCOPE", "where weights are downloaded from: no bearing"},
    {"OMP_NUM_THREADS", "host threads: no bearing on the simulated ops"},
    {"NCCL_DEBUG", "logging only"},
    {"VLLM_DEEP_GEMM_WARMUP", "DeepGEMM's JIT warm-up at start-up: not timed"},
    {"VLLM_MOE_DP_CHUNK_SIZE", "the MoE chunking of DP all-to-all batches: not modelled"},
    {"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "a check of max_model_len against the model, not modelled"},
    {NULL, NULL},
};

static bool env_truthy(const char *v)
{
    return v && (strcmp(v, "1") == 0 || g_ascii_strcasecmp(v, "true") == 0);
}

/* VLLM_ALL2ALL_BACKEND (vllm/envs.py; --all2all-backend, when given, wins over it). */
static bool eval_env_all2all(Loader *ld, const YamlDocNode *v, const char *val, bool flag_given,
                             ModelSetup *ms)
{
    if (flag_given)
        return true;
    for (int k = 0; k < MODEL_A2A_COUNT; k++)
        if (strcmp(val, model_all2all_backend_names[k]) == 0) {
            ms->par.all2all_backend = (ModelAll2AllBackend)k;
            return true;
        }
    g_autofree char *hint = yamldoc_suggestion(val, model_all2all_backend_names);
    return yamldoc_fail(&ld->doc, v, "VLLM_ALL2ALL_BACKEND", "unknown all2all backend '%s'; %s",
                        val, hint);
}

/* VLLM_PP_LAYER_PARTITION: layers per pipeline stage, comma-separated (get_pp_indices,
 * vllm/distributed/utils.py, in its words). The sum is checked with the plan. */
static bool eval_env_pp_partition(Loader *ld, const YamlDocNode *v, const char *val,
                                  ModelSetup *ms)
{
    g_auto(GStrv) parts = g_strsplit(val, ",", -1);
    guint np = g_strv_length(parts);
    uint32_t pp = ms->par.pipeline_parallel_size;
    for (guint i = 0; i < np; i++) {
        guint64 x = 0;
        if (i >= MODEL_PLAN_MAX_PP ||
            !g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 0, MAX_LAYER, &x, NULL))
            return yamldoc_fail(&ld->doc, v, "VLLM_PP_LAYER_PARTITION",
                                "Invalid partition string: %s (valid: one layer count per "
                                "pipeline stage, comma-separated, e.g. \"31,30\")",
                                val);
        ms->par.pp_partition[i] = (uint32_t)x;
    }
    if (np != pp)
        return yamldoc_fail(&ld->doc, v, "VLLM_PP_LAYER_PARTITION",
                            "len(partitions)=%u does not match pp_size=%u.", np, pp);
    ms->par.pp_partition_given = true;
    return true;
}

static bool eval_env(Loader *ld, const YamlDocNode *env, const VllmArgs *args, ModelSetup *ms,
                     Scenario *s)
{
    for (uint32_t i = 0; i < yamldoc_map_len(env); i++) {
        const YamlDocNode *k = yamldoc_map_key(env, i);
        const YamlDocNode *v = yamldoc_map_get(env, k->text);
        const char *val = v && v->text ? v->text : "";
        if (strcmp(k->text, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS") == 0) {
            ms->engine.cudagraph_memory_profiling = env_truthy(val);
            ms->engine.given |= MODEL_ENGINE_GIVEN_CUDAGRAPH_MEMORY_PROFILING;
            continue;
        }
        if (strcmp(k->text, "VLLM_ROCM_USE_AITER") == 0) {
            ms->engine.rocm_aiter = env_truthy(val);
            continue;
        }
        if (strcmp(k->text, "VLLM_USE_V2_MODEL_RUNNER") == 0) {
            ms->engine.v2_model_runner = env_truthy(val);
            ms->engine.given |= MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER;
            continue;
        }
        if (strcmp(k->text, "VLLM_ALL2ALL_BACKEND") == 0) {
            if (!eval_env_all2all(ld, v, val, args->all2all_set, ms))
                return false;
            continue;
        }
        if (strcmp(k->text, "VLLM_PP_LAYER_PARTITION") == 0) {
            if (!eval_env_pp_partition(ld, v, val, ms))
                return false;
            continue;
        }
        if (g_str_has_prefix(k->text, "NCCL_") && strcmp(k->text, "NCCL_DEBUG") != 0) {
            scenario_note_ignored(s, "env %s=%s (NCCL's tuning: the collective algorithms are "
                                     "ranksim's, --algorithms)", k->text, val);
            continue;
        }
        if (strcmp(k->text, "VLLM_GPU_SYNC_CHECK") == 0) {
            /* vllm/utils/gpu_sync_debug.py: "error" raises; "warn" only logs */
            ms->engine.gpu_sync_check = g_ascii_strcasecmp(val, "error") == 0;
            continue;
        }
        const char *reason = "not read by ranksim";
        bool simulated = false;
        for (size_t j = 0; eval_env_vars[j].name; j++)
            if (strcmp(eval_env_vars[j].name, k->text) == 0) {
                simulated = eval_env_vars[j].reason == NULL;
                reason = eval_env_vars[j].reason;
            }
        if (!simulated)
            scenario_note_ignored(s, "env %s=%s (%s)", k->text, val, reason);
    }
    (void)ld;
    return true;
}

/* model_name (a Hub id) -> the catalog's preset and the checkpoint's quantization
 * (model/catalog.h). A format the name implies without a catalog quantization_config (e.g.
 * "-NVFP4" of an unlisted publisher) becomes ranksim's scheme of that name, marked as read from
 * the name; it replaces the quantization a preset carries (gpt-oss-120b's mxfp4,
 * deepseek-v4-flash's fp8) unless it names the same method, and "-BF16" resets it to the native
 * dtype. */
static bool eval_arch_from_catalog(Loader *ld, const YamlDocNode *mn, const char *model_name,
                                   Scenario *s)
{
    ModelCatalogMatch m;
    g_autoptr(GError) err = NULL;
    if (!model_catalog_resolve(model_name, &m, &err))
        return yamldoc_fail(&ld->doc, mn, "model_name",
                            "%s; for another model write a model scenario with model: "
                            "path/to/config.json, or add --set model=path/to/config.json",
                            err->message);
    bool ok = scenario_arch_from_preset(ld, mn, "model_name", m.preset, s);
    if (ok && m.quantization_config) {
        g_autofree char *display = g_strdup_printf("model/presets/catalog.json (%s)",
                                                   m.catalog_id[0] ? m.catalog_id : model_name);
        ok = model_arch_apply_quant_json(s->arch, m.quantization_config, display, &err);
        if (!ok)
            ok = yamldoc_fail(&ld->doc, mn, "model_name", "%s", err->message);
        else
            g_strlcpy(s->arch->quant.source, m.inferred ? "catalog, inferred" : "checkpoint",
                      sizeof s->arch->quant.source);
    } else if (ok && strcmp(m.format, "bf16") == 0 && s->arch->quant.method[0]) {
        /* a BF16 export of a checkpoint whose preset carries the released quantization
         * (gpt-oss's mxfp4, DeepSeek's fp8): every weight in the native dtype */
        model_quant_spec_native(&s->arch->quant, s->arch->native_dtype,
                                s->arch->num_layers + s->arch->num_nextn_predict_layers);
        g_strlcpy(s->arch->quant.source, "model name", sizeof s->arch->quant.source);
    } else if (ok && m.format[0] && strcmp(m.format, "bf16") != 0 &&
               strcmp(s->arch->quant.method, m.format) != 0) {
        /* the name says another format than the preset's own quantization (none, or the
         * released one): ranksim's scheme of that name replaces it */
        ModelQuantSpec spec;
        if (model_quant_spec_from_name(m.format, s->arch->moe, s->arch->native_dtype,
                                       s->arch->num_layers + s->arch->num_nextn_predict_layers,
                                       &spec)) {
            g_strlcpy(spec.method, m.format, sizeof spec.method);
            g_strlcpy(spec.source, "model name", sizeof spec.source);
            s->arch->quant = spec;
        } else {
            scenario_note_ignored(s,
                                  "model_name says format '%s', which ranksim has no layout "
                                  "for without the checkpoint's quantization_config; weights "
                                  "taken as %s",
                                  m.format, "bf16");
        }
    }
    if (ok) {
        g_free(s->model_source);
        s->model_source = g_strdup_printf("preset %s (%s)", m.preset, m.how);
    }
    model_catalog_match_clear(&m);
    return ok;
}

bool scenario_interpret_eval(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!check_eval_keys(ld, root, s) || !scenario_load_identity(ld, root, s))
        return false;
    const YamlDocNode *n = yamldoc_map_get(root, "kind");
    const char *kind = NULL;
    if (n) {
        /* a kind that is not a string has its error set already; set none over it */
        if (!yamldoc_get_string(&ld->doc, n, "kind", "model", &kind))
            return false;
        if (strcmp(kind, "model") != 0)
            return yamldoc_fail(&ld->doc, n, "kind",
                                "a vLLM eval config (model_name:) is a model scenario; valid: "
                                "kind: model, or leave kind out");
    }

    /* model_name -> architecture (a `model:` key, e.g. from --set, takes precedence) */
    const YamlDocNode *mn = yamldoc_map_get(root, "model_name");
    const char *model_name = NULL;
    if (!yamldoc_get_string(&ld->doc, mn, "model_name",
                            "a Hugging Face model id such as nvidia/GLM-5.2-NVFP4", &model_name))
        return false;
    s->arch = g_new0(ModelArch, 1);
    const YamlDocNode *model = yamldoc_map_get(root, "model");
    g_autofree char *local = model ? NULL : eval_local_config(ld, model_name);
    if (model) {
        if (!scenario_load_arch(ld, model, s))
            return false;
    } else if (local) {
        if (!scenario_arch_from_file(ld, mn, "model_name", local, s))
            return false;
    } else if (!eval_arch_from_catalog(ld, mn, model_name, s)) {
        return false;
    } else {
        eval_note_missing_folder(ld, model_name, s);
    }

    /* server_args and env -> parallel and engine settings */
    ModelSetup ms = {.eval = true};
    model_parallel_defaults(&ms.par);
    model_engine_defaults(&ms.engine);
    model_cost_params_defaults(&ms.cost);
    if ((n = yamldoc_map_get(root, "max_model_len"))) {
        if (!scenario_get_u32(ld, root, "max_model_len", 1, MAX_SEQ_LEN, &ms.engine.max_model_len))
            return false;
        ms.engine.given |= MODEL_ENGINE_GIVEN_MAX_MODEL_LEN;
    }
    const YamlDocNode *sa = yamldoc_map_get(root, "server_args");
    const YamlDocNode *sak = yamldoc_map_get_key(root, "server_args");
    ms.par_spot = ms.engine_spot = sa ? (Spot){sak, "server_args"} : (Spot){mn, "model_name"};
    g_autoptr(VllmArgs) args = sa ? eval_server_args(ld, sak, sa, &ms)
                                  : vllm_args_parse(NULL, 0, &ms.par, &ms.engine, NULL);
    if (!args)
        return false;
    vllm_args_apply(args, &ms.par, &ms.engine, s->ignored_flags);
    {
        g_autoptr(GError) eerr = NULL;
        if (!vllm_args_check_eplb(args, &ms.par, &eerr))
            return yamldoc_fail(&ld->doc, ms.par_spot.at, ms.par_spot.key, "%s", eerr->message);
    }
    {
        g_autoptr(GError) qerr = NULL;
        if (!vllm_args_settle_quant(args, s->arch, &ms.engine, s->ignored_flags, &qerr))
            return yamldoc_fail(&ld->doc, ms.engine_spot.at, ms.engine_spot.key, "%s",
                                qerr->message);
    }

    const YamlDocNode *env = yamldoc_map_get(root, "env");
    if (env) {
        if (!yamldoc_expect_map(&ld->doc, env, "env",
                                "a mapping of environment variables, e.g. "
                                "{VLLM_USE_V2_MODEL_RUNNER: \"1\"}"))
            return false;
        const YamlDocNode *bn = yamldoc_map_get(env, "VLLM_ATTENTION_BACKEND");
        if (bn && !args->backend_set) {
            const char *names[MODEL_BACKEND_COUNT + 1];
            vllm_args_backend_names(names);
            g_autofree char *list = g_strjoinv(", ", (char **)names);
            const char *v = NULL;
            if (!yamldoc_get_string(&ld->doc, bn, "VLLM_ATTENTION_BACKEND", list, &v))
                return false;
            if (!vllm_args_parse_backend(v, &ms.engine.attention_backend)) {
                g_autofree char *hint = yamldoc_suggestion(v, names);
                return yamldoc_fail(&ld->doc, bn, "VLLM_ATTENTION_BACKEND",
                                    "unknown attention backend '%s'; %s", v, hint);
            }
        }
        if (!eval_env(ld, env, args, &ms, s))
            return false;
    }
    return scenario_finish_model(ld, root, s, &ms);
}

/* YAML single-quoted scalar: '' stands for a quote. */
