/* src/import-fr.c — PyTorch Flight Recorder dumps (and torch_npu's HCCL ones, the pre-2.5
 * schema) into an ImportSet.
 *
 * Both forms torch writes are read: the pickle (src/pickle.c, a strict reader of plain
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

#include "inputfile.h"
#include "pickle.h"

/* Dump versions documented in torch's FlightRecorder (2.2 .. 2.10) and torch_npu (2.4). */
static const char *const known_versions[] = {"2.2", "2.3", "2.4", "2.5", "2.6", "2.7",
                                             "2.8", "2.9", "2.10", NULL};

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
    if (dot && (strcmp(dot, ".json") == 0 || strcmp(dot, ".pkl") == 0 ||
                strcmp(dot, ".pickle") == 0))
        *dot = '\0';
    size_t n = strlen(base), i = n;
    while (i > 0 && g_ascii_isdigit(base[i - 1]))
        i--;
    if (i == n || n - i > 7)
        return false;
    *rank = (int32_t)strtol(base + i, NULL, 10);
    return true;
}

/* An int member, accepting a decimal string (JSON pg_status); `def` when absent or null. */
static bool get_int(JsonObject *o, const char *k, gint64 def, gint64 *out)
{
    JsonNode *n = json_object_get_member(o, k);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        *out = def;
        return true;
    }
    if (!JSON_NODE_HOLDS_VALUE(n))
        return false;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64) {
        *out = json_node_get_int(n);
        return true;
    }
    if (t == G_TYPE_BOOLEAN) {
        *out = json_node_get_boolean(n);
        return true;
    }
    if (t == G_TYPE_DOUBLE) {
        double d = json_node_get_double(n);
        if (!(d >= -9.2e18 && d <= 9.2e18))
            return false;
        *out = (gint64)d;
        return true;
    }
    if (t == G_TYPE_STRING) {
        const char *s = json_node_get_string(n);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || *end)
            return false;
        *out = v;
        return true;
    }
    return false;
}

static const char *get_str(JsonObject *o, const char *k)
{
    JsonNode *n = json_object_get_member(o, k);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(n);
}

/* "[0, 1, 2, 3]" (the string torch writes) or an array of ints. */
static GArray *parse_ranks(JsonNode *n)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (n && JSON_NODE_HOLDS_ARRAY(n)) {
        JsonArray *a = json_node_get_array(n);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *e = json_array_get_element(a, i);
            if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64 ||
                json_node_get_int(e) < 0 || json_node_get_int(e) > INT32_MAX)
                goto bad;
            int32_t r = (int32_t)json_node_get_int(e);
            g_array_append_val(out, r);
        }
        return out;
    }
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        goto bad;
    const char *s = json_node_get_string(n);
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
        if (errno || v > INT32_MAX)
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
        {"Float", SCHED_DTYPE_FP32},        {"BFloat16", SCHED_DTYPE_BF16},
        {"Half", SCHED_DTYPE_FP16},         {"Float8_e4m3fn", SCHED_DTYPE_FP8},
        {"Float8_e5m2", SCHED_DTYPE_FP8},   {"Float8_e4m3fnuz", SCHED_DTYPE_FP8},
        {"Float8_e5m2fnuz", SCHED_DTYPE_FP8}, {"Char", SCHED_DTYPE_INT8},
        {"Int", SCHED_DTYPE_INT32},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (strcmp(s, table[i].name) == 0) {
            *d = table[i].d;
            return true;
        }
    return false;
}

