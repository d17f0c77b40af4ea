/* src/store/store-ops.c — a run's op records as rows per rank (op_rows), and the helpers the
 * shared time lines (store-timelines.c) use too: reading a record source, multi-row INSERTs;
 * see store-ops.h. */
#include "store-ops.h"

#include "../../sched/program.h"
#include "store-error.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* Records read back from a staging file at a time. */
#define READ_RECORDS 16384

bool store_ops_sql_error(GError **error, sqlite3 *db, const char *path, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s: %s%s", path, what,
                sqlite3_errmsg(db), store_error_advice(sqlite3_extended_errcode(db)));
    return false;
}

/* "INSERT INTO `head` VALUES (?..),(?..)" of `rows` rows of `cols` parameters each, numbered
 * so that row i's column c is ?(i * stride + c). When the numbers follow each other (cols ==
 * stride) the parameters are plain `?`: SQLite looks each explicit ?NNN up in a list of the ones
 * before it, which made preparing 256 rows of 14 cost 15 ms (8 % of a 4,096-rank run's CPU
 * time, perf). Heads are written "INSERT OR FAIL INTO": with the default ABORT, a statement of
 * many rows must be able to undo its own rows, so SQLite kept a statement journal in a temporary
 * file (5,434 writes for the 200-request served run); FAIL keeps them, and every caller rolls
 * the whole run back on any error, so nothing of a failed statement is ever committed. */
char *store_ops_rows_sql(const char *head, int rows, int cols, int stride)
{
    GString *sql = g_string_new(head);
    g_string_append(sql, " VALUES ");
    for (int i = 0; i < rows; i++) {
        int b = i * stride;
        g_string_append(sql, i ? ",(" : "(");
        for (int c = 1; c <= cols; c++) {
            if (c > 1)
                g_string_append_c(sql, ',');
            if (cols == stride)
                g_string_append_c(sql, '?');
            else
                g_string_append_printf(sql, "?%d", b + c);
        }
        g_string_append_c(sql, ')');
    }
    return g_string_free(sql, FALSE);
}

sqlite3_stmt *store_ops_prepare_rows(sqlite3 *db, const char *head, int rows, int cols, int stride)
{
    g_autofree char *sql = store_ops_rows_sql(head, rows, cols, stride);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        st = NULL;
    return st;
}

/* ---- batches of integer rows ---- */

bool store_int_batch_open(StoreIntBatch *b, sqlite3 *db, const char *path, const char *head,
                          int cols, const char *what, GError **error)
{
    g_return_val_if_fail(cols > 0 && cols <= STORE_INT_COLS, false);
    *b = (StoreIntBatch){.db = db, .path = path, .what = what, .head = head, .cols = cols};
    b->one = store_ops_prepare_rows(db, head, 1, cols, cols);
    return b->one || store_ops_sql_error(error, db, path, what);
}

static bool int_step(StoreIntBatch *b, sqlite3_stmt *st, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || store_ops_sql_error(error, b->db, b->path, b->what);
}

bool store_int_batch_flush(StoreIntBatch *b, GError **error)
{
    bool full = b->n_pend == STORE_INT_ROWS;
    if (full && !b->many &&
        !(b->many = store_ops_prepare_rows(b->db, b->head, STORE_INT_ROWS, b->cols, b->cols)))
        return store_ops_sql_error(error, b->db, b->path, b->what);
    bool ok = true;
    for (uint32_t i = 0; ok && i < b->n_pend; i++)
        for (int c = 0; c < b->cols; c++) {
            int64_t v = b->pend[i * STORE_INT_COLS + (uint32_t)c];
            if (full)
                sqlite3_bind_int64(b->many, (int)i * b->cols + c + 1, v);
            else
                sqlite3_bind_int64(b->one, c + 1, v);
            if (!full && c + 1 == b->cols)
                ok = int_step(b, b->one, error);
        }
    ok = ok && (!full || int_step(b, b->many, error));
    b->n_pend = 0;
    return ok;
}

bool store_int_batch_add(StoreIntBatch *b, const int64_t *row, GError **error)
{
    memcpy(&b->pend[b->n_pend++ * STORE_INT_COLS], row, (size_t)b->cols * sizeof *row);
    return b->n_pend < STORE_INT_ROWS || store_int_batch_flush(b, error);
}

