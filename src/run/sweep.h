/* src/run/sweep.h — the variants of `ranksim sweep`: the --vary / --zip axes, their cross
 * product, and each variant's scenario, loaded the way `run` loads one (--set overrides and
 * --prefill/--decode extras through the scenario loader; the text is never edited). Prints
 * nothing: the command (src/cli/cmd-sweep.c) runs the variants on its thread pool, stores and
 * prints them.
 *
 * Axes: each --vary KEY=V1,V2,... is an axis of its own; the --zip keys together form one axis
 * (their i-th values go together). Variant i picks one value per key: the axes' cross product
 * with the first axis varying slowest. Two keys are special: workload.prefill=N,... and
 * workload.decode=B:CTX,... (the workload's batch); any other key is applied like --set.
 *
 * Threads: a SweepInputs is immutable once the sweep starts; sweep_variant_load and
 * sweep_variant_simulate only read it, so workers may call them in parallel.
 * Costs: the axes are O(keys x values); a variant costs one load of the scenario.
 */
#ifndef SRC_RUN_SWEEP_H
#define SRC_RUN_SWEEP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "runner.h"
#include "../input/scenario.h"

#define SWEEP_ERROR (sweep_error_quark())
GQuark sweep_error_quark(void);

typedef enum {
    SWEEP_ERROR_ARGUMENT,    /* a malformed --vary / --zip, or unequal --zip lists */
    SWEEP_ERROR_TOO_MANY,    /* more than SWEEP_MAX_VARIANTS variants */
    SWEEP_ERROR_UNKNOWN_KEY, /* a --vary key the scenario does not have (sweep_check_keys) */
} SweepErrorCode;

/* Upper bound that turns a mistake into a message instead of an hour-long sweep. */
#define SWEEP_MAX_VARIANTS 1000000

typedef enum {
    SWEEP_VARY_SET = 0, /* any dotted scenario key, applied like --set */
    SWEEP_VARY_PREFILL, /* workload.prefill: the prompt of N tokens */
    SWEEP_VARY_DECODE,  /* workload.decode: B sequences decoding at context CTX */
} SweepVaryKind;

/* One varied key. */
typedef struct {
    char *key;
    SweepVaryKind kind;
    GPtrArray *values; /* char*, as written (whitespace trimmed), at least one */
    bool zip;          /* a --zip key: advances with the other --zip keys, one axis */
} SweepVary;

/* What every variant starts from; borrowed, immutable while the sweep runs. */
typedef struct {
    const char *path;        /* the scenario's path (messages, display name) */
    const char *text;        /* its text, read once */
    const GPtrArray *varies; /* SweepVary*: the axes (sweep_axes_parse) */
    const char *const *sets; /* --set of every variant, NULL-terminated; may be NULL */
    const char *hardware;    /* --hardware, may be NULL */
    const char *const *perf_db; /* --perf-db, NULL-terminated; may be NULL */
    uint64_t max_rank_ops;   /* a variant beyond it is invalid (0: no limit) */
    GArray *flag_prefill;    /* --prefill / --decode (uint32), may be NULL; read only */
    GArray *flag_decode;
} SweepInputs;

/* The axes of `varies` then `zips` (NULL-terminated "KEY=V1,V2,..." each; either may be
 * NULL), values checked (a prompt length, BATCH:CONTEXT for the workload keys), and how many
 * variants they make in *n_variants. Returns the SweepVary* array (caller unrefs; it frees its
 * elements), or NULL with a SWEEP_ERROR naming the argument. */
GPtrArray *sweep_axes_parse(char **varies, char **zips, guint *n_variants, GError **error);

/* How many variants the axes make (0 when the --zip lists differ in length). */
guint64 sweep_variant_count(const GPtrArray *varies);

/* The value index of each key (`choice[k]` for varies[k]; `choice` holds varies->len) in
 * variant `i` (< sweep_variant_count). */
void sweep_variant_choice(const GPtrArray *varies, guint i, guint *choice);

/* Every SWEEP_VARY_SET key must be one the scenario has: each is tried alone with its first
 * value. Returns false with SWEEP_ERROR_UNKNOWN_KEY ("--vary KEY: <the loader's message, with
 * its suggestion>") for a key the loader does not know; a value the rules refuse is not an
 * error here (that variant is an invalid run). */
bool sweep_check_keys(const SweepInputs *in, GError **error);

/* Variant `index`'s label, "key1=v1, key2=v2" (every key, in axis order). Caller frees. */
char *sweep_variant_label(const SweepInputs *in, guint index);

/* Loads variant `index` as `run` would load the file with its options: the --set overrides
 * then one `--set KEY=VALUE` per varied key; a varied workload key with the other half of the
 * batch from --prefill/--decode. Varied alone, workload.prefill / workload.decode go into the
 * file's steps (ScenarioExtras.merge_workload); with --prefill/--decode, or a file without a
 * workload, the batch is one step that replaces the file's workload, like `run --prefill`.
 * The scenario's text is the file's plus two comment lines: "# ranksim sweep variant: LABEL"
 * and "# applied as: --set K=V ... --prefill N --decode B:CTX", so the stored run can be
 * reproduced from the database alone. Also refuses a scenario beyond max_rank_ops
 * (runner_check_work). Returns the scenario (caller frees), or NULL with the loader's
 * SCENARIO_ERROR (the variant is invalid). */
Scenario *sweep_variant_load(const SweepInputs *in, guint index, GError **error);

/* Simulates a variant's scenario, collecting its records (SchedRecord) into `records`.
 * Without `memory_detail` the memory plan keeps its components but not its tensor lists (a
 * sweep stores those only when asked: a row per rank and each distinct list's items, which a
 * sweep of small variants does not need). Never fails; caller frees. */
RunnerResult *sweep_variant_simulate(const Scenario *sc, SchedTimeline timeline, bool memory_detail,
                                     GArray *records);

#endif
