/* src/input/yamldoc.c — YAML text -> owned tree with lines, errors, suggestions, scalar
 * conversion; see yamldoc.h. Moved out of the scenario loader so the hardware loader shares it. */
#include "yamldoc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "../util/inputfile.h"
#include "scenario-error.h"

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
        yamldoc_fail(d, k, k->text, "unknown key in %s; %s", context, hint);
        if (d->error)
            scenario_error_mark_unknown_key(*d->error);
        return false;
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

/* The tree is built from libyaml's event stream (not its document API), so every limit holds
 * WHILE parsing: at the 65th nesting level the parser stops, after reading only what came
 * before (libyaml's scanner costs O(depth) per token, so loading a deep document first was
 * quadratic: 200 KB of '[' took 96 s). Aliases are refused at the alias; anchors alone are
 * fine. Costs: O(text) plus O(depth) per token with depth <= YAMLDOC_MAX_DEPTH. */

typedef struct {
    YamlDocNode *node;  /* the open sequence or mapping */
    GHashTable *seen;   /* mapping: key text -> index + 1 (borrowed keys) */
    YamlDocNode *key;   /* mapping: the key waiting for its value, or NULL */
} Frame;

typedef struct {
    YamlDoc *d;
    Frame stack[YAMLDOC_MAX_DEPTH + 1];
    int depth;            /* open containers */
    YamlDocNode *root;
    GHashTable *anchors;  /* anchor name -> line */
} Builder;

static void builder_clear(Builder *b)
{
    for (int i = b->depth - 1; i >= 0; i--) {
        yamldoc_node_free(b->stack[i].key);
        if (b->stack[i].seen)
            g_hash_table_unref(b->stack[i].seen);
        yamldoc_node_free(b->stack[i].node); /* open containers are not attached yet */
    }
    b->depth = 0;
    g_clear_pointer(&b->root, yamldoc_node_free);
    g_clear_pointer(&b->anchors, g_hash_table_unref);
}

static void note_anchor(Builder *b, const yaml_char_t *anchor, uint32_t line)
{
    if (anchor)
        g_hash_table_insert(b->anchors, g_strdup((const char *)anchor), GUINT_TO_POINTER(line));
}

/* Attaches a finished node to the open container (or makes it the root). Takes `n`. */
static bool attach(Builder *b, YamlDocNode *n)
{
    if (b->depth == 0) {
        g_assert(!b->root);
        b->root = n;
        return true;
    }
    Frame *f = &b->stack[b->depth - 1];
    if (f->node->type == YAMLDOC_SEQ) {
        g_ptr_array_add(f->node->items, n);
        return true;
    }
    if (!f->key) {
        if (n->type != YAMLDOC_SCALAR) {
            YamlDocNode at = {.line = n->line};
            yamldoc_fail(b->d, &at, NULL,
                         "a mapping key is a %s; keys must be plain names or numbers",
                         n->type == YAMLDOC_MAP ? "mapping" : "list");
            yamldoc_node_free(n);
            return false;
        }
        guint prev = GPOINTER_TO_UINT(g_hash_table_lookup(f->seen, n->text));
        if (prev) {
            yamldoc_fail(b->d, n, n->text,
                         "duplicate key (first at line %u); each key may appear once in a "
                         "mapping",
                         yamldoc_map_key(f->node, prev - 1)->line);
            yamldoc_node_free(n);
            return false;
        }
        f->key = n;
        return true;
    }
    g_hash_table_insert(f->seen, f->key->text, GUINT_TO_POINTER(yamldoc_map_len(f->node) + 1));
    g_ptr_array_add(f->node->items, g_steal_pointer(&f->key));
    g_ptr_array_add(f->node->items, n);
    return true;
}

/* A sequence or mapping starts: a new frame, unless that is one level too deep. */
static bool too_deep(Builder *b, uint32_t line)
{
    YamlDocNode at = {.line = line};
    return yamldoc_fail(b->d, &at, NULL, "YAML nested deeper than %d levels; a %s needs far less",
                        YAMLDOC_MAX_DEPTH, b->d->what);
}

static bool open_container(Builder *b, YamlDocType type, uint32_t line)
{
    if (b->depth > YAMLDOC_MAX_DEPTH) /* a node below YAMLDOC_MAX_DEPTH + 1 containers */
        return too_deep(b, line);
    /* a key may not be a container: say so at its start, before reading it */
    if (b->depth > 0) {
        Frame *p = &b->stack[b->depth - 1];
        if (p->node->type == YAMLDOC_MAP && !p->key) {
            YamlDocNode at = {.line = line};
            return yamldoc_fail(b->d, &at, NULL,
                                "a mapping key is a %s; keys must be plain names or numbers",
                                type == YAMLDOC_MAP ? "mapping" : "list");
        }
    }
    Frame *f = &b->stack[b->depth++];
    f->node = node_new(type, line, NULL);
    f->seen = type == YAMLDOC_MAP ? g_hash_table_new(g_str_hash, g_str_equal) : NULL;
    f->key = NULL;
    return true;
}

static bool close_container(Builder *b)
{
    g_assert(b->depth > 0);
    Frame *f = &b->stack[--b->depth];
    if (f->seen)
        g_hash_table_unref(f->seen);
    yamldoc_node_free(f->key); /* cannot happen in well-formed YAML */
    YamlDocNode *n = f->node;
    *f = (Frame){0};
    return attach(b, n);
}

