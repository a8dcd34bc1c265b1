/*
 * Every workload, in the order of the report: one line each. A workload
 * called x is the table `const struct workload wl_x` in its own file
 * bench/workloads/wl_x.c (bench/README.md, "Adding a workload").
 * Included several times with different definitions of WORKLOAD.
 */
WORKLOAD(churn)
WORKLOAD(expire)
WORKLOAD(longdelay)
WORKLOAD(rearm)
WORKLOAD(purgatory)
WORKLOAD(memory)
WORKLOAD(burst)
WORKLOAD(jump)
WORKLOAD(loop)
WORKLOAD(scale)
WORKLOAD(stall)
