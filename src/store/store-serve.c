/* src/store/store-serve.c — see store-serve.h. */
#include "store-serve.h"

#include "store-ops.h"
#include "store-values.h"

#include <math.h>

static double us(int64_t ns)
{
    return (double)ns / 1e3;
}

static void bind_time(sqlite3_stmt *st, int col, int64_t ns)
{
    if (ns < 0)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_double(st, col, us(ns));
}

/* Requests per INSERT statement: a statement per row made storing issue 27's 10^6-request
 * trace a fifth of its run (perf); 12 columns x 64 rows stays under SQLite's 999 parameters of
 * old builds. */
#define REQUESTS_PER_INSERT 64
#define REQUEST_COLUMNS 12

static void bind_request(sqlite3_stmt *st, int b, int64_t id, const ModelServeRequest *q)
{
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 2, q->id);
    sqlite3_bind_int64(st, b + 3, q->dp);
    sqlite3_bind_double(st, b + 4, us(q->arrival_ns));
    sqlite3_bind_int64(st, b + 5, q->prompt);
    sqlite3_bind_int64(st, b + 6, q->output);
    sqlite3_bind_int64(st, b + 7, q->generated);
    bind_time(st, b + 8, q->first_token_ns);
    bind_time(st, b + 9, q->finish_ns);
    sqlite3_bind_int64(st, b + 10, q->preemptions);
    sqlite3_bind_int64(st, b + 11, q->chunks);
    sqlite3_bind_int64(st, b + 12, q->cached_tokens);
}

/* The requests' rows, REQUESTS_PER_INSERT to a statement (prepared only for a run with that
 * many), the rest one by one. */
static bool insert_requests(StoreStmts *c, int64_t id, const GArray *reqs)
{
    static const char head[] =
        "INSERT OR FAIL INTO requests(run_id, id, dp, arrival_us, prompt, output, generated,"
        " first_token_us, finish_us, preemptions, prefill_chunks, cached_tokens)";
    bool ok = true;
    guint i = 0;
    if (reqs->len >= REQUESTS_PER_INSERT) {
        g_autofree char *sql =
            store_ops_rows_sql(head, REQUESTS_PER_INSERT, REQUEST_COLUMNS, REQUEST_COLUMNS);
        sqlite3_stmt *many = store_stmt_get(c, sql);
        ok = many != NULL;
        for (; ok && i + REQUESTS_PER_INSERT <= reqs->len; i += REQUESTS_PER_INSERT) {
            for (int k = 0; k < REQUESTS_PER_INSERT; k++)
                bind_request(many, k * REQUEST_COLUMNS, id,
                             &g_array_index(reqs, ModelServeRequest, i + (guint)k));
            ok = sqlite3_step(many) == SQLITE_DONE;
            sqlite3_reset(many);
        }
        store_stmt_put(c, many);
    }
    if (!ok || i == reqs->len)
        return ok;
    g_autofree char *sql = store_ops_rows_sql(head, 1, REQUEST_COLUMNS, REQUEST_COLUMNS);
    sqlite3_stmt *one = store_stmt_get(c, sql);
    ok = one != NULL;
    for (; ok && i < reqs->len; i++) {
        bind_request(one, 0, id, &g_array_index(reqs, ModelServeRequest, i));
        ok = sqlite3_step(one) == SQLITE_DONE;
        sqlite3_reset(one);
    }
    store_stmt_put(c, one);
    return ok;
}

const char *store_serve_insert(StoreStmts *c, int64_t id, const ModelServe *sv)
{
    sqlite3_stmt *st =
        store_stmt_get(c, "INSERT INTO steps(run_id, step, dp, start_us, end_us, prefill_tokens,"
                          " decode_tokens, seqs, padded_tokens, kv_blocks_used, dummy)"
                          " VALUES (?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return "prepare steps";
    bool ok = true;
    uint32_t steps = 0;
    for (guint i = 0; ok && i < sv->steps->len; i++) {
        const ModelServeStep *x = &g_array_index(sv->steps, ModelServeStep, i);
        steps = MAX(steps, x->step);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, x->step);
        sqlite3_bind_int64(st, 3, x->dp);
        sqlite3_bind_double(st, 4, us(x->start_ns));
        sqlite3_bind_double(st, 5, us(x->end_ns));
        sqlite3_bind_int64(st, 6, x->prefill_tokens);
        sqlite3_bind_int64(st, 7, x->decode_tokens);
        sqlite3_bind_int64(st, 8, x->seqs);
        sqlite3_bind_int64(st, 9, x->padded_tokens);
        sqlite3_bind_int64(st, 10, x->kv_blocks_used);
        sqlite3_bind_int(st, 11, x->dummy ? 1 : 0);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    store_stmt_put(c, st);
    if (!ok)
        return "insert steps";
    if (!insert_requests(c, id, sv->requests))
        return "insert requests";
    st = store_stmt_get(c, "INSERT INTO serve_runs(run_id, requests, steps, kv_blocks,"
                           " block_tokens, simulated_steps, reused_steps, stopped)"
                           " VALUES (?,?,?,?,?,?,?,?)");
    if (!st)
        return "prepare serve_runs";
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, sv->requests->len);
    sqlite3_bind_int64(st, 3, steps);
    sqlite3_bind_int64(st, 4, sv->kv_blocks);
    sqlite3_bind_int64(st, 5, sv->block_tokens);
    sqlite3_bind_int64(st, 6, (int64_t)sv->simulated);
    sqlite3_bind_int64(st, 7, (int64_t)sv->reused);
    if (sv->stopped)
        sqlite3_bind_text(st, 8, sv->stopped, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 8);
    ok = sqlite3_step(st) == SQLITE_DONE;
    store_stmt_put(c, st);
    return ok ? NULL : "insert serve_runs";
}

