/* model/quant-config.c — reading a checkpoint's quantization_config (or vLLM-Ascend's
 * quant_model_description.json) into a ModelQuantSpec, and ranksim's override names.
 *
 * Design: every scheme is reduced to one decision per (layer, tensor role): "which format do
 * this layer's tensors of this role have in the checkpoint?". The decision looks at the module
 * names a Hugging Face checkpoint would use for the role (candidates: "model.layers.3.mlp.
 * experts.0.gate_proj", its Mixtral / gpt-oss / multimodal aliases, ...) and applies the
 * scheme's own matching rule to them (doc/quantization.md, "Matching"):
 *   compressed-tensors  `ignore` and `targets`: exact module name, or "re:<regex>" matched
 *                       with Python's re.match (anchored at the start only); class targets
 *                       ("Linear") match every linear; a role is ignored when any of its
 *                       candidates is (vLLM requires fused shards to agree).
 *   ModelOpt            `exclude_modules`: fnmatch wildcards, full match, tried on the module
 *                       name and each of its parents ("model.layers.0.self_attn" excludes
 *                       q_proj); MIXED_PRECISION `quantized_layers` looked up the same way.
 *   HF `modules_to_not_convert` / `ignored_layers` (fp8, mxfp4, awq, gptq, fbgemm_fp8): an
 *                       entry (with '*' wildcards) matches a run of whole dotted components
 *                       ("gate" matches "model.layers.3.block_sparse_moe.gate", not gate_proj).
 *   Quark               `exclude`: exact, "re:" or fnmatch; `layer_quant_config` fnmatch.
 * The decisions are taken once, at load time; lookups afterwards are table reads.
 *
 * Costs: O(layers x roles x candidates x (exact lookups + wildcard entries)); exact entries
 * (Qwen3-FP8 lists 283) are hashed, so a config with hundreds of them loads in milliseconds.
 * Nothing here keeps a pointer into the JSON after returning.
 */
#include "quant.h"

#include <stdio.h>
#include <string.h>

enum { ERR_METHOD = 0, ERR_FIELD = 1 };

const char *model_quant_methods(void)
{
    return "fp8, compressed-tensors, modelopt, modelopt_fp4, modelopt_fp8, modelopt_mixed, "
           "mxfp4, quark, awq, gptq, fbgemm_fp8";
}

/* ---- JSON helpers: every failure names the key path and what would be valid ---- */

typedef struct {
    const char *display;
    GError **error;
} P;

static char *node_describe(JsonNode *n)
{
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return g_strdup("null");
    if (JSON_NODE_HOLDS_OBJECT(n))
        return g_strdup("an object");
    if (JSON_NODE_HOLDS_ARRAY(n))
        return g_strdup_printf("an array of %u elements", json_array_get_length(json_node_get_array(n)));
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_STRING)
        return g_strdup_printf("the string '%s'", json_node_get_string(n));
    if (t == G_TYPE_INT64)
        return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(n));
    if (t == G_TYPE_DOUBLE)
        return g_strdup_printf("%g", json_node_get_double(n));
    if (t == G_TYPE_BOOLEAN)
        return g_strdup(json_node_get_boolean(n) ? "true" : "false");
    return g_strdup("a value");
}

/* "base.key", or "key" when base is NULL / empty; "base[3]" for key "[3]". */
static char *kpath(const char *base, const char *key)
{
    if (!base || !*base)
        return g_strdup(key);
    return g_strdup_printf("%s%s%s", base, key[0] == '[' ? "" : ".", key);
}

static bool fail_at(P *p, const char *base, const char *key, const char *expected, JsonNode *got)
{
    g_autofree char *path = kpath(base, key);
    g_autofree char *g = node_describe(got);
    g_set_error(p->error, MODEL_QUANT_ERROR, ERR_FIELD, "%s: key '%s': expected %s, got %s",
                p->display, path, expected, g);
    return false;
}

static bool fail_missing(P *p, const char *base, const char *key, const char *expected)
{
    g_autofree char *path = kpath(base, key);
    g_set_error(p->error, MODEL_QUANT_ERROR, ERR_FIELD, "%s: key '%s': missing; expected %s",
                p->display, path, expected);
    return false;
}

/* A member, with JSON null read as absent. */
static JsonNode *member(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_NULL(n) ? NULL : n;
}

static bool holds(JsonNode *n, GType t)
{
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == t;
}

static bool opt_int(P *p, JsonObject *o, const char *base, const char *key, int64_t *out)
{
    JsonNode *n = member(o, key);
    if (!n)
        return true;
    if (!holds(n, G_TYPE_INT64))
        return fail_at(p, base, key, "an integer", n);
    *out = json_node_get_int(n);
    return true;
}

static bool opt_bool(P *p, JsonObject *o, const char *base, const char *key, bool *out)
{
    JsonNode *n = member(o, key);
    if (!n)
        return true;
    if (!holds(n, G_TYPE_BOOLEAN))
        return fail_at(p, base, key, "true or false", n);
    *out = json_node_get_boolean(n);
    return true;
}

static bool opt_str(P *p, JsonObject *o, const char *base, const char *key, const char **out)
{
    JsonNode *n = member(o, key);
    if (!n)
        return true;
    if (!holds(n, G_TYPE_STRING))
        return fail_at(p, base, key, "a string", n);
    *out = json_node_get_string(n);
    return true;
}

static bool opt_obj(P *p, JsonObject *o, const char *base, const char *key, JsonObject **out)
{
    JsonNode *n = member(o, key);
    if (!n)
        return true;
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return fail_at(p, base, key, "an object", n);
    *out = json_node_get_object(n);
    return true;
}

/* A string or an array of strings, appended to `out` (borrowed from the JSON). */
static bool opt_strv(P *p, JsonObject *o, const char *base, const char *key, GPtrArray *out)
{
    JsonNode *n = member(o, key);
    if (!n)
        return true;
    if (holds(n, G_TYPE_STRING)) {
        g_ptr_array_add(out, (gpointer)json_node_get_string(n));
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(n))
        return fail_at(p, base, key, "an array of module names", n);
    JsonArray *a = json_node_get_array(n);
    g_autofree char *path = kpath(base, key);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!holds(e, G_TYPE_STRING)) {
            char idx[24];
            snprintf(idx, sizeof idx, "[%u]", i);
            return fail_at(p, path, idx, "a module name (string)", e);
        }
        g_ptr_array_add(out, (gpointer)json_node_get_string(e));
    }
    return true;
}

/* A string member that must be one of `valid` (NULL-terminated); -1 when absent. */
static bool opt_choice(P *p, JsonObject *o, const char *base, const char *key,
                       const char *const *valid, int *out)
{
    JsonNode *n = member(o, key);
    *out = -1;
    if (!n)
        return true;
    if (holds(n, G_TYPE_STRING)) {
        const char *v = json_node_get_string(n);
        for (int i = 0; valid[i]; i++)
            if (g_ascii_strcasecmp(v, valid[i]) == 0) {
                *out = i;
                return true;
            }
    }
    GString *exp = g_string_new("one of ");
    for (int i = 0; valid[i]; i++)
        g_string_append_printf(exp, "%s%s", i ? ", " : "", valid[i]);
    bool r = fail_at(p, base, key, exp->str, n);
    g_string_free(exp, TRUE);
    return r;
}

/* ---- module-name patterns ---- */

typedef enum { EXPAND_NONE, EXPAND_ANCESTORS, EXPAND_RUNS } PatExpand;

typedef struct {
    bool regex;  /* GRegex, matched on the module name itself */
    char *text;  /* glob text (regex: the pattern) */
    size_t lit;  /* glob: characters before the first wildcard */
    GRegex *re;
} Pat;

typedef struct {
    PatExpand expand;
    GHashTable *exact; /* entries without wildcards (owned keys) */
    GPtrArray *wild;   /* Pat */
} PatList;

static void pat_free(gpointer data)
{
    Pat *x = data;
    if (x->re)
        g_regex_unref(x->re);
    g_free(x->text);
    g_free(x);
}

static void patlist_init(PatList *l, PatExpand expand)
{
    l->expand = expand;
    l->exact = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    l->wild = g_ptr_array_new_with_free_func(pat_free);
}

static void patlist_clear(PatList *l)
{
    if (l->exact)
        g_hash_table_unref(l->exact);
    if (l->wild)
        g_ptr_array_unref(l->wild);
    l->exact = NULL;
    l->wild = NULL;
}

static bool patlist_empty(const PatList *l)
{
    return g_hash_table_size(l->exact) == 0 && l->wild->len == 0;
}

/* fnmatch-style: '*' any run (dots included, as Python's fnmatch), '?' one character. */
static bool glob_match(const char *pat, const char *s)
{
    const char *star = NULL, *retry = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            retry = s;
        } else if (*pat == '?' || *pat == *s) {
            pat++;
            s++;
        } else if (star) {
            pat = star + 1;
            s = ++retry;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}

/* Adds one entry. `regex_prefix` ("re:", "-:" or NULL) marks regular expressions; when
 * `globs`, entries with '*' or '?' are fnmatch patterns; anything else is an exact name. */
