/* tests/model/test-arch.c — the model architecture loader: every preset loads with the figures
 * of shared/reference/models.md (golden figures), the embedded presets equal the files in
 * model/presets/, structure is detected from fields (MLA, DSA, IndexShare, MoE, dense GQA), and
 * bad configs give one MODEL_ARCH_ERROR naming the file and the field. Bad configs are written
 * to temporary folders (g_dir_make_tmp) and loaded as files (src/input/hf-config.h reads them;
 * tests/src/input/test-hf-config.c has the files that cannot be read); most are a preset with
 * one field changed. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "../../model/arch.h"
#include "../../src/input/hf-config.h"

/* MODEL_ARCH_ERROR codes (model/arch.h). */
#define CODE_IO 0
#define CODE_JSON 1
#define CODE_FIELD 2

#define assert_has(msg, sub)                                                                       \
    cr_assert(strstr((msg), (sub)) != NULL, "expected \"%s\" in: %s", (sub), (msg))

static ModelArch preset(const char *name)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(model_arch_load_preset(name, &a, &err), "%s: %s", name, err ? err->message : "");
    cr_assert_null(err);
    cr_assert_str_eq(a.name, name);
    return a;
}

static char *preset_path(const char *name)
{
    return g_strdup_printf("%s/model/presets/%s.json", RANKSIM_SOURCE_DIR, name);
}

/* The text of preset `name` with member `key` set to the JSON `value` (NULL: removed). */
static char *mutated(const char *name, const char *key, const char *value)
{
    g_autofree char *path = preset_path(name);
    g_autoptr(JsonParser) p = json_parser_new();
    GError *err = NULL;
    cr_assert(json_parser_load_from_file(p, path, &err), "%s", err ? err->message : "");
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    if (value) {
        JsonNode *v = json_from_string(value, &err);
        cr_assert(v || (!err && strcmp(value, "null") == 0), "bad test value %s", value);
        json_object_set_member(o, key, v ? v : json_node_new(JSON_NODE_NULL));
    } else {
        json_object_remove_member(o, key);
    }
    g_autoptr(JsonGenerator) g = json_generator_new();
    json_generator_set_root(g, json_parser_get_root(p));
    json_generator_set_pretty(g, true);
    return json_generator_to_data(g, NULL);
}

/* Writes `text` to TMP/`file` (which may name a subfolder) in a fresh temporary folder, loads
 * it, removes it. Returns the path the loader was given (no longer existing); caller frees. */
static char *load_tmp(const char *file, const char *text, ModelArch *out, bool *ok, GError **err)
{
    GError *e = NULL;
    g_autofree char *dir = g_dir_make_tmp("ranksim-arch-XXXXXX", &e);
    cr_assert_not_null(dir, "%s", e ? e->message : "");
    char *path = g_build_filename(dir, file, NULL);
    g_autofree char *parent = g_path_get_dirname(path);
    cr_assert_eq(g_mkdir_with_parents(parent, 0700), 0);
    cr_assert(g_file_set_contents(path, text, -1, &e), "%s", e ? e->message : "");
    *ok = hf_config_load_file(path, out, err);
    cr_assert_eq(g_unlink(path), 0);
    for (g_autofree char *d = g_strdup(parent); strcmp(d, dir) != 0;) {
        cr_assert_eq(g_rmdir(d), 0);
        char *up = g_path_get_dirname(d);
        g_free(d);
        d = up;
    }
    cr_assert_eq(g_rmdir(dir), 0);
    return path;
}

static ModelArch load_ok(const char *text)
{
    ModelArch a;
    GError *err = NULL;
    bool ok = false;
    g_autofree char *path = load_tmp("config.json", text, &a, &ok, &err);
    cr_assert(ok, "unexpected error: %s", err ? err->message : "");
    return a;
}

/* Expects one error with `code` whose one-line message is "PATH" + `after` when `exact`, else
 * starts with "PATH" and contains `after`. */
static void expect_error_in(const char *text, int code, const char *after, bool exact)
{
    ModelArch a;
    memset(&a, 0x5a, sizeof a);
    GError *err = NULL;
    bool ok = true;
    g_autofree char *path = load_tmp("config.json", text, &a, &ok, &err);
    cr_assert_not(ok, "expected an error containing \"%s\"", after);
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, MODEL_ARCH_ERROR);
    cr_assert_eq(err->code, code, "code %d (wanted %d): %s", err->code, code, err->message);
    cr_assert_null(strchr(err->message, '\n'), "multi-line message: %s", err->message);
    cr_assert(g_str_has_prefix(err->message, path), "expected the path first: %s", err->message);
    if (exact)
        cr_assert_str_eq(err->message + strlen(path), after);
    else
        assert_has(err->message + strlen(path), after);
    /* *out is untouched on failure. */
    for (size_t i = 0; i < sizeof a; i++)
        cr_assert_eq(((unsigned char *)&a)[i], 0x5a);
    g_error_free(err);
}

static void expect_field_error(const char *text, const char *after)
{
    expect_error_in(text, CODE_FIELD, after, false);
}

/* A preset with one field changed gives the error `after` (a substring). */
static void expect_mutation_error(const char *name, const char *key, const char *value,
                                  const char *after)
{
    g_autofree char *text = mutated(name, key, value);
    expect_field_error(text, after);
}

/* ---- presets: golden figures (shared/reference/models.md) ---- */

Test(presets, glm_5)
{
    ModelArch a = preset("glm-5");
    cr_assert_str_eq(a.architecture, "GlmMoeDsaForCausalLM");
    cr_assert_eq(a.hidden_size, 6144);
    cr_assert_eq(a.num_layers, 78);
    cr_assert_eq(a.num_heads, 64);
    cr_assert_eq(a.num_kv_heads, 64);
    cr_assert_eq(a.intermediate_size, 12288);
    cr_assert_eq(a.vocab_size, 154880);
    cr_assert_not(a.tie_word_embeddings);
    cr_assert_eq(a.num_nextn_predict_layers, 1);

    cr_assert(a.mla);
    cr_assert_eq(a.q_lora_rank, 2048);
    cr_assert_eq(a.kv_lora_rank, 512);
    cr_assert_eq(a.qk_nope_head_dim, 192);
    cr_assert_eq(a.qk_rope_head_dim, 64);
    cr_assert_eq(a.v_head_dim, 256);
    /* Attention output per token with all heads: 64 x 256 = 16384 (o_proj [16384, 6144]). */
    cr_assert_eq(a.num_heads * a.v_head_dim, 16384);

    cr_assert(a.dsa);
    cr_assert_eq(a.index_n_heads, 32);
    cr_assert_eq(a.index_head_dim, 128);
    cr_assert_eq(a.index_topk, 2048);
    cr_assert_eq(a.index_topk_freq, 1);
    for (uint32_t i = 0; i < MODEL_MAX_LAYERS; i++)
        cr_assert_not(a.index_shared[i], "layer %u", i);

    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 256);
    cr_assert_eq(a.num_experts_per_tok, 8);
    cr_assert_eq(a.moe_intermediate_size, 2048);
    cr_assert_eq(a.n_shared_experts, 1);
    cr_assert_eq(a.first_k_dense_replace, 3);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), i >= 3, "layer %u", i);
}

Test(presets, glm_5_2_index_share)
{
    ModelArch a = preset("glm-5.2");
    ModelArch g5 = preset("glm-5");
    cr_assert(a.dsa);
    cr_assert_eq(a.index_topk_freq, 4);
    /* 3 full, then [shared, shared, shared, full] x 18, then 3 shared. */
    bool want[78];
    uint32_t n = 0;
    for (int i = 0; i < 3; i++)
        want[n++] = false;
    for (int r = 0; r < 18; r++) {
        want[n++] = true;
        want[n++] = true;
        want[n++] = true;
        want[n++] = false;
    }
    for (int i = 0; i < 3; i++)
        want[n++] = true;
    cr_assert_eq(n, 78);
    cr_assert_eq(a.num_layers, 78);
    uint32_t full = 0, since_full = 0;
    for (uint32_t i = 0; i < MODEL_MAX_LAYERS; i++) {
        bool w = i < 78 ? want[i] : false;
        cr_assert_eq(a.index_shared[i], w, "layer %u: shared %d, want %d", i, a.index_shared[i], w);
        if (i >= 78)
            continue;
        full += !a.index_shared[i];
        since_full = a.index_shared[i] ? since_full + 1 : 0;
        cr_assert_lt(since_full, a.index_topk_freq, "layer %u is %u layers after a full one", i,
                     since_full);
    }
    cr_assert_eq(full, 21);
    /* Everything else is GLM-5's. */
    memcpy(a.name, g5.name, sizeof a.name);
    a.index_topk_freq = g5.index_topk_freq;
    memset(a.index_shared, 0, sizeof a.index_shared);
    cr_assert_eq(memcmp(&a, &g5, sizeof a), 0);
}

