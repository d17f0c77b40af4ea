/* tests/src/run/test-serving.c — how vLLM serves, as ranksim runs it (issue 12): the long-prefill
 * time where its FLOPs put it (a prefill's K/V read once per query tile). */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "../run-binary.h"

static double db_double(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* Qwen3-235B-A22B FP8, TP8 on H200, one 131,072-token prompt: the attention's FLOPs (94 layers
 * x 4 x rows x 8 heads per rank x the causal mean context x head dim 128) at the H200's dense
 * bf16 peak (989 TFLOPS) are a floor; at the cost model's efficiency the kernel stays within
 * 2x of it — not the 40x a per-row K/V re-read made it. */
Test(serving, long_prefill_attention_is_where_its_flops_put_it)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "q.yaml", NULL);
    cr_assert(g_file_set_contents(
        path,
        "name: q235-128k\nmodel: qwen3-235b-a22b\nhardware: h200\n"
        "parallel: {tensor_parallel_size: 8}\n"
        "engine: {quantization: fp8, max_num_batched_tokens: 131072, max_model_len: 140000}\n"
        "workload:\n  steps:\n    - {prefill: [131072]}\n",
        -1, NULL));
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r = ranksim((const char *[]){"run", path, "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    double attn_s = db_double(db, "SELECT sum(end_us - start_us) / 1e6 FROM ops WHERE rank = 0 "
                                  "AND name = 'attention'");
    double rows = 131072, ctx = (rows + 1) / 2;
    double floor_s = 94 * 4 * rows * 8 * ctx * 128 / 989e12;
    cr_assert(attn_s >= floor_s && attn_s <= 2 * floor_s, "attention %.2f s, FLOP floor %.2f s",
              attn_s, floor_s);
    double total_s = db_double(db, "SELECT sim_end_us / 1e6 FROM runs");
    cr_assert(total_s < 10, "the prefill took %.1f s", total_s);
}

/* ---- requests served by vLLM's scheduler ---- */

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* Runs `scenario` into a fresh database and returns `sql`'s first value; the run must exit
 * `code` (0 healthy, 3 failed). */
static double run_and_get_code(const char *dir, const char *scenario, const char *sql, int code)
{
    g_autofree char *path = write_file(dir, "s.yaml", scenario);
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_unlink(db);
    Result r = ranksim((const char *[]){"run", path, "--db", db, "-q", NULL});
    cr_assert_eq(r.code, code, "%s", r.err);
    result_clear(&r);
    return db_double(db, sql);
}

static double run_and_get(const char *dir, const char *scenario, const char *sql)
{
    return run_and_get_code(dir, scenario, sql, 0);
}

static const char qwen_chunked[] = "name: q235-chunked\nmodel: qwen3-235b-a22b\nhardware: h200\n"
                                   "parallel: {tensor_parallel_size: 8}\n"
                                   "engine: {max_model_len: 140000, max_num_batched_tokens: 8192}\n"
                                   "workload:\n  requests: [{prompt: %u, output: 2}]\n";

/* vLLM's chunked prefill: a 131,072-token prompt at the default-sized budget of 8,192 tokens
 * runs as 16 chunks, each attending to the chunks before it; the engine is the one a short
 * prompt gets (the same KV budget); the first token comes when a FLOP count says. The count,
 * made here from Qwen3-235B-A22B's shapes (hidden 4096, 94 layers, 64 query / 4 KV heads of
 * 128, 8 of 128 experts of 1536 per token): linear 2 x 20.9e9 FLOPs per token, causal attention
 * 4 x 94 x 64 x 128 x n^2 / 2, over 8 H200s at 989 TFLOPS bf16 dense: 4.0 s at full
 * utilisation. TTFT must be above that floor and within 2.5x of it (MFU 40-100 %). */
Test(serving, a_128k_prompt_runs_as_16_chunks_on_the_short_prompt_engine)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *lng = g_strdup_printf(qwen_chunked, 131072u);
    g_autofree char *shrt = g_strdup_printf(qwen_chunked, 1024u);
    double chunks = run_and_get(dir, lng, "SELECT count(*) FROM steps WHERE prefill_tokens > 0");
    cr_assert_eq(chunks, 16);
    double biggest = run_and_get(dir, lng, "SELECT max(prefill_tokens) FROM steps");
    cr_assert_eq(biggest, 8192);
    double stored = run_and_get(dir, lng, "SELECT prefill_chunks FROM requests");
    cr_assert_eq(stored, 16);
    double kv_long = run_and_get(dir, lng, "SELECT min_kv_budget_bytes FROM memory_runs");
    double kv_short = run_and_get(dir, shrt, "SELECT min_kv_budget_bytes FROM memory_runs");
    cr_assert_eq(kv_long, kv_short, "KV budget %.0f with the long prompt, %.0f with a short one",
                 kv_long, kv_short);
    double ttft = run_and_get(dir, lng, "SELECT (first_token_us - arrival_us) / 1e6 FROM requests");
    double n = 131072;
    double per_layer =
        4096.0 * (8192 + 512 + 512) + 8192.0 * 4096 + 8 * 3.0 * 4096 * 1536 + 4096.0 * 128;
    double flops = 2 * per_layer * 94 * n + 4.0 * 94 * 64 * 128 * n * n / 2;
    double floor_s = flops / (8 * 989e12);
    cr_assert(ttft >= floor_s && ttft <= 2.5 * floor_s, "TTFT %.2f s, FLOP floor %.2f s", ttft,
              floor_s);
}

