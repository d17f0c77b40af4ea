/* src/input/request-formats.c — public request traces read as rows (src/input/request-formats.h). */
#include "request-formats.h"
#include "../../sched/json-bounded.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scenario-error.h"

static const struct {
    const char *name;
    RequestFormat f;
} format_names[] = {
    {"auto", REQUEST_FORMAT_AUTO},         {"ranksim", REQUEST_FORMAT_RANKSIM},
    {"mooncake", REQUEST_FORMAT_MOONCAKE}, {"azure", REQUEST_FORMAT_AZURE},
    {"burstgpt", REQUEST_FORMAT_BURSTGPT}, {"sharegpt", REQUEST_FORMAT_SHAREGPT},
    {"vidur", REQUEST_FORMAT_VIDUR},
};

bool request_format_parse(const char *name, RequestFormat *out)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_names); i++)
        if (g_ascii_strcasecmp(name, format_names[i].name) == 0) {
            *out = format_names[i].f;
            return true;
        }
    return false;
}

const char *request_format_name(RequestFormat f)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_names); i++)
        if (format_names[i].f == f)
            return format_names[i].name;
    return "auto";
}

void request_trace_clear(RequestTrace *t)
{
    if (t->rows)
        g_array_unref(t->rows);
    memset(t, 0, sizeof *t);
}

static bool fail(GError **error, const char *file, guint line, const char *key, const char *fmt,
                 ...) G_GNUC_PRINTF(5, 6);
static bool fail(GError **error, const char *file, guint line, const char *key, const char *fmt,
                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s:%u: key '%s': %s", file, line,
                key, msg);
    return false;
}

/* ---- telling the formats apart ---- */

static const char formats_help[] =
    "valid: ranksim's JSON lines {\"arrival_s\", \"prompt\", \"output\"} or CSV with those "
    "columns; Mooncake JSON lines {\"timestamp\", \"input_length\", \"output_length\", "
    "\"hash_ids\"}; Azure CSV (TIMESTAMP, ContextTokens, GeneratedTokens); BurstGPT CSV "
    "(Timestamp, Request tokens, Response tokens); ShareGPT JSON ([{\"conversations\": "
    "[...]}, ...]); Vidur CSV (num_prefill_tokens, num_decode_tokens[, arrived_at]); or "
    "--requests-format " REQUEST_FORMAT_NAMES;

/* The first line that is not blank or a comment, trimmed, in a new string (NULL: none). */
static char *first_line(const char *text)
{
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        g_autofree char *l = g_strstrip(g_strndup(p, n));
        if (l[0] && l[0] != '#')
            return g_steal_pointer(&l);
        if (!e)
            break;
        p = e + 1;
    }
    return NULL;
}

/* The column of `name` in a CSV header (exact after trimming and unquoting), or -1. */
static int csv_column(char **cols, const char *name)
{
    for (int i = 0; cols[i]; i++) {
        char *c = g_strstrip(cols[i]);
        size_t n = strlen(c);
        if (n >= 2 && c[0] == '"' && c[n - 1] == '"') {
            c[n - 1] = 0;
            c++;
        }
        if (strcmp(c, name) == 0)
            return i;
    }
    return -1;
}

static bool csv_has(const char *header, const char *a, const char *b)
{
    g_auto(GStrv) cols = g_strsplit(header, ",", -1);
    return csv_column(cols, a) >= 0 && csv_column(cols, b) >= 0;
}

RequestFormat request_format_detect(const char *text, char **why)
{
    g_autofree char *l = first_line(text);
    if (!l) {
        *why = g_strdup_printf("the trace has no requests; %s", formats_help);
        return REQUEST_FORMAT_AUTO;
    }
    if (l[0] == '[')
        return REQUEST_FORMAT_SHAREGPT;
    if (l[0] == '{') {
        if (strstr(l, "\"input_length\""))
            return REQUEST_FORMAT_MOONCAKE;
        if (strstr(l, "\"conversations\""))
            return REQUEST_FORMAT_SHAREGPT;
        return REQUEST_FORMAT_RANKSIM; /* its own reader names what a line lacks */
    }
    if (csv_has(l, "ContextTokens", "GeneratedTokens"))
        return REQUEST_FORMAT_AZURE;
    if (csv_has(l, "Request tokens", "Response tokens"))
        return REQUEST_FORMAT_BURSTGPT;
    if (csv_has(l, "num_prefill_tokens", "num_decode_tokens"))
        return REQUEST_FORMAT_VIDUR;
    /* a header naming any of ranksim's own columns is ranksim's: its reader names the one
     * missing */
    if (csv_has(l, "prompt", "prompt") || csv_has(l, "output", "output") ||
        csv_has(l, "arrival_s", "arrival_s"))
        return REQUEST_FORMAT_RANKSIM;
    g_autofree char *shown = g_utf8_make_valid(l, MIN(strlen(l), 120));
    *why = g_strdup_printf("the first line '%s' is none of the trace formats; %s", shown,
                           formats_help);
    return REQUEST_FORMAT_AUTO;
}

