/* tests/src/store/test-segments.c — time lines cut into segments (src/store/store-segments.h):
 * a rank's steps of equal shape share one stored segment whatever their start times, op indexes
 * and collective sequence numbers, and every row reads back exactly — through the `rank_ops`
 * view and through store_rows_shared — with two groups' sequence numbers, a never-ending last
 * op, records that arrive out of order, and a time line without marks stored as before. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "../../../src/store/store-rows.h"
#include "../../../src/store/store-segments.h"
#include "timeline-test.h"

/* 4 ranks: group 0 = TP (all four), group 1 = ranks 0..1, group 2 = ranks 2..3. */
static SchedProgram *program4(void)
{
    SchedProgram *p = sched_program_new(4);
    int32_t all[] = {0, 1, 2, 3};
    sched_program_add_group(p, "tp", all, 4);
    sched_program_add_group(p, "lo", all, 2);
    sched_program_add_group(p, "hi", all + 2, 2);
    sched_program_name(p, "embed");
    sched_program_name(p, "attn");
    sched_program_name(p, "all_reduce");
    return p;
}

/* Step `j` of a rank: shape A (even j except 4) or B (longer attention, one more collective on
 * the rank's pair group), starting after an idle gap that grows with j. `idx`, `t` and the two
 * groups' sequence numbers carry on from step to step. */
typedef struct {
    uint64_t idx, seq_tp, seq_pair;
    int64_t t;
} Cursor;

static void step(GArray *out, uint32_t rank, uint32_t j, Cursor *c)
{
    bool b = j % 2 == 1 || j == 4;
    c->t += 100 * j; /* idle */
    int32_t pair = rank < 2 ? 1 : 2;
    uint32_t ops = b ? 7 : 5;
    for (uint32_t k = 0; k < ops; k++) {
        bool coll = k % 2 == 1;
        bool on_pair = coll && k == 5;
        int64_t dur = k == 2 ? (b ? 3000 : 2000) : 500;
        SchedRecord x = {
            .rank = rank,
            .kind = coll ? SCHED_OP_ALL_REDUCE : SCHED_OP_COMPUTE,
            .dtype = coll ? SCHED_DTYPE_BF16 : 0,
            .bound = coll ? 0 : 1,
            .flags = k == 0 ? SCHED_RECORD_SEGMENT : 0,
            .layer = k == 0 ? -1 : (int32_t)(k / 2),
            .name = k == 0 ? 0
                    : coll ? 2
                           : 1,
            .group = coll ? (on_pair ? pair : 0) : -1,
            .idx = c->idx++,
            .seq = coll ? (on_pair ? ++c->seq_pair : ++c->seq_tp) : 0,
            .count = coll ? 4096 : 0,
            .tokens = 16,
            .start_ns = c->t,
            .end_ns = c->t + dur,
        };
        c->t += dur;
        g_array_append_val(out, x);
    }
}

#define STEPS 12

/* Every rank's records, interleaved by step as an engine emits them; ranks 0..2 in step, rank 3
 * 7 ns late from step 6 on; rank 1's last op never ends. */
static GArray *records4(void)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c[4] = {{0}};
    for (uint32_t j = 0; j < STEPS; j++)
        for (uint32_t r = 0; r < 4; r++) {
            if (r == 3 && j == 6)
                c[r].t += 7;
            step(a, r, j, &c[r]);
        }
    for (guint i = a->len; i-- > 0;)
        if (g_array_index(a, SchedRecord, i).rank == 1) {
            g_array_index(a, SchedRecord, i).end_ns = -1;
            break;
        }
    return a;
}

static Store *open_tmp(void)
{
    g_autofree char *path = store_test_path("ranksim-segments-XXXXXX", "t.db");
    g_autoptr(GError) err = NULL;
    Store *s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    return s;
}

Test(segments, equal_steps_share_one_segment_and_every_row_reads_back)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program4();
    g_autoptr(GArray) recs = records4();
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_ops"), 0);
    /* ranks 0 and 2 in step (the same slots), 1 (its last op) and 3 (late) apart */
    cr_assert_eq(z.timelines, 3);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 3 * STEPS);
    /* shapes A and B; the lines' last steps differ (never ending, late) only in what they are,
     * not in a new shape: one more segment for rank 1's last step */
    cr_assert_eq(store_test_scalar(s, "SELECT count(DISTINCT segment) FROM timeline_segments"), 3);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_segments"), 5 + 7 + 7);
    /* A's two collectives are TP's; B adds one on the pair group: bases for both slots */
    cr_assert_eq(store_test_scalar(s, "SELECT max(seq) FROM timeline_segments"), 2);
    cr_assert_gt(store_test_scalar(s, "SELECT count(*) FROM timeline_part_seqs WHERE slot = 1"), 0);
}