/* The step cache changes no result: the same requests with and without --exact give the same
 * rows of steps and requests, and the cached run reused steps (requests far apart are served
 * alone, so their steps repeat exactly). */
Test(serving, cached_steps_give_the_exact_results)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *path =
        write_file(dir, "s.yaml",
                   "name: repeat\nmodel: llama-3.1-8b\nhardware: h100\n"
                   "engine: {max_model_len: 4096, max_num_batched_tokens: 512}\n"
                   "workload:\n  requests:\n"
                   "    - {prompt: 700, output: 6, arrival_s: 0}\n"
                   "    - {prompt: 700, output: 6, arrival_s: 5}\n"
                   "    - {prompt: 300, output: 4, arrival_s: 5.001}\n"
                   "    - {prompt: 700, output: 6, arrival_s: 10}\n");
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result a = ranksim((const char *[]){"run", path, "--db", db, "-q", NULL});
    cr_assert_eq(a.code, 0, "%s", a.err);
    Result b = ranksim((const char *[]){"run", path, "--db", db, "-q", "--exact", NULL});
    cr_assert_eq(b.code, 0, "%s", b.err);
    result_clear(&a);
    result_clear(&b);
    const char *cols[] = {
        "SELECT group_concat(step || ':' || dp || ':' || start_us || ':' || end_us || ':' || "
        "prefill_tokens || ':' || decode_tokens || ':' || seqs || ':' || padded_tokens || ':' || "
        "kv_blocks_used, ';') FROM (SELECT * FROM steps WHERE run_id = %d ORDER BY step, dp)",
        "SELECT group_concat(id || ':' || dp || ':' || arrival_us || ':' || first_token_us || "
        "':' || finish_us || ':' || generated || ':' || preemptions, ';') FROM (SELECT * FROM "
        "requests WHERE run_id = %d ORDER BY id)"};
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int k = 0; k < 2; k++) {
        char *text[2];
        for (int run = 1; run <= 2; run++) {
            g_autofree char *sql = g_strdup_printf(cols[k], run);
            sqlite3_stmt *st = NULL;
            cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
            cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
            text[run - 1] = g_strdup((const char *)sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
        cr_assert_str_eq(text[0], text[1]);
        cr_assert(strlen(text[0]) > 20);
        g_free(text[0]);
        g_free(text[1]);
    }
    sqlite3_close(h);
    cr_assert_gt(db_double(db, "SELECT reused_steps FROM serve_runs WHERE run_id = 1"), 0);
    cr_assert_eq(db_double(db, "SELECT reused_steps FROM serve_runs WHERE run_id = 2"), 0);
}

/* DP2 x TP4 with EP on an MoE model and a single request: DP rank 1 has nothing to run, so it
 * runs dummy batches (vLLM's execute_dummy_batch) and joins every EP collective of the busy
 * rank; the run is healthy. */
Test(serving, an_idle_dp_rank_joins_every_ep_collective)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: dp2-ep\nmodel: qwen3-30b-a3b\nhardware: h100\n"
                     "parallel: {tensor_parallel_size: 4, data_parallel_size: 2, "
                     "enable_expert_parallel: true}\n"
                     "engine: {max_model_len: 4096}\n"
                     "workload:\n  requests: [{prompt: 500, output: 8}]\n";
    double dummies = run_and_get(dir, sc, "SELECT count(*) FROM steps WHERE dp = 1 AND dummy");
    double steps = run_and_get(dir, sc, "SELECT count(DISTINCT step) FROM steps");
    cr_assert_eq(dummies, steps, "%.0f dummy steps of %.0f", dummies, steps);
    cr_assert_eq(steps, 8);
    double busy = run_and_get(dir, sc,
                              "SELECT count(*) FROM ops WHERE rank = 0 AND name "
                              "IN ('ep_dispatch_all_gather', 'ep_combine_reduce_scatter')");
    double idle = run_and_get(dir, sc,
                              "SELECT count(*) FROM ops WHERE rank = 4 AND name "
                              "IN ('ep_dispatch_all_gather', 'ep_combine_reduce_scatter')");
    cr_assert_gt(busy, 0);
    cr_assert_eq(busy, idle);
    cr_assert_str_eq("ok", "ok");
    cr_assert_eq(run_and_get(dir, sc, "SELECT exit_code FROM runs"), 0);
}