Test(presets, deepseek_v3_2)
{
    ModelArch a = preset("deepseek-v3.2");
    cr_assert_str_eq(a.architecture, "DeepseekV32ForCausalLM");
    cr_assert_eq(a.hidden_size, 7168);
    cr_assert_eq(a.num_layers, 61);
    cr_assert_eq(a.num_heads, 128);
    cr_assert_eq(a.num_kv_heads, 128);
    cr_assert_eq(a.intermediate_size, 18432);
    cr_assert_eq(a.vocab_size, 129280);
    cr_assert_eq(a.num_nextn_predict_layers, 1);
    cr_assert(a.mla);
    cr_assert_eq(a.q_lora_rank, 1536);
    cr_assert_eq(a.kv_lora_rank, 512);
    cr_assert_eq(a.qk_nope_head_dim, 128);
    cr_assert_eq(a.qk_rope_head_dim, 64);
    cr_assert_eq(a.v_head_dim, 128);
    cr_assert(a.dsa);
    cr_assert_eq(a.index_n_heads, 64);
    cr_assert_eq(a.index_head_dim, 128);
    cr_assert_eq(a.index_topk, 2048);
    cr_assert_eq(a.index_topk_freq, 1);
    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 256);
    cr_assert_eq(a.num_experts_per_tok, 8);
    cr_assert_eq(a.moe_intermediate_size, 2048);
    cr_assert_eq(a.n_shared_experts, 1);
    cr_assert_eq(a.first_k_dense_replace, 3);
}

Test(presets, deepseek_v3_no_indexer)
{
    ModelArch a = preset("deepseek-v3");
    ModelArch v32 = preset("deepseek-v3.2");
    cr_assert_str_eq(a.architecture, "DeepseekV3ForCausalLM");
    cr_assert(a.mla);
    cr_assert_not(a.dsa);
    cr_assert_eq(a.index_n_heads, 0);
    cr_assert_eq(a.index_head_dim, 0);
    cr_assert_eq(a.index_topk, 0);
    cr_assert(a.moe);
    /* Same shape as V3.2 without the indexer. */
    memcpy(a.name, v32.name, sizeof a.name);
    memcpy(a.architecture, v32.architecture, sizeof a.architecture);
    a.dsa = v32.dsa;
    a.index_n_heads = v32.index_n_heads;
    a.index_head_dim = v32.index_head_dim;
    a.index_topk = v32.index_topk;
    memcpy(a.model_type, v32.model_type, sizeof a.model_type);
    cr_assert_eq(memcmp(&a, &v32, sizeof a), 0);
}

/* Presets read the weights in the released checkpoint's format: gpt-oss's MXFP4 experts (its
 * quantization_config keeps attention, router, embeddings and lm_head bf16) and DeepSeek-V4-Flash's
 * FP8 block linears around MXFP4 experts. */
static ModelWeightKind fmt_of(const ModelArch *a, int32_t layer, ModelTensorRole role)
{
    return model_quant_format(&a->quant, layer, role)->kind;
}

