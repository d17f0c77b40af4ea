/* sched/program.h — the schedule IR: what every rank executes.
 *
 * A SchedProgram holds, for N ranks, the communication groups, an interned name table and one
 * op list per rank. Ranks whose op lists are identical share one SchedOpList (interning), and
 * layers are written once as a `repeat` block, so a program's size grows with what actually
 * differs between ranks and layers, not with rank count x layer count.
 *
 * Op lists are flat arrays. A SCHED_OP_REPEAT op is a header: the `body_len` ops that follow it
 * form the body, executed `times` times. While a repeat that defines layers (`layer_start >= 0`)
 * runs, its iteration i gives every op inside without an explicit layer the layer index
 * `layer_start + i`; a repeat with `layer_start < 0` inherits the enclosing layer. Ops outside
 * every layer-defining repeat have layer -1 unless they set one explicitly.
 *
 * sched_program_unroll() expands all repeats into plain ops with explicit layers; executing the
 * unrolled program gives exactly the same run (tests/sched/test-engine.c proves it).
 *
 * Ownership: the program owns its groups, names and lists. It is built by a loader (src/ for
 * hand-written scenarios, model/ for lowered models) and is immutable once handed to the engine.
 */
#ifndef SCHED_PROGRAM_H
#define SCHED_PROGRAM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../net/nccl.h"

typedef enum {
    SCHED_OP_COMPUTE = 0,
    SCHED_OP_ALL_REDUCE,
    SCHED_OP_REDUCE_SCATTER,
    SCHED_OP_ALL_GATHER,
    SCHED_OP_ALL_TO_ALL,
    SCHED_OP_BROADCAST,
    SCHED_OP_BARRIER,
    SCHED_OP_SEND,
    SCHED_OP_RECV,
    SCHED_OP_REPEAT,
    SCHED_OP_KIND_COUNT
} SchedOpKind;

typedef enum {
    SCHED_DTYPE_BF16 = 0,
    SCHED_DTYPE_FP16,
    SCHED_DTYPE_FP32,
    SCHED_DTYPE_FP8,
    SCHED_DTYPE_INT8,
    SCHED_DTYPE_INT32,
    SCHED_DTYPE_COUNT
} SchedDtype;

/* Upper bound on repeat nesting; deeper programs are rejected by sched_program_validate(). */
#define SCHED_MAX_REPEAT_DEPTH 8

/* SchedOp.flags. EAGER: a collective or send whose caller does not wait for it — it arrives
 * and goes on; the other members complete when everyone has arrived, as usual. A one-way
 * notification (a broadcast whose root is eager: the others wait for the root, the root for
 * no one). */
#define SCHED_OP_FLAG_EAGER 1u
/* SEGMENT: the rank's time line may be cut before this op's record (SchedRecord.flags): what
 * runs from here to the next such op is one unit that may repeat later with other start times
 * and sequence numbers (a served step), and the store keeps each distinct unit once. Nothing in
 * the engine depends on it; an op inside a repeat body should not carry it. */
#define SCHED_OP_FLAG_SEGMENT 2u

/* What limits a compute op's duration under the cost model that priced it. */
typedef enum {
    SCHED_BOUND_NONE = 0, /* not said (hand-written ops, collectives) */
    SCHED_BOUND_COMPUTE,  /* its FLOPs at the device's peak take longest */
    SCHED_BOUND_MEMORY,   /* its bytes at the memory bandwidth take longest */
    SCHED_BOUND_LAUNCH,   /* the fixed launch overhead exceeds both */
    SCHED_BOUND_PROFILE,  /* a measured time (an op profile), not a roofline */
    SCHED_BOUND_TABLE,    /* a measured kernel table (model/kernel-table.h), interpolated */
} SchedBound;

