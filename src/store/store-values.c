/* src/store/store-values.c — values read back from a database, checked; see store-values.h. */
#include "store-values.h"

#include <string.h>

char *store_value_text(const unsigned char *t)
{
    if (!t)
        return NULL;
    const char *s = (const char *)t;
    if (g_utf8_validate(s, -1, NULL))
        return g_strdup(s);
    return g_utf8_make_valid(s, -1);
}

bool store_value_json_ok(const char *t)
{
    if (!t)
        return false;
    size_t len = strlen(t);
    if (len > STORE_MAX_JSON_BYTES || !g_utf8_validate(t, (gssize)len, NULL))
        return false;
    int depth = 0;
    bool in_string = false;
    for (const char *p = t; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_string = false;
        } else if (*p == '"') {
            in_string = true;
        } else if (*p == '[' || *p == '{') {
            if (++depth > STORE_MAX_JSON_DEPTH)
                return false;
        } else if (*p == ']' || *p == '}') {
            depth--;
        }
    }
    return true;
}