static bool patlist_add(P *p, PatList *l, const char *entry, const char *regex_prefix, bool globs,
                        const char *base, const char *key)
{
    if (regex_prefix && g_str_has_prefix(entry, regex_prefix)) {
        g_autoptr(GError) rerr = NULL;
        const char *rx = entry + strlen(regex_prefix);
        /* Python's re.match: anchored at the start, free at the end */
        GRegex *re = g_regex_new(rx, G_REGEX_ANCHORED | G_REGEX_OPTIMIZE, 0, &rerr);
        if (!re) {
            g_autofree char *path = kpath(base, key);
            g_set_error(p->error, MODEL_QUANT_ERROR, ERR_FIELD,
                        "%s: key '%s': expected a regular expression after '%s', got '%s' (%s)",
                        p->display, path, regex_prefix, rx, rerr->message);
            return false;
        }
        Pat *x = g_new0(Pat, 1);
        x->regex = true;
        x->text = g_strdup(rx);
        x->re = re;
        g_ptr_array_add(l->wild, x);
        return true;
    }
    if (globs && strpbrk(entry, "*?")) {
        Pat *x = g_new0(Pat, 1);
        x->text = g_strdup(entry);
        x->lit = strcspn(entry, "*?");
        g_ptr_array_add(l->wild, x);
        return true;
    }
    g_hash_table_add(l->exact, g_strdup(entry));
    return true;
}

static bool patlist_add_all(P *p, PatList *l, GPtrArray *entries, const char *regex_prefix,
                            bool globs, const char *base, const char *key)
{
    g_autofree char *path = kpath(base, key);
    for (guint i = 0; i < entries->len; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "[%u]", i);
        if (!patlist_add(p, l, g_ptr_array_index(entries, i), regex_prefix, globs, path, idx))
            return false;
    }
    return true;
}

static bool expansion_match(const PatList *l, const char *s)
{
    if (g_hash_table_contains(l->exact, s))
        return true;
    for (guint i = 0; i < l->wild->len; i++) {
        const Pat *x = g_ptr_array_index(l->wild, i);
        if (!x->regex && strncmp(s, x->text, x->lit) == 0 && glob_match(x->text, s))
            return true;
    }
    return false;
}

/* Whether module `name` is matched by the list, under the list's expansion rule. */
static bool patlist_match(const PatList *l, const char *name)
{
    for (guint i = 0; i < l->wild->len; i++) {
        const Pat *x = g_ptr_array_index(l->wild, i);
        if (x->regex && g_regex_match(x->re, name, 0, NULL))
            return true;
    }
    char buf[512];
    size_t n = strlen(name);
    if (n >= sizeof buf)
        return expansion_match(l, name);
    switch (l->expand) {
    case EXPAND_NONE:
        return expansion_match(l, name);
    case EXPAND_ANCESTORS:
        memcpy(buf, name, n + 1);
        for (;;) {
            if (expansion_match(l, buf))
                return true;
            char *dot = strrchr(buf, '.');
            if (!dot)
                return false;
            *dot = '\0';
        }
    case EXPAND_RUNS:
        /* every run of whole components: starts at 0 or after a dot, ends before one or at
         * the end */
        for (size_t a = 0; a < n; a++) {
            if (a > 0 && name[a - 1] != '.')
                continue;
            for (size_t b = a + 1; b <= n; b++) {
                if (b != n && name[b] != '.')
                    continue;
                memcpy(buf, name + a, b - a);
                buf[b - a] = '\0';
                if (expansion_match(l, buf))
                    return true;
            }
        }
        return false;
    }
    return false;
}

static bool patlist_match_any(const PatList *l, const GPtrArray *cands)
{
    for (guint i = 0; i < cands->len; i++)
        if (patlist_match(l, g_ptr_array_index(cands, i)))
            return true;
    return false;
}

/* ---- candidate module names per (layer, role) ---- */

typedef struct {
    char layer_prefix[64];
    const char *experts, *shared, *router, *mlp;
    uint32_t num_layers, num_mtp;
    bool alt_prefixes; /* also model.language_model.layers. / language_model.model.layers. */
} Names;

static void names_init(Names *n, const ModelQuantNames *in)
{
    memset(n, 0, sizeof *n);
    const char *lp = in && in->layer_prefix ? in->layer_prefix : "model.layers.";
    snprintf(n->layer_prefix, sizeof n->layer_prefix, "%s%s", lp, g_str_has_suffix(lp, ".") ? "" : ".");
    n->experts = in && in->experts ? in->experts : "mlp.experts";
    n->shared = in && in->shared ? in->shared : "mlp.shared_experts";
    n->router = in && in->router ? in->router : "mlp.gate";
    n->mlp = in && in->mlp ? in->mlp : "mlp";
    n->num_layers = in ? in->num_layers : 0;
    n->num_mtp = in ? in->num_mtp_layers : 0;
}

static bool is_global_role(ModelTensorRole r)
{
    return r == MODEL_ROLE_EMBED || r == MODEL_ROLE_LM_HEAD || r == MODEL_ROLE_VISION;
}

static void add_unique(GPtrArray *out, char *s)
{
    for (guint i = 0; i < out->len; i++)
        if (strcmp(g_ptr_array_index(out, i), s) == 0) {
            g_free(s);
            return;
        }
    g_ptr_array_add(out, s);
}

/* Module paths (without the layer prefix) a role may have in a checkpoint. */
static void role_modules(const Names *n, ModelTensorRole role, bool mtp, GPtrArray *m)
{
    static const char *const qkv[] = {"q_proj",           "k_proj",   "v_proj",
                                      "qkv_proj",         "q_a_proj", "kv_a_proj_with_mqa",
                                      "fused_qkv_a_proj", "fused_qkv_a_proj_with_mqa"};
    static const char *const gud[] = {"gate_proj", "up_proj", "down_proj"};
    switch (role) {
    case MODEL_ROLE_ATTN_QKV:
        for (size_t i = 0; i < G_N_ELEMENTS(qkv); i++)
            add_unique(m, g_strdup_printf("self_attn.%s", qkv[i]));
        break;
    case MODEL_ROLE_ATTN_Q_B:
        add_unique(m, g_strdup("self_attn.q_b_proj"));
        break;
    case MODEL_ROLE_ATTN_KV_B:
        add_unique(m, g_strdup("self_attn.kv_b_proj"));
        break;
    case MODEL_ROLE_ATTN_O:
        add_unique(m, g_strdup("self_attn.o_proj"));
        break;
    case MODEL_ROLE_INDEXER:
        add_unique(m, g_strdup("self_attn.indexer.wq_b"));
        add_unique(m, g_strdup("self_attn.indexer.wk"));
        break;
    case MODEL_ROLE_INDEXER_WEIGHTS:
        add_unique(m, g_strdup("self_attn.indexer.weights_proj"));
        break;
    case MODEL_ROLE_ROUTER:
        add_unique(m, g_strdup(n->router));
        add_unique(m, g_strdup("mlp.gate"));
        add_unique(m, g_strdup("block_sparse_moe.gate"));
        add_unique(m, g_strdup("mlp.router"));
        break;
    case MODEL_ROLE_DENSE_MLP:
        for (size_t i = 0; i < G_N_ELEMENTS(gud); i++)
            add_unique(m, g_strdup_printf("%s.%s", n->mlp, gud[i]));
        add_unique(m, g_strdup_printf("%s.gate_up_proj", n->mlp));
        break;
    case MODEL_ROLE_SHARED_EXPERT:
        for (size_t i = 0; i < G_N_ELEMENTS(gud); i++) {
            add_unique(m, g_strdup_printf("%s.%s", n->shared, gud[i]));
            add_unique(m, g_strdup_printf("mlp.shared_experts.%s", gud[i]));
            add_unique(m, g_strdup_printf("mlp.shared_expert.%s", gud[i]));
        }
        /* Not Qwen2-MoE's shared_expert_gate: a [1, H] nn.Linear vLLM never quantizes, which
         * ignore lists name ("re:.*shared_expert_gate$"); as a candidate it would make the
         * whole shared expert look ignored. */
        break;
    case MODEL_ROLE_EXPERT: {
        const char *ex[] = {n->experts, "mlp.experts", "block_sparse_moe.experts"};
        for (size_t e = 0; e < G_N_ELEMENTS(ex); e++) {
            for (size_t i = 0; i < G_N_ELEMENTS(gud); i++)
                add_unique(m, g_strdup_printf("%s.0.%s", ex[e], gud[i]));
            for (int w = 1; w <= 3; w++)
                add_unique(m, g_strdup_printf("%s.0.w%d", ex[e], w));
        }
        /* gpt-oss stores all experts of a layer as one module */
        add_unique(m, g_strdup(n->experts));
        add_unique(m, g_strdup("mlp.experts"));
        break;
    }
    case MODEL_ROLE_MTP_PROJ:
        if (mtp)
            add_unique(m, g_strdup("eh_proj"));
        break;
    case MODEL_ROLE_EMBED:
    case MODEL_ROLE_LM_HEAD:
    case MODEL_ROLE_VISION:
    case MODEL_ROLE_COUNT:
        break;
    }
}

