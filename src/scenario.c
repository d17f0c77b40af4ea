/* src/scenario.c — the scenario loader: YAML text -> Scenario (program, policies, hardware,
 * faults). The format is described key by key in doc/scenario-format.md.
 *
 * Pipeline: libyaml's document API parses the text into a yaml_document_t; that is copied into a
 * small owned tree (YNode) carrying 1-based line numbers, rejecting aliases, duplicate keys and
 * non-scalar keys on the way; the --set overrides edit that tree; then the tree is interpreted
 * top-down, and sched_program_validate() runs last as a safety net.
 *
 * Errors: the first problem found ends loading with exactly one GError in SCENARIO_ERROR whose
 * message is one line, "FILE:LINE: key 'KEY': problem; what would be valid" (or
 * "FILE: --set PATH: key 'KEY': ..." for values that came from an override). Every helper that
 * can fail returns false after setting the error, and callers return at once, so an error is
 * never set twice.
 *
 * Costs: O(text) to parse and copy; O(ranks) memory for rank bookkeeping; group membership of
 * each rank-set key is checked once per (key, group), O(set size x log group size).
 */
#include "scenario.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <yaml.h>

G_DEFINE_QUARK(ranksim - scenario - error - quark, scenario_error)

/* ---- limits (doc/scenario-format.md lists them) ---- */

#define MAX_RANKS 1048576u
#define MAX_COUNT (UINT64_C(1) << 48)         /* elements; also tokens */
#define MAX_US 1e12                           /* compute duration, microseconds */
#define MAX_SECONDS 1e9                       /* timeouts, delays, crash times */
#define MAX_TIMES 10000000                    /* repeat iterations */
#define MAX_LAYER (INT64_C(1) << 30)          /* layer, layer_start */
#define MAX_FACTOR 1e6                        /* slowdown factor */
#define MAX_BW_GB_S 1e6                       /* link bandwidth */
#define MAX_LATENCY_US 1e9                    /* base / step latency */
#define MAX_TREE_DEPTH 64                     /* YAML nesting */
#define MAX_GROUP_MEMBERS (UINT64_C(1) << 24) /* summed over all groups */
#define SUGGEST_MAX_DISTANCE 2

/* ---- the owned YAML tree ---- */

typedef enum { YN_SCALAR, YN_SEQ, YN_MAP } YNodeType;

typedef struct {
    YNodeType type;
    uint32_t line;    /* 1-based source line; 0 for nodes made by --set */
    char *set_path;   /* the --set key path that made this node, or NULL */
    char *text;       /* scalar text (never NULL for scalars) */
    bool quoted;      /* scalar written quoted or as a block, not plain */
    GPtrArray *items; /* seq: YNode*; map: key, value, key, value, ... (YNode*) */
} YNode;

