/* tests/src/output/test-trace.c — the Chrome trace written from a stored run.
 *
 * Every test builds its database through the real path (program -> engine -> store), writes
 * the trace with trace_write() and reads it back with json-glib. Checks: the document parses;
 * metadata names the process and every rank; one X event per op row, equal to the `ops` view
 * (oracle); one flow chain per collective or send/recv instance with two or more members, in
 * time order and inside its slices; incomplete ops reach the run's end; diagnostics become
 * instant events; strings are escaped; "-" writes the same bytes to stdout; bad input (unknown
 * run, unwritable path, a write failing midway) fails cleanly and leaves no partial file.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../../src/store/store-private.h"
#include "../../../src/output/trace.h"

#define WEIRD_NAME "we\"ird\\name"

/* Per-test state: a temp folder holding the database and the trace. Criterion fixtures take no
 * user pointer, hence file scope; each test runs in its own process. */
typedef struct {
    char *dir;
    char *db_path;
    char *trace_path;
    Store *store;
} TraceFixture;

static TraceFixture fx;

static void fixture_setup(void)
{
    g_autoptr(GError) err = NULL;
    fx.dir = g_dir_make_tmp("ranksim-trace-XXXXXX", &err);
    cr_assert_not_null(fx.dir, "%s", err ? err->message : "");
    fx.db_path = g_build_filename(fx.dir, "results.db", NULL);
    fx.trace_path = g_build_filename(fx.dir, "trace.json", NULL);
    fx.store = store_open(fx.db_path, &err);
    cr_assert_not_null(fx.store, "%s", err ? err->message : "");
}

static void fixture_teardown(void)
{
    store_close(fx.store);
    g_autoptr(GDir) d = g_dir_open(fx.dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(fx.dir, name, NULL);
        g_unlink(p);
    }
    g_rmdir(fx.dir);
    g_free(fx.dir);
    g_free(fx.db_path);
    g_free(fx.trace_path);
    memset(&fx, 0, sizeof fx);
}

TestSuite(trace, .init = fixture_setup, .fini = fixture_teardown);

/* ---- building runs ---- */

/* Runs `p` with the store as recorder; returns the committed run id. */
static int64_t record_run(SchedProgram *p, const char *name)
{
    g_autoptr(GError) err = NULL;
    cr_assert(sched_program_validate(p, &err), "%s", err ? err->message : "");
    StoreRunInfo info = {.name = name, .kind = "program", .timeline = "full"};
    StoreRun *run = store_run_begin(fx.store, &info, p, &err);
    cr_assert_not_null(run, "%s", err ? err->message : "");
    SchedConfig cfg = sched_config_default();
    cfg.record = store_run_record;
    cfg.record_data = run;
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &cfg);
    int64_t id =
        store_run_finish(run, o, o->failed ? "failed" : "ok", o->failed ? 3 : 0, 1.0, &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    return id;
}

/* 2 ranks: compute `fwd` (1 us on rank 0, 3 us on rank 1), all_gather `ag` on tp = {0,1},
 * then compute WEIRD_NAME (0.5 us). Completes. */
static int64_t run_two_ranks(void)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t fwd = sched_program_name(p, "fwd");
    uint32_t ag = sched_program_name(p, "ag");
    uint32_t weird = sched_program_name(p, WEIRD_NAME);
    int32_t members[] = {0, 1};
    int32_t tp = sched_program_add_group(p, "tp", members, 2);
    for (uint32_t r = 0; r < 2; r++) {
        SchedOp ops[] = {
            sched_op_compute(fwd, r == 0 ? 1000 : 3000, 8),
            sched_op_collective(SCHED_OP_ALL_GATHER, ag, tp, 1024, SCHED_DTYPE_BF16),
            sched_op_compute(weird, 500, 0),
        };
        sched_program_set_ops(p, r, ops, G_N_ELEMENTS(ops));
    }
    return record_run(p, "two ranks");
}

/* 2 ranks: rank 0 runs fwd, ag, tail (5 us); rank 1 runs fwd, ag, ag. Rank 1 waits forever in
 * its second all_gather: a deadlock, with one op that never completes. */
static int64_t run_hang(void)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t fwd = sched_program_name(p, "fwd");
    uint32_t ag = sched_program_name(p, "ag");
    uint32_t tail = sched_program_name(p, "tail");
    int32_t members[] = {0, 1};
    int32_t tp = sched_program_add_group(p, "tp", members, 2);
    SchedOp r0[] = {
        sched_op_compute(fwd, 1000, 0),
        sched_op_collective(SCHED_OP_ALL_GATHER, ag, tp, 1024, SCHED_DTYPE_BF16),
        sched_op_compute(tail, 5000, 0),
    };
    SchedOp r1[] = {
        sched_op_compute(fwd, 1000, 0),
        sched_op_collective(SCHED_OP_ALL_GATHER, ag, tp, 1024, SCHED_DTYPE_BF16),
        sched_op_collective(SCHED_OP_ALL_GATHER, ag, tp, 1024, SCHED_DTYPE_BF16),
    };
    sched_program_set_ops(p, 0, r0, G_N_ELEMENTS(r0));
    sched_program_set_ops(p, 1, r1, G_N_ELEMENTS(r1));
    return record_run(p, "hang");
}

/* 3 ranks, 50 layers of {compute, all_reduce on dp = {0,1,2}}; compute takes 3, 1 and 2 us on
 * ranks 0, 1, 2, so the first rank of each chain is the last to arrive. */
