/* src/input/vllm-command.c — a pasted vLLM command line as the eval config that says the same
 * (vllm_args_command_to_eval, declared in src/input/vllm-args.h).
 *
 * The forms vLLM's own docs paste, read as vLLM reads them:
 *   - an environment prefix: `VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve ...` (or
 *     `env VAR=... vllm serve`): the variables become the eval config's `env:`, which the
 *     scenario loader applies or names as not simulated (src/input/scenario-eval.c);
 *   - `vllm serve MODEL`, `vllm serve --model MODEL`, `python -m
 *     vllm.entrypoints.openai.api_server --model MODEL`;
 *   - `--config FILE.yaml`: vLLM's YAML file of flags (FlexibleArgumentParser.load_config_file,
 *     vllm/utils/argparse_utils.py): `key: true` is `--key`, `key: false` `--no-key`, a list
 *     `--key a b`, a mapping `--key '<JSON>'`, anything else `--key value`; the file's flags go
 *     before the command line's, so the command line wins (vLLM: "cli > config > defaults");
 *     the file may name the model (`model:`). The path is the user's, relative to the working
 *     directory.
 * Errors: VLLM_ARGS_ERROR_INVALID, one line "after --: ..." (the file's own errors name the
 * file, line and key, as the scenario loader's do). Costs: O(argc) plus one read and parse of a
 * --config file.
 */
#include <string.h>

#include "../util/inputfile.h"
#include "scenario-error.h"
#include "vllm-args.h"
#include "yamldoc.h"

#define MAX_CONFIG_FILE_BYTES ((gsize)1 << 20) /* a file of flags is a few hundred bytes */

/* NAME=VALUE with NAME an environment variable's name ([A-Za-z_][A-Za-z0-9_]*). */
static bool is_env_assignment(const char *t)
{
    if (!(g_ascii_isalpha(t[0]) || t[0] == '_'))
        return false;
    for (const char *c = t; *c; c++) {
        if (*c == '=')
            return c > t;
        if (!(g_ascii_isalnum(*c) || *c == '_'))
            return false;
    }
    return false;
}

static void yaml_single_quoted(GString *out, const char *v)
{
    g_string_append_c(out, '\'');
    for (const char *c = v; *c; c++) {
        if (*c == '\'')
            g_string_append_c(out, '\'');
        g_string_append_c(out, *c);
    }
    g_string_append_c(out, '\'');
}

/* A plain YAML scalar as JSON: numbers, true/false/null as they are, anything else a string
 * (what yaml.safe_load then json.dumps would give for these scalars). */
static void scalar_json(GString *out, const YamlDocNode *n)
{
    const char *t = n->text;
    if (!n->quoted) {
        char *end = NULL;
        g_ascii_strtod(t, &end);
        if (t[0] && end && *end == '\0' && !g_ascii_isalpha(t[0])) {
            g_string_append(out, t);
            return;
        }
        static const char *const words[] = {"true", "false", "null", NULL};
        g_autofree char *low = g_ascii_strdown(t, -1);
        if (g_strv_contains(words, low)) {
            g_string_append(out, low);
            return;
        }
        if (strcmp(t, "~") == 0 || t[0] == '\0') {
            g_string_append(out, "null");
            return;
        }
    }
    g_autofree char *esc = g_strescape(t, NULL);
    g_string_append_printf(out, "\"%s\"", esc);
}

/* A YAML node as JSON text (a --config mapping value handed to a JSON flag). */
static void node_json(GString *out, const YamlDocNode *n)
{
    if (n->type == YAMLDOC_SCALAR) {
        scalar_json(out, n);
        return;
    }
    bool map = n->type == YAMLDOC_MAP;
    g_string_append_c(out, map ? '{' : '[');
    for (guint i = 0; i < n->items->len; i += map ? 2 : 1) {
        if (i)
            g_string_append(out, ", ");
        if (map) {
            scalar_json(out, g_ptr_array_index(n->items, i));
            g_string_append(out, ": ");
            node_json(out, g_ptr_array_index(n->items, i + 1));
        } else {
            node_json(out, g_ptr_array_index(n->items, i));
        }
    }
    g_string_append_c(out, map ? '}' : ']');
}

