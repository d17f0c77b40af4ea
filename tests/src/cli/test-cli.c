/* tests/src/cli/test-cli.c — the `ranksim` command as users meet it: exit codes, help, --json,
 * --trace, --set, bad options; runs the built binary (RANKSIM_BINARY). */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>

#include "../run-binary.h"

static char *tmpdir(void)
{
    return g_dir_make_tmp("ranksim-cli-XXXXXX", NULL);
}

Test(cli, version_and_help)
{
    Result r = ranksim((const char *[]){"--version", NULL});
    cr_assert_eq(r.code, 0);
    /* "ranksim 0.1.0 (REVISION)": the git revision the binary was built from */
    cr_assert(g_str_has_prefix(r.out, "ranksim "));
    cr_assert(strchr(r.out, '(') && strchr(r.out, ')'), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--help", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "--timeline"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"frobnicate", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "unknown command 'frobnicate'"), "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){NULL});
    cr_assert_eq(r.code, 2);
    result_clear(&r);
}

Test(cli, healthy_run_exits_0_and_reports)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r = ranksim((const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(g_str_has_prefix(r.out, "healthy-tp-layers: HEALTHY"), "%s", r.out);
    cr_assert(strstr(r.out, "ranks:"));
    cr_assert(strstr(r.out, "stored as run 1"));
    result_clear(&r);
}

Test(cli, failing_cluster_exits_3_with_json)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r =
        ranksim((const char *[]){"run", SCN("lse-size-mismatch.yaml"), "--db", db, "--json", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_data(p, r.out, -1, NULL), "not JSON: %s", r.out);
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    cr_assert_str_eq(json_object_get_string_member(o, "status"), "failed");
    cr_assert_eq(json_object_get_int_member(o, "exit_code"), 3);
    JsonArray *d = json_object_get_array_member(o, "diagnostics");
    cr_assert_geq(json_array_get_length(d), 2);
    JsonObject *m = json_array_get_object_element(d, 0);
    cr_assert_str_eq(json_object_get_string_member(m, "kind"), "mismatch");
    cr_assert_eq(json_object_get_int_member(m, "rank"), 0);
    cr_assert_eq(json_array_get_length(json_object_get_array_member(o, "rank_stats")), 4);
    result_clear(&r);
}

Test(cli, trace_file_is_written)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_autofree char *trace = g_build_filename(dir, "t.json", NULL);
    Result r = ranksim(
        (const char *[]){"run", SCN("three-way-cycle.yaml"), "--db", db, "--trace", trace, NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_file(p, trace, NULL));
    result_clear(&r);
}

Test(cli, set_overrides_a_key)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    /* With the watchdog at 50 s the 45 s straggler still completes; at 30 s it times out. */
    Result r = ranksim((const char *[]){"run", SCN("straggler-jit.yaml"), "--db", db, "--set",
                                        "watchdog.collective_timeout_s=30", "-q", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
}

Test(cli, bad_options_exit_2_with_one_message)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r = ranksim((const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--db", db,
                                        "--timeline", "some", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "valid: full, collectives, none"), "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--db", db, NULL});
    cr_assert_eq(r.code, 2);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "/nonexistent/x.yaml", "--db", db, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "/nonexistent/x.yaml"), "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--db", db, "--set",
                                 "nonsense", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "--set"), "%s", r.err);
    result_clear(&r);
}

/* Input that never reached a simulation is not a run: after one good run, a missing file, a
 * --set typo and a malformed --decode leave the database with that one run, still `latest`. */
