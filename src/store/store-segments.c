/* src/store/store-segments.c — a time line cut into segments that repeat; see
 * store-segments.h. */
#include "store-segments.h"

#include "store-hash.h"
#include "store-ops.h"

#include <string.h>

/* A slot's sequence number before the current part, once the part has called it. */
typedef struct {
    uint64_t before;
    bool set;
} SeqBase;

struct StoreSegments {
    sqlite3 *db;
    const char *path;
    int64_t id;
    StoreRowBatch rows;       /* timeline_segments */
    sqlite3_stmt *part, *seq; /* timeline_parts, timeline_part_seqs */
    GHashTable *known;        /* StoreRunKey* -> segment id + 1 */
    uint32_t n_segments;
    int64_t line;     /* the current line, -1 before the first record */
    uint32_t n_parts; /* parts of the current line so far */
    GArray *cur;      /* SchedRecord: the current part's records, as recorded */
    GArray *base;     /* SeqBase per slot */
};

StoreSegments *store_segments_new(sqlite3 *db, const char *path, int64_t run_id, GError **error)
{
    StoreSegments *s = g_new0(StoreSegments, 1);
    s->db = db;
    s->path = path;
    s->id = run_id;
    s->line = -1;
    s->known = g_hash_table_new_full(store_run_key_hash, store_run_key_equal, g_free, NULL);
    s->cur = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    s->base = g_array_new(FALSE, TRUE, sizeof(SeqBase));
    bool ok = store_row_batch_open(&s->rows, db, path, run_id,
                                   "INSERT OR FAIL INTO timeline_segments(run_id, segment, idx, "
                                   "layer, name_id, kind, tokens, slot,"
                                   " seq, count, dtype, start_ns, end_ns, bound)",
                                   "insert timeline_segments", error);
    ok = ok && ((sqlite3_prepare_v2(db,
                                    "INSERT INTO timeline_parts(run_id, timeline, part, segment,"
                                    " idx, start_ns) VALUES (?,?,?,?,?,?)",
                                    -1, &s->part, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(db,
                                    "INSERT INTO timeline_part_seqs(run_id, timeline, part,"
                                    " slot, seq_base) VALUES (?,?,?,?,?)",
                                    -1, &s->seq, NULL) == SQLITE_OK) ||
                store_ops_sql_error(error, db, path, "prepare timeline_parts"));
    if (!ok) {
        store_segments_free(s);
        return NULL;
    }
    return s;
}

void store_segments_free(StoreSegments *s)
{
    if (!s)
        return;
    store_row_batch_close(&s->rows);
    sqlite3_finalize(s->part);
    sqlite3_finalize(s->seq);
    g_hash_table_destroy(s->known);
    g_array_unref(s->cur);
    g_array_unref(s->base);
    g_free(s);
}

static bool step_reset(StoreSegments *s, sqlite3_stmt *st, const char *what, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || store_ops_sql_error(error, s->db, s->path, what);
}

/* The current part's records made relative to it — idx and times from the part's least (in
 * idx order, its first record's), each slot's sequence numbers from the one before its least —
 * and hashed into `key`; the part's idx and start time in `idx0`, `t0`. Relative values are
 * never negative, whatever order the records came in, and a never-completed op keeps -1. */
static void relative(StoreSegments *s, StoreRunKey *key, uint64_t *idx0, int64_t *t0)
{
    SchedRecord *r = (SchedRecord *)(void *)s->cur->data;
    *idx0 = r[0].idx;
    *t0 = r[0].start_ns;
    for (guint i = 0; i < s->base->len; i++)
        g_array_index(s->base, SeqBase, i).set = false;
    for (guint i = 0; i < s->cur->len; i++) {
        const SchedRecord *x = &r[i];
        *idx0 = MIN(*idx0, x->idx);
        *t0 = MIN(*t0, x->start_ns);
        if (x->group < 0)
            continue;
        guint slot = (guint)x->group;
        if (s->base->len <= slot)
            g_array_set_size(s->base, slot + 1); /* zeroed: not set */
        SeqBase *b = &g_array_index(s->base, SeqBase, slot);
        uint64_t before = x->seq ? x->seq - 1 : 0;
        if (!b->set || before < b->before)
            *b = (SeqBase){.before = before, .set = true};
    }
    *key = (StoreRunKey){.n = s->cur->len};
    for (guint i = 0; i < s->cur->len; i++) {
        SchedRecord *x = &r[i];
        x->idx -= *idx0;
        x->start_ns -= *t0;
        if (x->end_ns >= 0)
            x->end_ns -= *t0;
        if (x->group >= 0)
            x->seq -= g_array_index(s->base, SeqBase, (guint)x->group).before;
        uint64_t w[8], a, h;
        store_record_words(x, x->group, w);
        store_record_hash(w, &a, &h);
        key->h1 += a;
        key->h2 += h;
    }
}

/* The segment of key `key`: its number, and whether it is new (numbered in the order met). */
static uint32_t segment_of(StoreSegments *s, const StoreRunKey *key, bool *fresh)
{
    gpointer found = g_hash_table_lookup(s->known, key);
    *fresh = !found;
    if (found)
        return GPOINTER_TO_UINT(found) - 1;
    uint32_t seg = s->n_segments++;
    g_hash_table_insert(s->known, g_memdup2(key, sizeof *key), GUINT_TO_POINTER(seg + 1));
    return seg;
}

/* The part's row (the line's next part) and its first base; the bases follow (put_base). */
static bool put_part(StoreSegments *s, uint32_t part, uint32_t seg, uint64_t idx0, int64_t t0,
                     GError **error)
{
    sqlite3_bind_int64(s->part, 1, s->id);
    sqlite3_bind_int64(s->part, 2, s->line);
    sqlite3_bind_int64(s->part, 3, part);
    sqlite3_bind_int64(s->part, 4, seg);
    sqlite3_bind_int64(s->part, 5, (int64_t)idx0);
    sqlite3_bind_int64(s->part, 6, t0);
    return step_reset(s, s->part, "insert timeline_parts", error);
}

static bool put_base(StoreSegments *s, uint32_t part, uint32_t slot, uint64_t before,
                     GError **error)
{
    sqlite3_bind_int64(s->seq, 1, s->id);
    sqlite3_bind_int64(s->seq, 2, s->line);
    sqlite3_bind_int64(s->seq, 3, part);
    sqlite3_bind_int64(s->seq, 4, slot);
    sqlite3_bind_int64(s->seq, 5, (int64_t)before);
    return step_reset(s, s->seq, "insert timeline_part_seqs", error);
}

/* Writes the current part: its segment (new ones row by row), the part and its bases. */
static bool write_part(StoreSegments *s, GError **error)
{
    if (!s->cur->len)
        return true;
    StoreRunKey key;
    uint64_t idx0;
    int64_t t0;
    relative(s, &key, &idx0, &t0);
    bool fresh, ok = true;
    uint32_t seg = segment_of(s, &key, &fresh);
    for (guint i = 0; fresh && ok && i < s->cur->len; i++) {
        SchedRecord r = g_array_index(s->cur, SchedRecord, i);
        r.rank = seg;
        ok = store_row_batch_add(&s->rows, &r, error);
    }
    uint32_t part = s->n_parts++;
    ok = ok && put_part(s, part, seg, idx0, t0, error);
    for (guint k = 0; ok && k < s->base->len; k++) {
        const SeqBase *b = &g_array_index(s->base, SeqBase, k);
        if (b->set)
            ok = put_base(s, part, k, b->before, error);
    }
    g_array_set_size(s->cur, 0);
    return ok;
}

bool store_segments_put(StoreSegments *s, int64_t line, const StoreRunKey *key, uint64_t idx0,
                        int64_t t0, const StoreSeqBase *bases, uint32_t n_bases,
                        StoreSegmentRowsFn rows, void *data, GError **error)
{
    if (line != s->line) {
        if (!store_segments_end_line(s, error))
            return false;
        s->line = line;
    }
    bool fresh;
    uint32_t seg = segment_of(s, key, &fresh);
    bool ok = !fresh || rows(data, s, seg, error);
    uint32_t part = s->n_parts++;
    ok = ok && put_part(s, part, seg, idx0, t0, error);
    for (uint32_t k = 0; ok && k < n_bases; k++)
        ok = put_base(s, part, bases[k].slot, bases[k].before, error);
    return ok;
}

bool store_segments_row(StoreSegments *s, const SchedRecord *x, GError **error)
{
    return store_row_batch_add(&s->rows, x, error);
}

bool store_segments_add(StoreSegments *s, const SchedRecord *x, GError **error)
{
    if ((int64_t)x->rank != s->line) {
        if (!store_segments_end_line(s, error))
            return false;
        s->line = x->rank;
    } else if (x->flags & SCHED_RECORD_SEGMENT) {
        if (!write_part(s, error))
            return false;
    }
    g_array_append_val(s->cur, *x);
    return true;
}

bool store_segments_end_line(StoreSegments *s, GError **error)
{
    bool ok = write_part(s, error);
    s->n_parts = 0;
    s->line = -1;
    return ok;
}

bool store_segments_finish(StoreSegments *s, GError **error)
{
    return store_segments_end_line(s, error) && store_row_batch_flush(&s->rows, error);
}
