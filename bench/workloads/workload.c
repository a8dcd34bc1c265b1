/*
 * The registry of workloads: every table named in wl_list.h, in the
 * report's order, and the lookup by name. The helpers the workloads share
 * are in helpers.c: here they made every wl_*.c and this file call into
 * each other (issue 29).
 */
#include <string.h>

#include "workload.h"

const struct workload *const bench_workloads[] = {
#define WORKLOAD(x) &wl_##x,
#include "wl_list.h"
#undef WORKLOAD
};
const unsigned bench_nworkloads =
    sizeof(bench_workloads) / sizeof(bench_workloads[0]);

const struct workload *workload_find(const char *name)
{
    for (unsigned i = 0; i < bench_nworkloads; i++)
        if (strcmp(bench_workloads[i]->name, name) == 0)
            return bench_workloads[i];
    return NULL;
}
