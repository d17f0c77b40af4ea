/* src/store/store.c — the results database file: recognising it, creating and upgrading its
 * schema, opening it for writing or read-only; see store.h. Writing a run is store-run.c (its
 * rows in one transaction) and store-stage.c (the staging writer a simulation streams into).
 *
 * Design note (doc/reliability.md has the promises): a file that is not ranksim's, or from a
 * newer ranksim, is recognised by reading only (classify) and left byte-identical; the schema
 * is created or upgraded under the write lock, re-checked first.
 */
#include "store-private.h"

#include "../util/inputfile.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

/* How long a writer waits for another process's commit while that commit makes no progress
 * (never for a simulation; wait_step). */
#define BUSY_TIMEOUT_MS 300000

/* The shared tensor lists of memory plans (schema 11): made by schema_sql and by the upgrade of
 * a version-10 file, whose memory_items table they replace. */
#define MEMORY_PLAN_TABLES                                                                         \
    "CREATE TABLE IF NOT EXISTS memory_plans("                                                     \
    " run_id INTEGER NOT NULL, plan INTEGER NOT NULL, idx INTEGER NOT NULL,"                       \
    " component TEXT NOT NULL, name TEXT NOT NULL, shape TEXT, dtype TEXT,"                        \
    " bytes INTEGER NOT NULL, PRIMARY KEY (run_id, plan, idx)) WITHOUT ROWID;"                     \
    "CREATE TABLE IF NOT EXISTS rank_memory_plans("                                                \
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, plan INTEGER NOT NULL,"                      \
    " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"

/* The states a rank can end in. Written as comparisons, not `state IN (...)`: SQLite checks an
 * IN list of more than two values through a temporary table made for each row inserted (16 KiB
 * zeroed a time), a tenth of a 1,024-rank run's instructions (callgrind); the same constraint. */
