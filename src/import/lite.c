/* src/import/lite.c — the compact document tree of lite.h: a strict JSON parser into arenas, and the
 * conversion from json-glib.
 *
 * Layout: `vals` holds every value (16 bytes); a container's children are a contiguous run of
 * `kids` (and, for an object, of `keys`, offsets into `str`), written when the container
 * closes. While a container is open its children wait on `pend` (a stack shared by all
 * levels: an inner container pops only its own). Strings are unescaped into `str`,
 * NUL-terminated.
 */
#include "lite.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t type;
    uint32_t n; /* containers: child count; strings: byte length */
    union {
        int64_t i;
        double d;
        uint64_t off; /* containers: first child in kids; strings: offset in str */
        bool b;
    } u;
} Val;

struct LiteDoc {
    Val *vals;
    uint32_t nvals, cvals;
    LiteRef *kids;
    uint32_t *keys; /* parallel to kids; only object children use theirs */
    uint64_t nkids, ckids;
    char *str;        /* own strings (a tree from json-glib) */
    size_t nstr, cstr;
    const char *base; /* where string offsets point: the parsed input (in place) or `str` */
    LiteRef root;
    /* parse-time */
    LiteRef *pend;
    uint32_t *pend_keys;
    uint64_t npend, cpend;
};

static void *grow(void *p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    *cap = c;
    return g_realloc_n(p, (gsize)c, elem);
}

static LiteRef add_val(LiteDoc *d, Val v)
{
    if (d->nvals == d->cvals) {
        uint64_t c = d->cvals;
        d->vals = grow(d->vals, &c, (uint64_t)d->nvals + 1, sizeof(Val));
        d->cvals = (uint32_t)MIN(c, (uint64_t)UINT32_MAX - 1);
    }
    d->vals[d->nvals] = v;
    return d->nvals++;
}

static size_t add_bytes(LiteDoc *d, const char *s, size_t n)
{
    uint64_t c = d->cstr;
    d->str = grow(d->str, &c, (uint64_t)d->nstr + n + 1, 1);
    d->cstr = (size_t)c;
    size_t off = d->nstr;
    memcpy(d->str + off, s, n);
    d->str[off + n] = '\0';
    d->nstr += n + 1;
    return off;
}

static void push_pend(LiteDoc *d, LiteRef v, uint32_t key)
{
    if (d->npend == d->cpend) {
        uint64_t c = d->cpend;
        d->pend = grow(d->pend, &c, d->npend + 1, sizeof(LiteRef));
        uint64_t c2 = d->cpend;
        d->pend_keys = grow(d->pend_keys, &c2, d->npend + 1, sizeof(uint32_t));
        d->cpend = c;
    }
    d->pend[d->npend] = v;
    d->pend_keys[d->npend] = key;
    d->npend++;
}

/* Moves the last `n` pending children into the arenas; returns the offset of the first. */
static uint64_t close_container(LiteDoc *d, uint64_t n)
{
    if (n == 0) /* an empty container: nothing to move (and the arenas may not exist yet) */
        return d->nkids;
    uint64_t c = d->ckids;
    d->kids = grow(d->kids, &c, d->nkids + n, sizeof(LiteRef));
    uint64_t c2 = d->ckids;
    d->keys = grow(d->keys, &c2, d->nkids + n, sizeof(uint32_t));
    d->ckids = c;
    uint64_t off = d->nkids;
    memcpy(d->kids + off, d->pend + d->npend - n, (size_t)n * sizeof(LiteRef));
    memcpy(d->keys + off, d->pend_keys + d->npend - n, (size_t)n * sizeof(uint32_t));
    d->nkids += n;
    d->npend -= n;
    return off;
}

void lite_free(LiteDoc *d)
{
    if (!d)
        return;
    g_free(d->vals);
    g_free(d->kids);
    g_free(d->keys);
    g_free(d->str);
    g_free(d->pend);
    g_free(d->pend_keys);
    g_free(d);
}

/* ---- JSON ---- */

