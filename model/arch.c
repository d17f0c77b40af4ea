/* model/arch.c — Hugging Face config.json -> ModelArch: presets (GResource), files, strings.
 *
 * One interpreter serves all three: load_text() parses with json-glib, then the read_*()
 * steps take the fields this simulator needs and ignore every other one (real config files carry
 * dozens). `name` is the preset name, else the folder of a file named config.json, else the
 * file's basename without ".json".
 *
 * Order: the language model's object is chosen (the top level, or `text_config`); hybrid
 * Mamba / linear-attention models are refused before anything else is required of them; then
 * common sizes, attention (MLA `kv_lora_rank` or GQA, per-layer sliding / chunked windows,
 * biases, sinks, q/k norms), the DSA indexer (`index_topk`, IndexShare `indexer_types`), the
 * MLP (MoE from the expert-count keys, layer placement into layer_moe[]), MTP layers, dtype,
 * max_model_len as vLLM derives it, the vision tower (vision_config) and the quantization
 * (quantization_config, or vLLM-Ascend's quant_model_description.json beside the file).
 * A field that is present but null counts as absent (`"q_lora_rank": null` is
 * DeepSeek-V2-Lite's "no q compression"). Once the structure is known the fields it needs are
 * required, each missing one reported with the reason it is needed.
 *
 * Integers are accepted as JSON integers or as integral numbers (1024.0), within
 * 0..MAX_FIELD (2^31 - 1); fields that size something must be positive.
 *
 * Costs: one parse of the document and one pass over each per-layer list. Nothing is retained:
 * the result is a plain struct, written to *out only on success. The preset list is built once
 * (g_once) from the embedded resource's folder listing.
 */
#include "arch.h"
#include "../sched/json-bounded.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>
#include <json-glib/json-glib.h>

/* Generated from model/presets/presets.gresource.xml (c_name ranksim_models). Calling it keeps
 * the resource object in a static link. */
extern GResource *ranksim_models_get_resource(void);

#define PRESET_DIR "/org/ranksim/models"

/* The embedded resource. GLib's generated getter initialises lazily without a lock, so two
 * threads loading presets at once (a sweep's workers) could race; g_once makes it safe. */
static GResource *embedded_resource(void)
{
    static gsize once = 0;
    static GResource *res = NULL;
    if (g_once_init_enter(&once)) {
        res = ranksim_models_get_resource();
        g_once_init_leave(&once, 1);
    }
    return res;
}

enum {
    ERR_IO = MODEL_ARCH_ERROR_IO,
    ERR_JSON = MODEL_ARCH_ERROR_JSON,
    ERR_FIELD = MODEL_ARCH_ERROR_FIELD
};

#define MAX_FIELD INT32_MAX                       /* largest integer a field may hold */
#define MAX_MTP_LAYERS (MODEL_QUANT_MAX_LAYERS - MODEL_MAX_LAYERS)

G_DEFINE_QUARK(model - arch - error - quark, model_arch_error)

/* ---- presets ---- */

typedef struct {
    char **names; /* sorted, NULL-terminated */
    char *joined; /* ", "-separated */
} PresetList;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every NAME.json under PRESET_DIR except catalog*.json, sorted; built once. */
static const PresetList *preset_list(void)
{
    static gsize once = 0;
    static PresetList list;
    if (g_once_init_enter(&once)) {
        g_auto(GStrv) children = g_resource_enumerate_children(embedded_resource(), PRESET_DIR,
                                                               G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
        GPtrArray *names = g_ptr_array_new();
        for (guint i = 0; children && children[i]; i++) {
            const char *c = children[i];
            size_t len = strlen(c);
            if (!g_str_has_suffix(c, ".json") || len <= strlen(".json") ||
                g_str_has_prefix(c, "catalog"))
                continue;
            g_ptr_array_add(names, g_strndup(c, len - strlen(".json")));
        }
        qsort(names->pdata, names->len, sizeof(char *), cmp_str);
        g_ptr_array_add(names, NULL);
        list.names = (char **)g_ptr_array_free(names, FALSE);
        list.joined = g_strjoinv(", ", list.names);
        g_once_init_leave(&once, 1);
    }
    return &list;
}

const char *model_arch_preset_names(void)
{
    return preset_list()->joined;
}

bool model_arch_layer_is_moe(const ModelArch *a, uint32_t layer)
{
    g_return_val_if_fail(a != NULL, false);
    if (layer >= a->num_layers || layer >= MODEL_MAX_LAYERS)
        return a->moe; /* MTP layers */
    return a->moe && a->layer_moe[layer];
}

ModelMixer model_arch_layer_mixer(const ModelArch *a, uint32_t layer)
{
    g_return_val_if_fail(a != NULL, MODEL_MIXER_ATTENTION);
    if (layer >= a->num_layers || layer >= MODEL_MAX_LAYERS)
        return MODEL_MIXER_ATTENTION; /* MTP layers */
    return (ModelMixer)a->layer_mixer[layer];
}

bool model_arch_is_hybrid(const ModelArch *a)
{
    g_return_val_if_fail(a != NULL, false);
    return a->mamba_num_heads > 0 || a->linear_num_value_heads > 0;
}

uint32_t model_arch_count_mixer(const ModelArch *a, ModelMixer m, uint32_t l0, uint32_t l1)
{
    g_return_val_if_fail(a != NULL, 0);
    uint32_t n = 0;
    for (uint32_t l = l0; l < l1 && l < a->num_layers; l++)
        n += a->layer_mixer[l] == m ||
             (m == MODEL_MIXER_MAMBA2 && a->parallel_ssm &&
              a->layer_mixer[l] == MODEL_MIXER_ATTENTION);
    return n;
}

uint32_t model_arch_expert_hidden(const ModelArch *a)
{
    g_return_val_if_fail(a != NULL, 0);
    return a->moe_latent_size ? a->moe_latent_size : a->hidden_size;
}

uint32_t model_arch_layer_heads(const ModelArch *a, uint32_t layer)
{
    g_return_val_if_fail(a != NULL, 0);
    return layer < MODEL_MAX_LAYERS && a->layer_heads[layer] ? a->layer_heads[layer] : a->num_heads;
}

uint32_t model_arch_max_heads(const ModelArch *a)
{
    g_return_val_if_fail(a != NULL, 0);
    uint32_t m = a->num_heads;
    for (uint32_t l = 0; l < a->num_layers && l < MODEL_MAX_LAYERS; l++)
        m = MAX(m, model_arch_layer_heads(a, l));
    return m;
}

uint32_t model_arch_dense_layers(const ModelArch *a)
{
    g_return_val_if_fail(a != NULL, 0);
    uint32_t n = 0;
    for (uint32_t l = 0; l < a->num_layers; l++)
        n += model_arch_layer_is_moe(a, l) ? 0 : 1;
    return n;
}

/* ---- reading fields ---- */

typedef struct {
    const char *display; /* the file as messages name it */
    JsonObject *obj;     /* the language model's object: the top level, or text_config */
    JsonObject *top;     /* the top-level object */
    const char *prefix;  /* "" or "text_config.": how messages name obj's keys */
    GError **error;
    uint32_t n_layers; /* num_hidden_layers, once read (layer-id lists check against it) */
    char keys[4][96]; /* K()'s rotating buffers */
    int next_key;
} Cfg;

/* `key` as messages name it ("text_config.hidden_size"); valid until the 4th next call. */
static const char *K(Cfg *c, const char *key)
{
    char *buf = c->keys[c->next_key++ % 4];
    g_snprintf(buf, sizeof c->keys[0], "%s%s", c->prefix, key);
    return buf;
}

static bool fail(Cfg *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(Cfg *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(c->error, MODEL_ARCH_ERROR, ERR_FIELD, "%s: %s", c->display, msg);
    return false;
}

/* Member `key` of `o`, or NULL when it is absent or null. */
static JsonNode *obj_member(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && !JSON_NODE_HOLDS_NULL(n) ? n : NULL;
}

/* The member `key` of the language model's object, or NULL when it is absent or null. */
static JsonNode *member(Cfg *c, const char *key)
{
    return obj_member(c->obj, key);
}

static const char *node_string(JsonNode *n)
{
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}

/* "a string (\"512\")", "1.5", "an array", ... for "expected X, got Y". Caller frees. */
static char *describe(JsonNode *n)
{
    switch (JSON_NODE_TYPE(n)) {
    case JSON_NODE_NULL:
        return g_strdup("null");
    case JSON_NODE_OBJECT:
        return g_strdup("an object");
    case JSON_NODE_ARRAY:
        return g_strdup("an array");
    case JSON_NODE_VALUE:
        break;
    }
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_STRING)
        return g_strdup_printf("a string (\"%s\")", json_node_get_string(n));
    if (t == G_TYPE_BOOLEAN)
        return g_strdup_printf("a boolean (%s)", json_node_get_boolean(n) ? "true" : "false");
    if (t == G_TYPE_INT64)
        return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(n));
    if (t == G_TYPE_DOUBLE) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        return g_strdup(g_ascii_dtostr(buf, sizeof buf, json_node_get_double(n)));
    }
    return g_strdup(g_type_name(t));
}

/* A JSON number as a double; false when `n` is not a number. */
static bool node_number(JsonNode *n, double *out)
{
    GType t = n && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
    if (t == G_TYPE_INT64)
        *out = (double)json_node_get_int(n);
    else if (t == G_TYPE_DOUBLE)
        *out = json_node_get_double(n);
    else
        return false;
    return true;
}

/* An integer 0..MAX_FIELD (1..MAX_FIELD when `positive`) from `n`, which may be an integral
 * double. `key` names it in messages (already prefixed). */
static bool node_uint(Cfg *c, JsonNode *n, const char *key, bool positive, uint32_t *out)
{
    const char *want = positive ? "a positive integer" : "a non-negative integer";
    double v;
    g_autofree char *got = describe(n);
    if (!node_number(n, &v) || !isfinite(v) || v != floor(v))
        return fail(c, "field '%s': expected %s, got %s", key, want, got);
    if (v < (positive ? 1 : 0))
        return fail(c, "field '%s': expected %s, got %s", key, want, got);
    if (v > MAX_FIELD)
        return fail(c, "field '%s': expected %s, got %s (at most %d)", key, want, got, MAX_FIELD);
    *out = (uint32_t)v;
    return true;
}

/* Field `key` of `o` as an integer. Absent or null: an error saying `required` ("required for
 * every model") when that is non-NULL, else `def`. */
static bool obj_uint(Cfg *c, JsonObject *o, const char *shown, const char *key, bool positive,
                     const char *required, uint32_t def, uint32_t *out)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    if (!n && required)
        return fail(c, "missing field '%s' (%s)", shown, required);
    if (n && JSON_NODE_HOLDS_NULL(n) && required)
        return fail(c, "field '%s': expected %s, got null (%s)", shown,
                    positive ? "a positive integer" : "a non-negative integer", required);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        *out = def;
        return true;
    }
    return node_uint(c, n, shown, positive, out);
}

static bool get_uint(Cfg *c, const char *key, bool positive, const char *required, uint32_t def,
                     uint32_t *out)
{
    return obj_uint(c, c->obj, K(c, key), key, positive, required, def, out);
}

static bool node_bool(Cfg *c, JsonNode *n, const char *shown, bool *out)
{
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected true or false, got %s", shown, got);
    }
    *out = json_node_get_boolean(n);
    return true;
}

static bool get_bool(Cfg *c, const char *key, bool def, bool *out)
{
    JsonNode *n = member(c, key);
    if (!n) {
        *out = def;
        return true;
    }
    return node_bool(c, n, K(c, key), out);
}