static int64_t run_three_ranks_layers(void)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    uint32_t mlp = sched_program_name(p, "mlp");
    uint32_t ar = sched_program_name(p, "grad_ar");
    int32_t members[] = {0, 1, 2};
    int32_t dp = sched_program_add_group(p, "dp", members, 3);
    for (uint32_t r = 0; r < 3; r++) {
        SchedOp ops[] = {
            sched_op_repeat(50, 2, 0),
            sched_op_compute(mlp,
                             r == 0   ? 3000
                             : r == 1 ? 1000
                                      : 2000,
                             16),
            sched_op_collective(SCHED_OP_ALL_REDUCE, ar, dp, 4096, SCHED_DTYPE_FP32),
        };
        sched_program_set_ops(p, r, ops, G_N_ELEMENTS(ops));
    }
    return record_run(p, "layers");
}

/* ---- reading the trace ---- */

typedef struct {
    JsonParser *parser;
    JsonObject *root;
    JsonArray *events; /* the file's events with each B/E pair read as one X (slices) */
    JsonArray *raw;    /* the file's events as written */
} Trace;

static void trace_clear(Trace *t)
{
    if (t->events && t->events != t->raw)
        json_array_unref(t->events);
    g_clear_object(&t->parser);
}

/* The events with each "B" and its "E" (the same pid and tid, innermost first) read as one
 * "X" slice with the exact duration in between; fails the test on an unmatched one or an "E"
 * whose name and args differ from its "B"'s (speedscope pairs them by those). */
static JsonArray *as_slices(JsonArray *raw)
{
    JsonArray *out = json_array_new();
    g_autoptr(GHashTable) open =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
    for (guint i = 0; i < json_array_get_length(raw); i++) {
        JsonNode *n = json_array_get_element(raw, i);
        JsonObject *e = json_node_get_object(n);
        const char *ph = json_object_has_member(e, "ph") ? json_object_get_string_member(e, "ph")
                                                          : "";
        g_autofree char *key =
            g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                            json_object_get_int_member(e, "pid"),
                            json_object_has_member(e, "tid") ? json_object_get_int_member(e, "tid")
                                                             : -1);
        if (strcmp(ph, "B") == 0) {
            JsonNode *x = json_node_copy(n);
            json_object_set_string_member(json_node_get_object(x), "ph", "X");
            GPtrArray *st = g_hash_table_lookup(open, key);
            if (!st) {
                st = g_ptr_array_new();
                g_hash_table_insert(open, g_strdup(key), st);
            }
            g_ptr_array_add(st, json_node_get_object(x));
            json_array_add_element(out, x);
        } else if (strcmp(ph, "E") == 0) {
            GPtrArray *st = g_hash_table_lookup(open, key);
            cr_assert(st && st->len, "an E without its B on %s", key);
            JsonObject *x = g_ptr_array_steal_index(st, st->len - 1);
            cr_assert_str_eq(json_object_get_string_member(e, "name"),
                             json_object_get_string_member(x, "name"));
            g_autofree char *ea = json_to_string(json_object_get_member(e, "args"), FALSE);
            g_autofree char *xa = json_to_string(json_object_get_member(x, "args"), FALSE);
            cr_assert_str_eq(ea, xa);
            int64_t b_ns = (int64_t)llround(json_object_get_double_member(x, "ts") * 1000.0);
            int64_t e_ns = (int64_t)llround(json_object_get_double_member(e, "ts") * 1000.0);
            cr_assert_geq(e_ns, b_ns);
            json_object_set_double_member(x, "dur", (double)(e_ns - b_ns) / 1000.0);
        } else {
            json_array_add_element(out, json_node_copy(n));
        }
    }
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, open);
    while (g_hash_table_iter_next(&it, &k, &v))
        cr_assert_eq(((GPtrArray *)v)->len, 0, "a B never ended on %s", (const char *)k);
    return out;
}

/* Writes run `id` to fx.trace_path and parses it; fails the test if either step fails. */
static Trace trace_load(int64_t id)
{
    g_autoptr(GError) err = NULL;
    cr_assert(trace_write(fx.store, id, fx.trace_path, &err), "%s", err ? err->message : "");
    Trace t = {.parser = json_parser_new()};
    cr_assert(json_parser_load_from_file(t.parser, fx.trace_path, &err),
              "trace is not valid JSON: %s", err ? err->message : "");
    JsonNode *root = json_parser_get_root(t.parser);
    cr_assert(root && JSON_NODE_HOLDS_OBJECT(root));
    t.root = json_node_get_object(root);
    cr_assert(json_object_has_member(t.root, "traceEvents"));
    t.raw = json_object_get_array_member(t.root, "traceEvents");
    cr_assert_not_null(t.raw);
    t.events = as_slices(t.raw);
    return t;
}

static const char *str_member(JsonObject *o, const char *key)
{
    return json_object_has_member(o, key) ? json_object_get_string_member(o, key) : NULL;
}

/* Events with phase `ph` (and name `name`, unless NULL), in file order. */
static GPtrArray *events_where(const Trace *t, const char *ph, const char *name)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        JsonObject *e = json_array_get_object_element(t->events, i);
        if (g_strcmp0(str_member(e, "ph"), ph) == 0 &&
            (!name || g_strcmp0(str_member(e, "name"), name) == 0))
            g_ptr_array_add(out, e);
    }
    return out;
}

/* A time in µs as integer ns (the trace writes three decimals). */
static int64_t us_member_ns(JsonObject *o, const char *key)
{
    return (int64_t)llround(json_object_get_double_member(o, key) * 1000.0);
}

