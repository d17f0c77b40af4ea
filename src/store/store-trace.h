/* src/store/store-trace.h — a stored run read back section by section for its trace
 * (src/output/trace.h): the run row, its groups, the instances that never completed, every op
 * row, each collective instance's members and every diagnostic, each row handed to a callback
 * as a plain struct while the statement steps, so memory stays flat whatever the run size.
 *
 * All sections read one snapshot: store_trace_begin opens a read transaction (unless the
 * connection is already inside one) and store_trace_end closes it. Costs: the op rows come
 * through the rank_ops view (either layout, store-ops.h), sorted by (rank, idx) for the ops
 * and by (group_id, seq, rank) for the flows — O(N log N) in SQLite's sorter, which spills to
 * temporary files instead of growing memory.
 *
 * Errors: STORE_ERROR "DB: trace of run N: what: SQLite's message"; an unknown run is
 * G_IO_ERROR_NOT_FOUND. A callback that returns false stops the section; its error stands.
 */
#ifndef SRC_STORE_TRACE_H
#define SRC_STORE_TRACE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Which op rows to read (all fields neutral: every row). */
typedef struct {
    GArray *ranks;              /* int64 pairs [lo, hi] of the ranks kept, or NULL: all */
    int64_t layer_lo, layer_hi; /* ops of layers lo..hi only (ops outside layers dropped); -1:
                                   every op */
    int64_t from_ns, to_ns;     /* ops overlapping [from, to) only; -1: open */
} StoreOpFilter;
#define STORE_OP_FILTER_ALL {NULL, -1, -1, -1, -1}

/* A text column: `str` NULL for SQL NULL; `len` bytes (the text may hold any byte). Valid
 * while the callback runs. */
typedef struct {
    const char *str;
    gsize len;
} StoreText;

typedef struct StoreTraceReader StoreTraceReader;

/* Starts reading run `run_id` of `s` with `filter` (NULL: everything; borrowed until
 * store_trace_end). NULL with `error` when the read transaction cannot start. */
StoreTraceReader *store_trace_begin(Store *s, int64_t run_id, const StoreOpFilter *filter,
                                    GError **error);
/* Ends the read transaction and frees `r`. */
void store_trace_end(StoreTraceReader *r);

/* ---- the run row ---- */

typedef enum { STORE_CELL_NULL, STORE_CELL_INT, STORE_CELL_REAL, STORE_CELL_TEXT } StoreCellType;

/* One column of the run row as SQLite holds it. */
typedef struct {
    const char *column; /* "id", "name", "kind", "status", ..., "version" */
    StoreCellType type;
    int64_t i;      /* STORE_CELL_INT */
    double d;       /* STORE_CELL_REAL */
    StoreText text; /* STORE_CELL_TEXT */
} StoreCell;

typedef void (*StoreCellFn)(void *data, const StoreCell *cell);

/* The run row, column by column in this order: id, name, kind, status, exit_code, ranks,
 * sim_end_us, events, rank_ops, wall_ms, created_at, path, timeline, version. */
bool store_trace_run(StoreTraceReader *r, StoreCellFn fn, void *data, GError **error);
/* What decides where never-completed ops end: how many `timeout` diagnostics the run has and
 * the detail of its first `hang_surface` diagnostic (*hang_detail, caller frees; NULL: none). */
bool store_trace_hang(StoreTraceReader *r, int64_t *timeouts, char **hang_detail,
                      GError **error);
/* The run's hardware line (*line, caller frees; NULL: none). */
/* The latest end of a completed op of the whole run (ignoring the filter), -1 when none. */
bool store_trace_work_end(StoreTraceReader *r, int64_t *end_ns, GError **error);
bool store_trace_hardware(StoreTraceReader *r, char **line, GError **error);

/* ---- groups and blocked instances ---- */

/* A group: its id, name and members as stored ("[0,1,2,3]"). */
typedef void (*StoreTraceGroupFn)(void *data, int64_t id, const char *name, const char *ranks);
bool store_trace_groups(StoreTraceReader *r, StoreTraceGroupFn fn, void *data, GError **error);
/* Each (group, seq, rank) of a collective op that never completed. */
typedef void (*StoreTraceBlockedFn)(void *data, int64_t group_id, int64_t seq, int64_t rank);
bool store_trace_blocked(StoreTraceReader *r, StoreTraceBlockedFn fn, void *data,
                         GError **error);

/* ---- op rows, flows, diagnostics ---- */

/* One op row (rank_ops with its names resolved; "name 7" and the like where a lookup row is
 * missing). */
typedef struct {
    int64_t rank, idx;
    bool has_layer;
    int64_t layer;
    StoreText name, kind;
    bool has_tokens;
    int64_t tokens;
    bool has_group; /* a collective or p2p op: group, seq, count, dtype are set */
    int64_t group_id, seq, count;
    StoreText group, dtype;
    int64_t start_ns;
    bool has_end; /* false: never completed */
    int64_t end_ns;
} StoreTraceOp;

typedef bool (*StoreTraceOpFn)(void *data, const StoreTraceOp *op, GError **error);

/* The filtered op rows in (rank, idx) order. `blocked_end_ns` stands for the end of ops that
 * never completed in the window filter. */
bool store_trace_ops(StoreTraceReader *r, int64_t blocked_end_ns, StoreTraceOpFn fn, void *data,
                     GError **error);

/* One member of a collective instance, with what its instance's members share. */
typedef struct {
    int64_t group_id, seq, rank, idx;
    StoreText group;        /* the group's name ("group 3" when missing) */
    int64_t start_ns;       /* the member's arrival */
    int64_t end_ns;         /* its completion (never-completed: blocked_end_ns, else start) */
    int64_t last_start_ns;  /* the instance's last arrival */
    int64_t first_end_ns;   /* the instance's first completion */
    int64_t members;        /* the instance's members (within the filter) */
} StoreTraceFlow;

typedef bool (*StoreTraceFlowFn)(void *data, const StoreTraceFlow *f, GError **error);

/* The filtered collective rows in (group_id, seq, rank) order (`blocked_end_ns` < 0: unknown). */
bool store_trace_flows(StoreTraceReader *r, int64_t blocked_end_ns, StoreTraceFlowFn fn,
                       void *data, GError **error);

/* One diagnostic row. */
typedef struct {
    StoreText kind, severity, group, op, message, detail; /* group, op, detail may be NULL */
    bool has_rank, has_seq, has_layer, has_time;
    int64_t rank, seq, layer;
    double time_us; /* microseconds, as stored */
} StoreTraceDiag;

typedef bool (*StoreTraceDiagFn)(void *data, const StoreTraceDiag *d, GError **error);

/* Every diagnostic of the run in id order. */
bool store_trace_diagnostics(StoreTraceReader *r, StoreTraceDiagFn fn, void *data,
                             GError **error);

#endif
