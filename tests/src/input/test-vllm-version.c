/* tests/src/input/test-vllm-version.c — choosing a vLLM: engine.vllm_version and engine.vllm_without
 * against the version table, and the first mechanism it switches: the FlashInfer sparse-MLA
 * softmax-stats slab of vLLM before PR #50791 (issue #50781). For 64 gathered heads (GLM-5.2,
 * TP4 with DCP4) the crash length is computed: 3,000 tokens fit, 3,300 do not; with the PR
 * both run. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "../run-binary.h"

static char *tmpdir(void)
{
    return g_dir_make_tmp("ranksim-vllm-XXXXXX", NULL);
}

/* The seed-004 TP4/DCP4 FLASHINFER_MLA_SPARSE scenario with one prompt of `tokens`. */
static char *scenario(const char *dir, unsigned tokens)
{
    g_autofree char *text = g_strdup_printf(
        "name: slab-%u\nmodel: glm-5.2\nhardware: b200\n"
        "parallel: {tensor_parallel_size: 4, decode_context_parallel_size: 4,"
        " enable_expert_parallel: true}\n"
        "engine: {attention_backend: FLASHINFER_MLA_SPARSE, quantization: nvfp4,"
        " kv_cache_dtype: fp8, max_num_batched_tokens: 4096, max_model_len: 8192}\n"
        "workload:\n  steps:\n    - {prefill: [%u]}\n",
        tokens, tokens);
    g_autofree char *name = g_strdup_printf("slab-%u.yaml", tokens);
    char *path = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static Result run(const char *path, const char *db, const char *set)
{
    const char *args[] = {"run", path, "--db", db, "--json", set ? "--set" : NULL, set, NULL};
    return ranksim(args);
}

Test(vllm_version, slab_crash_length_is_computed)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_autofree char *fits = scenario(dir, 3000);
    g_autofree char *over = scenario(dir, 3300);
    /* vLLM main: the workspace is sized and preallocated, both run. */
    Result r = run(fits, db, NULL);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    result_clear(&r);
    r = run(over, db, NULL);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    result_clear(&r);
    /* Before PR 50791 (or 55879, through which it landed): 3,000 fit, 3,300 crash every DCP
     * worker. */
    for (int k = 0; k < 2; k++) {
        const char *set = k ? "engine.vllm_without=[55879]" : "engine.vllm_without=[50791]";
        r = run(fits, db, set);
        cr_assert_eq(r.code, 0, "%s: %s%s", set, r.out, r.err);
        result_clear(&r);
        r = run(over, db, set);
        cr_assert_eq(r.code, 3, "%s: %s%s", set, r.out, r.err);
        cr_assert_not_null(strstr(r.out, "\"max_tokens\" : 3080"), "%s", r.out);
        cr_assert_not_null(strstr(r.out, "\"ranks\" : \"0-3\""), "%s", r.out);
        cr_assert_not_null(strstr(r.out, "vLLM issue #50781"), "%s", r.out);
        result_clear(&r);
    }
    /* The memory plan follows: the fixed 394 MiB buffer without the PR, the sized one with it. */
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT bytes FROM memory_items WHERE rank = 0 AND name = "
                                    "'flashinfer.trtllm_sparse_mla_workspace' ORDER BY run_id",
                                    -1, &st, NULL),
                 SQLITE_OK);
    int64_t sizes[6];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 6)
        sizes[n++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    cr_assert_eq(n, 6);
    cr_assert_gt(sizes[0], 394LL << 20);
    cr_assert_eq(sizes[2], 394LL << 20);
}

Test(vllm_version, unknown_pr_and_version_are_refused)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_autofree char *path = scenario(dir, 1000);
    Result r = run(path, db, "engine.vllm_without=[12345]");
    cr_assert_eq(r.code, 2);
    cr_assert_not_null(strstr(r.err, "PR 12345 is not in ranksim's vLLM version table"), "%s",
                       r.err);
    cr_assert_not_null(strstr(r.err, "50791"), "%s", r.err);
    result_clear(&r);
    /* release tags from 0.10.0 to the newest the table lists (issue 25), and main */
    const char *bad[] = {"engine.vllm_version=0.9.2", "engine.vllm_version=1.0.0",
                         "engine.vllm_version=0.19.x"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        r = run(path, db, bad[i]);
        cr_assert_eq(r.code, 2, "%s", bad[i]);
        cr_assert_not_null(strstr(r.err, "valid: a release tag from 0.10.0 to"), "%s", r.err);
        result_clear(&r);
    }
    const char *good[] = {"engine.vllm_version=main", "engine.vllm_version=v0.11.0",
                          "engine.vllm_version=0.10.1.1", "engine.vllm_version=0.19"};
    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        r = run(path, db, good[i]);
        cr_assert_eq(r.code, 0, "%s: %s", good[i], r.err);
        result_clear(&r);
    }
}

/* A release lacks every PR the table dates after it: vLLM 0.19.0 predates PR 55879 (the sized
 * sparse-MLA workspace, dated 0.27.0), so 3,300 tokens crash as with vllm_without [55879]. */
Test(vllm_version, a_release_lacks_the_later_prs)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_autofree char *over = scenario(dir, 3300);
    Result r = run(over, db, "engine.vllm_version=0.19.0");
    cr_assert_neq(r.code, 0, "%s", r.out);
    cr_assert_neq(r.code, 2, "%s", r.err);
    result_clear(&r);
    r = run(over, db, "engine.vllm_version=main");
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    result_clear(&r);
}

Test(vllm_version, a_pr_without_runtime_change_is_said)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    g_autofree char *path = scenario(dir, 1000);
    Result r = run(path, db, "engine.vllm_without=[40996,56677]");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_null(strstr(r.out, "not modelled yet"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "changes no runtime behaviour"), "%s", r.out);
    result_clear(&r);
}

/* Before PR 55879's empty branch, a decode step whose sequences leave a DCP rank without a
 * local KV token crashes exactly that rank (contexts of 2 tokens, DCP 4, interleave 1: ranks 2
 * and 3 hold nothing); with it the step is healthy. */
Test(vllm_version, empty_dcp_shard_crashes_exactly_the_empty_ranks)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *path = SCN("glm52-tp4-dcp4-empty-shard-decode.yaml");
    Result r = run(path, db, NULL);
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    r = run(path, db, "engine.vllm_without=[55879]");
    cr_assert_eq(r.code, 3, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "\"mechanism\" : \"dcp_empty_shard\""), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\"ranks\" : \"2-3\""), "%s", r.out);
    result_clear(&r);
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h,
                                    "SELECT group_concat(rank || ':' || state) FROM ranks WHERE "
                                    "run_id = 2",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    g_autofree char *states = g_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    cr_assert_str_eq(states, "0:blocked,1:blocked,2:crashed,3:crashed");
}
