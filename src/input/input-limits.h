/* src/input/input-limits.h — the limits on what users write (doc/scenario-format.md lists them):
 * ranks, counts, durations, lengths. Shared by the scenario loader and the `vllm serve` argument
 * parser, which check the same values. Constants only.
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

#endif