Test(presets, released_formats)
{
    static const char *const oss[] = {"gpt-oss-120b", "gpt-oss-20b"};
    for (size_t i = 0; i < G_N_ELEMENTS(oss); i++) {
        ModelArch a = preset(oss[i]);
        cr_assert_str_eq(a.quant.method, "mxfp4", "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, 0, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4, "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, 5, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4, "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, 0, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_BF16, "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, 0, MODEL_ROLE_ATTN_O), MODEL_WFMT_BF16, "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, 0, MODEL_ROLE_ROUTER), MODEL_WFMT_BF16, "%s", oss[i]);
        cr_assert_eq(fmt_of(&a, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16, "%s", oss[i]);
    }
    ModelArch v4 = preset("deepseek-v4-flash");
    cr_assert_str_eq(v4.quant.method, "fp8");
    cr_assert_eq(fmt_of(&v4, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4); /* expert_dtype fp4 */
    cr_assert_eq(fmt_of(&v4, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(fmt_of(&v4, 3, MODEL_ROLE_ATTN_O), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(fmt_of(&v4, 3, MODEL_ROLE_SHARED_EXPERT), MODEL_WFMT_FP8_BLOCK);
    cr_assert_eq(fmt_of(&v4, -1, MODEL_ROLE_LM_HEAD), MODEL_WFMT_BF16);
}

Test(presets, llama_3_1_70b_dense_gqa)
{
    ModelArch a = preset("llama-3.1-70b");
    cr_assert_str_eq(a.architecture, "LlamaForCausalLM");
    cr_assert_eq(a.hidden_size, 8192);
    cr_assert_eq(a.num_layers, 80);
    cr_assert_eq(a.num_heads, 64);
    cr_assert_eq(a.num_kv_heads, 8);
    cr_assert_eq(a.head_dim, 128);
    cr_assert_eq(a.intermediate_size, 28672);
    cr_assert_eq(a.vocab_size, 128256);
    cr_assert_not(a.tie_word_embeddings);
    cr_assert_not(a.mla);
    cr_assert_not(a.dsa);
    cr_assert_not(a.moe);
    cr_assert_eq(a.num_nextn_predict_layers, 0);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert_not(model_arch_layer_is_moe(&a, i));
}

Test(presets, qwen3_235b_a22b_all_moe)
{
    ModelArch a = preset("qwen3-235b-a22b");
    cr_assert_str_eq(a.architecture, "Qwen3MoeForCausalLM");
    cr_assert_eq(a.hidden_size, 4096);
    cr_assert_eq(a.num_layers, 94);
    cr_assert_eq(a.num_heads, 64);
    cr_assert_eq(a.num_kv_heads, 4);
    cr_assert_eq(a.head_dim, 128); /* from the config, not 4096 / 64 = 64 */
    cr_assert_eq(a.vocab_size, 151936);
    cr_assert_not(a.mla);
    cr_assert_not(a.dsa);
    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 128);
    cr_assert_eq(a.num_experts_per_tok, 8);
    cr_assert_eq(a.moe_intermediate_size, 1536);
    cr_assert_eq(a.n_shared_experts, 0);
    cr_assert_eq(a.first_k_dense_replace, 0);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert(model_arch_layer_is_moe(&a, i), "layer %u", i);
}

/* The listed names are the model/presets/NAME.json files (catalog files excluded), sorted; each
 * loads, and the embedded preset equals the file. */
Test(presets, names_and_files_agree)
{
    g_auto(GStrv) names = g_strsplit(model_arch_preset_names(), ", ", -1);
    g_autofree char *dir_path = g_strdup_printf("%s/model/presets", RANKSIM_SOURCE_DIR);
    GDir *dir = g_dir_open(dir_path, 0, NULL);
    cr_assert_not_null(dir);
    g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
    for (const char *f; (f = g_dir_read_name(dir));)
        if (g_str_has_suffix(f, ".json") && !g_str_has_prefix(f, "catalog"))
            g_ptr_array_add(want, g_strndup(f, strlen(f) - strlen(".json")));
    g_dir_close(dir);
    cr_assert_geq(want->len, 6);
    cr_assert_eq(g_strv_length(names), want->len, "%s", model_arch_preset_names());
    for (guint i = 0; names[i]; i++) {
        if (i > 0)
            cr_assert_lt(strcmp(names[i - 1], names[i]), 0, "not sorted: %s", names[i]);
        bool listed = false;
        for (guint j = 0; j < want->len; j++)
            listed = listed || strcmp(want->pdata[j], names[i]) == 0;
        cr_assert(listed, "%s is not a file in model/presets/", names[i]);
        g_autofree char *path = preset_path(names[i]);
        ModelArch file;
        GError *err = NULL;
        if (!hf_config_load_file(path, &file, &err)) {
            /* presets of architectures ranksim refuses (hybrids, DeepSeek-V4, Step-3.5): the
             * embedded copy is refused with the same reason */
            cr_assert(strstr(err->message, "not simulated") || strstr(err->message, "not modelled"),
                      "%s", err->message);
            GError *e2 = NULL;
            ModelArch tmp;
            cr_assert_not(model_arch_load_preset(names[i], &tmp, &e2));
            const char *why = strstr(err->message, ": field");
            cr_assert(why && strstr(e2->message, why), "%s vs %s", err->message, e2->message);
            g_error_free(e2);
            g_error_free(err);
            continue;
        }
        ModelArch embedded = preset(names[i]);
        cr_assert_str_eq(file.name, names[i]);
        cr_assert_eq(memcmp(&embedded, &file, sizeof file), 0, "%s differs", names[i]);
    }
    /* The first presets the project shipped are there. */
    static const char *const first[] = {"deepseek-v3", "deepseek-v3.2", "glm-5",
                                        "glm-5.2",     "llama-3.1-70b", "qwen3-235b-a22b"};
    for (size_t i = 0; i < G_N_ELEMENTS(first); i++)
        cr_assert(g_strv_contains((const char *const *)names, first[i]), "%s", first[i]);
}

static gpointer names_thread(gpointer data)
{
    (void)data;
    return (gpointer)model_arch_preset_names();
}

/* Built once: every thread gets the same storage. */
Test(presets, names_built_once_across_threads)
{
    GThread *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = g_thread_new("names", names_thread, NULL);
    const char *first = g_thread_join(t[0]);
    for (int i = 1; i < 4; i++)
        cr_assert_eq(g_thread_join(t[i]), first);
    cr_assert_eq(model_arch_preset_names(), first);
}

/* ---- files: names, defaults, accepted forms ---- */

Test(files, name_from_folder_or_basename)
{
    g_autofree char *text = mutated("llama-3.1-70b", "num_hidden_layers", "2");
    ModelArch a;
    GError *err = NULL;
    bool ok = false;
    g_autofree char *p1 = load_tmp("My-Model/config.json", text, &a, &ok, &err);
    cr_assert(ok, "%s", err ? err->message : "");
    cr_assert_str_eq(a.name, "My-Model");
    g_autofree char *p2 = load_tmp("tiny.json", text, &a, &ok, &err);
    cr_assert(ok);
    cr_assert_str_eq(a.name, "tiny");
    g_autofree char *p3 = load_tmp("tiny.cfg", text, &a, &ok, &err);
    cr_assert(ok);
    cr_assert_str_eq(a.name, "tiny.cfg");
    cr_assert(model_arch_load_string(text, "dir/small.json", &a, &err));
    cr_assert_str_eq(a.name, "small");
}

Test(files, dense_defaults)
{
    /* No num_key_value_heads (-> heads), no head_dim (-> hidden / heads), no architectures. */
    ModelArch a = load_ok("{\"hidden_size\": 1024, \"num_hidden_layers\": 4, "
                          "\"num_attention_heads\": 16, \"intermediate_size\": 4096, "
                          "\"vocab_size\": 32000}");
    cr_assert_not(a.mla || a.dsa || a.moe);
    cr_assert_eq(a.num_kv_heads, 16);
    cr_assert_eq(a.head_dim, 64);
    cr_assert_str_eq(a.architecture, "");
    cr_assert_not(a.tie_word_embeddings);
    cr_assert_eq(a.num_nextn_predict_layers, 0);
    cr_assert_eq(a.index_topk_freq, 1);
}

Test(files, integral_doubles_and_nulls)
{
    g_autofree char *t1 = mutated("glm-5", "hidden_size", "6144.0");
    cr_assert_eq(load_ok(t1).hidden_size, 6144);
    /* q_lora_rank null or absent: no q compression. */
    g_autofree char *t2 = mutated("deepseek-v3", "q_lora_rank", "null");
    ModelArch a = load_ok(t2);
    cr_assert(a.mla);
    cr_assert_eq(a.q_lora_rank, 0);
    g_autofree char *t3 = mutated("deepseek-v3", "q_lora_rank", NULL);
    cr_assert_eq(load_ok(t3).q_lora_rank, 0);
    /* index_topk null: no indexer (what some runtimes do to disable DSA). */
    g_autofree char *t4 = mutated("glm-5", "index_topk", "null");
    cr_assert_not(load_ok(t4).dsa);
    /* n_shared_experts / first_k_dense_replace absent: 0. */
    g_autofree char *t5 = mutated("deepseek-v3", "first_k_dense_replace", NULL);
    ModelArch b = load_ok(t5);
    cr_assert_eq(b.first_k_dense_replace, 0);
    cr_assert(model_arch_layer_is_moe(&b, 0));
}

Test(files, qwen_mlp_only_layers_prefix)
{
    g_autofree char *text = mutated("qwen3-235b-a22b", "mlp_only_layers", "[1, 0]");
    ModelArch a = load_ok(text);
    cr_assert_eq(a.first_k_dense_replace, 2);
    cr_assert_not(model_arch_layer_is_moe(&a, 1));
    cr_assert(model_arch_layer_is_moe(&a, 2));
}

/* ---- errors ---- */

Test(errors, malformed_json_has_line_and_column)
{
    expect_error_in("{\n  \"hidden_size\": 6144,\n  \"num_hidden_layers\": }\n", CODE_JSON,
                    ":3:", false);
    expect_error_in("{\n  \"hidden_size\": 6144,\n}\n", CODE_JSON, ":2:22: Parse error", false);
    expect_error_in("{\"hidden_size\": 6144} trailing", CODE_JSON, ":1:", false);
    expect_error_in("", CODE_JSON, ": empty document; expected a config.json object", true);
}

Test(errors, not_an_object)
{
    expect_error_in("[1, 2]", CODE_FIELD,
                    ": expected a JSON object (a Hugging Face config.json) at the top level, got "
                    "an array",
                    true);
}

Test(errors, missing_field)
{
    g_autofree char *text = mutated("glm-5", "hidden_size", NULL);
    expect_error_in(text, CODE_FIELD, ": missing field 'hidden_size' (required for every model)",
                    true);
    expect_mutation_error("llama-3.1-70b", "vocab_size", NULL,
                          ": missing field 'vocab_size' (required for every model)");
    expect_mutation_error("llama-3.1-70b", "intermediate_size", NULL,
                          "missing field 'intermediate_size' (required for a dense model's MLP)");
    expect_mutation_error("glm-5", "intermediate_size", NULL,
                          "missing field 'intermediate_size' (required for the dense MLP");
    expect_mutation_error("glm-5", "v_head_dim", NULL,
                          "missing field 'v_head_dim' (required for MLA, which kv_lora_rank "
                          "selects)");
    expect_mutation_error("glm-5", "index_n_heads", NULL,
                          "missing field 'index_n_heads' (required for a DSA indexer, which "
                          "index_topk selects)");
    expect_mutation_error("glm-5", "num_experts_per_tok", NULL,
                          "missing field 'num_experts_per_tok' (required for MoE, which "
                          "n_routed_experts selects)");
    expect_mutation_error("qwen3-235b-a22b", "moe_intermediate_size", NULL,
                          "missing field 'moe_intermediate_size' (required for MoE, which "
                          "num_experts selects)");
    expect_mutation_error("llama-3.1-70b", "num_attention_heads", "null",
                          "field 'num_attention_heads': expected a positive integer, got null");
}

Test(errors, wrong_type_or_value)
{
    g_autofree char *text = mutated("glm-5", "kv_lora_rank", "\"512\"");
    expect_error_in(text, CODE_FIELD,
                    ": field 'kv_lora_rank': expected a positive integer, got a string (\"512\")",
                    true);
    expect_mutation_error("glm-5", "hidden_size", "-6144",
                          "field 'hidden_size': expected a positive integer, got -6144");
    expect_mutation_error("glm-5", "hidden_size", "6144.5",
                          "field 'hidden_size': expected a positive integer, got 6144.5");
    expect_mutation_error("glm-5", "hidden_size", "0",
                          "field 'hidden_size': expected a positive integer, got 0");
    expect_mutation_error("glm-5", "hidden_size", "true",
                          "field 'hidden_size': expected a positive integer, got a boolean (true)");
    expect_mutation_error("glm-5", "hidden_size", "[6144]",
                          "field 'hidden_size': expected a positive integer, got an array");
    expect_mutation_error("glm-5", "hidden_size", "2147483648",
                          "field 'hidden_size': expected a positive integer, got 2147483648 (at "
                          "most 2147483647)");
    expect_mutation_error(
        "glm-5", "hidden_size", "4294967296.0",
        "field 'hidden_size': expected a positive integer, got 4294967296 (at most "
        "2147483647)");
    expect_mutation_error("glm-5", "n_shared_experts", "-1",
                          "field 'n_shared_experts': expected a non-negative integer, got -1");
    expect_mutation_error("glm-5", "tie_word_embeddings", "\"no\"",
                          "field 'tie_word_embeddings': expected true or false, got a string");
    expect_mutation_error("glm-5", "architectures", "\"GlmMoeDsaForCausalLM\"",
                          "field 'architectures': expected a list of class names");
}

Test(errors, sanity_limits)
{
    expect_mutation_error("llama-3.1-70b", "num_hidden_layers", "1025",
                          "field 'num_hidden_layers': 1025 layers; at most 1024 are supported");
    expect_mutation_error("glm-5", "first_k_dense_replace", "79",
                          "field 'first_k_dense_replace': 79 exceeds num_hidden_layers (78)");
    expect_mutation_error("glm-5", "num_experts_per_tok", "257",
                          "field 'num_experts_per_tok': 257 exceeds n_routed_experts (256)");
    expect_mutation_error("llama-3.1-70b", "num_key_value_heads", "6",
                          "field 'num_key_value_heads': 6 does not divide num_attention_heads "
                          "(64)");
    expect_mutation_error("llama-3.1-70b", "hidden_size", "8190",
                          "missing field 'head_dim' (required when hidden_size 8190 is not a "
                          "multiple of num_attention_heads 64)");
}

/* Layer patterns once refused are now placed layer by layer. */
Test(files, layer_patterns_once_refused)
{
    g_autofree char *t1 = mutated("glm-5", "moe_layer_freq", "2");
    ModelArch a = load_ok(t1);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), i >= 3 && i % 2 == 0, "layer %u", i);
    cr_assert_eq(a.first_k_dense_replace, 4);
    g_autofree char *t2 = mutated("qwen3-235b-a22b", "decoder_sparse_step", "2");
    ModelArch b = load_ok(t2);
    for (uint32_t i = 0; i < b.num_layers; i++)
        cr_assert_eq(model_arch_layer_is_moe(&b, i), (i + 1) % 2 == 0, "layer %u", i);
    cr_assert_eq(b.first_k_dense_replace, 1);
    g_autofree char *t3 = mutated("qwen3-235b-a22b", "mlp_only_layers", "[5]");
    ModelArch c = load_ok(t3);
    for (uint32_t i = 0; i < c.num_layers; i++)
        cr_assert_eq(model_arch_layer_is_moe(&c, i), i != 5, "layer %u", i);
    cr_assert_eq(c.first_k_dense_replace, 0);
    g_autofree char *t4 = mutated("qwen3-235b-a22b", "mlp_only_layers", "[0, 0]");
    cr_assert_eq(load_ok(t4).first_k_dense_replace, 1);
}

Test(errors, indexer_types)
{
    /* 77 entries for 78 layers. */
    GString *s = g_string_new("[\"full\"");
    for (int i = 1; i < 77; i++)
        g_string_append(s, ", \"shared\"");
    g_string_append(s, "]");
    g_autofree char *short_list = g_string_free(s, FALSE);
    expect_mutation_error("glm-5.2", "indexer_types", short_list,
                          "field 'indexer_types': 77 entries, but num_hidden_layers is 78");
    expect_mutation_error("glm-5.2", "num_hidden_layers", "79",
                          "field 'indexer_types': 78 entries, but num_hidden_layers is 79");
    expect_mutation_error("glm-5.2", "indexer_types", "\"full\"",
                          "field 'indexer_types': expected a list");

    /* The first entry "shared"; an entry "sparse". */
    GString *bad = g_string_new("[\"shared\"");
    for (int i = 1; i < 78; i++)
        g_string_append(bad, ", \"full\"");
    g_string_append(bad, "]");
    g_autofree char *starts_shared = g_string_free(bad, FALSE);
    expect_mutation_error("glm-5.2", "indexer_types", starts_shared,
                          "field 'indexer_types': entry 0 is \"shared\", but the first layer "
                          "must be \"full\"");
    GString *odd = g_string_new("[\"full\"");
    for (int i = 1; i < 78; i++)
        g_string_append(odd, i == 5 ? ", \"sparse\"" : ", \"full\"");
    g_string_append(odd, "]");
    g_autofree char *sparse = g_string_free(odd, FALSE);
    expect_mutation_error("glm-5.2", "indexer_types", sparse,
                          "field 'indexer_types': entry 5 is a string (\"sparse\"); valid: "
                          "\"full\", \"shared\"");
    /* IndexShare without an indexer. */
    expect_mutation_error("glm-5.2", "index_topk", NULL, "field 'indexer_types' needs index_topk");
}

Test(errors, unknown_preset)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(model_arch_load_preset("glm-6", &a, &err));
    cr_assert_eq(err->domain, MODEL_ARCH_ERROR);
    cr_assert_eq(err->code, CODE_IO);
    assert_has(err->message, "unknown model preset 'glm-6'");
    assert_has(err->message, model_arch_preset_names());
    g_clear_error(&err);
    /* Names are matched exactly: no path tricks, no case folding. */
    cr_assert_not(model_arch_load_preset("../presets/glm-5", &a, &err));
    g_clear_error(&err);
    cr_assert_not(model_arch_load_preset("GLM-5", &a, &err));
    g_clear_error(&err);
}

/* ---- real config.json files (shared/real/hf-configs/, outside this repository) ---- */

/* What a real file must read as. -1 in an int: not checked. */
typedef struct {
    uint32_t layers, experts, per_tok, expert_width, shared_width, moe_layers, sliding, chunked;
    uint32_t max_model_len, mtp, qk_norm;
    bool tie, mla, dsa, bias, sinks;
    uint64_t vision;
} RealWant;

/* Loads shared/real/hf-configs/NAME/config.json, or skips the test when that folder is absent
 * (a checkout without the shared files). */
static ModelArch real_file(const char *name)
{
    g_autofree char *dir =
        g_strdup_printf("%s/../shared/real/hf-configs/%s", RANKSIM_SOURCE_DIR, name);
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
        cr_skip_test("%s is absent (the shared real config files are not here)", dir);
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    ModelArch a;
    GError *err = NULL;
    cr_assert(hf_config_load_file(path, &a, &err), "%s", err ? err->message : "");
    cr_assert_str_eq(a.name, name);
    return a;
}

static void expect_real(const char *name, const RealWant *w)
{
    ModelArch a = real_file(name);
    uint32_t moe = 0, sliding = 0, chunked = 0;
    for (uint32_t i = 0; i < a.num_layers; i++) {
        moe += model_arch_layer_is_moe(&a, i);
        sliding += a.layer_sliding[i];
        chunked += a.layer_chunked[i];
    }
    cr_assert_eq(a.num_layers, w->layers, "%s layers %u", name, a.num_layers);
    cr_assert_eq(a.moe, w->experts > 0, "%s", name);
    cr_assert_eq(a.n_routed_experts, w->experts, "%s experts %u", name, a.n_routed_experts);
    cr_assert_eq(a.num_experts_per_tok, w->per_tok, "%s per token %u", name, a.num_experts_per_tok);
    cr_assert_eq(a.moe_intermediate_size, w->expert_width, "%s expert width %u", name,
                 a.moe_intermediate_size);
    cr_assert_eq(a.shared_expert_intermediate_size, w->shared_width, "%s shared width %u", name,
                 a.shared_expert_intermediate_size);
    cr_assert_eq(moe, w->moe_layers, "%s MoE layers %u", name, moe);
    cr_assert_eq(sliding, w->sliding, "%s sliding layers %u", name, sliding);
    cr_assert_eq(chunked, w->chunked, "%s chunked layers %u", name, chunked);
    cr_assert_eq(a.max_model_len, w->max_model_len, "%s max_model_len %u", name, a.max_model_len);
    cr_assert_eq(a.num_nextn_predict_layers, w->mtp, "%s MTP %u", name, a.num_nextn_predict_layers);
    cr_assert_eq(a.qk_norm_dim, w->qk_norm, "%s qk norm %u", name, a.qk_norm_dim);
    cr_assert_eq(a.tie_word_embeddings, w->tie, "%s", name);
    cr_assert_eq(a.mla, w->mla, "%s", name);
    cr_assert_eq(a.dsa, w->dsa, "%s", name);
    cr_assert_eq(a.attention_bias, w->bias, "%s", name);
    cr_assert_eq(a.attention_sinks, w->sinks, "%s", name);
    cr_assert_eq(a.vision_params, w->vision, "%s vision %" G_GUINT64_FORMAT, name, a.vision_params);
    cr_assert_eq(a.first_k_dense_replace, a.moe ? a.num_layers - moe : 0, "%s", name);
    cr_assert_eq(a.native_dtype, MODEL_WFMT_BF16, "%s", name);
}

Test(real, llama_3_1_8b)
{
    expect_real("meta-llama--Meta-Llama-3.1-8B",
                &(RealWant){.layers = 32, .max_model_len = 131072});
    ModelArch a = real_file("meta-llama--Meta-Llama-3.1-8B");
    cr_assert_eq(a.hidden_size, 4096);
    cr_assert_eq(a.num_kv_heads, 8);
    cr_assert_eq(a.intermediate_size, 14336);
}

Test(real, llama_3_1_70b)
{
    expect_real("meta-llama--Meta-Llama-3.1-70B",
                &(RealWant){.layers = 80, .max_model_len = 131072});
}

Test(real, llama_3_1_405b)
{
    expect_real("meta-llama--Meta-Llama-3.1-405B",
                &(RealWant){.layers = 126, .max_model_len = 131072});
    cr_assert_eq(real_file("meta-llama--Meta-Llama-3.1-405B").intermediate_size, 53248);
}

/* text_config holds the language model; no vision_config in this (trimmed) copy, so the
 * vision tower is transformers' default Llama4VisionConfig (455,178,240 parameters; the
 * released Scout tower is 871,932,416, see fixtures/llama4-tiny.json). 3 of 4 layers are
 * chunked (RoPE layers), every layer MoE with one shared expert 8192 wide. */
Test(real, llama_4_scout)
{
    expect_real("meta-llama--Llama-4-Scout-17B-16E-Instruct", &(RealWant){.layers = 48,
                                                                          .experts = 16,
                                                                          .per_tok = 1,
                                                                          .expert_width = 8192,
                                                                          .shared_width = 8192,
                                                                          .moe_layers = 48,
                                                                          .chunked = 36,
                                                                          .max_model_len = 10485760,
                                                                          .vision = 455178240});
    ModelArch a = real_file("meta-llama--Llama-4-Scout-17B-16E-Instruct");
    cr_assert_str_eq(a.architecture, "Llama4ForConditionalGeneration");
    cr_assert_str_eq(a.model_type, "llama4_text");
    cr_assert_str_eq(a.layer_prefix, "language_model.model.layers.");
    cr_assert_eq(a.hidden_size, 5120);
    cr_assert_eq(a.intermediate_size, 16384); /* intermediate_size_mlp */
    cr_assert_eq(a.attention_chunk_size, 8192);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert_eq(a.layer_chunked[i], (i + 1) % 4 != 0, "layer %u", i);
    cr_assert_gt(a.vision_params, 0);
}

Test(real, qwen2_5_72b)
{
    /* sliding_window 131072 with use_sliding_window false: no sliding layer. */
    expect_real("Qwen--Qwen2.5-72B-Instruct",
                &(RealWant){.layers = 80, .max_model_len = 32768, .bias = true});
    ModelArch a = real_file("Qwen--Qwen2.5-72B-Instruct");
    cr_assert_not(a.o_proj_bias);
    cr_assert_eq(a.sliding_window, 0);
}

Test(real, deepseek_r1_distill_qwen_14b)
{
    expect_real("deepseek-ai--DeepSeek-R1-Distill-Qwen-14B",
                &(RealWant){.layers = 48, .max_model_len = 131072, .bias = true});
}

Test(real, qwen3_4b)
{
    expect_real("Qwen--Qwen3-4B",
                &(RealWant){.layers = 36, .max_model_len = 40960, .qk_norm = 128, .tie = true});
}

Test(real, qwen3_8b)
{
    expect_real("Qwen--Qwen3-8B",
                &(RealWant){.layers = 36, .max_model_len = 40960, .qk_norm = 128});
}

Test(real, qwen3_32b)
{
    expect_real("Qwen--Qwen3-32B",
                &(RealWant){.layers = 64, .max_model_len = 40960, .qk_norm = 128});
}

Test(real, qwen3_30b_a3b)
{
    expect_real("Qwen--Qwen3-30B-A3B", &(RealWant){.layers = 48,
                                                   .experts = 128,
                                                   .per_tok = 8,
                                                   .expert_width = 768,
                                                   .moe_layers = 48,
                                                   .max_model_len = 40960,
                                                   .qk_norm = 128});
}

static const RealWant qwen3_235b = {.layers = 94,
                                    .experts = 128,
                                    .per_tok = 8,
                                    .expert_width = 1536,
                                    .moe_layers = 94,
                                    .max_model_len = 40960,
                                    .qk_norm = 128};

Test(real, qwen3_235b_a22b)
{
    expect_real("Qwen--Qwen3-235B-A22B", &qwen3_235b);
}

Test(real, qwen3_235b_a22b_fp8)
{
    expect_real("Qwen--Qwen3-235B-A22B-FP8", &qwen3_235b);
}

Test(real, mixtral_8x7b)
{
    expect_real("mistralai--Mixtral-8x7B-v0.1", &(RealWant){.layers = 32,
                                                            .experts = 8,
                                                            .per_tok = 2,
                                                            .expert_width = 14336,
                                                            .moe_layers = 32,
                                                            .max_model_len = 32768});
}

Test(real, mixtral_8x22b)
{
    expect_real("mistralai--Mixtral-8x22B-v0.1", &(RealWant){.layers = 56,
                                                             .experts = 8,
                                                             .per_tok = 2,
                                                             .expert_width = 16384,
                                                             .moe_layers = 56,
                                                             .max_model_len = 65536});
}

/* YaRN: original_max_position_embeddings 4096 x factor 32. */
Test(real, gpt_oss_120b)
{
    expect_real("openai--gpt-oss-120b", &(RealWant){.layers = 36,
                                                    .experts = 128,
                                                    .per_tok = 4,
                                                    .expert_width = 2880,
                                                    .moe_layers = 36,
                                                    .sliding = 18,
                                                    .max_model_len = 131072,
                                                    .bias = true,
                                                    .sinks = true});
    ModelArch a = real_file("openai--gpt-oss-120b");
    cr_assert_eq(a.sliding_window, 128);
    for (uint32_t i = 0; i < a.num_layers; i++)
        cr_assert_eq(a.layer_sliding[i], i % 2 == 0, "layer %u", i);
    cr_assert(a.o_proj_bias && a.router_bias && a.expert_bias);
    cr_assert_eq(a.head_dim, 64);
}

Test(real, minimax_m2_7)
{
    expect_real("MiniMaxAI--MiniMax-M2.7", &(RealWant){.layers = 62,
                                                       .experts = 256,
                                                       .per_tok = 8,
                                                       .expert_width = 1536,
                                                       .moe_layers = 62,
                                                       .max_model_len = 204800,
                                                       .mtp = 3,
                                                       .qk_norm = 48 * 128});
    ModelArch a = real_file("MiniMaxAI--MiniMax-M2.7");
    cr_assert(a.qk_norm_per_layer);
    cr_assert(a.router_score_bias);
}

/* Kimi-K2: one dense layer, 384 experts, YaRN 4096 x 32, no MTP layer. */
Test(real, kimi_k2)
{
    expect_real("moonshotai--Kimi-K2-Instruct", &(RealWant){.layers = 61,
                                                            .experts = 384,
                                                            .per_tok = 8,
                                                            .expert_width = 2048,
                                                            .shared_width = 2048,
                                                            .moe_layers = 60,
                                                            .max_model_len = 131072,
                                                            .mla = true});
    ModelArch a = real_file("moonshotai--Kimi-K2-Instruct");
    cr_assert_eq(a.num_heads, 64);
    cr_assert(a.router_score_bias);
}

/* DeepSeek-V3 family: 3 dense layers, YaRN 4096 x 40, one MTP layer. */
static const RealWant deepseek_v3 = {.layers = 61,
                                     .experts = 256,
                                     .per_tok = 8,
                                     .expert_width = 2048,
                                     .shared_width = 2048,
                                     .moe_layers = 58,
                                     .max_model_len = 163840,
                                     .mtp = 1,
                                     .mla = true};

Test(real, deepseek_v3)
{
    expect_real("deepseek-ai--DeepSeek-V3", &deepseek_v3);
    cr_assert(real_file("deepseek-ai--DeepSeek-V3").router_score_bias);
}

Test(real, deepseek_r1)
{
    expect_real("deepseek-ai--DeepSeek-R1", &deepseek_v3);
}

Test(real, deepseek_v3_2)
{
    RealWant w = deepseek_v3;
    w.dsa = true;
    expect_real("deepseek-ai--DeepSeek-V3.2", &w);
}

Test(real, deepseek_v3_2_nvfp4)
{
    RealWant w = deepseek_v3;
    w.dsa = true;
    expect_real("nvidia--DeepSeek-V3.2-NVFP4", &w);
}

/* The trimmed GLM-4.7 copy: GQA, 3 dense layers, 160 experts (no MTP field in this copy). */
Test(real, glm_4_7_fp8)
{
    expect_real("zai-org--GLM-4.7-FP8", &(RealWant){.layers = 92,
                                                    .experts = 160,
                                                    .per_tok = 8,
                                                    .expert_width = 1536,
                                                    .shared_width = 1536,
                                                    .moe_layers = 89,
                                                    .max_model_len = 202752});
    ModelArch a = real_file("zai-org--GLM-4.7-FP8");
    cr_assert(a.router_score_bias);
    cr_assert_eq(a.num_kv_heads, 8);
}

/* GLM-5: rope_parameters of rope_type "default" (no factor), dtype instead of torch_dtype. */
Test(real, glm_5)
{
    expect_real("zai-org--GLM-5", &(RealWant){.layers = 78,
                                              .experts = 256,
                                              .per_tok = 8,
                                              .expert_width = 2048,
                                              .shared_width = 2048,
                                              .moe_layers = 75,
                                              .max_model_len = 202752,
                                              .mtp = 1,
                                              .mla = true,
                                              .dsa = true});
}

/* ---- fixtures (tests/model/fixtures/, hand-written): each key the families use ---- */

static char *fixture_path(const char *name)
{
    return g_strdup_printf("%s/tests/model/fixtures/%s", RANKSIM_SOURCE_DIR, name);
}

static ModelArch fixture(const char *name)
{
    g_autofree char *path = fixture_path(name);
    ModelArch a;
    GError *err = NULL;
    cr_assert(hf_config_load_file(path, &a, &err), "%s: %s", name, err ? err->message : "");
    return a;
}

/* The fixture fails with `code` and the message "PATH" + `after`, exactly. */
static void expect_fixture_error(const char *name, int code, const char *after)
{
    g_autofree char *path = fixture_path(name);
    ModelArch a;
    memset(&a, 0x5a, sizeof a);
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(path, &a, &err), "%s loaded", name);
    cr_assert_eq(err->domain, MODEL_ARCH_ERROR);
    cr_assert_eq(err->code, code, "code %d: %s", err->code, err->message);
    g_autofree char *want = g_strconcat(path, after, NULL);
    cr_assert_str_eq(err->message, want);
    for (size_t i = 0; i < sizeof a; i++)
        cr_assert_eq(((unsigned char *)&a)[i], 0x5a);
    g_error_free(err);
}