static bool on_alias(Builder *b, const yaml_event_t *ev)
{
    uint32_t anchor_line =
        GPOINTER_TO_UINT(g_hash_table_lookup(b->anchors, ev->data.alias.anchor));
    Frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    if (f && f->node->type == YAMLDOC_SEQ) {
        YamlDocNode at = {.line = f->node->line};
        return yamldoc_fail(b->d, &at, NULL,
                            "YAML alias in a list (anchor at line %u); aliases (*name) are not "
                            "supported, write the value out",
                            anchor_line);
    }
    YamlDocNode at = {.line = f && f->key ? f->key->line : mark_line(ev->start_mark)};
    return yamldoc_fail(b->d, &at, f && f->key ? f->key->text : NULL,
                        "YAML alias (anchor at line %u); aliases (*name) and merge keys are not "
                        "supported, write the value out",
                        anchor_line);
}

/* One event of the first document. Returns false with the error set. */
static bool on_event(Builder *b, const yaml_event_t *ev)
{
    uint32_t line = mark_line(ev->start_mark);
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        if (b->depth > YAMLDOC_MAX_DEPTH)
            return too_deep(b, line);
        note_anchor(b, ev->data.scalar.anchor, line);
        YamlDocNode *n = node_new(YAMLDOC_SCALAR, line, NULL);
        n->text = g_strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (strlen(n->text) != ev->data.scalar.length) {
            YamlDocNode at = {.line = line};
            yamldoc_node_free(n);
            return yamldoc_fail(b->d, &at, NULL, "a string contains a NUL character; remove it");
        }
        return attach(b, n);
    }
    case YAML_SEQUENCE_START_EVENT:
        note_anchor(b, ev->data.sequence_start.anchor, line);
        return open_container(b, YAMLDOC_SEQ, line);
    case YAML_MAPPING_START_EVENT:
        note_anchor(b, ev->data.mapping_start.anchor, line);
        return open_container(b, YAMLDOC_MAP, line);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return close_container(b);
    case YAML_ALIAS_EVENT:
        return on_alias(b, ev);
    default:
        return true;
    }
}

/* The first problem that makes `text` not UTF-8 for libyaml's purposes (a BOM, UTF-16/32, a
 * NUL byte, an invalid sequence), as "FILE:LINE: malformed YAML: ..." (SCENARIO_ERROR_SYNTAX). */
static bool check_text(YamlDoc *d, const char *text, size_t len)
{
    gsize max = input_max_bytes(NULL);
    if (max && len > max) {
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: %zu bytes, over the input size limit of %" G_GSIZE_FORMAT
                    " bytes (set %s=BYTES to raise it)",
                    d->file, len, max, INPUT_MAX_BYTES_ENV);
        return false;
    }
    gsize at = 0;
    g_autofree char *why = input_utf8_problem(text, len, &at);
    if (!why)
        return true;
    g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_SYNTAX,
                "%s:%u: malformed YAML: %s; the file must be UTF-8 text", d->file,
                line_of_offset(text, len, at), why);
    return false;
}

/* Parses `text` into a tree. Returns NULL with the error set. */
YamlDocNode *yamldoc_parse(YamlDoc *d, const char *text, size_t len)
{
    if (!check_text(d, text, len))
        return NULL;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_IO,
                    "%s: cannot initialize the YAML parser (out of memory)", d->file);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    Builder b = {.d = d, .anchors = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    int docs = 0;
    bool ok = true, done = false;
    while (ok && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_error(d, &parser, text, len);
            ok = false;
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++docs == 2) {
                g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                            "%s:%u: a second YAML document; a %s holds exactly one "
                            "(remove the extra '---')",
                            d->file, mark_line(ev.start_mark), d->what);
                ok = false;
            }
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            if (docs == 1)
                ok = on_event(&b, &ev);
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    YamlDocNode *tree = ok ? g_steal_pointer(&b.root) : NULL;
    builder_clear(&b);
    if (!ok)
        return NULL;
    bool blank = tree && tree->type == YAMLDOC_SCALAR && !tree->quoted && !tree->text[0];
    if (!tree || blank) { /* nothing, or "---" and nothing else */
        yamldoc_node_free(tree);
        g_autofree char *keys = g_strjoinv(", ", (char **)d->top_keys);
        g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "%s:1: the file is empty; expected a mapping with keys %s", d->file, keys);
        return NULL;
    }
    if (tree->type != YAMLDOC_MAP) {
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
    /* Each node made here records its path prefix, so a path of n keys costs O(n x length):
     * bounded by the nesting limit (a 120 KB path of 60,000 keys took 7 GB). */
    gsize dots = 0;
    for (const char *c = path; *c; c++)
        dots += *c == '.';
    if (dots >= YAMLDOC_MAX_DEPTH) {
        g_autofree char *shown = input_escape(path, 60);
        return g_set_error(d->error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                           "--set '%s': %" G_GSIZE_FORMAT " keys deep; a scenario nests at most "
                           "%d levels",
                           shown, dots + 1, YAMLDOC_MAX_DEPTH),
               false;
    }
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
