/* src/store/store-run.c — a run's rows written in ONE transaction (store_run_insert,
 * store_insert_invalid, the commit of store-stage.c's runs, and a streamed run); see store.h.
 *
 * Everything of a run — run row, names, op rows, groups, ranks, diagnostics, memory, serving —
 * goes in between BEGIN IMMEDIATE and COMMIT; any failure rolls all of it back, leaving no
 * row. Costs: the commit inserts about a million op rows per second (store-ops.c).
 */
#include "store-private.h"

#include "revision.h"
#include "store-serve.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

char *store_now_iso8601(void)
{
    g_autoptr(GDateTime) t = g_date_time_new_now_utc();
    return g_date_time_format_iso8601(t);
}

static void bind_opt_text(sqlite3_stmt *st, int col, const char *v)
{
    if (v)
        sqlite3_bind_text(st, col, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

#define bind_opt_int store_bind_opt_int

/* A kept statement of the connection (store-stmt.h): a sweep's writer stores thousands of
 * runs with the same INSERTs. Given back with done(), reset. */
static sqlite3_stmt *stmt(Store *s, const char *sql)
{
    return store_stmt_get(store_stmts(s), sql);
}

static void done(Store *s, sqlite3_stmt *st)
{
    store_stmt_put(store_stmts(s), st);
}

/* The run row with its final figures (`o` NULL: an invalid run). Returns its id or -1. */
static int64_t insert_run_row_id(Store *s, int64_t id, const StoreRunInfo *info,
                                 const char *created_at, const char *status, int exit_code,
                                 const SchedOutcome *o, double wall_ms, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO runs(name, kind, status, exit_code, created_at, scenario,"
                       " path, timeline, version, hardware, ranks, sim_end_us, events,"
                       " wall_ms, rank_ops, id, model, layout, vllm, overrides, sweep_id)"
                       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"))) {
        store_sql_error(error, s, "prepare runs");
        return -1;
    }
    sqlite3_bind_text(st, 1, info->name ? info->name : "?", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, info->kind ? info->kind : "program", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, status, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, exit_code);
    sqlite3_bind_text(st, 5, created_at, -1, SQLITE_STATIC);
    bind_opt_text(st, 6, info->scenario);
    bind_opt_text(st, 7, info->path);
    bind_opt_text(st, 8, info->timeline);
    sqlite3_bind_text(st, 9, RANKSIM_VERSION " (" RANKSIM_REVISION ")", -1, SQLITE_STATIC);
    bind_opt_text(st, 10, info->hardware);
    if (o) {
        sqlite3_bind_int64(st, 11, o->n_ranks);
        sqlite3_bind_double(st, 12, (double)o->end_ns / 1e3);
        sqlite3_bind_int64(st, 13, (int64_t)o->events);
        sqlite3_bind_double(st, 14, wall_ms);
        sqlite3_bind_int64(st, 15, (int64_t)o->rank_ops);
    }
    if (id > 0)
        sqlite3_bind_int64(st, 16, id);
    else
        sqlite3_bind_null(st, 16);
    bind_opt_text(st, 17, info->model);
    bind_opt_text(st, 18, info->layout);
    bind_opt_text(st, 19, info->vllm);
    bind_opt_text(st, 20, info->overrides);
    bind_opt_int(st, 21, info->sweep_id > 0, info->sweep_id);
    int rc = sqlite3_step(st);
    done(s, st);
    if (rc != SQLITE_DONE) {
        store_sql_error(error, s, "insert run");
        return -1;
    }
    int64_t row = sqlite3_last_insert_rowid(s->db);
    if (info->sweep_id < 0) { /* the sweep's first run: its id names the sweep */
        g_autofree char *sql =
            g_strdup_printf("UPDATE runs SET sweep_id = id WHERE id = %" G_GINT64_FORMAT, row);
        if (!store_exec(s, sql, error))
            return -1;
    }
    return row;
}

static int64_t insert_run_row(Store *s, const StoreRunInfo *info, const char *created_at,
                              const char *status, int exit_code, const SchedOutcome *o,
                              double wall_ms, GError **error)
{
    return insert_run_row_id(s, -1, info, created_at, status, exit_code, o, wall_ms, error);
}

static bool insert_names(Store *s, int64_t id, GPtrArray *names, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO names(run_id, id, name) VALUES (?,?,?)")))
        return store_sql_error(error, s, "prepare names");
    for (guint i = 0; names && i < names->len; i++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(names, i), -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            done(s, st);
            return store_sql_error(error, s, "insert names");
        }
        sqlite3_reset(st);
    }
    done(s, st);
    return true;
}

GPtrArray *store_copy_names(const SchedProgram *p)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; p && i < p->names.strings->len; i++)
        g_ptr_array_add(a, g_strdup(g_ptr_array_index(p->names.strings, i)));
    return a;
}