typedef struct {
    const char *s, *p, *end; /* the input, written in place by parse_string */
    /* Where errors are: counted as skip_ws passes line breaks (outside strings, the only place
     * a raw one is valid), since unescaping writes line breaks of its own into the input. */
    unsigned line;
    const char *line_start;
    const char *what;
    LiteDoc *d;
    GError **error;
} Parser;

static bool perr(Parser *P, const char *why)
{
    unsigned col = (unsigned)(MIN(P->p, P->end) - P->line_start) + 1;
    g_set_error(P->error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s:%u:%u: %s", P->what, P->line,
                col, why);
    return false;
}

static inline void skip_ws(Parser *P)
{
    for (; P->p < P->end; P->p++) {
        if (*P->p == '\n') {
            P->line++;
            P->line_start = P->p + 1;
        } else if (*P->p != ' ' && *P->p != '\r' && *P->p != '\t') {
            break;
        }
    }
}

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_u4(Parser *P, uint32_t *out)
{
    if (P->end - P->p < 4)
        return perr(P, "a \\u escape needs four hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex(P->p[i]);
        if (h < 0)
            return perr(P, "a \\u escape needs four hex digits");
        v = v << 4 | (uint32_t)h;
    }
    P->p += 4;
    *out = v;
    return true;
}

/* Parses a string at P->p (on the opening quote) in place: the text is unescaped where it
 * stands (an escape is never shorter than what it stands for) and NUL-terminated over its
 * closing quote; *off is its offset in the input, *len its length. */
static bool parse_string(Parser *P, size_t *off, uint32_t *len)
{
    P->p++;
    char *start = (char *)P->p;
    /* Fast path: no escapes. Non-ASCII bytes are checked as UTF-8 here, so the parser needs no
     * separate pass over the input (outside strings only ASCII is valid JSON anyway). */
    unsigned char hi = 0;
    while (P->p < P->end && *P->p != '"' && *P->p != '\\' && (unsigned char)*P->p >= 0x20)
        hi |= (unsigned char)*P->p++;
    if (hi & 0x80) {
        const char *bad = NULL;
        if (!g_utf8_validate(start, P->p - start, &bad)) {
            P->p = bad;
            return perr(P, "invalid UTF-8 in a string");
        }
    }
    if (P->p < P->end && *P->p == '"') {
        size_t n = (size_t)(P->p - start);
        *(char *)P->p = '\0';
        *off = (size_t)(start - P->s);
        *len = (uint32_t)n;
        P->p++;
        return true;
    }
    char *w = (char *)P->p; /* everything before is already in place */
    for (;;) {
        if (P->p >= P->end)
            return perr(P, "the input ends inside a string");
        unsigned char c = (unsigned char)*P->p;
        if (c == '"') {
            P->p++;
            break;
        }
        if (c < 0x20)
            return perr(P, "a control character inside a string (escape it)");
        if (c >= 0x80) {
            const char *q = P->p;
            gunichar u = g_utf8_get_char_validated(q, P->end - q);
            if (u == (gunichar)-1 || u == (gunichar)-2)
                return perr(P, "invalid UTF-8 in a string");
            const char *nx = g_utf8_next_char(q);
            memmove(w, q, (size_t)(nx - q));
            w += nx - q;
            P->p = nx;
            continue;
        }
        if (c != '\\') {
            *w++ = (char)c;
            P->p++;
            continue;
        }
        P->p++;
        if (P->p >= P->end)
            return perr(P, "the input ends inside an escape");
        char e = *P->p++;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            *w++ = e;
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 't':
            *w++ = '\t';
            break;
        case 'u': {
            uint32_t cp;
            if (!read_u4(P, &cp))
                return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (P->end - P->p < 2 || P->p[0] != '\\' || P->p[1] != 'u')
                    return perr(P, "a lone high surrogate in a \\u escape");
                P->p += 2;
                if (!read_u4(P, &lo))
                    return false;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return perr(P, "a high surrogate not followed by a low one");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return perr(P, "a lone low surrogate in a \\u escape");
            }
            if (cp == 0)
                return perr(P, "\\u0000 inside a string (ranksim keeps strings as C strings)");
            w += g_unichar_to_utf8((gunichar)cp, w);
            break;
        }
        default:
            return perr(P, "an unknown escape in a string");
        }
    }
    /* The closing quote was at P->p - 1 >= w: the NUL fits. */
    *w = '\0';
    size_t n = (size_t)(w - start);
    *off = (size_t)(start - P->s);
    *len = (uint32_t)n;
    return true;
}

