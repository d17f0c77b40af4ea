/* model/cost.c — compute op durations: roofline + launch cost, or a measured profile.
 *
 * The profile is a GHashTable op name (owned) -> GArray of CostPoint, sorted by rows with no
 * two points on the same rows. A lookup is one hash and a binary search: O(log points). It
 * runs when ops are lowered, never in the engine's event loop. Loading is O(lines) plus a sort
 * per op; a load parses into a table of its own and merges it only when the whole file is
 * valid, so a failed load leaves the model unchanged. doc/cost-model.md is the user's side.
 */
#include "cost.h"

#include "../sched/program.h"
#include "kernel-table.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK(ranksim - model - cost - error - quark, model_cost_error)

#define PROFILE_HEADER "op,rows,seconds"
/* Rows above this cannot be held exactly in a double (2^53). */
#define PROFILE_MAX_ROWS 9007199254740992.0

typedef struct {
    uint64_t rows;  /* >= 1 */
    double seconds; /* >= 0, finite */
    guint line;     /* where it was read, for duplicate messages */
} CostPoint;

struct ModelCost {
    const NetHardware *hw; /* borrowed */
    ModelCostParams params;
    GHashTable *profile;     /* char* op (owned) -> GArray<CostPoint> (owned), sorted by rows */
    ModelKernelTable *table; /* measured kernel times (owned), NULL until one is loaded */
};

void model_cost_params_defaults(ModelCostParams *p)
{
    g_return_if_fail(p != NULL);
    /* compute 0.7 and a launch of a few µs: shared/reference/hardware.md ("Efficiencies other
     * analytic models use: compute 0.7, memory 0.6, ... fixed per-op costs of a few µs").
     * memory 0.73 instead of 0.6: what vLLM's decode reaches on hardware — Llama-3.1-8B at one
     * request takes 13.3 ms per token on an A100-40GB and 6.48 ms on an H100; each step reads
     * 15.1 GB (every weight but the embedding table, of which it reads one row per token):
     * 0.745 and 0.72 of the HBM bandwidth once the graphed ops' fixed costs are taken out
     * (doc/validation.md, "Decode time per token"). An op replayed in a CUDA graph costs
     * 0.9 us, not a launch: CUDA.jl measured 80 small kernels in 70 us as a graph (260 us
     * launched one by one). */
    p->compute_efficiency = 0.7;
    p->memory_efficiency = 0.73;
    p->launch_ns = 5000;
    p->graph_launch_ns = 900;
}

static GHashTable *profile_table_new(void)
{
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
}

ModelCost *model_cost_new(const NetHardware *hw, const ModelCostParams *params)
{
    g_return_val_if_fail(hw != NULL, NULL);
    ModelCostParams p;
    if (params)
        p = *params;
    else
        model_cost_params_defaults(&p);
    g_return_val_if_fail(p.compute_efficiency > 0 && p.compute_efficiency <= 1, NULL);
    g_return_val_if_fail(p.memory_efficiency > 0 && p.memory_efficiency <= 1, NULL);
    g_return_val_if_fail(p.launch_ns >= 0 && p.graph_launch_ns >= 0, NULL);

    ModelCost *c = g_new0(ModelCost, 1);
    c->hw = hw;
    c->params = p;
    c->profile = profile_table_new();
    return c;
}

void model_cost_free(ModelCost *c)
{
    if (!c)
        return;
    g_hash_table_unref(c->profile);
    model_kernel_table_free(c->table);
    g_free(c);
}

/* ---- profile loading ---------------------------------------------------------------------- */

static bool G_GNUC_PRINTF(5, 6) parse_fail(GError **error, const char *display, guint line,
                                           const char *column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (column)
        g_set_error(error, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE, "%s:%u: column '%s': %s",
                    display, line, column, what);
    else
        g_set_error(error, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE, "%s:%u: %s", display, line,
                    what);
    return false;
}

/* Parses a whole field (already stripped) as a finite number >= 0. */
static bool parse_number(const char *display, guint line, const char *column, const char *field,
                         double *out, GError **error)
{
    if (!*field)
        return parse_fail(error, display, line, column, "empty, expected a number");
    char *end = NULL;
    double v = g_ascii_strtod(field, &end);
    if (end == field || *end != '\0')
        return parse_fail(error, display, line, column, "'%s' is not a number", field);
    if (!isfinite(v))
        return parse_fail(error, display, line, column, "'%s' is not a finite number", field);
    if (v < 0)
        return parse_fail(error, display, line, column, "%s is negative, expected a value >= 0",
                          field);
    *out = v;
    return true;
}