/* One tensor list as plan `plan` of run `id` (`memory_plans`). */
static bool insert_plan_items(sqlite3_stmt *it, int64_t id, int64_t plan, const GPtrArray *items)
{
    bool ok = true;
    for (guint i = 0; i < items->len && ok; i++) {
        const ModelMemItem *x = g_ptr_array_index(items, i);
        sqlite3_bind_int64(it, 1, id);
        sqlite3_bind_int64(it, 2, plan);
        sqlite3_bind_int64(it, 3, i);
        sqlite3_bind_text(it, 4, model_mem_component_name(x->component), -1, SQLITE_STATIC);
        sqlite3_bind_text(it, 5, x->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(it, 6, x->shape, -1, SQLITE_STATIC);
        sqlite3_bind_text(it, 7, x->dtype, -1, SQLITE_STATIC);
        sqlite3_bind_int64(it, 8, (int64_t)x->bytes);
        ok = sqlite3_step(it) == SQLITE_DONE;
        sqlite3_reset(it);
    }
    return ok;
}

/* Each rank's tensor list (`rank_memory_plans`), a list shared by several ranks (the model
 * gives identical ranks one array) stored once (`memory_plans`), numbered in the order of the
 * first rank that has it: the model's sharing is deterministic, so are the rows. */
static bool insert_memory_plans(Store *s, int64_t id, const ModelMemPlan *m, GError **error)
{
    sqlite3_stmt *it = NULL, *rp = NULL;
    if (!(it = stmt(s, "INSERT INTO memory_plans(run_id, plan, idx, component, name, shape,"
                       " dtype, bytes) VALUES (?,?,?,?,?,?,?,?)")) ||
        !(rp = stmt(s, "INSERT INTO rank_memory_plans(run_id, rank, plan) VALUES (?,?,?)"))) {
        done(s, it);
        return store_sql_error(error, s, "prepare memory_plans");
    }
    g_autoptr(GHashTable) plans = g_hash_table_new(g_direct_hash, g_direct_equal);
    bool ok = true;
    for (uint32_t r = 0; r < m->world && ok; r++) {
        const GPtrArray *items = m->ranks[r].items;
        if (!items)
            continue;
        gpointer found = NULL;
        int64_t plan;
        if (g_hash_table_lookup_extended(plans, items, NULL, &found)) {
            plan = GPOINTER_TO_INT(found);
        } else {
            plan = g_hash_table_size(plans);
            g_hash_table_insert(plans, (gpointer)items, GINT_TO_POINTER((int)plan));
            ok = insert_plan_items(it, id, plan, items);
        }
        sqlite3_bind_int64(rp, 1, id);
        sqlite3_bind_int64(rp, 2, r);
        sqlite3_bind_int64(rp, 3, plan);
        ok = ok && sqlite3_step(rp) == SQLITE_DONE;
        sqlite3_reset(rp);
    }
    done(s, it);
    done(s, rp);
    return ok || store_sql_error(error, s, "insert memory_plans");
}

/* Per rank, each component's bytes (`memory`) and the rank's tensor list; the smallest rank's
 * KV budget and its KV bytes per token into *min_kv, *per_token. */
static bool insert_memory_ranks(Store *s, int64_t id, const ModelMemPlan *m, int64_t *min_kv_out,
                                uint64_t *per_token_out, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO memory(run_id, rank, component, bytes) VALUES (?,?,?,?)")))
        return store_sql_error(error, s, "prepare memory");
    bool ok = true;
    int64_t min_kv = INT64_MAX;
    uint64_t per_token = 0;
    for (uint32_t r = 0; r < m->world && ok; r++) {
        const ModelMemRank *mr = &m->ranks[r];
        if (mr->kv_budget_bytes < min_kv) {
            min_kv = mr->kv_budget_bytes;
            per_token = mr->kv_bytes_per_token;
        }
        for (int c = 0; c < MODEL_MEM_COUNT && ok; c++) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int64(st, 2, r);
            sqlite3_bind_text(st, 3, model_mem_component_name((ModelMemComponent)c), -1,
                              SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, (int64_t)mr->bytes[c]);
            ok = sqlite3_step(st) == SQLITE_DONE;
            sqlite3_reset(st);
        }
    }
    done(s, st);
    *min_kv_out = min_kv;
    *per_token_out = per_token;
    if (!ok)
        return store_sql_error(error, s, "insert memory");
    return insert_memory_plans(s, id, m, error);
}

