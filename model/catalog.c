/* model/catalog.c — Hub id -> preset + quantization_config: the embedded catalog and the name
 * rules of catalog.h.
 *
 * The catalog (GResource /org/ranksim/catalog/catalog.json) and the preset folder
 * (/org/ranksim/models/) are read once, under g_once, into an immutable Catalog: entries with
 * their quantization_config already serialised, the alias table and the per-publisher formats.
 * A malformed catalog is a build problem; it is kept as a message and returned by every
 * resolution rather than aborting.
 *
 * Name rules work on a lowercased copy of the name after the last '/'; suffix stripping is a
 * loop over small tables, so a name is read in O(suffixes x length) per pass. Edit distance for
 * suggestions is the two-row Levenshtein, O(len_a x len_b) per preset.
 */
#include "catalog.h"
#include "../sched/json-bounded.h"

#include <stdint.h>
#include <string.h>

#include <gio/gio.h>
#include <json-glib/json-glib.h>

/* Generated from model/presets/presets.gresource.xml (c_name ranksim_models). */
extern GResource *ranksim_models_get_resource(void);

#define CATALOG_PATH "/org/ranksim/catalog/catalog.json"
#define PRESET_DIR "/org/ranksim/models/"

G_DEFINE_QUARK(model - catalog - error - quark, model_catalog_error)

typedef struct {
    char *id;
    char *preset;
    char *format; /* the entry's own "format", else NULL (then the name's) */
    char *qc;     /* serialised quantization_config, or NULL */
    bool inferred;
} CatalogEntry;

typedef struct {
    char *org; /* as written; compared case-insensitively */
    char *format;
    char *note;
    char *qc;
} OrgFormat;

typedef struct {
    char *error; /* non-NULL: the catalog could not be read */
    CatalogEntry *entries;
    size_t n_entries;
    const char **ids;    /* NULL-terminated, points into entries */
    GHashTable *aliases; /* lowercase name -> preset (owned strings) */
    OrgFormat *org_formats;
    size_t n_org_formats;
    char **presets; /* sorted, NULL-terminated */
} Catalog;

/* ---- loading ---- */

static char **list_presets(GResource *res, GError **error)
{
    g_auto(GStrv) children =
        g_resource_enumerate_children(res, PRESET_DIR, G_RESOURCE_LOOKUP_FLAGS_NONE, error);
    if (!children)
        return NULL;
    GPtrArray *names = g_ptr_array_new();
    for (size_t i = 0; children[i]; i++)
        if (g_str_has_suffix(children[i], ".json"))
            g_ptr_array_add(names, g_strndup(children[i], strlen(children[i]) - strlen(".json")));
    g_ptr_array_add(names, NULL);
    char **v = (char **)g_ptr_array_free(names, FALSE);
    size_t n = g_strv_length(v);
    /* insertion sort: a few dozen names, once */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v;
}

static bool is_preset(const Catalog *c, const char *name)
{
    for (size_t i = 0; c->presets[i]; i++)
        if (strcmp(c->presets[i], name) == 0)
            return true;
    return false;
}

static const char *member_string(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(n);
}

/* Serialises member `key` when it is an object; NULL when absent or null. */
static char *member_json(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return NULL;
    return json_to_string(n, FALSE);
}

