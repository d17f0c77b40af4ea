/* tests/src/store/test-timelines.c — shared time lines (src/store/store-ops.h): ranks whose
 * records are equal share one stored time line, only records no rank made before are staged,
 * and every rank's rows read back through the `rank_ops` view equal the records it made — for
 * ranks in step, a rank that diverges part-way, a rank whose records arrive in another order,
 * a p2p group met only in records, and a fan-out wider than a node's list of children. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "store-test.h"
#include "timeline-test.h"

static char *tmp_db(void)
{
    return store_test_path("ranksim-lines-XXXXXX", "t.db");
}

static int64_t scalar(Store *s, const char *sql)
{
    return store_test_scalar(s, sql);
}

/* Record `k` of a rank in step: compute and collectives on the rank's slot-1 group `g`
 * alternating, at times that depend only on k (plus `shift` ns from k = `from` on). */
static SchedRecord rec(uint32_t rank, uint64_t k, int32_t g, int64_t shift, uint64_t from)
{
    bool coll = k % 2 == 1;
    int64_t t = (int64_t)k * 1000 + (k >= from ? shift : 0);
    return (SchedRecord){
        .rank = rank,
        .kind = coll ? SCHED_OP_ALL_REDUCE : SCHED_OP_COMPUTE,
        .dtype = coll ? SCHED_DTYPE_BF16 : 0,
        .bound = coll ? 0 : 1,
        .layer = (int32_t)(k / 2),
        .name = coll ? 1 : 0,
        .group = coll ? g : -1,
        .idx = k,
        .seq = coll ? k / 2 + 1 : 0,
        .count = coll ? 64 : 0,
        .tokens = 8,
        .start_ns = t,
        .end_ns = t + 900,
    };
}

/* 8 ranks: group 0 = all, group 1 = ranks 0..3, group 2 = ranks 4..7 (each rank's slot 1);
 * group 3 (a p2p channel) is met only in records. */
static SchedProgram *program8(void)
{
    SchedProgram *p = sched_program_new(8);
    int32_t all[] = {0, 1, 2, 3, 4, 5, 6, 7};
    sched_program_add_group(p, "all", all, 8);
    sched_program_add_group(p, "lo", all, 4);
    sched_program_add_group(p, "hi", all + 4, 4);
    sched_program_name(p, "attn");
    sched_program_name(p, "tp_all_reduce");
    return p;
}

#define N 50

/* The records of program8's ranks, interleaved as an engine emits them: ranks 0..4 and 6 in
 * step (rank 6's records 10 and 11 arrive swapped), rank 5 late from record 20 on, rank 7 with
 * one more record (a send on group 3, met only in records), rank 3's last one never ending. */
static GArray *records8(void)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    for (uint64_t k = 0; k < N; k++)
        for (uint32_t r = 0; r < 8; r++) {
            uint64_t kk = r == 6 && (k == 10 || k == 11) ? 21 - k : k;
            SchedRecord x = rec(r, kk, r < 4 ? 1 : 2, r == 5 ? 7 : 0, 20);
            if (r == 3 && kk == 49)
                x.end_ns = -1;
            g_array_append_val(a, x);
        }
    SchedRecord send = rec(7, N, 3, 0, 0);
    send.kind = SCHED_OP_SEND;
    g_array_append_val(a, send);
    return a;
}

Test(timelines, equal_ranks_share_and_only_new_records_are_staged)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autoptr(SchedProgram) p = program8();
    g_autoptr(GArray) recs = records8();
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    /* ranks 0, 1, 2, 4, 6 in step; 3 (its last op never ends), 5 (late) and 7 (one more) apart */
    cr_assert_eq(scalar(s, "SELECT count(DISTINCT timeline) FROM rank_timelines"), 4);
    cr_assert_eq(scalar(s, "SELECT count(DISTINCT timeline) FROM rank_timelines"
                           " WHERE rank IN (0, 1, 2, 4, 6)"),
                 1);
    cr_assert_eq(scalar(s, "SELECT timeline FROM rank_timelines WHERE rank = 0"), 0);
    cr_assert_eq(z.records, 8 * N + 1);
    cr_assert_eq(z.timelines, 4);
    cr_assert_eq(z.rows, 4 * N + 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM timeline_ops"), (int64_t)z.rows);
    /* staged: the shared 50, rank 3's last, rank 6's 40 from its swap on, rank 5's 30 from
     * record 20 on, rank 7's send */
    cr_assert_eq(z.staged, N + 1 + 40 + 30 + 1, "staged %lu", (unsigned long)z.staged);
}

Test(timelines, a_run_in_memory_stores_the_same_rows)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_not_null(s);
    g_autoptr(SchedProgram) p = program8();
    g_autoptr(GArray) recs = records8();
    StoreTimelinesSize z;
    int64_t a = stream(s, p, recs, &z);
    StoreRunInfo info = {.name = "mem", .kind = "program", .timeline = "full"};
    SchedOutcome *o = sched_outcome_new(8);
    g_autoptr(GError) err = NULL;
    int64_t b = store_run_insert(s, &info, p, (const SchedRecord *)(void *)recs->data, recs->len,
                                 o, NULL, "ok", 0, 1.0, &err);
    sched_outcome_free(o);
    cr_assert_geq(b, 1, "%s", err ? err->message : "");
    assert_rows_are(s, b, recs);
    g_autofree char *sql = g_strdup_printf(
        "SELECT count(*) FROM (SELECT timeline, idx, layer, name_id, kind, tokens, slot, seq,"
        " count, dtype, start_ns, end_ns, bound FROM timeline_ops WHERE run_id = %" G_GINT64_FORMAT
        " EXCEPT SELECT timeline, idx, layer, name_id, kind, tokens, slot, seq, count, dtype,"
        " start_ns, end_ns, bound FROM timeline_ops WHERE run_id = %" G_GINT64_FORMAT ")",
        a, b);
    cr_assert_eq(scalar(s, sql), 0);
}