/* The plan's run-wide figures (`memory_runs`). */
static bool insert_memory_run(Store *s, int64_t id, const ModelMemPlan *m, int64_t min_kv,
                              uint64_t per_token, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO memory_runs(run_id, hbm_bytes, requested_bytes,"
                       " utilization, min_kv_budget_bytes, kv_bytes_per_token,"
                       " max_model_len, weights_format, vllm_rank, loading_bytes, kv_tokens,"
                       " max_concurrency, kv_block_size, context_bytes, cudagraph_in_budget,"
                       " reserved_in_budget)"
                       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")))
        return store_sql_error(error, s, "prepare memory_runs");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, (int64_t)m->hbm_bytes);
    sqlite3_bind_int64(st, 3, (int64_t)m->requested_bytes);
    sqlite3_bind_double(st, 4, m->utilization);
    sqlite3_bind_int64(st, 5, m->world ? min_kv : 0);
    sqlite3_bind_int64(st, 6, (int64_t)per_token);
    sqlite3_bind_int64(st, 7, m->max_model_len);
    if (m->weights_format)
        sqlite3_bind_text(st, 8, m->weights_format, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 8);
    sqlite3_bind_int64(st, 9, m->vllm.rank);
    sqlite3_bind_int64(st, 10, (int64_t)m->vllm.loading_bytes);
    sqlite3_bind_int64(st, 11, (int64_t)m->vllm.kv_tokens);
    sqlite3_bind_double(st, 12, m->vllm.max_concurrency);
    sqlite3_bind_int64(st, 13, m->vllm.kv_block_size);
    sqlite3_bind_int64(st, 14, (int64_t)m->context_bytes);
    sqlite3_bind_int(st, 15, m->cudagraph_in_budget ? 1 : 0);
    sqlite3_bind_int(st, 16, m->reserved_in_budget ? 1 : 0);
    bool ok = sqlite3_step(st) == SQLITE_DONE;
    done(s, st);
    return ok || store_sql_error(error, s, "insert memory_runs");
}

/* Each rank's start-up phases (`phases`), when the plan has them. */
static bool insert_phases(Store *s, int64_t id, const ModelMemPlan *m, GError **error)
{
    if (!m->phases)
        return true;
    sqlite3_stmt *st = NULL;
    bool ok = true;
    if (!(st = stmt(s, "INSERT INTO phases(run_id, rank, idx, phase, status, start_us, dur_us,"
                       " allocated_bytes, peak_bytes, free_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)")))
        return store_sql_error(error, s, "prepare phases");
    for (uint32_t r = 0; r < m->world && ok; r++)
        for (int k = 0; k < MODEL_PHASE_COUNT && ok; k++) {
            const ModelPhaseRow *ph = &m->phases[r][k];
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int64(st, 2, r);
            sqlite3_bind_int(st, 3, k);
            sqlite3_bind_text(st, 4, model_phase_name((ModelPhase)k), -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 5, model_phase_status_name((ModelPhaseStatus)ph->status), -1,
                              SQLITE_STATIC);
            if (ph->status == MODEL_PHASE_SKIPPED) {
                for (int c = 6; c <= 10; c++)
                    sqlite3_bind_null(st, c);
            } else {
                sqlite3_bind_double(st, 6, (double)ph->start_ns / 1e3);
                if (ph->dur_ns >= 0)
                    sqlite3_bind_double(st, 7, (double)ph->dur_ns / 1e3);
                else
                    sqlite3_bind_null(st, 7);
                sqlite3_bind_int64(st, 8, (int64_t)ph->allocated_bytes);
                sqlite3_bind_int64(st, 9, (int64_t)ph->peak_bytes);
                sqlite3_bind_int64(st, 10, ph->free_bytes);
            }
            ok = sqlite3_step(st) == SQLITE_DONE;
            sqlite3_reset(st);
        }
    done(s, st);
    return ok || store_sql_error(error, s, "insert phases");
}

