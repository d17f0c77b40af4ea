/* src/store/store-cut.c — time lines cut into segments as records arrive; see store-cut.h. */
#include "store-cut.h"

#include "store-error.h"

#include <string.h>

/* A part: its segment's key and chain end (the node after its last record), where it starts,
 * and its bases (bases[base_off .. base_off + n_bases), in slot order). */
typedef struct {
    StoreRunKey key;
    uint32_t end;
    uint32_t base_off, n_bases;
    uint64_t idx0;
    int64_t t0;
    uint64_t hash;
} Part;

/* A slot's base while its part is open. */
typedef struct {
    uint64_t before;
    bool set;
} OpenBase;

typedef struct {
    StoreTrieAt at;     /* the open part's chain */
    StoreRunKey seg;    /* its records so far: count and hash sums */
    uint64_t idx0, last_idx;
    int64_t t0;
    GArray *bases;      /* OpenBase per slot, the open part's */
    GArray *parts;      /* uint32_t part ids, in order */
    uint64_t l1, l2;    /* the parts (and raw records) so far, hashed in order */
    GArray *raw;        /* records after the order broke (absolute, group = slot), or NULL */
    bool open, used;
} Rank;

struct StoreCut {
    StoreTrie *trie;
    Rank *ranks;
    uint32_t n_ranks;
    GArray *parts;      /* Part */
    GArray *bases;      /* StoreSeqBase */
    uint32_t *table;    /* part ids + 1 by hash (0: free), open addressing */
    size_t table_cap;   /* a power of two */
};

StoreCut *store_cut_new(StoreTrie *trie)
{
    StoreCut *c = g_new0(StoreCut, 1);
    c->trie = trie;
    c->parts = g_array_new(FALSE, FALSE, sizeof(Part));
    c->bases = g_array_new(FALSE, FALSE, sizeof(StoreSeqBase));
    return c;
}

void store_cut_free(StoreCut *c)
{
    if (!c)
        return;
    for (uint32_t r = 0; r < c->n_ranks; r++) {
        Rank *R = &c->ranks[r];
        if (R->bases)
            g_array_unref(R->bases);
        if (R->parts)
            g_array_unref(R->parts);
        if (R->raw)
            g_array_unref(R->raw);
    }
    g_free(c->ranks);
    g_array_unref(c->parts);
    g_array_unref(c->bases);
    g_free(c->table);
    g_free(c);
}

static Rank *rank_new(StoreCut *c, uint32_t rank)
{
    if (rank >= c->n_ranks) {
        uint32_t n = MAX(rank + 1, c->n_ranks * 2);
        c->ranks = g_renew(Rank, c->ranks, n);
        memset(c->ranks + c->n_ranks, 0, (size_t)(n - c->n_ranks) * sizeof(Rank));
        c->n_ranks = n;
    }
    Rank *R = &c->ranks[rank];
    if (!R->used) {
        R->used = true;
        R->bases = g_array_new(FALSE, TRUE, sizeof(OpenBase));
        R->parts = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        R->l1 = STORE_HASH_K[6];
        R->l2 = STORE_HASH_K[7];
    }
    return R;
}

/* Rank `rank`'s state, made on its first record. */
static inline Rank *rank_of(StoreCut *c, uint32_t rank)
{
    return rank < c->n_ranks && c->ranks[rank].used ? &c->ranks[rank] : rank_new(c, rank);
}

/* Mixes word `v` into a rank's running hash of its parts. */
static void mix(Rank *R, uint64_t v)
{
    uint64_t l1 = R->l1, l2 = R->l2;
    R->l1 = store_mum(l1 ^ v, l2 ^ STORE_HASH_K[0]);
    R->l2 = store_mum(l2 ^ v ^ STORE_HASH_K[9], l1 ^ STORE_HASH_K[1]);
}

/* Part `p`'s bases (NULL when it has none). */
static const StoreSeqBase *bases_of(const StoreCut *c, const Part *p)
{
    return p->n_bases ? &g_array_index(c->bases, StoreSeqBase, p->base_off) : NULL;
}

static bool part_equal(const StoreCut *c, const Part *a, const Part *b)
{
    if (a->hash != b->hash || !store_run_key_equal(&a->key, &b->key) || a->idx0 != b->idx0 ||
        a->t0 != b->t0 || a->n_bases != b->n_bases)
        return false;
    const StoreSeqBase *x = bases_of(c, a), *y = bases_of(c, b);
    for (uint32_t i = 0; i < a->n_bases; i++)
        if (x[i].slot != y[i].slot || x[i].before != y[i].before)
            return false;
    return true;
}

