/* src/input/scenario-requests.c — a workload of requests: `workload.requests`, `workload.trace` (JSON
 * lines or CSV), `workload.poisson` (generated arrivals) and `--requests FILE`, read into
 * Scenario.requests for vLLM's scheduler to serve later (runner_prepare, src/run/runner.h).
 *
 * Trace files (doc/scenario-format.md): JSON lines, one object per line with "arrival_s",
 * "prompt" and "output" (other keys are ignored: traces carry ids and texts), or CSV with a
 * header naming those three columns in any order. Blank lines and lines starting with '#' are
 * skipped. Errors name the file, the line and the key.
 *
 * The requests are only read: serving them (vLLM's scheduler running the engine step by step)
 * is runner_prepare's (src/run/runner.h), after loading.
 * Costs: O(requests) to read. A JSON line of numbers only (the common shape) is read without
 * json-glib (request-line.h); any other line, and a line with a value out of its range,
 * goes through json-glib as before, so results and messages do not depend on
 * which reader took a line. The text is walked in place, line by line.
 */
#include "scenario-requests.h"
#include "../../sched/json-bounded.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "../util/inputfile.h"
#include "request-formats.h"
#include "request-line.h"
#include "scenario-hardware.h"
#include "../../model/serve.h"

#define MAX_TRACE_BYTES (UINT64_C(1) << 30)

static const char request_forms[] =
    "requests: [{prompt: N, output: M, arrival_s: T}, ...], trace: FILE (JSON lines or CSV "
    "with arrival_s, prompt, output) or poisson: {count: N, rate_per_s: R (or inf), prompt: N, "
    "output: M, seed: S}, with an optional max_concurrency: N";

static bool add_request(GArray *out, int64_t prompt, int64_t output, double arrival_s,
                        int64_t prefix_id, int64_t prefix)
{
    ModelRequest r = {(uint32_t)prompt, (uint32_t)output, (int64_t)llround(arrival_s * 1e9),
                      (uint32_t)prefix_id, (uint32_t)MIN(prefix, prompt)};
    g_array_append_val(out, r);
    return out->len <= MAX_REQUESTS;
}

/* A shared prefix needs both its id and its length. */
static const char prefix_rule[] =
    "prefix_id (> 0) and prefix (tokens, at most the prompt) go together";

/* ---- workload.requests ---- */

static bool load_request_list(Loader *ld, const YamlDocNode *list, GArray *out)
{
    static const char *const keys[] = {"prompt",    "output", "arrival_s",
                                       "prefix_id", "prefix", NULL};
    if (!yamldoc_expect_seq(&ld->doc, list, "requests",
                            "a list of requests, e.g. [{prompt: 1024, output: 128, arrival_s: 0}]"))
        return false;
    for (guint i = 0; i < list->items->len; i++) {
        const YamlDocNode *m = g_ptr_array_index(list->items, i);
        if (!yamldoc_expect_map(&ld->doc, m, "requests",
                                "a request {prompt: N, output: M, arrival_s: T}") ||
            !yamldoc_check_keys(&ld->doc, m, keys, NULL, "a request"))
            return false;
        const YamlDocNode *p = yamldoc_map_get(m, "prompt"), *o = yamldoc_map_get(m, "output");
        const YamlDocNode *t = yamldoc_map_get(m, "arrival_s");
        if (!p || !o)
            return yamldoc_fail(&ld->doc, m, p ? "output" : "prompt",
                                "missing; a request needs prompt (tokens) and output (tokens to "
                                "generate); arrival_s defaults to 0");
        int64_t pv = 0, ov = 0, iv = 0, xv = 0;
        double tv = 0;
        const YamlDocNode *pi = yamldoc_map_get(m, "prefix_id"), *px = yamldoc_map_get(m, "prefix");
        if (!yamldoc_get_int(&ld->doc, p, "prompt", 1, MAX_SEQ_LEN, &pv) ||
            !yamldoc_get_int(&ld->doc, o, "output", 1, MAX_SEQ_LEN, &ov) ||
            (t && !yamldoc_get_number(&ld->doc, t, "arrival_s", 0, false, MAX_SECONDS, "seconds",
                                      &tv)) ||
            (pi && !yamldoc_get_int(&ld->doc, pi, "prefix_id", 1, UINT32_MAX, &iv)) ||
            (px && !yamldoc_get_int(&ld->doc, px, "prefix", 1, pv, &xv)))
            return false;
        if (!pi != !px)
            return yamldoc_fail(&ld->doc, m, pi ? "prefix" : "prefix_id", "missing; %s",
                                prefix_rule);
        if (!add_request(out, pv, ov, tv, iv, xv))
            return yamldoc_fail(&ld->doc, list, "requests", "more than %u requests", MAX_REQUESTS);
    }
    return true;
}

