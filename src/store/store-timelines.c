/* src/store/store-timelines.c — a run's op records as shared time lines (timeline_ops +
 * rank_timelines + rank_groups): ranks with the same records share one line, and only the
 * records no rank has made before are staged (prefix nodes); see store-ops.h. */
#include "store-ops.h"

#include "../../sched/program.h"
#include "store-error.h"
#include "store-hash.h"
#include "store-segments.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- shared time lines ---- */

/* Slots kept in a rank's own struct (a TP, DP, PP and EP group): a record's group is looked up
 * where the rank's hashes already are, without a miss to another allocation. */
#define INLINE_GROUPS 4

/* No prefix node yet (a rank before its first record). */
#define NODE_NONE UINT32_MAX

typedef struct {
    uint64_t h1, h2; /* sums of the records' hashes: which ranks share a time line */
    uint64_t p1, p2; /* the hash of the records so far, in arrival order: the rank's prefix */
    uint64_t n;      /* records */
    uint32_t n_groups;                /* slots taken */
    int32_t group[INLINE_GROUPS];     /* group id per slot, the first INLINE_GROUPS slots */
    GArray *more;                     /* int32_t, the group ids of the next slots, or NULL */
    uint32_t node;   /* the prefix node of the records so far, or NODE_NONE */
    uint32_t timeline;
    bool marked;     /* a record began a segment: the line is stored as segments */
} RankLine;

/* A recent prefix node: the hash of a rank's records up to and including this node's record,
 * the hash and the words of that record, and its first SCAN_CHILDREN children in a list. Only
 * the last RECENT_NODES nodes are kept (node v at v % RECENT_NODES; its parent is kept for
 * every node): a rank lagging further behind the rank it would share with makes nodes of its
 * own — more staged, the same rows — and memory stays bounded whatever the run length. A rank
 * in step with another finds its record's words among a kept node's children and takes the
 * hashes kept there, without hashing (the hash was a third of the default time line's cost,
 * perf). */
typedef struct {
    uint64_t p1, p2;
    uint64_t ra, rb;  /* the hash of the node's record (record_hash) */
    uint64_t w[8];    /* the node's record as words (record_words) */
    uint32_t id;      /* the node this slot holds */
    uint32_t child, last_child, sibling; /* NODE_NONE: none */
    uint32_t n_children;
} PrefixNode;

/* Nodes kept: 16,384 x 128 B = 2 MiB. Ranks in step are a few nodes apart. */
#define RECENT_NODES 16384

/* A slot of the table of children beyond a node's first SCAN_CHILDREN (NODE_NONE: free). */
typedef struct {
    uint64_t p1, p2;
    uint32_t node;
} PrefixSlot;

/* Children looked for in a node's list before its table: ranks in step follow the first child
 * (the next node made), ranks that diverge fan out and go through the table. */
#define SCAN_CHILDREN 8

struct StoreTimelines {
    RankLine *ranks;
    uint32_t n_ranks;
    uint32_t *first; /* timeline -> the rank whose rows are stored */
    uint32_t n_timelines;
    bool classified;
    /* prefix nodes: node i is record i of the node source */
    PrefixNode root;    /* the empty prefix */
    PrefixNode *recent; /* RECENT_NODES slots */
    uint32_t n_nodes;
    uint32_t *parent; /* per node: its parent, NODE_NONE for the root's children */
    size_t parent_cap;
    PrefixSlot *table; /* children beyond SCAN_CHILDREN; NULL until one is */
    size_t table_cap;  /* a power of two */
    size_t table_used;
    bool overflow; /* more distinct prefixes than node ids */
    uint64_t n_records;
    /* insertion */
    const char *path;
    sqlite3 *db;
    int64_t id;
    StoreRowBatch rows;      /* timeline_ops */
    StoreSegments *segments; /* the time lines cut into segments (store-segments.h) */
    StoreProgressFn progress; /* may be NULL */
    void *progress_data;
    uint64_t rows_done, rows_total; /* records written (as rows or into segments) */
    size_t map_bytes;   /* the staging file's mapping while its rows are read, else 0 */
    uint64_t map_reads; /* records read from it */
};

static int32_t add_slot(RankLine *L, int32_t g);

