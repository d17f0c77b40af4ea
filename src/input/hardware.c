/* src/input/hardware.c — hardware YAML -> NetHardware: presets (GResource), files, overrides. The
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

#include "../util/inputfile.h"

#include <math.h>
#include <string.h>

#include <gio/gio.h>

#include "ranksim-presets.h" /* generated from net/presets/presets.gresource.xml */
#include "scenario-error.h"

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
#define MAX_COMPUTE_UNITS 65536
#define MAX_CLOCK_MHZ 1e5
#define MAX_L2_MB 1e5
#define GIB 1073741824.0    /* 2^30 */
#define TIB 1099511627776.0 /* 2^40 */

/* The presets in the order messages list them (h100, the default, first). An alias names another
 * preset's file; its description keeps that preset's name. */
static const char *const preset_names[] = {
    "h100",   "h200",      "b200",        "gb200",       "b300",    "gb300",  "a100-80gb",
    "a100",   "a100-40gb", "h20",         "h20-141g",    "h800",    "h100-pcie", "l40s",        "rtx4090", "mi300x", "mi325x",
    "mi355x", "gaudi3",    "ascend-910b", "ascend-910c", NULL,
};
static const struct {
    const char *alias, *preset;
} preset_aliases[] = {
    {"a100", "a100-80gb"},   {"h100-sxm", "h100"},      {"h100-sxm5", "h100"},
    {"h200-sxm", "h200"},    {"h800-sxm", "h800"},      {"h20-96g", "h20"},
    {"h20-141gb", "h20-141g"},
};

static const char *const file_keys[] = {
    "name",
    "description",
    "devices_per_node",
    "platform",
    "arch",
    "native_dtypes",
    "compute_tflops",
    "hbm_gb",
    "hbm_gib",
    "hbm_visible_gib",
    "hbm_visible_bytes",
    "hbm_bandwidth_gb_s",
    "hbm_bandwidth_tib_s",
    "compute_units",
    "clock_mhz",
    "l2_mb",
    "launch_latency_us",
    "tiers",
    NULL,
};
static const char *const override_keys[] = {
    "name",
    "devices_per_node",
    "platform",
    "arch",
    "native_dtypes",
    "compute_tflops",
    "hbm_gb",
    "hbm_gib",
    "hbm_visible_gib",
    "hbm_visible_bytes",
    "hbm_bandwidth_gb_s",
    "hbm_bandwidth_tib_s",
    "compute_units",
    "clock_mhz",
    "l2_mb",
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

const char *hardware_preset_file(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(preset_aliases); i++)
        if (strcmp(preset_aliases[i].alias, name) == 0)
            return preset_aliases[i].preset;
    for (size_t i = 0; preset_names[i]; i++)
        if (strcmp(preset_names[i], name) == 0)
            return preset_names[i];
    return NULL;
}

char *hardware_preset_aliases(const char *name)
{
    GString *s = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(preset_aliases); i++) {
        if (strcmp(preset_aliases[i].preset, name) != 0)
            continue;
        if (!s)
            s = g_string_new(preset_aliases[i].alias);
        else
            g_string_append_printf(s, ", %s", preset_aliases[i].alias);
    }
    return s ? g_string_free(s, FALSE) : NULL;
}