/* ---- workload.poisson ---- */

static bool load_poisson(Loader *ld, const YamlDocNode *m, GArray *out)
{
    static const char *const keys[] = {"count", "rate_per_s", "prompt", "output",
                                       "seed",  "prefix",     NULL};
    if (!yamldoc_expect_map(&ld->doc, m, "poisson",
                            "{count: N, rate_per_s: R, prompt: N, output: M, seed: S}") ||
        !yamldoc_check_keys(&ld->doc, m, keys, NULL, "poisson"))
        return false;
    for (const char *const *k = keys; *k && strcmp(*k, "seed") != 0; k++)
        if (!yamldoc_map_get(m, *k))
            return yamldoc_fail(&ld->doc, m, *k,
                                "missing; poisson needs count, rate_per_s, prompt and output "
                                "(seed defaults to 0)");
    int64_t count = 0, prompt = 0, output = 0, seed = 0, prefix = 0;
    double rate = 0;
    /* `inf`, vllm bench serve's default --request-rate: every request arrives at 0 */
    const YamlDocNode *rn = yamldoc_map_get(m, "rate_per_s");
    bool inf =
        rn->type == YAMLDOC_SCALAR && !rn->quoted && g_ascii_strcasecmp(rn->text, "inf") == 0;
    if (!yamldoc_get_int(&ld->doc, yamldoc_map_get(m, "count"), "count", 1, MAX_REQUESTS, &count) ||
        (!inf && !yamldoc_get_number(&ld->doc, rn, "rate_per_s", 0, true, 1e9,
                                     "requests per second, or inf", &rate)) ||
        !yamldoc_get_int(&ld->doc, yamldoc_map_get(m, "prompt"), "prompt", 1, MAX_SEQ_LEN,
                         &prompt) ||
        !yamldoc_get_int(&ld->doc, yamldoc_map_get(m, "output"), "output", 1, MAX_SEQ_LEN,
                         &output) ||
        (yamldoc_map_get(m, "seed") &&
         !yamldoc_get_int(&ld->doc, yamldoc_map_get(m, "seed"), "seed", 0, UINT32_MAX, &seed)) ||
        (yamldoc_map_get(m, "prefix") &&
         !yamldoc_get_int(&ld->doc, yamldoc_map_get(m, "prefix"), "prefix", 1, prompt, &prefix)))
        return false;
    /* Exponential gaps of mean 1 / rate from GLib's Mersenne Twister (the same sequence for a
     * seed on every platform): the first request arrives at 0, as a benchmark's does. */
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    double t = 0;
    for (int64_t i = 0; i < count; i++) {
        if (i > 0 && !inf)
            t += -log1p(-g_rand_double(rng)) / rate;
        if (t > MAX_SECONDS)
            return yamldoc_fail(&ld->doc, yamldoc_map_get(m, "rate_per_s"), "rate_per_s",
                                "the arrivals pass %.0g s; raise the rate or lower the count",
                                MAX_SECONDS);
        add_request(out, prompt, output, t, prefix ? 1 : 0, prefix);
    }
    return true;
}

/* ---- trace files ---- */

static bool trace_fail(Loader *ld, const char *file, guint line, const char *key, const char *fmt,
                       ...) G_GNUC_PRINTF(5, 6);

static bool trace_fail(Loader *ld, const char *file, guint line, const char *key, const char *fmt,
                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(ld->doc.error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s:%u: key '%s': %s", file,
                line, key, msg);
    return false;
}

/* One value of a trace row: a number in [min, max] (integral when `integer`). */
static bool trace_number(Loader *ld, const char *file, guint line, const char *key,
                         const char *text, double min, double max, bool integer, double *out)
{
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r'))
        end++;
    if (!text[0] || !end || *end || !isfinite(v) || v < min || v > max ||
        (integer && v != floor(v)))
        return trace_fail(ld, file, line, key, "'%s' is not %s in %.0f..%.0f", text,
                          integer ? "an integer" : "a number", min, max);
    *out = v;
    return true;
}

/* The fields of a trace row, in this order; the first is optional (0), the last two together
 * (a shared prefix). */