static void ynode_free(gpointer data)
{
    YNode *n = data;
    if (!n)
        return;
    g_free(n->set_path);
    g_free(n->text);
    if (n->items)
        g_ptr_array_free(n->items, TRUE);
    g_free(n);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(YNode, ynode_free)

static YNode *ynode_new(YNodeType type, uint32_t line, const char *set_path)
{
    YNode *n = g_new0(YNode, 1);
    n->type = type;
    n->line = line;
    n->set_path = g_strdup(set_path);
    if (type != YN_SCALAR)
        n->items = g_ptr_array_new_with_free_func(ynode_free);
    return n;
}

static uint32_t map_len(const YNode *m)
{
    return m->items->len / 2;
}
static YNode *map_key(const YNode *m, uint32_t i)
{
    return g_ptr_array_index(m->items, 2 * i);
}
static YNode *map_value(const YNode *m, uint32_t i)
{
    return g_ptr_array_index(m->items, 2 * i + 1);
}

/* Index of `key` in mapping `m`, or -1. Keys are unique (checked when the tree is built). */
static int map_find(const YNode *m, const char *key)
{
    for (uint32_t i = 0; i < map_len(m); i++)
        if (strcmp(map_key(m, i)->text, key) == 0)
            return (int)i;
    return -1;
}

static YNode *map_get(const YNode *m, const char *key)
{
    int i = map_find(m, key);
    return i < 0 ? NULL : map_value(m, (uint32_t)i);
}

static bool ynode_is_null(const YNode *n)
{
    if (n->type != YN_SCALAR || n->quoted)
        return false;
    const char *t = n->text;
    return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
           strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

/* ---- loader state and error reporting ---- */

typedef struct {
    const char *file; /* display name for messages */
    GError **error;
    SchedProgram *prog; /* being built; NULL until `ranks` is known */
    uint32_t n_ranks;
    uint32_t *stamp; /* per rank, for duplicate detection; compared with stamp_gen */
    uint32_t stamp_gen;
} Loader;

/* Location prefix of a node: "FILE:LINE" or "FILE: --set PATH". Caller frees. */
static char *loc_of(const Loader *ld, const YNode *at)
{
    if (at && at->set_path)
        return g_strdup_printf("%s: --set %s", ld->file, at->set_path);
    return g_strdup_printf("%s:%u", ld->file, at && at->line ? at->line : 1u);
}

/* Sets the one error of this load: "LOC: key 'KEY': MESSAGE" (no key part if `key` is NULL).
 * Always returns false so callers can `return fail(...)`. */
G_GNUC_PRINTF(5, 6)
static bool fail_code(Loader *ld, int code, const YNode *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *loc = loc_of(ld, at);
    if (key)
        g_set_error(ld->error, SCENARIO_ERROR, code, "%s: key '%s': %s", loc, key, msg);
    else
        g_set_error(ld->error, SCENARIO_ERROR, code, "%s: %s", loc, msg);
    return false;
}
#define fail(ld, at, key, ...) fail_code((ld), SCENARIO_ERROR_INVALID, (at), (key), __VA_ARGS__)

/* A short description of a node for "got ..." phrases. Caller frees. */
static char *describe(const YNode *n)
{
    if (n->type == YN_MAP)
        return g_strdup("a mapping");
    if (n->type == YN_SEQ)
        return g_strdup("a list");
    if (ynode_is_null(n))
        return g_strdup("nothing (null)");
    size_t len = strlen(n->text);
    g_autofree char *shown = g_strndup(n->text, len > 40 ? 40 : len);
    for (char *c = shown; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    return g_strdup_printf("%s'%s%s'", n->quoted ? "the quoted string " : "", shown,
                           len > 40 ? "..." : "");
}

/* ---- suggestions ---- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (g_ascii_tolower(a[i - 1]) != g_ascii_tolower(b[j - 1]));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = MIN(sub, MIN(del, ins));
        }
        memcpy(prev, cur, sizeof(size_t) * (lb + 1));
    }
    return prev[lb];
}

/* The closest of `candidates` (NULL-terminated) to `word` if it is close enough, else NULL. */
static const char *closest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; candidates[i]; i++) {
        size_t d = edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    size_t len = strlen(word);
    if (best && best_d <= SUGGEST_MAX_DISTANCE && best_d < len && best_d < strlen(best))
        return best;
    return NULL;
}

/* "; did you mean 'X'? (valid: a, b, c)" or "; valid: a, b, c". Caller frees. */
static char *suggestion(const char *word, const char *const *valid)
{
    g_autofree char *list = g_strjoinv(", ", (char **)valid);
    const char *best = closest(word, valid);
    if (best)
        return g_strdup_printf("did you mean '%s'? (valid: %s)", best, list);
    return g_strdup_printf("valid: %s", list);
}

/* ---- scalar conversion ---- */

static const char *type_word(const YNode *n)
{
    return n->type == YN_MAP ? "a mapping" : "a list";
}

/* Checks the text of a plain scalar looks like a YAML number: sign, digits with optional '_'
 * separators, optional fraction and exponent. Writes it without '_' to buf. */
static bool number_syntax(const char *t, char *buf, size_t bufsz, bool *is_integer)
{
    size_t o = 0;
    const char *p = t;
    bool digits = false;
    *is_integer = true;
    if (*p == '+' || *p == '-')
        buf[o++] = *p++;
    for (; g_ascii_isdigit(*p) || (*p == '_' && digits); p++) {
        if (*p != '_') {
            if (o + 1 >= bufsz)
                return false;
            buf[o++] = *p;
            digits = true;
        }
    }
    if (*p == '.') {
        *is_integer = false;
        if (o + 1 >= bufsz)
            return false;
        buf[o++] = *p++;
        for (; g_ascii_isdigit(*p) || *p == '_'; p++) {
            if (*p != '_') {
                if (o + 1 >= bufsz)
                    return false;
                buf[o++] = *p;
                digits = true;
            }
        }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        *is_integer = false;
        if (o + 1 >= bufsz)
            return false;
        buf[o++] = *p++;
        if (*p == '+' || *p == '-')
            buf[o++] = *p++;
        if (!g_ascii_isdigit(*p))
            return false;
        for (; g_ascii_isdigit(*p); p++) {
            if (o + 1 >= bufsz)
                return false;
            buf[o++] = *p;
        }
    }
    buf[o] = '\0';
    return *p == '\0';
}

static bool is_yaml_inf(const char *t)
{
    if (*t == '+' || *t == '-')
        t++;
    return strcmp(t, ".inf") == 0 || strcmp(t, ".Inf") == 0 || strcmp(t, ".INF") == 0;
}

/* Parses a number node into a double. `valid` is the range text shown on errors. */
static bool scalar_number(Loader *ld, const YNode *n, const char *key, const char *valid,
                          bool *is_integer, double *out, int64_t *out_int, bool *int_exact)
{
    if (n->type != YN_SCALAR) {
        return fail(ld, n, key, "expected a number, got %s; valid: %s", type_word(n), valid);
    }
    g_autofree char *got = describe(n);
    if (ynode_is_null(n))
        return fail(ld, n, key, "expected a number, got nothing; valid: %s", valid);
    if (n->quoted)
        return fail(ld, n, key, "expected a number, got %s (write it without quotes); valid: %s",
                    got, valid);
    if (is_yaml_inf(n->text))
        return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
    char buf[128];
    if (!number_syntax(n->text, buf, sizeof buf, is_integer)) {
        /* A very long run of digits is a number too big for any key here. */
        const char *p = n->text + (n->text[0] == '-' || n->text[0] == '+');
        if (strlen(p) >= sizeof buf - 2 && strspn(p, "0123456789_") == strlen(p))
            return fail(ld, n, key, "%s is out of range; valid: %s", got, valid);
        return fail(ld, n, key, "expected a number, got %s; valid: %s", got, valid);
    }
    *int_exact = false;
    if (*is_integer) {
        errno = 0;
        char *end = NULL;
        gint64 v = g_ascii_strtoll(buf, &end, 10);
        if (errno == ERANGE)
            return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
        *out_int = v;
        *int_exact = true;
        *out = (double)v;
        return true;
    }
    errno = 0;
    double d = g_ascii_strtod(buf, NULL);
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
        return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
    if (!isfinite(d))
        return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = d;
    return true;
}

/* An integer in [min, max]. Integral numbers in exponent form (1e6) are accepted. */
static bool get_int(Loader *ld, const YNode *n, const char *key, int64_t min, int64_t max,
                    int64_t *out)
{
    g_autofree char *valid = g_strdup_printf("%" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, min, max);
    bool is_int = false, exact = false;
    double d = 0;
    int64_t v = 0;
    if (!scalar_number(ld, n, key, valid, &is_int, &d, &v, &exact))
        return false;
    if (!exact) {
        if (d != floor(d))
            return fail(ld, n, key, "expected an integer, got %s; valid: %s", n->text, valid);
        if (d < (double)min || d > (double)max)
            return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
        v = (int64_t)d;
    }
    if (v < min || v > max)
        return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = v;
    return true;
}

/* A number in [min, max] (or (min, max] when min_exclusive). `unit` is shown after the range. */
static bool get_number(Loader *ld, const YNode *n, const char *key, double min, bool min_exclusive,
                       double max, const char *unit, double *out)
{
    g_autofree char *valid =
        min_exclusive ? g_strdup_printf("a number > %g and <= %g%s%s", min, max, unit ? " " : "",
                                        unit ? unit : "")
                      : g_strdup_printf("%g..%g%s%s", min, max, unit ? " " : "", unit ? unit : "");
    bool is_int = false, exact = false;
    double d = 0;
    int64_t v = 0;
    if (!scalar_number(ld, n, key, valid, &is_int, &d, &v, &exact))
        return false;
    if (d < min || (min_exclusive && d == min) || d > max)
        return fail(ld, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = d;
    return true;
}

/* A non-empty string scalar (plain or quoted). Returns a pointer into the tree. */
static bool get_string(Loader *ld, const YNode *n, const char *key, const char *valid,
                       const char **out)
{
    if (n->type != YN_SCALAR)
        return fail(ld, n, key, "expected a string, got %s; valid: %s", type_word(n), valid);
    if (ynode_is_null(n) || n->text[0] == '\0')
        return fail(ld, n, key, "expected a string, got nothing; valid: %s", valid);
    *out = n->text;
    return true;
}

/* One of `names` (NULL-terminated); returns its index. */
static bool get_enum(Loader *ld, const YNode *n, const char *key, const char *const *names,
                     int *out)
{
    g_autofree char *list = g_strjoinv(", ", (char **)names);
    const char *s = NULL;
    if (!get_string(ld, n, key, list, &s))
        return false;
    for (int i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    g_autofree char *hint = suggestion(s, names);
    return fail(ld, n, key, "unknown value '%s'; %s", s, hint);
}

static bool expect_map(Loader *ld, const YNode *n, const char *key, const char *valid)
{
    if (n->type == YN_MAP)
        return true;
    g_autofree char *got = describe(n);
    return fail(ld, n, key, "expected a mapping, got %s; valid: %s", got, valid);
}

static bool expect_seq(Loader *ld, const YNode *n, const char *key, const char *valid)
{
    if (n->type == YN_SEQ)
        return true;
    g_autofree char *got = describe(n);
    return fail(ld, n, key, "expected a list, got %s; valid: %s", got, valid);
}

/* Every key of `m` must be in `valid`. A key in `elsewhere` (valid in a sibling context, e.g.
 * for another op kind) gets "not valid for CONTEXT" instead of "unknown key". */
static bool check_keys(Loader *ld, const YNode *m, const char *const *valid,
                       const char *const *elsewhere, const char *context)
{
    for (uint32_t i = 0; i < map_len(m); i++) {
        const YNode *k = map_key(m, i);
        bool ok = false;
        for (size_t j = 0; valid[j] && !ok; j++)
            ok = strcmp(k->text, valid[j]) == 0;
        if (ok)
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        for (size_t j = 0; elsewhere && elsewhere[j]; j++)
            if (strcmp(k->text, elsewhere[j]) == 0)
                return fail(ld, k, k->text, "not valid for %s; valid: %s", context, list);
        g_autofree char *hint = suggestion(k->text, valid);
        return fail(ld, k, k->text, "unknown key in %s; %s", context, hint);
    }
    return true;
}

/* ---- libyaml document -> YNode tree ---- */

static uint32_t mark_line(yaml_mark_t m)
{
    return (uint32_t)MIN(m.line + 1, (size_t)UINT32_MAX);
}

/* Line of byte `offset` in `text` (1-based). */
static uint32_t line_of_offset(const char *text, size_t len, size_t offset)
{
    uint32_t line = 1;
    for (size_t i = 0; i < offset && i < len; i++)
        if (text[i] == '\n')
            line++;
    return line;
}

static bool syntax_error(Loader *ld, yaml_parser_t *parser, const char *text, size_t len)
{
    uint32_t line;
    if (parser->error == YAML_MEMORY_ERROR) {
        g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s: malformed YAML: out of memory while parsing", ld->file);
        return false;
    }
    const char *problem = parser->problem ? parser->problem : "unknown error";
    if (parser->error == YAML_READER_ERROR) {
        line = line_of_offset(text, len, parser->problem_offset);
        if (parser->problem_value != -1)
            g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                        "%s:%u: malformed YAML: %s (byte #%X at offset %zu); the file must be "
                        "UTF-8 text",
                        ld->file, line, problem, (unsigned)parser->problem_value,
                        parser->problem_offset);
        else
            g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                        "%s:%u: malformed YAML: %s (offset %zu); the file must be UTF-8 text",
                        ld->file, line, problem, parser->problem_offset);
        return false;
    }
    line = mark_line(parser->problem_mark);
    if (parser->context)
        g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s:%u: malformed YAML: %s (%s at line %u, column %zu)", ld->file, line,
                    problem, parser->context, mark_line(parser->context_mark),
                    parser->context_mark.column + 1);
    else
        g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s:%u: malformed YAML: %s (column %zu)", ld->file, line, problem,
                    parser->problem_mark.column + 1);
    return false;
}

