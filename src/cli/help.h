/* src/cli/help.h — `--help` that fits the terminal and the locale.
 *
 * GLib prints a subcommand's help itself, through g_print: under a locale that is not UTF-8
 * (or with no setlocale at all) its em dashes and the ellipsis of "[OPTION…]" come out as `?`,
 * and the project's pre-wrapped summaries are folded again mid-sentence by the stdout filter
 * (src/util/textwrap.h). cli_option_parse answers -h/--help/-? itself instead: GLib's help text,
 * re-laid to the width (paragraphs refilled, option descriptions continued under their own
 * column), transliterated to ASCII when the locale's charset is not UTF-8, on stdout.
 */
#ifndef SRC_CLI_HELP_H
#define SRC_CLI_HELP_H

#include <glib.h>
#include <stdbool.h>

/* g_option_context_parse, except that a help request before `--` prints the help as above and
 * ends the process with exit status 0 (as GLib's own help does). */
bool cli_option_parse(GOptionContext *ctx, int *argc, char ***argv, GError **error);

/* GLib's help text `text` laid out for `width` columns (characters, not bytes); `utf8` false:
 * every non-ASCII character transliterated ("—" to "-", "…" to "...", others to their nearest
 * ASCII or "?" only when none is known). Pure; caller frees. */
char *cli_help_format(const char *text, int width, bool utf8);

/* "…" -> "...", "—" -> "-" and the other characters help and reports use, for a terminal that
 * is not UTF-8. Caller frees. */
char *cli_ascii(const char *text);

#endif
