/* src/run/sweep-shard.c — the slice of a sweep this process runs; see sweep-shard.h. */
#include "sweep-shard.h"

#include <string.h>

G_DEFINE_QUARK(ranksim-sweep-shard-error-quark, sweep_shard_error)

void sweep_shard_env_get(SweepShardEnv *env)
{
    *env = (SweepShardEnv){
        .slurm_task_id = g_getenv("SLURM_ARRAY_TASK_ID"),
        .slurm_task_count = g_getenv("SLURM_ARRAY_TASK_COUNT"),
        .slurm_task_min = g_getenv("SLURM_ARRAY_TASK_MIN"),
        .slurm_task_step = g_getenv("SLURM_ARRAY_TASK_STEP"),
        .k8s_index = g_getenv("JOB_COMPLETION_INDEX"),
    };
}

/* A decimal in [lo, hi] (no sign, no space); false otherwise. */
static bool parse_uint(const char *s, guint64 lo, guint64 hi, guint64 *out)
{
    return s && g_ascii_isdigit(s[0]) &&
           g_ascii_string_to_unsigned(s, 10, lo, hi, out, NULL);
}

bool sweep_shard_parse(const char *spec, SweepShard *out, GError **error)
{
    const char *slash = spec ? strchr(spec, '/') : NULL;
    guint64 k = 0, n = 0;
    g_autofree char *ks = slash ? g_strndup(spec, (gsize)(slash - spec)) : NULL;
    if (!slash || !parse_uint(slash + 1, 1, SWEEP_SHARD_MAX, &n) ||
        !parse_uint(ks, 1, n, &k)) {
        g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                    "--shard '%s': expected K/N, the K-th of N slices, with 1 <= K <= N <= %d "
                    "(e.g. --shard 1/3)",
                    spec ? spec : "", SWEEP_SHARD_MAX);
        return false;
    }
    *out = (SweepShard){.index = (guint)(k - 1), .count = (guint)n, .source = "--shard"};
    return true;
}

/* A Slurm array task: index (id - min) / step among count. */
static bool from_slurm(const SweepShardEnv *env, SweepShard *out, GError **error)
{
    guint64 id = 0, count = 0, min = 0, step = 1;
    if (!parse_uint(env->slurm_task_id, 0, G_MAXUINT32, &id) ||
        !parse_uint(env->slurm_task_count, 1, SWEEP_SHARD_MAX, &count) ||
        (env->slurm_task_min && !parse_uint(env->slurm_task_min, 0, G_MAXUINT32, &min)) ||
        (env->slurm_task_step && !parse_uint(env->slurm_task_step, 1, G_MAXUINT32, &step)) ||
        id < min || (id - min) % step != 0 || (id - min) / step >= count) {
        g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                    "SLURM_ARRAY_TASK_ID=%s with SLURM_ARRAY_TASK_COUNT=%s, _MIN=%s, _STEP=%s "
                    "names no shard (expected ids MIN, MIN+STEP, ... COUNT of them); pass "
                    "--shard K/N",
                    env->slurm_task_id, env->slurm_task_count ? env->slurm_task_count : "unset",
                    env->slurm_task_min ? env->slurm_task_min : "unset",
                    env->slurm_task_step ? env->slurm_task_step : "unset");
        return false;
    }
    *out = (SweepShard){.index = (guint)((id - min) / step),
                        .count = (guint)count,
                        .source = "SLURM_ARRAY_TASK_ID"};
    return true;
}

bool sweep_shard_resolve(const char *flag, guint count_flag, const SweepShardEnv *env,
                         SweepShard *out, GError **error)
{
    if (flag)
        return sweep_shard_parse(flag, out, error);
    if (count_flag > SWEEP_SHARD_MAX) {
        g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                    "--shard-count %u: expected 1..%d", count_flag, SWEEP_SHARD_MAX);
        return false;
    }
    if (env->slurm_task_id)
        return from_slurm(env, out, error);
    if (env->k8s_index) {
        guint64 k = 0;
        if (!count_flag) {
            g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                        "JOB_COMPLETION_INDEX=%s is set (a Kubernetes Indexed Job) but not how "
                        "many shards: pass --shard-count N (the Job's completions), or --shard "
                        "K/N",
                        env->k8s_index);
            return false;
        }
        if (!parse_uint(env->k8s_index, 0, count_flag - 1, &k)) {
            g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                        "JOB_COMPLETION_INDEX=%s: expected 0..%u for --shard-count %u",
                        env->k8s_index, count_flag - 1, count_flag);
            return false;
        }
        *out = (SweepShard){.index = (guint)k, .count = count_flag,
                            .source = "JOB_COMPLETION_INDEX"};
        return true;
    }
    if (count_flag) {
        g_set_error(error, SWEEP_SHARD_ERROR, SWEEP_SHARD_ERROR_ARGUMENT,
                    "--shard-count %u without JOB_COMPLETION_INDEX in the environment: outside "
                    "a Kubernetes Indexed Job pass --shard K/N",
                    count_flag);
        return false;
    }
    *out = (SweepShard){.index = 0, .count = 1, .source = NULL};
    return true;
}

void sweep_shard_range(const SweepShard *s, guint n, guint *lo, guint *hi)
{
    guint64 c = MAX(s->count, 1u);
    *lo = (guint)((guint64)s->index * n / c);
    *hi = (guint)(((guint64)s->index + 1) * n / c);
}
