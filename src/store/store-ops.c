/* src/store/store-ops.c — a run's op records as rows: per rank (op_rows) or as shared time lines
 * (timeline_ops + rank_timelines + rank_groups); see store-ops.h. */
#include "store-ops.h"

#include "../../sched/program.h"
#include "store-error.h"

#include <errno.h>
#include <unistd.h>

/* Rows per INSERT statement: one statement of many rows costs SQLite far less per row than a
 * statement per row (a 2-million-row import stores in about half the time). */
#define OPS_PER_INSERT 256
/* Records read back from a staging file at a time. */
#define READ_RECORDS 16384

static bool sql_error(GError **error, sqlite3 *db, const char *path, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s: %s%s", path, what,
                sqlite3_errmsg(db), store_error_advice(sqlite3_extended_errcode(db)));
    return false;
}

/* Prepares "INSERT INTO `head` VALUES (?..),(?..)" of `rows` rows of `cols` parameters each,
 * numbered so that row i's column c is ?(i * stride + c). */
static sqlite3_stmt *prepare_rows(sqlite3 *db, const char *head, int rows, int cols, int stride)
{
    GString *sql = g_string_new(head);
    g_string_append(sql, " VALUES ");
    for (int i = 0; i < rows; i++) {
        int b = i * stride;
        g_string_append(sql, i ? ",(" : "(");
        for (int c = 1; c <= cols; c++)
            g_string_append_printf(sql, "%s?%d", c > 1 ? "," : "", b + c);
        g_string_append_c(sql, ')');
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql->str, -1, &st, NULL) != SQLITE_OK)
        st = NULL;
    g_string_free(sql, TRUE);
    return st;
}

/* Calls `fn` on the records of `src` in order, in slices: the array first, then the staging
 * file read back. */
typedef bool (*RecordsFn)(void *data, const SchedRecord *recs, size_t n, GError **error);

static bool source_foreach(const char *path, const StoreRecordSource *src, RecordsFn fn, void *data,
                           GError **error)
{
    if (src->n && !fn(data, src->recs, src->n, error))
        return false;
    if (src->fd < 0 || !src->n_staged)
        return true;
    g_autofree SchedRecord *buf = g_new(SchedRecord, READ_RECORDS);
    uint64_t left = src->n_staged;
    off_t off = 0;
    while (left) {
        size_t want = (size_t)MIN(left, (uint64_t)READ_RECORDS) * sizeof(SchedRecord);
        size_t got = 0;
        while (got < want) {
            ssize_t k = pread(src->fd, (char *)buf + got, want - got, off + (off_t)got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                            "%s: reading the run's staging file: %s", path,
                            k < 0 ? g_strerror(errno) : "unexpected end");
                return false;
            }
            got += (size_t)k;
        }
        if (!fn(data, buf, want / sizeof(SchedRecord), error))
            return false;
        off += (off_t)want;
        left -= want / sizeof(SchedRecord);
    }
    return true;
}

/* ---- per-rank rows ---- */

#define OP_COLUMNS 15

struct StoreOpInserter {
    sqlite3 *db;
    const char *path;
    sqlite3_stmt *many; /* OPS_PER_INSERT rows */
    sqlite3_stmt *one;
    int64_t id;
    int64_t next; /* the next row's n */
};

/* Binds record `x` as row `row` of a multi-row statement (parameters from row * 15 + 1); `n`
 * its place in the run (bound only where op_rows is keyed by it). */
static void bind_op(sqlite3_stmt *st, int row, int64_t id, int64_t n, const SchedRecord *x)
{
    int b = row * OP_COLUMNS;
    bool coll = x->group >= 0;
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 15, n); /* ignored by the statement of the old layout */
    store_bind_opt_int(st, b + 14, x->bound != 0, x->bound);
    sqlite3_bind_int64(st, b + 2, x->rank);
    sqlite3_bind_int64(st, b + 3, (int64_t)x->idx);
    store_bind_opt_int(st, b + 4, x->layer >= 0, x->layer);
    sqlite3_bind_int64(st, b + 5, x->name);
    sqlite3_bind_int(st, b + 6, x->kind);
    sqlite3_bind_int64(st, b + 7, (int64_t)x->tokens);
    store_bind_opt_int(st, b + 8, coll, x->group);
    store_bind_opt_int(st, b + 9, coll, (int64_t)x->seq);
    store_bind_opt_int(st, b + 10, coll, (int64_t)x->count);
    store_bind_opt_int(st, b + 11, coll, x->dtype);
    sqlite3_bind_int64(st, b + 12, x->start_ns);
    store_bind_opt_int(st, b + 13, x->end_ns >= 0, x->end_ns);
}