Test(cli, refused_input_is_not_stored)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r = ranksim((const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    const char *const bad[][10] = {
        {"run", "/nonexistent/x.yaml", "--db", db, NULL},
        {"run", SCN("healthy-tp-layers.yaml"), "--db", db, "--set", "no_such_key=1", NULL},
        {"run", "--hardware", "h100", "--decode", "8:x", "--db", db, "--", "vllm", NULL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        r = ranksim(bad[i]);
        cr_assert_eq(r.code, 2, "case %zu: %s", i, r.err);
        result_clear(&r);
    }
    r = ranksim((const char *[]){"runs", "--db", db, "--json", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_null(strstr(r.out, "invalid"), "%s", r.out);
    cr_assert(strstr(r.out, "healthy-tp-layers"), "%s", r.out);
    result_clear(&r);
}

/* A public trace served through --requests: detected, cut to its first N, its arrivals scaled
 * to a rate; `vllm serve MODEL` with no flags runs on vLLM's defaults. */
Test(cli, public_traces_with_rate_and_limit)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *trace = RANKSIM_SOURCE_DIR "/tests/data/requests/azure.csv";
    Result r = ranksim((const char *[]){"run", "--hardware", "h100", "--requests", trace,
                                        "--requests-limit", "2", "--requests-rate", "100",
                                        "--timeline", "none", "--db", db, "--json", "--", "vllm",
                                        "serve", "meta-llama/Llama-3.1-8B-Instruct", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    g_autoptr(JsonNode) root = json_from_string(r.out, NULL);
    cr_assert_not_null(root, "%s", r.out);
    JsonObject *serve = json_object_get_object_member(json_node_get_object(root), "serving");
    cr_assert_not_null(serve, "%s", r.out);
    cr_assert_eq(json_object_get_int_member(serve, "requests"), 2, "%s", r.out);
    result_clear(&r);
    g_autofree char *sql = g_strdup_printf(
        "sqlite3 %s \"SELECT group_concat(arrival_us, ',') FROM requests\"", db);
    g_autofree char *out = NULL;
    cr_assert(g_spawn_command_line_sync(sql, &out, NULL, NULL, NULL));
    /* two requests 4.31 s apart in the trace, replayed at 100/s: 10 ms apart */
    cr_assert(g_str_has_prefix(out, "0.0,10000.0") || g_str_has_prefix(out, "0,10000"), "%s", out);
    r = ranksim((const char *[]){"run", "--hardware", "h100", "--requests-limit", "2", "--db", db,
                                 "--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "--requests-limit: only with --requests"), "%s", r.err);
    result_clear(&r);
}

Test(cli, unwritable_database_is_exit_1)
{
    Result r = ranksim(
        (const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--db", "/proc/no/such/r.db", NULL});
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_assert(strstr(r.err, "/proc/no/such/r.db"), "%s", r.err);
    result_clear(&r);
}

Test(cli, vllm_eval_config_with_hardware_and_prefill)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *eval =
        RANKSIM_SOURCE_DIR "/scenarios/eval-configs/GLM-5.2-NVFP4-tp1-pcp4-dcp4.yaml";
    /* vLLM main refuses the forced FLASHINFER_MLA_SPARSE under PCP+DCP, in its words */
    Result r = ranksim(
        (const char *[]){"run", eval, "--db", db, "--hardware", "b200", "--prefill", "633", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "does not support combined PCP+DCP; use FLASHMLA_SPARSE"), "%s", r.err);
    result_clear(&r);
    /* the vLLM before PR #55879 accepts it and hangs */
    r = ranksim((const char *[]){"run", eval, "--db", db, "--hardware", "b200", "--prefill", "633",
                                 "--set", "engine.vllm_without=[55879]", "--json", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    cr_assert(strstr(r.out, "9792"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"run", eval, "--db", db, "--hardware", "b200", "--prefill", "640",
                                 "--set", "engine.vllm_without=[55879]", "-q", NULL});
    cr_assert_eq(r.code, 0, "an even split runs healthy: %s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", eval, "--db", db, "--prefill", "633", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "--hardware"), "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", eval, "--db", db, "--hardware", "b200", "--decode",
                                 "8x4096", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "BATCH:CONTEXT"), "%s", r.err);
    result_clear(&r);
}

Test(cli, model_scenario_set_override)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r =
        ranksim((const char *[]){"run", SCN("glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"), "--db", db,
                                 "--set", "engine.attention_backend=FLASHMLA_SPARSE", "-q", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", SCN("glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"), "--db", db,
                                 "--set", "parallel.data_parallel_size=2", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "PCP does not support data parallelism yet."), "%s", r.err);
    result_clear(&r);
}

Test(cli, memory_plan_is_reported_and_stored)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    /* seed 004's configuration at utilization 0.85: the KV budget is negative for certain */
    Result r = ranksim((const char *[]){"run", SCN("glm52-b200-tp1-pcp4-dcp4-kv-budget.yaml"),
                                        "--db", db, "--json", "--memory-detail", "--set",
                                        "engine.gpu_memory_utilization=0.85", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_data(p, r.out, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonObject *m = json_object_get_object_member(o, "memory");
    cr_assert_not_null(m);
    JsonArray *ranks = json_object_get_array_member(m, "ranks");
    cr_assert_eq(json_array_get_length(ranks), 4);
    JsonObject *r0 = json_array_get_object_element(ranks, 0);
    cr_assert_lt(json_object_get_int_member(r0, "kv_budget_bytes"), 0);
    cr_assert_gt(json_array_get_length(json_object_get_array_member(r0, "items")), 10);
    /* vLLM's start-up lines for the tightest rank */
    JsonObject *v = json_object_get_object_member(m, "vllm");
    cr_assert_not_null(v);
    cr_assert_lt(json_object_get_int_member(v, "available_kv_cache_bytes"), 0);
    cr_assert_gt(json_object_get_int_member(v, "model_loading_bytes"), 128ll << 30);
    JsonArray *ds = json_object_get_array_member(o, "diagnostics");
    bool kv = false;
    for (guint i = 0; i < json_array_get_length(ds); i++)
        kv = kv ||
             strcmp(json_object_get_string_member(json_array_get_object_element(ds, i), "kind"),
                    "kv_budget") == 0;
    cr_assert(kv, "%s", r.out);
    result_clear(&r);
    /* the contract table: 4 ranks x 9 components */
    g_autofree char *cmd = g_strdup_printf(
        "sqlite3 %s \"SELECT count(*), count(DISTINCT component) FROM memory\"", db);
    g_autofree char *out = NULL;
    int status = 0;
    cr_assert(g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL));
    cr_assert_str_eq(g_strstrip(out), "36|9");
}

/* `list`: every preset, checkpoint, device and backend this binary knows; --json parses. */
Test(cli, list_models_hardware_backends)
{
    Result r = ranksim((const char *[]){"list", "models", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "kimi-k2") && strstr(r.out, "openai/gpt-oss-120b"), "%s", r.out);
    /* the hybrid presets (issue 26) are simulated now: listed with their structure, no reason */
    cr_assert(strstr(r.out, "qwen3-next-80b-a3b") && !strstr(r.out, "not simulated: field"), "%s",
              r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"list", "hardware", "--json", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    g_autoptr(JsonNode) j = json_from_string(r.out, NULL);
    cr_assert_not_null(j, "%s", r.out);
    cr_assert(strstr(r.out, "\"mi355x\"") && strstr(r.out, "\"rocm\""), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"list", "backends", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "ROCM_AITER_MLA_SPARSE") && strstr(r.out, "rocm gfx942-gfx950"), "%s",
              r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"list", "modles", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "valid: models, hardware, backends"), "%s", r.err);
    result_clear(&r);
}

/* Settings given but not simulated are listed with their reason by `run`, stored with the run
 * (table not_simulated) and listed again by `report`, text and JSON. */
Test(cli, not_simulated_settings_are_stored_and_reported)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "n.db", NULL);
    g_autofree char *eval = g_build_filename(dir, "e.yaml", NULL);
    cr_assert(g_file_set_contents(eval,
                                  "model_name: Qwen/Qwen3-8B\n"
                                  "server_args: --enable-chunked-prefill --block-size 32\n"
                                  "env: {VLLM_LOGGING_LEVEL: DEBUG}\n",
                                  -1, NULL));
    Result r = ranksim(
        (const char *[]){"run", eval, "--hardware", "h100", "--prefill", "128", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "not simulated: --enable-chunked-prefill (the scheduler"), "%s",
              r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"report", "latest", "--db", db, "--json", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    g_autoptr(JsonNode) j = json_from_string(r.out, NULL);
    cr_assert_not_null(j);
    JsonArray *ns = json_object_get_array_member(json_node_get_object(j), "not_simulated");
    cr_assert_eq(json_array_get_length(ns), 3, "%s", r.out);
    cr_assert(strstr(json_array_get_string_element(ns, 2), "env VLLM_LOGGING_LEVEL=DEBUG"));
    result_clear(&r);
}

/* --model-config FILE points a scenario (here an eval config naming another model) at a
 * config.json: the weights are that model's. */
Test(cli, model_config_replaces_the_model)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "m.db", NULL);
    g_autofree char *eval = g_build_filename(dir, "e.yaml", NULL);
    cr_assert(g_file_set_contents(eval, "model_name: Qwen/Qwen3-8B\n", -1, NULL));
    Result r = ranksim((const char *[]){
        "run", eval, "--hardware", "h100", "--prefill", "128", "--db", db, "--json",
        "--model-config", RANKSIM_SOURCE_DIR "/model/presets/llama-3.1-8b.json", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    g_autoptr(JsonNode) j = json_from_string(r.out, NULL);
    cr_assert_not_null(j, "%s", r.out);
    JsonObject *v = json_object_get_object_member(
        json_object_get_object_member(json_node_get_object(j), "memory"), "vllm");
    /* Llama-3.1-8B: 14.96 GiB of bf16 weights (Qwen3-8B would be 15.26) */
    int64_t w = json_object_get_int_member(v, "model_loading_bytes");
    cr_assert(w > (int64_t)(14.9 * (1 << 30)) && w < (int64_t)(15.0 * (1 << 30)), "%ld", (long)w);
    result_clear(&r);
    r = ranksim((const char *[]){"run", eval, "--hardware", "h100", "--prefill", "128", "--db", db,
                                 "--model-config", "/nonexistent/config.json", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    result_clear(&r);
}

/* A vLLM command line pasted after "--" runs as the eval config it amounts to: DeepSeek-V3 at
 * TP8 x DP2 with EP is 16 ranks, its weights FP8 as the checkpoint stores them; the
 * API-server form works too, and a command that is neither, or names no model, is exit 2. */
Test(cli, a_pasted_vllm_command_line_runs)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "v.db", NULL);
    Result r = ranksim(
        (const char *[]){"run", "--hardware", "h100", "--prefill", "4096", "--db", db, "--json",
                         "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--tensor-parallel-size",
                         "8", "--data-parallel-size", "2", "--enable-expert-parallel", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    g_autoptr(JsonNode) j = json_from_string(r.out, NULL);
    cr_assert_not_null(j, "%s", r.out);
    JsonObject *o = json_node_get_object(j);
    cr_assert_eq(json_object_get_int_member(o, "ranks"), 16);
    JsonObject *mem = json_object_get_object_member(o, "memory");
    cr_assert(strstr(json_object_get_string_member(mem, "weights_format"), "fp8 block 128x128"),
              "%s", json_object_get_string_member(mem, "weights_format"));
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--hardware", "h100", "--prefill", "100", "--db", db, "-q",
                                 "--", "python3", "-m", "vllm.entrypoints.openai.api_server",
                                 "--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len",
                                 "4096", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--db", db, "--", "sglang", "serve", "x", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "is not a vLLM command line"), "%s", r.err);
    result_clear(&r);
    /* --all2all-backend is simulated: DeepEP's all-to-all, not noted as ignored */
    r = ranksim((const char *[]){"run",
                                 "--hardware",
                                 "h100",
                                 "--prefill",
                                 "4096",
                                 "--db",
                                 db,
                                 "--json",
                                 "--",
                                 "vllm",
                                 "serve",
                                 "deepseek-ai/DeepSeek-V3",
                                 "--tensor-parallel-size",
                                 "8",
                                 "--data-parallel-size",
                                 "2",
                                 "--enable-expert-parallel",
                                 "--all2all-backend",
                                 "deepep_high_throughput",
                                 NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_null(strstr(r.out, "--all2all-backend"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--db", db, "--", "vllm", "serve",
                                 "deepseek-ai/DeepSeek-V3", "--all2all-backend", "deepep", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "deepep_low_latency"), "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "--db", db, "--", "vllm", "serve", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "names no model"), "%s", r.err);
    result_clear(&r);
}

/* With COLUMNS=80, run, report, explain, runs, diff and a sweep on the seed-004 pair print no
 * line over 80 characters (counted as characters, not bytes: the reports use "—"), and the
 * outcome is one line. */
Test(cli, reports_fit_80_columns)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "w.db", NULL);
    const char *hang = RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml";
    const char *fix = RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml";
    g_setenv("COLUMNS", "80", TRUE);
    const char *const cmds[][10] = {
        {"run", hang, "--db", db, NULL},
        {"run", fix, "--db", db, NULL},
        {"report", "1", "--db", db, NULL},
        {"explain", "1", "--db", db, NULL},
        {"runs", "--db", db, NULL},
        {"diff", "1", "2", "--db", db, NULL},
        {"sweep", hang, "--vary", "engine.attention_backend=FLASHINFER_MLA_SPARSE,FLASHMLA_SPARSE",
         "--db", db, "-q", NULL},
        {"runs", "--db", db, NULL}, /* now with the variants' long names */
        {"prune", "latest", "--dry-run", "--db", db, NULL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        Result r = ranksim(cmds[i]);
        cr_assert(r.code == 0 || r.code == 3, "%s: exit %d: %s", cmds[i][0], r.code, r.err);
        g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
        for (guint k = 0; lines[k]; k++)
            cr_assert_leq(g_utf8_strlen(lines[k], -1), 80, "%s: line %u is %ld wide: %s",
                          cmds[i][0], k + 1, g_utf8_strlen(lines[k], -1), lines[k]);
        if (i == 0)
            cr_assert(g_str_has_prefix(r.out, "glm52-b200-tp1-pcp4-dcp4-flashinfer: FAILED — "
                                              "mismatch; culprit rank 0\n"),
                      "%s", r.out);
        result_clear(&r);
    }
    /* the memory table's wide layout starts at the width it needs, no sooner */
    const char *widths[] = {"100", "122", "123", "160"};
    for (size_t i = 0; i < G_N_ELEMENTS(widths); i++) {
        g_setenv("COLUMNS", widths[i], TRUE);
        Result r = ranksim((const char *[]){"report", "1", "--db", db, NULL});
        cr_assert(r.code == 0 || r.code == 3, "%s", r.err);
        long w = strtol(widths[i], NULL, 10);
        g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
        for (guint k = 0; lines[k]; k++) {
            /* stdout is folded at the width: a table laid out too wide shows as a column
             * folded onto a line of its own */
            g_autofree char *t = g_strstrip(g_strdup(lines[k]));
            char *end = NULL;
            g_ascii_strtod(t, &end);
            cr_assert(strcmp(t, "KV budget") != 0 && (!t[0] || end == t || *end),
                      "at %ld: line %u is a folded column: '%s'\n%s", w, k + 1, lines[k], r.out);
        }
        result_clear(&r);
    }
    g_unsetenv("COLUMNS");
}

/* A sweep's progress on stderr fits 80 columns too, and its table shows a refused variant's
 * reason with the number that decides it, not the place it names (issue 28, item 9). */
Test(cli, sweep_progress_fits_and_the_finding_keeps_its_number)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "s.db", NULL);
    const char *fix = RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml";
    const char *widths[] = {"80", "160"};
    for (size_t i = 0; i < G_N_ELEMENTS(widths); i++) {
        g_setenv("COLUMNS", widths[i], TRUE);
        Result r = ranksim((const char *[]){"sweep", fix, "--vary",
                                            "parallel.prefill_context_parallel_size=1,4", "--db",
                                            db, NULL});
        cr_assert(r.code == 0 || r.code == 3, "exit %d: %s", r.code, r.err);
        long w = strtol(widths[i], NULL, 10);
        g_auto(GStrv) lines = g_strsplit(r.err, "\n", -1);
        for (guint k = 0; lines[k]; k++)
            cr_assert_leq(g_utf8_strlen(lines[k], -1), w, "stderr line %u is %ld wide: %s", k + 1,
                          g_utf8_strlen(lines[k], -1), lines[k]);
        cr_assert_not_null(strstr(r.out, "tp_size=1 must be divisible by dcp_size=4"), "%s",
                           r.out);
        cr_assert_null(strstr(r.out, "config: line "), "%s", r.out);
        result_clear(&r);
    }
    g_unsetenv("COLUMNS");
}

/* explain of a simulated hang tells what differs as the model counts it (153 vs 160 query
 * rows), what vLLM prints on hardware, and the fix later vLLM brought (issue 24, item 5). */
Test(cli, explain_tells_rows_surface_and_fix)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "x.db", NULL);
    Result r = ranksim((const char *[]){
        "run", RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml", "--db",
        db, "-q", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_setenv("COLUMNS", "400", TRUE);
    r = ranksim((const char *[]){"explain", "latest", "--db", db, NULL});
    g_unsetenv("COLUMNS");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "9792 (153 rows x 64)") && strstr(r.out, "10240 (160 rows x 64)"),
              "%s", r.out);
    cr_assert(strstr(r.out, "No available shared memory broadcast block found"), "%s", r.out);
    cr_assert(strstr(r.out, "fix: fixed in vLLM PR #55879"), "%s", r.out);
    result_clear(&r);
}

/* "Will it start, and how many KV tokens do I get?" needs no workload (issue 28, item 6). */
Test(cli, start_up_only_without_a_workload)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "s.db", NULL);
    Result r = ranksim((const char *[]){"run", "--hardware", "h100", "--db", db, "--", "vllm",
                                        "serve", "meta-llama/Llama-3.1-8B-Instruct", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "GPU KV cache size: ") && strstr(r.out, "Maximum concurrency"), "%s",
              r.out);
    cr_assert(strstr(r.err, "no workload: start-up only"), "%s", r.err);
    result_clear(&r);
}

/* A long run name (its overrides) gives way in the middle of the headline: the outcome and the
 * culprit stay on it. */
Test(cli, long_names_keep_the_outcome)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "n.db", NULL);
    g_setenv("COLUMNS", "80", TRUE);
    Result r = ranksim((const char *[]){
        "run", RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml", "--db",
        db, "--set", "engine.max_num_seqs=64", "--set", "engine.max_num_batched_tokens=16384",
        NULL});
    g_unsetenv("COLUMNS");
    cr_assert_eq(r.code, 3, "%s", r.err);
    g_autofree char *head = g_strndup(r.out, strcspn(r.out, "\n"));
    cr_assert(strstr(head, "…") && strstr(head, ": FAILED — mismatch; culprit rank 0"), "%s",
              head);
    cr_assert_leq(g_utf8_strlen(head, -1), 80, "%s", head);
    result_clear(&r);
}

/* Every command that prints something for scripts prints one valid JSON document with --json
 * (issue 14: runs, report, explain, diff, sweep; and trace, prune). */
Test(cli, json_everywhere)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "j.db", NULL);
    g_autofree char *tr = g_build_filename(dir, "t.json.gz", NULL);
    g_autofree char *png = g_build_filename(dir, "p.png", NULL);
    const char *hang = RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml";
    const char *fix = RANKSIM_SOURCE_DIR "/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml";
    const char *const cmds[][10] = {
        {"run", hang, "--db", db, "--json", NULL},
        {"run", fix, "--db", db, "--json", NULL},
        {"runs", "--db", db, "--json", NULL},
        {"report", "1", "--db", db, "--json", NULL},
        {"explain", "1", "--db", db, "--json", NULL},
        {"diff", "1", "2", "--db", db, "--json", NULL},
        {"sweep", hang, "--vary", "engine.attention_backend=FLASHINFER_MLA_SPARSE,FLASHMLA_SPARSE",
         "--db", db, "-q", "--json", NULL},
        {"trace", "1", "-o", tr, "--db", db, "--json", NULL},
        {"plot", "1", "-o", png, "--db", db, "--json", NULL},
        {"prune", "latest", "--dry-run", "--db", db, "--json", NULL},
        {"list", "hardware", "--json", NULL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        Result r = ranksim(cmds[i]);
        cr_assert(r.code == 0 || r.code == 3, "%s: exit %d: %s", cmds[i][0], r.code, r.err);
        g_autoptr(JsonParser) p = json_parser_new();
        cr_assert(json_parser_load_from_data(p, r.out, -1, NULL), "%s: not JSON: %s", cmds[i][0],
                  r.out);
        cr_assert(JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p)), "%s", cmds[i][0]);
        result_clear(&r);
    }
}

