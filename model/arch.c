/* model/arch.c — Hugging Face config.json -> ModelArch: presets (GResource), files, strings.
 *
 * One interpreter serves all three: load_text() parses with json-glib, then the read_*()
 * steps take the fields this simulator needs and ignore every other one (real config files carry
 * dozens). `name` is the preset name, else the folder of a file named config.json, else the
 * file's basename without ".json".
 * The structure is decided from which fields are present, in this order: MLA (`kv_lora_rank`),
 * DSA (`index_topk`), IndexShare (`indexer_types`), MoE (`n_routed_experts` or `num_experts`);
 * a field that is present but null counts as absent (`"q_lora_rank": null` is DeepSeek-V2-Lite's
 * "no q compression"). Once the structure is known the fields it needs are required, each
 * missing one reported with the reason it is needed.
 *
 * Integers are accepted as JSON integers or as integral numbers (1024.0), within
 * 0..MAX_FIELD (2^31 - 1); fields that size something must be positive. Layer patterns the
 * ModelArch cannot express (MoE every other layer, dense layers in the middle) are refused
 * rather than approximated.
 *
 * Costs: one parse of the document and one pass over indexer_types / mlp_only_layers. Nothing
 * is retained: the result is a plain struct, written to *out only on success.
 */
#include "arch.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gio/gio.h>
#include <json-glib/json-glib.h>

/* Generated from model/presets/presets.gresource.xml (c_name ranksim_models). Calling it keeps
 * the resource object in a static link. */
extern GResource *ranksim_models_get_resource(void);

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

enum { ERR_IO = 0, ERR_JSON = 1, ERR_FIELD = 2 };

#define MAX_FIELD INT32_MAX                       /* largest integer a field may hold */
#define MAX_CONFIG_BYTES ((long)64 * 1024 * 1024) /* a config.json is a few KiB */

static const char *const preset_names[] = {
    "glm-5", "glm-5.2", "deepseek-v3.2", "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b", NULL};
/* The same list, as model_arch_preset_names() returns it and errors print it. */
static const char preset_list[] =
    "glm-5, glm-5.2, deepseek-v3.2, deepseek-v3, llama-3.1-70b, qwen3-235b-a22b";

G_DEFINE_QUARK(model - arch - error - quark, model_arch_error)

const char *model_arch_preset_names(void)
{
    return preset_list;
}

bool model_arch_layer_is_moe(const ModelArch *a, uint32_t layer)
{
    g_return_val_if_fail(a != NULL, false);
    return a->moe && layer < MODEL_MAX_LAYERS && a->layer_moe[layer];
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
    JsonObject *obj;     /* the top-level object */
    GError **error;
} Cfg;

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

/* The member `key`, or NULL when it is absent or null. */
static JsonNode *member(Cfg *c, const char *key)
{
    JsonNode *n = json_object_get_member(c->obj, key);
    return n && !JSON_NODE_HOLDS_NULL(n) ? n : NULL;
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

/* An integer 0..MAX_FIELD (1..MAX_FIELD when `positive`) from `n`, which may be an integral
 * double. `key` names it in messages. */
static bool node_uint(Cfg *c, JsonNode *n, const char *key, bool positive, uint32_t *out)
{
    const char *want = positive ? "a positive integer" : "a non-negative integer";
    GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
    double v;
    if (t == G_TYPE_INT64)
        v = (double)json_node_get_int(n);
    else if (t == G_TYPE_DOUBLE)
        v = json_node_get_double(n);
    else {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected %s, got %s", key, want, got);
    }
    g_autofree char *got = describe(n);
    if (!isfinite(v) || v != floor(v))
        return fail(c, "field '%s': expected %s, got %s", key, want, got);
    if (v < (positive ? 1 : 0))
        return fail(c, "field '%s': expected %s, got %s", key, want, got);
    if (v > MAX_FIELD)
        return fail(c, "field '%s': expected %s, got %s (at most %d)", key, want, got, MAX_FIELD);
    *out = (uint32_t)v;
    return true;
}

/* Field `key` as an integer. Absent or null: an error saying `required` ("required for every
 * model") when that is non-NULL, else `def`. */
static bool get_uint(Cfg *c, const char *key, bool positive, const char *required, uint32_t def,
                     uint32_t *out)
{
    JsonNode *n = json_object_get_member(c->obj, key);
    if (!n && required)
        return fail(c, "missing field '%s' (%s)", key, required);
    if (n && JSON_NODE_HOLDS_NULL(n) && required)
        return fail(c, "field '%s': expected %s, got null (%s)", key,
                    positive ? "a positive integer" : "a non-negative integer", required);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        *out = def;
        return true;
    }
    return node_uint(c, n, key, positive, out);
}