static sqlite3_stmt *prepare_ops(sqlite3 *db, bool keyed, int rows)
{
    g_autofree char *head = g_strdup_printf(
        "INSERT INTO op_rows(run_id, rank, idx, layer, name_id, kind, tokens, group_id, seq, "
        "count, dtype, start_ns, end_ns, bound%s)",
        keyed ? ", n" : "");
    return prepare_rows(db, head, rows, keyed ? 15 : 14, OP_COLUMNS);
}

StoreOpInserter *store_op_inserter_new(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                                       GError **error)
{
    StoreOpInserter *ins = g_new0(StoreOpInserter, 1);
    *ins = (StoreOpInserter){
        db, path, prepare_ops(db, keyed, OPS_PER_INSERT), prepare_ops(db, keyed, 1), run_id, 0};
    if (!ins->many || !ins->one) {
        sql_error(error, db, path, "prepare op_rows");
        store_op_inserter_free(ins);
        return NULL;
    }
    return ins;
}

void store_op_inserter_free(StoreOpInserter *ins)
{
    if (!ins)
        return;
    sqlite3_finalize(ins->many);
    sqlite3_finalize(ins->one);
    g_free(ins);
}

bool store_op_inserter_add(StoreOpInserter *ins, const SchedRecord *recs, size_t n, GError **error)
{
    size_t i = 0;
    for (; i + OPS_PER_INSERT <= n; i += OPS_PER_INSERT) {
        for (int k = 0; k < OPS_PER_INSERT; k++)
            bind_op(ins->many, k, ins->id, ins->next++, &recs[i + (size_t)k]);
        int rc = sqlite3_step(ins->many);
        sqlite3_reset(ins->many);
        if (rc != SQLITE_DONE)
            return sql_error(error, ins->db, ins->path, "insert op_rows");
    }
    for (; i < n; i++) {
        bind_op(ins->one, 0, ins->id, ins->next++, &recs[i]);
        int rc = sqlite3_step(ins->one);
        sqlite3_reset(ins->one);
        if (rc != SQLITE_DONE)
            return sql_error(error, ins->db, ins->path, "insert op_rows");
    }
    return true;
}

static bool add_per_rank(void *data, const SchedRecord *recs, size_t n, GError **error)
{
    return store_op_inserter_add(data, recs, n, error);
}

bool store_ops_insert_per_rank(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                               const StoreRecordSource *src, GError **error)
{
    if (!src->n && !src->n_staged)
        return true;
    StoreOpInserter *ins = store_op_inserter_new(db, path, run_id, keyed, error);
    if (!ins)
        return false;
    bool ok = source_foreach(path, src, add_per_rank, ins, error);
    store_op_inserter_free(ins);
    return ok;
}

/* ---- shared time lines ---- */

typedef struct {
    uint64_t h1, h2; /* sums of the records' hashes */
    uint64_t n;      /* records */
    GArray *groups;  /* int32_t group id per slot */
    uint32_t timeline;
} RankLine;

struct StoreTimelines {
    RankLine *ranks;
    uint32_t n_ranks;
    uint32_t *first; /* timeline -> the rank whose rows are stored */
    uint32_t n_timelines;
    const char *path;
    /* insertion */
    sqlite3 *db;
    sqlite3_stmt *many, *one;
    int64_t id;
    SchedRecord pend[OPS_PER_INSERT]; /* rows waiting for a full statement */
    uint32_t n_pend;
};

static void grow(StoreTimelines *t, uint32_t n_ranks)
{
    if (n_ranks <= t->n_ranks)
        return;
    t->ranks = g_renew(RankLine, t->ranks, n_ranks);
    for (uint32_t r = t->n_ranks; r < n_ranks; r++)
        t->ranks[r] = (RankLine){0, 0, 0, g_array_new(FALSE, FALSE, sizeof(int32_t)), 0};
    t->n_ranks = n_ranks;
}

