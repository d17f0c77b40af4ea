/* tests/bench/bench-model.c — `make bench`, second part: load + lower + simulate a model
 * scenario end to end (no database: --timeline none equivalent), best of N, and peak RSS.
 *   bench-model SCENARIO [REPS]
 * The target for the 1,024-rank GLM-5 prefill (scenarios/glm5-1024-ranks-prefill.yaml) is
 * under 2 s on the 2-core CI machine. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/run/runner.h"

static long peak_rss_kib(void)
{
    g_autofree char *status = NULL;
    if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
        return -1;
    const char *p = strstr(status, "VmHWM:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-model SCENARIO [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    double best_total = 1e30, best_load = 0, best_sim = 0;
    uint64_t ops = 0;
    uint32_t ranks = 0;
    for (int i = 0; i < reps; i++) {
        gint64 t0 = g_get_monotonic_time();
        g_autoptr(GError) err = NULL;
        g_autoptr(Scenario) sc = runner_load(argv[1], NULL, &err);
        if (!sc) {
            fprintf(stderr, "bench-model: %s\n", err->message);
            return 1;
        }
        gint64 t1 = g_get_monotonic_time();
        SchedConfig c = scenario_engine_config(sc);
        c.timeline = SCHED_TIMELINE_NONE;
        g_autoptr(SchedOutcome) o = sched_engine_run(sc->program, &c);
        gint64 t2 = g_get_monotonic_time();
        double total = (double)(t2 - t0) / 1e6;
        if (total < best_total) {
            best_total = total;
            best_load = (double)(t1 - t0) / 1e6;
            best_sim = (double)(t2 - t1) / 1e6;
        }
        ops = o->rank_ops;
        ranks = o->n_ranks;
    }
    printf("%s: %u ranks, %" G_GUINT64_FORMAT " rank-ops; load+lower %.3f s, simulate %.3f s, "
           "total %.3f s (best of %d); peak RSS %.1f MiB\n",
           argv[1], ranks, ops, best_load, best_sim, best_total, reps, peak_rss_kib() / 1024.0);
    return 0;
}
