/* tests/bench/bench-engine.c — `make bench`: engine throughput and memory on a synthetic
 * program: 1,024 ranks on 128 H100-like nodes, 100 repeated layers of compute mixed with TP-8
 * all-reduces inside each node and one data-parallel all-reduce per layer across all nodes
 * (8 concurrent 128-member rings sharing every node's NICs, so the contention bookkeeping
 * works on every layer).
 *
 * Without arguments it runs each configuration in a child process (so each peak RSS is its
 * own) and prints a table: rank-ops per second with --timeline none and full (full streams
 * every op into SQLite through the writer thread, as `ranksim run` does), with and without
 * contention, and peak RSS at 100 and 1,000 layers to show memory does not grow with the
 * repeat count.
 *   bench-engine --mode none|full --layers N [--ranks N] [--reps N] [--contention 0|1]
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sched/engine.h"
#include "../../src/store/store-private.h"

/* H100-like: NVLink inside a node of 8; one 400 Gb/s NIC per GPU, 8 per node, shared by every
 * flow leaving the node (net/presets/h100.yaml has the sourced figures). */
static const NetHardware bench_hw = {
    .name = "bench-h100",
    .devices_per_node = 8,
    .launch_latency_ns = 6600,
    .n_tiers = 2,
    .tiers = {{.name = "nvlink", .span_devices = 8, .bw_bytes_per_s = 450e9, .latency_ns = 600},
              {.name = "ib",
               .span_devices = 0,
               .bw_bytes_per_s = 50e9,
               .latency_ns = 2700,
               .shared_bw_bytes_per_s = 400e9}},
};

/* `distinct`: every rank gets its own compute skew, so no two ranks share a time line (the
 * store's worst case); otherwise ranks fall into 3 skew classes as TP peers would not quite. */
static SchedProgram *synthetic(uint32_t ranks, uint32_t tp, uint32_t layers, bool distinct)
{
    SchedProgram *p = sched_program_new(ranks);
    uint32_t dp = ranks / tp;
    int32_t *members = g_new(int32_t, tp);
    for (uint32_t base = 0; base < ranks; base += tp) {
        for (uint32_t i = 0; i < tp; i++)
            members[i] = (int32_t)(base + i);
        char name[32];
        g_snprintf(name, sizeof name, "tp%u", base / tp);
        sched_program_add_group(p, name, members, tp);
    }
    g_free(members);
    /* DP groups: the ranks with the same position in their TP group, one per node */
    members = g_new(int32_t, dp);
    for (uint32_t local = 0; local < tp; local++) {
        for (uint32_t i = 0; i < dp; i++)
            members[i] = (int32_t)(i * tp + local);
        char name[32];
        g_snprintf(name, sizeof name, "dp%u", local);
        sched_program_add_group(p, name, members, dp);
    }
    g_free(members);
    uint32_t dpar = sched_program_name(p, "dp_all_reduce");
    uint32_t ln = sched_program_name(p, "input_layernorm");
    uint32_t at = sched_program_name(p, "attention");
    uint32_t ar = sched_program_name(p, "tp_all_reduce");
    uint32_t pn = sched_program_name(p, "post_attention_layernorm");
    uint32_t mlp = sched_program_name(p, "mlp");
    uint32_t head = sched_program_name(p, "lm_head");
    for (uint32_t r = 0; r < ranks; r++) {
        int32_t g = (int32_t)(r / tp);
        int32_t gdp = (int32_t)(dp + r % tp);
        /* a little per-rank skew so ranks wait on each other */
        int64_t skew = distinct ? (int64_t)r * 7 : (int64_t)(r % 3) * 500;
        SchedOp ops[] = {
            sched_op_repeat(layers, 7, 0),
            sched_op_compute(ln, 4000, 256),
            sched_op_compute(at, 60000 + skew, 256),
            sched_op_collective(SCHED_OP_ALL_REDUCE, ar, g, 256 * 7168, SCHED_DTYPE_BF16),
            sched_op_compute(pn, 4000, 256),
            sched_op_compute(mlp, 90000 - skew, 256),
            sched_op_collective(SCHED_OP_ALL_REDUCE, ar, g, 256 * 7168, SCHED_DTYPE_BF16),
            sched_op_collective(SCHED_OP_ALL_REDUCE, dpar, gdp, 4096, SCHED_DTYPE_FP32),
            sched_op_compute(head, 30000, 256),
        };
        sched_program_set_ops(p, r, ops, G_N_ELEMENTS(ops));
    }
    return p;
}

