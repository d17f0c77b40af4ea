/* src/run/runner.h — one scenario from loaded to stored: the steps `run` and `sweep` share.
 *
 * runner_simulate() is pure computation on an immutable Scenario (safe to call from worker
 * threads on distinct or shared scenarios); the store functions must run on the thread that
 * owns the Store (one writer).
 */
#ifndef SRC_RUNNER_H
#define SRC_RUNNER_H

#include <glib.h>

#include "../../model/memory.h"
#include "../../sched/engine.h"
#include "../input/scenario.h"
#include "../store/store.h"

/* Makes a loaded scenario runnable: a request workload (sc->pending) is served with vLLM's
 * scheduler, which runs the engine on every scheduled step (`progress`, may be NULL, is called
 * every step; `exact`: simulate every step, even one whose twin was simulated before), and the
 * program is built from the served steps (scenario_finish_served). Nothing to do for other
 * scenarios. False with a SCENARIO_ERROR worded as loading words it (the scenario is then
 * unusable: free it). src/run/runner-prepare.c. */
bool runner_prepare(Scenario *sc, const ScenarioServeProgress *progress, bool exact,
                    GError **error);
/* scenario_load_extras / scenario_load_string_extras, then runner_prepare with the extras'
 * progress and exact: a scenario ready to simulate, or NULL with a SCENARIO_ERROR. */
Scenario *runner_load(const char *path, const ScenarioExtras *extras, GError **error);
Scenario *runner_load_string(const char *text, const char *display_name,
                             const ScenarioExtras *extras, GError **error);

typedef struct {
    SchedOutcome *outcome; /* engine outcome + layout findings + memory findings */
    ModelMemPlan *memory;  /* NULL for program scenarios */
    int exit_code;         /* 0 healthy, 3 failed */
    const char *status;    /* "ok" | "failed" */
    ModelServe *steps;     /* a hand-written single fault-free step's `steps` rows, timed by this
                              run (Scenario.serve holds those of every other workload); or NULL */
} RunnerResult;

/* The fabric in one line: "b200 (preset b200), 1 node x 8 devices, algorithms auto, contention
 * on". Caller frees. */
char *runner_hardware_line(const Scenario *sc);

/* What a run ran, in words, for the report's header, `runs` and the database (runs.model,
 * .layout, .vllm): the model and where it came from, vLLM's parallel layout, and the vLLM the
 * behaviours follow. All NULL for program scenarios (no model). */
typedef struct {
    char *model;  /* "glm-5.2 (preset glm-5.2)" */
    char *layout; /* "TP1 x PCP4, DCP4" / "DP2 x TP4, EP8" / "PP2 x TP8" */
    char *vllm;   /* "main" / "main without indexer_warmup_keys, dcp_rank_tensor" */
} RunnerLabels;
void runner_labels(const Scenario *sc, RunnerLabels *out);
void runner_labels_clear(RunnerLabels *l);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunnerLabels, runner_labels_clear)

/* The total work `run` and `sweep` accept by default: rank-ops after expanding repeats
 * (sched_program_total_op_count). About 25 s of simulation for compute-only programs; a billion
 * op rows with --timeline full. `--max-rank-ops N` changes it (0: no limit). */
#define RUNNER_DEFAULT_MAX_RANK_OPS UINT64_C(1000000000)

/* Checks the scenario's total work before simulating: false with a SCENARIO_ERROR_INVALID
 * that says how big the run would be, when it exceeds `max_rank_ops` (0: no limit). */
bool runner_check_work(const Scenario *sc, uint64_t max_rank_ops, GError **error);

/* Plans memory (model scenarios) and simulates. Records go to `record` (may be NULL) in event
 * order. Never fails. Caller frees with runner_result_free. */
RunnerResult *runner_simulate(const Scenario *sc, SchedTimeline timeline, SchedRecordFn record,
                              void *record_data, SchedProgressFn progress, void *progress_data);
void runner_result_free(RunnerResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RunnerResult, runner_result_free)

/* A SchedRecordFn that appends to a GArray of SchedRecord (for runs stored after the fact). */
void runner_collect_record(void *garray, const SchedRecord *rec);

/* Stores a finished run in one transaction: the run row, names, the collected `records` (GArray
 * of SchedRecord, may be NULL), groups, ranks, diagnostics, memory. Returns the run id or -1
 * with `error`. */
int64_t runner_store(Store *st, const Scenario *sc, const char *timeline, const RunnerResult *r,
                     GArray *records, double wall_ms, GError **error);
/* The same with what the command line changed (`overrides`, may be NULL) and the sweep the
 * run belongs to (StoreRunInfo.sweep_id). */
int64_t runner_store_as(Store *st, const Scenario *sc, const char *timeline, const RunnerResult *r,
                        GArray *records, double wall_ms, const char *overrides, int64_t sweep_id,
                        GError **error);

/* Stores a sweep variant vLLM's rules refused as an `invalid` run named `name` (NULL: the file's
 * basename), with the file's `text` (NULL: read from `path`, best effort: when it is valid
 * UTF-8), the variant's `overrides` and its sweep. Returns the run id or -1. (`run` stores
 * nothing for input it refuses.) */
int64_t runner_store_invalid_as(Store *st, const char *path, const char *text, const char *name,
                                const char *timeline, const char *message, const char *overrides,
                                int64_t sweep_id, GError **error);

#endif
