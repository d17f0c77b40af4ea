/* sched/program.c — schedule IR storage, interning, validation and unrolling; see program.h. */
#include "program.h"

#include <gio/gio.h>
#include <string.h>

static const char *const kind_names[SCHED_OP_KIND_COUNT] = {
    "compute",   "all_reduce", "reduce_scatter", "all_gather", "all_to_all",
    "broadcast", "barrier",    "send",           "recv",       "repeat",
};

static const char *const dtype_names[SCHED_DTYPE_COUNT] = {
    "bf16", "fp16", "fp32", "fp8", "int8", "int32",
};

static const uint32_t dtype_sizes[SCHED_DTYPE_COUNT] = {2, 2, 4, 1, 1, 4};

const char *sched_op_kind_name(SchedOpKind kind)
{
    g_return_val_if_fail(kind < SCHED_OP_KIND_COUNT, "?");
    return kind_names[kind];
}

bool sched_op_kind_parse(const char *s, SchedOpKind *out)
{
    for (int i = 0; i < SCHED_OP_KIND_COUNT; i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (SchedOpKind)i;
            return true;
        }
    }
    return false;
}

const char *sched_bound_name(uint8_t bound)
{
    static const char *const names[] = {NULL, "compute", "memory", "launch", "profile", "table"};
    return bound < G_N_ELEMENTS(names) ? names[bound] : NULL;
}

const char *sched_dtype_name(SchedDtype dtype)
{
    g_return_val_if_fail(dtype < SCHED_DTYPE_COUNT, "?");
    return dtype_names[dtype];
}

bool sched_dtype_parse(const char *s, SchedDtype *out)
{
    for (int i = 0; i < SCHED_DTYPE_COUNT; i++) {
        if (strcmp(s, dtype_names[i]) == 0) {
            *out = (SchedDtype)i;
            return true;
        }
    }
    return false;
}

uint32_t sched_dtype_size(SchedDtype dtype)
{
    g_return_val_if_fail(dtype < SCHED_DTYPE_COUNT, 1);
    return dtype_sizes[dtype];
}

static SchedOp op_blank(SchedOpKind kind, uint32_t name)
{
    SchedOp op;
    memset(&op, 0, sizeof op);
    op.kind = (uint8_t)kind;
    op.name = name;
    op.group = -1;
    op.root = -1;
    op.layer = -1;
    op.layer_start = -1;
    return op;
}

SchedOp sched_op_compute(uint32_t name, int64_t dur_ns, uint64_t tokens)
{
    SchedOp op = op_blank(SCHED_OP_COMPUTE, name);
    op.dur_ns = dur_ns;
    op.tokens = tokens;
    return op;
}

SchedOp sched_op_collective(SchedOpKind kind, uint32_t name, int32_t group, uint64_t count,
                            SchedDtype dtype)
{
    g_assert(sched_op_is_collective(kind));
    SchedOp op = op_blank(kind, name);
    op.group = group;
    op.count = count;
    op.dtype = (uint8_t)dtype;
    return op;
}

SchedOp sched_op_p2p(SchedOpKind kind, uint32_t name, int32_t peer, uint64_t count,
                     SchedDtype dtype)
{
    g_assert(sched_op_is_p2p(kind));
    SchedOp op = op_blank(kind, name);
    op.group = peer;
    op.count = count;
    op.dtype = (uint8_t)dtype;
    return op;
}

SchedOp sched_op_repeat(uint32_t times, uint32_t body_len, int32_t layer_start)
{
    SchedOp op = op_blank(SCHED_OP_REPEAT, 0);
    op.times = times;
    op.body_len = body_len;
    op.layer_start = layer_start;
    return op;
}

/* ---- op lists: content hashing for interning ---- */

static bool op_equal(const SchedOp *a, const SchedOp *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->name == b->name &&
           a->group == b->group && a->root == b->root && a->layer == b->layer &&
           a->layer_start == b->layer_start && a->times == b->times && a->body_len == b->body_len &&
           a->count == b->count && a->dur_ns == b->dur_ns && a->tokens == b->tokens;
}

static guint list_hash(gconstpointer key)
{
    const SchedOpList *l = key;
    uint64_t h = 1469598103934665603ull ^ l->len;
    for (uint32_t i = 0; i < l->len; i++) {
        const SchedOp *o = &l->ops[i];
        uint64_t v[] = {o->kind,
                        o->dtype,
                        o->name,
                        (uint32_t)o->group,
                        (uint32_t)o->root,
                        (uint32_t)o->layer,
                        (uint32_t)o->layer_start,
                        o->times,
                        o->body_len,
                        o->count,
                        (uint64_t)o->dur_ns,
                        o->tokens};
        for (size_t k = 0; k < G_N_ELEMENTS(v); k++)
            h = (h ^ v[k]) * 1099511628211ull;
    }
    return (guint)(h ^ (h >> 32));
}