static int64_t int_member(JsonObject *o, const char *key)
{
    return json_object_get_int_member(o, key);
}

static JsonObject *args_of(JsonObject *e)
{
    cr_assert(json_object_has_member(e, "args"));
    return json_object_get_object_member(e, "args");
}

/* The X event on `tid` named `name` (the n-th such, from 0). */
static JsonObject *slice_of(const Trace *t, int64_t tid, const char *name, guint n)
{
    g_autoptr(GPtrArray) xs = events_where(t, "X", name);
    for (guint i = 0; i < xs->len; i++) {
        JsonObject *e = g_ptr_array_index(xs, i);
        if (int_member(e, "tid") == tid && n-- == 0)
            return e;
    }
    cr_assert_fail("no X event %s #%u on tid %" G_GINT64_FORMAT, name, n, tid);
    return NULL;
}

/* ---- tests ---- */

Test(trace, metadata_and_threads)
{
    int64_t id = run_two_ranks();
    Trace t = trace_load(id);

    cr_assert_str_eq(str_member(t.root, "displayTimeUnit"), "ns");
    JsonObject *meta = json_object_get_object_member(t.root, "metadata");
    cr_assert_not_null(meta);
    cr_assert_eq(int_member(meta, "id"), id);
    cr_assert_str_eq(str_member(meta, "name"), "two ranks");
    cr_assert_str_eq(str_member(meta, "status"), "ok");
    cr_assert_eq(int_member(meta, "ranks"), 2);
    cr_assert(json_object_has_member(meta, "sim_end_us"));

    g_autoptr(GPtrArray) pn = events_where(&t, "M", "process_name");
    cr_assert_eq(pn->len, 1);
    JsonObject *pe = g_ptr_array_index(pn, 0);
    cr_assert_eq(int_member(pe, "pid"), 0);
    g_autofree char *want = g_strdup_printf("ranksim run %" G_GINT64_FORMAT ": two ranks", id);
    cr_assert_str_eq(str_member(args_of(pe), "name"), want);

    g_autoptr(GPtrArray) tn = events_where(&t, "M", "thread_name");
    g_autoptr(GPtrArray) ts = events_where(&t, "M", "thread_sort_index");
    cr_assert_eq(tn->len, 2);
    cr_assert_eq(ts->len, 2);
    for (guint r = 0; r < 2; r++) {
        bool found = false;
        for (guint i = 0; i < tn->len; i++) {
            JsonObject *e = g_ptr_array_index(tn, i);
            if (int_member(e, "tid") != r)
                continue;
            g_autofree char *rn = g_strdup_printf("rank %u", r);
            cr_assert_str_eq(str_member(args_of(e), "name"), rn);
            found = true;
        }
        cr_assert(found, "no thread_name for rank %u", r);
        JsonObject *si = g_ptr_array_index(ts, r);
        cr_assert_eq(int_member(si, "tid"), r);
        cr_assert_eq(int_member(args_of(si), "sort_index"), r);
    }
    trace_clear(&t);
}

Test(trace, complete_events_per_op)
{
    int64_t id = run_two_ranks();
    Trace t = trace_load(id);

    g_autoptr(GPtrArray) xs = events_where(&t, "X", NULL);
    cr_assert_eq(xs->len, 6);

    JsonObject *f0 = slice_of(&t, 0, "fwd", 0), *f1 = slice_of(&t, 1, "fwd", 0);
    cr_assert_eq(us_member_ns(f0, "ts"), 0);
    cr_assert_eq(us_member_ns(f0, "dur"), 1000);
    cr_assert_eq(us_member_ns(f1, "dur"), 3000);
    cr_assert_str_eq(str_member(f0, "cat"), "compute");
    cr_assert_eq(int_member(f0, "pid"), 0);
    JsonObject *fa = args_of(f0);
    cr_assert_eq(int_member(fa, "idx"), 0);
    cr_assert_eq(int_member(fa, "tokens"), 8);
    cr_assert_not(json_object_has_member(fa, "group"));
    cr_assert_not(json_object_has_member(fa, "incomplete"));

    JsonObject *a0 = slice_of(&t, 0, "ag", 0), *a1 = slice_of(&t, 1, "ag", 0);
    cr_assert_str_eq(str_member(a0, "cat"), "all_gather");
    cr_assert_eq(us_member_ns(a0, "ts"), 1000, "rank 0 arrives after its 1 us compute");
    cr_assert_eq(us_member_ns(a1, "ts"), 3000);
    int64_t end0 = us_member_ns(a0, "ts") + us_member_ns(a0, "dur");
    int64_t end1 = us_member_ns(a1, "ts") + us_member_ns(a1, "dur");
    cr_assert_eq(end0, end1, "both members leave the collective together");
    cr_assert_gt(end0, 3000);
    JsonObject *aa = args_of(a0);
    cr_assert_eq(int_member(aa, "idx"), 1);
    cr_assert_str_eq(str_member(aa, "group"), "tp");
    cr_assert_eq(int_member(aa, "seq"), 1);
    cr_assert_eq(int_member(aa, "count"), 1024);
    cr_assert_str_eq(str_member(aa, "dtype"), "bf16");

    JsonObject *w0 = slice_of(&t, 0, WEIRD_NAME, 0);
    cr_assert_eq(us_member_ns(w0, "ts"), end0);
    cr_assert_eq(us_member_ns(w0, "dur"), 500);
    trace_clear(&t);
}

