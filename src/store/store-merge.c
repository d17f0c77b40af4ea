/* src/store/store-merge.c — copying the runs of read-only input databases into an output
 * store, run ids remapped and sweeps kept whole; see store-merge.h.
 *
 * How: the input is opened with store_open_readonly (its own read-only connection: never an
 * ATTACH, which would open it read-write and could checkpoint its WAL on close), its runs are
 * read in id order, and each run's rows are copied table by table through prepared
 * statements over the columns both files have, the run id replaced. The output's state the
 * decisions need (run fingerprints, sweeps) is kept in memory for the transaction and read
 * again from the output when an input is rolled back.
 */
#include "store-merge.h"

#include "store-private.h"

#include <string.h>

const char *const STORE_MERGE_RUN_TABLES[] = {
    "names",          "groups",         "ranks",          "op_rows",
    "timeline_ops",   "rank_timelines", "rank_groups",    "diagnostics",
    "memory",         "memory_plans",   "rank_memory_plans", "not_simulated",
    "memory_runs",    "phases",         "steps",          "requests",
    "serve_runs",     "timeline_segments", "timeline_parts", "timeline_part_seqs",
    NULL,
};
const char *const STORE_MERGE_LOOKUP_TABLES[] = {"op_kinds", "dtypes", NULL};

/* The runs columns that identify a run across files (a copy has them all equal). */
#define FINGERPRINT_COLS "created_at, wall_ms, name, kind, overrides, path, version, status"
#define FINGERPRINT_N 8
/* ... then what the sweep key and labels need. */
#define RUN_COLS "id, " FINGERPRINT_COLS ", sweep_id, scenario, timeline"

/* A sweep of the output: its id, what identifies it, the labels of its runs. */
typedef struct {
    int64_t id;
    char *key;
    GHashTable *labels; /* char* set */
} OutSweep;

/* A run of the output, by fingerprint. */
typedef struct {
    int64_t id;
    int64_t sweep; /* 0: none */
} OutRun;

struct StoreMerge {
    Store *out;
    sqlite3 *db;
    GHashTable *runs;    /* fingerprint -> OutRun* */
    GHashTable *sweeps;  /* int64 id -> OutSweep* (owned) */
    GHashTable *by_key;  /* sweep key -> GPtrArray of OutSweep* (borrowed) */
    GHashTable *lookups; /* "table\x1frow" of the output's lookup tables */
};

/* A run of an input, as read. */
typedef struct {
    int64_t id;
    char *fingerprint;
    int64_t sweep; /* the input's sweep id; 0: none */
    char *key;     /* its sweep key (NULL when not in a sweep) */
    char *label;   /* overrides ("" when NULL) */
} InRun;

static void in_run_clear(void *p)
{
    InRun *r = p;
    g_free(r->fingerprint);
    g_free(r->key);
    g_free(r->label);
}

static void out_sweep_free(void *p)
{
    OutSweep *s = p;
    g_free(s->key);
    g_hash_table_unref(s->labels);
    g_free(s);
}

/* ---- small SQL helpers ---- */

static bool db_error(GError **error, sqlite3 *db, const char *path, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s: %s%s", path, what,
                sqlite3_errmsg(db), store_error_advice(sqlite3_extended_errcode(db)));
    return false;
}

/* Column `c` of the current row as text, NULL written as "\x01" (so NULL and "" differ). */
static void append_col(GString *s, sqlite3_stmt *st, int c)
{
    if (sqlite3_column_type(st, c) == SQLITE_NULL)
        g_string_append_c(s, '\x01');
    else
        g_string_append(s, (const char *)sqlite3_column_text(st, c));
    g_string_append_c(s, '\x1f');
}

/* The user tables of `db`, sorted (views and SQLite's own left out). */
static GPtrArray *table_names(sqlite3 *db)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table'"
                           " AND name NOT LIKE 'sqlite_%' ORDER BY name",
                           -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW)
            g_ptr_array_add(names, g_strdup((const char *)sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    return names;
}

static bool known_table(const char *t)
{
    if (strcmp(t, "runs") == 0)
        return true;
    for (const char *const *k = STORE_MERGE_RUN_TABLES; *k; k++)
        if (strcmp(*k, t) == 0)
            return true;
    for (const char *const *k = STORE_MERGE_LOOKUP_TABLES; *k; k++)
        if (strcmp(*k, t) == 0)
            return true;
    return false;
}

/* Refuses a file with a table merge does not know: its rows would be lost. */
static bool check_tables(sqlite3 *db, const char *path, GError **error)
{
    g_autoptr(GPtrArray) names = table_names(db);
    for (guint i = 0; i < names->len; i++) {
        const char *t = g_ptr_array_index(names, i);
        if (!known_table(t)) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_FOREIGN,
                        "%s: table '%s' is not one this ranksim's merge knows; nothing of it "
                        "was merged",
                        path, t);
            return false;
        }
    }
    return true;
}

