/* tests/src/input/test-request-line.c — the parser-free reader of a JSON-lines request trace
 * (src/input/request-line.h) against json-glib, the path it short-cuts: tricky lines and random
 * numbers read to the same doubles, or given up; whole traces loaded to the same requests or the
 * same error; line numbers, blank and comment lines, CRLF and "JSON then CSV" as before. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "../../../model/serve.h"
#include "../../../src/input/scenario.h"
#include "request-line-oracle.h"

typedef struct {
    const char *line;
    bool taken; /* request_line_read reads it (else it leaves it to json-glib) */
} Case;

/* clang-format off */
static const Case cases[] = {
    {"{\"arrival_s\": 0.001, \"prompt\": 64, \"output\": 16}", true},
    {"{\"prompt\":64,\"output\":16}", true},
    {"  {  \"prompt\" :\t64 ,\r\"output\"\t:16 }\r", true},
    {"{\"prompt\": 64, \"output\": 16}\r", true},
    {"{}", true},
    {"{\"arrival_s\": 1e3, \"prompt\": 1E2, \"output\": 1e+1}", true},
    {"{\"arrival_s\": 2.5e-3, \"prompt\": 64.0, \"output\": 16.000}", true},
    {"{\"arrival_s\": -0, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": -0.0, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": -0.0e5, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 0.1, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 0.30000000000000004, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 0.1000000000000000055511151231257827, \"prompt\": 6, \"output\": 1}", true},
    {"{\"arrival_s\": 123456789.123456789, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 9007199254740993e-3, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 0.000000000000000000000000000001, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 1e-22, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 1e-23, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 4.9e-324, \"prompt\": 64, \"output\": 16}", false},
    {"{\"arrival_s\": 2.2250738585072011e-308, \"prompt\": 64, \"output\": 16}", false},
    {"{\"arrival_s\": 0.100000000000000005, \"prompt\": 6, \"output\": 1}", true},
    {"{\"arrival_s\": 1.0000000000000000000000000000001, \"prompt\": 6, \"output\": 1}", true},
    {"{\"arrival_s\": 1e000000000000000000000000000001, \"prompt\": 6, \"output\": 1}", true},
    {"{\"arrival_s\": 1e-1000000000000000000, \"prompt\": 6, \"output\": 1}", false},
    {"{\"arrival_s\": 1.7976931348623157e308, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 100000000000000000000000e-30, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 0e99999999999, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 1e0000000000000000000005, \"prompt\": 64, \"output\": 16}", true},
    {"{\"arrival_s\": 1.5, \"prompt\": 64.5, \"output\": 16}", true},
    {"{\"arrival_s\": -1, \"prompt\": 64, \"output\": 16}", true},
    {"{\"prompt\": 0, \"output\": 16}", true},
    {"{\"prompt\": 999999999999999, \"output\": 16}", true},
    {"{\"prompt\": 64, \"output\": 16, \"prefix_id\": 7, \"prefix\": 32}", true},
    {"{\"prompt\": 64, \"output\": 16, \"prefix_id\": 7}", true},
    {"{\"prompt\": 64, \"output\": 16, \"prefix_id\": 7, \"prefix\": 65}", true},
    {"{\"prompt\": 64, \"output\": 16, \"prefix_id\": 4294967296, \"prefix\": 1}", true},
    {"{\"prompt\": 64}", true},
    {"{\"output\": 64}", true},
    {"{\"id\": 12, \"prompt\": 64, \"output\": 16, \"score\": -1.5e-7}", true},
    {"{\"id\": 1, \"id\": 2, \"prompt\": 64, \"output\": 16}", true},
    {"{\"Prompt\": 64, \"output\": 16}", true},
    {"{\"prompt \": 64, \"output\": 16}", true},
    {"{\"a b~!\": 1, \"prompt\": 64, \"output\": 16}", true},
    /* given up: json-glib reads (or refuses) them */
    {"{\"prompt\": 1234567890123456, \"output\": 16}", false},
    {"{\"prompt\": 99999999999999999999999, \"output\": 16}", false},
    {"{\"prompt\": 9223372036854775808, \"output\": 16}", false},
    {"{\"arrival_s\": 1e400, \"prompt\": 64, \"output\": 16}", false},
    {"{\"arrival_s\": 1e-400, \"prompt\": 64, \"output\": 16}", false},
    {"{\"arrival_s\": 1.7976931348623159e308, \"prompt\": 64, \"output\": 16}", false},
    {"{\"prompt\": 64, \"prompt\": 65, \"output\": 16}", false},
    {"{\"\\u0070rompt\": 64, \"output\": 16}", false},
    {"{\"pr\\\"ompt\": 64, \"output\": 16}", false},
    {"{\"pr\xc3\xa9mpt\": 64, \"prompt\": 64, \"output\": 16}", false},
    {"{\"\": 1, \"prompt\": 64, \"output\": 16}", false},
    {"{\"prompt\": \"64\", \"output\": 16}", false},
    {"{\"prompt\": 64, \"output\": 16, \"text\": \"hi\"}", false},
    {"{\"prompt\": 64, \"output\": 16, \"ok\": true}", false},
    {"{\"prompt\": 64, \"output\": 16, \"x\": null}", false},
    {"{\"prompt\": 64, \"output\": 16, \"ids\": [1, 2]}", false},
    {"{\"prompt\": 64, \"output\": 16, \"m\": {\"a\": 1}}", false},
    {"{\"prompt\": 64, \"output\": {\"a\": 1}}", false},
    {"{\"prompt\": 64, \"output\": 16,}", false},
    {"{,\"prompt\": 64, \"output\": 16}", false},
    {"{\"prompt\": 64 \"output\": 16}", false},
    {"{\"prompt\": 64, \"output\": 16}}", false},
    {"{\"prompt\": 64, \"output\": 16} x", false},
    {"{\"prompt\": 64, \"output\": 16}{}", false},
    {"{\"prompt\": 64, \"output\": 16} // comment", false},
    {"{\"prompt\": 64, \"output\": 16", false},
    {"{\"prompt\": 064, \"output\": 16}", false},
    {"{\"prompt\": 00, \"output\": 16}", false},
    {"{\"prompt\": -064, \"output\": 16}", false},
    {"{\"prompt\": +64, \"output\": 16}", false},
    {"{\"prompt\": - 64, \"output\": 16}", false},
    {"{\"prompt\": .5, \"output\": 16}", false},
    {"{\"prompt\": 5., \"output\": 16}", false},
    {"{\"prompt\": 1e, \"output\": 16}", false},
    {"{\"prompt\": 1e+, \"output\": 16}", false},
    {"{\"prompt\": 0x40, \"output\": 16}", false},
    {"{\"prompt\": NaN, \"output\": 16}", false},
    {"{\"prompt\": Infinity, \"output\": 16}", false},
    {"{\"prompt\": 64,\f\"output\": 16}", false},
    {"{\"prompt\": 64,\v\"output\": 16}", false},
    {"{\"prompt\"\x01: 64, \"output\": 16}", false},
    {"{'prompt': 64, 'output': 16}", false},
    {"{prompt: 64, output: 16}", false},
    {"[{\"prompt\": 64, \"output\": 16}]", false},
};
/* clang-format on */