/* Oracle: the X events, in file order, are the `ops` view ordered by (rank, idx). */
Test(trace, slices_equal_ops_view)
{
    int64_t id = run_three_ranks_layers();
    Trace t = trace_load(id);
    g_autoptr(GPtrArray) xs = events_where(&t, "X", NULL);

    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(fx.store),
                                    "SELECT rank, idx, layer, name, kind, start_us, end_us FROM ops"
                                    " WHERE run_id = ? ORDER BY rank, idx",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    guint i = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cr_assert_lt(i, xs->len, "fewer X events than op rows");
        JsonObject *e = g_ptr_array_index(xs, i++);
        JsonObject *a = args_of(e);
        cr_assert_eq(int_member(e, "tid"), sqlite3_column_int64(st, 0));
        cr_assert_eq(int_member(a, "idx"), sqlite3_column_int64(st, 1));
        cr_assert_eq(int_member(a, "layer"), sqlite3_column_int64(st, 2));
        cr_assert_str_eq(str_member(e, "name"), (const char *)sqlite3_column_text(st, 3));
        cr_assert_str_eq(str_member(e, "cat"), (const char *)sqlite3_column_text(st, 4));
        int64_t start = llround(sqlite3_column_double(st, 5) * 1000.0);
        int64_t end = llround(sqlite3_column_double(st, 6) * 1000.0);
        cr_assert_eq(us_member_ns(e, "ts"), start);
        cr_assert_eq(us_member_ns(e, "dur"), end - start);
    }
    sqlite3_finalize(st);
    cr_assert_eq(i, xs->len, "more X events than op rows");
    cr_assert_eq(xs->len, 3 * 50 * 2);
    trace_clear(&t);
}

/* The flow events of one id, in file order. */
static GPtrArray *flow_events(const Trace *t, int64_t id)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        JsonObject *e = json_array_get_object_element(t->events, i);
        const char *ph = str_member(e, "ph");
        if (ph && strchr("stf", ph[0]) && ph[1] == 0 && int_member(e, "id") == id)
            g_ptr_array_add(out, e);
    }
    return out;
}

Test(trace, one_flow_per_instance)
{
    int64_t id = run_two_ranks();
    Trace t = trace_load(id);
    g_autoptr(GPtrArray) s = events_where(&t, "s", NULL);
    g_autoptr(GPtrArray) tt = events_where(&t, "t", NULL);
    g_autoptr(GPtrArray) f = events_where(&t, "f", NULL);
    cr_assert_eq(s->len, 1);
    cr_assert_eq(tt->len, 0);
    cr_assert_eq(f->len, 1);
    JsonObject *fs = g_ptr_array_index(s, 0), *ff = g_ptr_array_index(f, 0);
    cr_assert_eq(int_member(fs, "id"), int_member(ff, "id"));
    cr_assert_eq(int_member(fs, "tid"), 0);
    cr_assert_eq(int_member(ff, "tid"), 1);
    cr_assert_str_eq(str_member(fs, "name"), "tp#1");
    cr_assert_str_eq(str_member(ff, "name"), "tp#1");
    cr_assert_str_eq(str_member(fs, "cat"), "collective");
    cr_assert_str_eq(str_member(ff, "bp"), "e");
    cr_assert_not(json_object_has_member(fs, "bp"));
    /* Each flow event lies inside its member's slice. */
    JsonObject *a0 = slice_of(&t, 0, "ag", 0), *a1 = slice_of(&t, 1, "ag", 0);
    int64_t ts0 = us_member_ns(fs, "ts"), ts1 = us_member_ns(ff, "ts");
    cr_assert(ts0 >= us_member_ns(a0, "ts") &&
              ts0 <= us_member_ns(a0, "ts") + us_member_ns(a0, "dur"));
    cr_assert(ts1 >= us_member_ns(a1, "ts") &&
              ts1 <= us_member_ns(a1, "ts") + us_member_ns(a1, "dur"));
    trace_clear(&t);
}

/* Invariant over many instances: each chain is s, t, f over ranks 0, 1, 2, ids are unique per
 * instance, every flow point lies inside the all_reduce slice of the same rank and seq, and a
 * chain never goes back in time (viewers drop an "f" met before its "s") although rank 0, first
 * in the chain, is the last to arrive. */
Test(trace, flow_chains_over_three_ranks)
{
    int64_t id = run_three_ranks_layers();
    Trace t = trace_load(id);
    g_autoptr(GPtrArray) s = events_where(&t, "s", NULL);
    cr_assert_eq(s->len, 50);
    g_autoptr(GHashTable) seen_names = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < s->len; i++) {
        int64_t fid = int_member(g_ptr_array_index(s, i), "id");
        g_autoptr(GPtrArray) chain = flow_events(&t, fid);
        cr_assert_eq(chain->len, 3, "flow %" G_GINT64_FORMAT " has %u events", fid, chain->len);
        static const char *const phases[] = {"s", "t", "f"};
        const char *name = str_member(g_ptr_array_index(chain, 0), "name");
        cr_assert(g_str_has_prefix(name, "dp#"));
        cr_assert_not(g_hash_table_contains(seen_names, name), "instance %s twice", name);
        g_hash_table_add(seen_names, (gpointer)name);
        int64_t seq = g_ascii_strtoll(name + 3, NULL, 10);
        int64_t prev_ts = INT64_MIN;
        for (guint k = 0; k < 3; k++) {
            JsonObject *e = g_ptr_array_index(chain, k);
            cr_assert_str_eq(str_member(e, "ph"), phases[k]);
            cr_assert_eq(int_member(e, "tid"), k, "members chained in rank order");
            cr_assert_str_eq(str_member(e, "name"), name);
            JsonObject *x = slice_of(&t, k, "grad_ar", (guint)(seq - 1));
            cr_assert_eq(int_member(args_of(x), "seq"), seq);
            int64_t ts = us_member_ns(e, "ts");
            int64_t xs = us_member_ns(x, "ts"), xe = xs + us_member_ns(x, "dur");
            cr_assert(ts >= xs && ts <= xe, "flow point outside its slice");
            if (xe > xs)
                cr_assert(ts > xs && ts < xe, "flow point not strictly inside a non-empty slice");
            cr_assert_geq(ts, prev_ts, "chain goes back in time");
            prev_ts = ts;
            if (k == 0 && seq == 1)
                cr_assert_eq(xs, 3000, "rank 0 arrives last at the first all_reduce");
        }
    }
    trace_clear(&t);
}