#define RANKS_STATE_CHECK                                                                        \
    "state = 'done' OR state = 'blocked' OR state = 'crashed' OR state = 'stopped' OR"        \
    " state = 'unknown' OR state = 'not run'"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS runs("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " name TEXT NOT NULL, kind TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('ok','failed','invalid','inconclusive')),"
    " exit_code INTEGER NOT NULL, ranks INTEGER, sim_end_us REAL, events INTEGER,"
    " wall_ms REAL, created_at TEXT NOT NULL, scenario TEXT,"
    " path TEXT, rank_ops INTEGER, timeline TEXT, version TEXT, hardware TEXT,"
    " model TEXT, layout TEXT, vllm TEXT, overrides TEXT, sweep_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS names("
    " run_id INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY (run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS groups("
    " run_id INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, ranks TEXT NOT NULL,"
    " size INTEGER NOT NULL, PRIMARY KEY (run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ranks("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (" RANKS_STATE_CHECK "),"
    " end_us REAL, compute_us REAL, comm_us REAL, wait_us REAL, ops INTEGER,"
    " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS op_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS dtypes(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " bytes INTEGER NOT NULL);"
    /* Keyed by (run_id, n), n the row's place in its run: a run's rows are appended at the end
     * of one B-tree (run ids only grow), where a rowid table plus an index on run_id kept two
     * (files from before keep that layout; store.c writes either). */
    "CREATE TABLE IF NOT EXISTS op_rows("
    " run_id INTEGER NOT NULL, n INTEGER NOT NULL, rank INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " layer INTEGER, name_id INTEGER NOT NULL, kind INTEGER NOT NULL, tokens INTEGER,"
    " group_id INTEGER, seq INTEGER, count INTEGER, dtype INTEGER, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER, bound INTEGER, PRIMARY KEY (run_id, n)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS diagnostics("
    " id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, kind TEXT NOT NULL,"
    " severity TEXT NOT NULL CHECK (severity IN ('error','warning')),"
    " rank INTEGER, group_name TEXT, seq INTEGER, layer INTEGER, op_name TEXT,"
    " message TEXT NOT NULL, detail TEXT, time_us REAL);"
    "CREATE INDEX IF NOT EXISTS diagnostics_run ON diagnostics(run_id);"
    "CREATE TABLE IF NOT EXISTS memory("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, component TEXT NOT NULL,"
    " bytes INTEGER NOT NULL, PRIMARY KEY (run_id, rank, component)) WITHOUT ROWID;"
    /* Each distinct tensor list once per run (`plan`), and which list each rank has: ranks
     * with the same plan (every rank of a TP group, every DP replica) share its rows. Version
     * 10 kept a memory_items table of every rank's rows (upgrade_memory_items). */
    MEMORY_PLAN_TABLES "CREATE VIEW IF NOT EXISTS memory_items AS"
    " SELECT m.run_id, m.rank, p.component, p.name, p.shape, p.dtype, p.bytes, p.idx"
    " FROM rank_memory_plans m"
    " JOIN memory_plans p ON p.run_id = m.run_id AND p.plan = m.plan;"
    "CREATE TABLE IF NOT EXISTS not_simulated("
    " run_id INTEGER NOT NULL, idx INTEGER NOT NULL, note TEXT NOT NULL,"
    " PRIMARY KEY (run_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS memory_runs("
    " run_id INTEGER PRIMARY KEY, hbm_bytes INTEGER, requested_bytes INTEGER,"
    " utilization REAL, min_kv_budget_bytes INTEGER, kv_bytes_per_token INTEGER,"
    " max_model_len INTEGER, weights_format TEXT, vllm_rank INTEGER, loading_bytes INTEGER,"
    " kv_tokens INTEGER, max_concurrency REAL, kv_block_size INTEGER, context_bytes INTEGER,"
    " cudagraph_in_budget INTEGER, reserved_in_budget INTEGER);"
    "CREATE TABLE IF NOT EXISTS phases("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " phase TEXT NOT NULL, status TEXT NOT NULL, start_us REAL, dur_us REAL,"
    " allocated_bytes INTEGER, peak_bytes INTEGER, free_bytes INTEGER,"
    " PRIMARY KEY (run_id, rank, idx)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS steps("
    " run_id INTEGER NOT NULL, step INTEGER NOT NULL, dp INTEGER NOT NULL,"
    " start_us REAL NOT NULL, end_us REAL NOT NULL, prefill_tokens INTEGER NOT NULL,"
    " decode_tokens INTEGER NOT NULL, seqs INTEGER NOT NULL, padded_tokens INTEGER NOT NULL,"
    " kv_blocks_used INTEGER NOT NULL, dummy INTEGER NOT NULL,"
    " PRIMARY KEY (run_id, step, dp)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS requests("
    " run_id INTEGER NOT NULL, id INTEGER NOT NULL, dp INTEGER NOT NULL,"
    " arrival_us REAL NOT NULL, prompt INTEGER NOT NULL, output INTEGER NOT NULL,"
    " generated INTEGER NOT NULL, first_token_us REAL, finish_us REAL,"
    " preemptions INTEGER NOT NULL, prefill_chunks INTEGER NOT NULL,"
    " cached_tokens INTEGER NOT NULL, PRIMARY KEY (run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS serve_runs("
    " run_id INTEGER PRIMARY KEY, requests INTEGER NOT NULL, steps INTEGER NOT NULL,"
    " kv_blocks INTEGER NOT NULL, block_tokens INTEGER NOT NULL,"
    " simulated_steps INTEGER NOT NULL, reused_steps INTEGER NOT NULL, stopped TEXT);"
    "CREATE TABLE IF NOT EXISTS timeline_ops("
    " run_id INTEGER NOT NULL, timeline INTEGER NOT NULL, idx INTEGER NOT NULL, layer INTEGER,"
    " name_id INTEGER NOT NULL, kind INTEGER NOT NULL, tokens INTEGER, slot INTEGER,"
    " seq INTEGER, count INTEGER, dtype INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER,"
    " bound INTEGER, PRIMARY KEY (run_id, timeline, idx)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rank_timelines("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, timeline INTEGER NOT NULL,"
    " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rank_groups("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, slot INTEGER NOT NULL,"
    " group_id INTEGER NOT NULL, PRIMARY KEY (run_id, rank, slot)) WITHOUT ROWID;"
    /* time lines cut into segments that repeat (src/store/store-segments.h) */
    "CREATE TABLE IF NOT EXISTS timeline_segments("
    " run_id INTEGER NOT NULL, segment INTEGER NOT NULL, idx INTEGER NOT NULL, layer INTEGER,"
    " name_id INTEGER NOT NULL, kind INTEGER NOT NULL, tokens INTEGER, slot INTEGER,"
    " seq INTEGER, count INTEGER, dtype INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER,"
    " bound INTEGER, PRIMARY KEY (run_id, segment, idx)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS timeline_parts("
    " run_id INTEGER NOT NULL, timeline INTEGER NOT NULL, part INTEGER NOT NULL,"
    " segment INTEGER NOT NULL, idx INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " PRIMARY KEY (run_id, timeline, part)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS timeline_part_seqs("
    " run_id INTEGER NOT NULL, timeline INTEGER NOT NULL, part INTEGER NOT NULL,"
    " slot INTEGER NOT NULL, seq_base INTEGER NOT NULL,"
    " PRIMARY KEY (run_id, timeline, part, slot)) WITHOUT ROWID;"
    /* every rank's rows, whichever layout stored them (src/store/store-ops.h) */
    "CREATE VIEW IF NOT EXISTS rank_ops AS"
    " SELECT run_id, rank, idx, layer, name_id, kind, tokens, group_id, seq, count, dtype,"
    "  start_ns, end_ns, bound FROM op_rows"
    " UNION ALL"
    " SELECT t.run_id, m.rank, t.idx, t.layer, t.name_id, t.kind, t.tokens, g.group_id, t.seq,"
    "  t.count, t.dtype, t.start_ns, t.end_ns, t.bound"
    " FROM rank_timelines m"
    " JOIN timeline_ops t ON t.run_id = m.run_id AND t.timeline = m.timeline"
    " LEFT JOIN rank_groups g ON g.run_id = m.run_id AND g.rank = m.rank AND g.slot = t.slot"
    " UNION ALL"
    " SELECT p.run_id, m.rank, p.idx + s.idx, s.layer, s.name_id, s.kind, s.tokens, g.group_id,"
    "  s.seq + q.seq_base, s.count, s.dtype, p.start_ns + s.start_ns, p.start_ns + s.end_ns,"
    "  s.bound"
    " FROM rank_timelines m"
    " JOIN timeline_parts p ON p.run_id = m.run_id AND p.timeline = m.timeline"
    " JOIN timeline_segments s ON s.run_id = p.run_id AND s.segment = p.segment"
    " LEFT JOIN timeline_part_seqs q ON q.run_id = p.run_id AND q.timeline = p.timeline"
    "  AND q.part = p.part AND q.slot = s.slot"
    " LEFT JOIN rank_groups g ON g.run_id = m.run_id AND g.rank = m.rank AND g.slot = s.slot;"
    "CREATE VIEW IF NOT EXISTS ops AS"
    " SELECT o.run_id, o.rank, o.idx, o.layer, n.name AS name, k.name AS kind, o.tokens,"
    "  o.start_ns / 1000.0 AS start_us, o.end_ns / 1000.0 AS end_us,"
    "  CASE o.bound WHEN 1 THEN 'compute' WHEN 2 THEN 'memory' WHEN 3 THEN 'launch'"
    "  WHEN 4 THEN 'profile' WHEN 5 THEN 'table' END AS bound"
    " FROM rank_ops o JOIN names n ON n.run_id = o.run_id AND n.id = o.name_id"
    " JOIN op_kinds k ON k.id = o.kind;"
    "CREATE VIEW IF NOT EXISTS collectives AS"
    " SELECT o.run_id, g.name AS group_name, o.seq, o.rank, k.name AS kind, o.count,"
    "  d.name AS dtype, n.name AS name, o.layer, o.start_ns / 1000.0 AS arrive_us,"
    "  o.end_ns / 1000.0 AS done_us"
    " FROM rank_ops o JOIN names n ON n.run_id = o.run_id AND n.id = o.name_id"
    " JOIN op_kinds k ON k.id = o.kind JOIN dtypes d ON d.id = o.dtype"
    " JOIN groups g ON g.run_id = o.run_id AND g.id = o.group_id"
    " WHERE o.group_id IS NOT NULL;";

bool store_sql_error(GError **error, const Store *s, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s: %s%s", s->path, what,
                sqlite3_errmsg(s->db), store_error_advice(sqlite3_extended_errcode(s->db)));
    return false;
}