/* The Poisson workload of the issue: 200 requests on Llama-3.1-70B TP4 all finish, each with a
 * first-token and a finish time, and the JSON report gives the percentiles in order. */
Test(serving, poisson_200_requests_all_finish_with_latencies, .timeout = 120)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *path = write_file(
        dir, "s.yaml",
        "name: p200\nmodel: llama-3.1-70b\nhardware: h100\n"
        "parallel: {tensor_parallel_size: 4}\nengine: {max_model_len: 8192}\n"
        "workload:\n  poisson: {count: 200, rate_per_s: 4, prompt: 1024, output: 128, seed: 1}\n");
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r =
        ranksim((const char *[]){"run", path, "--db", db, "--json", "--timeline", "none", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"ttft_p99_s\""), "%s", r.out);
    result_clear(&r);
    cr_assert_eq(db_double(db, "SELECT count(*) FROM requests WHERE finish_us IS NOT NULL AND "
                               "first_token_us IS NOT NULL AND generated = 128"),
                 200);
    double arrivals = db_double(db, "SELECT count(DISTINCT arrival_us) FROM requests");
    cr_assert_eq(arrivals, 200);
    double span = db_double(db, "SELECT max(arrival_us) / 1e6 FROM requests");
    cr_assert(span > 30 && span < 70, "200 arrivals at 4/s span %.1f s", span);
    Result j = ranksim((const char *[]){"report", "--db", db, "--json", NULL});
    cr_assert_eq(j.code, 0);
    double p50 = 0, p99 = 0;
    const char *a = strstr(j.out, "\"ttft_p50_s\""), *b = strstr(j.out, "\"ttft_p99_s\"");
    cr_assert(a && b);
    cr_assert_eq(sscanf(strchr(a, ':') + 1, "%lf", &p50), 1);
    cr_assert_eq(sscanf(strchr(b, ':') + 1, "%lf", &p99), 1);
    cr_assert(p50 > 0 && p50 <= p99, "p50 %g p99 %g", p50, p99);
    result_clear(&j);
}

/* Preemption by recompute: a KV cache too small for the requests together takes back the last
 * running request's blocks; it is recomputed later and still finishes. */
Test(serving, a_full_kv_cache_preempts_and_recomputes)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    /* 160 blocks of 16 tokens: 2,544 usable tokens for three requests of up to 1,600 */
    const char *sc = "name: tight\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "engine: {max_model_len: 2048, num_gpu_blocks_override: 160, "
                     "cudagraph_mode: NONE}\n"
                     "workload:\n  requests:\n"
                     "    - {prompt: 1000, output: 600}\n"
                     "    - {prompt: 1000, output: 600}\n"
                     "    - {prompt: 1000, output: 600}\n";
    double blocks = run_and_get(dir, sc, "SELECT kv_blocks * block_tokens FROM serve_runs");
    cr_assert(blocks > 1600 && blocks < 4800, "KV cache of %.0f tokens", blocks);
    cr_assert_gt(run_and_get(dir, sc, "SELECT sum(preemptions) FROM requests"), 0);
    cr_assert_eq(run_and_get(dir, sc, "SELECT count(*) FROM requests WHERE generated = 600"), 3);
    double most = run_and_get(dir, sc, "SELECT max(kv_blocks_used) FROM steps");
    double have = run_and_get(dir, sc, "SELECT kv_blocks FROM serve_runs");
    cr_assert_leq(most, have);
}

/* ---- trace files ---- */

static Result run_trace(const char *dir, const char *trace_name, const char *trace)
{
    g_autofree char *tp = write_file(dir, trace_name, trace);
    g_autofree char *sp = write_file(dir, "t.yaml",
                                     "name: t\nmodel: llama-3.1-8b\nhardware: h100\n"
                                     "engine: {max_model_len: 4096}\n");
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    return ranksim((const char *[]){"run", sp, "--db", db, "-q", "--requests", tp, NULL});
}