/* A rank's eager pipeline sends run on while it goes on: in the trace they move to an extra
 * track ("rank N (overlapping)"), so on every track the slices follow one another or nest —
 * what a flame-chart viewer (speedscope) needs — and every B has its E at the exact end. */
Test(cli, trace_tracks_never_overlap)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "pp.db", NULL);
    g_autofree char *tr = g_build_filename(dir, "pp.json", NULL);
    Result r = ranksim((const char *[]){
        "run", "-q", RANKSIM_SOURCE_DIR "/scenarios/deepseek-v3-fp8-h200-tp8-pp2.yaml", "--db", db,
        "--trace", tr, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_file(p, tr, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    g_autoptr(GHashTable) last_end = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) begin = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    guint extra = 0, slices = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if (strcmp(ph, "M") == 0 && json_object_has_member(e, "args")) {
            g_autofree char *args = json_to_string(json_object_get_member(e, "args"), FALSE);
            extra += strstr(args, "(overlapping)") != NULL;
        }
        if (strcmp(ph, "B") != 0 && strcmp(ph, "E") != 0)
            continue;
        g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                                               json_object_get_int_member(e, "pid"),
                                               json_object_get_int_member(e, "tid"));
        int64_t ns = (int64_t)llround(json_object_get_double_member(e, "ts") * 1000.0);
        if (strcmp(ph, "B") == 0) {
            int64_t *prev = g_hash_table_lookup(last_end, key);
            cr_assert(!prev || *prev <= ns, "track %s: an op starts before the last one ends", key);
            cr_assert_null(g_hash_table_lookup(begin, key), "track %s: B inside a B", key);
            g_hash_table_insert(begin, g_strdup(key), g_memdup2(&ns, sizeof ns));
        } else {
            int64_t *b = g_hash_table_lookup(begin, key);
            cr_assert(b && *b <= ns, "track %s: E without B", key);
            g_hash_table_remove(begin, key);
            g_hash_table_insert(last_end, g_strdup(key), g_memdup2(&ns, sizeof ns));
            slices++;
        }
    }
    cr_assert_gt(extra, 0, "the eager sends overlap: some rank needs an extra track");
    /* every op of the run once: 16,196 since issue 23 (the sampler after lm_head; MLA's fused
     * q_a/kv_a projection, its W_UK/W_UV products on decode rows, kv_b_proj only for prefills,
     * the rotary embedding of q_pe / k_pe: 61 layers x 16 ranks) */
    cr_assert_eq(slices, 16196);
}

