/* src/import/pickle.c — the strict pickle reader; see pickle.h.
 *
 * The opcodes run on a stack machine like Python's: a value stack, the open MARKs (each a
 * stack height: the items pushed after it are the only ones an opcode may pop, as with
 * Python's metastack), and the memo. Values live in one array, `vals`; a container holds the
 * ids of its items, so a memo GET, a DUP or a second APPEND of the same list shares it
 * instead of copying it, exactly as Python shares the object. That keeps the run O(input),
 * and it makes a mutation after a GET right without any special case: an APPEND to a list
 * that is also held by a dict is seen there too, as in Python, since nothing is copied before
 * STOP, and nothing can change after it. Copying on GET instead would be wrong for that
 * (the copy would miss later APPENDs) and would make the memo bomb cost memory as it runs.
 *
 * At STOP one walk over the graph (iterative: a deep input cannot overflow the C stack)
 * refuses cycles (a list holding itself has no JSON form), and measures the nesting depth and
 * the size of the expanded tree, each shared reference counted once per use and saturated at
 * the limit. Only when both are within the limits is the JsonNode tree built, recursively
 * (its depth is then at most max_depth).
 *
 * Strings point into the input (binary opcodes) or into `owned` (text opcodes, decoded);
 * each is checked (UTF-8, no NUL) when it is made, so messages point at its opcode.
 */
#include "pickle.h"

#include <gio/gio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "../util/inputfile.h"

typedef enum {
    PV_NONE,
    PV_BOOL,
    PV_INT,
    PV_FLOAT,
    PV_STR,
    PV_BYTES,
    PV_LIST, /* the containers, from here on */
    PV_TUPLE,
    PV_DICT,
} PvKind;

enum { WALK_NEW = 0, WALK_OPEN, WALK_DONE };

typedef struct {
    guint8 kind;    /* PvKind */
    guint8 walk;    /* WALK_*: state in the STOP walk */
    guint16 height; /* walk, containers: containers from this one down, itself included */
    guint32 len;    /* PV_STR, PV_BYTES: bytes */
    gsize at;       /* where the opcode that made it starts */
    union {
        gint64 i;      /* PV_INT; PV_BOOL 0 or 1 */
        double d;      /* PV_FLOAT */
        const char *s; /* PV_STR, PV_BYTES: not NUL-terminated */
        GArray *items; /* containers: guint32 ids (a dict: key, value, key, value, ...);
                          NULL while empty */
    } u;
    guint64 size; /* walk, containers: JSON values it expands to, saturated at
                     max_nodes + 1 */
} PVal;

/* The values every pickle shares (immutable, so sharing them is invisible). */
enum { ID_NONE = 0, ID_TRUE, ID_FALSE, ID_EMPTY_TUPLE, N_FIXED_IDS };

typedef struct {
    guint height; /* stack length when the MARK was pushed */
    gsize at;
} Mark;

typedef struct {
    const guint8 *data;
    gsize len;
    gsize pos;       /* the next byte to read */
    gsize frame_end; /* FRAME: where the current frame ends (0: none yet) */
    const char *what;
    PickleLimits lim;  /* max_nodes: the budget of this input (its size considered) */
    guint expansion;   /* for messages: values per input byte */
    guint64 ceiling;   /* for messages: the budget whatever the size */
    GError **error;
    GArray *vals;     /* PVal, by id */
    GArray *stack;    /* guint32 ids */
    GArray *marks;    /* Mark */
    GHashTable *memo; /* memo index -> id, both GUINT_TO_POINTER */
    GPtrArray *owned; /* decoded strings of the text opcodes */
    GString *scratch; /* NUL-terminates a string for json-glib */
} Parser;

/* clang-format off */
static const char *const op_names[256] = {
    ['('] = "MARK", ['.'] = "STOP", ['0'] = "POP", ['1'] = "POP_MARK", ['2'] = "DUP",
    ['F'] = "FLOAT", ['I'] = "INT", ['J'] = "BININT", ['K'] = "BININT1", ['L'] = "LONG",
    ['M'] = "BININT2", ['N'] = "NONE", ['P'] = "PERSID", ['Q'] = "BINPERSID", ['R'] = "REDUCE",
    ['S'] = "STRING", ['T'] = "BINSTRING", ['U'] = "SHORT_BINSTRING", ['V'] = "UNICODE",
    ['X'] = "BINUNICODE", ['a'] = "APPEND", ['b'] = "BUILD", ['c'] = "GLOBAL", ['d'] = "DICT",
    ['}'] = "EMPTY_DICT", ['e'] = "APPENDS", ['g'] = "GET", ['h'] = "BINGET", ['i'] = "INST",
    ['j'] = "LONG_BINGET", ['l'] = "LIST", [']'] = "EMPTY_LIST", ['o'] = "OBJ", ['p'] = "PUT",
    ['q'] = "BINPUT", ['r'] = "LONG_BINPUT", ['s'] = "SETITEM", ['t'] = "TUPLE",
    [')'] = "EMPTY_TUPLE", ['u'] = "SETITEMS", ['G'] = "BINFLOAT", [0x80] = "PROTO",
    [0x81] = "NEWOBJ", [0x82] = "EXT1", [0x83] = "EXT2", [0x84] = "EXT4", [0x85] = "TUPLE1",
    [0x86] = "TUPLE2", [0x87] = "TUPLE3", [0x88] = "NEWTRUE", [0x89] = "NEWFALSE",
    [0x8a] = "LONG1", [0x8b] = "LONG4", ['B'] = "BINBYTES", ['C'] = "SHORT_BINBYTES",
    [0x8c] = "SHORT_BINUNICODE", [0x8d] = "BINUNICODE8", [0x8e] = "BINBYTES8",
    [0x8f] = "EMPTY_SET", [0x90] = "ADDITEMS", [0x91] = "FROZENSET", [0x92] = "NEWOBJ_EX",
    [0x93] = "STACK_GLOBAL", [0x94] = "MEMOIZE", [0x95] = "FRAME", [0x96] = "BYTEARRAY8",
    [0x97] = "NEXT_BUFFER", [0x98] = "READONLY_BUFFER",
};
/* clang-format on */

