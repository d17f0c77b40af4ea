/* src/import/import-fr.c — PyTorch Flight Recorder dumps (and torch_npu's HCCL ones, the pre-2.5
 * schema) into an ImportSet.
 *
 * Both forms torch writes are read: the pickle (src/import/pickle.c, a strict reader of plain
 * containers) and the JSON of `_dump_nccl_trace_json`. Either becomes a json-glib tree and one
 * schema reader takes it from there, accepting both spellings of each difference (tuple or
 * array `process_group`; int or string `pg_status`; None or 0 for a time not seen). Field facts:
 * ../shared/reference/postmortem.md (a); the rank is the number the file name ends in (torch
 * writes `<prefix><global rank>`).
 *
 * Costs: one pass over the tree; O(entries) per dump.
 */
#include "import.h"

#include <errno.h>
#include <stdio.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#include "../util/inputfile.h"
#include "lite.h"
#include "pickle.h"

/* Dump versions documented in torch's FlightRecorder (2.2 .. 2.10) and torch_npu (2.4). */
static const char *const known_versions[] = {"2.2", "2.3", "2.4", "2.5",  "2.6",
                                             "2.7", "2.8", "2.9", "2.10", NULL};

static bool fail(GError **error, const char *path, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static bool fail(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID, "%s: %s", path, msg);
    return false;
}

/* The global rank a dump belongs to: the integer its basename ends in, before an extension. */
static bool rank_from_name(const char *path, int32_t *rank)
{
    g_autofree char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot &&
        (strcmp(dot, ".json") == 0 || strcmp(dot, ".pkl") == 0 || strcmp(dot, ".pickle") == 0))
        *dot = '\0';
    size_t n = strlen(base), i = n;
    while (i > 0 && g_ascii_isdigit(base[i - 1]))
        i--;
    if (i == n || n - i > 7)
        return false;
    *rank = (int32_t)strtol(base + i, NULL, 10);
    return *rank < IMPORT_MAX_RANKS;
}

/* An int member, accepting a decimal string (JSON pg_status); `def` when absent or null. */
static bool ref_int(const LiteDoc *d, LiteRef n, gint64 def, gint64 *out)
{
    switch (lite_type(d, n)) {
    case LITE_NULL:
        *out = def;
        return true;
    case LITE_INT:
    case LITE_BOOL:
        *out = lite_int(d, n);
        return true;
    case LITE_DOUBLE: {
        double v = lite_double(d, n);
        if (!(v >= -9.2e18 && v <= 9.2e18))
            return false;
        *out = (gint64)v;
        return true;
    }
    case LITE_STRING: {
        const char *s = lite_str(d, n);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || *end)
            return false;
        *out = v;
        return true;
    }
    default:
        return false;
    }
}

/* The entry members ranksim reads, found in one pass over an entry (dumps have ~20). */
enum {
    K_RECORD_ID,
    K_CSEQ,
    K_PSEQ,
    K_CREATED,
    K_DONE,
    K_TIMEOUT,
    K_ISP2P,
    K_PG,
    K_PROF,
    K_IN_SIZES,
    K_OUT_SIZES,
    K_IN_DTYPES,
    K_OUT_DTYPES,
    K_STATE,
    K_DURATION,
    K_SEQ_OLD,
    K_PGID,
    K_COUNT
};

/* The member's K_ index, or -1: dispatched on the first letters so that a key costs one
 * strcmp (two million entries of twenty members each in a 1,024-rank set). */
static int entry_key(const char *k)
{
    /* Only letters inside the key are looked at (the shortest candidate is "state"). */
    size_t n = strlen(k);
    if (n < 5)
        return -1;
    int c = -1;
    switch (k[0]) {
    case 'c':
        c = K_CSEQ;
        break;
    case 'd':
        c = K_DURATION;
        break;
    case 'i':
        c = k[1] == 's' ? K_ISP2P : n < 7 ? -1 : k[6] == 's' ? K_IN_SIZES : K_IN_DTYPES;
        break;
    case 'o':
        c = k[1] == 'p' || n < 8 ? -1 : k[7] == 's' ? K_OUT_SIZES : K_OUT_DTYPES;
        break;
    case 'p':
        c = k[1] == '2'                  ? K_PSEQ
            : k[1] == 'g'                ? K_PGID
            : k[2] == 'o' && k[3] == 'c' ? K_PG
                                         : K_PROF;
        break;
    case 'r':
        c = K_RECORD_ID;
        break;
    case 's':
        c = k[1] == 't' ? K_STATE : K_SEQ_OLD;
        break;
    case 't':
        c = k[5] == 'c' ? K_CREATED : k[4] == 'o' ? K_TIMEOUT : K_DONE;
        break;
    default:
        return -1;
    }
    static const char *const names[K_COUNT] = {[K_RECORD_ID] = "record_id",
                                               [K_CSEQ] = "collective_seq_id",
                                               [K_PSEQ] = "p2p_seq_id",
                                               [K_CREATED] = "time_created_ns",
                                               [K_DONE] = "time_discovered_completed_ns",
                                               [K_TIMEOUT] = "timeout_ms",
                                               [K_ISP2P] = "is_p2p",
                                               [K_PG] = "process_group",
                                               [K_PROF] = "profiling_name",
                                               [K_IN_SIZES] = "input_sizes",
                                               [K_OUT_SIZES] = "output_sizes",
                                               [K_IN_DTYPES] = "input_dtypes",
                                               [K_OUT_DTYPES] = "output_dtypes",
                                               [K_STATE] = "state",
                                               [K_DURATION] = "duration_ms",
                                               [K_SEQ_OLD] = "seq_id",
                                               [K_PGID] = "pg_id"};
    return c >= 0 && strcmp(k, names[c]) == 0 ? c : -1;
}

static const char *get_str(const LiteDoc *d, LiteRef o, const char *k)
{
    return lite_str(d, lite_get(d, o, k));
}