/* One `key: value` of a --config file as flags appended to `flags` (vLLM's load_config_file). */
static void config_entry(GPtrArray *flags, const YamlDocNode *k, const YamlDocNode *v)
{
    const char *key = k->text;
    if (v->type == YAMLDOC_SCALAR && !v->quoted &&
        (g_ascii_strcasecmp(v->text, "true") == 0 || g_ascii_strcasecmp(v->text, "false") == 0)) {
        bool on = g_ascii_strcasecmp(v->text, "true") == 0;
        g_ptr_array_add(flags, g_strdup_printf(on ? "--%s" : "--no-%s", key));
    } else if (v->type == YAMLDOC_SEQ) {
        if (v->items->len == 0)
            return;
        g_ptr_array_add(flags, g_strdup_printf("--%s", key));
        for (guint i = 0; i < v->items->len; i++) {
            const YamlDocNode *it = g_ptr_array_index(v->items, i);
            g_autoptr(GString) s = g_string_new(NULL);
            if (it->type == YAMLDOC_SCALAR)
                g_string_append(s, it->text);
            else
                node_json(s, it);
            g_ptr_array_add(flags, g_string_free(g_steal_pointer(&s), FALSE));
        }
    } else if (v->type == YAMLDOC_MAP) {
        g_autoptr(GString) s = g_string_new(NULL);
        node_json(s, v);
        g_ptr_array_add(flags, g_strdup_printf("--%s", key));
        g_ptr_array_add(flags, g_string_free(g_steal_pointer(&s), FALSE));
    } else {
        g_ptr_array_add(flags, g_strdup_printf("--%s", key));
        g_ptr_array_add(flags, g_strdup(v->text));
    }
}

/* Reads a --config FILE into flags (char*, owned by `flags`); `model` gets the file's `model:`
 * (caller frees). False with `error` naming the file (and line and key). */
static bool load_config_file(const char *path, GPtrArray *flags, char **model, GError **error)
{
    const char *dot = strrchr(path, '.');
    if (!dot || (strcmp(dot, ".yaml") != 0 && strcmp(dot, ".yml") != 0)) {
        /* FlexibleArgumentParser.load_config_file, in its words */
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                    "after --: --config %s: Config file must be of a yaml/yml type. %s supplied; "
                    "valid: a FILE.yaml of vLLM flags such as 'tensor-parallel-size: 4'",
                    path, dot ? dot + 1 : path);
        return false;
    }
    gsize len = 0;
    g_autoptr(GError) rerr = NULL;
    g_autofree char *text = input_file_read(path, MAX_CONFIG_FILE_BYTES, &len, &rerr);
    if (!text) {
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                    "after --: --config %s: cannot read it: %s; valid: the path of a YAML file "
                    "of vLLM flags, relative to the working directory",
                    path, input_reason(rerr, path));
        return false;
    }
    g_autoptr(GError) yerr = NULL;
    static const char *const top[] = {"tensor-parallel-size", NULL};
    YamlDoc d = {.file = path, .what = "vLLM config file", .top_keys = top, .error = &yerr};
    g_autoptr(YamlDocNode) root = yamldoc_parse(&d, text, len);
    if (!root) {
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID, "%s", yerr->message);
        return false;
    }
    for (uint32_t i = 0; i < yamldoc_map_len(root); i++) {
        const YamlDocNode *k = yamldoc_map_key(root, i), *v = yamldoc_map_value(root, i);
        if (strcmp(k->text, "model") == 0 && v->type == YAMLDOC_SCALAR) {
            g_free(*model);
            *model = g_strdup(v->text);
            continue;
        }
        config_entry(flags, k, v);
    }
    return true;
}

/* The command after its environment prefix: where `vllm serve` or `python -m ...api_server`
 * starts (index into argv), -1 when it is neither. */
static int command_start(int argc, char **argv, int from, bool *api_server)
{
    if (from >= argc)
        return -1;
    g_autofree char *prog = g_path_get_basename(argv[from]);
    if (strcmp(prog, "vllm") == 0 && from + 1 < argc && strcmp(argv[from + 1], "serve") == 0) {
        *api_server = false;
        return from + 2;
    }
    if (g_str_has_prefix(prog, "python") && from + 2 < argc && strcmp(argv[from + 1], "-m") == 0 &&
        strcmp(argv[from + 2], "vllm.entrypoints.openai.api_server") == 0) {
        *api_server = true;
        return from + 3;
    }
    return -1;
}