Test(request_line, tricky_lines_agree_with_json_glib)
{
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        static const char *const keys[] = {"arrival_s", "prompt", "output", "prefix_id", "prefix"};
        double v[5];
        bool has[5];
        g_autofree char *shown = g_strescape(cases[i].line, NULL);
        cr_expect_eq(request_line_read(cases[i].line, keys, 5, v, has), cases[i].taken,
                     "%s: taken %d, expected %d", shown, !cases[i].taken, cases[i].taken);
        g_autofree char *why = oracle_disagreement(cases[i].line);
        cr_expect_null(why, "%s: %s", shown, why);
    }
}

/* Random numbers of every form JSON has: the reader's doubles are json-glib's, bit for bit. */
Test(request_line, random_numbers_agree_with_json_glib)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed(27);
    guint taken = 0;
    for (int i = 0; i < 50000; i++) {
        GString *n = g_string_new(g_rand_boolean(rng) ? "-" : "");
        int int_digits = g_rand_int_range(rng, 1, 20), frac = g_rand_int_range(rng, -3, 25);
        g_string_append_c(n, (char)('0' + g_rand_int_range(rng, int_digits > 1 ? 1 : 0, 10)));
        for (int d = 1; d < int_digits; d++)
            g_string_append_c(n, (char)('0' + g_rand_int_range(rng, 0, 10)));
        if (frac > 0)
            g_string_append_c(n, '.');
        for (int d = 0; d < frac; d++)
            g_string_append_c(n, (char)('0' + g_rand_int_range(rng, 0, 10)));
        if (g_rand_int_range(rng, 0, 3) == 0)
            g_string_append_printf(n, "%s%d", g_rand_boolean(rng) ? "e" : "E-",
                                   g_rand_int_range(rng, 0, 340));
        g_autofree char *line =
            g_strdup_printf("{\"arrival_s\": %s, \"prompt\": %s}", n->str, n->str);
        g_string_free(n, TRUE);
        static const char *const keys[] = {"arrival_s", "prompt"};
        double v[2];
        bool has[2];
        taken += request_line_read(line, keys, 2, v, has);
        g_autofree char *why = oracle_disagreement(line);
        cr_assert_null(why, "%s: %s", line, why);
    }
    cr_assert_gt(taken, 30000, "the reader took only %u of 50000 lines", taken);
}

static const char scenario_text[] = "name: request-line\n"
                                    "model: llama-3.1-8b\n"
                                    "hardware: h100\n"
                                    "engine:\n"
                                    "  max_model_len: 8192\n";

