/* src/yamldoc.c — YAML text -> owned tree with lines, errors, suggestions, scalar
 * conversion; see yamldoc.h. Moved out of the scenario loader so the hardware loader shares it. */
#include "yamldoc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "scenario.h"

/* ---- the owned YAML tree ---- */

static void node_free_cb(gpointer data)
{
    yamldoc_node_free(data);
}

void yamldoc_node_free(YamlDocNode *n)
{
    if (!n)
        return;
    g_free(n->set_path);
    g_free(n->text);
    if (n->items)
        g_ptr_array_free(n->items, TRUE);
    g_free(n);
}

static YamlDocNode *node_new(YamlDocType type, uint32_t line, const char *set_path)
{
    YamlDocNode *n = g_new0(YamlDocNode, 1);
    n->type = type;
    n->line = line;
    n->set_path = g_strdup(set_path);
    if (type != YAMLDOC_SCALAR)
        n->items = g_ptr_array_new_with_free_func(node_free_cb);
    return n;
}

uint32_t yamldoc_map_len(const YamlDocNode *m)
{
    return m->items->len / 2;
}
YamlDocNode *yamldoc_map_key(const YamlDocNode *m, uint32_t i)
{
    return g_ptr_array_index(m->items, 2 * i);
}
YamlDocNode *yamldoc_map_value(const YamlDocNode *m, uint32_t i)
{
    return g_ptr_array_index(m->items, 2 * i + 1);
}

/* Index of `key` in mapping `m`, or -1. Keys are unique (checked when the tree is built). */
int yamldoc_map_find(const YamlDocNode *m, const char *key)
{
    for (uint32_t i = 0; i < yamldoc_map_len(m); i++)
        if (strcmp(yamldoc_map_key(m, i)->text, key) == 0)
            return (int)i;
    return -1;
}

YamlDocNode *yamldoc_map_get(const YamlDocNode *m, const char *key)
{
    int i = yamldoc_map_find(m, key);
    return i < 0 ? NULL : yamldoc_map_value(m, (uint32_t)i);
}

YamlDocNode *yamldoc_map_get_key(const YamlDocNode *m, const char *key)
{
    int i = yamldoc_map_find(m, key);
    return i < 0 ? NULL : yamldoc_map_key(m, (uint32_t)i);
}

