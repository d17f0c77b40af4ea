/* src/output/explain.h — the hang story of a failed run, told from its diagnostics' detail JSON
 * (doc/database.md): the first divergence, the wait-for graph as text and as Graphviz DOT, its
 * cycles, the culprits, and what the hardware would have printed and when.
 *
 * Works on any SchedOutcome whose diagnostics carry the engine's detail objects — one just
 * simulated or one read back by src/query — so it never touches the database itself.
 * The graph: a node per rank left waiting in a collective (blocked at a deadlock, or waiting
 * when the watchdog fired), an AND edge from it to every member missing from its collective
 * (it needs all of them), culprits (finished, crashed, minority signature) marked. Costs:
 * O(diagnostics + blocked ranks + edges); the text folds rank lists ("0-1023") and caps long
 * lists, the DOT lists everything.
 */
#ifndef SRC_EXPLAIN_H
#define SRC_EXPLAIN_H

#include <stdio.h>

#include "../../sched/engine.h"

/* Writes the story to `out`. `title` names the run ("run 3 (three-way-cycle)"). For a healthy
 * outcome it says so in one line. Can't fail (write errors are the stream's). */
void explain_text(FILE *out, const char *title, const SchedOutcome *o);
/* explain_text for a recorded (imported) run: times are recorded, not simulated. */
void explain_text_recorded(FILE *out, const char *title, const SchedOutcome *o, bool recorded);
/* The story of an imported run: the recorded story when it failed, else what the verdict
 * (`status`: "ok", "inconclusive") means; then each rank's evidence (the import's "each rank's
 * evidence" note), and the import's own findings — NCCL WARN lines, wait-for edges, symptoms,
 * the culprit candidates with the lines to search for, what is missing and what to collect.
 * Never says "simulated". */
void explain_text_import(FILE *out, const char *title, const SchedOutcome *o,
                         const char *status, const GPtrArray *notes);

/* The wait-for graph as a Graphviz digraph (nodes "RANK: op (group, seq)", edges to missing
 * ranks, cycle edges red, culprits filled); a graph with only a label when nothing waits.
 * Caller frees. Can't fail. */
char *explain_dot(const char *title, const SchedOutcome *o);

/* The culprit ranks of the story (int32, ascending); empty when there is none. Caller frees. */
GArray *explain_culprits(const SchedOutcome *o);
/* The instance the story starts from — the first mismatch, or the first collective left
 * waiting: its group name (borrowed from the outcome's groups) and seq. False when none. */
bool explain_first_instance(const SchedOutcome *o, const char **group, int64_t *seq);

#endif