/* The same rows through store_rows_shared (what trace and plot read). */
Test(segments, the_shared_rows_reader_expands_the_parts)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program4();
    g_autoptr(GArray) recs = records4();
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    StoreSharedRows t;
    g_autoptr(GError) err = NULL;
    cr_assert(store_rows_shared(s, id, 4, &t, &err), "%s", err ? err->message : "");
    cr_assert_not_null(t.rows);
    g_autoptr(GArray) want = g_array_copy(recs);
    qsort(want->data, want->len, sizeof(SchedRecord), by_rank_idx);
    guint i = 0;
    for (uint32_t r = 0; r < 4; r++) {
        cr_assert_geq(t.timeline[r], 0);
        const GArray *rows = g_ptr_array_index(t.rows, t.timeline[r]);
        for (guint k = 0; k < rows->len; k++, i++) {
            const StoreOpRow *x = &g_array_index(rows, StoreOpRow, k);
            const SchedRecord *w = &g_array_index(want, SchedRecord, i);
            cr_assert_eq(w->rank, r);
            /* slots: TP's group 0, then the rank's pair group (the run's outcome names no
             * groups here, so the slots are not mapped back) */
            int32_t slot = w->group < 0 ? -1 : w->group == 0 ? 0 : 1;
            cr_assert_eq(x->group, slot, "rank %u row %u", r, k);
            cr_assert_eq(x->start_ns, w->start_ns, "rank %u row %u", r, k);
            cr_assert_eq(x->end_ns, w->end_ns < 0 ? -1 : w->end_ns);
            cr_assert_eq(x->seq, w->group >= 0 ? (int64_t)w->seq : 0, "rank %u row %u", r, k);
            cr_assert_eq(x->name_id, w->name);
            cr_assert_eq(x->kind, w->kind);
        }
    }
    cr_assert_eq(i, want->len);
    store_shared_rows_clear(&t);
}

/* Records arriving out of idx order (an eager op completing after the next step began) cut
 * the line where they arrive, and the sums give them back exactly: the segmenter fed directly
 * (a line the store sorts first never comes to it out of order unless longer than its sort
 * budget), with step 1's last record after step 2's first. */
Test(segments, records_out_of_order_still_read_back_exactly)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c = {0};
    for (uint32_t j = 0; j < 6; j++)
        step(recs, 0, j, &c);
    SchedRecord *r = (SchedRecord *)(void *)recs->data;
    cr_assert_eq(r[12].flags, SCHED_RECORD_SEGMENT); /* steps of 5 and 7 records */
    SchedRecord tmp = r[11];
    r[11] = r[12];
    r[12] = tmp;
    sqlite3 *db = store_db(s);
    g_autoptr(GError) err = NULL;
    StoreSegments *seg = store_segments_new(db, "t.db", 1, &err);
    cr_assert_not_null(seg, "%s", err ? err->message : "");
    for (guint i = 0; i < recs->len; i++) {
        SchedRecord x = r[i];
        x.rank = 0; /* the line */
        cr_assert(store_segments_add(seg, &x, &err));
    }
    cr_assert(store_segments_finish(seg, &err));
    store_segments_free(seg);
    cr_assert_eq(sqlite3_exec(db,
                              "INSERT INTO rank_timelines VALUES (1, 0, 0);"
                              "INSERT INTO rank_groups VALUES (1, 0, 0, 0), (1, 0, 1, 1);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    assert_rows_are(s, 1, recs);
}

/* Without a marked record a line is stored as timeline_ops rows, as before schema 12. */
Test(segments, a_line_without_marks_is_stored_as_rows)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program4();
    g_autoptr(GArray) recs = records4();
    for (guint i = 0; i < recs->len; i++)
        g_array_index(recs, SchedRecord, i).flags = 0;
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 0);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_ops"), (int64_t)z.rows);
}