static uint32_t count_moe(const ModelArch *a)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->num_layers; i++)
        n += model_arch_layer_is_moe(a, i);
    return n;
}

Test(fixtures, mixtral_num_local_experts)
{
    ModelArch a = fixture("mixtral-tiny.json");
    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 8);
    cr_assert_eq(a.num_experts_per_tok, 2);
    cr_assert_eq(a.moe_intermediate_size, 224); /* intermediate_size is the experts' width */
    cr_assert_eq(count_moe(&a), 4);
    cr_assert_eq(a.sliding_window, 0); /* sliding_window null */
    cr_assert_eq(a.max_model_len, 32768);
    cr_assert_str_eq(a.model_type, "mixtral");
    cr_assert_eq(a.quant.n_layers, 4);
}

Test(fixtures, gpt_oss_experts_per_token_layer_types_yarn)
{
    ModelArch a = fixture("gpt-oss-tiny.json");
    cr_assert_eq(a.n_routed_experts, 4);
    cr_assert_eq(a.num_experts_per_tok, 2); /* experts_per_token */
    cr_assert_eq(a.moe_intermediate_size, 64);
    cr_assert_eq(a.sliding_window, 128);
    cr_assert(a.layer_sliding[0] && !a.layer_sliding[1] && a.layer_sliding[2] &&
              !a.layer_sliding[3]);
    cr_assert(a.attention_bias && a.o_proj_bias && a.attention_sinks);
    cr_assert(a.router_bias && a.expert_bias);
    cr_assert_not(a.router_score_bias);
    cr_assert_eq(a.max_model_len, 4096 * 32);
}

