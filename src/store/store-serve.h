/* src/store/store-serve.h — the serving tables of a run (`steps`, `requests`, `serve_runs`;
 * doc/database.md): written inside the run's transaction by store.c, read back for reports. */
#ifndef SRC_STORE_SERVE_H
#define SRC_STORE_SERVE_H

#include <sqlite3.h>
#include <stdint.h>

#include "../../model/serve.h"

/* Inserts the rows of `sv` for run `id`. Returns NULL, or what failed ("insert steps") with
 * SQLite's message left on `db`. */
const char *store_serve_insert(sqlite3 *db, int64_t id, const ModelServe *sv);

/* Reads run `id`'s serving rows back (steps, requests, the KV figures, stopped; the workload
 * stays empty). NULL when the run served no requests or on a read error. Caller frees. */
ModelServe *store_serve_read(sqlite3 *db, int64_t id);

#endif
