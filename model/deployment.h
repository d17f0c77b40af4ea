/* model/deployment.h — a vLLM deployment prepared and judged: the model pipeline in one place.
 *
 * Prepare: lower the deployment (model/lower) into a program and check its layout
 * (model_layout_check); derive the faults this vLLM would hit while running (model/runtime);
 * serve a workload of requests with vLLM's scheduler, each scheduled step lowered and run by
 * the engine (model/serve), with the KV cache the memory plan leaves. Judge: before the
 * simulation, plan memory and the start-up phases (model/memory, model/lifecycle); after it,
 * add what was found before (layout findings, memory findings) to the outcome, say how a hang
 * surfaces on hardware (model/surface) and close the phases.
 *
 * Includes sched/ and net/ only, never src/; never prints (serving progress goes to a callback
 * the caller supplies). Errors: GError in the domain of the module that refused (MODEL_LOWER_ERROR,
 * MODEL_SERVE_ERROR), with codes a caller routes by. Costs: those of the modules it drives;
 * serving simulates one step per distinct step shape (every step with `exact`).
 */
#ifndef MODEL_DEPLOYMENT_H
#define MODEL_DEPLOYMENT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../net/fabric.h"
#include "../net/hardware.h"
#include "../sched/engine.h"
#include "../sched/program.h"
#include "arch.h"
#include "lower.h"
#include "memory.h"
#include "plan.h"
#include "serve.h"

/* ---- prepare ---- */

/* Lowers `in` into the program the engine runs and checks its layout. Returns the program
 * (caller frees) and sets *findings to the layout check's SchedDiag* (caller owns; may be
 * empty); NULL with `error` (MODEL_LOWER_ERROR: MODEL_LOWER_ERROR_BACKEND when the attention
 * backend refuses, else MODEL_LOWER_ERROR_INVALID) for a configuration vLLM would refuse. */
SchedProgram *model_deployment_lower(const ModelLowerInput *in, GPtrArray **findings,
                                     GError **error);

/* Appends to `faults` (SchedFault) the crashes this vLLM would hit while running program `p`
 * (lowered from `in`), and their causes to `findings` (SchedDiag*). Cannot fail. */
void model_deployment_derive_faults(const SchedProgram *p, const ModelLowerInput *in,
                                    GArray *faults, GPtrArray *findings);

/* How a workload of requests is served. Everything is borrowed. */
typedef struct {
    const ModelLowerInput *lower; /* arch, plan, engine, cost, hw; its workload is ignored */
    uint32_t nodes;               /* 0: the fewest that hold the plan's world */
    const NetAlgo *algo;          /* NET_COLL_KIND_COUNT algorithms */
    bool contention;
    bool exact; /* simulate every scheduled step, even one whose twin was simulated before */
    uint32_t max_concurrency; /* ModelServeInput.max_concurrency: 0 open loop */
    bool coarse_contexts;     /* ModelServeInput.coarse_contexts */
    /* called after every scheduled step with the steps made and the requests finished; may be
     * NULL */
    void (*progress)(void *data, uint64_t steps, uint32_t finished, uint32_t total);
    void *progress_data;
} ModelDeploymentServe;

/* Serves `reqs` (n of them) with vLLM's scheduler on the KV cache each DP rank's memory plan
 * leaves; the steps run on the fabric of `in` without faults or watchdog. Returns the schedule
 * (its workload is the steps to lower; caller frees), or NULL with MODEL_SERVE_ERROR for a
 * request vLLM would refuse on arrival. */
ModelServe *model_deployment_serve(const ModelDeploymentServe *in, const ModelRequest *reqs,
                                   uint32_t n, GError **error);

/* Times the hand-written steps of `w` on the fabric of `in` as serving times its own
 * (model_serve_time_steps): the rows of the `steps` table, no requests. Caller frees. */
ModelServe *model_deployment_time_steps(const ModelDeploymentServe *in, const ModelWorkload *w);

/* ---- judge ---- */

/* A prepared deployment, as the judge sees it. Everything is borrowed. */
typedef struct {
    const ModelArch *arch; /* NULL: a hand-written program, no model to judge */
    const ModelPlan *plan; /* NULL with arch */
    const ModelEngine *engine;
    const NetHardware *hw;
    const SchedProgram *program;
    const GPtrArray *findings; /* SchedDiag* found before the simulation, or NULL */
} ModelDeployment;

/* Before the simulation: the per-rank memory plan and the start-up phases of a model
 * deployment (a budget failure is a finding in the plan). NULL when `d` has no model. Caller
 * frees (model_memory_plan_free). */
ModelMemPlan *model_deployment_plan_memory(const ModelDeployment *d);
/* Whether the deployment reaches serving (model_lifecycle_serves on its plan, d->program may be
 * NULL): false when vLLM would stop at start-up, and then nothing is served or stepped. True
 * without a model. */
bool model_deployment_serves(const ModelDeployment *d);

/* After the simulation: adds copies of d->findings, then the memory plan's findings, to
 * `outcome`; for a model deployment, what the operator reads on hardware when it hangs; and
 * closes the start-up phases of `memory` (may be NULL) against the outcome. */
void model_deployment_judge(const ModelDeployment *d, ModelMemPlan *memory, SchedOutcome *outcome);

#endif