static char *read_entries(Catalog *c, JsonObject *root)
{
    JsonNode *mn = json_object_get_member(root, "models");
    if (!mn || !JSON_NODE_HOLDS_ARRAY(mn))
        return g_strdup("catalog.json: 'models' must be an array");
    JsonArray *models = json_node_get_array(mn);
    c->n_entries = json_array_get_length(models);
    c->entries = g_new0(CatalogEntry, c->n_entries);
    c->ids = g_new0(const char *, c->n_entries + 1);
    for (guint i = 0; i < c->n_entries; i++) {
        JsonNode *en = json_array_get_element(models, i);
        if (!JSON_NODE_HOLDS_OBJECT(en))
            return g_strdup_printf("catalog.json: models[%u] is not an object", i);
        JsonObject *e = json_node_get_object(en);
        const char *id = member_string(e, "id"), *preset = member_string(e, "preset");
        if (!id || !preset)
            return g_strdup_printf("catalog.json: models[%u] needs string 'id' and 'preset'", i);
        if (!is_preset(c, preset))
            return g_strdup_printf("catalog.json: entry '%s' names preset '%s', which is not "
                                   "built in",
                                   id, preset);
        JsonNode *qn = json_object_get_member(e, "quantization_config");
        if (qn && !JSON_NODE_HOLDS_NULL(qn) && !JSON_NODE_HOLDS_OBJECT(qn))
            return g_strdup_printf("catalog.json: entry '%s': quantization_config must be an "
                                   "object or null",
                                   id);
        for (guint j = 0; j < i; j++)
            if (g_ascii_strcasecmp(c->entries[j].id, id) == 0)
                return g_strdup_printf("catalog.json: entry '%s' is listed twice", id);
        CatalogEntry *ce = &c->entries[i];
        ce->id = g_strdup(id);
        ce->preset = g_strdup(preset);
        ce->format = g_strdup(member_string(e, "format"));
        ce->qc = member_json(e, "quantization_config");
        JsonNode *inf = json_object_get_member(e, "inferred");
        ce->inferred = inf && JSON_NODE_HOLDS_VALUE(inf) &&
                       json_node_get_value_type(inf) == G_TYPE_BOOLEAN &&
                       json_node_get_boolean(inf);
        c->ids[i] = ce->id;
    }
    return NULL;
}

static char *read_aliases(Catalog *c, JsonObject *root)
{
    c->aliases = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    JsonNode *an = json_object_get_member(root, "aliases");
    if (!an)
        return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(an))
        return g_strdup("catalog.json: 'aliases' must be an object");
    JsonObject *a = json_node_get_object(an);
    g_autoptr(GList) keys = json_object_get_members(a);
    for (GList *k = keys; k; k = k->next) {
        const char *to = member_string(a, k->data);
        if (!to || !is_preset(c, to))
            return g_strdup_printf("catalog.json: alias '%s' must name a built-in preset",
                                   (const char *)k->data);
        g_hash_table_insert(c->aliases, g_ascii_strdown(k->data, -1), g_strdup(to));
    }
    return NULL;
}