/* ---- waiting for another writer ----
 *
 * A writer that finds the write lock held waits as long as the holder makes progress: a big
 * commit (an import of 10^8 rows takes minutes) spills its pages into the -wal file as it goes,
 * so the -wal's size or modification time changes; the wait gives up only after
 * BUSY_TIMEOUT_MS without any change (a holder that is stopped or hung). So a concurrent run
 * waits out a long commit instead of failing at a fixed timeout and losing its run. After
 * NOTICE_AFTER_US of waiting, the Store's notice callback (store_set_wait_notice) is told once. */

/* When a waiting writer says so (2 s: longer than any ordinary commit). */
#define NOTICE_AFTER_US 2000000

/* A fingerprint of the -wal file's growth (size and mtime); 0 when it does not exist. */
static gint64 wal_stamp(const Store *s)
{
    g_autofree char *wal = g_strconcat(s->path, "-wal", NULL);
    GStatBuf sb;
    if (g_stat(wal, &sb) != 0)
        return 0;
    return (gint64)sb.st_size * 1000003 + (gint64)sb.st_mtim.tv_sec * 1000000007 +
           (gint64)sb.st_mtim.tv_nsec;
}

/* Starts or continues a wait; false when it should give up (no progress for the timeout).
 * Sleeps a little (2 ms doubling to 100 ms) before returning true. */
