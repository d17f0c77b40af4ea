/* src/store/store-timelines.c — a run's op records as shared time lines (timeline_ops +
 * rank_timelines + rank_groups): ranks with the same records share one line, and only the
 * records no rank has made before are staged (prefix nodes); see store-ops.h. */
#include "store-ops.h"

#include "../../sched/program.h"
#include "store-error.h"
#include "store-hash.h"
#include "store-cut.h"
#include "store-segments.h"
#include "store-trie.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- shared time lines ---- */

/* Slots kept in a rank's own struct (a TP, DP, PP and EP group): a record's group is looked up
 * where the rank's hashes already are, without a miss to another allocation. */
#define INLINE_GROUPS 4

/* How a rank's records are kept, decided by its first record: prefix nodes of the records
 * themselves, or cut into segments as they arrive when that record begins one (store-cut.h). */
enum { MODE_NONE = 0, MODE_PREFIX, MODE_CUT };

typedef struct {
    uint64_t h1, h2;   /* sums of the records' hashes: which ranks share a time line */
    StoreTrieAt at;    /* the chain of the records so far, in arrival order (MODE_PREFIX) */
    uint64_t n;        /* records */
    uint32_t n_groups; /* slots taken */
    int32_t group[INLINE_GROUPS]; /* group id per slot, the first INLINE_GROUPS slots */
    GArray *more;                 /* int32_t, the group ids of the next slots, or NULL */
    uint32_t timeline;
    uint8_t mode;
    bool marked; /* a record began a segment: the line is stored as segments */
} RankLine;

struct StoreTimelines {
    RankLine *ranks;
    uint32_t n_ranks;
    uint32_t *first; /* timeline -> the rank whose rows are stored */
    uint32_t n_timelines;
    bool classified;
    StoreTrie *trie; /* prefix nodes: node i is record i of the node source */
    StoreCut *cut;   /* the ranks in MODE_CUT */
    uint64_t n_records;
    /* insertion */
    const char *path;
    sqlite3 *db;
    int64_t id;
    StoreRowBatch rows;       /* timeline_ops */
    StoreSegments *segments;  /* the time lines cut into segments (store-segments.h) */
    StoreProgressFn progress; /* may be NULL */
    void *progress_data;
    uint64_t rows_done, rows_total; /* records written (as rows or into segments) */
    size_t map_bytes;               /* the staging file's mapping while its rows are read, else 0 */
    uint64_t map_reads;             /* records read from it */
};

static int32_t add_slot(RankLine *L, int32_t g);

static void grow(StoreTimelines *t, uint32_t n_ranks)
{
    if (n_ranks <= t->n_ranks)
        return;
    t->ranks = g_renew(RankLine, t->ranks, n_ranks);
    for (uint32_t r = t->n_ranks; r < n_ranks; r++)
        t->ranks[r] = (RankLine){.at = store_trie_start()};
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
                add_slot(&t->ranks[grp->ranks[i]], id);
    }
    t->trie = store_trie_new();
    t->cut = store_cut_new(t->trie);
    return t;
}

void store_timelines_free(StoreTimelines *t)
{
    if (!t)
        return;
    for (uint32_t r = 0; r < t->n_ranks; r++)
        if (t->ranks[r].more)
            g_array_unref(t->ranks[r].more);
    g_free(t->ranks);
    g_free(t->first);
    store_cut_free(t->cut);
    store_trie_free(t->trie);
    g_free(t);
}

void store_timelines_set_progress(StoreTimelines *t, StoreProgressFn fn, void *data)
{
    t->progress = fn;
    t->progress_data = data;
}

static int32_t group_of(const RankLine *L, uint32_t slot)
{
    return slot < INLINE_GROUPS ? L->group[slot]
                                : g_array_index(L->more, int32_t, slot - INLINE_GROUPS);
}

/* Gives group `g` the next slot of rank line `L`. Returns the slot. */
static int32_t add_slot(RankLine *L, int32_t g)
{
    uint32_t k = L->n_groups++;
    if (k < INLINE_GROUPS) {
        L->group[k] = g;
    } else {
        if (!L->more)
            L->more = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_array_append_val(L->more, g);
    }
    return (int32_t)k;
}