/* The columns of `table` in `db`, in order; a rowid alias (a lone INTEGER PRIMARY KEY of a
 * rowid table, other than run_id) is left out: the output gives it anew. */
static GPtrArray *table_columns(sqlite3 *db, const char *table, bool keep_alias)
{
    GPtrArray *cols = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *sql = g_strdup_printf(
        "SELECT name, upper(type), pk, (SELECT count(*) FROM pragma_table_info('%s') WHERE pk > 0),"
        " (SELECT sql LIKE '%%WITHOUT ROWID%%' FROM sqlite_master WHERE name = '%s')"
        " FROM pragma_table_info('%s') ORDER BY cid",
        table, table, table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            bool alias = sqlite3_column_int(st, 2) == 1 && sqlite3_column_int(st, 3) == 1 &&
                         !sqlite3_column_int(st, 4) &&
                         strcmp((const char *)sqlite3_column_text(st, 1), "INTEGER") == 0;
            if (!alias || keep_alias || strcmp(name, "run_id") == 0)
                g_ptr_array_add(cols, g_strdup(name));
        }
    sqlite3_finalize(st);
    return cols;
}

static bool has_col(const GPtrArray *cols, const char *name)
{
    for (guint i = 0; i < cols->len; i++)
        if (strcmp(g_ptr_array_index(cols, i), name) == 0)
            return true;
    return false;
}

/* ---- the output's state ---- */

/* The sweep key of a run: kind, path, version, time line, the varied keys of its label and
 * the scenario text before the sweep's variant comment (sweep.c's variant_text). */
static char *sweep_key(sqlite3_stmt *st, const char *label)
{
    GString *k = g_string_new(NULL);
    append_col(k, st, 4);  /* kind */
    append_col(k, st, 6);  /* path */
    append_col(k, st, 7);  /* version */
    append_col(k, st, 11); /* timeline */
    g_auto(GStrv) parts = g_strsplit(label, ", ", -1);
    for (char **p = parts; *p; p++) {
        const char *eq = strchr(*p, '=');
        g_string_append_len(k, *p, eq ? eq - *p : (gssize)strlen(*p));
        g_string_append_c(k, ',');
    }
    g_string_append_c(k, '\x1f');
    const char *text = (const char *)sqlite3_column_text(st, 10);
    if (text) {
        const char *cut = g_strrstr(text, "# ranksim sweep variant: ");
        g_string_append_len(k, text, cut ? cut - text : (gssize)strlen(text));
    }
    return g_string_free(k, FALSE);
}

/* Reads a row of RUN_COLS into `r`. */
static void read_run(sqlite3_stmt *st, InRun *r)
{
    GString *fp = g_string_new(NULL);
    for (int c = 1; c <= FINGERPRINT_N; c++)
        append_col(fp, st, c);
    const char *label = (const char *)sqlite3_column_text(st, 5);
    *r = (InRun){
        .id = sqlite3_column_int64(st, 0),
        .fingerprint = g_string_free(fp, FALSE),
        .sweep = sqlite3_column_int64(st, FINGERPRINT_N + 1),
        .label = g_strdup(label ? label : ""),
    };
    if (r->sweep > 0)
        r->key = sweep_key(st, r->label);
}

