/* src/output/plot.c — `ranksim plot`: the time line of a stored run as PNG, SVG or PDF; see plot.h.
 *
 * Costs: one pass over the run's op rows (O(rows) memory for the segments of every rank), one
 * hash per rank for the lane folding, and drawing O(segments of the lanes shown).
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "cairo-lib.h"
#include "explain.h"
#include "../util/outfile.h"
#include "report.h"
#include "../store/store-rows.h"

#define PLOT_MIN_WIDTH 800
#define PLOT_MAX_LANES 64 /* lanes drawn; more distinct ranks fold by their state */
#define LANE_H 18.0
#define LEFT 215.0
#define RIGHT 30.0
#define TOP 64.0
#define BOTTOM 54.0

typedef struct {
    uint8_t kind;
    int64_t start, end; /* end -1: never completed */
    int32_t group;
    int64_t seq;
    uint64_t count;
    uint32_t name;
} Seg;

typedef struct {
    int32_t first, last; /* ranks */
    bool culprit;
} Lane;

typedef struct {
    uint32_t n_ranks;
    GArray **segs;            /* [n_ranks] of Seg */
    char **state;             /* [n_ranks] "done", "blocked", ... (owned) */
    int64_t *rank_end;        /* [n_ranks] the rank's end (a crashed rank's crash time) */
    GHashTable *last_arrival; /* (group, seq) -> max start, boxed int64 */
    GPtrArray *names;         /* name id -> char* */
    int64_t t_end;            /* the time axis' end */
    bool blocked_any;
    /* A run stored with shared time lines: ranks share their time line's segments (segs[r] is
     * a reference), whose `group` is a slot among the rank's groups (slots[r]); the last
     * arrivals are found per instance when a lane needs one (shared_last_arrival). NULL
     * otherwise. */
    int32_t *timeline;        /* [n_ranks] -1: none */
    GArray **slots;           /* [n_ranks] int32 group ids by slot, borrowed from `shared` */
    GPtrArray *tl_index;      /* per time line: GHashTable (slot, seq) -> segment index + 1 */
    GHashTable *group_lines;  /* group id -> GArray of (time line, slot) pairs of its members */
    GPtrArray *lines;         /* GArray<Seg>* per time line */
    guint64 *line_sig;        /* per time line: its segments' fine signature, 0 until made */
    StoreSharedRows shared;
} Data;

static guint64 inst_key(int32_t group, int64_t seq)
{
    return ((guint64)(uint32_t)group << 40) ^ (guint64)seq;
}

static void data_clear(Data *d)
{
    for (uint32_t r = 0; r < d->n_ranks; r++) {
        if (d->segs)
            g_array_unref(d->segs[r]);
        if (d->state)
            g_free(d->state[r]);
    }
    g_free(d->segs);
    g_free(d->state);
    g_free(d->rank_end);
    if (d->last_arrival)
        g_hash_table_unref(d->last_arrival);
    if (d->names)
        g_ptr_array_unref(d->names);
    if (d->tl_index)
        g_ptr_array_unref(d->tl_index);
    if (d->group_lines)
        g_hash_table_unref(d->group_lines);
    if (d->lines)
        g_ptr_array_unref(d->lines);
    g_free(d->line_sig);
    store_shared_rows_clear(&d->shared); /* d->timeline and d->slots are its arrays */
}

/* The group id of segment `s` of rank `r` (a slot in a shared time line). */
static int32_t seg_group(const Data *d, uint32_t r, const Seg *s)
{
    if (!d->slots || s->group < 0)
        return s->group;
    const GArray *a = d->slots[r];
    return a && (guint)s->group < a->len ? g_array_index(a, int32_t, s->group) : -1;
}

static Seg seg_of(const StoreOpRow *row)
{
    return (Seg){.kind = (uint8_t)row->kind,
                 .start = row->start_ns,
                 .end = row->end_ns,
                 .group = row->group,
                 .seq = row->seq,
                 .count = row->count,
                 .name = row->name_id};
}