/* "[0, 1, 2, 3]" (the string torch writes) or an array of ints. */
static GArray *parse_ranks(const LiteDoc *d, LiteRef n)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (lite_type(d, n) == LITE_ARRAY) {
        for (uint32_t i = 0; i < lite_len(d, n); i++) {
            LiteRef e = lite_at(d, n, i);
            if (lite_type(d, e) != LITE_INT || lite_int(d, e) < 0 ||
                lite_int(d, e) >= IMPORT_MAX_RANKS)
                goto bad;
            int32_t r = (int32_t)lite_int(d, e);
            g_array_append_val(out, r);
        }
        return out;
    }
    const char *s = lite_str(d, n);
    if (!s)
        goto bad;
    while (*s == ' ')
        s++;
    if (*s++ != '[')
        goto bad;
    for (;;) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ']')
            break;
        if (!g_ascii_isdigit(*s))
            goto bad;
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || v >= IMPORT_MAX_RANKS)
            goto bad;
        int32_t r = (int32_t)v;
        g_array_append_val(out, r);
        s = end;
    }
    return out;
bad:
    g_array_unref(out);
    return NULL;
}

/* The op kind of a profiling name ("nccl:_all_gather_base"); p2p ops give their peer. */
static bool kind_of(const char *name, SchedOpKind *kind, int32_t *peer, bool *p2p)
{
    const char *op = strchr(name, ':');
    op = op ? op + 1 : name;
    *peer = -1;
    *p2p = false;
    static const struct {
        const char *prefix;
        SchedOpKind kind;
    } table[] = {
        {"all_reduce_barrier", SCHED_OP_BARRIER},
        {"allreduce_coalesced", SCHED_OP_ALL_REDUCE},
        {"all_reduce", SCHED_OP_ALL_REDUCE},
        {"_all_gather_base", SCHED_OP_ALL_GATHER},
        {"all_gather_into_tensor", SCHED_OP_ALL_GATHER},
        {"all_gather", SCHED_OP_ALL_GATHER},
        {"allgather", SCHED_OP_ALL_GATHER},
        {"_reduce_scatter_base", SCHED_OP_REDUCE_SCATTER},
        {"reduce_scatter", SCHED_OP_REDUCE_SCATTER},
        {"all_to_all", SCHED_OP_ALL_TO_ALL},
        {"alltoall", SCHED_OP_ALL_TO_ALL},
        {"broadcast", SCHED_OP_BROADCAST},
        {"_broadcast_oop", SCHED_OP_BROADCAST}, /* out-of-place ops (fr_trace tests) */
        {"_reduce_oop", SCHED_OP_BROADCAST},
        {"barrier", SCHED_OP_BARRIER},
        /* Rooted ops ranksim has no kind for: compared by input count like broadcast, the
         * recorded name kept so messages say what they were. */
        {"gather", SCHED_OP_BROADCAST},
        {"scatter", SCHED_OP_BROADCAST},
        {"reduce", SCHED_OP_BROADCAST},
        {"coalesced", SCHED_OP_ALL_REDUCE},
    };
    int src = -1, dst = -1;
    if (sscanf(op, "send %d->%d", &src, &dst) == 2) {
        *kind = SCHED_OP_SEND;
        *peer = dst;
        *p2p = true;
        return true;
    }
    if (sscanf(op, "recv %d<-%d", &dst, &src) == 2) {
        *kind = SCHED_OP_RECV;
        *peer = src;
        *p2p = true;
        return true;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (g_str_has_prefix(op, table[i].prefix)) {
            *kind = table[i].kind;
            return true;
        }
    return false;
}

/* c10::toString dtype names. */
static bool dtype_of(const char *s, SchedDtype *d)
{
    static const struct {
        const char *name;
        SchedDtype d;
    } table[] = {
        {"Float", SCHED_DTYPE_FP32},          {"BFloat16", SCHED_DTYPE_BF16},
        {"Half", SCHED_DTYPE_FP16},           {"Float8_e4m3fn", SCHED_DTYPE_FP8},
        {"Float8_e5m2", SCHED_DTYPE_FP8},     {"Float8_e4m3fnuz", SCHED_DTYPE_FP8},
        {"Float8_e5m2fnuz", SCHED_DTYPE_FP8}, {"Char", SCHED_DTYPE_INT8},
        {"Int", SCHED_DTYPE_INT32},
        /* torch's Python names, as PyTorch's fr_trace tests write them */
        {"float32", SCHED_DTYPE_FP32},        {"bfloat16", SCHED_DTYPE_BF16},
        {"float16", SCHED_DTYPE_FP16},        {"int8", SCHED_DTYPE_INT8},
        {"int32", SCHED_DTYPE_INT32},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (strcmp(s, table[i].name) == 0) {
            *d = table[i].d;
            return true;
        }
    return false;
}

/* Sum over shapes of the product of dims; false on a malformed list or overflow. */
static bool numel(const LiteDoc *d, LiteRef n, uint64_t *out)
{
    *out = 0;
    if (lite_type(d, n) == LITE_NULL)
        return true;
    if (lite_type(d, n) != LITE_ARRAY)
        return false;
    for (uint32_t i = 0; i < lite_len(d, n); i++) {
        LiteRef sh = lite_at(d, n, i);
        if (lite_type(d, sh) != LITE_ARRAY)
            return false;
        uint64_t p = 1;
        for (uint32_t j = 0; j < lite_len(d, sh); j++) {
            LiteRef x = lite_at(d, sh, j);
            if (lite_type(d, x) != LITE_INT || lite_int(d, x) < 0)
                return false;
            uint64_t v = (uint64_t)lite_int(d, x);
            if (v && p > UINT64_MAX / v)
                return false;
            p *= v;
        }
        if (*out > UINT64_MAX - p)
            return false;
        *out += p;
    }
    return true;
}

static const char *first_string(const LiteDoc *d, LiteRef n)
{
    /* PyTorch's fr_trace tests write input_dtypes as a bare string ("float32") */
    if (lite_type(d, n) == LITE_STRING)
        return lite_str(d, n);
    return lite_type(d, n) == LITE_ARRAY ? lite_str(d, lite_at(d, n, 0)) : NULL;
}

typedef struct {
    char *name;
    GArray *ranks;
    char *desc;
} PgDef;

static void pgdef_free(gpointer p)
{
    PgDef *d = p;
    g_free(d->name);
    g_free(d->desc);
    g_array_unref(d->ranks);
    g_free(d);
}

/* The group of PG `pg` in the set, checking that another dump did not give the same PG name
 * other members (dumps of different jobs). Disjoint in time linear in the two lists (a list
 * against a set of the other's ranks once they are long). */
static bool disjoint(const GArray *a, const GArray *b)
{
    if ((uint64_t)a->len * b->len <= 4096) {
        for (guint i = 0; i < a->len; i++)
            for (guint j = 0; j < b->len; j++)
                if (g_array_index(a, int32_t, i) == g_array_index(b, int32_t, j))
                    return false;
        return true;
    }
    g_autoptr(GHashTable) in_a = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < a->len; i++)
        g_hash_table_add(in_a, GINT_TO_POINTER(g_array_index(a, int32_t, i) + 1));
    for (guint j = 0; j < b->len; j++)
        if (g_hash_table_contains(in_a, GINT_TO_POINTER(g_array_index(b, int32_t, j) + 1)))
            return false;
    return true;
}

static bool same_ranks(const GArray *a, const GArray *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len * sizeof(int32_t)) == 0;
}