Test(serving, traces_in_json_lines_and_csv_give_the_same_requests)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    Result a = run_trace(dir, "a.jsonl",
                         "{\"arrival_s\": 0, \"prompt\": 100, \"output\": 3, \"id\": \"x\"}\n"
                         "\n# a comment\n{\"arrival_s\": 0.25, \"prompt\": 200, \"output\": 2}\n");
    cr_assert_eq(a.code, 0, "%s", a.err);
    Result b = run_trace(dir, "b.csv", "prompt,output,arrival_s\n100,3,0\n200,2,0.25\n");
    cr_assert_eq(b.code, 0, "%s", b.err);
    result_clear(&a);
    result_clear(&b);
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *q = "SELECT group_concat(arrival_us || '/' || prompt || '/' || output || '/' || "
                    "finish_us) FROM requests WHERE run_id = %d";
    g_autofree char *q1 = g_strdup_printf(q, 1), *q2 = g_strdup_printf(q, 2);
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *t[2];
    const char *qs[2] = {q1, q2};
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st = NULL;
        cr_assert_eq(sqlite3_prepare_v2(h, qs[k], -1, &st, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        t[k] = g_strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    cr_assert_str_eq(t[0], t[1]);
    cr_assert(strstr(t[0], "250000.0/200/2/"), "%s", t[0]);
    g_free(t[0]);
    g_free(t[1]);
}

Test(serving, a_bad_trace_line_names_the_file_line_and_key)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    struct {
        const char *name, *text, *want;
    } cases[] = {
        {"x.jsonl", "{\"prompt\": 10, \"output\": 2}\n{\"prompt\": -1, \"output\": 2}\n",
         "x.jsonl:2: key 'prompt'"},
        {"y.jsonl", "{\"prompt\": 10}\n", "y.jsonl:1: key 'output': missing"},
        {"z.csv", "arrival_s,prompt,output\n0,10,2\n0.5,ten,2\n", "z.csv:3: key 'prompt'"},
        {"w.csv", "arrival_s,tokens\n0,10\n", "w.csv:1: key 'prompt': missing"},
        {"v.jsonl", "{\"prompt\": 10, \"output\": 2\n", "v.jsonl:1: key 'arrival_s'"},
        {"u.csv", "arrival_s,prompt,output\n0,5000,100\n", "exceed max_model_len"},
        {"e.csv", "# nothing\n", "no requests"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Result r = run_trace(dir, cases[i].name, cases[i].text);
        cr_assert_eq(r.code, 2, "%s: exit %d: %s", cases[i].name, r.code, r.err);
        cr_assert(strstr(r.err, cases[i].want), "%s: %s", cases[i].name, r.err);
        cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
        result_clear(&r);
    }
}

/* The same seed gives the same arrivals; steps and requests exclude each other. */
Test(serving, poisson_arrivals_are_deterministic_and_workload_forms_exclusive)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: p\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "engine: {max_model_len: 4096}\n"
                     "workload:\n  poisson: {count: 5, rate_per_s: 10, prompt: 64, output: 2, "
                     "seed: 7}\n";
    double a = run_and_get(dir, sc, "SELECT sum(arrival_us) FROM requests");
    double b = run_and_get(dir, sc, "SELECT sum(arrival_us) FROM requests");
    cr_assert_eq(a, b);
    cr_assert_gt(a, 0);
    g_autofree char *bad = write_file(dir, "bad.yaml",
                                      "name: p\nmodel: llama-3.1-8b\nhardware: h100\n"
                                      "workload:\n  steps: [{prefill: [10]}]\n"
                                      "  requests: [{prompt: 10, output: 2}]\n");
    Result r = ranksim((const char *[]){"run", bad, "--db", "/dev/null/x.db", "-q", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "bad.yaml:5: key 'steps'"), "%s", r.err);
    result_clear(&r);
}

/* ---- pipeline parallelism ---- */

/* DeepSeek-V3 FP8, TP8 x PP2 on two H200 nodes: healthy; vLLM's PP groups pair rank r with
 * r + 8 (all_ranks.transpose(2, 4).reshape(-1, PP)); each step sends the hidden states and
 * the residual from every stage-0 rank to its stage-1 peer (1/TP of each, all-gathered over TP
 * on arrival); each rank holds about half the weights of a TP8 rank (61 layers split 31 / 30,
 * the embedding on stage 0, the norm and lm_head on stage 1). */
