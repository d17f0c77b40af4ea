/* tests/sched/test-json-bounded.c — the nesting limit every JSON entry point goes through
 * (sched/json-bounded.h): SCHED_JSON_MAX_DEPTH levels parse, one more is refused before
 * json-glib recurses, brackets inside strings do not count, and 100,000 levels (which overflowed
 * json-glib's stack) end with a one-line error naming where. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../sched/json-bounded.h"

static char *nested(int levels, const char *open, const char *leaf, const char *close)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < levels; i++)
        g_string_append(s, open);
    g_string_append(s, leaf);
    for (int i = 0; i < levels; i++)
        g_string_append(s, close);
    return g_string_free(s, FALSE);
}

Test(json_bounded, the_limit_is_exact)
{
    g_autofree char *ok = nested(SCHED_JSON_MAX_DEPTH, "[", "1", "]");
    g_autofree char *deep = nested(SCHED_JSON_MAX_DEPTH + 1, "{\"a\":", "1", "}");
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) err = NULL;
    cr_assert(sched_json_load(p, ok, -1, &err));
    cr_assert_not(sched_json_load(p, deep, -1, &err));
    cr_assert_str_eq(err->message, "<data>:1:321: Parse error: nested deeper than 64 levels");
    cr_assert(g_error_matches(err, JSON_PARSER_ERROR, JSON_PARSER_ERROR_PARSE));
}

Test(json_bounded, brackets_in_strings_do_not_count)
{
    g_autofree char *inner = nested(200, "[", "", "");
    g_autofree char *text = g_strdup_printf("{\"s\": \"%s\\\"[[[\", \"t\": [1]}", inner);
    g_autoptr(JsonNode) n = sched_json_from_string(text, NULL);
    cr_assert_not_null(n);
}

/* Regression (issue 27): 100,000 levels overflowed json-glib's stack (SIGSEGV). */
Test(json_bounded, a_hundred_thousand_levels_are_refused)
{
    g_autofree char *deep = nested(100000, "[", "", "]");
    g_autoptr(GError) err = NULL;
    cr_assert_null(sched_json_from_string(deep, &err));
    cr_assert_not_null(err);
    cr_assert_null(strchr(err->message, '\n'));
    g_autofree char *lines = g_strdup_printf("[\n%s", deep + 1);
    g_clear_error(&err);
    cr_assert_not(sched_json_precheck(lines, -1, &err));
    cr_assert(strstr(err->message, "<data>:2:64:"), "%s", err->message);
}

/* Regression (issue 27): "prompt": 99999999999999999999999 was read as -1 ("'-1' is not an
 * integer"); an integer beyond int64 is named where it stands. Floats and int64's ends pass. */
Test(json_bounded, integers_beyond_int64_are_named)
{
    g_autoptr(GError) err = NULL;
    cr_assert_not(sched_json_precheck("{\"prompt\": 99999999999999999999999}", -1, &err));
    cr_assert_str_eq(err->message, "<data>:1:12: Parse error: the integer 99999999999999999999999 "
                                   "is beyond 64 bits (at most 9223372036854775807)");
    g_clear_error(&err);
    cr_assert_not(sched_json_precheck("[9223372036854775808]", -1, &err));
    g_clear_error(&err);
    cr_assert_not(sched_json_precheck("[-9223372036854775809]", -1, &err));
    g_clear_error(&err);
    cr_assert(sched_json_precheck("[9223372036854775807, -9223372036854775808, 00001, 1e23, "
                                  "99999999999999999999999.5, -0, \"99999999999999999999999\"]",
                                  -1, &err),
              "%s", err ? err->message : "");
    /* a float's long fraction or exponent is not an integer of its own (found by the flat
     * request reader's differential test: valid JSON was refused as "beyond 64 bits") */
    cr_assert(sched_json_precheck("[0.1000000000000000055511151231257827, 1e00000000000000000001,"
                                  " 2.5E+99999999999999999999, -3.0e-1000000000000000000000]",
                                  -1, &err),
              "%s", err ? err->message : "");
}

/* Found by fuzz-requests (tests/fuzz/regress/requests/multi-line-json-error): json-glib quotes
 * a string constant with its newline in the message; the message stays one line. */
Test(json_bounded, parse_errors_are_one_line)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) err = NULL;
    cr_assert_not(sched_json_load(p, "[{\"a\nb\" \"c\"}]", -1, &err));
    cr_assert_null(strchr(err->message, '\n'), "%s", err->message);
    g_clear_error(&err);
    cr_assert_null(sched_json_from_string("{\"a\nb\" \"c\"}", &err));
    cr_assert_null(strchr(err->message, '\n'), "%s", err->message);
    cr_assert(strstr(err->message, "unexpected string constant \"a\\nb\""), "%s", err->message);
}
