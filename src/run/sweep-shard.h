/* src/run/sweep-shard.h — which slice of a sweep's variants this process runs (`sweep --shard
 * K/N`, a Slurm array task, a Kubernetes Indexed Job's pod), so a scheduler can spread one
 * sweep over many machines, each into its own database (merged after with `ranksim merge`).
 *
 * Slicing: shard k (0-based) of N runs the contiguous block of variant indices
 * [floor(k*n/N), floor((k+1)*n/N)): deterministic, disjoint, every index exactly once over
 * k = 0..N-1, sizes within one of each other. A variant keeps its index (so its label and
 * scenario are those of the unsharded sweep), and merging the shards in order gives the runs
 * the order of an unsharded `-j 1` sweep. Contiguous rather than round-robin for that order;
 * a sweep's cost varies along its first (slowest) axis, which contiguous blocks do not
 * balance — shards may then finish at different times.
 *
 * Pure functions: no I/O; the environment comes in as values (tests pass their own).
 */
#ifndef SRC_RUN_SWEEP_SHARD_H
#define SRC_RUN_SWEEP_SHARD_H

#include <glib.h>
#include <stdbool.h>

#define SWEEP_SHARD_ERROR (sweep_shard_error_quark())
GQuark sweep_shard_error_quark(void);

typedef enum {
    SWEEP_SHARD_ERROR_ARGUMENT, /* a malformed --shard / --shard-count, or an environment
                                   that names a task outside its count */
} SweepShardErrorCode;

/* Upper bound on N (a typo like --shard 1/30000000 is refused, not run as empty shards). */
#define SWEEP_SHARD_MAX 1000000

typedef struct {
    guint index; /* 0-based */
    guint count; /* N >= 1; 1: the whole sweep */
    const char *source; /* static: "--shard", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX" */
} SweepShard;

/* The environment variables the shard may come from (NULL: unset). */
typedef struct {
    const char *slurm_task_id;    /* SLURM_ARRAY_TASK_ID */
    const char *slurm_task_count; /* SLURM_ARRAY_TASK_COUNT */
    const char *slurm_task_min;   /* SLURM_ARRAY_TASK_MIN (the --array range's first id) */
    const char *slurm_task_step;  /* SLURM_ARRAY_TASK_STEP (--array=1-9:2) */
    const char *k8s_index;        /* JOB_COMPLETION_INDEX (0-based) */
} SweepShardEnv;

/* Reads the variables of SweepShardEnv from the process environment. */
void sweep_shard_env_get(SweepShardEnv *env);

/* Parses "K/N" (1 <= K <= N <= SWEEP_SHARD_MAX, decimal) into `out`. */
bool sweep_shard_parse(const char *spec, SweepShard *out, GError **error);

/* The shard of this process: `flag` (--shard, may be NULL) first, else a Slurm array task
 * (SLURM_ARRAY_TASK_ID and _COUNT; the id made 0-based with _MIN and _STEP when set), else a
 * Kubernetes Indexed Job (JOB_COMPLETION_INDEX with `count_flag`, --shard-count, 0 when not
 * given), else the whole sweep (index 0 of 1, source NULL). An environment that names a shard
 * but not how many (JOB_COMPLETION_INDEX without --shard-count, a task id without its count)
 * or one outside its count fails with a one-line error saying what to pass. */
bool sweep_shard_resolve(const char *flag, guint count_flag, const SweepShardEnv *env,
                         SweepShard *out, GError **error);

/* The variant indices [*lo, *hi) of shard `s` of a sweep of `n` variants. */
void sweep_shard_range(const SweepShard *s, guint n, guint *lo, guint *hi);

#endif