typedef struct {
    uint8_t kind;        /* SchedOpKind */
    uint8_t dtype;       /* SchedDtype; collectives and send/recv */
    uint8_t bound;       /* compute: SchedBound, what limits its duration (set by whoever costed
                            it; the engine only passes it on); otherwise 0 */
    uint8_t flags;       /* SCHED_OP_FLAG_* */
    uint32_t name;       /* id in the program's name table */
    int32_t group;       /* collectives: group index; send/recv: peer rank; otherwise -1 */
    int32_t root;        /* broadcast: root as a global rank; otherwise -1 */
    int32_t layer;       /* explicit layer index, or -1 to take it from the enclosing repeat */
    int32_t layer_start; /* repeat: layer of iteration 0, or -1 to inherit; otherwise -1 */
    uint32_t times;      /* repeat: iteration count */
    uint32_t body_len;   /* repeat: number of ops in the body that follows the header */
    uint64_t count;      /* collectives, send/recv: per-rank input element count */
    int64_t dur_ns;      /* compute: duration in ns (>= 0) */
    uint64_t tokens;     /* token rows this op processes on this rank (0 if not meaningful) */
} SchedOp;

typedef struct {
    SchedOp *ops;
    uint32_t len;
} SchedOpList;

typedef struct {
    char *name;
    uint32_t n;           /* member count, >= 1 */
    int32_t *ranks;       /* members in the order given, global ranks */
    int32_t *sorted;      /* the members sorted ascending, for sched_group_index_of() */
    uint32_t *sorted_pos; /* sorted[i] sits at ranks[sorted_pos[i]] */
    /* Members in arithmetic progression (ranks[i] = ranks[0] + i x stride, stride >= 1: TP, DP
     * and PP groups): sched_group_index_of() computes the position; 0 when they are not. */
    int32_t stride;
    /* How the group's collectives surface on hardware (sched_program_group_watch):
     * `unwatched_kinds` has bit 1 << SchedOpKind for each kind that runs outside the process
     * group's watchdog (no timeout line, no sequence number); `seq_base` counts the watched
     * collectives the group issued before time 0 (a start-up); `unwatched_via` names what
     * carries the unwatched ones, or NULL. All zero: everything is watched from seq 1. */
    uint32_t unwatched_kinds;
    uint64_t seq_base;
    char *unwatched_via;
    /* Who runs its collectives on hardware (sched_program_group_impl; net/nccl.h): NCCL unless
     * the layer that knows the software says otherwise (vLLM's TP group: its custom
     * all-reduce). The fabric decides where that applies. */
    NetCommImpl impl;
} SchedGroup;

typedef struct {
    GPtrArray *strings; /* id -> char* */
    GHashTable *ids;    /* char* -> id + 1 */
} SchedNames;

typedef struct {
    uint32_t n_ranks;
    SchedNames names;
    GPtrArray *groups;      /* SchedGroup*, index = group id */
    GHashTable *group_ids;  /* group name -> id + 1 of the first group of that name */
    GPtrArray *lists;       /* SchedOpList*, interned */
    GHashTable *list_index; /* SchedOpList* -> index + 1 (content hash) */
    int32_t *list_of_rank;  /* rank -> index into lists, -1 while unset */
} SchedProgram;

const char *sched_op_kind_name(SchedOpKind kind);
/* Parses a kind name ("all_gather", ...). Returns false for an unknown name. */
bool sched_op_kind_parse(const char *s, SchedOpKind *out);
const char *sched_dtype_name(SchedDtype dtype);
/* "compute", "memory", "launch", "profile", "table"; NULL for SCHED_BOUND_NONE or out of range. */
const char *sched_bound_name(uint8_t bound);
bool sched_dtype_parse(const char *s, SchedDtype *out);
/* Size in bytes of one element. */
uint32_t sched_dtype_size(SchedDtype dtype);

static inline bool sched_op_is_collective(SchedOpKind k)
{
    return k >= SCHED_OP_ALL_REDUCE && k <= SCHED_OP_BARRIER;
}
static inline bool sched_op_is_p2p(SchedOpKind k)
{
    return k == SCHED_OP_SEND || k == SCHED_OP_RECV;
}

/* A compute op / collective / p2p op / repeat header with every other field neutral. */
SchedOp sched_op_compute(uint32_t name, int64_t dur_ns, uint64_t tokens);
SchedOp sched_op_collective(SchedOpKind kind, uint32_t name, int32_t group, uint64_t count,
                            SchedDtype dtype);
SchedOp sched_op_p2p(SchedOpKind kind, uint32_t name, int32_t peer, uint64_t count,
                     SchedDtype dtype);