bool yamldoc_is_null(const YamlDocNode *n)
{
    if (n->type != YAMLDOC_SCALAR || n->quoted)
        return false;
    const char *t = n->text;
    return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
           strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

/* ---- error reporting ---- */

/* Location prefix of a node: "FILE:LINE" or "FILE: --set PATH". Caller frees. */
char *yamldoc_loc(const YamlDoc *d, const YamlDocNode *at)
{
    if (at && at->set_path)
        return g_strdup_printf("%s: --set %s", d->file, at->set_path);
    return g_strdup_printf("%s:%u", d->file, at && at->line ? at->line : 1u);
}

static bool vfail(YamlDoc *d, int code, const YamlDocNode *at, const char *key, const char *fmt,
                  va_list ap) G_GNUC_PRINTF(5, 0);
static bool vfail(YamlDoc *d, int code, const YamlDocNode *at, const char *key, const char *fmt,
                  va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    g_autofree char *loc = yamldoc_loc(d, at);
    if (key)
        g_set_error(d->error, SCENARIO_ERROR, code, "%s: key '%s': %s", loc, key, msg);
    else
        g_set_error(d->error, SCENARIO_ERROR, code, "%s: %s", loc, msg);
    return false;
}

bool yamldoc_fail_code(YamlDoc *d, int code, const YamlDocNode *at, const char *key,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(d, code, at, key, fmt, ap);
    va_end(ap);
    return false;
}

bool yamldoc_fail(YamlDoc *d, const YamlDocNode *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(d, SCENARIO_ERROR_INVALID, at, key, fmt, ap);
    va_end(ap);
    return false;
}

/* A short description of a node for "got ..." phrases. Caller frees. */
char *yamldoc_describe(const YamlDocNode *n)
{
    if (n->type == YAMLDOC_MAP)
        return g_strdup("a mapping");
    if (n->type == YAMLDOC_SEQ)
        return g_strdup("a list");
    if (yamldoc_is_null(n))
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

size_t yamldoc_edit_distance(const char *a, const char *b)
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
const char *yamldoc_closest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; candidates[i]; i++) {
        size_t d = yamldoc_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    size_t len = strlen(word);
    if (best && best_d <= YAMLDOC_SUGGEST_MAX_DISTANCE && best_d < len && best_d < strlen(best))
        return best;
    return NULL;
}

/* "; did you mean 'X'? (valid: a, b, c)" or "; valid: a, b, c". Caller frees. */
char *yamldoc_suggestion(const char *word, const char *const *valid)
{
    g_autofree char *list = g_strjoinv(", ", (char **)valid);
    const char *best = yamldoc_closest(word, valid);
    if (best)
        return g_strdup_printf("did you mean '%s'? (valid: %s)", best, list);
    return g_strdup_printf("valid: %s", list);
}

/* ---- scalar conversion ---- */

static const char *type_word(const YamlDocNode *n)
{
    return n->type == YAMLDOC_MAP ? "a mapping" : "a list";
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
static bool scalar_number(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid,
                          bool *is_integer, double *out, int64_t *out_int, bool *int_exact)
{
    if (n->type != YAMLDOC_SCALAR) {
        return yamldoc_fail(d, n, key, "expected a number, got %s; valid: %s", type_word(n), valid);
    }
    g_autofree char *got = yamldoc_describe(n);
    if (yamldoc_is_null(n))
        return yamldoc_fail(d, n, key, "expected a number, got nothing; valid: %s", valid);
    if (n->quoted)
        return yamldoc_fail(d, n, key,
                            "expected a number, got %s (write it without quotes); valid: %s", got,
                            valid);
    if (is_yaml_inf(n->text))
        return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
    char buf[128];
    if (!number_syntax(n->text, buf, sizeof buf, is_integer)) {
        /* A very long run of digits is a number too big for any key here. */
        const char *p = n->text + (n->text[0] == '-' || n->text[0] == '+');
        if (strlen(p) >= sizeof buf - 2 && strspn(p, "0123456789_") == strlen(p))
            return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", got, valid);
        return yamldoc_fail(d, n, key, "expected a number, got %s; valid: %s", got, valid);
    }
    *int_exact = false;
    if (*is_integer) {
        errno = 0;
        char *end = NULL;
        gint64 v = g_ascii_strtoll(buf, &end, 10);
        if (errno == ERANGE)
            return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
        *out_int = v;
        *int_exact = true;
        *out = (double)v;
        return true;
    }
    errno = 0;
    double x = g_ascii_strtod(buf, NULL);
    if (errno == ERANGE && (x == HUGE_VAL || x == -HUGE_VAL))
        return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
    if (!isfinite(x))
        return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = x;
    return true;
}

/* An integer in [min, max]. Integral numbers in exponent form (1e6) are accepted. */
bool yamldoc_get_int(YamlDoc *d, const YamlDocNode *n, const char *key, int64_t min, int64_t max,
                     int64_t *out)
{
    g_autofree char *valid = g_strdup_printf("%" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, min, max);
    bool is_int = false, exact = false;
    double x = 0;
    int64_t v = 0;
    if (!scalar_number(d, n, key, valid, &is_int, &x, &v, &exact))
        return false;
    if (!exact) {
        if (x != floor(x))
            return yamldoc_fail(d, n, key, "expected an integer, got %s; valid: %s", n->text,
                                valid);
        if (x < (double)min || x > (double)max)
            return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
        v = (int64_t)x;
    }
    if (v < min || v > max)
        return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = v;
    return true;
}

/* A number in [min, max] (or (min, max] when min_exclusive). `unit` is shown after the range. */
bool yamldoc_get_number(YamlDoc *d, const YamlDocNode *n, const char *key, double min,
                        bool min_exclusive, double max, const char *unit, double *out)
{
    g_autofree char *valid =
        min_exclusive ? g_strdup_printf("a number > %g and <= %g%s%s", min, max, unit ? " " : "",
                                        unit ? unit : "")
                      : g_strdup_printf("%g..%g%s%s", min, max, unit ? " " : "", unit ? unit : "");
    bool is_int = false, exact = false;
    double x = 0;
    int64_t v = 0;
    if (!scalar_number(d, n, key, valid, &is_int, &x, &v, &exact))
        return false;
    if (x < min || (min_exclusive && x == min) || x > max)
        return yamldoc_fail(d, n, key, "%s is out of range; valid: %s", n->text, valid);
    *out = x;
    return true;
}

/* A non-empty string scalar (plain or quoted). Returns a pointer into the tree. */
bool yamldoc_get_string(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid,
                        const char **out)
{
    if (n->type != YAMLDOC_SCALAR)
        return yamldoc_fail(d, n, key, "expected a string, got %s; valid: %s", type_word(n), valid);
    if (yamldoc_is_null(n) || n->text[0] == '\0')
        return yamldoc_fail(d, n, key, "expected a string, got nothing; valid: %s", valid);
    *out = n->text;
    return true;
}

/* One of `names` (NULL-terminated); returns its index. */
bool yamldoc_get_enum(YamlDoc *d, const YamlDocNode *n, const char *key, const char *const *names,
                      int *out)
{
    g_autofree char *list = g_strjoinv(", ", (char **)names);
    const char *s = NULL;
    if (!yamldoc_get_string(d, n, key, list, &s))
        return false;
    for (int i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    g_autofree char *hint = yamldoc_suggestion(s, names);
    return yamldoc_fail(d, n, key, "unknown value '%s'; %s", s, hint);
}

bool yamldoc_get_bool(YamlDoc *d, const YamlDocNode *n, const char *key, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", NULL};
    static const char *const no[] = {"false", "False", "FALSE", NULL};
    if (n->type == YAMLDOC_SCALAR && !n->quoted) {
        for (int i = 0; yes[i]; i++) {
            if (strcmp(n->text, yes[i]) == 0) {
                *out = true;
                return true;
            }
            if (strcmp(n->text, no[i]) == 0) {
                *out = false;
                return true;
            }
        }
    }
    g_autofree char *got = yamldoc_describe(n);
    return yamldoc_fail(d, n, key, "expected true or false, got %s%s; valid: true, false", got,
                        n->type == YAMLDOC_SCALAR && n->quoted ? " (write it without quotes)" : "");
}

bool yamldoc_expect_map(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid)
{
    if (n->type == YAMLDOC_MAP)
        return true;
    g_autofree char *got = yamldoc_describe(n);
    return yamldoc_fail(d, n, key, "expected a mapping, got %s; valid: %s", got, valid);
}

bool yamldoc_expect_seq(YamlDoc *d, const YamlDocNode *n, const char *key, const char *valid)
{
    if (n->type == YAMLDOC_SEQ)
        return true;
    g_autofree char *got = yamldoc_describe(n);
    return yamldoc_fail(d, n, key, "expected a list, got %s; valid: %s", got, valid);
}

/* Every key of `m` must be in `valid`. A key in `elsewhere` (valid in a sibling context, e.g.
 * for another op kind) gets "not valid for CONTEXT" instead of "unknown key". */
bool yamldoc_check_keys(YamlDoc *d, const YamlDocNode *m, const char *const *valid,
                        const char *const *elsewhere, const char *context)
{
    for (uint32_t i = 0; i < yamldoc_map_len(m); i++) {
        const YamlDocNode *k = yamldoc_map_key(m, i);
        bool ok = false;
        for (size_t j = 0; valid[j] && !ok; j++)
            ok = strcmp(k->text, valid[j]) == 0;
        if (ok)
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        for (size_t j = 0; elsewhere && elsewhere[j]; j++)
            if (strcmp(k->text, elsewhere[j]) == 0)
                return yamldoc_fail(d, k, k->text, "not valid for %s; valid: %s", context, list);
        g_autofree char *hint = yamldoc_suggestion(k->text, valid);
        return yamldoc_fail(d, k, k->text, "unknown key in %s; %s", context, hint);
    }
    return true;
}

/* ---- libyaml document -> YamlDocNode tree ---- */

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

static bool syntax_error(YamlDoc *d, yaml_parser_t *parser, const char *text, size_t len)
{
    uint32_t line;
    if (parser->error == YAML_MEMORY_ERROR) {
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s: malformed YAML: out of memory while parsing", d->file);
        return false;
    }
    const char *problem = parser->problem ? parser->problem : "unknown error";
    if (parser->error == YAML_READER_ERROR) {
        line = line_of_offset(text, len, parser->problem_offset);
        if (parser->problem_value != -1)
            g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                        "%s:%u: malformed YAML: %s (byte #%X at offset %zu); the file must be "
                        "UTF-8 text",
                        d->file, line, problem, (unsigned)parser->problem_value,
                        parser->problem_offset);
        else
            g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                        "%s:%u: malformed YAML: %s (offset %zu); the file must be UTF-8 text",
                        d->file, line, problem, parser->problem_offset);
        return false;
    }
    line = mark_line(parser->problem_mark);
    if (parser->context)
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s:%u: malformed YAML: %s (%s at line %u, column %zu)", d->file, line, problem,
                    parser->context, mark_line(parser->context_mark),
                    parser->context_mark.column + 1);
    else
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                    "%s:%u: malformed YAML: %s (column %zu)", d->file, line, problem,
                    parser->problem_mark.column + 1);
    return false;
}