/* Rejects aliases: libyaml resolves `*name` to the anchored node itself, so a node referenced
 * more than once (as root, item, key or value) was reached through an alias. Iterative, so
 * recursive aliases cannot loop. */
static bool check_no_aliases(Loader *ld, yaml_document_t *doc)
{
    size_t n = (size_t)(doc->nodes.top - doc->nodes.start);
    g_autofree uint8_t *refs = g_new0(uint8_t, n + 1);
    refs[1] = 1; /* the root */
    for (size_t i = 1; i <= n; i++) {
        yaml_node_t *node = yaml_document_get_node(doc, (int)i);
        if (!node)
            continue;
        if (node->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = node->data.sequence.items.start;
                 it < node->data.sequence.items.top; it++) {
                if (*it < 1 || (size_t)*it > n || refs[*it]++) {
                    yaml_node_t *target = yaml_document_get_node(doc, *it);
                    YNode at = {.line = mark_line(node->start_mark)};
                    return fail(ld, &at, NULL,
                                "YAML alias in a list (anchor at line %u); aliases (*name) are "
                                "not supported, write the value out",
                                target ? mark_line(target->start_mark) : 0);
                }
            }
        } else if (node->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
                 pr < node->data.mapping.pairs.top; pr++) {
                int ids[2] = {pr->key, pr->value};
                for (int k = 0; k < 2; k++) {
                    if (ids[k] >= 1 && (size_t)ids[k] <= n && !refs[ids[k]]++)
                        continue;
                    yaml_node_t *key = yaml_document_get_node(doc, pr->key);
                    yaml_node_t *target = yaml_document_get_node(doc, ids[k]);
                    YNode at = {.line = mark_line(key ? key->start_mark : node->start_mark)};
                    const char *kname = key && key->type == YAML_SCALAR_NODE && k == 1
                                            ? (const char *)key->data.scalar.value
                                            : NULL;
                    return fail(ld, &at, kname,
                                "YAML alias (anchor at line %u); aliases (*name) and merge keys "
                                "are not supported, write the value out",
                                target ? mark_line(target->start_mark) : 0);
                }
            }
        }
    }
    return true;
}

static YNode *convert(Loader *ld, yaml_document_t *doc, yaml_node_t *node, int depth)
{
    uint32_t line = mark_line(node->start_mark);
    if (depth > MAX_TREE_DEPTH) {
        YNode at = {.line = line};
        fail(ld, &at, NULL, "YAML nested deeper than %d levels; scenario files need far less",
             MAX_TREE_DEPTH);
        return NULL;
    }
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        YNode *n = ynode_new(YN_SCALAR, line, NULL);
        n->text = g_strndup((const char *)node->data.scalar.value, node->data.scalar.length);
        n->quoted = node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (strlen(n->text) != node->data.scalar.length) {
            YNode at = {.line = line};
            ynode_free(n);
            fail(ld, &at, NULL, "a string contains a NUL character; remove it");
            return NULL;
        }
        return n;
    }
    case YAML_SEQUENCE_NODE: {
        g_autoptr(YNode) n = ynode_new(YN_SEQ, line, NULL);
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             it < node->data.sequence.items.top; it++) {
            YNode *child = convert(ld, doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!child)
                return NULL;
            g_ptr_array_add(n->items, child);
        }
        return g_steal_pointer(&n);
    }
    case YAML_MAPPING_NODE: {
        g_autoptr(YNode) n = ynode_new(YN_MAP, line, NULL);
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal); /* key -> idx+1 */
        for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
             pr < node->data.mapping.pairs.top; pr++) {
            yaml_node_t *kn = yaml_document_get_node(doc, pr->key);
            if (kn->type != YAML_SCALAR_NODE) {
                YNode at = {.line = mark_line(kn->start_mark)};
                fail(ld, &at, NULL, "a mapping key is a %s; keys must be plain names or numbers",
                     kn->type == YAML_MAPPING_NODE ? "mapping" : "list");
                return NULL;
            }
            YNode *key = convert(ld, doc, kn, depth + 1);
            if (!key)
                return NULL;
            guint prev = GPOINTER_TO_UINT(g_hash_table_lookup(seen, key->text));
            if (prev) {
                fail(ld, key, key->text,
                     "duplicate key (first at line %u); each key may appear "
                     "once in a mapping",
                     map_key(n, prev - 1)->line);
                ynode_free(key);
                return NULL;
            }
            g_hash_table_insert(seen, key->text, GUINT_TO_POINTER(map_len(n) + 1));
            g_ptr_array_add(n->items, key);
            YNode *value = convert(ld, doc, yaml_document_get_node(doc, pr->value), depth + 1);
            if (!value) {
                g_ptr_array_add(n->items, NULL); /* keep pairs aligned for the free */
                return NULL;
            }
            g_ptr_array_add(n->items, value);
        }
        return g_steal_pointer(&n);
    }
    default: {
        YNode at = {.line = line};
        fail(ld, &at, NULL, "empty YAML node; expected a value");
        return NULL;
    }
    }
}

static const char *const top_keys[] = {
    "name",
    "kind",
    "description",
    "ranks",
    "groups",
    "programs",
    "hardware",
    "on_mismatch",
    "watchdog",
    "faults",
    "straggler_threshold_s",
    NULL,
};

/* Parses `text` into a tree. Returns NULL with the error set. */
static YNode *parse_tree(Loader *ld, const char *text, size_t len)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: cannot initialize the YAML parser (out of memory)", ld->file);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(ld, &parser, text, len);
        yaml_parser_delete(&parser);
        return NULL;
    }
    YNode *tree = NULL;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    bool blank = root && root->type == YAML_SCALAR_NODE &&
                 root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                 root->data.scalar.length == 0; /* "---" and nothing else */
    if (!root || blank) {
        g_autofree char *keys = g_strjoinv(", ", (char **)top_keys);
        g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "%s:1: the file is empty; expected a mapping with keys %s", ld->file, keys);
    } else if (check_no_aliases(ld, &doc)) {
        tree = convert(ld, &doc, root, 0);
    }
    yaml_document_delete(&doc);
    if (tree) {
        /* One document per file: anything after a second `---` is a mistake. */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            syntax_error(ld, &parser, text, len);
            g_clear_pointer(&tree, ynode_free);
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&extra);
            if (r2) {
                g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                            "%s:%u: a second YAML document; a scenario file holds exactly one "
                            "(remove the extra '---')",
                            ld->file, mark_line(extra.start_mark));
                g_clear_pointer(&tree, ynode_free);
            }
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    if (tree && tree->type != YN_MAP) {
        g_autofree char *got = describe(tree);
        g_autofree char *keys = g_strjoinv(", ", (char **)top_keys);
        fail(ld, tree, NULL, "the top level is %s; expected a mapping with keys %s", got, keys);
        g_clear_pointer(&tree, ynode_free);
    }
    return tree;
}

