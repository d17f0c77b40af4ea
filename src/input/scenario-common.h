/* src/input/scenario-common.h — the scenario loader's helper library: the loader state, the
 * limits, the top-level key lists and the helpers every kind and part of a scenario uses.
 *
 * The loader is built in layers, each a module that uses only those below it (nobody calls back
 * up):
 *   scenario.c           entry points: read the text, apply --set, dispatch by kind
 *   scenario-eval.c      vLLM eval configs (model_name + server_args), through src/input/vllm-args
 *   scenario-model.c     kind: model — model:, parallel:, engine:, workload:, then the program
 *   scenario-program.c   kind: program — ranks, groups, programs, ops, repeat
 *   scenario-requests.c  workloads of requests (requests, trace, poisson, --requests)
 *   scenario-settings.c  the run settings after the program (algorithms ... faults, validation)
 *   scenario-faults.c    faults: (rank faults and link faults)
 *   scenario-hardware.c  hardware:, nodes:, collective_algorithm:
 *   scenario-common.c    this library
 *   scenario-types.c     the Scenario it fills; scenario-error.c its error domain
 * Only the loader's modules include this header; the public interface is src/input/scenario.h.
 *
 * Every function here that returns bool fails by setting ld->doc.error (one GError in
 * SCENARIO_ERROR) and returning false; callers return at once, so an error is never set twice.
 */
#ifndef SRC_SCENARIO_COMMON_H
#define SRC_SCENARIO_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "input-limits.h"
#include "scenario-error.h"
#include "scenario-types.h"
#include "yamldoc.h"

/* ---- loader state ---- */

typedef struct {
    YamlDoc doc;                  /* file name and the load's error */
    const char *path;             /* the scenario's path, for files relative to it */
    const ScenarioExtras *extras; /* command-line additions; never NULL (may be all empty) */
    SchedProgram *prog;           /* being built; NULL until `ranks` is known */
    uint32_t n_ranks;
    uint32_t *stamp; /* per rank, for duplicate detection; compared with stamp_gen */
    uint32_t stamp_gen;
    bool merge_refused; /* --vary workload.prefill/decode met requests: refused after serving */
    const YamlDocNode *calibration; /* hardware.calibration (a path or a list), or NULL */
    GPtrArray *notes; /* char*: approximations met while reading (a request trace's estimated
                         tokens, skipped rows), moved into Scenario.ignored_flags by
                         scenario_keep_requests; owned, NULL until one is made */
} Loader;

/* ---- top-level keys (scenario-common.c), NULL-terminated ---- */

extern const char *const scenario_program_keys[];      /* valid for kind: program */
extern const char *const scenario_model_keys[];        /* valid for kind: model */
extern const char *const scenario_program_only_keys[]; /* ranks, groups, programs */

/* ---- shared helpers (scenario-common.c) ---- */

/* Whether NULL-terminated `list` holds `s`. */
bool scenario_in_list(const char *const *list, const char *s);

/* Sets the load's error "FILE: WHAT: MESSAGE" for a problem with a command-line extra, which
 * has no line; WHAT names the flag ("--hardware h1000"). Always returns false. */
bool scenario_extras_fail(Loader *ld, int code, const char *what, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* Records a setting that was given but is not simulated (Scenario.ignored_flags). */
void scenario_note_ignored(Scenario *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Records a command-line extra that replaces part of the file (Scenario.override_notes). */
void scenario_note_override(Scenario *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Whether the command line gives --prefill or --decode. */
bool scenario_extras_have_workload(const ScenarioExtras *x);

/* `p` relative to the scenario's folder (as given when absolute or the folder is "."). Caller
 * frees. */
char *scenario_resolve_path(const Loader *ld, const char *p);

/* A number of seconds in 0..MAX_SECONDS at `n` into nanoseconds. */
bool scenario_seconds_to_ns(Loader *ld, const YamlDocNode *n, const char *key, int64_t *out);

/* An optional integer `key` of mapping `m` in [min, max] into *out (untouched when absent). */
bool scenario_get_u32(Loader *ld, const YamlDocNode *m, const char *key, int64_t min, int64_t max,
                      uint32_t *out);

/* An optional boolean `key` of mapping `m` into *out (untouched when absent). */
bool scenario_get_bool_opt(Loader *ld, const YamlDocNode *m, const char *key, bool *out);

/* `name:` and `description:`. */
bool scenario_load_identity(Loader *ld, const YamlDocNode *root, Scenario *s);

/* Keys of the other kind get a message that says which kind they belong to. */
bool scenario_reject_other_kind_keys(Loader *ld, const YamlDocNode *root, bool model);

#endif