static bool check_header(const char *display, guint line, const char *text, GError **error)
{
    g_auto(GStrv) fields = g_strsplit(text, ",", -1);
    static const char *const want[] = {"op", "rows", "seconds"};
    bool ok = g_strv_length(fields) == G_N_ELEMENTS(want);
    for (guint i = 0; ok && i < G_N_ELEMENTS(want); i++)
        ok = strcmp(g_strstrip(fields[i]), want[i]) == 0;
    if (!ok)
        return parse_fail(error, display, line, NULL,
                          "bad header '%s': expected '" PROFILE_HEADER
                          "' (op name, token rows, measured seconds)",
                          text);
    return true;
}

static int point_cmp(gconstpointer a, gconstpointer b)
{
    const CostPoint *pa = a, *pb = b;
    return (pa->rows > pb->rows) - (pa->rows < pb->rows);
}

/* Parses one data line (stripped, not blank, not a comment) into `into`. `seen` maps
 * "op\nrows" to the line that gave that point, for duplicates. */
static bool parse_row(const char *display, guint line, const char *text, GHashTable *into,
                      GHashTable *seen, GError **error)
{
    g_auto(GStrv) f = g_strsplit(text, ",", -1);
    guint n = g_strv_length(f);
    if (n != 3)
        return parse_fail(error, display, line, NULL,
                          "expected 3 columns '" PROFILE_HEADER "', got %u", n);
    const char *op = g_strstrip(f[0]);
    const char *rows_s = g_strstrip(f[1]);
    const char *seconds_s = g_strstrip(f[2]);

    if (!*op)
        return parse_fail(error, display, line, "op", "empty, expected an op name");
    if (!g_utf8_validate(op, -1, NULL))
        return parse_fail(error, display, line, "op", "the op name is not valid UTF-8");

    double rows_d, seconds;
    if (!parse_number(display, line, "rows", rows_s, &rows_d, error))
        return false;
    if (rows_d == 0)
        return parse_fail(error, display, line, "rows", "0, expected a token count >= 1");
    if (rows_d != floor(rows_d))
        return parse_fail(error, display, line, "rows", "%s is not a whole number of rows", rows_s);
    if (rows_d > PROFILE_MAX_ROWS)
        return parse_fail(error, display, line, "rows", "%s is too large (at most 2^53)", rows_s);
    if (!parse_number(display, line, "seconds", seconds_s, &seconds, error))
        return false;

    CostPoint pt = {.rows = (uint64_t)rows_d, .seconds = seconds, .line = line};
    char *key = g_strdup_printf("%s\n%" PRIu64, op, pt.rows);
    gpointer first = g_hash_table_lookup(seen, key);
    if (first) {
        g_free(key);
        return parse_fail(error, display, line, "rows",
                          "op '%s' already has a point at rows %" PRIu64 " (line %u)", op, pt.rows,
                          GPOINTER_TO_UINT(first));
    }
    g_hash_table_insert(seen, key, GUINT_TO_POINTER(line));

    GArray *pts = g_hash_table_lookup(into, op);
    if (!pts) {
        pts = g_array_new(false, false, sizeof(CostPoint));
        g_hash_table_insert(into, g_strdup(op), pts);
    }
    g_array_append_val(pts, pt);
    return true;
}

