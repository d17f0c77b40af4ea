/* src/util/textwrap.c — folding stdout's lines at the terminal's width; see textwrap.h. */
#include "textwrap.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int text_width(void)
{
    const char *c = getenv("COLUMNS");
    guint64 v = 0;
    if (c && g_ascii_string_to_unsigned(c, 10, 20, 100000, &v, NULL))
        return (int)v;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

void text_escape_append(GString *out, const char *s, gssize len, bool keep_newlines)
{
    const char *p = s, *end = s + (len < 0 ? (gssize)strlen(s) : len);
    while (p < end) {
        guchar c = (guchar)*p;
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && !(c == '\n' && keep_newlines)) || c == 0x7f)
                g_string_append_printf(out, "\\x%02x", c);
            else
                g_string_append_c(out, (char)c);
            p++;
            continue;
        }
        gunichar u = g_utf8_get_char_validated(p, end - p);
        if (u == (gunichar)-1 || u == (gunichar)-2) {
            g_string_append_printf(out, "\\x%02x", c);
            p++;
            continue;
        }
        const char *next = g_utf8_next_char(p);
        if (u >= 0x80 && u <= 0x9f)
            g_string_append_printf(out, "\\u%04x", (unsigned)u);
        else
            g_string_append_len(out, p, next - p);
        p = next;
    }
}

typedef struct {
    FILE *real;
    int width;
    GString *line; /* the current line, without its newline */
    GString *safe; /* the same, escaped (text_escape_append) */
} Wrap;

static FILE *real_stdout; /* while the filter is on */
static int first_errno;   /* the first failed write to the real stdout */

void text_fold_line(FILE *out, const char *s, size_t len, int width)
{
    glong chars = g_utf8_strlen(s, (gssize)len);
    if (chars <= width) {
        fwrite(s, 1, len, out);
        fputc('\n', out);
        return;
    }
    int indent = 0;
    while ((gsize)indent < len && s[indent] == ' ')
        indent++;
    int cont = MIN(indent + 4, width / 2);
    const char *p = s, *end = s + len;
    int lead = 0; /* spaces written before this piece */
    while (p < end) {
        int room = width - lead;
        /* the byte where `room` characters end */
        const char *lim = p;
        for (int k = 0; k < room && lim < end; k++)
            lim = g_utf8_next_char(lim);
        if (lim >= end) {
            fwrite(p, 1, (size_t)(end - p), out);
            fputc('\n', out);
            return;
        }
        /* break at the last space inside the room, past the indentation; with none, after
         * the last comma (a long rank list "0,8,16,..." breaks between numbers) */
        const char *brk = NULL, *comma = NULL;
        for (const char *q = p + (p == s ? indent : 0); q < lim; q = g_utf8_next_char(q)) {
            if (*q == ' ')
                brk = q;
            else if (*q == ',' || *q == ';')
                comma = q + 1;
        }
        const char *cut = brk && brk > p ? brk : comma && comma > p ? comma : lim;
        fwrite(p, 1, (size_t)(cut - p), out);
        fputc('\n', out);
        p = cut;
        while (p < end && *p == ' ')
            p++;
        if (p < end) {
            for (int k = 0; k < cont; k++)
                fputc(' ', out);
            lead = cont;
        }
    }
}

/* Writes one line folded at w->width (counted in characters, not bytes). */
static void emit_line(Wrap *w, const char *s, gsize len)
{
    text_fold_line(w->real, s, len, w->width);
}

static ssize_t wrap_write(void *cookie, const char *buf, size_t size)
{
    Wrap *w = cookie;
    for (size_t i = 0; i < size; i++) {
        if (buf[i] == '\n') {
            errno = 0;
            g_string_truncate(w->safe, 0);
            text_escape_append(w->safe, w->line->str, (gssize)w->line->len, false);
            emit_line(w, w->safe->str, w->safe->len);
            g_string_truncate(w->line, 0);
            if (ferror(w->real)) {
                if (!first_errno)
                    first_errno = errno ? errno : EIO;
                return -1;
            }
        } else {
            g_string_append_c(w->line, buf[i]);
        }
    }
    return (ssize_t)size;
}

static int wrap_close(void *cookie)
{
    Wrap *w = cookie;
    if (w->line->len) {
        g_string_truncate(w->safe, 0);
        text_escape_append(w->safe, w->line->str, (gssize)w->line->len, false);
        fwrite(w->safe->str, 1, w->safe->len, w->real);
    }
    g_string_free(w->line, TRUE);
    g_string_free(w->safe, TRUE);
    int rc = fflush(w->real);
    g_free(w);
    return rc;
}

static void finish_at_exit(void)
{
    text_wrap_finish();
}

bool text_wrap_stdout(void)
{
    /* a command may end in exit() (GOption's --help does): the filter's last line and its
     * state must not be lost then */
    static bool registered = false;
    if (!registered) {
        atexit(finish_at_exit);
        registered = true;
    }
    Wrap *w = g_new0(Wrap, 1);
    w->real = stdout;
    w->width = text_width();
    w->line = g_string_new(NULL);
    w->safe = g_string_new(NULL);
    cookie_io_functions_t io = {
        .read = NULL, .write = wrap_write, .seek = NULL, .close = wrap_close};
    FILE *f = fopencookie(w, "w", io);
    if (!f) {
        g_string_free(w->line, TRUE);
        g_string_free(w->safe, TRUE);
        g_free(w);
        return false;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    real_stdout = stdout;
    first_errno = 0;
    stdout = f;
    return true;
}

int text_wrap_finish(void)
{
    if (!real_stdout)
        return 0;
    FILE *f = stdout;
    stdout = real_stdout;
    real_stdout = NULL;
    errno = 0;
    fclose(f); /* the last partial line, then the real stream is flushed */
    if (!first_errno && ferror(stdout))
        first_errno = errno ? errno : EIO;
    return first_errno;
}
