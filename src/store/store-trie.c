/* src/store/store-trie.c — prefix nodes shared by chains of records in step; see
 * store-trie.h. */
#include "store-trie.h"

#include "store-hash.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A recent node: its prefix hash, the hash and the words of its record, and its first
 * SCAN_CHILDREN children in a list. Node v is kept at v % ring; a chain in step
 * with another finds its record's words among a kept node's children and takes the hashes kept
 * there, without hashing (the hash was a third of the default time line's cost, perf). */
typedef struct {
    uint64_t p1, p2;
    uint64_t ra, rb;                     /* the hash of the node's record (store_record_hash) */
    uint64_t w[8];                       /* the node's record as words (store_record_words) */
    uint32_t id;                         /* the node this slot holds */
    uint32_t child, last_child, sibling; /* STORE_TRIE_ROOT: none */
    uint32_t n_children;
    bool indexed; /* made by an indexed chain: filed in the table when it leaves the ring */
} Node;

/* Nodes kept: at most 262,144 x 128 B = 32 MiB. Chains in step are a few nodes apart; a served
 * run's steps that recur (store-cut.h) are found here without hashing while their segments'
 * records number fewer. The ring starts at RING_FIRST nodes (512 KiB), made with the first
 * node, and grows to its full size when they are all in use: every node made is still kept
 * then, so which nodes are kept is the same as with the full ring from the start. A run of few
 * records (a sweep stores them by the thousand) then neither maps nor unmaps 32 MiB (a tenth
 * of the sweep's writer thread, perf), and a large one pays one copy of 512 KiB (doubling
 * instead made the served run 3 % slower: each step faulted in fresh pages again). */
#define STORE_TRIE_RECENT (1u << 18)
#define RING_FIRST (1u << 12)

/* Large arrays (the kept nodes, the table) in transparent huge pages where the kernel gives
 * them: a page fault in a virtual machine costs microseconds, and a 2 MiB page takes the place
 * of 512 of them (perf: first touches were half of the trie's time on a served run). */
#define HUGE_PAGE ((size_t)2 << 20)

static void *big_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return g_malloc(bytes);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
        g_error("out of memory (%zu bytes)", bytes);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* advice: without it, ordinary pages */
#endif
    return p;
}

static void big_free(void *p, size_t bytes)
{
    if (bytes < HUGE_PAGE)
        g_free(p);
    else
        free(p);
}

/* A slot of the table of children beyond a node's first SCAN_CHILDREN (node NONE: free). */
typedef struct {
    uint64_t p1, p2;
    uint32_t node;
} Slot;

/* Children looked for in a node's list before its table: chains in step follow the first child
 * (the next node made), chains that diverge fan out and go through the table. */
#define SCAN_CHILDREN 8

#define NONE STORE_TRIE_ROOT

struct StoreTrie {
    Node root;     /* the empty prefix */
    Node *recent;  /* `ring` slots; NULL until the first node */
    uint32_t ring; /* a power of two, up to STORE_TRIE_RECENT */
    uint32_t n_nodes;
    uint32_t *parent; /* per node: its parent, NONE for the root's children */
    size_t parent_cap;
    Slot *table;      /* children beyond SCAN_CHILDREN; NULL until one is */
    size_t table_cap; /* a power of two */
    size_t table_used;
    bool overflow; /* more distinct prefixes than node ids */
};

StoreTrie *store_trie_new(void)
{
    StoreTrie *t = g_new0(StoreTrie, 1);
    t->root = (Node){.id = NONE, .child = NONE, .last_child = NONE, .sibling = NONE};
    return t;
}

void store_trie_free(StoreTrie *t)
{
    if (!t)
        return;
    big_free(t->table, t->table_cap * sizeof(Slot));
    g_free(t->parent);
    big_free(t->recent, (size_t)t->ring * sizeof(Node));
    g_free(t);
}

uint32_t store_trie_parent(const StoreTrie *t, uint32_t v)
{
    return v < t->n_nodes ? t->parent[v] : NONE;
}

uint32_t store_trie_count(const StoreTrie *t)
{
    return t->n_nodes;
}