/* A hand-edited file (issue 27's promise: values read back are input): parts that name a
 * missing segment, start at INT64_MAX or move sequence numbers by INT64_MAX are read without
 * undefined behaviour (UBSan in CI), their overflowing rows skipped; parts that would expand
 * one segment into more rows than the run executed rank-ops are refused with one line. */
Test(segments, hostile_parts_are_read_as_input)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program4();
    g_autoptr(GArray) recs = records4();
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    sqlite3 *db = store_db(s);
    cr_assert_eq(sqlite3_exec(db,
                              "UPDATE timeline_parts SET start_ns = 9223372036854775807"
                              " WHERE part = 1;"
                              "UPDATE timeline_parts SET segment = 99 WHERE part = 2;"
                              "UPDATE timeline_part_seqs SET seq_base = 9223372036854775807"
                              " WHERE part = 3;"
                              "UPDATE timeline_segments SET start_ns = -9223372036854775808"
                              " WHERE idx = 4;",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    StoreSharedRows t;
    g_autoptr(GError) err = NULL;
    cr_assert(store_rows_shared(s, id, 4, &t, &err), "%s", err ? err->message : "");
    const GArray *rows = g_ptr_array_index(t.rows, t.timeline[0]);
    cr_assert_lt(rows->len, (guint)(recs->len / 4));
    store_shared_rows_clear(&t);
    /* one segment of 5,000 rows named by 100 parts: 500,000 rows, where the run says it made
     * 1,000,000 rank-ops first (within the bound), then 100,000 (beyond it) */
    cr_assert_eq(sqlite3_exec(db,
                              "WITH RECURSIVE k(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM k"
                              " WHERE i < 5099)"
                              " INSERT INTO timeline_segments(run_id, segment, idx, name_id, kind,"
                              " start_ns) SELECT 1, 0, i, 0, 0, i FROM k;"
                              "WITH RECURSIVE k(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM k"
                              " WHERE i < 1099)"
                              " INSERT INTO timeline_parts SELECT 1, 0, i, 0, i * 10000, 0 FROM k;",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE runs SET rank_ops = 1000000", NULL, NULL, NULL),
                 SQLITE_OK);
    g_clear_error(&err);
    cr_assert(store_rows_shared(s, id, 4, &t, &err), "%s", err ? err->message : "");
    store_shared_rows_clear(&t);
    cr_assert_eq(sqlite3_exec(db, "UPDATE runs SET rank_ops = 100000", NULL, NULL, NULL),
                 SQLITE_OK);
    cr_assert_not(store_rows_shared(s, id, 4, &t, &err));
    cr_assert(strstr(err->message, "more than 100000 rows"), "%s", err->message);
}

/* A statement of many rows that fails part-way (INSERT OR FAIL keeps its first rows: no
 * statement journal) leaves no row of the run: the run's transaction is rolled back whole. */
Test(segments, a_statement_failing_part_way_leaves_no_row)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program4();
    /* one step of 600 ops on each rank: segments of more rows than a statement holds (256) */
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t k = 0; k < 600; k++) {
            SchedRecord x = {.rank = r,
                             .kind = SCHED_OP_COMPUTE,
                             .flags = k == 0 ? SCHED_RECORD_SEGMENT : 0,
                             .layer = (int32_t)k,
                             .name = 1,
                             .group = -1,
                             .idx = k,
                             .start_ns = 10 * k,
                             .end_ns = 10 * k + 5 + r};
            g_array_append_val(recs, x);
        }
    cr_assert_eq(sqlite3_exec(store_db(s),
                              "CREATE TRIGGER boom BEFORE INSERT ON timeline_segments"
                              " WHEN NEW.idx = 300 BEGIN SELECT RAISE(FAIL, 'boom'); END",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    g_autoptr(GError) err = NULL;
    int64_t id = stream_run(s, p, recs, NULL, &err);
    cr_assert_lt(id, 0, "the run was stored despite the failed insert");
    cr_assert(err && strstr(err->message, "boom"), "%s", err ? err->message : "(no error)");
    static const char *const tables[] = {"runs", "timeline_segments", "timeline_parts",
                                         "rank_timelines", "names"};
    for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
        g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM %s", tables[i]);
        cr_assert_eq(store_test_scalar(s, sql), 0, "%s keeps rows", tables[i]);
    }
}