/* Candidate checkpoint module names of `role` in `layer` (layer < 0: the global roles).
 * Appends owned strings to `out`. */
static void candidates(const Names *n, int32_t layer, ModelTensorRole role, GPtrArray *out)
{
    if (is_global_role(role)) {
        static const char *const embed[] = {"model.embed_tokens", "model.language_model.embed_tokens",
                                            "language_model.model.embed_tokens"};
        static const char *const head[] = {"lm_head", "language_model.lm_head"};
        static const char *const vision[] = {
            "vision_model",       "vision_tower",       "visual",
            "multi_modal_projector", "model.visual",    "model.vision_tower",
            "model.vision_model", "model.multi_modal_projector"};
        const char *const *v = role == MODEL_ROLE_EMBED ? embed : role == MODEL_ROLE_LM_HEAD ? head : vision;
        size_t k = role == MODEL_ROLE_EMBED ? G_N_ELEMENTS(embed)
                   : role == MODEL_ROLE_LM_HEAD ? G_N_ELEMENTS(head) : G_N_ELEMENTS(vision);
        for (size_t i = 0; i < k; i++)
            add_unique(out, g_strdup(v[i]));
        return;
    }
    bool mtp = layer >= 0 && (uint32_t)layer >= n->num_layers;
    g_autoptr(GPtrArray) mods = g_ptr_array_new_with_free_func(g_free);
    role_modules(n, role, mtp, mods);
    char pre[4][96];
    int np = 0;
    snprintf(pre[np++], sizeof pre[0], "%s%d.", n->layer_prefix, layer);
    if (n->alt_prefixes) {
        snprintf(pre[np++], sizeof pre[0], "model.language_model.layers.%d.", layer);
        snprintf(pre[np++], sizeof pre[0], "language_model.model.layers.%d.", layer);
    }
    if (mtp) /* Qwen3-Next / GLM MTP modules */
        snprintf(pre[np++], sizeof pre[0], "mtp.layers.%u.", (uint32_t)layer - n->num_layers);
    for (int i = 0; i < np; i++)
        for (guint j = 0; j < mods->len; j++)
            add_unique(out, g_strdup_printf("%s%s", pre[i], (char *)g_ptr_array_index(mods, j)));
}

/* ---- formats and the spec table ---- */

static ModelWeightFormat fmt_of(ModelWeightKind kind, ModelQuantScheme scheme)
{
    ModelWeightFormat f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.scheme = (uint8_t)scheme;
    return f;
}

static bool fmt_same(const ModelWeightFormat *a, const ModelWeightFormat *b)
{
    return a->kind == b->kind && a->group_size == b->group_size && a->block_n == b->block_n &&
           a->block_k == b->block_k && a->scale_bytes == b->scale_bytes &&
           a->zero_point == b->zero_point && a->input_scale == b->input_scale &&
           a->g_idx == b->g_idx && a->scheme == b->scheme;
}

static uint8_t native_bytes(ModelWeightKind native)
{
    return native == MODEL_WFMT_FP32 ? 4 : 2;
}

static bool valid_native(ModelWeightKind k)
{
    return k == MODEL_WFMT_BF16 || k == MODEL_WFMT_FP16 || k == MODEL_WFMT_FP32;
}

/* Index of `f` in the spec's format table, adding it; -1 when the table is full. */
static int spec_format(ModelQuantSpec *s, const ModelWeightFormat *f)
{
    for (int i = 0; i < s->n_formats; i++)
        if (fmt_same(&s->formats[i], f))
            return i;
    if (s->n_formats >= MODEL_QUANT_MAX_FORMATS)
        return -1;
    s->formats[s->n_formats] = *f;
    return s->n_formats++;
}

/* Decides the format of (layer, role) from its candidate names; `fmt` arrives as the native
 * format. layer < 0 for the global roles. */
typedef bool (*DecideFn)(void *ctx, P *p, int32_t layer, ModelTensorRole role,
                         const GPtrArray *cands, ModelWeightFormat *fmt);

static bool spec_set(ModelQuantSpec *s, P *p, const ModelWeightFormat *f, uint8_t *slot)
{
    int i = spec_format(s, f);
    if (i < 0) {
        g_set_error(p->error, MODEL_QUANT_ERROR, ERR_FIELD,
                    "%s: the checkpoint uses more than %d distinct weight formats; ranksim "
                    "models at most %d",
                    p->display, MODEL_QUANT_MAX_FORMATS, MODEL_QUANT_MAX_FORMATS);
        return false;
    }
    *slot = (uint8_t)i;
    return true;
}

static bool spec_fill(ModelQuantSpec *s, P *p, const Names *n, ModelWeightKind native,
                      const char *method, DecideFn fn, void *ctx)
{
    model_quant_spec_native(s, native, n->num_layers + n->num_mtp);
    g_strlcpy(s->method, method, sizeof s->method);
    g_strlcpy(s->source, "checkpoint", sizeof s->source);
    g_autoptr(GPtrArray) c = g_ptr_array_new_with_free_func(g_free);
    for (uint32_t l = 0; l < s->n_layers; l++)
        for (int r = 0; r < MODEL_ROLE_COUNT; r++) {
            if (is_global_role((ModelTensorRole)r))
                continue;
            g_ptr_array_set_size(c, 0);
            candidates(n, (int32_t)l, (ModelTensorRole)r, c);
            ModelWeightFormat f = s->formats[0];
            if (!fn(ctx, p, (int32_t)l, (ModelTensorRole)r, c, &f) ||
                !spec_set(s, p, &f, &s->layer_fmt[l][r]))
                return false;
        }
    /* global roles; for per-layer roles the default is the last ordinary layer's format */
    for (int r = 0; r < MODEL_ROLE_COUNT; r++) {
        if (!is_global_role((ModelTensorRole)r) && n->num_layers > 0 && s->n_layers > 0) {
            s->global_fmt[r] = s->layer_fmt[MIN(n->num_layers, s->n_layers) - 1][r];
            continue;
        }
        g_ptr_array_set_size(c, 0);
        candidates(n, is_global_role((ModelTensorRole)r) ? -1 : 0, (ModelTensorRole)r, c);
        ModelWeightFormat f = s->formats[0];
        if (!fn(ctx, p, is_global_role((ModelTensorRole)r) ? -1 : 0, (ModelTensorRole)r, c, &f) ||
            !spec_set(s, p, &f, &s->global_fmt[r]))
            return false;
    }
    return true;
}

/* Whether any pattern text mentions the multimodal layer prefixes. */
static bool mentions_language_model(GPtrArray *entries)
{
    for (guint i = 0; i < entries->len; i++)
        if (strstr(g_ptr_array_index(entries, i), "language_model"))
            return true;
    return false;
}

/* ---- schemes with one quantized format, a role mask and an ignore list ---- */

#define ROLE_BIT(r) (1u << (r))
#define ROLES_DECODER                                                                          \
    (ROLE_BIT(MODEL_ROLE_ATTN_QKV) | ROLE_BIT(MODEL_ROLE_ATTN_Q_B) |                           \
     ROLE_BIT(MODEL_ROLE_ATTN_KV_B) | ROLE_BIT(MODEL_ROLE_ATTN_O) |                            \
     ROLE_BIT(MODEL_ROLE_INDEXER) | ROLE_BIT(MODEL_ROLE_DENSE_MLP) |                           \
     ROLE_BIT(MODEL_ROLE_SHARED_EXPERT) | ROLE_BIT(MODEL_ROLE_EXPERT) |                        \
     ROLE_BIT(MODEL_ROLE_MTP_PROJ))

typedef struct {
    ModelWeightFormat q;
    uint32_t roles; /* ROLE_BITs the scheme quantizes */
    PatList ignore;
} SimpleCtx;

static bool simple_decide(void *ctx, P *p, int32_t layer, ModelTensorRole role,
                          const GPtrArray *cands, ModelWeightFormat *fmt)
{
    (void)p, (void)layer;
    SimpleCtx *x = ctx;
    if (!(x->roles & ROLE_BIT(role)) || cands->len == 0 || patlist_match_any(&x->ignore, cands))
        return true;
    *fmt = x->q;
    return true;
}

/* modules_to_not_convert (and, for fp8, ignored_layers) into an EXPAND_RUNS list */
static bool read_not_convert(P *p, JsonObject *q, const char *base, SimpleCtx *x, Names *n,
                             const char *const *keys)
{
    g_autoptr(GPtrArray) e = g_ptr_array_new();
    for (int i = 0; keys[i]; i++) {
        g_ptr_array_set_size(e, 0);
        if (!opt_strv(p, q, base, keys[i], e) ||
            !patlist_add_all(p, &x->ignore, e, NULL, true, base, keys[i]))
            return false;
        n->alt_prefixes |= mentions_language_model(e);
    }
    return true;
}

static bool run_simple(P *p, SimpleCtx *x, Names *n, ModelWeightKind native, const char *method,
                       ModelQuantSpec *out)
{
    bool ok = spec_fill(out, p, n, native, method, simple_decide, x);
    patlist_clear(&x->ignore);
    return ok;
}