/* --prefill N@C: N new tokens continuing a prompt whose first C tokens are cached. The chunk
 * after 8,192 cached tokens takes longer than the same chunk as a fresh prompt (its attention
 * reads the cache); bad values are exit 2 naming the flag; sweep takes no cached context. */
static double rank0_compute_us(const char *db, const char *prefill)
{
    Result r = ranksim((const char *[]){"run", "--hardware", "h100", "--prefill", prefill, "--db",
                                        db, "--json", "--", "vllm", "serve",
                                        "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len",
                                        "16384", NULL});
    cr_assert_eq(r.code, 0, "--prefill %s: %s", prefill, r.err);
    g_autoptr(JsonNode) j = json_from_string(r.out, NULL);
    cr_assert_not_null(j, "%s", r.out);
    JsonArray *st = json_object_get_array_member(json_node_get_object(j), "rank_stats");
    double us = json_object_get_double_member(json_array_get_object_element(st, 0), "compute_us");
    result_clear(&r);
    return us;
}

Test(cli, prefill_with_cached_context)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "p.db", NULL);
    double fresh = rank0_compute_us(db, "2048");
    double cont = rank0_compute_us(db, "2048@8192");
    cr_assert_gt(cont, fresh * 1.1, "%.1f us after 8192 cached, %.1f fresh", cont, fresh);
    cr_assert_eq(rank0_compute_us(db, "2048@0"), fresh);
    static const char *const bad[] = {"2048@-1", "2048@", "@5", "2048@x", "0@5", "5@6@7"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        Result r = ranksim((const char *[]){"run", "--hardware", "h100", "--prefill", bad[i],
                                            "--db", db, "--", "vllm", "serve",
                                            "meta-llama/Llama-3.1-8B-Instruct", NULL});
        cr_assert_eq(r.code, 2, "%s: %s", bad[i], r.err);
        cr_assert(strstr(r.err, "--prefill '") && strstr(r.err, "N@C"), "%s: %s", bad[i], r.err);
        result_clear(&r);
    }
    Result r = ranksim((const char *[]){"run", "--hardware", "h100", "--prefill", "2048@20000",
                                        "--db", db, "--", "vllm", "serve",
                                        "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len",
                                        "16384", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--prefill 2048@20000: a prompt of 22048 tokens (20000 cached + "
                            "2048 new) is longer than max_model_len=16384"),
              "%s", r.err);
    result_clear(&r);
}
