/* tests/src/input/test-vllm-command.c — pasted vLLM command lines (src/input/vllm-command.c) and
 * the dotted and -O forms of vllm_args_parse: an environment prefix becomes the eval config's
 * env, a --config file expands as vLLM's FlexibleArgumentParser expands it (booleans, lists,
 * mappings as JSON, the file's model, the command line after the file), bad files are one line
 * in vLLM's words; --speculative-config.KEY merges into one JSON object; -O.KEY is the
 * compilation config. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <string.h>

#include "../../../src/input/vllm-args.h"

/* The eval text of a command line given as one shell string. */
static char *to_eval(const char *line, GError **err)
{
    int argc = 0;
    char **argv = NULL;
    cr_assert(g_shell_parse_argv(line, &argc, &argv, NULL));
    char *text = vllm_args_command_to_eval(argc, argv, err);
    g_strfreev(argv);
    return text;
}

/* The server_args line of an eval text, its YAML single quotes undone (caller frees). */
static char *server_args_of(const char *text)
{
    const char *p = strstr(text, "server_args: '");
    cr_assert_not_null(p, "no server_args in: %s", text);
    p += strlen("server_args: '");
    GString *s = g_string_new(NULL);
    for (; *p && !(p[0] == '\'' && p[1] != '\''); p++) {
        if (p[0] == '\'' && p[1] == '\'')
            p++;
        g_string_append_c(s, *p);
    }
    return g_string_free(s, FALSE);
}

static char *write_file(const char *name, const char *text)
{
    char *dir = g_dir_make_tmp("vllm-command-XXXXXX", NULL);
    cr_assert_not_null(dir);
    char *path = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    g_free(dir);
    return path;
}

Test(vllm_command, env_prefix_becomes_env)
{
    GError *err = NULL;
    g_autofree char *t =
        to_eval("VLLM_ALL2ALL_BACKEND=deepep_low_latency VLLM_USE_DEEP_GEMM=1 vllm serve "
                "deepseek-ai/DeepSeek-V3 -tp 8",
                &err);
    cr_assert_not_null(t, "%s", err ? err->message : "");
    cr_assert(strstr(t, "model_name: 'deepseek-ai/DeepSeek-V3'"), "%s", t);
    g_autofree char *sa = server_args_of(t);
    VllmArgs *a = vllm_args_parse_line(sa, NULL, NULL, &err);
    cr_assert_not_null(a, "%s: %s", sa, err ? err->message : "");
    cr_assert_eq(a->par.tensor_parallel_size, 8);
    vllm_args_free(a);
    cr_assert(strstr(t, "\nenv:\n  VLLM_ALL2ALL_BACKEND: 'deepep_low_latency'\n"
                        "  VLLM_USE_DEEP_GEMM: '1'\n"),
              "%s", t);
    g_autofree char *u = to_eval("env CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-8B", &err);
    cr_assert_not_null(u);
    cr_assert(strstr(u, "CUDA_VISIBLE_DEVICES: '0,1'"), "%s", u);
    cr_assert_null(strstr(u, "server_args"), "no flags, no server_args: %s", u);
}

Test(vllm_command, not_a_command)
{
    GError *err = NULL;
    g_autofree char *t = to_eval("FOO=1 sglang serve x", &err);
    cr_assert_null(t);
    cr_assert(strstr(err->message, "is not a vLLM command line"), "%s", err->message);
    g_error_free(err);
}

Test(vllm_command, config_file_expands_before_the_command_line)
{
    g_autofree char *path = write_file("serve.yaml", "model: Qwen/Qwen3-8B\n"
                                                     "tensor-parallel-size: 8\n"
                                                     "enable_expert_parallel: false\n"
                                                     "enforce-eager: true\n"
                                                     "speculative-config:\n"
                                                     "  method: mtp\n"
                                                     "  num_speculative_tokens: 2\n");
    g_autofree char *line = g_strdup_printf("vllm serve --config %s -tp 2", path);
    GError *err = NULL;
    g_autofree char *t = to_eval(line, &err);
    cr_assert_not_null(t, "%s", err ? err->message : "");
    cr_assert(strstr(t, "model_name: 'Qwen/Qwen3-8B'"), "%s", t);
    g_autofree char *sa = server_args_of(t);
    cr_assert(strstr(sa, "'--no-enable_expert_parallel'"), "false is --no-KEY: %s", sa);
    VllmArgs *a = vllm_args_parse_line(sa, NULL, NULL, &err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    cr_assert_eq(a->par.tensor_parallel_size, 2);
    cr_assert(a->eager);
    cr_assert_eq(a->engine.speculative_method, MODEL_SPEC_MTP);
    cr_assert_eq(a->engine.num_speculative_tokens, 2);
    vllm_args_free(a);
}

Test(vllm_command, config_file_errors_are_one_line)
{
    GError *err = NULL;
    g_autofree char *t = to_eval("vllm serve Qwen/Qwen3-8B --config flags.json", &err);
    cr_assert_null(t);
    cr_assert(strstr(err->message, "Config file must be of a yaml/yml type. json supplied"), "%s",
              err->message);
    g_clear_error(&err);
    t = to_eval("vllm serve Qwen/Qwen3-8B --config /nonexistent/serve.yaml", &err);
    cr_assert_null(t);
    cr_assert(strstr(err->message, "--config /nonexistent/serve.yaml: cannot read it"), "%s",
              err->message);
    cr_assert_null(strchr(err->message, '\n'));
    g_clear_error(&err);
    g_autofree char *bad = write_file("bad.yaml", "tensor-parallel-size: 8\n  - x: [\n");
    g_autofree char *line = g_strdup_printf("vllm serve Qwen/Qwen3-8B --config %s", bad);
    t = to_eval(line, &err);
    cr_assert_null(t);
    cr_assert(strstr(err->message, bad), "names the file: %s", err->message);
    cr_assert_null(strchr(err->message, '\n'));
    g_clear_error(&err);
    t = to_eval("vllm serve --config", &err);
    cr_assert_null(t);
    cr_assert(strstr(err->message, "--config needs a value"), "%s", err->message);
    g_clear_error(&err);
}

Test(vllm_command, dotted_speculative_config_merges)
{
    GError *err = NULL;
    VllmArgs *a = vllm_args_parse_line("--speculative-config.method mtp "
                                       "--speculative-config.num_speculative_tokens=3 -tp 4",
                                       NULL, NULL, &err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    cr_assert_eq(a->engine.speculative_method, MODEL_SPEC_MTP);
    cr_assert_eq(a->engine.num_speculative_tokens, 3);
    cr_assert_eq(a->par.tensor_parallel_size, 4);
    cr_assert_eq(a->notes->len, 0, "nothing left unread");
    vllm_args_free(a);
    a = vllm_args_parse_line("--speculative-config.num_speculative_tokens 0", NULL, NULL, &err);
    cr_assert_null(a, "0 tokens is refused like the JSON form");
    g_clear_error(&err);
}

Test(vllm_command, dash_o_key_is_the_compilation_config)
{
    GError *err = NULL;
    VllmArgs *a = vllm_args_parse_line("-O.cudagraph_mode=PIECEWISE", NULL, NULL, &err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    cr_assert(a->cudagraph_set);
    cr_assert_eq(a->engine.cudagraph_mode, MODEL_CUDAGRAPH_PIECEWISE);
    vllm_args_free(a);
    a = vllm_args_parse_line("-O0", NULL, NULL, &err);
    cr_assert_not_null(a);
    cr_assert_eq(a->opt_level, 0);
    vllm_args_free(a);
}
