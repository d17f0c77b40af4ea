/* src/cli/cmd-nccl-tests.c — `ranksim nccl-tests --hardware HW --op all_reduce -b 8 -e 8G -f 2
 * -g 8`: the table NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...) prints, with the
 * times ranksim's collective model predicts (net_collective_estimate, net/fabric.h), so a user
 * compares it line by line with a run on their own cluster. Exit 0, or 2 on a bad flag or a
 * hardware file that does not load (one line naming it and what is valid).
 */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd-common.h"
#include "help.h"
#include "commands.h"
#include "../input/hardware.h"
#include "../../net/fabric.h"

/* nccl-tests' data types (-d) and their sizes. */
static const struct {
    const char *name;
    unsigned size;
} dtypes[] = {{"int8", 1},    {"uint8", 1},  {"int32", 4},  {"uint32", 4},   {"int64", 8},
              {"uint64", 8},  {"half", 2},   {"float", 4},  {"double", 8},   {"bfloat16", 2},
              {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
static const char *const redops[] = {"sum", "prod", "max", "min", "avg"};

/* The ops by nccl-tests' binary name stems and ranksim's names. */
static bool op_parse(const char *s, NetCollKind *kind)
{
    if (strcmp(s, "alltoall") == 0) {
        *kind = NET_ALL_TO_ALL;
        return true;
    }
    if (strcmp(s, "barrier") == 0 || strcmp(s, "p2p") == 0)
        return false;
    return net_coll_kind_parse(s, kind);
}

/* nccl-tests' size syntax: an integer with an optional K, M or G (binary) suffix. */
static bool size_parse(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    char *end = NULL;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (end == s)
        return false;
    uint64_t mul = 1;
    if (*end) {
        switch (g_ascii_toupper(*end)) {
        case 'K':
            mul = 1ull << 10;
            break;
        case 'M':
            mul = 1ull << 20;
            break;
        case 'G':
            mul = 1ull << 30;
            break;
        default:
            return false;
        }
        if (end[1])
            return false;
    }
    if (v > (UINT64_C(1) << 50) / mul)
        return false;
    *out = v * mul;
    return true;
}

typedef struct {
    char *hardware, *op, *minb, *maxb, *dtype, *redop, *impl;
    int factor, gpus, nodes, step_inc, threads;
    char *ignored[8]; /* nccl-tests' flags about measuring: -n -w -c -a -z -G -m -N */
} Args;

static void args_clear(Args *a)
{
    g_free(a->hardware);
    g_free(a->op);
    g_free(a->minb);
    g_free(a->maxb);
    g_free(a->dtype);
    g_free(a->redop);
    g_free(a->impl);
    for (size_t i = 0; i < G_N_ELEMENTS(a->ignored); i++)
        g_free(a->ignored[i]);
}

/* nccl-tests' defaults for what the command line left out. */
static void args_defaults(Args *a)
{
    if (!a->op)
        a->op = g_strdup("all_reduce");
    if (!a->minb)
        a->minb = g_strdup("32M");
    if (!a->maxb)
        a->maxb = g_strdup("32M");
    if (!a->dtype)
        a->dtype = g_strdup("float");
    if (!a->redop)
        a->redop = g_strdup("sum");
    if (!a->impl)
        a->impl = g_strdup("nccl");
}

static int bad(const char *fmt, const char *what)
{
    cli_error(fmt, what);
    return CLI_EXIT_INVALID;
}

/* Prints the header lines nccl-tests prints before its table. */
static void print_head(const NetHardware *hw, const Args *a, uint64_t lo, uint64_t hi,
                       NetCommImpl impl)
{
    printf("# nThread 1 nGpus %d minBytes %" G_GUINT64_FORMAT " maxBytes %" G_GUINT64_FORMAT
           " step: %d(%s) warmup iters: 0 iters: 1 agg iters: 1 validation: 0 graph: 0\n",
           a->gpus, lo, hi, a->step_inc ? a->step_inc : a->factor,
           a->step_inc ? "bytes" : "factor");
    printf("#\n# ranksim: predicted by the collective model (doc/interconnect.md), not measured;"
           " hardware %s, impl %s\n#\n# Using devices\n",
           hw->name, net_comm_impl_name(impl));
    for (int r = 0; r < a->gpus * a->nodes; r++)
        printf("#  Rank %2d Group  0 Pid %6d on %10s%d device %2d [simulated] %s\n", r, 0, "node",
               r / a->gpus, r % a->gpus, hw->name);
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place   "
           "       \n",
           "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
           "");
}

/* nccl-tests' time column: two decimals below 100 us, one below 10 ms, none above. */
static void fmt_time(char *buf, size_t n, double us)
{
    g_snprintf(buf, n, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

static int validate(Args *a, NetCollKind *kind, unsigned *tsize, NetCommImpl *impl, uint64_t *lo,
                    uint64_t *hi)
{
    if (!a->hardware)
        return bad("nccl-tests: missing --hardware%s (a preset, see 'ranksim list hardware', or "
                   "a YAML file)",
                   "");
    if (!op_parse(a->op, kind))
        return bad("--op %s: valid: all_reduce, all_gather, reduce_scatter, alltoall, broadcast",
                   a->op);
    if (!size_parse(a->minb, lo))
        return bad("-b %s: valid: a size in bytes with an optional K, M or G suffix (8, 1K, 8M)",
                   a->minb);
    if (!size_parse(a->maxb, hi))
        return bad("-e %s: valid: a size in bytes with an optional K, M or G suffix (8, 1K, 8G)",
                   a->maxb);
    if (*hi < *lo)
        return bad("-e %s: valid: a size at least -b's", a->maxb);
    if (a->step_inc == 0 && (a->factor < 2 || a->factor > 1024)) {
        g_autofree char *v = g_strdup_printf("%d", a->factor);
        return bad("-f %s: valid: an integer factor from 2 to 1024", v);
    }
    if (a->step_inc < 0) {
        g_autofree char *v = g_strdup_printf("%d", a->step_inc);
        return bad("-i %s: valid: a positive byte increment (0 = use -f)", v);
    }
    if (a->gpus < 1 || a->gpus > 1024) {
        g_autofree char *v = g_strdup_printf("%d", a->gpus);
        return bad("-g %s: valid: 1..1024 GPUs per node", v);
    }
    if (a->threads < 1 || a->threads > 1024) {
        g_autofree char *v = g_strdup_printf("%d", a->threads);
        return bad("-t %s: valid: 1..1024 threads (each with -g GPUs)", v);
    }
    a->gpus *= a->threads; /* nccl-tests: nThreads x nGpus devices per process */
    a->threads = 1;
    if (a->nodes < 1 || a->nodes > 65536) {
        g_autofree char *v = g_strdup_printf("%d", a->nodes);
        return bad("--nodes %s: valid: 1..65536 nodes", v);
    }
    *tsize = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++)
        if (strcmp(a->dtype, dtypes[i].name) == 0)
            *tsize = dtypes[i].size;
    if (!*tsize)
        return bad("-d %s: valid: int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                   "bfloat16, fp8_e4m3, fp8_e5m2",
                   a->dtype);
    bool op_ok = false;
    for (size_t i = 0; i < G_N_ELEMENTS(redops); i++)
        op_ok |= strcmp(a->redop, redops[i]) == 0;
    if (!op_ok)
        return bad("-o %s: valid: sum, prod, max, min, avg", a->redop);
    if (!net_comm_impl_parse(a->impl, impl))
        return bad("--impl %s: valid: nccl, custom", a->impl);
    return CLI_EXIT_OK;
}

/* One line of the table; returns its busbw for the average. */
static bool print_row(const NetHardware *hw, NetCollKind kind, uint32_t ranks, uint32_t nodes,
                      uint64_t size, unsigned tsize, const char *dtype, const char *redop,
                      NetCommImpl impl, double *busbw)
{
    /* nccl-tests rounds the size down to whole elements per rank for the ops that split it */
    bool split = kind == NET_ALL_GATHER || kind == NET_REDUCE_SCATTER || kind == NET_ALL_TO_ALL;
    uint64_t count = size / tsize;
    if (split)
        count = count / ranks * ranks;
    uint64_t bytes = count * tsize;
    NetCollEstimate e;
    char why[160];
    if (!net_collective_estimate(hw, kind, ranks, nodes, (double)bytes, impl, &e, why,
                                 sizeof why)) {
        cli_error("nccl-tests: %s", why);
        return false;
    }
    char t[32];
    fmt_time(t, sizeof t, e.time_us);
    bool reduce = kind == NET_ALL_REDUCE || kind == NET_REDUCE_SCATTER;
    int root = kind == NET_BROADCAST ? 0 : -1;
    printf("%12" G_GUINT64_FORMAT "  %12" G_GUINT64_FORMAT "  %8s  %6s  %6d", bytes, count, dtype,
           reduce ? redop : "none", root);
    for (int k = 0; k < 2; k++)
        printf("  %7s  %6.2f  %6.2f  %5s", t, e.algbw_gb_s, e.busbw_gb_s, "N/A");
    printf("\n");
    *busbw = e.busbw_gb_s;
    return true;
}

/* The hardware --hardware names: a preset or a file; an unknown name lists the presets. */
static int load_hardware(const Args *a, NetHardware *hw)
{
    if (!hardware_is_preset(a->hardware) && !g_file_test(a->hardware, G_FILE_TEST_EXISTS)) {
        g_autofree char *names = g_strjoinv(", ", (char **)hardware_preset_names());
        cli_error("--hardware %s: valid: a preset (%s) or a YAML file", a->hardware, names);
        return CLI_EXIT_INVALID;
    }
    g_autoptr(GError) err = NULL;
    if (!cli_input_paths_check(NULL, a->hardware, &err)) { /* no FIFO, device or folder */
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    bool ok = hardware_is_preset(a->hardware) ? hardware_load_preset(a->hardware, hw, &err)
                                              : hardware_load_file(a->hardware, hw, &err);
    if (!ok) {
        cli_error("--hardware %s: %s", a->hardware, err->message);
        return CLI_EXIT_INVALID;
    }
    if ((uint32_t)a->gpus > hw->devices_per_node) {
        cli_error("-g %d: valid: 1..%u GPUs per node (-t x -g) on %s", a->gpus,
                  hw->devices_per_node, hw->name);
        return CLI_EXIT_INVALID;
    }
    return CLI_EXIT_OK;
}

/* The header, one row per size from lo to hi, the trailer. */
static int print_table(const NetHardware *hw, const Args *a, NetCollKind kind, unsigned tsize,
                       NetCommImpl impl, uint64_t lo, uint64_t hi)
{
    uint32_t ranks = (uint32_t)a->gpus * (uint32_t)a->nodes;
    print_head(hw, a, lo, hi, impl);
    double sum = 0;
    unsigned rows = 0;
    for (uint64_t s = lo; s <= hi;) {
        double bb;
        if (!print_row(hw, kind, ranks, (uint32_t)a->nodes, s, tsize, a->dtype, a->redop, impl,
                       &bb))
            return CLI_EXIT_INVALID;
        sum += bb;
        rows++;
        uint64_t next = a->step_inc ? s + (uint64_t)a->step_inc : s * (uint64_t)a->factor;
        if (next <= s)
            break;
        s = next;
    }
    printf("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n",
           rows ? sum / rows : 0.0);
    return CLI_EXIT_OK;
}

int cli_nccl_tests(int argc, char **argv)
{
    /* string options start NULL: GOption overwrites a preset string without freeing it, so the
     * defaults are filled in after parsing (args_defaults) */
    Args a = {.factor = 2, .gpus = 1, .nodes = 1, .threads = 1};
    GOptionEntry entries[] = {
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &a.hardware,
         "The device and its interconnect: a preset (ranksim list hardware) or a YAML file", "HW"},
        {"op", 0, 0, G_OPTION_ARG_STRING, &a.op,
         "all_reduce (default), all_gather, reduce_scatter, alltoall, broadcast: the *_perf "
         "binary",
         "OP"},
        {"minbytes", 'b', 0, G_OPTION_ARG_STRING, &a.minb, "Smallest size, e.g. 8, 1K, 8M (default 32M)",
         "SIZE"},
        {"maxbytes", 'e', 0, G_OPTION_ARG_STRING, &a.maxb, "Largest size, e.g. 8G (default 32M)",
         "SIZE"},
        {"stepfactor", 'f', 0, G_OPTION_ARG_INT, &a.factor, "Multiply the size by N (default 2)", "N"},
        {"stepbytes", 'i', 0, G_OPTION_ARG_INT, &a.step_inc, "Add N bytes instead of -f", "N"},
        {"ngpus", 'g', 0, G_OPTION_ARG_INT, &a.gpus, "GPUs per node (default 1)", "N"},
        {"nodes", 0, 0, G_OPTION_ARG_INT, &a.nodes,
         "Nodes, -g GPUs (x -t threads) on each (default 1; ranksim's own option: nccl-tests "
         "runs one process per node under MPI)",
         "N"},
        {"iters", 'n', 0, G_OPTION_ARG_STRING, &a.ignored[7],
         "Ignored: one exact prediction per size (nccl-tests' iteration count)", "N"},
        {"datatype", 'd', 0, G_OPTION_ARG_STRING, &a.dtype, "float (default), half, bfloat16, int8, ...",
         "TYPE"},
        {"op_type", 'o', 0, G_OPTION_ARG_STRING, &a.redop, "sum (default), prod, max, min, avg",
         "OP"},
        {"nthreads", 't', 0, G_OPTION_ARG_INT, &a.threads,
         "Threads, each with -g GPUs (default 1): -t x -g GPUs per node", "N"},
        {"warmup_iters", 'w', 0, G_OPTION_ARG_STRING, &a.ignored[0], "Ignored: nothing is measured",
         "N"},
        {"check", 'c', 0, G_OPTION_ARG_STRING, &a.ignored[1], "Ignored", "N"},
        {"average", 'a', 0, G_OPTION_ARG_STRING, &a.ignored[2], "Ignored", "N"},
        {"blocking", 'z', 0, G_OPTION_ARG_STRING, &a.ignored[3], "Ignored", "N"},
        {"cudagraph", 'G', 0, G_OPTION_ARG_STRING, &a.ignored[4], "Ignored", "N"},
        {"agg_iters", 'm', 0, G_OPTION_ARG_STRING, &a.ignored[5], "Ignored", "N"},
        {"run_cycles", 'N', 0, G_OPTION_ARG_STRING, &a.ignored[6], "Ignored", "N"},
        {"impl", 0, 0, G_OPTION_ARG_STRING, &a.impl,
         "nccl (default), or custom: vLLM's custom all-reduce / symmetric memory where vLLM uses "
         "them for a TP all-reduce (tensor_model_parallel_all_reduce)",
         "IMPL"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- the table nccl-tests prints, predicted by ranksim");
    g_option_context_set_description(
        ctx, "Prints what NVIDIA's nccl-tests would print for OP on the hardware: size, count,\n"
             "type, redop, root, and for out-of-place and in-place the time (us), algbw and\n"
             "busbw (GB/s), with busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for\n"
             "all_gather, reduce_scatter and alltoall. Sizes are nccl-tests' (all_gather: the\n"
             "gathered output). The same flags as all_reduce_perf:\n"
             "  ranksim nccl-tests --hardware h100 --op all_reduce -b 8 -e 8G -f 2 -g 8\n"
             "--impl custom times vLLM's own TP all-reduce (custom all-reduce, then symmetric\n"
             "memory, then NCCL by size) as AIConfigurator's vLLM collector measures it.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s (try 'ranksim nccl-tests --help')", err->message);
        args_clear(&a);
        return CLI_EXIT_INVALID;
    }
    args_defaults(&a);
    NetCollKind kind;
    unsigned tsize;
    NetCommImpl impl;
    uint64_t lo, hi;
    int code = argc > 1 ? bad("nccl-tests: unexpected argument '%s'; every input is a flag",
                              argv[1])
                        : validate(&a, &kind, &tsize, &impl, &lo, &hi);
    NetHardware hw;
    if (code == CLI_EXIT_OK)
        code = load_hardware(&a, &hw);
    if (code != CLI_EXIT_OK) {
        args_clear(&a);
        return code;
    }
    code = print_table(&hw, &a, kind, tsize, impl, lo, hi);
    args_clear(&a);
    return code;
}
