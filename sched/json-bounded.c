/* sched/json-bounded.c — json-glib behind a nesting limit (see json-bounded.h). */
#include "json-bounded.h"

#include <string.h>

/* Line and column (1-based, bytes) of `off` in `text`, as json-glib reports positions. */
static void position(const char *text, gsize off, guint *line, guint *col)
{
    *line = 1;
    gsize start = 0;
    for (gsize i = 0; i < off; i++)
        if (text[i] == '\n') {
            (*line)++;
            start = i + 1;
        }
    *col = (guint)(off - start + 1);
}

/* Whether the integer literal of `n` digits at `d` (no sign, no leading zeros) is beyond
 * int64: above INT64_MAX, or INT64_MIN's magnitude when `neg`. */
static bool beyond_int64(const char *d, gsize n, bool neg)
{
    static const char max[] = "9223372036854775807", min[] = "9223372036854775808";
    if (n != sizeof max - 1)
        return n > sizeof max - 1;
    return strncmp(d, neg ? min : max, n) > 0;
}

/* The number starting at text[i] (a '-' or a digit): its end in *end; false with the error
 * when it is an integer json-glib would not keep (it turns one beyond int64 into another
 * value, 10^23 into -1, without a word). */
static bool check_number(const char *text, gsize n, gsize i, gsize *end, GError **error)
{
    gsize j = i;
    bool neg = text[j] == '-';
    if (neg)
        j++;
    gsize start = j;
    while (j < n && text[j] == '0')
        j++;
    gsize first = j;
    while (j < n && g_ascii_isdigit(text[j]))
        j++;
    bool is_float = j < n && (text[j] == '.' || text[j] == 'e' || text[j] == 'E');
    /* a float's fraction and exponent are part of the number, not an integer of their own */
    while (is_float && j < n &&
           (g_ascii_isdigit(text[j]) || text[j] == '.' || text[j] == 'e' || text[j] == 'E' ||
            text[j] == '+' || text[j] == '-'))
        j++;
    *end = j;
    if (is_float || j == start || !beyond_int64(text + first, j - first, neg))
        return true;
    guint line, col;
    position(text, i, &line, &col);
    g_set_error(error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                "<data>:%u:%u: Parse error: the integer %.*s is beyond 64 bits (at most "
                "9223372036854775807)",
                line, col, (int)MIN(j - i, (gsize)40), text + i);
    return false;
}

bool sched_json_precheck(const char *text, gssize len, GError **error)
{
    if (!text)
        return true;
    gsize n = len < 0 ? strlen(text) : (gsize)len;
    guint depth = 0;
    bool in_string = false;
    for (gsize i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character cannot end the string */
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || g_ascii_isdigit(c)) {
            gsize end;
            if (!check_number(text, n, i, &end, error))
                return false;
            i = end > i ? end - 1 : i;
        } else if (c == '[' || c == '{') {
            if (++depth > SCHED_JSON_MAX_DEPTH) {
                guint line, col;
                position(text, i, &line, &col);
                g_set_error(error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_PARSE,
                            "<data>:%u:%u: Parse error: nested deeper than %d levels", line, col,
                            SCHED_JSON_MAX_DEPTH);
                return false;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return true;
}

/* json-glib's messages quote the input ("unexpected string constant \"a\nb\""): its
 * control characters are escaped (\n, \xHH) so that a message stays one line. */
static void one_line(GError **error)
{
    if (!error || !*error)
        return;
    const char *m = (*error)->message;
    bool clean = true;
    for (const char *p = m; *p && clean; p++)
        clean = (guchar)*p >= 0x20 && *p != 0x7f;
    if (clean)
        return;
    GString *g = g_string_new(NULL);
    for (const char *p = m; *p; p++) {
        guchar c = (guchar)*p;
        if (c == '\n')
            g_string_append(g, "\\n");
        else if (c < 0x20 || c == 0x7f)
            g_string_append_printf(g, "\\x%02x", c);
        else
            g_string_append_c(g, (char)c);
    }
    g_free((*error)->message);
    (*error)->message = g_string_free(g, FALSE);
}

bool sched_json_load(JsonParser *parser, const char *text, gssize len, GError **error)
{
    if (!sched_json_precheck(text, len, error))
        return false;
    if (json_parser_load_from_data(parser, text, len, error))
        return true;
    one_line(error);
    return false;
}

JsonNode *sched_json_from_string(const char *text, GError **error)
{
    if (!sched_json_precheck(text, -1, error))
        return NULL;
    JsonNode *n = json_from_string(text, error);
    if (!n)
        one_line(error);
    return n;
}