/* Rejects aliases: libyaml resolves `*name` to the anchored node itself, so a node referenced
 * more than once (as root, item, key or value) was reached through an alias. Iterative, so
 * recursive aliases cannot loop. */
static bool check_no_aliases(YamlDoc *d, yaml_document_t *doc)
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
                    YamlDocNode at = {.line = mark_line(node->start_mark)};
                    return yamldoc_fail(
                        d, &at, NULL,
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
                    YamlDocNode at = {.line = mark_line(key ? key->start_mark : node->start_mark)};
                    const char *kname = key && key->type == YAML_SCALAR_NODE && k == 1
                                            ? (const char *)key->data.scalar.value
                                            : NULL;
                    return yamldoc_fail(
                        d, &at, kname,
                        "YAML alias (anchor at line %u); aliases (*name) and merge keys "
                        "are not supported, write the value out",
                        target ? mark_line(target->start_mark) : 0);
                }
            }
        }
    }
    return true;
}

static YamlDocNode *convert(YamlDoc *d, yaml_document_t *doc, yaml_node_t *node, int depth)
{
    uint32_t line = mark_line(node->start_mark);
    if (depth > YAMLDOC_MAX_DEPTH) {
        YamlDocNode at = {.line = line};
        yamldoc_fail(d, &at, NULL, "YAML nested deeper than %d levels; a %s needs far less",
                     YAMLDOC_MAX_DEPTH, d->what);
        return NULL;
    }
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        YamlDocNode *n = node_new(YAMLDOC_SCALAR, line, NULL);
        n->text = g_strndup((const char *)node->data.scalar.value, node->data.scalar.length);
        n->quoted = node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (strlen(n->text) != node->data.scalar.length) {
            YamlDocNode at = {.line = line};
            yamldoc_node_free(n);
            yamldoc_fail(d, &at, NULL, "a string contains a NUL character; remove it");
            return NULL;
        }
        return n;
    }
    case YAML_SEQUENCE_NODE: {
        g_autoptr(YamlDocNode) n = node_new(YAMLDOC_SEQ, line, NULL);
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             it < node->data.sequence.items.top; it++) {
            YamlDocNode *child = convert(d, doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!child)
                return NULL;
            g_ptr_array_add(n->items, child);
        }
        return g_steal_pointer(&n);
    }
    case YAML_MAPPING_NODE: {
        g_autoptr(YamlDocNode) n = node_new(YAMLDOC_MAP, line, NULL);
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal); /* key -> idx+1 */
        for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
             pr < node->data.mapping.pairs.top; pr++) {
            yaml_node_t *kn = yaml_document_get_node(doc, pr->key);
            if (kn->type != YAML_SCALAR_NODE) {
                YamlDocNode at = {.line = mark_line(kn->start_mark)};
                yamldoc_fail(d, &at, NULL,
                             "a mapping key is a %s; keys must be plain names or numbers",
                             kn->type == YAML_MAPPING_NODE ? "mapping" : "list");
                return NULL;
            }
            YamlDocNode *key = convert(d, doc, kn, depth + 1);
            if (!key)
                return NULL;
            guint prev = GPOINTER_TO_UINT(g_hash_table_lookup(seen, key->text));
            if (prev) {
                yamldoc_fail(d, key, key->text,
                             "duplicate key (first at line %u); each key may appear "
                             "once in a mapping",
                             yamldoc_map_key(n, prev - 1)->line);
                yamldoc_node_free(key);
                return NULL;
            }
            g_hash_table_insert(seen, key->text, GUINT_TO_POINTER(yamldoc_map_len(n) + 1));
            g_ptr_array_add(n->items, key);
            YamlDocNode *value = convert(d, doc, yaml_document_get_node(doc, pr->value), depth + 1);
            if (!value) {
                g_ptr_array_add(n->items, NULL); /* keep pairs aligned for the free */
                return NULL;
            }
            g_ptr_array_add(n->items, value);
        }
        return g_steal_pointer(&n);
    }
    default: {
        YamlDocNode at = {.line = line};
        yamldoc_fail(d, &at, NULL, "empty YAML node; expected a value");
        return NULL;
    }
    }
}