static OutSweep *add_out_sweep(StoreMerge *m, int64_t id, char *key)
{
    OutSweep *s = g_new0(OutSweep, 1);
    *s = (OutSweep){.id = id,
                    .key = key,
                    .labels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    g_hash_table_insert(m->sweeps, g_memdup2(&s->id, sizeof s->id), s);
    GPtrArray *same = g_hash_table_lookup(m->by_key, s->key);
    if (!same) {
        same = g_ptr_array_new();
        g_hash_table_insert(m->by_key, g_strdup(s->key), same);
    }
    g_ptr_array_add(same, s);
    return s;
}

/* Notes an output run (read or just copied) in the state. */
static void note_out_run(StoreMerge *m, InRun *r, int64_t id, int64_t sweep)
{
    OutRun *o = g_new(OutRun, 1);
    *o = (OutRun){.id = id, .sweep = sweep};
    g_hash_table_replace(m->runs, g_strdup(r->fingerprint), o);
    if (sweep <= 0)
        return;
    OutSweep *s = g_hash_table_lookup(m->sweeps, &sweep);
    if (!s)
        s = add_out_sweep(m, sweep, g_strdup(r->key));
    g_hash_table_add(s->labels, g_strdup(r->label));
}

static bool load_lookups(StoreMerge *m, GError **error)
{
    for (const char *const *t = STORE_MERGE_LOOKUP_TABLES; *t; t++) {
        g_autofree char *sql = g_strdup_printf("SELECT * FROM %s", *t);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
            return db_error(error, m->db, store_path(m->out), *t);
        while (sqlite3_step(st) == SQLITE_ROW) {
            GString *row = g_string_new(*t);
            g_string_append_c(row, '\x1f');
            for (int c = 0; c < sqlite3_column_count(st); c++)
                append_col(row, st, c);
            g_hash_table_add(m->lookups, g_string_free(row, FALSE));
        }
        sqlite3_finalize(st);
    }
    return true;
}

/* (Re)reads the output's runs, sweeps and lookup rows into `m`. */
static bool load_state(StoreMerge *m, GError **error)
{
    g_hash_table_remove_all(m->by_key);
    g_hash_table_remove_all(m->sweeps);
    g_hash_table_remove_all(m->runs);
    g_hash_table_remove_all(m->lookups);
    if (!check_tables(m->db, store_path(m->out), error) || !load_lookups(m, error))
        return false;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, "SELECT " RUN_COLS " FROM runs ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return db_error(error, m->db, store_path(m->out), "read runs");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        InRun r;
        read_run(st, &r);
        note_out_run(m, &r, r.id, r.sweep);
        in_run_clear(&r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_error(error, m->db, store_path(m->out), "read runs");
    return true;
}

StoreMerge *store_merge_begin(Store *out, GError **error)
{
    if (!store_exec(out, "BEGIN IMMEDIATE", error))
        return NULL;
    StoreMerge *m = g_new0(StoreMerge, 1);
    *m = (StoreMerge){
        .out = out,
        .db = store_db(out),
        .runs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
        .sweeps = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, out_sweep_free),
        .by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_ptr_array_unref),
        .lookups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
    };
    if (!load_state(m, error)) {
        store_merge_abort(m);
        return NULL;
    }
    return m;
}

static void merge_free(StoreMerge *m)
{
    g_hash_table_unref(m->by_key);
    g_hash_table_unref(m->sweeps);
    g_hash_table_unref(m->runs);
    g_hash_table_unref(m->lookups);
    g_free(m);
}

bool store_merge_commit(StoreMerge *m, GError **error)
{
    bool ok = store_exec(m->out, "COMMIT", error);
    if (!ok)
        store_exec(m->out, "ROLLBACK", NULL);
    merge_free(m);
    return ok;
}

void store_merge_abort(StoreMerge *m)
{
    if (!m)
        return;
    store_exec(m->out, "ROLLBACK", NULL);
    merge_free(m);
}

/* ---- one input ---- */

/* Opens `path` read-only and checks it is a database of this schema version whose tables
 * merge knows. */
static Store *open_checked(const char *path, GError **error)
{
    g_autoptr(Store) in = store_open_readonly(path, error);
    if (!in)
        return NULL;
    sqlite3 *db = store_db(in);
    sqlite3_stmt *st = NULL;
    int64_t version = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (version < STORE_SCHEMA_VERSION) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_OLDER,
                    "%s: schema version %" G_GINT64_FORMAT " is older than this ranksim's (%d) "
                    "and merge never changes an input: upgrade a copy first ('cp %s COPY.db && "
                    "ranksim merge COPY.db' upgrades COPY.db in place), then merge the copy",
                    path, version, STORE_SCHEMA_VERSION, path);
        return NULL;
    }
    if (!check_tables(db, path, error))
        return NULL;
    return g_steal_pointer(&in);
}

bool store_merge_check(const char *in_path, GError **error)
{
    g_autoptr(Store) in = open_checked(in_path, error);
    return in != NULL;
}

