/* src/output/trace.c — Chrome trace-event JSON for one stored run, streamed from SQLite; see trace.h.
 *
 * The document is written in one pass, in this order:
 *   {"traceEvents":[ metadata events, op slices ("X"), flows ("s"/"t"/"f"), diagnostics ("i") ],
 *    "displayTimeUnit":"ns", "metadata":{ the run row }}
 * Each section is one prepared statement stepped row by row; every event is formatted into one
 * reused buffer and handed to a buffered FILE*, so memory stays flat whatever the run size (the
 * only other state is the run row, kept for the trailing metadata object).
 *
 * Costs: the rows come through the rank_ops view (either layout, src/store/store-ops.h), so SQLite
 * sorts the run's rows twice — by
 * (rank, idx) for the slices and by (group_id, seq, rank) for the flows — O(N log N) in its
 * sorter, which spills to temporary files instead of growing memory.
 *
 * Flows: one flow id per collective instance (run, group, seq), members chained in rank order;
 * window functions over the second sort give each row its instance's size and shared span, so
 * no instance is buffered here. All events of a chain sit at one instant strictly inside every
 * member's slice (see write_flows); not at a slice start, where the previous op of the thread
 * may end at the very same time and the viewer could bind the flow to it.
 *
 * All numbers are written without printf's %f (locale-dependent): times are integer
 * nanoseconds printed as microseconds with three decimals; other reals go through
 * g_ascii_formatd(). Strings are escaped for JSON; invalid UTF-8 bytes become U+FFFD.
 */
#include "trace.h"

#include "../util/outfile.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef RANKSIM_VERSION
#define RANKSIM_VERSION "unknown"
#endif

/* Characters of a diagnostic's first message line kept in its event name. */
#define TRACE_DIAG_NAME_CHARS 120

static void stmt_free(sqlite3_stmt *st)
{
    sqlite3_finalize(st);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, stmt_free)

typedef struct {
    Store *store;
    sqlite3 *db;
    int64_t run_id;
    const char *out_path;
    OutFile *out;        /* the output (src/util/outfile.h: temp + rename, or in place; "-" = stdout) */
    FILE *f;             /* its stream */
    GConverter *gz;      /* a gzip compressor when the path ends in .gz, else NULL */
    uint32_t per_node;   /* devices per node from the run's hardware line (0: unknown: one
                            process for every rank) */
    GHashTable *members; /* group name -> GArray<int32> ranks, for diagnostics on groups */
    GPtrArray *group_ranks; /* group id -> GArray<int32> ranks (NULL holes) */
    GHashTable *arrived;    /* (group id, seq) of never-completed instances -> GArray<int32> */
    GString *buf;           /* the event being formatted, reused */
    GString *rest;          /* an op's name, cat and args, for its "E" event */
    int64_t lane_rank;      /* the rank whose tracks lane_end describes */
    GArray *lane_end;       /* int64: when each of its tracks is free again */
    GHashTable *lane_of;    /* op_key(rank, idx) -> tid, for the ops on extra tracks */
    GString *meta;          /* the trailing "metadata" object */
    uint64_t n_events;
    int64_t n_ranks;
    int64_t sim_end_ns;        /* runs.sim_end_us in ns; -1 if unknown */
    int64_t blocked_end_ns;    /* where never-completed ops end (see trace.h); -1 if unknown */
    const TraceFilter *filter; /* never NULL */
    char *where;               /* the filter as SQL on rank_ops o ("" when none) */
} TraceWriter;

/* ---- JSON formatting ---- */

/* Start of the next character: one byte for ASCII and for a byte that does not begin a valid
 * UTF-8 sequence (so invalid input still advances). */
static const char *utf8_step(const char *p, const char *end, bool *valid)
{
    if ((unsigned char)*p < 0x80) {
        *valid = true;
        return p + 1;
    }
    gunichar u = g_utf8_get_char_validated(p, end - p);
    *valid = u != (gunichar)-1 && u != (gunichar)-2;
    return *valid ? g_utf8_next_char(p) : p + 1;
}

/* Appends s[0..len) escaped for a JSON string, without the quotes. */
static void json_escape(GString *b, const char *s, gsize len)
{
    const char *p = s, *end = s + len;
    while (p < end) {
        const char *run = p;
        while (p < end) {
            unsigned char c = (unsigned char)*p;
            if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
                break;
            p++;
        }
        if (p > run)
            g_string_append_len(b, run, p - run);
        if (p == end)
            break;
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) {
            bool valid;
            const char *next = utf8_step(p, end, &valid);
            if (valid)
                g_string_append_len(b, p, next - p);
            else
                g_string_append(b, "\\ufffd");
            p = next;
            continue;
        }
        switch (c) {
        case '"':
            g_string_append(b, "\\\"");
            break;
        case '\\':
            g_string_append(b, "\\\\");
            break;
        case '\n':
            g_string_append(b, "\\n");
            break;
        case '\r':
            g_string_append(b, "\\r");
            break;
        case '\t':
            g_string_append(b, "\\t");
            break;
        case '\b':
            g_string_append(b, "\\b");
            break;
        case '\f':
            g_string_append(b, "\\f");
            break;
        default: {
            static const char hex[] = "0123456789abcdef";
            char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
            g_string_append(b, u);
            break;
        }
        }
        p++;
    }
}

static void json_string(GString *b, const char *s, gsize len)
{
    g_string_append_c(b, '"');
    json_escape(b, s, len);
    g_string_append_c(b, '"');
}

static void json_cstring(GString *b, const char *s)
{
    json_string(b, s, strlen(s));
}

/* A text column as a JSON string ("" for NULL). */
static void json_column_string(GString *b, sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    json_string(b, s ? s : "", s ? (gsize)sqlite3_column_bytes(st, col) : 0);
}

static void json_int(GString *b, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    g_string_append_len(b, tmp, n);
}

