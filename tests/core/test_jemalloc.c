/*
 * The allocator seam's jemalloc default (lib/core/jemalloc.c), read through
 * the library's private jemalloc's tw_je_mallctl(): which arena each size class
 * comes from, that blocks go back to it from any thread, that a thread that
 * only frees has a thread cache, that a freed burst is taken again page for
 * page, by the same thread or a new one, and that a thread the application
 * bound to an arena stays there.
 *
 * Each test empties this thread's jemalloc cache first: it holds blocks of
 * every arena by size class (Criterion's own, too), and hands them out
 * before any arena is asked. Criterion runs every test in a process of its
 * own, so each meets the library before its first allocation.
 */
#include <criterion/criterion.h>

#include "util.h"

#ifndef TW_ALLOC_LIBC
/* The library's private jemalloc (lib/core/jemalloc.sh), its names
 * prefixed tw_je_: reachable here because the tests link libtimewheel.a. */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#define LONG_HANDLE 80 /* a handle with a tail: 20 KiB slabs, our arena */
#define HANDLE 64      /* a one-shot handle: 4 KiB slabs, the fast path */
#define BURST 100000   /* of 80 bytes, 8 MB: far more than 64 slabs */
#define ROUTED_MAX 4096

static void flush_cache(void)
{
    cr_assert_eq(tw_je_mallctl("thread.tcache.flush", NULL, NULL, NULL, 0), 0);
}

static unsigned arena_of(const void *p)
{
    unsigned a;
    size_t len = sizeof(a);

    cr_assert_eq(tw_je_mallctl("arenas.lookup", &a, &len, &p, sizeof(p)), 0);
    return a;
}

static unsigned read_unsigned(const char *name)
{
    unsigned v;
    size_t len = sizeof(v);

    cr_assert_eq(tw_je_mallctl(name, &v, &len, NULL, 0), 0, "%s", name);
    return v;
}

static size_t read_size(const char *fmt, unsigned i)
{
    char name[64];
    size_t v, len = sizeof(v);

    snprintf(name, sizeof(name), fmt, i);
    cr_assert_eq(tw_je_mallctl(name, &v, &len, NULL, 0), 0, "%s", name);
    return v;
}

/* Whether jemalloc's slab for blocks of `size` is at least its smallest
 * large extent: the classes the library sends to its own arena. */
static bool large_slab(size_t size)
{
    size_t cls = tw_je_nallocx(size, 0);
    unsigned nbins = read_unsigned("arenas.nbins");

    for (unsigned i = 0; i < nbins; i++)
        if (read_size("arenas.bin.%u.size", i) == cls)
            return read_size("arenas.bin.%u.slab_size", i) >=
                   read_size("arenas.lextent.%u.size", 0);
    cr_assert_fail("no bin of %zu bytes", cls);
    return false;
}

/* jemalloc's count of small bytes allocated in arena a, fresh. */
static size_t arena_small_bytes(unsigned a)
{
    uint64_t epoch = 1;
    size_t len = sizeof(epoch), bytes = 0;
    char name[64];

    cr_assert_eq(tw_je_mallctl("epoch", &epoch, &len, &epoch, len), 0);
    snprintf(name, sizeof(name), "stats.arenas.%u.small.allocated", a);
    len = sizeof(bytes);
    cr_assert_eq(tw_je_mallctl(name, &bytes, &len, NULL, 0), 0);
    return bytes;
}

/* The arena a fresh block of `size` bytes comes from (the thread's cache
 * flushed first, so the block is not one it kept). */
static unsigned arena_for(size_t size)
{
    void *p;
    unsigned a;

    flush_cache();
    p = tw_alloc(size);
    cr_assert_not_null(p);
    a = arena_of(p);
    tw_free(p, size);
    flush_cache();
    return a;
}

/* The library's arena: where a handle with a tail comes from. */
static unsigned library_arena(void)
{
    return arena_for(LONG_HANDLE);
}

/* The arena this thread allocates from by default (jemalloc's binding). */
static unsigned thread_arena(void)
{
    return read_unsigned("thread.arena");
}

/* The first block makes the library's two arenas, none of jemalloc's
 * automatic ones: its own (the large-slab classes) and the producers'
 * (this thread is bound to it); no third however many blocks follow. */
