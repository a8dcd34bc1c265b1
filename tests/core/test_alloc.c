/*
 * The allocator seam: with jemalloc, a wheel's memory shows up in jemalloc's
 * own statistics and all of it goes back on destroy.
 */
#include <criterion/criterion.h>

#include "timewheel.h"

#ifndef TW_ALLOC_LIBC
#include <jemalloc/jemalloc.h>

static size_t allocated(void)
{
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch), bytes = 0;

    /* Blocks parked in the thread cache still count as allocated. */
    cr_assert_eq(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0), 0);
    cr_assert_eq(mallctl("epoch", &epoch, &sz, &epoch, sz), 0);
    sz = sizeof(bytes);
    cr_assert_eq(mallctl("stats.allocated", &bytes, &sz, NULL, 0), 0);
    return bytes;
}

Test(alloc, wheel_memory_comes_from_jemalloc)
{
    struct tw_config cfg;
    size_t before, during;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HIER);
    before = allocated();
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    during = allocated();
    /* At least the 1336 slot heads of the clock layout. */
    cr_assert_geq(during - before, 1336 * 16);
    tw_destroy(w);
    cr_assert_eq(allocated(), before);
}
#else
Test(alloc, libc_build_creates_wheels)
{
    struct tw_config cfg;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HIER);
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    cr_assert_eq(tw_destroy(w), 0);
}
#endif
