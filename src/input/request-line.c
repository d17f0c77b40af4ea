/* src/input/request-line.c — a flat JSON object of numbers read without a parser (see
 * request-line.h). */
#include "request-line.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Integers of up to 15 digits and significands of up to 15 digits are exact doubles (below
 * 2^53 ~ 9.007e15); so is every power of ten up to 10^22 (5^22 < 2^53). */
#define EXACT_DIGITS 15
#define EXACT_POW10 22

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* JSON's whitespace (RFC 8259 section 2); a line holds no '\n' but it is harmless. */
static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    return p;
}

/* The digits at *p into *mant (significant digits counted in *sig, leading zeros skipped;
 * beyond 19 they are counted but not kept) and their number into *count; *p moves past them.
 * *scale is decremented once per digit kept when `fraction`. */
static void digits(const char **p, uint64_t *mant, int *sig, int *count, int *scale, bool fraction)
{
    for (; is_digit(**p); (*p)++, (*count)++) {
        if (*mant == 0 && **p == '0' && *sig == 0) {
            *scale -= fraction; /* 0.001: leading zeros of a fraction still scale */
            continue;
        }
        if (*sig < 19) {
            *mant = *mant * 10 + (uint64_t)(**p - '0');
            *scale -= fraction;
        } else {
            *scale += !fraction; /* a dropped integer digit: only the slow path reads these */
        }
        (*sig)++;
    }
}

/* A number of JSON's grammar at `p`: its value in *out and its end in *end; false when it is
 * not one, or not one converted here exactly as json-glib and g_ascii_strtod convert it. */
static bool read_number(const char *p, const char **end, double *out)
{
    static const double pow10[EXACT_POW10 + 1] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *start = p;
    bool neg = *p == '-';
    p += neg;
    if (!is_digit(*p) || (*p == '0' && is_digit(p[1])))
        return false; /* "-", "+1", ".5", "01" */
    uint64_t mant = 0;
    int sig = 0, int_digits = 0, frac_digits = 0, scale = 0;
    digits(&p, &mant, &sig, &int_digits, &scale, false);
    bool integer = true;
    if (*p == '.') {
        p++;
        digits(&p, &mant, &sig, &frac_digits, &scale, true);
        if (frac_digits == 0)
            return false; /* "1." */
        integer = false;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        bool eneg = *p == '-';
        p += *p == '-' || *p == '+';
        if (!is_digit(*p))
            return false; /* "1e" */
        int e = 0;
        for (; is_digit(*p); p++)
            e = e < 100000 ? e * 10 + (*p - '0') : e;
        scale += eneg ? -e : e;
        integer = false;
    }
    *end = p;
    if (integer) {
        /* json-glib's int64, printed and read back: exact; "-0" is the int64 0 */
        if (int_digits > EXACT_DIGITS)
            return false;
        *out = mant == 0 ? 0.0 : neg ? -(double)mant : (double)mant;
        return true;
    }
    if (sig <= EXACT_DIGITS && scale >= -EXACT_POW10 && scale <= EXACT_POW10) {
        double m = (double)mant;
        *out = scale < 0 ? m / pow10[-scale] : m * pow10[scale];
        *out = neg ? -*out : *out;
        return true;
    }
    char *stop = NULL;
    errno = 0;
    double v = g_ascii_strtod(start, &stop);
    if (errno != 0 || stop != p)
        return false; /* out of range (1e400, 1e-400), or read otherwise than here */
    *out = v;
    return true;
}

/* A key at `p` (after its '"'): its end (past the closing '"') in *end and its length in *len;
 * false on an escape, a control or non-ASCII byte, an empty key or no closing quote. */
static bool read_key(const char *p, const char **end, size_t *len)
{
    const char *s = p;
    while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
        p++;
    if (*p != '"' || p == s)
        return false;
    *len = (size_t)(p - s);
    *end = p + 1;
    return true;
}

bool request_line_read(const char *line, const char *const *keys, guint n, double *v, bool *has)
{
    g_return_val_if_fail(n <= REQUEST_LINE_MAX_KEYS, false);
    size_t key_len[REQUEST_LINE_MAX_KEYS];
    for (guint k = 0; k < n; k++) {
        key_len[k] = strlen(keys[k]);
        has[k] = false;
    }
    const char *p = skip_ws(line);
    if (*p != '{')
        return false;
    p = skip_ws(p + 1);
    bool first = true;
    while (*p != '}' || !first) {
        const char *key = p + 1;
        size_t len = 0;
        double x = 0;
        if (*p != '"' || !read_key(key, &p, &len))
            return false;
        p = skip_ws(p);
        if (*p != ':')
            return false;
        if (!read_number(skip_ws(p + 1), &p, &x))
            return false;
        for (guint k = 0; k < n; k++)
            if (len == key_len[k] && memcmp(key, keys[k], len) == 0) {
                if (has[k])
                    return false; /* json-glib keeps the last: give it the line */
                has[k] = true;
                v[k] = x;
                break;
            }
        p = skip_ws(p);
        first = false;
        if (*p == '}')
            break;
        if (*p != ',')
            return false;
        p = skip_ws(p + 1);
    }
    return *skip_ws(p + 1) == '\0';
}