Test(core_jemalloc, the_first_block_makes_the_librarys_two_arenas)
{
    unsigned before = read_unsigned("arenas.narenas"), a, p;
    unsigned auto_max = read_unsigned("opt.narenas");

    a = library_arena();
    p = thread_arena();
    cr_assert_geq(a, auto_max, "an automatic arena: %u", a);
    cr_assert_geq(p, auto_max, "bound to an automatic arena: %u", p);
    cr_assert_neq(a, p);
    cr_assert_eq(read_unsigned("arenas.narenas"), before + 2);
    for (int i = 0; i < 1000; i++)
        tw_free(tw_alloc(LONG_HANDLE), LONG_HANDLE);
    cr_assert_eq(read_unsigned("arenas.narenas"), before + 2);
}

/* Every size up to ROUTED_MAX whose class has a large slab comes from the
 * library's arena, every other from the thread's arena (the fast path),
 * which is the producers' arena: a handle with a tail takes the first way,
 * a one-shot handle the second. */
Test(core_jemalloc, each_size_class_takes_its_arena)
{
    unsigned ours = library_arena(), auto_max = read_unsigned("opt.narenas");
    unsigned producers = thread_arena();
    int routed = 0;

    cr_assert_geq(ours, auto_max, "an automatic arena: %u", ours);
    cr_assert_geq(producers, auto_max, "an automatic arena: %u", producers);
    for (size_t size = 1; size <= ROUTED_MAX + 64; size += 7) {
        bool to_ours = size <= ROUTED_MAX && large_slab(size);
        unsigned a = arena_for(size);

        if (to_ours)
            cr_assert_eq(a, ours, "%zu bytes from arena %u", size, a);
        else
            cr_assert_eq(a, producers, "%zu bytes from arena %u", size, a);
        routed += to_ours;
    }
    cr_assert_gt(routed, 0);
    cr_assert(large_slab(LONG_HANDLE) && !large_slab(HANDLE),
              "this jemalloc's slabs differ: update the docs' figures");
}

/* An embedder's allocator replaces the default before the first block:
 * the library then makes no arena at all. */
Test(core_jemalloc, a_replaced_allocator_makes_no_arena)
{
    unsigned before = read_unsigned("arenas.narenas");
    void *p;

    alloc_install(false);
    p = tw_alloc(LONG_HANDLE);
    cr_assert_not_null(p);
    cr_assert_eq(atomic_load(&alloc_log.allocs), 1, "the embedder's gave it");
    tw_free(p, LONG_HANDLE);
    cr_assert_eq(atomic_load(&alloc_log.frees), 1);
    cr_assert_eq(read_unsigned("arenas.narenas"), before);
}

struct burst {
    void **p;
    size_t n;
};

static void *alloc_burst(void *arg)
{
    struct burst *b = arg;

    for (size_t i = 0; i < b->n; i++) {
        b->p[i] = tw_alloc(LONG_HANDLE);
        cr_assert_not_null(b->p[i]);
    }
    return NULL;
}

/* Blocks allocated on one thread and freed on another (as the service's
 * worker frees the producers' handles) go back to the library's arena:
 * its small bytes return to what they were once both caches are flushed
 * (the allocating thread's at its exit). */
