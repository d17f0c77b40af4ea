/* src/output/trace.c — Chrome trace-event JSON for one stored run, streamed from SQLite; see
 * trace.h.
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
#include "../../sched/json-bounded.h"

#include "../store/store-trace.h"
#include "../../sched/diag.h"
#include "../util/outfile.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef RANKSIM_VERSION
#define RANKSIM_VERSION "unknown"
#endif

/* Characters of a diagnostic's first message line kept in its event name. */
#define TRACE_DIAG_NAME_CHARS 120

typedef struct {
    StoreTraceReader *rd; /* the run's rows (src/store/store-trace.h) */
    int64_t run_id;
    const char *out_path;
    OutFile *out;   /* the output (src/util/outfile.h: temp + rename, or in place; "-" = stdout) */
    FILE *f;        /* its stream */
    GConverter *gz; /* a gzip compressor when the path ends in .gz, else NULL */
    uint32_t per_node;      /* devices per node from the run's hardware line (0: unknown: one
                               process for every rank) */
    GHashTable *members;    /* group name -> GArray<int32> ranks, for diagnostics on groups */
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
    int64_t blocked_end_ns;    /* where never-completed ops are drawn to (see trace.h): the
                                  hang's end, or the cut; -1 if unknown */
    int64_t hang_end_ns;       /* where never-completed ops end on hardware (see trace.h) */
    bool wait_cut;             /* blocked_end_ns is the cut, before hang_end_ns */
    bool full_wait;            /* draw the wait to the hang's end (trace --full-wait) */
    const TraceFilter *filter; /* never NULL */
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
static void json_text(GString *b, StoreText t)
{
    json_string(b, t.str ? t.str : "", t.str ? t.len : 0);
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

/* A hang's wait can be seven orders of magnitude longer than the work before it (39 us of
 * work, then 300 s blocked): a viewer opens on the whole time line, a red bar, and the work is
 * a pixel. Unless --full-wait, the wait is drawn to twice the end of the completed work (the
 * work fills the first half of the first view) and everything later — the blocked slices'
 * ends, the diagnostics at the hang's detection — is drawn at that cut and says its true time
 * (trace.h). */
static bool cut_wait(TraceWriter *w, GError **error)
{
    int64_t work_end;
    if (!store_trace_work_end(w->rd, &work_end, error))
        return false;
    int64_t cut = work_end > 0 ? 2 * work_end : -1;
    if (cut > 0 && w->blocked_end_ns > cut) {
        w->blocked_end_ns = cut;
        w->wait_cut = true;
    }
    return true;
}

/* When the ops that never completed end (trace.h): the hang_surface diagnostic's
 * rpc_timeout_s (an absolute simulated time), unless a simulated watchdog stopped the run. */
static bool read_blocked_end(TraceWriter *w, GError **error)
{
    w->blocked_end_ns = w->sim_end_ns;
    int64_t timeouts = 0;
    g_autofree char *d = NULL;
    if (!store_trace_hang(w->rd, &timeouts, &d, error))
        return false;
    const char *k = d ? strstr(d, "\"rpc_timeout_s\":") : NULL;
    if (timeouts == 0 && k) {
        char *end = NULL;
        double sec = g_ascii_strtod(k + strlen("\"rpc_timeout_s\":"), &end);
        if (end != k + strlen("\"rpc_timeout_s\":") && sec > 0 && sec < 1e9)
            w->blocked_end_ns = MAX(w->blocked_end_ns, (int64_t)llround(sec * 1e9));
    }
    w->hang_end_ns = w->blocked_end_ns;
    return w->full_wait || cut_wait(w, error);
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

/* What read_run gathers from the run row's cells. */
typedef struct {
    TraceWriter *w;
    char *name;
} RunRow;

/* One cell of the run row: into the metadata object, and the figures the writer needs. */
static void run_cell(void *data, const StoreCell *cell)
{
    RunRow *rr = data;
    TraceWriter *w = rr->w;
    GString *m = w->meta;
    bool first = m->len == 1;
    json_key(m, cell->column, first);
    switch (cell->type) {
    case STORE_CELL_INT:
        json_int(m, cell->i);
        break;
    case STORE_CELL_REAL:
        json_real3(m, cell->d);
        break;
    case STORE_CELL_NULL:
        g_string_append(m, "null");
        break;
    default:
        json_text(m, cell->text);
        break;
    }
    if (strcmp(cell->column, "name") == 0 && cell->type == STORE_CELL_TEXT)
        rr->name = g_strndup(cell->text.str, cell->text.len);
    else if (strcmp(cell->column, "ranks") == 0) /* NULL (invalid runs) -> 0 */
        w->n_ranks = cell->type == STORE_CELL_INT    ? cell->i
                     : cell->type == STORE_CELL_REAL ? (int64_t)cell->d
                                                     : 0;
    else if (strcmp(cell->column, "sim_end_us") == 0)
        w->sim_end_ns = cell->type == STORE_CELL_NULL  ? -1
                        : cell->type == STORE_CELL_INT ? us_to_ns((double)cell->i)
                                                       : us_to_ns(cell->d);
}

/* Reads the run row: fills w->meta, w->n_ranks, w->sim_end_ns and the process name `*name`
 * (caller frees). Unknown run -> G_IO_ERROR_NOT_FOUND. */
static bool read_run(TraceWriter *w, char **name, GError **error)
{
    RunRow rr = {w, NULL};
    GString *m = w->meta;
    g_string_append_c(m, '{');
    if (!store_trace_run(w->rd, run_cell, &rr, error)) {
        g_free(rr.name);
        return false;
    }
    *name = rr.name ? rr.name : g_strdup("?");
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
/* A group row: its members by name and by id. */
static void layout_group(void *data, int64_t gid, const char *name, const char *ranks)
{
    TraceWriter *w = data;
    GArray *a = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (const char *p = ranks ? ranks : ""; *p;) {
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
    guint id = (guint)gid;
    if (id >= w->group_ranks->len)
        g_ptr_array_set_size(w->group_ranks, id + 1);
    if (g_ptr_array_index(w->group_ranks, id))
        g_array_unref(g_ptr_array_index(w->group_ranks, id));
    w->group_ranks->pdata[id] = g_array_ref(a);
    g_hash_table_replace(w->members, g_strdup(name), a);
}

/* A rank that arrived at an instance that never completed. */
static void layout_blocked(void *data, int64_t group, int64_t seq, int64_t rank)
{
    TraceWriter *w = data;
    gint64 key = (gint64)inst_key(group, seq);
    GArray *a = g_hash_table_lookup(w->arrived, &key);
    if (!a) {
        a = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_hash_table_insert(w->arrived, g_memdup2(&key, sizeof key), a);
    }
    int32_t rk = (int32_t)rank;
    g_array_append_val(a, rk);
}

static bool load_layout(TraceWriter *w, GError **error)
{
    w->members =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
    w->group_ranks = g_ptr_array_new_with_free_func(array_unref0);
    w->arrived =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)g_array_unref);
    g_autofree char *line = NULL;
    if (!store_trace_hardware(w->rd, &line, error))
        return false;
    const char *x = line ? strstr(line, " x ") : NULL;
    if (x) {
        guint64 n = g_ascii_strtoull(x + 3, NULL, 10);
        if (n >= 1 && n < (1u << 20) && strstr(x, " devices"))
            w->per_node = (uint32_t)n;
    }
    return store_trace_groups(w->rd, layout_group, w, error) &&
           store_trace_blocked(w->rd, layout_blocked, w, error);
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
static int64_t op_end_ns(const TraceWriter *w, const StoreTraceOp *op, bool *incomplete)
{
    int64_t start_ns = op->start_ns;
    *incomplete = !op->has_end;
    int64_t end = *incomplete ? w->blocked_end_ns : op->end_ns;
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

/* One op row: its begin and end events. */
static bool write_op(void *data, const StoreTraceOp *op, GError **error)
{
    TraceWriter *w = data;
    GString *b = w->buf;
    int64_t start = op->start_ns;
    bool incomplete;
    int64_t end = op_end_ns(w, op, &incomplete);
    int64_t rank = op->rank;
    int64_t tid = lane_tid(w, rank, start, end, error);
    if (tid < 0)
        return false;
    if (tid != rank)
        g_hash_table_insert(w->lane_of, GSIZE_TO_POINTER(op_key(rank, op->idx)),
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
    if (incomplete && w->wait_cut) { /* "ag (blocked 300.000 s; cut)" */
        g_autofree char *len = sched_format_ns(w->hang_end_ns - start);
        g_autofree char *name = g_strdup_printf("%.*s (blocked %s; cut)", (int)op->name.len,
                                                op->name.str, len);
        json_cstring(b, name);
    } else {
        json_text(b, op->name);
    }
    g_string_append(b, ",\"cat\":");
    json_text(b, op->kind);
    g_string_append(b, ",\"args\":{\"idx\":");
    json_int(b, op->idx);
    if (op->has_layer) {
        json_key(b, "layer", false);
        json_int(b, op->layer);
    }
    if (op->has_tokens) {
        json_key(b, "tokens", false);
        json_int(b, op->tokens);
    }
    if (op->has_group) {
        json_key(b, "group", false);
        json_text(b, op->group);
        json_key(b, "seq", false);
        json_int(b, op->seq);
        json_key(b, "count", false);
        json_int(b, op->count);
        json_key(b, "dtype", false);
        json_text(b, op->dtype);
    }
    if (incomplete) {
        g_string_append(b, ",\"incomplete\":true");
        if (w->wait_cut) { /* the true end, where the drawing stops short of it */
            json_key(b, "blocked_until_us", false);
            json_us(b, w->hang_end_ns);
        }
        /* who it waits for: the members of its group that never arrived */
        if (op->has_group)
            blocked_args(w, b, op->group_id, op->seq);
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
    return event_end(w, error);
}

/* One begin ("B", with the op's name and args) and one end ("E") event per op row, in (rank,
 * idx) order, on the rank's track or, where ops overlap, an extra one (lane_tid). */
static bool write_ops(TraceWriter *w, GError **error)
{
    return store_trace_ops(w->rd, w->blocked_end_ns, write_op, w, error);
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
/* Where write_flow is in the rows: the current instance and the member's place in it. */
typedef struct {
    TraceWriter *w;
    uint64_t flow_id;
    int64_t pos, cur_group, cur_seq;
} FlowState;

static bool write_flow(void *data, const StoreTraceFlow *f, GError **error)
{
    FlowState *fs = data;
    TraceWriter *w = fs->w;
    if (f->group_id != fs->cur_group || f->seq != fs->cur_seq) {
        fs->cur_group = f->group_id;
        fs->cur_seq = f->seq;
        fs->pos = 0;
        if (f->members > 1)
            fs->flow_id++;
    } else {
        fs->pos++;
    }
    if (f->members < 2)
        return true;
    int64_t start = f->start_ns, end = f->end_ns;
    int64_t lo = f->last_start_ns, hi = f->first_end_ns;
    int64_t ts = lo <= hi ? lo + (hi - lo) / 2 : start + (end - start) / 2;
    ts = CLAMP(ts, start, end);
    const char *ph = fs->pos == 0 ? "s" : fs->pos == f->members - 1 ? "f" : "t";
    gpointer lane = g_hash_table_lookup(w->lane_of, GSIZE_TO_POINTER(op_key(f->rank, f->idx)));
    return write_flow_event(w, ph, f->rank, lane ? (int64_t)GPOINTER_TO_SIZE(lane) : f->rank, ts,
                            fs->flow_id, f->group.str ? f->group.str : "", f->group.len, f->seq,
                            error);
}

static bool write_flows(TraceWriter *w, GError **error)
{
    FlowState fs = {.w = w, .cur_group = -1, .cur_seq = -1};
    return store_trace_flows(w->rd, w->blocked_end_ns, write_flow, &fs, error);
}

/* Appends "<kind>: <first line of message, at most TRACE_DIAG_NAME_CHARS characters>". */
static void diag_name(GString *b, StoreText kind, StoreText message)
{
    const char *msg = message.str;
    /* "KIND: " unless the message already begins with the word, as most do ("timeout: ranks
     * ...", "deadlock at 5.000 us: ...") */
    bool has_kind = msg && kind.str && message.len > kind.len &&
                    memcmp(msg, kind.str, kind.len) == 0 &&
                    (msg[kind.len] == ':' || msg[kind.len] == ' ');
    if (!has_kind) {
        json_escape(b, kind.str ? kind.str : "", kind.str ? kind.len : 0);
        g_string_append(b, ": ");
    }
    if (!msg)
        return;
    const char *end = msg + message.len;
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
static void diag_detail(GString *b, StoreText detail)
{
    const char *text = detail.str;
    gssize len = (gssize)detail.len;
    g_autoptr(JsonParser) parser = json_parser_new();
    if (sched_json_load(parser, text, len, NULL) && json_parser_get_root(parser)) {
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

/* The part of a diagnostic's instant after "tid" (the same on every rank it goes to). */
static void diag_tail(GString *tail, const StoreTraceDiag *d, int64_t ts, int64_t cut_ns)
{
    bool moved = cut_ns >= 0 && ts > cut_ns; /* drawn at the cut, at its true time in args */
    g_string_truncate(tail, 0);
    g_string_append(tail, ",\"ts\":");
    json_us(tail, moved ? cut_ns : ts);
    g_string_append(tail, ",\"name\":\"");
    if (moved) {
        g_autofree char *at = sched_format_ns(ts);
        g_string_append_printf(tail, "at %s: ", at);
    }
    diag_name(tail, d->kind, d->message);
    g_string_append(tail, "\",\"cat\":\"diagnostic\",\"args\":{\"kind\":");
    json_text(tail, d->kind);
    if (moved) {
        json_key(tail, "at_us", false);
        json_us(tail, ts);
    }
    json_key(tail, "severity", false);
    json_text(tail, d->severity);
    if (d->has_rank) {
        json_key(tail, "rank", false);
        json_int(tail, d->rank);
    }
    if (d->group.str) {
        json_key(tail, "group", false);
        json_text(tail, d->group);
    }
    if (d->has_seq) {
        json_key(tail, "seq", false);
        json_int(tail, d->seq);
    }
    if (d->has_layer) {
        json_key(tail, "layer", false);
        json_int(tail, d->layer);
    }
    if (d->op.str) {
        json_key(tail, "op", false);
        json_text(tail, d->op);
    }
    json_key(tail, "message", false);
    json_text(tail, d->message);
    if (d->detail.str) {
        json_key(tail, "detail", false);
        diag_detail(tail, d->detail);
    }
    g_string_append(tail, "}");
}

typedef struct {
    TraceWriter *w;
    GString *tail; /* the instant's part after "tid", reused */
} DiagState;

static bool write_diag(void *data, const StoreTraceDiag *d, GError **error)
{
    DiagState *ds = data;
    TraceWriter *w = ds->w;
    GString *b = w->buf, *tail = ds->tail;
    int64_t ts = d->has_time ? us_to_ns(d->time_us) : 0;
    diag_tail(tail, d, ts, w->wait_cut ? w->blocked_end_ns : -1);
    const GArray *members = NULL;
    if (d->group.str && w->members)
        members = g_hash_table_lookup(w->members, d->group.str);
    guint targets = members ? members->len : 1;
    const TraceFilter *f = w->filter;
    if ((f->from_ns >= 0 && ts < f->from_ns) || (f->to_ns >= 0 && ts >= f->to_ns))
        return true;
    for (guint k = 0; k < targets; k++) {
        int64_t rank = members ? g_array_index(members, int32_t, k) : d->has_rank ? d->rank : 0;
        if ((members || d->has_rank) && !rank_kept(w, rank))
            continue;
        event_begin(w);
        g_string_append(b, "\"ph\":\"i\",\"s\":\"");
        g_string_append(b, members || d->has_rank ? "t" : "g");
        g_string_append(b, "\",");
        json_pid(b, w, rank);
        g_string_append(b, ",\"tid\":");
        json_int(b, rank);
        g_string_append_len(b, tail->str, (gssize)tail->len);
        if (!event_end(w, error))
            return false;
    }
    return true;
}

/* Every diagnostic as an instant: on every member of its group when it names one (a mismatch,
 * a deadlock's instance: each rank it concerns shows it), else on the rank it names, else
 * global. */
static bool write_diagnostics(TraceWriter *w, GError **error)
{
    g_autoptr(GString) tail = g_string_new(NULL);
    DiagState ds = {w, tail};
    return store_trace_diagnostics(w->rd, write_diag, &ds, error);
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
    return trace_write_filtered(s, run_id, out_path, NULL, false, error);
}

bool trace_write_filtered(Store *s, int64_t run_id, const char *out_path, const TraceFilter *filter,
                          bool full_wait, GError **error)
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
        .hang_end_ns = -1,
        .full_wait = full_wait,
        .filter = filter ? filter : &all,
    };
    /* One read snapshot for every section. */
    w.rd = store_trace_begin(s, run_id, w.filter, error);
    if (!w.rd)
        return false;

    g_autofree char *run_name = NULL;
    bool ok = read_run(&w, &run_name, error) && read_blocked_end(&w, error) &&
              load_layout(&w, error) && open_output(&w, error);
    if (ok && w.wait_cut) { /* the metadata says where the drawing stops short of the hang */
        g_string_truncate(meta, meta->len - 1);
        json_key(meta, "wait_cut_at_us", false);
        json_us(meta, w.blocked_end_ns);
        json_key(meta, "hang_end_us", false);
        json_us(meta, w.hang_end_ns);
        g_string_append_c(meta, '}');
    }
    if (ok)
        ok = write_document(&w, run_name, error);
    ok = close_output(&w, ok, error);

    if (w.members)
        g_hash_table_unref(w.members);
    if (w.group_ranks)
        g_ptr_array_unref(w.group_ranks);
    if (w.arrived)
        g_hash_table_unref(w.arrived);
    store_trace_end(w.rd);
    return ok;
}