/* ---- CSV formats ---- */

/* A whole cell as a number >= 0 (quotes and blanks around it allowed). */
static bool cell_number(GError **error, const char *file, guint line, const char *key,
                        const char *cell, double *out)
{
    g_autofree char *c = g_strstrip(g_strdup(cell));
    size_t n = strlen(c);
    char *s = c;
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = 0;
        s++;
    }
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (!s[0] || !end || *end || !isfinite(v) || v < 0)
        return fail(error, file, line, key, "'%s' is not a number >= 0", cell);
    *out = v;
    return true;
}

/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Azure's "2023-11-16 18:15:46.6805900" (or with a 'T') as seconds since the epoch (UTC). */
static bool azure_time(GError **error, const char *file, guint line, const char *cell,
                       double *out)
{
    int y, mo, d, h, mi, n = 0;
    double s;
    char sep;
    g_autofree char *c = g_strstrip(g_strdup(cell));
    if (sscanf(c, "%d-%d-%d%c%d:%d:%lf%n", &y, &mo, &d, &sep, &h, &mi, &s, &n) != 7 ||
        (sep != ' ' && sep != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 ||
        mi < 0 || mi > 59 || !(s >= 0 && s < 61) ||
        (c[n] && strcmp(c + n, "Z") != 0 && strcmp(c + n, "+00:00") != 0))
        return fail(error, file, line, "TIMESTAMP",
                    "'%s' is not a date and time; valid: 2023-11-16 18:15:46.6805900", cell);
    *out = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60) + s;
    return true;
}

typedef struct {
    const char *arrival, *prompt, *output; /* column names; arrival may be NULL */
    double arrival_scale;                  /* seconds per unit */
    bool azure_time;                       /* arrival is a date and time */
    bool skip_empty_output;                /* BurstGPT: 0 response tokens = a failed request */
} CsvShape;

static bool read_csv(const CsvShape *sh, const char *file, char *text, RequestTrace *out,
                     GError **error)
{
    int ca = -1, cp = -1, co = -1;
    bool header = false;
    double t0 = NAN;
    guint line = 0;
    for (char *p = text, *e; p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e)
            *e = 0;
        line++;
        char *l = g_strstrip(p);
        if (!l[0] || l[0] == '#')
            continue;
        g_auto(GStrv) f = g_strsplit(l, ",", -1);
        if (!header) {
            ca = sh->arrival ? csv_column(f, sh->arrival) : -1;
            cp = csv_column(f, sh->prompt);
            co = csv_column(f, sh->output);
            if (cp < 0 || co < 0)
                return fail(error, file, line, cp < 0 ? sh->prompt : sh->output,
                            "missing from the CSV header");
            header = true;
            continue;
        }
        int nf = (int)g_strv_length(f);
        int need = MAX(MAX(ca, cp), co);
        if (nf <= need)
            return fail(error, file, line, sh->prompt, "the row has %d fields, the header %d",
                        nf, need + 1);
        RequestRow r = {.line = line, .arrival_s = NAN};
        if (!cell_number(error, file, line, sh->prompt, f[cp], &r.prompt) ||
            !cell_number(error, file, line, sh->output, f[co], &r.output))
            return false;
        if (ca >= 0) {
            double t = 0;
            if (sh->azure_time ? !azure_time(error, file, line, f[ca], &t)
                               : !cell_number(error, file, line, sh->arrival, f[ca], &t))
                return false;
            r.arrival_s = t * sh->arrival_scale;
            if (isnan(t0) || r.arrival_s < t0)
                t0 = r.arrival_s;
        }
        if (sh->skip_empty_output && (r.output == 0 || r.prompt == 0)) {
            out->skipped++;
            continue;
        }
        g_array_append_val(out->rows, r);
    }
    if (!isnan(t0)) /* times from the first arrival, as every trace's README counts them */
        for (guint i = 0; i < out->rows->len; i++)
            g_array_index(out->rows, RequestRow, i).arrival_s -= t0;
    return true;
}

/* ---- Mooncake ---- */

typedef struct {
    uint32_t parent;
    int64_t id;
} TrieKey;

static guint trie_hash(gconstpointer k)
{
    const TrieKey *t = k;
    return g_int64_hash(&t->id) * 31u + t->parent;
}

