/* tests/sched/test-queue.c — the event queue against a sorted-array oracle, and its
 * ordering invariants. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../sched/queue.h"

static int cmp_event(const void *a, const void *b)
{
    const SchedEvent *x = a, *y = b;
    if (sched_event_before(x, y))
        return -1;
    if (sched_event_before(y, x))
        return 1;
    return 0;
}

/* Random interleavings of push and pop; after every pop the queue's minimum must equal the
 * oracle's (a sorted array of the same events). */
Test(queue, matches_sorted_array_oracle)
{
    for (unsigned seed = 1; seed <= 20; seed++) {
        srand(seed);
        SchedQueue q;
        sched_queue_init(&q, 1); /* start tiny so growth is exercised */
        SchedEvent *oracle = calloc(20000, sizeof *oracle);
        size_t n = 0;
        int64_t floor_t = 0;
        for (int step = 0; step < 20000; step++) {
            if (n == 0 || rand() % 3 != 0) {
                int64_t t = floor_t + rand() % 50; /* many equal times: seq must break ties */
                uint32_t tag = (uint32_t)rand();
                uint64_t seq = sched_queue_push(&q, t, 1, tag, (uint64_t)step);
                /* keep the oracle sorted: insert after every event that sorts before it */
                SchedEvent ev = {t, seq, 1, tag, (uint64_t)step};
                size_t at = n;
                while (at > 0 && cmp_event(&ev, &oracle[at - 1]) < 0)
                    at--;
                memmove(oracle + at + 1, oracle + at, (n - at) * sizeof *oracle);
                oracle[at] = ev;
                n++;
            } else {
                SchedEvent got;
                cr_assert(sched_queue_pop(&q, &got));
                cr_assert_eq(got.time_ns, oracle[0].time_ns);
                cr_assert_eq(got.seq, oracle[0].seq);
                cr_assert_eq(got.target, oracle[0].target);
                cr_assert_eq(got.arg, oracle[0].arg);
                memmove(oracle, oracle + 1, (n - 1) * sizeof *oracle);
                n--;
                floor_t = got.time_ns; /* simulation never schedules into the past */
            }
            cr_assert_eq(sched_queue_len(&q), n);
        }
        /* Drain: time never decreases. */
        SchedEvent prev = {0}, cur;
        bool first = true;
        while (sched_queue_pop(&q, &cur)) {
            if (!first)
                cr_assert(!sched_event_before(&cur, &prev), "queue went backwards");
            prev = cur;
            first = false;
        }
        free(oracle);
        sched_queue_clear(&q);
    }
}

Test(queue, equal_times_pop_in_push_order)
{
    SchedQueue q;
    sched_queue_init(&q, 0);
    for (uint32_t i = 0; i < 100; i++)
        sched_queue_push(&q, 42, 0, i, 0);
    for (uint32_t i = 0; i < 100; i++) {
        SchedEvent ev;
        cr_assert(sched_queue_pop(&q, &ev));
        cr_assert_eq(ev.target, i);
    }
    SchedEvent ev;
    cr_assert_not(sched_queue_pop(&q, &ev));
    cr_assert_null(sched_queue_peek(&q));
    sched_queue_clear(&q);
}