static const char *kind_name(guint8 kind)
{
    static const char *const names[] = {"None",  "bool", "int",   "float", "str",
                                        "bytes", "list", "tuple", "dict"};
    g_assert(kind < G_N_ELEMENTS(names));
    return names[kind];
}

static bool is_container(guint8 kind)
{
    return kind >= PV_LIST;
}

/* Sets the error "WHAT: pickle byte AT: REASON" and returns false. */
G_GNUC_PRINTF(3, 4)
static bool fail(Parser *p, gsize at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(p->error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "%s: pickle byte %" G_GSIZE_FORMAT ": %s", p->what, at, why);
    return false;
}

static PVal *val(const Parser *p, guint32 id)
{
    return &g_array_index(p->vals, PVal, id);
}

/* A new value; its id. Pointers from val() are invalid afterwards. */
static guint32 new_val(Parser *p, PvKind kind, gsize at)
{
    PVal v = {.kind = (guint8)kind, .at = at};
    g_array_append_val(p->vals, v);
    return p->vals->len - 1;
}

static void push(Parser *p, guint32 id)
{
    g_array_append_val(p->stack, id);
}

/* The stack height below which the innermost open MARK hides the values. */
static guint frame_base(const Parser *p)
{
    return p->marks->len ? g_array_index(p->marks, Mark, p->marks->len - 1).height : 0;
}

static bool underflow(Parser *p, gsize at, const char *op)
{
    if (p->marks->len)
        return fail(p, at,
                    "stack underflow: %s needs a value and there is none after the MARK "
                    "at byte %" G_GSIZE_FORMAT,
                    op, g_array_index(p->marks, Mark, p->marks->len - 1).at);
    return fail(p, at, "stack underflow: %s needs a value and the stack is empty", op);
}

static bool pop(Parser *p, gsize at, const char *op, guint32 *id)
{
    if (p->stack->len <= frame_base(p))
        return underflow(p, at, op);
    *id = g_array_index(p->stack, guint32, p->stack->len - 1);
    g_array_set_size(p->stack, p->stack->len - 1);
    return true;
}

static bool top(Parser *p, gsize at, const char *op, guint32 *id)
{
    if (p->stack->len <= frame_base(p))
        return underflow(p, at, op);
    *id = g_array_index(p->stack, guint32, p->stack->len - 1);
    return true;
}

/* Closes the innermost MARK: *from is where its items start on the stack (they stay there
 * for the caller to take, then g_array_set_size(stack, *from)). */
static bool pop_mark(Parser *p, gsize at, const char *op, guint *from)
{
    if (!p->marks->len)
        return fail(p, at, "%s without a MARK before it", op);
    *from = g_array_index(p->marks, Mark, p->marks->len - 1).height;
    g_array_set_size(p->marks, p->marks->len - 1);
    return true;
}

static guint32 stack_at(const Parser *p, guint i)
{
    return g_array_index(p->stack, guint32, i);
}

static void add_items(Parser *p, guint32 container, const guint32 *ids, guint n)
{
    if (!n)
        return;
    PVal *c = val(p, container);
    if (!c->u.items)
        c->u.items = g_array_sized_new(FALSE, FALSE, sizeof(guint32), n);
    g_array_append_vals(c->u.items, ids, n);
}

/* Moves the stack's values from `from` up into `container`. */
static void add_from_stack(Parser *p, guint32 container, guint from)
{
    guint n = p->stack->len - from;
    if (n) /* (an empty stack may have no buffer at all: no pointer into it then) */
        add_items(p, container, &g_array_index(p->stack, guint32, from), n);
    g_array_set_size(p->stack, from);
}

/* ---- reading the input ---- */

static guint64 read_le(const guint8 *b, guint n)
{
    guint64 v = 0;
    for (guint i = n; i-- > 0;)
        v = v << 8 | b[i];
    return v;
}

/* Whether `n` more bytes are there for `op`'s `part`; else the truncation error. */
static bool need(Parser *p, gsize at, const char *op, guint64 n, const char *part)
{
    if (n <= p->len - p->pos)
        return true;
    return fail(p, at,
                "truncated: %s needs %" G_GUINT64_FORMAT " bytes of %s, %" G_GSIZE_FORMAT " left",
                op, n, part, p->len - p->pos);
}

/* A little-endian length of `width` bytes (BINSTRING's and LONG4's are signed). */
static bool read_len(Parser *p, gsize at, const char *op, guint width, bool is_signed, guint64 *n)
{
    if (!need(p, at, op, width, "length"))
        return false;
    *n = read_le(p->data + p->pos, width);
    p->pos += width;
    if (is_signed && width == 4 && *n >= G_GUINT64_CONSTANT(0x80000000))
        return fail(p, at, "%s has a negative length", op);
    return true;
}

/* The text argument of a protocol 0 opcode: up to its '\n' (excluded); pos moves past it. */
static bool read_line(Parser *p, gsize at, const char *op, const char **s, gsize *n)
{
    const guint8 *start = p->data + p->pos;
    const guint8 *nl = p->pos < p->len ? memchr(start, '\n', p->len - p->pos) : NULL;
    if (!nl)
        return fail(p, at, "truncated: %s's text argument has no end of line", op);
    *s = (const char *)start;
    *n = (gsize)(nl - start);
    p->pos += *n + 1;
    return true;
}

/* `s` (`n` bytes, not NUL-terminated) for a message, escaped and cut. Caller frees. */
static char *shown(const char *s, gsize n)
{
    g_autofree char *z = g_strndup(s, MIN(n, (gsize)200));
    return input_escape(z, 60);
}

typedef enum { DEC_OK, DEC_BAD, DEC_RANGE } DecResult;