/* Parses `text` into a tree. Returns NULL with the error set. */
YamlDocNode *yamldoc_parse(YamlDoc *d, const char *text, size_t len)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: cannot initialize the YAML parser (out of memory)", d->file);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(d, &parser, text, len);
        yaml_parser_delete(&parser);
        return NULL;
    }
    YamlDocNode *tree = NULL;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    bool blank = root && root->type == YAML_SCALAR_NODE &&
                 root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                 root->data.scalar.length == 0; /* "---" and nothing else */
    if (!root || blank) {
        g_autofree char *keys = g_strjoinv(", ", (char **)d->top_keys);
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "%s:1: the file is empty; expected a mapping with keys %s", d->file, keys);
    } else if (check_no_aliases(d, &doc)) {
        tree = convert(d, &doc, root, 0);
    }
    yaml_document_delete(&doc);
    if (tree) {
        /* One document per file: anything after a second `---` is a mistake. */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            syntax_error(d, &parser, text, len);
            g_clear_pointer(&tree, yamldoc_node_free);
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&extra);
            if (r2) {
                g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                            "%s:%u: a second YAML document; a %s holds exactly one "
                            "(remove the extra '---')",
                            d->file, mark_line(extra.start_mark), d->what);
                g_clear_pointer(&tree, yamldoc_node_free);
            }
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    if (tree && tree->type != YAMLDOC_MAP) {
        g_autofree char *got = yamldoc_describe(tree);
        g_autofree char *keys = g_strjoinv(", ", (char **)d->top_keys);
        yamldoc_fail(d, tree, NULL, "the top level is %s; expected a mapping with keys %s", got,
                     keys);
        g_clear_pointer(&tree, yamldoc_node_free);
    }
    return tree;
}