static bool get_bool(Cfg *c, const char *key, bool def, bool *out)
{
    JsonNode *n = member(c, key);
    if (!n) {
        *out = def;
        return true;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        g_autofree char *got = describe(n);
        return fail(c, "field '%s': expected true or false, got %s", key, got);
    }
    *out = json_node_get_boolean(n);
    return true;
}

/* `architectures[0]`, else `model_type`, else "" (informative only). */
static bool get_architecture(Cfg *c, char *dst, size_t size)
{
    JsonNode *n = member(c, "architectures");
    const char *s = "";
    if (n) {
        JsonArray *a = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
        JsonNode *first = a && json_array_get_length(a) > 0 ? json_array_get_element(a, 0) : NULL;
        if (!a || (first && (!JSON_NODE_HOLDS_VALUE(first) ||
                             json_node_get_value_type(first) != G_TYPE_STRING))) {
            g_autofree char *got = describe(first ? first : n);
            return fail(c,
                        "field 'architectures': expected a list of class names such as "
                        "[\"DeepseekV3ForCausalLM\"], got %s",
                        got);
        }
        if (first)
            s = json_node_get_string(first);
    }
    JsonNode *mt = member(c, "model_type");
    if (!*s && mt && JSON_NODE_HOLDS_VALUE(mt) && json_node_get_value_type(mt) == G_TYPE_STRING)
        s = json_node_get_string(mt);
    g_strlcpy(dst, s, size);
    return true;
}

/* ---- the structure ---- */

static bool read_common(Cfg *c, ModelArch *a)
{
    static const char every[] = "required for every model";
    if (!get_uint(c, "hidden_size", true, every, 0, &a->hidden_size) ||
        !get_uint(c, "num_hidden_layers", true, every, 0, &a->num_layers) ||
        !get_uint(c, "num_attention_heads", true, every, 0, &a->num_heads) ||
        !get_uint(c, "vocab_size", true, every, 0, &a->vocab_size) ||
        !get_bool(c, "tie_word_embeddings", false, &a->tie_word_embeddings) ||
        !get_uint(c, "num_nextn_predict_layers", false, NULL, 0, &a->num_nextn_predict_layers) ||
        !get_architecture(c, a->architecture, sizeof a->architecture))
        return false;
    if (a->num_layers > MODEL_MAX_LAYERS)
        return fail(c, "field 'num_hidden_layers': %u layers; at most %d are supported",
                    a->num_layers, MODEL_MAX_LAYERS);
    return true;
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
               get_uint(c, "v_head_dim", true, why, 0, &a->v_head_dim);
    }
    if (!get_uint(c, "num_key_value_heads", true, NULL, a->num_heads, &a->num_kv_heads))
        return false;
    if (a->num_kv_heads > a->num_heads || a->num_heads % a->num_kv_heads != 0)
        return fail(c,
                    "field 'num_key_value_heads': %u does not divide num_attention_heads (%u); "
                    "each KV head serves a whole group of query heads",
                    a->num_kv_heads, a->num_heads);
    if (member(c, "head_dim"))
        return get_uint(c, "head_dim", true, NULL, 0, &a->head_dim);
    if (a->hidden_size % a->num_heads != 0)
        return fail(c,
                    "missing field 'head_dim' (required when hidden_size %u is not a multiple "
                    "of num_attention_heads %u)",
                    a->hidden_size, a->num_heads);
    a->head_dim = a->hidden_size / a->num_heads;
    return true;
}

/* `indexer_types`: one "full" / "shared" per layer, the first "full". */
static bool read_indexer_types(Cfg *c, JsonNode *n, ModelArch *a)
{
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_autofree char *got = describe(n);
        return fail(c,
                    "field 'indexer_types': expected a list of \"full\" / \"shared\", one per "
                    "layer, got %s",
                    got);
    }
    JsonArray *arr = json_node_get_array(n);
    guint len = json_array_get_length(arr);
    if (len != a->num_layers)
        return fail(c,
                    "field 'indexer_types': %u entries, but num_hidden_layers is %u; give one "
                    "\"full\" or \"shared\" per layer",
                    len, a->num_layers);
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(arr, i);
        const char *s = JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING
                            ? json_node_get_string(e)
                            : NULL;
        if (s && strcmp(s, "full") == 0)
            a->index_shared[i] = false;
        else if (s && strcmp(s, "shared") == 0)
            a->index_shared[i] = true;
        else {
            g_autofree char *got = describe(e);
            return fail(c, "field 'indexer_types': entry %u is %s; valid: \"full\", \"shared\"", i,
                        got);
        }
    }
    if (a->index_shared[0])
        return fail(c, "field 'indexer_types': entry 0 is \"shared\", but the first layer must be "
                       "\"full\" (a shared layer reuses the top-k of the previous full layer)");
    return true;
}