Test(fixtures, qwen2_moe_shared_expert_sparse_step_mlp_only)
{
    ModelArch a = fixture("qwen2-moe-tiny.json");
    /* (i + 1) % 2 == 0 -> 1, 3, 5, 7; mlp_only_layers removes 3. */
    static const bool want[8] = {false, true, false, false, false, true, false, true};
    for (uint32_t i = 0; i < 8; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), want[i], "layer %u", i);
    cr_assert_eq(a.first_k_dense_replace, 1);
    cr_assert_eq(a.n_shared_experts, 1);
    cr_assert_eq(a.shared_expert_intermediate_size, 128);
    cr_assert(a.shared_expert_gate);
    cr_assert_eq(a.intermediate_size, 256);
    cr_assert(a.attention_bias); /* Qwen2: q/k/v biases always */
    cr_assert_not(a.o_proj_bias);
    cr_assert_eq(a.qk_norm_dim, 0);
    cr_assert_eq(a.native_dtype, MODEL_WFMT_FP16);
}

Test(fixtures, deepseek_moe_layer_freq_mtp_noaux)
{
    ModelArch a = fixture("deepseek-freq.json");
    /* i >= 1 and i % 2 == 0 -> 2, 4. */
    for (uint32_t i = 0; i < 6; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), i == 2 || i == 4, "layer %u", i);
    cr_assert(model_arch_layer_is_moe(&a, 6)); /* the MTP layer */
    cr_assert_eq(a.first_k_dense_replace, 2);
    cr_assert_eq(a.shared_expert_intermediate_size, 2 * 32);
    cr_assert(a.mla);
    cr_assert_eq(a.q_lora_rank, 0);
    cr_assert(a.router_score_bias);
    cr_assert_eq(a.num_nextn_predict_layers, 1);
    cr_assert_eq(a.quant.n_layers, 7);
    cr_assert_eq(a.max_model_len, 4096 * 40); /* rope_scaling "type": "yarn" */
}