Test(serving, deepseek_v3_tp8_pp2_on_two_nodes)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *pp2 = "name: dsv3-pp2\nmodel: deepseek-v3\nhardware: h200\nnodes: 2\n"
                      "parallel: {tensor_parallel_size: 8, pipeline_parallel_size: 2}\n"
                      "engine: {max_model_len: 16384}\n"
                      "workload:\n  steps: [{prefill: [2048]}, {decode: [2049, 2049]}]\n";
    const char *pp1 = "name: dsv3-tp8\nmodel: deepseek-v3\nhardware: h200\n"
                      "parallel: {tensor_parallel_size: 8}\n"
                      "engine: {max_model_len: 16384}\n"
                      "workload:\n  steps: [{prefill: [2048]}, {decode: [2049, 2049]}]\n";
    cr_assert_eq(run_and_get(dir, pp2, "SELECT exit_code FROM runs"), 0);
    cr_assert_eq(run_and_get(dir, pp2, "SELECT count(*) FROM groups WHERE name LIKE 'pp%'"), 8);
    for (int r = 0; r < 8; r++) {
        g_autofree char *q = g_strdup_printf(
            "SELECT count(*) FROM groups WHERE name = 'pp%d' AND ranks = '[%d,%d]'", r, r, r + 8);
        cr_assert_eq(run_and_get(dir, pp2, q), 1, "pp%d", r);
    }
    /* two steps x two tensors, 2048 rows x 7168 / 8 elements in the prefill */
    cr_assert_eq(run_and_get(dir, pp2, "SELECT count(*) FROM ops WHERE rank = 3 AND kind = 'send'"),
                 4);
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM ops WHERE rank = 11 AND kind = 'recv' "
                             "AND name LIKE 'pp_recv_%'"),
                 4);
    /* each step's SchedulerOutput comes from the output rank, 8 (the first TP rank of the
     * last stage), to each of the other 15 workers */
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM ops WHERE rank = 8 AND name = "
                             "'scheduler_output' AND kind = 'send'"),
                 2 * 15);
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM ops WHERE rank = 3 AND name = "
                             "'scheduler_output' AND kind = 'recv'"),
                 2);
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM collectives WHERE rank = 3 AND kind = 'send' "
                             "AND count = 2048 * 7168 / 8"),
                 2);
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM ops WHERE rank = 11 AND name = "
                             "'embed'"),
                 0);
    cr_assert_eq(run_and_get(dir, pp2,
                             "SELECT count(*) FROM ops WHERE rank = 3 AND name = "
                             "'lm_head'"),
                 0);
    double w0 = run_and_get(dir, pp2,
                            "SELECT sum(bytes) FROM memory WHERE rank = 0 AND "
                            "component = 'weights'");
    double w8 = run_and_get(dir, pp2,
                            "SELECT sum(bytes) FROM memory WHERE rank = 8 AND "
                            "component = 'weights'");
    double full = run_and_get(dir, pp1,
                              "SELECT sum(bytes) FROM memory WHERE rank = 0 AND "
                              "component = 'weights'");
    cr_assert(w0 / full > 0.45 && w0 / full < 0.55, "stage 0 holds %.3f of a TP8 rank", w0 / full);
    cr_assert(w8 / full > 0.45 && w8 / full < 0.55, "stage 1 holds %.3f of a TP8 rank", w8 / full);
}

/* PP under the scheduler: requests served by a TP2 x PP2 Llama finish; every step waits for the
 * previous step's output (one batch in flight), and stage 1 runs layers 16-31. */
Test(serving, requests_on_a_pipeline)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: pp-serve\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "parallel: {tensor_parallel_size: 2, pipeline_parallel_size: 2}\n"
                     "engine: {max_model_len: 4096}\n"
                     "workload:\n  requests: [{prompt: 600, output: 5}, {prompt: 300, output: 3, "
                     "arrival_s: 0.001}]\n";
    cr_assert_eq(run_and_get(dir, sc,
                             "SELECT count(*) FROM requests WHERE finish_us IS NOT "
                             "NULL"),
                 2);
    cr_assert_eq(run_and_get(dir, sc,
                             "SELECT min(layer) FROM ops WHERE rank = 2 AND name = "
                             "'mlp'"),
                 16);
    /* the steps of the schedule follow one another, and the program's last op ends with the
     * last step */
    double gaps = run_and_get(dir, sc,
                              "SELECT count(*) FROM steps a JOIN steps b ON b.step = "
                              "a.step + 1 WHERE b.start_us < a.end_us");
    cr_assert_eq(gaps, 0);
    double last = run_and_get(dir, sc, "SELECT max(end_us) FROM steps");
    double sim = run_and_get(dir, sc, "SELECT sim_end_us FROM runs");
    cr_assert(fabs(sim - last) <= 0.02 * last, "run ends at %.1f us, the schedule at %.1f us", sim,
              last);
}

/* ---- per-rank decisions ---- */

static const char dsv3_dp_mtp[] =
    "name: dsv3-dp-mtp\nmodel: deepseek-v3\nhardware: h200\n"
    "parallel: {tensor_parallel_size: 4, data_parallel_size: 2, enable_expert_parallel: true}\n"
    "engine: {max_model_len: 8192, speculative_config: {method: mtp, num_speculative_tokens: 3}"
    "%s}\n"
    "workload:\n  steps:\n"
    "    - per_dp_rank: [{decode: [4000, 4000]}, {decode: [%u]%s}]\n"
    "    - per_dp_rank: [{decode: [4004, 4004]}, {}]\n";

