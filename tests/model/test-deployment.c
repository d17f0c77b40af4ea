/* tests/model/test-deployment.c — model/deployment: lowering with its layout check, the code an
 * error carries (the attention backend's refusal vs a workload the configuration cannot run),
 * and the judge: what was found before the simulation joins the outcome, memory and start-up
 * phases only for a model. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/deployment.h"

typedef struct {
    ModelArch arch;
    ModelPlan *plan;
    ModelEngine engine;
    ModelWorkload *wl;
    ModelCost *cost;
    ModelLowerInput in;
} Fixture;

static void setup(Fixture *f, const char *model, uint32_t tp, ModelBackend backend, uint32_t prompt)
{
    memset(f, 0, sizeof *f);
    GError *err = NULL;
    cr_assert(model_arch_load_preset(model, &f->arch, &err), "%s", err ? err->message : "");
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = tp;
    f->plan = model_plan_new(&par, &f->arch, &err);
    cr_assert_not_null(f->plan, "%s", err ? err->message : "");
    model_engine_defaults(&f->engine);
    f->engine.attention_backend = backend;
    f->engine.max_model_len = 4096;
    f->wl = model_workload_new();
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *b = model_batch_new();
    g_array_append_val(b->prefill, prompt);
    g_ptr_array_add(per, b);
    model_workload_add_step(f->wl, per);
    f->cost = model_cost_new(net_hardware_flat(), NULL);
    f->in = (ModelLowerInput){
        &f->arch, f->plan, &f->engine, f->wl, f->cost, net_hardware_flat(), MODEL_BREAK_NONE};
}

static void teardown(Fixture *f)
{
    model_plan_free(f->plan);
    model_workload_free(f->wl);
    model_cost_free(f->cost);
}

static void free_findings(GPtrArray *a)
{
    if (!a)
        return;
    g_ptr_array_set_free_func(a, (GDestroyNotify)sched_diag_free);
    g_ptr_array_unref(a);
}

Test(deployment, lower_then_judge)
{
    Fixture f;
    setup(&f, "llama-3.1-8b", 2, MODEL_BACKEND_AUTO, 512);
    GError *err = NULL;
    GPtrArray *findings = NULL;
    SchedProgram *p = model_deployment_lower(&f.in, &findings, &err);
    cr_assert_not_null(p, "%s", err ? err->message : "");
    cr_assert_not_null(findings);
    cr_assert_eq(p->n_ranks, 2);
    cr_assert(sched_program_validate(p, &err), "%s", err ? err->message : "");
    /* one finding of our own, to see it copied into the outcome */
    g_ptr_array_add(findings, sched_diag_new("layout", SCHED_SEV_WARNING, 0, -1, 0, -1, NULL,
                                             "a finding from before", NULL));

    ModelDeployment d = {
        .arch = &f.arch,
        .plan = f.plan,
        .engine = &f.engine,
        .hw = net_hardware_flat(),
        .program = p,
        .findings = findings,
    };
    ModelMemPlan *mem = model_deployment_plan_memory(&d);
    cr_assert_not_null(mem);
    cr_assert_eq(mem->world, 2);
    SchedConfig cfg = sched_config_default();
    cfg.fabric.n_ranks = p->n_ranks;
    SchedOutcome *o = sched_engine_run(p, &cfg);
    guint before = o->diags->len;
    model_deployment_judge(&d, mem, o);
    cr_assert_geq(o->diags->len, before + findings->len);
    bool seen = false;
    for (guint i = before; i < o->diags->len; i++)
        seen |= strcmp(((SchedDiag *)g_ptr_array_index(o->diags, i))->message,
                       "a finding from before") == 0;
    cr_assert(seen);
    sched_outcome_free(o);

    /* without a model: no memory plan, the findings still join the outcome */
    ModelDeployment bare = {.hw = net_hardware_flat(), .program = p, .findings = findings};
    cr_assert_null(model_deployment_plan_memory(&bare));
    o = sched_engine_run(p, &cfg);
    before = o->diags->len;
    model_deployment_judge(&bare, NULL, o);
    cr_assert_eq(o->diags->len, before + findings->len);
    sched_outcome_free(o);

    model_memory_plan_free(mem);
    free_findings(findings);
    sched_program_free(p);
    teardown(&f);
}

Test(deployment, errors_carry_their_code)
{
    Fixture f;
    /* a grouped-query attention kernel on a sparse-MLA model: the backend refuses */
    setup(&f, "glm-5.2", 8, MODEL_BACKEND_FLASH_ATTN, 512);
    GError *err = NULL;
    GPtrArray *findings = NULL;
    cr_assert_null(model_deployment_lower(&f.in, &findings, &err));
    cr_assert_null(findings);
    cr_assert(g_error_matches(err, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_BACKEND), "%s",
              err->message);
    g_clear_error(&err);
    teardown(&f);

    /* a prompt longer than max_model_len: the workload, not the engine */
    setup(&f, "llama-3.1-8b", 1, MODEL_BACKEND_AUTO, 8192);
    cr_assert_null(model_deployment_lower(&f.in, &findings, &err));
    cr_assert(g_error_matches(err, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_INVALID), "%s",
              err->message);
    g_clear_error(&err);
    teardown(&f);
}
