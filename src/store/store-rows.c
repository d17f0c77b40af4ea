/* src/store/store-rows.c — a stored run's op rows read back one at a time; see store-rows.h. */
#include "store-rows.h"

#include <string.h>
#include <unistd.h>

#include "store-private.h"
#include "store-values.h"

static bool rows_error(GError **error, Store *st, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", what,
                sqlite3_errmsg(store_db(st)));
    return false;
}

/* Columns 1-7 of a row statement (kind, start_ns, end_ns, group or slot, seq, count, name_id)
 * as an op row; column 0 (rank or time line) is the caller's. */
static StoreOpRow op_row(sqlite3_stmt *s, int64_t rank)
{
    return (StoreOpRow){
        .rank = rank,
        .kind = sqlite3_column_int(s, 1),
        .start_ns = sqlite3_column_int64(s, 2),
        .end_ns = sqlite3_column_type(s, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 3),
        .group = sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 4),
        .seq = sqlite3_column_int64(s, 5),
        .count = (uint64_t)sqlite3_column_int64(s, 6),
        .name_id = (uint32_t)sqlite3_column_int64(s, 7),
    };
}

GPtrArray *store_rows_names(Store *st, int64_t run_id, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT id, name FROM names WHERE run_id = ? ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK) {
        rows_error(error, st, "names");
        return NULL;
    }
    sqlite3_bind_int64(s, 1, run_id);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t id64 = sqlite3_column_int64(s, 0);
        if (id64 < 0 || id64 >= STORE_MAX_NAMES)
            continue; /* not an id ranksim wrote (store-values.h) */
        guint id = (guint)id64;
        if (id >= names->len)
            g_ptr_array_set_size(names, id + 1);
        g_free(g_ptr_array_index(names, id));
        names->pdata[id] = store_value_text(sqlite3_column_text(s, 1));
    }
    sqlite3_finalize(s);
    return names;
}

bool store_rows_ops(Store *st, int64_t run_id, StoreOpRowFn fn, void *data, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, kind, start_ns, end_ns, group_id, seq, count, name_id"
                           " FROM rank_ops WHERE run_id = ? ORDER BY rank, idx",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "op rows");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        StoreOpRow row = op_row(s, sqlite3_column_int64(s, 0));
        fn(data, &row);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "op rows");
}

void store_shared_rows_clear(StoreSharedRows *t)
{
    for (uint32_t r = 0; t->slots && r < t->n_ranks; r++)
        if (t->slots[r])
            g_array_unref(t->slots[r]);
    g_free(t->slots);
    g_free(t->timeline);
    if (t->rows)
        g_ptr_array_unref(t->rows);
    memset(t, 0, sizeof *t);
}

/* Whether the run has rows in `table` (false too for a file without the table). */
static bool has_rows(Store *st, const char *table, int64_t run_id)
{
    sqlite3_stmt *s = NULL;
    g_autofree char *sql = g_strdup_printf("SELECT 1 FROM %s WHERE run_id = ? LIMIT 1", table);
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(s, 1, run_id);
    bool yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return yes;
}

/* The rows array of stored time line `tl` (made and numbered in `ids` when new). */
static GArray *line_rows(StoreSharedRows *t, GHashTable *ids, int64_t tl)
{
    gpointer v = NULL;
    if (g_hash_table_lookup_extended(ids, &tl, NULL, &v))
        return g_ptr_array_index(t->rows, GPOINTER_TO_UINT(v));
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(StoreOpRow));
    g_hash_table_insert(ids, g_memdup2(&tl, sizeof tl), GUINT_TO_POINTER(t->rows->len));
    g_ptr_array_add(t->rows, rows);
    return rows;
}