/* Shared time lines: each line's segments once (every rank of it holds a reference), the
 * (slot, seq) index of its collectives, and each group's members as distinct (line, slot)
 * pairs — O(distinct rows + ranks x groups), whatever the number of ranks. */
static void load_shared(Data *d)
{
    StoreSharedRows *t = &d->shared;
    d->timeline = t->timeline;
    d->slots = t->slots;
    d->lines = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    d->line_sig = g_new0(guint64, MAX(t->rows->len, 1u));
    d->tl_index = g_ptr_array_new_with_free_func((GDestroyNotify)g_hash_table_unref);
    for (guint k = 0; k < t->rows->len; k++) {
        const GArray *rows = g_ptr_array_index(t->rows, k);
        GArray *segs = g_array_sized_new(FALSE, FALSE, sizeof(Seg), rows->len);
        GHashTable *ix = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        for (guint i = 0; i < rows->len; i++) {
            Seg sg = seg_of(&g_array_index(rows, StoreOpRow, i));
            g_array_append_val(segs, sg);
            d->t_end = MAX(d->t_end, MAX(sg.start, sg.end));
            d->blocked_any |= sg.end < 0;
            if (sg.group >= 0) {
                gint64 key = (gint64)inst_key(sg.group, sg.seq);
                g_hash_table_insert(ix, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(i + 1));
            }
        }
        g_ptr_array_add(d->lines, segs);
        g_ptr_array_add(d->tl_index, ix);
    }
    d->group_lines = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                           (GDestroyNotify)g_array_unref);
    /* group id -> the (line, slot) pairs already listed, as (line << 32 | slot) */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                       (GDestroyNotify)g_hash_table_unref);
    for (uint32_t r = 0; r < d->n_ranks; r++) {
        g_array_unref(d->segs[r]);
        d->segs[r] = d->timeline[r] >= 0 ? g_array_ref(g_ptr_array_index(d->lines, d->timeline[r]))
                                         : g_array_new(FALSE, FALSE, sizeof(Seg));
        for (guint k = 0; d->timeline[r] >= 0 && d->slots[r] && k < d->slots[r]->len; k++) {
            int32_t g = g_array_index(d->slots[r], int32_t, k);
            if (g < 0)
                continue;
            GHashTable *listed = g_hash_table_lookup(seen, GINT_TO_POINTER(g));
            if (!listed) {
                listed = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
                g_hash_table_insert(seen, GINT_TO_POINTER(g), listed);
            }
            gint64 key = ((gint64)d->timeline[r] << 32) | (gint64)k;
            if (g_hash_table_contains(listed, &key))
                continue;
            g_hash_table_add(listed, g_memdup2(&key, sizeof key));
            GArray *pairs = g_hash_table_lookup(d->group_lines, GINT_TO_POINTER(g));
            if (!pairs) {
                pairs = g_array_new(FALSE, FALSE, sizeof(int32_t) * 2);
                g_hash_table_insert(d->group_lines, GINT_TO_POINTER(g), pairs);
            }
            int32_t pair[2] = {d->timeline[r], (int32_t)k};
            g_array_append_vals(pairs, pair, 1);
        }
    }
}

/* Shared time lines: the segment of line `tl` at (slot, seq), or NULL. */
static const Seg *shared_seg(const Data *d, int32_t tl, int32_t slot, int64_t seq)
{
    gint64 key = (gint64)inst_key(slot, seq);
    guint i = GPOINTER_TO_UINT(g_hash_table_lookup(g_ptr_array_index(d->tl_index, tl), &key));
    return i ? &g_array_index((GArray *)g_ptr_array_index(d->lines, tl), Seg, i - 1) : NULL;
}