bool model_cost_load_profile(ModelCost *c, const char *data, gsize len, const char *display,
                             GError **error)
{
    g_return_val_if_fail(c != NULL, false);
    g_return_val_if_fail(data != NULL || len == 0, false);
    g_return_val_if_fail(display != NULL, false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);

    if (len && memchr(data, '\0', len)) {
        g_set_error(error, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE,
                    "%s: contains a NUL byte; expected a text CSV with header '" PROFILE_HEADER "'",
                    display);
        return false;
    }

    g_autoptr(GHashTable) into = profile_table_new();
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree char *contents = g_strndup(data ? data : "", len);
    g_auto(GStrv) lines = g_strsplit(contents, "\n", -1);
    bool have_header = false;
    for (guint i = 0; lines[i]; i++) {
        guint line = i + 1;
        char *text = lines[i];
        if (i == 0 && g_str_has_prefix(text, "\xEF\xBB\xBF")) /* a UTF-8 BOM (spreadsheets) */
            text += 3;
        text = g_strstrip(text); /* also drops the '\r' of CRLF files */
        if (!*text || *text == '#')
            continue;
        if (!have_header) {
            if (!check_header(display, line, text, error))
                return false;
            have_header = true;
            continue;
        }
        if (!parse_row(display, line, text, into, seen, error))
            return false;
    }
    if (!have_header) {
        g_set_error(error, MODEL_COST_ERROR, MODEL_COST_ERROR_PARSE,
                    "%s: no header; expected a first line '" PROFILE_HEADER "'", display);
        return false;
    }

    /* Valid: sort each op's points and move them over, replacing earlier points of that op. */
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, into);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        g_array_sort(value, point_cmp);
        g_hash_table_iter_steal(&it);
        g_hash_table_replace(c->profile, key, value);
    }
    return true;
}

bool model_cost_is_profiled(const ModelCost *c, const char *name)
{
    g_return_val_if_fail(c != NULL, false);
    return name && g_hash_table_contains(c->profile, name);
}

/* ---- durations ---------------------------------------------------------------------------- */

/* Seconds at `rows` from points sorted by rows: the first point's time below it, linear
 * between neighbours, proportional to rows beyond the last. O(log n). */
static double profile_seconds(const GArray *pts, uint64_t rows)
{
    const CostPoint *p = (const CostPoint *)(const void *)pts->data;
    guint n = pts->len;
    g_assert(n > 0);
    if (rows <= p[0].rows)
        return p[0].seconds;
    if (rows >= p[n - 1].rows)
        return rows == p[n - 1].rows ? p[n - 1].seconds
                                     : p[n - 1].seconds * ((double)rows / (double)p[n - 1].rows);
    guint lo = 0, hi = n - 1; /* p[lo].rows < rows <= p[hi].rows */
    while (hi - lo > 1) {
        guint mid = lo + (hi - lo) / 2;
        if (p[mid].rows < rows)
            lo = mid;
        else
            hi = mid;
    }
    if (p[hi].rows == rows)
        return p[hi].seconds;
    double f = (double)(rows - p[lo].rows) / (double)(p[hi].rows - p[lo].rows);
    return p[lo].seconds + f * (p[hi].seconds - p[lo].seconds);
}

/* Nanoseconds rounded up, forgiving floating-point noise (1e-12 relative) so that exactly
 * 1 ms does not become 1,000,001 ns; saturates at INT64_MAX. */
static int64_t ns_round_up(double ns)
{
    if (!(ns > 0))
        return 0;
    if (ns >= 9.2e18)
        return INT64_MAX;
    double r = nearbyint(ns);
    if (fabs(ns - r) <= 1e-12 * ns)
        return (int64_t)r;
    return (int64_t)ceil(ns);
}

int64_t model_cost_op_ns(const ModelCost *c, const char *name, uint64_t rows, double flops,
                         double bytes, NetPeakDtype dtype)
{
    uint8_t bound;
    return model_cost_op_ns_bound(c, name, rows, flops, bytes, dtype, false, &bound);
}

int64_t model_cost_op_ns_bound(const ModelCost *c, const char *name, uint64_t rows, double flops,
                               double bytes, NetPeakDtype dtype, bool graphed, uint8_t *bound)
{
    *bound = SCHED_BOUND_NONE;
    g_return_val_if_fail(c != NULL, 0);
    g_return_val_if_fail((unsigned)dtype < NET_PEAK_COUNT, 0);
    g_return_val_if_fail(flops >= 0 && bytes >= 0, 0); /* also refuses NaN */

    if (name) {
        const GArray *pts = g_hash_table_lookup(c->profile, name);
        if (pts) {
            *bound = SCHED_BOUND_PROFILE;
            return ns_round_up(profile_seconds(pts, rows) * 1e9);
        }
    }

    const NetHardware *hw = c->hw;
    double peak = hw->peak_flops[dtype];
    if (!(peak > 0))
        peak = hw->peak_flops[NET_PEAK_BF16];
    double compute_s = peak > 0 ? flops / (peak * c->params.compute_efficiency) : 0.0;
    double bw = hw->hbm_bw_bytes_per_s;
    double memory_s = bw > 0 ? bytes / (bw * c->params.memory_efficiency) : 0.0;
    int64_t body_ns = ns_round_up(fmax(compute_s, memory_s) * 1e9);
    int64_t fixed = graphed ? c->params.graph_launch_ns : c->params.launch_ns;
    *bound = body_ns < fixed         ? SCHED_BOUND_LAUNCH
             : compute_s >= memory_s ? SCHED_BOUND_COMPUTE
                                     : SCHED_BOUND_MEMORY;
    return body_ns > INT64_MAX - fixed ? INT64_MAX : body_ns + fixed;
}