/* A decimal integer with an optional sign, all of `s`. */
static DecResult parse_dec(const char *s, gsize n, gint64 *out)
{
    gsize i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return DEC_BAD;
    guint64 lim = neg ? (guint64)G_MAXINT64 + 1 : (guint64)G_MAXINT64, mag = 0;
    bool range = false;
    for (; i < n; i++) {
        if (!g_ascii_isdigit(s[i]))
            return DEC_BAD;
        guint d = (guint)(s[i] - '0');
        if (mag > (lim - d) / 10)
            range = true;
        else
            mag = mag * 10 + d;
    }
    if (range)
        return DEC_RANGE;
    if (!neg)
        *out = (gint64)mag;
    else
        *out = mag == (guint64)G_MAXINT64 + 1 ? G_MININT64 : -(gint64)mag;
    return DEC_OK;
}

/* A little-endian two's complement int of `n` bytes (LONG1, LONG4), if it fits int64. */
static bool long_value(const guint8 *b, guint64 n, gint64 *out)
{
    if (n == 0) {
        *out = 0;
        return true;
    }
    bool neg = (b[n - 1] & 0x80) != 0;
    for (guint64 k = n; k > 8; k--)
        if (b[k - 1] != (neg ? 0xff : 0x00))
            return false;
    if (n > 8 && ((b[7] & 0x80) != 0) != neg)
        return false;
    guint w = (guint)MIN(n, (guint64)8);
    guint64 u = read_le(b, w);
    if (neg && w < 8)
        u |= G_MAXUINT64 << (8 * w);
    *out = u > (guint64)G_MAXINT64 ? -(gint64)(~u) - 1 : (gint64)u;
    return true;
}

/* ---- values ---- */

static bool push_int(Parser *p, gsize at, gint64 v)
{
    guint32 id = new_val(p, PV_INT, at);
    val(p, id)->u.i = v;
    push(p, id);
    return true;
}

static bool push_float(Parser *p, gsize at, double d)
{
    guint32 id = new_val(p, PV_FLOAT, at);
    val(p, id)->u.d = d;
    push(p, id);
    return true;
}

/* A str or bytes value of `n` bytes at `s` (which outlives the parser's values), checked:
 * UTF-8, no NUL. */
static bool push_text(Parser *p, gsize at, const char *op, PvKind kind, const char *s, gsize n)
{
    const char *what = kind == PV_STR ? "a str" : "bytes";
    const char *nul = memchr(s, '\0', n);
    const char *end = NULL;
    if (!g_utf8_validate_len(s, n, &end) && (!nul || end < nul)) {
        gsize off = (gsize)(end - s);
        const guint8 *u = (const guint8 *)end;
        if (u[0] == 0xed && off + 1 < n && u[1] >= 0xa0 && u[1] <= 0xbf)
            return fail(p, at,
                        "%s (%s) holding a lone surrogate (bytes 0xed 0x%02x, %" G_GSIZE_FORMAT
                        " bytes into it), which is not UTF-8",
                        what, op, (unsigned)u[1], off);
        return fail(p, at,
                    "%s (%s) that is not valid UTF-8 (byte 0x%02x, %" G_GSIZE_FORMAT
                    " bytes into it)%s",
                    what, op, (unsigned)u[0], off,
                    kind == PV_BYTES ? "; ranksim reads bytes only as UTF-8 text" : "");
    }
    if (nul)
        return fail(p, at,
                    "%s (%s) holding a NUL character (%" G_GSIZE_FORMAT " bytes into it); "
                    "ranksim refuses NUL in text",
                    what, op, (gsize)(nul - s));
    guint32 id = new_val(p, kind, at);
    PVal *v = val(p, id);
    v->u.s = s;
    v->len = (guint32)n;
    push(p, id);
    return true;
}

/* BINUNICODE and kin: a length of `width` bytes, then the bytes. */
static bool push_counted(Parser *p, gsize at, const char *op, PvKind kind, guint width,
                         bool is_signed)
{
    guint64 n = 0;
    if (!read_len(p, at, op, width, is_signed, &n) ||
        !need(p, at, op, n, kind == PV_BYTES ? "bytes" : "string"))
        return false;
    const char *s = (const char *)p->data + p->pos;
    p->pos += (gsize)n;
    return push_text(p, at, op, kind, s, (gsize)n);
}

static char *own(Parser *p, GString *s)
{
    char *str = g_string_free(s, FALSE);
    g_ptr_array_add(p->owned, str);
    return str;
}