/* 40 ranks that differ from their first record: the root has more children than its list
 * holds, so most are found through the table; each rank's line is its own, and ranks 20..39
 * repeat ranks 0..19 so the table must find them. */
Test(timelines, a_wide_fan_out_goes_through_the_table)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_not_null(s);
    g_autoptr(SchedProgram) p = sched_program_new(40);
    int32_t all[40];
    for (int i = 0; i < 40; i++)
        all[i] = i;
    sched_program_add_group(p, "all", all, 40);
    sched_program_name(p, "attn");
    sched_program_name(p, "tp_all_reduce");
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    for (uint64_t k = 0; k < 10; k++)
        for (uint32_t r = 0; r < 40; r++) {
            SchedRecord x = rec(r, k, 0, (int64_t)(r % 20) + 1, 0);
            g_array_append_val(recs, x);
        }
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    cr_assert_eq(z.timelines, 20);
    cr_assert_eq(z.staged, 20 * 10);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM rank_timelines WHERE rank >= 20 AND timeline"
                           " = rank - 20"),
                 20);
}

/* The commit tells its progress: rows written, of the total stated before. */
static void on_progress(void *data, uint64_t done, uint64_t total)
{
    uint64_t *last = data;
    cr_assert_leq(done, total);
    cr_assert_gt(done, last[0]);
    last[0] = done;
    last[1] = total;
}

Test(timelines, the_commit_reports_its_progress)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_not_null(s);
    g_autoptr(SchedProgram) p = sched_program_new(2);
    sched_program_name(p, "attn");
    StoreRunInfo info = {.name = "big", .kind = "program", .timeline = "full"};
    StoreRun *r = store_run_begin(s, &info, p, NULL);
    cr_assert_not_null(r);
    uint64_t last[2] = {0, 0};
    store_run_set_progress(r, on_progress, last);
    const uint64_t n = 200000; /* rank 1 in step with rank 0 */
    for (uint64_t k = 0; k < 2 * n; k++) {
        SchedRecord x = rec((uint32_t)(k % 2), k / 2, -1, 0, 0);
        x.kind = SCHED_OP_COMPUTE;
        x.group = -1;
        store_run_record(r, &x);
    }
    StoreTimelinesSize z = store_run_size(r);
    cr_assert_eq(z.rows, n);
    cr_assert_eq(z.staged, n);
    SchedOutcome *o = sched_outcome_new(2);
    cr_assert_geq(store_run_finish(r, o, "ok", 0, 1.0, NULL), 1);
    sched_outcome_free(o);
    cr_assert_eq(last[1], n);
    cr_assert_geq(last[0], n - 65536);
}

/* Integer rows in batches (rank_timelines, rank_groups): full batches of STORE_INT_ROWS and a
 * last short one give each row its own values in its own columns; a statement that cannot be
 * prepared, or a row SQLite refuses, fails with an error and the batch closes all the same. */
Test(timelines, int_batches_bind_each_row_to_its_columns)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t(a, b, c, d CHECK (d IS NULL OR d >= 0))",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    g_autoptr(GError) err = NULL;
    StoreIntBatch b;
    cr_assert(store_int_batch_open(&b, db, "mem", "INSERT INTO t(a, b, c)", 3, "t", &err));
    const int64_t n = 2 * STORE_INT_ROWS + 3;
    for (int64_t i = 0; i < n; i++)
        cr_assert(store_int_batch_add(&b, (int64_t[]){i, 2 * i + 1, 3 * i + 2}, &err));
    cr_assert(store_int_batch_flush(&b, &err));
    store_int_batch_close(&b);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT count(*), sum(a), sum(b = 2 * a + 1 AND c = 3 * a + 2)"
                                    " FROM t",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int64(st, 0), n);
    cr_assert_eq(sqlite3_column_int64(st, 1), n * (n - 1) / 2);
    cr_assert_eq(sqlite3_column_int64(st, 2), n);
    sqlite3_finalize(st);
    /* a head naming no table */
    cr_assert_not(store_int_batch_open(&b, db, "mem", "INSERT INTO nowhere(a)", 1, "x", &err));
    cr_assert_not_null(err);
    store_int_batch_close(&b);
    g_clear_error(&err);
    /* a full batch with a refused row, then a short one */
    cr_assert(store_int_batch_open(&b, db, "mem", "INSERT INTO t(a, b, c, d)", 4, "t", &err));
    bool ok = true;
    for (int64_t i = 0; ok && i < STORE_INT_ROWS; i++)
        ok = store_int_batch_add(&b, (int64_t[]){-1, 0, 0, i == 5 ? -1 : 0}, &err);
    cr_assert_not(ok);
    cr_assert_not_null(err);
    g_clear_error(&err);
    cr_assert(store_int_batch_add(&b, (int64_t[]){-2, 0, 0, -1}, &err));
    cr_assert_not(store_int_batch_flush(&b, &err));
    cr_assert_not_null(err);
    store_int_batch_close(&b);
    sqlite3_close(db);
}
