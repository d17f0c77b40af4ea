/* tests/bench/gen-fr-dumps.c — a large PyTorch Flight Recorder dump set, for benchmarking the
 * FR importer on machines without python:
 *   gen-fr-dumps N OUTDIR [ENTRIES]
 * writes OUTDIR/nccl_trace_rank_<R>.json for R = 0..N-1 (N a multiple of 8), each holding the
 * last ENTRIES (default 2000, the buffer size; at most 2048) of its calls, as torch's
 * _dump_nccl_trace_json writes them (FR version 2.10: nlohmann::json, keys sorted, compact).
 * The bytes are those of `tests/data/import/make-fr-fixtures.py --big N OUTDIR`; the layout and
 * the hang are described there and in tests/data/import/README.md. Keep the two in step.
 *
 * N ranks: TP groups of 8 consecutive ranks (PG names "1".."N/8"), DP groups across them (DP
 * group j holds the ranks with TP index j, PG names after the TP ones). Each rank's ring
 * buffer holds its last 2000 of 2048 calls, TP all_reduce and DP all_gather in turn (seq
 * 25..1024 each); everything completed, except that in TP group (N/8)*3/5 the last all_reduce
 * hangs (TP rank 5 brings 17 rows, the others 16), so every rank's last DP all_gather waits. */
#include <glib.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP 8
#define CALLS 2048
#define BUFFER 2000 /* the default of ENTRIES */
#define HIDDEN 7168
#define EPOCH_NS INT64_C(1764000000000000000)
#define TIMEOUT_MS 600000
#define NCCL_VERSION "2.21.5"
#define THREAD_NAME "pt_main_thread"

static void ranks_str(GString *out, uint32_t first, uint32_t end, uint32_t step)
{
    g_string_append_c(out, '[');
    for (uint32_t r = first; r < end; r += step)
        g_string_append_printf(out, r == first ? "%" PRIu32 : ", %" PRIu32, r);
    g_string_append_c(out, ']');
}

static int64_t buffer = BUFFER; /* entries kept per rank */

static void pg_config_item(GString *out, const char *name, const char *desc, uint32_t first,
                           uint32_t end, uint32_t step)
{
    g_string_append_printf(out, "\"%s\":{\"desc\":\"%s\",\"name\":\"%s\",\"ranks\":\"", name, desc,
                           name);
    ranks_str(out, first, end, step);
    g_string_append(out, "\"}");
}

static void pg_status_item(GString *out, const char *pg_id, int64_t completed, int64_t enqueued)
{
    g_string_append_printf(out,
                           "\"%s\":{\"last_completed_collective\":\"%" PRId64
                           "\",\"last_enqueued_collective\":\"%" PRId64
                           "\",\"last_started_collective\":\"-1\"}",
                           pg_id, completed, enqueued);
}