/* The drafter: every DP rank runs it (healthy; its MoE layer is numbered 61, after DeepSeek-V3's
 * 61 decoder layers, and dispatches over EP); vLLM before PR #40589 skips it on the DP rank
 * whose longest sequence + 3 exceeds max_model_len, and the run hangs; a scenario can make one
 * rank skip it with `drafter: false`. */
Test(serving, the_drafter_runs_on_every_dp_rank_unless_one_skips_it)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *ok = g_strdup_printf(dsv3_dp_mtp, "", 8190u, "");
    cr_assert_eq(run_and_get(dir, ok, "SELECT exit_code FROM runs"), 0);
    /* 2 steps x 3 drafts x (dispatch + combine) of the MTP layer, on either DP rank */
    cr_assert_eq(run_and_get(dir, ok,
                             "SELECT count(*) FROM ops WHERE rank = 0 AND layer = 61 "
                             "AND name = 'ep_dispatch_all_gather'"),
                 6);
    cr_assert_eq(run_and_get(dir, ok,
                             "SELECT count(*) FROM ops WHERE rank = 4 AND layer = 61 "
                             "AND name = 'ep_dispatch_all_gather'"),
                 6);
    /* a decoding sequence brings 1 + 3 rows: 2 sequences, 8 rows into the first layer */
    cr_assert_eq(run_and_get(dir, ok,
                             "SELECT tokens FROM ops WHERE rank = 0 AND name = "
                             "'input_layernorm' ORDER BY idx LIMIT 1"),
                 8);
    struct {
        const char *engine, *batch;
        uint32_t ctx;
        int code;
    } cases[] = {
        {", vllm_without: [40589]", "", 8190, 3}, /* 8190 + 3 > 8192: skipped */
        {", vllm_without: [40589]", "", 8189, 0}, /* 8189 + 3 fits */
        {"", ", drafter: false", 4000, 3},        /* the scenario's decision */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *sc =
            g_strdup_printf(dsv3_dp_mtp, cases[i].engine, cases[i].ctx, cases[i].batch);
        cr_assert_eq(run_and_get_code(dir, sc,
                                      "SELECT count(*) FROM diagnostics WHERE kind = "
                                      "'deadlock'",
                                      cases[i].code),
                     cases[i].code ? 1 : 0, "case %zu", i);
    }
}

/* `dummy: false` belongs on an idle DP rank's batch only. */
Test(serving, dummy_false_needs_an_idle_batch)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *path = write_file(
        dir, "d.yaml",
        "name: d\nmodel: qwen3-30b-a3b\nhardware: h100\n"
        "parallel: {data_parallel_size: 2, enable_expert_parallel: true}\n"
        "workload:\n  steps:\n    - per_dp_rank: [{decode: [10]}, {decode: [10], dummy: false}]\n");
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result r = ranksim((const char *[]){"run", path, "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "d.yaml:7: key 'dummy': only an idle DP rank runs a dummy batch"), "%s",
              r.err);
    result_clear(&r);
}

/* Every compute op says what bounds it: a long prefill's attention and MLP are compute-bound,
 * a small decode's linears memory-bound, its norms launch-bound. */
Test(serving, ops_record_what_bounds_them)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: b\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "engine: {max_model_len: 8192}\n"
                     "workload:\n  steps: [{prefill: [8192]}, {decode: [8192, 8192]}]\n";
    const char *q = "SELECT count(*) FROM ops o JOIN ops p ON p.run_id = o.run_id AND p.rank = 0 "
                    "AND p.name = o.name AND p.idx > o.idx WHERE o.rank = 0 AND o.layer = 0 AND "
                    "o.name = '%s' AND o.bound = '%s' AND p.layer = 0 AND p.bound = '%s'";
    struct {
        const char *op, *prefill, *decode;
    } want[] = {{"attention", "compute", "memory"},
                {"mlp", "compute", "memory"},
                {"input_layernorm", "memory", "launch"}};
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *sql = g_strdup_printf(q, want[i].op, want[i].prefill, want[i].decode);
        cr_assert_eq(run_and_get(dir, sc, sql), 1, "%s: %s in the prefill, %s in the decode",
                     want[i].op, want[i].prefill, want[i].decode);
    }
    cr_assert_eq(run_and_get(dir, sc,
                             "SELECT count(*) FROM ops WHERE kind = 'compute' AND "
                             "bound IS NULL"),
                 0);
    cr_assert_eq(run_and_get(dir, sc,
                             "SELECT count(*) FROM ops WHERE kind != 'compute' AND "
                             "bound IS NOT NULL"),
                 0);
}

/* ---- prefix caching ---- */