/* A string field of obj; NULL when absent/null; an error when present but not a string. */
static bool get_string(Cfg *c, const char *key, const char **out)
{
    JsonNode *n = member(c, key);
    *out = NULL;
    if (!n)
        return true;
    if (!node_string(n)) {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected a string, got %s", K(c, key), got);
    }
    *out = json_node_get_string(n);
    return true;
}

/* A list field of obj; NULL when absent/null; an error naming `what` when not a list. */
static bool get_array(Cfg *c, const char *key, const char *what, JsonArray **out)
{
    JsonNode *n = member(c, key);
    *out = NULL;
    if (!n)
        return true;
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected %s, got %s", K(c, key), what, got);
    }
    *out = json_node_get_array(n);
    return true;
}

/* `architectures[0]` of the top level, else `model_type`, else "" (informative only). */
static bool get_architecture(Cfg *c, char *dst, size_t size)
{
    JsonNode *n = obj_member(c->top, "architectures");
    const char *s = "";
    if (n) {
        JsonArray *a = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
        JsonNode *first = a && json_array_get_length(a) > 0 ? json_array_get_element(a, 0) : NULL;
        if (!a || (first && !node_string(first))) {
            g_autofree char *got = describe(first ? first : n);
            return fail(c,
                        "field 'architectures': expected a list of class names such as "
                        "[\"DeepseekV3ForCausalLM\"], got %s",
                        got);
        }
        if (first)
            s = json_node_get_string(first);
    }
    const char *mt = node_string(obj_member(c->top, "model_type"));
    if (!*s && mt)
        s = mt;
    g_strlcpy(dst, s, size);
    return true;
}

/* ---- families: tensors that exist by model class, with no field saying so ---- */

static bool is_type(const ModelArch *a, const char *t)
{
    return strcmp(a->model_type, t) == 0;
}

static bool is_qwen2(const ModelArch *a)
{
    return is_type(a, "qwen2") || is_type(a, "qwen2_moe");
}

static bool is_qwen3(const ModelArch *a)
{
    return is_type(a, "qwen3") || is_type(a, "qwen3_moe");
}

static bool is_llama4(const ModelArch *a)
{
    return is_type(a, "llama4_text") || is_type(a, "llama4");
}

/* ---- hybrid models: refused, never simulated as something else ---- */

/* "WHAT; ranksim models ...; hybrid KIND models are not simulated". Returns false. */
static bool refuse(Cfg *c, const char *what, const char *kind)
{
    return fail(c,
                "%s; ranksim models full and sliding-window attention only; hybrid %s models "
                "are not simulated",
                what, kind);
}

/* layer_types entries ranksim models; every other one is refused below or reported as invalid. */
static bool attention_layer_type(const char *s)
{
    return strcmp(s, "full_attention") == 0 || strcmp(s, "sliding_attention") == 0 ||
           strcmp(s, "chunked_attention") == 0;
}

/* model_types whose layers are (partly) Mamba, state-space or linear attention. */
static const char *const hybrid_model_types[] = {
    "nemotron_h",  "qwen3_next",       "falcon_h1",  "jamba",
    "minimax",     "minimax_text_01",  "minimax_m1", "mamba",
    "mamba2",      "falcon_mamba",     "zamba",      "zamba2",
    "bamba",       "granitemoehybrid", "plamo2",     "lfm2",
    "kimi_linear", "recurrent_gemma",  "rwkv",       NULL};

/* Key prefixes only hybrid / state-space configs use (Jamba, Falcon-H1, Nemotron-H: mamba_*,
 * ssm_*; Qwen3-Next, Kimi-Linear: linear_*). */
static const char *const hybrid_key_prefixes[] = {"mamba", "ssm_", "linear_", NULL};

/* Nemotron-H `hybrid_override_pattern`: M = Mamba-2, * = attention, - = MLP, E = MoE. */
static bool refuse_pattern(Cfg *c, const char *pattern)
{
    uint32_t mamba = 0, n = (uint32_t)strlen(pattern);
    for (uint32_t i = 0; i < n; i++)
        mamba += pattern[i] == 'M';
    g_autofree char *what = g_strdup_printf("field '%s': %u of %u layers are 'M' (Mamba-2)",
                                            K(c, "hybrid_override_pattern"), mamba, n);
    return refuse(c, what, "Mamba");
}

/* layer_types entries that are linear attention / Mamba / convolutions (Qwen3-Next, LFM2...). */
static bool check_layer_types(Cfg *c, JsonArray *arr, const char *model_type)
{
    guint len = json_array_get_length(arr), count = 0;
    const char *first = NULL;
    for (guint i = 0; i < len; i++) {
        const char *s = node_string(json_array_get_element(arr, i));
        if (!s || attention_layer_type(s))
            continue;
        if (!strstr(s, "linear") && !strstr(s, "mamba") && !strstr(s, "conv") &&
            !strstr(s, "recurrent") && !strstr(s, "ssm"))
            continue; /* an unknown entry: read_layer_types names it */
        if (!first)
            first = s;
        count += strcmp(s, first) == 0;
    }
    if (!first)
        return true;
    bool deltanet = model_type && strcmp(model_type, "qwen3_next") == 0 &&
                    strcmp(first, "linear_attention") == 0;
    g_autofree char *what =
        g_strdup_printf("field '%s': %u of %u layers are '%s'%s", K(c, "layer_types"), count, len,
                        first, deltanet ? " (Gated DeltaNet)" : "");
    return refuse(c, what, strstr(first, "mamba") ? "Mamba" : "linear-attention");
}

/* MiniMax-Text-01 / M1 `attn_type_list`: 0 = lightning (linear) attention, 1 = softmax. */
static bool check_attn_type_list(Cfg *c, JsonArray *arr)
{
    guint len = json_array_get_length(arr), linear = 0;
    for (guint i = 0; i < len; i++) {
        double x;
        linear += node_number(json_array_get_element(arr, i), &x) && x == 0;
    }
    if (linear == 0)
        return true;
    g_autofree char *what = g_strdup_printf(
        "field '%s': %u of %u layers are 0 (lightning attention, a linear attention)",
        K(c, "attn_type_list"), linear, len);
    return refuse(c, what, "linear-attention");
}

/* Refuses the object c->obj when it describes a hybrid model. */
/* Hybrid model_types ranksim lowers (read_hybrid reads their fields). */
static bool hybrid_modelled(const char *model_type)
{
    static const char *const modelled[] = {"nemotron_h", "qwen3_next", "falcon_h1",
                                           "granitemoehybrid", NULL};
    for (size_t i = 0; model_type && modelled[i]; i++)
        if (strcmp(model_type, modelled[i]) == 0)
            return true;
    return false;
}

static bool check_hybrid(Cfg *c)
{
    const char *mt = node_string(member(c, "model_type"));
    if (hybrid_modelled(mt))
        return true;
    const char *pattern = node_string(member(c, "hybrid_override_pattern"));
    JsonNode *types = member(c, "layer_types");
    JsonNode *attn = member(c, "attn_type_list");
    if (pattern)
        return refuse_pattern(c, pattern);
    if (types && JSON_NODE_HOLDS_ARRAY(types) &&
        !check_layer_types(c, json_node_get_array(types), mt))
        return false;
    if (attn && JSON_NODE_HOLDS_ARRAY(attn) && !check_attn_type_list(c, json_node_get_array(attn)))
        return false;
    if (member(c, "full_attention_interval")) {
        uint32_t k = 0;
        if (!get_uint(c, "full_attention_interval", true, NULL, 1, &k))
            return false;
        g_autofree char *what = g_strdup_printf(
            "field '%s': one layer in %u is full attention, the others are linear attention "
            "(Gated DeltaNet)",
            K(c, "full_attention_interval"), k);
        return refuse(c, what, "linear-attention");
    }
    g_autoptr(GList) keys = json_object_get_members(c->obj);
    for (GList *l = keys; l; l = l->next) {
        const char *key = l->data;
        for (size_t i = 0; hybrid_key_prefixes[i]; i++) {
            if (!g_str_has_prefix(key, hybrid_key_prefixes[i]))
                continue;
            const char *kind =
                g_str_has_prefix(key, "linear_") ? "linear-attention" : "Mamba / state-space";
            g_autofree char *what =
                g_strdup_printf("field '%s': a %s layer setting", K(c, key), kind);
            return refuse(c, what, kind);
        }
    }
    for (size_t i = 0; mt && hybrid_model_types[i]; i++) {
        if (strcmp(mt, hybrid_model_types[i]) != 0)
            continue;
        g_autofree char *what =
            g_strdup_printf("field '%s': '%s' is a hybrid Mamba / linear-attention architecture",
                            K(c, "model_type"), mt);
        return refuse(c, what, "Mamba / linear-attention");
    }
    return true;
}

/* Structures that are neither hybrid nor anything ranksim lowers, by the field that announces
 * them: simulating them as the nearest known model would be wrong, so they are refused by name. */
static const struct {
    const char *key;
    const char *what;
} unmodelled_keys[] = {
    {"compress_ratios", "compressed sparse attention (DeepSeek-V4 CSA / HCA: KV compressed "
                        "per layer by these ratios)"},
    {"hc_mult", "hyper-connections (several residual streams mixed per layer)"},
    {"o_groups", "a grouped low-rank output projection"},
    {NULL, NULL},
};

static bool check_unmodelled(Cfg *c)
{
    const char *mt = node_string(member(c, "model_type"));
    /* their keys are read by read_dsv4 */
    bool v4 = mt && (strcmp(mt, "deepseek_v4") == 0 || strcmp(mt, "deepseek_v41_text") == 0);
    for (size_t i = 0; unmodelled_keys[i].key; i++) {
        if (v4)
            continue;
        JsonNode *n = member(c, unmodelled_keys[i].key);
        if (!n || (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
                   !json_node_get_boolean(n)))
            continue;
        return fail(c, "field '%s': %s is not modelled; ranksim does not simulate this "
                       "architecture rather than simulate it as another one",
                    K(c, unmodelled_keys[i].key), unmodelled_keys[i].what);
    }
    return true;
}

/* DeepSeek-V4's own structure (deepseek_v4.py): per-layer compress ratios (0 and 1: the sliding
 * window alone), the grouped output projection, hyper-connections, hash-routed first layers.
 * The indexer of its C4 layers is not a DSA model's (no indexer on the other layers): a->dsa
 * stays false, the index_* sizes are kept. */
static bool read_dsv41(Cfg *c, ModelArch *a, JsonArray *ratios);