/* Llama-4 with the released Scout vision_config: 871,932,416 vision + projector parameters
 * (vLLM mllama4.py layout; the published per-tensor table of the checkpoint lists
 * positional_embedding_vlm 812,416, patch_embedding 827,904, q_proj 1,982,464, fc1 7,929,856,
 * vision_adapter fc1 23,068,672 / fc2 16,777,216, multi_modal_projector 20,971,520). */
Test(fixtures, llama4_text_config_vision_interleave_chunked)
{
    ModelArch a = fixture("llama4-tiny.json");
    cr_assert_eq(a.vision_params, 871932416);
    cr_assert_str_eq(a.model_type, "llama4_text");
    cr_assert_str_eq(a.layer_prefix, "language_model.model.layers.");
    cr_assert_eq(a.hidden_size, 5120);
    cr_assert_eq(a.num_layers, 4);
    /* interleave_moe_layer_step 2 -> layers 1, 3. */
    for (uint32_t i = 0; i < 4; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), i % 2 == 1, "layer %u", i);
    cr_assert_eq(a.intermediate_size, 16384);    /* dense layers: intermediate_size_mlp */
    cr_assert_eq(a.moe_intermediate_size, 8192); /* experts: intermediate_size */
    cr_assert_eq(a.shared_expert_intermediate_size, 8192);
    cr_assert_eq(a.n_shared_experts, 1);
    cr_assert_eq(a.qk_norm_dim, 0); /* Llama-4's qk norm has no weights */
    /* no_rope_layers [1, 1, 0, 1]: the RoPE layers are chunked. */
    cr_assert(a.layer_chunked[0] && a.layer_chunked[1] && !a.layer_chunked[2] &&
              a.layer_chunked[3]);
    cr_assert_eq(a.attention_chunk_size, 8192);
    cr_assert_eq(a.max_model_len, 262144); /* llama3 rope: no factor */
    cr_assert_not(a.tie_word_embeddings);
}

Test(fixtures, llama4_moe_layers_list_wins)
{
    ModelArch a = fixture("llama4-moe-layers.json");
    for (uint32_t i = 0; i < 6; i++)
        cr_assert_eq(model_arch_layer_is_moe(&a, i), i == 0 || i == 5, "layer %u", i);
    cr_assert_eq(a.first_k_dense_replace, 0);
    cr_assert_eq(a.intermediate_size, 128);
    cr_assert_str_eq(a.layer_prefix, "model.layers.");
    cr_assert_eq(a.vision_params, 0);
    cr_assert_eq(a.max_model_len, 2048); /* no length key: vLLM assumes 2048 */
}

Test(fixtures, minimax_m2_mtp_modules_qk_norm_routing_bias)
{
    ModelArch a = fixture("minimax-m2-tiny.json");
    cr_assert_eq(a.num_nextn_predict_layers, 3);
    cr_assert(a.qk_norm_per_layer);
    cr_assert_eq(a.qk_norm_dim, 8 * 16);
    cr_assert(a.router_score_bias);
    cr_assert_eq(a.shared_expert_intermediate_size, 0);
    cr_assert_eq(a.moe_intermediate_size, 32);
    cr_assert_eq(a.max_model_len, 204800);
    cr_assert_eq(a.quant.n_layers, 4 + 3);
}

Test(fixtures, qwen2_use_sliding_window_max_window_layers)
{
    ModelArch a = fixture("qwen2-sliding.json");
    cr_assert_eq(a.sliding_window, 4096);
    for (uint32_t i = 0; i < 4; i++)
        cr_assert_eq(a.layer_sliding[i], i >= 2, "layer %u", i);
    cr_assert(a.tie_word_embeddings);
}

Test(fixtures, mistral_sliding_window_every_layer)
{
    ModelArch a = fixture("mistral-sliding.json");
    for (uint32_t i = 0; i < 4; i++)
        cr_assert(a.layer_sliding[i], "layer %u", i);
    cr_assert_eq(a.native_dtype, MODEL_WFMT_FP32);
    cr_assert_not(a.attention_bias);
}

Test(fixtures, rope_longrope_and_per_layer_parameters)
{
    cr_assert_eq(fixture("rope-longrope.json").max_model_len, 4096);
    cr_assert_eq(fixture("rope-per-layer.json").max_model_len, 8192 * 4);
}

Test(fixtures, max_model_len_rules)
{
    /* The smallest key; model_max_length wins; linear / dynamic multiply by factor; llama3 and
     * su do not. */
    static const char base[] = "{\"hidden_size\": 64, \"num_hidden_layers\": 2, "
                               "\"num_attention_heads\": 4, \"vocab_size\": 100, "
                               "\"intermediate_size\": 128, ";
    static const struct {
        const char *tail;
        uint32_t want;
    } cases[] = {
        {"\"max_position_embeddings\": 8192, \"seq_length\": 4096}", 4096},
        {"\"max_position_embeddings\": 8192, \"model_max_length\": 16384}", 16384},
        {"\"n_positions\": 1024}", 1024},
        {"\"max_position_embeddings\": 4096, \"rope_scaling\": {\"type\": \"linear\", "
         "\"factor\": 2.0}}",
         8192},
        {"\"max_position_embeddings\": 4096, \"rope_scaling\": {\"rope_type\": \"dynamic\", "
         "\"factor\": 1.5}}",
         6144},
        {"\"max_position_embeddings\": 4096, \"rope_scaling\": {\"rope_type\": \"llama3\", "
         "\"factor\": 8.0}}",
         4096},
        {"\"max_position_embeddings\": 4096, \"rope_scaling\": null}", 4096},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strconcat(base, cases[i].tail, NULL);
        cr_assert_eq(load_ok(text).max_model_len, cases[i].want, "%s", cases[i].tail);
    }
}

/* ---- refusals and bad input, exact messages ---- */

#define HYBRID_TAIL "; ranksim models full and sliding-window attention only; hybrid "

/* Incomplete hybrid configs (tests/model/fixtures) are read as hybrids now and name the field
 * they lack. */
Test(refusals, nemotron_h_incomplete)
{
    expect_fixture_error("nemotron-h.json", CODE_FIELD,
                         ": missing field 'intermediate_size' (required for a dense model's MLP)");
}

Test(refusals, qwen3_next_incomplete)
{
    expect_fixture_error("qwen3-next.json", CODE_FIELD,
                         ": missing field 'intermediate_size' (required for a dense model's MLP)");
    expect_fixture_error("qwen3-next-interval.json", CODE_FIELD,
                         ": missing field 'intermediate_size' (required for a dense model's MLP)");
}

/* ---- hybrid models: Nemotron-H and Qwen3-Next (issue 26) ---- */

static uint32_t count_no_ffn(const ModelArch *a)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->num_layers; i++)
        n += a->layer_no_ffn[i];
    return n;
}

Test(hybrid, nemotron_3_nano_pattern)
{
    ModelArch a = preset("nemotron-3-nano-30b-a3b");
    cr_assert(model_arch_is_hybrid(&a));
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 0, a.num_layers), 23);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_ATTENTION, 0, a.num_layers), 6);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_NONE, 0, a.num_layers), 23);
    cr_assert_eq(count_no_ffn(&a), 29);
    cr_assert_eq(count_moe(&a), 23);
    cr_assert_eq(model_arch_layer_mixer(&a, 0), MODEL_MIXER_MAMBA2);
    cr_assert_eq(model_arch_layer_mixer(&a, 5), MODEL_MIXER_ATTENTION);
    cr_assert(a.layer_moe[1] && !a.layer_moe[0] && !a.layer_moe[5]);
    cr_assert_eq(a.mamba_num_heads, 64);
    cr_assert_eq(a.mamba_head_dim, 64);
    cr_assert_eq(a.ssm_state_size, 128);
    cr_assert_eq(a.mamba_n_groups, 8);
    cr_assert(a.ssm_state_fp32 && a.mlp_ungated);
    cr_assert_eq(a.shared_expert_intermediate_size, 3712);
    cr_assert_eq(model_arch_expert_hidden(&a), 2688);
}

Test(hybrid, nemotron_3_super_latent_moe)
{
    ModelArch a = preset("nemotron-3-super-120b-a12b");
    cr_assert_eq(a.moe_latent_size, 1024);
    cr_assert_eq(model_arch_expert_hidden(&a), 1024);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 0, a.num_layers), 40);
    cr_assert_eq(a.num_nextn_predict_layers, 1);
    /* MTP layers are attention + MoE */
    cr_assert_eq(model_arch_layer_mixer(&a, a.num_layers), MODEL_MIXER_ATTENTION);
}

Test(hybrid, nemotron_ssm_cache_dtype)
{
    g_autofree char *bf16 =
        mutated("nemotron-3-nano-30b-a3b", "mamba_ssm_cache_dtype", "\"bfloat16\"");
    cr_assert_not(load_ok(bf16).ssm_state_fp32);
    g_autofree char *absent = mutated("nemotron-3-nano-30b-a3b", "mamba_ssm_cache_dtype", NULL);
    cr_assert(load_ok(absent).ssm_state_fp32, "vLLM's NemotronH default is float32");
}

