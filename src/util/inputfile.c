/* src/util/inputfile.c — safe whole-file reads and one-line rendering; see inputfile.h. */
#include "inputfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(ranksim-input-error-quark, input_error)

gsize input_max_bytes(GError **error)
{
    const char *env = g_getenv(INPUT_MAX_BYTES_ENV);
    if (!env || !*env)
        return INPUT_DEFAULT_MAX_BYTES;
    guint64 v;
    if (!g_ascii_string_to_unsigned(env, 10, 1, (guint64)1 << 40, &v, NULL)) {
        g_autofree char *shown = input_escape(env, 40);
        g_set_error(error, INPUT_ERROR, INPUT_ERROR_LIMIT,
                    "%s='%s': expected a byte count, 1..1099511627776", INPUT_MAX_BYTES_ENV,
                    shown);
        return 0;
    }
    return (gsize)v;
}

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

static char *too_big(const char *path, guint64 size, bool at_least, gsize max)
{
    return g_strdup_printf("%s: %s%" G_GUINT64_FORMAT " bytes, over the input size limit of "
                           "%" G_GSIZE_FORMAT " bytes (set %s=BYTES to raise it)",
                           path, at_least ? "more than " : "", size, max, INPUT_MAX_BYTES_ENV);
}

/* Opens `path` for reading and checks it is a regular file within `max_bytes`. Returns the
 * fd (and its size) or -1 with the error set. */
static int open_checked(const char *path, gsize max_bytes, guint64 *size, GError **error)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat decides before any read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, INPUT_ERROR, INPUT_ERROR_OPEN, "%s: cannot read it: %s", path,
                    g_strerror(e));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        g_set_error(error, INPUT_ERROR, INPUT_ERROR_OPEN, "%s: cannot read it: %s", path,
                    g_strerror(e));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        g_set_error(error, INPUT_ERROR, INPUT_ERROR_NOT_REGULAR,
                    "%s: %s, not a regular file; expected a text file", path,
                    file_kind(sb.st_mode));
        return -1;
    }
    if ((guint64)sb.st_size > (guint64)max_bytes) {
        close(fd);
        g_autofree char *msg = too_big(path, (guint64)sb.st_size, false, max_bytes);
        g_set_error_literal(error, INPUT_ERROR, INPUT_ERROR_TOO_BIG, msg);
        return -1;
    }
    *size = (guint64)sb.st_size;
    return fd;
}

bool input_file_check(const char *path, gsize max_bytes, GError **error)
{
    if (!max_bytes && !(max_bytes = input_max_bytes(error)))
        return false;
    guint64 size;
    int fd = open_checked(path, max_bytes, &size, error);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

char *input_file_read_bytes(const char *path, gsize max_bytes, gsize *len, GError **error)
{
    if (!max_bytes && !(max_bytes = input_max_bytes(error)))
        return NULL;
    guint64 size;
    int fd = open_checked(path, max_bytes, &size, error);
    if (fd < 0)
        return NULL;
    /* Read at most max + 1 bytes: a file that grows meanwhile cannot take more. */
    gsize cap = (gsize)size + 1, n = 0;
    char *buf = g_malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > max_bytes)
                break;
            cap = MIN(cap * 2, max_bytes + 1);
            buf = g_realloc(buf, cap + 1);
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            g_free(buf);
            g_set_error(error, INPUT_ERROR, INPUT_ERROR_OPEN, "%s: cannot read it: %s", path,
                    g_strerror(e));
            return NULL;
        }
        if (k == 0)
            break;
        n += (gsize)k;
    }
    close(fd);
    if (n > max_bytes) {
        g_free(buf);
        g_autofree char *msg = too_big(path, max_bytes, true, max_bytes);
        g_set_error_literal(error, INPUT_ERROR, INPUT_ERROR_TOO_BIG, msg);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

char *input_file_read(const char *path, gsize max_bytes, gsize *len, GError **error)
{
    gsize n = 0;
    char *buf = input_file_read_bytes(path, max_bytes, &n, error);
    if (!buf)
        return NULL;
    if (!input_check_utf8(path, buf, n, error)) {
        g_free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

char *input_utf8_problem(const char *text, gsize len, gsize *offset)
{
    const unsigned char *u = (const unsigned char *)text;
    *offset = 0;
    if (len >= 4 && ((u[0] == 0xFF && u[1] == 0xFE && u[2] == 0 && u[3] == 0) ||
                     (u[0] == 0 && u[1] == 0 && u[2] == 0xFE && u[3] == 0xFF)))
        return g_strdup("the text is UTF-32 (it starts with a UTF-32 byte-order mark; convert "
                        "it with iconv -f UTF-32 -t UTF-8)");
    if (len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)))
        return g_strdup("the text is UTF-16 (it starts with a UTF-16 byte-order mark; convert "
                        "it with iconv -f UTF-16 -t UTF-8)");
    if (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF)
        return g_strdup("the text starts with a UTF-8 byte-order mark (save it without the BOM)");
    const char *end = NULL;
    bool valid = g_utf8_validate_len(text, len, &end);
    const char *nul = memchr(text, '\0', len);
    if (nul && (valid || nul <= end)) {
        *offset = (gsize)(nul - text);
        return g_strdup_printf("a NUL byte at offset %" G_GSIZE_FORMAT
                               " (UTF-16 without a byte-order mark, or a binary file?)",
                               *offset);
    }
    if (!valid) {
        *offset = (gsize)(end - text);
        return g_strdup_printf("not valid UTF-8 (byte 0x%02x at offset %" G_GSIZE_FORMAT ")",
                               (unsigned)u[*offset], *offset);
    }
    return NULL;
}

bool input_check_utf8(const char *what, const char *text, gsize len, GError **error)
{
    gsize at;
    g_autofree char *why = input_utf8_problem(text, len, &at);
    if (!why)
        return true;
    gsize line = 1;
    for (gsize i = 0; i < at; i++)
        line += text[i] == '\n';
    g_set_error(error, INPUT_ERROR, INPUT_ERROR_ENCODING,
                "%s:%" G_GSIZE_FORMAT ": %s; ranksim reads UTF-8 text only", what, line, why);
    return false;
}

char *input_escape(const char *text, size_t max_chars)
{
    GString *o = g_string_new(NULL);
    size_t n = 0;
    for (const char *p = text ? text : ""; *p; p++, n++) {
        if (max_chars && n >= max_chars) {
            g_string_append(o, "...");
            break;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '\n')
            g_string_append(o, "\\n");
        else if (c == '\r')
            g_string_append(o, "\\r");
        else if (c == '\t')
            g_string_append(o, "\\t");
        else if (c < 0x20 || c == 0x7f)
            g_string_append_printf(o, "\\x%02x", c);
        else
            g_string_append_c(o, (char)c);
    }
    return g_string_free(o, FALSE);
}

const char *input_reason(const GError *e, const char *path)
{
    g_return_val_if_fail(e != NULL, "");
    size_t n = path ? strlen(path) : 0;
    if (n && strncmp(e->message, path, n) == 0 && strncmp(e->message + n, ": ", 2) == 0)
        return e->message + n + 2;
    return e->message;
}
