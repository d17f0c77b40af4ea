/* src/util/textwrap.h — text output that fits the terminal.
 *
 * The width is COLUMNS when it holds a number (20 or more), else the terminal's when stdout is
 * one, else 80. text_wrap_stdout() puts a filter in front of stdout that folds every line
 * longer than the width at a space (or, with none, after a comma, else at the width), continuing it indented four
 * columns past the line's own indentation — so prose, diagnostics and vLLM's log lines stay
 * readable in an 80-column pane. Tables are laid out to fit by their printers
 * (text_width()); the filter is the safety net. It also escapes what a terminal would obey
 * (text_escape_append), since names and descriptions come from input. JSON, DOT and traces
 * written to stdout must not go through it: cli.c turns it on for text output only.
 */
#ifndef SRC_TEXTWRAP_H
#define SRC_TEXTWRAP_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

/* Appends `s` (`len` bytes, -1: NUL-terminated) to `out` made safe for a terminal: C0 control
 * characters (ESC, BEL, CR, ... but a tab, and a newline when `keep_newlines`), DEL and the C1
 * controls U+0080..U+009F (8-bit CSI, OSC) become \xHH / \u00HH, and a byte that is not
 * UTF-8 becomes \xHH; everything else is copied. So a Flight Recorder group description
 * carrying an OSC 52 clipboard write or a clear-screen sequence is shown, not obeyed. The text
 * filter below passes every line of text output through it; writers of other formats (DOT)
 * call it on the input text they quote. O(len). */
void text_escape_append(GString *out, const char *s, gssize len, bool keep_newlines);

/* The width text output folds at (see above). */
int text_width(void);
/* Writes the line `s` (`len` bytes, no newline in it) to `out` folded at `width` characters as
 * the stdout filter folds (at a space, else after a comma, else at the width; continued four
 * columns past the line's own indentation), then a newline. For stderr's progress and notes. */
void text_fold_line(FILE *out, const char *s, size_t len, int width);

/* Replaces stdout with a stream that folds lines at text_width() and writes to the real
 * stdout. Returns false (stdout unchanged) when the stream cannot be made. */
bool text_wrap_stdout(void);
/* Writes what is left, closes the filter and puts the real stdout back. Returns 0, or the errno
 * of the first write to the real stdout that failed (a full disk, a closed pipe). */
int text_wrap_finish(void);

#endif