/* timeline_ops of the run: each time line's rows, its stored id mapped to an index in `ids`. */
static bool read_timeline_rows(Store *st, int64_t run_id, StoreSharedRows *t, GHashTable *ids,
                               GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT timeline, kind, start_ns, end_ns, slot, seq, count, name_id"
                           " FROM timeline_ops WHERE run_id = ? ORDER BY timeline, idx",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    int64_t cur = INT64_MIN;
    GArray *rows = NULL;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t tl = sqlite3_column_int64(s, 0);
        if (tl != cur || !rows) {
            cur = tl;
            rows = line_rows(t, ids, tl);
        }
        StoreOpRow row = op_row(s, -1);
        g_array_append_val(rows, row);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "time lines");
}

/* ---- time lines stored as segments (store-segments.h) ---- */

/* A segment's row, relative to its part. */
typedef struct {
    StoreOpRow row; /* group: the slot */
    int64_t idx;
} SegRow;

/* A part's row made absolute, with its idx for ordering. */
typedef struct {
    int64_t idx;
    StoreOpRow row;
} IdxRow;

static int by_row_idx(const void *a, const void *b)
{
    const IdxRow *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* timeline_segments of the run: segment id -> GArray of SegRow. */
static GHashTable *read_segments(Store *st, int64_t run_id, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT segment, kind, start_ns, end_ns, slot, seq, count, name_id, idx"
                           " FROM timeline_segments WHERE run_id = ? ORDER BY segment, idx",
                           -1, &s, NULL) != SQLITE_OK) {
        rows_error(error, st, "time lines");
        return NULL;
    }
    GHashTable *segs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                             (GDestroyNotify)g_array_unref);
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    int64_t cur = INT64_MIN;
    GArray *rows = NULL;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t seg = sqlite3_column_int64(s, 0);
        if (seg != cur || !rows) {
            cur = seg;
            rows = g_hash_table_lookup(segs, &seg);
            if (!rows) {
                rows = g_array_new(FALSE, FALSE, sizeof(SegRow));
                g_hash_table_insert(segs, g_memdup2(&seg, sizeof seg), rows);
            }
        }
        SegRow r = {op_row(s, -1), sqlite3_column_int64(s, 8)};
        g_array_append_val(rows, r);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        g_hash_table_destroy(segs);
        rows_error(error, st, "time lines");
        return NULL;
    }
    return segs;
}

/* a + b, false when it overflows (a hand-edited file, store-values.h: the row is skipped) */
static inline bool add_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* Appends part (idx0, t0) of segment `seg` to `out`, each slot's sequence numbers moved on by
 * `base` (slot -> seq before the part; absent: 0). */
static void expand_part(const GArray *seg, int64_t idx0, int64_t t0, GHashTable *base,
                        GArray *out)
{
    for (guint i = 0; seg && i < seg->len; i++) {
        const SegRow *x = &g_array_index(seg, SegRow, i);
        IdxRow r = {.row = x->row};
        if (!add_ok(idx0, x->idx, &r.idx) || !add_ok(t0, x->row.start_ns, &r.row.start_ns) ||
            (x->row.end_ns >= 0 && !add_ok(t0, x->row.end_ns, &r.row.end_ns)))
            continue;
        if (x->row.group >= 0) {
            int64_t slot = x->row.group;
            int64_t *b = g_hash_table_lookup(base, &slot);
            /* unsigned: a hand-edited base cannot overflow */
            uint64_t seq = (uint64_t)x->row.seq + (b ? (uint64_t)*b : 0);
            r.row.seq = (int64_t)seq;
        }
        g_array_append_val(out, r);
    }
}

/* Moves a time line's expanded rows into its array, in idx order. */
static void flush_part_rows(StoreSharedRows *t, GHashTable *ids, int64_t tl, GArray *pending)
{
    if (!pending->len)
        return;
    IdxRow *r = (IdxRow *)(void *)pending->data;
    bool sorted = true;
    for (guint i = 1; sorted && i < pending->len; i++)
        sorted = r[i - 1].idx <= r[i].idx;
    if (!sorted)
        qsort(r, pending->len, sizeof *r, by_row_idx);
    GArray *rows = line_rows(t, ids, tl);
    for (guint i = 0; i < pending->len; i++)
        g_array_append_val(rows, r[i].row);
    g_array_set_size(pending, 0);
}

