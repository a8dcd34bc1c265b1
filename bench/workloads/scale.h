/*
 * What the two workloads at 10^7 and 10^8 timers share (scale.c): which
 * implementations they run, whether a size fits in the memory available,
 * and scattered distinct timer indices.
 */
#ifndef BENCH_SCALE_H
#define BENCH_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "impl.h"
#include "workload.h"

#define SCALE_IMPLS_NOTE                                                       \
    "the workloads at 10^7 and 10^8 timers cover the implementations whose "   \
    "table sets .scale (bench/impl/: hier, hashed, heap, libev)"

/* Whether im is one of those (its table's .scale). */
bool scale_covers(const struct impl *im);
/* Whether n timers of im, plus own_bytes per timer of the workload's, fit
 * in well under the memory the system has available now; if not, the
 * reason is noted on every metric of wl. */
bool scale_fits(const struct impl *im, uint64_t n, uint64_t own_bytes,
                struct wl_result *out, const struct workload *wl);
/* Fill idx[0..count) with distinct indices below n (count <= n), spread
 * through the whole range: a stride coprime with n. */
void scale_distinct(uint32_t *idx, uint64_t count, uint64_t n);

#endif /* BENCH_SCALE_H */