/* ---- --set overrides ---- */

static bool apply_override(Loader *ld, YNode *root, const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (!eq)
        return g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                           "--set '%s': no '=' sign; expected --set dotted.key=value (e.g. "
                           "--set watchdog.collective_timeout_s=300)",
                           ov),
               false;
    g_autofree char *path = g_strndup(ov, (gsize)(eq - ov));
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    if (!parts[0])
        return g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                           "--set '%s': no key before '='; expected --set dotted.key=value", ov),
               false;
    for (size_t i = 0; parts[i]; i++) {
        g_strstrip(parts[i]);
        if (parts[i][0] == '\0')
            return g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                               "--set '%s': empty key in '%s'; expected --set dotted.key=value", ov,
                               path),
                   false;
    }
    YNode *cur = root;
    GString *prefix = g_string_new(NULL);
    for (size_t i = 0; parts[i]; i++) {
        if (i)
            g_string_append_c(prefix, '.');
        g_string_append(prefix, parts[i]);
        int idx = map_find(cur, parts[i]);
        bool last = parts[i + 1] == NULL;
        if (last) {
            YNode *v = ynode_new(YN_SCALAR, 0, prefix->str);
            v->text = g_strdup(eq + 1);
            if (idx >= 0) {
                YNode *old = map_value(cur, (uint32_t)idx);
                g_ptr_array_index(cur->items, 2 * (uint32_t)idx + 1) = v;
                ynode_free(old);
            } else {
                YNode *k = ynode_new(YN_SCALAR, 0, prefix->str);
                k->text = g_strdup(parts[i]);
                g_ptr_array_add(cur->items, k);
                g_ptr_array_add(cur->items, v);
            }
        } else if (idx >= 0) {
            YNode *next = map_value(cur, (uint32_t)idx);
            if (next->type != YN_MAP) {
                g_autofree char *got = describe(next);
                g_set_error(ld->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                            "--set '%s': '%s' is %s, not a mapping; --set can only reach keys "
                            "inside mappings",
                            ov, prefix->str, got);
                g_string_free(prefix, TRUE);
                return false;
            }
            cur = next;
        } else {
            YNode *k = ynode_new(YN_SCALAR, 0, prefix->str);
            k->text = g_strdup(parts[i]);
            YNode *m = ynode_new(YN_MAP, 0, prefix->str);
            g_ptr_array_add(cur->items, k);
            g_ptr_array_add(cur->items, m);
            cur = m;
        }
    }
    g_string_free(prefix, TRUE);
    return true;
}

/* ---- rank sets ---- */

static const char rank_set_forms[] = "a rank set such as 3, 0-7, 0,2,4, 0-3,8-11 or \"*\"";

/* Parses "3", "0-7", "0,2,4", "0-3,8-11" into `out` (int32, in the order written). "*" sets
 * *star and leaves `out` empty when allow_star; otherwise it is an error. A rank written twice
 * is an error. */
static bool parse_rank_set(Loader *ld, const YNode *at, const char *key, const char *text,
                           bool allow_star, bool *star, GArray *out)
{
    *star = false;
    g_autofree char *s = g_strstrip(g_strdup(text));
    if (strcmp(s, "*") == 0) {
        if (!allow_star)
            return fail(ld, at, key, "\"*\" is not allowed here; valid: %s", rank_set_forms);
        *star = true;
        return true;
    }
    uint32_t gen = ++ld->stamp_gen;
    const char *p = s;
    for (;;) {
        int64_t lo = 0, hi = 0;
        for (int k = 0; k < 2; k++) {
            while (*p == ' ')
                p++;
            if (!g_ascii_isdigit(*p))
                return fail(ld, at, key, "'%s' is not a rank set; valid: %s", text, rank_set_forms);
            const char *digits = p;
            int64_t v = 0;
            for (; g_ascii_isdigit(*p); p++)
                if (v <= (int64_t)MAX_RANKS * 10)
                    v = v * 10 + (*p - '0');
            if (v >= ld->n_ranks) {
                g_autofree char *shown = g_strndup(digits, MIN((gsize)(p - digits), 40));
                return fail(ld, at, key, "rank %s is out of range; valid: 0..%u (ranks: %u)", shown,
                            ld->n_ranks - 1, ld->n_ranks);
            }
            while (*p == ' ')
                p++;
            if (k == 0) {
                lo = hi = v;
                if (*p != '-')
                    break;
                p++;
            } else {
                hi = v;
            }
        }
        if (hi < lo)
            return fail(ld, at, key,
                        "range %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT
                        " runs backwards; write it as %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT,
                        lo, hi, hi, lo);
        for (int64_t r = lo; r <= hi; r++) {
            if (ld->stamp[r] == gen)
                return fail(ld, at, key,
                            "rank %" G_GINT64_FORMAT " appears twice in '%s'; "
                            "list each rank once",
                            r, text);
            ld->stamp[r] = gen;
            int32_t v32 = (int32_t)r;
            g_array_append_val(out, v32);
        }
        if (*p == '\0')
            return true;
        if (*p != ',')
            return fail(ld, at, key, "'%s' is not a rank set; valid: %s", text, rank_set_forms);
        p++;
    }
}

/* ---- groups ---- */

static bool load_groups(Loader *ld, const YNode *groups)
{
    const char *valid = "a mapping of group name -> list of ranks or rank set, e.g. "
                        "{tp0: [0, 1], dp: \"0-7\"}";
    if (!expect_map(ld, groups, "groups", valid))
        return false;
    uint64_t total = 0;
    for (uint32_t i = 0; i < map_len(groups); i++) {
        const YNode *k = map_key(groups, i), *v = map_value(groups, i);
        const char *name = k->text;
        if (name[0] == '\0' || ynode_is_null(k))
            return fail(ld, k, name, "empty group name; give the group a name");
        g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int32_t));
        if (v->type == YN_SEQ) {
            uint32_t gen = ++ld->stamp_gen;
            for (guint j = 0; j < v->items->len; j++) {
                const YNode *item = g_ptr_array_index(v->items, j);
                int64_t r = 0;
                if (!get_int(ld, item, name, 0, ld->n_ranks - 1, &r))
                    return false;
                if (ld->stamp[r] == gen)
                    return fail(ld, item, name,
                                "duplicate member %" G_GINT64_FORMAT
                                " in group '%s'; list each rank once",
                                r, name);
                ld->stamp[r] = gen;
                int32_t r32 = (int32_t)r;
                g_array_append_val(members, r32);
            }
        } else if (v->type == YN_SCALAR && !ynode_is_null(v)) {
            bool star = false;
            if (!parse_rank_set(ld, v, name, v->text, true, &star, members))
                return false;
            if (star)
                for (int32_t r = 0; r < (int32_t)ld->n_ranks; r++)
                    g_array_append_val(members, r);
        } else {
            g_autofree char *got = describe(v);
            return fail(ld, v, name,
                        "expected a list of ranks or a rank-set string, got %s; "
                        "valid: [0, 1, 2] or \"0-7\"",
                        got);
        }
        if (members->len == 0)
            return fail(ld, v, name, "group '%s' is empty; a group needs at least one rank", name);
        total += members->len;
        if (total > MAX_GROUP_MEMBERS)
            return fail(ld, v, name,
                        "groups hold more than %" G_GUINT64_FORMAT
                        " members in total; that is the limit",
                        MAX_GROUP_MEMBERS);
        sched_program_add_group(ld->prog, name, (const int32_t *)(void *)members->data,
                                members->len);
    }
    return true;
}

/* ---- ops ---- */

/* Ranks a program key applies to, and which groups were already checked for them. */
typedef struct {
    const char *key; /* the programs key, for messages */
    const int32_t *ranks;
    uint32_t n;
    uint8_t *group_checked; /* per group id */
} KeyCtx;

