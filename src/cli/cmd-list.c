/* src/cli/cmd-list.c — `ranksim list models|hardware|backends`: what this binary knows, from the
 * embedded presets and tables (model/presets, model/presets/catalog.json, net/presets,
 * model/backend.c). Text tables or one JSON document (--json). Reads nothing else; can fail
 * only on bad options. */
#include <stdio.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "../../model/arch.h"
#include "../../sched/json-bounded.h"
#include "../../model/backend.h"
#include "../../model/catalog.h"
#include "commands.h"
#include "cmd-common.h"
#include "help.h"
#include "../input/hardware.h"

static double gib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

/* One line describing a preset's architecture, or why ranksim refuses it. Caller frees. */
static char *arch_summary(const char *name, ModelArch *a, bool *ok)
{
    g_autoptr(GError) err = NULL;
    *ok = model_arch_load_preset(name, a, &err);
    if (!*ok) {
        const char *why = strstr(err->message, ": field ");
        return g_strdup_printf("not simulated: %s", why ? why + 2 : err->message);
    }
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%u layers, hidden %u, ", a->num_layers, a->hidden_size);
    if (a->mla)
        g_string_append_printf(s, "%s %u heads", a->dsa ? "MLA+DSA" : "MLA", a->num_heads);
    else
        g_string_append_printf(s, "GQA %u/%u heads", a->num_heads, a->num_kv_heads);
    if (model_arch_is_hybrid(a)) { /* which layers mix with state instead of attention */
        uint32_t m2 = model_arch_count_mixer(a, MODEL_MIXER_MAMBA2, 0, a->num_layers);
        uint32_t gdn = model_arch_count_mixer(a, MODEL_MIXER_GDN, 0, a->num_layers);
        uint32_t at = model_arch_count_mixer(a, MODEL_MIXER_ATTENTION, 0, a->num_layers);
        g_string_append_printf(s, " (hybrid: %u %s + %u attention layers)", m2 ? m2 : gdn,
                               m2 ? "Mamba-2" : "Gated DeltaNet", at);
    }
    if (a->moe)
        g_string_append_printf(s, ", MoE %u experts top-%u", a->n_routed_experts,
                               a->num_experts_per_tok);
    if (a->sliding_window)
        g_string_append_printf(s, ", sliding window %u", a->sliding_window);
    if (a->vision_params)
        g_string_append(s, ", vision tower");
    g_string_append_printf(s, ", max_model_len %u", a->max_model_len);
    if (a->quant.method[0])
        g_string_append_printf(s, ", %s", a->quant.method);
    return g_string_free(s, FALSE);
}

/* What a catalog entry stores the weights in: its quantization_config's method (and algorithm),
 * else the format its name says, else bf16. Caller frees. */
static char *entry_format(const ModelCatalogMatch *m)
{
    if (m->quantization_config) {
        g_autoptr(JsonParser) p = json_parser_new();
        if (sched_json_load(p, m->quantization_config, -1, NULL) &&
            JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
            JsonObject *o = json_node_get_object(json_parser_get_root(p));
            const char *method = json_object_get_string_member_with_default(o, "quant_method", "?");
            const char *algo = json_object_get_string_member_with_default(o, "quant_algo", NULL);
            return algo ? g_strdup_printf("%s %s", method, algo) : g_strdup(method);
        }
    }
    return g_strdup(m->format[0] ? m->format : "bf16");
}

static void list_models(JsonBuilder *jb)
{
    const char *const *presets = model_catalog_presets();
    if (!jb)
        printf("Model presets (model: NAME; model/presets/README.md):\n");
    else {
        json_builder_set_member_name(jb, "presets");
        json_builder_begin_array(jb);
    }
    for (size_t i = 0; presets[i]; i++) {
        ModelArch *a = g_new0(ModelArch, 1);
        bool ok = false;
        g_autofree char *sum = arch_summary(presets[i], a, &ok);
        if (jb) {
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "name");
            json_builder_add_string_value(jb, presets[i]);
            json_builder_set_member_name(jb, "simulated");
            json_builder_add_boolean_value(jb, ok);
            json_builder_set_member_name(jb, "summary");
            json_builder_add_string_value(jb, sum);
            json_builder_end_object(jb);
        } else {
            printf("  %-28s %s\n", presets[i], sum);
        }
        g_free(a);
    }
    const char *const *ids = model_catalog_ids();
    if (jb) {
        json_builder_end_array(jb);
        json_builder_set_member_name(jb, "checkpoints");
        json_builder_begin_array(jb);
    } else {
        printf("\nCheckpoints by Hub id (model_name: ID in an eval config; "
               "model/presets/catalog.json):\n");
    }
    for (size_t i = 0; ids[i]; i++) {
        ModelCatalogMatch m;
        if (!model_catalog_resolve(ids[i], &m, NULL))
            continue;
        if (jb) {
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "id");
            json_builder_add_string_value(jb, ids[i]);
            json_builder_set_member_name(jb, "preset");
            json_builder_add_string_value(jb, m.preset);
            g_autofree char *fmt = entry_format(&m);
            json_builder_set_member_name(jb, "format");
            json_builder_add_string_value(jb, fmt);
            json_builder_set_member_name(jb, "inferred");
            json_builder_add_boolean_value(jb, m.inferred);
            json_builder_end_object(jb);
        } else {
            g_autofree char *fmt = entry_format(&m);
            printf("  %-52s %-24s %s%s\n", ids[i], m.preset, fmt,
                   m.inferred ? " (scheme inferred)" : "");
        }
        model_catalog_match_clear(&m);
    }
    if (jb)
        json_builder_end_array(jb);
    else
        printf("\nOther Hub ids resolve by name rule (org, format and variant suffixes dropped; "
               "model/catalog.h).\n");
}