static gboolean trie_equal(gconstpointer a, gconstpointer b)
{
    const TrieKey *x = a, *y = b;
    return x->parent == y->parent && x->id == y->id;
}

/* Each request's longest run of leading hash ids that another request shares, as one prefix
 * group per distinct run (the trie node it ends at): pass 1 counts the requests through every
 * node, pass 2 walks each request down while two or more share the node. A request whose
 * shared run is shorter than another's keeps its own group: nested prefixes are not shared
 * across groups (an approximation, doc/scenario-format.md). */
static void mooncake_prefixes(RequestTrace *out, GArray *ids, GArray *spans)
{
    g_autoptr(GHashTable) trie = g_hash_table_new_full(trie_hash, trie_equal, g_free, NULL);
    g_autoptr(GArray) count = g_array_new(FALSE, TRUE, sizeof(uint32_t));
    g_array_set_size(count, 1); /* the root */
    g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(uint32_t)); /* per id: its node */
    g_array_set_size(nodes, ids->len);
    for (guint r = 0; r < out->rows->len; r++) {
        guint off = g_array_index(spans, guint, 2 * r), n = g_array_index(spans, guint, 2 * r + 1);
        uint32_t node = 0;
        for (guint k = 0; k < n; k++) {
            TrieKey key = {node, g_array_index(ids, int64_t, off + k)};
            gpointer v = NULL;
            if (g_hash_table_lookup_extended(trie, &key, NULL, &v)) {
                node = GPOINTER_TO_UINT(v);
            } else {
                node = count->len;
                g_array_set_size(count, count->len + 1);
                g_hash_table_insert(trie, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(node));
            }
            g_array_index(count, uint32_t, node)++;
            g_array_index(nodes, uint32_t, off + k) = node;
        }
    }
    for (guint r = 0; r < out->rows->len; r++) {
        guint off = g_array_index(spans, guint, 2 * r), n = g_array_index(spans, guint, 2 * r + 1);
        guint depth = 0;
        while (depth < n && g_array_index(count, uint32_t,
                                          g_array_index(nodes, uint32_t, off + depth)) >= 2)
            depth++;
        if (!depth)
            continue;
        RequestRow *row = &g_array_index(out->rows, RequestRow, r);
        row->prefix_id = g_array_index(nodes, uint32_t, off + depth - 1);
        row->prefix = MIN((double)depth * REQUEST_MOONCAKE_BLOCK_TOKENS, row->prompt);
    }
}

/* One member of a Mooncake line: a number >= 0. */
static bool json_number(GError **error, const char *file, guint line, JsonObject *o,
                        const char *key, double *out)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
        (json_node_get_value_type(n) != G_TYPE_INT64 &&
         json_node_get_value_type(n) != G_TYPE_DOUBLE))
        return fail(error, file, line, key, "%s; valid: a number", n ? "not a number" : "missing");
    *out = json_node_get_value_type(n) == G_TYPE_INT64 ? (double)json_node_get_int(n)
                                                        : json_node_get_double(n);
    if (!isfinite(*out) || *out < 0)
        return fail(error, file, line, key, "%g is not a number >= 0", *out);
    return true;
}

static bool read_mooncake(const char *file, char *text, RequestTrace *out, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
    g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(guint)); /* offset, count */
    guint line = 0;
    for (char *p = text, *e; p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e)
            *e = 0;
        line++;
        char *l = g_strstrip(p);
        if (!l[0] || l[0] == '#')
            continue;
        g_autoptr(GError) err = NULL;
        JsonNode *root = NULL;
        if (!sched_json_load(parser, l, -1, &err) ||
            !(root = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_OBJECT(root))
            return fail(error, file, line, "input_length",
                        "not a JSON object%s%s; a Mooncake trace has one per line",
                        err ? ": " : "", err ? err->message : "");
        JsonObject *o = json_node_get_object(root);
        RequestRow r = {.line = line};
        double ms = 0;
        if (!json_number(error, file, line, o, "timestamp", &ms) ||
            !json_number(error, file, line, o, "input_length", &r.prompt) ||
            !json_number(error, file, line, o, "output_length", &r.output))
            return false;
        r.arrival_s = ms / 1000.0; /* milliseconds since the first request */
        guint off = ids->len, n = 0;
        JsonNode *h = json_object_get_member(o, "hash_ids");
        if (h && !JSON_NODE_HOLDS_ARRAY(h))
            return fail(error, file, line, "hash_ids", "not a list; valid: [0, 1, 2, ...]");
        JsonArray *a = h ? json_node_get_array(h) : NULL;
        for (guint k = 0; a && k < json_array_get_length(a); k++) {
            JsonNode *v = json_array_get_element(a, k);
            if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_INT64)
                return fail(error, file, line, "hash_ids", "element %u is not an integer", k);
            int64_t id = json_node_get_int(v);
            g_array_append_val(ids, id);
            n++;
        }
        g_array_append_val(spans, off);
        g_array_append_val(spans, n);
        g_array_append_val(out->rows, r);
    }
    mooncake_prefixes(out, ids, spans);
    return true;
}