static gboolean list_equal(gconstpointer a, gconstpointer b)
{
    const SchedOpList *x = a, *y = b;
    if (x->len != y->len)
        return FALSE;
    for (uint32_t i = 0; i < x->len; i++)
        if (!op_equal(&x->ops[i], &y->ops[i]))
            return FALSE;
    return TRUE;
}

static void list_free(gpointer data)
{
    SchedOpList *l = data;
    g_free(l->ops);
    g_free(l);
}

static void group_free(gpointer data)
{
    SchedGroup *g = data;
    g_free(g->name);
    g_free(g->ranks);
    g_free(g->sorted);
    g_free(g->sorted_pos);
    g_free(g->unwatched_via);
    g_free(g);
}

void sched_program_group_watch(SchedProgram *p, int32_t id, uint32_t unwatched_kinds,
                               uint64_t seq_base, const char *unwatched_via)
{
    g_return_if_fail(id >= 0 && (guint)id < p->groups->len);
    SchedGroup *g = g_ptr_array_index(p->groups, id);
    g->unwatched_kinds = unwatched_kinds;
    g->seq_base = seq_base;
    g_free(g->unwatched_via);
    g->unwatched_via = g_strdup(unwatched_via);
}

void sched_program_group_impl(SchedProgram *p, int32_t id, NetCommImpl impl)
{
    g_return_if_fail(id >= 0 && (guint)id < p->groups->len && impl < NET_IMPL_COUNT);
    ((SchedGroup *)g_ptr_array_index(p->groups, id))->impl = impl;
}

SchedProgram *sched_program_new(uint32_t n_ranks)
{
    g_assert(n_ranks >= 1);
    SchedProgram *p = g_new0(SchedProgram, 1);
    p->n_ranks = n_ranks;
    p->names.strings = g_ptr_array_new_with_free_func(g_free);
    p->names.ids = g_hash_table_new(g_str_hash, g_str_equal);
    p->groups = g_ptr_array_new_with_free_func(group_free);
    p->group_ids = g_hash_table_new(g_str_hash, g_str_equal);
    p->lists = g_ptr_array_new_with_free_func(list_free);
    p->list_index = g_hash_table_new(list_hash, list_equal);
    p->list_of_rank = g_new(int32_t, n_ranks);
    for (uint32_t r = 0; r < n_ranks; r++)
        p->list_of_rank[r] = -1;
    return p;
}

void sched_program_free(SchedProgram *p)
{
    if (!p)
        return;
    g_hash_table_destroy(p->names.ids);
    g_ptr_array_free(p->names.strings, TRUE);
    g_hash_table_destroy(p->group_ids);
    g_ptr_array_free(p->groups, TRUE);
    g_hash_table_destroy(p->list_index);
    g_ptr_array_free(p->lists, TRUE);
    g_free(p->list_of_rank);
    g_free(p);
}

uint32_t sched_program_name(SchedProgram *p, const char *s)
{
    gpointer v = g_hash_table_lookup(p->names.ids, s);
    if (v)
        return GPOINTER_TO_UINT(v) - 1;
    char *copy = g_strdup(s);
    uint32_t id = p->names.strings->len;
    g_ptr_array_add(p->names.strings, copy);
    g_hash_table_insert(p->names.ids, copy, GUINT_TO_POINTER(id + 1));
    return id;
}

int32_t sched_program_find_name(const SchedProgram *p, const char *s)
{
    gpointer v = g_hash_table_lookup(p->names.ids, s);
    return v ? (int32_t)(GPOINTER_TO_UINT(v) - 1) : -1;
}

const char *sched_program_name_str(const SchedProgram *p, uint32_t id)
{
    g_return_val_if_fail(id < p->names.strings->len, "?");
    return g_ptr_array_index(p->names.strings, id);
}

typedef struct {
    int32_t rank;
    uint32_t pos;
} RankPos;

static int cmp_rank_pos(const void *a, const void *b)
{
    int32_t x = ((const RankPos *)a)->rank, y = ((const RankPos *)b)->rank;
    return (x > y) - (x < y);
}