/* DSA indexer (index_topk present), with IndexShare when indexer_types is present. */
static bool read_indexer(Cfg *c, ModelArch *a)
{
    JsonNode *types = member(c, "indexer_types");
    a->index_topk_freq = 1;
    if (!member(c, "index_topk")) {
        if (types)
            return fail(c, "field 'indexer_types' needs index_topk, index_n_heads and "
                           "index_head_dim (a DSA indexer); none is given");
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

/* Qwen's `mlp_only_layers`: accepted when it lists exactly the first k layers (any order),
 * which become first_k_dense_replace = k. */
static bool read_mlp_only_layers(Cfg *c, ModelArch *a)
{
    JsonNode *n = member(c, "mlp_only_layers");
    if (!n)
        return true;
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_autofree char *got = describe(n);
        return fail(c, "field 'mlp_only_layers': expected a list of layer indices, got %s", got);
    }
    JsonArray *arr = json_node_get_array(n);
    guint len = json_array_get_length(arr);
    if (len == 0)
        return true;
    if (a->first_k_dense_replace != 0)
        return fail(c, "field 'mlp_only_layers': give either it or first_k_dense_replace, not "
                       "both");
    if (len > a->num_layers)
        return fail(c, "field 'mlp_only_layers': %u layers, but num_hidden_layers is %u", len,
                    a->num_layers);
    g_autofree bool *seen = g_new0(bool, len);
    for (guint i = 0; i < len; i++) {
        uint32_t layer = 0;
        if (!node_uint(c, json_array_get_element(arr, i), "mlp_only_layers", false, &layer))
            return false;
        if (layer >= len || seen[layer])
            return fail(c,
                        "field 'mlp_only_layers': only the first k layers may be dense (a list "
                        "of 0..k-1); layer %u breaks that",
                        layer);
        seen[layer] = true;
    }
    a->first_k_dense_replace = len;
    return true;
}

/* A layer-frequency field (`moe_layer_freq`, `decoder_sparse_step`): only 1 is expressible. */
static bool require_every_layer(Cfg *c, const char *key)
{
    uint32_t v = 1;
    if (!get_uint(c, key, true, NULL, 1, &v))
        return false;
    if (v != 1)
        return fail(c,
                    "field '%s': %u is not supported; only 1 (every layer after the first "
                    "dense ones is MoE)",
                    key, v);
    return true;
}

/* MoE (n_routed_experts or num_experts present), then the dense MLP size where it is needed. */
static bool read_mlp(Cfg *c, ModelArch *a)
{
    const char *experts_key = member(c, "n_routed_experts") ? "n_routed_experts"
                              : member(c, "num_experts")    ? "num_experts"
                                                            : NULL;
    if (experts_key) {
        g_autofree char *why = g_strdup_printf("required for MoE, which %s selects", experts_key);
        a->moe = true;
        if (!get_uint(c, experts_key, true, why, 0, &a->n_routed_experts) ||
            !get_uint(c, "num_experts_per_tok", true, why, 0, &a->num_experts_per_tok) ||
            !get_uint(c, "moe_intermediate_size", true, why, 0, &a->moe_intermediate_size) ||
            !get_uint(c, "n_shared_experts", false, NULL, 0, &a->n_shared_experts) ||
            !get_uint(c, "first_k_dense_replace", false, NULL, 0, &a->first_k_dense_replace) ||
            !require_every_layer(c, "moe_layer_freq") ||
            !require_every_layer(c, "decoder_sparse_step") || !read_mlp_only_layers(c, a))
            return false;
        if (a->num_experts_per_tok > a->n_routed_experts)
            return fail(c, "field 'num_experts_per_tok': %u exceeds %s (%u)",
                        a->num_experts_per_tok, experts_key, a->n_routed_experts);
        if (a->first_k_dense_replace > a->num_layers)
            return fail(c, "field 'first_k_dense_replace': %u exceeds num_hidden_layers (%u)",
                        a->first_k_dense_replace, a->num_layers);
    }
    if (!a->moe || a->first_k_dense_replace > 0)
        return get_uint(c, "intermediate_size", true,
                        a->moe ? "required for the dense MLP of the first first_k_dense_replace "
                                 "layers"
                               : "required for a dense model's MLP",
                        0, &a->intermediate_size);
    /* Every layer is MoE: intermediate_size is informative (Qwen3 MoE carries one). */
    return get_uint(c, "intermediate_size", false, NULL, 0, &a->intermediate_size);
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

static bool load_text(const char *text, gssize len, const char *display, ModelArch *out,
                      GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) perr = NULL;
    if (!json_parser_load_from_data(parser, text, len, &perr)) {
        /* json-glib says "<data>:LINE:COL: Parse error: ..."; name the file instead. */
        const char *msg = perr->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>");
        g_set_error(error, MODEL_ARCH_ERROR, ERR_JSON, "%s%s%s", display, msg[0] == ':' ? "" : ": ",
                    msg);
        return false;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_JSON,
                    "%s: empty document; expected a config.json object", display);
        return false;
    }
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_autofree char *got = describe(root);
        g_set_error(error, MODEL_ARCH_ERROR, ERR_FIELD,
                    "%s: expected a JSON object (a Hugging Face config.json) at the top level, "
                    "got %s",
                    display, got);
        return false;
    }
    Cfg c = {.display = display, .obj = json_node_get_object(root), .error = error};
    ModelArch a;
    memset(&a, 0, sizeof a);
    name_from_display(display, a.name, sizeof a.name);
    if (!read_common(&c, &a) || !read_attention(&c, &a) || !read_indexer(&c, &a) ||
        !read_mlp(&c, &a))
        return false;
    a.native_dtype = MODEL_WFMT_BF16;
    model_quant_spec_native(&a.quant, a.native_dtype, a.num_layers + a.num_nextn_predict_layers);
    for (uint32_t l = 0; l < a.num_layers; l++)
        a.layer_moe[l] = a.moe && l >= a.first_k_dense_replace;
    a.shared_expert_intermediate_size = a.n_shared_experts * a.moe_intermediate_size;
    a.router_score_bias = a.moe && a.mla;
    memcpy(out, &a, sizeof a);
    return true;
}

