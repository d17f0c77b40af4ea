/* tests/src/input/request-line-oracle.h — what json-glib makes of a request-trace line, the
 * numbers src/input/scenario-requests.c gets from it on the json-glib path: each member's int64
 * printed as "%lld", each double with g_ascii_dtostr, read back with g_ascii_strtod. The
 * reference request_line_read (src/input/request-line.h) must match wherever it takes a line;
 * shared by tests/src/input/test-request-line.c and tests/fuzz/fuzz-requests.c.
 */
#ifndef TESTS_REQUEST_LINE_ORACLE_H
#define TESTS_REQUEST_LINE_ORACLE_H

#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <string.h>

#include "../../../sched/json-bounded.h"
#include "../../../src/input/request-line.h"

/* json-glib's reading of `line`: false when it refuses it, its root is no object or a member
 * is not a number (request_line_read takes none of those); else the numbers of keys[k] in v[k]
 * (has[k]: present). */
static inline bool oracle_json_line(const char *line, const char *const *keys, guint n, double *v,
                                    bool *has)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) err = NULL;
    if (!sched_json_load(parser, line, -1, &err))
        return false;
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return false;
    JsonObject *obj = json_node_get_object(root);
    g_autoptr(GList) members = json_object_get_values(obj);
    for (GList *m = members; m; m = m->next) {
        JsonNode *node = m->data;
        if (!JSON_NODE_HOLDS_VALUE(node) || (json_node_get_value_type(node) != G_TYPE_INT64 &&
                                             json_node_get_value_type(node) != G_TYPE_DOUBLE))
            return false;
    }
    for (guint k = 0; k < n; k++) {
        JsonNode *node = json_object_get_member(obj, keys[k]);
        char text[G_ASCII_DTOSTR_BUF_SIZE + 32];
        has[k] = node != NULL;
        if (!node)
            continue;
        if (json_node_get_value_type(node) == G_TYPE_INT64)
            g_snprintf(text, sizeof text, "%" G_GINT64_FORMAT, json_node_get_int(node));
        else
            g_ascii_dtostr(text, sizeof text, json_node_get_double(node));
        v[k] = g_ascii_strtod(text, NULL);
    }
    return true;
}

/* NULL when request_line_read agrees with json-glib on `line` (or gives it up), else what
 * differs (caller frees). */
static inline char *oracle_disagreement(const char *line)
{
    static const char *const keys[] = {"arrival_s", "prompt", "output", "prefix_id", "prefix"};
    enum { N = G_N_ELEMENTS(keys) };
    double fast[N], slow[N];
    bool fast_has[N], slow_has[N];
    if (!request_line_read(line, keys, N, fast, fast_has))
        return NULL;
    if (!oracle_json_line(line, keys, N, slow, slow_has))
        return g_strdup("request_line_read takes a line json-glib refuses or reads otherwise");
    for (guint k = 0; k < N; k++) {
        if (fast_has[k] != slow_has[k])
            return g_strdup_printf("key %s: present %d, json-glib %d", keys[k], fast_has[k],
                                   slow_has[k]);
        if (fast_has[k] && memcmp(&fast[k], &slow[k], sizeof fast[k]) != 0)
            return g_strdup_printf("key %s: %.17g (%a), json-glib %.17g (%a)", keys[k], fast[k],
                                   fast[k], slow[k], slow[k]);
    }
    return NULL;
}

#endif
