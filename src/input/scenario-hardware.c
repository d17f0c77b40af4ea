/* src/input/scenario-hardware.c — where a scenario runs: `hardware:` (a preset, a hardware file, or a
 * mapping of either plus overrides, through src/hardware), --hardware from the command line,
 * `nodes:` and `collective_algorithm:`. Part of the scenario loader (src/input/scenario-common.h).
 *
 * Hardware files are relative to the scenario's folder; --hardware paths to the working
 * directory. Costs: O(file) per hardware file; the rest is O(keys).
 */
#include "scenario-hardware.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "hardware.h"
#include "../util/inputfile.h"

/* ---- hardware ---- */

/* A `hardware:` string naming a file rather than a preset: it contains '/' or ends in .yaml or
 * .yml. */
static bool is_hardware_path(const char *s)
{
    return strchr(s, '/') != NULL || g_str_has_suffix(s, ".yaml") || g_str_has_suffix(s, ".yml");
}

/* A short reason for a failed input_file_read of `path`: "no such file" when the open failed
 * because nothing is there (asked of the file system, errno ENOENT, not read from the message),
 * else the reader's own reason. */
static const char *io_reason(const GError *e, const char *path)
{
    if (e->domain == INPUT_ERROR && e->code == INPUT_ERROR_OPEN && g_access(path, F_OK) != 0 &&
        errno == ENOENT)
        return "no such file";
    return input_reason(e, path);
}

