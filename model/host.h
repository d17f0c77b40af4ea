/* model/host.h — vLLM's host time per engine step: what the CPU does between two forwards
 * (the scheduler's schedule() and update_from_output(), the model runner's input preparation,
 * the sampler's Python side, the hand-off of sampled tokens to the output processor).
 *
 * The model (doc/cost-model.md, "Host time"): a fixed part plus a part per scheduled sequence.
 * With async scheduling (vLLM's default since PR 27614) the host prepares step n + 1 while
 * step n runs, so only what exceeds the step's GPU time shows; without it the whole of it sits
 * between every two steps. Pure functions; no state.
 */
#ifndef MODEL_HOST_H
#define MODEL_HOST_H

#include <stdbool.h>
#include <stdint.h>

/* The host's work for one step of `seqs` scheduled sequences, ns. */
double model_host_step_ns(uint32_t seqs);

/* What of it shows in the step's time: all of it without async scheduling, else what exceeds
 * `gpu_ns` (the step's GPU work on the rank). */
double model_host_exposed_ns(double host_ns, double gpu_ns, bool async_scheduling);

#endif