static bool read_dsv4(Cfg *c, ModelArch *a)
{
    bool v41 = is_type(a, "deepseek_v41_text");
    if (!is_type(a, "deepseek_v4") && !v41)
        return true;
    static const char why[] = "required for DeepSeek-V4 (model_type deepseek_v4)";
    JsonArray *ratios = NULL;
    a->dsv4 = true;
    a->dsa = false;
    if (!get_array(c, "compress_ratios", "a list of per-layer compress ratios (0, 1, 4, 128)",
                   &ratios) ||
        !get_uint(c, "o_groups", true, why, 0, &a->o_groups) ||
        !get_uint(c, "o_lora_rank", true, why, 0, &a->o_lora_rank) ||
        !get_uint(c, "hc_mult", true, NULL, 1, &a->hc_mult) ||
        !get_uint(c, "num_hash_layers", false, NULL, 0, &a->num_hash_layers) ||
        !get_uint(c, "q_lora_rank", true, why, 0, &a->q_lora_rank) ||
        !get_uint(c, "qk_rope_head_dim", true, why, 0, &a->qk_rope_head_dim) ||
        !get_uint(c, "index_topk", true, why, 0, &a->index_topk) ||
        !get_uint(c, "index_n_heads", true, why, 0, &a->index_n_heads) ||
        !get_uint(c, "index_head_dim", true, why, 0, &a->index_head_dim))
        return false;
    if (!ratios)
        return fail(c, "missing field '%s' (%s)", K(c, "compress_ratios"), why);
    if (json_array_get_length(ratios) < a->num_layers)
        return fail(c, "field '%s': %u entries, but num_hidden_layers is %u",
                    K(c, "compress_ratios"), json_array_get_length(ratios), a->num_layers);
    if (a->num_kv_heads != 1 || a->o_groups == 0 || a->num_heads % a->o_groups != 0)
        return fail(c, "fields 'num_key_value_heads' %u, 'o_groups' %u: DeepSeek-V4 has one "
                       "latent KV head and o_groups dividing the %u heads",
                    a->num_kv_heads, a->o_groups, a->num_heads);
    if (v41 && !read_dsv41(c, a, ratios))
        return false;
    for (uint32_t i = 0; i < a->num_layers && !v41; i++) {
        uint32_t r = 0;
        if (!node_uint(c, json_array_get_element(ratios, i), K(c, "compress_ratios"), false, &r))
            return false;
        if (r > 1 && r != 4 && r != 128)
            return fail(c, "field '%s': entry %u is %u; valid: 0, 1, 4, 128",
                        K(c, "compress_ratios"), i, r);
        a->compress_ratio[i] = (uint8_t)MAX(1u, r); /* vLLM: max(1, ratio) */
    }
    if (a->num_hash_layers > a->num_layers)
        return fail(c, "field '%s': %u exceeds num_hidden_layers (%u)", K(c, "num_hash_layers"),
                    a->num_hash_layers, a->num_layers);
    a->attention_sinks = true; /* attn_sink, fp32, one per local head */
    a->router_score_bias = true; /* noaux_tc on the layers after the hash layers */
    return true;
}

/* A list of layer ids (`key`) into flags; absent: `defaults` (-1 terminated), the released
 * checkpoint's as transformers' DeepseekV41TextConfig documents them. */
static bool read_layer_ids(Cfg *c, const char *key, const int *defaults, bool *flags,
                           uint32_t *order, uint32_t *n_order)
{
    JsonArray *ids = NULL;
    if (!get_array(c, key, "a list of layer indices", &ids))
        return false;
    uint32_t n = ids ? json_array_get_length(ids) : 0;
    if (!ids)
        while (defaults[n] >= 0)
            n++;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = 0;
        if (ids && !node_uint(c, json_array_get_element(ids, i), K(c, key), false, &l))
            return false;
        if (!ids)
            l = (uint32_t)defaults[i];
        if (l >= c->n_layers)
            return fail(c, "field '%s': layer %u, but num_hidden_layers is %u", K(c, key), l,
                        c->n_layers);
        flags[l] = true;
        if (order && i < MODEL_MAX_LAYERS)
            order[(*n_order)++] = l;
    }
    return true;
}

/* DeepSeek-V4.1's CSA2 schedule and Engram (transformers configuration_deepseek_v41.py, the
 * released config.json's text_config): compress_ratios 0 / 1 / r > 1 as written; the
 * kv-source, index-source and candidate-source layers; the Engram layers and their tables. */
static bool read_dsv41(Cfg *c, ModelArch *a, JsonArray *ratios)
{
    static const int kv_def[] = {2, 8, 14, 20, -1}, idx_def[] = {2, 8, 14, 20, 24, 28, 32, 36, -1},
                     engram_def[] = {1, 14, -1};
    a->dsv41 = true;
    c->n_layers = a->num_layers;
    for (uint32_t i = 0; i < a->num_layers; i++) {
        uint32_t r = 0;
        if (!node_uint(c, json_array_get_element(ratios, i), K(c, "compress_ratios"), false, &r))
            return false;
        if (r > 255)
            return fail(c, "field '%s': entry %u is %u; valid: 0 to 255", K(c, "compress_ratios"),
                        i, r);
        a->csa_ratio[i] = (uint8_t)r;
        a->compress_ratio[i] = 1; /* V4's C4 / C128 paths stay off; CSA2 reads csa_ratio */
    }
    uint32_t engram_order[MODEL_MAX_LAYERS], n_engram = 0, cand = 0;
    JsonNode *cn = member(c, "candidate_source_layer_id");
    if (!read_layer_ids(c, "kv_source_layer_ids", kv_def, a->kv_source, NULL, NULL) ||
        !read_layer_ids(c, "index_source_layer_ids", idx_def, a->index_source, NULL, NULL) ||
        !read_layer_ids(c, "engram_layer_ids", engram_def, a->engram, engram_order, &n_engram) ||
        !get_uint(c, "candidate_topk_blocks", true, NULL, 2048, &a->candidate_topk_blocks) ||
        !get_uint(c, "candidate_block_size", true, NULL, 8, &a->candidate_block_size) ||
        !get_uint(c, "engram_n_heads", true, NULL, 8, &a->engram_n_heads) ||
        !get_uint(c, "engram_max_ngram_size", true, NULL, 4, &a->engram_max_ngram) ||
        !get_uint(c, "engram_head_dim", true, NULL, 256, &a->engram_head_dim))
        return false;
    /* the candidate source defaults to the last kv source; negative disables the pre-filter */
    a->candidate_source = -1;
    for (uint32_t l = 0; l < a->num_layers; l++)
        if (a->kv_source[l])
            a->candidate_source = (int32_t)l;
    double cv = 0;
    if (cn && node_number(cn, &cv))
        a->candidate_source = cv < 0 ? -1 : (int32_t)cv;
    else if (cn && !get_uint(c, "candidate_source_layer_id", false, NULL, 0, &cand))
        return false;
    if (a->candidate_source >= (int32_t)a->num_layers)
        return fail(c, "field '%s': layer %d, but num_hidden_layers is %u",
                    K(c, "candidate_source_layer_id"), a->candidate_source, a->num_layers);
    for (uint32_t l = 0; l < a->num_layers; l++)
        if (a->csa_ratio[l] > 0 && !a->kv_source[l] && (l == 0 || a->csa_ratio[l - 1] == 0))
            return fail(c, "field '%s': layer %u starts a compressed group but is not in "
                           "kv_source_layer_ids",
                        K(c, "compress_ratios"), l);
    JsonArray *rows = NULL;
    if (!get_array(c, "engram_num_embeddings", "a list of table sizes, one per Engram layer",
                   &rows))
        return false;
    if (n_engram && (!rows || json_array_get_length(rows) != n_engram))
        return fail(c, "field '%s': needs one table size per entry of engram_layer_ids (%u)",
                    K(c, "engram_num_embeddings"), n_engram);
    for (uint32_t i = 0; i < n_engram; i++) {
        double v = 0;
        if (!node_number(json_array_get_element(rows, i), &v) || v < 1 || v != floor(v))
            return fail(c, "field '%s': entry %u is not a positive integer",
                        K(c, "engram_num_embeddings"), i);
        a->engram_rows[engram_order[i]] = (uint64_t)v;
    }
    return true;
}

/* The routed experts of every layer in MXFP4 (group 32, e8m0 scales) when a->experts_fp4. */
static void set_experts_mxfp4(ModelArch *a)
{
    ModelQuantSpec *q = &a->quant;
    if (!a->experts_fp4 || q->n_formats >= MODEL_QUANT_MAX_FORMATS)
        return;
    uint8_t k = q->n_formats++;
    memset(&q->formats[k], 0, sizeof q->formats[k]);
    q->formats[k].kind = MODEL_WFMT_MXFP4;
    q->formats[k].group_size = 32;
    q->formats[k].scale_bytes = 1;
    q->formats[k].scheme = MODEL_QSCHEME_MXFP4;
    for (uint32_t l = 0; l < q->n_layers; l++)
        q->layer_fmt[l][MODEL_ROLE_EXPERT] = k;
}

/* DeepSeek-V4's `expert_dtype: "fp4"`: the routed experts are MXFP4 (one e8m0 scale per 32
 * values; vLLM loads them with Mxfp4MoEMethod) whatever quantization_config says of the other
 * linears. Applied after the quantization is read. */
static bool read_expert_dtype(Cfg *c, ModelArch *a)
{
    const char *dt = NULL;
    if (!a->dsv4 || !get_string(c, "expert_dtype", &dt))
        return true;
    JsonNode *qc = obj_member(c->top, "quantization_config");
    if (!dt && qc && JSON_NODE_HOLDS_OBJECT(qc)) /* V4.1 writes it in quantization_config */
        dt = node_string(obj_member(json_node_get_object(qc), "expert_dtype"));
    if (!dt)
        return true;
    if (strcmp(dt, "fp4") != 0 && strcmp(dt, "fp8") != 0 && strcmp(dt, "bf16") != 0)
        return fail(c, "field '%s': \"%s\"; valid: \"fp4\", \"fp8\", \"bf16\"",
                    K(c, "expert_dtype"), dt);
    a->experts_fp4 = strcmp(dt, "fp4") == 0; /* else the experts take the checkpoint's scheme */
    set_experts_mxfp4(a);
    return true;
}

/* The language model's object first, then the top level when they differ. */
static bool refuse_hybrid(Cfg *c)
{
    if (!check_hybrid(c) || !check_unmodelled(c))
        return false;
    if (c->obj == c->top)
        return true;
    JsonObject *obj = c->obj;
    const char *prefix = c->prefix;
    c->obj = c->top;
    c->prefix = "";
    bool ok = check_hybrid(c);
    c->obj = obj;
    c->prefix = prefix;
    return ok;
}

/* ---- the structure ---- */

static bool read_common(Cfg *c, ModelArch *a)
{
    static const char every[] = "required for every model";
    if (!get_uint(c, "hidden_size", true, every, 0, &a->hidden_size) ||
        !get_uint(c, "num_hidden_layers", true, every, 0, &a->num_layers) ||
        !get_uint(c, "num_attention_heads", true, every, 0, &a->num_heads) ||
        !get_uint(c, "vocab_size", true, every, 0, &a->vocab_size) ||
        !get_architecture(c, a->architecture, sizeof a->architecture))
        return false;
    /* Llama4Config keeps tie_word_embeddings at the top; text configs carry their own. */
    JsonNode *tie = member(c, "tie_word_embeddings");
    const char *shown = K(c, "tie_word_embeddings");
    if (!tie && c->obj != c->top) {
        tie = obj_member(c->top, "tie_word_embeddings");
        shown = "tie_word_embeddings";
    }
    a->tie_word_embeddings = false;
    if (tie && !node_bool(c, tie, shown, &a->tie_word_embeddings))
        return false;
    if (a->num_layers > MODEL_MAX_LAYERS)
        return fail(c, "field '%s': %u layers; at most %d are supported", K(c, "num_hidden_layers"),
                    a->num_layers, MODEL_MAX_LAYERS);
    return true;
}

/* MTP layers: DeepSeek/GLM num_nextn_predict_layers, MiniMax num_mtp_modules (x
 * mtp_transformer_layers, when use_mtp is not false), Qwen3-Next-style mtp_num_hidden_layers. */