static bool wait_step(Store *s, bool first)
{
    gint64 now = g_get_monotonic_time();
    gint64 stamp = wal_stamp(s);
    if (first) {
        s->wait = (StoreWait){.start_us = now,
                              .progress_us = now,
                              .stamp = stamp,
                              .pause_us = 2000,
                              .handler_calls = s->wait.handler_calls,
                              .give_up_us = s->wait.give_up_us,
                              .notice_us = s->wait.notice_us};
    } else if (stamp != s->wait.stamp) {
        s->wait.stamp = stamp;
        s->wait.progress_us = now;
    }
    if (now - s->wait.progress_us >= s->wait.give_up_us)
        return false;
    if (!s->wait.told && now - s->wait.start_us >= s->wait.notice_us && s->notice) {
        s->wait.told = true;
        g_autofree char *msg = g_strdup_printf(
            "%s: another ranksim is writing to this database (it holds the write lock); "
            "waiting for it to finish — nothing is lost meanwhile",
            s->path);
        s->notice(msg, s->notice_data);
    }
    g_usleep(s->wait.pause_us);
    s->wait.pause_us = MIN(s->wait.pause_us * 2, 100000ul);
    return true;
}

/* sqlite3_busy_handler: `count` is 0 on the first call of a wait. */
static int busy_handler(void *arg, int count)
{
    Store *s = arg;
    s->wait.handler_calls++;
    return wait_step(s, count == 0) ? 1 : 0;
}

void store_set_wait_notice(Store *s, StoreNoticeFn fn, void *data)
{
    s->notice = fn;
    s->notice_data = data;
}

/* Runs `sql`, retried while SQLite answers "database is locked" without waiting: switching a
 * new file to WAL needs an exclusive lock and SQLite does not run the busy handler for it, and
 * a lock request that could deadlock is refused at once too, so several processes creating
 * one file could see SQLITE_BUSY immediately (found by the 4-runs-and-2-sweeps test). Every
 * write transaction here starts with BEGIN IMMEDIATE (no lock upgrade inside it), so retrying
 * a statement is safe. Waits like the busy handler (as long as the holder makes progress,
 * wait_step); the error says another ranksim holds the lock, and names the statement. */
bool store_exec(Store *s, const char *sql, GError **error)
{
    for (bool first = true;; first = false) {
        char *msg = NULL;
        uint64_t calls = s->wait.handler_calls;
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            return true;
        /* retried here only when SQLite refused without asking the busy handler (which gave
         * up otherwise) */
        bool handler_gave_up = s->wait.handler_calls != calls;
        if ((rc & 0xff) == SQLITE_BUSY && !s->readonly && !handler_gave_up && wait_step(s, first)) {
            sqlite3_free(msg);
            continue;
        }
        g_autofree char *what = g_strndup(sql, strcspn(sql, ";("));
        int ext = sqlite3_extended_errcode(s->db);
        if ((rc & 0xff) == SQLITE_BUSY)
            g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                        "%s: another ranksim (or another program) has held this database's "
                        "write lock for %" G_GINT64_FORMAT " s without progress (%s); nothing "
                        "was written — try again when it has finished, or use another --db file",
                        s->path, s->wait.give_up_us / 1000000, g_strstrip(what));
        else
            g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s (%.40s)%s", s->path,
                        msg ? msg : "error", g_strstrip(what), store_error_advice(ext));
        sqlite3_free(msg);
        return false;
    }
}

/* One integer from `sql`; false with `error` when it cannot be read. */
static bool query_int(Store *s, const char *sql, int64_t *out, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        int ext = sqlite3_extended_errcode(s->db);
        g_set_error(
            error, STORE_ERROR, ext == SQLITE_NOTADB ? STORE_ERROR_FOREIGN : STORE_ERROR_FAILED,
            ext == SQLITE_NOTADB
                ? "%s: not a ranksim results database (not an SQLite file: %s); left "
                  "untouched — use another --db file"
                : "%s: cannot use the database: %s%s",
            s->path, sqlite3_errmsg(s->db), ext == SQLITE_NOTADB ? "" : store_error_advice(ext));
        sqlite3_finalize(st);
        return false;
    }
    sqlite3_finalize(st);
    return true;
}

typedef enum {
    DB_EMPTY,   /* no table, user_version 0: a new file */
    DB_OLD,     /* ranksim's, an older schema version: upgraded in place */
    DB_CURRENT, /* ranksim's, this version */
} DbKind;

