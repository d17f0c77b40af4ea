/* src/hardware.c — hardware YAML -> NetHardware: presets (GResource), files, overrides. The
 * format is described key by key in doc/hardware-format.md.
 *
 * One interpreter serves whole files and overrides: `apply_map` walks a mapping of top-level
 * keys and writes the fields it names. For a file (`whole`) the required keys must be present
 * and `tiers` is a complete list; for overrides any subset may appear and `tiers` may also be a
 * mapping tier name -> fields. devices_per_node is applied first, so `span: node` always means
 * the final devices_per_node. net_hardware_check() runs last; its message names a tier, which
 * is how its error finds the line of that tier (or of its override).
 */
#include "hardware.h"

#include <math.h>
#include <string.h>

#include <gio/gio.h>

#include "ranksim-presets.h" /* generated from net/presets/presets.gresource.xml */
#include "scenario.h"

/* The embedded resource. GLib's generated getter initialises lazily without a lock, so two
 * threads loading presets at once (a sweep's workers) could race; g_once makes it safe. */
static GResource *embedded_resource(void)
{
    static gsize once = 0;
    static GResource *res = NULL;
    if (g_once_init_enter(&once)) {
        res = ranksim_presets_get_resource();
        g_once_init_leave(&once, 1);
    }
    return res;
}

#define MAX_DEVICES_PER_NODE 1048576
#define MAX_SPAN (INT64_C(1) << 30)
#define MAX_TFLOPS 1e6
#define MAX_GB 1e6 /* HBM capacity, GB or GiB */
#define MAX_BW_GB_S 1e6
#define MAX_HBM_TIB_S 1e3
#define MAX_LATENCY_US 1e9
#define GIB 1073741824.0    /* 2^30 */
#define TIB 1099511627776.0 /* 2^40 */

static const char *const preset_names[] = {"h100",        "h200",        "b200",
                                           "ascend-910b", "ascend-910c", NULL};

static const char *const file_keys[] = {
    "name",    "description",        "devices_per_node",    "compute_tflops",    "hbm_gb",
    "hbm_gib", "hbm_bandwidth_gb_s", "hbm_bandwidth_tib_s", "launch_latency_us", "tiers",
    NULL,
};
static const char *const override_keys[] = {
    "name",
    "devices_per_node",
    "compute_tflops",
    "hbm_gb",
    "hbm_gib",
    "hbm_bandwidth_gb_s",
    "hbm_bandwidth_tib_s",
    "launch_latency_us",
    "tiers",
    NULL,
};
static const char *const tier_keys[] = {
    "name", "span", "bandwidth_gb_s", "latency_us", "shared_bandwidth_gb_s", NULL};
static const char *const tier_override_keys[] = {"span", "bandwidth_gb_s", "latency_us",
                                                 "shared_bandwidth_gb_s", NULL};
static const char *const span_words[] = {"node", "cluster", NULL};

const char *const *hardware_preset_names(void)
{
    return preset_names;
}

const char *const *hardware_override_keys(void)
{
    return override_keys;
}

bool hardware_is_preset(const char *name)
{
    for (size_t i = 0; preset_names[i]; i++)
        if (strcmp(preset_names[i], name) == 0)
            return true;
    return false;
}

/* ---- interpreting a mapping ---- */

typedef struct {
    YamlDoc *doc;
    NetHardware *hw;
    bool whole; /* a whole file (required keys, tiers as a list) rather than overrides */
    /* Where each tier was last set in this document (its list item or its override key),
     * for check errors; NULL when this document did not touch it. */
    const YamlDocNode *tier_at[NET_MAX_TIERS];
    const YamlDocNode *tiers_at; /* the `tiers` key, or NULL */
} HwLoad;

static bool set_name(HwLoad *hl, const YamlDocNode *n, const char *key, char *dst)
{
    const char *s = NULL;
    if (!yamldoc_get_string(hl->doc, n, key, "a name of at most 47 bytes", &s))
        return false;
    if (strlen(s) >= NET_NAME_MAX)
        return yamldoc_fail(hl->doc, n, key, "name '%s' is longer than %d bytes; shorten it", s,
                            NET_NAME_MAX - 1);
    memset(dst, 0, NET_NAME_MAX);
    g_strlcpy(dst, s, NET_NAME_MAX);
    return true;
}

static bool get_us_ns(HwLoad *hl, const YamlDocNode *n, const char *key, int64_t *out)
{
    double us = 0;
    if (!yamldoc_get_number(hl->doc, n, key, 0, false, MAX_LATENCY_US, "microseconds", &us))
        return false;
    *out = (int64_t)llround(us * 1000.0);
    return true;
}

