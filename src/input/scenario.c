/* src/input/scenario.c — the scenario loader's entry points: YAML text -> Scenario. The format is
 * described key by key in doc/scenario-format.md. This file reads the text, applies --set,
 * dispatches by kind, and holds identity, run settings and the helpers every part shares
 * (src/input/scenario-loader.h); each kind and each part of a scenario has its own module, listed
 * there.
 *
 * Pipeline: src/yamldoc parses the text into an owned tree carrying 1-based line numbers
 * (rejecting aliases, duplicate keys and non-scalar keys on the way); the --set overrides edit
 * that tree; then the tree is interpreted top-down in one of three ways:
 *   - kind: program (scenario-program.c) — ranks, groups and per-rank op lists written out;
 *   - kind: model (the default; scenario-model.c) — `model:` -> ModelArch, `parallel:` ->
 *     ModelPlan (vLLM's rules), hardware and nodes for the plan's world, `engine:` ->
 *     ModelEngine + ModelCost, `workload:` (or --prefill/--decode) -> ModelWorkload, then
 *     model_lower() builds the program and model_layout_check() its findings;
 *   - a vLLM eval config (top-level `model_name`; vllm-args.c) — model_name -> a preset,
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
#include "scenario-loader.h"
#include "yamldoc.h"

G_DEFINE_QUARK(ranksim - scenario - error - quark, scenario_error)

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

const char *const scenario_program_keys[] = {
    "name",
    "kind",
    "description",
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

const char *const scenario_model_keys[] = {
    "name",       "kind",        "description", "model",  "parallel",
    "engine",     "workload",    "hardware",    "nodes",  "collective_algorithm",
    "contention", "on_mismatch", "watchdog",    "faults", "straggler_threshold_s",
    NULL,
};

/* Keys of one kind only, reported as such in a file of the other kind. */
const char *const scenario_program_only_keys[] = {"ranks", "groups", "programs", NULL};
static const char *const model_only_keys[] = {"model", "parallel", "engine", "workload", NULL};

bool scenario_in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* ---- command-line extras, notes, paths ---- */

bool scenario_extras_fail(Loader *ld, int code, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(ld->doc.error, SCENARIO_ERROR, code, "%s: %s: %s", ld->doc.file, what, msg);
    return false;
}

void scenario_note_ignored(Scenario *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(s->ignored_flags, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

bool scenario_extras_have_workload(const ScenarioExtras *x)
{
    return (x->prefill && x->prefill->len) || (x->decode && x->decode->len);
}

char *scenario_resolve_path(const Loader *ld, const char *p)
{
    if (g_path_is_absolute(p))
        return g_strdup(p);
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    g_autofree char *dir = g_path_get_dirname(ld->path);
    if (strcmp(dir, ".") == 0)
        return g_strdup(p);
    return g_build_filename(dir, p, NULL);
}

/* ---- values ---- */

bool scenario_seconds_to_ns(Loader *ld, const YamlDocNode *n, const char *key, int64_t *out)
{
    double s = 0;
    if (!yamldoc_get_number(&ld->doc, n, key, 0, false, MAX_SECONDS, "seconds", &s))
        return false;
    *out = (int64_t)llround(s * 1e9);
    return true;
}

bool scenario_get_u32(Loader *ld, const YamlDocNode *m, const char *key, int64_t min, int64_t max,
                      uint32_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(m, key);
    int64_t v = 0;
    if (!n)
        return true;
    if (!yamldoc_get_int(&ld->doc, n, key, min, max, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool scenario_get_bool_opt(Loader *ld, const YamlDocNode *m, const char *key, bool *out)
{
    const YamlDocNode *n = yamldoc_map_get(m, key);
    return !n || yamldoc_get_bool(&ld->doc, n, key, out);
}

/* ---- settings every kind shares ---- */

static bool get_seconds_ns(Loader *ld, const YamlDocNode *map, const char *key, int64_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(map, key);
    return !n || scenario_seconds_to_ns(ld, n, key, out);
}

bool scenario_load_identity(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "name"))) {
        const char *name = NULL;
        if (!yamldoc_get_string(&ld->doc, n, "name", "a name for the scenario", &name))
            return false;
        g_free(s->name);
        s->name = g_strdup(name);
    }
    if ((n = yamldoc_map_get(root, "description")) && n->type != YAMLDOC_SCALAR)
        return yamldoc_fail(&ld->doc, n, "description",
                            "expected a string, got %s; valid: free text",
                            n->type == YAMLDOC_MAP ? "a mapping" : "a list");
    return true;
}

bool scenario_load_run_settings(Loader *ld, const YamlDocNode *root, Scenario *s, const char *what)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "collective_algorithm")) && !scenario_load_algorithms(ld, n, s))
        return false;
    if ((n = yamldoc_map_get(root, "contention")) &&
        !yamldoc_get_bool(&ld->doc, n, "contention", &s->contention))
        return false;

    static const char *const policies[] = {"hang", "abort", "continue", NULL};
    if ((n = yamldoc_map_get(root, "on_mismatch"))) {
        int pol = 0;
        if (!yamldoc_get_enum(&ld->doc, n, "on_mismatch", policies, &pol))
            return false;
        s->on_mismatch = pol == 0   ? SCHED_MISMATCH_HANG
                         : pol == 1 ? SCHED_MISMATCH_ABORT
                                    : SCHED_MISMATCH_CONTINUE;
    }
    if ((n = yamldoc_map_get(root, "watchdog"))) {
        static const char *const wkeys[] = {"collective_timeout_s", NULL};
        if (!yamldoc_expect_map(&ld->doc, n, "watchdog", "{collective_timeout_s: SECONDS}") ||
            !yamldoc_check_keys(&ld->doc, n, wkeys, NULL, "watchdog") ||
            !get_seconds_ns(ld, n, "collective_timeout_s", &s->collective_timeout_ns))
            return false;
        s->watchdog_given = yamldoc_map_get(n, "collective_timeout_s") != NULL;
    }
    if (!get_seconds_ns(ld, root, "straggler_threshold_s", &s->straggler_threshold_ns))
        return false;

    if ((n = yamldoc_map_get(root, "faults")) && !scenario_load_faults(ld, n, s))
        return false;

    g_autoptr(GError) verr = NULL;
    if (!sched_program_validate(s->program, &verr))
        return yamldoc_fail(&ld->doc, root, NULL, "%s is inconsistent: %s", what, verr->message);
    return true;
}

