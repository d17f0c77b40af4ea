/* src/run/runner.c — simulate and store one scenario; see runner.h. The deployment is judged by
 * model/deployment (memory, start-up phases, how a hang surfaces); this file is the glue between
 * the loaded scenario, the engine and the store. */
#include "runner.h"

#include <string.h>

#include "../util/inputfile.h"
#include "../../model/deployment.h"
#include "../../model/lifecycle.h"

char *runner_hardware_line(const Scenario *sc)
{
    uint32_t dpn = sc->hardware.devices_per_node;
    uint32_t nodes = sc->nodes ? sc->nodes : (sc->program->n_ranks + dpn - 1) / dpn;
    GString *algos = g_string_new(NULL);
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++)
        if (sc->algo[k] != NET_ALGO_AUTO)
            g_string_append_printf(algos, "%s%s=%s", algos->len ? ", " : "",
                                   net_coll_kind_name((NetCollKind)k), net_algo_name(sc->algo[k]));
    char *line =
        g_strdup_printf("%s (%s), %u node%s x %u devices, algorithms %s, contention %s",
                        sc->hardware.name, sc->hardware_source, nodes, nodes == 1 ? "" : "s", dpn,
                        algos->len ? algos->str : "auto", sc->contention ? "on" : "off");
    g_string_free(algos, TRUE);
    return line;
}

void runner_labels(const Scenario *sc, RunnerLabels *out)
{
    *out = (RunnerLabels){0};
    if (!sc->arch || !sc->plan)
        return;
    out->model = sc->model_source && !strstr(sc->model_source, sc->arch->name)
                     ? g_strdup_printf("%s (%s)", sc->arch->name, sc->model_source)
                     : g_strdup(sc->model_source ? sc->model_source : sc->arch->name);
    const ModelParallel *p = &sc->plan->par;
    /* the axes vLLM multiplies into the world, outermost first, then what shards inside them */
    GString *l = g_string_new(NULL);
    struct {
        const char *name;
        uint32_t n;
    } axes[] = {{"DP", p->data_parallel_size},
                {"PP", p->pipeline_parallel_size},
                {"PCP", p->prefill_context_parallel_size},
                {"TP", p->tensor_parallel_size}};
    for (size_t i = 0; i < G_N_ELEMENTS(axes); i++)
        if (axes[i].n > 1 || strcmp(axes[i].name, "TP") == 0)
            g_string_append_printf(l, "%s%s%u", l->len ? " x " : "", axes[i].name, axes[i].n);
    const char *sep = ", ";
    if (p->decode_context_parallel_size > 1)
        g_string_append_printf(l, "%sDCP%u", sep, p->decode_context_parallel_size);
    if (p->enable_expert_parallel && sc->plan->ep_size > 1)
        g_string_append_printf(l, "%sEP%u", sep, sc->plan->ep_size);
    if (p->enable_sequence_parallel)
        g_string_append_printf(l, "%sSP", sep);
    out->layout = g_string_free(l, FALSE);
    char rel[24];
    GString *v = g_string_new(model_vllm_release_format(sc->engine.vllm_release, rel, sizeof rel));
    const char *lead = " without ";
    /* a release lists no behaviours: the table's (doc/lifecycle.md) */
    for (int b = 0; b < MODEL_VLLM_BEHAVIOUR_COUNT && !sc->engine.vllm_release; b++)
        if (!model_vllm_has(sc->engine.vllm_absent, (ModelVllmBehaviour)b)) {
            g_string_append_printf(v, "%s%s", lead,
                                   model_vllm_behaviour_name((ModelVllmBehaviour)b));
            lead = ", ";
        }
    /* the model runner, given or vLLM's default for the architecture (PR 52861) */
    if (sc->engine.v2_model_runner)
        g_string_append(v, "; V2 model runner");
    out->vllm = g_string_free(v, FALSE);
}

void runner_labels_clear(RunnerLabels *l)
{
    g_clear_pointer(&l->model, g_free);
    g_clear_pointer(&l->layout, g_free);
    g_clear_pointer(&l->vllm, g_free);
}

bool runner_check_work(const Scenario *sc, uint64_t max_rank_ops, GError **error)
{
    if (max_rank_ops == 0)
        return true;
    uint64_t total = sched_program_total_op_count(sc->program);
    if (total <= max_rank_ops)
        return true;
    g_autofree char *size =
        total == UINT64_MAX
            ? g_strdup("more than 1.8e19 rank-ops (the count overflows 64 bits)")
            : g_strdup_printf("%" G_GUINT64_FORMAT " rank-ops (%.2g)", total, (double)total);
    g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                "%s: the run would execute %s over %u ranks with every repeat expanded, more "
                "than the limit of %" G_GUINT64_FORMAT "; nothing was simulated (reduce the "
                "repeat counts, or raise the limit with --max-rank-ops N, 0 = none)",
                sc->path ? sc->path : sc->name, size, sc->program->n_ranks, max_rank_ops);
    return false;
}

/* The deployment `sc` describes, for model/deployment's judge. */
static ModelDeployment deployment(const Scenario *sc)
{
    return (ModelDeployment){
        .arch = sc->arch,
        .plan = sc->plan,
        .engine = &sc->engine,
        .hw = &sc->hardware,
        .program = sc->program,
        .findings = sc->findings,
    };
}

/* The `steps` row of a hand-written single step without faults: the run simulated exactly that
 * step alone (runner_prepare timed every other hand-written workload). */
