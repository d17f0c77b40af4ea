/* tests/src/cli/test-help.c — help laid out for the terminal (src/cli/help.h): refilled
 * paragraphs, option descriptions continued under their column, ASCII for a terminal that is
 * not UTF-8. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/cli/help.h"

static const char *glib_help =
    "Usage:\n"
    "  ranksim run [OPTION\u2026] SCENARIO | -- vllm serve MODEL [FLAGS...] - simulate one scenario\n"
    "\n"
    "Runs every rank of the scenario as an actor in simulated time, stores the result in\n"
    "the results database and prints the report \u2014 outcome, diagnostics, times.\n"
    "Details: doc/cli.md.\n"
    "\n"
    "Application Options:\n"
    "  --perf-db=PATH           A measured table of kernel times (ranksim's CSV, AIConfigurator's tables) that overrides the cost model\n";

static void assert_fits(const char *text, long width)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++)
        cr_assert_leq(g_utf8_strlen(*l, -1), width, "%ld columns: '%s'", width, *l);
}

Test(help, fits_the_width_and_keeps_meaning)
{
    g_autofree char *t = cli_help_format(glib_help, 80, true);
    assert_fits(t, 80);
    cr_assert(strstr(t, "[OPTION...]"), "%s", t);
    /* the hand-wrapped paragraph is refilled, the short line after it stays its own */
    cr_assert_null(strstr(t, "result in\nthe results"), "%s", t);
    cr_assert(strstr(t, "in the results database and prints"), "%s", t);
    cr_assert(strstr(t, "\nDetails: doc/cli.md.\n"), "%s", t);
    cr_assert(strstr(t, "\u2014"), "UTF-8 kept: %s", t);
    /* the option's description continues under its own column (27) */
    const char *cont = strstr(t, "\n                           ");
    cr_assert_not_null(cont, "%s", t);
    cr_assert_neq(cont[28], ' ', "%s", t);
}

Test(help, ascii_terminal)
{
    g_autofree char *t = cli_help_format(glib_help, 120, false);
    assert_fits(t, 120);
    for (const char *p = t; *p; p++)
        cr_assert_lt((unsigned char)*p, 0x80, "%s", t);
    cr_assert_null(strchr(t, '?'), "%s", t);
    cr_assert(strstr(t, "report - outcome"), "%s", t);
    g_autofree char *a = cli_ascii("3 \u00d7 4 \u2264 12 \u2026 \u2603");
    cr_assert_str_eq(a, "3 x 4 <= 12 ... ?");
}