static bool insert_memory(Store *s, int64_t id, const ModelMemPlan *m, GError **error)
{
    int64_t min_kv = INT64_MAX;
    uint64_t per_token = 0;
    return insert_memory_ranks(s, id, m, &min_kv, &per_token, error) &&
           insert_memory_run(s, id, m, min_kv, per_token, error) && insert_phases(s, id, m, error);
}

static char *ranks_json(GArray *members)
{
    GString *s = g_string_new("[");
    for (guint i = 0; i < members->len; i++)
        g_string_append_printf(s, "%s%d", i ? "," : "", g_array_index(members, int32_t, i));
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static bool insert_outcome(Store *s, int64_t id, const SchedOutcome *o, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO groups(run_id, id, name, ranks, size) VALUES (?,?,?,?,?)")))
        return store_sql_error(error, s, "prepare groups");
    for (guint i = 0; i < o->groups->len; i++) {
        GArray *m = g_ptr_array_index(o->group_members, i);
        g_autofree char *ranks = ranks_json(m);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(o->groups, i), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, ranks, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, m->len);
        if (sqlite3_step(st) != SQLITE_DONE) {
            done(s, st);
            return store_sql_error(error, s, "insert groups");
        }
        sqlite3_reset(st);
    }
    done(s, st);

    if (!(st = stmt(s, "INSERT INTO ranks(run_id, rank, state, end_us, compute_us, comm_us,"
                       " wait_us, ops) VALUES (?,?,?,?,?,?,?,?)")))
        return store_sql_error(error, s, "prepare ranks");
    for (uint32_t r = 0; r < o->n_ranks; r++) {
        const SchedRankStats *x = &o->ranks[r];
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, r);
        sqlite3_bind_text(st, 3, sched_rank_state_name(x->state), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, (double)x->end_ns / 1e3);
        sqlite3_bind_double(st, 5, (double)x->compute_ns / 1e3);
        sqlite3_bind_double(st, 6, (double)x->comm_ns / 1e3);
        sqlite3_bind_double(st, 7, (double)x->wait_ns / 1e3);
        sqlite3_bind_int64(st, 8, (int64_t)x->ops);
        if (sqlite3_step(st) != SQLITE_DONE) {
            done(s, st);
            return store_sql_error(error, s, "insert ranks");
        }
        sqlite3_reset(st);
    }
    done(s, st);

    if (!(st = stmt(s, "INSERT INTO diagnostics(run_id, kind, severity, rank, group_name, seq,"
                       " layer, op_name, message, detail, time_us)"
                       " VALUES (?,?,?,?,?,?,?,?,?,?,?)")))
        return store_sql_error(error, s, "prepare diagnostics");
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, d->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, sched_severity_name(d->severity), -1, SQLITE_STATIC);
        bind_opt_int(st, 4, d->rank >= 0, d->rank);
        if (d->group >= 0)
            sqlite3_bind_text(st, 5, g_ptr_array_index(o->groups, (guint)d->group), -1,
                              SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
        bind_opt_int(st, 6, d->seq > 0, (int64_t)d->seq);
        bind_opt_int(st, 7, d->layer >= 0, d->layer);
        if (d->op_name)
            sqlite3_bind_text(st, 8, d->op_name, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 8);
        sqlite3_bind_text(st, 9, d->message, -1, SQLITE_STATIC);
        if (d->detail)
            sqlite3_bind_text(st, 10, d->detail, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 10);
        sqlite3_bind_double(st, 11, (double)d->time_ns / 1e3);
        if (sqlite3_step(st) != SQLITE_DONE) {
            done(s, st);
            return store_sql_error(error, s, "insert diagnostics");
        }
        sqlite3_reset(st);
    }
    done(s, st);
    return true;
}