/* Nanoseconds as microseconds with exactly three decimals. */
static void json_us(GString *b, int64_t ns)
{
    char tmp[32];
    uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    int n = snprintf(tmp, sizeof tmp, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000,
                     (unsigned)(a % 1000));
    g_string_append_len(b, tmp, n);
}

/* A real with three decimals, locale-independent; null if not finite. */
static void json_real3(GString *b, double v)
{
    if (!isfinite(v)) {
        g_string_append(b, "null");
        return;
    }
    char tmp[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(b, g_ascii_formatd(tmp, sizeof tmp, "%.3f", v));
}

/* Appends `,"key":` (the comma unless `first`). */
static void json_key(GString *b, const char *key, bool first)
{
    if (!first)
        g_string_append_c(b, ',');
    g_string_append_c(b, '"');
    g_string_append(b, key);
    g_string_append(b, "\":");
}

/* µs stored as REAL back to integer ns. */
static int64_t us_to_ns(double us)
{
    return isfinite(us) ? (int64_t)llround(us * 1000.0) : 0;
}

/* ---- output ---- */

static bool set_sql_error(TraceWriter *w, GError **error, const char *what)
{
    g_set_error(error, STORE_ERROR, 0, "%s: trace of run %" PRId64 ": %s: %s", store_path(w->store),
                w->run_id, what, sqlite3_errmsg(w->db));
    return false;
}

static bool set_write_error(TraceWriter *w, GError **error, int err)
{
    if (err == 0)
        err = EIO;
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "cannot write trace to %s: %s",
                strcmp(w->out_path, "-") == 0 ? "stdout" : w->out_path, g_strerror(err));
    return false;
}

/* Starts an event in w->buf (the separator, then "{"). */
static void event_begin(TraceWriter *w)
{
    g_string_truncate(w->buf, 0);
    if (w->n_events++)
        g_string_append(w->buf, ",\n");
    g_string_append_c(w->buf, '{');
}

/* Closes the event and writes it out. */
static bool out_bytes(TraceWriter *w, const char *s, gsize len, bool flush, GError **error);

static bool event_end(TraceWriter *w, GError **error)
{
    g_string_append_c(w->buf, '}');
    return out_bytes(w, w->buf->str, w->buf->len, false, error);
}

/* Writes `len` bytes to the output, through the gzip compressor for a .gz path (`flush`: the
 * last bytes, the compressor's trailer follows). */
static bool out_bytes(TraceWriter *w, const char *s, gsize len, bool flush, GError **error)
{
    if (!w->gz)
        return fwrite(s, 1, len, w->f) == len || set_write_error(w, error, errno);
    char zbuf[65536];
    for (;;) {
        gsize read = 0, written = 0;
        g_autoptr(GError) zerr = NULL;
        GConverterResult r = g_converter_convert(
            w->gz, s, len, zbuf, sizeof zbuf,
            flush ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS, &read, &written, &zerr);
        if (r == G_CONVERTER_ERROR) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: gzip: %s", w->out_path,
                        zerr->message);
            return false;
        }
        if (written && fwrite(zbuf, 1, written, w->f) != written)
            return set_write_error(w, error, errno);
        s += read;
        len -= read;
        if (r == G_CONVERTER_FINISHED || (!flush && len == 0))
            return true;
    }
}

static bool write_raw(TraceWriter *w, const char *s, gsize len, GError **error)
{
    return out_bytes(w, s, len, false, error);
}

/* Steps a statement: true with *row set while there are rows, false with `error` set on a
 * SQLite failure. */
static bool step(TraceWriter *w, sqlite3_stmt *st, bool *row, const char *what, GError **error)
{
    int rc = sqlite3_step(st);
    *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE || set_sql_error(w, error, what);
}

static sqlite3_stmt *prepare(TraceWriter *w, const char *sql, const char *what, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_sql_error(w, error, what);
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_int64(st, 1, w->run_id);
    return st;
}

/* ---- the filter ---- */

static bool rank_kept(const TraceWriter *w, int64_t r)
{
    const GArray *a = w->filter->ranks;
    if (!a)
        return true;
    for (guint i = 0; i + 1 < a->len; i += 2)
        if (r >= g_array_index(a, int64_t, i) && r <= g_array_index(a, int64_t, i + 1))
            return true;
    return false;
}

/* The filter as SQL conditions on rank_ops o (numbers only: nothing user-typed is pasted);
 * ?2 is the blocked end. */
static char *filter_sql(const TraceFilter *f)
{
    GString *s = g_string_new(NULL);
    if (f->ranks) {
        g_string_append(s, " AND (");
        for (guint i = 0; i + 1 < f->ranks->len; i += 2)
            g_string_append_printf(s, "%so.rank BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT,
                                   i ? " OR " : "", g_array_index(f->ranks, int64_t, i),
                                   g_array_index(f->ranks, int64_t, i + 1));
        g_string_append_c(s, ')');
    }
    if (f->layer_lo >= 0)
        g_string_append_printf(s, " AND o.layer BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT,
                               f->layer_lo, f->layer_hi);
    if (f->to_ns >= 0)
        g_string_append_printf(s, " AND o.start_ns < %" G_GINT64_FORMAT, f->to_ns);
    if (f->from_ns >= 0)
        g_string_append_printf(s, " AND COALESCE(o.end_ns, ?2) >= %" G_GINT64_FORMAT, f->from_ns);
    return g_string_free(s, FALSE);
}

/* When the ops that never completed end (trace.h): the hang_surface diagnostic's
 * rpc_timeout_s (an absolute simulated time), unless a simulated watchdog stopped the run. */
