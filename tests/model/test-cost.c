/* tests/model/test-cost.c — compute op durations: the roofline on a hand-made device (exact
 * ns for compute- and memory-bound ops, dtype fallback, rounding, a device without peaks),
 * the profile override (exact point, interpolation, clamping below, extrapolation above, ops
 * not listed) and every class of bad profile CSV, each message naming file and line. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <string.h>

#include "../../model/cost.h"
#include "../../sched/program.h"

/* 1 PFLOP/s bf16, 2 PFLOP/s fp8, no fp4, 1 TB/s HBM: with efficiencies 0.7 and 0.6 a
 * compute-bound op runs at 7e14 FLOP/s and a memory-bound one at 6e11 B/s. */
static NetHardware test_hw(void)
{
    NetHardware hw = {0};
    g_strlcpy(hw.name, "test", sizeof hw.name);
    hw.devices_per_node = 8;
    hw.peak_flops[NET_PEAK_BF16] = 1e15;
    hw.peak_flops[NET_PEAK_FP16] = 1e15;
    hw.peak_flops[NET_PEAK_FP8] = 2e15;
    hw.peak_flops[NET_PEAK_INT8] = 2e15;
    hw.peak_flops[NET_PEAK_FP4] = 0;
    hw.hbm_bytes = 80000000000ull;
    hw.hbm_bw_bytes_per_s = 1e12;
    return hw;
}

/* ---- temp files ---------------------------------------------------------------------------- */

static char *tmpdir;

static void make_tmpdir(void)
{
    GError *err = NULL;
    tmpdir = g_dir_make_tmp("ranksim-cost-XXXXXX", &err);
    cr_assert_not_null(tmpdir, "g_dir_make_tmp: %s", err ? err->message : "?");
}

static void remove_tmpdir(void)
{
    GDir *d = g_dir_open(tmpdir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(tmpdir, name, NULL);
        g_unlink(p);
    }
    if (d)
        g_dir_close(d);
    g_rmdir(tmpdir);
    g_clear_pointer(&tmpdir, g_free);
}

/* Writes `text` to a new file in the temp dir; caller frees the path. */
static char *write_csv(const char *name, const char *text)
{
    char *path = g_build_filename(tmpdir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* Loads the profile the test wrote at `path` (its bytes, named by the path as src/input names
 * them): model_cost_load_profile takes bytes, the reading is the caller's. */
static bool load_file(ModelCost *c, const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &text, &len, NULL), "%s", path);
    return model_cost_load_profile(c, text, len, path, error);
}

/* ---- roofline ------------------------------------------------------------------------------ */

Test(cost, defaults_are_the_reference_figures)
{
    ModelCostParams p;
    model_cost_params_defaults(&p);
    cr_assert_float_eq(p.compute_efficiency, 0.7, 1e-15);
    cr_assert_float_eq(p.memory_efficiency, 0.73, 1e-15);
    cr_assert_eq(p.launch_ns, 5000);
    cr_assert_eq(p.graph_launch_ns, 900);
}

/* An op replayed in a CUDA graph pays graph_launch_ns, not launch_ns; and the op says what
 * bounds it. */
Test(cost, graphed_ops_and_their_bound)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    uint8_t b = 0;
    cr_assert_eq(model_cost_op_ns_bound(c, "mlp", 1, 7e11, 1e6, NET_PEAK_BF16, true, &b),
                 1000000 + 900);
    cr_assert_eq(b, SCHED_BOUND_COMPUTE);
    cr_assert_eq(model_cost_op_ns_bound(c, "mlp", 1, 1e9, 7.3e9, NET_PEAK_BF16, false, &b),
                 10000000 + 5000);
    cr_assert_eq(b, SCHED_BOUND_MEMORY);
    cr_assert_eq(model_cost_op_ns_bound(c, "norm", 1, 10, 730, NET_PEAK_BF16, false, &b), 5001);
    cr_assert_eq(b, SCHED_BOUND_LAUNCH);
    cr_assert_eq(model_cost_op_ns_bound(c, "norm", 1, 10, 730, NET_PEAK_BF16, true, &b), 901);
    cr_assert_eq(b, SCHED_BOUND_LAUNCH);
}

