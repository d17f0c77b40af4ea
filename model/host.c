/* model/host.c — vLLM's host time per step (model/host.h).
 *
 * APPROXIMATION, from few public figures (doc/cost-model.md, "Host time"):
 *  - per sequence 12.7 us: the scheduler's all-decode cost per running request measured at
 *    vLLM's concurrency cap with cProfile (openfabric-systems/simllm PR 204, vLLM 0.27.1,
 *    "12.7 us per request at the cap"); input preparation and output hand-off scale the same
 *    way and are folded in.
 *  - fixed 1.4 ms: what a synchronous V1 step adds to a one-request decode of Llama-3.2-1B —
 *    TPOT 2.73 ms measured (vLLM PR 17866, before its fast path) against ~1.3 ms of GPU work
 *    for 2.5 GB of weights and 16 layers of graphed kernels on an H100 (ranksim's kernel
 *    models). One data point: the largest uncertainty of the model.
 */
#include "host.h"

#define HOST_FIXED_NS 1.4e6
#define HOST_PER_SEQ_NS 12.7e3

double model_host_step_ns(uint32_t seqs)
{
    return HOST_FIXED_NS + HOST_PER_SEQ_NS * (double)seqs;
}

double model_host_exposed_ns(double host_ns, double gpu_ns, bool async_scheduling)
{
    if (!(host_ns > 0))
        return 0;
    if (!async_scheduling)
        return host_ns;
    return host_ns > gpu_ns ? host_ns - gpu_ns : 0;
}