bool scenario_reject_other_kind_keys(Loader *ld, const YamlDocNode *root, bool model)
{
    const char *const *other = model ? scenario_program_only_keys : model_only_keys;
    const char *const *valid = model ? scenario_model_keys : scenario_program_keys;
    for (uint32_t i = 0; i < yamldoc_map_len(root); i++) {
        const YamlDocNode *k = yamldoc_map_key(root, i);
        if (!scenario_in_list(other, k->text))
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        if (model)
            return yamldoc_fail(&ld->doc, k, k->text,
                                "not valid for kind: model (the default when kind: is left out), "
                                "whose ranks, groups and programs come from lowering model:, "
                                "parallel: and workload:; write kind: program for hand-written "
                                "programs (valid for kind: model: %s)",
                                list);
        return yamldoc_fail(&ld->doc, k, k->text,
                            "not valid for kind: program (it belongs to kind: model); valid for "
                            "kind: program: %s",
                            list);
    }
    return true;
}

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
    if (!ok)
        return NULL;
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

void scenario_free(Scenario *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->text);
    g_free(s->name);
    g_free(s->kind);
    sched_program_free(s->program);
    if (s->faults)
        g_array_free(s->faults, TRUE);
    if (s->link_faults)
        g_array_free(s->link_faults, TRUE);
    g_free(s->hardware_source);
    g_free(s->arch);
    g_free(s->model_source);
    model_plan_free(s->plan);
    model_workload_free(s->workload);
    model_serve_free(s->serve);
    model_cost_free(s->cost);
    g_free(s->op_profile);
    if (s->findings) {
        g_ptr_array_set_free_func(s->findings, (GDestroyNotify)sched_diag_free);
        g_ptr_array_unref(s->findings);
    }
    if (s->ignored_flags)
        g_ptr_array_unref(s->ignored_flags);
    g_free(s);
}

SchedConfig scenario_engine_config(const Scenario *s)
{
    SchedConfig cfg = sched_config_default();
    cfg.on_mismatch = s->on_mismatch;
    cfg.collective_timeout_ns = s->collective_timeout_ns;
    /* Ascend: torch_npu's ProcessGroupHCCL, whose timeout defaults to 1800 s (its API
     * documentation; vllm-ascend's NPUCommunicator keeps the base class, so vLLM's collectives
     * go through it) */
    if (s->hardware.platform == NET_PLATFORM_NPU) {
        cfg.watchdog_hccl = true;
        if (!s->watchdog_given)
            cfg.collective_timeout_ns = 1800ll * 1000000000ll;
    }
    cfg.straggler_threshold_ns = s->straggler_threshold_ns;
    cfg.fabric.hw = &s->hardware;
    cfg.fabric.n_ranks = s->program->n_ranks;
    cfg.fabric.nodes = s->nodes;
    memcpy(cfg.fabric.algo, s->algo, sizeof cfg.fabric.algo);
    cfg.fabric.contention = s->contention;
    cfg.fabric.faults = (const NetLinkFault *)(const void *)s->link_faults->data;
    cfg.fabric.n_faults = s->link_faults->len;
    cfg.faults = (const SchedFault *)(const void *)s->faults->data;
    cfg.n_faults = s->faults->len;
    return cfg;
}