/* A datasheet's memory in the unit it was given in (hardware files take hbm_gb or hbm_gib):
 * "80 GB", "128 GiB"; "-" when the file gives none. Caller frees. */
static char *datasheet_memory(uint64_t bytes)
{
    if (!bytes)
        return g_strdup("-");
    if (bytes % 1000000000u == 0)
        return g_strdup_printf("%.0f GB", (double)bytes / 1e9);
    if (bytes % (1u << 30) == 0)
        return g_strdup_printf("%.0f GiB", (double)bytes / 1073741824.0);
    return g_strdup_printf("%.2f GB", (double)bytes / 1e9);
}

static void list_hardware(JsonBuilder *jb)
{
    const char *const *names = hardware_preset_names();
    if (jb) {
        json_builder_set_member_name(jb, "hardware");
        json_builder_begin_array(jb);
    } else {
        printf("Hardware presets (hardware: NAME or --hardware NAME; doc/devices.md).\n"
               "Memory: visible is what the runtime reports (GiB = 2^30 B); datasheet, the\n"
               "vendor's figure in its own unit (GB = 1e9 B).\n");
        printf("  %-12s %-5s %-13s %12s %12s %9s\n", "name", "plat.", "arch", "visible GiB",
               "datasheet", "per node");
    }
    for (size_t i = 0; names[i]; i++) {
        NetHardware hw;
        if (!jb && strcmp(hardware_preset_file(names[i]), names[i]) != 0)
            continue; /* an alias: the text names it under its preset */
        if (!hardware_load_preset(names[i], &hw, NULL))
            continue;
        if (jb) {
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "name");
            json_builder_add_string_value(jb, names[i]);
            json_builder_set_member_name(jb, "platform");
            json_builder_add_string_value(jb, net_platform_name(hw.platform));
            json_builder_set_member_name(jb, "arch");
            json_builder_add_string_value(jb, net_arch_name(hw.arch));
            json_builder_set_member_name(jb, "hbm_bytes");
            json_builder_add_int_value(jb, (gint64)hw.hbm_bytes);
            json_builder_set_member_name(jb, "hbm_datasheet_bytes");
            json_builder_add_int_value(jb, (gint64)hw.hbm_datasheet_bytes);
            json_builder_set_member_name(jb, "devices_per_node");
            json_builder_add_int_value(jb, hw.devices_per_node);
            json_builder_end_object(jb);
        } else {
            g_autofree char *ds = datasheet_memory(hw.hbm_datasheet_bytes);
            printf("  %-12s %-5s %-13s %12.2f %12s %9u\n", names[i],
                   net_platform_name(hw.platform), net_arch_name(hw.arch), gib(hw.hbm_bytes), ds,
                   hw.devices_per_node);
        }
    }
    if (jb) {
        json_builder_end_array(jb);
        return;
    }
    GString *also = g_string_new(NULL);
    for (size_t i = 0; names[i]; i++) {
        g_autofree char *a = hardware_preset_aliases(names[i]);
        if (a)
            g_string_append_printf(also, "%s%s = %s", also->len ? "; " : "", a, names[i]);
    }
    if (also->len)
        printf("\nAlso accepted: %s.\n", also->str);
    g_string_free(also, TRUE);
}

static void list_backends(JsonBuilder *jb)
{
    if (jb) {
        json_builder_set_member_name(jb, "backends");
        json_builder_begin_array(jb);
    } else {
        printf("Attention backends (engine.attention_backend or --attention-backend; "
               "doc/lowering.md):\n");
        printf("  %-24s %-12s %s\n", "name", "kind", "runs on");
    }
    for (int b = 0; b < MODEL_BACKEND_COUNT; b++) {
        char dev[96];
        model_backend_devices((ModelBackend)b, dev, sizeof dev);
        const char *fam = model_backend_family_name(model_backend_family((ModelBackend)b));
        if (jb) {
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "name");
            json_builder_add_string_value(jb, model_backend_name((ModelBackend)b));
            json_builder_set_member_name(jb, "kind");
            json_builder_add_string_value(jb, fam);
            json_builder_set_member_name(jb, "runs_on");
            json_builder_add_string_value(jb, dev);
            json_builder_end_object(jb);
        } else {
            printf("  %-24s %-12s %s\n", model_backend_name((ModelBackend)b), fam, dev);
        }
    }
    if (jb)
        json_builder_end_array(jb);
}

int cli_list(int argc, char **argv)
{
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON document instead of tables", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("models|hardware|backends");
    g_option_context_set_summary(ctx, "Lists the model presets and known checkpoints, the "
                                      "hardware presets, or the attention backends.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    static const char *const what[] = {"models", "hardware", "backends", NULL};
    if (argc != 2 || !g_strv_contains(what, argv[1])) {
        cli_error("list: name what to list; valid: models, hardware, backends");
        return CLI_EXIT_INVALID;
    }
    g_autoptr(JsonBuilder) jb = json ? json_builder_new() : NULL;
    if (jb)
        json_builder_begin_object(jb);
    if (strcmp(argv[1], "models") == 0)
        list_models(jb);
    else if (strcmp(argv[1], "hardware") == 0)
        list_hardware(jb);
    else
        list_backends(jb);
    if (jb) {
        json_builder_end_object(jb);
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        json_generator_set_root(gen, root);
        json_generator_set_pretty(gen, TRUE);
        g_autofree char *text = json_generator_to_data(gen, NULL);
        printf("%s\n", text);
    }
    return CLI_EXIT_OK;
}