static bool parse_number(Parser *P, LiteRef *out)
{
    const char *start = P->p;
    bool neg = false, real = false;
    if (P->p < P->end && *P->p == '-') {
        neg = true;
        P->p++;
    }
    if (P->p >= P->end || !g_ascii_isdigit(*P->p))
        return perr(P, "a malformed number");
    if (*P->p == '0' && P->p + 1 < P->end && g_ascii_isdigit(P->p[1]))
        return perr(P, "a number with a leading zero");
    uint64_t mag = 0;
    bool overflow = false;
    while (P->p < P->end && g_ascii_isdigit(*P->p)) {
        unsigned dgt = (unsigned)(*P->p - '0');
        if (mag > (UINT64_MAX - dgt) / 10)
            overflow = true;
        else
            mag = mag * 10 + dgt;
        P->p++;
    }
    if (P->p < P->end && *P->p == '.') {
        real = true;
        P->p++;
        if (P->p >= P->end || !g_ascii_isdigit(*P->p))
            return perr(P, "a malformed number (digits after '.')");
        while (P->p < P->end && g_ascii_isdigit(*P->p))
            P->p++;
    }
    if (P->p < P->end && (*P->p == 'e' || *P->p == 'E')) {
        real = true;
        P->p++;
        if (P->p < P->end && (*P->p == '+' || *P->p == '-'))
            P->p++;
        if (P->p >= P->end || !g_ascii_isdigit(*P->p))
            return perr(P, "a malformed number (digits after the exponent)");
        while (P->p < P->end && g_ascii_isdigit(*P->p))
            P->p++;
    }
    Val v = {0};
    if (!real) {
        if (overflow || (!neg && mag > (uint64_t)INT64_MAX) ||
            (neg && mag > (uint64_t)INT64_MAX + 1))
            return perr(P, "an integer outside the 64-bit range");
        v.type = LITE_INT;
        v.u.i = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    } else {
        char buf[128];
        size_t n = (size_t)(P->p - start);
        if (n >= sizeof buf)
            return perr(P, "a number of more than 127 characters");
        memcpy(buf, start, n);
        buf[n] = '\0';
        v.type = LITE_DOUBLE;
        v.u.d = g_ascii_strtod(buf, NULL);
    }
    *out = add_val(P->d, v);
    return true;
}

static bool parse_value(Parser *P, LiteRef *out, unsigned depth);

static bool parse_container(Parser *P, LiteRef *out, unsigned depth, bool object)
{
    if (depth >= LITE_MAX_DEPTH)
        return perr(P, "nested more than 512 levels deep");
    P->p++;
    uint64_t n = 0;
    skip_ws(P);
    char close = object ? '}' : ']';
    if (P->p < P->end && *P->p == close) {
        P->p++;
    } else {
        for (;;) {
            uint32_t key = 0;
            skip_ws(P);
            if (object) {
                if (P->p >= P->end || *P->p != '"')
                    return perr(P, "an object key must be a string");
                size_t off;
                uint32_t len;
                if (!parse_string(P, &off, &len))
                    return false;
                key = (uint32_t)off; /* inputs are below 4 GiB */
                skip_ws(P);
                if (P->p >= P->end || *P->p != ':')
                    return perr(P, "':' expected after an object key");
                P->p++;
            }
            LiteRef v;
            if (!parse_value(P, &v, depth + 1))
                return false;
            push_pend(P->d, v, key);
            n++;
            skip_ws(P);
            if (P->p < P->end && *P->p == ',') {
                P->p++;
                continue;
            }
            if (P->p < P->end && *P->p == close) {
                P->p++;
                break;
            }
            return perr(P, object ? "',' or '}' expected" : "',' or ']' expected");
        }
    }
    if (n > UINT32_MAX)
        return perr(P, "a container of more than 2^32 members");
    Val v = {.type = object ? LITE_OBJECT : LITE_ARRAY, .n = (uint32_t)n};
    v.u.off = close_container(P->d, n);
    *out = add_val(P->d, v);
    return true;
}