static bool read_blocked_end(TraceWriter *w, GError **error)
{
    w->blocked_end_ns = w->sim_end_ns;
    g_autoptr(sqlite3_stmt) st =
        prepare(w,
                "SELECT (SELECT count(*) FROM diagnostics WHERE run_id = ?1 AND kind = 'timeout'),"
                " (SELECT detail FROM diagnostics WHERE run_id = ?1 AND kind = 'hang_surface'"
                "  ORDER BY id LIMIT 1)",
                "read diagnostics", error);
    bool row;
    if (!st || !step(w, st, &row, "read diagnostics", error))
        return false;
    const char *d = row ? (const char *)sqlite3_column_text(st, 1) : NULL;
    const char *k = d ? strstr(d, "\"rpc_timeout_s\":") : NULL;
    if (row && sqlite3_column_int64(st, 0) == 0 && k) {
        char *end = NULL;
        double sec = g_ascii_strtod(k + strlen("\"rpc_timeout_s\":"), &end);
        if (end != k + strlen("\"rpc_timeout_s\":") && sec > 0 && sec < 1e9)
            w->blocked_end_ns = MAX(w->blocked_end_ns, (int64_t)llround(sec * 1e9));
    }
    return true;
}

static bool parse_int_range(const char *s, int64_t *lo, int64_t *hi)
{
    const char *dash = strchr(s, '-');
    guint64 a = 0, b = 0;
    if (!dash)
        return g_ascii_string_to_unsigned(s, 10, 0, G_MAXINT32, &a, NULL) &&
               (*lo = *hi = (int64_t)a, true);
    g_autofree char *x = g_strndup(s, (gsize)(dash - s));
    if (!g_ascii_string_to_unsigned(x, 10, 0, G_MAXINT32, &a, NULL) ||
        !g_ascii_string_to_unsigned(dash + 1, 10, 0, G_MAXINT32, &b, NULL) || b < a)
        return false;
    *lo = (int64_t)a;
    *hi = (int64_t)b;
    return true;
}

/* "12.5ms", "300us", "2s", "40000ns", "1500" (us) -> ns; -1 when malformed. */
static int64_t parse_time_ns(const char *s)
{
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (end == s || !(v >= 0) || v > 1e15)
        return -1;
    double scale = 1e3;
    if (!*end)
        scale = 1e3;
    else if (strcmp(end, "ns") == 0)
        scale = 1;
    else if (strcmp(end, "us") == 0)
        scale = 1e3;
    else if (strcmp(end, "ms") == 0)
        scale = 1e6;
    else if (strcmp(end, "s") == 0)
        scale = 1e9;
    else
        return -1;
    return (int64_t)llround(v * scale);
}

bool trace_filter_parse(TraceFilter *f, const char *ranks, const char *layers, const char *window,
                        GError **error)
{
    *f = (TraceFilter)TRACE_FILTER_ALL;
    if (ranks) {
        f->ranks = g_array_new(FALSE, FALSE, sizeof(int64_t));
        g_auto(GStrv) parts = g_strsplit(ranks, ",", -1);
        for (char **p = parts; *p; p++) {
            int64_t lo, hi;
            if (!parse_int_range(g_strstrip(*p), &lo, &hi)) {
                g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "--ranks '%s': '%s' is not a rank or a range; expected e.g. "
                            "0-3,8",
                            ranks, *p);
                trace_filter_clear(f);
                return false;
            }
            g_array_append_val(f->ranks, lo);
            g_array_append_val(f->ranks, hi);
        }
    }
    if (layers && !parse_int_range(layers, &f->layer_lo, &f->layer_hi)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--layers '%s': expected a layer or a range, e.g. 0-2", layers);
        trace_filter_clear(f);
        return false;
    }
    if (window) {
        const char *colon = strchr(window, ':');
        g_autofree char *a = colon ? g_strndup(window, (gsize)(colon - window)) : NULL;
        int64_t from = a && *a ? parse_time_ns(a) : -1;
        int64_t to = colon && colon[1] ? parse_time_ns(colon + 1) : -1;
        if (!colon || (a && *a && from < 0) || (colon[1] && to < 0) ||
            (from >= 0 && to >= 0 && to <= from)) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--window '%s': expected START:END in simulated time, each a number "
                        "with ns, us, ms or s (us without one), END after START; either may "
                        "be left out, e.g. 10ms:25ms or :500us",
                        window);
            trace_filter_clear(f);
            return false;
        }
        f->from_ns = from;
        f->to_ns = to;
    }
    return true;
}

void trace_filter_clear(TraceFilter *f)
{
    if (f->ranks)
        g_array_unref(f->ranks);
    *f = (TraceFilter)TRACE_FILTER_ALL;
}

/* ---- sections ---- */

/* Reads the run row: fills w->meta, w->n_ranks, w->sim_end_ns and the process name `*name`
 * (caller frees). Unknown run -> G_IO_ERROR_NOT_FOUND. */
static bool read_run(TraceWriter *w, char **name, GError **error)
{
    g_autoptr(sqlite3_stmt) st = prepare(
        w,
        "SELECT id, name, kind, status, exit_code, ranks, sim_end_us, events, rank_ops, wall_ms,"
        " created_at, path, timeline, version FROM runs WHERE id = ?",
        "read run", error);
    if (!st)
        return false;
    bool row;
    if (!step(w, st, &row, "read run", error))
        return false;
    if (!row) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "run %" PRId64 " not found in %s",
                    w->run_id, store_path(w->store));
        return false;
    }
    const char *run_name = (const char *)sqlite3_column_text(st, 1);
    *name = g_strdup(run_name ? run_name : "?");
    w->n_ranks = sqlite3_column_int64(st, 5); /* NULL (invalid runs) -> 0 */
    w->sim_end_ns =
        sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : us_to_ns(sqlite3_column_double(st, 6));

    GString *m = w->meta;
    g_string_append_c(m, '{');
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        json_key(m, sqlite3_column_name(st, c), c == 0);
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER:
            json_int(m, sqlite3_column_int64(st, c));
            break;
        case SQLITE_FLOAT:
            json_real3(m, sqlite3_column_double(st, c));
            break;
        case SQLITE_NULL:
            g_string_append(m, "null");
            break;
        default:
            json_column_string(m, st, c);
            break;
        }
    }
    json_key(m, "generator", false);
    json_cstring(m, "ranksim " RANKSIM_VERSION);
    g_string_append_c(m, '}');
    return true;
}

