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

bool sched_json_depth_check(const char *text, gssize len, GError **error)
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

bool sched_json_load(JsonParser *parser, const char *text, gssize len, GError **error)
{
    return sched_json_depth_check(text, len, error) &&
           json_parser_load_from_data(parser, text, len, error);
}

JsonNode *sched_json_from_string(const char *text, GError **error)
{
    if (!sched_json_depth_check(text, -1, error))
        return NULL;
    return json_from_string(text, error);
}