static long peak_rss_kib(void)
{
    g_autofree char *status = NULL;
    if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
        return -1;
    const char *p = strstr(status, "VmHWM:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

static int one(const char *mode, uint32_t ranks, uint32_t layers, int reps, bool contention,
               bool distinct)
{
    g_autoptr(SchedProgram) p = synthetic(ranks, 8, layers, distinct);
    int64_t lines = 0;
    bool full = strcmp(mode, "full") == 0;
    g_autofree char *dir = g_dir_make_tmp("ranksim-bench-XXXXXX", NULL);
    g_autofree char *db = g_build_filename(dir, "bench.db", NULL);
    double best = 0;
    uint64_t ops = 0;
    for (int i = 0; i < reps; i++) {
        SchedConfig c = sched_config_default();
        c.timeline = full ? SCHED_TIMELINE_FULL : SCHED_TIMELINE_NONE;
        c.fabric.hw = &bench_hw;
        c.fabric.contention = contention;
        g_autoptr(GError) err = NULL;
        g_autoptr(Store) st = NULL;
        StoreRun *run = NULL;
        gint64 t0 = g_get_monotonic_time();
        if (full) {
            st = store_open(db, &err);
            StoreRunInfo info = {.name = "bench", .kind = "program", .timeline = "full"};
            run = st ? store_run_begin(st, &info, p, &err) : NULL;
            if (!run) {
                fprintf(stderr, "bench: %s\n", err->message);
                return 1;
            }
            c.record = store_run_record;
            c.record_data = run;
        }
        g_autoptr(SchedOutcome) o = sched_engine_run(p, &c);
        int64_t id = full ? store_run_finish(run, o, "ok", 0, 0, &err) : 0;
        if (id < 0) {
            fprintf(stderr, "bench: %s\n", err->message);
            return 1;
        }
        double s = (double)(g_get_monotonic_time() - t0) / 1e6;
        ops = o->rank_ops;
        if (o->failed) {
            fprintf(stderr, "bench: the synthetic program failed\n");
            return 1;
        }
        double rate = (double)o->rank_ops / s;
        if (full) {
            sqlite3_stmt *q = NULL;
            g_autofree char *sql =
                g_strdup_printf("SELECT count(DISTINCT timeline) FROM rank_timelines WHERE run_id "
                                "= %" G_GINT64_FORMAT,
                                id);
            if (sqlite3_prepare_v2(store_db(st), sql, -1, &q, NULL) == SQLITE_OK &&
                sqlite3_step(q) == SQLITE_ROW)
                lines = sqlite3_column_int64(q, 0);
            sqlite3_finalize(q);
        }
        if (rate > best)
            best = rate;
    }
    g_unlink(db);
    g_autofree char *wal = g_strconcat(db, "-wal", NULL);
    g_autofree char *shm = g_strconcat(db, "-shm", NULL);
    g_unlink(wal);
    g_unlink(shm);
    g_rmdir(dir);
    printf("%s %d %u %u %" G_GUINT64_FORMAT " %.0f %ld %" G_GINT64_FORMAT "\n", mode, contention,
           ranks, layers, ops, best, peak_rss_kib(), lines);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        const char *mode = "none";
        uint32_t ranks = 1024, layers = 100;
        int reps = 3;
        bool contention = true, distinct = false;
        for (int i = 1; i + 1 < argc; i += 2) {
            if (strcmp(argv[i], "--mode") == 0)
                mode = argv[i + 1];
            else if (strcmp(argv[i], "--layers") == 0)
                layers = (uint32_t)atoi(argv[i + 1]);
            else if (strcmp(argv[i], "--ranks") == 0)
                ranks = (uint32_t)atoi(argv[i + 1]);
            else if (strcmp(argv[i], "--reps") == 0)
                reps = atoi(argv[i + 1]);
            else if (strcmp(argv[i], "--contention") == 0)
                contention = atoi(argv[i + 1]) != 0;
            else if (strcmp(argv[i], "--distinct") == 0)
                distinct = atoi(argv[i + 1]) != 0;
        }
        return one(mode, ranks, layers, reps, contention, distinct);
    }
    struct {
        const char *mode;
        const char *contention;
        const char *layers;
        const char *reps;
        const char *distinct;
    } configs[] = {
        {"none", "0", "100", "5", "0"},  {"none", "1", "100", "5", "0"},
        {"full", "1", "100", "3", "0"},  {"full", "1", "100", "3", "1"},
        {"none", "1", "1000", "1", "0"}, {"full", "1", "1000", "1", "0"},
    };
    printf("ranksim engine benchmark: 1,024 ranks on 128 nodes, TP 8 + DP 128, 7 ops per layer "
           "(4 compute, 2 TP all-reduce, 1 cross-node DP all-reduce), best of N runs\n\n");
    printf("%-10s %-11s %7s %12s %16s %14s %10s\n", "timeline", "contention", "layers", "rank-ops",
           "rank-ops/s", "peak RSS MiB", "timelines");
    for (size_t i = 0; i < G_N_ELEMENTS(configs); i++) {
        char *args[] = {argv[0],
                        "--mode",
                        (char *)configs[i].mode,
                        "--contention",
                        (char *)configs[i].contention,
                        "--layers",
                        (char *)configs[i].layers,
                        "--reps",
                        (char *)configs[i].reps,
                        "--distinct",
                        (char *)configs[i].distinct,
                        NULL};
        g_autofree char *out = NULL;
        g_autoptr(GError) err = NULL;
        int status = 0;
        if (!g_spawn_sync(NULL, args, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status,
                          &err) ||
            status != 0) {
            fprintf(stderr, "bench: child failed: %s\n", err ? err->message : "exit status");
            return 1;
        }
        char mode[16];
        int cont;
        unsigned r, l;
        unsigned long long ops;
        double rate;
        long rss, lines;
        if (sscanf(out, "%15s %d %u %u %llu %lf %ld %ld", mode, &cont, &r, &l, &ops, &rate, &rss,
                   &lines) != 8) {
            fprintf(stderr, "bench: cannot parse '%s'\n", out);
            return 1;
        }
        g_autofree char *tl = lines ? g_strdup_printf("%ld", lines) : g_strdup("-");
        printf("%-10s %-11s %7u %12llu %16.0f %14.1f %10s\n", mode, cont ? "on" : "off", l, ops,
               rate, rss / 1024.0, tl);
    }
    printf("\ntargets: >= 5,000,000 rank-ops/s with timeline none, >= 3,000,000 with full "
           "(shared time lines; the all-distinct row is the store's worst case); contention on "
           "within 20%% of off; peak RSS flat from 100 to 1,000 layers.\n");
    return 0;
}