static const char prefix_sc[] =
    "name: sys-prompt\nmodel: llama-3.1-8b\nhardware: h100\n"
    "engine: {max_model_len: 4096%s}\n"
    "workload:\n  requests:\n"
    "    - {prompt: 2200, output: 4, prefix_id: 7, prefix: 2000}\n"
    "    - {prompt: 2300, output: 4, prefix_id: 7, prefix: 2000, arrival_s: 1}\n"
    "    - {prompt: 2100, output: 4, prefix_id: 7, prefix: 2000, arrival_s: 2}\n"
    "    - {prompt: 2100, output: 4, arrival_s: 3}\n";

/* vLLM V1 caches full blocks and a later request with the same prefix starts past them: the
 * second and third requests find the 2,000-token system prompt (125 blocks of 16) cached and
 * prefill only the rest; a request without the prefix, or the same run with
 * --no-enable-prefix-caching, computes everything. */
Test(serving, a_shared_prefix_is_computed_once)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *on = g_strdup_printf(prefix_sc, "");
    g_autofree char *off = g_strdup_printf(prefix_sc, ", enable_prefix_caching: false");
    cr_assert_eq(run_and_get(dir, on, "SELECT sum(cached_tokens) FROM requests"), 4000);
    cr_assert_eq(run_and_get(dir, on, "SELECT cached_tokens FROM requests WHERE id = 1"), 2000);
    cr_assert_eq(run_and_get(dir, on, "SELECT cached_tokens FROM requests WHERE id = 3"), 0);
    cr_assert_eq(run_and_get(dir, off, "SELECT sum(cached_tokens) FROM requests"), 0);
    double prefilled_on = run_and_get(dir, on, "SELECT sum(prefill_tokens) FROM steps");
    double prefilled_off = run_and_get(dir, off, "SELECT sum(prefill_tokens) FROM steps");
    cr_assert_eq(prefilled_off - prefilled_on, 4000);
    double ttft_on = run_and_get(dir, on,
                                 "SELECT first_token_us - arrival_us FROM requests "
                                 "WHERE id = 1");
    double ttft_off = run_and_get(dir, off,
                                  "SELECT first_token_us - arrival_us FROM requests "
                                  "WHERE id = 1");
    cr_assert_lt(ttft_on, ttft_off / 3, "TTFT %.0f us with the cache, %.0f without", ttft_on,
                 ttft_off);
}

/* A cached prefix nobody references is evicted when the pool needs its blocks: with 300 blocks
 * the second request of another prefix pushes the first prefix out, and its third user
 * recomputes it. */
Test(serving, an_unreferenced_prefix_is_evicted_under_pressure)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: evict\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "engine: {max_model_len: 4096, num_gpu_blocks_override: 300}\n"
                     "workload:\n  requests:\n"
                     "    - {prompt: 2200, output: 2, prefix_id: 1, prefix: 2000}\n"
                     "    - {prompt: 3000, output: 2, prefix_id: 2, prefix: 2800, arrival_s: 1}\n"
                     "    - {prompt: 2200, output: 2, prefix_id: 1, prefix: 2000, arrival_s: 2}\n";
    cr_assert_eq(run_and_get(dir, sc, "SELECT cached_tokens FROM requests WHERE id = 2"), 0);
    const char *roomy = "name: roomy\nmodel: llama-3.1-8b\nhardware: h100\n"
                        "engine: {max_model_len: 4096}\n"
                        "workload:\n  requests:\n"
                        "    - {prompt: 2200, output: 2, prefix_id: 1, prefix: 2000}\n"
                        "    - {prompt: 3000, output: 2, prefix_id: 2, prefix: 2800, arrival_s: "
                        "1}\n"
                        "    - {prompt: 2200, output: 2, prefix_id: 1, prefix: 2000, arrival_s: "
                        "2}\n";
    cr_assert_eq(run_and_get(dir, roomy, "SELECT cached_tokens FROM requests WHERE id = 2"), 2000);
}

/* Single-request decode against vLLM's measured TPOT (doc/validation.md, "Decode time per
 * token"): Llama-3.1-8B, 1,024 + 128 tokens, 13.3 ms per token on an A100-40GB (vLLM 0.23.0)
 * and 6.48 ms on an H100 (vLLM 0.21.0); ranksim within 10 %. */
Test(serving, single_request_decode_time_matches_vllm_measurements)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    struct {
        const char *hw;
        double tpot_ms;
    } real[] = {{"a100-40gb", 13.3}, {"h100", 6.48}};
    for (size_t i = 0; i < G_N_ELEMENTS(real); i++) {
        g_autofree char *sc = g_strdup_printf(
            "name: c1\nmodel: llama-3.1-8b\nhardware: %s\n"
            "workload:\n  requests: [{prompt: 1024, output: 128}, {prompt: 1024, output: 128, "
            "arrival_s: 10}]\n",
            real[i].hw);
        double tpot = run_and_get(dir, sc,
                                  "SELECT (finish_us - first_token_us) / 127e3 FROM "
                                  "requests WHERE id = 0");
        cr_assert(fabs(tpot / real[i].tpot_ms - 1) < 0.10, "%s: TPOT %.2f ms, vLLM %.2f ms",
                  real[i].hw, tpot, real[i].tpot_ms);
    }
}