/* ---- --set overrides ---- */

bool yamldoc_set(YamlDoc *d, YamlDocNode *root, const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (!eq)
        return g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                           "--set '%s': no '=' sign; expected --set dotted.key=value (e.g. "
                           "--set watchdog.collective_timeout_s=300)",
                           ov),
               false;
    g_autofree char *path = g_strndup(ov, (gsize)(eq - ov));
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    if (!parts[0])
        return g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                           "--set '%s': no key before '='; expected --set dotted.key=value", ov),
               false;
    for (size_t i = 0; parts[i]; i++) {
        g_strstrip(parts[i]);
        if (parts[i][0] == '\0')
            return g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                               "--set '%s': empty key in '%s'; expected --set dotted.key=value", ov,
                               path),
                   false;
    }
    YamlDocNode *cur = root;
    GString *prefix = g_string_new(NULL);
    for (size_t i = 0; parts[i]; i++) {
        if (i)
            g_string_append_c(prefix, '.');
        g_string_append(prefix, parts[i]);
        int idx = yamldoc_map_find(cur, parts[i]);
        bool last = parts[i + 1] == NULL;
        if (last) {
            YamlDocNode *v = node_new(YAMLDOC_SCALAR, 0, prefix->str);
            v->text = g_strdup(eq + 1);
            if (idx >= 0) {
                YamlDocNode *old = yamldoc_map_value(cur, (uint32_t)idx);
                g_ptr_array_index(cur->items, 2 * (uint32_t)idx + 1) = v;
                yamldoc_node_free(old);
            } else {
                YamlDocNode *k = node_new(YAMLDOC_SCALAR, 0, prefix->str);
                k->text = g_strdup(parts[i]);
                g_ptr_array_add(cur->items, k);
                g_ptr_array_add(cur->items, v);
            }
        } else if (idx >= 0) {
            YamlDocNode *next = yamldoc_map_value(cur, (uint32_t)idx);
            if (next->type != YAMLDOC_MAP) {
                g_autofree char *got = yamldoc_describe(next);
                g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                            "--set '%s': '%s' is %s, not a mapping; --set can only reach keys "
                            "inside mappings",
                            ov, prefix->str, got);
                g_string_free(prefix, TRUE);
                return false;
            }
            cur = next;
        } else {
            YamlDocNode *k = node_new(YAMLDOC_SCALAR, 0, prefix->str);
            k->text = g_strdup(parts[i]);
            YamlDocNode *m = node_new(YAMLDOC_MAP, 0, prefix->str);
            g_ptr_array_add(cur->items, k);
            g_ptr_array_add(cur->items, m);
            cur = m;
        }
    }
    g_string_free(prefix, TRUE);
    return true;
}