/* fp8 (DeepSeek / Qwen / GLM / MiniMax / Kimi; vllm/.../quantization/fp8.py): e4m3 weights with
 * weight_scale_inv per weight_block_size block, or per tensor without it. The router, the
 * indexer's weights_proj, embeddings and lm_head stay native (vLLM builds them with
 * quant_config=None / as ParallelLMHead; the checkpoints store them in bf16). */
static bool parse_fp8(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                      ModelQuantSpec *out)
{
    SimpleCtx x = {.roles = (ROLES_DECODER | ROLE_BIT(MODEL_ROLE_VISION))};
    patlist_init(&x.ignore, EXPAND_RUNS);
    static const char *const acts[] = {"dynamic", "static", NULL};
    int act = -1;
    if (!opt_choice(p, q, base, "activation_scheme", acts, &act))
        return patlist_clear(&x.ignore), false;
    JsonNode *bs = member(q, "weight_block_size");
    if (bs) {
        JsonArray *a = JSON_NODE_HOLDS_ARRAY(bs) ? json_node_get_array(bs) : NULL;
        bool good = a && json_array_get_length(a) == 2;
        for (guint i = 0; good && i < 2; i++) {
            JsonNode *e = json_array_get_element(a, i);
            good = holds(e, G_TYPE_INT64) && json_node_get_int(e) > 0 && json_node_get_int(e) <= 65536;
        }
        if (!good) {
            patlist_clear(&x.ignore);
            return fail_at(p, base, "weight_block_size",
                           "two positive integers [block_n, block_k] (e.g. [128, 128])", bs);
        }
        x.q = fmt_of(MODEL_WFMT_FP8_BLOCK, MODEL_QSCHEME_FP8);
        x.q.block_n = (uint32_t)json_array_get_int_element(a, 0);
        x.q.block_k = (uint32_t)json_array_get_int_element(a, 1);
        x.q.scale_bytes = 4;
    } else {
        x.q = fmt_of(MODEL_WFMT_FP8_TENSOR, MODEL_QSCHEME_FP8);
        x.q.scale_bytes = 4;
        x.q.input_scale = act == 1;
    }
    static const char *const keys[] = {"modules_to_not_convert", "ignored_layers", NULL};
    if (!read_not_convert(p, q, base, &x, n, keys))
        return patlist_clear(&x.ignore), false;
    return run_simple(p, &x, n, native, "fp8", out);
}

/* mxfp4 (gpt-oss; vllm/.../quantization/mxfp4.py): only the routed experts, as *_blocks +
 * *_scales (e8m0 per 32); every LinearBase layer stays unquantized in vLLM. */
static bool parse_mxfp4(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                        ModelQuantSpec *out)
{
    SimpleCtx x = {.roles = ROLE_BIT(MODEL_ROLE_EXPERT)};
    patlist_init(&x.ignore, EXPAND_RUNS);
    x.q = fmt_of(MODEL_WFMT_MXFP4, MODEL_QSCHEME_MXFP4);
    x.q.group_size = 32;
    x.q.scale_bytes = 1;
    static const char *const keys[] = {"modules_to_not_convert", NULL};
    if (!read_not_convert(p, q, base, &x, n, keys))
        return patlist_clear(&x.ignore), false;
    return run_simple(p, &x, n, native, "mxfp4", out);
}

/* fbgemm_fp8 (vllm/.../quantization/fbgemm_fp8.py): e4m3 + fp32 weight_scale per row. */
static bool parse_fbgemm(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                         ModelQuantSpec *out)
{
    SimpleCtx x = {.roles = ROLES_DECODER | ROLE_BIT(MODEL_ROLE_VISION)};
    patlist_init(&x.ignore, EXPAND_RUNS);
    x.q = fmt_of(MODEL_WFMT_FP8_CHANNEL, MODEL_QSCHEME_FBGEMM);
    x.q.scale_bytes = 4;
    static const char *const keys[] = {"modules_to_not_convert", NULL};
    if (!read_not_convert(p, q, base, &x, n, keys))
        return patlist_clear(&x.ignore), false;
    return run_simple(p, &x, n, native, "fbgemm_fp8", out);
}

/* A group size: -1 (or 0) = one group per row (stored as 0); otherwise positive. */
static bool read_group(P *p, JsonObject *q, const char *base, const char *key, int64_t def,
                       uint32_t *out)
{
    int64_t g = def;
    if (!opt_int(p, q, base, key, &g))
        return false;
    if (g < -1 || g > 1048576)
        return fail_at(p, base, key, "a positive group size, or -1 for one group per row",
                       member(q, key));
    *out = g <= 0 ? 0 : (uint32_t)g;
    return true;
}

/* awq / gptq (vllm/.../quantization/awq.py, gptq.py): int4 in int32 words, fp16 scales and
 * zero points per group_size inputs; GPTQ desc_act adds g_idx. Decoder linears only. */
static bool parse_awq_gptq(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                           bool gptq, ModelQuantSpec *out)
{
    SimpleCtx x = {.roles = ROLES_DECODER};
    patlist_init(&x.ignore, EXPAND_RUNS);
    int64_t bits = 4;
    /* AutoAWQ also spells them w_bit / q_group_size */
    const char *bkey = !gptq && !member(q, "bits") && member(q, "w_bit") ? "w_bit" : "bits";
    if (!opt_int(p, q, base, bkey, &bits))
        return patlist_clear(&x.ignore), false;
    if (gptq ? (bits != 4 && bits != 8) : bits != 4) {
        patlist_clear(&x.ignore);
        return fail_at(p, base, bkey, gptq ? "4 or 8" : "4 (vLLM's AWQ kernels are 4-bit only)",
                       member(q, bkey));
    }
    uint32_t g = 0;
    const char *gkey = member(q, "q_group_size") && !member(q, "group_size") ? "q_group_size" : "group_size";
    if (!read_group(p, q, base, gkey, 128, &g))
        return patlist_clear(&x.ignore), false;
    bool zp = !gptq, sym = true, desc_act = false, lm_head = false;
    if (!opt_bool(p, q, base, "zero_point", &zp) || !opt_bool(p, q, base, "sym", &sym) ||
        !opt_bool(p, q, base, "desc_act", &desc_act) || !opt_bool(p, q, base, "lm_head", &lm_head))
        return patlist_clear(&x.ignore), false;
    if (bits == 8) {
        /* APPROXIMATION: no 8-bit group format in quant.h; int8 with one fp16 scale and zero
         * point per row (group scales undercounted by ~2/group_size B per value) */
        x.q = fmt_of(MODEL_WFMT_INT8_CHANNEL, MODEL_QSCHEME_GPTQ);
        x.q.zero_point = true;
    } else {
        x.q = fmt_of(MODEL_WFMT_INT4_GROUP, gptq ? MODEL_QSCHEME_GPTQ : MODEL_QSCHEME_AWQ);
        x.q.group_size = g;
        x.q.zero_point = gptq ? !sym : zp;
        x.q.g_idx = gptq && desc_act;
    }
    x.q.scale_bytes = 2;
    if (lm_head)
        x.roles |= ROLE_BIT(MODEL_ROLE_LM_HEAD);
    static const char *const keys[] = {"modules_to_not_convert", NULL};
    if (!read_not_convert(p, q, base, &x, n, keys))
        return patlist_clear(&x.ignore), false;
    /* GPTQModel's `dynamic`: "-:<regex>" keys exclude modules (re.match) */
    JsonObject *dyn = NULL;
    if (!opt_obj(p, q, base, "dynamic", &dyn))
        return patlist_clear(&x.ignore), false;
    if (dyn) {
        g_autoptr(GList) keys_l = json_object_get_members(dyn);
        g_autofree char *dbase = kpath(base, "dynamic");
        for (GList *k = keys_l; k; k = k->next)
            if (g_str_has_prefix(k->data, "-:") &&
                !patlist_add(p, &x.ignore, k->data, "-:", false, dbase, k->data))
                return patlist_clear(&x.ignore), false;
    }
    return run_simple(p, &x, n, native, gptq ? "gptq" : "awq", out);
}

/* ---- compressed-tensors (vllm/.../quantization/compressed_tensors/) ---- */

typedef struct {
    ModelWeightFormat fmt;
    PatList names;   /* exact / re: targets */
    bool cls_linear; /* "Linear" class target */
    bool cls_moe;    /* "FusedMoE" */
    bool cls_embed;  /* "Embedding" */
} CtGroup;

typedef struct {
    GArray *groups; /* CtGroup, in config order */
    PatList ignore;
} CtCtx;

static const char *const CT_FORMATS[] = {
    "dense",          "naive-quantized",      "pack-quantized", "int-quantized",
    "float-quantized", "nvfp4-pack-quantized", "mxfp4-pack-quantized", "marlin-24",
    "sparse-bitmask", "sparse-24-bitmask",    "mixed-precision", NULL};

