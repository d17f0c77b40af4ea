/* tests/src/input/test-mamba-flags.c — vLLM's --mamba-cache-dtype, --mamba-ssm-cache-dtype and
 * --mamba-cache-mode in a pasted `vllm serve` line (src/input/vllm-args.c): vLLM's choices are
 * taken, anything else is refused with them (the scenario's engine keys: tests/e2e/bad). */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/input/vllm-args.h"

static ModelEngine engine_after(const char *line)
{
    GError *err = NULL;
    VllmArgs *a = vllm_args_parse_line(line, NULL, NULL, &err);
    cr_assert_not_null(a, "%s: %s", line, err ? err->message : "");
    ModelParallel par;
    model_parallel_defaults(&par);
    ModelEngine e;
    model_engine_defaults(&e);
    GPtrArray *notes = g_ptr_array_new_with_free_func(g_free);
    vllm_args_apply(a, &par, &e, notes);
    g_ptr_array_unref(notes);
    vllm_args_free(a);
    return e;
}

Test(mamba_flags, vllms_choices_are_taken)
{
    ModelEngine e = engine_after("--mamba-ssm-cache-dtype float32 --mamba-cache-mode align "
                                 "--mamba-cache-dtype bfloat16 --enable-prefix-caching");
    cr_assert_eq(e.mamba_ssm_cache_dtype, MODEL_MAMBA_DTYPE_FLOAT32);
    cr_assert_eq(e.mamba_cache_dtype, MODEL_MAMBA_DTYPE_BFLOAT16);
    cr_assert_eq(e.mamba_cache_mode, MODEL_MAMBA_MODE_ALIGN);
    e = engine_after("--mamba-cache-mode=all --mamba-ssm-cache-dtype=auto");
    cr_assert_eq(e.mamba_cache_mode, MODEL_MAMBA_MODE_ALL);
    cr_assert_eq(e.mamba_ssm_cache_dtype, MODEL_MAMBA_DTYPE_AUTO);
    e = engine_after("-tp 2");
    cr_assert_eq(e.mamba_cache_mode, MODEL_MAMBA_MODE_UNSET, "not given: vLLM decides");
}

static void expect_refused(const char *line, const char *want)
{
    GError *err = NULL;
    VllmArgs *a = vllm_args_parse_line(line, NULL, NULL, &err);
    cr_assert_null(a, "%s: expected a refusal", line);
    cr_assert(strstr(err->message, want), "got: %s", err->message);
    g_error_free(err);
}

Test(mamba_flags, other_values_are_refused_with_the_choices)
{
    expect_refused("--mamba-cache-mode bogus",
                   "--mamba-cache-mode: invalid choice: 'bogus' (choose from all, align, none)");
    expect_refused("--mamba-ssm-cache-dtype fp32", "invalid choice: 'fp32' (choose from auto, "
                                                   "float32, float16, bfloat16)");
    expect_refused("--mamba-cache-dtype Float16", "--mamba-cache-dtype: invalid choice");
}