SchedOp sched_op_repeat(uint32_t times, uint32_t body_len, int32_t layer_start);

/* Creates an empty program for n_ranks ranks (>= 1). Never fails. */
SchedProgram *sched_program_new(uint32_t n_ranks);
void sched_program_free(SchedProgram *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SchedProgram, sched_program_free)

/* Interns `s` and returns its id; ids are dense from 0 in first-seen order. */
uint32_t sched_program_name(SchedProgram *p, const char *s);
/* The id of name `s`, or -1 when the program has no such name. O(1). */
int32_t sched_program_find_name(const SchedProgram *p, const char *s);
/* The string of a name id; owned by the program. */
const char *sched_program_name_str(const SchedProgram *p, uint32_t id);

/* Adds a group and returns its id. The caller guarantees 1 <= n, ranks in range and distinct
 * (loaders check and report this to the user; here it is asserted). */
int32_t sched_program_add_group(SchedProgram *p, const char *name, const int32_t *ranks,
                                uint32_t n);
/* Sets how group `id`'s collectives surface on hardware (the SchedGroup fields above). */
void sched_program_group_watch(SchedProgram *p, int32_t id, uint32_t unwatched_kinds,
                               uint64_t seq_base, const char *unwatched_via);
/* Sets who runs group `id`'s collectives (SchedGroup.impl). */
void sched_program_group_impl(SchedProgram *p, int32_t id, NetCommImpl impl);
/* Finds a group by name (the first added, if several share it); -1 if none. O(1). */
int32_t sched_program_find_group(const SchedProgram *p, const char *name);
static inline const SchedGroup *sched_program_group(const SchedProgram *p, int32_t id)
{
    return g_ptr_array_index(p->groups, (guint)id);
}
int32_t sched_group_search(const SchedGroup *g, int32_t rank);
/* Position of `rank` in group g's member list, or -1 if not a member. O(1) for a group in
 * arithmetic progression, else O(log n). */
static inline int32_t sched_group_index_of(const SchedGroup *g, int32_t rank)
{
    if (g->stride > 0) {
        int64_t d = (int64_t)rank - g->ranks[0];
        if (d < 0 || d % g->stride != 0 || d / g->stride >= (int64_t)g->n)
            return -1;
        return (int32_t)(d / g->stride);
    }
    return sched_group_search(g, rank);
}

/* Gives `rank` the op list `ops[0..len)` (copied). Identical lists are stored once.
 * Returns the list index. */
uint32_t sched_program_set_ops(SchedProgram *p, uint32_t rank, const SchedOp *ops, uint32_t len);
/* Gives `rank` the already-stored list `list` (an index returned by sched_program_set_ops).
 * O(1): the way to hand one list to many ranks. */
void sched_program_share_ops(SchedProgram *p, uint32_t rank, uint32_t list);
static inline const SchedOpList *sched_program_ops(const SchedProgram *p, uint32_t rank)
{
    return g_ptr_array_index(p->lists, (guint)p->list_of_rank[rank]);
}

/* Checks the structural invariants the engine relies on: every rank has a list; repeat bodies
 * lie inside their list and nest at most SCHED_MAX_REPEAT_DEPTH deep; collectives name an
 * existing group that contains the rank; broadcast roots are members; send/recv peers are other
 * ranks in range. On failure returns false and sets `error` (G_IO_ERROR_INVALID_DATA) with a
 * message naming the rank and op index. */
bool sched_program_validate(const SchedProgram *p, GError **error);

/* Number of ops a rank executes once repeats are expanded (saturates at UINT64_MAX). */
uint64_t sched_program_rank_op_count(const SchedProgram *p, uint32_t rank);
/* The total work of a run before simulating it: rank-ops over all ranks with repeats expanded
 * (saturates at UINT64_MAX), what the engine's rank_ops would reach if every rank ran to its
 * end. O(ops of the distinct lists): ranks sharing a list are counted once. */
uint64_t sched_program_total_op_count(const SchedProgram *p);

/* Returns a new program with every repeat expanded and each op's layer made explicit.
 * Groups and names are copied with the same ids. Caller owns the result. */
SchedProgram *sched_program_unroll(const SchedProgram *p);

#endif