bool store_trie_overflow(const StoreTrie *t)
{
    return t->overflow;
}

static void table_grow(StoreTrie *t)
{
    size_t cap = t->table_cap ? t->table_cap * 2 : 1024;
    Slot *old = t->table, *nt = big_alloc(cap * sizeof(Slot));
    for (size_t i = 0; i < cap; i++)
        nt[i].node = NONE;
    for (size_t i = 0; i < t->table_cap; i++) {
        if (old[i].node == NONE)
            continue;
        size_t j = old[i].p1 & (cap - 1);
        while (nt[j].node != NONE)
            j = (j + 1) & (cap - 1);
        nt[j] = old[i];
    }
    big_free(old, t->table_cap * sizeof(Slot));
    t->table = nt;
    t->table_cap = cap;
}

/* The table's slot of prefix (p1, p2): its node's, or the free slot where it goes. */
static Slot *table_slot(StoreTrie *t, uint64_t p1, uint64_t p2)
{
    size_t mask = t->table_cap - 1, j = p1 & mask;
    while (t->table[j].node != NONE && (t->table[j].p1 != p1 || t->table[j].p2 != p2))
        j = (j + 1) & mask;
    return &t->table[j];
}

/* Node `v` if it is still kept (the root always is), else NULL. */
static inline Node *node_at(StoreTrie *t, uint32_t v)
{
    if (v == NONE)
        return &t->root;
    Node *x = &t->recent[v & (t->ring - 1)];
    return t->n_nodes - v <= t->ring && x->id == v ? x : NULL;
}

/* The ring made, or grown to its full size: node `next` is about to be made and every node
 * before it is kept, the last `ring` of them at their slots. */
static void ring_grow(StoreTrie *t, uint32_t next)
{
    uint32_t cap = t->ring ? STORE_TRIE_RECENT : RING_FIRST;
    Node *nr = big_alloc((size_t)cap * sizeof(Node));
    for (uint32_t v = next - MIN(next, t->ring); v < next; v++)
        nr[v & (cap - 1)] = t->recent[v & (t->ring - 1)];
    big_free(t->recent, (size_t)t->ring * sizeof(Node));
    t->recent = nr;
    t->ring = cap;
}

/* Node `v` of a list (NONE: the end) if it is still kept, else NULL. */
static inline Node *kept(StoreTrie *t, uint32_t v)
{
    return v == NONE ? NULL : node_at(t, v);
}

/* Files node `node` under its prefix (p1, p2) in the table. */
static void table_put(StoreTrie *t, uint64_t p1, uint64_t p2, uint32_t node)
{
    if ((t->table_used + 1) * 2 > t->table_cap)
        table_grow(t);
    Slot *e = table_slot(t, p1, p2);
    if (e->node == NONE)
        t->table_used++;
    *e = (Slot){p1, p2, node};
}

/* Indexed node `x` is about to leave the ring: it, and the kept nodes only its list led to
 * (its children, its later siblings: a list is scanned from its first, oldest entry), are
 * filed in the table, so an indexed chain still finds them. */
static void file_leaving(StoreTrie *t, const Node *x)
{
    table_put(t, x->p1, x->p2, x->id);
    for (const Node *c = kept(t, x->child); c; c = kept(t, c->sibling))
        table_put(t, c->p1, c->p2, c->id);
    for (const Node *c = kept(t, x->sibling); c; c = kept(t, c->sibling))
        table_put(t, c->p1, c->p2, c->id);
}

/* A new child (p1, p2) of node `parent` whose record is `w`, hashed (ra, rb): in the parent's
 * list while it is kept and has room, else in the table (a parent no longer kept: only for an
 * indexed chain). Returns its id. */