static char *read_org_formats(Catalog *c, JsonObject *root)
{
    JsonNode *fn = json_object_get_member(root, "org_formats");
    if (!fn)
        return NULL;
    if (!JSON_NODE_HOLDS_ARRAY(fn))
        return g_strdup("catalog.json: 'org_formats' must be an array");
    JsonArray *arr = json_node_get_array(fn);
    c->n_org_formats = json_array_get_length(arr);
    c->org_formats = g_new0(OrgFormat, c->n_org_formats);
    for (guint i = 0; i < c->n_org_formats; i++) {
        JsonNode *n = json_array_get_element(arr, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
        const char *org = o ? member_string(o, "org") : NULL;
        const char *format = o ? member_string(o, "format") : NULL;
        if (!org || !format)
            return g_strdup_printf("catalog.json: org_formats[%u] needs 'org' and 'format'", i);
        c->org_formats[i].org = g_strdup(org);
        c->org_formats[i].format = g_strdup(format);
        c->org_formats[i].note = g_strdup(member_string(o, "note"));
        c->org_formats[i].qc = member_json(o, "quantization_config");
    }
    return NULL;
}

static gpointer catalog_load(gpointer unused)
{
    (void)unused;
    Catalog *c = g_new0(Catalog, 1);
    c->ids = g_new0(const char *, 1);
    GResource *res = ranksim_models_get_resource();
    g_autoptr(GError) err = NULL;
    c->presets = list_presets(res, &err);
    if (!c->presets) {
        c->presets = g_new0(char *, 1);
        c->error =
            g_strdup_printf("the preset folder is not built into this binary: %s", err->message);
        return c;
    }
    g_autoptr(GBytes) data =
        g_resource_lookup_data(res, CATALOG_PATH, G_RESOURCE_LOOKUP_FLAGS_NONE, &err);
    if (!data) {
        c->error = g_strdup_printf("model/presets/catalog.json is not built into this binary: %s",
                                   err->message);
        return c;
    }
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    gsize len = 0;
    const char *text = g_bytes_get_data(data, &len);
    if (!sched_json_load(parser, text, (gssize)len, &err)) {
        c->error = g_strdup_printf("model/presets/catalog.json: %s", err->message);
        return c;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        c->error = g_strdup("model/presets/catalog.json: expected an object at the top level");
        return c;
    }
    JsonObject *o = json_node_get_object(root);
    g_free(c->ids);
    c->ids = NULL;
    char *msg = read_entries(c, o);
    if (!msg)
        msg = read_aliases(c, o);
    if (!msg)
        msg = read_org_formats(c, o);
    if (!c->ids)
        c->ids = g_new0(const char *, 1);
    if (msg) {
        c->error = msg;
        c->ids[0] = NULL; /* list nothing from a half-read catalog */
    }
    return c;
}

/* The process-wide catalog; never freed (static data of the binary). */
static const Catalog *catalog(void)
{
    static GOnce once = G_ONCE_INIT;
    return g_once(&once, catalog_load, NULL);
}

const char *const *model_catalog_ids(void)
{
    return catalog()->ids;
}

const char *const *model_catalog_presets(void)
{
    return (const char *const *)catalog()->presets;
}

void model_catalog_match_clear(ModelCatalogMatch *m)
{
    if (!m)
        return;
    g_free(m->quantization_config);
    g_free(m->how);
    memset(m, 0, sizeof *m);
}

/* ---- name rules ---- */

static const struct {
    const char *suffix;
    const char *format;
    bool kv_fp8;
} format_suffixes[] = {
    {"-quantized.w8a8", "w8a8", false},
    {"-quantized.w4a16", "w4a16", false},
    {"-fp8-dynamic", "fp8-dynamic", false},
    {"-fp8-kv", "fp8", true},
    {"-nvfp4", "nvfp4", false},
    {"-mxfp4", "mxfp4", false},
    {"-fp4", "nvfp4", false},
    {"-fp8", "fp8", false},
    {"-int4", "int4", false},
    {"-int8", "w8a8", false},
    {"-w8a8", "w8a8", false},
    {"-w4a16", "w4a16", false},
    {"-awq", "awq", false},
    {"-gptq", "gptq", false},
    {"-bf16", "bf16", false},
};

/* Words that name a release of the same architecture. */
static const char *const variant_suffixes[] = {"-instruct", "-chat", "-base",    "-thinking", "-it",
                                               "-hf",       "-v0.1", "-preview", "-exp"};

static bool strip(char *s, const char *suffix)
{
    size_t len = strlen(s), n = strlen(suffix);
    if (len <= n || !g_str_has_suffix(s, suffix))
        return false;
    s[len - n] = '\0';
    return true;
}

static bool ends_with_format(const char *s)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_suffixes); i++) {
        size_t len = strlen(s), n = strlen(format_suffixes[i].suffix);
        if (len > n && g_str_has_suffix(s, format_suffixes[i].suffix))
            return true;
    }
    return false;
}

/* Strips one suffix from `s` in place; the first format suffix met (the outermost) sets
 * *format. Returns whether anything was stripped. */
static bool strip_one(char *s, const char **format, bool *kv_fp8)
{
    size_t len = strlen(s);
    /* "-v2" re-release counter, only right after a format ("...-NVFP4-v2") */
    if (len > 3 && g_str_has_suffix(s, "-v2")) {
        s[len - 3] = '\0';
        if (ends_with_format(s))
            return true;
        s[len - 3] = '-';
    }
    for (size_t i = 0; i < G_N_ELEMENTS(format_suffixes); i++)
        if (strip(s, format_suffixes[i].suffix)) {
            if (!*format)
                *format = format_suffixes[i].format;
            *kv_fp8 = *kv_fp8 || format_suffixes[i].kv_fp8;
            return true;
        }
    for (size_t i = 0; i < G_N_ELEMENTS(variant_suffixes); i++)
        if (strip(s, variant_suffixes[i]))
            return true;
    /* a date such as -0528 or -2507 */
    if (len > 5 && s[len - 5] == '-' && g_ascii_isdigit(s[len - 4]) &&
        g_ascii_isdigit(s[len - 3]) && g_ascii_isdigit(s[len - 2]) && g_ascii_isdigit(s[len - 1])) {
        s[len - 5] = '\0';
        return true;
    }
    return false;
}

