/* tests/sched/test-program.c — the schedule IR: interning, group lookup, validation,
 * op counts and unrolling. */
#include <criterion/criterion.h>

#include "../../sched/program.h"

Test(program, identical_lists_are_stored_once)
{
    g_autoptr(SchedProgram) p = sched_program_new(64);
    uint32_t mm = sched_program_name(p, "matmul");
    SchedOp ops[] = {sched_op_repeat(100, 1, 0), sched_op_compute(mm, 1000, 16)};
    for (uint32_t r = 0; r < 64; r++)
        sched_program_set_ops(p, r, ops, 2);
    cr_assert_eq(p->lists->len, 1);
    ops[1].tokens = 17;
    sched_program_set_ops(p, 63, ops, 2);
    cr_assert_eq(p->lists->len, 2);
    cr_assert_eq(sched_program_rank_op_count(p, 0), 100);
}

Test(program, names_are_interned_densely)
{
    g_autoptr(SchedProgram) p = sched_program_new(1);
    cr_assert_eq(sched_program_name(p, "a"), 0);
    cr_assert_eq(sched_program_name(p, "b"), 1);
    cr_assert_eq(sched_program_name(p, "a"), 0);
    cr_assert_str_eq(sched_program_name_str(p, 1), "b");
}

Test(program, group_index_of_follows_given_order)
{
    g_autoptr(SchedProgram) p = sched_program_new(8);
    int32_t ranks[] = {6, 2, 4, 0};
    int32_t g = sched_program_add_group(p, "g", ranks, 4);
    const SchedGroup *grp = sched_program_group(p, g);
    cr_assert_eq(sched_group_index_of(grp, 6), 0);
    cr_assert_eq(sched_group_index_of(grp, 2), 1);
    cr_assert_eq(sched_group_index_of(grp, 4), 2);
    cr_assert_eq(sched_group_index_of(grp, 0), 3);
    cr_assert_eq(sched_group_index_of(grp, 1), -1);
    cr_assert_eq(sched_group_index_of(grp, 7), -1);
    cr_assert_eq(sched_program_find_group(p, "g"), g);
    cr_assert_eq(sched_program_find_group(p, "h"), -1);
}

Test(program, validate_rejects_broken_programs)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t n = sched_program_name(p, "x");
    int32_t ranks[] = {0};
    int32_t g = sched_program_add_group(p, "solo", ranks, 1);
    g_autoptr(GError) err = NULL;
    /* rank 1 has no program */
    SchedOp ok[] = {sched_op_compute(n, 1, 0)};
    sched_program_set_ops(p, 0, ok, 1);
    cr_assert_not(sched_program_validate(p, &err));
    cr_assert(strstr(err->message, "rank 1 has no program"));
    g_clear_error(&err);
    /* rank 1 uses a group it is not in */
    SchedOp bad[] = {sched_op_collective(SCHED_OP_ALL_REDUCE, n, g, 4, SCHED_DTYPE_BF16)};
    sched_program_set_ops(p, 1, bad, 1);
    cr_assert_not(sched_program_validate(p, &err));
    cr_assert(strstr(err->message, "not a member"));
    g_clear_error(&err);
    /* a repeat body running off the end */
    SchedOp rep[] = {sched_op_repeat(2, 3, 0), sched_op_compute(n, 1, 0)};
    sched_program_set_ops(p, 1, rep, 2);
    cr_assert_not(sched_program_validate(p, &err));
    cr_assert(strstr(err->message, "repeat body"));
    g_clear_error(&err);
    /* send to itself */
    SchedOp self[] = {sched_op_p2p(SCHED_OP_SEND, n, 1, 4, SCHED_DTYPE_BF16)};
    sched_program_set_ops(p, 1, self, 1);
    cr_assert_not(sched_program_validate(p, &err));
    g_clear_error(&err);
    sched_program_set_ops(p, 1, ok, 1);
    cr_assert(sched_program_validate(p, &err));
}