/* open_checked, and the same op kinds and dtypes as the output. */
static Store *open_input(StoreMerge *m, const char *path, GError **error)
{
    g_autoptr(Store) in = open_checked(path, error);
    if (!in)
        return NULL;
    sqlite3 *db = store_db(in);
    sqlite3_stmt *st = NULL;
    for (const char *const *t = STORE_MERGE_LOOKUP_TABLES; *t; t++) {
        g_autofree char *sql = g_strdup_printf("SELECT * FROM %s", *t);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            db_error(error, db, path, *t);
            return NULL;
        }
        bool same = true;
        while (same && sqlite3_step(st) == SQLITE_ROW) {
            g_autoptr(GString) row = g_string_new(*t);
            g_string_append_c(row, '\x1f');
            for (int c = 0; c < sqlite3_column_count(st); c++)
                append_col(row, st, c);
            same = g_hash_table_contains(m->lookups, row->str);
        }
        sqlite3_finalize(st);
        if (!same) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_FOREIGN,
                        "%s: its table %s differs from %s's (another build of ranksim wrote "
                        "it); nothing of it was merged",
                        path, *t, store_path(m->out));
            return NULL;
        }
    }
    return g_steal_pointer(&in);
}

/* The input's runs, in id order. */
static GArray *read_input_runs(Store *in, GError **error)
{
    GArray *runs = g_array_new(FALSE, FALSE, sizeof(InRun));
    g_array_set_clear_func(runs, in_run_clear);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(in), "SELECT " RUN_COLS " FROM runs ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK) {
        db_error(error, store_db(in), store_path(in), "read runs");
        g_array_unref(runs);
        return NULL;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        InRun r;
        read_run(st, &r);
        g_array_append_val(runs, r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        db_error(error, store_db(in), store_path(in), "read runs");
        g_array_unref(runs);
        return NULL;
    }
    return runs;
}

/* Which output sweep each input sweep becomes (int64 -> int64; 0: a new sweep, named by the
 * new id of its first copied run). Counts the input's sweeps and those that joined. */
static GHashTable *decide_sweeps(StoreMerge *m, GArray *runs, StoreMergeStats *st)
{
    GHashTable *map = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    g_autoptr(GHashTable) labels = /* input sweep -> its new runs' labels */
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                              (GDestroyNotify)g_hash_table_unref);
    g_autoptr(GHashTable) first = g_hash_table_new(g_int64_hash, g_int64_equal); /* -> InRun* */
    for (guint i = 0; i < runs->len; i++) {
        InRun *r = &g_array_index(runs, InRun, i);
        if (r->sweep <= 0)
            continue;
        if (!g_hash_table_contains(first, &r->sweep)) {
            g_hash_table_insert(first, &r->sweep, r);
            g_hash_table_insert(labels, g_memdup2(&r->sweep, sizeof r->sweep),
                                g_hash_table_new(g_str_hash, g_str_equal));
        }
        const OutRun *o = g_hash_table_lookup(m->runs, r->fingerprint);
        if (o && o->sweep > 0 && !g_hash_table_contains(map, &r->sweep))
            g_hash_table_insert(map, g_memdup2(&r->sweep, sizeof r->sweep),
                                g_memdup2(&o->sweep, sizeof o->sweep));
        if (!o)
            g_hash_table_add(g_hash_table_lookup(labels, &r->sweep), r->label);
    }
    st->sweeps = g_hash_table_size(first);
    GHashTableIter it;
    void *k, *v;
    g_hash_table_iter_init(&it, first);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const InRun *r = v;
        int64_t to = 0;
        if (g_hash_table_contains(map, k)) {
            st->sweeps_joined++;
            continue;
        }
        GHashTable *mine = g_hash_table_lookup(labels, k);
        GPtrArray *same = g_hash_table_lookup(m->by_key, r->key);
        for (guint i = 0; same && i < same->len && !to; i++) {
            OutSweep *s = g_ptr_array_index(same, i);
            bool overlap = false;
            GHashTableIter li;
            void *label;
            g_hash_table_iter_init(&li, mine);
            while (!overlap && g_hash_table_iter_next(&li, &label, NULL))
                overlap = g_hash_table_contains(s->labels, label);
            if (!overlap)
                to = s->id;
        }
        st->sweeps_joined += to > 0;
        g_hash_table_insert(map, g_memdup2(k, sizeof(int64_t)), g_memdup2(&to, sizeof to));
    }
    return map;
}

