/*
 * The allocator seam's default (alloc.c): jemalloc, used so that bursts of
 * handles neither fault their pages in anew nor free them one lock at a
 * time. tw__je_alloc() and tw__je_free() are all the seam calls.
 *
 * Whose jemalloc. The library's own: Debian's jemalloc source, built by
 * lib/core/jemalloc.sh with the prefix tw_je_, every symbol hidden, no
 * operator new, thread state in dynamic TLS, and linked into
 * libtimewheel.so (and libtimewheel.a) alone. So the library never touches
 * the host's allocator: the host's malloc() and operator new resolve as they
 * would without timewheel, a host on jemalloc keeps its arenas and its
 * threads' bindings (the binding below is in our instance, not the host's),
 * and the library loads with dlopen(). Its options are read from
 * TW_JE_MALLOC_CONF, never from the host's MALLOC_CONF. The names below
 * are jemalloc's stable je_ names (JEMALLOC_NO_DEMANGLE), which its header
 * maps to the prefixed ones. docs/design.md, "The allocator", has the
 * choice and its measurements.
 *
 * Which path a block takes. jemalloc's malloc() is its fast path (57 to
 * 61 instructions for a handle under callgrind, against 122 for
 * mallocx(size, 0) and 141 to 146 with an arena flag: mallocx() reads its
 * flags on a general path). Every block goes back through sdallocx(), which
 * takes the size, so jemalloc skips its size lookup.
 *
 * The arena of our own, for the size classes that need it. The service
 * allocates its handles in bursts (10^6 schedules from one thread, then a
 * destroy or a wave of expiries frees them all). jemalloc joins a freed
 * extent of at least its smallest large size (16 KiB) with its free
 * neighbours at once, and will not carve a slab out of a dirty extent more
 * than 64 times the slab's size (opt.lg_extent_max_active_fit). So for a
 * size class whose slab is 16 KiB or more (80 bytes: 20 KiB slabs; 112,
 * 160, 224, ...) a burst's freed slabs become one dirty extent that the next
 * burst cannot use: it maps fresh pages and faults on every one of them,
 * 19,500 faults per 10^6 blocks of 80 bytes, round after round, whatever
 * the decay settings. Classes with smaller slabs (64, 96, 128, 192 bytes:
 * 4 or 12 KiB) are joined only lazily, and a burst of them takes the last
 * one's slabs back with no fault. A process-wide option (malloc_conf) is
 * the application's to set, not a library's. So on the first allocation
 * the library makes its own arena (mallctl "arenas.create") with extent
 * hooks that are jemalloc's own, called through, except that they refuse
 * every merge, and sends the size classes whose slab is that large to it
 * with mallocx(size, MALLOCX_ARENA(ours)) (a table by size in 8-byte steps
 * up to ROUTED_MAX, built from jemalloc's own "arenas.bin.<i>.slab_size",
 * so a change of handle layout or of jemalloc is followed); every other
 * block takes the fast path (sending them all to the arena too was
 * measured: it saves some faults where two producers are bound to two
 * automatic arenas, and costs every one-shot handle 85 instructions more;
 * docs/design.md, Memory). In our arena a freed slab stays a slab-sized
 * dirty extent, which the next slab of its size takes as it is. Dirty pages
 * still go back to the system by the arena's decay (the application's
 * dirty_decay_ms, or jemalloc's default), so a burst's memory is held no
 * longer than in any other arena.
 *
 * What the arena does not change. The thread cache (tcache) is jemalloc's,
 * kept per size class for all arenas: a block the library frees may be
 * handed to the application's next malloc() of that size on that thread and
 * the other way round, at most a thread cache's worth. A block always goes
 * back to the arena whose slab holds it, and jemalloc's counters
 * (stats.allocated) count every arena. If the arena cannot be made (jemalloc
 * out of arenas or memory), every block takes the other path.
 *
 * Threads new to the library: one arena for every thread that allocates
 * through it. jemalloc binds each thread to an automatic arena (the one
 * with the fewest threads; 4 per processor), and a block goes back to the
 * arena it came from, whichever thread frees it. So the handles a producer
 * allocated, once the worker frees them, sit in that producer's arena, and
 * a thread new to the service, bound to an arena they are not in, faults
 * its pages in anew: 13.3 to 14.1 faults per 1,000 schedules, twice a warm
 * thread's CPU per schedule (svcbench fresh; docs/benchmarks.md). So the
 * first tw__je_alloc() on each thread binds it (mallctl "thread.arena") to
 * a second arena the library makes, the producers' arena, an ordinary one
 * (jemalloc's hooks, merges and all), unless the application bound the
 * thread to an arena of our instance that it made itself (an index past
 * the automatic ones, through tw_je_mallctl() in a static link), which is
 * left as it is. Every thread that allocates through the library
 * then takes back what any other freed, at no cost to its later
 * allocations: malloc() stays the fast path, and the thread-local flag the
 * first call sets replaces the process-wide one it tested before. The
 * binding is our instance's: the host's own malloc() on the same thread is
 * not moved (with the system's jemalloc as the library's allocator, it was,
 * and a thread bound to the producers' arena then malloc'ed at half the rate
 * of an unbound one under contention: 1.43-2.34 M/s against 3.06-6.46 M/s,
 * 8 threads, 40-140 kB blocks). Sizes
 * routed to the library's own arena go there as before, from every thread.
 *
 * Threads that only free. jemalloc gives a thread whose first call into it
 * is a free a minimal state without a thread cache, so each of its frees
 * locks the arena's bin: 444 to 455 instructions a free under callgrind,
 * against 104 to 119 with a cache. The service's worker is such a thread (it
 * frees the handles that producers allocated), so the first tw__je_free() on
 * each thread makes one 1-byte allocation and frees it, which gives the thread
 * its cache; later frees pay a thread-local flag's test. The cache goes
 * back to the arenas at the thread's exit.
 */
