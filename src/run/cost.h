/* src/run/cost.h — price one kernel or collective (`ranksim cost`, `make validate-times`):
 * a CostQuery (src/input/cost-query.h) through the model the simulator itself uses for that
 * op, so what `cost` prints is what a run's op would take. */
#ifndef SRC_RUN_COST_H
#define SRC_RUN_COST_H

#include <glib.h>

#include "../../model/kernel-table.h"
#include "../../net/hardware.h"
#include "../input/cost-query.h"

typedef struct {
    double time_us;     /* predicted time */
    double tflops;      /* useful FLOPs / time, 1e12 per second; 0 for a collective */
    double gbps;        /* HBM bytes / time (kernels) or nccl-tests' busbw (collectives), 1e9/s */
    const char *bound;  /* "compute", "memory", "launch", "host", "network", "table" */
    const char *source; /* "analytic" or "table" */
    const char *detail; /* the kernel family or algorithm/protocol chosen (static storage) */
} CostResult;

/* Prices `q` on `hw`. Fails (SCENARIO_ERROR_INVALID) only for a query the model refuses, e.g.
 * a collective over more ranks than nodes x devices_per_node can hold. */
bool cost_predict(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error);

/* The same, looked up first in a measured table (`table` may be NULL; model/kernel-table.h):
 * covered, the result is the table's (source and bound "table"); not covered, the analytic
 * model's, its source saying why ("analytic (outside the table's range)"). A kind with no
 * analytic model yet is priced from the table alone, its times interpolated themselves. */
bool cost_predict_table(const NetHardware *hw, const ModelKernelTable *table, const CostQuery *q,
                        CostResult *out, GError **error);

/* The table's key of `q` (the same defaults and derived keys a table's rows get). */
void cost_query_key(const CostQuery *q, ModelKernelKey *key);

#endif