static uint32_t new_child(StoreTrie *t, uint32_t parent, uint64_t p1, uint64_t p2,
                          const uint64_t w[8], uint64_t ra, uint64_t rb, bool indexed)
{
    uint32_t node = t->n_nodes++;
    if (node >= t->parent_cap) {
        t->parent_cap = MAX(t->parent_cap * 2, 1024);
        t->parent = g_renew(uint32_t, t->parent, t->parent_cap);
    }
    t->parent[node] = parent;
    if (node >= t->ring && t->ring < STORE_TRIE_RECENT)
        ring_grow(t, node);
    Node *x = &t->recent[node & (t->ring - 1)];
    if (node >= t->ring && x->indexed)
        file_leaving(t, x);
    *x = (Node){.p1 = p1,
                .p2 = p2,
                .ra = ra,
                .rb = rb,
                .id = node,
                .child = NONE,
                .last_child = NONE,
                .sibling = NONE,
                .indexed = indexed};
    memcpy(x->w, w, sizeof x->w);
    Node *pv = node_at(t, parent);
    bool listed = pv && pv->n_children++ < SCAN_CHILDREN;
    if (listed) {
        Node *last = kept(t, pv->last_child);
        if (last)
            last->sibling = node;
        else
            pv->child = node; /* the first, or the list's last one is no longer kept */
        pv->last_child = node;
    } else if (pv || indexed) {
        table_put(t, p1, p2, node);
    }
    return node;
}

/* The kept child of node `pv` whose record's words are `w`, made by a chain of the same kind
 * (`indexed`), or NULL. The root's children are shared by both kinds, and the words leave out
 * a record's flags: an indexed chain (store-cut.c: relative records, each part's first marked)
 * and another (absolute records, its first unmarked) can have equal words at the root, and the
 * node's staged record, the flags with it, must be the chain's own. */
static Node *child_with(StoreTrie *t, const Node *pv, const uint64_t w[8], bool indexed)
{
    for (Node *c = kept(t, pv->child); c; c = kept(t, c->sibling))
        if (memcmp(c->w, w, sizeof c->w) == 0 && c->indexed == indexed)
            return c;
    return NULL;
}

/* store_trie_next past a miss in the kept lists: the record is hashed, and its node found in
 * the table or made. Kept out of line, so the hit path stays a few instructions. */
static G_GNUC_NO_INLINE bool next_slow(StoreTrie *t, StoreTrieAt *at, const Node *pv,
                                       const uint64_t w[8], bool indexed, uint64_t *ra,
                                       uint64_t *rb)
{
    store_record_hash(w, ra, rb);
    /* the two kinds of chain hash their prefixes apart, so the table never gives one the
     * other's node (child_with says why) */
    uint64_t kind = indexed ? STORE_HASH_K[9] : 0;
    uint64_t p1 = store_mum(at->p1 ^ *ra, at->p2 ^ STORE_HASH_K[2] ^ kind);
    uint64_t p2 = store_mum(at->p2 ^ *rb, at->p1 ^ STORE_HASH_K[3]);
    at->p1 = p1;
    at->p2 = p2;
    /* a prefix's hash covers its parent's, so the only place it can be is among that parent's
     * children: the list holds the first SCAN_CHILDREN while the parent is kept, the table
     * the others (and an indexed chain's nodes that the ring no longer leads to) */
    if (t->table_cap && (indexed || (pv && pv->n_children > SCAN_CHILDREN))) {
        const Slot *e = table_slot(t, p1, p2);
        if (e->node != NONE) {
            at->node = e->node;
            return false;
        }
    }
    if (t->n_nodes == NONE) {
        t->overflow = true;
        return false;
    }
    at->node = new_child(t, at->node, p1, p2, w, *ra, *rb, indexed);
    return true;
}

bool store_trie_next(StoreTrie *t, StoreTrieAt *at, const uint64_t w[8], bool indexed, uint64_t *ra,
                     uint64_t *rb)
{
    /* in step with a chain before it: a child of its node holds this very record */
    const Node *pv = node_at(t, at->node);
    const Node *c = pv ? child_with(t, pv, w, indexed) : NULL;
    if (G_LIKELY(c)) {
        *ra = c->ra;
        *rb = c->rb;
        *at = (StoreTrieAt){c->id, c->p1, c->p2};
        return false;
    }
    return next_slow(t, at, pv, w, indexed, ra, rb);
}
