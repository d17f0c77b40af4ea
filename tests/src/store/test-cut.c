/* tests/src/store/test-cut.c — time lines cut into segments as records arrive
 * (src/store/store-cut.h): the rows equal the records whatever the order they come in (a rank
 * out of order is cut again at commit), a segment met again after its nodes left the ring of
 * kept nodes is found and not staged again, and ranks in step share their parts. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "timeline-test.h"

/* `n` ranks in one group. */
static SchedProgram *program(uint32_t n)
{
    SchedProgram *p = sched_program_new(n);
    g_autofree int32_t *all = g_new(int32_t, n);
    for (uint32_t r = 0; r < n; r++)
        all[r] = (int32_t)r;
    sched_program_add_group(p, "tp", all, n);
    sched_program_name(p, "op");
    return p;
}

typedef struct {
    uint64_t idx, seq;
    int64_t t;
} Cursor;

/* One record of rank `rank`: a collective when `coll`, `tokens` telling shapes apart. */
static void rec(GArray *out, uint32_t rank, Cursor *c, bool mark, bool coll, uint64_t tokens)
{
    SchedRecord x = {
        .rank = rank,
        .kind = coll ? SCHED_OP_ALL_REDUCE : SCHED_OP_COMPUTE,
        .dtype = coll ? SCHED_DTYPE_BF16 : 0,
        .flags = mark ? SCHED_RECORD_SEGMENT : 0,
        .layer = -1,
        .group = coll ? 0 : -1,
        .idx = c->idx++,
        .seq = coll ? ++c->seq : 0,
        .count = coll ? 1024 : 0,
        .tokens = tokens,
        .start_ns = c->t,
        .end_ns = c->t + 100,
    };
    c->t += 150;
    g_array_append_val(out, x);
}

/* Step shapes: A = 5 records; A2 = A's first 3, then 2 of its own (a node with two children). */
static void shape(GArray *out, uint32_t rank, Cursor *c, bool second)
{
    for (uint32_t k = 0; k < 5; k++)
        rec(out, rank, c, k == 0, k % 2 == 1, second && k >= 3 ? 7 : 1);
}

static Store *open_tmp(void)
{
    g_autofree char *path = store_test_path("ranksim-cut-XXXXXX", "t.db");
    g_autoptr(GError) err = NULL;
    Store *s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    return s;
}

/* Three ranks in step, a fourth whose records come out of idx order twice (across a part's
 * start and inside a part): every row reads back; the in-step ranks share one line. */
Test(cut, a_rank_out_of_order_is_cut_again_and_reads_back)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(4);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c[4] = {{0}};
    for (uint32_t j = 0; j < 6; j++)
        for (uint32_t r = 0; r < 4; r++)
            shape(recs, r, &c[r], j % 2 == 1);
    /* rank 3's records are every 4th block of 5: swap its steps' boundary records (step 1's
     * last after step 2's first), then two records inside step 4 */
    SchedRecord *x = (SchedRecord *)(void *)recs->data;
    guint a = (1 * 4 + 3) * 5 + 4, b = (2 * 4 + 3) * 5;
    cr_assert_eq(x[a].rank, 3);
    cr_assert_eq(x[b].flags, SCHED_RECORD_SEGMENT);
    SchedRecord tmp = x[a];
    x[a] = x[b];
    x[b] = tmp;
    a = (4 * 4 + 3) * 5 + 1;
    tmp = x[a];
    x[a] = x[a + 1];
    x[a + 1] = tmp;
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    /* stated before the commit: rank 3's line apart; at the commit rank 3, keyed again from
     * its records in idx order, shares the line of the ranks with the same records (as
     * before records were cut as they came): 6 parts */
    cr_assert_eq(z.timelines, 2);
    cr_assert_eq(store_test_scalar(s, "SELECT count(DISTINCT timeline) FROM rank_timelines"), 1);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_ops"), 0);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 6);
    cr_assert_eq(store_test_scalar(s, "SELECT count(DISTINCT segment) FROM timeline_segments"),
                 2);
}

/* A segment met again after more than the ring's worth of nodes (262,144) was made since: its
 * nodes, and the sibling and the children only the ring's lists led to, are found in the table;
 * nothing is staged for it again and it is stored once. */
Test(cut, a_segment_seen_long_ago_is_found_again)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(1);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c = {0};
    shape(recs, 0, &c, false);
    shape(recs, 0, &c, true);
    const uint64_t filler = 270000; /* one part of distinct records */
    for (uint64_t i = 0; i < filler; i++)
        rec(recs, 0, &c, i == 0, false, 100 + i);
    shape(recs, 0, &c, true);
    shape(recs, 0, &c, false);
    shape(recs, 0, &c, true);
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    cr_assert_eq(z.staged, 5 + 2 + filler, "staged %" G_GUINT64_FORMAT, (uint64_t)z.staged);
    cr_assert_eq(store_test_scalar(s, "SELECT count(DISTINCT segment) FROM timeline_segments"),
                 3);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_segments"),
                 5 + 5 + (int64_t)filler);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 6);
    assert_rows_are(s, id, recs);
}

/* Ranks in step stage one copy of each step between them, and a step of a shape met before
 * stages nothing. */