static bool get_bw(HwLoad *hl, const YamlDocNode *n, const char *key, bool allow_zero,
                   double *bytes_per_s)
{
    double gb_s = 0;
    if (!yamldoc_get_number(hl->doc, n, key, 0, !allow_zero, MAX_BW_GB_S, "GB/s (decimal)", &gb_s))
        return false;
    *bytes_per_s = gb_s * 1e9;
    return true;
}

/* `span:` node | cluster | a device count. */
static bool get_span(HwLoad *hl, const YamlDocNode *n, uint32_t devices_per_node, uint32_t *out)
{
    static const char valid[] = "node, cluster or a device count 1..1073741824";
    if (n->type == YAMLDOC_SCALAR && !yamldoc_is_null(n)) {
        if (strcmp(n->text, "node") == 0) {
            *out = devices_per_node;
            return true;
        }
        if (strcmp(n->text, "cluster") == 0) {
            *out = 0;
            return true;
        }
        const char *t = n->text;
        if (!n->quoted && (g_ascii_isdigit(t[0]) || t[0] == '-' || t[0] == '+')) {
            int64_t v = 0;
            if (strcmp(t, "0") == 0)
                return yamldoc_fail(hl->doc, n, "span",
                                    "0 is not a span; write span: cluster for the whole "
                                    "cluster; valid: %s",
                                    valid);
            if (!yamldoc_get_int(hl->doc, n, "span", 1, MAX_SPAN, &v))
                return false;
            *out = (uint32_t)v;
            return true;
        }
        const char *best = yamldoc_closest(t, span_words);
        g_autofree char *got = yamldoc_describe(n);
        if (best)
            return yamldoc_fail(hl->doc, n, "span",
                                "unknown span %s; did you mean '%s'? (valid: %s)", got, best,
                                valid);
        return yamldoc_fail(hl->doc, n, "span", "unknown span %s; valid: %s", got, valid);
    }
    g_autofree char *got = yamldoc_describe(n);
    return yamldoc_fail(hl->doc, n, "span", "expected a span, got %s; valid: %s", got, valid);
}

/* Fields of one tier from mapping `m`. `whole`: a full tier (name, span, bandwidth_gb_s and
 * latency_us required); otherwise an override of an existing tier (no name). */
static bool tier_fields(HwLoad *hl, const YamlDocNode *m, bool whole, const char *key, NetTier *t)
{
    YamlDoc *d = hl->doc;
    const char *context_valid = whole ? "a mapping such as {name: ib, span: cluster, "
                                        "bandwidth_gb_s: 50, latency_us: 2.7}"
                                      : "a mapping of tier fields, e.g. {bandwidth_gb_s: 25}";
    if (!yamldoc_expect_map(d, m, key, context_valid))
        return false;
    g_autofree char *context =
        whole ? g_strdup("a tier") : g_strdup_printf("the override of tier '%s'", t->name);
    if (!yamldoc_check_keys(d, m, whole ? tier_keys : tier_override_keys, whole ? NULL : tier_keys,
                            context))
        return false;
    const YamlDocNode *n;
    if (whole) {
        if (!(n = yamldoc_map_get(m, "name")))
            return yamldoc_fail(d, m, "name", "missing; a tier needs name: NAME (e.g. nvlink)");
        if (!set_name(hl, n, "name", t->name))
            return false;
        static const char *const required[] = {"span", "bandwidth_gb_s", "latency_us", NULL};
        static const char *const what[] = {
            "span: node, cluster or a device count",
            "bandwidth_gb_s: GB/s per direction per device (> 0)",
            "latency_us: microseconds per hop (>= 0)",
        };
        for (int i = 0; required[i]; i++)
            if (!yamldoc_map_get(m, required[i]))
                return yamldoc_fail(d, m, required[i], "missing; tier '%s' needs %s", t->name,
                                    what[i]);
        t->shared_bw_bytes_per_s = 0;
    }
    if ((n = yamldoc_map_get(m, "span")) &&
        !get_span(hl, n, hl->hw->devices_per_node, &t->span_devices))
        return false;
    if ((n = yamldoc_map_get(m, "bandwidth_gb_s")) &&
        !get_bw(hl, n, "bandwidth_gb_s", false, &t->bw_bytes_per_s))
        return false;
    if ((n = yamldoc_map_get(m, "latency_us")) && !get_us_ns(hl, n, "latency_us", &t->latency_ns))
        return false;
    if ((n = yamldoc_map_get(m, "shared_bandwidth_gb_s")) &&
        !get_bw(hl, n, "shared_bandwidth_gb_s", true, &t->shared_bw_bytes_per_s))
        return false;
    return true;
}