bool hardware_is_preset(const char *name)
{
    return hardware_preset_file(name) != NULL;
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

/* At most one of two alternative keys (e.g. hbm_gb / hbm_gib) may appear in one mapping;
 * `a_unit` and `b_unit` say how they differ ("decimal", "binary"). */
static bool one_of(HwLoad *hl, const YamlDocNode *m, const char *a, const char *a_unit,
                   const char *b, const char *b_unit, const char *what)
{
    const YamlDocNode *ka = yamldoc_map_get_key(m, a), *kb = yamldoc_map_get_key(m, b);
    if (ka && kb) {
        const YamlDocNode *later = ka->line > kb->line ? ka : kb;
        return yamldoc_fail(hl->doc, later, later->text,
                            "%s is given twice; keep one of %s (%s) and %s (%s)", what, a, a_unit,
                            b, b_unit);
    }
    return true;
}

/* HBM capacity: the datasheet's (hbm_gb / hbm_gib) and the one the software stack reports
 * (hbm_visible_gib / hbm_visible_bytes); hbm_bytes becomes the visible one when known. In
 * overrides, a datasheet capacity given without a visible one replaces both (the override
 * describes another device), so hbm_bytes is the capacity given. */
static bool hbm_capacity(HwLoad *hl, const YamlDocNode *m)
{
    YamlDoc *d = hl->doc;
    NetHardware *hw = hl->hw;
    if (!one_of(hl, m, "hbm_gb", "decimal", "hbm_gib", "binary", "HBM capacity") ||
        !one_of(hl, m, "hbm_visible_gib", "GiB", "hbm_visible_bytes", "bytes",
                "the visible HBM capacity"))
        return false;
    const YamlDocNode *n;
    double v = 0;
    bool datasheet = false, visible = false;
    if ((n = yamldoc_map_get(m, "hbm_gb"))) {
        if (!yamldoc_get_number(d, n, "hbm_gb", 0, false, MAX_GB, "GB (decimal, 1e9 bytes)", &v))
            return false;
        hw->hbm_datasheet_bytes = (uint64_t)llround(v * 1e9);
        datasheet = true;
    }
    if ((n = yamldoc_map_get(m, "hbm_gib"))) {
        if (!yamldoc_get_number(d, n, "hbm_gib", 0, false, MAX_GB, "GiB (binary, 2^30 bytes)", &v))
            return false;
        hw->hbm_datasheet_bytes = (uint64_t)llround(v * GIB);
        datasheet = true;
    }
    if ((n = yamldoc_map_get(m, "hbm_visible_gib"))) {
        if (!yamldoc_get_number(d, n, "hbm_visible_gib", 0, true, MAX_GB,
                                "GiB as torch reports it (binary, 2^30 bytes)", &v))
            return false;
        hw->hbm_visible_bytes = (uint64_t)llround(v * GIB);
        visible = true;
    }
    if ((n = yamldoc_map_get(m, "hbm_visible_bytes"))) {
        int64_t b = 0;
        if (!yamldoc_get_int(d, n, "hbm_visible_bytes", 1, (int64_t)(MAX_GB * GIB), &b))
            return false;
        hw->hbm_visible_bytes = (uint64_t)b;
        visible = true;
    }
    if (datasheet && !visible && !hl->whole)
        hw->hbm_visible_bytes = 0;
    hw->hbm_bytes = hw->hbm_visible_bytes ? hw->hbm_visible_bytes : hw->hbm_datasheet_bytes;
    return true;
}

/* "bf16, fp16, int8": the names of the dtypes in `mask`. Caller frees. */
static char *dtype_list(uint32_t mask)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < NET_PEAK_COUNT; i++)
        if (mask & NET_DTYPE_BIT(i))
            g_string_append_printf(s, "%s%s", s->len ? ", " : "",
                                   net_peak_dtype_name((NetPeakDtype)i));
    if (!s->len)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

/* "unknown, sm80, sm86, ...": the arches of platform `p`, plus unknown. Caller frees. */
static char *arches_of(NetPlatform p)
{
    GString *s = g_string_new("unknown");
    for (int a = 1; a < NET_ARCH_COUNT; a++)
        if (net_arch_platform((NetArch)a) == p)
            g_string_append_printf(s, ", %s", net_arch_name((NetArch)a));
    return g_string_free(s, FALSE);
}

/* `native_dtypes:` a list of distinct dtype names -> a NET_DTYPE_BIT mask. */
static bool native_list(HwLoad *hl, const YamlDocNode *n, uint32_t *out)
{
    YamlDoc *d = hl->doc;
    const char *names[NET_PEAK_COUNT + 1] = {0};
    for (int i = 0; i < NET_PEAK_COUNT; i++)
        names[i] = net_peak_dtype_name((NetPeakDtype)i);
    if (!yamldoc_expect_seq(d, n, "native_dtypes",
                            "a list of dtypes, e.g. [bf16, fp16, fp8, int8] (valid: bf16, fp16, "
                            "fp8, int8, fp4)"))
        return false;
    if (n->items->len == 0)
        return yamldoc_fail(d, n, "native_dtypes",
                            "empty list; give the dtypes the device computes natively, e.g. "
                            "[bf16, fp16, int8] (valid: bf16, fp16, fp8, int8, fp4)");
    uint32_t mask = 0;
    for (guint i = 0; i < n->items->len; i++) {
        const YamlDocNode *item = g_ptr_array_index(n->items, i);
        int dt = 0;
        if (!yamldoc_get_enum(d, item, "native_dtypes", names, &dt))
            return false;
        if (mask & NET_DTYPE_BIT(dt))
            return yamldoc_fail(d, item, "native_dtypes",
                                "%s is listed twice; list each dtype once", names[dt]);
        mask |= NET_DTYPE_BIT(dt);
    }
    *out = mask;
    return true;
}

/* compute_units, clock_mhz, l2_mb: optional; 0 (or absent) = unknown. */
static bool device_units(HwLoad *hl, const YamlDocNode *m)
{
    YamlDoc *d = hl->doc;
    const YamlDocNode *n;
    int64_t units = 0;
    double v = 0;
    if ((n = yamldoc_map_get(m, "compute_units"))) {
        if (!yamldoc_get_int(d, n, "compute_units", 0, MAX_COMPUTE_UNITS, &units))
            return false;
        hl->hw->compute_units = (uint32_t)units;
    }
    if ((n = yamldoc_map_get(m, "clock_mhz"))) {
        if (!yamldoc_get_number(d, n, "clock_mhz", 0, false, MAX_CLOCK_MHZ, "MHz", &v))
            return false;
        hl->hw->clock_hz = v * 1e6;
    }
    if ((n = yamldoc_map_get(m, "l2_mb"))) {
        if (!yamldoc_get_number(d, n, "l2_mb", 0, false, MAX_L2_MB, "MB (decimal)", &v))
            return false;
        hl->hw->l2_bytes = (uint64_t)llround(v * 1e6);
    }
    return true;
}

