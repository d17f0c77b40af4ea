/* tests/src/run/test-sweep-shard.c — the slices of `sweep --shard K/N` (src/run/sweep-shard.h):
 * every variant in exactly one shard, contiguous and balanced, in the unsharded order; --shard
 * parsing; the shard from Slurm array and Kubernetes Indexed Job variables, and the errors
 * that say what to pass. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/run/sweep-shard.h"

static const SweepShardEnv no_env = {0};

/* Every n and N up to 40: shards 0..N-1 cover [0, n) in order, each index once, sizes within
 * one of each other. */
Test(sweep_shard, slices_cover_every_variant_once_in_order)
{
    for (guint n = 0; n <= 40; n++)
        for (guint count = 1; count <= 40; count++) {
            guint next = 0, smallest = G_MAXUINT, largest = 0;
            for (guint k = 0; k < count; k++) {
                SweepShard s = {.index = k, .count = count, .source = "--shard"};
                guint lo = 0, hi = 0;
                sweep_shard_range(&s, n, &lo, &hi);
                cr_assert_eq(lo, next, "n %u, shard %u/%u starts at %u, not %u", n, k + 1, count,
                             lo, next);
                cr_assert_leq(lo, hi);
                next = hi;
                smallest = MIN(smallest, hi - lo);
                largest = MAX(largest, hi - lo);
            }
            cr_assert_eq(next, n, "n %u in %u shards ends at %u", n, count, next);
            cr_assert_leq(largest - smallest, 1, "n %u in %u shards: sizes %u..%u", n, count,
                          smallest, largest);
        }
}

Test(sweep_shard, readme_sweep_in_three)
{
    guint want[3][2] = {{0, 3}, {3, 6}, {6, 9}};
    for (guint k = 0; k < 3; k++) {
        SweepShard s = {.index = k, .count = 3};
        guint lo, hi;
        sweep_shard_range(&s, 9, &lo, &hi);
        cr_assert(lo == want[k][0] && hi == want[k][1], "shard %u/3: [%u, %u)", k + 1, lo, hi);
    }
    /* one shard is the whole sweep */
    SweepShard whole = {.index = 0, .count = 1};
    guint lo, hi;
    sweep_shard_range(&whole, 1000000, &lo, &hi);
    cr_assert(lo == 0 && hi == 1000000);
}

Test(sweep_shard, parse_valid)
{
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert(sweep_shard_parse("2/3", &s, &err));
    cr_assert(s.index == 1 && s.count == 3 && strcmp(s.source, "--shard") == 0);
    cr_assert(sweep_shard_parse("1/1", &s, &err));
    cr_assert(s.index == 0 && s.count == 1);
    cr_assert(sweep_shard_parse("1000000/1000000", &s, &err));
}

Test(sweep_shard, parse_invalid_names_the_flag)
{
    const char *bad[] = {"0/3", "4/3", "a/b", "3", "1/0", "-1/3", "+1/3", "1/3x", "/3", "1/",
                         " 1/3", "1/1000001", "", "1//3"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        SweepShard s;
        g_autoptr(GError) err = NULL;
        cr_assert_not(sweep_shard_parse(bad[i], &s, &err), "'%s' accepted", bad[i]);
        cr_assert(err && strstr(err->message, "--shard") && strstr(err->message, "K/N") &&
                      !strchr(err->message, '\n'),
                  "'%s': %s", bad[i], err ? err->message : "no error");
    }
}

Test(sweep_shard, no_flag_no_environment_is_the_whole_sweep)
{
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert(sweep_shard_resolve(NULL, 0, &no_env, &s, &err));
    cr_assert(s.index == 0 && s.count == 1 && s.source == NULL);
}

Test(sweep_shard, flag_wins_over_environment)
{
    SweepShardEnv env = {.slurm_task_id = "2", .slurm_task_count = "4", .k8s_index = "1"};
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert(sweep_shard_resolve("1/2", 0, &env, &s, &err));
    cr_assert(s.index == 0 && s.count == 2);
}

Test(sweep_shard, slurm_ids_made_zero_based)
{
    /* --array=0-3: ids 0..3 */
    SweepShardEnv env = {.slurm_task_id = "3", .slurm_task_count = "4"};
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert(sweep_shard_resolve(NULL, 0, &env, &s, &err), "%s", err ? err->message : "");
    cr_assert(s.index == 3 && s.count == 4 && strcmp(s.source, "SLURM_ARRAY_TASK_ID") == 0);
    /* --array=1-4: id 1 is the first shard */
    env = (SweepShardEnv){.slurm_task_id = "1", .slurm_task_count = "4", .slurm_task_min = "1"};
    cr_assert(sweep_shard_resolve(NULL, 0, &env, &s, &err));
    cr_assert_eq(s.index, 0);
    /* --array=10-16:2: ids 10, 12, 14, 16 */
    env = (SweepShardEnv){.slurm_task_id = "14", .slurm_task_count = "4",
                          .slurm_task_min = "10", .slurm_task_step = "2"};
    cr_assert(sweep_shard_resolve(NULL, 0, &env, &s, &err));
    cr_assert(s.index == 2 && s.count == 4);
}

Test(sweep_shard, slurm_outside_its_count_is_refused)
{
    const SweepShardEnv bad[] = {
        {.slurm_task_id = "4", .slurm_task_count = "4"},                        /* 1-4, no MIN */
        {.slurm_task_id = "3"},                                                 /* no count */
        {.slurm_task_id = "0", .slurm_task_count = "4", .slurm_task_min = "1"}, /* below MIN */
        {.slurm_task_id = "13", .slurm_task_count = "4", .slurm_task_min = "10",
         .slurm_task_step = "2"},                                               /* off step */
        {.slurm_task_id = "x", .slurm_task_count = "4"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        SweepShard s;
        g_autoptr(GError) err = NULL;
        cr_assert_not(sweep_shard_resolve(NULL, 0, &bad[i], &s, &err), "case %zu accepted", i);
        cr_assert(strstr(err->message, "SLURM_ARRAY_TASK_ID") && strstr(err->message, "--shard"),
                  "%s", err->message);
    }
}

Test(sweep_shard, kubernetes_index_with_count)
{
    SweepShardEnv env = {.k8s_index = "2"};
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert(sweep_shard_resolve(NULL, 3, &env, &s, &err));
    cr_assert(s.index == 2 && s.count == 3 && strcmp(s.source, "JOB_COMPLETION_INDEX") == 0);
}

Test(sweep_shard, kubernetes_errors_say_what_to_pass)
{
    SweepShardEnv env = {.k8s_index = "2"};
    SweepShard s;
    g_autoptr(GError) err = NULL;
    cr_assert_not(sweep_shard_resolve(NULL, 0, &env, &s, &err));
    cr_assert(strstr(err->message, "--shard-count"), "%s", err->message);
    g_clear_error(&err);
    cr_assert_not(sweep_shard_resolve(NULL, 2, &env, &s, &err)); /* index 2 of 2 */
    cr_assert(strstr(err->message, "0..1"), "%s", err->message);
    g_clear_error(&err);
    cr_assert_not(sweep_shard_resolve(NULL, 3, &no_env, &s, &err)); /* count alone */
    cr_assert(strstr(err->message, "JOB_COMPLETION_INDEX"), "%s", err->message);
}