StoreTimelines *store_timelines_new(const SchedProgram *p)
{
    StoreTimelines *t = g_new0(StoreTimelines, 1);
    grow(t, p ? p->n_ranks : 0);
    for (guint g = 0; p && g < p->groups->len; g++) {
        const SchedGroup *grp = sched_program_group(p, (int32_t)g);
        int32_t id = (int32_t)g;
        for (uint32_t i = 0; i < grp->n; i++)
            if (grp->ranks[i] >= 0 && (uint32_t)grp->ranks[i] < t->n_ranks)
                g_array_append_val(t->ranks[grp->ranks[i]].groups, id);
    }
    return t;
}

void store_timelines_free(StoreTimelines *t)
{
    if (!t)
        return;
    for (uint32_t r = 0; r < t->n_ranks; r++)
        g_array_unref(t->ranks[r].groups);
    g_free(t->ranks);
    g_free(t->first);
    g_free(t);
}

/* The slot of group `g` among rank line `L`'s groups, given the next free slot if new. */
static int32_t slot_of(RankLine *L, int32_t g)
{
    const int32_t *a = (const int32_t *)(void *)L->groups->data;
    for (guint i = 0; i < L->groups->len; i++)
        if (a[i] == g)
            return (int32_t)i;
    g_array_append_val(L->groups, g);
    return (int32_t)L->groups->len - 1;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    /* MurmurHash3's 64-bit finaliser over the running state and the next word */
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* The record's stored fields as words, the group replaced by its slot (-1: none) and the
 * fields the row leaves NULL left out, exactly as the row will hold them. */
static void record_words(const SchedRecord *x, int32_t slot, uint64_t w[8])
{
    bool coll = x->group >= 0;
    w[0] = (uint64_t)x->kind | (uint64_t)x->bound << 8 | (uint64_t)(coll ? x->dtype : 0) << 16 |
           (uint64_t)(uint32_t)x->layer << 32;
    w[1] = (uint64_t)x->name | (uint64_t)(uint32_t)slot << 32;
    w[2] = x->idx;
    w[3] = coll ? x->seq : 0;
    w[4] = coll ? x->count : 0;
    w[5] = x->tokens;
    w[6] = (uint64_t)x->start_ns;
    w[7] = (uint64_t)(x->end_ns < 0 ? -1 : x->end_ns);
}

void store_timelines_add(StoreTimelines *t, const SchedRecord *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const SchedRecord *x = &recs[i];
        grow(t, x->rank + 1);
        RankLine *L = &t->ranks[x->rank];
        int32_t slot = x->group >= 0 ? slot_of(L, x->group) : -1;
        uint64_t w[8];
        record_words(x, slot, w);
        uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
        for (int k = 0; k < 8; k++) {
            a = mix(a, w[k]);
            b = mix(b, w[k] ^ 0xa4093822299f31d0ULL);
        }
        L->h1 += a;
        L->h2 += b;
        L->n++;
    }
}

typedef struct {
    uint64_t n, h1, h2;
} LineKey;

static guint key_hash(gconstpointer p)
{
    const LineKey *k = p;
    return (guint)(k->h1 ^ k->h1 >> 32);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    const LineKey *x = a, *y = b;
    return x->n == y->n && x->h1 == y->h1 && x->h2 == y->h2;
}

/* Timeline ids in the order of each one's first rank, so the same run gives the same rows. */
static void classify(StoreTimelines *t)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(key_hash, key_equal);
    g_autofree LineKey *keys = g_new(LineKey, MAX(t->n_ranks, 1));
    g_free(t->first);
    t->first = g_new(uint32_t, MAX(t->n_ranks, 1));
    t->n_timelines = 0;
    for (uint32_t r = 0; r < t->n_ranks; r++) {
        RankLine *L = &t->ranks[r];
        if (!L->n)
            continue;
        keys[r] = (LineKey){L->n, L->h1, L->h2};
        gpointer found = g_hash_table_lookup(&*seen, &keys[r]);
        if (found) {
            L->timeline = GPOINTER_TO_UINT(found) - 1;
        } else {
            L->timeline = t->n_timelines;
            t->first[t->n_timelines++] = r;
            g_hash_table_insert(seen, &keys[r], GUINT_TO_POINTER(L->timeline + 1));
        }
    }
}