static void table_grow(StoreCut *c)
{
    size_t cap = c->table_cap ? c->table_cap * 2 : 1024;
    uint32_t *nt = g_new0(uint32_t, cap);
    for (size_t i = 0; i < c->table_cap; i++) {
        uint32_t id = c->table[i];
        if (!id)
            continue;
        size_t j = g_array_index(c->parts, Part, id - 1).hash & (cap - 1);
        while (nt[j])
            j = (j + 1) & (cap - 1);
        nt[j] = id;
    }
    g_free(c->table);
    c->table = nt;
    c->table_cap = cap;
}

/* The id of the part just appended to c->parts (its bases at the end of c->bases): an equal
 * part's, which it then gives back, or its own. */
static uint32_t intern_last(StoreCut *c)
{
    if ((c->parts->len + 1) * 2 > c->table_cap)
        table_grow(c);
    uint32_t id = c->parts->len - 1;
    const Part *p = &g_array_index(c->parts, Part, id);
    size_t mask = c->table_cap - 1, j = p->hash & mask;
    for (; c->table[j]; j = (j + 1) & mask) {
        uint32_t other = c->table[j] - 1;
        if (part_equal(c, &g_array_index(c->parts, Part, other), p)) {
            g_array_set_size(c->bases, p->base_off);
            g_array_set_size(c->parts, id);
            return other;
        }
    }
    c->table[j] = id + 1;
    return id;
}

/* Appends the part of key `key` ending at node `end`, starting at (`idx0`, `t0`), whose bases
 * are the set ones of `bases[0 .. n_slots)`, and interns it: its id. */
static uint32_t add_part(StoreCut *c, const StoreRunKey *key, uint32_t end, uint64_t idx0,
                         int64_t t0, const OpenBase *bases, guint n_slots)
{
    Part p = {.key = *key, .end = end, .base_off = c->bases->len, .idx0 = idx0, .t0 = t0};
    uint64_t h = store_mum(key->h1 ^ idx0, key->h2 ^ (uint64_t)t0);
    for (guint k = 0; k < n_slots; k++) {
        if (!bases[k].set)
            continue;
        StoreSeqBase sb = {k, bases[k].before};
        g_array_append_val(c->bases, sb);
        h = store_mum(h ^ k, bases[k].before ^ STORE_HASH_K[5]);
        p.n_bases++;
    }
    p.hash = h ^ key->n;
    g_array_append_val(c->parts, p);
    return intern_last(c);
}

/* Closes rank `R`'s open part: interned and added to its parts. */
static void close_part(StoreCut *c, Rank *R)
{
    if (!R->open)
        return;
    uint32_t id = add_part(c, &R->seg, R->at.node, R->idx0, R->t0,
                           (const OpenBase *)(const void *)R->bases->data, R->bases->len);
    g_array_append_val(R->parts, id);
    mix(R, id);
    R->open = false;
}

/* Opens a part at record `x`. */
static void open_part(Rank *R, const SchedRecord *x)
{
    R->at = store_trie_start();
    R->seg = (StoreRunKey){0, 0, 0};
    R->idx0 = x->idx;
    R->t0 = x->start_ns;
    for (guint k = 0; k < R->bases->len; k++)
        g_array_index(R->bases, OpenBase, k).set = false;
    R->open = true;
}

static uint64_t seq_before(const SchedRecord *x)
{
    return x->seq ? x->seq - 1 : 0;
}

/* Whether record `x` keeps rank `R`'s promise (store-cut.h): idx after the last, and inside an
 * open part no start before the part's and no sequence number before its slot's first. */
static bool in_order(const Rank *R, const SchedRecord *x, int32_t slot, bool mark)
{
    if (!R->open)
        return true;
    if (x->idx <= R->last_idx)
        return false;
    if (mark)
        return true;
    if (x->start_ns < R->t0)
        return false;
    if (slot < 0 || (guint)slot >= R->bases->len)
        return true;
    const OpenBase *b = &g_array_index(R->bases, OpenBase, (guint)slot);
    return !b->set || seq_before(x) >= b->before;
}