/* The settings of the run that were given but not simulated, in order. */
static bool insert_not_simulated(Store *s, int64_t id, const GPtrArray *notes, GError **error)
{
    if (!notes || notes->len == 0)
        return true;
    sqlite3_stmt *st = NULL;
    if (!(st = stmt(s, "INSERT INTO not_simulated(run_id, idx, note) VALUES (?,?,?)")))
        return store_sql_error(error, s, "prepare not_simulated");
    bool ok = true;
    for (guint i = 0; ok && i < notes->len; i++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(notes, i), -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    done(s, st);
    return ok || store_sql_error(error, s, "insert not_simulated");
}

static bool insert_serve(Store *s, int64_t id, const ModelServe *sv, GError **error)
{
    const char *what = store_serve_insert(store_stmts(s), id, sv);
    return !what || store_sql_error(error, s, what);
}

/* The run's op rows: as shared time lines when `lines` (which has hashed every record of
 * `src`), else one row per record in op_rows. */
static bool insert_ops(Store *s, int64_t id, const StoreRecordSource *src, StoreTimelines *lines,
                       GError **error)
{
    if (lines)
        return store_timelines_insert(lines, s->db, s->path, id, src, error);
    return store_ops_insert_per_rank(s->db, s->path, id, s->keyed_ops, src, error);
}

bool store_run_txn_begin(Store *s, bool *nested, GError **error)
{
    *nested = !sqlite3_get_autocommit(s->db);
    return store_exec(s, *nested ? "SAVEPOINT store_run" : "BEGIN IMMEDIATE", error);
}

bool store_run_txn_commit(Store *s, bool nested, GError **error)
{
    return store_exec(s, nested ? "RELEASE store_run" : "COMMIT", error);
}

void store_run_txn_rollback(Store *s, bool nested)
{
    store_exec(s, nested ? "ROLLBACK TO store_run; RELEASE store_run" : "ROLLBACK", NULL);
}

/* Everything of one run in one short transaction. Returns the run id or -1 (rolled back). */
int64_t store_commit_run(Store *s, const StoreRunInfo *info, const char *created_at,
                         GPtrArray *names, const StoreRecordSource *src, StoreTimelines *lines,
                         const SchedOutcome *o, const ModelMemPlan *memory, const char *status,
                         int exit_code, double wall_ms, GError **error)
{
    g_return_val_if_fail(!s->readonly, -1);
    bool nested; /* inside a sweep's batch (store-sweep.h): a savepoint */
    if (!store_run_txn_begin(s, &nested, error))
        return -1;
    int64_t id = insert_run_row(s, info, created_at, status, exit_code, o, wall_ms, error);
    if (id < 0 || !insert_not_simulated(s, id, info->not_simulated, error) ||
        !insert_names(s, id, names, error) || !insert_ops(s, id, src, lines, error) ||
        !insert_outcome(s, id, o, error) || (memory && !insert_memory(s, id, memory, error)) ||
        (info->serve && !insert_serve(s, id, info->serve, error)) ||
        !store_run_txn_commit(s, nested, error)) {
        store_run_txn_rollback(s, nested);
        return -1;
    }
    return id;
}

int64_t store_run_insert(Store *s, const StoreRunInfo *info, const SchedProgram *p,
                         const SchedRecord *recs, size_t n_recs, const SchedOutcome *o,
                         const ModelMemPlan *memory, const char *status, int exit_code,
                         double wall_ms, GError **error)
{
    g_autofree char *now = store_now_iso8601();
    g_autoptr(GPtrArray) names = store_copy_names(p);
    StoreRecordSource src = {recs, n_recs, -1, 0};
    StoreTimelines *lines = s->per_rank ? NULL : store_timelines_new(p);
    g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    if (lines) { /* the time lines' records: those no rank made before */
        store_timelines_add(lines, recs, n_recs, nodes);
        src = (StoreRecordSource){(const SchedRecord *)(void *)nodes->data, nodes->len, -1, 0};
    }
    int64_t id = store_commit_run(s, info, now, names, &src, lines, o, memory, status, exit_code,
                                  wall_ms, error);
    store_timelines_free(lines);
    return id;
}

int64_t store_insert_invalid(Store *s, const StoreRunInfo *info, const char *message,
                             GError **error)
{
    g_return_val_if_fail(!s->readonly, -1);
    bool nested;
    if (!store_run_txn_begin(s, &nested, error))
        return -1;
    g_autofree char *now = store_now_iso8601();
    int64_t id = insert_run_row(s, info, now, "invalid", 2, NULL, 0, error);
    sqlite3_stmt *st = NULL;
    bool ok = id >= 0 && (st = stmt(s, "INSERT INTO diagnostics(run_id, kind, severity, message)"
                                       " VALUES (?, 'config', 'error', ?)"));
    if (ok) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, message, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        if (!ok)
            store_sql_error(error, s, "insert diagnostic");
    } else if (id >= 0) {
        store_sql_error(error, s, "prepare diagnostic");
    }
    done(s, st);
    if (!ok || !store_run_txn_commit(s, nested, error)) {
        store_run_txn_rollback(s, nested);
        return -1;
    }
    return id;
}