int32_t sched_program_add_group(SchedProgram *p, const char *name, const int32_t *ranks, uint32_t n)
{
    g_assert(n >= 1);
    SchedGroup *g = g_new0(SchedGroup, 1);
    g->name = g_strdup(name);
    g->n = n;
    g->ranks = g_memdup2(ranks, sizeof(int32_t) * n);
    /* Sort (rank, position) pairs once: O(n log n). */
    g_autofree RankPos *pairs = g_new(RankPos, n);
    for (uint32_t i = 0; i < n; i++) {
        g_assert(ranks[i] >= 0 && (uint32_t)ranks[i] < p->n_ranks);
        pairs[i].rank = ranks[i];
        pairs[i].pos = i;
    }
    qsort(pairs, n, sizeof *pairs, cmp_rank_pos);
    g->sorted = g_new(int32_t, n);
    g->sorted_pos = g_new(uint32_t, n);
    for (uint32_t i = 0; i < n; i++) {
        g_assert(i == 0 || pairs[i].rank != pairs[i - 1].rank);
        g->sorted[i] = pairs[i].rank;
        g->sorted_pos[i] = pairs[i].pos;
    }
    /* An arithmetic progression of members gets O(1) positions (sched_group_index_of). */
    int64_t step = n > 1 ? (int64_t)ranks[1] - ranks[0] : 1;
    bool progression = step >= 1 && step <= INT32_MAX;
    for (uint32_t i = 2; i < n && progression; i++)
        progression = (int64_t)ranks[i] - ranks[i - 1] == step;
    g->stride = progression ? (int32_t)step : 0;
    g_ptr_array_add(p->groups, g);
    int32_t id = (int32_t)(p->groups->len - 1);
    if (!g_hash_table_contains(p->group_ids, g->name))
        g_hash_table_insert(p->group_ids, g->name, GINT_TO_POINTER(id + 1));
    return id;
}

int32_t sched_program_find_group(const SchedProgram *p, const char *name)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(p->group_ids, name)) - 1;
}

int32_t sched_group_search(const SchedGroup *g, int32_t rank)
{
    uint32_t lo = 0, hi = g->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->sorted[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < g->n && g->sorted[lo] == rank)
        return (int32_t)g->sorted_pos[lo];
    return -1;
}

uint32_t sched_program_set_ops(SchedProgram *p, uint32_t rank, const SchedOp *ops, uint32_t len)
{
    g_assert(rank < p->n_ranks);
    SchedOpList probe = {(SchedOp *)ops, len};
    gpointer v = g_hash_table_lookup(p->list_index, &probe);
    uint32_t idx;
    if (v) {
        idx = GPOINTER_TO_UINT(v) - 1;
    } else {
        SchedOpList *l = g_new(SchedOpList, 1);
        l->ops = len ? g_memdup2(ops, sizeof(SchedOp) * len) : NULL;
        l->len = len;
        idx = p->lists->len;
        g_ptr_array_add(p->lists, l);
        g_hash_table_insert(p->list_index, l, GUINT_TO_POINTER(idx + 1));
    }
    p->list_of_rank[rank] = (int32_t)idx;
    return idx;
}

void sched_program_share_ops(SchedProgram *p, uint32_t rank, uint32_t list)
{
    g_assert(rank < p->n_ranks && list < p->lists->len);
    p->list_of_rank[rank] = (int32_t)list;
}

/* Validates ops[from..to) of one rank's list at nesting `depth`. */
static bool validate_range(const SchedProgram *p, uint32_t rank, const SchedOpList *l,
                           uint32_t from, uint32_t to, int depth, GError **error)
{
    for (uint32_t i = from; i < to; i++) {
        const SchedOp *op = &l->ops[i];
        if (op->kind >= SCHED_OP_KIND_COUNT || op->dtype >= SCHED_DTYPE_COUNT ||
            op->name >= p->names.strings->len) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "rank %u op %u: corrupt op (kind %u, dtype %u, name %u)", rank, i, op->kind,
                        op->dtype, op->name);
            return false;
        }
        SchedOpKind k = op->kind;
        if (k == SCHED_OP_REPEAT) {
            if (depth + 1 > SCHED_MAX_REPEAT_DEPTH) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u: repeats nest deeper than %d", rank, i,
                            SCHED_MAX_REPEAT_DEPTH);
                return false;
            }
            if (op->body_len == 0 || (uint64_t)i + 1 + op->body_len > to) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u: repeat body of %u ops does not fit its list", rank, i,
                            op->body_len);
                return false;
            }
            if (!validate_range(p, rank, l, i + 1, i + 1 + op->body_len, depth + 1, error))
                return false;
            i += op->body_len;
        } else if (k == SCHED_OP_COMPUTE) {
            if (op->dur_ns < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u (%s): negative duration", rank, i,
                            sched_program_name_str(p, op->name));
                return false;
            }
        } else if (sched_op_is_collective(k)) {
            if (op->group < 0 || (guint)op->group >= p->groups->len) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u (%s): no group %d", rank, i,
                            sched_program_name_str(p, op->name), op->group);
                return false;
            }
            const SchedGroup *g = sched_program_group(p, op->group);
            if (sched_group_index_of(g, (int32_t)rank) < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u (%s): rank %u is not a member of group '%s'", rank, i,
                            sched_program_name_str(p, op->name), rank, g->name);
                return false;
            }
            if (k == SCHED_OP_BROADCAST && sched_group_index_of(g, op->root) < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u (%s): broadcast root %d is not a member of group '%s'",
                            rank, i, sched_program_name_str(p, op->name), op->root, g->name);
                return false;
            }
        } else if (sched_op_is_p2p(k)) {
            if (op->group < 0 || (uint32_t)op->group >= p->n_ranks || (uint32_t)op->group == rank) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "rank %u op %u (%s): peer %d is not another rank in 0..%u", rank, i,
                            sched_program_name_str(p, op->name), op->group, p->n_ranks - 1);
                return false;
            }
        }
    }
    return true;
}