/* The slot of group `g` among rank line `L`'s groups, given the next free slot if new. */
static int32_t slot_of(RankLine *L, int32_t g)
{
    uint32_t n = MIN(L->n_groups, INLINE_GROUPS);
    for (uint32_t i = 0; i < n; i++)
        if (L->group[i] == g)
            return (int32_t)i;
    for (uint32_t i = INLINE_GROUPS; i < L->n_groups; i++)
        if (group_of(L, i) == g)
            return (int32_t)i;
    return add_slot(L, g);
}

bool store_timelines_add_one(StoreTimelines *t, const SchedRecord *x, SchedRecord *node)
{
    grow(t, x->rank + 1);
    RankLine *L = &t->ranks[x->rank];
    bool mark = (x->flags & SCHED_RECORD_SEGMENT) != 0;
    if (L->mode == MODE_NONE)
        L->mode = mark ? MODE_CUT : MODE_PREFIX;
    L->marked |= mark;
    int32_t slot = x->group >= 0 ? slot_of(L, x->group) : -1;
    L->n++;
    t->n_records++;
    if (L->mode == MODE_CUT)
        return store_cut_add(t->cut, x, slot, node);
    uint64_t w[8], a, b;
    store_record_words(x, slot, w);
    bool made = store_trie_next(t->trie, &L->at, w, false, &a, &b);
    L->h1 += a;
    L->h2 += b;
    if (made) {
        *node = *x;
        node->group = slot;
    }
    return made;
}

void store_timelines_add(StoreTimelines *t, const SchedRecord *recs, size_t n, GArray *nodes)
{
    SchedRecord x;
    for (size_t i = 0; i < n; i++)
        if (store_timelines_add_one(t, &recs[i], &x))
            g_array_append_val(nodes, x);
}

/* Timeline ids in the order of each one's first rank, so the same run gives the same rows. */
static void classify(StoreTimelines *t)
{
    if (t->classified)
        return;
    g_autoptr(GHashTable) seen = g_hash_table_new(store_run_key_hash, store_run_key_equal);
    g_autofree StoreRunKey *keys = g_new(StoreRunKey, MAX(t->n_ranks, 1));
    g_free(t->first);
    t->first = g_new(uint32_t, MAX(t->n_ranks, 1));
    t->n_timelines = 0;
    for (uint32_t r = 0; r < t->n_ranks; r++) {
        RankLine *L = &t->ranks[r];
        if (!L->n)
            continue;
        keys[r] = L->mode == MODE_CUT ? store_cut_key(t->cut, r, L->n)
                                      : (StoreRunKey){L->n, L->h1, L->h2};
        gpointer found = g_hash_table_lookup(&*seen, &keys[r]);
        if (found) {
            L->timeline = GPOINTER_TO_UINT(found) - 1;
        } else {
            L->timeline = t->n_timelines;
            t->first[t->n_timelines++] = r;
            g_hash_table_insert(seen, &keys[r], GUINT_TO_POINTER(L->timeline + 1));
        }
    }
    t->classified = true;
}

StoreTimelinesSize store_timelines_size(StoreTimelines *t)
{
    classify(t);
    StoreTimelinesSize z = {
        .records = t->n_records, .timelines = t->n_timelines, .staged = store_trie_count(t->trie)};
    for (uint32_t k = 0; k < t->n_timelines; k++) {
        z.rows += t->ranks[t->first[k]].n;
        z.segmented += t->ranks[t->first[k]].marked;
    }
    return z;
}

/* Records between two progress reports. */
#define PROGRESS_ROWS 65536

/* Queues node record `x` of time line `line`: a row of timeline_ops, or the next record of the
 * line's segments when it is cut into them (`segmented`). */
static bool queue_line(StoreTimelines *t, const SchedRecord *x, uint32_t line, bool segmented,
                       GError **error)
{
    SchedRecord r = *x;
    r.rank = line;
    bool ok = segmented ? store_segments_add(t->segments, &r, error)
                        : store_row_batch_add(&t->rows, &r, error);
    if (t->progress && ++t->rows_done % PROGRESS_ROWS == 0)
        t->progress(t->progress_data, t->rows_done, t->rows_total);
    return ok;
}

/* Staging files up to this size are mapped with their pages at once. */
#define POPULATE_BYTES ((size_t)64 << 20)