/* Loads `trace` as --requests: the requests (caller frees) or NULL with *message. */
static GArray *load(const char *trace, char **message)
{
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("request-line-XXXXXX.jsonl", &path, NULL);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert(g_file_set_contents(path, trace, -1, NULL));
    ScenarioExtras extras = {.requests = path};
    g_autoptr(GError) err = NULL;
    Scenario *s = scenario_load_string_extras(scenario_text, "t.yaml", &extras, &err);
    g_unlink(path);
    *message = NULL;
    if (!s) {
        cr_assert_not_null(err);
        /* the temporary path differs between loads */
        const char *tail = strstr(err->message, ".jsonl");
        *message = g_strdup(tail ? tail : err->message);
        return NULL;
    }
    cr_assert_not_null(s->requests);
    GArray *r = g_array_copy(s->requests);
    scenario_free(s);
    return r;
}

static void assert_same_load(const char *a, const char *b)
{
    g_autofree char *ma = NULL, *mb = NULL;
    GArray *ra = load(a, &ma), *rb = load(b, &mb);
    g_autofree char *shown = g_strescape(a, NULL);
    cr_assert_eq(!ra, !rb, "%s: %s / %s", shown, ma ? ma : "requests", mb ? mb : "requests");
    if (!ra) {
        cr_assert_str_eq(ma, mb, "%s", shown);
        return;
    }
    cr_assert_eq(ra->len, rb->len, "%s", shown);
    for (guint i = 0; i < ra->len; i++) {
        const ModelRequest *x = &g_array_index(ra, ModelRequest, i);
        const ModelRequest *y = &g_array_index(rb, ModelRequest, i);
        cr_assert(x->prompt == y->prompt && x->output == y->output &&
                      x->arrival_ns == y->arrival_ns && x->prefix_id == y->prefix_id &&
                      x->prefix == y->prefix,
                  "%s: request %u differs", shown, i);
    }
    g_array_free(ra, TRUE);
    g_array_free(rb, TRUE);
}

/* Every line the reader takes loads as json-glib loads it: the same line with a member the
 * reader gives up on ("~": null, which json-glib ignores) goes through json-glib; the requests
 * or the error (ranges, a lone prefix) are the same. */
Test(request_line, loads_the_requests_json_glib_loads, .timeout = 120)
{
    guint compared = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (!cases[i].taken)
            continue;
        const char *brace = strchr(cases[i].line, '{');
        bool empty = *(brace + 1 + strspn(brace + 1, " \t\r")) == '}';
        g_autofree char *slow =
            g_strdup_printf("%.*s{\"~\": null%s%s", (int)(brace - cases[i].line), cases[i].line,
                            empty ? "" : ", ", brace + 1);
        g_autofree char *fast_trace = g_strdup_printf("%s\n", cases[i].line);
        g_autofree char *slow_trace = g_strdup_printf("%s\n", slow);
        assert_same_load(fast_trace, slow_trace);
        compared++;
    }
    cr_assert_gt(compared, 30);
}

/* Line numbers count blank, comment and CRLF lines as before; a CSV line after JSON lines is
 * refused with the message it always had. */
Test(request_line, lines_counted_as_before)
{
    g_autofree char *m = NULL;
    GArray *r = load("# a trace\r\n\r\n{\"prompt\": 10, \"output\": 2}\r\n   \n"
                     "\t{\"prompt\": 11, \"output\": 3, \"arrival_s\": 0.5}  \r\n# end",
                     &m);
    cr_assert_not_null(r, "%s", m);
    cr_assert_eq(r->len, 2);
    cr_assert_eq(g_array_index(r, ModelRequest, 1).prompt, 11);
    cr_assert_eq(g_array_index(r, ModelRequest, 1).arrival_ns, 500000000);
    g_array_free(r, TRUE);

    cr_assert_null(
        load("\n# c\n{\"prompt\": 10, \"output\": 2}\n\n{\"prompt\": 0, \"output\": 2}\n", &m));
    cr_assert_str_eq(m, ".jsonl:5: key 'prompt': '0' is not an integer in 1..10000000", "%s", m);
    g_clear_pointer(&m, g_free);

    cr_assert_null(load("{\"prompt\": 10, \"output\": 2}\r\n\r\nprompt,output\r\n1,2\r\n", &m));
    cr_assert_str_eq(m,
                     ".jsonl:3: key 'arrival_s': not a JSON object; a JSON-lines trace has one "
                     "object per line",
                     "%s", m);
    g_clear_pointer(&m, g_free);

    cr_assert_null(load("{\"prompt\": 10, \"output\": 2}\n{\"prompt\": 10, \"output\": 2,}\n", &m));
    cr_assert(g_str_has_prefix(m, ".jsonl:2: key 'arrival_s': not valid JSON ("), "%s", m);
    g_clear_pointer(&m, g_free);

    r = load("prompt, output ,arrival_s\r\n# x\r\n5,6,0.25\r\n", &m);
    cr_assert_not_null(r, "%s", m);
    cr_assert_eq(r->len, 1);
    cr_assert_eq(g_array_index(r, ModelRequest, 0).output, 6);
    g_array_free(r, TRUE);
}
