/* tests/src/run/test-sweep-variants.c — the sweep's variants (src/run/sweep.h) without the
 * command: the axes and their cross product against a naive nested loop, labels, the text each
 * variant stores, and a varied workload applied through the loader's extras (the file's text is
 * never edited). */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/run/sweep.h"

static GPtrArray *axes(char **varies, char **zips, guint *n)
{
    g_autoptr(GError) err = NULL;
    GPtrArray *a = sweep_axes_parse(varies, zips, n, &err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    return a;
}

static char *axes_error(char **varies, char **zips, int code)
{
    g_autoptr(GError) err = NULL;
    guint n = 0;
    GPtrArray *a = sweep_axes_parse(varies, zips, &n, &err);
    cr_assert_null(a);
    cr_assert(g_error_matches(err, SWEEP_ERROR, code), "%s", err ? err->message : "");
    return g_strdup(err->message);
}

/* Oracle: the choice of every variant equals a nested loop over the axes, first slowest, the
 * --zip keys advancing together as the last axis. */
Test(axes, cross_product_is_a_nested_loop)
{
    char *varies[] = {"a=1,2,3", "b=x,y", NULL};
    char *zips[] = {"c=p,q", "d=r,s", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, zips, &n);
    cr_assert_eq(n, 12);
    cr_assert_eq(sweep_variant_count(v), 12);
    guint i = 0, choice[4];
    for (guint a = 0; a < 3; a++)
        for (guint b = 0; b < 2; b++)
            for (guint z = 0; z < 2; z++, i++) {
                sweep_variant_choice(v, i, choice);
                cr_assert(choice[0] == a && choice[1] == b && choice[2] == z && choice[3] == z,
                          "variant %u: %u %u %u %u", i, choice[0], choice[1], choice[2], choice[3]);
            }
}

Test(axes, kinds_and_values)
{
    char *varies[] = {" workload.prefill = 512, 633 ", "workload.decode=8:4096",
                      "engine.attention_backend=FLASHMLA_SPARSE", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, NULL, &n);
    cr_assert_eq(n, 2);
    const SweepVary *p = g_ptr_array_index(v, 0), *d = g_ptr_array_index(v, 1),
                    *s = g_ptr_array_index(v, 2);
    cr_assert_eq(p->kind, SWEEP_VARY_PREFILL);
    cr_assert_str_eq(p->key, "workload.prefill");
    cr_assert_str_eq(g_ptr_array_index(p->values, 1), "633");
    cr_assert_eq(d->kind, SWEEP_VARY_DECODE);
    cr_assert_eq(s->kind, SWEEP_VARY_SET);
    cr_assert_not(s->zip);
}

Test(axes, bad_arguments)
{
    struct {
        char *vary[3];
        char *zip[3];
        const char *msg;
    } cases[] = {
        {{"on_mismatch", NULL}, {NULL}, "expected KEY=V1,V2"},
        {{"a..b=1", NULL}, {NULL}, "not a dotted scenario key"},
        {{"a=1", "a=2", NULL}, {NULL}, "varied twice"},
        {{"a=1,,2", NULL}, {NULL}, "empty"},
        {{"a=", NULL}, {NULL}, "no values after '='"},
        {{"workload.prefill=12x", NULL}, {NULL}, "prompt length"},
        {{"workload.decode=8", NULL}, {NULL}, "BATCH:CONTEXT"},
        {{"workload.steps=1", NULL}, {NULL}, "workload.prefill"},
        {{NULL}, {"a=1,2", "b=1,2,3", NULL}, "--zip 'b=1,2,3': 3 values, but --zip a has 2"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *m = axes_error(cases[i].vary, cases[i].zip, SWEEP_ERROR_ARGUMENT);
        cr_assert(strstr(m, cases[i].msg), "case %zu: '%s' not in: %s", i, cases[i].msg, m);
    }
    char *many[] = {"a=1,2,3,4,5,6,7,8,9,10",
                    "b=1,2,3,4,5,6,7,8,9,10",
                    "c=1,2,3,4,5,6,7,8,9,10",
                    "d=1,2,3,4,5,6,7,8,9,10",
                    "e=1,2,3,4,5,6,7,8,9,10",
                    "f=1,2,3,4,5,6,7,8,9,10",
                    "g=1,2",
                    NULL};
    g_autofree char *m = axes_error(many, NULL, SWEEP_ERROR_TOO_MANY);
    cr_assert(strstr(m, "more than 1000000 variants"), "%s", m);
}

/* ---- variants loaded ---- */

static const char scenario[] = "name: t\n"
                               "model: glm-5.2\n"
                               "hardware: b200\n"
                               "parallel: {tensor_parallel_size: 1, "
                               "prefill_context_parallel_size: 4, "
                               "decode_context_parallel_size: 4}\n"
                               "engine: {attention_backend: FLASHMLA_SPARSE, max_model_len: 4096,"
                               " quantization: nvfp4, kv_cache_dtype: fp8}\n"
                               "workload:\n"
                               "  steps:\n"
                               "    - {prefill: [633]}\n"
                               "    - {decode: [633, 633]}\n";

static SweepInputs inputs(const GPtrArray *varies)
{
    return (SweepInputs){.path = "t.yaml", .text = scenario, .varies = varies};
}

static guint steps(const Scenario *sc)
{
    return sc->workload->steps->len;
}

static const ModelBatch *batch(const Scenario *sc, guint step)
{
    const ModelStep *st = g_ptr_array_index(sc->workload->steps, step);
    return g_ptr_array_index(st->per_dp, 0);
}

Test(variants, varied_prefill_goes_into_the_files_steps)
{
    char *varies[] = {"workload.prefill=512,633", "watchdog.collective_timeout_s=300", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, NULL, &n);
    SweepInputs in = inputs(v);
    g_autofree char *label = sweep_variant_label(&in, 0);
    cr_assert_str_eq(label, "workload.prefill=512, watchdog.collective_timeout_s=300");
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = sweep_variant_load(&in, 0, &err);
    cr_assert_not_null(sc, "%s", err ? err->message : "");
    cr_assert_eq(steps(sc), 2);
    cr_assert_eq(g_array_index(batch(sc, 0)->prefill, uint32_t, 0), 512);
    cr_assert_eq(batch(sc, 1)->decode->len, 2);
    cr_assert_eq(sc->collective_timeout_ns, 300 * (int64_t)1000000000);
    /* the file's text, then the variant */
    cr_assert(g_str_has_prefix(sc->text, scenario));
    cr_assert_str_eq(sc->text + strlen(scenario),
                     "# ranksim sweep variant: workload.prefill=512, "
                     "watchdog.collective_timeout_s=300\n"
                     "# applied as: --set watchdog.collective_timeout_s=300 --prefill 512 (into "
                     "the workload's steps)\n");
}

/* With --decode as a flag the varied prefill and the flag's decode are one step that replaces
 * the file's workload, as `run --prefill 512 --decode 2:633` would: the text is not edited. */
Test(variants, varied_prefill_with_flags_replaces_the_workload)
{
    char *varies[] = {"workload.prefill=512", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, NULL, &n);
    g_autoptr(GArray) decode = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t ctx[] = {633, 633, 100};
    g_array_append_vals(decode, ctx, 3);
    SweepInputs in = inputs(v);
    in.flag_decode = decode;
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = sweep_variant_load(&in, 0, &err);
    cr_assert_not_null(sc, "%s", err ? err->message : "");
    cr_assert_eq(steps(sc), 1);
    cr_assert_eq(g_array_index(batch(sc, 0)->prefill, uint32_t, 0), 512);
    cr_assert_eq(batch(sc, 0)->decode->len, 3);
    cr_assert(g_str_has_prefix(sc->text, scenario));
    cr_assert_str_eq(sc->text + strlen(scenario),
                     "# ranksim sweep variant: workload.prefill=512\n"
                     "# applied as: --prefill 512 --decode 2:633 --decode 1:100\n");
    cr_assert_eq(sc->ignored_flags->len, 0);
    cr_assert_eq(sc->override_notes->len, 1);
    cr_assert(strstr(g_ptr_array_index(sc->override_notes, 0), "replace the scenario's workload"));
}

Test(variants, a_refused_value_is_the_loaders_error)
{
    char *varies[] = {"workload.prefill=5000", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, NULL, &n);
    SweepInputs in = inputs(v);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = sweep_variant_load(&in, 0, &err);
    cr_assert_null(sc);
    cr_assert(g_error_matches(err, SCENARIO_ERROR, SCENARIO_ERROR_INVALID), "%s", err->message);
    cr_assert(strstr(err->message, "max_model_len"), "%s", err->message);
}

Test(variants, unknown_keys_are_found_before_anything_runs)
{
    char *varies[] = {"watchdog.colective_timeout_s=1,2", NULL};
    guint n = 0;
    g_autoptr(GPtrArray) v = axes(varies, NULL, &n);
    SweepInputs in = inputs(v);
    g_autoptr(GError) err = NULL;
    cr_assert_not(sweep_check_keys(&in, &err));
    cr_assert(g_error_matches(err, SWEEP_ERROR, SWEEP_ERROR_UNKNOWN_KEY));
    cr_assert(g_str_has_prefix(err->message, "--vary watchdog.colective_timeout_s: t.yaml"), "%s",
              err->message);
    cr_assert(strstr(err->message, "did you mean 'collective_timeout_s'"), "%s", err->message);
    /* a value the rules refuse is a variant, not a typo */
    char *refused[] = {"engine.attention_backend=NOPE", NULL};
    g_autoptr(GPtrArray) r = axes(refused, NULL, &n);
    in = inputs(r);
    g_autoptr(GError) err2 = NULL;
    cr_assert(sweep_check_keys(&in, &err2), "%s", err2 ? err2->message : "");
}