static const char *const dtype_names_list[] = {"bf16", "fp16",  "fp32", "fp8",
                                               "int8", "int32", NULL};
static const char *const op_names_list[] = {
    "compute", "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast",
    "barrier", "send",       "recv",           "repeat",     NULL,
};

static const char *const keys_compute[] = {"op", "name", "us", "tokens", "layer", NULL};
static const char *const keys_coll[] = {"op",   "group",  "count", "dtype",
                                        "name", "tokens", "layer", NULL};
static const char *const keys_bcast[] = {"op",   "group",  "count", "dtype", "root",
                                         "name", "tokens", "layer", NULL};
static const char *const keys_p2p[] = {"op",   "peer",   "count", "dtype",
                                       "name", "tokens", "layer", NULL};
static const char *const keys_repeat[] = {"op", "times", "ops", "layer_start", NULL};
static const char *const keys_any_op[] = {"op",    "name",  "us",          "tokens", "layer",
                                          "group", "count", "dtype",       "root",   "peer",
                                          "times", "ops",   "layer_start", NULL};

static const char *const *op_keys(SchedOpKind k)
{
    if (k == SCHED_OP_COMPUTE)
        return keys_compute;
    if (k == SCHED_OP_BROADCAST)
        return keys_bcast;
    if (sched_op_is_collective(k))
        return keys_coll;
    if (sched_op_is_p2p(k))
        return keys_p2p;
    return keys_repeat;
}