static int hex_digit(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* UNICODE: raw-unicode-escape text (Latin-1 bytes, \uXXXX and \UXXXXXXXX escapes), as
 * CPython decodes it. */
static bool push_unicode(Parser *p, gsize at)
{
    const char *s = NULL; /* set by read_line (GCC -O3 cannot see it) */
    gsize n = 0;
    if (!read_line(p, at, "UNICODE", &s, &n))
        return false;
    GString *o = g_string_sized_new(n + 1);
    for (gsize i = 0; i < n;) {
        guchar c = (guchar)s[i++];
        if (c != '\\' || i == n) {
            g_string_append_unichar(o, c);
            continue;
        }
        guchar e = (guchar)s[i++];
        if (e != 'u' && e != 'U') {
            g_string_append_c(o, '\\');
            g_string_append_unichar(o, e);
            continue;
        }
        gsize digits = e == 'u' ? 4 : 8;
        gunichar cp = 0;
        for (gsize k = 0; k < digits; k++) {
            int d = i + k < n ? hex_digit(s[i + k]) : -1;
            if (d < 0) {
                g_string_free(o, TRUE);
                return fail(p, at,
                            "UNICODE: a truncated \\%c escape %" G_GSIZE_FORMAT
                            " bytes into the text",
                            e, i - 2);
            }
            cp = cp << 4 | (gunichar)d;
        }
        i += digits;
        const char *bad = cp > 0x10ffff                    ? "beyond U+10FFFF"
                          : (cp >= 0xd800 && cp <= 0xdfff) ? "a lone surrogate, not UTF-8"
                          : cp == 0 ? "a NUL character; ranksim refuses NUL in text"
                                    : NULL;
        if (bad) {
            g_string_free(o, TRUE);
            return fail(p, at, "UNICODE: the escape \\%c%0*x is %s", e, (int)digits, cp, bad);
        }
        g_string_append_unichar(o, cp);
    }
    gsize len = o->len;
    return push_text(p, at, "UNICODE", PV_STR, own(p, o), len);
}

/* STRING: a Python 2 str literal, quoted, with the escapes of codecs.escape_decode. */
static bool push_string(Parser *p, gsize at)
{
    const char *s = NULL; /* set by read_line (GCC -O3 cannot see it) */
    gsize n = 0;
    if (!read_line(p, at, "STRING", &s, &n))
        return false;
    if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
        return fail(p, at, "STRING's argument is not quoted");
    s++;
    n -= 2;
    GString *o = g_string_sized_new(n + 1);
    for (gsize i = 0; i < n;) {
        char c = s[i++];
        if (c != '\\') {
            g_string_append_c(o, c);
            continue;
        }
        if (i == n) {
            g_string_free(o, TRUE);
            return fail(p, at, "STRING: a trailing \\ in the string");
        }
        char e = s[i++];
        static const char plain[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
        const char *m = NULL;
        for (gsize k = 0; k + 1 < sizeof plain; k += 2)
            if (plain[k] == e)
                m = &plain[k + 1];
        if (m) {
            g_string_append_c(o, *m);
        } else if (e >= '0' && e <= '7') {
            guint v = (guint)(e - '0');
            for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
                v = v * 8 + (guint)(s[i++] - '0');
            g_string_append_c(o, (char)(v & 0xff));
        } else if (e == 'x') {
            int hi = i < n ? hex_digit(s[i]) : -1, lo = i + 1 < n ? hex_digit(s[i + 1]) : -1;
            if (hi < 0 || lo < 0) {
                g_string_free(o, TRUE);
                return fail(p, at,
                            "STRING: an invalid \\x escape %" G_GSIZE_FORMAT
                            " bytes into the string",
                            i - 2);
            }
            g_string_append_c(o, (char)(hi << 4 | lo));
            i += 2;
        } else {
            g_string_append_c(o, '\\');
            g_string_append_c(o, e);
        }
    }
    gsize len = o->len;
    return push_text(p, at, "STRING", PV_STR, own(p, o), len);
}

/* INT and LONG (text): decimal; INT's "00" and "01" are False and True. */
static bool push_text_int(Parser *p, gsize at, const char *op)
{
    const char *s = NULL; /* set by read_line (GCC -O3 cannot see it) */
    gsize n = 0;
    if (!read_line(p, at, op, &s, &n))
        return false;
    if (op[0] == 'I' && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) {
        push(p, s[1] == '1' ? ID_TRUE : ID_FALSE);
        return true;
    }
    if (op[0] == 'L' && n && s[n - 1] == 'L')
        n--;
    gint64 v;
    DecResult r = parse_dec(s, n, &v);
    if (r == DEC_OK)
        return push_int(p, at, v);
    g_autofree char *arg = shown(s, n);
    if (r == DEC_RANGE)
        return fail(p, at, "%s %s is beyond int64 (-2**63 .. 2**63-1)", op, arg);
    return fail(p, at, "%s's argument '%s' is not a decimal integer", op, arg);
}

static bool push_text_float(Parser *p, gsize at)
{
    const char *s = NULL; /* set by read_line (GCC -O3 cannot see it) */
    gsize n = 0;
    if (!read_line(p, at, "FLOAT", &s, &n))
        return false;
    g_autofree char *z = g_strndup(s, n);
    char *end = NULL;
    double d = n ? g_ascii_strtod(z, &end) : 0;
    if (!n || end != z + n || strpbrk(z, "xX") || g_ascii_isspace(z[0])) {
        g_autofree char *arg = input_escape(z, 60);
        return fail(p, at, "FLOAT's argument '%s' is not a number", arg);
    }
    return push_float(p, at, d);
}

/* The memo index of GET and PUT (text). */
static bool text_index(Parser *p, gsize at, const char *op, guint32 *idx)
{
    const char *s = NULL; /* set by read_line (GCC -O3 cannot see it) */
    gsize n = 0;
    if (!read_line(p, at, op, &s, &n))
        return false;
    gint64 v;
    if (parse_dec(s, n, &v) != DEC_OK || v < 0 || v > (gint64)G_MAXUINT32) {
        g_autofree char *arg = shown(s, n);
        return fail(p, at, "%s's memo index '%s' is not a number from 0 to 4294967295", op, arg);
    }
    *idx = (guint32)v;
    return true;
}

static bool memo_put(Parser *p, gsize at, const char *op, guint32 idx)
{
    guint32 id = 0;
    if (!top(p, at, op, &id))
        return false;
    g_hash_table_insert(p->memo, GUINT_TO_POINTER(idx), GUINT_TO_POINTER(id));
    return true;
}

static bool memo_get(Parser *p, gsize at, const char *op, guint32 idx)
{
    gpointer id;
    if (!g_hash_table_lookup_extended(p->memo, GUINT_TO_POINTER(idx), NULL, &id))
        return fail(p, at, "%s of memo index %u, which no PUT stored", op, idx);
    push(p, GPOINTER_TO_UINT(id));
    return true;
}

/* ---- containers ---- */

static bool check_key(Parser *p, gsize at, const char *op, guint32 key)
{
    guint8 k = val(p, key)->kind;
    if (k == PV_STR || k == PV_INT)
        return true;
    return fail(p, at,
                "%s: a dict key of type %s; a Flight Recorder dump's keys are str "
                "(or int)",
                op, kind_name(k));
}

/* The container on top of the stack, which must be a `kind`. */
static bool target(Parser *p, gsize at, const char *op, PvKind kind, guint32 *id)
{
    if (!top(p, at, op, id))
        return false;
    guint8 k = val(p, *id)->kind;
    if (k != kind)
        return fail(p, at, "%s to a %s: only a %s takes it", op, kind_name(k), kind_name(kind));
    return true;
}

/* LIST, TUPLE, DICT: a new container of the items after the MARK. */
static bool build_from_mark(Parser *p, gsize at, const char *op, PvKind kind)
{
    guint from = 0;
    if (!pop_mark(p, at, op, &from))
        return false;
    guint n = p->stack->len - from;
    if (kind == PV_DICT) {
        if (n % 2)
            return fail(p, at,
                        "%s of an odd number of items (%u): keys and values come in "
                        "pairs",
                        op, n);
        for (guint i = from; i < p->stack->len; i += 2)
            if (!check_key(p, at, op, stack_at(p, i)))
                return false;
    }
    guint32 id = kind == PV_TUPLE && !n ? ID_EMPTY_TUPLE : new_val(p, kind, at);
    add_from_stack(p, id, from);
    push(p, id);
    return true;
}

/* APPENDS, SETITEMS: the items after the MARK into the container below it. */
static bool extend_from_mark(Parser *p, gsize at, const char *op, PvKind kind)
{
    guint from = 0;
    if (!pop_mark(p, at, op, &from))
        return false;
    guint n = p->stack->len - from;
    if (from <= frame_base(p))
        return fail(p, at, "stack underflow: %s has no %s before its MARK", op, kind_name(kind));
    guint32 c = stack_at(p, from - 1);
    guint8 k = val(p, c)->kind;
    if (k != kind)
        return fail(p, at, "%s to a %s: only a %s takes it", op, kind_name(k), kind_name(kind));
    if (kind == PV_DICT) {
        if (n % 2)
            return fail(p, at,
                        "%s of an odd number of items (%u): keys and values come in "
                        "pairs",
                        op, n);
        for (guint i = from; i < p->stack->len; i += 2)
            if (!check_key(p, at, op, stack_at(p, i)))
                return false;
    }
    add_from_stack(p, c, from);
    return true;
}

static bool tuple_n(Parser *p, gsize at, const char *op, guint n)
{
    if (p->stack->len - frame_base(p) < n)
        return underflow(p, at, op);
    guint from = p->stack->len - n;
    guint32 id = new_val(p, PV_TUPLE, at);
    add_from_stack(p, id, from);
    push(p, id);
    return true;
}

/* ---- refusals ---- */

#define REFUSED_WHY                                                                                \
    "a Flight Recorder dump holds only dict, list, tuple, str, bytes, int, float, bool and "       \
    "None; ranksim never imports or calls anything from a pickle"

/* What the refused opcode at `at` names, when it says: " for MODULE.NAME", " (a set)". */
static char *refused_detail(Parser *p, guint8 op)
{
    if (op == 'c' || op == 'i') {
        /* GLOBAL, INST: "MODULE\nNAME\n" follow; shown when both are there, never used. */
        const guint8 *s = p->data + p->pos, *end = p->data + p->len;
        const guint8 *nl1 = p->pos < p->len ? memchr(s, '\n', (gsize)(end - s)) : NULL;
        const guint8 *nl2 =
            nl1 && nl1 + 1 < end ? memchr(nl1 + 1, '\n', (gsize)(end - nl1 - 1)) : NULL;
        if (!nl2)
            return g_strdup("");
        g_autofree char *mod = shown((const char *)s, (gsize)(nl1 - s));
        g_autofree char *name = shown((const char *)nl1 + 1, (gsize)(nl2 - nl1 - 1));
        return g_strdup_printf(" for %s.%s", mod, name);
    }
    if (op == 0x93 && p->stack->len >= frame_base(p) + 2) {
        const PVal *mod = val(p, stack_at(p, p->stack->len - 2));
        const PVal *name = val(p, stack_at(p, p->stack->len - 1));
        if (mod->kind != PV_STR || name->kind != PV_STR)
            return g_strdup("");
        g_autofree char *m = shown(mod->u.s, mod->len), *n = shown(name->u.s, name->len);
        return g_strdup_printf(" for %s.%s", m, n);
    }
    if (op == 0x8f || op == 0x90 || op == 0x91)
        return g_strdup(" (a set)");
    if (op == 0x97 || op == 0x98)
        return g_strdup(" (an out-of-band buffer)");
    return g_strdup("");
}

static bool refuse(Parser *p, gsize at, guint8 op)
{
    if (!op_names[op])
        return fail(p, at,
                    "unknown opcode 0x%02x: not a pickle of protocol 0 to 5, or a "
                    "corrupt one",
                    (unsigned)op);
    g_autofree char *detail = refused_detail(p, op);
    return fail(p, at, "opcode %s (0x%02x)%s refused: " REFUSED_WHY, op_names[op], (unsigned)op,
                detail);
}

/* ---- the opcodes ---- */

/* Runs the opcode `op` that starts at `at` (pos is past it). */
static bool step(Parser *p, gsize at, guint8 op)
{
    const char *name = op_names[op];
    guint32 a = 0, b = 0, c = 0, idx = 0;
    guint64 n = 0;
    guint from = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if (!need(p, at, name, 1, "version"))
            return false;
        if (p->data[p->pos] > 5)
            return fail(p, at, "protocol %u: ranksim reads protocols 0 to 5",
                        (unsigned)p->data[p->pos]);
        p->pos++;
        return true;
    case 0x95: /* FRAME: a length the opcodes that follow must fit in */
        if (at < p->frame_end)
            return fail(p, at, "a FRAME inside the frame that ends at byte %" G_GSIZE_FORMAT,
                        p->frame_end);
        if (!read_len(p, at, name, 8, false, &n))
            return false;
        if (n > p->len - p->pos)
            return fail(p, at,
                        "truncated: a FRAME of %" G_GUINT64_FORMAT " bytes, %" G_GSIZE_FORMAT
                        " left",
                        n, p->len - p->pos);
        p->frame_end = p->pos + (gsize)n;
        return true;
    case '(': {
        Mark m = {p->stack->len, at};
        g_array_append_val(p->marks, m);
        return true;
    }
    case '0': /* POP: as in Python, with nothing after the MARK it drops the MARK */
        if (p->stack->len > frame_base(p))
            g_array_set_size(p->stack, p->stack->len - 1);
        else if (p->marks->len)
            g_array_set_size(p->marks, p->marks->len - 1);
        else
            return underflow(p, at, name);
        return true;
    case '1': /* POP_MARK */
        if (!pop_mark(p, at, name, &from))
            return false;
        g_array_set_size(p->stack, from);
        return true;
    case '2': /* DUP: the same object again, not a copy */
        if (!top(p, at, name, &a))
            return false;
        push(p, a);
        return true;

    case 'N':
        push(p, ID_NONE);
        return true;
    case 0x88:
        push(p, ID_TRUE);
        return true;
    case 0x89:
        push(p, ID_FALSE);
        return true;
    case 'I':
    case 'L':
        return push_text_int(p, at, name);
    case 'J':
        if (!need(p, at, name, 4, "int"))
            return false;
        n = read_le(p->data + p->pos, 4);
        p->pos += 4;
        return push_int(p, at,
                        n >= 0x80000000u ? (gint64)n - G_GINT64_CONSTANT(0x100000000) : (gint64)n);
    case 'K':
    case 'M': {
        guint w = op == 'K' ? 1 : 2;
        if (!need(p, at, name, w, "int"))
            return false;
        n = read_le(p->data + p->pos, w);
        p->pos += w;
        return push_int(p, at, (gint64)n);
    }
    case 0x8a:   /* LONG1 */
    case 0x8b: { /* LONG4 */
        gint64 v;
        if (!read_len(p, at, name, op == 0x8a ? 1 : 4, true, &n) || !need(p, at, name, n, "int"))
            return false;
        bool fits = long_value(p->data + p->pos, n, &v);
        p->pos += (gsize)n;
        if (!fits)
            return fail(p, at,
                        "%s: an int of %" G_GUINT64_FORMAT " bytes beyond int64 "
                        "(-2**63 .. 2**63-1)",
                        name, n);
        return push_int(p, at, v);
    }
    case 'F':
        return push_text_float(p, at);
    case 'G': {
        if (!need(p, at, name, 8, "float"))
            return false;
        guint64 bits = 0;
        for (guint i = 0; i < 8; i++)
            bits = bits << 8 | p->data[p->pos + i];
        p->pos += 8;
        double d;
        memcpy(&d, &bits, sizeof d);
        return push_float(p, at, d);
    }

    case 'X':
        return push_counted(p, at, name, PV_STR, 4, false);
    case 0x8c:
        return push_counted(p, at, name, PV_STR, 1, false);
    case 0x8d:
        return push_counted(p, at, name, PV_STR, 8, false);
    case 'V':
        return push_unicode(p, at);
    case 'S':
        return push_string(p, at);
    case 'T': /* Python 2 str, read as str (as Python 3 does) */
        return push_counted(p, at, name, PV_STR, 4, true);
    case 'U':
        return push_counted(p, at, name, PV_STR, 1, false);
    case 'B':
        return push_counted(p, at, name, PV_BYTES, 4, false);
    case 'C':
        return push_counted(p, at, name, PV_BYTES, 1, false);
    case 0x8e:
    case 0x96: /* BYTEARRAY8 */
        return push_counted(p, at, name, PV_BYTES, 8, false);

    case ']':
        push(p, new_val(p, PV_LIST, at));
        return true;
    case '}':
        push(p, new_val(p, PV_DICT, at));
        return true;
    case ')':
        push(p, ID_EMPTY_TUPLE);
        return true;
    case 'l':
        return build_from_mark(p, at, name, PV_LIST);
    case 't':
        return build_from_mark(p, at, name, PV_TUPLE);
    case 'd':
        return build_from_mark(p, at, name, PV_DICT);
    case 0x85:
    case 0x86:
    case 0x87:
        return tuple_n(p, at, name, (guint)(op - 0x84));
    case 'a':
        if (!pop(p, at, name, &a) || !target(p, at, name, PV_LIST, &b))
            return false;
        add_items(p, b, &a, 1);
        return true;
    case 'e':
        return extend_from_mark(p, at, name, PV_LIST);
    case 's': {
        if (!pop(p, at, name, &b) || !pop(p, at, name, &a) || !check_key(p, at, name, a) ||
            !target(p, at, name, PV_DICT, &c))
            return false;
        guint32 kv[2] = {a, b};
        add_items(p, c, kv, 2);
        return true;
    }
    case 'u':
        return extend_from_mark(p, at, name, PV_DICT);

    case 'p':
        return text_index(p, at, name, &idx) && memo_put(p, at, name, idx);
    case 'q':
    case 'r':
        if (!need(p, at, name, op == 'q' ? 1 : 4, "memo index"))
            return false;
        idx = (guint32)read_le(p->data + p->pos, op == 'q' ? 1 : 4);
        p->pos += op == 'q' ? 1 : 4;
        return memo_put(p, at, name, idx);
    case 0x94: /* MEMOIZE: the next index, as Python's len(memo) */
        return memo_put(p, at, name, g_hash_table_size(p->memo));
    case 'g':
        return text_index(p, at, name, &idx) && memo_get(p, at, name, idx);
    case 'h':
    case 'j':
        if (!need(p, at, name, op == 'h' ? 1 : 4, "memo index"))
            return false;
        idx = (guint32)read_le(p->data + p->pos, op == 'h' ? 1 : 4);
        p->pos += op == 'h' ? 1 : 4;
        return memo_get(p, at, name, idx);

    default:
        return refuse(p, at, op);
    }
}

/* ---- STOP: the walk, then the tree ---- */

static bool too_deep(Parser *p, const PVal *v)
{
    return fail(p, v->at, "containers nested more than %u deep (through the %s made here)",
                p->lim.max_depth, kind_name(v->kind));
}

/* What a leaf costs in the tree, in values: one, and one more per 64 bytes of a string (a
 * shared 1 KB string copied a million times is a gigabyte, not a million values). */
static guint64 leaf_weight(const PVal *v)
{
    return v->kind == PV_STR || v->kind == PV_BYTES ? 1 + v->len / 64 : 1;
}

/* Refuses cycles, nesting beyond max_depth and trees over max_nodes; sets the walk fields. */
static bool walk(Parser *p, guint32 root)
{
    if (!is_container(val(p, root)->kind))
        return true;
    typedef struct {
        guint32 id;
        guint next; /* the next item to visit (a dict's values only: odd indices) */
    } Step;
    g_autoptr(GArray) path = g_array_new(FALSE, FALSE, sizeof(Step));
    guint64 cap = p->lim.max_nodes + 1;
    Step first = {root, val(p, root)->kind == PV_DICT};
    val(p, root)->walk = WALK_OPEN;
    g_array_append_val(path, first);
    while (path->len) {
        Step *s = &g_array_index(path, Step, path->len - 1);
        PVal *v = val(p, s->id);
        GArray *items = v->u.items;
        guint stride = v->kind == PV_DICT ? 2 : 1;
        if (items && s->next < items->len) {
            PVal *cv = val(p, g_array_index(items, guint32, s->next));
            Step next = {g_array_index(items, guint32, s->next), cv->kind == PV_DICT};
            s->next += stride;
            if (!is_container(cv->kind))
                continue;
            if (cv->walk == WALK_OPEN)
                return fail(p, cv->at,
                            "the %s made here contains itself: a cycle has no JSON "
                            "form",
                            kind_name(cv->kind));
            if (cv->walk == WALK_DONE) {
                if (path->len + cv->height > p->lim.max_depth)
                    return too_deep(p, cv);
                continue;
            }
            if (path->len + 1 > p->lim.max_depth)
                return too_deep(p, cv);
            cv->walk = WALK_OPEN;
            g_array_append_val(path, next);
            continue;
        }
        guint64 size = 1;
        guint height = 0;
        for (guint i = v->kind == PV_DICT; items && i < items->len; i += stride) {
            const PVal *cv = val(p, g_array_index(items, guint32, i));
            size = MIN(size + (is_container(cv->kind) ? cv->size : leaf_weight(cv)), cap);
            height = MAX(height, (guint)cv->height);
        }
        v->size = size;
        v->height = (guint16)(height + 1);
        v->walk = WALK_DONE;
        if (size > p->lim.max_nodes)
            return fail(p, v->at,
                        "the %s made here expands to more than %" G_GUINT64_FORMAT
                        " values once each shared reference (memo GET) is copied: a memo "
                        "bomb? (the ceiling: %u values per pickle byte, at least %u, at most "
                        "%" G_GUINT64_FORMAT ")",
                        kind_name(v->kind), p->lim.max_nodes, p->expansion, PICKLE_MIN_NODES,
                        p->ceiling);
        g_array_set_size(path, path->len - 1);
    }
    return true;
}

/* A dict key as a JSON member name. Caller frees. */
static char *key_name(const Parser *p, guint32 key)
{
    const PVal *k = val(p, key);
    if (k->kind == PV_INT)
        return g_strdup_printf("%" G_GINT64_FORMAT, k->u.i);
    return g_strndup(k->u.s, k->len);
}

static JsonNode *build(Parser *p, guint32 id);

/* A dict with a repeated key: each name in its first place with its last value, as a Python
 * dict; an int and a str key with the same text are refused (they are two keys in Python). */
static JsonNode *build_dict_repeats(Parser *p, const PVal *v)
{
    GArray *items = v->u.items;
    /* name -> index of its last pair + 1; G_MAXUINT once written */
    g_autoptr(GHashTable) last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < items->len; i += 2) {
        guint32 key = g_array_index(items, guint32, i);
        char *name = key_name(p, key);
        gpointer prev = g_hash_table_lookup(last, name);
        guint32 pkey = prev ? g_array_index(items, guint32, 2 * (GPOINTER_TO_UINT(prev) - 1)) : 0;
        if (prev && val(p, pkey)->kind != val(p, key)->kind) {
            g_autofree char *shown_name = input_escape(name, 60);
            bool int_first = val(p, pkey)->kind == PV_INT;
            fail(p, val(p, key)->at,
                 "the dict keys %s%s%s (%s, made at byte %" G_GSIZE_FORMAT
                 ") and %s%s%s (%s) are both the JSON member \"%s\"; ranksim cannot keep both",
                 int_first ? "" : "'", shown_name, int_first ? "" : "'", int_first ? "int" : "str",
                 val(p, pkey)->at, int_first ? "'" : "", shown_name, int_first ? "'" : "",
                 int_first ? "str" : "int", shown_name);
            g_free(name);
            return NULL;
        }
        g_hash_table_insert(last, name, GUINT_TO_POINTER(i / 2 + 1));
    }
    g_autoptr(JsonObject) o = json_object_new();
    for (guint i = 0; i < items->len; i += 2) {
        g_autofree char *name = key_name(p, g_array_index(items, guint32, i));
        guint pair = GPOINTER_TO_UINT(g_hash_table_lookup(last, name));
        if (pair == G_MAXUINT)
            continue;
        JsonNode *c = build(p, g_array_index(items, guint32, 2 * (pair - 1) + 1));
        if (!c)
            return NULL;
        json_object_set_member(o, name, c);
        g_hash_table_insert(last, g_strdup(name), GUINT_TO_POINTER(G_MAXUINT));
    }
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, g_steal_pointer(&o));
    return node;
}