enum { TRACE_FIELDS = 5 };
static const char *const trace_keys[TRACE_FIELDS] = {"arrival_s", "prompt", "output", "prefix_id",
                                                     "prefix"};

/* One row from its values (has[k] false: absent), checked as trace_number checks a text. */
static bool trace_values(Loader *ld, const char *file, guint line, const double *v,
                         const bool *has, GArray *out)
{
    static const double max[TRACE_FIELDS] = {MAX_SECONDS, MAX_SEQ_LEN, MAX_SEQ_LEN, UINT32_MAX, 0};
    if (has[3] != has[4])
        return trace_fail(ld, file, line, has[3] ? "prefix" : "prefix_id", "missing; %s",
                          prefix_rule);
    for (int k = 0; k < TRACE_FIELDS; k++) {
        double lo = k == 0 ? 0 : 1, hi = k == 4 ? v[1] : max[k];
        if (has[k] && !(v[k] >= lo && v[k] <= hi && (k == 0 || v[k] == floor(v[k]))))
            return trace_fail(ld, file, line, trace_keys[k], "%.17g is not %s in %.0f..%.0f",
                              v[k], k == 0 ? "a number" : "an integer", lo, hi);
    }
    if (!add_request(out, (int64_t)v[1], (int64_t)v[2], has[0] ? v[0] : 0,
                     has[3] ? (int64_t)v[3] : 0, has[4] ? (int64_t)v[4] : 0))
        return trace_fail(ld, file, line, "prompt", "more than %u requests", MAX_REQUESTS);
    return true;
}

/* The range of each field of a row as its text is checked (trace_number): [min, max],
 * integral but for arrival_s. */
static const double trace_min[TRACE_FIELDS] = {0, 1, 1, 1, 1};
static const double trace_max[TRACE_FIELDS] = {MAX_SECONDS, MAX_SEQ_LEN, MAX_SEQ_LEN, UINT32_MAX,
                                               MAX_SEQ_LEN};

/* One row from its field texts (NULL: absent). */
static bool trace_row(Loader *ld, const char *file, guint line, const char *const *v, GArray *out)
{
    double num[TRACE_FIELDS] = {0};
    bool has[TRACE_FIELDS] = {false};
    if (!v[1] || !v[2])
        return trace_fail(ld, file, line, v[1] ? "output" : "prompt", "missing");
    for (int k = 0; k < TRACE_FIELDS; k++)
        if (v[k] && !trace_number(ld, file, line, trace_keys[k], v[k], trace_min[k], trace_max[k],
                                  k != 0, &num[k]))
            return false;
        else
            has[k] = v[k] != NULL;
    return trace_values(ld, file, line, num, has, out);
}

/* A JSON line read by request_line_read (request-line.h) into `num`/`has`, when trace_row
 * would take the texts json-glib's values print as: prompt and output given, every value
 * finite and in its range. Then trace_values sees the very numbers trace_row would pass it;
 * otherwise the line goes to json-glib and trace_row, which word the error. */
static bool trace_flat_line(const char *text, double *num, bool *has)
{
    if (!request_line_read(text, trace_keys, TRACE_FIELDS, num, has) || !has[1] || !has[2])
        return false;
    for (int k = 0; k < TRACE_FIELDS; k++)
        if (has[k] && !(isfinite(num[k]) && num[k] >= trace_min[k] && num[k] <= trace_max[k] &&
                        (k == 0 || num[k] == floor(num[k]))))
            return false;
    return true;
}

static bool trace_json_line(Loader *ld, const char *file, guint line, const char *text,
                            JsonParser *parser, GArray *out)
{
    double num[TRACE_FIELDS];
    bool has[TRACE_FIELDS];
    if (trace_flat_line(text, num, has))
        return trace_values(ld, file, line, num, has, out);
    g_autoptr(GError) err = NULL;
    if (!sched_json_load(parser, text, -1, &err))
        return trace_fail(ld, file, line, "arrival_s",
                          "not valid JSON (%s); valid: "
                          "{\"arrival_s\": T, \"prompt\": N, \"output\": M}",
                          err->message);
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return trace_fail(ld, file, line, "arrival_s",
                          "not a JSON object; valid: "
                          "{\"arrival_s\": T, \"prompt\": N, \"output\": M}");
    JsonObject *obj = json_node_get_object(root);
    char vals[TRACE_FIELDS][64];
    const char *v[TRACE_FIELDS] = {NULL};
    for (int k = 0; k < TRACE_FIELDS; k++) {
        JsonNode *n = json_object_get_member(obj, trace_keys[k]);
        if (!n && (k == 0 || k >= 3))
            continue; /* optional */
        if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
            (json_node_get_value_type(n) != G_TYPE_INT64 &&
             json_node_get_value_type(n) != G_TYPE_DOUBLE))
            return trace_fail(ld, file, line, trace_keys[k], "%s; valid: a number",
                              n ? "not a number" : "missing");
        if (json_node_get_value_type(n) == G_TYPE_INT64)
            g_snprintf(vals[k], sizeof vals[k], "%" G_GINT64_FORMAT, json_node_get_int(n));
        else
            g_ascii_dtostr(vals[k], sizeof vals[k], json_node_get_double(n));
        v[k] = vals[k];
    }
    return trace_row(ld, file, line, v, out);
}