/* One `weights` (+ `input_activations`) description into a format. */
static bool ct_weights(P *p, JsonObject *w, JsonObject *ia, const char *wbase, const char *abase,
                       ModelWeightKind native, ModelWeightFormat *out)
{
    static const char *const types[] = {"int", "float", NULL};
    static const char *const strategies[] = {"tensor", "channel", "group", "block", "tensor_group", NULL};
    int64_t bits = -1;
    int type = -1, strat = -1;
    bool sym = true;
    if (!opt_int(p, w, wbase, "num_bits", &bits) || !opt_choice(p, w, wbase, "type", types, &type) ||
        !opt_choice(p, w, wbase, "strategy", strategies, &strat) ||
        !opt_bool(p, w, wbase, "symmetric", &sym))
        return false;
    if (!member(w, "num_bits"))
        return fail_missing(p, wbase, "num_bits", "4 or 8");
    if (bits != 4 && bits != 8)
        return fail_at(p, wbase, "num_bits", "4 or 8", member(w, "num_bits"));
    if (type < 0)
        type = 0; /* compressed-tensors' default QuantizationType is int */
    if (strat < 0)
        strat = 0; /* default QuantizationStrategy: tensor */
    int64_t gs = 0;
    if (!opt_int(p, w, wbase, "group_size", &gs))
        return false;
    if (gs < 0 || gs > 1048576)
        return fail_at(p, wbase, "group_size", "a positive integer or null", member(w, "group_size"));
    bool grouped = strat == 2 || strat == 4;
    if (grouped && gs == 0)
        return fail_missing(p, wbase, "group_size", "a positive integer for strategy group");
    bool static_act = false;
    if (ia) {
        bool dyn = true;
        /* "local" (NVFP4's locally computed global scale) is dynamic too */
        if (!holds(member(ia, "dynamic"), G_TYPE_STRING) && !opt_bool(p, ia, abase, "dynamic", &dyn))
            return false;
        static_act = !dyn;
    }
    ModelWeightFormat f = fmt_of(MODEL_WFMT_BF16, MODEL_QSCHEME_CT);
    f.scale_bytes = native_bytes(native); /* compressed-tensors keeps scales in the weight dtype */
    f.zero_point = !sym;
    if (bits == 8 && type == 1) {
        if (strat == 0)
            f.kind = MODEL_WFMT_FP8_TENSOR;
        else if (strat == 1)
            f.kind = MODEL_WFMT_FP8_CHANNEL;
        else if (strat == 3) {
            JsonNode *b = member(w, "block_structure");
            JsonArray *a = b && JSON_NODE_HOLDS_ARRAY(b) ? json_node_get_array(b) : NULL;
            bool good = a && json_array_get_length(a) == 2;
            for (guint i = 0; good && i < 2; i++) {
                JsonNode *e = json_array_get_element(a, i);
                good = holds(e, G_TYPE_INT64) && json_node_get_int(e) > 0;
            }
            if (!good)
                return b ? fail_at(p, wbase, "block_structure", "[block_n, block_k], two positive integers", b)
                         : fail_missing(p, wbase, "block_structure", "[block_n, block_k] for strategy block");
            f.kind = MODEL_WFMT_FP8_BLOCK;
            f.block_n = (uint32_t)json_array_get_int_element(a, 0);
            f.block_k = (uint32_t)json_array_get_int_element(a, 1);
            f.scale_bytes = 4;
        } else {
            return fail_at(p, wbase, "strategy", "tensor, channel or block for 8-bit float weights",
                           member(w, "strategy"));
        }
        f.input_scale = static_act;
        f.zero_point = false;
    } else if (bits == 8) {
        if (strat != 0 && strat != 1)
            return fail_at(p, wbase, "strategy", "channel or tensor for 8-bit int weights",
                           member(w, "strategy"));
        /* APPROXIMATION for strategy tensor: counted as one scale per row */
        f.kind = MODEL_WFMT_INT8_CHANNEL;
        f.input_scale = static_act;
    } else if (type == 0) {
        if (strat != 1 && strat != 2)
            return fail_at(p, wbase, "strategy", "group or channel for 4-bit int weights",
                           member(w, "strategy"));
        f.kind = MODEL_WFMT_INT4_GROUP;
        f.group_size = strat == 2 ? (uint32_t)gs : 0;
    } else {
        if (!grouped || (gs != 16 && gs != 32))
            return fail_at(p, wbase, grouped ? "group_size" : "strategy",
                           grouped ? "16 (NVFP4) or 32 (MXFP4) for 4-bit float weights"
                                   : "tensor_group or group for 4-bit float weights",
                           member(w, grouped ? "group_size" : "strategy"));
        f.kind = gs == 16 ? MODEL_WFMT_NVFP4 : MODEL_WFMT_MXFP4;
        f.group_size = (uint32_t)gs;
        f.scale_bytes = 1;
        f.zero_point = false;
        f.input_scale = gs == 16;
    }
    *out = f;
    return true;
}

static void ct_clear(CtCtx *x)
{
    if (x->groups) {
        for (guint i = 0; i < x->groups->len; i++)
            patlist_clear(&g_array_index(x->groups, CtGroup, i).names);
        g_array_unref(x->groups);
    }
    patlist_clear(&x->ignore);
}

static bool ct_decide(void *ctx, P *p, int32_t layer, ModelTensorRole role, const GPtrArray *cands,
                      ModelWeightFormat *fmt)
{
    (void)p, (void)layer;
    CtCtx *x = ctx;
    if (cands->len == 0 || patlist_match_any(&x->ignore, cands))
        return true;
    /* names first (any group), then class targets — find_matched_target's order */
    for (guint i = 0; i < cands->len; i++)
        for (guint g = 0; g < x->groups->len; g++) {
            CtGroup *grp = &g_array_index(x->groups, CtGroup, g);
            if (!patlist_empty(&grp->names) && patlist_match(&grp->names, g_ptr_array_index(cands, i))) {
                *fmt = grp->fmt;
                return true;
            }
        }
    /* Routers are reached only by name: DeepSeek-family routers are MoEGate modules, not
     * nn.Linear, and vLLM builds every router with quant_config=None. */
    if (role == MODEL_ROLE_ROUTER)
        return true;
    for (guint g = 0; g < x->groups->len; g++) {
        CtGroup *grp = &g_array_index(x->groups, CtGroup, g);
        bool hit = role == MODEL_ROLE_EMBED ? grp->cls_embed
                                            : grp->cls_linear || (role == MODEL_ROLE_EXPERT && grp->cls_moe);
        if (hit) {
            *fmt = grp->fmt;
            return true;
        }
    }
    return true;
}

static bool parse_ct(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                     ModelQuantSpec *out)
{
    CtCtx x = {.groups = g_array_new(FALSE, TRUE, sizeof(CtGroup))};
    patlist_init(&x.ignore, EXPAND_NONE);
    int top = -1;
    g_autoptr(GPtrArray) e = g_ptr_array_new();
    JsonObject *groups = NULL, *kv = NULL;
    bool ok = opt_choice(p, q, base, "format", CT_FORMATS, &top) &&
              opt_strv(p, q, base, "ignore", e) &&
              patlist_add_all(p, &x.ignore, e, "re:", false, base, "ignore") &&
              opt_obj(p, q, base, "config_groups", &groups) &&
              opt_obj(p, q, base, "kv_cache_scheme", &kv);
    n->alt_prefixes |= ok && mentions_language_model(e);
    if (ok && !groups)
        ok = fail_missing(p, base, "config_groups", "an object of quantization groups");
    g_autofree char *gbase = kpath(base, "config_groups");
    g_autoptr(GList) names = groups ? json_object_get_members(groups) : NULL;
    for (GList *k = names; ok && k; k = k->next) {
        const char *gname = k->data;
        JsonNode *gn = json_object_get_member(groups, gname);
        if (!JSON_NODE_HOLDS_OBJECT(gn)) {
            ok = fail_at(p, gbase, gname, "an object with targets and weights", gn);
            break;
        }
        JsonObject *go = json_node_get_object(gn);
        g_autofree char *b = kpath(gbase, gname);
        g_autofree char *wb = kpath(b, "weights");
        g_autofree char *ab = kpath(b, "input_activations");
        CtGroup grp;
        memset(&grp, 0, sizeof grp);
        patlist_init(&grp.names, EXPAND_NONE);
        g_array_append_val(x.groups, grp);
        CtGroup *g = &g_array_index(x.groups, CtGroup, x.groups->len - 1);
        JsonObject *w = NULL, *ia = NULL;
        int gf = -1;
        g_autoptr(GPtrArray) t = g_ptr_array_new();
        ok = opt_choice(p, go, b, "format", CT_FORMATS, &gf) && opt_obj(p, go, b, "weights", &w) &&
             opt_obj(p, go, b, "input_activations", &ia) && opt_strv(p, go, b, "targets", t);
        if (!ok)
            break;
        if (!member(go, "targets")) {
            ok = fail_missing(p, b, "targets", "a list of module names, \"re:\" regexes or \"Linear\"");
            break;
        }
        if (!w) {
            ok = fail_missing(p, b, "weights", "an object with num_bits, type, strategy");
            break;
        }
        n->alt_prefixes |= mentions_language_model(t);
        for (guint i = 0; ok && i < t->len; i++) {
            const char *tg = g_ptr_array_index(t, i);
            if (g_str_has_prefix(tg, "re:") || strchr(tg, '.'))
                ok = patlist_add(p, &g->names, tg, "re:", false, b, "targets");
            else if (g_ascii_strcasecmp(tg, "FusedMoE") == 0)
                g->cls_moe = true;
            else if (g_ascii_strcasecmp(tg, "Embedding") == 0)
                g->cls_embed = true;
            else if (strstr(tg, "Linear"))
                g->cls_linear = true;
            else /* a bare module name such as "lm_head" */
                ok = patlist_add(p, &g->names, tg, "re:", false, b, "targets");
        }
        if (ok)
            ok = ct_weights(p, w, ia, wb, ab, native, &g->fmt);
        if (ok && gf == 0 /* dense */)
            g->fmt = fmt_of(native, MODEL_QSCHEME_NONE);
    }
    if (ok)
        ok = spec_fill(out, p, n, native, "compressed-tensors", ct_decide, &x);
    if (ok && kv) {
        int64_t kb = 0;
        const char *kt = NULL;
        g_autofree char *kbase = kpath(base, "kv_cache_scheme");
        ok = opt_int(p, kv, kbase, "num_bits", &kb) && opt_str(p, kv, kbase, "type", &kt);
        out->kv_cache_fp8 = ok && kb == 8 && (!kt || strcmp(kt, "float") == 0);
    }
    ct_clear(&x);
    return ok;
}

