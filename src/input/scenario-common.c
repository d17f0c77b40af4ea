/* src/input/scenario-common.c — the scenario loader's helper library (src/input/scenario-common.h):
 * the top-level key lists, command-line extras, notes, paths, numbers, identity and the check
 * for keys of the other kind.
 */
#include "scenario-common.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- top-level keys ---- */

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

void scenario_note_override(Scenario *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(s->override_notes, g_strdup_vprintf(fmt, ap));
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