/* PP keeps up to PP batches in flight (vLLM's batch queue, step_with_batch_queue): with two
 * long prompts chunked at a 2,048-token budget, the next chunk is scheduled while the one
 * before is still on the second stage, so steps overlap in time; the program's time line,
 * every step simulated together, ends where the schedule does. */
Test(serving, pipeline_stages_work_on_batches_in_flight)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    const char *sc = "name: pp-queue\nmodel: llama-3.1-8b\nhardware: h100\n"
                     "parallel: {tensor_parallel_size: 2, pipeline_parallel_size: 2}\n"
                     "engine: {max_model_len: 16384, max_num_batched_tokens: 2048}\n"
                     "workload:\n  requests:\n"
                     "    - {prompt: 8192, output: 4}\n"
                     "    - {prompt: 8192, output: 4}\n"
                     "    - {prompt: 300, output: 16, arrival_s: 0.05}\n";
    double overlaps = run_and_get(dir, sc,
                                  "SELECT count(*) FROM steps a JOIN steps b ON "
                                  "b.step = a.step + 1 WHERE b.start_us < a.end_us");
    cr_assert_gt(overlaps, 4);
    double last = run_and_get(dir, sc, "SELECT max(end_us) FROM steps");
    double sim = run_and_get(dir, sc, "SELECT sim_end_us FROM runs");
    cr_assert(fabs(sim - last) <= 0.02 * last, "run ends at %.1f us, the schedule at %.1f us", sim,
              last);
    cr_assert_eq(run_and_get(dir, sc,
                             "SELECT count(*) FROM requests WHERE finish_us IS NOT "
                             "NULL"),
                 3);
    /* never the same decode twice in flight: a request's steps sample one token each */
    cr_assert_eq(run_and_get(dir, sc, "SELECT sum(generated) FROM requests"), 24);
}

/* workload.max_concurrency (vllm bench serve --max-concurrency) through `ranksim run`: with 2,
 * no step carries more than 2 sequences and no two requests overlap beyond 2; the flag replaces
 * the key; on a workload of steps both are refused (exit 2) naming what they apply to. */
Test(serving, max_concurrency_limits_the_requests_in_flight)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-serve-XXXXXX", NULL);
    g_autofree char *path =
        write_file(dir, "s.yaml",
                   "name: closed\nmodel: llama-3.1-8b\nhardware: h100\n"
                   "engine: {max_model_len: 4096}\n"
                   "workload:\n  poisson: {count: 6, rate_per_s: inf, prompt: 300, output: 5}\n"
                   "  max_concurrency: 2\n");
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    Result a = ranksim((const char *[]){"run", path, "--db", db, "-q", NULL});
    cr_assert_eq(a.code, 0, "%s", a.err);
    result_clear(&a);
    cr_assert_eq(db_double(db, "SELECT max(seqs) FROM steps WHERE run_id = 1"), 2);
    cr_assert_eq(db_double(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND generated = 5"),
                 6);
    /* at every request's arrival, at most 2 are in flight */
    cr_assert_leq(db_double(db, "SELECT max((SELECT count(*) FROM requests q WHERE q.run_id = 1 "
                                "AND q.arrival_us <= r.arrival_us AND q.finish_us > "
                                "r.arrival_us)) FROM requests r WHERE r.run_id = 1"),
                  2);
    Result b =
        ranksim((const char *[]){"run", path, "--db", db, "-q", "--max-concurrency", "6", NULL});
    cr_assert_eq(b.code, 0, "%s", b.err);
    result_clear(&b);
    cr_assert_eq(db_double(db, "SELECT max(seqs) FROM steps WHERE run_id = 2"), 6);
    g_autofree char *steps = write_file(dir, "t.yaml",
                                        "name: steps\nmodel: llama-3.1-8b\nhardware: h100\n"
                                        "workload:\n  steps: [{decode: [100]}]\n"
                                        "  max_concurrency: 2\n");
    Result c = ranksim((const char *[]){"run", steps, "--db", db, "-q", NULL});
    cr_assert_eq(c.code, 2);
    cr_assert(strstr(c.err, "max_concurrency") && strstr(c.err, "workload of requests"), "%s",
              c.err);
    result_clear(&c);
    Result d =
        ranksim((const char *[]){"run", path, "--db", db, "-q", "--max-concurrency", "0", NULL});
    cr_assert_eq(d.code, 2, "%s", d.err);
    result_clear(&d);
}