/* A PG name that other dumps give disjoint members is a split group (each rank in its own part,
 * as new_subgroups makes them, and PyTorch's fr_trace tests write "1" for [0] on rank 0 and [1]
 * on rank 1): each part is a group of its own, named "NAME (ranks R)". */
static bool set_split_group(ImportSet *s, const PgDef *d, bool p2p, uint32_t *out)
{
    g_autofree char *rs =
        sched_format_ranks((const int32_t *)(void *)d->ranks->data, d->ranks->len);
    g_autofree char *name = g_strdup_printf("%s (ranks %s)", d->name, rs);
    *out = import_set_group(s, name, d->desc, (const int32_t *)(void *)d->ranks->data,
                            d->ranks->len, p2p);
    return true;
}

/* The first group of the set named like the PG (a hash lookup, so N PGs cost linear time). */
static bool set_group(ImportSet *s, const char *path, const PgDef *d, bool p2p, uint32_t *out,
                      GError **error)
{
    int64_t i = import_set_group_named(s, d->name, p2p);
    if (i >= 0) {
        const ImportGroup *g = g_ptr_array_index(s->groups, (guint)i);
        if (!same_ranks(g->ranks, d->ranks) && disjoint(g->ranks, d->ranks))
            return set_split_group(s, d, p2p, out);
        if (!same_ranks(g->ranks, d->ranks)) {
            g_autofree char *a =
                sched_format_ranks((const int32_t *)(void *)g->ranks->data, g->ranks->len);
            g_autofree char *b =
                sched_format_ranks((const int32_t *)(void *)d->ranks->data, d->ranks->len);
            return fail(error, path,
                        "pg_config: process group \"%s\" has ranks %s here but %s in an earlier "
                        "dump: dumps of different jobs are mixed (import one job's dumps)",
                        d->name, b, a);
        }
        *out = (uint32_t)i;
        return true;
    }
    *out = import_set_group(s, d->name, d->desc, (const int32_t *)(void *)d->ranks->data,
                            d->ranks->len, p2p);
    return true;
}

static gint cmp_perm(gconstpointer a, gconstpointer b, gpointer base)
{
    const ImportEntry *e = base;
    uint64_t x = e[*(const guint *)a].order, y = e[*(const guint *)b].order;
    return (x > y) - (x < y);
}

/* One dump, parsed without touching the set. Entries' `group` is an index into `pgs`. */
struct FrDump {
    char *path;
    int32_t rank;
    char *version;
    char *lib;
    bool pickle;
    bool hccl;         /* torch_npu's: hccl_comm_state, or hccl: op names */
    int8_t head_check; /* ImportRank.head_check */
    GPtrArray *pgs;    /* PgDef*, pg_config order */
    GArray *entries;   /* ImportEntry; group = pgs index, p2p in entry_p2p */
    GArray *entry_p2p; /* bool per entry */
    GPtrArray *warnings;
    GStringChunk *strings; /* the dump's names, deduplicated; moves into the set on merge */
    GHashTable *kinds;     /* op name (a `strings` pointer) -> its parsed kind (kind_of), packed */
    GHashTable *pgid_pg;   /* an entry's pg_id (rank-local) -> its PG's index in pgs + 1 */
    GHashTable *pg_named;  /* a PG name (its PgDef's) -> the first PG's index in pgs + 1 */
    GArray *status;        /* ImportPgStatus from pg_status, group = the PG's index in pgs */
};

/* One copy of each distinct name per dump (dumps parse on several threads, each its own). */
static const char *intern(FrDump *fd, const char *s)
{
    return g_string_chunk_insert_const(fd->strings, s);
}

int32_t import_fr_dump_rank(const FrDump *d)
{
    return d->rank;
}

void import_fr_dump_free(FrDump *d)
{
    if (!d)
        return;
    g_free(d->path);
    g_free(d->version);
    g_free(d->lib);
    g_ptr_array_unref(d->pgs);
    g_array_unref(d->entries);
    g_array_unref(d->entry_p2p);
    g_hash_table_unref(d->pgid_pg);
    g_hash_table_unref(d->pg_named);
    g_array_unref(d->status); /* its sources are NULL */
    g_ptr_array_unref(d->warnings);
    if (d->strings)
        g_string_chunk_free(d->strings);
    g_hash_table_unref(d->kinds);
    g_free(d);
}

static void entry_clear(gpointer p)
{
    import_entry_clear(p);
}