/* send/recv pair on the implicit channel group "p2p:0->1": one flow, send to recv. The receiver
 * is there first; the sender arrives 4 us later. */
Test(trace, p2p_flow)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t work = sched_program_name(p, "work");
    uint32_t xfer = sched_program_name(p, "xfer");
    SchedOp r0[] = {
        sched_op_compute(work, 5000, 0),
        sched_op_p2p(SCHED_OP_SEND, xfer, 1, 256, SCHED_DTYPE_FP32),
    };
    SchedOp r1[] = {
        sched_op_compute(work, 1000, 0),
        sched_op_p2p(SCHED_OP_RECV, xfer, 0, 256, SCHED_DTYPE_FP32),
    };
    sched_program_set_ops(p, 0, r0, G_N_ELEMENTS(r0));
    sched_program_set_ops(p, 1, r1, G_N_ELEMENTS(r1));
    Trace t = trace_load(record_run(p, "p2p"));
    JsonObject *send = slice_of(&t, 0, "xfer", 0), *recv = slice_of(&t, 1, "xfer", 0);
    cr_assert_str_eq(str_member(send, "cat"), "send");
    cr_assert_str_eq(str_member(recv, "cat"), "recv");
    cr_assert_str_eq(str_member(args_of(send), "group"), "p2p:0->1");
    g_autoptr(GPtrArray) s = events_where(&t, "s", NULL);
    g_autoptr(GPtrArray) f = events_where(&t, "f", NULL);
    cr_assert_eq(s->len, 1);
    cr_assert_eq(f->len, 1);
    JsonObject *fs = g_ptr_array_index(s, 0), *ff = g_ptr_array_index(f, 0);
    cr_assert_str_eq(str_member(fs, "name"), "p2p:0->1#1");
    cr_assert_eq(int_member(fs, "tid"), 0);
    cr_assert_eq(int_member(ff, "tid"), 1);
    cr_assert_leq(us_member_ns(fs, "ts"), us_member_ns(ff, "ts"));
    cr_assert_gt(us_member_ns(fs, "ts"), us_member_ns(send, "ts"));
    cr_assert_gt(us_member_ns(ff, "ts"), us_member_ns(recv, "ts"));
    trace_clear(&t);
}

Test(trace, hang_incomplete_and_deadlock)
{
    int64_t id = run_hang();
    Trace t = trace_load(id);
    JsonObject *meta = json_object_get_object_member(t.root, "metadata");
    cr_assert_str_eq(str_member(meta, "status"), "failed");
    int64_t sim_end = us_member_ns(meta, "sim_end_us");

    /* Rank 1's second all_gather never completed: it reaches the run's end, flagged. */
    JsonObject *stuck = slice_of(&t, 1, "ag", 1);
    JsonObject *sa = args_of(stuck);
    cr_assert_eq(int_member(sa, "seq"), 2);
    cr_assert(json_object_has_member(sa, "incomplete"));
    cr_assert(json_object_get_boolean_member(sa, "incomplete"));
    cr_assert_eq(us_member_ns(stuck, "ts") + us_member_ns(stuck, "dur"), sim_end);
    cr_assert_eq(us_member_ns(stuck, "dur"), 5000, "rank 0's 5 us tail ends the run");
    /* a blocked slice is red and says who it waits for: rank 0 never came to seq 2 */
    cr_assert_str_eq(str_member(stuck, "cname"), "terrible");
    cr_assert_str_eq(str_member(sa, "waiting_for"), "0");
    JsonObject *done = slice_of(&t, 1, "ag", 0);
    cr_assert_not(json_object_has_member(args_of(done), "incomplete"));

    /* Only the first instance has two members: one flow. */
    g_autoptr(GPtrArray) s = events_where(&t, "s", NULL);
    g_autoptr(GPtrArray) f = events_where(&t, "f", NULL);
    cr_assert_eq(s->len, 1);
    cr_assert_eq(f->len, 1);
    cr_assert_str_eq(str_member(g_ptr_array_index(s, 0), "name"), "tp#1");

    g_autoptr(GPtrArray) inst = events_where(&t, "i", NULL);
    JsonObject *dl = NULL;
    for (guint i = 0; i < inst->len; i++) {
        JsonObject *e = g_ptr_array_index(inst, i);
        if (g_strcmp0(str_member(args_of(e), "kind"), "deadlock") == 0)
            dl = e;
    }
    cr_assert_not_null(dl, "no deadlock instant event");
    cr_assert(g_str_has_prefix(str_member(dl, "name"), "deadlock "), "%s", str_member(dl, "name"));
    cr_assert_null(strchr(str_member(dl, "name"), '\n'), "name holds the first line only");
    JsonObject *da = args_of(dl);
    cr_assert_str_eq(str_member(da, "severity"), "error");
    cr_assert_not(g_str_has_prefix(str_member(dl, "name"), "deadlock: deadlock"),
                  "the kind once, not twice: %s", str_member(dl, "name"));
    cr_assert_not_null(str_member(da, "message"));
    cr_assert(JSON_NODE_HOLDS_OBJECT(json_object_get_member(da, "detail")),
              "detail embedded as an object");
    if (json_object_has_member(da, "group")) {
        /* on every member of the group it names */
        cr_assert_str_eq(str_member(dl, "s"), "t");
    } else if (json_object_has_member(da, "rank")) {
        cr_assert_str_eq(str_member(dl, "s"), "t");
        cr_assert_eq(int_member(dl, "tid"), int_member(da, "rank"));
    } else {
        cr_assert_str_eq(str_member(dl, "s"), "g");
    }
    cr_assert_eq(us_member_ns(dl, "ts"), sim_end);
    trace_clear(&t);
}