/* The ranksim columns a file must have to be ours (any version). */
static const char ours_sql[] =
    "SELECT (SELECT count(*) FROM pragma_table_info('runs') WHERE name IN"
    "  ('id','name','kind','status','exit_code','created_at','scenario')) = 7"
    " AND (SELECT count(*) FROM pragma_table_info('op_rows') WHERE name IN"
    "  ('run_id','rank','idx','name_id','kind','start_ns','end_ns')) = 7"
    " AND (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
    "  ('names','groups','ranks','diagnostics')) = 4";

/* Recognises the file by reading only: nothing is written, so a foreign or newer file stays
 * byte-identical. Fails with STORE_ERROR_FOREIGN or STORE_ERROR_NEWER (user errors) or
 * STORE_ERROR_FAILED. */
static bool classify_now(Store *s, DbKind *kind, GError **error);

/* Reads the three facts in one read transaction, so a process creating the schema meanwhile
 * is seen either before or after its commit, never half-way. */
static bool classify(Store *s, DbKind *kind, GError **error)
{
    if (!sqlite3_get_autocommit(s->db))
        return classify_now(s, kind, error);
    if (!store_exec(s, "BEGIN", error))
        return false;
    bool ok = classify_now(s, kind, error);
    /* on failure the transaction is left to sqlite3_close (the caller closes the store), so
     * the connection's error code still says why — the read-only fallback reads it */
    if (ok)
        store_exec(s, "COMMIT", NULL);
    return ok;
}

static bool classify_now(Store *s, DbKind *kind, GError **error)
{
    int64_t tables = 0, version = 0, ours = 0;
    if (!query_int(s, "SELECT count(*) FROM sqlite_master", &tables, error) ||
        !query_int(s, "PRAGMA user_version", &version, error))
        return false;
    if (tables == 0 && version == 0) {
        *kind = DB_EMPTY;
        return true;
    }
    if (tables > 0 && !query_int(s, ours_sql, &ours, error))
        return false;
    if (ours && version > STORE_SCHEMA_VERSION) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_NEWER,
                    "%s: schema version %" G_GINT64_FORMAT " was written by a newer ranksim "
                    "(this one knows version %d); left untouched — use another --db file",
                    s->path, version, STORE_SCHEMA_VERSION);
        return false;
    }
    if (!ours || version < 1) {
        /* ranksim stamps user_version in the transaction that creates its tables */
        g_autoptr(GString) names = g_string_new(NULL);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db,
                               "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                               " LIMIT 6",
                               -1, &st, NULL) == SQLITE_OK)
            while (sqlite3_step(st) == SQLITE_ROW)
                g_string_append_printf(names, "%s%s", names->len ? ", " : "",
                                       (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        g_autofree char *shown = input_escape(names->len ? names->str : "none", 120);
        g_set_error(
            error, STORE_ERROR, STORE_ERROR_FOREIGN,
            "%s: not a ranksim results database (tables: %s%s; user_version %" G_GINT64_FORMAT
            "); left untouched — use another --db file",
            s->path, shown, tables > 6 ? ", ..." : "", version);
        return false;
    }
    *kind = version < STORE_SCHEMA_VERSION ? DB_OLD : DB_CURRENT;
    return true;
}

