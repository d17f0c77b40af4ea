/* src/input/scenario-types.h — what a loaded scenario is: the plain, immutable Scenario the
 * loader (src/input/scenario.h) returns, and the ScenarioExtras the command line adds to it.
 *
 * Ownership: a Scenario owns every pointer in it (scenario_free); a ScenarioExtras borrows
 * everything. This module knows nothing of YAML or of how a scenario is read, so every part of
 * the loader can fill a Scenario without depending on the loader's entry point.
 */
#ifndef SRC_SCENARIO_TYPES_H
#define SRC_SCENARIO_TYPES_H

#include <glib.h>

#include "../../sched/engine.h"
#include "../../model/arch.h"
#include "../../model/cost.h"
#include "../../model/lower.h"
#include "../../model/plan.h"
#include "../../model/serve.h"
#include "../../net/fabric.h"
#include "../../sched/program.h"

/* The rest of a model scenario's load, kept while its requests wait to be served (the parsed
 * tree and where errors point; src/input/scenario-pending.h): owned by the Scenario. */
typedef struct ScenarioPending ScenarioPending;

/* Serving progress while a requests workload is scheduled: `steps` scheduled so far, requests
 * `finished` of `total`. */
typedef void (*ScenarioServeProgressFn)(void *data, uint64_t steps, uint32_t finished,
                                        uint32_t total);
/* A progress callback and its data, borrowed. */
typedef struct {
    ScenarioServeProgressFn fn;
    void *data;
} ScenarioServeProgress;

typedef struct {
    char *path;            /* as given, or "<string>" */
    char *text;            /* the file's full contents (stored with the run) */
    char *name;            /* `name:`, or the file's basename without extension */
    char *kind;            /* "program" or "model" */
    SchedProgram *program; /* for kind: model, the lowered program; NULL while `pending` */
    SchedMismatchPolicy on_mismatch;
    int64_t collective_timeout_ns;     /* default 600 s (1800 s on Ascend); 0 = watchdog off */
    bool watchdog_given;               /* watchdog.collective_timeout_s was set */
    int64_t straggler_threshold_ns;    /* default 10 s; 0 = off */
    NetHardware hardware;              /* `hardware:` preset or file plus overrides; default h100 */
    char *hardware_source;             /* "preset h100" or the hardware file's path */
    uint32_t nodes;                    /* `nodes:`; 0 = the fewest that hold all ranks */
    NetAlgo algo[NET_COLL_KIND_COUNT]; /* `collective_algorithm:`; NET_ALGO_AUTO by default */
    bool contention;                   /* `contention:`; default true */
    GArray *faults;                    /* SchedFault, op names interned in `program` */
    GArray *link_faults;               /* NetLinkFault from faults of kind `link` */

    /* kind: model (NULL / zero for kind: program) */
    ModelArch *arch;         /* `model:` preset or config.json */
    char *model_source;      /* "preset glm-5.2" or the config path */
    ModelPlan *plan;         /* from `parallel:`, validated with vLLM's rules */
    ModelEngine engine;      /* `engine:` */
    ModelWorkload *workload; /* `workload:` (for requests: the steps vLLM's scheduler made) */
    GArray *requests;        /* ModelRequest: the request workload (workload.requests / trace
                                / poisson, --requests) as read; NULL for a workload of steps */
    char *requests_from;     /* where `requests` came from, as errors about them begin:
                                "x.yaml:12: key 'workload'" or "x.yaml: --requests FILE" */
    uint32_t max_concurrency; /* workload.max_concurrency / --max-concurrency: a closed-loop
                                 client's requests in flight (model/serve.h); 0: open loop */
    ModelServe *serve;       /* the requests served (by runner_prepare, src/run/runner.h): the
                                schedule's step and request rows; else NULL */
    ModelCost *cost;         /* roofline on `hardware`, plus `engine.op_profile` */
    char *op_profile;        /* resolved path of engine.op_profile, or NULL */
    GPtrArray *perf_db;      /* char*: resolved paths of the measured tables loaded into
                                `cost` (hardware.calibration, then --perf-db), or NULL */
    GPtrArray *findings;     /* SchedDiag* from model_layout_check, owned */

    /* Settings given but not simulated, one char* each (owned; never NULL, often empty): vLLM
     * flags of an eval config's server_args that ranksim does not model ("--moe-backend
     * flashinfer_cutlass"), unknown eval-config keys, approximations ("cudagraph_mode
     * FULL_DECODE_ONLY (simulated as FULL)"). The CLI prints them and the store keeps them
     * (table not_simulated). */
    GPtrArray *ignored_flags;
    /* Command-line extras that replace part of the file ("--hardware h200 replaces the
     * scenario's hardware (h100)"), one char* each (owned; never NULL, often empty). They are
     * simulated, so they are not ignored_flags: the CLI prints them as notes and the run's
     * `overrides` column already records the flags. */
    GPtrArray *override_notes;

    /* Non-NULL after loading a scenario with `requests`: serving them runs vLLM's scheduler
     * and the engine, which loading never does, so the load stops before the lowering and the
     * run settings. runner_prepare (src/run/runner.h) serves them and finishes the load
     * (scenario_finish_served, src/input/scenario.h); until then `program` is NULL. */
    ScenarioPending *pending;
} Scenario;