static JsonNode *build_dict(Parser *p, const PVal *v)
{
    GArray *items = v->u.items;
    g_autoptr(JsonObject) o = json_object_new();
    for (guint i = 0; items && i < items->len; i += 2) {
        g_autofree char *name = key_name(p, g_array_index(items, guint32, i));
        /* Repeats are rare (Python's pickler never writes them): start again the slow way,
         * so json-glib never replaces a member (an O(members) scan each time). */
        if (json_object_has_member(o, name))
            return build_dict_repeats(p, v);
        JsonNode *c = build(p, g_array_index(items, guint32, i + 1));
        if (!c)
            return NULL;
        json_object_set_member(o, name, c);
    }
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, g_steal_pointer(&o));
    return node;
}

/* The JSON tree of `id`; NULL with the error set (a key clash). Depth <= max_depth (walked). */
static JsonNode *build(Parser *p, guint32 id)
{
    const PVal *v = val(p, id);
    JsonNode *node;
    switch ((PvKind)v->kind) {
    case PV_NONE:
        return json_node_init_null(json_node_alloc());
    case PV_BOOL:
        return json_node_init_boolean(json_node_alloc(), v->u.i != 0);
    case PV_INT:
        return json_node_init_int(json_node_alloc(), v->u.i);
    case PV_FLOAT:
        return json_node_init_double(json_node_alloc(), v->u.d);
    case PV_STR:
    case PV_BYTES:
        g_string_truncate(p->scratch, 0);
        g_string_append_len(p->scratch, v->u.s, v->len);
        return json_node_init_string(json_node_alloc(), p->scratch->str);
    case PV_LIST:
    case PV_TUPLE: {
        guint n = v->u.items ? v->u.items->len : 0;
        g_autoptr(JsonArray) a = json_array_sized_new(n);
        for (guint i = 0; i < n; i++) {
            JsonNode *c = build(p, g_array_index(v->u.items, guint32, i));
            if (!c)
                return NULL;
            json_array_add_element(a, c);
        }
        node = json_node_new(JSON_NODE_ARRAY);
        json_node_take_array(node, g_steal_pointer(&a));
        return node;
    }
    case PV_DICT:
        return build_dict(p, v);
    }
    g_assert_not_reached();
}