static gint cmp_rank(gconstpointer a, gconstpointer b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static FrDump *dump_new(const char *path)
{
    FrDump *fd = g_new0(FrDump, 1);
    fd->path = g_strdup(path);
    fd->pgs = g_ptr_array_new_with_free_func(pgdef_free);
    fd->entries = g_array_new(FALSE, TRUE, sizeof(ImportEntry));
    g_array_set_clear_func(fd->entries, entry_clear);
    fd->entry_p2p = g_array_new(FALSE, FALSE, sizeof(bool));
    fd->warnings = g_ptr_array_new_with_free_func(g_free);
    fd->strings = g_string_chunk_new(256);
    fd->kinds = g_hash_table_new(g_direct_hash, g_direct_equal);
    fd->pgid_pg = g_hash_table_new(g_direct_hash, g_direct_equal);
    fd->pg_named = g_hash_table_new(g_str_hash, g_str_equal);
    fd->status = g_array_new(FALSE, TRUE, sizeof(ImportPgStatus));
    return fd;
}

/* The document of the dump's bytes: a pickle's tree (in *own), or JSON parsed into `scratch`
 * (or into *own without one). NULL with the error (IMPORT_ERROR_INVALID). */
static const LiteDoc *dump_doc(FrDump *fd, guint8 *data, gsize len, LiteDoc *scratch,
                               LiteDoc **own, GError **error)
{
    /* Protocols 2 to 5 open with PROTO (0x80); 0 and 1 with what builds the top dict: MARK
     * '(' (protocol 0's "(dp0"), EMPTY_DICT '}' (protocol 1). No JSON text starts so. */
    fd->pickle = len >= 2 && (data[0] == 0x80 || data[0] == '(' || data[0] == '}');
    if (fd->pickle) {
        g_autoptr(JsonNode) root = pickle_parse(data, len, fd->path, error);
        if (!root) {
            (*error)->domain = IMPORT_ERROR;
            (*error)->code = IMPORT_ERROR_INVALID;
            return NULL;
        }
        return *own = lite_from_json_node(root);
    }
    LiteDoc *doc = scratch ? scratch : (*own = lite_doc_new());
    if (!lite_doc_parse_json(doc, (char *)data, len, fd->path, error)) {
        (*error)->domain = IMPORT_ERROR;
        (*error)->code = IMPORT_ERROR_INVALID;
        return NULL;
    }
    return doc;
}

/* The top level: a dict with pg_config and version; the library version, the HCCL mark, and a
 * warning for a version ranksim does not know. */
static bool dump_header(FrDump *fd, const LiteDoc *d, GError **error)
{
    LiteRef top = lite_root(d);
    if (lite_type(d, top) != LITE_OBJECT)
        return fail(error, fd->path,
                    "not a Flight Recorder dump: the top level is not a dict "
                    "(a dump is {version, pg_config, pg_status, entries})");
    if (lite_type(d, lite_get(d, top, "pg_config")) != LITE_OBJECT)
        return fail(error, fd->path,
                    "not a Flight Recorder dump: no \"pg_config\" dict (a dump has "
                    "version, pg_config, pg_status and entries)");
    const char *version = get_str(d, top, "version");
    if (!version)
        return fail(error, fd->path, "not a Flight Recorder dump: no \"version\" string");
    fd->version = g_strdup(version);
    /* The library version: comm_lib_version (2.10), nccl_version (2.6 to 2.9). */
    const char *lib = get_str(d, top, "comm_lib_version");
    if (!lib)
        lib = get_str(d, top, "nccl_version");
    fd->lib = g_strdup(lib);
    fd->hccl = lite_get(d, top, "hccl_comm_state") != LITE_NONE;
    bool known = false;
    for (size_t i = 0; known_versions[i]; i++)
        known |= strcmp(version, known_versions[i]) == 0;
    if (!known)
        g_ptr_array_add(fd->warnings,
                        g_strdup_printf("%s: Flight Recorder version \"%s\" is not one ranksim "
                                        "knows (2.2 to 2.10); read as the newest",
                                        fd->path, version));
    return true;
}

/* pg_config: each process group with its ranks (no rank twice), the dump's rank among them. */
static bool dump_pg_config(FrDump *fd, const LiteDoc *d, GError **error)
{
    LiteRef pgc = lite_get(d, lite_root(d), "pg_config");
    for (uint32_t k = 0; k < lite_len(d, pgc); k++) {
        const char *key = lite_key_at(d, pgc, k);
        LiteRef v = lite_at(d, pgc, k);
        if (lite_type(d, v) != LITE_OBJECT)
            return fail(error, fd->path, "pg_config[\"%s\"]: not a dict with name, desc, ranks",
                        key);
        GArray *rs = parse_ranks(d, lite_get(d, v, "ranks"));
        if (!rs)
            return fail(error, fd->path,
                        "pg_config[\"%s\"].ranks: not a rank list of ranks below 65536 "
                        "(torch writes a string like \"[0, 1, 2, 3]\")",
                        key);
        g_autoptr(GArray) sorted = g_array_copy(rs);
        g_array_sort(sorted, cmp_rank);
        for (guint i = 1; i < sorted->len; i++)
            if (g_array_index(sorted, int32_t, i) == g_array_index(sorted, int32_t, i - 1)) {
                int32_t dup = g_array_index(sorted, int32_t, i);
                g_array_unref(rs);
                return fail(error, fd->path, "pg_config[\"%s\"].ranks: rank %d is listed twice",
                            key, dup);
            }
        PgDef *pd = g_new0(PgDef, 1);
        pd->name = g_strdup(get_str(d, v, "name") ? get_str(d, v, "name") : key);
        pd->desc = g_strdup(get_str(d, v, "desc"));
        pd->ranks = rs;
        g_ptr_array_add(fd->pgs, pd);
        if (!g_hash_table_contains(fd->pg_named, pd->name))
            g_hash_table_insert(fd->pg_named, pd->name, GUINT_TO_POINTER(fd->pgs->len));
        bool member = false;
        for (guint i = 0; i < rs->len; i++)
            member |= g_array_index(rs, int32_t, i) == fd->rank;
        if (!member)
            return fail(error, fd->path,
                        "pg_config[\"%s\"]: rank %d (from the file name) is not among its "
                        "ranks: the file was renamed, or is another rank's dump",
                        key, fd->rank);
    }
    return true;
}

/* What the entries loop carries from entry to entry. */
typedef struct {
    bool warned_dtype, warned_op;
    guint last_pg;      /* the process group of the previous entry (entries run in streaks) */
    gint64 head_order;  /* record_id of the oldest entry that did not complete, or MAXINT64 */
    gint64 head_pgid;   /* its pg_id, -1 unknown */
    uint64_t head_seq;  /* its sequence number */
    bool head_p2p;
    gint64 last_pgid;   /* the pg_id last written into pgid_pg, -1 none */
} EntryScan;

/* One entry's integer members (record_id, the sequence numbers, times, timeout, is_p2p). */
typedef struct {
    gint64 record_id, cseq, pseq, created, done_ns, tmo, isp2p;
} EntryInts;

/* The entry's members ranksim reads, by K_ index (LITE_NONE when absent), and its integers. */
static bool entry_fields(FrDump *fd, const LiteDoc *d, LiteRef o, uint32_t i, LiteRef *f,
                         EntryInts *v, GError **error)
{
    for (int k = 0; k < K_COUNT; k++)
        f[k] = LITE_NONE;
    for (uint32_t m = 0; m < lite_len(d, o); m++) {
        int k = entry_key(lite_key_at(d, o, m));
        if (k >= 0)
            f[k] = lite_at(d, o, m);
    }
    /* Dumps before collective_seq_id had one seq_id (torch 2.2/2.3). */
    if (f[K_CSEQ] == LITE_NONE)
        f[K_CSEQ] = f[K_SEQ_OLD];
    if (!ref_int(d, f[K_RECORD_ID], i, &v->record_id) || !ref_int(d, f[K_CSEQ], 0, &v->cseq) ||
        !ref_int(d, f[K_PSEQ], 0, &v->pseq) || !ref_int(d, f[K_CREATED], -1, &v->created) ||
        !ref_int(d, f[K_DONE], 0, &v->done_ns) || !ref_int(d, f[K_TIMEOUT], 0, &v->tmo) ||
        !ref_int(d, f[K_ISP2P], 0, &v->isp2p))
        return fail(error, fd->path,
                    "entries[%u]: record_id, collective_seq_id, p2p_seq_id, timeout_ms "
                    "and the time_* fields must be integers (or null)",
                    i);
    return true;
}

/* The entry's process group as an index into fd->pgs. */
static bool entry_group(FrDump *fd, const LiteDoc *d, const LiteRef *f, uint32_t i,
                        EntryScan *scan, guint *pg_out, GError **error)
{
    const char *pname = first_string(d, f[K_PG]);
    if (!pname)
        return fail(error, fd->path, "entries[%u].process_group: not a (name, desc) pair", i);
    guint pg = G_MAXUINT;
    if (scan->last_pg < fd->pgs->len &&
        strcmp(((PgDef *)g_ptr_array_index(fd->pgs, scan->last_pg))->name, pname) == 0)
        pg = scan->last_pg;
    if (pg == G_MAXUINT)
        pg = GPOINTER_TO_UINT(g_hash_table_lookup(fd->pg_named, pname)) - 1; /* 0: absent */
    if (pg == G_MAXUINT) {
        g_autoptr(GString) names = g_string_new(NULL);
        for (guint k = 0; k < fd->pgs->len && k < 8; k++)
            g_string_append_printf(names, "%s\"%s\"", k ? ", " : "",
                                   ((PgDef *)g_ptr_array_index(fd->pgs, k))->name);
        return fail(error, fd->path,
                    "entries[%u]: process group \"%s\" is not in pg_config (it lists %s%s)", i,
                    pname, names->len ? names->str : "none", fd->pgs->len > 8 ? ", ..." : "");
    }
    scan->last_pg = *pg_out = pg;
    return true;
}

/* The entry's op from its profiling_name: kind, peer and p2p (each distinct name parsed once;
 * an unknown op is read as an all-reduce, with one warning per dump). Sets e->kind, e->peer,
 * e->name. */
static bool entry_op(FrDump *fd, const LiteDoc *d, const LiteRef *f, uint32_t i, EntryScan *scan,
                     ImportEntry *e, bool *p2p_out, GError **error)
{
    const char *prof = lite_str(d, f[K_PROF]);
    if (!prof)
        return fail(error, fd->path, "entries[%u]: no profiling_name", i);
    fd->hccl |= g_str_has_prefix(prof, "hccl:");
    SchedOpKind kind = SCHED_OP_ALL_REDUCE;
    int32_t peer = -1;
    bool p2p = false;
    const char *iprof = intern(fd, prof);
    /* One parse of each distinct name (a dump has a handful). */
    gpointer cached = g_hash_table_lookup(fd->kinds, iprof);
    bool known_op;
    if (cached) {
        gsize v = GPOINTER_TO_SIZE(cached);
        known_op = v & 1;
        p2p = (v >> 1) & 1;
        kind = (SchedOpKind)((v >> 2) & 0xff);
        peer = (int32_t)(v >> 10) - 1;
    } else {
        known_op = kind_of(prof, &kind, &peer, &p2p);
        gsize v = (gsize)known_op | (gsize)p2p << 1 | (gsize)kind << 2 |
                  (gsize)(uint32_t)(peer + 1) << 10;
        g_hash_table_insert(fd->kinds, (gpointer)iprof, GSIZE_TO_POINTER(v));
    }
    if (!known_op) {
        if (!scan->warned_op)
            g_ptr_array_add(fd->warnings,
                            g_strdup_printf("%s: entries[%u]: op \"%s\" is not one ranksim "
                                            "knows; compared by its sizes like an all-reduce",
                                            fd->path, i, prof));
        scan->warned_op = true;
        kind = SCHED_OP_ALL_REDUCE;
    }
    e->kind = kind;
    e->peer = peer;
    e->name = iprof;
    *p2p_out = p2p;
    return true;
}

/* The bounds the integers must keep: a record_id, a sequence number >= 1, clock times, a
 * timeout. */
static bool entry_check(FrDump *fd, const LiteRef *f, uint32_t i, const EntryInts *v, bool p2p,
                        GError **error)
{
    if (v->record_id < 0)
        return fail(error, fd->path, "entries[%u].record_id: negative", i);
    /* 0 is what PyTorch's fr_trace tests write on every entry ("0") and torchcomms' first
     * call: accepted, and numbered again by dump_renumber. */
    if (f[p2p ? K_PSEQ : K_CSEQ] == LITE_NONE || (p2p ? v->pseq : v->cseq) < 0)
        return fail(error, fd->path,
                    "entries[%u].%s: %s (valid: the group's sequence number, an int >= 0)", i,
                    p2p ? "p2p_seq_id" : "collective_seq_id",
                    f[p2p ? K_PSEQ : K_CSEQ] == LITE_NONE ? "absent" : "negative");
    /* Times are epoch ns: refuse what no clock gives (so sums cannot overflow). */
    if (v->created > (gint64)1 << 62 || v->done_ns > (gint64)1 << 62 || v->done_ns < 0)
        return fail(error, fd->path,
                    "entries[%u]: time_created_ns / time_discovered_completed_ns "
                    "beyond any clock (valid: epoch ns up to 2^62)",
                    i);
    if (v->tmo < 0 || v->tmo > (gint64)1000000000)
        return fail(error, fd->path,
                    "entries[%u].timeout_ms: %" G_GINT64_FORMAT " (valid: 0 to 10^9 ms)", i,
                    v->tmo);
    return true;
}

/* The entry's sizes and dtype (an unnamed dtype is stored as fp32, with one warning). */
static bool entry_sizes(FrDump *fd, const LiteDoc *d, const LiteRef *f, uint32_t i,
                        EntryScan *scan, ImportEntry *e, GError **error)
{
    if (!numel(d, f[K_IN_SIZES], &e->count) || !numel(d, f[K_OUT_SIZES], &e->count_out))
        return fail(error, fd->path,
                    "entries[%u]: input_sizes/output_sizes must be lists of shapes "
                    "(lists of non-negative ints) holding fewer than 2^64 elements",
                    i);
    const char *dt = first_string(d, f[K_IN_DTYPES]);
    if (!dt)
        dt = first_string(d, f[K_OUT_DTYPES]);
    e->dtype = SCHED_DTYPE_FP32;
    e->dtype_known = dt && dtype_of(dt, &e->dtype);
    if (dt && !e->dtype_known && !scan->warned_dtype) {
        g_ptr_array_add(fd->warnings,
                        g_strdup_printf("%s: dtype \"%s\" has no ranksim name; stored as fp32 "
                                        "(sizes are still compared in elements)",
                                        fd->path, dt));
        scan->warned_dtype = true;
    }
    e->dtype_name = dt ? intern(fd, dt) : NULL;
    return true;
}

/* The entry's state and times: created, and completed (discovered, or created + duration). */
static bool entry_state(FrDump *fd, const LiteDoc *d, const LiteRef *f, uint32_t i,
                        const EntryInts *v, ImportEntry *e, GError **error)
{
    const char *st = lite_str(d, f[K_STATE]);
    if (!st)
        return fail(error, fd->path, "entries[%u]: no state (completed, started or scheduled)",
                    i);
    if (strcmp(st, "completed") == 0)
        e->state = IMPORT_STATE_COMPLETED;
    else if (strcmp(st, "started") == 0)
        e->state = IMPORT_STATE_STARTED;
    else if (strcmp(st, "scheduled") == 0)
        e->state = IMPORT_STATE_SCHEDULED;
    else
        return fail(error, fd->path,
                    "entries[%u].state: \"%s\" (valid: completed, started, scheduled)", i, st);
    e->created_ns = v->created > 0 ? v->created : -1;
    e->completed_ns = -1;
    if (e->state == IMPORT_STATE_COMPLETED) {
        LiteRef dn = f[K_DURATION];
        double dur = lite_type(d, dn) == LITE_DOUBLE || lite_type(d, dn) == LITE_INT
                         ? lite_double(d, dn)
                         : -1;
        if (v->done_ns > 0)
            e->completed_ns = v->done_ns;
        else if (dur >= 0 && e->created_ns > 0 && dur < 1e9) /* both bounded: no overflow */
            e->completed_ns = e->created_ns + (int64_t)(dur * 1e6);
    }
    e->timeout_ms = v->tmo > 0 ? v->tmo : 0;
    return true;
}

/* entries[i]: read, checked and appended; the oldest entry that did not complete is noted. */
static bool dump_entry(FrDump *fd, const LiteDoc *d, LiteRef o, uint32_t i, EntryScan *scan,
                       GError **error)
{
    if (lite_type(d, o) != LITE_OBJECT)
        return fail(error, fd->path, "entries[%u]: not a dict", i);
    LiteRef f[K_COUNT];
    EntryInts v;
    ImportEntry e = {0};
    guint pg = 0;
    bool p2p = false;
    if (!entry_fields(fd, d, o, i, f, &v, error) || !entry_group(fd, d, f, i, scan, &pg, error) ||
        !entry_op(fd, d, f, i, scan, &e, &p2p, error))
        return false;
    if (v.isp2p)
        p2p = true;
    if (!entry_check(fd, f, i, &v, p2p, error))
        return false;
    e.group = pg;
    e.seq = (uint64_t)(p2p ? v.pseq : v.cseq);
    e.order = (uint64_t)v.record_id;
    e.root = -1;
    if (!entry_sizes(fd, d, f, i, scan, &e, error) || !entry_state(fd, d, f, i, &v, &e, error))
        return false;
    gint64 entry_pgid = -1;
    /* entries run in streaks of one PG: the map is written when the pg_id changes */
    if (!p2p && ref_int(d, f[K_PGID], -1, &entry_pgid) && entry_pgid >= 0 &&
        entry_pgid < G_MAXINT && entry_pgid != scan->last_pgid) {
        g_hash_table_insert(fd->pgid_pg, GINT_TO_POINTER((int)entry_pgid),
                            GUINT_TO_POINTER(pg + 1));
        scan->last_pgid = entry_pgid;
    }
    if (e.state != IMPORT_STATE_COMPLETED && v.record_id < scan->head_order) {
        gint64 pgid = -1;
        scan->head_order = v.record_id;
        scan->head_pgid = ref_int(d, f[K_PGID], -1, &pgid) ? pgid : -1;
        scan->head_seq = e.seq;
        scan->head_p2p = p2p;
    }
    g_array_append_val(fd->entries, e);
    g_array_append_val(fd->entry_p2p, p2p);
    return true;
}

/* pg_status says whether the oldest entry that did not complete is its PG's next call after
 * the last completed one: then nothing between was dropped and it is the blocking point. */
static void dump_head_check(FrDump *fd, const LiteDoc *d, const EntryScan *scan)
{
    LiteRef pst = lite_get(d, lite_root(d), "pg_status");
    if (scan->head_order == G_MAXINT64 || scan->head_p2p || scan->head_pgid < 0 ||
        lite_type(d, pst) != LITE_OBJECT)
        return;
    char key[24];
    g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT, scan->head_pgid);
    LiteRef ps = lite_get(d, pst, key);
    gint64 last = -2;
    if (lite_type(d, ps) == LITE_OBJECT &&
        ref_int(d, lite_get(d, ps, "last_completed_collective"), -2, &last) && last >= -1)
        /* head_seq - 1 == last, not head_seq == last + 1: a dump may say 2^63 - 1 */
        fd->head_check =
            (last < 0 ? scan->head_seq == 1
                      : scan->head_seq >= 1 && scan->head_seq - 1 == (uint64_t)last)
                ? 1
                : -1;
}