Test(cost, compute_bound_op)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    /* 7e11 FLOP / 7e14 FLOP/s = 1 ms; 1 MB / 6e11 B/s = 1.67 us is hidden under it. */
    cr_assert_eq(model_cost_op_ns(c, "mlp", 128, 7e11, 1e6, NET_PEAK_BF16), 1000000 + 5000);
    /* fp8 runs at twice the peak: the same work in half the time. */
    cr_assert_eq(model_cost_op_ns(c, "mlp", 128, 7e11, 1e6, NET_PEAK_FP8), 500000 + 5000);
}

Test(cost, memory_bound_op)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    /* 7.3 GB / 7.3e11 B/s = 10 ms; 1 GFLOP / 7e14 = 1.43 us is hidden under it. */
    cr_assert_eq(model_cost_op_ns(c, "attention", 1, 1e9, 7.3e9, NET_PEAK_BF16), 10000000 + 5000);
}

Test(cost, custom_params)
{
    NetHardware hw = test_hw();
    ModelCostParams p = {.compute_efficiency = 0.5, .memory_efficiency = 1.0, .launch_ns = 0};
    g_autoptr(ModelCost) c = model_cost_new(&hw, &p);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 1, 5e11, 0, NET_PEAK_BF16), 1000000);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 1, 0, 2e9, NET_PEAK_BF16), 2000000);
}

Test(cost, missing_dtype_falls_back_to_bf16)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    cr_assert_eq(model_cost_op_ns(c, "moe_experts", 64, 7e11, 0, NET_PEAK_FP4),
                 model_cost_op_ns(c, "moe_experts", 64, 7e11, 0, NET_PEAK_BF16));
    cr_assert_eq(model_cost_op_ns(c, "moe_experts", 64, 7e11, 0, NET_PEAK_FP4), 1005000);
}

Test(cost, rounds_up_to_whole_ns_and_adds_launch)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    cr_assert_eq(model_cost_op_ns(c, "x", 1, 0, 0, NET_PEAK_BF16), 5000);
    cr_assert_eq(model_cost_op_ns(c, "x", 1, 1, 0, NET_PEAK_BF16), 5001); /* 1.4e-6 ns */
    /* 1000.5 ns of memory traffic -> 1001. */
    cr_assert_eq(model_cost_op_ns(c, "x", 1, 0, 730365, NET_PEAK_BF16), 5000 + 1001);
}

Test(cost, device_without_peaks_costs_only_the_launch)
{
    NetHardware hw = test_hw();
    memset(hw.peak_flops, 0, sizeof hw.peak_flops);
    hw.hbm_bw_bytes_per_s = 0;
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 1, 1e15, 1e12, NET_PEAK_FP8), 5000);

    /* Only the memory term left. */
    hw.hbm_bw_bytes_per_s = 1e12;
    cr_assert_eq(model_cost_op_ns(c, "mlp", 1, 1e15, 7.3e9, NET_PEAK_FP8), 10005000);
}

Test(cost, no_name_is_roofline)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    cr_assert_eq(model_cost_op_ns(c, NULL, 1, 7e11, 0, NET_PEAK_BF16), 1005000);
}

/* ---- profiles ------------------------------------------------------------------------------ */

TestSuite(profile, .init = make_tmpdir, .fini = remove_tmpdir);

static const char good_csv[] = "# measured on the lab box, 2024-05\n"
                               "\n"
                               " op , rows , seconds \r\n"
                               "attn, 256, 0.003\r\n"
                               "attn,128,0.001\n"
                               "  # a comment after the header\n"
                               "mlp,64,2e-4\n"
                               "attn,1024,0.005\n";