static bool fill_lookup_tables(Store *s, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO op_kinds(id, name) VALUES (?, ?)", -1,
                           &st, NULL) != SQLITE_OK)
        return store_sql_error(error, s, "prepare");
    for (int k = 0; k < SCHED_OP_KIND_COUNT; k++) {
        sqlite3_bind_int(st, 1, k);
        sqlite3_bind_text(st, 2, sched_op_kind_name((SchedOpKind)k), -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return store_sql_error(error, s, "op_kinds");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO dtypes(id, name, bytes) VALUES (?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sql_error(error, s, "prepare");
    for (int d = 0; d < SCHED_DTYPE_COUNT; d++) {
        sqlite3_bind_int(st, 1, d);
        sqlite3_bind_text(st, 2, sched_dtype_name((SchedDtype)d), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, (int)sched_dtype_size((SchedDtype)d));
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return store_sql_error(error, s, "dtypes");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return true;
}

/* The runs table of a file before version 9, made again with the CHECK that admits
 * 'inconclusive'; a no-op when it already does. */
static bool rebuild_runs(Store *s, GError **error)
{
    int64_t old_check = 0;
    query_int(s,
              "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
              " AND sql NOT LIKE '%''inconclusive''%'",
              &old_check, NULL);
    if (!old_check)
        return true;
    static const char cols[] =
        "id, name, kind, status, exit_code, ranks, sim_end_us, events, wall_ms, created_at,"
        " scenario, path, rank_ops, timeline, version, hardware, model, layout, vllm, overrides,"
        " sweep_id";
    g_autofree char *sql = g_strdup_printf(
        "ALTER TABLE runs RENAME TO runs_v8;"
        "CREATE TABLE runs("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " name TEXT NOT NULL, kind TEXT NOT NULL,"
        " status TEXT NOT NULL CHECK (status IN ('ok','failed','invalid','inconclusive')),"
        " exit_code INTEGER NOT NULL, ranks INTEGER, sim_end_us REAL, events INTEGER,"
        " wall_ms REAL, created_at TEXT NOT NULL, scenario TEXT,"
        " path TEXT, rank_ops INTEGER, timeline TEXT, version TEXT, hardware TEXT,"
        " model TEXT, layout TEXT, vllm TEXT, overrides TEXT, sweep_id INTEGER);"
        "INSERT INTO runs(%s) SELECT %s FROM runs_v8;"
        "DROP TABLE runs_v8;",
        cols, cols);
    return store_exec(s, sql, error);
}

/* A file before version 11 kept every rank's tensor list in a memory_items table: its rows
 * become one plan per rank (in their stored order), and memory_items a view over the plans
 * (made by schema_sql afterwards); a no-op when memory_items is not a table. */
static bool upgrade_memory_items(Store *s, GError **error)
{
    int64_t is_table = 0;
    query_int(s,
              "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'memory_items'",
              &is_table, NULL);
    if (!is_table)
        return true;
    return store_exec(s,
                      MEMORY_PLAN_TABLES
                      "INSERT INTO rank_memory_plans(run_id, rank, plan)"
                      " SELECT DISTINCT run_id, rank, rank FROM memory_items;"
                      "INSERT INTO memory_plans(run_id, plan, idx, component, name, shape, dtype,"
                      " bytes)"
                      " SELECT run_id, rank,"
                      "  row_number() OVER (PARTITION BY run_id, rank ORDER BY rowid) - 1,"
                      "  component, name, shape, dtype, bytes FROM memory_items;"
                      "DROP INDEX IF EXISTS memory_items_run;"
                      "DROP TABLE memory_items;",
                      error);
}

/* Creates or upgrades the schema under the write lock, re-checking first: another process may
 * have done it since classify(). */
static bool ensure_schema(Store *s, GError **error)
{
    if (!store_exec(s, "BEGIN IMMEDIATE", error))
        return false;
    DbKind kind;
    bool ok = classify(s, &kind, error);
    if (ok && kind != DB_CURRENT) {
        /* Version 1 lacked runs.hardware and the memory tables; the rest is idempotent. */
        if (kind == DB_OLD) {
            /* Version 1 lacked runs.hardware and the memory tables; version 2 the vLLM
             * start-up figures of memory_runs. Each ALTER fails harmlessly when not needed. */
            store_exec(s, "ALTER TABLE runs ADD COLUMN hardware TEXT", NULL);
            /* version 7: what the run ran, in words, and the sweep it belongs to */
            static const char *const v7[] = {"model TEXT",     "layout TEXT",      "vllm TEXT",
                                             "overrides TEXT", "sweep_id INTEGER", NULL};
            for (size_t i = 0; v7[i]; i++) {
                g_autofree char *sql = g_strdup_printf("ALTER TABLE runs ADD COLUMN %s", v7[i]);
                store_exec(s, sql, NULL);
            }
            /* version 6: op_rows.bound, shown by the ops view (a view is not altered: it is
             * made again below) */
            store_exec(s, "ALTER TABLE op_rows ADD COLUMN bound INTEGER", NULL);
            /* version 7: the views read rank_ops (both layouts); version 12: rank_ops reads
             * the segments too. Made again below. */
            store_exec(s,
                       "DROP VIEW IF EXISTS ops; DROP VIEW IF EXISTS collectives;"
                       " DROP VIEW IF EXISTS rank_ops;",
                       NULL);
            static const char *const v3[] = {"max_model_len INTEGER",
                                             "weights_format TEXT",
                                             "vllm_rank INTEGER",
                                             "loading_bytes INTEGER",
                                             "kv_tokens INTEGER",
                                             "max_concurrency REAL",
                                             "kv_block_size INTEGER",
                                             "context_bytes INTEGER",
                                             "cudagraph_in_budget INTEGER",
                                             "reserved_in_budget INTEGER",
                                             NULL};
            for (size_t i = 0; v3[i]; i++) {
                g_autofree char *sql =
                    g_strdup_printf("ALTER TABLE memory_runs ADD COLUMN %s", v3[i]);
                store_exec(s, sql, NULL);
            }
        }
        /* Version 3's ranks.state CHECK lacked 'unknown' (imported runs, a rank without a
         * dump), version 9's 'not run' (a deployment that fails at start-up): SQLite cannot
         * alter a CHECK, so the table is rebuilt with its rows. */
        if (kind == DB_OLD) {
            int64_t old_check = 0;
            query_int(s,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ranks'"
                      " AND sql NOT LIKE '%''not run''%'",
                      &old_check, NULL);
            if (old_check &&
                !store_exec(
                    s,
                    "ALTER TABLE ranks RENAME TO ranks_v3;"
                    "CREATE TABLE ranks("
                    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
                    " state TEXT NOT NULL CHECK (" RANKS_STATE_CHECK "),"
                    " end_us REAL, compute_us REAL, comm_us REAL, wait_us REAL, ops INTEGER,"
                    " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"
                    "INSERT INTO ranks SELECT * FROM ranks_v3;"
                    "DROP TABLE ranks_v3;",
                    error)) {
                store_exec(s, "ROLLBACK", NULL);
                return false;
            }
        }
        /* Version 8's runs.status CHECK lacked 'inconclusive' (an import whose evidence
         * neither shows a hang nor rules one out): the table is rebuilt with its rows, ids
         * and AUTOINCREMENT counter kept (no view, index or key refers to it). Version 10's
         * memory_items table becomes the shared plans. */
        if (kind == DB_OLD && (!rebuild_runs(s, error) || !upgrade_memory_items(s, error))) {
            store_exec(s, "ROLLBACK", NULL);
            return false;
        }
        ok = store_exec(s, schema_sql, error) && fill_lookup_tables(s, error);
        if (ok) {
            g_autofree char *sql =
                g_strdup_printf("PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
            ok = store_exec(s, sql, error);
        }
    }
    if (!ok) {
        store_exec(s, "ROLLBACK", NULL);
        return false;
    }
    return store_exec(s, "COMMIT", error);
}

static Store *store_new(const char *path)
{
    Store *s = g_new0(Store, 1);
    s->path = g_strdup(path);
    s->wait.give_up_us = (gint64)BUSY_TIMEOUT_MS * 1000;
    s->wait.notice_us = NOTICE_AFTER_US;
    return s;
}

static Store *open_readonly(const char *path, bool empty_ok, GError **error);

/* Classifies an existing file through a read-only connection that never checkpoints. False
 * only with STORE_ERROR_FOREIGN or _NEWER: any other failure (read-only media, a -shm that
 * cannot be made) is left to the read-write open, which says it its own way. */
static bool probe_readonly(const char *path, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(Store) ro = open_readonly(path, true, &local);
    if (ro || !local || local->code == STORE_ERROR_FAILED || local->code == STORE_ERROR_MISSING)
        return true;
    g_propagate_error(error, g_steal_pointer(&local));
    return false;
}

Store *store_open(const char *path, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);
    if (g_mkdir_with_parents(dir, 0755) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: cannot create folder %s: %s", path,
                    dir, g_strerror(errno));
        return NULL;
    }
    GStatBuf sb;
    if (g_stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FOREIGN,
                    "%s: not a regular file (a %s); the results database must be a file", path,
                    S_ISDIR(sb.st_mode) ? "directory" : "device, FIFO or socket");
        return NULL;
    }
    /* Recognise an existing file read-only first: a refusing read-write connection would
     * checkpoint a foreign WAL file on close (changing its bytes, deleting its -wal and -shm). */
    if (g_stat(path, &sb) == 0 && sb.st_size > 0 && !probe_readonly(path, error))
        return NULL;
    Store *s = store_new(path);
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        store_sql_error(error, s, "cannot open database");
        store_close(s);
        return NULL;
    }
    /* no checkpoint on close until the file is known to be ours (it may have changed since
     * the probe) */
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_busy_handler(s->db, busy_handler, s);
    if (sqlite3_db_readonly(s->db, "main") == 1) {
        /* SQLite falls back to read-only for a file it cannot write: say so now, not after a
         * simulation when the commit fails. */
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "%s: the database cannot be written (read-only file or media); use another "
                    "--db file",
                    path);
        store_close(s);
        return NULL;
    }
    DbKind kind;
    /* Recognise the file before writing anything to it (journal mode included). */
    /* A new file gets 16 KiB pages (set before WAL mode, the only time SQLite takes it): a
     * run's op rows are appended in bulk, and larger pages split less (2 M imported rows:
     * 0.95 s at 4 KiB, 0.76 s at 16 KiB in SQLite alone; doc/import.md, "How long it takes"). */
    if (!classify(s, &kind, error) ||
        (kind == DB_EMPTY && !store_exec(s, "PRAGMA page_size=16384", error)) ||
        !store_exec(s,
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;"
                    "PRAGMA foreign_keys=OFF;",
                    error) ||
        (kind != DB_CURRENT && !ensure_schema(s, error))) {
        store_close(s);
        return NULL;
    }
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
    int64_t keyed = 0;
    query_int(s, "SELECT count(*) FROM pragma_table_info('op_rows') WHERE name = 'n'", &keyed,
              NULL);
    s->keyed_ops = keyed > 0;
    const char *per_rank = g_getenv("RANKSIM_OPS_PER_RANK");
    s->per_rank = per_rank && *per_rank && strcmp(per_rank, "0") != 0;
    return s;
}