/* pg_status, keyed by the rank-local pg_id, as each PG's status on this rank (the PG found
 * through an entry carrying that pg_id; -1, "none yet", read as 0, "not said"). import-run.c
 * reads it: a member whose last completed call reaches the one others block in completed its
 * side (one call apart). */
static void dump_status(FrDump *fd, const LiteDoc *d)
{
    LiteRef pst = lite_get(d, lite_root(d), "pg_status");
    if (lite_type(d, pst) != LITE_OBJECT)
        return;
    for (uint32_t m = 0; m < lite_len(d, pst); m++) {
        const char *key = lite_key_at(d, pst, m);
        char *end = NULL;
        long id = key ? strtol(key, &end, 10) : -1;
        gpointer pg = end && !*end && id >= 0 && id < G_MAXINT
                          ? g_hash_table_lookup(fd->pgid_pg, GINT_TO_POINTER((int)id))
                          : NULL;
        LiteRef ps = lite_at(d, pst, m);
        gint64 enq = -1, sta = -1, done = -1;
        if (!pg || lite_type(d, ps) != LITE_OBJECT ||
            !ref_int(d, lite_get(d, ps, "last_enqueued_collective"), -1, &enq) ||
            !ref_int(d, lite_get(d, ps, "last_started_collective"), -1, &sta) ||
            !ref_int(d, lite_get(d, ps, "last_completed_collective"), -1, &done))
            continue;
        ImportPgStatus st = {.group = GPOINTER_TO_UINT(pg) - 1,
                             .last_enqueued = enq > 0 ? (uint64_t)enq : 0,
                             .last_started = sta > 0 ? (uint64_t)sta : 0,
                             .last_completed = done > 0 ? (uint64_t)done : 0};
        g_array_append_val(fd->status, st);
    }
}

