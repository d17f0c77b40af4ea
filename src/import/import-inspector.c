/* src/import/import-inspector.c — NCCL's own telemetry into an ImportSet: the NCCL Inspector
 * plugin's per-collective JSON (output format v4.x), and NCCL RAS's JSON status (`ncclras -f
 * json`, NCCL 2.28.7 on).
 *
 * What the plugin writes (NVIDIA/nccl plugins/profiler/inspector, inspector_json.cc and README):
 * one JSON object per *completed* collective (or p2p operation) per communicator, one after
 * another in a file per process (NCCL_INSPECTOR_DUMP_DIR):
 *   {"header": {"id": "0x7f8c496ae9f661", "comm_name": ..., "rank": 2, "n_ranks": 8, "nnodes": 1},
 *    "metadata": {"inspector_output_format_version": "v4.0", "hostname": ..., "pid": ...,
 *                 "dump_timestamp_us": ...},
 *    "coll_perf": {"coll": "AllReduce", "coll_sn": 1407, "coll_msg_size_bytes": ..., ...}}
 * or "p2p_perf": {"p2p": "Send", "p2p_sn": ..., "p2p_peer": ..., "p2p_msg_size_bytes": ...}.
 * `coll_sn` is NCCL's comm->seqNumber[func] (src/plugin/profiler.cc): one counter per
 * communicator *and collective type*, from 0, so an instance is (communicator, type, sn): each
 * (communicator, type) is a group here ("comm 0x... AllReduce"), its calls numbered sn + 1.
 * `header.rank` is the rank in the communicator; a process (hostname:pid) takes as its global
 * rank its rank in the largest communicator it is in (the world, when there is one).
 *
 * Only completions are written: the call a hang holds is never in the file. What the file
 * shows is how far each rank got on each communicator — a rank with fewer completed calls of a
 * type than its peers is behind (import-verdict.c's `unmatched` names it) — and the sizes of
 * the completed calls (compared in bytes: the dtype is not written).
 *
 * Costs: one json-glib parse per object; O(objects) otherwise. Errors: a file with no object
 * of this schema, or a malformed object, is refused with its name and the object's offset.
 */
#include "import.h"
#include "../../sched/json-bounded.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* One completed operation as read. */
typedef struct {
    guint proc;          /* index into the processes */
    char *comm;          /* header.id */
    char *comm_name;     /* header.comm_name, or NULL */
    int32_t comm_rank;   /* header.rank */
    int32_t n_ranks;     /* header.n_ranks */
    const char *op;      /* coll / p2p name, interned in the set */
    bool p2p;
    int32_t peer;        /* p2p: the peer's rank in the communicator */
    uint64_t sn;
    uint64_t bytes;
    const char *path;    /* borrowed */
} InspOp;

static void insp_op_clear(gpointer p)
{
    InspOp *o = p;
    g_free(o->comm);
    g_free(o->comm_name);
}

bool import_looks_inspector(const guint8 *data, gsize len)
{
    gsize n = MIN(len, (gsize)65536);
    g_autofree char *head = g_strndup((const char *)data, n);
    return strstr(head, "\"header\"") && strstr(head, "\"n_ranks\"") &&
           (strstr(head, "\"coll_perf\"") || strstr(head, "\"p2p_perf\""));
}

/* The end of the JSON object starting at data[i] ('{'), strings and escapes respected; 0 when
 * it does not close. */
static gsize object_end(const char *data, gsize len, gsize i)
{
    int depth = 0;
    bool str = false, esc = false;
    for (gsize k = i; k < len; k++) {
        char c = data[k];
        if (str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && --depth == 0) {
            return k + 1;
        }
    }
    return 0;
}

static const char *member_str(JsonObject *o, const char *k)
{
    JsonNode *n = o ? json_object_get_member(o, k) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}

static bool member_int(JsonObject *o, const char *k, gint64 *out)
{
    JsonNode *n = o ? json_object_get_member(o, k) : NULL;
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
        return false;
    *out = json_node_get_int(n);
    return true;
}