/* One op row into its rank's segments. */
static void add_row(void *data, const StoreOpRow *row)
{
    Data *d = data;
    if (row->rank < 0 || row->rank >= d->n_ranks)
        return;
    Seg s = {.kind = (uint8_t)row->kind,
             .start = row->start_ns,
             .end = row->end_ns,
             .group = row->group,
             .seq = row->seq,
             .count = row->count,
             .name = row->name_id};
    g_array_append_val(d->segs[row->rank], s);
    d->t_end = MAX(d->t_end, MAX(s.start, s.end));
    d->blocked_any |= s.end < 0;
    if (s.group >= 0) {
        gint64 key = (gint64)inst_key(s.group, s.seq);
        int64_t *last = g_hash_table_lookup(d->last_arrival, &key);
        if (!last) {
            last = g_new(int64_t, 1);
            *last = s.start;
            g_hash_table_insert(d->last_arrival, g_memdup2(&key, sizeof key), last);
        } else if (s.start > *last) {
            *last = s.start;
        }
    }
}

static bool load(Store *st, const StoreRunInfo *r, const SchedOutcome *o, Data *d, GError **error)
{
    d->n_ranks = o->n_ranks;
    d->segs = g_new0(GArray *, MAX(d->n_ranks, 1u));
    d->state = g_new0(char *, MAX(d->n_ranks, 1u));
    d->rank_end = g_new0(int64_t, MAX(d->n_ranks, 1u));
    for (uint32_t k = 0; k < d->n_ranks; k++) {
        d->segs[k] = g_array_new(FALSE, FALSE, sizeof(Seg));
        d->state[k] = g_strdup(sched_rank_state_name(o->ranks[k].state));
        d->rank_end[k] = o->ranks[k].end_ns;
    }
    d->last_arrival = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    d->names = store_rows_names(st, r->id, error);
    d->t_end = 0;
    if (!d->names || !store_rows_shared(st, r->id, d->n_ranks, &d->shared, error) ||
        (!d->shared.rows && !store_rows_ops(st, r->id, add_row, d, error))) {
        g_prefix_error(error, "plot: ");
        return false;
    }
    if (d->shared.rows)
        load_shared(d);
    d->t_end = MAX(d->t_end, o->end_ns);
    if (d->t_end <= 0)
        d->t_end = 1;
    return true;
}

/* FNV-1a over a rank's segments (`coarse`: its state and last segment only). */
static guint64 signature(const Data *d, uint32_t rank, bool coarse)
{
    guint64 h = 1469598103934665603ull;
#define MIX(v)                                                                                     \
    do {                                                                                           \
        h ^= (guint64)(v);                                                                         \
        h *= 1099511628211ull;                                                                     \
    } while (0)
    for (const char *c = d->state[rank]; *c; c++)
        MIX(*c);
    const GArray *a = d->segs[rank];
    if (d->line_sig && !coarse && d->timeline[rank] >= 0) {
        /* the fine signature ignores groups: the same for every rank of a time line */
        guint64 *ls = &d->line_sig[d->timeline[rank]];
        if (!*ls) {
            *ls = 1469598103934665603ull;
            for (guint i = 0; i < a->len; i++) {
                const Seg *s = &g_array_index(a, Seg, i);
                guint64 v[] = {s->kind, s->name, s->end < 0, (guint64)s->start,
                               (guint64)s->end, s->count};
                for (size_t k = 0; k < G_N_ELEMENTS(v); k++)
                    *ls = (*ls ^ v[k]) * 1099511628211ull;
            }
        }
        MIX(*ls);
        return h;
    }
    for (guint i = coarse && a->len ? a->len - 1 : 0; i < a->len; i++) {
        const Seg *s = &g_array_index(a, Seg, i);
        MIX(s->kind);
        MIX(s->name);
        MIX(s->end < 0);
        if (!coarse) {
            MIX(s->start);
            MIX(s->end);
            MIX(s->count);
        } else {
            MIX(seg_group(d, rank, s));
            MIX(s->seq);
        }
    }
#undef MIX
    return h;
}