/* `tiers:` as a list: replaces every tier. */
static bool tiers_list(HwLoad *hl, const YamlDocNode *list)
{
    YamlDoc *d = hl->doc;
    if (list->items->len == 0)
        return yamldoc_fail(d, list, "tiers",
                            "empty list; give 1..%d tiers, narrowest first, the last one "
                            "with span: cluster",
                            NET_MAX_TIERS);
    if (list->items->len > NET_MAX_TIERS)
        return yamldoc_fail(d, g_ptr_array_index(list->items, NET_MAX_TIERS), "tiers",
                            "%u tiers; at most %d are supported", list->items->len, NET_MAX_TIERS);
    NetHardware *hw = hl->hw;
    memset(hw->tiers, 0, sizeof hw->tiers);
    hw->n_tiers = list->items->len;
    for (guint i = 0; i < list->items->len; i++) {
        const YamlDocNode *item = g_ptr_array_index(list->items, i);
        if (!tier_fields(hl, item, true, "tiers", &hw->tiers[i]))
            return false;
        hl->tier_at[i] = item;
    }
    return true;
}

/* `tiers:` as a mapping tier name -> fields: overrides existing tiers. */
static bool tiers_by_name(HwLoad *hl, const YamlDocNode *map)
{
    NetHardware *hw = hl->hw;
    for (uint32_t i = 0; i < yamldoc_map_len(map); i++) {
        const YamlDocNode *k = yamldoc_map_key(map, i);
        int t = net_hardware_tier(hw, k->text);
        if (t < 0) {
            const char *names[NET_MAX_TIERS + 1] = {0};
            for (uint32_t j = 0; j < hw->n_tiers; j++)
                names[j] = hw->tiers[j].name;
            g_autofree char *hint = yamldoc_suggestion(k->text, names);
            return yamldoc_fail(hl->doc, k, k->text, "no tier named '%s' in hardware '%s'; %s",
                                k->text, hw->name, hint);
        }
        if (!tier_fields(hl, yamldoc_map_value(map, i), false, k->text, &hw->tiers[t]))
            return false;
        hl->tier_at[t] = k;
    }
    return true;
}

/* Exactly one of two alternative keys (e.g. hbm_gb / hbm_gib) may appear in one mapping. */
static bool one_of(HwLoad *hl, const YamlDocNode *m, const char *a, const char *b, const char *what,
                   bool required)
{
    const YamlDocNode *ka = yamldoc_map_get_key(m, a), *kb = yamldoc_map_get_key(m, b);
    if (ka && kb) {
        const YamlDocNode *later = ka->line > kb->line ? ka : kb;
        return yamldoc_fail(hl->doc, later, later->text,
                            "%s is given twice; keep one of %s (decimal) and %s (binary)", what, a,
                            b);
    }
    if (required && !ka && !kb)
        return yamldoc_fail(hl->doc, m, a, "missing; a hardware file needs %s: %s or %s", what, a,
                            b);
    return true;
}

static bool compute_peaks(HwLoad *hl, const YamlDocNode *m)
{
    YamlDoc *d = hl->doc;
    const char *names[NET_PEAK_COUNT + 1] = {0};
    for (int i = 0; i < NET_PEAK_COUNT; i++)
        names[i] = net_peak_dtype_name((NetPeakDtype)i);
    if (!yamldoc_expect_map(d, m, "compute_tflops",
                            "a mapping dtype -> dense TFLOPS, e.g. {bf16: 989, fp8: 1979}") ||
        !yamldoc_check_keys(d, m, names, NULL, "compute_tflops"))
        return false;
    for (int i = 0; i < NET_PEAK_COUNT; i++) {
        const YamlDocNode *n = yamldoc_map_get(m, names[i]);
        double v = 0;
        if (!n)
            continue;
        if (!yamldoc_get_number(d, n, names[i], 0, false, MAX_TFLOPS,
                                i == NET_PEAK_INT8 ? "TOPS (dense)" : "TFLOPS (dense)", &v))
            return false;
        hl->hw->peak_flops[i] = v * 1e12;
    }
    return true;
}