/* The flags after the command (argv[i..argc)): --model and --config taken out. */
static bool split_flags(int argc, char **argv, int i, char **model, GPtrArray *config,
                        bool *config_given, GPtrArray *flags, GError **error)
{
    for (; i < argc; i++) {
        const char *t = argv[i];
        bool is_model = strcmp(t, "--model") == 0 || g_str_has_prefix(t, "--model=");
        bool is_config = strcmp(t, "--config") == 0 || g_str_has_prefix(t, "--config=");
        if (!is_model && !is_config) {
            g_ptr_array_add(flags, g_strdup(t));
            continue;
        }
        const char *eq = strchr(t, '=');
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || !v[0]) {
            g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                        "after --: %s needs a value; valid: %s", is_model ? "--model" : "--config",
                        is_model ? "--model MODEL" : "--config FILE.yaml");
            return false;
        }
        if (is_config && *config_given) {
            g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                        "after --: --config %s: More than one config file specified!; valid: one "
                        "--config FILE.yaml",
                        v);
            return false;
        }
        if (is_config) {
            g_autofree char *cfg_model = NULL;
            *config_given = true;
            if (!load_config_file(v, config, &cfg_model, error))
                return false;
            if (cfg_model && !*model)
                *model = g_steal_pointer(&cfg_model);
        } else if (!*model) {
            *model = g_strdup(v);
        }
    }
    return true;
}

/* The eval config's text: a comment with the command, model_name, server_args, env. */
static char *eval_text(int argc, char **argv, const char *model, GPtrArray *flags, int env_from,
                       int n_env)
{
    g_autoptr(GString) text = g_string_new("# from the command line: ");
    for (int k = 0; k < argc; k++) {
        g_autofree char *q = g_shell_quote(argv[k]);
        for (char *c = q; *c; c++)
            if (*c == '\n')
                *c = ' ';
        g_string_append_printf(text, "%s%s", k ? " " : "", q);
    }
    g_string_append(text, "\nmodel_name: ");
    yaml_single_quoted(text, model);
    if (flags->len) { /* `vllm serve MODEL` alone: vLLM's defaults, no server_args */
        g_autoptr(GString) line = g_string_new(NULL);
        for (guint i = 0; i < flags->len; i++) {
            g_autofree char *q = g_shell_quote(g_ptr_array_index(flags, i));
            g_string_append_printf(line, "%s%s", i ? " " : "", q);
        }
        g_string_append(text, "\nserver_args: ");
        yaml_single_quoted(text, line->str);
    }
    if (n_env) {
        g_string_append(text, "\nenv:");
        for (int k = env_from; k < env_from + n_env; k++) {
            const char *eq = strchr(argv[k], '=');
            g_autofree char *name = g_strndup(argv[k], (gsize)(eq - argv[k]));
            g_string_append_printf(text, "\n  %s: ", name);
            yaml_single_quoted(text, eq + 1);
        }
    }
    g_string_append_c(text, '\n');
    return g_string_free(g_steal_pointer(&text), FALSE);
}

char *vllm_args_command_to_eval(int argc, char **argv, GError **error)
{
    int i = argc >= 1 && strcmp(argv[0], "env") == 0 ? 1 : 0;
    int env_from = i, n_env = 0;
    while (i < argc && is_env_assignment(argv[i])) {
        i++;
        n_env++;
    }
    bool api_server = false;
    int start = command_start(argc, argv, i, &api_server);
    if (start < 0) {
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                    "after --: '%s' is not a vLLM command line; valid: [VAR=VALUE...] vllm serve "
                    "MODEL [FLAGS...], or python -m vllm.entrypoints.openai.api_server --model "
                    "MODEL [FLAGS...]",
                    i < argc ? argv[i]
                    : argc   ? argv[argc - 1]
                             : "");
        return NULL;
    }
    g_autofree char *model = NULL;
    if (!api_server && start < argc && argv[start][0] != '-')
        model = g_strdup(argv[start++]);
    g_autoptr(GPtrArray) config = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) cli = g_ptr_array_new_with_free_func(g_free);
    bool config_given = false;
    if (!split_flags(argc, argv, start, &model, config, &config_given, cli, error))
        return NULL;
    if (!model || !model[0]) {
        g_set_error(error, VLLM_ARGS_ERROR, VLLM_ARGS_ERROR_INVALID,
                    "after --: the vLLM command line names no model; valid: %s",
                    api_server ? "--model MODEL"
                               : "vllm serve MODEL [FLAGS...] (or model: in "
                                 "its --config file)");
        return NULL;
    }
    /* the config file's flags first, then the command line's (which win) */
    g_autoptr(GPtrArray) flags = g_ptr_array_new_with_free_func(g_free);
    for (guint k = 0; k < config->len; k++)
        g_ptr_array_add(flags, g_strdup(g_ptr_array_index(config, k)));
    for (guint k = 0; k < cli->len; k++)
        g_ptr_array_add(flags, g_strdup(g_ptr_array_index(cli, k)));
    return eval_text(argc, argv, model, flags, env_from, n_env);
}