static bool read_mtp(Cfg *c, ModelArch *a)
{
    uint32_t n = 0;
    const char *key = "num_nextn_predict_layers";
    if (member(c, "num_nextn_predict_layers")) {
        if (!get_uint(c, key, false, NULL, 0, &n))
            return false;
    } else if (member(c, "num_mtp_modules")) {
        key = "num_mtp_modules";
        bool use = true;
        uint32_t per = 1;
        if (!get_uint(c, key, false, NULL, 0, &n) || !get_bool(c, "use_mtp", true, &use) ||
            !get_uint(c, "mtp_transformer_layers", true, NULL, 1, &per))
            return false;
        n = use ? n * per : 0;
    } else if (member(c, "mtp_num_hidden_layers")) {
        key = "mtp_num_hidden_layers";
        if (!get_uint(c, key, false, NULL, 0, &n))
            return false;
    } else if (is_type(a, "qwen3_next")) {
        /* vLLM's Qwen3NextMultiTokenPredictor: getattr(config, "num_nextn_predict_layers", 1)
         * (the checkpoints ship one mtp.* layer and no count) */
        n = 1;
    }
    if (n > MAX_MTP_LAYERS)
        return fail(c, "field '%s': %u MTP layers; at most %d are supported", K(c, key), n,
                    MAX_MTP_LAYERS);
    a->num_nextn_predict_layers = n;
    return true;
}

/* `layer_types`: one "full_attention" / "sliding_attention" / "chunked_attention" per layer;
 * Qwen3-Next's "linear_attention" marks a Gated DeltaNet layer (other hybrid entries were
 * refused before). */
static bool read_layer_types(Cfg *c, ModelArch *a, JsonArray *arr, uint32_t *sliding,
                             uint32_t *chunked)
{
    guint len = json_array_get_length(arr);
    if (len < a->num_layers)
        return fail(c, "field '%s': %u entries, but num_hidden_layers is %u; give one per layer",
                    K(c, "layer_types"), len, a->num_layers);
    for (guint i = 0; i < a->num_layers; i++) {
        JsonNode *e = json_array_get_element(arr, i);
        const char *s = node_string(e);
        if (s && is_type(a, "qwen3_next") && strcmp(s, "linear_attention") == 0) {
            a->layer_mixer[i] = MODEL_MIXER_GDN;
            continue;
        }
        /* Granite-4.0-H (granitemoehybrid.py ALL_DECODER_LAYER_TYPES): "mamba" / "attention" */
        if (s && is_type(a, "granitemoehybrid") &&
            (strcmp(s, "mamba") == 0 || strcmp(s, "attention") == 0)) {
            a->layer_mixer[i] = s[0] == 'm' ? MODEL_MIXER_MAMBA2 : MODEL_MIXER_ATTENTION;
            continue;
        }
        if (!s || !attention_layer_type(s) || is_type(a, "granitemoehybrid")) {
            g_autofree char *got = describe(e);
            return fail(c, "field '%s': entry %u is %s; valid: %s", K(c, "layer_types"), i, got,
                        is_type(a, "granitemoehybrid")
                            ? "\"mamba\", \"attention\""
                            : "\"full_attention\", \"sliding_attention\", \"chunked_attention\"");
        }
        a->layer_sliding[i] = strcmp(s, "sliding_attention") == 0;
        a->layer_chunked[i] = strcmp(s, "chunked_attention") == 0;
        *sliding += a->layer_sliding[i];
        *chunked += a->layer_chunked[i];
    }
    return true;
}

/* Sliding-window and chunked layers: layer_types + sliding_window; Qwen2 use_sliding_window with
 * max_window_layers; sliding_window alone (Mistral: every layer); Llama-4 attention_chunk_size
 * on the RoPE layers (no_rope_layers, default every 4th layer is NoPE, as transformers'
 * Llama4TextConfig builds it). */
static bool read_windows(Cfg *c, ModelArch *a)
{
    JsonArray *types = NULL;
    uint32_t window = 0, sliding = 0, chunked = 0;
    if (!get_array(c, "layer_types", "a list of attention types, one per layer", &types) ||
        !get_uint(c, "sliding_window", false, NULL, 0, &window))
        return false;
    if (types) {
        if (!read_layer_types(c, a, types, &sliding, &chunked))
            return false;
        if (sliding > 0 && window == 0)
            return fail(c,
                        "missing field '%s' (required by the %u 'sliding_attention' layers of "
                        "layer_types)",
                        K(c, "sliding_window"), sliding);
    } else if (window > 0) {
        bool use = true;
        uint32_t first = 0;
        if (member(c, "use_sliding_window")) {
            if (!get_bool(c, "use_sliding_window", false, &use) ||
                !get_uint(c, "max_window_layers", false, NULL, 0, &first))
                return false;
        }
        for (uint32_t i = first; use && i < a->num_layers; i++) {
            a->layer_sliding[i] = true;
            sliding++;
        }
    }
    a->sliding_window = sliding > 0 ? window : 0;

    if (is_llama4(a) && !types && member(c, "attention_chunk_size")) {
        JsonArray *nope = NULL;
        uint32_t interval = 4;
        if (!get_array(c, "no_rope_layers", "a list of 0/1 per layer", &nope) ||
            !get_uint(c, "no_rope_layer_interval", true, NULL, 4, &interval))
            return false;
        if (nope && json_array_get_length(nope) == 0)
            nope = NULL; /* transformers: an empty list means the default */
        if (nope && json_array_get_length(nope) < a->num_layers)
            return fail(c, "field '%s': %u entries, but num_hidden_layers is %u",
                        K(c, "no_rope_layers"), json_array_get_length(nope), a->num_layers);
        for (uint32_t i = 0; i < a->num_layers; i++) {
            uint32_t rope = (i + 1) % interval != 0;
            if (nope && !node_uint(c, json_array_get_element(nope, i), K(c, "no_rope_layers"),
                                   false, &rope))
                return false;
            a->layer_chunked[i] = rope != 0;
            chunked += a->layer_chunked[i];
        }
    }
    if (chunked > 0 &&
        !get_uint(c, "attention_chunk_size", true, "required by chunked-attention layers", 0,
                  &a->attention_chunk_size))
        return false;
    return true;
}

/* Step-3.5 `attention_other_setting`: {attention_type, num_attention_heads,
 * num_attention_groups, head_dim} for the layers of that type (its sliding layers have 96
 * heads, its full layers num_attention_heads). The KV groups and head_dim must agree with the
 * model's: only the query heads may differ per layer. */
static bool read_other_attention(Cfg *c, ModelArch *a)
{
    JsonNode *n = member(c, "attention_other_setting");
    if (!n)
        return true;
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected an object {attention_type, num_attention_heads, "
                       "num_attention_groups, head_dim}, got %s",
                    K(c, "attention_other_setting"), got);
    }
    JsonObject *o = json_node_get_object(n);
    const char *type = json_object_get_string_member_with_default(o, "attention_type", "");
    int64_t heads = json_object_get_int_member_with_default(o, "num_attention_heads", 0);
    int64_t groups = json_object_get_int_member_with_default(o, "num_attention_groups",
                                                             a->num_kv_heads);
    int64_t hd = json_object_get_int_member_with_default(o, "head_dim", a->head_dim);
    bool sliding = strcmp(type, "sliding_attention") == 0, full = strcmp(type, "full_attention") == 0;
    if ((!sliding && !full) || heads <= 0 || heads > 65536 || heads % MAX(1, groups) != 0)
        return fail(c, "field '%s': attention_type '%s' with %" G_GINT64_FORMAT " heads over %"
                       G_GINT64_FORMAT " groups; valid: attention_type \"sliding_attention\" or "
                       "\"full_attention\", heads a positive multiple of the groups",
                    K(c, "attention_other_setting"), type, heads, groups);
    if (groups != a->num_kv_heads || hd != a->head_dim)
        return fail(c, "field '%s': %" G_GINT64_FORMAT " KV groups of head_dim %" G_GINT64_FORMAT
                       " differ from the model's %u of %u; only the query heads may differ per "
                       "layer in what ranksim models",
                    K(c, "attention_other_setting"), groups, hd, a->num_kv_heads, a->head_dim);
    for (uint32_t i = 0; i < a->num_layers; i++)
        if (a->layer_sliding[i] == sliding)
            a->layer_heads[i] = (uint32_t)heads;
    return true;
}

/* Biases, sinks and q/k norms of GQA attention. */
static bool read_attention_details(Cfg *c, ModelArch *a)
{
    bool bias = false, qk_norm = false;
    const char *norm_type = NULL;
    if (!get_bool(c, "attention_bias", false, &bias) ||
        !get_bool(c, "use_qk_norm", false, &qk_norm) || !get_string(c, "qk_norm_type", &norm_type))
        return false;
    /* Qwen2 / Qwen2-MoE always carry q/k/v biases. attention_bias covers q/k/v, and o_proj too
     * in Llama-style attention (Llama, Mistral, gpt-oss), but not in Qwen2/Qwen3 or GLM-4
     * (their o_proj has no bias). */
    bool o_apart = is_qwen2(a) || is_qwen3(a) || is_type(a, "glm4_moe") || is_type(a, "glm4");
    a->attention_bias = bias || is_qwen2(a);
    a->o_proj_bias = bias && !o_apart;
    a->attention_sinks = is_type(a, "gpt_oss");
    if (!get_bool(c, "use_head_wise_attn_gate", false, &a->attn_head_gate))
        return false;
    if (is_qwen3(a)) {
        a->qk_norm_dim = a->head_dim;      /* Qwen3: RMSNorm(head_dim) on q and k, always */
    } else if (qk_norm && !is_llama4(a)) { /* Llama-4's qk norm is a weightless L2 norm */
        a->qk_norm_per_layer = norm_type && strcmp(norm_type, "per_layer") == 0;
        a->qk_norm_dim = a->qk_norm_per_layer ? a->num_heads * a->head_dim : a->head_dim;
    }
    return read_windows(c, a) && read_other_attention(c, a);
}

/* MLA (kv_lora_rank present) or dense GQA attention. */
static bool read_attention(Cfg *c, ModelArch *a)
{
    if (member(c, "kv_lora_rank")) {
        static const char why[] = "required for MLA, which kv_lora_rank selects";
        a->mla = true;
        a->num_kv_heads = a->num_heads; /* MLA expands the latent to every head */
        a->head_dim = 0;                /* GQA only; MLA has qk_nope/qk_rope/v head dims */
        return get_uint(c, "kv_lora_rank", true, why, 0, &a->kv_lora_rank) &&
               get_uint(c, "q_lora_rank", false, NULL, 0, &a->q_lora_rank) &&
               get_uint(c, "qk_nope_head_dim", true, why, 0, &a->qk_nope_head_dim) &&
               get_uint(c, "qk_rope_head_dim", true, why, 0, &a->qk_rope_head_dim) &&
               get_uint(c, "v_head_dim", true, why, 0, &a->v_head_dim) && read_windows(c, a);
    }
    /* Step-3.5 calls the KV heads "attention groups" */
    const char *kv_key = !member(c, "num_key_value_heads") && member(c, "num_attention_groups")
                             ? "num_attention_groups"
                             : "num_key_value_heads";
    if (!get_uint(c, kv_key, true, NULL, a->num_heads, &a->num_kv_heads))
        return false;
    if (a->num_kv_heads > a->num_heads || a->num_heads % a->num_kv_heads != 0)
        return fail(c,
                    "field '%s': %u does not divide num_attention_heads (%u); "
                    "each KV head serves a whole group of query heads",
                    K(c, "num_key_value_heads"), a->num_kv_heads, a->num_heads);
    if (member(c, "head_dim")) {
        if (!get_uint(c, "head_dim", true, NULL, 0, &a->head_dim))
            return false;
    } else if (a->hidden_size % a->num_heads != 0) {
        return fail(c,
                    "missing field '%s' (required when hidden_size %u is not a multiple "
                    "of num_attention_heads %u)",
                    K(c, "head_dim"), a->hidden_size, a->num_heads);
    } else {
        a->head_dim = a->hidden_size / a->num_heads;
    }
    return read_attention_details(c, a);
}