/* Runs the opcodes up to STOP; the tree. */
static JsonNode *run(Parser *p)
{
    if (p->len == 0) {
        fail(p, 0, "truncated: the input is empty");
        return NULL;
    }
    for (;;) {
        if (p->pos >= p->len) {
            fail(p, p->len, "truncated: the input ends before STOP");
            return NULL;
        }
        gsize at = p->pos;
        guint8 op = p->data[p->pos++];
        if (op != '.') {
            if (!step(p, at, op))
                return NULL;
            continue;
        }
        guint32 root;
        if (!pop(p, at, "STOP", &root))
            return NULL;
        if (p->marks->len) {
            fail(p, at, "STOP inside the MARK at byte %" G_GSIZE_FORMAT,
                 g_array_index(p->marks, Mark, p->marks->len - 1).at);
            return NULL;
        }
        if (p->stack->len) {
            fail(p, at, "STOP leaves %u more values on the stack (a pickle leaves one)",
                 p->stack->len);
            return NULL;
        }
        while (p->pos < p->len && g_ascii_isspace(p->data[p->pos]))
            p->pos++;
        if (p->pos < p->len) {
            fail(p, p->pos,
                 "%" G_GSIZE_FORMAT " bytes of data after STOP (byte 0x%02x first): "
                 "a Flight Recorder dump is exactly one pickle",
                 p->len - p->pos, (unsigned)p->data[p->pos]);
            return NULL;
        }
        if (!walk(p, root))
            return NULL;
        return build(p, root);
    }
}