#include "alloc.h"

#ifndef TW_ALLOC_LIBC
#define JEMALLOC_NO_DEMANGLE 1 /* je_mallocx(): the prefix-free names */
#include <jemalloc/jemalloc.h> /* the private build's (lib/core/jemalloc.sh) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define COLD __attribute__((noinline, cold))
#else
#define COLD
#endif

/* Sizes up to this are routed by their class; larger blocks (a wheel's slot
 * heads, a purgatory's buckets) are not allocated in bursts and take the
 * fast path. */
#define ROUTED_MAX 4096

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int arena_flags;    /* MALLOCX_ARENA(ours), 0 without one */
static int producers = -1; /* the producers' arena, -1 without one */
static unsigned automatic; /* jemalloc's automatic arenas: 0 .. this - 1 */
static bool routed[ROUTED_MAX / 8 + 1]; /* [(size + 7) / 8]: to our arena */

/* jemalloc's default hooks, called through. Atomic (relaxed: plain loads)
 * because jemalloc may call ours on any thread, ordered by its own atomics,
 * which ThreadSanitizer (`make SAN=thread`) does not see. */
static _Atomic(extent_hooks_t *) jes_p;

static extent_hooks_t *jes(void)
{
    return atomic_load_explicit(&jes_p, memory_order_relaxed);
}

/* Each hook but merge is jemalloc's own, handed jemalloc's table, not ours. */
static void *ext_alloc(extent_hooks_t *h, void *addr, size_t size, size_t align,
                       bool *zero, bool *commit, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->alloc(d, addr, size, align, zero, commit, ind);
}

static bool ext_dalloc(extent_hooks_t *h, void *addr, size_t size,
                       bool committed, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->dalloc(d, addr, size, committed, ind);
}

static void ext_destroy(extent_hooks_t *h, void *addr, size_t size,
                        bool committed, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    d->destroy(d, addr, size, committed, ind);
}

static bool ext_commit(extent_hooks_t *h, void *addr, size_t size, size_t off,
                       size_t len, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->commit(d, addr, size, off, len, ind);
}

static bool ext_decommit(extent_hooks_t *h, void *addr, size_t size, size_t off,
                         size_t len, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->decommit(d, addr, size, off, len, ind);
}

static bool ext_purge_lazy(extent_hooks_t *h, void *addr, size_t size,
                           size_t off, size_t len, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->purge_lazy(d, addr, size, off, len, ind);
}

static bool ext_purge_forced(extent_hooks_t *h, void *addr, size_t size,
                             size_t off, size_t len, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->purge_forced(d, addr, size, off, len, ind);
}

static bool ext_split(extent_hooks_t *h, void *addr, size_t size, size_t size_a,
                      size_t size_b, bool committed, unsigned ind)
{
    extent_hooks_t *d = jes();

    (void)h;
    return d->split(d, addr, size, size_a, size_b, committed, ind);
}

/* true: refused. Freed slabs stay slab-sized (see the top). */
static bool ext_merge(extent_hooks_t *h, void *addr_a, size_t size_a,
                      void *addr_b, size_t size_b, bool committed, unsigned ind)
{
    (void)h, (void)addr_a, (void)size_a, (void)addr_b, (void)size_b;
    (void)committed, (void)ind;
    return true;
}

static extent_hooks_t ours = {
    ext_alloc,      ext_dalloc,       ext_destroy, ext_commit, ext_decommit,
    ext_purge_lazy, ext_purge_forced, ext_split,   ext_merge,
};

/* Each default hook that jemalloc leaves out (NULL: it opts out of that
 * operation) stays out in ours. */
static void keep_opt_outs(const extent_hooks_t *d)
{
    if (!d->dalloc)
        ours.dalloc = NULL;
    if (!d->destroy)
        ours.destroy = NULL;
    if (!d->commit)
        ours.commit = NULL;
    if (!d->decommit)
        ours.decommit = NULL;
    if (!d->purge_lazy)
        ours.purge_lazy = NULL;
    if (!d->purge_forced)
        ours.purge_forced = NULL;
    if (!d->split)
        ours.split = NULL;
}