#define LINE_COLUMNS 14

static void bind_line_op(sqlite3_stmt *st, int row, int64_t id, uint32_t timeline, int32_t slot,
                         const SchedRecord *x)
{
    int b = row * LINE_COLUMNS;
    bool coll = x->group >= 0;
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 2, timeline);
    sqlite3_bind_int64(st, b + 3, (int64_t)x->idx);
    store_bind_opt_int(st, b + 4, x->layer >= 0, x->layer);
    sqlite3_bind_int64(st, b + 5, x->name);
    sqlite3_bind_int(st, b + 6, x->kind);
    sqlite3_bind_int64(st, b + 7, (int64_t)x->tokens);
    store_bind_opt_int(st, b + 8, coll, slot);
    store_bind_opt_int(st, b + 9, coll, (int64_t)x->seq);
    store_bind_opt_int(st, b + 10, coll, (int64_t)x->count);
    store_bind_opt_int(st, b + 11, coll, x->dtype);
    sqlite3_bind_int64(st, b + 12, x->start_ns);
    store_bind_opt_int(st, b + 13, x->end_ns >= 0, x->end_ns);
    store_bind_opt_int(st, b + 14, x->bound != 0, x->bound);
}

static bool step_reset(StoreTimelines *t, sqlite3_stmt *st, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sql_error(error, t->db, t->path, "insert timeline_ops");
}

/* Binds and inserts the pending rows: many at once when the batch is full, else one by one. */
static bool flush_lines(StoreTimelines *t, GError **error)
{
    bool full = t->n_pend == OPS_PER_INSERT;
    for (uint32_t i = 0; i < t->n_pend; i++) {
        const SchedRecord *x = &t->pend[i];
        RankLine *L = &t->ranks[x->rank];
        int32_t slot = x->group >= 0 ? slot_of(L, x->group) : -1;
        bind_line_op(full ? t->many : t->one, full ? (int)i : 0, t->id, L->timeline, slot, x);
        if (!full && !step_reset(t, t->one, error))
            return false;
    }
    t->n_pend = 0;
    return !full || step_reset(t, t->many, error);
}

/* Queues one row for the statement, flushing a full batch. */
static bool queue_line(StoreTimelines *t, const SchedRecord *x, GError **error)
{
    t->pend[t->n_pend++] = *x;
    return t->n_pend < OPS_PER_INSERT || flush_lines(t, error);
}

/* One pass over the records stores the time lines [lo, hi): their first ranks' rows. Rows go
 * into the table in key order (timeline, idx), gathered and sorted in memory: in the order the
 * run recorded them, the ranks' rows interleave and each insert lands on another page, which
 * made storing 1,024 distinct time lines seven times slower than appending. A pass holding a
 * single time line longer than the memory budget inserts as it reads instead (one rank's
 * records arrive nearly in idx order). */
typedef struct {
    StoreTimelines *t;
    uint32_t lo, hi;
    SchedRecord *buf; /* NULL: insert as read */
    size_t n;
} LinePass;

static bool pass_records(void *data, const SchedRecord *recs, size_t n, GError **error)
{
    LinePass *ps = data;
    StoreTimelines *t = ps->t;
    for (size_t i = 0; i < n; i++) {
        const SchedRecord *x = &recs[i];
        uint32_t line = t->ranks[x->rank].timeline;
        if (line < ps->lo || line >= ps->hi || t->first[line] != x->rank)
            continue;
        if (ps->buf)
            ps->buf[ps->n++] = *x;
        else if (!queue_line(t, x, error))
            return false;
    }
    return true;
}

