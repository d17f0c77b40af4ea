/* src/input/scenario-loader.h — PRIVATE to the scenario modules: the loader state and the helpers they
 * share. Nothing outside src/scenario*.c and src/input/vllm-args.c includes it; the public interface
 * is src/scenario.h.
 *
 * The modules, one job each (src/input/scenario.c describes the pipeline):
 *   scenario.c          entry points, reading the text, dispatch by kind, identity and run
 *                       settings, the helpers below
 *   scenario-program.c  kind: program — ranks, groups, programs, ops, repeat
 *   scenario-hardware.c hardware:, nodes:, collective_algorithm:
 *   scenario-faults.c   faults: (rank faults and link faults)
 *   scenario-model.c    kind: model — model:, parallel:, engine:, workload:, then plan, cost,
 *                       lowering and the layout check (scenario_finish_model)
 *   vllm-args.c         vLLM serve flags, and vLLM eval configs read through them
 *
 * Every function here that returns bool fails by setting ld->doc.error (one GError in
 * SCENARIO_ERROR) and returning false; callers return at once, so an error is never set twice.
 */
#ifndef SRC_SCENARIO_LOADER_H
#define SRC_SCENARIO_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "scenario.h"
#include "yamldoc.h"

/* ---- limits (doc/scenario-format.md lists them) ---- */

#define MAX_RANKS 1048576u
#define MAX_COUNT (UINT64_C(1) << 48)         /* elements; also tokens */
#define MAX_US 1e12                           /* compute duration, microseconds */
#define MAX_SECONDS 1e9                       /* timeouts, delays, crash times */
#define MAX_TIMES 10000000                    /* repeat iterations */
#define MAX_LAYER (INT64_C(1) << 30)          /* layer, layer_start */
#define MAX_FACTOR 1e6                        /* slowdown factor, link fault factor */
#define MAX_GROUP_MEMBERS (UINT64_C(1) << 24) /* summed over all groups */
#define MAX_SEQ_LEN 10000000                  /* prompt and context lengths; engine token limits */
#define MAX_BATCH_SEQS 1048576                /* sequences in one batch; max_num_seqs */
#define MAX_STEPS 1000000                     /* workload steps */
#define MAX_LAUNCH_US 1e6                     /* engine.launch_us */

/* ---- loader state ---- */

typedef struct {
    YamlDoc doc;                  /* file name and the load's error */
    const char *path;             /* the scenario's path, for files relative to it */
    const ScenarioExtras *extras; /* command-line additions; never NULL (may be all empty) */
    SchedProgram *prog;           /* being built; NULL until `ranks` is known */
    uint32_t n_ranks;
    uint32_t *stamp; /* per rank, for duplicate detection; compared with stamp_gen */
    uint32_t stamp_gen;
} Loader;

/* Where errors about one part of a model scenario point: a node (NULL: line 1) and a key. */
typedef struct {
    const YamlDocNode *at;
    const char *key;
} Spot;

/* What the settings start from before the file's `parallel:` and `engine:` apply: vLLM's
 * defaults for a model scenario, the server_args of an eval config. */
typedef struct {
    ModelParallel par;
    ModelEngine engine;
    ModelCostParams cost;
    Spot par_spot;    /* plan errors when the file has no `parallel:` */
    Spot engine_spot; /* lowering errors about the engine when the file has no `engine:` */
    bool eval;        /* an eval config: hardware must be named (no h100 default) */
} ModelSetup;

/* ---- top-level keys (scenario.c), NULL-terminated ---- */

extern const char *const scenario_program_keys[];      /* valid for kind: program */
extern const char *const scenario_model_keys[];        /* valid for kind: model */
extern const char *const scenario_program_only_keys[]; /* ranks, groups, programs */

/* ---- shared helpers (scenario.c) ---- */

/* Whether NULL-terminated `list` holds `s`. */
bool scenario_in_list(const char *const *list, const char *s);