static void grow(StoreTimelines *t, uint32_t n_ranks)
{
    if (n_ranks <= t->n_ranks)
        return;
    t->ranks = g_renew(RankLine, t->ranks, n_ranks);
    for (uint32_t r = t->n_ranks; r < n_ranks; r++)
        t->ranks[r] = (RankLine){
            .p1 = 0x452821e638d01377ULL, /* digits of pi, as the record hash's keys */
            .p2 = 0xbe5466cf34e90c6cULL,
            .node = NODE_NONE,
        };
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
    t->recent = g_new(PrefixNode, RECENT_NODES);
    t->root = (PrefixNode){.id = NODE_NONE, .child = NODE_NONE, .last_child = NODE_NONE,
                           .sibling = NODE_NONE};
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
    g_free(t->table);
    g_free(t->parent);
    g_free(t->recent);
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

static void table_grow(StoreTimelines *t)
{
    size_t cap = t->table_cap ? t->table_cap * 2 : 1024;
    PrefixSlot *old = t->table, *nt = g_new(PrefixSlot, cap);
    for (size_t i = 0; i < cap; i++)
        nt[i].node = NODE_NONE;
    for (size_t i = 0; i < t->table_cap; i++) {
        if (old[i].node == NODE_NONE)
            continue;
        size_t j = old[i].p1 & (cap - 1);
        while (nt[j].node != NODE_NONE)
            j = (j + 1) & (cap - 1);
        nt[j] = old[i];
    }
    g_free(old);
    t->table = nt;
    t->table_cap = cap;
}

/* The table's slot of prefix (p1, p2): its node's, or the free slot where it goes. */
static PrefixSlot *table_slot(StoreTimelines *t, uint64_t p1, uint64_t p2)
{
    size_t mask = t->table_cap - 1, j = p1 & mask;
    while (t->table[j].node != NODE_NONE && (t->table[j].p1 != p1 || t->table[j].p2 != p2))
        j = (j + 1) & mask;
    return &t->table[j];
}

/* Node `v` if it is still kept (the root always is), else NULL. */
static inline PrefixNode *node_at(StoreTimelines *t, uint32_t v)
{
    if (v == NODE_NONE)
        return &t->root;
    PrefixNode *x = &t->recent[v % RECENT_NODES];
    return t->n_nodes - v <= RECENT_NODES && x->id == v ? x : NULL;
}

/* Node `v` of a list (NODE_NONE: the end) if it is still kept, else NULL. */
static inline PrefixNode *kept(StoreTimelines *t, uint32_t v)
{
    return v == NODE_NONE ? NULL : node_at(t, v);
}

/* A new child (p1, p2) of node `parent` (in its list or the table, when it is still kept) whose
 * record is `w`, hashed (ra, rb). Returns its id. */
static uint32_t new_child(StoreTimelines *t, uint32_t parent, uint64_t p1, uint64_t p2,
                          const uint64_t w[8], uint64_t ra, uint64_t rb)
{
    uint32_t node = t->n_nodes++;
    if (node >= t->parent_cap) {
        t->parent_cap = MAX(t->parent_cap * 2, 1024);
        t->parent = g_renew(uint32_t, t->parent, t->parent_cap);
    }
    t->parent[node] = parent;
    PrefixNode *x = &t->recent[node % RECENT_NODES];
    *x = (PrefixNode){.p1 = p1, .p2 = p2, .ra = ra, .rb = rb, .id = node, .child = NODE_NONE,
                      .last_child = NODE_NONE, .sibling = NODE_NONE};
    memcpy(x->w, w, sizeof x->w);
    PrefixNode *pv = node_at(t, parent);
    if (!pv)
        return node;
    if (pv->n_children++ < SCAN_CHILDREN) {
        PrefixNode *last = kept(t, pv->last_child);
        if (last)
            last->sibling = node;
        else
            pv->child = node; /* the first, or the list's last one is no longer kept */
        pv->last_child = node;
        return node;
    }
    if ((t->table_used + 1) * 2 > t->table_cap)
        table_grow(t);
    PrefixSlot *e = table_slot(t, p1, p2);
    if (e->node == NODE_NONE)
        t->table_used++;
    *e = (PrefixSlot){p1, p2, node};
    return node;
}

/* The kept child of node `parent` whose record's words are `w`, or NULL. */
static PrefixNode *child_with(StoreTimelines *t, uint32_t parent, const uint64_t w[8])
{
    const PrefixNode *pv = node_at(t, parent);
    for (PrefixNode *c = pv ? kept(t, pv->child) : NULL; c; c = kept(t, c->sibling))
        if (memcmp(c->w, w, sizeof c->w) == 0)
            return c;
    return NULL;
}

/* The child of node `parent` whose prefix is (p1, p2), made when new (*made true). A prefix's
 * hash covers its parent's, so the only place it can be is among that parent's children (the
 * list holds the first SCAN_CHILDREN, the table the others). */
static uint32_t prefix_node(StoreTimelines *t, uint64_t p1, uint64_t p2, uint32_t parent,
                            const uint64_t w[8], uint64_t ra, uint64_t rb, bool *made)
{
    const PrefixNode *pv = node_at(t, parent);
    *made = false;
    if (pv && pv->n_children > SCAN_CHILDREN) {
        const PrefixSlot *e = table_slot(t, p1, p2);
        if (e->node != NODE_NONE)
            return e->node;
    }
    if (t->n_nodes == NODE_NONE) {
        t->overflow = true;
        return parent;
    }
    *made = true;
    return new_child(t, parent, p1, p2, w, ra, rb);
}

bool store_timelines_add_one(StoreTimelines *t, const SchedRecord *x, SchedRecord *node)
{
    grow(t, x->rank + 1);
    RankLine *L = &t->ranks[x->rank];
    L->marked |= (x->flags & SCHED_RECORD_SEGMENT) != 0;
    int32_t slot = x->group >= 0 ? slot_of(L, x->group) : -1;
    uint64_t w[8], a, b;
    store_record_words(x, slot, w);
    L->n++;
    t->n_records++;
    /* in step with a rank before it: a child of its node holds this very record, and its
     * hashes are this record's */
    const PrefixNode *c = child_with(t, L->node, w);
    if (c) {
        L->h1 += c->ra;
        L->h2 += c->rb;
        L->p1 = c->p1;
        L->p2 = c->p2;
        L->node = c->id;
        return false;
    }
    store_record_hash(w, &a, &b);
    L->h1 += a;
    L->h2 += b;
    uint64_t p1 = L->p1, p2 = L->p2;
    L->p1 = store_mum(p1 ^ a, p2 ^ STORE_HASH_K[2]);
    L->p2 = store_mum(p2 ^ b, p1 ^ STORE_HASH_K[3]);
    bool made;
    L->node = prefix_node(t, L->p1, L->p2, L->node, w, a, b, &made);
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
        keys[r] = (StoreRunKey){L->n, L->h1, L->h2};
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
    StoreTimelinesSize z = {.records = t->n_records, .timelines = t->n_timelines,
                            .staged = t->n_nodes};
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

/* The node records: an array, or the staging file mapped (NULL with `error` set). */
static const SchedRecord *map_nodes(StoreTimelines *t, const StoreRecordSource *src, size_t *bytes,
                                    GError **error)
{
    *bytes = 0;
    if (src->recs || !t->n_nodes)
        return src->recs;
    *bytes = (size_t)src->n_staged * sizeof(SchedRecord);
    void *m = src->fd >= 0 ? mmap(NULL, *bytes, PROT_READ, MAP_PRIVATE, src->fd, 0) : MAP_FAILED;
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

static bool insert_line(StoreTimelines *t, uint32_t line, const SchedRecord *nodes,
                        GError **error)
{
    const RankLine *L = &t->ranks[t->first[line]];
    g_autofree uint32_t *path = g_new(uint32_t, MAX(L->n, 1));
    size_t n = 0;
    for (uint32_t v = L->node; v != NODE_NONE && n < L->n; v = t->parent[v])
        path[n++] = v;
    if (n != L->n) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: the run's time line %u lost records in staging", t->path, line);
        return false;
    }
    /* a line whose ops mark where its segments begin (served steps) is stored as segments;
     * records already in idx order (a rank's records almost always are) go as they are */
    bool segmented = false, sorted = true;
    for (size_t i = n; i-- > 0;) {
        const SchedRecord *x = node_rec(t, nodes, path[i]);
        segmented |= (x->flags & SCHED_RECORD_SEGMENT) != 0;
        sorted = sorted && (i + 1 == n || node_rec(t, nodes, path[i + 1])->idx < x->idx);
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

static bool insert_lines(StoreTimelines *t, const StoreRecordSource *src, GError **error)
{
    uint64_t have = src->recs ? src->n : src->n_staged;
    if (t->overflow || have != t->n_nodes) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: the run's time lines: %" G_GUINT64_FORMAT " records staged for %u"
                    " distinct ones%s", t->path, have, t->n_nodes,
                    t->overflow ? " (more than 4 billion distinct records)" : "");
        return false;
    }
    size_t bytes;
    const SchedRecord *nodes = map_nodes(t, src, &bytes, error);
    if (!nodes && t->n_nodes)
        return false;
    bool ok = true;
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
        store_ops_sql_error(error, t->db, t->path, "prepare rank_timelines");
    for (uint32_t r = 0; ok && r < t->n_ranks; r++) {
        const RankLine *L = &t->ranks[r];
        if (!L->n)
            continue;
        sqlite3_bind_int64(m, 1, t->id);
        sqlite3_bind_int64(m, 2, r);
        sqlite3_bind_int64(m, 3, L->timeline);
        ok = sqlite3_step(m) == SQLITE_DONE ||
             store_ops_sql_error(error, t->db, t->path, "insert rank_timelines");
        sqlite3_reset(m);
        for (uint32_t k = 0; ok && k < L->n_groups; k++) {
            sqlite3_bind_int64(g, 1, t->id);
            sqlite3_bind_int64(g, 2, r);
            sqlite3_bind_int64(g, 3, k);
            sqlite3_bind_int64(g, 4, group_of(L, k));
            ok = sqlite3_step(g) == SQLITE_DONE ||
                 store_ops_sql_error(error, t->db, t->path, "insert rank_groups");
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
    t->rows_total = store_timelines_size(t).rows;
    t->rows_done = 0;
    static const char head[] =
        "INSERT INTO timeline_ops(run_id, timeline, idx, layer, name_id, kind, tokens, slot,"
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
