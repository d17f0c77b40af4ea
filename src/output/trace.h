/* src/output/trace.h — Chrome trace-event JSON (opens in Perfetto and chrome://tracing) for one
 * stored run, read back from the results database so `run --trace` and a later
 * `ranksim trace RUN` give the same file.
 *
 * Layout: one process per node ("ranksim run N: NAME — node K (ranks a-b)"; one process when
 * the run's hardware line gives no devices per node), one thread (track) per rank; each op a
 * begin/end pair ("ph":"B" then "E", both with its name and args, the end written exactly:
 * a viewer that adds a duration in doubles would misplace it), and an op that overlaps one
 * still running on its rank (an eager send) on an extra track "rank N (overlapping)"; each collective instance linked across its ranks by
 * flow events; each diagnostic an instant event on every member of the group it names, else on
 * the rank it names, else global. Timestamps in microseconds of simulated time. Ops that never
 * completed last until what ends the hang on hardware — vLLM's execute-model timeout
 * (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, 300 s after the hang began, the hang_surface
 * diagnostic's rpc_timeout_s), before any process-group watchdog — or to the run's end when
 * the run stopped first (a simulated watchdog) or there is no such timeout (one rank); they are
 * red ("cname":"terrible") and carry "incomplete": true and "waiting_for": the ranks of their
 * group that never arrived.
 *
 * The first view: a viewer opens on the whole time line, and a hang's wait (300 s) can dwarf
 * the work before it (39 us) by seven orders of magnitude. So, unless `full_wait`, when the
 * hang's end lies past twice the end of the completed work, everything is drawn only up to
 * that cut: a blocked slice ends there, named "NAME (blocked 300.000 s; cut)" with
 * "blocked_until_us" (its true end) in its args, and a diagnostic later than the cut sits at
 * the cut, named "at 600.000 s: ..." with "at_us" in its args; the metadata gives
 * "wait_cut_at_us" and "hang_end_us". Times before the cut are never moved.
 */
#ifndef SRC_TRACE_H
#define SRC_TRACE_H

#include <glib.h>
#include <stdint.h>

#include "../store/store-trace.h"
#include "../store/store.h"

/* What part of a run to write: the op rows the store reads (src/store/store-trace.h; all
 * fields neutral: everything). */
typedef StoreOpFilter TraceFilter;
#define TRACE_FILTER_ALL STORE_OP_FILTER_ALL

/* Parses the command line's --ranks "0-3,8", --layers "0-2" or "5" and --window "START:END"
 * (each a number with ns, us, ms or s, microseconds without a unit; either side may be
 * empty). NULL arguments are not filtered. False with a G_OPTION_ERROR naming the flag. */
bool trace_filter_parse(TraceFilter *f, const char *ranks, const char *layers,
                        const char *window, GError **error);
void trace_filter_clear(TraceFilter *f);

/* Writes run `run_id` to `out_path` ("-" = stdout). Streams rows, so memory stays flat for
 * large runs. Returns false and sets `error` (G_IO_ERROR or STORE_ERROR) on failure, e.g. an
 * unknown run id or an unwritable file. */
bool trace_write(Store *s, int64_t run_id, const char *out_path, GError **error);
/* The same for part of the run (`filter` may be NULL); `full_wait` draws a hang's wait to its
 * true end instead of the cut. */
bool trace_write_filtered(Store *s, int64_t run_id, const char *out_path,
                          const TraceFilter *filter, bool full_wait, GError **error);

#endif