/* The entries, then the head check. */
static bool dump_entries(FrDump *fd, const LiteDoc *d, GError **error)
{
    LiteRef en = lite_get(d, lite_root(d), "entries");
    if (lite_type(d, en) != LITE_NULL && lite_type(d, en) != LITE_ARRAY)
        return fail(error, fd->path, "\"entries\": not a list");
    EntryScan scan = {.head_order = G_MAXINT64, .head_pgid = -1, .last_pgid = -1};
    uint32_t ne = lite_len(d, en);
    for (uint32_t i = 0; i < ne; i++)
        if (!dump_entry(fd, d, lite_at(d, en, i), i, &scan, error))
            return false;
    dump_head_check(fd, d, &scan);
    dump_status(fd, d);
    return true;
}

/* Entries by record_id, carrying the p2p flags along; two with one record_id are refused. */
static bool dump_sort(FrDump *fd, GError **error)
{
    bool sorted = true;
    for (guint i = 1; i < fd->entries->len && sorted; i++)
        sorted = g_array_index(fd->entries, ImportEntry, i - 1).order <
                 g_array_index(fd->entries, ImportEntry, i).order;
    if (sorted)
        return true;
    /* Rare (torch writes the ring buffer oldest first): sort a permutation. */
    guint n = fd->entries->len;
    g_autofree guint *perm = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        perm[i] = i;
    const ImportEntry *base = (const ImportEntry *)(void *)fd->entries->data;
    g_qsort_with_data(perm, (gint)n, sizeof(guint), cmp_perm, (gpointer)base);
    GArray *ne2 = g_array_sized_new(FALSE, TRUE, sizeof(ImportEntry), n);
    GArray *np2 = g_array_sized_new(FALSE, FALSE, sizeof(bool), n);
    for (guint i = 0; i < n; i++) {
        g_array_append_val(ne2, g_array_index(fd->entries, ImportEntry, perm[i]));
        g_array_append_val(np2, g_array_index(fd->entry_p2p, bool, perm[i]));
    }
    g_array_set_clear_func(ne2, entry_clear);
    g_array_set_clear_func(fd->entries, NULL); /* moved, not freed */
    g_array_unref(fd->entries);
    g_array_unref(fd->entry_p2p);
    fd->entries = ne2;
    fd->entry_p2p = np2;
    for (guint i = 1; i < n; i++)
        if (g_array_index(ne2, ImportEntry, i).order == g_array_index(ne2, ImportEntry, i - 1).order)
            return fail(error, fd->path, "two entries share record_id %" G_GUINT64_FORMAT,
                        g_array_index(ne2, ImportEntry, i).order);
    return true;
}