/* ---- ModelOpt (vllm/.../quantization/modelopt.py; hf_quant_config.json) ---- */

typedef struct {
    ModelWeightFormat q; /* FP8 / NVFP4 algo; unused for MIXED_PRECISION */
    bool mixed;
    GHashTable *layers; /* MIXED_PRECISION: module name -> ModelWeightFormat* (owned) */
    PatList exclude;
} MoCtx;

static const char *const MO_ALGOS[] = {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4",
                                       "MIXED_PRECISION", NULL};

static bool mo_algo_format(P *p, JsonObject *o, const char *base, ModelWeightFormat *f, bool *mixed,
                           bool allow_mixed)
{
    int a = -1;
    if (!opt_choice(p, o, base, "quant_algo", MO_ALGOS, &a))
        return false;
    if (a < 0 || (a == 4 && !allow_mixed)) {
        if (a < 0 && !member(o, "quant_algo"))
            return fail_missing(p, base, "quant_algo", "one of FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4");
        return fail_at(p, base, "quant_algo", "one of FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4",
                       member(o, "quant_algo"));
    }
    *mixed = a == 4;
    uint32_t gs = 16;
    int64_t g = 16;
    if (!opt_int(p, o, base, "group_size", &g))
        return false;
    if (a == 3 && g != 16)
        return fail_at(p, base, "group_size", "16 (NVFP4)", member(o, "group_size"));
    gs = (uint32_t)g;
    switch (a) {
    case 0:
        *f = fmt_of(MODEL_WFMT_FP8_TENSOR, MODEL_QSCHEME_MODELOPT);
        f->input_scale = true;
        f->scale_bytes = 4;
        break;
    case 1:
        *f = fmt_of(MODEL_WFMT_FP8_CHANNEL, MODEL_QSCHEME_MODELOPT);
        f->scale_bytes = 4;
        break;
    case 2:
        *f = fmt_of(MODEL_WFMT_FP8_BLOCK, MODEL_QSCHEME_MODELOPT);
        f->block_n = f->block_k = 128;
        f->scale_bytes = 4;
        break;
    case 3:
        *f = fmt_of(MODEL_WFMT_NVFP4, MODEL_QSCHEME_MODELOPT);
        f->group_size = gs;
        f->scale_bytes = 1;
        f->input_scale = true;
        break;
    default:
        break;
    }
    return true;
}

static bool mo_lookup(const MoCtx *x, const char *name, ModelWeightFormat *fmt)
{
    char buf[512];
    g_strlcpy(buf, name, sizeof buf);
    for (;;) {
        const ModelWeightFormat *f = g_hash_table_lookup(x->layers, buf);
        if (f) {
            *fmt = *f;
            return true;
        }
        char *dot = strrchr(buf, '.');
        if (!dot)
            return false;
        *dot = '\0';
    }
}

static bool mo_decide(void *ctx, P *p, int32_t layer, ModelTensorRole role, const GPtrArray *cands,
                      ModelWeightFormat *fmt)
{
    (void)p, (void)layer;
    MoCtx *x = ctx;
    /* ModelOpt's default configs never quantize embeddings or routers ("*router*",
     * "*mlp.gate.*"), and vLLM's ParallelLMHead is not a LinearBase */
    if (role == MODEL_ROLE_EMBED || role == MODEL_ROLE_ROUTER || cands->len == 0 ||
        patlist_match_any(&x->exclude, cands))
        return true;
    if (x->mixed) {
        for (guint i = 0; i < cands->len; i++)
            if (mo_lookup(x, g_ptr_array_index(cands, i), fmt))
                return true;
        return true;
    }
    if (role != MODEL_ROLE_LM_HEAD)
        *fmt = x->q;
    return true;
}

static bool parse_modelopt(P *p, JsonObject *q, const char *base0, Names *n, ModelWeightKind native,
                           ModelQuantSpec *out)
{
    JsonObject *nested = NULL;
    if (!opt_obj(p, q, base0, "quantization", &nested))
        return false;
    g_autofree char *base = nested ? kpath(base0, "quantization") : g_strdup(base0);
    JsonObject *o = nested ? nested : q;
    MoCtx x;
    memset(&x, 0, sizeof x);
    patlist_init(&x.exclude, EXPAND_ANCESTORS);
    x.layers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GPtrArray) e = g_ptr_array_new();
    JsonObject *ql = NULL;
    const char *kvalgo = NULL;
    bool ok = mo_algo_format(p, o, base, &x.q, &x.mixed, true) &&
              opt_strv(p, o, base, "exclude_modules", e) && opt_strv(p, o, base, "ignore", e) &&
              patlist_add_all(p, &x.exclude, e, NULL, true, base,
                              member(o, "exclude_modules") ? "exclude_modules" : "ignore") &&
              opt_obj(p, o, base, "quantized_layers", &ql) &&
              opt_str(p, o, base, "kv_cache_quant_algo", &kvalgo);
    n->alt_prefixes |= ok && mentions_language_model(e);
    if (ok && x.mixed && !ql)
        ok = fail_missing(p, base, "quantized_layers", "an object of module name -> {quant_algo}");
    if (ok && ql) {
        g_autofree char *lbase = kpath(base, "quantized_layers");
        g_autoptr(GList) keys = json_object_get_members(ql);
        for (GList *k = keys; ok && k; k = k->next) {
            JsonNode *ln = json_object_get_member(ql, k->data);
            if (!JSON_NODE_HOLDS_OBJECT(ln)) {
                ok = fail_at(p, lbase, k->data, "an object with quant_algo", ln);
                break;
            }
            g_autofree char *kb = kpath(lbase, k->data);
            ModelWeightFormat f;
            bool m2 = false;
            ok = mo_algo_format(p, json_node_get_object(ln), kb, &f, &m2, false);
            if (ok) {
                n->alt_prefixes |= strstr(k->data, "language_model") != NULL;
                g_hash_table_insert(x.layers, g_strdup(k->data), g_memdup2(&f, sizeof f));
            }
        }
    }
    if (ok)
        ok = spec_fill(out, p, n, native, "modelopt", mo_decide, &x);
    if (ok)
        out->kv_cache_fp8 = kvalgo && g_ascii_strcasecmp(kvalgo, "FP8") == 0;
    patlist_clear(&x.exclude);
    g_hash_table_unref(x.layers);
    return ok;
}

/* ---- Quark (vllm/.../quantization/quark/) ---- */

typedef struct {
    char *pattern; /* fnmatch over the module name */
    ModelWeightFormat fmt;
} QkLayer;

typedef struct {
    ModelWeightFormat global;
    bool has_global;
    GArray *layers; /* QkLayer */
    PatList exclude;
} QkCtx;