/* Names of the groups containing `rank`, comma-separated. Caller frees. */
static char *groups_of_rank(const SchedProgram *p, int32_t rank)
{
    GString *s = g_string_new(NULL);
    for (guint g = 0; g < p->groups->len; g++) {
        const SchedGroup *grp = sched_program_group(p, (int32_t)g);
        if (sched_group_index_of(grp, rank) >= 0) {
            if (s->len)
                g_string_append(s, ", ");
            g_string_append(s, grp->name);
        }
    }
    if (!s->len)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

static char *group_members_text(const SchedGroup *g)
{
    return sched_format_ranks(g->sorted, g->n);
}

static bool op_group(Loader *ld, const YNode *n, KeyCtx *kc, int32_t *out)
{
    const char *name = NULL;
    if (!get_string(ld, n, "group", "the name of a group under groups:", &name))
        return false;
    SchedProgram *p = ld->prog;
    int32_t g = sched_program_find_group(p, name);
    if (g < 0) {
        if (p->groups->len == 0)
            return fail(ld, n, "group",
                        "no group named '%s'; no groups are defined, add "
                        "groups: {%s: [RANKS]}",
                        name, name);
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        for (guint i = 0; i < p->groups->len && i < 64; i++)
            g_ptr_array_add(names, sched_program_group(p, (int32_t)i)->name);
        g_ptr_array_add(names, NULL);
        g_autofree char *hint = suggestion(name, (const char *const *)names->pdata);
        return fail(ld, n, "group", "no group named '%s'; %s%s", name, hint,
                    p->groups->len > 64 ? " (first 64 shown)" : "");
    }
    if (!kc->group_checked[g]) {
        const SchedGroup *grp = sched_program_group(p, g);
        for (uint32_t i = 0; i < kc->n; i++) {
            if (sched_group_index_of(grp, kc->ranks[i]) < 0) {
                g_autofree char *members = group_members_text(grp);
                g_autofree char *mine = groups_of_rank(p, kc->ranks[i]);
                return fail(ld, n, "group",
                            "rank %d (programs key '%s') is not a member of "
                            "group '%s' (members %s); valid groups for rank %d: %s",
                            kc->ranks[i], kc->key, name, members, kc->ranks[i], mine);
            }
        }
        kc->group_checked[g] = 1;
    }
    *out = g;
    return true;
}

static bool op_dtype(Loader *ld, const YNode *m, SchedDtype *out)
{
    *out = SCHED_DTYPE_BF16;
    const YNode *n = map_get(m, "dtype");
    if (!n)
        return true;
    int i = 0;
    if (!get_enum(ld, n, "dtype", dtype_names_list, &i))
        return false;
    if (!sched_dtype_parse(dtype_names_list[i], out))
        g_assert_not_reached(); /* the two name tables disagree */
    return true;
}

static bool op_u64(Loader *ld, const YNode *m, const char *key, bool required, uint64_t max,
                   const char *what, uint64_t *out)
{
    const YNode *n = map_get(m, key);
    if (!n) {
        if (required)
            return fail(ld, m, key, "missing; %s needs %s: a number in 0..%" G_GUINT64_FORMAT, what,
                        key, max);
        return true;
    }
    int64_t v = 0;
    if (!get_int(ld, n, key, 0, (int64_t)max, &v))
        return false;
    *out = (uint64_t)v;
    return true;
}

static bool op_name_of(Loader *ld, const YNode *m, const char *dflt, uint32_t *out)
{
    const char *name = dflt;
    const YNode *n = map_get(m, "name");
    if (n && !get_string(ld, n, "name", "a name for the op, e.g. attn_fwd", &name))
        return false;
    if (!name)
        return fail(ld, m, "name", "missing; a compute op needs name: NAME");
    *out = sched_program_name(ld->prog, name);
    return true;
}

static bool build_ops(Loader *ld, const YNode *list, const char *list_key, KeyCtx *kc, int depth,
                      GArray *out);

static bool build_op(Loader *ld, const YNode *m, KeyCtx *kc, int depth, GArray *out)
{
    const char *op_valid = "one of compute, all_reduce, reduce_scatter, all_gather, all_to_all, "
                           "broadcast, barrier, send, recv, repeat";
    if (m->type != YN_MAP) {
        g_autofree char *got = describe(m);
        return fail(ld, m, kc->key,
                    "an op must be a mapping such as {op: all_gather, group: "
                    "tp, count: 1024}, got %s",
                    got);
    }
    const YNode *opn = map_get(m, "op");
    if (!opn)
        return fail(ld, m, "op", "missing; every op needs op: %s", op_valid);
    int ki = 0;
    if (!get_enum(ld, opn, "op", op_names_list, &ki))
        return false;
    SchedOpKind kind = SCHED_OP_COMPUTE;
    if (!sched_op_kind_parse(op_names_list[ki], &kind))
        g_assert_not_reached(); /* the two name tables disagree */
    g_autofree char *context = g_strdup_printf("op %s", op_names_list[ki]);
    if (!check_keys(ld, m, op_keys(kind), keys_any_op, context))
        return false;

    uint64_t tokens = 0, layer = UINT64_MAX;
    if (kind != SCHED_OP_REPEAT) {
        if (!op_u64(ld, m, "tokens", false, MAX_COUNT, context, &tokens) ||
            !op_u64(ld, m, "layer", false, (uint64_t)MAX_LAYER, context, &layer))
            return false;
    }

    SchedOp op;
    if (kind == SCHED_OP_COMPUTE) {
        uint32_t name = 0;
        if (!op_name_of(ld, m, NULL, &name))
            return false;
        const YNode *us = map_get(m, "us");
        if (!us)
            return fail(ld, m, "us",
                        "missing; a compute op needs us: DURATION in "
                        "microseconds (0..1e12)");
        double d = 0;
        if (!get_number(ld, us, "us", 0, false, MAX_US, "microseconds", &d))
            return false;
        op = sched_op_compute(name, (int64_t)llround(d * 1000.0), tokens);
    } else if (sched_op_is_collective(kind)) {
        const YNode *gn = map_get(m, "group");
        if (!gn)
            return fail(ld, m, "group", "missing; %s needs group: NAME (a key of groups:)",
                        context);
        int32_t g = -1;
        uint64_t count = 0;
        SchedDtype dt = SCHED_DTYPE_BF16;
        uint32_t name = 0;
        if (!op_group(ld, gn, kc, &g) ||
            !op_u64(ld, m, "count", kind != SCHED_OP_BARRIER, MAX_COUNT, context, &count) ||
            !op_dtype(ld, m, &dt) || !op_name_of(ld, m, op_names_list[ki], &name))
            return false;
        op = sched_op_collective(kind, name, g, count, dt);
        op.tokens = tokens;
        if (kind == SCHED_OP_BROADCAST) {
            const YNode *rn = map_get(m, "root");
            if (!rn)
                return fail(ld, m, "root",
                            "missing; broadcast needs root: RANK (a member of "
                            "its group)");
            int64_t root = 0;
            if (!get_int(ld, rn, "root", 0, ld->n_ranks - 1, &root))
                return false;
            const SchedGroup *grp = sched_program_group(ld->prog, g);
            if (sched_group_index_of(grp, (int32_t)root) < 0) {
                g_autofree char *members = group_members_text(grp);
                return fail(ld, rn, "root",
                            "root %" G_GINT64_FORMAT " is not a member of group "
                            "'%s'; valid: one of %s",
                            root, grp->name, members);
            }
            op.root = (int32_t)root;
        }
    } else if (sched_op_is_p2p(kind)) {
        const YNode *pn = map_get(m, "peer");
        if (!pn)
            return fail(ld, m, "peer", "missing; %s needs peer: RANK (another rank)", context);
        int64_t peer = 0;
        if (!get_int(ld, pn, "peer", 0, ld->n_ranks - 1, &peer))
            return false;
        for (uint32_t i = 0; i < kc->n; i++)
            if (kc->ranks[i] == peer)
                return fail(ld, pn, "peer",
                            "rank %" G_GINT64_FORMAT " (programs key '%s') "
                            "cannot be its own peer; valid: another rank in 0..%u",
                            peer, kc->key, ld->n_ranks - 1);
        uint64_t count = 0;
        SchedDtype dt = SCHED_DTYPE_BF16;
        uint32_t name = 0;
        if (!op_u64(ld, m, "count", true, MAX_COUNT, context, &count) || !op_dtype(ld, m, &dt) ||
            !op_name_of(ld, m, op_names_list[ki], &name))
            return false;
        op = sched_op_p2p(kind, name, (int32_t)peer, count, dt);
        op.tokens = tokens;
    } else {
        /* repeat: header, then the body; body_len is known once the body is built. */
        const YNode *tn = map_get(m, "times");
        if (!tn)
            return fail(ld, m, "times", "missing; repeat needs times: N (0..%d)", MAX_TIMES);
        int64_t times = 0;
        if (!get_int(ld, tn, "times", 0, MAX_TIMES, &times))
            return false;
        int64_t layer_start = depth == 0 ? 0 : -1;
        const YNode *ls = map_get(m, "layer_start");
        if (ls && !get_int(ld, ls, "layer_start", 0, MAX_LAYER, &layer_start))
            return false;
        if (depth + 1 > SCHED_MAX_REPEAT_DEPTH)
            return fail(ld, opn, "op",
                        "repeats nest deeper than %d levels; valid: at most %d "
                        "nested repeats",
                        SCHED_MAX_REPEAT_DEPTH, SCHED_MAX_REPEAT_DEPTH);
        const YNode *body = map_get(m, "ops");
        if (!body)
            return fail(ld, m, "ops", "missing; repeat needs ops: [OPS...] (a non-empty list)");
        if (!expect_seq(ld, body, "ops", "a non-empty list of ops"))
            return false;
        if (body->items->len == 0)
            return fail(ld, body, "ops", "empty list; repeat needs at least one op in ops:");
        guint hdr = out->len;
        op = sched_op_repeat((uint32_t)times, 0, (int32_t)layer_start);
        g_array_append_val(out, op);
        if (!build_ops(ld, body, "ops", kc, depth + 1, out))
            return false;
        if (out->len - hdr - 1 > UINT32_MAX)
            return fail(ld, body, "ops", "repeat body too long");
        g_array_index(out, SchedOp, hdr).body_len = (uint32_t)(out->len - hdr - 1);
        return true;
    }
    if (layer != UINT64_MAX)
        op.layer = (int32_t)layer;
    g_array_append_val(out, op);
    return true;
}

static bool build_ops(Loader *ld, const YNode *list, const char *list_key, KeyCtx *kc, int depth,
                      GArray *out)
{
    if (!expect_seq(ld, list, list_key, "a list of ops, e.g. [{op: compute, name: fwd, us: 100}]"))
        return false;
    for (guint i = 0; i < list->items->len; i++)
        if (!build_op(ld, g_ptr_array_index(list->items, i), kc, depth, out))
            return false;
    return true;
}

/* `pkey` is the `programs` key node, where errors about the whole mapping point. */
static bool load_programs(Loader *ld, const YNode *pkey, const YNode *programs)
{
    if (!expect_map(ld, programs, "programs",
                    "a mapping of rank set -> op list, e.g. {\"0-7\": [...]}"))
        return false;
    SchedProgram *p = ld->prog;
    g_autofree int32_t *owner = g_new(int32_t, ld->n_ranks); /* programs key index per rank */
    for (uint32_t r = 0; r < ld->n_ranks; r++)
        owner[r] = -1;
    g_autofree uint8_t *checked = g_new0(uint8_t, p->groups->len + 1);
    int star = -1;
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    /* First pass: every key's rank set, so "*" can take what the others leave. */
    for (uint32_t i = 0; i < map_len(programs); i++) {
        const YNode *k = map_key(programs, i);
        GArray *set = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_ptr_array_add(sets, set);
        bool is_star = false;
        if (!parse_rank_set(ld, k, k->text, k->text, true, &is_star, set))
            return false;
        if (is_star) {
            if (star >= 0)
                return fail(ld, k, k->text, "a second \"*\" key (first at line %u); use one",
                            map_key(programs, (uint32_t)star)->line);
            star = (int)i;
            continue;
        }
        for (guint j = 0; j < set->len; j++) {
            int32_t r = g_array_index(set, int32_t, j);
            if (owner[r] >= 0)
                return fail(ld, k, k->text,
                            "rank %d already has a program (key '%s' at line "
                            "%u); give each rank exactly one",
                            r, map_key(programs, (uint32_t)owner[r])->text,
                            map_key(programs, (uint32_t)owner[r])->line);
            owner[r] = (int32_t)i;
        }
    }
    if (star >= 0) {
        GArray *set = g_ptr_array_index(sets, (guint)star);
        for (uint32_t r = 0; r < ld->n_ranks; r++)
            if (owner[r] < 0) {
                int32_t r32 = (int32_t)r;
                g_array_append_val(set, r32);
                owner[r] = star;
            }
    } else {
        g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t r = 0; r < ld->n_ranks; r++)
            if (owner[r] < 0) {
                int32_t r32 = (int32_t)r;
                g_array_append_val(missing, r32);
            }
        if (missing->len) {
            g_autofree char *text =
                sched_format_ranks((const int32_t *)(void *)missing->data, missing->len);
            return fail(ld, pkey, "programs",
                        "rank%s %s ha%s no program; add a key for "
                        "%s, or \"*\" for all ranks not listed",
                        missing->len > 1 ? "s" : "", text, missing->len > 1 ? "ve" : "s",
                        missing->len > 1 ? "them" : "it");
        }
    }
    /* Second pass: build each key's list once and give it to its ranks. */
    for (uint32_t i = 0; i < map_len(programs); i++) {
        GArray *set = g_ptr_array_index(sets, i);
        if (set->len == 0)
            continue; /* a "*" with nothing left over */
        memset(checked, 0, p->groups->len + 1);
        KeyCtx kc = {map_key(programs, i)->text, (const int32_t *)(void *)set->data, set->len,
                     checked};
        g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(SchedOp));
        if (!build_ops(ld, map_value(programs, i), kc.key, &kc, 0, ops))
            return false;
        if (ops->len > UINT32_MAX)
            return fail(ld, map_value(programs, i), kc.key, "op list too long");
        uint32_t list = sched_program_set_ops(p, (uint32_t)g_array_index(set, int32_t, 0),
                                              (const SchedOp *)(void *)ops->data, ops->len);
        for (guint j = 1; j < set->len; j++)
            sched_program_share_ops(p, (uint32_t)g_array_index(set, int32_t, j), list);
    }
    return true;
}

