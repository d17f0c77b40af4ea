/* tests/model/test-arch.c — the model architecture loader: every preset loads with the figures
 * of shared/reference/models.md (golden figures), the embedded presets equal the files in
 * model/presets/, structure is detected from fields (MLA, DSA, IndexShare, MoE, dense GQA), and
 * bad configs give one MODEL_ARCH_ERROR naming the file and the field. Bad configs are written
 * to temporary folders (g_dir_make_tmp) and loaded as files; most are a preset with one field
 * changed. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "../../model/arch.h"

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
    *ok = model_arch_load_file(path, out, err);
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
    cr_assert_eq(memcmp(&a, &v32, sizeof a), 0);
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

/* Every listed name loads, and the embedded preset equals the file in model/presets/. */
Test(presets, names_and_files_agree)
{
    g_auto(GStrv) names = g_strsplit(model_arch_preset_names(), ", ", -1);
    cr_assert_eq(g_strv_length(names), 6);
    static const char *const want[] = {"glm-5",       "glm-5.2",       "deepseek-v3.2",
                                       "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b"};
    for (guint i = 0; names[i]; i++) {
        cr_assert_str_eq(names[i], want[i]);
        ModelArch embedded = preset(names[i]);
        ModelArch file;
        GError *err = NULL;
        g_autofree char *path = preset_path(names[i]);
        cr_assert(model_arch_load_file(path, &file, &err), "%s", err ? err->message : "");
        cr_assert_str_eq(file.name, names[i]);
        cr_assert_eq(memcmp(&embedded, &file, sizeof file), 0, "%s differs", names[i]);
    }
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

Test(errors, missing_file)
{
    g_autofree char *path =
        g_strdup_printf("%s/model/presets/no-such-model.json", RANKSIM_SOURCE_DIR);
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(model_arch_load_file(path, &a, &err));
    cr_assert_eq(err->domain, MODEL_ARCH_ERROR);
    cr_assert_eq(err->code, CODE_IO);
    g_autofree char *want =
        g_strdup_printf("%s: cannot read the model config: No such file or directory", path);
    cr_assert_str_eq(err->message, want);
    g_error_free(err);
}

Test(errors, directory)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-arch-XXXXXX", NULL);
    cr_assert_not_null(dir);
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(model_arch_load_file(dir, &a, &err));
    cr_assert_eq(g_rmdir(dir), 0);
    cr_assert_eq(err->code, CODE_IO);
    cr_assert(g_str_has_prefix(err->message, dir), "%s", err->message);
    assert_has(err->message, "Is a directory");
    g_error_free(err);
}

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

Test(errors, unsupported_layer_patterns)
{
    expect_mutation_error("glm-5", "moe_layer_freq", "2",
                          "field 'moe_layer_freq': 2 is not supported; only 1");
    expect_mutation_error("qwen3-235b-a22b", "decoder_sparse_step", "2",
                          "field 'decoder_sparse_step': 2 is not supported; only 1");
    expect_mutation_error("qwen3-235b-a22b", "mlp_only_layers", "[5]",
                          "field 'mlp_only_layers': only the first k layers may be dense");
    expect_mutation_error("qwen3-235b-a22b", "mlp_only_layers", "[0, 0]", "layer 0 breaks that");
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