Test(cut, ranks_in_step_stage_each_shape_once)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(8);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c[8] = {{0}};
    for (uint32_t j = 0; j < 20; j++)
        for (uint32_t r = 0; r < 8; r++)
            shape(recs, r, &c[r], j % 3 == 0);
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    cr_assert_eq(z.timelines, 1);
    cr_assert_eq(z.staged, 5 + 2);
    cr_assert_eq(z.rows, 100);
    assert_rows_are(s, id, recs);
}

/* Rank 0 is cut (its first record is marked); its second part, made relative, holds the very
 * records rank 1 (no mark: prefix nodes of its own records) runs from time 0. Rank 1 must not
 * take rank 0's nodes: their first record carries rank 0's mark, which would store rank 1's
 * line as segments (the previous code, whose chains were absolute, stored it in
 * timeline_ops). */
Test(cut, a_prefix_rank_does_not_follow_a_cut_rank_s_part)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(2);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c0 = {0}, c1 = {0};
    rec(recs, 0, &c0, true, false, 99); /* part 1: one record of its own */
    shape(recs, 0, &c0, false);         /* part 2: A, from idx 1 */
    for (uint32_t k = 0; k < 5; k++)    /* rank 1: A's records, unmarked, from idx 0 */
        rec(recs, 1, &c1, false, k % 2 == 1, 1);
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    cr_assert_eq(z.timelines, 2);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_ops"), 5);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 2);
}

/* The other way round: rank 1 (no mark) makes the nodes of A first; rank 0's second part is A,
 * and a later part of rank 0 comes out of order, so its line is cut again from its records.
 * Its second part's first record must still carry rank 0's mark (three parts, as the previous
 * code cut them), not rank 1's unmarked copy. */
Test(cut, a_cut_rank_does_not_follow_a_prefix_rank_s_nodes)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(2);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c0 = {0}, c1 = {0};
    for (uint32_t k = 0; k < 5; k++)
        rec(recs, 1, &c1, false, k % 2 == 1, 1);
    rec(recs, 0, &c0, true, false, 99);
    shape(recs, 0, &c0, false);
    shape(recs, 0, &c0, true);
    SchedRecord *x = (SchedRecord *)(void *)recs->data;
    guint a = recs->len - 2; /* part 3's last two records swapped */
    SchedRecord tmp = x[a];
    x[a] = x[a + 1];
    x[a + 1] = tmp;
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    assert_rows_are(s, id, recs);
    cr_assert_eq(z.timelines, 2);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_ops"), 5);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 3);
}

/* A rank out of order with more records than the previous code sorted in memory (2^19): its
 * line went in the order recorded, and is cut so again (a part begins where a marked record
 * came), not sorted whole in memory. */
Test(cut, a_long_rank_out_of_order_goes_in_the_order_recorded)
{
    g_autoptr(Store) s = open_tmp();
    g_autoptr(SchedProgram) p = program(1);
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    Cursor c = {0};
    const uint64_t n = ((uint64_t)1 << 19) + 16;
    for (uint64_t i = 0; i < n; i++)
        rec(recs, 0, &c, i == 0 || i == 100, false, 1);
    SchedRecord *x = (SchedRecord *)(void *)recs->data;
    SchedRecord tmp = x[99]; /* the mark at idx 100 comes before idx 99 */
    x[99] = x[100];
    x[100] = tmp;
    StoreTimelinesSize z;
    int64_t id = stream(s, p, recs, &z);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 2);
    cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_segments WHERE segment ="
                                      " (SELECT segment FROM timeline_parts WHERE part = 0)"),
                 99);
    assert_rows_are(s, id, recs);
}

/* Two ranks with the same records, the second's out of idx order inside a step: they share
 * one time line, as when every line was keyed by the sum of its records' hashes (whatever
 * their order) — the rank out of order is keyed again at the commit from its records in idx
 * order, not by the order they came in. Both orders of the ranks. */
Test(cut, a_rank_out_of_order_shares_the_line_of_its_equal_in_order)
{
    for (uint32_t late = 0; late < 2; late++) {
        g_autoptr(Store) s = open_tmp();
        g_autoptr(SchedProgram) p = program(2);
        g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        Cursor c[2] = {{0}};
        for (uint32_t j = 0; j < 3; j++)
            for (uint32_t r = 0; r < 2; r++)
                shape(recs, r, &c[r], false);
        SchedRecord *x = (SchedRecord *)(void *)recs->data;
        guint a = (1 * 2 + late) * 5 + 2; /* rank `late`'s second step: records 2, 3 swapped */
        cr_assert_eq(x[a].rank, late);
        SchedRecord tmp = x[a];
        x[a] = x[a + 1];
        x[a + 1] = tmp;
        StoreTimelinesSize z;
        int64_t id = stream(s, p, recs, &z);
        assert_rows_are(s, id, recs);
        cr_assert_eq(store_test_scalar(s, "SELECT count(DISTINCT timeline) FROM rank_timelines"),
                     1, "rank %u out of order", late);
        cr_assert_eq(store_test_scalar(s, "SELECT count(*) FROM timeline_parts"), 3);
    }
}