/* ---- a streamed run ----
 *
 * The rows of an import arrive while its input is read and merged, which can take minutes:
 * they are staged in a private, already-unlinked file (raw SchedRecords, like store-stage.c)
 * and no database lock is taken until store_stream_commit writes the whole run in ONE short
 * transaction (store_commit_run). A concurrent run commits meanwhile without waiting. */

struct StoreStream {
    Store *s;
    char *created_at;
    int fd;            /* the staging file; -1 until the first rows */
    uint64_t n_staged; /* records in it */
};

StoreStream *store_stream_begin(Store *s, GError **error)
{
    g_return_val_if_fail(!s->readonly, NULL);
    (void)error;
    StoreStream *st = g_new0(StoreStream, 1);
    st->s = s;
    st->fd = -1;
    st->created_at = store_now_iso8601();
    return st;
}

bool store_stream_ops(StoreStream *st, const SchedRecord *recs, size_t n, GError **error)
{
    if (!n)
        return true;
    if (st->fd < 0) {
        g_autoptr(GError) err = NULL;
        g_autofree char *name = NULL;
        st->fd = g_file_open_tmp("ranksim-import-XXXXXX.stage", &name, &err);
        if (st->fd < 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                        "%s: cannot create the import's staging file in %s: %s", st->s->path,
                        g_get_tmp_dir(), err->message);
            return false;
        }
        g_unlink(name); /* private: gone with the process, whatever happens */
    }
    const char *p = (const char *)recs;
    size_t left = n * sizeof(SchedRecord);
    while (left) {
        ssize_t k = write(st->fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                        "%s: writing the import's staging file in %s: %s%s", st->s->path,
                        g_get_tmp_dir(), g_strerror(errno),
                        errno == ENOSPC ? " — the disk is full: free some space (or set "
                                          "TMPDIR to a folder with room)"
                                        : "");
            return false;
        }
        p += k;
        left -= (size_t)k;
    }
    st->n_staged += n;
    return true;
}

void store_stream_abort(StoreStream *st)
{
    if (!st)
        return;
    if (st->fd >= 0)
        close(st->fd);
    g_free(st->created_at);
    g_free(st);
}

int64_t store_stream_commit(StoreStream *st, const StoreRunInfo *info, const SchedProgram *p,
                            const SchedOutcome *o, const char *status, int exit_code,
                            double wall_ms, GError **error)
{
    Store *s = st->s;
    g_autoptr(GPtrArray) names = store_copy_names(p);
    StoreRecordSource src = {NULL, 0, st->fd, st->n_staged};
    /* imported ranks each run their own calls: rows per rank, no shared time lines */
    int64_t id = store_commit_run(s, info, st->created_at, names, &src, NULL, o, NULL, status,
                                  exit_code, wall_ms, error);
    store_stream_abort(st);
    return id;
}
