/* src/trace.h — Chrome trace-event JSON (opens in Perfetto and chrome://tracing) for one
 * stored run, read back from the results database so `run --trace` and a later
 * `ranksim trace RUN` give the same file.
 *
 * Layout: one process per node ("ranksim run N: NAME — node K (ranks a-b)"; one process when
 * the run's hardware line gives no devices per node), one thread (track) per rank; each op a
 * complete event ("ph":"X") with its args; each collective instance linked across its ranks by
 * flow events; each diagnostic an instant event on every member of the group it names, else on
 * the rank it names, else global. Timestamps in microseconds of simulated time. Ops that never
 * completed extend to the run's end, are red ("cname":"terrible") and carry "incomplete": true
 * and "waiting_for": the ranks of their group that never arrived.
 */
#ifndef SRC_TRACE_H
#define SRC_TRACE_H

#include <glib.h>
#include <stdint.h>

#include "store.h"

/* Writes run `run_id` to `out_path` ("-" = stdout). Streams rows, so memory stays flat for
 * large runs. Returns false and sets `error` (G_IO_ERROR or STORE_ERROR) on failure, e.g. an
 * unknown run id or an unwritable file. */
bool trace_write(Store *s, int64_t run_id, const char *out_path, GError **error);

#endif
