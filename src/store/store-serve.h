/* src/store/store-serve.h — the serving tables of a run (`steps`, `requests`, `serve_runs`;
 * doc/database.md): written inside the run's transaction by store.c, read back for reports. */
#ifndef SRC_STORE_SERVE_H
#define SRC_STORE_SERVE_H

#include <sqlite3.h>
#include <stdint.h>

#include "../../model/serve.h"
#include "store-stmt.h"

/* Inserts the rows of `sv` for run `id` with the connection's kept statements. Returns NULL,
 * or what failed ("insert steps") with SQLite's message left on the connection. */
const char *store_serve_insert(StoreStmts *c, int64_t id, const ModelServe *sv);

/* Reads run `id`'s serving rows back (steps, requests, the KV figures, stopped; the workload
 * stays empty). NULL when the run served no requests or on a read error. Caller frees. */
ModelServe *store_serve_read(sqlite3 *db, int64_t id);

#endif