/* The process (track group) of a rank: its node, when the run says how many devices a node
 * has. */
static int64_t pid_of(const TraceWriter *w, int64_t rank)
{
    return w->per_node && rank >= 0 ? rank / w->per_node : 0;
}

static void json_pid(GString *b, const TraceWriter *w, int64_t rank)
{
    g_string_append(b, "\"pid\":");
    json_int(b, pid_of(w, rank));
}

/* process_name (one process per node: "ranksim run N: NAME", with "— node K (ranks a-b)" when
 * the run spans several), then thread_name and thread_sort_index per rank. */
static bool write_metadata_events(TraceWriter *w, const char *run_name, GError **error)
{
    int64_t nodes = w->n_ranks > 0 ? pid_of(w, w->n_ranks - 1) + 1 : 1;
    for (int64_t k = 0; k < nodes; k++) {
        g_autofree char *pname =
            nodes == 1 ? g_strdup_printf("ranksim run %" PRId64 ": %s", w->run_id, run_name)
                       : g_strdup_printf("ranksim run %" PRId64 ": %s — node %" PRId64
                                         " (ranks %" PRId64 "-%" PRId64 ")",
                                         w->run_id, run_name, k, k * w->per_node,
                                         MIN((k + 1) * w->per_node, w->n_ranks) - 1);
        event_begin(w);
        g_string_append(w->buf, "\"ph\":\"M\",\"pid\":");
        json_int(w->buf, k);
        g_string_append(w->buf, ",\"name\":\"process_name\",\"args\":{\"name\":");
        json_cstring(w->buf, pname);
        g_string_append_c(w->buf, '}');
        if (!event_end(w, error))
            return false;
        if (nodes > 1) {
            event_begin(w);
            g_string_append(w->buf, "\"ph\":\"M\",\"pid\":");
            json_int(w->buf, k);
            g_string_append(w->buf, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
            json_int(w->buf, k);
            g_string_append_c(w->buf, '}');
            if (!event_end(w, error))
                return false;
        }
    }
    for (int64_t r = 0; r < w->n_ranks; r++) {
        if (!rank_kept(w, r))
            continue;
        event_begin(w);
        g_string_append(w->buf, "\"ph\":\"M\",");
        json_pid(w->buf, w, r);
        g_string_append(w->buf, ",\"tid\":");
        json_int(w->buf, r);
        g_string_append(w->buf, ",\"name\":\"thread_name\",\"args\":{\"name\":\"rank ");
        json_int(w->buf, r);
        g_string_append(w->buf, "\"}");
        if (!event_end(w, error))
            return false;
        event_begin(w);
        g_string_append(w->buf, "\"ph\":\"M\",");
        json_pid(w->buf, w, r);
        g_string_append(w->buf, ",\"tid\":");
        json_int(w->buf, r);
        g_string_append(w->buf, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
        json_int(w->buf, r);
        g_string_append_c(w->buf, '}');
        if (!event_end(w, error))
            return false;
    }
    return true;
}

static void array_unref0(gpointer a)
{
    if (a)
        g_array_unref(a);
}

static guint64 inst_key(int64_t group, int64_t seq)
{
    return ((guint64)(uint32_t)group << 40) ^ (guint64)seq;
}

/* The run's groups (members by name and by id), the ranks that arrived at each instance that
 * never completed, and the devices per node of its hardware line ("..., 2 nodes x 8
 * devices, ..."). */
static bool load_layout(TraceWriter *w, GError **error)
{
    w->members =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
    w->group_ranks = g_ptr_array_new_with_free_func(array_unref0);
    w->arrived =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)g_array_unref);
    g_autoptr(sqlite3_stmt) hw =
        prepare(w, "SELECT hardware FROM runs WHERE id = ?", "read run", error);
    if (!hw)
        return false;
    bool row;
    if (!step(w, hw, &row, "read run", error))
        return false;
    const char *line = row ? (const char *)sqlite3_column_text(hw, 0) : NULL;
    const char *x = line ? strstr(line, " x ") : NULL;
    if (x) {
        guint64 n = g_ascii_strtoull(x + 3, NULL, 10);
        if (n >= 1 && n < (1u << 20) && strstr(x, " devices"))
            w->per_node = (uint32_t)n;
    }
    g_autoptr(sqlite3_stmt) st =
        prepare(w, "SELECT id, name, ranks FROM groups WHERE run_id = ?", "read groups", error);
    if (!st)
        return false;
    for (;;) {
        if (!step(w, st, &row, "read groups", error))
            return false;
        if (!row)
            break;
        GArray *a = g_array_new(FALSE, FALSE, sizeof(int32_t));
        const char *r = (const char *)sqlite3_column_text(st, 2);
        for (const char *p = r ? r : ""; *p;) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (end != p) {
                int32_t v32 = (int32_t)v;
                g_array_append_val(a, v32);
                p = end;
            } else {
                p++;
            }
        }
        guint id = (guint)sqlite3_column_int64(st, 0);
        if (id >= w->group_ranks->len)
            g_ptr_array_set_size(w->group_ranks, id + 1);
        if (g_ptr_array_index(w->group_ranks, id))
            g_array_unref(g_ptr_array_index(w->group_ranks, id));
        w->group_ranks->pdata[id] = g_array_ref(a);
        g_hash_table_replace(w->members, g_strdup((const char *)sqlite3_column_text(st, 1)), a);
    }
    g_autoptr(sqlite3_stmt) in = prepare(w,
                                         "SELECT group_id, seq, rank FROM rank_ops WHERE run_id = ?"
                                         " AND end_ns IS NULL AND group_id IS NOT NULL",
                                         "read blocked", error);
    if (!in)
        return false;
    for (;;) {
        if (!step(w, in, &row, "read blocked", error))
            return false;
        if (!row)
            return true;
        gint64 key = (gint64)inst_key(sqlite3_column_int64(in, 0), sqlite3_column_int64(in, 1));
        GArray *a = g_hash_table_lookup(w->arrived, &key);
        if (!a) {
            a = g_array_new(FALSE, FALSE, sizeof(int32_t));
            g_hash_table_insert(w->arrived, g_memdup2(&key, sizeof key), a);
        }
        int32_t rk = (int32_t)sqlite3_column_int64(in, 2);
        g_array_append_val(a, rk);
    }
}