/* Keeps record `x` as it came (the rank's order broke). */
static void keep_raw(Rank *R, const SchedRecord *x, int32_t slot)
{
    SchedRecord r = *x;
    r.group = slot;
    g_array_append_val(R->raw, r);
    uint64_t w[8], a, b;
    store_record_words(x, slot, w);
    store_record_hash(w, &a, &b);
    mix(R, a);
    mix(R, b);
}

bool store_cut_add(StoreCut *c, const SchedRecord *x, int32_t slot, SchedRecord *node)
{
    Rank *R = rank_of(c, x->rank);
    bool mark = (x->flags & SCHED_RECORD_SEGMENT) != 0;
    if (!R->raw && !in_order(R, x, slot, mark)) {
        close_part(c, R);
        R->raw = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        mix(R, UINT64_MAX); /* where the raw records begin */
    }
    if (R->raw) {
        keep_raw(R, x, slot);
        return false;
    }
    if (mark || !R->open) {
        close_part(c, R);
        open_part(R, x);
    }
    R->last_idx = x->idx;
    /* the record relative to its part, as words (store_record_words of the relative record,
     * written over the absolute one's: no copy of the record, which cost a stall a record) */
    uint64_t seq = x->seq;
    if (slot >= 0) {
        if (R->bases->len <= (guint)slot)
            g_array_set_size(R->bases, (guint)slot + 1); /* zeroed: not set */
        OpenBase *b = &g_array_index(R->bases, OpenBase, (guint)slot);
        if (!b->set)
            *b = (OpenBase){seq_before(x), true};
        seq -= b->before;
    }
    uint64_t idx = x->idx - R->idx0;
    int64_t start = x->start_ns - R->t0, end = x->end_ns >= 0 ? x->end_ns - R->t0 : x->end_ns;
    uint64_t w[8], a, h;
    store_record_words(x, slot, w);
    w[2] = idx;
    w[3] = x->group >= 0 ? seq : 0;
    w[6] = (uint64_t)start;
    w[7] = (uint64_t)(end < 0 ? -1 : end);
    bool made = store_trie_next(c->trie, &R->at, w, true, &a, &h);
    R->seg.n++;
    R->seg.h1 += a;
    R->seg.h2 += h;
    if (made) {
        /* every byte of the staged record written, its padding too (copied from `x`): a
         * struct assignment, whose fields the compiler keeps apart, left the padding unset in
         * the staging buffer, and its write to the staging file read it (valgrind) */
        memcpy(node, x, sizeof *node);
        node->idx = idx;
        node->start_ns = start;
        node->end_ns = end;
        node->seq = seq;
        node->group = slot;
    }
    return made;
}

StoreRunKey store_cut_key(StoreCut *c, uint32_t rank, uint64_t n)
{
    Rank *R = rank_of(c, rank);
    close_part(c, R);
    /* a tag keeps these keys apart from the record sums of other time lines */
    return (StoreRunKey){n, R->l1 ^ STORE_HASH_K[8], R->l2};
}

/* ---- insertion ---- */

typedef struct {
    StoreCut *c;
    const SchedRecord *nodes;
    uint64_t n_nodes;
    GArray *chain; /* uint32_t node ids, last record first */
} Reader;

/* Part `p`'s nodes into r->chain, its last record's first. False with `error` when the staged
 * nodes do not hold them (a bug, or a staging file cut short). */
static bool read_chain(Reader *r, const Part *p, GError **error)
{
    g_array_set_size(r->chain, 0);
    uint32_t v = p->end;
    while (v != STORE_TRIE_ROOT && v < r->n_nodes && r->chain->len < p->key.n) {
        g_array_append_val(r->chain, v);
        v = store_trie_parent(r->c->trie, v);
    }
    if (r->chain->len == p->key.n && v == STORE_TRIE_ROOT)
        return true;
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                "the run's time line lost a segment's records in staging (%u of %" G_GUINT64_FORMAT
                ")", r->chain->len, p->key.n);
    return false;
}

typedef struct {
    Reader *r;
    const Part *p;
} SegRows;

static bool segment_rows(void *data, StoreSegments *s, uint32_t segment, GError **error)
{
    SegRows *q = data;
    if (!read_chain(q->r, q->p, error))
        return false;
    bool ok = true;
    for (guint i = q->r->chain->len; ok && i-- > 0;) {
        SchedRecord x = q->r->nodes[g_array_index(q->r->chain, uint32_t, i)];
        x.rank = segment;
        ok = store_segments_row(s, &x, error);
    }
    return ok;
}

