/* tests/src/input/test-request-formats.c — public request traces (src/input/request-formats.h):
 * each format detected from its first line and read into rows (tests/data/requests/), Mooncake's
 * shared hash ids as prefix groups, Azure's dates as seconds from the first request, BurstGPT's
 * failed requests and ShareGPT's short or one-turn entries skipped, errors naming line and key. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../../src/input/request-formats.h"

static char *fixture(const char *name)
{
    g_autofree char *path = g_build_filename(RANKSIM_SOURCE_DIR, "tests", "data", "requests",
                                             name, NULL);
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
    return text;
}

/* Reads fixture `name`, whose format must be detected as `want`, into `t`. */
static void read_fixture(const char *name, RequestFormat want, RequestTrace *t)
{
    g_autofree char *text = fixture(name);
    g_autofree char *why = NULL;
    cr_assert_eq(request_format_detect(text, &why), want, "%s: %s", name, why ? why : "");
    g_autoptr(GError) err = NULL;
    cr_assert(request_trace_read(want, name, text, t, &err), "%s", err ? err->message : "");
}

static const RequestRow *row(const RequestTrace *t, guint i)
{
    cr_assert_lt(i, t->rows->len);
    return &g_array_index(t->rows, RequestRow, i);
}

Test(request_formats, mooncake_prefix_groups)
{
    RequestTrace t = {0};
    read_fixture("mooncake.jsonl", REQUEST_FORMAT_MOONCAKE, &t);
    cr_assert_eq(t.rows->len, 4);
    cr_assert_float_eq(row(&t, 2)->arrival_s, 0.25, 1e-12);
    cr_assert_eq(row(&t, 0)->prompt, 1500);
    /* rows 0 and 1 share hash ids [0, 1]: one group of 2 x 512 tokens */
    cr_assert_neq(row(&t, 0)->prefix_id, 0);
    cr_assert_eq(row(&t, 0)->prefix_id, row(&t, 1)->prefix_id);
    cr_assert_eq(row(&t, 0)->prefix, 1024);
    /* row 3 shares only [0] with them: a group of its own of 512 tokens */
    cr_assert_eq(row(&t, 3)->prefix, 512);
    cr_assert_neq(row(&t, 3)->prefix_id, row(&t, 0)->prefix_id);
    /* row 2 shares nothing */
    cr_assert_eq(row(&t, 2)->prefix_id, 0);
    request_trace_clear(&t);
}

Test(request_formats, azure_dates_from_the_first_request)
{
    RequestTrace t = {0};
    read_fixture("azure.csv", REQUEST_FORMAT_AZURE, &t);
    cr_assert_eq(t.rows->len, 3);
    cr_assert_float_eq(row(&t, 0)->arrival_s, 0, 1e-9);
    cr_assert_float_eq(row(&t, 1)->arrival_s, 50.9951690 - 46.6805900, 1e-6);
    cr_assert_eq(row(&t, 2)->prompt, 879);
    cr_assert_eq(row(&t, 2)->output, 143);
    request_trace_clear(&t);
}

Test(request_formats, burstgpt_skips_failed_requests)
{
    RequestTrace t = {0};
    read_fixture("burstgpt.csv", REQUEST_FORMAT_BURSTGPT, &t);
    cr_assert_eq(t.rows->len, 2);
    cr_assert_eq(t.skipped, 1);
    cr_assert_not_null(t.skip_why);
    cr_assert_float_eq(row(&t, 1)->arrival_s, 113, 1e-9); /* 118 - 5 */
    cr_assert_eq(row(&t, 1)->output, 276);
    request_trace_clear(&t);
}

Test(request_formats, sharegpt_as_vllm_bench_samples_it)
{
    RequestTrace t = {0};
    read_fixture("sharegpt.json", REQUEST_FORMAT_SHAREGPT, &t);
    cr_assert(t.estimated);
    cr_assert_eq(t.rows->len, 1);
    cr_assert_eq(t.skipped, 2); /* "Hi" is under 4 tokens; a3 has one turn */
    cr_assert(isnan(row(&t, 0)->arrival_s));
    /* 76 characters of prompt at 4 a token */
    cr_assert_eq(row(&t, 0)->prompt, 19);
    request_trace_clear(&t);
}

Test(request_formats, vidur_arrivals)
{
    RequestTrace t = {0};
    read_fixture("vidur.csv", REQUEST_FORMAT_VIDUR, &t);
    cr_assert_eq(t.rows->len, 3);
    cr_assert_float_eq(row(&t, 1)->arrival_s, 0.35, 1e-12);
    cr_assert_eq(row(&t, 2)->prompt, 4096);
    request_trace_clear(&t);
}

Test(request_formats, detection_and_errors)
{
    g_autofree char *why = NULL;
    cr_assert_eq(request_format_detect("# c\n\narrival_s,prompt,output\n0,1,1\n", &why),
                 REQUEST_FORMAT_RANKSIM);
    cr_assert_eq(request_format_detect("{\"prompt\": 3, \"output\": 4}\n", &why),
                 REQUEST_FORMAT_RANKSIM);
    cr_assert_eq(request_format_detect("a,b,c\n", &why), REQUEST_FORMAT_AUTO);
    cr_assert(strstr(why, "'a,b,c'") && strstr(why, "Mooncake"), "%s", why);
    RequestFormat f;
    cr_assert(request_format_parse("BurstGPT", &f) && f == REQUEST_FORMAT_BURSTGPT);
    cr_assert_not(request_format_parse("parquet", &f));

    char bad[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\nyesterday,3,4\n";
    RequestTrace t = {0};
    g_autoptr(GError) err = NULL;
    cr_assert_not(request_trace_read(REQUEST_FORMAT_AZURE, "a.csv", bad, &t, &err));
    cr_assert(strstr(err->message, "a.csv:3: key 'TIMESTAMP'"), "%s", err->message);
    request_trace_clear(&t);
    g_clear_error(&err);
    char moon[] = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": 3}\n";
    cr_assert_not(request_trace_read(REQUEST_FORMAT_MOONCAKE, "m.jsonl", moon, &t, &err));
    cr_assert(strstr(err->message, "m.jsonl:1: key 'hash_ids'"), "%s", err->message);
    request_trace_clear(&t);
}