/* A blocked op's "waiting_for": the members of its group that never arrived at its
 * instance (empty when every member arrived: a mismatch). */
static void blocked_args(TraceWriter *w, GString *b, int64_t group, int64_t seq)
{
    const GArray *m = group >= 0 && (guint64)group < w->group_ranks->len
                          ? g_ptr_array_index(w->group_ranks, group)
                          : NULL;
    if (!m)
        return;
    gint64 key = (gint64)inst_key(group, seq);
    const GArray *arr = g_hash_table_lookup(w->arrived, &key);
    g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < m->len; i++) {
        int32_t r = g_array_index(m, int32_t, i);
        bool here = false;
        for (guint k = 0; arr && k < arr->len && !here; k++)
            here = g_array_index(arr, int32_t, k) == r;
        if (!here)
            g_array_append_val(missing, r);
    }
    g_autofree char *who =
        missing->len
            ? sched_format_ranks((const int32_t *)(const void *)missing->data, missing->len)
            : g_strdup("none (every member arrived: their sizes disagree)");
    json_key(b, "waiting_for", false);
    json_cstring(b, who);
}

/* End of an op: its end_ns, or for ops that never completed the blocked end (never before
 * the start). */
static int64_t op_end_ns(const TraceWriter *w, int64_t start_ns, sqlite3_stmt *st, int col,
                         bool *incomplete)
{
    *incomplete = sqlite3_column_type(st, col) == SQLITE_NULL;
    int64_t end = *incomplete ? w->blocked_end_ns : sqlite3_column_int64(st, col);
    return end > start_ns ? end : start_ns;
}

/* The track of an op of `rank` over [start, end): the rank's own (tid = rank) unless an op
 * still running there overlaps it — an eager op (a pipeline send) runs on while the rank goes
 * on — then the first of the rank's extra tracks free by `start` ("rank N (overlapping)", tid
 * rank + k x TRACE_LANE_TID), announced by a thread_name event when first used. A rank's ops
 * arrive in idx order, which is start order, so first-fit keeps every track sequential and
 * the B/E pairs on each nest trivially. Returns the tid, -1 after a write error. */
#define TRACE_LANE_TID (INT64_C(1) << 24)