/* ---- hardware ---- */

static bool load_hardware(Loader *ld, const YNode *hw, NetModel *net)
{
    static const char *const keys[] = {"preset", "link_bandwidth_gb_s", "base_latency_us",
                                       "step_latency_us", NULL};
    g_autofree char *valid = g_strdup_printf("a preset name (%s) or a mapping {preset, "
                                             "link_bandwidth_gb_s, base_latency_us, "
                                             "step_latency_us}",
                                             net_model_preset_names());
    const YNode *preset = NULL;
    const char *key = "hardware";
    if (hw->type == YN_SCALAR) {
        preset = hw;
    } else if (hw->type == YN_MAP) {
        if (!check_keys(ld, hw, keys, NULL, "hardware"))
            return false;
        preset = map_get(hw, "preset");
        key = "preset";
    } else {
        return fail(ld, hw, "hardware", "expected a string or a mapping, got a list; valid: %s",
                    valid);
    }
    *net = net_model_default();
    if (preset) {
        const char *name = NULL;
        if (!get_string(ld, preset, key, net_model_preset_names(), &name))
            return false;
        if (!net_model_preset(name, net)) {
            g_auto(GStrv) names = g_strsplit(net_model_preset_names(), ", ", -1);
            g_autofree char *hint = suggestion(name, (const char *const *)names);
            return fail(ld, preset, key, "unknown hardware preset '%s'; %s", name, hint);
        }
    }
    if (hw->type != YN_MAP)
        return true;
    bool custom = false;
    const YNode *n;
    double v = 0;
    if ((n = map_get(hw, "link_bandwidth_gb_s"))) {
        if (!get_number(ld, n, "link_bandwidth_gb_s", 0, true, MAX_BW_GB_S, "GB/s", &v))
            return false;
        net->bw_bytes_per_s = v * 1e9;
        custom = true;
    }
    if ((n = map_get(hw, "base_latency_us"))) {
        if (!get_number(ld, n, "base_latency_us", 0, false, MAX_LATENCY_US, "microseconds", &v))
            return false;
        net->base_latency_ns = (int64_t)llround(v * 1000.0);
        custom = true;
    }
    if ((n = map_get(hw, "step_latency_us"))) {
        if (!get_number(ld, n, "step_latency_us", 0, false, MAX_LATENCY_US, "microseconds", &v))
            return false;
        net->step_latency_ns = (int64_t)llround(v * 1000.0);
        custom = true;
    }
    if (custom) {
        memset(net->name, 0, sizeof net->name);
        g_strlcpy(net->name, "custom", sizeof net->name);
    }
    return true;
}

/* ---- faults ---- */

static bool seconds_to_ns(Loader *ld, const YNode *n, const char *key, int64_t *out)
{
    double s = 0;
    if (!get_number(ld, n, key, 0, false, MAX_SECONDS, "seconds", &s))
        return false;
    *out = (int64_t)llround(s * 1e9);
    return true;
}

/* Finds op `name` in `rank`'s program; sets *id. On a miss, fails suggesting the closest. */
static bool fault_op(Loader *ld, const YNode *n, int32_t rank, int64_t *id)
{
    const char *name = NULL;
    if (!get_string(ld, n, "op", "the name of an op in the rank's program", &name))
        return false;
    const SchedProgram *p = ld->prog;
    const SchedOpList *l = sched_program_ops(p, (uint32_t)rank);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (uint32_t i = 0; i < l->len; i++) {
        if (l->ops[i].kind == SCHED_OP_REPEAT)
            continue;
        const char *s = sched_program_name_str(p, l->ops[i].name);
        if (strcmp(s, name) == 0) {
            *id = l->ops[i].name;
            return true;
        }
        if (g_hash_table_add(seen, GUINT_TO_POINTER(l->ops[i].name + 1)))
            g_ptr_array_add(names, (gpointer)s);
    }
    if (names->len == 0)
        return fail(ld, n, "op", "rank %d has no ops, so no op named '%s'", rank, name);
    guint shown = MIN(names->len, 20u);
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (guint i = 0; i < names->len; i++) {
        size_t d = edit_distance(name, g_ptr_array_index(names, i));
        if (d < best_d) {
            best_d = d;
            best = g_ptr_array_index(names, i);
        }
    }
    guint total = names->len;
    g_ptr_array_set_size(names, shown);
    g_ptr_array_add(names, NULL);
    g_autofree char *list = g_strjoinv(", ", (char **)names->pdata);
    if (best && best_d <= SUGGEST_MAX_DISTANCE && best_d < strlen(name))
        return fail(ld, n, "op",
                    "rank %d has no op named '%s'; did you mean '%s'? (ops of rank "
                    "%d: %s%s)",
                    rank, name, best, rank, list, shown < total ? ", ..." : "");
    return fail(ld, n, "op", "rank %d has no op named '%s'; valid: the ops of rank %d: %s%s", rank,
                name, rank, list, shown < total ? ", ..." : "");
}

static bool load_fault(Loader *ld, const YNode *m, GArray *faults)
{
    static const char *const kinds[] = {"delay", "slowdown", "crash", "skip", NULL};
    static const char *const keys_all[] = {"rank",    "kind",   "op",   "occurrence",
                                           "seconds", "factor", "at_s", NULL};
    static const char *const keys_delay[] = {"rank", "kind", "op", "occurrence", "seconds", NULL};
    static const char *const keys_slow[] = {"rank", "kind", "factor", NULL};
    static const char *const keys_crash[] = {"rank", "kind", "at_s", "op", "occurrence", NULL};
    static const char *const keys_skip[] = {"rank", "kind", "op", "occurrence", NULL};
    static const char *const *const kind_keys[] = {keys_delay, keys_slow, keys_crash, keys_skip};
    if (!expect_map(ld, m, "faults",
                    "a mapping such as {rank: 3, kind: delay, op: fwd, seconds: 5}"))
        return false;
    const YNode *kn = map_get(m, "kind");
    if (!kn)
        return fail(ld, m, "kind",
                    "missing; a fault needs kind: one of delay, slowdown, crash, "
                    "skip");
    int ki = 0;
    if (!get_enum(ld, kn, "kind", kinds, &ki))
        return false;
    g_autofree char *context = g_strdup_printf("fault kind %s", kinds[ki]);
    if (!check_keys(ld, m, kind_keys[ki], keys_all, context))
        return false;
    const YNode *rn = map_get(m, "rank");
    if (!rn)
        return fail(ld, m, "rank", "missing; a fault needs rank: 0..%u", ld->n_ranks - 1);
    int64_t rank = 0;
    if (!get_int(ld, rn, "rank", 0, ld->n_ranks - 1, &rank))
        return false;

    SchedFault f = {.kind = (SchedFaultKind)ki,
                    .rank = (int32_t)rank,
                    .op_name = -1,
                    .occurrence = 0,
                    .delay_ns = 0,
                    .factor = 1.0,
                    .at_ns = -1};
    const YNode *opn = map_get(m, "op");
    const YNode *occ = map_get(m, "occurrence");
    if (f.kind == SCHED_FAULT_SLOWDOWN) {
        const YNode *fn = map_get(m, "factor");
        if (!fn)
            return fail(ld, m, "factor",
                        "missing; a slowdown needs factor: F (> 0; 2 = twice "
                        "as slow)");
        if (!get_number(ld, fn, "factor", 0, true, MAX_FACTOR, NULL, &f.factor))
            return false;
    } else if (f.kind == SCHED_FAULT_CRASH) {
        const YNode *at = map_get(m, "at_s");
        if (at && opn)
            return fail(ld, at, "at_s",
                        "a crash takes either at_s or op, not both; valid: "
                        "{kind: crash, at_s: T} or {kind: crash, op: NAME, occurrence: N}");
        if (!at && !opn)
            return fail(ld, m, "kind",
                        "a crash needs at_s: SECONDS or op: NAME; valid: "
                        "{kind: crash, at_s: T} or {kind: crash, op: NAME, occurrence: N}");
        if (at && occ)
            return fail(ld, occ, "occurrence", "occurrence goes with op, not at_s; remove it");
        if (at && !seconds_to_ns(ld, at, "at_s", &f.at_ns))
            return false;
    } else {
        if (!opn)
            return fail(ld, m, "op",
                        "missing; a %s fault needs op: NAME (an op of rank %" G_GINT64_FORMAT ")",
                        kinds[ki], rank);
    }
    if (f.kind == SCHED_FAULT_DELAY) {
        const YNode *sn = map_get(m, "seconds");
        if (!sn)
            return fail(ld, m, "seconds", "missing; a delay needs seconds: S (0..1e9)");
        if (!seconds_to_ns(ld, sn, "seconds", &f.delay_ns))
            return false;
    }
    if (opn) {
        if (!fault_op(ld, opn, f.rank, &f.op_name))
            return false;
        int64_t o = 1;
        if (occ && !get_int(ld, occ, "occurrence", 1, (int64_t)MAX_COUNT, &o))
            return false;
        f.occurrence = (uint64_t)o;
    }
    g_array_append_val(faults, f);
    return true;
}

