/* src/output/diff-inputs.h — what two stored runs were given, compared: the first thing `ranksim diff`
 * prints ("inputs that differ"), so a difference in outcome can be traced to its cause. */
#ifndef SRC_DIFF_INPUTS_H
#define SRC_DIFF_INPUTS_H

#include <json-glib/json-glib.h>
#include <stdio.h>

#include "../store/store.h"

/* Writes "inputs that differ (A / B):" and one line per input that differs — model, weights,
 * layout, vLLM, hardware, overrides, time line, then the scenario files' differing lines with
 * their line numbers (at most 12) — or "inputs: the same ..." when none does. */
void diff_inputs_text(FILE *out, Store *st, const StoreRunInfo *a, const StoreRunInfo *b);
/* The same as an "inputs" member: an array of {input, a, b} (scenario lines as "line N"). */
void diff_inputs_json(JsonBuilder *jb, Store *st, const StoreRunInfo *a, const StoreRunInfo *b);

#endif