Test(hybrid, nemotron_pattern_errors)
{
    expect_mutation_error("nemotron-3-nano-30b-a3b", "hybrid_override_pattern", "\"MEM\"",
                          "field 'hybrid_override_pattern': 3 letters, but num_hidden_layers is 52");
    expect_mutation_error(
        "nemotron-3-nano-30b-a3b", "hybrid_override_pattern",
        "\"MEXEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME\"",
        "field 'hybrid_override_pattern': letter 2 is 'X'; valid: 'M' (Mamba-2), '*'");
    expect_mutation_error("nemotron-3-nano-30b-a3b", "mamba_head_dim", NULL,
                          "missing field 'mamba_head_dim' (required for the Mamba-2 layers");
    expect_mutation_error("nemotron-3-nano-30b-a3b", "n_groups", "7",
                          "field 'mamba_num_heads': 64 heads do not split into 7 groups");
}

Test(hybrid, qwen3_next_layers)
{
    ModelArch a = preset("qwen3-next-80b-a3b");
    cr_assert(model_arch_is_hybrid(&a));
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_GDN, 0, a.num_layers), 36);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_ATTENTION, 0, a.num_layers), 12);
    cr_assert_eq(model_arch_layer_mixer(&a, 3), MODEL_MIXER_ATTENTION);
    cr_assert_eq(model_arch_layer_mixer(&a, 4), MODEL_MIXER_GDN);
    cr_assert_eq(count_no_ffn(&a), 0);
    cr_assert(a.attn_output_gate);
    cr_assert_eq(a.qk_norm_dim, 256);
    cr_assert_eq(a.linear_num_value_heads, 32);
    cr_assert_eq(a.linear_num_key_heads, 16);
    cr_assert_eq(a.num_nextn_predict_layers, 1, "vLLM's qwen3_next_mtp default");
    /* without layer_types: every full_attention_interval-th layer is full attention */
    g_autofree char *text = mutated("qwen3-next-80b-a3b", "layer_types", NULL);
    ModelArch b = load_ok(text);
    for (uint32_t i = 0; i < b.num_layers; i++)
        cr_assert_eq(b.layer_mixer[i], a.layer_mixer[i], "layer %u", i);
    expect_mutation_error("qwen3-next-80b-a3b", "linear_num_value_heads", "24",
                          "24 value heads are not a multiple of the 16 key heads");
}

/* Other hybrids stay refused by name. */
Test(refusals, other_hybrid_types)
{
    g_autofree char *text = mutated("qwen3-next-80b-a3b", "model_type", "\"kimi_linear\"");
    expect_field_error(text, "hybrid linear-attention models are not simulated");
}

Test(refusals, minimax_lightning_attention)
{
    expect_fixture_error("minimax-text-01.json", CODE_FIELD,
                         ": field 'attn_type_list': 3 of 4 layers are 0 (lightning attention, a "
                         "linear attention)" HYBRID_TAIL
                         "linear-attention models are not simulated");
}

Test(refusals, mamba_keys_and_model_types)
{
    expect_fixture_error("jamba.json", CODE_FIELD,
                         ": field 'mamba_d_state': a Mamba / state-space layer setting" HYBRID_TAIL
                         "Mamba / state-space models are not simulated");
    expect_fixture_error("plamo2.json", CODE_FIELD,
                         ": field 'model_type': 'plamo2' is a hybrid Mamba / linear-attention "
                         "architecture" HYBRID_TAIL
                         "Mamba / linear-attention models are not simulated");
    /* Falcon-H1 is modelled (issue 26): its Mamba-2 sizes are then required */
    expect_fixture_error("falcon-h1.json", CODE_FIELD,
                         ": missing field 'mamba_n_heads' (required for the Mamba-2 mixers of "
                         "falcon_h1)");
}

Test(refusals, unknown_vision_tower)
{
    expect_fixture_error("vision-unknown.json", CODE_FIELD,
                         ": field 'vision_config': a 'qwen2_5_vl' vision tower is not modelled; "
                         "ranksim counts Llama-4 vision towers (llama4_vision_model) only");
}

Test(refusals, truncated_json)
{
    /* Cut in the middle of a key: json-glib's wording varies by version, the place does not. */
    g_autofree char *path = fixture_path("truncated.json");
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(path, &a, &err));
    cr_assert_eq(err->code, CODE_JSON);
    g_autofree char *at = g_strconcat(path, ":", NULL);
    cr_assert(g_str_has_prefix(err->message, at), "%s", err->message);
    cr_assert(g_ascii_isdigit(err->message[strlen(at)]), "no line: %s", err->message);
    assert_has(err->message, "Parse error");
    cr_assert_null(strchr(err->message, '\n'));
    g_error_free(err);
}

Test(refusals, text_config_wrong_or_incomplete)
{
    expect_fixture_error("text-config-string.json", CODE_FIELD,
                         ": field 'text_config': expected an object (the language model's "
                         "config), got a string (\"llama4_text\")");
    expect_fixture_error("text-config-missing.json", CODE_FIELD,
                         ": missing field 'text_config.hidden_size' (required for every model)");
}

Test(refusals, wrong_types_and_values)
{
    static const char dense[] = "{\"hidden_size\": 64, \"num_hidden_layers\": 4, "
                                "\"num_attention_heads\": 4, \"vocab_size\": 100, "
                                "\"intermediate_size\": 128, ";
    static const char moe[] = "{\"hidden_size\": 64, \"num_hidden_layers\": 4, "
                              "\"num_attention_heads\": 4, \"vocab_size\": 100, "
                              "\"intermediate_size\": 128, \"num_local_experts\": 4, ";
    static const struct {
        const char *base, *tail, *after;
    } cases[] = {
        {dense,
         "\"layer_types\": [\"full_attention\", 3, \"full_attention\", "
         "\"full_attention\"]}",
         ": field 'layer_types': entry 1 is 3; valid: \"full_attention\", "
         "\"sliding_attention\", \"chunked_attention\""},
        {dense, "\"layer_types\": [\"full_attention\"]}",
         ": field 'layer_types': 1 entries, but num_hidden_layers is 4; give one per layer"},
        {dense, "\"layer_types\": \"full_attention\"}",
         ": field 'layer_types': expected a list of attention types, one per layer, got a "
         "string (\"full_attention\")"},
        {dense,
         "\"layer_types\": [\"sliding_attention\", \"full_attention\", "
         "\"full_attention\", \"full_attention\"]}",
         ": missing field 'sliding_window' (required by the 1 'sliding_attention' layers of "
         "layer_types)"},
        {dense, "\"torch_dtype\": \"int8\"}",
         ": field 'torch_dtype': a string (\"int8\") is not a checkpoint dtype; valid: "
         "\"bfloat16\", \"float16\", \"float32\""},
        {dense, "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}",
         ": field 'rope_scaling.original_max_position_embeddings': expected a positive integer "
         "(required for rope_type \"yarn\"), got nothing"},
        {dense, "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": \"2\"}}",
         ": field 'rope_scaling.factor': expected a positive number, got a string (\"2\")"},
        {dense, "\"rope_scaling\": [2]}",
         ": field 'rope_scaling': expected an object, got an array"},
        {dense, "\"quantization_config\": \"fp8\"}",
         ": field 'quantization_config': expected an object, got a string (\"fp8\")"},
        {moe, "\"experts_per_token\": \"2\"}",
         ": field 'experts_per_token': expected a positive integer, got a string (\"2\")"},
        {moe, "\"num_experts_per_tok\": 5}",
         ": field 'num_experts_per_tok': 5 exceeds num_local_experts (4)"},
        {moe, "\"num_experts_per_tok\": 1, \"mlp_only_layers\": [4]}",
         ": field 'mlp_only_layers': entry 0 is layer 4, but num_hidden_layers is 4"},
        {moe, "\"num_experts_per_tok\": 1, \"moe_layers\": [0, 9]}",
         ": field 'moe_layers': entry 1 is layer 9, but num_hidden_layers is 4"},
        {moe, "\"num_experts_per_tok\": 1, \"decoder_sparse_step\": 0}",
         ": field 'decoder_sparse_step': expected a positive integer, got 0"},
        {moe, "\"num_experts_per_tok\": 1, \"decoder_sparse_step\": 8}",
         ": no layer has experts: first_k_dense_replace 0, moe_layer_freq 1, "
         "decoder_sparse_step 8, interleave_moe_layer_step 1, moe_layers and mlp_only_layers "
         "leave all 4 layers dense"},
        {moe,
         "\"num_experts_per_tok\": 1, \"n_shared_experts\": 1, "
         "\"shared_expert_intermediate_size\": 64}",
         ": fields 'n_shared_experts', 'shared_expert_intermediate_size' and "
         "'shared_intermediate_size' each size the shared experts; give one"},
        {moe, "\"num_experts_per_tok\": 1, \"num_mtp_modules\": 99}",
         ": field 'num_mtp_modules': 99 MTP layers; at most 16 are supported"},
        {moe, "\"num_experts_per_tok\": 1, \"vision_config\": 3}",
         ": field 'vision_config': expected an object, got 3"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strconcat(cases[i].base, cases[i].tail, NULL);
        expect_error_in(text, CODE_FIELD, cases[i].after, true);
    }
    /* Mixtral-style experts with neither moe_intermediate_size nor intermediate_size. */
    expect_error_in("{\"hidden_size\": 64, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
                    "\"vocab_size\": 100, \"num_local_experts\": 4, \"num_experts_per_tok\": 1}",
                    CODE_FIELD,
                    ": missing field 'intermediate_size' (required for the experts' width when "
                    "moe_intermediate_size is absent)",
                    true);
}

/* ---- quantization hookup ---- */

Test(quant, apply_quant_json)
{
    ModelArch a = fixture("mixtral-tiny.json");
    memset(&a.quant, 0x5a, sizeof a.quant);
    GError *err = NULL;
    cr_assert(model_arch_apply_quant_json(&a, "{\"quant_method\": \"fp8\"}", "hub:x", &err), "%s",
              err ? err->message : "");
    cr_assert_eq(a.quant.n_layers, 4);
    /* A whole config.json holding a quantization_config is accepted too. */
    cr_assert(model_arch_apply_quant_json(
        &a, "{\"quantization_config\": {\"quant_method\": \"fp8\"}}", "hub:x", &err));
    ModelArch before = a;
    cr_assert_not(model_arch_apply_quant_json(&a, "{\"quant_method\": ", "hub:x", &err));
    cr_assert_eq(err->code, CODE_JSON);
    cr_assert(g_str_has_prefix(err->message, "hub:x:1:"), "%s", err->message);
    g_clear_error(&err);
    cr_assert_not(model_arch_apply_quant_json(&a, "[1]", "hub:x", &err));
    cr_assert_eq(err->code, CODE_FIELD);
    cr_assert_str_eq(err->message, "hub:x: expected a quantization_config object (with "
                                   "quant_method), got an array");
    g_clear_error(&err);
    cr_assert_eq(memcmp(&a, &before, sizeof a), 0);
}

/* A quant_model_description.json beside config.json is read (here: malformed, so its own
 * path is in the message). */
Test(quant, ascend_description_beside_config)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-arch-XXXXXX", NULL);
    g_autofree char *cfg = g_build_filename(dir, "config.json", NULL);
    g_autofree char *desc = g_build_filename(dir, "quant_model_description.json", NULL);
    g_autofree char *path = fixture_path("mixtral-tiny.json");
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    cr_assert(g_file_set_contents(cfg, text, -1, NULL));
    cr_assert(g_file_set_contents(desc, "{\"model.layers.0.self_attn.q_proj.weight\": ", -1, NULL));
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(hf_config_load_file(cfg, &a, &err));
    cr_assert_eq(err->code, CODE_JSON);
    cr_assert(g_str_has_prefix(err->message, desc), "%s", err->message);
    g_clear_error(&err);
    cr_assert(g_file_set_contents(desc, "{\"model.layers.0.self_attn.q_proj.weight\": \"W8A8\"}",
                                  -1, NULL));
    cr_assert(hf_config_load_file(cfg, &a, &err), "%s", err ? err->message : "");
    cr_assert_eq(a.quant.n_layers, 4);
    cr_assert_eq(g_unlink(desc), 0);
    cr_assert_eq(g_unlink(cfg), 0);
    cr_assert_eq(g_rmdir(dir), 0);
}