/* What the command line adds to a scenario (all optional). */
typedef struct {
    const char *const *overrides; /* NULL-terminated "dotted.key=value" (--set) */
    const char *hardware;         /* --hardware NAME|PATH: used when the file names none (a
                                     path is relative to the working directory) */
    uint64_t max_rank_ops;        /* --max-rank-ops: a model scenario whose lowering would
                                     certainly exceed it (a lower bound: world x steps x
                                     layers x 4 ops) is refused before it is lowered;
                                     0 = no limit */
    GArray *prefill;              /* --prefill N (uint32), repeatable: one prefill step */
    GArray *prefill_ctx;          /* --prefill N@C: the C tokens already in the KV cache before
                                     each --prefill entry (uint32; NULL or shorter than
                                     `prefill` = 0 for the rest: a fresh prompt) */
    GArray *decode;               /* --decode B:CTX (uint32 context lengths, one per sequence:
                                     B copies of CTX), repeatable: one decode step; with
                                     --prefill, one mixed step. Both are used only when the
                                     file has no workload. */
    const char *requests;         /* --requests FILE: a trace (ranksim's JSON lines or CSV, or a
                                     public trace: src/input/request-formats.h) served as the
                                     workload (replaces the file's) */
    const char *requests_format;  /* --requests-format NAME, or NULL: detected */
    double requests_rate;         /* --requests-rate R (> 0), or 0: as recorded */
    uint32_t requests_limit;      /* --requests-limit N (> 0), or 0: every request */
    uint32_t max_concurrency;     /* --max-concurrency N: at most N requests in flight (replaces
                                     workload.max_concurrency); 0: the file's. Requests only */
    const char *const *perf_db;   /* --perf-db PATH, repeatable, NULL-terminated (or NULL):
                                     measured tables (model/kernel-table.h) loaded after the
                                     scenario's hardware.calibration; paths relative to the
                                     working directory */
    /* `exact` and `progress` are for serving a request workload, which loading leaves to
     * runner_prepare (src/run/runner.h); runner_load passes them on. */
    bool exact;                   /* --exact: simulate every scheduled step, even one whose
                                     twin was simulated before */
    const ScenarioServeProgress *progress; /* serving progress of a requests workload,
                                     called every scheduled step on the loading thread; NULL:
                                     none. Loading never prints: the caller shows it */
    bool merge_workload; /* `sweep --vary workload.prefill/decode`: `prefill` replaces
                            the prompts of the file's steps that prefill (a step of its
                            own first when none does) and `decode` the decoding batches
                            (a step of its own last when none decodes); every other
                            step and setting of the file's workload stays */
} ScenarioExtras;

void scenario_free(Scenario *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Scenario, scenario_free)

/* Fills an engine configuration from the scenario (hardware and faults borrowed from `s`). */
SchedConfig scenario_engine_config(const Scenario *s);

#endif
