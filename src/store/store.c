/* src/store/store.c — SQLite results database; see store.h.
 *
 * Design note (doc/reliability.md has the promises): a run never holds the database's write
 * lock while it simulates. Its op records stream from the engine to a writer thread that
 * appends them, raw, to a private staging file (created in g_get_tmp_dir() and unlinked at
 * once, so a killed run leaves nothing behind). When the outcome is known, store_run_finish
 * takes the write lock (BEGIN IMMEDIATE) and writes everything of the run — run row, names, op
 * rows read back from the staging file, groups, ranks, diagnostics, memory — in ONE short
 * transaction. A second writer waits only for such a commit; readers (WAL) never wait.
 *
 * Costs: staging is a sequential write of 64 B per record (page cache); the commit inserts
 * about a million op rows per second; memory stays bounded (MAX_CHUNKS chunks) whatever the
 * run length.
 */
#include "store-private.h"

#include "../util/inputfile.h"
#include "revision.h"
#include "store-ops.h"
#include "store-serve.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

struct Store {
    sqlite3 *db;
    char *path;
    bool readonly;
    bool keyed_ops; /* op_rows has the (run_id, n) key; false in files from before */
    bool per_rank;  /* RANKSIM_OPS_PER_RANK: simulated runs' rows in op_rows, one per rank */
};

/* Records per chunk and chunks in flight: 4 x 16384 x 64 B = 4 MiB at most, whatever the run
 * length. */
#define CHUNK_RECORDS 16384
#define MAX_CHUNKS 4

/* How long a writer waits for another process's commit (never for a simulation). */
#define BUSY_TIMEOUT_MS 300000

typedef struct Chunk {
    struct Chunk *next;
    uint32_t n;
    SchedRecord recs[CHUNK_RECORDS];
} Chunk;

struct StoreRun {
    Store *store;
    /* what the run row needs, copied at begin: info's strings point into `strings` */
    StoreRunInfo info;
    GStringChunk *strings;
    char *created_at;
    GPtrArray *not_simulated; /* char*, copied (may be NULL) */
    GPtrArray *names;         /* char*, the program's name table, copied */
    /* staging */
    int fd;            /* unlinked temp file of raw SchedRecords; -1 until the first chunk */
    uint64_t n_staged; /* records written to fd */
    uv_thread_t thread;
    bool thread_started;
    uv_mutex_t mu;
    uv_cond_t cv_work;
    uv_cond_t cv_free;
    Chunk *queue_head, *queue_tail;
    Chunk *free_list;
    uint32_t n_chunks;
    bool closing;
    Chunk *cur;
    char *writer_error;         /* first error seen by the writer, under mu */
    const ModelMemPlan *memory; /* borrowed, may be NULL */
    StoreTimelines *lines;      /* hashed by the writer; NULL: rows per rank */
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS runs("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " name TEXT NOT NULL, kind TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('ok','failed','invalid')),"
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
    " state TEXT NOT NULL CHECK (state IN ('done','blocked','crashed','stopped','unknown')),"
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
    "CREATE TABLE IF NOT EXISTS memory_items("
    " run_id INTEGER NOT NULL, rank INTEGER NOT NULL, component TEXT NOT NULL,"
    " name TEXT NOT NULL, shape TEXT, dtype TEXT, bytes INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS memory_items_run ON memory_items(run_id, rank);"
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
    /* every rank's rows, whichever layout stored them (src/store/store-ops.h) */
    "CREATE VIEW IF NOT EXISTS rank_ops AS"
    " SELECT run_id, rank, idx, layer, name_id, kind, tokens, group_id, seq, count, dtype,"
    "  start_ns, end_ns, bound FROM op_rows"
    " UNION ALL"
    " SELECT t.run_id, m.rank, t.idx, t.layer, t.name_id, t.kind, t.tokens, g.group_id, t.seq,"
    "  t.count, t.dtype, t.start_ns, t.end_ns, t.bound"
    " FROM rank_timelines m"
    " JOIN timeline_ops t ON t.run_id = m.run_id AND t.timeline = m.timeline"
    " LEFT JOIN rank_groups g ON g.run_id = m.run_id AND g.rank = m.rank AND g.slot = t.slot;"
    "CREATE VIEW IF NOT EXISTS ops AS"
    " SELECT o.run_id, o.rank, o.idx, o.layer, n.name AS name, k.name AS kind, o.tokens,"
    "  o.start_ns / 1000.0 AS start_us, o.end_ns / 1000.0 AS end_us,"
    "  CASE o.bound WHEN 1 THEN 'compute' WHEN 2 THEN 'memory' WHEN 3 THEN 'launch'"
    "  WHEN 4 THEN 'profile' END AS bound"
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

static bool set_sql_error(GError **error, const Store *s, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s: %s", s->path, what,
                sqlite3_errmsg(s->db));
    return false;
}

