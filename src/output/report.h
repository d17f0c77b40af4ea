/* src/output/report.h — what a run prints: the text report (outcome first, then diagnostics, then a
 * per-rank summary) and the same content as one JSON object for --json.
 *
 * Per-rank rows that are identical apart from the rank number are folded into one row with a
 * rank range ("0-1023"), so a 1,024-rank healthy run prints a few lines, not a thousand.
 */
#ifndef SRC_REPORT_H
#define SRC_REPORT_H

#include <stdio.h>

#include <json-glib/json-glib.h>

#include "../../model/memory.h"
#include "../../model/serve.h"
#include "../../sched/engine.h"
#include "../store/store.h"


/* `run` is the run's header (src/store/store.h): its id (<= 0: not stored), name, kind, status,
 * exit code, wall time, what it ran, db_path and trace_path for the footer, serve. */

/* Writes the text report to `out`: the one-line outcome (cut to the terminal's width), the
 * story, the diagnostics, the per-rank table. Can't fail (write errors are the stream's). */
void report_text(FILE *out, const StoreRunInfo *run, const SchedOutcome *o);
/* The same; the per-rank table, past REPORT_RANK_ROWS rows once identical ranks are folded,
 * becomes one row per state unless `all_ranks` (report --all-ranks). */
void report_text_ranks(FILE *out, const StoreRunInfo *run, const SchedOutcome *o, bool all_ranks);
#define REPORT_RANK_ROWS 32
/* "stored as run N in DB" and the trace's path: the report's last lines, after the memory
 * plan and the serving summary. */
void report_footer(FILE *out, const StoreRunInfo *run);
/* The report as a JSON object (text, caller frees). Diagnostic details are embedded as
 * objects. */
char *report_json(const StoreRunInfo *run, const SchedOutcome *o);

/* The per-rank memory table in GiB (identical ranks folded), the KV budget, and with `detail`
 * every itemised tensor of each distinct rank. */
void report_memory_text(FILE *out, const ModelMemPlan *m, bool detail);
/* report_json plus a "memory" member (per-rank components, budget; items when `detail`). */
char *report_json_with_memory(const StoreRunInfo *run, const SchedOutcome *o, const ModelMemPlan *m,
                              bool detail);

/* Serving (report-serve.c): TTFT and TPOT percentiles, throughput, the load per DP rank. */
void report_serve_text(FILE *out, const ModelServe *sv);
/* Adds a "serving" member to the object being built. */
void report_serve_json(JsonBuilder *b, const ModelServe *sv);


#endif