/* One rank's dump, keys in nlohmann's (std::map) order. */
static void rank_json(GString *out, uint32_t n, uint32_t r)
{
    uint32_t ngroups = n / TP, g = r / TP, j = r % TP;
    bool in_bad = g == ngroups * 3 / 5;
    char tp_name[16], dp_name[16];
    g_snprintf(tp_name, sizeof tp_name, "%" PRIu32, 1 + g);
    g_snprintf(dp_name, sizeof dp_name, "%" PRIu32, 1 + ngroups + j);
    int64_t t0 = EPOCH_NS + (int64_t)r * 1318707 + ((int64_t)r * 7919) % 104729;
    uint64_t tid = UINT64_C(0x7F3A5C000740) + (uint64_t)r * UINT64_C(0x1000000);
    int64_t last_seq = CALLS / 2;

    g_string_truncate(out, 0);
    g_string_append(out, "{\"comm_lib_version\":\"" NCCL_VERSION "\",\"entries\":[");
    for (int64_t rec = CALLS - buffer; rec < CALLS; rec++) {
        int64_t seq = rec / 2 + 1;
        bool is_tp = rec % 2 == 0, last = seq == last_seq;
        bool done = !last || (is_tp && !in_bad);
        int64_t created = t0 + INT64_C(60000000000) + rec * 1250000 +
                          (((int64_t)r * 31 + rec * 17) % 997) * 100;
        int64_t rows_in = 4, rows_out = 4 * (int64_t)(n / TP);
        if (is_tp)
            rows_in = rows_out = last && in_bad && j == 5 ? 17 : 16;
        int64_t completed_ns =
            done ? created + 480000 + (((int64_t)r * 13 + rec) % 389) * 1000 : 0;
        if (rec > CALLS - buffer)
            g_string_append_c(out, ',');
        g_string_append_printf(
            out,
            "{\"collective_seq_id\":%" PRId64 ",\"input_dtypes\":[\"BFloat16\"],"
            "\"input_sizes\":[[%" PRId64 ",%d]],\"is_p2p\":false,\"op_id\":%" PRId64 ","
            "\"output_dtypes\":[\"BFloat16\"],\"output_sizes\":[[%" PRId64 ",%d]],"
            "\"p2p_seq_id\":0,\"pg_id\":%d,\"process_group\":[\"%s\",\"undefined\"],"
            "\"profiling_name\":\"%s\",\"record_id\":%" PRId64 ",\"retired\":%s,"
            "\"state\":\"%s\",\"thread_id\":\"%" PRIu64 "\",\"thread_name\":\"" THREAD_NAME "\","
            "\"time_created_ns\":%" PRId64 ",\"time_discovered_completed_ns\":%" PRId64 ","
            "\"time_discovered_started_ns\":0,\"timeout_ms\":%d}",
            seq, rows_in, HIDDEN, seq, rows_out, HIDDEN, is_tp ? 1 : 2, is_tp ? tp_name : dp_name,
            is_tp ? "nccl:all_reduce" : "nccl:_all_gather_base", rec, done ? "true" : "false",
            done ? "completed" : "scheduled", tid, created, completed_ns, TIMEOUT_MS);
    }
    g_string_append(out, "],\"pg_config\":{");

    /* pg_config keys sort as strings: "0" first, then the TP and DP names in string order. */
    const char *names[2] = {tp_name, dp_name};
    if (strcmp(tp_name, dp_name) > 0) {
        names[0] = dp_name;
        names[1] = tp_name;
    }
    pg_config_item(out, "0", "default_pg", 0, n, 1);
    for (int k = 0; k < 2; k++) {
        g_string_append_c(out, ',');
        if (names[k] == tp_name)
            pg_config_item(out, tp_name, "undefined", g * TP, g * TP + TP, 1);
        else
            pg_config_item(out, dp_name, "undefined", j, n, TP);
    }
    g_string_append(out, "},\"pg_status\":{");
    pg_status_item(out, "0", 1, 1);
    g_string_append_c(out, ',');
    pg_status_item(out, "1", in_bad ? last_seq - 1 : last_seq, last_seq);
    g_string_append_c(out, ',');
    pg_status_item(out, "2", last_seq - 1, last_seq);
    g_string_append(out, "},\"version\":\"2.10\"}");
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: gen-fr-dumps N OUTDIR [ENTRIES]\n");
        return 2;
    }
    if (argc == 4) {
        char *e = NULL;
        buffer = (int64_t)g_ascii_strtoll(argv[3], &e, 10);
        if (e == argv[3] || *e != '\0' || buffer < 1 || buffer > CALLS) {
            fprintf(stderr, "gen-fr-dumps: ENTRIES must be 1 to %d, not %s\n", CALLS, argv[3]);
            return 2;
        }
    }
    char *end = NULL;
    guint64 n = g_ascii_strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || n < TP || n % TP != 0 || n > (1u << 20)) {
        fprintf(stderr, "gen-fr-dumps: N must be a multiple of %d between %d and %u, not %s\n",
                TP, TP, 1u << 20, argv[1]);
        return 2;
    }
    if (g_mkdir_with_parents(argv[2], 0755) != 0) {
        fprintf(stderr, "gen-fr-dumps: cannot create %s\n", argv[2]);
        return 1;
    }
    GString *buf = g_string_sized_new(1u << 21);
    for (uint32_t r = 0; r < (uint32_t)n; r++) {
        rank_json(buf, (uint32_t)n, r);
        char base[48];
        g_snprintf(base, sizeof base, "nccl_trace_rank_%" PRIu32 ".json", r);
        g_autofree char *path = g_build_filename(argv[2], base, NULL);
        g_autoptr(GError) err = NULL;
        if (!g_file_set_contents_full(path, buf->str, (gssize)buf->len, G_FILE_SET_CONTENTS_NONE,
                                      0644, &err)) {
            fprintf(stderr, "gen-fr-dumps: %s\n", err->message);
            g_string_free(buf, TRUE);
            return 1;
        }
    }
    g_string_free(buf, TRUE);
    printf("gen-fr-dumps: %" G_GUINT64_FORMAT " dumps of %" PRId64 " entries in %s\n", n, buffer,
           argv[2]);
    return 0;
}