/* Sequence numbers that do not count the group's calls: torch's FR numbers each PG's calls
 * 1, 2, 3 ... (a kept suffix of them after the ring buffer wrapped), while PyTorch's own
 * fr_trace tests write "0" on every entry and torchcomms' FlightRecorderHook one counter for
 * all its communicators from 0. A channel (PG, collective or p2p) whose numbers on this rank
 * repeat, skip or start at 0 is numbered again by position, 1, 2, 3 ... in record order, with
 * a warning: matching across ranks then assumes each rank's record starts at the group's
 * first call (true for unwrapped buffers). */
static void dump_renumber(FrDump *fd)
{
    guint n = fd->pgs->len * 2 + 2;
    g_autofree uint64_t *last = g_new0(uint64_t, n);
    g_autofree bool *seen = g_new0(bool, n);
    g_autofree bool *bad = g_new0(bool, n);
    for (guint i = 0; i < fd->entries->len; i++) {
        const ImportEntry *e = &g_array_index(fd->entries, ImportEntry, i);
        guint c = e->group * 2 + g_array_index(fd->entry_p2p, bool, i);
        bad[c] |= e->seq == 0 || (seen[c] && e->seq != last[c] + 1);
        seen[c] = true;
        last[c] = e->seq;
    }
    /* torchcomms counts every communicator's calls with one counter: when one channel shows
     * it, none of the dump's numbers count their group's calls */
    bool any = false;
    for (guint c = 0; c < n; c++)
        any |= bad[c];
    if (!any)
        return;
    g_autofree uint64_t *pos = g_new0(uint64_t, n);
    for (guint i = 0; i < fd->entries->len; i++) {
        ImportEntry *e = &g_array_index(fd->entries, ImportEntry, i);
        e->seq = ++pos[e->group * 2 + g_array_index(fd->entry_p2p, bool, i)];
    }
    fd->head_check = 0; /* pg_status counts the original numbers */
    g_array_set_size(fd->status, 0);
    g_ptr_array_add(fd->warnings,
                    g_strdup_printf("%s: the sequence numbers do not count each group's calls "
                                    "(0, repeated or skipping: as PyTorch's fr_trace tests and "
                                    "torchcomms' FlightRecorderHook write them): calls numbered "
                                    "by their order in each process group, assuming every "
                                    "rank's record starts at the group's first call",
                                    fd->path));
}