/* 2 ranks: rank 0 computes 1 us and enters an all_gather; rank 1 computes for 700 s. The
 * 600 s watchdog stops the run: 1 us of work, then 600 s of wait. */
static int64_t run_watchdog(void)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t fwd = sched_program_name(p, "fwd");
    uint32_t ag = sched_program_name(p, "ag");
    int32_t members[] = {0, 1};
    int32_t tp = sched_program_add_group(p, "tp", members, 2);
    for (uint32_t r = 0; r < 2; r++) {
        SchedOp ops[] = {
            sched_op_compute(fwd, r == 0 ? 1000 : INT64_C(700000000000), 0),
            sched_op_collective(SCHED_OP_ALL_GATHER, ag, tp, 1024, SCHED_DTYPE_BF16),
        };
        sched_program_set_ops(p, r, ops, G_N_ELEMENTS(ops));
    }
    return record_run(p, "watchdog");
}

/* A 600 s wait after 1 us of work opens on the work: everything is drawn up to twice the work's
 * end (2 us), the blocked slice and the watchdog's diagnostics say their true times; nothing
 * before the cut moves. --full-wait draws the wait whole. (issue 28, item 11) */
Test(trace, a_long_wait_is_cut_for_the_first_view)
{
    int64_t id = run_watchdog();
    Trace t = trace_load(id);
    JsonObject *meta = json_object_get_object_member(t.root, "metadata");
    cr_assert_eq(us_member_ns(meta, "wait_cut_at_us"), 2000);
    cr_assert_gt(us_member_ns(meta, "hang_end_us"), INT64_C(600000000000));
    cr_assert_eq(us_member_ns(slice_of(&t, 0, "fwd", 0), "dur"), 1000, "work is not moved");
    g_autoptr(GPtrArray) xs = events_where(&t, "X", NULL);
    JsonObject *stuck = NULL;
    for (guint i = 0; i < xs->len; i++) {
        JsonObject *e = g_ptr_array_index(xs, i);
        cr_assert_leq(us_member_ns(e, "ts") + us_member_ns(e, "dur"), 2000, "%s ends past the cut",
                      str_member(e, "name"));
        if (int_member(e, "tid") == 0 && g_str_has_prefix(str_member(e, "name"), "ag "))
            stuck = e;
    }
    cr_assert_not_null(stuck);
    cr_assert_str_eq(str_member(stuck, "name"), "ag (blocked 600.000 s; cut)");
    cr_assert_eq(us_member_ns(args_of(stuck), "blocked_until_us"),
                 us_member_ns(meta, "hang_end_us"));
    g_autoptr(GPtrArray) inst = events_where(&t, "i", NULL);
    guint timeouts = 0;
    for (guint i = 0; i < inst->len; i++) {
        JsonObject *e = g_ptr_array_index(inst, i);
        if (g_strcmp0(str_member(args_of(e), "kind"), "timeout") != 0)
            continue;
        timeouts++;
        cr_assert_eq(us_member_ns(e, "ts"), 2000);
        cr_assert(g_str_has_prefix(str_member(e, "name"), "at 600.000 s: timeout: "), "%s",
                  str_member(e, "name"));
        cr_assert_gt(us_member_ns(args_of(e), "at_us"), INT64_C(600000000000));
    }
    cr_assert_gt(timeouts, 0);
    trace_clear(&t);

    /* --full-wait: the true times */
    g_autoptr(GError) err = NULL;
    cr_assert(trace_write_filtered(fx.store, id, fx.trace_path, NULL, true, &err), "%s",
              err ? err->message : "");
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(fx.trace_path, &text, NULL, NULL));
    cr_assert_null(strstr(text, "wait_cut_at_us"));
    cr_assert_null(strstr(text, "; cut)"));
}

/* Diagnostics written by hand: no rank -> global; no time -> 0; long multi-line message ->
 * first line, 120 characters and an ellipsis; detail that is not JSON -> a string. */