static GArray *fold(const Data *d, const GArray *culprits, bool coarse)
{
    GArray *lanes = g_array_new(FALSE, FALSE, sizeof(Lane));
    guint64 prev = 0;
    for (uint32_t r = 0; r < d->n_ranks; r++) {
        bool c = false;
        for (guint i = 0; i < culprits->len && !c; i++)
            c = g_array_index(culprits, int32_t, i) == (int32_t)r;
        guint64 h = signature(d, r, coarse);
        Lane *last = lanes->len ? &g_array_index(lanes, Lane, lanes->len - 1) : NULL;
        if (last && h == prev && last->culprit == c) {
            last->last = (int32_t)r;
        } else {
            Lane l = {(int32_t)r, (int32_t)r, c};
            g_array_append_val(lanes, l);
        }
        prev = h;
    }
    return lanes;
}

/* ---- drawing ---- */

typedef struct {
    const CairoLib *cz; /* cairo, loaded on first use (cairo-lib.h) */
    cairo_t *cr;
    double w, h, x0, x1;
    int64_t t_axis;
} Canvas;

static double xt(const Canvas *c, int64_t t)
{
    return c->x0 + (c->x1 - c->x0) * ((double)t / (double)c->t_axis);
}

static void rgb(const Canvas *c, unsigned hex)
{
    c->cz->set_source_rgb(c->cr, ((hex >> 16) & 255) / 255.0, ((hex >> 8) & 255) / 255.0,
                         (hex & 255) / 255.0);
}

enum {
    C_COMPUTE = 0x4C72B0,
    C_COMM = 0x55A868,
    C_WAIT = 0xDD8452,
    C_BLOCKED = 0xC44E52,
    C_CULPRIT_BG = 0xF6D5D5,
    C_GRID = 0xDDDDDD,
    C_TEXT = 0x222222,
};

static void box(const Canvas *c, double x0, double x1, double y, double h, unsigned color)
{
    if (x1 - x0 < 0.6) /* a sliver stays visible */
        x1 = x0 + 0.6;
    rgb(c, color);
    c->cz->rectangle(c->cr, x0, y, x1 - x0, h);
    c->cz->fill(c->cr);
}

