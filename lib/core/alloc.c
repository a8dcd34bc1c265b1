/*
 * The allocator seam: every block the library allocates for itself (never a
 * timer: those belong to the caller) comes from tw_alloc() and goes back
 * through tw_free(), in every layer.
 *
 * The default is jemalloc (jemalloc.c: its fast malloc() for most blocks,
 * an arena of the library's own for the size classes whose freed slabs
 * jemalloc would join into extents it cannot reuse, a second one that every
 * thread allocating through the library is bound to, so that a new thread
 * takes back what others freed, sdallocx() to free, and a thread cache for
 * threads that only free); `make ALLOC=libc` builds the
 * same library on malloc() and free(). An embedder may replace either with
 * tw_set_allocator(), as libuv's uv_replace_allocator() allows, but only
 * before the library's first allocation: a block must go back to the
 * allocator it came from, and the library does not record which one that
 * was (a pointer per handle would cost the service 8 bytes a timer). Once
 * the first block is handed out the choice is locked and a replacement is
 * -EBUSY. With a replacement the library's arenas are never made.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"

static struct tw_allocator hook; /* alloc NULL: the built-in default */
static atomic_bool locked;       /* set by the first allocation */

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
    return tw__je_alloc(size);
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
    tw__je_free(p, size);
#endif
}