static void parser_clear(Parser *p)
{
    for (guint i = 0; p->vals && i < p->vals->len; i++) {
        PVal *v = val(p, i);
        if (is_container(v->kind) && v->u.items)
            g_array_free(v->u.items, TRUE);
    }
    if (p->vals)
        g_array_free(p->vals, TRUE);
    if (p->stack)
        g_array_free(p->stack, TRUE);
    if (p->marks)
        g_array_free(p->marks, TRUE);
    if (p->memo)
        g_hash_table_destroy(p->memo);
    if (p->owned)
        g_ptr_array_free(p->owned, TRUE);
    if (p->scratch)
        g_string_free(p->scratch, TRUE);
}

JsonNode *pickle_parse_limits(const guint8 *data, gsize len, const char *what,
                              const PickleLimits *limits, GError **error)
{
    g_return_val_if_fail(data != NULL || len == 0, NULL);
    g_return_val_if_fail(what != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    PickleLimits lim = limits ? *limits : (PickleLimits){0};
    if (!lim.max_nodes)
        lim.max_nodes = PICKLE_MAX_NODES;
    if (!lim.max_depth)
        lim.max_depth = PICKLE_MAX_DEPTH;
    g_return_val_if_fail(lim.max_nodes <= (guint64)G_MAXINT64, NULL);
    g_return_val_if_fail(lim.max_depth <= PICKLE_DEPTH_CAP, NULL);

    if (!lim.max_expansion)
        lim.max_expansion = PICKLE_MAX_EXPANSION;
    /* The tree's budget: max_expansion values per input byte (at least PICKLE_MIN_NODES),
     * never over max_nodes. */
    guint64 ceiling = lim.max_nodes;
    guint64 by_size = MAX((guint64)len * lim.max_expansion, (guint64)PICKLE_MIN_NODES);
    lim.max_nodes = MIN(lim.max_nodes, by_size);
    Parser p = {.data = data,
                .len = len,
                .what = what,
                .lim = lim,
                .expansion = lim.max_expansion,
                .ceiling = ceiling,
                .error = error};
    if (len >= G_MAXUINT32) {
        fail(&p, 0, "%" G_GSIZE_FORMAT " bytes, over the 4 GiB this reader takes", len);
        return NULL;
    }
    p.vals = g_array_sized_new(FALSE, FALSE, sizeof(PVal), 64);
    p.stack = g_array_new(FALSE, FALSE, sizeof(guint32));
    p.marks = g_array_new(FALSE, FALSE, sizeof(Mark));
    p.memo = g_hash_table_new(g_direct_hash, g_direct_equal);
    p.owned = g_ptr_array_new_with_free_func(g_free);
    p.scratch = g_string_new(NULL);
    new_val(&p, PV_NONE, 0);
    val(&p, new_val(&p, PV_BOOL, 0))->u.i = 1;
    new_val(&p, PV_BOOL, 0);
    new_val(&p, PV_TUPLE, 0);
    g_assert(p.vals->len == N_FIXED_IDS);
    JsonNode *root = run(&p);
    parser_clear(&p);
    g_assert(!error || (root != NULL) == (*error == NULL));
    return root;
}

JsonNode *pickle_parse(const guint8 *data, gsize len, const char *what, GError **error)
{
    return pickle_parse_limits(data, len, what, NULL, error);
}