static JsonObject *member_obj(JsonObject *o, const char *k)
{
    JsonNode *n = o ? json_object_get_member(o, k) : NULL;
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* One object of the file into `ops`; false with `error` when it is not the plugin's schema. */
static bool read_object(ImportSet *s, const char *path, gsize at, JsonObject *root,
                        GHashTable *procs, GArray *ops, GError **error)
{
    JsonObject *h = member_obj(root, "header"), *m = member_obj(root, "metadata");
    JsonObject *c = member_obj(root, "coll_perf"), *p = member_obj(root, "p2p_perf");
    JsonObject *perf = c ? c : p;
    gint64 rank = -1, nr = 0, sn = -1, bytes = 0, pid = 0, peer = -1;
    const char *id = member_str(h, "id");
    const char *op = perf ? member_str(perf, c ? "coll" : "p2p") : NULL;
    if (!h || !id || !member_int(h, "rank", &rank) || !member_int(h, "n_ranks", &nr) || !perf ||
        !op || !member_int(perf, c ? "coll_sn" : "p2p_sn", &sn) ||
        !member_int(perf, c ? "coll_msg_size_bytes" : "p2p_msg_size_bytes", &bytes) ||
        rank < 0 || nr < 1 || nr > IMPORT_MAX_RANKS || rank >= nr || sn < 0 || bytes < 0) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                    "%s: the object at byte %" G_GSIZE_FORMAT " is not an NCCL Inspector record "
                    "(header {id, rank, n_ranks} and coll_perf {coll, coll_sn, "
                    "coll_msg_size_bytes} or p2p_perf {p2p, p2p_sn, p2p_msg_size_bytes})",
                    path, at);
        return false;
    }
    if (!c)
        member_int(perf, "p2p_peer", &peer);
    member_int(m, "pid", &pid);
    const char *host = member_str(m, "hostname");
    /* a process is host:pid; without metadata, the file stands for one process */
    g_autofree char *key = host ? g_strdup_printf("%s:%" G_GINT64_FORMAT, host, pid)
                                : g_strdup_printf("file %s", path);
    gpointer v = g_hash_table_lookup(procs, key);
    if (!v) {
        v = GUINT_TO_POINTER(g_hash_table_size(procs) + 1);
        g_hash_table_insert(procs, g_strdup(key), v);
    }
    const char *name = member_str(h, "comm_name");
    InspOp o = {
        .proc = GPOINTER_TO_UINT(v) - 1,
        .comm = g_strdup(id),
        .comm_name = name && strcmp(name, "unknown") != 0 ? g_strdup(name) : NULL,
        .comm_rank = (int32_t)rank,
        .n_ranks = (int32_t)nr,
        .op = import_set_string(s, op),
        .p2p = !c,
        .peer = (int32_t)peer,
        .sn = (uint64_t)sn,
        .bytes = (uint64_t)bytes,
        .path = path,
    };
    g_array_append_val(ops, o);
    return true;
}

static bool read_file(ImportSet *s, const char *path, const GBytes *bytes, GHashTable *procs,
                      GArray *ops, GError **error)
{
    gsize len = 0;
    const char *data = g_bytes_get_data((GBytes *)bytes, &len);
    guint found = 0;
    for (gsize i = 0; i < len; i++) {
        if (data[i] != '{')
            continue;
        gsize end = object_end(data, len, i);
        if (!end)
            break; /* a record cut off at the end of the file (still being written) */
        g_autoptr(JsonParser) jp = json_parser_new();
        g_autoptr(GError) perr = NULL;
        if (!sched_json_load(jp, data + i, (gssize)(end - i), &perr) ||
            !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(jp))) {
            g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                        "%s: byte %" G_GSIZE_FORMAT ": not JSON: %s", path, i,
                        perr ? perr->message : "not an object");
            return false;
        }
        if (!read_object(s, path, i, json_node_get_object(json_parser_get_root(jp)), procs, ops,
                         error))
            return false;
        found++;
        i = end - 1;
    }
    if (!found) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                    "%s: no NCCL Inspector record (JSON objects with \"header\" and "
                    "\"coll_perf\" or \"p2p_perf\")",
                    path);
        return false;
    }
    return true;
}

static SchedOpKind kind_of(const char *op)
{
    static const struct {
        const char *name;
        SchedOpKind kind;
    } t[] = {{"AllReduce", SCHED_OP_ALL_REDUCE},   {"AllGather", SCHED_OP_ALL_GATHER},
             {"ReduceScatter", SCHED_OP_REDUCE_SCATTER}, {"Broadcast", SCHED_OP_BROADCAST},
             {"Reduce", SCHED_OP_BROADCAST},      {"Send", SCHED_OP_SEND},
             {"Recv", SCHED_OP_RECV},             {"AllToAll", SCHED_OP_ALL_TO_ALL}};
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
        if (strcmp(op, t[i].name) == 0)
            return t[i].kind;
    return SCHED_OP_ALL_REDUCE;
}

