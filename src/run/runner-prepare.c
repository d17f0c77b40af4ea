/* src/run/runner-prepare.c — from a loaded scenario to a runnable one: a request workload
 * (Scenario.requests) is served by vLLM's scheduler (model_deployment_serve, model/deployment.h,
 * which runs the engine on every scheduled step), then the loader finishes the program from the
 * served steps (scenario_finish_served). Loading never simulates; this is where serving moved.
 *
 * Errors are SCENARIO_ERROR_INVALID at the requests' origin (Scenario.requests_from), as the
 * loader words them. Costs: serving costs what model/serve.h says.
 */
#include "runner.h"

#include "../../model/deployment.h"

/* What serving and step timing lower with: the scenario's model, plan, engine, cost model and
 * fabric (*li is filled and pointed at). */
static ModelDeploymentServe serve_input(const Scenario *sc, ModelLowerInput *li,
                                        const ScenarioServeProgress *progress, bool exact)
{
    *li = (ModelLowerInput){.arch = sc->arch,
                            .plan = sc->plan,
                            .engine = &sc->engine,
                            .cost = sc->cost,
                            .hw = &sc->hardware,
                            .broken = MODEL_BREAK_NONE};
    return (ModelDeploymentServe){
        .lower = li,
        .nodes = sc->nodes,
        .algo = sc->algo,
        .contention = sc->contention,
        .exact = exact,
        .max_concurrency = sc->max_concurrency,
        .progress = progress ? progress->fn : NULL,
        .progress_data = progress ? progress->data : NULL,
    };
}

/* Serves sc->requests: sc->workload becomes the scheduled steps, sc->serve the rows. */
static bool serve(Scenario *sc, const ScenarioServeProgress *progress, bool exact, GError **error)
{
    ModelLowerInput li;
    ModelDeploymentServe in = serve_input(sc, &li, progress, exact);
    g_autoptr(GError) err = NULL;
    ModelServe *sv = model_deployment_serve(
        &in, (const ModelRequest *)(const void *)sc->requests->data, sc->requests->len, &err);
    if (!sv) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s: %s", sc->requests_from,
                    err->message);
        return false;
    }
    if (sv->stopped)
        g_ptr_array_add(sc->ignored_flags,
                        g_strdup_printf("serving stopped early: %s", sv->stopped));
    model_workload_free(sc->workload);
    sc->workload = g_steal_pointer(&sv->workload);
    sv->workload = model_workload_new();
    sc->serve = sv;
    if (sc->workload->steps->len == 0) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s: %s", sc->requests_from,
                    sv->stopped ? sv->stopped : "no step");
        return false;
    }
    return true;
}

/* A hand-written workload's steps, timed alone as serving times its steps (sc->serve: the
 * `steps` rows, no requests), so a step's time reads without knowing op names. A single step
 * without faults is timed by the run itself instead (runner_simulate): the same simulation. */
static void time_steps(Scenario *sc, bool exact)
{
    ModelLowerInput li;
    ModelDeploymentServe in = serve_input(sc, &li, NULL, exact);
    sc->serve = model_deployment_time_steps(&in, sc->workload);
}

/* Whether vLLM would reach serving (model/deployment.h): when it stops at start-up, no request
 * is served and no step timed — the run is its start-up (runner_simulate says why). */
static bool serves(const Scenario *sc)
{
    ModelDeployment d = {.arch = sc->arch,
                         .plan = sc->plan,
                         .engine = &sc->engine,
                         .hw = &sc->hardware,
                         .program = NULL,
                         .findings = NULL};
    return !sc->arch || !sc->plan || model_deployment_serves(&d);
}

bool runner_prepare(Scenario *sc, const ScenarioServeProgress *progress, bool exact,
                    GError **error)
{
    g_return_val_if_fail(sc != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    if (!serves(sc)) { /* start-up fails: the workload is never reached */
        g_ptr_array_add(sc->ignored_flags,
                        g_strdup("the workload: vLLM stops at start-up (see the diagnostics), "
                                 "so no request is served and no step runs"));
        if (!sc->pending)
            return true;
        model_workload_free(sc->workload);
        sc->workload = model_workload_new();
        ModelLowerInput li;
        ModelDeploymentServe in = serve_input(sc, &li, NULL, exact);
        sc->serve = model_deployment_time_steps(&in, sc->workload); /* no step, no request */
        return scenario_finish_served(sc, error);
    }
    if (!sc->pending) {
        /* one fault-free step: the run's own simulation times it (runner_simulate) */
        bool faults = (sc->faults && sc->faults->len) || (sc->link_faults && sc->link_faults->len);
        if (sc->arch && sc->plan && sc->workload && !sc->serve &&
            (sc->workload->steps->len > 1 || (sc->workload->steps->len == 1 && faults)))
            time_steps(sc, exact);
        return true;
    }
    return serve(sc, progress, exact, error) && scenario_finish_served(sc, error);
}

/* Prepares a freshly loaded `sc` (NULL: the load failed), or frees it. */
static Scenario *prepared(Scenario *sc, const ScenarioExtras *extras, GError **error)
{
    if (sc && !runner_prepare(sc, extras ? extras->progress : NULL, extras && extras->exact,
                              error))
        g_clear_pointer(&sc, scenario_free);
    return sc;
}

Scenario *runner_load(const char *path, const ScenarioExtras *extras, GError **error)
{
    return prepared(scenario_load_extras(path, extras, error), extras, error);
}

Scenario *runner_load_string(const char *text, const char *display_name,
                             const ScenarioExtras *extras, GError **error)
{
    return prepared(scenario_load_string_extras(text, display_name, extras, error), extras, error);
}