static int by_line_idx(const void *a, const void *b, void *data)
{
    const SchedRecord *x = a, *y = b;
    const StoreTimelines *t = data;
    uint32_t lx = t->ranks[x->rank].timeline, ly = t->ranks[y->rank].timeline;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Records sorted in memory per pass: 2^19 x 64 B = 32 MiB at most. */
#define SORT_RECORDS ((uint64_t)1 << 19)

static bool insert_lines(StoreTimelines *t, const char *path, const StoreRecordSource *src,
                         GError **error)
{
    bool ok = true;
    for (uint32_t lo = 0; ok && lo < t->n_timelines;) {
        uint64_t rows = t->ranks[t->first[lo]].n;
        uint32_t hi = lo + 1;
        while (hi < t->n_timelines && rows + t->ranks[t->first[hi]].n <= SORT_RECORDS)
            rows += t->ranks[t->first[hi++]].n;
        LinePass ps = {.t = t, .lo = lo, .hi = hi};
        if (rows <= SORT_RECORDS)
            ps.buf = g_new(SchedRecord, MAX(rows, 1));
        ok = source_foreach(path, src, pass_records, &ps, error);
        if (ok && ps.buf) {
            g_qsort_with_data(ps.buf, (gint)ps.n, sizeof(SchedRecord), by_line_idx, t);
            for (size_t i = 0; ok && i < ps.n; i++)
                ok = queue_line(t, &ps.buf[i], error);
        }
        g_free(ps.buf);
        lo = hi;
    }
    return ok && flush_lines(t, error);
}

static bool insert_maps(StoreTimelines *t, GError **error)
{
    sqlite3_stmt *m = NULL, *g = NULL;
    bool ok = sqlite3_prepare_v2(t->db,
                                 "INSERT INTO rank_timelines(run_id, rank, timeline)"
                                 " VALUES (?,?,?)",
                                 -1, &m, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(t->db,
                                 "INSERT INTO rank_groups(run_id, rank, slot, group_id)"
                                 " VALUES (?,?,?,?)",
                                 -1, &g, NULL) == SQLITE_OK;
    if (!ok)
        sql_error(error, t->db, t->path, "prepare rank_timelines");
    for (uint32_t r = 0; ok && r < t->n_ranks; r++) {
        const RankLine *L = &t->ranks[r];
        if (!L->n)
            continue;
        sqlite3_bind_int64(m, 1, t->id);
        sqlite3_bind_int64(m, 2, r);
        sqlite3_bind_int64(m, 3, L->timeline);
        ok = sqlite3_step(m) == SQLITE_DONE ||
             sql_error(error, t->db, t->path, "insert rank_timelines");
        sqlite3_reset(m);
        for (guint k = 0; ok && k < L->groups->len; k++) {
            sqlite3_bind_int64(g, 1, t->id);
            sqlite3_bind_int64(g, 2, r);
            sqlite3_bind_int64(g, 3, k);
            sqlite3_bind_int64(g, 4, g_array_index(L->groups, int32_t, k));
            ok = sqlite3_step(g) == SQLITE_DONE ||
                 sql_error(error, t->db, t->path, "insert rank_groups");
            sqlite3_reset(g);
        }
    }
    sqlite3_finalize(m);
    sqlite3_finalize(g);
    return ok;
}

bool store_timelines_insert(StoreTimelines *t, sqlite3 *db, const char *path, int64_t run_id,
                            const StoreRecordSource *src, GError **error)
{
    classify(t);
    if (!t->n_timelines)
        return true;
    static const char head[] =
        "INSERT INTO timeline_ops(run_id, timeline, idx, layer, name_id, kind, tokens, slot,"
        " seq, count, dtype, start_ns, end_ns, bound)";
    t->db = db;
    t->path = path;
    t->id = run_id;
    t->many = prepare_rows(db, head, OPS_PER_INSERT, LINE_COLUMNS, LINE_COLUMNS);
    t->one = prepare_rows(db, head, 1, LINE_COLUMNS, LINE_COLUMNS);
    t->n_pend = 0;
    bool ok = (t->many && t->one) || sql_error(error, db, path, "prepare timeline_ops");
    ok = ok && insert_lines(t, path, src, error) && insert_maps(t, error);
    sqlite3_finalize(t->many);
    sqlite3_finalize(t->one);
    t->many = t->one = NULL;
    return ok;
}

uint32_t store_timelines_count(const StoreTimelines *t)
{
    return t->n_timelines;
}
