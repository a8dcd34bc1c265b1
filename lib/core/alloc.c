/*
 * The allocator seam: every block the library allocates for itself (never a
 * timer: those belong to the caller) comes from tw_alloc() and goes back
 * through tw_free(), in every layer.
 *
 * The default is jemalloc: its malloc() (or mallocx() when the name malloc
 * is bound to another allocator, below), and sdallocx(), which takes the
 * size back so jemalloc skips its size lookup on free; `make ALLOC=libc` builds
 * the same library on malloc() and free(). An embedder may replace either
 * with tw_set_allocator(), as libuv's uv_replace_allocator() allows, but only
 * before the library's first allocation: a block must go back to the
 * allocator it came from, and the library does not record which one that was
 * (a pointer per handle would cost the service 8 bytes a timer). Once the
 * first block is handed out the choice is locked and a replacement is -EBUSY.
 *
 * jemalloc's fast path. jemalloc's own malloc() takes about half the
 * instructions of mallocx(size, 0) (61 against 122 for a handle under
 * callgrind; mallocx() goes through the general path that reads its flags),
 * and a block from it goes back through sdallocx() like any other. But the
 * name malloc may be bound to another allocator (the C library's, in a
 * program that loads jemalloc after it), and sdallocx() on such a block
 * corrupts both heaps. So the first allocation asks dladdr() whether the
 * malloc we are linked to lies in the same object as mallocx(), and uses it
 * only then; otherwise it stays on mallocx(). dladdr() allocates nothing
 * (a dlopen() to look inside jemalloc would keep 11 KB of the C library's
 * for good).
 */
#define _GNU_SOURCE 1 /* dladdr */

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "timewheel/core.h"

#ifndef TW_ALLOC_LIBC
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#endif

static struct tw_allocator hook;   /* alloc NULL: the built-in default */
static atomic_bool locked;         /* set by the first allocation */

#ifndef TW_ALLOC_LIBC
/* Whether malloc() is jemalloc's: 0 not known yet, 1 yes, 2 no. Threads
 * racing the first look-up find the same answer. */
static atomic_int malloc_is_je;

static int look_up(void)
{
    Dl_info m, x;
    int is = dladdr((void *)(uintptr_t)malloc, &m) &&
                     dladdr((void *)(uintptr_t)mallocx, &x) &&
                     m.dli_fbase == x.dli_fbase
                 ? 1
                 : 2;

    atomic_store_explicit(&malloc_is_je, is, memory_order_relaxed);
    return is;
}

static void *je_alloc(size_t size)
{
    int is = atomic_load_explicit(&malloc_is_je, memory_order_relaxed);

    if (!is)
        is = look_up();
    return is == 1 ? malloc(size) : mallocx(size, 0);
}
#endif

TW_PUBLIC int tw_set_allocator(const struct tw_allocator *a)
{
    if (a && (!a->alloc || !a->free))
        return -EINVAL;
    if (atomic_load_explicit(&locked, memory_order_acquire))
        return -EBUSY;
    if (a)
        hook = *a;
    else
        hook = (struct tw_allocator){0};
    return 0;
}

TW_PUBLIC void *tw_alloc(size_t size)
{
    /* A load first: a store on every call would bounce the line between
     * threads that allocate at once. */
    if (!atomic_load_explicit(&locked, memory_order_relaxed))
        atomic_store_explicit(&locked, true, memory_order_release);
    if (size == 0)
        return NULL;
    if (hook.alloc)
        return hook.alloc(hook.ctx, size);
#ifdef TW_ALLOC_LIBC
    return malloc(size);
#else
    return je_alloc(size);
#endif
}

TW_PUBLIC void tw_free(void *p, size_t size)
{
    if (!p)
        return;
    if (hook.alloc) {
        hook.free(hook.ctx, p, size);
        return;
    }
#ifdef TW_ALLOC_LIBC
    (void)size;
    free(p);
#else
    sdallocx(p, size, 0);
#endif
}