/* The preset `stem` names (itself or through an alias); *alias gets the alias used. */
static const char *preset_for(const Catalog *c, const char *stem, const char **alias)
{
    *alias = NULL;
    for (size_t i = 0; c->presets[i]; i++)
        if (strcmp(c->presets[i], stem) == 0)
            return c->presets[i];
    gpointer key = NULL, value = NULL;
    if (g_hash_table_lookup_extended(c->aliases, stem, &key, &value)) {
        *alias = key;
        return value;
    }
    return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    g_autofree size_t *prev = g_new(size_t, lb + 1);
    g_autofree size_t *cur = g_new(size_t, lb + 1);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = MIN(sub, MIN(del, ins));
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

/* "a, b, c": the 3 presets nearest to `stem` (ties in name order). Caller frees. */
static char *nearest_presets(const Catalog *c, const char *stem)
{
    const char *best[3] = {NULL, NULL, NULL};
    size_t bd[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
    for (size_t i = 0; c->presets[i]; i++) {
        size_t d = edit_distance(stem, c->presets[i]);
        for (int k = 0; k < 3; k++)
            if (d < bd[k]) {
                for (int m = 2; m > k; m--) {
                    bd[m] = bd[m - 1];
                    best[m] = best[m - 1];
                }
                bd[k] = d;
                best[k] = c->presets[i];
                break;
            }
    }
    GString *s = g_string_new(NULL);
    for (int k = 0; k < 3 && best[k]; k++)
        g_string_append_printf(s, "%s%s", k ? ", " : "", best[k]);
    return g_string_free(s, FALSE);
}

static const OrgFormat *org_format(const Catalog *c, const char *org, const char *format)
{
    if (!org || !format)
        return NULL;
    for (size_t i = 0; i < c->n_org_formats; i++)
        if (g_ascii_strcasecmp(c->org_formats[i].org, org) == 0 &&
            strcmp(c->org_formats[i].format, format) == 0)
            return &c->org_formats[i];
    return NULL;
}

/* The id without surrounding blanks, a huggingface.co URL prefix or trailing '/'. Caller
 * frees. */
static char *clean_id(const char *hub_id)
{
    char *s = g_strstrip(g_strdup(hub_id));
    static const char *const prefixes[] = {"https://huggingface.co/", "http://huggingface.co/",
                                           "huggingface.co/", "hf.co/"};
    for (size_t i = 0; i < G_N_ELEMENTS(prefixes); i++)
        if (g_ascii_strncasecmp(s, prefixes[i], strlen(prefixes[i])) == 0) {
            memmove(s, s + strlen(prefixes[i]), strlen(s + strlen(prefixes[i])) + 1);
            break;
        }
    size_t len = strlen(s);
    while (len > 0 && s[len - 1] == '/')
        s[--len] = '\0';
    return s;
}

/* The entry whose id is `id` without a trailing "-NNNN" (four digits: a release date), or NULL. */
static const CatalogEntry *dated_release_entry(const Catalog *c, const char *id)
{
    size_t n = strlen(id);
    if (n < 6 || id[n - 5] != '-')
        return NULL;
    for (size_t i = n - 4; i < n; i++)
        if (!g_ascii_isdigit(id[i]))
            return NULL;
    for (size_t i = 0; i < c->n_entries; i++)
        if (strlen(c->entries[i].id) == n - 5 &&
            g_ascii_strncasecmp(c->entries[i].id, id, n - 5) == 0)
            return &c->entries[i];
    return NULL;
}

static void fill_from_entry(const CatalogEntry *e, const char *format, bool kv_fp8,
                            const char *how_extra, ModelCatalogMatch *out)
{
    memset(out, 0, sizeof *out);
    g_strlcpy(out->preset, e->preset, sizeof out->preset);
    g_strlcpy(out->catalog_id, e->id, sizeof out->catalog_id);
    g_strlcpy(out->format, e->format ? e->format : format ? format : "", sizeof out->format);
    out->kv_cache_fp8 = kv_fp8;
    out->inferred = e->inferred;
    out->quantization_config = g_strdup(e->qc);
    out->how = g_strdup_printf("catalog entry %s%s -> preset %s, %s%s", e->id, how_extra, e->preset,
                               e->qc ? "the checkpoint's quantization_config"
                               : strcmp(out->format, "bf16") == 0 ? "native dtype (bf16)"
                               : out->format[0]                   ? "format from the name"
                                                                  : "native dtype",
                               e->inferred ? " (inferred from the publisher's documented "
                                             "scheme; see catalog.json)"
                                           : "");
}

bool model_catalog_resolve(const char *hub_id, ModelCatalogMatch *out, GError **error)
{
    g_return_val_if_fail(hub_id != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    const Catalog *c = catalog();
    if (c->error) {
        g_set_error(error, MODEL_CATALOG_ERROR, MODEL_CATALOG_ERROR_CATALOG, "%s", c->error);
        return false;
    }
    g_autofree char *id = clean_id(hub_id);
    const char *slash = strrchr(id, '/');
    const char *base = slash ? slash + 1 : id;
    g_autofree char *org = slash ? g_strndup(id, (gsize)(slash - id)) : NULL;
    if (org && strchr(org, '/')) { /* "a/b/c": the org is the part before the name */
        char *o = strrchr(org, '/');
        memmove(org, o + 1, strlen(o + 1) + 1);
    }

    g_autofree char *stem = g_ascii_strdown(base, -1);
    const char *format = NULL;
    bool kv_fp8 = false;
    while (strip_one(stem, &format, &kv_fp8))
        ;

    /* 1. the catalog, by id; 2. a bare name (no org) that one entry has */
    for (size_t i = 0; i < c->n_entries; i++)
        if (g_ascii_strcasecmp(c->entries[i].id, id) == 0) {
            fill_from_entry(&c->entries[i], format, kv_fp8, "", out);
            return true;
        }
    const CatalogEntry *by_name = NULL;
    size_t n_by_name = 0;
    for (size_t i = 0; !org && i < c->n_entries; i++) {
        const char *es = strrchr(c->entries[i].id, '/');
        if (g_ascii_strcasecmp(es ? es + 1 : c->entries[i].id, base) == 0) {
            by_name = &c->entries[i];
            n_by_name++;
        }
    }
    if (n_by_name == 1) {
        fill_from_entry(by_name, format, kv_fp8, " (by name; no org given)", out);
        return true;
    }
    /* 2b. a dated re-release of a cataloged checkpoint ("moonshotai/Kimi-K2-Instruct-0905",
     * "deepseek-ai/DeepSeek-V3-0324"): publishers re-release a model's weights under a -MMDD or
     * -YYMM suffix in the format of the first release, so the entry's quantization_config is
     * taken, marked inferred (a re-release in another format carries a format word in its name,
     * which step 3 reads, or an entry of its own). */
    const CatalogEntry *dated = dated_release_entry(c, id);
    if (dated) {
        g_autofree char *extra =
            g_strdup_printf(" for the dated re-release %s (its format assumed)", id);
        fill_from_entry(dated, format, kv_fp8, extra, out);
        out->inferred = out->inferred || dated->qc != NULL;
        return true;
    }

    /* 3. name rules */
    const char *alias = NULL;
    const char *preset = preset_for(c, stem, &alias);
    if (!preset && g_str_has_prefix(stem, "meta-") && stem[5])
        preset = preset_for(c, stem + 5, &alias);
    if (!preset) {
        g_autofree char *near = nearest_presets(c, stem);
        g_autofree char *all = g_strjoinv(", ", c->presets);
        g_set_error(error, MODEL_CATALOG_ERROR, MODEL_CATALOG_ERROR_NO_MATCH,
                    "no built-in model matches '%s' (read as '%s'%s%s); nearest presets: %s; "
                    "all presets: %s",
                    hub_id, stem, format ? ", format " : "", format ? format : "", near, all);
        return false;
    }
    memset(out, 0, sizeof *out);
    g_strlcpy(out->preset, preset, sizeof out->preset);
    g_strlcpy(out->format, format ? format : "", sizeof out->format);
    out->kv_cache_fp8 = kv_fp8;
    const OrgFormat *of = org_format(c, org, format);
    out->quantization_config = of ? g_strdup(of->qc) : NULL;
    out->inferred = of != NULL;
    g_autofree char *via =
        alias ? g_strdup_printf(" (alias %s -> %s)", alias, preset) : g_strdup("");
    g_autofree char *fmt = NULL;
    if (!format) /* the preset's own checkpoint format: bf16, or its quantization_config */
        fmt = g_strdup("the preset's checkpoint format");
    else if (of)
        fmt = g_strdup_printf("format %s%s (%s)", format, kv_fp8 ? " with fp8 KV cache" : "",
                              of->note ? of->note : "the publisher's format");
    else
        fmt = g_strdup_printf("format %s%s (no catalog format for publisher '%s'; the format "
                              "alone)",
                              format, kv_fp8 ? " with fp8 KV cache" : "", org ? org : "");
    out->how = g_strdup_printf("name rule: '%s' -> preset %s%s, %s", hub_id, preset, via, fmt);
    return true;
}