static void text(const Canvas *c, double x, double y, double size, bool bold, unsigned color,
                 const char *s)
{
    c->cz->select_font_face(c->cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                            bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    c->cz->set_font_size(c->cr, size);
    rgb(c, color);
    c->cz->move_to(c->cr, x, y);
    c->cz->show_text(c->cr, s);
}

/* When the last member arrived in the instance of rank r's collective segment `s`. */
static bool last_arrival(const Data *d, uint32_t r, const Seg *s, int64_t *out)
{
    if (!d->lines) {
        gint64 key = (gint64)inst_key(s->group, s->seq);
        const int64_t *last = g_hash_table_lookup(d->last_arrival, &key);
        if (last)
            *out = *last;
        return last != NULL;
    }
    const GArray *pairs =
        g_hash_table_lookup(d->group_lines, GINT_TO_POINTER(seg_group(d, r, s)));
    bool any = false;
    for (guint i = 0; pairs && i < pairs->len; i++) {
        const int32_t *p = &g_array_index(pairs, int32_t, 2 * i);
        const Seg *m = shared_seg(d, p[0], p[1], s->seq);
        if (m && (!any || m->start > *out))
            *out = m->start;
        any |= m != NULL;
    }
    return any;
}

static void draw_lane(const Canvas *c, const Data *d, const Lane *l, double y)
{
    if (l->culprit)
        box(c, 0, c->w, y, LANE_H, C_CULPRIT_BG);
    const GArray *a = d->segs[l->first];
    double top = y + 3, h = LANE_H - 6;
    for (guint i = 0; i < a->len; i++) {
        const Seg *s = &g_array_index(a, Seg, i);
        if (s->kind == SCHED_OP_COMPUTE) {
            /* a compute op that never ended was cut by the rank's crash */
            int64_t end = s->end >= 0 ? s->end : MAX(s->start, d->rank_end[l->first]);
            box(c, xt(c, s->start), xt(c, end), top, h, C_COMPUTE);
            continue;
        }
        if (s->end < 0) { /* never completed: blocked to the axis' end */
            box(c, xt(c, s->start), c->x1, top, h, C_BLOCKED);
            continue;
        }
        int64_t last = s->start;
        bool known = last_arrival(d, (uint32_t)l->first, s, &last);
        int64_t arrive_all = known ? CLAMP(last, s->start, s->end) : s->start;
        if (arrive_all > s->start)
            box(c, xt(c, s->start), xt(c, arrive_all), top, h, C_WAIT);
        box(c, xt(c, arrive_all), xt(c, s->end), top, h, C_COMM);
    }
    if (strcmp(d->state[l->first], "crashed") == 0) { /* an X where it died */
        double x = xt(c, d->rank_end[l->first]);
        rgb(c, C_TEXT);
        c->cz->set_line_width(c->cr, 2);
        c->cz->move_to(c->cr, x - 5, y + 3);
        c->cz->line_to(c->cr, x + 5, y + LANE_H - 3);
        c->cz->move_to(c->cr, x + 5, y + 3);
        c->cz->line_to(c->cr, x - 5, y + LANE_H - 3);
        c->cz->stroke(c->cr);
    }
    g_autofree char *label = l->first == l->last
                                 ? g_strdup_printf("rank %d", l->first)
                                 : g_strdup_printf("ranks %d-%d", l->first, l->last);
    g_autofree char *full = g_strdup_printf("%s  %s%s", label, d->state[l->first],
                                            l->culprit ? "  \u25C0 culprit" : "");
    text(c, 6, y + LANE_H - 5, 11, l->culprit, l->culprit ? C_BLOCKED : C_TEXT, full);
}

static void draw_axis(const Canvas *c, double y)
{
    /* ticks at 1, 2 or 5 x 10^k ns, about eight of them */
    double raw = (double)c->t_axis / 8.0, p = pow(10, floor(log10(MAX(raw, 1.0))));
    double step = raw / p < 2 ? p : raw / p < 5 ? 2 * p : 5 * p;
    rgb(c, C_TEXT);
    c->cz->set_line_width(c->cr, 1);
    c->cz->move_to(c->cr, c->x0, y);
    c->cz->line_to(c->cr, c->x1, y);
    c->cz->stroke(c->cr);
    for (double t = 0; t <= (double)c->t_axis + 1; t += step) {
        double x = xt(c, (int64_t)t);
        rgb(c, C_GRID);
        c->cz->move_to(c->cr, x, TOP - 6);
        c->cz->line_to(c->cr, x, y);
        c->cz->stroke(c->cr);
        g_autofree char *lab = sched_format_ns((int64_t)t);
        text(c, x - 20, y + 16, 10, false, C_TEXT, lab);
    }
}

static void draw_legend(const Canvas *c, double y)
{
    static const struct {
        const char *name;
        unsigned color;
    } k[] = {{"compute", C_COMPUTE},
             {"communication", C_COMM},
             {"waiting for the others", C_WAIT},
             {"blocked (never completes)", C_BLOCKED}};
    double x = c->x0;
    for (size_t i = 0; i < G_N_ELEMENTS(k); i++) {
        box(c, x, x + 12, y - 10, 10, k[i].color);
        text(c, x + 16, y, 11, false, C_TEXT, k[i].name);
        x += 30 + 7.0 * (double)strlen(k[i].name);
    }
}

/* The instance the hang starts from: a dashed line at its first arrival and each rank's count,
 * equal counts folded into rank ranges. */
static void draw_instance(const Canvas *c, const Data *d, const SchedOutcome *o, double y0,
                          double y1)
{
    const char *gname = NULL;
    int64_t seq = 0;
    if (!explain_first_instance(o, &gname, &seq))
        return;
    int32_t gid = -1;
    for (guint k = 0; k < o->groups->len && gid < 0; k++)
        if (g_strcmp0(g_ptr_array_index(o->groups, k), gname) == 0)
            gid = (int32_t)k;
    int64_t first = INT64_MAX;
    uint32_t name = 0;
    g_autoptr(GString) sizes = g_string_new(NULL);
    uint64_t run_count = 0;
    int32_t run_lo = -1, run_hi = -1;
    for (uint32_t rk = 0; rk <= d->n_ranks; rk++) {
        const Seg *hit = NULL;
        for (guint k = 0; d->lines && rk < d->n_ranks && d->timeline[rk] >= 0 && d->slots[rk] &&
                          k < d->slots[rk]->len && !hit;
             k++)
            if (g_array_index(d->slots[rk], int32_t, k) == gid)
                hit = shared_seg(d, d->timeline[rk], (int32_t)k, seq);
        for (guint i = 0; !d->lines && rk < d->n_ranks && i < d->segs[rk]->len && !hit; i++) {
            const Seg *s = &g_array_index(d->segs[rk], Seg, i);
            if (s->group == gid && s->seq == seq)
                hit = s;
        }
        if (hit) {
            first = MIN(first, hit->start);
            name = hit->name;
        }
        bool extend = hit && run_lo >= 0 && hit->count == run_count && (int32_t)rk == run_hi + 1;
        if (extend) {
            run_hi = (int32_t)rk;
            continue;
        }
        if (run_lo >= 0) {
            g_autofree char *who = run_lo == run_hi
                                       ? g_strdup_printf("rank %d", run_lo)
                                       : g_strdup_printf("ranks %d-%d", run_lo, run_hi);
            g_string_append_printf(sizes, "%s%s: %" G_GUINT64_FORMAT, sizes->len ? "; " : "", who,
                                   run_count);
        }
        run_lo = hit ? (int32_t)rk : -1;
        run_hi = run_lo;
        run_count = hit ? hit->count : 0;
    }
    if (first == INT64_MAX)
        return;
    double x = xt(c, first);
    rgb(c, C_BLOCKED);
    double dash[] = {5, 3};
    c->cz->set_dash(c->cr, dash, 2, 0);
    c->cz->set_line_width(c->cr, 1.5);
    c->cz->move_to(c->cr, x, y0);
    c->cz->line_to(c->cr, x, y1);
    c->cz->stroke(c->cr);
    c->cz->set_dash(c->cr, NULL, 0, 0);
    const char *op = name < d->names->len && g_ptr_array_index(d->names, name)
                         ? g_ptr_array_index(d->names, name)
                         : "collective";
    g_autofree char *line = g_strdup_printf("%s (group %s, seq %" G_GINT64_FORMAT ") counts: %s",
                                            op, gname, seq, sizes->len ? sizes->str : "-");
    text(c, LEFT, TOP - 8, 11, true, C_BLOCKED, line);
}

static void draw(const CairoLib *cz, cairo_t *cr, double w, double h, const Data *d,
                 const GArray *lanes, const StoreRunInfo *r, const SchedOutcome *o,
                 const char *timeline)
{
    Canvas canvas = {.cz = cz, .cr = cr, .w = w, .h = h, .x0 = LEFT, .x1 = w - RIGHT,
                     .t_axis = d->t_end};
    if (d->blocked_any) /* room to show that blocked ones go on */
        canvas.t_axis = d->t_end + d->t_end / 8 + 1;
    const Canvas *c = &canvas;
    rgb(c, 0xFFFFFF);
    cz->paint(cr);
    const SchedDiag *first = NULL;
    for (guint i = 0; i < o->diags->len && !first; i++) {
        const SchedDiag *x = g_ptr_array_index(o->diags, i);
        if (x->severity == SCHED_SEV_ERROR)
            first = x;
    }
    g_autofree char *head = g_strdup_printf("run %" G_GINT64_FORMAT " %s: %s", r->id,
                                            r->name ? r->name : "", r->status ? r->status : "?");
    text(c, 6, 18, 14, true, C_TEXT, head);
    if (first) {
        g_autofree char *msg = g_strndup(first->message, strcspn(first->message, "\n"));
        if (g_utf8_strlen(msg, -1) > 150)
            *g_utf8_offset_to_pointer(msg, 150) = '\0';
        text(c, 6, 34, 11, false, C_TEXT, msg);
    }
    if (timeline && strcmp(timeline, "full") != 0)
        text(c, w - 330, 18, 10, false, C_TEXT,
             strcmp(timeline, "none") == 0
                 ? "stored with --timeline none: only the blocked collectives"
                 : "stored with --timeline collectives: no compute ops");
    double y = TOP;
    for (guint i = 0; i < lanes->len; i++, y += LANE_H)
        draw_lane(c, d, &g_array_index(lanes, Lane, i), y);
    draw_instance(c, d, o, TOP - 4, y);
    draw_axis(c, y + 4);
    draw_legend(c, h - 10);
}

/* ---- output ---- */

static cairo_status_t to_file(void *closure, const unsigned char *data, unsigned int length)
{
    return fwrite(data, 1, length, closure) == length ? CAIRO_STATUS_SUCCESS
                                                      : CAIRO_STATUS_WRITE_ERROR;
}

bool plot_write(Store *st, const StoreRunInfo *r, const SchedOutcome *o, const char *path,
                int width, GError **error)
{
    enum { PNG, SVG, PDF } fmt;
    if (g_str_has_suffix(path, ".png"))
        fmt = PNG;
    else if (g_str_has_suffix(path, ".svg"))
        fmt = SVG;
    else if (g_str_has_suffix(path, ".pdf"))
        fmt = PDF;
    else {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "plot -o %s: unknown format; valid: a file name ending in .png, .svg or .pdf",
                    path);
        return false;
    }
    const CairoLib *cz = cairo_lib(error);
    if (!cz)
        return false;
    Data d = {0};
    bool ok = load(st, r, o, &d, error);
    if (!ok) {
        data_clear(&d);
        return false;
    }
    g_autoptr(GArray) culprits = explain_culprits(o);
    g_autoptr(GArray) lanes = fold(&d, culprits, false);
    if (lanes->len > PLOT_MAX_LANES) {
        g_array_unref(lanes);
        lanes = fold(&d, culprits, true);
    }
    double w = MAX(width, PLOT_MIN_WIDTH);
    double h = TOP + LANE_H * MAX(lanes->len, 1u) + BOTTOM;
    OutFile *out = out_file_open(path, error);
    if (!out) {
        data_clear(&d);
        return false;
    }
    FILE *f = out_file_stream(out);
    cairo_surface_t *surf =
        fmt == PNG   ? cz->image_surface_create(CAIRO_FORMAT_RGB24, (int)w, (int)ceil(h))
        : fmt == SVG ? cz->svg_surface_create_for_stream(to_file, f, w, h)
                     : cz->pdf_surface_create_for_stream(to_file, f, w, h);
    cairo_t *cr = cz->create(surf);
    draw(cz, cr, w, h, &d, lanes, r, o, r->timeline);
    cz->destroy(cr);
    cairo_status_t s = CAIRO_STATUS_SUCCESS;
    if (fmt == PNG)
        s = cz->surface_write_to_png_stream(surf, to_file, f);
    cz->surface_finish(surf);
    if (s == CAIRO_STATUS_SUCCESS)
        s = cz->surface_status(surf);
    cz->surface_destroy(surf);
    /* cairo's and fontconfig's caches, freed so that a checked build's leak report stays
     * empty (the command draws once per process) */
    if (cz->debug_reset_static_data)
        cz->debug_reset_static_data();
    if (cz->fc_fini)
        cz->fc_fini();
    data_clear(&d);
    if (s != CAIRO_STATUS_SUCCESS) {
        out_file_abort(out);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "plot -o %s: %s", path,
                    cz->status_to_string(s));
        return false;
    }
    return out_file_close(out, error);
}
