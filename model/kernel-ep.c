/* model/kernel-ep.c — DeepEP dispatch and combine (model/kernel-ep.h).
 *
 * Parameters fitted by least (median |error| + p90 / 2) per mode and direction on NVIDIA
 * AIConfigurator's DeepEP tables for 8 x H100 SXM (ai-dynamo/aiconfigurator, systems/data/
 * h100_sxm/comm/sglang/0.5.12/wideep_deepep_{ll,normal}_perf), H200 held out:
 *   low-latency dispatch  10.5 us, 0.56 of the link (H100 median 3.4 %, p90 20 %; H200 8.5 %, 18 %)
 *   low-latency combine   11.5 us, 0.50                (4.6 %, 9.2 %;  4.0 %, 12 %)
 *   normal dispatch       26.5 us, 0.56 (20 SMs)       (5.1 %, 18 %;   5.3 %, 17 %)
 *   normal combine        42.0 us, 0.63                (9.1 %, 16 %;   9.9 %, 17 %)
 */
#include "kernel-ep.h"

#include <math.h>

typedef struct {
    double fixed_ns;
    double link_eff;
} EpFit;

static const EpFit ll_dispatch = {10500, 0.56}, ll_combine = {11500, 0.50};
static const EpFit n_dispatch = {26500, 0.56}, n_combine = {42000, 0.63};

ModelKernelTime model_ep_time(const ModelEpShape *s, double link_bw)
{
    const EpFit *f = s->low_latency ? (s->combine ? &ll_combine : &ll_dispatch)
                                    : (s->combine ? &n_combine : &n_dispatch);
    double ep = s->ep ? s->ep : 1;
    double copies = s->low_latency ? (double)s->topk : ep * (1.0 - pow(1.0 - 1.0 / ep, s->topk));
    double per_value = !s->combine && s->fp8 ? 1.0 + 4.0 / 128.0 : 2.0;
    ModelKernelTime t = {0};
    t.bytes = (double)s->tokens * copies * s->hidden * per_value * (ep - 1.0) / ep;
    double move = link_bw > 0 ? t.bytes / (link_bw * f->link_eff) * 1e9 : 0;
    t.ns = f->fixed_ns + move;
    model_kernel_set_bound(&t, f->fixed_ns, 0, move);
    return t;
}