/* The library's arena, born with jemalloc's default hooks (whatever the
 * application set on its own arenas), with ours swapped in before anything
 * is allocated in it: its index, or -1 on any failure. */
static int new_arena(void)
{
    extent_hooks_t *mine = &ours, *d = NULL;
    unsigned ind;
    size_t len = sizeof(ind);
    char name[64];

    if (je_mallctl("arenas.create", &ind, &len, NULL, 0))
        return -1;
    snprintf(name, sizeof(name), "arena.%u.extent_hooks", ind);
    len = sizeof(d);
    if (je_mallctl(name, &d, &len, NULL, 0) || !d || !d->alloc)
        return -1;
    atomic_store_explicit(&jes_p, d, memory_order_relaxed);
    keep_opt_outs(d);
    if (je_mallctl(name, NULL, NULL, &mine, sizeof(mine)))
        return -1;
    return (int)ind;
}

static size_t read_size(const char *name, unsigned i)
{
    size_t v = 0, len = sizeof(v);
    char full[64];

    snprintf(full, sizeof(full), name, i);
    return je_mallctl(full, &v, &len, NULL, 0) ? 0 : v;
}

/* routed[]: the sizes whose class has a slab of jemalloc's smallest large
 * size or more (the classes whose freed slabs jemalloc joins at once). Bin
 * i holds the sizes above bin i - 1's up to its own, all multiples of 8. */
static void route_classes(void)
{
    size_t large = read_size("arenas.lextent.%u.size", 0), below = 0;
    unsigned nbins = 0;
    size_t len = sizeof(nbins);

    if (!large || je_mallctl("arenas.nbins", &nbins, &len, NULL, 0))
        return;
    for (unsigned i = 0; i < nbins && below < ROUTED_MAX; i++) {
        size_t size = read_size("arenas.bin.%u.size", i);
        bool to_ours = read_size("arenas.bin.%u.slab_size", i) >= large;

        if (size <= below)
            return; /* not the layout described: route nothing more */
        for (size_t k = below / 8 + 1; k <= size / 8 && k <= ROUTED_MAX / 8;
             k++)
            routed[k] = to_ours;
        below = size;
    }
}

/* The producers' arena (see the top): an ordinary one, jemalloc's hooks;
 * its index, or -1 (every thread then keeps jemalloc's choice). */
static int new_producers_arena(void)
{
    unsigned ind, n;
    size_t len = sizeof(ind);

    if (je_mallctl("arenas.create", &ind, &len, NULL, 0))
        return -1;
    len = sizeof(n);
    if (je_mallctl("opt.narenas", &n, &len, NULL, 0))
        return -1;
    automatic = n;
    return (int)ind;
}

/* Once per process, before the first block. */
static void set_up(void)
{
    int ind = new_arena();

    if (ind >= 0) {
        arena_flags = MALLOCX_ARENA(ind);
        route_classes();
    }
    producers = new_producers_arena();
}

/* Whether this thread has called tw__je_alloc() before (and so the process
 * is set up and the thread bound). The default TLS model, which never
 * stops a dlopen(); the Makefile builds with TLS descriptors where the
 * compiler has them (-mtls-dialect=gnu2), so that in a library loaded at
 * start-up this is a load off the thread pointer behind one call that
 * returns at once. */
static _Thread_local bool allocated_before;

/* Once per thread: set the process up if no thread has, then bind this
 * thread to the producers' arena unless the application chose its arena
 * (see the top). A failure leaves the thread where jemalloc put it. */
static COLD void first_alloc(void)
{
    unsigned cur, to;
    size_t len = sizeof(cur);

    pthread_once(&once, set_up);
    allocated_before = true;
    if (producers < 0 || je_mallctl("thread.arena", &cur, &len, NULL, 0) ||
        cur >= automatic)
        return;
    to = (unsigned)producers;
    (void)je_mallctl("thread.arena", NULL, NULL, &to, sizeof(to));
}

void *tw__je_alloc(size_t size)
{
    if (!allocated_before)
        first_alloc();
    if (size <= ROUTED_MAX && routed[(size + 7) / 8])
        return je_mallocx(size, arena_flags);
    return je_malloc(size);
}

/* Whether this thread has called tw__je_free() before (the model: as
 * allocated_before). */
static _Thread_local bool freed_before;

/* Once per thread: one allocation, so that a thread that only frees has a
 * cache (see the top). Out of line: the common free stays a tail call. */
static COLD void give_cache(void)
{
    void *one = je_mallocx(1, 0);

    freed_before = true;
    if (one)
        je_dallocx(one, 0);
}

void tw__je_free(void *p, size_t size)
{
    if (!freed_before)
        give_cache();
    je_sdallocx(p, size, 0);
}
#else
typedef int tw__no_jemalloc; /* ALLOC=libc: nothing here (ISO C wants a
                              * declaration in every file) */
#endif