static bool quark_weight(P *p, JsonObject *cfg, const char *base, ModelWeightFormat *out)
{
    JsonNode *wn = member(cfg, "weight");
    if (!wn)
        return fail_missing(p, base, "weight", "an object with dtype and qscheme");
    if (!JSON_NODE_HOLDS_OBJECT(wn))
        return fail_at(p, base, "weight", "an object with dtype and qscheme", wn);
    JsonObject *w = json_node_get_object(wn);
    g_autofree char *wb = kpath(base, "weight");
    static const char *const dtypes[] = {"fp4", "fp8_e4m3", "int8", "int4", "uint4", NULL};
    static const char *const schemes[] = {"per_tensor", "per_channel", "per_group", NULL};
    int dt = -1, qs = -1;
    int64_t gs = 32;
    bool sym = true;
    if (!opt_choice(p, w, wb, "dtype", dtypes, &dt) || !opt_choice(p, w, wb, "qscheme", schemes, &qs) ||
        !opt_int(p, w, wb, "group_size", &gs) || !opt_bool(p, w, wb, "symmetric", &sym))
        return false;
    if (dt < 0)
        return fail_missing(p, wb, "dtype", "one of fp4, fp8_e4m3, int8, int4, uint4");
    if (gs <= 0 && qs == 2)
        return fail_at(p, wb, "group_size", "a positive integer", member(w, "group_size"));
    bool static_in = false;
    JsonObject *in = NULL;
    if (!opt_obj(p, cfg, base, "input_tensors", &in))
        return false;
    if (in) {
        bool dyn = true;
        g_autofree char *ib = kpath(base, "input_tensors");
        if (!opt_bool(p, in, ib, "is_dynamic", &dyn))
            return false;
        static_in = !dyn;
    }
    ModelWeightFormat f = fmt_of(MODEL_WFMT_BF16, MODEL_QSCHEME_QUARK);
    f.scale_bytes = 4;
    switch (dt) {
    case 0: /* OCP MX fp4: e8m0 scale per 32 (or NVFP4-like per 16) */
        if (gs != 32 && gs != 16)
            return fail_at(p, wb, "group_size", "32 (MXFP4) or 16", member(w, "group_size"));
        f.kind = gs == 32 ? MODEL_WFMT_MXFP4 : MODEL_WFMT_NVFP4;
        f.group_size = (uint32_t)gs;
        f.scale_bytes = 1;
        break;
    case 1:
        f.kind = qs == 1 ? MODEL_WFMT_FP8_CHANNEL : MODEL_WFMT_FP8_TENSOR;
        f.input_scale = static_in;
        break;
    case 2:
        f.kind = MODEL_WFMT_INT8_CHANNEL; /* per_tensor counted per row (approximation) */
        f.zero_point = !sym;
        f.input_scale = static_in;
        break;
    default:
        f.kind = MODEL_WFMT_INT4_GROUP;
        f.group_size = qs == 2 ? (uint32_t)gs : 0;
        f.zero_point = dt == 4 || !sym;
        break;
    }
    *out = f;
    return true;
}

static bool qk_decide(void *ctx, P *p, int32_t layer, ModelTensorRole role, const GPtrArray *cands,
                      ModelWeightFormat *fmt)
{
    (void)p, (void)layer;
    QkCtx *x = ctx;
    if (role == MODEL_ROLE_EMBED || role == MODEL_ROLE_ROUTER || cands->len == 0 ||
        patlist_match_any(&x->exclude, cands))
        return true;
    for (guint i = 0; i < x->layers->len; i++) {
        QkLayer *l = &g_array_index(x->layers, QkLayer, i);
        for (guint c = 0; c < cands->len; c++)
            if (glob_match(l->pattern, g_ptr_array_index(cands, c))) {
                *fmt = l->fmt;
                return true;
            }
    }
    if (x->has_global)
        *fmt = x->global;
    return true;
}

static bool parse_quark(P *p, JsonObject *q, const char *base, Names *n, ModelWeightKind native,
                        ModelQuantSpec *out)
{
    QkCtx x;
    memset(&x, 0, sizeof x);
    x.layers = g_array_new(FALSE, TRUE, sizeof(QkLayer));
    patlist_init(&x.exclude, EXPAND_NONE);
    JsonObject *g = NULL, *lq = NULL, *exp = NULL;
    g_autoptr(GPtrArray) e = g_ptr_array_new();
    bool ok = opt_obj(p, q, base, "global_quant_config", &g) &&
              opt_obj(p, q, base, "layer_quant_config", &lq) && opt_strv(p, q, base, "exclude", e) &&
              patlist_add_all(p, &x.exclude, e, "re:", true, base, "exclude") &&
              opt_obj(p, q, base, "export", &exp);
    n->alt_prefixes |= ok && mentions_language_model(e);
    if (ok && !g)
        ok = fail_missing(p, base, "global_quant_config", "an object with weight");
    if (ok) {
        g_autofree char *gb = kpath(base, "global_quant_config");
        ok = quark_weight(p, g, gb, &x.global);
        x.has_global = true;
    }
    if (ok && lq) {
        g_autofree char *lb = kpath(base, "layer_quant_config");
        g_autoptr(GList) keys = json_object_get_members(lq);
        for (GList *k = keys; ok && k; k = k->next) {
            JsonNode *ln = json_object_get_member(lq, k->data);
            if (!JSON_NODE_HOLDS_OBJECT(ln)) {
                ok = fail_at(p, lb, k->data, "an object with weight", ln);
                break;
            }
            g_autofree char *kb = kpath(lb, k->data);
            QkLayer l = {.pattern = g_strdup(k->data)};
            g_array_append_val(x.layers, l);
            ok = quark_weight(p, json_node_get_object(ln), kb,
                              &g_array_index(x.layers, QkLayer, x.layers->len - 1).fmt);
            n->alt_prefixes |= strstr(k->data, "language_model") != NULL;
        }
    }
    if (ok)
        ok = spec_fill(out, p, n, native, "quark", qk_decide, &x);
    if (ok && exp) {
        JsonNode *kvg = member(exp, "kv_cache_group");
        out->kv_cache_fp8 = kvg && JSON_NODE_HOLDS_ARRAY(kvg) && json_array_get_length(json_node_get_array(kvg)) > 0;
    }
    for (guint i = 0; i < x.layers->len; i++)
        g_free(g_array_index(x.layers, QkLayer, i).pattern);
    g_array_unref(x.layers);
    patlist_clear(&x.exclude);
    return ok;
}

/* ---- entry point ---- */