/* "file:" URI for `path` with `query`, escaping what a URI would misread. */
static char *file_uri(const char *path, const char *query)
{
    GString *u = g_string_new("file:");
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            g_string_append_printf(u, "%%%02X", (unsigned char)*p);
        else
            g_string_append_c(u, *p);
    }
    g_string_append_printf(u, "?%s", query);
    return g_string_free(u, FALSE);
}

Store *store_open_readonly(const char *path, GError **error)
{
    return open_readonly(path, false, error);
}

/* store_open_readonly; `empty_ok`: an empty file (no table) is opened too (the probe of
 * store_open, for which it is a new database). */
static Store *open_readonly(const char *path, bool empty_ok, GError **error)
{
    GStatBuf sb;
    if (g_stat(path, &sb) != 0) {
        int e = errno;
        g_set_error(error, STORE_ERROR, e == ENOENT ? STORE_ERROR_MISSING : STORE_ERROR_FAILED,
                    "%s: %s", path, g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FOREIGN,
                    "%s: not a regular file (a %s); the results database must be a file", path,
                    S_ISDIR(sb.st_mode) ? "directory" : "device, FIFO or socket");
        return NULL;
    }
    /* First the normal read-only open (sees concurrent writers' commits). On read-only media
     * a WAL database's -shm cannot be created: then open it immutable (nobody can be writing
     * it there). */
    for (int attempt = 0; attempt < 2; attempt++) {
        Store *s = store_new(path);
        s->readonly = true;
        g_autofree char *uri = file_uri(path, attempt == 0 ? "mode=ro" : "mode=ro&immutable=1");
        int rc = sqlite3_open_v2(
            uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc == SQLITE_OK) {
            /* a reader never checkpoints (a foreign WAL file keeps its -wal and -shm) */
            sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
            sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
            rc = sqlite3_exec(s->db, "PRAGMA query_only=1", NULL, NULL, NULL);
        }
        g_autoptr(GError) local = NULL;
        DbKind kind;
        if (rc == SQLITE_OK && classify(s, &kind, &local)) {
            if (kind == DB_EMPTY && !empty_ok) {
                g_set_error(error, STORE_ERROR, STORE_ERROR_FOREIGN,
                            "%s: an empty file, not a ranksim results database (run 'ranksim "
                            "run SCENARIO --db %s' first)",
                            path, path);
                store_close(s);
                return NULL;
            }
            return s;
        }
        int ext = s->db ? sqlite3_extended_errcode(s->db) : rc;
        bool media = (ext & 0xff) == SQLITE_CANTOPEN || (ext & 0xff) == SQLITE_READONLY ||
                     (ext & 0xff) == SQLITE_IOERR;
        if (attempt == 0 && media && !(local && local->code != STORE_ERROR_FAILED)) {
            store_close(s);
            continue;
        }
        if (local)
            g_propagate_error(error, g_steal_pointer(&local));
        else
            store_sql_error(error, s, "cannot open database");
        store_close(s);
        return NULL;
    }
    g_assert_not_reached();
}

void store_close(Store *s)
{
    if (!s)
        return;
    store_stmts_free(s->stmts); /* sqlite3_close refuses a connection with statements left */
    sqlite3_close(s->db);
    g_free(s->path);
    g_free(s);
}

const char *store_path(const Store *s)
{
    return s->path;
}

sqlite3 *store_db(Store *s)
{
    return s->db;
}

StoreStmts *store_stmts(Store *s)
{
    if (!s->stmts)
        s->stmts = store_stmts_new(s->db);
    return s->stmts;
}
int64_t store_run_count(Store *s)
{
    int64_t n = -1;
    if (!query_int(s, "SELECT count(*) FROM runs", &n, NULL))
        return -1;
    return n;
}