/* Each process's global rank: its rank in the largest communicator, when it is in it; the
 * others after it, in the order first seen (with a warning). */
static GArray *global_ranks(ImportSet *s, const GArray *ops, guint n_procs)
{
    GArray *g = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_array_set_size(g, n_procs);
    int32_t world = 0;
    const char *wid = NULL;
    for (guint i = 0; i < ops->len; i++) {
        const InspOp *o = &g_array_index(ops, InspOp, i);
        if (o->n_ranks > world) {
            world = o->n_ranks;
            wid = o->comm;
        }
    }
    for (guint p = 0; p < n_procs; p++)
        g_array_index(g, int32_t, p) = -1;
    for (guint i = 0; i < ops->len; i++) {
        const InspOp *o = &g_array_index(ops, InspOp, i);
        if (strcmp(o->comm, wid) == 0)
            g_array_index(g, int32_t, o->proc) = o->comm_rank;
    }
    int32_t next = world;
    bool warned = false;
    for (guint p = 0; p < n_procs; p++)
        if (g_array_index(g, int32_t, p) < 0) {
            g_array_index(g, int32_t, p) = next++;
            if (!warned)
                import_set_warn(s, "a process has no record on the largest communicator (%s, %d "
                                   "ranks): its global rank is a guess (%d on)",
                                wid, world, world);
            warned = true;
        }
    return g;
}

/* The group of (communicator, type): its members the processes seen on it, by their rank in it;
 * its size the communicator's. */
static uint32_t group_of(ImportSet *s, const GArray *ops, const InspOp *o, const GArray *gr)
{
    g_autofree char *name = g_strdup_printf("%s%s%s %s", o->comm_name ? o->comm_name : "",
                                            o->comm_name ? " " : "", o->comm, o->op);
    for (guint i = 0; i < s->groups->len; i++)
        if (strcmp(((ImportGroup *)g_ptr_array_index(s->groups, i))->name, name) == 0)
            return i;
    g_autofree int32_t *by_rank = g_new(int32_t, o->n_ranks);
    for (int32_t r = 0; r < o->n_ranks; r++)
        by_rank[r] = -1;
    for (guint i = 0; i < ops->len; i++) {
        const InspOp *x = &g_array_index(ops, InspOp, i);
        if (strcmp(x->comm, o->comm) == 0 && x->comm_rank < o->n_ranks)
            by_rank[x->comm_rank] = g_array_index(gr, int32_t, x->proc);
    }
    g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (int32_t r = 0; r < o->n_ranks; r++)
        if (by_rank[r] >= 0)
            g_array_append_val(members, by_rank[r]);
    uint32_t id = import_set_group(s, name, NULL, (const int32_t *)(void *)members->data,
                                   members->len, o->p2p);
    ImportGroup *g = g_ptr_array_index(s->groups, id);
    g->size = (uint32_t)o->n_ranks;
    return id;
}

/* ---- NCCL RAS (docs/userguide/source/troubleshooting/ras.rst, "JSON Output") ----
 * {"nccl_version", "communicators": [{"hash", "size", "ranks": [{"rank", "host", "pid",
 *  "status": {...}, "collective_counts": {"AllReduce": N, ...}}], "missing_ranks": [{"rank",
 *  "host", "pid", "status": {"unresponsive", "considered_dead"}}]}]}. The counts are NCCL's
 * comm->seqNumber[func] (the calls launched of each type, src/plugin/profiler.cc), so each
 * (communicator, type) is a group and a rank's count its PG status's last enqueued call: ranks
 * with fewer are behind (import-verdict.c, `behind`). Missing ranks are quoted as symptoms. */

bool import_looks_ras(const guint8 *data, gsize len)
{
    gsize n = MIN(len, (gsize)65536);
    g_autofree char *head = g_strndup((const char *)data, n);
    return strstr(head, "\"communicators\"") &&
           (strstr(head, "\"collective_counts\"") || strstr(head, "\"missing_ranks\""));
}

static char *proc_key(JsonObject *r)
{
    gint64 pid = 0;
    member_int(r, "pid", &pid);
    const char *host = member_str(r, "host");
    return g_strdup_printf("%s:%" G_GINT64_FORMAT, host ? host : "?", pid);
}