Test(trace, diagnostic_fields)
{
    int64_t id = run_two_ranks();
    GString *msg = g_string_new(NULL);
    for (int i = 0; i < 130; i++)
        g_string_append(msg, "\xc3\xa9"); /* é */
    g_string_append(msg, "\nsecond line");
    sqlite3 *db = store_db(fx.store);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "INSERT INTO diagnostics(run_id, kind, severity, rank, message,"
                                    " detail, time_us) VALUES (?,?,?,?,?,?,?)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, "custom", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, "warning", -1, SQLITE_STATIC);
    sqlite3_bind_null(st, 4);
    sqlite3_bind_text(st, 5, msg->str, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, "not json {", -1, SQLITE_STATIC);
    sqlite3_bind_null(st, 7);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
    sqlite3_bind_text(st, 2, "short", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, 1);
    sqlite3_bind_text(st, 5, "one \"line\"", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, "{\"a\":[1,2]}", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 7, 2.5);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);

    Trace t = trace_load(id);
    g_autoptr(GPtrArray) inst = events_where(&t, "i", NULL);
    cr_assert_eq(inst->len, 2);
    JsonObject *c = g_ptr_array_index(inst, 0), *s = g_ptr_array_index(inst, 1);

    cr_assert_str_eq(str_member(c, "s"), "g");
    cr_assert_eq(us_member_ns(c, "ts"), 0);
    const char *name = str_member(c, "name");
    cr_assert(g_utf8_validate(name, -1, NULL));
    cr_assert(g_str_has_prefix(name, "custom: \xc3\xa9"));
    cr_assert(g_str_has_suffix(name, "\xc3\xa9\xe2\x80\xa6"), "truncated with an ellipsis");
    cr_assert_eq(g_utf8_strlen(name, -1), (glong)(strlen("custom: ") + 120 + 1));
    JsonObject *ca = args_of(c);
    cr_assert_str_eq(str_member(ca, "message"), msg->str, "args keep the whole message");
    cr_assert_str_eq(str_member(ca, "detail"), "not json {");
    cr_assert_str_eq(str_member(ca, "severity"), "warning");

    cr_assert_str_eq(str_member(s, "s"), "t");
    cr_assert_eq(int_member(s, "tid"), 1);
    cr_assert_eq(us_member_ns(s, "ts"), 2500);
    cr_assert_str_eq(str_member(s, "name"), "short: one \"line\"");
    JsonNode *detail = json_object_get_member(args_of(s), "detail");
    cr_assert(JSON_NODE_HOLDS_OBJECT(detail));
    JsonArray *a = json_object_get_array_member(json_node_get_object(detail), "a");
    cr_assert_eq(json_array_get_length(a), 2);
    cr_assert_eq(json_array_get_int_element(a, 1), 2);
    g_string_free(msg, TRUE);
    trace_clear(&t);
}

/* A rejected scenario: no ranks, no ops, one global config diagnostic. */
Test(trace, invalid_run)
{
    g_autoptr(GError) err = NULL;
    StoreRunInfo info = {.name = "broken", .kind = "program"};
    int64_t id = store_insert_invalid(fx.store, &info, "scenario.yaml:3: bad key", &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    Trace t = trace_load(id);
    g_autoptr(GPtrArray) xs = events_where(&t, "X", NULL);
    g_autoptr(GPtrArray) tn = events_where(&t, "M", "thread_name");
    g_autoptr(GPtrArray) inst = events_where(&t, "i", NULL);
    cr_assert_eq(xs->len, 0);
    cr_assert_eq(tn->len, 0);
    cr_assert_eq(inst->len, 1);
    JsonObject *e = g_ptr_array_index(inst, 0);
    cr_assert_str_eq(str_member(e, "s"), "g");
    cr_assert_str_eq(str_member(e, "name"), "config: scenario.yaml:3: bad key");
    cr_assert_not(json_object_has_member(args_of(e), "detail"));
    JsonObject *meta = json_object_get_object_member(t.root, "metadata");
    cr_assert_str_eq(str_member(meta, "status"), "invalid");
    cr_assert(JSON_NODE_HOLDS_NULL(json_object_get_member(meta, "sim_end_us")));
    trace_clear(&t);
}

Test(trace, strings_escaped)
{
    g_autoptr(SchedProgram) p = sched_program_new(1);
    const char *names[] = {
        WEIRD_NAME,
        "ctl\x01\t\n\x1f end",
        "bad \xff\xfe utf8",
        "ok \xe2\x82\xac \xf0\x9f\x98\x80",
    };
    SchedOp ops[G_N_ELEMENTS(names)];
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        ops[i] = sched_op_compute(sched_program_name(p, names[i]), 100, 0);
    sched_program_set_ops(p, 0, ops, G_N_ELEMENTS(ops));
    int64_t id = record_run(p, "run \"quoted\" \\ name");
    Trace t = trace_load(id);

    g_autoptr(GPtrArray) xs = events_where(&t, "X", NULL);
    cr_assert_eq(xs->len, 4);
    cr_assert_str_eq(str_member(g_ptr_array_index(xs, 0), "name"), WEIRD_NAME);
    cr_assert_str_eq(str_member(g_ptr_array_index(xs, 1), "name"), "ctl\x01\t\n\x1f end");
    cr_assert_str_eq(str_member(g_ptr_array_index(xs, 2), "name"),
                     "bad \xef\xbf\xbd\xef\xbf\xbd utf8", "invalid bytes become U+FFFD");
    cr_assert_str_eq(str_member(g_ptr_array_index(xs, 3), "name"), names[3]);
    JsonObject *meta = json_object_get_object_member(t.root, "metadata");
    cr_assert_str_eq(str_member(meta, "name"), "run \"quoted\" \\ name");

    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(fx.trace_path, &text, NULL, NULL));
    cr_assert_not_null(strstr(text, "\"we\\\"ird\\\\name\""), "quote and backslash escaped");
    cr_assert_not_null(strstr(text, "ctl\\u0001\\t\\n\\u001f end"));
    cr_assert(g_utf8_validate(text, -1, NULL), "the file is valid UTF-8");
    trace_clear(&t);
}