static bool hardware_base_file(Loader *ld, const YamlDocNode *at, const char *key,
                               const char *given, Scenario *s)
{
    g_autofree char *path = scenario_resolve_path(ld, given);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!(text = input_file_read(path, 0, &len, &ioerr))) {
        g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                 "cannot read hardware file '%s': %s; valid: a preset (%s) or "
                                 "the path of a hardware file, relative to the scenario's folder",
                                 path, io_reason(ioerr, path), presets);
    }
    if (!hardware_load_string(text, (gssize)len, path, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_steal_pointer(&path);
    return true;
}

/* Loads a known preset into the scenario and records where the hardware came from. */
static bool use_preset(Loader *ld, const char *name, Scenario *s)
{
    if (!hardware_load_preset(name, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_strdup_printf("preset %s", name);
    return true;
}

static bool hardware_base_preset(Loader *ld, const YamlDocNode *at, const char *key,
                                 const char *name, Scenario *s)
{
    if (!hardware_is_preset(name)) {
        g_autofree char *hint = yamldoc_suggestion(name, hardware_preset_names());
        return yamldoc_fail(&ld->doc, at, key,
                            "unknown hardware preset '%s'; %s; or a hardware file's path such as "
                            "./cluster.yaml",
                            name, hint);
    }
    return use_preset(ld, name, s);
}

/* --hardware NAME|PATH from the command line: a preset, or a hardware file relative to the
 * working directory (not to the scenario: the user typed it). */
static bool hardware_from_extras(Loader *ld, const char *given, Scenario *s)
{
    g_autofree char *what = g_strdup_printf("--hardware %s", given);
    g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
    if (is_hardware_path(given)) {
        g_autofree char *text = NULL;
        gsize len = 0;
        g_autoptr(GError) ioerr = NULL;
        if (!(text = input_file_read(given, 0, &len, &ioerr)))
            return scenario_extras_fail(
                ld, SCENARIO_ERROR_IO, what,
                "cannot read hardware file '%s': %s; valid: a preset (%s) or the "
                "path of a hardware file",
                given, io_reason(ioerr, given), presets);
        if (!hardware_load_string(text, (gssize)len, given, &s->hardware, ld->doc.error))
            return false;
        g_free(s->hardware_source);
        s->hardware_source = g_strdup(given);
        return true;
    }
    if (!hardware_is_preset(given)) {
        g_autofree char *hint = yamldoc_suggestion(given, hardware_preset_names());
        return scenario_extras_fail(
            ld, SCENARIO_ERROR_INVALID, what,
            "unknown hardware preset '%s'; %s; or a hardware file's path such as "
            "./cluster.yaml",
            given, hint);
    }
    return use_preset(ld, given, s);
}

/* `hardware:` absent (`hw` NULL): --hardware, else the default preset; a string: a preset or a
 * path; a mapping: `preset:` or `file:` (default preset when neither) plus overrides of
 * hardware keys. A --hardware that replaces the file's is noted in override_notes. */
static bool load_hardware(Loader *ld, const YamlDocNode *hw, Scenario *s)
{
    const char *cli = ld->extras->hardware;
    if (cli) { /* the command line overrides the file */
        if (hw) {
            g_autofree char *was = yamldoc_describe(hw);
            scenario_note_override(s, "--hardware %s replaces the scenario's hardware (%s, line %u)",
                                   cli, was, hw->line);
        }
        return hardware_from_extras(ld, cli, s);
    }
    if (!hw)
        return hardware_base_preset(ld, NULL, "hardware", HARDWARE_DEFAULT_PRESET, s);
    g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
    g_autofree char *valid = g_strdup_printf(
        "a preset (%s), a hardware file's path, or a mapping {preset: NAME or file: PATH, "
        "hardware keys to override}",
        presets);
    if (hw->type == YAMLDOC_SEQ || yamldoc_is_null(hw)) {
        g_autofree char *got = yamldoc_describe(hw);
        return yamldoc_fail(&ld->doc, hw, "hardware",
                            "expected a string or a mapping, got %s; "
                            "valid: %s",
                            got, valid);
    }
    if (hw->type == YAMLDOC_SCALAR) {
        const char *name = hw->text;
        if (is_hardware_path(name))
            return hardware_base_file(ld, hw, "hardware", name, s);
        return hardware_base_preset(ld, hw, "hardware", name, s);
    }
    static const char *const own[] = {"preset", "file", "calibration", NULL};
    ld->calibration = yamldoc_map_get(hw, "calibration");
    const YamlDocNode *pn = yamldoc_map_get(hw, "preset"), *fn = yamldoc_map_get(hw, "file");
    if (pn && fn)
        return yamldoc_fail(&ld->doc, yamldoc_map_get_key(hw, "file"), "file",
                            "give either preset or file, not both");
    const char *v = NULL;
    if (fn) {
        if (!yamldoc_get_string(&ld->doc, fn, "file",
                                "a hardware file's path, relative to the scenario's folder", &v) ||
            !hardware_base_file(ld, fn, "file", v, s))
            return false;
    } else if (pn) {
        if (!yamldoc_get_string(&ld->doc, pn, "preset", presets, &v) ||
            !hardware_base_preset(ld, pn, "preset", v, s))
            return false;
    } else if (!hardware_base_preset(ld, NULL, "hardware", HARDWARE_DEFAULT_PRESET, s)) {
        return false;
    }
    return hardware_apply_overrides(&ld->doc, hw, "hardware", own, &s->hardware);
}

/* ---- nodes and algorithms ---- */

uint32_t scenario_effective_nodes(const Loader *ld, const Scenario *s)
{
    if (s->nodes)
        return s->nodes;
    uint32_t d = s->hardware.devices_per_node;
    return (uint32_t)(((uint64_t)ld->n_ranks + d - 1) / d);
}

static bool load_nodes(Loader *ld, const YamlDocNode *n, Scenario *s)
{
    int64_t v = 0;
    if (!yamldoc_get_int(&ld->doc, n, "nodes", 1, MAX_RANKS, &v))
        return false;
    uint64_t devices = (uint64_t)v * s->hardware.devices_per_node;
    if (devices < ld->n_ranks) {
        uint32_t need = (uint32_t)(((uint64_t)ld->n_ranks + s->hardware.devices_per_node - 1) /
                                   s->hardware.devices_per_node);
        return yamldoc_fail(&ld->doc, n, "nodes",
                            "%u ranks do not fit on %" G_GINT64_FORMAT " node%s of %u devices "
                            "(%s: %" G_GUINT64_FORMAT " devices); valid: nodes >= %u, or leave "
                            "nodes out for the fewest that fit",
                            ld->n_ranks, v, v == 1 ? "" : "s", s->hardware.devices_per_node,
                            s->hardware.name, devices, need);
    }
    s->nodes = (uint32_t)v;
    return true;
}

/* The collective kinds `collective_algorithm:` may set, in this order. */
static const NetCollKind algo_kinds[] = {NET_ALL_REDUCE, NET_ALL_GATHER, NET_REDUCE_SCATTER,
                                         NET_ALL_TO_ALL, NET_BROADCAST,  NET_BARRIER};

bool scenario_load_algorithms(Loader *ld, const YamlDocNode *m, Scenario *s)
{
    enum { N_KINDS = sizeof algo_kinds / sizeof algo_kinds[0] };
    const char *kinds[N_KINDS + 1] = {0};
    for (size_t i = 0; i < N_KINDS; i++)
        kinds[i] = net_coll_kind_name(algo_kinds[i]);
    if (!yamldoc_expect_map(&ld->doc, m, "collective_algorithm",
                            "a mapping collective kind -> algorithm, e.g. {all_reduce: ring, "
                            "all_to_all: direct}") ||
        !yamldoc_check_keys(&ld->doc, m, kinds, NULL, "collective_algorithm"))
        return false;
    for (size_t i = 0; i < N_KINDS; i++) {
        const YamlDocNode *n = yamldoc_map_get(m, kinds[i]);
        if (!n)
            continue;
        /* The algorithms that can run this kind, "auto" first. */
        const char *valid[NET_ALGO_COUNT + 1] = {0};
        int nv = 0;
        for (int a = 0; a < NET_ALGO_COUNT; a++)
            if (a == NET_ALGO_AUTO || net_algo_supports((NetAlgo)a, algo_kinds[i]))
                valid[nv++] = net_algo_name((NetAlgo)a);
        const char *name = NULL;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        if (!yamldoc_get_string(&ld->doc, n, kinds[i], list, &name))
            return false;
        NetAlgo algo = NET_ALGO_AUTO;
        if (!net_algo_parse(name, &algo)) {
            g_autofree char *hint = yamldoc_suggestion(name, valid);
            return yamldoc_fail(&ld->doc, n, kinds[i], "unknown algorithm '%s'; %s", name, hint);
        }
        if (algo != NET_ALGO_AUTO && !net_algo_supports(algo, algo_kinds[i]))
            return yamldoc_fail(&ld->doc, n, kinds[i],
                                "algorithm '%s' cannot run %s; valid for %s: %s", name, kinds[i],
                                kinds[i], list);
        s->algo[algo_kinds[i]] = algo;
    }
    return true;
}

bool scenario_load_placement(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    const YamlDocNode *n;
    if (!load_hardware(ld, yamldoc_map_get(root, "hardware"), s))
        return false;
    return !(n = yamldoc_map_get(root, "nodes")) || load_nodes(ld, n, s);
}