/* Microseconds back to nanoseconds; NULL, NaN or a time outside [0, 2^62) ns (a hand-edited
 * file: store-values.h) reads as -1, "never". */
static int64_t ns_of(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return -1;
    double ns = sqlite3_column_double(st, col) * 1e3;
    if (!(ns >= 0.0 && ns < 4.6e18))
        return -1;
    return (int64_t)llround(ns);
}

/* Whether every column of `cols` in the row holds an integer in [0, `max`]: a row with a
 * count, id or dp ranksim cannot have written is skipped (store-values.h). */
static bool row_in_range(sqlite3_stmt *st, const int *cols, size_t n, int64_t max)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = sqlite3_column_int64(st, cols[i]);
        if (v < 0 || v > max)
            return false;
    }
    return true;
}

ModelServe *store_serve_read(sqlite3 *db, int64_t id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT kv_blocks, block_tokens, simulated_steps, reused_steps, stopped"
                           " FROM serve_runs WHERE run_id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL; /* an older database without the table */
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return NULL;
    }
    ModelServe *sv = g_new0(ModelServe, 1);
    sv->workload = model_workload_new();
    sv->steps = g_array_new(FALSE, FALSE, sizeof(ModelServeStep));
    sv->requests = g_array_new(FALSE, FALSE, sizeof(ModelServeRequest));
    static const int counts[] = {0, 1};
    static const int steps[] = {2, 3};
    if (row_in_range(st, counts, G_N_ELEMENTS(counts), G_MAXUINT32)) {
        sv->kv_blocks = (uint32_t)sqlite3_column_int64(st, 0);
        sv->block_tokens = (uint32_t)sqlite3_column_int64(st, 1);
    }
    if (row_in_range(st, steps, G_N_ELEMENTS(steps), G_MAXINT64)) {
        sv->simulated = (uint64_t)sqlite3_column_int64(st, 2);
        sv->reused = (uint64_t)sqlite3_column_int64(st, 3);
    }
    if (sqlite3_column_type(st, 4) != SQLITE_NULL)
        sv->stopped = store_value_text(sqlite3_column_text(st, 4));
    sqlite3_finalize(st);
    bool ok = sqlite3_prepare_v2(db,
                                 "SELECT step, dp, start_us, end_us, prefill_tokens, decode_tokens,"
                                 " seqs, padded_tokens, kv_blocks_used, dummy FROM steps"
                                 " WHERE run_id = ? ORDER BY step, dp",
                                 -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, id);
        static const int counts[] = {0, 4, 5, 6, 7, 8};
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!row_in_range(st, counts, G_N_ELEMENTS(counts), G_MAXUINT32) ||
                !store_value_rank_ok(sqlite3_column_int64(st, 1)))
                continue; /* dp is a data-parallel rank */
            ModelServeStep x = {(uint32_t)sqlite3_column_int64(st, 0),
                                (uint32_t)sqlite3_column_int64(st, 1),
                                ns_of(st, 2),
                                ns_of(st, 3),
                                (uint32_t)sqlite3_column_int64(st, 4),
                                (uint32_t)sqlite3_column_int64(st, 5),
                                (uint32_t)sqlite3_column_int64(st, 6),
                                (uint32_t)sqlite3_column_int64(st, 7),
                                (uint32_t)sqlite3_column_int64(st, 8),
                                sqlite3_column_int(st, 9) != 0};
            g_array_append_val(sv->steps, x);
        }
        sqlite3_finalize(st);
    }
    ok = ok && sqlite3_prepare_v2(db,
                                  "SELECT id, dp, arrival_us, first_token_us, finish_us, prompt,"
                                  " output, generated, preemptions, prefill_chunks, cached_tokens"
                                  " FROM requests"
                                  " WHERE run_id = ? ORDER BY id",
                                  -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, id);
        static const int counts[] = {0, 5, 6, 7, 8, 9, 10};
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!row_in_range(st, counts, G_N_ELEMENTS(counts), G_MAXUINT32) ||
                !store_value_rank_ok(sqlite3_column_int64(st, 1)))
                continue;
            ModelServeRequest q = {(uint32_t)sqlite3_column_int64(st, 0),
                                   (uint32_t)sqlite3_column_int64(st, 1),
                                   ns_of(st, 2),
                                   ns_of(st, 3),
                                   ns_of(st, 4),
                                   (uint32_t)sqlite3_column_int64(st, 5),
                                   (uint32_t)sqlite3_column_int64(st, 6),
                                   (uint32_t)sqlite3_column_int64(st, 7),
                                   (uint32_t)sqlite3_column_int64(st, 8),
                                   (uint32_t)sqlite3_column_int64(st, 9),
                                   (uint32_t)sqlite3_column_int64(st, 10)};
            g_array_append_val(sv->requests, q);
        }
        sqlite3_finalize(st);
    }
    if (!ok) {
        model_serve_free(sv);
        return NULL;
    }
    return sv;
}