/* The node records: an array, or the staging file mapped (NULL with `error` set). */
static const SchedRecord *map_nodes(StoreTimelines *t, const StoreRecordSource *src, size_t *bytes,
                                    GError **error)
{
    *bytes = 0;
    if (src->recs || !store_trie_count(t->trie))
        return src->recs;
    *bytes = (size_t)src->n_staged * sizeof(SchedRecord);
    /* a small file's pages mapped at once (one call, not a fault per page: faults are
     * costly in a virtual machine); a large one's as they are read, and dropped again */
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    if (*bytes <= POPULATE_BYTES)
        flags |= MAP_POPULATE;
#endif
    void *m = src->fd >= 0 ? mmap(NULL, *bytes, PROT_READ, flags, src->fd, 0) : MAP_FAILED;
    if (m == MAP_FAILED) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: reading the run's staging file: %s", t->path, g_strerror(errno));
        *bytes = 0;
        return NULL;
    }
    return m;
}

static int by_idx(const void *a, const void *b)
{
    const SchedRecord *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Records sorted in memory at a time: 2^19 x 64 B = 32 MiB at most. */
#define SORT_RECORDS ((uint64_t)1 << 19)

/* The rows of time line `line`: its first rank's records, read along that rank's prefix nodes
 * (each node's record equals the rank's own, the hash says), in idx order — in the order the
 * run recorded them, rows would interleave and each insert land on another page. A time line
 * longer than the sort budget goes in the order recorded (one rank's records arrive nearly in
 * idx order). */
/* Records read from a mapped staging file before its pages are dropped again: the file's
 * pages would otherwise count in the process's memory, 64 B per staged record (4 MiB here). */
#define MAP_RECORDS_RESIDENT 65536

/* Node `v`'s record; every MAP_RECORDS_RESIDENT reads of a mapped file (`map_bytes` > 0) drops
 * the mapping's pages (they come back from the page cache when read again). */
static inline const SchedRecord *node_rec(StoreTimelines *t, const SchedRecord *nodes, uint32_t v)
{
    if (t->map_bytes && ++t->map_reads % MAP_RECORDS_RESIDENT == 0)
        madvise((void *)nodes, t->map_bytes, MADV_DONTNEED);
    return &nodes[v];
}

/* Counts `records` written for the progress reports (store_cut_insert's tick). */
static void tick(void *data, uint64_t records)
{
    StoreTimelines *t = data;
    uint64_t before = t->rows_done;
    t->rows_done += records;
    if (t->progress && before / PROGRESS_ROWS != t->rows_done / PROGRESS_ROWS)
        t->progress(t->progress_data, t->rows_done, t->rows_total);
}

static bool insert_line(StoreTimelines *t, uint32_t line, const SchedRecord *nodes, GError **error)
{
    const RankLine *L = &t->ranks[t->first[line]];
    if (L->mode == MODE_CUT)
        return store_cut_insert(t->cut, t->first[line], line, nodes, store_trie_count(t->trie),
                                t->segments, tick, t, error);
    g_autofree uint32_t *path = g_new(uint32_t, MAX(L->n, 1));
    size_t n = 0;
    for (uint32_t v = L->at.node; v != STORE_TRIE_ROOT && n < L->n;
         v = store_trie_parent(t->trie, v))
        path[n++] = v;
    if (n != L->n) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: the run's time line %u lost records in staging", t->path, line);
        return false;
    }
    /* a line whose ops mark where its segments begin is stored as segments; records already
     * in idx order (a rank's records almost always are) go as they are */
    bool segmented = false, sorted = true;
    uint64_t last = 0;
    for (size_t i = n; i-- > 0;) {
        const SchedRecord *x = node_rec(t, nodes, path[i]);
        segmented |= (x->flags & SCHED_RECORD_SEGMENT) != 0;
        sorted = sorted && (i + 1 == n || last < x->idx);
        last = x->idx;
    }
    bool ok = true;
    if (sorted) {
        for (size_t i = n; ok && i-- > 0;)
            ok = queue_line(t, node_rec(t, nodes, path[i]), line, segmented, error);
    } else if (n <= SORT_RECORDS) {
        g_autofree SchedRecord *buf = g_new(SchedRecord, n);
        for (size_t i = 0; i < n; i++)
            buf[i] = *node_rec(t, nodes, path[n - 1 - i]);
        qsort(buf, n, sizeof(SchedRecord), by_idx);
        for (size_t i = 0; ok && i < n; i++)
            ok = queue_line(t, &buf[i], line, segmented, error);
    } else {
        for (size_t i = n; ok && i-- > 0;)
            ok = queue_line(t, node_rec(t, nodes, path[i]), line, segmented, error);
    }
    return ok && (!segmented || store_segments_end_line(t->segments, error));
}