/* The seq bases of part (tl, part) from statement `q` (ordered by time line, part, slot),
 * which is left on the first row past it; `*more` false once it has no row left. */
static void part_bases(sqlite3_stmt *q, bool *more, int64_t tl, int64_t part, GHashTable *base)
{
    g_hash_table_remove_all(base);
    while (*more) {
        int64_t qt = sqlite3_column_int64(q, 0), qp = sqlite3_column_int64(q, 1);
        if (qt > tl || (qt == tl && qp > part))
            return;
        if (qt == tl && qp == part) {
            int64_t slot = sqlite3_column_int64(q, 2), b = sqlite3_column_int64(q, 3);
            g_hash_table_insert(base, g_memdup2(&slot, sizeof slot), g_memdup2(&b, sizeof b));
        }
        *more = sqlite3_step(q) == SQLITE_ROW;
    }
}

/* Rows the parts of run `run_id` may expand to. A segment is stored once and named by any
 * number of parts, so a hand-edited file of a few MB could name billions of rows. A run ranksim
 * wrote expands to at most the rank-ops it executed (`runs.rank_ops`: every row is one of them),
 * so that is the bound; and never more than half this machine's memory holds at ~140 B a row
 * (the row and its place while the line is put in order), however large a file's count. */
static uint64_t max_part_rows(Store *st, int64_t run_id)
{
    int64_t ops = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT rank_ops FROM runs WHERE id = ?", -1, &s,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, run_id);
        if (sqlite3_step(s) == SQLITE_ROW)
            ops = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 / 140
                                            : (uint64_t)1 << 24;
    return ops > 0 ? MIN((uint64_t)ops, memory) : MIN((uint64_t)1 << 24, memory);
}

/* The run's time lines stored as segments, expanded into rows as timeline_ops holds them. */
static bool read_parts(Store *st, int64_t run_id, StoreSharedRows *t, GHashTable *ids,
                       GError **error)
{
    g_autoptr(GHashTable) segs = read_segments(st, run_id, error);
    if (!segs)
        return false;
    sqlite3_stmt *p = NULL, *q = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT timeline, part, segment, idx, start_ns FROM timeline_parts"
                           " WHERE run_id = ? ORDER BY timeline, part",
                           -1, &p, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(store_db(st),
                           "SELECT timeline, part, slot, seq_base FROM timeline_part_seqs"
                           " WHERE run_id = ? ORDER BY timeline, part, slot",
                           -1, &q, NULL) != SQLITE_OK) {
        sqlite3_finalize(p);
        return rows_error(error, st, "time lines");
    }
    sqlite3_bind_int64(p, 1, run_id);
    sqlite3_bind_int64(q, 1, run_id);
    bool more = sqlite3_step(q) == SQLITE_ROW;
    g_autoptr(GHashTable) base = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    g_autoptr(GArray) pending = g_array_new(FALSE, FALSE, sizeof(IdxRow));
    int64_t cur = INT64_MIN;
    uint64_t total = 0, limit = max_part_rows(st, run_id);
    int rc;
    while ((rc = sqlite3_step(p)) == SQLITE_ROW) {
        int64_t tl = sqlite3_column_int64(p, 0), part = sqlite3_column_int64(p, 1);
        int64_t seg = sqlite3_column_int64(p, 2);
        const GArray *rows = g_hash_table_lookup(segs, &seg);
        total += rows ? rows->len : 0;
        if (total > limit) {
            sqlite3_finalize(p);
            sqlite3_finalize(q);
            g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                        "time lines: the run's parts name more than %" G_GUINT64_FORMAT
                        " rows, more than the run's rank-ops or half this machine's memory"
                        " (timeline_parts; a file ranksim did not write?)",
                        limit);
            return false;
        }
        if (tl != cur) {
            flush_part_rows(t, ids, cur, pending);
            cur = tl;
        }
        part_bases(q, &more, tl, part, base);
        expand_part(rows, sqlite3_column_int64(p, 3), sqlite3_column_int64(p, 4), base, pending);
    }
    flush_part_rows(t, ids, cur, pending);
    sqlite3_finalize(p);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE || rows_error(error, st, "time lines");
}