Test(profile, interpolates_clamps_extrapolates)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autofree char *path = write_csv("good.csv", good_csv);
    g_autoptr(GError) err = NULL;
    cr_assert(load_file(c, path, &err), "%s", err ? err->message : "");

    cr_assert(model_cost_is_profiled(c, "attn"));
    cr_assert(model_cost_is_profiled(c, "mlp"));
    cr_assert_not(model_cost_is_profiled(c, "lm_head"));

    /* Exact points (no launch added; flops and bytes ignored). */
    cr_assert_eq(model_cost_op_ns(c, "attn", 128, 1e18, 1e18, NET_PEAK_BF16), 1000000);
    cr_assert_eq(model_cost_op_ns(c, "attn", 256, 0, 0, NET_PEAK_BF16), 3000000);
    cr_assert_eq(model_cost_op_ns(c, "attn", 1024, 0, 0, NET_PEAK_BF16), 5000000);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 64, 0, 0, NET_PEAK_BF16), 200000);
    /* Between points: linear. */
    cr_assert_eq(model_cost_op_ns(c, "attn", 192, 0, 0, NET_PEAK_BF16), 2000000);
    cr_assert_eq(model_cost_op_ns(c, "attn", 640, 0, 0, NET_PEAK_BF16), 4000000);
    /* Below the first point: the first point's time. */
    cr_assert_eq(model_cost_op_ns(c, "attn", 1, 0, 0, NET_PEAK_BF16), 1000000);
    cr_assert_eq(model_cost_op_ns(c, "attn", 0, 0, 0, NET_PEAK_BF16), 1000000);
    /* Above the last point: proportional to rows. */
    cr_assert_eq(model_cost_op_ns(c, "attn", 2048, 0, 0, NET_PEAK_BF16), 10000000);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 96, 0, 0, NET_PEAK_BF16), 300000);
    /* Not in the profile: the roofline. */
    cr_assert_eq(model_cost_op_ns(c, "lm_head", 128, 7e11, 0, NET_PEAK_BF16), 1005000);
}

Test(profile, interpolation_matches_a_linear_scan)
{
    /* Oracle: many points, binary search vs the naive scan. */
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    GString *csv = g_string_new("op,rows,seconds\n");
    uint64_t rows[40];
    double secs[40];
    for (int i = 0; i < 40; i++) {
        rows[i] = 3 + (uint64_t)i * (uint64_t)(i + 1) * 5;
        secs[i] = 1e-5 * (double)(i * i % 17 + 1);
    }
    for (int i = 39; i >= 0; i--) /* unsorted on disk */
        g_string_append_printf(csv, "k,%" PRIu64 ",%.9g\n", rows[i], secs[i]);
    g_autofree char *path = write_csv("many.csv", csv->str);
    g_string_free(csv, true);
    cr_assert(load_file(c, path, NULL));

    for (uint64_t r = 0; r < rows[39] + 100; r++) {
        double want;
        if (r <= rows[0]) {
            want = secs[0];
        } else if (r >= rows[39]) {
            want = secs[39] * (double)r / (double)rows[39];
        } else {
            int i = 0;
            while (rows[i + 1] < r)
                i++;
            want = secs[i] + (secs[i + 1] - secs[i]) * (double)(r - rows[i]) /
                                 (double)(rows[i + 1] - rows[i]);
        }
        int64_t got = model_cost_op_ns(c, "k", r, 0, 0, NET_PEAK_BF16);
        cr_assert(got >= (int64_t)(want * 1e9) - 1 && got <= (int64_t)(want * 1e9) + 1,
                  "rows %" PRIu64 ": got %" PRId64 " want %.3f", r, got, want * 1e9);
    }
}

Test(profile, a_later_profile_replaces_an_op)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autofree char *a = write_csv("a.csv", good_csv);
    g_autofree char *b = write_csv("b.csv", "op,rows,seconds\nattn,100,0.002\n");
    cr_assert(load_file(c, a, NULL));
    cr_assert(load_file(c, b, NULL));
    cr_assert_eq(model_cost_op_ns(c, "attn", 100, 0, 0, NET_PEAK_BF16), 2000000);
    cr_assert_eq(model_cost_op_ns(c, "attn", 256, 0, 0, NET_PEAK_BF16), 5120000);
    cr_assert_eq(model_cost_op_ns(c, "mlp", 64, 0, 0, NET_PEAK_BF16), 200000);
}

Test(profile, header_only_is_an_empty_profile)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autofree char *p = write_csv("empty.csv", "\xEF\xBB\xBFop,rows,seconds\n# nothing yet\n");
    g_autoptr(GError) err = NULL;
    cr_assert(load_file(c, p, &err), "%s", err ? err->message : "");
    cr_assert_not(model_cost_is_profiled(c, "attn"));
}

/* Loads `text` and expects a MODEL_COST_ERROR whose message holds "FILE:LINE: " (line > 0)
 * or "FILE: " (line 0) and every string in `parts` (NULL-terminated). */
