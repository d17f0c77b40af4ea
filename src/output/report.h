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

typedef struct {
    int64_t run_id; /* -1 when not stored */
    const char *name;
    const char *kind;
    const char *path;       /* scenario path */
    const char *db_path;    /* may be NULL */
    const char *trace_path; /* may be NULL */
    const char *status;     /* "ok" | "failed" */
    int exit_code;
    double wall_ms;
    const char *hardware;           /* one line describing the fabric, may be NULL */
    const GPtrArray *not_simulated; /* char*: settings given but not simulated, may be NULL */
    const ModelServe *serve;        /* requests served, or NULL */
    /* what the run ran, for the header (each may be NULL): model, parallel layout, vLLM,
     * what the command line changed, the weights' formats per tensor group */
    const char *model, *layout, *vllm, *overrides, *weights;
} ReportRun;

/* Writes the text report to `out`: the one-line outcome (cut to the terminal's width), the
 * story, the diagnostics, the per-rank table. Can't fail (write errors are the stream's). */
void report_text(FILE *out, const ReportRun *run, const SchedOutcome *o);
/* "stored as run N in DB" and the trace's path: the report's last lines, after the memory
 * plan and the serving summary. */
void report_footer(FILE *out, const ReportRun *run);
/* The report as a JSON object (text, caller frees). Diagnostic details are embedded as
 * objects. */
char *report_json(const ReportRun *run, const SchedOutcome *o);

/* The per-rank memory table in GiB (identical ranks folded), the KV budget, and with `detail`
 * every itemised tensor of each distinct rank. */
void report_memory_text(FILE *out, const ModelMemPlan *m, bool detail);
/* report_json plus a "memory" member (per-rank components, budget; items when `detail`). */
char *report_json_with_memory(const ReportRun *run, const SchedOutcome *o, const ModelMemPlan *m,
                              bool detail);

/* Serving (report-serve.c): TTFT and TPOT percentiles, throughput, the load per DP rank. */
void report_serve_text(FILE *out, const ModelServe *sv);
/* Adds a "serving" member to the object being built. */
void report_serve_json(JsonBuilder *b, const ModelServe *sv);


#endif