void store_int_batch_close(StoreIntBatch *b)
{
    sqlite3_finalize(b->many);
    sqlite3_finalize(b->one);
    b->many = b->one = NULL;
}

/* ---- batches of rows ---- */

#define BATCH_COLUMNS 14

bool store_row_batch_open(StoreRowBatch *b, sqlite3 *db, const char *path, int64_t run_id,
                          const char *head, const char *what, GError **error)
{
    memset(b, 0, offsetof(StoreRowBatch, pend));
    b->n_pend = 0;
    b->rows = 0;
    b->db = db;
    b->path = path;
    b->what = what;
    b->id = run_id;
    b->head = head;
    b->one = store_ops_prepare_rows(db, head, 1, BATCH_COLUMNS, BATCH_COLUMNS);
    return b->one || store_ops_sql_error(error, db, path, what);
}

static bool batch_step(StoreRowBatch *b, sqlite3_stmt *st, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || store_ops_sql_error(error, b->db, b->path, b->what);
}

bool store_row_batch_flush(StoreRowBatch *b, GError **error)
{
    bool full = b->n_pend == STORE_OPS_PER_INSERT;
    if (full && !b->many &&
        !(b->many = store_ops_prepare_rows(b->db, b->head, STORE_OPS_PER_INSERT, BATCH_COLUMNS,
                                           BATCH_COLUMNS)))
        return store_ops_sql_error(error, b->db, b->path, b->what);
    for (uint32_t i = 0; i < b->n_pend; i++) {
        store_ops_bind_record(full ? b->many : b->one, full ? (int)i * BATCH_COLUMNS : 0, b->id,
                              &b->pend[i]);
        if (!full && !batch_step(b, b->one, error))
            return false;
    }
    b->rows += b->n_pend;
    b->n_pend = 0;
    return !full || batch_step(b, b->many, error);
}

bool store_row_batch_add(StoreRowBatch *b, const SchedRecord *x, GError **error)
{
    b->pend[b->n_pend++] = *x;
    return b->n_pend < STORE_OPS_PER_INSERT || store_row_batch_flush(b, error);
}

void store_row_batch_close(StoreRowBatch *b)
{
    sqlite3_finalize(b->many);
    sqlite3_finalize(b->one);
    b->many = b->one = NULL;
}

/* Calls `fn` on the records of `src` in order, in slices: the array first, then the staging
 * file read back. */
typedef bool (*RecordsFn)(void *data, const SchedRecord *recs, size_t n, GError **error);

static bool source_foreach(const char *path, const StoreRecordSource *src, RecordsFn fn, void *data,
                           GError **error)
{
    if (src->n && !fn(data, src->recs, src->n, error))
        return false;
    if (src->fd < 0 || !src->n_staged)
        return true;
    g_autofree SchedRecord *buf = g_new(SchedRecord, READ_RECORDS);
    uint64_t left = src->n_staged;
    off_t off = 0;
    while (left) {
        size_t want = (size_t)MIN(left, (uint64_t)READ_RECORDS) * sizeof(SchedRecord);
        size_t got = 0;
        while (got < want) {
            ssize_t k = pread(src->fd, (char *)buf + got, want - got, off + (off_t)got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                            "%s: reading the run's staging file: %s", path,
                            k < 0 ? g_strerror(errno) : "unexpected end");
                return false;
            }
            got += (size_t)k;
        }
        if (!fn(data, buf, want / sizeof(SchedRecord), error))
            return false;
        off += (off_t)want;
        left -= want / sizeof(SchedRecord);
    }
    return true;
}

/* ---- per-rank rows ---- */

#define OP_COLUMNS 15

struct StoreOpInserter {
    sqlite3 *db;
    const char *path;
    sqlite3_stmt *many; /* STORE_OPS_PER_INSERT rows */
    sqlite3_stmt *one;
    int64_t id;
    int64_t next; /* the next row's n */
};

/* Binds record `x` as row `row` of a multi-row statement (parameters from row * 15 + 1); `n`
 * its place in the run (bound only where op_rows is keyed by it). */