Test(program, unroll_expands_nested_repeats_with_layers)
{
    g_autoptr(SchedProgram) p = sched_program_new(1);
    uint32_t a = sched_program_name(p, "a"), b = sched_program_name(p, "b");
    /* repeat 3 layers from 5: { a; repeat 2 (inherit): { b } } ; a */
    SchedOp ops[] = {
        sched_op_repeat(3, 3, 5), sched_op_compute(a, 1, 0), sched_op_repeat(2, 1, -1),
        sched_op_compute(b, 2, 0), sched_op_compute(a, 3, 0),
    };
    sched_program_set_ops(p, 0, ops, 5);
    cr_assert_eq(sched_program_rank_op_count(p, 0), 3 * 3 + 1);
    g_autoptr(SchedProgram) u = sched_program_unroll(p);
    const SchedOpList *l = sched_program_ops(u, 0);
    cr_assert_eq(l->len, 10);
    int32_t layers[] = {5, 5, 5, 6, 6, 6, 7, 7, 7, -1};
    uint32_t names[] = {a, b, b, a, b, b, a, b, b, a};
    for (uint32_t i = 0; i < 10; i++) {
        cr_assert_eq(l->ops[i].layer, layers[i], "op %u layer %d", i, l->ops[i].layer);
        cr_assert_eq(l->ops[i].name, names[i]);
        cr_assert_neq(l->ops[i].kind, SCHED_OP_REPEAT);
    }
}

/* The total-work estimate checked before simulating (issue 9): rank-ops over all ranks with
 * repeats expanded; ranks sharing a list count each; 8 nested repeats of 10 M saturate. */
Test(program, total_op_count_expands_repeats_and_saturates)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    uint32_t a = sched_program_name(p, "a");
    SchedOp ops[] = {sched_op_repeat(4, 2, 0), sched_op_compute(a, 1, 0),
                     sched_op_compute(a, 1, 0), sched_op_compute(a, 1, 0)};
    sched_program_set_ops(p, 0, ops, 4);
    sched_program_set_ops(p, 1, ops, 4); /* shared with rank 0 */
    sched_program_set_ops(p, 2, ops + 3, 1);
    cr_assert_eq(sched_program_total_op_count(p), 9 + 9 + 1);

    g_autoptr(SchedProgram) big = sched_program_new(2);
    SchedOp nest[9];
    for (int i = 0; i < 8; i++)
        nest[i] = sched_op_repeat(10000000, (uint32_t)(8 - i), i == 0 ? 0 : -1);
    nest[8] = sched_op_compute(sched_program_name(big, "x"), 1, 0);
    sched_program_set_ops(big, 0, nest, 9);
    sched_program_set_ops(big, 1, nest, 9);
    cr_assert_eq(sched_program_total_op_count(big), UINT64_MAX);
}

/* Issue 29: groups by name in O(1) (the first of a name wins, as the linear search did), and
 * positions in O(1) for members in arithmetic progression, the same as the binary search. */
Test(program, group_lookup_and_positions_by_index)
{
    SchedProgram *p = sched_program_new(64);
    int32_t strided[] = {3, 11, 19, 27};  /* stride 8: a DP group */
    int32_t shuffled[] = {40, 5, 33, 12}; /* no progression: binary search */
    int32_t again[] = {0, 1};
    int32_t a = sched_program_add_group(p, "dp3", strided, 4);
    int32_t b = sched_program_add_group(p, "odd", shuffled, 4);
    sched_program_add_group(p, "dp3", again, 2);
    cr_assert_eq(sched_program_find_group(p, "dp3"), a);
    cr_assert_eq(sched_program_find_group(p, "odd"), b);
    cr_assert_eq(sched_program_find_group(p, "nope"), -1);
    const SchedGroup *g = sched_program_group(p, a);
    cr_assert_eq(g->stride, 8);
    for (int32_t r = 0; r < 64; r++) {
        int32_t want = -1;
        for (int32_t i = 0; i < 4; i++)
            if (strided[i] == r)
                want = i;
        cr_assert_eq(sched_group_index_of(g, r), want, "rank %d", r);
        cr_assert_eq(sched_group_search(g, r), want, "rank %d", r);
    }
    const SchedGroup *h = sched_program_group(p, b);
    cr_assert_eq(h->stride, 0);
    cr_assert_eq(sched_group_index_of(h, 33), 2);
    cr_assert_eq(sched_group_index_of(h, 34), -1);
    sched_program_free(p);
}