/* Sum over shapes of the product of dims; false on a malformed list or overflow. */
static bool numel(JsonNode *n, uint64_t *out)
{
    *out = 0;
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return true;
    if (!JSON_NODE_HOLDS_ARRAY(n))
        return false;
    JsonArray *shapes = json_node_get_array(n);
    for (guint i = 0; i < json_array_get_length(shapes); i++) {
        JsonNode *sh = json_array_get_element(shapes, i);
        if (!JSON_NODE_HOLDS_ARRAY(sh))
            return false;
        JsonArray *dims = json_node_get_array(sh);
        uint64_t p = 1;
        for (guint j = 0; j < json_array_get_length(dims); j++) {
            JsonNode *d = json_array_get_element(dims, j);
            if (!JSON_NODE_HOLDS_VALUE(d) || json_node_get_value_type(d) != G_TYPE_INT64 ||
                json_node_get_int(d) < 0)
                return false;
            uint64_t v = (uint64_t)json_node_get_int(d);
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

static const char *first_string(JsonNode *n)
{
    if (!n || !JSON_NODE_HOLDS_ARRAY(n) || json_array_get_length(json_node_get_array(n)) == 0)
        return NULL;
    JsonNode *e = json_array_get_element(json_node_get_array(n), 0);
    if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(e);
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
 * other members (dumps of different jobs). */
static bool set_group(ImportSet *s, const char *path, const PgDef *d, bool p2p, uint32_t *out,
                      GError **error)
{
    for (guint i = 0; i < s->groups->len; i++) {
        ImportGroup *g = g_ptr_array_index(s->groups, i);
        if (g->p2p != p2p || strcmp(g->name, d->name) != 0)
            continue;
        if (g->ranks->len != d->ranks->len ||
            memcmp(g->ranks->data, d->ranks->data, d->ranks->len * sizeof(int32_t)) != 0) {
            g_autofree char *a = sched_format_ranks((const int32_t *)(void *)g->ranks->data,
                                                    g->ranks->len);
            g_autofree char *b = sched_format_ranks((const int32_t *)(void *)d->ranks->data,
                                                    d->ranks->len);
            return fail(error, path,
                        "pg_config: process group \"%s\" has ranks %s here but %s in an earlier "
                        "dump: dumps of different jobs are mixed (import one job's dumps)",
                        d->name, b, a);
        }
        *out = i;
        return true;
    }
    *out = import_set_group(s, d->name, d->desc, (const int32_t *)(void *)d->ranks->data,
                            d->ranks->len, p2p);
    return true;
}

static int cmp_entry(gconstpointer a, gconstpointer b)
{
    const ImportEntry *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

bool import_fr_file(ImportSet *s, const char *path, const guint8 *data, gsize len, bool hccl,
                    GError **error)
{
    int32_t rank;
    if (!rank_from_name(path, &rank))
        return fail(error, path,
                    "cannot tell whose dump this is: torch names a dump <prefix><global rank> "
                    "(nccl_trace_rank_3), and this name does not end in a rank number");
    g_autoptr(JsonNode) root = NULL;
    bool is_pickle = len >= 2 && data[0] == 0x80;
    if (is_pickle) {
        root = pickle_parse(data, len, path, error);
        if (!root) {
            (*error)->domain = IMPORT_ERROR;
            (*error)->code = IMPORT_ERROR_INVALID;
            return false;
        }
    } else {
        if (!input_check_utf8(path, (const char *)data, len, error)) {
            (*error)->domain = IMPORT_ERROR;
            (*error)->code = IMPORT_ERROR_INVALID;
            return false;
        }
        g_autoptr(JsonParser) p = json_parser_new();
        g_autoptr(GError) e = NULL;
        if (!json_parser_load_from_data(p, (const char *)data, (gssize)len, &e))
            return fail(error, path, "not JSON: %s", e->message);
        root = json_node_copy(json_parser_get_root(p));
    }
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return fail(error, path, "not a Flight Recorder dump: the top level is not a dict "
                                 "(a dump is {version, pg_config, pg_status, entries})");
    JsonObject *top = json_node_get_object(root);
    JsonNode *pgc = json_object_get_member(top, "pg_config");
    if (!pgc || !JSON_NODE_HOLDS_OBJECT(pgc))
        return fail(error, path,
                    "not a Flight Recorder dump: no \"pg_config\" dict (a dump has version, "
                    "pg_config, pg_status and entries; found other keys)");
    const char *version = get_str(top, "version");
    if (!version)
        return fail(error, path, "not a Flight Recorder dump: no \"version\" string");

    ImportRank *ir = import_set_rank(s, rank);
    if (ir->present)
        return fail(error, path,
                    "rank %d is present twice: %s is its dump too (one dump per rank)", rank,
                    ir->path);
    ir->present = true;
    ir->path = g_strdup(path);
    ir->version = g_strdup(version);
    bool known = false;
    for (size_t i = 0; known_versions[i]; i++)
        known |= strcmp(version, known_versions[i]) == 0;
    if (!known)
        import_set_warn(s, "%s: Flight Recorder version \"%s\" is not one ranksim knows (2.2 to "
                           "2.10); read as the newest",
                        path, version);
    if (!s->format_detail) {
        const char *lib = get_str(top, "comm_lib_version");
        s->format_detail = g_strdup_printf(
            "%s Flight Recorder %s, version %s%s%s", hccl ? "torch_npu HCCL" : "PyTorch",
            is_pickle ? "pickle" : "JSON", version, lib ? ", comm lib " : "", lib ? lib : "");
    }

    /* pg_config: every PG of this rank, by name. */
    g_autoptr(GHashTable) pgs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, pgdef_free);
    JsonObject *pgo = json_node_get_object(pgc);
    g_autoptr(GList) keys = json_object_get_members(pgo);
    for (GList *k = keys; k; k = k->next) {
        const char *key = k->data;
        JsonNode *v = json_object_get_member(pgo, key);
        if (!JSON_NODE_HOLDS_OBJECT(v))
            return fail(error, path, "pg_config[\"%s\"]: not a dict with name, desc, ranks", key);
        JsonObject *vo = json_node_get_object(v);
        GArray *rs = parse_ranks(json_object_get_member(vo, "ranks"));
        if (!rs)
            return fail(error, path,
                        "pg_config[\"%s\"].ranks: not a rank list (torch writes a string like "
                        "\"[0, 1, 2, 3]\")",
                        key);
        PgDef *d = g_new0(PgDef, 1);
        d->name = g_strdup(get_str(vo, "name") ? get_str(vo, "name") : key);
        d->desc = g_strdup(get_str(vo, "desc"));
        d->ranks = rs;
        g_hash_table_replace(pgs, (gpointer)key, d);
        bool member = false;
        for (guint i = 0; i < rs->len; i++)
            member |= g_array_index(rs, int32_t, i) == rank;
        if (!member)
            return fail(error, path, "pg_config[\"%s\"]: rank %d (from the file name) is not "
                                     "among its ranks: the file was renamed, or is another "
                                     "rank's dump",
                        key, rank);
        uint32_t gid;
        if (!set_group(s, path, d, false, &gid, error))
            return false;
    }

    JsonNode *en = json_object_get_member(top, "entries");
    if (en && !JSON_NODE_HOLDS_NULL(en) && !JSON_NODE_HOLDS_ARRAY(en))
        return fail(error, path, "\"entries\": not a list");
    JsonArray *ea = en && JSON_NODE_HOLDS_ARRAY(en) ? json_node_get_array(en) : NULL;
    guint ne = ea ? json_array_get_length(ea) : 0;
    bool warned_dtype = false;
    for (guint i = 0; i < ne; i++) {
        JsonNode *n = json_array_get_element(ea, i);
        if (!JSON_NODE_HOLDS_OBJECT(n))
            return fail(error, path, "entries[%u]: not a dict", i);
        JsonObject *o = json_node_get_object(n);
        gint64 record_id, cseq, pseq, created, done_ns, started_ns;
        if (!get_int(o, "record_id", i, &record_id) || !get_int(o, "collective_seq_id", 0, &cseq) ||
            !get_int(o, "p2p_seq_id", 0, &pseq) || !get_int(o, "time_created_ns", -1, &created) ||
            !get_int(o, "time_discovered_completed_ns", 0, &done_ns) ||
            !get_int(o, "time_discovered_started_ns", 0, &started_ns))
            return fail(error, path, "entries[%u]: record_id, collective_seq_id, p2p_seq_id and "
                                     "the time_* fields must be integers (or null)",
                        i);
        const char *pname = NULL;
        JsonNode *pg = json_object_get_member(o, "process_group");
        if (pg && JSON_NODE_HOLDS_ARRAY(pg) && json_array_get_length(json_node_get_array(pg)) >= 1)
            pname = first_string(pg);
        if (!pname)
            return fail(error, path, "entries[%u].process_group: not a (name, desc) pair", i);
        PgDef *d = NULL;
        GHashTableIter it;
        gpointer kk, vv;
        g_hash_table_iter_init(&it, pgs);
        while (g_hash_table_iter_next(&it, &kk, &vv))
            if (strcmp(((PgDef *)vv)->name, pname) == 0)
                d = vv;
        if (!d)
            return fail(error, path, "entries[%u]: process group \"%s\" is not in pg_config", i,
                        pname);
        const char *prof = get_str(o, "profiling_name");
        if (!prof)
            return fail(error, path, "entries[%u]: no profiling_name", i);
        SchedOpKind kind;
        int32_t peer;
        bool p2p;
        if (!kind_of(prof, &kind, &peer, &p2p)) {
            import_set_warn(s, "%s: entries[%u]: op \"%s\" is not one ranksim knows; compared by "
                               "its sizes like an all-reduce",
                            path, i, prof);
            kind = SCHED_OP_ALL_REDUCE;
        }
        gint64 isp2p = 0;
        if (get_int(o, "is_p2p", 0, &isp2p) && isp2p)
            p2p = true;
        ImportEntry e = {0};
        if (!set_group(s, path, d, p2p, &e.group, error))
            return false;
        e.seq = (uint64_t)(p2p ? pseq : cseq);
        if (record_id < 0 || (gint64)e.seq < 0)
            return fail(error, path, "entries[%u]: a negative record_id or sequence number", i);
        e.order = (uint64_t)record_id;
        e.kind = kind;
        if (!numel(json_object_get_member(o, "input_sizes"), &e.count) ||
            !numel(json_object_get_member(o, "output_sizes"), &e.count_out))
            return fail(error, path, "entries[%u]: input_sizes/output_sizes must be lists of "
                                     "shapes (lists of non-negative ints)",
                        i);
        const char *dt = first_string(json_object_get_member(o, "input_dtypes"));
        if (!dt)
            dt = first_string(json_object_get_member(o, "output_dtypes"));
        e.dtype = SCHED_DTYPE_FP32;
        e.dtype_known = dt && dtype_of(dt, &e.dtype);
        if (dt && !e.dtype_known && !warned_dtype) {
            import_set_warn(s, "%s: dtype \"%s\" has no ranksim name; stored as fp32 (sizes are "
                               "still compared in elements)",
                            path, dt);
            warned_dtype = true;
        }
        e.dtype_name = g_strdup(dt);
        e.root = -1;
        e.peer = peer;
        e.name = g_strdup(prof);
        const char *st = get_str(o, "state");
        if (!st)
            return fail(error, path, "entries[%u]: no state (completed, started or scheduled)", i);
        if (strcmp(st, "completed") == 0)
            e.state = IMPORT_STATE_COMPLETED;
        else if (strcmp(st, "started") == 0)
            e.state = IMPORT_STATE_STARTED;
        else if (strcmp(st, "scheduled") == 0)
            e.state = IMPORT_STATE_SCHEDULED;
        else
            return fail(error, path, "entries[%u].state: \"%s\" (valid: completed, started, "
                                     "scheduled)",
                        i, st);
        e.created_ns = created > 0 ? created : -1;
        e.completed_ns = -1;
        if (e.state == IMPORT_STATE_COMPLETED) {
            double dur = -1;
            JsonNode *dn = json_object_get_member(o, "duration_ms");
            if (dn && JSON_NODE_HOLDS_VALUE(dn) &&
                (json_node_get_value_type(dn) == G_TYPE_DOUBLE ||
                 json_node_get_value_type(dn) == G_TYPE_INT64))
                dur = json_node_get_double(dn);
            if (done_ns > 0)
                e.completed_ns = done_ns;
            else if (dur >= 0 && e.created_ns > 0 && dur < 1e12)
                e.completed_ns = e.created_ns + (int64_t)(dur * 1e6);
        }
        gint64 tmo = 0;
        if (get_int(o, "timeout_ms", 0, &tmo) && tmo > 0)
            e.timeout_ms = tmo;
        e.source = g_strdup_printf("%s entry %u (record_id %" G_GINT64_FORMAT ")", path, i,
                                   record_id);
        g_array_append_val(ir->entries, e);
    }
    g_array_sort(ir->entries, cmp_entry);
    for (guint i = 1; i < ir->entries->len; i++)
        if (g_array_index(ir->entries, ImportEntry, i).order ==
            g_array_index(ir->entries, ImportEntry, i - 1).order)
            return fail(error, path, "two entries share record_id %" G_GUINT64_FORMAT,
                        g_array_index(ir->entries, ImportEntry, i).order);
    ir->truncated = ir->entries->len && g_array_index(ir->entries, ImportEntry, 0).order > 0;
    return true;
}