/* rank_timelines and rank_groups of the run, for ranks below t->n_ranks. */
static bool read_rank_maps(Store *st, int64_t run_id, StoreSharedRows *t, GHashTable *ids,
                           GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, timeline FROM rank_timelines WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(s, 0), tl = sqlite3_column_int64(s, 1);
        gpointer v = NULL;
        if (rank >= 0 && rank < t->n_ranks && g_hash_table_lookup_extended(ids, &tl, NULL, &v))
            t->timeline[rank] = (int32_t)GPOINTER_TO_UINT(v);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return rows_error(error, st, "time lines");
    /* a slot is a place among the rank's groups, so below the run's group count: a larger one
     * (a hand-edited file, store-values.h) is skipped, not grown into */
    int64_t n_groups = 0;
    if (sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM groups WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        n_groups = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, slot, group_id FROM rank_groups WHERE run_id = ?"
                           " ORDER BY rank, slot",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(s, 0), slot = sqlite3_column_int64(s, 1);
        int32_t g = sqlite3_column_int(s, 2);
        if (rank < 0 || rank >= t->n_ranks || slot < 0 || slot >= n_groups)
            continue;
        if (!t->slots[rank])
            t->slots[rank] = g_array_new(FALSE, FALSE, sizeof(int32_t));
        GArray *a = t->slots[rank];
        int32_t none = -1;
        while (a->len <= (guint)slot)
            g_array_append_val(a, none);
        g_array_index(a, int32_t, slot) = g;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "time lines");
}

bool store_rows_shared(Store *st, int64_t run_id, uint32_t n_ranks, StoreSharedRows *out,
                          GError **error)
{
    memset(out, 0, sizeof *out);
    bool parts = has_rows(st, "timeline_parts", run_id);
    if (!parts && !has_rows(st, "timeline_ops", run_id))
        return true;
    out->n_ranks = MIN(n_ranks, (uint32_t)STORE_MAX_RANKS); /* the caller's count may be read
                                                             back from the file too */
    n_ranks = out->n_ranks;
    out->timeline = g_new(int32_t, MAX(n_ranks, 1u));
    for (uint32_t r = 0; r < n_ranks; r++)
        out->timeline[r] = -1;
    out->slots = g_new0(GArray *, MAX(n_ranks, 1u));
    out->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    if (!read_timeline_rows(st, run_id, out, ids, error) ||
        (parts && !read_parts(st, run_id, out, ids, error)) ||
        !read_rank_maps(st, run_id, out, ids, error)) {
        store_shared_rows_clear(out);
        return false;
    }
    return true;
}

bool store_rows_collectives(Store *st, int64_t run_id, StoreCollectiveFn fn, void *data,
                            GError **error)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT group_name, seq, rank, kind, count, dtype, name, done_us IS NOT "
                           "NULL FROM collectives WHERE run_id = ?",
                           -1, &q, NULL) != SQLITE_OK) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", store_path(st),
                    sqlite3_errmsg(store_db(st)));
        return false;
    }
    sqlite3_bind_int64(q, 1, run_id);
    while (sqlite3_step(q) == SQLITE_ROW) {
        StoreCollectiveRow row = {
            .group = (const char *)sqlite3_column_text(q, 0),
            .seq = (uint64_t)sqlite3_column_int64(q, 1),
            .rank = sqlite3_column_int(q, 2),
            .kind = (const char *)sqlite3_column_text(q, 3),
            .count = (uint64_t)sqlite3_column_int64(q, 4),
            .dtype = (const char *)sqlite3_column_text(q, 5),
            .name = (const char *)sqlite3_column_text(q, 6),
            .done = sqlite3_column_int(q, 7) != 0,
        };
        fn(data, &row);
    }
    sqlite3_finalize(q);
    return true;
}