/* Each process's global rank: its rank in the largest communicator. */
static void ras_ranks(JsonArray *comms, GHashTable *global)
{
    gint64 best = -1;
    JsonObject *world = NULL;
    for (guint c = 0; c < json_array_get_length(comms); c++) {
        JsonObject *co = json_array_get_object_element(comms, c);
        gint64 size = 0;
        if (co && member_int(co, "size", &size) && size > best) {
            best = size;
            world = co;
        }
    }
    static const char *const lists[] = {"ranks", "missing_ranks"};
    for (int l = 0; world && l < 2; l++) {
        JsonNode *ln = json_object_get_member(world, lists[l]);
        JsonArray *a = ln && JSON_NODE_HOLDS_ARRAY(ln) ? json_node_get_array(ln) : NULL;
        for (guint i = 0; a && i < json_array_get_length(a); i++) {
            JsonObject *r = json_array_get_object_element(a, i);
            gint64 rank = -1;
            if (r && member_int(r, "rank", &rank) && rank >= 0 && rank < IMPORT_MAX_RANKS)
                g_hash_table_insert(global, proc_key(r), GINT_TO_POINTER((int)rank + 1));
        }
    }
}

/* The global rank of a rank entry, -1 when its process is not in the largest communicator. */
static int32_t ras_global(GHashTable *global, JsonObject *r)
{
    g_autofree char *k = proc_key(r);
    return GPOINTER_TO_INT(g_hash_table_lookup(global, k)) - 1;
}

/* One communicator: a group per collective type with each responsive rank's count, and a
 * symptom per missing rank. */
static void ras_comm(ImportSet *s, const char *path, JsonObject *co, GHashTable *global)
{
    const char *hash = member_str(co, "hash");
    gint64 size = 0;
    member_int(co, "size", &size);
    JsonNode *rn = json_object_get_member(co, "ranks");
    JsonArray *ranks = rn && JSON_NODE_HOLDS_ARRAY(rn) ? json_node_get_array(rn) : NULL;
    JsonNode *mn = json_object_get_member(co, "missing_ranks");
    JsonArray *missing = mn && JSON_NODE_HOLDS_ARRAY(mn) ? json_node_get_array(mn) : NULL;
    g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int32_t));
    JsonArray *both[] = {ranks, missing};
    for (int l = 0; l < 2; l++)
        for (guint i = 0; both[l] && i < json_array_get_length(both[l]); i++) {
            int32_t g = ras_global(global, json_array_get_object_element(both[l], i));
            if (g >= 0)
                g_array_append_val(members, g);
        }
    for (guint i = 0; ranks && i < json_array_get_length(ranks); i++) {
        JsonObject *r = json_array_get_object_element(ranks, i);
        int32_t g = ras_global(global, r);
        JsonObject *counts = member_obj(r, "collective_counts");
        if (g < 0 || !counts)
            continue;
        ImportRank *ir = import_set_rank(s, g);
        if (!ir->present) {
            ir->present = true;
            ir->path = g_strdup(path);
            ir->evidence = g_strdup("NCCL RAS status (calls launched per type)");
        }
        g_autoptr(GList) funcs = json_object_get_members(counts);
        for (GList *f = funcs; f; f = f->next) {
            gint64 cnt = 0;
            if (!member_int(counts, f->data, &cnt) || cnt < 0)
                continue;
            g_autofree char *name = g_strdup_printf("%s %s", hash ? hash : "?",
                                                    (const char *)f->data);
            uint32_t gid = import_set_group(s, name, NULL,
                                            (const int32_t *)(void *)members->data,
                                            members->len, false);
            ((ImportGroup *)g_ptr_array_index(s->groups, gid))->size = (uint32_t)MAX(size, 0);
            ImportPgStatus ps = {.group = gid, .last_enqueued = (uint64_t)cnt};
            g_array_append_val(ir->pg_status, ps);
        }
    }
    for (guint i = 0; missing && i < json_array_get_length(missing); i++) {
        JsonObject *r = json_array_get_object_element(missing, i);
        JsonObject *st = member_obj(r, "status");
        gint64 rank = -1;
        member_int(r, "rank", &rank);
        JsonNode *dn = st ? json_object_get_member(st, "considered_dead") : NULL;
        bool dead = dn && JSON_NODE_HOLDS_VALUE(dn) && json_node_get_boolean(dn);
        g_autofree char *k = proc_key(r);
        g_autofree char *text = g_strdup_printf(
            "NCCL RAS: rank %" G_GINT64_FORMAT " of communicator %s (%s) %s", rank,
            hash ? hash : "?", k, dead ? "is considered dead" : "is unresponsive");
        ImportFinding f = {
            .kind = IMPORT_FINDING_SYMPTOM,
            .rank = ras_global(global, r),
            .peer = -1,
            .group = -1,
            .what = dead ? "ras_dead" : "ras_unresponsive",
            .text = import_set_string(s, text),
            .source = g_strdup(path),
        };
        g_array_append_val(s->findings, f);
    }
}

