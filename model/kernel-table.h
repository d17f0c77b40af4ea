/* model/kernel-table.h — measured kernel and collective times (a "perf database") that
 * override the analytic kernel models where they cover a shape.
 *
 * A table is a set of measured points, each a ModelKernelKey (model/kernel.h: kind, words such
 * as the dtype, numeric dims such as m, n, k) and a time. Formats, told apart by the header
 * (doc/cost-model.md, "Measured tables"):
 *  - ranksim's own CSV `kind,device,args,measured_us[,source]` (tests/data/times/README.md),
 *    args the `ranksim cost` key=value words; rows of another device than the table's are
 *    skipped, `*` matches any device;
 *  - NVIDIA AIConfigurator's perf tables exported to CSV, and its older `.txt` tables, which
 *    are the same CSV (its collectors' log_perf writes `framework,version,device,op_name,
 *    kernel_source,` + the op's columns): GEMM, context / generation attention, MoE, NCCL and
 *    vLLM's custom all-reduce, `latency` in ms;
 *  - nccl-tests' text output (the out-of-place time of each size).
 *
 * Lookup works in utilization space: each measured point becomes the ratio measured /
 * analytic (the model's own time for that point's shape); the query's ratio is interpolated
 * multilinearly in log(1 + dim) over the table's grid cell around it and multiplied by the
 * query's analytic time. An exact hit gives the measured time; a query outside the table's
 * range in any dim, or whose grid cell lacks a corner, is not covered (the caller keeps the
 * analytic time). Kinds with no analytic model interpolate the times themselves.
 *
 * Ownership: the table owns its points and word strings; it is immutable between loads. A
 * lookup allocates nothing: O(groups + dims x log(axis) + 2^fractional dims) plus an analytic
 * call per cell corner. Loading is O(rows) plus a sort of each axis.
 */
#ifndef MODEL_KERNEL_TABLE_H
#define MODEL_KERNEL_TABLE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "kernel.h"

#define MODEL_KERNEL_TABLE_ERROR (model_kernel_table_error_quark())
GQuark model_kernel_table_error_quark(void);

typedef enum {
    MODEL_KERNEL_TABLE_ERROR_PARSE, /* not a table of a known format, or a bad cell */
} ModelKernelTableError;

typedef struct ModelKernelTable ModelKernelTable;

/* An empty table for `device` (a hardware name such as "h100": rows of ranksim's CSV naming
 * another device are skipped). Never fails. */
ModelKernelTable *model_kernel_table_new(const char *device);
void model_kernel_table_free(ModelKernelTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelKernelTable, model_kernel_table_free)

/* Loads one table from its `len` bytes (the caller reads the file, through
 * src/util/inputfile.h; `data` need not be NUL-terminated). Errors (MODEL_KERNEL_TABLE_ERROR_
 * PARSE) are one line `display:LINE: column 'NAME': what, (valid: ...)`: an unknown format,
 * kind, key, dtype or op, a missing column, a non-numeric cell, a time <= 0, the same point
 * twice in the file. All or nothing: on error the table is unchanged. A point loaded again from
 * a later file replaces the earlier one. */
bool model_kernel_table_load(ModelKernelTable *t, const char *data, gsize len, const char *display,
                             GError **error);

/* Measured points held. */
guint model_kernel_table_size(const ModelKernelTable *t);

/* The analytic time in ns of `key` (a complete key of the table's kind), or false when no model
 * prices that kind; `user` is the lookup's. */
typedef bool (*ModelKernelAnalyticFn)(const ModelKernelKey *key, const void *user, double *ns);

/* Why a lookup was or was not covered (static strings). */
typedef struct {
    bool covered;
    bool exact;      /* the query is a measured point */
    guint corners;   /* measured points interpolated between */
    const char *why; /* when not covered: what was missing */
} ModelKernelTableHit;

/* The time in ns of `key` from the table: true and *ns when covered. `query_ns` is the analytic
 * time of `key` itself (the caller has it); `analytic` prices the table's points (NULL, or
 * returning false: the times are interpolated themselves and `query_ns` is not used). `hit`
 * may be NULL. Keys of kind NONE, or a MoE key whose tokens are not known, are never covered. */
bool model_kernel_table_lookup(const ModelKernelTable *t, const ModelKernelKey *key,
                               double query_ns, ModelKernelAnalyticFn analytic, const void *user,
                               double *ns, ModelKernelTableHit *hit);

/* The analytic time of a complete key of a kind model/ prices (GEMM: model_gemm_time, eager:
 * the longer of it and model_gemm_host_ns; MoE: model_moe_time), `user` a const NetHardware *.
 * Attention: the hook for model/kernel-attn.h (false until it lands); collectives: false (the
 * fabric's model is net/'s: the caller passes its own). */
bool model_kernel_key_analytic(const ModelKernelKey *key, const void *user, double *ns);

/* Completes a MoE key made by model_moe_local_time, which does not know the op's token rows:
 * tokens = rows, topk = routes / rows. Other keys are left as they are. */
void model_kernel_key_complete(ModelKernelKey *key, uint64_t rows);

/* "gemm", "attention", "moe", "collective"; NULL for NONE. */
const char *model_kernel_kind_name(ModelKernelKind k);

#endif
