/* sched/diagnose-detail.c — the one reader of a diagnostic's detail JSON (written by
 * diagnose.c): text in, a typed SchedDetail out, so views (explain, DOT, match) never walk the
 * JSON themselves. Absent or mistyped members read as the defaults diagnose.h names. */
#include "diagnose.h"
#include "json-bounded.h"

#include <json-glib/json-glib.h>

/* ---- JSON access ---- */

static JsonNode *member(JsonObject *o, const char *k)
{
    return o ? json_object_get_member(o, k) : NULL;
}

static char *get_str(JsonObject *o, const char *k)
{
    JsonNode *n = member(o, k);
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? g_strdup(json_node_get_string(n))
               : NULL;
}

static bool has_value(JsonObject *o, const char *k)
{
    JsonNode *n = member(o, k);
    return n && JSON_NODE_HOLDS_VALUE(n);
}

static int64_t get_int(JsonObject *o, const char *k, int64_t dflt)
{
    JsonNode *n = member(o, k);
    return n && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_int(n) : dflt;
}

static double get_double(JsonObject *o, const char *k, double dflt)
{
    JsonNode *n = member(o, k);
    return n && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_double(n) : dflt;
}

static JsonArray *get_arr(JsonObject *o, const char *k)
{
    JsonNode *n = member(o, k);
    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

static JsonObject *obj_at(JsonArray *a, guint i)
{
    JsonNode *n = json_array_get_element(a, i);
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* An array of ranks (int32_t); elements that are not numbers read as 0, as json-glib does. */
static GArray *ranks_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        int32_t r = n && JSON_NODE_HOLDS_VALUE(n) ? (int32_t)json_node_get_int(n) : 0;
        g_array_append_val(out, r);
    }
    return out;
}

/* ---- the parts ---- */

static void sig_clear(gpointer p)
{
    SchedDetailSig *s = p;
    g_free(s->kind);
    g_free(s->dtype);
    g_free(s->op);
    g_array_unref(s->ranks);
}

static GArray *sigs_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SchedDetailSig));
    g_array_set_clear_func(out, sig_clear);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonObject *o = obj_at(a, i);
        SchedDetailSig s = {
            .kind = get_str(o, "kind"),
            .count = get_int(o, "count", 0),
            .dtype = get_str(o, "dtype"),
            .root = (int32_t)get_int(o, "root", -1),
            .op = get_str(o, "op"),
            .layer = (int32_t)get_int(o, "layer", -1),
            .tokens = get_int(o, "tokens", 0),
            .ranks = ranks_of(get_arr(o, "ranks")),
        };
        g_array_append_val(out, s);
    }
    return out;
}

static void missing_clear(gpointer p)
{
    SchedDetailMissing *m = p;
    g_free(m->state);
    g_free(m->doing);
}

static GArray *missing_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SchedDetailMissing));
    g_array_set_clear_func(out, missing_clear);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonObject *o = obj_at(a, i);
        SchedDetailMissing m = {.rank = (int32_t)get_int(o, "rank", -1),
                                .state = get_str(o, "state"),
                                .doing = get_str(o, "doing")};
        g_array_append_val(out, m);
    }
    return out;
}

static void instance_clear(gpointer p)
{
    SchedDetailInstance *in = p;
    g_free(in->group);
    g_free(in->op);
    g_array_unref(in->arrived);
    g_array_unref(in->missing);
    g_free(in->hardware);
}

static GArray *instances_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SchedDetailInstance));
    g_array_set_clear_func(out, instance_clear);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonObject *o = obj_at(a, i);
        JsonNode *mm = member(o, "mismatched");
        SchedDetailInstance in = {
            .group = get_str(o, "group"),
            .seq = (uint64_t)get_int(o, "seq", 0),
            .has_seq = has_value(o, "seq"),
            .op = get_str(o, "op"),
            .layer = (int32_t)get_int(o, "layer", -1),
            .mismatched = mm && JSON_NODE_HOLDS_VALUE(mm) && json_node_get_boolean(mm),
            .arrived = ranks_of(get_arr(o, "arrived")),
            .missing = missing_of(get_arr(o, "missing")),
            .hardware = get_str(o, "hardware"),
        };
        g_array_append_val(out, in);
    }
    return out;
}