FrDump *import_fr_parse(const char *path, guint8 *data, gsize len, LiteDoc *scratch, GError **error)
{
    FrDump *fd = dump_new(path);
    if (!rank_from_name(path, &fd->rank)) {
        fail(error, path,
             "cannot tell whose dump this is: torch names a dump <prefix><global "
             "rank> (nccl_trace_rank_3), and this name does not end in a rank number "
             "below 65536");
        import_fr_dump_free(fd);
        return NULL;
    }
    g_autoptr(LiteDoc) own = NULL; /* a pickle's tree, or JSON's without a scratch doc */
    const LiteDoc *d = dump_doc(fd, data, len, scratch, &own, error);
    if (!d || !dump_header(fd, d, error) || !dump_pg_config(fd, d, error) ||
        !dump_entries(fd, d, error) || !dump_sort(fd, error)) {
        import_fr_dump_free(fd);
        return NULL;
    }
    dump_renumber(fd);
    return fd;
}

bool import_fr_merge(ImportSet *s, FrDump *fd, bool hccl, GError **error)
{
    /* The entries point into the dump's names: the set keeps them from now on. */
    g_ptr_array_add(s->strings, g_steal_pointer(&fd->strings));
    ImportRank *ir = import_set_rank(s, fd->rank);
    if (ir->present)
        return fail(error, fd->path,
                    "rank %d is present twice: %s is its dump too (one dump per rank)", fd->rank,
                    ir->path);
    for (guint i = 0; i < fd->warnings->len; i++)
        g_ptr_array_add(s->warnings, g_strdup(g_ptr_array_index(fd->warnings, i)));
    if (!s->format_detail)
        s->format_detail = g_strdup_printf("%s Flight Recorder %s, version %s%s%s",
                                           hccl || fd->hccl ? "torch_npu HCCL" : "PyTorch",
                                           fd->pickle ? "pickle" : "JSON", fd->version,
                                           fd->lib ? ", comm lib " : "", fd->lib ? fd->lib : "");
    g_autofree uint32_t *gid = g_new(uint32_t, fd->pgs->len + 1);
    g_autofree uint32_t *gid_p2p = g_new(uint32_t, fd->pgs->len + 1);
    g_autofree bool *have_p2p = g_new0(bool, fd->pgs->len + 1);
    for (guint k = 0; k < fd->pgs->len; k++)
        if (!set_group(s, fd->path, g_ptr_array_index(fd->pgs, k), false, &gid[k], error))
            return false;
    for (guint i = 0; i < fd->entries->len; i++) {
        ImportEntry *e = &g_array_index(fd->entries, ImportEntry, i);
        guint k = e->group;
        if (g_array_index(fd->entry_p2p, bool, i)) {
            if (!have_p2p[k]) {
                if (!set_group(s, fd->path, g_ptr_array_index(fd->pgs, k), true, &gid_p2p[k],
                               error))
                    return false;
                have_p2p[k] = true;
            }
            e->group = gid_p2p[k];
        } else {
            e->group = gid[k];
        }
    }
    ir->present = true;
    ir->path = g_strdup(fd->path);
    ir->version = g_strdup(fd->version);
    /* The entries move to the rank (the rank had none: a rank present twice was refused
     * above), the dump keeps the empty array. */
    GArray *empty = ir->entries;
    ir->entries = fd->entries;
    fd->entries = empty;
    ir->truncated = ir->entries->len && g_array_index(ir->entries, ImportEntry, 0).order > 0;
    ir->head_check = fd->head_check;
    for (guint i = 0; i < fd->status->len; i++) {
        ImportPgStatus st = g_array_index(fd->status, ImportPgStatus, i);
        st.group = gid[st.group];
        g_array_append_val(ir->pg_status, st);
    }
    return true;
}

bool import_fr_file(ImportSet *s, const char *path, guint8 *data, gsize len, bool hccl,
                    GError **error)
{
    FrDump *fd = import_fr_parse(path, data, len, NULL, error);
    if (!fd)
        return false;
    bool ok = import_fr_merge(s, fd, hccl, error);
    import_fr_dump_free(fd);
    return ok;
}
