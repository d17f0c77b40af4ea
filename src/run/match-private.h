/* src/run/match-private.h — the inside of match.h: the two sides `match` aligns (an imported
 * run and a simulation), as groups of calls by (seq, rank), built by match-sides.c and paired
 * and judged by match.c. For src/run/match*.c only.
 */
#ifndef SRC_RUN_MATCH_PRIVATE_H
#define SRC_RUN_MATCH_PRIVATE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../sched/engine.h"
#include "../store/query.h"
#include "match.h"

typedef struct {
    const char *kind;  /* interned kind name */
    const char *dtype; /* interned dtype name */
    uint64_t count;
    char *name;
    bool done;
} Call;

typedef struct {
    char *name;
    GArray *ranks;     /* int32, sorted */
    GHashTable *calls; /* (seq << 24 | rank) -> Call* */
    uint64_t min_seq, max_seq;
    GArray *seqs;      /* uint64: the distinct seqs with a call, sorted (group_seal) */
    GHashTable *first; /* rank -> first seq it recorded here (the dump's ring buffer start) */
} Group;

typedef struct {
    int group; /* index in the side's groups */
    uint64_t seq;
} Inst;

typedef struct {
    const char *label; /* "dump" | "simulation" */
    GPtrArray *groups; /* Group* */
    bool hang;
    int hang_group; /* index, -1 */
    uint64_t hang_seq;
    char *hang_kind;  /* "mismatch" | "deadlock" */
    GArray *culprits; /* int32 sorted */
    GArray *blocked;  /* Inst: every instance the deadlock holds ranks in */
    bool *unknown;    /* per rank: no record (imports); NULL for a simulation */
    uint32_t n_ranks;
} Side;

/* Frees what a side holds (not `s` itself). */
void match_side_clear(Side *s);
/* The imported side from run `id` of `st` (`qr`: that run, loaded). False with `error` (a
 * STORE_ERROR) when its collectives cannot be read. */
bool match_load_import(Store *st, int64_t id, const QueryRun *qr, Side *s, GError **error);
/* The simulated side from the program, its outcome and its records. */
void match_load_sim(const SchedProgram *p, const SchedOutcome *o, GArray *recs, Side *s);

/* The call of `rank` at instance `seq` of `g`, or NULL. */
const Call *match_group_call(const Group *g, uint64_t seq, int32_t rank);
/* Same kind, dtype and count. */
bool match_same_call(const Call *a, const Call *b);
/* "0-3" or "none". Caller frees. */
char *match_fmt_ranks(GArray *a);
/* "name kind count dtype (completed)" or "no call". Caller frees. */
char *match_fmt_call(const Call *c);
/* uint64_t order, for g_array_sort. */
gint match_cmp_u64(gconstpointer a, gconstpointer b);

#endif