static int by_idx(const void *a, const void *b)
{
    const SchedRecord *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Part `p`'s records made absolute again, appended to `out`. */
static bool absolute(Reader *r, const Part *p, GArray *out, GError **error)
{
    if (!read_chain(r, p, error))
        return false;
    const StoreSeqBase *bases = bases_of(r->c, p);
    for (guint i = r->chain->len; i-- > 0;) {
        SchedRecord x = r->nodes[g_array_index(r->chain, uint32_t, i)];
        x.idx += p->idx0;
        x.start_ns += p->t0;
        if (x.end_ns >= 0)
            x.end_ns += p->t0;
        for (uint32_t k = 0; x.group >= 0 && k < p->n_bases; k++)
            if (bases[k].slot == (uint32_t)x.group)
                x.seq += bases[k].before;
        g_array_append_val(out, x);
    }
    return true;
}

/* Records sorted in memory at a time (store-timelines.c's budget, 2^19 x 64 B = 32 MiB): a
 * longer line goes in the order recorded, as store-timelines.c writes one. */
#define SORT_RECORDS ((uint64_t)1 << 19)

/* Records `recs` of time line `line`, through store_segments_add. */
static bool add_all(const SchedRecord *recs, guint n, int64_t line, StoreSegments *segs,
                    GError **error)
{
    bool ok = true;
    for (guint i = 0; ok && i < n; i++) {
        SchedRecord x = recs[i];
        x.rank = (uint32_t)line;
        ok = store_segments_add(segs, &x, error);
    }
    return ok;
}

/* A rank whose order broke: its records cut again by store_segments_add, back in idx order —
 * in the order they came (parts, then the records kept raw) when there are more than
 * SORT_RECORDS, as the line was written before records were cut as they came. */
static bool insert_raw(Reader *r, const Rank *R, int64_t line, StoreSegments *segs,
                       StoreCutTick tick, void *data, GError **error)
{
    uint64_t n = R->raw->len;
    for (guint i = 0; i < R->parts->len; i++)
        n += g_array_index(r->c->parts, Part, g_array_index(R->parts, uint32_t, i)).key.n;
    bool sort = n <= SORT_RECORDS;
    g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    bool ok = true;
    for (guint i = 0; ok && i < R->parts->len; i++) {
        if (!sort)
            g_array_set_size(all, 0);
        ok = absolute(r, &g_array_index(r->c->parts, Part, g_array_index(R->parts, uint32_t, i)),
                      all, error) &&
             (sort || add_all((const SchedRecord *)(void *)all->data, all->len, line, segs,
                              error));
    }
    if (!ok)
        return false;
    if (sort) {
        g_array_append_vals(all, R->raw->data, R->raw->len);
        qsort(all->data, all->len, sizeof(SchedRecord), by_idx);
        ok = add_all((const SchedRecord *)(void *)all->data, all->len, line, segs, error);
    } else {
        ok = add_all((const SchedRecord *)(void *)R->raw->data, R->raw->len, line, segs, error);
    }
    if (tick)
        tick(data, n);
    return ok;
}

/* ---- a rank out of order keyed as if in order ---- */

/* Records of a rank in the order store_segments_add takes them, cut into parts as it cuts
 * them (a part begins at a marked record) and keyed as close_part keys an in-order rank's. */
typedef struct {
    StoreCut *c;
    Rank *R;
    GArray *cur;  /* SchedRecord: the part's records (absolute, group = slot) */
    GArray *base; /* OpenBase per slot */
} Recut;

/* The part so far: made relative as store-segments.c's relative() makes it (from its least
 * idx, start and per-slot sequence number), interned, mixed into the rank's key. */
static void recut_close(Recut *k)
{
    guint n = k->cur->len;
    if (!n)
        return;
    const SchedRecord *r = (const SchedRecord *)(void *)k->cur->data;
    uint64_t idx0 = r[0].idx;
    int64_t t0 = r[0].start_ns;
    for (guint i = 0; i < k->base->len; i++)
        g_array_index(k->base, OpenBase, i).set = false;
    for (guint i = 0; i < n; i++) {
        idx0 = MIN(idx0, r[i].idx);
        t0 = MIN(t0, r[i].start_ns);
        if (r[i].group < 0)
            continue;
        if (k->base->len <= (guint)r[i].group)
            g_array_set_size(k->base, (guint)r[i].group + 1); /* zeroed: not set */
        OpenBase *b = &g_array_index(k->base, OpenBase, (guint)r[i].group);
        uint64_t before = seq_before(&r[i]);
        if (!b->set || before < b->before)
            *b = (OpenBase){before, true};
    }
    StoreRunKey key = {.n = n};
    for (guint i = 0; i < n; i++) {
        SchedRecord x = r[i];
        x.idx -= idx0;
        x.start_ns -= t0;
        if (x.end_ns >= 0)
            x.end_ns -= t0;
        if (x.group >= 0)
            x.seq -= g_array_index(k->base, OpenBase, (guint)x.group).before;
        uint64_t w[8], a, h;
        store_record_words(&x, x.group, w);
        store_record_hash(w, &a, &h);
        key.h1 += a;
        key.h2 += h;
    }
    /* never read: the rank's rows come from its own parts and raw records (insert_raw) */
    mix(k->R, add_part(k->c, &key, STORE_TRIE_ROOT, idx0, t0,
                       (const OpenBase *)(const void *)k->base->data, k->base->len));
    g_array_set_size(k->cur, 0);
}

static void recut_add(Recut *k, const SchedRecord *recs, guint n)
{
    for (guint i = 0; i < n; i++) {
        if (recs[i].flags & SCHED_RECORD_SEGMENT)
            recut_close(k);
        g_array_append_val(k->cur, recs[i]);
    }
}

bool store_cut_rekey(StoreCut *c, uint32_t rank, const SchedRecord *nodes, uint64_t n_nodes,
                     bool *changed, GError **error)
{
    Rank *R = rank_of(c, rank);
    if (!R->raw)
        return true;
    close_part(c, R);
    *changed = true;
    g_autoptr(GArray) chain = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    g_autoptr(GArray) cur = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    g_autoptr(GArray) base = g_array_new(FALSE, TRUE, sizeof(OpenBase));
    Reader r = {c, nodes, n_nodes, chain};
    Recut k = {c, R, cur, base};
    uint64_t n = R->raw->len;
    for (guint i = 0; i < R->parts->len; i++)
        n += g_array_index(c->parts, Part, g_array_index(R->parts, uint32_t, i)).key.n;
    bool sort = n <= SORT_RECORDS, ok = true;
    R->l1 = STORE_HASH_K[6];
    R->l2 = STORE_HASH_K[7];
    for (guint i = 0; ok && i < R->parts->len; i++) {
        if (!sort)
            g_array_set_size(all, 0);
        /* the part is read before recut_add appends parts to c->parts */
        ok = absolute(&r, &g_array_index(c->parts, Part, g_array_index(R->parts, uint32_t, i)),
                      all, error);
        if (ok && !sort)
            recut_add(&k, (const SchedRecord *)(void *)all->data, all->len);
    }
    if (!ok)
        return false;
    if (sort) {
        g_array_append_vals(all, R->raw->data, R->raw->len);
        qsort(all->data, all->len, sizeof(SchedRecord), by_idx);
        recut_add(&k, (const SchedRecord *)(void *)all->data, all->len);
    } else {
        recut_add(&k, (const SchedRecord *)(void *)R->raw->data, R->raw->len);
    }
    recut_close(&k);
    return true;
}

bool store_cut_insert(StoreCut *c, uint32_t rank, int64_t line, const SchedRecord *nodes,
                      uint64_t n_nodes, StoreSegments *segs, StoreCutTick tick, void *data,
                      GError **error)
{
    Rank *R = rank_of(c, rank);
    close_part(c, R);
    g_autoptr(GArray) chain = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    Reader r = {c, nodes, n_nodes, chain};
    bool ok = true;
    if (R->raw) {
        ok = insert_raw(&r, R, line, segs, tick, data, error);
    } else {
        for (guint i = 0; ok && i < R->parts->len; i++) {
            const Part *p = &g_array_index(c->parts, Part, g_array_index(R->parts, uint32_t, i));
            SegRows q = {&r, p};
            ok = store_segments_put(segs, line, &p->key, p->idx0, p->t0, bases_of(c, p),
                                    p->n_bases, segment_rows, &q, error);
            if (tick)
                tick(data, p->key.n);
        }
    }
    return ok && store_segments_end_line(segs, error);
}