/* Copying one table's rows of a run: SELECT on the input, INSERT on the output, over the
 * columns both have; param `run` (0-based) is the run id, `sweep` runs.sweep_id (-1: none). */
typedef struct {
    const char *table; /* static */
    sqlite3_stmt *sel;
    sqlite3_stmt *ins;
    int n;
    int run;
    int sweep;
} TableCopy;

static void table_copy_clear(TableCopy *c)
{
    sqlite3_finalize(c->sel);
    sqlite3_finalize(c->ins);
    *c = (TableCopy){0};
}

static bool table_exists(sqlite3 *db, const char *t)
{
    sqlite3_stmt *st = NULL;
    bool yes =
        sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static bool without_rowid(sqlite3 *db, const char *t)
{
    sqlite3_stmt *st = NULL;
    bool yes = sqlite3_prepare_v2(db,
                                  "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master"
                                  " WHERE type = 'table' AND name = ?",
                                  -1, &st, NULL) == SQLITE_OK &&
               sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return yes;
}

/* Prepares the copy of `table` (`key`: the column naming the run, "id" for runs). A table
 * the input lacks copies nothing (c->sel NULL). op_rows of the layout without `n` get n
 * numbered in rowid order from 0 (store-ops.c's numbering). */
static bool table_copy_prepare(TableCopy *c, StoreMerge *m, Store *in, const char *table,
                               const char *key, GError **error)
{
    *c = (TableCopy){.table = table, .run = -1, .sweep = -1};
    sqlite3 *idb = store_db(in);
    if (!table_exists(idb, table))
        return true;
    g_autoptr(GPtrArray) out_cols = table_columns(m->db, table, false);
    g_autoptr(GPtrArray) in_cols = table_columns(idb, table, true);
    g_autoptr(GString) sel = g_string_new("SELECT ");
    g_autoptr(GString) ins = g_string_new(NULL);
    g_string_printf(ins, "INSERT INTO %s(", table);
    bool runs = strcmp(table, "runs") == 0;
    for (guint i = 0; i < out_cols->len; i++) {
        const char *col = g_ptr_array_index(out_cols, i);
        bool here = has_col(in_cols, col);
        bool number = !here && strcmp(table, "op_rows") == 0 && strcmp(col, "n") == 0;
        if (!here && !number)
            continue;
        if (strcmp(col, runs ? "sweep_id" : "run_id") == 0)
            *(runs ? &c->sweep : &c->run) = c->n;
        g_string_append_printf(sel, "%s%s", c->n ? ", " : "",
                               number ? "row_number() OVER (ORDER BY rowid) - 1" : col);
        g_string_append_printf(ins, "%s%s", c->n ? ", " : "", col);
        c->n++;
    }
    bool rowid = !without_rowid(idb, table);
    g_string_append_printf(sel, " FROM %s WHERE %s = ?1%s", table, key,
                           rowid ? " ORDER BY rowid" : "");
    g_string_append(ins, ") VALUES (");
    for (int i = 0; i < c->n; i++)
        g_string_append_printf(ins, "%s?%d", i ? ", " : "", i + 1);
    g_string_append_c(ins, ')');
    if (sqlite3_prepare_v2(idb, sel->str, -1, &c->sel, NULL) != SQLITE_OK)
        return db_error(error, idb, store_path(in), table);
    if (sqlite3_prepare_v2(m->db, ins->str, -1, &c->ins, NULL) != SQLITE_OK)
        return db_error(error, m->db, store_path(m->out), table);
    return true;
}

/* Copies the rows of input run `from` as output run `to` (runs: sweep_id := `sweep`, NULL
 * when <= 0). Adds the rows copied to *rows. */
static bool copy_rows(TableCopy *c, StoreMerge *m, Store *in, int64_t from, int64_t to,
                      int64_t sweep, int64_t *rows, GError **error)
{
    if (!c->sel)
        return true;
    sqlite3_reset(c->sel);
    sqlite3_bind_int64(c->sel, 1, from);
    int rc;
    while ((rc = sqlite3_step(c->sel)) == SQLITE_ROW) {
        for (int i = 0; i < c->n; i++) {
            if (i == c->run)
                sqlite3_bind_int64(c->ins, i + 1, to);
            else if (i == c->sweep && sweep > 0)
                sqlite3_bind_int64(c->ins, i + 1, sweep);
            else if (i == c->sweep)
                sqlite3_bind_null(c->ins, i + 1);
            else
                sqlite3_bind_value(c->ins, i + 1, sqlite3_column_value(c->sel, i));
        }
        if (sqlite3_step(c->ins) != SQLITE_DONE) {
            g_autofree char *what = g_strdup_printf("copying %s of run %" G_GINT64_FORMAT " of %s",
                                                    c->table, from, store_path(in));
            db_error(error, m->db, store_path(m->out), what);
            sqlite3_reset(c->ins);
            return false;
        }
        sqlite3_reset(c->ins);
        (*rows)++;
    }
    if (rc != SQLITE_DONE)
        return db_error(error, store_db(in), store_path(in), c->table);
    return true;
}

/* The copies of every table: [0] runs, then STORE_MERGE_RUN_TABLES in order. */
#define N_COPIES (G_N_ELEMENTS(STORE_MERGE_RUN_TABLES))

/* Copies one input run (not in the output yet) with all its rows; its sweep per `map`
 * (a new sweep is named by the run's new id). */
static bool copy_run(StoreMerge *m, Store *in, TableCopy *copies, InRun *r, GHashTable *map,
                     StoreMergeStats *st, GError **error)
{
    int64_t *sweep = r->sweep > 0 ? g_hash_table_lookup(map, &r->sweep) : NULL;
    if (!copy_rows(&copies[0], m, in, r->id, 0, sweep ? *sweep : 0, &st->rows, error))
        return false;
    int64_t id = sqlite3_last_insert_rowid(m->db);
    if (sweep && *sweep == 0) {
        *sweep = id;
        g_autofree char *sql =
            g_strdup_printf("UPDATE runs SET sweep_id = id WHERE id = %" G_GINT64_FORMAT, id);
        if (!store_exec(m->out, sql, error))
            return false;
    }
    for (size_t t = 1; t < N_COPIES; t++)
        if (!copy_rows(&copies[t], m, in, r->id, id, 0, &st->rows, error))
            return false;
    note_out_run(m, r, id, sweep ? *sweep : 0);
    if (!st->first_id)
        st->first_id = id;
    st->last_id = id;
    st->added++;
    return true;
}

/* Merges the runs of `in` (checked) under the savepoint the caller holds. */
static bool merge_runs(StoreMerge *m, Store *in, StoreMergeStats *st, GError **error)
{
    g_autoptr(GArray) runs = read_input_runs(in, error);
    if (!runs)
        return false;
    st->runs = runs->len;
    g_autoptr(GHashTable) map = decide_sweeps(m, runs, st);
    TableCopy copies[N_COPIES];
    memset(copies, 0, sizeof copies);
    bool ok = table_copy_prepare(&copies[0], m, in, "runs", "id", error);
    for (size_t t = 1; ok && t < N_COPIES; t++)
        ok = table_copy_prepare(&copies[t], m, in, STORE_MERGE_RUN_TABLES[t - 1], "run_id", error);
    for (guint i = 0; ok && i < runs->len; i++) {
        InRun *r = &g_array_index(runs, InRun, i);
        if (g_hash_table_contains(m->runs, r->fingerprint))
            st->present++;
        else
            ok = copy_run(m, in, copies, r, map, st, error);
    }
    for (size_t t = 0; t < N_COPIES; t++)
        table_copy_clear(&copies[t]);
    return ok;
}

bool store_merge_add(StoreMerge *m, const char *in_path, StoreMergeStats *stats, GError **error)
{
    StoreMergeStats local = {0};
    StoreMergeStats *st = stats ? stats : &local;
    *st = (StoreMergeStats){0};
    g_autoptr(Store) in = open_input(m, in_path, error);
    if (!in)
        return false;
    if (!store_exec(m->out, "SAVEPOINT merge_input", error))
        return false;
    if (merge_runs(m, in, st, error))
        return store_exec(m->out, "RELEASE merge_input", error);
    store_exec(m->out, "ROLLBACK TO merge_input; RELEASE merge_input", NULL);
    /* the in-memory state saw this input's runs: read it again from the rolled-back file */
    load_state(m, NULL);
    *st = (StoreMergeStats){0};
    return false;
}

bool store_merge_file(Store *out, const char *in_path, StoreMergeStats *stats, GError **error)
{
    StoreMerge *m = store_merge_begin(out, error);
    if (!m)
        return false;
    if (!store_merge_add(m, in_path, stats, error)) {
        store_merge_abort(m);
        return false;
    }
    return store_merge_commit(m, error);
}