bool sched_program_validate(const SchedProgram *p, GError **error)
{
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        if (p->list_of_rank[r] < 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "rank %u has no program", r);
            return false;
        }
        const SchedOpList *l = sched_program_ops(p, r);
        if (!validate_range(p, r, l, 0, l->len, 0, error))
            return false;
    }
    return true;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return (b && a > UINT64_MAX / b) ? UINT64_MAX : a * b;
}

static uint64_t count_range(const SchedOpList *l, uint32_t from, uint32_t to)
{
    uint64_t n = 0;
    for (uint32_t i = from; i < to; i++) {
        const SchedOp *op = &l->ops[i];
        if (op->kind == SCHED_OP_REPEAT) {
            n = sat_add(n, sat_mul(op->times, count_range(l, i + 1, i + 1 + op->body_len)));
            i += op->body_len;
        } else {
            n = sat_add(n, 1);
        }
    }
    return n;
}

uint64_t sched_program_rank_op_count(const SchedProgram *p, uint32_t rank)
{
    const SchedOpList *l = sched_program_ops(p, rank);
    return count_range(l, 0, l->len);
}

uint64_t sched_program_total_op_count(const SchedProgram *p)
{
    uint64_t total = 0;
    const SchedOpList *last = NULL;
    uint64_t last_n = 0;
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        const SchedOpList *l = sched_program_ops(p, r);
        if (l != last) {
            uint64_t *cached = g_hash_table_lookup(seen, l);
            if (!cached) {
                cached = g_new(uint64_t, 1);
                *cached = count_range(l, 0, l->len);
                g_hash_table_insert(seen, (gpointer)l, cached);
            }
            last = l;
            last_n = *cached;
        }
        total = sat_add(total, last_n);
    }
    return total;
}

static void unroll_range(const SchedOpList *l, uint32_t from, uint32_t to, int32_t layer,
                         GArray *out)
{
    for (uint32_t i = from; i < to; i++) {
        const SchedOp *op = &l->ops[i];
        if (op->kind == SCHED_OP_REPEAT) {
            for (uint32_t it = 0; it < op->times; it++) {
                int32_t inner = op->layer_start >= 0 ? op->layer_start + (int32_t)it : layer;
                unroll_range(l, i + 1, i + 1 + op->body_len, inner, out);
            }
            i += op->body_len;
        } else {
            SchedOp copy = *op;
            if (copy.layer < 0)
                copy.layer = layer;
            g_array_append_val(out, copy);
        }
    }
}

SchedProgram *sched_program_unroll(const SchedProgram *p)
{
    SchedProgram *u = sched_program_new(p->n_ranks);
    for (guint i = 0; i < p->names.strings->len; i++)
        sched_program_name(u, g_ptr_array_index(p->names.strings, i));
    for (guint i = 0; i < p->groups->len; i++) {
        const SchedGroup *g = sched_program_group(p, (int32_t)i);
        int32_t id = sched_program_add_group(u, g->name, g->ranks, g->n);
        sched_program_group_watch(u, id, g->unwatched_kinds, g->seq_base, g->unwatched_via);
        sched_program_group_impl(u, id, g->impl);
    }
    /* Unroll each distinct list once, then map ranks through. */
    g_autofree int32_t *new_index = g_new(int32_t, p->lists->len);
    for (guint li = 0; li < p->lists->len; li++)
        new_index[li] = -1;
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        int32_t li = p->list_of_rank[r];
        if (li < 0)
            continue;
        if (new_index[li] < 0) {
            g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(SchedOp));
            const SchedOpList *l = g_ptr_array_index(p->lists, (guint)li);
            unroll_range(l, 0, l->len, -1, out);
            new_index[li] =
                (int32_t)sched_program_set_ops(u, r, (SchedOp *)(void *)out->data, out->len);
        } else {
            u->list_of_rank[r] = new_index[li];
        }
    }
    return u;
}