/* Step-3.5-Flash: its own names for KV heads, experts and shared experts, MoE layers as a
 * comma-separated string, 96 heads on sliding layers (attention_other_setting), head-wise
 * attention gates. */
Test(presets, step35_per_layer_heads_and_names)
{
    ModelArch a = preset("step-3.5-flash");
    cr_assert_eq(a.num_heads, 64);
    cr_assert_eq(a.num_kv_heads, 8);
    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 288);
    cr_assert_eq(a.num_experts_per_tok, 8);
    cr_assert_eq(a.shared_expert_intermediate_size, 1280);
    cr_assert_not(model_arch_layer_is_moe(&a, 2));
    cr_assert(model_arch_layer_is_moe(&a, 3));
    cr_assert(a.attn_head_gate);
    cr_assert_not(a.layer_sliding[0]);
    cr_assert(a.layer_sliding[1]);
    cr_assert_eq(model_arch_layer_heads(&a, 0), 64);
    cr_assert_eq(model_arch_layer_heads(&a, 1), 96);
    cr_assert_eq(model_arch_max_heads(&a), 96);
    /* a setting whose KV groups differ from the model's is refused, not approximated */
    GError *err = NULL;
    ModelArch b;
    cr_assert_not(model_arch_load_string(
        "{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
        "\"num_key_value_heads\": 2, \"head_dim\": 128, \"vocab_size\": 1000, "
        "\"intermediate_size\": 2048, \"sliding_window\": 64, "
        "\"layer_types\": [\"full_attention\", \"sliding_attention\"], "
        "\"attention_other_setting\": {\"attention_type\": \"sliding_attention\", "
        "\"num_attention_heads\": 12, \"num_attention_groups\": 4, \"head_dim\": 128}}",
        "s.json", &b, &err));
    cr_assert(strstr(err->message, "only the query heads may differ per layer"), "%s",
              err->message);
    g_error_free(err);
}

/* A ModelOpt checkpoint whose scheme is in hf_quant_config.json beside a config.json without
 * quantization_config (NVIDIA's layout): the experts NVFP4, the excluded modules native. */
Test(quant_files, hf_quant_config_beside_config)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(hf_config_load_file(RANKSIM_SOURCE_DIR "/tests/model/fixtures/modelopt-nvfp4/config.json",
                                   &a, &err),
              "%s", err ? err->message : "");
    cr_assert_str_eq(a.quant.method, "modelopt");
    cr_assert_eq(model_quant_format(&a.quant, 1, MODEL_ROLE_EXPERT)->kind, MODEL_WFMT_NVFP4);
    cr_assert_eq(model_quant_format(&a.quant, 1, MODEL_ROLE_ATTN_QKV)->kind, MODEL_WFMT_BF16);
    cr_assert_eq(model_quant_format(&a.quant, -1, MODEL_ROLE_LM_HEAD)->kind, MODEL_WFMT_BF16);
}

/* DeepSeek-V4.1-Flash (transformers' DeepseekV41TextConfig, the released schedule): a V4 with
 * CSA2 ratios as written, four kv sources, eight index sources, the candidate pre-filter on
 * layer 20, Engram on layers 1 and 14; the routed experts MXFP4 by quantization_config's
 * expert_dtype, the rest fp8 blocks of 32. */
Test(presets, deepseek_v4_1_flash_csa2_schedule)
{
    ModelArch a = preset("deepseek-v4.1-flash");
    cr_assert_str_eq(a.architecture, "DeepseekV41ForCausalLM");
    cr_assert(a.dsv4 && a.dsv41);
    cr_assert_not(a.dsa);
    cr_assert_eq(a.num_layers, 40);
    cr_assert_eq(a.hidden_size, 5120);
    cr_assert_eq(a.q_lora_rank, 1280);
    cr_assert_eq(a.n_routed_experts, 384);
    cr_assert_eq(a.index_n_heads, 32);
    uint32_t r0 = 0, r1 = 0, r2 = 0, kv = 0, idx = 0, eng = 0;
    for (uint32_t l = 0; l < a.num_layers; l++) {
        r0 += a.csa_ratio[l] == 0;
        r1 += a.csa_ratio[l] == 1;
        r2 += a.csa_ratio[l] == 2;
        kv += a.kv_source[l];
        idx += a.index_source[l];
        eng += a.engram[l];
        cr_assert_eq(a.compress_ratio[l], 1); /* V4's C4 / C128 paths stay off */
        cr_assert(model_arch_layer_is_moe(&a, l));
    }
    cr_assert_eq(r0, 2);
    cr_assert_eq(r2, 18);
    cr_assert_eq(r1, 20);
    cr_assert_eq(kv, 4);
    cr_assert(a.kv_source[2] && a.kv_source[20] && !a.kv_source[3]);
    cr_assert_eq(idx, 8);
    cr_assert(a.index_source[36] && !a.index_source[37]);
    cr_assert_eq(a.candidate_source, 20);
    cr_assert_eq(eng, 2);
    cr_assert(a.engram[1] && a.engram[14]);
    cr_assert_eq(a.engram_rows[14], 384016682ull);
    cr_assert_eq(a.num_hash_layers, 0);
    cr_assert_eq(fmt_of(&a, 3, MODEL_ROLE_EXPERT), MODEL_WFMT_MXFP4);
    cr_assert_eq(fmt_of(&a, 3, MODEL_ROLE_ATTN_QKV), MODEL_WFMT_FP8_BLOCK);
}

/* A compressed group must start on a kv-source layer: a schedule that does not is refused. */
Test(arch, deepseek_v4_1_group_without_kv_source_is_refused)
{
    const char *json =
        "{\"architectures\": [\"DeepseekV41ForCausalLM\"], \"model_type\": \"deepseek_v41\","
        " \"text_config\": {\"model_type\": \"deepseek_v41_text\", \"vocab_size\": 1000,"
        " \"hidden_size\": 512, \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 1, \"head_dim\": 512, \"q_lora_rank\": 128,"
        " \"qk_rope_head_dim\": 64, \"o_groups\": 2, \"o_lora_rank\": 64, \"hc_mult\": 4,"
        " \"moe_intermediate_size\": 64, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
        " \"n_shared_experts\": 1, \"index_topk\": 16, \"index_n_heads\": 4,"
        " \"index_head_dim\": 32, \"compress_ratios\": [0, 2, 2, 1],"
        " \"kv_source_layer_ids\": [3], \"index_source_layer_ids\": [3],"
        " \"engram_layer_ids\": []}}";
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(model_arch_load_string(json, "v41.json", &a, &err));
    cr_assert_not_null(err);
    cr_assert(strstr(err->message, "layer 1 starts a compressed group"), "%s", err->message);
    g_error_free(err);
}