/* The line at `p` (ending at the next '\n' or the text's end) cut out in place and trimmed of
 * what g_strstrip trims (g_ascii_isspace); *next: the following line, NULL after the last. */
static char *next_line(char *p, char **next)
{
    char *nl = strchr(p, '\n');
    char *e = nl ? nl : p + strlen(p);
    *next = nl ? nl + 1 : NULL;
    while (e > p && g_ascii_isspace(e[-1]))
        e--;
    *e = '\0';
    while (g_ascii_isspace(*p))
        p++;
    return p;
}

/* `text` (altered: each line is cut out in place) as JSON lines or CSV. */
static bool load_trace_text(Loader *ld, const char *file, char *text, GArray *out)
{
    int col[TRACE_FIELDS] = {-1, -1, -1, -1, -1};
    bool csv = false, header = false;
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    guint rows = 0, line = 0;
    for (char *next = text; next;) {
        char *l = next_line(next, &next);
        line++;
        if (!l[0] || l[0] == '#')
            continue;
        if (!header && !csv && l[0] == '{') {
            if (!trace_json_line(ld, file, line, l, parser, out))
                return false;
            rows++;
            continue;
        }
        if (!csv) {
            if (rows)
                return trace_fail(ld, file, line, "arrival_s",
                                  "not a JSON object; a JSON-lines "
                                  "trace has one object per line");
            csv = true;
            g_auto(GStrv) names = g_strsplit(l, ",", -1);
            for (int c = 0; names[c]; c++)
                for (int k = 0; k < TRACE_FIELDS; k++)
                    if (strcmp(g_strstrip(names[c]), trace_keys[k]) == 0)
                        col[k] = c;
            for (int k = 1; k < 3; k++)
                if (col[k] < 0)
                    return trace_fail(ld, file, line, trace_keys[k],
                                      "missing from the CSV header '%s'; valid: a header naming "
                                      "arrival_s, prompt and output, or JSON lines",
                                      l);
            header = true;
            continue;
        }
        g_auto(GStrv) f = g_strsplit(l, ",", -1);
        guint nf = g_strv_length(f);
        const char *v[TRACE_FIELDS] = {NULL};
        for (int k = 0; k < TRACE_FIELDS; k++) {
            if (col[k] >= (int)nf)
                return trace_fail(ld, file, line, trace_keys[k],
                                  "the row has %u fields, the header names column %d", nf,
                                  col[k] + 1);
            if (col[k] >= 0)
                v[k] = g_strstrip(f[col[k]]);
            if (v[k] && k >= 3 && !v[k][0])
                v[k] = NULL; /* an empty prefix cell: no shared prefix */
        }
        if (!trace_row(ld, file, line, v, out))
            return false;
        rows++;
    }
    if (rows == 0)
        return trace_fail(ld, file, 1, "prompt",
                          "the trace has no requests; valid: JSON lines "
                          "{\"arrival_s\", \"prompt\", \"output\"} or CSV with that header");
    return true;
}

/* A public trace's rows (request-formats.h) as requests, each checked as a row of ranksim's
 * own traces; what was estimated or skipped becomes a note. */