/* Applies the top-level keys of mapping `m` (already checked against the valid keys). */
static bool apply_map(HwLoad *hl, const YamlDocNode *m)
{
    YamlDoc *d = hl->doc;
    NetHardware *hw = hl->hw;
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(m, "name")) && !set_name(hl, n, "name", hw->name))
        return false;
    if ((n = yamldoc_map_get(m, "description")) && n->type != YAMLDOC_SCALAR)
        return yamldoc_fail(d, n, "description", "expected a string; valid: free text");

    if ((n = yamldoc_map_get(m, "devices_per_node"))) {
        int64_t v = 0;
        if (!yamldoc_get_int(d, n, "devices_per_node", 1, MAX_DEVICES_PER_NODE, &v))
            return false;
        uint32_t old = hw->devices_per_node;
        hw->devices_per_node = (uint32_t)v;
        /* Node-wide tiers follow the node (the tiers key, applied below, may still set them). */
        for (uint32_t i = 0; !hl->whole && i + 1 < hw->n_tiers; i++)
            if (hw->tiers[i].span_devices == old && old != hw->devices_per_node) {
                hw->tiers[i].span_devices = hw->devices_per_node;
                hl->tier_at[i] = yamldoc_map_get_key(m, "devices_per_node");
            }
    } else if (hl->whole) {
        return yamldoc_fail(d, m, "devices_per_node",
                            "missing; a hardware file needs devices_per_node: N (1..%d)",
                            MAX_DEVICES_PER_NODE);
    }

    if ((n = yamldoc_map_get(m, "compute_tflops")) && !compute_peaks(hl, n))
        return false;

    if (!one_of(hl, m, "hbm_gb", "hbm_gib", "HBM capacity", false) ||
        !one_of(hl, m, "hbm_bandwidth_gb_s", "hbm_bandwidth_tib_s", "HBM bandwidth", false))
        return false;
    double v = 0;
    if ((n = yamldoc_map_get(m, "hbm_gb"))) {
        if (!yamldoc_get_number(d, n, "hbm_gb", 0, false, MAX_GB, "GB (decimal, 1e9 bytes)", &v))
            return false;
        hw->hbm_bytes = (uint64_t)llround(v * 1e9);
    }
    if ((n = yamldoc_map_get(m, "hbm_gib"))) {
        if (!yamldoc_get_number(d, n, "hbm_gib", 0, false, MAX_GB, "GiB (binary, 2^30 bytes)", &v))
            return false;
        hw->hbm_bytes = (uint64_t)llround(v * GIB);
    }
    if ((n = yamldoc_map_get(m, "hbm_bandwidth_gb_s"))) {
        if (!yamldoc_get_number(d, n, "hbm_bandwidth_gb_s", 0, false, MAX_BW_GB_S, "GB/s (decimal)",
                                &v))
            return false;
        hw->hbm_bw_bytes_per_s = v * 1e9;
    }
    if ((n = yamldoc_map_get(m, "hbm_bandwidth_tib_s"))) {
        if (!yamldoc_get_number(d, n, "hbm_bandwidth_tib_s", 0, false, MAX_HBM_TIB_S,
                                "TiB/s (binary, 2^40 bytes/s)", &v))
            return false;
        hw->hbm_bw_bytes_per_s = v * TIB;
    }

    if ((n = yamldoc_map_get(m, "launch_latency_us"))) {
        if (!get_us_ns(hl, n, "launch_latency_us", &hw->launch_latency_ns))
            return false;
    } else if (hl->whole) {
        return yamldoc_fail(d, m, "launch_latency_us",
                            "missing; a hardware file needs launch_latency_us: the fixed cost of "
                            "one collective call in microseconds (e.g. 6.6, NCCL's base)");
    }

    hl->tiers_at = yamldoc_map_get_key(m, "tiers");
    if ((n = yamldoc_map_get(m, "tiers"))) {
        if (n->type == YAMLDOC_SEQ) {
            if (!tiers_list(hl, n))
                return false;
        } else if (!hl->whole && n->type == YAMLDOC_MAP) {
            if (!tiers_by_name(hl, n))
                return false;
        } else {
            g_autofree char *got = yamldoc_describe(n);
            return yamldoc_fail(d, n, "tiers", "expected a list%s, got %s; valid: %s",
                                hl->whole ? "" : " or a mapping", got,
                                hl->whole ? "a list of tiers, narrowest first, e.g. [{name: "
                                            "nvlink, span: node, bandwidth_gb_s: 450, "
                                            "latency_us: 0.6}, ...]"
                                          : "a mapping tier name -> fields, e.g. {ib: "
                                            "{bandwidth_gb_s: 25}}, or a full list of tiers");
        }
    } else if (hl->whole) {
        return yamldoc_fail(d, m, "tiers",
                            "missing; a hardware file needs tiers: a list of link tiers, "
                            "narrowest first, the last one with span: cluster");
    }
    return true;
}

/* Runs net_hardware_check(). On failure, points at the tier its message names (the first
 * "tier 'NAME'"), as last set in this document, or at `fallback`. */
