/* model/cost.h — how long a compute op takes: a roofline per op (flops at the device's dense
 * peak x a compute efficiency, bytes at HBM bandwidth x a memory efficiency, whichever is
 * longer) plus a fixed launch cost, optionally overridden by a measured per-op profile.
 *
 * Defaults follow what other analytic models use (shared/reference/hardware.md): compute
 * efficiency 0.7, memory efficiency 0.6, 5 us per op. A profile is a CSV file with a header
 * `op,rows,seconds`: for an op name listed there, the time at `rows` is interpolated linearly
 * between the two nearest measured rows (extrapolated proportionally beyond the last, clamped
 * to the first below it); ops not listed keep the roofline.
 */
#ifndef MODEL_COST_H
#define MODEL_COST_H

#include <glib.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "kernel.h"

#define MODEL_COST_ERROR (model_cost_error_quark())
GQuark model_cost_error_quark(void);

typedef enum {
    MODEL_COST_ERROR_PARSE, /* the profile is not a valid `op,rows,seconds` table */
} ModelCostError;

typedef struct ModelCost ModelCost;

typedef struct {
    double compute_efficiency; /* (0, 1], default 0.7 */
    double memory_efficiency;  /* (0, 1], default 0.73 */
    int64_t launch_ns;         /* >= 0, default 5000: an op launched on its own */
    int64_t graph_launch_ns;   /* >= 0, default 900: an op replayed inside a CUDA graph */
} ModelCostParams;

void model_cost_params_defaults(ModelCostParams *p);

/* A cost model for `hw` (borrowed; must outlive the model); `params` is copied, NULL = the
 * defaults. Never fails. */
ModelCost *model_cost_new(const NetHardware *hw, const ModelCostParams *params);
void model_cost_free(ModelCost *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelCost, model_cost_free)

/* Loads a profile CSV (see above) from its `len` bytes (`data` need not be NUL-terminated; the
 * caller reads the file: src/input/, through src/util/inputfile.h). Errors
 * (MODEL_COST_ERROR_PARSE) name `display` (the file's path), the line and the column (bad
 * header, a non-number, negative rows or seconds, duplicate (op, rows), a NUL byte). All or
 * nothing: on error the model is unchanged. An op listed in a second profile replaces that
 * op's earlier points. doc/cost-model.md gives the format. */
bool model_cost_load_profile(ModelCost *c, const char *data, gsize len, const char *display,
                             GError **error);

/* Loads a measured table (model/kernel-table.h: ranksim's CSV, AIConfigurator's tables,
 * nccl-tests output), or an op profile when the file's header is `op,rows,seconds`, from its
 * `len` bytes; rows of ranksim's CSV for another device than this model's are skipped. Errors
 * (MODEL_KERNEL_TABLE_ERROR or MODEL_COST_ERROR) are one line naming `display`, the line and the
 * column. All or nothing. Loading several files adds them up. */
bool model_cost_load_perf_db(ModelCost *c, const char *data, gsize len, const char *display,
                             GError **error);

/* The measured table loaded so far (borrowed), or NULL. */
typedef struct ModelKernelTable ModelKernelTable;
const ModelKernelTable *model_cost_table(const ModelCost *c);

/* Whether op `name` has measured points (so model_cost_op_ns ignores flops and bytes). */
bool model_cost_is_profiled(const ModelCost *c, const char *name);

/* Duration in ns of op `name` processing `rows` token rows with `flops` floating-point
 * operations and `bytes` of HBM traffic, computing in `dtype` (its dense peak; a dtype the
 * device lacks falls back to bf16; a device with no bf16 peak or no HBM bandwidth makes that
 * term 0). The result is rounded up to whole ns. A profiled op uses the profile instead, with
 * no launch cost added (the measurement includes it). O(1) hash + O(log points). */
int64_t model_cost_op_ns(const ModelCost *c, const char *name, uint64_t rows, double flops,
                         double bytes, NetPeakDtype dtype);
/* The same, and what limits the duration (*bound, a SchedBound): the larger of the compute
 * and memory terms, the launch cost when it exceeds both, or the profile. `graphed`: the op is
 * replayed inside a CUDA graph, so its fixed cost is graph_launch_ns instead of launch_ns. */
int64_t model_cost_op_ns_bound(const ModelCost *c, const char *name, uint64_t rows, double flops,
                               double bytes, NetPeakDtype dtype, bool graphed, uint8_t *bound);

/* Duration in ns of an op a kernel model priced (`k`, model/kernel.h): the profile's time when
 * `name` is profiled (*bound = profile); else a measured table's when it covers k->key
 * (*bound = table; the key of a MoE layer is completed with `rows`: model_kernel_key_complete;
 * eager: the table's eager rows, else its graph rows lengthened to `host_ns` as below); else
 * the kernel's own time inside a CUDA graph, or,
 * launched eagerly, the longer of it and the host's dispatch `host_ns` (*bound = launch when
 * that is longer or the kernel's fixed time dominates). Rounded up to whole ns. */
int64_t model_cost_kernel_ns(const ModelCost *c, const char *name, uint64_t rows,
                             const ModelKernelTime *k, double host_ns, bool graphed,
                             uint8_t *bound);

/* The device the model prices for (borrowed). */
const NetHardware *model_cost_hardware(const ModelCost *c);

/* The host's dispatch of one eagerly launched op (launch_ns). */
double model_cost_eager_ns(const ModelCost *c);

#endif