/* ---- top level ---- */

static bool get_seconds_ns(Loader *ld, const YNode *map, const char *key, int64_t *out)
{
    const YNode *n = map_get(map, key);
    return !n || seconds_to_ns(ld, n, key, out);
}

static bool interpret(Loader *ld, const YNode *root, Scenario *s)
{
    if (!check_keys(ld, root, top_keys, NULL, "the scenario"))
        return false;
    const YNode *n;

    if ((n = map_get(root, "name"))) {
        const char *name = NULL;
        if (!get_string(ld, n, "name", "a name for the scenario", &name))
            return false;
        g_free(s->name);
        s->name = g_strdup(name);
    }
    if ((n = map_get(root, "description")) && n->type != YN_SCALAR)
        return fail(ld, n, "description", "expected a string, got %s; valid: free text",
                    type_word(n));

    static const char *const kinds[] = {"program", "model", NULL};
    int kind = 1;
    n = map_get(root, "kind");
    if (n && !get_enum(ld, n, "kind", kinds, &kind))
        return false;
    if (kind == 1)
        return fail(ld, n ? n : root, "kind",
                    "%skind 'model' is not supported yet by this "
                    "build; use kind: program",
                    n ? "" : "missing (the default is 'model'); ");

    n = map_get(root, "ranks");
    if (!n)
        return fail(ld, root, "ranks", "missing; a program scenario needs ranks: N (1..%u)",
                    MAX_RANKS);
    int64_t ranks = 0;
    if (!get_int(ld, n, "ranks", 1, MAX_RANKS, &ranks))
        return false;
    ld->n_ranks = (uint32_t)ranks;
    s->program = sched_program_new(ld->n_ranks);
    ld->prog = s->program;
    ld->stamp = g_new0(uint32_t, ld->n_ranks);

    if ((n = map_get(root, "groups")) && !load_groups(ld, n))
        return false;
    int pi = map_find(root, "programs");
    if (pi < 0)
        return fail(ld, root, "programs",
                    "missing; a program scenario needs programs: "
                    "{RANKSET: [OPS]}, e.g. programs: {\"*\": [{op: compute, name: fwd, us: 10}]}");
    if (!load_programs(ld, map_key(root, (uint32_t)pi), map_value(root, (uint32_t)pi)))
        return false;

    if ((n = map_get(root, "hardware")) && !load_hardware(ld, n, &s->net))
        return false;

    static const char *const policies[] = {"hang", "abort", "continue", NULL};
    if ((n = map_get(root, "on_mismatch"))) {
        int pol = 0;
        if (!get_enum(ld, n, "on_mismatch", policies, &pol))
            return false;
        s->on_mismatch = pol == 0   ? SCHED_MISMATCH_HANG
                         : pol == 1 ? SCHED_MISMATCH_ABORT
                                    : SCHED_MISMATCH_CONTINUE;
    }
    if ((n = map_get(root, "watchdog"))) {
        static const char *const wkeys[] = {"collective_timeout_s", NULL};
        if (!expect_map(ld, n, "watchdog", "{collective_timeout_s: SECONDS}") ||
            !check_keys(ld, n, wkeys, NULL, "watchdog") ||
            !get_seconds_ns(ld, n, "collective_timeout_s", &s->collective_timeout_ns))
            return false;
    }
    if (!get_seconds_ns(ld, root, "straggler_threshold_s", &s->straggler_threshold_ns))
        return false;

    if ((n = map_get(root, "faults"))) {
        if (!expect_seq(ld, n, "faults",
                        "a list of faults, e.g. [{rank: 3, kind: slowdown, "
                        "factor: 2}]"))
            return false;
        for (guint i = 0; i < n->items->len; i++)
            if (!load_fault(ld, g_ptr_array_index(n->items, i), s->faults))
                return false;
    }

    g_autoptr(GError) verr = NULL;
    if (!sched_program_validate(s->program, &verr))
        return fail(ld, root, NULL, "the program is inconsistent: %s", verr->message);
    return true;
}

/* The basename of `path` without its extension: "scenarios/x.yaml" -> "x". Caller frees. */
static char *default_name(const char *path)
{
    char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    return base;
}

static Scenario *load_text(char *text, size_t len, const char *display,
                           const char *const *overrides, GError **error)
{
    g_autoptr(Scenario) s = g_new0(Scenario, 1);
    s->path = g_strdup(display);
    s->text = text;
    s->name = default_name(display);
    s->kind = g_strdup("program");
    SchedConfig dflt = sched_config_default();
    s->on_mismatch = dflt.on_mismatch;
    s->collective_timeout_ns = dflt.collective_timeout_ns;
    s->straggler_threshold_ns = dflt.straggler_threshold_ns;
    s->net = dflt.net;
    s->faults = g_array_new(FALSE, FALSE, sizeof(SchedFault));

    Loader ld = {.file = display, .error = error};
    g_autoptr(YNode) root = parse_tree(&ld, s->text, len);
    if (!root)
        return NULL;
    for (size_t i = 0; overrides && overrides[i]; i++)
        if (!apply_override(&ld, root, overrides[i]))
            return NULL;
    bool ok = interpret(&ld, root, s);
    g_free(ld.stamp);
    if (!ok)
        return NULL;
    return g_steal_pointer(&s);
}

Scenario *scenario_load(const char *path, const char *const *overrides, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO, "%s: cannot read the scenario: %s",
                    path, ioerr->message);
        return NULL;
    }
    return load_text(text, len, path, overrides, error);
}

Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return load_text(g_strdup(text), strlen(text), display_name ? display_name : "<string>",
                     overrides, error);
}

void scenario_free(Scenario *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->text);
    g_free(s->name);
    g_free(s->kind);
    sched_program_free(s->program);
    if (s->faults)
        g_array_free(s->faults, TRUE);
    g_free(s);
}

SchedConfig scenario_engine_config(const Scenario *s)
{
    SchedConfig cfg = sched_config_default();
    cfg.on_mismatch = s->on_mismatch;
    cfg.collective_timeout_ns = s->collective_timeout_ns;
    cfg.straggler_threshold_ns = s->straggler_threshold_ns;
    cfg.net = s->net;
    cfg.faults = (const SchedFault *)(const void *)s->faults->data;
    cfg.n_faults = s->faults->len;
    return cfg;
}