bool model_arch_load_string(const char *json, const char *display, ModelArch *out, GError **error)
{
    g_return_val_if_fail(json != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    return load_text(json, -1, display ? display : "<string>", out, error);
}

/* Reads `path` whole; errors say the path and strerror (g_file_get_contents would repeat it). */
static char *read_all(const char *path, gsize *len, GError **error)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO, "%s: cannot read the model config: %s", path,
                    g_strerror(e));
        return NULL;
    }
    g_autoptr(GString) buf = g_string_new(NULL);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        g_string_append_len(buf, chunk, (gssize)n);
        if ((long)buf->len > MAX_CONFIG_BYTES) {
            fclose(f);
            g_set_error(error, MODEL_ARCH_ERROR, ERR_IO,
                        "%s: larger than %ld MiB; expected a config.json of a few KiB", path,
                        MAX_CONFIG_BYTES >> 20);
            return NULL;
        }
    }
    int e = ferror(f) ? errno : 0;
    fclose(f);
    if (e) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO, "%s: cannot read the model config: %s", path,
                    g_strerror(e));
        return NULL;
    }
    *len = buf->len;
    return g_string_free(g_steal_pointer(&buf), FALSE);
}

bool model_arch_load_file(const char *path, ModelArch *out, GError **error)
{
    g_return_val_if_fail(path != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    gsize len = 0;
    g_autofree char *text = read_all(path, &len, error);
    if (!text)
        return false;
    return load_text(text, (gssize)len, path, out, error);
}

bool model_arch_load_preset(const char *name, ModelArch *out, GError **error)
{
    g_return_val_if_fail(name != NULL && out != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    bool known = false;
    for (size_t i = 0; preset_names[i] && !known; i++)
        known = strcmp(preset_names[i], name) == 0;
    if (!known) {
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO,
                    "unknown model preset '%s'; valid: %s (or a path to a config.json)", name,
                    preset_list);
        return false;
    }
    g_autofree char *rpath = g_strdup_printf("/org/ranksim/models/%s.json", name);
    g_autofree char *display = g_strdup_printf("model/presets/%s.json", name);
    g_autoptr(GError) rerr = NULL;
    g_autoptr(GBytes) data = g_resource_lookup_data(embedded_resource(), rpath,
                                                    G_RESOURCE_LOOKUP_FLAGS_NONE, &rerr);
    if (!data) {
        /* preset_names and model/presets/presets.gresource.xml disagree: a build problem. */
        g_set_error(error, MODEL_ARCH_ERROR, ERR_IO,
                    "%s: the preset is not built into this binary: %s", display, rerr->message);
        return false;
    }
    gsize len = 0;
    const char *text = g_bytes_get_data(data, &len);
    if (!load_text(text, (gssize)len, display, out, error))
        return false;
    g_strlcpy(out->name, name, sizeof out->name);
    return true;
}