static bool ras_file(ImportSet *s, const char *path, const GBytes *bytes, GError **error)
{
    gsize len = 0;
    const char *data = g_bytes_get_data((GBytes *)bytes, &len);
    g_autoptr(JsonParser) jp = json_parser_new();
    g_autoptr(GError) perr = NULL;
    JsonObject *root = NULL;
    if (sched_json_load(jp, data, (gssize)len, &perr) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(jp)))
        root = json_node_get_object(json_parser_get_root(jp));
    JsonNode *cn = root ? json_object_get_member(root, "communicators") : NULL;
    if (!cn || !JSON_NODE_HOLDS_ARRAY(cn)) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                    "%s: not NCCL RAS JSON status (an object with a \"communicators\" list)%s%s",
                    path, perr ? ": " : "", perr ? perr->message : "");
        return false;
    }
    JsonArray *comms = json_node_get_array(cn);
    g_autoptr(GHashTable) global = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    ras_ranks(comms, global);
    for (guint c = 0; c < json_array_get_length(comms); c++) {
        JsonObject *co = json_array_get_object_element(comms, c);
        if (co)
            ras_comm(s, path, co, global);
    }
    if (!s->format_detail)
        s->format_detail = g_strdup_printf("NCCL RAS JSON status%s%s",
                                           member_str(root, "nccl_version") ? ", NCCL " : "",
                                           member_str(root, "nccl_version")
                                               ? member_str(root, "nccl_version")
                                               : "");
    return true;
}

bool import_inspector_files(ImportSet *s, const char *const *paths, const GBytes *const *data,
                            guint n, GError **error)
{
    guint ras = 0;
    for (guint f = 0; f < n; f++) {
        gsize len = 0;
        const guint8 *d = g_bytes_get_data((GBytes *)data[f], &len);
        if (import_looks_ras(d, len)) {
            if (!ras_file(s, paths[f], data[f], error))
                return false;
            ras++;
        }
    }
    if (ras == n)
        return true;
    g_autoptr(GHashTable) procs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(InspOp));
    g_array_set_clear_func(ops, insp_op_clear);
    for (guint f = 0; f < n; f++) {
        gsize len = 0;
        const guint8 *d = g_bytes_get_data((GBytes *)data[f], &len);
        if (!import_looks_ras(d, len) && !read_file(s, paths[f], data[f], procs, ops, error))
            return false;
    }
    guint n_procs = g_hash_table_size(procs);
    g_autoptr(GArray) gr = global_ranks(s, ops, n_procs);
    for (guint i = 0; i < ops->len; i++) {
        const InspOp *o = &g_array_index(ops, InspOp, i);
        int32_t r = g_array_index(gr, int32_t, o->proc);
        if (r >= IMPORT_MAX_RANKS) {
            g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                        "%s: more processes than ranksim imports (%d)", o->path,
                        IMPORT_MAX_RANKS);
            return false;
        }
        ImportRank *ir = import_set_rank(s, r);
        if (!ir->present) {
            ir->present = true;
            ir->path = g_strdup(o->path);
            ir->evidence = g_strdup("NCCL Inspector records (completed calls only)");
        }
        ImportEntry e = {
            .group = group_of(s, ops, o, gr),
            .seq = o->sn + 1, /* NCCL counts from 0 */
            .order = ir->entries->len,
            .kind = kind_of(o->op),
            .dtype = SCHED_DTYPE_INT8, /* sizes are bytes: compared as such */
            .dtype_known = true,
            .count = o->bytes,
            .root = -1,
            .peer = o->p2p ? o->peer : -1,
            .name = o->op,
            .dtype_name = import_set_string(s, "bytes"),
            .state = IMPORT_STATE_COMPLETED,
            .created_ns = -1,
            .completed_ns = -1,
        };
        g_array_append_val(ir->entries, e);
    }
    if (!s->format_detail)
        s->format_detail = g_strdup_printf("NCCL Inspector JSON (%u process%s)", n_procs,
                                           n_procs == 1 ? "" : "es");
    import_set_warn(s, "NCCL Inspector writes completed calls only: the call a hang holds is "
                       "never in its files; a rank with fewer completed calls of a kind than "
                       "its peers is behind");
    return true;
}