/* ---- ShareGPT ---- */

/* A turn's text as tokens: characters / REQUEST_CHARS_PER_TOKEN, rounded up. */
static double text_tokens(JsonArray *turns, guint i)
{
    JsonNode *t = json_array_get_element(turns, i);
    if (!JSON_NODE_HOLDS_OBJECT(t))
        return 0;
    const char *v = json_object_get_string_member_with_default(json_node_get_object(t), "value",
                                                               NULL);
    return v ? ceil((double)g_utf8_strlen(v, -1) / REQUEST_CHARS_PER_TOKEN) : 0;
}

/* As `vllm bench serve --dataset-name sharegpt` samples (vllm/benchmarks/datasets.py,
 * ShareGPTDataset and is_valid_sequence): the first turn is the prompt, the second the output;
 * entries of fewer than two turns, a turn under 4 tokens, a prompt over 1,024 tokens or prompt
 * + output over 2,048 are skipped. Entries are kept in the file's order (vLLM shuffles them with
 * its seed). */
static bool read_sharegpt(const char *file, const char *text, RequestTrace *out, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) err = NULL;
    if (!sched_json_load(parser, text, -1, &err))
        return fail(error, file, 1, "conversations", "not JSON: %s", err->message);
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_ARRAY(root))
        return fail(error, file, 1, "conversations",
                    "not a JSON array; valid: [{\"conversations\": [{\"from\": \"human\", "
                    "\"value\": ...}, {\"from\": \"gpt\", \"value\": ...}]}, ...]");
    JsonArray *all = json_node_get_array(root);
    out->estimated = true;
    for (guint i = 0; i < json_array_get_length(all); i++) {
        JsonNode *e = json_array_get_element(all, i);
        JsonNode *c = JSON_NODE_HOLDS_OBJECT(e)
                          ? json_object_get_member(json_node_get_object(e), "conversations")
                          : NULL;
        if (!c || !JSON_NODE_HOLDS_ARRAY(c))
            return fail(error, file, i + 1, "conversations",
                        "entry %u has no list of turns; valid: {\"conversations\": [...]}",
                        i + 1);
        JsonArray *turns = json_node_get_array(c);
        RequestRow r = {.line = i + 1, .arrival_s = NAN};
        if (json_array_get_length(turns) >= 2) {
            r.prompt = text_tokens(turns, 0);
            r.output = text_tokens(turns, 1);
        }
        if (r.prompt < 4 || r.output < 4 || r.prompt > 1024 || r.prompt + r.output > 2048) {
            out->skipped++;
            continue;
        }
        g_array_append_val(out->rows, r);
    }
    out->skip_why = "as vllm bench serve samples ShareGPT: fewer than two turns, a turn under "
                    "4 tokens, a prompt over 1,024 or prompt + output over 2,048";
    return true;
}

bool request_trace_read(RequestFormat f, const char *file, char *text, RequestTrace *out,
                        GError **error)
{
    if (!out->rows)
        out->rows = g_array_new(FALSE, FALSE, sizeof(RequestRow));
    static const CsvShape azure = {"TIMESTAMP", "ContextTokens", "GeneratedTokens", 1.0, true,
                                   false};
    static const CsvShape burst = {"Timestamp", "Request tokens", "Response tokens", 1.0, false,
                                   true};
    static const CsvShape vidur = {"arrived_at", "num_prefill_tokens", "num_decode_tokens", 1.0,
                                   false, false};
    switch (f) {
    case REQUEST_FORMAT_MOONCAKE:
        return read_mooncake(file, text, out, error);
    case REQUEST_FORMAT_AZURE:
        return read_csv(&azure, file, text, out, error);
    case REQUEST_FORMAT_BURSTGPT:
        if (!read_csv(&burst, file, text, out, error))
            return false;
        out->skip_why = out->skipped ? "BurstGPT's failed requests: 0 request or response tokens"
                                     : NULL;
        return true;
    case REQUEST_FORMAT_SHAREGPT:
        return read_sharegpt(file, text, out, error);
    case REQUEST_FORMAT_VIDUR:
        return read_csv(&vidur, file, text, out, error);
    default:
        return fail(error, file, 1, "format", "%s traces are read by the scenario loader",
                    request_format_name(f));
    }
}