static GArray *blocked_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SchedDetailBlocked));
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonObject *o = obj_at(a, i);
        SchedDetailBlocked b = {.rank = (int32_t)get_int(o, "rank", -1),
                                .since_us = get_double(o, "since_us", -1),
                                .instance = get_int(o, "instance", -1)};
        g_array_append_val(out, b);
    }
    return out;
}

static void culprit_clear(gpointer p)
{
    g_free(((SchedDetailCulprit *)p)->reason);
}

/* Culprits: plain ranks (mismatch) or objects {rank, reason} (deadlock). */
static GArray *culprits_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SchedDetailCulprit));
    g_array_set_clear_func(out, culprit_clear);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        SchedDetailCulprit c = {-1, NULL};
        if (n && JSON_NODE_HOLDS_OBJECT(n)) {
            JsonObject *o = json_node_get_object(n);
            c.rank = (int32_t)get_int(o, "rank", -1);
            c.reason = get_str(o, "reason");
        } else if (n && JSON_NODE_HOLDS_VALUE(n)) {
            c.rank = (int32_t)json_node_get_int(n);
        }
        g_array_append_val(out, c);
    }
    return out;
}

static GPtrArray *cycles_of(JsonArray *a)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        g_ptr_array_add(out,
                        ranks_of(n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL));
    }
    return out;
}

static GArray *edges_of(JsonArray *a)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        JsonArray *e = n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
        if (!e || json_array_get_length(e) != 2)
            continue;
        int32_t pair[2] = {(int32_t)json_array_get_int_element(e, 0),
                           (int32_t)json_array_get_int_element(e, 1)};
        g_array_append_vals(out, pair, 2);
    }
    return out;
}

SchedDetail *sched_detail_parse(const char *json)
{
    if (!json)
        return NULL;
    g_autoptr(JsonNode) root = sched_json_from_string(json, NULL);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return NULL;
    JsonObject *o = json_node_get_object(root);
    SchedDetail *d = g_new0(SchedDetail, 1);
    d->group = get_str(o, "group");
    d->seq = (uint64_t)get_int(o, "seq", 0);
    d->has_seq = has_value(o, "seq");
    d->policy = get_str(o, "policy");
    d->signatures = sigs_of(get_arr(o, "signatures"));
    d->majority = (int32_t)get_int(o, "majority", -1);
    d->culprits = culprits_of(get_arr(o, "culprits"));
    d->unknown = ranks_of(get_arr(o, "unknown"));
    d->instances = instances_of(get_arr(o, "instances"));
    d->blocked = blocked_of(get_arr(o, "blocked"));
    d->edges = edges_of(get_arr(o, "edges"));
    d->cycles = cycles_of(get_arr(o, "cycles"));
    d->hardware = get_str(o, "hardware");
    d->waiting = ranks_of(get_arr(o, "waiting"));
    d->arrived = ranks_of(get_arr(o, "arrived"));
    d->missing = missing_of(get_arr(o, "missing"));
    d->arrive_us = get_double(o, "arrive_us", -1);
    d->late = ranks_of(get_arr(o, "late"));
    d->spread_us = get_double(o, "spread_us", 0);
    d->members = sigs_of(get_arr(o, "members"));
    d->count = get_int(o, "count", 0);
    d->group_size = get_int(o, "group_size", 0);
    return d;
}

void sched_detail_free(SchedDetail *d)
{
    if (!d)
        return;
    g_free(d->group);
    g_free(d->policy);
    g_array_unref(d->signatures);
    g_array_unref(d->culprits);
    g_array_unref(d->unknown);
    g_array_unref(d->instances);
    g_array_unref(d->blocked);
    g_array_unref(d->edges);
    g_ptr_array_unref(d->cycles);
    g_free(d->hardware);
    g_array_unref(d->waiting);
    g_array_unref(d->arrived);
    g_array_unref(d->missing);
    g_array_unref(d->late);
    g_array_unref(d->members);
    g_free(d);
}
