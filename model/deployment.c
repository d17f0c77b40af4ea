/* model/deployment.c — a vLLM deployment prepared and judged (model/deployment.h): the steps
 * that used to be spread over the scenario loader and the runner, in the order vLLM takes them.
 */
#include "deployment.h"

#include <string.h>

#include "lifecycle.h"
#include "runtime.h"
#include "surface.h"

/* ---- prepare ---- */

SchedProgram *model_deployment_lower(const ModelLowerInput *in, GPtrArray **findings,
                                     GError **error)
{
    g_return_val_if_fail(in != NULL && findings != NULL, NULL);
    SchedProgram *p = model_lower(in, error);
    if (p)
        *findings = model_layout_check(p, in);
    return p;
}

void model_deployment_derive_faults(const SchedProgram *p, const ModelLowerInput *in,
                                    GArray *faults, GPtrArray *findings)
{
    model_runtime_faults(p, in, faults, findings);
}

/* The KV cache each DP rank's scheduler allocates from: the fewest tokens any worker's budget
 * holds (vLLM sets every worker's num_blocks to the smallest, get_kv_cache_configs; with PP the
 * stages differ). */
static uint64_t kv_tokens(const ModelLowerInput *li)
{
    g_autoptr(ModelMemPlan) m = model_memory_plan(li->arch, li->plan, li->engine, li->hw, NULL);
    uint64_t least = UINT64_MAX;
    for (uint32_t r = 0; r < m->world; r++)
        least = MIN(least, m->ranks[r].kv_budget_bytes > 0 ? m->ranks[r].kv_tokens : 0);
    return least == UINT64_MAX ? 0 : least;
}

static ModelServeInput serve_input(const ModelDeploymentServe *in)
{
    const ModelLowerInput *li = in->lower;
    ModelServeInput si = {
        .lower = li,
        .sim = sched_config_default(),
        .kv_tokens = kv_tokens(li),
        .exact = in->exact,
        .max_concurrency = in->max_concurrency,
        .coarse_contexts = in->coarse_contexts,
        .progress = in->progress,
        .progress_data = in->progress_data,
    };
    si.sim.fabric.hw = li->hw;
    si.sim.fabric.n_ranks = li->plan->world;
    si.sim.fabric.nodes = in->nodes;
    memcpy(si.sim.fabric.algo, in->algo, sizeof si.sim.fabric.algo);
    si.sim.fabric.contention = in->contention;
    si.sim.collective_timeout_ns = 0; /* a step that hangs stops the schedule either way */
    return si;
}

ModelServe *model_deployment_serve(const ModelDeploymentServe *in, const ModelRequest *reqs,
                                   uint32_t n, GError **error)
{
    g_return_val_if_fail(in != NULL && in->lower != NULL && in->algo != NULL, NULL);
    ModelServeInput si = serve_input(in);
    return model_serve_run(&si, reqs, n, error);
}

ModelServe *model_deployment_time_steps(const ModelDeploymentServe *in, const ModelWorkload *w)
{
    g_return_val_if_fail(in != NULL && in->lower != NULL && in->algo != NULL && w, NULL);
    ModelServeInput si = serve_input(in);
    return model_serve_time_steps(&si, w);
}

/* ---- judge ---- */

ModelMemPlan *model_deployment_plan_memory(const ModelDeployment *d)
{
    g_return_val_if_fail(d != NULL, NULL);
    if (!d->arch || !d->plan)
        return NULL;
    ModelMemPlan *m = model_memory_plan(d->arch, d->plan, d->engine, d->hw, d->program);
    model_lifecycle_plan(m, d->arch, d->plan, d->engine, d->hw, d->program);
    return m;
}

bool model_deployment_serves(const ModelDeployment *d)
{
    g_return_val_if_fail(d != NULL, true);
    g_autoptr(ModelMemPlan) m = model_deployment_plan_memory(d);
    return !m || model_lifecycle_serves(m);
}

static void add_copy(SchedOutcome *o, const SchedDiag *x)
{
    sched_outcome_add_diag(o, sched_diag_new(x->kind, x->severity, x->rank, x->group, x->seq,
                                             x->layer, x->op_name, x->message, x->detail));
}

void model_deployment_judge(const ModelDeployment *d, ModelMemPlan *memory, SchedOutcome *outcome)
{
    g_return_if_fail(d != NULL && outcome != NULL);
    for (guint i = 0; d->findings && i < d->findings->len; i++)
        add_copy(outcome, g_ptr_array_index(d->findings, i));
    for (guint i = 0; memory && memory->diags && i < memory->diags->len; i++)
        add_copy(outcome, g_ptr_array_index(memory->diags, i));
    /* A hang: what the operator reads on hardware instead of (or before) a watchdog line. */
    if (d->arch && d->plan) {
        SchedDiag *hs = model_surface_hang(outcome, d->program, d->engine, d->hw, d->plan->world);
        if (hs)
            sched_outcome_add_diag(outcome, hs);
    }
    model_lifecycle_finish(memory, outcome);
}