Test(core_jemalloc, blocks_freed_on_another_thread_go_back_to_the_arena)
{
    struct burst b = {calloc(BURST, sizeof(void *)), BURST};
    unsigned a = library_arena();
    size_t base = arena_small_bytes(a);
    pthread_t t;

    cr_assert_not_null(b.p);
    cr_assert_eq(pthread_create(&t, NULL, alloc_burst, &b), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_geq(arena_small_bytes(a), base + BURST * LONG_HANDLE);
    for (size_t i = 0; i < BURST; i++) {
        cr_assert_eq(arena_of(b.p[i]), a);
        tw_free(b.p[i], LONG_HANDLE);
    }
    flush_cache();
    cr_assert_eq(arena_small_bytes(a), base);
    free(b.p);
}

struct free_only {
    void **p;
    size_t n;
    pthread_barrier_t *held; /* the frees are done; main reads the stats */
};

static void *free_then_wait(void *arg)
{
    struct free_only *f = arg;

    for (size_t i = 0; i < f->n; i++)
        tw_free(f->p[i], LONG_HANDLE);
    pthread_barrier_wait(f->held);
    pthread_barrier_wait(f->held);
    return NULL;
}

/* A thread that only frees (the service's worker freeing the producers'
 * handles) gets a thread cache all the same: its frees stay in its cache
 * instead of each locking the arena (jemalloc gives a thread whose first
 * call is a free none), and the cache goes back at the thread's exit. */
Test(core_jemalloc, a_thread_that_only_frees_has_a_cache)
{
    pthread_barrier_t held;
    void *p[10];
    struct free_only f = {p, 10, &held};
    unsigned a = library_arena();
    size_t before;
    pthread_t t;

    for (int i = 0; i < 10; i++) {
        p[i] = tw_alloc(LONG_HANDLE);
        cr_assert_not_null(p[i]);
    }
    flush_cache();
    before = arena_small_bytes(a);
    cr_assert_eq(pthread_barrier_init(&held, NULL, 2), 0);
    cr_assert_eq(pthread_create(&t, NULL, free_then_wait, &f), 0);
    pthread_barrier_wait(&held);
    cr_assert_eq(arena_small_bytes(a), before,
                 "the frees went to the arena: %zu bytes, %zu before",
                 arena_small_bytes(a), before);
    pthread_barrier_wait(&held);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(arena_small_bytes(a), before - 10 * LONG_HANDLE,
                 "the cache came back at exit");
    pthread_barrier_destroy(&held);
}

static int cmp_addr(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;

    return (a > b) - (a < b);
}

/* Set arena a's decay times (ms; -1: never purge), returning the old ones
 * in old[0] (dirty) and old[1] (muzzy). */
static void set_decay(unsigned a, const ssize_t *ms, ssize_t *old)
{
    static const char *const kind[2] = {"dirty", "muzzy"};

    for (int k = 0; k < 2; k++) {
        char name[64];
        size_t len = sizeof(old[k]);

        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", a, kind[k]);
        cr_assert_eq(tw_je_mallctl(name, old ? &old[k] : NULL,
                                   old ? &len : NULL, (void *)&ms[k],
                                   sizeof(ms[k])),
                     0, "%s", name);
    }
}

/* After a burst of `size` is freed, the next burst takes the same pages
 * again (at least 99% of its blocks) instead of mapping fresh ones. The
 * arena's decay is held meanwhile: it purges idle pages by wall time, so on
 * a loaded machine an epoch could fall between the two bursts and return
 * part of the first to the system (2 runs in 30 with the rest of the suite
 * beside, 2026-11-26); that is its policy for idle memory, not the reuse
 * this checks. */
static void burst_reused(size_t size)
{
    static const ssize_t never[2] = {-1, -1};
    uintptr_t *pages = calloc(BURST, sizeof(*pages));
    void **p = calloc(BURST, sizeof(*p));
    size_t reused = 0;
    ssize_t decay[2];
    unsigned arena;

    cr_assert(pages && p);
    flush_cache();
    for (size_t i = 0; i < BURST; i++) {
        p[i] = tw_alloc(size);
        cr_assert_not_null(p[i]);
        pages[i] = (uintptr_t)p[i] / 4096;
    }
    arena = arena_of(p[0]);
    set_decay(arena, never, decay);
    qsort(pages, BURST, sizeof(*pages), cmp_addr);
    for (size_t i = 0; i < BURST; i++)
        tw_free(p[i], size);
    flush_cache();
    for (size_t i = 0; i < BURST; i++) {
        uintptr_t page;

        p[i] = tw_alloc(size);
        cr_assert_not_null(p[i]);
        page = (uintptr_t)p[i] / 4096;
        reused +=
            bsearch(&page, pages, BURST, sizeof(*pages), cmp_addr) != NULL;
    }
    cr_assert_geq(reused, BURST * 99 / 100,
                  "%zu bytes: %zu of %d blocks on old pages", size, reused,
                  BURST);
    set_decay(arena, decay, NULL);
    for (size_t i = 0; i < BURST; i++)
        tw_free(p[i], size);
    free(p);
    free(pages);
}

/* The reason for the arena: in an automatic arena the freed 20 KiB slabs of
 * 80-byte blocks join into one dirty extent that jemalloc will not split
 * for a slab, and the next burst faults on new pages. */
Test(core_jemalloc, a_freed_burst_of_a_large_slab_class_is_reused)
{
    burst_reused(LONG_HANDLE);
}

/* And why the other classes can stay on the fast path: jemalloc takes their
 * freed slabs back as they are. */
Test(core_jemalloc, a_freed_burst_of_a_small_slab_class_is_reused)
{
    burst_reused(HANDLE);
}

/* A producer thread: allocates a burst of one-shot handles, then stays
 * alive (so that jemalloc's count of its arena's threads holds) until
 * released. */
struct producer {
    void **p;
    size_t n;
    pthread_barrier_t *held; /* its own: allocated; then: may exit */
};

static void *produce_and_stay(void *arg)
{
    struct producer *f = arg;

    for (size_t i = 0; i < f->n; i++)
        f->p[i] = tw_alloc(HANDLE);
    pthread_barrier_wait(f->held);
    pthread_barrier_wait(f->held);
    return NULL;
}

/* Start a producer of n blocks into p; it stays until stay_over(). */
static pthread_t producer_start(struct producer *f)
{
    pthread_t t;

    cr_assert_eq(pthread_create(&t, NULL, produce_and_stay, f), 0);
    pthread_barrier_wait(f->held);
    return t;
}

static void stay_over(struct producer *f, pthread_t t)
{
    pthread_barrier_wait(f->held);
    cr_assert_eq(pthread_join(t, NULL), 0);
}

/* A thread new to the library takes back the blocks an older thread
 * allocated and another freed, page for page (at least 99%), while the
 * older one still runs: without the producers' arena jemalloc binds the new
 * thread to an automatic arena of its own, where none of those blocks went
 * back, and it maps fresh pages (issue 21 part 5: 14 faults per 1,000
 * schedules). Decay is held meanwhile, as in burst_reused(). */
Test(core_jemalloc, a_new_thread_takes_back_what_an_older_one_freed)
{
    static const ssize_t never[2] = {-1, -1};
    void **p = calloc(2 * BURST, sizeof(*p));
    uintptr_t *pages = calloc(BURST, sizeof(*pages));
    pthread_barrier_t held[2];
    struct producer old = {p, BURST, &held[0]};
    struct producer young = {p + BURST, BURST, &held[1]};
    size_t reused = 0;
    ssize_t decay[2];
    unsigned arena;
    pthread_t t1, t2;

    cr_assert(p && pages);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_barrier_init(&held[i], NULL, 2), 0);
    t1 = producer_start(&old);
    arena = arena_of(p[0]);
    set_decay(arena, never, decay);
    for (size_t i = 0; i < BURST; i++) {
        cr_assert_not_null(p[i]);
        pages[i] = (uintptr_t)p[i] / 4096;
        tw_free(p[i], HANDLE);
    }
    flush_cache();
    qsort(pages, BURST, sizeof(*pages), cmp_addr);
    t2 = producer_start(&young);
    for (size_t i = 0; i < BURST; i++) {
        uintptr_t page = (uintptr_t)young.p[i] / 4096;

        cr_assert_not_null(young.p[i]);
        reused +=
            bsearch(&page, pages, BURST, sizeof(*pages), cmp_addr) != NULL;
    }
    cr_assert_geq(reused, BURST * 99 / 100,
                  "%zu of %d blocks on the older thread's pages", reused,
                  BURST);
    set_decay(arena, decay, NULL);
    stay_over(&young, t2);
    stay_over(&old, t1);
    for (size_t i = 0; i < BURST; i++)
        tw_free(young.p[i], HANDLE);
    for (int i = 0; i < 2; i++)
        pthread_barrier_destroy(&held[i]);
    free(pages);
    free(p);
}

/* A thread the application bound to an arena of its own keeps it: the
 * library's blocks of the fast path come from there, and the binding holds
 * after them. */
Test(core_jemalloc, a_thread_the_application_bound_stays_bound)
{
    unsigned mine, after;
    size_t len = sizeof(mine);
    void *p;

    cr_assert_eq(tw_je_mallctl("arenas.create", &mine, &len, NULL, 0), 0);
    cr_assert_eq(tw_je_mallctl("thread.arena", NULL, NULL, &mine, sizeof(mine)),
                 0);
    flush_cache();
    p = tw_alloc(HANDLE);
    cr_assert_not_null(p);
    cr_assert_eq(arena_of(p), mine);
    after = thread_arena();
    cr_assert_eq(after, mine, "moved to arena %u", after);
    tw_free(p, HANDLE);
}
#else
/* ALLOC=libc: no jemalloc, nothing to test here. */
Test(core_jemalloc, libc_build_takes_blocks_from_malloc)
{
    void *p = tw_alloc(80);

    cr_assert_not_null(p);
    tw_free(p, 80);
}
#endif
