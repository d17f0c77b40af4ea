/* src/input/input-limits.h — the limits on what users write (doc/scenario-format.md "Limits"
 * lists them): ranks, counts, durations, lengths. Shared by the scenario loader and the `vllm
 * serve` argument parser, which check the same values. Constants only.
 *
 * Every count a scenario can ask for has a ceiling here (or next to its module: the sweep's
 * SWEEP_MAX_VARIANTS, model/arch.h's MODEL_MAX_LAYERS, import.h's IMPORT_MAX_RANKS), checked
 * while loading, before any work: a value beyond it is one line and exit 2. What the counts
 * multiply into (ranks x steps x layers, the served steps of N requests) is bounded by the work
 * limit, --max-rank-ops (RUNNER_DEFAULT_MAX_RANK_OPS), also checked before lowering or serving.
 */
#ifndef SRC_INPUT_LIMITS_H
#define SRC_INPUT_LIMITS_H

#include <stdint.h>

#define MAX_RANKS 1048576u
#define MAX_COUNT (UINT64_C(1) << 48)         /* elements; also tokens */
#define MAX_US 1e12                           /* compute duration, microseconds */
#define MAX_SECONDS 1e9                       /* timeouts, delays, crash times */
#define MAX_TIMES 10000000                    /* repeat iterations */
#define MAX_LAYER (INT64_C(1) << 30)          /* layer, layer_start */
#define MAX_FACTOR 1e6                        /* slowdown factor, link fault factor */
#define MAX_GROUP_MEMBERS (UINT64_C(1) << 24) /* summed over all groups */
#define MAX_SEQ_LEN 10000000                  /* prompt and context lengths; engine token limits */
#define MAX_BATCH_SEQS 1048576                /* sequences in one batch; max_num_seqs */
#define MAX_STEPS 1000000                     /* workload steps */
#define MAX_LAUNCH_US 1e6                     /* engine.launch_us */
#define MAX_REQUESTS 10000000u                /* requests of a workload, all sources together
                                                 (workload.requests, .trace, .poisson,
                                                 --requests): ~100 bytes each while served */

#endif