static void expect_bad(const char *text, guint line, const char *const *parts)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autofree char *ok = write_csv("ok.csv", "op,rows,seconds\nattn,128,0.001\n");
    cr_assert(load_file(c, ok, NULL));

    g_autofree char *path = write_csv("bad.csv", text);
    g_autoptr(GError) err = NULL;
    cr_assert_not(load_file(c, path, &err));
    cr_assert_not_null(err);
    cr_assert(g_error_matches(err, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE), "%s", err->message);
    g_autofree char *where =
        line ? g_strdup_printf("%s:%u: ", path, line) : g_strdup_printf("%s: ", path);
    cr_assert(g_str_has_prefix(err->message, where), "'%s' should start with '%s'", err->message,
              where);
    for (guint i = 0; parts[i]; i++)
        cr_assert(strstr(err->message, parts[i]), "'%s' should mention '%s'", err->message,
                  parts[i]);

    /* All or nothing: the earlier profile is untouched, nothing of the bad file added. */
    cr_assert_eq(model_cost_op_ns(c, "attn", 128, 0, 0, NET_PEAK_BF16), 1000000);
    cr_assert_not(model_cost_is_profiled(c, "mlp"));
}

#define BAD(text, line, ...) expect_bad(text, line, (const char *const[]){__VA_ARGS__, NULL})

Test(profile, bad_header)
{
    BAD("# comment\nop,tokens,seconds\nattn,1,1\n", 2, "bad header 'op,tokens,seconds'",
        "expected 'op,rows,seconds'");
    BAD("attn,128,0.001\n", 1, "expected 'op,rows,seconds'");
    BAD("op,rows\n", 1, "expected 'op,rows,seconds'");
    BAD("op,rows,seconds,extra\n", 1, "expected 'op,rows,seconds'");
    BAD("", 0, "no header", "op,rows,seconds");
    BAD("# only\n\n# comments\n", 0, "no header");
}

Test(profile, wrong_number_of_columns)
{
    BAD("op,rows,seconds\nattn,128\n", 2, "expected 3 columns", "got 2");
    BAD("op,rows,seconds\nmlp,64,0.1\nattn,128,0.1,x\n", 3, "expected 3 columns", "got 4");
    BAD("op,rows,seconds\nmlp\n", 2, "got 1");
}

Test(profile, not_a_number)
{
    BAD("op,rows,seconds\nmlp,64,fast\n", 2, "column 'seconds': 'fast' is not a number");
    BAD("op,rows,seconds\nmlp,lots,0.1\n", 2, "column 'rows': 'lots' is not a number");
    BAD("op,rows,seconds\nmlp,64,0.1s\n", 2, "column 'seconds': '0.1s' is not a number");
    BAD("op,rows,seconds\nmlp,64,\n", 2, "column 'seconds': empty");
    BAD("op,rows,seconds\n,64,0.1\n", 2, "column 'op': empty");
}

Test(profile, negative_or_non_finite)
{
    BAD("op,rows,seconds\nmlp,64,-0.1\n", 2, "column 'seconds': -0.1 is negative");
    BAD("op,rows,seconds\nmlp,-64,0.1\n", 2, "column 'rows': -64 is negative");
    BAD("op,rows,seconds\nmlp,64,inf\n", 2, "column 'seconds'", "not a finite number");
    BAD("op,rows,seconds\nmlp,64,nan\n", 2, "column 'seconds'", "not a finite number");
    BAD("op,rows,seconds\nmlp,64,1e999\n", 2, "column 'seconds'", "not a finite number");
    BAD("op,rows,seconds\nmlp,inf,1\n", 2, "column 'rows'", "not a finite number");
}

Test(profile, bad_rows)
{
    BAD("op,rows,seconds\nmlp,0,0.1\n", 2, "column 'rows': 0, expected a token count >= 1");
    BAD("op,rows,seconds\nmlp,1.5,0.1\n", 2, "column 'rows': 1.5 is not a whole number");
    BAD("op,rows,seconds\nmlp,1e300,0.1\n", 2, "column 'rows'", "too large");
}

Test(profile, duplicate_point)
{
    BAD("op,rows,seconds\nmlp,64,0.1\nattn,64,0.1\n\nmlp, 64 ,0.2\n", 5,
        "column 'rows': op 'mlp' already has a point at rows 64 (line 2)");
}

Test(profile, binary_file)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autofree char *path = g_build_filename(tmpdir, "nul.csv", NULL);
    cr_assert(g_file_set_contents(path, "op,rows,seconds\nmlp\0,1,1\n", 25, NULL));
    g_autoptr(GError) err = NULL;
    cr_assert_not(load_file(c, path, &err));
    cr_assert(g_error_matches(err, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE));
    cr_assert(strstr(err->message, "NUL"), "%s", err->message);
}
