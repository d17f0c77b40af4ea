/* src/input/scenario.c — the scenario loader's entry points: YAML text -> Scenario. The format is
 * described key by key in doc/scenario-format.md. This file reads the text, applies --set and
 * dispatches by kind; each kind and each part of a scenario has its own module, and the helpers
 * they share are a library of their own (src/input/scenario-common.h lists the layers).
 *
 * Pipeline: src/yamldoc parses the text into an owned tree carrying 1-based line numbers
 * (rejecting aliases, duplicate keys and non-scalar keys on the way); the --set overrides edit
 * that tree; then the tree is interpreted top-down in one of three ways:
 *   - kind: program (scenario-program.c) — ranks, groups and per-rank op lists written out;
 *   - kind: model (the default; scenario-model.c) — `model:` -> ModelArch, `parallel:` ->
 *     ModelPlan (vLLM's rules), hardware and nodes for the plan's world, `engine:` ->
 *     ModelEngine + ModelCost, `workload:` (or --prefill/--decode) -> ModelWorkload, then
 *     model_lower() builds the program and model_layout_check() its findings;
 *   - a vLLM eval config (top-level `model_name`; scenario-eval.c) — model_name -> a preset,
 *     server_args (vLLM flags, shell-split) -> parallel and engine settings, then as kind: model.
 * Faults and the other run settings come last, so fault op names are checked against the
 * program that will run; sched_program_validate() runs at the very end as a safety net.
 * `hardware:` (scenario-hardware.c) goes through src/hardware (presets, hardware files,
 * overrides); `faults:` is scenario-faults.c.
 *
 * Errors: the first problem found ends loading with exactly one GError in SCENARIO_ERROR whose
 * message is one line, "FILE:LINE: key 'KEY': problem; what would be valid" (or
 * "FILE: --set PATH: key 'KEY': ..." for values that came from an override, "FILE: --prefill
 * N: ..." for command-line extras). Errors from the model layer (MODEL_ARCH_ERROR,
 * MODEL_PLAN_ERROR, MODEL_COST_ERROR, MODEL_LOWER_ERROR) are wrapped with the location of the
 * key they came from. Every helper that can fail returns false after setting the error, and
 * callers return at once, so an error is never set twice.
 *
 * Costs: O(text) to parse and copy; O(ranks) memory for rank bookkeeping; group membership of
 * each rank-set key is checked once per (key, group), O(set size x log group size). A model
 * scenario adds the lowering (model/lower.h states its costs).
 */
#include "scenario.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "../util/inputfile.h"
#include "scenario-common.h"
#include "scenario-eval.h"
#include "scenario-model.h"
#include "scenario-pending.h"
#include "scenario-program.h"
#include "yamldoc.h"

/* ---- top-level keys ---- */

/* Every top-level key of either kind, for whole-file messages ("the file is empty; ..."). */
static const char *const top_keys[] = {
    "name",
    "kind",
    "description",
    "model",
    "parallel",
    "engine",
    "workload",
    "ranks",
    "groups",
    "programs",
    "hardware",
    "nodes",
    "collective_algorithm",
    "contention",
    "on_mismatch",
    "watchdog",
    "faults",
    "straggler_threshold_s",
    NULL,
};

/* ---- top level ---- */

static bool interpret(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (yamldoc_map_find(root, "model_name") >= 0) {
        g_free(s->kind);
        s->kind = g_strdup("model");
        return scenario_interpret_eval(ld, root, s);
    }
    static const char *const kinds[] = {"program", "model", NULL};
    int kind = 1; /* model */
    const YamlDocNode *n = yamldoc_map_get(root, "kind");
    if (n && !yamldoc_get_enum(&ld->doc, n, "kind", kinds, &kind))
        return false;
    g_free(s->kind);
    s->kind = g_strdup(kinds[kind]);
    return kind == 0 ? scenario_interpret_program(ld, root, s)
                     : scenario_interpret_model(ld, root, s);
}

/* The basename of `path` without its extension: "scenarios/x.yaml" -> "x". Caller frees. */
static char *default_name(const char *path)
{
    char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    return base;
}

static Scenario *load_text(char *text, size_t len, const char *display,
                           const ScenarioExtras *extras, GError **error)
{
    static const ScenarioExtras none = {0};
    g_autoptr(Scenario) s = g_new0(Scenario, 1);
    s->path = g_strdup(display);
    s->text = text;
    s->name = default_name(display);
    s->kind = g_strdup("model");
    SchedConfig dflt = sched_config_default();
    s->on_mismatch = dflt.on_mismatch;
    s->collective_timeout_ns = dflt.collective_timeout_ns;
    s->straggler_threshold_ns = dflt.straggler_threshold_ns;
    s->contention = dflt.fabric.contention;
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++)
        s->algo[k] = NET_ALGO_AUTO;
    s->faults = g_array_new(FALSE, FALSE, sizeof(SchedFault));
    s->link_faults = g_array_new(FALSE, FALSE, sizeof(NetLinkFault));
    s->ignored_flags = g_ptr_array_new_with_free_func(g_free);
    s->override_notes = g_ptr_array_new_with_free_func(g_free);

    Loader ld = {
        .doc = {.file = display, .what = "scenario file", .top_keys = top_keys, .error = error},
        .path = display,
        .extras = extras ? extras : &none,
    };
    g_autoptr(YamlDocNode) root = yamldoc_parse(&ld.doc, s->text, len);
    if (!root)
        return NULL;
    const char *const *overrides = ld.extras->overrides;
    for (size_t i = 0; overrides && overrides[i]; i++)
        if (!yamldoc_set(&ld.doc, root, overrides[i]))
            return NULL;
    bool ok = interpret(&ld, root, s);
    g_free(ld.stamp);
    if (ld.notes)
        g_ptr_array_unref(ld.notes);
    if (!ok)
        return NULL;
    if (s->pending) /* requests to serve: the rest of the load needs the tree */
        scenario_pending_keep_tree(s->pending, g_steal_pointer(&root));
    return g_steal_pointer(&s);
}

Scenario *scenario_load_extras(const char *path, const ScenarioExtras *extras, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!(text = input_file_read(path, 0, &len, &ioerr))) {
        if (ioerr->domain == INPUT_ERROR && ioerr->code == INPUT_ERROR_ENCODING) {
            /* "PATH:LINE: reason": text that is not UTF-8 is malformed YAML, at its line */
            const char *m = ioerr->message, *r = strstr(m + strlen(path), ": ");
            if (g_str_has_prefix(m, path) && r)
                g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                            "%.*s: malformed YAML: %s", (int)(r - m), m, r + 2);
            else
                g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX, "%s", m);
            return NULL;
        }
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO, "%s: cannot read the scenario: %s",
                    path, input_reason(ioerr, path));
        return NULL;
    }
    return load_text(text, len, path, extras, error);
}

Scenario *scenario_load(const char *path, const char *const *overrides, GError **error)
{
    ScenarioExtras x = {.overrides = overrides};
    return scenario_load_extras(path, &x, error);
}

Scenario *scenario_load_string_extras(const char *text, const char *display_name,
                                      const ScenarioExtras *extras, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return load_text(g_strdup(text), strlen(text), display_name ? display_name : "<string>", extras,
                     error);
}

Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error)
{
    ScenarioExtras x = {.overrides = overrides};
    return scenario_load_string_extras(text, display_name, &x, error);
}