/* `indexer_types`: one "full" / "shared" per layer, the first "full". */
static bool read_indexer_types(Cfg *c, JsonNode *n, ModelArch *a)
{
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_autofree char *got = describe(n);
        return fail(c,
                    "field '%s': expected a list of \"full\" / \"shared\", one per "
                    "layer, got %s",
                    K(c, "indexer_types"), got);
    }
    JsonArray *arr = json_node_get_array(n);
    guint len = json_array_get_length(arr);
    if (len != a->num_layers)
        return fail(c,
                    "field '%s': %u entries, but num_hidden_layers is %u; give one "
                    "\"full\" or \"shared\" per layer",
                    K(c, "indexer_types"), len, a->num_layers);
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(arr, i);
        const char *s = node_string(e);
        if (s && strcmp(s, "full") == 0)
            a->index_shared[i] = false;
        else if (s && strcmp(s, "shared") == 0)
            a->index_shared[i] = true;
        else {
            g_autofree char *got = describe(e);
            return fail(c, "field '%s': entry %u is %s; valid: \"full\", \"shared\"",
                        K(c, "indexer_types"), i, got);
        }
    }
    if (a->index_shared[0])
        return fail(c,
                    "field '%s': entry 0 is \"shared\", but the first layer must be "
                    "\"full\" (a shared layer reuses the top-k of the previous full layer)",
                    K(c, "indexer_types"));
    return true;
}

/* DSA indexer (index_topk present), with IndexShare when indexer_types is present. */
static bool read_indexer(Cfg *c, ModelArch *a)
{
    JsonNode *types = member(c, "indexer_types");
    a->index_topk_freq = 1;
    if (!member(c, "index_topk")) {
        if (types)
            return fail(c,
                        "field '%s' needs index_topk, index_n_heads and "
                        "index_head_dim (a DSA indexer); none is given",
                        K(c, "indexer_types"));
        return true;
    }
    static const char why[] = "required for a DSA indexer, which index_topk selects";
    a->dsa = true;
    if (!get_uint(c, "index_topk", true, why, 0, &a->index_topk) ||
        !get_uint(c, "index_n_heads", true, why, 0, &a->index_n_heads) ||
        !get_uint(c, "index_head_dim", true, why, 0, &a->index_head_dim) ||
        !get_uint(c, "index_topk_freq", true, NULL, 1, &a->index_topk_freq))
        return false;
    return !types || read_indexer_types(c, types, a);
}

/* A list of layer indices (`mlp_only_layers`, `moe_layers`); each < num_layers. Sets
 * mark[i] = value for every listed layer. */
static bool read_layer_list(Cfg *c, const char *key, JsonArray *arr, uint32_t num_layers,
                            bool *mark, bool value)
{
    guint len = json_array_get_length(arr);
    for (guint i = 0; i < len; i++) {
        uint32_t layer = 0;
        if (!node_uint(c, json_array_get_element(arr, i), K(c, key), false, &layer))
            return false;
        if (layer >= num_layers)
            return fail(c, "field '%s': entry %u is layer %u, but num_hidden_layers is %u",
                        K(c, key), i, layer, num_layers);
        mark[layer] = value;
    }
    return true;
}

/* Which layers carry experts. Every rule the families use, combined: DeepSeek/GLM
 * `first_k_dense_replace` (i >= k) and `moe_layer_freq` (i % f == 0); Qwen `decoder_sparse_step`
 * ((i + 1) % s == 0) and `mlp_only_layers` (never MoE); Llama-4 `interleave_moe_layer_step`
 * ((i + 1) % s == 0) or an explicit `moe_layers` list, which wins over the step. */
static bool place_experts(Cfg *c, ModelArch *a)
{
    uint32_t k = 0, freq = 1, sparse = 1, interleave = 1;
    JsonArray *mlp_only = NULL, *moe_layers = NULL;
    if (!get_uint(c, "first_k_dense_replace", false, NULL, 0, &k) ||
        !get_uint(c, "moe_layer_freq", true, NULL, 1, &freq) ||
        !get_uint(c, "decoder_sparse_step", true, NULL, 1, &sparse) ||
        !get_uint(c, "interleave_moe_layer_step", true, NULL, 1, &interleave) ||
        !get_array(c, "mlp_only_layers", "a list of layer indices", &mlp_only) ||
        !get_array(c, "moe_layers", "a list of layer indices", &moe_layers))
        return false;
    if (k > a->num_layers)
        return fail(c, "field '%s': %u exceeds num_hidden_layers (%u)",
                    K(c, "first_k_dense_replace"), k, a->num_layers);
    for (uint32_t i = 0; i < a->num_layers; i++)
        a->layer_moe[i] = i >= k && i % freq == 0 && (i + 1) % sparse == 0 &&
                          (moe_layers || (i + 1) % interleave == 0);
    if (moe_layers) {
        g_autofree bool *listed = g_new0(bool, a->num_layers);
        if (!read_layer_list(c, "moe_layers", moe_layers, a->num_layers, listed, true))
            return false;
        for (uint32_t i = 0; i < a->num_layers; i++)
            a->layer_moe[i] = a->layer_moe[i] && listed[i];
    }
    const char *layers_enum = NULL; /* Step-3.5: "3,4,5,...", the MoE layers */
    if (!get_string(c, "moe_layers_enum", &layers_enum))
        return false;
    if (layers_enum) {
        g_auto(GStrv) parts = g_strsplit(layers_enum, ",", -1);
        g_autofree bool *listed = g_new0(bool, a->num_layers);
        for (char **q = parts; *q; q++) {
            char *end = NULL;
            g_strstrip(*q);
            guint64 v = g_ascii_strtoull(*q, &end, 10);
            if (!**q || *end || v >= a->num_layers)
                return fail(c, "field '%s': '%s' is not a layer index below %u; valid: a "
                               "comma-separated list such as \"3,4,5\"",
                            K(c, "moe_layers_enum"), *q, a->num_layers);
            listed[v] = true;
        }
        for (uint32_t i = 0; i < a->num_layers; i++)
            a->layer_moe[i] = a->layer_moe[i] && listed[i];
    }
    if (mlp_only &&
        !read_layer_list(c, "mlp_only_layers", mlp_only, a->num_layers, a->layer_moe, false))
        return false;
    uint32_t moe = 0;
    for (uint32_t i = 0; i < a->num_layers; i++)
        moe += a->layer_moe[i];
    if (moe == 0)
        return fail(c,
                    "no layer has experts: first_k_dense_replace %u, moe_layer_freq %u, "
                    "decoder_sparse_step %u, interleave_moe_layer_step %u, moe_layers and "
                    "mlp_only_layers leave all %u layers dense",
                    k, freq, sparse, interleave, a->num_layers);
    a->first_k_dense_replace = 0;
    while (a->first_k_dense_replace < a->num_layers && !a->layer_moe[a->first_k_dense_replace])
        a->first_k_dense_replace++;
    return true;
}

/* The first of `keys` present (and not null) in obj, or NULL. */
static const char *first_key(Cfg *c, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++)
        if (member(c, keys[i]))
            return keys[i];
    return NULL;
}

/* Shared experts: DeepSeek n_shared_experts x moe_intermediate_size, Qwen2-MoE
 * shared_expert_intermediate_size (with its sigmoid gate), MiniMax shared_intermediate_size,
 * Llama-4's one shared expert as wide as a routed one. */
static bool read_shared_experts(Cfg *c, ModelArch *a)
{
    uint32_t n = 0, qwen = 0, minimax = 0;
    if (!get_uint(c, "n_shared_experts", false, NULL, 0, &n) ||
        !get_uint(c, "shared_expert_intermediate_size", false, NULL, 0, &qwen) ||
        !get_uint(c, "shared_intermediate_size", false, NULL, 0, &minimax))
        return false;
    if (!minimax && !get_uint(c, "share_expert_dim", false, NULL, 0, &minimax)) /* Step-3.5 */
        return false;
    if ((n > 0) + (qwen > 0) + (minimax > 0) > 1)
        return fail(c, "fields 'n_shared_experts', 'shared_expert_intermediate_size' and "
                       "'shared_intermediate_size' each size the shared experts; give one");
    a->n_shared_experts = n;
    if (n > 0) {
        a->shared_expert_intermediate_size = n * a->moe_intermediate_size;
    } else if (qwen > 0) {
        a->n_shared_experts = 1;
        a->shared_expert_intermediate_size = qwen;
        a->shared_expert_gate = true;
    } else if (minimax > 0) {
        a->n_shared_experts = 1;
        a->shared_expert_intermediate_size = minimax;
    } else if (is_llama4(a)) {
        a->n_shared_experts = 1;
        a->shared_expert_intermediate_size = a->moe_intermediate_size;
    }
    return true;
}

/* MoE (an expert count present and positive), then the dense MLP size where it is needed. */
static bool read_mlp(Cfg *c, ModelArch *a)
{
    static const char *const count_keys[] = {"n_routed_experts", "num_local_experts", "num_experts",
                                             "moe_num_experts", NULL};
    static const char *const per_tok_keys[] = {"num_experts_per_tok", "num_experts_per_token",
                                               "experts_per_token", "moe_top_k", NULL};
    const char *experts_key = first_key(c, count_keys);
    uint32_t experts = 0;
    if (experts_key && !get_uint(c, experts_key, false, NULL, 0, &experts))
        return false;
    bool expert_width_is_intermediate = false;
    if (experts > 0) {
        g_autofree char *why = g_strdup_printf("required for MoE, which %s selects", experts_key);
        const char *per_tok_key = first_key(c, per_tok_keys);
        a->moe = true;
        a->n_routed_experts = experts;
        if (!get_uint(c, per_tok_key ? per_tok_key : "num_experts_per_tok", true, why, 0,
                      &a->num_experts_per_tok))
            return false;
        if (a->num_experts_per_tok > a->n_routed_experts)
            return fail(c, "field '%s': %u exceeds %s (%u)",
                        K(c, per_tok_key ? per_tok_key : "num_experts_per_tok"),
                        a->num_experts_per_tok, experts_key, a->n_routed_experts);
        /* Mixtral, gpt-oss, MiniMax and Llama-4 size their experts with intermediate_size. */
        expert_width_is_intermediate =
            strcmp(experts_key, "num_local_experts") == 0 && !member(c, "moe_intermediate_size");
        if (expert_width_is_intermediate) {
            if (!get_uint(c, "intermediate_size", true,
                          "required for the experts' width when moe_intermediate_size is absent", 0,
                          &a->moe_intermediate_size))
                return false;
        } else if (!get_uint(c, "moe_intermediate_size", true, why, 0, &a->moe_intermediate_size)) {
            return false;
        }
        if (!read_shared_experts(c, a) || !place_experts(c, a))
            return false;
        const char *method = NULL;
        bool routing_bias = false;
        if (!get_string(c, "topk_method", &method) ||
            !get_bool(c, "use_routing_bias", false, &routing_bias))
            return false;
        /* e_score_correction_bias: DeepSeek/Kimi/GLM noaux_tc, MiniMax use_routing_bias, and
         * every GLM-4.x MoE router (Glm4MoeTopkRouter has one whatever the file says). */
        a->router_score_bias =
            (method && strcmp(method, "noaux_tc") == 0) || routing_bias || is_type(a, "glm4_moe");
        a->router_bias = a->expert_bias = is_type(a, "gpt_oss");
    }
    uint32_t dense = 0;
    for (uint32_t i = 0; i < a->num_layers; i++)
        dense += !(a->moe && a->layer_moe[i]);
    /* Llama-4: dense layers use intermediate_size_mlp; intermediate_size is the experts'. */
    const char *dense_key = expert_width_is_intermediate && member(c, "intermediate_size_mlp")
                                ? "intermediate_size_mlp"
                                : "intermediate_size";
    if (dense > 0) {
        g_autofree char *why =
            a->moe ? g_strdup_printf("required for the dense MLP of the %u layers without "
                                     "experts",
                                     dense)
                   : g_strdup("required for a dense model's MLP");
        return get_uint(c, dense_key, true, why, 0, &a->intermediate_size);
    }
    /* Every layer is MoE: the dense width is informative (Qwen3 MoE carries one). */
    return get_uint(c, dense_key, false, NULL, 0, &a->intermediate_size);
}