/* platform, arch and native_dtypes. An arch implies its platform; a platform given alone keeps
 * the arch only if it belongs to it (else: error). native_dtypes defaults to the arch's set
 * whenever the arch is set (a whole file always sets it); for arch unknown, to the dtypes with a
 * peak (bf16 and fp16 when no peak is given). Runs after compute_tflops: every dtype with a peak
 * must be native. */
static bool device_kind(HwLoad *hl, const YamlDocNode *m)
{
    YamlDoc *d = hl->doc;
    NetHardware *hw = hl->hw;
    const YamlDocNode *pn = yamldoc_map_get(m, "platform"), *an = yamldoc_map_get(m, "arch"),
                      *nn = yamldoc_map_get(m, "native_dtypes");
    int p = (int)hw->platform, a = (int)hw->arch;
    if (pn && !yamldoc_get_enum(d, pn, "platform", net_platform_names(), &p))
        return false;
    if (an && !yamldoc_get_enum(d, an, "arch", net_arch_names(), &a))
        return false;
    if (an && !pn && a != NET_ARCH_UNKNOWN)
        p = (int)net_arch_platform((NetArch)a);
    if (a != NET_ARCH_UNKNOWN && net_arch_platform((NetArch)a) != (NetPlatform)p) {
        g_autofree char *valid = arches_of((NetPlatform)p);
        const char *own = net_platform_name(net_arch_platform((NetArch)a));
        if (an)
            return yamldoc_fail(d, an, "arch",
                                "arch '%s' is a %s arch, but platform is %s; valid for %s: %s",
                                net_arch_name((NetArch)a), own, net_platform_name((NetPlatform)p),
                                net_platform_name((NetPlatform)p), valid);
        return yamldoc_fail(d, pn, "platform",
                            "platform %s does not fit arch '%s' of hardware '%s' (a %s arch); give "
                            "arch: too (valid for %s: %s)",
                            net_platform_name((NetPlatform)p), net_arch_name((NetArch)a), hw->name,
                            own, net_platform_name((NetPlatform)p), valid);
    }
    hw->platform = (NetPlatform)p;
    hw->arch = (NetArch)a;

    uint32_t native = hw->native_dtypes;
    if (nn) {
        if (!native_list(hl, nn, &native))
            return false;
    } else if (hl->whole || an) {
        native = net_arch_native_dtypes(hw->arch);
        if (hw->arch == NET_ARCH_UNKNOWN) {
            for (int i = 0; i < NET_PEAK_COUNT; i++)
                if (hw->peak_flops[i] > 0)
                    native |= NET_DTYPE_BIT(i);
            if (!native)
                native = NET_DTYPE_BIT(NET_PEAK_BF16) | NET_DTYPE_BIT(NET_PEAK_FP16);
        }
    }
    for (int i = 0; i < NET_PEAK_COUNT; i++) {
        if (!(hw->peak_flops[i] > 0) || (native & NET_DTYPE_BIT(i)))
            continue;
        const char *dt = net_peak_dtype_name((NetPeakDtype)i);
        const YamlDocNode *peaks = yamldoc_map_get(m, "compute_tflops");
        const YamlDocNode *at = peaks ? yamldoc_map_get(peaks, dt) : NULL;
        const char *key = dt;
        if (!at)
            at = nn, key = "native_dtypes";
        if (!at)
            at = an, key = "arch";
        if (!at)
            at = m, key = "compute_tflops";
        g_autofree char *list = dtype_list(native);
        g_autofree char *where =
            nn ? g_strdup("this device") : g_strdup_printf("arch %s", net_arch_name(hw->arch));
        return yamldoc_fail(
            d, at, key,
            "compute_tflops gives %s a peak of %g %s, but %s is not a native dtype of %s "
            "(native: %s); drop the peak, or list %s in native_dtypes",
            dt, hw->peak_flops[i] / 1e12, i == NET_PEAK_INT8 ? "TOPS" : "TFLOPS", dt, where, list,
            dt);
    }
    hw->native_dtypes = native;
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

    if (!hbm_capacity(hl, m) ||
        !one_of(hl, m, "hbm_bandwidth_gb_s", "decimal", "hbm_bandwidth_tib_s", "binary",
                "HBM bandwidth") ||
        !device_kind(hl, m))
        return false;
    double v = 0;
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

    if (!device_units(hl, m))
        return false;

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
    if (!(text = input_file_read(path, 0, &len, &ioerr))) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: cannot read the hardware file: %s", path, input_reason(ioerr, path));
        return false;
    }
    return load_text(text, len, path, out, error);
}

bool hardware_load_preset(const char *name, NetHardware *out, GError **error)
{
    g_return_val_if_fail(name != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    const char *file = hardware_preset_file(name);
    if (!file) {
        g_autofree char *hint = yamldoc_suggestion(name, preset_names);
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "unknown hardware preset '%s'; %s", name, hint);
        return false;
    }
    name = file;
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