static bool load_public_trace(Loader *ld, RequestFormat f, const char *file, char *text,
                              GArray *out, bool *timed)
{
    RequestTrace t = {0};
    g_autoptr(GError) err = NULL;
    bool ok = request_trace_read(f, file, text, &t, &err);
    if (!ok)
        g_propagate_error(ld->doc.error, g_steal_pointer(&err));
    *timed = true;
    for (guint i = 0; ok && i < t.rows->len; i++) {
        const RequestRow *r = &g_array_index(t.rows, RequestRow, i);
        double v[TRACE_FIELDS] = {isnan(r->arrival_s) ? 0 : r->arrival_s, r->prompt, r->output,
                                  (double)r->prefix_id, r->prefix};
        bool has[TRACE_FIELDS] = {true, true, true, r->prefix_id > 0, r->prefix_id > 0};
        *timed = *timed && !isnan(r->arrival_s);
        ok = trace_values(ld, file, r->line, v, has, out);
    }
    if (ok && !ld->notes)
        ld->notes = g_ptr_array_new_with_free_func(g_free);
    if (ok && t.estimated)
        g_ptr_array_add(ld->notes,
                        g_strdup_printf("%s: token counts estimated from the text, %.0f "
                                        "characters a token (no tokenizer is run)",
                                        file, REQUEST_CHARS_PER_TOKEN));
    if (ok && t.skipped)
        g_ptr_array_add(ld->notes, g_strdup_printf("%s: %u %s skipped (%s)", file, t.skipped,
                                                   t.skipped == 1 ? "entry" : "entries",
                                                   t.skip_why ? t.skip_why : "not requests"));
    request_trace_clear(&t);
    return ok;
}

/* --requests-limit and --requests-rate on the requests out[from..]: the first `limit` in the
 * file's order; arrivals scaled so that they come at `rate_per_s` on average over the trace's
 * span, or, for a trace without times (or all at one instant), drawn as a Poisson process at
 * that rate as `vllm bench serve --request-rate` draws them (exponential gaps; GLib's Mersenne
 * Twister seeded with 0, the first at 0). */
static void shape_trace(GArray *out, guint from, const ScenarioTraceOptions *o, bool timed)
{
    if (o->limit && out->len - from > o->limit)
        g_array_set_size(out, from + o->limit);
    guint n = out->len - from;
    if (!(o->rate_per_s > 0) || n == 0)
        return;
    ModelRequest *r = &g_array_index(out, ModelRequest, from);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (guint i = 0; i < n; i++) {
        lo = MIN(lo, r[i].arrival_ns);
        hi = MAX(hi, r[i].arrival_ns);
    }
    if (timed && hi > lo) {
        double k = (double)(n - 1) / (o->rate_per_s * ((double)(hi - lo) / 1e9));
        for (guint i = 0; i < n; i++)
            r[i].arrival_ns = (int64_t)llround((double)(r[i].arrival_ns - lo) * k);
        return;
    }
    g_autoptr(GRand) rng = g_rand_new_with_seed(0);
    double t = 0;
    for (guint i = 0; i < n; i++) {
        if (i)
            t += -log(1.0 - g_rand_double(rng)) / o->rate_per_s;
        r[i].arrival_ns = (int64_t)llround(t * 1e9);
    }
}

static bool load_trace_file(Loader *ld, const char *path, const char *shown,
                            const ScenarioTraceOptions *o, GArray *out)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *text = input_file_read(path, MAX_TRACE_BYTES, NULL, &err);
    if (!text) {
        g_set_error(ld->doc.error, SCENARIO_ERROR, SCENARIO_ERROR_IO, "%s: trace file: %s", shown,
                    input_reason(err, path));
        return false;
    }
    RequestFormat f = o ? o->format : REQUEST_FORMAT_AUTO;
    if (f == REQUEST_FORMAT_AUTO) {
        g_autofree char *why = NULL;
        f = request_format_detect(text, &why);
        if (f == REQUEST_FORMAT_AUTO)
            return trace_fail(ld, shown, 1, "format", "%s", why);
    }
    guint from = out->len;
    bool timed = true;
    if (f == REQUEST_FORMAT_RANKSIM ? !load_trace_text(ld, shown, text, out)
                                    : !load_public_trace(ld, f, shown, text, out, &timed))
        return false;
    if (out->len == from)
        return trace_fail(ld, shown, 1, "prompt", "the %s trace holds no request to serve",
                          request_format_name(f));
    if (o)
        shape_trace(out, from, o, timed);
    return true;
}