Test(trace, deterministic)
{
    int64_t id = run_hang();
    g_autoptr(GError) err = NULL;
    g_autofree char *second = g_build_filename(fx.dir, "again.json", NULL);
    cr_assert(trace_write(fx.store, id, fx.trace_path, &err), "%s", err ? err->message : "");
    cr_assert(trace_write(fx.store, id, second, &err), "%s", err ? err->message : "");
    g_autofree char *a = NULL, *b = NULL;
    gsize la = 0, lb = 0;
    cr_assert(g_file_get_contents(fx.trace_path, &a, &la, NULL));
    cr_assert(g_file_get_contents(second, &b, &lb, NULL));
    cr_assert_eq(la, lb);
    cr_assert(memcmp(a, b, la) == 0, "same run, same bytes");
}

Test(trace, unknown_run)
{
    run_two_ranks();
    g_autoptr(GError) err = NULL;
    cr_assert_not(trace_write(fx.store, 999, fx.trace_path, &err));
    cr_assert(g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND));
    g_autofree char *want = g_strdup_printf("run 999 not found in %s", fx.db_path);
    cr_assert_str_eq(err->message, want);
    cr_assert_not(g_file_test(fx.trace_path, G_FILE_TEST_EXISTS), "no file for a bad run id");
}

/* An existing file is left alone when the run id is unknown. */
Test(trace, unknown_run_keeps_existing_file)
{
    cr_assert(g_file_set_contents(fx.trace_path, "old", -1, NULL));
    g_autoptr(GError) err = NULL;
    cr_assert_not(trace_write(fx.store, 42, fx.trace_path, &err));
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(fx.trace_path, &text, NULL, NULL));
    cr_assert_str_eq(text, "old");
}

Test(trace, unwritable_output)
{
    int64_t id = run_two_ranks();
    g_autoptr(GError) err = NULL;
    g_autofree char *path = g_build_filename(fx.dir, "no-such-dir", "t.json", NULL);
    cr_assert_not(trace_write(fx.store, id, path, &err));
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, G_IO_ERROR);
    cr_assert(g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND), "%s", err->message);
    cr_assert_not_null(strstr(err->message, path), "%s", err->message);
}

/* A write that fails midway (file size limit): the error says why and the partial file is
 * removed. Criterion runs each test in its own process, so the limit stays in this test. */
Test(trace, write_failure_removes_file)
{
    int64_t id = run_three_ranks_layers();
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    g_autoptr(GError) err = NULL;
    bool ok = trace_write(fx.store, id, fx.trace_path, &err);
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &lim);
    cr_assert_not(ok);
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, G_IO_ERROR);
    cr_assert_not_null(strstr(err->message, fx.trace_path), "%s", err->message);
    cr_assert_not(g_file_test(fx.trace_path, G_FILE_TEST_EXISTS), "partial file removed");
}

/* "-" writes to stdout (captured here), the same document as a file. */
Test(trace, stdout_output)
{
    int64_t id = run_two_ranks();
    g_autoptr(GError) err = NULL;
    cr_assert(trace_write(fx.store, id, fx.trace_path, &err), "%s", err ? err->message : "");
    g_autofree char *want = NULL;
    gsize want_len = 0;
    cr_assert(g_file_get_contents(fx.trace_path, &want, &want_len, NULL));

    cr_redirect_stdout();
    cr_assert(trace_write(fx.store, id, "-", &err), "%s", err ? err->message : "");
    fflush(stdout);
    close(STDOUT_FILENO); /* end of the pipe for the reader */
    FILE *got = cr_get_redirected_stdout();
    GString *text = g_string_new(NULL);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, got)) > 0)
        g_string_append_len(text, chunk, n);
    cr_assert_eq(text->len, want_len);
    cr_assert(memcmp(text->str, want, want_len) == 0);
    g_string_free(text, TRUE);
}

/* A path ending in .gz gets gzip (RFC 1952: the magic bytes 1f 8b), which decompresses to the
 * very document the plain path gets. */
Test(trace, gz_path_writes_gzip)
{
    int64_t id = run_three_ranks_layers();
    g_autoptr(GError) err = NULL;
    g_autofree char *plain = g_strconcat(fx.trace_path, ".plain.json", NULL);
    g_autofree char *gz = g_strconcat(fx.trace_path, ".json.gz", NULL);
    cr_assert(trace_write(fx.store, id, plain, &err), "%s", err ? err->message : "");
    cr_assert(trace_write(fx.store, id, gz, &err), "%s", err ? err->message : "");
    g_autofree char *a = NULL, *z = NULL;
    gsize alen = 0, zlen = 0;
    cr_assert(g_file_get_contents(plain, &a, &alen, NULL));
    cr_assert(g_file_get_contents(gz, &z, &zlen, NULL));
    cr_assert(zlen > 2 && (unsigned char)z[0] == 0x1f && (unsigned char)z[1] == 0x8b);
    cr_assert_lt(zlen, alen);
    g_autoptr(GConverter) dec = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
    g_autoptr(GInputStream) raw = g_memory_input_stream_new_from_data(z, (gssize)zlen, NULL);
    g_autoptr(GInputStream) in = g_converter_input_stream_new(raw, dec);
    g_autoptr(GByteArray) outb = g_byte_array_new();
    guint8 chunk[4096];
    gssize k;
    while ((k = g_input_stream_read(in, chunk, sizeof chunk, NULL, &err)) > 0)
        g_byte_array_append(outb, chunk, (guint)k);
    cr_assert_eq(k, 0, "%s", err ? err->message : "");
    cr_assert_eq(outb->len, alen);
    cr_assert(memcmp(outb->data, a, alen) == 0);
    g_unlink(plain);
    g_unlink(gz);
}