/* Runs `sql`, retried while SQLite answers "database is locked" without waiting: switching a
 * new file to WAL needs an exclusive lock and SQLite does not run the busy handler for it, and
 * a lock request that could deadlock is refused at once too, so several processes creating
 * one file could see SQLITE_BUSY immediately (found by the 4-runs-and-2-sweeps test). Every
 * write transaction here starts with BEGIN IMMEDIATE (no lock upgrade inside it), so retrying
 * a statement is safe. Waits up to BUSY_TIMEOUT_MS, like the busy handler; the error names
 * the statement. */
static bool exec(Store *s, const char *sql, GError **error)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)BUSY_TIMEOUT_MS * 1000;
    gulong pause_us = 2000;
    for (;;) {
        char *msg = NULL;
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            return true;
        if ((rc & 0xff) == SQLITE_BUSY && g_get_monotonic_time() < deadline) {
            sqlite3_free(msg);
            g_usleep(pause_us);
            pause_us = MIN(pause_us * 2, 100000ul);
            continue;
        }
        g_autofree char *what = g_strndup(sql, strcspn(sql, ";("));
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s (%.40s)", s->path,
                    msg ? msg : "error", g_strstrip(what));
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
        g_set_error(error, STORE_ERROR,
                    ext == SQLITE_NOTADB ? STORE_ERROR_FOREIGN : STORE_ERROR_FAILED,
                    ext == SQLITE_NOTADB
                        ? "%s: not a ranksim results database (not an SQLite file: %s); left "
                          "untouched — use another --db file"
                        : "%s: cannot read the database: %s",
                    s->path, sqlite3_errmsg(s->db));
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
    if (!exec(s, "BEGIN", error))
        return false;
    bool ok = classify_now(s, kind, error);
    /* on failure the transaction is left to sqlite3_close (the caller closes the store), so
     * the connection's error code still says why — the read-only fallback reads it */
    if (ok)
        exec(s, "COMMIT", NULL);
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
        return set_sql_error(error, s, "prepare");
    for (int k = 0; k < SCHED_OP_KIND_COUNT; k++) {
        sqlite3_bind_int(st, 1, k);
        sqlite3_bind_text(st, 2, sched_op_kind_name((SchedOpKind)k), -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return set_sql_error(error, s, "op_kinds");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO dtypes(id, name, bytes) VALUES (?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare");
    for (int d = 0; d < SCHED_DTYPE_COUNT; d++) {
        sqlite3_bind_int(st, 1, d);
        sqlite3_bind_text(st, 2, sched_dtype_name((SchedDtype)d), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, (int)sched_dtype_size((SchedDtype)d));
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return set_sql_error(error, s, "dtypes");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return true;
}

/* Creates or upgrades the schema under the write lock, re-checking first: another process may
 * have done it since classify(). */
static bool ensure_schema(Store *s, GError **error)
{
    if (!exec(s, "BEGIN IMMEDIATE", error))
        return false;
    DbKind kind;
    bool ok = classify(s, &kind, error);
    if (ok && kind != DB_CURRENT) {
        /* Version 1 lacked runs.hardware and the memory tables; the rest is idempotent. */
        if (kind == DB_OLD) {
            /* Version 1 lacked runs.hardware and the memory tables; version 2 the vLLM
             * start-up figures of memory_runs. Each ALTER fails harmlessly when not needed. */
            exec(s, "ALTER TABLE runs ADD COLUMN hardware TEXT", NULL);
            /* version 7: what the run ran, in words, and the sweep it belongs to */
            static const char *const v7[] = {"model TEXT",     "layout TEXT",      "vllm TEXT",
                                             "overrides TEXT", "sweep_id INTEGER", NULL};
            for (size_t i = 0; v7[i]; i++) {
                g_autofree char *sql = g_strdup_printf("ALTER TABLE runs ADD COLUMN %s", v7[i]);
                exec(s, sql, NULL);
            }
            /* version 6: op_rows.bound, shown by the ops view (a view is not altered: it is
             * made again below) */
            exec(s, "ALTER TABLE op_rows ADD COLUMN bound INTEGER", NULL);
            /* version 7: the views read rank_ops (both layouts); made again below */
            exec(s, "DROP VIEW IF EXISTS ops; DROP VIEW IF EXISTS collectives;", NULL);
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
                exec(s, sql, NULL);
            }
        }
        /* Version 3's ranks.state CHECK lacked 'unknown' (imported runs, a rank without a
         * dump): SQLite cannot alter a CHECK, so the table is rebuilt with its rows. */
        if (kind == DB_OLD) {
            int64_t old_check = 0;
            query_int(s,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ranks'"
                      " AND sql NOT LIKE '%''unknown''%'",
                      &old_check, NULL);
            if (old_check &&
                !exec(s,
                      "ALTER TABLE ranks RENAME TO ranks_v3;"
                      "CREATE TABLE ranks("
                      " run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
                      " state TEXT NOT NULL CHECK (state IN "
                      "('done','blocked','crashed','stopped','unknown')),"
                      " end_us REAL, compute_us REAL, comm_us REAL, wait_us REAL, ops INTEGER,"
                      " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"
                      "INSERT INTO ranks SELECT * FROM ranks_v3;"
                      "DROP TABLE ranks_v3;",
                      error)) {
                exec(s, "ROLLBACK", NULL);
                return false;
            }
        }
        ok = exec(s, schema_sql, error) && fill_lookup_tables(s, error);
        if (ok) {
            g_autofree char *sql =
                g_strdup_printf("PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
            ok = exec(s, sql, error);
        }
    }
    if (!ok) {
        exec(s, "ROLLBACK", NULL);
        return false;
    }
    return exec(s, "COMMIT", error);
}

static Store *store_new(const char *path)
{
    Store *s = g_new0(Store, 1);
    s->path = g_strdup(path);
    return s;
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
    Store *s = store_new(path);
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        set_sql_error(error, s, "cannot open database");
        store_close(s);
        return NULL;
    }
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
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
        (kind == DB_EMPTY && !exec(s, "PRAGMA page_size=16384", error)) ||
        !exec(s,
              "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;"
              "PRAGMA foreign_keys=OFF;",
              error) ||
        (kind != DB_CURRENT && !ensure_schema(s, error))) {
        store_close(s);
        return NULL;
    }
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
            sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
            rc = sqlite3_exec(s->db, "PRAGMA query_only=1", NULL, NULL, NULL);
        }
        g_autoptr(GError) local = NULL;
        DbKind kind;
        if (rc == SQLITE_OK && classify(s, &kind, &local)) {
            if (kind == DB_EMPTY) {
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
            set_sql_error(error, s, "cannot open database");
        store_close(s);
        return NULL;
    }
    g_assert_not_reached();
}

void store_close(Store *s)
{
    if (!s)
        return;
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

/* ---- runs ---- */

static char *now_iso8601(void)
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

/* The run row with its final figures (`o` NULL: an invalid run). Returns its id or -1. */
static int64_t insert_run_row_id(Store *s, int64_t id, const StoreRunInfo *info,
                                 const char *created_at, const char *status, int exit_code,
                                 const SchedOutcome *o, double wall_ms, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO runs(name, kind, status, exit_code, created_at, scenario,"
                           " path, timeline, version, hardware, ranks, sim_end_us, events,"
                           " wall_ms, rank_ops, id, model, layout, vllm, overrides, sweep_id)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        set_sql_error(error, s, "prepare runs");
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
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        set_sql_error(error, s, "insert run");
        return -1;
    }
    int64_t row = sqlite3_last_insert_rowid(s->db);
    if (info->sweep_id < 0) { /* the sweep's first run: its id names the sweep */
        g_autofree char *sql =
            g_strdup_printf("UPDATE runs SET sweep_id = id WHERE id = %" G_GINT64_FORMAT, row);
        if (!exec(s, sql, error))
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
    if (sqlite3_prepare_v2(s->db, "INSERT INTO names(run_id, id, name) VALUES (?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare names");
    for (guint i = 0; names && i < names->len; i++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(names, i), -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return set_sql_error(error, s, "insert names");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return true;
}

/* ---- the staging writer ---- */

/* Appends a chunk to the staging file (opened on first use). Returns NULL or an error text. */
static char *stage_chunk(StoreRun *r, const Chunk *c)
{
    if (r->fd < 0) {
        g_autoptr(GError) err = NULL;
        g_autofree char *name = NULL;
        r->fd = g_file_open_tmp("ranksim-run-XXXXXX.stage", &name, &err);
        if (r->fd < 0)
            return g_strdup_printf("cannot create the run's staging file in %s: %s",
                                   g_get_tmp_dir(), err->message);
        g_unlink(name); /* private: gone with the process, whatever happens */
    }
    const char *p = (const char *)c->recs;
    size_t left = (size_t)c->n * sizeof(SchedRecord);
    while (left) {
        ssize_t k = write(r->fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return g_strdup_printf("writing the run's staging file in %s: %s", g_get_tmp_dir(),
                                   g_strerror(errno));
        p += k;
        left -= (size_t)k;
    }
    r->n_staged += c->n;
    return NULL;
}

static void writer_main(void *arg)
{
    StoreRun *r = arg;
    for (;;) {
        uv_mutex_lock(&r->mu);
        while (!r->queue_head && !r->closing)
            uv_cond_wait(&r->cv_work, &r->mu);
        Chunk *c = r->queue_head;
        if (!c) {
            uv_mutex_unlock(&r->mu);
            return;
        }
        r->queue_head = c->next;
        if (!r->queue_head)
            r->queue_tail = NULL;
        bool failed = r->writer_error != NULL;
        uv_mutex_unlock(&r->mu);

        if (!failed && r->lines)
            store_timelines_add(r->lines, c->recs, c->n);
        char *why = failed ? NULL : stage_chunk(r, c);

        uv_mutex_lock(&r->mu);
        if (why && !r->writer_error)
            r->writer_error = why;
        else
            g_free(why);
        c->n = 0;
        c->next = r->free_list;
        r->free_list = c;
        uv_cond_signal(&r->cv_free);
        uv_mutex_unlock(&r->mu);
    }
}

static void run_free(StoreRun *r)
{
    if (r->fd >= 0)
        close(r->fd);
    g_string_chunk_free(r->strings);
    g_free(r->created_at);
    if (r->not_simulated)
        g_ptr_array_unref(r->not_simulated);
    if (r->names)
        g_ptr_array_unref(r->names);
    g_free(r->writer_error);
    store_timelines_free(r->lines);
    g_free(r);
}

static GPtrArray *copy_names(const SchedProgram *p)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; p && i < p->names.strings->len; i++)
        g_ptr_array_add(a, g_strdup(g_ptr_array_index(p->names.strings, i)));
    return a;
}

StoreRun *store_run_begin(Store *s, const StoreRunInfo *info, const SchedProgram *p, GError **error)
{
    g_return_val_if_fail(!s->readonly, NULL);
    StoreRun *r = g_new0(StoreRun, 1);
    r->store = s;
    r->fd = -1;
    r->strings = g_string_chunk_new(256);
    GStringChunk *k = r->strings;
    r->info = (StoreRunInfo){
        .name = info->name ? g_string_chunk_insert(k, info->name) : NULL,
        .kind = info->kind ? g_string_chunk_insert(k, info->kind) : NULL,
        .path = info->path ? g_string_chunk_insert(k, info->path) : NULL,
        .scenario = info->scenario ? g_string_chunk_insert(k, info->scenario) : NULL,
        .timeline = info->timeline ? g_string_chunk_insert(k, info->timeline) : NULL,
        .hardware = info->hardware ? g_string_chunk_insert(k, info->hardware) : NULL,
        .serve = info->serve,
        .model = info->model ? g_string_chunk_insert(k, info->model) : NULL,
        .layout = info->layout ? g_string_chunk_insert(k, info->layout) : NULL,
        .vllm = info->vllm ? g_string_chunk_insert(k, info->vllm) : NULL,
        .overrides = info->overrides ? g_string_chunk_insert(k, info->overrides) : NULL,
        .sweep_id = info->sweep_id,
    };
    if (info->not_simulated) {
        r->not_simulated = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < info->not_simulated->len; i++)
            g_ptr_array_add(r->not_simulated, g_strdup(g_ptr_array_index(info->not_simulated, i)));
        r->info.not_simulated = r->not_simulated;
    }
    r->created_at = now_iso8601();
    r->names = copy_names(p);
    r->lines = s->per_rank ? NULL : store_timelines_new(p);
    uv_mutex_init(&r->mu);
    uv_cond_init(&r->cv_work);
    uv_cond_init(&r->cv_free);
    r->cur = g_new(Chunk, 1);
    r->cur->n = 0;
    r->cur->next = NULL;
    r->n_chunks = 1;
    if (uv_thread_create(&r->thread, writer_main, r) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: cannot start the writer thread",
                    s->path);
        store_run_abort(r);
        return NULL;
    }
    r->thread_started = true;
    return r;
}

/* Hands the current chunk to the writer and takes an empty one (waiting while MAX_CHUNKS are
 * in flight). */
static void submit_chunk(StoreRun *r)
{
    Chunk *c = r->cur;
    uv_mutex_lock(&r->mu);
    c->next = NULL;
    if (r->queue_tail)
        r->queue_tail->next = c;
    else
        r->queue_head = c;
    r->queue_tail = c;
    uv_cond_signal(&r->cv_work);
    while (!r->free_list && r->n_chunks >= MAX_CHUNKS)
        uv_cond_wait(&r->cv_free, &r->mu);
    Chunk *next = r->free_list;
    if (next) {
        r->free_list = next->next;
    } else {
        next = g_new(Chunk, 1);
        r->n_chunks++;
    }
    uv_mutex_unlock(&r->mu);
    next->n = 0;
    next->next = NULL;
    r->cur = next;
}

void store_run_record(void *run, const SchedRecord *rec)
{
    StoreRun *r = run;
    r->cur->recs[r->cur->n++] = *rec;
    if (r->cur->n == CHUNK_RECORDS)
        submit_chunk(r);
}

/* Flushes the last chunk, stops the writer and frees the chunks. Returns the writer's error
 * (caller frees) or NULL. */
static char *stop_writer(StoreRun *r)
{
    if (r->thread_started) {
        if (r->cur && r->cur->n)
            submit_chunk(r);
        uv_mutex_lock(&r->mu);
        r->closing = true;
        uv_cond_signal(&r->cv_work);
        uv_mutex_unlock(&r->mu);
        uv_thread_join(&r->thread);
        r->thread_started = false;
    }
    g_free(r->cur);
    r->cur = NULL;
    while (r->free_list) {
        Chunk *c = r->free_list;
        r->free_list = c->next;
        g_free(c);
    }
    while (r->queue_head) { /* only if the thread never ran */
        Chunk *c = r->queue_head;
        r->queue_head = c->next;
        g_free(c);
    }
    uv_mutex_destroy(&r->mu);
    uv_cond_destroy(&r->cv_work);
    uv_cond_destroy(&r->cv_free);
    return g_steal_pointer(&r->writer_error);
}

void store_run_set_memory(StoreRun *r, const ModelMemPlan *m)
{
    r->memory = m;
}

/* Per rank, each component's bytes (`memory`) and the itemised tensors (`memory_items`); the
 * smallest rank's KV budget and its KV bytes per token into *min_kv, *per_token. */
static bool insert_memory_ranks(Store *s, int64_t id, const ModelMemPlan *m, int64_t *min_kv_out,
                                uint64_t *per_token_out, GError **error)
{
    sqlite3_stmt *st = NULL, *it = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO memory(run_id, rank, component, bytes) VALUES (?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "INSERT INTO memory_items(run_id, rank, component, name, shape, dtype,"
                           " bytes) VALUES (?,?,?,?,?,?,?)",
                           -1, &it, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return set_sql_error(error, s, "prepare memory");
    }
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
        for (guint i = 0; mr->items && i < mr->items->len && ok; i++) {
            const ModelMemItem *x = g_ptr_array_index(mr->items, i);
            sqlite3_bind_int64(it, 1, id);
            sqlite3_bind_int64(it, 2, r);
            sqlite3_bind_text(it, 3, model_mem_component_name(x->component), -1, SQLITE_STATIC);
            sqlite3_bind_text(it, 4, x->name, -1, SQLITE_STATIC);
            sqlite3_bind_text(it, 5, x->shape, -1, SQLITE_STATIC);
            sqlite3_bind_text(it, 6, x->dtype, -1, SQLITE_STATIC);
            sqlite3_bind_int64(it, 7, (int64_t)x->bytes);
            ok = sqlite3_step(it) == SQLITE_DONE;
            sqlite3_reset(it);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(it);
    *min_kv_out = min_kv;
    *per_token_out = per_token;
    return ok || set_sql_error(error, s, "insert memory");
}

/* The plan's run-wide figures (`memory_runs`). */
static bool insert_memory_run(Store *s, int64_t id, const ModelMemPlan *m, int64_t min_kv,
                              uint64_t per_token, GError **error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO memory_runs(run_id, hbm_bytes, requested_bytes,"
                           " utilization, min_kv_budget_bytes, kv_bytes_per_token,"
                           " max_model_len, weights_format, vllm_rank, loading_bytes, kv_tokens,"
                           " max_concurrency, kv_block_size, context_bytes, cudagraph_in_budget,"
                           " reserved_in_budget)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare memory_runs");
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
    sqlite3_finalize(st);
    return ok || set_sql_error(error, s, "insert memory_runs");
}

/* Each rank's start-up phases (`phases`), when the plan has them. */
static bool insert_phases(Store *s, int64_t id, const ModelMemPlan *m, GError **error)
{
    if (!m->phases)
        return true;
    sqlite3_stmt *st = NULL;
    bool ok = true;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO phases(run_id, rank, idx, phase, status, start_us, dur_us,"
                           " allocated_bytes, peak_bytes, free_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare phases");
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
    sqlite3_finalize(st);
    return ok || set_sql_error(error, s, "insert phases");
}

static bool insert_memory(Store *s, int64_t id, const ModelMemPlan *m, GError **error)
{
    int64_t min_kv = INT64_MAX;
    uint64_t per_token = 0;
    return insert_memory_ranks(s, id, m, &min_kv, &per_token, error) &&
           insert_memory_run(s, id, m, min_kv, per_token, error) &&
           insert_phases(s, id, m, error);
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
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO groups(run_id, id, name, ranks, size) VALUES (?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare groups");
    for (guint i = 0; i < o->groups->len; i++) {
        GArray *m = g_ptr_array_index(o->group_members, i);
        g_autofree char *ranks = ranks_json(m);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(o->groups, i), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, ranks, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, m->len);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return set_sql_error(error, s, "insert groups");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);

    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO ranks(run_id, rank, state, end_us, compute_us, comm_us,"
                           " wait_us, ops) VALUES (?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare ranks");
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
            sqlite3_finalize(st);
            return set_sql_error(error, s, "insert ranks");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);

    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO diagnostics(run_id, kind, severity, rank, group_name, seq,"
                           " layer, op_name, message, detail, time_us)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare diagnostics");
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
            sqlite3_finalize(st);
            return set_sql_error(error, s, "insert diagnostics");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return true;
}

void store_run_abort(StoreRun *r)
{
    if (!r)
        return;
    g_free(stop_writer(r));
    run_free(r);
}

/* The settings of the run that were given but not simulated, in order. */
static bool insert_not_simulated(Store *s, int64_t id, const GPtrArray *notes, GError **error)
{
    if (!notes || notes->len == 0)
        return true;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO not_simulated(run_id, idx, note) VALUES (?,?,?)", -1,
                           &st, NULL) != SQLITE_OK)
        return set_sql_error(error, s, "prepare not_simulated");
    bool ok = true;
    for (guint i = 0; ok && i < notes->len; i++) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_text(st, 3, g_ptr_array_index(notes, i), -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return ok || set_sql_error(error, s, "insert not_simulated");
}

static bool insert_serve(Store *s, int64_t id, const ModelServe *sv, GError **error)
{
    const char *what = store_serve_insert(s->db, id, sv);
    return !what || set_sql_error(error, s, what);
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

/* Everything of one run in one short transaction. Returns the run id or -1 (rolled back). */
static int64_t commit_run(Store *s, const StoreRunInfo *info, const char *created_at,
                          GPtrArray *names, const StoreRecordSource *src, StoreTimelines *lines,
                          const SchedOutcome *o, const ModelMemPlan *memory, const char *status,
                          int exit_code, double wall_ms, GError **error)
{
    g_return_val_if_fail(!s->readonly, -1);
    if (!exec(s, "BEGIN IMMEDIATE", error))
        return -1;
    int64_t id = insert_run_row(s, info, created_at, status, exit_code, o, wall_ms, error);
    if (id < 0 || !insert_not_simulated(s, id, info->not_simulated, error) ||
        !insert_names(s, id, names, error) || !insert_ops(s, id, src, lines, error) ||
        !insert_outcome(s, id, o, error) || (memory && !insert_memory(s, id, memory, error)) ||
        (info->serve && !insert_serve(s, id, info->serve, error)) || !exec(s, "COMMIT", error)) {
        exec(s, "ROLLBACK", NULL);
        return -1;
    }
    return id;
}

int64_t store_run_finish(StoreRun *r, const SchedOutcome *o, const char *status, int exit_code,
                         double wall_ms, GError **error)
{
    Store *s = r->store;
    g_autofree char *werr = stop_writer(r);
    int64_t id = -1;
    if (werr) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", s->path, werr);
    } else {
        StoreRecordSource src = {NULL, 0, r->fd, r->n_staged};
        id = commit_run(s, &r->info, r->created_at, r->names, &src, r->lines, o, r->memory, status,
                        exit_code, wall_ms, error);
    }
    run_free(r);
    return id;
}

int64_t store_run_insert(Store *s, const StoreRunInfo *info, const SchedProgram *p,
                         const SchedRecord *recs, size_t n_recs, const SchedOutcome *o,
                         const ModelMemPlan *memory, const char *status, int exit_code,
                         double wall_ms, GError **error)
{
    g_autofree char *now = now_iso8601();
    g_autoptr(GPtrArray) names = copy_names(p);
    StoreRecordSource src = {recs, n_recs, -1, 0};
    StoreTimelines *lines = s->per_rank ? NULL : store_timelines_new(p);
    if (lines)
        store_timelines_add(lines, recs, n_recs);
    int64_t id =
        commit_run(s, info, now, names, &src, lines, o, memory, status, exit_code, wall_ms, error);
    store_timelines_free(lines);
    return id;
}

int64_t store_insert_invalid(Store *s, const StoreRunInfo *info, const char *message,
                             GError **error)
{
    g_return_val_if_fail(!s->readonly, -1);
    if (!exec(s, "BEGIN IMMEDIATE", error))
        return -1;
    g_autofree char *now = now_iso8601();
    int64_t id = insert_run_row(s, info, now, "invalid", 2, NULL, 0, error);
    sqlite3_stmt *st = NULL;
    bool ok =
        id >= 0 && sqlite3_prepare_v2(s->db,
                                      "INSERT INTO diagnostics(run_id, kind, severity, message)"
                                      " VALUES (?, 'config', 'error', ?)",
                                      -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, message, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        if (!ok)
            set_sql_error(error, s, "insert diagnostic");
    } else if (id >= 0) {
        set_sql_error(error, s, "prepare diagnostic");
    }
    sqlite3_finalize(st);
    if (!ok || !exec(s, "COMMIT", error)) {
        exec(s, "ROLLBACK", NULL);
        return -1;
    }
    return id;
}

/* ---- a streamed run ---- */

struct StoreStream {
    Store *s;
    int64_t id;
    char *created_at;
    StoreOpInserter *ins;
};

StoreStream *store_stream_begin(Store *s, GError **error)
{
    g_return_val_if_fail(!s->readonly, NULL);
    if (!exec(s, "BEGIN IMMEDIATE", error))
        return NULL;
    StoreStream *st = g_new0(StoreStream, 1);
    st->s = s;
    st->created_at = now_iso8601();
    /* the id now; the row itself is rewritten at commit with what the run found */
    StoreRunInfo none = {.name = "(importing)", .kind = "import"};
    st->id = insert_run_row(s, &none, st->created_at, "failed", 3, NULL, 0, error);
    st->ins =
        st->id < 0 ? NULL : store_op_inserter_new(s->db, s->path, st->id, s->keyed_ops, error);
    if (!st->ins) {
        store_stream_abort(st);
        return NULL;
    }
    return st;
}

bool store_stream_ops(StoreStream *st, const SchedRecord *recs, size_t n, GError **error)
{
    return store_op_inserter_add(st->ins, recs, n, error);
}

static void stream_free(StoreStream *st)
{
    store_op_inserter_free(st->ins);
    g_free(st->created_at);
    g_free(st);
}

void store_stream_abort(StoreStream *st)
{
    if (!st)
        return;
    exec(st->s, "ROLLBACK", NULL);
    stream_free(st);
}

int64_t store_stream_commit(StoreStream *st, const StoreRunInfo *info, const SchedProgram *p,
                            const SchedOutcome *o, const char *status, int exit_code,
                            double wall_ms, GError **error)
{
    Store *s = st->s;
    int64_t id = st->id;
    g_autoptr(GPtrArray) names = copy_names(p);
    g_autofree char *del = g_strdup_printf("DELETE FROM runs WHERE id = %" G_GINT64_FORMAT, id);
    bool ok = exec(s, del, error) &&
              insert_run_row_id(s, id, info, st->created_at, status, exit_code, o, wall_ms,
                                error) == id &&
              insert_not_simulated(s, id, info->not_simulated, error) &&
              insert_names(s, id, names, error) && insert_outcome(s, id, o, error) &&
              exec(s, "COMMIT", error);
    if (!ok) {
        store_stream_abort(st);
        return -1;
    }
    stream_free(st);
    return id;
}

int64_t store_run_count(Store *s)
{
    int64_t n = -1;
    if (!query_int(s, "SELECT count(*) FROM runs", &n, NULL))
        return -1;
    return n;
}