static int64_t lane_tid(TraceWriter *w, int64_t rank, int64_t start, int64_t end, GError **error)
{
    if (rank != w->lane_rank) {
        w->lane_rank = rank;
        g_array_set_size(w->lane_end, 0);
    }
    guint k = 0;
    while (k < w->lane_end->len && g_array_index(w->lane_end, int64_t, k) > start)
        k++;
    if (k == w->lane_end->len) {
        g_array_append_val(w->lane_end, end);
        if (k > 0) { /* a new extra track: name it, next to the rank's own */
            GString *b = w->buf;
            for (int m = 0; m < 2; m++) {
                event_begin(w);
                g_string_append(b, "\"ph\":\"M\",");
                json_pid(b, w, rank);
                g_string_append(b, ",\"tid\":");
                json_int(b, rank + (int64_t)k * TRACE_LANE_TID);
                if (m == 0) {
                    g_string_append(b, ",\"name\":\"thread_name\",\"args\":{\"name\":\"rank ");
                    json_int(b, rank);
                    g_string_append(b, " (overlapping)\"}");
                } else {
                    g_string_append(b, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
                    json_int(b, rank);
                    g_string_append_c(b, '}');
                }
                if (!event_end(w, error))
                    return -1;
            }
        }
    } else {
        g_array_index(w->lane_end, int64_t, k) = end;
    }
    return rank + (int64_t)k * TRACE_LANE_TID;
}

/* (rank, idx) as a hash key: the flows find an op moved to an extra track. */
static gsize op_key(int64_t rank, int64_t idx)
{
    return (gsize)(((guint64)rank << 40) ^ (guint64)idx) + 1;
}

/* One begin ("B", with the op's name and args) and one end ("E") event per op row, in (rank,
 * idx) order, on the rank's track or, where ops overlap, an extra one (lane_tid). */
static bool write_ops(TraceWriter *w, GError **error)
{
    enum { RANK, IDX, LAYER, NAME, KIND, TOKENS, GROUP, GROUP_ID, SEQ, COUNT, DTYPE, START, END };
    g_autofree char *sql =
        g_strdup_printf("SELECT o.rank, o.idx, o.layer, COALESCE(n.name, 'name ' || o.name_id),"
                        " COALESCE(k.name, 'kind ' || o.kind), o.tokens,"
                        " COALESCE(g.name, 'group ' || o.group_id), o.group_id, o.seq, o.count,"
                        " COALESCE(d.name, 'dtype ' || o.dtype), o.start_ns, o.end_ns"
                        " FROM rank_ops o"
                        " LEFT JOIN names n ON n.run_id = o.run_id AND n.id = o.name_id"
                        " LEFT JOIN op_kinds k ON k.id = o.kind"
                        " LEFT JOIN dtypes d ON d.id = o.dtype"
                        " LEFT JOIN groups g ON g.run_id = o.run_id AND g.id = o.group_id"
                        " WHERE o.run_id = ?1%s ORDER BY o.rank, o.idx",
                        w->where);
    g_autoptr(sqlite3_stmt) st = prepare(w, sql, "read ops", error);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 2, w->blocked_end_ns);
    GString *b = w->buf;
    for (;;) {
        bool row;
        if (!step(w, st, &row, "read ops", error))
            return false;
        if (!row)
            return true;
        int64_t start = sqlite3_column_int64(st, START);
        bool incomplete;
        int64_t end = op_end_ns(w, start, st, END, &incomplete);
        int64_t rank = sqlite3_column_int64(st, RANK);
        int64_t tid = lane_tid(w, rank, start, end, error);
        if (tid < 0)
            return false;
        if (tid != rank)
            g_hash_table_insert(w->lane_of,
                                GSIZE_TO_POINTER(op_key(rank, sqlite3_column_int64(st, IDX))),
                                GSIZE_TO_POINTER((gsize)tid));
        event_begin(w);
        g_string_append(b, "\"ph\":\"B\",");
        json_pid(b, w, rank);
        g_string_append(b, ",\"tid\":");
        json_int(b, tid);
        g_string_append(b, ",\"ts\":");
        json_us(b, start);
        gsize rest_at = b->len; /* name, cat, args: repeated on the "E" */
        g_string_append(b, ",\"name\":");
        json_column_string(b, st, NAME);
        g_string_append(b, ",\"cat\":");
        json_column_string(b, st, KIND);
        g_string_append(b, ",\"args\":{\"idx\":");
        json_int(b, sqlite3_column_int64(st, IDX));
        if (sqlite3_column_type(st, LAYER) != SQLITE_NULL) {
            json_key(b, "layer", false);
            json_int(b, sqlite3_column_int64(st, LAYER));
        }
        if (sqlite3_column_type(st, TOKENS) != SQLITE_NULL) {
            json_key(b, "tokens", false);
            json_int(b, sqlite3_column_int64(st, TOKENS));
        }
        if (sqlite3_column_type(st, GROUP_ID) != SQLITE_NULL) {
            json_key(b, "group", false);
            json_column_string(b, st, GROUP);
            json_key(b, "seq", false);
            json_int(b, sqlite3_column_int64(st, SEQ));
            json_key(b, "count", false);
            json_int(b, sqlite3_column_int64(st, COUNT));
            json_key(b, "dtype", false);
            json_column_string(b, st, DTYPE);
        }
        if (incomplete) {
            g_string_append(b, ",\"incomplete\":true");
            /* who it waits for: the members of its group that never arrived */
            if (sqlite3_column_type(st, GROUP_ID) != SQLITE_NULL)
                blocked_args(w, b, sqlite3_column_int64(st, GROUP_ID),
                             sqlite3_column_int64(st, SEQ));
        }
        g_string_append_c(b, '}');
        if (incomplete) /* blocked: red in Perfetto and chrome://tracing */
            g_string_append(b, ",\"cname\":\"terrible\"");
        g_string_assign(w->rest, b->str + rest_at);
        if (!event_end(w, error))
            return false;
        /* The end as its own event: a viewer that adds "dur" to "ts" in doubles (speedscope)
         * can land one ulp past the next op's start and nest it inside this one; an "E" at
         * the exact decimal end never does. speedscope pairs an "E" with its "B" by name and
         * args, so both carry them. */
        event_begin(w);
        g_string_append(b, "\"ph\":\"E\",");
        json_pid(b, w, rank);
        g_string_append(b, ",\"tid\":");
        json_int(b, tid);
        g_string_append(b, ",\"ts\":");
        json_us(b, end);
        g_string_append_len(b, w->rest->str, (gssize)w->rest->len);
        if (!event_end(w, error))
            return false;
    }
}

static bool write_flow_event(TraceWriter *w, const char *ph, int64_t rank, int64_t tid,
                             int64_t ts_ns, uint64_t id, const char *group, gsize group_len,
                             int64_t seq, GError **error)
{
    GString *b = w->buf;
    event_begin(w);
    g_string_append(b, "\"ph\":\"");
    g_string_append(b, ph);
    g_string_append(b, "\",");
    if (ph[0] == 'f')
        g_string_append(b, "\"bp\":\"e\",");
    json_pid(b, w, rank);
    g_string_append(b, ",\"tid\":");
    json_int(b, tid);
    g_string_append(b, ",\"ts\":");
    json_us(b, ts_ns);
    g_string_append(b, ",\"id\":");
    json_int(b, (int64_t)id);
    g_string_append(b, ",\"cat\":\"collective\",\"name\":\"");
    json_escape(b, group, group_len);
    g_string_append_c(b, '#');
    json_int(b, seq);
    g_string_append_c(b, '"');
    return event_end(w, error);
}

/* Flow chains, one per instance with two or more members, members in rank order. Every
 * event of a chain gets the same time: the middle of the span all members' slices share
 * (from the last arrival to the first completion, never empty for a real collective). So the
 * chain is in time order whichever rank arrived first — the viewers process flow events by
 * time and drop an "f" seen before its "s" — and ties keep file order, s before t before f. */
