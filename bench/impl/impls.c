/*
 * The registry of implementations under test. Each one lives in its own
 * impl_*.c file and exports only its table.
 */
#include <string.h>

#include "impl.h"

const struct impl *const bench_impls[] = {
    &impl_hier,  &impl_hier_pow2, &impl_hashed, &impl_heap,
    &impl_libuv, &impl_libevent,  &impl_libev,
};
const unsigned bench_nimpls = sizeof(bench_impls) / sizeof(bench_impls[0]);

const struct impl *impl_find(const char *name)
{
    for (unsigned i = 0; i < bench_nimpls; i++)
        if (strcmp(bench_impls[i]->name, name) == 0)
            return bench_impls[i];
    return NULL;
}
