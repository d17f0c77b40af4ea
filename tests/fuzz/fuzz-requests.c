/* tests/fuzz/fuzz-requests.c — libFuzzer target: a request trace (`--requests FILE`), read the
 * two ways ranksim reads one: every public format's reader on the text (request_trace_read,
 * src/input/request-formats.h), and the whole load of a small model scenario served from it
 * (scenario_load_string_extras with ScenarioExtras.requests: detection, ranksim's own JSON
 * lines and CSV, the row checks against the model). Nothing is served or simulated.
 *
 * Input: the trace's text (NUL bytes are refused by the file reader, so the readers never see
 * them). Checked on every input: a reader or the load fails exactly when it sets an error, and
 * the error is one line; and on every line, the parser-free reader of JSON lines
 * (src/input/request-line.h) either gives the line up or reads the numbers json-glib reads
 * (tests/src/input/request-line-oracle.h).
 */
#include "fuzz-common.h"

#include <unistd.h>

#include "../../src/input/request-formats.h"
#include "../../src/input/scenario.h"
#include "../src/input/request-line-oracle.h"

static char *trace_path; /* the input, written to a file of this process */

static const char scenario_text[] = "name: fuzz-requests\n"
                                    "model: llama-3.1-8b\n"
                                    "hardware: h100\n"
                                    "engine:\n"
                                    "  max_model_len: 8192\n"
                                    "  max_num_batched_tokens: 2048\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    int fd = g_file_open_tmp("fuzz-requests-XXXXXX.jsonl", &trace_path, NULL);
    if (fd < 0)
        abort();
    close(fd);
    return 0;
}

static void one_line(const char *what, const GError *err)
{
    if (err && strchr(err->message, '\n')) {
        fprintf(stderr, "fuzz: %s: a message of more than one line: %s\n", what, err->message);
        abort();
    }
}

/* Each line of `text` (trimmed as the trace reader trims it) read by request_line_read and by
 * json-glib: a disagreement aborts. */
static void check_lines(const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        g_autofree char *why = oracle_disagreement(g_strstrip(lines[i]));
        if (why) {
            fprintf(stderr, "fuzz: line %u: %s\n", i + 1, why);
            abort();
        }
    }
}

static const RequestFormat formats[] = {REQUEST_FORMAT_MOONCAKE, REQUEST_FORMAT_AZURE,
                                        REQUEST_FORMAT_BURSTGPT, REQUEST_FORMAT_SHAREGPT,
                                        REQUEST_FORMAT_VIDUR};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    char *why = NULL;
    (void)request_format_detect(text, &why);
    g_free(why);
    check_lines(text);
    for (size_t i = 0; i < G_N_ELEMENTS(formats); i++) {
        char *copy = g_strdup(text); /* the readers may alter the text */
        RequestTrace t = {0};
        GError *err = NULL;
        bool ok = request_trace_read(formats[i], "fuzz.trace", copy, &t, &err);
        fuzz_check_error("request_trace_read", ok, err);
        one_line("request_trace_read", err);
        g_clear_error(&err);
        request_trace_clear(&t);
        g_free(copy);
    }
    if (!g_file_set_contents(trace_path, text, (gssize)size, NULL))
        abort();
    ScenarioExtras extras = {.requests = trace_path, .max_rank_ops = FUZZ_MAX_RANK_OPS};
    GError *err = NULL;
    Scenario *s = scenario_load_string_extras(scenario_text, "fuzz.yaml", &extras, &err);
    fuzz_check_error("scenario_load_string_extras", s != NULL, err);
    one_line("scenario_load_string_extras", err);
    g_clear_error(&err);
    if (s)
        scenario_free(s);
    g_free(text);
    return 0;
}
