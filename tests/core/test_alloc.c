/*
 * The allocator seam (lib/core/alloc.c): tw_set_allocator()'s contract, and
 * every allocation of tw_create() failing in turn. With jemalloc, a wheel's
 * memory shows up in jemalloc's own statistics and all of it goes back on
 * destroy.
 *
 * tw_set_allocator() works only before the library's first allocation in
 * the process. Criterion runs every test in a process of its own, so each
 * test here installs the test allocator (tests/util.c) first, from .init.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "model.h"
#include "util.h"

static void counted(void)
{
    alloc_install(false);
}

static void *never(void *ctx, size_t size)
{
    (void)ctx;
    (void)size;
    cr_assert_fail("an allocator that was refused was called");
    return NULL;
}

static void never_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    (void)p;
    (void)size;
    cr_assert_fail("an allocator that was refused was called");
}

/* Every row of the "Memory" table of docs/api.md, in the order a process
 * meets them: refusals, back to the default, locked by the first block. */
Test(core_alloc, set_allocator_contract)
{
    const struct tw_allocator no_alloc = {NULL, never_free, NULL},
                              no_free = {never, NULL, NULL},
                              other = {never, never_free, NULL};
    void *p;

    cr_assert_eq(tw_set_allocator(&no_alloc), -EINVAL);
    cr_assert_eq(tw_set_allocator(&no_free), -EINVAL);
    alloc_install(false);
    cr_assert_eq(tw_set_allocator(NULL), 0, "the default again");
    tw_free(NULL, 64); /* a no-op, locks nothing */
    cr_assert_eq(tw_set_allocator(NULL), 0, "still before the first block");
    p = tw_alloc(64);
    cr_assert_not_null(p);
    cr_assert_eq(atomic_load(&alloc_log.calls), 0, "the default gave it");
    cr_assert_eq(tw_set_allocator(&other), -EBUSY, "after the first block");
    cr_assert_eq(tw_set_allocator(NULL), -EBUSY);
    tw_free(p, 64); /* back to the default: nothing changed */
    cr_assert_null(tw_alloc(0));
    p = tw_alloc(8);
    cr_assert_not_null(p);
    tw_free(p, 8);
    cr_assert_eq(atomic_load(&alloc_log.calls), 0);
}

/* The first call to the library that allocates locks the choice, even one
 * that asks for nothing. */
Test(core_alloc, size_zero_locks_the_choice)
{
    cr_assert_null(tw_alloc(0));
    cr_assert_eq(tw_set_allocator(NULL), -EBUSY);
}

struct create {
    const struct tw_config *cfg;
    struct tw_wheel *w;
};

static int try_create(void *ctx)
{
    struct create *c = ctx;
    int err = 1;

    c->w = tw_create(c->cfg, &err);
    cr_assert_eq(c->w != NULL, err == 0, "wheel %p, err %d", (void *)c->w, err);
    return err;
}

/* One allocation of tw_create() after another fails: each time NULL with
 * -ENOMEM and nothing held, until the wheel is built; the wheel then works
 * and gives every block back. Returns the number of allocations create
 * makes. */
static unsigned long create_fails_cleanly(const struct tw_config *cfg)
{
    struct create c = {cfg, NULL};
    unsigned long n = alloc_fail_each(try_create, &c);
    struct rec r;

    wheel_ok(c.w);
    rec_init(&r, c.w);
    cr_assert_eq(tw_schedule_after(c.w, &r.t, 3 * cfg->tick_ns), 0);
    cr_assert_eq(tw_advance(c.w, tw_timer_deadline(&r.t)), 1);
    cr_assert_eq(r.fired, 1);
    cr_assert_eq(tw_destroy(c.w), 0);
    cr_assert_eq(alloc_live(), 0, "destroy gave every block back");
    return n;
}

/* The wheel, its slot heads and its bitmap words. */
Test(core_alloc, create_hier_fails_cleanly_at_every_allocation, .init = counted)
{
    static const uint32_t pow2[] = {64, 64, 64, 64}, odd[] = {3, 7, 2, 5, 11},
                          edge[] = {64};
    static uint32_t two[TW_MAX_LEVELS];
    struct tw_config cfg[5];

    for (unsigned i = 0; i < TW_MAX_LEVELS; i++)
        two[i] = 2;
    cfg[0] = model_config(TW_HIER, NULL, 0, MS);
    cfg[1] = model_config(TW_HIER, pow2, 4, MS);
    cfg[2] = model_config(TW_HIER, odd, 5, 1);
    cfg[3] = model_config(TW_HIER, edge, 1, UINT64_MAX / 63 + 1);
    cfg[4] = model_config(TW_HIER, two, TW_MAX_LEVELS, 1);
    for (int i = 0; i < 5; i++) {
        unsigned long n = create_fails_cleanly(&cfg[i]);
        cr_assert_eq(n, 3, "layout %d: %lu", i, n);
    }
}

/* The wheel and its buckets. */
Test(core_alloc, create_hashed_fails_cleanly_at_every_allocation,
     .init = counted)
{
    static const uint32_t eight[] = {5};
    struct tw_config netty = model_config(TW_HASHED, NULL, 0, MS),
                     small = model_config(TW_HASHED, eight, 1, 7);

    cr_assert_eq(create_fails_cleanly(&netty), 2);
    cr_assert_eq(create_fails_cleanly(&small), 2);
}

#ifndef TW_ALLOC_LIBC
#include <jemalloc/jemalloc.h> /* the library's private one: tw_je_ names */

static size_t allocated(void)
{
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch), bytes = 0;

    /* Blocks parked in the thread cache still count as allocated. */
    cr_assert_eq(tw_je_mallctl("thread.tcache.flush", NULL, NULL, NULL, 0), 0);
    cr_assert_eq(tw_je_mallctl("epoch", &epoch, &sz, &epoch, sz), 0);
    sz = sizeof(bytes);
    cr_assert_eq(tw_je_mallctl("stats.allocated", &bytes, &sz, NULL, 0), 0);
    return bytes;
}

Test(core_alloc, wheel_memory_comes_from_jemalloc)
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
Test(core_alloc, libc_build_creates_wheels)
{
    struct tw_config cfg;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HIER);
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    cr_assert_eq(tw_destroy(w), 0);
}
#endif