/* Ranks cut as they came whose order broke are keyed again from their records in idx order
 * (store_cut_rekey), now that the staged records can be read: a rank with the same records
 * that came in order shares its line, as when every line was keyed by the sum of its records'
 * hashes. The lines are then numbered again (fewer, or as many, as store_timelines_size
 * said). */
static bool rekey(StoreTimelines *t, const SchedRecord *nodes, uint32_t n_nodes, GError **error)
{
    bool changed = false;
    for (uint32_t r = 0; r < t->n_ranks; r++)
        if (t->ranks[r].n && t->ranks[r].mode == MODE_CUT &&
            !store_cut_rekey(t->cut, r, nodes, n_nodes, &changed, error))
            return false;
    if (changed) {
        t->classified = false;
        classify(t);
        t->rows_total = store_timelines_size(t).rows;
    }
    return true;
}

static bool insert_lines(StoreTimelines *t, const StoreRecordSource *src, GError **error)
{
    uint64_t have = src->recs ? src->n : src->n_staged;
    uint32_t n_nodes = store_trie_count(t->trie);
    bool overflow = store_trie_overflow(t->trie);
    if (overflow || have != n_nodes) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: the run's time lines: %" G_GUINT64_FORMAT " records staged for %u"
                    " distinct ones%s",
                    t->path, have, n_nodes,
                    overflow ? " (more than 4 billion distinct records)" : "");
        return false;
    }
    size_t bytes;
    const SchedRecord *nodes = map_nodes(t, src, &bytes, error);
    if (!nodes && n_nodes)
        return false;
    bool ok = rekey(t, nodes, n_nodes, error);
    t->map_bytes = bytes;
    t->map_reads = 0;
    for (uint32_t line = 0; ok && line < t->n_timelines; line++)
        ok = insert_line(t, line, nodes, error);
    t->map_bytes = 0;
    if (bytes)
        munmap((void *)nodes, bytes);
    return ok && store_row_batch_flush(&t->rows, error) &&
           store_segments_finish(t->segments, error);
}

static bool insert_maps(StoreTimelines *t, GError **error)
{
    StoreIntBatch m = {0}, g = {0};
    bool ok = store_int_batch_open(&m, t->db, t->path,
                                   "INSERT OR FAIL INTO rank_timelines(run_id, rank, timeline)", 3,
                                   "insert rank_timelines", error);
    ok = ok && store_int_batch_open(&g, t->db, t->path,
                                    "INSERT OR FAIL INTO rank_groups(run_id, rank, slot, group_id)",
                                    4, "insert rank_groups", error);
    for (uint32_t r = 0; ok && r < t->n_ranks; r++) {
        const RankLine *L = &t->ranks[r];
        if (!L->n)
            continue;
        ok = store_int_batch_add(&m, (int64_t[]){t->id, r, L->timeline}, error);
        for (uint32_t k = 0; ok && k < L->n_groups; k++)
            ok = store_int_batch_add(&g, (int64_t[]){t->id, r, k, group_of(L, k)}, error);
    }
    ok = ok && store_int_batch_flush(&m, error) && store_int_batch_flush(&g, error);
    store_int_batch_close(&m);
    store_int_batch_close(&g);
    return ok;
}

bool store_timelines_insert(StoreTimelines *t, sqlite3 *db, const char *path, int64_t run_id,
                            const StoreRecordSource *src, GError **error)
{
    classify(t);
    if (!t->n_timelines)
        return true;
    t->rows_total = store_timelines_size(t).rows;
    t->rows_done = 0;
    static const char head[] = "INSERT OR FAIL INTO timeline_ops(run_id, timeline, idx, layer, "
                               "name_id, kind, tokens, slot,"
                               " seq, count, dtype, start_ns, end_ns, bound)";
    t->db = db;
    t->path = path;
    t->id = run_id;
    bool ok = store_row_batch_open(&t->rows, db, path, run_id, head, "insert timeline_ops", error);
    t->segments = ok ? store_segments_new(db, path, run_id, error) : NULL;
    ok = ok && t->segments && insert_lines(t, src, error) && insert_maps(t, error);
    store_row_batch_close(&t->rows);
    store_segments_free(t->segments);
    t->segments = NULL;
    return ok;
}

uint32_t store_timelines_count(const StoreTimelines *t)
{
    return t->n_timelines;
}