static bool literal(Parser *P, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, word, n) != 0)
        return perr(P, "an unexpected character (a value expected)");
    P->p += n;
    return true;
}

static bool parse_value(Parser *P, LiteRef *out, unsigned depth)
{
    skip_ws(P);
    if (P->p >= P->end)
        return perr(P, "the input ends where a value is expected");
    if (P->d->nvals >= UINT32_MAX - 2)
        return perr(P, "more than 2^32 values");
    switch (*P->p) {
    case '{':
        return parse_container(P, out, depth, true);
    case '[':
        return parse_container(P, out, depth, false);
    case '"': {
        size_t off;
        uint32_t len;
        if (!parse_string(P, &off, &len))
            return false;
        Val v = {.type = LITE_STRING, .n = len};
        v.u.off = off;
        *out = add_val(P->d, v);
        return true;
    }
    case 't':
    case 'f': {
        bool t = *P->p == 't';
        if (!literal(P, t ? "true" : "false"))
            return false;
        Val v = {.type = LITE_BOOL};
        v.u.b = t;
        *out = add_val(P->d, v);
        return true;
    }
    case 'n': {
        if (!literal(P, "null"))
            return false;
        *out = add_val(P->d, (Val){.type = LITE_NULL});
        return true;
    }
    default:
        return parse_number(P, out);
    }
}

LiteDoc *lite_doc_new(void)
{
    return g_new0(LiteDoc, 1);
}

bool lite_doc_parse_json(LiteDoc *d, char *data, gsize len, const char *what, GError **error)
{
    /* Reuse: the arenas keep their capacity, so a thread parsing many documents stops
     * allocating (and faulting in pages) after the largest one. */
    d->nvals = 0;
    d->nkids = 0;
    d->nstr = 0;
    d->npend = 0;
    d->root = LITE_NONE;
    d->base = data;
    Parser P = {data, data, data + len, 1, data, what, d, error};
    if (len >= UINT32_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: over 4 GiB of JSON", what);
        return false;
    }
    bool ok = parse_value(&P, &d->root, 0);
    if (ok) {
        skip_ws(&P);
        if (P.p != P.end)
            ok = perr(&P, "data after the JSON value");
    }
    if (!ok)
        d->root = LITE_NONE;
    return ok;
}

LiteDoc *lite_parse_json(char *data, gsize len, const char *what, GError **error)
{
    LiteDoc *d = lite_doc_new();
    if (!lite_doc_parse_json(d, data, len, what, error)) {
        lite_free(d);
        return NULL;
    }
    g_clear_pointer(&d->pend, g_free);
    g_clear_pointer(&d->pend_keys, g_free);
    d->cpend = 0;
    return d;
}

/* ---- from json-glib ---- */