static bool check(HwLoad *hl, const YamlDocNode *fallback, const char *fallback_key,
                  const char *prefix)
{
    char why[256];
    if (net_hardware_check(hl->hw, why, sizeof why))
        return true;
    const YamlDocNode *at = fallback;
    const char *key = fallback_key;
    const char *q = strstr(why, "tier '");
    if (q) {
        q += strlen("tier '");
        const char *end = strchr(q, '\'');
        g_autofree char *name = end ? g_strndup(q, (gsize)(end - q)) : NULL;
        int t = name ? net_hardware_tier(hl->hw, name) : -1;
        if (t >= 0 && hl->tier_at[t]) {
            at = hl->tier_at[t];
            key = at->type == YAMLDOC_SCALAR ? at->text : "tiers";
        }
    }
    return yamldoc_fail(hl->doc, at, key, "%s%s", prefix, why);
}

/* ---- loading a whole file ---- */

static char *default_name(const char *display)
{
    char *base = g_path_get_basename(display);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    return base;
}

static bool load_text(const char *text, size_t len, const char *display, NetHardware *out,
                      GError **error)
{
    YamlDoc doc = {.file = display, .what = "hardware file", .top_keys = file_keys, .error = error};
    g_autoptr(YamlDocNode) root = yamldoc_parse(&doc, text, len);
    if (!root)
        return false;
    if (!yamldoc_check_keys(&doc, root, file_keys, NULL, "the hardware file"))
        return false;
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    HwLoad hl = {.doc = &doc, .hw = &hw, .whole = true};
    if (!yamldoc_map_get(root, "name")) {
        g_autofree char *name = default_name(display);
        if (strlen(name) >= NET_NAME_MAX)
            name[NET_NAME_MAX - 1] = '\0';
        g_strlcpy(hw.name, name, sizeof hw.name);
    }
    if (!apply_map(&hl, root))
        return false;
    if (!check(&hl, hl.tiers_at ? hl.tiers_at : root, "tiers", ""))
        return false;
    *out = hw;
    return true;
}

bool hardware_load_string(const char *text, gssize len, const char *display_name, NetHardware *out,
                          GError **error)
{
    g_return_val_if_fail(text != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    return load_text(text, len < 0 ? strlen(text) : (size_t)len,
                     display_name ? display_name : "<string>", out, error);
}

bool hardware_load_file(const char *path, NetHardware *out, GError **error)
{
    g_return_val_if_fail(path != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: cannot read the hardware file: %s", path, ioerr->message);
        return false;
    }
    return load_text(text, len, path, out, error);
}

bool hardware_load_preset(const char *name, NetHardware *out, GError **error)
{
    g_return_val_if_fail(name != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    if (!hardware_is_preset(name)) {
        g_autofree char *hint = yamldoc_suggestion(name, preset_names);
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "unknown hardware preset '%s'; %s", name, hint);
        return false;
    }
    g_autofree char *rpath = g_strdup_printf("/org/ranksim/presets/%s.yaml", name);
    g_autofree char *display = g_strdup_printf("net/presets/%s.yaml", name);
    g_autoptr(GError) rerr = NULL;
    g_autoptr(GBytes) data = g_resource_lookup_data(embedded_resource(), rpath,
                                                    G_RESOURCE_LOOKUP_FLAGS_NONE, &rerr);
    if (!data) {
        /* The preset list and net/presets/presets.gresource.xml disagree: a build problem. */
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: the preset is not built into this binary: %s", display, rerr->message);
        return false;
    }
    gsize len = 0;
    const char *text = g_bytes_get_data(data, &len);
    return load_text(text, len, display, out, error);
}

/* ---- overrides ---- */

bool hardware_apply_overrides(YamlDoc *doc, const YamlDocNode *map, const char *key,
                              const char *const *skip, NetHardware *hw)
{
    g_return_val_if_fail(doc != NULL && map != NULL && hw != NULL, false);
    g_autoptr(GPtrArray) valid = g_ptr_array_new();
    for (size_t i = 0; skip && skip[i]; i++)
        g_ptr_array_add(valid, (gpointer)skip[i]);
    for (size_t i = 0; override_keys[i]; i++)
        g_ptr_array_add(valid, (gpointer)override_keys[i]);
    g_ptr_array_add(valid, NULL);
    if (!yamldoc_expect_map(doc, map, key, "a mapping of hardware keys") ||
        !yamldoc_check_keys(doc, map, (const char *const *)valid->pdata, file_keys, key))
        return false;
    HwLoad hl = {.doc = doc, .hw = hw, .whole = false};
    if (!apply_map(&hl, map))
        return false;
    return check(&hl, map, key, "the hardware after these overrides is inconsistent: ");
}