static bool write_flows(TraceWriter *w, GError **error)
{
    enum { GROUP_ID, SEQ, RANK, GROUP, START, END, LAST_START, FIRST_END, MEMBERS, IDX };
    g_autofree char *sql = g_strdup_printf(
        "SELECT group_id, seq, rank, group_name, start_ns, end_ns,"
        "  MAX(start_ns) OVER w, MIN(end_ns) OVER w, COUNT(*) OVER w, idx"
        " FROM (SELECT o.group_id, o.seq, o.rank, o.start_ns, o.idx,"
        "   COALESCE(g.name, 'group ' || o.group_id) AS group_name,"
        "   MAX(o.start_ns, COALESCE(o.end_ns, ?2, o.start_ns)) AS end_ns"
        "  FROM rank_ops o LEFT JOIN groups g ON g.run_id = o.run_id AND g.id = o.group_id"
        "  WHERE o.run_id = ?1 AND o.group_id IS NOT NULL%s)"
        " WINDOW w AS (PARTITION BY group_id, seq ORDER BY rank"
        "  ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
        " ORDER BY group_id, seq, rank",
        w->where);
    g_autoptr(sqlite3_stmt) st = prepare(w, sql, "read collectives", error);
    if (!st)
        return false;
    if (w->blocked_end_ns >= 0)
        sqlite3_bind_int64(st, 2, w->blocked_end_ns);
    uint64_t flow_id = 0;
    int64_t pos = 0, cur_group = -1, cur_seq = -1;
    for (;;) {
        bool row;
        if (!step(w, st, &row, "read collectives", error))
            return false;
        if (!row)
            return true;
        int64_t group_id = sqlite3_column_int64(st, GROUP_ID);
        int64_t seq = sqlite3_column_int64(st, SEQ);
        int64_t members = sqlite3_column_int64(st, MEMBERS);
        if (group_id != cur_group || seq != cur_seq) {
            cur_group = group_id;
            cur_seq = seq;
            pos = 0;
            if (members > 1)
                flow_id++;
        } else {
            pos++;
        }
        if (members < 2)
            continue;
        int64_t start = sqlite3_column_int64(st, START), end = sqlite3_column_int64(st, END);
        int64_t lo = sqlite3_column_int64(st, LAST_START), hi = sqlite3_column_int64(st, FIRST_END);
        int64_t ts = lo <= hi ? lo + (hi - lo) / 2 : start + (end - start) / 2;
        ts = CLAMP(ts, start, end);
        const char *ph = pos == 0 ? "s" : pos == members - 1 ? "f" : "t";
        const char *g = (const char *)sqlite3_column_text(st, GROUP);
        gsize glen = g ? (gsize)sqlite3_column_bytes(st, GROUP) : 0;
        int64_t rank = sqlite3_column_int64(st, RANK);
        gpointer lane = g_hash_table_lookup(
            w->lane_of, GSIZE_TO_POINTER(op_key(rank, sqlite3_column_int64(st, IDX))));
        if (!write_flow_event(w, ph, rank, lane ? (int64_t)GPOINTER_TO_SIZE(lane) : rank, ts,
                              flow_id, g ? g : "", glen, seq, error))
            return false;
    }
}

/* Appends "<kind>: <first line of message, at most TRACE_DIAG_NAME_CHARS characters>". */
static void diag_name(GString *b, sqlite3_stmt *st, int kind_col, int msg_col)
{
    const char *kind = (const char *)sqlite3_column_text(st, kind_col);
    json_escape(b, kind ? kind : "", kind ? (gsize)sqlite3_column_bytes(st, kind_col) : 0);
    g_string_append(b, ": ");
    const char *msg = (const char *)sqlite3_column_text(st, msg_col);
    if (!msg)
        return;
    const char *end = msg + sqlite3_column_bytes(st, msg_col);
    const char *p = msg;
    for (guint n = 0; p < end && *p != '\n' && *p != '\r'; n++) {
        if (n == TRACE_DIAG_NAME_CHARS) {
            json_escape(b, msg, p - msg);
            g_string_append(b, "\xe2\x80\xa6"); /* … */
            return;
        }
        bool valid;
        p = utf8_step(p, end, &valid);
    }
    json_escape(b, msg, p - msg);
}

/* The detail column: embedded as JSON when it parses, else as a string. */
static void diag_detail(GString *b, sqlite3_stmt *st, int col)
{
    const char *text = (const char *)sqlite3_column_text(st, col);
    gssize len = sqlite3_column_bytes(st, col);
    g_autoptr(JsonParser) parser = json_parser_new();
    if (json_parser_load_from_data(parser, text, len, NULL) && json_parser_get_root(parser)) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        json_generator_set_root(gen, json_parser_get_root(parser));
        gsize n = 0;
        g_autofree char *out = json_generator_to_data(gen, &n);
        if (g_utf8_validate(out, (gssize)n, NULL)) {
            g_string_append_len(b, out, n);
            return;
        }
    }
    json_string(b, text, len);
}

/* One instant event per diagnostic: on its rank's track, or global. */
/* Every diagnostic as an instant: on every member of its group when it names one (a mismatch,
 * a deadlock's instance: each rank it concerns shows it), else on the rank it names, else
 * global. */