static LiteRef from_node(LiteDoc *d, JsonNode *n)
{
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return add_val(d, (Val){.type = LITE_NULL});
    if (JSON_NODE_HOLDS_ARRAY(n)) {
        JsonArray *a = json_node_get_array(n);
        uint32_t k = json_array_get_length(a);
        for (uint32_t i = 0; i < k; i++)
            push_pend(d, from_node(d, json_array_get_element(a, i)), 0);
        Val v = {.type = LITE_ARRAY, .n = k};
        v.u.off = close_container(d, k);
        return add_val(d, v);
    }
    if (JSON_NODE_HOLDS_OBJECT(n)) {
        JsonObject *o = json_node_get_object(n);
        g_autoptr(GList) members = json_object_get_members(o);
        uint32_t k = 0;
        for (GList *m = members; m; m = m->next, k++) {
            size_t off = add_bytes(d, m->data, strlen(m->data));
            push_pend(d, from_node(d, json_object_get_member(o, m->data)), (uint32_t)off);
        }
        Val v = {.type = LITE_OBJECT, .n = k};
        v.u.off = close_container(d, k);
        return add_val(d, v);
    }
    Val v = {0};
    switch (json_node_get_value_type(n)) {
    case G_TYPE_INT64:
        v.type = LITE_INT;
        v.u.i = json_node_get_int(n);
        break;
    case G_TYPE_DOUBLE:
        v.type = LITE_DOUBLE;
        v.u.d = json_node_get_double(n);
        break;
    case G_TYPE_BOOLEAN:
        v.type = LITE_BOOL;
        v.u.b = json_node_get_boolean(n);
        break;
    case G_TYPE_STRING: {
        const char *s = json_node_get_string(n);
        size_t len = strlen(s);
        v.type = LITE_STRING;
        v.n = (uint32_t)MIN(len, (size_t)UINT32_MAX);
        v.u.off = add_bytes(d, s, v.n);
        break;
    }
    default:
        v.type = LITE_NULL;
        break;
    }
    return add_val(d, v);
}

LiteDoc *lite_from_json_node(JsonNode *node)
{
    LiteDoc *d = g_new0(LiteDoc, 1);
    d->root = from_node(d, node);
    d->base = d->str;
    g_clear_pointer(&d->pend, g_free);
    g_clear_pointer(&d->pend_keys, g_free);
    d->cpend = 0;
    return d;
}

/* ---- access ---- */

LiteRef lite_root(const LiteDoc *d)
{
    return d->root;
}

LiteType lite_type(const LiteDoc *d, LiteRef v)
{
    return v == LITE_NONE ? LITE_NULL : (LiteType)d->vals[v].type;
}

uint32_t lite_len(const LiteDoc *d, LiteRef v)
{
    LiteType t = lite_type(d, v);
    return t == LITE_ARRAY || t == LITE_OBJECT ? d->vals[v].n : 0;
}

LiteRef lite_at(const LiteDoc *d, LiteRef v, uint32_t i)
{
    if (i >= lite_len(d, v))
        return LITE_NONE;
    return d->kids[d->vals[v].u.off + i];
}

const char *lite_key_at(const LiteDoc *d, LiteRef v, uint32_t i)
{
    if (lite_type(d, v) != LITE_OBJECT || i >= d->vals[v].n)
        return NULL;
    return d->base + d->keys[d->vals[v].u.off + i];
}

LiteRef lite_get(const LiteDoc *d, LiteRef v, const char *key)
{
    if (lite_type(d, v) != LITE_OBJECT)
        return LITE_NONE;
    const Val *o = &d->vals[v];
    /* The last occurrence wins, as in json-glib and Python. */
    for (uint32_t i = o->n; i-- > 0;)
        if (strcmp(d->base + d->keys[o->u.off + i], key) == 0)
            return d->kids[o->u.off + i];
    return LITE_NONE;
}

bool lite_bool(const LiteDoc *d, LiteRef v)
{
    return lite_type(d, v) == LITE_BOOL && d->vals[v].u.b;
}

int64_t lite_int(const LiteDoc *d, LiteRef v)
{
    LiteType t = lite_type(d, v);
    if (t == LITE_INT)
        return d->vals[v].u.i;
    if (t == LITE_BOOL)
        return d->vals[v].u.b;
    return 0;
}

double lite_double(const LiteDoc *d, LiteRef v)
{
    LiteType t = lite_type(d, v);
    if (t == LITE_DOUBLE)
        return d->vals[v].u.d;
    if (t == LITE_INT)
        return (double)d->vals[v].u.i;
    return 0;
}

const char *lite_str(const LiteDoc *d, LiteRef v)
{
    return lite_type(d, v) == LITE_STRING ? d->base + d->vals[v].u.off : NULL;
}