/* workload.trace: a path, or {file: PATH, format: F, rate_per_s: R, limit: N}. */
static bool load_trace_options(Loader *ld, const YamlDocNode *n, const char **file,
                               ScenarioTraceOptions *o)
{
    if (n->type != YAMLDOC_MAP)
        return yamldoc_get_string(&ld->doc, n, "trace", "the path of a trace file", file);
    static const char *const keys[] = {"file", "format", "rate_per_s", "limit", NULL};
    const YamlDocNode *v;
    if (!yamldoc_check_keys(&ld->doc, n, keys, NULL, "trace"))
        return false;
    if (!(v = yamldoc_map_get(n, "file")))
        return yamldoc_fail(&ld->doc, n, "file", "missing; give the path of a trace file");
    if (!yamldoc_get_string(&ld->doc, v, "file", "the path of a trace file", file))
        return false;
    if ((v = yamldoc_map_get(n, "format"))) {
        const char *f = NULL;
        if (!yamldoc_get_string(&ld->doc, v, "format", REQUEST_FORMAT_NAMES, &f))
            return false;
        if (!request_format_parse(f, &o->format))
            return yamldoc_fail(&ld->doc, v, "format", "'%s' is not a trace format; valid: %s",
                                f, REQUEST_FORMAT_NAMES);
    }
    if ((v = yamldoc_map_get(n, "rate_per_s")) &&
        !yamldoc_get_number(&ld->doc, v, "rate_per_s", 0, true, 1e9, "requests/s",
                            &o->rate_per_s))
        return false;
    int64_t limit = 0;
    if ((v = yamldoc_map_get(n, "limit")) &&
        !yamldoc_get_int(&ld->doc, v, "limit", 1, MAX_REQUESTS, &limit))
        return false;
    o->limit = (uint32_t)limit;
    return true;
}

/* ---- entry points ---- */

bool scenario_workload_has_requests(const YamlDocNode *w)
{
    return w && w->type == YAMLDOC_MAP &&
           (yamldoc_map_get(w, "requests") || yamldoc_map_get(w, "trace") ||
            yamldoc_map_get(w, "poisson"));
}

bool scenario_load_max_concurrency(Loader *ld, const YamlDocNode *w, uint32_t *out)
{
    const YamlDocNode *n = w ? yamldoc_map_get(w, "max_concurrency") : NULL;
    int64_t v = 0;
    if (!n)
        return true;
    if (!scenario_workload_has_requests(w))
        return yamldoc_fail(&ld->doc, n, "max_concurrency",
                            "limits the requests in flight of a workload of requests (requests, "
                            "trace or poisson), as vllm bench serve --max-concurrency does; a "
                            "workload of steps has none");
    if (!yamldoc_get_int(&ld->doc, n, "max_concurrency", 1, MAX_REQUESTS, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool scenario_load_requests(Loader *ld, const YamlDocNode *w, GArray *out)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(w, "requests")) && !load_request_list(ld, n, out))
        return false;
    if ((n = yamldoc_map_get(w, "trace"))) {
        ScenarioTraceOptions o = {0};
        const char *file = NULL;
        if (!load_trace_options(ld, n, &file, &o))
            return false;
        g_autofree char *path = scenario_resolve_path(ld, file);
        if (!load_trace_file(ld, path, path, &o, out))
            return false;
    }
    if ((n = yamldoc_map_get(w, "poisson")) && !load_poisson(ld, n, out))
        return false;
    if (out->len == 0)
        return yamldoc_fail(&ld->doc, w, "requests", "empty; give %s", request_forms);
    return true;
}

bool scenario_load_requests_file(Loader *ld, const char *path, const ScenarioTraceOptions *o,
                                 GArray *out)
{
    return load_trace_file(ld, path, path, o, out);
}

bool scenario_keep_requests(Loader *ld, const YamlDocNode *root, const YamlDocNode *at,
                           const char *key, Scenario *s, GArray *reqs)
{
    /* The fabric settings the steps will run with, loaded here as when the requests were
     * served while loading (so their errors come first; loaded again, identically, with the
     * rest of the run settings). */
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "collective_algorithm")) && !scenario_load_algorithms(ld, n, s))
        return false;
    if ((n = yamldoc_map_get(root, "contention")) &&
        !yamldoc_get_bool(&ld->doc, n, "contention", &s->contention))
        return false;
    g_autofree char *loc = at ? yamldoc_loc(&ld->doc, at) : NULL;
    g_free(s->requests_from);
    s->requests_from = at ? g_strdup_printf("%s: key '%s'", loc, key)
                          : g_strdup_printf("%s: %s", ld->doc.file, key);
    if (s->requests)
        g_array_free(s->requests, TRUE);
    s->requests = g_array_ref(reqs);
    for (guint i = 0; ld->notes && i < ld->notes->len; i++)
        g_ptr_array_add(s->ignored_flags, g_strdup(g_ptr_array_index(ld->notes, i)));
    if (ld->notes)
        g_ptr_array_set_size(ld->notes, 0);
    return true;
}