/* torch_dtype (or transformers 5's dtype) of the language model, else of the top level. */
static bool read_dtype(Cfg *c, ModelArch *a)
{
    static const char *const keys[] = {"torch_dtype", "dtype", NULL};
    JsonObject *where[] = {c->obj, c->top};
    a->native_dtype = MODEL_WFMT_BF16;
    for (size_t w = 0; w < 2; w++) {
        for (size_t i = 0; keys[i]; i++) {
            JsonNode *n = obj_member(where[w], keys[i]);
            if (!n)
                continue;
            const char *shown = w == 0 ? K(c, keys[i]) : keys[i];
            const char *s = node_string(n);
            if (s && (strcmp(s, "bfloat16") == 0))
                a->native_dtype = MODEL_WFMT_BF16;
            else if (s && (strcmp(s, "float16") == 0 || strcmp(s, "half") == 0))
                a->native_dtype = MODEL_WFMT_FP16;
            else if (s && (strcmp(s, "float32") == 0 || strcmp(s, "float") == 0))
                a->native_dtype = MODEL_WFMT_FP32;
            else {
                g_autofree char *got = describe(n);
                return fail(c,
                            "field '%s': %s is not a checkpoint dtype; valid: \"bfloat16\", "
                            "\"float16\", \"float32\"",
                            shown, got);
            }
            return true;
        }
        if (c->obj == c->top)
            break;
    }
    return true;
}

/* The rope dicts of `rope_parameters` (transformers 5; may be keyed by layer type) or
 * `rope_scaling`: fills `out` (at most n) and returns how many; -1 after an error. */
static int rope_dicts(Cfg *c, const char **key, JsonObject **out, int n)
{
    *key = member(c, "rope_parameters") ? "rope_parameters" : "rope_scaling";
    JsonNode *r = member(c, *key);
    if (!r)
        return 0;
    if (!JSON_NODE_HOLDS_OBJECT(r)) {
        g_autofree char *got = describe(r);
        fail(c, "field '%s': expected an object, got %s", K(c, *key), got);
        return -1;
    }
    JsonObject *o = json_node_get_object(r);
    g_autoptr(GList) members = json_object_get_members(o);
    bool per_layer = members != NULL;
    for (GList *l = members; l; l = l->next)
        per_layer = per_layer &&
                    (g_str_has_suffix(l->data, "_attention") || strcmp(l->data, "attention") == 0);
    if (!per_layer) {
        out[0] = o;
        return 1;
    }
    int k = 0;
    for (GList *l = members; l && k < n; l = l->next) {
        JsonNode *e = json_object_get_member(o, l->data);
        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            g_autofree char *got = describe(e);
            fail(c, "field '%s.%s': expected an object, got %s", K(c, *key), (const char *)l->data,
                 got);
            return -1;
        }
        out[k++] = json_node_get_object(e);
    }
    return k;
}

/* max_model_len as vLLM derives it: vllm/config/model.py `_get_and_verify_max_len`
 * (vllm-project/vllm 0052a5b8): the smallest of the length keys, model_max_length overriding
 * them; then, unless model_type contains "gemma3", for every rope dict whose rope_type is not
 * su / longrope / llama3, scaling = its `factor` (default 1) and for "yarn" the length restarts
 * from its original_max_position_embeddings; length x scaling. longrope keeps the top-level
 * original_max_position_embeddings. 2048 when no key is present. */
static bool read_max_model_len(Cfg *c, ModelArch *a)
{
    static const char *const keys[] = {"max_position_embeddings",
                                       "n_positions",
                                       "max_seq_len",
                                       "seq_length",
                                       "model_max_length",
                                       "max_target_positions",
                                       "max_sequence_length",
                                       "max_seq_length",
                                       "seq_len",
                                       NULL};
    double len = INFINITY, pos = 0;
    for (size_t i = 0; keys[i]; i++) {
        uint32_t v = 0;
        if (!member(c, keys[i]))
            continue;
        if (!get_uint(c, keys[i], true, NULL, 0, &v))
            return false;
        len = fmin(len, (double)v);
        if (i == 0)
            pos = v; /* the RoPE cache's length: max_position_embeddings itself */
    }
    uint32_t mml = 0;
    if (!get_uint(c, "model_max_length", true, NULL, 0, &mml))
        return false;
    if (mml > 0)
        len = mml;
    if (isinf(len))
        len = 2048;
    if (!(pos > 0))
        pos = len;

    const char *key = NULL;
    JsonObject *dicts[8];
    int n = rope_dicts(c, &key, dicts, 8);
    if (n < 0)
        return false;
    bool longrope = false;
    if (n > 0 && !strstr(a->model_type, "gemma3")) {
        double scaling = 1.0;
        for (int i = 0; i < n; i++) {
            const char *type = node_string(obj_member(dicts[i], "rope_type"));
            if (!type)
                type = node_string(obj_member(dicts[i], "type"));
            if (!type)
                type = "default";
            if (strcmp(type, "longrope") == 0)
                longrope = true;
            if (strcmp(type, "su") == 0 || strcmp(type, "longrope") == 0 ||
                strcmp(type, "llama3") == 0)
                continue;
            JsonNode *f = obj_member(dicts[i], "factor");
            if (f && (!node_number(f, &scaling) || !(scaling > 0) || !isfinite(scaling))) {
                g_autofree char *got = describe(f);
                return fail(c, "field '%s.factor': expected a positive number, got %s", K(c, key),
                            got);
            }
            if (strcmp(type, "yarn") == 0) {
                JsonNode *o = obj_member(dicts[i], "original_max_position_embeddings");
                double v = 0;
                if (!o || !node_number(o, &v) || !(v >= 1) || v > MAX_FIELD) {
                    g_autofree char *got = o ? describe(o) : g_strdup("nothing");
                    return fail(c,
                                "field '%s.original_max_position_embeddings': expected a "
                                "positive integer (required for rope_type \"yarn\"), got %s",
                                K(c, key), got);
                }
                len = pos = v;
            }
        }
        len *= scaling;
        pos *= scaling;
    }
    if (longrope) {
        uint32_t orig = 0;
        if (!get_uint(c, "original_max_position_embeddings", true, NULL, 0, &orig))
            return false;
        if (orig > 0)
            len = orig;
    }
    len = floor(len);
    if (len < 1 || len > MAX_FIELD)
        return fail(c, "the derived max_model_len %.0f is out of range 1..%d (from %s)", len,
                    MAX_FIELD, key ? key : "max_position_embeddings");
    a->max_model_len = (uint32_t)len;
    pos = floor(pos);
    a->rope_positions = pos >= 1 && pos <= MAX_FIELD ? (uint32_t)pos : a->max_model_len;
    a->partial_rotary_factor = 1.0;
    JsonNode *prf = member(c, "partial_rotary_factor");
    if (prf && (!node_number(prf, &a->partial_rotary_factor) ||
                !(a->partial_rotary_factor > 0 && a->partial_rotary_factor <= 1))) {
        g_autofree char *got = describe(prf);
        return fail(c, "field '%s': expected a number in (0, 1], got %s",
                    K(c, "partial_rotary_factor"), got);
    }
    return true;
}

/* An int or an [h, w] pair from the vision config. */
static bool vision_pair(Cfg *c, JsonObject *v, const char *key, uint32_t def, uint32_t out[2])
{
    JsonNode *n = obj_member(v, key);
    g_autofree char *shown = g_strdup_printf("vision_config.%s", key);
    out[0] = out[1] = def;
    if (!n)
        return true;
    if (JSON_NODE_HOLDS_ARRAY(n) && json_array_get_length(json_node_get_array(n)) == 2) {
        JsonArray *arr = json_node_get_array(n);
        return node_uint(c, json_array_get_element(arr, 0), shown, true, &out[0]) &&
               node_uint(c, json_array_get_element(arr, 1), shown, true, &out[1]);
    }
    if (!node_uint(c, n, shown, true, &out[0]))
        return false;
    out[1] = out[0];
    return true;
}

/* Llama-4's vision tower + projector, counted as vLLM builds them
 * (vllm/model_executor/models/mllama4.py: Llama4VisionModel, Llama4MultiModalProjector), with
 * transformers' Llama4VisionConfig defaults for absent keys (configuration_llama4.py):
 *   class_embedding H; positional_embedding_vlm ((S/P)^2 + 1) x H; patch_embedding.linear
 *   C x P^2 x H (no bias); layernorm_pre/post 2 x 2H;
 *   per layer: q/k/v/o H x H + H each, mlp fc1 H x I + I, fc2 I x H + H, 2 LayerNorms 4H;
 *   vision_adapter (pixel shuffle MLP) fc1 I x Pin, fc2 Pin x Pout (+ biases when
 *   multi_modal_projector_bias); multi_modal_projector.linear_1 Vout x text hidden (no bias).
 * Scout (H 1408, I 5632, 34 layers, S 336, P 14, Pin = Pout = Vout = 4096, text 5120): 871.9 M,
 * which with the text model makes the checkpoint's 108.6 B ("109B"). */
static bool count_llama4_vision(Cfg *c, JsonObject *v, const ModelArch *a, uint64_t *out)
{
    uint32_t H = 768, I = 5632, L = 34, C = 3, Pin = 4096, Pout = 4096, Vout = 7680;
    uint32_t S[2], P[2];
    bool proj_bias = false;
    if (!obj_uint(c, v, "vision_config.hidden_size", "hidden_size", true, NULL, H, &H) ||
        !obj_uint(c, v, "vision_config.intermediate_size", "intermediate_size", true, NULL, I,
                  &I) ||
        !obj_uint(c, v, "vision_config.num_hidden_layers", "num_hidden_layers", false, NULL, L,
                  &L) ||
        !obj_uint(c, v, "vision_config.num_channels", "num_channels", true, NULL, C, &C) ||
        !obj_uint(c, v, "vision_config.projector_input_dim", "projector_input_dim", true, NULL, Pin,
                  &Pin) ||
        !obj_uint(c, v, "vision_config.projector_output_dim", "projector_output_dim", true, NULL,
                  Pout, &Pout) ||
        !obj_uint(c, v, "vision_config.vision_output_dim", "vision_output_dim", true, NULL, Vout,
                  &Vout) ||
        !vision_pair(c, v, "image_size", 448, S) || !vision_pair(c, v, "patch_size", 14, P))
        return false;
    JsonNode *b = obj_member(v, "multi_modal_projector_bias");
    if (b && !node_bool(c, b, "vision_config.multi_modal_projector_bias", &proj_bias))
        return false;
    uint64_t h = H, i = I;
    uint64_t patches = (uint64_t)(S[0] / P[0]) * (S[1] / P[1]) + 1;
    uint64_t per_layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h;
    uint64_t n = h + patches * h + (uint64_t)C * P[0] * P[1] * h + 4 * h + L * per_layer;
    n += i * Pin + (uint64_t)Pin * Pout + (proj_bias ? (uint64_t)Pin + Pout : 0);
    n += (uint64_t)Vout * a->hidden_size;
    *out = n;
    return true;
}

/* The vision tower (top-level vision_config). Llama4Config without one takes transformers'
 * default Llama4VisionConfig, as the checkpoint's loader would; other towers are refused. */
