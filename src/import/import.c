/* src/import/import.c — the ImportSet: groups, ranks and their recorded calls (src/import/import.h). */
#include "import.h"

#include <string.h>

G_DEFINE_QUARK(ranksim - import - error - quark, import_error)

static void group_free(gpointer data)
{
    ImportGroup *g = data;
    g_free(g->name);
    g_free(g->desc);
    g_array_unref(g->ranks);
    g_free(g);
}

void import_entry_clear(ImportEntry *e)
{
    g_free(e->source); /* name and dtype_name belong to the set */
}

static void entry_clear(gpointer data)
{
    import_entry_clear(data);
}

static void finding_clear(gpointer data)
{
    g_free(((ImportFinding *)data)->source); /* text belongs to the set */
}

static void pg_status_clear(gpointer data)
{
    g_free(((ImportPgStatus *)data)->source);
}

static void rank_free(gpointer data)
{
    ImportRank *r = data;
    g_free(r->path);
    g_free(r->evidence);
    g_array_unref(r->pg_status);
    g_free(r->version);
    g_array_unref(r->entries);
    g_free(r);
}

/* A group's identity in the lookup tables: pointers into the group (never changed once made). */
typedef struct {
    const char *name;
    const int32_t *ranks;
    uint32_t n;
    bool p2p;
    uint64_t *probes; /* the set's group_probes: every comparison counts there */
} GroupKey;

/* FNV-1a over the name, then the ranks (group_index) or not (group_names). */
static guint key_hash(const GroupKey *k, bool with_ranks)
{
    guint32 h = k->p2p ? 2166136261u ^ 1u : 2166136261u;
    for (const unsigned char *c = (const unsigned char *)k->name; *c; c++)
        h = (h ^ *c) * 16777619u;
    for (uint32_t i = 0; with_ranks && i < k->n; i++)
        h = (h ^ (guint32)k->ranks[i]) * 16777619u;
    return h;
}

static guint group_key_hash(gconstpointer p)
{
    return key_hash(p, true);
}

static guint group_name_hash(gconstpointer p)
{
    return key_hash(p, false);
}

static gboolean group_name_equal(gconstpointer a, gconstpointer b)
{
    const GroupKey *x = a, *y = b;
    (*x->probes)++;
    return x->p2p == y->p2p && strcmp(x->name, y->name) == 0;
}

static gboolean group_key_equal(gconstpointer a, gconstpointer b)
{
    const GroupKey *x = a, *y = b;
    return group_name_equal(a, b) && x->n == y->n &&
           memcmp(x->ranks, y->ranks, x->n * sizeof(int32_t)) == 0;
}

ImportSet *import_set_new(ImportFormat format)
{
    ImportSet *s = g_new0(ImportSet, 1);
    s->format = format;
    s->groups = g_ptr_array_new_with_free_func(group_free);
    s->ranks = g_ptr_array_new_with_free_func(rank_free);
    s->warnings = g_ptr_array_new_with_free_func(g_free);
    s->paths = g_ptr_array_new_with_free_func(g_free);
    s->findings = g_array_new(FALSE, TRUE, sizeof(ImportFinding));
    g_array_set_clear_func(s->findings, finding_clear);
    s->strings = g_ptr_array_new_with_free_func((GDestroyNotify)g_string_chunk_free);
    s->group_index = g_hash_table_new_full(group_key_hash, group_key_equal, g_free, NULL);
    s->group_names = g_hash_table_new(group_name_hash, group_name_equal); /* keys: index's */
    return s;
}

void import_set_free(ImportSet *s)
{
    if (!s)
        return;
    g_hash_table_unref(s->group_names);
    g_hash_table_unref(s->group_index);
    g_ptr_array_unref(s->groups);
    g_ptr_array_unref(s->ranks);
    g_ptr_array_unref(s->warnings);
    g_ptr_array_unref(s->paths);
    g_array_unref(s->findings);
    g_ptr_array_unref(s->strings);
    g_free(s->format_detail);
    g_free(s);
}

guint import_hash_u64(gconstpointer key)
{
    uint64_t x = *(const uint64_t *)key;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return (guint)x;
}

const char *import_set_string(ImportSet *s, const char *str)
{
    if (s->strings->len == 0)
        g_ptr_array_add(s->strings, g_string_chunk_new(256));
    return g_string_chunk_insert_const(g_ptr_array_index(s->strings, 0), str);
}

uint32_t import_set_group(ImportSet *s, const char *name, const char *desc, const int32_t *ranks,
                          uint32_t n, bool p2p)
{
    GroupKey probe = {.name = name, .ranks = ranks, .n = n, .p2p = p2p, .probes = &s->group_probes};
    gpointer at = g_hash_table_lookup(s->group_index, &probe);
    if (at)
        return GPOINTER_TO_UINT(at) - 1;
    ImportGroup *g = g_new0(ImportGroup, 1);
    g->name = g_strdup(name);
    g->desc = g_strdup(desc);
    g->ranks = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), n);
    g_array_append_vals(g->ranks, ranks, n);
    g->p2p = p2p;
    g_ptr_array_add(s->groups, g);
    GroupKey *key = g_new(GroupKey, 1);
    *key = (GroupKey){.name = g->name, .ranks = (const int32_t *)(void *)g->ranks->data,
                      .n = n, .p2p = p2p, .probes = &s->group_probes};
    g_hash_table_insert(s->group_index, key, GUINT_TO_POINTER(s->groups->len));
    if (!g_hash_table_contains(s->group_names, key))
        g_hash_table_insert(s->group_names, key, GUINT_TO_POINTER(s->groups->len));
    return s->groups->len - 1;
}

int64_t import_set_group_named(ImportSet *s, const char *name, bool p2p)
{
    GroupKey probe = {.name = name, .p2p = p2p, .probes = &s->group_probes};
    gpointer at = g_hash_table_lookup(s->group_names, &probe);
    return at ? (int64_t)GPOINTER_TO_UINT(at) - 1 : -1;
}

ImportRank *import_set_rank(ImportSet *s, int32_t rank)
{
    g_assert(rank >= 0);
    while (s->ranks->len <= (guint)rank) {
        ImportRank *r = g_new0(ImportRank, 1);
        r->rank = (int32_t)s->ranks->len;
        r->entries = g_array_new(FALSE, TRUE, sizeof(ImportEntry));
        g_array_set_clear_func(r->entries, entry_clear);
        r->pg_status = g_array_new(FALSE, TRUE, sizeof(ImportPgStatus));
        g_array_set_clear_func(r->pg_status, pg_status_clear);
        g_ptr_array_add(s->ranks, r);
    }
    return g_ptr_array_index(s->ranks, (guint)rank);
}

void import_set_warn(ImportSet *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(s->warnings, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}