/* The measured table's time of kernel `k` run on `rows` rows, or 0 when the table does not
 * cover it. Eager: first the table's eager rows (their time includes the host's dispatch),
 * then its graph rows, which the caller then lengthens to the host's dispatch as it would the
 * model's. */
static double table_ns(const ModelCost *c, const ModelKernelTime *k, uint64_t rows, double host_ns,
                       bool graphed, bool *with_host)
{
    *with_host = false;
    if (!c->table || k->key.kind == MODEL_KERNEL_NONE)
        return 0;
    ModelKernelKey key = k->key;
    model_kernel_key_complete(&key, rows);
    double ns = 0;
    if (!graphed) {
        key.eager = true;
        if (model_kernel_table_lookup(c->table, &key, fmax(k->ns, host_ns),
                                      model_kernel_key_analytic, c->hw, &ns, NULL)) {
            *with_host = true;
            return ns;
        }
    }
    key.eager = false;
    if (model_kernel_table_lookup(c->table, &key, k->ns, model_kernel_key_analytic, c->hw, &ns,
                                  NULL))
        return ns;
    return 0;
}

int64_t model_cost_kernel_ns(const ModelCost *c, const char *name, uint64_t rows,
                             const ModelKernelTime *k, double host_ns, bool graphed, uint8_t *bound)
{
    *bound = SCHED_BOUND_NONE;
    g_return_val_if_fail(c != NULL && k != NULL, 0);
    if (name) {
        const GArray *pts = g_hash_table_lookup(c->profile, name);
        if (pts) {
            *bound = SCHED_BOUND_PROFILE;
            return ns_round_up(profile_seconds(pts, rows) * 1e9);
        }
    }
    bool with_host;
    double measured = table_ns(c, k, rows, host_ns, graphed, &with_host);
    if (measured > 0) {
        *bound = SCHED_BOUND_TABLE;
        if (!graphed && !with_host && host_ns > measured) {
            measured = host_ns;
            *bound = SCHED_BOUND_LAUNCH;
        }
        return ns_round_up(measured);
    }
    *bound = k->bound;
    double ns = k->ns;
    if (!graphed && host_ns > ns) {
        ns = host_ns;
        *bound = SCHED_BOUND_LAUNCH;
    }
    return ns_round_up(ns);
}

double model_cost_eager_ns(const ModelCost *c)
{
    return (double)c->params.launch_ns;
}

const NetHardware *model_cost_hardware(const ModelCost *c)
{
    return c->hw;
}

/* The first line that is not blank or a comment is the op profile's header. */
static bool is_op_profile(const char *data, gsize len)
{
    gsize i = 0;
    while (i < len) {
        gsize end = i;
        while (end < len && data[end] != '\n')
            end++;
        g_autofree char *line = g_strstrip(g_strndup(data + i, end - i));
        const char *t = line;
        if (g_str_has_prefix(t, "\xEF\xBB\xBF"))
            t += 3;
        if (*t && *t != '#') {
            g_auto(GStrv) f = g_strsplit(t, ",", -1);
            return g_strv_length(f) == 3 && strcmp(g_strstrip(f[0]), "op") == 0 &&
                   strcmp(g_strstrip(f[1]), "rows") == 0 &&
                   strcmp(g_strstrip(f[2]), "seconds") == 0;
        }
        i = end + 1;
    }
    return false;
}

bool model_cost_load_perf_db(ModelCost *c, const char *data, gsize len, const char *display,
                             GError **error)
{
    g_return_val_if_fail(c != NULL && display != NULL, false);
    if (is_op_profile(data ? data : "", data ? len : 0))
        return model_cost_load_profile(c, data, len, display, error);
    if (!c->table)
        c->table = model_kernel_table_new(c->hw->name);
    return model_kernel_table_load(c->table, data, len, display, error);
}

const ModelKernelTable *model_cost_table(const ModelCost *c)
{
    return c->table;
}
