/* src/cli/help.c — `--help` laid out for the terminal and its charset (src/cli/help.h). */
#include "help.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd-common.h"
#include "exit-codes.h"
#include "../util/textwrap.h"

/* A source line at least this long was wrapped by hand in the source: the next line continues
 * its paragraph. A shorter one ends where its author meant ("Details: doc/cli.md."). */
#define HELP_WRAPPED_LINE 60

char *cli_ascii(const char *text)
{
    static const struct {
        const char *utf8, *ascii;
    } map[] = {
        {"\u2014", "-"},   {"\u2013", "-"},  {"\u2212", "-"},  {"\u2026", "..."},
        {"\u00d7", "x"},   {"\u00b5", "u"},  {"\u03bc", "u"},  {"\u2192", "->"},
        {"\u2190", "<-"},  {"\u2264", "<="}, {"\u2265", ">="}, {"\u2248", "~"},
        {"\u2018", "'"},   {"\u2019", "'"},  {"\u201c", "\""}, {"\u201d", "\""},
        {"\u00b7", "."},   {"\u2022", "*"},  {"\u00a0", " "},  {"\u00b0", " deg"},
    };
    GString *out = g_string_sized_new(strlen(text));
    for (const char *p = text; *p;) {
        if ((unsigned char)*p < 0x80) {
            g_string_append_c(out, *p++);
            continue;
        }
        const char *next = g_utf8_find_next_char(p, NULL);
        size_t len = next ? (size_t)(next - p) : strlen(p);
        const char *rep = "?";
        for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
            if (strlen(map[i].utf8) == len && memcmp(map[i].utf8, p, len) == 0)
                rep = map[i].ascii;
        g_string_append(out, rep);
        p += len;
    }
    return g_string_free(out, FALSE);
}

static long chars(const char *s, size_t bytes)
{
    return g_utf8_strlen(s, (gssize)bytes);
}

/* Appends `words` (space-separated) to `out`, the first line starting at column `col` (already
 * written), the next ones indented by `indent`, no line past `width` unless one word is
 * longer than the room. */
static void fill(GString *out, const char *words, long col, long indent, long width)
{
    g_auto(GStrv) w = g_strsplit(words, " ", -1);
    long start = col;
    for (char **p = w; *p; p++) {
        if (!**p)
            continue;
        long n = chars(*p, strlen(*p));
        if (col > start && col + 1 + n > width) {
            g_string_append_c(out, '\n');
            for (long i = 0; i < indent; i++)
                g_string_append_c(out, ' ');
            col = start = indent;
        }
        if (col > start) {
            g_string_append_c(out, ' ');
            col++;
        }
        g_string_append(out, *p);
        col += n;
    }
    g_string_append_c(out, '\n');
}

static long leading_spaces(const char *line)
{
    long n = 0;
    while (line[n] == ' ')
        n++;
    return n;
}

/* "  -q, --quiet              Print nothing": the option's text up to the run of two or more
 * spaces, and the column its description starts at (0: no description). */
static void option_line(GString *out, const char *line, long width)
{
    const char *gap = strstr(line + leading_spaces(line), "  ");
    if (!gap) {
        fill(out, line, 0, leading_spaces(line) + 4, width);
        return;
    }
    const char *desc = gap;
    while (*desc == ' ')
        desc++;
    long col = chars(line, (size_t)(desc - line));
    long indent = col <= width / 2 ? col : 8;
    g_string_append_len(out, line, desc - line);
    if (col > width) { /* the option alone fills the line */
        g_string_append_c(out, '\n');
        for (long i = 0; i < indent; i++)
            g_string_append_c(out, ' ');
        col = indent;
    }
    fill(out, desc, col, indent, width);
}

char *cli_help_format(const char *text, int width, bool utf8)
{
    g_autofree char *ascii = utf8 ? NULL : cli_ascii(text);
    g_autofree char *src = g_strdup(ascii ? ascii : text);
    /* GLib's "[OPTION…]": ASCII whatever the charset, as every other usage line spells it */
    g_auto(GStrv) parts = g_strsplit(src, "[OPTION\u2026]", -1);
    g_autofree char *joined = g_strjoinv("[OPTION...]", parts);
    g_auto(GStrv) lines = g_strsplit(joined, "\n", -1);
    GString *out = g_string_new(NULL);
    long w = width < 20 ? 20 : width;
    for (guint i = 0; lines[i]; i++) {
        const char *line = lines[i];
        if (!lines[i + 1] && !*line)
            break; /* the text's own last newline */
        long lead = leading_spaces(line);
        if (!line[lead]) {
            g_string_append_c(out, '\n');
        } else if (lead > 0 && line[lead] == '-') {
            option_line(out, line, w);
        } else if (lead > 0) {
            g_string_append_len(out, line, lead);
            fill(out, line + lead, lead, lead + 4, w);
        } else {
            GString *para = g_string_new(line);
            while (lines[i + 1] && chars(lines[i], strlen(lines[i])) >= HELP_WRAPPED_LINE &&
                   lines[i + 1][0] && lines[i + 1][0] != ' ' &&
                   !g_str_has_prefix(lines[i + 1], "- ") && !g_str_has_prefix(lines[i + 1], "* ")) {
                i++;
                g_string_append_printf(para, " %s", lines[i]);
            }
            fill(out, para->str, 0, 0, w);
            g_string_free(para, TRUE);
        }
    }
    return g_string_free(out, FALSE);
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ||
            strcmp(argv[i], "-?") == 0 || strcmp(argv[i], "--help-all") == 0)
            return true;
    }
    return false;
}

bool cli_option_parse(GOptionContext *ctx, int *argc, char ***argv, GError **error)
{
    if (wants_help(*argc, *argv)) {
        g_autofree char *glib = g_option_context_get_help(ctx, TRUE, NULL);
        g_autofree char *text = cli_help_format(glib, text_width(), g_get_charset(NULL));
        fputs(text, stdout);
        g_clear_pointer(&text, g_free);
        g_clear_pointer(&glib, g_free);
        /* the process ends here, as with GLib's own help: the stdout filter is flushed and
         * closed first (src/util/textwrap.h), so nothing is left allocated; a failed write
         * (`help run > /dev/full`) is exit 1 with the reason, as for any other output */
        int werr = text_wrap_finish();
        if (fflush(stdout) != 0 || ferror(stdout)) {
            if (!werr)
                werr = errno ? errno : EIO;
        }
        if (werr) {
            cli_error("writing to stdout: %s", g_strerror(werr));
            exit(CLI_EXIT_INTERNAL);
        }
        exit(CLI_EXIT_OK);
    }
    /* GOption converts a string option's value from the locale's charset and fails with
     * only "Invalid byte sequence in conversion input": name the argument instead. */
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) given = g_strdupv(*argv); /* parsing removes what it took */
    if (g_option_context_parse(ctx, argc, argv, &err))
        return true;
    if (err->domain != G_CONVERT_ERROR) {
        g_propagate_error(error, g_steal_pointer(&err));
        return false;
    }
    for (int i = 1; given[i]; i++) {
        const char *bad = NULL;
        if (g_utf8_validate(given[i], -1, &bad))
            continue;
        g_autoptr(GString) shown = g_string_new(NULL);
        text_escape_append(shown, given[i], (gssize)MIN(strlen(given[i]), 200), false);
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "argument '%s': not valid UTF-8 (byte 0x%02x at offset %td); option values "
                    "are read as UTF-8 text",
                    shown->str, (unsigned)(unsigned char)*bad, bad - given[i]);
        return false;
    }
    g_propagate_error(error, g_steal_pointer(&err));
    return false;
}