/* Sets the load's error "FILE: WHAT: MESSAGE" for a problem with a command-line extra, which
 * has no line; WHAT names the flag ("--hardware h1000"). Always returns false. */
bool scenario_extras_fail(Loader *ld, int code, const char *what, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* Records a setting that was given but is not simulated (Scenario.ignored_flags). */
void scenario_note_ignored(Scenario *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

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

/* What follows the program: algorithms, contention, mismatch policy, watchdog, straggler
 * threshold, faults (op names checked against ld->prog), and the final consistency check.
 * `what` names the program's origin in the safety net's message. */
bool scenario_load_run_settings(Loader *ld, const YamlDocNode *root, Scenario *s, const char *what);

/* ---- kind: program (scenario-program.c) ---- */

bool scenario_interpret_program(Loader *ld, const YamlDocNode *root, Scenario *s);

/* ---- hardware, nodes, algorithms (scenario-hardware.c) ---- */

/* `hardware:` then `nodes:` (the node check needs the devices per node), for ld->n_ranks. */
bool scenario_load_placement(Loader *ld, const YamlDocNode *root, Scenario *s);
/* The nodes the run uses: `nodes:`, or the fewest that hold every rank. */
uint32_t scenario_effective_nodes(const Loader *ld, const Scenario *s);
/* `collective_algorithm:` into s->algo. */
bool scenario_load_algorithms(Loader *ld, const YamlDocNode *m, Scenario *s);

/* ---- faults (scenario-faults.c) ---- */

/* `faults:` (the list node) into s->faults and s->link_faults; needs ld->prog and the
 * placement. */
bool scenario_load_faults(Loader *ld, const YamlDocNode *list, Scenario *s);

/* ---- requests (scenario-requests.c) ---- */

/* Whether `workload:` (may be NULL) gives requests, a trace or poisson arrivals. */
bool scenario_workload_has_requests(const YamlDocNode *w);
/* workload.requests, .trace and .poisson appended to `out` (ModelRequest). */
bool scenario_load_requests(Loader *ld, const YamlDocNode *w, GArray *out);
/* A trace file (--requests FILE) appended to `out`. */
bool scenario_load_requests_file(Loader *ld, const char *path, GArray *out);
/* Serves `reqs` with vLLM's scheduler: s->workload becomes the scheduled steps, s->serve the
 * rows. Errors point at `at` / `key` (NULL `at`: a command-line flag named by `key`). Needs the
 * plan, engine, cost and placement. */
bool scenario_serve(Loader *ld, const YamlDocNode *root, const YamlDocNode *at, const char *key,
                    Scenario *s, const GArray *reqs);

/* ---- kind: model (scenario-model.c) ---- */

/* The built-in model presets, NULL-terminated. Caller frees (g_strfreev). */
char **scenario_model_presets(void);
/* Loads the config.json at `path` (a folder means its config.json) into s->arch. */
bool scenario_arch_from_file(Loader *ld, const YamlDocNode *at, const char *key, const char *path,
                             Scenario *s);
/* Loads model preset `name` into s->arch. */
bool scenario_arch_from_preset(Loader *ld, const YamlDocNode *at, const char *key, const char *name,
                               Scenario *s);
/* `model:`: a preset name, or a config.json path relative to the scenario's folder. */
bool scenario_load_arch(Loader *ld, const YamlDocNode *n, Scenario *s);
/* Everything after the architecture, shared by model scenarios and eval configs: the plan,
 * hardware and nodes for its world, engine and cost, workload, lowering, run settings. */
bool scenario_finish_model(Loader *ld, const YamlDocNode *root, Scenario *s, ModelSetup *ms);
bool scenario_interpret_model(Loader *ld, const YamlDocNode *root, Scenario *s);

/* ---- vLLM eval configs (vllm-args.c) ---- */

/* A file with a top-level `model_name`: read as a model scenario. */
bool scenario_interpret_eval(Loader *ld, const YamlDocNode *root, Scenario *s);

#endif