bool model_quant_from_config(JsonObject *qcfg, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error)
{
    g_return_val_if_fail(out != NULL, false);
    g_return_val_if_fail(valid_native(native), false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    Names n;
    names_init(&n, names);
    if (!qcfg) {
        model_quant_spec_native(out, native, n.num_layers + n.num_mtp);
        return true;
    }
    P p = {.display = display ? display : "<config>", .error = error};
    /* hf_quant_config.json is read as it stands; config.json's object is quantization_config */
    const char *base = g_str_has_suffix(p.display, "hf_quant_config.json") ? "" : "quantization_config";
    const char *method = NULL;
    if (!opt_str(&p, qcfg, base, "quant_method", &method))
        return false;
    if (!method) {
        /* ModelOpt's hf_quant_config.json has no quant_method: {"producer", "quantization"} */
        if (member(qcfg, "quantization") || member(qcfg, "quant_algo"))
            method = "modelopt";
        else {
            g_autofree char *path = kpath(base, "quant_method");
            g_set_error(error, MODEL_QUANT_ERROR, ERR_METHOD,
                        "%s: key '%s': missing; valid: %s", p.display, path, model_quant_methods());
            return false;
        }
    }
    g_autofree char *m = g_ascii_strdown(method, -1);
    bool ok;
    if (strcmp(m, "fp8") == 0)
        ok = parse_fp8(&p, qcfg, base, &n, native, out);
    else if (strcmp(m, "compressed-tensors") == 0 || strcmp(m, "compressed_tensors") == 0)
        ok = parse_ct(&p, qcfg, base, &n, native, out);
    else if (strcmp(m, "modelopt") == 0 || strcmp(m, "modelopt_fp4") == 0 ||
             strcmp(m, "modelopt_fp8") == 0 || strcmp(m, "modelopt_mixed") == 0)
        ok = parse_modelopt(&p, qcfg, base, &n, native, out);
    else if (strcmp(m, "mxfp4") == 0)
        ok = parse_mxfp4(&p, qcfg, base, &n, native, out);
    else if (strcmp(m, "quark") == 0)
        ok = parse_quark(&p, qcfg, base, &n, native, out);
    else if (strcmp(m, "awq") == 0 || strcmp(m, "gptq") == 0)
        ok = parse_awq_gptq(&p, qcfg, base, &n, native, m[0] == 'g', out);
    else if (strcmp(m, "fbgemm_fp8") == 0)
        ok = parse_fbgemm(&p, qcfg, base, &n, native, out);
    else {
        g_autofree char *path = kpath(base, "quant_method");
        if (strcmp(m, "bitsandbytes") == 0)
            g_set_error(error, MODEL_QUANT_ERROR, ERR_METHOD,
                        "%s: key '%s': quantization method 'bitsandbytes' is not modelled "
                        "(NF4 / LLM.int8 layouts); valid: %s",
                        p.display, path, model_quant_methods());
        else if (strcmp(m, "ascend") == 0)
            g_set_error(error, MODEL_QUANT_ERROR, ERR_METHOD,
                        "%s: key '%s': quantization method 'ascend' is described by "
                        "quant_model_description.json, not config.json; valid here: %s",
                        p.display, path, model_quant_methods());
        else
            g_set_error(error, MODEL_QUANT_ERROR, ERR_METHOD,
                        "%s: key '%s': unknown quantization method '%s'; valid: %s", p.display,
                        path, method, model_quant_methods());
        return false;
    }
    return ok;
}

/* ---- vLLM-Ascend quant_model_description.json ---- */

static const char *const ASCEND_TYPES[] = {"W8A8", "W8A8_DYNAMIC", "W4A8", "W4A8_DYNAMIC", NULL};

typedef struct {
    JsonObject *desc;
    uint32_t w4_group; /* inputs per W4A8 scale group */
} AscCtx;

static bool asc_decide(void *ctx, P *p, int32_t layer, ModelTensorRole role, const GPtrArray *cands,
                       ModelWeightFormat *fmt)
{
    (void)layer, (void)role;
    AscCtx *x = ctx;
    for (guint i = 0; i < cands->len; i++) {
        g_autofree char *key = g_strdup_printf("%s.weight", (char *)g_ptr_array_index(cands, i));
        JsonNode *v = member(x->desc, key);
        if (!v)
            continue;
        const char *t = holds(v, G_TYPE_STRING) ? json_node_get_string(v) : NULL;
        if (t && strcmp(t, "FLOAT") == 0)
            return true;
        int k = -1;
        for (int j = 0; t && ASCEND_TYPES[j]; j++)
            if (strcmp(t, ASCEND_TYPES[j]) == 0)
                k = j;
        if (k < 0)
            return fail_at(p, NULL, key, "one of FLOAT, W8A8, W8A8_DYNAMIC, W4A8, W4A8_DYNAMIC", v);
        if (k <= 1) { /* int8 per output channel, fp32 weight_scale + weight_offset */
            *fmt = fmt_of(MODEL_WFMT_INT8_CHANNEL, MODEL_QSCHEME_ASCEND);
            fmt->zero_point = true;
        } else {
            /* ASSUMPTION (doc/memory.md): fp32 scale per group of 256 inputs + per-channel
             * offset, unless the description names its group_size */
            *fmt = fmt_of(MODEL_WFMT_INT4_GROUP, MODEL_QSCHEME_ASCEND);
            fmt->group_size = x->w4_group;
            fmt->zero_point = true;
        }
        fmt->scale_bytes = 4;
        return true;
    }
    return true; /* not described: float */
}

bool model_quant_from_ascend(JsonObject *desc, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error)
{
    g_return_val_if_fail(desc != NULL && out != NULL, false);
    g_return_val_if_fail(valid_native(native), false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    P p = {.display = display ? display : "quant_model_description.json", .error = error};
    Names n;
    names_init(&n, names);
    n.alt_prefixes = true;
    const char *type = NULL;
    if (!opt_str(&p, desc, NULL, "model_quant_type", &type))
        return false;
    if (type) {
        bool known = false;
        for (int j = 0; ASCEND_TYPES[j]; j++)
            known |= strcmp(type, ASCEND_TYPES[j]) == 0;
        if (!known) {
            g_set_error(error, MODEL_QUANT_ERROR, ERR_METHOD,
                        "%s: key 'model_quant_type': unknown quantization type '%s'; valid: "
                        "W8A8, W8A8_DYNAMIC, W4A8, W4A8_DYNAMIC",
                        p.display, type);
            return false;
        }
    }
    AscCtx x = {.desc = desc, .w4_group = 256};
    if (!read_group(&p, desc, NULL, "group_size", 256, &x.w4_group))
        return false;
    return spec_fill(out, &p, &n, native, "ascend", asc_decide, &x);
}

/* ---- the engine.quantization override names ---- */

bool model_quant_spec_from_name(const char *name, bool moe, ModelWeightKind native,
                                uint32_t n_layers, ModelQuantSpec *out)
{
    g_return_val_if_fail(name != NULL && out != NULL, false);
    g_return_val_if_fail(valid_native(native), false);
    model_quant_spec_native(out, native, n_layers);
    ModelWeightFormat nat = out->formats[0];
    ModelWeightFormat role_fmt[MODEL_ROLE_COUNT];
    for (int r = 0; r < MODEL_ROLE_COUNT; r++)
        role_fmt[r] = nat;
    static const ModelTensorRole attn[] = {MODEL_ROLE_ATTN_QKV, MODEL_ROLE_ATTN_Q_B,
                                           MODEL_ROLE_ATTN_KV_B, MODEL_ROLE_ATTN_O,
                                           MODEL_ROLE_MTP_PROJ};
    static const ModelTensorRole mlp[] = {MODEL_ROLE_DENSE_MLP, MODEL_ROLE_SHARED_EXPERT,
                                          MODEL_ROLE_EXPERT};
#define SET_ATTN(f)                                                                            \
    for (size_t i = 0; i < G_N_ELEMENTS(attn); i++)                                            \
        role_fmt[attn[i]] = (f);
#define SET_MLP(f)                                                                             \
    for (size_t i = 0; i < G_N_ELEMENTS(mlp); i++)                                             \
        role_fmt[mlp[i]] = (f);
    ModelWeightFormat f;
    g_autofree char *m = g_ascii_strdown(name, -1);
    if (strcmp(m, "bf16") == 0) {
        /* unquantized: the native dtype everywhere */
    } else if (strcmp(m, "fp8") == 0) {
        f = fmt_of(MODEL_WFMT_FP8_BLOCK, MODEL_QSCHEME_FP8);
        f.block_n = f.block_k = 128;
        f.scale_bytes = 4;
        SET_ATTN(f);
        SET_MLP(f);
        role_fmt[MODEL_ROLE_INDEXER] = f;
    } else if (strcmp(m, "w8a8") == 0 || strcmp(m, "w4a8") == 0) {
        f = fmt_of(MODEL_WFMT_INT8_CHANNEL, MODEL_QSCHEME_ASCEND);
        f.zero_point = true;
        f.scale_bytes = 4;
        SET_ATTN(f);
        SET_MLP(f);
        if (m[1] == '4') {
            f = fmt_of(MODEL_WFMT_INT4_GROUP, MODEL_QSCHEME_ASCEND);
            f.group_size = 256;
            f.zero_point = true;
            f.scale_bytes = 4;
            role_fmt[MODEL_ROLE_EXPERT] = f;
        }
    } else if (strcmp(m, "nvfp4") == 0 || strcmp(m, "modelopt_fp4") == 0) {
        f = fmt_of(MODEL_WFMT_NVFP4, MODEL_QSCHEME_MODELOPT);
        f.group_size = 16;
        f.scale_bytes = 1;
        f.input_scale = true;
        if (moe) {
            role_fmt[MODEL_ROLE_EXPERT] = f;
            f = fmt_of(MODEL_WFMT_FP8_TENSOR, MODEL_QSCHEME_MODELOPT);
            f.scale_bytes = 4;
            f.input_scale = true;
            role_fmt[MODEL_ROLE_DENSE_MLP] = f;
        } else {
            SET_ATTN(f);
            role_fmt[MODEL_ROLE_DENSE_MLP] = f;
        }
    } else if (strcmp(m, "mxfp4") == 0) {
        /* MoE: gpt-oss layout (experts only); dense: Quark MXFP4 on every decoder linear */
        f = fmt_of(MODEL_WFMT_MXFP4, moe ? MODEL_QSCHEME_MXFP4 : MODEL_QSCHEME_QUARK);
        f.group_size = 32;
        f.scale_bytes = 1;
        if (moe) {
            role_fmt[MODEL_ROLE_EXPERT] = f;
        } else {
            SET_ATTN(f);
            SET_MLP(f);
        }
    } else if (strcmp(m, "awq") == 0 || strcmp(m, "gptq") == 0) {
        f = fmt_of(MODEL_WFMT_INT4_GROUP, m[0] == 'a' ? MODEL_QSCHEME_AWQ : MODEL_QSCHEME_GPTQ);
        f.group_size = 128;
        f.zero_point = m[0] == 'a';
        f.scale_bytes = 2;
        SET_ATTN(f);
        SET_MLP(f);
        role_fmt[MODEL_ROLE_INDEXER] = f;
    } else if (strcmp(m, "fbgemm_fp8") == 0) {
        f = fmt_of(MODEL_WFMT_FP8_CHANNEL, MODEL_QSCHEME_FBGEMM);
        f.scale_bytes = 4;
        SET_ATTN(f);
        SET_MLP(f);
        role_fmt[MODEL_ROLE_INDEXER] = f;
    } else if (strcmp(m, "modelopt") == 0 || strcmp(m, "modelopt_fp8") == 0) {
        f = fmt_of(MODEL_WFMT_FP8_TENSOR, MODEL_QSCHEME_MODELOPT);
        f.scale_bytes = 4;
        f.input_scale = true;
        SET_ATTN(f);
        SET_MLP(f);
        role_fmt[MODEL_ROLE_INDEXER] = f;
    } else {
        return false;
    }
#undef SET_ATTN
#undef SET_MLP
    for (int r = 0; r < MODEL_ROLE_COUNT; r++) {
        int i = spec_format(out, &role_fmt[r]);
        g_assert(i >= 0); /* at most 3 formats per layout */
        out->global_fmt[r] = (uint8_t)i;
        for (uint32_t l = 0; l < out->n_layers; l++)
            out->layer_fmt[l][r] = (uint8_t)i;
    }
    /* embeddings, lm_head and the vision tower stay native whatever the scheme */
    out->global_fmt[MODEL_ROLE_EMBED] = out->global_fmt[MODEL_ROLE_LM_HEAD] =
        out->global_fmt[MODEL_ROLE_VISION] = 0;
    if (strcmp(m, "bf16") != 0)
        g_strlcpy(out->method, m, sizeof out->method);
    g_strlcpy(out->source, "override engine.quantization", sizeof out->source);
    return true;
}
