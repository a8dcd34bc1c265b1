/*
 * The registry of implementations under test. Each one lives in its own
 * impl_X.c file and exports only its table, impl_X, which carries all the
 * report and the workloads need to know of it (its version, whether the
 * largest sizes run it). Adding one is that file and one line below (and
 * its library in bench/bench.mk if it links one).
 */
#include <string.h>

#include "impl.h"

/* Every implementation, one line each, in the order of the report. */
#define BENCH_IMPLS(X)                                                         \
    X(hier)                                                                    \
    X(hier_pow2)                                                               \
    X(hashed)                                                                  \
    X(heap)                                                                    \
    X(libuv)                                                                   \
    X(libevent)                                                                \
    X(libev)                                                                   \
    X(list)

#define DECLARE(x) extern const struct impl impl_##x;
BENCH_IMPLS(DECLARE)
#undef DECLARE

#define ENTRY(x) &impl_##x,
const struct impl *const bench_impls[] = {BENCH_IMPLS(ENTRY)};
#undef ENTRY
const unsigned bench_nimpls = sizeof(bench_impls) / sizeof(bench_impls[0]);

const struct impl *impl_find(const char *name)
{
    for (unsigned i = 0; i < bench_nimpls; i++)
        if (strcmp(bench_impls[i]->name, name) == 0)
            return bench_impls[i];
    return NULL;
}
