/* net/fabric-rates.h — max-min fair rates by progressive filling, for one set of flows that
 * share bandwidth (net/fabric.c calls it once per connected component of contended flows).
 *
 * A class stands for `count` identical flows: the same shared resources with the same weights
 * and the same own cap (the fabric makes one class per group and tier in contention). Every
 * flow of a class gets the class's rate. A flow of weight w on resource r takes w x its rate
 * of r's capacity. Progressive filling (Bertsekas and Gallager, "Data Networks", 2nd ed.,
 * section 6.5.2): all unfrozen flows rise together by the largest step no resource or cap
 * forbids; flows at their cap or on a saturated resource freeze; repeat until all are frozen.
 * With integer weights and counts (member counts) every sum of weights is exact, so a class of
 * n flows gets bit for bit the rate n separate flows would, and the rates do not depend on the
 * order of the classes or of their resources.
 *
 * Costs: O(rounds x (classes + their resource uses + resources)); rounds <= classes. The
 * solver owns scratch sized to the resource count; no allocation per call once the scratch
 * has grown to the largest set. Never fails.
 */
#ifndef NET_FABRIC_RATES_H
#define NET_FABRIC_RATES_H

#include <stdint.h>

typedef struct {
    uint32_t res;  /* resource index, < the solver's n_res */
    double weight; /* > 0: the flow's members behind that resource */
} NetRateUse;

typedef struct {
    const NetRateUse *uses; /* borrowed; distinct resources */
    uint32_t n_uses;
    double cap;     /* the flow's own bandwidth limit, B/s */
    uint32_t count; /* identical flows this class stands for, >= 1 */
} NetRateClass;

typedef struct NetRateSolver NetRateSolver;

/* `res_cap` (n_res capacities, B/s) is borrowed and must outlive the solver. */
NetRateSolver *net_rates_new(uint32_t n_res, const double *res_cap);
void net_rates_free(NetRateSolver *s);
/* Writes each class's per-flow max-min fair rate into rate[0..n). */
void net_rates_solve(NetRateSolver *s, const NetRateClass *cls, uint32_t n, double *rate);

#endif