static bool read_vision(Cfg *c, ModelArch *a)
{
    JsonNode *v = obj_member(c->top, "vision_config");
    const char *top_type = node_string(obj_member(c->top, "model_type"));
    bool llama4 = top_type && strcmp(top_type, "llama4") == 0;
    if (!v && !llama4)
        return true;
    if (v && !JSON_NODE_HOLDS_OBJECT(v)) {
        g_autofree char *got = describe(v);
        return fail(c, "field 'vision_config': expected an object, got %s", got);
    }
    JsonObject *vo = v ? json_node_get_object(v) : NULL;
    const char *vt = node_string(obj_member(vo, "model_type"));
    if (llama4 || (vt && strcmp(vt, "llama4_vision_model") == 0))
        return count_llama4_vision(c, vo, a, &a->vision_params);
    return fail(c,
                "field 'vision_config': a %s%s%s vision tower is not modelled; ranksim counts "
                "Llama-4 vision towers (llama4_vision_model) only",
                vt ? "'" : "", vt ? vt : "untyped", vt ? "'" : "");
}

/* The checkpoint's module names for this family, for resolving quantization ignore lists. */
static ModelQuantNames quant_names(const ModelArch *a)
{
    ModelQuantNames n = {.layer_prefix = a->layer_prefix[0] ? a->layer_prefix : NULL,
                         .num_layers = a->num_layers,
                         .num_mtp_layers = a->num_nextn_predict_layers};
    if (is_type(a, "mixtral") || is_type(a, "minimax_m2")) {
        n.experts = "block_sparse_moe.experts";
        n.router = "block_sparse_moe.gate";
    } else if (is_llama4(a)) {
        n.experts = "feed_forward.experts";
        n.shared = "feed_forward.shared_expert";
        n.router = "feed_forward.router";
        n.mlp = "feed_forward";
    } else if (is_type(a, "qwen2_moe") || is_type(a, "qwen3_moe")) {
        n.shared = "mlp.shared_expert";
    } else if (is_type(a, "gpt_oss")) {
        n.experts = "mlp.experts";
        n.router = "mlp.router";
    }
    return n;
}

/* A quantization parser's error as MODEL_ARCH_ERROR, message kept (prefixed with `display`
 * when it does not name it already). */
static void propagate_quant_error(GError **error, GError *qerr, const char *display)
{
    const char *msg = qerr ? qerr->message : "quantization config rejected";
    if (g_str_has_prefix(msg, display))
        g_set_error_literal(error, MODEL_ARCH_ERROR, ERR_FIELD, msg);
    else
        g_set_error(error, MODEL_ARCH_ERROR, ERR_FIELD, "%s: %s", display, msg);
}

/* quantization_config (top level, else the text config), or the native dtype throughout. */
static bool read_quant(Cfg *c, ModelArch *a, JsonObject *ascend, const char *ascend_display)
{
    ModelQuantNames names = quant_names(a);
    g_autoptr(GError) qerr = NULL;
    if (ascend) {
        if (!model_quant_from_ascend(ascend, ascend_display, a->native_dtype, &names, &a->quant,
                                     &qerr)) {
            propagate_quant_error(c->error, qerr, ascend_display);
            return false;
        }
        return true;
    }
    const char *shown = "quantization_config";
    JsonNode *q = obj_member(c->top, "quantization_config");
    if (!q && c->obj != c->top) {
        q = member(c, "quantization_config");
        shown = K(c, "quantization_config");
    }
    if (!q) {
        model_quant_spec_native(&a->quant, a->native_dtype,
                                a->num_layers + a->num_nextn_predict_layers);
        return true;
    }
    if (!JSON_NODE_HOLDS_OBJECT(q)) {
        g_autofree char *got = describe(q);
        return fail(c, "field '%s': expected an object, got %s", shown, got);
    }
    if (!model_quant_from_config(json_node_get_object(q), c->display, a->native_dtype, &names,
                                 &a->quant, &qerr)) {
        propagate_quant_error(c->error, qerr, c->display);
        return false;
    }
    return true;
}

/* `name` for `display`: the folder of a config.json, else the basename without ".json". */
static void name_from_display(const char *display, char *dst, size_t size)
{
    g_autofree char *base = g_path_get_basename(display);
    if (strcmp(base, "config.json") == 0) {
        g_autofree char *abs = g_canonicalize_filename(display, NULL);
        g_autofree char *dir = g_path_get_dirname(abs);
        g_autofree char *folder = g_path_get_basename(dir);
        g_strlcpy(dst, strcmp(folder, G_DIR_SEPARATOR_S) == 0 ? "config" : folder, size);
        return;
    }
    if (g_str_has_suffix(base, ".json") && strlen(base) > strlen(".json"))
        base[strlen(base) - strlen(".json")] = '\0';
    g_strlcpy(dst, base, size);
}

/* Parses `text` into `parser`; the root node, or NULL with MODEL_ARCH_ERROR naming `display`. */
static JsonNode *parse_json(JsonParser *parser, const char *text, gssize len, const char *display,
                            const char *what, GError **error)
{
    g_autoptr(GError) perr = NULL;
    if (!sched_json_load(parser, text, len, &perr)) {
        /* json-glib says "<data>:LINE:COL: Parse error: ..."; name the file instead. */
        const char *msg = perr->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>");
        g_set_error(error, MODEL_ARCH_ERROR, ERR_JSON, "%s%s%s", display, msg[0] == ':' ? "" : ": ",
                    msg);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_JSON, "%s: empty document; expected %s", display,
                    what);
        return NULL;
    }
    return root;
}

/* ---- hybrid models ---- */

/* Nemotron-H `hybrid_override_pattern` (configuration_nemotron_h.py; vllm nemotron_h.py
 * ALL_DECODER_LAYER_TYPES): one letter a layer. */
static bool read_nemotron_pattern(Cfg *c, ModelArch *a)
{
    const char *pattern = NULL;
    if (!get_string(c, "hybrid_override_pattern", &pattern))
        return false;
    if (!pattern)
        return fail(c, "missing field '%s' (required by model_type nemotron_h: one of M, *, E, "
                       "- per layer)",
                    K(c, "hybrid_override_pattern"));
    if (strlen(pattern) != a->num_layers)
        return fail(c, "field '%s': %zu letters, but num_hidden_layers is %u; give one per layer",
                    K(c, "hybrid_override_pattern"), strlen(pattern), a->num_layers);
    for (uint32_t i = 0; i < a->num_layers; i++) {
        char ch = pattern[i];
        if (!strchr("M*E-", ch) || ch == '\0')
            return fail(c, "field '%s': letter %u is '%c'; valid: 'M' (Mamba-2), '*' "
                           "(attention), 'E' (MoE), '-' (MLP)",
                        K(c, "hybrid_override_pattern"), i, ch);
        a->layer_mixer[i] = ch == 'M'   ? MODEL_MIXER_MAMBA2
                            : ch == '*' ? MODEL_MIXER_ATTENTION
                                        : MODEL_MIXER_NONE;
        a->layer_no_ffn[i] = ch == 'M' || ch == '*';
        a->layer_moe[i] = ch == 'E';
    }
    if (model_arch_count_mixer(a, MODEL_MIXER_NONE, 0, a->num_layers) == 0 && a->moe)
        return fail(c, "field '%s': no 'E' layer, but the file sizes experts",
                    K(c, "hybrid_override_pattern"));
    return true;
}

static bool read_nemotron_h(Cfg *c, ModelArch *a)
{
    static const char why[] = "required for the Mamba-2 layers of nemotron_h";
    const char *ssm_dtype = NULL;
    if (!read_nemotron_pattern(c, a) ||
        !get_uint(c, "mamba_num_heads", true, why, 0, &a->mamba_num_heads) ||
        !get_uint(c, "mamba_head_dim", true, why, 0, &a->mamba_head_dim) ||
        !get_uint(c, "ssm_state_size", true, why, 0, &a->ssm_state_size) ||
        !get_uint(c, "n_groups", true, NULL, 1, &a->mamba_n_groups) ||
        !get_uint(c, "conv_kernel", true, NULL, 4, &a->mamba_conv_kernel) ||
        !get_uint(c, "chunk_size", true, NULL, 256, &a->mamba_chunk_size) ||
        !get_uint(c, "moe_latent_size", false, NULL, 0, &a->moe_latent_size) ||
        !get_string(c, "mamba_ssm_cache_dtype", &ssm_dtype))
        return false;
    if (a->mamba_num_heads % a->mamba_n_groups)
        return fail(c, "field '%s': %u heads do not split into %u groups", K(c, "mamba_num_heads"),
                    a->mamba_num_heads, a->mamba_n_groups);
    /* vLLM's NemotronHForCausalLMConfig: mamba_ssm_cache_dtype "auto" takes the config.json's
     * value, float32 when it has none ("Only float32 is known to have no accuracy issues") */
    a->ssm_state_fp32 = !ssm_dtype || strcmp(ssm_dtype, "float32") == 0;
    a->ssm_dtype_given = ssm_dtype != NULL;
    a->mlp_ungated = true; /* NemotronHMLP: up_proj, ReLU^2, down_proj */
    a->attn_no_rope = true; /* NemotronHAttention has no rotary embedding */
    /* shared expert: moe_shared_expert_intermediate_size (one module) */
    uint32_t shared = 0;
    if (!get_uint(c, "moe_shared_expert_intermediate_size", false, NULL, 0, &shared))
        return false;
    if (shared) {
        a->n_shared_experts = 1;
        a->shared_expert_intermediate_size = shared;
    }
    a->router_score_bias = a->moe; /* NemotronHTopkRouter: e_score_correction_bias */
    return true;
}

/* Qwen3-Next (vllm qwen3_next.py): Gated DeltaNet sizes; layers from layer_types (read with the
 * windows) or every full_attention_interval-th layer full attention. Its full-attention layers
 * gate their output (attn_output_gate, default true) and norm q and k per head. */
static bool read_qwen3_next(Cfg *c, ModelArch *a)
{
    static const char why[] = "required for the Gated DeltaNet layers of qwen3_next";
    uint32_t interval = 4;
    bool gate = true;
    if (!get_uint(c, "linear_num_key_heads", true, why, 0, &a->linear_num_key_heads) ||
        !get_uint(c, "linear_num_value_heads", true, why, 0, &a->linear_num_value_heads) ||
        !get_uint(c, "linear_key_head_dim", true, why, 0, &a->linear_key_head_dim) ||
        !get_uint(c, "linear_value_head_dim", true, why, 0, &a->linear_value_head_dim) ||
        !get_uint(c, "linear_conv_kernel_dim", true, NULL, 4, &a->linear_conv_kernel_dim) ||
        !get_uint(c, "full_attention_interval", true, NULL, 4, &interval) ||
        !get_bool(c, "attn_output_gate", true, &gate))
        return false;
    if (a->linear_num_value_heads % a->linear_num_key_heads)
        return fail(c, "field '%s': %u value heads are not a multiple of the %u key heads",
                    K(c, "linear_num_value_heads"), a->linear_num_value_heads,
                    a->linear_num_key_heads);
    if (!member(c, "layer_types"))
        for (uint32_t i = 0; i < a->num_layers; i++)
            a->layer_mixer[i] = (i + 1) % interval == 0 ? MODEL_MIXER_ATTENTION : MODEL_MIXER_GDN;
    a->attn_output_gate = gate;
    a->qk_norm_dim = a->head_dim;
    return true;
}