static bool write_diagnostics(TraceWriter *w, GError **error)
{
    enum { KIND, SEVERITY, RANK, GROUP, SEQ, LAYER, OP, MESSAGE, DETAIL, TIME };
    g_autoptr(sqlite3_stmt) st = prepare(
        w,
        "SELECT kind, severity, rank, group_name, seq, layer, op_name, message, detail, time_us"
        " FROM diagnostics WHERE run_id = ? ORDER BY id",
        "read diagnostics", error);
    if (!st)
        return false;
    GString *b = w->buf;
    g_autoptr(GString) tail = g_string_new(NULL);
    for (;;) {
        bool row;
        if (!step(w, st, &row, "read diagnostics", error))
            return false;
        if (!row)
            return true;
        bool has_rank = sqlite3_column_type(st, RANK) != SQLITE_NULL;
        int64_t ts = sqlite3_column_type(st, TIME) == SQLITE_NULL
                         ? 0
                         : us_to_ns(sqlite3_column_double(st, TIME));
        /* the part after "tid": the same on every rank the instant goes to */
        GString *saved = w->buf;
        g_string_truncate(tail, 0);
        w->buf = tail;
        g_string_append(tail, ",\"ts\":");
        json_us(tail, ts);
        g_string_append(tail, ",\"name\":\"");
        diag_name(tail, st, KIND, MESSAGE);
        g_string_append(tail, "\",\"cat\":\"diagnostic\",\"args\":{\"kind\":");
        json_column_string(tail, st, KIND);
        json_key(tail, "severity", false);
        json_column_string(tail, st, SEVERITY);
        if (has_rank) {
            json_key(tail, "rank", false);
            json_int(tail, sqlite3_column_int64(st, RANK));
        }
        if (sqlite3_column_type(st, GROUP) != SQLITE_NULL) {
            json_key(tail, "group", false);
            json_column_string(tail, st, GROUP);
        }
        if (sqlite3_column_type(st, SEQ) != SQLITE_NULL) {
            json_key(tail, "seq", false);
            json_int(tail, sqlite3_column_int64(st, SEQ));
        }
        if (sqlite3_column_type(st, LAYER) != SQLITE_NULL) {
            json_key(tail, "layer", false);
            json_int(tail, sqlite3_column_int64(st, LAYER));
        }
        if (sqlite3_column_type(st, OP) != SQLITE_NULL) {
            json_key(tail, "op", false);
            json_column_string(tail, st, OP);
        }
        json_key(tail, "message", false);
        json_column_string(tail, st, MESSAGE);
        if (sqlite3_column_type(st, DETAIL) != SQLITE_NULL) {
            json_key(tail, "detail", false);
            diag_detail(tail, st, DETAIL);
        }
        g_string_append(tail, "}");
        w->buf = saved;
        const GArray *members = NULL;
        if (sqlite3_column_type(st, GROUP) != SQLITE_NULL && w->members)
            members = g_hash_table_lookup(w->members, sqlite3_column_text(st, GROUP));
        guint targets = members ? members->len : 1;
        const TraceFilter *f = w->filter;
        if ((f->from_ns >= 0 && ts < f->from_ns) || (f->to_ns >= 0 && ts >= f->to_ns))
            continue;
        for (guint k = 0; k < targets; k++) {
            int64_t rank = members    ? g_array_index(members, int32_t, k)
                           : has_rank ? sqlite3_column_int64(st, RANK)
                                      : 0;
            if ((members || has_rank) && !rank_kept(w, rank))
                continue;
            event_begin(w);
            g_string_append(b, "\"ph\":\"i\",\"s\":\"");
            g_string_append(b, members || has_rank ? "t" : "g");
            g_string_append(b, "\",");
            json_pid(b, w, rank);
            g_string_append(b, ",\"tid\":");
            json_int(b, rank);
            g_string_append_len(b, tail->str, (gssize)tail->len);
            if (!event_end(w, error))
                return false;
        }
    }
}

/* Everything after the output is open. */
static bool write_document(TraceWriter *w, const char *run_name, GError **error)
{
    static const char head[] = "{\"traceEvents\":[\n";
    static const char mid[] = "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":";
    return write_raw(w, head, sizeof head - 1, error) &&
           write_metadata_events(w, run_name, error) && write_ops(w, error) &&
           write_flows(w, error) && write_diagnostics(w, error) &&
           write_raw(w, mid, sizeof mid - 1, error) &&
           write_raw(w, w->meta->str, w->meta->len, error) && write_raw(w, "}\n", 2, error);
}

/* Opens the output (after the run is known to exist, so a bad run id leaves no file). */
static bool open_output(TraceWriter *w, GError **error)
{
    w->out = out_file_open(w->out_path, error);
    if (!w->out)
        return false;
    w->f = out_file_stream(w->out);
    if (g_str_has_suffix(w->out_path, ".gz"))
        w->gz = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1));
    return true;
}

/* Closes the output: on success a regular target is replaced by the complete file; on
 * `ok == false` (or a failing close) the old target is left as it was. */
static bool close_output(TraceWriter *w, bool ok, GError **error)
{
    if (!w->out)
        return ok;
    if (ok && w->gz)
        ok = out_bytes(w, "", 0, true, error);
    g_clear_object(&w->gz);
    OutFile *o = g_steal_pointer(&w->out);
    w->f = NULL;
    if (!ok) {
        out_file_abort(o);
        return false;
    }
    return out_file_close(o, error);
}

bool trace_write(Store *s, int64_t run_id, const char *out_path, GError **error)
{
    return trace_write_filtered(s, run_id, out_path, NULL, error);
}

bool trace_write_filtered(Store *s, int64_t run_id, const char *out_path, const TraceFilter *filter,
                          GError **error)
{
    static const TraceFilter all = TRACE_FILTER_ALL;
    g_return_val_if_fail(s != NULL, false);
    g_return_val_if_fail(out_path != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);

    g_autoptr(GString) buf = g_string_sized_new(512);
    g_autoptr(GString) meta = g_string_sized_new(512);
    g_autoptr(GString) rest = g_string_sized_new(256);
    g_autoptr(GArray) lane_end = g_array_new(FALSE, FALSE, sizeof(int64_t));
    g_autoptr(GHashTable) lane_of = g_hash_table_new(NULL, NULL);
    TraceWriter w = {
        .store = s,
        .db = store_db(s),
        .run_id = run_id,
        .out_path = out_path,
        .buf = buf,
        .rest = rest,
        .lane_rank = -1,
        .lane_end = lane_end,
        .lane_of = lane_of,
        .meta = meta,
        .sim_end_ns = -1,
        .blocked_end_ns = -1,
        .filter = filter ? filter : &all,
    };
    g_autofree char *where = filter_sql(w.filter);
    w.where = where;
    /* One read transaction, so every section sees the same snapshot — unless the caller is
     * already inside a transaction on this connection. */
    bool own_txn = sqlite3_get_autocommit(w.db) != 0;
    if (own_txn && sqlite3_exec(w.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return set_sql_error(&w, error, "begin");

    g_autofree char *run_name = NULL;
    bool ok = read_run(&w, &run_name, error) && read_blocked_end(&w, error) &&
              load_layout(&w, error) && open_output(&w, error);
    if (ok)
        ok = write_document(&w, run_name, error);
    ok = close_output(&w, ok, error);

    if (w.members)
        g_hash_table_unref(w.members);
    if (w.group_ranks)
        g_ptr_array_unref(w.group_ranks);
    if (w.arrived)
        g_hash_table_unref(w.arrived);
    if (own_txn)
        sqlite3_exec(w.db, "COMMIT", NULL, NULL, NULL);
    return ok;
}