void store_ops_bind_record(sqlite3_stmt *st, int b, int64_t id, const SchedRecord *x)
{
    bool coll = x->group >= 0;
    sqlite3_bind_int64(st, b + 1, id);
    sqlite3_bind_int64(st, b + 2, x->rank);
    sqlite3_bind_int64(st, b + 3, (int64_t)x->idx);
    store_bind_opt_int(st, b + 4, x->layer >= 0, x->layer);
    sqlite3_bind_int64(st, b + 5, x->name);
    sqlite3_bind_int(st, b + 6, x->kind);
    sqlite3_bind_int64(st, b + 7, (int64_t)x->tokens);
    store_bind_opt_int(st, b + 8, coll, x->group);
    store_bind_opt_int(st, b + 9, coll, (int64_t)x->seq);
    store_bind_opt_int(st, b + 10, coll, (int64_t)x->count);
    store_bind_opt_int(st, b + 11, coll, x->dtype);
    sqlite3_bind_int64(st, b + 12, x->start_ns);
    store_bind_opt_int(st, b + 13, x->end_ns >= 0, x->end_ns);
    store_bind_opt_int(st, b + 14, x->bound != 0, x->bound);
}

static void bind_op(sqlite3_stmt *st, int row, int64_t id, int64_t n, const SchedRecord *x)
{
    int b = row * OP_COLUMNS;
    store_ops_bind_record(st, b, id, x);
    sqlite3_bind_int64(st, b + 15, n); /* ignored by the statement of the old layout */
}

static sqlite3_stmt *prepare_ops(sqlite3 *db, bool keyed, int rows)
{
    g_autofree char *head = g_strdup_printf("INSERT OR FAIL INTO op_rows(run_id, rank, idx, layer, "
                                            "name_id, kind, tokens, group_id, seq, "
                                            "count, dtype, start_ns, end_ns, bound%s)",
                                            keyed ? ", n" : "");
    return store_ops_prepare_rows(db, head, rows, keyed ? 15 : 14, OP_COLUMNS);
}

StoreOpInserter *store_op_inserter_new(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                                       GError **error)
{
    StoreOpInserter *ins = g_new0(StoreOpInserter, 1);
    *ins = (StoreOpInserter){
        db,     path, prepare_ops(db, keyed, STORE_OPS_PER_INSERT), prepare_ops(db, keyed, 1),
        run_id, 0};
    if (!ins->many || !ins->one) {
        store_ops_sql_error(error, db, path, "prepare op_rows");
        store_op_inserter_free(ins);
        return NULL;
    }
    return ins;
}

void store_op_inserter_free(StoreOpInserter *ins)
{
    if (!ins)
        return;
    sqlite3_finalize(ins->many);
    sqlite3_finalize(ins->one);
    g_free(ins);
}

bool store_op_inserter_add(StoreOpInserter *ins, const SchedRecord *recs, size_t n, GError **error)
{
    size_t i = 0;
    for (; i + STORE_OPS_PER_INSERT <= n; i += STORE_OPS_PER_INSERT) {
        for (int k = 0; k < STORE_OPS_PER_INSERT; k++)
            bind_op(ins->many, k, ins->id, ins->next++, &recs[i + (size_t)k]);
        int rc = sqlite3_step(ins->many);
        sqlite3_reset(ins->many);
        if (rc != SQLITE_DONE)
            return store_ops_sql_error(error, ins->db, ins->path, "insert op_rows");
    }
    for (; i < n; i++) {
        bind_op(ins->one, 0, ins->id, ins->next++, &recs[i]);
        int rc = sqlite3_step(ins->one);
        sqlite3_reset(ins->one);
        if (rc != SQLITE_DONE)
            return store_ops_sql_error(error, ins->db, ins->path, "insert op_rows");
    }
    return true;
}

static bool add_per_rank(void *data, const SchedRecord *recs, size_t n, GError **error)
{
    return store_op_inserter_add(data, recs, n, error);
}

bool store_ops_insert_per_rank(sqlite3 *db, const char *path, int64_t run_id, bool keyed,
                               const StoreRecordSource *src, GError **error)
{
    if (!src->n && !src->n_staged)
        return true;
    StoreOpInserter *ins = store_op_inserter_new(db, path, run_id, keyed, error);
    if (!ins)
        return false;
    bool ok = source_foreach(path, src, add_per_rank, ins, error);
    store_op_inserter_free(ins);
    return ok;
}