/* The Mamba-2 mixer of Falcon-H1 and Granite-4.0-H (MambaMixer2 built from the mamba_* keys of
 * FalconH1Config / GraniteMoeHybridConfig; defaults are transformers'). `inner` is the mixer's
 * intermediate size as vLLM passes it (Falcon-H1: mamba_d_ssm, else mamba_expand x hidden;
 * Granite: mamba_expand x hidden); ranksim sizes the mixer by heads x head_dim, so the two must
 * agree (they do in every published checkpoint). */
static bool read_mamba2_keys(Cfg *c, ModelArch *a, const char *why, bool d_ssm)
{
    uint32_t expand = 2, inner = 0;
    if (!get_uint(c, "mamba_n_heads", true, why, 0, &a->mamba_num_heads) ||
        !get_uint(c, "mamba_d_head", true, why, 0, &a->mamba_head_dim) ||
        !get_uint(c, "mamba_d_state", true, why, 0, &a->ssm_state_size) ||
        !get_uint(c, "mamba_n_groups", true, NULL, 1, &a->mamba_n_groups) ||
        !get_uint(c, "mamba_d_conv", true, NULL, 4, &a->mamba_conv_kernel) ||
        !get_uint(c, "mamba_chunk_size", true, NULL, 256, &a->mamba_chunk_size) ||
        !get_uint(c, "mamba_expand", true, NULL, 2, &expand) ||
        (d_ssm && !get_uint(c, "mamba_d_ssm", true, NULL, 0, &inner)))
        return false;
    const char *inner_key = inner ? "mamba_d_ssm" : "mamba_expand";
    if (!inner)
        inner = expand * a->hidden_size;
    if (a->mamba_num_heads % a->mamba_n_groups)
        return fail(c, "field '%s': %u heads do not split into %u groups", K(c, "mamba_n_heads"),
                    a->mamba_num_heads, a->mamba_n_groups);
    if ((uint64_t)a->mamba_num_heads * a->mamba_head_dim != inner)
        return fail(c, "field '%s': the Mamba-2 inner size %u differs from mamba_n_heads x "
                       "mamba_d_head (%u x %u); ranksim sizes the mixer by its heads",
                    K(c, inner_key), inner, a->mamba_num_heads, a->mamba_head_dim);
    return true;
}

/* Falcon-H1 (vllm falcon_h1.py FalconH1ParallelHybrid): every layer attention (rotary, GQA with
 * head_dim) and a Mamba-2 mixer side by side on the same normed input, their outputs summed,
 * then a gated SiLU MLP of intermediate_size. FalconH1MLP refuses any other activation. */
static bool read_falcon_h1(Cfg *c, ModelArch *a)
{
    static const char why[] = "required for the Mamba-2 mixers of falcon_h1";
    const char *act = NULL;
    if (!read_mamba2_keys(c, a, why, true) || !get_string(c, "hidden_act", &act))
        return false;
    if (act && strcmp(act, "silu") != 0)
        return fail(c, "field '%s': Unsupported activation: %s. Only silu is supported for now.",
                    K(c, "hidden_act"), act);
    a->parallel_ssm = true;
    return true;
}

/* Granite-4.0-H (vllm granitemoehybrid.py): `layer_types` of "mamba" / "attention" (read with
 * the windows), each layer its mixer then GraniteMoeMoE (num_local_experts experts of
 * intermediate_size, top num_experts_per_tok) plus GraniteMoeSharedMLP (a gated MLP of
 * shared_intermediate_size); with num_local_experts 0 the shared MLP alone is the layer's MLP
 * (Granite-4.0-H-Micro). Attention: head_dim = hidden / heads, rotary only with
 * position_embedding_type "rope" (transformers' default "nope"). */
static bool read_granite_h(Cfg *c, ModelArch *a)
{
    static const char why[] = "required for the Mamba-2 layers of granitemoehybrid";
    const char *pos = NULL;
    uint32_t shared = 0;
    if (!member(c, "layer_types"))
        return fail(c, "missing field '%s' (required by model_type granitemoehybrid: \"mamba\" "
                       "or \"attention\" per layer)",
                    K(c, "layer_types"));
    if (!read_mamba2_keys(c, a, why, false) || !get_string(c, "position_embedding_type", &pos) ||
        !get_uint(c, "shared_intermediate_size", false, NULL, 0, &shared))
        return false;
    if (pos && strcmp(pos, "nope") != 0 && strcmp(pos, "rope") != 0)
        return fail(c, "field '%s': \"%s\"; valid: \"nope\", \"rope\"",
                    K(c, "position_embedding_type"), pos);
    a->attn_no_rope = !pos || strcmp(pos, "nope") == 0;
    if (!a->moe) { /* the shared MLP is the layer's MLP; none at all without it */
        a->intermediate_size = shared;
        for (uint32_t i = 0; i < a->num_layers && !shared; i++)
            a->layer_no_ffn[i] = true;
    }
    return true;
}

static bool read_hybrid(Cfg *c, ModelArch *a)
{
    if (is_type(a, "nemotron_h"))
        return read_nemotron_h(c, a);
    if (is_type(a, "qwen3_next"))
        return read_qwen3_next(c, a);
    if (is_type(a, "falcon_h1"))
        return read_falcon_h1(c, a);
    if (is_type(a, "granitemoehybrid"))
        return read_granite_h(c, a);
    return true;
}

static bool load_text(const char *text, gssize len, const char *display, JsonObject *ascend,
                      const char *ascend_display, ModelArch *out, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    JsonNode *root = parse_json(parser, text, len, display, "a config.json object", error);
    if (!root)
        return false;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_autofree char *got = describe(root);
        g_set_error(error, MODEL_ARCH_ERROR, ERR_FIELD,
                    "%s: expected a JSON object (a Hugging Face config.json) at the top level, "
                    "got %s",
                    display, got);
        return false;
    }
    g_autofree Cfg *c = g_new0(Cfg, 1);
    c->display = display;
    c->top = c->obj = json_node_get_object(root);
    c->prefix = "";
    c->error = error;
    JsonNode *text_config = obj_member(c->top, "text_config");
    if (text_config) {
        if (!JSON_NODE_HOLDS_OBJECT(text_config)) {
            g_autofree char *got = describe(text_config);
            return fail(c,
                        "field 'text_config': expected an object (the language model's "
                        "config), got %s",
                        got);
        }
        c->obj = json_node_get_object(text_config);
        c->prefix = "text_config.";
    }
    g_autofree ModelArch *a = g_new0(ModelArch, 1);
    name_from_display(display, a->name, sizeof a->name);
    const char *mt = node_string(member(c, "model_type"));
    if (!mt)
        mt = node_string(obj_member(c->top, "model_type"));
    g_strlcpy(a->model_type, mt ? mt : "", sizeof a->model_type);
    g_strlcpy(a->layer_prefix, text_config ? "language_model.model.layers." : "model.layers.",
              sizeof a->layer_prefix);
    if (!refuse_hybrid(c) || !read_common(c, a) || !read_attention(c, a) || !read_indexer(c, a) ||
        !read_mlp(c, a) || !read_hybrid(c, a) || !read_dsv4(c, a) || !read_mtp(c, a) || !read_dtype(c, a) ||
        !read_max_model_len(c, a) ||
        !read_vision(c, a) || !read_quant(c, a, ascend, ascend_display) ||
        !read_expert_dtype(c, a))
        return false;
    memcpy(out, a, sizeof *a);
    return true;
}

bool model_arch_load_string(const char *json, const char *display, ModelArch *out, GError **error)
{
    g_return_val_if_fail(json != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    return load_text(json, -1, display ? display : "<string>", NULL, NULL, out, error);
}

bool model_arch_load_config(const ModelArchText *config, const ModelArchText *ascend_desc,
                            ModelArch *out, GError **error)
{
    g_return_val_if_fail(config != NULL && (config->data != NULL || config->len == 0), false);
    g_return_val_if_fail(ascend_desc == NULL || ascend_desc->data != NULL || ascend_desc->len == 0,
                         false);
    g_return_val_if_fail(out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    const char *display = config->display ? config->display : "<config.json>";
    /* vLLM-Ascend W8A8 / W4A8 checkpoints describe every tensor in a file beside config.json. */
    g_autoptr(JsonParser) desc_parser = json_parser_new_immutable();
    JsonObject *desc = NULL;
    const char *desc_display = NULL;
    if (ascend_desc) {
        desc_display = ascend_desc->display ? ascend_desc->display : MODEL_ARCH_ASCEND_DESCRIPTION;
        JsonNode *root = parse_json(desc_parser, ascend_desc->data ? ascend_desc->data : "",
                                    (gssize)ascend_desc->len, desc_display,
                                    "a quant_model_description.json object", error);
        if (!root)
            return false;
        if (!JSON_NODE_HOLDS_OBJECT(root)) {
            g_autofree char *got = describe(root);
            g_set_error(error, MODEL_ARCH_ERROR, ERR_FIELD,
                        "%s: expected a JSON object (tensor name -> \"W8A8\" / \"FLOAT\" ...) at "
                        "the top level, got %s",
                        desc_display, got);
            return false;
        }
        desc = json_node_get_object(root);
    }
    return load_text(config->data ? config->data : "", (gssize)config->len, display, desc,
                     desc_display, out, error);
}

bool model_arch_load_preset(const char *name, ModelArch *out, GError **error)
{
    g_return_val_if_fail(name != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    const PresetList *list = preset_list();
    bool known = false;
    for (size_t i = 0; list->names[i] && !known; i++)
        known = strcmp(list->names[i], name) == 0;
    if (!known) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO,
                    "unknown model preset '%s'; valid: %s (or a path to a config.json)", name,
                    list->joined);
        return false;
    }
    g_autofree char *rpath = g_strdup_printf(PRESET_DIR "/%s.json", name);
    g_autofree char *display = g_strdup_printf("model/presets/%s.json", name);
    g_autoptr(GError) rerr = NULL;
    g_autoptr(GBytes) data =
        g_resource_lookup_data(embedded_resource(), rpath, G_RESOURCE_LOOKUP_FLAGS_NONE, &rerr);
    if (!data) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO,
                    "%s: the preset is not built into this binary: %s", display, rerr->message);
        return false;
    }
    gsize len = 0;
    const char *text = g_bytes_get_data(data, &len);
    if (!load_text(text, (gssize)len, display, NULL, NULL, out, error))
        return false;
    g_strlcpy(out->name, name, sizeof out->name);
    return true;
}

bool model_arch_apply_quant_json(ModelArch *a, const char *json_text, const char *display,
                                 GError **error)
{
    g_return_val_if_fail(a != NULL && json_text != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    if (!display)
        display = "<quantization_config>";
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    JsonNode *root =
        parse_json(parser, json_text, -1, display, "a quantization_config object", error);
    if (!root)
        return false;
    JsonNode *q = root;
    if (JSON_NODE_HOLDS_OBJECT(root) &&
        obj_member(json_node_get_object(root), "quantization_config"))
        q = obj_member(json_node_get_object(root), "quantization_config");
    if (!JSON_NODE_HOLDS_OBJECT(q)) {
        g_autofree char *got = describe(q);
        g_set_error(error, MODEL_ARCH_ERROR, ERR_FIELD,
                    "%s: expected a quantization_config object (with quant_method), got %s",
                    display, got);
        return false;
    }
    ModelQuantNames names = quant_names(a);
    g_autofree ModelQuantSpec *spec = g_new0(ModelQuantSpec, 1);
    g_autoptr(GError) qerr = NULL;
    if (!model_quant_from_config(json_node_get_object(q), display, a->native_dtype, &names, spec,
                                 &qerr)) {
        propagate_quant_error(error, qerr, display);
        return false;
    }
    memcpy(&a->quant, spec, sizeof *spec);
    set_experts_mxfp4(a); /* DeepSeek-V4's expert_dtype holds whatever the config says */
    return true;
}
