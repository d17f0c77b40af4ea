/* tests/src/store/timeline-test.h — helpers the time-line tests share (test-timelines.c,
 * test-segments.c): stream records into a run, and check that every row the `rank_ops` view
 * gives equals a record. Header-only (each test is its own executable). */
#ifndef TESTS_TIMELINE_TEST_H
#define TESTS_TIMELINE_TEST_H

#include "store-test.h"

static inline int by_rank_idx(const void *pa, const void *pb)
{
    const SchedRecord *x = pa, *y = pb;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static inline int64_t col_or(sqlite3_stmt *st, int c, int64_t none)
{
    return sqlite3_column_type(st, c) == SQLITE_NULL ? none : sqlite3_column_int64(st, c);
}

/* Every row of run `id` in rank_ops equals a record of `recs`, one for one. */
static inline void assert_rows_are(Store *s, int64_t id, GArray *recs)
{
    g_autoptr(GArray) want = g_array_copy(recs);
    qsort(want->data, want->len, sizeof(SchedRecord), by_rank_idx);
    sqlite3_stmt *st = NULL;
    g_autofree char *sql = g_strdup_printf(
        "SELECT rank, idx, layer, name_id, kind, tokens, group_id, seq, count, dtype, start_ns,"
        " end_ns, bound FROM rank_ops WHERE run_id = %" G_GINT64_FORMAT " ORDER BY rank, idx",
        id);
    cr_assert_eq(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    guint i = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; i++) {
        cr_assert_lt(i, want->len, "more rows than records");
        const SchedRecord *x = &g_array_index(want, SchedRecord, i);
        bool coll = x->group >= 0;
        cr_assert_eq(sqlite3_column_int64(st, 0), x->rank);
        cr_assert_eq((uint64_t)sqlite3_column_int64(st, 1), x->idx, "rank %u", x->rank);
        cr_assert_eq(col_or(st, 2, -1), x->layer);
        cr_assert_eq(sqlite3_column_int64(st, 3), x->name);
        cr_assert_eq(sqlite3_column_int64(st, 4), x->kind);
        cr_assert_eq((uint64_t)sqlite3_column_int64(st, 5), x->tokens);
        cr_assert_eq(col_or(st, 6, -1), x->group, "rank %u idx %lu", x->rank,
                     (unsigned long)x->idx);
        cr_assert_eq(col_or(st, 7, 0), coll ? (int64_t)x->seq : 0);
        cr_assert_eq(col_or(st, 8, 0), coll ? (int64_t)x->count : 0);
        cr_assert_eq(col_or(st, 9, 0), coll ? x->dtype : 0);
        cr_assert_eq(sqlite3_column_int64(st, 10), x->start_ns, "rank %u idx %lu", x->rank,
                     (unsigned long)x->idx);
        cr_assert_eq(col_or(st, 11, -1), x->end_ns < 0 ? -1 : x->end_ns);
        cr_assert_eq(col_or(st, 12, 0), x->bound);
    }
    sqlite3_finalize(st);
    cr_assert_eq(i, want->len, "%u rows for %u records", i, want->len);
}

/* Streams `recs` through store_run_record into a run; returns its id (or -1 with `error`) and,
 * when `size` is given, the size stated before it was written. */
static inline int64_t stream_run(Store *s, SchedProgram *p, GArray *recs, StoreTimelinesSize *size,
                                 GError **error)
{
    StoreRunInfo info = {.name = "lines", .kind = "program", .timeline = "full"};
    StoreRun *r = store_run_begin(s, &info, p, error);
    cr_assert_not_null(r, "%s", *error ? (*error)->message : "");
    for (guint i = 0; i < recs->len; i++)
        store_run_record(r, &g_array_index(recs, SchedRecord, i));
    if (size)
        *size = store_run_size(r);
    SchedOutcome *o = sched_outcome_new(p->n_ranks);
    int64_t id = store_run_finish(r, o, "ok", 0, 1.0, error);
    sched_outcome_free(o);
    return id;
}

/* stream_run, which must store the run. */
static inline int64_t stream(Store *s, SchedProgram *p, GArray *recs, StoreTimelinesSize *size)
{
    g_autoptr(GError) err = NULL;
    int64_t id = stream_run(s, p, recs, size, &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    return id;
}

#endif