static ModelServe *one_step(const Scenario *sc, const SchedOutcome *o)
{
    if (sc->serve || !sc->arch || !sc->plan || !sc->workload || sc->workload->steps->len != 1 ||
        (sc->faults && sc->faults->len) || (sc->link_faults && sc->link_faults->len))
        return NULL;
    ModelLowerInput li = {.arch = sc->arch,
                          .plan = sc->plan,
                          .engine = &sc->engine,
                          .cost = sc->cost,
                          .hw = &sc->hardware,
                          .broken = MODEL_BREAK_NONE};
    const ModelStep *st = g_ptr_array_index(sc->workload->steps, 0);
    if (o->failed) { /* worded as the step simulated alone would be */
        g_autofree char *why = model_serve_failure_why(o);
        return model_serve_one_step(&li, st, -1, why);
    }
    int64_t end = 0;
    for (uint32_t r = 0; r < o->n_ranks; r++)
        end = MAX(end, o->ranks[r].end_ns);
    int64_t idle = st->idle_ns > 0 ? st->idle_ns : 0;
    return model_serve_one_step(&li, st, end > idle ? end - idle : 0, NULL);
}

RunnerResult *runner_simulate(const Scenario *sc, SchedTimeline timeline, SchedRecordFn record,
                              void *record_data, SchedProgressFn progress, void *progress_data)
{
    RunnerResult *r = g_new0(RunnerResult, 1);
    ModelDeployment d = deployment(sc);
    /* Memory first: a deployment that fails at start-up (weights, profile run, KV cache,
     * autotuning) never serves on hardware, so no step runs here either — every rank "not
     * run", no step time (doc/decisions.md); a budget within the uncertainty is only a
     * warning and the steps run. */
    r->memory = model_deployment_plan_memory(&d);
    bool serves = !r->memory || model_lifecycle_serves(r->memory);
    g_autoptr(SchedProgram) none = serves ? NULL : sched_program_new(sc->program->n_ranks);
    for (uint32_t k = 0; none && k < none->n_ranks; k++)
        sched_program_set_ops(none, k, NULL, 0);
    if (none && !sched_program_validate(none, NULL)) /* empty lists are always valid */
        g_assert_not_reached();
    SchedConfig cfg = scenario_engine_config(sc);
    cfg.timeline = timeline;
    cfg.record = record;
    cfg.record_data = record_data;
    cfg.progress = progress;
    cfg.progress_data = progress_data;
    r->outcome = sched_engine_run(serves ? sc->program : none, &cfg);
    for (uint32_t k = 0; !serves && k < r->outcome->n_ranks; k++)
        r->outcome->ranks[k].state = SCHED_RANK_NOT_RUN;
    r->steps = serves ? one_step(sc, r->outcome) : NULL;
    model_deployment_judge(&d, r->memory, r->outcome);
    r->exit_code = r->outcome->failed ? 3 : 0;
    r->status = r->outcome->failed ? "failed" : "ok";
    return r;
}

void runner_result_free(RunnerResult *r)
{
    if (!r)
        return;
    sched_outcome_free(r->outcome);
    model_memory_plan_free(r->memory);
    model_serve_free(r->steps);
    g_free(r);
}

void runner_collect_record(void *garray, const SchedRecord *rec)
{
    g_array_append_val((GArray *)garray, *rec);
}

int64_t runner_store_as(Store *st, const Scenario *sc, const char *timeline, const RunnerResult *r,
                        GArray *records, double wall_ms, const char *overrides, int64_t sweep_id,
                        GError **error)
{
    g_autofree char *hw = runner_hardware_line(sc);
    RunnerLabels lb;
    runner_labels(sc, &lb);
    StoreRunInfo info = {.name = sc->name,
                         .kind = sc->kind,
                         .path = sc->path,
                         .scenario = sc->text,
                         .timeline = timeline,
                         .hardware = hw,
                         .not_simulated = sc->ignored_flags,
                         .serve = sc->serve ? sc->serve : r->steps,
                         .model = lb.model,
                         .layout = lb.layout,
                         .vllm = lb.vllm,
                         .overrides = overrides,
                         .sweep_id = sweep_id};
    int64_t id = store_run_insert(
        st, &info, sc->program, records ? (const SchedRecord *)(void *)records->data : NULL,
        records ? records->len : 0, r->outcome, r->memory, r->status, r->exit_code, wall_ms, error);
    runner_labels_clear(&lb);
    return id;
}

int64_t runner_store(Store *st, const Scenario *sc, const char *timeline, const RunnerResult *r,
                     GArray *records, double wall_ms, GError **error)
{
    return runner_store_as(st, sc, timeline, r, records, wall_ms, NULL, 0, error);
}

int64_t runner_store_invalid_as(Store *st, const char *path, const char *given, const char *name,
                                const char *timeline, const char *message, const char *overrides,
                                int64_t sweep_id, GError **error)
{
    g_autofree char *base = name ? g_strdup(name) : g_path_get_basename(path);
    /* The same checks as loading (regular file, size cap, UTF-8): a FIFO or /dev/zero given
     * as the scenario must not block or grow here either. */
    g_autofree char *read = given ? NULL : input_file_read(path, 0, NULL, NULL);
    const char *text = given ? given : read;
    const char *kind = text && strstr(text, "kind: program") ? "program" : "model";
    StoreRunInfo info = {.name = base,
                         .kind = kind,
                         .path = path,
                         .scenario = text,
                         .timeline = timeline,
                         .overrides = overrides,
                         .sweep_id = sweep_id};
    return store_insert_invalid(st, &info, message, error);
}
